/*
 * definitions.c: see definitions.h. Prompt and agent definitions: one parser for every
 * source (JSON files; JavaScript modules hand their definePrompt/defineAgent objects here
 * as JSON), then one pass of definition-time rules over the whole set.
 *
 * Why two steps. A definition names others (a prompt's tools, an agent's sides, a
 * relationship's agent) that may come from a later file or module, so names can only be
 * resolved once everything is loaded: ts_defs_add_json checks what one text can say about
 * itself (its shape, its keys, its types, a schema that compiles, a subagent key in a
 * prompt's tools entry), ts_defs_check everything that needs the others and the registry.
 *
 * Parsing. The text is copied (json_view decodes strings in place) and tokenized once;
 * every object's keys are walked against the list its shape allows, so a typo
 * ("toolDescripton") is an error naming the key instead of a silently missing value. The
 * definitions of one text are built aside and appended only when all of it parsed, so a
 * failing text adds nothing. Definitions are held by pointer: a pointer handed out by
 * ts_defs_find_* stays valid while more are added.
 *
 * Cycles. "P calls Q" is a nested activation that must end before P goes on: P lists
 * prompt Q in its tools, or lists an exposed dual_ai agent whose sides run Q. A cycle in
 * that graph is a recursion nothing bounds, and is refused. An exposed ai_human agent
 * called by a prompt is a handoff (the same thread passes on, nothing nests), so it adds
 * no edge: triage agents that hand back and forth are fine. Included prompt parts form a
 * graph of their own, in which any cycle would make the system text infinite. Both walks
 * are iterative (an explicit stack), so a long chain cannot exhaust the C stack.
 */
#include "tools/definitions.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/file.h"
#include "store/store.h"
#include "stream/json_view.h"
#include "stream/tool_defs.h"
#include "tools/schema.h"

/* A definitions text is configuration, never data: 16 MiB is far past any real one. */
#define DEFS_TEXT_MAX ((size_t)16 << 20)

/* Definitions in the order they were added (for _at), and their indices sorted by name
 * (for lookups: a check looks names up once per tools entry). */
struct ts_defs {
  ts_defs_prompt **prompts;
  size_t n_prompts, cap_prompts;
  ts_defs_agent **agents;
  size_t n_agents, cap_agents;
  size_t *p_sorted, *a_sorted; /* capacity: cap_prompts, cap_agents */
};

static const char *const reserved_names[] = {"subagents", "subagent_create", "subagent_message"};

int ts_defs_name_reserved(const char *name, size_t len) {
  for (size_t i = 0; i < sizeof reserved_names / sizeof reserved_names[0]; i++)
    if (strlen(reserved_names[i]) == len && !memcmp(reserved_names[i], name, len)) return 1;
  return 0;
}

/* snake_case: [a-z][a-z0-9_]*, at most TS_DEFS_NAME_MAX bytes. */
static int snake(const char *s) {
  size_t n = strlen(s);
  if (!n || n > TS_DEFS_NAME_MAX || s[0] < 'a' || s[0] > 'z') return 0;
  for (size_t i = 1; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_')) return 0;
  return 1;
}

/* ---- freeing ------------------------------------------------------------------------ */

static void free_list(char **v, size_t n) {
  for (size_t i = 0; i < n; i++) free(v[i]);
  free(v);
}

static void free_vars(ts_var_def *v, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free((char *)v[i].name);
    free((char *)v[i].description);
  }
  free(v);
}

static void prompt_free(ts_defs_prompt *p) {
  if (!p) return;
  free(p->name);
  free(p->file);
  free(p->tool_description);
  free(p->description);
  for (size_t i = 0; i < p->n_parts; i++) free(p->parts[i].text);
  free(p->parts);
  free(p->model);
  for (size_t i = 0; i < p->n_tools; i++) {
    ts_defs_tool_entry *e = &p->tools[i];
    free(e->name);
    free(e->sub.init_user_message_property);
    free(e->sub.init_attachments_property);
    free_list(e->env, e->n_env);
    free(e->options_json);
  }
  free(p->tools);
  free(p->required_schema);
  free_vars(p->vars, p->n_vars);
  free_list(p->env, p->n_env);
  free(p);
}

static void side_fini(ts_defs_side *s) {
  free(s->prompt);
  free_list(s->stop_tools, s->n_stop_tools);
  free_list(s->fail_tools, s->n_fail_tools);
  for (size_t i = 0; i < s->n_subagents; i++) {
    free(s->subagents[i].agent);
    free(s->subagents[i].name);
    free(s->subagents[i].description);
  }
  free(s->subagents);
}

static void agent_free(ts_defs_agent *a) {
  if (!a) return;
  free(a->name);
  free(a->file);
  free(a->description);
  side_fini(&a->side_a);
  side_fini(&a->side_b);
  free(a->tool_description);
  free_list(a->env, a->n_env);
  free_vars(a->vars, a->n_vars);
  free(a);
}

ts_defs *ts_defs_new(void) { return calloc(1, sizeof(ts_defs)); }

void ts_defs_free(ts_defs *d) {
  if (!d) return;
  for (size_t i = 0; i < d->n_prompts; i++) prompt_free(d->prompts[i]);
  for (size_t i = 0; i < d->n_agents; i++) agent_free(d->agents[i]);
  free(d->prompts);
  free(d->agents);
  free(d->p_sorted);
  free(d->a_sorted);
  free(d);
}

/* ---- reading one text ------------------------------------------------------------- */

typedef struct {
  ts_jv v;
  const char *file;
  char *why;
  size_t why_cap;
  char entry[TS_DEFS_NAME_MAX + 32]; /* "prompt \"coder\"" or "definition 3" */
  int rc;                            /* the first error (sticky) */
} pctx;

/* A reason is one line: a control byte from the text (a raw newline in a key, which the
 * tokenizer does not refuse) is shown as '?'. */
static void one_line(char *s) {
  for (; *s; s++)
    if ((unsigned char)*s < 0x20 || *s == 0x7f) *s = '?';
}

/* Records the first error: "<file>: <entry>: <message>" (no "<file>: " for ""). */
__attribute__((format(printf, 3, 4))) static int fail(pctx *c, int rc, const char *fmt, ...) {
  if (c->rc) return c->rc;
  c->rc = rc;
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (rc == TS_E_NOMEM)
    snprintf(c->why, c->why_cap, "out of memory");
  else
    snprintf(c->why, c->why_cap, "%s%s%s%s%s", c->file[0] ? c->file : "", c->file[0] ? ": " : "",
             c->entry, c->entry[0] ? ": " : "", msg);
  one_line(c->why);
  return rc;
}

static char *dup_view(pctx *c, ts_view s) {
  char *p = malloc(s.len + 1);
  if (!p) {
    fail(c, TS_E_NOMEM, "out of memory");
    return NULL;
  }
  memcpy(p, s.p, s.len);
  p[s.len] = '\0';
  return p;
}

/* A string member: 1 with a copy in *out, 0 when absent, or the error. An empty string
 * is refused when `nonempty`. */
static int get_string(pctx *c, int obj, const char *key, int nonempty, char **out) {
  int i = ts_jv_get(&c->v, obj, key);
  if (i < 0) return 0;
  ts_view s;
  if (ts_jv_type_of(&c->v, i) != TS_JV_STRING || ts_jv_str(&c->v, i, &s) != TS_E_OK)
    return fail(c, TS_E_INVAL, "\"%s\" must be a string", key);
  if (nonempty && !s.len) return fail(c, TS_E_INVAL, "\"%s\" must not be empty", key);
  if (memchr(s.p, '\0', s.len)) return fail(c, TS_E_INVAL, "\"%s\" holds a NUL character", key);
  *out = dup_view(c, s);
  return *out ? 1 : c->rc;
}

