/*
 * compose.c: running prompts and agents (compose.h).
 *
 * The composition is small state beside the loop: which agent and prompt drive the
 * thread, which side of a dual_ai session answers, and one registry per driver built the
 * first time that driver runs a turn. Nothing of it is stored apart from what the loop
 * already stores, so nothing can disagree after a crash:
 *
 *   - the driver after handoffs is read back from the committed results of the handoff
 *     tools (a result {"handoff":{"from","to"}} of an exposed ai_human agent's tool);
 *   - a dual_ai session's state (whose turn, how many replies, whether a stop tool was
 *     called) is read back from the assistant messages, which name their side;
 *   - a prompt tool's child is named by the call (ts_compose_child_id), so running the
 *     call again is resuming that child.
 *
 * Tools in a driver's registry are wrappers: a function tool forwards to the run's
 * registry's tool (so its implementation, JavaScript or C, is the one loaded), a prompt
 * or agent tool runs a child (run_child) or hands the thread off. The wrappers' user
 * data is freed with the registry.
 *
 * A child runs on the caller's dispatcher worker, inside the call: the caller's turn waits
 * for it as for any tool. It has its own two store connections (one SQLite connection
 * serves one thread) and its own event sink with the caller as `parent`, writing to the
 * caller's destinations; the caller's cancel flag (the call's) stops it.
 */
#define _XOPEN_SOURCE 700 /* fsync, mkdir with modes, strdup */
#include "agent/compose.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/attachments.h"
#include "agent/subagents.h"
#include "agent/thread_env.h"
#include "base/file.h"
#include "base/thread_id.h"
#include "store/store.h"
#include "stream/json_view.h"

/* ---- small JSON documents ------------------------------------------------------------ */

typedef struct {
  char *js;
  size_t len;
  ts_jv v;
  int ok;
} jdoc;

static void jdoc_open(jdoc *d, const char *text, size_t len) {
  memset(d, 0, sizeof *d);
  d->js = malloc(len + 1);
  if (!d->js) return;
  memcpy(d->js, text, len);
  d->js[len] = '\0';
  d->len = len;
  d->ok = ts_jv_init(&d->v, (int)(len / 2 + 16)) == TS_E_OK &&
          ts_jv_parse(&d->v, d->js, len) == TS_E_OK;
}

static void jdoc_close(jdoc *d) {
  ts_jv_fini(&d->v);
  free(d->js);
}

/* ---- the composition ------------------------------------------------------------------ */

/* A function tool whose tools entry gives it `env`: the layers its calls resolve with. */
typedef struct {
  const ts_tool *tool; /* in the driver's registry */
  ts_var_layers layers;
} entry_layers;

/* One driver's registry and variable layers, built once. */
typedef struct {
  const ts_defs_prompt *prompt;
  const ts_defs_agent *agent;
  int side;
  ts_registry *reg;
  const char **tool_env; /* every function entry's env values, in entry order */
  size_t n_tool_env;
  ts_var_layers layers;     /* agent, every entry's env (a fallback, below), prompt */
  ts_var_layers sys_layers; /* agent, prompt: what a system text part resolves with */
  entry_layers *entries;    /* per tool (ts_compose_tool_layers) */
  size_t n_entries;
} driver_tools;

struct ts_compose {
  const ts_agent_config *cfg;
  unsigned depth;
  const ts_defs *defs;
  const ts_defs_agent *agent;   /* NULL: a prompt alone */
  const ts_defs_prompt *prompt; /* the driver's prompt */
  int dual, side;
  /* a dual_ai session, read back from the thread */
  uint32_t replies;
  int ended;        /* 1: stopped, 2: failed, 3: max_session_turns */
  int ended_side;
  char end_tool[TS_DEFS_NAME_MAX + 1];
  driver_tools *dt;
  size_t ndt;
  ts_buf system;
  const ts_var_def *missing; /* the last driver_get's TS_E_VAR_MISSING: which variable */
};

static const ts_defs_prompt *side_prompt(const ts_defs *defs, const ts_defs_agent *a, int side) {
  const ts_defs_side *s = side ? &a->side_b : &a->side_a;
  return s->prompt ? ts_defs_find_prompt(defs, s->prompt) : NULL;
}

static int in_list(char *const *v, size_t n, const char *name, size_t len) {
  for (size_t i = 0; i < n; i++)
    if (strlen(v[i]) == len && !memcmp(v[i], name, len)) return 1;
  return 0;
}

/* Reading the thread back: handoffs (from tool results) and the dual session (from the
 * assistant messages). */
typedef struct {
  ts_compose *c;
  int oom;
} scan;

static void session_turn(ts_compose *c, int side, int ncalls, char *const *names,
                         const size_t *lens) {
  if (c->ended) return;
  const ts_defs_side *s = side ? &c->agent->side_b : &c->agent->side_a;
  for (int k = 0; k < ncalls; k++) {
    int stop = in_list(s->stop_tools, s->n_stop_tools, names[k], lens[k]);
    int fail = in_list(s->fail_tools, s->n_fail_tools, names[k], lens[k]);
    if (stop || fail) {
      c->ended = stop ? 1 : 2;
      c->ended_side = side;
      snprintf(c->end_tool, sizeof c->end_tool, "%.*s", (int)lens[k], names[k]);
      return;
    }
  }
  if (ncalls) {
    c->side = side; /* the side goes on with its tools' results */
    return;
  }
  c->replies++;
  uint32_t max = c->agent->max_session_turns ? c->agent->max_session_turns
                                             : TS_DEFS_DEFAULT_SESSION_TURNS;
  if (c->replies >= max) {
    c->ended = 3;
    c->ended_side = side;
    return;
  }
  c->side = !side;
}

