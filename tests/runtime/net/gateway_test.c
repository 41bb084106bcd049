/*
 * gateway_test.c: the gateway module (runtime/net/gateway.h) driven in process, on the
 * test's own event_base; tests/cli/gateway_cli_test.c drives the command end to end.
 *
 *   - configuration: rows {__LINE__, label, prefix, url, want code, want reason} for
 *     the upstream rules (a prefix starts with '/', http(s)://host[:port][/path], no
 *     user info, 1 to 16 upstreams), an unreadable CA file, a port already taken;
 *   - the listener binds loopback by default (read back from /proc/net/tcp, not just
 *     "a connection to 127.0.0.1 works");
 *   - /healthz, /metrics and the statistics they count;
 *   - a proxied request to the local model server: the "x-progress-argument" members
 *     are gone from the body the upstream received and every other byte is as sent, a
 *     valid X-Toolstream-Thread comes back as given, and the stream arrives whole; the
 *     same for Bedrock's toolConfig.tools[].toolSpec.inputSchema.json and Gemini's
 *     functionDeclarations.
 * The client is a plain socket; the loop runs in slices until the reply is complete,
 * with a 30 s backstop that only a broken gateway reaches.
 */
#define _GNU_SOURCE /* syscall */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <event2/event.h>

#include "base/error.h"
#include "events/bus_pub.h"
#include "net/gateway.h"
#include "support/loopback.h"
#include "support/model_server.h"
#include "support/proc.h"
#include "support/tempdir.h"
#include "support/test_support.h"

typedef struct {
  int line;
  const char *label;
  const char *prefix, *url;
  int rc;
  const char *why; /* substring; NULL: success */
} row;

static const row rows[] = {
    {__LINE__, "every path, plain http", NULL, "http://127.0.0.1:9", TS_E_OK, NULL},
    {__LINE__, "an empty prefix is every path", "", "http://localhost", TS_E_OK, NULL},
    {__LINE__, "a prefix and a base path", "/v1/messages", "http://h.example:8080/base/", TS_E_OK,
     NULL},
    {__LINE__, "an IPv6 literal", "/", "http://[::1]:8080", TS_E_OK, NULL},
    {__LINE__, "https (the system's CA store)", NULL, "https://api.example.com", TS_E_OK, NULL},
    {__LINE__, "upper-case scheme", NULL, "HTTP://h", TS_E_OK, NULL},
    {__LINE__, "a prefix without '/'", "v1", "http://h", TS_E_INVAL,
     "upstream prefix 'v1' must start with '/'"},
    {__LINE__, "another scheme", NULL, "ftp://h/x", TS_E_INVAL,
     "upstream URL 'ftp://h/x' is not http(s)://host[:port][/path]"},
    {__LINE__, "user info (a secret in a URL)", NULL, "http://user:pw@h", TS_E_INVAL,
     "is not http(s)://"},
    {__LINE__, "no scheme", NULL, "127.0.0.1:8080", TS_E_INVAL, "is not http(s)://"},
    {__LINE__, "no host", NULL, "http://", TS_E_INVAL, "is not http(s)://"},
    {__LINE__, "no URL", NULL, NULL, TS_E_INVAL, "upstream URL '(null)'"},
};

static struct event_base *base;

static void setup(void) {
  base = event_base_new();
  ck_assert_ptr_nonnull(base);
}

static void teardown(void) {
  event_base_free(base);
  base = NULL;
}

START_TEST(test_config_rows) {
  const row *r = &rows[_i];
  ts_gw_upstream up = {r->prefix, r->url};
  ts_gw_config cfg = {.upstreams = &up, .n_upstreams = 1};
  ts_gw *gw = (ts_gw *)&cfg; /* must stay untouched on failure */
  char why[512] = "";
  int rc = ts_gw_new(base, &cfg, &gw, why, sizeof why);
  ck_assert_msg(rc == r->rc, "line %d (%s): rc %d, want %d (%s)", r->line, r->label, rc, r->rc,
                why);
  if (rc == TS_E_OK) {
    ck_assert_int_gt(ts_gw_port(gw), 0);
    ts_gw_free(gw);
  } else {
    ck_assert_msg(strstr(why, r->why), "line %d (%s): reason '%s' lacks '%s'", r->line, r->label,
                  why, r->why);
    ck_assert_ptr_eq(gw, (ts_gw *)&cfg);
  }
}
END_TEST

START_TEST(test_config_limits) {
  ts_gw_upstream ups[TS_GW_MAX_UPSTREAMS + 1];
  for (int i = 0; i <= TS_GW_MAX_UPSTREAMS; i++) ups[i] = (ts_gw_upstream){"/", "http://h"};
  ts_gw *gw = NULL;
  char why[256];
  ts_gw_config cfg = {.upstreams = ups, .n_upstreams = 0};
  ck_assert_int_eq(ts_gw_new(base, &cfg, &gw, why, sizeof why), TS_E_INVAL);
  ck_assert_str_eq(why, "the gateway needs 1 to 16 upstreams");
  cfg.n_upstreams = TS_GW_MAX_UPSTREAMS + 1;
  ck_assert_int_eq(ts_gw_new(base, &cfg, &gw, why, sizeof why), TS_E_INVAL);
  cfg.n_upstreams = TS_GW_MAX_UPSTREAMS;
  ck_assert_int_eq(ts_gw_new(base, &cfg, &gw, why, sizeof why), TS_E_OK);
  ts_gw_free(gw);
  ck_assert_int_eq(ts_gw_new(NULL, &cfg, &gw, why, sizeof why), TS_E_INVAL);
  ck_assert_int_eq(ts_gw_new(base, NULL, &gw, why, sizeof why), TS_E_INVAL);
  ts_gw_free(NULL);

  /* an unreadable CA file */
  ts_gw_upstream one = {NULL, "https://h"};
  ts_gw_config tls = {.upstreams = &one, .n_upstreams = 1, .ca_file = "/nonexistent/ca.pem"};
  ck_assert_int_eq(ts_gw_new(base, &tls, &gw, why, sizeof why), TS_E_GW_TLS);
  ck_assert_msg(strstr(why, "cannot load the CA file /nonexistent/ca.pem"), "%s", why);

  /* a port already taken */
  ts_gw_config a = {.upstreams = &one, .n_upstreams = 1};
  one.url = "http://h";
  ck_assert_int_eq(ts_gw_new(base, &a, &gw, why, sizeof why), TS_E_OK);
  ts_gw_config b = {.upstreams = &one, .n_upstreams = 1, .listen_port = ts_gw_port(gw)};
  ts_gw *gw2 = NULL;
  ck_assert_int_eq(ts_gw_new(base, &b, &gw2, why, sizeof why), TS_E_IO);
  ck_assert_msg(strstr(why, "cannot listen"), "%s", why);
  ck_assert_ptr_null(gw2);
  ts_gw_free(gw);
}
END_TEST

