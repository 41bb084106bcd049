/*
 * bus_cli_test.c: `toolstream tap --pub` and `toolstream sub` as a user runs them, in
 * separate processes over ipc://.
 *
 * The end-to-end test paces a model stream into tap (a few bytes at a time, with pauses)
 * and holds back the end of the call's arguments until `sub`, in another process, has
 * printed `tool_call_started` with the progress label: if sub only learned of the call
 * once its arguments were complete, the test would time out waiting.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support/proc.h"
#include "support/runner.h"
#include "support/sse_text.h"
#include "support/test_support.h"

#define BINARY TS_BINARY_DIR "/toolstream"

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static void urls(char *pub, char *rep, size_t cap) {
  static int n;
  n++;
  snprintf(pub, cap, "ipc:///tmp/ts-cli-bus-%d-%d", (int)getpid(), n);
  snprintf(rep, cap, "ipc:///tmp/ts-cli-bus-%d-%d-replay", (int)getpid(), n);
}


/* Waits until `needle` shows up in the child's stdout (or the time runs out). */
static int wait_for(child *c, result *r, const char *needle, int ms) {
  double end = now_ms() + ms;
  while (now_ms() < end) {
    if (r->out.p && strstr(r->out.p, needle)) return 1;
    if (pump(c, r, 20) == 0) break;
  }
  return r->out.p && strstr(r->out.p, needle) != NULL;
}

static int count_of(const char *s, const char *needle) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, needle)); p++) n++;
  return n;
}

START_TEST(test_started_reaches_subscriber_before_arguments_complete) {
  char pub[128], rep[128];
  urls(pub, rep, sizeof pub);
  signal(SIGPIPE, SIG_IGN);
  const char *sub_argv[] = {"toolstream", "sub", pub, "--replay", rep, "--thread", "e2e", "--json",
                            "--wait", "--idle-exit", "2000", NULL};
  result sr;
  memset(&sr, 0, sizeof sr);
  child sc = spawn_bin(BINARY, sub_argv, 0);
  const char *tap_argv[] = {"toolstream", "tap", "--pub", pub, "--replay", rep, "--thread", "e2e",
                            "--progress-arg", "write_file=description", "--linger", "1500",
                            NULL};
  result tr;
  memset(&tr, 0, sizeof tr);
  child tc = spawn_bin(BINARY, tap_argv, 1);

  /* The head of the arguments, paced like a model: a few bytes every 5 ms. */
  const char *head[] = {"{\\\"descr", "iption\\\": \\\"writ", "ing index", ".html\\\"", ", \\\"content\\\": \\\"<ht", "ml>"};
  for (size_t i = 0; i < sizeof head / sizeof head[0]; i++) {
    sb b = {0};
    ts_test_chat_args_chunk(&b, i == 0, head[i]);
    feed_all(&tc, &tr, b.p, b.len);
    sb_free(&b);
    sleep_ms(5);
  }
  /* Nothing more until the subscriber has shown the label. */
  int seen = wait_for(&sc, &sr, "\"type\":\"tool_call_started\"", 15000);
  ck_assert_msg(seen, "sub printed no tool_call_started while the arguments were incomplete; "
                      "sub stdout: %s\nsub stderr: %s",
                sb_str(&sr.out), sb_str(&sr.err));
  ck_assert_msg(strstr(sr.out.p, "\"progress\":\"writing index.html\"") != NULL, "%s", sr.out.p);
  ck_assert_msg(strstr(sr.out.p, "tool_call_ready") == NULL, "ready before the end was sent");

  /* The rest of the content, then the end of the turn. */
  for (int i = 0; i < 40; i++) {
    sb b = {0};
    ts_test_chat_args_chunk(&b, 0, "<p>line</p>\\\\n");
    feed_all(&tc, &tr, b.p, b.len);
    sb_free(&b);
    sleep_ms(2);
  }
  sb b = {0};
  ts_test_chat_args_chunk(&b, 0, "</html>\\\"}");
  sb_puts(&b, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
              "data: [DONE]\n\n");
  feed_all(&tc, &tr, b.p, b.len);
  sb_free(&b);
  finish_child(&tc, &tr);
  ck_assert_msg(tr.status == 0, "tap exit %d: %s", tr.status, sb_str(&tr.err));
  finish_child(&sc, &sr);
  ck_assert_msg(sr.status == 0, "sub exit %d: %s", sr.status, sb_str(&sr.err));
  /* Every event tap printed reached sub, once, in order: the outputs are identical. */
  ck_assert_str_eq(sb_str(&sr.out), sb_str(&tr.out));
  ck_assert_int_eq(count_of(sr.out.p, "\"type\":\"tool_call_started\""), 1);
  ck_assert_msg(count_of(sr.out.p, "\"type\":\"tool_call_ready\"") == 1, "%s", sr.out.p);
  ck_assert_int_eq(count_of(sr.out.p, "\"type\":\"turn_finished\""), 1);
  result_free(&sr);
  result_free(&tr);
}
END_TEST

