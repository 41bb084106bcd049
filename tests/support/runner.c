/*
 * runner.c (support): see runner.h.
 */
#include "support/runner.h"

#include <stdlib.h>

TCase *ts_test_tcase(Suite *s, const char *name, double timeout_s) {
  TCase *tc = tcase_create(name);
  if (timeout_s > 0) tcase_set_timeout(tc, timeout_s);
  suite_add_tcase(s, tc);
  return tc;
}

int ts_test_run(Suite *s, int flags) {
  SRunner *sr = srunner_create(s);
  if (flags & TS_TEST_NOFORK) srunner_set_fork_status(sr, CK_NOFORK);
  srunner_run_all(sr, CK_ENV);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
