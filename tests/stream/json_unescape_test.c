/*
 * json_unescape_test.c: tests for stream/json_unescape.c.
 *
 * Every table row is decoded whole, through ts_json_unescape_all, one byte at a time,
 * at every chunk size 1..31, and in place; all must give the same bytes and the same
 * error. Inputs and outputs live in exact-size heap buffers so that ASan catches a
 * read past the input or a write past len + TS_JSON_UNESCAPE_SLACK.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/json_unescape.h"
#include "support/sb.h"
#include "support/split.h"
#include "support/test_support.h"

typedef struct {
  int line;
  const char *label;
  const char *in;
  size_t in_len;
  const char *want; /* expected output when err == 0 */
  size_t want_len;
  int err;
} row;

/* Lengths come from sizeof so that rows may hold NUL bytes. */
#define OK(label, in, want) {__LINE__, label, in, sizeof(in) - 1, want, sizeof(want) - 1, 0}
#define BAD(label, in, err) {__LINE__, label, in, sizeof(in) - 1, "", 0, err}

static const row rows[] = {
    OK("empty", "", ""),
    OK("plain ascii", "hello, world", "hello, world"),
    OK("raw utf-8 copied", "caf\xC3\xA9 \xF0\x9F\x98\x80", "caf\xC3\xA9 \xF0\x9F\x98\x80"),
    OK("raw invalid bytes copied as they are", "\xFF\xC0\x80", "\xFF\xC0\x80"),
    OK("raw DEL and control copied", "\x7F\x01", "\x7F\x01"),
    OK("escape quote", "\\\"", "\""),
    OK("escape backslash", "\\\\", "\\"),
    OK("escape slash", "\\/", "/"),
    OK("escape b", "\\b", "\b"),
    OK("escape f", "\\f", "\f"),
    OK("escape n", "\\n", "\n"),
    OK("escape r", "\\r", "\r"),
    OK("escape t", "\\t", "\t"),
    OK("all single escapes", "\\\"\\\\\\/\\b\\f\\n\\r\\t", "\"\\/\b\f\n\r\t"),
    OK("escaped backslash then n", "\\\\n", "\\n"),
    OK("u0000 gives a NUL byte", "\\u0000", "\0"),
    OK("u0041", "\\u0041", "A"),
    OK("u007F last 1-byte", "\\u007F", "\x7F"),
    OK("u0080 first 2-byte", "\\u0080", "\xC2\x80"),
    OK("u00e9 lower hex", "\\u00e9", "\xC3\xA9"),
    OK("u00E9 upper hex", "\\u00E9", "\xC3\xA9"),
    OK("u07FF last 2-byte", "\\u07FF", "\xDF\xBF"),
    OK("u0800 first 3-byte", "\\u0800", "\xE0\xA0\x80"),
    OK("uAbCd mixed case", "\\uAbCd", "\xEA\xAF\x8D"),
    OK("uD7FF below surrogates", "\\uD7FF", "\xED\x9F\xBF"),
    OK("uE000 above surrogates", "\\uE000", "\xEE\x80\x80"),
    OK("uFFFF last BMP", "\\uFFFF", "\xEF\xBF\xBF"),
    OK("pair first supplementary", "\\uD800\\uDC00", "\xF0\x90\x80\x80"),
    OK("pair emoji lower", "\\ud83d\\ude00", "\xF0\x9F\x98\x80"),
    OK("pair last code point", "\\uDBFF\\uDFFF", "\xF4\x8F\xBF\xBF"),
    OK("two pairs back to back", "\\ud83d\\ude00\\ud83d\\ude01",
       "\xF0\x9F\x98\x80\xF0\x9F\x98\x81"),
    OK("mixed text and escapes", "a\\nb\\u00e9c\\ud83d\\ude00d\\\"e",
       "a\nb\xC3\xA9" "c\xF0\x9F\x98\x80" "d\"e"),
    OK("escape at start and end", "\\tmid\\t", "\tmid\t"),
    BAD("unknown escape x", "\\x", TS_E_JSON_ESCAPE),
    BAD("unknown escape U", "\\U0041", TS_E_JSON_ESCAPE),
    BAD("escape of a quote-less apostrophe", "\\'", TS_E_JSON_ESCAPE),
    BAD("escape of NUL", "\\\0", TS_E_JSON_ESCAPE),
    BAD("unknown escape after text", "abc\\a", TS_E_JSON_ESCAPE),
    BAD("bad hex first digit", "\\uG000", TS_E_JSON_ESCAPE),
    BAD("bad hex last digit", "\\u000g", TS_E_JSON_ESCAPE),
    BAD("bad hex space", "\\u 000", TS_E_JSON_ESCAPE),
    BAD("lone low surrogate", "\\udc00", TS_E_JSON_SURROGATE),
    BAD("lone low surrogate last", "\\uDFFF", TS_E_JSON_SURROGATE),
    BAD("low then high", "\\udc00\\ud800", TS_E_JSON_SURROGATE),
    BAD("high then BMP escape", "\\ud800\\u0041", TS_E_JSON_SURROGATE),
    BAD("high then high", "\\ud800\\ud800", TS_E_JSON_SURROGATE),
    BAD("high then raw byte", "\\ud800x", TS_E_JSON_SURROGATE),
    BAD("high then single escape", "\\ud800\\n", TS_E_JSON_SURROGATE),
    BAD("high then unknown escape", "\\ud800\\x", TS_E_JSON_SURROGATE),
    BAD("high then bad hex", "\\ud800\\uZ", TS_E_JSON_ESCAPE),
    BAD("high alone at end", "\\ud800", TS_E_JSON_SURROGATE),
    BAD("high alone after text", "ab\\uDBFF", TS_E_JSON_SURROGATE),
    BAD("truncated after backslash", "\\", TS_E_JSON_ESCAPE),
    BAD("truncated after u", "abc\\u", TS_E_JSON_ESCAPE),
    BAD("truncated after 2 digits", "\\u12", TS_E_JSON_ESCAPE),
    BAD("truncated after 3 digits", "\\u123", TS_E_JSON_ESCAPE),
    BAD("truncated pair after backslash", "\\ud800\\", TS_E_JSON_ESCAPE),
    BAD("truncated pair after u", "\\ud800\\u", TS_E_JSON_ESCAPE),
    BAD("truncated pair inside digits", "\\ud800\\udc0", TS_E_JSON_ESCAPE),
};

