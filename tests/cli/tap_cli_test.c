/*
 * tap_cli_test.c: `toolstream tap` as a process (cli/tap.c, docs/events.md).
 *
 * The built binary is run with fork/exec, on files and on its standard input, and its
 * three channels are checked:
 *   - standard output: one JSON object per line, each valid JSON, keys in the documented
 *     order (v, type, thread, seq, offset, then call_id, tool, index for call events),
 *     v = 1, one thread, seq 1..N without gaps, offsets never decreasing (judged by the
 *     reference checker, support/json_check.h); for every capture of tests/corpus byte
 *     for byte its gold trace (tests/corpus/README.md), and for streams of our own line
 *     for line what the library (ts_tap + ts_event_encode) makes of the same input with
 *     the same options, so the command adds and drops nothing;
 *   - the exit status: 0 for a clean stream (a tool_call_error alone is clean), 1 with
 *     exactly one line on standard error when the stream ended in error, 2 for usage
 *     errors (with nothing on standard output);
 *   - timing: events are written and flushed as they happen. A stream is written into
 *     the process's standard input slowly, the description early and a long content
 *     after it with pauses, and the tool_call_started line must be readable from its
 *     standard output before the rest of the input has been written.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "events/event.h"
#include "stream/tap.h"
#include "support/big_stream.h"
#include "support/gold.h"
#include "support/json_check.h"
#include "support/proc.h"
#include "support/runner.h"
#include "support/test_support.h"

#define BINARY TS_BINARY_DIR "/toolstream"
#define spawn(argv, in) spawn_bin(BINARY, (argv), (in))
#define run(argv, input, len) run_bin(BINARY, (argv), (input), (len))

/* Asserts only on failure (check records every passing assertion; see tap_test.c). */
#define REQUIRE(cond, ...)                  \
  do {                                      \
    if (!(cond)) ck_abort_msg(__VA_ARGS__); \
  } while (0)

/* ---- a string builder -------------------------------------------------------------- */

static size_t count_lines(const char *s) {
  size_t n = 0;
  for (; *s; s++) n += *s == '\n';
  return n;
}

/* A file under the build tree holding `data`; the path goes into `path`. */
static void write_temp(char *path, size_t cap, const char *data, size_t len) {
  snprintf(path, cap, "%s/tap_cli_test_XXXXXX", TS_BINARY_DIR);
  int fd = mkstemp(path);
  REQUIRE(fd >= 0, "mkstemp: %s", strerror(errno));
  REQUIRE(write(fd, data, len) == (ssize_t)len, "write: %s", strerror(errno));
  close(fd);
}

/* ---- checking the output (the reference checker: support/json_check.h) ---------------- */


static long long mnum(const ts_test_json_member *m) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.*s", (int)(m->vlen < 31 ? m->vlen : 31), m->v);
  return strtoll(buf, NULL, 10);
}

static const char *const types[] = {"tool_call_started", "tool_call_delta", "tool_call_heartbeat",
                                    "tool_call_ready",   "tool_call_error", "text_delta",
                                    "turn_finished",     "stream_error"};

/* Checks every line of `out`: the schema's fields in order, one thread, seq 1..N,
 * offsets never decreasing. Returns the number of lines. `thread` (may be NULL) is the
 * expected thread id. */
