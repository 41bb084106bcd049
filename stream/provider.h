/*
 * provider.h: one table of what toolstream knows about each model provider's wire format.
 *
 * Everything that differs between providers lives in one description per provider
 * (a `ts_provider`), defined in one file of stream/providers/ and listed once in
 * TS_PROVIDER_TABLE below. A description says:
 *
 *   - how its stream is recognised: the SSE event names and payload shapes that only it
 *     sends (auto detection, see ts_provider_detect);
 *   - how its stream is read: the adapter's reader for one parsed payload (adapter.h
 *     owns the call table, the provider only reads its own shape);
 *   - how a request is written: the body from a neutral message list (ts_request), the
 *     path appended to a base URL, the environment variable that holds the key and the
 *     header that carries it, fixed extra headers;
 *   - what a proxy needs: the request paths whose replies are in this format, and where
 *     a request body declares its tools' argument schemas.
 *
 * Adding a provider is one new file in stream/providers/ (its reader, its request
 * writer if it has one, and its `const ts_provider ts_provider_<name>`) plus one row
 * in TS_PROVIDER_TABLE; docs/providers.md walks through it. Nothing else names
 * providers: the adapter, the tap, `run`, and the gateway all ask this table.
 *
 * Everything here is pure: no I/O, no environment, no sockets. Callers (cli/run.c, the
 * gateway) read the environment variable, send the headers and open the connection.
 */
#ifndef TS_PROVIDER_H
#define TS_PROVIDER_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/strbuf.h"
#include "base/view.h"

/* X(ENUM, symbol): the format TS_FORMAT_<ENUM> is described by `ts_provider_<symbol>`,
 * defined in stream/providers/<symbol>.c. Auto detection asks the rows in this order. */
#define TS_PROVIDER_TABLE(X)          \
  X(OPENAI_CHAT, openai_chat)         \
  X(OPENAI_RESPONSES, openai_responses) \
  X(ANTHROPIC, anthropic)             \
  X(GEMINI, gemini)                   \
  X(OLLAMA, ollama)                   \
  X(COHERE, cohere)                   \
  X(BEDROCK, bedrock)

/* A stream format: one per provider row, plus `auto` (detect) and `raw` (the bare bytes of
 * one call's arguments: no framing and no adapter; the tap feeds the tokenizer directly). */
typedef enum {
  TS_FORMAT_AUTO = 0,
#define TS_X(e, s) TS_FORMAT_##e,
  TS_PROVIDER_TABLE(TS_X)
#undef TS_X
  TS_FORMAT_RAW,
} ts_format;

#define TS_FORMAT_COUNT (TS_FORMAT_RAW + 1)

/* The name of a format ("openai-chat", ..., "auto", "raw"; "unknown" out of range) and
 * back: ts_format_parse returns -1 for a name that is none of them. */
const char *ts_format_name(ts_format f);
int ts_format_parse(const char *name);

/* ---- the neutral request --------------------------------------------------------------
 * A conversation as a provider-independent list, from which each provider writes its
 * own request body. All views are borrowed from the caller for the call only. */
typedef enum { TS_REQ_SYSTEM = 1, TS_REQ_USER, TS_REQ_ASSISTANT, TS_REQ_TOOL } ts_req_role;

typedef struct {
  ts_view id;        /* the call id the tool result quotes */
  ts_view name;      /* the tool's name */
  ts_view arguments; /* the arguments as JSON object text ("{}" when there were none) */
} ts_req_call;

typedef struct {
  int role;                 /* ts_req_role */
  ts_view text;             /* SYSTEM, USER, ASSISTANT: the text (may be empty);
                               TOOL: the result (the tool's JSON, or the error message) */
  const ts_req_call *calls; /* ASSISTANT: its tool calls, each followed (in the list) by
                               its result messages in the same order */
  size_t ncalls;
  ts_view call_id;          /* TOOL: the call this answers */
  int is_error;             /* TOOL: the result is an error message */
} ts_req_message;

typedef struct {
  ts_view name, description;
  ts_view schema; /* the arguments' JSON Schema as JSON text */
} ts_req_tool;

