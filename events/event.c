/*
 * event.c: the canonical JSON encoder of thread events (see event.h, docs/events.md).
 */
#include "events/event.h"

#include <stdio.h>
#include <string.h>

/* A member's `,"name":` goes out as one append of a literal built at compile time (the
 * names are all literals): four small appends per member were a fifth of the cost of
 * encoding a delta event, which the bus pays for every event it publishes. */
#define KEY_LIT(k) ",\"" k "\":"
#define key(b, k) ts_buf_append((b), KEY_LIT(k), sizeof KEY_LIT(k) - 1)
#define str_field(b, k, ...) str_member((b), KEY_LIT(k), sizeof KEY_LIT(k) - 1, __VA_ARGS__)
#define num_field(b, k, n) num_member((b), KEY_LIT(k), sizeof KEY_LIT(k) - 1, (n))

static void str_member(ts_buf *b, const char *k, size_t klen, ts_view v) {
  ts_buf_append(b, k, klen);
  ts_buf_append_json_string(b, v.p ? v.p : "", v.len);
}

static void num_member(ts_buf *b, const char *k, size_t klen, uint64_t n) {
  ts_buf_append(b, k, klen);
  ts_buf_append_u64(b, n);
}

const char *ts_event_type_name(int type) {
  switch (type) {
    case TS_EVENT_TOOL_EXECUTION_STARTED: return "tool_execution_started";
    case TS_EVENT_TOOL_RESULT: return "tool_result";
    case TS_EVENT_VARIABLE_REQUIRED: return "variable_required";
    case TS_EVENT_HANDOFF: return "handoff";
    case TS_EVENT_THREAD_CREATED: return "thread_created";
    case TS_EVENT_SUBAGENT_MESSAGE: return "subagent_message";
    case TS_EVENT_THREAD_FINISHED: return "thread_finished";
  }
  return ts_tap_type_name(type); /* the tap's own, or "unknown" */
}

int ts_event_encode(const ts_event *ev, ts_buf *b) {
  const ts_tap_event *e = &ev->body;
  const ts_event *r = ev;
  ts_buf_append(b, "{\"v\":", 5);
  ts_buf_append_u64(b, TS_EVENT_SCHEMA_VERSION);
  const char *type = ts_event_type_name(e->type);
  str_field(b, "type", (ts_view){type, strlen(type)});
  str_field(b, "thread", ev->thread);
  if (ev->parent.len) str_field(b, "parent", ev->parent);
  num_field(b, "seq", ev->seq);
  if (ev->ts_us) num_field(b, "ts", ev->ts_us);
  if (ev->mono_us) num_field(b, "mono_us", ev->mono_us);
  num_field(b, "offset", e->offset);
  if (e->is_call) {
    str_field(b, "call_id", e->call_id);
    if (e->provider_call_id.len) str_field(b, "provider_call_id", e->provider_call_id);
    str_field(b, "tool", e->tool);
    num_field(b, "index", e->index);
    if (e->turn) num_field(b, "turn", e->turn);
  }
  switch ((ts_event_type)e->type) {
    case TS_EVENT_TOOL_CALL_STARTED:
      if (e->has_progress) {
        str_field(b, "progress", e->progress);
        if (e->progress_truncated) {
          key(b, "progress_truncated");
          ts_buf_puts(b, "true");
        }
      }
      break;
    case TS_EVENT_TOOL_CALL_DELTA:
      str_field(b, "delta", e->delta);
      break;
    case TS_EVENT_TOOL_CALL_HEARTBEAT:
      num_field(b, "bytes", e->bytes);
      break;
    case TS_EVENT_TOOL_CALL_READY:
      key(b, "arguments");
      ts_buf_append(b, e->arguments.p, e->arguments.len);
      break;
    case TS_EVENT_TOOL_CALL_ERROR:
    case TS_EVENT_STREAM_ERROR: {
      const char *name = ts_err_name(e->code);
      str_field(b, "code", (ts_view){name, strlen(name)});
      str_field(b, "error", e->error);
      break;
    }
    case TS_EVENT_TEXT_DELTA:
      str_field(b, "text", e->text);
      break;
    case TS_EVENT_TOOL_EXECUTION_STARTED:
      break;
    case TS_EVENT_TOOL_RESULT: {
      key(b, "is_error");
      ts_buf_puts(b, r->is_error ? "true" : "false");
      char ms[32];
      snprintf(ms, sizeof ms, "%llu.%03llu", (unsigned long long)(r->duration_us / 1000),
               (unsigned long long)(r->duration_us % 1000));
      key(b, "duration_ms");
      ts_buf_puts(b, ms);
      if (r->is_error) {
        str_field(b, "error", r->result);
      } else {
        key(b, "result");
        ts_buf_append_json_compact(b, r->result.p, r->result.len);
      }
      break;
    }
    case TS_EVENT_VARIABLE_REQUIRED:
      str_field(b, "name", r->var_name);
      str_field(b, "description", r->var_description);
      str_field(b, "var_type", r->var_secret ? (ts_view){"secret", 6} : (ts_view){"text", 4});
      break;
    case TS_EVENT_HANDOFF:
      str_field(b, "from", r->handoff_from);
      str_field(b, "to", r->handoff_to);
      break;
    case TS_EVENT_THREAD_CREATED:
      str_field(b, "agent", r->agent);
      str_field(b, "name", r->name);
      str_field(b, "relationship", r->relationship);
      key(b, "blocking");
      ts_buf_puts(b, r->blocking ? "true" : "false");
      break;
    case TS_EVENT_SUBAGENT_MESSAGE:
      if (r->from.len) str_field(b, "from", r->from);
      num_field(b, "inbox_seq", r->inbox_seq);
      str_field(b, "message", r->message);
      break;
    case TS_EVENT_THREAD_FINISHED:
      str_field(b, "status", r->status);
      if (r->outcome.len) {
        key(b, "outcome");
        ts_buf_append_json_compact(b, r->outcome.p, r->outcome.len);
      }
      break;
    case TS_EVENT_TURN_FINISHED:
      if (e->stop_reason.len) str_field(b, "stop_reason", e->stop_reason);
      if (e->usage.len) {
        key(b, "usage");
        ts_buf_append_json_compact(b, e->usage.p, e->usage.len);
      }
      break;
  }
  ts_buf_putc(b, '}');
  return b->err;
}
