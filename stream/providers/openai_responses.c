/*
 * openai_responses.c: Responses API events into the adapter's vocabulary.
 *
 * Every payload names itself with `type`. A function call is an output item: it begins
 * with `response.output_item.added` (item.type `function_call`, item.id the key every
 * later event uses, item.call_id the id the tool result must quote, item.name), its
 * arguments come as `response.function_call_arguments.delta` events keyed by
 * `item_id`, and it ends twice over: `response.function_call_arguments.done` and then
 * `response.output_item.done`. The first of the two ends the call; the second finds it
 * ended and does nothing.
 *
 * The `.done` events and `output_item.added` also carry the arguments whole. Reading
 * them as well as the deltas would report the text twice, so they count only for a
 * call that received no delta at all (a server or proxy that sends calls whole). Some
 * gateways send a call only as its `output_item.done`, with no `.added` before it: an
 * item done whose id names no call begins the call there, whole (as `.added` would,
 * then its end). Such replies are noticed by their first `.done` (before any call began,
 * or after a call began so) and have their `.done` events read whole (responses_keep).
 *
 * Items the client runs that are not function calls are calls too, each with its item id
 * as key and its `call_id`:
 *   - `custom_tool_call` (a custom tool with free-form input): `input` streams as
 *     `response.custom_tool_call_input.delta` text and is whole in
 *     `response.custom_tool_call_input.done`. Its arguments are the JSON object
 *     {"input": "<the text>"}: `{"input":"` goes out when the call begins, each delta
 *     JSON-escaped as it arrives, and `"}` when the input is done, so the tokenizer and
 *     the progress rules (progress argument `input`) work on it unchanged.
 *   - `local_shell_call` and `shell_call`: tool `local_shell` / `shell`, arguments the
 *     item's `action` object (the commands), taken when the item is done (or at
 *     `output_item.added` when that already carries a completed item).
 *   - `apply_patch_call`: tool `apply_patch`, arguments the item's `operation` object
 *     (type, path and diff), likewise.
 *
 * The turn ends with `response.completed`, `response.incomplete` (reason in
 * `incomplete_details`) or `response.failed` (an error, terminal). `error` events come
 * flat (`code`, `message` at the top) or nested (`error: {...}`).
 */
#define TS_ADAPTER_INTERNAL
#include <stdint.h>
#include <string.h>

#include "stream/adapter.h"
#include "stream/json_scan.h"
#include "stream/json_scan_impl.h"
#include "stream/json_shape.h"
#include "stream/json_view.h"
#include "stream/provider.h"

static int name_is(ts_view v, const char *lit) {
  size_t n = strlen(lit);
  return v.len == n && memcmp(v.p, lit, n) == 0;
}

/* `event:` names whose payload is not needed and need not be parsed (`response.created`,
 * `response.in_progress`, `response.queued`: they echo the whole request, tools and all,
 * and would only spend tokens). */
static int responses_skip(ts_view event) {
  if (event.len != 15 && event.len != 16 && event.len != 20) return 0; /* the common case, at once */
  return name_is(event, "response.created") || name_is(event, "response.in_progress") ||
         name_is(event, "response.queued");
}

/* Ends the call of item key `key_tok`, first reporting `args_tok` (the whole arguments)
 * if the call got no delta. */
static void end_call(ts_adapter *a, ts_jv *jv, int key_tok, int args_tok) {
  ts_view key, args;
  if (ts__adapter_string(a, jv, key_tok, &key) <= 0) return;
  int slot = ts__adapter_call_by_key(a, key);
  if (slot < 0 || ts__adapter_call_ended(a, slot)) return;
  if (!ts__adapter_call_has_args(a, slot) && ts__adapter_string(a, jv, args_tok, &args) > 0)
    ts__adapter_call_args(a, slot, args);
  ts__adapter_call_end(a, slot);
}

/* The turn's flag (ts__adapter_flags): a call came whole in its output_item.done. */
#define FLAG_DONE_ONLY 1u

/* Call notes (ts__adapter_call_tag) for custom tool calls. */
#define TAG_CUSTOM 1u  /* free-form input wrapped as {"input": ...} */
#define TAG_DELTA 2u   /* an input delta arrived */
#define TAG_ITEM 4u    /* not a function call: its arguments come with its item's end */

/* The item types that are calls, with the tool name of those that have no `name` and the
 * member holding their arguments object. */
static const struct {
  const char *type, *tool, *args;
} kinds[] = {
    {"function_call", NULL, NULL},
    {"custom_tool_call", NULL, NULL},
    {"local_shell_call", "local_shell", "action"},
    {"shell_call", "shell", "action"},
    {"apply_patch_call", "apply_patch", "operation"},
};

