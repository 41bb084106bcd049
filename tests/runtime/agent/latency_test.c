/*
 * latency_test.c: agent/latency.h and agent/latency_probe.h, table-driven: quantiles and
 * summaries, each metric from known timestamps (and NAN where it cannot be known), stored
 * events read back into turns, the bootstrap's interval (deterministic, significant only
 * when it should be), run's lead over the labelled calls only, and the probe over a real
 * capture: the same byte figures at every split 1..31, times taken from the pieces' arrival,
 * out of memory at every allocation.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/latency.h"
#include "agent/latency_probe.h"
#include "base/error.h"
#include "events/event.h"
#include "support/runner.h"
#include "support/split.h"
#include "support/test_support.h"

#define V(s) ((ts_view){(s), sizeof(s) - 1})
#define NA NAN

static int same(double a, double b) { return (isnan(a) && isnan(b)) || fabs(a - b) < 1e-9; }

/* ---- quantiles ----------------------------------------------------------------------- */

START_TEST(quantiles) {
  static const struct {
    int line;
    double in[8];
    size_t n;
    double p50, p90, max;
    size_t kept;
  } rows[] = {
      {__LINE__, {0}, 0, NA, NA, NA, 0},
      {__LINE__, {5}, 1, 5, 5, 5, 1},
      {__LINE__, {1, 2}, 2, 1.5, 1.9, 2, 2},
      {__LINE__, {4, 1, 3, 2}, 4, 2.5, 3.7, 4, 4},
      {__LINE__, {10, NA, 30, NA, 20}, 5, 20, 28, 30, 3}, /* NANs are not zeros */
      {__LINE__, {NA, NA}, 2, NA, NA, NA, 0},
      {__LINE__, {1, 2, 3, 4, 5, 6, 7, 8}, 8, 4.5, 7.3, 8, 8},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    double v[8];
    memcpy(v, rows[i].in, sizeof v);
    ts_lat_summary s;
    ts_lat_summarize(v, rows[i].n, &s);
    ck_assert_msg(s.n == rows[i].kept, "line %d: n %zu", rows[i].line, s.n);
    ck_assert_msg(same(s.p50, rows[i].p50), "line %d: p50 %g", rows[i].line, s.p50);
    ck_assert_msg(same(s.p90, rows[i].p90), "line %d: p90 %g", rows[i].line, s.p90);
    ck_assert_msg(same(s.max, rows[i].max), "line %d: max %g", rows[i].line, s.max);
  }
}
END_TEST

/* ---- metrics from observations --------------------------------------------------------- */

/* One observation per row: what the event was, when (µs) and where (offset). */
typedef struct {
  int type;
  uint64_t t, off;
  int call; /* -1: not a call event */
  int progress;
  uint64_t arg_bytes;
  const char *usage;
} obs_row;

static void feed_rows(ts_lat_request *r, const obs_row *rows, size_t n) {
  for (size_t i = 0; i < n; i++) {
    ts_lat_obs o = {.type = rows[i].type, .t_us = rows[i].t, .offset = rows[i].off,
                    .is_call = rows[i].call >= 0, .index = (uint32_t)(rows[i].call < 0 ? 0 : rows[i].call),
                    .call_id = V("c"), .tool = V("write_file"), .has_progress = rows[i].progress,
                    .arg_bytes = rows[i].arg_bytes};
    if (rows[i].usage) o.usage = (ts_view){rows[i].usage, strlen(rows[i].usage)};
    ck_assert_int_eq(ts_lat_request_observe(r, &o), TS_E_OK);
  }
}

