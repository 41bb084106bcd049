/*
 * live.c: see live.h.
 *
 * The items are kept in event order. After every change the leading items that can no
 * longer change are printed for good (they scroll up with the terminal) and dropped; the
 * rest are redrawn in place. A call is final when it failed, or has its result, or (when
 * nothing executes the calls, as under `sub` of a `tap`) when its arguments are ready.
 */
#include "cli/live.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void copy_str(ts_jv *jv, int i, char *dst, size_t cap) {
  ts_view v;
  dst[0] = '\0';
  if (i < 0 || ts_jv_type_of(jv, i) != TS_JV_STRING || ts_jv_str(jv, i, &v)) return;
  size_t n = v.len < cap - 1 ? v.len : cap - 1;
  while (n && n < v.len && ((unsigned char)v.p[n] & 0xC0) == 0x80) n--; /* whole chars */
  for (size_t k = 0; k < n; k++) dst[k] = (v.p[k] >= 0 && v.p[k] < 0x20) ? ' ' : v.p[k];
  dst[n] = '\0';
}

/* A raw JSON value on one line, cut to cap on a character boundary. */
static void copy_raw(ts_view v, char *dst, size_t cap) {
  size_t n = v.len < cap - 1 ? v.len : cap - 1;
  while (n && n < v.len && ((unsigned char)v.p[n] & 0xC0) == 0x80) n--;
  for (size_t k = 0; k < n; k++) dst[k] = (v.p[k] >= 0 && v.p[k] < 0x20) ? ' ' : v.p[k];
  dst[n] = '\0';
  if (n < v.len && n >= 3) memcpy(dst + n - 3, "...", 3);
}

static int final(const ts_live *w, const ts_live_item *it) {
  if (it->kind == TS_LIVE_NOTE) return 1;
  return it->state == 2 || it->state >= 4 || (it->state == 1 && !w->executes);
}

static const char *spinner[] = {"|", "/", "-", "\\"};

static void print_item(const ts_live *w, const ts_live_item *it) {
  const char *dim = w->color ? "\033[2m" : "", *off = w->color ? "\033[0m" : "";
  const char *cyan = w->color ? "\033[36m" : "", *green = w->color ? "\033[32m" : "";
  const char *red = w->color ? "\033[31m" : "", *bold = w->color ? "\033[1m" : "";
  char pre[TS_LIVE_LABEL + 48];
  snprintf(pre, sizeof pre, "%*s%s%s", 2 * (it->depth > 8 ? 8 : it->depth), "", it->label,
           it->label[0] ? ": " : "");
  if (it->kind == TS_LIVE_NOTE) {
    printf("\r\033[2K%s%s%s%s\n", pre, w->color && it->color ? it->color : "", it->progress, off);
    return;
  }
  const char *mark, *col;
  switch (it->state) {
    case 1: mark = "ready"; col = green; break;
    case 2: mark = "error"; col = red; break;
    case 3: mark = "running"; col = cyan; break;
    case 4: mark = "done"; col = green; break;
    case 5: mark = "failed"; col = red; break;
    default: mark = spinner[w->frame % 4]; col = cyan;
  }
  printf("\r\033[2K%s%s%-7s%s %s%s%s #%ld %s%s%s%s%s%s%s%s%s%s%s\n", pre, col, mark, off, bold, it->tool,
         off, it->index, it->progress[0] ? "\"" : "", it->progress, it->progress[0] ? "\"" : "",
         dim, it->detail[0] ? "  " : "", it->detail, off, it->result[0] ? "  -> " : "",
         it->state == 5 || it->state == 2 ? red : "", it->result, off);
}

static void redraw(ts_live *w) {
  if (w->drawn) printf("\033[%dA", w->drawn);
  int k = 0;
  while (k < w->n && final(w, &w->items[k])) print_item(w, &w->items[k++]);
  if (k) {
    memmove(&w->items[0], &w->items[k], sizeof w->items[0] * (size_t)(w->n - k));
    w->n -= k;
  }
  for (int i = 0; i < w->n; i++) print_item(w, &w->items[i]);
  printf("\033[J"); /* lines below, left over from a longer drawing */
  w->drawn = w->n;
  fflush(stdout);
}

