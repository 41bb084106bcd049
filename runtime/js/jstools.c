/*
 * jstools.c: see jstools.h. The registry side of JavaScript tools; everything that
 * touches JavaScript is in sandbox.c (the one includer of duktape.h), reached through
 * ts_sandbox_load_tools and ts_sandbox_call_tool with a table of host callbacks.
 *
 * A module's source is loaded once and shared by the tools it defines (a small
 * reference count: the registry frees tools one by one). Each tool keeps what the
 * registry does not: its module, its `uses`, its variables, its package flag. The
 * callbacks of one run get a `jscall` (the tool and the ts_call_info of this call), so
 * nested invokeTool calls carry the depth, the cancel flag and the turn's queue along.
 */
#include "js/jstools.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "js/sandbox.h"

/* A module larger than this is refused (a tool file is source code, not data). */
#define JS_MODULE_MAX ((size_t)16 << 20)

typedef struct {
  int refs;
  char *path, *src, *module;
  size_t len;
  char **vars; /* "NAME=VALUE" */
  size_t n_vars;
  int no_environ;
  uint32_t timeout_ms;
  size_t memory_limit;
  int language; /* TS_SANDBOX_LANG_*, from the file's extension */
} jsmod;

typedef struct {
  jsmod *m;
  char *name;
  int packed, has_uses, has_started_hook;
  char **uses;
  size_t n_uses;
  ts_sandbox_tool_var *vars;
  size_t n_vars;
  const ts_registry *reg;
} jstool;

typedef struct {
  const jstool *t;
  const ts_call_info *call;
} jscall;

static void js_execute(void *user, const ts_call_info *call, const char *args, size_t len,
                       ts_tool_result *out);

/* The extensions of a tool module, and the language each one means: TypeScript for the
 * .ts family; the .js family may still use TypeScript's syntax (auto). */
static const struct {
  const char *ext;
  int language;
} module_exts[] = {{".js", TS_SANDBOX_LANG_AUTO},  {".mjs", TS_SANDBOX_LANG_AUTO},
                   {".cjs", TS_SANDBOX_LANG_AUTO}, {".ts", TS_SANDBOX_LANG_TS},
                   {".mts", TS_SANDBOX_LANG_TS},   {".cts", TS_SANDBOX_LANG_TS}};

/* The length of the module extension `path` ends with (0: none), and its language. */
static size_t module_ext(const char *path, int *language) {
  size_t n = path ? strlen(path) : 0;
  for (size_t i = 0; i < sizeof module_exts / sizeof *module_exts; i++) {
    size_t e = strlen(module_exts[i].ext);
    if (n > e && !strcmp(path + n - e, module_exts[i].ext)) {
      if (language) *language = module_exts[i].language;
      return e;
    }
  }
  return 0;
}

int ts_jstools_is_module(const char *path) { return module_ext(path, NULL) != 0; }

static void mod_unref(jsmod *m) {
  if (!m || --m->refs > 0) return;
  free(m->path);
  free(m->src);
  free(m->module);
  for (size_t i = 0; i < m->n_vars; i++) free(m->vars[i]);
  free(m->vars);
  free(m);
}

static void jstool_free(void *p) {
  jstool *t = p;
  if (!t) return;
  free(t->name);
  for (size_t i = 0; i < t->n_uses; i++) free(t->uses[i]);
  free(t->uses);
  for (size_t i = 0; i < t->n_vars; i++) {
    free(t->vars[i].name);
    free(t->vars[i].description);
  }
  free(t->vars);
  mod_unref(t->m);
  free(t);
}

/* ---- names ------------------------------------------------------------------------------ */

/* A local name finds the registered tool; "PACKAGE/TOOL" finds TOOL only when it is a
 * JavaScript tool from module PACKAGE. */
static const ts_tool *resolve(const ts_registry *reg, const char *name) {
  const char *slash = strchr(name, '/');
  if (!slash) return ts_registry_find(reg, name, strlen(name));
  const ts_tool *t = ts_registry_find(reg, slash + 1, strlen(slash + 1));
  const jstool *j = t ? ts_tool_user_of(t, js_execute) : NULL;
  size_t pl = (size_t)(slash - name);
  if (!j || strlen(j->m->module) != pl || memcmp(j->m->module, name, pl)) return NULL;
  return t;
}

/* Whether `self` may invoke or queue `target` (tools-spec §2.1). */
static int permitted(const jstool *self, const char *target) {
  if (!self->has_uses) return !self->packed;
  const ts_tool *tt = resolve(self->reg, target);
  for (size_t i = 0; i < self->n_uses; i++) {
    if (!strcmp(self->uses[i], target)) return 1;
    if (tt && resolve(self->reg, self->uses[i]) == tt) return 1;
  }
  return 0;
}

