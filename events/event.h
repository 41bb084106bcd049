/*
 * event.h: the thread event vocabulary, and its one canonical JSON encoding.
 *
 * A thread's events come from two sources: the tap (stream/tap.h: a call started, its
 * argument bytes, ready, errors, text, the turn's end) and the dispatcher
 * (runtime/tools/dispatch.h: a call began executing, its result). The vocabulary of
 * both is ts_event_type here; the tap's types keep their own numbers in it, so a tap
 * event is a thread event's body as it stands (ts_event.body), and the dispatcher's
 * types follow them. Every event toolstream prints, publishes or stores is a ts_event encoded
 * by ts_event_encode; nothing assembles event JSON by hand anywhere else. The schema,
 * with its version, is documented in docs/events.md.
 *
 * Encoding: one JSON object, no newline, keys in a fixed order:
 *   v, type, thread, [parent], seq, [ts, mono_us], offset, [call_id, provider_call_id,
 *   tool, index, turn], then the type's own fields (provider_call_id only when set, turn
 *   only when not 0, `parent` only on a child thread's events).
 * Strings are escaped by ts_buf_append_json_string (always valid JSON and UTF-8);
 * `arguments` and `usage` are embedded as the JSON text they already are (the tap
 * validated `arguments` strictly; `usage` is the provider's object as jsmn delimited it).
 */
#ifndef TS_EVENT_H
#define TS_EVENT_H

#include <stdint.h>

#include "base/strbuf.h"
#include "stream/tap.h"

/* The schema version carried in every event's "v". */
#define TS_EVENT_SCHEMA_VERSION 1

typedef enum {
  /* the tap's events (stream/tap.h), same values */
  TS_EVENT_TOOL_CALL_STARTED = TS_TAP_TOOL_CALL_STARTED,
  TS_EVENT_TOOL_CALL_DELTA = TS_TAP_TOOL_CALL_DELTA,
  TS_EVENT_TOOL_CALL_HEARTBEAT = TS_TAP_TOOL_CALL_HEARTBEAT,
  TS_EVENT_TOOL_CALL_READY = TS_TAP_TOOL_CALL_READY,
  TS_EVENT_TOOL_CALL_ERROR = TS_TAP_TOOL_CALL_ERROR,
  TS_EVENT_TEXT_DELTA = TS_TAP_TEXT_DELTA,
  TS_EVENT_TURN_FINISHED = TS_TAP_TURN_FINISHED,
  TS_EVENT_STREAM_ERROR = TS_TAP_STREAM_ERROR,
  /* the dispatcher's events */
  TS_EVENT_TOOL_EXECUTION_STARTED,
  TS_EVENT_TOOL_RESULT,
  /* a call waits for a required variable without a value (tools-spec §3): parked */
  TS_EVENT_VARIABLE_REQUIRED,
  /* the thread passed from one agent to another (an agent tool, agent/compose.h) */
  TS_EVENT_HANDOFF,
  /* the thread tree (tools-spec §5, agent/subagents.h): a child thread was made (on the
   * child's own stream, so it carries `parent`), a queued message was taken into a
   * thread's conversation, a child's session ended with its outcome */
  TS_EVENT_THREAD_CREATED,
  TS_EVENT_SUBAGENT_MESSAGE,
  TS_EVENT_THREAD_FINISHED,
} ts_event_type;

/* The event name as it appears on the wire ("tool_call_started", "tool_result", ...);
 * "unknown" for a value outside the vocabulary. */
const char *ts_event_type_name(int type);

/* One thread event. Emitters (the tap through its caller, the dispatcher) fill `body`
 * and, for TOOL_RESULT, the result fields; `thread` and `seq` are the thread's, given by
 * whoever numbers the events (events/sink.h). `body` holds the type (a ts_event_type),
 * the offset, the call (is_call, index, call_id, tool) and the tap's own fields. Views
 * are the emitter's, valid only during the call that hands the event over. */
typedef struct {
  ts_view thread;
  ts_view parent; /* the thread's parent; empty for a root thread (then no "parent" key) */
  uint64_t seq;
  /* When the event was made (stamped by the sink, events/sink.h; 0: not stamped, and the
   * members are left out): `ts`, µs since the Unix epoch (wall clock), and `mono_us`, µs
   * on CLOCK_MONOTONIC (comparable between processes on one machine; for latencies). */
  uint64_t ts_us, mono_us;
  ts_tap_event body;
  uint8_t is_error;     /* TOOL_RESULT */
  uint64_t duration_us; /* TOOL_RESULT: how long the call ran */
  ts_view result;       /* TOOL_RESULT: the result as JSON text (success), or the message */
  ts_view var_name;        /* VARIABLE_REQUIRED: the variable */
  ts_view var_description; /* VARIABLE_REQUIRED: its description (may be empty) */
  uint8_t var_secret;      /* VARIABLE_REQUIRED: type 'secret' (else 'text') */
  ts_view handoff_from, handoff_to; /* HANDOFF: the agent (or prompt) that had the thread,
                                     * the agent that has it now */
  /* THREAD_CREATED: the agent the child runs, the instance's name, the relationship, and
   * whether the parent waits for it */
  ts_view agent, name, relationship;
  uint8_t blocking;
  /* SUBAGENT_MESSAGE: the sending thread (empty: from outside the tree), the item's number
   * in the receiver's inbox, and the message as the receiver's conversation got it */
  ts_view from;
  uint64_t inbox_seq;
  ts_view message;
  /* THREAD_FINISHED: how the session ended ("done", "failed", "max_turns") and its outcome
   * (JSON text, as reported to the parent; empty: none) */
  ts_view status, outcome;
} ts_event;

/* Appends the event's JSON object to `out`. Returns TS_E_OK or the buffer's error. */
int ts_event_encode(const ts_event *ev, ts_buf *out);

#endif /* TS_EVENT_H */