typedef struct {
  const char *model;
  unsigned max_tokens; /* 0: the provider's default where it needs one */
  const ts_req_message *messages;
  size_t nmessages;
  const ts_req_tool *tools;
  size_t ntools;
  /* How the model may use the tools (a prompt's toolChoice / parallelToolCalls,
   * agent/compose.h), written by the providers that have the setting, with tools only:
   * Chat Completions and Responses (tool_choice, parallel_tool_calls), Anthropic
   * (tool_choice.type auto|any|none, disable_parallel_tool_use), Gemini (toolConfig's
   * mode AUTO|ANY|NONE); the others keep their defaults. NULL: the provider's default;
   * "auto", "none", "required". parallel_tool_calls: -1 the provider's default, 0 or 1. */
  const char *tool_choice;
  int parallel_tool_calls;
} ts_request;

/* ---- where a request body declares its tools' schemas -------------------------------
 * The tools are the entries of an array of the request body: `tools` at the top, or the
 * provider's `tools_array` (a dotted member path from the top: Bedrock's
 * "toolConfig.tools"). An entry matches a location when it has the member `list` (an array of declarations,
 * each read as below), or else the object member `holder` (the declaration), or else one
 * of the `schema` members (the entry is the declaration). The declaration's `name`
 * member names the tool; the first `schema` member present is its argument schema (a
 * dotted path too: Bedrock's "inputSchema.json"). */
typedef struct {
  const char *list;      /* NULL: not a list */
  const char *holder;    /* NULL: the entry (or list element) itself */
  const char *schema[2]; /* the second may be NULL */
} ts_schema_loc;

typedef struct {
  const char *name, *value;
} ts_provider_header;

struct ts_adapter;
struct ts_jv;

