/*
 * error.h: the one table of toolstream error codes.
 *
 * Every module reports failures as a negative `ts_err` value from this table; the
 * table gives each code a stable name (for logs and JSON events) and a one-line
 * human message. Parsers never format strings: they report a code and, where the
 * input is a stream, the absolute byte offset at which the problem was seen.
 *
 * Adding a code: add one X(...) row. Codes are never renumbered once released,
 * so new rows go at the end of their group.
 */
#ifndef TS_ERROR_H
#define TS_ERROR_H

/* X(code-suffix, value, name, message) */
#define TS_ERROR_TABLE(X)                                                        \
  X(OK, 0, "ok", "no error")                                                     \
  /* generic */                                                                  \
  X(NOMEM, -1, "nomem", "out of memory")                                         \
  X(INVAL, -2, "inval", "invalid argument")                                      \
  X(ABORTED, -3, "aborted", "stopped by the caller's callback")                  \
  X(LIMIT, -4, "limit", "a configured limit was exceeded")                       \
  X(IO, -5, "io", "input/output error")                                          \
  /* JSON tokenizer */                                                           \
  X(JSON_SYNTAX, -100, "json_syntax", "unexpected character")                    \
  X(JSON_DEPTH, -101, "json_depth", "nesting deeper than the configured limit")  \
  X(JSON_CTRL, -102, "json_ctrl", "raw control character in string")            \
  X(JSON_ESCAPE, -103, "json_escape", "invalid escape sequence")                 \
  X(JSON_SURROGATE, -104, "json_surrogate", "lone or mis-ordered \\u surrogate") \
  X(JSON_UTF8, -105, "json_utf8", "invalid UTF-8 in string")                     \
  X(JSON_NUMBER, -106, "json_number", "malformed number")                        \
  X(JSON_LITERAL, -107, "json_literal", "malformed true/false/null")             \
  X(JSON_TRAILING, -108, "json_trailing", "data after the top-level value")      \
  X(JSON_TRUNCATED, -109, "json_truncated", "input ended inside a value")        \
  X(JSON_EMPTY, -110, "json_empty", "input holds no JSON value")                 \
  X(JSON_FINISHED, -111, "json_finished", "feed after finish")                   \
  /* SSE framer */                                                               \
  X(SSE_LINE_TOO_LONG, -200, "sse_line_too_long", "SSE line longer than the limit") \
  X(SSE_EVENT_TOO_LARGE, -201, "sse_event_too_large", "SSE event data larger than the limit") \
  X(SSE_FINISHED, -202, "sse_finished", "feed after finish")                   \
  X(SSE_NAME_TOO_LONG, -203, "sse_name_too_long", "SSE event name longer than the limit") \
  X(SSE_ID_TOO_LONG, -204, "sse_id_too_long", "SSE event id longer than the limit") \
  /* the JSON view of one complete document (stream/json_view.h) */             \
  X(JV_BAD_JSON, -1000, "jv_bad_json", "text is not exactly one valid JSON value") \
  X(JV_TOO_MANY_TOKENS, -1001, "jv_too_many_tokens", "JSON document has more tokens than the view holds") \
  X(JV_NOT_STRING, -1002, "jv_not_string", "JSON value is not a string")       \
  /* the JSON value framer (stream/json_seq.h) */                               \
  X(JSEQ_SYNTAX, -1100, "jseq_syntax", "expected a JSON object or array")       \
  X(JSEQ_TOO_LARGE, -1101, "jseq_too_large", "JSON value larger than the limit") \
  X(JSEQ_TRAILING, -1102, "jseq_trailing", "data after the JSON array's closing bracket") \
  /* the AWS event stream framer (stream/eventstream.h) */                      \
  X(EVS_CRC, -1200, "evs_crc", "event stream message fails its CRC32 check")    \
  X(EVS_HEADERS, -1201, "evs_headers", "event stream message with malformed lengths or headers") \
  X(EVS_TOO_LARGE, -1202, "evs_too_large", "event stream message larger than the limit") \
  /* provider adapters (stream/adapter.h) */                                      \
  X(MS_BAD_JSON, -300, "ms_bad_json", "SSE payload is not valid JSON")           \
  X(MS_BAD_SHAPE, -301, "ms_bad_shape", "SSE payload does not have the provider's shape") \
  X(MS_TRUNCATED, -302, "ms_truncated", "stream ended without the provider's terminal event") \
  X(MS_PROVIDER, -303, "ms_provider", "the provider reported an error")          \
  X(MS_TOO_MANY_CALLS, -304, "ms_too_many_calls", "more tool calls in one turn than the limit") \
  X(MS_ID_TOO_LONG, -305, "ms_id_too_long", "call id or tool name longer than the limit") \
  X(MS_TOO_MANY_TOKENS, -306, "ms_too_many_tokens", "SSE payload has more JSON tokens than the limit") \
  X(MS_UNKNOWN_FORMAT, -307, "ms_unknown_format", "cannot tell the stream's format") \
  X(MS_AFTER_END, -308, "ms_after_end", "event after the provider's terminal event") \
  X(MS_FIELD_TOO_LONG, -309, "ms_field_too_long", "stop reason or usage longer than the adapter's storage") \
  X(MS_UNSUPPORTED, -310, "ms_unsupported", "a provider feature the adapter does not implement") \
  X(MS_NOT_STREAM, -311, "ms_not_stream", "the reply is not a model stream")     \
  /* tap (tap.h) */                                                              \
  X(TAP_NOT_OBJECT, -400, "tap_not_object", "tool arguments are not a JSON object") \
  X(TAP_INCOMPLETE, -401, "tap_incomplete", "the call ended before its arguments were complete") \
  /* argument schemas (runtime/schema.h) */                                       \
  X(SCHEMA_INVALID, -500, "schema_invalid", "the tool's argument schema is malformed") \
  X(SCHEMA_MISMATCH, -501, "schema_mismatch", "tool arguments do not match the tool's schema") \
  X(ARGS_BAD_JSON, -502, "args_bad_json", "tool arguments are not valid JSON") \
  X(ARGS_TOO_DEEP, -503, "args_too_deep", "tool arguments nested deeper than the limit") \
  X(SCHEMA_LIMIT, -504, "schema_limit", "validation exceeded its recursion or work limit") \
  /* durable store (runtime/store.h) */                                          \
  X(STORE_OPEN, -600, "store_open", "cannot open or create the store's database") \
  X(STORE_IO, -601, "store_io", "disk I/O error or disk full in the store")      \
  X(STORE_CORRUPT, -602, "store_corrupt", "the store's file is corrupt or not a toolstream database") \
  X(STORE_VERSION, -603, "store_version", "the store was written by a newer toolstream") \
  X(STORE_BUSY, -604, "store_busy", "the store is locked by another process")   \
  X(STORE_READONLY, -605, "store_readonly", "the store's file or directory is read-only") \
  X(STORE_NO_DIR, -606, "store_no_dir", "no data directory: set TOOLSTREAM_DATA_DIR, XDG_DATA_HOME or HOME") \
  X(STORE_NO_THREAD, -607, "store_no_thread", "no such thread in the store")    \
  X(STORE_THREAD_EXISTS, -608, "store_thread_exists", "a thread with that id already exists") \
  X(STORE_NO_CALL, -609, "store_no_call", "no start record for that call")      \
  X(STORE_CALL_FINISHED, -610, "store_call_finished", "the call is already finished") \
  X(STORE_SEQ, -611, "store_seq", "event seq not above the thread's last stored event") \
  X(STORE_REENTRANT, -612, "store_reentrant", "store used from inside one of its own callbacks") \
  X(STORE_SQL, -613, "store_sql", "unexpected SQLite error") \
  /* variables and secrets (runtime/tools/variables.h) */                        \
  X(VAR_KEY, -1900, "var_key", "the secret key is not the one the store's secrets were sealed with") \
  X(VAR_KEY_FILE, -1901, "var_key_file", "the secret key is missing, malformed, or readable by others") \
  X(VAR_DECRYPT, -1902, "var_decrypt", "a secret value cannot be opened (damaged, or moved to another thread or name)") \
  X(VAR_MISSING, -1903, "var_missing", "a required variable has no value (set it with `toolstream env set`, then --resume)") \
  /* HTTP transport for model backends (runtime/http_client.h) */                 \
  X(HTTP_URL, -800, "http_url", "the model URL is malformed or not http(s)")     \
  X(HTTP_CONNECT, -801, "http_connect", "cannot connect to the model server")    \
  X(HTTP_TIMEOUT, -802, "http_timeout", "the model server did not answer in time") \
  X(HTTP_STATUS, -803, "http_status", "the model server answered with an error status") \
  X(HTTP_TLS, -804, "http_tls", "TLS handshake or certificate verification failed") \
  X(HTTP_CANCELLED, -805, "http_cancelled", "the request was cancelled")         \
  X(HTTP_CLOSED, -806, "http_closed", "the connection closed before the response was complete") \
  X(HTTP_PROTOCOL, -807, "http_protocol", "the model server sent a malformed HTTP response")                    \
  /* The gateway (runtime/gateway.h) */                                          \
  X(GW_UPSTREAM, -900, "gw_upstream", "the upstream could not be reached or broke off") \
  X(GW_TIMEOUT, -901, "gw_timeout", "the upstream did not connect, answer or stream in time") \
  X(GW_STATUS, -902, "gw_status", "the upstream answered with an error status") \
  X(GW_TLS, -903, "gw_tls", "TLS handshake or certificate verification with the upstream failed") \
  X(GW_REQUEST, -904, "gw_request", "the client's HTTP request is malformed or its framing ambiguous") \
  X(GW_RESPONSE, -905, "gw_response", "the upstream's HTTP response is malformed or its framing ambiguous") \
  /* JavaScript sandbox (runtime/sandbox.h) */                                   \
  X(SANDBOX_ERROR, -700, "sandbox_error", "the script threw an error")          \
  X(SANDBOX_TIMEOUT, -701, "sandbox_timeout", "the script ran past its time limit") \
  X(SANDBOX_TERMINATED, -702, "sandbox_terminated", "the script was terminated by the caller") \
  X(SANDBOX_OOM, -703, "sandbox_oom", "the script exceeded its memory limit")   \
  X(SANDBOX_INPUT, -704, "sandbox_input", "the sandbox input is not valid JSON") \
  X(SANDBOX_VALUE, -705, "sandbox_value", "the script's value cannot be converted to JSON") \
  /* Attachments between thread filesystems (agent/attachments.h) */             \
  X(ATTACH_PATH, -2000, "attach_path", "attachment path is empty, too long, or holds '..', a control byte or a NUL") \
  X(ATTACH_MISSING, -2001, "attach_missing", "no such file in the thread's filesystem") \
  X(ATTACH_ESCAPE, -2002, "attach_escape", "attachment path goes through a symbolic link") \
  X(ATTACH_NOT_FILE, -2003, "attach_not_file", "attachment path is not a regular file") \
  X(ATTACH_TOO_BIG, -2004, "attach_too_big", "attachment larger than the size limit")

typedef enum {
#define TS_X(c, v, n, m) TS_E_##c = (v),
  TS_ERROR_TABLE(TS_X)
#undef TS_X
} ts_err;

/* The stable snake_case name of `code` ("json_syntax"); "unknown" for codes not
 * in the table. Never NULL; the string is static. */
const char *ts_err_name(int code);

/* The one-line human message of `code`; never NULL; static. */
const char *ts_err_message(int code);

#endif /* TS_ERROR_H */
