/*
 * http_client.c: see http_client.h.
 *
 * Shape. ts_http_post_stream is a loop of attempts; each attempt builds a private
 * event_base, one evhttp_connection (over a bufferevent_openssl for https) and one
 * request, and runs the base until the attempt is settled. Every way an attempt can end
 * goes through settle(), which records the result once and breaks the loop; only after
 * event_base_dispatch has returned is anything freed, so no libevent callback ever runs
 * on freed state, and no callback of ours acts after the attempt was settled.
 *
 * Why our own timers. libevent 2.1 has one timeout per connection, used for connect,
 * read and write alike, and it cannot tell us when the TCP (and TLS) connection is up.
 * A tick every TS_HTTP_TICK_MS does three jobs: it watches the cancel flag, detects the
 * moment the connection is established (getpeername succeeds and, for TLS, the
 * handshake is finished) to end the connect timeout, and from then on enforces the idle
 * timeout against the time of the last byte received. libevent's own timeout is set as
 * a distant backstop.
 *
 * libevent 2.1 quirks handled here: a connection that fails to connect completes the
 * request with response code 0 and no error callback; a failure later (EOF inside a
 * chunked body, a bad header) calls the error callback and then the completion callback
 * with req == NULL. Both land in on_done().
 *
 * The body is handed over by peeking at the request's input evbuffer segment by segment
 * (no copy); libevent drains it after the chunk callback returns.
 *
 * Bounds against a hostile server. libevent holds a response head and a chunk of a chunked
 * body whole before it looks at them, with no limit of its own: the head is capped with
 * evhttp_connection_set_max_headers_size (TS_HTTP_HEAD_MAX), and a chunk by on_input
 * (below), which ends the attempt once TS_HTTP_PENDING_MAX bytes wait, rather than wait
 * for a chunk end that would need more memory than we allow. (Not a read watermark: with
 * one, LeakSanitizer saw the bufferevent of an attempt settled while reading was
 * suspended never freed, under libevent 2.1.12.)
 *
 * Informational responses. libevent 2.1 knows only 100 Continue and takes any other 1xx
 * head (103 Early Hints) for the response itself. So until the real status line has been
 * seen, on_input (an evbuffer callback, which runs as bytes are added and before
 * libevent's read callback looks at them) moves what arrives aside, drops each whole 1xx
 * head, and gives the rest back.
 */
#define _DEFAULT_SOURCE /* struct timeval and u_char-style types in libevent headers */
#include "net/http_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "net/upstream.h"
#include "stream/json_view.h"

/* ---- small helpers ------------------------------------------------------------------ */

static double mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void set_why(char *why, size_t cap, const char *fmt, ...) {
  if (!why || !cap) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, cap, fmt, ap);
  va_end(ap);
}

/* Copies at most one line of s[0..n) into out, control bytes as spaces, trimmed. */
static void one_line(char *out, size_t cap, const char *s, size_t n) {
  size_t k = 0;
  while (n && (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')) s++, n--;
  for (size_t i = 0; i < n && k + 1 < cap; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '\n' || c == '\r') break;
    out[k++] = (c < 0x20 || c == 0x7f) ? ' ' : (char)c;
  }
  while (k && out[k - 1] == ' ') k--;
  out[k] = '\0';
}

/* ---- the URL ------------------------------------------------------------------------ */

/* The URL's parts (net/upstream.h) and the request target (path[?query], at least "/"). */
typedef struct {
  ts_upstream up;
  char *path; /* malloc'd */
} parsed_url;

static int parse_url(const char *url, parsed_url *u, char *why, size_t cap) {
  memset(u, 0, sizeof *u);
  char reason[160];
  int rc = ts_upstream_parse(url, &u->up, reason, sizeof reason);
  if (rc) {
    set_why(why, cap, "model %s", reason);
    return rc;
  }
  const char *path = u->up.path[0] ? u->up.path : "/";
  size_t pl = strlen(path) + strlen(u->up.query) + 2;
  u->path = malloc(pl);
  if (!u->path) {
    set_why(why, cap, "out of memory");
    return TS_E_NOMEM;
  }
  snprintf(u->path, pl, u->up.query[0] ? "%s?%s" : "%s", path, u->up.query);
  return TS_E_OK;
}

/* ---- one attempt -------------------------------------------------------------------- */

typedef struct {
  const ts_http_request *rq;
  const parsed_url *u;
  ts_http_chunk_fn on_chunk;
  void *user;
  ts_http_response_info *info;
  struct event_base *base;
  struct evhttp_connection *evcon;
  struct bufferevent *bev;
  SSL *ssl;
  int connect_ms, idle_ms;

  /* progress */
  double t_start, t_last;
  int connected;
  int headers; /* response headers seen */
  int status;
  int retry_after_s; /* -1: none */
  int have_everr;
  enum evhttp_request_error everr;
  struct evbuffer *hold; /* bytes before the real status line (on_input) */
  size_t prelude;        /* bytes of 1xx heads dropped */
  size_t head_bytes;     /* bytes read before the head was parsed */
  int past_1xx, in_input;
  char *errbody; /* non-2xx body, up to TS_HTTP_ERROR_BODY_MAX */
  size_t errlen;

  /* result */
  int settled;
  int rc;
  int retryable;
  char *why;
  size_t why_cap;
} attempt;

static void settle(attempt *a, int rc, int retryable, const char *fmt, ...) {
  if (a->settled) return;
  a->settled = 1;
  a->rc = rc;
  a->retryable = retryable && a->info->body_bytes == 0;
  if (a->why && a->why_cap) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->why, a->why_cap, fmt, ap);
    va_end(ap);
  }
  event_base_loopbreak(a->base);
}

