/*
 * tool_defs.c: see tool_defs.h. The file is parsed once with jsmn (through json_view.h)
 * into a scratch copy, and the fields are copied out.
 */
#include "stream/tool_defs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/json_view.h"

/* Ours, and the keys of the specification's older SubagentToolConfig (a prompt tools entry
 * that configured a child: resumable, immediate, initAgentNameProperty), which tools-spec
 * §5 moved to the agent's side. */
const char *const ts_tool_defs_subagent_keys[] = {"subagents",  "subagent",  "agent",
                                                  "blocking",   "hidden",    "relationship",
                                                  "resumable",  "immediate",
                                                  "initAgentNameProperty", NULL};

static char *dup_view(ts_view v) {
  char *s = malloc(v.len + 1);
  if (!s) return NULL;
  memcpy(s, v.p, v.len);
  s[v.len] = '\0';
  return s;
}

static void def_free(ts_tool_def *d) {
  free(d->name);
  free(d->description);
  free(d->progress_arg);
  free(d->args);
  free(d->annotations);
  for (size_t i = 0; i < d->n_vars; i++) {
    free(d->vars[i].name);
    free(d->vars[i].description);
  }
  free(d->vars);
  memset(d, 0, sizeof *d);
}

const ts_tool_def *ts_tool_defs_find(const ts_tool_defs *defs, const char *name, size_t len) {
  for (size_t i = 0; i < defs->n; i++)
    if (strlen(defs->v[i].name) == len && memcmp(defs->v[i].name, name, len) == 0)
      return &defs->v[i];
  return NULL;
}

static int grow(ts_tool_defs *defs, size_t extra) {
  ts_tool_def *nv = realloc(defs->v, (defs->n + extra) * sizeof *nv);
  if (!nv) return TS_E_NOMEM;
  defs->v = nv;
  return TS_E_OK;
}

static int flag(ts_jv *v, int obj, const char *key, int *out) {
  int i = ts_jv_get(v, obj, key);
  if (i < 0) return 0;
  ts_view raw = ts_jv_raw(v, i);
  if (ts_jv_type_of(v, i) != TS_JV_PRIMITIVE || ts_jv_is_null(v, i) || raw.p[0] == 'n' ||
      (raw.p[0] != 't' && raw.p[0] != 'f'))
    return -1;
  *out = ts_jv_is_true(v, i);
  return 0;
}

/* The "variables" array of definition `d`. */
static int parse_vars(ts_jv *v, int arr, ts_tool_def *d, char *why, size_t why_cap) {
  if (ts_jv_type_of(v, arr) != TS_JV_ARRAY) {
    snprintf(why, why_cap, "tool \"%s\": variables must be an array", d->name);
    return TS_E_INVAL;
  }
  int n = ts_jv_size(v, arr);
  d->has_vars = 1;
  d->vars = n ? calloc((size_t)n, sizeof *d->vars) : NULL;
  if (n && !d->vars) return TS_E_NOMEM;
  int e = ts_jv_first(v, arr);
  for (int k = 0; k < n; k++, e = ts_jv_skip(v, e)) {
    ts_tool_def_var *x = &d->vars[d->n_vars];
    ts_view sv;
    int ni = ts_jv_get(v, e, "name"), ti = ts_jv_get(v, e, "type");
    int di = ts_jv_get(v, e, "description");
    if (ts_jv_type_of(v, e) != TS_JV_OBJECT || ts_jv_type_of(v, ni) != TS_JV_STRING ||
        ts_jv_str(v, ni, &sv) || sv.len == 0) {
      snprintf(why, why_cap, "tool \"%s\": variables[%d] needs a string \"name\"", d->name, k);
      return TS_E_INVAL;
    }
    x->name = dup_view(sv);
    d->n_vars++;
    if (!x->name) return TS_E_NOMEM;
    if (ti >= 0 && !ts_jv_eq(v, ti, "text") && !ts_jv_eq(v, ti, "secret")) {
      snprintf(why, why_cap, "tool \"%s\": variable %s: type must be \"text\" or \"secret\"",
               d->name, x->name);
      return TS_E_INVAL;
    }
    x->secret = ti >= 0 && ts_jv_eq(v, ti, "secret");
    if (flag(v, e, "required", &x->required) || flag(v, e, "scoped", &x->scoped)) {
      snprintf(why, why_cap, "tool \"%s\": variable %s: required and scoped are true or false",
               d->name, x->name);
      return TS_E_INVAL;
    }
    if (di >= 0 && (ts_jv_type_of(v, di) != TS_JV_STRING || ts_jv_str(v, di, &sv))) {
      snprintf(why, why_cap, "tool \"%s\": variable %s: description must be a string", d->name,
               x->name);
      return TS_E_INVAL;
    }
    x->description = dup_view(di >= 0 ? sv : (ts_view){"", 0});
    if (!x->description) return TS_E_NOMEM;
  }
  return TS_E_OK;
}

