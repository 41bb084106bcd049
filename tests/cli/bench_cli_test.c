/*
 * bench_cli_test.c: `toolstream bench` as a user runs it.
 *
 * Live: the local model server (tests/model_server.c) injects known delays: the first byte
 * 400 ms after the request (ttfb=), 30 ms between SSE events (gap=), and 1200 ms held
 * before the event after the label (hold=). Each measured figure must be within a stated
 * tolerance of what was injected. Tolerances a loaded machine cannot break: the delays
 * are large, and a load only makes things later, so lower bounds are tight (the injected
 * delay less SLACK_MS: the server's timers count from its event loop's cached time, which
 * can be a few ms before it armed them; for the lead, less a margin for the reader being
 * descheduled just at the label); upper bounds are loose (seconds). Byte figures are exact.
 *
 * Also: retries and errors counted; --record then --replay --pace recorded reproducing the
 * delays offline; --replay twice giving the same figures in everything but time; the CSV
 * read by Python's csv with the columns docs/bench.md documents; --from-store over a run's
 * thread; --compare telling a real difference from none, the same way every time; usage
 * errors.
 */
#include <check.h>
#include <signal.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/model_server.h"
#include "support/proc.h"
#include "support/runner.h"
#include "support/tempdir.h"
#include "support/test_support.h"

#define BINARY TS_BINARY_DIR "/toolstream"
#define SLACK_MS 10

static char base[64];

static void setup(void) { ts_test_tempdir(base, sizeof base, "bench-cli"); }
static void teardown(void) {
  if (base[0]) ts_test_rm_rf(base);
}

static const char *at(const char *rel) {
  static char buf[32][512]; /* a test holds a few of them at once */
  static int k;
  k = (k + 1) % 32;
  snprintf(buf[k], sizeof buf[k], "%s/%s", base, rel);
  return buf[k];
}

/* One OpenAI Chat event. */
static void chunk(sb *b, const char *delta, const char *finish) {
  sb_printf(b, "data: {\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", delta,
            finish ? finish : "null");
}

/* The argument text after the label, as the model sends it (JSON-escaped in the events). */
static const char *const AFTER_LABEL[] = {"\\\"content\\\":\\\"HOLDHERE ", "aaaaaaaaaa",
                                          "bbbbbbbbbb", "cccccccccc", "dddddddddd", "\\\"}"};
#define AFTER_LABEL_BYTES (strlen("\"content\":\"HOLDHERE ") + 40 + 2)

/* A reply: text, a write_file call whose label (description) completes in its own event,
 * then six events of content (the first holds HOLDHERE), finish, usage. Writes it to
 * `path`; *label_end / *ready_end get the stream offsets of the label's and the last
 * argument event's ends. */
static void make_reply(const char *path, size_t *label_end, size_t *ready_end) {
  sb b;
  memset(&b, 0, sizeof b);
  chunk(&b, "{\"role\":\"assistant\",\"content\":\"On it.\"}", NULL);
  chunk(&b, "{\"tool_calls\":[{\"index\":0,\"id\":\"call_b1\",\"type\":\"function\",\"function\":"
            "{\"name\":\"write_file\",\"arguments\":\"\"}}]}", NULL);
  chunk(&b, "{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"description\\\":"
            "\\\"writing a.txt\\\",\"}}]}", NULL);
  if (label_end) *label_end = b.len;
  for (size_t i = 0; i < sizeof AFTER_LABEL / sizeof AFTER_LABEL[0]; i++) {
    char d[256];
    snprintf(d, sizeof d, "{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"%s\"}}]}",
             AFTER_LABEL[i]);
    chunk(&b, d, NULL);
  }
  if (ready_end) *ready_end = b.len;
  chunk(&b, "{}", "\"tool_calls\"");
  sb_puts(&b, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":40}}\n\n");
  sb_puts(&b, "data: [DONE]\n\n");
  ts_test_write_file(path, sb_str(&b), b.len);
  sb_free(&b);
}

static void make_tools(void) {
  ts_test_put(at("tools.json"), "[{\"name\":\"write_file\",\"description\":\"writes a file\","
                                "\"progressArgument\":\"description\",\"parameters\":{\"type\":"
                                "\"object\"}}]");
}

