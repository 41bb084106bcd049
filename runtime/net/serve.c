/*
 * serve.c: the HTTP event endpoint (see serve.h).
 *
 * One evhttp server; a `stream` per open GET /threads/ID/events. A stream first sends the
 * stored backlog in batches (the next batch only when the last one was written out, so a
 * slow reader never makes us read the whole thread into memory), then live events: those
 * published in this process go out at once when they are next in line, and a timer reads
 * the store for events other processes added. Every event is sent once, in seq order: a
 * stream remembers the last seq it sent and skips anything at or below it, whichever of
 * the two sources brought it first.
 */
#define _DEFAULT_SOURCE
#include "net/serve.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include "base/error.h"
#include "base/origin.h"
#include "base/strbuf.h"
#include "base/thread_id.h"
#include "events/ui_stream.h"
#include "net/accept_guard.h"
#include "net/head_deadline.h"
#include "net/serve_assets.h"

#define SERVE_MAX_STREAMS 1024
#define SERVE_BATCH 256 /* stored events per backlog read */

enum { M_SSE = 1, M_NDJSON, M_AGUI, M_AISDK };

typedef struct stream {
  struct stream *next, *prev;
  ts_serve *s;
  struct evhttp_request *req;
  struct evhttp_connection *con;
  char thread[TS_THREAD_ID_MAX + 1];
  size_t thread_len;
  uint64_t last; /* the last seq sent */
  uint64_t cur;  /* the seq being formatted (the id of the frames it makes) */
  int mode;
  int follow;
  int caught_up;      /* the stored backlog has been sent */
  int batch_inflight; /* a backlog batch is being written out */
  ts_ui *ui;
  struct evbuffer *out; /* frames being assembled for one chunk */
} stream;

struct ts_serve {
  struct event_base *base;
  struct evhttp *http;
  ts_serve_config cfg;
  int port;
  stream *streams;
  size_t nstreams;
  struct event *hb, *poll;
  ts_accept_guard *guard; /* pauses accepting while accept() fails */
  ts_head_deadline *heads; /* closes connections whose request head is late */
};

/* ---- output ------------------------------------------------------------------------ */

/* One SSE event: `id:` and the frame as `data:` lines. A frame is one line when its JSON is
 * compact; if a tool's result kept its own newlines, each line becomes a `data:` line of
 * its own, which SSE joins with the same newlines. */
static int on_frame(void *user, const char *frame, size_t len) {
  stream *st = user;
  evbuffer_add_printf(st->out, "id: %llu\n", (unsigned long long)st->cur);
  const char *p = frame, *end = frame + len;
  do {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
    if (n && p[n - 1] == '\r') n--;
    evbuffer_add(st->out, "data: ", 6);
    evbuffer_add(st->out, p, n);
    evbuffer_add(st->out, "\n", 1);
    p = nl ? nl + 1 : end;
  } while (p < end);
  evbuffer_add(st->out, "\n", 1);
  return 0;
}

/* Appends one event in the stream's encoding to st->out. */
static void format_event(stream *st, uint64_t seq, const char *json, size_t len) {
  st->cur = seq;
  switch (st->mode) {
    case M_NDJSON:
      evbuffer_add(st->out, json, len);
      evbuffer_add(st->out, "\n", 1);
      break;
    case M_SSE:
      on_frame(st, json, len);
      break;
    default:
      /* an event the translator cannot read (not one of ours) is skipped, not fatal */
      (void)ts_ui_event(st->ui, json, len);
      break;
  }
  st->last = seq;
}

static size_t pending_out(stream *st) {
  struct bufferevent *bev = evhttp_connection_get_bufferevent(st->con);
  return bev ? evbuffer_get_length(bufferevent_get_output(bev)) : 0;
}

static void stream_free(stream *st) {
  ts_serve *s = st->s;
  if (st->prev) st->prev->next = st->next;
  else s->streams = st->next;
  if (st->next) st->next->prev = st->prev;
  s->nstreams--;
  ts_ui_free(st->ui);
  evbuffer_free(st->out);
  free(st);
}

/* The client left (or we end the stream): libevent frees the request itself. */
static void on_close(struct evhttp_connection *con, void *arg) {
  (void)con;
  stream_free(arg);
}

