/*
 * opts_test.c: the one option parser (cli/opts.h) as a user meets it, command by command:
 * --help, -h and --version everywhere; an unknown option, a missing value, a value given
 * to a flag: one error line and exit 2; `--` ends the options; the shared groups (thread,
 * tools, bus) taken the same way by every command that has them, with the same checks
 * (a thread id over TS_THREAD_ID_MAX refused with exit 2, never cut; a --tools file that
 * cannot be read exits 1, one that does not parse exits 2, a .js module loads in tap, run
 * and gateway alike); and the CLI faults of issue 18 item 14 (demo's temporary folder,
 * demo --rate 0, sub --idle-exit with no event).
 */
#include <check.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/error.h"
#include "base/thread_id.h"
#include "store/store.h"
#include "support/proc.h"

#define BINARY TS_BINARY_DIR "/toolstream"

static char base[64];
static char id256[TS_THREAD_ID_MAX + 1], id257[TS_THREAD_ID_MAX + 2];

static void put(const char *name, const char *text) {
  char p[256];
  snprintf(p, sizeof p, "%s/%s", base, name);
  FILE *f = fopen(p, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
}

static void setup(void) {
  if (base[0]) return;
  snprintf(base, sizeof base, "/tmp/ts-opts-test-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(base));
  memset(id256, 'a', TS_THREAD_ID_MAX);
  memset(id257, 'b', TS_THREAD_ID_MAX + 1);
  put("good.json", "[{\"name\":\"w\",\"progressArgument\":\"a\"}]");
  put("bad.json", "[{\"name\":");
  put("good.js", "defineTool({ description: 'w', progressArgument: 'j', args: z.object({ j: z.string() }),\n"
                 "  execute: function (s, a) { return { status: 'success', result: 1 }; } });\n");
  put("bad.js", "defineTool({ execute: (s) => });"); /* a syntax error (arrows are fine) */
  char p[128];
  snprintf(p, sizeof p, "%s/session", base);
  mkdir(p, 0755);
  snprintf(p, sizeof p, "%s/tmp", base);
  mkdir(p, 0755);
}

/* argv with "@x" expanded to base/x, "ID256"/"ID257" to ids of that many bytes. */
static result run_row(const char *const *row, const char *input) {
  static char bufs[16][320];
  const char *argv[24];
  size_t n = 0;
  for (; row[n] && n < 23; n++) {
    if (row[n][0] == '@') {
      snprintf(bufs[n], sizeof bufs[n], "%s/%s", base, row[n] + 1);
      argv[n] = bufs[n];
    } else if (!strcmp(row[n], "ID256")) {
      argv[n] = id256;
    } else if (!strcmp(row[n], "ID257")) {
      argv[n] = id257;
    } else {
      argv[n] = row[n];
    }
  }
  argv[n] = NULL;
  return run_bin(BINARY, argv, input, input ? strlen(input) : 0);
}

static int count_lines(const char *s) {
  int n = 0;
  for (; *s; s++) n += *s == '\n';
  return n;
}

static const char *const commands[] = {"tap", "run", "runcode", "sub", "demo", "gateway", "serve"};

/* ---- what every command takes ---------------------------------------------------------- */

START_TEST(test_help_and_version_everywhere) {
  setup();
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
    static const char *const forms[] = {"--help", "-h", "--version"};
    for (size_t f = 0; f < 3; f++) {
      const char *row[] = {"toolstream", commands[i], forms[f], NULL};
      result r = run_row(row, NULL);
      ck_assert_msg(r.status == 0, "%s %s: exit %d: %s", commands[i], forms[f], r.status,
                    sb_str(&r.err));
      char want[64];
      if (f < 2) snprintf(want, sizeof want, "usage: toolstream %s ", commands[i]);
      else snprintf(want, sizeof want, "toolstream 0.1.0\n");
      ck_assert_msg(strstr(sb_str(&r.out), want) == sb_str(&r.out), "%s %s: %s", commands[i],
                    forms[f], sb_str(&r.out));
      if (f < 2)
        ck_assert_msg(strstr(sb_str(&r.out), "--version") && strstr(sb_str(&r.out), "  -- "),
                      "%s help lacks --version or --: %s", commands[i], sb_str(&r.out));
      ck_assert_msg(r.err.len == 0, "%s %s: stderr %s", commands[i], forms[f], sb_str(&r.err));
      result_free(&r);
    }
    /* --help ends the parsing: what follows it is not looked at */
    const char *row[] = {"toolstream", commands[i], "--help", "--bogus", NULL};
    result r = run_row(row, NULL);
    ck_assert_int_eq(r.status, 0);
    result_free(&r);
  }
  static const char *const top[][3] = {{"toolstream", "--help", NULL},
                                       {"toolstream", "--version", NULL}};
  for (int i = 0; i < 2; i++) {
    result r = run_row(top[i], NULL);
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(sb_str(&r.out), i ? "toolstream 0.1.0" : "commands:"));
    for (size_t c = 0; !i && c < sizeof commands / sizeof commands[0]; c++)
      ck_assert_msg(strstr(sb_str(&r.out), commands[c]), "top help lacks %s", commands[c]);
    result_free(&r);
  }
}
END_TEST

