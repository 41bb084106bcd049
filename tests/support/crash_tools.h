/*
 * crash_tools.h: the tools of the crash tests (tests/runtime/tools/dispatch_crash_test.c,
 * tests/runtime/agent/run_crash_test.c).
 *
 * Header only, with static inline functions: the tools need the tools room, which not every
 * test program links, so they cannot live in a support .c file (those go into all).
 *
 * Two tools that do the same: "once", an ordinary tool, and "idem", declared idempotent
 * (a resume may run it again). Each logs its execution ("THREAD INDEX", fsync'd:
 * support/exec_log.h) to the log path given to ts_test_crash_registry, sleeps 0-2 ms
 * (rand()) so that kills land inside tools too, and returns {"i":INDEX,"t":"THREAD"}
 * (ts_test_crash_result gives the same text, for comparison).
 *
 * The kill loop the crash tests share: ts_test_crash_seed seeds rand() (TS_TEST_SEED
 * replays a run), ts_test_crash_span measures one whole run of the child here (machines
 * and sanitizers vary), and ts_test_crash_kill forks the child for one round and SIGKILLs
 * it: on even rounds at a random point of that span, on odd rounds just after the k-th
 * tool execution read from the log (of the thread and its subtree), so the kills land
 * before, inside and after the calls however fast the machine is. After the resume,
 * ts_test_crash_check_result checks each call's result against what the log says ran,
 * and ts_test_crash_report ends the test: one line of what the kills hit, and the check
 * that enough of them landed where they mean something.
 */
#ifndef TS_TEST_CRASH_TOOLS_H
#define TS_TEST_CRASH_TOOLS_H

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support/exec_log.h"
#include "tools/registry.h"

static inline int ts_test_crash_result(char *buf, size_t cap, unsigned index, const char *thread) {
  return snprintf(buf, cap, "{\"i\":%u,\"t\":\"%s\"}", index, thread);
}

static inline void ts_test_crash_tool(void *user, const ts_call_info *call, const char *args,
                               size_t len, ts_tool_result *out) {
  (void)args, (void)len;
  char line[128];
  snprintf(line, sizeof line, "%s %u\n", call->thread, call->index);
  ts_test_log_append(user, line);
  struct timespec ts = {0, (long)(rand() % 3) * 1000000L};
  nanosleep(&ts, NULL);
  char res[64];
  int n = ts_test_crash_result(res, sizeof res, call->index, call->thread);
  ts_tool_result_json(out, res, (size_t)n);
}

/* A registry with "once" and "idem" logging to `exec_log` (not copied: must outlive it). */
static inline ts_registry *ts_test_crash_registry(const char *exec_log) {
  ts_registry *r = ts_registry_new();
  char why[128];
  ts_tool_spec a = {.name = "once", .execute = ts_test_crash_tool, .user = (void *)exec_log};
  ts_tool_spec b = {.name = "idem", .idempotent = 1, .execute = ts_test_crash_tool,
                    .user = (void *)exec_log};
  if (!r || ts_registry_add(r, &a, why, sizeof why) || ts_registry_add(r, &b, why, sizeof why))
    abort();
  return r;
}

/* Seeds rand() with TS_TEST_SEED (any C base) or else `dflt`, and prints which, so a
 * failing run can be replayed. */
static inline void ts_test_crash_seed(const char *test, unsigned dflt) {
  const char *env = getenv("TS_TEST_SEED");
  unsigned seed = env ? (unsigned)strtoul(env, NULL, 0) : dflt;
  srand(seed);
  printf("%s: seed 0x%x (set TS_TEST_SEED to change)\n", test, seed);
}

/* The process a crash test kills: runs `thread` with rand() seeded by `seed`, then _exit()s
 * (0 when the run succeeded). */
typedef void (*ts_test_crash_child_fn)(const char *thread, unsigned seed);

/* How long one whole run of `child` ("probe", seed 1) takes here, in µs (at least 1000);
 * -1 when the probe did not exit 0. */
