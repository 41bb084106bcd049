/*
 * threads.c: `toolstream threads`: the threads in a store, as a tree, and one thread in
 * full (its messages, its calls with durations and results, its children), so that
 * nobody has to open SQLite by hand to see what a run did.
 *
 * Everything shown comes from the store as committed: tool results were redacted of
 * secrets before they were stored, and a secret's value is not in the store in the clear
 * at all, so nothing here can print one. Values of variables are not shown here
 * (`toolstream env list` shows names and text values).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/strbuf.h"
#include "base/thread_id.h"
#include "cli/cli.h"
#include "store/store.h"

enum { O_DATA_DIR = 1, O_JSON };

static const ts_cli_opt threads_opts[] = {
    {"json", 0, TS_CLI_FLAG, O_JSON, 0, 0, NULL,
     "JSON instead of text (list: an array; show: one object)", NULL},
    {"data-dir", 0, TS_CLI_STRING, O_DATA_DIR, 0, 0, "DIR",
     "where the store lives (default $TOOLSTREAM_DATA_DIR,\n"
     "$XDG_DATA_HOME/toolstream, ~/.local/share/toolstream)", NULL},
};
static const ts_cli_group threads_group = {"threads", NULL, threads_opts,
                                           sizeof threads_opts / sizeof threads_opts[0], NULL};
static const ts_cli_group *const threads_groups[] = {&threads_group, NULL};

const ts_cli_command ts_cli_cmd_threads = {
    "threads",
    "[show ID] [options]",
    "the threads of the store as a tree; 'threads show ID' for one thread",
    "Lists the threads of the store as a tree: id, parent, created, last activity, turns,\n"
    "tool calls and state (idle, running, waiting_for_variable, done, failed,\n"
    "interrupted), each subagent instance with its name. 'show ID' prints one thread:\n"
    "its messages, its calls with their durations and results, the calls waiting for a\n"
    "variable, the messages queued to it, what it is as a subagent (agent, relationship,\n"
    "name, outcome), and the tree of threads below it.",
    threads_groups,
    "Times are UTC. Exit status: 0; 1 an error (no such thread, the store); 2 usage.",
    ts_cli_threads,
};

typedef struct {
  const char *data_dir, *pos[2];
  int npos, json;
} threads_args;

static int threads_set(void *user, const ts_cli_opt *o, const char *val, uint64_t n) {
  threads_args *a = user;
  (void)n;
  if (!o) {
    if (a->npos == 2) {
      fprintf(stderr, "toolstream threads: too many arguments (try --help)\n");
      return 2;
    }
    a->pos[a->npos++] = val;
    return 0;
  }
  if (o->id == O_DATA_DIR) a->data_dir = val;
  else a->json = 1;
  return 0;
}

/* "2026-12-01 10:07:40" (UTC) */
static void when(int64_t ms, char *buf, size_t cap) {
  time_t t = (time_t)(ms / 1000);
  struct tm tm;
  if (ms <= 0 || !gmtime_r(&t, &tm)) {
    snprintf(buf, cap, "-");
    return;
  }
  strftime(buf, cap, "%Y-%m-%d %H:%M:%S", &tm);
}

static void json_str(ts_buf *b, const char *key, const char *v) {
  ts_buf_putc(b, '"');
  ts_buf_puts(b, key);
  ts_buf_puts(b, "\":");
  if (v) ts_buf_append_json_string(b, v, strlen(v));
  else ts_buf_puts(b, "null");
}

static void json_num(ts_buf *b, const char *key, int64_t v) {
  ts_buf_putc(b, '"');
  ts_buf_puts(b, key);
  ts_buf_puts(b, "\":");
  if (v < 0) {
    ts_buf_putc(b, '-');
    v = -v;
  }
  ts_buf_append_u64(b, (uint64_t)v);
}