/* Every command that takes a shared group lists (and so takes) all of it. */
START_TEST(test_groups_in_help) {
  setup();
  static const struct {
    const char *cmds[4];
    const char *opts[7];
  } groups[] = {
      {{"tap", "run", "gateway", NULL}, {"--pub URL", "--replay URL", "--tls-cert FILE", "--tls-key FILE", NULL}},
      {{"tap", "run", "gateway", NULL}, {"--tools FILE", "--progress-arg T=A", NULL}},
      {{"tap", "run", "sub", NULL}, {"--thread ID", NULL}},
      {{"run", "gateway", NULL}, {"--ca-file FILE", NULL}},
  };
  for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
    for (size_t c = 0; groups[g].cmds[c]; c++) {
      const char *row[] = {"toolstream", groups[g].cmds[c], "--help", NULL};
      result r = run_row(row, NULL);
      for (size_t o = 0; groups[g].opts[o]; o++)
        ck_assert_msg(strstr(sb_str(&r.out), groups[g].opts[o]), "%s --help lacks %s",
                      groups[g].cmds[c], groups[g].opts[o]);
      result_free(&r);
    }
  }
}
END_TEST

static const struct {
  int line;
  const char *label;
  const char *argv[12];
  int status;
  const char *stderr_has;
} usage_rows[] = {
    /* unknown options, in every command */
    {__LINE__, "tap unknown", {"toolstream", "tap", "--bogus", NULL}, 2, "unknown option '--bogus'"},
    {__LINE__, "run unknown", {"toolstream", "run", "--bogus=1", NULL}, 2, "unknown option '--bogus'"},
    {__LINE__, "runcode unknown", {"toolstream", "runcode", "-x", "1", NULL}, 2, "unknown option '-x'"},
    {__LINE__, "sub unknown", {"toolstream", "sub", "ipc:///x", "--bogus", NULL}, 2, "unknown option"},
    {__LINE__, "demo unknown", {"toolstream", "demo", "--bogus", NULL}, 2, "unknown option"},
    {__LINE__, "gateway unknown", {"toolstream", "gateway", "--bogus", NULL}, 2, "unknown option"},
    {__LINE__, "serve unknown", {"toolstream", "serve", "--bogus", NULL}, 2, "unknown option"},
    {__LINE__, "no abbreviations", {"toolstream", "tap", "--form", "raw", NULL}, 2, "unknown option"},
    /* a missing value, in every command */
    {__LINE__, "tap missing", {"toolstream", "tap", "--format", NULL}, 2, "--format needs a value"},
    {__LINE__, "run missing", {"toolstream", "run", "--model-replay", NULL}, 2, "--model-replay needs a value"},
    {__LINE__, "runcode missing", {"toolstream", "runcode", "--timeout-ms", NULL}, 2, "--timeout-ms needs"},
    {__LINE__, "sub missing", {"toolstream", "sub", "ipc:///x", "--count", NULL}, 2, "--count needs"},
    {__LINE__, "demo missing", {"toolstream", "demo", "--rate", NULL}, 2, "--rate needs"},
    {__LINE__, "gateway missing", {"toolstream", "gateway", "--listen", NULL}, 2, "--listen needs"},
    {__LINE__, "serve missing", {"toolstream", "serve", "--token-file", NULL}, 2, "--token-file needs"},
    {__LINE__, "serve token unreadable", {"toolstream", "serve", "--token-file", "@missing.txt", NULL}, 1, "cannot read"},
    /* a value given to a flag; malformed values */
    {__LINE__, "flag with value", {"toolstream", "tap", "--deltas=yes", NULL}, 2, "--deltas takes no value"},
    {__LINE__, "size", {"toolstream", "tap", "--heartbeat-bytes", "12q", NULL}, 2, "--heartbeat-bytes wants a size"},
    {__LINE__, "size range", {"toolstream", "tap", "--progress-max", "65537", NULL}, 2, "from 1 to 64k"},
    {__LINE__, "number", {"toolstream", "run", "--max-turns", "-1", NULL}, 2, "--max-turns wants a number"},
    {__LINE__, "ms", {"toolstream", "gateway", "--idle-timeout", "0", "--upstream", "http://x", NULL}, 2, "--idle-timeout wants milliseconds"},
    /* the thread group: the same limit and check everywhere */
    {__LINE__, "tap thread 257", {"toolstream", "tap", "--thread", "ID257", NULL}, 2, "--thread wants 1 to 256 bytes"},
    {__LINE__, "run thread 257", {"toolstream", "run", "--model-replay", "@session", "--thread", "ID257", NULL}, 2, "--thread wants 1 to 256 bytes"},
    {__LINE__, "sub thread 257", {"toolstream", "sub", "ipc:///x", "--thread", "ID257", NULL}, 2, "--thread wants 1 to 256 bytes"},
    {__LINE__, "run thread space", {"toolstream", "run", "--model-replay", "@session", "--thread", "a b", NULL}, 2, "--thread"},
    {__LINE__, "sub thread empty", {"toolstream", "sub", "ipc:///x", "--thread=", NULL}, 2, "--thread"},
    /* the bus group */
    {__LINE__, "tap replay alone", {"toolstream", "tap", "--replay", "ipc:///x", NULL}, 2, "--replay needs --pub"},
    {__LINE__, "run replay alone", {"toolstream", "run", "--model-replay", "@session", "--replay", "ipc:///x", NULL}, 2, "--replay needs --pub"},
    {__LINE__, "gateway replay alone", {"toolstream", "gateway", "--upstream", "http://x", "--replay", "ipc:///x", NULL}, 2, "--replay needs --pub"},
    {__LINE__, "run tls without pub", {"toolstream", "run", "--model-replay", "@session", "--tls-cert", "c.pem", NULL}, 2, "need --pub"},
    /* the tools group: unreadable 1, malformed 2, the same in tap, run and gateway */
    {__LINE__, "tap tools missing", {"toolstream", "tap", "--tools", "@missing.json", NULL}, 1, "cannot read"},
    {__LINE__, "run tools missing", {"toolstream", "run", "--model-replay", "@session", "--workspace", "@ws", "--data-dir", "@data", "--tools", "@missing.json", NULL}, 1, "cannot read"},
    {__LINE__, "gateway tools missing", {"toolstream", "gateway", "--upstream", "http://x", "--tools", "@missing.json", NULL}, 1, "cannot read"},
    {__LINE__, "tap js missing", {"toolstream", "tap", "--tools", "@missing.js", NULL}, 1, "cannot read"},
    {__LINE__, "tap tools bad", {"toolstream", "tap", "--tools", "@bad.json", NULL}, 2, "bad.json"},
    {__LINE__, "run tools bad", {"toolstream", "run", "--model-replay", "@session", "--workspace", "@ws", "--data-dir", "@data", "--tools", "@bad.json", NULL}, 2, "bad.json"},
    {__LINE__, "gateway tools bad", {"toolstream", "gateway", "--upstream", "http://x", "--tools", "@bad.json", NULL}, 2, "bad.json"},
    {__LINE__, "tap js bad", {"toolstream", "tap", "--tools", "@bad.js", NULL}, 2, "SyntaxError"},
    {__LINE__, "gateway js bad", {"toolstream", "gateway", "--upstream", "http://x", "--tools", "@bad.js", NULL}, 2, "SyntaxError"},
    {__LINE__, "tap progress-arg", {"toolstream", "tap", "--progress-arg", "w", NULL}, 2, "--progress-arg wants TOOL=ARG"},
    {__LINE__, "run progress-arg", {"toolstream", "run", "--model-replay", "@session", "--progress-arg", "=a", NULL}, 2, "--progress-arg wants TOOL=ARG"},
    {__LINE__, "gateway progress-arg", {"toolstream", "gateway", "--upstream", "http://x", "--progress-arg", "w=", NULL}, 2, "--progress-arg wants TOOL=ARG"},
    /* inputs that cannot be read: 1, like a --tools file */
    {__LINE__, "tap input missing", {"toolstream", "tap", "@missing.sse", NULL}, 1, "cannot open"},
    {__LINE__, "run replay dir missing", {"toolstream", "run", "--model-replay", "@nodir", "--workspace", "@ws", "--data-dir", "@data", NULL}, 1, "no recorded turn 1"},
    /* `--` ends the options: what follows is positional */
    {__LINE__, "tap --", {"toolstream", "tap", "--", "--format", NULL}, 1, "cannot open --format"},
    {__LINE__, "tap -- twice", {"toolstream", "tap", "--", "a", "--", NULL}, 2, "more than one input file"},
    /* demo validates before it makes anything (checked for the folder below) */
    {__LINE__, "demo rate 0", {"toolstream", "demo", "--rate", "0", NULL}, 2, "toolstream demo: --rate wants a number from 1"},
};

