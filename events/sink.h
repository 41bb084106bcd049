/*
 * sink.h: where a thread's events go: numbered, encoded once, redacted, then stored,
 * written and published, under one error policy.
 *
 * Every producer of thread events (the tap's caller in `toolstream tap`, the agent loop
 * of `toolstream run` with its dispatcher, and the gateway) hands each event to one
 * ts_sink. The sink, for each event, in this order:
 *   1. numbers it: seq = the thread's previous seq + 1 (starting after `last_seq`), names
 *      its thread (and the thread's parent, for a child thread), and stamps it with the
 *      time it is made: `ts` (µs since the Unix epoch, wall clock) and `mono_us` (µs on
 *      CLOCK_MONOTONIC, for latencies; base/clock.h), here and only here, so that every
 *      destination sees the same bytes (`no_time` leaves them out);
 *   2. encodes it once (events/event.h, ts_event_encode);
 *   3. redacts every configured secret from the encoded text (below);
 *   4. stores it (the `store` callback: the sink cannot see the store's room);
 *   5. writes it, as one line, to `out` (a FILE *, flushed per event), or hands it to
 *      the `view` callback (a terminal's live view);
 *   6. publishes it on the bus (`pub`, events/bus_pub.h).
 * Storing comes first so that nothing is shown or published that is not durable: a
 * subscriber's replay (which falls back to the store) never misses an event it saw live.
 *
 * Error policy (the same for every producer; docs/events.md):
 *   - store fails (disk full, I/O, locked): fatal. The event is neither written nor
 *     published; the error is sticky: this and every later ts_sink_emit return it and
 *     do nothing. The producer stops (run: "the store failed", exit 1).
 *   - output fails (stdout closed, EPIPE, disk full): the reader went away. Writing
 *     stops for good; storing and publishing go on. ts_sink_emit returns TS_E_IO for this
 *     event only; ts_sink_output_failed tells it later. The producer decides what that
 *     means for it: tap stops reading and exits 1 (it exists to print); run goes on, since
 *     its record is the store.
 *   - publish fails (the bus refuses, out of memory): reported once, as one line on
 *     standard error prefixed with `who`; publishing stops for good; not fatal, emit
 *     returns TS_E_OK. Subscribers that miss events see a gap, which replay fills only
 *     from the store.
 *   - the event does not encode (over `max_event_bytes`, out of memory): fatal, like a
 *     store failure, because the thread's record would have a hole (a call without its
 *     READY, a turn without its end). The event goes nowhere and its seq is not used; one
 *     line on standard error names the event, its size and the cap; the error is sticky:
 *     this and every later ts_sink_emit return it (TS_E_LIMIT / TS_E_NOMEM) and do
 *     nothing. The producer stops with a clear error: tap exits 1, run stops ("an event
 *     could not be written", exit 1); the gateway stops that thread's events and goes on
 *     forwarding bytes (a proxy's product is the reply, not the events).
 *
 * The line cap: a tap's events are bounded by its limits. Every event but READY carries
 * a bounded amount of text (the tap cuts deltas and text into pieces, tap.h), READY
 * carries the whole compact arguments, so ts_sink_cap_for_args(max_args_bytes) is a cap
 * under which every event of a tap with that limit encodes. Producers set
 * max_event_bytes from it, so raising --max-args-bytes raises the line cap with it.
 *
 * Redaction: each configured secret (an API key, a token) is replaced by "[redacted]"
 * wherever it appears in any string of the encoded event (an error message that echoes
 * `Bearer sk-...`, a tool result, argument text). Matching is done on the JSON text, on
 * the secret's own JSON escaping, only inside strings and only at whole escape units,
 * so the result is always valid JSON. A secret written differently in the model's own
 * argument JSON (with \u escapes) is not recognised. Secrets shorter than
 * TS_SINK_SECRET_MIN bytes are refused: they would match ordinary text.
 * ts_sink_redact applies the same replacement to a plain message (an error line for
 * standard error).
 *
 * Threads: ts_sink_emit may be called from several threads (run's loop and its
 * dispatcher's worker); one mutex serialises numbering and the destinations, so the
 * events of the thread are stored, written and published in seq order.
 */
#ifndef TS_SINK_H
#define TS_SINK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/strbuf.h"
#include "base/thread_id.h"
#include "events/bus_pub.h"
#include "events/event.h"

#define TS_SINK_SECRET_MIN 8   /* shorter secrets would redact ordinary words */
#define TS_SINK_MAX_SECRETS 32
#define TS_SINK_MAX_EVENT_BYTES ((size_t)64 << 20) /* default cap on one encoded event */
/* What an encoded event may hold besides a READY's arguments: the envelope (type, thread,
 * parent, seq, stamps, offset, 3 ids or names of at most 256 bytes, each at most 6x when
 * escaped), a progress label (at most 64 KiB, at most 2x escaped: control characters are
 * stripped from it), one piece of delta or text (TS_TAP_TEXT_PIECE, at most 6x), usage
 * (4 KiB) or an error message. 256 KiB covers the largest of them with room to spare. */
