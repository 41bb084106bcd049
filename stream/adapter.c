/*
 * adapter.c: the adapter core behind adapter.h.
 *
 * Four providers stream a model turn in four shapes; downstream wants one. This file
 * owns everything the four have in common and leaves each provider module only the
 * reading of its own payload shape:
 *
 *   - framing of work: one SSE event in, its payload parsed exactly once (jsmn, on a
 *     token array allocated at ts_adapter_new), the parse handed to the provider module;
 *   - the call table: providers name calls by their own keys (an index that can be
 *     reused, an item id, a block index, nothing at all); the table maps those keys to
 *     slots and slots to the turn's call indexes 0, 1, 2 ... in order of appearance,
 *     and it enforces the per-call order CALL_BEGIN, CALL_ARGS*, CALL_END exactly once;
 *   - the end of the turn: stop reason and usage arrive in one event and the turn
 *     ends in a later one, so both are copied into fixed storage until TURN_END;
 *   - errors and the callback: an error belongs to its event (the adapter goes on) unless
 *     the provider ended the stream with it; a callback that asks to stop stops
 *     everything, and nothing is reported after that. Argument fragments, the event a
 *     big call sends thousands of, may go to a function of their own instead
 *     (ts_adapter_set_args_fn), under the same rules.
 *
 * Why slots and indexes differ: a call refused for a limit keeps a slot (so its later
 * fragments are recognised and dropped instead of being mistaken for a new call) but
 * never gets an index, so the indexes downstream sees stay dense.
 *
 * Lookups scan the table backwards (the most recent call with a key wins, which is what
 * a reused key means); a turn has a handful of calls, and TS_ADAPTER_MAX_CALLS bounds the
 * scan.
 *
 * Memory. A gateway holds one adapter per tapped stream, most of them idle between two
 * chunks, so an adapter holds what its turn uses and no more: the struct itself (about
 * 3.5 KiB, most of it the providers' scratch block), and, each allocated at its first real
 * use and grown only when a bigger one comes, the call table (TS_ADAPTER_FIRST_SLOTS slots
 * at the first call, doubling up to TS_ADAPTER_MAX_CALLS), jsmn's token array (at the
 * first payload a provider reads with jsmn rather than in one pass: OpenAI Chat's deltas
 * never need it) and the usage text (at the turn's end). None of it is per event: a table
 * or text that has grown is reused for the rest of the turn, and an allocation that fails
 * is an ordinary TS_E_NOMEM error of that event. Before, the struct held the whole table
 * of 256 slots (70 KiB), the usage text and a 320 KiB token array from ts_adapter_new on.
 */
#define TS_ADAPTER_INTERNAL
#include "stream/adapter.h"

#include <stdlib.h>
#include <string.h>

#include "stream/json_scan_impl.h"
#include "stream/json_shape.h"
#include "stream/json_shape_impl.h"
#include "stream/json_unescape.h"
#include "stream/json_view.h"

enum { SLOT_OPEN = 1, SLOT_ENDED, SLOT_REFUSED };

typedef struct {
  int64_t nkey;     /* integer key, -1 for none */
  uint32_t index;   /* the call's index in the turn (not for refused slots) */
  uint8_t state;    /* SLOT_* */
  uint8_t has_args; /* a CALL_ARGS was reported */
  uint8_t tag;      /* the provider's own notes (ts__adapter_call_tag) */
  uint16_t key_len;
  char key[TS_ADAPTER_MAX_ID]; /* string key (Responses item_id, Chat id), may be empty */
} ms_call;

struct ts_adapter {
  ts_format fmt;
  ts_adapter_cb cb;
  void *user;
  union { /* the reasons not to take ts_adapter_feed_fragment's way, tested as one word */
    struct {
      uint8_t aborted;  /* the callback asked to stop: sticky */
      uint8_t done;     /* the provider ended the turn (TURN_END or a terminal error) */
      uint8_t finished; /* ts_adapter_finish was called */
      uint8_t general;  /* ts_adapter_set_general: no one-pass reading */
      uint8_t no_memo;  /* ts_adapter_set_memo(a, 0): the one-pass readers keep no shape memo */
      uint8_t not_direct; /* the format's row (row_of) has no memo_fragments, or none is known yet */
      uint8_t spare[2];   /* always 0: the word has no byte outside a member */
    };
    uint64_t no_fragment;
  };
  uint8_t simd;     /* the fragment path's match with AVX2 (the CPU has it; ts__adapter_set_simd) */
  uint8_t has_stop;
  uint8_t overflow; /* TS_E_MS_TOO_MANY_CALLS was reported */
  uint8_t sse_only; /* auto detection among the SSE formats only (ts_adapter_narrow) */
  uint8_t fed;      /* an event was fed */
  uint64_t memo_hits; /* payloads read from the shape memo (ts_adapter_memo_hits) */
  uint32_t keys_gen;  /* changes whenever a slot is added or a key replaced (never 0) */
  const char *hb_event; /* the event being offered to the one pass (ts_adapter_feed_event) */
  size_t hb_event_len, hb_len;
  char *hb_data;
  int row_fmt;        /* the format `row` is the row of (-1: none yet; see row_of) */
  const ts_provider *row;
  int finish_rc;
  int ev_err;       /* first error reported during the current feed / finish */
  unsigned flags;   /* providers' own bits */
  _Alignas(max_align_t) unsigned char scratch[TS_ADAPTER_SCRATCH]; /* providers' own state */
  int last;         /* slot that most recently began or got arguments, -1 */
  uint32_t nslots;
  uint32_t ncalls; /* indexes handed out */
  uint32_t slot_cap; /* slots allocated in calls (grown at a call's begin, see "Memory") */
  size_t stop_len, usage_len, usage_cap;
  ts_jv jv;        /* its tokens allocated at the first jsmn parse (jv_ready) */
  char stop[TS_ADAPTER_MAX_ID];
  char *usage;     /* usage_cap bytes (at most TS_ADAPTER_MAX_USAGE), from the first usage */
  ts_adapter_args_fn args_fn; /* CALL_ARGS go here when set (ts_adapter_set_args_fn) */
  ms_call *calls;  /* slot_cap slots, nslots in use */
};

