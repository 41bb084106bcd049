/*
 * gemini.c: Gemini `alt=sse` chunks into the adapter's vocabulary.
 *
 * Each chunk is a whole GenerateContentResponse: `candidates[0].content.parts[]` holds
 * text parts and `functionCall` parts, and a function call always arrives whole, its
 * `args` an object rather than a string of JSON text. So a functionCall part becomes
 * CALL_BEGIN, one CALL_ARGS with the `args` object's own JSON text (exactly as sent:
 * the downstream tokenizer reads it like any other argument text), and CALL_END, all
 * at once. Calls are numbered by the order of their parts; their key (the id, or the
 * name without one) serves only to tell a streamed call's repeated parts (below).
 *
 * Gemini has no terminal event: `finishReason` and `usageMetadata` come in the last
 * chunks, and the turn ends at EOF (ts_adapter_finish in adapter.c). An error is a
 * plain JSON body `{"error": {"code", "message", "status"}}`, possibly sent as a data
 * payload, possibly wrapped in an array.
 *
 * Vertex AI's streamed arguments (`streamFunctionCallArguments`): a call begins with a
 * functionCall part that has its `name` and `willContinue: true`; the following parts'
 * functionCalls carry `partialArgs`, each `{jsonPath, stringValue | numberValue |
 * boolValue | nullValue, willContinue}`; the call ends with an empty functionCall, or with
 * a functionCall part without `willContinue`. Parts may repeat the call's `id` and
 * `name` (the first already carrying `partialArgs`): a part that repeats the open call's
 * id, or without ids brings `partialArgs` under its name, continues it. The argument
 * text is rebuilt here, in order, as the JSON it stands for, and fed to the same
 * tokenizer downstream, so the progress rules hold unchanged (the label fires when the
 * progress value's string closes). The rules of the rebuild:
 *   - a path is `$` followed by `.name`, `['name']` / `["name"]` or `[N]` steps; each
 *     step but the last names a container (an object when the next step is a name, an
 *     array when it is an index), the last the value's place in its container;
 *   - containers are opened as a path first needs them and closed when a later path
 *     leaves them (or at the call's end), members separated by commas as they come;
 *   - a string value stays open while its piece has `willContinue: true`: the next piece
 *     for the same path continues it; any other piece closes it first;
 *   - numbers are written as sent, booleans and null as literals;
 *   - an array index must be the one after the last (or the last again, to go deeper
 *     into the same element); a path that goes back is a shape error (TS_E_MS_BAD_SHAPE)
 *     and the call's arguments are left incomplete, never guessed. So is a path deeper
 *     than VX_MAX_DEPTH or with a name longer than VX_MAX_KEY.
 */
#define TS_ADAPTER_INTERNAL
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "stream/adapter.h"
#include "stream/json_scan.h"
#include "stream/json_shape.h"
#include "stream/json_view.h"
#include "stream/provider.h"

/* ---- rebuilding Vertex's streamed arguments ---------------------------------------------- */

#define VX_MAX_DEPTH 16 /* nesting of the arguments object: tool schemas are shallow */
#define VX_MAX_KEY 64   /* a member name in a path */

typedef struct {
  uint8_t array;  /* the container is an array */
  uint8_t klen;   /* the member being written (object: its name) */
  int32_t index;  /* array: the element being written, -1 before the first */
  uint32_t count; /* members written */
  char key[VX_MAX_KEY];
} vx_level;

typedef struct {
  uint8_t active;   /* a streamed call is being rebuilt */
  int slot;         /* its slot */
  uint8_t open_str; /* a string value is open (its piece had willContinue) */
  uint8_t failed;   /* a path could not be followed: nothing more is written */
  uint8_t by_id;    /* the call came with an id (its slot's key; else its name is) */
  uint8_t memo_open; /* the open string is at the memo's path, opened or continued by a
                      * memo hit: the next hit continues it without walking the path
                      * (set by gemini_fast, cleared by every vx_apply) */
  uint32_t depth;   /* levels open; 0 before the root object */
  vx_level lv[VX_MAX_DEPTH + 1];
} vx_state;

typedef struct {
  uint8_t is_index;
  int32_t index;
  ts_view name;
} vx_step;

/* The scratch block holds the one-pass reader's shape memo first (ts__adapter_memo puts
 * it at the block's start), then the rebuild. */
#define VX_STATE_OFF \
  ((sizeof(ts_json_shape) + _Alignof(max_align_t) - 1) / _Alignof(max_align_t) * _Alignof(max_align_t))

static vx_state *vx(ts_adapter *a) {
  _Static_assert(VX_STATE_OFF + sizeof(vx_state) <= TS_ADAPTER_SCRATCH, "the scratch holds the memo and the rebuild");
  return (vx_state *)(void *)((unsigned char *)ts__adapter_scratch(a) + VX_STATE_OFF);
}

