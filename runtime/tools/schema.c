/*
 * schema.c: JSON Schema for tool arguments (see schema.h and docs/schema.md).
 *
 * Two documents, one loader. Both the schema text and the arguments go through
 * doc_load: first the project's strict tokenizer (stream/json_tok.h) reads the text
 * once, refusing anything that is not exactly one RFC 8259 value (jsmn alone let
 * `[1,,2]`, `{:}` and friends through), bounding the nesting and counting the tokens
 * exactly; then a private copy wrapped in brackets ("[" text "]", so that a bare
 * number or literal is one element of an array, which strict jsmn can end) goes
 * through json_view's parse into a token array sized once; then one pass decodes every
 * string in place and rejects duplicate keys. After loading, every string and key is a
 * decoded view, and nothing later can fail on the text itself.
 *
 * Duplicate keys are an error rather than "last one wins": the validator and the tool
 * could otherwise read different values of the same argument.
 *
 * Compiling turns the schema document into a graph of nodes in an arena (one free for
 * the whole graph, and out of memory at any point is one cleanup; the compiled
 * patterns, which PCRE2 allocates, hang on a list freed with it). First a walk over
 * every place that holds a schema records the base URI in force there ($id, RFC 3986)
 * and indexes $id and $anchor. Then nodes are made on demand, one per schema location
 * (node_for), and compiled from a queue rather than by recursion, so a $ref to a
 * location that has a node, or is waiting for one, closes a cycle instead of looping,
 * and a long chain of refs costs no stack. Keywords are collected first and processed
 * in a fixed order, so a schema's first error does not depend on key order and draft
 * 4's boolean exclusiveMinimum can look at minimum.
 *
 * Validating walks the node graph over the arguments' tokens. Each check returns 0,
 * V_TYPE (this value failed this node's own type test: used to explain unions), V_FAIL
 * (any other mismatch), or a negative ts_err that aborts everything (the recursion,
 * work or pattern limit, out of memory). anyOf/oneOf/not/if/contains/propertyNames run
 * their schemas quietly (no message); when an anyOf fails and exactly one branch got
 * past its type test, that branch runs again aloud so the message names the real
 * problem ("/a: string shorter than 3 characters" rather than "matches none of
 * anyOf"); when every branch failed on type, the message lists the union of their
 * types. Pointers are not tracked on the way down: the error path is rebuilt from the
 * failing token by a walk from the root, which costs nothing until there is an error.
 *
 * Recursion is bounded by the documents' nesting (checked by the loader) and, for
 * validation through $ref, by a depth counter and a step budget.
 */
#include "tools/schema.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/json_tok.h"
#include "stream/json_view.h"
#include "tools/regex.h"
#include "tools/uri.h"

/* ---- one-line error writer -------------------------------------------------------- */

typedef struct {
  char *p;
  size_t cap, len;
} wr;

static void wr_init(wr *w, char *p, size_t cap) {
  w->p = cap ? p : NULL;
  w->cap = cap;
  w->len = 0;
  if (w->p) w->p[0] = '\0';
}

static void wr_reset(wr *w) {
  w->len = 0;
  if (w->p) w->p[0] = '\0';
}

static void wr_putn(wr *w, const char *s, size_t n) {
  if (!w->p) return;
  for (size_t i = 0; i < n && w->len + 1 < w->cap; i++) w->p[w->len++] = s[i];
  w->p[w->len] = '\0';
}

static void wr_puts(wr *w, const char *s) { wr_putn(w, s, strlen(s)); }

static void wr_fmt(wr *w, const char *fmt, ...) {
  char tmp[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n > 0) wr_putn(w, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* A name from the input: control bytes as \u00XX (one line); in a pointer segment,
 * `~` and `/` escaped per RFC 6901. */
static void wr_name(wr *w, const char *s, size_t n, int pointer) {
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch < 0x20 || ch == 0x7f)
      wr_fmt(w, "\\u%04x", ch);
    else if (pointer && ch == '~')
      wr_puts(w, "~0");
    else if (pointer && ch == '/')
      wr_puts(w, "~1");
    else
      wr_putn(w, &s[i], 1);
  }
}

static void wr_quoted(wr *w, ts_view name) {
  wr_puts(w, "\"");
  wr_name(w, name.p, name.len, 0);
  wr_puts(w, "\"");
}

/* ---- loading a document ------------------------------------------------------------- */

typedef struct {
  char *buf; /* "[" text "]" NUL, decoded in place */
  ts_jv v;   /* token 0 is the wrapper; token 1 the document's value */
  ts_view *keys; /* scratch for the duplicate-key check */
} doc;

static void doc_fini(doc *d) {
  ts_jv_fini(&d->v);
  free(d->buf);
  free(d->keys);
  memset(d, 0, sizeof *d);
}

static int view_cmp(const void *a, const void *b) {
  const ts_view *x = a, *y = b;
  size_t n = x->len < y->len ? x->len : y->len;
  int c = n ? memcmp(x->p, y->p, n) : 0;
  if (c) return c;
  return x->len < y->len ? -1 : x->len > y->len;
}

static int view_eq(ts_view a, ts_view b) {
  return a.len == b.len && (a.len == 0 || memcmp(a.p, b.p, a.len) == 0);
}

static ts_view str_of(ts_jv *v, int t) {
  ts_view s = {"", 0};
  if (ts_jv_str(v, t, &s) != TS_E_OK) s.p = "", s.len = 0; /* cannot fail after doc_load */
  return s;
}

/* Writes the JSON pointer of token t (a value inside the document), "(root)" for the
 * document itself. */
static void wr_pointer(wr *w, ts_jv *v, int t) {
  int cur = 1, any = 0;
  for (int guard = 0; cur != t && guard < TS_SCHEMA_MAX_SCHEMA_DEPTH + 2; guard++) {
    int n = ts_jv_size(v, cur), next = -1;
    if (ts_jv_type_of(v, cur) == TS_JV_OBJECT) {
      for (int k = cur + 1, m = 0; m < n; m++) {
        int end = ts_jv_skip(v, k + 1);
        if (t > k && t < end) {
          ts_view key = str_of(v, k);
          wr_puts(w, "/");
          wr_name(w, key.p, key.len, 1);
          next = k + 1;
          break;
        }
        k = end;
      }
    } else if (ts_jv_type_of(v, cur) == TS_JV_ARRAY) {
      for (int e = ts_jv_first(v, cur), m = 0; m < n; m++) {
        int end = ts_jv_skip(v, e);
        if (t >= e && t < end) {
          wr_fmt(w, "/%d", m);
          next = e;
          break;
        }
        e = end;
      }
    }
    if (next < 0) break;
    cur = next;
    any = 1;
  }
  if (!any) wr_puts(w, "(root)");
}

/* The strict check: the project's own tokenizer (stream/json_tok.h) reads the text
 * once and either accepts exactly one RFC 8259 value (valid UTF-8, escapes and
 * surrogates, no raw control bytes, no stray commas or colons, the number grammar)
 * or names the first bad byte. Counting its tokens on the way sizes jsmn's token
 * array exactly, and its depth limit bounds the nesting before anything recurses.
 * jsmn then only builds the tree of a text already known to be JSON. */
typedef struct {
  size_t ntok;
} scan_count;

static int scan_cb(void *user, const ts_json_token *tok) {
  scan_count *sc = user;
  switch (tok->kind) {
  case TS_JSON_KEY:
  case TS_JSON_STRING:
  case TS_JSON_NUMBER:
    if (tok->flags & TS_JSON_FIRST) sc->ntok++;
    break;
  case TS_JSON_OBJECT_END:
  case TS_JSON_ARRAY_END: break;
  default: sc->ntok++; /* a container's begin, a literal */
  }
  return 0;
}

/* Returns TS_E_OK with the exact jsmn token count in *ntok, TS_E_ARGS_TOO_DEEP, or
 * TS_E_ARGS_BAD_JSON with the reason written after "<what> not valid JSON". */
static int strict_scan(const char *s, size_t n, int max_depth, size_t *ntok, const char *what,
                       wr *w) {
  scan_count sc = {0};
  ts_json_tok tk;
  if (ts_json_tok_init(&tk, (uint32_t)max_depth, scan_cb, &sc) != TS_E_OK) return TS_E_INVAL;
  int rc = ts_json_tok_feed(&tk, s, n);
  if (rc == TS_E_OK) rc = ts_json_tok_finish(&tk);
  if (rc == TS_E_OK) {
    *ntok = sc.ntok;
    return TS_E_OK;
  }
  if (rc == TS_E_JSON_DEPTH) {
    wr_fmt(w, "%s nested deeper than %d levels", what, max_depth);
    return TS_E_ARGS_TOO_DEEP;
  }
  uint64_t at = ts_json_tok_error_offset(&tk);
  const char *reason = ts_err_message(rc);
  if (rc == TS_E_JSON_SYNTAX && at < n && (s[at] == '}' || s[at] == ']')) {
    size_t k = (size_t)at;
    while (k > 0 && (s[k - 1] == ' ' || s[k - 1] == '\t' || s[k - 1] == '\n' || s[k - 1] == '\r'))
      k--;
    if (k > 0 && s[k - 1] == ',') reason = "trailing comma";
  }
  if (rc == TS_E_JSON_EMPTY || rc == TS_E_JSON_TRUNCATED)
    wr_fmt(w, "%s not valid JSON: %s", what, reason);
  else
    wr_fmt(w, "%s not valid JSON: %s at byte %llu", what, reason, (unsigned long long)at);
  return TS_E_ARGS_BAD_JSON;
}

/* Loads text[0..len) into d. Returns TS_E_OK; TS_E_ARGS_BAD_JSON or
 * TS_E_ARGS_TOO_DEEP with the message written ("what" names the document and its
 * verb: "schema is", "arguments are");
 * TS_E_LIMIT; TS_E_NOMEM. */