/* A decode result: output bytes or an error. */
typedef struct {
  char buf[512];
  size_t len;
  int err;
} result;

/* Decodes the reads `feed` hands out, each copied with the slack the decoder may write
 * past a chunk (the harness's own blocks are exact-size), output into an exact-size heap
 * buffer; in_place decodes each chunk that starts with nothing pending on top of its own
 * bytes. */
static result decode_reads(ts_split *feed, int in_place) {
  result r = {.len = 0, .err = 0};
  ts_json_unescape u;
  ts_json_unescape_init(&u);
  char *p;
  size_t n;
  while (ts_split_next(feed, &p, &n)) {
    char *c = malloc(n + TS_JSON_UNESCAPE_SLACK);
    ck_assert_ptr_nonnull(c);
    memcpy(c, p, n);
    char *o = c;
    char *scratch = NULL;
    if (!in_place || ts_json_unescape_pending(&u)) {
      scratch = malloc(n + TS_JSON_UNESCAPE_SLACK);
      ck_assert_ptr_nonnull(scratch);
      o = scratch;
    }
    ssize_t w = ts_json_unescape_feed(&u, c, n, o);
    if (w >= 0) {
      ck_assert_int_le(w, (ssize_t)(n + TS_JSON_UNESCAPE_SLACK));
      ck_assert_uint_le(r.len + (size_t)w, sizeof r.buf);
      memcpy(r.buf + r.len, o, (size_t)w);
      r.len += (size_t)w;
    }
    free(c);
    free(scratch);
    if (w < 0) {
      r.err = (int)w;
      /* Sticky: feed and end say the same from now on. */
      ck_assert_int_eq(ts_json_unescape_feed(&u, "a", 1, r.buf), r.err);
      ck_assert_int_eq(ts_json_unescape_end(&u), r.err);
      return r;
    }
  }
  r.err = ts_json_unescape_end(&u);
  if (r.err) ck_assert_int_eq(ts_json_unescape_end(&u), r.err);
  return r;
}