/* A TLS failure explains itself through OpenSSL's error queue and verify result. */
static int tls_failure(attempt *a) {
  char reason[300];
  if (!a->ssl || !ts_upstream_tls_failure(a->bev, reason, sizeof reason)) return 0;
  settle(a, TS_E_HTTP_TLS, 0, "TLS with %s failed: %s", a->u->up.host, reason);
  return 1;
}

static int is_connected(attempt *a) {
  evutil_socket_t fd = bufferevent_getfd(a->bev);
  if (fd < 0) return 0;
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  if (getpeername(fd, (struct sockaddr *)&ss, &sl) != 0) return 0;
  return !a->ssl || SSL_is_init_finished(a->ssl);
}

static void on_tick(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  attempt *a = arg;
  if (a->settled) return;
  double now = mono_ms();
  if (a->rq->cancel && *a->rq->cancel) {
    settle(a, TS_E_HTTP_CANCELLED, 0, "request to %s cancelled", a->u->up.host);
    return;
  }
  if (!a->connected) {
    if (a->headers || is_connected(a)) {
      a->connected = 1;
      if (a->t_last < a->t_start) a->t_last = now;
    } else if (now - a->t_start > a->connect_ms) {
      settle(a, TS_E_HTTP_TIMEOUT, 1, "connecting to %s:%d timed out after %d ms",
             a->u->up.host, a->u->up.port, a->connect_ms);
      return;
    }
  }
  if (a->connected && now - a->t_last > a->idle_ms) {
    if (!a->headers && a->head_bytes) /* bytes came, a head did not: say so */
      settle(a, TS_E_HTTP_TIMEOUT, 1,
             "the head of the response from %s did not complete within %d ms", a->u->up.host,
             a->idle_ms);
    else
      settle(a, TS_E_HTTP_TIMEOUT, 1, "no data from %s for %d ms", a->u->up.host, a->idle_ms);
  }
}

static void head_too_large(attempt *a) {
  settle(a, TS_E_HTTP_PROTOCOL, 0, "the head of the response from %s is larger than %d KiB",
         a->u->up.host, TS_HTTP_HEAD_MAX >> 10);
}

/* Where the head at the start of `b` ends (after its empty line), or 0 when not there yet.
 * Lines end in LF or CR LF, as libevent reads them. */
static size_t head_end(struct evbuffer *b) {
  struct evbuffer_ptr p = evbuffer_search(b, "\n", 1, NULL);
  while (p.pos >= 0) {
    char c[2];
    size_t n = evbuffer_copyout_from(b, &p, c, 2) == 2 ? 2 : 0;
    if (n && c[1] == '\n') return (size_t)p.pos + 2;
    if (n && c[1] == '\r') {
      struct evbuffer_ptr q = p;
      char d[3];
      if (evbuffer_copyout_from(b, &q, d, 3) == 3 && d[2] == '\n') return (size_t)p.pos + 3;
    }
    if (evbuffer_ptr_set(b, &p, 1, EVBUFFER_PTR_ADD) < 0) break;
    p = evbuffer_search(b, "\n", 1, &p);
  }
  return 0;
}