/* A boolean member: 0 (absent: *out untouched, or set), or the error. */
static int get_bool(pctx *c, int obj, const char *key, int *out) {
  int i = ts_jv_get(&c->v, obj, key);
  if (i < 0) return 0;
  ts_view raw = ts_jv_raw(&c->v, i);
  if (ts_jv_type_of(&c->v, i) != TS_JV_PRIMITIVE || !raw.len || (raw.p[0] != 't' && raw.p[0] != 'f'))
    return fail(c, TS_E_INVAL, "\"%s\" must be true or false", key);
  *out = raw.p[0] == 't';
  return 0;
}

/* Fields the specification defines that this runtime has nothing behind (extended
 * thinking, provider pass-through options, hooks by id): refused by name, so that a
 * definition is not run as if they had taken effect, and the message says it is no typo. */
static const char *const unsupported_keys[] = {"reasoning", "providerOptions", "hooks", NULL};

/* Refuses a key of `obj` not in `allowed` (NULL-terminated) and a key given twice. */
static int check_keys(pctx *c, int obj, const char *const *allowed, const char *what) {
  int n = ts_jv_size(&c->v, obj);
  int k = obj + 1;
  for (int m = 0; m < n; m++, k = ts_jv_skip(&c->v, k + 1)) {
    int ok = 0, known = 0;
    for (const char *const *a = allowed; *a && !ok; a++) ok = ts_jv_eq(&c->v, k, *a);
    for (const char *const *a = unsupported_keys; *a && !ok && !known; a++)
      known = ts_jv_eq(&c->v, k, *a);
    ts_view raw = ts_jv_raw(&c->v, k);
    int shown = raw.len > 66 ? 64 : (int)raw.len - 2;
    if (known)
      return fail(c, TS_E_INVAL,
                  "\"%.*s\" in %s is a field of the specification that toolstream does not "
                  "support (nothing would act on it): leave it out",
                  shown, raw.p + 1, what);
    if (!ok)
      return fail(c, TS_E_INVAL, "unknown key \"%.*s\" in %s", shown, raw.p + 1, what);
    for (int j = obj + 1, q = 0; q < m; q++, j = ts_jv_skip(&c->v, j + 1)) {
      ts_view o = ts_jv_raw(&c->v, j);
      if (o.len == raw.len && !memcmp(o.p, raw.p, raw.len))
        return fail(c, TS_E_INVAL, "key \"%.*s\" given twice in %s", shown, raw.p + 1, what);
    }
  }
  return 0;
}

/* An array member of strings: the count (absent: 0), or the error. */
static int get_names(pctx *c, int obj, const char *key, char ***out, size_t *n) {
  int arr = ts_jv_get(&c->v, obj, key);
  if (arr < 0) return 0;
  if (ts_jv_type_of(&c->v, arr) != TS_JV_ARRAY)
    return fail(c, TS_E_INVAL, "\"%s\" must be an array of names", key);
  int cnt = ts_jv_size(&c->v, arr);
  if (cnt > TS_DEFS_MAX_LIST)
    return fail(c, TS_E_LIMIT, "\"%s\" lists more than %d names", key, TS_DEFS_MAX_LIST);
  if (!cnt) return 0;
  *out = calloc((size_t)cnt, sizeof **out);
  if (!*out) return fail(c, TS_E_NOMEM, "out of memory");
  int e = ts_jv_first(&c->v, arr);
  for (int k = 0; k < cnt; k++, e = ts_jv_skip(&c->v, e)) {
    ts_view s;
    if (ts_jv_type_of(&c->v, e) != TS_JV_STRING || ts_jv_str(&c->v, e, &s) || !s.len ||
        memchr(s.p, '\0', s.len))
      return fail(c, TS_E_INVAL, "\"%s\"[%d] must be a non-empty string", key, k);
    if (!((*out)[k] = dup_view(c, s))) return c->rc;
    (*n)++;
  }
  return 0;
}

/* "env": {"NAME": value} into "NAME=VALUE" strings; a value is a string, a number or a
 * boolean (as written). */
static int get_env(pctx *c, int obj, char ***out, size_t *n) {
  int o = ts_jv_get(&c->v, obj, "env");
  if (o < 0) return 0;
  if (ts_jv_type_of(&c->v, o) != TS_JV_OBJECT)
    return fail(c, TS_E_INVAL, "\"env\" must be an object of NAME: value");
  int cnt = ts_jv_size(&c->v, o);
  if (cnt > TS_DEFS_MAX_LIST)
    return fail(c, TS_E_LIMIT, "\"env\" holds more than %d values", TS_DEFS_MAX_LIST);
  if (!cnt) return 0;
  *out = calloc((size_t)cnt, sizeof **out);
  if (!*out) return fail(c, TS_E_NOMEM, "out of memory");
  int k = o + 1;
  for (int m = 0; m < cnt; m++, k = ts_jv_skip(&c->v, k + 1)) {
    ts_view name, val;
    int vi = k + 1;
    if (ts_jv_str(&c->v, k, &name) != TS_E_OK || memchr(name.p, '\0', name.len))
      return fail(c, TS_E_INVAL, "\"env\": a malformed name");
    char nm[TS_STORE_VAR_NAME_MAX + 2];
    snprintf(nm, sizeof nm, "%.*s", (int)(name.len < sizeof nm ? name.len : sizeof nm - 1),
             name.p);
    if (name.len >= sizeof nm || !ts_store_var_name_valid(nm))
      return fail(c, TS_E_INVAL, "\"env\": \"%.*s\" is not a variable name", (int)(name.len > 64 ? 64 : name.len),
                  name.p);
    ts_jv_type t = ts_jv_type_of(&c->v, vi);
    if (t == TS_JV_STRING) {
      if (ts_jv_str(&c->v, vi, &val) != TS_E_OK || memchr(val.p, '\0', val.len))
        return fail(c, TS_E_INVAL, "\"env\": %s: a malformed string", nm);
    } else if (t == TS_JV_PRIMITIVE && !ts_jv_is_null(&c->v, vi)) {
      val = ts_jv_raw(&c->v, vi);
    } else {
      return fail(c, TS_E_INVAL, "\"env\": %s must be a string, a number or a boolean", nm);
    }
    for (size_t j = 0; j < *n; j++)
      if (!strncmp((*out)[j], nm, strlen(nm)) && (*out)[j][strlen(nm)] == '=')
        return fail(c, TS_E_INVAL, "\"env\": %s given twice", nm);
    size_t nl = strlen(nm);
    char *kv = malloc(nl + 1 + val.len + 1);
    if (!kv) return fail(c, TS_E_NOMEM, "out of memory");
    memcpy(kv, nm, nl);
    kv[nl] = '=';
    memcpy(kv + nl + 1, val.p, val.len);
    kv[nl + 1 + val.len] = '\0';
    (*out)[(*n)++] = kv;
  }
  return 0;
}

static const char *const var_keys[] = {"name", "type", "required", "scoped", "description", NULL};

/* "variables": [VariableDefinition...] (tools-spec §3). */
static int get_vars(pctx *c, int obj, ts_var_def **out, size_t *n) {
  int arr = ts_jv_get(&c->v, obj, "variables");
  if (arr < 0) return 0;
  if (ts_jv_type_of(&c->v, arr) != TS_JV_ARRAY)
    return fail(c, TS_E_INVAL, "\"variables\" must be an array");
  int cnt = ts_jv_size(&c->v, arr);
  if (cnt > TS_DEFS_MAX_LIST)
    return fail(c, TS_E_LIMIT, "\"variables\" declares more than %d", TS_DEFS_MAX_LIST);
  if (!cnt) return 0;
  *out = calloc((size_t)cnt, sizeof **out);
  if (!*out) return fail(c, TS_E_NOMEM, "out of memory");
  int e = ts_jv_first(&c->v, arr);
  for (int k = 0; k < cnt; k++, e = ts_jv_skip(&c->v, e)) {
    char what[32];
    snprintf(what, sizeof what, "variables[%d]", k);
    if (ts_jv_type_of(&c->v, e) != TS_JV_OBJECT)
      return fail(c, TS_E_INVAL, "%s must be an object", what);
    if (check_keys(c, e, var_keys, what)) return c->rc;
    ts_var_def *x = &(*out)[(*n)++];
    char *name = NULL, *type = NULL, *desc = NULL;
    if (get_string(c, e, "name", 1, &name) < 0) return c->rc;
    x->name = name;
    if (!name) return fail(c, TS_E_INVAL, "%s needs a \"name\"", what);
    if (!ts_store_var_name_valid(name))
      return fail(c, TS_E_INVAL, "%s: \"%s\" is not a variable name", what, name);
    for (size_t j = 0; j + 1 < *n; j++)
      if (!strcmp((*out)[j].name, name))
        return fail(c, TS_E_INVAL, "variable %s declared twice", name);
    if (get_string(c, e, "description", 0, &desc) < 0) return c->rc;
    x->description = desc;
    if (get_string(c, e, "type", 0, &type) < 0) return c->rc;
    if (type && strcmp(type, "text") && strcmp(type, "secret")) {
      free(type);
      return fail(c, TS_E_INVAL, "variable %s: \"type\" must be \"text\" or \"secret\"", name);
    }
    x->type = type && !strcmp(type, "secret") ? TS_VAR_SECRET : TS_VAR_TEXT;
    free(type);
    if (get_bool(c, e, "required", &x->required) || get_bool(c, e, "scoped", &x->scoped))
      return c->rc;
  }
  return 0;
}