START_TEST(metrics) {
  /* sent at 1 s; first byte 1.2 s; call 0 (labelled): name at 1.3 s (second tap), label at
   * 1.5 s offset 500, ready at 2.5 s offset 1500, 600 argument bytes, result at 2.6 s;
   * call 1 (no progress argument): started (its name) 2.7 s, ready 2.8 s; 40 output tokens,
   * turn_finished at 3.3 s, the body ended at 3.4 s. */
  ts_lat_request r;
  ts_lat_request_init(&r, "t1");
  r.sent_us = 1000000;
  r.first_byte_us = 1200000;
  ck_assert_int_eq(ts_lat_request_name(&r, 0, V("c0"), V("write_file"), 1300000), TS_E_OK);
  static const obs_row rows[] = {
      {TS_EVENT_TOOL_CALL_STARTED, 1500000, 500, 0, 1, 0, NULL},
      {TS_EVENT_TOOL_CALL_READY, 2500000, 1500, 0, 0, 600, NULL},
      {TS_EVENT_TOOL_RESULT, 2600000, 1500, 0, 0, 0, NULL},
      {TS_EVENT_TOOL_CALL_STARTED, 2700000, 1600, 1, 0, 0, NULL},
      {TS_EVENT_TOOL_CALL_READY, 2800000, 1700, 1, 0, 20, NULL},
      {TS_EVENT_TURN_FINISHED, 3300000, 1800, -1, 0, 0,
       "{\"prompt_tokens\":5,\"completion_tokens\":40}"},
  };
  feed_rows(&r, rows, sizeof rows / sizeof rows[0]);
  r.end_us = 3400000;
  ck_assert_uint_eq(r.ncalls, 2);
  static const struct {
    int line, m, call;
    double want;
  } want[] = {
      {__LINE__, TS_LAT_TTFB, -1, 200},
      {__LINE__, TS_LAT_FIRST_TOKEN, -1, 300},   /* the name is the first token */
      {__LINE__, TS_LAT_TOTAL, -1, 2400},
      {__LINE__, TS_LAT_OUT_TPS, -1, 20},        /* 40 tokens over 1.3 .. 3.3 s */
      {__LINE__, TS_LAT_NAME, 0, 300},
      {__LINE__, TS_LAT_LABEL, 0, 500},
      {__LINE__, TS_LAT_ARGS, 0, 1500},
      {__LINE__, TS_LAT_LEAD_MS, 0, 1000},
      {__LINE__, TS_LAT_LEAD_STREAM_BYTES, 0, 1000},
      {__LINE__, TS_LAT_LEAD_BYTES, 0, NA},      /* no deltas seen: argument bytes unknown */
      {__LINE__, TS_LAT_ARG_BPS, 0, 500},        /* 600 bytes over 1.3 .. 2.5 s */
      {__LINE__, TS_LAT_RESULT, 0, 1600},
      {__LINE__, TS_LAT_NAME, 1, 1700},
      {__LINE__, TS_LAT_LABEL, 1, NA},           /* no label: no lead either */
      {__LINE__, TS_LAT_LEAD_MS, 1, NA},
      {__LINE__, TS_LAT_LEAD_BYTES, 1, NA},
      {__LINE__, TS_LAT_LEAD_STREAM_BYTES, 1, NA},
      {__LINE__, TS_LAT_ARG_BPS, 1, 200},
      {__LINE__, TS_LAT_RESULT, 1, NA},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    double got = want[i].call < 0 ? ts_lat_request_value(&r, want[i].m)
                                  : ts_lat_call_value(&r, &r.calls[want[i].call], want[i].m);
    ck_assert_msg(same(got, want[i].want), "line %d: %s = %g, want %g", want[i].line,
                  ts_lat_metric_key(want[i].m), got, want[i].want);
  }
  /* without a send time, nothing "from sent" is known; leads still are */
  r.sent_us = 0;
  ck_assert(isnan(ts_lat_request_value(&r, TS_LAT_TTFB)));
  ck_assert(isnan(ts_lat_call_value(&r, &r.calls[0], TS_LAT_LABEL)));
  ck_assert(same(ts_lat_call_value(&r, &r.calls[0], TS_LAT_LEAD_MS), 1000));
  ts_lat_request_fini(&r);
}
END_TEST

