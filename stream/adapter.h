/*
 * adapter.h: one normalized vocabulary for every provider's streaming format.
 *
 * Each provider streams a model turn as SSE events whose `data:` payloads are JSON
 * documents of its own shape. An adapter (one per provider, behind this one
 * interface) reads one SSE event at a time and reports what it means in a shared
 * vocabulary: text delta, call begins, argument fragment, call ends, turn ends, error.
 * Everything downstream (progress detection, thread events, the dispatcher) speaks
 * only this vocabulary.
 *
 * Formats (one row each in the provider table, stream/provider.h; the reader of each
 * lives in stream/providers/<name>.c)
 *   openai-chat       Chat Completions chunks (`choices[].delta.tool_calls[]`), `[DONE]`.
 *   openai-responses  Responses API events (`response.output_item.added`,
 *                     `response.function_call_arguments.delta`, `response.completed`...).
 *   anthropic         Messages API events (`content_block_start` tool_use,
 *                     `input_json_delta`, `message_delta`, `message_stop`).
 *   gemini            `streamGenerateContent?alt=sse` chunks with whole `functionCall` parts.
 *   auto              decided by the first event that tells (see ts_adapter_detect).
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
 *   All views in ts_adapter_event point into the `data` buffer of the current call to
 *   ts_adapter_feed_event, or into the adapter's own storage (argument text it writes
 *   itself: Vertex's rebuilt arguments, Responses' wrapped free-form input, in pieces of
 *   at most 512 bytes; tool names it supplies); they are valid only during the callback.
 *   `data` is mutable because string values (argument fragments,
 *   text) are decoded from JSON in place there.
 *
 * Limits (each with its own error, reported as an ERROR event and a return code):
 *   TS_ADAPTER_MAX_CALLS calls per turn, TS_ADAPTER_MAX_ID bytes per id or name, TS_ADAPTER_MAX_TOKENS
 *   JSON tokens per payload (jsmn works on a fixed token array in the adapter),
 *   TS_ADAPTER_MAX_ID bytes of stop reason and TS_ADAPTER_MAX_USAGE bytes of usage text (both
 *   are kept until TURN_END: TS_E_MS_FIELD_TOO_LONG).
 *   A call refused for a limit gets no CALL_BEGIN, and what the provider sends for it
 *   afterwards is dropped quietly: an id or name too long is one ERROR per call;
 *   TS_E_MS_TOO_MANY_CALLS is reported once per turn and every call past the limit
 *   is dropped.
 *   All of these errors are for that event only: the adapter goes on.
 *
 * Decisions where the providers leave room (per format)
 *   - Text: TEXT_DELTA only for non-empty text. Empty argument fragments (Anthropic's
 *     first `partial_json: ""`, Chat's `arguments: ""`) are not reported either.
 *   - Strings are decoded in place before they are reported (ids, names, text,
 *     argument fragments, provider error messages); keys and `type` values are
 *     compared as raw bytes.
 *   - openai-chat: only choice 0 is read (n > 1 streams would mix calls). Calls are
 *     keyed by `tool_calls[].index`; an entry whose index is already taken by a call
 *     with a different, non-empty id begins a new call; without an index an entry is
 *     matched by `id`, and one with neither continues the call that most recently
 *     began or received arguments, unless it carries a non-empty name and that call
 *     already has arguments: then it begins a new call (Gemini's OpenAI endpoint sends
 *     whole calls with `id: ""` and no index). An entry that matches a call already ended begins
 *     a new call. `id` sent again replaces the id used for matching; CALL_BEGIN goes
 *     out once, with the id and name of the call's first entry. An `arguments` value
 *     that is an object (some compatible servers) is reported as its JSON text. The
 *     legacy `delta.function_call` is read as a tool call without index or id.
 *     `finish_reason` ends every open call and is the stop reason; `usage` (any
 *     chunk; Groq's `x_groq.usage` when a chunk has no `usage`) is kept; `[DONE]` ends the turn. EOF after a `finish_reason` but
 *     without `[DONE]` also ends the turn normally (TURN_END at ts_adapter_finish).
 *   - openai-responses: the `type` member names the event (the `event:` field when
 *     it is missing); `response.created|in_progress|queued` are skipped unparsed
 *     when the `event:` field names them (they echo the whole request). An
 *     `arguments` text carried by `output_item.added`, or by the `.done` events of a
 *     call that got no delta at all, is reported as that call's CALL_ARGS.
 *     Deltas for an unknown item_id are dropped; an `output_item.done` whose item is a
 *     call with an id no call has begins that call there, whole (gateways that send
 *     calls only so). The `error` event is terminal.
 *     `custom_tool_call`, `local_shell_call`, `shell_call` and `apply_patch_call` items are
 *     calls too (see openai_responses.c and docs/events.md for their arguments).
 *   - anthropic: `message_delta.usage` is the usage (`message_start`'s is kept in
 *     case no message_delta carries one). A non-empty `input` object in
 *     content_block_start is the call's first CALL_ARGS; text in a `text` block's
 *     start is a TEXT_DELTA. Only `tool_use` blocks are calls (server tools are not).
 *   - gemini: candidate 0 only; parts marked `"thought": true` are skipped; a
 *     functionCall without `args` reports no CALL_ARGS (tools without parameters).
 *     `promptFeedback.blockReason` is the stop reason when no finishReason came.
 *     Vertex `partialArgs` / `willContinue` streaming is rebuilt into argument
 *     text in order (gemini.c says how); EOF while such a call streams is truncation.
 *     A functionCall with neither name nor args names no call and is skipped. While
 *     a streamed call is open, a part without `args` that repeats its id (or, without
 *     an id, brings `partialArgs` with its name) is its next part, not a new call.
 *   - Any format: a payload whose top-level `error` member is set is a terminal ERROR
 *     (TS_E_MS_PROVIDER) whose message is `error.message` (or the error's JSON text
 *     when it has none); `event: error` with no data is one too.
 *   - Events after the terminal event (or after ts_adapter_finish) are ignored: nothing is
 *     reported and feed returns TS_E_OK. Empty payloads are ignored.
 */
