/*
 * subagents_crash_test.c: a tree of threads killed with SIGKILL, then resumed.
 *
 * 30 times: a child process runs a coordinator thread rN whose side relates to a blocking
 * `research` agent and a non-blocking `write` agent (agent/subagents.h), all on recorded
 * turns paced like a model:
 *   rN turn 1: subagent_create research "alpha" (the call waits for alpha's outcome);
 *   rN turn 2: subagent_create write "beta" (beta runs beside), then `once` and `idem`;
 *   then text: rN waits for beta, whose outcome arrives as a message, and answers it.
 *   alpha, beta turn 1: once, idem, once; turn 2: text.
 * The test SIGKILLs the process at a random point (support/crash_tools.h: spread over a
 * run, or just after the k-th tool execution anywhere in the tree), resumes rN in process
 * as `toolstream run --resume` does, and checks every thread of the tree:
 *   - nothing is left unfinished, every call has exactly one result, in (turn, index) order;
 *   - an ordinary tool ran at most once (tools log each execution, fsync'd); a result is the
 *     tool's own, or for an ordinary call caught running the "interrupted" error;
 *   - rN has exactly two children, each got its first message once and ended with a reply;
 *     alpha's outcome is rN's first call's result; beta's outcome reached rN exactly once,
 *     as a message naming the instance, and rN answered it;
 *   - resuming again changes nothing.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/replay_model.h"
#include "agent/run.h"
#include "agent/subagents.h"
#include "base/strbuf.h"
#include "store/store.h"
#include "support/crash_tools.h"
#include "support/exec_log.h"
#include "support/runner.h"
#include "support/sse_text.h"
#include "support/tempdir.h"
#include "support/test_support.h"

#define ROUNDS 30
#define RATE 2000

static char dir[64], data[128], session[128], exec_log[160];

static char dirs[3][200];
static ts_replay_model models[3];

static int run_child(void *user, const ts_agent_config *child, char *why, size_t cap) {
  (void)user;
  ts_agent_config cc = *child;
  cc.model = ts_replay_model_backend(&models[!strcmp(child->agent, "writer") ? 2 : 1]);
  return ts_agent_run(&cc, NULL, why, cap);
}

static ts_defs_subagent rels[2] = {
    {.agent = "researcher", .name = "research", .blocking = 1},
    {.agent = "writer", .name = "write", .blocking = 0},
};
static ts_defs_side side = {.prompt = "coord", .subagents = rels, .n_subagents = 2};
static ts_defs_agent agent = {.name = "coordinator"};

static int run_tree(const char *thread, int resume, ts_agent_stats *st, char *why, size_t cap) {
  ts_store *s = NULL, *ds = NULL;
  if (ts_store_open(data, &s, why, cap) || ts_store_open(data, &ds, why, cap)) {
    ts_store_close(s);
    return TS_E_IO;
  }
  ts_registry *reg = ts_test_crash_registry(exec_log);
  char ws[256];
  snprintf(ws, sizeof ws, "%s/ws-%s", dir, thread);
  mkdir(ws, 0755);
  ts_agent_config ac = {.store = s, .dispatch_store = ds, .reg = reg, .thread = thread,
                        .resume = resume, .prompt = resume ? NULL : "coordinate",
                        .model = ts_replay_model_backend(&models[0]), .workspace = ws,
                        .sink = {.who = "subagents_crash_test", .no_time = 1}};
  ts_subagents_runner runner = {run_child, NULL};
  int rc = ts_subagents_add_tools(reg, NULL, &agent, &side, &ac, &runner, why, cap);
  if (!rc) rc = ts_agent_run(&ac, st, why, cap);
  ts_registry_free(reg);
  ts_store_close(s);
  ts_store_close(ds);
  return rc;
}

static void child(const char *thread, unsigned seed) {
  srand(seed);
  char why[512];
  ts_agent_stats st;
  _exit(run_tree(thread, 0, &st, why, sizeof why) == TS_E_OK ? 0 : 80);
}

/* What one thread's messages say. */
typedef struct {
  ts_buf all;
  int results, order_ok, users, outcome_msgs, last_role;
  int last_turn, last_idx;
  char res[8][1024];
  char res_id[8][64];
  int res_err[8];
  const char *outcome_of; /* the instance whose outcome messages are counted */
} seen;