/* The input evbuffer's callback, on every read: counts the head's bytes, bounds what
 * waits undelivered, and until the real status line drops 1xx heads (the essay at the
 * top). */
static void on_input(struct evbuffer *in, const struct evbuffer_cb_info *ci, void *arg) {
  attempt *a = arg;
  if (!a->headers && !a->in_input) a->head_bytes += ci->n_added;
  if (a->headers && !a->settled && evbuffer_get_length(in) >= TS_HTTP_PENDING_MAX) {
    settle(a, TS_E_HTTP_PROTOCOL, 0, "a chunk of the response from %s is larger than %d MiB",
           a->u->up.host, TS_HTTP_PENDING_MAX >> 20);
    return;
  }
  if (a->past_1xx || a->in_input || !ci->n_added || a->settled) return;
  a->in_input = 1;
  evbuffer_remove_buffer(in, a->hold, evbuffer_get_length(in));
  for (;;) {
    char st[12]; /* "HTTP/1.1 103" */
    ev_ssize_t got = evbuffer_copyout(a->hold, st, sizeof st);
    size_t k = got < 0 ? 0 : (size_t)got;
    static const char pat[] = "HTTP/1.? 1"; /* '?' any byte */
    size_t i = 0;
    while (i < k && i < sizeof pat - 1 && (pat[i] == '?' || st[i] == pat[i])) i++;
    if (i < k && i < sizeof pat - 1) break;                 /* not a 1xx status line */
    if (k < sizeof st) goto wait;                           /* cannot tell yet */
    if (st[10] == '0' && st[11] == '1') break;              /* 101 is no prelude */
    size_t end = head_end(a->hold);
    if (!end) {
      if (a->prelude + evbuffer_get_length(a->hold) > TS_HTTP_HEAD_MAX) goto too_long;
      goto wait;
    }
    a->prelude += end;
    if (a->prelude > TS_HTTP_HEAD_MAX) goto too_long;
    evbuffer_drain(a->hold, end);
  }
  a->past_1xx = 1;
  evbuffer_add_buffer(in, a->hold);
wait:
  a->in_input = 0;
  return;
too_long:
  a->in_input = 0;
  head_too_large(a);
}

static int on_headers(struct evhttp_request *req, void *arg) {
  attempt *a = arg;
  if (a->settled) return 0;
  a->headers = 1;
  a->connected = 1;
  a->t_last = mono_ms();
  a->status = evhttp_request_get_response_code(req);
  a->info->status = a->status;
  struct evkeyvalq *h = evhttp_request_get_input_headers(req);
  const char *ct = evhttp_find_header(h, "Content-Type");
  one_line(a->info->content_type, sizeof a->info->content_type, ct ? ct : "",
           ct ? strlen(ct) : 0);
  const char *ra = evhttp_find_header(h, "Retry-After");
  a->retry_after_s = -1;
  if (ra) {
    char *end;
    long v = strtol(ra, &end, 10);
    if (end != ra && *end == '\0' && v >= 0)
      a->retry_after_s = v > TS_HTTP_RETRY_AFTER_CAP_MS / 1000 ? TS_HTTP_RETRY_AFTER_CAP_MS / 1000
                                                               : (int)v;
  }
  return 0;
}

static int is_2xx(int s) { return s >= 200 && s < 300; }

static void status_error(attempt *a, struct evhttp_request *req);

/* Hands whatever is in `buf` to the caller (2xx) or keeps it (error body). */
static void take_body(attempt *a, struct evbuffer *buf) {
  size_t n = evbuffer_get_length(buf);
  if (!n || a->settled) return;
  a->t_last = mono_ms();
  if (is_2xx(a->status)) {
    /* One segment at a time, without copying; drained as handed over. */
    while (evbuffer_get_length(buf) > 0) {
      struct evbuffer_iovec v;
      if (evbuffer_peek(buf, -1, NULL, &v, 1) < 1 || !v.iov_len) break;
      a->info->body_bytes += v.iov_len;
      int stop = a->on_chunk(a->user, v.iov_base, v.iov_len);
      evbuffer_drain(buf, v.iov_len);
      if (stop) {
        settle(a, TS_E_ABORTED, 0, "stopped by the chunk callback");
        break;
      }
    }
  } else {
    size_t room = TS_HTTP_ERROR_BODY_MAX - a->errlen;
    if (n > room) n = room;
    if (n) a->errlen += (size_t)evbuffer_copyout(buf, a->errbody + a->errlen, n);
  }
  evbuffer_drain(buf, evbuffer_get_length(buf));
  /* The message is in the kept part; the rest of an error body (which may never end) is
   * not waited for. */
  if (!is_2xx(a->status) && a->errlen == TS_HTTP_ERROR_BODY_MAX) status_error(a, NULL);
}

