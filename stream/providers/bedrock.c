/*
 * bedrock.c: Amazon Bedrock's ConverseStream into the adapter's vocabulary.
 *
 * The reply is an AWS event stream (binary frames, stream/eventstream.h); the tap hands
 * each message here with its `:event-type` as the event name and its JSON payload:
 *   messageStart       {"role":"assistant"}
 *   contentBlockStart  {"contentBlockIndex":N,"start":{"toolUse":{"toolUseId","name"}}}
 *   contentBlockDelta  {"contentBlockIndex":N,"delta":{"toolUse":{"input":"<fragment>"}}}
 *                      or {"delta":{"text":"..."}}; `input` fragments are the next pieces
 *                      of the arguments' JSON text
 *   contentBlockStop   {"contentBlockIndex":N}
 *   messageStop        {"stopReason":"tool_use" | "end_turn" | "max_tokens" | ...}
 *   metadata           {"usage":{"inputTokens","outputTokens","totalTokens"},"metrics"}
 * An exception message (`:message-type` exception) is named by its `:exception-type`
 * (throttlingException, validationException, ...) and its payload has `message`: the
 * provider's terminal error. An error the service did not model comes as an `error`
 * message (`:message-type` error) whose text is in its `:error-code` and `:error-message`
 * headers, not in a payload: the tap reports that one itself (ts_adapter_feed_error).
 *
 * Calls are keyed by contentBlockIndex. The turn ends at `metadata` (the last message);
 * EOF after `messageStop` without it also ends the turn normally; EOF before is
 * truncation. The reply comes as `application/vnd.amazon.eventstream` (the row's
 * media_type: with it the tap needs no sniffing).
 *
 * The request side, for the gateway: POST /model/{modelId}/converse-stream, the tools
 * declared under toolConfig.tools[].toolSpec, each schema at inputSchema.json (the row's
 * tools_array and schemas).
 */
#define TS_ADAPTER_INTERNAL
#include <string.h>

#include "stream/adapter.h"
#include "stream/json_scan.h"
#include "stream/json_shape.h"
#include "stream/json_view.h"
#include "stream/provider.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static int is(ts_view v, const char *lit) {
  size_t n = strlen(lit);
  return v.len == n && memcmp(v.p, lit, n) == 0;
}

static int ends_with(ts_view v, const char *lit) {
  size_t n = strlen(lit);
  return v.len >= n && memcmp(v.p + v.len - n, lit, n) == 0;
}

static int block_call(ts_adapter *a, ts_jv *jv) {
  int64_t n;
  if (ts_jv_int(jv, ts_jv_get(jv, 0, "contentBlockIndex"), &n) != 0) return -1;
  return ts__adapter_call_by_nkey(a, n);
}

static void bedrock_event(ts_adapter *a, ts_jv *jv, ts_view name) {
  if (ts_jv_type_of(jv, 0) != TS_JV_OBJECT) {
    ts__adapter_error(a, TS_E_MS_BAD_SHAPE, NULL, 0, 0);
    return;
  }
  ts_view text;
  if (is(name, "contentBlockDelta")) {
    int delta = ts_jv_get(jv, 0, "delta");
    int tu = ts_jv_get(jv, delta, "toolUse");
    if (tu >= 0) {
      int slot = block_call(a, jv);
      if (slot >= 0 && ts__adapter_string(a, jv, ts_jv_get(jv, tu, "input"), &text) > 0)
        ts__adapter_call_args(a, slot, text);
    } else if (ts__adapter_string(a, jv, ts_jv_get(jv, delta, "text"), &text) > 0) {
      ts__adapter_text(a, text);
    }
  } else if (is(name, "contentBlockStart")) {
    int tu = ts_jv_get(jv, ts_jv_get(jv, 0, "start"), "toolUse");
    if (tu < 0) return;
    int64_t index;
    if (ts_jv_int(jv, ts_jv_get(jv, 0, "contentBlockIndex"), &index) != 0 || index < 0) {
      ts__adapter_error(a, TS_E_MS_BAD_SHAPE, NULL, 0, 0);
      return;
    }
    ts_view id, tool, none = {"", 0};
    if (ts__adapter_string(a, jv, ts_jv_get(jv, tu, "toolUseId"), &id) < 0) return;
    if (ts__adapter_string(a, jv, ts_jv_get(jv, tu, "name"), &tool) < 0) return;
    ts__adapter_call_begin(a, index, none, id, tool);
  } else if (is(name, "contentBlockStop")) {
    ts__adapter_call_end(a, block_call(a, jv));
  } else if (is(name, "messageStop")) {
    ts_view stop;
    ts__adapter_end_all(a);
    if (ts__adapter_string(a, jv, ts_jv_get(jv, 0, "stopReason"), &stop) > 0) ts__adapter_set_stop(a, stop);
  } else if (is(name, "metadata")) {
    int usage = ts_jv_get(jv, 0, "usage");
    if (ts_jv_type_of(jv, usage) == TS_JV_OBJECT) ts__adapter_set_usage(a, ts_jv_raw(jv, usage));
    ts__adapter_turn_end(a);
  } else if (ends_with(name, "Exception") || ts_jv_get(jv, 0, "message") >= 0) {
    ts__adapter_provider_error(a, jv, 0, NULL);
  }
  /* messageStart: nothing */
}