/* The listening socket's local address in /proc/net/tcp (hex, network order as the
 * kernel prints it), or "" when the port is not listening there. */
static void listen_addr(int port, char *out, size_t cap) {
  out[0] = '\0';
  FILE *f = fopen("/proc/net/tcp", "r");
  ck_assert_ptr_nonnull(f);
  char line[512];
  while (fgets(line, sizeof line, f)) {
    char local[64], remote[64], st[8];
    if (sscanf(line, " %*d: %63s %63s %7s", local, remote, st) != 3) continue;
    char *colon = strchr(local, ':');
    if (!colon || strtol(colon + 1, NULL, 16) != port || strcmp(st, "0A")) continue;
    *colon = '\0';
    snprintf(out, cap, "%s", local);
  }
  fclose(f);
}

START_TEST(test_listens_on_loopback) {
  ts_gw_upstream up = {NULL, "http://127.0.0.1:9"};
  ts_gw_config cfg = {.upstreams = &up, .n_upstreams = 1};
  ts_gw *gw;
  char why[256], addr[64];
  ck_assert_int_eq(ts_gw_new(base, &cfg, &gw, why, sizeof why), TS_E_OK);
  listen_addr(ts_gw_port(gw), addr, sizeof addr);
  ck_assert_str_eq(addr, "0100007F"); /* 127.0.0.1, not 0.0.0.0 */
  ts_gw_free(gw);
}
END_TEST

/* A client's connection, as the gateway holds it, has Nagle off: a chunk is never held
 * back while the one before it waits for the client's ACK. Found among this process's
 * descriptors by its two ends. */
START_TEST(test_client_sockets_nodelay) {
  ts_gw_upstream up = {NULL, "http://127.0.0.1:9"};
  ts_gw_config cfg = {.upstreams = &up, .n_upstreams = 1};
  ts_gw *gw;
  char why[256];
  ck_assert_int_eq(ts_gw_new(base, &cfg, &gw, why, sizeof why), TS_E_OK);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)ts_gw_port(gw))};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
  struct sockaddr_in mine;
  socklen_t ml = sizeof mine;
  getsockname(fd, (struct sockaddr *)&mine, &ml);
  int found = -1;
  double end = now_ms() + 30000;
  while (found < 0 && now_ms() < end) {
    event_base_loop(base, EVLOOP_NONBLOCK); /* the gateway accepts */
    for (int k = 3; k < 4096 && found < 0; k++) {
      struct sockaddr_in l, p;
      socklen_t ll = sizeof l, pl = sizeof p;
      if (k == fd || getsockname(k, (struct sockaddr *)&l, &ll) || getpeername(k, (struct sockaddr *)&p, &pl))
        continue;
      if (l.sin_family == AF_INET && l.sin_port == a.sin_port && p.sin_port == mine.sin_port) found = k;
    }
  }
  ck_assert_msg(found >= 0, "the gateway's end of the connection was not found");
  int on = 0;
  socklen_t ol = sizeof on;
  ck_assert_int_eq(getsockopt(found, IPPROTO_TCP, TCP_NODELAY, &on, &ol), 0);
  ck_assert_msg(on, "Nagle is on for the gateway's client socket");
  close(fd);
  event_base_loop(base, EVLOOP_NONBLOCK);
  ts_gw_free(gw);
}
END_TEST

/* ---- a client on the same loop ---------------------------------------------------- */

/* Sends `req` to the gateway and runs the loop until the connection closes (the request
 * says Connection: close); returns the whole response. */
static void exchange(int port, const char *req, size_t len, sb *resp) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ck_assert_int_ge(fd, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  fcntl(fd, F_SETFL, O_NONBLOCK);
  int c = connect(fd, (struct sockaddr *)&a, sizeof a);
  ck_assert_msg(c == 0 || errno == EINPROGRESS, "connect: %s", strerror(errno));
  size_t sent = 0;
  double end = now_ms() + 30000;
  sb_puts(resp, "");
  for (;;) {
    ck_assert_msg(now_ms() < end, "no complete reply within 30 s; so far:\n%s", sb_str(resp));
    event_base_loop(base, EVLOOP_NONBLOCK);
    struct pollfd pf = {fd, (short)(POLLIN | (sent < len ? POLLOUT : 0)), 0};
    if (poll(&pf, 1, 5) <= 0) continue;
    if ((pf.revents & POLLOUT) && sent < len) {
      ssize_t w = write(fd, req + sent, len - sent);
      if (w > 0) sent += (size_t)w;
    }
    if (pf.revents & (POLLIN | POLLHUP)) {
      char buf[4096];
      ssize_t n = read(fd, buf, sizeof buf);
      if (n > 0) sb_add(resp, buf, (size_t)n);
      else if (n == 0 || errno != EAGAIN) break;
    }
  }
  close(fd);
  event_base_loop(base, EVLOOP_NONBLOCK); /* let the gateway see the close */
}

