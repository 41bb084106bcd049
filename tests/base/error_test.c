/*
 * error_test.c: the one error table (base/error.h).
 *
 * Every code is negative (ok is 0) and unique, every name unique snake_case, every
 * message one non-empty line; a code outside the table is "unknown", never NULL.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "support/runner.h"

static const struct {
  int code;
  const char *name, *message;
} table[] = {
#define TS_X(c, v, n, m) {v, n, m},
    TS_ERROR_TABLE(TS_X)
#undef TS_X
};
#define N (sizeof table / sizeof table[0])

START_TEST(test_table) {
  ck_assert_int_eq(table[0].code, 0);
  ck_assert_str_eq(table[0].name, "ok");
  for (size_t i = 0; i < N; i++) {
    ck_assert_msg(i == 0 || table[i].code < 0, "%s: code %d is not negative", table[i].name,
                  table[i].code);
    ck_assert_str_eq(ts_err_name(table[i].code), table[i].name);
    ck_assert_str_eq(ts_err_message(table[i].code), table[i].message);
    ck_assert_msg(table[i].message[0] && !strchr(table[i].message, '\n'), "%s: message",
                  table[i].name);
    for (const char *c = table[i].name; *c; c++)
      ck_assert_msg((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_',
                    "%s is not snake_case", table[i].name);
    for (size_t k = 0; k < i; k++) {
      ck_assert_msg(table[k].code != table[i].code, "%s and %s share code %d", table[k].name,
                    table[i].name, table[i].code);
      ck_assert_msg(strcmp(table[k].name, table[i].name), "name %s twice", table[i].name);
    }
  }
}
END_TEST

START_TEST(test_unknown) {
  static const int outside[] = {1, 42, -99999, -1000000, 2147483647};
  for (size_t i = 0; i < sizeof outside / sizeof outside[0]; i++) {
    int in_table = 0;
    for (size_t k = 0; k < N; k++) in_table |= table[k].code == outside[i];
    if (in_table) continue;
    ck_assert_str_eq(ts_err_name(outside[i]), "unknown");
    ck_assert_ptr_nonnull(ts_err_message(outside[i]));
    ck_assert(ts_err_message(outside[i])[0]);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("error");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_table);
  tcase_add_test(tc, test_unknown);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
