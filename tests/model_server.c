/*
 * model_server.c: a small local "model backend" for tests: recorded SSE streams served
 * over real HTTP (and HTTPS), with the misbehaviours a real provider shows.
 *
 * Usage: model_server DIR [--tls CERT.pem KEY.pem]
 *
 *   Listens on 127.0.0.1 on a port the kernel chooses (also on ::1 with the same port
 *   when it can) and prints the port number alone on the first line of stdout. Exits
 *   when its standard input reaches end of file (a test closes the pipe) or on SIGTERM.
 *   Diagnostics go to stderr.
 *
 * Serving. Any POST (any path) answers 200 with chunked transfer encoding and the bytes
 * of the next file of DIR named *.sse (Content-Type text/event-stream) or *.bin (AWS event
 * stream frames, as Bedrock's ConverseStream: application/vnd.amazon.eventstream), in
 * natural name order (turn-1.sse, turn-2.sse, ..., turn-10.sse). When the files are used up it answers 404
 * with {"error":{"message":"model_server: no more .sse files"}}. Error replies (below)
 * do not use up a file. Other methods get 405.
 *
 * Recording. Every request N (1-based, in arrival order, errors included) is written
 * before it is answered:
 *   DIR/requests/N.txt   "METHOD URI" then one "Name: value" line per header, except
 *                        that the values of Authorization, Proxy-Authorization,
 *                        x-api-key, api-key, x-goog-api-key and x-amz-security-token
 *                        are replaced by "<present>" (an AWS SigV4 Authorization, which
 *                        holds no secret, only a signature, is kept so a test can check it);
 *   DIR/requests/N.json  the request body, byte for byte.
 *
 * Behaviours, chosen by the query string of the request URL (combine freely):
 *   slow=MS          send the body in small chunks, one every MS milliseconds
 *   chunk=N          bytes per chunk (default 16 with slow, else the whole file at once)
 *   stall=MS         wait MS milliseconds before answering at all (no headers)
 *   drop-after=N     after N body bytes were sent, cut the connection (shutdown of the
 *                    socket, no terminating chunk)
 *   status=CODE      answer CODE with a JSON error body
 *                    {"error":{"message":"model_server: status CODE"}}
 *   times=K          with status: only the first K requests carrying this exact query
 *                    string get the error; later ones are served normally
 *   retry-after=S    with status: send Retry-After: S (default 0 for 429, none otherwise)
 *   errbody=text     with status: a plain-text body "model_server says no\nsecond line"
 *   errbody=echo     with status: a JSON error whose message echoes the request's
 *                    Authorization value, as a provider refusing a key does
 *   malformed=1      send MALFORMED (below) instead of a file: not SSE, not JSON
 *                    (every option needs a value: "?malformed" alone is ignored)
 *   type=MEDIA       answer with Content-Type MEDIA instead of the file's own (NDJSON, a
 *                    JSON array, an HTML page; at most 127 bytes)
 *   ttfb=MS          send the status and headers at once, the first body byte MS
 *                    milliseconds later (time to first byte)
 *   gap=MS           send the body one SSE event at a time (up to and including its
 *                    blank line), one every MS milliseconds (the pacing of the content)
 *   hold=TEXT        wait hold-ms=MS milliseconds before the first SSE event whose bytes
 *                    contain TEXT (once per reply; the pacing of a label: hold the event
 *                    that completes it, or the one after it); implies sending by event
 *   cycle=1          when the files are used up, start again from the first (for
 *                    repeated requests: a benchmark's runs)
 * Example: POST /v1/chat/completions?status=429&times=2 gets 429 twice, then a stream.
 */
#define _DEFAULT_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#define MALFORMED "this is not an event stream\n\x01\x02{\"broken\": [1,2\n\n:::\xff\xfe\n\n"

/* libevent 2.1 leaks the request objects of server connections that die in the middle
 * of a chunked reply (exactly what drop-after and departing clients cause). Those are
 * not ours to free; keep LeakSanitizer quiet about them in sanitized builds. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "detect_leaks=0"; }

static const char *dir;
static char **files;
static int nfiles, next_file, nrequests;
static struct event_base *base;
static SSL_CTX *tls_ctx;

/* ---- files ------------------------------------------------------------------------ */