/* "prompt": "text" | [part...] */
static int get_parts(pctx *c, int obj, ts_defs_prompt *p) {
  int i = ts_jv_get(&c->v, obj, "prompt");
  if (i < 0) return 0;
  ts_jv_type t = ts_jv_type_of(&c->v, i);
  int cnt = t == TS_JV_STRING ? 1 : t == TS_JV_ARRAY ? ts_jv_size(&c->v, i) : -1;
  if (cnt < 0) return fail(c, TS_E_INVAL, "\"prompt\" must be a string or an array of parts");
  if (cnt > TS_DEFS_MAX_LIST)
    return fail(c, TS_E_LIMIT, "\"prompt\" has more than %d parts", TS_DEFS_MAX_LIST);
  if (!cnt) return 0;
  p->parts = calloc((size_t)cnt, sizeof *p->parts);
  if (!p->parts) return fail(c, TS_E_NOMEM, "out of memory");
  int e = t == TS_JV_STRING ? i : ts_jv_first(&c->v, i);
  for (int k = 0; k < cnt; k++, e = ts_jv_skip(&c->v, e)) {
    ts_defs_part *part = &p->parts[p->n_parts];
    ts_view s;
    if (ts_jv_type_of(&c->v, e) == TS_JV_STRING) {
      if (ts_jv_str(&c->v, e, &s) != TS_E_OK || memchr(s.p, '\0', s.len))
        return fail(c, TS_E_INVAL, "\"prompt\": part %d is a malformed string", k);
      part->kind = TS_DEFS_PART_TEXT;
      if (!(part->text = dup_view(c, s))) return c->rc;
      p->n_parts++;
      continue;
    }
    if (ts_jv_type_of(&c->v, e) != TS_JV_OBJECT)
      return fail(c, TS_E_INVAL, "\"prompt\": part %d must be a string or an object", k);
    /* Each kind has two spellings of its value: ours ("text", "name") and the
     * specification's documentation's ({"type":"text","content"}, {"type":"include",
     * "prompt"}, {"type":"env","property"}); a part gives one of them. */
    int ti = ts_jv_get(&c->v, e, "type");
    static const char *const text_keys[] = {"type", "text", "content", NULL};
    static const char *const incl_keys[] = {"type", "name", "prompt", NULL};
    static const char *const env_keys[] = {"type", "name", "property", NULL};
    const char *const *keys;
    if (ts_jv_eq(&c->v, ti, "text")) part->kind = TS_DEFS_PART_TEXT, keys = text_keys;
    else if (ts_jv_eq(&c->v, ti, "prompt") || ts_jv_eq(&c->v, ti, "include"))
      part->kind = TS_DEFS_PART_PROMPT, keys = incl_keys;
    else if (ts_jv_eq(&c->v, ti, "env")) part->kind = TS_DEFS_PART_ENV, keys = env_keys;
    else
      return fail(c, TS_E_INVAL, "\"prompt\": part %d: \"type\" must be \"text\", \"include\" (or \"prompt\") or \"env\"", k);
    char what[32];
    snprintf(what, sizeof what, "prompt part %d", k);
    if (check_keys(c, e, keys, what)) return c->rc;
    int has1 = ts_jv_get(&c->v, e, keys[1]) >= 0, has2 = ts_jv_get(&c->v, e, keys[2]) >= 0;
    if (has1 && has2)
      return fail(c, TS_E_INVAL, "\"prompt\": part %d gives both \"%s\" and \"%s\" (one of them)",
                  k, keys[1], keys[2]);
    const char *key = has2 ? keys[2] : keys[1];
    char *v = NULL;
    if (get_string(c, e, key, part->kind != TS_DEFS_PART_TEXT, &v) < 0) return c->rc;
    if (!v)
      return fail(c, TS_E_INVAL, "\"prompt\": part %d needs \"%s\" (or \"%s\")", k, keys[2],
                  keys[1]);
    part->text = v;
    p->n_parts++;
    if (part->kind == TS_DEFS_PART_ENV && !ts_store_var_name_valid(v))
      return fail(c, TS_E_INVAL, "\"prompt\": part %d: \"%s\" is not a variable name", k, v);
  }
  return 0;
}

/* The keys of a prompt's tools entry given as an object, and those that configure a
 * subagent relationship (stream/tool_defs.h's list; tools-spec §5: a definition-time
 * error). */
static const char *const entry_keys[] = {"name", "includeTextResponse", "includeToolCalls",
                                         "includeErrors", "initUserMessageProperty",
                                         "initAttachmentsProperty", "env", "options", NULL};

static int get_tools(pctx *c, int obj, ts_defs_prompt *p) {
  int arr = ts_jv_get(&c->v, obj, "tools");
  if (arr < 0) return 0;
  if (ts_jv_type_of(&c->v, arr) != TS_JV_ARRAY)
    return fail(c, TS_E_INVAL, "\"tools\" must be an array");
  int cnt = ts_jv_size(&c->v, arr);
  if (cnt > TS_DEFS_MAX_LIST)
    return fail(c, TS_E_LIMIT, "\"tools\" lists more than %d entries", TS_DEFS_MAX_LIST);
  if (!cnt) return 0;
  p->tools = calloc((size_t)cnt, sizeof *p->tools);
  if (!p->tools) return fail(c, TS_E_NOMEM, "out of memory");
  int e = ts_jv_first(&c->v, arr);
  for (int k = 0; k < cnt; k++, e = ts_jv_skip(&c->v, e)) {
    ts_defs_tool_entry *t = &p->tools[p->n_tools++];
    t->sub.include_text_response = t->sub.include_tool_calls = t->sub.include_errors = 1;
    ts_view s;
    if (ts_jv_type_of(&c->v, e) == TS_JV_STRING) {
      if (ts_jv_str(&c->v, e, &s) != TS_E_OK || !s.len || memchr(s.p, '\0', s.len))
        return fail(c, TS_E_INVAL, "tools entry %d: a name must be a non-empty string", k);
      if (!(t->name = dup_view(c, s))) return c->rc;
    } else if (ts_jv_type_of(&c->v, e) == TS_JV_OBJECT) {
      char *name = NULL;
      if (get_string(c, e, "name", 1, &name) < 0) return c->rc;
      t->name = name;
      for (const char *const *sk = ts_tool_defs_subagent_keys; *sk; sk++)
        if (ts_jv_get(&c->v, e, *sk) >= 0)
          return fail(c, TS_E_INVAL,
                      "tools entry %s%s%s configures a subagent relationship (\"%s\"): "
                      "relationships are declared on the agent's side (sideA/sideB "
                      "\"subagents\"), not in a prompt's tools (tools-spec \xC2\xA7" "5)",
                      name ? "\"" : "", name ? name : "without a name", name ? "\"" : "", *sk);
      if (!name) return fail(c, TS_E_INVAL, "tools entry %d needs a \"name\"", k);
      char what[TS_DEFS_NAME_MAX + 32];
      snprintf(what, sizeof what, "tools entry \"%.64s\"", name);
      if (check_keys(c, e, entry_keys, what)) return c->rc;
      t->configured = 1;
      if (get_bool(c, e, "includeTextResponse", &t->sub.include_text_response) ||
          get_bool(c, e, "includeToolCalls", &t->sub.include_tool_calls) ||
          get_bool(c, e, "includeErrors", &t->sub.include_errors) ||
          get_string(c, e, "initUserMessageProperty", 1, &t->sub.init_user_message_property) < 0 ||
          get_string(c, e, "initAttachmentsProperty", 1, &t->sub.init_attachments_property) < 0 ||
          get_env(c, e, &t->env, &t->n_env))
        return c->rc;
      t->sub_given = ts_jv_get(&c->v, e, "includeTextResponse") >= 0 ||
                     ts_jv_get(&c->v, e, "includeToolCalls") >= 0 ||
                     ts_jv_get(&c->v, e, "includeErrors") >= 0 ||
                     t->sub.init_user_message_property || t->sub.init_attachments_property;
      int oi = ts_jv_get(&c->v, e, "options");
      if (oi >= 0) {
        if (ts_jv_type_of(&c->v, oi) != TS_JV_OBJECT)
          return fail(c, TS_E_INVAL, "%s: \"options\" must be an object", what);
        if (!(t->options_json = dup_view(c, ts_jv_raw(&c->v, oi)))) return c->rc;
      }
    } else {
      return fail(c, TS_E_INVAL, "tools entry %d must be a name or an object", k);
    }
    for (size_t j = 0; j + 1 < p->n_tools; j++)
      if (!strcmp(p->tools[j].name, t->name))
        return fail(c, TS_E_INVAL, "tools entry \"%s\" listed twice", t->name);
  }
  return 0;
}