#ifndef TS_ADAPTER_H
#define TS_ADAPTER_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/view.h"
#include "stream/json_scan.h"
#include "stream/json_shape.h"
#include "stream/provider.h"

typedef enum {
  TS_ADAPTER_TEXT_DELTA = 1, /* text: decoded assistant text */
  TS_ADAPTER_CALL_BEGIN,     /* index, id, name */
  TS_ADAPTER_CALL_ARGS,      /* index, text: the next fragment of the arguments' JSON text, decoded
                           from its JSON string (Gemini: the `args` object's JSON text whole) */
  TS_ADAPTER_CALL_END,       /* index: the provider ended the call */
  TS_ADAPTER_TURN_END,       /* stop_reason (may be empty), usage (raw JSON object text, may be empty) */
  TS_ADAPTER_ERROR,          /* code (ts_err), error: a decoded human-readable message;
                           terminal: nonzero when the provider ended the stream with it */
} ts_adapter_kind;

typedef struct {
  uint8_t kind;     /* ts_adapter_kind */
  uint8_t terminal; /* ERROR only */
  int32_t code;     /* ERROR only: a ts_err */
  uint32_t index;   /* CALL_* */
  ts_view id;       /* CALL_BEGIN: provider call id (Responses: call_id, not item_id) */
  ts_view name;     /* CALL_BEGIN: tool name */
  ts_view text;     /* TEXT_DELTA, CALL_ARGS */
  ts_view stop_reason; /* TURN_END */
  ts_view usage;       /* TURN_END */
  ts_view error;       /* ERROR */
} ts_adapter_event;

