/*
 * json_view_test.c: tests for stream/json_view.c (jsmn behind a walking API).
 *
 * What matters: exactly the JSON documents are accepted (jsmn's strict mode alone lets
 * a few non-JSON shapes through), lookups and skips land on the right tokens, strings
 * decode in place once, and the token limit is an error of its own.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "stream/json_view.h"
#include "support/test_support.h"

static ts_jv jv;

static void setup(void) { ck_assert_int_eq(ts_jv_init(&jv, 64), TS_E_OK); }
static void teardown(void) { ts_jv_fini(&jv); }

static int parse(const char *s, char *buf, size_t cap) {
  size_t n = strlen(s);
  ck_assert_uint_lt(n, cap);
  memcpy(buf, s, n + 1);
  return ts_jv_parse(&jv, buf, n);
}

static const struct {
  int line;
  const char *label;
  const char *in;
  int want;
} parse_rows[] = {
    {__LINE__, "empty object", "{}", TS_E_OK},
    {__LINE__, "object", "{\"a\":1,\"b\":[true,false,null],\"c\":{\"d\":\"e\"}}", TS_E_OK},
    {__LINE__, "array", "[1,-2.5e+3,\"x\",[]]", TS_E_OK},
    {__LINE__, "whitespace around", " \r\n\t{\"a\" : 1 }\n\n", TS_E_OK},
    {__LINE__, "top-level string", "\"abc\"", TS_E_OK},
    {__LINE__, "escapes", "{\"a\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\"}", TS_E_OK},
    {__LINE__, "empty", "", TS_E_JV_BAD_JSON},
    {__LINE__, "blank", "  \n", TS_E_JV_BAD_JSON},
    {__LINE__, "bare number", "123", TS_E_JV_BAD_JSON},
    {__LINE__, "bare literal", "true", TS_E_JV_BAD_JSON},
    {__LINE__, "unclosed", "{\"a\":1", TS_E_JV_BAD_JSON},
    {__LINE__, "unclosed string", "{\"a\":\"b}", TS_E_JV_BAD_JSON},
    {__LINE__, "two values", "{} {}", TS_E_JV_BAD_JSON},
    {__LINE__, "trailing junk", "{\"a\":1}x", TS_E_JV_BAD_JSON},
    {__LINE__, "mismatched", "{\"a\":[1}", TS_E_JV_BAD_JSON},
    {__LINE__, "key without value", "{\"a\"}", TS_E_JV_BAD_JSON},
    {__LINE__, "key colon nothing", "{\"a\":}", TS_E_JV_BAD_JSON},
    {__LINE__, "two strings no colon", "{\"a\" \"b\"}", TS_E_JV_BAD_JSON},
    {__LINE__, "chained colons", "{\"a\":\"b\":\"c\"}", TS_E_JV_BAD_JSON},
    {__LINE__, "colon in array", "[1:2]", TS_E_JV_BAD_JSON},
    {__LINE__, "number key", "{1:2}", TS_E_JV_BAD_JSON},
    {__LINE__, "bad literal", "{\"a\":nul}", TS_E_JV_BAD_JSON},
    {__LINE__, "hex number", "{\"a\":0x1}", TS_E_JV_BAD_JSON},
    {__LINE__, "leading zero", "{\"a\":01}", TS_E_JV_BAD_JSON},
    {__LINE__, "plus number", "[+1]", TS_E_JV_BAD_JSON},
    {__LINE__, "bare dot", "[1.]", TS_E_JV_BAD_JSON},
    {__LINE__, "bad exponent", "[1e]", TS_E_JV_BAD_JSON},
    {__LINE__, "bad escape", "{\"a\":\"\\x\"}", TS_E_JV_BAD_JSON},
    {__LINE__, "bad hex", "{\"a\":\"\\u00g0\"}", TS_E_JV_BAD_JSON},
    {__LINE__, "single quotes", "{'a':1}", TS_E_JV_BAD_JSON},
    {__LINE__, "NUL inside", "{\"a\":1}\0", TS_E_OK}, /* strlen stops at the NUL */
};

