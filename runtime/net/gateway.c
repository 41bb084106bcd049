/*
 * gateway.c: see gateway.h.
 *
 * Shape. One listener (an evconnlistener we own, so accepting can back off and the
 * connection caps are ours) and, per client connection, one `conn`: a socket
 * bufferevent, the request being read or served, and while a request is proxied the
 * upstream bufferevent (plain or TLS, net/upstream.h). Both sides speak HTTP/1.1 through
 * our own strict parsers (net/http_head.h, net/chunked.h): libevent's evhttp accepted
 * ambiguous framing (two Content-Lengths, "+2"), had no deadline for a whole request
 * head, could not be told to stop accepting, waited for whole upstream chunks before
 * passing any byte on, and dropped a reply's queued bytes when it closed a connection.
 *
 * A connection's life: C_HEAD (reading a request head, under the head deadline) ->
 * C_BODY (reading its body, Content-Length or chunked, under the idle timeout) ->
 * C_WAIT (the request is answered: by the gateway itself, or proxied) -> back to C_HEAD
 * when the connection is kept alive, or C_CLOSING (the last bytes drain, then the
 * connection is freed). A pipelined request waits in the input until the reply before
 * it is done; reading resumes on a deferred event, never by recursion.
 *
 * Forwarding. The upstream's response head is read whole (within max_header_bytes),
 * rewritten (hop-by-hop fields out, the thread header in) and sent; then every byte of
 * the body is written to the client in the handler that read it: straight to the
 * socket when nothing is queued before it, else queued behind what is. A chunked body
 * goes to an HTTP/1.1 client with its chunk framing untouched, so a chunk cut by the
 * upstream reaches the client as far as it arrived; a copy of the decoded data goes to
 * the tap after the client's write, and after every other read of the loop's turn (see
 * "the tap, after every read of the loop's turn"). An HTTP/1.0 client gets the decoded bytes and the
 * connection's close as the end; a close-delimited upstream body is re-chunked for an
 * HTTP/1.1 client, so that a cut one can be told from a finished one.
 *
 * A cut reply. When the upstream breaks off or goes idle after the head was sent, what
 * arrived has already been forwarded; the client connection is then closed once its
 * output has drained, without a terminating chunk (or short of the Content-Length):
 * the client sees the truncation.
 *
 * Backpressure. When more than TS_GW_CLIENT_HIGH_WATER bytes wait for a client, reading
 * from the upstream stops until the client's output has drained (TCP then slows the
 * upstream); memory per stream stays bounded.
 *
 * A departing client. Reading from the client goes on while its request is proxied, so
 * its EOF is seen at once: the upstream connection is closed and the departure is
 * counted in client_aborts.
 *
 * System calls. Per forwarded chunk the floor is one read and one write; what is left is
 * per request, and kept small: the client's socket has read interest from its accept and
 * write interest only while bytes wait for it (a bufferevent enabled for writing with
 * nothing to write costs an epoll_ctl pair and a wake-up); a plain upstream has one event
 * for reading, writing and its close, edge-triggered (EV_ET | EV_CLOSED), added once when
 * the connection is made and handed to and from the keep-alive pool without a change of
 * interest. Edge-triggered reading follows nginx's rule: a read that fills less than the
 * buffer emptied the socket (the next byte brings a new edge), unless the peer's FIN was
 * seen, which brings no further edge: then reading goes on to the EOF. A pause for a slow
 * client only stops reading (the kernel's buffer and TCP hold the upstream back); the
 * resume reads what waits. A connect's success is not asked with getsockopt: the request
 * is written when the socket is writable, and a failed connect fails that write. A test
 * counts these calls (tests/runtime/net/gateway_test.c, "system calls per request").
 *
 * Freeing. bufferevent_free may be called from a bufferevent's own callback (libevent
 * defers the actual free), so a conn is freed where it ends; every function that may
 * free it says so, and its callers return right after.
 *
 * Thread ids and seq. Events go out through the event sink (events/sink.h), as tap's and
 * run's do. The bus wants seq strictly increasing per thread, also across requests (a
 * conversation sends one request per turn with the same thread header), so the gateway
 * keeps one sink per thread named by a client header (up to TS_GW_MAX_NAMED_THREADS of
 * them) in a keyed hash map (base/hmap.h). A made-up thread id belongs to one request,
 * whose own sink numbers its events.
 */
#define _GNU_SOURCE /* pipe2; struct timeval, getaddrinfo */
#include "net/gateway.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <openssl/ssl.h>

#include "base/hmap.h"
#include "base/origin.h"
#include "base/thread_id.h"
#include "events/event.h"
#include "events/sink.h"
#include "net/serve.h"
#include "net/accept_guard.h"
#include "net/chunked.h"
#include "net/gw_metrics.h"
#include "net/gw_route.h"
#include "stream/provider.h"
#include "net/http_head.h"
#include "net/progress_strip.h"
#include "net/upstream.h"
#include "stream/tap.h"

/* Threads named by clients whose seq the map keeps; past this, a new name's events are
 * numbered from 1 per request (a thread id reused by that many conversations is rare,
 * and the map must not grow without bound). */
#define TS_GW_MAX_NAMED_THREADS (1u << 20)
/* Longest request target (path and query) forwarded: 414 past it. */
#define TS_GW_MAX_TARGET 8192

typedef struct {
  ts_hmap_node h; /* first */
  ts_sink *sink;  /* numbers and publishes the thread's events (events/sink.h) */
  uint32_t turns; /* model replies tapped on this thread so far (the last turn's number) */
  char key[];     /* the thread id, NUL-terminated */
} seq_node;

typedef struct {
  ts_hmap_node h; /* first */
  size_t count;   /* open connections from this address */
  char key[INET6_ADDRSTRLEN];
} peer_node;

typedef struct conn conn;

/* What the workers share. One lock, taken per accepted and per closed connection and per
 * event published, never per forwarded chunk: it guards the named threads (their sinks
 * number events, so two requests of one thread on two workers still get strictly
 * increasing seqs; the sinks share the bus publisher, which is then used by one thread at
 * a time), the per-address connection counts and the total against max_connections. */
typedef struct {
  pthread_mutex_t lock;
  ts_hmap seqs;  /* seq_node by thread id */
  ts_hmap peers; /* peer_node by client address */
  size_t nconns; /* client connections of every worker */
  size_t nlive[TS_GW_MAX_WORKERS]; /* ... of each worker, and handed to it (pick_worker) */
  size_t spread_at;                /* ts_gw_config.spread_at, defaulted (0: no filling) */
  ts_gw *w[TS_GW_MAX_WORKERS];
  pthread_t th[TS_GW_MAX_WORKERS];
  size_t n, running; /* workers made; threads started (workers 1 .. running) */
} gw_group;

struct ts_gw {
  gw_group *grp;
  size_t index;       /* 0: on the caller's base; else on its own thread and base */
  int stop_fd[2];     /* workers past 0: a byte in stop_fd[1] ends the worker's loop */
  struct event *stop_ev;
  int hand_fd[2];     /* with several workers: accepted connections handed to this one */
  struct event *hand_ev;
  struct event_base *base;
  struct evconnlistener *lev;
  ts_accept_guard *guard; /* pauses accepting while accept() fails (net/accept_guard.h) */
  int port;
  ts_gw_route routes[TS_GW_MAX_UPSTREAMS];
  size_t nroutes;
  SSL_CTX *ssl_ctx;
  ts_gw_config cfg;
  ts_gw_metrics m; /* this worker's (gw_metrics.h: one writer); /metrics sums them */
  conn *live;
  char rbuf[64 * 1024]; /* one read from a plain upstream (one per worker's loop) */
  /* the response head being read: parsed and used within one callback (up_process,
   * start_reply), so one per worker's loop serves every connection */
  ts_http_head up_head;
  struct pooled *pool; /* idle kept-alive upstream connections, newest first */
  size_t npool;
  /* connections whose read bytes wait for their tap, and the event that feeds them once
   * the loop has run every read of this turn (tap_defer) */
  conn *tap_q;
  struct event *tap_ev;
};

/* An idle upstream connection in a worker's pool: watched for the upstream's close (or a
 * stray byte, which makes it unusable) and for the idle timeout, either of which closes
 * it. */
typedef struct pooled {
  struct pooled *prev, *next;
  ts_gw *gw;
  const ts_gw_route *rt; /* the route it was opened for (its host:port) */
  evutil_socket_t fd;
  struct event *ev;
} pooled;

#define ST_ADD(gw, field, n) TS_GW_STAT_ADD(&(gw)->m, field, n)

enum { C_HEAD, C_BODY, C_WAIT, C_CLOSING };
enum { U_HEAD, U_BODY };
enum { OUT_RAW, OUT_DECODED, OUT_RECHUNK };

struct conn {
  ts_gw *gw;
  conn *prev, *next;
  struct bufferevent *bev; /* the client's */
  evutil_socket_t fd;
  peer_node *peer;
  int state;
  struct event *timer; /* head deadline, body idle, keep-alive idle */
  struct event *kick;  /* reads a pipelined request after a reply */
  int fresh;           /* no request read yet on this connection */
  int head_started;    /* bytes of the current head have arrived */
  size_t scan;         /* ts_http_head_end's resume offset */
  /* the request's head (in `head`'s allocation) until it is forwarded; then the
   * response's, which is the worker's (up_head): a parsed head is about 3.2 KiB, and a
   * stream would otherwise hold one for its whole length */
  ts_http_head *h;

  /* the request */
  ts_http_head *head; /* the request's parsed head, a copy of its bytes right after it */
  int minor, keep_alive, head_method;
  ts_http_framing rf;
  uint64_t body_left;
  ts_chunked bdec;
  int body_over;
  struct evbuffer *body;

  /* the upstream */
  const ts_gw_route *rt;
  struct bufferevent *ubev; /* a TLS upstream (bufferevent_openssl) */
  /* a plain upstream: our own socket and one edge-triggered event (see "System calls"),
   * so a read is one read(2) (a bufferevent asks FIONREAD first), and interest is
   * registered once per connection, not per request, per write or per pause */
  evutil_socket_t ufd;
  struct event *uev;
  int up_hup; /* the upstream's FIN was seen (EV_CLOSED): read on until its EOF */
  struct evbuffer *uin, *uout; /* read and not yet used; the request not yet sent */
  /* connect and headers timeouts; after the head, the coarse idle check: armed once for
   * the idle timeout, it looks at last_read when it fires and re-arms for what is left,
   * so a read costs no timer re-add (a persistent event's timeout is re-added on every
   * activation, a heap adjustment per chunk) */
  struct event *utimer;
  double last_read; /* CLOCK_MONOTONIC_COARSE seconds of the last upstream read */
  int ustate, uconnected, headers_sent, paused, counted_open, client_dead;
  /* the keep-alive pool (plain upstreams): up_keep, the reply leaves the connection
   * reusable (HTTP/1.1, no "Connection: close", a body with its own end); more_after,
   * bytes follow the body in what was read (then it is not reused); reused, this
   * connection came from the pool, and ureq keeps the request so that it can go once
   * more on a fresh connection if the kept one turns out closed before any answer. */
  int up_keep, more_after, reused;
  uint64_t ubytes; /* bytes read from this upstream connection for this request */
  struct evbuffer *ureq;
  size_t uscan;
  ts_http_framing uf;
  uint64_t uleft;
  ts_chunked udec;
  int out_mode, close_after;
  ts_tap *tap;
  /* the reply is to be tapped, with this Content-Type: the tap is made at the first body
   * byte, so a stream that waits for its first byte (or has none) holds no tap */
  int want_tap;
  char ctype[256];
  ts_tool_defs defs; /* progress arguments from the request's own tool definitions */
  ts_format format;
  char *scratch;      /* body bytes forwarded and not yet fed to the tap (tap_defer) */
  size_t scratch_len, scratch_cap;
  conn *tap_prev, *tap_next; /* in gw->tap_q while scratch_len > 0 */
  int tap_queued;
  double t_start;
  double t_request; /* when the request's head was complete (the access log) */
  int log_status;   /* the status this exchange answered (0: none yet) */
  char log_line[320]; /* "METHOD /path" of the exchange, for the access log */
  int named_thread; /* the thread id came from the client: its seq lives in the map */
  ts_sink *sink;    /* a made-up thread's sink (that thread is this request only) */
  char thread[TS_THREAD_ID_MAX + 1];
};