/* Return 0 to go on; nonzero stops the adapter (sticky TS_E_ABORTED). */
typedef int (*ts_adapter_cb)(void *user, const ts_adapter_event *ev);

#define TS_ADAPTER_MAX_CALLS 256
#define TS_ADAPTER_MAX_ID 256
#define TS_ADAPTER_MAX_TOKENS 16384
/* Usage objects are a few hundred bytes (Gemini's, with per-modality details, the
 * largest); 4 KiB leaves room without letting a hostile stream grow anything. */
#define TS_ADAPTER_MAX_USAGE 4096
/* The most allocations an adapter makes while it is fed (after ts_adapter_new), whatever
 * the stream: the call table at its first call and at each doubling up to
 * TS_ADAPTER_MAX_CALLS (7), the token array at the first payload read with jsmn (1), the
 * usage text at the first usage and at each doubling (7). Never one per event. */
#define TS_ADAPTER_FEED_ALLOCS 15

/* Guesses the format from one SSE event (its `event:` field and `data` payload);
 * returns TS_FORMAT_AUTO when this event does not tell (a comment, `ping`, an error, ...).
 * The provider table decides (ts_provider_detect_name, then, on the parsed payload,
 * ts_provider_detect_doc): an `event:` name starting with `response.` is
 * openai-responses; `message_*` / `content_block_*` names are anthropic; a payload
 * `[DONE]` is openai-chat; otherwise the payload's top-level members decide: `type`
 * (`response.*` or an Anthropic event type), `candidates` / `usageMetadata` /
 * `promptFeedback` (gemini), `choices` or `"object": "chat.completion.chunk"`
 * (openai-chat). This standalone function allocates a
 * token array for the parse (TS_FORMAT_AUTO if that fails); an adapter created with
 * TS_FORMAT_AUTO detects on the parse it makes anyway, without allocating. */
ts_format ts_adapter_detect(const char *event, size_t event_len, const char *data, size_t data_len);

typedef struct ts_adapter ts_adapter; /* the adapter; opaque, allocated by ts_adapter_new */

/* Creates an adapter for `format` (TS_FORMAT_AUTO to detect) and stores it in *out.
 * Returns TS_E_OK; TS_E_INVAL for TS_FORMAT_RAW, an unknown format, a NULL callback or
 * a NULL `out`; TS_E_NOMEM when memory runs out. On error *out is left untouched and
 * nothing is held. Only the adapter itself is allocated here (about 3.5 KiB); what a
 * turn needs beyond it comes with its first use and is kept for the rest of the turn (the
 * call table, sized to the calls; jsmn's token array, 320 KiB, only for a payload the
 * provider does not read in one pass; the usage text, sized to it): at most
 * TS_ADAPTER_FEED_ALLOCS allocations while feeding, none per event once grown. An
 * allocation that fails is a TS_E_NOMEM error of that event (a call that cannot be
 * tracked is not reported). One adapter reads one turn. */
int ts_adapter_new(ts_adapter **out, ts_format format, ts_adapter_cb cb, void *user);
void ts_adapter_free(ts_adapter *a); /* NULL is a no-op */

/* For tests and benchmarks: `on` nonzero reads every payload the general way (a jsmn
 * token array and lookups by name) even where the provider has a one-pass reader
 * (stream/provider.h, fast_event); both report the same events. Default off. */
void ts_adapter_set_general(ts_adapter *a, int on);

/* For tests and benchmarks: `on` zero turns off the one-pass readers' shape memo
 * (stream/json_shape.h: a delta payload that repeats the last one's bytes apart from its
 * argument fragment and unread values is read by comparison instead of a scan); both
 * report the same events. Default on. ts_adapter_memo_hits: how many payloads so far were
 * read from the memo. */
