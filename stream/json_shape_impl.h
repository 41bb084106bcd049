/*
 * json_shape_impl.h: the parts of the shape memo's match (json_shape.c) that a caller on
 * the hot path inlines: the compare of fixed bytes, and the whole match for a memo whose
 * only span is the used string (json_shape.h, ts_json_shape_match_one), which the adapter's
 * fragment path (adapter.c, ts_adapter_feed_fragment) calls for every Anthropic delta.
 * Internal to stream/: include it after json_scan_impl.h, in a .c file.
 */
#ifndef TS_JSON_SHAPE_IMPL_H
#define TS_JSON_SHAPE_IMPL_H

#include <string.h>

#include "base/view.h"
#include "stream/json_scan_impl.h"
#include "stream/json_shape.h"

/* a[0..n) == b[0..n): 64 bytes a step (four blocks, one test) while more than 64 are
 * left, then the rest (1..64 bytes) as up to three blocks from its start and the block
 * ending at its end, in one test: a run between two spans is 20-90 bytes, and a loop per
 * 16 cost more in its tests than the compares. */
static inline int shape_same(const char *a, const char *b, size_t n) {
#if defined(__SSE2__)
  if (n >= 16) {
#define LD(p, k) _mm_loadu_si128((const __m128i *)(const void *)((p) + 16 * (k)))
#define EQ(k) _mm_cmpeq_epi8(LD(a, k), LD(b, k))
    while (n > 64) {
      __m128i e = _mm_and_si128(_mm_and_si128(EQ(0), EQ(1)), _mm_and_si128(EQ(2), EQ(3)));
      if (_mm_movemask_epi8(e) != 0xFFFF) return 0;
      a += 64, b += 64, n -= 64;
    }
    /* 1..64 left (at least 16 were there): the block ending at the end, then those from
     * the start that it does not cover */
    __m128i e = _mm_cmpeq_epi8(LD(a + n - 16, 0), LD(b + n - 16, 0));
    if (n > 16) e = _mm_and_si128(e, EQ(0));
    if (n > 32) e = _mm_and_si128(e, EQ(1));
    if (n > 48) e = _mm_and_si128(e, EQ(2));
    return _mm_movemask_epi8(e) == 0xFFFF;
#undef EQ
#undef LD
  }
#endif
  if (n >= 8) {
    uint64_t x, y, u, v;
    memcpy(&x, a, 8), memcpy(&y, b, 8), memcpy(&u, a + n - 8, 8), memcpy(&v, b + n - 8, 8);
    return ((x ^ y) | (u ^ v)) == 0;
  }
  if (n >= 4) {
    uint32_t x, y, u, v;
    memcpy(&x, a, 4), memcpy(&y, b, 4), memcpy(&u, a + n - 4, 4), memcpy(&v, b + n - 4, 4);
    return ((x ^ y) | (u ^ v)) == 0;
  }
  if (n >= 2) {
    uint16_t x, y, u, v;
    memcpy(&x, a, 2), memcpy(&y, b, 2), memcpy(&u, a + n - 2, 2), memcpy(&v, b + n - 2, 2);
    return ((x ^ y) | (u ^ v)) == 0;
  }
  return n == 0 || a[0] == b[0];
}

/* o[0..k) = t[0..k) for k <= 64, 16 bytes a step and no loop (a loop is made a call to
 * memcpy): up to 15 bytes more are written, and read from t, whose caller leaves them
 * there (shape_last_string's copy of the text). */
static inline void shape_copy64(char *o, const char *t, size_t k) {
  memcpy(o, t, 16);
  if (k > 16) memcpy(o + 16, t + 16, 16);
  if (k > 32) memcpy(o + 32, t + 32, 16);
  if (k > 48) memcpy(o + 48, t + 48, 16);
}

/* The used span when it is the last span and its text is known to be [p, e) (at most 64
 * bytes, the 16-byte blocks that end at e and cover it inside the payload from lo): 1
 * when the string scanner, from p, would stop at e (given a quote there: the caller's
 * compare of the fixed tail checks it), with *esc and *val set as scan_string_decode and
 * the match set them; 0 when it would stop before e or refuse the text. The special
 * bytes of the whole text are found at once, a mask per kind, and each escape is decoded
 * where its bit says, the bytes between copied 16 at a step from a copy of the blocks
 * (shape_copy64: no length-exact copy), a one-letter escape right in the loop (its two
 * bits cleared), any other by scan_unescape_one: no block is loaded twice and no end is
 * searched for (Anthropic's fragment, 4-16 bytes with one or two `\"`, is 3 bytes from
 * the payload's end). An escape running into e, or a quote or NUL before it: the scanner
 * would not stop at e. A surrogate the decoder refuses: the rest scanned as
 * scan_string_decode does, the decoding left to the caller (val.p NULL). */
