/*
 * json_watch.h: watch one top-level key of a streamed JSON object.
 *
 * A thin layer over the tokenizer's tokens (json_tok.h). It knows the current top-level
 * key and tells its caller, token by token, when the value of a chosen key starts,
 * which tokens belong to it, and the token that completes it: exactly what progress
 * detection needs to fire `tool_call_started` the moment a `description` argument has
 * finished streaming.
 *
 * Rules
 *   - Only keys of the top-level object count (depth-1 KEY tokens); the same name deeper
 *     down does not.
 *   - Keys compare after decoding their escapes ("descr\u0069ption" matches
 *     "description"), incrementally, fragment by fragment: no key is buffered.
 *   - With duplicate keys, the first value to complete wins; later ones are ignored.
 *   - A value completes at: a string's closing quote, a number's delimiter (or finish),
 *     a literal's last letter, an object's or array's matching close.
 *
 * Ownership: the watcher holds a pointer to the key name the caller passed to init; the
 * caller keeps it alive. No allocation.
 */
#ifndef TS_JSON_WATCH_H
#define TS_JSON_WATCH_H

#include <stddef.h>
#include <stdint.h>

#include "stream/json_tok.h"
#include "stream/json_unescape.h"

typedef enum {
  TS_JSON_WATCH_OUTSIDE = 0, /* the token is not part of the watched value */
  TS_JSON_WATCH_IN,          /* the token belongs to the watched value, which goes on */
  TS_JSON_WATCH_COMPLETE,    /* the token belongs to the value and completes it */
} ts_json_watch_verdict;

typedef struct {
  const char *name; /* decoded key to watch */
  size_t name_len;
  size_t matched;   /* decoded bytes of the current key that matched so far */
  ts_json_unescape dec;
  uint8_t state;    /* see json_watch.c */
  uint8_t key_ok;   /* the current key still matches */
} ts_json_watch;

/* Watch key `name` (decoded UTF-8, `len` bytes). */
void ts_json_watch_init(ts_json_watch *w, const char *name, size_t len);

/* Feed every token of the stream, in order. Returns a ts_json_watch_verdict. The
 * first token of the value is the first one that returns IN or COMPLETE. */
int ts_json_watch_token(ts_json_watch *w, const ts_json_token *tok);

/* Nonzero once the watched value has completed. */
int ts_json_watch_done(const ts_json_watch *w);

#endif /* TS_JSON_WATCH_H */