void ts_adapter_set_memo(ts_adapter *a, int on);
uint64_t ts_adapter_memo_hits(const ts_adapter *a);
/* The format in use (still TS_FORMAT_AUTO until detection succeeded). While undetected,
 * events that do not tell are ignored, except that a payload with a top-level `error`
 * (or `"type":"error"`) is reported as the provider's terminal ERROR. */
ts_format ts_adapter_format_of(const ts_adapter *a);

/* One SSE event: its `event:` field (may be empty) and its joined `data:` payload,
 * which the adapter may modify in place. Reports what the event means through the
 * callback. Returns TS_E_OK, or a negative ts_err after reporting it as an ERROR event:
 * a payload that is not JSON, a limit exceeded, an error event from the provider.
 * A malformed payload is an error for that event only: the adapter goes on with the
 * next event. Provider errors that end the stream set `terminal`. When one event has
 * several errors, each is reported and the first is returned. Once the callback has
 * stopped the adapter, every call returns TS_E_ABORTED and reports nothing. `event`
 * may be NULL when event_len is 0. */
int ts_adapter_feed_event(ts_adapter *a, const char *event, size_t event_len, char *data, size_t data_len);

/* The provider's error, told by the framing rather than by a payload (an AWS event stream
 * message of type `error`: its `:error-message`, msg may be NULL when len is 0): reported
 * as the terminal ERROR TS_E_MS_PROVIDER with that text (the table's message when empty),
 * as a payload's `error` would be. Returns TS_E_MS_PROVIDER; after the terminal event
 * TS_E_OK and nothing reported; once stopped, TS_E_ABORTED. */
int ts_adapter_feed_error(ts_adapter *a, const char *msg, size_t len);

/* How many payload bytes of the next event, named event[0..event_len), the adapter can
 * use (SIZE_MAX: all; sse.h's keep callback). Less when the provider repeats, under that
 * name, what it already sent: Responses' `.done` events repeat a call's whole arguments
 * (0 once every open call is a function call that got its arguments), its terminal event
 * the whole output (1 MiB kept: enough for the status and usage of any ordinary turn);
 * `response.created` and friends echo the request (0). */
size_t ts_adapter_keep(ts_adapter *a, const char *event, size_t event_len);

/* CALL_ARGS, the one event a big call sends thousands of, straight to `fn` (with the
 * callback's `user`, the call's index and the fragment) instead of as a ts_adapter_event
 * through the callback; every other event still goes to the callback. The order, the
 * fragments and the stop rule (nonzero stops the adapter) are the callback's. NULL (the
 * default) sends CALL_ARGS to the callback too. Set it before the first event. */
typedef int (*ts_adapter_args_fn)(void *user, uint32_t index, ts_view text);
void ts_adapter_set_args_fn(ts_adapter *a, ts_adapter_args_fn fn);

/* The argument fragment's short way, for the event nearly every event of a big call is
 * (an Anthropic `input_json_delta`): the caller takes the fragment and feeds it itself,
 * without ts_adapter_feed_event, the provider's reader, the fragment's report and the
 * args function in between.
 *
 * ts_adapter_fragments: nonzero when the format is known and its reader's shape memo
 * (stream/json_shape.h) holds, after its first full reading of a delta, what
 * ts_adapter_feed_fragment reads (provider.h, memo_fragments; Anthropic); the answer
 * does not change for the rest of the turn unless ts_adapter_set_general or
 * ts_adapter_set_memo is called.
 *
 * ts_adapter_feed_fragment: offered the event that ts_adapter_feed_event would be given
 * (`data` is only read), returns 1 when it is, by the memo, exactly an argument fragment
 * for an open call and nothing else, and the fragment is not empty: out->index is the
 * call's index and out->text the fragment decoded (a view into `data` or into
 * out->value's buffer, valid while both live). The adapter has then done what it does for
 * that event (the memo hit counted, the call's state), except the one thing left to the
 * caller: give out->text to call out->index as the args function would have been given
 * it, and, when that asks to stop, call ts_adapter_abort. Returns 0, having done and
 * changed nothing, for anything else (another event, a miss, a fragment that is empty,
 * for a call ended or unknown, or with an escape the match leaves to the general way, an
 * adapter stopped, done or finished): feed the event to ts_adapter_feed_event, which
 * reports it. Either way every event and every count comes out as ts_adapter_feed_event
 * alone would make them. */