static result bench(const char *const *args) {
  const char *argv[48] = {"toolstream", "bench"};
  size_t n = 2;
  for (; args[n - 2] && n < 47; n++) argv[n] = args[n - 2];
  argv[n] = NULL;
  return run_bin(BINARY, argv, NULL, 0);
}

/* ---- CSV ------------------------------------------------------------------------------ */

typedef struct {
  char *cells[64];
  int n;
} row;

/* Splits one line (our test data has no quoted fields). */
static row split_row(char *line) {
  row r = {.n = 0};
  char *p = line;
  for (;;) {
    char *c = strchr(p, ',');
    r.cells[r.n++] = p;
    if (!c || r.n == 64) break;
    *c = '\0';
    p = c + 1;
  }
  return r;
}

typedef struct {
  row head;
  row rows[64];
  int n;
  char *text;
} table;

static table read_csv(const char *path) {
  table t = {.n = 0};
  size_t len;
  t.text = ts_test_read_file(path, &len);
  char *save = NULL;
  char *line = strtok_r(t.text, "\n", &save);
  ck_assert_msg(line != NULL, "empty CSV");
  t.head = split_row(line);
  while ((line = strtok_r(NULL, "\n", &save)) && t.n < 64) t.rows[t.n++] = split_row(line);
  return t;
}

static const char *cell(const table *t, int i, const char *col) {
  for (int k = 0; k < t->head.n; k++)
    if (!strcmp(t->head.cells[k], col)) return k < t->rows[i].n ? t->rows[i].cells[k] : "";
  ck_abort_msg("no column %s", col);
  return "";
}

static double num(const table *t, int i, const char *col) {
  const char *c = cell(t, i, col);
  ck_assert_msg(*c, "row %d: %s is empty", i, col);
  return strtod(c, NULL);
}

/* ---- live, with injected delays -------------------------------------------------------- */