static void thread_json(ts_buf *b, const ts_store_thread *t) {
  ts_buf_putc(b, '{');
  json_str(b, "id", t->id);
  ts_buf_putc(b, ',');
  json_str(b, "parent", t->parent);
  ts_buf_putc(b, ',');
  json_str(b, "workspace", t->workspace);
  ts_buf_putc(b, ',');
  json_str(b, "state", t->state);
  ts_buf_puts(b, ",\"tags\":");
  ts_buf_puts(b, t->tags && *t->tags ? t->tags : "[]");
  ts_buf_putc(b, ',');
  json_num(b, "created_at_ms", t->created_at_ms);
  ts_buf_putc(b, ',');
  json_num(b, "last_activity_ms", t->last_activity_ms);
  ts_buf_putc(b, ',');
  json_num(b, "turns", t->turns);
  ts_buf_putc(b, ',');
  json_num(b, "calls", t->calls);
  ts_buf_putc(b, ',');
  json_num(b, "children", t->children);
  ts_buf_putc(b, ',');
  json_num(b, "depth", t->depth);
  ts_buf_putc(b, '}');
}

/* The value of the thread's "name:" tag (a subagent instance's name), or NULL. */
static const char *name_tag(const ts_store_thread *t, char *buf, size_t cap) {
  const char *p = t->tags ? strstr(t->tags, "\"name:") : NULL;
  if (!p) return NULL;
  p += 6;
  size_t n = 0;
  while (p[n] && p[n] != '"' && n + 1 < cap) n++; /* a name with escapes shows them */
  memcpy(buf, p, n);
  buf[n] = '\0';
  return buf;
}

/* The rows of a tree listing (depth first, as the store gives them), drawn at the end. */
typedef struct {
  char id[TS_THREAD_ID_MAX + 1];
  char name[128];
  char line[512]; /* what follows the id */
  uint32_t depth;
} tree_row;

typedef struct {
  tree_row *v;
  size_t n, cap;
  uint32_t base; /* the depth drawn at the left edge */
} tree;

static int tree_add(tree *tr, const ts_store_thread *t, const char *line) {
  if (tr->n == tr->cap) {
    size_t cap = tr->cap ? tr->cap * 2 : 64;
    tree_row *v = realloc(tr->v, cap * sizeof *v);
    if (!v) return -1;
    tr->v = v, tr->cap = cap;
  }
  tree_row *r = &tr->v[tr->n++];
  snprintf(r->id, sizeof r->id, "%s", t->id);
  char nb[128];
  const char *nm = name_tag(t, nb, sizeof nb);
  snprintf(r->name, sizeof r->name, "%s", nm ? nm : "");
  snprintf(r->line, sizeof r->line, "%s", line);
  r->depth = t->depth;
  return 0;
}

/* Draws the rows, each indented two spaces per level below `base` (a tree read top down,
 * children under their parent); `width` pads the id column, else `sep` follows the id. */
static void tree_draw(const tree *tr, ts_buf *out, int width, const char *sep) {
  for (size_t i = 0; i < tr->n; i++) {
    const tree_row *r = &tr->v[i];
    uint32_t rel = r->depth - tr->base;
    char id[700];
    snprintf(id, sizeof id, "%*s%s%s%s%s", (int)(2 * (rel > 16 ? 16 : rel)), "", r->id,
             r->name[0] ? " (" : "", r->name, r->name[0] ? ")" : "");
    char line[1400];
    snprintf(line, sizeof line, "%-*s%s%s\n", width, id, sep, r->line);
    ts_buf_puts(out, line);
  }
}

/* Where rows go: with `json`, elements of a JSON array into out (n so far); else rows of
 * a tree to draw (tr), each a thread's id and what follows it: the listing's columns
 * (parent, created, last activity, turns, calls, state) with `columns`, else the short
 * form of show's subtree ("3 turns, 5 calls, finished"). */
typedef struct {
  ts_buf *out;
  int json, n;
  int columns;
  tree tr;
  uint32_t depth; /* show: the shown thread's depth in its tree (the store's rows say 0) */
} rows;

/* One thread as the next row: the one row printer of the listing, show's children (JSON)
 * and show's subtree (text). Returns 0, or 1 when out of memory. */
static int thread_row(rows *r, const ts_store_thread *t) {
  if (r->json) {
    if (r->n) ts_buf_putc(r->out, ',');
    thread_json(r->out, t);
  } else {
    char c[32], a[32], line[sizeof r->tr.v->line];
    when(t->created_at_ms, c, sizeof c);
    when(t->last_activity_ms, a, sizeof a);
    if (r->columns)
      snprintf(line, sizeof line, "%-20s %-19s  %-19s  %5u %5u  %s", t->parent ? t->parent : "-",
               c, a, t->turns, t->calls, t->state);
    else
      snprintf(line, sizeof line, "%u turns, %u calls, %s", t->turns, t->calls, t->state);
    if (tree_add(&r->tr, t, line)) return 1;
  }
  r->n++;
  return 0;
}

