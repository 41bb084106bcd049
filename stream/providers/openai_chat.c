/*
 * openai_chat.c: Chat Completions chunks into the adapter's vocabulary.
 *
 * A chunk is `{"choices":[{"index":0,"delta":{...},"finish_reason":...}], "usage":...}`.
 * The delta carries text (`content`) and tool calls (`tool_calls[]`), each entry a
 * piece of one call: `index`, and on the call's first piece `id`, `type` and
 * `function.name`; `function.arguments` is the next fragment of the arguments' JSON
 * text, itself a JSON string that we decode in place before reporting it.
 *
 * The difficulty is naming the call an entry belongs to, because servers that speak
 * this format differ: OpenAI sends `index` on every piece; some compatible servers
 * reuse index 0 for every call and tell calls apart only by a new `id`; others send
 * no index at all (whole calls, matched by `id`), or pieces with neither (which can
 * only continue the call in progress). The rules, in adapter.h, cover all four
 * without guessing beyond what the wire says.
 *
 * Ending: `finish_reason` ends every call (a chunk's tool calls are read before its
 * finish_reason, for servers that send both together); the usage chunk
 * (`choices: []`) follows; `[DONE]` ends the turn. An `{"error": {...}}` payload is the
 * provider's terminal error.
 */
#define TS_ADAPTER_INTERNAL
#include <string.h>

#include "stream/adapter.h"
#include "stream/json_view.h"
#include "stream/provider.h"

static void tool_call(ts_adapter *a, ts_jv *jv, int tc) {
  if (ts_jv_type_of(jv, tc) != TS_JV_OBJECT) {
    ts__adapter_error(a, TS_E_MS_BAD_SHAPE, NULL, 0, 0);
    return;
  }
  int64_t index = -1, n;
  if (ts_jv_int(jv, ts_jv_get(jv, tc, "index"), &n) == 0 && n >= 0) index = n;
  int fn = ts_jv_get(jv, tc, "function");
  ts_view id, name;
  if (ts__adapter_string(a, jv, ts_jv_get(jv, tc, "id"), &id) < 0) return;
  if (ts__adapter_string(a, jv, ts_jv_get(jv, fn, "name"), &name) < 0) return;

  int slot;
  if (index >= 0) {
    slot = ts__adapter_call_by_nkey(a, index);
    if (slot >= 0 && id.len > 0) { /* an index reused with a different id: a new call */
      ts_view old = ts__adapter_call_key(a, slot);
      if (old.len > 0 && (old.len != id.len || memcmp(old.p, id.p, id.len) != 0)) slot = -1;
    }
  } else if (id.len > 0) {
    slot = ts__adapter_call_by_key(a, id);
  } else {
    slot = ts__adapter_call_last(a);
  }
  if (ts__adapter_call_ended(a, slot)) slot = -1; /* never reopen: a new call */
  if (slot < 0) {
    slot = ts__adapter_call_begin(a, index, id, id, name);
    if (slot < 0) return;
  } else if (id.len > 0) {
    ts__adapter_call_set_key(a, slot, id); /* sent again: replaces */
  }

  int args = ts_jv_get(jv, fn, "arguments");
  ts_view text;
  if (ts_jv_type_of(jv, args) == TS_JV_OBJECT) { /* some servers send the object itself */
    ts__adapter_call_args(a, slot, ts_jv_raw(jv, args));
  } else if (ts__adapter_string(a, jv, args, &text) > 0) {
    ts__adapter_call_args(a, slot, text);
  }
}

static void choice(ts_adapter *a, ts_jv *jv, int ch) {
  int64_t n;
  if (ts_jv_int(jv, ts_jv_get(jv, ch, "index"), &n) == 0 && n != 0) return; /* choice 0 only */
  int delta = ts_jv_get(jv, ch, "delta");
  ts_view text;
  if (ts__adapter_string(a, jv, ts_jv_get(jv, delta, "content"), &text) > 0) ts__adapter_text(a, text);
  int calls = ts_jv_get(jv, delta, "tool_calls");
  if (ts_jv_type_of(jv, calls) == TS_JV_ARRAY) {
    int size = ts_jv_size(jv, calls);
    for (int k = 0, tc = ts_jv_first(jv, calls); k < size; k++, tc = ts_jv_skip(jv, tc))
      tool_call(a, jv, tc);
  } else if (calls >= 0 && !ts_jv_is_null(jv, calls)) {
    ts__adapter_error(a, TS_E_MS_BAD_SHAPE, NULL, 0, 0);
  }
  /* The legacy `function_call` delta: one call, no index, no id. Its token sits where
   * a tool_calls entry's `function` would, so the entry is the delta itself. */
  int legacy = ts_jv_get(jv, delta, "function_call");
  if (ts_jv_type_of(jv, legacy) == TS_JV_OBJECT) {
    int slot = ts__adapter_call_last(a);
    if (slot < 0 || ts__adapter_call_ended(a, slot)) {
      ts_view name, none = {"", 0};
      if (ts__adapter_string(a, jv, ts_jv_get(jv, legacy, "name"), &name) < 0) return;
      slot = ts__adapter_call_begin(a, -1, none, none, name);
      if (slot < 0) return;
    }
    if (ts__adapter_string(a, jv, ts_jv_get(jv, legacy, "arguments"), &text) > 0)
      ts__adapter_call_args(a, slot, text);
  }
  ts_view stop;
  if (ts__adapter_string(a, jv, ts_jv_get(jv, ch, "finish_reason"), &stop) > 0) {
    ts__adapter_end_all(a);
    ts__adapter_set_stop(a, stop);
  }
}