/* ---- the one pass -------------------------------------------------------------------------
 * contentBlockDelta with a toolUse fragment is nearly every message of a tool call; it is
 * read in one pass of the scanner (stream/json_scan.h) with exactly bedrock_event's
 * result: the index and the fragment are collected and reported once the whole payload
 * has been read. Anything else (another event, a text delta, a member of an unexpected
 * type, a duplicate of a member it reads) returns 0 with nothing reported, for the general
 * way. */

/* The service pads every payload with a last member `"p"` of random letters and digits,
 * so that the lengths of the messages do not tell what they hold. It is never read, yet
 * it differs in every message: left in, the shape memo scans it as a string every time.
 * So a payload that ends `<value end>,"p":"<padding>"}` is read as if it ended at the
 * value: the comma becomes the object's `}` for the length of the reading and is put
 * back after it. That is exact: with a padding of printable ASCII other than `"` and `\`,
 * its last quote and the `:"` and `,"p"` before it can only be the last member of the
 * top-level object, and the text with that member is valid JSON exactly when the text
 * without it is (the byte before the comma ends a value, so the object is not empty).
 * The reader never reads `p`, so its reading is the same either way. Anything else
 * (another last member, padding of other bytes or over 48 of them) is read whole.
 * Returns the length to read (len: nothing stripped). */
static size_t strip_padding(char *text, size_t len) {
#if defined(__SSE2__)
  if (len < 24 || text[len - 1] != '}' || text[len - 2] != '"') return len;
  const char *q = text + len - 2; /* the padding's closing quote */
  const __m128i dq = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\'), sp = _mm_set1_epi8(' '),
                del = _mm_set1_epi8(0x7F);
  for (const char *b = q - 16; b >= text && b > q - 64; b -= 16) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)b);
    unsigned quote = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, dq));
    /* a backslash, a control byte or DEL, or a byte over 0x7F (negative: under ' ') */
    unsigned bad = (unsigned)_mm_movemask_epi8(_mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(v, bs), _mm_cmplt_epi8(v, sp)), _mm_cmpeq_epi8(v, del)));
    if (!quote) {
      if (bad) return len;
      continue;
    }
    unsigned at = 31u - (unsigned)__builtin_clz(quote); /* the last quote: the padding opens */
    if (bad >> at) return len;                           /* a bad byte in the padding */
    const char *o = b + at;                              /* `,"p":"` ends here */
    if (o - text < 7 || memcmp(o - 5, ",\"p\":", 5) != 0) return len;
    char c = o[-6];
    if (c != '}' && c != '"' && c != ']' && !(c >= '0' && c <= '9') && c != 'e' && c != 'l') return len;
    text[o - 5 - text] = '}';
    return (size_t)(o - 4 - text);
  }
#else
  (void)text;
#endif
  return len;
}

/* The whole reading, when the memo did not have the payload: out of line, so that the
 * memo's hit (nearly every message) does not pay for this one's registers. */
