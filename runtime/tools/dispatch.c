/*
 * dispatch.c: see dispatch.h.
 *
 * One worker thread per turn. The tap's thread records calls under a mutex as their
 * events arrive; the worker waits on a condition variable until the call at `next` is
 * resolved (ready, or failed upstream), runs it outside the lock, commits it, and moves
 * on. So the order of execution is the index order by construction, and a call can start
 * while later ones are still streaming in.
 *
 * Stopping by signal: a signal handler can only set a flag, and the threads that could
 * look at it are busy (the worker inside a tool, the caller inside a model's stream or a
 * wait in ts_dispatch_finish). So when the caller gives a stop flag, a second small
 * thread, the watcher, looks at it every TS_DISPATCH_STOP_POLL_MS and turns it into a
 * cancel: the tool's flag goes up within that interval, wherever everyone else is. A call
 * parked for a variable (below) looks at the same flag in its wait and stops waiting: it
 * stays parked, and `run --resume` completes it.
 *
 * Resuming a turn: the caller streams the cut turn again and the worker runs it as usual;
 * the store tells which calls are already settled (their start record is finished, so
 * ts_store_call_started refuses them) and those are skipped, silently: the result that
 * was committed is the call's one result. The same holds for a parked turn completed after
 * a restart (first_index), and for ts_dispatch_resume. A dispatcher that is not resuming
 * treats such a call as the store error it is (a new turn never has one).
 */
#include "tools/dispatch.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { C_PENDING = 0, C_READY, C_FAILED, C_DONE };

typedef struct {
  uint8_t known, state;
  char *call_id, *tool;
  char *args; /* READY: the arguments JSON */
  size_t args_len;
  char *error; /* FAILED: why the arguments are unusable */
} dcall;

struct ts_dispatch {
  ts_dispatch_config cfg;
  char *thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  dcall *calls;
  uint32_t n, cap;
  uint32_t next; /* the index that runs next */
  uint32_t done;
  int finishing, store_err, have_worker, have_watcher, quit;
  volatile int cancel;
  pthread_t worker, watcher;
  ts_call_queue queue; /* state.queueTool's calls; only the worker touches it */
  ts_vars *vars;       /* the worker's resolver, on cfg.store */
  char stop_why[1024]; /* a suspended call's reason (worker-written before store_err) */
  int stop_code;       /* and its ts_result.suspended code */
};

static uint64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static char *dup_view(ts_view v) {
  char *s = malloc(v.len + 1);
  if (!s) return NULL;
  if (v.len) memcpy(s, v.p, v.len);
  s[v.len] = '\0';
  return s;
}

static void call_event(ts_event *ev, int type, uint32_t turn, uint32_t index,
                       const char *call_id, const char *tool) {
  memset(ev, 0, sizeof *ev);
  ev->body.type = (uint8_t)type;
  ev->body.is_call = 1;
  ev->body.turn = turn;
  ev->body.index = index;
  ev->body.call_id = (ts_view){call_id ? call_id : "", call_id ? strlen(call_id) : 0};
  ev->body.tool = (ts_view){tool ? tool : "", tool ? strlen(tool) : 0};
}

/* ---- a call's variables ------------------------------------------------------------ */

/* What env_get handed out during one call: kept until the call's result is redacted,
 * then wiped. */
#define CALL_ENV_MAX 64

typedef struct {
  ts_vars *vars;
  const ts_var_layers *layers;
  const char *thread;
  struct {
    const ts_tool *tool;
    const ts_var_def *def;
    ts_var_value v;
  } got[CALL_ENV_MAX];
  size_t n;
} call_env;

static int env_resolve(call_env *e, const ts_tool *tool, const ts_var_def *def,
                       ts_var_value **out) {
  for (size_t i = 0; i < e->n; i++)
    if (e->got[i].tool == tool && e->got[i].def == def) {
      *out = &e->got[i].v;
      return TS_E_OK;
    }
  if (e->n == CALL_ENV_MAX) return TS_E_LIMIT;
  int r = ts_vars_resolve(e->vars, e->thread, def, e->layers, &e->got[e->n].v);
  if (r) return r;
  e->got[e->n].tool = tool;
  e->got[e->n].def = def;
  *out = &e->got[e->n++].v;
  return TS_E_OK;
}

