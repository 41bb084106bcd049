/*
 * ui_stream.c: see ui_stream.h; the mapping is in docs/ui.md.
 *
 * The translator reads only the top-level members it needs (stream/json_members: one
 * pass, no tokens for what is inside `arguments` or `result`) and copies their raw JSON
 * text into the frames it builds, so nothing is decoded and re-encoded and the output is
 * valid JSON exactly when the input was. Ids it makes up are built from the thread id's
 * raw (already escaped) text plus ASCII suffixes, for the same reason.
 */
#include "events/ui_stream.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/strbuf.h"
#include "stream/json_members.h"

/* The largest frame: an event's arguments or result copied whole, plus framing. Events
 * are bounded where they are made (the tap's max_args_bytes, the store's event limit);
 * this bounds what a translator accepts from a bus or store it did not write. */
#define UI_FRAME_MAX ((size_t)256 << 20)

typedef struct {
  char *id;   /* the call's id as a JSON string (quotes included), or NULL: not seen */
  char *tool; /* its tool name as a JSON string */
  int has_args;
  int ended; /* ARGS/END sent (AG-UI) or input available/error (AI SDK) */
} ui_call;

struct ts_ui {
  ts_ui_format f;
  ts_ui_emit emit;
  void *user;
  int quiet;
  int started;   /* AI SDK: "start" sent */
  int run_open;  /* AG-UI: RUN_STARTED sent and not finished; AI SDK: a step is open */
  int turn_done; /* the open run's turn_finished came; its next tap event starts a new run */
  int text_open;
  uint32_t run, text_n;
  char *thread; /* raw JSON string of the thread id */
  char stop[64]; /* the last stop_reason, raw */
  ui_call *calls;
  size_t ncalls;
  ts_buf fb; /* the frame being built */
  int err;
};

/* The members of one event that the mapping reads (raw views; .p NULL when absent). */
typedef struct {
  ts_view type, thread, index, call_id, tool, progress, truncated, delta, arguments, code, error,
      text, stop_reason, is_error, result, ts;
} ev_fields;

int ts_ui_format_parse(const char *name) {
  if (!name) return -1;
  if (!strcmp(name, "agui") || !strcmp(name, "ag-ui")) return TS_UI_AGUI;
  if (!strcmp(name, "ai-sdk") || !strcmp(name, "aisdk")) return TS_UI_AISDK;
  return -1;
}

const char *ts_ui_format_name(ts_ui_format f) {
  return f == TS_UI_AGUI ? "agui" : f == TS_UI_AISDK ? "ai-sdk" : "unknown";
}

int ts_ui_new(ts_ui_format format, ts_ui_emit emit, void *user, ts_ui **out) {
  if (!out || !emit || (format != TS_UI_AGUI && format != TS_UI_AISDK)) return TS_E_INVAL;
  ts_ui *u = calloc(1, sizeof *u);
  if (!u) return TS_E_NOMEM;
  u->f = format;
  u->emit = emit;
  u->user = user;
  ts_buf_init(&u->fb, UI_FRAME_MAX);
  *out = u;
  return TS_E_OK;
}

static void clear_calls(ts_ui *u) {
  for (size_t i = 0; i < u->ncalls; i++) {
    free(u->calls[i].id);
    free(u->calls[i].tool);
  }
  free(u->calls);
  u->calls = NULL;
  u->ncalls = 0;
}

void ts_ui_free(ts_ui *u) {
  if (!u) return;
  clear_calls(u);
  free(u->thread);
  ts_buf_fini(&u->fb);
  free(u);
}

void ts_ui_set_quiet(ts_ui *u, int quiet) { u->quiet = quiet; }

/* ---- frames ----------------------------------------------------------------------- */

static int is(ts_view v, const char *lit) {
  size_t n = strlen(lit);
  return v.p && v.len == n + 2 && v.p[0] == '"' && !memcmp(v.p + 1, lit, n);
}

static void begin(ts_ui *u, const char *type) {
  ts_buf_reset(&u->fb);
  ts_buf_puts(&u->fb, "{\"type\":\"");
  ts_buf_puts(&u->fb, type);
  ts_buf_putc(&u->fb, '"');
}

