/*
 * conversation.c: see conversation.h. The thread's messages are read once into memory
 * (a conversation is small next to the bytes a model streams) and put in request order
 * as the provider table's neutral list (stream/provider.h: ts_request); the provider's
 * row writes the body. What is decided here is the same for every provider: which calls
 * are sent (those with a result), and that each assistant message is followed by the
 * results of its calls, in call order.
 */
#include "agent/conversation.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/json_view.h"
#include "stream/provider.h"

typedef struct {
  int role;
  char *content;
  size_t len;
  char *call_id;
  int is_error;
  int used;
} msg;

typedef struct {
  msg *v;
  size_t n, cap;
  int oom;
} msgs;

static int collect(void *user, const ts_store_message *m) {
  msgs *l = user;
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 32;
    msg *v = realloc(l->v, cap * sizeof *v);
    if (!v) return l->oom = 1;
    l->v = v;
    l->cap = cap;
  }
  msg *x = &l->v[l->n];
  memset(x, 0, sizeof *x);
  x->role = m->role;
  x->content = malloc(m->content_len + 1);
  x->call_id = strdup(m->tool_call_id ? m->tool_call_id : "");
  if (!x->content || !x->call_id) {
    free(x->content);
    free(x->call_id);
    return l->oom = 1;
  }
  memcpy(x->content, m->content, m->content_len);
  x->content[m->content_len] = '\0';
  x->len = m->content_len;
  x->is_error = m->is_error;
  l->n++;
  return 0;
}

/* The result message for call `id` not yet used, or NULL. */
static msg *result_for(msgs *l, const char *id, size_t idlen) {
  for (size_t i = 0; i < l->n; i++) {
    msg *m = &l->v[i];
    if (m->role == TS_STORE_TOOL && !m->used && strlen(m->call_id) == idlen &&
        !memcmp(m->call_id, id, idlen))
      return m;
  }
  return NULL;
}

/* A stored assistant message, parsed: its views stay valid until turn_fini. */
typedef struct {
  char *js;
  ts_jv v;
  ts_req_call *calls;
} turn;

static void turn_fini(turn *t) {
  ts_jv_fini(&t->v);
  free(t->js);
  free(t->calls);
}

/* The request's messages: room for every stored message plus one per result. */
typedef struct {
  ts_req_message *v;
  size_t n;
  turn *turns;
  size_t nturns;
} req_list;

/* What of a thread's history a request shows: the texts (`chat`), the calls with their
 * results (`tools`), and, for a dual_ai session, whose side the model speaks for (0: no
 * session): the other side's replies come to it as user messages, without their calls. */
typedef struct {
  int chat, tools, side;
} view_filter;

/* Adds assistant message `a` and, after it, the results of its calls; a call without a
 * result is left out (the model is told nothing false). Returns TS_E_OK or TS_E_NOMEM. */
static int add_turn(req_list *r, msgs *l, msg *a, const view_filter *f) {
  turn *t = &r->turns[r->nturns];
  memset(t, 0, sizeof *t);
  t->js = malloc(a->len + 1);
  if (!t->js || ts_jv_init(&t->v, (int)(a->len / 2 + 16)) != TS_E_OK) {
    turn_fini(t);
    return TS_E_NOMEM;
  }
  r->nturns++;
  memcpy(t->js, a->content, a->len + 1);
  ts_req_message *m = &r->v[r->n++];
  memset(m, 0, sizeof *m);
  m->role = TS_REQ_ASSISTANT;
  if (ts_jv_parse(&t->v, t->js, a->len) != TS_E_OK) { /* not ours: plain text */
    m->text = (ts_view){a->content, a->len};
    return TS_E_OK;
  }
  ts_jv *v = &t->v;
  int sd = ts_jv_get(v, 0, "side");
  if (f->side && sd >= 0 && !ts_jv_eq(v, sd, f->side == 'b' ? "b" : "a")) {
    /* the other side's reply: what it said is this side's next user message */
    m->role = TS_REQ_USER;
    int ti = ts_jv_get(v, 0, "text");
    if (ti < 0 || ts_jv_str(v, ti, &m->text) || !m->text.len) r->n--;
    return TS_E_OK;
  }
  int calls = ts_jv_get(v, 0, "tool_calls");
  int ncalls = ts_jv_type_of(v, calls) == TS_JV_ARRAY && f->tools ? ts_jv_size(v, calls) : 0;
  t->calls = calloc(ncalls ? (size_t)ncalls : 1, sizeof *t->calls);
  if (!t->calls) return TS_E_NOMEM;
  /* raw views first: decoding strings in place would spoil them */
  for (int c = 0, e = ts_jv_first(v, calls); c < ncalls; c++, e = ts_jv_skip(v, e)) {
    int at = ts_jv_get(v, e, "arguments");
    ts_view args = ts_jv_raw(v, at);
    if (ts_jv_is_null(v, at) || !args.len) args = (ts_view){"{}", 2};
    t->calls[c].arguments = args;
  }
  size_t kept = 0;
  for (int c = 0, e = ts_jv_first(v, calls); c < ncalls; c++, e = ts_jv_skip(v, e)) {
    ts_req_call call = t->calls[c];
    call.id = call.name = (ts_view){"", 0};
    ts_jv_str(v, ts_jv_get(v, e, "id"), &call.id);
    ts_jv_str(v, ts_jv_get(v, e, "name"), &call.name);
    msg *res = result_for(l, call.id.p, call.id.len);
    if (!res) continue;
    res->used = 1;
    t->calls[kept++] = call;
    ts_req_message *rm = &r->v[r->n++];
    memset(rm, 0, sizeof *rm);
    rm->role = TS_REQ_TOOL;
    rm->text = (ts_view){res->content, res->len};
    rm->call_id = call.id;
    rm->is_error = res->is_error;
  }
  int ti = ts_jv_get(v, 0, "text");
  if (ti >= 0 && f->chat) ts_jv_str(v, ti, &m->text);
  m->calls = t->calls;
  m->ncalls = kept;
  if (!m->text.len && !kept && !(f->chat && f->tools)) { /* filtered to nothing: left out */
    memmove(m, m + 1, (size_t)(&r->v[r->n] - (m + 1)) * sizeof *m);
    r->n--;
  }
  return TS_E_OK;
}