static int list_row(void *user, const ts_store_thread *t) { return thread_row(user, t); }

/* ---- show -------------------------------------------------------------------------------- */

static const char *clip(const char *s, size_t len, char *buf, size_t cap) {
  /* one line, at most cap-4 bytes, not cutting a UTF-8 sequence */
  size_t n = 0, i = 0;
  for (; i < len && n + 4 < cap; i++) {
    char ch = s[i];
    buf[n++] = ch == '\n' || ch == '\r' || ch == '\t' ? ' ' : ch;
  }
  if (i < len) {
    while (n && ((unsigned char)buf[n - 1] & 0xC0) == 0x80) n--;
    if (n && ((unsigned char)buf[n - 1] & 0xC0) == 0xC0) n--;
    memcpy(buf + n, "...", 3);
    n += 3;
  }
  buf[n] = '\0';
  return buf;
}

typedef rows shower; /* show's sections: out, json and the count n of each */

static int show_msg(void *user, const ts_store_message *m) {
  shower *s = user;
  if (s->json) {
    if (s->n) ts_buf_putc(s->out, ',');
    ts_buf_putc(s->out, '{');
    json_num(s->out, "seq", (int64_t)m->seq);
    ts_buf_putc(s->out, ',');
    json_str(s->out, "role", ts_store_role_name(m->role));
    ts_buf_puts(s->out, ",\"content\":");
    ts_buf_append_json_string(s->out, m->content, m->content_len);
    if (m->tool_call_id) {
      ts_buf_putc(s->out, ',');
      json_str(s->out, "tool_call_id", m->tool_call_id);
    }
    if (m->tool_name) {
      ts_buf_putc(s->out, ',');
      json_str(s->out, "tool", m->tool_name);
    }
    ts_buf_puts(s->out, m->is_error ? ",\"is_error\":true," : ",\"is_error\":false,");
    json_num(s->out, "created_at_ms", m->created_at_ms);
    ts_buf_putc(s->out, '}');
  } else {
    char c[32], body[240], line[600];
    when(m->created_at_ms, c, sizeof c);
    snprintf(line, sizeof line, "  %4llu %s %-9s %s%s\n", (unsigned long long)m->seq, c,
             ts_store_role_name(m->role), m->is_error ? "(error) " : "",
             clip(m->content, m->content_len, body, sizeof body));
    ts_buf_puts(s->out, line);
  }
  s->n++;
  return 0;
}

static int show_call(void *user, const ts_store_call_record *c) {
  shower *s = user;
  int64_t dur = c->finished ? c->finished_at_ms - c->start.started_at_ms : -1;
  if (s->json) {
    if (s->n) ts_buf_putc(s->out, ',');
    ts_buf_putc(s->out, '{');
    json_num(s->out, "turn", c->start.turn);
    ts_buf_putc(s->out, ',');
    json_num(s->out, "index", c->start.idx);
    ts_buf_putc(s->out, ',');
    json_str(s->out, "call_id", c->start.call_id);
    ts_buf_putc(s->out, ',');
    json_str(s->out, "tool", c->start.tool);
    ts_buf_puts(s->out, ",\"arguments\":");
    ts_buf_append_json_compact(s->out, c->start.args, c->start.args_len);
    ts_buf_putc(s->out, ',');
    json_num(s->out, "attempts", c->start.attempts);
    ts_buf_putc(s->out, ',');
    json_str(s->out, "state", c->finished ? "finished" : "unfinished");
    ts_buf_putc(s->out, ',');
    json_num(s->out, "started_at_ms", c->start.started_at_ms);
    if (c->finished) {
      ts_buf_putc(s->out, ',');
      json_num(s->out, "duration_ms", dur);
      ts_buf_puts(s->out, c->result_is_error ? ",\"is_error\":true" : ",\"is_error\":false");
      ts_buf_puts(s->out, ",\"result\":");
      ts_buf_append_json_string(s->out, c->result ? c->result : "", c->result_len);
    }
    ts_buf_putc(s->out, '}');
  } else {
    char a[160], res[240], line[800], d[32];
    if (c->finished) snprintf(d, sizeof d, "%lld ms", (long long)dur);
    else snprintf(d, sizeof d, "unfinished");
    snprintf(line, sizeof line, "  %u/%u %s %s(%s) %s, %u attempt%s -> %s%s\n", c->start.turn,
             c->start.idx, c->start.call_id[0] ? c->start.call_id : "-", c->start.tool,
             clip(c->start.args, c->start.args_len, a, sizeof a), d, c->start.attempts,
             c->start.attempts == 1 ? "" : "s", c->finished && c->result_is_error ? "error: " : "",
             c->finished ? clip(c->result ? c->result : "", c->result_len, res, sizeof res) : "-");
    ts_buf_puts(s->out, line);
  }
  s->n++;
  return 0;
}

