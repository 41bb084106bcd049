/*
 * gateway_cli_test.c: `toolstream gateway` in front of tests/model_server, driven by a
 * raw HTTP/1.1 client over real sockets, with a bus subscriber in this process.
 *
 * What is checked: every corpus stream arrives byte for byte (also when the upstream
 * writes it one byte at a time); status and end-to-end headers pass, hop-by-hop ones do
 * not; the thread id header is honoured and returned; "x-progress-argument" is stripped
 * from what the upstream receives and labels tool_call_started, which reaches the bus
 * before the client has read the call's last argument byte; upstream error statuses
 * pass through, an unreachable or broken upstream gives 502 / a cut stream, and a
 * stream_error on the bus; a departing client cancels the upstream request; header
 * and body limits answer 431 and 413; /healthz and /metrics.
 */
#define _DEFAULT_SOURCE
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "events/bus_sub.h"
#include "support/cert.h"
#include "support/model_server.h"
#include "support/proc.h"
#include "support/sse_text.h"
#include "support/tempdir.h"
#include "support/test_support.h"

#define BINARY TS_BINARY_DIR "/toolstream"

static const char *const corpus[] = {
    "openai-chat-two-parallel-calls.sse", "openai-responses-one-call.sse",
    "anthropic-text-then-tool.sse",       "anthropic-fine-grained-max-tokens.sse",
    "gemini-sse-two-function-calls.sse",  "ollama-openai-compat-whole-args.sse",
};
#define NCORPUS (sizeof corpus / sizeof corpus[0])

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* strcasestr is a GNU extension: our own, for ASCII */
static char *ci_strstr(const char *h, const char *n) {
  size_t l = strlen(n);
  for (; *h; h++)
    if (!strncasecmp(h, n, l)) return (char *)h;
  return NULL;
}
#define strcasestr ci_strstr

/* ---- processes ------------------------------------------------------------------------ */

typedef struct {
  char dir[256];
  ts_test_server ms;
  child gw;
  result gwr;
  int ms_port, gw_port;
  char pub[128], rep[128];
} env;

static int first_line_int(child *c, result *r, const char *prefix) {
  double end = now_ms() + 20000;
  while (now_ms() < end) {
    if (r->out.p && strchr(r->out.p, '\n')) break;
    if (pump(c, r, 20) == 0) break;
  }
  ck_assert_msg(r->out.p && strchr(r->out.p, '\n'), "no first line; stderr: %s", sb_str(&r->err));
  const char *p = r->out.p;
  if (prefix) {
    p = strrchr(r->out.p, ':');
    ck_assert_ptr_nonnull(p);
    p++;
  }
  return atoi(p);
}


/* Starts the model server on a fresh directory holding `files` (n of them, contents) as
 * 1.sse, 2.sse, ... and the gateway in front of it (upstream_port 0: the model server;
 * otherwise that port), with `extra` gateway options (NULL-terminated, may be NULL). */
static int seq;

/* The next fresh test directory (made). */
static void next_dir(env *e) {
  memset(e, 0, sizeof e[0]);
  signal(SIGPIPE, SIG_IGN);
  seq++;
  ts_test_tempdir(e->dir, sizeof e->dir, "gw-test");
}

/* With `upstream_fmt` ("https://localhost:%d") and the model server on TLS with
 * e->dir/cert.pem and key.pem (already made: call next_dir first, and pass keep_dir). */
static void env_start_ex(env *e, const char *const *contents, const size_t *lens, int n,
                         int upstream_port, const char *const *extra, const char *upstream_fmt,
                         int tls);

static void env_start(env *e, const char *const *contents, const size_t *lens, int n,
                      int upstream_port, const char *const *extra) {
  next_dir(e);
  env_start_ex(e, contents, lens, n, upstream_port, extra, NULL, 0);
}

