/*
 * run.c: the agent loop (run.h).
 *
 * Per turn the loop owns a tap and a dispatcher, and sits between them: each tap event
 * goes to the sink first (so tool_call_started is out before anything runs) and then
 * to the dispatcher, which may start the call on its worker at once. The dispatcher's
 * own events (execution started, result) come back from the worker thread into the same
 * sink, which numbers them in one sequence with the tap's.
 *
 * The loop's store connection is shared by two threads: the loop stores messages on it,
 * and the sink stores every event on it, also from the dispatcher's worker. One SQLite
 * connection must not interleave two transactions, so both go through `store_mu`. The
 * sink takes its own mutex and then store_mu (in store_event); the loop takes only
 * store_mu: one lock order, no deadlock.
 *
 * The assistant message of a turn is stored after the turn, once every call the tap
 * reported (ready or failed) has its result, so a later request pairs each result with
 * its call. That message is the mark of a finished turn. A turn cut before it (a kill,
 * Ctrl-C) has no message yet, only the results committed so far; `--resume` streams that
 * turn again from the backend and runs it with a resuming dispatcher, which keeps the
 * committed results and runs the calls that have none, in order. So whatever the moment
 * of the cut, every call of the turn ends with exactly one result, and the message lists
 * them all. The tool results after the thread's last assistant message are thus the cut
 * turn's: their call ids are the calls' own again (not "taken"), and the tap's events of
 * those calls are not sent out a second time (the text of the turn is).
 *
 * A thread whose last assistant message calls no tool is finished: resuming it without a
 * new prompt runs nothing and succeeds.
 */
#include "agent/run.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "base/strbuf.h"
#include "tools/dispatch.h"

typedef struct {
  const ts_agent_config *cfg;
  pthread_mutex_t store_mu;
  ts_sink *sink;
  ts_dispatch *disp;
  /* the turn being streamed */
  ts_buf text;
  ts_buf calls; /* JSON array items of the assistant's tool calls */
  uint32_t ncalls;
  double started_ms[TS_TAP_MAX_CALLS];
  uint64_t started_off[TS_TAP_MAX_CALLS];
  ts_agent_stats *st;
  ts_buf settled_ids; /* resuming a cut turn: ids of its calls with a result (NUL-separated) */
} loop;

static int id_in(const ts_buf *b, const char *id, size_t len);

static int cancelled(const loop *l) { return l->cfg->cancel && *l->cfg->cancel; }

/* tools-spec §7's tool_call_started hook, at the moment the event went out: the tool's own
 * (a JavaScript module's onToolCallStarted), then the embedder's. A failing hook is one
 * line on standard error; the call goes on. */
static void on_emitted(void *user, const ts_event *ev, const char *json, size_t len) {
  loop *l = user;
  if (ev->body.type != TS_EVENT_TOOL_CALL_STARTED) return;
  const ts_tool *t = ts_registry_find(l->cfg->reg, ev->body.tool.p, ev->body.tool.len);
  char why[512] = "";
  if (ts_tool_call_started(t, json, len, why, sizeof why) < 0)
    fprintf(stderr, "toolstream: tool_call_started hook: %s\n", why);
  if (l->cfg->on_tool_call_started) l->cfg->on_tool_call_started(l->cfg->hook_user, json, len);
}

static int store_event(void *user, const char *thread, uint64_t seq, const char *json,
                       size_t len) {
  loop *l = user;
  pthread_mutex_lock(&l->store_mu);
  int rc = ts_store_append_event(l->cfg->store, thread, seq, json, len);
  pthread_mutex_unlock(&l->store_mu);
  return rc;
}

static void on_dispatch_event(void *user, const ts_event *e) {
  loop *l = user;
  ts_sink_emit(l->sink, e); /* a store failure is sticky in the sink; checked per turn */
}

