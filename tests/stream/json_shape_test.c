/*
 * json_shape_test.c: the shape memo (stream/json_shape.h).
 *
 * A memo is kept from a payload P0 whose member `u` (at any depth, the first one) is the
 * used string and whose top-level members named `i...` are ignored values. Rows give P0,
 * a payload P and whether P must match (and P's used value, raw). Then every one-byte
 * change, deletion and insertion of a few bytes at every position of P0 is checked
 * against a reference: whenever the memo says "match", scanning P and P0 side by side
 * (json_scan.h) must give the same items, apart from the spans' values, which must be
 * of the same kind; and the used value it hands out must be P's. Edits inside a span
 * that keep it a valid value must match (the memo is not allowed to be useless).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "stream/json_scan.h"
#include "stream/json_shape.h"
#include "stream/json_unescape.h"
#include "support/runner.h"
#include "support/sb.h"
#include "support/test_support.h"

static int is_ignored(const ts_json_item *it) {
  return it->depth == 1 && it->key.len >= 1 && it->key.p[0] == 'i' &&
         (it->type == TS_JSON_SCAN_STRING || it->type == TS_JSON_SCAN_NUMBER);
}

static int is_used_key(const ts_json_item *it) {
  return it->key.len == 1 && it->key.p[0] == 'u' && it->type == TS_JSON_SCAN_STRING;
}

/* Keeps text as P0 the way a reader would: the notes of its ignored members, the first
 * `u` string as the used span. 1 when kept. */
static int keep(ts_json_shape *m, const char *text, size_t len, ts_view name) {
  ts_json_scan s;
  ts_json_item it;
  ts_json_shape_notes nt = {0};
  ts_view used = {NULL, 0};
  ts_json_scan_init(&s, text, len);
  int rc;
  while ((rc = ts_json_scan_next(&s, &it)) == 1) {
    if (is_ignored(&it)) ts_json_shape_note(&nt, &it);
    if (!used.p && is_used_key(&it)) used = it.raw;
  }
  ck_assert_int_eq(rc, 0);
  return ts_json_shape_keep(m, text, len, name, &nt, used);
}

/* The reference: P and P0 scan to the same items apart from the spans' values (same
 * kinds), and *used is P's first `u` string. */
static int same_reading(const char *p0, size_t n0, const char *p, size_t n, ts_view *used) {
  ts_json_scan a, b;
  ts_json_item x, y;
  ts_json_scan_init(&a, p0, n0);
  ts_json_scan_init(&b, p, n);
  int seen_used = 0;
  for (;;) {
    int ra = ts_json_scan_next(&a, &x), rb = ts_json_scan_next(&b, &y);
    if (ra != rb) return 0;
    if (ra != 1) return ra == 0;
    if (x.type != y.type || x.depth != y.depth || x.key.len != y.key.len ||
        (x.key.len && memcmp(x.key.p, y.key.p, x.key.len) != 0))
      return 0;
    int span = is_ignored(&x) || (!seen_used && is_used_key(&x));
    if (!seen_used && is_used_key(&x)) {
      seen_used = 1;
      *used = y.raw;
    }
    if (x.type == TS_JSON_SCAN_END) continue; /* raw differs when a span inside does */
    if (x.type == TS_JSON_SCAN_OBJECT || x.type == TS_JSON_SCAN_ARRAY) continue;
    if (!span && (x.raw.len != y.raw.len || memcmp(x.raw.p, y.raw.p, x.raw.len) != 0)) return 0;
  }
}

typedef struct {
  int line;
  const char *label;
  const char *p0, *p;
  int match;
  const char *used; /* P's used value, raw (match only) */
} row;

#define P0 "{\"a\":1,\"b\":{\"c\":[{\"u\":\"frag\"}]},\"id\":\"x\",\"in\":123,\"z\":null}"