static int kind_of(ts_jv *jv, int item) {
  int t = ts_jv_get(jv, item, "type");
  for (int k = 0; k < (int)(sizeof kinds / sizeof kinds[0]); k++)
    if (ts_jv_eq(jv, t, kinds[k].type)) return k;
  return -1;
}

/* The end of a custom call's input: the whole `input` (token) if no delta came, the
 * closing of the wrapper, the call's end. */
static void custom_done(ts_adapter *a, ts_jv *jv, int slot, int input) {
  if (slot < 0 || ts__adapter_call_ended(a, slot)) return;
  ts_view text;
  if (!(*ts__adapter_call_tag(a, slot) & TAG_DELTA) && ts__adapter_string(a, jv, input, &text) > 0)
    ts__adapter_call_args_escaped(a, slot, text);
  ts__adapter_call_args(a, slot, (ts_view){"\"}", 2});
  ts__adapter_call_end(a, slot);
}

static void item_added(ts_adapter *a, ts_jv *jv, int item) {
  int k = kind_of(jv, item);
  if (k < 0) return;
  int args_tok = kinds[k].args ? ts_jv_get(jv, item, kinds[k].args) : -1;
  ts_view args_raw = ts_jv_raw(jv, args_tok); /* before decoding in place */
  ts_view key, id, name, args;
  if (ts__adapter_string(a, jv, ts_jv_get(jv, item, "id"), &key) < 0) return;
  if (ts__adapter_string(a, jv, ts_jv_get(jv, item, "call_id"), &id) < 0) return;
  if (kinds[k].tool)
    name = (ts_view){kinds[k].tool, strlen(kinds[k].tool)};
  else if (ts__adapter_string(a, jv, ts_jv_get(jv, item, "name"), &name) < 0)
    return;
  int slot = ts__adapter_call_begin(a, -1, key, id, name);
  if (slot < 0) return;
  if (k > 0) *ts__adapter_call_tag(a, slot) = TAG_ITEM;
  if (k == 0) {
    if (ts__adapter_string(a, jv, ts_jv_get(jv, item, "arguments"), &args) > 0)
      ts__adapter_call_args(a, slot, args);
  } else if (k == 1) {
    *ts__adapter_call_tag(a, slot) = TAG_CUSTOM | TAG_ITEM;
    ts__adapter_call_args(a, slot, (ts_view){"{\"input\":\"", 10});
    if (ts_jv_eq(jv, ts_jv_get(jv, item, "status"), "completed"))
      custom_done(a, jv, slot, ts_jv_get(jv, item, "input"));
  } else if (ts_jv_type_of(jv, args_tok) == TS_JV_OBJECT &&
             ts_jv_eq(jv, ts_jv_get(jv, item, "status"), "completed")) {
    ts__adapter_call_args(a, slot, args_raw);
    ts__adapter_call_end(a, slot);
  }
}

/* output_item.done of a call that is not a function call. */
static void item_done(ts_adapter *a, ts_jv *jv, int item, int k) {
  ts_view key;
  int args_tok = kinds[k].args ? ts_jv_get(jv, item, kinds[k].args) : -1;
  ts_view args_raw = ts_jv_raw(jv, args_tok);
  if (ts__adapter_string(a, jv, ts_jv_get(jv, item, "id"), &key) <= 0) return;
  int slot = ts__adapter_call_by_key(a, key);
  if (slot < 0 || ts__adapter_call_ended(a, slot)) return;
  if (k == 1) {
    custom_done(a, jv, slot, ts_jv_get(jv, item, "input"));
    return;
  }
  if (!ts__adapter_call_has_args(a, slot) && ts_jv_type_of(jv, args_tok) == TS_JV_OBJECT)
    ts__adapter_call_args(a, slot, args_raw);
  ts__adapter_call_end(a, slot);
}

static void turn_end(ts_adapter *a, ts_jv *jv, int resp, const char *dflt, int incomplete) {
  ts_view stop = {dflt, strlen(dflt)}, v;
  int status = ts_jv_get(jv, resp, "status");
  int reason = ts_jv_get(jv, ts_jv_get(jv, resp, "incomplete_details"), "reason");
  if (incomplete && ts_jv_type_of(jv, reason) == TS_JV_STRING) {
    if (ts__adapter_string(a, jv, reason, &v) > 0) stop = v;
  } else if (ts_jv_type_of(jv, status) == TS_JV_STRING) {
    if (ts__adapter_string(a, jv, status, &v) > 0) stop = v;
  }
  ts__adapter_set_stop(a, stop);
  int usage = ts_jv_get(jv, resp, "usage");
  if (ts_jv_type_of(jv, usage) == TS_JV_OBJECT) ts__adapter_set_usage(a, ts_jv_raw(jv, usage));
  ts__adapter_turn_end(a);
}

