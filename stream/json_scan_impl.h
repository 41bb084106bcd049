/*
 * json_scan_impl.h: the scanner's machine (json_scan.c), for the files that read the
 * hottest payloads with it and want it inline.
 *
 * A provider's reader asks the scanner for one item at a time, some 25 times per SSE
 * event; a call costs more in saving and restoring registers than the step itself. A
 * reader that includes this header gets its own copy of the machine,
 * ts__json_scan_next_inline, with ts_json_scan_next's contract (json_scan.h) and the same
 * state, so inline steps and ts_json_scan_next/skip mix freely. Measured on the Chat
 * stream of bench/tap_bench.c: 35.2 million instructions with the calls, 30.2 without.
 * Only for stream/ itself: everything here is static.
 */
#ifndef TS_JSON_SCAN_IMPL_H
#define TS_JSON_SCAN_IMPL_H

#include <string.h>
#include <sys/types.h>

#include "stream/json_scan.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

enum {
  ST_ROOT = 0,
  ST_FIRST = TS__JSON_SCAN_FIRST,
  ST_AFTER = TS__JSON_SCAN_AFTER,
  ST_DONE,
  ST_ERR,
  ST_ERR_LIMIT
};

static const char *scan_ws_slow(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
  return p;
}

/* Payloads from providers are compact: the common case is one comparison. */
static inline const char *scan_ws(const char *p, const char *end) {
  return p < end && (unsigned char)*p <= ' ' ? scan_ws_slow(p, end) : p;
}

static inline int scan_is_hex(char c) {
  return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

/* One escape at p (a backslash): the byte after it, or NULL when it is not one of
 * RFC 8259's. */
static inline const char *scan_escape(const char *p, const char *end) {
  if (end - p < 2) return NULL;
  switch (p[1]) {
  case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
    return p + 2;
  case 'u':
    if (end - p < 6 || !scan_is_hex(p[2]) || !scan_is_hex(p[3]) || !scan_is_hex(p[4]) || !scan_is_hex(p[5]))
      return NULL;
    return p + 6;
  default:
    return NULL;
  }
}

/* p is just after an opening quote: returns the closing quote, or NULL when the string
 * is malformed or unterminated. *escaped becomes 1 when a backslash is seen. A block of
 * 16 bytes is searched once for all three special bytes; an escape inside it is checked
 * and the search goes on in the same block (argument text is full of `\"`). */
static inline __attribute__((always_inline)) const char *scan_string(const char *p,
                                                                     const char *end,
                                                                     const char *lo,
                                                                     int *escaped) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'),
                zero = _mm_setzero_si128();
  while (end - p >= 16) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
    unsigned m = (unsigned)_mm_movemask_epi8(_mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)), _mm_cmpeq_epi8(v, zero)));
    const char *block = p;
    p += 16;
    while (m) {
      const char *x = block + __builtin_ctz(m);
      if (*x == '"') return x;
      if (*x == '\0') return NULL;
      *escaped = 1;
      x = scan_escape(x, end);
      if (!x) return NULL;
      if (x >= p) { /* the escape reaches past this block: go on after it */
        p = x;
        break;
      }
      m &= ~0u << (x - block); /* the bits of the bytes before x are spent */
    }
  }
  /* The last bytes of the text, fewer than 16: the block that ends at `end` (the bytes
   * before p in it belong to the text, which starts at lo), its bits before p dropped.
   * The same steps as the loop above, written out again: folded into the loop (a block
   * chosen per step) they cost Chat 4% more instructions in all. */
  if (p < end && end - lo >= 16) {
    const char *block = end - 16;
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)block);
    unsigned m = (unsigned)_mm_movemask_epi8(_mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)), _mm_cmpeq_epi8(v, zero)));
    m &= ~0u << (p - block);
    while (m) {
      const char *x = block + __builtin_ctz(m);
      if (*x == '"') return x;
      if (*x == '\0') return NULL;
      *escaped = 1;
      x = scan_escape(x, end);
      if (!x) return NULL;
      m &= ~0u << (x - block); /* x - block <= 16 */
    }
    return NULL; /* no closing quote */
  }
#else
  (void)lo;
#endif
  for (;;) {
    while (p < end && *p != '"' && *p != '\\' && *p != '\0') p++;
    if (p >= end || *p == '\0') return NULL;
    if (*p == '"') return p;
    *escaped = 1;
    p = scan_escape(p, end);
    if (!p) return NULL;
  }
}