/* ,"key":<raw> */
static void raw(ts_ui *u, const char *key, ts_view v) {
  ts_buf_puts(&u->fb, ",\"");
  ts_buf_puts(&u->fb, key);
  ts_buf_puts(&u->fb, "\":");
  ts_buf_append(&u->fb, v.p, v.len);
}

static void raw_s(ts_ui *u, const char *key, const char *json) {
  raw(u, key, (ts_view){json, strlen(json)});
}

/* ,"key":"<thread inner><suffix>" (suffix is ASCII) */
static void made_id(ts_ui *u, const char *key, const char *suffix) {
  ts_buf_puts(&u->fb, ",\"");
  ts_buf_puts(&u->fb, key);
  ts_buf_puts(&u->fb, "\":\"");
  size_t n = strlen(u->thread);
  ts_buf_append(&u->fb, u->thread + 1, n - 2);
  ts_buf_puts(&u->fb, suffix);
  ts_buf_putc(&u->fb, '"');
}

static int send(ts_ui *u, ts_view ts) {
  if (ts.p && ts.len && ts.p[0] >= '0' && ts.p[0] <= '9') { /* µs since the epoch -> ms */
    uint64_t us = 0;
    for (size_t i = 0; i < ts.len && ts.p[i] >= '0' && ts.p[i] <= '9' && us < UINT64_MAX / 10; i++)
      us = us * 10 + (uint64_t)(ts.p[i] - '0');
    ts_buf_puts(&u->fb, ",\"timestamp\":");
    ts_buf_append_u64(&u->fb, us / 1000);
  }
  ts_buf_putc(&u->fb, '}');
  if (u->fb.err) return u->fb.err;
  if (u->quiet) return TS_E_OK;
  return u->emit(u->user, u->fb.p, u->fb.len) ? TS_E_ABORTED : TS_E_OK;
}

#define SEND(u, ts)              \
  do {                           \
    int r_ = send((u), (ts));    \
    if (r_) return r_;           \
  } while (0)

static const ts_view NO_TS = {NULL, 0};

static void suffix_run(char *buf, size_t n, const char *what, uint32_t a, long b) {
  if (b >= 0) snprintf(buf, n, "-%s-%u-%ld", what, a, b);
  else snprintf(buf, n, "-%s-%u", what, a);
}

/* ---- runs, steps and text ------------------------------------------------------------ */

static int close_text(ts_ui *u, ts_view ts) {
  if (!u->text_open) return TS_E_OK;
  u->text_open = 0;
  char sfx[64];
  suffix_run(sfx, sizeof sfx, "msg", u->run, (long)u->text_n);
  begin(u, u->f == TS_UI_AGUI ? "TEXT_MESSAGE_END" : "text-end");
  made_id(u, u->f == TS_UI_AGUI ? "messageId" : "id", sfx);
  SEND(u, ts);
  return TS_E_OK;
}

static const char *finish_reason(const char *stop) {
  if (!stop[0]) return "\"other\"";
  if (!strcmp(stop, "\"tool_use\"") || !strcmp(stop, "\"tool_calls\"") ||
      !strcmp(stop, "\"function_call\""))
    return "\"tool-calls\"";
  if (!strcmp(stop, "\"stop\"") || !strcmp(stop, "\"end_turn\"") || !strcmp(stop, "\"STOP\"") ||
      !strcmp(stop, "\"completed\"") || !strcmp(stop, "\"stop_sequence\""))
    return "\"stop\"";
  if (!strcmp(stop, "\"length\"") || !strcmp(stop, "\"max_tokens\"") ||
      !strcmp(stop, "\"MAX_TOKENS\"") || !strcmp(stop, "\"incomplete\""))
    return "\"length\"";
  if (!strcmp(stop, "\"content_filter\"") || !strcmp(stop, "\"SAFETY\"")) return "\"content-filter\"";
  return "\"other\"";
}