#define TS_SINK_ENVELOPE ((size_t)256 << 10)
#define TS_SINK_REDACTED "[redacted]"

/* Stores one encoded event (`json`, len bytes, no newline) of `thread` at `seq`.
 * Returns TS_E_OK or a negative ts_err (a store error). */
typedef int (*ts_sink_store_fn)(void *user, const char *thread, uint64_t seq, const char *json,
                                size_t len);

/* Shows one encoded event (no newline), e.g. on a terminal's live view. */
typedef void (*ts_sink_view_fn)(void *user, const char *json, size_t len);
/* Called after an event went to every destination, with the event and the bytes they got
 * (tools-spec §7's tool_call_started hook runs from here). Under the sink's lock: it must
 * not emit on the same sink. */
typedef void (*ts_sink_emitted_fn)(void *user, const ts_event *ev, const char *json, size_t len);

typedef struct {
  const char *thread;  /* required: a valid thread id (copied) */
  const char *parent;  /* the thread's parent (copied): every event carries it; NULL: a root */
  uint64_t last_seq;   /* the thread's newest seq so far (0: a new thread) */
  const char *who;     /* prefix of the error lines ("toolstream tap"); NULL: "toolstream" */
  FILE *out;           /* one JSON line per event, flushed; NULL: none */
  ts_sink_view_fn view; /* instead of (or beside) out; NULL: none */
  void *view_user;
  ts_pub *pub;         /* may be NULL; not owned */
  ts_sink_store_fn store; /* may be NULL: nothing stored */
  void *store_user;
  const char *const *secrets; /* redacted from every event (copied); NULL entries skipped */
  size_t n_secrets;           /* at most TS_SINK_MAX_SECRETS */
  size_t max_event_bytes;     /* 0: TS_SINK_MAX_EVENT_BYTES */
  int no_time;                /* 1: no `ts` / `mono_us` stamps (reproducible output) */
  ts_sink_emitted_fn emitted; /* may be NULL */
  void *emitted_user;
} ts_sink_config;

typedef struct ts_sink ts_sink;

/* Makes a sink. Returns TS_E_OK and fills *out; TS_E_INVAL for an invalid thread id, too
 * many secrets or one shorter than TS_SINK_SECRET_MIN; TS_E_NOMEM. *out is untouched on
 * error. */
int ts_sink_new(const ts_sink_config *cfg, ts_sink **out);

/* Frees the sink (NULL is a no-op). It does not close `out` or `pub`. */
void ts_sink_free(ts_sink *s);

/* One event: ev->body (and the result fields) are the event; ev->thread and ev->seq
 * are ignored (the sink's). Returns TS_E_OK; or, per the policy above, the sticky
 * store error, TS_E_IO when the output failed on this event, or the encoding error. */
int ts_sink_emit(ts_sink *s, const ts_event *ev);

/* A tap event (stream/tap.h) as a thread event. */
int ts_sink_emit_tap(ts_sink *s, const ts_tap_event *e);

/* The same, for a caller that does nothing more with the event after this call (tap's):
 * a READY event's arguments buffer (e->arguments_buf, tap.h) is taken over and the line
 * is encoded around the arguments inside it, instead of copying them, so that one huge
 * call is in memory once rather than twice. After the call e->arguments must not be read.
 * Other events, and a READY without a buffer, go as with ts_sink_emit_tap. */
int ts_sink_emit_tap_last(ts_sink *s, const ts_tap_event *e);

/* The line cap under which every event of a tap whose max_args_bytes is `max_args`
 * encodes (0: the tap's default): max_args + TS_SINK_ENVELOPE. */
size_t ts_sink_cap_for_args(size_t max_args);

/* The thread id, and the seq of the last event numbered. */
const char *ts_sink_thread(const ts_sink *s);
uint64_t ts_sink_last_seq(ts_sink *s);

/* The sticky store error (TS_E_OK when none); 1 once the output has failed; 1 once
 * publishing has failed. */
int ts_sink_store_error(ts_sink *s);
/* The sticky error of either kind: the store's, or an event that did not encode
 * (TS_E_LIMIT / TS_E_NOMEM); TS_E_OK when none. */
int ts_sink_error(ts_sink *s);
/* Nonzero (the code) when the sticky error is an event that did not encode. */
int ts_sink_encode_failed(ts_sink *s);
int ts_sink_output_failed(ts_sink *s);
int ts_sink_publish_failed(ts_sink *s);

/* Appends `text` (n bytes) to `out` with every secret of the sink replaced by
 * TS_SINK_REDACTED. Returns TS_E_OK or the buffer's error. */
int ts_sink_redact(const ts_sink *s, const char *text, size_t n, ts_buf *out);

#endif /* TS_SINK_H */