/* Natural order: digit runs compare as numbers. */
static int natcmp(const char *a, const char *b) {
  while (*a && *b) {
    if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
      char *ea, *eb;
      unsigned long x = strtoul(a, &ea, 10), y = strtoul(b, &eb, 10);
      if (x != y) return x < y ? -1 : 1;
      a = ea;
      b = eb;
      continue;
    }
    if (*a != *b) return (unsigned char)*a - (unsigned char)*b;
    a++, b++;
  }
  return (unsigned char)*a - (unsigned char)*b;
}

static int cmp_names(const void *x, const void *y) {
  return natcmp(*(char *const *)x, *(char *const *)y);
}

static void scan_files(void) {
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "model_server: cannot open %s: %s\n", dir, strerror(errno));
    exit(2);
  }
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l > 4 && (!strcmp(e->d_name + l - 4, ".sse") || !strcmp(e->d_name + l - 4, ".bin"))) {
      files = realloc(files, sizeof *files * (size_t)(nfiles + 1));
      files[nfiles++] = strdup(e->d_name);
    }
  }
  closedir(d);
  if (nfiles) qsort(files, (size_t)nfiles, sizeof *files, cmp_names);
}

static char *read_file(const char *name, size_t *len) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *p = NULL;
  size_t n = 0, cap = 0;
  for (;;) {
    if (n + 4096 > cap) {
      cap = cap ? cap * 2 : 8192;
      p = realloc(p, cap);
    }
    size_t got = fread(p + n, 1, cap - n, f);
    if (!got) break;
    n += got;
  }
  fclose(f);
  *len = n;
  return p;
}

static void write_file(const char *rel, const void *data, size_t len) {
  char path[4096], tmp[4200];
  snprintf(path, sizeof path, "%s/requests/%s", dir, rel);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  if (!f) return;
  if (len) fwrite(data, 1, len, f);
  fclose(f);
  rename(tmp, path);
}

/* ---- per-query failure counters (for status=...&times=K) ---------------------------- */

static struct {
  char key[512];
  int count;
} counters[128];
static int ncounters;

static int *counter_for(const char *key) {
  for (int i = 0; i < ncounters; i++)
    if (!strcmp(counters[i].key, key)) return &counters[i].count;
  if (ncounters == 128) return &counters[127].count;
  snprintf(counters[ncounters].key, sizeof counters[ncounters].key, "%s", key);
  return &counters[ncounters++].count;
}

/* ---- one response in progress ------------------------------------------------------- */

typedef struct stream {
  struct evhttp_request *req;
  struct evhttp_connection *evcon;
  char *data;
  size_t len, off, chunk;
  long drop_after; /* -1: never */
  int slow_ms;
  int status; /* 0: stream a file */
  int retry_after;
  int text_body;
  int echo_auth; /* errbody=echo */
  char ctype[128]; /* the Content-Type of a 2xx reply */
  int dropping;
  int binary; /* an AWS event stream (*.bin) */
  int ttfb_ms, ttfb_done; /* ttfb= */
  int started;            /* the status and headers went */
  int gap_ms, by_event;   /* gap=, hold=: one SSE event per chunk */
  char *hold;             /* hold=TEXT (NULL: none), held once */
  int hold_ms, held;
  struct event *timer;
} stream;

static void stream_free(stream *s) {
  if (!s) return;
  if (s->timer) event_free(s->timer);
  free(s->hold);
  free(s->data);
  free(s);
}

static void on_close(struct evhttp_connection *evcon, void *arg) {
  (void)evcon;
  stream_free(arg); /* the client left (or we are shutting down): stop sending */
}

static void finish(stream *s) {
  evhttp_connection_set_closecb(s->evcon, NULL, NULL);
  stream_free(s);
}

static void send_next(stream *s);

static void on_timer(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  stream *s = arg;
  if (s->dropping) {
    struct bufferevent *bev = evhttp_connection_get_bufferevent(s->evcon);
    int sfd = bev ? bufferevent_getfd(bev) : -1;
    fprintf(stderr, "model_server: dropping the connection after %zu bytes\n", s->off);
    if (sfd >= 0) shutdown(sfd, SHUT_RDWR);
    return; /* the close callback frees s */
  }
  send_next(s);
}