static const row rows[] = {
    {__LINE__, "the same payload", P0, P0, 1, "frag"},
    {__LINE__, "another fragment, longer", P0,
     "{\"a\":1,\"b\":{\"c\":[{\"u\":\"a longer fragment\"}]},\"id\":\"x\",\"in\":123,\"z\":null}", 1,
     "a longer fragment"},
    {__LINE__, "an empty fragment", P0, "{\"a\":1,\"b\":{\"c\":[{\"u\":\"\"}]},\"id\":\"x\",\"in\":123,\"z\":null}", 1, ""},
    {__LINE__, "escapes in the fragment: \\\" \\\\ \\u", P0,
     "{\"a\":1,\"b\":{\"c\":[{\"u\":\"\\\"\\\\\\u00e9\\\"\"}]},\"id\":\"x\",\"in\":123,\"z\":null}", 1,
     "\\\"\\\\\\u00e9\\\""},
    {__LINE__, "ignored values changed, other kinds of number", P0,
     "{\"a\":1,\"b\":{\"c\":[{\"u\":\"f\"}]},\"id\":\"a much longer id\",\"in\":-1.5e+30,\"z\":null}", 1, "f"},
    {__LINE__, "a bad escape in the fragment", P0,
     "{\"a\":1,\"b\":{\"c\":[{\"u\":\"\\x\"}]},\"id\":\"x\",\"in\":123,\"z\":null}", 0, NULL},
    {__LINE__, "a cut \\u in the fragment", P0,
     "{\"a\":1,\"b\":{\"c\":[{\"u\":\"\\u00\"}]},\"id\":\"x\",\"in\":123,\"z\":null}", 0, NULL},
    {__LINE__, "a fixed value changed", P0, "{\"a\":2,\"b\":{\"c\":[{\"u\":\"frag\"}]},\"id\":\"x\",\"in\":123,\"z\":null}", 0, NULL},
    {__LINE__, "a difference inside a key", P0, "{\"a\":1,\"b\":{\"c\":[{\"v\":\"frag\"}]},\"id\":\"x\",\"in\":123,\"z\":null}", 0, NULL},
    {__LINE__, "the used string turns null", P0, "{\"a\":1,\"b\":{\"c\":[{\"u\":null}]},\"id\":\"x\",\"in\":123,\"z\":null}", 0, NULL},
    {__LINE__, "an ignored number turns string", P0, "{\"a\":1,\"b\":{\"c\":[{\"u\":\"frag\"}]},\"id\":\"x\",\"in\":\"123\",\"z\":null}", 0, NULL},
    {__LINE__, "an ignored string turns number", P0, "{\"a\":1,\"b\":{\"c\":[{\"u\":\"frag\"}]},\"id\":5,\"in\":123,\"z\":null}", 0, NULL},
    {__LINE__, "a number cut", P0, "{\"a\":1,\"b\":{\"c\":[{\"u\":\"frag\"}]},\"id\":\"x\",\"in\":-,\"z\":null}", 0, NULL},
    {__LINE__, "a number with a bad fraction", P0, "{\"a\":1,\"b\":{\"c\":[{\"u\":\"frag\"}]},\"id\":\"x\",\"in\":1.,\"z\":null}", 0, NULL},
    {__LINE__, "shorter: cut at the end", P0, "{\"a\":1,\"b\":{\"c\":[{\"u\":\"frag\"}]},\"id\":\"x\",\"in\":123,\"z\":null", 0, NULL},
    {__LINE__, "longer: whitespace after", P0, P0 " ", 0, NULL},
    {__LINE__, "an extra member", P0, "{\"a\":1,\"b\":{\"c\":[{\"u\":\"frag\"}]},\"id\":\"x\",\"in\":123,\"z\":null,\"y\":1}", 0, NULL},
    {__LINE__, "a duplicate member after the span", P0,
     "{\"a\":1,\"b\":{\"c\":[{\"u\":\"frag\",\"u\":\"x\"}]},\"id\":\"x\",\"in\":123,\"z\":null}", 0, NULL},
    {__LINE__, "the fragment's quote closing early, the rest moved", P0,
     "{\"a\":1,\"b\":{\"c\":[{\"u\":\"fr\"}]},\"id\":\"x\",\"in\":123,\"z\":null}\"}]},\"id\":\"x\",\"in\":123,\"z\":null}", 0, NULL},
    {__LINE__, "an empty payload", P0, "", 0, NULL},
};

/* ts_json_shape_match_value agrees with ts_json_shape_match on q, and its value is the
 * used string decoded: a view into q when it has no escapes, the decoder's output in buf,
 * or left to the caller (NULL) exactly when the decoder refuses it. Returns the match. */
