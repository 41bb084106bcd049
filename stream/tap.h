/*
 * tap.h: a model's streamed reply in, tool-call events out, the moment they are knowable.
 *
 * The tap strings the stream layers together: SSE framing (sse.h), a provider adapter
 * (adapter.h), and for each tool call its own argument tokenizer (json_tok.h) with
 * a watcher on the tool's progress argument (json_watch.h). Bytes go in with
 * ts_tap_feed in chunks of any size; events come out through the callback.
 *
 * Progress detection (tools-spec §7), for each call:
 *   1. progress argument set: TOOL_CALL_STARTED fires in the very input event that
 *      completes that argument's value, with `progress` = the decoded string (for a
 *      non-string value, its compact JSON text).
 *   2. unset: it fires as soon as the call appears with its name; no progress.
 *   3. set, but the model never emits it: it fires when the call's arguments complete
 *      (the closing brace) or the provider ends the call, whichever is first; no progress.
 *   4. exactly once per call, and before every other event about that call.
 *   5. only a top-level key counts; keys compare after decoding escapes; with duplicate
 *      keys the first completed value wins.
 *   6. a string completes at its closing quote, a number at the delimiter after it, an
 *      object or array at its matching close, a literal at its last letter.
 *   7. `progress` is capped at `progress_max` bytes (default TS_TAP_PROGRESS_MAX, at most
 *      TS_TAP_PROGRESS_LIMIT), cut on a UTF-8 boundary with `progress_truncated` set when
 *      a visible character did not fit; control characters (C0, DEL, C1) are stripped:
 *      a run of them inside the label becomes one space, at either end it is removed.
 *      The label is built as the value streams, so a huge value costs no memory.
 *   8. arguments are checked strictly as they stream; malformed or truncated arguments
 *      give TOOL_CALL_ERROR for that call, which is then never reported ready. Other
 *      calls go on.
 *
 * Event order per call: STARTED, then DELTA / HEARTBEAT in stream order, then READY or
 * ERROR (exactly one of the two). DELTAs that arrive before STARTED are held back and
 * handed over right after it, so the concatenated deltas always equal the
 * argument text up to the end of the arguments object (whitespace after it is no delta,
 * and no event about the call follows READY). READY carries the arguments as compact JSON
 * (insignificant whitespace removed, everything else exactly as the model sent it); it fires at the end of the
 * input event whose bytes closed the arguments object (non-whitespace after it in a later
 * event is a STREAM_ERROR; the call stays ready). A call whose provider ends it
 * with no argument bytes at all is ready with `{}` (tools without parameters).
 *
 * Pieces: a DELTA or TEXT_DELTA carries at most TS_TAP_TEXT_PIECE bytes; longer text (a
 * big fragment, the deltas held back until STARTED) goes out as several events in a row,
 * cut on UTF-8 character boundaries. So every event but READY is small whatever the
 * input, and READY is bounded by max_args_bytes (a consumer can size its buffers from
 * that: events/sink.h, ts_sink_cap_for_args).
 *
 * Call ids: every call event carries a non-empty `call_id`, unique within the thread, and
 * `turn` (ts_tap_config.turn). It is the provider's own id unless the provider sent none
 * (Gemini without ids, raw input), sent one that an earlier call of this turn already
 * has, or sent one that `id_taken` says an earlier turn of the thread used; then it is
 * synthesized as "ts_<turn>_<index>" (deterministic: the same input gives the same ids),
 * and the provider's id, when it sent one, is kept in `provider_call_id`.
 *
 * Offsets: every event carries `offset`, the input bytes consumed when it was emitted:
 * the end of the SSE event that triggered it (after its blank line); for `raw` input,
 * the byte after the one that completed it. They do not depend on chunking.
 *
 * Ownership: all views in ts_tap_event are valid only during the callback.
 * Memory: per call a small fixed state plus the compact arguments (limit
 * `max_args_bytes`, TOOL_CALL_ERROR with TS_E_LIMIT past it); SSE events up to
 * `max_event_bytes` (STREAM_ERROR past it). Nothing grows without a bound.
 */
#ifndef TS_TAP_H
#define TS_TAP_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/strbuf.h"
#include "stream/adapter.h"

typedef enum {
  TS_TAP_TOOL_CALL_STARTED = 1,
  TS_TAP_TOOL_CALL_DELTA,
  TS_TAP_TOOL_CALL_HEARTBEAT,
  TS_TAP_TOOL_CALL_READY,
  TS_TAP_TOOL_CALL_ERROR,
  TS_TAP_TEXT_DELTA,
  TS_TAP_TURN_FINISHED,
  TS_TAP_STREAM_ERROR,
} ts_tap_type;
/* The thread-event vocabulary (these and the dispatcher's events) is events/event.h's;
 * the tap's types are its first values, unchanged. */

