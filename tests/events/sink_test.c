/*
 * sink_test.c: the event sink (events/sink.h): numbering, one encoding for every
 * destination, the error policy (store fatal and sticky, output failure stops writing
 * only, publish failure reported once and not fatal), redaction of secrets in every
 * string of an event with the JSON kept valid, several emitting threads, and out of
 * memory in the constructor.
 */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/error.h"
#include "events/bus_pub.h"
#include "events/event.h"
#include "events/sink.h"
#include "stream/json_tok.h"
#include "support/test_support.h"

#define KEY_FOR_PLACE "sk-place-0123456789"

/* ---- a recording store ---------------------------------------------------------------- */

typedef struct {
  char text[1 << 16];
  size_t len;
  uint64_t seqs[4096];
  size_t n;
  int fail_at; /* the n-th call (1-based) fails with TS_E_STORE_IO; 0: never */
} rec_store;

static int rec_put(void *user, const char *thread, uint64_t seq, const char *json, size_t len) {
  rec_store *r = user;
  (void)thread;
  if (r->fail_at && (int)r->n + 1 == r->fail_at) return TS_E_STORE_IO;
  if (r->n < 4096) r->seqs[r->n] = seq;
  r->n++;
  if (r->len + len + 1 < sizeof r->text) {
    memcpy(r->text + r->len, json, len);
    r->len += len;
    r->text[r->len++] = '\n';
    r->text[r->len] = '\0';
  }
  return TS_E_OK;
}

static ts_tap_event error_event(const char *msg) {
  ts_tap_event e;
  memset(&e, 0, sizeof e);
  e.type = TS_TAP_STREAM_ERROR;
  e.code = TS_E_MS_PROVIDER;
  e.error = (ts_view){msg, strlen(msg)};
  return e;
}

/* The output FILE's contents so far. */
static const char *file_text(FILE *f, char *buf, size_t cap) {
  fflush(f);
  long at = ftell(f);
  rewind(f);
  size_t n = fread(buf, 1, cap - 1, f);
  buf[n] = '\0';
  fseek(f, at, SEEK_SET);
  return buf;
}

static int count_lines(const char *s) {
  int n = 0;
  for (; *s; s++) n += *s == '\n';
  return n;
}

static int tok_cb(void *user, const ts_json_token *t) {
  (void)user, (void)t;
  return 0;
}

/* 1 when every line of `text` is one valid JSON value (the project's strict tokenizer). */
static int lines_valid_json(const char *text) {
  const char *p = text;
  while (*p) {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) : strlen(p);
    ts_json_tok t;
    ts_json_tok_init(&t, 0, tok_cb, NULL);
    if (ts_json_tok_feed(&t, p, n) || ts_json_tok_finish(&t)) return 0;
    p += n + (nl ? 1 : 0);
  }
  return 1;
}

/* ---- numbering, one encoding everywhere ------------------------------------------------ */

START_TEST(test_numbering_and_destinations) {
  FILE *out = tmpfile();
  ck_assert_ptr_nonnull(out);
  static rec_store st;
  memset(&st, 0, sizeof st);
  ts_sink_config c = {.no_time = 1, .thread = "th_x", .last_seq = 41, .out = out, .store = rec_put,
                      .store_user = &st};
  ts_sink *s;
  ck_assert_int_eq(ts_sink_new(&c, &s), TS_E_OK);
  ts_tap_event e = error_event("boom");
  ck_assert_int_eq(ts_sink_emit_tap(s, &e), TS_E_OK);
  ts_event r;
  memset(&r, 0, sizeof r);
  r.body.type = TS_EVENT_TOOL_RESULT;
  r.body.is_call = 1;
  r.body.tool = (ts_view){"w", 1};
  r.result = (ts_view){"{\"ok\":true}", 11};
  r.thread = (ts_view){"ignored", 7}; /* the sink's thread and seq win */
  r.seq = 7;
  ck_assert_int_eq(ts_sink_emit(s, &r), TS_E_OK);
  ck_assert_uint_eq(ts_sink_last_seq(s), 43);
  char buf[4096];
  const char *text = file_text(out, buf, sizeof buf);
  ck_assert_str_eq(text,
                   "{\"v\":1,\"type\":\"stream_error\",\"thread\":\"th_x\",\"seq\":42,\"offset\":0,"
                   "\"code\":\"ms_provider\",\"error\":\"boom\"}\n"
                   "{\"v\":1,\"type\":\"tool_result\",\"thread\":\"th_x\",\"seq\":43,\"offset\":0,"
                   "\"call_id\":\"\",\"tool\":\"w\",\"index\":0,\"is_error\":false,"
                   "\"duration_ms\":0.000,\"result\":{\"ok\":true}}\n");
  ck_assert_str_eq(st.text, text); /* the store got exactly the bytes printed */
  ck_assert_uint_eq(st.seqs[0], 42);
  ck_assert_uint_eq(st.seqs[1], 43);
  ck_assert_int_eq(ts_sink_store_error(s), 0);
  ck_assert_int_eq(ts_sink_output_failed(s), 0);
  ts_sink_free(s);
  fclose(out);
}
END_TEST