static int check_match_value(const ts_json_shape *m, const char *q, size_t n, ts_view name) {
  ts_json_scan_str used = {{NULL, 0}, 0}, used2 = used;
  int got = ts_json_shape_match(m, q, n, name, &used);
  ts_json_shape_value *v = malloc(sizeof *v);
  ck_assert_ptr_nonnull(v);
  ck_assert_int_eq(ts_json_shape_match_value(m, q, n, name, v), got);
  used2 = v->used;
  ts_view val = v->val;
  const char *buf = v->buf;
  size_t cap = sizeof v->buf;
  /* the one-span way (ts_json_shape_match_one): the same answer, to the byte */
  static ts_json_shape_value wv;
  ts_json_shape_value *w = &wv;
  for (int wide = 0; wide < 2; wide++) { /* the adapter's two copies: 16- and 32-byte compares */
    int r = wide ? ts__json_shape_match_one_avx2(m, q, n, name, w) : ts_json_shape_match_one(m, q, n, name, w);
    ck_assert_msg(r == got, "match_one (wide %d) says %d for %.*s", wide, r, (int)n, q);
    if (!got) continue;
    ck_assert(w->used.raw.p == used.raw.p && w->used.raw.len == used.raw.len && w->used.escaped == used.escaped);
    if (!val.p)
      ck_assert_msg(!w->val.p, "match_one decoded what match_value left: %.*s", (int)n, q);
    else if (val.p != buf)
      ck_assert(w->val.p == val.p && w->val.len == val.len);
    else
      ck_assert_msg(w->val.p == w->buf && w->val.len == val.len && memcmp(w->val.p, val.p, val.len) == 0,
                    "match_one's value differs for %.*s", (int)n, q);
  }
  if (!got) {
    free(v);
    return 0;
  }
  ck_assert(used2.raw.p == used.raw.p && used2.raw.len == used.raw.len && used2.escaped == used.escaped);
  char *ref = malloc(used.raw.len + TS_JSON_UNESCAPE_SLACK + 1);
  ck_assert_ptr_nonnull(ref);
  ssize_t rn = ts_json_unescape_all(used.raw.p, used.raw.len, ref);
  if (!used.escaped) {
    ck_assert(val.p == used.raw.p && val.len == used.raw.len); /* no copy */
  } else if (val.p) {
    ck_assert(val.p == buf);
    ck_assert(rn >= 0 && (size_t)rn == val.len && memcmp(val.p, ref, val.len) == 0);
  } else {
    ck_assert(rn < 0 || (size_t)rn + 20 > cap);
  }
  free(ref);
  free(v);
  return 1;
}

START_TEST(test_rows) {
  const row *w = &rows[_i];
  ts_json_shape *m = calloc(1, sizeof *m);
  ck_assert_ptr_nonnull(m);
  ts_view name = {"ev", 2};
  ck_assert_msg(keep(m, w->p0, strlen(w->p0), name), "line %d: not kept", w->line);
  size_t n = strlen(w->p);
  char *p = malloc(n + 1); /* exact size: ASan sees any byte read past P */
  ck_assert_ptr_nonnull(p);
  memcpy(p, w->p, n);
  ts_json_scan_str used = {{NULL, 0}, 0};
  int got = ts_json_shape_match(m, p, n, name, &used);
  ck_assert_int_eq(check_match_value(m, p, n, name), got);
  ck_assert_msg(got == w->match, "line %d (%s): match %d", w->line, w->label, got);
  if (got) {
    ck_assert_msg(used.raw.len == strlen(w->used) && memcmp(used.raw.p, w->used, used.raw.len) == 0,
                  "line %d: used %.*s", w->line, (int)used.raw.len, used.raw.p);
    ck_assert(used.raw.p >= p && used.raw.p + used.raw.len <= p + n);
    ck_assert_int_eq(used.escaped, memchr(w->used, '\\', strlen(w->used)) != NULL);
    /* another event name is another payload */
    ck_assert_int_eq(ts_json_shape_match(m, p, n, (ts_view){"ew", 2}, &used), 0);
    ck_assert_int_eq(ts_json_shape_match(m, p, n, (ts_view){NULL, 0}, &used), 0);
  }
  free(p);
  free(m);
}
END_TEST

