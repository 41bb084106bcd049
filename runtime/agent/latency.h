/*
 * latency.h: latency figures of model tool-call streams, from event timestamps.
 *
 * `toolstream bench` and the summary line of `toolstream run` measure the same things
 * the same way, here: a *request* is one model reply (one turn of a thread); each of its
 * tool calls is a *call*. What is measured is when events happened, on the monotonic
 * clock in microseconds (base/clock.h; events carry it as `mono_us`, docs/events.md):
 *
 *   per request   sent (the request was handed to the HTTP client, or a replay began),
 *                 the first byte of the reply body, the first token (the first text or
 *                 tool-call output: text_delta, a call's name or its first argument
 *                 bytes), the end of the reply, the output tokens the provider reported
 *                 in `usage`, errors and retries;
 *   per call      its name (tool_call_started as it fires for a tool without a progress
 *                 argument), its progress label (tool_call_started with `progress`), its
 *                 complete arguments (tool_call_ready), its result (tool_result), and the
 *                 stream offsets of the label and of the complete arguments.
 * From those, the metrics of TS_LAT_METRICS (below; docs/bench.md defines each one): a
 * figure that cannot be known (no label, no usage, no send time in a store) is NAN, never
 * a made-up zero.
 *
 * Everything here is pure: no I/O, no clock. Times come in with the observations (a live
 * probe stamps them as bytes arrive, agent/latency_probe.h; a stored event carries its
 * own). The statistics (quantiles, the bootstrap interval on a difference of medians)
 * are deterministic: the bootstrap takes its seed from the caller.
 *
 * Memory: a request holds at most TS_LAT_MAX_CALLS calls (a call past that is counted in
 * `dropped_calls`, not kept); names and ids are kept truncated to fixed buffers. A set of
 * requests grows up to TS_LAT_MAX_REQUESTS.
 */
#ifndef TS_AGENT_LATENCY_H
#define TS_AGENT_LATENCY_H

#include <stddef.h>
#include <stdint.h>

#include "base/view.h"

#define TS_LAT_MAX_CALLS 1024       /* the tap's own bound on calls per turn */
#define TS_LAT_MAX_REQUESTS 1000000 /* a benchmark far beyond any sane run */
#define TS_LAT_ID_MAX 63            /* call ids and tool names kept (truncated past it) */
#define TS_LAT_SOURCE_MAX 127       /* the request's source (thread id, file name) */
#define TS_LAT_ERROR_MAX 255        /* the first error message of a request */

/* One tool call of a request. Times are monotonic µs, 0 when not seen. */
typedef struct {
  uint32_t index;
  char call_id[TS_LAT_ID_MAX + 1];
  char tool[TS_LAT_ID_MAX + 1];
  uint64_t name_us;   /* tool_call_started of a tool without a progress argument */
  uint64_t label_us;  /* tool_call_started carrying `progress` */
  uint64_t args_us;   /* tool_call_ready */
  uint64_t result_us; /* tool_result */
  uint64_t first_us;  /* the call's first event of any kind */
  uint64_t label_off, args_off; /* stream offsets of the label and of the ready event */
  uint64_t arg_bytes; /* the complete arguments' compact JSON length */
  uint64_t arg_seen;  /* argument bytes seen in tool_call_delta events so far */
  uint64_t label_arg; /* of them, those that had arrived with the label */
  uint8_t has_label, ready, error;
  uint8_t label_pending; /* the label came; its held-back delta (all bytes so far) not yet */
  uint8_t label_counted; /* label_arg is known */
} ts_lat_call;

/* One request (one model reply). Times are monotonic µs, 0 when not known. */
typedef struct {
  char source[TS_LAT_SOURCE_MAX + 1]; /* what it was: a thread id, a file name */
  uint32_t turn;      /* the turn within its thread (1-based; 0 when not known) */
  uint32_t seq;       /* its number in the benchmark (0-based, in start order) */
  uint64_t sent_us, first_byte_us, first_token_us, end_us;
  uint64_t first_event_us, last_event_us; /* the first and last event seen */
  uint64_t stream_end_us; /* turn_finished or stream_error: the reply's end in events */
  uint64_t out_tokens;
  uint8_t has_tokens;
  uint32_t errors;    /* stream_error, tool_call_error, a failed request */
  uint32_t retries;   /* HTTP attempts after the first */
  uint32_t dropped_calls;
  char error[TS_LAT_ERROR_MAX + 1]; /* the first error's message ("" when none) */
  ts_lat_call *calls;
  size_t ncalls, cap;
} ts_lat_request;

