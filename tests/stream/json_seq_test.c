/*
 * json_seq_test.c: tests for stream/json_seq.c, the JSON value framer.
 *
 * Each row is fed whole, byte by byte and in reads of every size 2..31; the items (values
 * with their end offsets, errors with theirs) and the end-of-input verdict must be the
 * same every time. Brackets and quotes inside strings, escapes split across reads, the
 * array's punctuation, the size limit and the sticky errors are the cases that matter.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/json_seq.h"
#include "support/grow.h"
#include "support/test_support.h"

typedef struct {
  char trace[4096];
  size_t n;
  int stop_at, items;
} rec;

static int on_item(void *user, const ts_json_seq_item *it) {
  rec *r = user;
  int w;
  if (it->kind == TS_JSON_SEQ_VALUE)
    w = snprintf(r->trace + r->n, sizeof r->trace - r->n, "V%llu:%.*s|",
                 (unsigned long long)it->end_offset, (int)it->len, it->data);
  else
    w = snprintf(r->trace + r->n, sizeof r->trace - r->n, "E%s@%llu|", ts_err_name(it->code),
                 (unsigned long long)it->err_offset);
  if (w > 0 && (size_t)w < sizeof r->trace - r->n) r->n += (size_t)w;
  return ++r->items == r->stop_at;
}

/* The runs with grow_mode set start with no buffer and grow it on demand
 * (support/grow.h: each growth exactly what is asked, refused past G.max). */
static int grow_mode;
static ts_test_grow G;

/* Feeds `in` in reads of `step` bytes (0: whole); the trace ends with "cut" or "end". */
static void run(const char *in, int array, size_t cap, size_t step, rec *r) {
  memset(r, 0, sizeof *r);
  char buf[256];
  ts_json_seq s;
  ck_assert_int_eq(ts_json_seq_init(&s, array, buf, cap, on_item, r), TS_E_OK);
  if (grow_mode) ck_assert_int_eq(ts_json_seq_set_grow(&s, 0, ts_test_exact_grow, &G), TS_E_OK);
  G.grown = NULL;
  G.bad = 0;
  size_t len = strlen(in);
  if (!step) step = len ? len : 1;
  for (size_t off = 0; off < len; off += step) {
    size_t k = len - off < step ? len - off : step;
    char *piece = malloc(k); /* its own block: ASan catches a read past it */
    memcpy(piece, in + off, k);
    ck_assert_int_eq(ts_json_seq_feed(&s, piece, k), TS_E_OK);
    free(piece);
  }
  snprintf(r->trace + r->n, sizeof r->trace - r->n, "%s", ts_json_seq_cut(&s) ? "cut" : "end");
  ck_assert_int_eq(G.bad, 0);
  free(G.grown);
  G.grown = NULL;
}

static const struct {
  int line;
  const char *label;
  int array;
  size_t cap;
  const char *in, *want;
} rows[] = {
    {__LINE__, "NDJSON", 0, 256, "{\"a\":1}\n{\"b\":[2]}\n", "V7:{\"a\":1}|V17:{\"b\":[2]}|end"},
    {__LINE__, "one pretty body", 0, 256, "\r\n{\n  \"error\": {\n    \"code\": 1\n  }\n}",
     "V36:{\n  \"error\": {\n    \"code\": 1\n  }\n}|end"},
    {__LINE__, "brackets and quotes inside strings", 0, 256, "{\"s\":\"}]\\\"{[\\\\\"}",
     "V16:{\"s\":\"}]\\\"{[\\\\\"}|end"},
    {__LINE__, "a top-level array is a value", 0, 256, "[1,{\"a\":[]}] {}", "V12:[1,{\"a\":[]}]|V15:{}|end"},
    {__LINE__, "cut inside a value", 0, 256, "{\"a\":1}{\"b\":", "V7:{\"a\":1}|cut"},
    {__LINE__, "cut inside a string", 0, 256, "{\"a\":\"x}", "cut"},
    {__LINE__, "nothing at all", 0, 256, " \n ", "end"},
    {__LINE__, "a bare number is not framed", 0, 256, "{} 12 {}", "V2:{}|Ejseq_syntax@3|end"},
    {__LINE__, "a comma between values", 0, 256, "{},{}", "V2:{}|Ejseq_syntax@2|end"},
    {__LINE__, "Gemini's array", 1, 256, "[{\"a\":1}\r\n,{\"b\":\"]\"}\r\n]",
     "V8:{\"a\":1}|V20:{\"b\":\"]\"}|end"},
    {__LINE__, "an empty array", 1, 256, " [ ] \n", "end"},
    {__LINE__, "array not closed", 1, 256, "[{\"a\":1},", "V8:{\"a\":1}|cut"},
    {__LINE__, "array never opened", 1, 256, "", "cut"},
    {__LINE__, "array: data after the close", 1, 256, "[{}] {}", "V3:{}|Ejseq_trailing@5|end"},
    {__LINE__, "array: a missing comma", 1, 256, "[{} {}]", "V3:{}|Ejseq_syntax@4|end"},
    {__LINE__, "array: a trailing comma", 1, 256, "[{},]", "V3:{}|Ejseq_syntax@4|end"},
    {__LINE__, "array: not an array", 1, 256, "{\"a\":1}", "Ejseq_syntax@0|end"},
    {__LINE__, "array: a bare element", 1, 256, "[1]", "Ejseq_syntax@1|end"},
    {__LINE__, "a value over the limit is skipped, the next one framed", 0, 8,
     "{\"aaaaaaaa\":1}{\"b\":2}", "Ejseq_too_large@8|V21:{\"b\":2}|end"},
    {__LINE__, "exactly the limit", 0, 9, "{\"ab\":12}", "V9:{\"ab\":12}|end"},
    {__LINE__, "one byte over the limit", 0, 8, "{\"ab\":12}", "Ejseq_too_large@8|end"},
};

