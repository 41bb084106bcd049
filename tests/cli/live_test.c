/*
 * live_test.c: the terminal live view (cli/live.c), fed thread events as `run` feeds it:
 * lines come out in event order (the model's text, each call, the turn's line after its
 * calls even when their results come after it), each call's result or error is shown,
 * and nothing is lost when everything ends. The screen is captured from standard output
 * with ANSI sequences stripped and only the final lines kept.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/live.h"
#include "support/runner.h"

/* Runs events (one JSON object per line) through a view with colours off; returns what a
 * terminal would finally show, one line each. */
static char *screen(const char *events, int executes) {
  fflush(stdout);
  FILE *cap = tmpfile();
  ck_assert_ptr_nonnull(cap);
  int saved = dup(1);
  dup2(fileno(cap), 1);
  setenv("NO_COLOR", "1", 1);
  ts_live w;
  ck_assert_int_eq(ts_live_init(&w), 0);
  w.executes = executes;
  for (const char *p = events; *p;) {
    const char *nl = strchr(p, '\n');
    ts_live_event(&w, p, (size_t)(nl - p));
    ts_live_tick(&w);
    p = nl + 1;
  }
  ts_live_fini(&w);
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  /* Replay the terminal: "\033[NA" moves up N lines, "\r\033[2K" clears, "\033[J" clears
   * below; each "\n" ends a line. */
  rewind(cap);
  static char lines[256][512];
  int n = 0, row = 0, c;
  size_t col = 0;
  memset(lines, 0, sizeof lines);
  while ((c = fgetc(cap)) != EOF) {
    if (c == '\033') {
      int d = fgetc(cap), num = 0;
      if (d != '[') continue;
      while ((d = fgetc(cap)) >= '0' && d <= '9') num = num * 10 + (d - '0');
      if (d == 'A') row -= num, col = 0;
      else if (d == 'K') lines[row][0] = '\0', col = 0;
      else if (d == 'J') {
        for (int r = row; r < 256; r++) lines[r][0] = '\0';
        if (n > row) n = row;
      }
    } else if (c == '\r') {
      col = 0;
    } else if (c == '\n') {
      row++;
      if (row > n) n = row;
      col = 0;
    } else if (col < 511) {
      lines[row][col++] = (char)c;
      lines[row][col] = '\0';
    }
  }
  fclose(cap);
  size_t cap_out = 256 * 512;
  char *out = calloc(1, cap_out);
  for (int r = 0; r < n; r++) {
    strcat(out, lines[r]);
    strcat(out, "\n");
  }
  return out;
}

#define EV(type, rest) "{\"v\":1,\"type\":\"" type "\",\"thread\":\"t\",\"seq\":1,\"offset\":0" rest "}\n"
#define C0 ",\"call_id\":\"c0\",\"tool\":\"write_file\",\"index\":0,\"turn\":1"

START_TEST(test_run_order) {
  char *s = screen(EV("text_delta", ",\"text\":\"Writing \"") EV("text_delta", ",\"text\":\"it.\"")
                       EV("tool_call_started", C0 ",\"progress\":\"writing a.txt\"")
                       EV("tool_call_heartbeat", C0 ",\"bytes\":4096")
                       EV("tool_call_ready", C0 ",\"arguments\":{\"path\":\"a.txt\"}")
                       EV("turn_finished", ",\"stop_reason\":\"tool_calls\"")
                       EV("tool_execution_started", C0)
                       EV("tool_result", C0 ",\"is_error\":false,\"duration_ms\":1.500,\"result\":{\"bytes\":5}")
                       EV("text_delta", ",\"text\":\"Done.\"")
                       EV("turn_finished", ",\"stop_reason\":\"stop\""),
                   1);
  const char *want = "Writing it.\n"
                     "done    write_file #0 \"writing a.txt\"  1.500 ms  -> {\"bytes\":5}\n"
                     "turn finished (t): tool_calls\n"
                     "Done.\n"
                     "turn finished (t): stop\n";
  ck_assert_str_eq(s, want);
  free(s);
}
END_TEST