START_TEST(test_builtin_endpoints) {
  ts_gw_upstream up = {NULL, "http://127.0.0.1:9"};
  ts_gw_config cfg = {.upstreams = &up, .n_upstreams = 1};
  ts_gw *gw;
  char why[256];
  ck_assert_int_eq(ts_gw_new(base, &cfg, &gw, why, sizeof why), TS_E_OK);
  static const char hz[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  sb r = {0};
  exchange(ts_gw_port(gw), hz, sizeof hz - 1, &r);
  ck_assert_msg(!strncmp(sb_str(&r), "HTTP/1.1 200", 12), "%s", sb_str(&r));
  ck_assert_msg(strstr(sb_str(&r), "\r\n\r\nok\n"), "%s", sb_str(&r));
  sb_free(&r);
  static const char m[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  exchange(ts_gw_port(gw), m, sizeof m - 1, &r);
  ck_assert_msg(!strncmp(sb_str(&r), "HTTP/1.1 200", 12), "%s", sb_str(&r));
  /* the healthz request and this one */
  ck_assert_msg(strstr(sb_str(&r), "\ntoolstream_gateway_requests_total 2\n"), "%s", sb_str(&r));
  ck_assert_msg(strstr(sb_str(&r), "\ntoolstream_gateway_streams_total 0\n"), "%s", sb_str(&r));
  sb_free(&r);
  ts_gw_stats st;
  ts_gw_get_stats(gw, &st);
  ck_assert_uint_eq(st.requests_total, 2);
  ck_assert_uint_eq(st.streams_total, 0);
  ts_gw_free(gw);
}
END_TEST

/* Several loops (cfg.workers): the limits; then four loops answer sixteen connections (the
 * kernel spreads them; the test runs the first loop, the gateway's threads the others),
 * the counters summed over the loops, and freeing stops and joins every thread (the
 * sanitizer build finds a leak or a loop still running). */
START_TEST(test_workers) {
  ts_gw_upstream up = {NULL, "http://127.0.0.1:9"};
  ts_gw *gw = NULL;
  char why[256] = "";
  ts_gw_config over = {.upstreams = &up, .n_upstreams = 1, .workers = TS_GW_MAX_WORKERS + 1};
  ck_assert_int_eq(ts_gw_new(base, &over, &gw, why, sizeof why), TS_E_INVAL);
  ck_assert_msg(strstr(why, "at most 64 workers"), "%s", why);
  ts_gw_config with_serve = {.upstreams = &up, .n_upstreams = 1, .workers = 2,
                             .serve = (struct ts_serve *)&up}; /* refused before any use */
  ck_assert_int_eq(ts_gw_new(base, &with_serve, &gw, why, sizeof why), TS_E_INVAL);
  ck_assert_msg(strstr(why, "one worker"), "%s", why);
  ck_assert_ptr_null(gw);
  ts_gw_config cfg = {.upstreams = &up, .n_upstreams = 1, .workers = 4};
  ck_assert_int_eq(ts_gw_new(base, &cfg, &gw, why, sizeof why), TS_E_OK);
  static const char hz[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  for (int i = 0; i < 16; i++) {
    sb r = {0};
    exchange(ts_gw_port(gw), hz, sizeof hz - 1, &r);
    ck_assert_msg(!strncmp(sb_str(&r), "HTTP/1.1 200", 12), "request %d: %s", i, sb_str(&r));
    sb_free(&r);
  }
  ts_gw_stats st;
  ts_gw_get_stats(gw, &st);
  ck_assert_uint_eq(st.requests_total, 16);
  ts_gw_free(gw);
}
END_TEST

/* A gateway in front of the model server, which serves one capture. */
typedef struct {
  char dir[256];
  ts_test_server ms;
  ts_gw *gw;
  size_t capture_len;
} proxy;

static void proxy_start(proxy *x, const char *capture) {
  ts_test_tempdir(x->dir, sizeof x->dir, "gateway-test");
  char *bytes = ts_test_read_file(ts_test_path(capture), &x->capture_len);
  ts_test_write_file(ts_test_at(x->dir, "1.sse"), bytes, x->capture_len);
  free(bytes);
  ts_test_server_start(&x->ms, x->dir, NULL, NULL);
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", x->ms.port);
  ts_gw_upstream up = {NULL, url};
  ts_gw_config cfg = {.upstreams = &up, .n_upstreams = 1};
  char why[256];
  ck_assert_int_eq(ts_gw_new(base, &cfg, &x->gw, why, sizeof why), TS_E_OK);
}

static void proxy_stop(proxy *x) {
  ts_gw_free(x->gw);
  ts_test_server_stop(&x->ms);
  ts_test_rm_rf(x->dir);
}

/* POSTs `body` to `path` through the gateway (with `headers`, each ending in CRLF);
 * checks the reply is a 200 and returns it in *r. */
static void post(proxy *x, const char *path, const char *headers, const char *body, sb *r) {
  sb_reset(r);
  char req[4096];
  int n = snprintf(req, sizeof req,
                   "POST %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                   "Content-Type: application/json\r\n%sContent-Length: %zu\r\n\r\n%s",
                   path, headers, strlen(body), body);
  ck_assert_int_lt(n, (int)sizeof req);
  exchange(ts_gw_port(x->gw), req, (size_t)n, r);
  ck_assert_msg(!strncmp(sb_str(r), "HTTP/1.1 200", 12), "%s", sb_clip(sb_str(r)));
}

/* What the upstream received as the body of request 1 equals want. */
static void upstream_got(proxy *x, const char *want) {
  size_t ulen;
  char *got = ts_test_read_file(ts_test_at(x->dir, "requests/1.json"), &ulen);
  ck_assert_msg(ulen == strlen(want) && !memcmp(got, want, ulen),
                "the upstream received:\n%s\nwant:\n%s", got, want);
  free(got);
}

/* A proxied request: x-progress-argument members are stripped from the body (every
 * other byte unchanged), the thread header comes back, the stream arrives whole. */
START_TEST(test_proxy_strips_progress_argument) {
  proxy x;
  proxy_start(&x, "tests/corpus/openai-chat-two-parallel-calls.sse");
  static const char body[] =
      "{\"model\":\"m\", \"stream\":true,\"tools\":[{\"type\":\"function\",\"function\":{\"name\":"
      "\"create_ticket\",\"parameters\":{\"type\":\"object\",\"x-progress-argument\":\"description\","
      "\"properties\":{\"description\":{\"type\":\"string\"}}}}}]}";
  static const char want_up[] =
      "{\"model\":\"m\", \"stream\":true,\"tools\":[{\"type\":\"function\",\"function\":{\"name\":"
      "\"create_ticket\",\"parameters\":{\"type\":\"object\","
      "\"properties\":{\"description\":{\"type\":\"string\"}}}}}]}";
  sb r = {0};
  post(&x, "/v1/chat/completions", "X-Toolstream-Thread: my-thread\r\n", body, &r);
  ck_assert_msg(strstr(sb_str(&r), "X-Toolstream-Thread: my-thread\r\n"), "%s",
                sb_clip(sb_str(&r)));
  ck_assert_msg(strstr(sb_str(&r), "data: [DONE]"), "the stream did not arrive whole:\n%s",
                sb_clip(sb_str(&r)));
  sb_free(&r);
  upstream_got(&x, want_up);
  ts_gw_stats st;
  ts_gw_get_stats(x.gw, &st);
  ck_assert_uint_eq(st.streams_total, 1);
  ck_assert_uint_eq(st.streams_open, 0);
  ck_assert_uint_eq(st.bytes_up, sizeof want_up - 1);
  ck_assert_uint_eq(st.bytes_down, x.capture_len);
  proxy_stop(&x);
}
END_TEST

/* Bedrock's Converse request declares its tools under toolConfig.tools[].toolSpec, the
 * schema under inputSchema.json; Gemini's under tools[].functionDeclarations[].parameters
 * (or parametersJsonSchema). x-progress-argument is stripped there too, every other byte
 * kept; in a message's text it stays. */
START_TEST(test_proxy_strips_bedrock_and_gemini) {
  static const char bedrock[] =
      "{\"messages\":[{\"role\":\"user\",\"content\":[{\"text\":\"x-progress-argument\"}]}],"
      "\"toolConfig\":{\"tools\":[{\"toolSpec\":{\"name\":\"get_stock\",\"inputSchema\":{\"json\":"
      "{\"type\":\"object\",\"x-progress-argument\":\"description\",\"properties\":{\"description\":"
      "{\"type\":\"string\",\"x-progress-argument\":\"inner\"}}}}}}]}}";
  static const char bedrock_up[] =
      "{\"messages\":[{\"role\":\"user\",\"content\":[{\"text\":\"x-progress-argument\"}]}],"
      "\"toolConfig\":{\"tools\":[{\"toolSpec\":{\"name\":\"get_stock\",\"inputSchema\":{\"json\":"
      "{\"type\":\"object\",\"properties\":{\"description\":"
      "{\"type\":\"string\"}}}}}}]}}";
  proxy x;
  sb r = {0};
  proxy_start(&x, "tests/corpus/bedrock-converse-stream-tool.bin");
  post(&x, "/model/us.anthropic.claude/converse-stream", "", bedrock, &r);
  upstream_got(&x, bedrock_up);
  proxy_stop(&x);
  static const char gemini[] =
      "{\"contents\":[],\"tools\":[{\"functionDeclarations\":[{\"name\":\"a\",\"parameters\":"
      "{\"type\":\"object\",\"x-progress-argument\":\"title\"}},{\"name\":\"b\","
      "\"parametersJsonSchema\":{\"x-progress-argument\":\"t\",\"type\":\"object\"}}]}]}";
  static const char gemini_up[] =
      "{\"contents\":[],\"tools\":[{\"functionDeclarations\":[{\"name\":\"a\",\"parameters\":"
      "{\"type\":\"object\"}},{\"name\":\"b\","
      "\"parametersJsonSchema\":{\"type\":\"object\"}}]}]}";
  proxy_start(&x, "tests/corpus/gemini-sse-two-function-calls.sse");
  post(&x, "/v1beta/models/g:streamGenerateContent?alt=sse", "", gemini, &r);
  upstream_got(&x, gemini_up);
  proxy_stop(&x);
  sb_free(&r);
}
END_TEST


/* ---- the tap runs after the turn's reads ----------------------------------------------- *
 * Two streams whose chunks are both readable in one turn of the loop: each chunk goes to
 * its client before any tap of that turn runs, so at every event published in the turn
 * both clients already have their chunk waiting (peeked from the event callback). With
 * the tap fed in each read's handler, the first stream's events would come before the
 * second stream's chunk was even read. */

typedef struct {
  int cfd[2];     /* the clients' sockets */
  int armed;      /* the chunks are in flight */
  int events;     /* events published while armed */
  int both_ready; /* ... at which both clients had bytes waiting */
} turn_probe;

static void on_turn_event(void *user, const ts_event *ev, const char *json, size_t len) {
  (void)ev;
  (void)json;
  (void)len;
  turn_probe *t = user;
  if (!t->armed) return;
  t->events++;
  char b;
  int ready = 1;
  for (int k = 0; k < 2; k++)
    if (recv(t->cfd[k], &b, 1, MSG_PEEK | MSG_DONTWAIT) != 1) ready = 0;
  t->both_ready += ready;
}

/* Runs the loop in slices until fn(arg) holds (30 s backstop). */
static void loop_until(int (*fn)(void *), void *arg, const char *what) {
  double end = now_ms() + 30000;
  while (!fn(arg)) {
    ck_assert_msg(now_ms() < end, "not within 30 s: %s", what);
    event_base_loop(base, EVLOOP_NONBLOCK);
    poll(NULL, 0, 1);
  }
}

typedef struct {
  int lfd, ufd[2], n;
} up_pair;

static int accepted_two(void *arg) {
  up_pair *u = arg;
  int fd = accept(u->lfd, NULL, NULL);
  if (fd >= 0) u->ufd[u->n++] = fd;
  return u->n == 2;
}

/* Reads what fd has (non-blocking) onto got; 1 once got holds `want`. */
static int read_until(int fd, sb *got, const char *want) {
  char buf[4096];
  ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
  if (n > 0) sb_add(got, buf, (size_t)n);
  return strstr(sb_str(got), want) != NULL;
}

typedef struct {
  int fd[2];
  sb got[2];
  const char *want;
} two_reads;

static int both_read(void *arg) {
  two_reads *r = arg;
  int a = read_until(r->fd[0], &r->got[0], r->want), b = read_until(r->fd[1], &r->got[1], r->want);
  return a && b;
}

/* The test's own upstream: a listening socket on loopback (u->lfd) and its URL. Returns
 * its port. */
static int upstream_listen(up_pair *u, char *url, size_t cap) {
  u->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  struct sockaddr_in a = {.sin_family = AF_INET};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t al = sizeof a;
  ck_assert_int_eq(bind(u->lfd, (struct sockaddr *)&a, sizeof a), 0);
  ck_assert_int_eq(listen(u->lfd, 8), 0);
  getsockname(u->lfd, (struct sockaddr *)&a, &al);
  snprintf(url, cap, "http://127.0.0.1:%d", ntohs(a.sin_port));
  return ntohs(a.sin_port);
}

START_TEST(test_tap_after_the_turns_reads) {
  up_pair u = {.n = 0};
  char url[64];
  upstream_listen(&u, url, sizeof url);
  ts_gw_upstream up = {NULL, url};
  turn_probe t = {.armed = 0};
  ts_gw_config cfg = {.upstreams = &up, .n_upstreams = 1, .quiet = 1, .deltas = 1,
                      .emitted = on_turn_event, .emitted_user = &t};
  ts_gw *gw;
  char why[256];
  ck_assert_int_eq(ts_gw_new(base, &cfg, &gw, why, sizeof why), TS_E_OK);

  static const char req[] = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                            "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
  struct sockaddr_in g = {.sin_family = AF_INET, .sin_port = htons((uint16_t)ts_gw_port(gw))};
  g.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int k = 0; k < 2; k++) {
    t.cfd[k] = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_eq(connect(t.cfd[k], (struct sockaddr *)&g, sizeof g), 0);
    ck_assert_int_eq(write(t.cfd[k], req, sizeof req - 1), (ssize_t)(sizeof req - 1));
  }
  loop_until(accepted_two, &u, "the gateway connects to the upstream twice");
  two_reads r = {.fd = {u.ufd[0], u.ufd[1]}, .want = "\r\n\r\n{}"};
  sb_puts(&r.got[0], "");
  sb_puts(&r.got[1], "");
  loop_until(both_read, &r, "both requests reach the upstream");
  static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                             "Transfer-Encoding: chunked\r\n\r\n";
  for (int k = 0; k < 2; k++) ck_assert_int_eq(write(u.ufd[k], head, sizeof head - 1), (ssize_t)(sizeof head - 1));
  two_reads h = {.fd = {t.cfd[0], t.cfd[1]}, .want = "\r\n\r\n"};
  sb_puts(&h.got[0], "");
  sb_puts(&h.got[1], "");
  loop_until(both_read, &h, "both reply heads reach the clients");
  char drain[4096];
  for (int k = 0; k < 2; k++) /* nothing waits at the clients now */
    while (recv(t.cfd[k], drain, sizeof drain, MSG_DONTWAIT) > 0) {
    }

  /* one chunk on each upstream, both in the sockets before the loop turns */
  static const char sse[] =
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\","
      "\"type\":\"function\",\"function\":{\"name\":\"write_file\",\"arguments\":\"{\\\"path\\\":\"}}]}}]}\n\n";
  char chunk[512];
  int cn = snprintf(chunk, sizeof chunk, "%zx\r\n%s\r\n", sizeof sse - 1, sse);
  t.armed = 1;
  for (int k = 0; k < 2; k++) ck_assert_int_eq(write(u.ufd[k], chunk, (size_t)cn), cn);
  struct pollfd pf[2] = {{t.cfd[0], POLLIN, 0}, {t.cfd[1], POLLIN, 0}};
  double end = now_ms() + 30000;
  while (t.events < 2) { /* one turn normally; more when the kernel delivered one late */
    ck_assert_msg(now_ms() < end, "no events within 30 s (%d)", t.events);
    event_base_loop(base, EVLOOP_ONCE);
  }
  ck_assert_int_eq(poll(pf, 2, 0), 2);
  ck_assert_msg(t.both_ready == t.events,
                "%d of %d events were published before the other stream's chunk reached its client",
                t.events - t.both_ready, t.events);

  for (int k = 0; k < 2; k++) {
    close(t.cfd[k]);
    close(u.ufd[k]);
    sb_free(&r.got[k]);
    sb_free(&h.got[k]);
  }
  close(u.lfd);
  event_base_loop(base, EVLOOP_NONBLOCK);
  ts_gw_free(gw);
}
END_TEST

/* ---- system calls per request and per chunk --------------------------------------------- *
 * The gateway's own calls are counted by fd here: this executable defines epoll_ctl,
 * getsockopt, recv and send (each a plain system call), and the dynamic linker resolves
 * libevent's calls and the gateway's to them. Counting starts with each test's process
 * (check forks one per test). */

#define SYS_FDS 4096
static struct {
  unsigned epoll_ctl[SYS_FDS], recv[SYS_FDS], send[SYS_FDS];
  unsigned getsockopt, getrandom;
} sysc;

ssize_t getrandom(void *buf, size_t n, unsigned flags) {
  __atomic_add_fetch(&sysc.getrandom, 1, __ATOMIC_RELAXED);
  return (ssize_t)syscall(SYS_getrandom, buf, n, flags);
}

/* The process's mapped memory (VmSize, KiB). malloc maps a block of many MiB by itself (an
 * mmap and a munmap, or a brk up and down, per block), so a tap that reserved its framer's
 * buffer at the event cap (17 MiB by default) shows here while its reply streams. */
static long vm_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "VmSize:", 7)) kib = strtol(line + 7, NULL, 10);
  if (f) fclose(f);
  return kib;
}

