/*
 * json_watch_test.c: the top-level key watcher over the tokenizer, on documents fed whole,
 * byte by byte and at every chunk size 1..31. For each row we record where the watched
 * value started and completed (the absolute offset of the completing byte) and the
 * concatenated text of the tokens that belong to it.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/json_tok.h"
#include "stream/json_watch.h"
#include "support/sb.h"
#include "support/split.h"
#include "support/test_support.h"

typedef struct {
  ts_json_watch w;
  char text[512];
  size_t len;
  long start;    /* offset of the value's first token, -1 if none */
  long complete; /* offset of the byte that completed it, -1 if none */
} watch_run;

static long completing_byte(const ts_json_token *tk) {
  switch (tk->kind) {
    case TS_JSON_TRUE:
    case TS_JSON_FALSE:
    case TS_JSON_NULL:
      return (long)(tk->offset + tk->len) - 1; /* the last letter */
    case TS_JSON_OBJECT_END:
    case TS_JSON_ARRAY_END:
      return (long)tk->offset;
    default:
      return (long)(tk->offset + tk->len); /* closing quote, or the delimiter after a number */
  }
}

static int on_tok(void *user, const ts_json_token *tk) {
  watch_run *r = user;
  int v = ts_json_watch_token(&r->w, tk);
  if (v == TS_JSON_WATCH_OUTSIDE) return 0;
  if (r->start < 0) r->start = (long)tk->offset;
  if (r->len + tk->len < sizeof r->text) {
    memcpy(r->text + r->len, tk->text, tk->len);
    r->len += tk->len;
  }
  if (v == TS_JSON_WATCH_COMPLETE) r->complete = completing_byte(tk);
  return 0;
}

/* Feeds doc in chunks of `step` (0: whole); returns the allocations made meanwhile. */
static uint64_t run(const char *key, const char *doc, size_t step, watch_run *r) {
  memset(r, 0, sizeof *r);
  r->start = r->complete = -1;
  ts_json_watch_init(&r->w, key, strlen(key));
  ts_json_tok t;
  int rc = ts_json_tok_init(&t, 0, on_tok, r);
  size_t n = strlen(doc);
  if (!step) step = n ? n : 1;
  uint64_t before = ts_test_alloc_count();
  for (size_t i = 0; i < n && rc == TS_E_OK; i += step) {
    size_t k = n - i < step ? n - i : step;
    rc = ts_json_tok_feed(&t, doc + i, k);
  }
  if (rc == TS_E_OK) rc = ts_json_tok_finish(&t);
  uint64_t allocs = ts_test_alloc_count() - before;
  ck_assert_msg(rc == TS_E_OK, "tokenizer error %s", ts_err_name(rc));
  return allocs;
}

static const struct {
  int line;
  const char *label, *key, *doc;
  long complete;    /* -1: the watched value never completes */
  const char *text; /* concatenated token text of the value */
} rows[] = {
    {__LINE__, "string at top level", "description", "{\"description\":\"writing a\",\"x\":1}", 25, "writing a"},
    {__LINE__, "number completes at delimiter", "n", "{\"n\": 42 ,\"x\":1}", 8, "42"},
    {__LINE__, "number at the close", "n", "{\"n\":-1.5e3}", 11, "-1.5e3"},
    {__LINE__, "literal at last letter", "b", "{\"b\":true,\"x\":1}", 8, "true"},
    {__LINE__, "null literal", "b", "{\"a\":1,\"b\":null}", 14, "null"},
    {__LINE__, "object at its close", "o", "{\"o\":{\"a\":[1]},\"z\":0}", 13, "{a[1]}"},
    {__LINE__, "array at its close", "a", "{\"a\":[1,{\"b\":2}]}", 15, "[1{b2}]"},
    {__LINE__, "nested same name ignored", "d", "{\"x\":{\"d\":\"no\"},\"d\":\"yes\"}", 24, "yes"},
    {__LINE__, "escaped key matches", "description", "{\"descr\\u0069ption\":\"v\"}", 22, "v"},
    {__LINE__, "escaped slash in key", "a/b", "{\"a\\/b\":1}", 9, "1"},
    {__LINE__, "prefix key does not match", "desc", "{\"description\":\"v\"}", -1, ""},
    {__LINE__, "longer key does not match", "description", "{\"desc\":\"v\"}", -1, ""},
    {__LINE__, "duplicate: first wins", "d", "{\"d\":\"one\",\"d\":\"two\"}", 9, "one"},
    {__LINE__, "absent", "d", "{\"a\":\"d\"}", -1, ""},
    {__LINE__, "top-level array never matches", "d", "[{\"d\":1}]", -1, ""},
    {__LINE__, "value with escapes kept raw", "d", "{\"d\":\"a\\\"b\\u00e9\"}", 16, "a\\\"b\\u00e9"},
    {__LINE__, "utf-8 key", "caf\xc3\xa9", "{\"caf\\u00e9\":\"x\"}", 15, "x"},
    {__LINE__, "empty key", "", "{\"\":\"x\",\"d\":1}", 6, "x"},
};

/* The watcher under the tokenizer as a split-harness runner (support/split.h): renders
 * where the watched value completed, its text, and whether the watch is done. */
static void watch_feed(void *user, ts_split *feed, sb *out) {
  const char *key = user;
  watch_run r;
  memset(&r, 0, sizeof r);
  r.start = r.complete = -1;
  ts_json_watch_init(&r.w, key, strlen(key));
  ts_json_tok t;
  int rc = ts_json_tok_init(&t, 0, on_tok, &r);
  char *p;
  size_t n;
  while (rc == TS_E_OK && ts_split_next(feed, &p, &n)) rc = ts_json_tok_feed(&t, p, n);
  if (rc == TS_E_OK) rc = ts_json_tok_finish(&t);
  ck_assert_msg(rc == TS_E_OK, "tokenizer error %s", ts_err_name(rc));
  sb_printf(out, "complete %ld text '%.*s' done %d\n", r.complete,
            r.complete >= 0 ? (int)r.len : 0, r.text, !!ts_json_watch_done(&r.w));
}

START_TEST(test_rows) {
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    char ctx[160], want[600];
    snprintf(ctx, sizeof ctx, "line %d (%s)", rows[i].line, rows[i].label);
    snprintf(want, sizeof want, "complete %ld text '%s' done %d\n", rows[i].complete,
             rows[i].complete >= 0 ? rows[i].text : "", rows[i].complete >= 0);
    ts_split_check(ctx, rows[i].doc, strlen(rows[i].doc), watch_feed, (void *)rows[i].key, want);
  }
}
END_TEST

/* A long key split anywhere still compares right, and costs no allocation. */
START_TEST(test_long_key_no_alloc) {
  char doc[9000];
  char key[4100];
  memset(key, 'k', 4096);
  key[4096] = '\0';
  snprintf(doc, sizeof doc, "{\"%sx\":1,\"%s\":\"hit\"}", key, key);
  for (size_t step = 1; step <= 31; step += 5) {
    watch_run r;
    ck_assert_uint_eq(run(key, doc, step, &r), 0);
    ck_assert_int_eq(r.len, 3);
    ck_assert(!memcmp(r.text, "hit", 3));
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("json_watch");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_rows);
  tcase_add_test(tc, test_long_key_no_alloc);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
