/*
 * dispatch.h: run a turn's tool calls strictly in order, durably, while the turn streams.
 *
 * The conformance rules (tools-spec §9) this module implements:
 *   - validate every call's arguments against the tool's schema;
 *   - execute the calls one at a time, in the order the model returned them (their index
 *     order, not the order in which their arguments completed);
 *   - persist each result as a tool-result message before the next call starts;
 *   - persist errors as tool-result messages (is_error) rather than halting: invalid
 *     arguments, arguments that never completed, an unknown tool, the tool's own error.
 *
 * Pipelined: feed the tap's events as they happen (ts_dispatch_tap_event). Call i starts
 * on the dispatcher's worker thread as soon as its arguments are complete and call i-1
 * has finished and been committed, even while later calls are still streaming; the time
 * of the rest of the stream comes off the turn. (pipelined = 0 runs every call only at
 * ts_dispatch_finish, for comparison.)
 *
 * Durability, per call: a start record (ts_store_call_started) is committed before the
 * tool runs; its result and the finished mark are committed in one transaction
 * (ts_store_call_finished) before the next call starts. After a crash,
 * ts_dispatch_resume finds the calls that started but never finished and resolves each:
 * re-run for a tool declared idempotent, otherwise an error result saying it was
 * interrupted.
 *
 * Queued calls (state.queueTool, docs/jstools.md): a tool may push calls onto the turn's
 * queue (ts_call_info.queue). After a model call is committed, its queued calls run, first
 * in first out (what they queue joins the end), before the model's next call; each is
 * durable like a model call, at index TS_DISPATCH_QUEUED_BASE + k with call id
 * "queued_<turn>_<k+1>". At most TS_CALL_QUEUE_MAX per turn. A queue lives in memory until
 * each call starts: a crash loses calls not yet started; resume gives tools no queue.
 *
 * Variables (tools-spec §3, tools/variables.h). Before a call with valid arguments starts,
 * each `required` variable its tool declares is resolved for the thread (thread
 * environment up the tree, then cfg.layers). A missing one parks the call: the park is
 * committed (ts_store_call_park), a `variable_required` event (name, description,
 * var_type, the call and the tool) goes out, and the worker waits, polling the store every
 * poll_ms, until the value resolves (set by `toolstream env set` in another process, say):
 * then the call starts and runs as if it had never waited, and the calls after it follow
 * in order. cancel or *cfg.stop ends the wait: the call stays parked (durably), finish
 * returns TS_E_ABORTED, and a later run completes the turn (first_index). While the tool
 * runs, ts_call_info.env_get gives it (and the tools it invokes) their declared
 * variables, secrets opened only then; every secret value handed out is redacted from
 * the call's result (verbatim and in base64) before it is stored or sent, and wiped after.
 * A call already committed by an earlier run of the same turn (a replay after a crash) is
 * skipped, not run twice.
 *
 * Suspended calls: a tool that runs another thread inside its call (a prompt tool, a
 * blocking subagent) answers ts_tool_result.suspended when that thread stopped with
 * work left (a call there parked for a variable when the run was stopped, or its prompt
 * lacks a required variable). Nothing is committed for the call: its start record stays
 * open, as if a crash had caught it, and a resume runs it again (such tools are
 * idempotent: running again resumes the child). The worker stops there, in order, and
 * finish returns TS_E_ABORTED (ts_dispatch_stop_reason says why).
 *
 * Events: `tool_execution_started` and `tool_result` (is_error, duration_ms, result or
 * error), `variable_required`, as thread events (events/event.h) through `on_event`,
 * called from the worker thread (the caller serialises them with its own tap events, e.g.
 * under a mutex that also assigns seq numbers).
 */
#ifndef TS_DISPATCH_H
#define TS_DISPATCH_H

#include <signal.h>
#include <stdint.h>

#include "store/store.h"
#include "events/event.h"
#include "stream/tap.h"
#include "tools/registry.h"
#include "tools/variables.h"

/* Model calls per turn the dispatcher keeps a record for: indexes 0 .. MAX-1 (the tap
 * reports at most TS_TAP_MAX_CALLS, which dispatch.c checks is no more). Queued calls are
 * numbered from TS_DISPATCH_QUEUED_BASE, above every model call, so that both kinds keep
 * distinct (turn, index) keys in the store. Stored indexes depend on these values: they
 * never change. */
#define TS_DISPATCH_MAX_CALLS 256
#define TS_DISPATCH_QUEUED_BASE TS_DISPATCH_MAX_CALLS

/* thread and seq of `ev` are unset: the receiver numbers the thread's events. */
typedef void (*ts_dispatch_event_fn)(void *user, const ts_event *ev);

