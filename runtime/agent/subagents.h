/*
 * subagents.h: subagent instances and their lifecycle tools (tools-spec §5; the shapes in
 * tools/definitions.h, the tool contracts and a worked example in docs/composition.md).
 *
 * An agent side declares relationships (ts_defs_side.subagents). For a side driven by a
 * prompt, every relationship that is not hidden makes the runtime add three tools to the
 * side's registry (ts_subagents_add_tools; the three names are reserved, so nothing else
 * can take them):
 *
 *   subagents         {}  ->  {"subagents":[{"id","agent","relationship","name","status",
 *                                            "blocking"}...]}: this thread's instances.
 *   subagent_create   {"agent": relationship, "name": non-empty, "message": text,
 *                      "attachments": [path...]}: a child thread of the related agent,
 *                      tagged "name:<name>"; its first message is `message` with the
 *                      attachments copied into the child's filesystem (agent/attachments.h)
 *                      and listed by their child-local paths. A blocking relationship: the
 *                      call waits for the child's outcome and returns it. Non-blocking: the
 *                      call returns {"id", ..., "status":"running"} at once; the child runs
 *                      beside the parent, and its outcome is queued to the parent's inbox
 *                      as a message naming the instance.
 *   subagent_message  {"id", "message", "attachments"}: to an existing child of this
 *                      thread. Queued durably in the child's inbox; a busy child takes it
 *                      between its turns, an idle one is run again. Blocking: the call
 *                      returns the child's next outcome; non-blocking: {"id","queued":true}.
 *
 * The outcome (the blocking result, the queued message):
 *   {"id","name","agent","relationship","status":"done"|"failed"|"max_turns",
 *    "text": the child's last reply, "attachments":[parent-local path...]}
 * where every `/attachments/NAME` path the child's reply names in its own filesystem is
 * copied into the parent's and the text says the parent-local path instead.
 *
 * Durability and crashes. Creating an instance is one store transaction (thread, tag,
 * instance, first message: ts_store_subagent_create), after the attachments are durable;
 * the instance is keyed by the creating call (parent, turn, index), so subagent_create is
 * declared idempotent: run again after a crash, it finds its instance and resumes the
 * child (whose own finished calls are never run twice) instead of making another. An
 * outcome is recorded, and for a non-blocking child queued to the parent, in one
 * transaction (ts_store_subagent_report). Non-blocking children cut by a crash are started
 * again when their parent's run builds these tools on --resume.
 *
 * The inbox. Messages to a thread wait in its durable inbox (store.h) and reach its
 * conversation only between turns, in order: ts_subagents_between_turns, which the agent
 * loop calls before each turn and when the model has ended its reply (then it also waits
 * for the thread's running non-blocking children, so that a parent hears from every child
 * it started before its run ends). Each delivery is a `subagent_message` event on the
 * receiver's stream; each child's creation a `thread_created` and each end of its session a
 * `thread_finished` event on the child's own stream (events/event.h).
 *
 * Running a child is the caller's (a thread driven by an agent: agent/compose.h), given as
 * a ts_subagents_runner; NULL runs ts_agent_run with the child's configuration as is.
 *
 * Threads: the tools run on the dispatcher's worker and open their own store connections;
 * a non-blocking child runs on a thread of its own (at most TS_SUBAGENTS_MAX_RUNNING at
 * once in a process), with its own connections. ts_subagents_join waits for a thread's
 * children; the agent loop calls it before it returns, so nothing it lent a child (the
 * registry, the definitions, the bus) goes away under the child.
 */
#ifndef TS_AGENT_SUBAGENTS_H
#define TS_AGENT_SUBAGENTS_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/run.h"
#include "base/strbuf.h"
#include "events/sink.h"
#include "store/store.h"
#include "tools/definitions.h"
#include "tools/registry.h"

/* Non-blocking children running at once in one process (each holds a thread and two store
 * connections); another subagent_create beyond that is an error result. */
#define TS_SUBAGENTS_MAX_RUNNING 16
/* Instances one thread may create over its life, and how deep a tree of subagents may
 * grow: a relationship that loops back (an agent related to itself) cannot run away. */