static void sys_count(unsigned *per_fd, int fd) {
  if (fd >= 0 && fd < SYS_FDS) per_fd[fd]++;
}

int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev) {
  sys_count(sysc.epoll_ctl, fd);
  return (int)syscall(SYS_epoll_ctl, epfd, op, fd, ev);
}

int getsockopt(int fd, int level, int name, void *val, socklen_t *len) {
  sysc.getsockopt++;
  return (int)syscall(SYS_getsockopt, fd, level, name, val, len);
}

ssize_t recv(int fd, void *buf, size_t n, int flags) {
  sys_count(sysc.recv, fd);
  return (ssize_t)syscall(SYS_recvfrom, fd, buf, n, flags, NULL, NULL);
}

ssize_t send(int fd, const void *buf, size_t n, int flags) {
  sys_count(sysc.send, fd);
  return (ssize_t)syscall(SYS_sendto, fd, buf, n, flags, NULL, 0);
}

static int port_of(const struct sockaddr_in *a) { return ntohs(a->sin_port); }

/* The fd of this process whose local port is `local` and peer port `peer`, or -1. */
static int fd_between(int local, int peer) {
  for (int fd = 3; fd < SYS_FDS; fd++) {
    struct sockaddr_in l, r;
    socklen_t ll = sizeof l, rl = sizeof r;
    if (getsockname(fd, (struct sockaddr *)&l, &ll) || getpeername(fd, (struct sockaddr *)&r, &rl)) continue;
    if (l.sin_family == AF_INET && port_of(&l) == local && port_of(&r) == peer) return fd;
  }
  return -1;
}