START_TEST(test_usage_rows) {
  setup();
  for (size_t i = 0; i < sizeof usage_rows / sizeof usage_rows[0]; i++) {
    result r = run_row(usage_rows[i].argv, "");
    ck_assert_msg(r.status == usage_rows[i].status, "line %d (%s): exit %d, want %d: %s",
                  usage_rows[i].line, usage_rows[i].label, r.status, usage_rows[i].status,
                  sb_str(&r.err));
    ck_assert_msg(strstr(sb_str(&r.err), usage_rows[i].stderr_has) != NULL,
                  "line %d (%s): stderr '%s'", usage_rows[i].line, usage_rows[i].label,
                  sb_str(&r.err));
    ck_assert_msg(count_lines(sb_str(&r.err)) == 1, "line %d (%s): not one line: '%s'",
                  usage_rows[i].line, usage_rows[i].label, sb_str(&r.err));
    ck_assert_msg(r.out.len == 0, "line %d (%s): stdout '%s'", usage_rows[i].line,
                  usage_rows[i].label, sb_str(&r.out));
    result_free(&r);
  }
}
END_TEST

/* ---- what works ------------------------------------------------------------------------ */

START_TEST(test_values_that_work) {
  setup();
  /* a thread id of exactly TS_THREAD_ID_MAX bytes is used whole */
  const char *a1[] = {"toolstream", "tap", "--format=raw", "--tool", "w", "--thread", "ID256", NULL};
  result r = run_row(a1, "{\"a\":1}");
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, sb_str(&r.err));
  char want[400];
  snprintf(want, sizeof want, "\"thread\":\"%s\",", id256);
  ck_assert_msg(strstr(sb_str(&r.out), want), "%s", sb_str(&r.out));
  result_free(&r);

  /* --progress-arg wins over --tools whatever their order; a .js module's progress
   * argument is read by tap */
  const char *a2[] = {"toolstream", "tap", "--format", "raw", "--tool", "w", "--tools",
                      "@good.json", NULL};
  r = run_row(a2, "{\"a\":\"from-json\",\"b\":\"from-arg\"}");
  ck_assert_msg(strstr(sb_str(&r.out), "\"progress\":\"from-json\""), "%s", sb_str(&r.out));
  result_free(&r);
  const char *a3[] = {"toolstream", "tap", "--format", "raw", "--tool", "w", "--progress-arg",
                      "w=b", "--tools", "@good.json", NULL};
  r = run_row(a3, "{\"a\":\"from-json\",\"b\":\"from-arg\"}");
  ck_assert_msg(strstr(sb_str(&r.out), "\"progress\":\"from-arg\""), "%s", sb_str(&r.out));
  result_free(&r);
  const char *a4[] = {"toolstream", "tap", "--format", "raw", "--tool", "good", "--tools",
                      "@good.js", NULL};
  r = run_row(a4, "{\"j\":\"from-js\"}");
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, sb_str(&r.err));
  ck_assert_msg(strstr(sb_str(&r.out), "\"progress\":\"from-js\""), "%s", sb_str(&r.out));
  result_free(&r);

  /* `--` lets a positional start with '-': runcode runs the code "-1" */
  const char *a5[] = {"toolstream", "runcode", "--", "-1", NULL};
  r = run_row(a5, NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, sb_str(&r.err));
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "\"value\":-1"));
  result_free(&r);
}
END_TEST