static int close_run(ts_ui *u, ts_view ts) {
  int r = close_text(u, ts);
  if (r || !u->run_open) return r;
  u->run_open = 0;
  u->turn_done = 0;
  clear_calls(u);
  if (u->f == TS_UI_AGUI) {
    char sfx[32];
    suffix_run(sfx, sizeof sfx, "run", u->run, -1);
    begin(u, "RUN_FINISHED");
    raw_s(u, "threadId", u->thread);
    made_id(u, "runId", sfx);
  } else {
    begin(u, "finish-step");
  }
  SEND(u, ts);
  return TS_E_OK;
}

/* Before a tap event (text, a call, a turn's end): a run must be open, and a finished
 * turn's run is closed first. */
static int open_run(ts_ui *u, ts_view ts) {
  if (u->run_open && u->turn_done) {
    int r = close_run(u, ts);
    if (r) return r;
  }
  if (u->run_open) return TS_E_OK;
  u->run++;
  u->run_open = 1;
  u->text_n = 0;
  if (u->f == TS_UI_AGUI) {
    char sfx[32];
    suffix_run(sfx, sizeof sfx, "run", u->run, -1);
    begin(u, "RUN_STARTED");
    raw_s(u, "threadId", u->thread);
    made_id(u, "runId", sfx);
    SEND(u, ts);
  } else {
    if (!u->started) {
      u->started = 1;
      begin(u, "start");
      made_id(u, "messageId", "-assistant");
      SEND(u, ts);
    }
    begin(u, "start-step");
    SEND(u, ts);
  }
  return TS_E_OK;
}

/* ---- calls ----------------------------------------------------------------------------- */

static char *dup_view(ts_view v) {
  char *s = malloc(v.len + 1);
  if (s) {
    memcpy(s, v.p, v.len);
    s[v.len] = '\0';
  }
  return s;
}

/* The call's slot for the event's index, or NULL (no index, or over the limit). */
static ui_call *slot(ts_ui *u, ts_view index) {
  if (!index.p || !index.len) return NULL;
  size_t i = 0;
  for (size_t k = 0; k < index.len; k++) {
    if (index.p[k] < '0' || index.p[k] > '9' || i >= TS_UI_MAX_CALLS) return NULL;
    i = i * 10 + (size_t)(index.p[k] - '0');
  }
  if (i >= TS_UI_MAX_CALLS) return NULL;
  if (i >= u->ncalls) {
    size_t n = i + 1 > u->ncalls * 2 ? i + 1 : u->ncalls * 2;
    if (n > TS_UI_MAX_CALLS) n = TS_UI_MAX_CALLS;
    ui_call *c = realloc(u->calls, n * sizeof *c);
    if (!c) {
      u->err = TS_E_NOMEM;
      return NULL;
    }
    memset(c + u->ncalls, 0, (n - u->ncalls) * sizeof *c);
    u->calls = c;
    u->ncalls = n;
  }
  return &u->calls[i];
}

/* The call's id as a JSON string: the one remembered for its index, the provider's, or
 * one made from the thread, the run and the index. `suffix` (ASCII) is appended inside
 * the quotes (the id of a call's result message). */
static void id_value(ts_ui *u, const ev_fields *e, const ui_call *c, const char *suffix) {
  ts_view id = {NULL, 0};
  if (c && c->id) id = (ts_view){c->id, strlen(c->id)};
  else if (e->call_id.p && e->call_id.len > 2) id = e->call_id;
  if (id.p) {
    ts_buf_append(&u->fb, id.p, id.len - 1); /* without its closing quote */
  } else {
    size_t idx = 0;
    for (size_t k = 0; e->index.p && k < e->index.len && e->index.p[k] >= '0' &&
                       e->index.p[k] <= '9' && idx < 1000000000;
         k++)
      idx = idx * 10 + (size_t)(e->index.p[k] - '0');
    char sfx[64];
    suffix_run(sfx, sizeof sfx, "call", u->run, (long)idx);
    ts_buf_putc(&u->fb, '"');
    ts_buf_append(&u->fb, u->thread + 1, strlen(u->thread) - 2);
    ts_buf_puts(&u->fb, sfx);
  }
  ts_buf_puts(&u->fb, suffix);
  ts_buf_putc(&u->fb, '"');
}

