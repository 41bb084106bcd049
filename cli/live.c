/*
 * live.c: see live.h.
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

static ts_live_call *find_call(ts_live *w, const char *thread, long index, const char *call_id,
                               const char *tool) {
  for (int i = w->n - 1; i >= 0; i--)
    if (w->calls[i].index == index && !strcmp(w->calls[i].thread, thread) &&
        !strcmp(w->calls[i].call_id, call_id))
      return &w->calls[i];
  if (w->n == TS_LIVE_MAX_CALLS) { /* the oldest leaves the screen */
    memmove(&w->calls[0], &w->calls[1], sizeof w->calls[0] * (TS_LIVE_MAX_CALLS - 1));
    w->n--;
  }
  ts_live_call *c = &w->calls[w->n++];
  memset(c, 0, sizeof *c);
  snprintf(c->thread, sizeof c->thread, "%s", thread);
  snprintf(c->tool, sizeof c->tool, "%s", tool);
  snprintf(c->call_id, sizeof c->call_id, "%s", call_id);
  c->index = index;
  return c;
}

static const char *spinner[] = {"|", "/", "-", "\\"};

static void redraw(ts_live *w) {
  const char *dim = w->color ? "\033[2m" : "", *off = w->color ? "\033[0m" : "";
  const char *cyan = w->color ? "\033[36m" : "", *green = w->color ? "\033[32m" : "";
  const char *red = w->color ? "\033[31m" : "", *bold = w->color ? "\033[1m" : "";
  if (w->drawn) printf("\033[%dA", w->drawn);
  for (int i = 0; i < w->n; i++) {
    ts_live_call *c = &w->calls[i];
    const char *mark, *col;
    switch (c->state) {
      case 1: mark = "ready"; col = green; break;
      case 2: mark = "error"; col = red; break;
      case 3: mark = "running"; col = cyan; break;
      case 4: mark = "done"; col = green; break;
      case 5: mark = "failed"; col = red; break;
      default: mark = spinner[w->frame % 4]; col = cyan;
    }
    printf("\r\033[2K%s%-7s%s %s%s%s #%ld %s%s%s%s%s%s\n", col, mark, off, bold, c->tool, off,
           c->index, c->progress[0] ? "\"" : "", c->progress, c->progress[0] ? "\"" : "", dim,
           c->detail[0] ? "  " : "", c->detail);
    printf("%s", off);
  }
  w->drawn = w->n;
  fflush(stdout);
}

/* A line printed above the call list, where it stays. */
static void note_line(ts_live *w, const char *color, const char *text) {
  if (w->drawn) printf("\033[%dA", w->drawn);
  printf("\r\033[2K%s%s%s\n", w->color ? color : "", text, w->color ? "\033[0m" : "");
  w->drawn = 0;
  redraw(w);
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
  copy_str(jv, ts_jv_get(jv, 0, "type"), type, sizeof type);
  copy_str(jv, ts_jv_get(jv, 0, "thread"), thread, sizeof thread);
  int64_t index = -1, bytes = 0;
  int ii = ts_jv_get(jv, 0, "index");
  if (ii >= 0 && ts_jv_int(jv, ii, &index) == 0 && index >= 0) {
    char call_id[96];
    copy_str(jv, ts_jv_get(jv, 0, "tool"), tool, sizeof tool);
    copy_str(jv, ts_jv_get(jv, 0, "call_id"), call_id, sizeof call_id);
    ts_live_call *c = find_call(w, thread, (long)index, call_id, tool);
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
      copy_str(jv, ts_jv_get(jv, 0, "error"), c->detail, sizeof c->detail);
    } else if (!strcmp(type, "tool_execution_started")) {
      c->state = 3;
    } else if (!strcmp(type, "tool_result")) {
      c->state = ts_jv_is_true(jv, ts_jv_get(jv, 0, "is_error")) ? 5 : 4;
    }
    redraw(w);
    return;
  }
  if (!strcmp(type, "stream_error")) {
    copy_str(jv, ts_jv_get(jv, 0, "error"), text, sizeof text);
    char line[TS_LIVE_TEXT + TS_THREAD_ID_MAX + 64];
    snprintf(line, sizeof line, "stream error (%s): %s", thread, text);
    note_line(w, "\033[31m", line);
  } else if (!strcmp(type, "turn_finished")) {
    copy_str(jv, ts_jv_get(jv, 0, "stop_reason"), text, sizeof text);
    char line[TS_LIVE_TEXT + TS_THREAD_ID_MAX + 64];
    snprintf(line, sizeof line, "turn finished (%s)%s%s", thread, text[0] ? ": " : "", text);
    note_line(w, "\033[2m", line);
  }
}


int ts_live_init(ts_live *w) {
  memset(w, 0, sizeof *w);
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
  ts_jv_fini(&w->jv);
  free(w->scratch);
}
