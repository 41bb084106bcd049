/*
 * provider.c: the provider table and the few things every caller asks of it.
 *
 * The table itself is TS_PROVIDER_TABLE (provider.h) expanded twice: once into the format
 * enum, once here into an array of pointers to the rows, each defined in its own file of
 * stream/providers/ (in the manner of redis' ae_epoll.c / ae_kqueue.c behind one aeApi:
 * the files share an interface, not a header each). The rest of this file answers the
 * questions the adapter, `run` and the gateway used to answer each with its own list:
 * which provider a name, a path, a URL or a first event means; what URL and what request
 * body to send; where a request declares its tools.
 *
 * Detection order matters only where two rows could claim the same input; the rows are
 * written so that none do (each names events or members only it sends), and the table
 * order is the tie-break.
 */
#include "stream/provider.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "stream/json_view.h"

#define TS_X(e, s) extern const ts_provider ts_provider_##s;
TS_PROVIDER_TABLE(TS_X)
#undef TS_X

static const ts_provider *const rows[] = {
#define TS_X(e, s) &ts_provider_##s,
    TS_PROVIDER_TABLE(TS_X)
#undef TS_X
};
#define NROWS (sizeof rows / sizeof rows[0])

size_t ts_provider_count(void) { return NROWS; }

const ts_provider *ts_provider_at(size_t i) { return i < NROWS ? rows[i] : NULL; }

const ts_provider *ts_provider_get(ts_format f) {
  /* rows are in enum order: TS_FORMAT_<first row> is 1 */
  if ((unsigned)f < 1 || (unsigned)f > NROWS) return NULL;
  return rows[f - 1];
}

const char *ts_format_name(ts_format f) {
  if (f == TS_FORMAT_AUTO) return "auto";
  if (f == TS_FORMAT_RAW) return "raw";
  const ts_provider *p = ts_provider_get(f);
  return p ? p->name : "unknown";
}

int ts_format_parse(const char *name) {
  if (!name) return -1;
  if (!strcmp(name, "auto")) return TS_FORMAT_AUTO;
  if (!strcmp(name, "raw")) return TS_FORMAT_RAW;
  for (size_t i = 0; i < NROWS; i++)
    if (!strcmp(name, rows[i]->name)) return (int)rows[i]->format;
  return -1;
}

const ts_provider *ts_provider_find(const char *name) {
  if (!name) return NULL;
  for (size_t i = 0; i < NROWS; i++)
    if (!strcmp(name, rows[i]->name) || (rows[i]->alias && !strcmp(name, rows[i]->alias)))
      return rows[i];
  return NULL;
}

/* ---- detection ------------------------------------------------------------------------ */

static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

ts_format ts_provider_detect_name(ts_view name, ts_view data) {
  for (size_t i = 0; i < NROWS; i++)
    if (name.len && rows[i]->detect_name && rows[i]->detect_name(name)) return rows[i]->format;
  const char *p = data.p;
  size_t n = p ? data.len : 0;
  while (n && is_ws(p[0])) p++, n--;
  while (n && is_ws(p[n - 1])) n--;
  for (size_t i = 0; i < NROWS && n; i++) {
    const char *s = rows[i]->sentinel;
    if (s && strlen(s) == n && !memcmp(s, p, n)) return rows[i]->format;
  }
  return TS_FORMAT_AUTO;
}

ts_format ts_provider_detect_doc(const ts_jv *jv) {
  int root = 0;
  if (ts_jv_type_of(jv, root) == TS_JV_ARRAY) root = ts_jv_first(jv, root); /* Gemini */
  if (ts_jv_type_of(jv, root) != TS_JV_OBJECT) return TS_FORMAT_AUTO;
  int type = ts_jv_get(jv, root, "type");
  if (ts_jv_type_of(jv, type) == TS_JV_STRING) {
    ts_view raw = ts_jv_raw(jv, type);
    ts_format f = ts_provider_detect_name((ts_view){raw.p + 1, raw.len - 2}, (ts_view){NULL, 0});
    if (f != TS_FORMAT_AUTO) return f;
  }
  for (size_t i = 0; i < NROWS; i++)
    if (rows[i]->detect_doc && rows[i]->detect_doc(jv, root)) return rows[i]->format;
  return TS_FORMAT_AUTO;
}

