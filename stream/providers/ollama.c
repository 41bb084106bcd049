/*
 * ollama.c: Ollama's native chat stream (/api/chat) into the adapter's vocabulary.
 *
 * Ollama answers a streamed /api/chat with newline-delimited JSON (framed by json_seq.h):
 * one object per line, `{"model","created_at","message":{"role":"assistant","content":
 * "...","thinking":"...","tool_calls":[...]},"done":false}`, and a last one with
 * `"done":true`, its `done_reason` ("stop", "length", ...) and the counters
 * (`prompt_eval_count`, `eval_count` and the durations in nanoseconds).
 *
 * A tool call always arrives whole, in one line: `{"id"?, "function":{"index"?, "name",
 * "arguments":{...}}}` with the arguments an object, not a string of JSON. So each entry
 * is CALL_BEGIN, one CALL_ARGS with the object's own JSON text (as sent: the tokenizer
 * downstream reads it like any argument text), and CALL_END, at once; calls are numbered
 * by their order of appearance. Older servers send no `id`; the tap then synthesizes one.
 *
 * Usage: Ollama has no usage object. The turn's usage is one made of the last line's
 * counters that are present, in this order: prompt_eval_count, eval_count,
 * total_duration, load_duration, prompt_eval_duration, eval_duration (values as sent).
 *
 * The turn ends at the `done:true` line; EOF before it is truncation. An error is
 * `{"error":"..."}`: the provider's terminal error. `thinking` text is not the answer and
 * is not reported.
 */
#define TS_ADAPTER_INTERNAL
#include <string.h>

#include "stream/adapter.h"
#include "stream/json_view.h"
#include "stream/provider.h"

static void tool_call(ts_adapter *a, ts_jv *jv, int tc) {
  int fn = ts_jv_get(jv, tc, "function");
  if (ts_jv_type_of(jv, fn) != TS_JV_OBJECT) {
    ts__adapter_error(a, TS_E_MS_BAD_SHAPE, NULL, 0, 0);
    return;
  }
  int args = ts_jv_get(jv, fn, "arguments");
  ts_view raw = ts_jv_raw(jv, args); /* before decoding anything in place */
  ts_view id, name, text, none = {"", 0};
  if (ts__adapter_string(a, jv, ts_jv_get(jv, tc, "id"), &id) < 0) return;
  if (ts__adapter_string(a, jv, ts_jv_get(jv, fn, "name"), &name) < 0) return;
  int slot = ts__adapter_call_begin(a, -1, none, id, name);
  if (slot < 0) return;
  if (ts_jv_type_of(jv, args) == TS_JV_OBJECT) {
    ts__adapter_call_args(a, slot, raw);
  } else if (ts_jv_type_of(jv, args) == TS_JV_STRING) { /* some models: JSON text */
    if (ts__adapter_string(a, jv, args, &text) > 0) ts__adapter_call_args(a, slot, text);
  }
  ts__adapter_call_end(a, slot);
}

/* The counters of the last line as a usage object (see the top of the file). */
static void usage(ts_adapter *a, ts_jv *jv) {
  static const char *const keys[] = {"prompt_eval_count", "eval_count",           "total_duration",
                                     "load_duration",     "prompt_eval_duration", "eval_duration"};
  char out[512];
  size_t o = 0;
  out[o++] = '{';
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
    int v = ts_jv_get(jv, 0, keys[k]);
    if (ts_jv_type_of(jv, v) != TS_JV_PRIMITIVE || ts_jv_is_null(jv, v)) continue;
    ts_view raw = ts_jv_raw(jv, v);
    size_t kl = strlen(keys[k]);
    if (o + kl + raw.len + 6 > sizeof out) break; /* counters are short numbers */
    if (o > 1) out[o++] = ',';
    out[o++] = '"';
    memcpy(out + o, keys[k], kl), o += kl;
    out[o++] = '"';
    out[o++] = ':';
    memcpy(out + o, raw.p, raw.len), o += raw.len;
  }
  out[o++] = '}';
  if (o > 2) ts__adapter_set_usage(a, (ts_view){out, o});
}

