/*
 * schema.c: JSON Schema subset for tool arguments (see schema.h).
 *
 * Two documents, one loader. Both the schema text and the arguments go through
 * doc_load: a private copy wrapped in brackets ("[" text "]", so that a bare number
 * or literal is one element of an array, which strict jsmn can end), a raw byte scan
 * that counts tokens exactly (so the token array is sized once), bounds the nesting
 * and rejects what jsmn lets through (trailing commas, raw control bytes in strings),
 * then json_view's parse, then one pass that decodes every string in place, checks
 * its UTF-8, and rejects duplicate keys. After loading, every string and key is a
 * decoded view, and nothing later can fail on the text itself.
 *
 * Duplicate keys are an error rather than "last one wins": the validator and the tool
 * could otherwise read different values of the same argument.
 *
 * Compiling turns the schema document into a tree of nodes in an arena (one free for
 * the whole tree, and out of memory at any point is one cleanup). Keywords are
 * collected first and processed in a fixed order, so a schema's first error does not
 * depend on key order and draft 4's boolean exclusiveMinimum can look at minimum.
 * $ref is resolved at compile time to a node pointer: the root's definitions get
 * their nodes before anything is compiled, so refs may point forward or in cycles.
 *
 * Validating walks the node tree over the arguments' tokens. Each check returns 0,
 * V_TYPE (this value failed this node's own type test: used to explain unions), V_FAIL
 * (any other mismatch), or a negative ts_err that aborts everything (the recursion or
 * work limit). anyOf/oneOf/not run their branches quietly (no message); when an anyOf
 * fails and exactly one branch got past its type test, that branch runs again aloud
 * so the message names the real problem ("/a: string shorter than 3 characters"
 * rather than "matches none of anyOf"); when every branch failed on type, the message
 * lists the union of their types. Pointers are not tracked on the way down: the error
 * path is rebuilt from the failing token by a walk from the root, which costs nothing
 * until there is an error.
 *
 * Recursion is bounded by the documents' nesting (checked by the raw scan) and, for
 * validation through $ref, by a depth counter and a step budget.
 */
#include "tools/schema.h"

#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/json_view.h"

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

static int utf8_ok(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i];
    size_t k;
    unsigned min;
    if (c < 0x80) {
      i++;
      continue;
    } else if (c >= 0xc2 && c <= 0xdf) {
      k = 1, min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
      k = 2, min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
      k = 3, min = 0x10000;
    } else {
      return 0;
    }
    if (n - i <= k) return 0;
    unsigned cp = c & (0x3fu >> k);
    for (size_t j = 1; j <= k; j++) {
      if ((s[i + j] & 0xc0) != 0x80) return 0;
      cp = cp << 6 | (s[i + j] & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    i += k + 1;
  }
  return 1;
}

/* The raw scan: exact token count, nesting bound, and the shapes jsmn accepts but JSON
 * does not (trailing commas, raw control bytes in strings). Returns TS_E_OK,
 * TS_E_ARGS_BAD_JSON with *detail, or TS_E_ARGS_TOO_DEEP. */
