/*
 * http_client_test.c: the HTTP transport (runtime/http_client.c) against the local model
 * server (tests/model_server.c) over real sockets: incremental delivery, retries before
 * the first body byte and none after it, error statuses and their messages, dropped
 * connections, connect failures, connect and idle timeouts, cancellation (flag and
 * callback), malformed bytes passed through, what the server received, URL and header
 * checks, and HTTPS with a self-signed certificate made at test time.
 * Every test starts its own server (support/model_server.h) on a fresh directory.
 */
#include <check.h>
#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "net/http_client.h"
#include "support/cert.h"
#include "support/model_server.h"
#include "support/proc.h"
#include "support/raw_server.h"
#include "support/tempdir.h"
#include "support/test_support.h"

/* Must match MALFORMED in tests/model_server.c. */
#define MALFORMED "this is not an event stream\n\x01\x02{\"broken\": [1,2\n\n:::\xff\xfe\n\n"

static const char TURN1[] =
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"}}]}\n\n"
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" there\"}}]}\n\n"
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
    "data: [DONE]\n\n";
static const char TURN2[] = "data: {\"second\":true}\n\ndata: [DONE]\n\n";

/* ---- fixtures: a directory and a server ---------------------------------------------- */

static char tmp[256];
static ts_test_server srv;
static int port;

/* A path in the test's directory; a file there holding `s`. */
#define at(rel) ts_test_at(tmp, (rel))
#define put(rel, s) ts_test_put(at(rel), (s))

static void start_server(int tls) {
  ts_test_server_start(&srv, tmp, tls ? at("cert.pem") : NULL, tls ? at("key.pem") : NULL);
  port = srv.port;
}

static void setup(void) {
  ts_test_tempdir(tmp, sizeof tmp, "http-test");
  put("turn-1.sse", TURN1);
  put("turn-2.sse", TURN2);
  port = 0;
}

static void teardown(void) {
  ts_test_server_stop(&srv);
  ts_test_rm_rf(tmp);
}

static const char *url(const char *path_query) {
  static char u[512];
  snprintf(u, sizeof u, "http://127.0.0.1:%d%s", port, path_query);
  return u;
}

static int count_requests(void) {
  int n = 0;
  DIR *d = opendir(at("requests"));
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strstr(e->d_name, ".json") && !strstr(e->d_name, ".tmp")) n++;
  closedir(d);
  return n;
}

/* ---- a collecting consumer ----------------------------------------------------------- */

typedef struct {
  sb body;
  int chunks;
  double t_first, t_last;
  int stop_after;          /* return nonzero on this chunk (1-based); 0: never */
  volatile int *cancel_on; /* set *cancel_on = 1 at the first chunk */
} sink;

static int collect(void *user, const char *data, size_t len) {
  sink *k = user;
  double t = now_ms();
  if (!k->chunks) k->t_first = t;
  k->t_last = t;
  k->chunks++;
  sb_add(&k->body, data, len);
  if (k->cancel_on) *k->cancel_on = 1;
  return k->stop_after && k->chunks >= k->stop_after;
}

typedef struct {
  int rc;
  double ms;
  ts_http_response_info info;
  char why[512];
} outcome;

static outcome post(ts_http_request *rq, sink *k) {
  outcome o;
  memset(&o, 0, sizeof o);
  if (!rq->body) {
    rq->body = "{\"model\":\"test\"}";
    rq->body_len = strlen(rq->body);
  }
  double t0 = now_ms();
  o.rc = ts_http_post_stream(rq, collect, k, &o.info, o.why, sizeof o.why);
  o.ms = now_ms() - t0;
  if (k->chunks) k->t_first -= t0, k->t_last -= t0;
  return o;
}

/* ---- tests ---------------------------------------------------------------------------- */

