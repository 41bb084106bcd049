/*
 * anthropic.c: Anthropic Messages events into the adapter's vocabulary.
 *
 * A message is a sequence of content blocks, each opened by `content_block_start`
 * (with the block's `index` and, for a tool call, `type: tool_use`, `id`, `name` and an
 * `input` that is normally `{}`), fed by `content_block_delta` events (`text_delta` for
 * text, `input_json_delta.partial_json` for the next fragment of a tool call's
 * arguments), and closed by `content_block_stop`. Then `message_delta` brings the
 * stop reason and the usage, and `message_stop` ends the message.
 *
 * Calls are keyed by block index. With eager ("fine-grained") input streaming the
 * server may skip `content_block_stop`, and a message cut by `max_tokens` may stop in
 * the middle of the arguments: `message_stop` therefore ends every call still open
 * before TURN_END, and reports nothing about whether the arguments were complete (the
 * argument tokenizer downstream knows that, we do not guess).
 *
 * `input` is reported as the first CALL_ARGS only when it is a non-empty object: some
 * proxies send the whole input there instead of as deltas; the `{}` Anthropic itself
 * sends is a placeholder that the deltas replace, not a prefix of them.
 *
 * A whole message in `message_start`: with programmatic tool calling the reply can be a
 * `message_start` whose `message.content` already holds complete `tool_use` blocks (and
 * text blocks) and whose `message.stop_reason` is set, then `message_stop`. Each such
 * block is a call begun, given its `input` whole and ended at once, keyed by its position
 * in `content` (which is the block index later events would use); the stop reason is kept.
 *
 * Usage: `message_start` carries `input_tokens` and the cache counters (and an early
 * `output_tokens`), `message_delta` the final `output_tokens` (and, lately, totals of its
 * own). The turn's usage is the two merged as the provider's SDK merges them: the members
 * of message_start's object in their order, each replaced by message_delta's value for the
 * same key when that is not null, then message_delta's other members.
 */
#define TS_ADAPTER_INTERNAL
#include <string.h>

#include "stream/adapter.h"
#include "stream/json_members.h"
#include "stream/json_scan.h"
#include "stream/json_scan_impl.h"
#include "stream/json_view.h"
#include "stream/provider.h"

static int type_is(ts_view v, const char *lit) {
  size_t n = strlen(lit);
  return v.len == n && memcmp(v.p, lit, n) == 0;
}

/* The tool call of block `index` (a token), or -1. */
static int block_call(ts_adapter *a, ts_jv *jv, int index) {
  int64_t n;
  if (ts_jv_int(jv, index, &n) != 0) return -1;
  return ts__adapter_call_by_nkey(a, n);
}

static void block_start(ts_adapter *a, ts_jv *jv) {
  int block = ts_jv_get(jv, 0, "content_block");
  ts_view text;
  if (ts_jv_eq(jv, ts_jv_get(jv, block, "type"), "text")) {
    if (ts__adapter_string(a, jv, ts_jv_get(jv, block, "text"), &text) > 0) ts__adapter_text(a, text);
    return;
  }
  if (!ts_jv_eq(jv, ts_jv_get(jv, block, "type"), "tool_use")) return;
  int64_t index;
  if (ts_jv_int(jv, ts_jv_get(jv, 0, "index"), &index) != 0 || index < 0) {
    ts__adapter_error(a, TS_E_MS_BAD_SHAPE, NULL, 0, 0);
    return;
  }
  ts_view id, name, none = {"", 0};
  if (ts__adapter_string(a, jv, ts_jv_get(jv, block, "id"), &id) < 0) return;
  if (ts__adapter_string(a, jv, ts_jv_get(jv, block, "name"), &name) < 0) return;
  int slot = ts__adapter_call_begin(a, index, none, id, name);
  int input = ts_jv_get(jv, block, "input");
  if (slot >= 0 && ts_jv_type_of(jv, input) == TS_JV_OBJECT && ts_jv_size(jv, input) > 0)
    ts__adapter_call_args(a, slot, ts_jv_raw(jv, input));
}