static void stream_end(stream *st) {
  if (st->mode == M_AGUI || st->mode == M_AISDK) {
    (void)ts_ui_finish(st->ui);
    if (st->mode == M_AISDK) evbuffer_add(st->out, "data: [DONE]\n\n", 14);
  }
  if (evbuffer_get_length(st->out)) evhttp_send_reply_chunk(st->req, st->out);
  evhttp_connection_set_closecb(st->con, NULL, NULL);
  evhttp_send_reply_end(st->req);
  stream_free(st);
}

/* A client that does not read: past the cap it is cut off (it can resume from its
 * Last-Event-ID), rather than our memory growing with every event of its thread. */
static int flush_live(stream *st) {
  if (!evbuffer_get_length(st->out)) return 0;
  evhttp_send_reply_chunk(st->req, st->out);
  if (pending_out(st) > TS_SERVE_MAX_BACKLOG) {
    evhttp_connection_set_closecb(st->con, NULL, NULL);
    evhttp_connection_free(st->con); /* frees the request too */
    stream_free(st);
    return -1;
  }
  return 0;
}

static void pump(stream *st);

static void on_batch_written(struct evhttp_connection *con, void *arg) {
  (void)con;
  stream *st = arg;
  st->batch_inflight = 0;
  pump(st);
}

static int batch_cb(void *user, uint64_t seq, const char *json, size_t len) {
  stream *st = user;
  if (seq > st->last) format_event(st, seq, json, len);
  return 0;
}

/* Sends the next stored batch after st->last; when there is none the stream is caught up
 * (and, without follow, ends). */
static void pump(stream *st) {
  ts_serve *s = st->s;
  if (st->batch_inflight) return;
  int n = 0;
  if (s->cfg.store) {
    n = ts_store_events_after(s->cfg.store, st->thread, st->last, SERVE_BATCH, batch_cb, st);
    if (n < 0) n = 0; /* the store is busy or broken: try again at the next poll */
  }
  if (n > 0) {
    st->batch_inflight = 1;
    evhttp_send_reply_chunk_with_cb(st->req, st->out, on_batch_written, st);
    return;
  }
  st->caught_up = 1;
  if (!st->follow) stream_end(st);
}

/* ---- timers ------------------------------------------------------------------------ */

static void on_heartbeat(evutil_socket_t fd, short what, void *arg) {
  (void)fd, (void)what;
  ts_serve *s = arg;
  for (stream *st = s->streams, *next; st; st = next) {
    next = st->next;
    if (st->mode == M_NDJSON || st->batch_inflight) continue; /* NDJSON has no comments */
    evbuffer_add(st->out, ": keep-alive\n\n", 14);
    flush_live(st);
  }
}

static void on_poll(evutil_socket_t fd, short what, void *arg) {
  (void)fd, (void)what;
  ts_serve *s = arg;
  for (stream *st = s->streams, *next; st; st = next) {
    next = st->next;
    if (st->caught_up && !st->batch_inflight) pump(st);
  }
}

void ts_serve_publish(ts_serve *s, const char *thread, size_t thread_len, uint64_t seq,
                      const char *json, size_t len) {
  if (!s) return;
  for (stream *st = s->streams, *next; st; st = next) {
    next = st->next;
    if (st->thread_len != thread_len || memcmp(st->thread, thread, thread_len)) continue;
    /* With a store, only the next event in line goes out here; anything else (a gap, a
     * batch still being written) is read from the store in order. */
    if (s->cfg.store ? (!st->caught_up || st->batch_inflight || seq != st->last + 1)
                     : seq <= st->last)
      continue;
    format_event(st, seq, json, len);
    flush_live(st);
  }
}

/* ---- requests ------------------------------------------------------------------------ */

static void reply_text(struct evhttp_request *req, int code, const char *reason, const char *type,
                       const char *body) {
  struct evbuffer *b = evbuffer_new();
  if (b) evbuffer_add(b, body, strlen(body));
  evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", type);
  evhttp_add_header(evhttp_request_get_output_headers(req), "Cache-Control", "no-store");
  evhttp_send_reply(req, code, reason, b);
  if (b) evbuffer_free(b);
}

static void reply_error(struct evhttp_request *req, int code, const char *reason, const char *msg) {
  char body[512];
  snprintf(body, sizeof body, "{\"error\":\"%s\"}\n", msg);
  reply_text(req, code, reason, "application/json", body);
}

