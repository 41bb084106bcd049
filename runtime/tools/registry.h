/*
 * tools.h: the tool registry: function tools defined in C (or loaded from a --tools file)
 * with their argument schema, progress argument and annotations.
 *
 * Definition-time errors, each with a one-line reason: a duplicate name; the reserved
 * names `subagents`, `subagent_create` and `subagent_message` (tools-spec §5); a
 * malformed argument schema; a `progressArgument` that is not a declared top-level
 * property of the schema; a variable whose name is malformed (ts_store_var_name_valid)
 * or declared twice.
 *
 * Annotations (tools-spec §8) are kept as the exact bytes given and returned unchanged by
 * ts_tool_annotations; nothing in the runtime reads them, so they cannot change
 * validation, execution, results or what is sent to the model.
 *
 * Ownership: the registry copies everything it is given; tools live until
 * ts_registry_free. Not thread-safe for writing: define every tool before dispatching.
 */
#ifndef TS_TOOLS_H
#define TS_TOOLS_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "stream/tool_defs.h"
#include "tools/variables.h"

/* Calls a tool queued (state.queueTool) during a model call: the dispatcher runs them
 * after that call, first in first out, each with its own start/finish records and
 * events (docs/jstools.md). One queue serves a whole turn; `limit` bounds how many calls
 * it accepts over the turn, so a tool that queues itself cannot run forever. */
typedef struct {
  char *tool, *args; /* args: JSON text */
  size_t args_len;
  char *queued_by;   /* the tool that queued it */
} ts_queued_call;

typedef struct ts_call_queue {
  ts_queued_call *v;
  size_t n, cap;
  size_t head;  /* the next to run */
  size_t limit; /* pushes accepted over the queue's life; 0: TS_CALL_QUEUE_MAX */
} ts_call_queue;

#define TS_CALL_QUEUE_MAX 256

/* Appends a call (copies everything). TS_E_OK; TS_E_LIMIT when the queue has accepted
 * its limit; TS_E_NOMEM. */
int ts_call_queue_push(ts_call_queue *q, const char *tool, const char *args, size_t args_len,
                       const char *queued_by);
void ts_call_queue_fini(ts_call_queue *q); /* frees the calls; the struct may be reused */

struct ts_tool;

/* What an executing tool knows about its call. */
typedef struct ts_call_info {
  const char *thread;
  uint32_t turn;  /* the model turn the call belongs to */
  uint32_t index; /* its position in the turn */
  const char *call_id;
  const char *tool;
  const volatile int *cancel; /* becomes nonzero when the run is being stopped */
  ts_call_queue *queue; /* where state.queueTool puts calls; NULL: queueing unavailable */
  unsigned depth;       /* 0 for the model's calls; +1 per state.invokeTool nesting */
  /* The call's variables (tools-spec §3, tools/variables.h): the value of `name` for
   * `tool` (the running tool, or one it invokes) on the call's thread, when `tool`
   * declares `name`. Returns 1 with *value (NUL-terminated, *len bytes; valid until the
   * call ends; a secret is redacted from the call's result) set, 0 when it has no value
   * or is not declared by `tool`, or a negative ts_err (why in `why`). NULL outside the
   * dispatcher: tools then read their own fallbacks. */
  int (*env_get)(void *env_ctx, const struct ts_tool *tool, const char *name,
                 const char **value, size_t *len, char *why, size_t why_cap);
  void *env_ctx;
  /* The calling thread's filesystem (its workspace directory, tools-spec §6), where a
   * tool that works on files works (tools/demo_tools.h); NULL: the tool's own default. */
  const char *workspace;
} ts_call_info;

/* A tool's answer: success with a JSON value, or an error with a message; or, for a tool
 * that runs another thread (a prompt tool, a blocking subagent: agent/compose.h,
 * agent/subagents.h), "not over yet": `suspended`. */
typedef struct {
  int is_error;
  char *text; /* malloc'd; success: JSON text of the result; error: the message (UTF-8) */
  size_t len;
  /* 0, or why the call has no result yet and must not get one now: the thread it waits
   * on stopped and keeps its state for --resume. TS_E_ABORTED: that thread was stopped
   * (Ctrl-C; a call there may be parked for a variable); TS_E_VAR_MISSING: it stopped by
   * itself for a required variable of its prompt or agent. The dispatcher commits nothing
   * for the call (its start record stays open, so a resume runs it again: such a tool
   * must be idempotent), runs nothing after it, and stops the turn (TS_E_ABORTED from
   * finish); `text` says why (ts_dispatch_stop_reason). */
  int suspended;
} ts_tool_result;

