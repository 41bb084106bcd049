/*
 * gateway.c: see gateway.h.
 *
 * Shape. One evhttp server takes the clients' requests. Each proxied request (a gw_req)
 * owns one evhttp client connection to its upstream and one client request on it; the
 * upstream's header callback starts the client's reply with the same status and
 * headers, its chunked callback moves each piece read from the socket into the client's
 * reply (evhttp_send_reply_chunk moves the evbuffer's chains: no copy on the forwarding
 * path) after copying it once for the tap, and its completion callback ends the reply.
 *
 * Backpressure. evhttp re-enables reading on the upstream bufferevent at the end of
 * every body read, after our chunk callback ran, so the pause cannot be done inside
 * that callback: it is done by a deferred event that runs right after it. The client's
 * reply chunks are sent with a "written" callback, which libevent calls when the
 * client's output buffer is empty; that resumes the upstream. A slow client therefore
 * holds at most one high-water mark of output plus one socket read in memory; the rest
 * stays in the kernel's socket buffers and TCP slows the upstream down.
 *
 * Lifetime. Every way a gw_req ends goes through reap(): it is unlinked, its callbacks
 * are disarmed, and the actual freeing (of the upstream connection above all, which
 * must not be freed from inside its own callbacks) happens in a deferred event owned by
 * the gw_req. libevent 2.1 quirks (as in http_client.c): a failed connect completes the
 * request with response code 0 and no error callback; a later failure calls the error
 * callback and then the completion callback with req == NULL.
 *
 * Thread ids and seq. The bus wants seq strictly increasing per thread, also across
 * requests (a conversation sends one request per turn with the same thread header), so
 * the gateway keeps the last seq of every thread named by a client header (up to
 * TS_GW_MAX_NAMED_THREADS of them). A made-up thread id belongs to one request, which
 * numbers its own events.
 */
#define _DEFAULT_SOURCE /* struct timeval */
#include "base/hmap.h"
#include "base/thread_id.h"
#include "net/gateway.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "events/bus_wire.h"
#include "events/event.h"
#include "net/gw_metrics.h"
#include "net/gw_route.h"
#include "net/progress_strip.h"
#include "net/upstream.h"
#include "stream/tap.h"


typedef struct gw_req gw_req;

struct ts_gw {
  struct event_base *base;
  struct evhttp *http;
  int port;
  ts_gw_route routes[TS_GW_MAX_UPSTREAMS];
  size_t nroutes;
  SSL_CTX *ssl_ctx;
  ts_gw_config cfg;
  ts_gw_metrics m;
  ts_hmap seqs; /* seq_node by thread id */
  gw_req *live;
  ts_buf line;
};

struct gw_req {
  ts_gw *gw;
  gw_req *prev, *next;
  struct evhttp_request *sreq;    /* the client's request (libevent's) */
  struct evhttp_connection *scon; /* the client's connection (libevent's) */
  struct evhttp_connection *ucon; /* ours */
  struct evhttp_request *ureq;    /* libevent's once made; NULL when settled */
  struct bufferevent *ubev;
  struct event *timer, *pause_ev, *reap_ev;
  const ts_gw_route *rt;
  ts_tap *tap;
  ts_tool_defs defs; /* progress arguments from the request's own tool definitions */
  ts_ms_format format;
  char *scratch;
  size_t scratch_cap;
  double t_start;
  int uerr;           /* the upstream's evhttp_request_error, -1 when none */
  int headers_sent, paused, reaping, counted_open;
  int named_thread; /* the thread id came from the client: its seq lives in the map */
  uint64_t seq;     /* a made-up thread's last seq (that thread is this request only) */
  char thread[132];
};

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void set_why(char *why, size_t cap, const char *msg, const char *arg) {
  if (why && cap) snprintf(why, cap, msg, arg);
}

/* ---- thread seq map ------------------------------------------------------------------ */

/* Threads named by clients whose seq the map keeps; past this, a new name's events are
 * numbered from 1 per request (a thread id reused by that many conversations is rare,
 * and the map must not grow without bound). */
#define TS_GW_MAX_NAMED_THREADS (1u << 20)