/* A subscriber that joins after everything was published catches up from replay. */
START_TEST(test_late_subscriber_catches_up) {
  char pub[128], rep[128];
  urls(pub, rep, sizeof pub);
  char stream[4096] = "";
  size_t n = 0;
  sb b = {0};
  ts_test_chat_args_chunk(&b, 1, "{\\\"description\\\":\\\"late\\\",\\\"x\\\":1}");
  sb_puts(&b, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
              "data: [DONE]\n\n");
  n = b.len < sizeof stream ? b.len : sizeof stream - 1;
  memcpy(stream, b.p, n);
  sb_free(&b);
  const char *tap_argv[] = {"toolstream", "tap", "--pub", pub, "--replay", rep, "--thread", "late",
                            "--progress-arg", "write_file=description", "--linger", "4000",
                            NULL};
  result tr;
  memset(&tr, 0, sizeof tr);
  child tc = spawn_bin(BINARY, tap_argv, 1);
  feed_all(&tc, &tr, stream, n);
  close(tc.in); /* input ends now; tap lingers serving replay */
  tc.in = -1;
  sleep_ms(500);
  const char *sub_argv[] = {"toolstream", "sub", pub, "--replay", rep, "--json", "--count", "3", NULL};
  result sr = run_bin(BINARY, sub_argv, NULL, 0);
  ck_assert_msg(sr.status == 0, "sub exit %d: %s", sr.status, sb_str(&sr.err));
  ck_assert_int_eq(count_of(sr.out.p, "\"seq\":1,"), 1);
  ck_assert_int_eq(count_of(sr.out.p, "\"seq\":3,"), 1);
  ck_assert_ptr_nonnull(strstr(sr.out.p, "\"progress\":\"late\""));
  finish_child(&tc, &tr);
  ck_assert_int_eq(tr.status, 0);
  result_free(&sr);
  result_free(&tr);
}
END_TEST

START_TEST(test_sub_cannot_connect) {
  const char *argv[] = {"toolstream", "sub", "ipc:///tmp/ts-cli-bus-nobody-here", "--connect-timeout", "300",
                        NULL};
  double t0 = now_ms();
  result r = run_bin(BINARY, argv, NULL, 0);
  ck_assert_int_eq(r.status, 1);
  ck_assert_msg(strstr(sb_str(&r.err), "cannot connect") != NULL, "%s", sb_str(&r.err));
  ck_assert_int_eq(count_of(sb_str(&r.err), "\n"), 1);
  ck_assert_msg(now_ms() - t0 < 5000, "took %.0f ms", now_ms() - t0);
  result_free(&r);
}
END_TEST

START_TEST(test_sub_ctrl_c_exits_cleanly) {
  char pub[128], rep[128];
  urls(pub, rep, sizeof pub);
  const char *argv[] = {"toolstream", "sub", pub, "--wait", "--json", NULL};
  result r;
  memset(&r, 0, sizeof r);
  child c = spawn_bin(BINARY, argv, 0);
  sleep_ms(300);
  kill(c.pid, SIGINT);
  double t0 = now_ms();
  finish_child(&c, &r);
  ck_assert_int_eq(r.status, 0);
  ck_assert_msg(now_ms() - t0 < 2000, "took %.0f ms to stop", now_ms() - t0);
  result_free(&r);
}
END_TEST

/* The preloaded nng_close that never returns (libnng's close hanging, nng issue 1543,
 * made certain) for the children spawned between these two; a sanitized build's runtime
 * is then not first in the list: allowed for them. */
static char saved_asan[1024];
static int had_asan;

static void preload_close_hang(void) {
  const char *asan = getenv("ASAN_OPTIONS");
  char opts[1100];
  had_asan = asan != NULL;
  snprintf(saved_asan, sizeof saved_asan, "%s", asan ? asan : "");
  snprintf(opts, sizeof opts, "%s%sverify_asan_link_order=0", saved_asan, saved_asan[0] ? ":" : "");
  setenv("ASAN_OPTIONS", opts, 1);
  setenv("LD_PRELOAD", TS_NNG_CLOSE_HANG, 1);
}

static void unpreload(void) {
  unsetenv("LD_PRELOAD");
  if (had_asan) setenv("ASAN_OPTIONS", saved_asan, 1);
  else unsetenv("ASAN_OPTIONS");
}

/* `sub` stopped with Ctrl-C still exits, with its status, soon after, although libnng's
 * close never returns. */
START_TEST(test_sub_exits_when_close_hangs) {
  char pub[128], rep[128];
  urls(pub, rep, sizeof pub);
  const char *argv[] = {"toolstream", "sub", pub, "--wait", "--json", NULL};
  result r;
  memset(&r, 0, sizeof r);
  preload_close_hang();
  child c = spawn_bin(BINARY, argv, 0);
  unpreload();
  sleep_ms(300);
  kill(c.pid, SIGINT);
  double t0 = now_ms();
  finish_child(&c, &r);
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, sb_str(&r.err));
  /* the grace is 2 s; the bound only tells an exit from a hang (finish_child waits 60 s) */
  ck_assert_msg(now_ms() - t0 < 30000, "took %.0f ms to stop", now_ms() - t0);
  result_free(&r);
}
END_TEST

