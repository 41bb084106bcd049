/*
 * subagents.c: subagent instances, their lifecycle tools, the inbox between turns
 * (subagents.h).
 *
 * Everything a parent and its children say to each other goes through the store: the
 * child's first message and later messages through the child's inbox, a non-blocking
 * child's outcome through the parent's. The store makes each hand-over one transaction, so
 * the question "was it sent?" always has one answer after a crash; this file decides when
 * to hand over and who runs next.
 *
 * Who runs a child. A blocking child runs on the parent's dispatcher worker, inside the
 * parent's call: the call's result is the child's outcome. A non-blocking child runs in a
 * job: a thread of its own that delivers the child's inbox, runs the child to the end of
 * its reply, reports the outcome (queued to the parent), and looks at the inbox again. A
 * message to a child is pushed under the process's job lock, and a job ends only after
 * seeing an empty inbox under the same lock, so a message either finds its job still
 * running (and is taken by it, between turns or after the run) or starts a new one: none
 * is left waiting for a job that has already gone.
 *
 * Why the parent waits. A non-blocking child's outcome is a message to its parent, taken
 * between the parent's turns. When the parent's model has nothing more to do, the loop
 * asks ts_subagents_between_turns whether anything is coming: while a child of that thread
 * runs here, it waits for the child's report and hands it to the model as the next user
 * message. A parent therefore ends only when all its children have ended and been heard.
 *
 * Child ids are made from the creating call, so the same call always names the same child;
 * the instance row (keyed by the call too) is what a re-run after a crash finds.
 */
#include "agent/subagents.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "agent/attachments.h"
#include "agent/compose.h"
#include "base/thread_id.h"
#include "stream/json_view.h"

/* Tokens for a tool's arguments: the schemas allow 4 members and 64 attachment paths. */
#define ARG_TOKENS 512
/* How often a waiting parent looks at its inbox (the jobs also wake it when they end). */
#define WAIT_POLL_MS 50

/* ---- the tools' shared state ---------------------------------------------------------- */

typedef struct {
  ts_agent_config cfg; /* the parent's run (shallow copy; its stores are never used here) */
  const ts_defs *defs;
  const ts_defs_agent *agent;
  const ts_defs_side *side;
  ts_subagents_runner runner;
  char dir[TS_STORE_PATH_MAX]; /* the store's directory, for our own connections */
  int refs;                    /* the three tools and the running jobs */
} sa_ctx;

static pthread_mutex_t jobs_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t jobs_cv = PTHREAD_COND_INITIALIZER;

typedef struct job {
  char child[TS_THREAD_ID_MAX + 1], parent[TS_THREAD_ID_MAX + 1];
  pthread_t th;
  int running; /* 0: ended, waiting to be joined */
  int waiting; /* its last session stopped for a required variable (TS_E_VAR_MISSING) */
  char why[1400]; /* "subagent <id> waits: " and the session's reason (1024 bytes) */
  sa_ctx *ctx;
  struct job *next;
} job;

static job *jobs;
static int jobs_running;

static void ctx_unref(sa_ctx *c) { /* with jobs_mu held */
  if (c && --c->refs == 0) free(c);
}

static void ctx_free(void *user) {
  pthread_mutex_lock(&jobs_mu);
  ctx_unref(user);
  pthread_mutex_unlock(&jobs_mu);
}

/* ---- small helpers ---------------------------------------------------------------------- */

static int open_stores(const sa_ctx *c, ts_store **a, ts_store **b, char *why, size_t cap) {
  *a = NULL;
  if (b) *b = NULL;
  if (ts_store_open(c->dir, a, why, cap)) return TS_E_IO;
  if (b && ts_store_open(c->dir, b, why, cap)) {
    ts_store_close(*a);
    *a = NULL;
    return TS_E_IO;
  }
  return 0;
}

static int mkdirs(const char *path) {
  char p[PATH_MAX];
  if (snprintf(p, sizeof p, "%s", path) >= (int)sizeof p) return -1;
  for (char *s = p + 1; *s; s++)
    if (*s == '/') {
      *s = '\0';
      if (mkdir(p, 0755) && errno != EEXIST) return -1;
      *s = '/';
    }
  return mkdir(p, 0755) && errno != EEXIST ? -1 : 0;
}

typedef struct {
  char parent[TS_THREAD_ID_MAX + 1];
  char ws[TS_STORE_PATH_MAX];
  int has_ws, found;
} thread_row;

static int grab_thread(void *user, const ts_store_thread *t) {
  thread_row *r = user;
  r->found = 1;
  snprintf(r->parent, sizeof r->parent, "%s", t->parent ? t->parent : "");
  r->has_ws = t->workspace && *t->workspace;
  snprintf(r->ws, sizeof r->ws, "%s", r->has_ws ? t->workspace : "");
  return 0;
}

/* A copy of an instance row (the store's pointers live only during the callback). */
typedef struct {
  int found;
  char thread[TS_THREAD_ID_MAX + 1], parent[TS_THREAD_ID_MAX + 1];
  char agent[TS_DEFS_NAME_MAX + 1], relationship[TS_DEFS_NAME_MAX + 1];
  char name[TS_SUBAGENTS_NAME_MAX + 1], state[32];
  char ws[TS_STORE_PATH_MAX];
  int blocking, has_ws, has_outcome;
  uint32_t reports, queued;
  uint64_t reported_seq, last_seq;
} inst;

static int grab_inst(void *user, const ts_store_subagent *a) {
  inst *i = user;
  i->found = 1;
  snprintf(i->thread, sizeof i->thread, "%s", a->thread);
  snprintf(i->parent, sizeof i->parent, "%s", a->parent);
  snprintf(i->agent, sizeof i->agent, "%s", a->agent);
  snprintf(i->relationship, sizeof i->relationship, "%s", a->relationship);
  snprintf(i->name, sizeof i->name, "%s", a->name);
  snprintf(i->state, sizeof i->state, "%s", a->state);
  i->has_ws = a->workspace && *a->workspace;
  snprintf(i->ws, sizeof i->ws, "%s", i->has_ws ? a->workspace : "");
  i->blocking = a->blocking;
  i->has_outcome = a->outcome != NULL;
  i->reports = a->reports;
  i->queued = a->queued;
  i->reported_seq = a->reported_seq;
  i->last_seq = a->last_seq;
  return 0;
}