static int local_port(int fd) {
  struct sockaddr_in a;
  socklen_t al = sizeof a;
  return getsockname(fd, (struct sockaddr *)&a, &al) ? -1 : port_of(&a);
}

typedef struct {
  int fd;
  sb got;
  const char *want;
} one_read;

static int got_it(void *arg) {
  one_read *r = arg;
  return read_until(r->fd, &r->got, r->want);
}

/* Writes `bytes` to the upstream socket `ufd` and runs the loop until the client (cfd)
 * has them, so that every upstream write is one readiness of the gateway's socket. */
static void upstream_step(int ufd, int cfd, const char *bytes, const char *want) {
  ck_assert_int_eq(write(ufd, bytes, strlen(bytes)), (ssize_t)strlen(bytes));
  one_read r = {.fd = cfd, .want = want};
  sb_puts(&r.got, "");
  loop_until(got_it, &r, want);
  sb_free(&r.got);
}

static int accepted_one(void *arg) {
  up_pair *u = arg;
  int fd = accept(u->lfd, NULL, NULL);
  if (fd >= 0) u->ufd[u->n++] = fd;
  return u->n == 1;
}

static int events_seen;
static void count_event(void *user, const ts_event *ev, const char *json, size_t len) {
  (void)user;
  (void)ev;
  (void)json;
  (void)len;
  events_seen++;
}