static void tap_flush(conn *c);

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The clock of the idle check, read on every upstream read: the coarse clock is a vDSO
 * load (no system call, no TSC read), a few ms of resolution against timeouts of seconds. */
static double coarse_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void set_why(char *why, size_t cap, const char *msg, const char *arg) {
  if (why && cap) snprintf(why, cap, msg, arg);
}

static void arm_ms(struct event *ev, double ms) {
  if (ms < 1) ms = 1;
  struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)((long)ms % 1000) * 1000};
  evtimer_add(ev, &tv);
}

static void gw_log(ts_gw *gw, const char *fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (gw->cfg.log) gw->cfg.log(gw->cfg.log_user, line);
  else fprintf(stderr, "toolstream gateway: %s\n", line);
}

/* ---- thread seq map ------------------------------------------------------------------ */

/* A sink publishing on the gateway's bus for `thread` (events/sink.h: numbered, stamped,
 * encoded once, published; nothing written or stored). NULL when out of memory. */
/* Each event, as every destination got it, to the endpoint's live streams too. */
static void to_endpoint(void *user, const ts_event *ev, const char *json, size_t len) {
  const ts_gw *gw = user;
  if (gw->cfg.serve) ts_serve_publish(gw->cfg.serve, ev->thread.p, ev->thread.len, ev->seq, json, len);
  if (gw->cfg.emitted) gw->cfg.emitted(gw->cfg.emitted_user, ev, json, len);
}

/* Whether tap events go anywhere: the bus, the endpoint, the embedder's callback. */
static int publishes(const ts_gw *gw) {
  return (gw->cfg.pub || gw->cfg.serve || gw->cfg.emitted) && !gw->cfg.no_tap;
}

static ts_sink *thread_sink(const ts_gw *gw, const char *thread) {
  /* Its taps run with the default limits; the line cap follows them (events/sink.h). An
   * event that cannot be written stops this thread's events, the replies go on. */
  ts_sink_config sc = {.thread = thread, .who = "toolstream gateway", .pub = gw->cfg.pub,
                       .emitted = gw->cfg.serve || gw->cfg.emitted ? to_endpoint : NULL, .emitted_user = (void *)gw,
                       .max_event_bytes = ts_sink_cap_for_args(0)};
  ts_sink *s = NULL;
  return ts_sink_new(&sc, &s) == TS_E_OK ? s : NULL;
}

/* The entry of a thread a client named: one per thread, across its requests (a
 * conversation sends one request per turn with the same header), holding its sink (so its
 * seqs keep increasing) and its turn count. NULL when out of memory or the map is full. */
static seq_node *named_node(ts_gw *gw, const char *thread) {
  size_t len = strlen(thread);
  ts_hmap *seqs = &gw->grp->seqs; /* the caller holds gw->grp->lock */
  seq_node *n = (seq_node *)ts_hmap_find(seqs, thread, len);
  if (n) return n;
  if (seqs->n >= TS_GW_MAX_NAMED_THREADS) return NULL; /* full */
  n = malloc(sizeof *n + len + 1);
  if (!n) return NULL;
  n->turns = 0;
  memcpy(n->key, thread, len + 1);
  if (!(n->sink = thread_sink(gw, thread)) || ts_hmap_insert(seqs, &n->h, n->key, len)) {
    ts_sink_free(n->sink);
    free(n);
    return NULL;
  }
  return n;
}

static ts_sink *named_sink(ts_gw *gw, const char *thread) {
  seq_node *n = named_node(gw, thread);
  return n ? n->sink : NULL;
}

/* The turn a model reply about to be tapped is on its thread: the next of a named thread
 * (1, 2, 3 ... across its requests), 1 for a made-up thread (it is this request only) or
 * when the map is full (then the thread's events are numbered per request too). */
static uint32_t next_turn(conn *c) {
  if (!c->named_thread) return 1;
  pthread_mutex_lock(&c->gw->grp->lock);
  seq_node *n = named_node(c->gw, c->thread);
  uint32_t turn = 1;
  if (n && n->turns < UINT32_MAX) n->turns++;
  if (n) turn = n->turns;
  pthread_mutex_unlock(&c->gw->grp->lock);
  return turn;
}

/* ---- publishing ---------------------------------------------------------------------- */

/* Every tap event through the thread's sink: the one error policy (a bus that refuses is
 * reported once and publishing stops; nothing else depends on it). */
static void publish(conn *c, const ts_tap_event *e) {
  ts_gw *gw = c->gw;
  if (e->type == TS_TAP_TOOL_CALL_ERROR || e->type == TS_TAP_STREAM_ERROR) ST_ADD(gw, tap_errors, 1);
  if (!publishes(gw)) return;
  pthread_mutex_lock(&gw->grp->lock); /* the thread's seq and the shared publisher */
  ts_sink *sink = c->named_thread ? named_sink(gw, c->thread) : NULL;
  if (!sink) { /* a made-up thread, or the map is full: this request's own numbering */
    c->named_thread = 0;
    if (!c->sink) c->sink = thread_sink(gw, c->thread);
    sink = c->sink;
  }
  if (sink && ts_sink_emit_tap(sink, e) == TS_E_OK && !ts_sink_publish_failed(sink))
    ST_ADD(gw, events_published, 1);
  pthread_mutex_unlock(&gw->grp->lock);
}

static void publish_error(conn *c, int code, const char *msg) {
  ts_tap_event e;
  memset(&e, 0, sizeof e);
  e.type = TS_TAP_STREAM_ERROR;
  e.code = code;
  e.error.p = msg;
  e.error.len = strlen(msg);
  tap_flush(c);
  e.offset = c->tap ? ts_tap_offset(c->tap) : 0;
  ST_ADD(c->gw, upstream_errors, 1);
  publish(c, &e);
  ST_ADD(c->gw, tap_errors, -1); /* an upstream failure, not the tap's: counted above instead */
}

static int on_tap_event(void *user, const ts_tap_event *e) {
  publish(user, e);
  return 0;
}

static const char *lookup_progress(void *user, const char *tool, size_t len, size_t *arg_len) {
  conn *c = user;
  const ts_tool_def *d = c->gw->cfg.tools ? ts_tool_defs_find(c->gw->cfg.tools, tool, len) : NULL;
  if (!d || !d->progress_arg) d = ts_tool_defs_find(&c->defs, tool, len);
  if (!d || !d->progress_arg) return NULL;
  *arg_len = strlen(d->progress_arg);
  return d->progress_arg;
}

/* ---- writing to the client ------------------------------------------------------------ */

/* Writes to the client now: straight to the socket when nothing waits before these
 * bytes, the rest (or all, behind queued bytes) queued on the bufferevent, which writes
 * it when the socket takes more. Returns 0, or -1 when the client is gone (EPIPE,
 * ECONNRESET: c->client_dead is set; the caller ends the exchange). */
static int client_write(conn *c, const void *p, size_t n) {
  if (c->client_dead) return -1;
  struct evbuffer *out = bufferevent_get_output(c->bev);
  size_t done = 0;
  if (!evbuffer_get_length(out)) {
    while (done < n) {
      ssize_t w = send(c->fd, (const char *)p + done, n - done, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w > 0) {
        done += (size_t)w;
        continue;
      }
      if (w < 0 && errno == EINTR) continue;
      if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      c->client_dead = 1;
      return -1;
    }
  }
  if (done < n) {
    if (evbuffer_add(out, (const char *)p + done, n - done)) {
      c->client_dead = 1; /* out of memory: the reply cannot be completed */
      return -1;
    }
    /* write interest from now on (the bufferevent drops it whenever the output empties,
     * and adds it again when bytes are queued): never while there is nothing to write */
    bufferevent_enable(c->bev, EV_WRITE);
  }
  return 0;
}

static int client_printf(conn *c, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof buf) return -1;
  return client_write(c, buf, (size_t)n);
}

static size_t client_queued(conn *c) { return evbuffer_get_length(bufferevent_get_output(c->bev)); }

/* ---- the upstream connection, TLS (a bufferevent) or plain (our socket) ----------------- */

static int up_active(const conn *c) { return c->ubev || c->ufd >= 0; }

static struct evbuffer *up_input(conn *c) {
  return c->ubev ? bufferevent_get_input(c->ubev) : c->uin;
}

/* Reading from the upstream on or off (backpressure). The idle timeout is not on the read
 * event (utimer checks it coarsely); a resumed read starts the idle time afresh. */
static void up_reading(conn *c, int on) {
  if (c->ubev) {
    if (on) bufferevent_enable(c->ubev, EV_READ);
    else bufferevent_disable(c->ubev, EV_READ);
    return;
  }
  /* the plain upstream's event stays registered: a paused connection only is not read
   * (up_raw_readable), and a resumed one reads what waits, which no new edge announces */
  if (!c->uev || !on) return;
  c->last_read = coarse_s();
  event_active(c->uev, EV_READ, 1);
}

/* ---- a connection's end ---------------------------------------------------------------- */

static void upstream_free(conn *c) {
  if (c->ubev) bufferevent_free(c->ubev);
  c->ubev = NULL;
  if (c->uev) event_free(c->uev);
  c->uev = NULL;
  c->up_hup = 0;
  if (c->ufd >= 0) evutil_closesocket(c->ufd);
  c->ufd = -1;
  if (c->uin) evbuffer_free(c->uin);
  if (c->uout) evbuffer_free(c->uout);
  if (c->ureq) evbuffer_free(c->ureq);
  c->uin = c->uout = c->ureq = NULL;
  c->up_keep = c->more_after = c->reused = 0;
  c->ubytes = 0;
  if (c->utimer) evtimer_del(c->utimer);
  if (c->counted_open) ST_ADD(c->gw, streams_open, -1);
  c->counted_open = 0;
  tap_flush(c); /* bytes the client got still reach the tap */
  if (c->tap) ST_ADD(c->gw, taps_open, -1);
  ts_tap_free(c->tap);
  c->tap = NULL;
  c->want_tap = 0;
  ts_tool_defs_free(&c->defs);
  memset(&c->defs, 0, sizeof c->defs);
}

static void request_reset(conn *c) {
  free(c->head);
  c->head = NULL;
  c->h = NULL;
  if (c->body) evbuffer_drain(c->body, evbuffer_get_length(c->body));
  memset(&c->rf, 0, sizeof c->rf);
  memset(&c->bdec, 0, sizeof c->bdec);
  memset(&c->udec, 0, sizeof c->udec);
  c->body_left = 0;
  c->body_over = 0;
  c->scan = c->uscan = 0;
  c->head_started = 0;
  c->ustate = U_HEAD;
  c->uconnected = c->headers_sent = c->paused = 0;
  c->out_mode = OUT_RAW;
  c->close_after = 0;
  c->named_thread = 0;
  ts_sink_free(c->sink);
  c->sink = NULL;
  c->thread[0] = '\0';
  c->rt = NULL;
}

/* A connection of this worker leaves the caps' counts (its peer with its last one). */
static void conn_forget(ts_gw *gw, peer_node *pn) {
  pthread_mutex_lock(&gw->grp->lock);
  gw->grp->nconns--;
  gw->grp->nlive[gw->index]--;
  if (pn && --pn->count == 0) {
    ts_hmap_remove(&gw->grp->peers, &pn->h);
    free(pn);
  }
  pthread_mutex_unlock(&gw->grp->lock);
}

static void conn_free(conn *c) {
  ts_gw *gw = c->gw;
  upstream_free(c);
  request_reset(c);
  if (c->prev) c->prev->next = c->next;
  else if (gw->live == c) gw->live = c->next;
  if (c->next) c->next->prev = c->prev;
  ST_ADD(gw, connections_open, -1);
  conn_forget(gw, c->peer);
  if (c->timer) event_free(c->timer);
  if (c->utimer) event_free(c->utimer);
  if (c->kick) event_free(c->kick);
  if (c->bev) bufferevent_free(c->bev);
  if (c->body) evbuffer_free(c->body);
  free(c->scratch);
  free(c);
}

/* The exchange is over: the connection waits for the next request, or (close_after, or
 * not kept alive) closes once its output has drained. May free c. */
/* One access-log line per exchange, on standard error unless the gateway is quiet:
 * client, request line, status (0: the reply was cut), thread, milliseconds. */