static void env_start_ex(env *e, const char *const *contents, const size_t *lens, int n,
                         int upstream_port, const char *const *extra, const char *upstream_fmt,
                         int tls) {
  for (int i = 0; i < n; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/%d.sse", e->dir, i + 1);
    ts_test_write_file(path, contents[i], lens[i]);
  }
  char cert[300], key[300];
  snprintf(cert, sizeof cert, "%s/cert.pem", e->dir);
  snprintf(key, sizeof key, "%s/key.pem", e->dir);
  ts_test_server_start(&e->ms, e->dir, tls ? cert : NULL, tls ? key : NULL);
  e->ms_port = e->ms.port;

  char up[128];
  snprintf(up, sizeof up, upstream_fmt ? upstream_fmt : "http://127.0.0.1:%d",
           upstream_port ? upstream_port : e->ms_port);
  snprintf(e->pub, sizeof e->pub, "ipc:///tmp/ts-gw-test-%d-%d.bus", (int)getpid(), seq);
  snprintf(e->rep, sizeof e->rep, "ipc:///tmp/ts-gw-test-%d-%d.rep", (int)getpid(), seq);
  const char *argv[40] = {"toolstream", "gateway", "--listen", "127.0.0.1:0", "--upstream", up,
                          "--pub", e->pub, "--replay", e->rep};
  int k = 10;
  for (int i = 0; extra && extra[i] && k < 38; i++) argv[k++] = extra[i];
  argv[k] = NULL;
  e->gw = spawn_bin(BINARY, argv, 0);
  e->gw_port = first_line_int(&e->gw, &e->gwr, "http://");
  ck_assert_int_gt(e->gw_port, 0);
  ck_assert_msg(!strncmp(e->gwr.out.p, "http://127.0.0.1:", 17), "first line: %s", e->gwr.out.p);
}

static void env_stop(env *e) {
  kill(e->gw.pid, SIGTERM);
  finish_child(&e->gw, &e->gwr);
  ts_test_server_stop(&e->ms);
  ck_assert_msg(e->gwr.status == 0, "gateway exit %d; stderr: %s", e->gwr.status, sb_str(&e->gwr.err));
  result_free(&e->gwr);
  ts_test_rm_rf(e->dir);
}

/* ---- a raw HTTP/1.1 client ------------------------------------------------------------ */

typedef struct {
  int status;
  sb raw;     /* everything read */
  sb head;    /* status line and headers */
  sb body;    /* the body, de-chunked */
  int complete; /* the body ended properly (terminating chunk or Content-Length) */
} http_resp;

static int connect_port(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ck_assert_int_ge(fd, 0);
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons((unsigned short)port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  return fd;
}

static void send_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return; /* the server may answer and close before reading everything */
    p += w;
    n -= (size_t)w;
  }
}

static int send_request(int port, const char *method, const char *path, const char *headers,
                        const char *body, size_t blen) {
  int fd = connect_port(port);
  sb req;
  memset(&req, 0, sizeof req);
  char line[1024];
  snprintf(line, sizeof line,
           "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n"
           "Content-Length: %zu\r\n",
           method, path, port, blen);
  sb_puts(&req, line);
  if (headers) sb_puts(&req, headers);
  sb_puts(&req, "\r\n");
  if (blen) sb_add(&req, body, blen);
  send_all(fd, req.p, req.len);
  sb_free(&req);
  return fd;
}

/* Parses r->raw into status, head and body (as far as it goes). */
static void parse_resp(http_resp *r) {
  r->status = 0;
  r->complete = 0;
  sb_free(&r->head);
  sb_free(&r->body);
  sb_puts(&r->body, "");
  if (!r->raw.p) return;
  const char *end = strstr(r->raw.p, "\r\n\r\n");
  if (!end) return;
  sb_add(&r->head, r->raw.p, (size_t)(end - r->raw.p) + 2);
  r->status = atoi(r->raw.p + 9);
  const char *p = end + 4, *lim = r->raw.p + r->raw.len;
  if (strcasestr(r->head.p, "\r\nTransfer-Encoding: chunked")) {
    for (;;) {
      char *nl = memchr(p, '\n', (size_t)(lim - p));
      if (!nl) return;
      unsigned long n = strtoul(p, NULL, 16);
      p = nl + 1;
      if (n == 0) {
        r->complete = 1;
        return;
      }
      if ((size_t)(lim - p) < n + 2) {
        sb_add(&r->body, p, (size_t)(lim - p) < n ? (size_t)(lim - p) : n);
        return;
      }
      sb_add(&r->body, p, n);
      p += n + 2;
    }
  }
  sb_add(&r->body, p, (size_t)(lim - p));
  const char *cl = strcasestr(r->head.p, "\r\nContent-Length:");
  if (cl) r->complete = (size_t)(lim - p) == strtoul(cl + 17, NULL, 10);
}

/* Reads one chunk of the response (up to ms); returns 0 at EOF. */
static int read_some(int fd, http_resp *r, int ms) {
  struct pollfd pfd = {fd, POLLIN, 0};
  if (poll(&pfd, 1, ms) <= 0) return 1;
  char buf[65536];
  ssize_t n = recv(fd, buf, sizeof buf, 0);
  if (n <= 0) return 0;
  sb_add(&r->raw, buf, (size_t)n); /* sb keeps a NUL after the bytes */
  return 1;
}

static void read_all(int fd, http_resp *r) {
  double end = now_ms() + 30000;
  while (now_ms() < end && read_some(fd, r, 100)) {
  }
  close(fd);
  parse_resp(r);
}