typedef struct ts_adapter_fragment {
  uint32_t index;
  ts_view text;
  ts_json_shape_value value; /* the match's own, on the caller's stack */
} ts_adapter_fragment;
int ts_adapter_fragments(const ts_adapter *a);
int ts_adapter_feed_fragment(ts_adapter *a, const char *event, size_t event_len, const char *data,
                             size_t data_len, ts_adapter_fragment *out);
/* ts_adapter_fragment_reader: the function that ts_adapter_feed_fragment calls for `a`,
 * for a caller that offers every event of a stream and would spare the call in between
 * (the tap, once ts_adapter_fragments says yes): called with `a`, it answers as
 * ts_adapter_feed_fragment does, to the byte, aborted, done, finished, general and no-memo
 * adapters included. Never NULL. It stays right for `a` until ts__adapter_set_simd is
 * called (it holds the match's choice of AVX2): ask again after that. */
typedef int (*ts_adapter_fragment_fn)(ts_adapter *a, const char *event, size_t event_len, const char *data,
                                      size_t data_len, ts_adapter_fragment *out);
ts_adapter_fragment_fn ts_adapter_fragment_reader(const ts_adapter *a);
/* For the tests and the fuzzer (not an API): with on == 0 ts_adapter_feed_fragment's match
 * compares without AVX2 from now on, even where the CPU has it; with on != 0 it goes back
 * to the CPU's choice (ts_adapter_new's). Both give the same answers. Returns 1 when AVX2
 * is now in use, else 0. */
int ts__adapter_set_simd(ts_adapter *a, int on);
/* The caller stopped (as the callback or the args function returning nonzero would):
 * every call from now on returns TS_E_ABORTED and reports nothing. */
void ts_adapter_abort(ts_adapter *a);

/* Zero when ts_adapter_keep can only answer SIZE_MAX from now on: the format is known
 * and its provider keeps every event whole (or the adapter reads no more). A framer may
 * then stop asking, which spares a call per event. */
int ts_adapter_keeps(const ts_adapter *a);

/* Bit n (n < 64) set when ts_adapter_keep answers SIZE_MAX for every name of n bytes from
 * now on: the format is known and its provider promises it (Responses: every length but
 * those of the request echoes, the `.done` events and the terminal events; the argument
 * delta's is 38). 0 while the format is undecided. A framer asked the keep question per
 * event (the tap's sse_keep) answers those names itself, sparing the adapter's entry
 * point and the provider's for nearly every event. */
uint64_t ts_adapter_keep_whole_lengths(const ts_adapter *a);

/* An event whose payload was cut short as ts_adapter_keep allowed: handled by its name
 * alone (a terminal event ends the turn, without usage) or ignored. Returns as
 * ts_adapter_feed_event. */
int ts_adapter_feed_cut(ts_adapter *a, const char *event, size_t event_len);

/* End of input. Formats that end at EOF (Gemini) report their CALL_ENDs and TURN_END
 * here. For the others, EOF before the provider's terminal event reports an ERROR
 * (TS_E_MS_TRUNCATED, terminal) and returns it; open calls are NOT ended (their
 * arguments are incomplete as far as anyone knows). Exception: an openai-chat stream
 * that sent its `finish_reason` (every call already ended) but no `[DONE]` ends
 * normally with TURN_END. A stream whose format was never detected reports
 * TS_E_MS_UNKNOWN_FORMAT (terminal). Nothing is reported when the terminal event was
 * already seen. Calling finish again reports nothing and returns the first result. */