/* ,"<key>":<the call's id> */
static void call_id(ts_ui *u, const char *key, const ev_fields *e, const ui_call *c) {
  ts_buf_puts(&u->fb, ",\"");
  ts_buf_puts(&u->fb, key);
  ts_buf_puts(&u->fb, "\":");
  id_value(u, e, c, "");
}

/* Records the call's id and tool the first time it is seen in this turn, so that its
 * later events (a result without the provider's id, say) name it the same way. */
static void remember(ts_ui *u, const ev_fields *e, ui_call *c) {
  if (!c || c->id) return;
  ts_buf_reset(&u->fb);
  id_value(u, e, NULL, "");
  c->id = u->fb.err ? NULL : dup_view((ts_view){u->fb.p, u->fb.len});
  if (e->tool.p) c->tool = dup_view(e->tool);
  if (!c->id || (e->tool.p && !c->tool)) u->err = TS_E_NOMEM;
}

static int on_started(ts_ui *u, const ev_fields *e) {
  int r = open_run(u, e->ts);
  if (!r) r = close_text(u, e->ts);
  if (r) return r;
  ui_call *c = slot(u, e->index);
  remember(u, e, c);
  if (u->err) return u->err;
  if (u->f == TS_UI_AGUI) {
    begin(u, "TOOL_CALL_START");
    call_id(u, "toolCallId", e, c);
    raw(u, "toolCallName", e->tool);
    if (e->progress.p) {
      ts_buf_puts(&u->fb, ",\"metadata\":{\"progress\":");
      ts_buf_append(&u->fb, e->progress.p, e->progress.len);
      if (e->truncated.p) ts_buf_puts(&u->fb, ",\"progressTruncated\":true");
      ts_buf_putc(&u->fb, '}');
    }
  } else {
    begin(u, "tool-input-start");
    call_id(u, "toolCallId", e, c);
    raw(u, "toolName", e->tool);
    if (e->progress.p) raw(u, "title", e->progress);
  }
  return send(u, e->ts);
}

static int args_frame(ts_ui *u, const ev_fields *e, ui_call *c, ts_view text_json) {
  begin(u, u->f == TS_UI_AGUI ? "TOOL_CALL_ARGS" : "tool-input-delta");
  call_id(u, "toolCallId", e, c);
  raw(u, u->f == TS_UI_AGUI ? "delta" : "inputTextDelta", text_json);
  if (c) c->has_args = 1;
  return send(u, e->ts);
}

static int on_delta(ts_ui *u, const ev_fields *e) {
  if (!e->delta.p || e->delta.len <= 2) return TS_E_OK; /* AG-UI forbids an empty delta */
  return args_frame(u, e, slot(u, e->index), e->delta);
}

static int on_ready(ts_ui *u, const ev_fields *e) {
  ui_call *c = slot(u, e->index);
  if (!c || !c->has_args) {
    /* The arguments as one string: their compact text, JSON-escaped. */
    ts_buf s;
    ts_buf_init(&s, UI_FRAME_MAX);
    ts_buf_append_json_string(&s, e->arguments.p, e->arguments.len);
    int r = s.err ? s.err : args_frame(u, e, c, (ts_view){s.p, s.len});
    ts_buf_fini(&s);
    if (r) return r;
  }
  if (c) c->ended = 1;
  if (u->f == TS_UI_AGUI) {
    begin(u, "TOOL_CALL_END");
    call_id(u, "toolCallId", e, c);
  } else {
    begin(u, "tool-input-available");
    call_id(u, "toolCallId", e, c);
    raw(u, "toolName", e->tool);
    raw(u, "input", e->arguments);
  }
  return send(u, e->ts);
}

static int on_call_error(ts_ui *u, const ev_fields *e) {
  ui_call *c = slot(u, e->index);
  if (c) c->ended = 1;
  if (u->f == TS_UI_AGUI) {
    begin(u, "TOOL_CALL_END");
    call_id(u, "toolCallId", e, c);
    SEND(u, e->ts);
    begin(u, "CUSTOM");
    raw_s(u, "name", "\"toolstream.tool_call_error\"");
    ts_buf_puts(&u->fb, ",\"value\":{\"toolCallId\":");
    id_value(u, e, c, "");
    if (e->code.p) raw(u, "code", e->code);
    if (e->error.p) raw(u, "error", e->error);
    ts_buf_putc(&u->fb, '}');
  } else {
    begin(u, "tool-input-error");
    call_id(u, "toolCallId", e, c);
    raw(u, "toolName", e->tool);
    raw_s(u, "input", "null");
    raw(u, "errorText", e->error.p ? e->error : (ts_view){"\"\"", 2});
  }
  return send(u, e->ts);
}