static const char *const prompt_keys[] = {
    "kind", "name", "toolDescription", "description", "prompt", "model", "tools", "requiredSchema",
    "variables", "env", "includeChat", "includePastTools", "toolChoice", "parallelToolCalls",
    "recentImageThreshold", NULL};

static int parse_prompt(pctx *c, int obj, ts_defs_prompt *p) {
  if (check_keys(c, obj, prompt_keys, "a prompt")) return c->rc;
  p->parallel_tool_calls = -1;
  char *choice = NULL;
  if (get_string(c, obj, "toolDescription", 0, &p->tool_description) < 0 ||
      get_string(c, obj, "description", 0, &p->description) < 0 ||
      get_string(c, obj, "model", 1, &p->model) < 0 || get_parts(c, obj, p) ||
      get_tools(c, obj, p) || get_vars(c, obj, &p->vars, &p->n_vars) ||
      get_env(c, obj, &p->env, &p->n_env) || get_bool(c, obj, "includeChat", &p->include_chat) ||
      get_bool(c, obj, "includePastTools", &p->include_past_tools) ||
      get_string(c, obj, "toolChoice", 1, &choice) < 0)
    return c->rc;
  /* how many recent messages keep their images: no message here carries one, so the
   * number (checked) changes nothing */
  int ri = ts_jv_get(&c->v, obj, "recentImageThreshold");
  int64_t rit = 0;
  if (ri >= 0 && (ts_jv_int(&c->v, ri, &rit) || rit < 0)) {
    free(choice);
    return fail(c, TS_E_INVAL, "\"recentImageThreshold\" must be a whole number, 0 or more");
  }
  int par = -1;
  if (get_bool(c, obj, "parallelToolCalls", &par)) {
    free(choice);
    return c->rc;
  }
  p->parallel_tool_calls = par;
  if (choice) {
    if (!strcmp(choice, "auto")) p->tool_choice = TS_DEFS_CHOICE_AUTO;
    else if (!strcmp(choice, "none")) p->tool_choice = TS_DEFS_CHOICE_NONE;
    else if (!strcmp(choice, "required")) p->tool_choice = TS_DEFS_CHOICE_REQUIRED;
    else {
      free(choice);
      return fail(c, TS_E_INVAL, "\"toolChoice\" must be \"auto\", \"none\" or \"required\"");
    }
    free(choice);
  }
  int si = ts_jv_get(&c->v, obj, "requiredSchema");
  if (si >= 0) {
    if (ts_jv_type_of(&c->v, si) != TS_JV_OBJECT)
      return fail(c, TS_E_INVAL, "\"requiredSchema\" must be a JSON Schema object");
    if (!(p->required_schema = dup_view(c, ts_jv_raw(&c->v, si)))) return c->rc;
    ts_schema *s = NULL;
    char why[300] = "";
    int rc = ts_schema_compile(p->required_schema, strlen(p->required_schema), 0, &s, why,
                               sizeof why);
    ts_schema_free(s);
    if (rc == TS_E_NOMEM) return fail(c, TS_E_NOMEM, "out of memory");
    if (rc) return fail(c, TS_E_INVAL, "\"requiredSchema\" is malformed: %s", why);
  }
  return 0;
}

static const char *const side_keys[] = {"prompt",      "sessionStopTools", "sessionFailTools",
                                        "sessionStop", "sessionFail",      "subagents",
                                        NULL};

/* A side's stop (or fail) tools: "sessionStopTools": [names], or the specification's
 * documentation's "sessionStop": a name (or an array of them); one spelling per side. */
static int get_session_tools(pctx *c, int side, const char *sk, const char *key, const char *one,
                             char ***out, size_t *n) {
  int i = ts_jv_get(&c->v, side, one);
  if (i < 0) return get_names(c, side, key, out, n);
  if (ts_jv_get(&c->v, side, key) >= 0)
    return fail(c, TS_E_INVAL, "%s: \"%s\" and \"%s\" both given (one of them)", sk, one, key);
  if (ts_jv_type_of(&c->v, i) == TS_JV_ARRAY) return get_names(c, side, one, out, n);
  char *name = NULL;
  if (get_string(c, side, one, 1, &name) < 0) return c->rc;
  if (!(*out = calloc(1, sizeof **out))) {
    free(name);
    return fail(c, TS_E_NOMEM, "out of memory");
  }
  (*out)[(*n)++] = name;
  return 0;
}
static const char *const rel_keys[] = {"agent", "name", "description", "blocking", "hidden",
                                       NULL};

static int parse_side(pctx *c, int obj, const char *key, ts_defs_side *s) {
  int i = ts_jv_get(&c->v, obj, key);
  if (i < 0) return 0;
  if (ts_jv_type_of(&c->v, i) != TS_JV_OBJECT)
    return fail(c, TS_E_INVAL, "\"%s\" must be an object (a side)", key);
  if (check_keys(c, i, side_keys, key)) return c->rc;
  if (get_string(c, i, "prompt", 1, &s->prompt) < 0 ||
      get_session_tools(c, i, key, "sessionStopTools", "sessionStop", &s->stop_tools,
                        &s->n_stop_tools) ||
      get_session_tools(c, i, key, "sessionFailTools", "sessionFail", &s->fail_tools,
                        &s->n_fail_tools))
    return c->rc;
  int arr = ts_jv_get(&c->v, i, "subagents");
  if (arr < 0) return 0;
  if (ts_jv_type_of(&c->v, arr) != TS_JV_ARRAY)
    return fail(c, TS_E_INVAL, "%s: \"subagents\" must be an array of relationships", key);
  int cnt = ts_jv_size(&c->v, arr);
  if (cnt > TS_DEFS_MAX_LIST)
    return fail(c, TS_E_LIMIT, "%s: more than %d subagent relationships", key, TS_DEFS_MAX_LIST);
  if (!cnt) return 0;
  s->subagents = calloc((size_t)cnt, sizeof *s->subagents);
  if (!s->subagents) return fail(c, TS_E_NOMEM, "out of memory");
  int e = ts_jv_first(&c->v, arr);
  for (int k = 0; k < cnt; k++, e = ts_jv_skip(&c->v, e)) {
    char what[48];
    snprintf(what, sizeof what, "%s subagents[%d]", key, k);
    if (ts_jv_type_of(&c->v, e) != TS_JV_OBJECT)
      return fail(c, TS_E_INVAL, "%s must be an object", what);
    if (check_keys(c, e, rel_keys, what)) return c->rc;
    ts_defs_subagent *r = &s->subagents[s->n_subagents++];
    r->blocking = 1;
    if (get_string(c, e, "agent", 1, &r->agent) < 0 || get_string(c, e, "name", 1, &r->name) < 0 ||
        get_string(c, e, "description", 0, &r->description) < 0 ||
        get_bool(c, e, "blocking", &r->blocking) || get_bool(c, e, "hidden", &r->hidden))
      return c->rc;
    if (!r->agent) return fail(c, TS_E_INVAL, "%s needs \"agent\"", what);
    if (!r->name && !(r->name = strdup(r->agent))) return fail(c, TS_E_NOMEM, "out of memory");
    if (!snake(r->name))
      return fail(c, TS_E_INVAL, "%s: relationship name \"%.64s\" is not snake_case ([a-z][a-z0-9_]*, at most %d bytes)",
                  what, r->name, TS_DEFS_NAME_MAX);
    for (size_t j = 0; j + 1 < s->n_subagents; j++)
      if (!strcmp(s->subagents[j].name, r->name))
        return fail(c, TS_E_INVAL, "%s: relationship \"%s\" declared twice", key, r->name);
  }
  return 0;
}