/* ---- media types, paths and URLs ------------------------------------------------------------------- */

ts_format ts_provider_for_media_type(const char *mt, size_t n) {
  for (size_t i = 0; mt && i < NROWS; i++) {
    const char *m = rows[i]->media_type;
    if (m && strlen(m) == n && !strncasecmp(m, mt, n)) return rows[i]->format;
  }
  return TS_FORMAT_AUTO;
}

ts_format ts_provider_for_path(const char *path, size_t len) {
  if (!path) return TS_FORMAT_AUTO;
  const char *q = memchr(path, '?', len);
  if (q) len = (size_t)(q - path);
  for (size_t i = 0; i < NROWS; i++) {
    for (const char *const *s = rows[i]->path_suffixes; s && *s; s++) {
      size_t l = strlen(*s);
      if (len >= l && !memcmp(path + len - l, *s, l)) return rows[i]->format;
    }
  }
  return TS_FORMAT_AUTO;
}

const ts_provider *ts_provider_for_url(const char *url) {
  /* Gemini's (and others') OpenAI-compatible endpoint lives on the native host */
  const char *path = url ? strstr(url, "://") : NULL;
  path = path ? strchr(path + 3, '/') : NULL;
  if (path && strstr(path, "/openai")) return NULL;
  for (size_t i = 0; url && i < NROWS; i++)
    if (rows[i]->host_hint && strstr(url, rows[i]->host_hint)) return rows[i];
  return NULL;
}

/* Appends s[0..n) to out at *o, keeping room for the NUL; 0 when it does not fit. */
static int put(char *out, size_t cap, size_t *o, const char *s, size_t n) {
  if (n >= cap - *o) return 0;
  memcpy(out + *o, s, n);
  *o += n;
  out[*o] = '\0';
  return 1;
}

/* The suffix with {model} replaced (the name percent-encoded: it is one path segment),
 * written at *o. */
