/*
 * strbuf_test.c: the byte buffer and the JSON string escaper (base/strbuf.h).
 *
 * The escaper's rows give input bytes and the exact JSON text wanted; every output is
 * also judged by the reference checker (support/json_check.h): one JSON string, valid
 * UTF-8, whatever the input; and the escaper (which finds plain runs eight bytes at a time)
 * against a byte-at-a-time restatement of its contract, every special byte at every offset
 * and random strings. The compactor's rows likewise. Then the buffer's contract:
 * the limit (TS_E_LIMIT, contents unchanged, sticky until reset), out of memory
 * (TS_E_NOMEM the same way; an escape that meets either leaves no part of its string), the
 * NUL after the bytes, and numbers of every length against printf.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
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

/* The escaper restated a byte at a time, as the contract says it: the reference the
 * word-at-a-time escaper must match on every input. */
static size_t ref_utf8(const unsigned char *s, size_t n) {
  unsigned c = s[0], lo = 0x80, hi = 0xBF;
  size_t need = c >= 0xC2 && c <= 0xDF   ? 1
                : c >= 0xE0 && c <= 0xEF ? 2
                : c >= 0xF0 && c <= 0xF4 ? 3
                                         : 0;
  if (!need || n < need + 1) return 0;
  if (c == 0xE0) lo = 0xA0;
  if (c == 0xED) hi = 0x9F;
  if (c == 0xF0) lo = 0x90;
  if (c == 0xF4) hi = 0x8F;
  for (size_t i = 1; i <= need; i++, lo = 0x80, hi = 0xBF)
    if (s[i] < lo || s[i] > hi) return 0;
  return need + 1;
}
static size_t ref_escape(const unsigned char *s, size_t n, char *out) {
  static const char hex[] = "0123456789abcdef";
  size_t o = 0;
  out[o++] = '"';
  for (size_t i = 0; i < n;) {
    unsigned c = s[i];
    size_t k;
    if (c == '"' || c == '\\') {
      out[o++] = '\\', out[o++] = (char)c, i++;
    } else if (c >= 0x20 && c < 0x7F) {
      out[o++] = (char)c, i++;
    } else if (c >= 0x80 && (k = ref_utf8(s + i, n - i)) != 0) {
      memcpy(out + o, s + i, k), o += k, i += k;
    } else if (c >= 0x80) {
      memcpy(out + o, "\xEF\xBF\xBD", 3), o += 3, i++;
    } else {
      const char *e = c == '\n'   ? "n"
                      : c == '\r' ? "r"
                      : c == '\t' ? "t"
                      : c == '\b' ? "b"
                      : c == '\f' ? "f"
                                  : NULL;
      out[o++] = '\\';
      if (e) {
        out[o++] = *e;
      } else {
        memcpy(out + o, "u00", 3), o += 3;
        out[o++] = hex[c >> 4], out[o++] = hex[c & 15];
      }
      i++;
    }
  }
  out[o++] = '"';
  return o;
}
static void check_against_ref(const unsigned char *in, size_t n, const char *what, size_t a,
                              size_t b2) {
  static char want[6 * 600 + 2];
  ck_assert_uint_le(n, 600);
  size_t wl = ref_escape(in, n, want);
  ts_buf b;
  ts_buf_init(&b, 1 << 20);
  ck_assert_int_eq(ts_buf_append_json_string(&b, (const char *)in, n), TS_E_OK);
  if (b.len != wl || memcmp(b.p, want, wl) || b.p[b.len] != '\0')
    ck_abort_msg("%s (%zu, %zu), %zu bytes: got [%s], want [%.*s]", what, a, b2, n, b.p,
                 (int)wl, want);
  ts_buf_fini(&b);
}

/* Each byte that is not copied as it is (and a valid 2-, 3- and 4-byte character, and
 * cut ones) at every offset 0..40 of plain text 0..48 bytes long, and two of them at
 * every pair of offsets in 24 bytes: every position against the 8-byte words. */