START_TEST(usage_tokens) {
  static const struct {
    int line;
    const char *usage;
    int found;
    uint64_t want;
  } rows[] = {
      {__LINE__, "{\"prompt_tokens\":5,\"completion_tokens\":71}", 1, 71},
      {__LINE__, "{\"input_tokens\":5,\"output_tokens\":12}", 1, 12},
      {__LINE__, "{\"eval_count\":9}", 1, 9},
      {__LINE__, "{\"outputTokens\":3}", 1, 3},
      {__LINE__, "{\"candidatesTokenCount\":4,\"promptTokenCount\":1}", 1, 4},
      {__LINE__, "{\"x\":{\"output_tokens\":12}}", 0, 0}, /* top level only */
      {__LINE__, "{\"output_tokens\":1.5}", 0, 0},
      {__LINE__, "{\"output_tokens\":\"7\"}", 0, 0},
      {__LINE__, "", 0, 0},
      {__LINE__, "{broken", 0, 0},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    uint64_t got = 0;
    int f = ts_lat_usage_tokens((ts_view){rows[i].usage, strlen(rows[i].usage)}, &got);
    ck_assert_msg(f == rows[i].found && (!f || got == rows[i].want), "line %d: %d %llu",
                  rows[i].line, f, (unsigned long long)got);
  }
}
END_TEST

START_TEST(errors_counted) {
  ts_lat_request r;
  ts_lat_request_init(&r, "x");
  static const obs_row rows[] = {
      {TS_EVENT_TOOL_CALL_STARTED, 10, 5, 0, 0, 0, NULL},
      {TS_EVENT_TOOL_CALL_ERROR, 20, 9, 0, 0, 0, NULL},
      {TS_EVENT_STREAM_ERROR, 30, 9, -1, 0, 0, NULL},
  };
  feed_rows(&r, rows, 3);
  ts_lat_request_fail(&r, "HTTP 500: boom");
  ck_assert_uint_eq(r.errors, 3);
  ck_assert_str_eq(r.error, "error"); /* the first message (an empty one says "error") */
  ck_assert(r.calls[0].error && !r.calls[0].ready);
  ck_assert(isnan(ts_lat_call_value(&r, &r.calls[0], TS_LAT_ARGS)));
  ts_lat_request_fini(&r);
}
END_TEST

/* ---- stored events ---------------------------------------------------------------------- */