static size_t check_lines(const char *ctx, const char *out, const char *thread) {
  size_t n = 0;
  long long last_off = -1;
  char first_thread[160] = "";
  REQUIRE(!*out || out[strlen(out) - 1] == '\n', "%s: output does not end with a newline", ctx);
  for (const char *p = out; *p;) {
    const char *nl = strchr(p, '\n');
    size_t len = (size_t)(nl - p);
    ts_test_json_member m[32];
    int k = ts_test_json_members(p, len, m, 32);
    n++;
    REQUIRE(k >= 5, "%s: line %zu is not a compact JSON object with the common fields: %.*s", ctx,
            n, (int)len, p);
    static const char *const common[] = {"v", "type", "thread", "seq", "offset"};
    /* `ts` and `mono_us` stand between seq and offset unless --no-time left them out. */
    int stamped = k >= 7 && ts_test_json_key_is(&m[4], "ts") && ts_test_json_key_is(&m[5], "mono_us");
    for (int i = 0, j = 0; i < 5; i++, j++) {
      if (i == 4 && stamped) j += 2;
      REQUIRE(ts_test_json_key_is(&m[j], common[i]), "%s: line %zu: member %d is not \"%s\": %.*s", ctx, n, j,
              common[i], (int)len, p);
    }
    REQUIRE(m[0].vlen == 1 && m[0].v[0] == '1', "%s: line %zu: v is not 1", ctx, n);
    int type = -1;
    for (int t = 0; t < 8; t++)
      if (m[1].vlen == strlen(types[t]) + 2 && !memcmp(m[1].v + 1, types[t], m[1].vlen - 2)) type = t;
    REQUIRE(type >= 0, "%s: line %zu: unknown type %.*s", ctx, n, (int)m[1].vlen, m[1].v);
    REQUIRE(m[2].v[0] == '"' && m[2].vlen > 2 && m[2].vlen < sizeof first_thread,
            "%s: line %zu: bad thread", ctx, n);
    if (n == 1) snprintf(first_thread, sizeof first_thread, "%.*s", (int)m[2].vlen, m[2].v);
    REQUIRE(m[2].vlen == strlen(first_thread) && !memcmp(m[2].v, first_thread, m[2].vlen),
            "%s: line %zu: another thread %.*s", ctx, n, (int)m[2].vlen, m[2].v);
    if (thread)
      REQUIRE(m[2].vlen == strlen(thread) + 2 && !memcmp(m[2].v + 1, thread, strlen(thread)),
              "%s: line %zu: thread %.*s, want \"%s\"", ctx, n, (int)m[2].vlen, m[2].v, thread);
    REQUIRE(mnum(&m[3]) == (long long)n, "%s: line %zu has seq %lld", ctx, n, mnum(&m[3]));
    int o = stamped ? 6 : 4; /* where offset is */
    long long off = mnum(&m[o]);
    REQUIRE(m[o].v[0] >= '0' && m[o].v[0] <= '9' && off >= last_off,
            "%s: line %zu: offset %lld after %lld", ctx, n, off, last_off);
    last_off = off;
    if (type <= 4) /* call events */
      REQUIRE(k >= o + 4 && ts_test_json_key_is(&m[o + 1], "call_id") &&
                  ts_test_json_key_is(&m[o + 2], "tool") && ts_test_json_key_is(&m[o + 3], "index"),
              "%s: line %zu: call event without call_id, tool, index: %.*s", ctx, n, (int)len, p);
    p = nl + 1;
  }
  return n;
}

/* ---- the library's view of the same input ----------------------------------------------- */

typedef struct {
  const char *tool, *arg; /* progress arguments: tool "*" = any */
} parg;

typedef struct {
  const parg *pargs;
  sb out;
  uint64_t seq;
} lib_ctx;

static const char *lib_progress(void *user, const char *tool, size_t len, size_t *arg_len) {
  const lib_ctx *c = user;
  for (const parg *p = c->pargs; p && p->tool; p++) {
    if (strlen(p->tool) == len && !memcmp(p->tool, tool, len)) {
      *arg_len = strlen(p->arg);
      return p->arg;
    }
  }
  return NULL;
}

static int lib_cb(void *user, const ts_tap_event *e) {
  lib_ctx *c = user;
  ts_event ev = {.thread = {"t", 1}, .seq = ++c->seq, .body = *e};
  ts_buf b;
  ts_buf_init(&b, (size_t)64 << 20);
  REQUIRE(ts_event_encode(&ev, &b) == TS_E_OK, "encode");
  sb_add(&c->out, b.p, b.len);
  sb_puts(&c->out, "\n");
  ts_buf_fini(&b);
  return 0;
}

/* What `toolstream tap --thread t` should print for `in` under `cfg`. */
static void lib_expect(sb *out, ts_tap_config cfg, const parg *pargs, const char *in, size_t len,
                       int *failed) {
  lib_ctx c = {pargs, {0}, 0};
  sb_puts(&c.out, "");
  cfg.progress_arg = lib_progress;
  cfg.progress_user = &c;
  ts_tap *t = NULL;
  REQUIRE(ts_tap_new(&t, &cfg, lib_cb, &c) == TS_E_OK, "ts_tap_new");
  char *copy = malloc(len + 1);
  memcpy(copy, in, len);
  ts_tap_feed(t, copy, len);
  ts_tap_finish(t);
  *failed = ts_tap_failed(t);
  ts_tap_free(t);
  free(copy);
  *out = c.out;
}