/* The metrics: X(ID, key, per_call, unit, what). `key` names it in JSON and CSV. */
#define TS_LAT_METRICS(X)                                                                   \
  X(TTFB, "ttfb_ms", 0, "ms", "time to first byte")                                         \
  X(FIRST_TOKEN, "first_token_ms", 0, "ms", "time to first token")                          \
  X(TOTAL, "total_ms", 0, "ms", "total time")                                               \
  X(OUT_TPS, "output_tokens_per_s", 0, "tok/s", "output tokens per second")                 \
  X(NAME, "name_ms", 1, "ms", "time to the call's name")                                    \
  X(LABEL, "label_ms", 1, "ms", "time to the progress label")                               \
  X(ARGS, "args_ms", 1, "ms", "time to complete arguments")                                 \
  X(LEAD_MS, "lead_ms", 1, "ms", "lead of the label (time)")                                \
  X(LEAD_BYTES, "lead_bytes", 1, "B", "lead of the label (argument bytes)")                 \
  X(LEAD_STREAM_BYTES, "lead_stream_bytes", 1, "B", "lead of the label (stream bytes)")      \
  X(ARG_BPS, "arg_bytes_per_s", 1, "B/s", "argument bytes per second")                      \
  X(RESULT, "result_ms", 1, "ms", "time to the result")

typedef enum {
#define TS_LAT_X(id, key, per_call, unit, what) TS_LAT_##id,
  TS_LAT_METRICS(TS_LAT_X)
#undef TS_LAT_X
  TS_LAT_NMETRICS
} ts_lat_metric;

/* The metric's key ("ttfb_ms"), unit ("ms"), description; 1 when it is per call. NULL
 * (or 0) for a value out of range. */
const char *ts_lat_metric_key(int m);
const char *ts_lat_metric_unit(int m);
const char *ts_lat_metric_what(int m);
int ts_lat_metric_per_call(int m);
/* The metric named `key`, or -1. */
int ts_lat_metric_find(const char *key, size_t len);

/* A request metric (per_call 0) of r, or a call metric of r's call c: NAN when it cannot
 * be known. */
double ts_lat_request_value(const ts_lat_request *r, int m);
double ts_lat_call_value(const ts_lat_request *r, const ts_lat_call *c, int m);

/* ---- building requests from observations ----------------------------------------------- */

/* What is observed of one event. Views are read during the call only. */
typedef struct {
  int type;          /* ts_event_type (events/event.h; the tap's types are its first) */
  uint64_t t_us;     /* when it happened (monotonic µs); 0: not known */
  uint64_t offset;   /* the event's stream offset */
  int is_call;
  uint32_t index;    /* with is_call */
  ts_view call_id, tool;
  int has_progress;  /* tool_call_started: it carries `progress` */
  uint64_t arg_bytes; /* tool_call_ready: the arguments' length */
  uint64_t delta_bytes; /* tool_call_delta: the piece's length (decoded) */
  ts_view usage;     /* turn_finished: the provider's usage object (may be empty) */
  ts_view error;     /* stream_error, tool_call_error: the message */
} ts_lat_obs;

/* Zeroes r and names its source (truncated; may be NULL). */
void ts_lat_request_init(ts_lat_request *r, const char *source);
void ts_lat_request_fini(ts_lat_request *r); /* frees the calls; safe on a zeroed one */

/* Takes one event into r. A tool_call_started without progress is the call's name; with
 * it, its label; tool_call_ready completes it; tool_result is its result; text_delta,
 * tool_call_delta and a name are output tokens (the first one is the first token); the
 * deltas of a call count its argument bytes: the first one after a label holds every byte
 * up to it (the tap holds pieces back until tool_call_started), the rest are the lead;
 * stream_error and tool_call_error count as errors (the first message is kept);
 * turn_finished reads the output tokens from `usage` (completion_tokens, output_tokens,
 * eval_count, outputTokens or candidatesTokenCount, the first present). Returns TS_E_OK
 * or TS_E_NOMEM (r is unchanged then). */
int ts_lat_request_observe(ts_lat_request *r, const ts_lat_obs *o);

/* A call's name seen at t_us (a second tap without progress arguments sees every call's
 * name, agent/latency_probe.h). Also a first token. TS_E_OK or TS_E_NOMEM. */
int ts_lat_request_name(ts_lat_request *r, uint32_t index, ts_view call_id, ts_view tool,
                        uint64_t t_us);

