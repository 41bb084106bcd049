/*
 * runcode_cli_test.c: `toolstream runcode` as a user runs it: the JSON result, exit
 * statuses with one line on standard error, code from standard input, input data,
 * Ctrl-C terminating a tight loop, usage errors.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "support/proc.h"
#include "support/runner.h"
#include "support/test_support.h"

#define BINARY TS_BINARY_DIR "/toolstream"

static const struct {
  int line;
  const char *label;
  const char *argv[8];
  const char *stdin_text;
  int status;
  const char *out_has;
  const char *err_has;
} rows[] = {
    {__LINE__, "value and console", {"toolstream", "runcode", "console.log('hi', 2); ({a: [1, 2]})", NULL},
     NULL, 0, "{\"status\":\"ok\",\"value\":{\"a\":[1,2]},\"console\":[\"hi 2\"]}", NULL},
    {__LINE__, "stdin", {"toolstream", "runcode", "-", NULL}, "6 * 7", 0, "\"value\":42", NULL},
    {__LINE__, "input data", {"toolstream", "runcode", "--input", "{\"n\":[1,2,3]}", "input.n.length", NULL},
     NULL, 0, "\"value\":3", NULL},
    {__LINE__, "throw", {"toolstream", "runcode", "throw new Error('nope')", NULL}, NULL, 1,
     "\"status\":\"error\"", "nope"},
    {__LINE__, "syntax error", {"toolstream", "runcode", "let x = ;", NULL}, NULL, 1,
     "\"status\":\"error\"", "SyntaxError"},
    {__LINE__, "timeout", {"toolstream", "runcode", "--timeout-ms", "100", "while (true) {}", NULL}, NULL, 1,
     "\"status\":\"timeout\"", "timeout"},
    {__LINE__, "memory", {"toolstream", "runcode", "--memory-limit", "4m",
     "var s = 'x'; while (true) s = s + s", NULL}, NULL, 1, "\"status\":\"oom\"", "out of memory"},
    {__LINE__, "modern syntax", {"toolstream", "runcode", "const f = (a, b = 2) => a ** b; `${f(3)}`", NULL},
     NULL, 0, "\"value\":\"9\"", NULL},
    {__LINE__, "typescript", {"toolstream", "runcode", "--language", "ts",
     "interface P { x: number }\nconst p: P = { x: 4 };\np.x as number", NULL}, NULL, 0, "\"value\":4", NULL},
    {__LINE__, "top-level await", {"toolstream", "runcode",
     "const v = await new Promise(r => setTimeout(() => r(7), 5)); v * 6", NULL}, NULL, 0, "\"value\":42", NULL},
    {__LINE__, "syntax error position", {"toolstream", "runcode", "const a = 1;\nconst b = a +;", NULL}, NULL, 1,
     "\"status\":\"error\"", "line 2, column 14"},
    {__LINE__, "js refuses types", {"toolstream", "runcode", "--language", "js", "let x: number = 1", NULL}, NULL, 1,
     "\"status\":\"error\"", "SyntaxError"},
    {__LINE__, "bad language", {"toolstream", "runcode", "--language", "python", "1", NULL}, NULL, 2, NULL,
     "--language"},
    {__LINE__, "no require", {"toolstream", "runcode", "require('fs')", NULL}, NULL, 1,
     "\"status\":\"error\"", "require"},
    {__LINE__, "no Duktape", {"toolstream", "runcode", "typeof Duktape", NULL}, NULL, 0,
     "\"value\":\"undefined\"", NULL},
    {__LINE__, "no code", {"toolstream", "runcode", NULL}, NULL, 2, NULL, "no code"},
    {__LINE__, "bad timeout", {"toolstream", "runcode", "--timeout-ms", "soon", "1", NULL}, NULL, 2, NULL,
     "--timeout-ms"},
    {__LINE__, "unknown option", {"toolstream", "runcode", "--bogus", "1", NULL}, NULL, 2, NULL, "unknown"},
};

START_TEST(test_rows) {
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    const char *in = rows[i].stdin_text;
    result r = run_bin(BINARY, rows[i].argv, in, in ? strlen(in) : 0);
    ck_assert_msg(r.status == rows[i].status, "line %d (%s): exit %d: %s", rows[i].line,
                  rows[i].label, r.status, sb_str(&r.err));
    if (rows[i].out_has)
      ck_assert_msg(strstr(sb_str(&r.out), rows[i].out_has) != NULL, "line %d (%s): out %s",
                    rows[i].line, rows[i].label, sb_str(&r.out));
    if (rows[i].err_has)
      ck_assert_msg(strstr(sb_str(&r.err), rows[i].err_has) != NULL, "line %d (%s): err %s",
                    rows[i].line, rows[i].label, sb_str(&r.err));
    if (rows[i].status == 1) {
      const char *e = sb_str(&r.err);
      ck_assert_msg(strchr(e, '\n') == e + strlen(e) - 1, "line %d: not one line: %s", rows[i].line, e);
    }
    result_free(&r);
  }
}
END_TEST

/* Ctrl-C and SIGTERM stop the run within the margin, also inside one long native call
 * (a join over 1e8 elements that once ran for minutes past its deadline). */
START_TEST(test_ctrl_c_terminates) {
  static const struct {
    int sig;
    const char *code, *why;
  } cases[] = {
      {SIGINT, "while (true) {}", "terminated: interrupted"},
      {SIGINT, "new Array(1e8).join('x').length", "terminated: interrupted"},
      {SIGTERM, "while (true) {}", "terminated: SIGTERM"},
      {SIGTERM, "new Array(1e8).join('x').length", "terminated: SIGTERM"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const char *argv[] = {"toolstream", "runcode", "--timeout-ms", "60000", "--memory-limit", "2g",
                          cases[i].code, NULL};
    result r;
    memset(&r, 0, sizeof r);
    child c = spawn_bin(BINARY, argv, 0);
    struct timespec ts = {0, 300 * 1000000L};
    nanosleep(&ts, NULL);
    kill(c.pid, cases[i].sig);
    double t0 = now_ms();
    finish_child(&c, &r);
    ck_assert_msg(now_ms() - t0 < 3000, "%s: took %.0f ms", cases[i].code, now_ms() - t0); /* loaded CI; minutes before */
    ck_assert_int_eq(r.status, 1);
    ck_assert_msg(strstr(sb_str(&r.out), "\"status\":\"terminated\""), "%s", sb_str(&r.out));
    ck_assert_msg(strstr(sb_str(&r.err), cases[i].why), "%s", sb_str(&r.err));
    result_free(&r);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("runcode_cli");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_rows);
  tcase_add_test(tc, test_ctrl_c_terminates);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