/* ---- corpus: the gold traces, through files and stdin --------------------------------- */

static ts_test_gold *golds;
static size_t ngolds;

/* `toolstream tap --thread gold --no-time ARGS...` on every capture prints its gold byte for byte
 * (tests/corpus/README.md): given the file, given "-" with the capture on standard
 * input, and with no file at all. */
START_TEST(test_corpus) {
  const ts_test_gold *g = &golds[_i];
  size_t len, glen;
  char *text = ts_test_read_file(g->capture, &len);
  char *gold = ts_test_read_file(g->events, &glen);
  for (int via = 0; via < 3; via++) { /* a file, stdin as "-", stdin with no argument */
    const char *argv[TS_TEST_GOLD_MAX_ARGS + 8];
    int n = 0;
    argv[n++] = "toolstream";
    argv[n++] = "tap";
    argv[n++] = "--thread";
    argv[n++] = TS_TEST_GOLD_THREAD;
    argv[n++] = "--no-time"; /* golds hold no stamps: they change from run to run */
    for (int k = 0; k < g->argc; k++) argv[n++] = g->argv[k];
    if (via == 0) argv[n++] = g->capture;
    if (via == 1) argv[n++] = "-";
    argv[n] = NULL;
    result r = run(argv, via ? text : NULL, via ? len : 0);
    char ctx[300];
    snprintf(ctx, sizeof ctx, "%s via %s", g->name, via == 0 ? "file" : via == 1 ? "-" : "stdin");
    int failed = strstr(gold, "\"type\":\"stream_error\"") != NULL;
    REQUIRE(r.status == failed, "%s: exit %d, stderr: %s", ctx, r.status, sb_str(&r.err));
    REQUIRE(failed ? count_lines(sb_str(&r.err)) == 1 : r.err.len == 0,
            "%s: standard error: %s", ctx, sb_str(&r.err));
    size_t lines = check_lines(ctx, sb_str(&r.out), TS_TEST_GOLD_THREAD);
    REQUIRE(lines >= 1, "%s: no event", ctx); /* an error body gives one stream_error */
    REQUIRE(!strcmp(sb_str(&r.out), gold), "%s: output differs from the gold\nwant:\n%sgot:\n%s",
            ctx, sb_clip(gold), sb_clip(sb_str(&r.out)));
    result_free(&r);
  }
  free(gold);
  free(text);
}
END_TEST

/* ---- streams of our own ----------------------------------------------------------------- */

/* An Anthropic stream of one write_file call whose arguments are `args` in fragments of
 * at most `frag` bytes (0: one fragment); end: 0 complete, 1 no message_stop (truncated). */