START_TEST(test_limits) {
  ts_json_shape *m = calloc(1, sizeof *m);
  ck_assert_ptr_nonnull(m);
  ts_json_scan_str used;
  ts_view name = {NULL, 0};
  /* a zeroed memo is empty, and matches nothing, not even the empty payload */
  ck_assert_int_eq(ts_json_shape_match(m, "", 0, name, &used), 0);
  ck_assert_int_eq(ts_json_shape_match(m, "{}", 2, name, &used), 0);
  /* a payload over the memo's size is not kept, and empties the memo */
  ck_assert(keep(m, P0, strlen(P0), name));
  size_t big = TS_JSON_SHAPE_MAX + 1;
  char *p = malloc(big + 1);
  ck_assert_ptr_nonnull(p);
  memset(p, ' ', big);
  memcpy(p, "{\"u\":\"x\"}", 9);
  p[big] = 0;
  ck_assert_int_eq(keep(m, p, big, name), 0);
  ck_assert_int_eq(ts_json_shape_match(m, P0, strlen(P0), name, &used), 0);
  /* exactly the size is kept */
  ck_assert(keep(m, p, big - 1, name));
  ck_assert_int_eq(ts_json_shape_match(m, p, big - 1, name, &used), 1);
  /* an event name too long */
  char longname[TS_JSON_SHAPE_NAME_MAX + 1];
  memset(longname, 'n', sizeof longname);
  ck_assert_int_eq(keep(m, P0, strlen(P0), (ts_view){longname, sizeof longname}), 0);
  /* more ignored members than spans */
  const char *many = "{\"i1\":1,\"i2\":2,\"i3\":3,\"i4\":4,\"i5\":5,\"i6\":6,\"i7\":7,\"u\":\"x\"}";
  ck_assert_int_eq(keep(m, many, strlen(many), name), 0);
  const char *six = "{\"i1\":1,\"i2\":2,\"i3\":3,\"u\":\"x\",\"i4\":4,\"i5\":5,\"i6\":\"s\"}";
  ck_assert(keep(m, six, strlen(six), name));
  const char *six2 = "{\"i1\":10,\"i2\":20,\"i3\":30,\"u\":\"yy\",\"i4\":40,\"i5\":50,\"i6\":\"t\"}";
  ck_assert_int_eq(ts_json_shape_match(m, six2, strlen(six2), name, &used), 1);
  ck_assert(used.raw.len == 2 && memcmp(used.raw.p, "yy", 2) == 0);
  /* no used string: not kept */
  ck_assert_int_eq(ts_json_shape_keep(m, P0, strlen(P0), name, NULL, (ts_view){NULL, 0}), 0);
  /* clear */
  ck_assert(keep(m, P0, strlen(P0), name));
  ts_json_shape_clear(m);
  ck_assert_int_eq(ts_json_shape_match(m, P0, strlen(P0), name, &used), 0);
  free(p);
  free(m);
}
END_TEST

