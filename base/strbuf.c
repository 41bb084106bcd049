/*
 * strbuf.c: see strbuf.h. Growth doubles the capacity (amortized O(1) appends) but
 * never past `max` + 1 (the NUL).
 */
#include "base/strbuf.h"

#include <stdio.h>
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

/* Two digits a step (an event carries seven numbers, its clocks sixteen digits long),
 * written in place: the digits are counted first (no loop), so they go straight to their
 * bytes. */
int ts_buf_append_u64(ts_buf *b, uint64_t v) {
  static const char pairs[201] = "000102030405060708091011121314151617181920212223242526272829"
                                 "303132333435363738394041424344454647484950515253545556575859"
                                 "606162636465666768697071727374757677787980818283848586878889"
                                 "90919293949596979899";
  static const uint64_t pow10[20] = {1u, 10u, 100u, 1000u, 10000u, 100000u, 1000000u,
                                     10000000u, 100000000u, 1000000000u, 10000000000u,
                                     100000000000u, 1000000000000u, 10000000000000u,
                                     100000000000000u, 1000000000000000u, 10000000000000000u,
                                     100000000000000000u, 1000000000000000000u,
                                     10000000000000000000u};
  /* digits: log10 from the bit length (1233 / 4096 is just under log10(2)), then one
   * compare decides between it and one more */
  const unsigned t = (unsigned)(64 - __builtin_clzll(v | 1)) * 1233u >> 12;
  size_t n = t + (v >= pow10[t]);
  n += !n; /* 0 */
  if (reserve(b, n)) return b->err;
  char *o = b->p + b->len + n;
  while (v >= 100) {
    const unsigned r = (unsigned)(v % 100);
    v /= 100;
    o -= 2;
    memcpy(o, pairs + 2 * r, 2);
  }
  if (v >= 10) {
    o -= 2;
    memcpy(o, pairs + 2 * v, 2);
  } else {
    *--o = (char)('0' + v);
  }
  b->len += n;
  b->p[b->len] = '\0';
  return TS_E_OK;
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

/* The bytes a JSON string can carry as they are: printable ASCII but '"' and '\\'. */
static inline int plain(unsigned c) { return c >= 0x20 && c != '"' && c != '\\' && c < 0x7F; }

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* Eight bytes at a time: the top bit of each byte that is not plain is set. The lowest
 * set bit is exact; a bit above it may be set falsely (a borrow out of that byte), which
 * does not matter, since only the first is used. */
static inline uint64_t not_plain8(uint64_t w) {
  const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  const uint64_t q = w ^ (ones * '"'), bs = w ^ (ones * '\\');
  const uint64_t del_up = ((w & ~highs) + ones) | w; /* 0x7F and from 0x80: no carry out */
  return (((q - ones) & ~q) | ((bs - ones) & ~bs) | ((w - ones * 0x20) & ~w) | del_up) & highs;
}
#endif

/* The end of the run of plain bytes that starts at s[i]. */
static inline size_t plain_end(const unsigned char *s, size_t i, size_t n) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  for (; n - i >= 8; i += 8) {
    uint64_t w;
    memcpy(&w, s + i, 8);
    const uint64_t m = not_plain8(w);
    if (m) return i + ((size_t)__builtin_ctzll(m) >> 3);
  }
#endif
  while (i < n && plain(s[i])) i++;
  return i;
}

/* Written straight into the buffer: room for the quotes and every byte as it is is
 * reserved once, and again at each escape (up to six bytes for one) for it and the rest
 * of the input as it is, so the limit fails only when the text would really pass it.
 * Runs of plain bytes are found eight at a time and copied whole. On failure the buffer
 * is as it was before the call (the error is sticky, as for every append). */
int ts_buf_append_json_string(ts_buf *b, const char *str, size_t n) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *s = (const unsigned char *)str;
  const size_t start = b->len;
  if (n > SIZE_MAX - 2 || reserve(b, n + 2)) return b->err ? b->err : (b->err = TS_E_LIMIT);
  char *o = b->p + b->len;
  *o++ = '"';
  size_t i = 0;
  while (i < n) { /* (s may be NULL when n is 0) */
    const size_t j = plain_end(s, i, n);
    memcpy(o, s + i, j - i);
    o += j - i;
    i = j;
    if (i == n) break;
    const unsigned c = s[i];
    if (c >= 0x80) {
      const size_t k = utf8_seq(s + i, n - i);
      if (k) { /* valid UTF-8: as it is (room was reserved for it) */
        memcpy(o, s + i, k);
        o += k, i += k;
        continue;
      }
    }
    /* this one byte as an escape, or U+FFFD for a byte of invalid UTF-8 */
    char esc[6] = {'\\', 0};
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
        if (c >= 0x80) {
          memcpy(esc, "\xEF\xBF\xBD", 3);
          elen = 3;
        } else { /* the other controls and DEL */
          memcpy(esc + 1, "u00", 3);
          esc[4] = hex[c >> 4], esc[5] = hex[c & 15];
          elen = 6;
        }
    }
    /* room for it, the rest as it is and the closing quote */
    b->len = (size_t)(o - b->p);
    if (reserve(b, elen + (n - i - 1) + 1)) {
      b->len = start;
      b->p[start] = '\0';
      return b->err;
    }
    o = b->p + b->len;
    memcpy(o, esc, elen);
    o += elen;
    i++;
  }
  *o++ = '"';
  b->len = (size_t)(o - b->p);
  b->p[b->len] = '\0';
  return TS_E_OK;
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

char *ts_str_quote(char *out, size_t cap, const char *p, size_t len, size_t max) {
  size_t o = 0;
  for (size_t i = 0; i < len && i < max && o + 5 < cap; i++) {
    unsigned char c = (unsigned char)p[i];
    if (c < 0x20 || c == 0x7f || c == '"' || c == '\\')
      o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
    else
      out[o++] = (char)c;
  }
  if (cap) out[o < cap ? o : cap - 1] = '\0';
  return out;
}