START_TEST(test_parse_table) {
  for (size_t i = 0; i < sizeof parse_rows / sizeof parse_rows[0]; i++) {
    char buf[256];
    int rc = parse(parse_rows[i].in, buf, sizeof buf);
    ck_assert_msg(rc == parse_rows[i].want, "line %d (%s): got %s want %s", parse_rows[i].line,
                  parse_rows[i].label, ts_err_name(rc), ts_err_name(parse_rows[i].want));
    if (rc != TS_E_OK) ck_assert_int_eq(jv.ntok, 0);
  }
}
END_TEST

START_TEST(test_nul_byte_inside) {
  char buf[] = "{\"a\":1}\0{}";
  ck_assert_int_eq(ts_jv_parse(&jv, buf, sizeof buf - 1), TS_E_JV_BAD_JSON);
  char buf2[] = "{\"a\":\"x\0y\"}";
  ck_assert_int_eq(ts_jv_parse(&jv, buf2, sizeof buf2 - 1), TS_E_JV_BAD_JSON);
}
END_TEST

START_TEST(test_walk) {
  char buf[256];
  ck_assert_int_eq(parse("{\"a\":{\"x\":[1,2,{\"y\":3}]},\"b\":\"B\",\"n\":null,\"t\":true,"
                         "\"i\":-42,\"f\":1.5,\"a\":7}",
                         buf, sizeof buf),
                   TS_E_OK);
  int a = ts_jv_get(&jv, 0, "a");
  ck_assert_int_eq(ts_jv_type_of(&jv, a), TS_JV_OBJECT);
  int x = ts_jv_get(&jv, a, "x");
  ck_assert_int_eq(ts_jv_type_of(&jv, x), TS_JV_ARRAY);
  ck_assert_int_eq(ts_jv_size(&jv, x), 3);
  int e = ts_jv_first(&jv, x);
  int64_t v;
  ck_assert_int_eq(ts_jv_int(&jv, e, &v), 0);
  ck_assert_int_eq(v, 1);
  e = ts_jv_skip(&jv, e);
  e = ts_jv_skip(&jv, e);
  ck_assert_int_eq(ts_jv_type_of(&jv, e), TS_JV_OBJECT);
  ck_assert_int_eq(ts_jv_int(&jv, ts_jv_get(&jv, e, "y"), &v), 0);
  ck_assert_int_eq(v, 3);
  ck_assert(ts_jv_eq(&jv, ts_jv_get(&jv, 0, "b"), "B"));
  ck_assert(!ts_jv_eq(&jv, ts_jv_get(&jv, 0, "b"), "b"));
  ck_assert(ts_jv_prefix(&jv, ts_jv_get(&jv, 0, "b"), ""));
  ck_assert(ts_jv_is_null(&jv, ts_jv_get(&jv, 0, "n")));
  ck_assert(ts_jv_is_true(&jv, ts_jv_get(&jv, 0, "t")));
  ck_assert(!ts_jv_is_true(&jv, ts_jv_get(&jv, 0, "n")));
  ck_assert_int_eq(ts_jv_int(&jv, ts_jv_get(&jv, 0, "i"), &v), 0);
  ck_assert_int_eq(v, -42);
  ck_assert_int_eq(ts_jv_int(&jv, ts_jv_get(&jv, 0, "f"), &v), -1);
  ck_assert_int_eq(ts_jv_int(&jv, ts_jv_get(&jv, 0, "b"), &v), -1);
  /* the first of duplicate keys wins; absent keys and -1 chain to -1 */
  ck_assert_int_eq(ts_jv_get(&jv, 0, "a"), a);
  ck_assert_int_eq(ts_jv_get(&jv, 0, "zz"), -1);
  ck_assert_int_eq(ts_jv_get(&jv, -1, "a"), -1);
  ck_assert_int_eq(ts_jv_get(&jv, x, "a"), -1); /* not an object */
  ck_assert_int_eq(ts_jv_type_of(&jv, -1), TS_JV_NONE);
  ck_assert_int_eq(ts_jv_first(&jv, a), -1); /* not an array */
  ck_assert_int_eq(ts_jv_skip(&jv, 0), jv.ntok);
  ts_view r = ts_jv_raw(&jv, a);
  ck_assert_int_eq((int)r.len, (int)strlen("{\"x\":[1,2,{\"y\":3}]}"));
  ck_assert(memcmp(r.p, "{\"x\":[1,2,{\"y\":3}]}", r.len) == 0);
  r = ts_jv_raw(&jv, ts_jv_get(&jv, 0, "b"));
  ck_assert(r.len == 3 && memcmp(r.p, "\"B\"", 3) == 0);
  r = ts_jv_raw(&jv, -1);
  ck_assert(r.p == NULL && r.len == 0);
}
END_TEST

