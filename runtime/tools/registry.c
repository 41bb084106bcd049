/*
 * tools.c: see tools.h. A flat array of tools (a turn calls a handful; a registry holds
 * tens), each owning copies of its strings and its compiled schema.
 */
#include "tools/registry.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/definitions.h"
#include "tools/schema.h"
#include "base/strbuf.h"

struct ts_tool {
  char *name, *description, *args_schema, *progress_arg, *annotations;
  ts_schema *schema;
  ts_var_def *vars;
  size_t n_vars;
  int idempotent;
  ts_tool_fn execute;
  ts_tool_started_fn on_started;
  void *user;
  void (*user_free)(void *user);
};

struct ts_registry {
  ts_tool **v;
  size_t n, cap;
};

void ts_tool_result_json(ts_tool_result *r, const char *json, size_t len) {
  ts_tool_result_free(r);
  r->text = malloc(len + 1);
  if (!r->text) {
    r->is_error = 1;
    return;
  }
  memcpy(r->text, json, len);
  r->text[len] = '\0';
  r->len = len;
  r->is_error = 0;
}

void ts_tool_result_string(ts_tool_result *r, const char *s, size_t len) {
  ts_buf b;
  ts_buf_init(&b, (size_t)1 << 30);
  ts_buf_append_json_string(&b, s, len);
  ts_tool_result_free(r);
  if (b.err) {
    ts_buf_fini(&b);
    ts_tool_result_error(r, "out of memory");
    return;
  }
  r->text = b.p;
  r->len = b.len;
  r->is_error = 0;
}

void ts_tool_result_error(ts_tool_result *r, const char *fmt, ...) {
  ts_tool_result_free(r);
  r->is_error = 1;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (n < 0) n = 0;
  if ((size_t)n >= sizeof msg) n = sizeof msg - 1;
  r->text = malloc((size_t)n + 1);
  if (!r->text) return;
  memcpy(r->text, msg, (size_t)n + 1);
  r->len = (size_t)n;
}

void ts_tool_result_suspend(ts_tool_result *r, int code, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ts_tool_result_error(r, "%s", msg);
  r->suspended = code ? code : TS_E_ABORTED;
}

void ts_tool_result_free(ts_tool_result *r) {
  free(r->text);
  r->text = NULL;
  r->len = 0;
  r->suspended = 0;
}

ts_registry *ts_registry_new(void) { return calloc(1, sizeof(ts_registry)); }

static void tool_free(ts_tool *t) {
  if (!t) return;
  free(t->name);
  free(t->description);
  free(t->args_schema);
  free(t->progress_arg);
  free(t->annotations);
  for (size_t i = 0; i < t->n_vars; i++) {
    free((char *)t->vars[i].name);
    free((char *)t->vars[i].description);
  }
  free(t->vars);
  if (t->user_free) t->user_free(t->user);
  ts_schema_free(t->schema);
  free(t);
}

void ts_registry_free(ts_registry *r) {
  if (!r) return;
  for (size_t i = 0; i < r->n; i++) tool_free(r->v[i]);
  free(r->v);
  free(r);
}

static char *dup_or_null(const char *s, int *oom) {
  if (!s) return NULL;
  char *d = strdup(s);
  if (!d) *oom = 1;
  return d;
}