static int env_get(void *ctx, const struct ts_tool *tool, const char *name, const char **value,
                   size_t *len, char *why, size_t why_cap) {
  call_env *e = ctx;
  const ts_var_def *def = tool ? ts_tool_var(tool, name) : NULL;
  if (!def || !e->vars) return 0;
  ts_var_value *v;
  int r = env_resolve(e, tool, def, &v);
  if (r) {
    snprintf(why, why_cap, "variable %s: %s", name,
             r == TS_E_LIMIT ? "too many variables in one call" : ts_vars_errmsg(e->vars));
    return r;
  }
  if (!v->value) return 0;
  *value = v->value;
  *len = v->len;
  return 1;
}

/* Redacts every secret handed out during the call from the result, then wipes them. */
static void env_finish(call_env *e, ts_tool_result *res) {
  for (size_t i = 0; i < e->n; i++) {
    ts_var_value *v = &e->got[i].v;
    int secret = e->got[i].def->type == TS_VAR_SECRET || v->stored_type == TS_VAR_SECRET;
    if (secret && v->value && res->text && ts_vars_redact(&res->text, &res->len, v->value, v->len) < 0)
      ts_tool_result_error(res, "out of memory while redacting a secret from the result");
    ts_var_value_fini(v);
  }
  e->n = 0;
}