static __attribute__((noinline)) int read_delta(ts_adapter *a, char *text, size_t len, ts_view name) {
  ts_json_shape_pass notes; /* the padding `p`; after a miss, every member never read */
  ts_json_shape_pass_init(&notes, ts__adapter_memo(a));
  ts_json_scan s;
  ts_json_item it;
  ts_json_scan_init(&s, text, len);
  if (ts_json_scan_next(&s, &it) != 1 || it.type != TS_JSON_SCAN_OBJECT) return 0;
  ts_view frag = {NULL, 0};
  int frag_esc = 0, have_index = 0;
  int64_t index = 0;
  unsigned seen = 0;
  for (;;) {
    if (ts_json_scan_next(&s, &it) != 1) return 0;
    if (it.type == TS_JSON_SCAN_END) break;
    if (ts_json_scan_key_is(it.key, "contentBlockIndex", 17)) {
      TS__SCAN_ONCE(seen, 1);
      if (it.type == TS_JSON_SCAN_NUMBER && ts_json_scan_int(it.raw, &index) == 0) have_index = 1;
    } else if (ts_json_scan_key_is(it.key, "delta", 5)) {
      TS__SCAN_ONCE(seen, 2);
      if (it.type != TS_JSON_SCAN_OBJECT) return 0;
      for (;;) {
        if (ts_json_scan_next(&s, &it) != 1) return 0;
        if (it.type == TS_JSON_SCAN_END) break;
        if (ts_json_scan_key_is(it.key, "toolUse", 7)) {
          TS__SCAN_ONCE(seen, 4);
          if (it.type != TS_JSON_SCAN_OBJECT) return 0;
          for (;;) {
            if (ts_json_scan_next(&s, &it) != 1) return 0;
            if (it.type == TS_JSON_SCAN_END) break;
            if (ts_json_scan_key_is(it.key, "input", 5)) {
              TS__SCAN_ONCE(seen, 8);
              if (it.type != TS_JSON_SCAN_STRING) return 0;
              frag = it.raw, frag_esc = it.escaped;
            }
            if (ts_json_scan_skip(&s, NULL) != 1) return 0;
          }
        } else if (ts_json_scan_key_is(it.key, "text", 4)) {
          return 0; /* text deltas: the general way */
        }
        if (ts_json_scan_skip(&s, NULL) != 1) return 0;
      }
    } else if (ts_json_scan_key_is(it.key, "p", 1)) {
      ts_json_shape_pass_varies(&notes, &it); /* the service's padding: never read, a memo span */
    } else {
      ts_json_shape_pass_unread(&notes, &it);
    }
    if (ts_json_scan_skip(&s, NULL) != 1) return 0;
  }
  if (ts_json_scan_next(&s, &it) != 0 || !(seen & 4)) return 0; /* one value; a toolUse delta */
  ts__adapter_memo_keep_fragment(a, text, len, name, ts_json_shape_pass_notes(&notes), have_index, index, frag); /* the simple kind */
  ts__adapter_nkey_fragment(a, have_index, index, frag, frag_esc);
  return 1;
}

static int bedrock_fast(ts_adapter *a, char *text, size_t len, ts_view name) {
  if (!is(name, "contentBlockDelta")) return 0;
  size_t n = strip_padding(text, len);
  int done = ts__adapter_memo_fragment(a, text, n, name) /* a toolUse delta again */
             || read_delta(a, text, n, name);
  if (n != len) text[n - 1] = ','; /* the padding's comma back */
  return done;
}

static int bedrock_name(ts_view name) {
  return is(name, "messageStart") || is(name, "contentBlockStart") || is(name, "contentBlockDelta") ||
         is(name, "contentBlockStop") || is(name, "messageStop") || is(name, "metadata") ||
         (ends_with(name, "Exception") && name.len > 9); /* throttlingException, ... */
}

/* ---- the request: POST /model/{modelId}/converse-stream -----------------------------------
 * The Converse shape: `messages` alternate role user and assistant, each with a
 * `content` list of blocks: {"text"}, {"toolUse":{toolUseId, name, input: the arguments
 * object}} on the assistant's side, {"toolResult":{toolUseId, content:[{"text"}], status:
 * "success" | "error"}} on the user's. System text is the top-level `system` list, the
 * tools are `toolConfig.tools[].toolSpec` {name, description, inputSchema:{json}}, and
 * max_tokens is `inferenceConfig.maxTokens`. The model id is in the path, not the body.
 *
 * Converse refuses two messages of one role in a row and empty text blocks, so the
 * results of a turn and a following prompt share one user message, and an assistant
 * message with neither text nor calls is left out. The result goes back as text (the
 * tool's JSON as it is): a `json` block wants an object, and results may be any value.
 *
 * Authentication is the caller's: AWS SigV4 over the finished request (runtime/net/
 * sigv4.h, `sigv4_service` below), or a Bedrock API key as a bearer token. */

static void put_text_block(ts_buf *b, ts_view text) {
  ts_buf_puts(b, "{\"text\":");
  ts_buf_append_json_string(b, text.p, text.len);
  ts_buf_putc(b, '}');
}