static int origin_ok(const ts_serve *s, struct evhttp_request *req) {
  const struct evkeyvalq *h = evhttp_request_get_input_headers(req);
  return ts_origin_allowed(evhttp_find_header(h, "Origin"), evhttp_find_header(h, "Host"),
                           s->cfg.origins, s->cfg.norigins);
}

static int host_ok(const ts_serve *s, struct evhttp_request *req) {
  return ts_host_allowed(evhttp_find_header(evhttp_request_get_input_headers(req), "Host"),
                         s->cfg.origins, s->cfg.norigins);
}

static int same_secret(const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  unsigned char d = (unsigned char)(na != nb);
  for (size_t i = 0; i < nb; i++) d |= (unsigned char)(a[i % (na ? na : 1)] ^ b[i]);
  return d == 0 && na == nb;
}

static int token_ok(const ts_serve *s, struct evhttp_request *req, const struct evkeyvalq *q) {
  if (!s->cfg.token) return 1;
  const char *auth = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
  if (auth && !strncasecmp(auth, "Bearer ", 7) && same_secret(auth + 7, s->cfg.token)) return 1;
  const char *t = evhttp_find_header(q, "token");
  return t && same_secret(t, s->cfg.token);
}

static int wants(struct evhttp_request *req, const char *type) {
  const char *acc = evhttp_find_header(evhttp_request_get_input_headers(req), "Accept");
  return acc && strstr(acc, type);
}

static int parse_u64(const char *v, uint64_t *out) {
  if (!v || !*v) return -1;
  uint64_t x = 0;
  for (const char *p = v; *p; p++) {
    if (*p < '0' || *p > '9' || x > (UINT64_MAX - 9) / 10) return -1;
    x = x * 10 + (uint64_t)(*p - '0');
  }
  *out = x;
  return 0;
}

static int quiet_replay_cb(void *user, uint64_t seq, const char *json, size_t len) {
  (void)seq;
  (void)ts_ui_event(user, json, len);
  return 0;
}

static void stream_headers(struct evhttp_request *req, int mode) {
  struct evkeyvalq *h = evhttp_request_get_output_headers(req);
  evhttp_add_header(h, "Content-Type", mode == M_NDJSON ? "application/x-ndjson" : "text/event-stream");
  evhttp_add_header(h, "Cache-Control", "no-store");
  evhttp_add_header(h, "X-Accel-Buffering", "no"); /* proxies: do not hold the stream back */
  if (mode == M_AISDK) evhttp_add_header(h, "x-vercel-ai-ui-message-stream", "v1");
}