/* The content of a message_start that arrives whole (see the top of the file). */
static void message_start(ts_adapter *a, ts_jv *jv, int msg) {
  int usage = ts_jv_get(jv, msg, "usage");
  if (ts_jv_type_of(jv, usage) == TS_JV_OBJECT) ts__adapter_set_usage(a, ts_jv_raw(jv, usage));
  int content = ts_jv_get(jv, msg, "content");
  int n = ts_jv_type_of(jv, content) == TS_JV_ARRAY ? ts_jv_size(jv, content) : 0;
  ts_view text, id, name, none = {"", 0};
  for (int k = 0, b = ts_jv_first(jv, content); k < n; k++, b = ts_jv_skip(jv, b)) {
    int btype = ts_jv_get(jv, b, "type");
    if (ts_jv_eq(jv, btype, "text")) {
      if (ts__adapter_string(a, jv, ts_jv_get(jv, b, "text"), &text) > 0) ts__adapter_text(a, text);
      continue;
    }
    if (!ts_jv_eq(jv, btype, "tool_use")) continue;
    int input = ts_jv_get(jv, b, "input");
    ts_view args = ts_jv_raw(jv, input); /* raw first: decoding in place would spoil it */
    if (ts__adapter_string(a, jv, ts_jv_get(jv, b, "id"), &id) < 0) continue;
    if (ts__adapter_string(a, jv, ts_jv_get(jv, b, "name"), &name) < 0) continue;
    int slot = ts__adapter_call_begin(a, k, none, id, name);
    if (slot < 0) continue;
    if (ts_jv_type_of(jv, input) == TS_JV_OBJECT && ts_jv_size(jv, input) > 0)
      ts__adapter_call_args(a, slot, args);
    ts__adapter_call_end(a, slot); /* the block is complete */
  }
  ts_view stop;
  if (ts__adapter_string(a, jv, ts_jv_get(jv, msg, "stop_reason"), &stop) > 0)
    ts__adapter_set_stop(a, stop);
}

static int is_null(ts_view v) { return v.len == 4 && memcmp(v.p, "null", 4) == 0; }

/* message_delta's usage merged into message_start's (see the top of the file). Raw keys
 * compare; values are copied as sent. */
static void merge_usage(ts_adapter *a, ts_view delta) {
  ts_view start = ts__adapter_usage(a);
  if (!start.len) {
    ts__adapter_set_usage(a, delta);
    return;
  }
  char out[TS_ADAPTER_MAX_USAGE + 1];
  size_t o = 0;
  int over = 0;
#define PUT(p, n)                                            \
  do {                                                       \
    if (o + (n) > TS_ADAPTER_MAX_USAGE) over = 1;            \
    else memcpy(out + o, (p), (n)), o += (n);                \
  } while (0)
  PUT("{", 1);
  ts_json_members it;
  ts_view k, v, dk, dv;
  ts_json_members_init(&it, start.p, start.len);
  while (ts_json_members_next(&it, &k, &v) == 1) {
    ts_view use = v;
    ts_json_members d;
    ts_json_members_init(&d, delta.p, delta.len);
    while (ts_json_members_next(&d, &dk, &dv) == 1)
      if (dk.len == k.len && !memcmp(dk.p, k.p, k.len) && !is_null(dv)) use = dv;
    if (o > 1) PUT(",", 1);
    PUT("\"", 1);
    PUT(k.p, k.len);
    PUT("\":", 2);
    PUT(use.p, use.len);
  }
  ts_json_members_init(&it, delta.p, delta.len);
  while (ts_json_members_next(&it, &dk, &dv) == 1) {
    ts_json_members s;
    int found = 0;
    ts_json_members_init(&s, start.p, start.len);
    while (!found && ts_json_members_next(&s, &k, &v) == 1)
      found = k.len == dk.len && !memcmp(k.p, dk.p, k.len);
    if (found) continue;
    if (o > 1) PUT(",", 1);
    PUT("\"", 1);
    PUT(dk.p, dk.len);
    PUT("\":", 2);
    PUT(dv.p, dv.len);
  }
  PUT("}", 1);
#undef PUT
  if (over) {
    ts__adapter_error(a, TS_E_MS_FIELD_TOO_LONG, NULL, 0, 0);
    return;
  }
  ts__adapter_set_usage(a, (ts_view){out, o});
}