/* A child with nothing left to do or say: its last session ended and was reported, and
 * no message waits for it. Only an unsettled non-blocking child needs a job. */
static int settled(const inst *in) {
  return (!strcmp(in->state, "done") || !strcmp(in->state, "failed")) && in->reports > 0 &&
         in->reported_seq == in->last_seq && in->queued == 0;
}

static const ts_defs_subagent *find_rel(const ts_defs_side *side, const char *name, size_t len) {
  for (size_t i = 0; i < side->n_subagents; i++) {
    const ts_defs_subagent *r = &side->subagents[i];
    if (!r->hidden && strlen(r->name) == len && !memcmp(r->name, name, len)) return r;
  }
  return NULL;
}

/* ---- events of the tree ------------------------------------------------------------------ */

static int store_event(void *user, const char *thread, uint64_t seq, const char *json,
                       size_t len) {
  return ts_store_append_event(user, thread, seq, json, len);
}

void ts_subagents_emit_on(const ts_sink_config *base, ts_store *s, const char *thread,
                          const char *parent, ts_event *ev) {
  ts_sink_config sc = *base;
  sc.thread = thread;
  sc.parent = parent && *parent ? parent : NULL;
  sc.store = store_event;
  sc.store_user = s;
  sc.emitted = NULL;
  sc.last_seq = 0;
  ts_store_last_event_seq(s, thread, &sc.last_seq);
  ts_sink *sink = NULL;
  if (ts_sink_new(&sc, &sink) == TS_E_OK) {
    ts_sink_emit(sink, ev);
    ts_sink_free(sink);
  }
}

static void emit_on(const sa_ctx *c, ts_store *s, const char *thread, const char *parent,
                    ts_event *ev) {
  ts_subagents_emit_on(&c->cfg.sink, s, thread, parent, ev);
}

static ts_view v_of(const char *s) { return (ts_view){s, s ? strlen(s) : 0}; }

/* ---- the inbox between turns --------------------------------------------------------------- */

typedef struct {
  ts_buf from, msg;
  uint64_t seq;
} delivered;

static int grab_delivered(void *user, const ts_store_inbox_item *it) {
  delivered *d = user;
  ts_buf_reset(&d->from);
  ts_buf_reset(&d->msg);
  if (it->sender) ts_buf_puts(&d->from, it->sender);
  ts_buf_append(&d->msg, it->content, it->content_len);
  d->seq = it->seq;
  return 0;
}

/* Delivers every queued item of `thread`; each event goes to `sink`, or (sink NULL) through
 * a sink of our own on `c`'s bus. Returns the count or a store error. */
static int deliver_all(const sa_ctx *c, ts_store *s, const char *thread, const char *parent,
                       ts_sink *sink) {
  delivered d;
  ts_buf_init(&d.from, TS_THREAD_ID_MAX + 1);
  ts_buf_init(&d.msg, TS_SUBAGENTS_MAX_MESSAGE * 2);
  int n = 0, rc;
  while ((rc = ts_store_inbox_deliver(s, thread, grab_delivered, &d)) == 1) {
    n++;
    ts_event ev;
    memset(&ev, 0, sizeof ev);
    ev.body.type = TS_EVENT_SUBAGENT_MESSAGE;
    ev.from = (ts_view){d.from.p, d.from.len};
    ev.inbox_seq = d.seq;
    ev.message = (ts_view){d.msg.p, d.msg.len};
    if (sink)
      ts_sink_emit(sink, &ev);
    else if (c)
      emit_on(c, s, thread, parent, &ev);
  }
  ts_buf_fini(&d.from);
  ts_buf_fini(&d.msg);
  return rc < 0 ? rc : n;
}

static int count_queued(void *user, const ts_store_inbox_item *it) {
  (void)it;
  (*(int *)user)++;
  return 0;
}

static int queued_of(ts_store *s, const char *thread) {
  int n = 0;
  int rc = ts_store_inbox(s, thread, 1, count_queued, &n);
  return rc < 0 ? rc : n;
}

static int running_children(const char *parent) { /* with jobs_mu held */
  int n = 0;
  for (job *j = jobs; j; j = j->next) n += j->running && !strcmp(j->parent, parent);
  return n;
}

static const job *waiting_child(const char *parent) { /* with jobs_mu held */
  for (job *j = jobs; j; j = j->next)
    if (j->waiting && !j->running && !strcmp(j->parent, parent)) return j;
  return NULL;
}

int ts_subagents_waiting(const char *thread, char *why, size_t cap) {
  if (!thread) return 0;
  pthread_mutex_lock(&jobs_mu);
  const job *j = waiting_child(thread);
  if (j && why && cap) snprintf(why, cap, "%s", j->why);
  pthread_mutex_unlock(&jobs_mu);
  return j != NULL;
}

int ts_subagents_between_turns(ts_store *store, const char *thread, ts_sink *sink, int idle,
                               const volatile sig_atomic_t *cancel) {
  if (!store || !thread) return TS_E_INVAL;
  int n = deliver_all(NULL, store, thread, NULL, sink);
  if (n != 0 || !idle) return n;
  for (;;) {
    pthread_mutex_lock(&jobs_mu);
    int busy = running_children(thread);
    if (busy) {
      struct timespec until;
      clock_gettime(CLOCK_REALTIME, &until);
      until.tv_nsec += WAIT_POLL_MS * 1000000L;
      if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
      pthread_cond_timedwait(&jobs_cv, &jobs_mu, &until);
    }
    pthread_mutex_unlock(&jobs_mu);
    int q = queued_of(store, thread);
    if (q < 0) return q;
    if (q > 0 || !busy) {
      int got = deliver_all(NULL, store, thread, NULL, sink);
      if (got == 0 && !busy && ts_subagents_waiting(thread, NULL, 0)) return TS_E_VAR_MISSING;
      return got;
    }
    if (cancel && *cancel) return 0;
  }
}