static void access_log(conn *c) {
  if (c->gw->cfg.quiet || !c->log_line[0]) return;
  fprintf(stderr, "toolstream gateway: %s \"%s\" %d thread=%s %.1f ms\n", c->peer ? c->peer->key : "-",
          c->log_line, c->log_status, c->thread[0] ? c->thread : "-",
          (mono_s() - c->t_request) * 1000);
  c->log_line[0] = '\0';
}

static void exchange_done(conn *c, int close_after) {
  access_log(c);
  upstream_free(c);
  request_reset(c);
  if (close_after || !c->keep_alive || c->client_dead) {
    c->state = C_CLOSING;
    if (c->client_dead || !client_queued(c)) {
      conn_free(c); /* (before any change of interest: the close drops it all) */
      return;
    }
    bufferevent_disable(c->bev, EV_READ);
    evtimer_del(c->timer);
    arm_ms(c->timer, c->gw->cfg.idle_timeout_ms); /* a client that never reads */
    return;
  }
  c->state = C_HEAD;
  bufferevent_setwatermark(c->bev, EV_READ, 0, c->gw->cfg.max_header_bytes + TS_GW_PIPELINE_BYTES);
  arm_ms(c->timer, TS_GW_KEEPALIVE_TIMEOUT_MS);
  bufferevent_enable(c->bev, EV_READ);
  if (evbuffer_get_length(bufferevent_get_input(c->bev))) event_active(c->kick, EV_TIMEOUT, 1);
}

/* ---- answers made by the gateway itself ----------------------------------------------- */

static const char *reason_for(int status) {
  switch (status) {
  case 200: return "OK";
  case 400: return "Bad Request";
  case 404: return "Not Found";
  case 405: return "Method Not Allowed";
  case 408: return "Request Timeout";
  case 413: return "Content Too Large";
  case 414: return "URI Too Long";
  case 417: return "Expectation Failed";
  case 431: return "Request Header Fields Too Large";
  case 500: return "Internal Server Error";
  case 501: return "Not Implemented";
  case 502: return "Bad Gateway";
  case 503: return "Service Unavailable";
  case 504: return "Gateway Timeout";
  case 505: return "HTTP Version Not Supported";
  default: return "Error";
  }
}

/* A whole reply with a body. May free c (it ends the exchange). */
static void reply(conn *c, int status, const char *ctype, const char *body, size_t blen,
                  int close_after) {
  if (!c->keep_alive) close_after = 1;
  char extra[TS_THREAD_ID_MAX + 40] = "";
  if (c->thread[0]) snprintf(extra, sizeof extra, "X-Toolstream-Thread: %s\r\n", c->thread);
  c->log_status = status;
  client_printf(c,
                "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s%s\r\n",
                status, reason_for(status), ctype, blen, extra,
                close_after ? "Connection: close\r\n" : "");
  if (!c->head_method) client_write(c, body, blen);
  exchange_done(c, close_after);
}

/* {"error":{"message":MSG,"type":"toolstream_gateway"}} */
static void reply_error(conn *c, int status, const char *msg, int close_after) {
  ts_buf s;
  ts_buf_init(&s, 4096);
  ts_buf_puts(&s, "{\"error\":{\"message\":");
  ts_buf_append_json_string(&s, msg, strlen(msg));
  ts_buf_puts(&s, ",\"type\":\"toolstream_gateway\"}}\n");
  if (s.err) reply(c, status, "application/json", "{}\n", 3, close_after);
  else reply(c, status, "application/json", s.p, s.len, close_after);
  ts_buf_fini(&s);
}

/* A request the gateway refuses: counted, answered, and the connection closed (what
 * follows a malformed request cannot be trusted to be a request). May free c. */
static void refuse(conn *c, int status, const char *why) {
  if (!c->log_line[0]) { /* refused before its request line was taken in: still logged */
    snprintf(c->log_line, sizeof c->log_line, "-");
    c->t_request = mono_s();
  }
  char msg[300];
  snprintf(msg, sizeof msg, "toolstream gateway: %s", why);
  ST_ADD(c->gw, requests_refused, 1);
  reply_error(c, status, msg, 1);
}

static void send_metrics(conn *c) {
  ts_buf text;
  ts_buf_init(&text, 1 << 20);
  ts_gw_metrics sum;
  memset(&sum, 0, sizeof sum);
  gw_group *g = c->gw->grp;
  ts_gw_metrics *per = g->n > 1 ? calloc(g->n, sizeof *per) : NULL; /* each loop's copy */
  for (size_t i = 0; i < g->n; i++) {
    ts_gw_metrics_sum(&sum, &g->w[i]->m);
    if (per) ts_gw_metrics_sum(&per[i], &g->w[i]->m);
  }
  int rc = ts_gw_metrics_render(&sum, &text);
  if (!rc && g->n > 1) rc = per ? ts_gw_metrics_render_workers(per, g->n, &text) : TS_E_NOMEM;
  free(per);
  if (rc) reply_error(c, 500, "out of memory", 0);
  else reply(c, 200, "text/plain; version=0.0.4; charset=utf-8", text.p, text.len, 0);
  ts_buf_fini(&text);
}

/* ---- the upstream: failures ------------------------------------------------------------ */

/* The upstream failed before its head: a status of ours to the client, an event on the
 * bus. May free c. */
static void fail_before_head(conn *c, int code, int status, const char *msg) {
  publish_error(c, code, msg);
  char full[740];
  snprintf(full, sizeof full, "toolstream gateway: %s", msg);
  upstream_free(c);
  reply_error(c, status, full, 0);
}

/* The upstream failed after the head was sent: what arrived was forwarded already; the
 * client's connection closes once that has drained, without an end of body, so the
 * client sees the cut. May free c. */
static void cut(conn *c, int code, const char *msg) {
  publish_error(c, code, msg); /* (it feeds the tap what waits first) */
  if (c->tap) ts_tap_finish(c->tap);
  exchange_done(c, 1);
}

/* ---- the upstream: the response body ---------------------------------------------------- */

/* ---- the tap, after every read of the loop's turn ------------------------------------- *
 * One wake-up of the loop usually finds several upstreams readable (at 100 streams of 50
 * chunks/s, about eight). Each chunk is written to its client in the handler that read
 * it; its copy for the tap waits in the connection's scratch buffer, and one event,
 * activated by the first such copy of the turn, feeds them all after the turn's last read
 * (libevent runs an event made active during a turn after the ones already active), so no
 * chunk of the turn waits for the taps of the chunks read before it, and no system call is
 * added. Whatever reads the tap's state (its offset, its end, its free) feeds what waits
 * first (tap_flush). A connection holds at most TS_GW_TAP_DEFER_MAX bytes waiting: past
 * that they are fed at once. */
#define TS_GW_TAP_DEFER_MAX (256 * 1024)

static void tap_unqueue(conn *c) {
  if (!c->tap_queued) return;
  if (c->tap_prev) c->tap_prev->tap_next = c->tap_next;
  else c->gw->tap_q = c->tap_next;
  if (c->tap_next) c->tap_next->tap_prev = c->tap_prev;
  c->tap_prev = c->tap_next = NULL;
  c->tap_queued = 0;
}

/* Feeds the tap what waits for it (the tap decodes in place: the scratch copy is its). */
static void tap_flush(conn *c) {
  tap_unqueue(c);
  size_t n = c->scratch_len;
  c->scratch_len = 0;
  if (n && c->tap) ts_tap_feed(c->tap, c->scratch, n);
}

static void on_tap_turn(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  ts_gw *gw = arg;
  while (gw->tap_q) tap_flush(gw->tap_q); /* publishing frees no connection */
}

/* Body bytes the client has been sent, for the tap after this turn's reads. */
static void tap_defer(conn *c, const char *p, size_t n) {
  if (c->scratch_len + n > TS_GW_TAP_DEFER_MAX) tap_flush(c);
  if (n > TS_GW_TAP_DEFER_MAX || !c->gw->tap_ev) { /* one huge read (TLS), or no event */
    tap_flush(c);
    if (n > c->scratch_cap) {
      char *ns = realloc(c->scratch, n);
      if (!ns) return; /* the client still gets every byte; only the tap misses these */
      c->scratch = ns;
      c->scratch_cap = n;
    }
    memcpy(c->scratch, p, n);
    ts_tap_feed(c->tap, c->scratch, n);
    return;
  }
  size_t need = c->scratch_len + n;
  if (need > c->scratch_cap) {
    /* the first read's size (an idle stream holds no more than it did), then doubling */
    size_t cap = c->scratch_cap * 2 > need ? c->scratch_cap * 2 : need;
    if (cap > TS_GW_TAP_DEFER_MAX) cap = TS_GW_TAP_DEFER_MAX;
    char *ns = realloc(c->scratch, cap);
    if (!ns) return; /* as above: only the tap misses these */
    c->scratch = ns;
    c->scratch_cap = cap;
  }
  memcpy(c->scratch + c->scratch_len, p, n);
  c->scratch_len = need;
  if (!c->tap_queued) {
    ts_gw *gw = c->gw;
    if (!gw->tap_q) event_active(gw->tap_ev, EV_TIMEOUT, 1);
    c->tap_next = gw->tap_q;
    if (gw->tap_q) gw->tap_q->tap_prev = c;
    gw->tap_q = c;
    c->tap_queued = 1;
  }
}

/* The tap of a reply start_reply chose to tap, made at its first body byte. */
static void tap_start(conn *c) {
  ts_gw *gw = c->gw;
  c->want_tap = 0;
  ts_tap_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.format = c->format;
  cfg.progress_arg = lookup_progress;
  cfg.progress_user = c;
  cfg.deltas = gw->cfg.deltas;
  cfg.text = gw->cfg.text;
  cfg.content_type = c->ctype; /* the tap decides the framing by it (stream/tap.h) */
  cfg.turn = next_turn(c);
  c->tap = NULL;
  if (ts_tap_new(&c->tap, &cfg, on_tap_event, c) != TS_E_OK) ST_ADD(gw, tap_errors, 1);
  else ST_ADD(gw, taps_open, 1);
}

/* Decoded body bytes: to the client for OUT_DECODED / OUT_RECHUNK (OUT_RAW forwarded
 * the raw bytes already), then a copy to the tap. */
static void body_data(conn *c, const char *p, size_t n) {
  if (!n) return;
  ts_gw *gw = c->gw;
  if (c->out_mode == OUT_DECODED) {
    client_write(c, p, n);
  } else if (c->out_mode == OUT_RECHUNK) {
    client_printf(c, "%zx\r\n", n);
    client_write(c, p, n);
    client_write(c, "\r\n", 2);
  }
  ST_ADD(gw, bytes_down, n);
  if (c->want_tap) tap_start(c);
  if (!c->tap) return;
  tap_defer(c, p, n);
}

static void on_chunk_data(void *user, const char *p, size_t n) { body_data(user, p, n); }

/* ---- the upstream keep-alive pool (one per worker) ----------------------------------------- */

static void pool_unlink(pooled *p) {
  ts_gw *gw = p->gw;
  if (p->prev) p->prev->next = p->next;
  else gw->pool = p->next;
  if (p->next) p->next->prev = p->prev;
  gw->npool--;
  event_free(p->ev);
}

/* The interest every event on a plain upstream socket registers: the same for the
 * connection's own event and the pool's, so that handing a connection to the pool and
 * back changes nothing in the kernel (libevent counts the events per fd and calls
 * epoll_ctl only when that set changes). */
#define UP_EVENTS (EV_READ | EV_WRITE | EV_CLOSED | EV_ET | EV_PERSIST)

static void on_pooled(evutil_socket_t fd, short what, void *arg) {
  /* readable (the upstream closed it, or sent what nobody asked) or idle; an edge that
   * only says writable means nothing for an idle connection */
  if (!(what & (EV_READ | EV_CLOSED | EV_TIMEOUT))) return;
  pooled *p = arg;
  pool_unlink(p);
  evutil_closesocket(fd);
  free(p);
}

/* After a whole reply: the plain upstream connection goes to the pool when the reply left
 * it reusable and the pool has room; c no longer owns it then. */
