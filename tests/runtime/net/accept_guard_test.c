/*
 * accept_guard_test.c: a listener out of file descriptors pauses instead of spinning
 * (net/accept_guard.h), on a listener of our own and on the HTTP event endpoint's (an
 * evhttp listener, whose callbacks carry evhttp's user data, not the guard's).
 *
 * Each test connects its clients first (the kernel queues them on the backlog), then
 * lowers RLIMIT_NOFILE to the lowest free descriptor, so that every accept() fails with
 * EMFILE while the socket stays readable. Without the guard libevent tries again at
 * once: thousands of attempts and of "[warn] Error from accept() call" lines a second.
 * With it, at most one attempt per pause (50 ms and longer) and one line a second. The
 * bounds are counts over a one-second run of the loop: a loaded machine only makes
 * fewer attempts, never more. Then the limit goes back up and the queued clients are
 * accepted (and the endpoint answers one), within a generous deadline. (check runs each
 * test in a child process, so the limit and the redirected stderr stay there.)
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "base/error.h"
#include "net/accept_guard.h"
#include "net/serve.h"
#include "support/loopback.h"
#include "support/runner.h"

enum { CLIENTS = 3 };

static int connect_to(int port) { return loopback_connect(port, 0, 0); }

/* Lowers the soft descriptor limit to the lowest free descriptor: no new one can be made.
 * Returns the old limit. */
static struct rlimit starve(void) {
  struct rlimit old, lim;
  ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
  int fd = dup(0);
  ck_assert_int_ge(fd, 0);
  close(fd);
  lim = old;
  lim.rlim_cur = (rlim_t)fd;
  ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &lim), 0);
  ck_assert_int_eq(dup(0), -1);
  ck_assert_int_eq(errno, EMFILE);
  return old;
}

static void run_for_ms(struct event_base *base, int ms) {
  struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
  event_base_loopexit(base, &tv);
  event_base_dispatch(base);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct {
  int failures, lines, accepted;
  char last[256];
  ts_accept_guard *guard;
} counts;

static void on_report(void *user, const char *line) {
  counts *c = user;
  c->failures++;
  if (line) {
    c->lines++;
    snprintf(c->last, sizeof c->last, "%s", line);
  }
}

static void on_accept(struct evconnlistener *lev, evutil_socket_t fd, struct sockaddr *sa,
                      int len, void *user) {
  (void)lev;
  (void)sa;
  (void)len;
  counts *c = user;
  c->accepted++;
  ts_accept_guard_ok(c->guard);
  close(fd);
}

START_TEST(test_own_listener_pauses) {
  struct event_base *base = event_base_new();
  counts c;
  memset(&c, 0, sizeof c);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  struct evconnlistener *lev =
      evconnlistener_new_bind(base, on_accept, &c, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 16,
                              (struct sockaddr *)&sa, sizeof sa);
  ck_assert_ptr_nonnull(lev);
  ck_assert_int_eq(ts_accept_guard_new(lev, on_report, &c, &c.guard), TS_E_OK);
  struct sockaddr_in bound;
  socklen_t bl = sizeof bound;
  ck_assert_int_eq(getsockname(evconnlistener_get_fd(lev), (struct sockaddr *)&bound, &bl), 0);
  int cl[CLIENTS];
  for (int i = 0; i < CLIENTS; i++) cl[i] = connect_to(ntohs(bound.sin_port));
  struct rlimit old = starve();
  run_for_ms(base, 1000);
  ck_assert_msg(c.failures >= 1 && c.failures <= 40, "%d failed accepts in a second", c.failures);
  ck_assert_msg(c.lines >= 1 && c.lines <= 3, "%d lines in a second", c.lines);
  ck_assert_msg(strstr(c.last, "cannot accept a connection: ") && strstr(c.last, "pausing accepts for"),
                "%s", c.last);
  ck_assert_int_eq(c.accepted, 0);
  ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
  for (double end = now_s() + 20; c.accepted < CLIENTS && now_s() < end;) run_for_ms(base, 100);
  ck_assert_int_eq(c.accepted, CLIENTS);
  for (int i = 0; i < CLIENTS; i++) close(cl[i]);
  ts_accept_guard_free(c.guard);
  evconnlistener_free(lev);
  event_base_free(base);
}
END_TEST

/* The endpoint's listener is evhttp's: its standard error (where libevent warns and the
 * guard reports) goes to a file, whose lines are counted. */
START_TEST(test_endpoint_pauses) {
  struct event_base *base = event_base_new();
  ts_serve_config cfg;
  memset(&cfg, 0, sizeof cfg);
  ts_serve *srv;
  char err[256];
  ck_assert_int_eq(ts_serve_new(base, &cfg, &srv, err, sizeof err), TS_E_OK);
  char path[] = "/tmp/ts-accept-guard-XXXXXX";
  int log = mkstemp(path);
  ck_assert_int_ge(log, 0);
  unlink(path);
  ck_assert_int_eq(dup2(log, 2), 2);
  int cl[CLIENTS];
  for (int i = 0; i < CLIENTS; i++) cl[i] = connect_to(ts_serve_port(srv));
  const char *req = "GET /threads HTTP/1.0\r\n\r\n";
  ck_assert_int_eq(write(cl[0], req, strlen(req)), (ssize_t)strlen(req));
  struct rlimit old = starve();
  run_for_ms(base, 1000);
  ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
  char text[65536];
  ssize_t n = pread(log, text, sizeof text - 1, 0);
  ck_assert_int_ge(n, 0);
  text[n] = '\0';
  int lines = 0;
  for (const char *p = text; (p = strchr(p, '\n')); p++) lines++;
  ck_assert_msg(lines >= 1 && lines <= 3 && !strstr(text, "[warn]") &&
                    strstr(text, "toolstream: event endpoint on port ") &&
                    strstr(text, "cannot accept a connection: "),
                "%d lines:\n%.2000s", lines, text);
  /* accepting resumes: the queued client gets its answer */
  fcntl(cl[0], F_SETFL, O_NONBLOCK);
  char ans[64] = "";
  for (double end = now_s() + 20; !ans[0] && now_s() < end;) {
    run_for_ms(base, 100);
    ssize_t r = read(cl[0], ans, sizeof ans - 1);
    if (r > 0) ans[r] = '\0';
  }
  ck_assert_msg(!strncmp(ans, "HTTP/1.0 200", 12) || !strncmp(ans, "HTTP/1.1 200", 12), "%s", ans);
  for (int i = 0; i < CLIENTS; i++) close(cl[i]);
  ts_serve_free(srv);
  event_base_free(base);
}
END_TEST

int main(void) {
  Suite *s = suite_create("accept_guard");
  TCase *tc = ts_test_tcase(s, "core", 60);
  tcase_add_test(tc, test_own_listener_pauses);
  tcase_add_test(tc, test_endpoint_pauses);
  return ts_test_run(s, 0);
}