#define TS_SUBAGENTS_MAX_CHILDREN 64
#define TS_SUBAGENTS_MAX_DEPTH 8
/* The longest message, and the longest instance name, accepted by the tools (bytes). */
#define TS_SUBAGENTS_MAX_MESSAGE ((size_t)1 << 20)
#define TS_SUBAGENTS_NAME_MAX 200

/* Runs the child thread `child->thread` (it exists: child->resume is 1) to the end of its
 * reply, as ts_agent_run does, returning its result. `child` is the parent's run
 * configuration with the child's thread, parent, workspace, stores, agent and cancel flag
 * filled in (prompt NULL: its messages are already in its conversation). */
typedef int (*ts_subagents_run_fn)(void *user, const ts_agent_config *child, char *why,
                                   size_t why_cap);

typedef struct {
  ts_subagents_run_fn run; /* NULL: ts_agent_run */
  void *user;
} ts_subagents_runner;

/* Adds subagents, subagent_create and subagent_message to `reg` for the non-hidden
 * relationships of `side` (a side of `agent`, driven by a prompt: a human side gets
 * nothing); none when every relationship is hidden. `cfg` is the run of the thread the
 * side drives: it (and what it points to) must outlive `reg` and every child started
 * from it (the loop joins them: ts_subagents_join). With cfg->resume, non-blocking
 * children a crash cut are started again. Returns TS_E_OK, TS_E_INVAL (a relationship
 * without an agent or a name; ts_defs_check has checked that each names an agent), TS_E_NOMEM. */
int ts_subagents_add_tools(ts_registry *reg, const ts_defs *defs, const ts_defs_agent *agent,
                           const ts_defs_side *side, const ts_agent_config *cfg,
                           const ts_subagents_runner *runner, char *why, size_t why_cap);

/* The composition's hook (agent/compose.h declares it too, with this prototype): the
 * lifecycle tools of an agent side, the child run by ts_agent_run (with the child's agent
 * set, the composition drives it). Returns as ts_subagents_add_tools. */
int ts__compose_lifecycle_tools(ts_registry *reg, const ts_defs *defs, const ts_defs_agent *agent,
                                const ts_defs_side *side, const ts_agent_config *cfg,
                                char *why, size_t why_cap);

/* Between two turns of `thread` (the loop's store connection, no call running): delivers
 * every message queued to the thread into its conversation, in order, each with a
 * `subagent_message` event through `sink`. With `idle` (the model ended its reply), when
 * nothing was queued, waits while the thread has non-blocking children running in this
 * process, until one queues something or all have ended (or *cancel is set), then
 * delivers. Returns the number of messages delivered (a turn should follow when > 0),
 * TS_E_VAR_MISSING (idle, nothing came: a child waits for a variable, see
 * ts_subagents_waiting), or a negative ts_err from the store. */
int ts_subagents_between_turns(ts_store *store, const char *thread, ts_sink *sink, int idle,
                               const volatile sig_atomic_t *cancel);

/* 1 when a non-blocking child of `thread` that ran in this process stopped for a required
 * variable of its own prompt or agent (TS_E_VAR_MISSING: it reported nothing and waits for
 * `env set`, then --resume), with the reason in `why` (may be NULL); else 0. An idle
 * ts_subagents_between_turns that has nothing to deliver and no child running returns
 * TS_E_VAR_MISSING then, so that the parent stops (waiting) instead of ending. */
int ts_subagents_waiting(const char *thread, char *why, size_t why_cap);

/* One event on `thread`'s own stream (child of `parent`, may be NULL), numbered after its
 * stored events and stored, written and published as `base` says, through a sink of its
 * own: for the tree events of a child (thread_created, thread_finished) while no run of
 * that thread is emitting. A failure to emit is the sink's to report. */
void ts_subagents_emit_on(const ts_sink_config *base, ts_store *s, const char *thread,
                          const char *parent, ts_event *ev);

/* Waits until no non-blocking child of `thread` runs in this process (they see the run's
 * cancel flag), and releases them. */
void ts_subagents_join(const char *thread);

/* A subagent's child thread is named by its creating call, as a prompt tool's child is:
 * ts_compose_child_id (agent/compose.h), so a re-run of the call finds the same child. */

#endif /* TS_AGENT_SUBAGENTS_H */