static void block_delta(ts_adapter *a, ts_jv *jv) {
  int delta = ts_jv_get(jv, 0, "delta");
  int dtype = ts_jv_get(jv, delta, "type");
  ts_view text;
  if (ts_jv_eq(jv, dtype, "input_json_delta")) {
    int slot = block_call(a, jv, ts_jv_get(jv, 0, "index"));
    if (slot >= 0 && ts__adapter_string(a, jv, ts_jv_get(jv, delta, "partial_json"), &text) > 0)
      ts__adapter_call_args(a, slot, text);
  } else if (ts_jv_eq(jv, dtype, "text_delta")) {
    if (ts__adapter_string(a, jv, ts_jv_get(jv, delta, "text"), &text) > 0) ts__adapter_text(a, text);
  }
  /* thinking_delta, signature_delta, citations_delta: not ours */
}

static void anthropic_event(ts_adapter *a, ts_jv *jv, ts_view event) {
  if (ts_jv_type_of(jv, 0) != TS_JV_OBJECT) {
    ts__adapter_error(a, TS_E_MS_BAD_SHAPE, NULL, 0, 0);
    return;
  }
  ts_view type = ts__adapter_event_type(jv, event);
  if (type_is(type, "content_block_delta")) {
    block_delta(a, jv);
  } else if (type_is(type, "content_block_start")) {
    block_start(a, jv);
  } else if (type_is(type, "content_block_stop")) {
    ts__adapter_call_end(a, block_call(a, jv, ts_jv_get(jv, 0, "index")));
  } else if (type_is(type, "message_delta")) {
    ts_view stop;
    if (ts__adapter_string(a, jv, ts_jv_get(jv, ts_jv_get(jv, 0, "delta"), "stop_reason"), &stop) > 0)
      ts__adapter_set_stop(a, stop);
    int usage = ts_jv_get(jv, 0, "usage");
    if (ts_jv_type_of(jv, usage) == TS_JV_OBJECT) merge_usage(a, ts_jv_raw(jv, usage));
  } else if (type_is(type, "message_start")) {
    message_start(a, jv, ts_jv_get(jv, 0, "message"));
  } else if (type_is(type, "message_stop")) {
    ts__adapter_turn_end(a);
  } else if (type_is(type, "error")) {
    int err = ts_jv_get(jv, 0, "error");
    ts__adapter_provider_error(a, jv, ts_jv_type_of(jv, err) == TS_JV_OBJECT ? err : 0, NULL);
  } else if (ts_jv_get(jv, 0, "type") < 0) {
    int err = ts_jv_get(jv, 0, "error");
    if (err >= 0 && !ts_jv_is_null(jv, err)) ts__adapter_provider_error(a, jv, err, NULL);
  }
  /* ping and unknown types: nothing */
}

/* ---- the one-pass reader ------------------------------------------------------------
 * The two events that make up nearly all of a stream, content_block_delta and
 * content_block_stop, read in one pass of the scanner (stream/json_scan.h) with exactly
 * anthropic_event's result: the values it needs are collected, nothing is reported until
 * the whole payload has been read, and anything else (another type, a member of an
 * unexpected type, a duplicate of a member it reads, text that is not JSON) returns 0 with
 * nothing reported, for the general way. */