START_TEST(stored_events) {
  /* two turns of a thread as run stores them; turn 1's result comes after its
   * turn_finished, turn 2 starts with text */
  static const char *const ev[] = {
      "{\"v\":1,\"type\":\"tool_call_started\",\"thread\":\"t\",\"seq\":1,\"ts\":1,\"mono_us\":2000000,"
      "\"offset\":300,\"call_id\":\"a\",\"tool\":\"write_file\",\"index\":0,\"turn\":1,\"progress\":\"x\"}",
      "{\"v\":1,\"type\":\"tool_call_ready\",\"thread\":\"t\",\"seq\":2,\"ts\":1,\"mono_us\":2400000,"
      "\"offset\":900,\"call_id\":\"a\",\"tool\":\"write_file\",\"index\":0,\"turn\":1,"
      "\"arguments\":{\"path\":\"a\",\"content\":\"[1,2,{\\\"k\\\":3}]\"}}",
      "{\"v\":1,\"type\":\"turn_finished\",\"thread\":\"t\",\"seq\":3,\"ts\":1,\"mono_us\":2500000,"
      "\"offset\":1000,\"stop_reason\":\"tool_calls\",\"usage\":{\"completion_tokens\":50}}",
      "{\"v\":1,\"type\":\"tool_execution_started\",\"thread\":\"t\",\"seq\":4,\"ts\":1,\"mono_us\":2500100,"
      "\"offset\":1000,\"call_id\":\"a\",\"tool\":\"write_file\",\"index\":0,\"turn\":1}",
      "{\"v\":1,\"type\":\"tool_result\",\"thread\":\"t\",\"seq\":5,\"ts\":1,\"mono_us\":2600000,"
      "\"offset\":1000,\"call_id\":\"a\",\"tool\":\"write_file\",\"index\":0,\"turn\":1,"
      "\"is_error\":false,\"duration_ms\":1.000,\"result\":{}}",
      "{\"v\":1,\"type\":\"text_delta\",\"thread\":\"t\",\"seq\":6,\"ts\":1,\"mono_us\":3000000,"
      "\"offset\":80,\"text\":\"done\"}",
      "{\"v\":1,\"type\":\"turn_finished\",\"thread\":\"t\",\"seq\":7,\"ts\":1,\"mono_us\":3100000,"
      "\"offset\":200,\"stop_reason\":\"stop\"}",
      "not json",
  };
  ts_lat_set set = {0};
  ts_lat_reader rd;
  ts_lat_reader_init(&rd, &set, "t");
  for (size_t i = 0; i < 7; i++)
    ck_assert_int_eq(ts_lat_reader_event(&rd, ev[i], strlen(ev[i])), TS_E_OK);
  ck_assert_int_eq(ts_lat_reader_event(&rd, ev[7], strlen(ev[7])), TS_E_INVAL);
  ck_assert_uint_eq(set.n, 2);
  ts_lat_request *t1 = &set.v[0], *t2 = &set.v[1];
  ck_assert_uint_eq(t1->turn, 1);
  ck_assert_uint_eq(t2->turn, 2);
  ck_assert_str_eq(t1->source, "t");
  ck_assert_uint_eq(t1->ncalls, 1);
  ck_assert(same(ts_lat_call_value(t1, &t1->calls[0], TS_LAT_LEAD_MS), 400));
  ck_assert(same(ts_lat_call_value(t1, &t1->calls[0], TS_LAT_LEAD_STREAM_BYTES), 600));
  ck_assert_uint_eq(t1->calls[0].arg_bytes, strlen("{\"path\":\"a\",\"content\":\"[1,2,{\\\"k\\\":3}]\"}"));
  ck_assert(isnan(ts_lat_request_value(t1, TS_LAT_TTFB))); /* never stored */
  ck_assert(isnan(ts_lat_call_value(t1, &t1->calls[0], TS_LAT_LABEL))); /* turn 1: no send */
  ck_assert_uint_eq(t1->calls[0].result_us, 2600000);
  /* turn 2 was sent after turn 1's last event (its result) */
  ck_assert_uint_eq(t2->sent_us, 2600000);
  ck_assert(same(ts_lat_request_value(t2, TS_LAT_FIRST_TOKEN), 400));
  ck_assert(same(ts_lat_request_value(t2, TS_LAT_TOTAL), 500));
  ck_assert_uint_eq(t2->ncalls, 0);
  ts_lat_lead lead;
  ck_assert_int_eq(ts_lat_lead_of(&set, &lead), TS_E_OK);
  ck_assert_uint_eq(lead.calls, 1);
  ck_assert_uint_eq(lead.labelled, 1);
  ck_assert(same(lead.ms_p50, 400) && same(lead.stream_p90, 600) && isnan(lead.bytes_p50));
  ts_lat_set_fini(&set);

  /* --no-time: bytes, no times */
  const char *nt = "{\"v\":1,\"type\":\"tool_call_started\",\"thread\":\"t\",\"seq\":1,\"offset\":3,"
                   "\"call_id\":\"a\",\"tool\":\"w\",\"index\":0,\"turn\":1,\"progress\":\"x\"}";
  const char *nr = "{\"v\":1,\"type\":\"tool_call_ready\",\"thread\":\"t\",\"seq\":2,\"offset\":9,"
                   "\"call_id\":\"a\",\"tool\":\"w\",\"index\":0,\"turn\":1,\"arguments\":{}}";
  ts_lat_reader_init(&rd, &set, "t");
  ck_assert_int_eq(ts_lat_reader_event(&rd, nt, strlen(nt)), TS_E_OK);
  ck_assert_int_eq(ts_lat_reader_event(&rd, nr, strlen(nr)), TS_E_OK);
  ck_assert(isnan(ts_lat_call_value(&set.v[0], &set.v[0].calls[0], TS_LAT_LEAD_MS)));
  ck_assert(same(ts_lat_call_value(&set.v[0], &set.v[0].calls[0], TS_LAT_LEAD_STREAM_BYTES), 6));
  ts_lat_set_fini(&set);
}
END_TEST