typedef struct {
  ts_hmap_node h; /* first */
  uint64_t seq;
  char key[]; /* the thread id, NUL-terminated */
} seq_node;

/* The next seq of `thread` (1 for a new thread); 0 when out of memory or full. */
static uint64_t next_seq(ts_gw *gw, const char *thread) {
  size_t len = strlen(thread);
  seq_node *n = (seq_node *)ts_hmap_find(&gw->seqs, thread, len);
  if (!n) {
    if (gw->seqs.n >= TS_GW_MAX_NAMED_THREADS) return 0; /* full */
    n = malloc(sizeof *n + len + 1);
    if (!n) return 0;
    memcpy(n->key, thread, len + 1);
    n->seq = 0;
    if (ts_hmap_insert(&gw->seqs, &n->h, n->key, len)) {
      free(n);
      return 0;
    }
  }
  return ++n->seq;
}

/* ---- publishing ---------------------------------------------------------------------- */

static void publish(gw_req *r, const ts_tap_event *e) {
  ts_gw *gw = r->gw;
  if (e->type == TS_TAP_TOOL_CALL_ERROR || e->type == TS_TAP_STREAM_ERROR) gw->m.st.tap_errors++;
  if (!gw->cfg.pub) return;
  uint64_t seq = r->named_thread ? next_seq(gw, r->thread) : 0;
  if (!seq) { /* a made-up thread, or the map is full: this request's own numbering */
    r->named_thread = 0;
    seq = ++r->seq;
  }
  ts_event ev = {.thread = {r->thread, strlen(r->thread)}, .seq = seq, .body = *e};
  ts_buf_reset(&gw->line);
  if (ts_event_encode(&ev, &gw->line)) return;
  if (ts_pub_send(gw->cfg.pub, r->thread, strlen(r->thread), seq, gw->line.p, gw->line.len) == 0)
    gw->m.st.events_published++;
}

static void publish_error(gw_req *r, int code, const char *msg) {
  ts_tap_event e;
  memset(&e, 0, sizeof e);
  e.type = TS_TAP_STREAM_ERROR;
  e.code = code;
  e.error.p = msg;
  e.error.len = strlen(msg);
  e.offset = r->tap ? ts_tap_offset(r->tap) : 0;
  r->gw->m.st.upstream_errors++;
  publish(r, &e);
  r->gw->m.st.tap_errors--; /* an upstream failure, not the tap's: counted above instead */
}

static int on_tap_event(void *user, const ts_tap_event *e) {
  publish(user, e);
  return 0;
}

static const char *lookup_progress(void *user, const char *tool, size_t len, size_t *arg_len) {
  gw_req *r = user;
  const ts_tool_def *d = r->gw->cfg.tools ? ts_tool_defs_find(r->gw->cfg.tools, tool, len) : NULL;
  if (!d || !d->progress_arg) d = ts_tool_defs_find(&r->defs, tool, len);
  if (!d || !d->progress_arg) return NULL;
  *arg_len = strlen(d->progress_arg);
  return d->progress_arg;
}

/* ---- headers ------------------------------------------------------------------------- */

static int hop_by_hop(const char *name, const char *connection) {
  static const char *const hop[] = {"Connection", "Keep-Alive", "Proxy-Connection",
                                    "Proxy-Authenticate", "Proxy-Authorization", "TE",
                                    "Trailer", "Trailers", "Transfer-Encoding", "Upgrade"};
  for (size_t i = 0; i < sizeof hop / sizeof hop[0]; i++)
    if (!strcasecmp(name, hop[i])) return 1;
  if (connection) { /* tokens named in Connection are hop-by-hop too */
    size_t n = strlen(name);
    for (const char *p = connection; *p;) {
      while (*p == ' ' || *p == '\t' || *p == ',') p++;
      const char *s = p;
      while (*p && *p != ',' && *p != ' ' && *p != '\t') p++;
      if ((size_t)(p - s) == n && !strncasecmp(s, name, n)) return 1;
    }
  }
  return 0;
}