static int doc_load(doc *d, const char *text, size_t len, int max_depth, const char *what,
                    wr *w) {
  memset(d, 0, sizeof *d);
  if (len >= (size_t)INT_MAX - 3) {
    wr_fmt(w, "%s too large", what);
    return TS_E_LIMIT;
  }
  size_t ntok = 0;
  int rc = strict_scan(text, len, max_depth, &ntok, what, w);
  if (rc != TS_E_OK) return rc;
  ntok++; /* the wrapper */
  if (ntok > (size_t)INT_MAX) {
    wr_fmt(w, "%s too large", what);
    return TS_E_LIMIT;
  }
  d->buf = malloc(len + 3);
  if (!d->buf) return TS_E_NOMEM;
  d->buf[0] = '[';
  if (len) memcpy(d->buf + 1, text, len);
  d->buf[len + 1] = ']';
  d->buf[len + 2] = '\0';
  if (ts_jv_init(&d->v, (int)ntok) != TS_E_OK) return TS_E_NOMEM;
  rc = ts_jv_parse(&d->v, d->buf, len + 2);
  if (rc == TS_E_LIMIT) return rc;
  if (rc != TS_E_OK || ts_jv_size(&d->v, 0) != 1) {
    /* cannot happen after the strict scan; kept so that a disagreement between the
     * two parsers is an error, never a wrong tree */
    wr_fmt(w, "%s not valid JSON", what);
    return TS_E_ARGS_BAD_JSON;
  }
  size_t max_members = 0;
  for (int i = 1; i < d->v.ntok; i++) {
    ts_jv_type ty = ts_jv_type_of(&d->v, i);
    if (ty == TS_JV_OBJECT && (size_t)ts_jv_size(&d->v, i) > max_members)
      max_members = (size_t)ts_jv_size(&d->v, i);
    if (ty != TS_JV_STRING) continue;
    ts_view s;
    if (ts_jv_str(&d->v, i, &s) != TS_E_OK) { /* checked by the scan: cannot happen */
      wr_fmt(w, "%s not valid JSON", what);
      return TS_E_ARGS_BAD_JSON;
    }
  }
  if (max_members >= 2) {
    d->keys = malloc(max_members * sizeof *d->keys);
    if (!d->keys) return TS_E_NOMEM;
  }
  for (int i = 1; i < d->v.ntok; i++) {
    int n = ts_jv_size(&d->v, i);
    if (ts_jv_type_of(&d->v, i) != TS_JV_OBJECT || n < 2) continue;
    for (int m = 0, k = i + 1; m < n; m++, k = ts_jv_skip(&d->v, k + 1))
      d->keys[m] = str_of(&d->v, k);
    qsort(d->keys, (size_t)n, sizeof *d->keys, view_cmp);
    for (int m = 1; m < n; m++) {
      if (view_eq(d->keys[m - 1], d->keys[m])) {
        wr_pointer(w, &d->v, i);
        wr_puts(w, ": duplicate key ");
        wr_quoted(w, d->keys[m]);
        return TS_E_ARGS_BAD_JSON;
      }
    }
  }
  return TS_E_OK;
}

/* ---- numbers ------------------------------------------------------------------------ */

/* Whether the JSON number text p[0..n) is an integer, decided exactly: the digits
 * without their trailing zeros, times a power of ten that must not be negative. */
static int text_is_integer(const char *p, size_t n) {
  size_t i = 0;
  long long frac = 0, tz = 0, e = 0;
  int nonzero = 0, eneg = 0;
  if (i < n && p[i] == '-') i++;
  for (; i < n && p[i] >= '0' && p[i] <= '9'; i++) {
    if (p[i] == '0') {
      tz++;
    } else {
      tz = 0;
      nonzero = 1;
    }
  }
  if (i < n && p[i] == '.') {
    for (i++; i < n && p[i] >= '0' && p[i] <= '9'; i++) {
      frac++;
      if (p[i] == '0') {
        tz++;
      } else {
        tz = 0;
        nonzero = 1;
      }
    }
  }
  if (i < n && (p[i] == 'e' || p[i] == 'E')) {
    i++;
    if (i < n && (p[i] == '+' || p[i] == '-')) eneg = p[i++] == '-';
    for (; i < n && p[i] >= '0' && p[i] <= '9'; i++)
      if (e < 1000000000000LL) e = e * 10 + (p[i] - '0');
  }
  if (!nonzero) return 1;
  return (eneg ? -e : e) - frac + tz >= 0;
}

/* A number token's value (the buffer holds a delimiter after every number). */
static double num_of(ts_jv *v, int t) { return strtod(ts_jv_raw(v, t).p, NULL); }


/* A JSON number's text as digits * 10^exp, exactly: the significant digits without
 * leading and trailing zeros (at most 19 of them, so that they fit in 64 bits; more
 * returns 0) and the power of ten. Zero is {0, 0}. */
static int decimal_of(const char *p, size_t n, uint64_t *digits, long long *exp) {
  uint64_t d = 0;
  long long e = 0, pending_zeros = 0, ex = 0;
  int sig = 0, eneg = 0;
  size_t i = 0;
  if (i < n && p[i] == '-') i++;
  for (int frac = 0; i < n; i++) {
    char ch = p[i];
    if (ch == '.') {
      frac = 1;
      continue;
    }
    if (ch < '0' || ch > '9') break;
    if (frac) e--;
    if (ch == '0') {
      if (sig) pending_zeros++;
      continue;
    }
    /* a nonzero digit: the zeros before it are significant after all */
    for (; pending_zeros; pending_zeros--) {
      if (++sig > 19) return 0;
      d *= 10;
    }
    if (++sig > 19) return 0;
    d = d * 10 + (uint64_t)(ch - '0');
  }
  e += pending_zeros; /* trailing zeros of the digits move into the exponent */
  if (i < n && (p[i] == 'e' || p[i] == 'E')) {
    i++;
    if (i < n && (p[i] == '+' || p[i] == '-')) eneg = p[i++] == '-';
    for (; i < n && p[i] >= '0' && p[i] <= '9'; i++)
      if (ex < 1000000000LL) ex = ex * 10 + (p[i] - '0');
  }
  *digits = d;
  *exp = d ? e + (eneg ? -ex : ex) : 0;
  return 1;
}

__extension__ typedef unsigned __int128 u128;

/* Whether the number x (text) is an integer multiple of m (text, > 0). Exact when
 * both have at most 19 significant digits: x = X*10^a, m = M*10^b with X and M free of
 * trailing zeros; x/m = (X/M) * 10^(a-b). For a-b < 0 it is an integer only when
 * X = 0 (10 does not divide X), else when M divides X * 10^(a-b), computed modulo
 * M. Otherwise (huge digit strings) by doubles. */
static int is_multiple(const char *x, size_t xn, const char *m, size_t mn) {
  uint64_t X, M;
  long long a, b;
  if (decimal_of(x, xn, &X, &a) && decimal_of(m, mn, &M, &b) && M) {
    if (!X) return 1;
    long long e = a - b;
    if (e < 0) return 0;
    u128 r = X % M, base = 10 % M, acc = 1 % M;
    for (unsigned long long k = (unsigned long long)e; k; k >>= 1) {
      if (k & 1) acc = acc * base % M;
      base = base * base % M;
    }
    return r * acc % M == 0;
  }
  double dx = strtod(x, NULL), dm = strtod(m, NULL);
  double qt = dx / dm;
  return isfinite(qt) && qt == floor(qt);
}

/* ---- the compiled tree -------------------------------------------------------------- */

enum {
  T_NULL = 1,
  T_BOOL = 2,
  T_OBJ = 4,
  T_ARR = 8,
  T_NUM = 16,
  T_STR = 32,
  T_INT = 64, /* only in a node's type mask: a value's kind is T_NUM */
};

enum {
  F_FALSE = 1 << 0,      /* the schema `false` */
  F_NULLABLE = 1 << 1,   /* OpenAPI nullable: true */
  F_MIN_LEN = 1 << 2,
  F_MAX_LEN = 1 << 3,
  F_MIN_ITEMS = 1 << 4,
  F_MAX_ITEMS = 1 << 5,
  F_MIN_PROPS = 1 << 6,
  F_MAX_PROPS = 1 << 7,
  F_MINIMUM = 1 << 8,
  F_MAXIMUM = 1 << 9,
  F_XMIN = 1 << 10,
  F_XMAX = 1 << 11,
  F_ADD_FALSE = 1 << 12,  /* additionalProperties: false */
  F_REST_FALSE = 1 << 13, /* no items after the tuple */
  F_MULTIPLE = 1 << 14,   /* multipleOf */
  F_CONST = 1 << 15,
  F_UNIQUE = 1 << 16,     /* uniqueItems: true */
};

typedef struct jval jval;
typedef struct jmember jmember;

struct jval { /* an enum or const value */
  unsigned kind; /* T_* */
  int b;         /* booleans */
  double num;
  ts_view s;         /* strings (decoded) */
  size_t n;          /* elements or members */
  jval *items;       /* arrays */
  jmember *members;  /* objects, sorted by key */
};

struct jmember {
  ts_view key;
  jval val;
};

typedef struct node node;

typedef struct {
  ts_view name;
  node *schema;
} prop;

typedef struct {
  const ts_regex *re;
  node *schema;
} pprop; /* patternProperties */

typedef struct {
  ts_view name;     /* when this property is present ... */
  ts_view *needs;   /* ... these must be too (the array form) */
  size_t nneeds;
  node *schema;     /* ... or the object must match this (the schema form) */
} dep;

typedef struct {
  double val;
  const char *txt; /* as written in the schema, for messages (and exact multipleOf) */
} bound;

struct node {
  unsigned types; /* T_* mask; 0 = any type */
  unsigned flags; /* F_* */
  size_t min_len, max_len, min_items, max_items, min_props, max_props;
  bound minimum, maximum, xmin, xmax, multiple;
  const ts_regex *pattern;
  const char *pattern_txt;
  jval konst;
  jval *enums;
  size_t nenum;
  prop *props; /* sorted by name */
  size_t nprops;
  pprop *pprops;
  size_t npprops;
  ts_view *required;
  size_t nrequired;
  dep *deps;
  size_t ndeps;
  node *additional; /* additionalProperties as a schema */
  node *names;      /* propertyNames */
  node **prefix;    /* tuple items */
  size_t nprefix;
  node *items; /* items after the tuple (all items without one) */
  node *contains;
  node **all_of, **any_of, **one_of;
  size_t nall, nany, none;
  node *not_, *if_, *then_, *else_;
  node *ref;
};

/* Arena: everything of a compiled schema, freed at once. */
typedef struct blk {
  struct blk *next;
  size_t used, cap;
} blk;

#define ALIGN_UP(n) (((n) + _Alignof(max_align_t) - 1) / _Alignof(max_align_t) * _Alignof(max_align_t))
#define BLK_HDR ALIGN_UP(sizeof(blk))
#define BLK_MIN 4096

/* The compiled patterns, which PCRE2 allocated: freed one by one with the schema. */
typedef struct rx_entry {
  struct rx_entry *next;
  ts_regex *re;
} rx_entry;

struct ts_schema {
  blk *arena;
  node *root;
  rx_entry *regexes;
};

