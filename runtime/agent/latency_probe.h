/*
 * latency_probe.h: a model reply's bytes in, as they arrive, a latency record out
 * (agent/latency.h).
 *
 * A probe is what `toolstream bench` puts between the HTTP client (or a paced replay) and
 * the measurements. It stamps nothing itself: each piece of bytes comes with the time it
 * arrived (monotonic µs), and every event the piece brings out is observed at that time.
 * The bytes go through two taps (stream/tap.h):
 *   - the *label tap*, configured with the tools' progress arguments: its
 *     tool_call_started is the label (or the name, for a tool without one), its
 *     tool_call_ready the complete arguments, its errors and turn_finished the request's;
 *   - the *name tap*, with no progress arguments and text on: its tool_call_started fires
 *     at every call's name, and its first text or name is the first token.
 * So one reply gives both the time to the name and the time to the label of the same call,
 * which a single tap cannot (it holds tool_call_started back until the label).
 *
 * Partial input: pieces of any size, split anywhere; what is measured in bytes (offsets,
 * leads in bytes, argument lengths, counts) does not depend on the split, only times do.
 * The taps decode in place, so each piece is copied, in slices of at most
 * TS_LAT_PROBE_SLICE bytes, into the probe's own buffer: no allocation per piece.
 *
 * Ownership: the probe writes into the ts_lat_request it was given, which must outlive it.
 */
#ifndef TS_AGENT_LATENCY_PROBE_H
#define TS_AGENT_LATENCY_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "agent/latency.h"
#include "stream/tap.h"

#define TS_LAT_PROBE_SLICE 65536 /* bytes copied per tap feed: a bound, not a frame */

typedef struct {
  ts_format format;                /* TS_FORMAT_AUTO detects, as tap does */
  ts_tap_progress_fn progress_arg; /* the tools' progress arguments; may be NULL */
  void *progress_user;
  size_t max_args_bytes;           /* 0: the tap's default */
} ts_lat_probe_config;

typedef struct ts_lat_probe ts_lat_probe;

/* Makes a probe writing into r. TS_E_OK and *out; TS_E_INVAL (a bad format), TS_E_NOMEM.
 * *out is untouched on error. */
int ts_lat_probe_new(const ts_lat_probe_config *cfg, ts_lat_request *r, ts_lat_probe **out);
void ts_lat_probe_free(ts_lat_probe *p); /* NULL is a no-op */

/* The request was sent at t_us. */
void ts_lat_probe_sent(ts_lat_probe *p, uint64_t t_us);

/* The reply's Content-Type (from its head, before its first byte: Bedrock's event stream,
 * NDJSON, a JSON error body are read by it, as `run` does; stream/tap.h's
 * ts_tap_content_type), for both taps. TS_E_OK, or TS_E_INVAL after the first byte. */
int ts_lat_probe_content_type(ts_lat_probe *p, const char *ct, size_t len);

/* The next len bytes of the reply, arrived at t_us (the first piece is the first byte).
 * `buf` is not modified. TS_E_OK, or TS_E_NOMEM (sticky: the record is incomplete). */
int ts_lat_probe_feed(ts_lat_probe *p, const char *buf, size_t len, uint64_t t_us);

/* The reply ended at t_us: the taps are finished (a stream cut short is an error event of
 * the record), end_us is set. TS_E_OK or the sticky TS_E_NOMEM. */
int ts_lat_probe_finish(ts_lat_probe *p, uint64_t t_us);

#endif /* TS_AGENT_LATENCY_PROBE_H */
