/*
 * gold_test.c: every gold trace of tests/corpus (tests/corpus/README.md), replayed
 * through the library exactly as `toolstream tap` runs it: ts_tap with the options of
 * NAME.args, every event through one event sink (events/sink.h) for the thread "gold",
 * which numbers it from 1, encodes it once and writes it as one line. tests/cli/tap_cli_test.c runs the binary over the same golds,
 * so the two together say that the command prints NAME.events and that the library
 * does so however the input is read.
 *
 * Per gold:
 *   - fed whole, byte by byte and in reads of every size 2..31, and in random reads:
 *     the lines equal NAME.events byte for byte (support/split.h);
 *   - with the format left to detection (the .args without --format): the same lines;
 *   - for an SSE capture, with every line ending rewritten to CRLF and to CR: the same
 *     lines, each offset moved to the same event boundary of the rewritten capture
 *     (every event's offset is the end of an SSE event, or the end of input);
 *   - every gold line is one compact JSON object (the reference checker in
 *     support/json_check.h, not the product's parser).
 * And the corpus itself: every capture has a gold, every gold a capture.
 *
 * The replay understands the tap options a capture needs (--format, --tool,
 * --progress-arg, --tools FILE.json, --deltas, --text and the size caps); any other
 * option fails the test with its name, so a gold is never replayed with an option
 * quietly ignored.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events/sink.h"
#include "stream/tap.h"
#include "stream/tool_defs.h"
#include "support/gold.h"
#include "support/json_check.h"
#include "support/sb.h"
#include "support/split.h"
#include "support/sse_text.h"
#include "support/test_support.h"

static ts_test_gold *golds;
static size_t ngolds;

/* ---- the tap as `toolstream tap` configures it ----------------------------------------- */

typedef struct {
  ts_tap_config cfg;
  ts_tool_defs defs;
  int format_given;
} replay;

static const char *lookup_progress(void *user, const char *tool, size_t len, size_t *arg_len) {
  const replay *r = user;
  const ts_tool_def *d = ts_tool_defs_find(&r->defs, tool, len);
  if (!d || !d->progress_arg) return NULL;
  *arg_len = strlen(d->progress_arg);
  return d->progress_arg;
}

/* A size as the CLI takes it: digits with an optional k, m or g. */
static uint64_t size_arg(const char *ctx, const char *opt, const char *v) {
  char *end;
  unsigned long long n = strtoull(v, &end, 10);
  if (end == v) ck_abort_msg("%s: %s wants a size, got '%s'", ctx, opt, v);
  if (*end == 'k') n <<= 10, end++;
  else if (*end == 'm') n <<= 20, end++;
  else if (*end == 'g') n <<= 30, end++;
  if (*end) ck_abort_msg("%s: %s wants a size, got '%s'", ctx, opt, v);
  return n;
}

/* The option's value: after '=' in the same argument, or the next argument. */
static const char *value(const char *ctx, const ts_test_gold *g, int *i, const char *opt) {
  const char *a = g->argv[*i];
  size_t n = strlen(opt);
  if (a[n] == '=') return a + n + 1;
  if (*i + 1 >= g->argc) ck_abort_msg("%s: %s wants a value", ctx, opt);
  return g->argv[++*i];
}

static int is_opt(const char *a, const char *opt) {
  size_t n = strlen(opt);
  return !strncmp(a, opt, n) && (a[n] == '\0' || a[n] == '=');
}

/* Configures the tap from the gold's arguments. Returns NULL, or the first argument the
 * replay does not know. */
