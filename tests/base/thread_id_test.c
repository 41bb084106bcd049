/*
 * thread_id_test.c: the one thread-id rule and fresh ids (base/thread_id.h).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/thread_id.h"
#include "support/runner.h"

typedef struct {
  int line;
  const char *label;
  const char *id;
  size_t len; /* 0: strlen(id) */
  int want;
} row;

static char at_limit[TS_THREAD_ID_MAX + 2];

static const row rows[] = {
    {__LINE__, "one byte", "t", 0, 1},
    {__LINE__, "a generated shape", "th_0123456789abcdef", 0, 1},
    {__LINE__, "punctuation and slashes", "org/team:run-7.a_b", 0, 1},
    {__LINE__, "UTF-8 bytes are allowed", "caf\xc3\xa9", 0, 1},
    {__LINE__, "empty", "", 0, 0},
    {__LINE__, "a space (ends the id on the bus)", "a b", 0, 0},
    {__LINE__, "a leading space", " a", 0, 0},
    {__LINE__, "a tab", "a\tb", 0, 0},
    {__LINE__, "a newline", "a\n", 0, 0},
    {__LINE__, "a NUL inside", "a\0b", 3, 0},
    {__LINE__, "control 0x1f", "a\x1f", 0, 0},
    {__LINE__, "DEL", "a\x7f", 0, 0},
};

START_TEST(test_rows) {
  const row *r = &rows[_i];
  size_t len = r->len ? r->len : strlen(r->id);
  ck_assert_msg(ts_thread_id_valid(r->id, len) == r->want, "line %d (%s): want %d", r->line,
                r->label, r->want);
}
END_TEST

START_TEST(test_limit) {
  memset(at_limit, 'x', sizeof at_limit);
  ck_assert_int_eq(ts_thread_id_valid(at_limit, TS_THREAD_ID_MAX), 1);
  ck_assert_int_eq(ts_thread_id_valid(at_limit, TS_THREAD_ID_MAX + 1), 0);
  ck_assert_int_eq(ts_thread_id_valid(NULL, 3), 0);
}
END_TEST

START_TEST(test_new) {
  char a[TS_THREAD_ID_GEN_LEN + 1], b[TS_THREAD_ID_GEN_LEN + 1];
  ck_assert_int_eq(ts_thread_id_new(a, sizeof a), TS_E_OK);
  ck_assert_int_eq(ts_thread_id_new(b, sizeof b), TS_E_OK);
  ck_assert_uint_eq(strlen(a), TS_THREAD_ID_GEN_LEN);
  ck_assert(!strncmp(a, "th_", 3));
  for (size_t i = 3; i < TS_THREAD_ID_GEN_LEN; i++)
    ck_assert_msg(strchr("0123456789abcdef", a[i]), "%s: not lowercase hex", a);
  ck_assert_int_eq(ts_thread_id_valid(a, strlen(a)), 1);
  ck_assert_str_ne(a, b); /* 64 random bits: equal only by a broken source */
  char small[TS_THREAD_ID_GEN_LEN];
  memset(small, '#', sizeof small);
  ck_assert_int_eq(ts_thread_id_new(small, sizeof small), TS_E_INVAL);
  ck_assert_int_eq(small[0], '#'); /* nothing written */
  ck_assert_int_eq(ts_thread_id_new(NULL, 64), TS_E_INVAL);
}
END_TEST

int main(void) {
  Suite *s = suite_create("thread_id");
  TCase *tc = tcase_create("core");
  tcase_add_loop_test(tc, test_rows, 0, (int)(sizeof rows / sizeof rows[0]));
  tcase_add_test(tc, test_limit);
  tcase_add_test(tc, test_new);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
