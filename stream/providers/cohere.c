/*
 * cohere.c: Cohere's v2 chat stream (POST /v2/chat, "stream": true) into the adapter's
 * vocabulary.
 *
 * The stream is SSE; every event names itself twice, by its `event:` field and by the
 * payload's `type`, in kebab case: `message-start`, `tool-plan-delta` (the model's plan,
 * in words), `tool-call-start` (one call: `index`, and `delta.message.tool_calls` - an
 * object, not an array - with `id`, `type` and `function.name`, its `arguments` empty),
 * `tool-call-delta` (`delta.message.tool_calls.function.arguments`: the next fragment of
 * the arguments' JSON text), `tool-call-end`, `content-start` / `content-delta`
 * (`delta.message.content.text`) / `content-end` for text, `citation-start` /
 * `citation-end`, and `message-end` with `delta.finish_reason` (`COMPLETE`, `TOOL_CALL`,
 * `MAX_TOKENS`, ...) and `delta.usage` (`billed_units`, `tokens`). With parallel calls
 * the start, delta, end sequence repeats per call. A generation that failed midway ends
 * with `message-end` whose `delta.error` holds the message and `finish_reason` is
 * `ERROR`: the provider's terminal error (its message; without one, a fixed text).
 *
 * Calls are keyed by the event's `index`. `message-end` ends every call still open and
 * the turn; EOF before it is truncation. `tool-plan-delta` is the model thinking aloud,
 * not its answer, and is not reported. An error reply is a plain JSON body,
 * `{"id":...,"message":"..."}` (no `error` member): the provider's terminal error.
 */
#define TS_ADAPTER_INTERNAL
#include <string.h>

#include "stream/adapter.h"
#include "stream/json_view.h"
#include "stream/provider.h"

static int is(ts_view v, const char *lit) {
  size_t n = strlen(lit);
  return v.len == n && memcmp(v.p, lit, n) == 0;
}

/* delta.message.tool_calls of this event, or -1. */
static int tool_calls(ts_jv *jv) {
  return ts_jv_get(jv, ts_jv_get(jv, ts_jv_get(jv, 0, "delta"), "message"), "tool_calls");
}

static int call_of(ts_adapter *a, ts_jv *jv) {
  int64_t n;
  if (ts_jv_int(jv, ts_jv_get(jv, 0, "index"), &n) != 0) return -1;
  return ts__adapter_call_by_nkey(a, n);
}

static void call_start(ts_adapter *a, ts_jv *jv) {
  int64_t index;
  int tc = tool_calls(jv);
  if (ts_jv_int(jv, ts_jv_get(jv, 0, "index"), &index) != 0 || index < 0 ||
      ts_jv_type_of(jv, tc) != TS_JV_OBJECT) {
    ts__adapter_error(a, TS_E_MS_BAD_SHAPE, NULL, 0, 0);
    return;
  }
  int fn = ts_jv_get(jv, tc, "function");
  ts_view id, name, args, none = {"", 0};
  if (ts__adapter_string(a, jv, ts_jv_get(jv, tc, "id"), &id) < 0) return;
  if (ts__adapter_string(a, jv, ts_jv_get(jv, fn, "name"), &name) < 0) return;
  int slot = ts__adapter_call_begin(a, index, none, id, name);
  if (slot >= 0 && ts__adapter_string(a, jv, ts_jv_get(jv, fn, "arguments"), &args) > 0)
    ts__adapter_call_args(a, slot, args);
}

static void cohere_event(ts_adapter *a, ts_jv *jv, ts_view event) {
  if (ts_jv_type_of(jv, 0) != TS_JV_OBJECT) {
    ts__adapter_error(a, TS_E_MS_BAD_SHAPE, NULL, 0, 0);
    return;
  }
  ts_view type = ts__adapter_event_type(jv, event), text;
  int delta = ts_jv_get(jv, 0, "delta");
  if (is(type, "tool-call-delta")) {
    int slot = call_of(a, jv);
    int fn = ts_jv_get(jv, tool_calls(jv), "function");
    if (slot >= 0 && ts__adapter_string(a, jv, ts_jv_get(jv, fn, "arguments"), &text) > 0)
      ts__adapter_call_args(a, slot, text);
  } else if (is(type, "content-delta")) {
    int content = ts_jv_get(jv, ts_jv_get(jv, delta, "message"), "content");
    if (ts__adapter_string(a, jv, ts_jv_get(jv, content, "text"), &text) > 0) ts__adapter_text(a, text);
  } else if (is(type, "tool-call-start")) {
    call_start(a, jv);
  } else if (is(type, "tool-call-end")) {
    ts__adapter_call_end(a, call_of(a, jv));
  } else if (is(type, "message-end")) {
    ts_view stop, msg;
    int err = ts_jv_get(jv, delta, "error");
    int has_stop = ts__adapter_string(a, jv, ts_jv_get(jv, delta, "finish_reason"), &stop) > 0;
    if (ts_jv_type_of(jv, err) == TS_JV_STRING && ts__adapter_string(a, jv, err, &msg) > 0 && msg.len) {
      ts__adapter_provider_error(a, jv, err, NULL); /* the generation failed */
      return;
    }
    if (has_stop && is(stop, "ERROR")) {
      ts__adapter_provider_error(a, jv, -1, "the generation failed (finish_reason ERROR)");
      return;
    }
    if (has_stop) ts__adapter_set_stop(a, stop);
    int usage = ts_jv_get(jv, delta, "usage");
    if (ts_jv_type_of(jv, usage) == TS_JV_OBJECT) ts__adapter_set_usage(a, ts_jv_raw(jv, usage));
    ts__adapter_turn_end(a);
  } else if (ts_jv_get(jv, 0, "type") < 0) {
    /* an error body: {"message": ...} (or an `error` member, as proxies write it) */
    int err = ts_jv_get(jv, 0, "error");
    if (err >= 0 && !ts_jv_is_null(jv, err))
      ts__adapter_provider_error(a, jv, err, NULL);
    else if (ts_jv_type_of(jv, ts_jv_get(jv, 0, "message")) == TS_JV_STRING)
      ts__adapter_provider_error(a, jv, 0, NULL);
  }
  /* message-start, tool-plan-delta, content-start/end, citations: nothing for us */
}