/* A result as text: the error, or the bytes (hex, so NULs compare too). */
static void render_result(const result *r, sb *out) {
  if (r->err) {
    sb_printf(out, "error %s\n", ts_err_name(r->err));
    return;
  }
  sb_puts(out, "ok ");
  for (size_t i = 0; i < r->len; i++) sb_printf(out, "%02x", (unsigned char)r->buf[i]);
  sb_putc(out, '\n');
}

/* The decoder as a split-harness runner (support/split.h). */
typedef struct {
  int in_place;
  result last; /* the last run's result */
} unescape_runner;

static void unescape_run(void *user, ts_split *feed, sb *out) {
  unescape_runner *ur = user;
  ur->last = decode_reads(feed, ur->in_place);
  render_result(&ur->last, out);
}

/* `in` in reads of `chunk` bytes (0 = whole). */
static result decode(const char *in, size_t len, size_t chunk, int in_place) {
  unescape_runner ur = {in_place, {.len = 0}};
  sb out = {0};
  ts_split_run_once(in, len, chunk, unescape_run, &ur, &out);
  sb_free(&out);
  return ur.last;
}

static void check_result(const row *t, const result *r, const char *how, size_t chunk) {
  ck_assert_msg(r->err == t->err, "line %d (%s) %s chunk %zu: err %d (%s), want %d (%s)", t->line,
                t->label, how, chunk, r->err, ts_err_name(r->err), t->err, ts_err_name(t->err));
  if (t->err) return;
  ck_assert_msg(r->len == t->want_len && memcmp(r->buf, t->want, r->len) == 0,
                "line %d (%s) %s chunk %zu: output differs (len %zu, want %zu)", t->line,
                t->label, how, chunk, r->len, t->want_len);
}

START_TEST(test_rows) {
  const row *t = &rows[_i];
  result r = decode(t->in, t->in_len, 0, 0);
  check_result(t, &r, "whole", 0);
  /* Whole, byte by byte and every size 2..31, into a separate buffer and in place: the
   * same bytes or the same error (the split harness, support/split.h). */
  sb want = {0};
  render_result(&r, &want);
  for (int in_place = 0; in_place < 2; in_place++) {
    char ctx[200];
    snprintf(ctx, sizeof ctx, "line %d (%s)%s", t->line, t->label, in_place ? " in place" : "");
    unescape_runner ur = {in_place, {.len = 0}};
    ts_split_check(ctx, t->in, t->in_len, unescape_run, &ur, sb_str(&want));
  }
  sb_free(&want);

  /* The convenience call, into a separate buffer and in place. */
  char *buf = malloc(t->in_len + TS_JSON_UNESCAPE_SLACK);
  ck_assert_ptr_nonnull(buf);
  if (t->in_len) memcpy(buf, t->in, t->in_len);
  char out[512];
  ssize_t n = ts_json_unescape_all(buf, t->in_len, out);
  r.err = n < 0 ? (int)n : 0;
  r.len = n < 0 ? 0 : (size_t)n;
  memcpy(r.buf, out, r.len);
  check_result(t, &r, "all", 0);
  n = ts_json_unescape_all(buf, t->in_len, buf);
  r.err = n < 0 ? (int)n : 0;
  r.len = n < 0 ? 0 : (size_t)n;
  memcpy(r.buf, buf, r.len);
  check_result(t, &r, "all in place", 0);
  free(buf);
}
END_TEST