static void sleep_ms(uint32_t ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* How a call resolves its variables and waits for them. */
typedef struct {
  ts_vars *vars; /* NULL: no environment (no variable resolves, nothing parks) */
  const ts_var_layers *layers;
  const volatile int *cancel;
  const volatile sig_atomic_t *stop;
  uint32_t poll_ms;
  int resuming; /* a call that already has its result keeps it (ts_dispatch_config) */
  const ts_var_layers *(*tool_layers)(void *user, const ts_tool *tool); /* may be NULL */
  void *layers_user;
  const char *workspace; /* ts_call_info.workspace */
  char *stop_why;        /* may be NULL: where a suspended call's reason goes */
  size_t stop_why_cap;
  int *stop_code;        /* may be NULL: and its code */
} wait_opts;

/* The first required variable of `tool` without a value, or NULL (def of it). */
static const ts_var_def *missing_var(call_env *e, const ts_tool *tool, int *err) {
  size_t n;
  const ts_var_def *defs = ts_tool_vars(tool, &n);
  *err = 0;
  for (size_t i = 0; i < n; i++) {
    if (!defs[i].required) continue;
    ts_var_value *v;
    int r = env_resolve(e, tool, &defs[i], &v);
    if (r) {
      *err = r;
      return &defs[i];
    }
    if (!v->value) return &defs[i];
  }
  return NULL;
}

/* Forgets what a failed look-up cached, so the next look reads the store again. */
static void env_reset(call_env *e) {
  for (size_t i = 0; i < e->n; i++) ts_var_value_fini(&e->got[i].v);
  e->n = 0;
}

/* Parks the call until its tool's required variables resolve. Returns TS_E_OK (all
 * resolve: run it), 1 (the call already has a start record: skip it), TS_E_ABORTED
 * (stopped while waiting: it stays parked), or a store error. *var_err is set when a
 * variable could not be resolved at all (a key problem): the call then fails. */
static int await_vars(ts_store *store, call_env *e, const ts_tool *tool, uint32_t turn,
                      uint32_t index, const char *call_id, const char *args, size_t args_len,
                      const wait_opts *w, ts_dispatch_event_fn on_event, void *user,
                      char *var_err, size_t var_err_cap) {
  const ts_var_def *last = NULL;
  uint64_t seen = 0;
  ts_store_data_version(store, &seen);
  for (;;) {
    int err;
    const ts_var_def *m = missing_var(e, tool, &err);
    if (!m) return TS_E_OK;
    if (err) {
      snprintf(var_err, var_err_cap, "variable %s: %s", m->name,
               err == TS_E_LIMIT ? "too many variables in one call" : ts_vars_errmsg(e->vars));
      return TS_E_OK;
    }
    env_reset(e);
    if (m != last) { /* newly missing: park durably, then say so */
      int rc = ts_store_call_park(store, e->thread, turn, index, call_id ? call_id : "",
                                  ts_tool_name(tool), args, args_len, m->name);
      if (rc == TS_E_STORE_CALL_FINISHED) return 1;
      if (rc) return rc;
      ts_event ev;
      call_event(&ev, TS_EVENT_VARIABLE_REQUIRED, turn, index, call_id, ts_tool_name(tool));
      ev.var_name = (ts_view){m->name, strlen(m->name)};
      ev.var_description = (ts_view){m->description ? m->description : "",
                                     m->description ? strlen(m->description) : 0};
      ev.var_secret = m->type == TS_VAR_SECRET;
      if (on_event) on_event(user, &ev);
      last = m;
    }
    /* Wait for a commit by anyone else (data_version moves), in short sleeps so that a
     * stop is seen quickly. */
    for (;;) {
      if ((w->cancel && *w->cancel) || (w->stop && *w->stop)) return TS_E_ABORTED;
      sleep_ms(w->poll_ms < 20 ? w->poll_ms : 20);
      uint64_t now = 0;
      if (ts_store_data_version(store, &now) == TS_E_OK && now != seen) {
        seen = now;
        break;
      }
    }
  }
}

/* Runs one call (or resolves it as an error) and commits it: the body shared by the
 * dispatcher and resume. `upstream_error`: the arguments were unusable. Returns
 * TS_E_OK (also, when w->resuming, for a call an earlier run committed: skipped),
 * TS_E_ABORTED (stopped while parked), or the store's error. */
static int run_one(ts_store *store, const ts_registry *reg, const char *thread, uint32_t turn,
                   uint32_t index, const char *call_id, const char *tool_name, const char *args,
                   size_t args_len, const char *upstream_error, const char *forced_error,
                   ts_dispatch_event_fn on_event, void *user, int record_start,
                   ts_call_queue *queue, const wait_opts *w) {
  int rc;
  const ts_tool *tool = tool_name ? ts_registry_find(reg, tool_name, strlen(tool_name)) : NULL;
  char why[512], var_err[600] = "";
  int valid = 0;
  if (!forced_error && !upstream_error && tool)
    valid = ts_tool_validate(tool, args, args_len, why, sizeof why) == TS_E_OK;
  call_env env;
  memset(&env, 0, sizeof env);
  env.vars = w->vars;
  env.layers = w->tool_layers && tool ? w->tool_layers(w->layers_user, tool) : NULL;
  if (!env.layers) env.layers = w->layers;
  env.thread = thread;
  if (valid && w->vars && record_start) {
    rc = await_vars(store, &env, tool, turn, index, call_id, args, args_len, w, on_event, user,
                    var_err, sizeof var_err);
    env_reset(&env);
    if (rc == 1) /* the call already has a result: kept when resuming, else a store error */
      return w->resuming ? TS_E_OK : TS_E_STORE_CALL_FINISHED;
    if (rc) return rc;
  }
  if (record_start) {
    rc = ts_store_call_started(store, thread, turn, index, call_id ? call_id : "",
                               tool_name ? tool_name : "", args ? args : "{}",
                               args ? args_len : 2, NULL);
    if (rc == TS_E_STORE_CALL_FINISHED && w->resuming) return TS_E_OK; /* it has its result */
    if (rc) return rc;
  }
  ts_event ev;
  call_event(&ev, TS_EVENT_TOOL_EXECUTION_STARTED, turn, index, call_id, tool_name);
  if (on_event) on_event(user, &ev);
  uint64_t t0 = now_us();
  ts_tool_result res;
  memset(&res, 0, sizeof res);
  if (forced_error) {
    ts_tool_result_error(&res, "%s", forced_error);
  } else if (upstream_error) {
    ts_tool_result_error(&res, "the call's arguments are unusable: %s", upstream_error);
  } else if (!tool) {
    ts_tool_result_error(&res, "unknown tool \"%s\"", tool_name ? tool_name : "");
  } else if (!valid) {
    ts_tool_validate(tool, args, args_len, why, sizeof why);
    ts_tool_result_error(&res, "invalid arguments: %s", why);
  } else if (var_err[0]) {
    ts_tool_result_error(&res, "%s", var_err);
  } else {
    ts_call_info info = {thread, turn, index, call_id ? call_id : "", tool_name, w->cancel, queue,
                         0, w->vars ? env_get : NULL, &env, w->workspace};
    ts_tool_execute(tool, &info, args, args_len, &res);
  }
  env_finish(&env, &res); /* secrets out of the result before it is stored or sent */
  if (res.suspended) {
    /* a thread the call waits on stopped (registry.h): no result, the start record stays
     * open and a resume runs the call again; the turn stops here, in order */
    if (w->stop_why && w->stop_why_cap)
      snprintf(w->stop_why, w->stop_why_cap, "%s", res.text ? res.text : "suspended");
    if (w->stop_code) *w->stop_code = res.suspended;
    ts_tool_result_free(&res);
    return TS_E_ABORTED;
  }
  uint64_t dt = now_us() - t0;
  const char *text = res.text ? res.text : "out of memory";
  size_t len = res.text ? res.len : strlen(text);
  rc = ts_store_call_finished(store, thread, turn, index, text, len, res.is_error || !res.text,
                              NULL);
  if (rc == TS_E_OK) {
    call_event(&ev, TS_EVENT_TOOL_RESULT, turn, index, call_id, tool_name);
    ev.is_error = (uint8_t)(res.is_error || !res.text);
    ev.duration_us = dt;
    ev.result = (ts_view){text, len};
    if (on_event) on_event(user, &ev);
  }
  ts_tool_result_free(&res);
  return rc;
}

static void *worker(void *arg) {
  ts_dispatch *d = arg;
  pthread_mutex_lock(&d->mu);
  for (;;) {
    if (d->cfg.stop && *d->cfg.stop) d->cancel = 1; /* before the watcher has looked */
    if (d->cancel || d->store_err) break;
    int runnable = d->next < d->n &&
                   (d->calls[d->next].state != C_PENDING || d->finishing) &&
                   (d->cfg.pipelined || d->finishing);
    if (!runnable) {
      if (d->finishing && d->next >= d->n) break;
      pthread_cond_wait(&d->cv, &d->mu);
      continue;
    }
    dcall *c = &d->calls[d->next];
    uint32_t index = d->next;
    /* Everything the call needs is owned by the dcall, which only this thread frees
     * (in ts_dispatch_free, after joining), so it can be used unlocked. */
    char *call_id = c->call_id, *tool = c->tool, *args = c->args, *error = c->error;
    size_t args_len = c->args_len;
    int state = c->state, known = c->known;
    pthread_mutex_unlock(&d->mu);
    const char *forced = NULL;
    if (state == C_PENDING)
      forced = known ? "the call's arguments never completed before the turn ended"
                     : "the call never arrived before the turn ended";
    wait_opts w = {d->vars, d->cfg.layers, &d->cancel, d->cfg.stop,
                   d->cfg.poll_ms ? d->cfg.poll_ms : TS_DISPATCH_POLL_MS, d->cfg.resuming,
                   d->cfg.tool_layers, d->cfg.user, d->cfg.workspace, d->stop_why,
                   sizeof d->stop_why, &d->stop_code};
    int rc = run_one(d->cfg.store, d->cfg.reg, d->thread, d->cfg.turn, index, call_id, tool,
                     args, args_len, state == C_FAILED ? error : NULL, forced, d->cfg.on_event,
                     d->cfg.user, 1, &d->queue, &w);
    /* What the call queued runs now, before the model's next call, first in first out;
     * what those queue joins the end. Index TS_DISPATCH_QUEUED_BASE + k keeps them apart from the
     * model's calls in the store. */
    while (rc == TS_E_OK && d->queue.head < d->queue.n && !d->cancel) {
      size_t k = d->queue.head++;
      char qid[64];
      snprintf(qid, sizeof qid, "queued_%u_%zu", d->cfg.turn, k + 1);
      const ts_queued_call *qc = &d->queue.v[k];
      char *qtool = qc->tool, *qargs = qc->args; /* stable: the queue may grow meanwhile */
      size_t qlen = qc->args_len;
      rc = run_one(d->cfg.store, d->cfg.reg, d->thread, d->cfg.turn,
                   (uint32_t)(TS_DISPATCH_QUEUED_BASE + k), qid, qtool, qargs, qlen, NULL, NULL,
                   d->cfg.on_event, d->cfg.user, 1, &d->queue, &w);
    }
    pthread_mutex_lock(&d->mu);
    if (rc) {
      d->store_err = rc;
      break;
    }
    d->calls[index].state = C_DONE;
    d->next++;
    d->done++;
  }
  pthread_cond_broadcast(&d->cv);
  pthread_mutex_unlock(&d->mu);
  return NULL;
}

/* Turns the caller's stop flag into a cancel (see the essay), until the dispatcher goes. */
static void *watcher(void *arg) {
  ts_dispatch *d = arg;
  pthread_mutex_lock(&d->mu);
  while (!d->quit) {
    if (*d->cfg.stop && !d->cancel) {
      d->cancel = 1;
      pthread_cond_broadcast(&d->cv);
    }
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += TS_DISPATCH_STOP_POLL_MS * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&d->cv, &d->mu, &until);
  }
  pthread_mutex_unlock(&d->mu);
  return NULL;
}