static int show_parked(void *user, const ts_store_parked *p) {
  shower *s = user;
  if (s->json) {
    if (s->n) ts_buf_putc(s->out, ',');
    ts_buf_putc(s->out, '{');
    json_num(s->out, "turn", p->turn);
    ts_buf_putc(s->out, ',');
    json_num(s->out, "index", p->idx);
    ts_buf_putc(s->out, ',');
    json_str(s->out, "call_id", p->call_id);
    ts_buf_putc(s->out, ',');
    json_str(s->out, "tool", p->tool);
    ts_buf_putc(s->out, ',');
    json_str(s->out, "variable", p->variable);
    ts_buf_putc(s->out, ',');
    json_num(s->out, "parked_at_ms", p->parked_at_ms);
    ts_buf_putc(s->out, '}');
  } else {
    char c[32], line[700];
    when(p->parked_at_ms, c, sizeof c);
    snprintf(line, sizeof line, "  %u/%u %s %s waits for %s since %s (toolstream env set %s %s)\n",
             p->turn, p->idx, p->call_id[0] ? p->call_id : "-", p->tool, p->variable, c,
             p->thread, p->variable);
    ts_buf_puts(s->out, line);
  }
  s->n++;
  return 0;
}

/* The shown thread's children, in JSON. */
static int show_child(void *user, const ts_store_thread *t) {
  rows *r = user;
  ts_store_thread c = *t;
  c.depth = r->depth + 1;
  return thread_row(r, &c);
}

/* A thread's depth in its tree: its parents counted up to the root (bounded, in case a
 * store holds a loop). */
typedef struct {
  char id[TS_THREAD_ID_MAX + 1];
  int has_parent;
} parent_of;

static int grab_parent(void *user, const ts_store_thread *t) {
  parent_of *p = user;
  p->has_parent = t->parent != NULL;
  if (t->parent) snprintf(p->id, sizeof p->id, "%s", t->parent);
  return 0;
}

static uint32_t depth_of(ts_store *st, const char *id) {
  parent_of p;
  char at[TS_THREAD_ID_MAX + 1];
  snprintf(at, sizeof at, "%s", id);
  uint32_t d = 0;
  for (; d < 4096; d++) {
    p.has_parent = 0;
    if (ts_store_thread_get(st, at, grab_parent, &p) != 1 || !p.has_parent) break;
    memcpy(at, p.id, sizeof at);
  }
  return d;
}

/* The subtree below the shown thread (every descendant, drawn as a tree). */
typedef struct {
  const char *root;
  int in, done;
  uint32_t depth;
  rows r;
} subtree;

static int subtree_row(void *user, const ts_store_thread *t) {
  subtree *st = user;
  if (st->done) return 0;
  if (!st->in) {
    if (!strcmp(t->id, st->root)) st->in = 1, st->depth = t->depth;
    return 0;
  }
  if (t->depth <= st->depth) {
    st->done = 1;
    return 0;
  }
  return thread_row(&st->r, t);
}

