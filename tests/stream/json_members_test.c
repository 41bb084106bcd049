/*
 * json_members_test.c: the one-pass top-level member walker (stream/json_members.h).
 *
 * Rows give a text and the walk wanted, rendered as `key=value` per member (raw bytes,
 * between | bars), then `end` or `error`. The walk must be string-aware and
 * bracket-aware (a key inside a value is never top-level), hand out raw text, stop
 * after an error, and never read past the text: every row also runs on an exact-size
 * heap copy (ASan), and every prefix of every row must give members the whole walk
 * gave (but the last, whose number or literal may be cut: values are not validated),
 * never a crash.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "stream/json_members.h"
#include "support/sb.h"

typedef struct {
  int line;
  const char *label;
  const char *in;
  const char *want;
} row;

static const row rows[] = {
    {__LINE__, "empty object", "{}", "end"},
    {__LINE__, "whitespace around and inside", " \t{ \n} \r\n", "end"},
    {__LINE__, "members of every kind", "{\"s\":\"x\",\"n\":-1.5e3,\"t\":true,\"z\":null,\"o\":{\"a\":1},\"a\":[1,[2]]}",
     "|s=\"x\"| |n=-1.5e3| |t=true| |z=null| |o={\"a\":1}| |a=[1,[2]]| end"},
    {__LINE__, "whitespace between tokens", "{ \"a\" : 1 , \"b\" :\"c\" }", "|a=1| |b=\"c\"| end"},
    {__LINE__, "a nested key is not top-level", "{\"o\":{\"type\":\"inner\"},\"type\":\"outer\"}",
     "|o={\"type\":\"inner\"}| |type=\"outer\"| end"},
    {__LINE__, "brackets and quotes inside strings", "{\"a\":\"}]{[\\\"\",\"b\":[\"]\",{\"c\":\"}\"}]}",
     "|a=\"}]{[\\\"\"| |b=[\"]\",{\"c\":\"}\"}]| end"},
    {__LINE__, "escapes in keys stay raw", "{\"a\\\"b\":1,\"\\u0074ype\":2}", "|a\\\"b=1| |\\u0074ype=2| end"},
    {__LINE__, "a backslash before the closing quote", "{\"k\":\"x\\\\\",\"l\":0}", "|k=\"x\\\\\"| |l=0| end"},
    {__LINE__, "not an object", "[1,2]", "error"},
    {__LINE__, "empty text", "", "error"},
    {__LINE__, "a bare string", "\"a\"", "error"},
    {__LINE__, "a key without quotes", "{a:1}", "error"},
    {__LINE__, "no colon", "{\"a\" 1}", "error"},
    {__LINE__, "no value", "{\"a\":}", "error"},
    {__LINE__, "a trailing comma", "{\"a\":1,}", "|a=1| error"},
    {__LINE__, "a missing comma", "{\"a\":1 \"b\":2}", "|a=1| error"},
    {__LINE__, "cut inside a string value", "{\"a\":\"abc", "error"},
    {__LINE__, "cut inside a nested value", "{\"a\":1,\"b\":[1,{\"c\":2}", "|a=1| error"},
    {__LINE__, "cut after a backslash", "{\"a\":\"x\\", "error"},
    {__LINE__, "cut inside a key", "{\"ab", "error"},
    {__LINE__, "cut before the closing brace", "{\"a\":1", "|a=1| error"},
};

/* The walk over exactly `len` bytes at `p`, rendered (at most `limit` members, then
 * nothing more; < 0: all and how it ended). Returns the number of members. */
static int walk(const char *p, size_t len, sb *out, int limit) {
  ts_json_members it;
  ts_json_members_init(&it, p, len);
  ts_view k, v;
  int rc, n = 0;
  sb_puts(out, "");
  while ((rc = ts_json_members_next(&it, &k, &v)) == 1) {
    if (limit >= 0 && n >= limit) return n;
    n++;
    if (k.p < p || k.p + k.len > p + len || v.p < p || v.p + v.len > p + len)
      ck_abort_msg("a view outside the text");
    sb_putc(out, '|');
    sb_add(out, k.p, k.len);
    sb_putc(out, '=');
    sb_add(out, v.p, v.len);
    sb_puts(out, "| ");
  }
  if (limit >= 0) return n;
  sb_puts(out, rc == 0 ? "end" : rc == TS_E_INVAL ? "error" : "bad return code");
  /* after the end or an error, nothing more */
  ck_assert_int_eq(ts_json_members_next(&it, &k, &v), 0);
  return n;
}

START_TEST(test_rows) {
  const row *r = &rows[_i];
  size_t len = strlen(r->in);
  char *copy = malloc(len ? len : 1); /* exact size: ASan sees a read past the end */
  ck_assert_ptr_nonnull(copy);
  memcpy(copy, r->in, len);
  sb got = {0};
  walk(copy, len, &got, -1);
  ck_assert_msg(!strcmp(sb_str(&got), r->want), "line %d (%s):\n got: %s\nwant: %s", r->line,
                r->label, sb_str(&got), r->want);
  /* every prefix: an error, or members the whole walk also gave, never a crash */
  for (size_t n = 0; n < len; n++) {
    char *pre = malloc(n ? n : 1);
    ck_assert_ptr_nonnull(pre);
    memcpy(pre, r->in, n);
    sb p = {0}, kept = {0};
    int m = walk(pre, n, &p, -1);
    walk(pre, n, &kept, m ? m - 1 : 0);
    ck_assert_msg(!strncmp(sb_str(&kept), sb_str(&got), kept.len),
                  "line %d (%s), prefix of %zu bytes: %s", r->line, r->label, n, sb_str(&p));
    sb_free(&p);
    sb_free(&kept);
    free(pre);
  }
  sb_free(&got);
  free(copy);
}
END_TEST

START_TEST(test_member) {
  static const char j[] = "{\"type\":\"tool_call_ready\",\"o\":{\"seq\":9},\"seq\":12,\"arguments\":{\"a\":[1]}}";
  ts_view v = ts_json_member(j, strlen(j), "seq");
  ck_assert_uint_eq(v.len, 2);
  ck_assert(!memcmp(v.p, "12", 2)); /* the top-level one, not the nested one */
  v = ts_json_member(j, strlen(j), "arguments");
  ck_assert_uint_eq(v.len, 9);
  ck_assert(!memcmp(v.p, "{\"a\":[1]}", 9));
  v = ts_json_member(j, strlen(j), "missing");
  ck_assert_ptr_null(v.p);
  ck_assert_uint_eq(v.len, 0);
  v = ts_json_member("{\"a\":1,,\"b\":2}", 14, "b"); /* malformed before it */
  ck_assert_ptr_null(v.p);
}
END_TEST

int main(void) {
  Suite *s = suite_create("json_members");
  TCase *tc = tcase_create("core");
  tcase_add_loop_test(tc, test_rows, 0, (int)(sizeof rows / sizeof rows[0]));
  tcase_add_test(tc, test_member);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