static void put(ts_adapter *a, vx_state *v, const char *s, size_t n) {
  ts__adapter_call_args(a, v->slot, (ts_view){s, n});
}

/* Parses a JSON path into steps; returns their number, or -1. */
static int parse_path(ts_view p, vx_step *steps, int max) {
  size_t i = 0;
  int n = 0;
  if (!p.len || p.p[0] != '$') return -1;
  for (i = 1; i < p.len;) {
    if (n == max) return -1;
    vx_step *st = &steps[n++];
    memset(st, 0, sizeof *st);
    if (p.p[i] == '.') {
      size_t s = ++i;
      while (i < p.len && p.p[i] != '.' && p.p[i] != '[') i++;
      if (i == s) return -1;
      st->name = (ts_view){p.p + s, i - s};
    } else if (p.p[i] == '[' && i + 1 < p.len && (p.p[i + 1] == '\'' || p.p[i + 1] == '"')) {
      char q = p.p[i + 1];
      size_t s = i + 2;
      i = s;
      while (i < p.len && p.p[i] != q) i++;
      if (i + 1 >= p.len || p.p[i + 1] != ']') return -1;
      st->name = (ts_view){p.p + s, i - s};
      i += 2;
    } else if (p.p[i] == '[') {
      int64_t v = 0;
      size_t s = ++i;
      while (i < p.len && p.p[i] >= '0' && p.p[i] <= '9' && v < 1000000) v = v * 10 + (p.p[i++] - '0');
      if (i == s || i >= p.len || p.p[i] != ']') return -1;
      i++;
      st->is_index = 1;
      st->index = (int32_t)v;
    } else {
      return -1;
    }
    if (!st->is_index && st->name.len > VX_MAX_KEY) return -1;
  }
  return n;
}

/* Whether level `l`'s current member is step `st`. */
static int at_step(const vx_level *l, const vx_step *st) {
  if (l->array) return st->is_index && l->index == st->index;
  return !st->is_index && l->count && l->klen == st->name.len && !memcmp(l->key, st->name.p, l->klen);
}

static void close_string(ts_adapter *a, vx_state *v) {
  if (v->open_str) put(a, v, "\"", 1);
  v->open_str = 0;
}

static void close_to(ts_adapter *a, vx_state *v, uint32_t depth) {
  close_string(a, v);
  while (v->depth > depth) {
    put(a, v, v->lv[v->depth].array ? "]" : "}", 1);
    v->depth--;
  }
}

/* Starts member `st` in the innermost open level: a comma, and the name or the index
 * check. Returns 0, or -1 when the index does not follow. */
static int begin_member(ts_adapter *a, vx_state *v, const vx_step *st) {
  vx_level *l = &v->lv[v->depth];
  if (l->array != st->is_index) return -1;
  if (l->array && st->index != l->index + 1) return -1;
  if (l->count) put(a, v, ",", 1);
  l->count++;
  if (l->array) {
    l->index = st->index;
  } else {
    put(a, v, "\"", 1);
    ts__adapter_call_args_escaped(a, v->slot, st->name);
    put(a, v, "\":", 2);
    memcpy(l->key, st->name.p, st->name.len);
    l->klen = (uint8_t)st->name.len;
  }
  return 0;
}

static void vx_fail(ts_adapter *a, vx_state *v) {
  v->failed = 1;
  static const char msg[] = "Vertex partialArgs: a path that cannot be rebuilt in order";
  ts__adapter_error(a, TS_E_MS_BAD_SHAPE, msg, sizeof msg - 1, 0);
}

/* A piece's value, as either reader found it. A string is decoded only where it is
 * written (so that a bad escape is reported at the same point of the events). */
enum { VX_NONE = 0, VX_STR, VX_NUM, VX_TRUE, VX_FALSE, VX_NULL };

typedef struct {
  int kind;     /* VX_* */
  ts_view raw;  /* VX_NUM: the number as sent; VX_STR (scanner): the undecoded body */
  int escaped;  /* VX_STR (scanner) */
  ts_jv *jv;    /* VX_STR (parser): the token */
  int tok;
} vx_val;

static int vx_text(ts_adapter *a, const vx_val *val, ts_view *out) {
  return val->jv ? ts__adapter_string(a, val->jv, val->tok, out)
                 : ts__adapter_decode(a, val->raw, val->escaped, out);
}

/* A string value's next piece, inside the open string: decoded, then escaped as JSON
 * string content (a value without escapes may still hold raw control bytes, which both
 * readers let through and which are escaped here). */
static void vx_str_more(ts_adapter *a, vx_state *v, const vx_val *val) {
  ts_view text;
  if (vx_text(a, val, &text) >= 0) ts__adapter_call_args_escaped(a, v->slot, text);
}