static int cohere_name(ts_view name) {
  static const char *const names[] = {"message-start", "message-end",     "content-start",
                                      "content-delta", "content-end",     "tool-plan-delta",
                                      "tool-call-start", "tool-call-delta", "tool-call-end",
                                      "citation-start", "citation-end"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (is(name, names[i])) return 1;
  return 0;
}

/* ---- the request: /v2/chat --------------------------------------------------------------- */

static int cohere_request(const ts_request *r, ts_buf *b) {
  ts_buf_puts(b, "{\"model\":");
  ts_buf_append_json_string(b, r->model, strlen(r->model));
  ts_buf_puts(b, ",\"stream\":true,\"messages\":[");
  for (size_t i = 0; i < r->nmessages; i++) {
    const ts_req_message *m = &r->messages[i];
    if (i) ts_buf_putc(b, ',');
    if (m->role == TS_REQ_TOOL) {
      ts_buf_puts(b, "{\"role\":\"tool\",\"tool_call_id\":");
      ts_buf_append_json_string(b, m->call_id.p, m->call_id.len);
      ts_buf_puts(b, ",\"content\":");
      ts__provider_result_text(b, m);
      ts_buf_putc(b, '}');
      continue;
    }
    ts_buf_puts(b, m->role == TS_REQ_USER ? "{\"role\":\"user\"" : m->role == TS_REQ_SYSTEM
                                                                    ? "{\"role\":\"system\""
                                                                    : "{\"role\":\"assistant\"");
    if (m->role != TS_REQ_ASSISTANT || m->text.len || !m->ncalls) {
      ts_buf_puts(b, ",\"content\":");
      ts_buf_append_json_string(b, m->text.p, m->text.len);
    }
    if (m->ncalls) {
      ts_buf_puts(b, ",\"tool_calls\":[");
      for (size_t k = 0; k < m->ncalls; k++) {
        const ts_req_call *c = &m->calls[k];
        if (k) ts_buf_putc(b, ',');
        ts_buf_puts(b, "{\"id\":");
        ts_buf_append_json_string(b, c->id.p, c->id.len);
        ts_buf_puts(b, ",\"type\":\"function\",\"function\":{\"name\":");
        ts_buf_append_json_string(b, c->name.p, c->name.len);
        ts_buf_puts(b, ",\"arguments\":");
        ts_buf_append_json_string(b, c->arguments.p, c->arguments.len);
        ts_buf_puts(b, "}}");
      }
      ts_buf_putc(b, ']');
    }
    ts_buf_putc(b, '}');
  }
  ts_buf_putc(b, ']');
  ts__provider_tools(b, r, 1, "parameters");
  ts_buf_putc(b, '}');
  return b->err;
}

static const char *const cohere_paths[] = {"/v2/chat", NULL};
static const ts_schema_loc cohere_schemas[] = {{NULL, "function", {"parameters", NULL}},
                                               {NULL, NULL, {NULL, NULL}}};

const ts_provider ts_provider_cohere = {
    .format = TS_FORMAT_COHERE,
    .name = "cohere",
    .detect_name = cohere_name,
    .event = cohere_event,
    .named_errors = 1,
    .request = cohere_request,
    .url_suffix = "/v2/chat",
    .host_hint = "cohere.com",
    .key_env = "CO_API_KEY",
    .auth_header = "Authorization",
    .auth_prefix = "Bearer ",
    .path_suffixes = cohere_paths,
    .schemas = cohere_schemas,
};