static http_resp do_request(int port, const char *method, const char *path, const char *headers,
                            const char *body, size_t blen) {
  http_resp r;
  memset(&r, 0, sizeof r);
  read_all(send_request(port, method, path, headers, body, blen), &r);
  return r;
}

static void resp_free(http_resp *r) {
  sb_free(&r->raw);
  sb_free(&r->head);
  sb_free(&r->body);
}

static const char *header_value(http_resp *r, const char *name, char *out, size_t cap) {
  char pat[128];
  snprintf(pat, sizeof pat, "\r\n%s:", name);
  const char *h = r->head.p ? strcasestr(r->head.p, pat) : NULL;
  if (!h) return NULL;
  h += strlen(pat);
  while (*h == ' ') h++;
  snprintf(out, cap, "%.*s", (int)strcspn(h, "\r"), h);
  return out;
}

/* ---- the bus ------------------------------------------------------------------------- */

static ts_sub *sub_open(env *e, const char *thread) {
  ts_sub *s = NULL;
  ck_assert_int_eq(ts_sub_open(e->pub, e->rep, thread, NULL, &s), 0);
  return s;
}

/* Collects the JSON of every event until `needle` shows up (or ms pass). */
static int sub_wait(ts_sub *s, sb *log, const char *needle, int ms) {
  double end = now_ms() + ms;
  while (now_ms() < end) {
    if (log->p && strstr(log->p, needle)) return 1;
    ts_sub_item it;
    int r = ts_sub_next(s, &it, 20);
    if (r == 1 && it.kind == TS_SUB_EVENT) {
      sb_add(log, it.json, it.json_len);
      sb_puts(log, "\n");
    }
  }
  return log->p && strstr(log->p, needle) != NULL;
}

/* ---- tests --------------------------------------------------------------------------- */

START_TEST(test_corpus_byte_for_byte) {
  const char *contents[NCORPUS * 3];
  size_t lens[NCORPUS * 3];
  for (size_t i = 0; i < NCORPUS; i++) {
    char rel[256];
    snprintf(rel, sizeof rel, "tests/corpus/%s", corpus[i]);
    contents[i] = ts_test_read_file(ts_test_path(rel), &lens[i]);
    ck_assert_ptr_nonnull(contents[i]);
    contents[NCORPUS + i] = contents[2 * NCORPUS + i] = contents[i];
    lens[NCORPUS + i] = lens[2 * NCORPUS + i] = lens[i];
  }
  env e;
  env_start(&e, contents, lens, (int)(NCORPUS * 3), 0, NULL);
  /* whole; one byte per write; 7 bytes every 1 ms */
  const char *queries[] = {"", "?chunk=1", "?slow=1&chunk=7"};
  for (size_t q = 0; q < 3; q++) {
    for (size_t i = 0; i < NCORPUS; i++) {
      const char *path = strstr(corpus[i], "anthropic") ? "/v1/messages"
                         : strstr(corpus[i], "responses") ? "/v1/responses"
                         : strstr(corpus[i], "gemini") ? "/v1beta/models/g:streamGenerateContent"
                                                       : "/v1/chat/completions";
      char full[256];
      snprintf(full, sizeof full, "%s%s%s", path, queries[q],
               strstr(corpus[i], "gemini") ? (queries[q][0] ? "&alt=sse" : "?alt=sse") : "");
      http_resp r = do_request(e.gw_port, "POST", full, "Content-Type: application/json\r\n",
                               "{}", 2);
      ck_assert_msg(r.status == 200, "%s%s: status %d", corpus[i], queries[q], r.status);
      ck_assert_msg(r.complete, "%s%s: incomplete", corpus[i], queries[q]);
      ck_assert_msg(r.body.len == lens[i] && !memcmp(r.body.p, contents[i], lens[i]),
                    "%s%s: body differs (%zu vs %zu bytes)", corpus[i], queries[q], r.body.len,
                    lens[i]);
      char v[256];
      ck_assert_str_eq(header_value(&r, "Content-Type", v, sizeof v), "text/event-stream");
      ck_assert_str_eq(header_value(&r, "Cache-Control", v, sizeof v), "no-cache");
      ck_assert_ptr_nonnull(header_value(&r, "X-Toolstream-Thread", v, sizeof v));
      ck_assert_msg(!strncmp(v, "th_", 3), "made-up thread id %s", v);
      resp_free(&r);
    }
  }
  env_stop(&e);
  for (size_t i = 0; i < NCORPUS; i++) free((void *)contents[i]);
}
END_TEST