static int scan_message(void *user, const ts_store_message *m) {
  scan *s = user;
  ts_compose *c = s->c;
  if (m->role == TS_STORE_TOOL && !m->is_error && m->tool_name && !c->dual) {
    static const char mark[] = "{\"handoff\":";
    const ts_defs_agent *to = ts_defs_find_agent(c->defs, m->tool_name);
    if (to && to->type == TS_DEFS_AI_HUMAN && m->content_len > sizeof mark - 1 &&
        !memcmp(m->content, mark, sizeof mark - 1)) {
      const ts_defs_prompt *p = side_prompt(c->defs, to, 0);
      if (p) {
        c->agent = to;
        c->prompt = p;
      }
    }
  } else if (m->role == TS_STORE_ASSISTANT && c->dual) {
    jdoc d;
    jdoc_open(&d, m->content, m->content_len);
    if (!d.js) return s->oom = 1;
    if (d.ok) {
      int side = ts_jv_eq(&d.v, ts_jv_get(&d.v, 0, "side"), "b");
      int calls = ts_jv_get(&d.v, 0, "tool_calls");
      int n = ts_jv_type_of(&d.v, calls) == TS_JV_ARRAY ? ts_jv_size(&d.v, calls) : 0;
      char **names = calloc((size_t)n + 1, sizeof *names);
      size_t *lens = calloc((size_t)n + 1, sizeof *lens);
      if (names && lens) {
        for (int k = 0, e = ts_jv_first(&d.v, calls); k < n; k++, e = ts_jv_skip(&d.v, e)) {
          ts_view nm = {"", 0};
          ts_jv_str(&d.v, ts_jv_get(&d.v, e, "name"), &nm);
          names[k] = (char *)nm.p;
          lens[k] = nm.len;
        }
        session_turn(c, side, n, names, lens);
      } else {
        s->oom = 1;
      }
      free(names);
      free(lens);
    }
    jdoc_close(&d);
  }
  return s->oom;
}

static int read_back(ts_compose *c) {
  scan s = {c, 0};
  if (c->dual) {
    c->side = 0;
    c->replies = 0;
    c->ended = 0;
  }
  int rc = ts_store_messages(c->cfg->store, c->cfg->thread, 0, scan_message, &s);
  if (s.oom) return TS_E_NOMEM;
  if (c->dual) c->prompt = side_prompt(c->defs, c->agent, c->side);
  return rc < 0 ? rc : TS_E_OK;
}

int ts_compose_new(ts_compose **out, const ts_agent_config *cfg, unsigned depth, char *why,
                   size_t cap) {
  const ts_defs *defs = cfg->defs;
  if (!defs || (!cfg->agent && !cfg->prompt_name)) {
    snprintf(why, cap, "no agent or prompt to run");
    return TS_E_INVAL;
  }
  ts_compose *c = calloc(1, sizeof *c);
  if (!c) return TS_E_NOMEM;
  c->cfg = cfg;
  c->depth = depth;
  c->defs = defs;
  ts_buf_init(&c->system, TS_COMPOSE_MAX_SYSTEM);
  if (cfg->agent) {
    c->agent = ts_defs_find_agent(defs, cfg->agent);
    if (!c->agent) {
      snprintf(why, cap, "no agent \"%s\" in the definitions", cfg->agent);
      ts_compose_free(c);
      return TS_E_INVAL;
    }
    c->dual = c->agent->type == TS_DEFS_DUAL_AI;
    c->prompt = side_prompt(defs, c->agent, 0);
    if (!c->prompt || (c->dual && !side_prompt(defs, c->agent, 1))) {
      snprintf(why, cap, "agent \"%s\": %s has no prompt to drive it", c->agent->name,
               c->prompt ? "sideB" : "sideA");
      ts_compose_free(c);
      return TS_E_INVAL;
    }
  } else {
    c->prompt = ts_defs_find_prompt(defs, cfg->prompt_name);
    if (!c->prompt) {
      snprintf(why, cap, "no prompt \"%s\" in the definitions", cfg->prompt_name);
      ts_compose_free(c);
      return TS_E_INVAL;
    }
  }
  int rc = read_back(c);
  if (rc) {
    snprintf(why, cap, "reading the thread back: %s", ts_store_errmsg(cfg->store));
    ts_compose_free(c);
    return rc;
  }
  *out = c;
  return TS_E_OK;
}

void ts_compose_free(ts_compose *c) {
  if (!c) return;
  for (size_t i = 0; i < c->ndt; i++) {
    ts_registry_free(c->dt[i].reg);
    free(c->dt[i].tool_env);
    free(c->dt[i].entries);
  }
  free(c->dt);
  ts_buf_fini(&c->system);
  free(c);
}

/* ---- tools of a driver ------------------------------------------------------------------ */

/* A function tool: the run's registry's tool, called through. */
static void fwd_exec(void *user, const ts_call_info *call, const char *args, size_t len,
                     ts_tool_result *out) {
  ts_tool_execute(user, call, args, len, out);
}

static int fwd_started(void *user, const char *json, size_t len, char *why, size_t cap) {
  int r = ts_tool_call_started(user, json, len, why, cap);
  return r < 0 ? r : 0;
}

/* A prompt or agent tool. */
typedef struct {
  ts_compose *c;
  const ts_defs_tool_entry *entry;
  const ts_defs_prompt *callee; /* a prompt tool; or the agent's sideA prompt */
  const ts_defs_agent *agent;   /* an agent tool */
  int handoff;                  /* 1: an ai_human agent called from a non-dual thread */
} call_tool;

static void run_child(call_tool *ct, const ts_call_info *call, const char *args, size_t len,
                      ts_tool_result *out);