static void on_chunk_cb(struct evhttp_request *req, void *arg) {
  attempt *a = arg;
  if (a->settled) return;
  take_body(a, evhttp_request_get_input_buffer(req));
}

static void on_error(enum evhttp_request_error err, void *arg) {
  attempt *a = arg;
  a->have_everr = 1;
  a->everr = err;
}

/* `HTTP 429: <message>` from the kept error body. */
static void status_error(attempt *a, struct evhttp_request *req) {
  char msg[512] = "";
  if (a->errlen) {
    ts_jv v;
    if (ts_jv_init(&v, 512) == TS_E_OK) {
      if (ts_jv_parse(&v, a->errbody, a->errlen) == TS_E_OK) {
        int e = ts_jv_get(&v, 0, "error");
        int m = ts_jv_type_of(&v, e) == TS_JV_STRING ? e : ts_jv_get(&v, e, "message");
        if (m < 0) m = ts_jv_get(&v, 0, "message");
        ts_view s;
        if (m >= 0 && ts_jv_str(&v, m, &s) == TS_E_OK) one_line(msg, sizeof msg, s.p, s.len);
      }
      ts_jv_fini(&v);
    }
    if (!msg[0]) one_line(msg, sizeof msg, a->errbody, a->errlen);
  }
  if (!msg[0] && req) {
    const char *line = evhttp_request_get_response_code_line(req);
    if (line) one_line(msg, sizeof msg, line, strlen(line));
  }
  int retry = a->status == 429 || (a->status >= 500 && a->status < 600); /* not a 999 */
  settle(a, TS_E_HTTP_STATUS, retry, "HTTP %d: %s", a->status, msg[0] ? msg : "(no message)");
}

static void on_done(struct evhttp_request *req, void *arg) {
  attempt *a = arg;
  if (a->settled) return;
  int code = req ? evhttp_request_get_response_code(req) : 0;
  if (req && code > 0) {
    a->status = code;
    a->info->status = code;
    take_body(a, evhttp_request_get_input_buffer(req));
    if (a->settled) return;
    if (is_2xx(code)) {
      settle(a, TS_E_OK, 0, "%s", "");
    } else {
      status_error(a, req);
    }
    return;
  }
  if (tls_failure(a)) return;
  if (a->have_everr && a->everr == EVREQ_HTTP_TIMEOUT) {
    settle(a, TS_E_HTTP_TIMEOUT, 1, "request to %s timed out", a->u->up.host);
  } else if (a->have_everr && a->everr == EVREQ_HTTP_DATA_TOO_LONG) {
    /* libevent's word for a bad chunk size line and for trailers over the head's limit */
    settle(a, TS_E_HTTP_PROTOCOL, 0,
           "malformed chunked body from %s (a bad chunk size, or trailers over %d KiB)",
           a->u->up.host, TS_HTTP_HEAD_MAX >> 10);
  } else if (a->have_everr && a->everr == EVREQ_HTTP_INVALID_HEADER) {
    /* libevent reports a head over its limit as an invalid one */
    if (!a->headers && a->head_bytes > TS_HTTP_HEAD_MAX)
      head_too_large(a);
    else
      settle(a, TS_E_HTTP_PROTOCOL, 0, "malformed HTTP response from %s", a->u->up.host);
  } else if (a->headers) {
    settle(a, TS_E_HTTP_CLOSED, 1,
           "connection to %s closed in the middle of the response (after %llu body bytes)",
           a->u->up.host, (unsigned long long)a->info->body_bytes);
  } else if (a->connected || is_connected(a)) {
    settle(a, TS_E_HTTP_CLOSED, 1, "connection to %s closed before the response",
           a->u->up.host);
  } else {
    settle(a, TS_E_HTTP_CONNECT, 1, "cannot connect to %s:%d", a->u->up.host, a->u->up.port);
  }
}

/* Runs one attempt to its end; returns its code; *retry says whether it may be retried
 * and *retry_after_s what the server asked for (-1: nothing). */