static const char req_body[] =
    "{\"model\":\"m\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"write_file\",\"parameters\":"
    "{\"type\":\"object\",\"x-progress-argument\":\"description\",\"properties\":{"
    "\"description\":{\"type\":\"string\"},\"content\":{\"type\":\"string\","
    "\"x-progress-argument\":\"nested\"}},\"required\":[\"description\"]}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"other\",\"parameters\":{\"type\":\"object\","
    "\"x-progress-argument\":\"a\"}}}],\"note\":\"x-progress-argument stays in text\"}";

static const char req_body_stripped[] =
    "{\"model\":\"m\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"write_file\",\"parameters\":"
    "{\"type\":\"object\",\"properties\":{"
    "\"description\":{\"type\":\"string\"},\"content\":{\"type\":\"string\""
    "}},\"required\":[\"description\"]}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"other\",\"parameters\":{\"type\":\"object\""
    "}}}],\"note\":\"x-progress-argument stays in text\"}";

START_TEST(test_started_before_last_argument_byte) {
  sb s;
  memset(&s, 0, sizeof s);
  ts_test_chat_args_chunk(&s, 1, "{\\\"descrip");
  ts_test_chat_args_chunk(&s, 0, "tion\\\": \\\"writing index.html\\\", \\\"content\\\": \\\"");
  for (int i = 0; i < 30; i++) ts_test_chat_args_chunk(&s, 0, "<p>lorem ipsum dolor sit amet</p>");
  ts_test_chat_args_chunk(&s, 0, "ZZEND\\\"}");
  sb_puts(&s, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
              "data: [DONE]\n\n");
  const char *contents[] = {s.p};
  size_t lens[] = {s.len};
  env e;
  env_start(&e, contents, lens, 1, 0, NULL);
  ts_sub *sub = sub_open(&e, "th_gwtest1");
  sleep_ms(300); /* let the subscriber's dial complete */
  int fd = send_request(e.gw_port, "POST", "/v1/chat/completions?slow=15&chunk=32",
                        "Content-Type: application/json\r\nX-Toolstream-Thread: th_gwtest1\r\n"
                        "Keep-Alive: timeout=5\r\nTE: trailers\r\n",
                        req_body, sizeof req_body - 1);
  http_resp r;
  memset(&r, 0, sizeof r);
  sb log;
  memset(&log, 0, sizeof log);
  double t_started = 0, t_last = 0, end = now_ms() + 30000;
  int open_ = 1;
  while (open_ && now_ms() < end) {
    open_ = read_some(fd, &r, 5);
    ts_sub_item it;
    while (ts_sub_next(sub, &it, 0) == 1) {
      if (it.kind != TS_SUB_EVENT) continue;
      sb_add(&log, it.json, it.json_len);
      sb_puts(&log, "\n");
      if (!t_started && strstr(log.p, "\"tool_call_started\"")) t_started = now_ms();
    }
    if (!t_last) {
      parse_resp(&r);
      if (r.body.p && strstr(r.body.p, "ZZEND")) t_last = now_ms();
    }
  }
  close(fd);
  parse_resp(&r);
  sub_wait(sub, &log, "\"tool_call_ready\"", 5000);
  ck_assert_int_eq(r.status, 200);
  ck_assert(r.complete);
  ck_assert(r.body.len == s.len && !memcmp(r.body.p, s.p, s.len));
  char v[128];
  ck_assert_str_eq(header_value(&r, "X-Toolstream-Thread", v, sizeof v), "th_gwtest1");
  ck_assert_msg(t_started > 0, "no tool_call_started on the bus: %s", sb_str(&log));
  ck_assert_msg(t_last > 0, "the client never read the last argument byte");
  ck_assert_msg(t_started < t_last, "started at %.1f ms, last argument byte at %.1f ms",
                t_started, t_last);
  ck_assert_msg(strstr(log.p, "\"progress\":\"writing index.html\""), "events: %s", log.p);
  ck_assert_msg(strstr(log.p, "\"thread\":\"th_gwtest1\""), "events: %s", log.p);
  /* what the upstream received: x-progress-argument gone, the rest untouched; the
   * hop-by-hop headers gone */
  char path[512];
  snprintf(path, sizeof path, "%s/requests/1.json", e.dir);
  size_t n;
  char *got = ts_test_read_file(path, &n);
  ck_assert_ptr_nonnull(got);
  ck_assert_str_eq(got, req_body_stripped);
  free(got);
  snprintf(path, sizeof path, "%s/requests/1.txt", e.dir);
  got = ts_test_read_file(path, &n);
  ck_assert_ptr_nonnull(got);
  ck_assert_msg(strstr(got, "POST /v1/chat/completions?slow=15&chunk=32\n"), "%s", got);
  ck_assert_msg(strstr(got, "X-Toolstream-Thread: th_gwtest1\n"), "%s", got);
  ck_assert_msg(strstr(got, "Content-Type: application/json\n"), "%s", got);
  ck_assert_msg(!strcasestr(got, "keep-alive") && !strcasestr(got, "\nTE:"), "%s", got);
  char cl[64];
  snprintf(cl, sizeof cl, "Content-Length: %zu\n", sizeof req_body_stripped - 1);
  ck_assert_msg(strstr(got, cl), "%s", got);
  free(got);
  ts_sub_close(sub);
  sb_free(&log);
  resp_free(&r);
  sb_free(&s);
  env_stop(&e);
}
END_TEST