static int raw_scan(const char *s, size_t n, int max_depth, size_t *ntok, const char **detail) {
  size_t tok = 0;
  int depth = 0, in_str = 0, esc = 0, in_prim = 0;
  char prev = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (in_str) {
      if (esc) {
        esc = 0;
      } else if (c == '\\') {
        esc = 1;
      } else if (c == '"') {
        in_str = 0;
      } else if (c < 0x20) {
        *detail = "raw control character in a string";
        return TS_E_ARGS_BAD_JSON;
      }
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      in_prim = 0;
      continue;
    }
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' ||
        c == '+' || c == '.') {
      if (!in_prim) tok++;
      in_prim = 1;
      prev = (char)c;
      continue;
    }
    in_prim = 0;
    if (c == '"') {
      in_str = 1;
      tok++;
    } else if (c == '{' || c == '[') {
      tok++;
      if (++depth > max_depth) return TS_E_ARGS_TOO_DEEP;
    } else if (c == '}' || c == ']') {
      if (prev == ',') {
        *detail = "trailing comma";
        return TS_E_ARGS_BAD_JSON;
      }
      depth--;
    }
    prev = (char)c;
  }
  *ntok = tok;
  return TS_E_OK;
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
  const char *detail = NULL;
  size_t ntok = 0;
  int rc = raw_scan(text, len, max_depth, &ntok, &detail);
  if (rc == TS_E_ARGS_TOO_DEEP) {
    wr_fmt(w, "%s nested deeper than %d levels", what, max_depth);
    return rc;
  }
  if (rc != TS_E_OK) goto bad;
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
  if (rc != TS_E_OK || ts_jv_size(&d->v, 0) != 1) goto bad;
  size_t max_members = 0;
  for (int i = 1; i < d->v.ntok; i++) {
    ts_jv_type ty = ts_jv_type_of(&d->v, i);
    if (ty == TS_JV_OBJECT && (size_t)ts_jv_size(&d->v, i) > max_members)
      max_members = (size_t)ts_jv_size(&d->v, i);
    if (ty != TS_JV_STRING) continue;
    ts_view s;
    rc = ts_jv_str(&d->v, i, &s);
    if (rc != TS_E_OK) {
      detail = rc == TS_E_JSON_SURROGATE ? "lone or mis-ordered \\u surrogate" : "invalid escape";
      goto bad;
    }
    if (!utf8_ok((const unsigned char *)s.p, s.len)) {
      detail = "invalid UTF-8 in a string";
      goto bad;
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
bad:
  wr_fmt(w, "%s not valid JSON%s%s", what, detail ? ": " : "", detail ? detail : "");
  return TS_E_ARGS_BAD_JSON;
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
  F_PATTERN = 1 << 14,    /* patternProperties present: additional* not enforced */
  F_CONST = 1 << 15,
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
  double val;
  const char *txt; /* as written in the schema, for messages */
} bound;

struct node {
  unsigned types; /* T_* mask; 0 = any type */
  unsigned flags; /* F_* */
  size_t min_len, max_len, min_items, max_items, min_props, max_props;
  bound minimum, maximum, xmin, xmax;
  jval konst;
  jval *enums;
  size_t nenum;
  prop *props; /* sorted by name */
  size_t nprops;
  ts_view *required;
  size_t nrequired;
  node *additional; /* additionalProperties as a schema */
  node **prefix;    /* tuple items */
  size_t nprefix;
  node *items; /* items after the tuple (all items without one) */
  node **all_of, **any_of, **one_of;
  size_t nall, nany, none;
  node *not_;
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

struct ts_schema {
  blk *arena;
  node *root;
};

static void *arena_alloc(ts_schema *s, size_t n) {
  if (n > SIZE_MAX / 2) return NULL;
  n = n ? ALIGN_UP(n) : _Alignof(max_align_t);
  blk *b = s->arena;
  if (!b || b->cap - b->used < n) {
    size_t cap = n > BLK_MIN ? n : BLK_MIN;
    b = malloc(BLK_HDR + cap);
    if (!b) return NULL;
    b->used = 0;
    b->cap = cap;
    if (s->arena && n > BLK_MIN) { /* a big one: keep the current block current */
      b->next = s->arena->next;
      s->arena->next = b;
    } else {
      b->next = s->arena;
      s->arena = b;
    }
  }
  void *p = (char *)b + BLK_HDR + b->used;
  b->used += n;
  memset(p, 0, n);
  return p;
}

void ts_schema_free(ts_schema *s) {
  if (!s) return;
  for (blk *b = s->arena, *next; b; b = next) {
    next = b->next;
    free(b);
  }
  free(s);
}

/* ---- compiling ---------------------------------------------------------------------- */

typedef struct {
  ts_view name;
  node *n;
  int tok;
} def;

typedef struct {
  ts_schema *s;
  ts_jv *v;
  wr *w;
  def *defs[2]; /* [0] definitions, [1] $defs; sorted by name */
  size_t ndefs[2];
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

static int copy_view(cctx *c, ts_view in, ts_view *out) {
  char *p = arena_alloc(c->s, in.len + 1);
  if (!p) return TS_E_NOMEM;
  if (in.len) memcpy(p, in.p, in.len);
  p[in.len] = '\0';
  out->p = p;
  out->len = in.len;
  return TS_E_OK;
}

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

static int def_cmp(const void *a, const void *b) {
  return view_cmp(&((const def *)a)->name, &((const def *)b)->name);
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
    out->items = arena_alloc(c->s, out->n * sizeof *out->items);
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
    out->members = arena_alloc(c->s, out->n * sizeof *out->members);
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
  K_MINIMUM,
  K_MAXIMUM,
  K_XMIN,
  K_XMAX,
  K_PROPS,
  K_REQUIRED,
  K_ADDPROPS,
  K_PATTERNPROPS,
  K_MINPROPS,
  K_MAXPROPS,
  K_PREFIXITEMS,
  K_ITEMS,
  K_ADDITEMS,
  K_MINITEMS,
  K_MAXITEMS,
  K_ALLOF,
  K_ANYOF,
  K_ONEOF,
  K_NOT,
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
    [K_MINIMUM] = "minimum",
    [K_MAXIMUM] = "maximum",
    [K_XMIN] = "exclusiveMinimum",
    [K_XMAX] = "exclusiveMaximum",
    [K_PROPS] = "properties",
    [K_REQUIRED] = "required",
    [K_ADDPROPS] = "additionalProperties",
    [K_PATTERNPROPS] = "patternProperties",
    [K_MINPROPS] = "minProperties",
    [K_MAXPROPS] = "maxProperties",
    [K_PREFIXITEMS] = "prefixItems",
    [K_ITEMS] = "items",
    [K_ADDITEMS] = "additionalItems",
    [K_MINITEMS] = "minItems",
    [K_MAXITEMS] = "maxItems",
    [K_ALLOF] = "allOf",
    [K_ANYOF] = "anyOf",
    [K_ONEOF] = "oneOf",
    [K_NOT] = "not",
};

static const struct {
  const char *name;
  unsigned bit;
} type_names[] = {
    {"string", T_STR}, {"number", T_NUM},  {"integer", T_INT}, {"boolean", T_BOOL},
    {"object", T_OBJ}, {"array", T_ARR},   {"null", T_NULL},
};

static int compile_into(cctx *c, int t, node *n);

static int subschema(cctx *c, int t, node **out) {
  *out = arena_alloc(c->s, sizeof **out);
  if (!*out) return TS_E_NOMEM;
  return compile_into(c, t, *out);
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
  *out = arena_alloc(c->s, (size_t)n * sizeof **out);
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

static int find_def(const cctx *c, int which, ts_view name, node **out) {
  def key = {name, NULL, 0};
  def *d = c->ndefs[which]
               ? bsearch(&key, c->defs[which], c->ndefs[which], sizeof key, def_cmp)
               : NULL;
  if (!d) return 0;
  *out = d->n;
  return 1;
}

static int compile_ref(cctx *c, int t, node *n) {
  ts_jv *v = c->v;
  if (ts_jv_type_of(v, t) != TS_JV_STRING) return bad(c, t, "must be a string");
  ts_view ref = str_of(v, t);
  static const char *const prefixes[2] = {"#/definitions/", "#/$defs/"};
  if (view_eq(ref, (ts_view){"#", 1})) {
    n->ref = c->s->root;
    return TS_E_OK;
  }
  for (int which = 0; which < 2; which++) {
    size_t pl = strlen(prefixes[which]);
    if (ref.len <= pl || memcmp(ref.p, prefixes[which], pl) != 0) continue;
    if (memchr(ref.p + pl, '/', ref.len - pl)) break; /* a deeper pointer */
    /* unescape ~1 and ~0 (RFC 6901); the name is never longer than the segment */
    char *name = arena_alloc(c->s, ref.len - pl + 1);
    if (!name) return TS_E_NOMEM;
    size_t nl = 0;
    for (size_t i = pl; i < ref.len; i++) {
      if (ref.p[i] == '~' && i + 1 < ref.len && (ref.p[i + 1] == '0' || ref.p[i + 1] == '1')) {
        name[nl++] = ref.p[++i] == '0' ? '~' : '/';
      } else if (ref.p[i] == '~') {
        return bad(c, t, "bad ~ escape in $ref");
      } else {
        name[nl++] = ref.p[i];
      }
    }
    if (!find_def(c, which, (ts_view){name, nl}, &n->ref)) {
      wr_pointer(c->w, v, t);
      wr_puts(c->w, ": ");
      wr_quoted(c->w, ref);
      wr_puts(c->w, " not found");
      return TS_E_SCHEMA_INVALID;
    }
    return TS_E_OK;
  }
  wr_pointer(c->w, v, t);
  wr_puts(c->w, ": unsupported $ref ");
  wr_quoted(c->w, ref);
  wr_puts(c->w, " (only \"#\", \"#/definitions/NAME\" and \"#/$defs/NAME\")");
  return TS_E_SCHEMA_INVALID;
}

static int compile_props(cctx *c, int t, node *n) {
  ts_jv *v = c->v;
  if (ts_jv_type_of(v, t) != TS_JV_OBJECT) return bad(c, t, "must be an object");
  n->nprops = (size_t)ts_jv_size(v, t);
  if (!n->nprops) return TS_E_OK;
  n->props = arena_alloc(c->s, n->nprops * sizeof *n->props);
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

static int compile_required(cctx *c, int t, node *n) {
  ts_jv *v = c->v;
  if (ts_jv_type_of(v, t) != TS_JV_ARRAY) return bad(c, t, "must be an array of strings");
  n->nrequired = (size_t)ts_jv_size(v, t);
  if (!n->nrequired) return TS_E_OK;
  n->required = arena_alloc(c->s, n->nrequired * sizeof *n->required);
  if (!n->required) return TS_E_NOMEM;
  int e = ts_jv_first(v, t);
  for (size_t i = 0; i < n->nrequired; i++, e = ts_jv_skip(v, e)) {
    if (ts_jv_type_of(v, e) != TS_JV_STRING) return bad(c, e, "must be a string");
    if (copy_view(c, str_of(v, e), &n->required[i])) return TS_E_NOMEM;
  }
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
  for (int i = 0; i < NKW; i++) at[i] = -1;
  int members = ts_jv_size(v, t);
  for (int m = 0, k = t + 1; m < members; m++, k = ts_jv_skip(v, k + 1)) {
    ts_view key = str_of(v, k);
    for (int i = 0; i < NKW; i++) {
      if (view_eq(key, (ts_view){kw_names[i], strlen(kw_names[i])})) {
        at[i] = k + 1;
        break;
      }
    }
  }
  if (at[K_REF] >= 0 && (rc = compile_ref(c, at[K_REF], n))) return rc;
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
    n->enums = arena_alloc(c->s, n->nenum * sizeof *n->enums);
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
  if (at[K_PROPS] >= 0 && (rc = compile_props(c, at[K_PROPS], n))) return rc;
  if (at[K_REQUIRED] >= 0 && (rc = compile_required(c, at[K_REQUIRED], n))) return rc;
  if (at[K_ADDPROPS] >= 0) {
    int x = at[K_ADDPROPS];
    if (is_bool_tok(v, x)) {
      if (!ts_jv_is_true(v, x)) n->flags |= F_ADD_FALSE;
    } else if ((rc = subschema(c, x, &n->additional))) {
      return rc;
    }
  }
  if (at[K_PATTERNPROPS] >= 0) n->flags |= F_PATTERN;
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
  if (at[K_ALLOF] >= 0 && (rc = schema_list(c, at[K_ALLOF], &n->all_of, &n->nall, 0))) return rc;
  if (at[K_ANYOF] >= 0 && (rc = schema_list(c, at[K_ANYOF], &n->any_of, &n->nany, 0))) return rc;
  if (at[K_ONEOF] >= 0 && (rc = schema_list(c, at[K_ONEOF], &n->one_of, &n->none, 0))) return rc;
  if (at[K_NOT] >= 0 && (rc = subschema(c, at[K_NOT], &n->not_))) return rc;
  return TS_E_OK;
}

/* The root's definitions and $defs: a node for each, allocated before anything is
 * compiled so that $ref can point anywhere among them. */
static int collect_defs(cctx *c) {
  ts_jv *v = c->v;
  if (ts_jv_type_of(v, 1) != TS_JV_OBJECT) return TS_E_OK;
  static const char *const names[2] = {"definitions", "$defs"};
  for (int which = 0; which < 2; which++) {
    int t = -1;
    for (int m = 0, k = 2; m < ts_jv_size(v, 1); m++, k = ts_jv_skip(v, k + 1))
      if (view_eq(str_of(v, k), (ts_view){names[which], strlen(names[which])})) t = k + 1;
    if (t < 0) continue;
    if (ts_jv_type_of(v, t) != TS_JV_OBJECT) return bad(c, t, "must be an object");
    size_t n = (size_t)ts_jv_size(v, t);
    if (!n) continue;
    def *d = arena_alloc(c->s, n * sizeof *d);
    if (!d) return TS_E_NOMEM;
    int k = t + 1;
    for (size_t i = 0; i < n; i++, k = ts_jv_skip(v, k + 1)) {
      d[i].name = str_of(v, k); /* lives as long as the document: only used here */
      d[i].tok = k + 1;
      d[i].n = arena_alloc(c->s, sizeof *d[i].n);
      if (!d[i].n) return TS_E_NOMEM;
    }
    qsort(d, n, sizeof *d, def_cmp);
    c->defs[which] = d;
    c->ndefs[which] = n;
  }
  for (int which = 0; which < 2; which++) {
    for (size_t i = 0; i < c->ndefs[which]; i++) {
      int rc = compile_into(c, c->defs[which][i].tok, c->defs[which][i].n);
      if (rc) return rc;
    }
  }
  return TS_E_OK;
}

ts_schema *ts_schema_compile(const char *json, size_t len, char *why, size_t why_cap) {
  wr w;
  wr_init(&w, why, why_cap);
  doc d;
  memset(&d, 0, sizeof d);
  ts_schema *s = calloc(1, sizeof *s);
  int rc = s ? TS_E_OK : TS_E_NOMEM;
  if (!rc) rc = doc_load(&d, json ? json : "", json ? len : 0, TS_SCHEMA_MAX_SCHEMA_DEPTH,
                         "schema is", &w);
  if (!rc) {
    cctx c;
    memset(&c, 0, sizeof c);
    c.s = s;
    c.v = &d.v;
    c.w = &w;
    s->root = arena_alloc(s, sizeof *s->root);
    rc = s->root ? collect_defs(&c) : TS_E_NOMEM;
    if (!rc) rc = compile_into(&c, 1, s->root);
  }
  doc_fini(&d);
  if (rc == TS_E_OK) return s;
  if (rc == TS_E_NOMEM) {
    wr_reset(&w);
    wr_puts(&w, "out of memory");
  }
  ts_schema_free(s);
  return NULL;
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
  int quiet;  /* inside anyOf/oneOf/not: no messages */
  int depth;  /* node recursion */
  long budget; /* steps left */
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

static int vnode(vctx *c, const node *n, int t);

/* A child's failure is not a type failure of its parent. */
static int child(vctx *c, const node *n, int t) {
  int rc = vnode(c, n, t);
  return rc > 0 ? V_FAIL : rc;
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
  if (!(n->flags & (F_MIN_LEN | F_MAX_LEN))) return 0;
  size_t len = utf8_count(str_of(c->v, t));
  if ((n->flags & F_MIN_LEN) && len < n->min_len)
    return fail(c, t, V_FAIL, "string shorter than %zu %s", n->min_len,
                plural(n->min_len, "character", "characters"));
  if ((n->flags & F_MAX_LEN) && len > n->max_len)
    return fail(c, t, V_FAIL, "string longer than %zu %s", n->max_len,
                plural(n->max_len, "character", "characters"));
  return 0;
}

static int v_number(vctx *c, const node *n, int t) {
  if (!(n->flags & (F_MINIMUM | F_MAXIMUM | F_XMIN | F_XMAX))) return 0;
  double x = num_of(c->v, t);
  if ((n->flags & F_MINIMUM) && x < n->minimum.val)
    return fail(c, t, V_FAIL, "number below minimum %s", n->minimum.txt);
  if ((n->flags & F_MAXIMUM) && x > n->maximum.val)
    return fail(c, t, V_FAIL, "number above maximum %s", n->maximum.txt);
  if ((n->flags & F_XMIN) && !(x > n->xmin.val))
    return fail(c, t, V_FAIL, "number not above exclusive minimum %s", n->xmin.txt);
  if ((n->flags & F_XMAX) && !(x < n->xmax.val))
    return fail(c, t, V_FAIL, "number not below exclusive maximum %s", n->xmax.txt);
  return 0;
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
    int found = 0, k = t + 1;
    for (size_t m = 0; m < members && !found; m++, k = ts_jv_skip(v, k + 1))
      found = view_eq(str_of(v, k), n->required[r]);
    if (!found) {
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
    prop key = {str_of(v, k), NULL};
    const prop *p = n->nprops ? bsearch(&key, n->props, n->nprops, sizeof key, prop_cmp) : NULL;
    int rc = 0;
    if (p) {
      rc = child(c, p->schema, k + 1);
    } else if (n->flags & F_PATTERN) {
      rc = 0; /* cannot tell which properties patternProperties admits */
    } else if (n->flags & F_ADD_FALSE) {
      wr *w = say(c, t);
      if (w) {
        wr_puts(w, "unexpected property ");
        wr_quoted(w, key.name);
      }
      rc = V_FAIL;
    } else if (n->additional) {
      rc = child(c, n->additional, k + 1);
    }
    if (rc) return rc;
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
  if (!n->nprefix && !n->items) return 0;
  int e = ts_jv_first(v, t);
  for (size_t i = 0; i < count; i++, e = ts_jv_skip(v, e)) {
    const node *s = i < n->nprefix ? n->prefix[i] : n->items;
    if (!s) continue;
    int rc = child(c, s, e);
    if (rc) return rc;
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
    int saved = c->quiet;
    c->quiet = 1;
    rc = vnode(c, n->not_, t);
    c->quiet = saved;
    if (rc < 0) goto out;
    rc = rc ? 0 : fail(c, t, V_FAIL, "value matches the \"not\" schema");
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
  if (rc == TS_E_OK) {
    vctx c;
    memset(&c, 0, sizeof c);
    c.v = &d.v;
    c.w = &w;
    c.budget = 1000000L + 64L * (long)d.v.ntok;
    rc = vnode(&c, s->root, 1);
    if (rc > 0) rc = TS_E_SCHEMA_MISMATCH;
  } else if (rc == TS_E_NOMEM) {
    wr_reset(&w);
    wr_puts(&w, "out of memory");
  }
  doc_fini(&d);
  return rc;
}