static int anthropic_fast(ts_adapter *a, char *text, size_t len, ts_view event) {
  if (ts__adapter_memo_fragment(a, text, len, event)) return 1; /* an input_json_delta again */
  ts_json_scan s;
  ts_json_item it = {.type = TS_JSON_SCAN_END}; /* (gcc cannot see that the scanner fills it) */
  ts_json_shape_pass notes; /* after a miss, every top-level member never read */
  ts_json_shape_pass_init(&notes, ts__adapter_memo(a));
  ts_json_scan_init(&s, text, len);
  if (ts__json_scan_next_inline(&s, &it) != 1 || it.type != TS_JSON_SCAN_OBJECT) return 0;
  ts_view type = event, dtype = {NULL, 0}, frag = {NULL, 0};
  int frag_esc = 0, have_index = 0;
  int64_t index = 0;
  unsigned seen = 0;
  for (;;) {
    if (ts__json_scan_next_inline(&s, &it) != 1) return 0;
    if (it.type == TS_JSON_SCAN_END) break;
    if (ts_json_scan_key_is(it.key, "type", 4)) {
      TS__SCAN_ONCE(seen, 1);
      if (it.type != TS_JSON_SCAN_STRING) return 0;
      type = it.raw;
    } else if (ts_json_scan_key_is(it.key, "index", 5)) {
      TS__SCAN_ONCE(seen, 2);
      if (it.type == TS_JSON_SCAN_NUMBER && ts_json_scan_int(it.raw, &index) == 0) have_index = 1;
    } else if (ts_json_scan_key_is(it.key, "delta", 5)) {
      TS__SCAN_ONCE(seen, 4);
      if (it.type != TS_JSON_SCAN_OBJECT) return 0;
      unsigned dseen = 0;
      for (;;) {
        if (ts__json_scan_next_inline(&s, &it) != 1) return 0;
        if (it.type == TS_JSON_SCAN_END) break;
        if (ts_json_scan_key_is(it.key, "type", 4)) {
          if (dseen & 1 || it.type != TS_JSON_SCAN_STRING) return 0;
          dseen |= 1;
          dtype = it.raw;
        } else if (ts_json_scan_key_is(it.key, "partial_json", 12)) {
          if (dseen & 2 || it.type != TS_JSON_SCAN_STRING) return 0;
          dseen |= 2;
          frag = it.raw;
          frag_esc = it.escaped;
        } else if (ts_json_scan_key_is(it.key, "text", 4)) {
          return 0; /* text deltas: the general way */
        }
        if (ts_json_scan_skip(&s, NULL) != 1) return 0;
      }
    } else {
      ts_json_shape_pass_unread(&notes, &it);
    }
    if (ts_json_scan_skip(&s, NULL) != 1) return 0;
  }
  if (ts__json_scan_next_inline(&s, &it) != 0) return 0; /* one value, then only whitespace */

  if (type_is(type, "content_block_delta")) {
    if (!(seen & 4) || !type_is(dtype, "input_json_delta")) return 0;
    ts__adapter_memo_keep_fragment(a, text, len, event, ts_json_shape_pass_notes(&notes), have_index, index,
                                   frag); /* the simple kind */
    /* the type read from the payload: no step of this reading, nor of the general way's,
     * looks at the event's name, so a hit need not compare it */
    if (seen & 1 && ts__adapter_memo(a)) ts__adapter_memo(a)->any_name = 1;
    ts__adapter_nkey_fragment(a, have_index, index, frag, frag_esc);
    return 1;
  }
  if (type_is(type, "content_block_stop")) {
    ts__adapter_call_end(a, have_index ? ts__adapter_call_by_nkey(a, index) : -1);
    return 1;
  }
  return 0;
}

/* ---- recognising it ------------------------------------------------------------------ */

static int anthropic_name(ts_view name) {
  static const char *const types[] = {
      "message_start",       "message_delta",       "message_stop",
      "content_block_start", "content_block_delta", "content_block_stop",
  };
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
    if (type_is(name, types[i])) return 1;
  return 0;
}

/* ---- the request -------------------------------------------------------------------------
 * System text goes in the top-level `system` member (the Messages API has no system role);
 * the results of one assistant message's calls go back as one user message of
 * `tool_result` blocks, so a run of TOOL messages is written as one message. */

static void put_assistant(ts_buf *b, const ts_req_message *m) {
  ts_buf_puts(b, "{\"role\":\"assistant\",\"content\":[");
  int w = 0;
  if (m->text.len) {
    ts_buf_puts(b, "{\"type\":\"text\",\"text\":");
    ts_buf_append_json_string(b, m->text.p, m->text.len);
    ts_buf_putc(b, '}');
    w++;
  }
  for (size_t i = 0; i < m->ncalls; i++) {
    const ts_req_call *c = &m->calls[i];
    if (w++) ts_buf_putc(b, ',');
    ts_buf_puts(b, "{\"type\":\"tool_use\",\"id\":");
    ts_buf_append_json_string(b, c->id.p, c->id.len);
    ts_buf_puts(b, ",\"name\":");
    ts_buf_append_json_string(b, c->name.p, c->name.len);
    ts_buf_puts(b, ",\"input\":");
    ts_buf_append(b, c->arguments.p, c->arguments.len);
    ts_buf_putc(b, '}');
  }
  /* the API refuses an empty content list */
  if (!w) ts_buf_puts(b, "{\"type\":\"text\",\"text\":\"(no text)\"}");
  ts_buf_puts(b, "]}");
}

