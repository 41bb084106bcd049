/*
 * json_unescape.h: decode a JSON string body's escapes into UTF-8, fragment by fragment.
 *
 * The tokenizer (json_tok.h) reports strings as raw, still-escaped fragments and pays
 * nothing for decoding. Callers that need a string's value (the progress label, a
 * key compared against a name, an argument fragment inside an SSE payload) push the
 * fragments through this decoder. A fragment may end anywhere, even between `\` and
 * `u00e9` or between the halves of a surrogate pair: the decoder keeps the few
 * pending bytes in its own fixed state and finishes the character with the next call.
 *
 * Ownership: the decoder is a small plain struct; no allocation; nothing to free.
 *
 * Input: the raw bytes *between* the quotes (no quotes). Raw bytes other than `\` are
 * copied as they are: UTF-8 validity is the tokenizer's job (or jsmn's, upstream).
 *
 * Output: `out` must have room for `len + TS_JSON_UNESCAPE_SLACK` bytes (a call can
 * complete an escape begun in an earlier call). Decoding in place (out == in) is
 * allowed when ts_json_unescape_pending() is 0 before the call: output never
 * overtakes input then.
 *
 * Errors (negative ts_err, sticky): TS_E_JSON_ESCAPE for an unknown escape letter or a
 * non-hex \u digit, TS_E_JSON_SURROGATE for a lone or mis-ordered surrogate. At
 * the end of a string call ts_json_unescape_end(): a string that stops inside an
 * escape is TS_E_JSON_ESCAPE (or TS_E_JSON_SURROGATE for a high surrogate left alone).
 * In detail: a high surrogate must be followed at once by `\u` and a low surrogate;
 * any other byte after it (a raw byte, `\n`, even an unknown letter as in
 * `\ud800\x`) is TS_E_JSON_SURROGATE, while a non-hex digit inside the second
 * `\uXXXX` is TS_E_JSON_ESCAPE. A high surrogate writes nothing until its low half
 * completes the pair (4 bytes then). `\u0000` writes a NUL byte. On error the bytes
 * written by that call are not counted; the decoder must be re-initialised to reuse it.
 */
#ifndef TS_JSON_UNESCAPE_H
#define TS_JSON_UNESCAPE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"

#define TS_JSON_UNESCAPE_SLACK 4

typedef struct {
  uint8_t state;   /* 0 = plain text; else where inside an escape we are */
  uint8_t digits;  /* \u hex digits seen */
  uint16_t unit;   /* \u code unit being accumulated */
  uint16_t high;   /* pending high surrogate, 0 if none */
  int16_t err;     /* sticky error */
} ts_json_unescape;

/* Ready for a new string. */
void ts_json_unescape_init(ts_json_unescape *u);

/* Decodes `len` bytes at `in`, appending UTF-8 to `out`. Returns the number of bytes
 * written (>= 0) or a negative ts_err. */
ssize_t ts_json_unescape_feed(ts_json_unescape *u, const char *in, size_t len, char *out);

/* Ends the string: TS_E_OK, or the error of an escape left unfinished. */
int ts_json_unescape_end(ts_json_unescape *u);

/* Nonzero while an escape begun in an earlier call is still pending. */
static inline int ts_json_unescape_pending(const ts_json_unescape *u) {
  return u->state != 0 || u->high != 0;
}

/* Convenience: decode a complete string body in one call (fresh state, then end).
 * Same output rules; in place allowed. Returns bytes written or a negative ts_err. */
ssize_t ts_json_unescape_all(const char *in, size_t len, char *out);

#endif /* TS_JSON_UNESCAPE_H */
