/*
 * run_crash_test.c: `run --resume` finishes a turn cut by SIGKILL, proved by killing.
 *
 * 30 times: a child process runs a thread through the agent loop (agent/run.h) on the
 * recorded-turns backend: turn 1 streams four tool calls (their arguments in pieces,
 * paced like a model, so that calls run while later ones still stream), turn 2 ends the
 * thread. The parent SIGKILLs the child at a random point of that run, then resumes the
 * thread in process, as `toolstream run --resume` does, and checks:
 *   - the resume succeeds, and the thread is finished: every call of turn 1 has exactly
 *     one result, in index order, and both turns' assistant messages are stored, turn 1's
 *     listing the four calls;
 *   - nothing ran twice: the tools log every execution to an fsync'd file, and an ordinary
 *     tool ran at most once (an idempotent one may run again, with its one result);
 *   - a result is the tool's own, or, for an ordinary call caught running, the
 *     "interrupted" error; nothing is left unfinished;
 *   - resuming again changes nothing and succeeds (a finished thread).
 * Kill points: half spread over the measured length of a whole run here, half just after
 * the k-th tool execution read from the child's log, so they land before, inside and
 * after the turn's calls however fast the machine is.
 */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/replay_model.h"
#include "agent/run.h"
#include "store/store.h"
#include "support/crash_tools.h"
#include "support/exec_log.h"
#include "support/runner.h"
#include "support/tempdir.h"
#include "support/test_support.h"
#include "tools/registry.h"

#define CALLS 4
#define ROUNDS 30

static char dir[64], session[96], exec_log[128];

static const char *tool_of(uint32_t i) { return i == 1 ? "idem" : "once"; }

/* turn 1: four calls, each one's arguments in three events; turn 2: text, no call */
static void write_session(void) {
  char buf[8192];
  size_t n = 0;
  for (int i = 0; i < CALLS; i++) {
    n += (size_t)snprintf(buf + n, sizeof buf - n,
                          "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":%d,"
                          "\"id\":\"k%d\",\"type\":\"function\",\"function\":{\"name\":\"%s\","
                          "\"arguments\":\"{\\\"n\\\":\"}}]}}]}\n\n",
                          i, i, tool_of((uint32_t)i));
    n += (size_t)snprintf(buf + n, sizeof buf - n,
                          "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":%d,"
                          "\"function\":{\"arguments\":\"%d\"}}]}}]}\n\n"
                          "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":%d,"
                          "\"function\":{\"arguments\":\"}\"}}]}}]}\n\n",
                          i, i, i);
  }
  snprintf(buf + n, sizeof buf - n,
           "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
           "data: [DONE]\n\n");
  ts_test_put(ts_test_at(session, "turn-1.sse"), buf);
  ts_test_put(ts_test_at(session, "turn-2.sse"),
              "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"done\"}}]}\n\n"
              "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
              "data: [DONE]\n\n");
}

/* The loop as `toolstream run` drives it, with the store's two connections. */
static int run_thread(const char *thread, int resume, ts_agent_stats *st, char *why, size_t cap) {
  ts_store *s = NULL, *ds = NULL;
  if (ts_store_open(dir, &s, why, cap) || ts_store_open(dir, &ds, why, cap)) {
    ts_store_close(s);
    return TS_E_IO;
  }
  ts_registry *reg = ts_test_crash_registry(exec_log);
  ts_replay_model replay = {session, 2000};
  ts_agent_config ac = {.store = s, .dispatch_store = ds, .reg = reg, .thread = thread,
                        .resume = resume, .model = ts_replay_model_backend(&replay),
                        .sink = {.who = "run_crash_test"}};
  int rc = ts_agent_run(&ac, st, why, cap);
  ts_registry_free(reg);
  ts_store_close(s);
  ts_store_close(ds);
  return rc;
}

static void child(const char *thread, unsigned seed) {
  srand(seed);
  char why[512];
  ts_agent_stats st;
  _exit(run_thread(thread, 0, &st, why, sizeof why) == TS_E_OK ? 0 : 80);
}

typedef struct {
  int n[CALLS], err[CALLS];
  char content[CALLS][256];
  int order_ok, last, results;
  char roles[32];
  char first_assistant[1024];
} stored;

static int grab(void *user, const ts_store_message *m) {
  stored *st = user;
  size_t r = strlen(st->roles);
  if (r + 1 < sizeof st->roles) st->roles[r] = "suat"[m->role], st->roles[r + 1] = '\0';
  if (m->role == TS_STORE_ASSISTANT && !st->first_assistant[0])
    snprintf(st->first_assistant, sizeof st->first_assistant, "%s", m->content);
  if (m->role != TS_STORE_TOOL || !m->tool_call_id || m->tool_call_id[0] != 'k') return 0;
  unsigned idx = (unsigned)atoi(m->tool_call_id + 1);
  if (idx >= CALLS) return 0;
  st->n[idx]++;
  st->results++;
  st->err[idx] = m->is_error;
  snprintf(st->content[idx], sizeof st->content[idx], "%s", m->content);
  if ((int)idx != st->last + 1) st->order_ok = 0;
  st->last = (int)idx;
  return 0;
}