typedef struct ts_provider {
  ts_format format;
  const char *name;  /* the --format name */
  const char *alias; /* another accepted name (`run --provider openai`), or NULL */

  /* Recognising the stream (auto). detect_name: nonzero when an SSE event name or a
   * payload's `type` string is one only this provider sends. detect_doc: nonzero when the
   * parsed payload's top-level object (token `root`) has this provider's shape. Either
   * may be NULL. `sentinel`: a payload that is not JSON but ends this provider's turn
   * (Chat's `[DONE]`), or NULL. */
  int (*detect_name)(ts_view name);
  int (*detect_doc)(const struct ts_jv *jv, int root);
  const char *sentinel;

  /* Reading it (adapter.c calls these; see the TS_ADAPTER_INTERNAL part of adapter.h).
   * event: one parsed payload. on_sentinel: the sentinel payload arrived. skip: nonzero
   * for events to ignore unparsed (by SSE name), may be NULL. oversized: an event whose
   * payload outgrew the token array; return nonzero when handled (by its name alone),
   * may be NULL. */
  void (*event)(struct ts_adapter *a, struct ts_jv *jv, ts_view name);
  /* fast_event (may be NULL): reads one payload (`len` bytes of `text`, writable: strings
   * are decoded in place) in one pass (stream/json_scan.h) when it has the provider's
   * regular shape, reporting exactly what `event` would; returns 1 then. Returns 0, having
   * reported nothing and changed nothing, for anything else: the payload then goes to
   * `event` through the token array. A row with `skip` as well: fast_event is asked
   * first, and must itself return 1, reporting nothing, for an event that skip would
   * skip (so that the common event pays no skip question of its own). */
  int (*fast_event)(struct ts_adapter *a, char *text, size_t len, ts_view name);
  /* memo_fragments: fast_event starts with ts__adapter_memo_fragment(a, text, len, name),
   * whose memo only its reader fills (ts__adapter_memo_keep_fragment): a memo hit is the
   * whole reading of the payload, and ts_adapter_feed_fragment may read it instead
   * (Anthropic). */
  unsigned memo_fragments : 1;
  void (*on_sentinel)(struct ts_adapter *a);
  int (*skip)(ts_view name);
  int (*oversized)(struct ts_adapter *a, ts_view name);
  /* How the turn ends. ends_at_eof: the provider has no terminal event, EOF ends the
   * turn normally. eof_after_stop: EOF after a stop reason ends the turn normally.
   * named_errors: an empty-data SSE event named `error` is the provider's error. */
  unsigned ends_at_eof : 1, eof_after_stop : 1, named_errors : 1;
  /* For formats that end at EOF: nonzero when EOF now cuts something the provider began
   * (Vertex: a call whose arguments are still streaming), so the stream was truncated.
   * May be NULL. */
  int (*unfinished)(struct ts_adapter *a);

  /* Writing a request. request: appends the streaming request body to `out` (returns
   * TS_E_OK or out->err); NULL when `run` cannot talk to this provider. url_suffix: the
   * path a base URL gets (not added when the URL already ends with it); "{model}" in it
   * stands for the model name. host_hint: a base URL containing it selects this
   * provider by default, or NULL. key_env: the environment variable holding the API key.
   * auth_header / auth_prefix: the header the key goes in and what precedes it there.
   * headers: fixed extra headers, ending with a {NULL, NULL} row (may be NULL); an
   * Accept among them replaces the caller's default. sigv4_service: for AWS, the service
   * name requests are signed for with Signature Version 4 (the caller signs, with the
   * AWS_* credentials of its environment) when the key_env variable is not set; NULL for
   * providers that take the key header only. */
  int (*request)(const ts_request *req, ts_buf *out);
  const char *url_suffix;
  const char *host_hint;
  const char *key_env;
  const char *auth_header, *auth_prefix;
  const ts_provider_header *headers;
  const char *sigv4_service;

  /* For a proxy: request path suffixes whose replies come in this format (ending with
   * NULL), and where the request's tools declare their schemas (ending with a row whose
   * schema[0] is NULL). */
  const char *const *path_suffixes;
  const ts_schema_loc *schemas;
  const char *tools_array; /* the array `schemas` read: NULL for "tools" (see above) */

  /* The HTTP media type (Content-Type without parameters, lower case) that this
   * provider's stream, and no other's, comes with: Bedrock's
   * "application/vnd.amazon.eventstream", Ollama's "application/x-ndjson". NULL for the
   * providers that stream `text/event-stream` (the tap: ts_tap_config.content_type). */
  const char *media_type;
  /* Nonzero when a streamed reply of this provider may also come as `application/json`
   * (Gemini's streamGenerateContent without alt=sse: one JSON array), so that a proxy taps
   * such a reply; for the others a JSON reply is a non-streamed answer. */
  unsigned json_stream : 1;

  /* Added after 0.1.0. keep: how many payload bytes of the event `name` are
   * worth keeping, asked before its payload streams (ts_adapter_keep; SIZE_MAX: all of
   * it, the default when NULL). An event cut short of it comes back through `oversized`
   * (handled by its name) or is dropped. For repeats of what the provider already sent
   * (Responses' `.done` events). */
  size_t (*keep)(struct ts_adapter *a, ts_view name);
  /* keep_whole_lengths: bit n (n < 64) set when keep answers SIZE_MAX for every name of
   * n bytes, whatever the turn's state, so that a framer need not ask about them
   * (ts_adapter_keep_whole_lengths); 0: nothing promised. */
  uint64_t keep_whole_lengths;
} ts_provider;

/* Auto detection, asking the rows in table order. ts_provider_detect_name: the format
 * whose detect_name accepts an SSE event name (or a payload's `type`), or whose sentinel
 * the payload `data` is (trimmed; may be NULL). ts_provider_detect_doc: the format of a
 * parsed payload: its top-level object (or, for an array, its first element) is asked
 * by `type` string first, then by every row's detect_doc. TS_FORMAT_AUTO: does not tell. */
ts_format ts_provider_detect_name(ts_view name, ts_view data);
ts_format ts_provider_detect_doc(const struct ts_jv *jv);

/* The row of `f`, or NULL for auto, raw and values out of range. */
const ts_provider *ts_provider_get(ts_format f);

/* The row whose name or alias is `name`, or NULL. */
const ts_provider *ts_provider_find(const char *name);

/* Row i, 0 .. ts_provider_count()-1, in table order. */
size_t ts_provider_count(void);
const ts_provider *ts_provider_at(size_t i);