START_TEST(lead_counts_labelled_only) {
  /* three calls: one labelled with a lead of 100 ms, one labelled with 300 ms, one without
   * a label (which the old summary counted as a lead of zero) */
  ts_lat_set set = {0};
  ts_lat_request *r;
  ck_assert_int_eq(ts_lat_set_add(&set, "t", &r), TS_E_OK);
  static const obs_row rows[] = {
      {TS_EVENT_TOOL_CALL_STARTED, 1000, 10, 0, 1, 0, NULL},
      {TS_EVENT_TOOL_CALL_READY, 101000, 110, 0, 0, 5, NULL},
      {TS_EVENT_TOOL_CALL_STARTED, 200000, 200, 1, 1, 0, NULL},
      {TS_EVENT_TOOL_CALL_READY, 500000, 500, 1, 0, 5, NULL},
      {TS_EVENT_TOOL_CALL_STARTED, 600000, 600, 2, 0, 0, NULL},
      {TS_EVENT_TOOL_CALL_READY, 600000, 900, 2, 0, 5, NULL},
  };
  feed_rows(r, rows, 6);
  ts_lat_lead lead;
  ck_assert_int_eq(ts_lat_lead_of(&set, &lead), TS_E_OK);
  ck_assert_uint_eq(lead.calls, 3);
  ck_assert_uint_eq(lead.labelled, 2);
  ck_assert(same(lead.ms_p50, 200));
  ck_assert(same(lead.ms_p90, 280));
  ck_assert(same(lead.stream_p50, 200));
  ts_lat_set_fini(&set);
}
END_TEST

START_TEST(lead_in_argument_bytes) {
  /* the tap holds the pieces before the label back and hands them over in one delta right
   * after tool_call_started: those bytes came with the label; the deltas after it are the
   * lead (escaped text counts decoded, as the tap hands it out) */
  static const char *const ev[] = {
      "{\"v\":1,\"type\":\"tool_call_started\",\"thread\":\"t\",\"seq\":1,\"offset\":300,"
      "\"call_id\":\"a\",\"tool\":\"w\",\"index\":0,\"turn\":1,\"progress\":\"x\"}",
      "{\"v\":1,\"type\":\"tool_call_delta\",\"thread\":\"t\",\"seq\":2,\"offset\":300,"
      "\"call_id\":\"a\",\"tool\":\"w\",\"index\":0,\"turn\":1,\"delta\":\"{\\\"description\\\":\\\"x\\\",\"}",
      "{\"v\":1,\"type\":\"tool_call_delta\",\"thread\":\"t\",\"seq\":3,\"offset\":400,"
      "\"call_id\":\"a\",\"tool\":\"w\",\"index\":0,\"turn\":1,\"delta\":\"\\\"c\\\":\\\"caf\\u00e9 \\ud83d\\ude00\"}",
      "{\"v\":1,\"type\":\"tool_call_delta\",\"thread\":\"t\",\"seq\":4,\"offset\":500,"
      "\"call_id\":\"a\",\"tool\":\"w\",\"index\":0,\"turn\":1,\"delta\":\"\\\"}\"}",
      "{\"v\":1,\"type\":\"tool_call_ready\",\"thread\":\"t\",\"seq\":5,\"offset\":500,"
      "\"call_id\":\"a\",\"tool\":\"w\",\"index\":0,\"turn\":1,\"arguments\":{}}",
  };
  ts_lat_set set = {0};
  ts_lat_reader rd;
  ts_lat_reader_init(&rd, &set, "t");
  for (size_t i = 0; i < 5; i++)
    ck_assert_int_eq(ts_lat_reader_event(&rd, ev[i], strlen(ev[i])), TS_E_OK);
  const ts_lat_call *c = &set.v[0].calls[0];
  /* the label's delta, then "c":"café 😀"} decoded (é two bytes, the emoji four) */
  ck_assert_uint_eq(c->label_arg, strlen("{\"description\":\"x\","));
  ck_assert_uint_eq(c->arg_seen - c->label_arg, strlen("\"c\":\"caf\xc3\xa9 \xf0\x9f\x98\x80") + 2);
  ck_assert(same(ts_lat_call_value(&set.v[0], c, TS_LAT_LEAD_BYTES),
                 (double)(c->arg_seen - c->label_arg)));
  ck_assert(same(ts_lat_call_value(&set.v[0], c, TS_LAT_LEAD_STREAM_BYTES), 200));
  ts_lat_set_fini(&set);
}
END_TEST

/* ---- bootstrap ---------------------------------------------------------------------------- */