/* Two tapped requests on one kept-alive client connection, the second on the pooled
 * upstream connection, each a head and CHUNKS chunks written one at a time: interest is
 * registered once per connection (one epoll_ctl on each socket: none per request, per
 * write or for the pool's hand-over), no getsockopt after the connect, and exactly one
 * read and one write per upstream write (edge-triggered reading reads no extra EAGAIN).
 * No getrandom per request or per event published with --deltas (the thread id's bytes
 * come from a pool, the bus keeps one nng aio: none during the second request; the
 * first's set-up, libsodium's included, may draw some), and no framer buffer reserved at the event cap
 * while a reply is tapped (its events come whole, one per read: no buffer at all; the
 * process maps under 4 MiB more mid-reply than before the request, against the 17 MiB
 * block of a buffer reserved up front). */
#define CHUNKS 6
START_TEST(test_system_calls_per_request) {
  up_pair u = {.n = 0};
  char url[64];
  int up_port = upstream_listen(&u, url, sizeof url);
  ts_gw_upstream up = {NULL, url};
  ts_pub *pub; /* the events published too (no subscriber: pub0 drops them) */
  ck_assert_int_eq(ts_pub_open("tcp://127.0.0.1:0", NULL, NULL, &pub), TS_E_OK);
  ts_gw_config cfg = {.upstreams = &up, .n_upstreams = 1, .quiet = 1, .emitted = count_event, .pub = pub,
                      .deltas = 1};
  ts_gw *gw;
  char why[256];
  ck_assert_int_eq(ts_gw_new(base, &cfg, &gw, why, sizeof why), TS_E_OK);
  struct sockaddr_in g = {.sin_family = AF_INET, .sin_port = htons((uint16_t)ts_gw_port(gw))};
  g.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int cfd = socket(AF_INET, SOCK_STREAM, 0);
  ck_assert_int_eq(connect(cfd, (struct sockaddr *)&g, sizeof g), 0);
  static const char req[] = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                            "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
  static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                             "Transfer-Encoding: chunked\r\n\r\n";
  unsigned writes = 0, rnd_before_second = 0;
  long vm_growth[2] = {0, 0};
  for (int round = 0; round < 2; round++) {
    if (round == 1) rnd_before_second = sysc.getrandom;
    long vm_before = vm_kib();
    ck_assert_int_eq(write(cfd, req, sizeof req - 1), (ssize_t)(sizeof req - 1));
    if (round == 0) loop_until(accepted_one, &u, "the gateway connects to the upstream");
    one_read r = {.fd = u.ufd[0], .want = "\r\n\r\n{}"};
    sb_puts(&r.got, "");
    loop_until(got_it, &r, "the request reaches the upstream");
    sb_free(&r.got);
    upstream_step(u.ufd[0], cfd, head, "X-Toolstream-Thread");
    writes++;
    for (int i = 0; i < CHUNKS; i++) {
      char sse[256], chunk[320], want[32];
      int n = i == 0 ? snprintf(sse, sizeof sse,
                                "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
                                "\"id\":\"call_%d\",\"type\":\"function\",\"function\":{\"name\":\"f\","
                                "\"arguments\":\"{\\\"a\\\":\\\"\"}}]}}]}\n\n", round)
                     : snprintf(sse, sizeof sse,
                                "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
                                "\"function\":{\"arguments\":\"part%d \"}}]}}]}\n\n", i);
      snprintf(chunk, sizeof chunk, "%x\r\n%s\r\n", n, sse);
      snprintf(want, sizeof want, i == 0 ? "call_%d" : "part%d ", i == 0 ? round : i);
      upstream_step(u.ufd[0], cfd, chunk, want);
      writes++;
      if (i == 0) vm_growth[round] = vm_kib() - vm_before; /* the reply's tap is alive */
    }
    static const char fin[] = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n";
    char tail[256];
    snprintf(tail, sizeof tail, "%zx\r\n%s\r\n0\r\n\r\n", sizeof fin - 1, fin);
    upstream_step(u.ufd[0], cfd, tail, "\r\n0\r\n\r\n");
    writes++;
    ck_assert_msg(u.n == 1, "the second request opened a new upstream connection");
  }
  event_base_loop(base, EVLOOP_NONBLOCK);
  ck_assert_msg(events_seen > 0, "the replies were not tapped");
  struct sockaddr_in pa; /* the gateway's end of the upstream connection */
  socklen_t pl = sizeof pa;
  ck_assert_int_eq(getpeername(u.ufd[0], (struct sockaddr *)&pa, &pl), 0);
  int gw_up = fd_between(port_of(&pa), up_port);
  int gw_client = fd_between(ts_gw_port(gw), local_port(cfd));
  ck_assert_int_ge(gw_up, 0);
  ck_assert_int_ge(gw_client, 0);
  ck_assert_uint_eq(sysc.getsockopt, 0);
  ck_assert_msg(sysc.epoll_ctl[gw_up] == 1, "epoll_ctl on the upstream socket: %u (want 1: added once)",
                sysc.epoll_ctl[gw_up]);
  ck_assert_msg(sysc.epoll_ctl[gw_client] == 1, "epoll_ctl on the client socket: %u (want 1: added once)",
                sysc.epoll_ctl[gw_client]);
  ck_assert_msg(sysc.recv[gw_up] == writes, "%u reads of the upstream for %u upstream writes",
                sysc.recv[gw_up], writes);
  ck_assert_msg(sysc.send[gw_client] == writes, "%u writes to the client for %u upstream writes",
                sysc.send[gw_client], writes);
  ck_assert_msg(sysc.getrandom == rnd_before_second, "getrandom: %u calls during the second request (want 0)",
                sysc.getrandom - rnd_before_second);
  for (int round = 0; round < 2; round++)
    ck_assert_msg(vm_growth[round] >= 0 && vm_growth[round] < 4096,
                  "request %d: %ld KiB more mapped mid-reply (a framer buffer reserved at the cap?)", round + 1,
                  vm_growth[round]);
  close(cfd);
  close(u.ufd[0]);
  close(u.lfd);
  event_base_loop(base, EVLOOP_NONBLOCK);
  ts_gw_free(gw);
  ts_pub_close(pub);
}
END_TEST