static void responses_event(ts_adapter *a, ts_jv *jv, ts_view event) {
  if (ts_jv_type_of(jv, 0) != TS_JV_OBJECT) {
    ts__adapter_error(a, TS_E_MS_BAD_SHAPE, NULL, 0, 0);
    return;
  }
  ts_view type = ts__adapter_event_type(jv, event);
  ts_view text;
  int resp = ts_jv_get(jv, 0, "response");
  if (name_is(type, "response.output_text.delta")) {
    if (ts__adapter_string(a, jv, ts_jv_get(jv, 0, "delta"), &text) > 0) ts__adapter_text(a, text);
  } else if (name_is(type, "response.function_call_arguments.delta")) {
    ts_view key;
    if (ts__adapter_string(a, jv, ts_jv_get(jv, 0, "item_id"), &key) <= 0) return;
    int slot = ts__adapter_call_by_key(a, key);
    if (slot >= 0 && ts__adapter_string(a, jv, ts_jv_get(jv, 0, "delta"), &text) > 0)
      ts__adapter_call_args(a, slot, text);
  } else if (name_is(type, "response.custom_tool_call_input.delta")) {
    ts_view key;
    if (ts__adapter_string(a, jv, ts_jv_get(jv, 0, "item_id"), &key) <= 0) return;
    int slot = ts__adapter_call_by_key(a, key);
    if (slot < 0 || ts__adapter_call_ended(a, slot) || !(*ts__adapter_call_tag(a, slot) & TAG_CUSTOM))
      return;
    if (ts__adapter_string(a, jv, ts_jv_get(jv, 0, "delta"), &text) > 0) {
      *ts__adapter_call_tag(a, slot) |= TAG_DELTA;
      ts__adapter_call_args_escaped(a, slot, text);
    }
  } else if (name_is(type, "response.custom_tool_call_input.done")) {
    ts_view key;
    if (ts__adapter_string(a, jv, ts_jv_get(jv, 0, "item_id"), &key) <= 0) return;
    int slot = ts__adapter_call_by_key(a, key);
    if (slot >= 0 && (*ts__adapter_call_tag(a, slot) & TAG_CUSTOM))
      custom_done(a, jv, slot, ts_jv_get(jv, 0, "input"));
  } else if (name_is(type, "response.output_item.added")) {
    item_added(a, jv, ts_jv_get(jv, 0, "item"));
  } else if (name_is(type, "response.function_call_arguments.done")) {
    end_call(a, jv, ts_jv_get(jv, 0, "item_id"), ts_jv_get(jv, 0, "arguments"));
  } else if (name_is(type, "response.output_item.done")) {
    int item = ts_jv_get(jv, 0, "item");
    int k = kind_of(jv, item);
    ts_view key;
    if (k >= 0 && ts__adapter_string(a, jv, ts_jv_get(jv, item, "id"), &key) > 0 &&
        ts__adapter_call_by_key(a, key) < 0) { /* a call seen only here: whole, at once */
      *ts__adapter_flags(a) |= FLAG_DONE_ONLY;
      item_added(a, jv, item);
    }
    if (k == 0)
      end_call(a, jv, ts_jv_get(jv, item, "id"), ts_jv_get(jv, item, "arguments"));
    else if (k > 0)
      item_done(a, jv, item, k);
  } else if (name_is(type, "response.completed")) {
    turn_end(a, jv, resp, "completed", 0);
  } else if (name_is(type, "response.incomplete")) {
    turn_end(a, jv, resp, "incomplete", 1);
  } else if (name_is(type, "response.failed")) {
    int err = ts_jv_get(jv, resp, "error");
    ts__adapter_provider_error(a, jv, ts_jv_is_null(jv, err) ? -1 : err, "response failed");
  } else if (name_is(type, "error")) {
    int err = ts_jv_get(jv, 0, "error");
    ts__adapter_provider_error(a, jv, ts_jv_type_of(jv, err) == TS_JV_OBJECT ? err : 0, NULL);
  } else if (ts_jv_get(jv, 0, "type") < 0) {
    int err = ts_jv_get(jv, 0, "error"); /* an error body without a type */
    if (err >= 0 && !ts_jv_is_null(jv, err)) ts__adapter_provider_error(a, jv, err, NULL);
  }
}

