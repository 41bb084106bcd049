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
 * One exception: a call that parks for a variable (tools/dispatch.h) after the turn's
 * stream ended makes the turn known whole, so its message is stored at once (store_turn_once,
 * from whichever thread sees both facts first) and a run stopped or killed while the call
 * waits is completed by --resume from the parked call (agent/thread_env.h), not streamed
 * again. The results after such a message are its own calls'; a resume tells them from a
 * cut turn's by the call ids the message lists (scan_state).
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
#include "agent/compose.h"
#include "agent/subagents.h"
#include "agent/thread_env.h"
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
  /* a call parked for a variable: the turn's message is stored early (run.h) */
  pthread_mutex_t turn_mu;
  int parked, stream_done, msg_stored;
  uint32_t turn_no;
  int early_rc;
  double started_ms[TS_TAP_MAX_CALLS];
  uint64_t started_off[TS_TAP_MAX_CALLS];
  ts_agent_stats *st;
  ts_buf settled_ids; /* resuming a cut turn: ids of its calls with a result (NUL-separated) */
  /* composition (agent/compose.h): who drives this turn; else reg/layers are the config's */
  ts_compose *cx;
  ts_compose_driver drv;
  const ts_registry *reg;
  const ts_var_layers *layers;
  const char *history; /* the caller's thread, for includeChat / includePastTools */
  unsigned depth;
  ts_buf call_names; /* the turn's calls' tool names, NUL-separated */
  char workspace[4096]; /* the thread's filesystem, for its calls ("": none recorded) */
} loop;

static int id_in(const ts_buf *b, const char *id, size_t len);

static int cancelled(const loop *l) { return l->cfg->cancel && *l->cfg->cancel; }

/* tools-spec §7's tool_call_started hook, at the moment the event went out: the tool's own
 * (a JavaScript module's onToolCallStarted), then the embedder's. A failing hook is one
 * line on standard error; the call goes on. */