/* Every small edit of P0, against the reference. */
START_TEST(test_edits) {
  static const char *const bases[] = {
      P0,
      "{\"id\":\"chatcmpl-1\",\"created\":1755868211,\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
      "\"function\":{\"u\":\"{\\\"desc\"}}]},\"finish_reason\":null}],\"iobf\":\"64yc5y9dujvK4my\"}",
      "{\"iseq\":3,\"u\":\"a\\\\b\",\"ix\":\"\"}",
      "{ \"u\" : \"x\" , \"i\" : 0 }",
  };
  static const char edits[] = {'"', '\\', '0', '9', 'a', ',', '}', ']', ':', ' ', '-', '.', 'e', 'u', '\0'};
  ts_json_shape *m = calloc(1, sizeof *m);
  ck_assert_ptr_nonnull(m);
  ts_view name = {NULL, 0};
  long matched = 0, matched_inside_used = 0;
  for (size_t b = 0; b < sizeof bases / sizeof bases[0]; b++) {
    const char *p0 = bases[b];
    size_t n0 = strlen(p0);
    ck_assert(keep(m, p0, n0, name));
    char *p = malloc(n0 + 2);
    ck_assert_ptr_nonnull(p);
    for (size_t at = 0; at <= n0; at++) {
      for (size_t e = 0; e < sizeof edits + 1; e++) {
        for (int op = 0; op < 3; op++) { /* replace, insert, delete */
          size_t n;
          if (op == 0) {
            if (at == n0 || e == sizeof edits) continue;
            memcpy(p, p0, n0);
            p[at] = edits[e];
            n = n0;
          } else if (op == 1) {
            if (e == sizeof edits) continue;
            memcpy(p, p0, at);
            p[at] = edits[e];
            memcpy(p + at + 1, p0 + at, n0 - at);
            n = n0 + 1;
          } else {
            if (at == n0 || e != sizeof edits) continue;
            memcpy(p, p0, at);
            memcpy(p + at, p0 + at + 1, n0 - at - 1);
            n = n0 - 1;
          }
          char *q = malloc(n ? n : 1); /* exact size */
          ck_assert_ptr_nonnull(q);
          memcpy(q, p, n);
          ts_json_scan_str used = {{NULL, 0}, 0};
          check_match_value(m, q, n, name);
          if (ts_json_shape_match(m, q, n, name, &used)) {
            ts_view ref = {NULL, 0};
            ck_assert_msg(same_reading(p0, n0, q, n, &ref), "base %zu: %.*s matched", b, (int)n, q);
            ck_assert_msg(ref.p == used.raw.p && ref.len == used.raw.len, "base %zu: %.*s: used differs", b, (int)n, q);
            ck_assert_int_eq(used.escaped, memchr(used.raw.p, '\\', used.raw.len) != NULL);
            matched++;
            if (used.raw.len != 0 && !(n == n0 && memcmp(q, p0, n) == 0)) matched_inside_used++;
          }
          free(q);
        }
      }
    }
    free(p);
  }
  ck_assert_int_gt(matched, 100);
  ck_assert_int_gt(matched_inside_used, 10);
  free(m);
}
END_TEST

/* Fixed runs of every length from 1 to 200 bytes (the compare's paths: under 16, one
 * to four blocks, 64 a step with any remainder): P0 itself matches, and a change of any
 * one fixed byte does not. */
START_TEST(test_long_runs) {
  ts_json_shape *m = calloc(1, sizeof *m);
  ck_assert_ptr_nonnull(m);
  ts_view name = {"event_name_of_some_length", 25};
  for (size_t run = 1; run <= 200; run++) {
    sb b = {0};
    sb_puts(&b, "{\"k");
    for (size_t k = 3; k < run; k++) sb_putc(&b, (char)('a' + k % 26));
    sb_puts(&b, "\":0,\"u\":\"frag\\\"x\",\"t");
    for (size_t k = 3; k < run; k++) sb_putc(&b, (char)('A' + k % 26));
    sb_puts(&b, "\":1}");
    ck_assert(keep(m, b.p, b.len, name));
    char *q = malloc(b.len);
    ck_assert_ptr_nonnull(q);
    memcpy(q, b.p, b.len);
    ck_assert_msg(check_match_value(m, q, b.len, name), "run %zu: P0 does not match", run);
    for (size_t at = 0; at < b.len; at++) {
      const char *u = strstr(b.p, "frag");
      if (q + at >= q + (u - b.p) && q + at < q + (u - b.p) + 7) continue; /* inside the used span */
      q[at] ^= 0x01;
      ck_assert_msg(!check_match_value(m, q, b.len, name), "run %zu: byte %zu changed, still a match", run, at);
      q[at] ^= 0x01;
    }
    free(q);
    free(b.p);
  }
  free(m);
}
END_TEST

/* Number spans: every number text N of 1..11 bytes over digits, sign, point and
 * exponent (sampled; all of them up to 3 bytes), at a span in the middle of the payload
 * and at its end, each followed by its fixed bytes: a match exactly when the scanner
 * reads P as it reads P0 (N a number ending where the fixed bytes resume). */