static void *arena_alloc(blk **arena, size_t n) {
  if (n > SIZE_MAX / 2) return NULL;
  n = n ? ALIGN_UP(n) : _Alignof(max_align_t);
  blk *b = *arena;
  if (!b || b->cap - b->used < n) {
    size_t cap = n > BLK_MIN ? n : BLK_MIN;
    b = malloc(BLK_HDR + cap);
    if (!b) return NULL;
    b->used = 0;
    b->cap = cap;
    if (*arena && n > BLK_MIN) { /* a big one: keep the current block current */
      b->next = (*arena)->next;
      (*arena)->next = b;
    } else {
      b->next = *arena;
      *arena = b;
    }
  }
  void *p = (char *)b + BLK_HDR + b->used;
  b->used += n;
  memset(p, 0, n);
  return p;
}

static void arena_free(blk *a) {
  for (blk *b = a, *next; b; b = next) {
    next = b->next;
    free(b);
  }
}

void ts_schema_free(ts_schema *s) {
  if (!s) return;
  for (rx_entry *e = s->regexes; e; e = e->next) ts_regex_free(e->re);
  arena_free(s->arena);
  free(s);
}

/* ---- compiling ---------------------------------------------------------------------- */

/* An identified schema: its absolute URI (a document from $id, or a document plus
 * "#name" for a location-independent identifier) and its token. */
typedef struct {
  ts_view uri;
  int tok;
} ident;

typedef struct {
  ts_schema *s;
  ts_jv *v;
  wr *w;
  blk *scratch;    /* compile-time strings, freed after compiling */
  int draft7;      /* $ref replaces its siblings (drafts 4 to 7) */
  node **nodes;    /* per schema token: its node, once one was asked for */
  int *queue;      /* tokens whose node waits to be compiled */
  size_t qhead, qtail;
  ts_view *base;   /* per token: the base URI in force there (.p NULL: not a schema seen) */
  ident *ids;      /* sorted by uri */
  size_t nids, idcap;
} cctx;