static size_t headers_size(struct evkeyvalq *h) {
  size_t n = 0;
  for (struct evkeyval *kv = h->tqh_first; kv; kv = kv->next.tqe_next)
    n += strlen(kv->key) + strlen(kv->value) + 4;
  return n;
}

/* ---- answers made by the gateway itself ----------------------------------------------- */

static void send_json_error(struct evhttp_request *req, int status, const char *reason,
                            const char *msg, const char *thread) {
  struct evkeyvalq *h = evhttp_request_get_output_headers(req);
  evhttp_add_header(h, "Content-Type", "application/json");
  if (thread) evhttp_add_header(h, TS_GW_HEADER_THREAD, thread);
  struct evbuffer *b = evbuffer_new();
  if (b) {
    ts_buf s;
    ts_buf_init(&s, 4096);
    ts_buf_append_json_string(&s, msg, strlen(msg));
    evbuffer_add_printf(b, "{\"error\":{\"message\":%.*s,\"type\":\"toolstream_gateway\"}}\n",
                        (int)s.len, s.p ? s.p : "\"\"");
    ts_buf_fini(&s);
  }
  evhttp_send_reply(req, status, reason, b);
  if (b) evbuffer_free(b);
}

static void send_metrics(ts_gw *gw, struct evhttp_request *req) {
  struct evbuffer *b = evbuffer_new();
  ts_buf text;
  ts_buf_init(&text, 1 << 20);
  if (!b || ts_gw_metrics_render(&gw->m, &text)) {
    if (b) evbuffer_free(b);
    ts_buf_fini(&text);
    evhttp_send_error(req, 500, NULL);
    return;
  }
  evbuffer_add(b, text.p, text.len);
  ts_buf_fini(&text);
  evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                    "text/plain; version=0.0.4; charset=utf-8");
  evhttp_send_reply(req, 200, "OK", b);
  evbuffer_free(b);
}

/* ---- one proxied request ---------------------------------------------------------------- */

static void reap_cb(evutil_socket_t fd, short what, void *arg);
static void on_client_close(struct evhttp_connection *con, void *arg);

static void req_free(gw_req *r) {
  ts_gw *gw = r->gw;
  if (r->prev) r->prev->next = r->next;
  else if (gw->live == r) gw->live = r->next;
  if (r->next) r->next->prev = r->prev;
  if (r->ureq) evhttp_cancel_request(r->ureq);
  if (r->ucon) evhttp_connection_free(r->ucon);
  if (r->timer) event_free(r->timer);
  if (r->pause_ev) event_free(r->pause_ev);
  if (r->reap_ev) event_free(r->reap_ev);
  ts_tap_free(r->tap);
  ts_tool_defs_free(&r->defs);
  free(r->scratch);
  free(r);
}

/* Settles r: no callback of ours acts on it afterwards; freed from a deferred event (it
 * stays on the live list until then, so ts_gw_free finds it). */
static void reap(gw_req *r) {
  if (r->reaping) return;
  r->reaping = 1;
  ts_gw *gw = r->gw;
  if (r->counted_open) gw->m.st.streams_open--;
  if (r->scon) evhttp_connection_set_closecb(r->scon, NULL, NULL);
  r->scon = NULL;
  r->sreq = NULL;
  if (r->timer) evtimer_del(r->timer);
  event_active(r->reap_ev, EV_TIMEOUT, 1);
}

static void reap_cb(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  req_free(arg);
}

/* The upstream failed: tell the client (a status, or a cut stream) and the bus. */
static void fail(gw_req *r, int code, int status, const char *msg) {
  publish_error(r, code, msg);
  if (r->sreq) {
    if (!r->headers_sent) {
      struct evhttp_request *sreq = r->sreq;
      evhttp_connection_set_closecb(r->scon, NULL, NULL);
      r->scon = NULL; /* sending may free the connection */
      r->sreq = NULL;
      char full[600];
      snprintf(full, sizeof full, "toolstream gateway: %s", msg);
      send_json_error(sreq, status, status == 504 ? "Gateway Timeout" : "Bad Gateway", full,
                      r->thread);
    } else {
      /* The client already has a status: a broken upstream stream becomes a broken
       * client stream (no terminating chunk), so the client sees the truncation. */
      struct evhttp_connection *scon = r->scon;
      evhttp_connection_set_closecb(scon, NULL, NULL);
      r->scon = NULL;
      r->sreq = NULL;
      evhttp_connection_free(scon);
    }
  }
  reap(r);
}