START_TEST(test_upstream_error_status_passes) {
  const char *contents[] = {"data: [DONE]\n\n"};
  size_t lens[] = {14};
  env e;
  env_start(&e, contents, lens, 1, 0, NULL);
  ts_sub *sub = sub_open(&e, "th_err500");
  http_resp r = do_request(e.gw_port, "POST", "/v1/chat/completions?status=503&retry-after=7",
                           "X-Toolstream-Thread: th_err500\r\n", "{}", 2);
  ck_assert_int_eq(r.status, 503);
  char v[256];
  ck_assert_str_eq(header_value(&r, "Retry-After", v, sizeof v), "7");
  ck_assert_str_eq(r.body.p, "{\"error\":{\"message\":\"model_server: status 503\",\"type\":\"test\"}}");
  sb log;
  memset(&log, 0, sizeof log);
  ck_assert_msg(sub_wait(sub, &log, "\"stream_error\"", 5000), "events: %s", sb_str(&log));
  ck_assert_msg(strstr(log.p, "gw_status") || strstr(log.p, "-902"), "%s", log.p);
  sb_free(&log);
  resp_free(&r);
  ts_sub_close(sub);
  env_stop(&e);
}
END_TEST

START_TEST(test_upstream_unreachable) {
  /* a port nobody listens on: bind one, then close it */
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t sl = sizeof sa;
  ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  getsockname(fd, (struct sockaddr *)&sa, &sl);
  int dead = ntohs(sa.sin_port);
  close(fd);
  const char *contents[] = {"x"};
  size_t lens[] = {1};
  env e;
  env_start(&e, contents, lens, 1, dead, NULL);
  ts_sub *sub = sub_open(&e, "th_dead");
  http_resp r = do_request(e.gw_port, "POST", "/v1/messages", "X-Toolstream-Thread: th_dead\r\n",
                           "{}", 2);
  ck_assert_int_eq(r.status, 502);
  char v[128];
  ck_assert_str_eq(header_value(&r, "X-Toolstream-Thread", v, sizeof v), "th_dead");
  ck_assert_msg(strstr(r.body.p, "toolstream gateway"), "%s", r.body.p);
  sb log;
  memset(&log, 0, sizeof log);
  ck_assert_msg(sub_wait(sub, &log, "\"stream_error\"", 5000), "events: %s", sb_str(&log));
  sb_free(&log);
  resp_free(&r);
  ts_sub_close(sub);
  env_stop(&e);
}
END_TEST

START_TEST(test_upstream_breaks_midstream) {
  size_t len;
  char *data = ts_test_read_file(ts_test_path("tests/corpus/anthropic-text-then-tool.sse"), &len);
  const char *contents[] = {data};
  size_t lens[] = {len};
  env e;
  env_start(&e, contents, lens, 1, 0, NULL);
  ts_sub *sub = sub_open(&e, "th_cut");
  http_resp r = do_request(e.gw_port, "POST", "/v1/messages?drop-after=300&slow=5&chunk=50",
                           "X-Toolstream-Thread: th_cut\r\n", "{}", 2);
  ck_assert_int_eq(r.status, 200);
  ck_assert_msg(!r.complete, "a cut upstream stream must reach the client cut");
  ck_assert_uint_eq(r.body.len, 300);
  ck_assert(!memcmp(r.body.p, data, 300));
  sb log;
  memset(&log, 0, sizeof log);
  ck_assert_msg(sub_wait(sub, &log, "\"stream_error\"", 5000), "events: %s", sb_str(&log));
  sb_free(&log);
  resp_free(&r);
  ts_sub_close(sub);
  env_stop(&e);
  free(data);
}
END_TEST

/* Established TCP connections to or from `port` (IPv4). */
static int established(int port) {
  FILE *f = fopen("/proc/net/tcp", "r");
  if (!f) return -1;
  char line[512];
  int n = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned lp, rp, st;
    if (sscanf(line, " %*d: %*x:%x %*x:%x %x", &lp, &rp, &st) == 3 && st == 1 &&
        ((int)lp == port || (int)rp == port))
      n++;
  }
  fclose(f);
  return n;
}