/* Writes "<schema pointer of t>: <message>" and returns TS_E_SCHEMA_INVALID. */
static int bad(cctx *c, int t, const char *fmt, ...) {
  char tmp[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  wr_pointer(c->w, c->v, t);
  wr_puts(c->w, ": ");
  wr_puts(c->w, tmp);
  return TS_E_SCHEMA_INVALID;
}

static int copy_into(blk **arena, ts_view in, ts_view *out) {
  char *p = arena_alloc(arena, in.len + 1);
  if (!p) return TS_E_NOMEM;
  if (in.len) memcpy(p, in.p, in.len);
  p[in.len] = '\0';
  out->p = p;
  out->len = in.len;
  return TS_E_OK;
}

static int copy_view(cctx *c, ts_view in, ts_view *out) { return copy_into(&c->s->arena, in, out); }

static int is_number_tok(ts_jv *v, int t) {
  if (ts_jv_type_of(v, t) != TS_JV_PRIMITIVE) return 0;
  char ch = ts_jv_raw(v, t).p[0];
  return ch == '-' || (ch >= '0' && ch <= '9');
}

static int is_bool_tok(ts_jv *v, int t) {
  if (ts_jv_type_of(v, t) != TS_JV_PRIMITIVE) return 0;
  char ch = ts_jv_raw(v, t).p[0];
  return ch == 't' || ch == 'f';
}

static int get_count(cctx *c, int t, size_t *out) {
  ts_view raw = ts_jv_raw(c->v, t);
  /* 2.0 is an integer (JSON Schema counts by value); -0 is not negative */
  if (!is_number_tok(c->v, t) || !text_is_integer(raw.p, raw.len) || num_of(c->v, t) < 0)
    return bad(c, t, "must be a non-negative integer");
  double d = num_of(c->v, t);
  *out = d >= 1.8e19 ? SIZE_MAX : (size_t)d;
  return TS_E_OK;
}

static int get_bound(cctx *c, int t, bound *out) {
  if (!is_number_tok(c->v, t)) return bad(c, t, "must be a number");
  ts_view txt;
  if (copy_view(c, ts_jv_raw(c->v, t), &txt)) return TS_E_NOMEM;
  out->val = num_of(c->v, t);
  out->txt = txt.p;
  return TS_E_OK;
}

static int jmember_cmp(const void *a, const void *b) {
  return view_cmp(&((const jmember *)a)->key, &((const jmember *)b)->key);
}

static int prop_cmp(const void *a, const void *b) {
  return view_cmp(&((const prop *)a)->name, &((const prop *)b)->name);
}

static int ident_cmp(const void *a, const void *b) {
  const ident *x = a, *y = b;
  int r = view_cmp(&x->uri, &y->uri);
  return r ? r : (x->tok > y->tok) - (x->tok < y->tok);
}

/* An enum or const value; recursion bounded by the schema's nesting limit. */
static int build_value(cctx *c, int t, jval *out) {
  ts_jv *v = c->v;
  switch (ts_jv_type_of(v, t)) {
  case TS_JV_STRING:
    out->kind = T_STR;
    return copy_view(c, str_of(v, t), &out->s);
  case TS_JV_PRIMITIVE: {
    char ch = ts_jv_raw(v, t).p[0];
    if (ch == 't' || ch == 'f') {
      out->kind = T_BOOL;
      out->b = ch == 't';
    } else if (ch == 'n') {
      out->kind = T_NULL;
    } else {
      out->kind = T_NUM;
      out->num = num_of(v, t);
    }
    return TS_E_OK;
  }
  case TS_JV_ARRAY: {
    out->kind = T_ARR;
    out->n = (size_t)ts_jv_size(v, t);
    if (!out->n) return TS_E_OK;
    out->items = arena_alloc(&c->s->arena, out->n * sizeof *out->items);
    if (!out->items) return TS_E_NOMEM;
    int e = ts_jv_first(v, t);
    for (size_t i = 0; i < out->n; i++, e = ts_jv_skip(v, e)) {
      int rc = build_value(c, e, &out->items[i]);
      if (rc) return rc;
    }
    return TS_E_OK;
  }
  case TS_JV_OBJECT: {
    out->kind = T_OBJ;
    out->n = (size_t)ts_jv_size(v, t);
    if (!out->n) return TS_E_OK;
    out->members = arena_alloc(&c->s->arena, out->n * sizeof *out->members);
    if (!out->members) return TS_E_NOMEM;
    int k = t + 1;
    for (size_t i = 0; i < out->n; i++, k = ts_jv_skip(v, k + 1)) {
      int rc = copy_view(c, str_of(v, k), &out->members[i].key);
      if (!rc) rc = build_value(c, k + 1, &out->members[i].val);
      if (rc) return rc;
    }
    qsort(out->members, out->n, sizeof *out->members, jmember_cmp);
    return TS_E_OK;
  }
  default:
    return bad(c, t, "unexpected value");
  }
}

enum {
  K_REF,
  K_TYPE,
  K_NULLABLE,
  K_CONST,
  K_ENUM,
  K_MINLEN,
  K_MAXLEN,
  K_PATTERN,
  K_MINIMUM,
  K_MAXIMUM,
  K_XMIN,
  K_XMAX,
  K_MULTIPLE,
  K_PROPS,
  K_REQUIRED,
  K_ADDPROPS,
  K_PATTERNPROPS,
  K_PROPNAMES,
  K_DEPS,
  K_DEPREQ,
  K_DEPSCHEMAS,
  K_MINPROPS,
  K_MAXPROPS,
  K_PREFIXITEMS,
  K_ITEMS,
  K_ADDITEMS,
  K_CONTAINS,
  K_MINITEMS,
  K_MAXITEMS,
  K_UNIQUE,
  K_ALLOF,
  K_ANYOF,
  K_ONEOF,
  K_NOT,
  K_IF,
  K_THEN,
  K_ELSE,
  K_DEFINITIONS,
  K_DEFS,
  K_ID,
  K_ANCHOR,
  NKW
};

static const char *const kw_names[NKW] = {
    [K_REF] = "$ref",
    [K_TYPE] = "type",
    [K_NULLABLE] = "nullable",
    [K_CONST] = "const",
    [K_ENUM] = "enum",
    [K_MINLEN] = "minLength",
    [K_MAXLEN] = "maxLength",
    [K_PATTERN] = "pattern",
    [K_MINIMUM] = "minimum",
    [K_MAXIMUM] = "maximum",
    [K_XMIN] = "exclusiveMinimum",
    [K_XMAX] = "exclusiveMaximum",
    [K_MULTIPLE] = "multipleOf",
    [K_PROPS] = "properties",
    [K_REQUIRED] = "required",
    [K_ADDPROPS] = "additionalProperties",
    [K_PATTERNPROPS] = "patternProperties",
    [K_PROPNAMES] = "propertyNames",
    [K_DEPS] = "dependencies",
    [K_DEPREQ] = "dependentRequired",
    [K_DEPSCHEMAS] = "dependentSchemas",
    [K_MINPROPS] = "minProperties",
    [K_MAXPROPS] = "maxProperties",
    [K_PREFIXITEMS] = "prefixItems",
    [K_ITEMS] = "items",
    [K_ADDITEMS] = "additionalItems",
    [K_CONTAINS] = "contains",
    [K_MINITEMS] = "minItems",
    [K_MAXITEMS] = "maxItems",
    [K_UNIQUE] = "uniqueItems",
    [K_ALLOF] = "allOf",
    [K_ANYOF] = "anyOf",
    [K_ONEOF] = "oneOf",
    [K_NOT] = "not",
    [K_IF] = "if",
    [K_THEN] = "then",
    [K_ELSE] = "else",
    [K_DEFINITIONS] = "definitions",
    [K_DEFS] = "$defs",
    [K_ID] = "$id",
    [K_ANCHOR] = "$anchor",
};

/* How a keyword holds subschemas, for walking a schema without compiling it. */
enum { SUB_NONE, SUB_ONE, SUB_LIST, SUB_MAP, SUB_ONE_OR_LIST, SUB_MAP_MIXED };

static const unsigned char kw_sub[NKW] = {
    [K_ADDPROPS] = SUB_ONE,     [K_PROPNAMES] = SUB_ONE,   [K_ADDITEMS] = SUB_ONE,
    [K_CONTAINS] = SUB_ONE,     [K_NOT] = SUB_ONE,         [K_IF] = SUB_ONE,
    [K_THEN] = SUB_ONE,         [K_ELSE] = SUB_ONE,        [K_ITEMS] = SUB_ONE_OR_LIST,
    [K_PREFIXITEMS] = SUB_LIST, [K_ALLOF] = SUB_LIST,      [K_ANYOF] = SUB_LIST,
    [K_ONEOF] = SUB_LIST,       [K_PROPS] = SUB_MAP,       [K_PATTERNPROPS] = SUB_MAP,
    [K_DEFINITIONS] = SUB_MAP,  [K_DEFS] = SUB_MAP,        [K_DEPSCHEMAS] = SUB_MAP,
    [K_DEPS] = SUB_MAP_MIXED, /* a member is a schema or an array of names */
};

static const struct {
  const char *name;
  unsigned bit;
} type_names[] = {
    {"string", T_STR}, {"number", T_NUM},  {"integer", T_INT}, {"boolean", T_BOOL},
    {"object", T_OBJ}, {"array", T_ARR},   {"null", T_NULL},
};

/* The keywords of schema object t: at[K] = the token of K's value, or -1. */
static void keywords_of(ts_jv *v, int t, int at[NKW]) {
  for (int i = 0; i < NKW; i++) at[i] = -1;
  int members = ts_jv_size(v, t);
  for (int m = 0, k = t + 1; m < members; m++, k = ts_jv_skip(v, k + 1)) {
    ts_view key = str_of(v, k);
    if (!key.len || (key.p[0] != '$' && (key.p[0] < 'a' || key.p[0] > 'z'))) continue;
    for (int i = 0; i < NKW; i++) {
      if (view_eq(key, (ts_view){kw_names[i], strlen(kw_names[i])})) {
        at[i] = k + 1;
        break;
      }
    }
  }
}

/* ---- identifiers: $id, $anchor, and the base URI of every schema ------------------- */

static int add_ident(cctx *c, ts_view uri, int tok) {
  if (c->nids == c->idcap) {
    size_t cap = c->idcap ? c->idcap * 2 : 8;
    ident *n = arena_alloc(&c->scratch, cap * sizeof *n);
    if (!n) return TS_E_NOMEM;
    if (c->nids) memcpy(n, c->ids, c->nids * sizeof *n);
    c->ids = n;
    c->idcap = cap;
  }
  c->ids[c->nids].uri = uri;
  c->ids[c->nids].tok = tok;
  c->nids++;
  return TS_E_OK;
}

/* resolve(base, ref) into the scratch arena. */
static int resolve_uri(cctx *c, ts_view base, ts_view ref, ts_view *out) {
  char *r;
  size_t n;
  if (ts_uri_resolve(base.p, base.len, ref.p, ref.len, &r, &n) != TS_E_OK) return TS_E_NOMEM;
  int rc = copy_into(&c->scratch, (ts_view){r, n}, out);
  free(r);
  return rc;
}

/* "<document of base>#<name>" into the scratch arena. */
static int anchor_uri(cctx *c, ts_view base, ts_view name, ts_view *out) {
  size_t dl = ts_uri_strip_fragment(base.p, base.len);
  char *p = arena_alloc(&c->scratch, dl + name.len + 2);
  if (!p) return TS_E_NOMEM;
  memcpy(p, base.p, dl);
  p[dl] = '#';
  if (name.len) memcpy(p + dl + 1, name.p, name.len);
  p[dl + 1 + name.len] = '\0';
  *out = (ts_view){p, dl + 1 + name.len};
  return TS_E_OK;
}

/* Walks the schema at token t (base URI `base`) and everything below it that is a
 * schema, recording each one's base URI and indexing $id and $anchor. Recursion
 * follows the document's nesting, which the loader bounded. */
static int index_ids(cctx *c, int t, ts_view base) {
  ts_jv *v = c->v;
  if (c->base[t].p) return TS_E_OK; /* seen (a $ref target walked twice) */
  c->base[t] = base;
  if (ts_jv_type_of(v, t) != TS_JV_OBJECT) return TS_E_OK;
  int at[NKW], rc;
  keywords_of(v, t, at);
  /* drafts 4-7: an object with $ref is only that reference, and a sibling $id does not
   * change the base URI the reference is resolved against */
  int id_applies = !(c->draft7 && at[K_REF] >= 0);
  if (at[K_ID] >= 0 && ts_jv_type_of(v, at[K_ID]) == TS_JV_STRING && id_applies) {
    ts_view id = str_of(v, at[K_ID]), full;
    if ((rc = resolve_uri(c, base, id, &full))) return rc;
    size_t dl = ts_uri_strip_fragment(full.p, full.len);
    if (dl < full.len && dl + 1 < full.len) { /* "#name" (draft 6-7 plain-name id) */
      if ((rc = add_ident(c, full, t))) return rc;
    }
    if (id.len && id.p[0] != '#') { /* a new document */
      ts_view docuri = {full.p, dl};
      if ((rc = add_ident(c, docuri, t))) return rc;
      base = docuri;
      c->base[t] = base;
    }
  }
  if (at[K_ANCHOR] >= 0 && ts_jv_type_of(v, at[K_ANCHOR]) == TS_JV_STRING) {
    ts_view full;
    if ((rc = anchor_uri(c, base, str_of(v, at[K_ANCHOR]), &full))) return rc;
    if ((rc = add_ident(c, full, t))) return rc;
  }
  for (int k = 0; k < NKW; k++) {
    int x = at[k];
    if (x < 0 || kw_sub[k] == SUB_NONE) continue;
    ts_jv_type ty = ts_jv_type_of(v, x);
    if (kw_sub[k] == SUB_ONE || (kw_sub[k] == SUB_ONE_OR_LIST && ty != TS_JV_ARRAY)) {
      if ((rc = index_ids(c, x, base))) return rc;
    } else if (kw_sub[k] == SUB_LIST || kw_sub[k] == SUB_ONE_OR_LIST) {
      if (ty != TS_JV_ARRAY) continue;
      int e = ts_jv_first(v, x);
      for (int i = 0; i < ts_jv_size(v, x); i++, e = ts_jv_skip(v, e))
        if ((rc = index_ids(c, e, base))) return rc;
    } else {
      if (ty != TS_JV_OBJECT) continue;
      int m = x + 1;
      for (int i = 0; i < ts_jv_size(v, x); i++, m = ts_jv_skip(v, m + 1)) {
        if (kw_sub[k] == SUB_MAP_MIXED && ts_jv_type_of(v, m + 1) == TS_JV_ARRAY) continue;
        if ((rc = index_ids(c, m + 1, base))) return rc;
      }
    }
  }
  return TS_E_OK;
}

static int find_ident(const cctx *c, ts_view uri) {
  size_t lo = 0, hi = c->nids;
  while (lo < hi) { /* the first entry >= uri */
    size_t mid = lo + (hi - lo) / 2;
    if (view_cmp(&c->ids[mid].uri, &uri) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < c->nids && view_eq(c->ids[lo].uri, uri) ? c->ids[lo].tok : -1;
}

static int hexval(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

/* Follows the JSON pointer p[0..n) (already percent-decoded) from token t. Returns
 * the token, -1 when there is no such value, -2 for a bad ~ escape. */
static int follow_pointer(cctx *c, int t, const char *p, size_t n) {
  ts_jv *v = c->v;
  size_t i = 0;
  while (i < n) {
    if (p[i] != '/') return -1;
    size_t j = ++i;
    while (j < n && p[j] != '/') j++;
    /* the segment p[i..j) with ~1 -> '/' and ~0 -> '~', compared on the fly */
    if (ts_jv_type_of(v, t) == TS_JV_OBJECT) {
      int found = -1, k = t + 1;
      for (int m = 0; m < ts_jv_size(v, t) && found < 0; m++, k = ts_jv_skip(v, k + 1)) {
        ts_view key = str_of(v, k);
        size_t a = i, b = 0;
        int same = 1;
        while (a < j && same) {
          char ch = p[a++];
          if (ch == '~') {
            if (a == j || (p[a] != '0' && p[a] != '1')) return -2;
            ch = p[a++] == '0' ? '~' : '/';
          }
          same = b < key.len && key.p[b++] == ch;
        }
        if (same && b == key.len) found = k + 1;
      }
      for (size_t a = i; a < j; a++) /* a bad escape is bad even when nothing matched */
        if (p[a] == '~' && (a + 1 == j || (p[a + 1] != '0' && p[a + 1] != '1'))) return -2;
      if (found < 0) return -1;
      t = found;
    } else if (ts_jv_type_of(v, t) == TS_JV_ARRAY) {
      if (i == j || (p[i] == '0' && j - i > 1)) return -1;
      long idx = 0;
      for (size_t a = i; a < j; a++) {
        if (p[a] < '0' || p[a] > '9' || idx > 100000000L) return -1;
        idx = idx * 10 + (p[a] - '0');
      }
      if (idx >= ts_jv_size(v, t)) return -1;
      int e = ts_jv_first(v, t);
      for (long m = 0; m < idx; m++) e = ts_jv_skip(v, e);
      t = e;
    } else {
      return -1;
    }
    i = j;
  }
  return t;
}

static node *node_for(cctx *c, int t);

/* $ref at token t (in the schema whose base is `base`): the node it names. */
static int compile_ref(cctx *c, int t, ts_view base, node *n) {
  ts_jv *v = c->v;
  if (ts_jv_type_of(v, t) != TS_JV_STRING) return bad(c, t, "must be a string");
  ts_view ref = str_of(v, t), full;
  int rc = resolve_uri(c, base, ref, &full);
  if (rc) return rc;
  size_t dl = ts_uri_strip_fragment(full.p, full.len);
  int doctok = find_ident(c, (ts_view){full.p, dl});
  if (doctok < 0) {
    wr_pointer(c->w, v, t);
    wr_puts(c->w, ": remote reference ");
    wr_quoted(c->w, ref);
    wr_puts(c->w, " is not supported (only references within the schema)");
    return TS_E_SCHEMA_INVALID;
  }
  /* the fragment, percent-decoded (RFC 3986): never longer than it was */
  const char *f = dl < full.len ? full.p + dl + 1 : "";
  size_t fl = dl < full.len ? full.len - dl - 1 : 0;
  char *dec = arena_alloc(&c->scratch, fl + 1);
  if (!dec) return TS_E_NOMEM;
  size_t dn = 0;
  for (size_t i = 0; i < fl; i++) {
    int hi = f[i] == '%' && i + 2 < fl ? hexval(f[i + 1]) : -1;
    int lo = hi >= 0 ? hexval(f[i + 2]) : -1;
    if (hi >= 0 && lo >= 0) {
      dec[dn++] = (char)(hi * 16 + lo);
      i += 2;
    } else {
      dec[dn++] = f[i];
    }
  }
  int target;
  if (dn == 0) {
    target = doctok;
  } else if (dec[0] == '/') {
    target = follow_pointer(c, doctok, dec, dn);
    if (target == -2) return bad(c, t, "bad ~ escape in $ref");
  } else {
    ts_view key;
    if ((rc = anchor_uri(c, (ts_view){full.p, dl}, (ts_view){dec, dn}, &key))) return rc;
    target = find_ident(c, key);
  }
  if (target < 0) {
    wr_pointer(c->w, v, t);
    wr_puts(c->w, ": ");
    wr_quoted(c->w, ref);
    wr_puts(c->w, " not found");
    return TS_E_SCHEMA_INVALID;
  }
  /* a target outside the places the walk knew as schemas (an unknown keyword's value)
   * takes the base of the document it was found in */
  if (!c->base[target].p) {
    size_t before = c->nids;
    if ((rc = index_ids(c, target, c->base[doctok]))) return rc;
    if (c->nids != before) qsort(c->ids, c->nids, sizeof *c->ids, ident_cmp);
  }
  n->ref = node_for(c, target);
  return n->ref ? TS_E_OK : TS_E_NOMEM;
}

/* The node of schema token t, created (and queued for compiling) on first use, so a
 * schema reached twice (by nesting and by $ref, or by two refs) is one node, and
 * cycles through $ref close on a node that already exists. */
static node *node_for(cctx *c, int t) {
  if (c->nodes[t]) return c->nodes[t];
  node *n = arena_alloc(&c->s->arena, sizeof *n);
  if (!n) return NULL;
  c->nodes[t] = n;
  c->queue[c->qtail++] = t; /* each token once: the queue holds ntok entries */
  return n;
}

static int subschema(cctx *c, int t, node **out) {
  *out = node_for(c, t);
  return *out ? TS_E_OK : TS_E_NOMEM;
}

/* An array of schemas (non-empty unless allow_empty). */
static int schema_list(cctx *c, int t, node ***out, size_t *count, int allow_empty) {
  ts_jv *v = c->v;
  int n = ts_jv_size(v, t);
  if (ts_jv_type_of(v, t) != TS_JV_ARRAY || (n == 0 && !allow_empty))
    return bad(c, t, allow_empty ? "must be an array of schemas"
                                 : "must be a non-empty array of schemas");
  *count = (size_t)n;
  if (!n) return TS_E_OK;
  *out = arena_alloc(&c->s->arena, (size_t)n * sizeof **out);
  if (!*out) return TS_E_NOMEM;
  int e = ts_jv_first(v, t);
  for (int i = 0; i < n; i++, e = ts_jv_skip(v, e)) {
    int rc = subschema(c, e, &(*out)[i]);
    if (rc) return rc;
  }
  return TS_E_OK;
}

static int compile_type(cctx *c, int t, node *n) {
  ts_jv *v = c->v;
  int one = ts_jv_type_of(v, t) == TS_JV_STRING;
  if (!one && ts_jv_type_of(v, t) != TS_JV_ARRAY)
    return bad(c, t, "must be a type name or an array of type names");
  int count = one ? 1 : ts_jv_size(v, t);
  if (count == 0) return bad(c, t, "must not be an empty array");
  int e = one ? t : ts_jv_first(v, t);
  for (int i = 0; i < count; i++, e = ts_jv_skip(v, e)) {
    if (ts_jv_type_of(v, e) != TS_JV_STRING)
      return bad(c, e, "must be a type name or an array of type names");
    ts_view name = str_of(v, e);
    unsigned bit = 0;
    for (size_t k = 0; k < sizeof type_names / sizeof type_names[0]; k++)
      if (view_eq(name, (ts_view){type_names[k].name, strlen(type_names[k].name)}))
        bit = type_names[k].bit;
    if (!bit) {
      wr_pointer(c->w, v, e);
      wr_puts(c->w, ": unknown type ");
      wr_quoted(c->w, name);
      return TS_E_SCHEMA_INVALID;
    }
    if (n->types & bit) return bad(c, e, "type listed twice");
    n->types |= bit;
  }
  return TS_E_OK;
}

/* A pattern (string token t), compiled and kept on the schema's list. */
static int compile_regex(cctx *c, int t, const ts_regex **out) {
  if (ts_jv_type_of(c->v, t) != TS_JV_STRING) return bad(c, t, "must be a string");
  rx_entry *e = arena_alloc(&c->s->arena, sizeof *e); /* first, so nothing can leak */
  if (!e) return TS_E_NOMEM;
  ts_view pat = str_of(c->v, t);
  char why[200];
  int rc = ts_regex_compile(pat.p, pat.len, &e->re, why, sizeof why);
  if (rc == TS_E_NOMEM) return rc;
  if (rc) return bad(c, t, "invalid regular expression: %s", why);
  e->next = c->s->regexes;
  c->s->regexes = e;
  *out = e->re;
  return TS_E_OK;
}

static int compile_props(cctx *c, int t, node *n) {
  ts_jv *v = c->v;
  if (ts_jv_type_of(v, t) != TS_JV_OBJECT) return bad(c, t, "must be an object");
  n->nprops = (size_t)ts_jv_size(v, t);
  if (!n->nprops) return TS_E_OK;
  n->props = arena_alloc(&c->s->arena, n->nprops * sizeof *n->props);
  if (!n->props) return TS_E_NOMEM;
  int k = t + 1;
  for (size_t i = 0; i < n->nprops; i++, k = ts_jv_skip(v, k + 1)) {
    int rc = copy_view(c, str_of(v, k), &n->props[i].name);
    if (!rc) rc = subschema(c, k + 1, &n->props[i].schema);
    if (rc) return rc;
  }
  qsort(n->props, n->nprops, sizeof *n->props, prop_cmp);
  return TS_E_OK;
}

static int compile_pattern_props(cctx *c, int t, node *n) {
  ts_jv *v = c->v;
  if (ts_jv_type_of(v, t) != TS_JV_OBJECT) return bad(c, t, "must be an object");
  n->npprops = (size_t)ts_jv_size(v, t);
  if (!n->npprops) return TS_E_OK;
  n->pprops = arena_alloc(&c->s->arena, n->npprops * sizeof *n->pprops);
  if (!n->pprops) return TS_E_NOMEM;
  int k = t + 1;
  for (size_t i = 0; i < n->npprops; i++, k = ts_jv_skip(v, k + 1)) {
    int rc = compile_regex(c, k, &n->pprops[i].re);
    if (!rc) rc = subschema(c, k + 1, &n->pprops[i].schema);
    if (rc) return rc;
  }
  return TS_E_OK;
}

/* An array of property names (required, a dependency's names). */
static int name_list(cctx *c, int t, ts_view **out, size_t *count) {
  ts_jv *v = c->v;
  if (ts_jv_type_of(v, t) != TS_JV_ARRAY) return bad(c, t, "must be an array of strings");
  *count = (size_t)ts_jv_size(v, t);
  if (!*count) return TS_E_OK;
  *out = arena_alloc(&c->s->arena, *count * sizeof **out);
  if (!*out) return TS_E_NOMEM;
  int e = ts_jv_first(v, t);
  for (size_t i = 0; i < *count; i++, e = ts_jv_skip(v, e)) {
    if (ts_jv_type_of(v, e) != TS_JV_STRING) return bad(c, e, "must be a string");
    if (copy_view(c, str_of(v, e), &(*out)[i])) return TS_E_NOMEM;
  }
  return TS_E_OK;
}

/* dependencies (each member names or a schema), dependentRequired (names),
 * dependentSchemas (schemas): all become dep entries. form: 0 mixed, 1 names, 2 schemas. */
static int compile_deps(cctx *c, int t, node *n, int form) {
  ts_jv *v = c->v;
  if (ts_jv_type_of(v, t) != TS_JV_OBJECT) return bad(c, t, "must be an object");
  size_t add = (size_t)ts_jv_size(v, t);
  if (!add) return TS_E_OK;
  dep *d = arena_alloc(&c->s->arena, (n->ndeps + add) * sizeof *d);
  if (!d) return TS_E_NOMEM;
  if (n->ndeps) memcpy(d, n->deps, n->ndeps * sizeof *d);
  int k = t + 1;
  for (size_t i = 0; i < add; i++, k = ts_jv_skip(v, k + 1)) {
    dep *x = &d[n->ndeps + i];
    int rc = copy_view(c, str_of(v, k), &x->name);
    if (rc) return rc;
    int names = form == 1 || (form == 0 && ts_jv_type_of(v, k + 1) == TS_JV_ARRAY);
    rc = names ? name_list(c, k + 1, &x->needs, &x->nneeds) : subschema(c, k + 1, &x->schema);
    if (rc) return rc;
  }
  n->deps = d;
  n->ndeps += add;
  return TS_E_OK;
}

/* Every member of a definitions table is a schema (compiled even when no $ref names
 * it, so that a malformed one is reported when the tool is defined). */
static int compile_definitions(cctx *c, int t) {
  ts_jv *v = c->v;
  if (ts_jv_type_of(v, t) != TS_JV_OBJECT) return bad(c, t, "must be an object");
  int k = t + 1;
  for (int i = 0; i < ts_jv_size(v, t); i++, k = ts_jv_skip(v, k + 1))
    if (!node_for(c, k + 1)) return TS_E_NOMEM;
  return TS_E_OK;
}

static int compile_into(cctx *c, int t, node *n) {
  ts_jv *v = c->v;
  int rc;
  if (is_bool_tok(v, t)) {
    if (ts_jv_raw(v, t).p[0] == 'f') n->flags |= F_FALSE;
    return TS_E_OK;
  }
  if (ts_jv_type_of(v, t) != TS_JV_OBJECT)
    return bad(c, t, "a schema must be an object or a boolean");
  int at[NKW];
  keywords_of(v, t, at);
  ts_view base = c->base[t].p ? c->base[t] : c->base[1];
  if (at[K_DEFINITIONS] >= 0 && (rc = compile_definitions(c, at[K_DEFINITIONS]))) return rc;
  if (at[K_DEFS] >= 0 && (rc = compile_definitions(c, at[K_DEFS]))) return rc;
  if (at[K_REF] >= 0) {
    if ((rc = compile_ref(c, at[K_REF], base, n))) return rc;
    if (c->draft7) return TS_E_OK; /* the reference replaces its siblings */
  }
  if (at[K_TYPE] >= 0 && (rc = compile_type(c, at[K_TYPE], n))) return rc;
  if (at[K_NULLABLE] >= 0) {
    if (!is_bool_tok(v, at[K_NULLABLE])) return bad(c, at[K_NULLABLE], "must be a boolean");
    if (ts_jv_is_true(v, at[K_NULLABLE])) n->flags |= F_NULLABLE;
  }
  if (at[K_CONST] >= 0) {
    if ((rc = build_value(c, at[K_CONST], &n->konst))) return rc;
    n->flags |= F_CONST;
  }
  if (at[K_ENUM] >= 0) {
    int e = at[K_ENUM];
    if (ts_jv_type_of(v, e) != TS_JV_ARRAY || ts_jv_size(v, e) == 0)
      return bad(c, e, "must be a non-empty array");
    n->nenum = (size_t)ts_jv_size(v, e);
    n->enums = arena_alloc(&c->s->arena, n->nenum * sizeof *n->enums);
    if (!n->enums) return TS_E_NOMEM;
    int x = ts_jv_first(v, e);
    for (size_t i = 0; i < n->nenum; i++, x = ts_jv_skip(v, x))
      if ((rc = build_value(c, x, &n->enums[i]))) return rc;
  }
  static const struct {
    int kw;
    unsigned flag;
    size_t offset;
  } counts[] = {
      {K_MINLEN, F_MIN_LEN, offsetof(node, min_len)},
      {K_MAXLEN, F_MAX_LEN, offsetof(node, max_len)},
      {K_MINPROPS, F_MIN_PROPS, offsetof(node, min_props)},
      {K_MAXPROPS, F_MAX_PROPS, offsetof(node, max_props)},
      {K_MINITEMS, F_MIN_ITEMS, offsetof(node, min_items)},
      {K_MAXITEMS, F_MAX_ITEMS, offsetof(node, max_items)},
  };
  for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
    if (at[counts[i].kw] < 0) continue;
    if ((rc = get_count(c, at[counts[i].kw], (size_t *)((char *)n + counts[i].offset)))) return rc;
    n->flags |= counts[i].flag;
  }
  if (at[K_PATTERN] >= 0) {
    if ((rc = compile_regex(c, at[K_PATTERN], &n->pattern))) return rc;
    ts_view txt;
    if (copy_view(c, str_of(v, at[K_PATTERN]), &txt)) return TS_E_NOMEM;
    n->pattern_txt = txt.p;
  }
  if (at[K_MINIMUM] >= 0) {
    if ((rc = get_bound(c, at[K_MINIMUM], &n->minimum))) return rc;
    n->flags |= F_MINIMUM;
  }
  if (at[K_MAXIMUM] >= 0) {
    if ((rc = get_bound(c, at[K_MAXIMUM], &n->maximum))) return rc;
    n->flags |= F_MAXIMUM;
  }
  /* exclusiveMinimum/Maximum: a number (draft 6 on), or a boolean that makes
   * minimum/maximum exclusive (draft 4). */
  for (int hi = 0; hi < 2; hi++) {
    int x = at[hi ? K_XMAX : K_XMIN];
    if (x < 0) continue;
    unsigned bound_flag = hi ? F_MAXIMUM : F_MINIMUM, xflag = hi ? F_XMAX : F_XMIN;
    bound *b = hi ? &n->maximum : &n->minimum, *xb = hi ? &n->xmax : &n->xmin;
    if (is_bool_tok(v, x)) {
      if (ts_jv_is_true(v, x) && (n->flags & bound_flag)) {
        *xb = *b;
        n->flags = (n->flags & ~bound_flag) | xflag;
      }
    } else if (is_number_tok(v, x)) {
      if ((rc = get_bound(c, x, xb))) return rc;
      n->flags |= xflag;
    } else {
      return bad(c, x, "must be a number or a boolean");
    }
  }
  if (at[K_MULTIPLE] >= 0) {
    if (!is_number_tok(v, at[K_MULTIPLE]) || !(num_of(v, at[K_MULTIPLE]) > 0))
      return bad(c, at[K_MULTIPLE], "must be a number greater than 0");
    if ((rc = get_bound(c, at[K_MULTIPLE], &n->multiple))) return rc;
    n->flags |= F_MULTIPLE;
  }
  if (at[K_PROPS] >= 0 && (rc = compile_props(c, at[K_PROPS], n))) return rc;
  if (at[K_REQUIRED] >= 0 && (rc = name_list(c, at[K_REQUIRED], &n->required, &n->nrequired)))
    return rc;
  if (at[K_ADDPROPS] >= 0) {
    int x = at[K_ADDPROPS];
    if (is_bool_tok(v, x)) {
      if (!ts_jv_is_true(v, x)) n->flags |= F_ADD_FALSE;
    } else if ((rc = subschema(c, x, &n->additional))) {
      return rc;
    }
  }
  if (at[K_PATTERNPROPS] >= 0 && (rc = compile_pattern_props(c, at[K_PATTERNPROPS], n)))
    return rc;
  if (at[K_PROPNAMES] >= 0 && (rc = subschema(c, at[K_PROPNAMES], &n->names))) return rc;
  if (at[K_DEPS] >= 0 && (rc = compile_deps(c, at[K_DEPS], n, 0))) return rc;
  if (at[K_DEPREQ] >= 0 && (rc = compile_deps(c, at[K_DEPREQ], n, 1))) return rc;
  if (at[K_DEPSCHEMAS] >= 0 && (rc = compile_deps(c, at[K_DEPSCHEMAS], n, 2))) return rc;
  /* Arrays: prefixItems + items (2020-12), or items as an array + additionalItems
   * (drafts 4-2019), or items as a schema. */
  int rest = -1;
  if (at[K_PREFIXITEMS] >= 0) {
    if ((rc = schema_list(c, at[K_PREFIXITEMS], &n->prefix, &n->nprefix, 1))) return rc;
    rest = at[K_ITEMS];
  } else if (at[K_ITEMS] >= 0 && ts_jv_type_of(v, at[K_ITEMS]) == TS_JV_ARRAY) {
    if ((rc = schema_list(c, at[K_ITEMS], &n->prefix, &n->nprefix, 1))) return rc;
    rest = at[K_ADDITEMS];
  } else {
    rest = at[K_ITEMS];
  }
  if (rest >= 0) {
    if (is_bool_tok(v, rest)) {
      if (!ts_jv_is_true(v, rest)) n->flags |= F_REST_FALSE;
    } else if ((rc = subschema(c, rest, &n->items))) {
      return rc;
    }
  }
  if (at[K_CONTAINS] >= 0 && (rc = subschema(c, at[K_CONTAINS], &n->contains))) return rc;
  if (at[K_UNIQUE] >= 0) {
    if (!is_bool_tok(v, at[K_UNIQUE])) return bad(c, at[K_UNIQUE], "must be a boolean");
    if (ts_jv_is_true(v, at[K_UNIQUE])) n->flags |= F_UNIQUE;
  }
  if (at[K_ALLOF] >= 0 && (rc = schema_list(c, at[K_ALLOF], &n->all_of, &n->nall, 0))) return rc;
  if (at[K_ANYOF] >= 0 && (rc = schema_list(c, at[K_ANYOF], &n->any_of, &n->nany, 0))) return rc;
  if (at[K_ONEOF] >= 0 && (rc = schema_list(c, at[K_ONEOF], &n->one_of, &n->none, 0))) return rc;
  if (at[K_NOT] >= 0 && (rc = subschema(c, at[K_NOT], &n->not_))) return rc;
  if (at[K_IF] >= 0) { /* then and else mean nothing without if */
    if ((rc = subschema(c, at[K_IF], &n->if_))) return rc;
    if (at[K_THEN] >= 0 && (rc = subschema(c, at[K_THEN], &n->then_))) return rc;
    if (at[K_ELSE] >= 0 && (rc = subschema(c, at[K_ELSE], &n->else_))) return rc;
  }
  return TS_E_OK;
}

/* Drafts 4 to 7 by the root's $schema; anything else (2019-09, 2020-12, none) keeps
 * the caller's choice. */
static int dialect_of(ts_jv *v, int flags) {
  int draft7 = (flags & TS_SCHEMA_DRAFT7) != 0;
  if (ts_jv_type_of(v, 1) != TS_JV_OBJECT) return draft7;
  int k = 2;
  for (int m = 0; m < ts_jv_size(v, 1); m++, k = ts_jv_skip(v, k + 1)) {
    if (!view_eq(str_of(v, k), (ts_view){"$schema", 7})) continue;
    if (ts_jv_type_of(v, k + 1) != TS_JV_STRING) break;
    ts_view u = str_of(v, k + 1);
    static const char *const known[] = {"json-schema.org/draft-04/", "json-schema.org/draft-06/",
                                        "json-schema.org/draft-07/", "json-schema.org/draft/"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
      size_t kl = strlen(known[i]);
      for (size_t j = 0; j + kl <= u.len; j++)
        if (memcmp(u.p + j, known[i], kl) == 0) return i < 3;
    }
    break;
  }
  return draft7;
}

int ts_schema_compile(const char *json, size_t len, int flags, ts_schema **out, char *why,
                      size_t why_cap) {
  wr w;
  wr_init(&w, why, why_cap);
  if (!out || (!json && len)) {
    wr_puts(&w, "no schema text or no place for the schema");
    return TS_E_INVAL;
  }
  doc d;
  memset(&d, 0, sizeof d);
  cctx c;
  memset(&c, 0, sizeof c);
  ts_schema *s = calloc(1, sizeof *s);
  int rc = s ? TS_E_OK : TS_E_NOMEM;
  if (!rc) rc = doc_load(&d, json ? json : "", len, TS_SCHEMA_MAX_SCHEMA_DEPTH, "schema is", &w);
  if (rc == TS_E_ARGS_BAD_JSON || rc == TS_E_ARGS_TOO_DEEP || rc == TS_E_LIMIT)
    rc = TS_E_SCHEMA_INVALID; /* the message says which */
  if (!rc) {
    c.s = s;
    c.v = &d.v;
    c.w = &w;
    c.draft7 = dialect_of(&d.v, flags);
    size_t ntok = (size_t)d.v.ntok;
    c.nodes = calloc(ntok, sizeof *c.nodes);
    c.queue = malloc(ntok * sizeof *c.queue);
    c.base = calloc(ntok, sizeof *c.base);
    if (!c.nodes || !c.queue || !c.base) rc = TS_E_NOMEM;
  }
  if (!rc) rc = index_ids(&c, 1, (ts_view){"", 0}); /* also gives the root its base */
  if (!rc) {
    if (c.nids) qsort(c.ids, c.nids, sizeof *c.ids, ident_cmp);
    /* the document itself, under its base URI (the root's $id, or "") */
    if (find_ident(&c, c.base[1]) < 0) {
      rc = add_ident(&c, c.base[1], 1);
      if (!rc) qsort(c.ids, c.nids, sizeof *c.ids, ident_cmp);
    }
  }
  if (!rc) {
    s->root = node_for(&c, 1);
    if (!s->root) rc = TS_E_NOMEM;
    while (!rc && c.qhead < c.qtail) {
      int t = c.queue[c.qhead++];
      rc = compile_into(&c, t, c.nodes[t]);
    }
  }
  doc_fini(&d);
  free(c.nodes);
  free(c.queue);
  free(c.base);
  arena_free(c.scratch);
  if (rc == TS_E_OK) {
    *out = s;
    return TS_E_OK;
  }
  if (rc == TS_E_NOMEM) {
    wr_reset(&w);
    wr_puts(&w, "out of memory");
  }
  ts_schema_free(s);
  return rc;
}

int ts_schema_has_property(const ts_schema *s, const char *name) {
  if (!s || !name) return 0;
  const node *n = s->root;
  for (int hops = 0; n->nprops == 0 && n->ref && hops < TS_SCHEMA_MAX_RECURSION; hops++)
    n = n->ref;
  prop key = {{name, strlen(name)}, NULL};
  return n->nprops && bsearch(&key, n->props, n->nprops, sizeof key, prop_cmp) != NULL;
}

/* ---- validating --------------------------------------------------------------------- */

enum { V_TYPE = 1, V_FAIL = 2 };

typedef struct {
  ts_jv *v;
  wr *w;
  int quiet;  /* inside anyOf/oneOf/not/if/contains: no messages */
  int depth;  /* node recursion */
  long budget; /* steps left */
  ts_regex_scratch *rx; /* pattern matching memory, made on the first match */
} vctx;

/* Begins the message for token t, or returns NULL when quiet. */
static wr *say(vctx *c, int t) {
  if (c->quiet) return NULL;
  wr_pointer(c->w, c->v, t);
  wr_puts(c->w, ": ");
  return c->w;
}

static int fail(vctx *c, int t, int code, const char *fmt, ...) {
  wr *w = say(c, t);
  if (w) {
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    wr_puts(w, tmp);
  }
  return code;
}

/* A hard error: always written (it ends validation at once). */
static int limit(vctx *c, int t, const char *msg) {
  wr_reset(c->w);
  wr_pointer(c->w, c->v, t);
  wr_puts(c->w, ": ");
  wr_puts(c->w, msg);
  return TS_E_SCHEMA_LIMIT;
}

static unsigned kind_of(ts_jv *v, int t) {
  switch (ts_jv_type_of(v, t)) {
  case TS_JV_OBJECT: return T_OBJ;
  case TS_JV_ARRAY: return T_ARR;
  case TS_JV_STRING: return T_STR;
  default: break;
  }
  char ch = ts_jv_raw(v, t).p[0];
  return ch == 'n' ? T_NULL : ch == 't' || ch == 'f' ? T_BOOL : T_NUM;
}

static const char *kind_name(unsigned k) {
  for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; i++)
    if (type_names[i].bit == k) return type_names[i].name;
  return "?";
}

/* "string", "string or null", "string, number or null" */
static void wr_types(wr *w, unsigned mask) {
  if (mask & T_NUM) mask &= ~(unsigned)T_INT;
  size_t total = 0, done = 0;
  for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; i++)
    total += (mask & type_names[i].bit) != 0;
  for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; i++) {
    if (!(mask & type_names[i].bit)) continue;
    if (done) wr_puts(w, done + 1 == total ? " or " : ", ");
    wr_puts(w, type_names[i].name);
    done++;
  }
}

