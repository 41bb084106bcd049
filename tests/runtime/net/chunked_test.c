/*
 * chunked_test.c: net/chunked.h. Table rows fed whole, byte by byte and at every split
 * 1..31 must give the same data, the same end and the same error at the same offset; no
 * allocation while decoding.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "net/chunked.h"
#include "support/test_support.h"

typedef struct {
  char data[4096];
  size_t len;
} acc;

static void on_data(void *user, const char *p, size_t n) {
  acc *a = user;
  if (a->len + n > sizeof a->data) n = sizeof a->data - a->len; /* rows are short */
  memcpy(a->data + a->len, p, n);
  a->len += n;
}

typedef struct {
  int rc;          /* 0 done, 1 need more, -1 error */
  size_t consumed; /* bytes consumed in total */
  uint64_t err_offset;
  acc out;
} outcome;

/* Feeds `in` in pieces of `step` bytes (0: whole). */
static outcome run(const char *in, size_t n, size_t step) {
  outcome o;
  memset(&o, 0, sizeof o);
  ts_chunked c;
  memset(&c, 0, sizeof c);
  size_t pos = 0;
  o.rc = 1;
  uint64_t allocs = 0;
  while (pos < n) {
    size_t k = step ? step : n;
    if (k > n - pos) k = n - pos;
    int done = 0;
    const char *why = NULL;
    uint64_t a0 = ts_test_alloc_count();
    long used = ts_chunked_feed(&c, in + pos, k, on_data, &o.out, &done, &why);
    allocs += ts_test_alloc_count() - a0;
    if (used < 0) {
      o.rc = -1;
      o.err_offset = c.offset;
      ck_assert_ptr_nonnull(why);
      break;
    }
    o.consumed += (size_t)used;
    pos += (size_t)used;
    if (done) {
      o.rc = 0;
      break;
    }
    ck_assert_uint_eq((size_t)used, k);
  }
  ck_assert_uint_eq(allocs, 0);
  return o;
}

static const struct {
  int line;
  const char *label, *in;
  int rc;
  const char *data;   /* decoded, when rc >= 0 */
  size_t consumed;    /* when rc == 0 */
  uint64_t err_offset; /* when rc < 0 */
  size_t pad;          /* 'e' bytes in place of the row's '|' (a line at the limit) */
} rows[] = {
    {__LINE__, "one chunk", "5\r\nhello\r\n0\r\n\r\n", 0, "hello", 15, 0, 0},
    {__LINE__, "two chunks, hex", "3\r\nabc\r\nA\r\n0123456789\r\n0\r\n\r\n", 0, "abc0123456789", 28, 0, 0},
    {__LINE__, "upper and lower hex", "a\r\n0123456789\r\nB\r\n0123456789a\r\n0\r\n\r\n", 0,
     "01234567890123456789a", 36, 0, 0},
    {__LINE__, "extension", "2;name=value\r\nhi\r\n0;last\r\n\r\n", 0, "hi", 28, 0, 0},
    {__LINE__, "trailers", "2\r\nhi\r\n0\r\nX-Sum: 1\r\nY: 2\r\n\r\n", 0, "hi", 28, 0, 0},
    {__LINE__, "bytes after the end", "1\r\nx\r\n0\r\n\r\nGET / HTTP/1.1", 0, "x", 11, 0, 0},
    {__LINE__, "leading zeros", "0002\r\nhi\r\n0\r\n\r\n", 0, "hi", 15, 0, 0},
    {__LINE__, "cut in the data", "a\r\n01234", 1, "01234", 0, 0, 0},
    {__LINE__, "cut in the size", "1", 1, "", 0, 0, 0},
    {__LINE__, "no digits", "\r\nx", -1, "", 0, 0, 0},
    {__LINE__, "sign", "-1\r\nx\r\n", -1, "", 0, 0, 0},
    {__LINE__, "space before the extension", "1 ;a\r\nx\r\n0\r\n\r\n", -1, "", 0, 1, 0},
    {__LINE__, "bare LF after the size", "1\nx\r\n0\r\n\r\n", -1, "", 0, 1, 0},
    {__LINE__, "data without CRLF", "1\r\nxy\r\n0\r\n\r\n", -1, "x", 0, 4, 0},
    {__LINE__, "16 hex digits", "1000000000000000\r\n", -1, "", 0, 15, 0},
    {__LINE__, "control byte in an extension", "1;a\001\r\nx\r\n", -1, "", 0, 3, 0},
    {__LINE__, "bare LF ending the trailers", "0\r\nA: b\n\r\n", -1, "", 0, 7, 0},
    /* the line limit, byte by byte: "1;" and 4094 bytes are TS_CHUNKED_MAX_LINE; a longer
     * line is at fault at its first byte past the limit whatever the reads (fed whole, it
     * was reported at the extension's start, and a control byte past the limit won over
     * the limit; found by fuzz/chunked_fuzz.c) */
    {__LINE__, "extension at the line limit", "1;|\r\nx\r\n0\r\n\r\n", 0, "x", 4106, 0, 4094},
    {__LINE__, "extension past the line limit", "1;|\r\nx\r\n0\r\n\r\n", -1, "", 0, 4096, 4095},
    {__LINE__, "control byte past the line limit", "1;|\001\r\n", -1, "", 0, 4096, 4095},
};

