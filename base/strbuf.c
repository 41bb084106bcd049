/*
 * strbuf.c: see strbuf.h. Growth doubles the capacity (amortized O(1) appends) but
 * never past `max` + 1 (the NUL).
 */
#include "base/strbuf.h"

#include <stdlib.h>
#include <string.h>

void ts_buf_init(ts_buf *b, size_t max) {
  memset(b, 0, sizeof *b);
  b->max = max;
}

void ts_buf_fini(ts_buf *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}

void ts_buf_reset(ts_buf *b) {
  b->len = 0;
  b->err = 0;
  if (b->p) b->p[0] = '\0';
}

static int reserve(ts_buf *b, size_t n) {
  if (b->err) return b->err;
  if (n > b->max - b->len || b->len + n < b->len) return b->err = TS_E_LIMIT;
  size_t need = b->len + n + 1;
  if (need <= b->cap) return TS_E_OK;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
  if (cap > b->max + 1) cap = b->max + 1;
  char *np = realloc(b->p, cap);
  if (!np) return b->err = TS_E_NOMEM;
  b->p = np;
  b->cap = cap;
  return TS_E_OK;
}

int ts_buf_append(ts_buf *b, const void *s, size_t n) {
  int r = reserve(b, n);
  if (r) return r;
  if (n) memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
  return TS_E_OK;
}

int ts_buf_putc(ts_buf *b, char c) { return ts_buf_append(b, &c, 1); }

int ts_buf_puts(ts_buf *b, const char *s) { return ts_buf_append(b, s, strlen(s)); }

int ts_buf_append_u64(ts_buf *b, uint64_t v) {
  char tmp[24];
  size_t i = sizeof tmp;
  do {
    tmp[--i] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  return ts_buf_append(b, tmp + i, sizeof tmp - i);
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if it is not valid. */
static size_t utf8_seq(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  size_t need;
  unsigned lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    need = 1;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 2;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 3;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (n < need + 1) return 0;
  for (size_t i = 1; i <= need; i++) {
    if (s[i] < lo || s[i] > hi) return 0;
    lo = 0x80, hi = 0xBF;
  }
  return need + 1;
}

int ts_buf_append_json_string(ts_buf *b, const char *str, size_t n) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *s = (const unsigned char *)str;
  if (ts_buf_putc(b, '"')) return b->err;
  size_t run = 0; /* bytes at s[i-run, i) to copy as they are */
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i];
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0x7F) {
      run++, i++;
      continue;
    }
    if (c >= 0x80) {
      size_t k = utf8_seq(s + i, n - i);
      if (k) {
        run += k, i += k;
        continue;
      }
    }
    ts_buf_append(b, s + i - run, run);
    run = 0;
    char esc[7] = {'\\', 0};
    size_t elen = 2;
    switch (c) {
      case '"': esc[1] = '"'; break;
      case '\\': esc[1] = '\\'; break;
      case '\n': esc[1] = 'n'; break;
      case '\r': esc[1] = 'r'; break;
      case '\t': esc[1] = 't'; break;
      case '\b': esc[1] = 'b'; break;
      case '\f': esc[1] = 'f'; break;
      default:
        if (c >= 0x80) { /* invalid UTF-8: U+FFFD */
          ts_buf_append(b, "\xEF\xBF\xBD", 3);
          i++;
          continue;
        }
        esc[1] = 'u', esc[2] = '0', esc[3] = '0', esc[4] = hex[c >> 4], esc[5] = hex[c & 15];
        elen = 6;
    }
    ts_buf_append(b, esc, elen);
    i++;
  }
  ts_buf_append(b, s + i - run, run);
  ts_buf_putc(b, '"');
  return b->err;
}

int ts_buf_append_json_compact(ts_buf *b, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  int in_str = 0, esc = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (!in_str) {
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
      if (c == '"') in_str = 1;
      ts_buf_putc(b, (char)c);
      continue;
    }
    if (esc) {
      esc = 0;
    } else if (c == '\\') {
      esc = 1;
    } else if (c == '"') {
      in_str = 0;
    } else if (c < 0x20) {
      char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
      ts_buf_append(b, u, 6);
      continue;
    }
    ts_buf_putc(b, (char)c);
  }
  return b->err;
}