/* Builds a tool from `spec`, checking everything but the name's uniqueness. */
static int make_tool(const ts_tool_spec *spec, ts_tool **out, char *why, size_t why_cap) {
  *out = NULL;
  if (!spec || !spec->name || !spec->name[0]) {
    snprintf(why, why_cap, "a tool needs a name");
    return TS_E_INVAL;
  }
  if (ts_defs_name_reserved(spec->name, strlen(spec->name)) && !spec->lifecycle) {
    snprintf(why, why_cap, "tool name \"%s\" is reserved for subagent relationships",
             spec->name);
    return TS_E_INVAL;
  }
  ts_tool *t = calloc(1, sizeof *t);
  if (!t) return TS_E_NOMEM;
  int oom = 0;
  t->name = dup_or_null(spec->name, &oom);
  t->description = dup_or_null(spec->description ? spec->description : "", &oom);
  t->args_schema = dup_or_null(spec->args_schema, &oom);
  t->progress_arg = dup_or_null(spec->progress_arg, &oom);
  t->annotations = dup_or_null(spec->annotations, &oom);
  t->idempotent = spec->idempotent;
  t->execute = spec->execute;
  t->on_started = spec->on_started;
  t->user = spec->user;
  if (spec->n_vars && !(t->vars = calloc(spec->n_vars, sizeof *t->vars))) oom = 1;
  for (size_t i = 0; t->vars && i < spec->n_vars; i++) {
    const ts_var_def *d = &spec->vars[i];
    ts_var_def *c = &t->vars[t->n_vars++];
    *c = *d;
    c->name = dup_or_null(d->name ? d->name : "", &oom);
    c->description = dup_or_null(d->description ? d->description : "", &oom);
  }
  if (oom) {
    tool_free(t);
    return TS_E_NOMEM;
  }
  if (t->args_schema) {
    char reason[256] = "";
    int rc = ts_schema_compile(t->args_schema, strlen(t->args_schema), 0, &t->schema, reason,
                               sizeof reason);
    if (rc != TS_E_OK) {
      if (rc == TS_E_NOMEM)
        snprintf(why, why_cap, "tool \"%s\": out of memory", t->name);
      else
        snprintf(why, why_cap, "tool \"%s\": malformed argument schema: %s", t->name, reason);
      tool_free(t);
      return rc == TS_E_NOMEM ? TS_E_NOMEM : TS_E_INVAL;
    }
  }
  for (size_t i = 0; i < t->n_vars; i++) {
    const ts_var_def *d = &t->vars[i];
    const char *bad = !ts_store_var_name_valid(d->name) ? "is not a variable name (a letter or "
                                                          "_, then letters, digits, _ . -)"
                      : d->type != TS_VAR_TEXT && d->type != TS_VAR_SECRET ? "has an unknown type"
                                                                          : NULL;
    for (size_t k = 0; !bad && k < i; k++)
      if (!strcmp(t->vars[k].name, d->name)) bad = "is declared twice";
    if (bad) {
      snprintf(why, why_cap, "tool \"%s\": variable \"%.128s\" %s", t->name, d->name, bad);
      tool_free(t);
      return TS_E_INVAL;
    }
  }
  if (t->progress_arg && (!t->schema || !ts_schema_has_property(t->schema, t->progress_arg))) {
    snprintf(why, why_cap,
             "tool \"%s\": progressArgument \"%s\" is not a declared top-level property of its "
             "arguments",
             t->name, t->progress_arg);
    tool_free(t);
    return TS_E_INVAL;
  }
  *out = t;
  return TS_E_OK;
}

static int push(ts_registry *r, ts_tool *t) {
  if (r->n == r->cap) {
    size_t cap = r->cap ? r->cap * 2 : 16;
    ts_tool **v = realloc(r->v, cap * sizeof *v);
    if (!v) return TS_E_NOMEM;
    r->v = v;
    r->cap = cap;
  }
  r->v[r->n++] = t;
  return TS_E_OK;
}

int ts_registry_add(ts_registry *r, const ts_tool_spec *spec, char *why, size_t why_cap) {
  if (!r) return TS_E_INVAL;
  if (spec && spec->name && ts_registry_find(r, spec->name, strlen(spec->name))) {
    snprintf(why, why_cap, "duplicate tool name \"%s\"", spec->name);
    return TS_E_INVAL;
  }
  ts_tool *t;
  int rc = make_tool(spec, &t, why, why_cap);
  if (rc) return rc;
  if ((rc = push(r, t))) tool_free(t);
  else t->user_free = spec->user_free; /* ownership moves only on success */
  return rc;
}

int ts_registry_add_defs(ts_registry *r, const ts_tool_defs *defs, char *why, size_t why_cap) {
  for (size_t i = 0; i < defs->n; i++) {
    const ts_tool_def *d = &defs->v[i];
    ts_tool_spec spec = {.name = d->name,
                         .description = d->description,
                         .args_schema = d->args,
                         .progress_arg = d->progress_arg,
                         .annotations = d->annotations};
    ts_var_def vars[64];
    if (d->n_vars > 64) {
      snprintf(why, why_cap, "tool \"%s\": more than 64 variables", d->name);
      return TS_E_LIMIT;
    }
    for (size_t k = 0; k < d->n_vars; k++)
      vars[k] = (ts_var_def){d->vars[k].name, d->vars[k].secret ? TS_VAR_SECRET : TS_VAR_TEXT,
                             d->vars[k].required, d->vars[k].scoped, d->vars[k].description};
    spec.vars = vars;
    spec.n_vars = d->n_vars;
    size_t at = r->n;
    for (size_t k = 0; k < r->n; k++) {
      if (!strcmp(r->v[k]->name, d->name)) { /* a C tool the file describes */
        spec.execute = r->v[k]->execute;
        spec.on_started = r->v[k]->on_started;
        spec.user = r->v[k]->user;
        spec.idempotent = r->v[k]->idempotent;
        spec.user_free = r->v[k]->user_free;
        if (!d->has_vars) {
          spec.vars = r->v[k]->vars;
          spec.n_vars = r->v[k]->n_vars;
        }
        at = k;
      }
    }
    ts_tool *t;
    int rc = make_tool(&spec, &t, why, why_cap);
    if (rc) return rc;
    t->user_free = spec.user_free;
    if (at < r->n) {
      r->v[at]->user_free = NULL; /* its user now belongs to the replacement */
      tool_free(r->v[at]);
      r->v[at] = t;
    } else if ((rc = push(r, t))) {
      tool_free(t);
      return rc;
    }
  }
  return TS_E_OK;
}

