/*
 * gemini.c: Gemini `alt=sse` chunks into the adapter's vocabulary.
 *
 * Each chunk is a whole GenerateContentResponse: `candidates[0].content.parts[]` holds
 * text parts and `functionCall` parts, and a function call always arrives whole, its
 * `args` an object rather than a string of JSON text. So a functionCall part becomes
 * CALL_BEGIN, one CALL_ARGS with the `args` object's own JSON text (exactly as sent:
 * the downstream tokenizer reads it like any other argument text), and CALL_END, all
 * at once. Calls have no key; they are numbered by the order of their parts.
 *
 * Gemini has no terminal event: `finishReason` and `usageMetadata` come in the last
 * chunks, and the turn ends at EOF (ts_adapter_finish in adapter.c). An error is a
 * plain JSON body `{"error": {"code", "message", "status"}}`, possibly sent as a data
 * payload, possibly wrapped in an array.
 *
 * Not built: Vertex's argument streaming (`partialArgs` with a JSON Path per value and
 * `willContinue`). Rebuilding the arguments' JSON text from path-addressed pieces
 * faithfully needs rules (how paths open and close containers, how array elements and
 * escaped keys are spelled, how a string value continues) that the public reference
 * does not pin down, and a wrong guess would hand the tokenizer text the model never
 * meant. Such a call is reported as TS_E_MS_UNSUPPORTED (once per turn) and skipped.
 */
#define TS_ADAPTER_INTERNAL
#include "stream/adapter.h"
#include "stream/json_view.h"
#include "stream/provider.h"

#define FLAG_UNSUPPORTED_REPORTED 1u

static void function_call(ts_adapter *a, ts_jv *jv, int fc) {
  if (ts_jv_get(jv, fc, "partialArgs") >= 0 || ts_jv_is_true(jv, ts_jv_get(jv, fc, "willContinue"))) {
    unsigned *flags = ts__adapter_flags(a);
    if (!(*flags & FLAG_UNSUPPORTED_REPORTED)) {
      *flags |= FLAG_UNSUPPORTED_REPORTED;
      static const char msg[] = "Vertex partialArgs streaming is not supported";
      ts__adapter_error(a, TS_E_MS_UNSUPPORTED, msg, sizeof msg - 1, 0);
    }
    return;
  }
  int args = ts_jv_get(jv, fc, "args");
  if (args < 0 && (ts_jv_get(jv, fc, "name") < 0 || (*ts__adapter_flags(a) & FLAG_UNSUPPORTED_REPORTED)))
    return; /* names no call, or is a piece of a partialArgs call already skipped */
  ts_view id, name, none = {"", 0};
  if (ts__adapter_string(a, jv, ts_jv_get(jv, fc, "id"), &id) < 0) return;
  if (ts__adapter_string(a, jv, ts_jv_get(jv, fc, "name"), &name) < 0) return;
  int slot = ts__adapter_call_begin(a, -1, none, id, name);
  if (slot < 0) return;
  if (args >= 0 && !ts_jv_is_null(jv, args)) ts__adapter_call_args(a, slot, ts_jv_raw(jv, args));
  ts__adapter_call_end(a, slot);
}

static void chunk(ts_adapter *a, ts_jv *jv, int root) {
  if (ts_jv_type_of(jv, root) != TS_JV_OBJECT) {
    ts__adapter_error(a, TS_E_MS_BAD_SHAPE, NULL, 0, 0);
    return;
  }
  int err = ts_jv_get(jv, root, "error");
  if (err >= 0 && !ts_jv_is_null(jv, err)) {
    ts__adapter_provider_error(a, jv, err, NULL);
    return;
  }
  int cand = ts_jv_first(jv, ts_jv_get(jv, root, "candidates"));
  int parts = ts_jv_get(jv, ts_jv_get(jv, cand, "content"), "parts");
  int size = ts_jv_size(jv, parts);
  ts_view text;
  for (int k = 0, part = ts_jv_first(jv, parts); k < size; k++, part = ts_jv_skip(jv, part)) {
    if (ts_jv_is_true(jv, ts_jv_get(jv, part, "thought"))) continue; /* thinking summary */
    int fc = ts_jv_get(jv, part, "functionCall");
    if (ts_jv_type_of(jv, fc) == TS_JV_OBJECT)
      function_call(a, jv, fc);
    else if (ts__adapter_string(a, jv, ts_jv_get(jv, part, "text"), &text) > 0)
      ts__adapter_text(a, text);
  }
  ts_view stop;
  if (ts__adapter_string(a, jv, ts_jv_get(jv, cand, "finishReason"), &stop) > 0) {
    ts__adapter_set_stop(a, stop);
  } else if (!ts__adapter_has_stop(a) &&
             ts__adapter_string(a, jv, ts_jv_get(jv, ts_jv_get(jv, root, "promptFeedback"), "blockReason"),
                           &stop) > 0) {
    ts__adapter_set_stop(a, stop);
  }
  int usage = ts_jv_get(jv, root, "usageMetadata");
  if (ts_jv_type_of(jv, usage) == TS_JV_OBJECT) ts__adapter_set_usage(a, ts_jv_raw(jv, usage));
}

static void gemini_event(ts_adapter *a, ts_jv *jv, ts_view event) {
  (void)event;
  if (ts_jv_type_of(jv, 0) == TS_JV_ARRAY) {
    int size = ts_jv_size(jv, 0);
    for (int k = 0, e = ts_jv_first(jv, 0); k < size && !ts_adapter_done(a); k++, e = ts_jv_skip(jv, e))
      chunk(a, jv, e);
  } else {
    chunk(a, jv, 0);
  }
}

static int gemini_doc(const ts_jv *jv, int root) {
  return ts_jv_get(jv, root, "candidates") >= 0 || ts_jv_get(jv, root, "usageMetadata") >= 0 ||
         ts_jv_get(jv, root, "promptFeedback") >= 0;
}

static const char *const gemini_paths[] = {":streamGenerateContent", NULL};
static const ts_schema_loc gemini_schemas[] = {
    {"functionDeclarations", NULL, {"parameters", "parametersJsonSchema"}},
    {"function_declarations", NULL, {"parameters", "parametersJsonSchema"}},
    {NULL, NULL, {NULL, NULL}}};

/* Gemini (generativelanguage.googleapis.com) and Vertex AI. `run` does not write its
 * requests yet. */
const ts_provider ts_provider_gemini = {
    .format = TS_FORMAT_GEMINI,
    .name = "gemini",
    .detect_doc = gemini_doc,
    .event = gemini_event,
    .ends_at_eof = 1,
    .url_suffix = "/models/{model}:streamGenerateContent?alt=sse",
    .key_env = "GEMINI_API_KEY",
    .auth_header = "x-goog-api-key",
    .auth_prefix = "",
    .path_suffixes = gemini_paths,
    .schemas = gemini_schemas,
};