static void arm(stream *s, int ms) {
  struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
  evtimer_add(s->timer, &tv);
}

static void send_error(stream *s) {
  struct evkeyvalq *h = evhttp_request_get_output_headers(s->req);
  char buf[256];
  if (s->retry_after >= 0) {
    snprintf(buf, sizeof buf, "%d", s->retry_after);
    evhttp_add_header(h, "Retry-After", buf);
  }
  struct evbuffer *b = evbuffer_new();
  const char *auth = evhttp_find_header(evhttp_request_get_input_headers(s->req),
                                        "Authorization");
  if (s->echo_auth) {
    evhttp_add_header(h, "Content-Type", "application/json");
    evbuffer_add_printf(b, "{\"error\":{\"message\":\"Incorrect API key provided: %s\"}}",
                        auth ? auth : "");
  } else if (s->text_body) {
    evhttp_add_header(h, "Content-Type", "text/plain");
    evbuffer_add_printf(b, "model_server says no\nsecond line\n");
  } else {
    evhttp_add_header(h, "Content-Type", "application/json");
    evbuffer_add_printf(b, "{\"error\":{\"message\":\"model_server: status %d\",\"type\":\"test\"}}",
                        s->status);
  }
  evhttp_send_reply(s->req, s->status, "Test Error", b);
  evbuffer_free(b);
  finish(s);
}

/* Whether data[0..n) contains the string t. */
static int contains(const char *data, size_t n, const char *t) {
  size_t tl = strlen(t);
  for (size_t i = 0; tl && i + tl <= n; i++)
    if (!memcmp(data + i, t, tl)) return 1;
  return 0;
}

static void send_next(stream *s) {
  if (s->status) {
    send_error(s);
    return;
  }
  if (!s->started && !s->dropping) {
    s->started = 1;
    struct evkeyvalq *h = evhttp_request_get_output_headers(s->req);
    evhttp_add_header(h, "Content-Type",
                      s->ctype[0] ? s->ctype
                      : s->binary ? "application/vnd.amazon.eventstream"
                                  : "text/event-stream");
    evhttp_add_header(h, "Cache-Control", "no-cache");
    evhttp_send_reply_start(s->req, 200, "OK");
    if (!s->len) {
      evhttp_send_reply_end(s->req);
      finish(s);
      return;
    }
  }
  if (s->ttfb_ms > 0 && !s->ttfb_done) { /* the headers went; the body waits */
    s->ttfb_done = 1;
    arm(s, s->ttfb_ms);
    return;
  }
  size_t n = s->len - s->off;
  if (s->by_event) { /* the next SSE event, through its blank line */
    const char *p = s->data + s->off, *end = s->data + s->len, *e = NULL;
    for (const char *q = p; q + 1 < end && !e; q++)
      if (q[0] == '\n' && q[1] == '\n') e = q + 2;
    n = e ? (size_t)(e - p) : n;
    if (s->hold && !s->held && contains(p, n, s->hold)) {
      s->held = 1;
      arm(s, s->hold_ms);
      return;
    }
  } else if (s->chunk && n > s->chunk) {
    n = s->chunk;
  }
  if (s->drop_after >= 0 && s->off + n > (size_t)s->drop_after) n = (size_t)s->drop_after - s->off;
  if (n) {
    struct evbuffer *b = evbuffer_new();
    evbuffer_add(b, s->data + s->off, n);
    evhttp_send_reply_chunk(s->req, b);
    evbuffer_free(b);
    s->off += n;
  }
  if (s->drop_after >= 0 && s->off >= (size_t)s->drop_after) {
    s->dropping = 1;
    arm(s, 100); /* let the bytes leave first */
    return;
  }
  if (s->off >= s->len) {
    evhttp_send_reply_end(s->req);
    finish(s);
    return;
  }
  arm(s, s->by_event ? s->gap_ms : s->slow_ms);
}

/* ---- requests --------------------------------------------------------------------- */