START_TEST(bootstrap) {
  double a[50], b[50], a2[50], b2[50];
  for (int i = 0; i < 50; i++) a[i] = 100 + (i * 37) % 50, b[i] = 200 + (i * 11) % 50;
  memcpy(a2, a, sizeof a);
  memcpy(b2, b, sizeof b);
  ts_lat_diff d, d2;
  ck_assert_int_eq(ts_lat_bootstrap(a, 50, b, 50, 2000, 1, 0.95, &d), TS_E_OK);
  ck_assert(same(d.diff, 100));
  ck_assert(d.significant && d.lo > 80 && d.hi < 120 && d.lo <= d.diff && d.diff <= d.hi);
  ck_assert_int_eq(ts_lat_bootstrap(a2, 50, b2, 50, 2000, 1, 0.95, &d2), TS_E_OK);
  ck_assert(d.lo == d2.lo && d.hi == d2.hi); /* the same seed, the same interval */
  /* the same distribution on both sides: the interval covers 0 */
  double c[40], e[40];
  for (int i = 0; i < 40; i++) c[i] = (i * 7) % 40, e[i] = (i * 13) % 40;
  ck_assert_int_eq(ts_lat_bootstrap(c, 40, e, 40, 2000, 7, 0.95, &d), TS_E_OK);
  ck_assert(!d.significant && d.lo <= 0 && d.hi >= 0);
  /* a side with nothing measured */
  double n1[2] = {NAN, NAN}, n2[1] = {3};
  ck_assert_int_eq(ts_lat_bootstrap(n1, 2, n2, 1, 100, 1, 0.95, &d), TS_E_INVAL);
  ck_assert_uint_eq(d.na, 0);
}
END_TEST

/* ---- the probe over a capture ------------------------------------------------------------ */

static const char *progress_of(void *user, const char *tool, size_t len, size_t *arg_len) {
  (void)user;
  if (len == 13 && !memcmp(tool, "create_ticket", 13)) {
    *arg_len = 5;
    return "title";
  }
  return NULL;
}

/* Feeds every read at "time" 1000 + bytes fed so far (µs), so times follow the cut and
 * bytes do not; renders what must not depend on the cut. */
static void run_probe(void *user, ts_split *feed, sb *out) {
  (void)user;
  ts_lat_request r;
  ts_lat_request_init(&r, "capture");
  ts_lat_probe *p;
  ts_lat_probe_config cfg = {.progress_arg = progress_of};
  ck_assert_int_eq(ts_lat_probe_new(&cfg, &r, &p), TS_E_OK);
  ts_lat_probe_sent(p, 1000);
  char *b;
  size_t n;
  while (ts_split_next(feed, &b, &n)) {
    uint64_t before = ts_split_offset(feed) - n;
    ck_assert_int_eq(ts_lat_probe_feed(p, b, n, 1000 + before + n), TS_E_OK);
    /* what arrived in this read is stamped with its arrival, never earlier */
    if (r.first_byte_us) ck_assert_uint_le(r.first_byte_us, 1000 + before + n);
  }
  ck_assert_int_eq(ts_lat_probe_finish(p, 999999), TS_E_OK);
  ts_lat_probe_free(p);
  sb_printf(out, "calls=%zu errors=%u tokens=%d:%llu\n", r.ncalls, r.errors, r.has_tokens,
            (unsigned long long)r.out_tokens);
  for (size_t i = 0; i < r.ncalls; i++) {
    const ts_lat_call *c = &r.calls[i];
    sb_printf(out, "%u %s %s label=%d ready=%d name=%d lead_bytes=%g lead_stream=%g arg_bytes=%llu\n",
              c->index, c->call_id, c->tool, c->has_label, c->ready, c->name_us != 0,
              ts_lat_call_value(&r, c, TS_LAT_LEAD_BYTES),
              ts_lat_call_value(&r, c, TS_LAT_LEAD_STREAM_BYTES), (unsigned long long)c->arg_bytes);
    /* the name comes no later than the label, the label no later than the arguments */
    ck_assert(c->name_us && c->name_us <= (c->has_label ? c->label_us : c->args_us));
    ck_assert(!c->has_label || c->label_us <= c->args_us);
  }
  ck_assert(r.first_byte_us && r.first_token_us >= r.first_byte_us);
  ts_lat_request_fini(&r);
}