START_TEST(test_int_edges) {
  char buf[128];
  int64_t v;
  ck_assert_int_eq(parse("[9223372036854775807,-9223372036854775808,9223372036854775808,0,-0]", buf,
                         sizeof buf),
                   TS_E_OK);
  int e = ts_jv_first(&jv, 0);
  ck_assert_int_eq(ts_jv_int(&jv, e, &v), 0);
  ck_assert(v == INT64_MAX);
  e = ts_jv_skip(&jv, e);
  ck_assert_int_eq(ts_jv_int(&jv, e, &v), 0);
  ck_assert(v == INT64_MIN);
  e = ts_jv_skip(&jv, e);
  ck_assert_int_eq(ts_jv_int(&jv, e, &v), -1);
  e = ts_jv_skip(&jv, e);
  ck_assert_int_eq(ts_jv_int(&jv, e, &v), 0);
  ck_assert(v == 0);
}
END_TEST

START_TEST(test_str_in_place) {
  char buf[128];
  ck_assert_int_eq(parse("{\"s\":\"Caf\\u00e9 \\\"x\\\" \\ud83d\\ude00\",\"t\":\"plain\",\"k\":1}", buf,
                         sizeof buf),
                   TS_E_OK);
  int s = ts_jv_get(&jv, 0, "s");
  ts_view v, v2;
  ck_assert_int_eq(ts_jv_str(&jv, s, &v), TS_E_OK);
  ck_assert_int_eq((int)v.len, (int)strlen("Caf\xc3\xa9 \"x\" \xf0\x9f\x98\x80"));
  ck_assert(memcmp(v.p, "Caf\xc3\xa9 \"x\" \xf0\x9f\x98\x80", v.len) == 0);
  ck_assert(v.p > buf && v.p < buf + sizeof buf); /* in place */
  /* asking again returns the same text, not a second decoding */
  ck_assert_int_eq(ts_jv_str(&jv, s, &v2), TS_E_OK);
  ck_assert(v2.p == v.p && v2.len == v.len);
  /* navigation still works after decoding */
  ck_assert(ts_jv_eq(&jv, ts_jv_get(&jv, 0, "t"), "plain"));
  int64_t k;
  ck_assert_int_eq(ts_jv_int(&jv, ts_jv_get(&jv, 0, "k"), &k), 0);
  ck_assert_int_eq(ts_jv_str(&jv, ts_jv_get(&jv, 0, "t"), &v), TS_E_OK);
  ck_assert(v.len == 5 && memcmp(v.p, "plain", 5) == 0);
  /* a decoded string no longer compares raw (its bytes changed) */
  ck_assert(!ts_jv_eq(&jv, s, "Caf\\u00e9"));
  ck_assert_int_eq(ts_jv_str(&jv, ts_jv_get(&jv, 0, "k"), &v), TS_E_JV_NOT_STRING);
  ck_assert_int_eq(ts_jv_str(&jv, -1, &v), TS_E_JV_NOT_STRING);
}
END_TEST

