/*
 * tap_fuzz.c: the tap over every format, whole against chunked.
 *
 * Input: byte 0 picks the format (auto, each SSE format, raw) and options (deltas, text,
 * a small heartbeat and argument limit, so the limit paths are reached by short inputs);
 * bytes 1..8 choose the chunk sizes; the rest is the stream. The stream is tapped once
 * whole and once in chunks, and the event traces must be equal, fragments merged: a
 * delta's or a text's boundaries follow the reads, its bytes and every other event (its
 * type, offset, fields, errors) must not. The deltas of a call that ends in an error are
 * not compared: they stop somewhere before the error, where depends on the reads. Memory and UB are checked by the sanitizers.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_split.h"
#include "stream/tap.h"

/* Fragments (argument deltas, text) are kept apart from the sequence of events: where
 * their boundaries fall, and so where a heartbeat falls among them, follows the reads.
 * What must not is their concatenation per call (and the text's), checked at the end. */
#define MAX_CALLS 64
typedef struct {
  ts_buf out;
  ts_buf text;
  ts_buf args[MAX_CALLS];
} trace;

static void field(ts_buf *b, const char *k, ts_view v) {
  ts_buf_puts(b, k);
  ts_buf_append_json_string(b, v.p, v.len);
}

static int on_event(void *user, const ts_tap_event *e) {
  trace *t = user;
  ts_buf *b = &t->out;
  if (e->type == TS_TAP_TEXT_DELTA) {
    ts_buf_append(&t->text, e->text.p, e->text.len);
    return 0;
  }
  if (e->type == TS_TAP_TOOL_CALL_DELTA) {
    ts_buf_append(&t->args[e->index % MAX_CALLS], e->delta.p, e->delta.len);
    return 0;
  }
  if (e->type == TS_TAP_TOOL_CALL_ERROR) /* deltas before an error: up to somewhere before it */
    ts_buf_reset(&t->args[e->index % MAX_CALLS]);
  ts_buf_puts(b, ts_tap_type_name(e->type));
  ts_buf_puts(b, " @");
  ts_buf_append_u64(b, e->offset);
  if (e->is_call) {
    ts_buf_puts(b, " #");
    ts_buf_append_u64(b, e->index);
    field(b, " id=", e->call_id);
    field(b, " tool=", e->tool);
  }
  switch (e->type) {
    case TS_TAP_TOOL_CALL_STARTED:
      if (e->has_progress) field(b, " progress=", e->progress);
      if (e->progress_truncated) ts_buf_puts(b, " cut");
      break;
    case TS_TAP_TOOL_CALL_HEARTBEAT:
      ts_buf_puts(b, " bytes=");
      ts_buf_append_u64(b, e->bytes);
      break;
    case TS_TAP_TOOL_CALL_READY: field(b, " args=", e->arguments); break;
    case TS_TAP_TOOL_CALL_ERROR:
    case TS_TAP_STREAM_ERROR:
      ts_buf_puts(b, " ");
      ts_buf_puts(b, ts_err_name(e->code));
      field(b, " ", e->error);
      break;
    case TS_TAP_TURN_FINISHED:
      field(b, " stop=", e->stop_reason);
      field(b, " usage=", e->usage);
      break;
    default: break;
  }
  ts_buf_putc(b, '\n');
  return 0;
}

static const char *progress(void *user, const char *tool, size_t n, size_t *len) {
  (void)user, (void)tool, (void)n;
  *len = 4;
  return "path";
}

static void run(const ts_tap_config *cfg, const uint8_t *in, size_t n, ts_fuzz_chunks *chunks,
                trace *t) {
  ts_buf_init(&t->out, 64u << 20);
  ts_buf_init(&t->text, 64u << 20);
  for (int i = 0; i < MAX_CALLS; i++) ts_buf_init(&t->args[i], 64u << 20);
  ts_tap *tap = NULL;
  /* a valid config: only out of memory, which the fuzzer does not inject */
  if (ts_tap_new(&tap, cfg, on_event, t) != TS_E_OK) abort();
  char *buf = malloc(n ? n : 1); /* the tap decodes in place: each run gets its own copy */
  memcpy(buf, in, n);
  for (size_t at = 0; at < n;) {
    size_t k = chunks ? ts_fuzz_chunks_next(chunks, n - at) : n - at;
    ts_tap_feed(tap, buf + at, k);
    at += k;
  }
  ts_tap_finish(tap);
  ts_buf_puts(&t->out, ts_tap_failed(tap) ? "failed\n" : "ok\n");
  field(&t->out, "text ", (ts_view){t->text.p ? t->text.p : "", t->text.len});
  for (int i = 0; i < MAX_CALLS; i++) {
    if (t->args[i].len) {
      ts_buf_puts(&t->out, "\nargs #");
      ts_buf_append_u64(&t->out, (uint64_t)i);
      field(&t->out, " ", (ts_view){t->args[i].p, t->args[i].len});
    }
    ts_buf_fini(&t->args[i]);
  }
  ts_buf_fini(&t->text);
  ts_tap_free(tap);
  free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 9) return 0;
  uint8_t h = data[0];
  /* every format the table has, auto and raw */
  ts_tap_config cfg = {.format = (ts_format)(h % TS_FORMAT_COUNT),
                       .raw_tool = "write_file",
                       .progress_arg = progress,
                       .deltas = (h >> 3) & 1,
                       .text = (h >> 4) & 1};
  if (h & 0x20) cfg.heartbeat_bytes = 4;
  if (h & 0x40) cfg.max_args_bytes = 64; /* the event cap then defaults to it plus 1 MiB */
  else cfg.max_event_bytes = (size_t)1 << 20; /* inputs are at most 64 KiB (run.sh): the
                                                 default 17 MiB buffer would only cost time */
  if (h & 0x80) cfg.progress_max = 3;
  /* the reply's Content-Type, when one is known (stream/tap.h): none, or one of those that
   * decide the framing */
  static const char *const types[] = {NULL, "text/event-stream", "application/json",
                                      "application/x-ndjson", "application/vnd.amazon.eventstream",
                                      "text/html", "text/plain"};
  if (cfg.format != TS_FORMAT_RAW) cfg.content_type = types[data[1] % (sizeof types / sizeof types[0])];
  ts_fuzz_chunks chunks;
  ts_fuzz_chunks_init(&chunks, data + 1, 8);
  trace whole, split;
  run(&cfg, data + 9, size - 9, NULL, &whole);
  run(&cfg, data + 9, size - 9, &chunks, &split);
  ts_fuzz_same("tap", &whole.out, &split.out);
  ts_buf_fini(&whole.out);
  ts_buf_fini(&split.out);
  return 0;
}
