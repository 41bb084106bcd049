/*
 * json_view.c: jsmn behind a small walking API (see json_view.h).
 *
 * Why jsmn here and our own tokenizer elsewhere: an SSE payload arrives whole (the
 * framer found its end before we see it), so a one-pass parser over a fixed token
 * array is exactly right, and jsmn is that and nothing more. What jsmn does badly,
 * resuming on a growing buffer, never happens here: every document is complete.
 *
 * jsmn is compiled static into this file only (JSMN_STATIC), in strict mode (so a
 * number cannot silently end at a buffer edge) and with parent links (so closing a
 * container walks up its parents instead of scanning every token before it, and so
 * the tree check below is one linear pass).
 *
 * Subtrees: tokens are in source order and a container's `end` is the byte after its
 * closing bracket, so the tokens inside token i are exactly those that start before
 * i ends. Skipping a subtree is a forward scan, with no recursion (hostile nesting
 * cannot exhaust the C stack).
 *
 * Decoded strings: jsmn gives a string value `size` 0 (a key has size 1). Once a value
 * is decoded in place, its `size` holds -1 - decoded_length, which no jsmn token ever
 * has, so a second ts_jv_str returns the same view instead of decoding the decoded
 * text again. A string whose decoding failed becomes JSMN_UNDEFINED: its bytes may be
 * half rewritten, so nothing may read it any more.
 */
#define JSMN_STATIC
#define JSMN_STRICT
#define JSMN_PARENT_LINKS
#include <jsmn.h>

#include "stream/json_view.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "stream/json_scan.h"
#include "stream/json_unescape.h"

#define TOK(v) ((jsmntok_t *)(v)->tok)

int ts_jv_init(ts_jv *v, int cap) {
  memset(v, 0, sizeof *v);
  if (cap < 1) return TS_E_INVAL;
  v->tok = malloc((size_t)cap * sizeof(jsmntok_t));
  if (!v->tok) return TS_E_NOMEM;
  v->cap = cap;
  return TS_E_OK;
}

void ts_jv_fini(ts_jv *v) {
  if (!v) return;
  free(v->tok);
  memset(v, 0, sizeof *v);
}

static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* RFC 8259 number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static int is_number(const char *p, size_t n) {
  size_t i = 0;
  if (i < n && p[i] == '-') i++;
  if (i >= n) return 0;
  if (p[i] == '0') {
    i++;
  } else if (p[i] >= '1' && p[i] <= '9') {
    while (i < n && p[i] >= '0' && p[i] <= '9') i++;
  } else {
    return 0;
  }
  if (i < n && p[i] == '.') {
    size_t d = ++i;
    while (i < n && p[i] >= '0' && p[i] <= '9') i++;
    if (i == d) return 0;
  }
  if (i < n && (p[i] == 'e' || p[i] == 'E')) {
    i++;
    if (i < n && (p[i] == '+' || p[i] == '-')) i++;
    size_t d = i;
    while (i < n && p[i] >= '0' && p[i] <= '9') i++;
    if (i == d) return 0;
  }
  return i == n;
}

static int is_primitive(const char *p, size_t n) {
  if (n == 4 && (memcmp(p, "true", 4) == 0 || memcmp(p, "null", 4) == 0)) return 1;
  if (n == 5 && memcmp(p, "false", 5) == 0) return 1;
  return is_number(p, n);
}

/* The shape jsmn does not enforce: an object's children are keys (strings of size 1),
 * a key has exactly one child, and nothing else but containers has children. */
static int tree_ok(const ts_jv *v) {
  const jsmntok_t *t = TOK(v);
  for (int i = 0; i < v->ntok; i++) {
    if (t[i].start < 0 || t[i].end < t[i].start) return 0;
    int parent = t[i].parent;
    int is_key = parent >= 0 && t[parent].type == JSMN_OBJECT;
    switch (t[i].type) {
    case JSMN_STRING:
      if (t[i].size != (is_key ? 1 : 0)) return 0;
      break;
    case JSMN_PRIMITIVE:
      if (is_key || t[i].size != 0) return 0;
      if (!is_primitive(v->js + t[i].start, (size_t)(t[i].end - t[i].start))) return 0;
      break;
    case JSMN_OBJECT:
    case JSMN_ARRAY:
      if (is_key) return 0;
      break;
    default:
      return 0;
    }
  }
  return 1;
}

int ts_jv_parse(ts_jv *v, char *js, size_t len) {
  v->js = js;
  v->len = len;
  v->ntok = 0;
  if (len >= (size_t)INT_MAX) return TS_E_LIMIT;
  jsmn_parser p;
  jsmn_init(&p);
  int n = jsmn_parse(&p, js, len, TOK(v), (unsigned)v->cap);
  if (n == JSMN_ERROR_NOMEM) return TS_E_JV_TOO_MANY_TOKENS;
  if (n <= 0) return TS_E_JV_BAD_JSON;
  v->ntok = n;
  /* Exactly one value: the first token must reach the last non-blank byte (a second
   * top-level value, or a NUL byte that stopped jsmn early, leaves bytes after it). */
  size_t end = len;
  while (end > 0 && is_ws(js[end - 1])) end--;
  const jsmntok_t *t0 = &TOK(v)[0];
  size_t t0_end = (size_t)t0->end + (t0->type == JSMN_STRING ? 1 : 0); /* closing quote */
  if (t0->type == JSMN_PRIMITIVE || t0_end != end || !tree_ok(v)) {
    v->ntok = 0;
    return TS_E_JV_BAD_JSON;
  }
  return TS_E_OK;
}