static const char *replay_config(replay *r, const ts_test_gold *g, int detect) {
  memset(r, 0, sizeof *r);
  const char *ctx = g->name;
  for (int i = 0; i < g->argc; i++) {
    const char *a = g->argv[i], *v;
    if (is_opt(a, "--format")) {
      v = value(ctx, g, &i, "--format");
      int f = ts_format_parse(v);
      if (f < 0) ck_abort_msg("%s: unknown format '%s'", ctx, v);
      r->format_given = 1;
      if (!detect) r->cfg.format = (ts_format)f;
    } else if (is_opt(a, "--tool")) {
      r->cfg.raw_tool = value(ctx, g, &i, "--tool");
    } else if (is_opt(a, "--progress-arg")) {
      v = value(ctx, g, &i, "--progress-arg");
      const char *eq = strchr(v, '=');
      if (!eq || eq == v || !eq[1]) ck_abort_msg("%s: --progress-arg wants TOOL=ARG", ctx);
      char tool[256];
      snprintf(tool, sizeof tool, "%.*s", (int)(eq - v), v);
      ck_assert_int_eq(ts_tool_defs_set_progress(&r->defs, tool, eq + 1), TS_E_OK);
    } else if (is_opt(a, "--tools")) {
      v = value(ctx, g, &i, "--tools");
      char rel[512];
      snprintf(rel, sizeof rel, "tests/corpus/%s", v);
      size_t len;
      char *text = ts_test_read_file(v[0] == '/' ? v : ts_test_path(rel), &len);
      char why[256];
      if (ts_tool_defs_parse(&r->defs, text, len, why, sizeof why))
        ck_abort_msg("%s: --tools %s: %s", ctx, v, why);
      free(text);
    } else if (!strcmp(a, "--deltas")) {
      r->cfg.deltas = 1;
    } else if (!strcmp(a, "--text")) {
      r->cfg.text = 1;
    } else if (is_opt(a, "--heartbeat-bytes")) {
      r->cfg.heartbeat_bytes = size_arg(ctx, a, value(ctx, g, &i, "--heartbeat-bytes"));
    } else if (is_opt(a, "--progress-max")) {
      r->cfg.progress_max = (size_t)size_arg(ctx, a, value(ctx, g, &i, "--progress-max"));
    } else if (is_opt(a, "--max-args-bytes")) {
      r->cfg.max_args_bytes = (size_t)size_arg(ctx, a, value(ctx, g, &i, "--max-args-bytes"));
    } else if (is_opt(a, "--max-event-bytes")) {
      r->cfg.max_event_bytes = (size_t)size_arg(ctx, a, value(ctx, g, &i, "--max-event-bytes"));
    } else {
      return a;
    }
  }
  r->cfg.progress_arg = lookup_progress;
  r->cfg.progress_user = r;
  return NULL;
}

static void replay_init(replay *r, const ts_test_gold *g, int detect) {
  const char *unknown = replay_config(r, g, detect);
  if (unknown)
    ck_abort_msg("%s: the gold replay does not know the argument '%s' (teach "
                 "tests/events/gold_test.c, or use another)", g->name, unknown);
}

static void replay_fini(replay *r) { ts_tool_defs_free(&r->defs); }

/* ---- the runner: events as the command prints them ------------------------------------ */

/* `toolstream tap` hands every tap event to one event sink (events/sink.h) writing to
 * standard output; here the sink writes to a memory stream, so the lines are the
 * command's to the byte: numbered from 1, encoded once, one per line. */
typedef struct {
  ts_sink *sink;
} printer;

static int print_event(void *user, const ts_tap_event *e) {
  printer *p = user;
  if (ts_sink_emit_tap(p->sink, e) != TS_E_OK) ck_abort_msg("the sink refused an event");
  return 0;
}

static void run_tap(void *user, ts_split *feed, sb *out) {
  const replay *r = user;
  char *text = NULL;
  size_t text_len = 0;
  FILE *mem = open_memstream(&text, &text_len);
  if (!mem) ck_abort_msg("open_memstream failed");
  printer p = {NULL};
  ts_sink_config sc = {.thread = TS_TEST_GOLD_THREAD, .who = "gold_test", .out = mem, .no_time = 1};
  if (ts_sink_new(&sc, &p.sink) != TS_E_OK) ck_abort_msg("ts_sink_new failed");
  ts_tap *t = NULL;
  int rc = ts_tap_new(&t, &r->cfg, print_event, &p);
  if (rc != TS_E_OK) ck_abort_msg("ts_tap_new refused the config: %s", ts_err_name(rc));
  char *chunk;
  size_t n;
  while (ts_split_next(feed, &chunk, &n)) {
    if (ts_tap_feed(t, chunk, n) != TS_E_OK) ck_abort_msg("ts_tap_feed failed");
  }
  if (ts_tap_finish(t) != TS_E_OK) ck_abort_msg("ts_tap_finish failed");
  if (ts_tap_offset(t) != ts_split_offset(feed)) ck_abort_msg("ts_tap_offset is off");
  ts_tap_free(t);
  ts_sink_free(p.sink);
  fclose(mem);
  sb_add(out, text, text_len);
  free(text);
}

/* ---- line endings (support/sse_text.h) ----------------------------------------------- */

/* The gold with each line's offset moved from the event boundaries of `from` to the
 * same boundaries of `to`. */
static void move_offsets(const char *ctx, sb *out, const char *gold, const char *from,
                         size_t from_len, const char *to, size_t to_len) {
  enum { MAXEV = 4096 };
  static uint64_t a[MAXEV], b[MAXEV];
  size_t na = ts_test_event_ends(from, from_len, a, MAXEV), nb = ts_test_event_ends(to, to_len, b, MAXEV);
  ck_assert_msg(na == nb, "%s: %zu events before the rewrite, %zu after", ctx, na, nb);
  for (const char *line = gold; *line;) {
    const char *nl = strchr(line, '\n');
    ck_assert_ptr_nonnull(nl);
    const char *key = strstr(line, ",\"offset\":");
    ck_assert_msg(key && key < nl, "%s: a gold line without an offset", ctx);
    const char *num = key + 10;
    char *end;
    uint64_t off = strtoull(num, &end, 10), moved = UINT64_MAX;
    if (off == from_len) moved = to_len;
    for (size_t k = 0; k < na && moved == UINT64_MAX; k++)
      if (a[k] == off) moved = b[k];
    ck_assert_msg(moved != UINT64_MAX, "%s: offset %" PRIu64 " is not at an event boundary",
                  ctx, off);
    sb_add(out, line, (size_t)(num - line));
    sb_printf(out, "%" PRIu64, moved);
    sb_add(out, end, (size_t)(nl + 1 - end));
    line = nl + 1;
  }
  if (!out->p) sb_puts(out, "");
}