/* The gateway loads a .js module for --tools (it used to read it as JSON) and starts. */
START_TEST(test_gateway_js_tools) {
  setup();
  char tools[128];
  snprintf(tools, sizeof tools, "%s/good.js", base);
  const char *argv[] = {"toolstream", "gateway", "--listen", "127.0.0.1:0", "--upstream",
                        "http://127.0.0.1:9", "--tools", tools, NULL};
  child c = spawn_bin(BINARY, argv, 1);
  result r;
  memset(&r, 0, sizeof r);
  sb_puts(&r.out, "");
  sb_puts(&r.err, "");
  double t0 = now_ms();
  while (!strchr(sb_str(&r.out), '\n') && now_ms() - t0 < 60000 && pump(&c, &r, 100) > 0) {
  }
  int started = strncmp(sb_str(&r.out), "http://127.0.0.1:", 17) == 0;
  kill(c.pid, SIGTERM);
  finish_child(&c, &r);
  ck_assert_msg(started, "gateway did not start: out '%s' err '%s'", sb_str(&r.out),
                sb_str(&r.err));
  ck_assert_int_eq(r.status, 0);
  result_free(&r);
}
END_TEST

/* ---- issue 18 item 14 ------------------------------------------------------------------- */

static int dir_entries(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  closedir(d);
  return n;
}