/* Collects what the summary and the assistant message need, then sink, then dispatcher. */
static int on_tap_event(void *user, const ts_tap_event *e) {
  loop *l = user;
  if (e->is_call && e->index < TS_TAP_MAX_CALLS) {
    if (e->type == TS_TAP_TOOL_CALL_STARTED) {
      l->started_ms[e->index] = ts_clock_ms();
      l->started_off[e->index] = e->offset;
    } else if (e->type == TS_TAP_TOOL_CALL_READY) {
      l->st->early_ms_sum += ts_clock_ms() - l->started_ms[e->index];
      l->st->early_bytes_sum += e->offset - l->started_off[e->index];
    }
  }
  if (e->type == TS_TAP_TEXT_DELTA) ts_buf_append(&l->text, e->text.p, e->text.len);
  /* a call of a resumed turn that already has its result: its events went out the
   * first time; the dispatcher keeps the result */
  int settled = e->is_call && l->settled_ids.len && id_in(&l->settled_ids, e->call_id.p,
                                                          e->call_id.len);
  if (e->type == TS_TAP_TOOL_CALL_READY || e->type == TS_TAP_TOOL_CALL_ERROR) {
    if (l->ncalls++) ts_buf_putc(&l->calls, ',');
    ts_buf_puts(&l->calls, "{\"id\":");
    ts_buf_append_json_string(&l->calls, e->call_id.p, e->call_id.len);
    ts_buf_puts(&l->calls, ",\"name\":");
    ts_buf_append_json_string(&l->calls, e->tool.p, e->tool.len);
    ts_buf_puts(&l->calls, ",\"arguments\":");
    if (e->type == TS_TAP_TOOL_CALL_READY)
      ts_buf_append(&l->calls, e->arguments.p, e->arguments.len);
    else
      ts_buf_puts(&l->calls, "null");
    ts_buf_putc(&l->calls, '}');
  }
  if (!settled) ts_sink_emit_tap(l->sink, e);
  ts_dispatch_tap_event(l->disp, e);
  return cancelled(l);
}

static const char *progress_of(void *user, const char *tool, size_t len, size_t *arg_len) {
  const loop *l = user;
  if (l->cfg->progress) { /* --progress-arg wins over the tool's own declaration */
    const ts_tool_def *d = ts_tool_defs_find(l->cfg->progress, tool, len);
    if (d && d->progress_arg) {
      *arg_len = strlen(d->progress_arg);
      return d->progress_arg;
    }
  }
  const ts_tool *t = ts_registry_find(l->cfg->reg, tool, len);
  const char *a = t ? ts_tool_progress_arg(t) : NULL;
  if (a) *arg_len = strlen(a);
  return a;
}

static int count_assistant(void *user, const ts_store_message *m) {
  if (m->role == TS_STORE_ASSISTANT) (*(uint32_t *)user)++;
  return 0;
}

/* The call ids of the thread's finished turns, NUL-separated: every call got a tool-result
 * message quoting its id. A provider that sends one of them again gets a fresh id from the
 * tap (call ids are unique within a thread, stream/tap.h "Call ids"). The results after
 * the last assistant message are a cut turn's (see the essay): their ids go to `tail`. */
typedef struct {
  ts_buf *ids, *tail;
  size_t kept; /* ids->len at the last assistant message */
} id_scan;

static int collect_call_id(void *user, const ts_store_message *m) {
  id_scan *s = user;
  if (m->role == TS_STORE_ASSISTANT) s->kept = s->ids->len;
  if (m->role == TS_STORE_TOOL && m->tool_call_id && *m->tool_call_id)
    ts_buf_append(s->ids, m->tool_call_id, strlen(m->tool_call_id) + 1);
  return 0;
}

/* Splits the scan: ids up to the last assistant message stay taken, the rest move to tail. */
static void split_ids(id_scan *s) {
  if (s->tail && s->ids->len > s->kept)
    ts_buf_append(s->tail, s->ids->p + s->kept, s->ids->len - s->kept);
  s->ids->len = s->kept;
}

static int id_in(const ts_buf *b, const char *id, size_t len) {
  for (size_t i = 0; i < b->len;) {
    size_t n = strlen(b->p + i);
    if (n == len && !memcmp(b->p + i, id, len)) return 1;
    i += n + 1;
  }
  return 0;
}

static int call_id_taken(void *user, const char *id, size_t len) { return id_in(user, id, len); }