static int is_secret(const char *name) {
  return !strcasecmp(name, "Authorization") || !strcasecmp(name, "Proxy-Authorization") ||
         !strcasecmp(name, "x-api-key") || !strcasecmp(name, "api-key") ||
         !strcasecmp(name, "x-goog-api-key") || !strcasecmp(name, "x-amz-security-token");
}

/* A SigV4 Authorization value: a credential scope and a signature, no secret. */
static int is_sigv4(const char *name, const char *value) {
  return !strcasecmp(name, "Authorization") && !strncmp(value, "AWS4-HMAC-SHA256 ", 17);
}

static void record(struct evhttp_request *req, int n) {
  struct evbuffer *txt = evbuffer_new();
  const char *m = evhttp_request_get_command(req) == EVHTTP_REQ_POST ? "POST" : "OTHER";
  evbuffer_add_printf(txt, "%s %s\n", m, evhttp_request_get_uri(req));
  struct evkeyvalq *h = evhttp_request_get_input_headers(req);
  for (struct evkeyval *kv = h->tqh_first; kv; kv = kv->next.tqe_next)
    evbuffer_add_printf(txt, "%s: %s\n", kv->key,
                        is_secret(kv->key) && !is_sigv4(kv->key, kv->value) ? "<present>" : kv->value);
  char name[64];
  snprintf(name, sizeof name, "%d.txt", n);
  write_file(name, evbuffer_pullup(txt, -1), evbuffer_get_length(txt));
  evbuffer_free(txt);
  struct evbuffer *body = evhttp_request_get_input_buffer(req);
  snprintf(name, sizeof name, "%d.json", n);
  write_file(name, evbuffer_pullup(body, -1), evbuffer_get_length(body));
}

static long opt_num(struct evkeyvalq *q, const char *key, long dflt) {
  const char *v = evhttp_find_header(q, key);
  return v ? strtol(v, NULL, 10) : dflt;
}

static void on_request(struct evhttp_request *req, void *arg) {
  (void)arg;
  int n = ++nrequests;
  record(req, n);
  if (evhttp_request_get_command(req) != EVHTTP_REQ_POST) {
    evhttp_send_error(req, 405, "POST only");
    return;
  }
  const char *uri = evhttp_request_get_uri(req);
  const char *qs = strchr(uri, '?');
  qs = qs ? qs + 1 : "";
  struct evkeyvalq q;
  memset(&q, 0, sizeof q);
  evhttp_parse_query_str(qs, &q);

  stream *s = calloc(1, sizeof *s);
  s->req = req;
  s->evcon = evhttp_request_get_connection(req);
  s->drop_after = opt_num(&q, "drop-after", -1);
  s->slow_ms = (int)opt_num(&q, "slow", 0);
  s->chunk = (size_t)opt_num(&q, "chunk", s->slow_ms ? 16 : 0);
  s->retry_after = -1;
  const char *type = evhttp_find_header(&q, "type");
  if (type) snprintf(s->ctype, sizeof s->ctype, "%s", type);
  s->ttfb_ms = (int)opt_num(&q, "ttfb", 0);
  s->gap_ms = (int)opt_num(&q, "gap", 0);
  const char *hold = evhttp_find_header(&q, "hold");
  if (hold && *hold) s->hold = strdup(hold);
  s->hold_ms = (int)opt_num(&q, "hold-ms", 0);
  s->by_event = s->gap_ms > 0 || s->hold;
  s->timer = evtimer_new(base, on_timer, s);
  long status = opt_num(&q, "status", 0);
  if (status) {
    long times = opt_num(&q, "times", -1);
    int *c = counter_for(qs);
    if (times < 0 || *c < times) {
      (*c)++;
      s->status = (int)status;
      s->retry_after = (int)opt_num(&q, "retry-after", status == 429 ? 0 : -1);
      const char *eb = evhttp_find_header(&q, "errbody");
      s->text_body = eb && !strcmp(eb, "text");
      s->echo_auth = eb && !strcmp(eb, "echo");
    }
  }
  if (!s->status) {
    if (evhttp_find_header(&q, "malformed")) {
      s->len = sizeof MALFORMED - 1;
      s->data = malloc(s->len);
      memcpy(s->data, MALFORMED, s->len);
    } else if (next_file < nfiles || (nfiles && opt_num(&q, "cycle", 0) == 1)) {
      if (next_file >= nfiles) next_file = 0; /* cycle=1: once more from the first */
      size_t fl = strlen(files[next_file]);
      s->binary = fl > 4 && !strcmp(files[next_file] + fl - 4, ".bin");
      s->data = read_file(files[next_file++], &s->len);
      if (!s->data) s->status = 500;
    } else {
      stream_free(s);
      evhttp_clear_headers(&q);
      struct evbuffer *b = evbuffer_new();
      evbuffer_add_printf(b, "{\"error\":{\"message\":\"model_server: no more .sse files\"}}");
      evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                        "application/json");
      evhttp_send_reply(req, 404, "Not Found", b);
      evbuffer_free(b);
      return;
    }
  }
  long stall = opt_num(&q, "stall", 0);
  evhttp_clear_headers(&q);
  evhttp_connection_set_closecb(s->evcon, on_close, s);
  if (stall > 0)
    arm(s, (int)stall);
  else
    send_next(s);
}

