/*
 * tap_scale_test.c: the tap with huge calls (issue 19, "Also wrong at scale").
 *
 *   - With the default limits, a call of exactly the default max_args_bytes is READY, with
 *     its arguments byte for byte, in every format (Chat, Responses, Anthropic, Gemini,
 *     Bedrock, Cohere, Ollama; generated, support/big_stream.h), and one byte more is that
 *     call's TS_E_LIMIT error while the turn still finishes (Chat's fragments, Gemini's
 *     whole call): the event cap follows the arguments cap, so a call sent whole in one
 *     event (Gemini, Ollama) fits.
 *   - Responses repeats the whole arguments three times (`.done`, `output_item.done`,
 *     `response.completed`): those copies are dropped as they stream, so a 4 MiB call
 *     goes through an event cap of 64 KiB (buffered, any copy would be
 *     sse_event_too_large), whole, byte by byte and at every split 1..31 for a smaller one.
 *   - Deltas and text go out in pieces of at most TS_TAP_TEXT_PIECE bytes, cut between
 *     UTF-8 characters, that concatenate to the text, also the deltas held back until
 *     STARTED.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/tap.h"
#include "support/big_stream.h"
#include "support/split.h"
#include "support/test_support.h"

typedef struct {
  int started, ready, finished, call_errors, stream_errors;
  int32_t call_code;
  sb args;       /* READY's arguments */
  sb deltas;     /* the DELTAs, concatenated */
  sb text;       /* the TEXT_DELTAs, concatenated */
  int bad_piece; /* a piece over the limit or starting inside a UTF-8 character */
  sb stop;
  int has_usage;
} tally;

static void check_piece(tally *t, ts_view v) {
  if (v.len == 0 || v.len > TS_TAP_TEXT_PIECE || ((unsigned char)v.p[0] & 0xC0) == 0x80)
    t->bad_piece = 1;
}

static int tally_cb(void *user, const ts_tap_event *e) {
  tally *t = user;
  switch (e->type) {
    case TS_TAP_TOOL_CALL_STARTED: t->started++; break;
    case TS_TAP_TOOL_CALL_READY:
      t->ready++;
      sb_add(&t->args, e->arguments.p, e->arguments.len);
      break;
    case TS_TAP_TOOL_CALL_DELTA:
      check_piece(t, e->delta);
      sb_add(&t->deltas, e->delta.p, e->delta.len);
      break;
    case TS_TAP_TEXT_DELTA:
      check_piece(t, e->text);
      sb_add(&t->text, e->text.p, e->text.len);
      break;
    case TS_TAP_TOOL_CALL_ERROR:
      t->call_errors++;
      t->call_code = e->code;
      break;
    case TS_TAP_TURN_FINISHED:
      t->finished++;
      sb_add(&t->stop, e->stop_reason.p, e->stop_reason.len);
      t->has_usage = e->usage.len > 0;
      break;
    case TS_TAP_STREAM_ERROR:
      t->stream_errors++;
      fprintf(stderr, "stream_error: %.*s\n", (int)e->error.len, e->error.p);
      break;
  }
  return 0;
}

static void tally_free(tally *t) {
  sb_free(&t->args);
  sb_free(&t->deltas);
  sb_free(&t->text);
  sb_free(&t->stop);
}

/* Feeds `in` (modified in place) in reads of 64 KiB. */
static int run_tap(const ts_tap_config *cfg, char *in, size_t len, tally *t) {
  ts_tap *tap;
  ck_assert_int_eq(ts_tap_new(&tap, cfg, tally_cb, t), TS_E_OK);
  for (size_t at = 0; at < len; at += 65536)
    ck_assert_int_eq(ts_tap_feed(tap, in + at, len - at < 65536 ? len - at : 65536), TS_E_OK);
  ck_assert_int_eq(ts_tap_finish(tap), TS_E_OK);
  int failed = ts_tap_failed(tap);
  ts_tap_free(tap);
  return failed;
}

