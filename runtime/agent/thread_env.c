/*
 * thread_env.c: see thread_env.h.
 *
 * Completing a parked turn reads the turn's calls back from its stored assistant message
 * (the run loop stores it as soon as a call parks, see docs/variables.md) and feeds them
 * to a fresh dispatcher as if the model had just streamed them: the dispatcher is the
 * one place that knows how a call waits, runs and commits, so a resumed turn cannot
 * behave differently from one that never stopped.
 */
#include "agent/thread_env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/conversation.h"

int ts_thread_env_declare(ts_vars *v, const ts_registry *reg, const char *thread) {
  char by[300];
  for (size_t i = 0; i < ts_registry_count(reg); i++) {
    const ts_tool *t = ts_registry_at(reg, i);
    size_t n;
    const ts_var_def *defs = ts_tool_vars(t, &n);
    snprintf(by, sizeof by, "tool %s", ts_tool_name(t));
    for (size_t k = 0; k < n; k++) {
      int r = ts_vars_declare(v, thread, &defs[k], by);
      if (r) return r;
    }
  }
  return TS_E_OK;
}

int ts_thread_env_is_secret(const ts_registry *reg, const char *name) {
  for (size_t i = 0; i < ts_registry_count(reg); i++) {
    const ts_var_def *d = ts_tool_var(ts_registry_at(reg, i), name);
    if (d && d->type == TS_VAR_SECRET) return 1;
  }
  return 0;
}

int ts_thread_env_check(ts_vars *v, const ts_registry *reg, const char *thread,
                        const ts_var_layers *layers, ts_thread_env_missing_cb cb, void *user) {
  int missing = 0;
  for (size_t i = 0; i < ts_registry_count(reg); i++) {
    const ts_tool *t = ts_registry_at(reg, i);
    size_t n;
    const ts_var_def *defs = ts_tool_vars(t, &n);
    for (size_t k = 0; k < n; k++) {
      if (!defs[k].required) continue;
      ts_var_value val;
      int r = ts_vars_resolve(v, thread, &defs[k], layers, &val);
      if (r) return r;
      int have = val.value != NULL;
      ts_var_value_fini(&val);
      if (!have) {
        missing++;
        if (cb && cb(user, t, &defs[k])) return TS_E_ABORTED;
      }
    }
  }
  return missing;
}

typedef struct {
  uint32_t turn, idx;
  int found;
} first_parked;

static int grab_parked(void *user, const ts_store_parked *p) {
  first_parked *f = user;
  if (!f->found || p->turn < f->turn || (p->turn == f->turn && p->idx < f->idx)) {
    f->turn = p->turn;
    f->idx = p->idx;
    f->found = 1;
  }
  return 0;
}

typedef struct {
  uint32_t from, n;
  struct {
    uint32_t index;
    char *id, *name, *args;
    size_t args_len;
  } v[TS_TAP_MAX_CALLS];
  int oom;
} turn_calls;

static char *dup_view(ts_view x) {
  char *s = malloc(x.len + 1);
  if (s) {
    memcpy(s, x.p, x.len);
    s[x.len] = '\0';
  }
  return s;
}

static int keep_call(void *user, uint32_t index, ts_view id, ts_view name, ts_view args) {
  turn_calls *c = user;
  if (index < c->from || c->n == TS_TAP_MAX_CALLS) return 0;
  c->v[c->n].index = index;
  c->v[c->n].id = dup_view(id);
  c->v[c->n].name = dup_view(name);
  c->v[c->n].args = args.p ? dup_view(args) : NULL; /* NULL: the arguments were unusable */
  c->v[c->n].args_len = args.len;
  if (!c->v[c->n].id || !c->v[c->n].name || (args.p && !c->v[c->n].args)) c->oom = 1;
  c->n++;
  return c->oom;
}

int ts_thread_env_complete_parked(ts_store *store, const ts_dispatch_config *base,
                                  uint32_t *turn_out) {
  first_parked f = {0, 0, 0};
  int rc = ts_store_parked_calls(store, base->thread, grab_parked, &f);
  if (rc < 0) return rc;
  if (!f.found) return 0;
  turn_calls *c = calloc(1, sizeof *c);
  if (!c) return TS_E_NOMEM;
  c->from = f.idx;
  rc = ts_conversation_turn_calls(store, base->thread, f.turn, keep_call, c);
  if (c->oom) rc = TS_E_NOMEM;
  if (rc > 0 && c->n) {
    ts_dispatch_config cfg = *base;
    cfg.store = store;
    cfg.turn = f.turn;
    cfg.first_index = f.idx;
    ts_dispatch *d = NULL;
    rc = ts_dispatch_new(&d, &cfg);
    if (rc == TS_E_OK) {
      for (uint32_t i = 0; i < c->n; i++) {
        ts_tap_event ev;
        memset(&ev, 0, sizeof ev);
        ev.is_call = 1;
        ev.index = c->v[i].index;
        ev.call_id = (ts_view){c->v[i].id, strlen(c->v[i].id)};
        ev.tool = (ts_view){c->v[i].name, strlen(c->v[i].name)};
        ev.type = TS_TAP_TOOL_CALL_STARTED;
        ts_dispatch_tap_event(d, &ev);
        if (c->v[i].args) {
          ev.type = TS_TAP_TOOL_CALL_READY;
          ev.arguments = (ts_view){c->v[i].args, c->v[i].args_len};
        } else { /* as the first run saw it: an error result, not a call with {} */
          static const char e[] = "the call's arguments were unusable (stored without them)";
          ev.type = TS_TAP_TOOL_CALL_ERROR;
          ev.error = (ts_view){e, sizeof e - 1};
        }
        ts_dispatch_tap_event(d, &ev);
      }
      rc = ts_dispatch_finish(d);
      ts_dispatch_free(d);
      if (rc == TS_E_OK) {
        rc = 1;
        if (turn_out) *turn_out = f.turn;
      }
    }
  } else if (rc > 0) {
    rc = 0;
  }
  for (uint32_t i = 0; i < c->n; i++) {
    free(c->v[i].id);
    free(c->v[i].name);
    free(c->v[i].args);
  }
  free(c);
  return rc;
}