START_TEST(test_client_disconnect_cancels_upstream) {
  size_t len;
  char *data = ts_test_read_file(ts_test_path("tests/corpus/openai-chat-two-parallel-calls.sse"), &len);
  const char *contents[] = {data};
  size_t lens[] = {len};
  env e;
  env_start(&e, contents, lens, 1, 0, NULL);
  int fd = send_request(e.gw_port, "POST", "/v1/chat/completions?slow=200&chunk=8", NULL, "{}", 2);
  http_resp r;
  memset(&r, 0, sizeof r);
  double end = now_ms() + 5000;
  while (now_ms() < end && r.raw.len < 200) read_some(fd, &r, 50);
  ck_assert_int_eq(established(e.ms_port), 2); /* gateway <-> model server, both ends */
  close(fd);
  end = now_ms() + 5000;
  while (now_ms() < end && established(e.ms_port) != 0) sleep_ms(20);
  ck_assert_int_eq(established(e.ms_port), 0);
  http_resp m = do_request(e.gw_port, "GET", "/metrics", NULL, NULL, 0);
  ck_assert_msg(strstr(m.body.p, "toolstream_gateway_client_aborts_total 1\n"), "%s", m.body.p);
  ck_assert_msg(strstr(m.body.p, "toolstream_gateway_streams_open 0\n"), "%s", m.body.p);
  resp_free(&m);
  resp_free(&r);
  env_stop(&e);
  free(data);
}
END_TEST

START_TEST(test_limits) {
  const char *contents[] = {"data: [DONE]\n\n", "data: [DONE]\n\n"};
  size_t lens[] = {14, 14};
  const char *extra[] = {"--max-header-bytes", "4k", "--max-body-bytes", "8k", NULL};
  env e;
  env_start(&e, contents, lens, 2, 0, extra);
  char *big = malloc(20000);
  memset(big, 'a', 19999);
  big[19999] = '\0';
  sb h;
  memset(&h, 0, sizeof h);
  sb_puts(&h, "X-Big: ");
  sb_add(&h, big, 6000);
  sb_puts(&h, "\r\n");
  http_resp r = do_request(e.gw_port, "POST", "/v1/chat/completions", h.p, "{}", 2);
  ck_assert_int_eq(r.status, 431);
  resp_free(&r);
  r = do_request(e.gw_port, "POST", "/v1/chat/completions", NULL, big, 10000);
  ck_assert_int_eq(r.status, 413);
  resp_free(&r);
  /* within the limits: through */
  r = do_request(e.gw_port, "POST", "/v1/chat/completions", NULL, big, 8000);
  ck_assert_int_eq(r.status, 200);
  ck_assert_str_eq(r.body.p, "data: [DONE]\n\n");
  resp_free(&r);
  sb_free(&h);
  free(big);
  env_stop(&e);
}
END_TEST

START_TEST(test_healthz_and_metrics) {
  const char *contents[] = {"data: [DONE]\n\n"};
  size_t lens[] = {14};
  env e;
  env_start(&e, contents, lens, 1, 0, NULL);
  http_resp r = do_request(e.gw_port, "GET", "/healthz", NULL, NULL, 0);
  ck_assert_int_eq(r.status, 200);
  ck_assert_str_eq(r.body.p, "ok\n");
  resp_free(&r);
  r = do_request(e.gw_port, "POST", "/v1/chat/completions", NULL, "{}", 2);
  ck_assert_int_eq(r.status, 200);
  resp_free(&r);
  r = do_request(e.gw_port, "GET", "/metrics", NULL, NULL, 0);
  ck_assert_int_eq(r.status, 200);
  const char *want[] = {"# TYPE toolstream_gateway_streams_open gauge\n",
                        "toolstream_gateway_streams_total 1\n",
                        "toolstream_gateway_bytes_total{direction=\"client\"} 14\n",
                        "toolstream_gateway_upstream_latency_seconds_bucket{le=\"+Inf\"} 1\n",
                        "toolstream_gateway_upstream_latency_seconds_count 1\n",
                        "toolstream_gateway_events_published_total ",
                        "toolstream_gateway_tap_errors_total 0\n"};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    ck_assert_msg(strstr(r.body.p, want[i]), "missing %s in\n%s", want[i], r.body.p);
  resp_free(&r);
  env_stop(&e);
}
END_TEST



