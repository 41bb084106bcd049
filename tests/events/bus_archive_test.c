/*
 * bus_archive_test.c: the replay service backed by an archive (the durable store in
 * `toolstream run`): a subscriber that joins after the in-memory history has dropped the
 * early events still gets every event, in order, exactly once, and a thread the history
 * never held is served from the archive; without an archive the same subscriber is told
 * those events are gone.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "events/bus_pub.h"
#include "events/bus_sub.h"
#include "base/error.h"
#include "support/test_support.h"

#define N 300

typedef struct {
  char thread[16];
  char json[N + 1][128];
  size_t len[N + 1];
  uint64_t n;
  int calls;
} archive;

static int archive_fn(void *user, const char *thread, size_t thread_len, uint64_t after, size_t max,
                      int (*put)(void *, uint64_t, const char *, size_t), void *ctx,
                      uint64_t *newest) {
  archive *a = user;
  a->calls++;
  *newest = 0;
  if (thread_len != strlen(a->thread) || memcmp(thread, a->thread, thread_len)) return 0;
  *newest = a->n;
  int k = 0;
  for (uint64_t s = after + 1; s <= a->n && (size_t)k < max; s++, k++)
    if (put(ctx, s, a->json[s], a->len[s])) break;
  return k;
}

static int make_json(char *buf, size_t cap, const char *thread, uint64_t seq) {
  return snprintf(buf, cap, "{\"v\":1,\"type\":\"text_delta\",\"thread\":\"%s\",\"seq\":%llu,\"text\":\"x\"}",
                  thread, (unsigned long long)seq);
}

static void urls(char *pub, char *rep, size_t cap) {
  static int n;
  n++;
  snprintf(pub, cap, "ipc:///tmp/ts-archive-%d-%d", (int)getpid(), n);
  snprintf(rep, cap, "ipc:///tmp/ts-archive-%d-%d-r", (int)getpid(), n);
}

/* Publishes N events on "a" (history holds 16), archiving each; a late subscriber reads. */
static void run_case(int with_archive, uint64_t *events, uint64_t *gone, int *order_ok) {
  static archive arc;
  memset(&arc, 0, sizeof arc);
  snprintf(arc.thread, sizeof arc.thread, "a");
  char pub[128], rep[128];
  urls(pub, rep, sizeof pub);
  ts_pub_opts po = {.history_events = 16};
  if (with_archive) {
    po.archive = archive_fn;
    po.archive_user = &arc;
  }
  ts_pub *p;
  ck_assert_int_eq(ts_pub_open(pub, rep, &po, &p), 0);
  for (uint64_t s = 1; s <= N; s++) {
    arc.len[s] = (size_t)make_json(arc.json[s], sizeof arc.json[s], "a", s);
    arc.n = s;
    ck_assert_int_eq(ts_pub_send(p, "a", 1, s, arc.json[s], arc.len[s]), 0);
  }
  ts_sub_opts so = {.from = TS_SUB_FROM_START};
  ts_sub *s;
  ck_assert_int_eq(ts_sub_open(pub, rep, "a", &so, &s), 0);
  uint64_t next = 1;
  *events = *gone = 0;
  *order_ok = 1;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (next > N || t1.tv_sec - t0.tv_sec > 20) break;
    ts_sub_item it;
    int r = ts_sub_next(s, &it, 100);
    ck_assert_int_ge(r, 0);
    if (r == 0) continue;
    if (it.seq != next) *order_ok = 0;
    if (it.kind == TS_SUB_GONE) {
      *gone += it.seq_end - it.seq + 1;
      next = it.seq_end + 1;
    } else {
      if (it.json_len != arc.len[it.seq] || memcmp(it.json, arc.json[it.seq], it.json_len)) *order_ok = 0;
      (*events)++;
      next = it.seq + 1;
    }
  }
  ts_pub_close(p);
  ts_sub_close(s);
  if (with_archive) ck_assert_int_gt(arc.calls, 0);
}

START_TEST(test_archive_fills_what_history_dropped) {
  uint64_t events, gone;
  int ok;
  run_case(1, &events, &gone, &ok);
  ck_assert_msg(ok, "order or content wrong");
  ck_assert_uint_eq(gone, 0);
  ck_assert_uint_eq(events, N);
  /* the control: without the archive the early events are reported gone */
  run_case(0, &events, &gone, &ok);
  ck_assert_msg(ok, "order wrong");
  ck_assert_uint_gt(gone, 0);
  ck_assert_uint_eq(events + gone, N);
}
END_TEST

/* A thread the history never held (the publisher restarted, say) is served whole. */
START_TEST(test_archive_serves_unknown_thread) {
  static archive arc;
  memset(&arc, 0, sizeof arc);
  snprintf(arc.thread, sizeof arc.thread, "old");
  for (uint64_t s = 1; s <= 40; s++) {
    arc.len[s] = (size_t)make_json(arc.json[s], sizeof arc.json[s], "old", s);
    arc.n = s;
  }
  char pub[128], rep[128];
  urls(pub, rep, sizeof pub);
  ts_pub_opts po = {.archive = archive_fn, .archive_user = &arc};
  ts_pub *p;
  ck_assert_int_eq(ts_pub_open(pub, rep, &po, &p), 0);
  ts_sub_opts so = {.from = TS_SUB_FROM_START};
  ts_sub *s;
  ck_assert_int_eq(ts_sub_open(pub, rep, "old", &so, &s), 0);
  uint64_t next = 1;
  for (int tries = 0; next <= 40 && tries < 100; tries++) {
    ts_sub_item it;
    int r = ts_sub_next(s, &it, 100);
    ck_assert_int_ge(r, 0);
    if (r == 0) continue;
    ck_assert_int_eq(it.kind, TS_SUB_EVENT);
    ck_assert_uint_eq(it.seq, next);
    next++;
  }
  ck_assert_uint_eq(next, 41);
  ts_pub_close(p);
  ts_sub_close(s);
}
END_TEST

int main(void) {
  Suite *su = suite_create("bus_archive");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 90);
  tcase_add_test(tc, test_archive_fills_what_history_dropped);
  tcase_add_test(tc, test_archive_serves_unknown_thread);
  suite_add_tcase(su, tc);
  SRunner *sr = srunner_create(su);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