static void put_result(ts_buf *b, const ts_req_message *m) {
  ts_buf_puts(b, "{\"type\":\"tool_result\",\"tool_use_id\":");
  ts_buf_append_json_string(b, m->call_id.p, m->call_id.len);
  ts_buf_puts(b, ",\"content\":");
  ts_buf_append_json_string(b, m->text.p, m->text.len);
  ts_buf_puts(b, m->is_error ? ",\"is_error\":true}" : "}");
}

static int anthropic_request(const ts_request *r, ts_buf *b) {
  ts_buf_puts(b, "{\"model\":");
  ts_buf_append_json_string(b, r->model, strlen(r->model));
  ts_buf_puts(b, ",\"max_tokens\":");
  ts_buf_append_u64(b, r->max_tokens ? r->max_tokens : 4096);
  ts_buf_puts(b, ",\"stream\":true");
  int sys = 0;
  for (size_t i = 0; i < r->nmessages; i++) {
    const ts_req_message *m = &r->messages[i];
    if (m->role != TS_REQ_SYSTEM) continue;
    if (!sys++) {
      ts_buf_puts(b, ",\"system\":[");
    } else {
      ts_buf_putc(b, ',');
    }
    ts_buf_puts(b, "{\"type\":\"text\",\"text\":");
    ts_buf_append_json_string(b, m->text.p, m->text.len);
    ts_buf_putc(b, '}');
  }
  if (sys) ts_buf_putc(b, ']');
  ts_buf_puts(b, ",\"messages\":[");
  int first = 1;
  for (size_t i = 0; i < r->nmessages; i++) {
    const ts_req_message *m = &r->messages[i];
    if (m->role == TS_REQ_SYSTEM) continue;
    if (!first) ts_buf_putc(b, ',');
    first = 0;
    if (m->role == TS_REQ_USER) {
      ts_buf_puts(b, "{\"role\":\"user\",\"content\":");
      ts_buf_append_json_string(b, m->text.p, m->text.len);
      ts_buf_putc(b, '}');
    } else if (m->role == TS_REQ_ASSISTANT) {
      put_assistant(b, m);
    } else {
      ts_buf_puts(b, "{\"role\":\"user\",\"content\":[");
      put_result(b, m);
      while (i + 1 < r->nmessages && r->messages[i + 1].role == TS_REQ_TOOL) {
        ts_buf_putc(b, ',');
        put_result(b, &r->messages[++i]);
      }
      ts_buf_puts(b, "]}");
    }
  }
  ts_buf_putc(b, ']');
  ts__provider_tools(b, r, 0, "input_schema");
  /* Anthropic's names: "required" is {"type":"any"}; no parallel use is a flag on it */
  if (r->ntools && (r->tool_choice || r->parallel_tool_calls == 0)) {
    const char *t = !r->tool_choice                         ? "auto"
                    : !strcmp(r->tool_choice, "required") ? "any"
                                                          : r->tool_choice;
    ts_buf_puts(b, ",\"tool_choice\":{\"type\":");
    ts_buf_append_json_string(b, t, strlen(t));
    if (r->parallel_tool_calls == 0 && strcmp(t, "none"))
      ts_buf_puts(b, ",\"disable_parallel_tool_use\":true");
    ts_buf_putc(b, '}');
  }
  ts_buf_putc(b, '}');
  return b->err;
}

static const char *const anthropic_paths[] = {"/messages", NULL};
static const ts_schema_loc anthropic_schemas[] = {{NULL, NULL, {"input_schema", NULL}},
                                                  {NULL, NULL, {NULL, NULL}}};
static const ts_provider_header anthropic_headers[] = {{"anthropic-version", "2023-06-01"},
                                                       {NULL, NULL}};

const ts_provider ts_provider_anthropic = {
    .format = TS_FORMAT_ANTHROPIC,
    .name = "anthropic",
    .detect_name = anthropic_name,
    .event = anthropic_event,
    .fast_event = anthropic_fast,
    .memo_fragments = 1,
    .named_errors = 1,
    .request = anthropic_request,
    .url_suffix = "/messages",
    .host_hint = "anthropic.com",
    .key_env = "ANTHROPIC_API_KEY",
    .auth_header = "x-api-key",
    .auth_prefix = "",
    .headers = anthropic_headers,
    .path_suffixes = anthropic_paths,
    .schemas = anthropic_schemas,
};
