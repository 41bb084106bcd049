/*
 * model_stream.h: one normalized vocabulary for every provider's streaming format.
 *
 * Each provider streams a model turn as SSE events whose `data:` payloads are JSON
 * documents of its own shape. An adapter (one per provider, behind this one
 * interface) reads one SSE event at a time and reports what it means in a shared
 * vocabulary: text delta, call begins, argument fragment, call ends, turn ends, error.
 * Everything downstream (progress detection, thread events, the dispatcher) speaks
 * only this vocabulary.
 *
 * Formats
 *   openai-chat       Chat Completions chunks (`choices[].delta.tool_calls[]`), `[DONE]`.
 *   openai-responses  Responses API events (`response.output_item.added`,
 *                     `response.function_call_arguments.delta`, `response.completed`...).
 *   anthropic         Messages API events (`content_block_start` tool_use,
 *                     `input_json_delta`, `message_delta`, `message_stop`).
 *   gemini            `streamGenerateContent?alt=sse` chunks with whole `functionCall` parts.
 *   auto              decided by the first event that has a payload (see ts_ms_detect).
 *   (`raw`, the bare bytes of one call's arguments, needs no SSE and no adapter: the
 *   tap feeds those bytes to the argument tokenizer directly.)
 *
 * Call indexes
 *   Every call gets `index`: its position in the turn, 0, 1, 2 ... in the order calls
 *   first appear, whatever key the provider uses (Chat `tool_calls[].index`, falling
 *   back to `id` where an index repeats with a new id or is missing; Responses
 *   `item_id`; Anthropic content-block `index`; Gemini part order).
 *
 * Event order guaranteed to the callback, per call:
 *   CALL_BEGIN once, then zero or more CALL_ARGS, then CALL_END once (unless the stream
 *   ends in error first). A call's `id` and `name` are final at CALL_BEGIN.
 *   TURN_END at most once, after every CALL_END; every call still open when the
 *   provider ends the turn (Anthropic may omit content_block_stop) gets its CALL_END
 *   first.
 *
 * Ownership
 *   All views in ts_ms_event point into the `data` buffer of the current call to
 *   ts_ms_feed_event, or into the adapter's own fixed storage; they are valid only
 *   during the callback. `data` is mutable because string values (argument fragments,
 *   text) are decoded from JSON in place there.
 *
 * Limits (each with its own error, reported as an ERROR event and a return code):
 *   TS_MS_MAX_CALLS calls per turn, TS_MS_MAX_ID bytes per id or name, TS_MS_MAX_TOKENS
 *   JSON tokens per payload (jsmn works on a fixed token array in the adapter).
 */
#ifndef TS_MODEL_STREAM_H
#define TS_MODEL_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef enum {
  TS_MS_AUTO = 0,
  TS_MS_OPENAI_CHAT,
  TS_MS_OPENAI_RESPONSES,
  TS_MS_ANTHROPIC,
  TS_MS_GEMINI,
  TS_MS_RAW, /* not an SSE format; listed so that format names have one home */
} ts_ms_format;

typedef enum {
  TS_MS_TEXT_DELTA = 1, /* text: decoded assistant text */
  TS_MS_CALL_BEGIN,     /* index, id, name */
  TS_MS_CALL_ARGS,      /* index, text: the next fragment of the arguments' JSON text, decoded
                           from its JSON string (Gemini: the `args` object's JSON text whole) */
  TS_MS_CALL_END,       /* index: the provider ended the call */
  TS_MS_TURN_END,       /* stop_reason (may be empty), usage (raw JSON object text, may be empty) */
  TS_MS_ERROR,          /* code (ts_err), error: a decoded human-readable message;
                           terminal: nonzero when the provider ended the stream with it */
} ts_ms_kind;

typedef struct {
  const char *p;
  size_t len;
} ts_view;

typedef struct {
  uint8_t kind;     /* ts_ms_kind */
  uint8_t terminal; /* ERROR only */
  int32_t code;     /* ERROR only: a ts_err */
  uint32_t index;   /* CALL_* */
  ts_view id;       /* CALL_BEGIN: provider call id (Responses: call_id, not item_id) */
  ts_view name;     /* CALL_BEGIN: tool name */
  ts_view text;     /* TEXT_DELTA, CALL_ARGS */
  ts_view stop_reason; /* TURN_END */
  ts_view usage;       /* TURN_END */
  ts_view error;       /* ERROR */
} ts_ms_event;

/* Return 0 to go on; nonzero stops the adapter (sticky TS_E_ABORTED). */
typedef int (*ts_ms_cb)(void *user, const ts_ms_event *ev);

#define TS_MS_MAX_CALLS 256
#define TS_MS_MAX_ID 256
#define TS_MS_MAX_TOKENS 4096

/* The name of a format ("openai-chat", ...) and back. ts_ms_format_parse returns -1 for
 * an unknown name. */
const char *ts_ms_format_name(ts_ms_format f);
int ts_ms_format_parse(const char *name);

/* Guesses the format from one SSE event (its `event:` field and `data` payload);
 * returns TS_MS_AUTO when this event does not tell (a comment, `ping`, ...). */
ts_ms_format ts_ms_detect(const char *event, size_t event_len, const char *data, size_t data_len);

typedef struct ts_ms ts_ms; /* the adapter; opaque, allocated by ts_ms_new */

/* Creates an adapter for `format` (TS_MS_AUTO to detect). Returns NULL on out of
 * memory or for TS_MS_RAW. All memory is taken here; feeding never allocates. */
ts_ms *ts_ms_new(ts_ms_format format, ts_ms_cb cb, void *user);
void ts_ms_free(ts_ms *a); /* NULL is a no-op */

/* The format in use (still TS_MS_AUTO until detection succeeded). */
ts_ms_format ts_ms_format_of(const ts_ms *a);

/* One SSE event: its `event:` field (may be empty) and its joined `data:` payload,
 * which the adapter may modify in place. Reports what the event means through the
 * callback. Returns TS_E_OK, or a negative ts_err after reporting it as an ERROR event:
 * a payload that is not JSON, a limit exceeded, an error event from the provider.
 * A malformed payload is an error for that event only: the adapter goes on with the
 * next event. Provider errors that end the stream set `terminal`. */
int ts_ms_feed_event(ts_ms *a, const char *event, size_t event_len, char *data, size_t data_len);

/* End of input. Formats that end at EOF (Gemini) report their CALL_ENDs and TURN_END
 * here. For the others, EOF before the provider's terminal event reports an ERROR
 * (TS_E_MS_TRUNCATED, terminal) and returns it; open calls are NOT ended (their
 * arguments are incomplete as far as anyone knows). */
int ts_ms_finish(ts_ms *a);

/* Nonzero once the provider's terminal event was seen (or EOF for Gemini). */
int ts_ms_done(const ts_ms *a);

#endif /* TS_MODEL_STREAM_H */