static void on_emitted(void *user, const ts_event *ev, const char *json, size_t len) {
  loop *l = user;
  if (ev->body.type != TS_EVENT_TOOL_CALL_STARTED) return;
  const ts_tool *t = ts_registry_find(l->reg, ev->body.tool.p, ev->body.tool.len);
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

static int store_assistant(loop *l, uint32_t turn);

/* The turn's assistant message, once per turn; with turn_mu held. */
static int store_turn_once(loop *l) {
  if (l->msg_stored) return 0;
  l->msg_stored = 1;
  return store_assistant(l, l->turn_no);
}

static void on_dispatch_event(void *user, const ts_event *e) {
  loop *l = user;
  ts_sink_emit(l->sink, e); /* a store failure is sticky in the sink; checked per turn */
  if (e->body.type == TS_EVENT_VARIABLE_REQUIRED) {
    pthread_mutex_lock(&l->turn_mu);
    l->parked = 1;
    if (l->stream_done && !l->early_rc) l->early_rc = store_turn_once(l);
    pthread_mutex_unlock(&l->turn_mu);
  }
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
    ts_buf_append(&l->call_names, e->tool.p, e->tool.len);
    ts_buf_putc(&l->call_names, '\0');
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
  const ts_tool *t = ts_registry_find(l->reg, tool, len);
  const char *a = t ? ts_tool_progress_arg(t) : NULL;
  if (a) *arg_len = strlen(a);
  return a;
}

typedef struct {
  char *parent, *workspace; /* TS_THREAD_ID_MAX + 1 and 4096 bytes */
} thread_home;

static int grab_parent(void *user, const ts_store_thread *t) {
  thread_home *h = user;
  snprintf(h->parent, TS_THREAD_ID_MAX + 1, "%s", t->parent ? t->parent : "");
  snprintf(h->workspace, 4096, "%s", t->workspace ? t->workspace : "");
  return 0;
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
 * later turn is stored (the thread is finished), and whether the tool results after that
 * message are a cut turn's (`foreign`: results of calls that message does not list) or
 * only its own (the message was stored early for a parked call, run.h). */
typedef struct {
  int assistant_seen, last_called, tail, foreign, user_after;
  ts_buf last; /* the last assistant message's content */
} thread_state;

/* Whether `content` (an assistant message store_assistant wrote) lists a call with `id`. */
static int lists_call(const ts_buf *content, const char *id) {
  ts_buf needle;
  ts_buf_init(&needle, 4096);
  ts_buf_puts(&needle, "{\"id\":");
  ts_buf_append_json_string(&needle, id, strlen(id));
  int found = 0;
  if (!needle.err && content->len >= needle.len)
    for (size_t i = 0; i + needle.len <= content->len && !found; i++)
      found = !memcmp(content->p + i, needle.p, needle.len);
  ts_buf_fini(&needle);
  return found;
}

static int no_item(void *user, const ts_store_inbox_item *it) {
  (void)user, (void)it;
  return 0;
}

static int scan_state(void *user, const ts_store_message *m) {
  thread_state *t = user;
  if (m->role == TS_STORE_ASSISTANT) {
    /* store_assistant writes the calls last: an empty list ends the content so */
    static const char none[] = ",\"tool_calls\":[]}";
    size_t n = sizeof none - 1;
    t->assistant_seen = 1;
    t->last_called = !(m->content_len >= n && !memcmp(m->content + m->content_len - n, none, n));
    t->tail = t->foreign = t->user_after = 0;
    ts_buf_reset(&t->last);
    ts_buf_append(&t->last, m->content, m->content_len);
  } else if (m->role == TS_STORE_USER) {
    t->user_after = 1; /* a message (a prompt, a delivered inbox item) waits for a reply */
  } else if (m->role == TS_STORE_TOOL) {
    t->tail = 1;
    if (!t->assistant_seen || !m->tool_call_id || !lists_call(&t->last, m->tool_call_id))
      t->foreign = 1;
  }
  return 0;
}

/* The assistant's message of the turn just streamed: its text and its calls. */
static int store_assistant(loop *l, uint32_t turn) {
  ts_buf msg;
  ts_buf_init(&msg, (size_t)96 << 20);
  ts_buf_puts(&msg, "{\"turn\":");
  ts_buf_append_u64(&msg, turn);
  if (l->cx) { /* who drove it: per-prompt replay and a dual_ai session read it back */
    ts_buf_puts(&msg, ",\"prompt\":");
    ts_buf_append_json_string(&msg, l->drv.prompt->name, strlen(l->drv.prompt->name));
    if (l->drv.agent && l->drv.agent->type == TS_DEFS_DUAL_AI)
      ts_buf_puts(&msg, l->drv.side ? ",\"side\":\"b\"" : ",\"side\":\"a\"");
  }
  /* The text as its text_delta events went out: a model (or a server posing as one)
   * that echoes the API key does not get it into the stored conversation either. */
  ts_buf text;
  ts_buf_init(&text, l->text.len * 2 + 64); /* "[redacted]" may be longer than a secret */
  int rc = ts_sink_redact(l->sink, l->text.p ? l->text.p : "", l->text.len, &text);
  ts_buf_puts(&msg, ",\"text\":");
  ts_buf_append_json_string(&msg, text.p ? text.p : "", text.len);
  ts_buf_fini(&text);
  ts_buf_puts(&msg, ",\"tool_calls\":[");
  ts_buf_append(&msg, l->calls.p ? l->calls.p : "", l->calls.len);
  ts_buf_puts(&msg, "]}");
  if (!rc) rc = msg.err;
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

/* The composition's driver for the next turn: its registry and layers become the loop's.
 * Under store_mu: the system text may read the thread's environment. */
static const ts_var_layers *tool_layers(void *user, const ts_tool *tool) {
  const loop *l = user;
  return l->cx ? ts_compose_tool_layers(l->cx, tool) : NULL;
}

static int compose_turn(loop *l, char *why, size_t cap) {
  if (!l->cx) return TS_E_OK;
  pthread_mutex_lock(&l->store_mu);
  int rc = ts_compose_driver_get(l->cx, &l->drv, why, cap);
  pthread_mutex_unlock(&l->store_mu);
  const ts_var_def *m = rc == TS_E_VAR_MISSING ? ts_compose_missing_var(l->cx) : NULL;
  if (m) { /* the thread stops for it, as a parked call waits: say so (no call waits) */
    ts_event ev;
    memset(&ev, 0, sizeof ev);
    ev.body.type = TS_EVENT_VARIABLE_REQUIRED;
    ev.var_name = (ts_view){m->name, strlen(m->name)};
    ev.var_description = (ts_view){m->description ? m->description : "",
                                   m->description ? strlen(m->description) : 0};
    ev.var_secret = m->type == TS_VAR_SECRET;
    ts_sink_emit(l->sink, &ev);
  }
  if (rc) return rc;
  l->reg = l->drv.reg;
  l->layers = l->drv.layers;
  return TS_E_OK;
}

typedef struct {
  const char *needle;
  size_t len;
  uint32_t n;
} prompt_count;

static int count_prompt(void *user, const ts_store_message *m) {
  prompt_count *p = user;
  size_t head = m->content_len < 160 ? m->content_len : 160; /* {"turn":N,"prompt":"..." */
  if (m->role != TS_STORE_ASSISTANT) return 0;
  for (size_t i = 0; i + p->len <= head; i++)
    if (!memcmp(m->content + i, p->needle, p->len)) {
      p->n++;
      break;
    }
  return 0;
}

/* Turns of this thread the driving prompt drove before (a per-prompt replay directory
 * plays its own turn-N files in order: agent/replay_model.h). */
static uint32_t prompt_turns(loop *l) {
  ts_buf nd;
  ts_buf_init(&nd, 512);
  ts_buf_puts(&nd, ",\"prompt\":");
  ts_buf_append_json_string(&nd, l->drv.prompt->name, strlen(l->drv.prompt->name));
  ts_buf_putc(&nd, ',');
  prompt_count p = {nd.p, nd.len, 0};
  if (!nd.err) {
    pthread_mutex_lock(&l->store_mu);
    ts_store_messages(l->cfg->store, l->cfg->thread, 0, count_prompt, &p);
    pthread_mutex_unlock(&l->store_mu);
  }
  ts_buf_fini(&nd);
  return p.n;
}

/* The thread passed to another agent: the handoff event (events/event.h). */
static void emit_handoff(loop *l, const char *from, const char *to) {
  ts_event ev;
  memset(&ev, 0, sizeof ev);
  ev.body.type = TS_EVENT_HANDOFF;
  ev.handoff_from = (ts_view){from, strlen(from)};
  ev.handoff_to = (ts_view){to, strlen(to)};
  ts_sink_emit(l->sink, &ev);
}

/* One turn. Returns TS_E_OK with *more = 1 when the model called tools (another turn
 * follows), or the reason the loop stops. `resuming`: the turn may have been cut before
 * (the first turn of --resume), see the essay. */
static int one_turn(loop *l, uint32_t turn, int resuming, int *more, char *why, size_t cap) {
  const ts_agent_config *c = l->cfg;
  *more = 0;
  int rc = compose_turn(l, why, cap);
  if (rc) return rc;
  ts_agent_turn t = {.store = c->store, .thread = c->thread, .reg = l->reg, .turn = turn,
                     .sink = l->sink, .cancel = c->cancel};
  if (l->cx) {
    t.prompt = l->drv.prompt->name;
    t.prompt_turn = prompt_turns(l);
    t.nested = l->depth > 0;
    t.model = l->drv.model;
    t.system = l->drv.system;
    t.history = l->history;
    t.include_chat = l->drv.prompt->include_chat;
    t.include_past_tools = l->drv.prompt->include_past_tools;
    if (l->drv.agent && l->drv.agent->type == TS_DEFS_DUAL_AI) t.side = l->drv.side ? 'b' : 'a';
    static const char *const choice[] = {"auto", "none", "required"};
    ts_defs_tool_choice tc = l->drv.prompt->tool_choice;
    t.tool_choice = tc >= TS_DEFS_CHOICE_AUTO && tc <= TS_DEFS_CHOICE_REQUIRED ? choice[tc] : NULL;
    t.parallel_tool_calls = l->drv.prompt->parallel_tool_calls < 0 ? 0
                            : l->drv.prompt->parallel_tool_calls    ? 2
                                                                    : 1;
  }
  if (c->model.has_turn && c->model.has_turn(c->model.user, &t, why, cap)) return TS_E_IO;
  ts_buf_reset(&l->text);
  ts_buf_reset(&l->calls);
  ts_buf_reset(&l->call_names);
  l->ncalls = 0;
  ts_dispatch_config dc = {.store = c->dispatch_store, .reg = l->reg, .thread = c->thread,
                           .turn = turn + 1, .on_event = on_dispatch_event, .user = l,
                           .pipelined = 1, .layers = l->layers, .stop = c->cancel,
                           .tool_layers = tool_layers,
                           .workspace = l->workspace[0] ? l->workspace : NULL,
                           .resuming = resuming};
  pthread_mutex_lock(&l->turn_mu);
  l->parked = l->stream_done = l->msg_stored = l->early_rc = 0;
  l->turn_no = turn + 1;
  pthread_mutex_unlock(&l->turn_mu);
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
  /* A stream that ended (not cut) gives the whole turn: a call that waits for a variable
   * from now on has its turn's message stored at once (run.h). A cut stream's turn is not
   * known whole: it is streamed again on --resume, like any cut turn. */
  if (!cancelled(l)) {
    pthread_mutex_lock(&l->turn_mu);
    l->stream_done = 1;
    if (l->parked) l->early_rc = store_turn_once(l); /* a call waits: the turn is known */
    pthread_mutex_unlock(&l->turn_mu);
  }
  if (cancelled(l)) ts_dispatch_cancel(l->disp);
  int drc = ts_dispatch_finish(l->disp);
  /* joins the worker: a cancelled tool's result is committed (the stop reason, below, is
   * the dispatcher's: read before it goes) */
  int stopped = cancelled(l) || drc == TS_E_ABORTED;
  if (!stopped) {
    ts_dispatch_free(l->disp);
    l->disp = NULL;
  }
  l->st->calls += l->ncalls;
  l->st->turns++;
  if (stopped) {
    /* The turn is not finished: no assistant message, so --resume streams it again;
     * unless a call parked after the stream ended stored it (--resume goes on from that
     * call). A call suspended by the child thread it waits on (a prompt tool, a blocking
     * subagent) says why; a child that stopped by itself for a variable stops this thread
     * the same way (TS_E_VAR_MISSING), so the whole branch waits for it. */
    int code = 0;
    const char *reason = drc == TS_E_ABORTED ? ts_dispatch_stop_reason(l->disp, &code) : NULL;
    if (reason && !cancelled(l)) snprintf(why, cap, "%s", reason);
    else interrupted_why(c, why, cap);
    ts_dispatch_free(l->disp);
    l->disp = NULL;
    return code == TS_E_VAR_MISSING && !cancelled(l) ? TS_E_VAR_MISSING : TS_E_ABORTED;
  }
  /* A turn the backend could not give, or whose stream broke before any call, leaves
   * nothing to pair: no message, and --resume asks for the turn again. */
  pthread_mutex_lock(&l->turn_mu);
  int arc = l->early_rc                     ? l->early_rc
            : (mrc || failed) && !l->ncalls ? TS_E_OK
                                            : store_turn_once(l);
  pthread_mutex_unlock(&l->turn_mu);
  if (mrc) {
    snprintf(why, cap, "%s", mwhy);
    return TS_E_IO;
  }
  int src = ts_sink_store_error(l->sink), enc = ts_sink_encode_failed(l->sink);
  if (enc && !drc && !arc) { /* events/sink.h: a hole in the record ends the run */
    snprintf(why, cap, "an event could not be written: %s", ts_err_message(enc));
    return enc;
  }
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

static int run_loop(const ts_agent_config *c, unsigned depth, const char *history,
                    ts_buf *outcome, ts_agent_stats *stats, char *why, size_t cap);

int ts_agent_run(const ts_agent_config *c, ts_agent_stats *stats, char *why, size_t cap) {
  return run_loop(c, 0, NULL, NULL, stats, why, cap);
}

int ts__agent_run_nested(const ts_agent_config *c, unsigned depth, const char *history,
                         ts_buf *outcome, char *why, size_t cap) {
  return run_loop(c, depth, history, outcome, NULL, why, cap);
}

static int run_loop(const ts_agent_config *c, unsigned depth, const char *history,
                    ts_buf *outcome, ts_agent_stats *stats, char *why, size_t cap) {
  ts_agent_stats local;
  ts_agent_stats *st = stats ? stats : &local;
  memset(st, 0, sizeof *st);
  loop l;
  memset(&l, 0, sizeof l);
  l.cfg = c;
  l.st = st;
  l.reg = c->reg;
  l.layers = c->layers;
  l.history = history;
  l.depth = depth;
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
  char parent[TS_THREAD_ID_MAX + 1] = "";
  if (!c->resume && (rc = ts_store_thread_create_child(c->store, c->thread, c->parent,
                                                       c->workspace, NULL))) {
    snprintf(why, cap, "%s", ts_store_errmsg(c->store));
    return rc;
  }
  thread_home home = {parent, l.workspace};
  ts_store_thread_get(c->store, c->thread, grab_parent, &home);
  if (c->prepare && c->prepare(c->prepare_user, c->store, c->thread)) {
    ts_store_thread_set_state(c->store, c->thread, "failed");
    why[0] = '\0';
    return TS_E_ABORTED;
  }
  ts_store_thread_set_state(c->store, c->thread, "running");
  pthread_mutex_init(&l.store_mu, NULL);
  pthread_mutex_init(&l.turn_mu, NULL);
  ts_buf_init(&l.call_names, (size_t)1 << 20);
  ts_buf_init(&l.text, (size_t)16 << 20);
  ts_buf_init(&l.calls, (size_t)64 << 20);
  ts_buf_init(&l.settled_ids, (size_t)16 << 20);
  ts_sink_config sc = c->sink;
  sc.thread = c->thread;
  sc.parent = parent[0] ? parent : NULL;
  sc.store = store_event;
  sc.store_user = &l;
  sc.emitted = on_emitted;
  sc.emitted_user = &l;
  ts_store_last_event_seq(c->store, c->thread, &sc.last_seq);
  if ((rc = ts_sink_new(&sc, &l.sink))) {
    snprintf(why, cap, "cannot set up the event sink: %s", ts_err_message(rc));
    goto out;
  }
  /* a thread run by an agent or a prompt: the composition drives it (agent/compose.h) */
  if (c->defs && (c->agent || c->prompt_name) &&
      ((rc = ts_compose_new(&l.cx, c, depth, why, cap)) || (rc = compose_turn(&l, why, cap))))
    goto out;
  uint32_t turn = 0;
  ts_store_messages(c->store, c->thread, 0, count_assistant, &turn);
  double t0 = ts_clock_ms();
  int cut = 0;      /* resuming a turn cut after some of its results were committed */
  int own_tail = 0; /* resuming after a turn whose message was stored early (a parked call) */
  if (c->resume) {
    /* calls that started but never finished (a crash) are resolved first */
    uint32_t resolved = 0;
    char rwhy[1024] = "";
    int code = 0;
    /* (a prompt tool or blocking subagent run again resumes its child, which may wait for
     * a variable again, or still lack one: the call is then suspended again) */
    if ((rc = ts_dispatch_resume_stop(c->dispatch_store, l.reg, c->thread, l.layers, c->cancel,
                                      rwhy, sizeof rwhy, &code, on_dispatch_event, &l,
                                      &resolved))) {
      if (rc == TS_E_ABORTED && rwhy[0] && !cancelled(&l)) {
        snprintf(why, cap, "%s", rwhy);
        if (code == TS_E_VAR_MISSING) rc = TS_E_VAR_MISSING;
      } else if (rc == TS_E_ABORTED) {
        interrupted_why(c, why, cap);
      } else {
        snprintf(why, cap, "resume failed: %s", ts_store_errmsg(c->dispatch_store));
      }
      goto out;
    }
    /* A turn whose call waited for a variable after its stream ended has its assistant
     * message (stored early, run.h): it goes on from the parked call, the model is not
     * asked again. A turn without its message is cut: it is streamed again below. */
    ts_dispatch_config pc = {.store = c->dispatch_store, .reg = l.reg, .thread = c->thread,
                             .on_event = on_dispatch_event, .user = &l, .pipelined = 1,
                             .layers = l.layers, .stop = c->cancel, .resuming = 1,
                             .tool_layers = tool_layers,
                             .workspace = l.workspace[0] ? l.workspace : NULL};
    uint32_t parked_turn = 0;
    l.msg_stored = 1; /* that turn's message is stored: nothing to store early */
    rc = ts_thread_env_complete_parked(c->dispatch_store, &pc, &parked_turn);
    if (rc < 0) {
      if (rc == TS_E_ABORTED)
        snprintf(why, cap, "interrupted while a call waits for a variable; continue with "
                           "--thread %s --resume", c->thread);
      else
        snprintf(why, cap, "completing the parked turn failed: %s",
                 ts_store_errmsg(c->dispatch_store));
      goto out;
    }
    thread_state ts = {0};
    ts_buf_init(&ts.last, (size_t)96 << 20);
    rc = ts_store_messages(c->store, c->thread, 0, scan_state, &ts);
    ts_buf_fini(&ts.last);
    if (rc < 0) {
      snprintf(why, cap, "%s", ts_store_errmsg(c->store));
      goto out;
    }
    rc = TS_E_OK;
    /* results after the last message that are its own calls' (a parked turn, completed
     * or not) belong to a whole turn; others are a cut turn's */
    cut = ts.foreign;
    own_tail = ts.tail && !ts.foreign;
    int finished = ts.assistant_seen && !ts.last_called && !ts.tail;
    if (l.cx && ts_compose_driver_is_dual(l.cx)) finished = ts_compose_ended(l.cx) && !ts.foreign;
    /* finished, unless something waits for an answer: a message after the last reply, a
     * queued one, or a non-blocking child (restarted for this run) that will report */
    int heard = 0;
    if (finished && !ts.user_after && !c->prompt &&
        !ts_store_inbox(c->store, c->thread, 1, no_item, NULL) &&
        (heard = ts_subagents_between_turns(c->store, c->thread, l.sink, 1, c->cancel)) <= 0) {
      st->elapsed_ms = ts_clock_ms() - t0; /* finished: nothing to continue */
      if (heard == TS_E_VAR_MISSING) { /* a restarted child still waits for a variable */
        rc = heard;
        ts_subagents_waiting(c->thread, why, cap);
      } else if (heard == 0 && cancelled(&l)) {
        interrupted_why(c, why, cap);
        rc = TS_E_ABORTED;
      }
      goto out;
    }
  }
  /* A prompt given to the resume of a cut turn follows that turn (its calls and results
   * belong to the model's message before it), so it waits until the turn is finished. */
  if (c->prompt && !cut && (rc = store_prompt(&l, why, cap))) goto out;
  uint32_t max_turns = c->max_turns ? c->max_turns : TS_AGENT_MAX_TURNS;
  int first_cut = cut;
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
    /* messages queued to the thread (subagents: agent/subagents.h) join the conversation
     * between turns; not before a cut turn streamed again (its results pair with it) */
    if (!(first_cut && st->turns == 0) &&
        (rc = ts_subagents_between_turns(c->store, c->thread, l.sink, 0, c->cancel)) < 0) {
      snprintf(why, cap, "the store failed: %s", ts_store_errmsg(c->store));
      break;
    }
    int more;
    rc = one_turn(&l, turn, c->resume && st->turns == 0 && !own_tail, &more, why, cap);
    turn++;
    if (!rc && l.cx) { /* who answers next (agent/compose.h) */
      const char *from, *to;
      switch (ts_compose_after_turn(l.cx, more, l.call_names.p, l.call_names.len, &from, &to)) {
        case TS_COMPOSE_HANDOFF: emit_handoff(&l, from, to); break;
        case TS_COMPOSE_NEXT_SIDE: more = 1; break;
        case TS_COMPOSE_SESSION_END: more = 0; break;
        default: break;
      }
    }
    if (!rc && cut && c->prompt) { /* the cut turn is finished: now the prompt */
      cut = 0;
      if ((rc = store_prompt(&l, why, cap))) break;
      more = 1;
    }
    /* the model is done: unless a child of this thread has more to say (not once a dual_ai
     * session has ended: its outcome is final) */
    if (!rc && !more && !(l.cx && ts_compose_ended(l.cx))) {
      int n = ts_subagents_between_turns(c->store, c->thread, l.sink, 1, c->cancel);
      if (n == TS_E_VAR_MISSING) { /* a non-blocking child waits: so does this thread */
        rc = n;
        ts_subagents_waiting(c->thread, why, cap);
      } else if (n < 0) {
        rc = n;
        snprintf(why, cap, "the store failed: %s", ts_store_errmsg(c->store));
      } else if (n == 0 && cancelled(&l)) {
        /* stopped while waiting for a child (which may wait for a variable): the child
         * has not reported, so this thread is not finished; --resume restarts the child
         * and waits for it again */
        interrupted_why(c, why, cap);
        rc = TS_E_ABORTED;
      }
      more = n > 0;
    }
    if (rc || !more) break; /* an error, or the model ended its turn without tool calls */
  }
  st->elapsed_ms = ts_clock_ms() - t0;
out:
  ts_subagents_join(c->thread); /* what the run lent its children outlives them */
  /* (a thread stopped for a required variable, its own prompt's or a child's, waits for
   * it: env set, then --resume) */
  ts_store_thread_set_state(c->store, c->thread, rc == TS_E_OK            ? "done"
                                                 : rc == TS_E_ABORTED     ? "interrupted"
                                                 : rc == TS_E_VAR_MISSING ? "waiting_for_variable"
                                                                          : "failed");
  redact_why(&l, why, cap);
  if (l.cx && outcome && ts_compose_driver_is_dual(l.cx)) ts_compose_session_outcome(l.cx, outcome);
  ts_compose_free(l.cx);
  ts_buf_fini(&l.call_names);
  ts_sink_free(l.sink);
  ts_buf_fini(&l.text);
  ts_buf_fini(&l.calls);
  ts_buf_fini(&l.settled_ids);
  pthread_mutex_destroy(&l.store_mu);
  pthread_mutex_destroy(&l.turn_mu);
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