static const struct {
  int line;
  const char *label;
  const char *thread;
  const char *secret;
  size_t n_secrets;
  int want;
} config_rows[] = {
    {__LINE__, "ok", "t1", NULL, 0, TS_E_OK},
    {__LINE__, "no thread", NULL, NULL, 0, TS_E_INVAL},
    {__LINE__, "empty thread", "", NULL, 0, TS_E_INVAL},
    {__LINE__, "thread with a space", "a b", NULL, 0, TS_E_INVAL},
    {__LINE__, "secret too short", "t1", "sk-1234", 1, TS_E_INVAL},
    {__LINE__, "secret long enough", "t1", "sk-12345", 1, TS_E_OK},
    {__LINE__, "NULL secret skipped", "t1", NULL, 1, TS_E_OK},
    {__LINE__, "too many secrets", "t1", NULL, TS_SINK_MAX_SECRETS + 1, TS_E_INVAL},
};

/* Every event is stamped once, by the sink: `ts` (wall clock, µs since the epoch) and
 * `mono_us` (CLOCK_MONOTONIC, µs) between seq and offset, the same bytes in the store and
 * on the output; mono_us never goes back, ts is within a minute of the test's own clock. */
static uint64_t member_u64(const char *line, const char *key) {
  char k[32];
  snprintf(k, sizeof k, "\"%s\":", key);
  const char *p = strstr(line, k);
  ck_assert_msg(p != NULL, "no %s in %s", key, line);
  return strtoull(p + strlen(k), NULL, 10);
}

START_TEST(test_stamps) {
  FILE *out = tmpfile();
  static rec_store st;
  memset(&st, 0, sizeof st);
  ts_sink_config c = {.thread = "t", .out = out, .store = rec_put, .store_user = &st};
  ts_sink *s;
  ck_assert_int_eq(ts_sink_new(&c, &s), TS_E_OK);
  struct timespec a;
  clock_gettime(CLOCK_REALTIME, &a);
  uint64_t now = (uint64_t)a.tv_sec * 1000000u + (uint64_t)a.tv_nsec / 1000u;
  ts_tap_event e = error_event("x");
  for (int i = 0; i < 3; i++) ck_assert_int_eq(ts_sink_emit_tap(s, &e), TS_E_OK);
  char buf[8192];
  const char *text = file_text(out, buf, sizeof buf);
  ck_assert_str_eq(text, st.text); /* stamped once: the same bytes everywhere */
  uint64_t last_mono = 0;
  for (const char *p = text; *p;) {
    const char *nl = strchr(p, '\n');
    char line[1024];
    snprintf(line, sizeof line, "%.*s", (int)(nl - p), p);
    ck_assert_ptr_nonnull(strstr(line, ",\"ts\":"));
    ck_assert(strstr(line, "\"seq\":") < strstr(line, "\"ts\":") &&
              strstr(line, "\"mono_us\":") < strstr(line, "\"offset\":"));
    uint64_t ts = member_u64(line, "ts"), mono = member_u64(line, "mono_us");
    ck_assert(ts + 60000000u > now && ts < now + 60000000u);
    ck_assert(mono >= last_mono && mono > 0);
    last_mono = mono;
    p = nl + 1;
  }
  ts_sink_free(s);
  fclose(out);
}
END_TEST