static void ollama_event(ts_adapter *a, ts_jv *jv, ts_view event) {
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
  int msg = ts_jv_get(jv, 0, "message");
  int calls = ts_jv_get(jv, msg, "tool_calls");
  if (ts_jv_type_of(jv, calls) == TS_JV_ARRAY) {
    int n = ts_jv_size(jv, calls);
    for (int k = 0, tc = ts_jv_first(jv, calls); k < n; k++, tc = ts_jv_skip(jv, tc))
      tool_call(a, jv, tc);
  }
  ts_view text;
  if (ts__adapter_string(a, jv, ts_jv_get(jv, msg, "content"), &text) > 0) ts__adapter_text(a, text);
  if (ts_jv_is_true(jv, ts_jv_get(jv, 0, "done"))) {
    ts_view stop;
    if (ts__adapter_string(a, jv, ts_jv_get(jv, 0, "done_reason"), &stop) > 0)
      ts__adapter_set_stop(a, stop);
    usage(a, jv);
    ts__adapter_turn_end(a);
  }
}

/* A chat line: a `message` object beside `done`. */
static int ollama_doc(const ts_jv *jv, int root) {
  return ts_jv_type_of(jv, ts_jv_get(jv, root, "message")) == TS_JV_OBJECT &&
         ts_jv_get(jv, root, "done") >= 0;
}

/* ---- the request: /api/chat ------------------------------------------------------------ */

static void put_text_message(ts_buf *b, const char *role, ts_view text) {
  ts_buf_puts(b, "{\"role\":\"");
  ts_buf_puts(b, role);
  ts_buf_puts(b, "\",\"content\":");
  ts_buf_append_json_string(b, text.p, text.len);
}

static int ollama_request(const ts_request *r, ts_buf *b) {
  ts_buf_puts(b, "{\"model\":");
  ts_buf_append_json_string(b, r->model, strlen(r->model));
  ts_buf_puts(b, ",\"stream\":true,\"messages\":[");
  for (size_t i = 0; i < r->nmessages; i++) {
    const ts_req_message *m = &r->messages[i];
    if (i) ts_buf_putc(b, ',');
    if (m->role == TS_REQ_SYSTEM || m->role == TS_REQ_USER) {
      put_text_message(b, m->role == TS_REQ_USER ? "user" : "system", m->text);
    } else if (m->role == TS_REQ_ASSISTANT) {
      put_text_message(b, "assistant", m->text);
      if (m->ncalls) {
        ts_buf_puts(b, ",\"tool_calls\":[");
        for (size_t k = 0; k < m->ncalls; k++) {
          const ts_req_call *c = &m->calls[k];
          if (k) ts_buf_putc(b, ',');
          ts_buf_puts(b, "{\"function\":{\"name\":");
          ts_buf_append_json_string(b, c->name.p, c->name.len);
          ts_buf_puts(b, ",\"arguments\":"); /* an object, as Ollama sends it */
          ts_buf_append(b, c->arguments.p, c->arguments.len);
          ts_buf_puts(b, "}}");
        }
        ts_buf_putc(b, ']');
      }
    } else {
      /* results are matched to calls by order and by tool name: Ollama has no ids to quote,
       * and no error flag: an error says so in its content */
      ts_buf_puts(b, "{\"role\":\"tool\",\"content\":");
      ts__provider_result_text(b, m);
      const ts_req_call *c = NULL;
      for (size_t j = i; j-- > 0 && !c;) {
        const ts_req_message *p = &r->messages[j];
        for (size_t k = 0; p->role == TS_REQ_ASSISTANT && k < p->ncalls; k++)
          if (p->calls[k].id.len == m->call_id.len &&
              !memcmp(p->calls[k].id.p, m->call_id.p, m->call_id.len))
            c = &p->calls[k];
        if (p->role == TS_REQ_ASSISTANT) break;
      }
      if (c) {
        ts_buf_puts(b, ",\"tool_name\":");
        ts_buf_append_json_string(b, c->name.p, c->name.len);
      }
    }
    ts_buf_putc(b, '}');
  }
  ts_buf_putc(b, ']');
  ts__provider_tools(b, r, 1, "parameters");
  ts_buf_putc(b, '}');
  return b->err;
}

static const char *const ollama_paths[] = {"/api/chat", NULL};
static const ts_schema_loc ollama_schemas[] = {{NULL, "function", {"parameters", NULL}},
                                               {NULL, NULL, {NULL, NULL}}};

const ts_provider ts_provider_ollama = {
    .format = TS_FORMAT_OLLAMA,
    .name = "ollama",
    .detect_doc = ollama_doc,
    .event = ollama_event,
    .request = ollama_request,
    .url_suffix = "/api/chat",
    .key_env = "OLLAMA_API_KEY",
    .auth_header = "Authorization",
    .auth_prefix = "Bearer ",
    .path_suffixes = ollama_paths,
    .schemas = ollama_schemas,
    .media_type = "application/x-ndjson", /* /api/chat streams newline-delimited JSON */
};