/* ---- the one-pass reader ------------------------------------------------------------
 * Nearly every event of a call is `response.function_call_arguments.delta` (a few bytes
 * of arguments in a ~200-byte envelope); the call's `output_item.added` and `.done`
 * events, `function_call_arguments.done` (when it is not skipped unread, responses_keep)
 * and text deltas come once or rarely. These are read in one pass of the scanner
 * (stream/json_scan.h) with exactly responses_event's result: the values it needs are
 * collected as views, nothing is reported until the whole payload has been read, and
 * anything else (another type, an item that is not a function_call, a member of an
 * unexpected type, a duplicate of a member it reads, an escaped `type`, text that is not
 * JSON) returns 0 with nothing reported, for the general way. An unknown `type` seen as
 * the first member (as the API sends it) hands back at once, unread. */

enum { RF_NONE = 0, RF_TEXT, RF_ARGS_DELTA, RF_ARGS_DONE, RF_ITEM_ADDED, RF_ITEM_DONE, RF_COMPLETED, RF_INCOMPLETE };

/* The events this reader takes, by their type; RF_NONE for the rest. */
static int rf_kind(ts_view t) {
  switch (t.len) {
  case 26:
    return name_is(t, "response.output_text.delta") ? RF_TEXT
           : name_is(t, "response.output_item.added") ? RF_ITEM_ADDED : RF_NONE;
  case 25:
    return name_is(t, "response.output_item.done") ? RF_ITEM_DONE : RF_NONE;
  case 38:
    return name_is(t, "response.function_call_arguments.delta") ? RF_ARGS_DELTA : RF_NONE;
  case 37:
    return name_is(t, "response.function_call_arguments.done") ? RF_ARGS_DONE : RF_NONE;
  case 18:
    return name_is(t, "response.completed") ? RF_COMPLETED : RF_NONE;
  case 19:
    return name_is(t, "response.incomplete") ? RF_INCOMPLETE : RF_NONE;
  default:
    return RF_NONE;
  }
}

typedef struct {
  ts_json_scan_str id, call_id, name, args;
} rf_item;

/* The members of a function_call item (the scanner just entered it). 1: read, and it is
 * a function_call; 0: anything else. */
static int rf_read_item(ts_json_scan *s, rf_item *fi) {
  ts_json_item it = {.type = TS_JSON_SCAN_END}; /* (gcc cannot see that the scanner fills it) */
  unsigned seen = 0;
  int is_call = 0;
  for (;;) {
    if (ts__json_scan_next_inline(s, &it) != 1) return 0;
    if (it.type == TS_JSON_SCAN_END) break;
    ts_view k = it.key;
    if (ts_json_scan_key_is(k, "id", 2)) {
      TS__SCAN_ONCE(seen, 1);
      if (!ts_json_scan_take_str(&it, &fi->id)) return 0;
    } else if (ts_json_scan_key_is(k, "type", 4)) {
      TS__SCAN_ONCE(seen, 2);
      if (it.type != TS_JSON_SCAN_STRING || it.escaped) return 0;
      is_call = name_is(it.raw, "function_call");
      if (!is_call) return 0; /* other items: the general way */
    } else if (ts_json_scan_key_is(k, "call_id", 7)) {
      TS__SCAN_ONCE(seen, 4);
      if (!ts_json_scan_take_str(&it, &fi->call_id)) return 0;
    } else if (ts_json_scan_key_is(k, "name", 4)) {
      TS__SCAN_ONCE(seen, 8);
      if (!ts_json_scan_take_str(&it, &fi->name)) return 0;
    } else if (ts_json_scan_key_is(k, "arguments", 9)) {
      TS__SCAN_ONCE(seen, 16);
      if (!ts_json_scan_take_str(&it, &fi->args)) return 0;
    }
    if (ts_json_scan_skip(s, NULL) != 1) return 0;
  }
  return is_call;
}

/* What turn_end reads of the terminal event's `response` object. */
typedef struct {
  ts_json_scan_str status, reason; /* raw.p NULL: absent, or not a string */
  ts_view usage;                   /* p NULL: absent, or not an object */
} rf_resp;