void ts_subagents_join(const char *thread) {
  if (!thread) return;
  pthread_mutex_lock(&jobs_mu);
  while (running_children(thread)) pthread_cond_wait(&jobs_cv, &jobs_mu);
  for (job **p = &jobs; *p;) {
    job *j = *p;
    if (!j->running && !strcmp(j->parent, thread)) {
      *p = j->next;
      pthread_mutex_unlock(&jobs_mu);
      pthread_join(j->th, NULL);
      pthread_mutex_lock(&jobs_mu);
      ctx_unref(j->ctx);
      free(j);
      p = &jobs; /* the list may have changed while unlocked */
    } else {
      p = &j->next;
    }
  }
  pthread_mutex_unlock(&jobs_mu);
}

/* ---- the outcome ---------------------------------------------------------------------------- */

typedef struct {
  ts_buf text;
} last_reply;

/* The text of the last assistant message ({"turn", "text", "tool_calls"}: run.c). */
static int grab_reply(void *user, const ts_store_message *m) {
  last_reply *r = user;
  if (m->role != TS_STORE_ASSISTANT) return 0;
  ts_buf_reset(&r->text);
  char *copy = malloc(m->content_len + 1);
  ts_jv v;
  if (!copy || ts_jv_init(&v, 4096)) {
    free(copy);
    return 0;
  }
  memcpy(copy, m->content, m->content_len);
  ts_view t;
  /* tool_calls can hold many tokens: only the text is needed, so a parse that runs out
   * of tokens falls back to no text */
  if (ts_jv_parse(&v, copy, m->content_len) == TS_E_OK &&
      ts_jv_str(&v, ts_jv_get(&v, 0, "text"), &t) == TS_E_OK)
    ts_buf_append(&r->text, t.p, t.len);
  ts_jv_fini(&v);
  free(copy);
  return 0;
}

/* A byte a directory name keeps as it is (a child's id made into one). */
static int path_byte(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
         ch == '_' || ch == '-' || ch == '.';
}

static const char *status_of(int rc) {
  return rc == TS_E_OK        ? "done"
         : rc == TS_E_ABORTED ? "interrupted"
         : rc == TS_E_LIMIT   ? "max_turns"
                              : "failed";
}

/* The outcome JSON of instance `in` after a run that returned `rc` (and said `err` why,
 * when it did not end well: the parent learns what stopped its child). */
static void outcome_of(ts_store *s, const inst *in, const char *parent_ws, int rc,
                       const char *err, ts_buf *o) {
  last_reply r;
  ts_buf_init(&r.text, (size_t)16 << 20);
  ts_store_messages(s, in->thread, 0, grab_reply, &r);
  ts_buf list;
  ts_buf_init(&list, (size_t)1 << 20);
  ts_buf_puts(o, "{\"id\":");
  ts_buf_append_json_string(o, in->thread, strlen(in->thread));
  ts_buf_puts(o, ",\"name\":");
  ts_buf_append_json_string(o, in->name, strlen(in->name));
  ts_buf_puts(o, ",\"agent\":");
  ts_buf_append_json_string(o, in->agent, strlen(in->agent));
  ts_buf_puts(o, ",\"relationship\":");
  ts_buf_append_json_string(o, in->relationship, strlen(in->relationship));
  ts_buf_puts(o, ",\"status\":\"");
  ts_buf_puts(o, status_of(rc));
  ts_buf_puts(o, "\",\"text\":");
  ts_attach_translate(r.text.p ? r.text.p : "", r.text.len, in->has_ws ? in->ws : NULL,
                      parent_ws, o, &list);
  ts_buf_puts(o, ",\"attachments\":[");
  ts_buf_append(o, list.p ? list.p : "", list.len);
  ts_buf_putc(o, ']');
  if (rc != TS_E_OK && err && err[0]) {
    ts_buf_puts(o, ",\"error\":");
    ts_buf_append_json_string(o, err, strlen(err));
  }
  ts_buf_putc(o, '}');
  ts_buf_fini(&list);
  ts_buf_fini(&r.text);
}

/* ---- running a child ------------------------------------------------------------------------ */

/* One session of the child: its queued messages delivered, its run, its outcome recorded
 * (queued to the parent when non-blocking), `thread_finished`. The outcome goes to *o.
 * Returns the run's result, or a store error before it. */