START_TEST(test_rows_every_split) {
  static char in[TS_CHUNKED_MAX_LINE + 64];
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    const char *bar = rows[i].pad ? strchr(rows[i].in, '|') : NULL;
    size_t n = strlen(rows[i].in), head = bar ? (size_t)(bar - rows[i].in) : n;
    memcpy(in, rows[i].in, head); /* the row, its '|' (if padded) made `pad` bytes */
    if (bar) {
      memset(in + head, 'e', rows[i].pad);
      memcpy(in + head + rows[i].pad, bar + 1, n - head - 1);
      n += rows[i].pad - 1;
    }
    outcome whole = run(in, n, 0);
    ck_assert_msg(whole.rc == rows[i].rc, "line %d (%s): rc %d", rows[i].line, rows[i].label, whole.rc);
    ck_assert_msg(whole.out.len == strlen(rows[i].data) && !memcmp(whole.out.data, rows[i].data, whole.out.len),
                  "line %d (%s): data '%.*s'", rows[i].line, rows[i].label, (int)whole.out.len,
                  whole.out.data);
    if (rows[i].rc == 0) ck_assert_uint_eq(whole.consumed, rows[i].consumed);
    if (rows[i].rc < 0)
      ck_assert_msg(whole.err_offset == rows[i].err_offset, "line %d: error at %llu", rows[i].line,
                    (unsigned long long)whole.err_offset);
    for (size_t step = 1; step <= 31; step++) {
      outcome o = run(in, n, step);
      ck_assert_msg(o.rc == whole.rc && o.out.len == whole.out.len &&
                        !memcmp(o.out.data, whole.out.data, o.out.len) &&
                        (o.rc != 0 || o.consumed == whole.consumed) && o.err_offset == whole.err_offset,
                    "line %d (%s): split %zu differs", rows[i].line, rows[i].label, step);
    }
  }
}
END_TEST

START_TEST(test_stays_failed_and_done) {
  ts_chunked c;
  memset(&c, 0, sizeof c);
  int done;
  const char *why;
  ck_assert_int_lt(ts_chunked_feed(&c, "zz", 2, NULL, NULL, &done, &why), 0);
  ck_assert_int_lt(ts_chunked_feed(&c, "0\r\n\r\n", 5, NULL, NULL, &done, &why), 0);
  memset(&c, 0, sizeof c);
  ck_assert_int_eq(ts_chunked_feed(&c, "0\r\n\r\n", 5, NULL, NULL, &done, &why), 5);
  ck_assert_int_eq(done, 1);
  ck_assert_int_eq(ts_chunked_feed(&c, "1\r\nx", 4, NULL, NULL, &done, &why), 0);
  ck_assert_int_eq(done, 1);
}
END_TEST

START_TEST(test_limits) {
  /* an extension line past TS_CHUNKED_MAX_LINE, a trailer section past its limit */
  static char buf[TS_CHUNKED_MAX_TRAILER + 64];
  memset(buf, 'e', sizeof buf);
  memcpy(buf, "1;", 2);
  outcome o = run(buf, TS_CHUNKED_MAX_LINE + 8, 0);
  ck_assert_int_eq(o.rc, -1);
  memcpy(buf, "0\r\nX: ", 6);
  o = run(buf, sizeof buf, 0);
  ck_assert_int_eq(o.rc, -1);
}
END_TEST

int main(void) {
  Suite *s = suite_create("chunked");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_rows_every_split);
  tcase_add_test(tc, test_stays_failed_and_done);
  tcase_add_test(tc, test_limits);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