static int connected(gw_req *r) {
  struct bufferevent *bev = r->ucon ? evhttp_connection_get_bufferevent(r->ucon) : NULL;
  int fd = bev ? bufferevent_getfd(bev) : -1;
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  return fd >= 0 && getpeername(fd, (struct sockaddr *)&ss, &sl) == 0;
}

static void arm_ms(struct event *ev, double ms) {
  if (ms < 1) ms = 1;
  struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)((long)ms % 1000) * 1000};
  evtimer_add(ev, &tv);
}

static void on_timer(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  gw_req *r = arg;
  if (r->reaping || r->headers_sent) return;
  ts_gw *gw = r->gw;
  double el = (mono_s() - r->t_start) * 1000;
  const char *msg = NULL;
  char buf[128];
  if (!connected(r) && el >= gw->cfg.connect_timeout_ms) {
    snprintf(buf, sizeof buf, "no connection to the upstream within %d ms",
             gw->cfg.connect_timeout_ms);
    msg = buf;
  } else if (el >= gw->cfg.headers_timeout_ms) {
    snprintf(buf, sizeof buf, "no response headers from the upstream within %d ms",
             gw->cfg.headers_timeout_ms);
    msg = buf;
  }
  if (!msg) {
    double next = gw->cfg.headers_timeout_ms - el;
    if (!connected(r) && gw->cfg.connect_timeout_ms - el < next) next = gw->cfg.connect_timeout_ms - el;
    arm_ms(r->timer, next);
    return;
  }
  struct evhttp_request *u = r->ureq;
  r->ureq = NULL;
  if (u) evhttp_cancel_request(u);
  fail(r, TS_E_GW_TIMEOUT, 504, msg);
}

static void on_pause(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  gw_req *r = arg;
  if (r->paused && !r->reaping && r->ucon)
    bufferevent_disable(evhttp_connection_get_bufferevent(r->ucon), EV_READ);
}

static void on_client_drained(struct evhttp_connection *con, void *arg) {
  (void)con;
  gw_req *r = arg;
  if (r->paused && !r->reaping && r->ucon) {
    r->paused = 0;
    bufferevent_enable(evhttp_connection_get_bufferevent(r->ucon), EV_READ);
  }
}

static void on_client_close(struct evhttp_connection *con, void *arg) {
  (void)con;
  gw_req *r = arg;
  r->gw->m.st.client_aborts++;
  /* libevent 2.1 detaches a request it was still answering from the dying connection
   * and leaves it to us: ending it is what frees it. */
  if (r->sreq && !evhttp_request_get_connection(r->sreq)) evhttp_send_reply_end(r->sreq);
  r->scon = NULL; /* libevent is tearing it down */
  r->sreq = NULL;
  struct evhttp_request *u = r->ureq;
  r->ureq = NULL;
  if (u) evhttp_cancel_request(u); /* closes the upstream connection */
  reap(r);
}