static int put_suffix(char *out, size_t cap, size_t *o, const char *suffix, size_t n,
                      const char *model) {
  static const char mark[] = "{model}";
  while (n) {
    const char *m = NULL;
    for (size_t i = 0; i + sizeof mark - 1 <= n; i++)
      if (!memcmp(suffix + i, mark, sizeof mark - 1)) {
        m = suffix + i;
        break;
      }
    size_t k = m ? (size_t)(m - suffix) : n;
    if (!put(out, cap, o, suffix, k)) return 0;
    suffix += k, n -= k;
    if (!m) break;
    for (const char *c = model; *c; c++) {
      unsigned char u = (unsigned char)*c;
      int keep = (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') ||
                 u == '-' || u == '_' || u == '.' || u == '~';
      char e[3] = {'%', "0123456789ABCDEF"[u >> 4], "0123456789ABCDEF"[u & 15]};
      if (!(keep ? put(out, cap, o, c, 1) : put(out, cap, o, e, 3))) return 0;
    }
    suffix += sizeof mark - 1, n -= sizeof mark - 1;
  }
  return 1;
}

int ts_provider_url(const ts_provider *p, const char *base, const char *model, char *out,
                    size_t cap) {
  if (!p || !base || !out || !cap) return TS_E_INVAL;
  if (!model) model = "";
  out[0] = '\0';
  const char *suffix = p->url_suffix ? p->url_suffix : "";
  const char *sq = strchr(suffix, '?');
  size_t sl = sq ? (size_t)(sq - suffix) : strlen(suffix);
  /* the suffix's path, with {model} replaced, to compare with the end of the base path */
  char want[1024];
  size_t wl = 0;
  if (!put_suffix(want, sizeof want, &wl, suffix, sl, model)) return TS_E_LIMIT;
  const char *q = strchr(base, '?');
  size_t bl = q ? (size_t)(q - base) : strlen(base);
  size_t o = 0;
  int has = bl >= wl && !memcmp(base + bl - wl, want, wl);
  if (!put(out, cap, &o, base, bl)) return TS_E_LIMIT;
  if (!has && wl) {
    /* one slash between the base and the suffix's path */
    const char *w = want;
    size_t n = wl;
    if (w[0] == '/' && bl && base[bl - 1] == '/') w++, n--;
    if (w[0] != '/' && w[0] != ':' && (!bl || base[bl - 1] != '/') && !put(out, cap, &o, "/", 1))
      return TS_E_LIMIT;
    if (!put(out, cap, &o, w, n)) return TS_E_LIMIT;
  }
  if (q && !put(out, cap, &o, q, strlen(q))) return TS_E_LIMIT;
  if (sq && !has) { /* the suffix's own query joins the base's */
    if (!put(out, cap, &o, q ? "&" : "?", 1) || !put(out, cap, &o, sq + 1, strlen(sq + 1)))
      return TS_E_LIMIT;
  }
  return TS_E_OK;
}

void ts__provider_tools_as(ts_buf *b, const ts_request *r, const ts__tool_shape *shape) {
  if (!r->ntools) return;
  ts_buf_puts(b, shape->open);
  for (size_t i = 0; i < r->ntools; i++) {
    const ts_req_tool *t = &r->tools[i];
    if (i) ts_buf_putc(b, ',');
    ts_buf_puts(b, shape->before);
    ts_buf_puts(b, "\"name\":");
    ts_buf_append_json_string(b, t->name.p, t->name.len);
    ts_buf_puts(b, ",\"description\":");
    ts_buf_append_json_string(b, t->description.p, t->description.len);
    ts_buf_putc(b, ',');
    ts_buf_puts(b, shape->schema);
    ts_buf_append_json_compact(b, t->schema.p, t->schema.len);
    ts_buf_puts(b, shape->after);
  }
  ts_buf_puts(b, shape->close);
}

void ts__provider_tools(ts_buf *b, const ts_request *r, int function_wrapper, const char *schema_key) {
  char schema[64];
  snprintf(schema, sizeof schema, "\"%s\":", schema_key);
  ts__tool_shape shape = {",\"tools\":[", function_wrapper ? "{\"type\":\"function\",\"function\":{" : "{",
                          schema, function_wrapper ? "}}" : "}", "]"};
  ts__provider_tools_as(b, r, &shape);
}

void ts__provider_tool_choice_openai(ts_buf *b, const ts_request *r) {
  if (r->ntools && r->tool_choice) {
    ts_buf_puts(b, ",\"tool_choice\":");
    ts_buf_append_json_string(b, r->tool_choice, strlen(r->tool_choice));
  }
  if (r->ntools && r->parallel_tool_calls >= 0)
    ts_buf_puts(b, r->parallel_tool_calls ? ",\"parallel_tool_calls\":true"
                                          : ",\"parallel_tool_calls\":false");
}

void ts__provider_result_text(ts_buf *b, const ts_req_message *m) {
  if (!m->is_error) {
    ts_buf_append_json_string(b, m->text.p, m->text.len);
    return;
  }
  ts_buf e;
  ts_buf_init(&e, m->text.len + 16);
  ts_buf_puts(&e, "Error: ");
  ts_buf_append(&e, m->text.p, m->text.len);
  if (e.err) b->err = e.err;
  ts_buf_append_json_string(b, e.p ? e.p : "", e.len);
  ts_buf_fini(&e);
}

int ts_provider_request(const ts_provider *p, const ts_request *req, ts_buf *out) {
  if (!p || !p->request || !req || !out) return TS_E_INVAL;
  return p->request(req, out);
}

/* ---- tool schemas in a request -------------------------------------------------------- */

/* Member `path` of object token obj, where the path may be dotted ("inputSchema.json"):
 * each step an object member. -1 when a step is missing. */
static int get_path(const ts_jv *jv, int obj, const char *path) {
  char key[64];
  while (obj >= 0) {
    const char *dot = strchr(path, '.');
    if (!dot) return ts_jv_get(jv, obj, path);
    size_t n = (size_t)(dot - path);
    if (n >= sizeof key) return -1; /* the table's own paths are short */
    memcpy(key, path, n);
    key[n] = '\0';
    obj = ts_jv_get(jv, obj, key);
    path = dot + 1;
  }
  return -1;
}

static const char *array_of(const ts_provider *r) { return r->tools_array ? r->tools_array : "tools"; }

/* The schema of declaration `decl` under location `loc`, reported to fn. */
static void report(const ts_schema_loc *loc, ts_jv *jv, int decl, ts_provider_schema_fn fn,
                   void *user) {
  int sc = -1;
  for (int k = 0; k < 2 && sc < 0 && loc->schema[k]; k++) sc = get_path(jv, decl, loc->schema[k]);
  fn(user, jv, ts_jv_get(jv, decl, "name"), sc);
}

/* 0: a list, 1: a holder, 2: a plain entry. */
static int specificity(const ts_schema_loc *l) { return l->list ? 0 : l->holder ? 1 : 2; }

static int matches(const ts_schema_loc *l, ts_jv *jv, int entry) {
  if (l->list) return ts_jv_type_of(jv, ts_jv_get(jv, entry, l->list)) == TS_JV_ARRAY;
  if (l->holder) return ts_jv_type_of(jv, ts_jv_get(jv, entry, l->holder)) == TS_JV_OBJECT;
  for (int k = 0; k < 2 && l->schema[k]; k++)
    if (get_path(jv, entry, l->schema[k]) >= 0) return 1;
  return 0;
}

static void entry_schemas(const ts_schema_loc *l, ts_jv *jv, int entry, ts_provider_schema_fn fn,
                          void *user) {
  if (l->list) {
    int arr = ts_jv_get(jv, entry, l->list);
    int n = ts_jv_size(jv, arr);
    for (int j = 0, d = ts_jv_first(jv, arr); j < n; j++, d = ts_jv_skip(jv, d)) {
      int decl = l->holder ? ts_jv_get(jv, d, l->holder) : d;
      report(l, jv, decl, fn, user);
    }
  } else {
    report(l, jv, l->holder ? ts_jv_get(jv, entry, l->holder) : entry, fn, user);
  }
}

/* The first location (of p, or of every row by specificity) for the array named `array`
 * that matches `entry`. */
static const ts_schema_loc *pick(const ts_provider *p, const char *array, ts_jv *jv, int entry) {
  for (int spec = 0; spec < 3; spec++) {
    for (size_t i = 0; i < NROWS; i++) {
      const ts_provider *r = p ? p : rows[i];
      if (!strcmp(array_of(r), array))
        for (const ts_schema_loc *l = r->schemas; l && l->schema[0]; l++)
          if (specificity(l) == spec && matches(l, jv, entry)) return l;
      if (p) break;
    }
  }
  return NULL;
}

/* The tool array path of p, or the distinct ones of every row ("tools" first). */
#define MAX_ARRAYS (NROWS + 1)
static int array_names(const ts_provider *p, const char **names) {
  int n = 0;
  if (p) {
    names[0] = array_of(p);
    return 1;
  }
  names[n++] = "tools";
  for (size_t i = 0; i < NROWS; i++) {
    const ts_provider *r = rows[i];
    int k = 0;
    while (k < n && strcmp(names[k], array_of(r))) k++;
    if (k == n) names[n++] = array_of(r);
  }
  return n;
}

int ts_provider_tool_arrays(const ts_provider *p, const ts_jv *jv, int *out, int max) {
  const char *names[MAX_ARRAYS];
  int n = array_names(p, names), got = 0;
  for (int k = 0; k < n && got < max; k++) {
    int arr = get_path(jv, 0, names[k]);
    if (ts_jv_type_of(jv, arr) == TS_JV_ARRAY) out[got++] = arr;
  }
  return got;
}

void ts_provider_tool_schemas(const ts_provider *p, ts_jv *jv, ts_provider_schema_fn fn,
                              void *user) {
  if (!fn) return;
  const char *names[MAX_ARRAYS];
  int na = array_names(p, names);
  for (int a = 0; a < na; a++) {
    int tools = get_path(jv, 0, names[a]);
    if (ts_jv_type_of(jv, tools) != TS_JV_ARRAY) continue;
    int n = ts_jv_size(jv, tools);
    for (int k = 0, t = ts_jv_first(jv, tools); k < n; k++, t = ts_jv_skip(jv, t)) {
      const ts_schema_loc *l = pick(p, names[a], jv, t);
      if (l) entry_schemas(l, jv, t, fn, user);
    }
  }
}