/* Slots the call table starts with (most turns have one to four calls), and the usage
 * text's first size (a usage object is 50-300 bytes); both double from there, so a turn
 * makes at most 7 allocations for each (TS_ADAPTER_FEED_ALLOCS in adapter.h). */
#define TS_ADAPTER_FIRST_SLOTS 4
#define TS_ADAPTER_FIRST_USAGE 64
_Static_assert(TS_ADAPTER_FIRST_SLOTS << 6 == TS_ADAPTER_MAX_CALLS, "7 sizes of the call table");
_Static_assert(TS_ADAPTER_FIRST_USAGE << 6 == TS_ADAPTER_MAX_USAGE, "7 sizes of the usage text");

/* ---- detection ------------------------------------------------------------------ */

static int view_eq(ts_view v, const char *lit) {
  size_t n = strlen(lit);
  return v.len == n && memcmp(v.p, lit, n) == 0;
}

static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static ts_view trim(const char *p, size_t n) {
  while (n > 0 && is_ws(p[0])) p++, n--;
  while (n > 0 && is_ws(p[n - 1])) n--;
  ts_view v = {p, n};
  return v;
}

static ts_view name_view(const char *event, size_t event_len) {
  ts_view v = {event ? event : "", event ? event_len : 0};
  return v;
}

ts_format ts_adapter_detect(const char *event, size_t event_len, const char *data, size_t data_len) {
  ts_view d = trim(data ? data : "", data ? data_len : 0);
  ts_format f = ts_provider_detect_name(name_view(event, event_len), d);
  if (f != TS_FORMAT_AUTO || d.len == 0) return f;
  ts_jv jv;
  if (ts_jv_init(&jv, TS_ADAPTER_MAX_TOKENS) != TS_E_OK) return TS_FORMAT_AUTO;
  /* Detection never decodes a string, so the const payload is only read. */
  if (ts_jv_parse(&jv, (char *)d.p, d.len) == TS_E_OK) f = ts_provider_detect_doc(&jv);
  ts_jv_fini(&jv);
  return f;
}

/* ---- life cycle ---------------------------------------------------------------- */

int ts_adapter_new(ts_adapter **out, ts_format format, ts_adapter_cb cb, void *user) {
  if (!out || !cb || (format != TS_FORMAT_AUTO && !ts_provider_get(format))) return TS_E_INVAL;
  /* The struct only: the call table, the token array and the usage text come with their
   * first use (see "Memory" at the top). */
  ts_adapter *a = calloc(1, sizeof *a);
  if (!a) return TS_E_NOMEM;
  a->fmt = format;
  a->cb = cb;
  a->user = user;
  a->last = -1;
  a->keys_gen = 1;
  a->row_fmt = -1;
  a->not_direct = 1;
  ts__adapter_set_simd(a, 1);
  *out = a;
  return TS_E_OK;
}

void ts_adapter_set_general(ts_adapter *a, int on) {
  if (a) a->general = on != 0;
}

void ts_adapter_set_memo(ts_adapter *a, int on) {
  if (!a) return;
  a->no_memo = on == 0; /* a memo kept before stays true to its bytes: nothing to clear */
}

uint64_t ts_adapter_memo_hits(const ts_adapter *a) { return a ? a->memo_hits : 0; }

static inline ts_json_shape *memo_of(ts_adapter *a) {
  _Static_assert(sizeof(ts_json_shape) <= TS_ADAPTER_SCRATCH, "the memo lives in the scratch block");
  return a->no_memo ? NULL : (ts_json_shape *)(void *)a->scratch;
}

ts_json_shape *ts__adapter_memo(ts_adapter *a) { return memo_of(a); }

void ts__adapter_memo_hit(ts_adapter *a) { a->memo_hits++; }

/* ts__adapter_call_args_value, inline in the memo paths that report a hit's fragment. */
static inline __attribute__((always_inline)) void args_value(ts_adapter *a, int slot, const ts_json_shape_value *v) {
  a->memo_hits++;
  if (slot < 0) return;
  ts_view val = v->val;
  if (!val.p && ts__adapter_decode(a, v->used.raw, v->used.escaped, &val) < 0) return;
  ts__adapter_call_args(a, slot, val);
}