static unsigned node_mask(const node *n) {
  return n->types ? n->types | (n->flags & F_NULLABLE ? T_NULL : 0u) : 0u;
}

static int type_ok(ts_jv *v, int t, unsigned kind, unsigned mask) {
  if (!mask || (kind & mask)) return 1;
  if (kind == T_NUM && (mask & T_INT)) {
    ts_view raw = ts_jv_raw(v, t);
    return text_is_integer(raw.p, raw.len);
  }
  return 0;
}

/* Structural equality of token t and value j: 1, 0, or a negative ts_err. */
static int equal(vctx *c, int t, const jval *j) {
  if (--c->budget < 0) return limit(c, t, "validation work limit exceeded");
  ts_jv *v = c->v;
  unsigned kind = kind_of(v, t);
  if (kind != j->kind) return 0;
  switch (kind) {
  case T_NULL: return 1;
  case T_BOOL: return ts_jv_is_true(v, t) == j->b;
  case T_NUM: return num_of(v, t) == j->num;
  case T_STR: return view_eq(str_of(v, t), j->s);
  case T_ARR: {
    if ((size_t)ts_jv_size(v, t) != j->n) return 0;
    int e = ts_jv_first(v, t);
    for (size_t i = 0; i < j->n; i++, e = ts_jv_skip(v, e)) {
      int rc = equal(c, e, &j->items[i]);
      if (rc <= 0) return rc;
    }
    return 1;
  }
  default: { /* T_OBJ: keys are unique on both sides, so same count + all found */
    if ((size_t)ts_jv_size(v, t) != j->n) return 0;
    int k = t + 1;
    for (size_t i = 0; i < j->n; i++, k = ts_jv_skip(v, k + 1)) {
      jmember key = {str_of(v, k), {0, 0, 0, {NULL, 0}, 0, NULL, NULL}};
      const jmember *m = bsearch(&key, j->members, j->n, sizeof key, jmember_cmp);
      if (!m) return 0;
      int rc = equal(c, k + 1, &m->val);
      if (rc <= 0) return rc;
    }
    return 1;
  }
  }
}