/* The event name as it appears on the wire ("tool_call_started", ...); "unknown"
 * for a type that is not the tap's. */
const char *ts_tap_type_name(int type);

typedef struct {
  uint8_t type;               /* ts_tap_type */
  uint8_t is_call;            /* call_id, tool and index are set */
  uint8_t has_progress;       /* STARTED */
  uint8_t progress_truncated; /* STARTED */
  uint64_t offset;
  uint32_t index;     /* the call's position in the turn */
  uint32_t turn;      /* the turn (ts_tap_config.turn), 1, 2, 3 ... within the thread */
  ts_view call_id;    /* never empty, unique within the thread (see "Call ids") */
  ts_view provider_call_id; /* the provider's own id when call_id is not it, else empty */
  ts_view tool;       /* the tool's name */
  ts_view progress;   /* STARTED: the label */
  ts_view delta;      /* DELTA: argument text */
  uint64_t bytes;     /* HEARTBEAT: argument bytes received so far */
  ts_view arguments;  /* READY: compact JSON object */
  int32_t code;       /* *_ERROR: a ts_err */
  ts_view error;      /* *_ERROR: a human-readable message */
  ts_view text;       /* TEXT_DELTA */
  ts_view stop_reason; /* TURN_FINISHED (may be empty) */
  ts_view usage;       /* TURN_FINISHED: raw JSON object, empty if the provider sent none */
  /* READY: the buffer holding `arguments` (arguments.p is its p), or NULL. A callback
   * that is the last reader of the event may take it over (move the struct out and
   * ts_buf_init it in place) instead of copying a huge call; the tap frees whatever is
   * left in it after the callback. (Added after 0.1.0, at the end.) */
  ts_buf *arguments_buf;
} ts_tap_event;

/* Return 0 to go on; nonzero stops the tap (feed returns TS_E_ABORTED, sticky). */
typedef int (*ts_tap_cb)(void *user, const ts_tap_event *ev);

/* The progress argument of `tool`, or NULL when it has none. */
typedef const char *(*ts_tap_progress_fn)(void *user, const char *tool, size_t tool_len,
                                          size_t *arg_len);

/* Calls per turn: a call's index is below this (the adapter's table bounds it). */
#define TS_TAP_MAX_CALLS TS_ADAPTER_MAX_CALLS
#define TS_TAP_PROGRESS_MAX 200
#define TS_TAP_PROGRESS_LIMIT 65536 /* the largest progress_max a config may ask for */
#define TS_TAP_HEARTBEAT_BYTES 4096
/* The most text one DELTA or TEXT_DELTA carries (see "Pieces"): big enough that pieces
 * are rare (provider fragments are a few bytes to a few KiB), small enough that an event
 * with the worst escaping (6 bytes per control character) stays far below any line cap. */
#define TS_TAP_TEXT_PIECE 8192
#define TS_TAP_MAX_ARGS_BYTES (16u << 20)
/* The default cap on one SSE event's data (one JSON value for NDJSON, one frame's payload
 * for Bedrock): a call's whole arguments plus this, since Gemini and Ollama send a call in
 * one event (raw JSON, so the event is the arguments and a small envelope). The buffer is
 * not reserved at that size: it is allocated when an event first needs it (one cut
 * between two feeds: a whole event is read where it lies), 4 KiB doubling up to the cap. */
#define TS_TAP_EVENT_SLACK (1u << 20)
#define TS_TAP_MAX_EVENT_BYTES (TS_TAP_MAX_ARGS_BYTES + TS_TAP_EVENT_SLACK)