/* The format whose stream comes with HTTP media type `mt` (n bytes: a Content-Type's
 * type/subtype, compared without regard to case), or TS_FORMAT_AUTO when no row claims
 * it. */
ts_format ts_provider_for_media_type(const char *mt, size_t n);

/* The format whose replies a request path ends with (the part before any '?'), or
 * TS_FORMAT_AUTO when no row claims it. */
ts_format ts_provider_for_path(const char *path, size_t len);

/* The provider a base URL selects by its host hint, or NULL. A URL whose path holds
 * "/openai" selects none: it is a provider's OpenAI-compatible endpoint on its own host
 * (https://generativelanguage.googleapis.com/v1beta/openai/). */
const ts_provider *ts_provider_for_url(const char *url);

/* Writes the full request URL for `base` into out (capacity cap, NUL-terminated): the
 * provider's url_suffix (with {model} replaced by the model name, percent-encoded outside
 * the unreserved characters: a Bedrock model id's ':' is %3A) is appended to the path unless the path
 * already ends with it; a query string stays at the end (the suffix's own query, if any,
 * joins it). Returns TS_E_OK, TS_E_INVAL (NULL argument) or TS_E_LIMIT (does not fit). */
int ts_provider_url(const ts_provider *p, const char *base, const char *model, char *out,
                    size_t cap);

/* Appends p's streaming request body for `req` to `out`. Returns TS_E_OK, TS_E_INVAL
 * when p writes no requests (p->request is NULL), or the buffer's error (TS_E_NOMEM,
 * TS_E_LIMIT). */
int ts_provider_request(const ts_provider *p, const ts_request *req, ts_buf *out);

/* Walks the tool arrays of a parsed request body (token 0 its top-level object: `tools`,
 * and any provider's `tools_array`) and calls `fn` with the tokens of each declared
 * tool's name and schema (the schema token may be -1 when the declaration has none).
 * `p`: that provider's locations only; NULL: every provider's, the most specific shape
 * first (a `list`, then a `holder`, then a plain entry), the first that matches an entry
 * of that array wins. Nothing is decoded or changed. */
typedef void (*ts_provider_schema_fn)(void *user, struct ts_jv *jv, int name_tok, int schema_tok);
void ts_provider_tool_schemas(const ts_provider *p, struct ts_jv *jv, ts_provider_schema_fn fn,
                              void *user);

/* The tokens of the arrays in a parsed request body (token 0 its top-level object) that
 * hold tool declarations for `p` (NULL: any provider): `tools`, and the providers'
 * other `tools_array` paths, each at most once. Writes up to `max` of them to out
 * and returns how many it wrote. Nothing is decoded or changed. */
int ts_provider_tool_arrays(const ts_provider *p, const struct ts_jv *jv, int *out, int max);

/* For the provider files: writes `,"tools":[...]` (nothing when there are none), each
 * tool {"name","description",SCHEMA_KEY:schema}, wrapped as {"type":"function",
 * "function":{...}} when `function_wrapper` is set (the Chat Completions shape). */
void ts__provider_tools(ts_buf *b, const ts_request *r, int function_wrapper, const char *schema_key);

/* The same for any shape: `open`, then per tool (comma-separated) `before`, "name":...,
 * "description":..., `schema` then the schema, `after`; then `close`. Nothing when there
 * are no tools. (Responses: flat entries with "strict"; Gemini: one functionDeclarations
 * list; Bedrock: toolConfig.tools[].toolSpec with inputSchema.json.) */
typedef struct {
  const char *open, *before, *schema, *after, *close;
} ts__tool_shape;
void ts__provider_tools_as(ts_buf *b, const ts_request *r, const ts__tool_shape *shape);

/* For the provider files: writes a tool result's text as a JSON string, "Error: " before
 * it when the result is an error (for formats that have no error flag). */
void ts__provider_result_text(ts_buf *b, const ts_req_message *m);

/* OpenAI's tool settings (Chat Completions and Responses name them alike): ,"tool_choice":
 * "auto"|"none"|"required" and ,"parallel_tool_calls":bool, each when `r` sets it and has
 * tools. */
void ts__provider_tool_choice_openai(ts_buf *b, const ts_request *r);

#endif /* TS_PROVIDER_H */