int ts__adapter_memo_fragment(ts_adapter *a, const char *text, size_t len, ts_view name) {
  ts_json_shape *memo = memo_of(a);
  ts_json_shape_value v;
  if (!memo) return 0;
  /* a memo whose only span is the fragment (Anthropic's deltas, Bedrock's with the padding
   * cut off): the string read by its extent, as ts_adapter_feed_fragment reads it */
  if (!(memo->one ? (a->simd ? ts__json_shape_match_one_avx2(memo, text, len, name, &v)
                             : ts_json_shape_match_one(memo, text, len, name, &v))
                  : ts_json_shape_match_value(memo, text, len, name, &v)))
    return 0;
  /* P0's reading (a fragment for the call with P0's key) with this payload's fragment,
   * decoded by the match itself */
  if (memo->kind)
    args_value(a, ts__adapter_memo_slot(a, memo, 0), &v);
  else
    a->memo_hits++;
  return 1;
}

/* The call table's lookups for a memo hit: the memo's key meets the same table as at the
 * previous hit unless a slot was added or a key replaced since (keys_gen), so the slot
 * found then is the slot found now; a Responses item id is 53 bytes to compare per event
 * otherwise. */
static void keys_changed(ts_adapter *a) {
  if (++a->keys_gen == 0) a->keys_gen = 1;
}

static __attribute__((noinline)) int memo_slot_find(ts_adapter *a, ts_json_shape *m, int by_key) {
  m->slot = by_key ? ts__adapter_call_by_key(a, m->key) : ts__adapter_call_by_nkey(a, m->nkey);
  m->slot_gen = a->keys_gen;
  return m->slot;
}

int ts__adapter_memo_slot(ts_adapter *a, ts_json_shape *m, int by_key) {
  return m->slot_gen == a->keys_gen ? m->slot : memo_slot_find(a, m, by_key);
}

int ts__adapter_memo_key_fragment(ts_adapter *a, char *text, size_t len, ts_view name, int text_kind,
                                  int (*miss)(ts_adapter *, char *, size_t, ts_view)) {
  ts_json_shape *memo = memo_of(a);
  ts_json_shape_value v;
  if (!memo || !ts_json_shape_match_value(memo, text, len, name, &v)) return miss(a, text, len, name);
  if (memo->kind == text_kind) { /* a text delta: TEXT_DELTA with this payload's text */
    a->memo_hits++;
    ts_view val = v.val;
    if (!val.p && ts__adapter_decode(a, v.used.raw, v.used.escaped, &val) <= 0) return 1;
    ts__adapter_text(a, val);
    return 1;
  }
  args_value(a, memo->slot_gen == a->keys_gen ? memo->slot : memo_slot_find(a, memo, 1), &v);
  return 1;
}

void ts__adapter_call_args_value(ts_adapter *a, int slot, const ts_json_shape_value *v) { args_value(a, slot, v); }

void ts__adapter_memo_keep_fragment(ts_adapter *a, const char *text, size_t len, ts_view name,
                                    const ts_json_shape_notes *notes, int has_key, int64_t nkey, ts_view raw) {
  ts_json_shape *memo = ts__adapter_memo(a);
  if (!memo) return;
  if (raw.p && ts_json_shape_keep(memo, text, len, name, notes, raw)) {
    memo->kind = has_key;
    memo->nkey = nkey;
  } else {
    ts_json_shape_clear(memo);
  }
}

void ts_adapter_free(ts_adapter *a) {
  if (!a) return;
  ts_jv_fini(&a->jv);
  free(a->calls);
  free(a->usage);
  free(a);
}

/* The token array, allocated at the first payload that jsmn reads. TS_E_OK or TS_E_NOMEM. */
static int jv_ready(ts_adapter *a) {
  return a->jv.cap ? TS_E_OK : ts_jv_init(&a->jv, TS_ADAPTER_MAX_TOKENS);
}

/* Room for one more slot in the call table (nslots < TS_ADAPTER_MAX_CALLS): the first
 * TS_ADAPTER_FIRST_SLOTS at the first call, then doubling. TS_E_OK or TS_E_NOMEM. */
static int slots_ready(ts_adapter *a) {
  if (a->nslots < a->slot_cap) return TS_E_OK;
  uint32_t cap = a->slot_cap ? a->slot_cap * 2 : TS_ADAPTER_FIRST_SLOTS;
  if (cap > TS_ADAPTER_MAX_CALLS) cap = TS_ADAPTER_MAX_CALLS;
  ms_call *nc = realloc(a->calls, (size_t)cap * sizeof *nc);
  if (!nc) return TS_E_NOMEM;
  a->calls = nc;
  a->slot_cap = cap;
  return TS_E_OK;
}

ts_format ts_adapter_format_of(const ts_adapter *a) { return a->fmt; }

int ts_adapter_done(const ts_adapter *a) { return a->done; }

int ts_adapter_narrow(ts_adapter *a, ts_format format, int sse_only) {
  if (!a || a->fmt != TS_FORMAT_AUTO || a->fed || a->finished ||
      (format != TS_FORMAT_AUTO && !ts_provider_get(format)))
    return TS_E_INVAL;
  a->fmt = format;
  a->sse_only = sse_only ? 1 : 0;
  return TS_E_OK;
}

/* A detected format, unless detection is limited to the SSE formats and it is not one. */
static ts_format allowed(const ts_adapter *a, ts_format f) {
  const ts_provider *p = ts_provider_get(f);
  return a->sse_only && p && p->media_type ? TS_FORMAT_AUTO : f;
}

/* ts_provider_get(a->fmt), looked up again only when the format changed: asked twice per
 * event (the keep question, the feed), always with the same answer once it is known. */
static inline const ts_provider *row_of(ts_adapter *a) {
  if (__builtin_expect(a->row_fmt != (int)a->fmt, 0)) {
    a->row = ts_provider_get(a->fmt);
    a->row_fmt = (int)a->fmt;
    a->not_direct = !(a->row && a->row->fast_event && a->row->memo_fragments);
  }
  return a->row;
}

