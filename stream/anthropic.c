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
 */
#define TS_ADAPTER_INTERNAL
#include "stream/anthropic.h"

#include <string.h>

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

void ts__anthropic_event(ts_adapter *a, ts_jv *jv, ts_view event) {
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
    if (ts_jv_type_of(jv, usage) == TS_JV_OBJECT) ts__adapter_set_usage(a, ts_jv_raw(jv, usage));
  } else if (type_is(type, "message_start")) {
    int usage = ts_jv_get(jv, ts_jv_get(jv, 0, "message"), "usage");
    if (ts_jv_type_of(jv, usage) == TS_JV_OBJECT) ts__adapter_set_usage(a, ts_jv_raw(jv, usage));
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