START_TEST(test_errors_and_no_executor) {
  char *s = screen(EV("tool_call_started", C0)
                       EV("tool_call_error", C0 ",\"code\":\"tap_incomplete\",\"error\":\"cut short\"")
                       EV("tool_call_started", ",\"call_id\":\"c1\",\"tool\":\"t\",\"index\":1,\"turn\":1")
                       EV("tool_call_ready", ",\"call_id\":\"c1\",\"tool\":\"t\",\"index\":1,\"turn\":1,\"arguments\":{}")
                       EV("stream_error", ",\"code\":\"ms_truncated\",\"error\":\"ended early\""),
                   0);
  const char *want = "error   write_file #0   -> cut short\n"
                     "ready   t #1   2 bytes of arguments\n"
                     "stream error (t): ended early\n";
  ck_assert_str_eq(s, want);
  free(s);
}
END_TEST

/* A tree: a parent's call creates a child, whose lines are indented under it with its
 * name; a grandchild goes one level deeper; a queued message and each end are lines too. */
#define TEV(type, thread, parent, rest)                                                       \
  "{\"v\":1,\"type\":\"" type "\",\"thread\":\"" thread "\"" parent ",\"seq\":1,\"offset\":0" rest "}\n"
#define P(x) ",\"parent\":\"" x "\""
#define SC ",\"call_id\":\"s0\",\"tool\":\"subagent_create\",\"index\":0,\"turn\":1"
#define KC ",\"call_id\":\"k0\",\"tool\":\"search\",\"index\":0,\"turn\":1"

START_TEST(test_tree) {
  char *s = screen(
      TEV("tool_call_started", "p", "", SC)
      TEV("tool_call_ready", "p", "", SC ",\"arguments\":{}")
      TEV("tool_execution_started", "p", "", SC)
      TEV("thread_created", "p/t1c0", P("p"), ",\"agent\":\"researcher\",\"name\":\"alpha\","
          "\"relationship\":\"research\",\"blocking\":true")
      TEV("subagent_message", "p/t1c0", P("p"), ",\"from\":\"p\",\"inbox_seq\":1,\"message\":\"look\"")
      TEV("text_delta", "p/t1c0", P("p"), ",\"text\":\"Searching.\"")
      TEV("tool_call_started", "p/t1c0", P("p"), KC)
      TEV("tool_call_ready", "p/t1c0", P("p"), KC ",\"arguments\":{}")
      TEV("thread_created", "p/t1c0/t1c0", P("p/t1c0"), ",\"agent\":\"helper\",\"name\":\"gamma\","
          "\"relationship\":\"help\",\"blocking\":false")
      TEV("tool_execution_started", "p/t1c0", P("p"), KC)
      TEV("tool_result", "p/t1c0", P("p"), KC ",\"is_error\":false,\"duration_ms\":2.000,\"result\":1")
      TEV("thread_finished", "p/t1c0/t1c0", P("p/t1c0"), ",\"status\":\"failed\"")
      TEV("thread_finished", "p/t1c0", P("p"), ",\"status\":\"done\",\"outcome\":{\"text\":\"found\"}")
      TEV("tool_result", "p", "", SC ",\"is_error\":false,\"duration_ms\":9.000,\"result\":{}")
      TEV("turn_finished", "p", "", ",\"stop_reason\":\"tool_calls\""),
      1);
  /* the call's line stays where it started (running while its child works below it) */
  const char *want =
      "done    subagent_create #0   9.000 ms  -> {}\n"
      "  alpha: + p/t1c0: agent researcher (research, blocking), under p\n"
      "  alpha: < message from p: look\n"
      "  alpha: Searching.\n"
      "  alpha: done    search #0   2.000 ms  -> 1\n"
      "    gamma: + p/t1c0/t1c0: agent helper (help, non-blocking), under p/t1c0\n"
      "    gamma: = finished: failed\n"
      "  alpha: = finished: done: found\n"
      "turn finished (p): tool_calls\n";
  ck_assert_str_eq(s, want);
  free(s);
}
END_TEST

int main(void) {
  Suite *s = suite_create("live");
  TCase *tc = tcase_create("live");
  tcase_add_test(tc, test_run_order);
  tcase_add_test(tc, test_errors_and_no_executor);
  tcase_add_test(tc, test_tree);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