/* ---- reporting ------------------------------------------------------------------ */

/* The JSON view speaks about documents; the adapter's errors speak about the stream's
 * payloads (and their names are part of the event schema). */
static int payload_code(int jv_rc) {
  switch (jv_rc) {
    case TS_E_JV_BAD_JSON: return TS_E_MS_BAD_JSON;
    case TS_E_JV_TOO_MANY_TOKENS: return TS_E_MS_TOO_MANY_TOKENS;
    case TS_E_JV_NOT_STRING: return TS_E_MS_BAD_SHAPE;
    default: return jv_rc;
  }
}

static void emit(ts_adapter *a, ts_adapter_event *ev) {
  if (a->aborted) return;
  if (a->cb(a->user, ev) != 0) a->aborted = 1;
}

void ts__adapter_error(ts_adapter *a, int code, const char *msg, size_t len, int terminal) {
  if (a->aborted) return;
  if (!a->ev_err) a->ev_err = code;
  if (!msg) {
    msg = ts_err_message(code);
    len = strlen(msg);
  }
  ts_adapter_event ev = {0};
  ev.kind = TS_ADAPTER_ERROR;
  ev.terminal = terminal ? 1 : 0;
  ev.code = code;
  ev.error.p = msg;
  ev.error.len = len;
  if (terminal) a->done = 1;
  emit(a, &ev);
}

void ts__adapter_provider_error(ts_adapter *a, ts_jv *jv, int err, const char *fallback) {
  ts_view msg = {fallback, fallback ? strlen(fallback) : 0};
  int m = ts_jv_type_of(jv, err) == TS_JV_OBJECT ? ts_jv_get(jv, err, "message") : err;
  if (ts_jv_type_of(jv, m) == TS_JV_STRING) {
    if (ts_jv_str(jv, m, &msg) != TS_E_OK) msg = ts_jv_raw(jv, err);
  } else if (err >= 0) {
    msg = ts_jv_raw(jv, err);
  }
  ts__adapter_error(a, TS_E_MS_PROVIDER, msg.p, msg.len, 1); /* NULL: the table's message */
}

int ts__adapter_string(ts_adapter *a, ts_jv *jv, int i, ts_view *out) {
  out->p = "";
  out->len = 0;
  if (i < 0 || ts_jv_is_null(jv, i)) return 0;
  int rc = payload_code(ts_jv_str(jv, i, out));
  if (rc != TS_E_OK) {
    out->p = "";
    out->len = 0;
    ts__adapter_error(a, rc, NULL, 0, 0);
    return -1;
  }
  return 1;
}

int ts__adapter_decode(ts_adapter *a, ts_view raw, int escaped, ts_view *out) {
  char *p = (char *)raw.p; /* the payload is the caller's writable buffer */
  ssize_t w = escaped ? ts_json_unescape_all(p, raw.len, p) : (ssize_t)raw.len;
  if (w < 0) {
    out->p = "";
    out->len = 0;
    ts__adapter_error(a, (int)w, NULL, 0, 0);
    return -1;
  }
  out->p = p;
  out->len = (size_t)w;
  return 1;
}

void ts__adapter_text(ts_adapter *a, ts_view text) {
  if (text.len == 0) return;
  ts_adapter_event ev = {0};
  ev.kind = TS_ADAPTER_TEXT_DELTA;
  ev.text = text;
  emit(a, &ev);
}

void ts__adapter_nkey_fragment(ts_adapter *a, int has_key, int64_t nkey, ts_view raw, int escaped) {
  int slot = has_key ? ts__adapter_call_by_nkey(a, nkey) : -1;
  ts_view v;
  if (slot >= 0 && raw.p && ts__adapter_decode(a, raw, escaped, &v) > 0) ts__adapter_call_args(a, slot, v);
}

/* ---- the call table -------------------------------------------------------------- */

int ts__adapter_call_begin(ts_adapter *a, int64_t nkey, ts_view key, ts_view id, ts_view name) {
  if (a->nslots >= TS_ADAPTER_MAX_CALLS) {
    /* Once per turn: every call past the limit is dropped, and its later pieces would
     * only repeat the news. No slot is left to be "the latest call" either, so a piece
     * that names no call cannot be pinned on the last call that fitted. */
    if (!a->overflow) ts__adapter_error(a, TS_E_MS_TOO_MANY_CALLS, NULL, 0, 0);
    a->overflow = 1;
    a->last = -1;
    return -1;
  }
  if (slots_ready(a) != TS_E_OK) {
    ts__adapter_error(a, TS_E_NOMEM, NULL, 0, 0); /* this call is not tracked */
    return -1;
  }
  int slot = (int)a->nslots++;
  keys_changed(a);
  ms_call *c = &a->calls[slot];
  memset(c, 0, offsetof(ms_call, key));
  c->nkey = nkey;
  a->last = slot;
  int fits = key.len <= TS_ADAPTER_MAX_ID;
  if (fits) {
    if (key.len) memcpy(c->key, key.p, key.len);
    c->key_len = (uint16_t)key.len;
  }
  if (!fits || id.len > TS_ADAPTER_MAX_ID || name.len > TS_ADAPTER_MAX_ID) {
    c->state = SLOT_REFUSED;
    ts__adapter_error(a, TS_E_MS_ID_TOO_LONG, NULL, 0, 0);
    return -1;
  }
  c->state = SLOT_OPEN;
  c->index = a->ncalls++;
  ts_adapter_event ev = {0};
  ev.kind = TS_ADAPTER_CALL_BEGIN;
  ev.index = c->index;
  ev.id = id;
  ev.name = name;
  emit(a, &ev);
  return slot;
}