START_TEST(test_numbers) {
  static const char alpha[] = "0123456789-+.eEx,";
  static const char *const shapes[][2] = {
      {"{\"in\":", ",\"u\":\"x\",\"t\":1}"},   /* the number, then more than 9 bytes */
      {"{\"u\":\"x\",\"in\":", "}"},            /* the number near the payload's end */
      {"{\"u\":\"x\",\"in\":", ",\"k\":null}"}, /* and 9 bytes after it */
  };
  ts_json_shape *m = calloc(1, sizeof *m);
  ck_assert_ptr_nonnull(m);
  ts_view name = {NULL, 0};
  long hits = 0, tried = 0;
  uint64_t rng = 7;
  for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
    sb p0 = {0};
    sb_puts(&p0, shapes[sh][0]);
    sb_puts(&p0, "7");
    sb_puts(&p0, shapes[sh][1]);
    ck_assert(keep(m, p0.p, p0.len, name));
    for (size_t len = 1; len <= 11; len++) {
      /* len <= 3: every text of that length, by its index; longer ones at random */
      size_t total = 1;
      for (size_t k = 0; k < len && len <= 3; k++) total *= sizeof alpha - 1;
      if (len > 3) total = 3000;
      for (size_t idx = 0; idx < total; idx++) {
        {
          char num[16];
          size_t x = idx;
          for (size_t k = 0; k < len; k++) {
            if (len <= 3) {
              num[k] = alpha[x % (sizeof alpha - 1)];
              x /= sizeof alpha - 1;
            } else {
              rng = rng * 6364136223846793005u + 1442695040888963407u;
              unsigned r = (unsigned)(rng >> 33);
              num[k] = r % 4 ? (char)('0' + r / 4 % 10) : alpha[r / 4 % (sizeof alpha - 1)];
            }
          }
          sb p = {0};
          sb_puts(&p, shapes[sh][0]);
          for (size_t k = 0; k < len; k++) sb_putc(&p, num[k]);
          sb_puts(&p, shapes[sh][1]);
          char *q = malloc(p.len); /* exact size: a read past the end is ASan's */
          ck_assert_ptr_nonnull(q);
          memcpy(q, p.p, p.len);
          ts_json_scan_str used = {{NULL, 0}, 0};
          ts_view ref = {NULL, 0};
          int got = ts_json_shape_match(m, q, p.len, name, &used);
          int want = same_reading(p0.p, p0.len, q, p.len, &ref);
          ck_assert_msg(got == want, "shape %zu: %.*s: match %d, the scanner's reading %d", sh, (int)p.len, q, got, want);
          ck_assert_int_eq(check_match_value(m, q, p.len, name), got);
          hits += got;
          tried++;
          free(q);
          free(p.p);
        }
      }
    }
    free(p0.p);
  }
  ck_assert_int_gt(hits, 1000);
  ck_assert_int_gt(tried, 50000);
  free(m);
}
END_TEST

/* Memos whose only span is the used string (ts_json_shape_match_one reads those by the
 * text's extent): every string of up to 4 pieces from a set of every kind of escape, of
 * bytes the scanner refuses or stops at, and of long runs, between heads and tails of
 * lengths around the block sizes (a head too short for the text's blocks, a tail over 16
 * bytes: the general way's), each P in a buffer of its exact size (ASan sees a byte read
 * past it). check_match_value compares the three matches; a reference decides which P
 * must match: the scanner's string from the head ends where the tail begins. */