START_TEST(test_config) {
  for (size_t i = 0; i < sizeof config_rows / sizeof config_rows[0]; i++) {
    const char *secrets[TS_SINK_MAX_SECRETS + 1] = {config_rows[i].secret};
    ts_sink_config c = {.no_time = 1, .thread = config_rows[i].thread, .secrets = secrets,
                        .n_secrets = config_rows[i].n_secrets};
    ts_sink *s = NULL;
    int rc = ts_sink_new(&c, &s);
    ck_assert_msg(rc == config_rows[i].want, "line %d (%s): %d", config_rows[i].line,
                  config_rows[i].label, rc);
    ck_assert_msg(rc == TS_E_OK ? s != NULL : s == NULL, "line %d", config_rows[i].line);
    ts_sink_free(s);
  }
  /* a thread id at the limit is accepted, one byte over is not */
  char id[TS_THREAD_ID_MAX + 2];
  memset(id, 'a', sizeof id);
  id[TS_THREAD_ID_MAX] = '\0';
  ts_sink *s;
  ts_sink_config c = {.no_time = 1, .thread = id};
  ck_assert_int_eq(ts_sink_new(&c, &s), TS_E_OK);
  ts_sink_free(s);
  id[TS_THREAD_ID_MAX] = 'a';
  id[TS_THREAD_ID_MAX + 1] = '\0';
  ck_assert_int_eq(ts_sink_new(&c, &s), TS_E_INVAL);
}
END_TEST

/* ---- the error policy ------------------------------------------------------------------- */

START_TEST(test_store_failure_is_sticky) {
  FILE *out = tmpfile();
  static rec_store st;
  memset(&st, 0, sizeof st);
  st.fail_at = 2;
  ts_sink_config c = {.no_time = 1, .thread = "t", .out = out, .store = rec_put, .store_user = &st};
  ts_sink *s;
  ck_assert_int_eq(ts_sink_new(&c, &s), TS_E_OK);
  ts_tap_event e = error_event("one");
  ck_assert_int_eq(ts_sink_emit_tap(s, &e), TS_E_OK);
  ck_assert_int_eq(ts_sink_emit_tap(s, &e), TS_E_STORE_IO); /* not stored: not printed */
  st.fail_at = 0;                                             /* the store is back ... */
  ck_assert_int_eq(ts_sink_emit_tap(s, &e), TS_E_STORE_IO); /* ... the failure is sticky */
  ck_assert_int_eq(ts_sink_store_error(s), TS_E_STORE_IO);
  char buf[4096];
  ck_assert_int_eq(count_lines(file_text(out, buf, sizeof buf)), 1);
  ck_assert_uint_eq(st.n, 1);
  ts_sink_free(s);
  fclose(out);
}
END_TEST

START_TEST(test_output_failure) {
  FILE *full = fopen("/dev/full", "w"); /* every write fails with ENOSPC at the flush */
  ck_assert_ptr_nonnull(full);
  static rec_store st;
  memset(&st, 0, sizeof st);
  ts_sink_config c = {.no_time = 1, .thread = "t", .out = full, .store = rec_put, .store_user = &st};
  ts_sink *s;
  ck_assert_int_eq(ts_sink_new(&c, &s), TS_E_OK);
  ts_tap_event e = error_event("x");
  ck_assert_int_eq(ts_sink_emit_tap(s, &e), TS_E_IO); /* this event's write failed */
  ck_assert_int_eq(ts_sink_output_failed(s), 1);
  ck_assert_int_eq(ts_sink_emit_tap(s, &e), TS_E_OK); /* writing stopped; storing goes on */
  ck_assert_uint_eq(st.n, 2);
  ck_assert_uint_eq(st.seqs[1], 2);
  ts_sink_free(s);
  fclose(full);
}
END_TEST