static void open_stream(ts_serve *s, struct evhttp_request *req, const char *thread,
                        const struct evkeyvalq *q) {
  const char *fmt = evhttp_find_header(q, "format");
  int mode = M_SSE;
  if (fmt && (!strcmp(fmt, "ndjson") || !strcmp(fmt, "jsonl"))) mode = M_NDJSON;
  else if (fmt && ts_ui_format_parse(fmt) == TS_UI_AGUI) mode = M_AGUI;
  else if (fmt && ts_ui_format_parse(fmt) == TS_UI_AISDK) mode = M_AISDK;
  else if (fmt && strcmp(fmt, "sse") && strcmp(fmt, "toolstream")) {
    reply_error(req, 400, "Bad Request", "format: one of sse, ndjson, agui, ai-sdk");
    return;
  }
  if (!fmt && wants(req, "application/x-ndjson")) mode = M_NDJSON;
  uint64_t after = 0;
  const char *a = evhttp_find_header(q, "after");
  const char *lei = evhttp_find_header(evhttp_request_get_input_headers(req), "Last-Event-ID");
  if ((a && parse_u64(a, &after)) || (!a && lei && parse_u64(lei, &after))) {
    reply_error(req, 400, "Bad Request", "after / Last-Event-ID: a seq number");
    return;
  }
  const char *f = evhttp_find_header(q, "follow");
  if (s->nstreams >= SERVE_MAX_STREAMS) {
    reply_error(req, 503, "Service Unavailable", "too many open event streams");
    return;
  }
  if (evhttp_request_get_command(req) == EVHTTP_REQ_HEAD) {
    /* the head a GET would get, and done: a stream held open for it would never end,
     * and the connection's next request would wait behind it */
    stream_headers(req, mode);
    evhttp_send_reply(req, 200, "OK", NULL);
    return;
  }
  stream *st = calloc(1, sizeof *st);
  if (!st || !(st->out = evbuffer_new())) {
    free(st);
    reply_error(req, 500, "Internal Server Error", "out of memory");
    return;
  }
  st->s = s;
  st->req = req;
  st->con = evhttp_request_get_connection(req);
  st->mode = mode;
  st->follow = !(f && !strcmp(f, "0"));
  st->thread_len = strlen(thread);
  memcpy(st->thread, thread, st->thread_len + 1);
  st->last = after;
  if (mode == M_AGUI || mode == M_AISDK) {
    if (ts_ui_new(mode == M_AGUI ? TS_UI_AGUI : TS_UI_AISDK, on_frame, st, &st->ui)) {
      evbuffer_free(st->out);
      free(st);
      reply_error(req, 500, "Internal Server Error", "out of memory");
      return;
    }
    if (after && s->cfg.store) { /* the runs and calls the client already has */
      ts_ui_set_quiet(st->ui, 1);
      ts_store_events_after(s->cfg.store, thread, 0, after, quiet_replay_cb, st->ui);
      ts_ui_set_quiet(st->ui, 0);
    }
  }
  st->next = s->streams;
  if (s->streams) s->streams->prev = st;
  s->streams = st;
  s->nstreams++;
  stream_headers(req, mode);
  evhttp_send_reply_start(req, 200, "OK");
  ts_head_deadline_streaming(s->heads, req); /* a follower sends nothing and may read little */
  evhttp_connection_set_closecb(st->con, on_close, st);
  if (mode != M_NDJSON) evbuffer_add(st->out, "retry: 1000\n\n", 13);
  pump(st);
}

static void thread_info(ts_serve *s, struct evhttp_request *req, const char *thread) {
  uint64_t last = 0;
  if (s->cfg.store && ts_store_last_event_seq(s->cfg.store, thread, &last) == 0 && last == 0 &&
      !ts_store_thread_exists(s->cfg.store, thread)) {
    reply_error(req, 404, "Not Found", "no such thread");
    return;
  }
  ts_buf j;
  ts_buf_init(&j, 4096);
  ts_buf_puts(&j, "{\"thread\":");
  ts_buf_append_json_string(&j, thread, strlen(thread));
  ts_buf_puts(&j, ",\"last_seq\":");
  ts_buf_append_u64(&j, last);
  ts_buf_puts(&j, "}\n");
  if (j.err) reply_error(req, 500, "Internal Server Error", "out of memory");
  else reply_text(req, 200, "OK", "application/json", j.p);
  ts_buf_fini(&j);
}

/* One thread of GET /threads as a JSON object. */
static int thread_row(void *user, const ts_store_thread *t) {
  ts_buf *b = user;
  if (b->len && b->p[b->len - 1] != '[') ts_buf_putc(b, ',');
  ts_buf_puts(b, "{\"id\":");
  ts_buf_append_json_string(b, t->id, strlen(t->id));
  if (t->parent) {
    ts_buf_puts(b, ",\"parent\":");
    ts_buf_append_json_string(b, t->parent, strlen(t->parent));
  }
  ts_buf_puts(b, ",\"state\":");
  ts_buf_append_json_string(b, t->state, strlen(t->state));
  ts_buf_puts(b, ",\"created_ms\":");
  ts_buf_append_u64(b, (uint64_t)(t->created_at_ms > 0 ? t->created_at_ms : 0));
  ts_buf_puts(b, ",\"last_activity_ms\":");
  ts_buf_append_u64(b, (uint64_t)(t->last_activity_ms > 0 ? t->last_activity_ms : 0));
  ts_buf_puts(b, ",\"turns\":");
  ts_buf_append_u64(b, t->turns);
  ts_buf_puts(b, ",\"calls\":");
  ts_buf_append_u64(b, t->calls);
  ts_buf_puts(b, ",\"children\":");
  ts_buf_append_u64(b, t->children);
  ts_buf_puts(b, ",\"depth\":");
  ts_buf_append_u64(b, t->depth);
  ts_buf_puts(b, ",\"tags\":"); /* a JSON array from the store ("name:<instance>") */
  ts_buf_puts(b, t->tags && *t->tags ? t->tags : "[]");
  ts_buf_putc(b, '}');
  return b->err != 0;
}

