/*
 * strbuf.h: a growable byte buffer with a hard size limit, and the one JSON string
 * escaper of the project.
 *
 * Every buffer that grows with untrusted input has a limit: appending past `max`
 * fails with TS_E_LIMIT and out of memory with TS_E_NOMEM. Errors are sticky (checked
 * once after a series of appends); a failed append leaves the contents unchanged.
 *
 * Ownership: the buffer owns `p` (malloc'd); ts_buf_fini frees it. `p` is always
 * NUL-terminated when non-NULL (the NUL is not counted in len).
 */
#ifndef TS_STRBUF_H
#define TS_STRBUF_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

typedef struct {
  char *p;
  size_t len;
  size_t cap;
  size_t max; /* the most bytes it may ever hold */
  int err;    /* sticky ts_err */
} ts_buf;

void ts_buf_init(ts_buf *b, size_t max);
void ts_buf_fini(ts_buf *b);
/* Empties the buffer (keeps its memory) and clears the sticky error. */
void ts_buf_reset(ts_buf *b);

int ts_buf_append(ts_buf *b, const void *s, size_t n);
int ts_buf_putc(ts_buf *b, char c);
int ts_buf_puts(ts_buf *b, const char *s);
int ts_buf_append_u64(ts_buf *b, uint64_t v);

/* Appends `s` as a JSON string, quotes included: `"` and `\` escaped, control bytes as
 * \n \r \t \b \f or \u00XX, DEL as \u007f, and invalid UTF-8 replaced by U+FFFD so
 * that the output is always valid JSON and valid UTF-8. */
int ts_buf_append_json_string(ts_buf *b, const char *s, size_t n);

/* Appends JSON text with the whitespace outside strings removed (so that it fits on
 * one line); raw control bytes inside strings are escaped as \u00XX. The input is
 * assumed to be JSON already (structure is not checked). */
int ts_buf_append_json_compact(ts_buf *b, const char *s, size_t n);

/* Writes up to `max` bytes of p[0..len) into out (cap bytes, always NUL-terminated when
 * cap > 0) for a one-line message: control bytes, DEL, `"` and `\` as \xNN, so that
 * neither a terminal escape nor a line break from the input reaches a user's screen or
 * a log. Cut to fit; returns out. */
char *ts_str_quote(char *out, size_t cap, const char *p, size_t len, size_t max);

#endif /* TS_STRBUF_H */