static void pool_put(conn *c) {
  ts_gw *gw = c->gw;
  if (!c->up_keep || c->more_after || c->ufd < 0 || evbuffer_get_length(c->uout) ||
      gw->npool >= TS_GW_POOL_MAX)
    return;
  pooled *p = calloc(1, sizeof *p);
  if (!p) return;
  p->gw = gw;
  p->rt = c->rt;
  p->fd = c->ufd;
  p->ev = event_new(gw->base, p->fd, UP_EVENTS, on_pooled, p); /* before c's event goes */
  struct timeval tv = {TS_GW_POOL_IDLE_MS / 1000, (TS_GW_POOL_IDLE_MS % 1000) * 1000};
  if (!p->ev || event_add(p->ev, &tv)) {
    if (p->ev) event_free(p->ev);
    free(p);
    return;
  }
  p->next = gw->pool;
  if (gw->pool) gw->pool->prev = p;
  gw->pool = p;
  gw->npool++;
  event_free(c->uev);
  c->uev = NULL;
  c->up_hup = 0;
  c->ufd = -1;
}

/* An idle connection to rt's upstream from the pool, or NULL. The caller registers its
 * own event on p->fd, then pool_release(p) (in that order: no change of interest). */
static pooled *pool_take(ts_gw *gw, const ts_gw_route *rt) {
  for (pooled *p = gw->pool; p; p = p->next)
    if (p->rt == rt) return p;
  return NULL;
}

/* Drops a taken entry: its event and record; the socket is the caller's now. */
static void pool_release(pooled *p) {
  pool_unlink(p);
  free(p);
}

/* The response is complete. May free c. */
static void response_done(conn *c) {
  pool_put(c);
  tap_flush(c);
  if (c->tap) ts_tap_finish(c->tap);
  if (c->out_mode == OUT_RECHUNK) client_write(c, "0\r\n\r\n", 5);
  exchange_done(c, c->close_after);
}

/* A malformed chunk mid-body: the reply is cut there. Frees c; returns 1. */
static int bad_chunk(conn *c, struct evbuffer *in, const char *why) {
  char msg[512];
  snprintf(msg, sizeof msg, "the upstream %s sent a malformed chunked body: %s",
           c->rt->up.host_hdr, why);
  evbuffer_drain(in, evbuffer_get_length(in));
  cut(c, TS_E_GW_RESPONSE, msg);
  return 1;
}

/* One run of body bytes read from the upstream (p, n): to the client, then the tap.
 * *used is what belongs to the body (less than n only when the body ended inside).
 * Returns 1 when c was freed (the reply ended, was cut, or the client is gone). */
static int body_segment(conn *c, const char *p, size_t n, size_t *used_out) {
  size_t k = n;
  int done = 0;
  *used_out = n;
  if (c->want_tap && n) tap_start(c); /* before the client can see the first byte */
  if (c->uf.kind == TS_HTTP_BODY_LENGTH) {
    if ((uint64_t)k > c->uleft) k = (size_t)c->uleft;
    if (c->out_mode == OUT_RAW) client_write(c, p, k);
    body_data(c, p, k);
    c->uleft -= k;
    done = c->uleft == 0;
  } else if (c->uf.kind == TS_HTTP_BODY_CLOSE) {
    if (c->out_mode == OUT_RAW) client_write(c, p, k);
    body_data(c, p, k);
  } else if (c->uf.kind == TS_HTTP_BODY_CHUNKED) {
    const char *why = NULL;
    if (c->out_mode == OUT_RAW && !c->tap && !c->want_tap) {
      /* no tap: one pass, which only counts the data; the raw bytes go after it */
      uint64_t before = c->udec.offset;
      long used = ts_chunked_feed(&c->udec, p, n, on_chunk_data, c, &done, &why);
      k = used < 0 ? (size_t)(c->udec.offset - before) : (size_t)used;
      client_write(c, p, k);
      if (used < 0) return bad_chunk(c, up_input(c), why);
      goto fed;
    }
    if (c->out_mode == OUT_RAW) {
      /* the client gets the raw framing first; a probe finds where the body ends, so
       * nothing after it is forwarded */
      ts_chunked probe = c->udec;
      long used = ts_chunked_feed(&probe, p, n, NULL, NULL, &done, &why);
      k = used < 0 ? (size_t)(probe.offset - c->udec.offset) : (size_t)used;
      client_write(c, p, k);
      if (used < 0) return bad_chunk(c, up_input(c), why);
    }
    long used = ts_chunked_feed(&c->udec, p, k, on_chunk_data, c, &done, &why);
    if (used < 0) return bad_chunk(c, up_input(c), why);
    k = (size_t)used;
  fed:;
  } else {
    done = 1;
    k = 0;
  }
  *used_out = k;
  if (k < n) c->up_keep = 0; /* bytes after the body: the connection is not reusable */
  if (c->client_dead) {
    ST_ADD(c->gw, client_aborts, 1);
    conn_free(c);
    return 1;
  }
  if (done) {
    response_done(c);
    return 1;
  }
  return 0;
}

/* After a read: a body that has none ends; a slow client pauses the upstream. Returns 1
 * when c was freed. */
static int body_after_read(conn *c) {
  if (c->uf.kind == TS_HTTP_BODY_NONE) {
    response_done(c);
    return 1;
  }
  if (client_queued(c) > TS_GW_CLIENT_HIGH_WATER && !c->paused) {
    c->paused = 1;
    up_reading(c, 0);
  }
  return 0;
}

/* Moves what the upstream input holds of the body to the client. Returns 1 when c was
 * freed. */
static int upstream_body(conn *c) {
  struct evbuffer *in = up_input(c);
  for (;;) {
    struct evbuffer_iovec v;
    if (evbuffer_peek(in, -1, NULL, &v, 1) < 1 || !v.iov_len) break;
    size_t used;
    c->more_after = evbuffer_get_length(in) > v.iov_len;
    if (body_segment(c, v.iov_base, v.iov_len, &used)) return 1;
    evbuffer_drain(in, used);
  }
  return body_after_read(c);
}

/* ---- the upstream: the response head ----------------------------------------------------- */

static int hop_by_hop(ts_view name, const ts_http_head *h) {
  static const char *const hop[] = {"Connection", "Keep-Alive", "Proxy-Connection",
                                    "Proxy-Authenticate", "Proxy-Authorization", "TE",
                                    "Trailer", "Trailers", "Transfer-Encoding", "Upgrade"};
  for (size_t i = 0; i < sizeof hop / sizeof hop[0]; i++)
    if (name.len == strlen(hop[i]) && !strncasecmp(name.p, hop[i], name.len)) return 1;
  char tok[128];
  if (name.len >= sizeof tok) return 0;
  memcpy(tok, name.p, name.len);
  tok[name.len] = '\0';
  for (size_t i = 0; i < h->nfields; i++) /* fields named in Connection are hop-by-hop too */
    if (h->fields[i].name.len == 10 && !strncasecmp(h->fields[i].name.p, "Connection", 10) &&
        ts_http_list_has(h->fields[i].value, tok))
      return 1;
  return 0;
}

static int field_is(ts_view name, const char *s) {
  return name.len == strlen(s) && !strncasecmp(name.p, s, name.len);
}

/* Whether a 2xx reply goes through the tap, by its Content-Type (stream/tap.h): a model
 * stream; on a path that names a provider, an HTML page (a login wall: the tap says so);
 * and application/json where that provider streams JSON (Gemini's array without alt=sse;
 * for the others a JSON reply is a non-streamed answer, which is no stream to read).
 * Other replies (model lists, files) are passed without a tap. */
static int tapped(const conn *c, ts_view ct) {
  const ts_provider *p = ts_provider_get(c->format);
  switch (ts_tap_media(ct.p, ct.len)) {
    case TS_TAP_MEDIA_STREAM: return 1;
    case TS_TAP_MEDIA_HTML: return p != NULL;
    case TS_TAP_MEDIA_JSON: return p && p->json_stream;
    default: return 0;
  }
}

/* The upstream's head is h (views into p). Starts the client's reply. Returns 1 when c
 * was freed. */
static int start_reply(conn *c) {
  ts_gw *gw = c->gw;
  ts_http_head *h = c->h;
  const char *why = NULL;
  if (ts_http_response_framing(h, c->head_method, &c->uf, &why)) {
    char msg[300];
    snprintf(msg, sizeof msg, "the upstream %s sent %s", c->rt->up.host_hdr, why);
    fail_before_head(c, TS_E_GW_RESPONSE, 502, msg);
    return 1;
  }
  ts_gw_metrics_latency(&gw->m, mono_s() - c->t_start);
  c->log_status = h->status;
  c->uleft = c->uf.length;
  /* how the body travels to this client */
  int client11 = c->minor == 1;
  const char *framing = "";
  char clbuf[64];
  c->out_mode = OUT_RAW;
  switch (c->uf.kind) {
  case TS_HTTP_BODY_LENGTH:
    snprintf(clbuf, sizeof clbuf, "Content-Length: %llu\r\n", (unsigned long long)c->uf.length);
    framing = clbuf;
    break;
  case TS_HTTP_BODY_CHUNKED:
    if (client11) framing = "Transfer-Encoding: chunked\r\n";
    else c->out_mode = OUT_DECODED, c->close_after = 1;
    break;
  case TS_HTTP_BODY_CLOSE:
    if (client11) framing = "Transfer-Encoding: chunked\r\n", c->out_mode = OUT_RECHUNK;
    else c->close_after = 1;
    break;
  case TS_HTTP_BODY_NONE: {
    ts_view cl;
    if (c->head_method && ts_http_field_get(h, "Content-Length", &cl) == 1 && cl.len < 20) {
      snprintf(clbuf, sizeof clbuf, "Content-Length: %.*s\r\n", (int)cl.len, cl.p);
      framing = clbuf;
    } else if (h->status >= 200 && h->status != 204 && h->status != 304) {
      framing = "Content-Length: 0\r\n";
    }
    break;
  }
  }
  if (!c->keep_alive) c->close_after = 1;
  int up_close = h->minor != 1;
  for (size_t i = 0; i < h->nfields; i++)
    if (field_is(h->fields[i].name, "Connection") && ts_http_list_has(h->fields[i].value, "close"))
      up_close = 1;
  c->up_keep = !c->ubev && !up_close && c->uf.kind != TS_HTTP_BODY_CLOSE;
  if (c->ureq) { /* the answer is coming: no second attempt from here on */
    evbuffer_free(c->ureq);
    c->ureq = NULL;
  }

  ts_buf out;
  ts_buf_init(&out, gw->cfg.max_header_bytes + 4096);
  char line[64];
  snprintf(line, sizeof line, "HTTP/1.1 %d ", h->status);
  ts_buf_puts(&out, line);
  ts_buf_append(&out, h->reason.p, h->reason.len);
  ts_buf_puts(&out, "\r\n");
  for (size_t i = 0; i < h->nfields; i++) {
    ts_view n = h->fields[i].name;
    if (hop_by_hop(n, h) || field_is(n, TS_GW_HEADER_THREAD) || field_is(n, "Content-Length"))
      continue;
    ts_buf_append(&out, n.p, n.len);
    ts_buf_puts(&out, ": ");
    ts_buf_append(&out, h->fields[i].value.p, h->fields[i].value.len);
    ts_buf_puts(&out, "\r\n");
  }
  ts_buf_puts(&out, framing);
  ts_buf_puts(&out, TS_GW_HEADER_THREAD ": ");
  ts_buf_puts(&out, c->thread);
  ts_buf_puts(&out, c->close_after ? "\r\nConnection: close\r\n\r\n" : "\r\n\r\n");

  ts_view ct = {NULL, 0};
  ts_http_field_get(h, "Content-Type", &ct);
  int code = h->status;
  if (code >= 200 && code < 300 && publishes(gw) &&
      tapped(c, ct)) {
    snprintf(c->ctype, sizeof c->ctype, "%.*s", (int)(ct.len < 255 ? ct.len : 255),
             ct.p ? ct.p : "");
    c->want_tap = 1; /* the tap itself comes with the first body byte (tap_start) */
  } else if (code >= 400) {
    char msg[96];
    snprintf(msg, sizeof msg, "the upstream answered %d", code);
    publish_error(c, TS_E_GW_STATUS, msg);
  }
  int werr = out.err ? -1 : client_write(c, out.p, out.len);
  ts_buf_fini(&out);
  c->headers_sent = 1;
  evtimer_del(c->utimer);
  if (werr) {
    if (c->client_dead) ST_ADD(c->gw, client_aborts, 1);
    conn_free(c);
    return 1;
  }
  struct timeval tv = {gw->cfg.idle_timeout_ms / 1000, (gw->cfg.idle_timeout_ms % 1000) * 1000};
  if (c->ubev) {
    bufferevent_set_timeouts(c->ubev, &tv, NULL);
  } else { /* read interest stays as it is; the idle check is utimer's, armed once */
    c->last_read = coarse_s();
    arm_ms(c->utimer, gw->cfg.idle_timeout_ms);
  }
  c->ustate = U_BODY;
  return 0;
}

