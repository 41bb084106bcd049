/*
 * park_stop.h: stop a run once a thread has a call parked for a variable (tests only).
 *
 * A run whose call waits for a variable waits until the value comes or the run is stopped.
 * A test that wants the stop at that very point (not "after 200 ms", which a loaded
 * machine breaks) starts a park_stop on the thread it expects to wait: a helper thread
 * that looks at the store (its own connection) until the park is committed, then raises
 * the run's cancel flag, as Ctrl-C would. park_stop_end joins it and says whether it saw
 * the park (a run that ended without parking makes it give up).
 */
#ifndef TS_TEST_PARK_STOP_H
#define TS_TEST_PARK_STOP_H

#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store/store.h"
#include "tools/registry.h"
#include "tools/variables.h"

typedef struct {
  char data[256], thread[256];
  volatile sig_atomic_t cancel; /* the run's cancel flag (ts_agent_config.cancel) */
  volatile int done;            /* set by the test once the run has returned */
  int seen;
  ts_store *store; /* opened by park_stop_begin, used by the helper thread only */
  pthread_t th;
} park_stop;

static int park_stop_found(void *user, const ts_store_parked *p) {
  (void)p;
  (*(int *)user)++;
  return 0;
}

static void *park_stop_main(void *arg) {
  park_stop *w = arg;
  ts_store *s = w->store;
  if (!s) return NULL;
  while (!w->done) {
    int n = 0;
    if (ts_store_parked_calls(s, w->thread, park_stop_found, &n) > 0 || n > 0) {
      w->seen = 1;
      w->cancel = 1;
      break;
    }
    struct timespec p = {0, 2000000L};
    nanosleep(&p, NULL);
  }
  ts_store_close(s);
  return NULL;
}

/* Watches `thread` of the store in directory `data`. The store is opened (created when
 * new) here, before the run starts: two connections creating one store at the same moment
 * would race on its schema. */
static inline void park_stop_begin(park_stop *w, const char *data, const char *thread) {
  snprintf(w->data, sizeof w->data, "%s", data);
  snprintf(w->thread, sizeof w->thread, "%s", thread);
  w->cancel = 0;
  w->done = 0;
  w->seen = 0;
  char why[256];
  w->store = NULL;
  if (ts_store_open(w->data, &w->store, why, sizeof why))
    fprintf(stderr, "park_stop: cannot open %s: %s\n", w->data, why);
  pthread_create(&w->th, NULL, park_stop_main, w);
}

/* After the run returned: 1 when the park was seen (and the flag raised). */
static inline int park_stop_end(park_stop *w) {
  w->done = 1;
  pthread_join(w->th, NULL);
  return w->seen;
}

/* The tool such tests park on, "greet": it needs the required text variable WHO
 * (tools-spec §3), returns its value, and adds a byte to DIR/greet.log on each run (so a
 * test can tell a call run once from one run twice). Any thread of a tree may call it. */
typedef struct {
  ts_registry *reg;
  char log[300];
} park_greet;

static void park_greet_exec(void *user, const ts_call_info *call, const char *args, size_t len,
                            ts_tool_result *out) {
  (void)args, (void)len;
  park_greet *g = user;
  const char *v = NULL;
  size_t n = 0;
  char why[256];
  const ts_tool *self = ts_registry_find(g->reg, "greet", 5);
  int r = call->env_get ? call->env_get(call->env_ctx, self, "WHO", &v, &n, why, sizeof why) : 0;
  int fd = open(g->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd >= 0) {
    ssize_t w = write(fd, "g", 1);
    (void)w;
    close(fd);
  }
  if (r == 1) ts_tool_result_string(out, v, n);
  else ts_tool_result_error(out, "WHO did not resolve");
}

/* Registers "greet" in reg, its log in dir: 0, or the registry's error. */
static int park_greet_add(ts_registry *reg, park_greet *g, const char *dir) {
  char why[256];
  g->reg = reg;
  snprintf(g->log, sizeof g->log, "%s/greet.log", dir);
  ts_var_def who = {"WHO", TS_VAR_TEXT, 1, 0, "who to greet"};
  ts_tool_spec spec = {.name = "greet", .description = "needs WHO", .vars = &who, .n_vars = 1,
                       .execute = park_greet_exec, .user = g};
  return ts_registry_add(reg, &spec, why, sizeof why);
}

/* What `toolstream env set` does, from the test: NAME = value (text) on thread, in the
 * store in data_dir, through a connection of its own. */
static void park_set_var(const char *data_dir, const char *thread, const char *name,
                         const char *value) {
  ts_store *s;
  ts_vars *v;
  char why[256];
  ck_assert_int_eq(ts_store_open(data_dir, &s, why, sizeof why), 0);
  ck_assert_int_eq(ts_vars_open(s, NULL, &v), 0);
  ck_assert_int_eq(ts_vars_set(v, thread, name, TS_VAR_TEXT, value, strlen(value), "env set"), 0);
  ts_vars_free(v);
  ts_store_close(s);
}

#endif /* TS_TEST_PARK_STOP_H */