/* ---- a string scanned and decoded in one pass ----------------------------------------
 * The argument fragment of a delta payload is the one string a reader uses whole: it used
 * to be scanned for its end (scan_string), then decoded (json_unescape.h) into place, then
 * read again by the argument tokenizer. scan_string_decode finds the end and decodes in the
 * same walk, into a buffer of the caller's (the payload itself stays untouched: a reader
 * that finds later that the payload is not what it hoped hands it back unchanged).
 *
 * Exactly scan_string's verdict: the same closing quote, NULL for the same strings (a NUL,
 * an escape RFC 8259 does not have, no closing quote), *escaped set the same way. The
 * output is ts_json_unescape_all's for the same body. Where that decoder would refuse what
 * the scanner accepts (a surrogate out of its pair: TS_E_JSON_SURROGATE), or the output
 * would not fit in cap bytes, the decoding is given up (*w = -1) and the rest is only
 * scanned: the caller decodes the body the usual way, which reports the error. */

/* The value of four hex digits at p (checked by the caller with scan_is_hex). */
static inline unsigned scan_hex4(const char *p) {
  unsigned u = 0;
  for (int k = 0; k < 4; k++) {
    unsigned c = (unsigned char)p[k];
    u = u << 4 | (c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  return u;
}

static inline int scan_hex4_ok(const char *p) {
  return scan_is_hex(p[0]) && scan_is_hex(p[1]) && scan_is_hex(p[2]) && scan_is_hex(p[3]);
}

/* The byte a one-letter escape stands for, by its letter; 'u' for \u; 0: not an escape. */
static const char scan_esc_byte[256] = {
    ['"'] = '"', ['\\'] = '\\', ['/'] = '/', ['b'] = '\b', ['f'] = '\f',
    ['n'] = '\n', ['r'] = '\r', ['t'] = '\t', ['u'] = 'u'};

/* One escape at x (a backslash, x < end) decoded to o. Returns the byte after it with
 * *op advanced; NULL for an escape scan_escape refuses; `x` itself (nothing written) for
 * a surrogate the decoder refuses. The caller leaves 4 bytes of room at o. */
static inline const char *scan_unescape_one(const char *x, const char *end, char **op) {
  char *o = *op;
  if (end - x < 2) return NULL;
  char e = scan_esc_byte[(unsigned char)x[1]];
  if (e != 'u') {
    if (!e) return NULL;
    *o = e;
    *op = o + 1;
    return x + 2;
  }
  if (end - x < 6 || !scan_hex4_ok(x + 2)) return NULL;
  unsigned u = scan_hex4(x + 2);
  if (u < 0x80) {
    *o = (char)u;
    *op = o + 1;
  } else if (u < 0x800) {
    o[0] = (char)(0xC0 | (u >> 6));
    o[1] = (char)(0x80 | (u & 0x3F));
    *op = o + 2;
  } else if (u < 0xD800 || u > 0xDFFF) {
    o[0] = (char)(0xE0 | (u >> 12));
    o[1] = (char)(0x80 | ((u >> 6) & 0x3F));
    o[2] = (char)(0x80 | (u & 0x3F));
    *op = o + 3;
  } else {
    /* a high surrogate followed at once by a low one is one character; anything else is
     * the decoder's error (the scanner may still accept it) */
    if (u > 0xDBFF || end - x < 12 || x[6] != '\\' || x[7] != 'u' || !scan_hex4_ok(x + 8)) return x;
    unsigned l = scan_hex4(x + 8);
    if (l < 0xDC00 || l > 0xDFFF) return x;
    uint32_t cp = 0x10000 + ((uint32_t)(u - 0xD800) << 10) + (l - 0xDC00);
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    *op = o + 4;
    return x + 12;
  }
  return x + 6;
}

/* p is just after an opening quote; out has room for cap bytes. Returns scan_string's
 * answer; when it is not NULL, *w is the decoded length, or -1 when the decoding was
 * given up (see above). A block of 16 bytes is loaded, stored to the output whole, and
 * searched for the three special bytes: the bytes before the first one are kept, and an
 * escape is decoded there; a block without one costs a load, a store and a test. The
 * text's last bytes, fewer than 16, are searched in the block that ends at `end` (as in
 * scan_string: a fragment is often that close to the payload's end) and copied by
 * length. */
static inline __attribute__((always_inline)) const char *scan_string_decode(const char *p,
                                                                            const char *end,
                                                                            const char *lo,
                                                                            int *escaped, char *out,
                                                                            size_t cap, ssize_t *w) {
  char *o = out, *const oend = out + cap;
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'),
                zero = _mm_setzero_si128();
  while (oend - o >= 20) { /* a block's 16 bytes, then an escape's 4 */
    unsigned m, k;
    if (end - p >= 16) {
      __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
      m = (unsigned)_mm_movemask_epi8(_mm_or_si128(
          _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)), _mm_cmpeq_epi8(v, zero)));
      _mm_storeu_si128((__m128i *)(void *)o, v);
      if (!m) {
        p += 16, o += 16;
        continue;
      }
      k = (unsigned)__builtin_ctz(m);
    } else if (p < end && end - lo >= 16) {
      const char *block = end - 16;
      __m128i v = _mm_loadu_si128((const __m128i *)(const void *)block);
      m = (unsigned)_mm_movemask_epi8(_mm_or_si128(
          _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)), _mm_cmpeq_epi8(v, zero)));
      m >>= p - block;
      if (!m) return NULL; /* no closing quote */
      k = (unsigned)__builtin_ctz(m);
      ts_copy_short(o, p, k);
    } else {
      break;
    }
    const char *x = p + k;
    o += k;
    if (*x == '"') {
      *w = o - out;
      return x;
    }
    if (*x == '\0') return NULL;
    *escaped = 1;
    const char *q = scan_unescape_one(x, end, &o);
    if (q == x) {
      *w = -1;
      return scan_string(x, end, lo, escaped);
    }
    if (!q) return NULL;
    p = q;
  }
