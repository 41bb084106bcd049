/*
 * head_deadline_test.c: request heads have a deadline on an evhttp server
 * (net/head_deadline.h), and event streams are exempt.
 *
 * One process: the server's loop and the test's client sockets (non-blocking) take
 * turns. The deadline here is 300 ms. What is asserted is what load cannot break: that
 * a late head is cut off (within a generous 20 s, never sooner than the deadline, as
 * timers do not fire early), and that a stream outlives several deadlines. The trickle
 * sends a byte every 50 ms, well inside evhttp's own read timeout, which only a
 * deadline for the whole head ends; on a loaded machine the gaps may grow past it and
 * the read timeout ends it instead, which passes as well.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include "base/error.h"
#include "net/head_deadline.h"
#include "net/serve.h"
#include "support/loopback.h"
#include "support/proc.h"
#include "support/runner.h"

enum { DEADLINE_MS = 300 };
#define GIVE_UP_S 20.0

static double now_s(void) { return now_ms() / 1000.0; }

static void run_for_ms(struct event_base *base, int ms) {
  struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
  event_base_loopexit(base, &tv);
  event_base_dispatch(base);
}

static int connect_to(int port) { return loopback_connect(port, 0, 1); }

static void send_all(int fd, const char *s) {
  ck_assert_int_eq(send(fd, s, strlen(s), MSG_NOSIGNAL), (ssize_t)strlen(s));
}

/* What the client got: bytes appended to buf; 1 once the server closed (EOF or reset). */
static int drain(int fd, char *buf, size_t cap, size_t *len) {
  for (;;) {
    char tmp[4096];
    ssize_t n = recv(fd, tmp, sizeof tmp, 0);
    if (n > 0) {
      size_t k = (size_t)n < cap - 1 - *len ? (size_t)n : cap - 1 - *len;
      memcpy(buf + *len, tmp, k);
      *len += k;
      buf[*len] = '\0';
      continue;
    }
    if (n == 0) return 1;
    return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : 1;
  }
}

/* Runs the loop until the server closes fd (then returns the seconds it took) or until
 * GIVE_UP_S; `trickle`, when set, is sent a byte at a time, one per turn of 50 ms. */
static double until_closed(struct event_base *base, int fd, const char *trickle, char *buf,
                           size_t cap) {
  size_t len = 0;
  buf[0] = '\0';
  double start = now_s();
  while (now_s() - start < GIVE_UP_S) {
    run_for_ms(base, trickle ? 50 : 20);
    if (drain(fd, buf, cap, &len)) return now_s() - start;
    if (trickle && *trickle) {
      ck_assert_int_eq(send(fd, trickle, 1, MSG_NOSIGNAL), 1);
      trickle++;
    }
  }
  return -1;
}

/* 1 when the server closes fd (whatever it sent first) before GIVE_UP_S. */
static int cut_off(struct event_base *base, int fd) {
  char buf[4096];
  return until_closed(base, fd, NULL, buf, sizeof buf) >= 0;
}

/* ---- a bare evhttp server with the deadline: / answers, /stream streams ------------- */

typedef struct {
  struct event_base *base;
  struct evhttp *http;
  ts_head_deadline *d;
  int port;
  int requests;
  struct evhttp_request *stream; /* the open /stream, if any */
} server;

static void on_stream_close(struct evhttp_connection *con, void *arg) {
  (void)con;
  ((server *)arg)->stream = NULL;
}

static void on_request(struct evhttp_request *req, void *arg) {
  server *sv = arg;
  ts_head_deadline_arrived(sv->d, req);
  sv->requests++;
  struct evbuffer *b = evbuffer_new();
  if (!strcmp(evhttp_request_get_uri(req), "/stream")) {
    evhttp_send_reply_start(req, 200, "OK");
    ts_head_deadline_streaming(sv->d, req);
    evhttp_connection_set_closecb(evhttp_request_get_connection(req), on_stream_close, sv);
    sv->stream = req;
    evbuffer_add(b, "first\n", 6);
    evhttp_send_reply_chunk(req, b);
  } else {
    evbuffer_add(b, "ok\n", 3);
    evhttp_send_reply(req, 200, "OK", b);
  }
  evbuffer_free(b);
}

static void server_start(server *sv) {
  memset(sv, 0, sizeof *sv);
  sv->base = event_base_new();
  sv->http = evhttp_new(sv->base);
  ck_assert_ptr_nonnull(sv->http);
  evhttp_set_gencb(sv->http, on_request, sv);
  ck_assert_int_eq(ts_head_deadline_new(sv->http, sv->base, DEADLINE_MS, &sv->d), TS_E_OK);
  struct evhttp_bound_socket *bs = evhttp_bind_socket_with_handle(sv->http, "127.0.0.1", 0);
  ck_assert_ptr_nonnull(bs);
  struct sockaddr_in sa;
  socklen_t sl = sizeof sa;
  ck_assert_int_eq(getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&sa, &sl), 0);
  sv->port = ntohs(sa.sin_port);
}