/* The `incomplete_details` object (just entered): its `reason`. 1, or 0 to hand back. */
static int rf_read_details(ts_json_scan *s, rf_resp *r) {
  ts_json_item it = {.type = TS_JSON_SCAN_END};
  unsigned seen = 0;
  for (;;) {
    if (ts__json_scan_next_inline(s, &it) != 1) return 0;
    if (it.type == TS_JSON_SCAN_END) return 1;
    if (ts_json_scan_key_is(it.key, "reason", 6)) {
      TS__SCAN_ONCE(seen, 1);
      if (it.type == TS_JSON_SCAN_STRING) r->reason = (ts_json_scan_str){it.raw, it.escaped};
    }
    if (ts_json_scan_skip(s, NULL) != 1) return 0;
  }
}

/* The terminal event's `response` object (just entered): status, incomplete_details'
 * reason, usage; everything else, the output items with every call's whole arguments
 * first of all, is passed over by the scanner's skip (the SIMD string scan, checked, never
 * handed out or copied). 1, or 0 to hand back. */
static int rf_read_response(ts_json_scan *s, rf_resp *r) {
  ts_json_item it = {.type = TS_JSON_SCAN_END};
  unsigned seen = 0;
  for (;;) {
    if (ts__json_scan_next_inline(s, &it) != 1) return 0;
    if (it.type == TS_JSON_SCAN_END) return 1;
    ts_view k = it.key;
    if (ts_json_scan_key_is(k, "status", 6)) {
      TS__SCAN_ONCE(seen, 1);
      if (it.type == TS_JSON_SCAN_STRING) r->status = (ts_json_scan_str){it.raw, it.escaped};
    } else if (ts_json_scan_key_is(k, "incomplete_details", 18)) {
      TS__SCAN_ONCE(seen, 2);
      if (it.type == TS_JSON_SCAN_OBJECT) {
        if (!rf_read_details(s, r)) return 0;
        continue;
      }
    } else if (ts_json_scan_key_is(k, "usage", 5)) {
      TS__SCAN_ONCE(seen, 4);
      if (it.type == TS_JSON_SCAN_OBJECT) {
        if (ts_json_scan_skip(s, &r->usage) != 1) return 0;
        continue;
      }
    }
    if (ts_json_scan_skip(s, NULL) != 1) return 0;
  }
}

/* turn_end's reading with collected values. */
static void rf_turn_end(ts_adapter *a, const rf_resp *r, int incomplete) {
  ts_view stop = incomplete ? (ts_view){"incomplete", 10} : (ts_view){"completed", 9}, v;
  if (incomplete && r->reason.raw.p) {
    if (ts__adapter_decode_str(a, &r->reason, &v) > 0) stop = v;
  } else if (r->status.raw.p) {
    if (ts__adapter_decode_str(a, &r->status, &v) > 0) stop = v;
  }
  ts__adapter_set_stop(a, stop);
  if (r->usage.p) ts__adapter_set_usage(a, r->usage);
  ts__adapter_turn_end(a);
}

/* end_call's reading with collected strings. */
static void rf_end_call(ts_adapter *a, const ts_json_scan_str *key_s, const ts_json_scan_str *args_s) {
  ts_view key, args;
  if (ts__adapter_decode_str(a, key_s, &key) <= 0) return;
  int slot = ts__adapter_call_by_key(a, key);
  if (slot < 0 || ts__adapter_call_ended(a, slot)) return;
  if (!ts__adapter_call_has_args(a, slot) && ts__adapter_decode_str(a, args_s, &args) > 0)
    ts__adapter_call_args(a, slot, args);
  ts__adapter_call_end(a, slot);
}

/* The two delta events' reports, for a full reading and for a memo's. */
static void rf_delta(ts_adapter *a, int kind, const ts_json_scan_str *item_id, const ts_json_scan_str *delta) {
  ts_view v, key;
  if (kind == RF_TEXT) {
    if (ts__adapter_decode_str(a, delta, &v) > 0) ts__adapter_text(a, v);
    return;
  }
  if (ts__adapter_decode_str(a, item_id, &key) <= 0) return;
  int slot = ts__adapter_call_by_key(a, key);
  if (slot >= 0 && ts__adapter_decode_str(a, delta, &v) > 0) ts__adapter_call_args(a, slot, v);
}

static __attribute__((noinline)) int responses_full(ts_adapter *a, char *text, size_t len, ts_view event,
                                                    ts_json_shape *memo);

/* A payload the memo did not match. */
static int responses_miss(ts_adapter *a, char *text, size_t len, ts_view event) {
  /* the request echoes, unread (provider.h: fast_event answers for skip; a memo hit's
   * name is a delta's, never one of these) */
  if (responses_skip(event)) return 1;
  return responses_full(a, text, len, event, ts__adapter_memo(a));
}