START_TEST(live_injected_delays) {
  mkdir(at("session"), 0755);
  size_t label_end, ready_end;
  make_reply(at("session/turn-1.sse"), &label_end, &ready_end);
  make_tools();
  ts_test_server srv;
  ts_test_server_start(&srv, at("session"), NULL, NULL);
  char url[256];
  snprintf(url, sizeof url,
           "http://127.0.0.1:%d/v1?ttfb=400&gap=30&hold=HOLDHERE&hold-ms=1200&cycle=1", srv.port);
  const char *args[] = {"--model-url", url, "--model", "m", "--tools", at("tools.json"),
                        "--runs", "2", "--concurrency", "2", "--warmup", "1", "--quiet",
                        "--csv", at("live.csv"), "--json", at("live.json"), "--record",
                        at("rec"), "write a.txt", NULL};
  result r = bench(args);
  ts_test_server_stop(&srv);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, sb_str(&r.err));
  /* the table: every metric with its count */
  ck_assert_msg(strstr(sb_str(&r.out), "2 requests, 2 tool calls (2 with a progress label), 0 "
                                       "errors, 0 retries"), "%s", sb_str(&r.out));
  ck_assert_msg(strstr(sb_str(&r.out), "(lead_ms, ms)"), "%s", sb_str(&r.out));
  /* the warm-up request went to the server too, unmeasured */
  ck_assert_int_eq(access(at("session/requests/3.json"), F_OK), 0);
  ck_assert_int_ne(access(at("session/requests/4.json"), F_OK), 0);
  /* what was sent: the prompt and the tool in OpenAI's shape */
  size_t n;
  char *sent = ts_test_read_file(at("session/requests/2.json"), &n);
  ck_assert_msg(strstr(sent, "\"write a.txt\"") && strstr(sent, "\"write_file\"") &&
                    strstr(sent, "\"stream\":true"), "%s", sent);
  free(sent);

  table t = read_csv(at("live.csv"));
  ck_assert_int_eq(t.n, 2);
  for (int i = 0; i < 2; i++) {
    double ttfb = num(&t, i, "ttfb_ms"), name = num(&t, i, "name_ms"),
           label = num(&t, i, "label_ms"), args_ms = num(&t, i, "args_ms"),
           lead = num(&t, i, "lead_ms"), total = num(&t, i, "total_ms");
    /* injected: first byte at 400 ms; the name one gap (30 ms) after the first event, the
     * label one more; then 30 ms + 1200 ms held + five gaps to the last argument event */
    ck_assert_msg(ttfb >= 400 - SLACK_MS && ttfb < 400 + 8000, "ttfb %g", ttfb);
    ck_assert_msg(num(&t, i, "first_token_ms") >= 400 - SLACK_MS, "first token");
    ck_assert_msg(name >= 430 - SLACK_MS && name < 430 + 8000, "name %g", name);
    ck_assert_msg(label >= 460 - SLACK_MS && label >= name, "label %g", label);
    ck_assert_msg(lead >= 1200 - 250 && lead < 1380 + 8000, "lead %g (1380 injected)", lead);
    ck_assert_msg(args_ms >= label + lead - 0.01 && total >= args_ms, "args %g total %g", args_ms,
                  total);
    /* bytes: exact */
    ck_assert_double_eq(num(&t, i, "lead_bytes"), (double)AFTER_LABEL_BYTES);
    ck_assert_double_eq(num(&t, i, "lead_stream_bytes"), (double)(ready_end - label_end));
    ck_assert_str_eq(cell(&t, i, "output_tokens"), "40");
    ck_assert_str_eq(cell(&t, i, "errors"), "0");
    ck_assert_str_eq(cell(&t, i, "retries"), "0");
    ck_assert_str_eq(cell(&t, i, "tool"), "write_file");
    ck_assert_str_eq(cell(&t, i, "call_id"), "call_b1");
    ck_assert_str_eq(cell(&t, i, "has_label"), "1");
    ck_assert_str_eq(cell(&t, i, "result_ms"), ""); /* bench runs no tool */
  }
  free(t.text);

  /* the recording, replayed offline at its recorded times, shows the same delays */
  ck_assert_int_eq(access(at("rec/0001.sse"), F_OK), 0);
  ck_assert_int_eq(access(at("rec/0002.sse.times"), F_OK), 0);
  const char *rargs[] = {"--replay", at("rec"), "--pace", "recorded", "--tools", at("tools.json"),
                         "--csv", at("rec.csv"), "--quiet", NULL};
  result rr = bench(rargs);
  ck_assert_msg(rr.status == 0, "exit %d: %s", rr.status, sb_str(&rr.err));
  t = read_csv(at("rec.csv"));
  ck_assert_int_eq(t.n, 2);
  for (int i = 0; i < 2; i++) {
    ck_assert_msg(num(&t, i, "ttfb_ms") >= 400 - SLACK_MS, "replayed ttfb %g",
                  num(&t, i, "ttfb_ms"));
    ck_assert_msg(num(&t, i, "lead_ms") >= 1200 - 250, "replayed lead %g", num(&t, i, "lead_ms"));
    ck_assert_double_eq(num(&t, i, "lead_bytes"), (double)AFTER_LABEL_BYTES);
  }
  free(t.text);
  result_free(&r);
  result_free(&rr);
}
END_TEST

START_TEST(live_retries_and_errors) {
  mkdir(at("session"), 0755);
  make_reply(at("session/turn-1.sse"), NULL, NULL);
  make_tools();
  ts_test_server srv;
  ts_test_server_start(&srv, at("session"), NULL, NULL);
  char url[256];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/v1?status=503&times=1&cycle=1", srv.port);
  const char *args[] = {"--model-url", url, "--model", "m", "--tools", at("tools.json"), "--csv",
                        at("r.csv"), "-q", "hello", NULL};
  result r = bench(args);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, sb_str(&r.err));
  table t = read_csv(at("r.csv"));
  ck_assert_str_eq(cell(&t, 0, "retries"), "1");
  ck_assert_str_eq(cell(&t, 0, "errors"), "0");
  free(t.text);
  result_free(&r);
  /* a refusal: counted and shown; nothing measured is exit 1 */
  snprintf(url, sizeof url, "http://127.0.0.1:%d/v1?status=400", srv.port);
  const char *bad[] = {"--model-url", url, "--model", "m", "--csv", at("e.csv"), "-q", "hello",
                       NULL};
  r = bench(bad);
  ts_test_server_stop(&srv);
  ck_assert_msg(r.status == 1, "exit %d", r.status);
  ck_assert_msg(strstr(sb_str(&r.out), "1 error") && strstr(sb_str(&r.out), "HTTP 400"), "%s",
                sb_str(&r.out));
  ck_assert_msg(strstr(sb_str(&r.err), "nothing was measured"), "%s", sb_str(&r.err));
  t = read_csv(at("e.csv"));
  ck_assert_str_eq(cell(&t, 0, "errors"), "1");
  ck_assert_str_eq(cell(&t, 0, "ttfb_ms"), "");
  free(t.text);
  result_free(&r);
}
END_TEST