#endif
  /* A text shorter than 16 bytes, or the output near its end: a byte at a time. */
  while (p < end) {
    char c = *p;
    if (c == '"') {
      *w = o - out;
      return p;
    }
    if (c == '\0') return NULL;
    if (oend - o < 4) {
      *w = -1;
      return scan_string(p, end, lo, escaped);
    }
    if (c != '\\') {
      *o++ = c;
      p++;
      continue;
    }
    *escaped = 1;
    const char *q = scan_unescape_one(p, end, &o);
    if (q == p) {
      *w = -1;
      return scan_string(p, end, lo, escaped);
    }
    if (!q) return NULL;
    p = q;
  }
  return NULL; /* no closing quote */
}

static inline int scan_is_digit(char c) { return c >= '0' && c <= '9'; }

/* RFC 8259 number at p: returns its end, or NULL. */
static const char *scan_number(const char *p, const char *end) {
  if (*p == '-') p++;
  if (p >= end) return NULL;
  if (*p == '0') {
    p++;
  } else if (*p >= '1' && *p <= '9') {
    while (p < end && scan_is_digit(*p)) p++;
  } else {
    return NULL;
  }
  if (p < end && *p == '.') {
    const char *d = ++p;
    while (p < end && scan_is_digit(*p)) p++;
    if (p == d) return NULL;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < end && (*p == '+' || *p == '-')) p++;
    const char *d = p;
    while (p < end && scan_is_digit(*p)) p++;
    if (p == d) return NULL;
  }
  return p;
}

/* A number at p: the plain integers that fill provider envelopes (indexes, times, token
 * counts) inline, the rest in scan_number. */
static inline const char *scan_num(const char *p, const char *end) {
  if (*p >= '1' && *p <= '9') {
    const char *q = p + 1;
    while (end - q >= 8) { /* eight digits a step (times and token counts are long) */
      uint64_t w;
      memcpy(&w, q, 8);
      if (((w & UINT64_C(0xF0F0F0F0F0F0F0F0)) | (((w + UINT64_C(0x0606060606060606)) &
                                                   UINT64_C(0xF0F0F0F0F0F0F0F0)) >> 4)) !=
          UINT64_C(0x3333333333333333))
        break;
      q += 8;
    }
    while (q < end && scan_is_digit(*q)) q++;
    if (q == end || (*q != '.' && *q != 'e' && *q != 'E')) return q;
  }
  return scan_number(p, end);
}

/* A literal at p (t, f or n): returns its end, or NULL. */
static inline const char *scan_literal(const char *p, const char *end, ts_json_scan_type *type) {
  switch (*p) {
  case 't':
    *type = TS_JSON_SCAN_TRUE;
    return end - p >= 4 && memcmp(p, "true", 4) == 0 ? p + 4 : NULL;
  case 'f':
    *type = TS_JSON_SCAN_FALSE;
    return end - p >= 5 && memcmp(p, "false", 5) == 0 ? p + 5 : NULL;
  default:
    *type = TS_JSON_SCAN_NULL;
    return end - p >= 4 && memcmp(p, "null", 4) == 0 ? p + 4 : NULL;
  }
}

static __attribute__((noinline, cold)) int scan_fail(ts_json_scan *s, int code) {
  s->state = code == TS_E_LIMIT ? ST_ERR_LIMIT : ST_ERR;
  return code;
}

static inline int scan_is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

/* One item. The common case of a compact payload (no whitespace) goes straight through;
 * whitespace sends each step once through scan_ws. */
