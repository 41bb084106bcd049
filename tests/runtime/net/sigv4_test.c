/*
 * sigv4_test.c: tests for runtime/net/sigv4.c, AWS Signature Version 4.
 *
 * The known answers are AWS's own: the signing-key example of the SigV4 documentation
 * (secret wJalrX..., 20120215, us-east-1, iam) and three cases of the published SigV4
 * test suite (get-vanilla, get-vanilla-query-order-key-case, post-vanilla: credential
 * AKIDEXAMPLE, 2015-08-30T12:36:00Z, us-east-1, service "service"). A Bedrock-shaped
 * request (a model id whose ':' is sent as %3A, a session token, three headers) and a
 * query with escapes are checked against values computed by an independent
 * implementation written from the same documentation (sigv4_reference.py: Python's
 * hmac and hashlib), since AWS publishes no vector with a doubly encoded path; AWS's own
 * cases pin that implementation to AWS's answers.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/sigv4.h"
#include "support/test_support.h"

#define SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define T_SUITE ((time_t)1440938160) /* 2015-08-30T12:36:00Z */

static const ts_sigv4_key suite_key = {"AKIDEXAMPLE", SECRET, NULL, "us-east-1", "service"};
static const ts_sigv4_header suite_host[] = {{"Host", "example.amazonaws.com"}};

START_TEST(test_signing_key) {
  uint8_t k[32];
  ck_assert_int_eq(ts_sigv4_signing_key(SECRET, "20120215", "us-east-1", "iam", k), TS_E_OK);
  char hex[65];
  for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", k[i]);
  ck_assert_str_eq(hex, "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d");
  ck_assert_int_eq(ts_sigv4_signing_key(NULL, "20120215", "us-east-1", "iam", k), TS_E_INVAL);
}
END_TEST

static const struct {
  int line;
  const char *method, *path, *query, *want;
} suite_rows[] = {
    {__LINE__, "GET", "/", NULL,
     "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"}, /* get-vanilla */
    {__LINE__, "GET", "", "", /* an empty path is "/", an empty query none */
     "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"},
    {__LINE__, "GET", "/", "Param2=value2&Param1=value1", /* get-vanilla-query-order-key-case */
     "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"},
    {__LINE__, "GET", "/", "Param1=value1&Param2=value2", /* the same, already in order */
     "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"},
    {__LINE__, "POST", "/", NULL,
     "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"}, /* post-vanilla */
    /* escapes decoded and strictly re-encoded (%7e is ~, / is %2F), sorted by name then
     * value, a name without '=': from the independent implementation (see the top) */
    {__LINE__, "GET", "/", "b=%7e&a=x%2fy&a=1&c",
     "598bf408480a6d906deb8933b78409f21f7bd1d0355e1b323853c6f87c0dbbfb"},
    {__LINE__, "GET", "/", "c=&a=1&b=~&a=x/y", /* the same query, spelled otherwise */
     "598bf408480a6d906deb8933b78409f21f7bd1d0355e1b323853c6f87c0dbbfb"},
};