static void refusal(const jstool *self, const char *what, const char *target, char *buf,
                    size_t cap) {
  if (!self->has_uses)
    snprintf(buf, cap,
             "%s: packed tool \"%s\" declares no `uses`, so it may not call \"%s\" (a packed tool "
             "must declare the tools it invokes)",
             what, self->name, target);
  else
    snprintf(buf, cap, "%s: \"%s\" is not in the `uses` list of tool \"%s\"", what, target,
             self->name);
}

/* ---- variables ---------------------------------------------------------------------------- */

static const char *lookup_var(const jsmod *m, const char *name) {
  size_t nl = strlen(name);
  for (size_t i = m->n_vars; i-- > 0;) /* the last --var of a name wins */
    if (!strncmp(m->vars[i], name, nl) && m->vars[i][nl] == '=') return m->vars[i] + nl + 1;
  return m->no_environ ? NULL : getenv(name);
}

/* A declared variable's value for this call: from the dispatcher's environment (the
 * thread's, up the tree, and the definition layers) when the call has one, else from
 * --var and the process environment. 1 found, 0 not, -1 error (err filled). */
static int var_value(const jscall *c, const char *name, const char **value, char *err,
                     size_t err_cap) {
  if (c->call && c->call->env_get) {
    const ts_tool *self = ts_registry_find(c->t->reg, c->t->name, strlen(c->t->name));
    size_t len = 0;
    int r = c->call->env_get(c->call->env_ctx, self, name, value, &len, err, err_cap);
    return r < 0 ? -1 : r;
  }
  *value = lookup_var(c->t->m, name);
  return *value != NULL;
}

static int host_env(void *user, const char *name, const char **value, char *err,
                    size_t err_cap) {
  const jscall *c = user;
  for (size_t i = 0; i < c->t->n_vars; i++)
    if (!strcmp(c->t->vars[i].name, name)) return var_value(c, name, value, err, err_cap);
  snprintf(err, err_cap, "state.env: \"%s\" is not declared in the variables of tool \"%s\"",
           name, c->t->name);
  return -1;
}

/* ---- invokeTool, queueTool ---------------------------------------------------------------- */

static void host_invoke(void *user, const char *tool, const char *args, size_t args_len,
                        int *is_error, char **text, size_t *text_len) {
  const jscall *c = user;
  ts_tool_result res;
  memset(&res, 0, sizeof res);
  char why[600];
  const ts_tool *t = NULL;
  if (!permitted(c->t, tool)) {
    refusal(c->t, "invokeTool", tool, why, sizeof why);
    ts_tool_result_error(&res, "%s", why);
  } else if (c->call->depth >= TS_JSTOOLS_MAX_DEPTH) {
    ts_tool_result_error(&res, "invokeTool: \"%s\" would nest calls deeper than %d", tool,
                         TS_JSTOOLS_MAX_DEPTH);
  } else if (!(t = resolve(c->t->reg, tool))) {
    ts_tool_result_error(&res, "invokeTool: unknown tool \"%s\"", tool);
  } else if (ts_tool_validate(t, args, args_len, why, sizeof why) != TS_E_OK) {
    ts_tool_result_error(&res, "invokeTool: invalid arguments for \"%s\": %s", tool, why);
  } else {
    ts_call_info ci = *c->call;
    ci.tool = ts_tool_name(t);
    ci.depth++;
    ts_tool_execute(t, &ci, args, args_len, &res);
  }
  *is_error = res.is_error || !res.text;
  *text = res.text; /* moves to the sandbox, which frees it */
  *text_len = res.len;
}

static int host_queue(void *user, const char *tool, const char *args, size_t args_len, char *err,
                      size_t err_cap) {
  const jscall *c = user;
  if (!permitted(c->t, tool)) {
    refusal(c->t, "queueTool", tool, err, err_cap);
    return -1;
  }
  const ts_tool *t = resolve(c->t->reg, tool);
  if (!t) {
    snprintf(err, err_cap, "queueTool: unknown tool \"%s\"", tool);
    return -1;
  }
  if (!c->call->queue) {
    snprintf(err, err_cap, "queueTool: no queue here (the call is not run by the dispatcher)");
    return -1;
  }
  int rc = ts_call_queue_push(c->call->queue, ts_tool_name(t), args, args_len, c->t->name);
  if (rc == TS_E_LIMIT) {
    size_t lim = c->call->queue->limit ? c->call->queue->limit : TS_CALL_QUEUE_MAX;
    snprintf(err, err_cap, "queueTool: the turn's queue is full (%zu calls)", lim);
    return -1;
  }
  if (rc) {
    snprintf(err, err_cap, "queueTool: out of memory");
    return -1;
  }
  return 0;
}