static int count_unfinished_cb(void *user, const ts_store_call *c) {
  (void)c;
  (*(int *)user)++;
  return 0;
}

static stored read_thread(const char *thread, int *unfinished) {
  stored sd;
  memset(&sd, 0, sizeof sd);
  sd.order_ok = 1;
  sd.last = -1;
  ts_store *s;
  char why[256];
  ck_assert_msg(ts_store_open(dir, &s, why, sizeof why) == TS_E_OK, "%s", why);
  ts_store_messages(s, thread, 0, grab, &sd);
  *unfinished = 0;
  ts_store_unfinished_calls(s, thread, count_unfinished_cb, unfinished);
  ts_store_close(s);
  return sd;
}

START_TEST(test_resume_finishes_a_killed_turn) {
  ts_test_tempdir(dir, sizeof dir, "runcrash");
  snprintf(session, sizeof session, "%s/session", dir);
  ck_assert_int_eq(mkdir(session, 0755), 0);
  snprintf(exec_log, sizeof exec_log, "%s/exec.log", dir);
  write_session();
  ts_test_crash_seed("run_crash_test", 0x5EED0u);

  /* How long one whole run takes here (machine and sanitizers vary). */
  long span_us = ts_test_crash_span(child);
  ck_assert_msg(span_us > 0, "the probe run failed");
  ts_test_kill_plan plan = {exec_log, span_us, CALLS, 3000};

  int mid_turn = 0, interrupted = 0, reran = 0;
  for (int round = 0; round < ROUNDS; round++) {
    char thread[32];
    snprintf(thread, sizeof thread, "r%d", round);
    ts_test_crash_kill(&plan, round, thread, child);

    int before[CALLS], after[CALLS], left;
    ts_test_log_count(exec_log, thread, before, CALLS);
    stored pre = read_thread(thread, &left);
    if (pre.results > 0 && pre.results < CALLS) mid_turn++;
    else if (left > 0 || (pre.results == CALLS && !strstr(pre.roles, "a"))) mid_turn++;

    /* resume (a kill before the thread was created leaves nothing to resume: run it) */
    ts_store *s;
    char why[512];
    ck_assert_msg(ts_store_open(dir, &s, why, sizeof why) == TS_E_OK, "%s", why);
    int exists = ts_store_thread_exists(s, thread) == 1;
    ts_store_close(s);
    ts_agent_stats ast;
    int rc = run_thread(thread, exists, &ast, why, sizeof why);
    ck_assert_msg(rc == TS_E_OK, "round %d: resume failed (%d): %s", round, rc, why);

    ts_test_log_count(exec_log, thread, after, CALLS);
    stored sd = read_thread(thread, &left);
    ck_assert_msg(left == 0, "round %d: %d calls left unfinished", round, left);
    ck_assert_msg(sd.order_ok && sd.results == CALLS, "round %d: %d results, order %s", round,
                  sd.results, sd.order_ok ? "ok" : "wrong");
    ck_assert_msg(!strcmp(sd.roles, "ttttaa"), "round %d: messages %s", round, sd.roles);
    for (int i = 0; i < CALLS; i++) {
      char id[32];
      snprintf(id, sizeof id, "\"id\":\"k%d\"", i);
      ck_assert_msg(strstr(sd.first_assistant, id), "round %d: turn 1 lists no call %d: %s",
                    round, i, sd.first_assistant);
    }
    for (int i = 0; i < CALLS; i++) {
      const char *tool = tool_of((uint32_t)i);
      ck_assert_msg(sd.n[i] == 1, "round %d call %d: %d results", round, i, sd.n[i]);
      ts_test_crash_check_result(round, thread, (unsigned)i, tool, after[i], sd.err[i],
                                 sd.content[i], &interrupted);
      if (sd.err[i]) /* interrupted: the resume did not run it */
        ck_assert_msg(after[i] == before[i], "round %d call %d", round, i);
      reran += !strcmp(tool, "idem") && after[i] > 1;
    }
    /* a finished thread: resuming it again runs nothing and succeeds */
    rc = run_thread(thread, 1, &ast, why, sizeof why);
    ck_assert_msg(rc == TS_E_OK && ast.turns == 0, "round %d: second resume %d (%u turns): %s",
                  round, rc, ast.turns, why);
    stored again = read_thread(thread, &left);
    ck_assert_str_eq(again.roles, sd.roles);
  }
  ts_test_crash_report("run_crash_test", span_us, ROUNDS, mid_turn, 8, "inside turn 1",
                       interrupted, reran);
  ts_test_rm_rf(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("run_crash");
  TCase *tc = ts_test_tcase(s, "core", 280);
  tcase_add_test(tc, test_resume_finishes_a_killed_turn);
  return ts_test_run(s, TS_TEST_NOFORK);
}