/* What the upstream input holds: the head (once), then body bytes. Returns 1 when the
 * exchange ended (c may be freed), 0 while it goes on. */
static int up_process(conn *c) {
  struct evbuffer *in = up_input(c);
  while (c->ustate == U_HEAD) {
    size_t n = evbuffer_get_length(in), lim = c->gw->cfg.max_header_bytes;
    if (!n) return 0;
    size_t look = n < lim + 1 ? n : lim + 1;
    const char *p = (const char *)evbuffer_pullup(in, (ev_ssize_t)look);
    if (!p) return 0;
    size_t end = ts_http_head_end(p, look, &c->uscan);
    if (!end) {
      if (look > lim) {
        char msg[400];
        snprintf(msg, sizeof msg, "the upstream %s sent a response head over %zu bytes",
                 c->rt->up.host_hdr, lim);
        fail_before_head(c, TS_E_GW_RESPONSE, 502, msg);
        return 1;
      }
      return 0;
    }
    const char *why = NULL;
    c->h = &c->gw->up_head;
    if (ts_http_parse_response(p, end, c->h, &why) || c->h->status == 101) {
      char msg[400];
      snprintf(msg, sizeof msg, "the upstream %s sent a malformed response: %s",
               c->rt->up.host_hdr, why ? why : "an unasked protocol switch");
      fail_before_head(c, TS_E_GW_RESPONSE, 502, msg);
      return 1;
    }
    if (c->h->status < 200) { /* 100 Continue, 103 Early Hints: not forwarded */
      evbuffer_drain(in, end);
      c->uscan = 0;
      continue;
    }
    if (start_reply(c)) return 1;
    c->h = NULL; /* the worker's, for the next head read */
    evbuffer_drain(in, end);
  }
  return upstream_body(c);
}

static void on_up_read(struct bufferevent *bev, void *arg) {
  (void)bev;
  (void)up_process(arg);
}

static int up_raw_connect(conn *c);

/* The upstream connection ended (BEV_EVENT_EOF, _ERROR or _TIMEOUT in `what`). May free
 * c. */
static void up_end(conn *c, short what) {
  const char *host = c->rt->up.host_hdr;
  char msg[700];
  if (c->ustate == U_HEAD && c->reused && !c->ubytes && c->ureq) {
    /* a kept-alive connection the upstream had closed (its close crossed our request):
     * nothing was answered, so the request goes once more, on a fresh connection */
    event_free(c->uev);
    c->uev = NULL;
    c->up_hup = 0;
    evutil_closesocket(c->ufd);
    c->ufd = -1;
    c->reused = 0;
    c->uconnected = 0;
    evbuffer_drain(c->uout, evbuffer_get_length(c->uout));
    evbuffer_add_buffer(c->uout, c->ureq);
    evbuffer_free(c->ureq);
    c->ureq = NULL;
    int rc = up_raw_connect(c);
    if (!rc) return;
    if (rc == TS_E_NOMEM) {
      upstream_free(c);
      reply_error(c, 503, "toolstream gateway: out of memory", 1);
      return;
    }
  }
  if (c->ustate == U_HEAD) {
    char reason[300];
    if (c->rt->up.tls && ts_upstream_tls_failure(c->ubev, reason, sizeof reason)) {
      snprintf(msg, sizeof msg, "TLS with the upstream %s failed: %s", host, reason);
      fail_before_head(c, TS_E_GW_TLS, 502, msg);
      return;
    }
    snprintf(msg, sizeof msg,
             c->uconnected ? "the upstream %s broke off before answering"
                           : "cannot connect to the upstream %s",
             host);
    fail_before_head(c, TS_E_GW_UPSTREAM, 502, msg);
    return;
  }
  if (what & BEV_EVENT_TIMEOUT) {
    snprintf(msg, sizeof msg, "the upstream %s went idle mid-stream", host);
    cut(c, TS_E_GW_TIMEOUT, msg);
    return;
  }
  /* EOF or error inside the body: what was read is forwarded first */
  if (upstream_body(c)) return;
  if (c->uf.kind == TS_HTTP_BODY_CLOSE && (what & BEV_EVENT_EOF)) {
    response_done(c); /* the close is the end of such a body */
    return;
  }
  snprintf(msg, sizeof msg, "the upstream %s broke off mid-stream", host);
  cut(c, TS_E_GW_UPSTREAM, msg);
}

static void on_up_event(struct bufferevent *bev, short what, void *arg) {
  (void)bev;
  conn *c = arg;
  if (what & BEV_EVENT_CONNECTED) {
    c->uconnected = 1;
    return;
  }
  up_end(c, what);
}

/* A plain upstream is readable: one read(2) of at most 64 KiB, as it comes. Body bytes
 * with nothing waiting before them are forwarded from the read buffer itself. The event
 * is edge-triggered: a read that filled the buffer, or a FIN seen, leaves bytes (or the
 * EOF) that no new edge will announce, so the loop is asked to come back in its next
 * turn (bounded work per callback) rather than reading on here. A paused connection
 * (a slow client) is not read; its resume comes back here (up_reading). */
static void up_raw_readable(conn *c) {
  if (c->paused) return;
  char *buf = c->gw->rbuf;
  ssize_t n = recv(c->ufd, buf, sizeof c->gw->rbuf, 0);
  if (n == 0) {
    up_end(c, BEV_EVENT_EOF);
    return;
  }
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
    up_end(c, BEV_EVENT_ERROR);
    return;
  }
  c->uconnected = 1;
  c->last_read = coarse_s();
  c->ubytes += (uint64_t)n;
  if (c->ustate == U_BODY && !evbuffer_get_length(c->uin)) {
    size_t used;
    c->more_after = 0;
    if (body_segment(c, buf, (size_t)n, &used) || body_after_read(c)) return;
  } else {
    if (evbuffer_add(c->uin, buf, (size_t)n)) {
      up_end(c, BEV_EVENT_ERROR);
      return;
    }
    if (up_process(c)) return;
  }
  if ((size_t)n == sizeof c->gw->rbuf || c->up_hup) event_active(c->uev, EV_READ, 1);
}

/* A plain upstream is writable: the request goes out (once the connect has finished:
 * its failure fails this write, so no getsockopt is needed to learn it). Returns 1 when
 * the exchange ended (c may be freed). */
static int up_raw_writable(conn *c) {
  while (evbuffer_get_length(c->uout)) {
    int w = evbuffer_write(c->uout, c->ufd);
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return 0;
    if (w <= 0) {
      up_end(c, BEV_EVENT_ERROR);
      return 1;
    }
    c->uconnected = 1;
  }
  return 0;
}

static void on_up_raw(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  conn *c = arg;
  if (what & EV_CLOSED) c->up_hup = 1;
  if ((what & EV_WRITE) && evbuffer_get_length(c->uout) && up_raw_writable(c)) return;
  if (what & (EV_READ | EV_CLOSED)) up_raw_readable(c);
}

/* The plain upstream connection fd is c's: one event for reading, writing and its close,
 * registered once (edge-triggered, see "System calls"). For a pooled connection (`kept`)
 * the pool's event on the same fd still holds that interest, so adding this one and then
 * releasing the pool's changes nothing in the kernel; the request is written at once then
 * (the connection is up: no edge will say it is writable). Returns 0 or TS_E_NOMEM. */
static int up_raw_events(conn *c, evutil_socket_t fd, pooled *kept) {
  c->ufd = fd;
  c->up_hup = 0;
  c->uev = event_new(c->gw->base, fd, UP_EVENTS, on_up_raw, c);
  if (!c->uev || event_add(c->uev, NULL)) return TS_E_NOMEM;
  if (kept) event_active(c->uev, EV_WRITE, 1); /* the request, in this turn of the loop */
  return 0;
}

/* Opens a plain upstream connection (the name resolved as libevent would without a DNS
 * base: getaddrinfo, first address). Returns 0, -1 (cannot connect) or TS_E_NOMEM. */
static int up_raw_connect(conn *c) {
  char port[16];
  snprintf(port, sizeof port, "%d", c->rt->up.port);
  struct addrinfo hints, *ai = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  if (getaddrinfo(c->rt->up.host, port, &hints, &ai) || !ai) return -1;
  evutil_socket_t fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int r = fd < 0 ? -1 : connect(fd, ai->ai_addr, ai->ai_addrlen);
  int err = errno;
  freeaddrinfo(ai);
  if (fd < 0) return -1;
  if (r < 0 && err != EINPROGRESS) {
    evutil_closesocket(fd);
    return -1;
  }
  ST_ADD(c->gw, upstream_connects, 1);
  return up_raw_events(c, fd, NULL);
}

static void on_utimer(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  conn *c = arg;
  if (!up_active(c)) return;
  ts_gw *gw = c->gw;
  if (c->headers_sent) { /* the idle check of a plain upstream's body (utimer, above) */
    double idle = (coarse_s() - c->last_read) * 1000, lim = gw->cfg.idle_timeout_ms;
    if (c->paused) { /* not reading (a slow client): not idle; the time starts at resume */
      arm_ms(c->utimer, lim);
    } else if (idle >= lim) {
      up_end(c, BEV_EVENT_TIMEOUT | BEV_EVENT_READING);
    } else {
      arm_ms(c->utimer, lim - idle);
    }
    return;
  }
  double el = (mono_s() - c->t_start) * 1000;
  char buf[128];
  if (!c->uconnected && el >= gw->cfg.connect_timeout_ms) {
    snprintf(buf, sizeof buf, "no connection to the upstream within %d ms",
             gw->cfg.connect_timeout_ms);
  } else if (el >= gw->cfg.headers_timeout_ms) {
    snprintf(buf, sizeof buf, "no response headers from the upstream within %d ms",
             gw->cfg.headers_timeout_ms);
  } else {
    double next = gw->cfg.headers_timeout_ms - el;
    if (!c->uconnected && gw->cfg.connect_timeout_ms - el < next)
      next = gw->cfg.connect_timeout_ms - el;
    arm_ms(c->utimer, next);
    return;
  }
  fail_before_head(c, TS_E_GW_TIMEOUT, 504, buf);
}

/* ---- the request: forwarding ------------------------------------------------------------- */

/* Refuses paths that could mean another path behind a prefix route: dot segments
 * ("/a/../b", also percent-encoded), empty segments ("//host/x"), backslashes and
 * encoded slashes, which servers may decode into segments. */
static const char *bad_path(const char *path, size_t plen) {
  for (size_t i = 0; i < plen; i++) {
    char ch = path[i];
    if (ch == '\\') return "a backslash in the path";
    if (ch == '%' && i + 2 < plen) {
      char a = path[i + 1], b = path[i + 2];
      if ((a == '2' && (b == 'f' || b == 'F')) || (a == '5' && (b == 'c' || b == 'C')))
        return "an encoded slash or backslash in the path";
    }
    if (ch != '/') continue;
    if (i + 1 < plen && path[i + 1] == '/') return "an empty path segment ('//')";
    /* the segment after this slash: ".", "..", or their %2e spellings */
    size_t j = i + 1, dots = 0, other = 0;
    while (j < plen && path[j] != '/') {
      if (path[j] == '.') dots++, j++;
      else if (path[j] == '%' && j + 2 < plen && path[j + 1] == '2' &&
               (path[j + 2] == 'e' || path[j + 2] == 'E'))
        dots++, j += 3;
      else other++, j++;
    }
    if (!other && (dots == 1 || dots == 2)) return "a '.' or '..' path segment";
  }
  return NULL;
}

static const char *const methods[] = {"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"};

/* Writes the normalised request to the upstream's output: our request line, Host, the
 * end-to-end fields as received, one Content-Length of the body read. */