static int run_session(const sa_ctx *c, const char *child, const volatile sig_atomic_t *cancel,
                       ts_buf *o, char *why, size_t cap) {
  ts_store *s1, *s2;
  if (open_stores(c, &s1, &s2, why, cap)) return TS_E_IO;
  inst in = {0};
  int rc = ts_store_subagent_get(s1, child, grab_inst, &in);
  if (rc != 1) {
    snprintf(why, cap, "no subagent %s", child);
    ts_store_close(s1);
    ts_store_close(s2);
    return rc < 0 ? rc : TS_E_STORE_NO_THREAD;
  }
  thread_row pr = {0};
  ts_store_thread_get(s1, in.parent, grab_thread, &pr);
  if ((rc = deliver_all(c, s1, child, in.parent, NULL)) < 0) {
    snprintf(why, cap, "%s", ts_store_errmsg(s1));
    ts_store_close(s1);
    ts_store_close(s2);
    return rc;
  }
  ts_agent_config cc = c->cfg;
  cc.store = s1;
  cc.dispatch_store = s2;
  cc.thread = child;
  cc.resume = 1;
  cc.prompt = NULL;
  cc.parent = in.parent;
  cc.workspace = in.has_ws ? in.ws : NULL;
  cc.prepare = NULL;
  cc.cancel = cancel;
  cc.agent = in.agent;
  cc.prompt_name = NULL;
  char rwhy[1024] = "";
  rc = c->runner.run ? c->runner.run(c->runner.user, &cc, rwhy, sizeof rwhy)
                     : ts_agent_run(&cc, NULL, rwhy, sizeof rwhy);
  ts_buf_reset(o);
  outcome_of(s1, &in, pr.has_ws ? pr.ws : NULL, rc, rwhy, o);
  int qrc = 0;
  /* A stopped session is not over (--resume continues it): nothing is reported then, so
   * the parent hears once, when it ends; nor is one that stopped for a required variable
   * of its own prompt or agent (it waits for it: env set, then --resume). A session that
   * added nothing to a conversation already reported (run again after a crash) is no new
   * end: the store reports it no more (1), and its end is not announced twice. */
  int stopped = rc == TS_E_ABORTED || rc == TS_E_VAR_MISSING;
  if (!stopped) {
    qrc = o->err ? o->err
                 : ts_store_subagent_report(s1, child, o->p, o->len, !in.blocking, NULL);
  }
  if (!stopped && qrc != 1) {
    ts_event ev;
    memset(&ev, 0, sizeof ev);
    ev.body.type = TS_EVENT_THREAD_FINISHED;
    ev.status = v_of(status_of(rc));
    if (!o->err) ev.outcome = (ts_view){o->p, o->len};
    emit_on(c, s1, child, in.parent, &ev);
  }
  if (qrc == 1) qrc = 0;
  if (rc && rwhy[0]) snprintf(why, cap, "%s", rwhy);
  if (qrc) snprintf(why, cap, "recording the outcome failed: %s", ts_store_errmsg(s1));
  ts_store_close(s1);
  ts_store_close(s2);
  return qrc ? qrc : rc;
}

static void *job_main(void *arg) {
  job *j = arg;
  ts_buf o;
  ts_buf_init(&o, (size_t)32 << 20);
  for (;;) {
    char why[1024] = "";
    int rc = run_session(j->ctx, j->child, j->ctx->cfg.cancel, &o, why, sizeof why);
    if (rc && rc != TS_E_ABORTED && rc != TS_E_VAR_MISSING && why[0])
      fprintf(stderr, "toolstream: subagent %s: %s\n", j->child, why);
    if (rc == TS_E_VAR_MISSING) { /* its parent's loop stops for it (between_turns) */
      pthread_mutex_lock(&jobs_mu);
      j->waiting = 1;
      snprintf(j->why, sizeof j->why, "subagent %s waits: %s", j->child, why);
      pthread_mutex_unlock(&jobs_mu);
    }
    ts_store *s = NULL;
    int q = 0;
    if (rc != TS_E_ABORTED && rc != TS_E_VAR_MISSING &&
        !(j->ctx->cfg.cancel && *j->ctx->cfg.cancel) &&
        open_stores(j->ctx, &s, NULL, why, sizeof why) == 0) {
      pthread_mutex_lock(&jobs_mu);
      q = queued_of(s, j->child);
      if (q <= 0) j->running = 0, jobs_running--;
      pthread_mutex_unlock(&jobs_mu);
      ts_store_close(s);
    } else {
      pthread_mutex_lock(&jobs_mu);
      j->running = 0, jobs_running--;
      pthread_mutex_unlock(&jobs_mu);
    }
    if (q <= 0) break; /* a message came while it ran: another session */
  }
  ts_buf_fini(&o);
  pthread_mutex_lock(&jobs_mu);
  pthread_cond_broadcast(&jobs_cv);
  pthread_mutex_unlock(&jobs_mu);
  return NULL;
}

/* Starts a job for `child` unless one runs; with jobs_mu held. 0, or TS_E_LIMIT / NOMEM. */
static int start_job(sa_ctx *c, const char *child, const char *parent) {
  for (job *j = jobs; j; j = j->next)
    if (j->running && !strcmp(j->child, child)) return 0;
  for (job *j = jobs; j; j = j->next) /* a new session: an older one's wait is over */
    if (!strcmp(j->child, child)) j->waiting = 0;
  if (jobs_running >= TS_SUBAGENTS_MAX_RUNNING) return TS_E_LIMIT;
  job *j = calloc(1, sizeof *j);
  if (!j) return TS_E_NOMEM;
  snprintf(j->child, sizeof j->child, "%s", child);
  snprintf(j->parent, sizeof j->parent, "%s", parent);
  j->ctx = c;
  j->running = 1;
  c->refs++;
  if (pthread_create(&j->th, NULL, job_main, j)) {
    c->refs--;
    free(j);
    return TS_E_NOMEM;
  }
  jobs_running++;
  j->next = jobs;
  jobs = j;
  return 0;
}

/* ---- the tools ---------------------------------------------------------------------------- */

typedef struct {
  ts_jv v;
  char *doc;
  int ok;
} args_doc;

static void args_close(args_doc *a) {
  ts_jv_fini(&a->v);
  free(a->doc);
}

/* Parses the call's arguments; on failure sets `tool`'s error result and returns 0. */
static int args_open(args_doc *a, const char *args, size_t len, const char *tool,
                     ts_tool_result *out) {
  memset(a, 0, sizeof *a);
  a->doc = malloc(len + 1);
  if (a->doc && !ts_jv_init(&a->v, ARG_TOKENS)) {
    memcpy(a->doc, args, len);
    a->ok = ts_jv_parse(&a->v, a->doc, len) == TS_E_OK && ts_jv_type_of(&a->v, 0) == TS_JV_OBJECT;
  }
  if (!a->ok) {
    args_close(a);
    ts_tool_result_error(out, "%s: the arguments are not a JSON object", tool);
  }
  return a->ok;
}