/* Structural equality of two argument tokens (uniqueItems): 1, 0, or a negative
 * ts_err. Object members are found by a linear scan, paid from the budget. */
static int tok_equal(vctx *c, int a, int b) {
  if (--c->budget < 0) return limit(c, a, "validation work limit exceeded");
  ts_jv *v = c->v;
  unsigned kind = kind_of(v, a);
  if (kind != kind_of(v, b)) return 0;
  switch (kind) {
  case T_NULL: return 1;
  case T_BOOL: return ts_jv_is_true(v, a) == ts_jv_is_true(v, b);
  case T_NUM: return num_of(v, a) == num_of(v, b);
  case T_STR: return view_eq(str_of(v, a), str_of(v, b));
  default: break;
  }
  int n = ts_jv_size(v, a);
  if (n != ts_jv_size(v, b)) return 0;
  if (kind == T_ARR) {
    for (int i = 0, x = ts_jv_first(v, a), y = ts_jv_first(v, b); i < n;
         i++, x = ts_jv_skip(v, x), y = ts_jv_skip(v, y)) {
      int rc = tok_equal(c, x, y);
      if (rc <= 0) return rc;
    }
    return 1;
  }
  c->budget -= (long)n * n;
  if (c->budget < 0) return limit(c, a, "validation work limit exceeded");
  for (int i = 0, k = a + 1; i < n; i++, k = ts_jv_skip(v, k + 1)) {
    ts_view key = str_of(v, k);
    int found = -1;
    for (int m = 0, kb = b + 1; m < n && found < 0; m++, kb = ts_jv_skip(v, kb + 1))
      if (view_eq(key, str_of(v, kb))) found = kb + 1;
    if (found < 0) return 0;
    int rc = tok_equal(c, k + 1, found);
    if (rc <= 0) return rc;
  }
  return 1;
}

