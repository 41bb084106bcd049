/*
 * json_scan_test.c: the one-pass scanner (stream/json_scan.h).
 *
 * Rows give a text and the items wanted, rendered one per item as `depth:type` with the
 * key (`k=`) and raw text (`=`) between bars, then `end`, `error` or `limit`. A second
 * rendering skips every container at depth 1 (their raw text must be the whole
 * container). Every row also runs on an exact-size heap copy (ASan: never a byte past
 * the text), and every proper prefix of a valid row must be an error, never a crash and
 * never "end" (a document cut anywhere is not a document).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "stream/json_scan.h"
#include "stream/json_scan_impl.h"
#include "stream/json_unescape.h"
#include "support/sb.h"

typedef struct {
  int line;
  const char *label;
  const char *in;
  const char *want;      /* every item */
  const char *want_skip; /* containers at depth 1 skipped; NULL: same as want */
} row;

static const char *type_name(ts_json_scan_type t) {
  switch (t) {
  case TS_JSON_SCAN_STRING: return "s";
  case TS_JSON_SCAN_NUMBER: return "n";
  case TS_JSON_SCAN_TRUE: return "t";
  case TS_JSON_SCAN_FALSE: return "f";
  case TS_JSON_SCAN_NULL: return "z";
  case TS_JSON_SCAN_OBJECT: return "{";
  case TS_JSON_SCAN_ARRAY: return "[";
  case TS_JSON_SCAN_END: return "end";
  }
  return "?";
}