static const char *const agent_keys[] = {"kind", "name", "type", "description", "sideA", "sideB",
                                         "maxSessionTurns", "exposeAsTool", "toolDescription",
                                         "env", "variables", "icon", "packageName",
                                         "version", "author", "license", NULL};

/* The specification's metadata of an agent, for UIs and its packing system: strings that
 * change nothing of how it runs, so they are checked for type and not kept. */
static const char *const agent_meta_keys[] = {"icon", "packageName", "version", "author",
                                              "license", NULL};

static int parse_agent(pctx *c, int obj, ts_defs_agent *a) {
  if (check_keys(c, obj, agent_keys, "an agent")) return c->rc;
  for (const char *const *mk = agent_meta_keys; *mk; mk++) {
    int mi = ts_jv_get(&c->v, obj, *mk);
    if (mi >= 0 && ts_jv_type_of(&c->v, mi) != TS_JV_STRING)
      return fail(c, TS_E_INVAL, "\"%s\" must be a string", *mk);
  }
  char *type = NULL;
  if (get_string(c, obj, "type", 1, &type) < 0) return c->rc;
  if (type) {
    int ok = 1;
    if (!strcmp(type, "ai_human")) a->type = TS_DEFS_AI_HUMAN;
    else if (!strcmp(type, "dual_ai")) a->type = TS_DEFS_DUAL_AI;
    else ok = 0;
    free(type);
    if (!ok) return fail(c, TS_E_INVAL, "\"type\" must be \"ai_human\" or \"dual_ai\"");
  }
  if (get_string(c, obj, "description", 0, &a->description) < 0 ||
      get_string(c, obj, "toolDescription", 0, &a->tool_description) < 0 ||
      get_bool(c, obj, "exposeAsTool", &a->expose_as_tool) ||
      get_env(c, obj, &a->env, &a->n_env) || get_vars(c, obj, &a->vars, &a->n_vars) ||
      parse_side(c, obj, "sideA", &a->side_a) || parse_side(c, obj, "sideB", &a->side_b))
    return c->rc;
  int mi = ts_jv_get(&c->v, obj, "maxSessionTurns");
  if (mi >= 0) {
    int64_t n = 0;
    if (ts_jv_int(&c->v, mi, &n) || n < 1 || n > TS_DEFS_MAX_SESSION_TURNS)
      return fail(c, TS_E_INVAL, "\"maxSessionTurns\" must be a whole number from 1 to %d",
                  TS_DEFS_MAX_SESSION_TURNS);
    a->max_session_turns = (uint32_t)n;
  }
  return 0;
}

static int grow(void *pv, size_t *cap, size_t need, size_t elem) {
  void **p = pv;
  if (need <= *cap) return 0;
  size_t nc = *cap ? *cap * 2 : 8;
  while (nc < need) nc *= 2;
  void *np = realloc(*p, nc * elem);
  if (!np) return -1;
  *p = np;
  *cap = nc;
  return 0;
}

/* Room for np prompts and na agents in the set, and in its sorted indices. */
static int reserve(ts_defs *d, size_t np, size_t na) {
  if (np > d->cap_prompts) {
    size_t cap = d->cap_prompts;
    if (grow(&d->prompts, &cap, np, sizeof *d->prompts)) return -1;
    size_t *ns = realloc(d->p_sorted, cap * sizeof *ns);
    if (!ns) return -1; /* the larger prompts array is harmless: cap_prompts unchanged */
    d->p_sorted = ns;
    d->cap_prompts = cap;
  }
  if (na > d->cap_agents) {
    size_t cap = d->cap_agents;
    if (grow(&d->agents, &cap, na, sizeof *d->agents)) return -1;
    size_t *ns = realloc(d->a_sorted, cap * sizeof *ns);
    if (!ns) return -1;
    d->a_sorted = ns;
    d->cap_agents = cap;
  }
  return 0;
}

/* One definition object at token `obj` (definition `idx` of the text). */
static int parse_one(pctx *c, int obj, int idx, const char *default_kind, ts_defs *out) {
  snprintf(c->entry, sizeof c->entry, "definition %d", idx + 1);
  if (ts_jv_type_of(&c->v, obj) != TS_JV_OBJECT) return fail(c, TS_E_INVAL, "not an object");
  char *kind = NULL, *name = NULL;
  if (get_string(c, obj, "kind", 1, &kind) < 0) return c->rc;
  const char *k = kind ? kind : default_kind;
  int is_prompt = k && !strcmp(k, "prompt"), is_agent = k && !strcmp(k, "agent");
  if (!is_prompt && !is_agent) {
    free(kind);
    return fail(c, TS_E_INVAL, k ? "\"kind\" must be \"prompt\" or \"agent\""
                                 : "needs \"kind\": \"prompt\" or \"agent\"");
  }
  free(kind);
  if (get_string(c, obj, "name", 1, &name) < 0) return c->rc;
  if (!name) return fail(c, TS_E_INVAL, "a %s needs a \"name\"", is_prompt ? "prompt" : "agent");
  snprintf(c->entry, sizeof c->entry, "%s \"%.64s\"", is_prompt ? "prompt" : "agent", name);
  if (!snake(name)) {
    free(name);
    return fail(c, TS_E_INVAL, "the name is not snake_case ([a-z][a-z0-9_]*, at most %d bytes)",
                TS_DEFS_NAME_MAX);
  }
  if (ts_defs_name_reserved(name, strlen(name))) {
    free(name);
    return fail(c, TS_E_INVAL,
                "the name is reserved: subagents, subagent_create and subagent_message are the "
                "runtime's subagent tools (tools-spec \xC2\xA7" "5)");
  }
  char *file = strdup(c->file);
  if (!file) {
    free(name);
    return fail(c, TS_E_NOMEM, "out of memory");
  }
  if (is_prompt) {
    ts_defs_prompt *p = calloc(1, sizeof *p);
    if (!p || grow(&out->prompts, &out->cap_prompts, out->n_prompts + 1, sizeof *out->prompts)) {
      free(p), free(name), free(file);
      return fail(c, TS_E_NOMEM, "out of memory");
    }
    p->name = name, p->file = file;
    out->prompts[out->n_prompts++] = p;
    return parse_prompt(c, obj, p);
  }
  ts_defs_agent *a = calloc(1, sizeof *a);
  if (!a || grow(&out->agents, &out->cap_agents, out->n_agents + 1, sizeof *out->agents)) {
    free(a), free(name), free(file);
    return fail(c, TS_E_NOMEM, "out of memory");
  }
  a->name = name, a->file = file;
  out->agents[out->n_agents++] = a;
  return parse_agent(c, obj, a);
}