static int responses_fast(ts_adapter *a, char *text, size_t len, ts_view event) {
  /* P0's reading (a delta event) with this payload's delta, decoded by the match; the
   * item id is P0's, unescaped, in the memo's copy: rf_delta's reading */
  return ts__adapter_memo_key_fragment(a, text, len, event, RF_TEXT, responses_miss);
}

/* The full one-pass reading, apart from the memo's path (as chat_full). */
static int responses_full(ts_adapter *a, char *text, size_t len, ts_view event, ts_json_shape *memo) {
  ts_json_scan_str delta;
  ts_json_shape_pass notes; /* obfuscation and sequence_number; after a miss, all unread */
  ts_json_shape_pass_init(&notes, memo);
  ts_json_scan s;
  ts_json_item it = {.type = TS_JSON_SCAN_END}; /* (gcc cannot see that the scanner fills it) */
  ts_json_scan_init(&s, text, len);
  if (ts__json_scan_next_inline(&s, &it) != 1 || it.type != TS_JSON_SCAN_OBJECT) return 0;
  ts_json_scan_str item_id = {{NULL, 0}, 0}, args = item_id;
  delta = item_id;
  rf_item item;
  memset(&item, 0, sizeof item);
  rf_resp resp;
  memset(&resp, 0, sizeof resp);
  int kind = -1, have_item = 0, have_resp = 0;
  unsigned seen = 0;
  for (;;) {
    if (ts__json_scan_next_inline(&s, &it) != 1) return 0;
    if (it.type == TS_JSON_SCAN_END) break;
    ts_view k = it.key;
    switch (k.len) {
    case 4: /* type, item */
      if (k.p[0] == 't' && ts_json_scan_key_is(k, "type", 4)) {
        TS__SCAN_ONCE(seen, 1);
        if (it.type != TS_JSON_SCAN_STRING) return 0;
        kind = rf_kind(it.raw);
        if (kind == RF_NONE) return 0;
        break;
      }
      if (k.p[0] == 'i' && ts_json_scan_key_is(k, "item", 4)) {
        TS__SCAN_ONCE(seen, 2);
        if (it.type != TS_JSON_SCAN_OBJECT || !rf_read_item(&s, &item)) return 0;
        have_item = 1;
        break;
      }
      goto unread;
    case 5: /* delta */
      if (!ts_json_scan_key_is(k, "delta", 5)) goto unread;
      TS__SCAN_ONCE(seen, 4);
      if (!ts_json_scan_take_str(&it, &delta)) return 0;
      break;
    case 7: /* item_id */
      if (!ts_json_scan_key_is(k, "item_id", 7)) goto unread;
      TS__SCAN_ONCE(seen, 8);
      if (!ts_json_scan_take_str(&it, &item_id)) return 0;
      break;
    case 11: /* obfuscation: never read, different in every event (a memo span) */
      if (!ts_json_scan_key_is(k, "obfuscation", 11)) goto unread;
      ts_json_shape_pass_varies(&notes, &it);
      break;
    case 15: /* sequence_number: likewise */
      if (!ts_json_scan_key_is(k, "sequence_number", 15)) goto unread;
      ts_json_shape_pass_varies(&notes, &it);
      break;
    case 8: /* response: the terminal events' whole response */
      if (!ts_json_scan_key_is(k, "response", 8)) goto unread;
      TS__SCAN_ONCE(seen, 32);
      if (it.type != TS_JSON_SCAN_OBJECT || !rf_read_response(&s, &resp)) return 0;
      have_resp = 1;
      continue; /* read to its end */
    case 9: /* arguments */
      if (!ts_json_scan_key_is(k, "arguments", 9)) goto unread;
      TS__SCAN_ONCE(seen, 16);
      if (!ts_json_scan_take_str(&it, &args)) return 0;
      break;
    default:
    unread: /* never read (a string or number: a span, after a miss) */
      ts_json_shape_pass_unread(&notes, &it);
      break;
    }
    if (ts_json_scan_skip(&s, NULL) != 1) return 0;
  }
  if (ts__json_scan_next_inline(&s, &it) != 0) return 0; /* one value, then only whitespace */
  if (kind < 0) kind = rf_kind(event); /* no `type`: the event's name says */
  /* an item done that names no call (or whose id has escapes): the general way begins it */
  if (kind == RF_ITEM_DONE && have_item && item.id.raw.p &&
      (item.id.escaped || ts__adapter_call_by_key(a, item.id.raw) < 0))
    return 0;
  if (memo) { /* before anything is decoded in place */
    /* The simple kind: a delta event with its delta string (and, for arguments, an item
     * id without escapes, which the memo keeps and compares as it is). */
    int simple = delta.raw.p && (kind == RF_TEXT || (kind == RF_ARGS_DELTA && item_id.raw.p && !item_id.escaped));
    if (simple && ts_json_shape_keep(memo, text, len, event, ts_json_shape_pass_notes(&notes), delta.raw)) {
      memo->kind = kind;
      memo->key = kind == RF_ARGS_DELTA ? ts_json_shape_rebase(memo, text, item_id.raw) : (ts_view){NULL, 0};
    } else {
      ts_json_shape_clear(memo);
    }
  }

  ts_view v, key, id, name;
  int slot;
  switch (kind) {
  case RF_TEXT:
  case RF_ARGS_DELTA:
    rf_delta(a, kind, &item_id, &delta);
    return 1;
  case RF_ARGS_DONE:
    rf_end_call(a, &item_id, &args);
    return 1;
  case RF_ITEM_ADDED:
    if (!have_item) return 0;
    if (ts__adapter_decode_str(a, &item.id, &key) < 0) return 1;
    if (ts__adapter_decode_str(a, &item.call_id, &id) < 0) return 1;
    if (ts__adapter_decode_str(a, &item.name, &name) < 0) return 1;
    slot = ts__adapter_call_begin(a, -1, key, id, name);
    if (slot >= 0 && ts__adapter_decode_str(a, &item.args, &v) > 0) ts__adapter_call_args(a, slot, v);
    return 1;
  case RF_ITEM_DONE:
    if (!have_item) return 0;
    rf_end_call(a, &item.id, &item.args);
    return 1;
  case RF_COMPLETED:
  case RF_INCOMPLETE:
    if (!have_resp) return 0;
    rf_turn_end(a, &resp, kind == RF_INCOMPLETE);
    return 1;
  default:
    return 0;
  }
}