#if defined(__x86_64__) && defined(__GNUC__)
/* The quote and the backslash in every lane, for shape_last_string's copy compiled for
 * AVX2: loaded by an asm load (the compiler would build each from an immediate, three
 * instructions, per match). */
static const char shape_quote16[16] __attribute__((aligned(16))) = {'"', '"', '"', '"', '"', '"', '"', '"',
                                                                      '"', '"', '"', '"', '"', '"', '"', '"'};
static const char shape_bslash16[16] __attribute__((aligned(16))) = {'\\', '\\', '\\', '\\', '\\', '\\', '\\', '\\',
                                                                      '\\', '\\', '\\', '\\', '\\', '\\', '\\', '\\'};
#define SHAPE_CONST16(wide, x, c16, byte)                                                              \
  do {                                                                                                 \
    if (wide)                                                                                          \
      __asm__("vmovdqa %1, %0" : "=x"(x) : "m"(*(const char(*)[16])(c16)));                           \
    else                                                                                               \
      (x) = _mm_set1_epi8(byte);                                                                       \
  } while (0)
#else
#define SHAPE_CONST16(wide, x, c16, byte) ((void)(wide), (x) = _mm_set1_epi8(byte))
#endif

static inline __attribute__((always_inline)) int shape_last_string(const char *p, const char *e, const char *end,
                                                             const char *lo, int *esc, char *buf, ts_view *val,
                                                             int wide) {
  size_t n = (size_t)(e - p), nb = (n + 15) / 16;
  const char *base = e - 16 * nb;
  uint64_t mb = 0, ms = 0; /* backslashes; quotes and NULs */
  /* the text's blocks: the decoder's copies read here, 16 bytes a step, where a read
   * from the payload could run past its end (the bytes after the blocks, read by a last
   * step, land in buf past the value and are never read) */
  char t[64 + 16];
#if defined(__SSE2__)
  __m128i quote, bslash;
  SHAPE_CONST16(wide, quote, shape_quote16, '"');
  SHAPE_CONST16(wide, bslash, shape_bslash16, '\\');
  const __m128i zero = _mm_setzero_si128();
  for (size_t k = 0; k < nb; k++) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(base + 16 * k));
    _mm_storeu_si128((__m128i *)(void *)(t + 16 * k), v);
    mb |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, bslash)) << (16 * k);
    ms |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, zero)))
          << (16 * k);
  }
#else
  for (size_t k = 0; k < 16 * nb; k++) {
    t[k] = base[k];
    mb |= (uint64_t)(base[k] == '\\') << k;
    ms |= (uint64_t)(base[k] == '"' || base[k] == '\0') << k;
  }
#endif
  mb >>= p - base; /* bit i: p[i], i < n */
  ms >>= p - base;
  if (!mb) { /* no escape: the value is the payload's own bytes */
    *val = (ts_view){p, n};
    return !ms;
  }
  *esc = 1;
  const char *tp = t + (p - base); /* p's byte in t */
  char *o = buf;                   /* (at most n bytes out, 15 more written: buf holds 512) */
  size_t s = 0;                    /* the text's bytes before s are decoded */
  for (uint64_t m = mb | ms; m;) {
    size_t i = (size_t)__builtin_ctzll(m);
    const char *x = p + i;
    if (*x != '\\') return 0;
    shape_copy64(o, tp + s, i - s); /* the bytes before it */
    o += i - s;
    char c;
    if (i + 1 < n && (c = scan_esc_byte[(unsigned char)x[1]]) != 'u' && c) { /* a one-letter escape */
      *o++ = c;
      s = i + 2;
      m &= ~((uint64_t)3 << i); /* its two bits (the letter may be a quote or backslash) */
      continue;
    }
    const char *q = scan_unescape_one(x, e, &o);
    if (!q) return 0;
    if (q == x) { /* given up: the caller decodes (and reports) */
      *val = (ts_view){NULL, 0};
      return scan_string(x, end, lo, esc) == e;
    }
    s = (size_t)(q - p); /* the bits of the bytes before q are spent */
    m = s >= 64 ? 0 : m & (~(uint64_t)0 << s);
  }
  shape_copy64(o, tp + s, n - s);
  o += n - s;
  *val = (ts_view){buf, (size_t)(o - buf)};
  return 1;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define TS_SHAPE_AVX2 1 /* the head's compare by 32-byte blocks where the CPU has AVX2 */
