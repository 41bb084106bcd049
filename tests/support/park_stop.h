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

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>

#include "store/store.h"

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

#endif /* TS_TEST_PARK_STOP_H */