static void set_clear(ts_defs *s) {
  for (size_t i = 0; i < s->n_prompts; i++) prompt_free(s->prompts[i]);
  for (size_t i = 0; i < s->n_agents; i++) agent_free(s->agents[i]);
  free(s->prompts);
  free(s->agents);
  free(s->p_sorted);
  free(s->a_sorted);
  memset(s, 0, sizeof *s);
}

/* The position in `sorted` (n indices, ordered by name(i)) where `name` is or would go;
 * *found set when it is there. */
static size_t sorted_pos(const size_t *sorted, size_t n, const char *name,
                         const char *(*name_of)(const ts_defs *, size_t), const ts_defs *d,
                         int *found) {
  size_t lo = 0, hi = n;
  *found = 0;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int cmp = strcmp(name_of(d, sorted[mid]), name);
    if (!cmp) {
      *found = 1;
      return mid;
    }
    if (cmp < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static const char *pname(const ts_defs *d, size_t i) { return d->prompts[i]->name; }
static const char *aname(const ts_defs *d, size_t i) { return d->agents[i]->name; }

/* Inserts index i into a sorted index array of n entries (room for one more). */
static void sorted_insert(size_t *sorted, size_t n, size_t i,
                          const char *(*name_of)(const ts_defs *, size_t), const ts_defs *d) {
  int found;
  size_t at = sorted_pos(sorted, n, name_of(d, i), name_of, d, &found);
  memmove(sorted + at + 1, sorted + at, (n - at) * sizeof *sorted);
  sorted[at] = i;
}

int ts_defs_add_json(ts_defs *d, const char *file, const char *json, size_t len,
                     const char *default_kind, char *why, size_t why_cap) {
  static char scratch_why[1];
  if (!why || !why_cap) why = scratch_why, why_cap = sizeof scratch_why;
  why[0] = '\0';
  pctx c;
  memset(&c, 0, sizeof c);
  c.file = file ? file : "";
  c.why = why;
  c.why_cap = why_cap;
  if (!d || (!json && len)) return fail(&c, TS_E_INVAL, "invalid argument");
  if (len > DEFS_TEXT_MAX)
    return fail(&c, TS_E_LIMIT, "%zu bytes is too large for definitions (at most 16 MiB)", len);
  char *js = malloc(len + 1);
  if (!js) return fail(&c, TS_E_NOMEM, "out of memory");
  if (len) memcpy(js, json, len);
  js[len] = '\0';
  ts_defs add;
  memset(&add, 0, sizeof add);
  /* A token per two bytes is the most JSON text can hold. */
  if (ts_jv_init(&c.v, (int)(len / 2 + 2)) != TS_E_OK) {
    free(js);
    return fail(&c, TS_E_NOMEM, "out of memory");
  }
  if (ts_jv_parse(&c.v, js, len) != TS_E_OK) {
    fail(&c, TS_E_JV_BAD_JSON, "not valid JSON");
    goto out;
  }
  if (ts_jv_type_of(&c.v, 0) == TS_JV_ARRAY) {
    int n = ts_jv_size(&c.v, 0);
    if ((size_t)n > TS_DEFS_MAX_DEFS) {
      fail(&c, TS_E_LIMIT, "more than %d definitions", TS_DEFS_MAX_DEFS);
      goto out;
    }
    int e = ts_jv_first(&c.v, 0);
    for (int k = 0; k < n && !c.rc; k++, e = ts_jv_skip(&c.v, e))
      parse_one(&c, e, k, default_kind, &add);
  } else if (ts_jv_type_of(&c.v, 0) == TS_JV_OBJECT) {
    parse_one(&c, 0, 0, default_kind, &add);
  } else {
    fail(&c, TS_E_INVAL, "expected a definition object or an array of them");
  }
  if (c.rc) goto out;
  /* Duplicates: within this text and against what the set holds. */
  for (size_t i = 0; i < add.n_prompts && !c.rc; i++) {
    const char *nm = add.prompts[i]->name;
    int dup = ts_defs_find_prompt(d, nm) != NULL;
    for (size_t j = 0; j < i && !dup; j++) dup = !strcmp(add.prompts[j]->name, nm);
    if (dup) {
      const ts_defs_prompt *o = ts_defs_find_prompt(d, nm);
      snprintf(c.entry, sizeof c.entry, "prompt \"%.64s\"", nm);
      fail(&c, TS_E_INVAL, "a second prompt of that name (the first: %s)",
           o && o->file[0] ? o->file : "this text");
    }
  }
  for (size_t i = 0; i < add.n_agents && !c.rc; i++) {
    const char *nm = add.agents[i]->name;
    int dup = ts_defs_find_agent(d, nm) != NULL;
    for (size_t j = 0; j < i && !dup; j++) dup = !strcmp(add.agents[j]->name, nm);
    if (dup) {
      const ts_defs_agent *o = ts_defs_find_agent(d, nm);
      snprintf(c.entry, sizeof c.entry, "agent \"%.64s\"", nm);
      fail(&c, TS_E_INVAL, "a second agent of that name (the first: %s)",
           o && o->file[0] ? o->file : "this text");
    }
  }
  if (c.rc) goto out;
  if (reserve(d, d->n_prompts + add.n_prompts, d->n_agents + add.n_agents)) {
    fail(&c, TS_E_NOMEM, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < add.n_prompts; i++) {
    d->prompts[d->n_prompts] = add.prompts[i];
    sorted_insert(d->p_sorted, d->n_prompts, d->n_prompts, pname, d);
    d->n_prompts++;
  }
  for (size_t i = 0; i < add.n_agents; i++) {
    d->agents[d->n_agents] = add.agents[i];
    sorted_insert(d->a_sorted, d->n_agents, d->n_agents, aname, d);
    d->n_agents++;
  }
  free(add.prompts);
  free(add.agents);
  memset(&add, 0, sizeof add);
out:
  set_clear(&add);
  ts_jv_fini(&c.v);
  free(js);
  return c.rc;
}

int ts_defs_load_file(ts_defs *d, const char *path, const char *default_kind, char *why,
                      size_t why_cap) {
  char *text = NULL;
  size_t len = 0;
  int rc = ts_file_read(path, DEFS_TEXT_MAX, &text, &len);
  if (rc) {
    snprintf(why, why_cap, "%s: %s", path,
             rc == TS_E_LIMIT ? "too large for definitions (at most 16 MiB)"
             : rc == TS_E_NOMEM ? "out of memory"
                                : strerror(errno));
    one_line(why);
    return rc;
  }
  rc = ts_defs_add_json(d, path, text, len, default_kind, why, why_cap);
  free(text);
  return rc;
}

/* A definitions file of a directory: *.json, not hidden. */
static int json_name(const char *name) {
  size_t l = strlen(name);
  return name[0] != '.' && l > 5 && !strcmp(name + l - 5, ".json");
}

int ts_defs_load_dir(ts_defs *d, const char *dir, char *why, size_t why_cap) {
  char **names = NULL;
  size_t n = 0;
  int rc = ts_file_list(dir, json_name, TS_DEFS_MAX_DEFS, &names, &n);
  if (rc) {
    snprintf(why, why_cap, "%s: %s", dir,
             rc == TS_E_LIMIT ? "more than 4096 definition files"
             : rc == TS_E_NOMEM ? "out of memory"
                                : strerror(errno));
    one_line(why);
    return rc;
  }
  for (size_t i = 0; i < n && !rc; i++) {
    size_t pl = strlen(dir) + 1 + strlen(names[i]) + 1;
    char *path = malloc(pl);
    if (!path) {
      snprintf(why, why_cap, "out of memory");
      rc = TS_E_NOMEM;
      break;
    }
    snprintf(path, pl, "%s%s%s", dir, dir[0] && dir[strlen(dir) - 1] == '/' ? "" : "/", names[i]);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
      rc = ts_defs_load_file(d, path, "prompt", why, why_cap);
    free(path);
  }
  ts_file_names_free(names, n);
  return rc;
}

/* ---- lookups ------------------------------------------------------------------------ */

size_t ts_defs_prompt_count(const ts_defs *d) { return d ? d->n_prompts : 0; }
const ts_defs_prompt *ts_defs_prompt_at(const ts_defs *d, size_t i) {
  return d && i < d->n_prompts ? d->prompts[i] : NULL;
}
/* The index of prompt `name`, or (size_t)-1. */
static size_t prompt_idx(const ts_defs *d, const char *name) {
  int found = 0;
  if (!d || !name || !d->n_prompts) return (size_t)-1;
  size_t at = sorted_pos(d->p_sorted, d->n_prompts, name, pname, d, &found);
  return found ? d->p_sorted[at] : (size_t)-1;
}

const ts_defs_prompt *ts_defs_find_prompt(const ts_defs *d, const char *name) {
  size_t i = prompt_idx(d, name);
  return i == (size_t)-1 ? NULL : d->prompts[i];
}
size_t ts_defs_agent_count(const ts_defs *d) { return d ? d->n_agents : 0; }
const ts_defs_agent *ts_defs_agent_at(const ts_defs *d, size_t i) {
  return d && i < d->n_agents ? d->agents[i] : NULL;
}
const ts_defs_agent *ts_defs_find_agent(const ts_defs *d, const char *name) {
  int found = 0;
  if (!d || !name || !d->n_agents) return NULL;
  size_t at = sorted_pos(d->a_sorted, d->n_agents, name, aname, d, &found);
  return found ? d->agents[d->a_sorted[at]] : NULL;
}

/* ---- the definition-time rules ------------------------------------------------------ */

typedef struct {
  ts_defs *d;
  const ts_registry *reg;
  char *why;
  size_t why_cap;
} cctx;

/* "<file>: <what> \"<name>\": <message>". */
__attribute__((format(printf, 5, 6))) static int refuse(cctx *c, const char *file,
                                                          const char *what, const char *name,
                                                          const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  snprintf(c->why, c->why_cap, "%s%s%s \"%s\": %s", file && file[0] ? file : "",
           file && file[0] ? ": " : "", what, name, msg);
  one_line(c->why);
  return TS_E_INVAL;
}

/* The schema a tools entry's init*Property is checked against: the prompt's own, or for
 * an exposed agent, the prompt of the side it starts with (sideA). */
static const char *callee_schema(const ts_defs *d, const ts_defs_tool_entry *e) {
  if (e->target == TS_DEFS_TARGET_PROMPT) {
    const ts_defs_prompt *q = ts_defs_find_prompt(d, e->name);
    return q ? q->required_schema : NULL;
  }
  const ts_defs_agent *a = ts_defs_find_agent(d, e->name);
  const ts_defs_prompt *q = a ? ts_defs_find_prompt(d, a->side_a.prompt) : NULL;
  return q ? q->required_schema : NULL;
}

static int check_property(cctx *c, const ts_defs_prompt *p, const ts_defs_tool_entry *e,
                          const char *key, const char *prop) {
  if (!prop) return TS_E_OK;
  const char *schema = callee_schema(c->d, e);
  /* Without a requiredSchema the arguments are any object, so any name can be one of them
   * (both are optional in the specification): only a schema can show a name is a typo. */
  if (!schema) return TS_E_OK;
  ts_schema *s = NULL;
  char why[200];
  int rc = ts_schema_compile(schema, strlen(schema), 0, &s, why, sizeof why);
  if (rc == TS_E_NOMEM) {
    snprintf(c->why, c->why_cap, "out of memory");
    return rc;
  }
  int has = rc == TS_E_OK && ts_schema_has_property(s, prop);
  ts_schema_free(s);
  if (!has)
    return refuse(c, p->file, "prompt", p->name,
                  "tools entry \"%s\": %s \"%s\" is not a top-level property of the "
                  "requiredSchema of \"%s\"",
                  e->name, key, prop, e->name);
  return TS_E_OK;
}

/* Resolves and checks each tools entry of prompt p. */
static int check_tools(cctx *c, ts_defs_prompt *p) {
  for (size_t i = 0; i < p->n_tools; i++) {
    ts_defs_tool_entry *e = &p->tools[i];
    size_t nl = strlen(e->name);
    const ts_defs_agent *a = ts_defs_find_agent(c->d, e->name);
    if (ts_defs_name_reserved(e->name, nl))
      return refuse(c, p->file, "prompt", p->name,
                    "tools entry \"%s\": the name is reserved: the runtime injects subagents, "
                    "subagent_create and subagent_message for the agent side's subagent "
                    "relationships (tools-spec \xC2\xA7" "5)",
                    e->name);
    if (ts_defs_find_prompt(c->d, e->name)) e->target = TS_DEFS_TARGET_PROMPT;
    else if (a && a->expose_as_tool) e->target = TS_DEFS_TARGET_AGENT;
    else if (c->reg && ts_registry_find(c->reg, e->name, nl)) e->target = TS_DEFS_TARGET_FUNCTION;
    else if (a)
      return refuse(c, p->file, "prompt", p->name,
                    "tools entry \"%s\": agent \"%s\" is not exposed as a tool (give it "
                    "exposeAsTool: true and a toolDescription)",
                    e->name, e->name);
    else
      return refuse(c, p->file, "prompt", p->name,
                    "tools entry \"%s\": no tool, prompt or exposed agent of that name", e->name);
    if (e->target == TS_DEFS_TARGET_FUNCTION && e->sub_given)
      return refuse(c, p->file, "prompt", p->name,
                    "tools entry \"%s\": a function tool takes no SubpromptConfig "
                    "(includeTextResponse, includeToolCalls, includeErrors, "
                    "initUserMessageProperty, initAttachmentsProperty are for prompts and "
                    "agents)",
                    e->name);
    if (e->target == TS_DEFS_TARGET_PROMPT) {
      const ts_defs_prompt *q = ts_defs_find_prompt(c->d, e->name);
      if (!q->tool_description || !q->tool_description[0])
        return refuse(c, p->file, "prompt", p->name,
                      "tools entry \"%s\": prompt \"%s\"%s%s%s is used as a tool but has no "
                      "toolDescription",
                      e->name, e->name, q->file[0] ? " (" : "", q->file, q->file[0] ? ")" : "");
    }
    int rc;
    if ((rc = check_property(c, p, e, "initUserMessageProperty", e->sub.init_user_message_property)) ||
        (rc = check_property(c, p, e, "initAttachmentsProperty", e->sub.init_attachments_property)))
      return rc;
  }
  return TS_E_OK;
}

static int prompt_has_tool(const ts_defs_prompt *p, const char *name) {
  for (size_t i = 0; p && i < p->n_tools; i++)
    if (!strcmp(p->tools[i].name, name)) return 1;
  return 0;
}

static int check_side(cctx *c, const ts_defs_agent *a, const ts_defs_side *s, const char *key) {
  const ts_defs_prompt *p = s->prompt ? ts_defs_find_prompt(c->d, s->prompt) : NULL;
  if (s->prompt && !p)
    return refuse(c, a->file, "agent", a->name, "%s: no prompt \"%s\"", key, s->prompt);
  if (!p && (s->n_stop_tools || s->n_fail_tools || s->n_subagents))
    return refuse(c, a->file, "agent", a->name,
                  "%s has no prompt (a human side), so it can have no sessionStopTools, "
                  "sessionFailTools or subagents",
                  key);
  for (int f = 0; f < 2; f++) {
    char **v = f ? s->fail_tools : s->stop_tools;
    size_t n = f ? s->n_fail_tools : s->n_stop_tools;
    for (size_t i = 0; i < n; i++)
      if (!prompt_has_tool(p, v[i]))
        return refuse(c, a->file, "agent", a->name,
                      "%s: %s \"%s\" is not among the tools of prompt \"%s\"", key,
                      f ? "sessionFailTools" : "sessionStopTools", v[i], p->name);
  }
  for (size_t i = 0; i < s->n_subagents; i++) {
    const ts_defs_subagent *r = &s->subagents[i];
    if (!ts_defs_find_agent(c->d, r->agent))
      return refuse(c, a->file, "agent", a->name, "%s: subagent relationship \"%s\": no agent \"%s\"",
                    key, r->name, r->agent);
    if (ts_defs_name_reserved(r->name, strlen(r->name)))
      return refuse(c, a->file, "agent", a->name,
                    "%s: relationship name \"%s\" is reserved (the runtime's subagent tools)", key,
                    r->name);
  }
  return TS_E_OK;
}

/* A name callable as a tool may be taken once in the tool namespace: function tools,
 * prompts, exposed agents. */
static int check_namespace(cctx *c) {
  for (size_t i = 0; c->reg && i < ts_registry_count(c->reg); i++) {
    const char *t = ts_tool_name(ts_registry_at(c->reg, i));
    if (ts_defs_name_reserved(t, strlen(t)))
      return refuse(c, "", "tool", t, "the name is reserved (the runtime's subagent tools)");
  }
  for (size_t i = 0; i < c->d->n_prompts; i++) {
    const ts_defs_prompt *p = c->d->prompts[i];
    if (c->reg && ts_registry_find(c->reg, p->name, strlen(p->name)))
      return refuse(c, p->file, "prompt", p->name, "a function tool has the same name");
  }
  for (size_t i = 0; i < c->d->n_agents; i++) {
    const ts_defs_agent *a = c->d->agents[i];
    if (!a->expose_as_tool) continue;
    const ts_defs_prompt *p = ts_defs_find_prompt(c->d, a->name);
    if (p)
      return refuse(c, a->file, "agent", a->name,
                    "exposed as a tool, but prompt \"%s\"%s%s%s has the same name (one name, "
                    "one tool)",
                    a->name, p->file[0] ? " (" : "", p->file, p->file[0] ? ")" : "");
    if (c->reg && ts_registry_find(c->reg, a->name, strlen(a->name)))
      return refuse(c, a->file, "agent", a->name,
                    "exposed as a tool, but a function tool has the same name");
  }
  return TS_E_OK;
}

/* The two graphs over prompts (see the essay): kind 0, "calls" (nested activations);
 * kind 1, "includes" (prompt parts). Edges of prompt p into out (at most cap), count
 * returned. */
static size_t edges(const ts_defs *d, size_t p, int kind, size_t *out, size_t cap) {
  const ts_defs_prompt *pr = d->prompts[p];
  size_t n = 0;
#define EDGE(qname)                                  \
  do {                                               \
    size_t qi = prompt_idx(d, (qname));              \
    if (qi != (size_t)-1 && n < cap) out[n++] = qi;  \
  } while (0)
  if (kind == 1) {
    for (size_t i = 0; i < pr->n_parts; i++)
      if (pr->parts[i].kind == TS_DEFS_PART_PROMPT) EDGE(pr->parts[i].text);
    return n;
  }
  for (size_t i = 0; i < pr->n_tools; i++) {
    const ts_defs_tool_entry *e = &pr->tools[i];
    if (e->target == TS_DEFS_TARGET_PROMPT) EDGE(e->name);
    if (e->target == TS_DEFS_TARGET_AGENT) {
      const ts_defs_agent *a = ts_defs_find_agent(d, e->name);
      if (a && a->type == TS_DEFS_DUAL_AI) {
        EDGE(a->side_a.prompt);
        EDGE(a->side_b.prompt);
      }
    }
  }
#undef EDGE
  return n;
}

/* Depth-first over one graph with an explicit stack; a grey node met again closes a
 * cycle, reported as its path. */
static int find_cycle(cctx *c, int kind) {
  size_t n = c->d->n_prompts;
  if (!n) return TS_E_OK;
  unsigned char *color = calloc(n, 1);
  size_t *stack = calloc(n, sizeof *stack), *next = calloc(n, sizeof *next);
  size_t emax = 2 * TS_DEFS_MAX_LIST;
  size_t *adj = calloc(emax, sizeof *adj);
  int rc = TS_E_OK;
  if (!color || !stack || !next || !adj) {
    snprintf(c->why, c->why_cap, "out of memory");
    rc = TS_E_NOMEM;
    goto out;
  }
  for (size_t root = 0; root < n && !rc; root++) {
    if (color[root]) continue;
    size_t top = 0;
    stack[0] = root, next[0] = 0, color[root] = 1;
    while (!rc) {
      size_t u = stack[top];
      size_t deg = edges(c->d, u, kind, adj, emax);
      if (next[top] < deg) {
        size_t q = adj[next[top]++];
        if (color[q] == 1) { /* the path from q on the stack to u, back to q */
          char path[600] = "";
          size_t at = 0, from = 0;
          while (stack[from] != q) from++;
          for (size_t k = from; k <= top; k++) {
            int w = snprintf(path + at, sizeof path - at, "\"%s\" %s ", c->d->prompts[stack[k]]->name,
                             kind ? "includes" : "calls");
            if (w > 0 && (size_t)w < sizeof path - at) at += (size_t)w;
          }
          snprintf(path + at, sizeof path - at, "\"%s\"", c->d->prompts[q]->name);
          const ts_defs_prompt *p = c->d->prompts[q];
          rc = refuse(c, p->file, "prompt", p->name,
                      kind ? "prompt parts include each other in a cycle (%s): the system text "
                             "would never end"
                           : "sub-prompts call each other in a cycle that can never end (%s)",
                      path);
        } else if (!color[q]) {
          color[q] = 1;
          stack[++top] = q;
          next[top] = 0;
        }
      } else {
        color[u] = 2;
        if (!top) break;
        top--;
      }
    }
  }
out:
  free(color);
  free(stack);
  free(next);
  free(adj);
  return rc;
}

int ts_defs_check(ts_defs *d, const ts_registry *reg, char *why, size_t why_cap) {
  static char scratch_why[1];
  if (!why || !why_cap) why = scratch_why, why_cap = sizeof scratch_why;
  why[0] = '\0';
  if (!d) {
    snprintf(why, why_cap, "invalid argument");
    return TS_E_INVAL;
  }
  cctx c = {d, reg, why, why_cap};
  int rc;
  if ((rc = check_namespace(&c))) return rc;
  for (size_t i = 0; i < d->n_prompts; i++) {
    ts_defs_prompt *p = d->prompts[i];
    if ((rc = check_tools(&c, p))) return rc;
    for (size_t k = 0; k < p->n_parts; k++)
      if (p->parts[k].kind == TS_DEFS_PART_PROMPT && !ts_defs_find_prompt(d, p->parts[k].text))
        return refuse(&c, p->file, "prompt", p->name, "prompt part %zu includes prompt \"%s\", "
                      "which does not exist", k, p->parts[k].text);
  }
  for (size_t i = 0; i < d->n_agents; i++) {
    ts_defs_agent *a = d->agents[i];
    if (a->expose_as_tool && (!a->tool_description || !a->tool_description[0]))
      return refuse(&c, a->file, "agent", a->name, "exposeAsTool needs a toolDescription");
    if (a->type == TS_DEFS_DUAL_AI && (!a->side_a.prompt || !a->side_b.prompt))
      return refuse(&c, a->file, "agent", a->name,
                    "a dual_ai agent needs a prompt on both sides (sideA and sideB)");
    if (a->type == TS_DEFS_AI_HUMAN && !a->side_a.prompt)
      return refuse(&c, a->file, "agent", a->name,
                    "an ai_human agent needs sideA.prompt (the model's side; sideB is the "
                    "person)");
    if ((rc = check_side(&c, a, &a->side_a, "sideA")) ||
        (rc = check_side(&c, a, &a->side_b, "sideB")))
      return rc;
    if (!a->max_session_turns) a->max_session_turns = TS_DEFS_DEFAULT_SESSION_TURNS;
  }
  if ((rc = find_cycle(&c, 1)) || (rc = find_cycle(&c, 0))) return rc;
  return TS_E_OK;
}
