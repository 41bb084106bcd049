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
 */
#ifndef TS_TEST_CRASH_TOOLS_H
#define TS_TEST_CRASH_TOOLS_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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

#endif /* TS_TEST_CRASH_TOOLS_H */