int ts_adapter_finish(ts_adapter *a);

/* End of input in the middle of the framing around the events (a JSON value or array
 * cut short, json_seq.h): as ts_adapter_finish, except that no format ends normally
 * here, not even those that end at EOF: unless the terminal event was seen, the stream
 * was truncated (TS_E_MS_TRUNCATED, or TS_E_MS_UNKNOWN_FORMAT while undetected). */
int ts_adapter_cut(ts_adapter *a);

/* Nonzero once the provider's terminal event was seen (or EOF for Gemini, or EOF after
 * Chat's finish_reason). A truncated stream is never done. */
int ts_adapter_done(const ts_adapter *a);

/* What the caller knows about an `auto` adapter's stream before its first event (the
 * tap, from the reply's HTTP Content-Type): `format` other than TS_FORMAT_AUTO fixes the
 * format (the media type belongs to one provider, provider.h `media_type`); `sse_only`
 * limits detection to the formats that stream SSE (rows without a media type), so a
 * text/event-stream reply is never taken for Ollama's or Bedrock's. Returns TS_E_OK, or
 * TS_E_INVAL (and changes nothing) when the adapter was not created with
 * TS_FORMAT_AUTO, has already read an event, or `format` is not a provider's. */
int ts_adapter_narrow(ts_adapter *a, ts_format format, int sse_only);

/* ---- Internal: for the adapter's own modules only ---------------------------------
 * stream/adapter.c owns the adapter: the call table, the stop reason and usage
 * storage, the callback, the JSON token array. The provider modules (stream/providers/
 * *.c, reached through their ts_provider row's `event` and friends) read one parsed
 * payload and speak through these functions. Not part of the API: define TS_ADAPTER_INTERNAL to see them.
 *
 * Call slots: a slot is a call's row in the table, found by the provider's key (an
 * integer: Chat's index, Anthropic's block index; or a string: Responses' item_id,
 * Chat's id). A slot is open, ended, or refused (a limit was hit when it began: it
 * exists so that later fragments for it are recognised and dropped, but it never got
 * CALL_BEGIN). The reporting functions do nothing once the callback stopped the
 * adapter, so providers need not check after each one. */
#ifdef TS_ADAPTER_INTERNAL
struct ts_jv;

/* Reports a ts_err of ours or the provider's (message {p, len}; NULL: the table's
 * message). The first error of an event becomes feed's return value. terminal: the
 * stream is over (provider errors). */
void ts__adapter_error(ts_adapter *a, int code, const char *msg, size_t len, int terminal);
/* A terminal TS_E_MS_PROVIDER error from token `err`: a string is the message; an
 * object's `message` member is; otherwise the token's JSON text; `fallback` when
 * err is -1. */
void ts__adapter_provider_error(ts_adapter *a, struct ts_jv *jv, int err, const char *fallback);
/* Decodes string token i in place. Returns 1 with *out set, 0 when i is absent or
 * null (*out empty), -1 after reporting an error (wrong type: TS_E_MS_BAD_SHAPE, or
 * a bad escape). */
int ts__adapter_string(ts_adapter *a, struct ts_jv *jv, int i, ts_view *out);

/* The same for a string found by the one-pass scanner (stream/json_scan.h): `raw` its
 * undecoded body in the adapter's payload, `escaped` whether it holds a backslash.
 * Decodes in place; returns 1 with *out set, or -1 after reporting a bad escape. */
int ts__adapter_decode(ts_adapter *a, ts_view raw, int escaped, ts_view *out);

/* The same for a collected string (json_scan.h, ts_json_scan_str), as ts__adapter_string
 * answers: 0 when absent or null (*out empty), 1 with *out set, -1 after reporting a bad
 * escape. */
static inline int ts__adapter_decode_str(ts_adapter *a, const ts_json_scan_str *f, ts_view *out) {
  out->p = "";
  out->len = 0;
  if (!f->raw.p) return 0;
  return ts__adapter_decode(a, f->raw, f->escaped, out);
}