/* The terminal event echoes the whole response (tools, output) and can outgrow the token
 * array; its name alone still ends the turn (without usage). */
static int responses_oversized(ts_adapter *a, ts_view name) {
  int done = name_is(name, "response.completed");
  if (!done && !name_is(name, "response.incomplete")) return 0;
  ts__adapter_set_stop(a, done ? (ts_view){"completed", 9} : (ts_view){"incomplete", 10});
  ts__adapter_turn_end(a);
  return 1;
}

/* The terminal events repeat every output item; what is new in them (status, usage) is a
 * few hundred bytes. Past this much the name alone ends the turn (responses_oversized). */
#define RESPONSES_TERMINAL_KEEP ((size_t)1 << 20)

/* What is worth keeping of an event, by its name (ts_adapter_keep): the `.done` events
 * repeat a call's whole arguments, and once every open call is a function call whose
 * arguments came as deltas they tell nothing new (a call's READY comes from its deltas;
 * one whose arguments stayed incomplete ends with the turn instead). The request echoes
 * are never read. */
/* The lengths of the names responses_keep tells apart (the request echoes, the `.done`
 * events, the terminal events); any other name is kept whole. */
#define RESPONSES_KEEP_LENGTHS                                                                  \
  ((UINT64_C(1) << 15) | (UINT64_C(1) << 16) | (UINT64_C(1) << 18) | (UINT64_C(1) << 19) |     \
   (UINT64_C(1) << 20) | (UINT64_C(1) << 25) | (UINT64_C(1) << 37))

static size_t responses_keep(ts_adapter *a, ts_view name) {
  /* Asked once per event, and nearly every event is an argument delta (38 bytes): only
   * the names of the lengths above have another answer than "all". */
  if (name.len >= 64 || !((RESPONSES_KEEP_LENGTHS >> name.len) & 1)) return SIZE_MAX;
  if (responses_skip(name)) return 0;
  /* an item done may be a call sent only so: read whole until a call began another way */
  if (name_is(name, "response.output_item.done") &&
      (ts__adapter_call_last(a) < 0 || (*ts__adapter_flags(a) & FLAG_DONE_ONLY)))
    return SIZE_MAX;
  if (name_is(name, "response.function_call_arguments.done") ||
      name_is(name, "response.output_item.done"))
    return ts__adapter_calls_known(a, TAG_ITEM) ? 0 : SIZE_MAX;
  if (name_is(name, "response.completed") || name_is(name, "response.incomplete"))
    return RESPONSES_TERMINAL_KEEP;
  return SIZE_MAX;
}

static int responses_name(ts_view name) {
  return name.len >= 9 && memcmp(name.p, "response.", 9) == 0;
}