/* A refusal whose message echoes the API key: bench's table, JSON and CSV show the
 * message with the key redacted (they are files a user shares), never the key. */
START_TEST(live_error_echoing_key_is_redacted) {
  mkdir(at("session"), 0755);
  make_reply(at("session/turn-1.sse"), NULL, NULL);
  ts_test_server srv;
  ts_test_server_start(&srv, at("session"), NULL, NULL);
  char url[256];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/v1?status=401&errbody=echo", srv.port);
  setenv("OPENAI_API_KEY", "sk-bench-DO-NOT-LEAK-7", 1);
  const char *args[] = {"--model-url", url, "--model", "m", "--json", at("e.json"), "--csv",
                        at("e.csv"), "-q", "hello", NULL};
  result r = bench(args);
  unsetenv("OPENAI_API_KEY");
  ts_test_server_stop(&srv);
  ck_assert_msg(r.status == 1, "exit %d", r.status);
  ck_assert_msg(strstr(sb_str(&r.out), "HTTP 401: Incorrect API key provided: Bearer [redacted]"),
                "%s", sb_str(&r.out));
  const char *files[] = {"e.json", "e.csv"};
  for (size_t i = 0; i < 2; i++) {
    size_t n;
    char *f = ts_test_read_file(at(files[i]), &n);
    ck_assert_msg(strstr(f, "[redacted]") && !strstr(f, "DO-NOT-LEAK"), "%s: %s", files[i], f);
    free(f);
  }
  ck_assert_ptr_null(strstr(sb_str(&r.out), "DO-NOT-LEAK"));
  ck_assert_ptr_null(strstr(sb_str(&r.err), "DO-NOT-LEAK"));
  result_free(&r);
}
END_TEST

START_TEST(interrupt_reports_what_finished) {
  mkdir(at("session"), 0755);
  make_reply(at("session/turn-1.sse"), NULL, NULL);
  ts_test_server srv;
  ts_test_server_start(&srv, at("session"), NULL, NULL);
  char url[256];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/v1?ttfb=100&cycle=1", srv.port);
  const char *argv[] = {"toolstream", "bench", "--model-url", url, "--model", "m", "--runs",
                        "1000", "--csv", at("i.csv"), "hi", NULL};
  child c = spawn_bin(BINARY, argv, 0);
  result r;
  memset(&r, 0, sizeof r);
  /* the third request has arrived: two have finished (one at a time) */
  double t0 = now_ms();
  while (access(at("session/requests/3.json"), F_OK) && now_ms() - t0 < 60000) pump(&c, &r, 50);
  kill(c.pid, SIGINT);
  finish_child(&c, &r);
  ts_test_server_stop(&srv);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, sb_str(&r.err));
  int n = atoi(sb_str(&r.out));
  ck_assert_msg(n >= 2 && n < 1000, "%s", sb_str(&r.out));
  table t = read_csv(at("i.csv"));
  ck_assert_int_eq(t.n, n); /* one call each, every one complete */
  for (int i = 0; i < t.n; i++) ck_assert_str_eq(cell(&t, i, "errors"), "0");
  free(t.text);
  result_free(&r);
}
END_TEST

START_TEST(live_bedrock_event_stream) {
  /* a reply that is not SSE: Bedrock's binary event stream (the server names *.bin files
   * application/vnd.amazon.eventstream; the probe's taps get that Content-Type, as run's
   * tap does) */
  mkdir(at("session"), 0755);
  size_t len;
  char *bin = ts_test_read_file(ts_test_path("tests/corpus/bedrock-converse-stream-tool.bin"), &len);
  ts_test_write_file(at("session/turn-1.bin"), bin, len);
  free(bin);
  ts_test_server srv;
  ts_test_server_start(&srv, at("session"), NULL, NULL);
  char url[256];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", srv.port);
  const char *args[] = {"--model-url", url, "--provider", "bedrock", "--model", "m", "--csv",
                        at("b.csv"), "-q", "hello", NULL};
  result r = bench(args);
  ts_test_server_stop(&srv);
  ck_assert_msg(r.status == 0, "exit %d: %s%s", r.status, sb_str(&r.out), sb_str(&r.err));
  ck_assert_msg(strstr(sb_str(&r.out), "1 request, 1 tool call") &&
                    strstr(sb_str(&r.out), " 0 errors"), "%s", sb_str(&r.out));
  table t = read_csv(at("b.csv"));
  ck_assert_msg(*cell(&t, 0, "tool") && *cell(&t, 0, "args_ms"), "tool '%s'", cell(&t, 0, "tool"));
  free(t.text);
  result_free(&r);
}
END_TEST