static void free_msgs(msgs *l) {
  for (size_t i = 0; i < l->n; i++) {
    free(l->v[i].content);
    free(l->v[i].call_id);
  }
  free(l->v);
}

/* The request messages of one thread's stored messages, filtered. */
static int add_thread(req_list *r, msgs *l, const view_filter *f) {
  int rc = TS_E_OK;
  for (size_t i = 0; i < l->n && rc == TS_E_OK; i++) {
    msg *m = &l->v[i];
    if ((m->role == TS_STORE_USER && f->chat) || (m->role == TS_STORE_SYSTEM && f->chat)) {
      ts_req_message *q = &r->v[r->n++];
      memset(q, 0, sizeof *q);
      q->role = m->role == TS_STORE_USER ? TS_REQ_USER : TS_REQ_SYSTEM;
      q->text = (ts_view){m->content, m->len};
    } else if (m->role == TS_STORE_ASSISTANT && (f->chat || f->tools)) {
      rc = add_turn(r, l, m, f);
    }
  }
  return rc;
}

/* The request: the system text, the history thread's messages as `hf` lets through, then
 * the thread's own. */
static int build(ts_store *s, const char *thread, const ts_registry *reg,
                 const ts_provider *provider, const char *model, unsigned max_tokens,
                 const char *system, const char *history, const view_filter *hf, int side,
                 const char *tool_choice, int parallel, ts_buf *out) {
  if (!provider || !provider->request) return TS_E_INVAL;
  msgs l = {0}, h = {0};
  req_list r = {0};
  ts_req_tool *tools = NULL;
  int rc = history ? ts_store_messages(s, history, 0, collect, &h) : 0;
  if (rc >= 0) rc = ts_store_messages(s, thread, 0, collect, &l);
  if (l.oom || h.oom) rc = TS_E_NOMEM;
  if (rc < 0) goto out;
  rc = TS_E_OK;
  /* each stored message is at most one request message, plus one per result */
  r.v = calloc((l.n + h.n) * 2 + 2, sizeof *r.v);
  r.turns = calloc(l.n + h.n + 1, sizeof *r.turns);
  size_t ntools = ts_registry_count(reg);
  tools = calloc(ntools + 1, sizeof *tools);
  if (!r.v || !r.turns || !tools) {
    rc = TS_E_NOMEM;
    goto out;
  }
  if (system && *system) {
    ts_req_message *q = &r.v[r.n++];
    q->role = TS_REQ_SYSTEM;
    q->text = (ts_view){system, strlen(system)};
  }
  view_filter own = {1, 1, side};
  if (history) rc = add_thread(&r, &h, hf);
  if (rc == TS_E_OK) rc = add_thread(&r, &l, &own);
  if (rc != TS_E_OK) goto out;
  for (size_t i = 0; i < ntools; i++) {
    const ts_tool *t = ts_registry_at(reg, i);
    const char *schema = ts_tool_args_schema(t);
    if (!schema) schema = "{\"type\":\"object\"}";
    tools[i].name = (ts_view){ts_tool_name(t), strlen(ts_tool_name(t))};
    tools[i].description = (ts_view){ts_tool_description(t), strlen(ts_tool_description(t))};
    tools[i].schema = (ts_view){schema, strlen(schema)};
  }
  ts_request req = {model, max_tokens, r.v, r.n, tools, ntools, tool_choice, parallel};
  rc = ts_provider_request(provider, &req, out);
out:
  for (size_t i = 0; i < r.nturns; i++) turn_fini(&r.turns[i]);
  free(r.turns);
  free(r.v);
  free(tools);
  free_msgs(&l);
  free_msgs(&h);
  return rc;
}