static int see(void *user, const ts_store_message *m) {
  seen *v = user;
  ts_buf_puts(&v->all, ts_store_role_name(m->role));
  ts_buf_putc(&v->all, '=');
  ts_buf_append(&v->all, m->content, m->content_len);
  ts_buf_putc(&v->all, '\n');
  v->last_role = (int)m->role;
  if (m->role == TS_STORE_USER) {
    v->users++;
    char needle[128];
    if (v->outcome_of) {
      snprintf(needle, sizeof needle, "\"id\":\"%s\"", v->outcome_of);
      if (strstr(m->content, needle)) v->outcome_msgs++;
    }
  }
  if (m->role == TS_STORE_TOOL && m->tool_call_id) {
    /* ids are WHO_TURN_INDEX: results must come in (turn, index) order, once each */
    const char *u = strchr(m->tool_call_id, '_');
    int t = u ? atoi(u + 1) : -1;
    const char *u2 = u ? strchr(u + 1, '_') : NULL;
    int i = u2 ? atoi(u2 + 1) : -1;
    if (t < v->last_turn || (t == v->last_turn && i <= v->last_idx)) v->order_ok = 0;
    v->last_turn = t, v->last_idx = i;
    if (v->results < 8) {
      snprintf(v->res[v->results], sizeof v->res[0], "%s", m->content);
      snprintf(v->res_id[v->results], sizeof v->res_id[0], "%s", m->tool_call_id);
      v->res_err[v->results] = m->is_error;
    }
    v->results++;
  }
  return 0;
}

static int count_cb(void *user, const ts_store_call *c) {
  (void)c;
  (*(int *)user)++;
  return 0;
}

static int count_sub(void *user, const ts_store_subagent *a) {
  (void)a;
  (*(int *)user)++;
  return 0;
}

static void read_thread(ts_store *s, const char *thread, const char *outcome_of, seen *v,
                        int *unfinished) {
  memset(v, 0, sizeof *v);
  ts_buf_init(&v->all, 1 << 22);
  v->order_ok = 1;
  v->outcome_of = outcome_of;
  ts_store_messages(s, thread, 0, see, v);
  *unfinished = 0;
  ts_store_unfinished_calls(s, thread, count_cb, unfinished);
}

/* The k-th result of v, of call `index` of `thread` made to crash tool `tool`. */
static void check_tool_result(int round, const char *thread, const seen *v, int k, int index,
                              const char *tool, int ran, int *interrupted) {
  ts_test_crash_check_result(round, thread, (unsigned)index, tool, ran, v->res_err[k], v->res[k],
                             interrupted);
}

