/*
 * strbuf_test.c: the byte buffer and the JSON string escaper (base/strbuf.h).
 *
 * The escaper's rows give input bytes and the exact JSON text wanted; every output is
 * also judged by the reference checker (support/json_check.h): one JSON string, valid
 * UTF-8, whatever the input. The compactor's rows likewise. Then the buffer's contract:
 * the limit (TS_E_LIMIT, contents unchanged, sticky until reset), out of memory
 * (TS_E_NOMEM the same way), the NUL after the bytes, and numbers.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "support/json_check.h"
#include "support/runner.h"
#include "support/test_support.h"

typedef struct {
  int line;
  const char *label;
  const char *in;
  size_t len; /* 0: strlen(in) */
  const char *want;
} row;

static const row escape_rows[] = {
    {__LINE__, "empty", "", 0, "\"\""},
    {__LINE__, "plain ASCII as is", "hello, world", 0, "\"hello, world\""},
    {__LINE__, "quote and backslash", "a\"b\\c", 0, "\"a\\\"b\\\\c\""},
    {__LINE__, "slash is not escaped", "a/b", 0, "\"a/b\""},
    {__LINE__, "the short escapes", "\n\r\t\b\f", 0, "\"\\n\\r\\t\\b\\f\""},
    {__LINE__, "other controls as \\u00XX", "\x01\x1f", 0, "\"\\u0001\\u001f\""},
    {__LINE__, "a NUL byte inside", "a\0b", 3, "\"a\\u0000b\""},
    {__LINE__, "DEL", "\x7f", 0, "\"\\u007f\""},
    {__LINE__, "valid UTF-8 kept: 2, 3 and 4 bytes", "caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x98\x80", 0,
     "\"caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x98\x80\""},
    {__LINE__, "U+10FFFF is the last valid one", "\xf4\x8f\xbf\xbf", 0, "\"\xf4\x8f\xbf\xbf\""},
    {__LINE__, "a stray continuation byte", "a\x80z", 0, "\"a\xef\xbf\xbdz\""},
    {__LINE__, "0xFF", "\xff", 0, "\"\xef\xbf\xbd\""},
    {__LINE__, "overlong '/' (C0 AF): each byte replaced", "\xc0\xaf", 0,
     "\"\xef\xbf\xbd\xef\xbf\xbd\""},
    {__LINE__, "overlong 3-byte (E0 80 AF)", "\xe0\x80\xaf", 0,
     "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""},
    {__LINE__, "a surrogate (ED A0 80)", "\xed\xa0\x80", 0,
     "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""},
    {__LINE__, "above U+10FFFF (F4 90 80 80)", "\xf4\x90\x80\x80", 0,
     "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""},
    {__LINE__, "a sequence cut at the end", "x\xe2\x82", 0, "\"x\xef\xbf\xbd\xef\xbf\xbd\""},
    {__LINE__, "a cut sequence before ASCII", "\xe2\x82z", 0, "\"\xef\xbf\xbd\xef\xbf\xbdz\""},
};

static const row compact_rows[] = {
    {__LINE__, "whitespace between tokens goes", " { \"a\" : [ 1 , 2 ] ,\n\t\"b\" : null } ", 0,
     "{\"a\":[1,2],\"b\":null}"},
    {__LINE__, "whitespace inside strings stays", "{\"a b\": \" x \"}", 0, "{\"a b\":\" x \"}"},
    {__LINE__, "an escaped quote does not end the string", "{\"a\": \"q\\\" x\" }", 0,
     "{\"a\":\"q\\\" x\"}"},
    {__LINE__, "an escaped backslash before the closing quote", "[\"\\\\\" , 1]", 0,
     "[\"\\\\\",1]"},
    {__LINE__, "raw control bytes in strings are escaped", "[\"a\tb\nc\"]", 0,
     "[\"a\\u0009b\\u000ac\"]"},
    {__LINE__, "already compact", "{\"k\":true}", 0, "{\"k\":true}"},
};

START_TEST(test_escape) {
  const row *r = &escape_rows[_i];
  size_t len = r->len ? r->len : strlen(r->in);
  ts_buf b;
  ts_buf_init(&b, 1 << 20);
  ck_assert_int_eq(ts_buf_append_json_string(&b, r->in, len), TS_E_OK);
  ck_assert_msg(b.len == strlen(r->want) && !memcmp(b.p, r->want, b.len),
                "line %d (%s): got [%s], want [%s]", r->line, r->label, b.p, r->want);
  ck_assert_msg(ts_test_json_valid(b.p, b.len) && b.p[0] == '"',
                "line %d (%s): not one JSON string", r->line, r->label);
  ck_assert_msg(ts_test_utf8_valid(b.p, b.len), "line %d (%s): not UTF-8", r->line, r->label);
  ts_buf_fini(&b);
}
END_TEST

START_TEST(test_compact) {
  const row *r = &compact_rows[_i];
  ts_buf b;
  ts_buf_init(&b, 1 << 20);
  ck_assert_int_eq(ts_buf_append_json_compact(&b, r->in, strlen(r->in)), TS_E_OK);
  ck_assert_msg(!strcmp(b.p, r->want), "line %d (%s): got [%s], want [%s]", r->line, r->label,
                b.p, r->want);
  ck_assert_msg(ts_test_json_valid(b.p, b.len), "line %d (%s): not JSON", r->line, r->label);
  ts_buf_fini(&b);
}
END_TEST

/* Every byte value alone, and every pair of bytes: the output is always one valid JSON
 * string of valid UTF-8 (the escaper never emits what a strict reader refuses). */
START_TEST(test_escape_any_bytes) {
  ts_buf b;
  ts_buf_init(&b, 1 << 20);
  for (unsigned x = 0; x < 256; x++) {
    for (unsigned y = 0; y < 257; y++) {
      char in[2] = {(char)x, (char)y};
      ts_buf_reset(&b);
      ts_buf_append_json_string(&b, in, y < 256 ? 2 : 1);
      if (b.err || !ts_test_json_valid(b.p, b.len))
        ck_abort_msg("bytes %02x %02x: [%s] is not a JSON string", x, y, b.p);
    }
  }
  ts_buf_fini(&b);
}
END_TEST

START_TEST(test_limit) {
  ts_buf b;
  ts_buf_init(&b, 5);
  ck_assert_int_eq(ts_buf_puts(&b, "abc"), TS_E_OK);
  ck_assert_int_eq(ts_buf_puts(&b, "def"), TS_E_LIMIT); /* 6 > 5 */
  ck_assert_str_eq(b.p, "abc");                         /* unchanged */
  ck_assert_uint_eq(b.len, 3);
  ck_assert_int_eq(ts_buf_putc(&b, 'x'), TS_E_LIMIT); /* sticky, though it would fit */
  ck_assert_str_eq(b.p, "abc");
  ck_assert_int_eq(b.err, TS_E_LIMIT);
  ts_buf_reset(&b); /* clears the error and the contents */
  ck_assert_int_eq(b.err, TS_E_OK);
  ck_assert_str_eq(b.p, "");
  ck_assert_int_eq(ts_buf_puts(&b, "12345"), TS_E_OK); /* exactly the limit */
  ck_assert_str_eq(b.p, "12345");
  ck_assert_uint_le(b.cap, 6); /* never more than max + the NUL */
  ck_assert_int_eq(ts_buf_append(&b, "", 0), TS_E_OK); /* nothing more still fits */
  ck_assert_int_eq(ts_buf_putc(&b, '6'), TS_E_LIMIT);
  ts_buf_fini(&b);
  ck_assert_ptr_null(b.p);
  ts_buf_fini(&b); /* twice is fine */

  ts_buf z; /* a zero limit holds nothing */
  ts_buf_init(&z, 0);
  ck_assert_int_eq(ts_buf_putc(&z, 'a'), TS_E_LIMIT);
  ck_assert_int_eq(ts_buf_append_json_string(&z, "", 0), TS_E_LIMIT);
  ts_buf_fini(&z);
}
END_TEST

START_TEST(test_out_of_memory) {
  ts_buf b;
  ts_buf_init(&b, 1 << 20);
  ck_assert_int_eq(ts_buf_puts(&b, "keep"), TS_E_OK);
  size_t cap = b.cap;
  char big[200];
  memset(big, 'x', sizeof big);
  ts_test_alloc_fail_after(1);
  int rc = ts_buf_append(&b, big, sizeof big); /* must grow: the realloc fails */
  ts_test_alloc_fail_after(-1);
  ck_assert_uint_gt(sizeof big + 5, cap);
  ck_assert_int_eq(rc, TS_E_NOMEM);
  ck_assert_str_eq(b.p, "keep");
  ck_assert_int_eq(ts_buf_putc(&b, '!'), TS_E_NOMEM); /* sticky */
  ts_buf_reset(&b);
  ck_assert_int_eq(ts_buf_append(&b, big, sizeof big), TS_E_OK);
  ck_assert_uint_eq(b.len, sizeof big);
  ts_buf_fini(&b);
}
END_TEST

START_TEST(test_numbers_and_growth) {
  ts_buf b;
  ts_buf_init(&b, 1 << 20);
  ts_buf_append_u64(&b, 0);
  ts_buf_putc(&b, ' ');
  ts_buf_append_u64(&b, 42);
  ts_buf_putc(&b, ' ');
  ts_buf_append_u64(&b, UINT64_MAX);
  ck_assert_str_eq(b.p, "0 42 18446744073709551615");
  /* many small appends: the bytes, the NUL and a doubling capacity */
  ts_buf_reset(&b);
  for (int i = 0; i < 10000; i++) ck_assert_int_eq(ts_buf_putc(&b, (char)('a' + i % 26)), TS_E_OK);
  ck_assert_uint_eq(b.len, 10000);
  ck_assert_int_eq(b.p[10000], '\0');
  ck_assert_int_eq(b.p[9999], 'a' + 9999 % 26);
  ck_assert_uint_lt(b.cap, 2 * 10001 + 64);
  ts_buf_fini(&b);
}
END_TEST

int main(void) {
  Suite *s = suite_create("strbuf");
  TCase *tc = tcase_create("core");
  tcase_add_loop_test(tc, test_escape, 0, (int)(sizeof escape_rows / sizeof escape_rows[0]));
  tcase_add_loop_test(tc, test_compact, 0, (int)(sizeof compact_rows / sizeof compact_rows[0]));
  tcase_add_test(tc, test_escape_any_bytes);
  tcase_add_test(tc, test_limit);
  tcase_add_test(tc, test_out_of_memory);
  tcase_add_test(tc, test_numbers_and_growth);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