/* ---- the request: POST /v1/responses -------------------------------------------------------
 * The conversation goes as `input` items: system and user text as messages (role system /
 * user, `content` a string), the assistant's text as an assistant message, each of its
 * calls as a `function_call` item (`call_id`, `name`, `arguments` as a JSON string), each
 * result as a `function_call_output` (`call_id`, `output` a string; no error flag, so an
 * error says so in the text). Tools are flat {"type":"function","name","description",
 * "parameters","strict":false}: the API's default is strict, which refuses any schema
 * that is not closed and fully required, and ours are the tools' own. `store:false`: the
 * whole conversation is sent every turn, so nothing need be kept on the provider's side
 * (and no item ids are sent, which would refer to stored items). */

static void put_input_text(ts_buf *b, const char *role, ts_view text) {
  ts_buf_puts(b, "{\"type\":\"message\",\"role\":\"");
  ts_buf_puts(b, role);
  ts_buf_puts(b, "\",\"content\":");
  ts_buf_append_json_string(b, text.p, text.len);
  ts_buf_putc(b, '}');
}

static int responses_request(const ts_request *r, ts_buf *b) {
  ts_buf_puts(b, "{\"model\":");
  ts_buf_append_json_string(b, r->model, strlen(r->model));
  ts_buf_puts(b, ",\"stream\":true,\"store\":false");
  if (r->max_tokens) {
    ts_buf_puts(b, ",\"max_output_tokens\":");
    ts_buf_append_u64(b, r->max_tokens);
  }
  ts_buf_puts(b, ",\"input\":[");
  int n = 0;
  for (size_t i = 0; i < r->nmessages; i++) {
    const ts_req_message *m = &r->messages[i];
    if (m->role == TS_REQ_TOOL) {
      if (n++) ts_buf_putc(b, ',');
      ts_buf_puts(b, "{\"type\":\"function_call_output\",\"call_id\":");
      ts_buf_append_json_string(b, m->call_id.p, m->call_id.len);
      ts_buf_puts(b, ",\"output\":");
      ts__provider_result_text(b, m);
      ts_buf_putc(b, '}');
      continue;
    }
    if (m->role != TS_REQ_ASSISTANT || m->text.len) {
      if (n++) ts_buf_putc(b, ',');
      put_input_text(b, m->role == TS_REQ_SYSTEM ? "system" : m->role == TS_REQ_USER ? "user" : "assistant",
                     m->text);
    }
    for (size_t k = 0; m->role == TS_REQ_ASSISTANT && k < m->ncalls; k++) {
      const ts_req_call *c = &m->calls[k];
      if (n++) ts_buf_putc(b, ',');
      ts_buf_puts(b, "{\"type\":\"function_call\",\"call_id\":");
      ts_buf_append_json_string(b, c->id.p, c->id.len);
      ts_buf_puts(b, ",\"name\":");
      ts_buf_append_json_string(b, c->name.p, c->name.len);
      ts_buf_puts(b, ",\"arguments\":"); /* the JSON text, as a string */
      ts_buf_append_json_string(b, c->arguments.p, c->arguments.len);
      ts_buf_putc(b, '}');
    }
  }
  ts_buf_putc(b, ']');
  static const ts__tool_shape shape = {",\"tools\":[", "{\"type\":\"function\",",
                                       "\"parameters\":", ",\"strict\":false}", "]"};
  ts__provider_tools_as(b, r, &shape);
  ts__provider_tool_choice_openai(b, r);
  ts_buf_putc(b, '}');
  return b->err;
}

static const char *const responses_paths[] = {"/responses", NULL};
static const ts_schema_loc responses_schemas[] = {{NULL, NULL, {"parameters", NULL}},
                                                  {NULL, NULL, {NULL, NULL}}};

/* The Responses API: `run --provider openai-responses`, the gateway and tap. */
const ts_provider ts_provider_openai_responses = {
    .format = TS_FORMAT_OPENAI_RESPONSES,
    .name = "openai-responses",
    .detect_name = responses_name,
    .event = responses_event,
    .fast_event = responses_fast,
    .skip = responses_skip,
    .oversized = responses_oversized,
    .keep = responses_keep,
    .keep_whole_lengths = ~RESPONSES_KEEP_LENGTHS,
    .named_errors = 1,
    .request = responses_request,
    .url_suffix = "/responses",
    .key_env = "OPENAI_API_KEY",
    .auth_header = "Authorization",
    .auth_prefix = "Bearer ",
    .path_suffixes = responses_paths,
    .schemas = responses_schemas,
};