static const row rows[] = {
    {__LINE__, "empty object", "{}", "0:{ 0:end|{}| end", NULL},
    {__LINE__, "whitespace everywhere", " \t{ \"a\" :\n 1 ,\r\n\"b\" : [ ] } \n",
     "0:{ 1:n|k=a|=|1| 1:[|k=b| 1:end|[ ]| 0:end|{ \"a\" :\n 1 ,\r\n\"b\" : [ ] }| end",
     "0:{ 1:n|k=a|=|1| 1:skip|k=b||[ ]| 0:end|{ \"a\" :\n 1 ,\r\n\"b\" : [ ] }| end"},
    {__LINE__, "every kind of value",
     "{\"s\":\"x\",\"n\":-1.5e3,\"t\":true,\"f\":false,\"z\":null,\"o\":{\"a\":1},\"a\":[1,[2]]}",
     "0:{ 1:s|k=s|=|x| 1:n|k=n|=|-1.5e3| 1:t|k=t|=|true| 1:f|k=f|=|false| 1:z|k=z|=|null| "
     "1:{|k=o| 2:n|k=a|=|1| 1:end|{\"a\":1}| 1:[|k=a| 2:n|=|1| 2:[ 3:n|=|2| 2:end|[2]| "
     "1:end|[1,[2]]| 0:end|{\"s\":\"x\",\"n\":-1.5e3,\"t\":true,\"f\":false,\"z\":null,\"o\":{\"a\":1},"
     "\"a\":[1,[2]]}| end",
     "0:{ 1:s|k=s|=|x| 1:n|k=n|=|-1.5e3| 1:t|k=t|=|true| 1:f|k=f|=|false| 1:z|k=z|=|null| "
     "1:skip|k=o||{\"a\":1}| 1:skip|k=a||[1,[2]]| 0:end|{\"s\":\"x\",\"n\":-1.5e3,\"t\":true,\"f\":false,"
     "\"z\":null,\"o\":{\"a\":1},\"a\":[1,[2]]}| end"},
    {__LINE__, "escapes stay raw and are flagged", "{\"a\\\"b\":\"\\u00e9\\n\\/\"}",
     "0:{ 1:s|k=a\\\"b|=|\\u00e9\\n\\/|esc|kesc 0:end|{\"a\\\"b\":\"\\u00e9\\n\\/\"}| end", NULL},
    {__LINE__, "a long string (past 16 bytes) with an escape near its end",
     "[\"0123456789abcdefghijklmnopqrstuvwxyz\\\"!\"]",
     "0:[ 1:s|=|0123456789abcdefghijklmnopqrstuvwxyz\\\"!|esc 0:end|[\"0123456789abcdefghijklmnopq"
     "rstuvwxyz\\\"!\"]| end",
     NULL},
    {__LINE__, "a quote right after 16 bytes", "[\"0123456789abcdef\"]",
     "0:[ 1:s|=|0123456789abcdef| 0:end|[\"0123456789abcdef\"]| end", NULL},
    {__LINE__, "a string root", "\"x\"", "0:s|=|x| end", NULL},
    {__LINE__, "a number root", " 0 ", "0:n|=|0| end", NULL},
    {__LINE__, "numbers", "[0,-0,1.25,1e9,1E-2,-3.0e+7]",
     "0:[ 1:n|=|0| 1:n|=|-0| 1:n|=|1.25| 1:n|=|1e9| 1:n|=|1E-2| 1:n|=|-3.0e+7| 0:end|[0,-0,1.25,1e9,"
     "1E-2,-3.0e+7]| end",
     NULL},
    {__LINE__, "long integers, eight digits a step, and what ends them",
     "[1755868211,12345678,123456789012345678,12345678.5,123456789e3,1234567x]",
     "0:[ 1:n|=|1755868211| 1:n|=|12345678| 1:n|=|123456789012345678| 1:n|=|12345678.5| "
     "1:n|=|123456789e3| 1:n|=|1234567| error",
     NULL},
    {__LINE__, "a long integer at the very end", "123456789012", "0:n|=|123456789012| end", NULL},
    {__LINE__, "a digit run cut by a colon", "{\"a\":12345678:}", "0:{ 1:n|k=a|=|12345678| error", NULL},
    {__LINE__, "raw control bytes and UTF-8 pass in strings", "[\"a\tb\xc3\xa9\"]",
     "0:[ 1:s|=|a\tb\xc3\xa9| 0:end|[\"a\tb\xc3\xa9\"]| end", NULL},
    /* errors */
    {__LINE__, "empty text", "", "error", NULL},
    {__LINE__, "only whitespace", " \n", "error", NULL},
    {__LINE__, "two values", "{} {}", "0:{ 0:end|{}| error", NULL},
    {__LINE__, "a leading zero", "[01]", "0:[ 1:n|=|0| error", NULL},
    {__LINE__, "a bare minus", "[-]", "0:[ error", NULL},
    {__LINE__, "a dot without digits", "[1.]", "0:[ error", NULL},
    {__LINE__, "an exponent without digits", "[1e+]", "0:[ error", NULL},
    {__LINE__, "a plus sign", "[+1]", "0:[ error", NULL},
    {__LINE__, "a misspelt literal", "[nul]", "0:[ error", NULL},
    {__LINE__, "a literal run on", "[truex]", "0:[ 1:t|=|true| error", NULL},
    {__LINE__, "a missing comma", "[1 2]", "0:[ 1:n|=|1| error", NULL},
    {__LINE__, "a trailing comma in an array", "[1,]", "0:[ 1:n|=|1| error", NULL},
    {__LINE__, "a trailing comma in an object", "{\"a\":1,}", "0:{ 1:n|k=a|=|1| error", NULL},
    {__LINE__, "a key without quotes", "{a:1}", "0:{ error", NULL},
    {__LINE__, "a number as key", "{1:1}", "0:{ error", NULL},
    {__LINE__, "no colon", "{\"a\" 1}", "0:{ error", NULL},
    {__LINE__, "mismatched brackets", "{\"a\":[1}", "0:{ 1:[|k=a| 2:n|=|1| error", "0:{ error"},
    {__LINE__, "an unknown escape", "[\"\\x\"]", "0:[ error", NULL},
    {__LINE__, "a short \\u escape", "[\"\\u12\"]", "0:[ error", NULL},
    {__LINE__, "a non-hex \\u digit", "[\"\\u12g4\"]", "0:[ error", NULL},
    {__LINE__, "a backslash at the end", "[\"\\", "0:[ error", NULL},
    {__LINE__, "an unterminated string", "[\"abc", "0:[ error", NULL},
    {__LINE__, "a comma at the root", "1,2", "0:n|=|1| error", NULL},
    {__LINE__, "a closing bracket first", "]", "error", NULL},
};