START_TEST(test_pending) {
  ts_json_unescape u;
  char out[16];
  ts_json_unescape_init(&u);
  ck_assert_int_eq(ts_json_unescape_pending(&u), 0);
  ck_assert_int_eq(ts_json_unescape_feed(&u, "ab\\", 3, out), 2);
  ck_assert_int_ne(ts_json_unescape_pending(&u), 0);
  ck_assert_int_eq(ts_json_unescape_feed(&u, "n", 1, out), 1);
  ck_assert_int_eq(out[0], '\n');
  ck_assert_int_eq(ts_json_unescape_pending(&u), 0);
  /* A high surrogate writes nothing and stays pending until its low half. */
  ck_assert_int_eq(ts_json_unescape_feed(&u, "\\ud83d", 6, out), 0);
  ck_assert_int_ne(ts_json_unescape_pending(&u), 0);
  ck_assert_int_eq(ts_json_unescape_feed(&u, "\\ude0", 5, out), 0);
  ck_assert_int_ne(ts_json_unescape_pending(&u), 0);
  /* One input byte completes four output bytes: the slack. */
  ck_assert_int_eq(ts_json_unescape_feed(&u, "0", 1, out), 4);
  ck_assert_int_eq(memcmp(out, "\xF0\x9F\x98\x80", 4), 0);
  ck_assert_int_eq(ts_json_unescape_pending(&u), 0);
  ck_assert_int_eq(ts_json_unescape_feed(&u, NULL, 0, out), 0);
  ck_assert_int_eq(ts_json_unescape_end(&u), TS_E_OK);
  /* init makes the struct reusable after an error. */
  ck_assert_int_eq(ts_json_unescape_feed(&u, "\\q", 2, out), TS_E_JSON_ESCAPE);
  ts_json_unescape_init(&u);
  ck_assert_int_eq(ts_json_unescape_feed(&u, "ok", 2, out), 2);
  ck_assert_int_eq(ts_json_unescape_end(&u), TS_E_OK);
}
END_TEST

/* No allocation, and the long plain runs between escapes come out intact. */
START_TEST(test_long_runs_no_alloc) {
  enum { N = 100000 };
  char *in = malloc(N), *out = malloc(N + TS_JSON_UNESCAPE_SLACK), *want = malloc(N);
  ck_assert_ptr_nonnull(in);
  ck_assert_ptr_nonnull(out);
  ck_assert_ptr_nonnull(want);
  size_t n = 0, w = 0;
  while (n + 2 <= N) {
    if (n % 997 == 0) {
      in[n++] = '\\';
      in[n++] = 'n';
      want[w++] = '\n';
    } else {
      in[n] = want[w] = (char)('a' + n % 26);
      n++, w++;
    }
  }
  ts_json_unescape u;
  ts_json_unescape_init(&u);
  /* No ck_assert inside the counted region: check's assertions allocate. */
  uint64_t before = ts_test_alloc_count();
  size_t got = 0;
  int bad = 0;
  for (size_t off = 0; off < n; off += 4096) {
    size_t len = n - off < 4096 ? n - off : 4096;
    ssize_t k = ts_json_unescape_feed(&u, in + off, len, out + got);
    if (k < 0) bad = 1;
    else got += (size_t)k;
  }
  int end = ts_json_unescape_end(&u);
  uint64_t after = ts_test_alloc_count();
  ck_assert_int_eq(bad, 0);
  ck_assert_int_eq(end, TS_E_OK);
  ck_assert_uint_eq(after, before);
  ck_assert_uint_eq(got, w);
  ck_assert_int_eq(memcmp(out, want, w), 0);
  free(in);
  free(out);
  free(want);
}
END_TEST

/* Random bodies built from pieces whose decoded form is known, decoded at random
 * splits, separately and in place. */
static uint64_t rng_state;
static uint32_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (uint32_t)(rng_state >> 11);
}