/* What a resume finds: whether the last assistant message called no tool and nothing of a
 * later turn is stored (the thread is finished). */
typedef struct {
  int assistant_seen, last_called, tail;
} thread_state;

static int scan_state(void *user, const ts_store_message *m) {
  thread_state *t = user;
  if (m->role == TS_STORE_ASSISTANT) {
    /* store_assistant writes the calls last: an empty list ends the content so */
    static const char none[] = ",\"tool_calls\":[]}";
    size_t n = sizeof none - 1;
    t->assistant_seen = 1;
    t->last_called = !(m->content_len >= n && !memcmp(m->content + m->content_len - n, none, n));
    t->tail = 0;
  } else if (m->role == TS_STORE_TOOL) {
    t->tail = 1;
  }
  return 0;
}

/* The assistant's message of the turn just streamed: its text and its calls. */
static int store_assistant(loop *l, uint32_t turn) {
  ts_buf msg;
  ts_buf_init(&msg, (size_t)96 << 20);
  ts_buf_puts(&msg, "{\"turn\":");
  ts_buf_append_u64(&msg, turn);
  ts_buf_puts(&msg, ",\"text\":");
  ts_buf_append_json_string(&msg, l->text.p ? l->text.p : "", l->text.len);
  ts_buf_puts(&msg, ",\"tool_calls\":[");
  ts_buf_append(&msg, l->calls.p ? l->calls.p : "", l->calls.len);
  ts_buf_puts(&msg, "]}");
  int rc = msg.err;
  if (!rc) {
    pthread_mutex_lock(&l->store_mu);
    rc = ts_store_append_message(l->cfg->store, l->cfg->thread, TS_STORE_ASSISTANT, msg.p,
                                 msg.len, NULL, NULL, 0, NULL);
    pthread_mutex_unlock(&l->store_mu);
  }
  ts_buf_fini(&msg);
  return rc;
}

static void interrupted_why(const ts_agent_config *c, char *why, size_t cap) {
  snprintf(why, cap, "interrupted; finished results are stored; continue with --thread %s "
                     "--resume", c->thread);
}

/* One turn. Returns TS_E_OK with *more = 1 when the model called tools (another turn
 * follows), or the reason the loop stops. `resuming`: the turn may have been cut before
 * (the first turn of --resume), see the essay. */
