/*
 * runner.h: the main() of a check test program, in two calls.
 *
 * Every test program under tests/ ends the same way: a suite, a test case with a timeout,
 * the tests, a runner, the count of failures turned into an exit status. These two
 * functions are that shape once:
 *
 *   int main(void) {
 *     Suite *s = suite_create("strbuf");
 *     TCase *tc = ts_test_tcase(s, "core", 0);
 *     tcase_add_test(tc, test_limit);
 *     return ts_test_run(s, 0);
 *   }
 *
 * Output follows check's environment (CK_ENV): CK_VERBOSITY=silent|minimal|normal|verbose
 * (normal when unset), CK_FORK=no to run in one process (for valgrind, gdb).
 */
#ifndef TS_TEST_RUNNER_H
#define TS_TEST_RUNNER_H

#include <check.h>

/* A test case named `name`, added to s, with a timeout of timeout_s seconds (0: check's
 * default: CK_DEFAULT_TIMEOUT, which ctest sets to 60 s, a backstop for a hang; 4 s
 * without it). Tests may be added to it afterwards. */
TCase *ts_test_tcase(Suite *s, const char *name, double timeout_s);

enum {
  TS_TEST_NOFORK = 1 /* every test in this process: they share its state (a crash test
                        that forks its own children, a test that keeps a server up) */
};

/* Runs every test of s (the runner takes it: do not free it) and returns the exit
 * status for main: EXIT_SUCCESS when all passed, EXIT_FAILURE otherwise. flags: 0 or
 * TS_TEST_NOFORK. */
int ts_test_run(Suite *s, int flags);

#endif