static int on_result(ts_ui *u, const ev_fields *e) {
  ui_call *c = slot(u, e->index);
  int failed = e->is_error.len == 4 && !memcmp(e->is_error.p, "true", 4);
  if (u->f == TS_UI_AGUI) {
    begin(u, "TOOL_CALL_RESULT");
    ts_buf_puts(&u->fb, ",\"messageId\":");
    id_value(u, e, c, "-result");
    call_id(u, "toolCallId", e, c);
    if (failed || !e->result.p) {
      raw(u, "content", e->error.p ? e->error : (ts_view){"\"\"", 2});
    } else {
      ts_buf s;
      ts_buf_init(&s, UI_FRAME_MAX);
      ts_buf_append_json_string(&s, e->result.p, e->result.len);
      raw(u, "content", (ts_view){s.p ? s.p : "\"\"", s.p ? s.len : 2});
      if (s.err) u->fb.err = s.err;
      ts_buf_fini(&s);
    }
    raw_s(u, "role", "\"tool\"");
  } else if (failed || !e->result.p) {
    begin(u, "tool-output-error");
    call_id(u, "toolCallId", e, c);
    raw(u, "errorText", e->error.p ? e->error : (ts_view){"\"\"", 2});
  } else {
    begin(u, "tool-output-available");
    call_id(u, "toolCallId", e, c);
    raw(u, "output", e->result);
  }
  return send(u, e->ts);
}

static int on_text(ts_ui *u, const ev_fields *e) {
  if (!e->text.p || e->text.len <= 2) return TS_E_OK;
  int r = open_run(u, e->ts);
  if (r) return r;
  char sfx[64];
  if (!u->text_open) {
    u->text_open = 1;
    u->text_n++;
    suffix_run(sfx, sizeof sfx, "msg", u->run, (long)u->text_n);
    begin(u, u->f == TS_UI_AGUI ? "TEXT_MESSAGE_START" : "text-start");
    made_id(u, u->f == TS_UI_AGUI ? "messageId" : "id", sfx);
    if (u->f == TS_UI_AGUI) raw_s(u, "role", "\"assistant\"");
    SEND(u, e->ts);
  }
  suffix_run(sfx, sizeof sfx, "msg", u->run, (long)u->text_n);
  begin(u, u->f == TS_UI_AGUI ? "TEXT_MESSAGE_CONTENT" : "text-delta");
  made_id(u, u->f == TS_UI_AGUI ? "messageId" : "id", sfx);
  raw(u, "delta", e->text);
  return send(u, e->ts);
}

static int on_turn(ts_ui *u, const ev_fields *e) {
  int r = open_run(u, e->ts);
  if (!r) r = close_text(u, e->ts);
  if (r) return r;
  u->turn_done = 1;
  u->stop[0] = '\0';
  if (e->stop_reason.p && e->stop_reason.len < sizeof u->stop) {
    memcpy(u->stop, e->stop_reason.p, e->stop_reason.len);
    u->stop[e->stop_reason.len] = '\0';
  }
  return TS_E_OK;
}

static int on_stream_error(ts_ui *u, const ev_fields *e) {
  int r = close_text(u, e->ts);
  if (r) return r;
  ts_view msg = e->error.p ? e->error : (ts_view){"\"stream error\"", 14};
  if (u->f == TS_UI_AGUI) {
    if (!u->run_open) { /* RUN_ERROR ends a run: there must be one */
      r = open_run(u, e->ts);
      if (r) return r;
    }
    begin(u, "RUN_ERROR");
    raw(u, "message", msg);
    if (e->code.p) raw(u, "code", e->code);
    u->run_open = 0;
    u->turn_done = 0;
    clear_calls(u);
  } else {
    begin(u, "error");
    raw(u, "errorText", msg);
  }
  return send(u, e->ts);
}