static void handoff_exec(void *user, const ts_call_info *call, const char *args, size_t len,
                         ts_tool_result *out) {
  (void)call, (void)args, (void)len;
  call_tool *ct = user;
  ts_buf b;
  ts_buf_init(&b, 4096);
  const char *from = ct->c->agent ? ct->c->agent->name : ct->c->prompt->name;
  ts_buf_puts(&b, "{\"handoff\":{\"from\":");
  ts_buf_append_json_string(&b, from, strlen(from));
  ts_buf_puts(&b, ",\"to\":");
  ts_buf_append_json_string(&b, ct->agent->name, strlen(ct->agent->name));
  ts_buf_puts(&b, "}}");
  if (b.err) ts_tool_result_error(out, "out of memory");
  else ts_tool_result_json(out, b.p, b.len);
  ts_buf_fini(&b);
}

static void child_exec(void *user, const ts_call_info *call, const char *args, size_t len,
                       ts_tool_result *out) {
  run_child(user, call, args, len, out);
}

static int add_call_tool(ts_registry *reg, ts_compose *c, const ts_defs_tool_entry *e,
                         ts_defs_target tg, char *why, size_t cap) {
  call_tool *ct = calloc(1, sizeof *ct);
  if (!ct) return TS_E_NOMEM;
  ct->c = c;
  ct->entry = e;
  const char *desc = NULL;
  /* what ts_defs_check resolved (an agent that is not exposed may share a prompt's name) */
  const ts_defs_prompt *p = tg == TS_DEFS_TARGET_PROMPT ? ts_defs_find_prompt(c->defs, e->name)
                                                        : NULL;
  const ts_defs_agent *a = p ? NULL : ts_defs_find_agent(c->defs, e->name);
  if (p) {
    ct->callee = p;
    desc = p->tool_description;
  } else if (a) {
    ct->agent = a;
    ct->callee = side_prompt(c->defs, a, 0);
    desc = a->tool_description;
    ct->handoff = a->type == TS_DEFS_AI_HUMAN && !c->dual;
  }
  if (!ct->callee) {
    free(ct);
    snprintf(why, cap, "prompt \"%s\": tools entry \"%s\": no prompt or agent with a prompt "
             "of that name", c->prompt->name, e->name);
    return TS_E_INVAL;
  }
  ts_tool_spec s = {.name = e->name, .description = desc ? desc : "",
                    .args_schema = ct->callee->required_schema,
                    /* running it again resumes its child (compose.h) */
                    .idempotent = !ct->handoff,
                    .execute = ct->handoff ? handoff_exec : child_exec, .user = ct,
                    .user_free = free};
  int rc = ts_registry_add(reg, &s, why, cap);
  if (rc) free(ct);
  return rc;
}

static int add_function_tool(ts_registry *reg, const ts_registry *base,
                             const ts_defs_prompt *p, const ts_defs_tool_entry *e, char *why,
                             size_t cap) {
  const ts_tool *t = ts_registry_find(base, e->name, strlen(e->name));
  if (!t) {
    snprintf(why, cap, "prompt \"%s\": tools entry \"%s\": no tool of that name is loaded",
             p->name, e->name);
    return TS_E_INVAL;
  }
  size_t nv = 0;
  const ts_var_def *vars = ts_tool_vars(t, &nv);
  ts_tool_spec s = {.name = ts_tool_name(t), .description = ts_tool_description(t),
                    .args_schema = ts_tool_args_schema(t),
                    .progress_arg = ts_tool_progress_arg(t),
                    .annotations = ts_tool_annotations(t), .idempotent = ts_tool_idempotent(t),
                    .vars = vars, .n_vars = nv, .execute = fwd_exec,
                    .on_started = fwd_started, .user = (void *)t};
  return ts_registry_add(reg, &s, why, cap);
}

static int build_tools(ts_compose *c, driver_tools *d, char *why, size_t cap) {
  const ts_defs_prompt *p = d->prompt;
  d->reg = ts_registry_new();
  d->tool_env = calloc(1, sizeof *d->tool_env);
  d->entries = calloc(p->n_tools + 1, sizeof *d->entries);
  if (!d->reg || !d->tool_env || !d->entries) return TS_E_NOMEM;
  ts_var_layers base = {
      .agent = d->agent ? (const char *const *)d->agent->env : NULL,
      .n_agent = d->agent ? d->agent->n_env : 0,
      .prompt = (const char *const *)p->env, .n_prompt = p->n_env,
      .process_env = c->cfg->layers ? c->cfg->layers->process_env : 0};
  int rc = TS_E_OK;
  for (size_t i = 0; i < p->n_tools && !rc; i++) {
    const ts_defs_tool_entry *e = &p->tools[i];
    ts_defs_target tg = e->target;
    if (tg == TS_DEFS_TARGET_UNRESOLVED)
      tg = ts_defs_find_prompt(c->defs, e->name)  ? TS_DEFS_TARGET_PROMPT
           : ts_defs_find_agent(c->defs, e->name) ? TS_DEFS_TARGET_AGENT
                                                  : TS_DEFS_TARGET_FUNCTION;
    if (tg == TS_DEFS_TARGET_FUNCTION) {
      rc = add_function_tool(d->reg, c->cfg->reg, p, e, why, cap);
      if (!rc && e->n_env) { /* the entry's env: the tool layer (variables.h) */
        const char **v = realloc(d->tool_env, (d->n_tool_env + e->n_env + 1) * sizeof *v);
        if (!v) return TS_E_NOMEM;
        d->tool_env = v;
        for (size_t k = 0; k < e->n_env; k++) d->tool_env[d->n_tool_env++] = e->env[k];
        entry_layers *el = &d->entries[d->n_entries++];
        el->tool = ts_registry_find(d->reg, e->name, strlen(e->name));
        el->layers = base;
        el->layers.tool = (const char *const *)e->env;
        el->layers.n_tool = e->n_env;
      }
    } else {
      rc = add_call_tool(d->reg, c, e, tg, why, cap);
    }
  }
  if (!rc && d->agent) {
    const ts_defs_side *s = d->side ? &d->agent->side_b : &d->agent->side_a;
    rc = ts__compose_lifecycle_tools(d->reg, c->defs, d->agent, s, c->cfg, why, cap);
  }
  /* every entry's env together: for what has no tool of its own to ask for (a call
   * resumed after a crash: ts_dispatch_resume_env takes one set of layers) */
  d->sys_layers = base;
  d->layers = base;
  d->layers.tool = d->tool_env;
  d->layers.n_tool = d->n_tool_env;
  return rc;
}