/* One partialArgs piece whose path (decoded) and value are known. */
static void vx_apply(ts_adapter *a, vx_state *v, ts_view path, int more, const vx_val *val) {
  vx_step steps[VX_MAX_DEPTH];
  v->memo_open = 0;
  int n = parse_path(path, steps, VX_MAX_DEPTH);
  if (n < 1) {
    vx_fail(a, v);
    return;
  }
  /* Levels: lv[1] is the arguments object, step i is a member of level i + 1, and the
   * container a step names is level i + 2. k: the steps whose containers are open. */
  int k = 0;
  while (k < n - 1 && v->depth >= (uint32_t)k + 2 && at_step(&v->lv[k + 1], &steps[k])) k++;
  /* the continuation of the open string at this very path */
  if (v->open_str && k == n - 1 && v->depth == (uint32_t)n && at_step(&v->lv[n], &steps[n - 1])) {
    if (val->kind == VX_STR) vx_str_more(a, v, val);
    if (!more) close_string(a, v);
    return;
  }
  close_to(a, v, (uint32_t)k + 1);
  for (int i = k; i < n - 1; i++) { /* open the containers the path needs */
    if (begin_member(a, v, &steps[i]) < 0 || v->depth >= VX_MAX_DEPTH) {
      vx_fail(a, v);
      return;
    }
    v->depth++;
    memset(&v->lv[v->depth], 0, sizeof v->lv[v->depth]);
    v->lv[v->depth].array = steps[i + 1].is_index;
    v->lv[v->depth].index = -1;
    put(a, v, steps[i + 1].is_index ? "[" : "{", 1);
  }
  if (begin_member(a, v, &steps[n - 1]) < 0) {
    vx_fail(a, v);
    return;
  }
  switch (val->kind) {
    case VX_STR:
      put(a, v, "\"", 1);
      vx_str_more(a, v, val);
      v->open_str = 1;
      if (!more) close_string(a, v);
      break;
    case VX_NUM: put(a, v, val->raw.p, val->raw.len); break;
    case VX_TRUE: put(a, v, "true", 4); break;
    case VX_FALSE: put(a, v, "false", 5); break;
    case VX_NULL: put(a, v, "null", 4); break;
    default: vx_fail(a, v);
  }
}

/* One partialArgs piece (the parser's tokens). */
static void vx_piece(ts_adapter *a, ts_jv *jv, vx_state *v, int piece) {
  ts_view path;
  if (v->failed) return;
  if (ts__adapter_string(a, jv, ts_jv_get(jv, piece, "jsonPath"), &path) <= 0) {
    vx_fail(a, v);
    return;
  }
  int more = ts_jv_is_true(jv, ts_jv_get(jv, piece, "willContinue"));
  int sv = ts_jv_get(jv, piece, "stringValue"), nv = ts_jv_get(jv, piece, "numberValue");
  int bv = ts_jv_get(jv, piece, "boolValue"), zv = ts_jv_get(jv, piece, "nullValue");
  vx_val val = {VX_NONE, {NULL, 0}, 0, NULL, -1};
  if (ts_jv_type_of(jv, sv) == TS_JV_STRING) {
    val.kind = VX_STR, val.jv = jv, val.tok = sv;
  } else if (ts_jv_type_of(jv, nv) == TS_JV_PRIMITIVE && !ts_jv_is_null(jv, nv)) {
    val.kind = VX_NUM, val.raw = ts_jv_raw(jv, nv);
  } else if (bv >= 0) {
    val.kind = ts_jv_is_true(jv, bv) ? VX_TRUE : VX_FALSE;
  } else if (zv >= 0) {
    val.kind = VX_NULL;
  }
  vx_apply(a, v, path, more, &val);
}

/* Ends the call being rebuilt: closes what is open, then the call. */
static void vx_end(ts_adapter *a, vx_state *v) {
  if (!v->active) return;
  if (!v->failed) close_to(a, v, 0);
  ts__adapter_call_end(a, v->slot);
  memset(v, 0, sizeof *v);
}

/* Whether a named functionCall part (without `args`) is the next part of the streamed
 * call being rebuilt: it has the call's id; or, without an id, it brings `partialArgs`
 * and the call's name (any name when the call came with an id). A bare named part with
 * neither is a new call without arguments. */
static int same_call(const ts_adapter *a, const vx_state *v, ts_view id, ts_view name, int partial) {
  ts_view key = ts__adapter_call_key(a, v->slot);
  if (!id.len && (partial < 0 || v->by_id)) return partial >= 0;
  ts_view want = id.len ? id : name;
  return key.len == want.len && memcmp(key.p, want.p, want.len) == 0;
}