START_TEST(test_escape_positions) {
  static const struct {
    const char *s;
    size_t len;
  } specials[] = {{"\"", 1}, {"\\", 1}, {"\n", 1}, {"\x01", 1}, {"\0", 1}, {"\x1f", 1},
                  {"\x7f", 1}, {"\x80", 1}, {"\xff", 1}, {"\xc3\xa9", 2}, {"\xe2\x80\x94", 3},
                  {"\xf0\x9f\x98\x80", 4}, {"\xe2\x82", 2}, {"\xc0\xaf", 2}, {"\xed\xa0\x80", 3},
                  {" ", 1}, {"~", 1}, {"!", 1}, {"#", 1}, {"[", 1}, {"]", 1}};
  const size_t ns = sizeof specials / sizeof specials[0];
  unsigned char in[600];
  for (size_t k = 0; k < ns; k++) {
    for (size_t len = 0; len <= 48; len++) {
      for (size_t at = 0; at <= len && at <= 40; at++) {
        size_t n = 0;
        for (size_t i = 0; i < at; i++) in[n++] = (unsigned char)('a' + i % 26);
        memcpy(in + n, specials[k].s, specials[k].len), n += specials[k].len;
        for (size_t i = at; i < len; i++) in[n++] = (unsigned char)('A' + i % 26);
        check_against_ref(in, n, "one special at", k, at);
      }
    }
    for (size_t k2 = 0; k2 < ns; k2++) {
      for (size_t a = 0; a < 24; a++) {
        for (size_t c = a; c < 24; c++) {
          size_t n = 0;
          for (size_t i = 0; i < 24; i++) {
            if (i == a) memcpy(in + n, specials[k].s, specials[k].len), n += specials[k].len;
            if (i == c) memcpy(in + n, specials[k2].s, specials[k2].len), n += specials[k2].len;
            in[n++] = (unsigned char)('a' + i);
          }
          check_against_ref(in, n, "two specials at", a, c);
        }
      }
    }
  }
}
END_TEST

/* Random bytes (a fixed seed): mostly plain text with every other byte mixed in at
 * several densities, 0..500 bytes, against the reference. */
START_TEST(test_escape_random) {
  uint64_t x = 0x9E3779B97F4A7C15ull;
  unsigned char in[600];
  for (int round = 0; round < 20000; round++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    size_t n = (size_t)(x % 501);
    unsigned density = (unsigned)((x >> 20) % 5); /* 1 in 2^density bytes is any byte */
    for (size_t i = 0; i < n; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      in[i] = (x >> 40) % (1u << density) == 0 ? (unsigned char)(x >> 8)
                                                : (unsigned char)(' ' + (x >> 16) % 95);
    }
    check_against_ref(in, n, "random round", (size_t)round, density);
  }
}
END_TEST

/* An escape that would pass the limit part way through the string fails, and leaves the
 * buffer as it was before the call (not a part of the string), as does running out of
 * memory while growing for an escape; both are sticky. */