/* The system text: the prompt's parts in order, an included prompt's parts in its place. */
static int system_parts(ts_compose *c, const ts_defs_prompt *p, ts_vars *vars,
                        const ts_var_layers *layers, unsigned depth, char *why, size_t cap) {
  if (depth > TS_COMPOSE_MAX_DEPTH) {
    snprintf(why, cap, "prompt \"%s\": included prompts nest too deep", p->name);
    return TS_E_LIMIT;
  }
  for (size_t i = 0; i < p->n_parts; i++) {
    const ts_defs_part *pt = &p->parts[i];
    if (pt->kind == TS_DEFS_PART_TEXT) {
      ts_buf_puts(&c->system, pt->text);
    } else if (pt->kind == TS_DEFS_PART_PROMPT) {
      const ts_defs_prompt *inc = ts_defs_find_prompt(c->defs, pt->text);
      if (!inc) {
        snprintf(why, cap, "prompt \"%s\": included prompt \"%s\" does not exist", p->name,
                 pt->text);
        return TS_E_INVAL;
      }
      int rc = system_parts(c, inc, vars, layers, depth + 1, why, cap);
      if (rc) return rc;
    } else {
      ts_var_def def = {pt->text, TS_VAR_TEXT, 0, 0, NULL};
      ts_var_value val;
      memset(&val, 0, sizeof val);
      int rc = ts_vars_resolve(vars, c->cfg->thread, &def, layers, &val);
      if (rc) {
        snprintf(why, cap, "prompt \"%s\": variable %s: %s", p->name, pt->text,
                 ts_vars_errmsg(vars));
        ts_var_value_fini(&val);
        return rc;
      }
      if (val.value && val.stored_type == TS_VAR_SECRET) {
        ts_var_value_fini(&val);
        snprintf(why, cap, "prompt \"%s\": variable %s is a secret: secrets are for tools "
                 "and never shown to a model", p->name, pt->text);
        return TS_E_INVAL;
      }
      if (val.value) ts_buf_append(&c->system, val.value, val.len);
      ts_var_value_fini(&val);
    }
  }
  return c->system.err;
}

/* What the driver declares goes on the thread (tools/variables.h), as a run's tools do
 * (agent/thread_env.h): its tools' variables, the prompt's and the agent's own, so that
 * `scoped` and `env list` see them. */
static int declare(ts_compose *c, const driver_tools *d, char *why, size_t cap) {
  ts_vars *v = NULL;
  int rc = ts_vars_open(c->cfg->store, NULL, &v);
  if (!rc) rc = ts_thread_env_declare(v, d->reg, c->cfg->thread);
  char by[TS_DEFS_NAME_MAX + 16];
  snprintf(by, sizeof by, "prompt %s", d->prompt->name);
  for (size_t i = 0; !rc && i < d->prompt->n_vars; i++)
    rc = ts_vars_declare(v, c->cfg->thread, &d->prompt->vars[i], by);
  if (d->agent) snprintf(by, sizeof by, "agent %s", d->agent->name);
  for (size_t i = 0; !rc && d->agent && i < d->agent->n_vars; i++)
    rc = ts_vars_declare(v, c->cfg->thread, &d->agent->vars[i], by);
  if (rc) snprintf(why, cap, "declaring the variables of prompt \"%s\": %s", d->prompt->name,
                   v ? ts_vars_errmsg(v) : ts_err_message(rc));
  ts_vars_free(v);
  return rc;
}

/* A required variable of the driving prompt or agent (tools-spec §3: execution cannot go
 * on until it resolves) without a value stops the run before its turn, naming it. */
static int check_required(ts_compose *c, const driver_tools *d, ts_vars *vars, char *why,
                          size_t cap) {
  for (int k = 0; k < 2; k++) {
    const ts_var_def *defs = k ? (d->agent ? d->agent->vars : NULL) : d->prompt->vars;
    size_t n = k ? (d->agent ? d->agent->n_vars : 0) : d->prompt->n_vars;
    for (size_t i = 0; i < n; i++) {
      if (!defs[i].required) continue;
      ts_var_value val;
      memset(&val, 0, sizeof val);
      int rc = ts_vars_locate(vars, c->cfg->thread, &defs[i], &d->sys_layers, &val);
      int found = val.source != TS_VAR_FROM_NONE;
      ts_var_value_fini(&val);
      if (rc) {
        snprintf(why, cap, "variable %s: %s", defs[i].name, ts_vars_errmsg(vars));
        return rc;
      }
      if (!found) {
        snprintf(why, cap, "%s \"%s\" requires the variable %s, which has no value on thread "
                 "%s (set it with `toolstream env set %s %s`, then --resume)",
                 k ? "agent" : "prompt", k ? d->agent->name : d->prompt->name, defs[i].name,
                 c->cfg->thread, c->cfg->thread, defs[i].name);
        c->missing = &defs[i];
        return TS_E_VAR_MISSING;
      }
    }
  }
  return TS_E_OK;
}

