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
 * provider's terminal error.
 *
 * Calls are keyed by contentBlockIndex. The turn ends at `metadata` (the last message);
 * EOF after `messageStop` without it also ends the turn normally; EOF before is
 * truncation.
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

static int bedrock_name(ts_view name) {
  return is(name, "messageStart") || is(name, "contentBlockStart") || is(name, "contentBlockDelta") ||
         is(name, "contentBlockStop") || is(name, "messageStop") || is(name, "metadata") ||
         (ends_with(name, "Exception") && name.len > 9); /* throttlingException, ... */
}

static const char *const bedrock_paths[] = {"/converse-stream", NULL};
/* Tool schemas: Bedrock declares them under toolConfig.tools[].toolSpec.inputSchema.json,
 * outside the top-level `tools` array the schema walker reads: none listed yet. */
static const ts_schema_loc bedrock_schemas[] = {{NULL, NULL, {NULL, NULL}}};

/* Bedrock's ConverseStream. `run` does not write its requests (they need AWS SigV4
 * signing); the tap and the gateway read its replies. */
const ts_provider ts_provider_bedrock = {
    .format = TS_FORMAT_BEDROCK,
    .name = "bedrock",
    .detect_name = bedrock_name,
    .event = bedrock_event,
    .eof_after_stop = 1,
    .url_suffix = "/converse-stream",
    .key_env = "AWS_BEARER_TOKEN_BEDROCK",
    .auth_header = "Authorization",
    .auth_prefix = "Bearer ",
    .path_suffixes = bedrock_paths,
    .schemas = bedrock_schemas,
};