START_TEST(test_escape_limit_midway) {
  ts_buf b;
  ts_buf_init(&b, 16);
  ck_assert_int_eq(ts_buf_puts(&b, "ab"), TS_E_OK);
  /* "\"" + 10 bytes + "\"" = 12 fits in the 14 left; the two quotes inside make it 14 */
  ck_assert_int_eq(ts_buf_append_json_string(&b, "x\"y\"zzzzzz", 10), TS_E_OK);
  ck_assert_str_eq(b.p, "ab\"x\\\"y\\\"zzzzzz\"");
  ts_buf_reset(&b);
  ck_assert_int_eq(ts_buf_puts(&b, "ab"), TS_E_OK);
  /* one more escape than fits: found only at the last quote */
  ck_assert_int_eq(ts_buf_append_json_string(&b, "x\"y\"z\"zzzz", 10), TS_E_LIMIT);
  ck_assert_str_eq(b.p, "ab");
  ck_assert_uint_eq(b.len, 2);
  ck_assert_int_eq(ts_buf_putc(&b, 'c'), TS_E_LIMIT); /* sticky */
  ts_buf_reset(&b);
  /* plain text exactly to the limit, and one byte over it */
  ck_assert_int_eq(ts_buf_append_json_string(&b, "0123456789abcd", 14), TS_E_OK);
  ck_assert_uint_eq(b.len, 16);
  ts_buf_reset(&b);
  ck_assert_int_eq(ts_buf_append_json_string(&b, "0123456789abcde", 15), TS_E_LIMIT);
  ck_assert_uint_eq(b.len, 0);
  ck_assert_str_eq(b.p, "");
  ts_buf_fini(&b);

  ts_buf m;
  ts_buf_init(&m, 1 << 20);
  ck_assert_int_eq(ts_buf_puts(&m, "keep"), TS_E_OK); /* 64 bytes of capacity */
  char in[50];
  memset(in, 'q', sizeof in);
  in[40] = '\n'; /* 52 bytes fit the first reservation; the escapes after it grow past 64 */
  memset(in + 41, '\x01', 9);
  ts_test_alloc_fail_after(1);
  int rc = ts_buf_append_json_string(&m, in, sizeof in);
  ts_test_alloc_fail_after(-1);
  ck_assert_int_eq(rc, TS_E_NOMEM);
  ck_assert_str_eq(m.p, "keep");
  ck_assert_uint_eq(m.len, 4);
  ts_buf_reset(&m);
  ck_assert_int_eq(ts_buf_append_json_string(&m, in, sizeof in), TS_E_OK);
  ck_assert_uint_eq(m.len, 2 + 40 + 2 + 9 * 6);
  ts_buf_fini(&m);
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

/* Every number of digits, at both ends (9 / 10, 99 / 100, ..., 10^19 - 1 / 10^19, the
 * largest), and 100,000 others of every size, against printf. */
START_TEST(test_numbers_every_length) {
  ts_buf b;
  ts_buf_init(&b, 1 << 20);
  char want[32];
  uint64_t p = 1, x = 0x2545F4914F6CDD1Dull;
  for (int k = 0; k <= 20; k++) {
    const uint64_t vals[3] = {p - 1, p, p + 1};
    for (int j = 0; j < 3; j++) {
      ts_buf_reset(&b);
      ck_assert_int_eq(ts_buf_append_u64(&b, vals[j]), TS_E_OK);
      snprintf(want, sizeof want, "%llu", (unsigned long long)vals[j]);
      ck_assert_str_eq(b.p, want);
      ck_assert_uint_eq(b.len, strlen(want));
    }
    p = k < 19 ? p * 10 : UINT64_MAX; /* 10^19, then the largest (and its wrap to 0) */
  }
  for (int i = 0; i < 100000; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    const uint64_t v = x >> (x % 64); /* every bit length */
    ts_buf_reset(&b);
    ck_assert_int_eq(ts_buf_append_u64(&b, v), TS_E_OK);
    snprintf(want, sizeof want, "%llu", (unsigned long long)v);
    if (strcmp(b.p, want)) ck_abort_msg("%s for %s", b.p, want);
  }
  /* at the limit: exactly fits, one byte short fails and leaves the buffer as it was */
  ts_buf s;
  ts_buf_init(&s, 5);
  ck_assert_int_eq(ts_buf_append_u64(&s, 12345), TS_E_OK);
  ts_buf_reset(&s);
  ck_assert_int_eq(ts_buf_putc(&s, 'a'), TS_E_OK);
  ck_assert_int_eq(ts_buf_append_u64(&s, 12345), TS_E_LIMIT);
  ck_assert_str_eq(s.p, "a");
  ts_buf_fini(&s);
  ts_buf_fini(&b);
}
END_TEST

int main(void) {
  Suite *s = suite_create("strbuf");
  TCase *tc = tcase_create("core");
  tcase_add_loop_test(tc, test_escape, 0, (int)(sizeof escape_rows / sizeof escape_rows[0]));
  tcase_add_loop_test(tc, test_compact, 0, (int)(sizeof compact_rows / sizeof compact_rows[0]));
  tcase_add_test(tc, test_escape_any_bytes);
  tcase_add_test(tc, test_escape_positions);
  tcase_add_test(tc, test_escape_random);
  tcase_add_test(tc, test_escape_limit_midway);
  tcase_add_test(tc, test_limit);
  tcase_add_test(tc, test_out_of_memory);
  tcase_add_test(tc, test_numbers_and_growth);
  tcase_add_test(tc, test_numbers_every_length);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