/* String member `key` decoded, or {NULL, 0}. */
static ts_view arg_str(args_doc *a, const char *key) {
  ts_view out = {NULL, 0};
  if (ts_jv_str(&a->v, ts_jv_get(&a->v, 0, key), &out) != TS_E_OK) out = (ts_view){NULL, 0};
  return out;
}

/* The message a child receives: the text, then the attachments copied from `from_root` into
 * `to_root`, by their child-local paths. An attachment that cannot be copied fails the whole
 * message (nothing is sent: the sender gets the error). */
static int compose_message(args_doc *a, const char *from_root, const char *to_root, ts_buf *msg,
                           char *why, size_t cap) {
  ts_view text = arg_str(a, "message");
  ts_buf_append(msg, text.p ? text.p : "", text.len);
  int arr = ts_jv_get(&a->v, 0, "attachments");
  int n = ts_jv_size(&a->v, arr);
  if (n > 0 && (!from_root || !to_root)) {
    snprintf(why, cap, "attachments need a filesystem on both threads (a workspace)");
    return TS_E_INVAL;
  }
  ts_attach_batch batch = {0};
  for (int k = 0, e = ts_jv_first(&a->v, arr); k < n; k++, e = ts_jv_skip(&a->v, e)) {
    ts_view p;
    if (ts_jv_str(&a->v, e, &p) != TS_E_OK) {
      snprintf(why, cap, "attachments[%d] is not a string", k);
      return TS_E_INVAL;
    }
    char ref[TS_ATTACH_PATH_MAX];
    int rc = ts_attach_copy(from_root, p.p, p.len, to_root, &batch, ref, sizeof ref, why, cap);
    if (rc) return rc;
    ts_buf_puts(msg, k ? "\n" : "\n\nAttachments:\n");
    ts_buf_puts(msg, ref);
  }
  if (msg->err) {
    snprintf(why, cap, "the message is too long");
    return TS_E_LIMIT;
  }
  return 0;
}

static void put_instance(ts_buf *b, const inst *in, const char *status) {
  ts_buf_puts(b, "{\"id\":");
  ts_buf_append_json_string(b, in->thread, strlen(in->thread));
  ts_buf_puts(b, ",\"agent\":");
  ts_buf_append_json_string(b, in->agent, strlen(in->agent));
  ts_buf_puts(b, ",\"relationship\":");
  ts_buf_append_json_string(b, in->relationship, strlen(in->relationship));
  ts_buf_puts(b, ",\"name\":");
  ts_buf_append_json_string(b, in->name, strlen(in->name));
  ts_buf_puts(b, ",\"status\":");
  ts_buf_append_json_string(b, status, strlen(status));
  ts_buf_puts(b, in->blocking ? ",\"blocking\":true}" : ",\"blocking\":false}");
}

typedef struct {
  ts_buf *b;
  int n;
} list_out;

static int list_row(void *user, const ts_store_subagent *a) {
  list_out *l = user;
  inst in = {0};
  grab_inst(&in, a);
  if (l->n++) ts_buf_putc(l->b, ',');
  put_instance(l->b, &in, in.state);
  return 0;
}

static void tool_list(void *user, const ts_call_info *call, const char *args, size_t len,
                      ts_tool_result *out) {
  (void)args, (void)len;
  sa_ctx *c = user;
  ts_store *s;
  char why[512];
  if (open_stores(c, &s, NULL, why, sizeof why)) {
    ts_tool_result_error(out, "subagents: cannot open the store: %s", why);
    return;
  }
  ts_buf b;
  ts_buf_init(&b, (size_t)4 << 20);
  ts_buf_puts(&b, "{\"subagents\":[");
  list_out l = {&b, 0};
  int rc = ts_store_subagents(s, call->thread, list_row, &l);
  ts_buf_puts(&b, "]}");
  if (rc < 0 || b.err)
    ts_tool_result_error(out, "subagents: %s", rc < 0 ? ts_store_errmsg(s) : "too many to list");
  else
    ts_tool_result_json(out, b.p, b.len);
  ts_buf_fini(&b);
  ts_store_close(s);
}

static int count_row(void *user, const ts_store_subagent *a) {
  (void)a;
  (*(int *)user)++;
  return 0;
}

/* How deep `thread` is in the tree of instances (0: not an instance). */
static int instance_depth(ts_store *s, const char *thread) {
  char cur[TS_THREAD_ID_MAX + 1];
  snprintf(cur, sizeof cur, "%s", thread);
  int d = 0;
  for (; d <= TS_SUBAGENTS_MAX_DEPTH; d++) {
    inst in = {0};
    if (ts_store_subagent_get(s, cur, grab_inst, &in) != 1) break;
    snprintf(cur, sizeof cur, "%s", in.parent);
  }
  return d;
}

/* After the child's session: the call's result for a blocking relationship. */
static void blocking_result(sa_ctx *c, const char *child, const ts_call_info *call,
                            const char *tool, ts_tool_result *out) {
  ts_buf o;
  ts_buf_init(&o, (size_t)32 << 20);
  char why[1024] = "";
  int rc = run_session(c, child, (const volatile sig_atomic_t *)call->cancel, &o, why, sizeof why);
  /* subagent_create waits with its child (a call waiting for a variable is not failed,
   * nor is the call waiting for that call's thread): no result now, and a resume runs the
   * idempotent create again, which finds its instance and resumes the child. (A blocking
   * subagent_message is not run again after a restart, since a second run would queue its
   * message twice: it reports the stop as before.) */
  int stopped = rc == TS_E_ABORTED || rc == TS_E_VAR_MISSING;
  if (stopped && !strcmp(tool, "subagent_create") && rc == TS_E_VAR_MISSING)
    ts_tool_result_suspend(out, rc, "%s: subagent %s waits: %s", tool, child, why);
  else if (stopped && !strcmp(tool, "subagent_create"))
    ts_tool_result_suspend(out, rc, "%s: subagent %s was stopped; it keeps what it did and goes "
                           "on with --resume", tool, child);
  else if (stopped)
    ts_tool_result_error(out, "cancelled: %s: subagent %s was stopped; it keeps what it did",
                         tool, child);
  else if (o.len && !o.err)
    ts_tool_result_json(out, o.p, o.len);
  else
    ts_tool_result_error(out, "%s: subagent %s: %s", tool, child, why[0] ? why : "failed");
  ts_buf_fini(&o);
}