/* ---- replay ---------------------------------------------------------------------------- */

/* The columns that do not depend on the clock. */
static const char *const STABLE[] = {"request", "source", "turn", "output_tokens", "errors",
                                     "retries", "call_index", "call_id", "tool", "has_label",
                                     "arg_bytes", "lead_bytes", "lead_stream_bytes", "error"};

START_TEST(replay_reproducible) {
  mkdir(at("rec"), 0755);
  make_reply(at("rec/a.sse"), NULL, NULL);
  size_t len;
  char *cap = ts_test_read_file(ts_test_path("tests/corpus/openai-chat-two-parallel-calls.sse"), &len);
  ts_test_write_file(at("rec/b.sse"), cap, len);
  free(cap);
  make_tools();
  table t[2];
  for (int k = 0; k < 2; k++) {
    const char *csv = k ? at("two.csv") : at("one.csv");
    const char *args[] = {"--replay", at("rec"), "--pace", "20", "--runs", "2", "--tools",
                          at("tools.json"), "--progress-arg", "create_ticket=title", "--csv",
                          csv, "-q", NULL};
    result r = bench(args);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, sb_str(&r.err));
    result_free(&r);
    t[k] = read_csv(csv);
  }
  ck_assert_int_eq(t[0].n, 6); /* (1 + 2 calls) x 2 runs */
  ck_assert_int_eq(t[1].n, t[0].n);
  for (int i = 0; i < t[0].n; i++) {
    for (size_t c = 0; c < sizeof STABLE / sizeof STABLE[0]; c++)
      ck_assert_msg(!strcmp(cell(&t[0], i, STABLE[c]), cell(&t[1], i, STABLE[c])),
                    "row %d %s: %s vs %s", i, STABLE[c], cell(&t[0], i, STABLE[c]),
                    cell(&t[1], i, STABLE[c]));
    /* times: the pace (50 ms an event, of which the player makes up at most 25 ms of
     * lateness) gives the lower bound, the machine only adds */
    if (!strcmp(cell(&t[0], i, "call_id"), "call_b1"))
      for (int k = 0; k < 2; k++)
        ck_assert_msg(num(&t[k], i, "lead_ms") >= 6 * 25 - 30 && num(&t[k], i, "lead_ms") < 8000,
                      "lead %g", num(&t[k], i, "lead_ms"));
  }
  free(t[0].text);
  free(t[1].text);
}
END_TEST

START_TEST(rate_limit) {
  /* --rate 4: five requests start at 0, 250, 500, 750 and 1000 ms at the earliest */
  mkdir(at("rec"), 0755);
  make_reply(at("rec/a.sse"), NULL, NULL);
  const char *args[] = {"--replay", at("rec"), "--pace", "100000", "--runs", "5", "--rate", "4",
                        "--concurrency", "3", "--csv", at("r.csv"), "-q", NULL};
  double t0 = now_ms();
  result r = bench(args);
  double took = now_ms() - t0;
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, sb_str(&r.err));
  ck_assert_msg(took >= 1000 - SLACK_MS, "5 requests at 4/s took %g ms", took);
  table t = read_csv(at("r.csv"));
  ck_assert_int_eq(t.n, 5);
  free(t.text);
  result_free(&r);
}
END_TEST

