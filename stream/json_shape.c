/*
 * json_shape.c: the shape memo of json_shape.h.
 *
 * Why it is exact. The scanner (json_scan_impl.h) decides each step from the bytes at
 * its position: punctuation, key bytes, the first byte of a value, and for a value its
 * extent. Take P equal to P0 outside the memo's spans, with a valid value of the same
 * kind at each span (a string whose body the string scanner accepts; a number the number
 * scanner accepts whole, followed by the same fixed byte as in P0). Before the first
 * span the two walks are the same; at a span both hand out an item of the same type with
 * the same key, and both end right after its value, where the bytes again agree. So the
 * walks are item for item the same, apart from the spans' raw text. The reader looks at
 * the raw text only of the used span (the others are members it never reads), so its
 * reading of P is its reading of P0 with the used value replaced. A value of another kind
 * (a number where P0 had a string, a null), a difference in a key, a longer or shorter
 * payload, a member more: some fixed byte differs, and the match fails.
 *
 * Cost. The fixed bytes are compared 16 a step (SSE2), with one overlapping block for a
 * run's last bytes, so a 350-byte Chat payload is about 22 comparisons; each span costs
 * one string scan (the same SIMD scanner the reader uses) or one number scan.
 */
#include "stream/json_shape.h"

#include <string.h>

#include "stream/json_scan_impl.h"
#include "stream/json_shape_impl.h"

int ts_json_shape_keep(ts_json_shape *m, const char *text, size_t len, ts_view name,
                       const ts_json_shape_notes *nt, ts_view used) {
  m->len = 0;
  m->one = 0;
  m->any_name = 0;
  m->slot_gen = 0;
  if (len == 0 || len > TS_JSON_SHAPE_MAX || name.len > TS_JSON_SHAPE_NAME_MAX) return 0;
  if ((nt && nt->over) || !used.p || used.p < text || used.p + used.len > text + len) return 0;
  /* The spans in the order of the text: the noted ones come in order (top-level members,
   * as read); the used one goes where it lies among them. */
  unsigned n = 0, nn = nt ? nt->n : 0;
  int placed = 0;
  for (unsigned k = 0; k <= nn; k++) {
    const char *p = k < nn ? nt->span[k].p : NULL;
    if (!placed && (!p || used.p < p)) {
      m->used = (uint8_t)n;
      m->span[n++] = (ts_json_shape_span){(uint16_t)(used.p - text), (uint16_t)used.len, TS_JSON_SHAPE_STRING};
      placed = 1;
    }
    if (!p) break;
    if (p < text || p + nt->span[k].len > text + len) return 0;
    m->span[n++] = (ts_json_shape_span){(uint16_t)(p - text), nt->span[k].len, nt->span[k].kind};
  }
  for (unsigned k = 1; k < n; k++) /* never overlapping, never out of order */
    if (m->span[k].off < m->span[k - 1].off + m->span[k - 1].len) return 0;
  m->n_spans = (uint8_t)n;
  m->one = n == 1;
  m->tail = (uint16_t)(len - m->span[0].off - m->span[0].len);
  memcpy(m->text, text, len);
  if (name.len) memcpy(m->name, name.p, name.len);
  m->name_len = (uint16_t)name.len;
  m->len = (uint16_t)len;
  return 1;
}

/* A number span's end, as scan_num finds it: an integer of 1..8 digits after its first
 * (Responses' sequence_number, an index) found by one 8-byte word, the first byte that
 * is no digit located by its bit; anything else (a sign, a zero, a fraction or exponent,
 * more digits, fewer than 9 bytes left) goes to scan_num. A byte of 0xFA or more carries
 * into the next one when 6 is added, but it is itself no digit, and the carry lands only
 * in later bytes, past the first non-digit that is looked for. */
static inline const char *span_num(const char *p, const char *end) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  if (end - p >= 9 && *p >= '1' && *p <= '9') {
    uint64_t w;
    memcpy(&w, p + 1, 8);
    const uint64_t hi = UINT64_C(0xF0F0F0F0F0F0F0F0), three = UINT64_C(0x3030303030303030);
    uint64_t nd = ((w & hi) ^ three) | (((w + UINT64_C(0x0606060606060606)) & hi) ^ three);
    if (nd) {
      const char *q = p + 1 + (__builtin_ctzll(nd) >> 3); /* q < end: at most p + 8 */
      if (*q != '.' && *q != 'e' && *q != 'E') return q;
    }
  }
#endif
  return p < end && (*p == '-' || scan_is_digit(*p)) ? scan_num(p, end) : NULL;
}

/* One ignored span at p (just after its fixed run): its end, or NULL when P holds no
 * value of the span's kind there. */
static inline __attribute__((always_inline)) const char *ignored_span(const ts_json_shape_span *sp,
                                                                      const char *p, const char *end,
                                                                      const char *text) {
  int esc = 0;
  return sp->kind == TS_JSON_SHAPE_STRING ? scan_string(p, end, text, &esc) /* after the opening quote */
                                          : span_num(p, end);
}

/* The match, and with buf set the used string decoded in the same walk (match_value).
 * The spans before the used one, the used one, the spans after it: the used span's
 * decoding is written once, outside the loops, and the loops ask nothing per span but
 * its kind. */
