/* accept_guard.c: see accept_guard.h. */
#include "net/accept_guard.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h> /* strerror, for evutil_socket_error_to_string */
#include <time.h>

#include <event2/event.h>
#include <event2/util.h>

#include "base/error.h"

#define PAUSE_MIN_MS 50
#define PAUSE_MAX_MS 1000
#define QUIET_RESET_S 2.0 /* a failure this long after the last one pauses PAUSE_MIN_MS */

struct ts_accept_guard {
  struct evconnlistener *lev;
  struct event *again; /* re-enables accepting after the pause */
  ts_accept_guard_report report;
  void *user;
  int pause_ms;        /* the last pause; 0: none since the last success */
  double last_fail;    /* when accept last failed (monotonic seconds) */
  double last_line;    /* when the last line was reported */
  unsigned long quiet; /* failures since then, not reported */
  ts_accept_guard *next;
};

/* The guards, by listener: a listener's error callback gets the listener's own user data
 * (evhttp's, for the endpoint's), not ours, so on_error finds its guard here. Looked up
 * only when an accept fails; guards live on several loops' threads. */
static pthread_mutex_t guards_mu = PTHREAD_MUTEX_INITIALIZER;
static ts_accept_guard *guards;

static ts_accept_guard *guard_of(struct evconnlistener *lev) {
  pthread_mutex_lock(&guards_mu);
  ts_accept_guard *g = guards;
  while (g && g->lev != lev) g = g->next;
  pthread_mutex_unlock(&guards_mu);
  return g;
}

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void on_again(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  ts_accept_guard *g = arg;
  evconnlistener_enable(g->lev);
}

static void on_error(struct evconnlistener *lev, void *arg) {
  (void)arg;
  const int err = EVUTIL_SOCKET_ERROR();
  ts_accept_guard *g = guard_of(lev);
  if (!g) return; /* freed meanwhile: nothing to pause for */
  const double now = mono_s();
  evconnlistener_disable(lev);
  if (!g->pause_ms || now - g->last_fail >= QUIET_RESET_S) g->pause_ms = PAUSE_MIN_MS;
  else if ((g->pause_ms *= 2) > PAUSE_MAX_MS) g->pause_ms = PAUSE_MAX_MS;
  g->last_fail = now;
  struct timeval tv = {g->pause_ms / 1000, (g->pause_ms % 1000) * 1000};
  evtimer_add(g->again, &tv);
  if (!g->report) return;
  if (now - g->last_line < 1.0) {
    g->quiet++;
    g->report(g->user, NULL);
    return;
  }
  char line[256];
  if (g->quiet)
    snprintf(line, sizeof line,
             "cannot accept a connection: %s (%lu more since the last report); pausing accepts "
             "for %d ms",
             evutil_socket_error_to_string(err), g->quiet, g->pause_ms);
  else
    snprintf(line, sizeof line, "cannot accept a connection: %s; pausing accepts for %d ms",
             evutil_socket_error_to_string(err), g->pause_ms);
  g->last_line = now;
  g->quiet = 0;
  g->report(g->user, line);
}

int ts_accept_guard_new(struct evconnlistener *lev, ts_accept_guard_report report, void *user,
                        ts_accept_guard **out) {
  ts_accept_guard *g = calloc(1, sizeof *g);
  if (!g) return TS_E_NOMEM;
  g->again = evtimer_new(evconnlistener_get_base(lev), on_again, g);
  if (!g->again) {
    free(g);
    return TS_E_NOMEM;
  }
  g->lev = lev;
  g->report = report;
  g->user = user;
  g->last_line = -1e9;
  pthread_mutex_lock(&guards_mu);
  g->next = guards;
  guards = g;
  pthread_mutex_unlock(&guards_mu);
  evconnlistener_set_error_cb(lev, on_error);
  *out = g;
  return TS_E_OK;
}

void ts_accept_guard_ok(ts_accept_guard *g) {
  if (g) g->pause_ms = 0;
}

void ts_accept_guard_free(ts_accept_guard *g) {
  if (!g) return;
  evconnlistener_set_error_cb(g->lev, NULL);
  pthread_mutex_lock(&guards_mu);
  ts_accept_guard **pp = &guards;
  while (*pp != g) pp = &(*pp)->next;
  *pp = g->next;
  pthread_mutex_unlock(&guards_mu);
  event_free(g->again);
  free(g);
}