static int run_attempt(const ts_http_request *rq, const parsed_url *u, SSL_CTX *ctx,
                       ts_http_chunk_fn on_chunk, void *user, ts_http_response_info *info,
                       char *why, size_t why_cap, int *retry, int *retry_after_s) {
  attempt a;
  memset(&a, 0, sizeof a);
  a.rq = rq;
  a.u = u;
  a.on_chunk = on_chunk;
  a.user = user;
  a.info = info;
  a.why = why;
  a.why_cap = why_cap;
  a.retry_after_s = -1;
  a.connect_ms = rq->connect_timeout_ms > 0 ? rq->connect_timeout_ms : TS_HTTP_CONNECT_TIMEOUT_MS;
  a.idle_ms = rq->idle_timeout_ms > 0 ? rq->idle_timeout_ms : TS_HTTP_IDLE_TIMEOUT_MS;
  *retry = 0;
  *retry_after_s = -1;
  info->status = 0;
  info->content_type[0] = '\0';

  int rc = TS_E_NOMEM;
  struct event *tick = NULL;
  struct evhttp_request *req = NULL;
  a.errbody = malloc(TS_HTTP_ERROR_BODY_MAX);
  a.hold = evbuffer_new();
  a.base = event_base_new();
  if (!a.errbody || !a.hold || !a.base) goto fail_nomem;

  if (u->up.tls) {
    a.bev = ts_upstream_tls_bev(a.base, ctx, &u->up);
    if (!a.bev) goto fail_nomem;
    a.ssl = bufferevent_openssl_get_ssl(a.bev);
  }
  a.evcon = evhttp_connection_base_bufferevent_new(a.base, NULL, a.bev, u->up.host,
                                                   (unsigned short)u->up.port);
  if (!a.evcon) {
    if (a.bev) bufferevent_free(a.bev);
    goto fail_nomem;
  }
  if (!a.bev) a.bev = evhttp_connection_get_bufferevent(a.evcon);
  evhttp_connection_set_retries(a.evcon, 0);
  evhttp_connection_set_max_headers_size(a.evcon, TS_HTTP_HEAD_MAX);
  if (!evbuffer_add_cb(bufferevent_get_input(a.bev), on_input, &a)) goto fail_nomem;
  {
    /* The backstop: our tick enforces the real limits. */
    int far_ms = a.connect_ms + a.idle_ms + 5000;
    struct timeval tv = {far_ms / 1000, (far_ms % 1000) * 1000};
    evhttp_connection_set_timeout_tv(a.evcon, &tv);
  }

  req = evhttp_request_new(on_done, &a);
  if (!req) goto fail_nomem;
  evhttp_request_set_header_cb(req, on_headers);
  evhttp_request_set_chunked_cb(req, on_chunk_cb);
  evhttp_request_set_error_cb(req, on_error);
  struct evkeyvalq *out = evhttp_request_get_output_headers(req);
  int has_host = 0, has_ct = 0;
  for (size_t i = 0; i < rq->n_headers; i++) {
    const ts_http_header *h = &rq->headers[i];
    if (!strcasecmp(h->name, "Host")) has_host = 1;
    if (!strcasecmp(h->name, "Content-Type")) has_ct = 1;
    if (evhttp_add_header(out, h->name, h->value) != 0) {
      evhttp_request_free(req);
      set_why(why, why_cap, "request header %s is malformed", h->name);
      rc = TS_E_INVAL;
      goto cleanup;
    }
  }
  if (!has_host) evhttp_add_header(out, "Host", u->up.host_hdr);
  if (!has_ct) evhttp_add_header(out, "Content-Type", "application/json");
  if (rq->body_len &&
      evbuffer_add(evhttp_request_get_output_buffer(req), rq->body, rq->body_len) != 0) {
    evhttp_request_free(req);
    goto fail_nomem;
  }

  tick = event_new(a.base, -1, EV_PERSIST, on_tick, &a);
  if (!tick) {
    evhttp_request_free(req);
    goto fail_nomem;
  }
  struct timeval tv = {0, TS_HTTP_TICK_MS * 1000};
  event_add(tick, &tv);
  a.t_start = mono_ms();
  a.t_last = a.t_start - 1;
  /* On failure evhttp_make_request frees the request itself. */
  if (evhttp_make_request(a.evcon, req, EVHTTP_REQ_POST, u->path) != 0) {
    if (!tls_failure(&a))
      settle(&a, TS_E_HTTP_CONNECT, 1, "cannot connect to %s:%d", u->up.host, u->up.port);
  } else {
    while (!a.settled) {
      if (event_base_dispatch(a.base) < 0) {
        settle(&a, TS_E_IO, 0, "event loop failed");
        break;
      }
    }
  }
  rc = a.rc;
  *retry = a.retryable;
  *retry_after_s = a.retry_after_s;
  goto cleanup;

fail_nomem:
  set_why(why, why_cap, "out of memory");
  rc = TS_E_NOMEM;
cleanup:
  if (tick) event_free(tick);
  if (a.evcon) evhttp_connection_free(a.evcon); /* also frees a.bev and a.ssl */
  if (a.base) event_base_free(a.base);
  if (a.hold) evbuffer_free(a.hold);
  free(a.errbody);
  ERR_clear_error();
  return rc;
}