START_TEST(test_publish_failure) {
  ts_pub *pub;
  ck_assert_int_eq(ts_pub_open("inproc://sink-test", NULL, NULL, &pub), TS_E_OK);
  /* the bus already holds seq 5 of the thread: the sink's seq 1 is refused */
  ck_assert_int_eq(ts_pub_send(pub, "t", 1, 5, "{}", 2), TS_E_OK);
  static rec_store st;
  memset(&st, 0, sizeof st);
  ts_sink_config c = {.no_time = 1, .thread = "t", .pub = pub, .store = rec_put, .store_user = &st,
                      .who = "sink_test"};
  ts_sink *s;
  ck_assert_int_eq(ts_sink_new(&c, &s), TS_E_OK);
  ts_tap_event e = error_event("x");
  ck_assert_int_eq(ts_sink_emit_tap(s, &e), TS_E_OK); /* not fatal */
  ck_assert_int_eq(ts_sink_publish_failed(s), 1);
  ck_assert_int_eq(ts_sink_emit_tap(s, &e), TS_E_OK);
  ck_assert_uint_eq(st.n, 2); /* stored all the same */
  ts_pub_stats ps;
  ts_pub_get_stats(pub, &ps);
  ck_assert_uint_eq(ps.sent, 1); /* only the test's own event went out */
  ts_sink_free(s);

  /* a healthy bus gets every event, numbered as stored */
  ts_sink_config c2 = {.thread = "t2", .pub = pub};
  ck_assert_int_eq(ts_sink_new(&c2, &s), TS_E_OK);
  for (int i = 0; i < 3; i++) ck_assert_int_eq(ts_sink_emit_tap(s, &e), TS_E_OK);
  ts_pub_get_stats(pub, &ps);
  ck_assert_uint_eq(ps.sent, 4);
  ck_assert_int_eq(ts_sink_publish_failed(s), 0);
  ts_sink_free(s);
  ts_pub_close(pub);
}
END_TEST

/* An event that does not encode is a hole in the record: fatal and sticky, like the
 * store (sink.h, "Error policy"), with its seq unused and nothing written after it. */
START_TEST(test_encoding_failure) {
  FILE *out = tmpfile();
  rec_store st = {0};
  ts_sink_config c = {.no_time = 1, .thread = "t", .out = out, .max_event_bytes = 128,
                      .store = rec_put, .store_user = &st};
  ts_sink *s;
  ck_assert_int_eq(ts_sink_new(&c, &s), TS_E_OK);
  ts_tap_event e = error_event("ok");
  ck_assert_int_eq(ts_sink_emit_tap(s, &e), TS_E_OK);
  char big[200];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  e = error_event(big);
  ck_assert_int_eq(ts_sink_emit_tap(s, &e), TS_E_LIMIT);
  ck_assert_uint_eq(ts_sink_last_seq(s), 1); /* the seq was not used */
  ck_assert_int_eq(ts_sink_error(s), TS_E_LIMIT);
  ck_assert_int_eq(ts_sink_encode_failed(s), TS_E_LIMIT);
  ck_assert_int_eq(ts_sink_store_error(s), TS_E_OK);
  e = error_event("ok");
  ck_assert_int_eq(ts_sink_emit_tap(s, &e), TS_E_LIMIT); /* sticky: nothing more goes out */
  ck_assert_uint_eq(ts_sink_last_seq(s), 1);
  char buf[4096];
  ck_assert_int_eq(count_lines(file_text(out, buf, sizeof buf)), 1);
  ck_assert_uint_eq(st.n, 1);
  ts_sink_free(s);
  fclose(out);
}
END_TEST

static ts_tap_event ready_event(ts_buf *args) {
  ts_tap_event e;
  memset(&e, 0, sizeof e);
  e.type = TS_TAP_TOOL_CALL_READY;
  e.is_call = 1;
  e.call_id = (ts_view){"call_1", 6};
  e.tool = (ts_view){"write", 5};
  e.arguments = (ts_view){args->p, args->len};
  e.arguments_buf = args;
  return e;
}

/* ts_sink_emit_tap_last encodes a READY around the arguments in the tap's own buffer: the
 * same bytes as a copying emit, for every destination, the buffer taken; over the cap
 * (the cap following the arguments' limit) and out of memory are the sticky error. */