START_TEST(test_demo_leaves_nothing) {
  setup();
  char tmp[128];
  snprintf(tmp, sizeof tmp, "%s/tmp", base);
  setenv("TMPDIR", tmp, 1);
  const char *a1[] = {"toolstream", "demo", "--rate", "0", NULL};
  result r = run_row(a1, NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(!strstr(sb_str(&r.err), "toolstream run"), "%s", sb_str(&r.err));
  ck_assert_int_eq(dir_entries(tmp), 0); /* nothing made before the check */
  result_free(&r);
  const char *a2[] = {"toolstream", "demo", "--rate", "50000", "--json", NULL};
  r = run_row(a2, NULL);
  ck_assert_msg(r.status == 0, "demo exit %d: %s", r.status, sb_str(&r.err));
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "\"type\":\"tool_result\""));
  ck_assert_msg(dir_entries(tmp) == 0, "demo left %d entries in %s", dir_entries(tmp), tmp);
  result_free(&r);
  /* --keep keeps it */
  const char *a3[] = {"toolstream", "demo", "--rate", "50000", "--keep", NULL};
  r = run_row(a3, NULL);
  ck_assert_int_eq(r.status, 0);
  ck_assert_int_eq(dir_entries(tmp), 1);
  result_free(&r);
  unsetenv("TMPDIR");
}
END_TEST