START_TEST(streams_incrementally) {
  start_server(0);
  ts_http_request rq = {.url = url("/v1/chat/completions?slow=100&chunk=20")};
  sink k = {0};
  outcome o = post(&rq, &k);
  ck_assert_msg(o.rc == TS_E_OK, "%d %s", o.rc, o.why);
  ck_assert_str_eq(sb_str(&k.body), TURN1);
  ck_assert_int_eq(o.info.status, 200);
  ck_assert_int_eq(o.info.attempts, 1);
  ck_assert_uint_eq(o.info.body_bytes, strlen(TURN1));
  ck_assert_str_eq(o.info.content_type, "text/event-stream");
  ck_assert_str_eq(o.why, "");
  /* ~12 chunks 100 ms apart: the first arrived long before the last was sent. */
  ck_assert_int_ge(k.chunks, 6);
  ck_assert_msg(k.t_first < 300 && k.t_last - k.t_first > 700, "first %.0f last %.0f",
                k.t_first, k.t_last);
  /* The next request gets the next file. */
  sink k2 = {0};
  rq.url = url("/v1/chat/completions");
  o = post(&rq, &k2);
  ck_assert_int_eq(o.rc, TS_E_OK);
  ck_assert_str_eq(sb_str(&k2.body), TURN2);
  /* Files used up: 404 with the server's message. */
  sink k3 = {0};
  o = post(&rq, &k3);
  ck_assert_int_eq(o.rc, TS_E_HTTP_STATUS);
  ck_assert_str_eq(o.why, "HTTP 404: model_server: no more .sse files");
  ck_assert_int_eq(k3.chunks, 0);
  sb_free(&k.body);
  sb_free(&k2.body);
}
END_TEST

START_TEST(retries_429_then_succeeds) {
  start_server(0);
  ts_http_request rq = {.url = url("/v1?status=429&times=2"), .retry_base_ms = 10};
  sink k = {0};
  outcome o = post(&rq, &k);
  ck_assert_msg(o.rc == TS_E_OK, "%d %s", o.rc, o.why);
  ck_assert_int_eq(o.info.attempts, 3);
  ck_assert_int_eq(o.info.status, 200);
  ck_assert_str_eq(sb_str(&k.body), TURN1); /* delivered exactly once */
  ck_assert_int_eq(count_requests(), 3);
  ck_assert_msg(o.ms < 1500, "Retry-After: 0 honoured (%.0f ms)", o.ms);
  sb_free(&k.body);
}
END_TEST

START_TEST(status_500_exhausts_retries) {
  start_server(0);
  ts_http_request rq = {.url = url("/v1?status=500"), .retry_base_ms = 10, .max_retries = 4};
  sink k = {0};
  outcome o = post(&rq, &k);
  ck_assert_int_eq(o.rc, TS_E_HTTP_STATUS);
  ck_assert_int_eq(o.info.status, 500);
  ck_assert_int_eq(o.info.attempts, 5);
  ck_assert_int_eq(count_requests(), 5);
  ck_assert_msg(!strcmp(o.why, "HTTP 500: model_server: status 500 (after 5 attempts)"), "%s",
                o.why);
  ck_assert_int_eq(k.chunks, 0);
  /* Backoff grows: 10 + 20 + 40 + 80 ms at least. */
  ck_assert_msg(o.ms >= 150, "%.0f ms", o.ms);
}
END_TEST

START_TEST(status_4xx_not_retried_and_text_bodies) {
  start_server(0);
  ts_http_request rq = {.url = url("/v1?status=400"), .retry_base_ms = 10};
  sink k = {0};
  outcome o = post(&rq, &k);
  ck_assert_int_eq(o.rc, TS_E_HTTP_STATUS);
  ck_assert_int_eq(o.info.attempts, 1);
  ck_assert_str_eq(o.why, "HTTP 400: model_server: status 400");
  rq.url = url("/v1?status=503&errbody=text");
  rq.max_retries = TS_HTTP_NO_RETRY;
  o = post(&rq, &k);
  ck_assert_int_eq(o.rc, TS_E_HTTP_STATUS);
  ck_assert_int_eq(o.info.attempts, 1);
  ck_assert_str_eq(o.why, "HTTP 503: model_server says no");
  ck_assert_int_eq(k.chunks, 0);
}
END_TEST