/* ---- which loop a connection goes to (cfg.workers, cfg.spread_at) ------------------------ *
 * Two loops, spread_at 4, connections held open: whichever listener the kernel picked,
 * the first loop holds the first four, the next four go to the second (the one holding
 * fewer), then they alternate; every connection answers on the loop that holds it; when
 * they close the counts fall back and the next connection is the first loop's again;
 * /metrics has each loop's count. With the kernel's spread alone, the first four would
 * all land on one loop once in 16 runs. Without filling (TS_GW_SPREAD_EVEN) the loops never
 * differ by more than one. */

typedef struct {
  const ts_gw *gw;
  uint64_t want;
} open_count;

static int opened(void *arg) {
  open_count *o = arg;
  ts_gw_stats st;
  ts_gw_get_stats(o->gw, &st);
  return st.connections_open == o->want;
}

static void worker_conns(const ts_gw *gw, uint64_t *w0, uint64_t *w1) {
  ts_gw_stats st;
  ck_assert_int_eq(ts_gw_get_worker_stats(gw, 0, &st), 0);
  *w0 = st.connections_open;
  ck_assert_int_eq(ts_gw_get_worker_stats(gw, 1, &st), 0);
  *w1 = st.connections_open;
}

static int connect_to(int port) { return loopback_connect(port, 0, 0); }

