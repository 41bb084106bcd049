/*
 * replay_play_test.c: ts_replay_play (agent/replay_model.h), the one player of recorded
 * replies: by SSE event at a rate (the bytes handed out unchanged, one event a piece), and
 * at recorded times (the pieces a times file names, each no earlier than its time after the
 * start); malformed times files and unreadable recordings are refused before anything is
 * fed; a feeder that stops is not fed again.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/replay_model.h"
#include "base/clock.h"
#include "support/runner.h"
#include "support/tempdir.h"

static char dir[64];
static void setup(void) { ts_test_tempdir(dir, sizeof dir, "replay-play"); }
static void teardown(void) { ts_test_rm_rf(dir); }

typedef struct {
  size_t sizes[64];
  double at[64];
  int n, stop_after;
  double t0;
  char all[4096];
  size_t len;
} pieces;

static int take(void *user, char *buf, size_t len) {
  pieces *p = user;
  p->sizes[p->n] = len;
  p->at[p->n++] = ts_clock_ms() - p->t0;
  memcpy(p->all + p->len, buf, len);
  p->len += len;
  return p->stop_after && p->n >= p->stop_after;
}

static const char REC[] = "data: {\"a\":1}\n\ndata: {\"b\":2}\r\n\r\ndata: {\"c\":3}\n\ntail";

START_TEST(by_event) {
  ts_test_put(ts_test_at(dir, "r.sse"), REC);
  pieces p = {.t0 = ts_clock_ms()};
  char why[256] = "";
  ck_assert_int_eq(ts_replay_play(ts_test_at(dir, "r.sse"), 0, NULL, take, &p, NULL, why,
                                  sizeof why), 0);
  ck_assert_int_eq(p.n, 4); /* three events and the unterminated rest */
  ck_assert_uint_eq(p.sizes[0], strlen("data: {\"a\":1}\n\n"));
  ck_assert_uint_eq(p.sizes[1], strlen("data: {\"b\":2}\r\n\r\n"));
  ck_assert_uint_eq(p.sizes[3], 4);
  ck_assert_uint_eq(p.len, sizeof REC - 1);
  ck_assert(!memcmp(p.all, REC, p.len));
  /* a feeder that stops is not fed again */
  pieces q = {.stop_after = 2, .t0 = ts_clock_ms()};
  ck_assert_int_eq(ts_replay_play(ts_test_at(dir, "r.sse"), 0, NULL, take, &q, NULL, why,
                                  sizeof why), 0);
  ck_assert_int_eq(q.n, 2);
}
END_TEST

START_TEST(recorded_times) {
  ts_test_put(ts_test_at(dir, "r.sse"), REC);
  /* 10 bytes at once, up to 30 after 300 ms, the rest (to the end) after 600 ms */
  char times[64];
  snprintf(times, sizeof times, "0 10\n300000 30\n600000 %zu\n", sizeof REC - 1);
  ts_test_put(ts_test_at(dir, "r.sse.times"), times);
  pieces p = {.t0 = ts_clock_ms()};
  char why[256] = "";
  ck_assert_int_eq(ts_replay_play(ts_test_at(dir, "r.sse"), 100, ts_test_at(dir, "r.sse.times"),
                                  take, &p, NULL, why, sizeof why), 0);
  ck_assert_int_eq(p.n, 3);
  ck_assert_uint_eq(p.sizes[0], 10);
  ck_assert_uint_eq(p.sizes[1], 20);
  ck_assert_uint_eq(p.sizes[2], sizeof REC - 1 - 30);
  /* never early (a loaded machine only makes them later) */
  ck_assert_msg(p.at[1] >= 300 - 1 && p.at[2] >= 600 - 1, "%g %g", p.at[1], p.at[2]);
  ck_assert(!memcmp(p.all, REC, p.len));
}
END_TEST

START_TEST(refused) {
  ts_test_put(ts_test_at(dir, "r.sse"), REC);
  static const struct {
    int line;
    const char *times, *says;
  } rows[] = {
      {__LINE__, "10\n", ":1: want"},                /* one number */
      {__LINE__, "0 10\n5 5\n", ":2: want"},         /* offsets must grow */
      {__LINE__, "9 10\n5 20\n", ":2: want"},        /* times must not go back */
      {__LINE__, "0 99999\n", ":1: want"},           /* past the recording */
      {__LINE__, "0 10 x\n", ":1: want"},            /* trailing junk */
      {__LINE__, "-1 10\n", ":1: want"},             /* strtoull would take it */
      {__LINE__, "0 -10\n", ":1: want"},
      {__LINE__, "3600000001 10\n", ":1: want"},     /* past an hour */
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    ts_test_put(ts_test_at(dir, "bad.times"), rows[i].times);
    pieces p = {.t0 = ts_clock_ms()};
    char why[512] = "";
    int rc = ts_replay_play(ts_test_at(dir, "r.sse"), 0, ts_test_at(dir, "bad.times"), take, &p,
                            NULL, why, sizeof why);
    ck_assert_msg(rc == -1 && p.n == 0 && strstr(why, rows[i].says), "line %d: %d %s",
                  rows[i].line, rc, why);
  }
  pieces p = {.n = 0};
  char why[512] = "";
  ck_assert_int_eq(ts_replay_play(ts_test_at(dir, "none.sse"), 0, NULL, take, &p, NULL, why,
                                  sizeof why), -1);
  ck_assert_msg(strstr(why, "cannot read") && p.n == 0, "%s", why);
  ck_assert_int_eq(ts_replay_play(ts_test_at(dir, "r.sse"), 0, ts_test_at(dir, "none.times"),
                                  take, &p, NULL, why, sizeof why), -1);
  ck_assert_msg(strstr(why, "none.times") && p.n == 0, "%s", why);
}
END_TEST

int main(void) {
  Suite *s = suite_create("replay_play");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, by_event);
  tcase_add_test(tc, recorded_times);
  tcase_add_test(tc, refused);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
