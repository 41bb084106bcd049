/*
 * json_members.h: the top-level members of one JSON object, in one pass, without
 * tokenizing what is inside them.
 *
 * For readers that need a few members of a large object whose values they do not look
 * into: an event whose `arguments` hold megabytes needs its `type`, `seq` and `call_id`,
 * and tokenizing every element of the arguments (jsmn) would cost memory in proportion to
 * them. The walk is string-aware (a `"` or a bracket inside a string never counts) and
 * bracket-aware (a nested value is skipped as one), so a key inside a value is never
 * mistaken for a top-level one.
 *
 * Validation: the walk checks the object's punctuation (quotes, colons, commas, matching
 * brackets) but not the values' grammar: a value is handed out as its raw text. Use it on
 * text that a strict parser produced or will check; on hostile bytes it never reads past
 * the end, never recurses and never allocates, and malformed punctuation is an error.
 *
 * Views point into the caller's text, valid while it is.
 */
#ifndef TS_JSON_MEMBERS_H
#define TS_JSON_MEMBERS_H

#include <stddef.h>

#include "base/view.h"

typedef struct {
  const char *p, *end;
  int state; /* 0 before '{', 1 inside, 2 done */
} ts_json_members;

/* Starts a walk over json[0..len), which must hold one object (whitespace around it
 * allowed). */
void ts_json_members_init(ts_json_members *it, const char *json, size_t len);

/* The next top-level member: `key` is the raw key between its quotes (escapes not
 * decoded), `value` the raw value text (a string with its quotes). Returns 1 for a
 * member, 0 after the last one, TS_E_INVAL when the text is not an object (nothing more
 * is returned then). */
int ts_json_members_next(ts_json_members *it, ts_view *key, ts_view *value);

/* The value of the first top-level member named `key` (raw key bytes), or {NULL, 0}
 * when there is none or the text is malformed before it. */
ts_view ts_json_member(const char *json, size_t len, const char *key);

#endif /* TS_JSON_MEMBERS_H */