/* ---- setup ------------------------------------------------------------------------ */

static struct bufferevent *tls_bevcb(struct event_base *b, void *arg) {
  (void)arg;
  return bufferevent_openssl_socket_new(b, -1, SSL_new(tls_ctx), BUFFEREVENT_SSL_ACCEPTING,
                                        BEV_OPT_CLOSE_ON_FREE);
}

static void on_stdin(evutil_socket_t fd, short what, void *arg) {
  (void)what;
  (void)arg;
  char buf[256];
  ssize_t r = read(fd, buf, sizeof buf);
  if (r <= 0) event_base_loopexit(base, NULL);
}

static void on_term(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  (void)arg;
  event_base_loopexit(base, NULL);
}

int main(int argc, char **argv) {
  if (argc != 2 && !(argc == 5 && !strcmp(argv[2], "--tls"))) {
    fprintf(stderr, "usage: model_server DIR [--tls CERT.pem KEY.pem]\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  dir = argv[1];
  scan_files();
  char reqdir[4096];
  snprintf(reqdir, sizeof reqdir, "%s/requests", dir);
  mkdir(reqdir, 0755);

  base = event_base_new();
  struct evhttp *http = evhttp_new(base);
  if (argc == 5) {
    tls_ctx = SSL_CTX_new(TLS_server_method());
    if (!tls_ctx || SSL_CTX_use_certificate_chain_file(tls_ctx, argv[3]) != 1 ||
        SSL_CTX_use_PrivateKey_file(tls_ctx, argv[4], SSL_FILETYPE_PEM) != 1) {
      fprintf(stderr, "model_server: cannot load %s / %s\n", argv[3], argv[4]);
      ERR_print_errors_fp(stderr);
      return 2;
    }
    evhttp_set_bevcb(http, tls_bevcb, NULL);
  }
  evhttp_set_allowed_methods(http, EVHTTP_REQ_POST | EVHTTP_REQ_GET);
  evhttp_set_gencb(http, on_request, NULL);
  struct evhttp_bound_socket *bs = evhttp_bind_socket_with_handle(http, "127.0.0.1", 0);
  if (!bs) {
    fprintf(stderr, "model_server: cannot listen\n");
    return 2;
  }
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&ss, &sl);
  int port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
  evhttp_bind_socket(http, "::1", (unsigned short)port); /* best effort */
  printf("%d\n", port);
  fflush(stdout);

  struct event *in = event_new(base, 0, EV_READ | EV_PERSIST, on_stdin, NULL);
  event_add(in, NULL);
  struct event *term = evsignal_new(base, SIGTERM, on_term, NULL);
  event_add(term, NULL);
  event_base_dispatch(base);

  event_free(in);
  event_free(term);
  evhttp_free(http); /* closes connections: their close callbacks free the streams */
  if (tls_ctx) SSL_CTX_free(tls_ctx);
  event_base_free(base);
  for (int i = 0; i < nfiles; i++) free(files[i]);
  free(files);
  return 0;
}