static int show_instance(void *user, const ts_store_subagent *a) {
  shower *s = user;
  if (s->json) {
    ts_buf_puts(s->out, ",\"subagent\":{");
    json_str(s->out, "agent", a->agent);
    ts_buf_putc(s->out, ',');
    json_str(s->out, "relationship", a->relationship);
    ts_buf_putc(s->out, ',');
    json_str(s->out, "name", a->name);
    ts_buf_puts(s->out, a->blocking ? ",\"blocking\":true," : ",\"blocking\":false,");
    json_num(s->out, "created_by_turn", a->turn);
    ts_buf_putc(s->out, ',');
    json_num(s->out, "created_by_index", a->idx);
    ts_buf_putc(s->out, ',');
    json_num(s->out, "reports", a->reports);
    ts_buf_puts(s->out, ",\"outcome\":");
    if (a->outcome) ts_buf_append_json_compact(s->out, a->outcome, strlen(a->outcome));
    else ts_buf_puts(s->out, "null");
    ts_buf_putc(s->out, '}');
  } else {
    char line[900];
    snprintf(line, sizeof line,
             "  subagent: %s of agent %s (relationship %s, %s), created by call %u/%u of %s, "
             "%u outcome%s reported\n",
             a->name, a->agent, a->relationship, a->blocking ? "blocking" : "non-blocking",
             a->turn, a->idx, a->parent, a->reports, a->reports == 1 ? "" : "s");
    ts_buf_puts(s->out, line);
  }
  s->n++;
  return 0;
}

static int show_inbox(void *user, const ts_store_inbox_item *it) {
  shower *s = user;
  if (s->json) {
    if (s->n) ts_buf_putc(s->out, ',');
    ts_buf_putc(s->out, '{');
    json_num(s->out, "seq", (int64_t)it->seq);
    ts_buf_putc(s->out, ',');
    json_str(s->out, "from", it->sender);
    ts_buf_puts(s->out, ",\"content\":");
    ts_buf_append_json_string(s->out, it->content, it->content_len);
    ts_buf_putc(s->out, ',');
    json_num(s->out, "created_at_ms", it->created_at_ms);
    ts_buf_putc(s->out, '}');
  } else {
    char c[32], body[240], line[700];
    when(it->created_at_ms, c, sizeof c);
    snprintf(line, sizeof line, "  %4llu %s from %s: %s\n", (unsigned long long)it->seq, c,
             it->sender ? it->sender : "-", clip(it->content, it->content_len, body, sizeof body));
    ts_buf_puts(s->out, line);
  }
  s->n++;
  return 0;
}

static int show_head(void *user, const ts_store_thread *t) {
  shower *s = user;
  if (s->json) {
    ts_buf_puts(s->out, "{\"thread\":");
    ts_store_thread c = *t;
    c.depth = s->depth;
    thread_json(s->out, &c);
  } else {
    char c[32], a[32], line[1400];
    when(t->created_at_ms, c, sizeof c);
    when(t->last_activity_ms, a, sizeof a);
    snprintf(line, sizeof line,
             "thread %s\n  parent: %s\n  workspace: %s\n  state: %s\n  tags: %s\n  created: %s, "
             "last activity: %s\n  %u turns, %u tool calls, %u children\n",
             t->id, t->parent ? t->parent : "-", t->workspace ? t->workspace : "-", t->state,
             t->tags && strcmp(t->tags, "[]") ? t->tags : "-", c, a, t->turns, t->calls,
             t->children);
    ts_buf_puts(s->out, line);
  }
  return 0;
}