int ts__adapter_call_by_nkey(const ts_adapter *a, int64_t nkey) {
  for (int s = (int)a->nslots - 1; s >= 0; s--)
    if (a->calls[s].nkey == nkey) return s;
  return -1;
}

int ts__adapter_call_by_key(const ts_adapter *a, ts_view key) {
  if (key.len == 0) return -1;
  for (int s = (int)a->nslots - 1; s >= 0; s--) {
    const ms_call *c = &a->calls[s];
    if (c->key_len == key.len && memcmp(c->key, key.p, key.len) == 0) return s;
  }
  return -1;
}

int ts__adapter_call_last(const ts_adapter *a) { return a->last; }

int ts__adapter_call_ended(const ts_adapter *a, int slot) {
  return slot >= 0 && a->calls[slot].state == SLOT_ENDED;
}

uint8_t *ts__adapter_call_tag(ts_adapter *a, int slot) { return &a->calls[slot].tag; }

int ts__adapter_calls_known(const ts_adapter *a, uint8_t unknown) {
  for (uint32_t s = 0; s < a->nslots; s++) {
    const ms_call *c = &a->calls[s];
    if (c->state == SLOT_OPEN && (!c->has_args || (c->tag & unknown))) return 0;
  }
  return 1;
}

int ts__adapter_call_has_args(const ts_adapter *a, int slot) {
  return slot >= 0 && a->calls[slot].has_args;
}

ts_view ts__adapter_call_key(const ts_adapter *a, int slot) {
  ts_view v = {a->calls[slot].key, a->calls[slot].key_len};
  return v;
}

void ts__adapter_call_set_key(ts_adapter *a, int slot, ts_view key) {
  ms_call *c = &a->calls[slot];
  if (key.len > TS_ADAPTER_MAX_ID) {
    ts__adapter_error(a, TS_E_MS_ID_TOO_LONG, NULL, 0, 0);
    return;
  }
  memmove(c->key, key.p, key.len);
  c->key_len = (uint16_t)key.len;
  keys_changed(a);
}

void ts__adapter_call_args(ts_adapter *a, int slot, ts_view text) {
  if (slot < 0) return;
  ms_call *c = &a->calls[slot];
  a->last = slot;
  if (c->state != SLOT_OPEN || text.len == 0) return;
  c->has_args = 1;
  if (a->args_fn) { /* the fragment path: no event to build, no switch on its kind */
    if (!a->aborted && a->args_fn(a->user, c->index, text) != 0) a->aborted = 1;
    return;
  }
  ts_adapter_event ev = {0};
  ev.kind = TS_ADAPTER_CALL_ARGS;
  ev.index = c->index;
  ev.text = text;
  emit(a, &ev);
}

void ts__adapter_call_end(ts_adapter *a, int slot) {
  if (slot < 0) return;
  ms_call *c = &a->calls[slot];
  if (c->state != SLOT_OPEN) return;
  c->state = SLOT_ENDED;
  ts_adapter_event ev = {0};
  ev.kind = TS_ADAPTER_CALL_END;
  ev.index = c->index;
  emit(a, &ev);
}

void ts__adapter_end_all(ts_adapter *a) {
  for (uint32_t s = 0; s < a->nslots; s++) ts__adapter_call_end(a, (int)s);
}

/* ---- end of the turn --------------------------------------------------------------- */

void ts__adapter_set_stop(ts_adapter *a, ts_view stop) {
  a->has_stop = 1;
  if (stop.len > sizeof a->stop) {
    a->stop_len = 0;
    ts__adapter_error(a, TS_E_MS_FIELD_TOO_LONG, NULL, 0, 0);
    return;
  }
  memcpy(a->stop, stop.p, stop.len);
  a->stop_len = stop.len;
}

void ts__adapter_set_usage(ts_adapter *a, ts_view usage) {
  if (usage.len > TS_ADAPTER_MAX_USAGE) {
    a->usage_len = 0;
    ts__adapter_error(a, TS_E_MS_FIELD_TOO_LONG, NULL, 0, 0);
    return;
  }
  if (usage.len > a->usage_cap) { /* sized to the text, a longer one doubling it */
    size_t cap = a->usage_cap ? a->usage_cap * 2 : TS_ADAPTER_FIRST_USAGE;
    if (cap < usage.len) cap = usage.len;
    if (cap > TS_ADAPTER_MAX_USAGE) cap = TS_ADAPTER_MAX_USAGE;
    char *nu = realloc(a->usage, cap);
    if (!nu) {
      a->usage_len = 0;
      ts__adapter_error(a, TS_E_NOMEM, NULL, 0, 0);
      return;
    }
    a->usage = nu;
    a->usage_cap = cap;
  }
  if (usage.len) memmove(a->usage, usage.p, usage.len);
  a->usage_len = usage.len;
}

int ts__adapter_has_stop(const ts_adapter *a) { return a->has_stop; }

ts_view ts__adapter_usage(const ts_adapter *a) {
  return (ts_view){a->usage_len ? a->usage : "", a->usage_len};
}