int ts_compose_driver_get(ts_compose *c, ts_compose_driver *out, char *why, size_t cap) {
  driver_tools *d = NULL;
  for (size_t i = 0; i < c->ndt && !d; i++)
    if (c->dt[i].prompt == c->prompt && c->dt[i].agent == c->agent && c->dt[i].side == c->side)
      d = &c->dt[i];
  if (!d) {
    driver_tools *v = realloc(c->dt, (c->ndt + 1) * sizeof *v);
    if (!v) return TS_E_NOMEM;
    c->dt = v;
    d = &c->dt[c->ndt++];
    memset(d, 0, sizeof *d);
    d->prompt = c->prompt;
    d->agent = c->agent;
    d->side = c->side;
    int rc = build_tools(c, d, why, cap);
    if (!rc) rc = declare(c, d, why, cap);
    if (rc) return rc;
  }
  ts_buf_reset(&c->system);
  c->missing = NULL;
  ts_vars *vars = NULL;
  int rc = ts_vars_open(c->cfg->store, NULL, &vars);
  if (!rc) rc = check_required(c, d, vars, why, cap);
  if (!rc) rc = system_parts(c, c->prompt, vars, &d->sys_layers, 0, why, cap);
  ts_vars_free(vars);
  if (rc) return rc;
  *out = (ts_compose_driver){c->prompt, c->agent, c->side, d->reg, &d->layers,
                             c->system.p ? c->system.p : "", c->prompt->model};
  return TS_E_OK;
}

ts_compose_next ts_compose_after_turn(ts_compose *c, int called, const char *tools,
                                      size_t tools_len, const char **from, const char **to) {
  *from = *to = NULL;
  if (c->dual) {
    char *names[TS_TAP_MAX_CALLS];
    size_t lens[TS_TAP_MAX_CALLS];
    int n = 0;
    for (size_t i = 0; called && i < tools_len && n < TS_TAP_MAX_CALLS;) {
      size_t l = strlen(tools + i);
      names[n] = (char *)tools + i;
      lens[n++] = l;
      i += l + 1;
    }
    int side = c->side;
    session_turn(c, side, n, names, lens);
    if (c->ended) return TS_COMPOSE_SESSION_END;
    c->prompt = side_prompt(c->defs, c->agent, c->side);
    return c->side != side ? TS_COMPOSE_NEXT_SIDE : TS_COMPOSE_GO_ON;
  }
  const ts_defs_agent *before = c->agent;
  const ts_defs_prompt *pbefore = c->prompt;
  if (called && read_back(c) == TS_E_OK && (c->agent != before || c->prompt != pbefore)) {
    *from = before ? before->name : pbefore->name;
    *to = c->agent->name;
    return TS_COMPOSE_HANDOFF;
  }
  return called ? TS_COMPOSE_GO_ON : TS_COMPOSE_DONE;
}

const ts_var_def *ts_compose_missing_var(const ts_compose *c) { return c ? c->missing : NULL; }

const ts_var_layers *ts_compose_tool_layers(const ts_compose *c, const ts_tool *tool) {
  for (size_t i = 0; i < c->ndt; i++) {
    const driver_tools *d = &c->dt[i];
    if (d->prompt != c->prompt || d->agent != c->agent || d->side != c->side) continue;
    for (size_t k = 0; k < d->n_entries; k++)
      if (d->entries[k].tool == tool) return &d->entries[k].layers;
    return &d->sys_layers; /* no env of its own: agent and prompt */
  }
  return NULL;
}

int ts_compose_ended(const ts_compose *c) { return c->ended; }

int ts_compose_driver_is_dual(const ts_compose *c) { return c->dual; }

void ts_compose_session_outcome(const ts_compose *c, ts_buf *out) {
  static const char *const status[] = {"open", "stopped", "failed", "max_session_turns"};
  ts_buf_puts(out, "\"status\":\"");
  ts_buf_puts(out, status[c->ended]);
  ts_buf_puts(out, "\",\"side\":\"");
  ts_buf_puts(out, (c->ended ? c->ended_side : c->side) ? "b" : "a");
  ts_buf_puts(out, "\"");
  if (c->end_tool[0]) {
    ts_buf_puts(out, ",\"tool\":");
    ts_buf_append_json_string(out, c->end_tool, strlen(c->end_tool));
  }
  ts_buf_puts(out, ",\"session_turns\":");
  ts_buf_append_u64(out, c->replies);
}

/* ---- children ------------------------------------------------------------------------------ */