START_TEST(test_rows) {
  /* with the caller's buffer (_i 0), and with none at the start, grown on demand (_i 1):
   * the same items at every read size */
  grow_mode = _i;
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    rec whole, part;
    size_t cap = rows[i].cap;
    run(rows[i].in, rows[i].array, cap, 0, &whole);
    ck_assert_msg(!strcmp(whole.trace, rows[i].want), "line %d (%s):\n got %s\nwant %s",
                  rows[i].line, rows[i].label, whole.trace, rows[i].want);
    for (size_t step = 1; step <= 31; step++) {
      run(rows[i].in, rows[i].array, cap, step, &part);
      ck_assert_msg(!strcmp(part.trace, whole.trace), "line %d (%s), reads of %zu:\n got %s\nwant %s",
                    rows[i].line, rows[i].label, step, part.trace, whole.trace);
    }
  }
}
END_TEST

/* A refused growth is that value's TS_E_NOMEM at the byte that did not fit: the value is
 * skipped, the values before and after it framed as usual, at every read size (the
 * framer copies every byte, so where growth is asked does not depend on the reads). */
START_TEST(test_grow_refused) {
  grow_mode = 1;
  G.max = 4;
  static const char in[] = "{\"a\":1}{\"bbbb\":2}{}";
  const char *want = "Enomem@4|Enomem@11|V19:{}|end"; /* 7 bytes, 10 bytes: over 4 */
  rec r;
  for (size_t step = 0; step <= 31; step++) {
    run(in, 0, 256, step, &r);
    ck_assert_msg(!strcmp(r.trace, want), "reads of %zu:\n got %s\nwant %s", step, r.trace, want);
  }
  G.max = 0;
  run(in, 0, 256, 1, &r);
  ck_assert_str_eq(r.trace, "V7:{\"a\":1}|V17:{\"bbbb\":2}|V19:{}|end");
  /* set_grow's rules */
  ts_json_seq s;
  char buf[8];
  ck_assert_int_eq(ts_json_seq_init(&s, 0, buf, 8, on_item, &r), TS_E_OK);
  ck_assert_int_eq(ts_json_seq_set_grow(&s, 0, NULL, NULL), TS_E_INVAL);
  ck_assert_int_eq(ts_json_seq_set_grow(&s, 9, ts_test_exact_grow, &G), TS_E_INVAL);
  ck_assert_int_eq(ts_json_seq_feed(&s, "{", 1), TS_E_OK);
  ck_assert_int_eq(ts_json_seq_set_grow(&s, 0, ts_test_exact_grow, &G), TS_E_INVAL);
  grow_mode = 0;
}
END_TEST

START_TEST(test_api) {
  char buf[8];
  ts_json_seq s;
  rec r;
  memset(&r, 0, sizeof r);
  ck_assert_int_eq(ts_json_seq_init(NULL, 0, buf, 8, on_item, &r), TS_E_INVAL);
  ck_assert_int_eq(ts_json_seq_init(&s, 0, NULL, 8, on_item, &r), TS_E_INVAL);
  ck_assert_int_eq(ts_json_seq_init(&s, 0, buf, 1, on_item, &r), TS_E_INVAL);
  ck_assert_int_eq(ts_json_seq_init(&s, 0, buf, 8, NULL, &r), TS_E_INVAL);
  ck_assert_int_eq(ts_json_seq_init(&s, 0, buf, 8, on_item, &r), TS_E_OK);
  ck_assert_int_eq(ts_json_seq_feed(&s, NULL, 1), TS_E_INVAL);
  ck_assert_int_eq(ts_json_seq_feed(&s, NULL, 0), TS_E_OK);
  /* the callback stops the framer: sticky */
  r.stop_at = 1;
  ck_assert_int_eq(ts_json_seq_feed(&s, "{}{}", 4), TS_E_ABORTED);
  ck_assert_int_eq(ts_json_seq_feed(&s, "{}", 2), TS_E_ABORTED);
  ck_assert_int_eq(r.items, 1);
  /* no allocation while framing */
  ck_assert_int_eq(ts_json_seq_init(&s, 1, buf, 8, on_item, &r), TS_E_OK);
  r.stop_at = 0;
  uint64_t before = ts_test_alloc_count();
  int rc = ts_json_seq_feed(&s, "[{}, {\"a\":1}]", 13);
  uint64_t after = ts_test_alloc_count();
  ck_assert_int_eq(rc, TS_E_OK);
  ck_assert_uint_eq(after, before);
}
END_TEST

int main(void) {
  Suite *s = suite_create("json_seq");
  TCase *tc = tcase_create("core");
  tcase_add_loop_test(tc, test_rows, 0, 2);
  tcase_add_test(tc, test_grow_refused);
  tcase_add_test(tc, test_api);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