int ts_conversation_request(ts_store *s, const char *thread, const ts_registry *reg,
                            const ts_provider *provider, const char *model, unsigned max_tokens,
                            ts_buf *out) {
  return build(s, thread, reg, provider, model, max_tokens, NULL, NULL, NULL, 0, NULL, -1, out);
}

int ts_conversation_request_turn(const ts_agent_turn *t, const ts_provider *provider,
                                 const char *model, unsigned max_tokens, ts_buf *out) {
  view_filter hf = {t->include_chat, t->include_past_tools, 0};
  return build(t->store, t->thread, t->reg, provider, t->model ? t->model : model, max_tokens,
               t->system, t->history && (hf.chat || hf.tools) ? t->history : NULL, &hf,
               t->side, t->tool_choice, t->parallel_tool_calls ? t->parallel_tool_calls - 1 : -1,
               out);
}

/* ---- one turn's calls ---------------------------------------------------------------- */

typedef struct {
  uint32_t turn;
  char *found; /* the turn's message, copied */
  size_t len;
  int oom;
} turn_find;

static int find_turn(void *user, const ts_store_message *m) {
  turn_find *f = user;
  if (m->role != TS_STORE_ASSISTANT) return 0;
  char head[40];
  int n = snprintf(head, sizeof head, "{\"turn\":%u,", f->turn);
  if (m->content_len < (size_t)n || memcmp(m->content, head, (size_t)n)) return 0;
  free(f->found);
  f->found = malloc(m->content_len + 1);
  if (!f->found) return f->oom = 1;
  memcpy(f->found, m->content, m->content_len + 1);
  f->len = m->content_len;
  return 0;
}

int ts_conversation_turn_calls(ts_store *s, const char *thread, uint32_t turn_no,
                               ts_conversation_call_cb cb, void *user) {
  turn_find f = {turn_no, NULL, 0, 0};
  int rc = ts_store_messages(s, thread, 0, find_turn, &f);
  if (f.oom) rc = TS_E_NOMEM;
  if (rc < 0 || !f.found) {
    free(f.found);
    return rc < 0 ? rc : 0;
  }
  ts_jv v;
  memset(&v, 0, sizeof v);
  int n = 0;
  ts_view *args = NULL;
  if (ts_jv_init(&v, (int)(f.len / 2 + 16)) != TS_E_OK) {
    n = TS_E_NOMEM;
  } else if (ts_jv_parse(&v, f.found, f.len) == TS_E_OK) {
    int calls = ts_jv_get(&v, 0, "tool_calls");
    int nc = ts_jv_type_of(&v, calls) == TS_JV_ARRAY ? ts_jv_size(&v, calls) : 0;
    args = calloc(nc ? (size_t)nc : 1, sizeof *args);
    if (!args) n = TS_E_NOMEM;
    /* raw views first: decoding strings in place would spoil them */
    for (int c = 0, e = ts_jv_first(&v, calls); args && c < nc; c++, e = ts_jv_skip(&v, e)) {
      int a = ts_jv_get(&v, e, "arguments");
      args[c] = ts_jv_raw(&v, a);
      if (a < 0 || ts_jv_is_null(&v, a) || !args[c].len) args[c] = (ts_view){NULL, 0};
    }
    for (int c = 0, e = ts_jv_first(&v, calls); args && c < nc; c++, e = ts_jv_skip(&v, e)) {
      ts_view id = {"", 0}, name = {"", 0};
      ts_jv_str(&v, ts_jv_get(&v, e, "id"), &id);
      ts_jv_str(&v, ts_jv_get(&v, e, "name"), &name);
      if (cb(user, (uint32_t)c, id, name, args[c])) {
        n = TS_E_ABORTED;
        break;
      }
      n++;
    }
  }
  free(args);
  ts_jv_fini(&v);
  free(f.found);
  return n;
}
