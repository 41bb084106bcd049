/*
 * dispatch_crash_test.c: crash safety, proved by killing.
 *
 * 50 times: a child process dispatches a turn of several tool calls (a mix of ordinary
 * and idempotent tools) against the durable store, and the parent SIGKILLs it at a
 * random moment. Tools log every execution to a file (fsync'd before they return), and
 * the child logs every result the dispatcher reported committed. After each kill the
 * parent reopens the store, resumes the thread, and checks:
 *   - every result committed before the kill is intact (the exact content, not an error);
 *   - no call ran twice unrecorded: an ordinary tool ran at most once, and every execution
 *     of any tool is accounted for by a stored result;
 *   - a call caught in flight was resolved on resume: an "interrupted" error result for an
 *     ordinary tool, a re-run for an idempotent one; nothing is left unfinished;
 *   - results exist for a prefix of the calls, in index order, one per call.
 */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tools/dispatch.h"
#include "store/store.h"
#include "support/crash_tools.h"
#include "support/exec_log.h"
#include "support/runner.h"
#include "support/tempdir.h"
#include "support/test_support.h"
#include "tools/registry.h"

#define CALLS 6
#define ROUNDS 50

static char dir[64], exec_log[128], commit_log[128];

static const char *tool_of(uint32_t i) { return i % 3 == 1 ? "idem" : "once"; }

static void on_committed(void *user, const ts_event *eb) {
  const ts_tap_event *ev = &eb->body;
  if (ev->type != TS_EVENT_TOOL_RESULT) return;
  char line[128];
  snprintf(line, sizeof line, "%s %u\n", (const char *)user, ev->index);
  ts_test_log_append(commit_log, line);
}

static void child(const char *thread, unsigned seed) {
  srand(seed);
  ts_store *s;
  char why[256];
  if (ts_store_open(dir, &s, why, sizeof why)) _exit(80);
  if (ts_store_thread_create(s, thread, NULL)) _exit(81);
  ts_registry *reg = ts_test_crash_registry(exec_log);
  ts_dispatch_config cfg = {.store = s, .reg = reg, .thread = thread, .turn = 1,
                            .on_event = on_committed, .user = (void *)thread, .pipelined = 1};
  ts_dispatch *d = NULL;
  if (ts_dispatch_new(&d, &cfg) != TS_E_OK) _exit(82);
  for (uint32_t i = 0; i < CALLS; i++) {
    ts_tap_event e;
    memset(&e, 0, sizeof e);
    e.type = TS_TAP_TOOL_CALL_READY;
    e.is_call = 1;
    e.index = i;
    char id[16];
    snprintf(id, sizeof id, "c%u", i);
    e.call_id = (ts_view){id, strlen(id)};
    e.tool = (ts_view){tool_of(i), 4};
    e.arguments = (ts_view){"{}", 2};
    ts_dispatch_tap_event(d, &e);
  }
  if (ts_dispatch_finish(d)) _exit(83);
  _exit(0);
}

typedef struct {
  int n[CALLS];
  int err[CALLS];
  char content[CALLS][256];
  int order_ok;
  int last;
} stored;

static int grab(void *user, const ts_store_message *m) {
  stored *st = user;
  if (m->role != TS_STORE_TOOL || !m->tool_call_id) return 0;
  unsigned idx = (unsigned)atoi(m->tool_call_id + 1);
  if (idx >= CALLS) return 0;
  st->n[idx]++;
  st->err[idx] = m->is_error;
  snprintf(st->content[idx], sizeof st->content[idx], "%s", m->content);
  if ((int)idx != st->last + 1) st->order_ok = 0;
  st->last = (int)idx;
  return 0;
}

static int count_unfinished(void *user, const ts_store_call *c) {
  (void)c;
  (*(int *)user)++;
  return 0;
}