ts_view ts__adapter_event_type(ts_jv *jv, ts_view event) {
  int type_tok = ts_jv_get(jv, 0, "type");
  if (ts_jv_type_of(jv, type_tok) != TS_JV_STRING) return event;
  ts_view raw = ts_jv_raw(jv, type_tok);
  return (ts_view){raw.p + 1, raw.len - 2};
}

void ts__adapter_turn_end(ts_adapter *a) {
  ts__adapter_end_all(a);
  a->done = 1;
  ts_adapter_event ev = {0};
  ev.kind = TS_ADAPTER_TURN_END;
  ev.stop_reason.p = a->stop;
  ev.stop_reason.len = a->stop_len;
  ev.usage = ts__adapter_usage(a);
  emit(a, &ev);
}

unsigned *ts__adapter_flags(ts_adapter *a) { return &a->flags; }

void *ts__adapter_scratch(ts_adapter *a) { return a->scratch; }

/* What a byte of a decoded value becomes inside a JSON string: 0 as itself, else the
 * letter after the backslash ('u' for \u00XX). */
static const char esc_of[256] = {
    ['"'] = '"', ['\\'] = '\\', ['\n'] = 'n', ['\t'] = 't', ['\r'] = 'r',
    [0x00] = 'u', [0x01] = 'u', [0x02] = 'u', [0x03] = 'u', [0x04] = 'u', [0x05] = 'u',
    [0x06] = 'u', [0x07] = 'u', [0x08] = 'u', [0x0B] = 'u', [0x0C] = 'u', [0x0E] = 'u',
    [0x0F] = 'u', [0x10] = 'u', [0x11] = 'u', [0x12] = 'u', [0x13] = 'u', [0x14] = 'u',
    [0x15] = 'u', [0x16] = 'u', [0x17] = 'u', [0x18] = 'u', [0x19] = 'u', [0x1A] = 'u',
    [0x1B] = 'u', [0x1C] = 'u', [0x1D] = 'u', [0x1E] = 'u', [0x1F] = 'u'};

/* Runs of bytes that stay as they are are copied whole (a value with none to escape, the
 * common fragment, goes on as a view with no copy); a run longer than the buffer goes on
 * as a view of its own. */
void ts__adapter_call_args_escaped(ts_adapter *a, int slot, ts_view text) {
  static const char hex[] = "0123456789abcdef";
  char out[512];
  size_t o = 0;
  const char *p = text.p, *end = p + text.len;
  while (p < end) {
    const char *q = p;
    while (q < end && !esc_of[(unsigned char)*q]) q++;
    size_t run = (size_t)(q - p);
    if (o == 0 && q == end) { /* nothing buffered and nothing left to escape */
      ts__adapter_call_args(a, slot, (ts_view){p, run});
      return;
    }
    if (o + run > sizeof out) {
      if (o) ts__adapter_call_args(a, slot, (ts_view){out, o});
      o = 0;
      if (run > sizeof out - 6) { /* too long to buffer: on as it lies */
        ts__adapter_call_args(a, slot, (ts_view){p, run});
        run = 0;
      }
    }
    memcpy(out + o, p, run);
    o += run;
    if (q == end) break;
    if (o + 6 > sizeof out) {
      ts__adapter_call_args(a, slot, (ts_view){out, o});
      o = 0;
    }
    unsigned char c = (unsigned char)*q;
    char e = esc_of[c];
    out[o++] = '\\';
    if (e != 'u') {
      out[o++] = e;
    } else {
      out[o++] = 'u', out[o++] = '0', out[o++] = '0';
      out[o++] = hex[c >> 4], out[o++] = hex[c & 15];
    }
    p = q + 1;
  }
  if (o) ts__adapter_call_args(a, slot, (ts_view){out, o});
}

/* ---- feeding ----------------------------------------------------------------------- */

/* An event that told no format: only an error is worth reporting. */
static void undetected(ts_adapter *a) {
  ts_jv *jv = &a->jv;
  int root = ts_jv_type_of(jv, 0) == TS_JV_ARRAY ? ts_jv_first(jv, 0) : 0;
  int err = ts_jv_get(jv, root, "error");
  if (err >= 0 && !ts_jv_is_null(jv, err))
    ts__adapter_provider_error(a, jv, err, NULL);
  else if (ts_jv_eq(jv, ts_jv_get(jv, root, "type"), "error"))
    ts__adapter_provider_error(a, jv, root, NULL);
}

/* The row whose sentinel payload `d` is, or NULL. */
static const ts_provider *sentinel_of(ts_view d) {
  for (size_t i = 0; i < ts_provider_count(); i++) {
    const ts_provider *p = ts_provider_at(i);
    if (p->sentinel && view_eq(d, p->sentinel)) return p;
  }
  return NULL;
}

static __attribute__((noinline)) int feed_event(ts_adapter *a, const char *event, size_t event_len, char *data,
                                               size_t data_len, int tried);

/* The way nearly every event comes: the format known, its row with a one-pass reader, a
 * payload that is an object with nothing to trim around it. Everything else, and a
 * payload the one pass hands back, goes through feed_event. */