START_TEST(test_aws_suite) {
  for (size_t i = 0; i < sizeof suite_rows / sizeof suite_rows[0]; i++) {
    ts_sigv4_request r = {suite_rows[i].method, suite_rows[i].path, suite_rows[i].query,
                          suite_host, 1, NULL, 0};
    ts_sigv4_result out;
    ck_assert_int_eq(ts_sigv4_sign(&suite_key, &r, T_SUITE, &out), TS_E_OK);
    ck_assert_msg(!strcmp(out.signature, suite_rows[i].want), "line %d: %s", suite_rows[i].line,
                  out.signature);
    ck_assert_str_eq(out.amz_date, "20150830T123600Z");
    char want[512];
    snprintf(want, sizeof want,
             "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
             "SignedHeaders=host;x-amz-date, Signature=%s",
             suite_rows[i].want);
    ck_assert_str_eq(out.authorization, want);
  }
  /* header names in any case, values with spaces around and inside: the same signature */
  static const ts_sigv4_header messy[] = {{"HOST", "  example.amazonaws.com \t"}};
  ts_sigv4_request r = {"GET", "/", NULL, messy, 1, NULL, 0};
  ts_sigv4_result out;
  ck_assert_int_eq(ts_sigv4_sign(&suite_key, &r, T_SUITE, &out), TS_E_OK);
  ck_assert_str_eq(out.signature, "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
}
END_TEST

/* What Bedrock's ConverseStream sends: the model id's ':' is %3A in the path (and %253A in
 * the canonical path), a session token is signed as x-amz-security-token. */
START_TEST(test_bedrock_shape) {
  static const char body[] = "{\"messages\":[{\"role\":\"user\",\"content\":[{\"text\":\"hi\"}]}]}";
  static const ts_sigv4_header h[] = {
      {"Host", "bedrock-runtime.us-west-2.amazonaws.com"},
      {"Content-Type", "application/json"},
      {"Accept", "application/vnd.amazon.eventstream"},
  };
  ts_sigv4_key k = {"AKIDEXAMPLE", SECRET, "FQoGZXIvYXdzEXAMPLETOKEN", "us-west-2", "bedrock"};
  ts_sigv4_request r = {"POST", "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse-stream",
                        NULL, h, 3, body, sizeof body - 1};
  ts_sigv4_result out;
  ck_assert_int_eq(ts_sigv4_sign(&k, &r, (time_t)1735787045, &out), TS_E_OK); /* 2025-01-02T03:04:05Z */
  ck_assert_str_eq(out.amz_date, "20250102T030405Z");
  ck_assert_str_eq(out.authorization,
                   "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20250102/us-west-2/bedrock/aws4_request, "
                   "SignedHeaders=accept;content-type;host;x-amz-date;x-amz-security-token, "
                   "Signature=eca32bd7e43b6cdb6119f501d19ac8c571cc3ec00fdf876ba60db14004c3f73c");
  ck_assert_ptr_null(strstr(out.authorization, SECRET)); /* no secret in what is sent */
  ck_assert_ptr_null(strstr(out.authorization, "FQoG"));
  /* one byte of the body changed: another signature */
  char other[sizeof body];
  memcpy(other, body, sizeof body);
  other[sizeof body - 5] = 'X';
  r.body = other;
  ts_sigv4_result out2;
  ck_assert_int_eq(ts_sigv4_sign(&k, &r, (time_t)1735787045, &out2), TS_E_OK);
  ck_assert_str_ne(out2.signature, out.signature);
  /* a second later: another date header, another signature */
  r.body = body;
  ck_assert_int_eq(ts_sigv4_sign(&k, &r, (time_t)1735787046, &out2), TS_E_OK);
  ck_assert_str_eq(out2.amz_date, "20250102T030406Z");
  ck_assert_str_ne(out2.signature, out.signature);
}
END_TEST

START_TEST(test_errors) {
  ts_sigv4_result out;
  ts_sigv4_request r = {"GET", "/", NULL, suite_host, 1, NULL, 0};
  ts_sigv4_key k = suite_key;
  ck_assert_int_eq(ts_sigv4_sign(NULL, &r, T_SUITE, &out), TS_E_INVAL);
  ck_assert_int_eq(ts_sigv4_sign(&k, NULL, T_SUITE, &out), TS_E_INVAL);
  k.secret_access_key = "";
  ck_assert_int_eq(ts_sigv4_sign(&k, &r, T_SUITE, &out), TS_E_INVAL);
  k = suite_key;
  k.region = NULL;
  ck_assert_int_eq(ts_sigv4_sign(&k, &r, T_SUITE, &out), TS_E_INVAL);
  k = suite_key;
  /* the caller's own X-Amz-Date would be signed twice */
  static const ts_sigv4_header dup[] = {{"Host", "h"}, {"X-Amz-Date", "20150830T123600Z"}};
  r.headers = dup;
  r.n_headers = 2;
  ck_assert_int_eq(ts_sigv4_sign(&k, &r, T_SUITE, &out), TS_E_INVAL);
  static const ts_sigv4_header noname[] = {{"", "x"}};
  r.headers = noname;
  r.n_headers = 1;
  ck_assert_int_eq(ts_sigv4_sign(&k, &r, T_SUITE, &out), TS_E_INVAL);
  ts_sigv4_header many[TS_SIGV4_MAX_HEADERS];
  char names[TS_SIGV4_MAX_HEADERS][8];
  for (int i = 0; i < TS_SIGV4_MAX_HEADERS; i++) {
    snprintf(names[i], sizeof names[i], "h%d", i);
    many[i] = (ts_sigv4_header){names[i], "v"};
  }
  r.headers = many;
  r.n_headers = TS_SIGV4_MAX_HEADERS - 1; /* with x-amz-date: exactly the limit */
  ck_assert_int_eq(ts_sigv4_sign(&k, &r, T_SUITE, &out), TS_E_OK);
  r.n_headers = TS_SIGV4_MAX_HEADERS;
  ck_assert_int_eq(ts_sigv4_sign(&k, &r, T_SUITE, &out), TS_E_LIMIT);
  /* an access key id too long for the Authorization value */
  char longid[TS_SIGV4_AUTH_MAX + 8];
  memset(longid, 'A', sizeof longid - 1);
  longid[sizeof longid - 1] = '\0';
  k.access_key_id = longid;
  r.headers = suite_host;
  r.n_headers = 1;
  ck_assert_int_eq(ts_sigv4_sign(&k, &r, T_SUITE, &out), TS_E_LIMIT);
}
END_TEST

static const struct {
  int line;
  const char *host, *service, *want;
} region_rows[] = {
    {__LINE__, "bedrock-runtime.us-east-1.amazonaws.com", "bedrock-runtime", "us-east-1"},
    {__LINE__, "bedrock-runtime-fips.us-gov-west-1.amazonaws.com", "bedrock-runtime", "us-gov-west-1"},
    {__LINE__, "bedrock-runtime.eu-west-3.amazonaws.com", NULL, "eu-west-3"},
    {__LINE__, "bedrock.us-east-1.amazonaws.com", "bedrock-runtime", ""}, /* another service */
    {__LINE__, "vpce-1.bedrock-runtime.us-east-1.vpce.amazonaws.com", "bedrock-runtime", ""},
    {__LINE__, "bedrock-runtime.amazonaws.com", "bedrock-runtime", ""}, /* no region */
    {__LINE__, "bedrock-runtime.us-east-1.amazonaws.com.evil.example", "bedrock-runtime", ""},
    {__LINE__, "127.0.0.1", "bedrock-runtime", ""},
    {__LINE__, NULL, NULL, ""},
};

START_TEST(test_region_of_host) {
  for (size_t i = 0; i < sizeof region_rows / sizeof region_rows[0]; i++) {
    char out[32];
    int got = ts_sigv4_region_of_host(region_rows[i].host, region_rows[i].service, out, sizeof out);
    ck_assert_msg(got == (region_rows[i].want[0] != 0) && !strcmp(out, region_rows[i].want),
                  "line %d: %d '%s'", region_rows[i].line, got, out);
  }
  char small[4];
  ck_assert_int_eq(ts_sigv4_region_of_host("bedrock-runtime.us-east-1.amazonaws.com", NULL, small,
                                           sizeof small), 0);
  ck_assert_str_eq(small, "");
}
END_TEST

/* Out of memory at every allocation in turn: TS_E_NOMEM, never a crash, a leak (the
 * sanitized build) or a wrong signature; once nothing fails, the right one. */
START_TEST(test_out_of_memory) {
  static const ts_sigv4_header h[] = {{"Host", "example.amazonaws.com"}};
  ts_sigv4_request r = {"GET", "/", "Param2=value2&Param1=value1", h, 1, NULL, 0};
  int ok = 0;
  for (long n = 1; n < 200 && !ok; n++) {
    ts_sigv4_result out;
    ts_test_alloc_fail_after(n);
    int rc = ts_sigv4_sign(&suite_key, &r, T_SUITE, &out);
    ts_test_alloc_fail_after(-1);
    ck_assert_msg(rc == TS_E_OK || rc == TS_E_NOMEM, "allocation %ld: %s", n, ts_err_name(rc));
    if (rc == TS_E_OK) {
      ck_assert_str_eq(out.signature, "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500");
      ok = 1;
    }
  }
  ck_assert(ok);
}
END_TEST

int main(void) {
  Suite *s = suite_create("sigv4");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_signing_key);
  tcase_add_test(tc, test_aws_suite);
  tcase_add_test(tc, test_bedrock_shape);
  tcase_add_test(tc, test_errors);
  tcase_add_test(tc, test_out_of_memory);
  tcase_add_test(tc, test_region_of_host);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