static int write_upstream_request(conn *c, struct evbuffer *o, const char *target,
                                  const char *body, size_t blen) {
  const ts_http_head *h = c->h;
  int rc = evbuffer_add_printf(o, "%.*s %s%s HTTP/1.1\r\nHost: %s\r\n", (int)h->method.len,
                               h->method.p, c->rt->base_path, target, c->rt->up.host_hdr) < 0;
  for (size_t i = 0; i < h->nfields && !rc; i++) {
    ts_view n = h->fields[i].name, v = h->fields[i].value;
    if (hop_by_hop(n, h) || field_is(n, "Host") || field_is(n, "Content-Length") ||
        field_is(n, "Accept-Encoding") || field_is(n, "Expect"))
      continue;
    rc = evbuffer_add_printf(o, "%.*s: %.*s\r\n", (int)n.len, n.p, (int)v.len, v.p) < 0;
  }
  int needs_length = blen || field_is(h->method, "POST") || field_is(h->method, "PUT") ||
                     field_is(h->method, "PATCH");
  if (!rc && needs_length) rc = evbuffer_add_printf(o, "Content-Length: %zu\r\n", blen) < 0;
  if (!rc)
    rc = evbuffer_add_printf(o, "Accept-Encoding: identity\r\n%s\r\n",
                             c->rt->up.tls ? "Connection: close\r\n" : "") < 0;
  if (!rc && blen) rc = evbuffer_add(o, body, blen);
  return rc;
}

/* Query parameters whose values the access log shows; every other value is a secret as
 * far as the log knows (Gemini's key=, a SAS sig=, a presigned X-Amz-Signature=, any
 * token=) and is written as ***. */
static int query_value_shown(const char *name, size_t n) {
  static const char *const shown[] = {"alt", "api-version", "stream"};
  for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++)
    if (strlen(shown[i]) == n && !memcmp(shown[i], name, n)) return 1;
  return 0;
}

/* Appends [p, p + n) to out (length *at, room for cap - 1 bytes and the NUL), cut at
 * the room left. */
static void log_put(char *out, size_t cap, size_t *at, const char *p, size_t n) {
  if (n > cap - 1 - *at) n = cap - 1 - *at;
  memcpy(out + *at, p, n);
  *at += n;
  out[*at] = '\0';
}

/* "METHOD /path?a=1&key=***" into out (cap > 0), cut at 16 bytes of method and 256 of
 * target, control bytes as '?' (one line, whatever the client sent). */
static void log_request_line(char *out, size_t cap, ts_view method, ts_view target) {
  size_t at = 0;
  out[0] = '\0';
  log_put(out, cap, &at, method.p, method.len < 16 ? method.len : 16);
  log_put(out, cap, &at, " ", 1);
  const char *p = target.p, *end = p + (target.len < 256 ? target.len : 256);
  const char *q = memchr(p, '?', (size_t)(end - p));
  log_put(out, cap, &at, p, (size_t)((q ? q : end) - p));
  while (q) { /* at a '?' or '&': one parameter */
    log_put(out, cap, &at, q++, 1);
    const char *amp = memchr(q, '&', (size_t)(end - q)), *stop = amp ? amp : end;
    const char *eq = memchr(q, '=', (size_t)(stop - q));
    if (!eq || query_value_shown(q, (size_t)(eq - q))) {
      log_put(out, cap, &at, q, (size_t)(stop - q));
    } else {
      log_put(out, cap, &at, q, (size_t)(eq - q));
      log_put(out, cap, &at, "=***", eq + 1 < stop ? 4 : 1);
    }
    q = amp;
  }
  for (char *c = out; *c; c++)
    if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
}

/* The request is whole: answer it or send it upstream. May free c. */
static void dispatch(conn *c) {
  ts_gw *gw = c->gw;
  c->state = C_WAIT;
  evtimer_del(c->timer);
  /* while the request is answered, a client may send ahead only a bounded amount */
  bufferevent_setwatermark(c->bev, EV_READ, 0, TS_GW_PIPELINE_BYTES);
  ST_ADD(gw, requests_total, 1);
  ts_http_head *h = c->h;
  c->t_request = mono_s();
  c->log_status = 0;
  log_request_line(c->log_line, sizeof c->log_line, h->method, h->target);
  if (h->target.len > TS_GW_MAX_TARGET) {
    refuse(c, 414, "request target too long");
    return;
  }
  char uri[TS_GW_MAX_TARGET + 1];
  memcpy(uri, h->target.p, h->target.len);
  uri[h->target.len] = '\0';
  size_t plen = strcspn(uri, "?#");
  int get = field_is(h->method, "GET");
  if (get && plen == 8 && !strncmp(uri, "/healthz", 8)) {
    reply(c, 200, "text/plain", "ok\n", 3, 0);
    return;
  }
  if (get && plen == 8 && !strncmp(uri, "/metrics", 8)) {
    send_metrics(c);
    return;
  }
  if (uri[0] != '/') {
    refuse(c, 400, "only origin-form request targets");
    return;
  }
  const char *bad = bad_path(uri, plen);
  if (bad) {
    char msg[160];
    snprintf(msg, sizeof msg, "refused: %s", bad);
    refuse(c, 400, msg);
    return;
  }
  const ts_gw_route *rt = ts_gw_route_pick(gw->routes, gw->nroutes, uri);
  if (!rt) {
    ST_ADD(gw, requests_refused, 1);
    reply_error(c, 404, "toolstream gateway: no upstream for this path", 0);
    return;
  }
  ts_view th;
  size_t nth = ts_http_field_get(h, TS_GW_HEADER_THREAD, &th);
  if (nth > 1) {
    refuse(c, 400, "more than one " TS_GW_HEADER_THREAD " header");
    return;
  }
  if (nth == 1 && th.len > TS_THREAD_ID_MAX) {
    char msg[160];
    snprintf(msg, sizeof msg, TS_GW_HEADER_THREAD " is %zu bytes, over the limit of %d for a thread id",
             th.len, TS_THREAD_ID_MAX);
    refuse(c, 400, msg);
    return;
  }
  if (nth == 1 && !ts_thread_id_valid(th.p, th.len)) {
    refuse(c, 400, TS_GW_HEADER_THREAD " is not a valid thread id (1 to 256 bytes, no space, "
                   "control byte or DEL)");
    return;
  }
  if (nth == 1) {
    memcpy(c->thread, th.p, th.len);
    c->thread[th.len] = '\0';
    c->named_thread = 1;
  } else if (ts_thread_id_new(c->thread, sizeof c->thread)) {
    c->thread[0] = '\0';
    reply_error(c, 500, "toolstream gateway: no randomness for a thread id", 1);
    return;
  }
  c->rt = rt;
  c->format = ts_provider_for_path(uri, plen);
  c->t_start = mono_s();
  c->ustate = U_HEAD;
  ST_ADD(gw, streams_total, 1);
  ST_ADD(gw, streams_open, 1);
  c->counted_open = 1;

  struct evbuffer *uo;
  if (rt->up.tls) {
    c->ubev = ts_upstream_tls_bev(gw->base, gw->ssl_ctx, &rt->up);
    if (!c->ubev) goto nomem;
    bufferevent_setcb(c->ubev, on_up_read, NULL, on_up_event, c);
    bufferevent_setwatermark(c->ubev, EV_READ, 0, TS_GW_CLIENT_HIGH_WATER);
    bufferevent_enable(c->ubev, EV_READ | EV_WRITE);
    uo = bufferevent_get_output(c->ubev);
  } else {
    c->uin = evbuffer_new();
    c->uout = evbuffer_new();
    if (!c->uin || !c->uout) goto nomem;
    uo = c->uout;
  }

  size_t blen = evbuffer_get_length(c->body);
  const char *bp = blen ? (const char *)evbuffer_pullup(c->body, -1) : "";
  if (!bp) goto nomem;
  size_t rlen = 0;
  char *rewritten = blen ? ts_progress_strip(bp, blen, &c->defs, &rlen) : NULL;
  int wr = write_upstream_request(c, uo, uri, rewritten ? rewritten : bp, rewritten ? rlen : blen);
  ST_ADD(gw, bytes_up, rewritten ? rlen : blen);
  free(rewritten);
  free(c->head); /* the request's head and its views are no longer needed */
  c->head = NULL;
  c->h = NULL;
  evbuffer_drain(c->body, blen);
  if (wr) goto nomem;
  pooled *kp = rt->up.tls ? NULL : pool_take(gw, rt);
  int crc;
  if (kp) { /* a kept-alive connection: the request is kept for a second attempt */
    evutil_socket_t kept = kp->fd;
    ST_ADD(gw, upstream_reused, 1);
    c->reused = 1;
    c->uconnected = 1;
    size_t rl = evbuffer_get_length(uo);
    c->ureq = evbuffer_new();
    crc = !c->ureq || evbuffer_add(c->ureq, evbuffer_pullup(uo, -1), rl) ? TS_E_NOMEM
                                                                          : up_raw_events(c, kept, kp);
    pool_release(kp); /* after c's event is on the fd: the interest stays as it was */
    if (c->ufd < 0) evutil_closesocket(kept);
  } else {
    if (rt->up.tls) ST_ADD(gw, upstream_connects, 1); /* plain ones count in up_raw_connect */
    crc = rt->up.tls ? bufferevent_socket_connect_hostname(c->ubev, NULL, AF_UNSPEC, rt->up.host,
                                                           rt->up.port)
                     : up_raw_connect(c);
  }
  if (crc == TS_E_NOMEM) goto nomem;
  if (crc) {
    char msg[400];
    snprintf(msg, sizeof msg, "cannot connect to the upstream %s", rt->up.host_hdr);
    fail_before_head(c, TS_E_GW_UPSTREAM, 502, msg);
    return;
  }
  arm_ms(c->utimer, gw->cfg.connect_timeout_ms < gw->cfg.headers_timeout_ms
                        ? gw->cfg.connect_timeout_ms
                        : gw->cfg.headers_timeout_ms);
  return;
nomem:
  upstream_free(c);
  reply_error(c, 503, "toolstream gateway: out of memory", 1);
}

/* ---- the request: reading ------------------------------------------------------------------ */

static void body_piece(void *user, const char *p, size_t n) {
  conn *c = user;
  if (c->body_over) return;
  if (evbuffer_get_length(c->body) + n > c->gw->cfg.max_body_bytes || evbuffer_add(c->body, p, n))
    c->body_over = 1;
}

/* Reads body bytes. May free c. */
static void read_body(conn *c) {
  struct evbuffer *in = bufferevent_get_input(c->bev);
  size_t n = evbuffer_get_length(in);
  if (!n) return;
  arm_ms(c->timer, c->gw->cfg.idle_timeout_ms);
  if (c->rf.kind == TS_HTTP_BODY_LENGTH) {
    size_t take = (uint64_t)n < c->body_left ? n : (size_t)c->body_left;
    if (evbuffer_remove_buffer(in, c->body, take) != (int)take) {
      refuse(c, 503, "out of memory");
      return;
    }
    c->body_left -= take;
    if (!c->body_left) dispatch(c);
    return;
  }
  const char *p = (const char *)evbuffer_pullup(in, -1);
  int done = 0;
  const char *why = NULL;
  long used = p ? ts_chunked_feed(&c->bdec, p, n, body_piece, c, &done, &why) : -1;
  if (used < 0) {
    refuse(c, 400, why ? why : "out of memory");
    return;
  }
  evbuffer_drain(in, (size_t)used);
  if (c->body_over) {
    refuse(c, 413, "request body too large");
    return;
  }
  if (done) dispatch(c);
}

static int method_allowed(ts_view m) {
  for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
    if (m.len == strlen(methods[i]) && !memcmp(m.p, methods[i], m.len)) return 1;
  return 0;
}

/* Why a request from a browser (one with an Origin header) is refused, or NULL: the
 * origin must be allowed (base/origin.h), and, since a page whose name rebinds to our
 * address is its own origin, the Host must pass the rebinding rule too. */
