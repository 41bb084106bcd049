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
#include "stream/openai_chat.h"

#include <string.h>

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

void ts__openai_chat_event(ts_adapter *a, ts_jv *jv, ts_view event) {
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

void ts__openai_chat_done(ts_adapter *a) { ts__adapter_turn_end(a); }