/* GET /threads: every thread of the store, each root followed by its subtree. */
static void threads_list(ts_serve *s, struct evhttp_request *req) {
  ts_buf b;
  ts_buf_init(&b, (size_t)64 << 20);
  ts_buf_puts(&b, "{\"threads\":[");
  int rc = s->cfg.store ? ts_store_threads(s->cfg.store, thread_row, &b) : 0;
  ts_buf_puts(&b, "]}\n");
  if (rc < 0 || b.err) reply_error(req, 500, "Internal Server Error", "cannot list the threads");
  else reply_text(req, 200, "OK", "application/json", b.p);
  ts_buf_fini(&b);
}

static void on_request(struct evhttp_request *req, void *arg) {
  ts_serve *s = arg;
  ts_head_deadline_arrived(s->heads, req);
  if (evhttp_request_get_command(req) != EVHTTP_REQ_GET &&
      evhttp_request_get_command(req) != EVHTTP_REQ_HEAD) {
    reply_error(req, 405, "Method Not Allowed", "GET only");
    return;
  }
  if (!host_ok(s, req)) {
    /* DNS rebinding (base/origin.h): a name that is not the listener's own */
    reply_error(req, 403, "Forbidden",
                "host not allowed: use an IP address or localhost, or name the host with "
                "--allow-origin http://HOST:PORT");
    return;
  }
  if (!origin_ok(s, req)) {
    reply_error(req, 403, "Forbidden", "origin not allowed");
    return;
  }
  const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
  const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
  const char *query = uri ? evhttp_uri_get_query(uri) : NULL;
  struct evkeyvalq q;
  TAILQ_INIT(&q);
  if (query && evhttp_parse_query_str(query, &q)) {
    reply_error(req, 400, "Bad Request", "malformed query");
    return;
  }
  if (!path || !*path) path = "/";
  const ts_serve_asset *asset = ts_serve_asset_find(path);
  if (asset) { /* the page itself is public; what it reads is not */
    struct evbuffer *b = evbuffer_new();
    if (b) evbuffer_add_reference(b, asset->data, asset->len, NULL, NULL);
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Type", asset->type);
    evhttp_add_header(h, "Content-Security-Policy",
                      "default-src 'self'; style-src 'self'; script-src 'self'; connect-src 'self'");
    evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
    evhttp_send_reply(req, 200, "OK", b);
    if (b) evbuffer_free(b);
    evhttp_clear_headers(&q);
    return;
  }
  if (!token_ok(s, req, &q)) {
    evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate", "Bearer");
    reply_error(req, 401, "Unauthorized", "a bearer token is required");
    evhttp_clear_headers(&q);
    return;
  }
  if (!strcmp(path, "/threads") || !strcmp(path, "/threads/")) {
    threads_list(s, req);
    evhttp_clear_headers(&q);
    return;
  }
  if (!strncmp(path, "/threads/", 9)) {
    const char *rest = path + 9, *slash = strchr(rest, '/');
    size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
    char raw[3 * TS_THREAD_ID_MAX + 1];
    if (n == 0 || n >= sizeof raw) {
      reply_error(req, 400, "Bad Request", "thread id: 1..256 bytes");
      evhttp_clear_headers(&q);
      return;
    }
    memcpy(raw, rest, n);
    raw[n] = '\0';
    size_t dlen = 0;
    char *id = evhttp_uridecode(raw, 0, &dlen);
    if (!id || !ts_thread_id_valid(id, dlen) || strlen(id) != dlen) {
      free(id);
      reply_error(req, 400, "Bad Request", "thread id: 1..256 bytes, no spaces or control bytes");
      evhttp_clear_headers(&q);
      return;
    }
    if (!slash) thread_info(s, req, id);
    else if (!strcmp(slash, "/events")) open_stream(s, req, id, &q);
    else reply_error(req, 404, "Not Found", "no such resource");
    free(id);
    evhttp_clear_headers(&q);
    return;
  }
  reply_error(req, 404, "Not Found", "no such resource");
  evhttp_clear_headers(&q);
}