/* Every call the tap can report must have a record here, or it would never get a result. */
_Static_assert(TS_TAP_MAX_CALLS <= TS_DISPATCH_MAX_CALLS, "a tap call index without a record");

int ts_dispatch_new(ts_dispatch **out, const ts_dispatch_config *cfg) {
  if (!out || !cfg || !cfg->store || !cfg->reg || !cfg->thread) return TS_E_INVAL;
  ts_dispatch *d = calloc(1, sizeof *d);
  if (!d) return TS_E_NOMEM;
  d->cfg = *cfg;
  d->thread = strdup(cfg->thread);
  if (!d->thread) {
    free(d);
    return TS_E_NOMEM;
  }
  pthread_mutex_init(&d->mu, NULL);
  pthread_cond_init(&d->cv, NULL);
  d->next = cfg->first_index;
  if (cfg->first_index > d->n) d->n = cfg->first_index;
  if (ts_vars_open(cfg->store, NULL, &d->vars) != TS_E_OK) {
    ts_dispatch_free(d);
    return TS_E_NOMEM;
  }
  /* pthread_create fails only for want of resources (EAGAIN) with default attributes */
  if (pthread_create(&d->worker, NULL, worker, d) != 0) {
    ts_dispatch_free(d);
    return TS_E_NOMEM;
  }
  d->have_worker = 1;
  if (cfg->stop) {
    if (pthread_create(&d->watcher, NULL, watcher, d) != 0) {
      ts_dispatch_free(d);
      return TS_E_NOMEM;
    }
    d->have_watcher = 1;
  }
  *out = d;
  return TS_E_OK;
}