/* An error of the request itself (the HTTP request failed): counted, message kept. */
void ts_lat_request_fail(ts_lat_request *r, const char *message);

/* The output tokens of a provider's usage object: 1 and *out when one of the names above
 * is a top-level integer member of it, else 0. */
int ts_lat_usage_tokens(ts_view usage, uint64_t *out);

/* ---- a set of requests, and stored events ---------------------------------------------- */

typedef struct ts_lat_set {
  ts_lat_request *v;
  size_t n, cap;
} ts_lat_set;

/* Appends a new request (ts_lat_request_init with source) and points *out at it (valid
 * until the next add). TS_E_OK, TS_E_NOMEM, TS_E_LIMIT past TS_LAT_MAX_REQUESTS. */
int ts_lat_set_add(ts_lat_set *s, const char *source, ts_lat_request **out);
void ts_lat_set_fini(ts_lat_set *s); /* frees every request; safe on a zeroed set */

/* Reads one thread's stored events (their JSON, in seq order) into a set, a request per
 * turn. A call event belongs to the turn it names; text, turn_finished and stream_error to
 * the turn being streamed (the one after the last turn_finished or stream_error, or the
 * turn of the last call event seen). Only `mono_us` is read for time: events stored
 * without it (--no-time) give bytes and counts but no times. The store holds no send time
 * nor first byte: those metrics are NAN. */
typedef struct {
  ts_lat_set *set;
  char thread[TS_LAT_SOURCE_MAX + 1];
  size_t first;         /* this thread's first request in the set */
  uint32_t stream_turn; /* the turn being streamed (0: none yet) */
  int after_end;        /* the streamed turn ended: the next stream event starts another */
} ts_lat_reader;

void ts_lat_reader_init(ts_lat_reader *rd, ts_lat_set *set, const char *thread);
/* One stored event. TS_E_OK; TS_E_INVAL for text that is not an event object (skipped,
 * nothing changed); TS_E_NOMEM, TS_E_LIMIT. */
int ts_lat_reader_event(ts_lat_reader *rd, const char *json, size_t len);

/* ---- statistics -------------------------------------------------------------------------- */

typedef struct {
  size_t n;
  double p50, p90, p99, max, mean;
} ts_lat_summary;

/* The q-quantile (0..1) of sorted[0..n) by linear interpolation between closest ranks
 * (position q*(n-1)); NAN for n == 0. */
double ts_lat_quantile(const double *sorted, size_t n, double q);

/* Drops the NANs of v[0..*n) (keeping order), sorts what remains ascending, and updates *n. */
void ts_lat_sort(double *v, size_t *n);

/* Summarises v[0..n) (NANs ignored; v is reordered). Every figure NAN when none is left. */
void ts_lat_summarize(double *v, size_t n, ts_lat_summary *out);

/* The values of metric m over every request of the set (request metrics) or every call
 * (call metrics), NANs included: a malloc'd array (the caller frees it) with its length in
 * *n, or NULL (out of memory, or nothing: *n == 0). */
double *ts_lat_values(const ts_lat_set *s, int m, size_t *n);

/* B's median minus A's, with a percentile bootstrap interval at `level` (0.95): `iters`
 * resamples of each side (with replacement, from a generator seeded with `seed`, so the
 * interval is the same at every run). `significant` when the interval excludes 0. The
 * inputs are sorted in place (NANs dropped first). TS_E_OK; TS_E_INVAL when a side has no
 * value or iters is 0; TS_E_NOMEM. */
typedef struct {
  size_t na, nb;
  double a_median, b_median, diff, lo, hi;
  int significant;
} ts_lat_diff;
int ts_lat_bootstrap(double *a, size_t na, double *b, size_t nb, unsigned iters, uint64_t seed,
                     double level, ts_lat_diff *out);

/* The lead of run's summary line: over the calls of the set that have a progress label
 * and complete arguments only, the median and p90 of lead_ms, lead_bytes (argument bytes:
 * known only where deltas were seen) and lead_stream_bytes, and how many calls that covers
 * (`labelled`) of how many (`calls`). A figure no call had is NAN. TS_E_OK or TS_E_NOMEM. */
typedef struct {
  size_t calls, labelled;
  double ms_p50, ms_p90, bytes_p50, bytes_p90, stream_p50, stream_p90;
} ts_lat_lead;
int ts_lat_lead_of(const ts_lat_set *s, ts_lat_lead *out);

#endif /* TS_AGENT_LATENCY_H */