START_TEST(test_tree_survives_sigkill) {
  ts_test_tempdir(dir, sizeof dir, "subcrash");
  snprintf(data, sizeof data, "%s/data", dir);
  snprintf(session, sizeof session, "%s/session", dir);
  snprintf(exec_log, sizeof exec_log, "%s/exec.log", dir);
  ck_assert_int_eq(mkdir(session, 0755), 0);
  const char *t1[] = {"subagent_create",
                      "{\"agent\":\"research\",\"name\":\"alpha\",\"message\":\"a\"}"};
  const char *t2[] = {"subagent_create", "{\"agent\":\"write\",\"name\":\"beta\",\"message\":\"b\"}",
                      "once", "{\"n\":1}", "idem", "{\"n\":2}"};
  const char *kid[] = {"once", "{\"n\":0}", "idem", "{\"n\":1}", "once", "{\"n\":2}"};
  ts_test_chat_turn(session, "coord", 1, t1, 1, NULL);
  ts_test_chat_turn(session, "coord", 2, t2, 3, NULL);
  for (int n = 3; n <= 9; n++) ts_test_chat_turn(session, "coord", n, NULL, 0, "noted");
  ts_test_chat_turn(session, "researcher", 1, kid, 3, NULL);
  ts_test_chat_turn(session, "writer", 1, kid, 3, NULL);
  for (int n = 2; n <= 5; n++) {
    ts_test_chat_turn(session, "researcher", n, NULL, 0, "alpha done");
    ts_test_chat_turn(session, "writer", n, NULL, 0, "beta done");
  }
  const char *who[3] = {"coord", "researcher", "writer"};
  for (int i = 0; i < 3; i++) {
    snprintf(dirs[i], sizeof dirs[i], "%s/%s", session, who[i]);
    models[i] = (ts_replay_model){dirs[i], RATE};
  }
  ts_test_crash_seed("subagents_crash_test", 0x7EE5u);
  long span_us = ts_test_crash_span(child);
  ck_assert_msg(span_us > 0, "the probe run failed");
  ts_test_kill_plan plan = {exec_log, span_us, 8, 3000};

  int mid = 0, interrupted = 0;
  for (int round = 0; round < ROUNDS; round++) {
    char thread[32], alpha[64], beta[64];
    snprintf(thread, sizeof thread, "r%d", round);
    snprintf(alpha, sizeof alpha, "%s/t1c0", thread);
    snprintf(beta, sizeof beta, "%s/t2c0", thread);
    ts_test_crash_kill(&plan, round, thread, child);
    int ran_before = ts_test_log_total(exec_log, thread);
    if (ran_before > 0 && ran_before < 8) mid++;

    ts_store *s;
    char why[1024];
    ck_assert_msg(ts_store_open(data, &s, why, sizeof why) == TS_E_OK, "%s", why);
    int exists = ts_store_thread_exists(s, thread) == 1;
    ts_store_close(s);
    ts_agent_stats ast;
    int rc = run_tree(thread, exists, &ast, why, sizeof why);
    ck_assert_msg(rc == TS_E_OK, "round %d: resume failed (%d): %s", round, rc, why);

    ck_assert_msg(ts_store_open(data, &s, why, sizeof why) == TS_E_OK, "%s", why);
    int kids = 0;
    ts_store_subagents(s, thread, count_sub, &kids);
    ck_assert_msg(kids == 2, "round %d: %d children", round, kids);
    /* the coordinator */
    seen p;
    int left;
    read_thread(s, thread, beta, &p, &left);
    ck_assert_msg(left == 0, "round %d: %d calls of %s unfinished", round, left, thread);
    ck_assert_msg(p.order_ok && p.results == 4, "round %d: %s: %d results, order %s:\n%s", round,
                  thread, p.results, p.order_ok ? "ok" : "wrong", p.all.p);
    ck_assert_msg(!p.res_err[0] && strstr(p.res[0], alpha) && strstr(p.res[0], "\"status\":\"done\"") &&
                      strstr(p.res[0], "alpha done"),
                  "round %d: alpha's outcome: %s", round, p.res[0]);
    /* "done" when the call was run again after beta had ended and reported (its outcome
     * still comes once, as a message) */
    ck_assert_msg(!p.res_err[1] && strstr(p.res[1], beta) &&
                      (strstr(p.res[1], "\"status\":\"running\"") ||
                       strstr(p.res[1], "\"status\":\"done\"")),
                  "round %d: beta's creation: %s", round, p.res[1]);
    int counts[3];
    ts_test_log_count(exec_log, thread, counts, 3);
    check_tool_result(round, thread, &p, 2, 1, "once", counts[1], &interrupted);
    check_tool_result(round, thread, &p, 3, 2, "idem", counts[2], &interrupted);
    ck_assert_msg(p.outcome_msgs == 1, "round %d: beta's outcome reached %s %d times:\n%s", round,
                  thread, p.outcome_msgs, p.all.p);
    ck_assert_msg(p.last_role == TS_STORE_ASSISTANT, "round %d: %s ends unanswered:\n%s", round,
                  thread, p.all.p);
    /* the children */
    const char *kids_ids[2] = {alpha, beta};
    for (int k = 0; k < 2; k++) {
      seen c;
      read_thread(s, kids_ids[k], NULL, &c, &left);
      ck_assert_msg(left == 0, "round %d: %s: %d unfinished", round, kids_ids[k], left);
      ck_assert_msg(c.order_ok && c.results == 3, "round %d: %s: %d results:\n%s", round,
                    kids_ids[k], c.results, c.all.p);
      ck_assert_msg(c.users == 1, "round %d: %s got %d messages:\n%s", round, kids_ids[k],
                    c.users, c.all.p);
      ck_assert_msg(c.last_role == TS_STORE_ASSISTANT, "round %d: %s:\n%s", round, kids_ids[k],
                    c.all.p);
      ts_test_log_count(exec_log, kids_ids[k], counts, 3);
      check_tool_result(round, kids_ids[k], &c, 0, 0, "once", counts[0], &interrupted);
      check_tool_result(round, kids_ids[k], &c, 1, 1, "idem", counts[1], &interrupted);
      check_tool_result(round, kids_ids[k], &c, 2, 2, "once", counts[2], &interrupted);
      ts_buf_fini(&c.all);
    }
    ts_store_close(s);
    /* finished: resuming again changes nothing anywhere */
    rc = run_tree(thread, 1, &ast, why, sizeof why);
    ck_assert_msg(rc == TS_E_OK && ast.turns == 0, "round %d: second resume %d (%u turns): %s",
                  round, rc, ast.turns, why);
    ck_assert_msg(ts_store_open(data, &s, why, sizeof why) == TS_E_OK, "%s", why);
    seen again;
    read_thread(s, thread, beta, &again, &left);
    ck_assert_str_eq(again.all.p, p.all.p);
    ts_buf_fini(&again.all);
    ts_buf_fini(&p.all);
    ts_store_close(s);
  }
  ts_test_crash_report("subagents_crash_test", span_us, ROUNDS, mid, 8, "inside the tree's calls",
                       interrupted, -1);
  ts_test_rm_rf(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("subagents_crash");
  TCase *tc = ts_test_tcase(s, "core", 280);
  tcase_add_test(tc, test_tree_survives_sigkill);
  return ts_test_run(s, TS_TEST_NOFORK);
}