START_TEST(test_ready_in_place) {
  static const char *const secrets[] = {KEY_FOR_PLACE};
  for (int with_secret = 0; with_secret < 2; with_secret++) {
    FILE *a = tmpfile(), *b = tmpfile();
    rec_store sa = {0}, sb_ = {0};
    ts_sink_config ca = {.no_time = 1, .thread = "t", .out = a, .store = rec_put,
                         .store_user = &sa, .secrets = secrets, .n_secrets = (size_t)with_secret};
    ts_sink_config cb = ca;
    cb.out = b;
    cb.store_user = &sb_;
    ts_sink *x, *y;
    ck_assert_int_eq(ts_sink_new(&ca, &x), TS_E_OK);
    ck_assert_int_eq(ts_sink_new(&cb, &y), TS_E_OK);
    for (size_t n = 1; n <= 70000; n = n * 3 + 1) { /* from tiny to past any small buffer */
      ts_buf args, copy;
      ts_buf_init(&args, 1 << 20);
      ts_buf_init(&copy, 1 << 20);
      ts_buf_puts(&args, "{\"k\":\"" KEY_FOR_PLACE "\",\"v\":\"");
      for (size_t i = 0; i < n; i++) ts_buf_putc(&args, (char)('a' + i % 26));
      ts_buf_puts(&args, "\"}");
      ts_buf_append(&copy, args.p, args.len);
      ts_tap_event e = ready_event(&copy);
      ck_assert_int_eq(ts_sink_emit_tap(x, &e), TS_E_OK);
      e = ready_event(&args);
      ck_assert_int_eq(ts_sink_emit_tap_last(y, &e), TS_E_OK);
      ck_assert_ptr_null(args.p); /* taken, and freed by the sink */
      ts_buf_fini(&args);
      ts_buf_fini(&copy);
    }
    static char ta[1 << 20], tb[1 << 20];
    file_text(a, ta, sizeof ta);
    file_text(b, tb, sizeof tb);
    ck_assert_uint_gt(strlen(ta), 40000);
    ck_assert_str_eq(ta, tb);
    ck_assert_uint_eq(sa.len, sb_.len);
    ck_assert_int_eq(memcmp(sa.text, sb_.text, sa.len), 0);
    ck_assert(with_secret ? strstr(ta, KEY_FOR_PLACE) == NULL : strstr(ta, KEY_FOR_PLACE) != NULL);
    ts_sink_free(x);
    ts_sink_free(y);
    fclose(a);
    fclose(b);
  }

  /* The cap for a tap's limit holds its largest READY; one byte more does not fit. */
  size_t max_args = 1000;
  FILE *out = tmpfile();
  ts_sink_config c = {.no_time = 1, .thread = "t", .out = out,
                      .max_event_bytes = ts_sink_cap_for_args(max_args)};
  ck_assert_uint_eq(ts_sink_cap_for_args(max_args), max_args + TS_SINK_ENVELOPE);
  ck_assert_uint_eq(ts_sink_cap_for_args(0), TS_TAP_MAX_ARGS_BYTES + TS_SINK_ENVELOPE);
  ts_sink *s;
  ck_assert_int_eq(ts_sink_new(&c, &s), TS_E_OK);
  ts_buf args;
  ts_buf_init(&args, max_args);
  ts_buf_putc(&args, '[');
  while (args.len < max_args - 1) ts_buf_putc(&args, '1');
  ts_buf_putc(&args, ']');
  ck_assert_uint_eq(args.len, max_args);
  ts_tap_event e = ready_event(&args);
  ck_assert_int_eq(ts_sink_emit_tap_last(s, &e), TS_E_OK);
  ts_buf_fini(&args);
  ts_sink_free(s);
  c.max_event_bytes = 64; /* smaller than the envelope: the READY cannot be written */
  ck_assert_int_eq(ts_sink_new(&c, &s), TS_E_OK);
  ts_buf_init(&args, 100);
  ts_buf_puts(&args, "{\"a\":1}");
  e = ready_event(&args);
  ck_assert_int_eq(ts_sink_emit_tap_last(s, &e), TS_E_LIMIT);
  ck_assert_int_eq(ts_sink_error(s), TS_E_LIMIT);
  ts_buf_fini(&args);
  ts_sink_free(s);
  /* out of memory while growing the buffer around the arguments: sticky, nothing out */
  c.max_event_bytes = 0;
  long before = ftell(out);
  ck_assert_int_eq(ts_sink_new(&c, &s), TS_E_OK);
  ts_buf_init(&args, 100);
  ts_buf_puts(&args, "{\"a\":1}");
  e = ready_event(&args);
  ts_test_alloc_fail_after(1);
  int rc = ts_sink_emit_tap_last(s, &e);
  ts_test_alloc_fail_after(-1);
  ck_assert_int_eq(rc, TS_E_NOMEM);
  ck_assert_int_eq(ts_sink_error(s), TS_E_NOMEM);
  fflush(out);
  ck_assert_int_eq(ftell(out), before);
  ts_buf_fini(&args);
  ts_sink_free(s);
  fclose(out);
}
END_TEST

/* ---- redaction ------------------------------------------------------------------------- */

#define KEY "sk-test-0123456789abcdef"