START_TEST(test_str_bad_surrogate) {
  char buf[64];
  ck_assert_int_eq(parse("{\"s\":\"a\\ud800b\",\"t\":\"\\udc00\"}", buf, sizeof buf), TS_E_OK);
  ts_view v;
  ck_assert_int_eq(ts_jv_str(&jv, ts_jv_get(&jv, 0, "s"), &v), TS_E_JSON_SURROGATE);
  /* the broken string is gone for good; its neighbours are not */
  ck_assert_int_eq(ts_jv_type_of(&jv, ts_jv_get(&jv, 0, "s")), TS_JV_NONE);
  ck_assert_int_eq(ts_jv_str(&jv, ts_jv_get(&jv, 0, "s"), &v), TS_E_JV_NOT_STRING);
  ck_assert_int_eq(ts_jv_str(&jv, ts_jv_get(&jv, 0, "t"), &v), TS_E_JSON_SURROGATE);
}
END_TEST

START_TEST(test_token_limit) {
  /* 64 tokens: an array of 63 elements fits, 64 do not */
  char buf[512];
  size_t n = 0;
  buf[n++] = '[';
  for (int i = 0; i < 63; i++) {
    if (i) buf[n++] = ',';
    buf[n++] = '0';
  }
  buf[n++] = ']';
  ck_assert_int_eq(ts_jv_parse(&jv, buf, n), TS_E_OK);
  ck_assert_int_eq(jv.ntok, 64);
  buf[n - 1] = ',';
  buf[n++] = '0';
  buf[n++] = ']';
  ck_assert_int_eq(ts_jv_parse(&jv, buf, n), TS_E_JV_TOO_MANY_TOKENS);
  ck_assert_int_eq(jv.ntok, 0);
}
END_TEST

START_TEST(test_init_errors) {
  ts_jv v;
  ck_assert_int_eq(ts_jv_init(&v, 0), TS_E_INVAL);
  ts_jv_fini(&v);
  ts_test_alloc_fail_after(1);
  int rc = ts_jv_init(&v, 8);
  ts_test_alloc_fail_after(-1); /* before any ck_assert: check itself allocates */
  ck_assert_int_eq(rc, TS_E_NOMEM);
  ts_jv_fini(&v);
  ts_jv_fini(NULL);
}
END_TEST

START_TEST(test_no_alloc_in_parse) {
  static const char doc[] = "{\"a\":[1,2,3],\"b\":\"\\u00e9\"}";
  char buf[sizeof doc];
  int bad = 0;
  /* no ck_assert inside the window: check allocates when it records a passing assert */
  uint64_t before = ts_test_alloc_count();
  for (int i = 0; i < 100; i++) {
    memcpy(buf, doc, sizeof doc);
    bad += ts_jv_parse(&jv, buf, sizeof doc - 1) != TS_E_OK;
    ts_view v;
    bad += ts_jv_str(&jv, ts_jv_get(&jv, 0, "b"), &v) != TS_E_OK;
  }
  uint64_t after = ts_test_alloc_count();
  ck_assert_int_eq(bad, 0);
  ck_assert_uint_eq(after, before);
}
END_TEST

START_TEST(test_deep_nesting) {
  /* nesting as deep as the token array allows: skip walks it without recursion */
  ts_jv big;
  ck_assert_int_eq(ts_jv_init(&big, 5000), TS_E_OK);
  static char buf[10000];
  size_t n = 0;
  for (int i = 0; i < 4000; i++) buf[n++] = '[';
  for (int i = 0; i < 4000; i++) buf[n++] = ']';
  ck_assert_int_eq(ts_jv_parse(&big, buf, n), TS_E_OK);
  ck_assert_int_eq(ts_jv_skip(&big, 0), 4000);
  ck_assert_int_eq(ts_jv_skip(&big, 1), 4000);
  ts_jv_fini(&big);
}
END_TEST

int main(void) {
  Suite *s = suite_create("json_view");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_parse_table);
  tcase_add_test(tc, test_nul_byte_inside);
  tcase_add_test(tc, test_walk);
  tcase_add_test(tc, test_int_edges);
  tcase_add_test(tc, test_str_in_place);
  tcase_add_test(tc, test_str_bad_surrogate);
  tcase_add_test(tc, test_token_limit);
  tcase_add_test(tc, test_init_errors);
  tcase_add_test(tc, test_no_alloc_in_parse);
  tcase_add_test(tc, test_deep_nesting);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