START_TEST(drop_mid_stream_is_final) {
  start_server(0);
  ts_http_request rq = {.url = url("/v1?drop-after=30&slow=20&chunk=10"), .retry_base_ms = 10};
  sink k = {0};
  outcome o = post(&rq, &k);
  ck_assert_msg(o.rc == TS_E_HTTP_CLOSED, "%d %s", o.rc, o.why);
  ck_assert_uint_eq(o.info.body_bytes, 30);
  ck_assert_int_eq((int)k.body.len, 30);
  ck_assert(!memcmp(k.body.p, TURN1, 30));
  ck_assert_int_eq(o.info.attempts, 1); /* bytes were consumed: no retry */
  ck_assert_int_eq(count_requests(), 1);
  ck_assert_ptr_nonnull(strstr(o.why, "closed"));
  sb_free(&k.body);
}
END_TEST

static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  socklen_t l = sizeof a;
  getsockname(fd, (struct sockaddr *)&a, &l);
  close(fd);
  return ntohs(a.sin_port);
}

START_TEST(connect_refused_after_retries) {
  char u[128];
  snprintf(u, sizeof u, "http://127.0.0.1:%d/v1", free_port());
  ts_http_request rq = {.url = u, .max_retries = 2, .retry_base_ms = 20};
  sink k = {0};
  outcome o = post(&rq, &k);
  ck_assert_msg(o.rc == TS_E_HTTP_CONNECT, "%d %s", o.rc, o.why);
  ck_assert_int_eq(o.info.attempts, 3);
  ck_assert_int_eq(o.info.status, 0);
  ck_assert_msg(o.ms >= 60 && o.ms < 3000, "%.0f ms", o.ms);
  ck_assert_ptr_nonnull(strstr(o.why, "(after 3 attempts)"));
}
END_TEST

