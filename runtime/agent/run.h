/*
 * run.h: the agent loop: a thread's turns, from the model's streamed reply to the
 * committed tool results, until the model ends a turn without calling a tool.
 *
 * One turn: the model backend (ts_agent_model) streams its reply into a tap (so
 * tool_call_started goes out early); the dispatcher (tools/dispatch.h) runs the calls
 * strictly in index order as their arguments complete, committing each result before
 * the next call starts; at the end of the turn the assistant's message (its text and
 * its calls) is stored. Every event of the thread, the tap's and the dispatcher's,
 * goes through one event sink (events/sink.h): numbered after the thread's last stored
 * event, stored, written or drawn, published.
 *
 * The backend is a pair of callbacks, so that this room needs no HTTP: `toolstream
 * run` gives either the recorded-turns backend (agent/replay_model.h) or its HTTP
 * backend (the conversation as a provider request, cli/model_http.c).
 *
 * Stores: the loop uses two connections of the same store, because one SQLite
 * connection serves one thread: `store` for the loop (the thread, messages and, under the
 * loop's store lock, every event), `dispatch_store` for the dispatcher's worker (start
 * records and results).
 *
 * A turn is finished when its assistant message is stored, which happens once every call
 * of the turn has its committed result. A turn cut before that (a crash, a kill,
 * `cancel`, while streaming or while a call runs) is finished by the next resume: the loop
 * resolves the calls caught running (tools/dispatch.h, ts_dispatch_resume), streams the
 * cut turn again from the backend and runs it with a resuming dispatcher, which keeps every
 * committed result and runs only the calls without one, in order; so each call of the turn
 * gets exactly one result. (An HTTP backend asks the model again for that turn; a call at
 * an index that already has its result keeps it, whatever the new reply says there.) A
 * thread whose last turn called no tool is finished: resuming it without a prompt runs
 * nothing and returns TS_E_OK.
 *
 * Variables: a call whose required variable has no value is parked and waits (the
 * dispatcher, tools/dispatch.h). The one exception to the rule above: as soon as a call
 * parks after the turn's stream ended, the turn is known whole and its assistant message
 * is stored at once, so that a run stopped or killed while a call waits is completed
 * from the parked call by `resume` (agent/thread_env.h) without asking the model again.
 * (A call parked while the stream still ran is part of a cut turn like any other.) The
 * thread's state in the store says running, done, failed or interrupted.
 *
 * Stopping: `cancel` (set from a signal handler: Ctrl-C, SIGTERM) stops the turn at any
 * moment, also after its stream has ended: the dispatcher sees the flag within
 * TS_DISPATCH_STOP_POLL_MS and raises the running tool's cancel flag (a JavaScript tool's
 * sandbox then kills its run within its 50 ms margin, and the call's error result reads
 * `cancelled: ...`; a C tool stops when it next looks at the flag) or ends a parked
 * call's wait; that result is committed, no further call starts, the backend stops
 * streaming, no assistant message is stored for the cut turn (unless it was stored early
 * for a parked call), and the loop returns TS_E_ABORTED; `--resume` finishes it.
 */
#ifndef TS_AGENT_RUN_H
#define TS_AGENT_RUN_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "events/sink.h"
#include "store/store.h"
#include "stream/tap.h"
#include "stream/tool_defs.h"
#include "tools/definitions.h"
#include "tools/registry.h"
#include "tools/variables.h"

/* What a backend sees of the turn it streams. */
typedef struct {
  ts_store *store;           /* the loop's connection (the conversation so far) */
  const char *thread;
  const ts_registry *reg;    /* the tools the model may call */
  uint32_t turn;             /* 0-based: turns already stored in the thread */
  ts_sink *sink;             /* for a stream_error event the backend reports itself */
  const volatile sig_atomic_t *cancel;
  /* Composition (agent/compose.h); all NULL / 0 for a thread run without definitions. */
  const char *prompt;      /* the prompt driving this turn */
  uint32_t prompt_turn;    /* 0-based: turns of this thread that prompt drove before */
  int nested;              /* 1: a child thread run by a prompt or agent tool */
  const char *model;       /* the prompt's model; NULL: the backend's own */
  const char *system;      /* the system text; NULL or "": none */
  const char *history;     /* a thread whose conversation the model sees first (the
                            * caller's, for includeChat / includePastTools); NULL: none */
  int include_chat, include_past_tools;
  int side;                /* a dual_ai session: 'a' or 'b' (whose turn); 0: none */
  const char *tool_choice; /* the prompt's toolChoice ("auto", "none", "required"); NULL */
  int parallel_tool_calls; /* the prompt's parallelToolCalls + 1: 0 unset, 1 false, 2 true */
} ts_agent_turn;