/* The UTF-8 form of `cp` at `o`; returns its length. */
static int put_cp(char *o, uint32_t cp) {
  if (cp < 0x80) return o[0] = (char)cp, 1;
  if (cp < 0x800) return o[0] = (char)(0xC0 | cp >> 6), o[1] = (char)(0x80 | (cp & 0x3F)), 2;
  if (cp < 0x10000)
    return o[0] = (char)(0xE0 | cp >> 12), o[1] = (char)(0x80 | (cp >> 6 & 0x3F)),
           o[2] = (char)(0x80 | (cp & 0x3F)), 3;
  o[0] = (char)(0xF0 | cp >> 18), o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
  o[2] = (char)(0x80 | (cp >> 6 & 0x3F)), o[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

START_TEST(test_random) {
  rng_state = 0x9E3779B97F4A7C15ull;
  static const char *const singles[][2] = {{"\\\"", "\""}, {"\\\\", "\\"}, {"\\/", "/"},
                                           {"\\b", "\b"},  {"\\f", "\f"},   {"\\n", "\n"},
                                           {"\\r", "\r"},  {"\\t", "\t"}};
  for (int iter = 0; iter < 3000; iter++) {
    char in[400], want[400];
    size_t n = 0, w = 0;
    int pieces = (int)(rnd() % 12);
    for (int k = 0; k < pieces; k++) {
      switch (rnd() % 5) {
      case 0: { /* raw run */
        int m = (int)(rnd() % 20);
        for (int j = 0; j < m; j++) {
          char c = (char)(' ' + rnd() % 95);
          in[n++] = want[w++] = c == '\\' ? 'x' : c;
        }
        break;
      }
      case 1: { /* single escape */
        int e = (int)(rnd() % 8);
        memcpy(in + n, singles[e][0], 2);
        n += 2;
        want[w++] = singles[e][1][0];
        break;
      }
      case 2: { /* BMP \u, not a surrogate */
        uint32_t cp;
        do cp = rnd() % 0x10000; while (cp >= 0xD800 && cp <= 0xDFFF);
        n += (size_t)sprintf(in + n, rnd() % 2 ? "\\u%04x" : "\\u%04X", (unsigned)cp);
        w += (size_t)(put_cp(want + w, cp));
        break;
      }
      case 3: { /* surrogate pair */
        uint32_t cp = 0x10000 + rnd() % 0x100000;
        n += (size_t)sprintf(in + n, "\\u%04x\\u%04X", (unsigned)(0xD800 + ((cp - 0x10000) >> 10)),
                             (unsigned)(0xDC00 + ((cp - 0x10000) & 0x3FF)));
        w += (size_t)(put_cp(want + w, cp));
        break;
      }
      default: { /* raw UTF-8 */
        uint32_t cp;
        do cp = 0x80 + rnd() % 0x10FF80; while (cp >= 0xD800 && cp <= 0xDFFF);
        int m = put_cp(in + n, cp);
        memcpy(want + w, in + n, (size_t)m);
        n += (size_t)m, w += (size_t)m;
        break;
      }
      }
    }
    row t = {__LINE__, "random", in, n, want, w, 0};
    char label[64];
    snprintf(label, sizeof label, "random #%d", iter);
    t.label = label;
    size_t chunk = 1 + rnd() % 16;
    result r = decode(in, n, chunk, (int)(rnd() % 2));
    check_result(&t, &r, "random split", chunk);
    /* the convenience call, in place: its byte loop for short strings (up to 64 bytes)
     * hands over to the machine at the first \u; longer ones are the machine's */
    char buf[400];
    memcpy(buf, in, n);
    ssize_t k = ts_json_unescape_all(buf, n, buf);
    ck_assert_msg(k == (ssize_t)w && memcmp(buf, want, w) == 0, "%s: all() gave %zd", label, k);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("json_unescape");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_loop_test(tc, test_rows, 0, (int)(sizeof rows / sizeof rows[0]));
  tcase_add_test(tc, test_pending);
  tcase_add_test(tc, test_long_runs_no_alloc);
  tcase_add_test(tc, test_random);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