START_TEST(test_one_span) {
  static const char *const pieces[] = {
      "" /* first too: c's steps then reach it, and the text can be empty */, "a", "xyz", "\\\"", "\\\\", "\\n", "\\/", "\\u00e9", "\\u20ac", "\\ud83d\\ude00", "\\ud800",
      "\\udc00x", "\\u12", "\\x", "\\", "\"", "\x01", "\xc3\xa9", "0123456789abcdef",
      "0123456789abcdef0123456789abcdef0123", ""};
  static const size_t heads[] = {5, 17, 87};
  static const size_t tails[] = {1, 3, 17};
  const size_t np = sizeof pieces / sizeof pieces[0];
  ts_json_shape *m = calloc(1, sizeof *m);
  ck_assert_ptr_nonnull(m);
  ts_view name = {"content_block_delta", 19};
  long hits = 0, tried = 0, escaped = 0;
  for (size_t h = 0; h < sizeof heads / sizeof heads[0]; h++) {
    for (size_t t = 0; t < sizeof tails / sizeof tails[0]; t++) {
      /* P0: {"kkk...":"<u>"  with u the used string's key, then the tail's members */
      sb head = {0}, tail = {0}, p0 = {0};
      sb_puts(&head, "{\"");
      while (head.len + 6 < heads[h]) sb_puts(&head, "k");
      sb_puts(&head, "\":\"");
      if (head.len < heads[h]) { /* heads too short for a key: the used string first */
        free(head.p);
        head = (sb){0};
        sb_puts(&head, "{\"u\":\"");
        while (head.len < heads[h]) sb_puts(&head, " ");
      }
      sb_puts(&tail, "\"");
      if (tails[t] > 1) {
        sb_puts(&tail, "}");
        while (tail.len + 1 < tails[t]) sb_puts(&tail, " ");
      }
      sb_puts(&tail, tails[t] > 1 ? "}" : "");
      if (tails[t] > 1 && tail.len > tails[t]) tail.len = tails[t], tail.p[tail.len - 1] = '}';
      sb_puts(&p0, head.p);
      sb_puts(&p0, "frag");
      sb_puts(&p0, tail.p);
      ts_json_scan s;
      ts_json_item it;
      ts_json_scan_init(&s, p0.p, p0.len);
      ts_view used = {NULL, 0};
      while (ts_json_scan_next(&s, &it) == 1)
        if (it.type == TS_JSON_SCAN_STRING && !used.p) used = it.raw;
      ck_assert_msg(used.p && ts_json_shape_keep(m, p0.p, p0.len, name, NULL, used), "%s: not kept", p0.p);
      ck_assert_int_eq(m->one, 1);
      for (size_t a = 0; a < np; a++)
        for (size_t b = 0; b < np; b++)
          for (size_t c = 0; c < np; c += (a + b) % 5 + 3)
            for (size_t d = np - 1, k = 0; k < 1 + (a % 3 == 0); k++, d = b) {
              sb p = {0}, u = {0};
              sb_puts(&u, pieces[a]), sb_puts(&u, pieces[b]), sb_puts(&u, pieces[c]), sb_puts(&u, pieces[d]);
              sb_puts(&p, head.p);
              sb_puts(&p, u.p);
              sb_puts(&p, tail.p);
              char *q = malloc(p.len);
              ck_assert_ptr_nonnull(q);
              memcpy(q, p.p, p.len);
              /* the reference: the string from the head ends right before the tail */
              int esc = 0;
              ts_json_scan rs;
              ts_json_scan_init(&rs, q, p.len);
              ts_json_item ri;
              int want = 0;
              while (ts_json_scan_next(&rs, &ri) == 1)
                if (ri.type == TS_JSON_SCAN_STRING) {
                  want = ri.raw.p == q + (used.p - p0.p) && ri.raw.p + ri.raw.len == q + p.len - tail.len;
                  esc = ri.escaped;
                  break;
                }
              if (want && memcmp(q + p.len - tail.len, tail.p, tail.len)) want = 0;
              int got = check_match_value(m, q, p.len, name);
              ck_assert_msg(got == want, "head %zu tail %zu: %.*s: match %d", heads[h], tails[t], (int)p.len, q, got);
              /* another name: no match, unless the reader said the name does not matter */
              ck_assert_int_eq(check_match_value(m, q, p.len, (ts_view){"content_block_delte", 19}), 0);
              m->any_name = 1;
              ck_assert_int_eq(check_match_value(m, q, p.len, (ts_view){"x", 1}), got);
              m->any_name = 0;
              hits += got, escaped += got && esc, tried++;
              free(q);
              free(p.p);
              free(u.p);
            }
      free(head.p), free(tail.p), free(p0.p);
    }
  }
  ts_json_shape_clear(m);
  ck_assert_int_eq(m->one, 0);
  ck_assert_int_gt(hits, 4000);
  ck_assert_int_gt(escaped, 3000);
  ck_assert_int_gt(tried, 10000);
  free(m);
}
END_TEST

int main(void) {
  Suite *s = suite_create("json_shape");
  TCase *tc = ts_test_tcase(s, "memo", 0);
  tcase_add_loop_test(tc, test_rows, 0, (int)(sizeof rows / sizeof rows[0]));
  tcase_add_test(tc, test_limits);
  tcase_add_test(tc, test_edits);
  tcase_add_test(tc, test_long_runs);
  tcase_add_test(tc, test_numbers);
  tcase_add_test(tc, test_one_span);
  return ts_test_run(s, 0);
}