static int bedrock_request(const ts_request *r, ts_buf *b) {
  ts_buf_puts(b, "{\"messages\":[");
  int open = 0, blocks = 0; /* the role open ('u', 'a' or 0) and its blocks so far */
  for (size_t i = 0; i < r->nmessages; i++) {
    const ts_req_message *m = &r->messages[i];
    if (m->role == TS_REQ_SYSTEM) continue;
    int role = m->role == TS_REQ_ASSISTANT ? 'a' : 'u';
    int has_text = m->role != TS_REQ_TOOL && m->text.len > 0;
    if (!has_text && !m->ncalls && m->role != TS_REQ_TOOL) continue; /* nothing to say */
    if (open != role) {
      if (open) ts_buf_puts(b, "]},");
      ts_buf_puts(b, role == 'a' ? "{\"role\":\"assistant\",\"content\":["
                                 : "{\"role\":\"user\",\"content\":[");
      open = role;
      blocks = 0;
    }
    if (m->role == TS_REQ_TOOL) {
      if (blocks++) ts_buf_putc(b, ',');
      ts_buf_puts(b, "{\"toolResult\":{\"toolUseId\":");
      ts_buf_append_json_string(b, m->call_id.p, m->call_id.len);
      ts_buf_puts(b, ",\"content\":[");
      /* an empty text block is refused: an empty result says so */
      put_text_block(b, m->text.len ? m->text : (ts_view){"(empty)", 7});
      ts_buf_puts(b, m->is_error ? "],\"status\":\"error\"}}" : "],\"status\":\"success\"}}");
      continue;
    }
    if (has_text) {
      if (blocks++) ts_buf_putc(b, ',');
      put_text_block(b, m->text);
    }
    for (size_t k = 0; k < m->ncalls; k++) {
      const ts_req_call *c = &m->calls[k];
      if (blocks++) ts_buf_putc(b, ',');
      ts_buf_puts(b, "{\"toolUse\":{\"toolUseId\":");
      ts_buf_append_json_string(b, c->id.p, c->id.len);
      ts_buf_puts(b, ",\"name\":");
      ts_buf_append_json_string(b, c->name.p, c->name.len);
      ts_buf_puts(b, ",\"input\":");
      ts_buf_append(b, c->arguments.p, c->arguments.len);
      ts_buf_puts(b, "}}");
    }
  }
  if (open) ts_buf_puts(b, "]}");
  ts_buf_putc(b, ']');
  int sys = 0;
  for (size_t i = 0; i < r->nmessages; i++) {
    const ts_req_message *m = &r->messages[i];
    if (m->role != TS_REQ_SYSTEM || !m->text.len) continue;
    ts_buf_puts(b, sys++ ? "," : ",\"system\":[");
    put_text_block(b, m->text);
  }
  if (sys) ts_buf_putc(b, ']');
  if (r->max_tokens) {
    ts_buf_puts(b, ",\"inferenceConfig\":{\"maxTokens\":");
    ts_buf_append_u64(b, r->max_tokens);
    ts_buf_putc(b, '}');
  }
  static const ts__tool_shape shape = {",\"toolConfig\":{\"tools\":[", "{\"toolSpec\":{",
                                       "\"inputSchema\":{\"json\":", "}}}", "]}"};
  ts__provider_tools_as(b, r, &shape);
  ts_buf_putc(b, '}');
  return b->err;
}

static const char *const bedrock_paths[] = {"/converse-stream", NULL};
static const ts_provider_header bedrock_headers[] = {{"Accept", "application/vnd.amazon.eventstream"},
                                                     {NULL, NULL}};
/* Tool schemas: a Converse request declares them under toolConfig.tools[], each entry
 * {"toolSpec": {"name", "description", "inputSchema": {"json": SCHEMA}}} (entries may
 * also be {"cachePoint": ...}, which declare no tool). */
static const ts_schema_loc bedrock_schemas[] = {{NULL, "toolSpec", {"inputSchema.json", NULL}},
                                                {NULL, NULL, {NULL, NULL}}};

/* Bedrock's ConverseStream: `run --provider bedrock` (signed with SigV4, or a Bedrock API
 * key in AWS_BEARER_TOKEN_BEDROCK), the tap and the gateway. */
const ts_provider ts_provider_bedrock = {
    .format = TS_FORMAT_BEDROCK,
    .name = "bedrock",
    .detect_name = bedrock_name,
    .event = bedrock_event,
    .fast_event = bedrock_fast,
    .eof_after_stop = 1,
    .request = bedrock_request,
    .url_suffix = "/model/{model}/converse-stream",
    .host_hint = "bedrock-runtime.",
    .key_env = "AWS_BEARER_TOKEN_BEDROCK",
    .auth_header = "Authorization",
    .auth_prefix = "Bearer ",
    .headers = bedrock_headers,
    .sigv4_service = "bedrock",
    .path_suffixes = bedrock_paths,
    .schemas = bedrock_schemas,
    .tools_array = "toolConfig.tools",
    .media_type = "application/vnd.amazon.eventstream",
};
