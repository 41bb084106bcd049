/*
 * regex_test.c: tests for runtime/tools/regex.c (ECMA-262 patterns on PCRE2).
 *
 * A table of {pattern, subject, want} rows: where ECMA-262 and PCRE2 would differ in
 * meaning (`.`, `\s`, `\S`, `\v`, `$`, `\d`, `\w`), ECMA-262's answer is wanted; syntax
 * that only PCRE2 knows is refused with its reason. Then the backtracking limit, and
 * out of memory at every allocation of compile and of a search.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/runner.h"
#include "support/test_support.h"
#include "tools/regex.h"

#define BAD -100 /* the pattern must not compile */

static const struct {
  int line;
  const char *pattern, *subject;
  int want;            /* 1 match, 0 none, BAD */
  const char *why;     /* for BAD: the reason */
} rows[] = {
    {__LINE__, "b", "abc", 1, ""},                     /* searched, not anchored */
    {__LINE__, "^b", "abc", 0, ""},
    {__LINE__, "^a$", "a\n", 0, ""},                   /* $ only at the very end */
    {__LINE__, "^.$", "\xf0\x9f\x98\x80", 1, ""},       /* . is a code point */
    {__LINE__, "^.$", "\n", 0, ""},
    {__LINE__, "^.$", "\r", 0, ""},
    {__LINE__, "^.$", "\xe2\x80\xa8", 0, ""},           /* U+2028 is a line terminator */
    {__LINE__, "^.$", "\x0b", 1, ""},                   /* VT is not */
    {__LINE__, "^.$", "\xc2\x85", 1, ""},               /* nor NEL */
    {__LINE__, "^[.]$", "x", 0, ""},                   /* a dot in a class is a dot */
    {__LINE__, "^[.]$", ".", 1, ""},
    {__LINE__, "^\\s$", "\xc2\xa0", 1, ""},             /* NBSP is white space */
    {__LINE__, "^\\s$", "\xef\xbb\xbf", 1, ""},         /* BOM too */
    {__LINE__, "^\\s$", "\xe3\x80\x80", 1, ""},         /* ideographic space */
    {__LINE__, "^\\s$", "\xc2\x85", 0, ""},             /* NEL is not (in ECMA-262) */
    {__LINE__, "^\\s$", "x", 0, ""},
    {__LINE__, "^\\S$", "\xc2\xa0", 0, ""},
    {__LINE__, "^\\S$", "x", 1, ""},
    {__LINE__, "^[\\sx]+$", "x\xe2\x80\x83x", 1, ""},  /* \s inside a class */
    {__LINE__, "^\\v$", "\x0b", 1, ""},                 /* \v is VT only */
    {__LINE__, "^\\v$", "\n", 0, ""},
    {__LINE__, "^\\d$", "\xd9\xa3", 0, ""},             /* \d is ASCII */
    {__LINE__, "^\\w+$", "caf\xc3\xa9", 0, ""},         /* \w is ASCII */
    {__LINE__, "^\\u00e9$", "\xc3\xa9", 1, ""},
    {__LINE__, "^\\u{1F600}$", "\xf0\x9f\x98\x80", 1, ""},
    {__LINE__, "^\\x41$", "A", 1, ""},
    {__LINE__, "^[]$", "", 0, ""},                     /* [] matches nothing */
    {__LINE__, "^[^]$", "\n", 1, ""},                  /* [^] anything */
    {__LINE__, "^a{2,3}$", "aaa", 1, ""},
    {__LINE__, "^a{2}?$", "aa", 1, ""},
    {__LINE__, "^a{,2}$", "a{,2}", 1, ""},             /* not a quantifier: literal */
    {__LINE__, "^(?:ab)+$", "abab", 1, ""},
    {__LINE__, "a(?=b)", "ab", 1, ""},
    {__LINE__, "(?<!a)b", "ab", 0, ""},
    {__LINE__, "^(?<y>\\d{4})-\\k<y>$", "2024-2024", 1, ""},
    {__LINE__, "^a*?b$", "aab", 1, ""},
    {__LINE__, "^\\p{L}+$", "caf\xc3\xa9", 1, ""},
    {__LINE__, "^\\$\\.\\-$", "$.-", 1, ""},
    {__LINE__, "\\Z", "", BAD, "\\Z is not an ECMA-262 escape at offset 0"},
    {__LINE__, "a\\z", "", BAD, "\\z is not an ECMA-262 escape at offset 1"},
    {__LINE__, "\\A", "", BAD, "\\A is not an ECMA-262 escape at offset 0"},
    {__LINE__, "[\\h]", "", BAD, "\\h is not an ECMA-262 escape at offset 1"},
    {__LINE__, "\\Qa\\E", "", BAD, "\\Q is not an ECMA-262 escape at offset 0"},
    {__LINE__, "(?i)a", "", BAD, "(?i is not ECMA-262 syntax at offset 0"},
    {__LINE__, "(?>a)", "", BAD, "(?> is not ECMA-262 syntax at offset 0"},
    {__LINE__, "x(?R)", "", BAD, "(?R is not ECMA-262 syntax at offset 1"},
    {__LINE__, "a++", "", BAD, "a possessive quantifier is not ECMA-262 syntax at offset 2"},
    {__LINE__, "a{2}+", "", BAD, "a possessive quantifier is not ECMA-262 syntax at offset 4"},
    {__LINE__, "a(", "", BAD, "missing closing parenthesis at offset 2"},
    {__LINE__, "a(.", "", BAD, "missing closing parenthesis"}, /* rewritten: no offset */
};