/* One scan of exactly `len` bytes at `p`, rendered into `out`; with `skip`, containers at
 * depth 1 are skipped. */
static void scan(const char *p, size_t len, int skip, sb *out) {
  ts_json_scan s;
  ts_json_item it;
  ts_json_scan_init(&s, p, len);
  int rc;
  while ((rc = ts_json_scan_next(&s, &it)) == 1) {
    int skipped = 0;
    ts_view raw = it.raw;
    if (skip && it.depth == 1 && (it.type == TS_JSON_SCAN_OBJECT || it.type == TS_JSON_SCAN_ARRAY)) {
      rc = ts_json_scan_skip(&s, &raw);
      if (rc != 1) break;
      skipped = 1;
    }
    if (out->len) sb_puts(out, " ");
    sb_printf(out, "%u:%s", it.depth, skipped ? "skip" : type_name(it.type));
    if (it.key.p) sb_printf(out, "|k=%.*s|", (int)it.key.len, it.key.p);
    if (skipped || it.type == TS_JSON_SCAN_END)
      sb_printf(out, "|%.*s|", (int)raw.len, raw.p);
    else if (it.type != TS_JSON_SCAN_OBJECT && it.type != TS_JSON_SCAN_ARRAY)
      sb_printf(out, "%s=|%.*s|", it.key.p ? "" : "|", (int)it.raw.len, it.raw.p);
    if (it.escaped) sb_puts(out, "esc");
    if (it.key_escaped) sb_puts(out, "|kesc");
    /* skipping after a scalar is a no-op */
    if (!skipped && it.type != TS_JSON_SCAN_OBJECT && it.type != TS_JSON_SCAN_ARRAY)
      ck_assert_int_eq(ts_json_scan_skip(&s, NULL), 1);
  }
  if (out->len) sb_puts(out, " ");
  sb_puts(out, rc == 0 ? "end" : rc == TS_E_LIMIT ? "limit" : "error");
  /* after the end or an error, every call says the same */
  ck_assert_int_eq(ts_json_scan_next(&s, &it), rc == 1 ? 1 : rc);
}

START_TEST(test_rows) {
  const row *w = &rows[_i];
  for (int skip = 0; skip < 2; skip++) {
    const char *want = skip && w->want_skip ? w->want_skip : w->want;
    size_t n = strlen(w->in);
    char *copy = malloc(n ? n : 1); /* exact size: ASan catches a read past the text */
    memcpy(copy, w->in, n);
    sb out = {0};
    scan(copy, n, skip, &out);
    ck_assert_msg(strcmp(out.p, want) == 0, "line %d (%s, skip %d):\n got: %s\nwant: %s", w->line,
                  w->label, skip, out.p, want);
    free(out.p);
    /* every proper prefix of a complete document is not a document (numbers aside: a
     * prefix of "10" is "1") */
    int complete = strlen(want) >= 3 && strcmp(want + strlen(want) - 3, "end") == 0;
    int number_root = w->in[strspn(w->in, " \t\r\n")] != '{' && w->in[strspn(w->in, " \t\r\n")] != '[' &&
                      w->in[strspn(w->in, " \t\r\n")] != '"';
    for (size_t k = 0; complete && !number_root && k < n; k++) {
      size_t tail = strspn(w->in + k, " \t\r\n");
      if (k + tail == n) break; /* only whitespace left: the document is complete */
      char *pre = malloc(k ? k : 1);
      memcpy(pre, w->in, k);
      sb o = {0};
      scan(pre, k, skip, &o);
      ck_assert_msg(strcmp(o.p + o.len - 5, "error") == 0, "line %d (%s): prefix of %zu bytes: %s",
                    w->line, w->label, k, o.p);
      free(o.p);
      free(pre);
    }
    free(copy);
  }
}
END_TEST

