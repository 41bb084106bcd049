/*
 * sb.c: see sb.h.
 */
#include "support/sb.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sb_add(sb *b, const void *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t c = b->cap ? b->cap : 256;
    while (c < b->len + n + 1) c *= 2;
    char *q = realloc(b->p, c);
    if (!q) abort();
    b->p = q;
    b->cap = c;
  }
  if (n) memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

void sb_puts(sb *b, const char *s) { sb_add(b, s, strlen(s)); }

void sb_putc(sb *b, char c) { sb_add(b, &c, 1); }

void sb_printf(sb *b, const char *fmt, ...) {
  char tmp[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) abort();
  if ((size_t)n < sizeof tmp) {
    sb_add(b, tmp, (size_t)n);
    return;
  }
  char *big = malloc((size_t)n + 1);
  if (!big) abort();
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  sb_add(b, big, (size_t)n);
  free(big);
}

void sb_json_body(sb *b, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') {
      sb_putc(b, '\\');
      sb_putc(b, (char)c);
    } else if (c < 0x20) {
      sb_printf(b, "\\u%04x", c);
    } else {
      sb_putc(b, (char)c);
    }
  }
}

void sb_reset(sb *b) {
  b->len = 0;
  if (b->p) b->p[0] = '\0';
}

void sb_free(sb *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}

const char *sb_str(const sb *b) { return b->p ? b->p : ""; }

const char *sb_clip(const char *s) {
  static char bufs[4][2600];
  static int next;
  size_t n = strlen(s);
  if (n < 2500) return s;
  char *b = bufs[next++ % 4];
  snprintf(b, sizeof bufs[0], "%.2400s...[%zu more bytes]\n", s, n - 2400);
  return b;
}