/* sub --idle-exit exits even when no event ever arrives (a publisher that is silent). */
START_TEST(test_sub_idle_exit_without_events) {
  setup();
  char url[128];
  snprintf(url, sizeof url, "ipc://%s/bus", base);
  const char *tap_argv[] = {"toolstream", "tap", "--pub", url, "--linger", "0", NULL};
  child t = spawn_bin(BINARY, tap_argv, 1); /* reads its (open, empty) stdin: publishes nothing */
  const char *sub_argv[] = {"toolstream", "sub", url, "--wait", "--idle-exit", "300", NULL};
  result r = run_bin(BINARY, sub_argv, NULL, 0);
  result tr;
  memset(&tr, 0, sizeof tr);
  finish_child(&t, &tr);
  ck_assert_msg(r.status == 0, "sub exit %d: %s", r.status, sb_str(&r.err));
  ck_assert_int_eq((int)r.out.len, 0);
  result_free(&r);
  result_free(&tr);
}
END_TEST

/* Standard output closed (the reader went away): tap ends with status 1 (not killed by
 * SIGPIPE), run finishes its work with everything stored (events/sink.h's policy). */
START_TEST(test_stdout_closed) {
  setup();
  const char *tap_argv[] = {"toolstream", "tap", "--format", "raw", "--tool", "w", NULL};
  signal(SIGPIPE, SIG_DFL); /* the child starts with the default disposition */
  child c = spawn_bin(BINARY, tap_argv, 1);
  signal(SIGPIPE, SIG_IGN);
  close(c.out);
  c.out = -1;
  result r;
  memset(&r, 0, sizeof r);
  sb_puts(&r.out, "");
  sb_puts(&r.err, "");
  feed_all(&c, &r, "{\"a\":1}", 7);
  finish_child(&c, &r);
  ck_assert_msg(r.status == 1, "tap exit %d: %s", r.status, sb_str(&r.err));
  result_free(&r);

  put("session/turn-1.sse",
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\","
      "\"type\":\"function\",\"function\":{\"name\":\"write_file\",\"arguments\":"
      "\"{\\\"path\\\":\\\"out.txt\\\",\\\"content\\\":\\\"x\\\"}\"}}]}}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
      "data: [DONE]\n\n");
  put("session/turn-2.sse",
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"done\"}}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
      "data: [DONE]\n\n");
  char session[128], ws[128], data[128];
  snprintf(session, sizeof session, "%s/session", base);
  snprintf(ws, sizeof ws, "%s/ws", base);
  snprintf(data, sizeof data, "%s/data", base);
  const char *run_argv[] = {"toolstream", "run", "--model-replay", session, "--workspace", ws,
                            "--data-dir", data, "--rate", "10000", "--thread", "closed",
                            "--json", NULL};
  signal(SIGPIPE, SIG_DFL);
  c = spawn_bin(BINARY, run_argv, 0);
  signal(SIGPIPE, SIG_IGN);
  close(c.out);
  c.out = -1;
  memset(&r, 0, sizeof r);
  sb_puts(&r.out, "");
  sb_puts(&r.err, "");
  finish_child(&c, &r);
  ck_assert_msg(r.status == 0, "run exit %d: %s", r.status, sb_str(&r.err));
  char p[256];
  snprintf(p, sizeof p, "%s/out.txt", ws);
  ck_assert_int_eq(access(p, F_OK), 0); /* the tool ran */
  ts_store *st;
  char why[256];
  ck_assert_int_eq(ts_store_open(data, &st, why, sizeof why), TS_E_OK);
  uint64_t seq = 0;
  ts_store_last_event_seq(st, "closed", &seq);
  ts_store_close(st);
  ck_assert_msg(seq >= 6, "only %llu events stored", (unsigned long long)seq);
  result_free(&r);
}
END_TEST

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  Suite *s = suite_create("opts");
  TCase *tc = tcase_create("cli");
  tcase_set_timeout(tc, 240);
  tcase_add_test(tc, test_help_and_version_everywhere);
  tcase_add_test(tc, test_usage_rows);
  tcase_add_test(tc, test_groups_in_help);
  tcase_add_test(tc, test_values_that_work);
  tcase_add_test(tc, test_gateway_js_tools);
  tcase_add_test(tc, test_demo_leaves_nothing);
  tcase_add_test(tc, test_sub_idle_exit_without_events);
  tcase_add_test(tc, test_stdout_closed);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