/* In a one-pass reader (provider.h, fast_event): a member read at most once. The general
 * way reads the first of duplicate keys, so a reader that meets a key it uses a second
 * time hands the payload back (returns 0) rather than guess; `seen` is its bit set. */
#define TS__SCAN_ONCE(seen, bit)  \
  do {                            \
    if ((seen) & (bit)) return 0; \
    (seen) |= (bit);              \
  } while (0)

void ts__adapter_text(ts_adapter *a, ts_view text); /* TEXT_DELTA unless empty */
/* A collected argument fragment (raw, escaped as ts__adapter_decode takes them; raw.p
 * NULL: none) for the call with integer key nkey (has_key 0: no key, nothing reported):
 * decoded in place, then CALL_ARGS. Anthropic's and Bedrock's one-pass readers. */
void ts__adapter_nkey_fragment(ts_adapter *a, int has_key, int64_t nkey, ts_view raw, int escaped);

/* Begins a call: a new slot with integer key nkey (-1: none) and string key `key`
 * (may be empty), and CALL_BEGIN with id and name (already decoded). Returns the
 * slot, or -1 when the call was refused: TS_E_MS_ID_TOO_LONG leaves a refused slot
 * that absorbs what follows; a full table (TS_E_MS_TOO_MANY_CALLS, reported once per
 * turn) leaves no slot, and no "latest call" either. */
int ts__adapter_call_begin(ts_adapter *a, int64_t nkey, ts_view key, ts_view id, ts_view name);
/* The most recent slot with this integer / string key, or -1. */
int ts__adapter_call_by_nkey(const ts_adapter *a, int64_t nkey);
int ts__adapter_call_by_key(const ts_adapter *a, ts_view key);
/* The slot that most recently began or received arguments, or -1. */
int ts__adapter_call_last(const ts_adapter *a);
int ts__adapter_call_ended(const ts_adapter *a, int slot);  /* CALL_END was reported */
/* Nonzero when every open slot has received arguments and has none of the tag bits
 * `unknown` set (true when no slot is open). */
int ts__adapter_calls_known(const ts_adapter *a, uint8_t unknown);
/* A byte per slot for the provider's own notes about the call (0 when it begins). */
uint8_t *ts__adapter_call_tag(ts_adapter *a, int slot);
int ts__adapter_call_has_args(const ts_adapter *a, int slot); /* a CALL_ARGS was reported */
ts_view ts__adapter_call_key(const ts_adapter *a, int slot);
/* Replaces the string key (Chat: an id sent again); TS_E_MS_ID_TOO_LONG keeps the old. */
void ts__adapter_call_set_key(ts_adapter *a, int slot, ts_view key);
/* CALL_ARGS for an open slot (nothing for an empty fragment, a refused or ended slot). */
void ts__adapter_call_args(ts_adapter *a, int slot, ts_view text);
/* CALL_END once for an open slot; ts__adapter_end_all ends every open slot in order. */
void ts__adapter_call_end(ts_adapter *a, int slot);
void ts__adapter_end_all(ts_adapter *a);

/* Keep the stop reason / usage text until TURN_END (copied: TS_E_MS_FIELD_TOO_LONG). */
void ts__adapter_set_stop(ts_adapter *a, ts_view stop);
void ts__adapter_set_usage(ts_adapter *a, ts_view usage);
int ts__adapter_has_stop(const ts_adapter *a);
/* The usage text kept so far (empty when none). */
ts_view ts__adapter_usage(const ts_adapter *a);
/* Ends every open call, then TURN_END; the adapter is done. */
void ts__adapter_turn_end(ts_adapter *a);

/* The event's type: the payload's top-level "type" string when it has one (raw, its
 * escapes not decoded: type names have none), else the SSE `event:` name. Used by the
 * formats that name their events both ways (Anthropic, Responses). */