static const struct {
  int line;
  const char *label;
  const char *secret;
  const char *message; /* a stream_error's text */
  const char *want;    /* the "error" value as encoded */
} redact_rows[] = {
    {__LINE__, "provider echo", KEY, "Incorrect API key provided: Bearer " KEY ".",
     "\"Incorrect API key provided: Bearer [redacted].\""},
    {__LINE__, "twice", KEY, KEY "|" KEY, "\"[redacted]|[redacted]\""},
    {__LINE__, "at the end", KEY, "key=" KEY, "\"key=[redacted]\""},
    {__LINE__, "a prefix is not the key", KEY, "sk-test-0123", "\"sk-test-0123\""},
    {__LINE__, "quotes and backslashes", "ab\"cd\\efgh", "x ab\"cd\\efgh y", "\"x [redacted] y\""},
    {__LINE__, "control bytes", "tab\there!", "[tab\there!]", "\"[[redacted]]\""},
    /* the secret's text starts inside an escape unit (the n of \n): no match, and the
     * string stays valid */
    {__LINE__, "inside an escape", "nsecret1", "\nsecret1", "\"\\nsecret1\""},
    {__LINE__, "UTF-8", "cl\xC3\xA9-secret", "a cl\xC3\xA9-secret b", "\"a [redacted] b\""},
};

START_TEST(test_redaction) {
  for (size_t i = 0; i < sizeof redact_rows / sizeof redact_rows[0]; i++) {
    FILE *out = tmpfile();
    static rec_store st;
    memset(&st, 0, sizeof st);
    const char *secrets[] = {redact_rows[i].secret};
    ts_sink_config c = {.no_time = 1, .thread = "t", .out = out, .store = rec_put, .store_user = &st,
                        .secrets = secrets, .n_secrets = 1};
    ts_sink *s;
    ck_assert_int_eq(ts_sink_new(&c, &s), TS_E_OK);
    ts_tap_event e = error_event(redact_rows[i].message);
    ck_assert_int_eq(ts_sink_emit_tap(s, &e), TS_E_OK);
    char buf[4096], want[512];
    const char *text = file_text(out, buf, sizeof buf);
    snprintf(want, sizeof want, ",\"error\":%s}\n", redact_rows[i].want);
    ck_assert_msg(strstr(text, want) != NULL, "line %d (%s): %s", redact_rows[i].line,
                  redact_rows[i].label, text);
    ck_assert_msg(lines_valid_json(text), "line %d: not JSON: %s", redact_rows[i].line, text);
    ck_assert_str_eq(st.text, text);
    ts_sink_free(s);
    fclose(out);
  }
}
END_TEST