static int one_turn(loop *l, uint32_t turn, int resuming, int *more, char *why, size_t cap) {
  const ts_agent_config *c = l->cfg;
  ts_agent_turn t = {c->store, c->thread, c->reg, turn, l->sink, c->cancel};
  *more = 0;
  if (c->model.has_turn && c->model.has_turn(c->model.user, &t, why, cap)) return TS_E_IO;
  ts_buf_reset(&l->text);
  ts_buf_reset(&l->calls);
  l->ncalls = 0;
  ts_dispatch_config dc = {.store = c->dispatch_store, .reg = c->reg, .thread = c->thread,
                           .turn = turn + 1, .on_event = on_dispatch_event, .user = l,
                           .pipelined = 1, .stop = c->cancel, .resuming = resuming};
  l->disp = NULL;
  int made = ts_dispatch_new(&l->disp, &dc);
  ts_buf used_ids;
  ts_buf_init(&used_ids, (size_t)16 << 20);
  ts_buf_reset(&l->settled_ids);
  id_scan scan = {&used_ids, resuming ? &l->settled_ids : NULL, 0};
  ts_store_messages(c->store, c->thread, 0, collect_call_id, &scan);
  split_ids(&scan);
  ts_tap_config tc = {.progress_arg = progress_of, .progress_user = l, .text = 1,
                      .turn = turn + 1, .id_taken = call_id_taken, .id_user = &used_ids};
  ts_tap *tap = NULL;
  if (made == TS_E_OK) made = ts_tap_new(&tap, &tc, on_tap_event, l);
  if (made != TS_E_OK) {
    ts_buf_fini(&used_ids);
    ts_dispatch_free(l->disp);
    l->disp = NULL;
    snprintf(why, cap, "%s", ts_err_message(made));
    return made;
  }
  char mwhy[512] = "";
  int mrc = c->model.turn(c->model.user, &t, tap, mwhy, sizeof mwhy);
  /* A cut stream is not finished: its last call would be reported as cut (an error
   * result to come), yet --resume streams the turn again and gives that call its run. */
  if (!cancelled(l)) ts_tap_finish(tap);
  int failed = ts_tap_failed(tap);
  ts_tap_free(tap);
  ts_buf_fini(&used_ids);
  if (cancelled(l)) ts_dispatch_cancel(l->disp);
  int drc = ts_dispatch_finish(l->disp);
  ts_dispatch_free(l->disp); /* joins the worker: a cancelled tool's result is committed */
  l->disp = NULL;
  l->st->calls += l->ncalls;
  l->st->turns++;
  if (cancelled(l) || drc == TS_E_ABORTED) {
    /* the turn is not finished: no assistant message, so --resume streams it again */
    interrupted_why(c, why, cap);
    return TS_E_ABORTED;
  }
  /* A turn the backend could not give, or whose stream broke before any call, leaves
   * nothing to pair: no message, and --resume asks for the turn again. */
  int arc = (mrc || failed) && !l->ncalls ? TS_E_OK : store_assistant(l, turn + 1);
  if (mrc) {
    snprintf(why, cap, "%s", mwhy);
    return TS_E_IO;
  }
  int src = ts_sink_store_error(l->sink);
  if (drc || arc || src) {
    snprintf(why, cap, "the store failed: %s",
             drc ? ts_store_errmsg(c->dispatch_store)
                 : arc ? ts_store_errmsg(c->store) : ts_err_message(src));
    return drc ? drc : arc ? arc : src;
  }
  if (failed) {
    snprintf(why, cap, "the model's stream for turn %u ended in error (see the stream_error "
                       "event)", turn + 1);
    return TS_E_MS_PROVIDER;
  }
  *more = l->ncalls > 0;
  return TS_E_OK;
}

/* Replaces the sink's secrets in `why` (a backend's message may echo a key). */
static void redact_why(const loop *l, char *why, size_t cap) {
  if (!l->sink || !why[0]) return;
  ts_buf b;
  ts_buf_init(&b, cap * 2);
  if (ts_sink_redact(l->sink, why, strlen(why), &b) == TS_E_OK) snprintf(why, cap, "%s", b.p);
  ts_buf_fini(&b);
}

static int store_prompt(loop *l, char *why, size_t cap) {
  const ts_agent_config *c = l->cfg;
  pthread_mutex_lock(&l->store_mu);
  int rc = ts_store_append_message(c->store, c->thread, TS_STORE_USER, c->prompt,
                                   strlen(c->prompt), NULL, NULL, 0, NULL);
  pthread_mutex_unlock(&l->store_mu);
  if (rc) snprintf(why, cap, "%s", ts_store_errmsg(c->store));
  return rc;
}

