/*
 * view.h: a view of bytes someone else owns (pointer + length), the currency of every
 * parser in toolstream. A view is never NUL-terminated by contract and never owns its
 * bytes: it is valid only as long as the buffer it points into, which each API that
 * hands one out states (usually "until the callback returns").
 */
#ifndef TS_VIEW_H
#define TS_VIEW_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct {
  const char *p;
  size_t len;
} ts_view;

/* o[0..n) = p[0..n) for n <= 16, without a loop or a call: two overlapping words (a
 * fragment of a view is often a few bytes, and memcpy's call costs more than the copy).
 * Reads and writes only those n bytes. */
static inline void ts_copy_short(char *o, const char *p, size_t n) {
  if (n >= 8) {
    uint64_t x, y;
    memcpy(&x, p, 8), memcpy(&y, p + n - 8, 8);
    memcpy(o, &x, 8), memcpy(o + n - 8, &y, 8);
  } else if (n >= 4) {
    uint32_t x, y;
    memcpy(&x, p, 4), memcpy(&y, p + n - 4, 4);
    memcpy(o, &x, 4), memcpy(o + n - 4, &y, 4);
  } else if (n) {
    o[0] = p[0], o[n >> 1] = p[n >> 1], o[n - 1] = p[n - 1];
  }
}

#endif /* TS_VIEW_H */