static inline __attribute__((always_inline)) int scan_next(ts_json_scan *s, ts_json_item *it) {
  const char *end = s->end, *p = s->p, *q;
  unsigned depth = s->depth;
  int in_array = s->in_array;
  int esc;
  if (__builtin_expect(s->state == ST_AFTER, 1)) goto after;
  switch (s->state) {
  case ST_FIRST:
    goto first;
  case ST_ROOT:
    it->key = (ts_view){NULL, 0};
    it->key_escaped = 0;
    p = scan_ws(p, end);
    goto value;
  case ST_DONE:
    return 0;
  case ST_ERR_LIMIT:
    return TS_E_LIMIT;
  default:
    return TS_E_JV_BAD_JSON;
  }

after: /* after a value: a comma and the next item, the container's end, or the document's */
  if (p < end && *p == ',' && depth) {
    p++;
    goto item;
  }
  p = scan_ws(p, end);
  if (depth == 0) {
    if (p != end) return scan_fail(s, TS_E_JV_BAD_JSON);
    s->p = p;
    s->state = ST_DONE;
    return 0;
  }
  if (p < end && *p == ',') {
    p++;
    goto item;
  }
  if (p < end && *p == (in_array ? ']' : '}')) goto close;
  return scan_fail(s, TS_E_JV_BAD_JSON);

first: /* just inside a container: its end, or its first item */
  p = scan_ws(p, end);
  if (p < end && *p == (in_array ? ']' : '}')) goto close;

item:
  if (!in_array) { /* a member: key, colon */
    if (p >= end || *p != '"') {
      p = scan_ws(p, end);
      if (p >= end || *p != '"') return scan_fail(s, TS_E_JV_BAD_JSON);
    }
    esc = 0;
    q = scan_string(p + 1, end, s->open[0], &esc);
    if (!q) return scan_fail(s, TS_E_JV_BAD_JSON);
    it->key_escaped = esc;
    it->key = (ts_view){p + 1, (size_t)(q - p - 1)};
    p = q + 1;
    if (p >= end || *p != ':') {
      p = scan_ws(p, end);
      if (p >= end || *p != ':') return scan_fail(s, TS_E_JV_BAD_JSON);
    }
    p++;
  } else {
    it->key = (ts_view){NULL, 0};
    it->key_escaped = 0;
  }

value:
  if (p >= end) return scan_fail(s, TS_E_JV_BAD_JSON);
  it->depth = depth;
  if (*p == '"') { /* most values are strings: before the switch's jump */
    esc = 0;
    q = scan_string(p + 1, end, s->open[0], &esc);
    if (!q) return scan_fail(s, TS_E_JV_BAD_JSON);
    it->escaped = esc;
    it->type = TS_JSON_SCAN_STRING;
    it->raw = (ts_view){p + 1, (size_t)(q - p - 1)};
    s->p = q + 1;
    s->state = ST_AFTER;
    return 1;
  }
  it->escaped = 0;
  switch (*p) {
  case '{':
  case '[':
    if (depth >= TS_JSON_SCAN_MAX_DEPTH) return scan_fail(s, TS_E_LIMIT);
    s->open[depth] = p;
    if (*p == '[')
      s->arrays |= UINT64_C(1) << depth;
    else
      s->arrays &= ~(UINT64_C(1) << depth);
    s->depth = depth + 1;
    s->in_array = *p == '[';
    it->type = *p == '[' ? TS_JSON_SCAN_ARRAY : TS_JSON_SCAN_OBJECT;
    it->raw = (ts_view){p, 1};
    s->p = p + 1;
    s->state = ST_FIRST;
    return 1;
  case 't':
  case 'f':
  case 'n': {
    ts_json_scan_type t;
    q = scan_literal(p, end, &t);
    if (!q) return scan_fail(s, TS_E_JV_BAD_JSON);
    it->type = t;
    it->raw = (ts_view){p, (size_t)(q - p)};
    p = q;
    break;
  }
  case ' ':
  case '\t':
  case '\n':
  case '\r':
    p = scan_ws(p, end);
    goto value;
  default:
    q = (*p == '-' || scan_is_digit(*p)) ? scan_num(p, end) : NULL;
    if (!q) return scan_fail(s, TS_E_JV_BAD_JSON);
    it->type = TS_JSON_SCAN_NUMBER;
    it->raw = (ts_view){p, (size_t)(q - p)};
    p = q;
    break;
  }
  s->p = p;
  s->state = ST_AFTER;
  return 1;

close: /* the container at the top of the stack closes at p */
  depth--;
  s->depth = depth;
  s->in_array = depth && ((s->arrays >> (depth - 1)) & 1);
  it->type = TS_JSON_SCAN_END;
  it->depth = depth;
  it->key = (ts_view){NULL, 0};
  it->raw = (ts_view){s->open[depth], (size_t)(p + 1 - s->open[depth])};
  it->escaped = it->key_escaped = 0;
  s->p = p + 1;
  s->state = ST_AFTER;
  return 1;
}

static inline __attribute__((always_inline)) int ts__json_scan_next_inline(ts_json_scan *s,
                                                                           ts_json_item *it) {
  return scan_next(s, it);
}

#endif /* TS_JSON_SCAN_IMPL_H */