START_TEST(test_workers_fill_the_first_loop) {
  ts_gw_upstream up = {NULL, "http://127.0.0.1:9"};
  ts_gw_config cfg = {.upstreams = &up, .n_upstreams = 1, .workers = 2, .spread_at = 4, .quiet = 1};
  ts_gw *gw;
  char why[256];
  ck_assert_int_eq(ts_gw_new(base, &cfg, &gw, why, sizeof why), TS_E_OK);
  ts_gw_stats st;
  ck_assert_int_eq(ts_gw_get_worker_stats(gw, 2, &st), TS_E_INVAL);
  /* after connection k (1-based): what each loop holds (the ninth is checked apart) */
  static const struct {
    uint64_t w0, w1;
  } want[10] = {{1, 0}, {2, 0}, {3, 0}, {4, 0}, {4, 1}, {4, 2}, {4, 3}, {4, 4}, {0, 0}, {5, 5}};
  int fd[10];
  for (int k = 0; k < 10; k++) {
    fd[k] = connect_to(ts_gw_port(gw));
    open_count o = {gw, (uint64_t)k + 1};
    loop_until(opened, &o, "the gateway takes the connection");
    uint64_t w0, w1;
    worker_conns(gw, &w0, &w1);
    if (k == 8) { /* the ninth and tenth: one each, in either order (a tie at 4 and 4) */
      ck_assert_msg(w0 + w1 == 9 && (w0 == 5 || w1 == 5), "after 9: %lu and %lu", (unsigned long)w0,
                    (unsigned long)w1);
      continue;
    }
    ck_assert_msg(w0 == want[k].w0 && w1 == want[k].w1, "after %d connections: %lu and %lu (want %lu and %lu)",
                  k + 1, (unsigned long)w0, (unsigned long)w1, (unsigned long)want[k].w0,
                  (unsigned long)want[k].w1);
  }
  /* /metrics shows each loop's (the request's own connection is the eleventh) */
  static const char mx[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  sb m = {0};
  exchange(ts_gw_port(gw), mx, sizeof mx - 1, &m);
  long per[2] = {-1, -1};
  for (int i = 0; i < 2; i++) {
    char pat[96];
    snprintf(pat, sizeof pat, "\ntoolstream_gateway_worker_connections_open{worker=\"%d\"} ", i);
    const char *at = strstr(sb_str(&m), pat);
    ck_assert_msg(at, "no %s in /metrics:\n%s", pat + 1, sb_str(&m));
    per[i] = strtol(at + strlen(pat), NULL, 10);
  }
  ck_assert_msg(per[0] + per[1] == 11 && per[0] >= 5 && per[1] >= 5, "/metrics: %ld and %ld", per[0], per[1]);
  sb_free(&m);
  /* each answers on the loop that holds it */
  static const char hz[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  for (int k = 0; k < 10; k++) {
    ck_assert_int_eq(write(fd[k], hz, sizeof hz - 1), (ssize_t)(sizeof hz - 1));
    one_read r = {.fd = fd[k], .want = "\r\n\r\nok\n"};
    sb_puts(&r.got, "");
    loop_until(got_it, &r, "a /healthz answer on a held connection");
    ck_assert_msg(!strncmp(sb_str(&r.got), "HTTP/1.1 200", 12), "connection %d: %s", k, sb_str(&r.got));
    sb_free(&r.got);
    close(fd[k]);
  }
  open_count none = {gw, 0};
  loop_until(opened, &none, "every connection closed");
  uint64_t w0, w1;
  worker_conns(gw, &w0, &w1);
  ck_assert_msg(w0 == 0 && w1 == 0, "after the closes: %lu and %lu", (unsigned long)w0, (unsigned long)w1);
  int again = connect_to(ts_gw_port(gw));
  open_count one = {gw, 1};
  loop_until(opened, &one, "the gateway takes the connection");
  worker_conns(gw, &w0, &w1);
  ck_assert_msg(w0 == 1 && w1 == 0, "a connection after the closes: %lu and %lu", (unsigned long)w0,
                (unsigned long)w1);
  close(again);
  ts_gw_free(gw); /* the sanitizer build finds a connection or a peer leaked */

  /* no filling (TS_GW_SPREAD_EVEN): each to the loop holding fewer, from the first */
  ts_gw_config even = cfg;
  even.spread_at = TS_GW_SPREAD_EVEN;
  ck_assert_int_eq(ts_gw_new(base, &even, &gw, why, sizeof why), TS_E_OK);
  for (int k = 0; k < 4; k++) {
    fd[k] = connect_to(ts_gw_port(gw));
    open_count o = {gw, (uint64_t)k + 1};
    loop_until(opened, &o, "the gateway takes the connection");
    worker_conns(gw, &w0, &w1);
    ck_assert_msg(w0 + w1 == (uint64_t)k + 1 && (w0 > w1 ? w0 - w1 : w1 - w0) == (uint64_t)((k + 1) % 2),
                  "no filling, after %d connections: %lu and %lu", k + 1, (unsigned long)w0, (unsigned long)w1);
  }
  for (int k = 0; k < 4; k++) close(fd[k]);
  ts_gw_free(gw);
}
END_TEST

int main(void) {
  Suite *s = suite_create("gateway");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_loop_test(tc, test_config_rows, 0, (int)(sizeof rows / sizeof rows[0]));
  tcase_add_test(tc, test_config_limits);
  tcase_add_test(tc, test_listens_on_loopback);
  tcase_add_test(tc, test_client_sockets_nodelay);
  tcase_add_test(tc, test_builtin_endpoints);
  tcase_add_test(tc, test_workers);
  tcase_add_test(tc, test_workers_fill_the_first_loop);
  tcase_add_test(tc, test_proxy_strips_progress_argument);
  tcase_add_test(tc, test_proxy_strips_bedrock_and_gemini);
  tcase_add_test(tc, test_tap_after_the_turns_reads);
  tcase_add_test(tc, test_system_calls_per_request);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
