/*
 * http_head_test.c: net/http_head.h. Request heads and their framing by table rows
 * (RFC 9112's smuggling cases among them), response framing, and the end-of-head scan
 * at every split.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "net/http_head.h"

static const struct {
  int line;
  const char *label, *head;
  int status;           /* 0: accepted */
  ts_http_body kind;
  uint64_t length;
} req_rows[] = {
    {__LINE__, "GET", "GET / HTTP/1.1\r\nHost: h\r\n\r\n", 0, TS_HTTP_BODY_NONE, 0},
    {__LINE__, "bare LF", "GET / HTTP/1.1\nHost: h\n\n", 0, TS_HTTP_BODY_NONE, 0},
    {__LINE__, "leading blank line", "\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", 0, TS_HTTP_BODY_NONE, 0},
    {__LINE__, "length", "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 12\r\n\r\n", 0,
     TS_HTTP_BODY_LENGTH, 12},
    {__LINE__, "same length twice", "POST /x HTTP/1.1\r\nContent-Length: 2\r\ncontent-length: 2\r\n\r\n",
     0, TS_HTTP_BODY_LENGTH, 2},
    {__LINE__, "same length as a list", "POST /x HTTP/1.1\r\nContent-Length: 2, 2\r\n\r\n", 0,
     TS_HTTP_BODY_LENGTH, 2},
    {__LINE__, "zero length", "POST /x HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 0, TS_HTTP_BODY_NONE, 0},
    {__LINE__, "chunked", "POST /x HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n", 0,
     TS_HTTP_BODY_CHUNKED, 0},
    {__LINE__, "value whitespace", "POST /x HTTP/1.1\r\nContent-Length: \t7 \r\n\r\n", 0,
     TS_HTTP_BODY_LENGTH, 7},
    {__LINE__, "different lengths", "POST /x HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n",
     400, 0, 0},
    {__LINE__, "different lengths in a list", "POST /x HTTP/1.1\r\nContent-Length: 2,3\r\n\r\n", 400, 0, 0},
    {__LINE__, "plus sign", "POST /x HTTP/1.1\r\nContent-Length: +2\r\n\r\n", 400, 0, 0},
    {__LINE__, "minus sign", "POST /x HTTP/1.1\r\nContent-Length: -2\r\n\r\n", 400, 0, 0},
    {__LINE__, "hex length", "POST /x HTTP/1.1\r\nContent-Length: 0x2\r\n\r\n", 400, 0, 0},
    {__LINE__, "space inside", "POST /x HTTP/1.1\r\nContent-Length: 1 2\r\n\r\n", 400, 0, 0},
    {__LINE__, "empty length", "POST /x HTTP/1.1\r\nContent-Length:\r\n\r\n", 400, 0, 0},
    {__LINE__, "19 digits", "POST /x HTTP/1.1\r\nContent-Length: 1000000000000000000\r\n\r\n", 400, 0, 0},
    {__LINE__, "TE on 1.0", "POST /x HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400, 0, 0},
    {__LINE__, "TE and CL", "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n",
     400, 0, 0},
    {__LINE__, "TE not final", "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400, 0, 0},
    {__LINE__, "chunked twice", "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
     400, 0, 0},
    {__LINE__, "gzip then chunked", "POST /x HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501, 0, 0},
    {__LINE__, "space before colon", "GET / HTTP/1.1\r\nHost : h\r\n\r\n", 400, 0, 0},
    {__LINE__, "folding", "GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n", 400, 0, 0},
    {__LINE__, "NUL in a value", "GET / HTTP/1.1\r\nX: a\0b\r\n\r\n", 400, 0, 0},
    {__LINE__, "bare CR", "GET / HTTP/1.1\r\nX: a\rb\r\n\r\n", 400, 0, 0},
    {__LINE__, "two spaces", "GET  / HTTP/1.1\r\n\r\n", 400, 0, 0},
    {__LINE__, "no version", "GET /\r\n\r\n", 400, 0, 0},
    {__LINE__, "HTTP/2", "GET / HTTP/2.0\r\n\r\n", 505, 0, 0},
    {__LINE__, "lowercase version", "GET / http/1.1\r\n\r\n", 400, 0, 0},
    {__LINE__, "space in target", "GET /a b HTTP/1.1\r\n\r\n", 400, 0, 0},
    {__LINE__, "bad method", "G@T / HTTP/1.1\r\n\r\n", 400, 0, 0},
    {__LINE__, "empty name", "GET / HTTP/1.1\r\n: v\r\n\r\n", 400, 0, 0},
};

START_TEST(test_requests) {
  for (size_t i = 0; i < sizeof req_rows / sizeof req_rows[0]; i++) {
    /* NUL inside a row: its length is up to the blank line */
    const char *h = req_rows[i].head;
    size_t n = strlen(h);
    if (strstr(req_rows[i].label, "NUL")) n = 28;
    ts_http_head hd;
    ts_http_framing f;
    int status = 0;
    const char *why = NULL;
    int rc = ts_http_parse_request(h, n, &hd, &status, &why);
    if (!rc) rc = ts_http_request_framing(&hd, &f, &status, &why);
    if (req_rows[i].status) {
      ck_assert_msg(rc == TS_E_GW_REQUEST && status == req_rows[i].status,
                    "line %d (%s): rc %d status %d", req_rows[i].line, req_rows[i].label, rc, status);
      ck_assert_ptr_nonnull(why);
    } else {
      ck_assert_msg(rc == 0, "line %d (%s): %s", req_rows[i].line, req_rows[i].label, why);
      ck_assert_int_eq(f.kind, req_rows[i].kind);
      ck_assert_uint_eq(f.length, req_rows[i].length);
    }
  }
}
END_TEST

START_TEST(test_fields) {
  const char *h = "POST /v1/x?y=1 HTTP/1.0\r\nA: 1\r\nb:2\r\nConnection: keep-alive, Close\r\n\r\n";
  ts_http_head hd;
  int status;
  const char *why;
  ck_assert_int_eq(ts_http_parse_request(h, strlen(h), &hd, &status, &why), 0);
  ck_assert_int_eq(hd.minor, 0);
  ck_assert(hd.method.len == 4 && !memcmp(hd.method.p, "POST", 4));
  ck_assert(hd.target.len == 9 && !memcmp(hd.target.p, "/v1/x?y=1", 9));
  ts_view v;
  ck_assert_uint_eq(ts_http_field_get(&hd, "B", &v), 1);
  ck_assert(v.len == 1 && v.p[0] == '2');
  ck_assert_uint_eq(ts_http_field_get(&hd, "connection", &v), 1);
  ck_assert(ts_http_list_has(v, "close"));
  ck_assert(ts_http_list_has(v, "KEEP-ALIVE"));
  ck_assert(!ts_http_list_has(v, "clos"));
  ck_assert_uint_eq(ts_http_field_get(&hd, "missing", &v), 0);
  /* too many fields: 431 */
  char big[TS_HTTP_MAX_FIELDS * 8 + 64];
  size_t n = (size_t)snprintf(big, sizeof big, "GET / HTTP/1.1\r\n");
  for (int i = 0; i <= TS_HTTP_MAX_FIELDS; i++) n += (size_t)snprintf(big + n, sizeof big - n, "X: 1\r\n");
  n += (size_t)snprintf(big + n, sizeof big - n, "\r\n");
  ck_assert_int_eq(ts_http_parse_request(big, n, &hd, &status, &why), TS_E_GW_REQUEST);
  ck_assert_int_eq(status, 431);
}
END_TEST

START_TEST(test_responses) {
  static const struct {
    int line;
    const char *head;
    int head_req, ok;
    ts_http_body kind;
    uint64_t length;
  } rows[] = {
      {__LINE__, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", 0, 1, TS_HTTP_BODY_LENGTH, 5},
      {__LINE__, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", 0, 1, TS_HTTP_BODY_CHUNKED, 0},
      {__LINE__, "HTTP/1.1 200 OK\r\n\r\n", 0, 1, TS_HTTP_BODY_CLOSE, 0},
      {__LINE__, "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", 0, 1, TS_HTTP_BODY_CLOSE, 0},
      {__LINE__, "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", 0, 1, TS_HTTP_BODY_CLOSE, 0},
      {__LINE__, "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n", 0, 1, TS_HTTP_BODY_NONE, 0},
      {__LINE__, "HTTP/1.1 304 Not Modified\r\n\r\n", 0, 1, TS_HTTP_BODY_NONE, 0},
      {__LINE__, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", 1, 1, TS_HTTP_BODY_NONE, 0},
      {__LINE__, "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", 0, 1, TS_HTTP_BODY_NONE, 0},
      {__LINE__, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 0, 0, 0, 0},
      {__LINE__, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 0, 0, 0, 0},
      {__LINE__, "HTTP/1.1 2000 OK\r\n\r\n", 0, 0, 0, 0},
      {__LINE__, "HTTP/1.1 20 OK\r\n\r\n", 0, 0, 0, 0},
      {__LINE__, "ICY 200 OK\r\n\r\n", 0, 0, 0, 0},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    ts_http_head hd;
    ts_http_framing f;
    const char *why = NULL;
    int rc = ts_http_parse_response(rows[i].head, strlen(rows[i].head), &hd, &why);
    if (!rc) rc = ts_http_response_framing(&hd, rows[i].head_req, &f, &why);
    if (!rows[i].ok) {
      ck_assert_msg(rc == TS_E_GW_RESPONSE, "line %d: accepted", rows[i].line);
      continue;
    }
    ck_assert_msg(rc == 0, "line %d: %s", rows[i].line, why);
    ck_assert_msg(f.kind == rows[i].kind && f.length == rows[i].length, "line %d: kind %d",
                  rows[i].line, f.kind);
  }
  ts_http_head hd;
  const char *why;
  const char *h = "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 7\r\n\r\n";
  ck_assert_int_eq(ts_http_parse_response(h, strlen(h), &hd, &why), 0);
  ck_assert_int_eq(hd.status, 503);
  ck_assert(hd.reason.len == 19 && !memcmp(hd.reason.p, "Service Unavailable", 19));
}
END_TEST

START_TEST(test_head_end_every_split) {
  static const struct {
    const char *in;
    size_t end; /* 0: not complete */
  } rows[] = {
      {"GET / HTTP/1.1\r\nHost: h\r\n\r\nBODY", 27},
      {"GET / HTTP/1.1\nHost: h\n\nBODY", 24},
      {"\r\n\r\nGET / HTTP/1.1\r\n\r\n", 22},
      {"GET / HTTP/1.1\r\nHost: h\r\n", 0},
      {"\r\n\r\n", 0},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    size_t n = strlen(rows[i].in);
    for (size_t step = 1; step <= 32; step++) {
      size_t resume = 0, end = 0;
      for (size_t have = step < n ? step : n;; have = have + step < n ? have + step : n) {
        end = ts_http_head_end(rows[i].in, have, &resume);
        if (end || have == n) break;
      }
      ck_assert_msg(end == rows[i].end, "row %zu split %zu: %zu", i, step, end);
    }
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("http_head");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_requests);
  tcase_add_test(tc, test_fields);
  tcase_add_test(tc, test_responses);
  tcase_add_test(tc, test_head_end_every_split);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