/* ---- a call ---------------------------------------------------------------------------- */

static void js_execute(void *user, const ts_call_info *call, const char *args, size_t len,
                       ts_tool_result *out) {
  jstool *t = user;
  jscall c = {t, call};
  for (size_t i = 0; i < t->n_vars; i++) {
    const ts_sandbox_tool_var *v = &t->vars[i];
    const char *val = NULL;
    char err[600] = "";
    int got = v->required ? var_value(&c, v->name, &val, err, sizeof err) : 1;
    if (got < 0) {
      ts_tool_result_error(out, "%s", err);
      return;
    }
    if (!got) {
      if (call && call->env_get) /* an invoked tool: the dispatcher parks only its own */
        ts_tool_result_error(out,
                             "missing required variable %s%s%s%s: set it with toolstream env "
                             "set THREAD %s",
                             v->name, v->description[0] ? " (" : "", v->description,
                             v->description[0] ? ")" : "", v->name);
      else
        ts_tool_result_error(out,
                             "missing required variable %s%s%s%s: set %s in the environment or "
                             "pass --var %s=VALUE",
                             v->name, v->description[0] ? " (" : "", v->description,
                             v->description[0] ? ")" : "", v->name, v->name);
      return;
    }
  }
  ts_sandbox_host host = {&c, host_env, host_invoke, host_queue};
  ts_sandbox_opts o;
  memset(&o, 0, sizeof o);
  o.timeout_ms = t->m->timeout_ms;
  o.memory_limit_bytes = t->m->memory_limit;
  o.language = t->m->language;
  o.cancel_flag = call ? call->cancel : NULL;
  ts_sandbox_tool_result r;
  ts_sandbox_call_tool(t->m->src, t->m->len, t->m->module, t->name, args, len, &host, &o, &r);
  if (!r.text) {
    ts_tool_result_error(out, "out of memory (host)");
  } else {
    ts_tool_result_free(out);
    out->is_error = r.is_error;
    out->text = r.text;
    out->len = r.len;
    r.text = NULL;
  }
  ts_sandbox_tool_result_fini(&r);
}

/* ---- loading ----------------------------------------------------------------------------- */

static jsmod *mod_new(const char *path, char *src, size_t len, const ts_jstools_env *env) {
  jsmod *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  m->refs = 1;
  m->src = src;
  m->len = len;
  m->path = strdup(path);
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t bl = strlen(base);
  int language = TS_SANDBOX_LANG_AUTO;
  size_t el = module_ext(base, &language);
  if (el && bl > el) bl -= el;
  m->language = language;
  m->module = strndup(base, bl);
  int oom = !m->path || !m->module;
  if (env) {
    m->no_environ = env->no_environ;
    m->timeout_ms = env->timeout_ms;
    m->memory_limit = env->memory_limit_bytes;
    if (env->n_vars) {
      m->vars = calloc(env->n_vars, sizeof *m->vars);
      if (!m->vars) oom = 1;
      for (size_t i = 0; m->vars && i < env->n_vars; i++) {
        m->vars[m->n_vars] = strdup(env->vars[i] ? env->vars[i] : "");
        if (!m->vars[m->n_vars++]) oom = 1;
      }
    }
  }
  if (oom) {
    m->src = NULL; /* the caller still owns it */
    mod_unref(m);
    return NULL;
  }
  return m;
}

static int is_member(const ts_sandbox_tool_defs *defs, const char *name) {
  for (size_t i = 0; i < defs->n; i++)
    if (!strcmp(defs->v[i].name, name)) return 1;
  return 0;
}

/* §2.1: a package must include the tools its members use (or they must be registered). */
static int check_package(const ts_registry *reg, const jsmod *m, const ts_sandbox_tool_defs *defs,
                         char *why, size_t why_cap) {
  for (size_t i = 0; i < defs->n; i++) {
    const ts_sandbox_tool_def *d = &defs->v[i];
    if (!d->packed) continue;
    for (size_t k = 0; k < d->n_uses; k++) {
      const char *u = d->uses[k], *slash = strchr(u, '/');
      int ok;
      if (slash) {
        size_t pl = (size_t)(slash - u);
        ok = (strlen(m->module) == pl && !memcmp(m->module, u, pl) && is_member(defs, slash + 1)) ||
             resolve(reg, u) != NULL;
      } else {
        ok = is_member(defs, u) || ts_registry_find(reg, u, strlen(u)) != NULL;
      }
      if (!ok) {
        snprintf(why, why_cap,
                 "%s: package \"%s\" lacks tool \"%s\", which its member \"%s\" uses (add it to "
                 "the package or load it first)",
                 m->path, m->module, u, d->name);
        return TS_E_INVAL;
      }
    }
  }
  return TS_E_OK;
}

