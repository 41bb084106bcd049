/*
 * uri_test.c: tests for runtime/tools/uri.c (RFC 3986 reference resolution).
 *
 * The rows are the examples of RFC 3986 section 5.4 (normal and abnormal), against
 * its base "http://a/b/c/d;p?q", then the cases JSON Schema needs: a document
 * without a base (""), plain-name fragments, and ids relative to a nested $id.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "support/runner.h"
#include "support/test_support.h"
#include "tools/uri.h"

static const struct {
  int line;
  const char *base, *ref, *want;
} rows[] = {
    /* 5.4.1 normal examples */
    {__LINE__, "http://a/b/c/d;p?q", "g:h", "g:h"},
    {__LINE__, "http://a/b/c/d;p?q", "g", "http://a/b/c/g"},
    {__LINE__, "http://a/b/c/d;p?q", "./g", "http://a/b/c/g"},
    {__LINE__, "http://a/b/c/d;p?q", "g/", "http://a/b/c/g/"},
    {__LINE__, "http://a/b/c/d;p?q", "/g", "http://a/g"},
    {__LINE__, "http://a/b/c/d;p?q", "//g", "http://g"},
    {__LINE__, "http://a/b/c/d;p?q", "?y", "http://a/b/c/d;p?y"},
    {__LINE__, "http://a/b/c/d;p?q", "g?y", "http://a/b/c/g?y"},
    {__LINE__, "http://a/b/c/d;p?q", "#s", "http://a/b/c/d;p?q#s"},
    {__LINE__, "http://a/b/c/d;p?q", "g#s", "http://a/b/c/g#s"},
    {__LINE__, "http://a/b/c/d;p?q", "g?y#s", "http://a/b/c/g?y#s"},
    {__LINE__, "http://a/b/c/d;p?q", ";x", "http://a/b/c/;x"},
    {__LINE__, "http://a/b/c/d;p?q", "g;x", "http://a/b/c/g;x"},
    {__LINE__, "http://a/b/c/d;p?q", "g;x?y#s", "http://a/b/c/g;x?y#s"},
    {__LINE__, "http://a/b/c/d;p?q", "", "http://a/b/c/d;p?q"},
    {__LINE__, "http://a/b/c/d;p?q", ".", "http://a/b/c/"},
    {__LINE__, "http://a/b/c/d;p?q", "./", "http://a/b/c/"},
    {__LINE__, "http://a/b/c/d;p?q", "..", "http://a/b/"},
    {__LINE__, "http://a/b/c/d;p?q", "../", "http://a/b/"},
    {__LINE__, "http://a/b/c/d;p?q", "../g", "http://a/b/g"},
    {__LINE__, "http://a/b/c/d;p?q", "../..", "http://a/"},
    {__LINE__, "http://a/b/c/d;p?q", "../../", "http://a/"},
    {__LINE__, "http://a/b/c/d;p?q", "../../g", "http://a/g"},
    /* 5.4.2 abnormal examples */
    {__LINE__, "http://a/b/c/d;p?q", "../../../g", "http://a/g"},
    {__LINE__, "http://a/b/c/d;p?q", "../../../../g", "http://a/g"},
    {__LINE__, "http://a/b/c/d;p?q", "/./g", "http://a/g"},
    {__LINE__, "http://a/b/c/d;p?q", "/../g", "http://a/g"},
    {__LINE__, "http://a/b/c/d;p?q", "g.", "http://a/b/c/g."},
    {__LINE__, "http://a/b/c/d;p?q", ".g", "http://a/b/c/.g"},
    {__LINE__, "http://a/b/c/d;p?q", "g..", "http://a/b/c/g.."},
    {__LINE__, "http://a/b/c/d;p?q", "..g", "http://a/b/c/..g"},
    {__LINE__, "http://a/b/c/d;p?q", "./../g", "http://a/b/g"},
    {__LINE__, "http://a/b/c/d;p?q", "./g/.", "http://a/b/c/g/"},
    {__LINE__, "http://a/b/c/d;p?q", "g/./h", "http://a/b/c/g/h"},
    {__LINE__, "http://a/b/c/d;p?q", "g/../h", "http://a/b/c/h"},
    {__LINE__, "http://a/b/c/d;p?q", "g;x=1/./y", "http://a/b/c/g;x=1/y"},
    {__LINE__, "http://a/b/c/d;p?q", "g;x=1/../y", "http://a/b/c/y"},
    {__LINE__, "http://a/b/c/d;p?q", "g?y/./x", "http://a/b/c/g?y/./x"},
    {__LINE__, "http://a/b/c/d;p?q", "g?y/../x", "http://a/b/c/g?y/../x"},
    {__LINE__, "http://a/b/c/d;p?q", "g#s/./x", "http://a/b/c/g#s/./x"},
    {__LINE__, "http://a/b/c/d;p?q", "g#s/../x", "http://a/b/c/g#s/../x"},
    {__LINE__, "http://a/b/c/d;p?q", "http:g", "http:g"},
    /* what JSON Schema needs */
    {__LINE__, "", "#/definitions/a", "#/definitions/a"},
    {__LINE__, "", "#", "#"},
    {__LINE__, "", "", ""},
    {__LINE__, "http://localhost:1234/tree", "node", "http://localhost:1234/node"},
    {__LINE__, "http://x.test/root.json", "#foo", "http://x.test/root.json#foo"},
    {__LINE__, "http://x.test/a/b.json", "c/d.json#/x", "http://x.test/a/c/d.json#/x"},
    {__LINE__, "http://x.test", "y", "http://x.test/y"},
    {__LINE__, "urn:example:s", "#a", "urn:example:s#a"},
};

START_TEST(test_resolve_table) {
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    char *out = NULL;
    size_t n = 0;
    ck_assert_int_eq(ts_uri_resolve(rows[i].base, strlen(rows[i].base), rows[i].ref,
                                    strlen(rows[i].ref), &out, &n),
                     TS_E_OK);
    ck_assert_msg(strcmp(out, rows[i].want) == 0 && n == strlen(out),
                  "line %d: %s + %s = %s, want %s", rows[i].line, rows[i].base, rows[i].ref, out,
                  rows[i].want);
    free(out);
  }
}
END_TEST

START_TEST(test_strip_fragment) {
  ck_assert_uint_eq(ts_uri_strip_fragment("a#b", 3), 1);
  ck_assert_uint_eq(ts_uri_strip_fragment("ab", 2), 2);
  ck_assert_uint_eq(ts_uri_strip_fragment("", 0), 0);
  ck_assert_uint_eq(ts_uri_strip_fragment("#", 1), 0);
}
END_TEST

START_TEST(test_nomem) {
  for (long n = 1; n <= 3; n++) {
    char *out = NULL;
    size_t len = 0;
    ts_test_alloc_fail_after(n);
    int rc = ts_uri_resolve("http://a/b", 10, "c", 1, &out, &len);
    ts_test_alloc_fail_after(-1);
    ck_assert_int_eq(rc, TS_E_NOMEM);
    ck_assert_ptr_null(out);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("uri");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_resolve_table);
  tcase_add_test(tc, test_strip_fragment);
  tcase_add_test(tc, test_nomem);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