#define TS_SHAPE_AVX2_TARGET __attribute__((target("avx2")))
/* shape_same with 32-byte registers (called only on a CPU that has them, from a function
 * compiled for AVX2): the block ending at the end and those from the start before it, one
 * test; under 32 bytes, shape_same. An Anthropic delta's head is 87 bytes: three blocks. */
TS_SHAPE_AVX2_TARGET static inline int shape_same_avx2(const char *a, const char *b, size_t n) {
  if (n < 32) return shape_same(a, b, n);
#define LD32(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
  __m256i e = _mm256_cmpeq_epi8(LD32(a + n - 32), LD32(b + n - 32));
  for (size_t k = 0; k + 32 < n; k += 32) e = _mm256_and_si256(e, _mm256_cmpeq_epi8(LD32(a + k), LD32(b + k)));
#undef LD32
  return (unsigned)_mm256_movemask_epi8(e) == 0xFFFFFFFFu;
}
#define SHAPE_SAME_HEAD(wide, a, b, n) ((wide) ? shape_same_avx2(a, b, n) : shape_same(a, b, n))
#else
#define SHAPE_SAME_HEAD(wide, a, b, n) ((void)(wide), shape_same(a, b, n))
#endif

/* The fixed tail t[0..n) of P (1 <= n <= 16, P at least 16 bytes, t ending it) against P0's
 * tail t0 (P0 at least 16 bytes too): the 16-byte blocks that end the two payloads,
 * compared in their last n bytes. */
static inline int shape_same_tail(const char *t, const char *t0, size_t n) {
#if defined(__SSE2__)
  __m128i e = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(t + n - 16)),
                             _mm_loadu_si128((const __m128i *)(const void *)(t0 + n - 16)));
  return ((~(unsigned)_mm_movemask_epi8(e) & 0xFFFFu) >> (16 - n)) == 0; /* 1 <= n <= 16 */
#else
  return shape_same(t, t0, n);
#endif
}

/* match_value for a memo whose one span is the used string (Anthropic's delta): P is
 * P0's fixed head, the string's text, P0's fixed tail (its closing quote first), so the
 * text's extent follows from P's length, and the two runs are compared before the text is
 * read (shape_last_string), the head by 32-byte blocks when `wide` (a constant in each
 * compiled copy: the caller is compiled for AVX2 and the CPU has it). The event name is compared unless the reader said its reading
 * does not depend on it (any_name). -1: not decided here (a text over 64 bytes, or too
 * close to the payload's start for shape_last_string's blocks): the general match
 * decides. */
static inline __attribute__((always_inline)) int ts__json_shape_match_one(const ts_json_shape *m, const char *text,
                                                                          size_t len, ts_view name,
                                                                          ts_json_shape_value *out, int wide) {
  size_t head = m->span[0].off, tail = m->tail;
  if (!m->len || len < head + tail) return 0;
  size_t body = len - head - tail;
  /* (a head of 64 bytes or more holds any body's blocks: Anthropic's, 87, is tested once) */
  if (body > 64 || (head < 64 && head + body < 16 * ((body + 15) / 16))) return -1;
  if (!m->any_name && (name.len != m->name_len || !shape_same(name.p, m->name, name.len))) return 0;
  if (!SHAPE_SAME_HEAD(wide, text, m->text, head)) return 0;
  /* (P and P0 are both at least head bytes: a head of 16 or more answers the two lengths) */
  if (tail <= 16 && (head >= 16 || (len >= 16 && m->len >= 16))
          ? !shape_same_tail(text + len - tail, m->text + m->len - tail, tail)
          : !shape_same(text + len - tail, m->text + m->len - tail, tail))
    return 0;
  const char *p = text + head;
  int esc = 0;
  if (!shape_last_string(p, p + body, text + len, text, &esc, out->buf, &out->val, wide)) return 0;
  out->used.raw = (ts_view){p, body};
  out->used.escaped = esc;
  return 1;
}

#endif /* TS_JSON_SHAPE_IMPL_H */