static inline __attribute__((always_inline)) int match(const ts_json_shape *m, const char *text,
                                                       size_t len, ts_view name,
                                                       ts_json_scan_str *used, char *buf,
                                                       size_t cap, ts_view *val, int wide) {
  if (!m->len || (!m->any_name && (name.len != m->name_len || !shape_same(name.p, m->name, name.len)))) return 0;
  const char *p = text, *end = text + len, *q;
  size_t o0 = 0; /* where P0's next fixed run starts */
  const ts_json_shape_span *sp = m->span, *const su = m->span + m->used, *const sn = m->span + m->n_spans;
  for (; sp < su; sp++) {
    size_t run = sp->off - o0;
    if ((size_t)(end - p) < run || !SHAPE_SAME_HEAD(wide, p, m->text + o0, run)) return 0;
    p = ignored_span(sp, p + run, end, text);
    if (!p) return 0;
    o0 = (size_t)sp->off + sp->len;
  }
  { /* the used span: a string (ts_json_shape_keep) */
    size_t run = sp->off - o0;
    if ((size_t)(end - p) < run || !SHAPE_SAME_HEAD(wide, p, m->text + o0, run)) return 0;
    p += run;
    int esc = 0;
    if (buf) {
      ssize_t w = 0;
      q = scan_string_decode(p, end, text, &esc, buf, cap, &w);
      if (!q) return 0;
      /* no escapes: the value is the payload's own bytes; given up: the caller's */
      *val = !esc ? (ts_view){p, (size_t)(q - p)} : w >= 0 ? (ts_view){buf, (size_t)w} : (ts_view){NULL, 0};
    } else {
      q = scan_string(p, end, text, &esc); /* p is just after the opening quote (fixed) */
      if (!q) return 0;
    }
    used->raw = (ts_view){p, (size_t)(q - p)};
    used->escaped = esc;
    p = q;
    o0 = (size_t)sp->off + sp->len;
  }
  for (sp++; sp < sn; sp++) {
    size_t run = sp->off - o0;
    if ((size_t)(end - p) < run || !SHAPE_SAME_HEAD(wide, p, m->text + o0, run)) return 0;
    p = ignored_span(sp, p + run, end, text);
    if (!p) return 0;
    o0 = (size_t)sp->off + sp->len;
  }
  size_t run = m->len - o0;
  if ((size_t)(end - p) != run || !SHAPE_SAME_HEAD(wide, p, m->text + o0, run)) return 0;
  return 1;
}

int ts_json_shape_match(const ts_json_shape *m, const char *text, size_t len, ts_view name,
                        ts_json_scan_str *used) {
  return match(m, text, len, name, used, NULL, 0, NULL, 0);
}

static int match_value_narrow(const ts_json_shape *m, const char *text, size_t len, ts_view name,
                              ts_json_shape_value *out) {
  return match(m, text, len, name, &out->used, out->buf, sizeof out->buf, &out->val, 0);
}

#ifdef TS_SHAPE_AVX2
/* The runs between spans compared 32 bytes a step where the CPU has AVX2 (Chat's head
 * before the fragment is about 250 bytes, its run after it 60): the same match, compiled
 * for AVX2, picked before main from cpuid, as json_tok.c picks its scan, and called
 * through a pointer (a test per call cost more than it saved on Bedrock's short runs; an
 * ifunc's resolver runs before the sanitizers' runtime is set up, and crashed the ASan
 * build). */
TS_SHAPE_AVX2_TARGET static int match_value_avx2(const ts_json_shape *m, const char *text, size_t len,
                                                 ts_view name, ts_json_shape_value *out) {
  return match(m, text, len, name, &out->used, out->buf, sizeof out->buf, &out->val, 1);
}

static int (*match_value_impl)(const ts_json_shape *, const char *, size_t, ts_view,
                               ts_json_shape_value *) = match_value_narrow;

__attribute__((constructor)) static void match_value_pick(void) {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) match_value_impl = match_value_avx2;
}

int ts_json_shape_match_value(const ts_json_shape *m, const char *text, size_t len, ts_view name,
                              ts_json_shape_value *out) {
  return match_value_impl(m, text, len, name, out);
}
#else
int ts_json_shape_match_value(const ts_json_shape *m, const char *text, size_t len, ts_view name,
                              ts_json_shape_value *out) {
  return match_value_narrow(m, text, len, name, out);
}
#endif

static inline __attribute__((always_inline)) int match_one(const ts_json_shape *m, const char *text, size_t len,
                                                           ts_view name, ts_json_shape_value *out, int wide) {
  if (m->one) {
    int r = ts__json_shape_match_one(m, text, len, name, out, wide);
    if (r >= 0) return r;
  }
  return match(m, text, len, name, &out->used, out->buf, sizeof out->buf, &out->val, wide);
}

int ts_json_shape_match_one(const ts_json_shape *m, const char *text, size_t len, ts_view name,
                            ts_json_shape_value *out) {
  return match_one(m, text, len, name, out, 0);
}

#ifdef TS_SHAPE_AVX2
TS_SHAPE_AVX2_TARGET static int match_one_avx2(const ts_json_shape *m, const char *text, size_t len, ts_view name,
                                               ts_json_shape_value *out) {
  return match_one(m, text, len, name, out, 1);
}

/* Chosen once, as match_value_impl: a test of the CPU in ts__json_shape_match_one_avx2
 * itself made GCC inline the narrow copy there, and every call paid that copy's six
 * saved registers and its stack frame (22 instructions per Bedrock message) before it
 * went on to the AVX2 one. */
static int (*match_one_impl)(const ts_json_shape *, const char *, size_t, ts_view,
                             ts_json_shape_value *) = ts_json_shape_match_one;

__attribute__((constructor)) static void match_one_pick(void) {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) match_one_impl = match_one_avx2;
}
#endif

int ts__json_shape_match_one_avx2(const ts_json_shape *m, const char *text, size_t len, ts_view name,
                                  ts_json_shape_value *out) {
#ifdef TS_SHAPE_AVX2
  return match_one_impl(m, text, len, name, out);
#else
  return ts_json_shape_match_one(m, text, len, name, out);
#endif
}