static int vnode(vctx *c, const node *n, int t);

/* A child's failure is not a type failure of its parent. */
static int child(vctx *c, const node *n, int t) {
  int rc = vnode(c, n, t);
  return rc > 0 ? V_FAIL : rc;
}

/* Runs n against t without messages: 0 (matches), V_TYPE/V_FAIL, or a ts_err. */
static int quietly(vctx *c, const node *n, int t) {
  int saved = c->quiet;
  c->quiet = 1;
  int rc = vnode(c, n, t);
  c->quiet = saved;
  return rc;
}

/* A pattern search: 1, 0, or a negative ts_err (the match limit becomes the schema's). */
static int search(vctx *c, const ts_regex *re, ts_view s, int t) {
  int rc = ts_regex_search(re, s.p, s.len, &c->rx);
  if (rc == TS_E_LIMIT) return limit(c, t, "pattern matching work limit exceeded");
  return rc;
}

static size_t utf8_count(ts_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.len; i++) n += ((unsigned char)s.p[i] & 0xc0) != 0x80;
  return n;
}

static const char *plural(size_t n, const char *one, const char *many) {
  return n == 1 ? one : many;
}

static int v_string(vctx *c, const node *n, int t) {
  if (!(n->flags & (F_MIN_LEN | F_MAX_LEN)) && !n->pattern) return 0;
  ts_view s = str_of(c->v, t);
  size_t len = utf8_count(s);
  if ((n->flags & F_MIN_LEN) && len < n->min_len)
    return fail(c, t, V_FAIL, "string shorter than %zu %s", n->min_len,
                plural(n->min_len, "character", "characters"));
  if ((n->flags & F_MAX_LEN) && len > n->max_len)
    return fail(c, t, V_FAIL, "string longer than %zu %s", n->max_len,
                plural(n->max_len, "character", "characters"));
  if (n->pattern) {
    int rc = search(c, n->pattern, s, t);
    if (rc < 0) return rc;
    if (!rc) {
      wr *w = say(c, t);
      if (w) {
        wr_puts(w, "string does not match pattern ");
        wr_quoted(w, (ts_view){n->pattern_txt, strlen(n->pattern_txt)});
      }
      return V_FAIL;
    }
  }
  return 0;
}

static int v_number(vctx *c, const node *n, int t) {
  if (!(n->flags & (F_MINIMUM | F_MAXIMUM | F_XMIN | F_XMAX | F_MULTIPLE))) return 0;
  double x = num_of(c->v, t);
  if ((n->flags & F_MINIMUM) && x < n->minimum.val)
    return fail(c, t, V_FAIL, "number below minimum %s", n->minimum.txt);
  if ((n->flags & F_MAXIMUM) && x > n->maximum.val)
    return fail(c, t, V_FAIL, "number above maximum %s", n->maximum.txt);
  if ((n->flags & F_XMIN) && !(x > n->xmin.val))
    return fail(c, t, V_FAIL, "number not above exclusive minimum %s", n->xmin.txt);
  if ((n->flags & F_XMAX) && !(x < n->xmax.val))
    return fail(c, t, V_FAIL, "number not below exclusive maximum %s", n->xmax.txt);
  if (n->flags & F_MULTIPLE) {
    ts_view raw = ts_jv_raw(c->v, t);
    if (!is_multiple(raw.p, raw.len, n->multiple.txt, strlen(n->multiple.txt)))
      return fail(c, t, V_FAIL, "number not a multiple of %s", n->multiple.txt);
  }
  return 0;
}

/* The object's member named `name`: its key token, or -1. */
static int member(ts_jv *v, int t, ts_view name) {
  int k = t + 1;
  for (int m = 0; m < ts_jv_size(v, t); m++, k = ts_jv_skip(v, k + 1))
    if (view_eq(str_of(v, k), name)) return k;
  return -1;
}