typedef struct {
  ts_store *store;         /* required; used only from the worker thread once dispatching */
  const ts_registry *reg;  /* required */
  const char *thread;      /* required; must exist in the store */
  uint32_t turn;
  ts_dispatch_event_fn on_event; /* may be NULL */
  void *user;
  int pipelined;           /* 1 (recommended): run calls while the turn streams */
  /* Variables (below): the definition layers (NULL: none) and how often a parked call
   * looks for its value (0: TS_DISPATCH_POLL_MS). */
  const ts_var_layers *layers;
  uint32_t poll_ms;
  /* May be NULL. The layers one tool's calls resolve with instead of `layers` (a prompt's
   * tools entry gives its tool its own `env`: agent/compose.h), called with `user`;
   * returning NULL means `layers`. */
  const ts_var_layers *(*tool_layers)(void *user, const ts_tool *tool);
  /* May be NULL: the thread's filesystem, handed to each call (ts_call_info.workspace). */
  const char *workspace;
  /* May be NULL. A flag a signal handler sets (Ctrl-C, SIGTERM): the dispatcher watches it
   * (every TS_DISPATCH_STOP_POLL_MS, on a thread of its own) and, once it is nonzero, acts
   * as ts_dispatch_cancel: the running tool sees ts_call_info.cancel, nothing new starts,
   * and a parked call stops waiting (it stays parked). So a tool is told to stop within
   * that poll interval whatever the caller is doing (streaming, waiting in
   * ts_dispatch_finish); how fast it then stops is the tool's own margin (a JavaScript
   * tool's sandbox: 50 ms, docs/sandbox.md). */
  const volatile sig_atomic_t *stop;
  /* The first index this dispatcher runs (a turn completed after a restart, from the
   * call that was parked); calls below it are not expected. 0 normally. */
  uint32_t first_index;
  /* 1: the turn is being run again after a crash or Ctrl-C (`run --resume`: the cut turn
   * streamed again, or a parked turn completed): a call whose (turn, index) already has a
   * committed result keeps it and is not run again (no start record, no events); the
   * others run as usual. 0: such a call is a store error (TS_E_STORE_CALL_FINISHED), as a
   * new turn never has one. */
  int resuming;
} ts_dispatch_config;

/* How often, by default, a parked call checks whether its variable has a value. */
#define TS_DISPATCH_POLL_MS 100

/* How often the dispatcher looks at ts_dispatch_config.stop. */
#define TS_DISPATCH_STOP_POLL_MS 5

typedef struct ts_dispatch ts_dispatch;

/* Creates a dispatcher, starts its worker thread and stores it in *out. Returns
 * TS_E_OK; TS_E_INVAL for a NULL out or cfg or a missing required field; TS_E_NOMEM when
 * memory (or the system's resources for another thread) runs out. On error *out is
 * untouched and nothing is held. */
int ts_dispatch_new(ts_dispatch **out, const ts_dispatch_config *cfg);

/* Feeds one tap event of the turn (others are ignored): TOOL_CALL_STARTED records the
 * call (index, id, tool), TOOL_CALL_READY makes it runnable with its arguments,
 * TOOL_CALL_ERROR resolves it as an error result. */
void ts_dispatch_tap_event(ts_dispatch *d, const ts_tap_event *ev);

/* The turn has ended: runs what is left, resolving calls whose arguments never arrived
 * as error results, and waits until every call is committed. Returns TS_E_OK, or the
 * first store error (dispatching stops at a store error: nothing after an uncommitted
 * result may run). */
int ts_dispatch_finish(ts_dispatch *d);

/* Asks the running tool to stop (ts_call_info.cancel) and runs nothing new; calls not
 * started stay unstarted (the turn, streamed again by a resume, runs them: `resuming`).
 * The running call's result, whatever the tool made of the request (a cancelled tool's
 * error result), is committed as usual before ts_dispatch_free returns. finish then
 * returns TS_E_ABORTED, without waiting for that call. Safe from a signal-driven thread,
 * not from a signal handler (give the handler's flag as `stop` instead). */
void ts_dispatch_cancel(ts_dispatch *d);

/* After finish returned TS_E_ABORTED because a call was suspended (a tool that runs
 * another thread found it stopped: ts_tool_result.suspended, tools/registry.h), that
 * result's reason, and its code in *code (may be NULL; TS_E_ABORTED or TS_E_VAR_MISSING);
 * else NULL (*code 0). Valid until ts_dispatch_free. */
const char *ts_dispatch_stop_reason(const ts_dispatch *d, int *code);

/* Calls run so far (committed), including those a resuming dispatcher found committed. */
uint32_t ts_dispatch_done_count(const ts_dispatch *d);

void ts_dispatch_free(ts_dispatch *d); /* cancels and joins the worker if still running */

/* After a crash: resolves every call of `thread` that started but never finished (see
 * above), in (turn, index) order, emitting the same events. Returns TS_E_OK or a store
 * error; *resolved (may be NULL) counts the calls resolved. */
int ts_dispatch_resume(ts_store *store, const ts_registry *reg, const char *thread,
                       ts_dispatch_event_fn on_event, void *user, uint32_t *resolved);

/* The same, with the variable layers an idempotent tool that runs again resolves with. */
int ts_dispatch_resume_env(ts_store *store, const ts_registry *reg, const char *thread,
                           const ts_var_layers *layers, ts_dispatch_event_fn on_event,
                           void *user, uint32_t *resolved);

/* The same, stoppable: `stop` (may be NULL) is the caller's flag (ts_dispatch_config.stop),
 * seen by a call that waits for a variable and, as ts_call_info.cancel, by the tool that
 * runs again (a prompt tool resuming its child thread, whose own calls may wait). Returns
 * TS_E_ABORTED when stopped, or when a call that runs again is suspended again (its thread
 * is still waiting: ts_tool_result.suspended), with the reason in `why` (may be NULL)
 * and the suspended code in *code (may be NULL; 0 when nothing was suspended); that call
 * keeps its open start record and the calls after it are left for next time. */
int ts_dispatch_resume_stop(ts_store *store, const ts_registry *reg, const char *thread,
                            const ts_var_layers *layers, const volatile sig_atomic_t *stop,
                            char *why, size_t why_cap, int *code,
                            ts_dispatch_event_fn on_event, void *user, uint32_t *resolved);

#endif /* TS_DISPATCH_H */