static void tool_create(void *user, const ts_call_info *call, const char *args, size_t len,
                        ts_tool_result *out) {
  sa_ctx *c = user;
  args_doc a;
  char why[1024] = "";
  if (!args_open(&a, args, len, "subagent_create", out)) return;
  ts_view rel_name = arg_str(&a, "agent"), name = arg_str(&a, "name");
  const ts_defs_subagent *rel = NULL;
  size_t visible = 0;
  for (size_t i = 0; i < c->side->n_subagents; i++) visible += !c->side->subagents[i].hidden;
  if (rel_name.p)
    rel = find_rel(c->side, rel_name.p, rel_name.len);
  else if (visible == 1)
    for (size_t i = 0; i < c->side->n_subagents && !rel; i++)
      if (!c->side->subagents[i].hidden) rel = &c->side->subagents[i];
  if (!rel) {
    ts_tool_result_error(out, "subagent_create: no relationship \"%.*s\" (see the tool's "
                              "description for the agents this thread may create)",
                         (int)(rel_name.len > 64 ? 64 : rel_name.len), rel_name.p ? rel_name.p : "");
    args_close(&a);
    return;
  }
  if (!name.p || !name.len || name.len > TS_SUBAGENTS_NAME_MAX || memchr(name.p, '\0', name.len)) {
    ts_tool_result_error(out, "subagent_create: `name` must be 1 to %d bytes",
                         TS_SUBAGENTS_NAME_MAX);
    args_close(&a);
    return;
  }
  char nm[TS_SUBAGENTS_NAME_MAX + 1];
  memcpy(nm, name.p, name.len);
  nm[name.len] = '\0';
  ts_store *s;
  if (open_stores(c, &s, NULL, why, sizeof why)) {
    args_close(&a);
    ts_tool_result_error(out, "subagent_create: cannot open the store: %s", why);
    return;
  }
  /* the same call again (a re-run after a crash): its instance, resumed */
  inst in = {0};
  int rc = ts_store_subagent_by_call(s, call->thread, call->turn, call->index, grab_inst, &in);
  if (rc == 0) {
    int kids = 0;
    ts_store_subagents(s, call->thread, count_row, &kids);
    if (kids >= TS_SUBAGENTS_MAX_CHILDREN) {
      snprintf(why, sizeof why, "this thread has created %d subagents, the limit", kids);
      rc = TS_E_LIMIT;
    } else if (instance_depth(s, call->thread) >= TS_SUBAGENTS_MAX_DEPTH) {
      snprintf(why, sizeof why, "subagents nest deeper than %d", TS_SUBAGENTS_MAX_DEPTH);
      rc = TS_E_LIMIT;
    }
  }
  if (rc == 0) {
    char child[TS_THREAD_ID_MAX + 1], ws[TS_STORE_PATH_MAX];
    ts_compose_child_id(call->thread, call->turn, call->index, child);
    thread_row pr = {0};
    ts_store_thread_get(s, call->thread, grab_thread, &pr);
    /* the child's own filesystem: under the parent's, else under the data directory */
    int has_ws;
    if (pr.has_ws) {
      has_ws = (size_t)snprintf(ws, sizeof ws, "%s/threads/t%uc%u", pr.ws, (unsigned)call->turn,
                                (unsigned)call->index) < sizeof ws;
    } else {
      char h[TS_THREAD_ID_MAX + 1];
      snprintf(h, sizeof h, "%s", child);
      for (char *p = h; *p; p++)
        if (!path_byte(*p) || *p == '.') *p = '_';
      has_ws = (size_t)snprintf(ws, sizeof ws, "%s/workspaces/%s", c->dir, h) < sizeof ws;
    }
    ts_buf msg;
    ts_buf_init(&msg, TS_SUBAGENTS_MAX_MESSAGE);
    if (!has_ws || mkdirs(ws)) {
      snprintf(why, sizeof why, "cannot make the child's workspace %.500s", ws);
      rc = TS_E_IO;
    }
    /* the attachments are durable in the child's filesystem before its message exists */
    if (!rc) rc = compose_message(&a, pr.has_ws ? pr.ws : NULL, ws, &msg, why, sizeof why);
    if (!rc) {
      ts_store_subagent_new n = {.thread = child, .parent = call->thread, .workspace = ws,
                                 .agent = rel->agent, .relationship = rel->name, .name = nm,
                                 .blocking = rel->blocking, .turn = call->turn,
                                 .idx = call->index, .message = msg.p ? msg.p : "",
                                 .message_len = msg.len};
      rc = ts_store_subagent_create(s, &n, NULL);
      if (rc) snprintf(why, sizeof why, "%s", ts_store_errmsg(s));
    }
    ts_buf_fini(&msg);
    if (!rc) {
      ts_event ev;
      memset(&ev, 0, sizeof ev);
      ev.body.type = TS_EVENT_THREAD_CREATED;
      ev.agent = v_of(rel->agent);
      ev.name = v_of(nm);
      ev.relationship = v_of(rel->name);
      ev.blocking = (uint8_t)(rel->blocking != 0);
      emit_on(c, s, child, call->thread, &ev);
      rc = ts_store_subagent_get(s, child, grab_inst, &in) == 1 ? 0 : TS_E_STORE_NO_THREAD;
    }
  } else if (rc == 1) {
    rc = 0;
  } else if (rc < 0) {
    snprintf(why, sizeof why, "%s", ts_store_errmsg(s));
  }
  ts_store_close(s);
  args_close(&a);
  if (rc) {
    ts_tool_result_error(out, "subagent_create: %s", why);
    return;
  }
  if (in.blocking) {
    blocking_result(c, in.thread, call, "subagent_create", out);
    return;
  }
  /* created by this call before a crash: it runs again only if it has more to do (a
   * settled child started again would only repeat its outcome) */
  pthread_mutex_lock(&jobs_mu);
  rc = settled(&in) ? 0 : start_job(c, in.thread, in.parent);
  pthread_mutex_unlock(&jobs_mu);
  if (rc) {
    ts_tool_result_error(out, "subagent_create: %s is created but cannot start now (%s); "
                              "message it later", in.thread,
                         rc == TS_E_LIMIT ? "too many subagents running" : "out of memory");
    return;
  }
  ts_buf b;
  ts_buf_init(&b, 4096 + sizeof in);
  put_instance(&b, &in, settled(&in) ? in.state : "running");
  ts_tool_result_json(out, b.p, b.len);
  ts_buf_fini(&b);
}