START_TEST(progress_bar_on_a_terminal) {
  /* on a terminal (a pseudo-terminal from util-linux's script), standard error gets a bar
   * that ends cleared; without one (every other test here), none */
  mkdir(at("rec"), 0755);
  make_reply(at("rec/a.sse"), NULL, NULL);
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s bench --replay %s --pace 100000 --runs 3", BINARY, at("rec"));
  const char *argv[] = {"script", "-qec", cmd, "/dev/null", NULL};
  result r = run_bin("/usr/bin/script", argv, NULL, 0);
  ck_assert_msg(r.status == 0, "exit %d: %s%s", r.status, sb_str(&r.out), sb_str(&r.err));
  ck_assert_msg(strstr(sb_str(&r.out), "] 1/3 requests") && strstr(sb_str(&r.out), "] 3/3 requests")
                    && strstr(sb_str(&r.out), "[##############################]"),
                "%s", sb_str(&r.out));
  ck_assert_msg(strstr(sb_str(&r.out), "3 requests, 3 tool calls"), "%s", sb_str(&r.out));
  result_free(&r);
  const char *plain[] = {"--replay", at("rec"), "--pace", "100000", NULL};
  r = bench(plain);
  ck_assert_msg(r.status == 0 && !strstr(sb_str(&r.err), "requests"), "%s", sb_str(&r.err));
  result_free(&r);
}
END_TEST

START_TEST(csv_in_python) {
  mkdir(at("rec"), 0755);
  make_reply(at("rec/a.sse"), NULL, NULL);
  ts_test_put(at("rec/text.sse"), "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi, \\\"you\\\"\"}}]}\n\n"
                                  "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
                                  "data: [DONE]\n\n");
  make_tools();
  const char *args[] = {"--replay", at("rec"), "--pace", "1000", "--tools", at("tools.json"),
                        "--csv", at("out.csv"), "-q", NULL};
  result r = bench(args);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, sb_str(&r.err));
  result_free(&r);
  /* Python reads it with the columns docs/bench.md lists, one row per call (a request
   * without calls: one row with the call's columns empty) */
  const char *script =
      "import csv, sys, re\n"
      "doc = open(sys.argv[2]).read()\n"
      "m = re.search(r'^(request,source,[a-z_,]+)$', doc, re.M)\n"
      "cols = m.group(1).split(',')\n"
      "rows = list(csv.DictReader(open(sys.argv[1], newline='')))\n"
      "assert rows and list(rows[0].keys()) == cols, (list(rows[0].keys()), cols)\n"
      "assert len(rows) == 2, rows\n"
      "call = [r for r in rows if r['tool'] == 'write_file'][0]\n"
      "text = [r for r in rows if r['tool'] == ''][0]\n"
      "assert float(call['lead_ms']) > 0 and int(float(call['lead_bytes'])) > 0\n"
      "assert text['call_id'] == '' and text['lead_ms'] == '' and float(text['first_token_ms']) >= 0\n"
      "for r in rows:\n"
      "  for k in cols:\n"
      "    if k.endswith('_ms') or k.endswith('_per_s') or k.endswith('_bytes'):\n"
      "      r[k] == '' or float(r[k])\n"
      "print('csv ok')\n";
  ts_test_put(at("check.py"), script);
  const char *py[] = {"python3", at("check.py"), at("out.csv"), ts_test_path("docs/bench.md"), NULL};
  result p = run_bin("/usr/bin/python3", py, NULL, 0);
  ck_assert_msg(p.status == 0 && strstr(sb_str(&p.out), "csv ok"), "python: %s%s", sb_str(&p.out),
                sb_str(&p.err));
  result_free(&p);
}
END_TEST

/* ---- the store --------------------------------------------------------------------------- */