/* Sets a success result: a copy of `json` (which must be JSON text). */
void ts_tool_result_json(ts_tool_result *r, const char *json, size_t len);
/* Sets a success result whose value is the string `s` (JSON-escaped here). */
void ts_tool_result_string(ts_tool_result *r, const char *s, size_t len);
/* Sets an error result with a printf-style message. */
void ts_tool_result_error(ts_tool_result *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Sets a suspended result (above): `code` TS_E_ABORTED or TS_E_VAR_MISSING, `text` the
 * printf-style reason. */
void ts_tool_result_suspend(ts_tool_result *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void ts_tool_result_free(ts_tool_result *r); /* also clears `suspended` */

/* The execute callback: receives the call and its validated arguments (a JSON object),
 * and fills `out` (an unset result counts as an error "tool returned no result"). */
typedef void (*ts_tool_fn)(void *user, const ts_call_info *call, const char *args,
                           size_t args_len, ts_tool_result *out);

/* tools-spec §7's `tool_call_started` hook: called with the tool's `user` and the
 * tool_call_started event's JSON (the bytes every destination got, progress included) at
 * the moment that event goes out. Returns 0, or a negative ts_err with a one-line reason
 * in `why`; a failing hook never changes the call. It must be quick: the stream waits. */
typedef int (*ts_tool_started_fn)(void *user, const char *event_json, size_t len, char *why,
                                  size_t why_cap);

typedef struct {
  const char *name;          /* required */
  const char *description;   /* may be NULL */
  const char *args_schema;   /* JSON Schema text; NULL: any object */
  const char *progress_arg;  /* NULL: none */
  const char *annotations;   /* any JSON text, kept byte for byte; NULL: none */
  int idempotent;            /* safe to run again after a crash interrupted it */
  const ts_var_def *vars;    /* the variables it declares (tools-spec §3); copied */
  size_t n_vars;
  ts_tool_fn execute;        /* NULL: defined but not implemented here */
  ts_tool_started_fn on_started; /* NULL: no tool_call_started hook */
  void *user;
  /* Called with `user` when the tool is freed (with the registry). Ownership of `user`
   * moves to the registry only when ts_registry_add succeeds. NULL: the caller owns it. */
  void (*user_free)(void *user);
  /* 1: one of the runtime's own subagent lifecycle tools (agent/subagents.h), the only
   * tools that may take the reserved names. */
  int lifecycle;
} ts_tool_spec;

typedef struct ts_tool ts_tool;
typedef struct ts_registry ts_registry;

ts_registry *ts_registry_new(void);
void ts_registry_free(ts_registry *r);

/* Adds a tool. Returns TS_E_OK, or TS_E_INVAL (with the reason in `why`) for a
 * definition error, or TS_E_NOMEM. */
int ts_registry_add(ts_registry *r, const ts_tool_spec *spec, char *why, size_t why_cap);

/* Adds every definition of a --tools file (stream/tool_defs.h); definitions whose name
 * is already registered (a C tool) are merged: the file's description, schema, progress
 * argument and annotations replace the C ones, and so do its variables when the file
 * gives "variables" (else the C tool's stay). Returns as ts_registry_add. */
int ts_registry_add_defs(ts_registry *r, const ts_tool_defs *defs, char *why, size_t why_cap);

const ts_tool *ts_registry_find(const ts_registry *r, const char *name, size_t len);
size_t ts_registry_count(const ts_registry *r);
const ts_tool *ts_registry_at(const ts_registry *r, size_t i);

const char *ts_tool_name(const ts_tool *t);
const char *ts_tool_description(const ts_tool *t);
const char *ts_tool_args_schema(const ts_tool *t);  /* NULL when none */
const char *ts_tool_progress_arg(const ts_tool *t); /* NULL when none */
const char *ts_tool_annotations(const ts_tool *t);  /* exactly as given; NULL when none */
int ts_tool_idempotent(const ts_tool *t);
/* The variables the tool declares (*n of them; NULL when none). */
const ts_var_def *ts_tool_vars(const ts_tool *t, size_t *n);
/* The tool's definition of variable `name`, or NULL when it declares none by that name. */
const ts_var_def *ts_tool_var(const ts_tool *t, const char *name);
/* The tool's `user` when its execute callback is `execute`, else NULL: how a module
 * recognises its own tools (runtime/jstools.c). */
void *ts_tool_user_of(const ts_tool *t, ts_tool_fn execute);

/* Runs the tool's tool_call_started hook (ts_tool_spec.on_started) with `event_json`.
 * Returns 1 when a hook ran, 0 when the tool has none, or its negative ts_err (why set). */
int ts_tool_call_started(const ts_tool *t, const char *event_json, size_t len, char *why,
                         size_t why_cap);

/* Validates `args` against the tool's schema. TS_E_OK, or a negative ts_err with
 * "<json pointer>: <reason>" in `why`. */
int ts_tool_validate(const ts_tool *t, const char *args, size_t len, char *why, size_t why_cap);

/* Runs the tool (no validation here). A tool without an implementation gives an error
 * result. */
void ts_tool_execute(const ts_tool *t, const ts_call_info *call, const char *args, size_t len,
                     ts_tool_result *out);

#endif /* TS_TOOLS_H */