static const ts_format formats[] = {TS_FORMAT_OPENAI_CHAT, TS_FORMAT_OPENAI_RESPONSES,
                                    TS_FORMAT_ANTHROPIC,   TS_FORMAT_GEMINI,
                                    TS_FORMAT_BEDROCK,     TS_FORMAT_COHERE,
                                    TS_FORMAT_OLLAMA};

START_TEST(test_default_cap_every_format) {
  ts_format f = formats[_i];
  /* one byte over the cap: a call sent in fragments and one sent whole are enough */
  size_t tries = f == TS_FORMAT_OPENAI_CHAT || f == TS_FORMAT_GEMINI ? 2 : 1;
  for (size_t extra = 0; extra < tries; extra++) {
    size_t len = TS_TAP_MAX_ARGS_BYTES + extra;
    sb args = {0}, in = {0};
    ts_test_big_args(&args, len);
    ck_assert_uint_eq(args.len, len);
    ck_assert_int_eq(ts_test_big_stream(&in, ts_format_name(f), args.p, args.len, 16384), 0);
    ts_tap_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.format = f; /* every limit its default */
    tally t = {0};
    int failed = run_tap(&cfg, in.p, in.len, &t);
    const char *name = ts_format_name(f);
    ck_assert_msg(!failed && t.stream_errors == 0, "%s +%zu: the stream failed", name, extra);
    ck_assert_msg(t.started == 1 && t.finished == 1, "%s +%zu: started %d finished %d", name,
                  extra, t.started, t.finished);
    if (extra == 0) {
      ck_assert_msg(t.ready == 1 && t.call_errors == 0, "%s: ready %d, errors %d (code %d)", name,
                    t.ready, t.call_errors, t.call_code);
      ck_assert_msg(t.args.len == len && !memcmp(t.args.p, args.p, len), "%s: arguments differ",
                    name);
    } else {
      ck_assert_msg(t.ready == 0 && t.call_errors == 1 && t.call_code == TS_E_LIMIT,
                    "%s +1: ready %d, errors %d (code %d)", name, t.ready, t.call_errors,
                    t.call_code);
    }
    tally_free(&t);
    sb_free(&args);
    sb_free(&in);
  }
}
END_TEST

START_TEST(test_responses_repeats_dropped) {
  sb args = {0}, in = {0};
  ts_test_big_args(&args, (size_t)4 << 20);
  ck_assert_int_eq(
      ts_test_big_stream(&in, "openai-responses", args.p, args.len, 4096), 0);
  ts_tap_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.format = TS_FORMAT_OPENAI_RESPONSES;
  cfg.max_event_bytes = 65536; /* far below one copy of the arguments */
  for (int detect = 0; detect < 2; detect++) {
    cfg.format = detect ? TS_FORMAT_AUTO : TS_FORMAT_OPENAI_RESPONSES;
    sb copy = {0};
    sb_add(&copy, in.p, in.len);
    tally t = {0};
    ck_assert_int_eq(run_tap(&cfg, copy.p, copy.len, &t), 0);
    ck_assert_int_eq(t.stream_errors, 0);
    ck_assert_int_eq(t.ready, 1);
    ck_assert_int_eq(t.call_errors, 0);
    ck_assert_int_eq(t.finished, 1);
    ck_assert_str_eq(sb_str(&t.stop), "completed"); /* by its name: the event was cut */
    ck_assert(t.args.len == args.len && !memcmp(t.args.p, args.p, args.len));
    tally_free(&t);
    sb_free(&copy);
  }
  sb_free(&args);
  sb_free(&in);
}
END_TEST

static uint64_t fnv(const char *p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
  return h;
}

/* The tap as a split-harness runner: the events with their offsets. */
static void split_run(void *user, ts_split *feed, sb *out) {
  const ts_tap_config *cfg = user;
  tally t = {0};
  ts_tap *tap;
  ck_assert_int_eq(ts_tap_new(&tap, cfg, tally_cb, &t), TS_E_OK);
  char *c;
  size_t n;
  while (ts_split_next(feed, &c, &n)) ck_assert_int_eq(ts_tap_feed(tap, c, n), TS_E_OK);
  ck_assert_int_eq(ts_tap_finish(tap), TS_E_OK);
  sb_printf(out, "started %d ready %d errors %d finished %d '%s' usage %d stream_errors %d "
                 "args %zu %016llx\n", t.started, t.ready, t.call_errors, t.finished,
            sb_str(&t.stop), t.has_usage, t.stream_errors, t.args.len,
            (unsigned long long)fnv(t.args.p, t.args.len));
  ts_tap_free(tap);
  tally_free(&t);
}