START_TEST(test_thread_continues_across_requests) {
  size_t len;
  char *data = ts_test_read_file(ts_test_path("tests/corpus/openai-chat-two-parallel-calls.sse"), &len);
  const char *contents[] = {data, data};
  size_t lens[] = {len, len};
  env e;
  env_start(&e, contents, lens, 2, 0, NULL);
  ts_sub *sub = sub_open(&e, "th_conv");
  for (int i = 0; i < 2; i++) {
    http_resp r = do_request(e.gw_port, "POST", "/v1/chat/completions",
                             "X-Toolstream-Thread: th_conv\r\n", "{}", 2);
    ck_assert_int_eq(r.status, 200);
    resp_free(&r);
  }
  sb log;
  memset(&log, 0, sizeof log);
  double end = now_ms() + 5000;
  int turns = 0;
  while (now_ms() < end && turns < 2) {
    ts_sub_item it;
    if (ts_sub_next(sub, &it, 50) == 1 && it.kind == TS_SUB_EVENT) {
      sb_add(&log, it.json, it.json_len);
      sb_puts(&log, "\n");
    }
    turns = 0;
    for (const char *p = log.p; p && (p = strstr(p, "\"turn_finished\"")); p++) turns++;
  }
  ck_assert_msg(turns == 2, "one thread, two turns, seq going on: %s", sb_str(&log));
  /* seq 1 once: the second turn went on numbering */
  const char *one = strstr(log.p, "\"seq\":1,");
  ck_assert_msg(one && !strstr(one + 1, "\"seq\":1,"), "seq restarted: %s", log.p);
  sb_free(&log);
  ts_sub_close(sub);
  env_stop(&e);
  free(data);
}
END_TEST

/* ---- HTTPS upstream ------------------------------------------------------------------ */


START_TEST(test_https_upstream_verified) {
  size_t len;
  char *data = ts_test_read_file(ts_test_path("tests/corpus/anthropic-text-then-tool.sse"), &len);
  const char *contents[] = {data, data};
  size_t lens[] = {len, len};
  env e;
  next_dir(&e);
  ts_test_make_cert(e.dir);
  char ca[300];
  snprintf(ca, sizeof ca, "%s/cert.pem", e.dir);
  const char *extra[] = {"--ca-file", ca, NULL};
  env_start_ex(&e, contents, lens, 2, 0, extra, "https://localhost:%d", 1);
  http_resp r = do_request(e.gw_port, "POST", "/v1/messages?slow=2&chunk=64", NULL, "{}", 2);
  ck_assert_int_eq(r.status, 200);
  ck_assert(r.complete);
  ck_assert(r.body.len == len && !memcmp(r.body.p, data, len));
  resp_free(&r);
  env_stop(&e);

  /* the system store does not know the self-signed certificate: 502, never insecure */
  env e2;
  next_dir(&e2);
  ts_test_make_cert(e2.dir);
  env_start_ex(&e2, contents, lens, 2, 0, NULL, "https://localhost:%d", 1);
  ts_sub *sub = sub_open(&e2, "th_tls");
  r = do_request(e2.gw_port, "POST", "/v1/messages", "X-Toolstream-Thread: th_tls\r\n", "{}", 2);
  ck_assert_int_eq(r.status, 502);
  sb log;
  memset(&log, 0, sizeof log);
  ck_assert_msg(sub_wait(sub, &log, "\"stream_error\"", 5000), "events: %s", sb_str(&log));
  ck_assert_msg(strstr(log.p, "-903") || strstr(log.p, "gw_tls"), "%s", log.p);
  sb_free(&log);
  ts_sub_close(sub);
  resp_free(&r);
  env_stop(&e2);
  free(data);
}
END_TEST

/* ---- timeouts ------------------------------------------------------------------------ */

START_TEST(test_headers_timeout) {
  const char *contents[] = {"data: [DONE]\n\n"};
  size_t lens[] = {14};
  const char *extra[] = {"--headers-timeout", "300", NULL};
  env e;
  env_start(&e, contents, lens, 1, 0, extra);
  ts_sub *sub = sub_open(&e, "th_stall");
  double t0 = now_ms();
  http_resp r = do_request(e.gw_port, "POST", "/v1/chat/completions?stall=3000",
                           "X-Toolstream-Thread: th_stall\r\n", "{}", 2);
  double took = now_ms() - t0;
  ck_assert_int_eq(r.status, 504);
  ck_assert_msg(took < 2000, "504 after %.0f ms", took);
  sb log;
  memset(&log, 0, sizeof log);
  ck_assert_msg(sub_wait(sub, &log, "\"stream_error\"", 5000), "events: %s", sb_str(&log));
  ck_assert_msg(strstr(log.p, "-901") || strstr(log.p, "gw_timeout"), "%s", log.p);
  sb_free(&log);
  ts_sub_close(sub);
  resp_free(&r);
  env_stop(&e);
}
END_TEST