ts_view ts__adapter_event_type(struct ts_jv *jv, ts_view event);
/* Per-turn flag bits a provider may keep in the adapter (Gemini: "unsupported reported"). */
unsigned *ts__adapter_flags(ts_adapter *a);
/* A zeroed block of TS_ADAPTER_SCRATCH bytes, the provider's own per-turn state (Vertex:
 * the containers of the arguments it is rebuilding, after its shape memo). */
#define TS_ADAPTER_SCRATCH 3072
void *ts__adapter_scratch(ts_adapter *a);
/* The shape memo of the format's one-pass reader (json_shape.h), kept at the start of
 * the scratch block (a format that uses one keeps its other scratch state after it, as
 * Vertex does; zeroed: empty), or NULL
 * when ts_adapter_set_memo turned it off. ts__adapter_memo_hit counts a payload read
 * from it. */
struct ts_json_shape *ts__adapter_memo(ts_adapter *a);
void ts__adapter_memo_hit(ts_adapter *a);
/* For readers whose simple kind is one argument fragment of the call with an integer key
 * (Anthropic, Bedrock). memo_fragment: 1 when the payload matched the memo and its
 * fragment was reported as ts__adapter_nkey_fragment would; 0 else (nothing reported).
 * memo_keep_fragment: after a full reading of that kind (raw.p NULL: not that kind),
 * before anything is decoded in place: keeps the payload, or empties the memo. */
int ts__adapter_memo_fragment(ts_adapter *a, const char *text, size_t len, ts_view name);
/* A memo hit (counted here: no ts__adapter_memo_hit for it) whose reading is CALL_ARGS for
 * slot (nothing for -1) with the fragment (json_shape.h, ts_json_shape_match_value): its value as the match decoded it, or, when that was left
 * to the caller, the used string decoded in place first (reporting a bad escape, and then
 * nothing else). */
/* The slot of memo m's call for a memo hit: ts__adapter_call_by_key(a, m->key) (by_key)
 * or ts__adapter_call_by_nkey(a, m->nkey), remembered in the memo from one hit to the
 * next while no slot is added and no key replaced (ts_json_shape_keep forgets it). */
int ts__adapter_memo_slot(ts_adapter *a, struct ts_json_shape *m, int by_key);
/* For a reader whose simple kinds are a text delta (memo kind `text_kind`) and an
 * argument fragment for the call with the string key memo->key (Responses): when the
 * payload matches the memo, its reading is reported (TEXT_DELTA, or CALL_ARGS as
 * ts__adapter_call_args_value reports it, to ts__adapter_memo_slot(a, memo, 1)) and 1
 * returned; else nothing is reported and the answer is miss(a, text, len, name)'s, the
 * reader's own path, called last (so that the reader's entry is one jump, no frame of its
 * own, for the event nearly every event is). */
int ts__adapter_memo_key_fragment(ts_adapter *a, char *text, size_t len, ts_view name, int text_kind,
                                  int (*miss)(ts_adapter *, char *, size_t, ts_view));
struct ts_json_shape_value;
void ts__adapter_call_args_value(ts_adapter *a, int slot, const struct ts_json_shape_value *v);
struct ts_json_shape_notes;
void ts__adapter_memo_keep_fragment(ts_adapter *a, const char *text, size_t len, ts_view name,
                                    const struct ts_json_shape_notes *notes, int has_key, int64_t nkey, ts_view raw);
/* CALL_ARGS with `text` escaped as the inside of a JSON string (for providers that
 * stream argument values, or free-form input, rather than argument JSON text); sent in
 * pieces through a small buffer (a run with nothing to escape as a view of `text`),
 * nothing allocated. */
void ts__adapter_call_args_escaped(ts_adapter *a, int slot, ts_view text);
#endif /* TS_ADAPTER_INTERNAL */

#endif /* TS_ADAPTER_H */