ts_jv_type ts_jv_type_of(const ts_jv *v, int i) {
  if (i < 0 || i >= v->ntok) return TS_JV_NONE;
  switch (TOK(v)[i].type) {
  case JSMN_OBJECT: return TS_JV_OBJECT;
  case JSMN_ARRAY: return TS_JV_ARRAY;
  case JSMN_STRING: return TS_JV_STRING;
  case JSMN_PRIMITIVE: return TS_JV_PRIMITIVE;
  default: return TS_JV_NONE;
  }
}

int ts_jv_size(const ts_jv *v, int i) {
  ts_jv_type ty = ts_jv_type_of(v, i);
  return ty == TS_JV_OBJECT || ty == TS_JV_ARRAY ? TOK(v)[i].size : 0;
}

int ts_jv_skip(const ts_jv *v, int i) {
  if (i < 0 || i >= v->ntok) return -1;
  const jsmntok_t *t = TOK(v);
  int j = i + 1;
  if (t[i].type == JSMN_OBJECT || t[i].type == JSMN_ARRAY) {
    while (j < v->ntok && t[j].start < t[i].end) j++;
  }
  return j;
}

static int raw_eq(const ts_jv *v, int i, const char *lit, size_t n) {
  const jsmntok_t *t = &TOK(v)[i];
  return (size_t)(t->end - t->start) == n && memcmp(v->js + t->start, lit, n) == 0;
}

int ts_jv_get(const ts_jv *v, int obj, const char *key) {
  if (ts_jv_type_of(v, obj) != TS_JV_OBJECT) return -1;
  size_t n = strlen(key);
  int members = TOK(v)[obj].size;
  int k = obj + 1;
  for (int m = 0; m < members && k < v->ntok; m++) {
    int val = k + 1; /* tree_ok: a key is followed by its one value */
    if (raw_eq(v, k, key, n)) return val;
    k = ts_jv_skip(v, val);
  }
  return -1;
}

int ts_jv_first(const ts_jv *v, int arr) {
  if (ts_jv_type_of(v, arr) != TS_JV_ARRAY || TOK(v)[arr].size == 0) return -1;
  return arr + 1;
}

int ts_jv_eq(const ts_jv *v, int i, const char *lit) {
  if (ts_jv_type_of(v, i) != TS_JV_STRING || TOK(v)[i].size < 0) return 0;
  return raw_eq(v, i, lit, strlen(lit));
}

int ts_jv_prefix(const ts_jv *v, int i, const char *prefix) {
  if (ts_jv_type_of(v, i) != TS_JV_STRING || TOK(v)[i].size < 0) return 0;
  const jsmntok_t *t = &TOK(v)[i];
  size_t n = strlen(prefix);
  return (size_t)(t->end - t->start) >= n && memcmp(v->js + t->start, prefix, n) == 0;
}

int ts_jv_is_null(const ts_jv *v, int i) {
  return ts_jv_type_of(v, i) == TS_JV_PRIMITIVE && v->js[TOK(v)[i].start] == 'n';
}

int ts_jv_is_true(const ts_jv *v, int i) {
  return ts_jv_type_of(v, i) == TS_JV_PRIMITIVE && v->js[TOK(v)[i].start] == 't';
}

int ts_jv_int(const ts_jv *v, int i, int64_t *out) {
  if (ts_jv_type_of(v, i) != TS_JV_PRIMITIVE) return -1;
  ts_view raw = {v->js + TOK(v)[i].start, (size_t)(TOK(v)[i].end - TOK(v)[i].start)};
  return ts_json_scan_int(raw, out); /* a fraction, an exponent or a literal: -1 */
}

ts_view ts_jv_raw(const ts_jv *v, int i) {
  ts_view r = {NULL, 0};
  if (ts_jv_type_of(v, i) == TS_JV_NONE) return r;
  const jsmntok_t *t = &TOK(v)[i];
  int q = t->type == JSMN_STRING; /* jsmn's string span excludes the quotes */
  r.p = v->js + t->start - q;
  r.len = (size_t)(t->end - t->start) + 2u * (size_t)q;
  return r;
}

int ts_jv_str(ts_jv *v, int i, ts_view *out) {
  if (ts_jv_type_of(v, i) != TS_JV_STRING) return TS_E_JV_NOT_STRING;
  jsmntok_t *t = &TOK(v)[i];
  char *p = v->js + t->start;
  if (t->size < 0) { /* decoded before */
    out->p = p;
    out->len = (size_t)(-1 - t->size);
    return TS_E_OK;
  }
  size_t n = (size_t)(t->end - t->start);
  ssize_t w = memchr(p, '\\', n) ? ts_json_unescape_all(p, n, p) : (ssize_t)n;
  if (w < 0) {
    t->type = JSMN_UNDEFINED;
    return (int)w;
  }
  t->size = -1 - (int)w;
  out->p = p;
  out->len = (size_t)w;
  return TS_E_OK;
}