/* ---- the tests ---------------------------------------------------------------------- */

START_TEST(test_gold) {
  const ts_test_gold *g = &golds[_i];
  size_t len, glen;
  char *in = ts_test_read_file(g->capture, &len);
  char *gold = ts_test_read_file(g->events, &glen);
  ck_assert_msg(glen > 0 && gold[glen - 1] == '\n', "%s: a gold ends with a newline", g->name);

  /* The gold itself: compact JSON objects, one per line, numbered 1..N. */
  uint64_t seq = 0;
  for (const char *line = gold; *line;) {
    const char *nl = strchr(line, '\n');
    ck_assert_msg(ts_test_json_compact_object(line, (size_t)(nl - line)),
                  "%s: line %" PRIu64 " is not a compact JSON object", g->name, seq + 1);
    char want[64];
    snprintf(want, sizeof want, "\"thread\":\"%s\",\"seq\":%" PRIu64 ",", TS_TEST_GOLD_THREAD,
             ++seq);
    ck_assert_msg(strstr(line, want) && strstr(line, want) < nl, "%s: line %" PRIu64 " wants %s",
                  g->name, seq, want);
    line = nl + 1;
  }

  replay r;
  replay_init(&r, g, 0);
  char ctx[400];
  snprintf(ctx, sizeof ctx, "%s", g->name);
  ts_split_check(ctx, in, len, run_tap, &r, gold);
  ts_split_check_random(ctx, in, len, run_tap, &r, gold, (uint64_t)_i + 1, 8);
  int raw = r.cfg.format == TS_FORMAT_RAW, given = r.format_given;
  replay_fini(&r);

  if (given && !raw) { /* the format detected from the stream */
    replay_init(&r, g, 1);
    snprintf(ctx, sizeof ctx, "%s, format detected", g->name);
    ts_split_check(ctx, in, len, run_tap, &r, gold);
    replay_fini(&r);
  }

  size_t cl = strlen(g->capture);
  int sse = cl > 4 && !strcmp(g->capture + cl - 4, ".sse");
  if (!raw && sse) { /* CRLF and CR line endings (an SSE stream means the same with each) */
    replay_init(&r, g, 0);
    for (int eol = 1; eol <= 2; eol++) {
      sb re = {0}, want = {0};
      ts_test_rewrite_eol(&re, in, len, eol);
      snprintf(ctx, sizeof ctx, "%s, line endings %s", g->name, eol == 1 ? "CRLF" : "CR");
      move_offsets(ctx, &want, gold, in, len, re.p, re.len);
      ts_split_check(ctx, re.p, re.len, run_tap, &r, sb_str(&want));
      sb_free(&re);
      sb_free(&want);
    }
    replay_fini(&r);
  }
  free(gold);
  free(in);
}
END_TEST

START_TEST(test_every_capture_has_a_gold) {
  char missing[4096];
  size_t n = ts_test_gold_orphans(missing, sizeof missing);
  ck_assert_msg(n == 0, "captures without NAME.events: %s", missing);
  ck_assert_msg(ngolds >= 6, "only %zu golds under tests/corpus", ngolds);
}
END_TEST

/* The replay refuses what it does not understand instead of ignoring it. */
START_TEST(test_unknown_option_refused) {
  ts_test_gold g;
  memset(&g, 0, sizeof g);
  snprintf(g.name, sizeof g.name, "made-up");
  g.argv[0] = "--linger";
  g.argv[1] = "5";
  g.argc = 2;
  replay r;
  const char *unknown = replay_config(&r, &g, 0);
  ck_assert_ptr_nonnull(unknown);
  ck_assert_str_eq(unknown, "--linger");
  replay_fini(&r);
}
END_TEST

int main(void) {
  ngolds = ts_test_gold_list(&golds);
  Suite *s = suite_create("gold");
  TCase *tc = tcase_create("corpus");
  tcase_set_timeout(tc, 240);
  tcase_add_loop_test(tc, test_gold, 0, (int)ngolds);
  tcase_add_test(tc, test_every_capture_has_a_gold);
  tcase_add_test(tc, test_unknown_option_refused);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  ts_test_gold_free(golds, ngolds);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