static inline long ts_test_crash_span(ts_test_crash_child_fn child) {
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) child("probe", 1);
  int st;
  waitpid(pid, &st, 0);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return -1;
  long us = (t1.tv_sec - t0.tv_sec) * 1000000L + (t1.tv_nsec - t0.tv_nsec) / 1000L;
  return us < 1000 ? 1000 : us;
}

typedef struct {
  const char *exec_log; /* NULL: every round kills at a random point of the span */
  long span_us;         /* ts_test_crash_span */
  int max_k;    /* odd rounds: after the k-th execution, k = 1..max_k ... */
  long after_us; /* ... plus up to this long */
} ts_test_kill_plan;

/* One round: forks child(thread, rand()), kills it (see the top of this file), reaps it.
 * A child that ended by itself must have exited 0 (the test fails otherwise). Returns its
 * wait status. */
static inline int ts_test_crash_kill(const ts_test_kill_plan *p, int round, const char *thread,
                                     ts_test_crash_child_fn child) {
  unsigned seed = (unsigned)rand();
  long delay_us = rand() % p->span_us;
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) abort();
  if (pid == 0) child(thread, seed);
  int st = 0, reaped = 0;
  if (round % 2 && p->exec_log) {
    int k = 1 + rand() % p->max_k;
    for (int waited = 0; waited < 50000; waited++) {
      if (ts_test_log_total(p->exec_log, thread) >= k) break;
      if (waitpid(pid, &st, WNOHANG) == pid) {
        reaped = 1;
        break;
      }
      struct timespec ps = {0, 200000L};
      nanosleep(&ps, NULL);
    }
    delay_us = rand() % p->after_us;
  }
  struct timespec d = {delay_us / 1000000L, (delay_us % 1000000L) * 1000L};
  nanosleep(&d, NULL);
  if (!reaped) {
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
  }
  ck_assert_msg(!WIFEXITED(st) || WEXITSTATUS(st) == 0, "round %d: child failed with %d", round,
                WEXITSTATUS(st));
  return st;
}

/* The result of call `index` of `thread`, stored after the resume (is_error, content), of
 * the crash tool `tool` that the log says ran `ran` times in all: an ordinary tool ("once")
 * ran at most once, and has its own result after one run or, caught running, the
 * "interrupted" error (counted in *interrupted); an idempotent one ("idem") ran and has
 * its own result. */
static inline void ts_test_crash_check_result(int round, const char *thread, unsigned index,
                                              const char *tool, int ran, int is_error,
                                              const char *content, int *interrupted) {
  char want[128];
  ts_test_crash_result(want, sizeof want, index, thread);
  if (!strcmp(tool, "once")) {
    ck_assert_msg(ran <= 1, "round %d %s call %u: an ordinary tool ran %d times", round, thread,
                  index, ran);
    if (is_error) {
      ck_assert_msg(!strncmp(content, "interrupted:", 12), "round %d %s call %u: %s", round,
                    thread, index, content);
      (*interrupted)++;
      return;
    }
  }
  ck_assert_msg(ran >= 1, "round %d %s call %u: a result without a run", round, thread, index);
  ck_assert_msg(!is_error && !strcmp(content, want), "round %d %s call %u: '%s'", round, thread,
                index, content);
}

/* The end of a crash test: what the kills hit, on one line, and the check that at least
 * min_landed of the rounds' kills landed `where` ("inside turn 1"): kills that all miss
 * prove nothing. interrupted, reran: counts to print, or -1 when the test keeps none. */
static inline void ts_test_crash_report(const char *test, long span_us, int rounds, int landed,
                                        int min_landed, const char *where, int interrupted,
                                        int reran) {
  printf("%s: a run takes %ld us; %d rounds, %d killed %s", test, span_us, rounds, landed, where);
  if (interrupted >= 0) printf(", %d interrupted results", interrupted);
  if (reran >= 0) printf(", %d idempotent re-runs", reran);
  printf("\n");
  ck_assert_msg(landed >= min_landed, "only %d of %d kills landed %s", landed, rounds, where);
}

#endif /* TS_TEST_CRASH_TOOLS_H */