void ts_compose_child_id(const char *thread, uint32_t turn, uint32_t index, char *out) {
  int n = snprintf(out, TS_THREAD_ID_MAX + 1, "%s/t%uc%u", thread, turn, index);
  if (n > 0 && n <= TS_THREAD_ID_MAX) return;
  /* FNV-1a over the three: deterministic, which is all a name needs here */
  uint64_t h = 1469598103934665603ull;
  for (const char *p = thread; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
  for (int k = 0; k < 8; k++) h = (h ^ (uint8_t)((k < 4 ? turn : index) >> (8 * (k % 4)))) *
                                  1099511628211ull;
  snprintf(out, TS_THREAD_ID_MAX + 1, "th_%016llx", (unsigned long long)h);
}

typedef struct {
  char ws[PATH_MAX];
  int has_ws;
  int has_user; /* the thread has a user message */
} thread_facts;

static int grab_ws(void *user, const ts_store_thread *t) {
  thread_facts *f = user;
  if (t->workspace) {
    snprintf(f->ws, sizeof f->ws, "%s", t->workspace);
    f->has_ws = 1;
  }
  return 0;
}

static int grab_user(void *user, const ts_store_message *m) {
  if (m->role == TS_STORE_USER) ((thread_facts *)user)->has_user = 1;
  return 0;
}

/* A prompt or agent tool's child: its thread_created event (agent/run.h, `prepare`). */
typedef struct {
  const ts_sink_config *sink;
  const char *parent, *agent, *name, *kind;
  int fresh; /* the child is new (not a resumed one) */
} child_created;

static ts_view view_of(const char *s) { return (ts_view){s, strlen(s)}; }

static int on_child_created(void *user, ts_store *store, const char *thread) {
  child_created *cr = user;
  if (!cr->fresh) return 0;
  ts_event ev;
  memset(&ev, 0, sizeof ev);
  ev.body.type = TS_EVENT_THREAD_CREATED;
  ev.agent = view_of(cr->agent);
  ev.name = view_of(cr->name);
  ev.relationship = view_of(cr->kind);
  ev.blocking = 1;
  ts_subagents_emit_on(cr->sink, store, thread, cr->parent, &ev);
  return 0;
}

static int mkdirs(const char *path) {
  char tmp[PATH_MAX];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      if (mkdir(tmp, 0755) && errno != EEXIST) return -1;
      *p = '/';
    }
  return mkdir(tmp, 0755) && errno != EEXIST ? -1 : 0;
}

/* The attachments of a call: each path (a string or an array of strings at `prop`) is
 * copied from the caller's filesystem into the child's /attachments/, its new path
 * appended to `msg`. Returns 0, or -1 with why (nothing is handed to the child then). */
static int attach(const char *from_ws, const char *to_ws, jdoc *a, const char *prop,
                  ts_buf *msg, char *why, size_t cap) {
  int v = ts_jv_get(&a->v, 0, prop);
  if (v < 0) return 0;
  int arr = ts_jv_type_of(&a->v, v) == TS_JV_ARRAY;
  int n = arr ? ts_jv_size(&a->v, v) : 1;
  if (!arr && ts_jv_type_of(&a->v, v) != TS_JV_STRING) {
    snprintf(why, cap, "argument %s: expected a path or an array of paths", prop);
    return -1;
  }
  if (n > TS_COMPOSE_MAX_ATTACHMENTS) {
    snprintf(why, cap, "argument %s: more than %d attachments", prop,
             TS_COMPOSE_MAX_ATTACHMENTS);
    return -1;
  }
  if (n && (!from_ws || !to_ws)) {
    snprintf(why, cap, "argument %s: the thread has no filesystem to attach from", prop);
    return -1;
  }
  ts_attach_batch batch = {0};
  batch.limits.files_max = TS_COMPOSE_MAX_ATTACHMENTS;
  batch.limits.file_max = TS_COMPOSE_MAX_ATTACHMENT_BYTES;
  int e = arr ? ts_jv_first(&a->v, v) : v;
  for (int k = 0; k < n; k++, e = ts_jv_skip(&a->v, e)) {
    ts_view p;
    if (ts_jv_type_of(&a->v, e) != TS_JV_STRING || ts_jv_str(&a->v, e, &p)) {
      snprintf(why, cap, "argument %s: an attachment path must be a string", prop);
      return -1;
    }
    /* the attachments module (agent/attachments.h): the path resolves inside the caller's
     * filesystem only, the copy never overwrites and is durable before the child sees it */
    char local[TS_ATTACH_PATH_MAX], err[512];
    if (ts_attach_copy(from_ws, p.p, p.len, to_ws, &batch, local, sizeof local, err,
                       sizeof err)) {
      snprintf(why, cap, "%s", err); /* it names the path */
      return -1;
    }
    ts_buf_puts(msg, k ? "\n" : "\n\n");
    ts_buf_puts(msg, "[attachment: ");
    ts_buf_puts(msg, local);
    ts_buf_puts(msg, "]");
  }
  return 0;
}

/* The child's first user message: the exact value of initUserMessageProperty (a string
 * as it is, any other value as its JSON text), else the whole arguments object. */
static void first_message(const ts_defs_subprompt *sub, jdoc *a, const char *args, size_t len,
                          ts_buf *msg) {
  int v = sub->init_user_message_property ? ts_jv_get(&a->v, 0, sub->init_user_message_property)
                                          : -1;
  if (v < 0) {
    ts_buf_append(msg, args, len);
    return;
  }
  ts_view s;
  if (ts_jv_type_of(&a->v, v) == TS_JV_STRING && ts_jv_str(&a->v, v, &s) == TS_E_OK) {
    ts_buf_append(msg, s.p, s.len);
  } else {
    ts_view raw = ts_jv_raw(&a->v, v);
    ts_buf_append(msg, raw.p, raw.len);
  }
}

/* The result from what the child stored. */
typedef struct {
  ts_buf *out;
  const ts_defs_subprompt *sub;
  int n;
} calls_out;

static int put_call(void *user, const ts_store_call_record *r) {
  calls_out *o = user;
  if (!r->finished || (r->result_is_error && !o->sub->include_errors)) return 0;
  if (o->n++) ts_buf_putc(o->out, ',');
  ts_buf_puts(o->out, "{\"id\":");
  ts_buf_append_json_string(o->out, r->start.call_id, strlen(r->start.call_id));
  ts_buf_puts(o->out, ",\"name\":");
  ts_buf_append_json_string(o->out, r->start.tool, strlen(r->start.tool));
  ts_buf_puts(o->out, ",\"arguments\":");
  ts_buf_append_json_compact(o->out, r->start.args, r->start.args_len);
  if (r->result_is_error) {
    ts_buf_puts(o->out, ",\"error\":");
    ts_buf_append_json_string(o->out, r->result, r->result_len);
  } else {
    ts_buf_puts(o->out, ",\"result\":");
    ts_buf_append_json_compact(o->out, r->result, r->result_len);
  }
  ts_buf_putc(o->out, '}');
  return 0;
}