static int v_object(vctx *c, const node *n, int t) {
  ts_jv *v = c->v;
  size_t members = (size_t)ts_jv_size(v, t);
  if ((n->flags & F_MIN_PROPS) && members < n->min_props)
    return fail(c, t, V_FAIL, "object has fewer than %zu %s", n->min_props,
                plural(n->min_props, "property", "properties"));
  if ((n->flags & F_MAX_PROPS) && members > n->max_props)
    return fail(c, t, V_FAIL, "object has more than %zu %s", n->max_props,
                plural(n->max_props, "property", "properties"));
  for (size_t r = 0; r < n->nrequired; r++) {
    c->budget -= (long)members;
    if (c->budget < 0) return limit(c, t, "validation work limit exceeded");
    if (member(v, t, n->required[r]) < 0) {
      wr *w = say(c, t);
      if (w) {
        wr_puts(w, "missing required property ");
        wr_quoted(w, n->required[r]);
      }
      return V_FAIL;
    }
  }
  int k = t + 1;
  for (size_t m = 0; m < members; m++, k = ts_jv_skip(v, k + 1)) {
    ts_view name = str_of(v, k);
    prop key = {name, NULL};
    const prop *p = n->nprops ? bsearch(&key, n->props, n->nprops, sizeof key, prop_cmp) : NULL;
    int rc = 0, matched = p != NULL;
    if (p && (rc = child(c, p->schema, k + 1))) return rc;
    for (size_t i = 0; i < n->npprops; i++) {
      if ((rc = search(c, n->pprops[i].re, name, k)) < 0) return rc;
      if (!rc) continue;
      matched = 1;
      if ((rc = child(c, n->pprops[i].schema, k + 1))) return rc;
    }
    if (matched) continue;
    if (n->flags & F_ADD_FALSE) {
      wr *w = say(c, t);
      if (w) {
        wr_puts(w, "unexpected property ");
        wr_quoted(w, name);
      }
      return V_FAIL;
    }
    if (n->additional && (rc = child(c, n->additional, k + 1))) return rc;
  }
  if (n->names) {
    k = t + 1;
    for (size_t m = 0; m < members; m++, k = ts_jv_skip(v, k + 1)) {
      int rc = quietly(c, n->names, k); /* a key is a string token */
      if (rc < 0) return rc;
      if (rc) {
        wr *w = say(c, t);
        if (w) {
          wr_puts(w, "property name ");
          wr_quoted(w, str_of(v, k));
          wr_puts(w, " does not match \"propertyNames\"");
        }
        return V_FAIL;
      }
    }
  }
  for (size_t i = 0; i < n->ndeps; i++) {
    const dep *d = &n->deps[i];
    c->budget -= (long)members * (long)(d->nneeds + 1);
    if (c->budget < 0) return limit(c, t, "validation work limit exceeded");
    if (member(v, t, d->name) < 0) continue;
    for (size_t j = 0; j < d->nneeds; j++) {
      if (member(v, t, d->needs[j]) >= 0) continue;
      wr *w = say(c, t);
      if (w) {
        wr_puts(w, "property ");
        wr_quoted(w, d->name);
        wr_puts(w, " requires property ");
        wr_quoted(w, d->needs[j]);
      }
      return V_FAIL;
    }
    int rc;
    if (d->schema && (rc = child(c, d->schema, t))) return rc;
  }
  return 0;
}

static int v_array(vctx *c, const node *n, int t) {
  ts_jv *v = c->v;
  size_t count = (size_t)ts_jv_size(v, t);
  if ((n->flags & F_MIN_ITEMS) && count < n->min_items)
    return fail(c, t, V_FAIL, "array has fewer than %zu %s", n->min_items,
                plural(n->min_items, "item", "items"));
  if ((n->flags & F_MAX_ITEMS) && count > n->max_items)
    return fail(c, t, V_FAIL, "array has more than %zu %s", n->max_items,
                plural(n->max_items, "item", "items"));
  if ((n->flags & F_REST_FALSE) && count > n->nprefix)
    return fail(c, t, V_FAIL, "array has more than %zu %s", n->nprefix,
                plural(n->nprefix, "item", "items"));
  if (n->nprefix || n->items) {
    int e = ts_jv_first(v, t);
    for (size_t i = 0; i < count; i++, e = ts_jv_skip(v, e)) {
      const node *s = i < n->nprefix ? n->prefix[i] : n->items;
      if (!s) continue;
      int rc = child(c, s, e);
      if (rc) return rc;
    }
  }
  if (n->contains) {
    int found = 0, e = ts_jv_first(v, t);
    for (size_t i = 0; i < count && !found; i++, e = ts_jv_skip(v, e)) {
      int rc = quietly(c, n->contains, e);
      if (rc < 0) return rc;
      found = rc == 0;
    }
    if (!found) return fail(c, t, V_FAIL, "array has no item that matches \"contains\"");
  }
  if (n->flags & F_UNIQUE) {
    int a = ts_jv_first(v, t);
    for (size_t i = 0; i + 1 < count; i++, a = ts_jv_skip(v, a)) {
      int b = ts_jv_skip(v, a);
      for (size_t j = i + 1; j < count; j++, b = ts_jv_skip(v, b)) {
        int rc = tok_equal(c, a, b);
        if (rc < 0) return rc;
        if (rc) return fail(c, t, V_FAIL, "array items %zu and %zu are equal", i, j);
      }
    }
  }
  return 0;
}

/* The types a branch admits at its top (following $ref), 0 when it does not say. */
static unsigned branch_mask(const node *n) {
  for (int hops = 0; !n->types && n->ref && hops < 8; hops++) n = n->ref;
  return (n->flags & F_FALSE) ? 0 : node_mask(n);
}

/* anyOf (one == 0) or oneOf (one == 1). */
static int v_union(vctx *c, node *const *br, size_t nbr, int t, int one) {
  const char *kw = one ? "oneOf" : "anyOf";
  int saved = c->quiet;
  size_t matches = 0, deep = 0, deep_at = 0;
  unsigned mask = 0;
  int masks_known = 1;
  c->quiet = 1;
  for (size_t i = 0; i < nbr; i++) {
    int rc = vnode(c, br[i], t);
    if (rc < 0) {
      c->quiet = saved;
      return rc;
    }
    if (rc == 0) {
      matches++;
      if (!one) break;
    } else if (rc == V_TYPE) {
      unsigned m = branch_mask(br[i]);
      if (!m) masks_known = 0;
      mask |= m;
    } else {
      deep++;
      deep_at = i;
    }
  }
  c->quiet = saved;
  if (matches == 1 || (matches && !one)) return 0;
  if (matches > 1)
    return fail(c, t, V_FAIL, "matches %zu of oneOf (must match exactly one)", matches);
  if (deep == 1 && !c->quiet) { /* one branch had the right type: its reason is the one */
    int rc = vnode(c, br[deep_at], t);
    if (rc) return rc < 0 ? rc : V_FAIL;
    wr_reset(c->w); /* cannot happen: the same check passed quietly */
  }
  if (deep == 0 && masks_known) {
    wr *w = say(c, t);
    if (w) {
      wr_puts(w, "expected ");
      wr_types(w, mask);
      wr_puts(w, ", got ");
      wr_puts(w, kind_name(kind_of(c->v, t)));
    }
    return V_TYPE;
  }
  return fail(c, t, deep ? V_FAIL : V_TYPE, "matches none of %s", kw);
}

static int vnode(vctx *c, const node *n, int t) {
  if (--c->budget < 0) return limit(c, t, "validation work limit exceeded");
  if (c->depth >= TS_SCHEMA_MAX_RECURSION)
    return limit(c, t, "schema recursion too deep (a $ref cycle?)");
  c->depth++;
  int rc = 0;
  ts_jv *v = c->v;
  unsigned kind = kind_of(v, t);
  if (n->flags & F_FALSE) {
    rc = fail(c, t, V_TYPE, "no value is allowed here");
    goto out;
  }
  if (n->ref && (rc = vnode(c, n->ref, t))) goto out;
  if (!type_ok(v, t, kind, node_mask(n))) {
    wr *w = say(c, t);
    if (w) {
      wr_puts(w, "expected ");
      wr_types(w, node_mask(n));
      wr_puts(w, ", got ");
      wr_puts(w, kind_name(kind));
    }
    rc = V_TYPE;
    goto out;
  }
  if (n->flags & F_CONST) {
    rc = equal(c, t, &n->konst);
    if (rc < 0) goto out;
    rc = rc ? 0 : fail(c, t, V_FAIL, "value does not equal const");
    if (rc) goto out;
  }
  if (n->nenum) {
    int found = 0;
    for (size_t i = 0; i < n->nenum && !found; i++) {
      found = equal(c, t, &n->enums[i]);
      if (found < 0) {
        rc = found;
        goto out;
      }
    }
    if (!found) {
      rc = fail(c, t, V_FAIL, "value not in enum");
      goto out;
    }
  }
  switch (kind) {
  case T_STR: rc = v_string(c, n, t); break;
  case T_NUM: rc = v_number(c, n, t); break;
  case T_OBJ: rc = v_object(c, n, t); break;
  case T_ARR: rc = v_array(c, n, t); break;
  default: break;
  }
  if (rc) goto out;
  for (size_t i = 0; i < n->nall; i++)
    if ((rc = vnode(c, n->all_of[i], t))) goto out;
  if (n->nany && (rc = v_union(c, n->any_of, n->nany, t, 0))) goto out;
  if (n->none && (rc = v_union(c, n->one_of, n->none, t, 1))) goto out;
  if (n->not_) {
    rc = quietly(c, n->not_, t);
    if (rc < 0) goto out;
    rc = rc ? 0 : fail(c, t, V_FAIL, "value matches the \"not\" schema");
    if (rc) goto out;
  }
  if (n->if_) {
    rc = quietly(c, n->if_, t);
    if (rc < 0) goto out;
    const node *branch = rc == 0 ? n->then_ : n->else_;
    rc = branch ? child(c, branch, t) : 0;
  }
out:
  c->depth--;
  return rc;
}

int ts_schema_validate(const ts_schema *s, const char *args_json, size_t len, char *why,
                       size_t why_cap) {
  wr w;
  wr_init(&w, why, why_cap);
  if (!s || (!args_json && len)) {
    wr_puts(&w, "no schema or no arguments");
    return TS_E_INVAL;
  }
  doc d;
  int rc = doc_load(&d, args_json ? args_json : "", len, TS_SCHEMA_MAX_ARGS_DEPTH, "arguments are",
                    &w);
  vctx c;
  memset(&c, 0, sizeof c);
  if (rc == TS_E_OK) {
    c.v = &d.v;
    c.w = &w;
    c.budget = 1000000L + 64L * (long)d.v.ntok;
    rc = vnode(&c, s->root, 1);
    if (rc > 0) rc = TS_E_SCHEMA_MISMATCH;
  }
  if (rc == TS_E_NOMEM) {
    wr_reset(&w);
    wr_puts(&w, "out of memory");
  }
  ts_regex_scratch_free(c.rx);
  doc_fini(&d);
  return rc;
}