/* `tap --pub` at the end of its input exits, with its status and every event printed,
 * although libnng's close of its publisher never returns. */
START_TEST(test_tap_pub_exits_when_close_hangs) {
  char pub[128], rep[128];
  urls(pub, rep, sizeof pub);
  const char *argv[] = {"toolstream", "tap", "--pub", pub, "--replay", rep, NULL};
  sb in = {0};
  ts_test_chat_args_chunk(&in, 1, "{\\\"path\\\": \\\"a\\\"}");
  sb_puts(&in, "data: [DONE]\n\n");
  preload_close_hang();
  double t0 = now_ms();
  result r = run_bin(BINARY, argv, in.p, in.len);
  unpreload();
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, sb_str(&r.err));
  ck_assert_msg(strstr(sb_str(&r.out), "tool_call_ready") != NULL, "%s", sb_str(&r.out));
  ck_assert_msg(now_ms() - t0 < 30000, "took %.0f ms", now_ms() - t0);
  sb_free(&in);
  result_free(&r);
}
END_TEST

static const struct {
  int line;
  const char *label;
  const char *argv[10];
  int status;
  const char *stderr_has;
} usage_rows[] = {
    {__LINE__, "sub without URL", {"toolstream", "sub", NULL}, 2, "URL"},
    {__LINE__, "sub unknown option", {"toolstream", "sub", "ipc:///x", "--bogus", NULL}, 2, "unknown option"},
    {__LINE__, "sub bad count", {"toolstream", "sub", "ipc:///x", "--count", "many", NULL}, 2, "--count"},
    {__LINE__, "sub bad URL", {"toolstream", "sub", "nonsense://x", "--connect-timeout", "100", NULL}, 2, "nonsense"},
    {__LINE__, "tap replay without pub", {"toolstream", "tap", "--replay", "ipc:///x", NULL}, 2, "--pub"},
    {__LINE__, "tap bad pub URL", {"toolstream", "tap", "--pub", "nonsense://x", NULL}, 1, "cannot publish"},
    {__LINE__, "tap thread with a space", {"toolstream", "tap", "--thread", "a b", NULL}, 2, "--thread"},
};

START_TEST(test_usage) {
  for (size_t i = 0; i < sizeof usage_rows / sizeof usage_rows[0]; i++) {
    result r = run_bin(BINARY, usage_rows[i].argv, "", 0);
    ck_assert_msg(r.status == usage_rows[i].status, "line %d (%s): exit %d, want %d: %s",
                  usage_rows[i].line, usage_rows[i].label, r.status, usage_rows[i].status,
                  sb_str(&r.err));
    ck_assert_msg(strstr(sb_str(&r.err), usage_rows[i].stderr_has) != NULL,
                  "line %d (%s): stderr %s", usage_rows[i].line, usage_rows[i].label,
                  sb_str(&r.err));
    ck_assert_msg(r.out.len == 0, "line %d: printed %s", usage_rows[i].line, sb_str(&r.out));
    result_free(&r);
  }
}
END_TEST

START_TEST(test_help) {
  const char *argv[] = {"toolstream", "sub", "--help", NULL};
  result r = run_bin(BINARY, argv, NULL, 0);
  ck_assert_int_eq(r.status, 0);
  const char *opts[] = {"--replay", "--thread", "--json", "--live", "--wait", "--connect-timeout",
                        "--idle-exit", "--count", "--tls-ca", "--tls-server-name", "NO_COLOR"};
  for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
    ck_assert_msg(strstr(sb_str(&r.out), opts[i]) != NULL, "help lacks %s", opts[i]);
  result_free(&r);
  const char *targv[] = {"toolstream", "tap", "--help", NULL};
  r = run_bin(BINARY, targv, NULL, 0);
  const char *topts[] = {"--pub", "--replay", "--tls-cert", "--tls-key", "--linger"};
  for (size_t i = 0; i < sizeof topts / sizeof topts[0]; i++)
    ck_assert_msg(strstr(sb_str(&r.out), topts[i]) != NULL, "tap help lacks %s", topts[i]);
  result_free(&r);
}
END_TEST

int main(void) {
  Suite *s = suite_create("bus_cli");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_started_reaches_subscriber_before_arguments_complete);
  tcase_add_test(tc, test_late_subscriber_catches_up);
  tcase_add_test(tc, test_sub_cannot_connect);
  tcase_add_test(tc, test_sub_ctrl_c_exits_cleanly);
  tcase_add_test(tc, test_sub_exits_when_close_hangs);
  tcase_add_test(tc, test_tap_pub_exits_when_close_hangs);
  tcase_add_test(tc, test_usage);
  tcase_add_test(tc, test_help);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