typedef struct {
  ts_buf *out;
  int n;
} errors_out;

static int put_error(void *user, const ts_store_call_record *r) {
  errors_out *o = user;
  if (!r->finished || !r->result_is_error) return 0;
  if (o->n++) ts_buf_putc(o->out, ',');
  ts_buf_puts(o->out, "{\"tool\":");
  ts_buf_append_json_string(o->out, r->start.tool, strlen(r->start.tool));
  ts_buf_puts(o->out, ",\"error\":");
  ts_buf_append_json_string(o->out, r->result, r->result_len);
  ts_buf_putc(o->out, '}');
  return 0;
}

typedef struct {
  char *text;
  size_t len;
} last_text;

static int grab_text(void *user, const ts_store_message *m) {
  last_text *t = user;
  if (m->role != TS_STORE_ASSISTANT) return 0;
  jdoc d;
  jdoc_open(&d, m->content, m->content_len);
  ts_view s;
  if (d.ok && ts_jv_str(&d.v, ts_jv_get(&d.v, 0, "text"), &s) == TS_E_OK) {
    char *c = malloc(s.len + 1);
    if (c) {
      memcpy(c, s.p, s.len);
      c[s.len] = '\0';
      free(t->text);
      t->text = c;
      t->len = s.len;
    }
  }
  jdoc_close(&d);
  return 0;
}