typedef struct {
  /* Optional: called before the turn starts (before anything of it is stored).
   * Returns 0 when the backend has this turn, else nonzero with a one-line `why` (the
   * loop stops: "no recorded turn 4 in DIR"). */
  int (*has_turn)(void *user, const ts_agent_turn *t, char *why, size_t why_cap);
  /* Streams the turn's reply into `tap` with ts_tap_feed as bytes arrive, and returns
   * when the reply has ended or `cancel` is set (the loop finishes the tap). Returns 0;
   * or nonzero with a one-line `why` when the reply could not be had (the loop stops
   * after storing the turn); a backend that failed after the reply began emits a
   * stream_error event through t->sink itself. */
  int (*turn)(void *user, const ts_agent_turn *t, ts_tap *tap, char *why, size_t why_cap);
  void *user;
} ts_agent_model;

typedef struct {
  ts_store *store;          /* required: the loop's connection */
  ts_store *dispatch_store; /* required: the dispatcher's connection (same store) */
  const ts_registry *reg;   /* required */
  const ts_tool_defs *progress; /* may be NULL: progress arguments that win over reg's */
  const char *thread;       /* required, valid */
  int resume;               /* 1: continue the thread (it must exist); 0: a new thread */
  const char *prompt;       /* may be NULL: a user message stored before the first turn
                             * (on resume of a cut turn: once that turn is finished) */
  uint32_t max_turns;       /* 0: TS_AGENT_MAX_TURNS */
  ts_agent_model model;
  /* Where events go: `out`/`view`, `pub`, `who` and `secrets` are used as given; the
   * loop fills `thread`, `last_seq` and `store`. */
  ts_sink_config sink;
  const volatile sig_atomic_t *cancel; /* may be NULL */
  /* tools-spec §7: called at the moment each tool_call_started goes out, with that
   * event's JSON (the same bytes, the same progress), after the tool's own hook (a
   * JavaScript module's onToolCallStarted). NULL: none. */
  void (*on_tool_call_started)(void *user, const char *event_json, size_t len);
  void *hook_user;
  /* The thread tree (docs/variables.md): a new thread is created as a child of `parent`
   * (NULL: a root; it must exist) with its workspace directory `workspace` recorded (may
   * be NULL). On resume both are the thread's own and these are ignored. */
  const char *parent;
  const char *workspace;
  /* Variables: the definition layers the thread's calls resolve with (NULL: none). */
  const ts_var_layers *layers;
  /* Optional: called once the thread exists (created, or found on resume) and before
   * anything runs, with the loop's store connection: what the caller puts in the
   * thread's environment (values, declarations) and checks (--check-env) goes here.
   * Returns 0 to go on; nonzero stops the loop (ts_agent_run returns TS_E_ABORTED after
   * recording the state "failed"), with its own message already printed. */
  int (*prepare)(void *user, ts_store *store, const char *thread);
  void *prepare_user;
  /* Composition (tools-spec §1, §4-§6; agent/compose.h): prompt and agent definitions
   * (checked: ts_defs_check against `reg`), may be NULL. With `agent` set, that agent
   * runs the thread (its sideA prompt drives it; handoffs may pass it on); else with
   * `prompt_name` set, that prompt does; the driving prompt gives the system text, the
   * tools the model sees (function tools, prompt tools, exposed agents and the injected
   * subagent tools) and the model. Both NULL: the whole of `reg`, no system text. */
  const ts_defs *defs;
  const char *agent;
  const char *prompt_name;
} ts_agent_config;

#define TS_AGENT_MAX_TURNS 16

typedef struct {
  uint32_t turns;        /* turns run by this call */
  uint32_t calls;        /* tool calls in them */
  double elapsed_ms;
  double early_ms_sum;   /* summed over calls: time from tool_call_started to ready */
  uint64_t early_bytes_sum; /* and bytes of the stream between them */
} ts_agent_stats;

/* Runs the thread's turns. Returns TS_E_OK when the model ended its turn without tool
 * calls. Otherwise a negative ts_err with a one-line reason in `why` (secrets redacted):
 *   TS_E_STORE_THREAD_EXISTS  not resume, and the thread exists (a usage error)
 *   TS_E_STORE_NO_THREAD      resume, and the thread does not exist
 *   TS_E_ABORTED              `cancel` was set (resume finishes the cut turn)
 *   TS_E_LIMIT                max_turns turns were run (resume continues)
 *   TS_E_MS_PROVIDER          a turn's stream ended in error (a stream_error event)
 *   TS_E_IO                   the backend could not give the turn (its own `why`)
 *   a store error, TS_E_NOMEM
 * `stats` (may be NULL) is filled in every case. */
int ts_agent_run(const ts_agent_config *cfg, ts_agent_stats *stats, char *why, size_t why_cap);

/* The bus's replay archive from a store connection (ts_pub_opts.archive, with the
 * connection as archive_user): events older than the publisher's memory come from the
 * store. The connection must be the archive's own (the replay thread calls this). */
int ts_agent_archive(void *store, const char *thread, size_t thread_len, uint64_t after,
                     size_t max, int (*put)(void *, uint64_t, const char *, size_t), void *ctx,
                     uint64_t *newest);

#endif /* TS_AGENT_RUN_H */