/* The record for `index`, growing the table; NULL on out of memory or an absurd index. */
static dcall *slot(ts_dispatch *d, uint32_t index) {
  if (index >= TS_DISPATCH_MAX_CALLS) return NULL;
  if (index >= d->cap) {
    uint32_t cap = d->cap ? d->cap : 8;
    while (cap <= index) cap *= 2;
    dcall *v = realloc(d->calls, cap * sizeof *v);
    if (!v) return NULL;
    memset(v + d->cap, 0, (cap - d->cap) * sizeof *v);
    d->calls = v;
    d->cap = cap;
  }
  if (index >= d->n) d->n = index + 1;
  return &d->calls[index];
}

void ts_dispatch_tap_event(ts_dispatch *d, const ts_tap_event *ev) {
  if (!ev->is_call) return;
  if (ev->type != TS_TAP_TOOL_CALL_STARTED && ev->type != TS_TAP_TOOL_CALL_READY &&
      ev->type != TS_TAP_TOOL_CALL_ERROR)
    return;
  pthread_mutex_lock(&d->mu);
  dcall *c = slot(d, ev->index);
  if (c && c->state == C_PENDING) {
    if (!c->known) {
      c->known = 1;
      c->call_id = dup_view(ev->call_id);
      c->tool = dup_view(ev->tool);
    }
    if (ev->type == TS_TAP_TOOL_CALL_READY) {
      c->args = dup_view(ev->arguments);
      c->args_len = ev->arguments.len;
      c->state = c->args ? C_READY : C_FAILED;
      if (!c->args) c->error = strdup("out of memory");
    } else if (ev->type == TS_TAP_TOOL_CALL_ERROR) {
      c->error = dup_view(ev->error);
      c->state = C_FAILED;
    }
    pthread_cond_broadcast(&d->cv);
  }
  pthread_mutex_unlock(&d->mu);
}