static const char *browser_refused(const ts_gw *gw, const ts_http_head *h) {
  ts_view o, hv;
  const size_t no = ts_http_field_get(h, "Origin", &o);
  if (!no) return NULL;
  if (no > 1) return "more than one Origin header";
  char origin[512], host[512];
  if (o.len >= sizeof origin) return "origin not allowed";
  memcpy(origin, o.p, o.len);
  origin[o.len] = '\0';
  const char *hp = NULL;
  if (ts_http_field_get(h, "Host", &hv) == 1) {
    if (hv.len >= sizeof host) return "host not allowed";
    memcpy(host, hv.p, hv.len);
    host[hv.len] = '\0';
    hp = host;
  }
  if (!ts_host_allowed(hp, gw->cfg.origins, gw->cfg.norigins))
    return "host not allowed for a browser's request: use an IP address or localhost, or "
           "name the host with --allow-origin";
  if (!ts_origin_allowed(origin, hp, gw->cfg.origins, gw->cfg.norigins))
    return "origin not allowed (--allow-origin names the browser origins that may call "
           "the gateway)";
  return NULL;
}

/* Reads a request head; on a whole one, validates it and goes on to its body. May free c. */
static void read_head(conn *c) {
  ts_gw *gw = c->gw;
  struct evbuffer *in = bufferevent_get_input(c->bev);
  size_t n = evbuffer_get_length(in), lim = gw->cfg.max_header_bytes;
  if (!n) return;
  if (!c->head_started) {
    c->head_started = 1;
    if (!c->fresh) arm_ms(c->timer, gw->cfg.head_timeout_ms); /* a later request's deadline */
  }
  size_t look = n < lim + 1 ? n : lim + 1;
  const char *p = (const char *)evbuffer_pullup(in, (ev_ssize_t)look);
  if (!p) return;
  size_t end = ts_http_head_end(p, look, &c->scan);
  if (!end) {
    if (look > lim) refuse(c, 431, "request headers too large");
    return;
  }
  c->fresh = 0;
  c->head = malloc(sizeof *c->head + end);
  if (!c->head) {
    refuse(c, 503, "out of memory");
    return;
  }
  char *bytes = (char *)(c->head + 1);
  memcpy(bytes, p, end);
  c->h = c->head;
  evbuffer_drain(in, end);
  int status;
  const char *why = NULL;
  if (ts_http_parse_request(bytes, end, c->h, &status, &why)) {
    c->keep_alive = 0;
    refuse(c, status, why);
    return;
  }
  ts_http_head *h = c->h;
  c->minor = h->minor;
  c->head_method = field_is(h->method, "HEAD");
  ts_view v;
  int conn_close = 0;
  for (size_t i = 0; i < h->nfields; i++)
    if (field_is(h->fields[i].name, "Connection") && ts_http_list_has(h->fields[i].value, "close"))
      conn_close = 1;
  c->keep_alive = h->minor == 1 && !conn_close;
  if (ts_http_field_get(h, "Host", &v) > 1 || (h->minor == 1 && !ts_http_field_get(h, "Host", &v))) {
    refuse(c, 400, h->minor == 1 ? "an HTTP/1.1 request needs exactly one Host header"
                                 : "more than one Host header");
    return;
  }
  if ((why = browser_refused(gw, h))) {
    refuse(c, 403, why);
    return;
  }
  if (ts_http_request_framing(h, &c->rf, &status, &why)) {
    refuse(c, status, why);
    return;
  }
  if (!method_allowed(h->method)) {
    refuse(c, 405, "method not allowed");
    return;
  }
  if (c->rf.kind == TS_HTTP_BODY_LENGTH && c->rf.length > gw->cfg.max_body_bytes) {
    refuse(c, 413, "request body too large");
    return;
  }
  size_t nexp = ts_http_field_get(h, "Expect", &v);
  if (nexp) {
    if (nexp > 1 || v.len != 12 || strncasecmp(v.p, "100-continue", 12)) {
      refuse(c, 417, "only the 100-continue expectation is understood");
      return;
    }
    if (c->rf.kind != TS_HTTP_BODY_NONE && h->minor == 1 &&
        client_write(c, "HTTP/1.1 100 Continue\r\n\r\n", 25)) {
      conn_free(c);
      return;
    }
  }
  if (c->rf.kind == TS_HTTP_BODY_NONE) {
    dispatch(c);
    return;
  }
  c->body_left = c->rf.length;
  c->state = C_BODY;
  arm_ms(c->timer, gw->cfg.idle_timeout_ms);
  read_body(c);
}

/* ---- client connection events ----------------------------------------------------------------- */

static void on_client_read(struct bufferevent *bev, void *arg) {
  (void)bev;
  conn *c = arg;
  if (c->state == C_HEAD) read_head(c);
  else if (c->state == C_BODY) read_body(c);
  /* C_WAIT: a pipelined request waits in the input; C_CLOSING: reading is off */
}

static void on_kick(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  on_client_read(NULL, arg);
}

static void on_client_drained(conn *c) {
  if (c->state == C_CLOSING) {
    conn_free(c);
    return;
  }
  if (c->paused && up_active(c)) {
    c->paused = 0;
    up_reading(c, 1);
    /* what was read before the pause waits in the input */
    if (evbuffer_get_length(up_input(c)) && c->ustate == U_BODY) upstream_body(c);
  }
}

static void on_client_write(struct bufferevent *bev, void *arg) {
  (void)bev;
  on_client_drained(arg);
}

static void on_client_event(struct bufferevent *bev, short what, void *arg) {
  (void)bev;
  (void)what;
  conn *c = arg;
  /* EOF or an error: the client is gone. A request in flight upstream is cancelled at
   * once (its connection closed with the conn). */
  if (c->state == C_WAIT && up_active(c)) ST_ADD(c->gw, client_aborts, 1);
  conn_free(c);
}

static void on_client_timer(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  conn *c = arg;
  ts_gw *gw = c->gw;
  if (c->state == C_HEAD) {
    if (!c->head_started && !c->fresh) { /* an idle kept-alive connection */
      conn_free(c);
      return;
    }
    ST_ADD(gw, head_timeouts, 1);
    c->keep_alive = 0;
    refuse(c, 408, "the request head did not arrive in time");
    return;
  }
  if (c->state == C_BODY) {
    c->keep_alive = 0;
    refuse(c, 408, "the request body stalled");
    return;
  }
  if (c->state == C_CLOSING) conn_free(c); /* a client that does not read its reply */
}

/* ---- accepting ---------------------------------------------------------------------------------- */

static void refuse_connection(ts_gw *gw, evutil_socket_t fd, const char *why) {
  char body[200], msg[400];
  int bl = snprintf(body, sizeof body,
                    "{\"error\":{\"message\":\"toolstream gateway: %s\",\"type\":"
                    "\"toolstream_gateway\"}}\n",
                    why);
  int ml = snprintf(msg, sizeof msg,
                    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                    "Content-Length: %d\r\nRetry-After: 1\r\nConnection: close\r\n\r\n%s",
                    bl, body);
  /* best effort, never blocking: a full socket just closes */
  if (send(fd, msg, (size_t)ml, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) { /* nothing to do */
  }
  shutdown(fd, SHUT_WR);
  char sink[4096]; /* what the client sent already, so the close is a FIN, not a reset */
  while (recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0) {
  }
  evutil_closesocket(fd);
  ST_ADD(gw, connections_refused, 1);
}

/* ---- accepting, and which loop a connection goes to -------------------------------------- *
 * With several workers every one listens on the port (SO_REUSEPORT), and the kernel picks
 * the listener by a hash of the connection's addresses. What is cheapest is not an even
 * spread, though: a loop that wakes for a handful of streams pays its wake-ups for fewer
 * chunks, so two loops at 100 streams cost more CPU per chunk than one (docs/gateway.md,
 * "Workers"); a second loop pays off once one loop holds enough streams that a burst of
 * their chunks waits behind itself. So the first worker takes every connection while it
 * holds fewer than spread_at, and after that each goes to the worker that holds the
 * fewest (a tie to the one that accepted it). A connection accepted by one worker and
 * meant for another is handed over through the other's pipe (its fd and its peer, both
 * counted already: 16 bytes, one atomic pipe write), and lives on that worker until it
 * closes; when the pipe is full the accepting worker keeps it. */
typedef struct {
  evutil_socket_t fd;
  peer_node *pn;
} handed;

static size_t pick_worker(const gw_group *g, size_t self) {
  if (g->n < 2 || g->nlive[0] < g->spread_at) return 0;
  size_t best = self;
  for (size_t i = 0; i < g->n; i++)
    if (g->nlive[i] < g->nlive[best]) best = i;
  return best;
}

/* A client connection on this worker, counted already (conn_forget undoes it). */
static void conn_start(ts_gw *gw, evutil_socket_t fd, peer_node *pn) {
  conn *c = calloc(1, sizeof *c);
  if (!c) {
    conn_forget(gw, pn);
    refuse_connection(gw, fd, "out of memory");
    return;
  }
  c->ufd = -1;
  c->peer = pn;
  c->gw = gw;
  c->fd = fd;
  c->fresh = 1;
  c->state = C_HEAD;
  request_reset(c);
  c->next = gw->live;
  if (gw->live) gw->live->prev = c;
  gw->live = c;
  ST_ADD(gw, connections_open, 1);
  c->bev = bufferevent_socket_new(gw->base, fd, BEV_OPT_CLOSE_ON_FREE);
  c->timer = evtimer_new(gw->base, on_client_timer, c);
  c->utimer = evtimer_new(gw->base, on_utimer, c);
  c->kick = event_new(gw->base, -1, 0, on_kick, c);
  c->body = evbuffer_new();
  if (!c->bev || !c->timer || !c->utimer || !c->kick || !c->body) {
    if (!c->bev) evutil_closesocket(fd);
    conn_free(c);
    return;
  }
  bufferevent_setcb(c->bev, on_client_read, on_client_write, on_client_event, c);
  bufferevent_setwatermark(c->bev, EV_READ, 0, gw->cfg.max_header_bytes + TS_GW_PIPELINE_BYTES);
  bufferevent_enable(c->bev, EV_READ); /* writing: only while bytes wait (client_write) */
  arm_ms(c->timer, gw->cfg.head_timeout_ms);
}

/* Connections another worker handed to this one. */
static void on_handed(evutil_socket_t fd, short what, void *arg) {
  (void)what;
  ts_gw *gw = arg;
  handed h[64];
  ssize_t n;
  while ((n = read(fd, h, sizeof h)) > 0)
    for (size_t i = 0; i < (size_t)n / sizeof h[0]; i++) conn_start(gw, h[i].fd, h[i].pn);
}

static void on_accept(struct evconnlistener *lev, evutil_socket_t fd, struct sockaddr *sa,
                      int salen, void *arg) {
  (void)lev;
  (void)salen;
  ts_gw *gw = arg;
  gw_group *g = gw->grp;
  ts_accept_guard_ok(gw->guard);
  char addr[INET6_ADDRSTRLEN] = "?";
  if (sa->sa_family == AF_INET)
    inet_ntop(AF_INET, &((struct sockaddr_in *)sa)->sin_addr, addr, sizeof addr);
  else if (sa->sa_family == AF_INET6)
    inet_ntop(AF_INET6, &((struct sockaddr_in6 *)sa)->sin6_addr, addr, sizeof addr);
  size_t alen = strlen(addr);
  const char *no = NULL;
  size_t to = gw->index;
  /* the caps count every worker's connections */
  pthread_mutex_lock(&g->lock);
  peer_node *pn = (peer_node *)ts_hmap_find(&g->peers, addr, alen);
  if (g->nconns >= gw->cfg.max_connections) {
    no = "too many connections";
  } else if (pn && pn->count >= gw->cfg.max_per_client) {
    no = "too many connections from your address";
  } else if (!pn) {
    pn = calloc(1, sizeof *pn);
    if (pn) memcpy(pn->key, addr, alen + 1);
    if (!pn || ts_hmap_insert(&g->peers, &pn->h, pn->key, alen)) {
      free(pn);
      no = "out of memory";
    }
  }
  if (!no) {
    pn->count++;
    g->nconns++;
    to = pick_worker(g, gw->index);
    g->nlive[to]++;
  }
  pthread_mutex_unlock(&g->lock);
  if (no) {
    refuse_connection(gw, fd, no);
    return;
  }
  if (to != gw->index) {
    handed h = {fd, pn};
    if (write(g->w[to]->hand_fd[1], &h, sizeof h) == (ssize_t)sizeof h) return;
    pthread_mutex_lock(&g->lock); /* its pipe is full: this worker keeps it */
    g->nlive[to]--;
    g->nlive[gw->index]++;
    pthread_mutex_unlock(&g->lock);
  }
  conn_start(gw, fd, pn);
}

/* accept() failed (out of file descriptors): counted, and said when the guard says. */
static void on_accept_failed(void *arg, const char *line) {
  ts_gw *gw = arg;
  ST_ADD(gw, accept_errors, 1);
  if (line) gw_log(gw, "%s", line);
}

/* ---- setup --------------------------------------------------------------------------------------- */

static size_t default_max_connections(void) {
  struct rlimit rl;
  size_t fds = 1024;
  if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY) fds = (size_t)rl.rlim_cur;
  else if (!getrlimit(RLIMIT_NOFILE, &rl)) fds = 2 * TS_GW_MAX_CONNECTIONS_CAP;
  size_t n = fds > 2 * TS_GW_FD_RESERVE ? (fds - TS_GW_FD_RESERVE) / 2 : fds / 4;
  if (n < 1) n = 1;
  if (n > TS_GW_MAX_CONNECTIONS_CAP) n = TS_GW_MAX_CONNECTIONS_CAP;
  return n;
}