static int on_up_headers(struct evhttp_request *u, void *arg) {
  gw_req *r = arg;
  ts_gw *gw = r->gw;
  if (r->reaping || !r->sreq) return -1;
  int code = evhttp_request_get_response_code(u);
  double lat = mono_s() - r->t_start;
  ts_gw_metrics_latency(&gw->m, lat);

  struct evkeyvalq *in = evhttp_request_get_input_headers(u);
  struct evkeyvalq *out = evhttp_request_get_output_headers(r->sreq);
  const char *connection = evhttp_find_header(in, "Connection");
  for (struct evkeyval *kv = in->tqh_first; kv; kv = kv->next.tqe_next)
    if (!hop_by_hop(kv->key, connection) && strcasecmp(kv->key, TS_GW_HEADER_THREAD))
      evhttp_add_header(out, kv->key, kv->value);
  evhttp_add_header(out, TS_GW_HEADER_THREAD, r->thread);

  const char *ct = evhttp_find_header(in, "Content-Type");
  if (code >= 200 && code < 300 && ct && !strncasecmp(ct, "text/event-stream", 17)) {
    ts_tap_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.format = r->format;
    cfg.progress_arg = lookup_progress;
    cfg.progress_user = r;
    cfg.deltas = gw->cfg.deltas;
    cfg.text = gw->cfg.text;
    r->tap = ts_tap_new(&cfg, on_tap_event, r);
    if (!r->tap) gw->m.st.tap_errors++;
  } else if (code >= 400) {
    char msg[96];
    snprintf(msg, sizeof msg, "the upstream answered %d", code);
    publish_error(r, TS_E_GW_STATUS, msg);
  }
  const char *reason = evhttp_request_get_response_code_line(u);
  evhttp_send_reply_start(r->sreq, code, reason && *reason ? reason : "Status");
  r->headers_sent = 1;
  evtimer_del(r->timer);
  struct timeval tv = {gw->cfg.idle_timeout_ms / 1000, (gw->cfg.idle_timeout_ms % 1000) * 1000};
  evhttp_connection_set_timeout_tv(r->ucon, &tv);
  return 0;
}

static void on_up_chunk(struct evhttp_request *u, void *arg) {
  gw_req *r = arg;
  struct evbuffer *in = evhttp_request_get_input_buffer(u);
  size_t n = evbuffer_get_length(in);
  if (r->reaping || !r->sreq || !n) return;
  int tap = r->tap && r->gw->cfg.pub; /* the tap's only output is the bus */
  if (tap) {
    if (n > r->scratch_cap) {
      char *ns = realloc(r->scratch, n);
      if (!ns) tap = 0;
      else r->scratch = ns, r->scratch_cap = n;
    }
    if (tap) evbuffer_copyout(in, r->scratch, n);
  }
  evhttp_send_reply_chunk_with_cb(r->sreq, in, on_client_drained, r);
  r->gw->m.st.bytes_down += n;
  /* Write to the client now rather than on the next loop turn: the chunk leaves before
   * the tap runs and one wake-up earlier. What the socket does not take stays queued
   * for the bufferevent (which also reports errors); a partial write is harmless. */
  struct bufferevent *cb = r->scon ? evhttp_connection_get_bufferevent(r->scon) : NULL;
  if (cb) {
    struct evbuffer *out = bufferevent_get_output(cb);
    evbuffer_write(out, bufferevent_getfd(cb));
    /* All gone: no write event needed (evhttp enables it again with the next chunk);
     * disabling it in the same loop turn spares libevent two epoll_ctl calls. */
    if (!evbuffer_get_length(out)) bufferevent_disable(cb, EV_WRITE);
  }
  if (tap) ts_tap_feed(r->tap, r->scratch, n);
  if (cb && evbuffer_get_length(bufferevent_get_output(cb)) > TS_GW_CLIENT_HIGH_WATER &&
      !r->paused) {
    r->paused = 1;
    event_active(r->pause_ev, EV_TIMEOUT, 1);
  }
}

static void on_up_error(enum evhttp_request_error err, void *arg) {
  gw_req *r = arg;
  r->uerr = (int)err;
}

static void on_up_done(struct evhttp_request *u, void *arg) {
  gw_req *r = arg;
  r->ureq = NULL; /* libevent frees it after this call */
  if (r->reaping) return;
  if (!u || evhttp_request_get_response_code(u) == 0) {
    char msg[640];
    int timeout = r->uerr == EVREQ_HTTP_TIMEOUT;
    const char *what = !r->headers_sent ? (r->uerr < 0 ? "cannot connect to the upstream %s"
                                                       : "the upstream %s broke off before answering")
                                        : (timeout ? "the upstream %s went idle mid-stream"
                                                   : "the upstream %s broke off mid-stream");
    snprintf(msg, sizeof msg, what, r->rt->up.host_hdr);
    /* A TLS failure explains itself through the connection's SSL: a handshake that never
     * finished, with the certificate's verify result when that is what failed. */
    int tls = 0;
    char reason[300];
    if (r->rt->up.tls && !r->headers_sent && ts_upstream_tls_failure(r->ubev, reason, sizeof reason)) {
      tls = 1;
      snprintf(msg, sizeof msg, "TLS with the upstream %s failed: %s", r->rt->up.host_hdr, reason);
    }
    fail(r, tls ? TS_E_GW_TLS : timeout ? TS_E_GW_TIMEOUT : TS_E_GW_UPSTREAM,
         timeout ? 504 : 502, msg);
    return;
  }
  if (r->tap) ts_tap_finish(r->tap);
  if (r->sreq) {
    struct evhttp_request *sreq = r->sreq;
    evhttp_connection_set_closecb(r->scon, NULL, NULL);
    r->sreq = NULL;
    r->scon = NULL;
    evhttp_send_reply_end(sreq);
  }
  reap(r);
}