START_TEST(test_sigkill_at_random_points) {
  ts_test_tempdir(dir, sizeof dir, "crash");
  snprintf(exec_log, sizeof exec_log, "%s/exec.log", dir);
  snprintf(commit_log, sizeof commit_log, "%s/commit.log", dir);
  ts_test_crash_seed("dispatch_crash_test", 0xC0FFEEu);
  int killed_mid = 0, interrupted = 0, reran = 0;
  ts_registry *reg = ts_test_crash_registry(exec_log);
  /* How long one whole turn takes here (machine and sanitizers vary): even rounds' kills
   * are spread over that span, odd rounds' come just after the k-th tool execution, so
   * they land before, during and after the calls (support/crash_tools.h). */
  long span_us = ts_test_crash_span(child);
  ck_assert_msg(span_us > 0, "the probe turn failed");
  ts_test_kill_plan plan = {exec_log, span_us, CALLS - 1, 2000};
  for (int round = 0; round < ROUNDS; round++) {
    char thread[32];
    snprintf(thread, sizeof thread, "r%d", round);
    ts_test_crash_kill(&plan, round, thread, child);

    ts_store *s;
    char why[256];
    ck_assert_msg(ts_store_open(dir, &s, why, sizeof why) == TS_E_OK, "round %d: %s", round, why);
    int committed[CALLS], before_exec[CALLS], after_exec[CALLS];
    ts_test_log_count(commit_log, thread, committed, CALLS);
    ts_test_log_count(exec_log, thread, before_exec, CALLS);
    int exists = ts_store_thread_exists(s, thread) == 1;
    uint32_t resolved = 0;
    if (exists) {
      ck_assert_int_eq(ts_dispatch_resume(s, reg, thread, NULL, NULL, &resolved), TS_E_OK);
    }
    ts_test_log_count(exec_log, thread, after_exec, CALLS);
    stored sd;
    memset(&sd, 0, sizeof sd);
    sd.order_ok = 1;
    sd.last = -1;
    if (exists) ts_store_messages(s, thread, 0, grab, &sd);
    int left = 0;
    if (exists) ts_store_unfinished_calls(s, thread, count_unfinished, &left);
    ck_assert_msg(left == 0, "round %d: %d calls left unfinished after resume", round, left);
    ck_assert_msg(sd.order_ok, "round %d: results not a prefix in index order", round);
    int results = 0;
    for (int i = 0; i < CALLS; i++) {
      char want[64];
      ts_test_crash_result(want, sizeof want, (unsigned)i, thread);
      ck_assert_msg(sd.n[i] <= 1, "round %d call %d: %d results", round, i, sd.n[i]);
      results += sd.n[i];
      if (committed[i]) /* committed before the kill: intact */
        ck_assert_msg(sd.n[i] == 1 && !sd.err[i] && !strcmp(sd.content[i], want),
                      "round %d call %d: committed result lost or changed: '%s'", round, i,
                      sd.content[i]);
      /* every execution is accounted for by a result; a call the kill came before may
       * have none (results are a prefix) */
      ck_assert_msg(!after_exec[i] || sd.n[i] == 1, "round %d call %d: ran, no result", round, i);
      if (sd.n[i])
        ts_test_crash_check_result(round, thread, (unsigned)i, tool_of((uint32_t)i),
                                   after_exec[i], sd.err[i], sd.content[i], &interrupted);
      reran += !strcmp(tool_of((uint32_t)i), "idem") && after_exec[i] > before_exec[i];
    }
    if (results > 0 && results < CALLS) killed_mid++;
    ts_store_close(s);
  }
  ts_registry_free(reg);
  ts_test_crash_report("dispatch_crash_test", span_us, ROUNDS, killed_mid, 10, "mid-turn",
                       interrupted, reran);
  ts_test_rm_rf(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("dispatch_crash");
  TCase *tc = ts_test_tcase(s, "core", 240);
  tcase_add_test(tc, test_sigkill_at_random_points);
  return ts_test_run(s, TS_TEST_NOFORK);
}
