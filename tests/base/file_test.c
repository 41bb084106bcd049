/*
 * file_test.c: the directory listing of base/file.h (ts_file_list): kept names only, in
 * byte order whatever the order on disk, "." and ".." never, the limit, an unreadable
 * directory, and every allocation failing in turn.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/file.h"
#include "support/runner.h"
#include "support/tempdir.h"
#include "support/test_support.h"

static int json_only(const char *name) {
  size_t l = strlen(name);
  return l > 5 && !strcmp(name + l - 5, ".json");
}

static char dir[256];

static void fill(void) {
  ts_test_tempdir(dir, sizeof dir, "filelist");
  const char *names[] = {"b.json", "a.json", "B.json", "c.txt", "a10.json", "a9.json"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) ts_test_put(ts_test_at(dir, names[i]), "x");
}

START_TEST(test_list) {
  fill();
  char **v = NULL;
  size_t n = 0;
  ck_assert_int_eq(ts_file_list(dir, json_only, 100, &v, &n), TS_E_OK);
  ck_assert_uint_eq(n, 5);
  const char *want[] = {"B.json", "a.json", "a10.json", "a9.json", "b.json"}; /* bytes */
  for (size_t i = 0; i < n; i++) ck_assert_str_eq(v[i], want[i]);
  ts_file_names_free(v, n);
  ck_assert_int_eq(ts_file_list(dir, NULL, 100, &v, &n), TS_E_OK); /* everything */
  ck_assert_uint_eq(n, 6);
  for (size_t i = 0; i < n; i++) ck_assert(strcmp(v[i], ".") && strcmp(v[i], ".."));
  ts_file_names_free(v, n);
  v = NULL;
  ck_assert_int_eq(ts_file_list(dir, json_only, 4, &v, &n), TS_E_LIMIT);
  ck_assert_ptr_null(v);
  errno = 0;
  ck_assert_int_eq(ts_file_list(ts_test_at(dir, "none"), NULL, 100, &v, &n), TS_E_IO);
  ck_assert_int_eq(errno, ENOENT);
  ts_test_rm_rf(dir);
}
END_TEST

START_TEST(test_out_of_memory) {
  fill();
  for (long k = 1; k < 1000; k++) {
    char **v = NULL;
    size_t n = 0;
    ts_test_alloc_fail_after(k);
    int rc = ts_file_list(dir, json_only, 100, &v, &n);
    ts_test_alloc_fail_after(-1);
    ck_assert_msg(rc == TS_E_OK || rc == TS_E_NOMEM, "allocation %ld: %d", k, rc);
    if (rc == TS_E_OK) {
      ck_assert_uint_eq(n, 5);
      ts_file_names_free(v, n);
      ts_test_rm_rf(dir);
      return;
    }
  }
  ck_abort_msg("never succeeded");
}
END_TEST

int main(void) {
  Suite *s = suite_create("file");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_list);
  tcase_add_test(tc, test_out_of_memory);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