START_TEST(test_depth_limit) {
  /* TS_JSON_SCAN_MAX_DEPTH containers nest; one more is TS_E_LIMIT, and skipping stops
   * at it too */
  for (int extra = 0; extra < 2; extra++) {
    int d = TS_JSON_SCAN_MAX_DEPTH + extra;
    sb b = {0};
    for (int i = 0; i < d; i++) sb_puts(&b, "[");
    for (int i = 0; i < d; i++) sb_puts(&b, "]");
    ts_json_scan s;
    ts_json_item it;
    ts_json_scan_init(&s, b.p, b.len);
    int rc;
    while ((rc = ts_json_scan_next(&s, &it)) == 1) {
    }
    ck_assert_int_eq(rc, extra ? TS_E_LIMIT : 0);
    ts_json_scan_init(&s, b.p, b.len);
    ck_assert_int_eq(ts_json_scan_next(&s, &it), 1);
    ts_view raw = {NULL, 0};
    ck_assert_int_eq(ts_json_scan_skip(&s, &raw), extra ? TS_E_LIMIT : 1);
    if (!extra) ck_assert_uint_eq(raw.len, b.len);
    free(b.p);
  }
}
END_TEST

START_TEST(test_nul_byte) {
  /* a NUL inside a string or between tokens is an error, wherever it falls in a 16-byte
   * block */
  for (size_t at = 2; at < 40; at++) {
    char doc[64];
    memset(doc, 'a', sizeof doc);
    doc[0] = '[';
    doc[1] = '"';
    doc[42] = '"';
    doc[43] = ']';
    doc[at] = '\0';
    ts_json_scan s;
    ts_json_item it;
    ts_json_scan_init(&s, doc, 44);
    ck_assert_int_eq(ts_json_scan_next(&s, &it), 1);
    ck_assert_int_eq(ts_json_scan_next(&s, &it), TS_E_JV_BAD_JSON);
  }
}
END_TEST

/* Strings around the 16-byte blocks the scanner reads: a string of every length up to 40
 * with an escape (each kind) at every position, at every offset in the text, the text
 * on an exact-size heap copy (ASan: the block at the text's end never reads past it). It
 * must come back whole, flagged escaped; the same with the escape made invalid, cut
 * short, or a NUL in its place must be an error. */
static const char *const escapes[] = {"\\\"", "\\\\", "\\/", "\\n", "\\u00e9", "\\uD83D"};

static int scan_one_string(const char *doc, size_t len, ts_view *raw, int *esc) {
  char *copy = malloc(len ? len : 1);
  memcpy(copy, doc, len);
  ts_json_scan s;
  ts_json_item it;
  ts_json_scan_init(&s, copy, len);
  int rc = ts_json_scan_next(&s, &it);
  if (rc == 1 && it.type == TS_JSON_SCAN_OBJECT) rc = ts_json_scan_next(&s, &it);
  if (rc == 1 && it.type == TS_JSON_SCAN_STRING) {
    *raw = (ts_view){doc + (it.raw.p - copy), it.raw.len};
    *esc = it.escaped;
    while ((rc = ts_json_scan_next(&s, &it)) == 1) {
    }
  } else if (rc == 1) {
    rc = -100;
  }
  free(copy);
  return rc;
}