static void run_child(call_tool *ct, const ts_call_info *call, const char *args, size_t len,
                      ts_tool_result *out) {
  ts_compose *c = ct->c;
  const ts_agent_config *pc = c->cfg;
  if (c->depth + 1 > TS_COMPOSE_MAX_DEPTH) {
    ts_tool_result_error(out, "%s: prompt tools nest deeper than %d", ct->entry->name,
                         TS_COMPOSE_MAX_DEPTH);
    return;
  }
  char child[TS_THREAD_ID_MAX + 1];
  ts_compose_child_id(call->thread, call->turn, call->index, child);
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", ts_store_path(pc->store));
  char *slash = strrchr(dir, '/');
  if (slash) *slash = '\0';
  ts_store *s1 = NULL, *s2 = NULL;
  char why[1024] = "";
  if (ts_store_open(dir, &s1, why, sizeof why) || ts_store_open(dir, &s2, why, sizeof why)) {
    ts_store_close(s1);
    ts_tool_result_error(out, "%s: cannot open the store: %s", ct->entry->name, why);
    return;
  }
  thread_facts parent = {0}, kid = {0};
  ts_store_thread_get(s1, call->thread, grab_ws, &parent);
  int exists = ts_store_thread_exists(s1, child) == 1;
  if (exists) {
    ts_store_thread_get(s1, child, grab_ws, &kid);
    ts_store_messages(s1, child, 0, grab_user, &kid);
  }
  char ws[PATH_MAX];
  if (kid.has_ws)
    snprintf(ws, sizeof ws, "%s", kid.ws);
  else if (parent.has_ws &&
           (size_t)snprintf(ws, sizeof ws, "%.*s/threads/t%uc%u", PATH_MAX - 64, parent.ws,
                            call->turn, call->index) >= sizeof ws)
    parent.has_ws = 0; /* too deep a tree of filesystems: the child gets none */
  const ts_defs_subprompt *sub = &ct->entry->sub;
  ts_buf msg;
  ts_buf_init(&msg, TS_COMPOSE_MAX_RESULT);
  jdoc a;
  jdoc_open(&a, args, len);
  int failed = !a.ok;
  if (failed) snprintf(why, sizeof why, "the arguments are not a JSON object");
  if (!failed && (parent.has_ws || kid.has_ws) && mkdirs(ws)) {
    snprintf(why, sizeof why, "cannot make the callee's workspace %.600s: %s", ws, strerror(errno));
    failed = 1;
  }
  if (!failed && !kid.has_user) {
    /* attachments are copied (durably) before the child exists to see them */
    first_message(sub, &a, args, len, &msg);
    if (sub->init_attachments_property)
      failed = attach(parent.has_ws ? parent.ws : NULL, parent.has_ws || kid.has_ws ? ws : NULL,
                      &a, sub->init_attachments_property, &msg, why, sizeof why) != 0;
    if (!failed && msg.err) {
      snprintf(why, sizeof why, "the first message is too long");
      failed = 1;
    }
  }
  jdoc_close(&a);
  if (failed) {
    ts_buf_fini(&msg);
    ts_store_close(s1);
    ts_store_close(s2);
    ts_tool_result_error(out, "%s: %s", ct->entry->name, why);
    return;
  }
  ts_agent_config cc = *pc;
  cc.store = s1;
  cc.dispatch_store = s2;
  cc.thread = child;
  cc.resume = exists;
  cc.prompt = kid.has_user ? NULL : msg.p;
  cc.parent = call->thread;
  cc.workspace = parent.has_ws || kid.has_ws ? ws : NULL;
  cc.layers = pc->layers;
  cc.cancel = (const volatile sig_atomic_t *)call->cancel;
  cc.agent = ct->agent ? ct->agent->name : NULL;
  cc.prompt_name = ct->agent ? NULL : ct->callee->name;
  if (ct->agent && ct->agent->type == TS_DEFS_DUAL_AI) {
    uint32_t m = ct->agent->max_session_turns ? ct->agent->max_session_turns
                                              : TS_DEFS_DEFAULT_SESSION_TURNS;
    cc.max_turns = m * TS_AGENT_MAX_TURNS;
  }
  const char *history =
      ct->callee->include_chat || ct->callee->include_past_tools ? call->thread : NULL;
  /* the tree on the bus (docs/events.md): a new child's first event names what it runs
   * (a prompt or agent tool's child is a blocking one, its relationship the kind of tool),
   * emitted once the loop has made the thread and before its own events are numbered */
  child_created cr = {.sink = &pc->sink,
                      .parent = call->thread,
                      .agent = ct->agent ? ct->agent->name : ct->callee->name,
                      .name = ct->entry->name,
                      .kind = ct->agent ? "agent_tool" : "prompt_tool",
                      .fresh = !exists};
  cc.prepare = on_child_created;
  cc.prepare_user = &cr;
  ts_event tev;
  ts_buf outcome;
  ts_buf_init(&outcome, 4096);
  char cwhy[1024] = "";
  int rc = ts__agent_run_nested(&cc, c->depth + 1, history, &outcome, cwhy,
                                        sizeof cwhy);
  /* a stopped child is not finished: --resume continues it (also one that stopped for a
   * required variable of its own prompt or agent: it waits for it) */
  int stopped = rc == TS_E_ABORTED || rc == TS_E_VAR_MISSING;
  if (!stopped) {
    memset(&tev, 0, sizeof tev);
    tev.body.type = TS_EVENT_THREAD_FINISHED;
    const char *st = rc == TS_E_OK ? "done" : rc == TS_E_LIMIT ? "max_turns" : "failed";
    tev.status = (ts_view){st, strlen(st)};
    if (outcome.len && !outcome.err) {
      /* the dual_ai outcome members, as an object */
      ts_buf ob;
      ts_buf_init(&ob, outcome.len + 2);
      ts_buf_putc(&ob, '{');
      ts_buf_append(&ob, outcome.p, outcome.len);
      ts_buf_putc(&ob, '}');
      if (!ob.err) tev.outcome = (ts_view){ob.p, ob.len};
      ts_subagents_emit_on(&pc->sink, s1, child, call->thread, &tev);
      ts_buf_fini(&ob);
    } else {
      ts_subagents_emit_on(&pc->sink, s1, child, call->thread, &tev);
    }
  }
  ts_buf_fini(&msg);
  if (stopped) {
    /* The call waits with its child (tools-spec §3: a call waiting for a variable is not
     * failed, and neither is the call waiting for that call's thread): no result, so a
     * resume runs this idempotent call again, which resumes the child where it stopped. */
    ts_buf_fini(&outcome);
    ts_store_close(s1);
    ts_store_close(s2);
    if (rc == TS_E_VAR_MISSING)
      ts_tool_result_suspend(out, rc, "%s: thread %s waits: %s", ct->entry->name, child, cwhy);
    else
      ts_tool_result_suspend(out, rc, "%s was stopped; its thread %s keeps what it did and "
                             "goes on with --resume", ct->entry->name, child);
    return;
  }
  ts_buf r;
  ts_buf_init(&r, TS_COMPOSE_MAX_RESULT);
  ts_buf_puts(&r, "{\"thread\":");
  ts_buf_append_json_string(&r, child, strlen(child));
  if (outcome.len) {
    ts_buf_putc(&r, ',');
    ts_buf_append(&r, outcome.p, outcome.len);
  } else {
    ts_buf_puts(&r, ",\"status\":");
    ts_buf_puts(&r, rc == TS_E_OK ? "\"done\"" : rc == TS_E_LIMIT ? "\"max_turns\"" : "\"failed\"");
  }
  if (sub->include_text_response) {
    /* the reply crosses back to the caller: the files it names that the child holds are
     * copied into the caller's filesystem and named by their caller-local paths (tools-spec
     * §6), listed in "attachments" when there are any */
    last_text t = {NULL, 0};
    ts_store_messages(s1, child, 0, grab_text, &t);
    ts_buf list;
    ts_buf_init(&list, (size_t)1 << 20);
    ts_buf_puts(&r, ",\"text\":");
    ts_attach_translate(t.text ? t.text : "", t.len, parent.has_ws || kid.has_ws ? ws : NULL,
                        parent.has_ws ? parent.ws : NULL, &r, &list);
    if (list.len) {
      ts_buf_puts(&r, ",\"attachments\":[");
      ts_buf_append(&r, list.p, list.len);
      ts_buf_putc(&r, ']');
    }
    ts_buf_fini(&list);
    free(t.text);
  }
  if (sub->include_tool_calls) {
    calls_out o = {&r, sub, 0};
    ts_buf_puts(&r, ",\"tool_calls\":[");
    ts_store_calls(s1, child, put_call, &o);
    ts_buf_putc(&r, ']');
  }
  if (sub->include_errors) {
    errors_out o = {&r, 0};
    ts_buf_puts(&r, ",\"errors\":[");
    ts_store_calls(s1, child, put_error, &o);
    if (rc != TS_E_OK) {
      if (o.n++) ts_buf_putc(&r, ',');
      ts_buf_puts(&r, "{\"error\":");
      ts_buf_append_json_string(&r, cwhy, strlen(cwhy));
      ts_buf_putc(&r, '}');
    }
    ts_buf_putc(&r, ']');
  }
  ts_buf_putc(&r, '}');
  if (r.err) ts_tool_result_error(out, "%s: the result is too large", ct->entry->name);
  else ts_tool_result_json(out, r.p, r.len);
  ts_buf_fini(&r);
  ts_buf_fini(&outcome);
  ts_store_close(s1);
  ts_store_close(s2);
}