/* Worker i of g on `base`: its routes, timers and listener (on `port`, shared with the
 * other workers through SO_REUSEPORT when there are several: the kernel spreads the
 * connections over their listeners, and pick_worker says which worker keeps each), and,
 * with several workers, the pipe the others hand it connections through. The TLS context
 * is worker 0's, shared (an SSL_CTX may make SSL objects on several threads). */
static int worker_new(gw_group *g, struct event_base *base, const ts_gw_config *cfg, int port,
                      ts_gw **out, char *why, size_t why_cap) {
  ts_gw *gw = calloc(1, sizeof *gw);
  if (!gw) return TS_E_NOMEM;
  gw->grp = g;
  gw->index = g->n;
  gw->stop_fd[0] = gw->stop_fd[1] = -1;
  gw->hand_fd[0] = gw->hand_fd[1] = -1;
  g->w[g->n++] = gw;
  gw->base = base;
  gw->cfg = *cfg;
  int rc = 0;
  int need_tls = 0;
  for (size_t i = 0; i < cfg->n_upstreams; i++) {
    if ((rc = ts_gw_route_parse(cfg->upstreams[i].prefix, cfg->upstreams[i].url, &gw->routes[i],
                                why, why_cap)))
      return rc;
    need_tls |= gw->routes[i].up.tls;
    gw->nroutes++;
  }
  gw->cfg.upstreams = NULL;
  if (gw->index) {
    gw->ssl_ctx = g->w[0]->ssl_ctx;
  } else if (need_tls || cfg->ca_file) {
    rc = ts_upstream_tls_ctx(cfg->ca_file, &gw->ssl_ctx, why, why_cap);
    if (rc == TS_E_HTTP_TLS) rc = TS_E_GW_TLS;
    if (rc) return rc;
  }
  gw->tap_ev = event_new(base, -1, 0, on_tap_turn, gw);
  if (!gw->tap_ev) return TS_E_NOMEM;
  char pstr[16];
  snprintf(pstr, sizeof pstr, "%d", port);
  struct addrinfo hints, *ai = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  int gai = getaddrinfo(cfg->listen_host ? cfg->listen_host : "127.0.0.1", pstr, &hints, &ai);
  if (gai) {
    set_why(why, why_cap, "cannot listen: %s", gai_strerror(gai));
    return TS_E_IO;
  }
  if (cfg->workers > 1 &&
      (pipe2(gw->hand_fd, O_CLOEXEC | O_NONBLOCK) ||
       !(gw->hand_ev = event_new(base, gw->hand_fd[0], EV_READ | EV_PERSIST, on_handed, gw)) ||
       event_add(gw->hand_ev, NULL))) {
    freeaddrinfo(ai);
    return TS_E_NOMEM;
  }
  unsigned flags = LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC;
  if (cfg->workers > 1) flags |= LEV_OPT_REUSEABLE_PORT;
  gw->lev = evconnlistener_new_bind(base, on_accept, gw, flags, -1, ai->ai_addr,
                                    (int)ai->ai_addrlen);
  freeaddrinfo(ai);
  if (!gw->lev) {
    set_why(why, why_cap, "cannot listen: %s", strerror(errno));
    return TS_E_IO;
  }
  if (ts_accept_guard_new(gw->lev, on_accept_failed, gw, &gw->guard)) return TS_E_NOMEM;
  /* Each chunk goes to its client the moment it is read; Nagle would hold a chunk back
   * while the one before it waits for the client's (delayed) ACK. Accepted sockets take
   * the option from the listener (Linux), so it costs no call per connection. */
  int one = 1;
  setsockopt(evconnlistener_get_fd(gw->lev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  getsockname(evconnlistener_get_fd(gw->lev), (struct sockaddr *)&ss, &sl);
  gw->port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                      : ntohs(((struct sockaddr_in *)&ss)->sin_port);
  *out = gw;
  return 0;
}

/* A worker past 0 is told to stop: its loop ends where it is (ts_gw_free then frees its
 * connections on the caller's thread, once the worker's thread has been joined). */
static void on_worker_stop(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  ts_gw *gw = arg;
  event_base_loopbreak(gw->base);
}

static void *worker_main(void *arg) {
  ts_gw *gw = arg;
  event_base_dispatch(gw->base);
  return NULL;
}

static void worker_free(ts_gw *gw) {
  while (gw->live) conn_free(gw->live);
  while (gw->pool) {
    pooled *p = gw->pool;
    evutil_socket_t fd = p->fd;
    pool_unlink(p);
    evutil_closesocket(fd);
    free(p);
  }
  ts_accept_guard_free(gw->guard);
  if (gw->lev) evconnlistener_free(gw->lev);
  if (gw->tap_ev) event_free(gw->tap_ev);
  if (gw->hand_ev) event_free(gw->hand_ev);
  if (gw->hand_fd[0] >= 0) { /* connections handed over and not yet taken: closed */
    handed h;
    while (read(gw->hand_fd[0], &h, sizeof h) == (ssize_t)sizeof h) {
      evutil_closesocket(h.fd);
      conn_forget(gw, h.pn);
    }
    close(gw->hand_fd[0]);
  }
  if (gw->hand_fd[1] >= 0) close(gw->hand_fd[1]);
  if (gw->stop_ev) event_free(gw->stop_ev);
  if (gw->stop_fd[0] >= 0) close(gw->stop_fd[0]);
  if (gw->stop_fd[1] >= 0) close(gw->stop_fd[1]);
  if (gw->index == 0 && gw->ssl_ctx) SSL_CTX_free(gw->ssl_ctx);
  if (gw->index && gw->base) event_base_free(gw->base); /* its own */
  free(gw);
}

static void group_free(gw_group *g) {
  for (size_t i = 1; i <= g->running; i++) { /* stop and join every thread first */
    char b = 1;
    while (write(g->w[i]->stop_fd[1], &b, 1) < 0 && errno == EINTR) {
    }
    pthread_join(g->th[i], NULL);
  }
  for (size_t i = g->n; i-- > 0;) worker_free(g->w[i]); /* worker 0 (the TLS context) last */
  for (ts_hmap_node *n = ts_hmap_next(&g->seqs, NULL), *next; n; n = next) {
    next = ts_hmap_next(&g->seqs, n);
    ts_sink_free(((seq_node *)n)->sink);
    free(n);
  }
  ts_hmap_fini(&g->seqs);
  ts_hmap_fini(&g->peers); /* every peer left with its last connection */
  pthread_mutex_destroy(&g->lock);
  free(g);
}

int ts_gw_new(struct event_base *base, const ts_gw_config *cfg, ts_gw **out, char *why,
              size_t why_cap) {
  if (!base || !cfg || !out || !cfg->n_upstreams || cfg->n_upstreams > TS_GW_MAX_UPSTREAMS) {
    set_why(why, why_cap, "%s", "the gateway needs 1 to 16 upstreams");
    return TS_E_INVAL;
  }
  if (cfg->workers > TS_GW_MAX_WORKERS) {
    set_why(why, why_cap, "at most %s workers", TS_GW_STR(TS_GW_MAX_WORKERS));
    return TS_E_INVAL;
  }
  if (cfg->workers > 1 && cfg->serve) {
    set_why(why, why_cap, "%s", "the event endpoint runs on one loop: one worker with it");
    return TS_E_INVAL;
  }
  ts_gw_config c = *cfg;
  if (c.workers < 1) c.workers = 1;
  if (c.connect_timeout_ms <= 0) c.connect_timeout_ms = TS_GW_CONNECT_TIMEOUT_MS;
  if (c.headers_timeout_ms <= 0) c.headers_timeout_ms = TS_GW_HEADERS_TIMEOUT_MS;
  if (c.idle_timeout_ms <= 0) c.idle_timeout_ms = TS_GW_IDLE_TIMEOUT_MS;
  if (c.head_timeout_ms <= 0) c.head_timeout_ms = TS_GW_HEAD_TIMEOUT_MS;
  if (!c.max_header_bytes) c.max_header_bytes = TS_GW_MAX_HEADER_BYTES;
  if (!c.max_body_bytes) c.max_body_bytes = TS_GW_MAX_BODY_BYTES;
  if (!c.max_connections) c.max_connections = default_max_connections();
  if (!c.max_per_client) c.max_per_client = c.max_connections > 1 ? c.max_connections / 2 : 1;
  gw_group *g = calloc(1, sizeof *g);
  if (!g) return TS_E_NOMEM;
  g->spread_at = !c.spread_at ? TS_GW_SPREAD_AT : c.spread_at == TS_GW_SPREAD_EVEN ? 0 : c.spread_at;
  int rc = pthread_mutex_init(&g->lock, NULL) ? TS_E_NOMEM : 0;
  if (rc) {
    free(g);
    return rc;
  }
  rc = ts_hmap_init(&g->seqs);
  if (!rc) rc = ts_hmap_init(&g->peers);
  ts_gw *gw0 = NULL;
  if (!rc) rc = worker_new(g, base, &c, c.listen_port, &gw0, why, why_cap);
  for (int i = 1; !rc && i < c.workers; i++) {
    struct event_base *b = event_base_new();
    ts_gw *w = NULL;
    if (!b) {
      rc = TS_E_NOMEM;
      break;
    }
    size_t made = g->n;
    rc = worker_new(g, b, &c, gw0->port, &w, why, why_cap);
    if (g->n == made) { /* out of memory before the worker took the base */
      event_base_free(b);
      break;
    }
    w = g->w[made];
    if (rc) break;
    if (pipe2(w->stop_fd, O_CLOEXEC | O_NONBLOCK) ||
        !(w->stop_ev = event_new(b, w->stop_fd[0], EV_READ, on_worker_stop, w)) ||
        event_add(w->stop_ev, NULL))
      rc = TS_E_NOMEM;
  }
  for (size_t i = 1; !rc && i < g->n; i++) {
    if (pthread_create(&g->th[i], NULL, worker_main, g->w[i])) {
      rc = TS_E_NOMEM;
    } else {
      g->running = i;
      char name[16]; /* what ps and /proc show, named before ts_gw_new returns */
      snprintf(name, sizeof name, "ts-gw-worker-%zu", i % 100);
      pthread_setname_np(g->th[i], name);
    }
  }
  if (rc) {
    group_free(g);
    return rc;
  }
  *out = gw0;
  return 0;
}

int ts_gw_port(const ts_gw *gw) { return gw->port; }

void ts_gw_get_stats(const ts_gw *gw, ts_gw_stats *st) {
  ts_gw_metrics sum;
  memset(&sum, 0, sizeof sum);
  for (size_t i = 0; i < gw->grp->n; i++) ts_gw_metrics_sum(&sum, &gw->grp->w[i]->m);
  *st = sum.st;
}

int ts_gw_get_worker_stats(const ts_gw *gw, size_t i, ts_gw_stats *st) {
  if (i >= gw->grp->n) return TS_E_INVAL;
  ts_gw_metrics one;
  memset(&one, 0, sizeof one);
  ts_gw_metrics_sum(&one, &gw->grp->w[i]->m);
  *st = one.st;
  return 0;
}

void ts_gw_free(ts_gw *gw) {
  if (gw) group_free(gw->grp);
}