START_TEST(test_string_blocks) {
  char body[64], doc[160];
  for (size_t e = 0; e < sizeof escapes / sizeof escapes[0]; e++) {
    size_t el = strlen(escapes[e]);
    for (size_t n = 0; n + el <= 40; n++) {
      for (size_t at = 0; at <= n; at = n <= 17 || at + 1 >= n || at == 0 ? at + 1 : at < n / 2 ? n / 2 : n - 1) {
        memset(body, 'x', n + el);
        memcpy(body + at, escapes[e], el);
        size_t bl = n + el;
        for (size_t pad = 0; pad < 18; pad++) {
          /* {"kkk...":"body"} : pad bytes of key move the string across block edges */
          size_t len = 0;
          doc[len++] = '{';
          doc[len++] = '"';
          memset(doc + len, 'k', pad);
          len += pad;
          memcpy(doc + len, "\":\"", 3);
          len += 3;
          size_t body_at = len;
          memcpy(doc + len, body, bl);
          len += bl;
          doc[len++] = '"';
          doc[len++] = '}';
          ts_view raw = {NULL, 0};
          int esc = 0;
          ck_assert_msg(scan_one_string(doc, len, &raw, &esc) == 0, "%.*s", (int)len, doc);
          ck_assert_ptr_eq(raw.p, doc + body_at);
          ck_assert_uint_eq(raw.len, bl);
          ck_assert_int_eq(esc, 1);
          /* cut anywhere inside the string or before the end: an error (at a few
           * offsets: the cuts move the text's end across the blocks anyway) */
          int cuts = (pad == 0 || pad == 9) && (at == 0 || at == n / 2 || at == n);
          for (size_t cut = body_at; cuts && cut < len; cut++)
            ck_assert_int_lt(scan_one_string(doc, cut, &raw, &esc), 0);
          /* the escape made invalid */
          doc[body_at + at + 1] = 'x';
          ck_assert_int_lt(scan_one_string(doc, len, &raw, &esc), 0);
          /* a NUL where the backslash was */
          doc[body_at + at + 1] = escapes[e][1];
          doc[body_at + at] = '\0';
          ck_assert_int_lt(scan_one_string(doc, len, &raw, &esc), 0);
          /* a quote where the backslash was ends the string there */
          doc[body_at + at] = '"';
          ck_assert_int_lt(scan_one_string(doc, len, &raw, &esc), 0);
        }
      }
    }
  }
}
END_TEST

typedef struct {
  const char *raw;
  int ok;
  int64_t want;
} int_row;

START_TEST(test_int) {
  static const int_row r[] = {
      {"0", 1, 0},
      {"-7", 1, -7},
      {"9223372036854775807", 1, INT64_MAX},
      {"-9223372036854775808", 1, INT64_MIN},
      {"9223372036854775808", 0, 0},
      {"-9223372036854775809", 0, 0},
      {"99999999999999999999", 0, 0},
      {"1.0", 0, 0},
      {"1e2", 0, 0},
      {"-", 0, 0},
      {"", 0, 0},
  };
  for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) {
    int64_t v = 12345;
    int rc = ts_json_scan_int((ts_view){r[i].raw, strlen(r[i].raw)}, &v);
    ck_assert_msg((rc == 0) == r[i].ok, "%s: rc %d", r[i].raw, rc);
    if (r[i].ok) ck_assert_msg(v == r[i].want, "%s: %lld", r[i].raw, (long long)v);
  }
}
END_TEST

/* scan_string_decode (json_scan_impl.h) against scan_string and ts_json_unescape_all: the
 * same verdict, the same end and escape flag, and the decoder's output, or the decoding
 * given up exactly where the decoder refuses (a surrogate out of its pair) or the output
 * would not fit. Bodies are built from pieces that hit every path: blocks with and without
 * escapes, escapes across a block's end, the last block of the text, texts shorter than a
 * block, and caps that end inside the text. Each text is in a buffer of its exact size and
 * each output in one of exactly cap bytes (ASan sees any byte read or written past). */