START_TEST(probe_split_invariant) {
  size_t len;
  char *in = ts_test_read_file(ts_test_path("tests/corpus/openai-chat-two-parallel-calls.sse"), &len);
  sb want;
  memset(&want, 0, sizeof want);
  ts_split_run_once(in, len, 0, run_probe, NULL, &want);
  /* create_ticket has a label (its title), notify_team none */
  ck_assert_msg(strstr(sb_str(&want), "create_ticket label=1 ready=1 name=1"), "%s", sb_str(&want));
  ck_assert_msg(strstr(sb_str(&want), "notify_team label=0 ready=1 name=1"), "%s", sb_str(&want));
  ck_assert_msg(strstr(sb_str(&want), "calls=2 errors=0"), "%s", sb_str(&want));
  ts_split_check("probe", in, len, run_probe, NULL, sb_str(&want));
  ts_split_check_random("probe", in, len, run_probe, NULL, sb_str(&want), 17, 20);
  sb_free(&want);
  free(in);
}
END_TEST

START_TEST(probe_times_from_arrival) {
  /* the whole capture in one piece at t=5000: every event of it is at 5000 */
  size_t len;
  char *in = ts_test_read_file(ts_test_path("tests/corpus/openai-chat-two-parallel-calls.sse"), &len);
  ts_lat_request r;
  ts_lat_request_init(&r, "c");
  ts_lat_probe *p;
  ts_lat_probe_config cfg = {.progress_arg = progress_of};
  ck_assert_int_eq(ts_lat_probe_new(&cfg, &r, &p), TS_E_OK);
  ts_lat_probe_sent(p, 1000);
  size_t half = len / 2;
  ck_assert_int_eq(ts_lat_probe_feed(p, in, half, 5000), TS_E_OK);
  ck_assert_int_eq(ts_lat_probe_feed(p, in + half, len - half, 9000), TS_E_OK);
  ck_assert_int_eq(ts_lat_probe_finish(p, 9500), TS_E_OK);
  ts_lat_probe_free(p);
  ck_assert(same(ts_lat_request_value(&r, TS_LAT_TTFB), 4));
  ck_assert(same(ts_lat_request_value(&r, TS_LAT_TOTAL), 8.5));
  ck_assert_uint_eq(r.ncalls, 2);
  ck_assert_uint_eq(r.calls[0].name_us, 5000);
  ck_assert(r.calls[1].args_us == 9000);
  ts_lat_request_fini(&r);
  free(in);
}
END_TEST

START_TEST(probe_out_of_memory) {
  size_t len;
  char *in = ts_test_read_file(ts_test_path("tests/corpus/openai-chat-two-parallel-calls.sse"), &len);
  int saw_ok = 0;
  for (long n = 1; n < 400 && !saw_ok; n++) {
    ts_lat_request r;
    ts_lat_request_init(&r, "c");
    ts_lat_probe *p = NULL;
    ts_lat_probe_config cfg = {.progress_arg = progress_of};
    ts_test_alloc_fail_after(n);
    int rc = ts_lat_probe_new(&cfg, &r, &p), a = TS_E_OK, b = TS_E_OK;
    if (rc == TS_E_OK) {
      a = ts_lat_probe_feed(p, in, len, 10);
      b = ts_lat_probe_finish(p, 20);
      ts_lat_probe_free(p);
    }
    ts_test_alloc_fail_after(-1); /* before asserting: check allocates too */
    ck_assert(rc == TS_E_OK || rc == TS_E_NOMEM);
    ck_assert(a == TS_E_OK || a == TS_E_NOMEM);
    ck_assert(b == TS_E_OK || b == TS_E_NOMEM);
    saw_ok = rc == TS_E_OK && a == TS_E_OK && b == TS_E_OK && r.ncalls == 2;
    ts_lat_request_fini(&r);
  }
  ck_assert(saw_ok);
  free(in);
}
END_TEST

int main(void) {
  Suite *s = suite_create("latency");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, quantiles);
  tcase_add_test(tc, metrics);
  tcase_add_test(tc, usage_tokens);
  tcase_add_test(tc, errors_counted);
  tcase_add_test(tc, stored_events);
  tcase_add_test(tc, lead_counts_labelled_only);
  tcase_add_test(tc, lead_in_argument_bytes);
  tcase_add_test(tc, bootstrap);
  tcase_add_test(tc, probe_split_invariant);
  tcase_add_test(tc, probe_times_from_arrival);
  tcase_add_test(tc, probe_out_of_memory);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