START_TEST(connect_timeout) {
  /* A listener whose accept queue is full and never drained: Linux drops further SYNs,
   * so a connect hangs until our timeout. */
  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  ck_assert_int_eq(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
  ck_assert_int_eq(listen(lfd, 0), 0);
  socklen_t l = sizeof a;
  getsockname(lfd, (struct sockaddr *)&a, &l);
  int fill[4];
  for (int i = 0; i < 4; i++) {
    fill[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    connect(fill[i], (struct sockaddr *)&a, sizeof a);
  }
  nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
  char u[128];
  snprintf(u, sizeof u, "http://127.0.0.1:%d/v1", ntohs(a.sin_port));
  ts_http_request rq = {.url = u, .connect_timeout_ms = 300, .max_retries = TS_HTTP_NO_RETRY};
  sink k = {0};
  outcome o = post(&rq, &k);
  ck_assert_msg(o.rc == TS_E_HTTP_TIMEOUT, "%d %s", o.rc, o.why);
  ck_assert_msg(o.ms >= 280 && o.ms < 1000, "%.0f ms", o.ms);
  ck_assert_ptr_nonnull(strstr(o.why, "timed out"));
  for (int i = 0; i < 4; i++) close(fill[i]);
  close(lfd);
}
END_TEST

START_TEST(idle_timeouts) {
  start_server(0);
  /* No headers at all for 3 s. */
  ts_http_request rq = {.url = url("/v1?stall=3000"),
                        .idle_timeout_ms = 300,
                        .max_retries = TS_HTTP_NO_RETRY};
  sink k = {0};
  outcome o = post(&rq, &k);
  ck_assert_msg(o.rc == TS_E_HTTP_TIMEOUT, "%d %s", o.rc, o.why);
  ck_assert_msg(o.ms >= 280 && o.ms < 1000, "%.0f ms", o.ms);
  /* One chunk, then silence: a timeout, and no retry since bytes were consumed. */
  rq.url = url("/v1?slow=3000&chunk=10");
  rq.max_retries = 3;
  rq.retry_base_ms = 10;
  o = post(&rq, &k);
  ck_assert_msg(o.rc == TS_E_HTTP_TIMEOUT, "%d %s", o.rc, o.why);
  ck_assert_uint_eq(o.info.body_bytes, 10);
  ck_assert_int_eq(o.info.attempts, 1);
  ck_assert_msg(o.ms < 1000, "%.0f ms", o.ms);
  sb_free(&k.body);
}
END_TEST

START_TEST(cancel_flag_and_callback) {
  start_server(0);
  volatile int cancel = 0;
  /* The flag is set during the first chunk; the next one is a second away. */
  ts_http_request rq = {.url = url("/v1?slow=1000&chunk=10"), .cancel = &cancel};
  sink k = {.cancel_on = &cancel};
  outcome o = post(&rq, &k);
  ck_assert_msg(o.rc == TS_E_HTTP_CANCELLED, "%d %s", o.rc, o.why);
  ck_assert_int_eq(k.chunks, 1);
  ck_assert_msg(o.ms - k.t_first < 250, "cancelled %.0f ms after the flag", o.ms - k.t_first);
  /* A set flag stops the call before it starts. */
  o = post(&rq, &k);
  ck_assert_int_eq(o.rc, TS_E_HTTP_CANCELLED);
  /* The callback stops it: no further chunk. */
  cancel = 0;
  sink k2 = {.stop_after = 2};
  rq.url = url("/v1?slow=20&chunk=10");
  rq.cancel = NULL;
  o = post(&rq, &k2);
  ck_assert_int_eq(o.rc, TS_E_ABORTED);
  ck_assert_int_eq(k2.chunks, 2);
  ck_assert_uint_eq(o.info.body_bytes, 20);
  sb_free(&k.body);
  sb_free(&k2.body);
}
END_TEST

static volatile int alarm_flag;
static void on_alarm(int sig) {
  (void)sig;
  alarm_flag = 1;
}

static void alarm_in(int ms) {
  alarm_flag = 0;
  signal(SIGALRM, on_alarm);
  struct itimerval it = {{0, 0}, {ms / 1000, (ms % 1000) * 1000}};
  setitimer(ITIMER_REAL, &it, NULL);
}

START_TEST(cancel_from_signal_while_waiting) {
  start_server(0);
  /* Waiting for headers. */
  ts_http_request rq = {.url = url("/v1?stall=5000"), .cancel = &alarm_flag};
  sink k = {0};
  alarm_in(200);
  outcome o = post(&rq, &k);
  ck_assert_msg(o.rc == TS_E_HTTP_CANCELLED, "%d %s", o.rc, o.why);
  ck_assert_msg(o.ms < 500, "%.0f ms", o.ms);
  /* Waiting in a backoff (Retry-After: 20). */
  rq.url = url("/v1?status=503&retry-after=20");
  alarm_in(300);
  o = post(&rq, &k);
  ck_assert_msg(o.rc == TS_E_HTTP_CANCELLED, "%d %s", o.rc, o.why);
  ck_assert_msg(o.ms < 800, "%.0f ms", o.ms);
  ck_assert_int_eq(o.info.attempts, 1);
}
END_TEST

START_TEST(malformed_bytes_pass_through) {
  start_server(0);
  ts_http_request rq = {.url = url("/v1?malformed=1")};
  sink k = {0};
  outcome o = post(&rq, &k);
  ck_assert_int_eq(o.rc, TS_E_OK);
  ck_assert_int_eq((int)k.body.len, (int)sizeof MALFORMED - 1);
  ck_assert(!memcmp(k.body.p, MALFORMED, k.body.len));
  sb_free(&k.body);
}
END_TEST

START_TEST(server_got_headers_and_body) {
  start_server(0);
  const char *body = "{\"model\":\"gpt-test\",\"stream\":true,\"messages\":[]}";
  ts_http_header h[] = {{"Authorization", "Bearer sk-test-SECRET-123"},
                        {"X-Custom", "custom value"}};
  ts_http_request rq = {.url = url("/v1/chat/completions"),
                        .headers = h,
                        .n_headers = 2,
                        .body = body,
                        .body_len = strlen(body)};
  sink k = {0};
  outcome o = post(&rq, &k);
  ck_assert_int_eq(o.rc, TS_E_OK);
  size_t n;
  char *got = ts_test_read_file(at("requests/1.json"), &n);
  ck_assert_str_eq(got, body);
  free(got);
  char *txt = ts_test_read_file(at("requests/1.txt"), &n);
  ck_assert_msg(!strncmp(txt, "POST /v1/chat/completions\n", 26), "%s", txt);
  ck_assert_ptr_nonnull(strstr(txt, "Authorization: <present>\n"));
  ck_assert_ptr_nonnull(strstr(txt, "X-Custom: custom value\n"));
  ck_assert_ptr_nonnull(strstr(txt, "Content-Type: application/json\n"));
  char hostline[64];
  snprintf(hostline, sizeof hostline, "Host: 127.0.0.1:%d\n", port);
  ck_assert_ptr_nonnull(strstr(txt, hostline));
  ck_assert_ptr_null(strstr(txt, "SECRET"));
  free(txt);
  /* An error never echoes header values. */
  rq.url = url("/v1?status=401");
  o = post(&rq, &k);
  ck_assert_int_eq(o.rc, TS_E_HTTP_STATUS);
  ck_assert_ptr_null(strstr(o.why, "SECRET"));
  sb_free(&k.body);
}
END_TEST

START_TEST(bad_urls_and_headers) {
  sink k = {0};
  const char *bad[] = {"ftp://example.com/", "http://", "example.com/v1",
                       "http://user:pw@example.com/", "http://example.com:99999/"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    ts_http_request rq = {.url = bad[i]};
    outcome o = post(&rq, &k);
    ck_assert_msg(o.rc == TS_E_HTTP_URL, "%s: %d %s", bad[i], o.rc, o.why);
  }
  ts_http_header h[] = {{"X-Evil", "a\r\nInjected: yes"}};
  ts_http_request rq = {.url = "http://127.0.0.1:1/", .headers = h, .n_headers = 1};
  ck_assert_int_eq(post(&rq, &k).rc, TS_E_INVAL);
  ck_assert_int_eq(ts_http_post_stream(NULL, collect, &k, NULL, NULL, 0), TS_E_INVAL);
  ck_assert_int_eq(k.chunks, 0);
}
END_TEST

static void make_cert(void) { ts_test_make_cert(tmp); }

START_TEST(https_verifies_certificates) {
  make_cert();
  start_server(1);
  char u[256];
  snprintf(u, sizeof u, "https://localhost:%d/v1?slow=20&chunk=50", port);
  /* Trusted through ca_file, name matches: streams. */
  ts_http_request rq = {.url = u, .ca_file = at("cert.pem")};
  sink k = {0};
  outcome o = post(&rq, &k);
  ck_assert_msg(o.rc == TS_E_OK, "%d %s", o.rc, o.why);
  ck_assert_str_eq(sb_str(&k.body), TURN1);
  ck_assert_int_ge(k.chunks, 2);
  /* System store only: the self-signed certificate is refused, without retries. */
  rq.ca_file = NULL;
  rq.retry_base_ms = 10;
  o = post(&rq, &k);
  ck_assert_msg(o.rc == TS_E_HTTP_TLS, "%d %s", o.rc, o.why);
  ck_assert_int_eq(o.info.attempts, 1);
  ck_assert_ptr_nonnull(strstr(o.why, "certificate"));
  /* Trusted, but the URL names 127.0.0.1 and the certificate only localhost. */
  snprintf(u, sizeof u, "https://127.0.0.1:%d/v1", port);
  rq.ca_file = at("cert.pem");
  o = post(&rq, &k);
  ck_assert_msg(o.rc == TS_E_HTTP_TLS, "%d %s", o.rc, o.why);
  /* A missing CA file. */
  rq.ca_file = at("nope.pem");
  o = post(&rq, &k);
  ck_assert_int_eq(o.rc, TS_E_HTTP_TLS);
  ck_assert_int_eq(count_requests(), 1);
  sb_free(&k.body);
}
END_TEST

/* ---- hostile replies (support/raw_server.h) ------------------------------------------ */

static outcome raw_post(const ts_raw_script *sc, sink *k) {
  ts_raw_server rs;
  ts_raw_server_start(&rs, sc);
  char u[128];
  snprintf(u, sizeof u, "http://127.0.0.1:%d/v1", rs.port);
  ts_http_request rq = {.url = u, .retry_base_ms = 10};
  outcome o = post(&rq, k);
  ts_raw_server_stop(&rs);
  return o;
}

#define BLOCK64 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define BLOCK1K BLOCK64 BLOCK64 BLOCK64 BLOCK64 BLOCK64 BLOCK64 BLOCK64 BLOCK64 \
  BLOCK64 BLOCK64 BLOCK64 BLOCK64 BLOCK64 BLOCK64 BLOCK64 BLOCK64

/* A head that never ends (many header lines, one endless line, an endless status line,
 * endless 1xx heads) fails once past TS_HTTP_HEAD_MAX, clearly and without a retry, rather
 * than being held in memory for as long as the server sends. */
START_TEST(endless_heads_are_refused) {
  const ts_raw_script heads[] = {
      {"HTTP/1.1 200 OK\r\n", "X-Big: " BLOCK1K "\r\n", -1, 0},
      {"HTTP/1.1 200 OK\r\nX-Long: ", BLOCK1K, -1, 0},
      {"HTTP/1.1 200 ", BLOCK1K, -1, 0},
      {"", "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n", -1, 0},
  };
  for (size_t i = 0; i < sizeof heads / sizeof *heads; i++) {
    sink k = {0};
    outcome o = raw_post(&heads[i], &k);
    ck_assert_msg(o.rc == TS_E_HTTP_PROTOCOL, "%zu: %d %s", i, o.rc, o.why);
    ck_assert_msg(strstr(o.why, "head of the response from 127.0.0.1 is larger than 256 KiB"),
                  "%zu: %s", i, o.why);
    ck_assert_int_eq(o.info.attempts, 1);
    ck_assert_int_eq(k.chunks, 0);
  }
  /* Trailers that never end, after a complete body: refused too, the body delivered. */
  const ts_raw_script trailers = {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                           "5\r\nhello\r\n0\r\n",
                           "X-T: " BLOCK1K "\r\n", -1, 0};
  sink k = {0};
  outcome o = raw_post(&trailers, &k);
  ck_assert_msg(o.rc == TS_E_HTTP_PROTOCOL, "%d %s", o.rc, o.why);
  ck_assert_str_eq(sb_str(&k.body), "hello");
  sb_free(&k.body);
}
END_TEST

/* A chunk declared larger than anything we hold (ffffffffffffffff bytes): libevent would
 * buffer it whole; the call fails once TS_HTTP_PENDING_MAX bytes wait. */
START_TEST(huge_chunk_is_refused) {
  const ts_raw_script sc = {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "ffffffffffffffff\r\n",
                     BLOCK1K, -1, 0};
  sink k = {0};
  outcome o = raw_post(&sc, &k);
  ck_assert_msg(o.rc == TS_E_HTTP_PROTOCOL, "%d %s", o.rc, o.why);
  ck_assert_msg(strstr(o.why, "a chunk of the response from 127.0.0.1 is larger than 64 MiB"),
                "%s", o.why);
  ck_assert_int_eq(o.info.attempts, 1);
  ck_assert_int_eq(k.chunks, 0);
}
END_TEST

/* 100 Continue and 103 Early Hints before the real response are skipped, whole or a byte
 * per read; 101 is not an informational prelude and stays a failure. */
START_TEST(informational_responses_skipped) {
  static const char head[] = "HTTP/1.1 100 Continue\r\n\r\n"
                             "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
                             "HTTP/1.1 102 Processing\n\n"
                             "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                             "Content-Length: 13\r\n\r\ndata: hello\n\n";
  for (int trickle = 0; trickle < 2; trickle++) {
    const ts_raw_script sc = {head, NULL, 0, trickle ? 200 : 0};
    sink k = {0};
    outcome o = raw_post(&sc, &k);
    ck_assert_msg(o.rc == TS_E_OK, "trickle %d: %d %s", trickle, o.rc, o.why);
    ck_assert_int_eq(o.info.status, 200);
    ck_assert_str_eq(o.info.content_type, "text/event-stream");
    ck_assert_str_eq(sb_str(&k.body), "data: hello\n\n");
    sb_free(&k.body);
  }
  const ts_raw_script up = {"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n", NULL, 0, 0};
  sink k = {0};
  outcome o = raw_post(&up, &k);
  ck_assert_msg(o.rc != TS_E_OK, "%d %s", o.rc, o.why);
  ck_assert_int_eq(k.chunks, 0);
}
END_TEST

/* Only 429 and 5xx are retried: a status past 599 is no server error (the header says
 * 5xx), it fails at once with its message. */
START_TEST(odd_status_not_retried) {
  const ts_raw_script sc = {"HTTP/1.1 999 Odd\r\nContent-Length: 4\r\n\r\nodd!", NULL, 0, 0};
  sink k = {0};
  outcome o = raw_post(&sc, &k);
  ck_assert_msg(o.rc == TS_E_HTTP_STATUS, "%d %s", o.rc, o.why);
  ck_assert_str_eq(o.why, "HTTP 999: odd!");
  ck_assert_int_eq(o.info.attempts, 1);
}
END_TEST

/* A head sent a byte at a time never counts as data until it is complete: the idle
 * timeout ends it, and the reason says the head did not complete (bytes did arrive). */
START_TEST(trickled_head_times_out) {
  const ts_raw_script sc = {"HTTP/1.1 200 OK\r\nX-Slow: " BLOCK1K "\r\n\r\n", NULL, 0, 20000};
  ts_raw_server rs;
  ts_raw_server_start(&rs, &sc);
  char u[128];
  snprintf(u, sizeof u, "http://127.0.0.1:%d/v1", rs.port);
  ts_http_request rq = {.url = u, .idle_timeout_ms = 300, .max_retries = TS_HTTP_NO_RETRY};
  sink k = {0};
  outcome o = post(&rq, &k);
  ts_raw_server_stop(&rs);
  ck_assert_msg(o.rc == TS_E_HTTP_TIMEOUT, "%d %s", o.rc, o.why);
  ck_assert_msg(strstr(o.why, "the head of the response from 127.0.0.1 did not complete within"),
                "%s", o.why);
  ck_assert_int_eq(k.chunks, 0);
}
END_TEST

/* An error status whose body never ends: the message is taken from the first
 * TS_HTTP_ERROR_BODY_MAX bytes and the call returns, instead of reading forever. */
START_TEST(endless_error_body_ends) {
  const ts_raw_script sc = {"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n\r\nno way ",
                     BLOCK1K, -1, 0};
  sink k = {0};
  outcome o = raw_post(&sc, &k);
  ck_assert_msg(o.rc == TS_E_HTTP_STATUS, "%d %s", o.rc, o.why);
  ck_assert_msg(!strncmp(o.why, "HTTP 400: no way aaaa", 21), "%s", o.why);
  ck_assert_int_eq(o.info.attempts, 1);
  ck_assert_int_eq(k.chunks, 0);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("http_client");
  TCase *tc = tcase_create("http");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, streams_incrementally);
  tcase_add_test(tc, retries_429_then_succeeds);
  tcase_add_test(tc, status_500_exhausts_retries);
  tcase_add_test(tc, status_4xx_not_retried_and_text_bodies);
  tcase_add_test(tc, drop_mid_stream_is_final);
  tcase_add_test(tc, connect_refused_after_retries);
  tcase_add_test(tc, connect_timeout);
  tcase_add_test(tc, idle_timeouts);
  tcase_add_test(tc, cancel_flag_and_callback);
  tcase_add_test(tc, cancel_from_signal_while_waiting);
  tcase_add_test(tc, malformed_bytes_pass_through);
  tcase_add_test(tc, server_got_headers_and_body);
  tcase_add_test(tc, bad_urls_and_headers);
  tcase_add_test(tc, https_verifies_certificates);
  tcase_add_test(tc, endless_heads_are_refused);
  tcase_add_test(tc, huge_chunk_is_refused);
  tcase_add_test(tc, informational_responses_skipped);
  tcase_add_test(tc, endless_error_body_ends);
  tcase_add_test(tc, trickled_head_times_out);
  tcase_add_test(tc, odd_status_not_retried);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_ENV);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