typedef struct {
  ts_format format;        /* TS_FORMAT_AUTO (default) detects; TS_FORMAT_RAW: bare argument bytes */
  const char *raw_tool;       /* TS_FORMAT_RAW: the tool's name */
  ts_tap_progress_fn progress_arg; /* may be NULL: no tool has one */
  void *progress_user;
  int deltas;                 /* emit TOOL_CALL_DELTA */
  int text;                   /* emit TEXT_DELTA */
  uint64_t heartbeat_bytes;   /* 0: TS_TAP_HEARTBEAT_BYTES */
  size_t progress_max;        /* 0: TS_TAP_PROGRESS_MAX */
  size_t max_args_bytes;      /* 0: TS_TAP_MAX_ARGS_BYTES */
  size_t max_event_bytes;     /* 0: max_args_bytes + TS_TAP_EVENT_SLACK (largest SSE event data) */
  uint32_t turn;              /* the turn within the thread, stamped on call events; 0: 1 */
  /* May be NULL. Nonzero when `id` was a call id in an earlier turn of the thread: the
   * call then gets a synthesized id (see "Call ids"). */
  int (*id_taken)(void *user, const char *id, size_t len);
  void *id_user;
  /* The reply's HTTP Content-Type when the caller has one (the gateway, `run`), else
   * NULL; read by ts_tap_new only (see "Content type" below). */
  const char *content_type;
} ts_tap_config;

/* Content type. Where the reply came over HTTP its Content-Type says what it is, which
 * the first bytes cannot always tell. With format `auto` the media type (the part before
 * any `;`, compared without regard to case or surrounding whitespace) decides:
 *   application/vnd.amazon.eventstream  bedrock, AWS event stream framing;
 *   application/x-ndjson                ollama, newline-delimited JSON;
 *   text/event-stream                   SSE framing, detection among the SSE formats only;
 *   application/json                    JSON framing: one array whose elements are the
 *                                       events (Gemini), or one body (an error reply);
 *   text/html                           an HTML page: STREAM_ERROR TS_E_MS_NOT_STREAM at
 *                                       the end, saying so (with any format, not only auto);
 *   anything else, or none              decided by the first bytes, as without it.
 * (The first two come from the provider table's `media_type`, stream/provider.h.) The
 * format's own reader then reads what arrives; a body that does not fit its content
 * type is an error of that framing, never re-sniffed. An unknown-format error names the
 * content type. */


typedef struct ts_tap ts_tap;

/* Creates a tap and stores it in *out. Returns TS_E_OK; TS_E_INVAL for a bad config
 * (NULL out, cfg or cb; an unknown format; RAW without raw_tool; progress_max over
 * TS_TAP_PROGRESS_LIMIT; max_event_bytes too large for the SSE framer); TS_E_NOMEM when
 * memory runs out. On error *out is untouched and nothing is held. */
int ts_tap_new(ts_tap **out, const ts_tap_config *cfg, ts_tap_cb cb, void *user);
void ts_tap_free(ts_tap *t); /* NULL is a no-op */

/* What a Content-Type (`ct`, len bytes, need not be NUL-terminated) says about a reply,
 * by the rules above: TS_TAP_MEDIA_STREAM for a model stream (text/event-stream,
 * application/vnd.amazon.eventstream, application/x-ndjson), TS_TAP_MEDIA_JSON,
 * TS_TAP_MEDIA_HTML, else TS_TAP_MEDIA_OTHER (also for none). For a proxy deciding which
 * replies to tap. */
enum { TS_TAP_MEDIA_OTHER = 0, TS_TAP_MEDIA_STREAM, TS_TAP_MEDIA_JSON, TS_TAP_MEDIA_HTML };
int ts_tap_media(const char *ct, size_t len);

/* Sets the content type of a tap created without one, before its first byte (`run`
 * learns it from the reply's head, after the tap was made); the same rules as
 * ts_tap_config.content_type. `ct` need not be NUL-terminated and is not kept. Returns
 * TS_E_OK; TS_E_INVAL when bytes were already fed, a content type was already set, or
 * the tap reads `raw` input. */
int ts_tap_content_type(ts_tap *t, const char *ct, size_t len);

/* Feeds the next bytes of the stream. `buf` may be modified (JSON strings are decoded in
 * place). Returns TS_E_OK or TS_E_ABORTED; errors in the stream itself are events, not
 * return codes, and processing goes on where it can. */
int ts_tap_feed(ts_tap *t, char *buf, size_t len);

/* End of input: an unterminated SSE event is dropped; EOF before the provider's terminal
 * event is a STREAM_ERROR; calls still open get TOOL_CALL_ERROR. */
int ts_tap_finish(ts_tap *t);

/* Nonzero when the stream ended in error (a STREAM_ERROR was emitted). */
int ts_tap_failed(const ts_tap *t);

/* Bytes fed so far. */
uint64_t ts_tap_offset(const ts_tap *t);

/* For the tests (not an API): the size of the framer's buffer now (0: none allocated),
 * and in *grows (may be NULL) how many allocations it took. */
size_t ts__tap_buffer(const ts_tap *t, uint32_t *grows);

#endif /* TS_TAP_H */