int ts_adapter_feed_event(ts_adapter *a, const char *event, size_t event_len, char *data, size_t data_len) {
  const ts_provider *p;
  if (a && data && data_len && data[0] == '{' && data[data_len - 1] == '}' && !a->aborted && !a->done &&
      !a->finished && !a->general && a->fmt != TS_FORMAT_AUTO && (p = row_of(a)) && p->fast_event) {
    a->ev_err = 0;
    a->fed = 1;
    /* kept in the adapter rather than in saved registers across the call: the hand-back
     * below is rare, the call is per event */
    a->hb_event = event, a->hb_event_len = event_len, a->hb_data = data, a->hb_len = data_len;
    if (p->fast_event(a, data, data_len, name_view(event, event_len))) return a->aborted ? TS_E_ABORTED : a->ev_err;
    return feed_event(a, a->hb_event, a->hb_event_len, a->hb_data, a->hb_len, 1);
  }
  return feed_event(a, event, event_len, data, data_len, 0);
}

int ts_adapter_feed_error(ts_adapter *a, const char *msg, size_t len) {
  if (!a || (!msg && len)) return TS_E_INVAL;
  if (a->aborted) return TS_E_ABORTED;
  if (a->done || a->finished) return TS_E_OK;
  a->ev_err = 0;
  a->fed = 1;
  ts__adapter_error(a, TS_E_MS_PROVIDER, len ? msg : NULL, len, 1);
  return a->aborted ? TS_E_ABORTED : a->ev_err;
}

/* The whole of ts_adapter_feed_event; tried: the one pass has read this payload already
 * and handed it back (nothing reported, nothing changed). */
static int feed_event(ts_adapter *a, const char *event, size_t event_len, char *data, size_t data_len, int tried) {
  if (!a || (!data && data_len)) return TS_E_INVAL;
  if (a->aborted) return TS_E_ABORTED;
  if (a->done || a->finished) return TS_E_OK;
  a->ev_err = 0;
  a->fed = 1;
  ts_view name = name_view(event, event_len);
  ts_view d = trim(data ? data : "", data ? data_len : 0);
  const ts_provider *p = row_of(a), *s;
  if (d.len == 0) {
    if (view_eq(name, "error") && (!p || p->named_errors)) ts__adapter_provider_error(a, &a->jv, -1, NULL);
  } else if (d.p[0] != '{' && (s = sentinel_of(d))) { /* a sentinel is never an object */
    /* not JSON: it ends its provider's turn, and means nothing to any other */
    if (a->fmt == TS_FORMAT_AUTO && allowed(a, s->format) != TS_FORMAT_AUTO) a->fmt = s->format, p = s;
    if (p == s && p->on_sentinel) p->on_sentinel(a);
  } else {
    if (a->fmt == TS_FORMAT_AUTO) { /* else p is already the format's row */
      a->fmt = allowed(a, ts_provider_detect_name(name, (ts_view){NULL, 0}));
      p = ts_provider_get(a->fmt);
    }
    char *text = data + (d.p - data);
    /* the one pass first: it answers for the names skip would skip (provider.h) */
    if (!tried && p && p->fast_event && !a->general && p->fast_event(a, text, d.len, name))
      return a->aborted ? TS_E_ABORTED : a->ev_err;
    if (p && p->skip && p->skip(name)) return TS_E_OK;
    int rc = jv_ready(a);
    if (rc == TS_E_OK) rc = payload_code(ts_jv_parse(&a->jv, text, d.len));
    if (rc == TS_E_MS_TOO_MANY_TOKENS && p && p->oversized && p->oversized(a, name)) {
      /* handled by its name alone */
    } else if (rc != TS_E_OK) {
      ts__adapter_error(a, rc, NULL, 0, 0);
    } else {
      if (a->fmt == TS_FORMAT_AUTO) a->fmt = allowed(a, ts_provider_detect_doc(&a->jv));
      p = ts_provider_get(a->fmt);
      if (p)
        p->event(a, &a->jv, name);
      else
        undetected(a);
    }
  }
  return a->aborted ? TS_E_ABORTED : a->ev_err;
}

/* The row that reads (or, while undetected, would read) an event of this name. */
static const ts_provider *row_for(ts_adapter *a, ts_view name) {
  if (a->fmt != TS_FORMAT_AUTO) return row_of(a);
  return ts_provider_get(ts_provider_detect_name(name, (ts_view){NULL, 0}));
}

size_t ts_adapter_keep(ts_adapter *a, const char *event, size_t event_len) {
  if (!a || a->aborted || a->done || a->finished) return SIZE_MAX;
  const ts_provider *p = row_for(a, name_view(event, event_len));
  return p && p->keep ? p->keep(a, name_view(event, event_len)) : SIZE_MAX;
}

void ts_adapter_set_args_fn(ts_adapter *a, ts_adapter_args_fn fn) {
  if (a) a->args_fn = fn;
}

void ts_adapter_abort(ts_adapter *a) {
  if (a) a->aborted = 1;
}

int ts_adapter_fragments(const ts_adapter *a) {
  if (!a || a->fmt == TS_FORMAT_AUTO || a->general || a->no_memo) return 0;
  const ts_provider *p = ts_provider_get(a->fmt);
  return p && p->fast_event && p->memo_fragments;
}

int ts__adapter_set_simd(ts_adapter *a, int on) {
#ifdef TS_SHAPE_AVX2
  a->simd = on && __builtin_cpu_supports("avx2");
#else
  (void)on;
  a->simd = 0;
#endif
  return a->simd;
}

/* ts_adapter_feed_event -> fast_event -> ts__adapter_memo_fragment -> args_value ->
 * ts__adapter_call_args -> the args function, for the one case where all that comes to a
 * fragment handed on: every step's test is here, the rest is left to the general way.
 * Compiled twice, the head's compare by 16-byte blocks and (wide) by 32-byte ones. */