START_TEST(test_idle_timeout_cuts_stream) {
  size_t len;
  char *data = ts_test_read_file(ts_test_path("tests/corpus/openai-chat-two-parallel-calls.sse"), &len);
  const char *contents[] = {data};
  size_t lens[] = {len};
  const char *extra[] = {"--idle-timeout", "1000", NULL};
  env e;
  env_start(&e, contents, lens, 1, 0, extra);
  double t0 = now_ms();
  http_resp r = do_request(e.gw_port, "POST", "/v1/chat/completions?slow=3000&chunk=100", NULL,
                           "{}", 2);
  double took = now_ms() - t0;
  ck_assert_int_eq(r.status, 200);
  ck_assert_msg(!r.complete, "an idle upstream must end in a cut stream");
  ck_assert_uint_eq(r.body.len, 100);
  ck_assert_msg(took > 900 && took < 2900, "cut after %.0f ms", took);
  resp_free(&r);
  env_stop(&e);
  free(data);
}
END_TEST

/* ---- backpressure ---------------------------------------------------------------------- */

static long rss_kb(pid_t pid) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  long kb = -1;
  if (!f) return -1;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, "VmRSS:", 6)) kb = atol(line + 6);
  fclose(f);
  return kb;
}

START_TEST(test_slow_client_backpressure) {
  /* 24 MiB of SSE sent by the upstream as fast as it can */
  sb big;
  memset(&big, 0, sizeof big);
  char ev[256];
  for (int i = 0; big.len < (24u << 20); i++) {
    snprintf(ev, sizeof ev,
             "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"chunk %08d of a long "
             "reply, padded to be a little longer than one line\"}}]}\n\n",
             i);
    sb_puts(&big, ev);
  }
  sb_puts(&big, "data: [DONE]\n\n");
  const char *contents[] = {big.p};
  size_t lens[] = {big.len};
  env e;
  env_start(&e, contents, lens, 1, 0, NULL);
  int fd = send_request(e.gw_port, "POST", "/v1/chat/completions", NULL, "{}", 2);
  /* read the head and a little, then stop reading */
  http_resp r;
  memset(&r, 0, sizeof r);
  double end = now_ms() + 5000;
  while (now_ms() < end && r.raw.len < 1000) read_some(fd, &r, 50);
  sleep_ms(500);
  long before = rss_kb(e.gw.pid);
  sleep_ms(1500);
  long after = rss_kb(e.gw.pid);
  ck_assert_msg(after - before < 4096, "the gateway grew from %ld to %ld KiB with a stalled client",
                before, after);
  /* now read everything: intact */
  read_all(fd, &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert(r.complete);
  ck_assert_msg(r.body.len == big.len && !memcmp(r.body.p, big.p, big.len), "body differs");
  resp_free(&r);
  sb_free(&big);
  env_stop(&e);
}
END_TEST

START_TEST(test_usage) {
  const char *argv1[] = {"toolstream", "gateway", NULL};
  result r = run_bin(BINARY, argv1, NULL, 0);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(sb_str(&r.err), "--upstream"), "%s", sb_str(&r.err));
  result_free(&r);
  const char *argv2[] = {"toolstream", "gateway", "--upstream", "ftp://x", NULL};
  r = run_bin(BINARY, argv2, NULL, 0);
  ck_assert_int_eq(r.status, 2);
  result_free(&r);
  const char *argv3[] = {"toolstream", "gateway", "--help", NULL};
  r = run_bin(BINARY, argv3, NULL, 0);
  ck_assert_int_eq(r.status, 0);
  ck_assert(strstr(sb_str(&r.out), "--progress-arg"));
  result_free(&r);
}
END_TEST

int main(void) {
  Suite *s = suite_create("gateway_cli");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_corpus_byte_for_byte);
  tcase_add_test(tc, test_started_before_last_argument_byte);
  tcase_add_test(tc, test_upstream_error_status_passes);
  tcase_add_test(tc, test_upstream_unreachable);
  tcase_add_test(tc, test_upstream_breaks_midstream);
  tcase_add_test(tc, test_client_disconnect_cancels_upstream);
  tcase_add_test(tc, test_limits);
  tcase_add_test(tc, test_healthz_and_metrics);
  tcase_add_test(tc, test_thread_continues_across_requests);
  tcase_add_test(tc, test_https_upstream_verified);
  tcase_add_test(tc, test_headers_timeout);
  tcase_add_test(tc, test_idle_timeout_cuts_stream);
  tcase_add_test(tc, test_slow_client_backpressure);
  tcase_add_test(tc, test_usage);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