/* ---- lifecycle ---------------------------------------------------------------------- */

static void on_accept_failed(void *arg, const char *line) {
  const ts_serve *s = arg;
  if (line) fprintf(stderr, "toolstream: event endpoint on port %d: %s\n", s->port, line);
}

int ts_serve_new(struct event_base *base, const ts_serve_config *cfg, ts_serve **out, char *errmsg,
                 size_t errcap) {
  if (errmsg && errcap) errmsg[0] = '\0';
  if (!base || !cfg || !out || cfg->port < 0 || cfg->port > 65535) return TS_E_INVAL;
  ts_serve *s = calloc(1, sizeof *s);
  if (!s) return TS_E_NOMEM;
  s->base = base;
  s->cfg = *cfg;
  if (s->cfg.heartbeat_ms <= 0) s->cfg.heartbeat_ms = 15000;
  if (s->cfg.poll_ms <= 0) s->cfg.poll_ms = 200;
  if (s->cfg.head_timeout_ms <= 0) s->cfg.head_timeout_ms = TS_SERVE_HEAD_TIMEOUT_MS;
  const char *host = cfg->host ? cfg->host : "127.0.0.1";
  s->http = evhttp_new(base);
  if (!s->http) goto nomem;
  evhttp_set_gencb(s->http, on_request, s);
  evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST |
                                          EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS);
  evhttp_set_max_headers_size(s->http, 16384);
  evhttp_set_max_body_size(s->http, 0);
  int rc = ts_head_deadline_new(s->http, base, s->cfg.head_timeout_ms, &s->heads);
  if (rc) {
    ts_serve_free(s);
    return rc;
  }
  struct evhttp_bound_socket *bs = evhttp_bind_socket_with_handle(s->http, host, (uint16_t)cfg->port);
  if (!bs) {
    if (errmsg) snprintf(errmsg, errcap, "cannot listen on %s:%d", host, cfg->port);
    ts_serve_free(s);
    return TS_E_IO;
  }
  /* out of file descriptors, libevent's listener would retry at once, spinning a core and
   * warning on every attempt */
  if (ts_accept_guard_new(evhttp_bound_socket_get_listener(bs), on_accept_failed, s, &s->guard))
    goto nomem;
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  if (getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&ss, &sl) == 0)
    s->port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                       : ntohs(((struct sockaddr_in *)&ss)->sin_port);
  s->hb = event_new(base, -1, EV_PERSIST, on_heartbeat, s);
  s->poll = event_new(base, -1, EV_PERSIST, on_poll, s);
  if (!s->hb || !s->poll) goto nomem;
  struct timeval hb = {s->cfg.heartbeat_ms / 1000, (s->cfg.heartbeat_ms % 1000) * 1000};
  struct timeval pl = {s->cfg.poll_ms / 1000, (s->cfg.poll_ms % 1000) * 1000};
  event_add(s->hb, &hb);
  if (s->cfg.store) event_add(s->poll, &pl);
  *out = s;
  return TS_E_OK;
nomem:
  ts_serve_free(s);
  return TS_E_NOMEM;
}

void ts_serve_free(ts_serve *s) {
  if (!s) return;
  while (s->streams) {
    stream *st = s->streams;
    evhttp_connection_set_closecb(st->con, NULL, NULL);
    stream_free(st);
  }
  if (s->hb) event_free(s->hb);
  if (s->poll) event_free(s->poll);
  ts_accept_guard_free(s->guard); /* before the listener it borrows goes with evhttp */
  if (s->http) evhttp_free(s->http); /* closes the connections and their requests */
  ts_head_deadline_free(s->heads);      /* after: closing connections call it */
  free(s);
}

void ts_serve_end_streams(ts_serve *s) {
  if (!s) return;
  for (stream *st = s->streams, *next; st; st = next) {
    next = st->next;
    if (s->cfg.store) /* the rest of the thread, in one go: the server is stopping */
      while (ts_store_events_after(s->cfg.store, st->thread, st->last, SERVE_BATCH, batch_cb, st) > 0) {
      }
    stream_end(st);
  }
}

int ts_serve_port(const ts_serve *s) { return s ? s->port : 0; }
size_t ts_serve_streams(const ts_serve *s) { return s ? s->nstreams : 0; }