static ts_live_item *push(ts_live *w, int kind) {
  if (w->n == TS_LIVE_MAX_ITEMS) { /* too many open lines: the oldest is made final */
    if (w->drawn) printf("\033[%dA", w->drawn);
    print_item(w, &w->items[0]);
    memmove(&w->items[0], &w->items[1], sizeof w->items[0] * (TS_LIVE_MAX_ITEMS - 1));
    w->n--;
    w->drawn = 0;
  }
  ts_live_item *it = &w->items[w->n++];
  memset(it, 0, sizeof *it);
  it->kind = kind;
  return it;
}

/* The thread's entry (made when new: a child one deeper than its parent); NULL when the
 * table is full. */
static ts_live_thread *thread_of(ts_live *w, const char *id, const char *parent) {
  for (int i = 0; i < w->nthreads; i++)
    if (!strcmp(w->threads[i].id, id)) return &w->threads[i];
  int depth = 0;
  if (parent && parent[0]) {
    ts_live_thread *p = thread_of(w, parent, NULL);
    depth = p ? p->depth + 1 : 1;
  }
  if (w->nthreads == TS_LIVE_MAX_THREADS) return NULL;
  ts_live_thread *t = &w->threads[w->nthreads++];
  snprintf(t->id, sizeof t->id, "%s", id);
  t->name[0] = '\0';
  t->depth = depth;
  return t;
}

/* A new line belongs to the thread of the event being fed: its depth and name. */
static void mark_line(ts_live *w, ts_live_item *it) {
  if (w->cur < 0 || w->cur >= w->nthreads) return;
  const ts_live_thread *t = &w->threads[w->cur];
  if (!t->depth) return;
  it->depth = t->depth;
  const char *who = t->name[0] ? t->name : t->id; /* a long id is cut to the label */
  size_t n = strlen(who) < sizeof it->label - 1 ? strlen(who) : sizeof it->label - 1;
  while (n && n < strlen(who) && ((unsigned char)who[n] & 0xC0) == 0x80) n--;
  memcpy(it->label, who, n);
  it->label[n] = '\0';
}

static int thread_index(ts_live *w, const char *id, const char *parent) {
  ts_live_thread *t = id[0] ? thread_of(w, id, parent) : NULL;
  return t ? (int)(t - w->threads) : -1;
}

static void note(ts_live *w, const char *color, const char *text) {
  ts_live_item *it = push(w, TS_LIVE_NOTE);
  mark_line(w, it);
  it->color = color;
  size_t n = strlen(text);
  if (n >= sizeof it->progress) n = sizeof it->progress - 1;
  while (n && ((unsigned char)text[n] & 0xC0) == 0x80) n--; /* cut on a character boundary */
  memcpy(it->progress, text, n);
  it->progress[n] = '\0';
}

/* The model's text so far becomes a line of its own (before a call, a turn's end), on the
 * line of the thread that wrote it. */
static void flush_text(ts_live *w) {
  if (!w->text[0]) return;
  int cur = w->cur;
  w->cur = thread_index(w, w->text_thread, NULL);
  note(w, NULL, w->text);
  w->cur = cur;
  w->text[0] = '\0';
}

static ts_live_item *find_call(ts_live *w, const char *thread, long turn, long index,
                               const char *call_id, const char *tool) {
  for (int i = w->n - 1; i >= 0; i--) {
    ts_live_item *it = &w->items[i];
    if (it->kind == TS_LIVE_CALL && it->index == index && !strcmp(it->thread, thread) &&
        (turn ? it->turn == turn : !strcmp(it->call_id, call_id)))
      return it;
  }
  flush_text(w);
  ts_live_item *it = push(w, TS_LIVE_CALL);
  mark_line(w, it);
  snprintf(it->thread, sizeof it->thread, "%s", thread);
  snprintf(it->tool, sizeof it->tool, "%s", tool);
  snprintf(it->call_id, sizeof it->call_id, "%s", call_id);
  it->index = index;
  it->turn = turn;
  return it;
}