int ts_call_queue_push(ts_call_queue *q, const char *tool, const char *args, size_t args_len,
                       const char *queued_by) {
  size_t limit = q->limit ? q->limit : TS_CALL_QUEUE_MAX;
  if (q->n >= limit) return TS_E_LIMIT;
  if (q->n == q->cap) {
    size_t cap = q->cap ? q->cap * 2 : 8;
    ts_queued_call *v = realloc(q->v, cap * sizeof *v);
    if (!v) return TS_E_NOMEM;
    q->v = v;
    q->cap = cap;
  }
  ts_queued_call *c = &q->v[q->n];
  c->tool = strdup(tool);
  c->args = malloc(args_len + 1);
  c->queued_by = strdup(queued_by ? queued_by : "");
  if (!c->tool || !c->args || !c->queued_by) {
    free(c->tool);
    free(c->args);
    free(c->queued_by);
    return TS_E_NOMEM;
  }
  memcpy(c->args, args, args_len);
  c->args[args_len] = '\0';
  c->args_len = args_len;
  q->n++;
  return TS_E_OK;
}

void ts_call_queue_fini(ts_call_queue *q) {
  for (size_t i = 0; i < q->n; i++) {
    free(q->v[i].tool);
    free(q->v[i].args);
    free(q->v[i].queued_by);
  }
  free(q->v);
  size_t limit = q->limit;
  memset(q, 0, sizeof *q);
  q->limit = limit;
}

const ts_tool *ts_registry_find(const ts_registry *r, const char *name, size_t len) {
  for (size_t i = 0; i < r->n; i++)
    if (strlen(r->v[i]->name) == len && !memcmp(r->v[i]->name, name, len)) return r->v[i];
  return NULL;
}

size_t ts_registry_count(const ts_registry *r) { return r->n; }
const ts_tool *ts_registry_at(const ts_registry *r, size_t i) { return i < r->n ? r->v[i] : NULL; }
const char *ts_tool_name(const ts_tool *t) { return t->name; }
const char *ts_tool_description(const ts_tool *t) { return t->description; }
const char *ts_tool_args_schema(const ts_tool *t) { return t->args_schema; }
const char *ts_tool_progress_arg(const ts_tool *t) { return t->progress_arg; }
const char *ts_tool_annotations(const ts_tool *t) { return t->annotations; }
int ts_tool_idempotent(const ts_tool *t) { return t->idempotent; }
const ts_var_def *ts_tool_vars(const ts_tool *t, size_t *n) {
  *n = t->n_vars;
  return t->vars;
}
const ts_var_def *ts_tool_var(const ts_tool *t, const char *name) {
  for (size_t i = 0; name && i < t->n_vars; i++)
    if (!strcmp(t->vars[i].name, name)) return &t->vars[i];
  return NULL;
}
void *ts_tool_user_of(const ts_tool *t, ts_tool_fn execute) {
  return t && execute && t->execute == execute ? t->user : NULL;
}

int ts_tool_call_started(const ts_tool *t, const char *event_json, size_t len, char *why,
                         size_t why_cap) {
  if (!t || !t->on_started) return 0;
  int rc = t->on_started(t->user, event_json, len, why, why_cap);
  return rc ? rc : 1;
}

int ts_tool_validate(const ts_tool *t, const char *args, size_t len, char *why, size_t why_cap) {
  if (!t->schema) return TS_E_OK;
  return ts_schema_validate(t->schema, args, len, why, why_cap);
}

void ts_tool_execute(const ts_tool *t, const ts_call_info *call, const char *args, size_t len,
                     ts_tool_result *out) {
  memset(out, 0, sizeof *out);
  if (!t->execute) {
    ts_tool_result_error(out, "tool \"%s\" has no implementation in this runtime", t->name);
    return;
  }
  t->execute(t->user, call, args, len, out);
  if (!out->text) {
    int was_error = out->is_error;
    ts_tool_result_error(out, was_error ? "tool failed without a message"
                                        : "tool returned no result");
  }
}