static int show(ts_store *st, const char *id, int json, ts_buf *out) {
  shower s = {out, json, 0, 0, {0}, 0};
  if (json) s.depth = depth_of(st, id);
  int r = ts_store_thread_get(st, id, show_head, &s);
  if (r == 0) {
    fprintf(stderr, "toolstream threads: no thread %s in %s\n", id, ts_store_path(st));
    return 1;
  }
  if (r >= 0) r = ts_store_subagent_get(st, id, show_instance, &s);
  struct {
    const char *key, *title;
  } parts[] = {{"messages", "messages"}, {"calls", "calls"},
               {"waiting", "waiting for a variable"},
               {"inbox", "queued messages (delivered between turns)"}, {"children", "children"}};
  for (int k = 0; r >= 0 && k < 5; k++) {
    if (json) {
      ts_buf_puts(out, ",\"");
      ts_buf_puts(out, parts[k].key);
      ts_buf_puts(out, "\":[");
    } else {
      ts_buf_puts(out, parts[k].title);
      ts_buf_puts(out, ":\n");
    }
    s.n = 0;
    r = k == 0   ? ts_store_messages(st, id, 0, show_msg, &s)
        : k == 1 ? ts_store_calls(st, id, show_call, &s)
        : k == 2 ? ts_store_parked_calls(st, id, show_parked, &s)
        : k == 3 ? ts_store_inbox(st, id, 1, show_inbox, &s)
        : json   ? ts_store_thread_children(st, id, show_child, &s)
                 : 0;
    if (k == 4 && !json && r >= 0) { /* the whole subtree, drawn */
      subtree sub = {id, 0, 0, 0, {NULL, 0, 0, 0, {0}, 0}};
      r = ts_store_threads(st, subtree_row, &sub);
      sub.r.tr.base = sub.depth + 1;
      ts_buf tmp;
      ts_buf_init(&tmp, (size_t)64 << 20);
      tree_draw(&sub.r.tr, &tmp, 0, "  ");
      for (size_t i = 0; i < tmp.len;) { /* two spaces before each line */
        const char *nl = memchr(tmp.p + i, '\n', tmp.len - i);
        size_t n = nl ? (size_t)(nl - (tmp.p + i)) + 1 : tmp.len - i;
        ts_buf_puts(out, "  ");
        ts_buf_append(out, tmp.p + i, n);
        i += n;
      }
      ts_buf_fini(&tmp);
      s.n = sub.r.n;
      free(sub.r.tr.v);
    }
    if (json) ts_buf_putc(out, ']');
    else if (s.n == 0) ts_buf_puts(out, "  (none)\n");
  }
  if (json) ts_buf_puts(out, "}\n");
  if (r < 0) {
    fprintf(stderr, "toolstream threads: %s\n", ts_store_errmsg(st));
    return 1;
  }
  return 0;
}

int ts_cli_threads(int argc, char **argv) {
  threads_args ta;
  memset(&ta, 0, sizeof ta);
  ts_cli_common com;
  memset(&com, 0, sizeof com);
  int r = ts_cli_parse(&ts_cli_cmd_threads, argc, argv, &com, threads_set, &ta);
  if (r >= 0) return r;
  const char *data_dir = ta.data_dir, *const *pos = ta.pos;
  int npos = ta.npos, json = ta.json;
  if (npos && (strcmp(pos[0], "show") || npos != 2)) {
    fprintf(stderr, "toolstream threads: %s (try --help)\n",
            strcmp(pos[0], "show") ? "the only subcommand is 'show ID'" : "show wants an ID");
    return 2;
  }
  if (npos == 2 && !ts_thread_id_valid(pos[1], strlen(pos[1]))) {
    fprintf(stderr, "toolstream threads: '%.64s' is not a thread id\n", pos[1]);
    return 2;
  }
  ts_store *s = NULL;
  char why[512];
  if (ts_store_open(data_dir, &s, why, sizeof why)) {
    fprintf(stderr, "toolstream threads: cannot open the store: %s\n", why);
    return 1;
  }
  ts_buf out;
  ts_buf_init(&out, (size_t)512 << 20);
  int rc = 0;
  if (npos == 2) {
    rc = show(s, pos[1], json, &out);
  } else {
    rows l = {&out, json, 0, 1, {0}, 0};
    if (json) ts_buf_putc(&out, '[');
    else
      ts_buf_puts(&out, "ID                           PARENT               CREATED              "
                        "LAST ACTIVITY        TURNS CALLS  STATE\n");
    r = ts_store_threads(s, list_row, &l);
    if (json) ts_buf_puts(&out, "]\n");
    else if (!l.n) ts_buf_puts(&out, "(no threads)\n");
    else tree_draw(&l.tr, &out, 28, " ");
    free(l.tr.v);
    if (r < 0) {
      fprintf(stderr, "toolstream threads: %s\n", ts_store_errmsg(s));
      rc = 1;
    }
  }
  if (out.err) {
    fprintf(stderr, "toolstream threads: %s\n", ts_err_message(out.err));
    rc = 1;
  } else if (!rc) {
    fwrite(out.p ? out.p : "", 1, out.len, stdout);
  }
  ts_buf_fini(&out);
  ts_store_close(s);
  return rc;
}