int ts_tool_defs_parse(ts_tool_defs *defs, const char *text, size_t len, char *why,
                       size_t why_cap) {
  int rc = TS_E_OK;
  size_t start_n = defs->n;
  char *js = malloc(len + 1);
  ts_jv v;
  memset(&v, 0, sizeof v);
  if (!js) return TS_E_NOMEM;
  memcpy(js, text, len);
  js[len] = '\0';
  /* A token per 2 bytes is the most JSON text can hold. */
  size_t cap = len / 2 + 2;
  if (cap > 1u << 24) {
    snprintf(why, why_cap, "tools file too large (%zu bytes; at most 32 MiB)", len);
    free(js);
    return TS_E_LIMIT;
  }
  if (ts_jv_init(&v, (int)cap) != TS_E_OK) {
    free(js);
    return TS_E_NOMEM;
  }
  if (ts_jv_parse(&v, js, len) < 0) {
    snprintf(why, why_cap, "not valid JSON");
    rc = TS_E_JV_BAD_JSON;
    goto out;
  }
  if (ts_jv_type_of(&v, 0) != TS_JV_ARRAY) {
    snprintf(why, why_cap, "expected a JSON array of tool definitions");
    rc = TS_E_INVAL;
    goto out;
  }
  int n = ts_jv_size(&v, 0);
  if (grow(defs, (size_t)n + 1)) {
    rc = TS_E_NOMEM;
    goto out;
  }
  int i = ts_jv_first(&v, 0);
  for (int k = 0; k < n; k++, i = ts_jv_skip(&v, i)) {
    if (ts_jv_type_of(&v, i) != TS_JV_OBJECT) {
      snprintf(why, why_cap, "tool definition %d is not an object", k);
      rc = TS_E_INVAL;
      goto out;
    }
    ts_view name, sv;
    int ni = ts_jv_get(&v, i, "name");
    if (ts_jv_type_of(&v, ni) != TS_JV_STRING || ts_jv_str(&v, ni, &name) || name.len == 0) {
      snprintf(why, why_cap, "tool definition %d has no string \"name\"", k);
      rc = TS_E_INVAL;
      goto out;
    }
    if (ts_tool_defs_find(defs, name.p, name.len)) {
      snprintf(why, why_cap, "duplicate tool name \"%.*s\"", (int)(name.len > 64 ? 64 : name.len),
               name.p);
      rc = TS_E_INVAL;
      goto out;
    }
    for (const char *const *sk = ts_tool_defs_subagent_keys; *sk; sk++) {
      if (ts_jv_get(&v, i, *sk) < 0) continue;
      snprintf(why, why_cap,
               "tool \"%.*s\" configures a subagent relationship (\"%s\"): relationships are "
               "declared on an agent's side (sideA/sideB \"subagents\" of an agent definition, "
               "run --agent), not on a tool (tools-spec \xC2\xA7" "5)",
               (int)(name.len > 64 ? 64 : name.len), name.p, *sk);
      for (char *w = why; w < why + why_cap && *w; w++) /* one line, whatever the name holds */
        if ((unsigned char)*w < 0x20) *w = '?';
      rc = TS_E_INVAL;
      goto out;
    }
    ts_tool_def d;
    memset(&d, 0, sizeof d);
    d.name = dup_view(name);
    int di = ts_jv_get(&v, i, "description");
    if (ts_jv_type_of(&v, di) == TS_JV_STRING && ts_jv_str(&v, di, &sv) == TS_E_OK)
      d.description = dup_view(sv);
    else
      d.description = dup_view((ts_view){"", 0});
    int pi = ts_jv_get(&v, i, "progressArgument");
    if (pi >= 0 && !ts_jv_is_null(&v, pi)) {
      if (ts_jv_type_of(&v, pi) != TS_JV_STRING || ts_jv_str(&v, pi, &sv)) {
        snprintf(why, why_cap, "tool \"%s\": progressArgument must be a string", d.name);
        def_free(&d);
        rc = TS_E_INVAL;
        goto out;
      }
      d.progress_arg = dup_view(sv);
    }
    int ai = ts_jv_get(&v, i, "args");
    if (ai >= 0) d.args = dup_view(ts_jv_raw(&v, ai));
    int an = ts_jv_get(&v, i, "annotations");
    if (an >= 0) d.annotations = dup_view(ts_jv_raw(&v, an));
    int vi = ts_jv_get(&v, i, "variables");
    if (vi >= 0 && (rc = parse_vars(&v, vi, &d, why, why_cap))) {
      def_free(&d);
      goto out;
    }
    if (!d.name || !d.description || (pi >= 0 && !ts_jv_is_null(&v, pi) && !d.progress_arg) ||
        (ai >= 0 && !d.args) || (an >= 0 && !d.annotations)) {
      def_free(&d);
      rc = TS_E_NOMEM;
      goto out;
    }
    defs->v[defs->n++] = d;
  }
out:
  if (rc) {
    while (defs->n > start_n) def_free(&defs->v[--defs->n]);
  }
  ts_jv_fini(&v);
  free(js);
  return rc;
}

int ts_tool_defs_set_progress(ts_tool_defs *defs, const char *name, const char *arg) {
  char *a = strdup(arg);
  if (!a) return TS_E_NOMEM;
  for (size_t i = 0; i < defs->n; i++) {
    if (strcmp(defs->v[i].name, name) == 0) {
      free(defs->v[i].progress_arg);
      defs->v[i].progress_arg = a;
      return TS_E_OK;
    }
  }
  ts_tool_def d;
  memset(&d, 0, sizeof d);
  d.name = strdup(name);
  d.description = strdup("");
  d.progress_arg = a;
  if (!d.name || !d.description || grow(defs, 1)) {
    def_free(&d);
    return TS_E_NOMEM;
  }
  defs->v[defs->n++] = d;
  return TS_E_OK;
}

void ts_tool_defs_free(ts_tool_defs *defs) {
  for (size_t i = 0; i < defs->n; i++) def_free(&defs->v[i]);
  free(defs->v);
  defs->v = NULL;
  defs->n = 0;
}