static void tool_message(void *user, const ts_call_info *call, const char *args, size_t len,
                         ts_tool_result *out) {
  sa_ctx *c = user;
  args_doc a;
  char why[1024] = "";
  if (!args_open(&a, args, len, "subagent_message", out)) return;
  ts_view id = arg_str(&a, "id");
  char child[TS_THREAD_ID_MAX + 1];
  if (!id.p || !ts_thread_id_valid(id.p, id.len)) {
    args_close(&a);
    ts_tool_result_error(out, "subagent_message: `id` is not a thread id");
    return;
  }
  memcpy(child, id.p, id.len);
  child[id.len] = '\0';
  ts_store *s;
  if (open_stores(c, &s, NULL, why, sizeof why)) {
    args_close(&a);
    ts_tool_result_error(out, "subagent_message: cannot open the store: %s", why);
    return;
  }
  inst in = {0};
  thread_row pr = {0};
  int rc = ts_store_subagent_get(s, child, grab_inst, &in);
  if (rc != 1 || strcmp(in.parent, call->thread)) { /* children report only to their parent */
    ts_store_close(s);
    args_close(&a);
    ts_tool_result_error(out, "subagent_message: %s is not a subagent of this thread (the "
                              "`subagents` tool lists them)", child);
    return;
  }
  ts_store_thread_get(s, call->thread, grab_thread, &pr);
  ts_buf msg;
  ts_buf_init(&msg, TS_SUBAGENTS_MAX_MESSAGE);
  rc = compose_message(&a, pr.has_ws ? pr.ws : NULL, in.has_ws ? in.ws : NULL, &msg, why,
                       sizeof why);
  args_close(&a);
  uint64_t seq = 0;
  int was_running = 0, not_started = 0;
  if (!rc) { /* pushed under the job lock: a job ending now sees it (the essay) */
    pthread_mutex_lock(&jobs_mu);
    rc = ts_store_inbox_push(s, child, call->thread, msg.p ? msg.p : "", msg.len, &seq);
    if (rc) snprintf(why, sizeof why, "%s", ts_store_errmsg(s));
    for (job *j = jobs; j; j = j->next) was_running |= j->running && !strcmp(j->child, child);
    if (!rc && !in.blocking && !was_running && start_job(c, child, in.parent))
      not_started = 1; /* too many running: it waits in the inbox for the next run */
    pthread_mutex_unlock(&jobs_mu);
  }
  ts_buf_fini(&msg);
  ts_store_close(s);
  if (rc) {
    ts_tool_result_error(out, "subagent_message: %s", why);
    return;
  }
  if (in.blocking && !was_running) {
    blocking_result(c, child, call, "subagent_message", out);
    return;
  }
  ts_buf b;
  ts_buf_init(&b, 4096);
  ts_buf_puts(&b, "{\"id\":");
  ts_buf_append_json_string(&b, child, strlen(child));
  ts_buf_puts(&b, ",\"queued\":true,\"inbox_seq\":");
  ts_buf_append_u64(&b, seq);
  ts_buf_puts(&b, was_running   ? ",\"status\":\"running\"}"
                  : not_started ? ",\"status\":\"queued\"}"
                                : ",\"status\":\"started\"}");
  ts_tool_result_json(out, b.p, b.len);
  ts_buf_fini(&b);
}

/* ---- the schemas and the registry --------------------------------------------------------- */

static void rel_list(ts_buf *b, const ts_defs_side *side) {
  for (size_t i = 0; i < side->n_subagents; i++) {
    const ts_defs_subagent *r = &side->subagents[i];
    if (r->hidden) continue;
    const char *d = r->description ? r->description : "";
    ts_buf_puts(b, "\n- ");
    ts_buf_puts(b, r->name);
    ts_buf_puts(b, r->blocking ? " (blocking: the call returns its outcome)"
                               : " (non-blocking: its outcome comes later as a message)");
    if (*d) {
      ts_buf_puts(b, ": ");
      ts_buf_puts(b, d);
    }
  }
}

static int add_tool(ts_registry *reg, const char *name, const char *desc, const char *schema,
                    int idempotent, ts_tool_fn fn, sa_ctx *c, char *why, size_t cap) {
  ts_tool_spec sp = {.name = name, .description = desc, .args_schema = schema,
                     .idempotent = idempotent, .execute = fn, .user = c,
                     .user_free = ctx_free, .lifecycle = 1};
  pthread_mutex_lock(&jobs_mu);
  c->refs++;
  pthread_mutex_unlock(&jobs_mu);
  int rc = ts_registry_add(reg, &sp, why, cap);
  if (rc) ctx_free(c); /* the registry did not take it */
  return rc;
}

/* Starts again the non-blocking children of `thread` that a crash or a stop cut: a child
 * with queued messages, one not finished, or one whose last session was never reported. */