START_TEST(test_responses_repeats_every_split) {
  sb args = {0}, in = {0};
  ts_test_big_args(&args, 40000);
  ck_assert_int_eq(
      ts_test_big_stream(&in, "openai-responses", args.p, args.len, 4000), 0);
  ts_tap_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.format = TS_FORMAT_OPENAI_RESPONSES;
  cfg.max_event_bytes = 16384;
  char want[256];
  snprintf(want, sizeof want, "started 1 ready 1 errors 0 finished 1 'completed' usage 0 "
           "stream_errors 0 args %zu %016llx\n", args.len,
           (unsigned long long)fnv(args.p, args.len));
  ts_split_check("responses 40000", in.p, in.len, split_run, &cfg, want);
  /* with room for the terminal event, its usage is read */
  cfg.max_event_bytes = 0;
  snprintf(want, sizeof want, "started 1 ready 1 errors 0 finished 1 'completed' usage 1 "
           "stream_errors 0 args %zu %016llx\n", args.len,
           (unsigned long long)fnv(args.p, args.len));
  ts_split_check("responses 40000 default", in.p, in.len, split_run, &cfg, want);
  sb_free(&args);
  sb_free(&in);
}
END_TEST

/* Text and deltas in pieces; the held-back deltas too (the progress argument never
 * comes: STARTED fires at the closing brace, rule 3). */
static const char *never(void *user, const char *tool, size_t len, size_t *arg_len) {
  (void)user, (void)tool, (void)len;
  *arg_len = 7;
  return "missing";
}

START_TEST(test_pieces) {
  sb args = {0}, text = {0}, in = {0}, d = {0};
  ts_test_big_args(&args, 100000);
  for (int i = 0; i < 9000; i++) sb_puts(&text, i % 3 ? "\xc3\xa9" : "\xf0\x9f\x98\x80");
  sb_puts(&d, "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"");
  sb_json_body(&d, text.p, text.len);
  sb_puts(&d, "\"}}]}");
  sb_puts(&in, "data: ");
  sb_add(&in, d.p, d.len);
  sb_puts(&in, "\n\n");
  ck_assert_int_eq(ts_test_big_stream(&in, "openai-chat", args.p, args.len, 30000), 0);
  for (int held = 0; held < 2; held++) {
    ts_tap_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.format = TS_FORMAT_OPENAI_CHAT;
    cfg.deltas = cfg.text = 1;
    if (held) cfg.progress_arg = never;
    sb copy = {0};
    sb_add(&copy, in.p, in.len);
    tally t = {0};
    ck_assert_int_eq(run_tap(&cfg, copy.p, copy.len, &t), 0);
    ck_assert_int_eq(t.bad_piece, 0);
    ck_assert(t.deltas.len == args.len && !memcmp(t.deltas.p, args.p, args.len));
    ck_assert(t.text.len == text.len && !memcmp(t.text.p, text.p, text.len));
    ck_assert_int_eq(t.ready, 1);
    tally_free(&t);
    sb_free(&copy);
  }
  sb_free(&args);
  sb_free(&text);
  sb_free(&in);
  sb_free(&d);
}
END_TEST

int main(void) {
  Suite *s = suite_create("tap_scale");
  TCase *tc = tcase_create("scale");
  tcase_set_timeout(tc, 900); /* 16 MiB calls: minutes under ASan on a busy machine */
  tcase_add_loop_test(tc, test_default_cap_every_format, 0,
                      (int)(sizeof formats / sizeof formats[0]));
  tcase_add_test(tc, test_responses_repeats_dropped);
  tcase_add_test(tc, test_responses_repeats_every_split);
  tcase_add_test(tc, test_pieces);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