static void function_call(ts_adapter *a, ts_jv *jv, int fc) {
  vx_state *v = vx(a);
  int partial = ts_jv_get(jv, fc, "partialArgs");
  int more = ts_jv_is_true(jv, ts_jv_get(jv, fc, "willContinue"));
  int args = ts_jv_get(jv, fc, "args");
  int named = ts_jv_get(jv, fc, "name") >= 0;
  ts_view id = {"", 0}, name = {"", 0};
  if (named) {
    if (ts__adapter_string(a, jv, ts_jv_get(jv, fc, "id"), &id) < 0) return;
    if (ts__adapter_string(a, jv, ts_jv_get(jv, fc, "name"), &name) < 0) return;
    /* After `willContinue: true` the next functionCall is the same call's next part,
     * and some replies repeat the call's id and name in every part (same_call). */
    if (v->active && args < 0 && same_call(a, v, id, name, partial)) named = 0;
  }
  if (named || args >= 0) vx_end(a, v); /* a new call ends one being rebuilt */
  if (!named && args < 0 && partial < 0) { /* an empty functionCall ends the streamed call */
    vx_end(a, v);
    return;
  }
  if (named) {
    /* the key: the id, or without one the name (same_call compares them) */
    int slot = ts__adapter_call_begin(a, -1, id.len ? id : name, id, name);
    if (slot < 0) return;
    if (args >= 0 || (!more && partial < 0)) { /* a whole call */
      if (args >= 0 && !ts_jv_is_null(jv, args)) ts__adapter_call_args(a, slot, ts_jv_raw(jv, args));
      ts__adapter_call_end(a, slot);
      return;
    }
    memset(v, 0, sizeof *v);
    v->active = 1;
    v->by_id = id.len > 0;
    v->slot = slot;
    v->depth = 1;
    v->lv[1].index = -1;
    put(a, v, "{", 1);
  }
  if (!v->active) return; /* pieces of no call we know */
  int n = ts_jv_size(jv, partial);
  for (int k = 0, p = ts_jv_first(jv, partial); k < n; k++, p = ts_jv_skip(jv, p)) vx_piece(a, jv, v, p);
  if (!more) vx_end(a, v);
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

/* ---- the one pass -------------------------------------------------------------------------
 * Vertex's streamed arguments come one small piece per chunk, five levels down
 * (candidates[0].content.parts[0].functionCall.partialArgs[]) in an envelope several times
 * its size, so those chunks are read in one pass of the scanner (stream/json_scan.h) with
 * exactly chunk()'s result: a chunk whose one part is a functionCall carrying only
 * `partialArgs` and `willContinue`, for a call being rebuilt, without finishReason, usage,
 * promptFeedback or error. The pieces are collected (views into the payload) and applied
 * only once the whole payload has been read; anything else (another shape, a member of an
 * unexpected type, a duplicate of a member it reads, more than VX_FAST_PIECES pieces)
 * returns 0 with nothing reported, for the general way. */

#define VX_FAST_PIECES 16 /* pieces per chunk read in one pass (Vertex sends one or two) */

typedef struct {
  ts_view path;
  int path_esc, more;
  vx_val val;
} vx_fast_piece;

static int is_key(const ts_json_item *it, const char *lit) {
  return ts_json_scan_key_is(it->key, lit, strlen(lit));
}

/* A literal true / false for willContinue: 1 / 0; -1 for any other type. */
static int flag_of(const ts_json_item *it) {
  return it->type == TS_JSON_SCAN_TRUE ? 1 : it->type == TS_JSON_SCAN_FALSE ? 0 : -1;
}

/* One piece object (the scanner is at its start). */
static int fast_piece(ts_json_scan *s, vx_fast_piece *pc) {
  ts_json_item it;
  unsigned seen = 0;
  memset(pc, 0, sizeof *pc);
  int sv = 0, nv = 0, bv = 0, zv = 0, btrue = 0;
  ts_view sraw = {NULL, 0}, nraw = {NULL, 0};
  int sesc = 0;
  for (;;) {
    if (ts_json_scan_next(s, &it) != 1) return 0;
    if (it.type == TS_JSON_SCAN_END) break;
    if (is_key(&it, "jsonPath")) {
      TS__SCAN_ONCE(seen, 1);
      if (it.type != TS_JSON_SCAN_STRING) return 0;
      pc->path = it.raw, pc->path_esc = it.escaped;
    } else if (is_key(&it, "stringValue")) {
      TS__SCAN_ONCE(seen, 2);
      if (it.type != TS_JSON_SCAN_STRING) return 0;
      sv = 1, sraw = it.raw, sesc = it.escaped;
    } else if (is_key(&it, "numberValue")) {
      TS__SCAN_ONCE(seen, 4);
      if (it.type != TS_JSON_SCAN_NUMBER) return 0;
      nv = 1, nraw = it.raw;
    } else if (is_key(&it, "boolValue")) {
      TS__SCAN_ONCE(seen, 8);
      if ((btrue = flag_of(&it)) < 0) return 0;
      bv = 1;
    } else if (is_key(&it, "nullValue")) {
      TS__SCAN_ONCE(seen, 16);
      if (it.type != TS_JSON_SCAN_NULL) return 0;
      zv = 1;
    } else if (is_key(&it, "willContinue")) {
      TS__SCAN_ONCE(seen, 32);
      if ((pc->more = flag_of(&it)) < 0) return 0;
    }
    if (ts_json_scan_skip(s, NULL) != 1) return 0;
  }
  if (!(seen & 1)) return 0; /* no path: the general way says so */
  vx_val val = {VX_NONE, {NULL, 0}, 0, NULL, -1};
  if (sv) val.kind = VX_STR, val.raw = sraw, val.escaped = sesc; /* the parser's precedence */
  else if (nv) val.kind = VX_NUM, val.raw = nraw;
  else if (bv) val.kind = btrue ? VX_TRUE : VX_FALSE;
  else if (zv) val.kind = VX_NULL;
  pc->val = val;
  return 1;
}

/* The functionCall object (the scanner is at its start): only partialArgs and willContinue. */
static int fast_call(ts_json_scan *s, vx_fast_piece *pcs, int *npcs, int *more) {
  ts_json_item it;
  unsigned seen = 0;
  for (;;) {
    if (ts_json_scan_next(s, &it) != 1) return 0;
    if (it.type == TS_JSON_SCAN_END) break;
    if (is_key(&it, "partialArgs")) {
      TS__SCAN_ONCE(seen, 1);
      if (it.type != TS_JSON_SCAN_ARRAY) return 0;
      for (;;) {
        if (ts_json_scan_next(s, &it) != 1) return 0;
        if (it.type == TS_JSON_SCAN_END) break;
        if (it.type != TS_JSON_SCAN_OBJECT || *npcs == VX_FAST_PIECES) return 0;
        if (!fast_piece(s, &pcs[(*npcs)++])) return 0;
      }
    } else if (is_key(&it, "willContinue")) {
      TS__SCAN_ONCE(seen, 2);
      if ((*more = flag_of(&it)) < 0) return 0;
    } else {
      return 0; /* name, args, id ...: a call begins or ends, the general way */
    }
  }
  return (seen & 1) != 0;
}

/* candidates[0] (the scanner is at its start): content.parts with one functionCall part. */
static int fast_candidate(ts_json_scan *s, vx_fast_piece *pcs, int *npcs, int *more) {
  ts_json_item it;
  unsigned seen = 0;
  for (;;) {
    if (ts_json_scan_next(s, &it) != 1) return 0;
    if (it.type == TS_JSON_SCAN_END) break;
    if (is_key(&it, "content")) {
      TS__SCAN_ONCE(seen, 1);
      if (it.type != TS_JSON_SCAN_OBJECT) return 0;
      unsigned cseen = 0;
      for (;;) {
        if (ts_json_scan_next(s, &it) != 1) return 0;
        if (it.type == TS_JSON_SCAN_END) break;
        if (is_key(&it, "parts")) {
          if (cseen || it.type != TS_JSON_SCAN_ARRAY) return 0;
          cseen = 1;
          int nparts = 0;
          for (;;) {
            if (ts_json_scan_next(s, &it) != 1) return 0;
            if (it.type == TS_JSON_SCAN_END) break;
            if (it.type != TS_JSON_SCAN_OBJECT || nparts++) return 0; /* one part */
            unsigned pseen = 0;
            for (;;) {
              if (ts_json_scan_next(s, &it) != 1) return 0;
              if (it.type == TS_JSON_SCAN_END) break;
              if (is_key(&it, "thought")) return 0;
              if (is_key(&it, "functionCall")) {
                if (pseen || it.type != TS_JSON_SCAN_OBJECT) return 0;
                pseen = 1;
                if (!fast_call(s, pcs, npcs, more)) return 0;
              } else if (ts_json_scan_skip(s, NULL) != 1) {
                return 0;
              }
            }
            if (!pseen) return 0;
          }
          if (!nparts) return 0;
        } else if (ts_json_scan_skip(s, NULL) != 1) {
          return 0;
        }
      }
      if (!cseen) return 0;
    } else if (is_key(&it, "finishReason")) {
      return 0;
    } else if (ts_json_scan_skip(s, NULL) != 1) {
      return 0;
    }
  }
  return (seen & 1) != 0;
}

/* The memo (json_shape.h) for the usual chunk: one piece with a string value, its path
 * without escapes. The envelope (model version, create time, response id, index) is the
 * same in every chunk of a reply, and so is the piece's path and its willContinue while
 * one string value streams, so consecutive chunks differ only in the stringValue: the
 * used span. No ignored spans. The memo records the path (a view into its copy) and the
 * two willContinue flags: kind bit 0 the piece's, bit 1 the functionCall's. */
enum { VX_MEMO_MORE = 1, VX_MEMO_CALL_MORE = 2 };

static void vx_memo_keep(ts_json_shape *memo, const char *text, size_t len, ts_view name,
                         const vx_fast_piece *pcs, int npcs, int more) {
  const vx_fast_piece *pc = &pcs[0];
  if (npcs == 1 && pc->val.kind == VX_STR && !pc->path_esc &&
      ts_json_shape_keep(memo, text, len, name, NULL, pc->val.raw)) {
    memo->key = ts_json_shape_rebase(memo, text, pc->path);
    memo->kind = (pc->more ? VX_MEMO_MORE : 0) | (more ? VX_MEMO_CALL_MORE : 0);
    memo->nkey = 0;
  } else {
    ts_json_shape_clear(memo);
  }
}

static int gemini_fast(ts_adapter *a, char *text, size_t len, ts_view name) {
  vx_state *v = vx(a);
  if (!v->active) return 0; /* only pieces of a call being rebuilt */
  ts_json_shape *memo = ts__adapter_memo(a);
  ts_json_shape_value mv;
  if (memo && ts_json_shape_match_value(memo, text, len, name, &mv)) {
    /* the kept chunk's reading with this chunk's string value */
    ts__adapter_memo_hit(a);
    vx_val val = {VX_STR, mv.used.raw, mv.used.escaped, NULL, -1};
    const int more = memo->kind & VX_MEMO_MORE;
    if (v->failed) {
      /* nothing more is written for this call */
    } else if (v->memo_open && v->open_str) {
      /* the string the last hit left open at this same path: vx_apply's continuation,
       * without parsing the path and comparing it level by level again; the value as
       * the match decoded it (or, left to us, decoded in place, reporting a bad escape) */
      if (mv.val.p)
        ts__adapter_call_args_escaped(a, v->slot, mv.val);
      else
        vx_str_more(a, v, &val);
      if (!more) close_string(a, v);
    } else {
      vx_apply(a, v, memo->key, more, &val);
      v->memo_open = v->open_str; /* open at memo->key, which the next hit names too */
    }
    if (!(memo->kind & VX_MEMO_CALL_MORE)) vx_end(a, v);
    return 1;
  }
  ts_json_scan s;
  ts_json_item it;
  ts_json_scan_init(&s, text, len);
  if (ts_json_scan_next(&s, &it) != 1 || it.type != TS_JSON_SCAN_OBJECT) return 0;
  vx_fast_piece pcs[VX_FAST_PIECES];
  int npcs = 0, more = 0;
  unsigned seen = 0;
  for (;;) {
    if (ts_json_scan_next(&s, &it) != 1) return 0;
    if (it.type == TS_JSON_SCAN_END) break;
    if (is_key(&it, "candidates")) {
      TS__SCAN_ONCE(seen, 1);
      if (it.type != TS_JSON_SCAN_ARRAY) return 0;
      if (ts_json_scan_next(&s, &it) != 1 || it.type != TS_JSON_SCAN_OBJECT) return 0;
      if (!fast_candidate(&s, pcs, &npcs, &more)) return 0;
      for (;;) { /* candidates past the first are not read */
        if (ts_json_scan_next(&s, &it) != 1) return 0;
        if (it.type == TS_JSON_SCAN_END) break;
        if (ts_json_scan_skip(&s, NULL) != 1) return 0;
      }
    } else if (is_key(&it, "error") || is_key(&it, "usageMetadata") ||
               is_key(&it, "promptFeedback")) {
      return 0;
    } else if (ts_json_scan_skip(&s, NULL) != 1) {
      return 0;
    }
  }
  if (!(seen & 1) || ts_json_scan_next(&s, &it) != 0) return 0; /* one value, then whitespace */
  if (memo) vx_memo_keep(memo, text, len, name, pcs, npcs, more); /* before decoding in place */
  for (int k = 0; k < npcs; k++) {
    ts_view path;
    if (v->failed) break;
    if (ts__adapter_decode(a, pcs[k].path, pcs[k].path_esc, &path) < 0) {
      vx_fail(a, v);
      continue;
    }
    vx_apply(a, v, path, pcs[k].more, &pcs[k].val);
  }
  if (!more) vx_end(a, v);
  return 1;
}

/* EOF while a streamed call is being rebuilt: the reply was cut. */
static int gemini_unfinished(ts_adapter *a) { return vx(a)->active; }

static int gemini_doc(const ts_jv *jv, int root) {
  return ts_jv_get(jv, root, "candidates") >= 0 || ts_jv_get(jv, root, "usageMetadata") >= 0 ||
         ts_jv_get(jv, root, "promptFeedback") >= 0;
}

/* ---- the request: models/{model}:streamGenerateContent?alt=sse --------------------------------
 * `contents` alternate role "user" and "model"; system text goes in `systemInstruction`.
 * A model turn's calls are `functionCall` parts ({name, args: the arguments object}) and
 * their results go back as one user content of `functionResponse` parts ({name,
 * response}), in call order (Gemini pairs them by order and name). `response` must be
 * an object: {"output": <the tool's JSON value>} (or the text as a string when it is not
 * JSON), {"error": "<message>"} for an error, as the API documents for those keys.
 *
 * Ids: Gemini 2.x sends none, so the tap synthesizes `ts_<turn>_<index>` (stream/tap.h);
 * those are ours and are not sent back. An id Gemini sent is sent back on the call and
 * its response. Thought signatures: Gemini 3 refuses a model turn whose function calls
 * lack the `thoughtSignature` it sent; the store does not keep them, so each call carries
 * the placeholder Google documents for calls whose signature is not at hand
 * (GEMINI_NO_SIGNATURE; older models ignore the field).
 *
 * Consecutive messages of one role (the results, then a new prompt) are one content:
 * an empty model turn (no text, no calls) is left out, since Gemini refuses empty parts. */

#define GEMINI_NO_SIGNATURE "skip_thought_signature_validator"

/* Nonzero when `id` is one the tap made up ("ts_<digits>_<digits>"). */
static int synthesized_id(ts_view id) {
  size_t i = 3, d1 = 0, d2 = 0;
  if (id.len < 6 || memcmp(id.p, "ts_", 3)) return 0;
  while (i < id.len && id.p[i] >= '0' && id.p[i] <= '9') i++, d1++;
  if (!d1 || i >= id.len || id.p[i++] != '_') return 0;
  while (i < id.len && id.p[i] >= '0' && id.p[i] <= '9') i++, d2++;
  return d2 && i == id.len;
}

/* Nonzero when text[0..n) is exactly one JSON value. */
static int is_json(ts_view text) {
  if (!text.len || text.len > (size_t)1 << 30) return 0;
  char *copy = malloc(text.len);
  ts_jv jv;
  memset(&jv, 0, sizeof jv);
  int ok = copy && ts_jv_init(&jv, (int)(text.len / 2 + 2)) == TS_E_OK;
  if (ok) {
    memcpy(copy, text.p, text.len);
    ok = ts_jv_parse(&jv, copy, text.len) == TS_E_OK;
  }
  ts_jv_fini(&jv);
  free(copy);
  return ok;
}

/* The call a result answers: its name, and the id to send back (empty when synthesized). */
static const ts_req_call *call_of(const ts_request *r, size_t at, ts_view id) {
  for (size_t j = at; j-- > 0;) {
    const ts_req_message *p = &r->messages[j];
    if (p->role != TS_REQ_ASSISTANT) continue;
    for (size_t k = 0; k < p->ncalls; k++)
      if (p->calls[k].id.len == id.len && !memcmp(p->calls[k].id.p, id.p, id.len)) return &p->calls[k];
    break;
  }
  return NULL;
}

static void put_id(ts_buf *b, ts_view id) {
  if (!id.len || synthesized_id(id)) return;
  ts_buf_puts(b, ",\"id\":");
  ts_buf_append_json_string(b, id.p, id.len);
}

static void put_response(ts_buf *b, const ts_request *r, size_t i) {
  const ts_req_message *m = &r->messages[i];
  const ts_req_call *c = call_of(r, i, m->call_id);
  ts_buf_puts(b, "{\"functionResponse\":{\"name\":");
  if (c) ts_buf_append_json_string(b, c->name.p, c->name.len);
  else ts_buf_puts(b, "\"\"");
  put_id(b, m->call_id);
  if (m->is_error) {
    ts_buf_puts(b, ",\"response\":{\"error\":");
    ts_buf_append_json_string(b, m->text.p, m->text.len);
  } else if (is_json(m->text)) {
    ts_buf_puts(b, ",\"response\":{\"output\":");
    ts_buf_append_json_compact(b, m->text.p, m->text.len);
  } else {
    ts_buf_puts(b, ",\"response\":{\"output\":");
    ts_buf_append_json_string(b, m->text.p, m->text.len);
  }
  ts_buf_puts(b, "}}}");
}

static int gemini_request(const ts_request *r, ts_buf *b) {
  ts_buf_puts(b, "{\"contents\":[");
  int open = 0; /* 0: no content open, else the role open: 'u' or 'm' */
  int parts = 0;
  for (size_t i = 0; i < r->nmessages; i++) {
    const ts_req_message *m = &r->messages[i];
    if (m->role == TS_REQ_SYSTEM) continue;
    int role = m->role == TS_REQ_ASSISTANT ? 'm' : 'u';
    if (role == 'm' && !m->text.len && !m->ncalls) continue; /* nothing to say */
    if (open != role) {
      if (open) ts_buf_puts(b, "]},");
      ts_buf_puts(b, role == 'm' ? "{\"role\":\"model\",\"parts\":[" : "{\"role\":\"user\",\"parts\":[");
      open = role;
      parts = 0;
    }
    if (m->role == TS_REQ_TOOL) {
      if (parts++) ts_buf_putc(b, ',');
      put_response(b, r, i);
      continue;
    }
    if (m->text.len || m->role == TS_REQ_USER) {
      if (parts++) ts_buf_putc(b, ',');
      ts_buf_puts(b, "{\"text\":");
      ts_buf_append_json_string(b, m->text.p, m->text.len);
      ts_buf_putc(b, '}');
    }
    for (size_t k = 0; k < m->ncalls; k++) {
      const ts_req_call *c = &m->calls[k];
      if (parts++) ts_buf_putc(b, ',');
      ts_buf_puts(b, "{\"functionCall\":{\"name\":");
      ts_buf_append_json_string(b, c->name.p, c->name.len);
      put_id(b, c->id);
      ts_buf_puts(b, ",\"args\":");
      ts_buf_append(b, c->arguments.p, c->arguments.len);
      ts_buf_puts(b, "},\"thoughtSignature\":\"" GEMINI_NO_SIGNATURE "\"}");
    }
  }
  if (open) ts_buf_puts(b, "]}");
  ts_buf_putc(b, ']');
  int sys = 0;
  for (size_t i = 0; i < r->nmessages; i++) {
    const ts_req_message *m = &r->messages[i];
    if (m->role != TS_REQ_SYSTEM) continue;
    ts_buf_puts(b, sys++ ? "," : ",\"systemInstruction\":{\"parts\":[");
    ts_buf_puts(b, "{\"text\":");
    ts_buf_append_json_string(b, m->text.p, m->text.len);
    ts_buf_putc(b, '}');
  }
  if (sys) ts_buf_puts(b, "]}");
  /* parametersJsonSchema takes any JSON Schema; `parameters` only the OpenAPI subset */
  static const ts__tool_shape shape = {",\"tools\":[{\"functionDeclarations\":[", "{",
                                       "\"parametersJsonSchema\":", "}", "]}]"};
  ts__provider_tools_as(b, r, &shape);
  if (r->ntools && r->tool_choice) { /* Gemini's modes: AUTO, NONE, ANY (= required) */
    const char *mode = !strcmp(r->tool_choice, "none")       ? "NONE"
                       : !strcmp(r->tool_choice, "required") ? "ANY"
                                                             : "AUTO";
    ts_buf_puts(b, ",\"toolConfig\":{\"functionCallingConfig\":{\"mode\":\"");
    ts_buf_puts(b, mode);
    ts_buf_puts(b, "\"}}");
  }
  if (r->max_tokens) {
    ts_buf_puts(b, ",\"generationConfig\":{\"maxOutputTokens\":");
    ts_buf_append_u64(b, r->max_tokens);
    ts_buf_putc(b, '}');
  }
  ts_buf_putc(b, '}');
  return b->err;
}

static const char *const gemini_paths[] = {":streamGenerateContent", NULL};
static const ts_schema_loc gemini_schemas[] = {
    {"functionDeclarations", NULL, {"parameters", "parametersJsonSchema"}},
    {"function_declarations", NULL, {"parameters", "parametersJsonSchema"}},
    {NULL, NULL, {NULL, NULL}}};

/* Gemini (generativelanguage.googleapis.com) and Vertex AI. */
const ts_provider ts_provider_gemini = {
    .format = TS_FORMAT_GEMINI,
    .name = "gemini",
    .detect_doc = gemini_doc,
    .event = gemini_event,
    .fast_event = gemini_fast,
    .ends_at_eof = 1,
    .unfinished = gemini_unfinished,
    .request = gemini_request,
    .host_hint = "generativelanguage.googleapis.com",
    .url_suffix = "/models/{model}:streamGenerateContent?alt=sse",
    .key_env = "GEMINI_API_KEY",
    .auth_header = "x-goog-api-key",
    .auth_prefix = "",
    .path_suffixes = gemini_paths,
    .schemas = gemini_schemas,
    .json_stream = 1, /* without alt=sse: one JSON array whose elements arrive over time */
};