static void server_stop(server *sv) {
  evhttp_free(sv->http);
  ts_head_deadline_free(sv->d);
  event_base_free(sv->base);
}

/* Sends a whole request and runs the loop until its whole reply is in buf. */
static void exchange(server *sv, int fd, const char *request, const char *want, char *buf,
                     size_t cap) {
  send_all(fd, request);
  size_t len = 0;
  buf[0] = '\0';
  for (double end = now_s() + GIVE_UP_S; !strstr(buf, want) && now_s() < end;) {
    run_for_ms(sv->base, 20);
    ck_assert_msg(!drain(fd, buf, cap, &len) || strstr(buf, want), "closed early: %s", buf);
  }
  ck_assert_msg(strstr(buf, want), "no '%s' in: %s", want, buf);
}

static const char *const late_heads[] = {
    "",                                        /* connected, sent nothing */
    "GET / HTTP/1.1\r\nHost: 127.0",           /* half a head */
    "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n",   /* all but the blank line */
};

START_TEST(test_late_head_closed) {
  server sv;
  server_start(&sv);
  int fd = connect_to(sv.port);
  if (*late_heads[_i]) send_all(fd, late_heads[_i]);
  char buf[4096];
  double t = until_closed(sv.base, fd, NULL, buf, sizeof buf);
  ck_assert_msg(t >= 0, "a late head (%s) kept its connection for %.0f s", late_heads[_i], GIVE_UP_S);
  ck_assert_msg(t >= DEADLINE_MS / 1000.0 - 0.02, "closed after %.3f s, before the deadline", t);
  ck_assert_str_eq(buf, ""); /* closed, not answered */
  ck_assert_int_eq(sv.requests, 0);
  close(fd);
  server_stop(&sv);
}
END_TEST

