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
#include "cli/cli.h"
#include "cli/opts.h"
#include "store/store.h"
#include "support/proc.h"
#include "support/runner.h"
#include "support/tempdir.h"

#define BINARY TS_BINARY_DIR "/toolstream"

static char base[64];
static char id256[TS_THREAD_ID_MAX + 1], id257[TS_THREAD_ID_MAX + 2];

#define put(name, text) ts_test_put(ts_test_at(base, (name)), (text))

/* After each test (in its own process): its directory goes. */
static void remove_base(void) {
  if (base[0]) ts_test_rm_rf(base);
}

static void setup(void) {
  if (base[0]) return;
  ts_test_tempdir(base, sizeof base, "opts-test");
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
  /* commands that open the default store (serve) open one of the test's own, never the
   * data directory of whoever runs the tests */
  snprintf(p, sizeof p, "%s/data", base);
  setenv("TOOLSTREAM_DATA_DIR", p, 1);
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

static const char *const commands[] = {"tap",   "run",     "runcode", "sub", "demo",
                                        "gateway", "serve", "threads", "env",
                                        "bench"};

/* ---- the tables, in process ------------------------------------------------------------ */

/* Every command's table is complete and unambiguous: names unique within the command (so
 * the first match is the only match), values with metavars, ranges that make sense, help
 * for every option, and the generated --help naming every option. */
START_TEST(test_tables) {
  size_t n;
  const ts_cli_command *const *cmds = ts_cli_commands(&n);
  ck_assert_uint_eq(n, sizeof commands / sizeof commands[0]);
  for (size_t i = 0; i < n; i++) {
    const ts_cli_command *c = cmds[i];
    ck_assert_msg(c->name && c->synopsis && c->summary && c->description && c->main && c->groups,
                  "command %zu incomplete", i);
    ck_assert_ptr_eq(ts_cli_command_find(c->name), c);
    ck_assert_str_eq(c->name, commands[i]);
    const char *seen[64];
    char letters[64];
    size_t ns = 0, nl = 0;
    FILE *f = tmpfile();
    ts_cli_print_help(c, f);
    rewind(f);
    static char help[16384];
    help[fread(help, 1, sizeof help - 1, f)] = '\0';
    fclose(f);
    for (const ts_cli_group *const *g = c->groups; *g; g++) {
      for (size_t k = 0; k < (*g)->n_opts; k++) {
        const ts_cli_opt *o = &(*g)->opts[k];
        ck_assert_msg(o->name && o->name[0] && strcmp(o->name, "help") && strcmp(o->name, "version"),
                      "%s: bad name", c->name);
        for (size_t j = 0; j < ns; j++)
          ck_assert_msg(strcmp(seen[j], o->name), "%s: --%s twice", c->name, o->name);
        ck_assert_uint_lt(ns, 64);
        seen[ns++] = o->name;
        if (o->letter) {
          ck_assert_msg(o->letter != 'h' && !memchr(letters, o->letter, nl), "%s: -%c", c->name,
                        o->letter);
          letters[nl++] = o->letter;
        }
        ck_assert_msg((o->kind == TS_CLI_FLAG) == (o->metavar == NULL), "%s: --%s metavar",
                      c->name, o->name);
        ck_assert_msg(o->help && o->help[0] && o->help[strlen(o->help) - 1] != '\n',
                      "%s: --%s help", c->name, o->name);
        if (o->kind == TS_CLI_SIZE || o->kind == TS_CLI_NUMBER || o->kind == TS_CLI_MS)
          ck_assert_msg(o->min <= o->max && o->max > 0, "%s: --%s range", c->name, o->name);
        char want[96];
        snprintf(want, sizeof want, "--%s%s%s", o->name, o->metavar ? " " : "",
                 o->metavar ? o->metavar : "");
        ck_assert_msg(strstr(help, want), "%s --help lacks '%s'", c->name, want);
      }
    }
  }
  ck_assert_ptr_null(ts_cli_command_find("nope"));
}
END_TEST

/* The parser on a command of its own: what each argument becomes. */
enum { T_STR = 1, T_FLAG, T_SIZE, T_NUM, T_MORE, T_REFUSE };
static int is_js(const char *a) { return strlen(a) > 3 && !strcmp(a + strlen(a) - 3, ".js"); }
static const ts_cli_opt t_opts[] = {
    {"str", 's', TS_CLI_STRING, T_STR, 0, 0, "S", "a string", NULL},
    {"flag", 'f', TS_CLI_FLAG, T_FLAG, 0, 0, NULL, "a flag", NULL},
    {"size", 0, TS_CLI_SIZE, T_SIZE, 1, 1 << 20, "N", "a size", NULL},
    {"num", 0, TS_CLI_NUMBER, T_NUM, 0, 10, "N", "a number", NULL},
    {"more", 0, TS_CLI_STRING, T_MORE, 0, 0, "F", "greedy for .js", is_js},
    {"refuse", 0, TS_CLI_STRING, T_REFUSE, 0, 0, "X", "the handler refuses", NULL},
};
static const ts_cli_group t_group = {"t", NULL, t_opts, sizeof t_opts / sizeof t_opts[0], NULL};
static const ts_cli_group *const t_groups[] = {&t_group, &ts_cli_group_thread,
                                               &ts_cli_group_tools, NULL};
static const ts_cli_command t_cmd = {"t", "[options] [ARG...]", "a test command", "Tests.",
                                     t_groups, NULL, NULL};

static int t_set(void *user, const ts_cli_opt *o, const char *val, uint64_t num) {
  char *trace = user;
  char item[400];
  if (!o) snprintf(item, sizeof item, "pos=%s;", val);
  else if (o->id == T_REFUSE) return 7;
  else if (o->kind == TS_CLI_FLAG) snprintf(item, sizeof item, "%s;", o->name);
  else if (o->kind == TS_CLI_STRING) snprintf(item, sizeof item, "%s=%s;", o->name, val);
  else snprintf(item, sizeof item, "%s=%llu;", o->name, (unsigned long long)num);
  strncat(trace, item, 1023 - strlen(trace));
  return 0;
}

static const struct {
  int line;
  const char *argv[12];
  int rc;
  const char *trace;
} parse_rows[] = {
    {__LINE__, {"t", NULL}, -1, ""},
    {__LINE__, {"t", "--str", "v", "--str=w", "-s", "x", NULL}, -1, "str=v;str=w;str=x;"},
    {__LINE__, {"t", "--str=", NULL}, -1, "str=;"},
    {__LINE__, {"t", "--str", "--flag", NULL}, -1, "str=--flag;"}, /* a value may start with - */
    {__LINE__, {"t", "--flag", "-f", "a", "-", NULL}, -1, "flag;flag;pos=a;pos=-;"},
    {__LINE__, {"t", "--flag=1", NULL}, 2, ""},
    {__LINE__, {"t", "--", "--flag", "-s", "--", NULL}, -1, "pos=--flag;pos=-s;pos=--;"},
    {__LINE__, {"t", "--size", "2k", "--size=1m", NULL}, -1, "size=2048;size=1048576;"},
    {__LINE__, {"t", "--size", "0", NULL}, 2, ""},
    {__LINE__, {"t", "--size", "2m", NULL}, 2, ""},
    {__LINE__, {"t", "--num", "10", "--num", "-1", NULL}, 2, "num=10;"},
    {__LINE__, {"t", "--num", NULL}, 2, ""},
    {__LINE__, {"t", "--more", "a.js", "b.js", "c.txt", "d.js", NULL}, -1,
     "more=a.js;more=b.js;pos=c.txt;pos=d.js;"},
    {__LINE__, {"t", "--refuse", "x", "--flag", NULL}, 7, ""},
    {__LINE__, {"t", "--nope", NULL}, 2, ""},
    {__LINE__, {"t", "-x", NULL}, 2, ""},
    {__LINE__, {"t", "-sf", NULL}, 2, ""}, /* no bundled letters */
    {__LINE__, {"t", "--fla", NULL}, 2, ""}, /* no abbreviations */
    {__LINE__, {"t", "a", "--version", "b", NULL}, 0, "pos=a;"},
    {__LINE__, {"t", "--thread", "ID256", "--tools", "x.json", "--tools", "y.js", "z.js", NULL},
     -1, ""},
    {__LINE__, {"t", "--thread", "ID257", NULL}, 2, ""},
    {__LINE__, {"t", "--thread=", NULL}, 2, ""},
    {__LINE__, {"t", "--progress-arg", "a=b", "--progress-arg", "nope", NULL}, 2, ""},
};

START_TEST(test_parse_rows) {
  setup();
  for (size_t i = 0; i < sizeof parse_rows / sizeof parse_rows[0]; i++) {
    char *argv[13];
    int argc = 0;
    for (; parse_rows[i].argv[argc]; argc++) {
      const char *a = parse_rows[i].argv[argc];
      argv[argc] = (char *)(!strcmp(a, "ID256") ? id256 : !strcmp(a, "ID257") ? id257 : a);
    }
    argv[argc] = NULL;
    ts_cli_common com;
    memset(&com, 0, sizeof com);
    char trace[1024] = "";
    int rc = ts_cli_parse(&t_cmd, argc, argv, &com, t_set, trace);
    ck_assert_msg(rc == parse_rows[i].rc, "line %d: rc %d", parse_rows[i].line, rc);
    ck_assert_msg(!strcmp(trace, parse_rows[i].trace), "line %d: trace '%s'", parse_rows[i].line,
                  trace);
    ck_assert_str_eq(com.who, "toolstream t");
  }
  /* the shared groups' values land in ts_cli_common */
  char *argv[] = {"t", "--thread", id256, "--tools", "x.json", "--tools", "y.js", "z.js",
                  "--progress-arg", "w=d", NULL};
  ts_cli_common com;
  memset(&com, 0, sizeof com);
  ck_assert_int_eq(ts_cli_parse(&t_cmd, 10, argv, &com, t_set, (char[1024]){0}), -1);
  ck_assert(com.has_thread);
  ck_assert_str_eq(com.thread, id256);
  ck_assert_uint_eq(com.n_tools_files, 3);
  ck_assert_str_eq(com.tools_files[2], "z.js");
  ck_assert_uint_eq(com.n_progress_args, 1);
  /* no --thread: a fresh one */
  memset(&com, 0, sizeof com);
  com.who = "t";
  ck_assert_int_eq(ts_cli_thread_or_new(&com), 0);
  ck_assert(ts_thread_id_valid(com.thread, strlen(com.thread)));
  ck_assert_int_eq(strncmp(com.thread, "th_", 3), 0);
}
END_TEST

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
    {__LINE__, "bench missing", {"toolstream", "bench", "--pace", NULL}, 2, "--pace needs a value"},
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

/* run takes the tools group whole: --progress-arg wins over the tool's own declaration
 * (write_file's progress argument is `description`). */
START_TEST(test_run_progress_arg) {
  setup();
  put("session/turn-1.sse",
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\","
      "\"type\":\"function\",\"function\":{\"name\":\"write_file\",\"arguments\":"
      "\"{\\\"description\\\":\\\"the label\\\",\\\"path\\\":\\\"p.txt\\\",\\\"content\\\":\\\"x\\\"}\"}}]}}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
      "data: [DONE]\n\n");
  put("session/turn-2.sse",
      "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
      "data: [DONE]\n\n");
  for (int with = 0; with < 2; with++) {
    const char *argv[] = {"toolstream", "run", "--model-replay", "@session", "--workspace", "@ws",
                          "--data-dir", "@data", "--rate", "10000", "--thread",
                          with ? "pa1" : "pa0", with ? "--progress-arg" : NULL,
                          "write_file=path", NULL};
    result r = run_row(argv, NULL);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, sb_str(&r.err));
    ck_assert_msg(strstr(sb_str(&r.out), with ? "\"progress\":\"p.txt\"" : "\"progress\":\"the label\""),
                  "%s", sb_str(&r.out));
    result_free(&r);
  }
}
END_TEST

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  Suite *s = suite_create("opts");
  TCase *tc = tcase_create("cli");
  tcase_set_timeout(tc, 240);
  tcase_add_checked_fixture(tc, NULL, remove_base);
  tcase_add_test(tc, test_tables);
  tcase_add_test(tc, test_parse_rows);
  tcase_add_test(tc, test_help_and_version_everywhere);
  tcase_add_test(tc, test_usage_rows);
  tcase_add_test(tc, test_groups_in_help);
  tcase_add_test(tc, test_values_that_work);
  tcase_add_test(tc, test_gateway_js_tools);
  tcase_add_test(tc, test_demo_leaves_nothing);
  tcase_add_test(tc, test_sub_idle_exit_without_events);
  tcase_add_test(tc, test_stdout_closed);
  tcase_add_test(tc, test_run_progress_arg);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