static jstool *jstool_take(jsmod *m, ts_sandbox_tool_def *d, const ts_registry *reg) {
  jstool *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->name = strdup(d->name);
  if (!t->name) {
    free(t);
    return NULL;
  }
  t->m = m;
  m->refs++;
  t->reg = reg;
  t->packed = d->packed;
  t->has_started_hook = d->has_started_hook;
  t->has_uses = d->has_uses;
  t->uses = d->uses, t->n_uses = d->n_uses;
  d->uses = NULL, d->n_uses = 0;
  t->vars = d->vars, t->n_vars = d->n_vars;
  d->vars = NULL, d->n_vars = 0;
  return t;
}

/* The registry's tool_call_started hook for a JavaScript tool (ts_jstools_call_started). */
static int js_started(void *user, const char *event_json, size_t len, char *why, size_t why_cap);

/* The registry's view of a JavaScript tool's variables (at most 64: checked). */
static void var_defs(const ts_sandbox_tool_def *d, ts_var_def *out) {
  for (size_t k = 0; k < d->n_vars && k < 64; k++)
    out[k] = (ts_var_def){d->vars[k].name, d->vars[k].secret ? TS_VAR_SECRET : TS_VAR_TEXT,
                          d->vars[k].required, d->vars[k].scoped, d->vars[k].description};
}

int ts_jstools_load(ts_registry *reg, const char *path, const ts_jstools_env *env, char *why,
                    size_t why_cap) {
  if (!reg || !path) {
    snprintf(why, why_cap, "invalid argument");
    return TS_E_INVAL;
  }
  size_t len = 0;
  char *src;
  int rrc = ts_file_read(path, JS_MODULE_MAX, &src, &len);
  if (rrc) {
    snprintf(why, why_cap, "cannot read %s: %s", path,
             rrc == TS_E_LIMIT ? "the module is too large" : strerror(errno));
    return rrc;
  }
  jsmod *m = mod_new(path, src, len, env);
  if (!m) {
    free(src);
    snprintf(why, why_cap, "out of memory");
    return TS_E_NOMEM;
  }
  ts_sandbox_opts o;
  memset(&o, 0, sizeof o);
  o.timeout_ms = m->timeout_ms;
  o.memory_limit_bytes = m->memory_limit;
  o.language = m->language;
  ts_sandbox_tool_defs defs;
  char msg[512] = "";
  int rc = ts_sandbox_load_tools(src, len, m->module, &o, &defs, msg, sizeof msg);
  if (rc) {
    snprintf(why, why_cap, "%s: %s", path, msg);
    mod_unref(m);
    return rc;
  }
  rc = check_package(reg, m, &defs, why, why_cap);
  /* Everything is checked in a scratch registry first, so that a bad definition leaves
   * `reg` as it was. */
  ts_registry *scratch = rc ? NULL : ts_registry_new();
  if (!rc && !scratch) rc = TS_E_NOMEM, snprintf(why, why_cap, "out of memory");
  for (size_t i = 0; !rc && i < defs.n; i++) {
    const ts_sandbox_tool_def *d = &defs.v[i];
    if (ts_registry_find(reg, d->name, strlen(d->name))) {
      snprintf(why, why_cap, "%s: duplicate tool name \"%s\"", path, d->name);
      rc = TS_E_INVAL;
      break;
    }
    ts_var_def vars[64];
    if (d->n_vars > 64) {
      snprintf(why, why_cap, "%s: tool \"%s\" declares more than 64 variables", path, d->name);
      rc = TS_E_LIMIT;
      break;
    }
    var_defs(d, vars);
    ts_tool_spec spec = {.name = d->name, .description = d->description,
                         .args_schema = d->args_schema, .progress_arg = d->progress_arg,
                         .annotations = d->annotations, .execute = js_execute,
                         .vars = vars, .n_vars = d->n_vars};
    char reason[400] = "";
    rc = ts_registry_add(scratch, &spec, reason, sizeof reason);
    if (rc) snprintf(why, why_cap, "%s: %s", path, reason[0] ? reason : "out of memory");
  }
  ts_registry_free(scratch);
  /* Prompts and agents (definePrompt, defineAgent) go through the one parser of
   * definitions, before any tool is registered, so that a refused one leaves `reg` alone. */
  if (!rc && defs.defs_json && env && env->defs)
    rc = ts_defs_add_json(env->defs, path, defs.defs_json, strlen(defs.defs_json), NULL, why,
                          why_cap);
  for (size_t i = 0; !rc && i < defs.n; i++) {
    ts_sandbox_tool_def *d = &defs.v[i];
    jstool *t = jstool_take(m, d, reg);
    if (!t) {
      snprintf(why, why_cap, "out of memory");
      rc = TS_E_NOMEM;
      break;
    }
    ts_var_def vars[64];
    var_defs(&(ts_sandbox_tool_def){.vars = t->vars, .n_vars = t->n_vars}, vars);
    ts_tool_spec spec = {.name = d->name, .description = d->description,
                         .args_schema = d->args_schema, .progress_arg = d->progress_arg,
                         .annotations = d->annotations, .execute = js_execute, .user = t,
                         .user_free = jstool_free,
                         .on_started = t->has_started_hook ? js_started : NULL,
                         .vars = vars, .n_vars = t->n_vars};
    char reason[400] = "";
    rc = ts_registry_add(reg, &spec, reason, sizeof reason);
    if (rc) { /* only out of memory is left at this point */
      snprintf(why, why_cap, "%s: %s", path, reason[0] ? reason : "out of memory");
      jstool_free(t);
    }
  }
  ts_sandbox_tool_defs_free(&defs);
  mod_unref(m);
  return rc;
}