void ts_live_event(ts_live *w, const char *json, size_t len) {
  if (len + 1 > w->scratch_cap) {
    size_t cap = len + 1 > 4096 ? len + 1 : 4096;
    char *p = realloc(w->scratch, cap);
    if (!p) return;
    w->scratch = p;
    w->scratch_cap = cap;
  }
  memcpy(w->scratch, json, len);
  w->scratch[len] = '\0';
  int rc;
  while ((rc = ts_jv_parse(&w->jv, w->scratch, len)) == TS_E_JV_TOO_MANY_TOKENS &&
         w->jv.cap < (1 << 20)) { /* a big tool_call_ready: grow the token array */
    int cap = w->jv.cap * 4;
    ts_jv_fini(&w->jv);
    if (ts_jv_init(&w->jv, cap)) return;
    memcpy(w->scratch, json, len);
  }
  if (rc) return;
  ts_jv *jv = &w->jv;
  char type[32], thread[TS_THREAD_ID_MAX + 1], tool[64], text[TS_LIVE_TEXT];
  char parent[TS_THREAD_ID_MAX + 1];
  copy_str(jv, ts_jv_get(jv, 0, "type"), type, sizeof type);
  copy_str(jv, ts_jv_get(jv, 0, "thread"), thread, sizeof thread);
  copy_str(jv, ts_jv_get(jv, 0, "parent"), parent, sizeof parent);
  w->cur = thread_index(w, thread, parent);
  int64_t index = -1, bytes = 0, turn = 0;
  int ii = ts_jv_get(jv, 0, "index");
  if (ii >= 0 && ts_jv_int(jv, ii, &index) == 0 && index >= 0) {
    char call_id[96];
    copy_str(jv, ts_jv_get(jv, 0, "tool"), tool, sizeof tool);
    copy_str(jv, ts_jv_get(jv, 0, "call_id"), call_id, sizeof call_id);
    if (ts_jv_int(jv, ts_jv_get(jv, 0, "turn"), &turn) || turn < 0) turn = 0;
    ts_live_item *c = find_call(w, thread, (long)turn, (long)index, call_id, tool);
    if (!strcmp(type, "tool_call_started")) {
      copy_str(jv, ts_jv_get(jv, 0, "progress"), c->progress, sizeof c->progress);
    } else if (!strcmp(type, "tool_call_heartbeat")) {
      ts_jv_int(jv, ts_jv_get(jv, 0, "bytes"), &bytes);
      snprintf(c->detail, sizeof c->detail, "%lld bytes", (long long)bytes);
    } else if (!strcmp(type, "tool_call_ready")) {
      c->state = 1;
      ts_view a = ts_jv_raw(jv, ts_jv_get(jv, 0, "arguments"));
      snprintf(c->detail, sizeof c->detail, "%zu bytes of arguments", a.len);
    } else if (!strcmp(type, "tool_call_error")) {
      c->state = 2;
      copy_str(jv, ts_jv_get(jv, 0, "error"), c->result, sizeof c->result);
    } else if (!strcmp(type, "tool_execution_started")) {
      w->executes = 1;
      c->state = 3;
    } else if (!strcmp(type, "tool_result")) {
      w->executes = 1;
      int failed = ts_jv_is_true(jv, ts_jv_get(jv, 0, "is_error"));
      c->state = failed ? 5 : 4;
      char ms[32] = "";
      ts_view d = ts_jv_raw(jv, ts_jv_get(jv, 0, "duration_ms"));
      if (d.len && d.len < 20) snprintf(ms, sizeof ms, "%.*s ms", (int)d.len, d.p);
      snprintf(c->detail, sizeof c->detail, "%s", ms);
      if (failed) copy_str(jv, ts_jv_get(jv, 0, "error"), c->result, sizeof c->result);
      else copy_raw(ts_jv_raw(jv, ts_jv_get(jv, 0, "result")), c->result, sizeof c->result);
    }
    redraw(w);
    return;
  }
  if (!strcmp(type, "text_delta")) {
    copy_str(jv, ts_jv_get(jv, 0, "text"), text, sizeof text);
    if (w->text[0] && strcmp(w->text_thread, thread)) flush_text(w); /* another thread's */
    snprintf(w->text_thread, sizeof w->text_thread, "%s", thread);
    size_t have = strlen(w->text), add = strlen(text);
    if (have + add >= sizeof w->text - 1) { /* a long text goes out in lines */
      flush_text(w);
      have = 0;
    }
    memcpy(w->text + have, text, add + 1);
    return; /* shown when the line is complete: at a call, a turn's end or the cap */
  }
  if (!strcmp(type, "stream_error")) {
    flush_text(w);
    copy_str(jv, ts_jv_get(jv, 0, "error"), text, sizeof text);
    char line[TS_LIVE_TEXT + TS_THREAD_ID_MAX + 64];
    snprintf(line, sizeof line, "stream error (%s): %s", thread, text);
    note(w, "\033[31m", line);
  } else if (!strcmp(type, "thread_created")) {
    flush_text(w);
    char name[TS_LIVE_LABEL], agent[64], rel[64];
    copy_str(jv, ts_jv_get(jv, 0, "name"), name, sizeof name);
    copy_str(jv, ts_jv_get(jv, 0, "agent"), agent, sizeof agent);
    copy_str(jv, ts_jv_get(jv, 0, "relationship"), rel, sizeof rel);
    if (w->cur >= 0 && name[0]) snprintf(w->threads[w->cur].name, TS_LIVE_LABEL, "%s", name);
    char line[1024];
    snprintf(line, sizeof line, "+ %s: agent %s (%s, %s), under %s", thread, agent, rel,
             ts_jv_is_true(jv, ts_jv_get(jv, 0, "blocking")) ? "blocking" : "non-blocking",
             parent[0] ? parent : "-");
    note(w, "\033[35m", line);
  } else if (!strcmp(type, "subagent_message")) {
    flush_text(w);
    char from[TS_THREAD_ID_MAX + 1];
    copy_str(jv, ts_jv_get(jv, 0, "from"), from, sizeof from);
    copy_str(jv, ts_jv_get(jv, 0, "message"), text, sizeof text);
    char line[TS_LIVE_TEXT + TS_THREAD_ID_MAX + 64];
    snprintf(line, sizeof line, "< message from %s: %s", from[0] ? from : "outside", text);
    note(w, "\033[35m", line);
  } else if (!strcmp(type, "thread_finished")) {
    flush_text(w);
    char status[32];
    copy_str(jv, ts_jv_get(jv, 0, "status"), status, sizeof status);
    copy_str(jv, ts_jv_get(jv, ts_jv_get(jv, 0, "outcome"), "text"), text, sizeof text);
    char line[TS_LIVE_TEXT + 64];
    snprintf(line, sizeof line, "= finished: %s%s%s", status, text[0] ? ": " : "", text);
    note(w, strcmp(status, "done") ? "\033[31m" : "\033[35m", line);
  } else if (!strcmp(type, "turn_finished")) {
    flush_text(w);
    copy_str(jv, ts_jv_get(jv, 0, "stop_reason"), text, sizeof text);
    char line[TS_LIVE_TEXT + TS_THREAD_ID_MAX + 64];
    snprintf(line, sizeof line, "turn finished (%s)%s%s", thread, text[0] ? ": " : "", text);
    note(w, "\033[2m", line);
  } else {
    return;
  }
  redraw(w);
}

int ts_live_init(ts_live *w) {
  memset(w, 0, sizeof *w);
  w->cur = -1;
  const char *nc = getenv("NO_COLOR");
  w->color = !(nc && nc[0]);
  return ts_jv_init(&w->jv, 4096) != TS_E_OK;
}

void ts_live_tick(ts_live *w) {
  if (!w->n) return;
  w->frame++;
  redraw(w);
}

void ts_live_fini(ts_live *w) {
  flush_text(w);
  if (w->n) { /* the end of the output: every line is final as it stands */
    if (w->drawn) printf("\033[%dA", w->drawn);
    for (int i = 0; i < w->n; i++) print_item(w, &w->items[i]);
    printf("\033[J");
    fflush(stdout);
    w->n = w->drawn = 0;
  }
  ts_jv_fini(&w->jv);
  free(w->scratch);
}