START_TEST(test_string_decode) {
  static const char *const pieces[] = {
      "a", "bcdefghijklmnop", "0123456789abcdefghijklmnopqrstu", "\\\"", "\\\\", "\\n", "\\/", "\\b\\f\\r\\t",
      "\\u00e9", "\\u0041", "\\u20AC", "\\u0000", "\\ud83d\\ude00", "\\uD800\\uDC00", "\\ud800", "\\udc00",
      "\\ud800\\u0041", "\\ud800x", "\\ud800\\n", "\\x", "\\u12g4", "\\u12", "\xc3\xa9", "\x01", "\"", "\\",
  };
  static const size_t caps[] = {1, 4, 8, 17, 20, 21, 24, 40, 1024};
  const size_t np = sizeof pieces / sizeof pieces[0];
  uint32_t seed = 12345;
  long decoded = 0, given_up = 0, refused = 0;
  for (int round = 0; round < 6000; round++) {
    sb b = {0};
    seed = seed * 1103515245u + 12345u;
    size_t pre = (seed >> 8) % 4, n = (seed >> 12) % 12, post = (seed >> 20) % 22;
    for (size_t k = 0; k < pre; k++) sb_putc(&b, '{');
    for (size_t k = 0; k < n; k++) {
      seed = seed * 1103515245u + 12345u;
      const char *pc = pieces[(seed >> 16) % np];
      /* the bytes that end or break a string come rarely, so most strings are whole */
      if ((pc[0] == '"' || pc[0] == '\x01' || !strcmp(pc, "\\") || !strcmp(pc, "\\x")) && (seed >> 8) % 5) continue;
      sb_puts(&b, pc);
    }
    if ((seed >> 4) % 9) sb_putc(&b, '"');
    for (size_t k = 0; k < post; k++) sb_putc(&b, k % 3 ? '}' : ',');
    size_t len = b.len;
    char *text = malloc(len ? len : 1);
    ck_assert_ptr_nonnull(text);
    memcpy(text, b.p, len);
    free(b.p);
    const char *p = text + pre, *end = text + len;
    int e1 = 0;
    const char *q1 = scan_string(p, end, text, &e1);
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
      char *out = malloc(caps[c]);
      ck_assert_ptr_nonnull(out);
      int e2 = 0;
      ssize_t w = -2;
      const char *q2 = scan_string_decode(p, end, text, &e2, out, caps[c], &w);
      ck_assert_msg(q2 == q1, "round %d cap %zu: end %td, scan_string's %td", round, caps[c],
                    q2 ? q2 - text : -1, q1 ? q1 - text : -1);
      if (q1) {
        ck_assert_int_eq(e2, e1);
        size_t raw = (size_t)(q1 - p);
        char *ref = malloc(raw + TS_JSON_UNESCAPE_SLACK + 1);
        ck_assert_ptr_nonnull(ref);
        ssize_t rn = ts_json_unescape_all(p, raw, ref);
        if (w >= 0) {
          ck_assert_msg(rn == w && memcmp(out, ref, (size_t)w) == 0, "round %d cap %zu: decoded %zd bytes, "
                        "the decoder %zd", round, caps[c], w, rn);
          decoded++;
        } else {
          ck_assert_int_eq(w, -1);
          /* given up: the decoder refuses it, or its output does not fit in the cap */
          ck_assert_msg(rn < 0 || (size_t)rn + 20 > caps[c], "round %d cap %zu: given up on %zd bytes", round,
                        caps[c], rn);
          if (rn < 0) refused++;
          given_up++;
        }
        if (caps[c] == 1024) ck_assert_msg(w >= 0 || rn < 0, "round %d: given up with room", round);
        free(ref);
      }
      free(out);
    }
    free(text);
  }
  ck_assert_int_gt(decoded, 5000);
  ck_assert_int_gt(refused, 100);
  ck_assert_int_gt(given_up, refused);
}
END_TEST

int main(void) {
  Suite *s = suite_create("json_scan");
  TCase *tc = tcase_create("scan");
  tcase_set_timeout(tc, 60); /* test_string_blocks: some 100,000 scans, slower under ASan */
  tcase_add_loop_test(tc, test_rows, 0, (int)(sizeof rows / sizeof rows[0]));
  tcase_add_test(tc, test_depth_limit);
  tcase_add_test(tc, test_nul_byte);
  tcase_add_test(tc, test_string_blocks);
  tcase_add_test(tc, test_int);
  tcase_add_test(tc, test_string_decode);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