START_TEST(from_store) {
  mkdir(at("session"), 0755);
  mkdir(at("ws"), 0755);
  make_reply(at("session/turn-1.sse"), NULL, NULL);
  ts_test_put(at("session/turn-2.sse"),
              "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Done.\"}}]}\n\n"
              "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
              "data: [DONE]\n\n");
  /* write_file is one of run's own tools: its progress argument is `description` */
  const char *run[] = {"toolstream", "run", "--model-replay", at("session"), "--rate", "20",
                       "--workspace", at("ws"), "--data-dir", at("data"), "--thread", "bt1",
                       "--json", "write it", NULL};
  result r = run_bin(BINARY, run, NULL, 0);
  ck_assert_msg(r.status == 0, "run: %d %s", r.status, sb_str(&r.err));
  /* run's summary: the lead over the labelled calls, median and p90, with the count */
  ck_assert_msg(strstr(sb_str(&r.err), "(median over the 1 of 1 calls with a label)") &&
                    strstr(sb_str(&r.err), " ms (p90 "), "%s", sb_str(&r.err));
  result_free(&r);
  const char *args[] = {"--from-store", "--data-dir", at("data"), "--thread", "bt1", "--csv",
                        at("s.csv"), NULL};
  r = bench(args);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, sb_str(&r.err));
  ck_assert_msg(strstr(sb_str(&r.out), "2 requests, 1 tool call (1 with a progress label)"), "%s",
                sb_str(&r.out));
  result_free(&r);
  table t = read_csv(at("s.csv"));
  ck_assert_int_eq(t.n, 2);
  ck_assert_str_eq(cell(&t, 0, "turn"), "1");
  ck_assert_str_eq(cell(&t, 0, "tool"), "write_file");
  /* 20 events/s: six events (300 ms) between the label and the complete arguments; the
   * player makes up at most 25 ms of lateness per event, so each gap is at least 25 ms */
  ck_assert_msg(num(&t, 0, "lead_ms") >= 6 * 25 - 30, "lead %g", num(&t, 0, "lead_ms"));
  ck_assert_str_eq(cell(&t, 0, "ttfb_ms"), "");  /* never stored */
  ck_assert_str_eq(cell(&t, 0, "label_ms"), ""); /* turn 1: no send time in the store */
  ck_assert_str_eq(cell(&t, 1, "turn"), "2");
  ck_assert_msg(num(&t, 1, "first_token_ms") >= 0, "turn 2 is timed from turn 1's last event");
  free(t.text);
  /* a thread that is not there */
  const char *none[] = {"--from-store", "--data-dir", at("data"), "--thread", "nope", NULL};
  r = bench(none);
  ck_assert_int_eq(r.status, 1);
  ck_assert_msg(strstr(sb_str(&r.err), "no thread nope"), "%s", sb_str(&r.err));
  result_free(&r);
}
END_TEST

/* Whether [p, end) contains `needle`. */
static int line_has(const char *p, const char *end, const char *needle) {
  size_t n = strlen(needle);
  for (; p + n <= end; p++)
    if (!memcmp(p, needle, n)) return 1;
  return 0;
}

/* ---- compare ----------------------------------------------------------------------------- */

START_TEST(compare_two_runs) {
  mkdir(at("rec"), 0755);
  make_reply(at("rec/a.sse"), NULL, NULL);
  make_tools();
  const char *paces[] = {"400", "10"};
  const char *files[] = {at("fast.json"), at("slow.json")};
  for (int k = 0; k < 2; k++) {
    const char *args[] = {"--replay", at("rec"), "--pace", paces[k], "--runs", "6",
                          "--concurrency", "3", "--tools", at("tools.json"), "--json", files[k],
                          "-q", NULL};
    result r = bench(args);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, sb_str(&r.err));
    result_free(&r);
  }
  const char *cmp[] = {"--compare", files[0], files[1], NULL};
  result a = bench(cmp), b = bench(cmp);
  ck_assert_msg(a.status == 0, "exit %d: %s", a.status, sb_str(&a.err));
  ck_assert_str_eq(sb_str(&a.out), sb_str(&b.out)); /* a fixed seed: the same verdict */
  /* 6 events at 2.5 ms against 100 ms (at least 75 ms each, however late the machine):
   * the slower lead is longer, significantly; the bytes are the same */
  const char *lead = strstr(sb_str(&a.out), "\nlead_ms ");
  ck_assert_msg(lead, "%s", sb_str(&a.out));
  const char *eol = strchr(lead + 1, '\n');
  ck_assert_msg(eol && line_has(lead, eol, "yes"), "%.*s",
                (int)(eol - lead), lead);
  const char *bytes = strstr(sb_str(&a.out), "\nlead_bytes ");
  eol = bytes ? strchr(bytes + 1, '\n') : NULL;
  ck_assert_msg(eol && line_has(bytes, eol, " no"), "%s", sb_str(&a.out));
  result_free(&a);
  result_free(&b);
  /* a file against itself: nothing is significant */
  const char *self[] = {"--compare", files[1], files[1], NULL};
  a = bench(self);
  ck_assert_int_eq(a.status, 0);
  ck_assert_msg(!strstr(sb_str(&a.out), "yes"), "%s", sb_str(&a.out));
  result_free(&a);
  /* not a bench result */
  ts_test_put(at("x.json"), "{\"a\":1}");
  const char *bad[] = {"--compare", files[0], at("x.json"), NULL};
  a = bench(bad);
  ck_assert_int_eq(a.status, 2);
  ck_assert_msg(strstr(sb_str(&a.err), "not a toolstream bench --json result"), "%s",
                sb_str(&a.err));
  result_free(&a);
}
END_TEST