static inline __attribute__((always_inline)) int fragment(ts_adapter *a, const char *event, size_t event_len,
                                                          const char *data, size_t data_len,
                                                          ts_adapter_fragment *out, int wide) {
  /* aborted, done, finished, general, no_memo, not_direct: one word */
  if (a->no_fragment) return 0;
  ts_json_shape *memo = (ts_json_shape *)(void *)a->scratch;
  /* the match fails for an empty memo, and for a payload that is not P0's object with
   * nothing around it (P0 is one, trimmed: ts_adapter_feed_event's own test) */
  /* (the name is not looked at when the reading does not depend on it: any_name; a NULL
   * name is the empty one, as name_view says, and is never read) */
  ts_view name = {event, event ? event_len : 0};
  if (!memo->one || ts__json_shape_match_one(memo, data, data_len, name, &out->value, wide) <= 0 || !memo->kind)
    return 0; /* (a memo of another kind, or a long fragment: the general way's) */
  int slot = memo->slot_gen == a->keys_gen ? memo->slot : memo_slot_find(a, memo, 0);
  ts_view val = out->value.val;
  /* (an empty value, or one left to the decoder: {NULL, 0}, is the general way's) */
  if (slot < 0 || !val.len || a->calls[slot].state != SLOT_OPEN) return 0;
  ms_call *c = &a->calls[slot];
  a->memo_hits++;
  a->last = slot;
  c->has_args = 1;
  out->index = c->index;
  out->text = val;
  return 1;
}

static __attribute__((noinline)) int fragment_base(ts_adapter *a, const char *event, size_t event_len,
                                                   const char *data, size_t data_len, ts_adapter_fragment *out) {
  return fragment(a, event, event_len, data, data_len, out, 0);
}
#ifdef TS_SHAPE_AVX2
TS_SHAPE_AVX2_TARGET static __attribute__((noinline)) int fragment_avx2(ts_adapter *a, const char *event,
                                                                        size_t event_len, const char *data,
                                                                        size_t data_len, ts_adapter_fragment *out) {
  return fragment(a, event, event_len, data, data_len, out, 1);
}
#endif

ts_adapter_fragment_fn ts_adapter_fragment_reader(const ts_adapter *a) {
#ifdef TS_SHAPE_AVX2
  if (a && a->simd) return fragment_avx2;
#else
  (void)a;
#endif
  return fragment_base;
}

int ts_adapter_feed_fragment(ts_adapter *a, const char *event, size_t event_len, const char *data,
                             size_t data_len, ts_adapter_fragment *out) {
#ifdef TS_SHAPE_AVX2
  if (a->simd) return fragment_avx2(a, event, event_len, data, data_len, out);
#endif
  return fragment_base(a, event, event_len, data, data_len, out);
}

int ts_adapter_keeps(const ts_adapter *a) {
  if (!a || a->aborted || a->done || a->finished) return 0;
  if (a->fmt == TS_FORMAT_AUTO) return 1; /* any row may yet read the stream */
  const ts_provider *p = ts_provider_get(a->fmt);
  return p && p->keep;
}

uint64_t ts_adapter_keep_whole_lengths(const ts_adapter *a) {
  if (!a || a->fmt == TS_FORMAT_AUTO) return 0; /* another row may yet answer */
  const ts_provider *p = ts_provider_get(a->fmt);
  return !p ? 0 : !p->keep ? ~(uint64_t)0 : p->keep_whole_lengths;
}

int ts_adapter_feed_cut(ts_adapter *a, const char *event, size_t event_len) {
  if (!a) return TS_E_INVAL;
  if (a->aborted) return TS_E_ABORTED;
  if (a->done || a->finished) return TS_E_OK;
  a->ev_err = 0;
  ts_view name = name_view(event, event_len);
  if (a->fmt == TS_FORMAT_AUTO) a->fmt = ts_provider_detect_name(name, (ts_view){NULL, 0});
  const ts_provider *p = ts_provider_get(a->fmt);
  if (p && p->oversized) p->oversized(a, name); /* else: a repeat, nothing to read */
  return a->aborted ? TS_E_ABORTED : a->ev_err;
}

static int finish(ts_adapter *a, int cut) {
  if (!a) return TS_E_INVAL;
  if (a->aborted) return TS_E_ABORTED;
  if (a->finished) return a->finish_rc;
  a->finished = 1;
  a->ev_err = 0;
  if (!a->done) {
    const ts_provider *p = ts_provider_get(a->fmt);
    if (p && !cut && p->unfinished && p->unfinished(a)) cut = 1;
    if (p && !cut && (p->ends_at_eof || (p->eof_after_stop && a->has_stop))) {
      ts__adapter_turn_end(a);
    } else {
      ts__adapter_error(a, a->fmt == TS_FORMAT_AUTO ? TS_E_MS_UNKNOWN_FORMAT : TS_E_MS_TRUNCATED, NULL, 0, 1);
      a->done = 0; /* our terminal error, not the provider's: the stream is not done */
    }
  }
  a->finish_rc = a->aborted ? TS_E_ABORTED : a->ev_err;
  return a->finish_rc;
}

int ts_adapter_finish(ts_adapter *a) { return finish(a, 0); }

int ts_adapter_cut(ts_adapter *a) { return finish(a, 1); }