int ts_agent_run(const ts_agent_config *c, ts_agent_stats *stats, char *why, size_t cap) {
  ts_agent_stats local;
  ts_agent_stats *st = stats ? stats : &local;
  memset(st, 0, sizeof *st);
  loop l;
  memset(&l, 0, sizeof l);
  l.cfg = c;
  l.st = st;
  why[0] = '\0';
  if (!c->store || !c->dispatch_store || !c->reg || !c->model.turn || !c->thread ||
      !ts_thread_id_valid(c->thread, strlen(c->thread))) {
    snprintf(why, cap, "invalid configuration");
    return TS_E_INVAL;
  }
  int exists = ts_store_thread_exists(c->store, c->thread);
  if (exists < 0) {
    snprintf(why, cap, "%s", ts_store_errmsg(c->store));
    return exists;
  }
  if (c->resume && exists != 1) {
    snprintf(why, cap, "no thread %s in %s", c->thread, ts_store_path(c->store));
    return TS_E_STORE_NO_THREAD;
  }
  if (!c->resume && exists == 1) {
    snprintf(why, cap, "thread %s exists; add --resume to continue it", c->thread);
    return TS_E_STORE_THREAD_EXISTS;
  }
  int rc;
  if (!c->resume && (rc = ts_store_thread_create(c->store, c->thread, NULL))) {
    snprintf(why, cap, "%s", ts_store_errmsg(c->store));
    return rc;
  }
  pthread_mutex_init(&l.store_mu, NULL);
  ts_buf_init(&l.text, (size_t)16 << 20);
  ts_buf_init(&l.calls, (size_t)64 << 20);
  ts_buf_init(&l.settled_ids, (size_t)16 << 20);
  ts_sink_config sc = c->sink;
  sc.thread = c->thread;
  sc.store = store_event;
  sc.store_user = &l;
  sc.emitted = on_emitted;
  sc.emitted_user = &l;
  ts_store_last_event_seq(c->store, c->thread, &sc.last_seq);
  if ((rc = ts_sink_new(&sc, &l.sink))) {
    snprintf(why, cap, "cannot set up the event sink: %s", ts_err_message(rc));
    goto out;
  }
  uint32_t turn = 0;
  ts_store_messages(c->store, c->thread, 0, count_assistant, &turn);
  double t0 = ts_clock_ms();
  int cut = 0; /* resuming a turn cut after some of its results were committed */
  if (c->resume) {
    /* calls that started but never finished (a crash) are resolved first */
    uint32_t resolved = 0;
    if ((rc = ts_dispatch_resume(c->dispatch_store, c->reg, c->thread, on_dispatch_event, &l,
                                 &resolved))) {
      snprintf(why, cap, "resume failed: %s", ts_store_errmsg(c->dispatch_store));
      goto out;
    }
    thread_state ts = {0};
    if ((rc = ts_store_messages(c->store, c->thread, 0, scan_state, &ts)) < 0) {
      snprintf(why, cap, "%s", ts_store_errmsg(c->store));
      goto out;
    }
    rc = TS_E_OK;
    cut = ts.tail;
    if (ts.assistant_seen && !ts.last_called && !ts.tail && !c->prompt) {
      st->elapsed_ms = ts_clock_ms() - t0; /* finished: nothing to continue */
      goto out;
    }
  }
  /* A prompt given to the resume of a cut turn follows that turn (its calls and results
   * belong to the model's message before it), so it waits until the turn is finished. */
  if (c->prompt && !cut && (rc = store_prompt(&l, why, cap))) goto out;
  uint32_t max_turns = c->max_turns ? c->max_turns : TS_AGENT_MAX_TURNS;
  for (;;) {
    if (st->turns >= max_turns) {
      snprintf(why, cap, "stopped after --max-turns %u; --resume continues", max_turns);
      rc = TS_E_LIMIT;
      break;
    }
    if (cancelled(&l)) { /* between turns: the last one is whole, the next not begun */
      interrupted_why(c, why, cap);
      rc = TS_E_ABORTED;
      break;
    }
    int more;
    rc = one_turn(&l, turn, c->resume && st->turns == 0, &more, why, cap);
    turn++;
    if (!rc && cut && c->prompt) { /* the cut turn is finished: now the prompt */
      cut = 0;
      if ((rc = store_prompt(&l, why, cap))) break;
      more = 1;
    }
    if (rc || !more) break; /* an error, or the model ended its turn without tool calls */
  }
  st->elapsed_ms = ts_clock_ms() - t0;
out:
  redact_why(&l, why, cap);
  ts_sink_free(l.sink);
  ts_buf_fini(&l.text);
  ts_buf_fini(&l.calls);
  ts_buf_fini(&l.settled_ids);
  pthread_mutex_destroy(&l.store_mu);
  return rc;
}

int ts_agent_archive(void *store, const char *thread, size_t thread_len, uint64_t after,
                     size_t max, int (*put)(void *, uint64_t, const char *, size_t), void *ctx,
                     uint64_t *newest) {
  char th[TS_THREAD_ID_MAX + 1];
  *newest = 0;
  if (thread_len > TS_THREAD_ID_MAX) return 0;
  memcpy(th, thread, thread_len);
  th[thread_len] = '\0';
  if (ts_store_last_event_seq(store, th, newest) != TS_E_OK) *newest = 0;
  return ts_store_events_after(store, th, after, max, put, ctx);
}