static void anthropic_stream(sb *out, const char *args, size_t frag, int truncated) {
  sb_puts(out, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\","
               "\"usage\":{\"input_tokens\":5}}}\n\n");
  sb_puts(out, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
               "\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"write_file\","
               "\"input\":{}}}\n\n");
  size_t n = strlen(args);
  if (!frag) frag = n;
  for (size_t off = 0; off < n; off += frag) {
    size_t k = n - off < frag ? n - off : frag;
    sb_puts(out, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
                 "\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"");
    for (size_t i = off; i < off + k; i++) {
      if (args[i] == '"' || args[i] == '\\') sb_add(out, "\\", 1);
      sb_add(out, args + i, 1);
    }
    sb_puts(out, "\"}}\n\n");
  }
  if (truncated) return;
  sb_puts(out, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n");
  sb_puts(out, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
               "\"tool_use\"},\"usage\":{\"output_tokens\":9}}\n\n");
  sb_puts(out, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
}

/* Runs `toolstream tap ARGS... FILE` on `stream` written to a temp file, and checks the
 * output against the library run with `cfg`. Returns the result. */
static result run_on(const char *ctx, const char *const *args, const char *stream, size_t len,
                     ts_tap_config cfg, const parg *pargs, int check_lib) {
  char path[4096];
  write_temp(path, sizeof path, stream, len);
  const char *argv[40];
  int n = 0;
  argv[n++] = "toolstream";
  argv[n++] = "tap";
  if (check_lib) argv[n++] = "--no-time"; /* compared byte for byte with the library's events */
  for (int i = 0; args[i]; i++) argv[n++] = args[i];
  argv[n++] = path;
  argv[n] = NULL;
  result r = run(argv, NULL, 0);
  unlink(path);
  check_lines(ctx, sb_str(&r.out), NULL);
  if (check_lib) {
    int failed;
    sb want;
    lib_expect(&want, cfg, pargs, stream, len, &failed);
    REQUIRE(!strcmp(sb_str(&r.out), sb_str(&want)),
            "%s: output differs from the library's\nwant:\n%sgot:\n%s", ctx, sb_str(&want),
            sb_str(&r.out));
    REQUIRE(r.status == (failed ? 1 : 0), "%s: exit %d, the library says failed=%d; stderr: %s",
            ctx, r.status, failed, sb_str(&r.err));
    sb_free(&want);
  }
  return r;
}

static const parg write_desc[] = {{"write_file", "description"}, {NULL, NULL}};

START_TEST(test_options) {
  static const char args[] = "{\"description\":\"writing index.html\",\"content\":\""
                             "<html>0123456789012345678901234567890123456789</html>\\n\\t\"}";
  sb s = {0};
  anthropic_stream(&s, args, 7, 0);
  ts_tap_config cfg;

  /* --deltas, --text, --heartbeat-bytes=, --progress-max, in both spellings */
  const char *a1[] = {"--thread", "t", "--progress-arg", "write_file=description", "--deltas",
                      "--heartbeat-bytes=16", "--progress-max", "7", NULL};
  memset(&cfg, 0, sizeof cfg);
  cfg.deltas = 1;
  cfg.heartbeat_bytes = 16;
  cfg.progress_max = 7;
  result r = run_on("deltas, heartbeats, cap", a1, s.p, s.len, cfg, write_desc, 1);
  REQUIRE(r.status == 0, "exit %d", r.status);
  REQUIRE(strstr(sb_str(&r.out), "\"progress\":\"writing\",\"progress_truncated\":true}"),
          "want a cut label: %s", sb_str(&r.out));
  REQUIRE(strstr(sb_str(&r.out), "\"type\":\"tool_call_delta\""), "want deltas: %s", sb_str(&r.out));
  REQUIRE(strstr(sb_str(&r.out), "\"type\":\"tool_call_heartbeat\""), "want heartbeats: %s",
          sb_str(&r.out));
  result_free(&r);

  /* --tools FILE with progressArgument; --max-args-bytes fails the call (clean exit) */
  static const char tools[] =
      "[{\"name\":\"write_file\",\"description\":\"Write a file\",\"progressArgument\":\"description\","
      "\"args\":{\"type\":\"object\"}}]";
  char tpath[4096];
  write_temp(tpath, sizeof tpath, tools, strlen(tools));
  const char *a2[] = {"--thread", "t", "--tools", tpath, "--max-args-bytes=40", NULL};
  memset(&cfg, 0, sizeof cfg);
  cfg.max_args_bytes = 40;
  r = run_on("--tools, --max-args-bytes", a2, s.p, s.len, cfg, write_desc, 1);
  REQUIRE(r.status == 0, "a tool_call_error alone is a clean stream: exit %d", r.status);
  REQUIRE(strstr(sb_str(&r.out), "\"progress\":\"writing index.html\""), "%s", sb_str(&r.out));
  REQUIRE(strstr(sb_str(&r.out), "\"type\":\"tool_call_error\""), "%s", sb_str(&r.out));
  REQUIRE(strstr(sb_str(&r.out), "\"code\":\"limit\""), "%s", sb_str(&r.out));
  result_free(&r);
  unlink(tpath);

  /* --format given, --text */
  static const char chat[] =
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"}}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
      "data: [DONE]\n\n";
  const char *a3[] = {"--thread", "t", "--format", "openai-chat", "--text", NULL};
  memset(&cfg, 0, sizeof cfg);
  cfg.format = TS_FORMAT_OPENAI_CHAT;
  cfg.text = 1;
  r = run_on("--format, --text", a3, chat, strlen(chat), cfg, NULL, 1);
  REQUIRE(r.status == 0, "exit %d", r.status);
  REQUIRE(strstr(sb_str(&r.out), "\"type\":\"text_delta\""), "%s", sb_str(&r.out));
  result_free(&r);

  /* --format raw --tool */
  const char *a4[] = {"--thread", "t", "--format=raw", "--tool", "write_file", "--progress-arg",
                      "write_file=description", NULL};
  memset(&cfg, 0, sizeof cfg);
  cfg.format = TS_FORMAT_RAW;
  cfg.raw_tool = "write_file";
  r = run_on("raw", a4, args, strlen(args), cfg, write_desc, 1);
  REQUIRE(r.status == 0, "exit %d", r.status);
  char want[160];
  /* raw input names no call: its id is synthesized (turn 1, index 0) */
  snprintf(want, sizeof want, "\"offset\":%zu,\"call_id\":\"ts_1_0\",\"tool\":\"write_file\","
                              "\"index\":0,\"turn\":1,\"progress\":\"writing index.html\"}",
           strlen("{\"description\":\"writing index.html\""));
  REQUIRE(strstr(sb_str(&r.out), want), "raw: want %s in\n%s", want, sb_str(&r.out));
  result_free(&r);

  /* --turn N: a caller piping turn N of its thread; events carry it, and ids made up
   * for calls without one are ts_N_INDEX (raw input, as above) */
  const char *a6[] = {"--thread", "t", "--turn", "7", "--format=raw", "--tool", "write_file", NULL};
  memset(&cfg, 0, sizeof cfg);
  cfg.format = TS_FORMAT_RAW;
  cfg.raw_tool = "write_file";
  cfg.turn = 7;
  r = run_on("--turn", a6, args, strlen(args), cfg, NULL, 1);
  REQUIRE(r.status == 0, "exit %d", r.status);
  REQUIRE(strstr(sb_str(&r.out), "\"call_id\":\"ts_7_0\",\"tool\":\"write_file\",\"index\":0,"
                                 "\"turn\":7,"),
          "--turn 7: %s", sb_str(&r.out));
  REQUIRE(!strstr(sb_str(&r.out), "\"turn\":1"), "--turn 7: %s", sb_str(&r.out));
  result_free(&r);
  /* a provider's own ids stay; the turn is still stamped */
  const char *a7[] = {"--thread", "t", "--turn=2", NULL};
  memset(&cfg, 0, sizeof cfg);
  cfg.turn = 2;
  r = run_on("--turn=2, provider ids", a7, s.p, s.len, cfg, NULL, 1);
  REQUIRE(r.status == 0, "exit %d", r.status);
  REQUIRE(strstr(sb_str(&r.out), "\"turn\":2,") && !strstr(sb_str(&r.out), "\"call_id\":\"ts_"),
          "--turn=2: %s", sb_str(&r.out));
  result_free(&r);

  /* no --thread: a random th_ + 16 hex digits, the same on every line */
  const char *a5[] = {NULL};
  r = run_on("default thread", a5, s.p, s.len, cfg, NULL, 0);
  REQUIRE(r.status == 0, "exit %d", r.status);
  const char *th = strstr(sb_str(&r.out), "\"thread\":\"th_");
  REQUIRE(th != NULL, "no th_ thread id: %s", sb_str(&r.out));
  for (int i = 0; i < 16; i++)
    REQUIRE(strchr("0123456789abcdef", th[13 + i]) && th[13 + i], "thread id not 16 hex digits: %.40s", th);
  REQUIRE(th[29] == '"', "thread id too long: %.40s", th);
  result_free(&r);
  sb_free(&s);
}
END_TEST

/* ---- streams that end in error: exit 1 and one line on standard error ----------------------- */

START_TEST(test_errors) {
  ts_tap_config cfg;
  memset(&cfg, 0, sizeof cfg);
  const char *a[] = {"--thread", "t", "--progress-arg", "write_file=description", NULL};
  sb s = {0};

  /* truncated: EOF without message_stop */
  anthropic_stream(&s, "{\"description\":\"x\",\"content\":\"abc", 5, 1);
  result r = run_on("truncated", a, s.p, s.len, cfg, write_desc, 1);
  REQUIRE(r.status == 1, "truncated: exit %d", r.status);
  REQUIRE(count_lines(sb_str(&r.err)) == 1 && r.err.p[r.err.len - 1] == '\n',
          "truncated: want one line on stderr, got '%s'", sb_str(&r.err));
  REQUIRE(strstr(sb_str(&r.out), "\"type\":\"stream_error\""), "%s", sb_str(&r.out));
  REQUIRE(strstr(sb_str(&r.out), "\"code\":\"ms_truncated\""), "%s", sb_str(&r.out));
  result_free(&r);
  sb_free(&s);

  static const struct {
    const char *label, *stream;
  } cases[] = {
      {"provider error",
       "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n"
       "data: {\"error\":{\"message\":\"Overloaded\",\"type\":\"server_error\"}}\n\n"},
      {"anthropic error event",
       "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n"
       "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
       "\"message\":\"Overloaded\"}}\n\n"},
      {"a payload that is not JSON (the stream still ends)",
       "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n"
       "data: {\"choices\":[\n\n"
       "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
       "data: [DONE]\n\n"},
      {"unknown format", ": keep-alive\n\n: keep-alive\n\n"},
      {"empty input", ""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    r = run_on(cases[i].label, a, cases[i].stream, strlen(cases[i].stream), cfg, write_desc, 1);
    REQUIRE(r.status == 1, "%s: exit %d", cases[i].label, r.status);
    REQUIRE(count_lines(sb_str(&r.err)) == 1 && r.err.p[r.err.len - 1] == '\n',
            "%s: want one line on stderr, got '%s'", cases[i].label, sb_str(&r.err));
    REQUIRE(strstr(sb_str(&r.out), "\"type\":\"stream_error\""), "%s: %s", cases[i].label,
            sb_str(&r.out));
    result_free(&r);
  }

  /* an oversized event (--max-event-bytes) */
  anthropic_stream(&s, "{\"description\":\"x\",\"content\":\"0123456789012345678901234567890123456789\"}",
                   0, 0);
  const char *a2[] = {"--thread", "t", "--max-event-bytes", "128", NULL};
  cfg.max_event_bytes = 128;
  r = run_on("--max-event-bytes", a2, s.p, s.len, cfg, NULL, 1);
  REQUIRE(r.status == 1, "oversized: exit %d", r.status);
  REQUIRE(count_lines(sb_str(&r.err)) == 1, "oversized: stderr '%s'", sb_str(&r.err));
  REQUIRE(strstr(sb_str(&r.out), "\"code\":\"sse_event_too_large\""), "%s", sb_str(&r.out));
  result_free(&r);
  sb_free(&s);

  /* a file that cannot be opened */
  const char *a3[] = {"toolstream", "tap", TS_BINARY_DIR "/no/such/file.sse", NULL};
  r = run(a3, NULL, 0);
  REQUIRE(r.status == 1, "missing file: exit %d", r.status);
  REQUIRE(count_lines(sb_str(&r.err)) == 1, "missing file: stderr '%s'", sb_str(&r.err));
  REQUIRE(r.out.len == 0, "missing file: stdout '%s'", sb_str(&r.out));
  result_free(&r);
}
END_TEST

/* ---- usage ---------------------------------------------------------------------------------- */

START_TEST(test_usage) {
  static const char *const bad[][8] = {
      {"toolstream", "tap", "--bogus", NULL},
      {"toolstream", "tap", "-x", NULL},
      {"toolstream", "tap", "--format", "raw", NULL},
      {"toolstream", "tap", "--format=raw", "--progress-arg", "w=d", NULL},
      {"toolstream", "tap", "--format", "nope", NULL},
      {"toolstream", "tap", "--format", NULL},
      {"toolstream", "tap", "--heartbeat-bytes", "abc", NULL},
      {"toolstream", "tap", "--progress-max=0", NULL},
      {"toolstream", "tap", "--progress-arg", "noequals", NULL},
      {"toolstream", "tap", "a.sse", "b.sse", NULL},
      {"toolstream", "tap", "--turn", "0", NULL},
      {"toolstream", "tap", "--turn", "4294967296", NULL},
      {"toolstream", "tap", "--turn=x", NULL},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    result r = run(bad[i], "data: [DONE]\n\n", 14);
    REQUIRE(r.status == 2, "%s %s %s: exit %d, want 2", bad[i][2], bad[i][3] ? bad[i][3] : "",
            bad[i][3] && bad[i][4] ? bad[i][4] : "", r.status);
    REQUIRE(r.err.len > 0, "%s: nothing on stderr", bad[i][2]);
    REQUIRE(r.out.len == 0, "%s: something on stdout: %s", bad[i][2], sb_str(&r.out));
    result_free(&r);
  }
  static const char *const opts[] = {"--format", "--tool", "--tools", "--progress-arg", "--thread",
                                     "--deltas", "--text", "--heartbeat-bytes", "--progress-max",
                                     "--max-args-bytes", "--max-event-bytes", "--turn", "--help"};
  static const char *const help[][4] = {{"toolstream", "tap", "--help", NULL},
                                        {"toolstream", "tap", "-h", NULL}};
  for (int h = 0; h < 2; h++) {
    result r = run(help[h], NULL, 0);
    REQUIRE(r.status == 0, "%s: exit %d", help[h][2], r.status);
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
      REQUIRE(strstr(sb_str(&r.out), opts[i]), "%s does not mention %s:\n%s", help[h][2], opts[i],
              sb_str(&r.out));
    result_free(&r);
  }
}
END_TEST

/* ---- events are flushed as they happen -------------------------------------------------------- */

/* The description is written first; tool_call_started must be readable on stdout while
 * the long content is still being written, slowly. */
START_TEST(test_pipe_flush) {
  static const char head[] =
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n"
      "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
      "\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"write_file\","
      "\"input\":{}}}\n\n"
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":"
      "{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"description\\\":\\\"writing "
      "index.html\\\",\\\"content\\\":\\\"\"}}\n\n";
  static const char piece[] =
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":"
      "{\"type\":\"input_json_delta\",\"partial_json\":\"<p>lorem ipsum dolor sit amet</p>\\\\n\"}}\n\n";
  static const char tail[] =
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":"
      "{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"}\"}}\n\n"
      "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
      "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
      "\"tool_use\"}}\n\n"
      "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
  const char *argv[] = {"toolstream", "tap", "--thread", "t", "--progress-arg",
                        "write_file=description", NULL};
  signal(SIGPIPE, SIG_IGN);
  result r;
  memset(&r, 0, sizeof r);
  sb_puts(&r.out, "");
  sb_puts(&r.err, "");
  child c = spawn(argv, 1);
  feed_all(&c, &r, head, strlen(head));
  /* Wait (up to 10 s) for the started line, with the rest of the input not written. */
  double t0 = now_ms();
  while (!strstr(sb_str(&r.out), "\"type\":\"tool_call_started\"") && now_ms() - t0 < 10000)
    pump(&c, &r, 50);
  int early = strstr(sb_str(&r.out), "\"type\":\"tool_call_started\"") != NULL;
  int early_ready = strstr(sb_str(&r.out), "\"type\":\"tool_call_ready\"") != NULL;
  /* the rest, slowly: 20 pieces 20 ms apart */
  for (int i = 0; i < 20; i++) {
    feed_all(&c, &r, piece, strlen(piece));
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    pump(&c, &r, 0);
  }
  feed_all(&c, &r, tail, strlen(tail));
  finish_child(&c, &r);
  REQUIRE(early, "tool_call_started was not readable before the rest of the input was written "
                 "(stdout so far: '%s')", sb_str(&r.out));
  REQUIRE(!early_ready, "ready before its arguments were written");
  REQUIRE(strstr(sb_str(&r.out), "\"progress\":\"writing index.html\""), "%s", sb_str(&r.out));
  REQUIRE(r.status == 0, "exit %d; stderr %s", r.status, sb_str(&r.err));
  size_t n = check_lines("pipe", sb_str(&r.out), "t");
  REQUIRE(n == 3, "want started, ready, finished; got\n%s", sb_str(&r.out));
  REQUIRE(strstr(sb_str(&r.out), "\"type\":\"tool_call_ready\""), "%s", sb_str(&r.out));
  result_free(&r);
}
END_TEST

/* ---- a 64 MiB call (issue 19) ------------------------------------------------------------ */

/* Runs `toolstream tap --no-time ARGS... IN` with standard output into the file `out`;
 * returns the exit status and the child's peak resident memory (KiB). */
static int run_to_file(const char *const *args, const char *in, const char *out, long *maxrss_kib) {
  pid_t pid = fork();
  REQUIRE(pid >= 0, "fork: %s", strerror(errno));
  if (pid == 0) {
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0) _exit(126);
    /* ASan: freed blocks go back at once, so its peak is the program's, not the quarantine's */
    setenv("ASAN_OPTIONS", "quarantine_size_mb=0:detect_leaks=0", 1);
    const char *argv[16];
    int n = 0;
    argv[n++] = "toolstream";
    argv[n++] = "tap";
    argv[n++] = "--no-time";
    for (int i = 0; args[i]; i++) argv[n++] = args[i];
    argv[n++] = in;
    argv[n] = NULL;
    execv(BINARY, (char *const *)argv);
    _exit(127);
  }
  int st;
  REQUIRE(waitpid(pid, &st, 0) == pid, "waitpid: %s", strerror(errno));
  struct rusage ru; /* the largest of the children waited for: run the small one first */
  getrusage(RUSAGE_CHILDREN, &ru);
  *maxrss_kib = ru.ru_maxrss;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* A call of 64 MiB: its READY line carries the arguments whole (the line cap follows
 * --max-args-bytes), the turn finishes, the exit status is 0, and the command holds
 * about one copy of the call: its peak memory over a tiny call's is below 1.3 times the
 * arguments (two copies, the old way, would be 2). Under ASan realloc always copies, so
 * there the bound is what two copies would be plus slack. */
START_TEST(test_huge_call) {
  size_t len = (size_t)64 << 20;
  sb args = {0}, in = {0};
  ts_test_big_args(&args, len);
  ts_test_big_stream(&in, "openai-chat", args.p, args.len, 4096);
  char inpath[4096], outpath[4200], small[4096];
  write_temp(inpath, sizeof inpath, in.p, in.len);
  snprintf(outpath, sizeof outpath, "%s.out", inpath);
  sb tiny = {0}, targs = {0};
  ts_test_big_args(&targs, 1000);
  ts_test_big_stream(&tiny, "openai-chat", targs.p, targs.len, 100);
  write_temp(small, sizeof small, tiny.p, tiny.len);
  /* The children's peak counts what they inherit before exec: hold nothing big now. */
  sb_free(&args);
  sb_free(&in);
  static const char *const opts[] = {"--max-args-bytes", "80m", NULL};
  long base_kib, big_kib;
  REQUIRE(run_to_file(opts, small, outpath, &base_kib) == 0, "the tiny call failed");
  int status = run_to_file(opts, inpath, outpath, &big_kib);
  size_t olen;
  char *out = ts_test_read_file(outpath, &olen);
  unlink(inpath);
  unlink(small);
  unlink(outpath);
  REQUIRE(status == 0, "exit %d", status);
  ts_test_big_args(&args, len); /* the same bytes again */
  const char *ready = strstr(out, "\"type\":\"tool_call_ready\"");
  REQUIRE(ready != NULL, "no tool_call_ready line");
  const char *a = strstr(ready, "\"arguments\":");
  REQUIRE(a != NULL, "no arguments");
  a += strlen("\"arguments\":");
  REQUIRE((size_t)(out + olen - a) > len && !memcmp(a, args.p, len) && a[len] == '}' &&
              a[len + 1] == '\n',
          "the arguments differ");
  const char *last = strstr(a + len, "\"type\":\"turn_finished\"");
  REQUIRE(last != NULL && strchr(last, '\n') == out + olen - 1, "turn_finished is not the last line");
  double copies = (double)(big_kib - base_kib) * 1024.0 / (double)len;
  fprintf(stderr, "64 MiB call: peak %ld KiB, %ld KiB for a tiny call: %.2f copies\n", big_kib,
          base_kib, copies);
#if defined(__SANITIZE_ADDRESS__)
  REQUIRE(copies < 2.5, "peak memory %.2f copies of the call", copies);
#else
  REQUIRE(copies < 1.3, "peak memory %.2f copies of the call", copies);
#endif
  free(out);
  sb_free(&args);
  sb_free(&in);
  sb_free(&tiny);
  sb_free(&targs);
}
END_TEST

int main(void) {
  ngolds = ts_test_gold_list(&golds);
  Suite *s = suite_create("tap_cli");
  TCase *tc = tcase_create("cli");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_corpus, 0, (int)ngolds);
  tcase_add_test(tc, test_options);
  tcase_add_test(tc, test_errors);
  tcase_add_test(tc, test_usage);
  tcase_add_test(tc, test_pipe_flush);
  suite_add_tcase(s, tc);
  /* 64 MiB through the binary: minutes under ASan on a busy machine */
  TCase *big = tcase_create("huge");
  tcase_set_timeout(big, 900);
  tcase_add_test(big, test_huge_call);
  suite_add_tcase(s, big);
  int rc = ts_test_run(s, 0);
  ts_test_gold_free(golds, ngolds);
  return rc;
}