/* Every byte comes well inside the read timeout; only the deadline ends it. */
START_TEST(test_trickled_head_closed) {
  server sv;
  server_start(&sv);
  int fd = connect_to(sv.port);
  char pad[512];
  snprintf(pad, sizeof pad, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: %0400d", 0);
  char buf[4096];
  double t = until_closed(sv.base, fd, pad, buf, sizeof buf);
  ck_assert_msg(t >= 0, "a trickled head kept its connection for %.0f s", GIVE_UP_S);
  ck_assert_int_eq(sv.requests, 0);
  close(fd);
  server_stop(&sv);
}
END_TEST

/* The next head on a kept-alive connection has its own deadline, from the last reply;
 * an idle kept-alive connection closes the same way. */
START_TEST(test_kept_alive_next_head) {
  server sv;
  server_start(&sv);
  int fd = connect_to(sv.port);
  char buf[4096];
  exchange(&sv, fd, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "ok\n", buf, sizeof buf);
  exchange(&sv, fd, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "ok\n", buf, sizeof buf);
  send_all(fd, "GET / HTTP/1.1\r\nHo");
  ck_assert_msg(cut_off(sv.base, fd), "the third head was not cut off");
  ck_assert_int_eq(sv.requests, 2);
  close(fd);
  fd = connect_to(sv.port);
  exchange(&sv, fd, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "ok\n", buf, sizeof buf);
  ck_assert_msg(cut_off(sv.base, fd), "an idle kept-alive connection stayed");
  close(fd);
  server_stop(&sv);
}
END_TEST

/* A head that arrives in time is answered however long it took within the deadline,
 * and a connection closed by its client mid-head is let go. */
START_TEST(test_timely_and_abandoned_heads) {
  server sv;
  server_start(&sv);
  int fd = connect_to(sv.port);
  char buf[4096];
  send_all(fd, "GET / HTTP/1.1\r\n");
  run_for_ms(sv.base, 50);
  exchange(&sv, fd, "Host: 127.0.0.1\r\nConnection: close\r\n\r\n", "ok\n", buf, sizeof buf);
  close(fd);
  int gone = connect_to(sv.port);
  send_all(gone, "GET / HT");
  run_for_ms(sv.base, 50);
  close(gone);
  run_for_ms(sv.base, DEADLINE_MS + 200); /* its deadline passes with nothing to close */
  ck_assert_int_eq(sv.requests, 1);
  /* the server still answers */
  fd = connect_to(sv.port);
  exchange(&sv, fd, "GET / HTTP/1.0\r\n\r\n", "ok\n", buf, sizeof buf);
  close(fd);
  server_stop(&sv);
}
END_TEST

/* Stopping the server while heads are awaited, on fresh and kept-alive connections,
 * frees everything (the sanitizer run checks for leaks). */
START_TEST(test_free_while_waiting) {
  server sv;
  server_start(&sv);
  int a = connect_to(sv.port), b = connect_to(sv.port);
  char buf[4096];
  exchange(&sv, b, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "ok\n", buf, sizeof buf);
  send_all(a, "GET /");
  run_for_ms(sv.base, 50);
  server_stop(&sv);
  close(a);
  close(b);
}
END_TEST

/* A stream whose client sends nothing, and for a while takes nothing either (far more
 * is queued than the sockets hold), outlives many deadlines: then the client reads it
 * all, and the stream ends normally. The connection's timeouts are back for its next
 * head. */
enum { BIG = 16 << 20 };

START_TEST(test_stream_outlives_deadline) {
  server sv;
  server_start(&sv);
  int fd = loopback_connect(sv.port, 4096, 1); /* a small window: writes stall at once */
  char buf[8192];
  exchange(&sv, fd, "GET /stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "first\n", buf, sizeof buf);
  ck_assert_ptr_nonnull(sv.stream);
  struct evbuffer *b = evbuffer_new();
  char *big = malloc(BIG);
  memset(big, 'x', BIG);
  evbuffer_add(b, big, BIG);
  free(big);
  evhttp_send_reply_chunk(sv.stream, b);
  run_for_ms(sv.base, 5 * DEADLINE_MS); /* the client reads nothing meanwhile */
  ck_assert_ptr_nonnull(sv.stream);
  evbuffer_add(b, "later\n", 6);
  evhttp_send_reply_chunk(sv.stream, b);
  evbuffer_free(b);
  evhttp_connection_set_closecb(evhttp_request_get_connection(sv.stream), NULL, NULL);
  evhttp_send_reply_end(sv.stream);
  sv.stream = NULL;
  size_t got = 0;
  char tail[64] = "";
  int closed = 0;
  for (double end = now_s() + GIVE_UP_S; !strstr(tail, "0\r\n\r\n") && !closed && now_s() < end;) {
    run_for_ms(sv.base, 5);
    char chunk[65536];
    ssize_t n;
    while ((n = recv(fd, chunk, sizeof chunk, 0)) > 0) {
      got += (size_t)n;
      size_t keep = (size_t)n < sizeof tail - 1 ? (size_t)n : sizeof tail - 1;
      size_t old = strlen(tail);
      if (old + keep > sizeof tail - 1) {
        size_t drop = old + keep - (sizeof tail - 1);
        memmove(tail, tail + drop, old - drop + 1);
        old -= drop;
      }
      memcpy(tail + old, chunk + n - keep, keep);
      tail[old + keep] = '\0';
    }
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) closed = 1;
  }
  ck_assert_msg(got > BIG && strstr(tail, "later\n") && strstr(tail, "0\r\n\r\n"),
                "the stream was cut: %zu bytes of %d, ending '%s'", got, BIG, tail);
  ck_assert_msg(cut_off(sv.base, fd), "after the stream, the idle connection stayed");
  close(fd);
  server_stop(&sv);
}
END_TEST

/* ---- the event endpoint (net/serve.h) uses it --------------------------------------- */

START_TEST(test_endpoint) {
  struct event_base *base = event_base_new();
  ts_serve_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.head_timeout_ms = DEADLINE_MS;
  cfg.heartbeat_ms = 3600000; /* no bytes but the events */
  ts_serve *srv;
  char err[256];
  ck_assert_int_eq(ts_serve_new(base, &cfg, &srv, err, sizeof err), TS_E_OK);
  int late = connect_to(ts_serve_port(srv));
  send_all(late, "GET /threads HTTP/1.1\r\nHost: 127.0");
  int fd = connect_to(ts_serve_port(srv));
  send_all(fd, "GET /threads/t1/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  char buf[8192];
  ck_assert_msg(cut_off(base, late), "a late head kept its connection");
  run_for_ms(base, 5 * DEADLINE_MS);
  size_t len = 0;
  buf[0] = '\0';
  ck_assert_msg(!drain(fd, buf, sizeof buf, &len), "the event stream was closed: %s", buf);
  const char *ev = "{\"type\":\"turn_started\",\"seq\":1,\"thread\":\"t1\"}";
  ts_serve_publish(srv, "t1", 2, 1, ev, strlen(ev));
  for (double end = now_s() + GIVE_UP_S; !strstr(buf, "turn_started") && now_s() < end;) {
    run_for_ms(base, 20);
    ck_assert_msg(!drain(fd, buf, sizeof buf, &len), "the event stream was closed: %s", buf);
  }
  ck_assert_msg(strstr(buf, "id: 1\n") && strstr(buf, "turn_started"), "%s", buf);
  close(late);
  close(fd);
  ts_serve_free(srv);
  event_base_free(base);
}
END_TEST

int main(void) {
  Suite *s = suite_create("head_deadline");
  TCase *tc = ts_test_tcase(s, "core", 120);
  tcase_add_loop_test(tc, test_late_head_closed, 0, (int)(sizeof late_heads / sizeof late_heads[0]));
  tcase_add_test(tc, test_trickled_head_closed);
  tcase_add_test(tc, test_kept_alive_next_head);
  tcase_add_test(tc, test_timely_and_abandoned_heads);
  tcase_add_test(tc, test_free_while_waiting);
  tcase_add_test(tc, test_stream_outlives_deadline);
  tcase_add_test(tc, test_endpoint);
  return ts_test_run(s, 0);
}