/* ---- usage ------------------------------------------------------------------------------- */

START_TEST(usage_errors) {
  ts_test_put(at("bad.jsonl"), "{\"prompt\":\"ok\"}\n[1,2]\n");
  ts_test_put(at("noprompt.jsonl"), "{\"system\":\"x\"}\n");
  static const struct {
    int line;
    const char *args[12];
    int status;
    const char *says;
  } rows[] = {
      {__LINE__, {NULL}, 2, "what to measure?"},
      {__LINE__, {"--replay", "/nonexistent", "--from-store", NULL}, 2, "(one; see --help)"},
      {__LINE__, {"--compare", "a.json", NULL}, 2, "two files"},
      {__LINE__, {"--compare", "a", "b", "c", NULL}, 2, "two files"},
      {__LINE__, {"--pace", "10", "--from-store", NULL}, 2, "--pace is for --replay"},
      {__LINE__, {"--replay", "/tmp", "--pace", "fast", NULL}, 2, "--pace wants"},
      {__LINE__, {"--model-url", "http://127.0.0.1:9/v1", "hi", NULL}, 2, "needs --model"},
      {__LINE__, {"--model-url", "http://127.0.0.1:9/v1", "--model", "m", NULL}, 2,
       "needs a PROMPT or --requests"},
      {__LINE__, {"--replay", "/nonexistent-dir", NULL}, 1, "/nonexistent-dir"},
      {__LINE__, {"--concurrency", "65", "--replay", "/tmp", NULL}, 2, "concurrency"},
      {__LINE__, {"--from-store", "--runs", "3", NULL}, 2, "not for --from-store"},
      {__LINE__, {"--replay", "/tmp", "--thread", "t1", NULL}, 2, "--thread is for --from-store"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    result r = bench(rows[i].args);
    ck_assert_msg(r.status == rows[i].status && strstr(sb_str(&r.err), rows[i].says),
                  "line %d: exit %d: %s", rows[i].line, r.status, sb_str(&r.err));
    result_free(&r);
  }
  const char *bad[] = {"--model-url", "http://127.0.0.1:9/v1", "--model", "m", "--requests",
                       at("bad.jsonl"), NULL};
  result r = bench(bad);
  ck_assert_msg(r.status == 2 && strstr(sb_str(&r.err), "bad.jsonl:2: not a JSON object"), "%s",
                sb_str(&r.err));
  result_free(&r);
  const char *np[] = {"--model-url", "http://127.0.0.1:9/v1", "--model", "m", "--requests",
                      at("noprompt.jsonl"), NULL};
  r = bench(np);
  ck_assert_msg(r.status == 2 && strstr(sb_str(&r.err), ":1: wants {\"prompt\""), "%s",
                sb_str(&r.err));
  result_free(&r);
  const char *help[] = {"--help", NULL};
  r = bench(help);
  ck_assert_int_eq(r.status, 0);
  ck_assert_msg(strstr(sb_str(&r.out), "--compare A.json B.json") &&
                    strstr(sb_str(&r.out), "--pace N|recorded"), "%s", sb_str(&r.out));
  result_free(&r);
}
END_TEST

int main(void) {
  Suite *s = suite_create("bench_cli");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 240);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, live_injected_delays);
  tcase_add_test(tc, live_retries_and_errors);
  tcase_add_test(tc, live_error_echoing_key_is_redacted);
  tcase_add_test(tc, live_bedrock_event_stream);
  tcase_add_test(tc, interrupt_reports_what_finished);
  tcase_add_test(tc, replay_reproducible);
  tcase_add_test(tc, rate_limit);
  tcase_add_test(tc, progress_bar_on_a_terminal);
  tcase_add_test(tc, csv_in_python);
  tcase_add_test(tc, from_store);
  tcase_add_test(tc, compare_two_runs);
  tcase_add_test(tc, usage_errors);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