static void chat_event(ts_adapter *a, ts_jv *jv, ts_view event) {
  (void)event;
  if (ts_jv_type_of(jv, 0) != TS_JV_OBJECT) {
    ts__adapter_error(a, TS_E_MS_BAD_SHAPE, NULL, 0, 0);
    return;
  }
  int err = ts_jv_get(jv, 0, "error");
  if (err >= 0 && !ts_jv_is_null(jv, err)) {
    ts__adapter_provider_error(a, jv, err, NULL);
    return;
  }
  int choices = ts_jv_get(jv, 0, "choices");
  int size = ts_jv_size(jv, choices);
  for (int k = 0, ch = ts_jv_first(jv, choices); k < size; k++, ch = ts_jv_skip(jv, ch))
    choice(a, jv, ch);
  int usage = ts_jv_get(jv, 0, "usage");
  if (ts_jv_type_of(jv, usage) == TS_JV_OBJECT) ts__adapter_set_usage(a, ts_jv_raw(jv, usage));
}

/* `[DONE]`: ends every open call, then the turn. */
static void chat_done(ts_adapter *a) { ts__adapter_turn_end(a); }

static int chat_doc(const ts_jv *jv, int root) {
  return ts_jv_get(jv, root, "choices") >= 0 ||
         ts_jv_eq(jv, ts_jv_get(jv, root, "object"), "chat.completion.chunk");
}

/* ---- the request -------------------------------------------------------------------- */

static void put_message(ts_buf *b, const ts_req_message *m) {
  switch (m->role) {
    case TS_REQ_SYSTEM:
    case TS_REQ_USER:
      ts_buf_puts(b, m->role == TS_REQ_USER ? "{\"role\":\"user\",\"content\":"
                                            : "{\"role\":\"system\",\"content\":");
      ts_buf_append_json_string(b, m->text.p, m->text.len);
      ts_buf_putc(b, '}');
      break;
    case TS_REQ_ASSISTANT:
      ts_buf_puts(b, "{\"role\":\"assistant\",\"content\":");
      if (m->text.len) ts_buf_append_json_string(b, m->text.p, m->text.len);
      else ts_buf_puts(b, "null");
      if (m->ncalls) {
        ts_buf_puts(b, ",\"tool_calls\":[");
        for (size_t i = 0; i < m->ncalls; i++) {
          const ts_req_call *c = &m->calls[i];
          if (i) ts_buf_putc(b, ',');
          ts_buf_puts(b, "{\"id\":");
          ts_buf_append_json_string(b, c->id.p, c->id.len);
          ts_buf_puts(b, ",\"type\":\"function\",\"function\":{\"name\":");
          ts_buf_append_json_string(b, c->name.p, c->name.len);
          ts_buf_puts(b, ",\"arguments\":"); /* the JSON text, as a string */
          ts_buf_append_json_string(b, c->arguments.p, c->arguments.len);
          ts_buf_puts(b, "}}");
        }
        ts_buf_putc(b, ']');
      }
      ts_buf_putc(b, '}');
      break;
    case TS_REQ_TOOL:
      ts_buf_puts(b, "{\"role\":\"tool\",\"tool_call_id\":");
      ts_buf_append_json_string(b, m->call_id.p, m->call_id.len);
      ts_buf_puts(b, ",\"content\":");
      ts__provider_result_text(b, m); /* no error flag: the content says so */
      ts_buf_putc(b, '}');
      break;
  }
}

static int chat_request(const ts_request *r, ts_buf *b) {
  ts_buf_puts(b, "{\"model\":");
  ts_buf_append_json_string(b, r->model, strlen(r->model));
  ts_buf_puts(b, ",\"stream\":true,\"stream_options\":{\"include_usage\":true},\"messages\":[");
  for (size_t i = 0; i < r->nmessages; i++) {
    if (i) ts_buf_putc(b, ',');
    put_message(b, &r->messages[i]);
  }
  ts_buf_putc(b, ']');
  ts__provider_tools(b, r, 1, "parameters");
  ts_buf_putc(b, '}');
  return b->err;
}

static const char *const chat_paths[] = {"/chat/completions", NULL};
static const ts_schema_loc chat_schemas[] = {{NULL, "function", {"parameters", NULL}},
                                             {NULL, NULL, {NULL, NULL}}};

/* OpenAI and every server that speaks its Chat Completions (Groq, Mistral, DeepSeek,
 * xAI, Cerebras, OpenRouter, vLLM, Ollama's /v1, llama.cpp). */
const ts_provider ts_provider_openai_chat = {
    .format = TS_FORMAT_OPENAI_CHAT,
    .name = "openai-chat",
    .alias = "openai",
    .detect_doc = chat_doc,
    .sentinel = "[DONE]",
    .event = chat_event,
    .on_sentinel = chat_done,
    .eof_after_stop = 1,
    .named_errors = 1,
    .request = chat_request,
    .url_suffix = "/chat/completions",
    .key_env = "OPENAI_API_KEY",
    .auth_header = "Authorization",
    .auth_prefix = "Bearer ",
    .path_suffixes = chat_paths,
    .schemas = chat_schemas,
};