static void on_request(struct evhttp_request *sreq, void *arg) {
  ts_gw *gw = arg;
  gw->m.st.requests_total++;
  const char *uri = evhttp_request_get_uri(sreq);
  enum evhttp_cmd_type cmd = evhttp_request_get_command(sreq);
  size_t plen = strcspn(uri, "?#");
  if (cmd == EVHTTP_REQ_GET && plen == 8 && !strncmp(uri, "/healthz", 8)) {
    struct evbuffer *b = evbuffer_new();
    if (b) evbuffer_add(b, "ok\n", 3);
    evhttp_add_header(evhttp_request_get_output_headers(sreq), "Content-Type", "text/plain");
    evhttp_send_reply(sreq, 200, "OK", b);
    if (b) evbuffer_free(b);
    return;
  }
  if (cmd == EVHTTP_REQ_GET && plen == 8 && !strncmp(uri, "/metrics", 8)) {
    send_metrics(gw, sreq);
    return;
  }
  struct evkeyvalq *hin = evhttp_request_get_input_headers(sreq);
  if (headers_size(hin) > gw->cfg.max_header_bytes) {
    send_json_error(sreq, 431, "Request Header Fields Too Large",
                    "toolstream gateway: request headers too large", NULL);
    return;
  }
  if (uri[0] != '/') {
    send_json_error(sreq, 400, "Bad Request", "toolstream gateway: only origin-form request targets",
                    NULL);
    return;
  }
  const ts_gw_route *rt = ts_gw_route_pick(gw->routes, gw->nroutes, uri);
  if (!rt) {
    send_json_error(sreq, 404, "Not Found", "toolstream gateway: no upstream for this path", NULL);
    return;
  }
  gw_req *r = calloc(1, sizeof *r);
  if (!r) {
    evhttp_send_error(sreq, 503, "Out of memory");
    return;
  }
  r->gw = gw;
  r->uerr = -1;
  r->rt = rt;
  r->sreq = sreq;
  r->scon = evhttp_request_get_connection(sreq);
  r->t_start = mono_s();
  r->format = ts_gw_path_format(uri, plen);
  const char *th = evhttp_find_header(hin, TS_GW_HEADER_THREAD);
  if (th && strlen(th) < sizeof r->thread && ts_thread_id_valid(th, strlen(th))) {
    snprintf(r->thread, sizeof r->thread, "%s", th);
    r->named_thread = 1;
  } else
    ts_thread_id_new(r->thread, sizeof r->thread);
  r->timer = evtimer_new(gw->base, on_timer, r);
  r->pause_ev = event_new(gw->base, -1, 0, on_pause, r);
  r->reap_ev = event_new(gw->base, -1, 0, reap_cb, r);
  if (!r->timer || !r->pause_ev || !r->reap_ev) goto nomem;
  gw->m.st.streams_total++;
  gw->m.st.streams_open++;
  r->counted_open = 1;
  r->next = gw->live;
  if (gw->live) gw->live->prev = r;
  gw->live = r;

  if (rt->up.tls && !(r->ubev = ts_upstream_tls_bev(gw->base, gw->ssl_ctx, &rt->up)))
    goto nomem_live;
  r->ucon = evhttp_connection_base_bufferevent_new(gw->base, NULL, r->ubev, rt->up.host,
                                                   (unsigned short)rt->up.port);
  if (!r->ucon) {
    if (r->ubev) bufferevent_free(r->ubev);
    goto nomem_live;
  }
  evhttp_connection_set_retries(r->ucon, 0);
  evhttp_connection_set_max_headers_size(r->ucon, (ev_ssize_t)gw->cfg.max_header_bytes);
  {
    int ms = gw->cfg.headers_timeout_ms + 1000; /* backstop: our timer decides */
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evhttp_connection_set_timeout_tv(r->ucon, &tv);
  }
  struct evhttp_request *u = evhttp_request_new(on_up_done, r);
  if (!u) goto nomem_live;
  evhttp_request_set_header_cb(u, on_up_headers);
  evhttp_request_set_chunked_cb(u, on_up_chunk);
  evhttp_request_set_error_cb(u, on_up_error);
  struct evkeyvalq *hout = evhttp_request_get_output_headers(u);
  const char *connection = evhttp_find_header(hin, "Connection");
  for (struct evkeyval *kv = hin->tqh_first; kv; kv = kv->next.tqe_next) {
    if (hop_by_hop(kv->key, connection) || !strcasecmp(kv->key, "Host") ||
        !strcasecmp(kv->key, "Content-Length") || !strcasecmp(kv->key, "Accept-Encoding") ||
        !strcasecmp(kv->key, "Expect")) /* evhttp answered 100-continue; the body is here */
      continue;
    evhttp_add_header(hout, kv->key, kv->value);
  }
  evhttp_add_header(hout, "Host", rt->up.host_hdr);
  evhttp_add_header(hout, "Accept-Encoding", "identity");

  struct evbuffer *body = evhttp_request_get_input_buffer(sreq);
  size_t blen = evbuffer_get_length(body);
  struct evbuffer *ubody = evhttp_request_get_output_buffer(u);
  char *rewritten = NULL;
  size_t rlen = 0;
  if (blen) {
    const char *bp = (const char *)evbuffer_pullup(body, -1);
    rewritten = bp ? ts_progress_strip(bp, blen, &r->defs, &rlen) : NULL;
    if (rewritten) {
      evbuffer_add(ubody, rewritten, rlen);
      free(rewritten);
    } else {
      evbuffer_add_buffer(ubody, body);
    }
  }
  gw->m.st.bytes_up += evbuffer_get_length(ubody);
  /* POST and friends always carry Content-Length (libevent adds it from the buffer);
   * libevent leaves it out for a GET with no body. */

  char path[8192];
  int pn = snprintf(path, sizeof path, "%s%s", rt->base_path, uri);
  if (pn < 0 || (size_t)pn >= sizeof path) {
    evhttp_request_free(u);
    reap(r);
    send_json_error(sreq, 414, "URI Too Long", "toolstream gateway: request target too long", NULL);
    return;
  }
  evhttp_connection_set_closecb(r->scon, on_client_close, r);
  r->ureq = u;
  if (evhttp_make_request(r->ucon, u, cmd, path) != 0) {
    r->ureq = NULL; /* libevent freed it */
    fail(r, TS_E_GW_UPSTREAM, 502, "cannot send the request upstream");
    return;
  }
  arm_ms(r->timer, gw->cfg.connect_timeout_ms < gw->cfg.headers_timeout_ms
                       ? gw->cfg.connect_timeout_ms
                       : gw->cfg.headers_timeout_ms);
  return;

nomem_live:
  reap(r);
  evhttp_send_error(sreq, 503, "Out of memory");
  return;
nomem:
  req_free(r);
  evhttp_send_error(sreq, 503, "Out of memory");
}