/* ---- entry points ------------------------------------------------------------------------ */

static int read_fields(const char *json, size_t len, ev_fields *e) {
  memset(e, 0, sizeof *e);
  ts_json_members it;
  ts_view k, v;
  int r;
  ts_json_members_init(&it, json, len);
  static const struct {
    const char *name;
    size_t off;
  } map[] = {
      {"type", offsetof(ev_fields, type)},          {"thread", offsetof(ev_fields, thread)},
      {"index", offsetof(ev_fields, index)},        {"call_id", offsetof(ev_fields, call_id)},
      {"tool", offsetof(ev_fields, tool)},          {"progress", offsetof(ev_fields, progress)},
      {"progress_truncated", offsetof(ev_fields, truncated)},
      {"delta", offsetof(ev_fields, delta)},        {"arguments", offsetof(ev_fields, arguments)},
      {"code", offsetof(ev_fields, code)},          {"error", offsetof(ev_fields, error)},
      {"text", offsetof(ev_fields, text)},          {"stop_reason", offsetof(ev_fields, stop_reason)},
      {"is_error", offsetof(ev_fields, is_error)},  {"result", offsetof(ev_fields, result)},
      {"ts", offsetof(ev_fields, ts)},
  };
  while ((r = ts_json_members_next(&it, &k, &v)) == 1) {
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
      ts_view *slotp = (ts_view *)((char *)e + map[i].off);
      if (!slotp->p && k.len == strlen(map[i].name) && !memcmp(k.p, map[i].name, k.len)) {
        *slotp = v;
        break;
      }
    }
  }
  if (r < 0 || !e->type.p || e->type.p[0] != '"' || !e->thread.p || e->thread.p[0] != '"' ||
      e->thread.len < 3)
    return TS_E_INVAL;
  /* Strings the frames copy must be strings; the rest of their grammar was checked where
   * the event was made. */
  if ((e->tool.p && e->tool.p[0] != '"') || (e->call_id.p && e->call_id.p[0] != '"') ||
      (e->progress.p && e->progress.p[0] != '"') || (e->delta.p && e->delta.p[0] != '"') ||
      (e->text.p && e->text.p[0] != '"') || (e->error.p && e->error.p[0] != '"') ||
      (e->code.p && e->code.p[0] != '"'))
    return TS_E_INVAL;
  return TS_E_OK;
}

int ts_ui_event(ts_ui *u, const char *json, size_t len) {
  if (!u || !json) return TS_E_INVAL;
  ev_fields e;
  int r = read_fields(json, len, &e);
  if (r) return r;
  if (!u->thread) {
    u->thread = dup_view(e.thread);
    if (!u->thread) return TS_E_NOMEM;
  }
  u->err = 0;
  if (is(e.type, "tool_call_started")) {
    if (!e.tool.p) return TS_E_INVAL;
    r = on_started(u, &e);
  } else if (is(e.type, "tool_call_delta")) {
    r = on_delta(u, &e);
  } else if (is(e.type, "tool_call_ready")) {
    if (!e.tool.p || !e.arguments.p) return TS_E_INVAL;
    r = on_ready(u, &e);
  } else if (is(e.type, "tool_call_error")) {
    r = on_call_error(u, &e);
  } else if (is(e.type, "tool_result")) {
    r = on_result(u, &e);
  } else if (is(e.type, "text_delta")) {
    r = on_text(u, &e);
  } else if (is(e.type, "turn_finished")) {
    r = on_turn(u, &e);
  } else if (is(e.type, "stream_error")) {
    r = on_stream_error(u, &e);
  } else {
    r = TS_E_OK; /* heartbeats, tool_execution_started, later types: nothing to say */
  }
  return r ? r : u->err;
}

int ts_ui_finish(ts_ui *u) {
  if (!u) return TS_E_INVAL;
  int r = close_run(u, NO_TS);
  if (r) return r;
  if (u->f == TS_UI_AISDK && u->started) {
    u->started = 0;
    begin(u, "finish");
    raw_s(u, "finishReason", finish_reason(u->stop));
    return send(u, NO_TS);
  }
  return TS_E_OK;
}