size_t ts_jstools_secrets(const ts_registry *reg, const char **out, size_t cap) {
  size_t n = 0;
  for (size_t i = 0; reg && i < ts_registry_count(reg); i++) {
    const jstool *t = ts_tool_user_of(ts_registry_at(reg, i), js_execute);
    for (size_t k = 0; t && k < t->n_vars; k++) {
      if (!t->vars[k].secret) continue;
      const char *v = lookup_var(t->m, t->vars[k].name);
      if (!v || !*v) continue;
      size_t j = 0;
      while (j < n && strcmp(out[j], v)) j++; /* once each */
      if (j == n && n < cap) out[n++] = v;
    }
  }
  return n;
}

/* ---- the tool_call_started hook ---------------------------------------------------------- */

static int run_hook(jstool *t, const char *event_json, size_t len, char *why, size_t why_cap);

int ts_jstools_call_started(const ts_tool *tool, const char *event_json, size_t len, char *why,
                            size_t why_cap) {
  jstool *t = tool ? ts_tool_user_of(tool, js_execute) : NULL;
  if (!t || !t->has_started_hook) return 0;
  return run_hook(t, event_json, len, why, why_cap);
}

/* The most of one hook console entry shown on standard error. */
#define JS_HOOK_CONSOLE_MAX 4096

/* A hook's console entries go to standard error as it prints them, one line each, named
 * for the tool: its value is ignored, so this is how a hook is seen (and debugged). The
 * entry may carry what the model sent (`progress`): control characters are shown as
 * `?` so that it cannot move a terminal's cursor or forge a line of its own. */
static void hook_console(void *user, const char *entry, size_t len) {
  const jstool *t = user;
  char line[JS_HOOK_CONSOLE_MAX + 1];
  size_t n = len < JS_HOOK_CONSOLE_MAX ? len : JS_HOOK_CONSOLE_MAX;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)entry[i];
    line[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
  }
  line[n] = '\0';
  fprintf(stderr, "toolstream: %s: onToolCallStarted: %s%s\n", t->name, line,
          n < len ? " [cut]" : "");
}

static int run_hook(jstool *t, const char *event_json, size_t len, char *why, size_t why_cap) {
  ts_sandbox_opts o;
  memset(&o, 0, sizeof o);
  o.on_console = hook_console;
  o.console_user = t;
  o.timeout_ms = t->m->timeout_ms && t->m->timeout_ms < TS_JSTOOLS_HOOK_TIMEOUT_MS
                     ? t->m->timeout_ms
                     : TS_JSTOOLS_HOOK_TIMEOUT_MS;
  o.memory_limit_bytes = t->m->memory_limit;
  o.language = t->m->language;
  char msg[512] = "";
  int rc = ts_sandbox_call_hook(t->m->src, t->m->len, t->m->module, t->name, event_json, len, &o,
                                msg, sizeof msg);
  if (rc) {
    snprintf(why, why_cap, "%s: onToolCallStarted: %s", t->name, msg);
    return rc;
  }
  return 1;
}

static int js_started(void *user, const char *event_json, size_t len, char *why, size_t why_cap) {
  int rc = run_hook(user, event_json, len, why, why_cap);
  return rc < 0 ? rc : 0;
}