START_TEST(test_table) {
  int failed = 0;
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    ts_regex *re = NULL;
    char why[200];
    int rc = ts_regex_compile(rows[i].pattern, strlen(rows[i].pattern), &re, why, sizeof why);
    int got;
    if (rc == TS_E_INVAL) {
      got = BAD;
      ck_assert_ptr_null(re);
    } else {
      ck_assert_int_eq(rc, TS_E_OK);
      ts_regex_scratch *sc = NULL;
      got = ts_regex_search(re, rows[i].subject, strlen(rows[i].subject), &sc);
      ts_regex_scratch_free(sc);
      ts_regex_free(re);
      why[0] = '\0';
    }
    if (got != rows[i].want || (got == BAD && strcmp(why, rows[i].why))) {
      fprintf(stderr, "line %d: /%s/ on '%s': got %d (%s), want %d (%s)\n", rows[i].line,
              rows[i].pattern, rows[i].subject, got, why, rows[i].want, rows[i].why);
      failed++;
    }
  }
  ck_assert_msg(failed == 0, "%d rows failed (listed above)", failed);
}
END_TEST

/* A NUL inside the pattern and the subject is a character like any other. */
START_TEST(test_nul_bytes) {
  ts_regex *re = NULL;
  ck_assert_int_eq(ts_regex_compile("^a\0b$", 5, &re, NULL, 0), TS_E_OK);
  ts_regex_scratch *sc = NULL;
  ck_assert_int_eq(ts_regex_search(re, "a\0b", 3, &sc), 1);
  ck_assert_int_eq(ts_regex_search(re, "ab", 2, &sc), 0);
  ts_regex_scratch_free(sc);
  ts_regex_free(re);
}
END_TEST

START_TEST(test_backtracking_limit) {
  ts_regex *re = NULL;
  ck_assert_int_eq(ts_regex_compile("^(a|aa)+$", 9, &re, NULL, 0), TS_E_OK);
  char s[80];
  memset(s, 'a', sizeof s);
  s[sizeof s - 1] = 'b';
  ts_regex_scratch *sc = NULL;
  ck_assert_int_eq(ts_regex_search(re, s, sizeof s, &sc), TS_E_LIMIT);
  ck_assert_int_eq(ts_regex_search(re, s, sizeof s - 1, &sc), 1); /* scratch still good */
  ts_regex_scratch_free(sc);
  ts_regex_free(re);
}
END_TEST

START_TEST(test_nomem) {
  static const char pat[] = "^(\\s|x)+.$";
  uint64_t before = ts_test_alloc_count();
  ts_regex *re = NULL;
  int rc = ts_regex_compile(pat, strlen(pat), &re, NULL, 0);
  uint64_t allocs = ts_test_alloc_count() - before;
  ck_assert_int_eq(rc, TS_E_OK);
  ts_regex_free(re);
  for (long n = 1; n <= (long)allocs; n++) {
    re = NULL;
    ts_test_alloc_fail_after(n);
    rc = ts_regex_compile(pat, strlen(pat), &re, NULL, 0);
    ts_test_alloc_fail_after(-1);
    ck_assert_msg(rc == TS_E_NOMEM && re == NULL, "allocation %ld of %lu: %s", n,
                  (unsigned long)allocs, ts_err_name(rc));
  }
  ck_assert_int_eq(ts_regex_compile(pat, strlen(pat), &re, NULL, 0), TS_E_OK);
  ts_regex_scratch *sc = NULL;
  before = ts_test_alloc_count();
  rc = ts_regex_search(re, "x xy", 4, &sc);
  allocs = ts_test_alloc_count() - before;
  ck_assert_int_eq(rc, 1);
  ts_regex_scratch_free(sc);
  ck_assert_uint_ge(allocs, 2);
  for (long n = 1; n <= (long)allocs; n++) {
    sc = NULL;
    ts_test_alloc_fail_after(n);
    rc = ts_regex_search(re, "x xy", 4, &sc);
    ts_test_alloc_fail_after(-1);
    ck_assert_msg(rc == TS_E_NOMEM, "search allocation %ld of %lu: %d", n, (unsigned long)allocs, rc);
    ts_regex_scratch_free(sc);
  }
  ts_regex_free(re);
}
END_TEST

int main(void) {
  Suite *s = suite_create("regex");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_table);
  tcase_add_test(tc, test_nul_bytes);
  tcase_add_test(tc, test_backtracking_limit);
  tcase_add_test(tc, test_nomem);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
