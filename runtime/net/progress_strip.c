/*
 * progress_strip.c: see progress_strip.h.
 *
 * Two passes over one jsmn parse of a copy of the body: the first collects the byte
 * ranges to cut (raw bytes only, so the output is the input minus those ranges); the
 * second reads tool names and progress arguments, which decodes strings in place in the
 * copy - hence the order. A member is cut with the comma after it, or, when it is the
 * last of its object, with the comma before it (from the end of the last member kept).
 */
#include "net/progress_strip.h"

#include <stdlib.h>
#include <string.h>

#include "stream/json_view.h"
#include "stream/adapter.h"
#include "stream/provider.h"


#define XPA TS_PROGRESS_KEYWORD

typedef struct {
  size_t a, b;
} range;

typedef struct {
  range *v;
  size_t n, cap;
  int oom;
} ranges;

static int contains(const char *s, size_t n, const char *lit, size_t l) {
  for (const char *p = s, *end = s + n; (size_t)(end - p) >= l;) {
    p = memchr(p, lit[0], (size_t)(end - p) - l + 1);
    if (!p) return 0;
    if (!memcmp(p, lit, l)) return 1;
    p++;
  }
  return 0;
}

static void add_range(ranges *rs, size_t a, size_t b) {
  if (rs->n == rs->cap) {
    size_t nc = rs->cap ? rs->cap * 2 : 8;
    range *nv = realloc(rs->v, nc * sizeof *nv);
    if (!nv) {
      rs->oom = 1;
      return;
    }
    rs->v = nv;
    rs->cap = nc;
  }
  rs->v[rs->n++] = (range){a, b};
}

static int cmp_range(const void *x, const void *y) {
  const range *a = x, *b = y;
  return a->a < b->a ? -1 : a->a > b->a;
}

/* Every member named XPA inside the subtree of token t, as byte ranges of the document
 * that remove it with its comma. */
static void collect_xpa(const ts_jv *v, int t, ranges *rs) {
  int end = ts_jv_skip(v, t);
  for (int i = t; i < end; i++) {
    if (ts_jv_type_of(v, i) != TS_JV_OBJECT) continue;
    int n = ts_jv_size(v, i), k = i + 1;
    const char *kept_end = NULL; /* end of the last member that stays */
    for (int m = 0; m < n; m++) {
      int val = k + 1, next = ts_jv_skip(v, val);
      ts_view kv = ts_jv_raw(v, k), vv = ts_jv_raw(v, val);
      if (ts_jv_eq(v, k, XPA)) {
        size_t a = (size_t)(kv.p - v->js), b = (size_t)(vv.p + vv.len - v->js);
        if (m + 1 < n) b = (size_t)(ts_jv_raw(v, next).p - v->js);
        else if (kept_end) a = (size_t)(kept_end - v->js);
        add_range(rs, a, b);
      } else {
        kept_end = vv.p + vv.len;
      }
      k = next;
    }
  }
}

/* A tool's name and schema: records the schema's top-level XPA as its progress argument. */
static void on_tool(void *user, ts_jv *v, int name, int schema) {
  ts_tool_defs *defs = user;
  int pa = ts_jv_get(v, schema, XPA);
  if (name < 0 || ts_jv_type_of(v, pa) != TS_JV_STRING || ts_jv_type_of(v, name) != TS_JV_STRING)
    return;
  ts_view nv, pv;
  if (ts_jv_str(v, name, &nv) || ts_jv_str(v, pa, &pv)) return;
  char nbuf[TS_ADAPTER_MAX_ID + 1], pbuf[1024];
  if (nv.len > TS_ADAPTER_MAX_ID || pv.len >= sizeof pbuf || !pv.len) return;
  memcpy(nbuf, nv.p, nv.len);
  nbuf[nv.len] = '\0';
  memcpy(pbuf, pv.p, pv.len);
  pbuf[pv.len] = '\0';
  if (strlen(nbuf) != nv.len || strlen(pbuf) != pv.len) return; /* NUL inside */
  ts_tool_defs_set_progress(defs, nbuf, pbuf);
}

/* Strips XPA members from the tools of a JSON request body and learns the progress
 * arguments they name. Returns a malloc'd rewritten body (*out_len bytes), or NULL when
 * the body is to be forwarded untouched (no XPA, not JSON, out of memory). */
char *ts_progress_strip(const char *body, size_t len, ts_tool_defs *defs, size_t *out_len) {
  if (len < sizeof XPA || !contains(body, len, XPA, sizeof XPA - 1) || len > (256u << 20))
    return NULL;
  char *copy = malloc(len), *out = NULL;
  ts_jv v;
  memset(&v, 0, sizeof v);
  ranges rs;
  memset(&rs, 0, sizeof rs);
  if (!copy) return NULL;
  memcpy(copy, body, len);
  size_t cap = len / 2 + 16;
  if (cap > (64u << 20)) cap = 64u << 20;
  if (ts_jv_init(&v, (int)cap) || ts_jv_parse(&v, copy, len)) goto done;
  /* Pass 1: ranges (raw bytes only), in every array that declares tools (`tools`, and
   * Bedrock's toolConfig.tools: stream/provider.h). */
  int arrays[8];
  int na = ts_provider_tool_arrays(NULL, &v, arrays, 8);
  if (!na) goto done;
  for (int a = 0; a < na; a++)
    collect_xpa(&v, arrays[a], &rs);
  if (!rs.n || rs.oom) goto done;
  /* Pass 2: names and progress arguments (decodes strings in place in the copy), from
   * wherever any provider's request declares its tools (stream/provider.h). */
  ts_provider_tool_schemas(NULL, &v, on_tool, defs);
  qsort(rs.v, rs.n, sizeof *rs.v, cmp_range);
  out = malloc(len);
  if (!out) goto done;
  size_t pos = 0, o = 0;
  for (size_t i = 0; i < rs.n; i++) {
    if (rs.v[i].a > pos) {
      memcpy(out + o, body + pos, rs.v[i].a - pos);
      o += rs.v[i].a - pos;
    }
    if (rs.v[i].b > pos) pos = rs.v[i].b;
  }
  memcpy(out + o, body + pos, len - pos);
  o += len - pos;
  *out_len = o;
done:
  free(rs.v);
  ts_jv_fini(&v);
  free(copy);
  return out;
}