/* ---- setup ------------------------------------------------------------------------------ */

int ts_gw_new(struct event_base *base, const ts_gw_config *cfg, ts_gw **out, char *why,
              size_t why_cap) {
  if (!base || !cfg || !out || !cfg->n_upstreams || cfg->n_upstreams > TS_GW_MAX_UPSTREAMS) {
    set_why(why, why_cap, "%s", "the gateway needs 1 to 16 upstreams");
    return TS_E_INVAL;
  }
  ts_gw *gw = calloc(1, sizeof *gw);
  if (!gw) return TS_E_NOMEM;
  gw->base = base;
  gw->cfg = *cfg;
  if (gw->cfg.connect_timeout_ms <= 0) gw->cfg.connect_timeout_ms = TS_GW_CONNECT_TIMEOUT_MS;
  if (gw->cfg.headers_timeout_ms <= 0) gw->cfg.headers_timeout_ms = TS_GW_HEADERS_TIMEOUT_MS;
  if (gw->cfg.idle_timeout_ms <= 0) gw->cfg.idle_timeout_ms = TS_GW_IDLE_TIMEOUT_MS;
  if (!gw->cfg.max_header_bytes) gw->cfg.max_header_bytes = TS_GW_MAX_HEADER_BYTES;
  if (!gw->cfg.max_body_bytes) gw->cfg.max_body_bytes = TS_GW_MAX_BODY_BYTES;
  gw->cfg.upstreams = NULL;
  int mrc = ts_hmap_init(&gw->seqs);
  if (mrc) {
    free(gw);
    return mrc;
  }
  ts_buf_init(&gw->line, (size_t)64 << 20);
  int rc = TS_E_INVAL, need_tls = 0;
  for (size_t i = 0; i < cfg->n_upstreams; i++) {
    if ((rc = ts_gw_route_parse(cfg->upstreams[i].prefix, cfg->upstreams[i].url, &gw->routes[i],
                                why, why_cap)))
      goto fail;
    need_tls |= gw->routes[i].up.tls;
    gw->nroutes++;
  }
  if (need_tls || cfg->ca_file) {
    rc = ts_upstream_tls_ctx(cfg->ca_file, &gw->ssl_ctx, why, why_cap);
    if (rc == TS_E_HTTP_TLS) rc = TS_E_GW_TLS;
    if (rc) goto fail;
  }
  rc = TS_E_NOMEM;
  gw->http = evhttp_new(base);
  if (!gw->http) goto fail;
  evhttp_set_allowed_methods(gw->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT |
                                           EVHTTP_REQ_DELETE | EVHTTP_REQ_PATCH |
                                           EVHTTP_REQ_HEAD | EVHTTP_REQ_OPTIONS);
  /* libevent answers 413 itself past its header limit; ours (431) is checked first, so
   * libevent's is set well above it. */
  evhttp_set_max_headers_size(gw->http, (ev_ssize_t)(gw->cfg.max_header_bytes * 4 + 16384));
  evhttp_set_max_body_size(gw->http, (ev_ssize_t)gw->cfg.max_body_bytes);
  evhttp_set_timeout(gw->http, gw->cfg.idle_timeout_ms / 1000 + 1);
  evhttp_set_gencb(gw->http, on_request, gw);
  struct evhttp_bound_socket *bs = evhttp_bind_socket_with_handle(
      gw->http, cfg->listen_host ? cfg->listen_host : "127.0.0.1", (ev_uint16_t)cfg->listen_port);
  if (!bs) {
    set_why(why, why_cap, "cannot listen: %s", strerror(errno));
    rc = TS_E_IO;
    goto fail;
  }
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&ss, &sl);
  gw->port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                      : ntohs(((struct sockaddr_in *)&ss)->sin_port);
  *out = gw;
  return 0;
fail:
  ts_gw_free(gw);
  return rc;
}

int ts_gw_port(const ts_gw *gw) { return gw->port; }

void ts_gw_get_stats(const ts_gw *gw, ts_gw_stats *st) { *st = gw->m.st; }

void ts_gw_free(ts_gw *gw) {
  if (!gw) return;
  while (gw->live) { /* live and reaped-but-not-yet-freed requests */
    gw_req *r = gw->live;
    reap(r);
    req_free(r);
  }
  if (gw->http) evhttp_free(gw->http);
  if (gw->ssl_ctx) SSL_CTX_free(gw->ssl_ctx);
  for (ts_hmap_node *n = ts_hmap_next(&gw->seqs, NULL), *next; n; n = next) {
    next = ts_hmap_next(&gw->seqs, n);
    free(n);
  }
  ts_hmap_fini(&gw->seqs);
  ts_buf_fini(&gw->line);
  free(gw);
}