int ts_dispatch_finish(ts_dispatch *d) {
  pthread_mutex_lock(&d->mu);
  d->finishing = 1;
  pthread_cond_broadcast(&d->cv);
  while (!(d->next >= d->n || d->cancel || d->store_err))
    pthread_cond_wait(&d->cv, &d->mu);
  int rc = d->store_err ? d->store_err : d->cancel ? TS_E_ABORTED : TS_E_OK;
  pthread_mutex_unlock(&d->mu);
  return rc;
}

void ts_dispatch_cancel(ts_dispatch *d) {
  pthread_mutex_lock(&d->mu);
  d->cancel = 1;
  pthread_cond_broadcast(&d->cv);
  pthread_mutex_unlock(&d->mu);
}

const char *ts_dispatch_stop_reason(const ts_dispatch *d, int *code) {
  pthread_mutex_lock((pthread_mutex_t *)&d->mu);
  const char *r = d->store_err == TS_E_ABORTED && d->stop_code ? d->stop_why : NULL;
  if (code) *code = r ? d->stop_code : 0;
  pthread_mutex_unlock((pthread_mutex_t *)&d->mu);
  return r;
}

uint32_t ts_dispatch_done_count(const ts_dispatch *d) {
  pthread_mutex_lock((pthread_mutex_t *)&d->mu);
  uint32_t n = d->done;
  pthread_mutex_unlock((pthread_mutex_t *)&d->mu);
  return n;
}

void ts_dispatch_free(ts_dispatch *d) {
  if (!d) return;
  if (d->have_worker) {
    pthread_mutex_lock(&d->mu);
    if (!(d->finishing && d->next >= d->n)) d->cancel = 1;
    d->finishing = 1;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    pthread_join(d->worker, NULL);
  }
  if (d->have_watcher) {
    pthread_mutex_lock(&d->mu);
    d->quit = 1;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    pthread_join(d->watcher, NULL);
  }
  for (uint32_t i = 0; i < d->cap; i++) {
    free(d->calls[i].call_id);
    free(d->calls[i].tool);
    free(d->calls[i].args);
    free(d->calls[i].error);
  }
  free(d->calls);
  ts_call_queue_fini(&d->queue);
  ts_vars_free(d->vars);
  free(d->thread);
  pthread_cond_destroy(&d->cv);
  pthread_mutex_destroy(&d->mu);
  free(d);
}

/* ---- resume -------------------------------------------------------------------------- */

typedef struct {
  ts_store_call *v;
  size_t n, cap;
  int oom;
} call_list;