/* Sleeps ms, waking every tick to look at the cancel flag; nonzero when cancelled. */
static int backoff_sleep(int ms, const volatile int *cancel) {
  double end = mono_ms() + ms;
  for (;;) {
    if (cancel && *cancel) return 1;
    double left = end - mono_ms();
    if (left <= 0) return 0;
    if (left > TS_HTTP_TICK_MS) left = TS_HTTP_TICK_MS;
    struct timespec ts = {0, (long)(left * 1e6)};
    nanosleep(&ts, NULL);
  }
}

int ts_http_post_stream(const ts_http_request *rq, ts_http_chunk_fn on_chunk, void *user,
                        ts_http_response_info *info, char *why, size_t why_cap) {
  ts_http_response_info dummy;
  if (!info) info = &dummy;
  memset(info, 0, sizeof *info);
  if (why && why_cap) why[0] = '\0';
  if (!rq || !rq->url || !on_chunk || (rq->n_headers && !rq->headers) ||
      (rq->body_len && !rq->body)) {
    set_why(why, why_cap, "invalid argument");
    return TS_E_INVAL;
  }
  for (size_t i = 0; i < rq->n_headers; i++) {
    const ts_http_header *h = &rq->headers[i];
    if (!h->name || !h->value || !*h->name || strpbrk(h->name, "\r\n: \t") ||
        strpbrk(h->value, "\r\n")) {
      set_why(why, why_cap, "request header %zu is malformed", i);
      return TS_E_INVAL;
    }
  }
  parsed_url u;
  int rc = parse_url(rq->url, &u, why, why_cap);
  if (rc != TS_E_OK) return rc;
  SSL_CTX *ctx = NULL;
  if (u.up.tls && (rc = ts_upstream_tls_ctx(rq->ca_file, &ctx, why, why_cap)) != TS_E_OK) {
    free(u.path);
    return rc;
  }
  int max_retries = rq->max_retries == 0 ? TS_HTTP_MAX_RETRIES
                    : rq->max_retries < 0 ? 0
                                          : rq->max_retries;
  int base_ms = rq->retry_base_ms > 0 ? rq->retry_base_ms : TS_HTTP_RETRY_BASE_MS;
  for (int n = 0;; n++) {
    if (rq->cancel && *rq->cancel) {
      set_why(why, why_cap, "request to %s cancelled", u.up.host);
      rc = TS_E_HTTP_CANCELLED;
      break;
    }
    int retry, retry_after_s;
    info->attempts = n + 1;
    rc = run_attempt(rq, &u, ctx, on_chunk, user, info, why, why_cap, &retry, &retry_after_s);
    if (rc == TS_E_OK || !retry || n >= max_retries) {
      if (rc != TS_E_OK && retry && n > 0 && why) {
        size_t l = strlen(why);
        if (l < why_cap) snprintf(why + l, why_cap - l, " (after %d attempts)", n + 1);
      }
      break;
    }
    long delay = (long)base_ms << (n < 20 ? n : 20);
    if (delay > TS_HTTP_BACKOFF_CAP_MS) delay = TS_HTTP_BACKOFF_CAP_MS;
    if (retry_after_s >= 0) delay = (long)retry_after_s * 1000;
    if (backoff_sleep((int)delay, rq->cancel)) {
      set_why(why, why_cap, "request to %s cancelled", u.up.host);
      rc = TS_E_HTTP_CANCELLED;
      break;
    }
  }
  SSL_CTX_free(ctx);
  free(u.path);
  return rc;
}