START_TEST(test_redaction_every_field) {
  FILE *out = tmpfile();
  const char *secrets[] = {"first-secret", KEY};
  ts_sink_config c = {.no_time = 1, .thread = "t", .out = out, .secrets = secrets, .n_secrets = 2};
  ts_sink *s;
  ck_assert_int_eq(ts_sink_new(&c, &s), TS_E_OK);
  ts_tap_event e;
  memset(&e, 0, sizeof e);
  e.type = TS_TAP_TEXT_DELTA;
  e.text = (ts_view){"the key is " KEY, strlen("the key is " KEY)};
  ts_sink_emit_tap(s, &e);
  memset(&e, 0, sizeof e);
  e.type = TS_TAP_TOOL_CALL_READY;
  e.is_call = 1;
  e.tool = (ts_view){"login", 5};
  e.arguments = (ts_view){"{\"token\":\"" KEY "\",\"n\":1}", strlen("{\"token\":\"" KEY "\",\"n\":1}")};
  ts_sink_emit_tap(s, &e);
  memset(&e, 0, sizeof e);
  e.type = TS_TAP_TOOL_CALL_STARTED;
  e.is_call = 1;
  e.tool = (ts_view){"first-secret", 12}; /* even a name */
  e.has_progress = 1;
  e.progress = (ts_view){"using first-secret", 18};
  ts_sink_emit_tap(s, &e);
  ts_event r;
  memset(&r, 0, sizeof r);
  r.body.type = TS_EVENT_TOOL_RESULT;
  r.body.is_call = 1;
  r.result = (ts_view){"{\"echo\":\"" KEY "\"}", strlen("{\"echo\":\"" KEY "\"}")};
  ts_sink_emit(s, &r);
  memset(&e, 0, sizeof e);
  e.type = TS_TAP_TURN_FINISHED; /* the secret as a number outside strings stays */
  e.usage = (ts_view){"{\"in\":12345678}", 15};
  ts_sink_emit_tap(s, &e);
  char buf[8192];
  const char *text = file_text(out, buf, sizeof buf);
  ck_assert_msg(!strstr(text, KEY) && !strstr(text, "first-secret"), "%s", text);
  ck_assert_ptr_nonnull(strstr(text, "\"text\":\"the key is [redacted]\""));
  ck_assert_ptr_nonnull(strstr(text, "\"arguments\":{\"token\":\"[redacted]\",\"n\":1}"));
  ck_assert_ptr_nonnull(strstr(text, "\"tool\":\"[redacted]\""));
  ck_assert_ptr_nonnull(strstr(text, "\"progress\":\"using [redacted]\""));
  ck_assert_ptr_nonnull(strstr(text, "\"result\":{\"echo\":\"[redacted]\"}"));
  ck_assert_ptr_nonnull(strstr(text, "\"usage\":{\"in\":12345678}"));
  ck_assert_int_eq(count_lines(text), 5);
  ck_assert(lines_valid_json(text));

  /* the same secrets from a plain message */
  ts_buf b;
  ts_buf_init(&b, 1024);
  const char *msg = "HTTP 401: Incorrect API key provided: Bearer " KEY " (first-secret)";
  ck_assert_int_eq(ts_sink_redact(s, msg, strlen(msg), &b), TS_E_OK);
  ck_assert_str_eq(b.p, "HTTP 401: Incorrect API key provided: Bearer [redacted] ([redacted])");
  ts_buf_fini(&b);
  ts_sink_free(s);
  fclose(out);
}
END_TEST

/* ---- threads ---------------------------------------------------------------------------- */

static void *emitter(void *arg) {
  ts_sink *s = arg;
  ts_tap_event e = error_event("from a thread");
  for (int i = 0; i < 500; i++) ts_sink_emit_tap(s, &e);
  return NULL;
}

START_TEST(test_threads) {
  static rec_store st;
  memset(&st, 0, sizeof st);
  ts_sink_config c = {.no_time = 1, .thread = "t", .store = rec_put, .store_user = &st};
  ts_sink *s;
  ck_assert_int_eq(ts_sink_new(&c, &s), TS_E_OK);
  pthread_t th[4];
  for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, emitter, s);
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  ck_assert_uint_eq(st.n, 2000);
  for (size_t i = 0; i < st.n; i++) ck_assert_uint_eq(st.seqs[i], i + 1); /* stored in order */
  ts_sink_free(s);
}
END_TEST

/* ---- out of memory ---------------------------------------------------------------------- */

START_TEST(test_oom) {
  const char *secrets[] = {KEY};
  ts_sink_config c = {.no_time = 1, .thread = "t", .secrets = secrets, .n_secrets = 1};
  int ok = 0;
  for (long n = 1; n < 64 && !ok; n++) {
    ts_sink *s = NULL;
    ts_test_alloc_fail_after(n);
    int rc = ts_sink_new(&c, &s);
    ts_test_alloc_fail_after(-1);
    ck_assert_msg(rc == TS_E_OK || rc == TS_E_NOMEM, "allocation %ld: %d", n, rc);
    if (rc == TS_E_OK) {
      ok = 1;
      ts_tap_event e = error_event("a " KEY);
      ck_assert_int_eq(ts_sink_emit_tap(s, &e), TS_E_OK);
    } else {
      ck_assert_ptr_null(s);
    }
    ts_sink_free(s);
  }
  ck_assert_msg(ok, "the constructor never succeeded");
}
END_TEST

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  Suite *s = suite_create("sink");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_numbering_and_destinations);
  tcase_add_test(tc, test_config);
  tcase_add_test(tc, test_stamps);
  tcase_add_test(tc, test_store_failure_is_sticky);
  tcase_add_test(tc, test_output_failure);
  tcase_add_test(tc, test_publish_failure);
  tcase_add_test(tc, test_encoding_failure);
  tcase_add_test(tc, test_ready_in_place);
  tcase_add_test(tc, test_redaction);
  tcase_add_test(tc, test_redaction_every_field);
  tcase_add_test(tc, test_threads);
  tcase_add_test(tc, test_oom);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