static int collect(void *user, const ts_store_call *c) {
  call_list *l = user;
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 8;
    ts_store_call *v = realloc(l->v, cap * sizeof *v);
    if (!v) {
      l->oom = 1;
      return 1;
    }
    l->v = v;
    l->cap = cap;
  }
  ts_store_call k = *c;
  k.call_id = strdup(c->call_id ? c->call_id : "");
  k.tool = strdup(c->tool ? c->tool : "");
  char *a = malloc(c->args_len + 1);
  if (a) {
    memcpy(a, c->args, c->args_len);
    a[c->args_len] = '\0';
  }
  k.args = a;
  if (!k.call_id || !k.tool || !a) {
    free((char *)k.call_id);
    free((char *)k.tool);
    free(a);
    l->oom = 1;
    return 1;
  }
  l->v[l->n++] = k;
  return 0;
}

int ts_dispatch_resume(ts_store *store, const ts_registry *reg, const char *thread,
                       ts_dispatch_event_fn on_event, void *user, uint32_t *resolved) {
  return ts_dispatch_resume_env(store, reg, thread, NULL, on_event, user, resolved);
}

int ts_dispatch_resume_env(ts_store *store, const ts_registry *reg, const char *thread,
                           const ts_var_layers *layers, ts_dispatch_event_fn on_event,
                           void *user, uint32_t *resolved) {
  return ts_dispatch_resume_stop(store, reg, thread, layers, NULL, NULL, 0, NULL, on_event,
                                 user, resolved);
}

/* The stop flag doubles as the re-run tool's cancel flag (there is no watcher thread here
 * to copy one into the other): both are ints the caller only ever sets. */
_Static_assert(sizeof(sig_atomic_t) == sizeof(int), "a stop flag read as a cancel flag");

int ts_dispatch_resume_stop(ts_store *store, const ts_registry *reg, const char *thread,
                            const ts_var_layers *layers, const volatile sig_atomic_t *stop,
                            char *why, size_t why_cap, int *code,
                            ts_dispatch_event_fn on_event, void *user, uint32_t *resolved) {
  call_list l = {0};
  if (why && why_cap) why[0] = '\0';
  if (code) *code = 0;
  ts_vars *vars = NULL;
  if (ts_vars_open(store, NULL, &vars) != TS_E_OK) return TS_E_NOMEM;
  int rc = ts_store_unfinished_calls(store, thread, collect, &l); /* >= 0: how many */
  if (l.oom) rc = TS_E_NOMEM;
  if (rc > 0) rc = TS_E_OK;
  uint32_t count = 0;
  static const int no_cancel = 0;
  /* a call another process committed meanwhile keeps its result */
  wait_opts w = {vars, layers, stop ? (const volatile int *)stop : &no_cancel, stop,
                 TS_DISPATCH_POLL_MS, 1, NULL, NULL, NULL, why, why_cap, code};
  for (size_t i = 0; i < l.n && rc == TS_E_OK; i++) {
    ts_store_call *c = &l.v[i];
    const ts_tool *tool = ts_registry_find(reg, c->tool, strlen(c->tool));
    if (tool && ts_tool_idempotent(tool)) {
      /* Safe to run again: record the new attempt and run it. */
      rc = run_one(store, reg, thread, c->turn, c->idx, c->call_id, c->tool, c->args,
                   c->args_len, NULL, NULL, on_event, user, 1, NULL, &w);
    } else {
      char msg[256];
      snprintf(msg, sizeof msg,
               "interrupted: toolstream stopped while this call was running (attempt %u); it "
               "may or may not have taken effect, and it was not run again",
               c->attempts);
      rc = run_one(store, reg, thread, c->turn, c->idx, c->call_id, c->tool, c->args,
                   c->args_len, NULL, msg, on_event, user, 0, NULL, &w);
    }
    if (rc == TS_E_OK) count++;
  }
  for (size_t i = 0; i < l.n; i++) {
    free((char *)l.v[i].call_id);
    free((char *)l.v[i].tool);
    free((char *)l.v[i].args);
  }
  free(l.v);
  ts_vars_free(vars);
  if (resolved) *resolved = count;
  return rc;
}
