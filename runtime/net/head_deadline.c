/* head_deadline.c: see head_deadline.h. */
#include "net/head_deadline.h"

#include <stdlib.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>

#include "base/error.h"
#include "base/hmap.h"

/* One connection waiting for a head. */
typedef struct watch {
  ts_hmap_node node;             /* keyed by the address of its bufferevent */
  ts_head_deadline *d;
  struct bufferevent *bev;       /* referenced while watched */
  struct evhttp_connection *con; /* NULL before the first head: evhttp makes it after us */
  struct event *late;
} watch;

struct ts_head_deadline {
  struct event_base *base;
  struct timeval tv;
  ts_hmap watches;
};

static watch *find(ts_head_deadline *d, struct bufferevent *bev) {
  return (watch *)ts_hmap_find(&d->watches, (const char *)&bev, sizeof bev); /* node first */
}

/* Stops watching; returns the bufferevent, whose reference the caller now holds. */
static struct bufferevent *unwatch(watch *w) {
  struct bufferevent *bev = w->bev;
  ts_hmap_remove(&w->d->watches, &w->node);
  if (w->con) evhttp_connection_set_closecb(w->con, NULL, NULL);
  event_free(w->late);
  free(w);
  return bev;
}

/* The head is late: what a read timeout would have told evhttp, which closes the
 * connection. A bufferevent evhttp has let go has no callbacks left, so nothing happens. */
static void on_late(evutil_socket_t fd, short what, void *arg) {
  (void)fd, (void)what;
  struct bufferevent *bev = unwatch(arg);
  bufferevent_trigger_event(bev, BEV_EVENT_READING | BEV_EVENT_TIMEOUT, 0);
  bufferevent_decref(bev);
}

/* evhttp frees a connection whose next head was being watched. */
static void on_close(struct evhttp_connection *con, void *arg) {
  (void)con;
  bufferevent_decref(unwatch(arg));
}

static void watch_new(ts_head_deadline *d, struct bufferevent *bev, struct evhttp_connection *con) {
  watch *old = find(d, bev);
  if (old) bufferevent_decref(unwatch(old));
  watch *w = calloc(1, sizeof *w);
  if (!w) return; /* no deadline for this one: evhttp's read timeout still ends silence */
  w->d = d;
  w->bev = bev;
  w->con = con;
  w->late = evtimer_new(d->base, on_late, w);
  if (!w->late || ts_hmap_insert(&d->watches, &w->node, (const char *)&w->bev, sizeof w->bev)) {
    if (w->late) event_free(w->late);
    free(w);
    return;
  }
  bufferevent_incref(bev);
  if (con) evhttp_connection_set_closecb(con, on_close, w);
  evtimer_add(w->late, &d->tv);
}

/* evhttp asks for each accepted connection's bufferevent (what it would make itself). */
static struct bufferevent *on_new_bev(struct event_base *base, void *arg) {
  struct bufferevent *bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
  if (bev) watch_new(arg, bev, NULL);
  return bev;
}

static struct bufferevent *bev_of(struct evhttp_connection *con) {
  return con ? evhttp_connection_get_bufferevent(con) : NULL;
}

/* A response completed: the connection may be kept for another request, whose head is
 * watched from now (if evhttp closes the connection instead, on_close lets go). */
static void on_complete(struct evhttp_request *req, void *arg) {
  ts_head_deadline *d = arg;
  struct evhttp_connection *con = evhttp_request_get_connection(req);
  struct bufferevent *bev = bev_of(con);
  if (!bev) return;
  bufferevent_set_timeouts(bev, &d->tv, &d->tv);
  watch_new(d, bev, con);
}

/* While a reply is written, only the write timeout: evhttp keeps reading on for the
 * client's close, and a reply that takes long to a client that sends nothing is fine. */
void ts_head_deadline_arrived(ts_head_deadline *d, struct evhttp_request *req) {
  struct bufferevent *bev = bev_of(evhttp_request_get_connection(req));
  if (!d || !bev) return;
  watch *w = find(d, bev);
  if (w) bufferevent_decref(unwatch(w));
  bufferevent_set_timeouts(bev, NULL, &d->tv);
  evhttp_request_set_on_complete_cb(req, on_complete, d);
}

void ts_head_deadline_streaming(ts_head_deadline *d, struct evhttp_request *req) {
  struct bufferevent *bev = bev_of(evhttp_request_get_connection(req));
  if (d && bev) bufferevent_set_timeouts(bev, NULL, NULL);
}

int ts_head_deadline_new(struct evhttp *http, struct event_base *base, int ms,
                         ts_head_deadline **out) {
  if (!http || !base || ms <= 0 || !out) return TS_E_INVAL;
  ts_head_deadline *d = calloc(1, sizeof *d);
  if (!d) return TS_E_NOMEM;
  int rc = ts_hmap_init(&d->watches);
  if (rc) {
    free(d);
    return rc;
  }
  d->base = base;
  d->tv.tv_sec = ms / 1000;
  d->tv.tv_usec = (ms % 1000) * 1000;
  evhttp_set_timeout_tv(http, &d->tv);
  evhttp_set_bevcb(http, on_new_bev, d);
  *out = d;
  return TS_E_OK;
}

void ts_head_deadline_free(ts_head_deadline *d) {
  if (!d) return;
  for (ts_hmap_node *n = ts_hmap_next(&d->watches, NULL), *next; n; n = next) {
    next = ts_hmap_next(&d->watches, n);
    bufferevent_decref(unwatch((watch *)n));
  }
  ts_hmap_fini(&d->watches);
  free(d);
}