typedef struct {
  sa_ctx *c;
} resume_scan;

static int resume_row(void *user, const ts_store_subagent *a) {
  resume_scan *r = user;
  if (a->blocking) return 0; /* a blocking child resumes with its parent's call */
  inst in = {0};
  grab_inst(&in, a);
  if (!settled(&in)) start_job(r->c, a->thread, a->parent); /* jobs_mu held by the caller */
  return 0;
}

int ts_subagents_add_tools(ts_registry *reg, const ts_defs *defs, const ts_defs_agent *agent,
                           const ts_defs_side *side, const ts_agent_config *cfg,
                           const ts_subagents_runner *runner, char *why, size_t cap) {
  if (!reg || !side || !cfg || !cfg->store || !cfg->thread) return TS_E_INVAL;
  if (!side->prompt) return TS_E_OK; /* a human side: no tools to inject */
  size_t visible = 0;
  for (size_t i = 0; i < side->n_subagents; i++) {
    const ts_defs_subagent *r = &side->subagents[i];
    if (!r->agent || !*r->agent || !r->name || !*r->name) { /* ts_defs_check names agents */
      snprintf(why, cap, "agent %s: a subagent relationship without an agent or a name",
               agent ? agent->name : "?");
      return TS_E_INVAL;
    }
    visible += !r->hidden;
  }
  if (!visible) return TS_E_OK;
  sa_ctx *c = calloc(1, sizeof *c);
  if (!c) return TS_E_NOMEM;
  c->cfg = *cfg;
  c->defs = defs;
  c->agent = agent;
  c->side = side;
  if (runner) c->runner = *runner;
  snprintf(c->dir, sizeof c->dir, "%s", ts_store_path(cfg->store));
  char *slash = strrchr(c->dir, '/');
  if (slash) *slash = '\0';
  c->refs = 1; /* ours, until the tools hold it */

  ts_buf d1, d2, d3, sc;
  ts_buf_init(&d1, 1 << 16);
  ts_buf_init(&d2, 1 << 16);
  ts_buf_init(&d3, 1 << 16);
  ts_buf_init(&sc, 1 << 16);
  ts_buf_puts(&d1, "Lists this thread's subagent instances: id, agent, relationship, name, "
                   "status, blocking.");
  ts_buf_puts(&d2, "Creates a subagent: a child thread of a related agent, with its first "
                   "message and attachment paths (copied into its filesystem). Relationships:");
  rel_list(&d2, side);
  ts_buf_puts(&d3, "Sends a message (and attachment paths, copied) to one of this thread's "
                   "subagents by id; a busy subagent gets it queued. Blocking relationships "
                   "return the subagent's next outcome.");
  ts_buf_puts(&sc, "{\"type\":\"object\",\"properties\":{\"agent\":{\"type\":\"string\","
                   "\"description\":\"the relationship\",\"enum\":[");
  size_t k = 0;
  for (size_t i = 0; i < side->n_subagents; i++)
    if (!side->subagents[i].hidden) {
      if (k++) ts_buf_putc(&sc, ',');
      ts_buf_append_json_string(&sc, side->subagents[i].name, strlen(side->subagents[i].name));
    }
  ts_buf_puts(&sc, "]},\"name\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":200,"
                   "\"description\":\"a name for this instance\"},\"message\":{\"type\":"
                   "\"string\",\"description\":\"its first message\"},\"attachments\":{"
                   "\"type\":\"array\",\"maxItems\":64,\"items\":{\"type\":\"string\"},"
                   "\"description\":\"paths in this thread's filesystem, e.g. "
                   "/attachments/report.md\"}},\"required\":[");
  ts_buf_puts(&sc, visible > 1 ? "\"agent\",\"name\",\"message\"" : "\"name\",\"message\"");
  ts_buf_puts(&sc, "],\"additionalProperties\":false}");
  static const char list_schema[] = "{\"type\":\"object\",\"properties\":{},"
                                    "\"additionalProperties\":false}";
  static const char msg_schema[] =
      "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\",\"minLength\":1,"
      "\"description\":\"the subagent's id (from subagent_create or subagents)\"},"
      "\"message\":{\"type\":\"string\"},\"attachments\":{\"type\":\"array\",\"maxItems\":64,"
      "\"items\":{\"type\":\"string\"}}},\"required\":[\"id\",\"message\"],"
      "\"additionalProperties\":false}";
  int rc = d1.err || d2.err || d3.err || sc.err ? TS_E_NOMEM : TS_E_OK;
  /* subagent_create is idempotent to the dispatcher: run again, it finds its instance */
  if (!rc) rc = add_tool(reg, "subagents", d1.p, list_schema, 1, tool_list, c, why, cap);
  if (!rc) rc = add_tool(reg, "subagent_create", d2.p, sc.p, 1, tool_create, c, why, cap);
  if (!rc) rc = add_tool(reg, "subagent_message", d3.p, msg_schema, 0, tool_message, c, why, cap);
  ts_buf_fini(&d1);
  ts_buf_fini(&d2);
  ts_buf_fini(&d3);
  ts_buf_fini(&sc);
  if (!rc && cfg->resume) {
    resume_scan r = {c};
    ts_store *s;
    char w[512];
    if (open_stores(c, &s, NULL, w, sizeof w) == 0) {
      pthread_mutex_lock(&jobs_mu);
      ts_store_subagents(s, cfg->thread, resume_row, &r);
      pthread_mutex_unlock(&jobs_mu);
      ts_store_close(s);
    }
  }
  ctx_free(c);
  return rc;
}

int ts__compose_lifecycle_tools(ts_registry *reg, const ts_defs *defs, const ts_defs_agent *agent,
                                const ts_defs_side *side, const ts_agent_config *cfg,
                                char *why, size_t cap) {
  return ts_subagents_add_tools(reg, defs, agent, side, cfg, NULL, why, cap);
}
