/*
 * compose.h: running prompts and agents (tools-spec §1, §4, §5; the shapes in
 * tools/definitions.h, the worked examples in docs/composition.md).
 *
 * The agent loop (agent/run.h) runs a thread's turns; when its configuration names an
 * agent or a prompt (ts_agent_config.agent / prompt_name, with `defs`), a ts_compose
 * says, turn by turn, who drives the thread:
 *
 *   - the driving prompt: its system text (parts resolved: text, an included prompt's
 *     text, a variable's value; a secret is never put in front of a model), its model,
 *     its history rules (includeChat / includePastTools, for a child), and a registry
 *     built from its `tools` entries;
 *   - that registry: each function tool of the entry (forwarded to the run's registry,
 *     the entry's `env` in the tool layer of the variables), each prompt named there as
 *     a prompt tool, each exposed agent as an agent tool (its toolDescription; the
 *     callee's requiredSchema, or for an agent its sideA prompt's, as the argument
 *     schema, validated like any tool's), and the lifecycle tools a side's subagent
 *     relationships get (ts__compose_lifecycle_tools, below);
 *   - after each turn, what comes next (ts_compose_after_turn): the same driver again,
 *     a handoff (the thread now belongs to another agent), the other side of a dual_ai
 *     session, or the end of the session.
 *
 * Prompt tools (§4). Calling one runs the prompt as a nested activation: a child thread
 * of the caller (id ts_compose_child_id: the same call always names the same child, so
 * a resumed parent finds the child it started instead of making a new one), with a
 * workspace of its own under the caller's, its own model and tools, as many steps as it
 * takes, then the tool result shaped by the caller's SubpromptConfig (docs/composition.md
 * "The result of a prompt tool"). Prompt tools are declared idempotent to the
 * dispatcher: a call caught running by a crash is run again, and running it again is
 * resuming its child thread, whose finished calls are never run twice.
 *
 * Agent tools (§1). An exposed ai_human agent called from a thread that an ai_human
 * agent (or a prompt) drives is a handoff: the result says so, a `handoff` event goes
 * out after the turn, and the called agent's sideA prompt drives the next turns. The
 * driver is not stored apart: it is read back from the thread's committed handoff
 * results on --resume (ts_compose_new), so it survives every crash the results do. An
 * exposed dual_ai agent runs its two sides in a child thread, each side's reply the
 * other's next user message, until a side calls one of its sessionStopTools /
 * sessionFailTools or maxSessionTurns replies were given; the outcome is the result.
 *
 * Threads of use: a ts_compose belongs to one ts_agent_run. Its tools run on that run's
 * dispatcher worker and open their own store connections for the child's run.
 */
#ifndef TS_AGENT_COMPOSE_H
#define TS_AGENT_COMPOSE_H

#include <stddef.h>
#include <stdint.h>

#include "agent/run.h"
#include "base/strbuf.h"
#include "tools/definitions.h"
#include "tools/registry.h"
#include "tools/variables.h"

/* Longest system text a prompt's parts resolve to (an included prompt that includes
 * another grows it; the cap keeps a request bounded). */
#define TS_COMPOSE_MAX_SYSTEM ((size_t)1 << 20)
/* Longest tool result a prompt or agent tool returns (its text, calls and errors). */
#define TS_COMPOSE_MAX_RESULT ((size_t)16 << 20)
/* How deep prompt tools may nest (a child calling a prompt tool ...): definitions
 * refuse cycles, this bounds a long acyclic chain. */
#define TS_COMPOSE_MAX_DEPTH 8
/* At most this many attachment paths per call, each copied file at most this size. */
#define TS_COMPOSE_MAX_ATTACHMENTS 64
#define TS_COMPOSE_MAX_ATTACHMENT_BYTES ((size_t)64 << 20)

typedef struct ts_compose ts_compose;

/* What drives the thread now. Pointers stay valid until the next ts_compose_after_turn
 * (or ts_compose_free). */
typedef struct {
  const ts_defs_prompt *prompt; /* never NULL */
  const ts_defs_agent *agent;   /* NULL: a prompt drives the thread alone */
  int side;                     /* dual_ai: 0 for sideA, 1 for sideB; else 0 */
  const ts_registry *reg;       /* the tools the model sees this turn */
  const ts_var_layers *layers;  /* agent, every tools entry's and prompt env values (the
                                 * layers of a call: ts_compose_tool_layers) */
  const char *system;           /* resolved system text ("" when none) */
  const char *model;            /* the prompt's model, NULL: the run's */
} ts_compose_driver;

/* Makes the composition for the run `cfg` (its defs and agent / prompt_name; `cfg` and
 * everything it points to must outlive the ts_compose) and finds the driver: on resume,
 * the one the thread's committed handoffs name, and for a dual_ai session the side
 * whose turn it is. `depth` is 0 for a thread started by the user, +1 per nesting.
 * Returns TS_E_OK; TS_E_INVAL (an unknown agent or prompt, an agent without a sideA
 * prompt; why says which), a store error, TS_E_NOMEM. */
int ts_compose_new(ts_compose **out, const ts_agent_config *cfg, unsigned depth, char *why,
                   size_t why_cap);
void ts_compose_free(ts_compose *c); /* NULL is a no-op */

/* The driver for the next turn, its system text resolved for `thread` now (a variable
 * part reads the thread's environment up the tree, then the layers). Returns TS_E_OK,
 * TS_E_VAR_MISSING (a required variable of the prompt or agent has no value: why says
 * which, ts_compose_missing_var gives it), TS_E_INVAL (a secret in the system text: why
 * says which), a store error, TS_E_NOMEM. */
int ts_compose_driver_get(ts_compose *c, ts_compose_driver *out, char *why, size_t why_cap);

/* After ts_compose_driver_get returned TS_E_VAR_MISSING (a required variable of the
 * driving prompt or agent without a value: the thread stops and waits for it, see
 * docs/variables.md), that variable's definition; else NULL. */
const ts_var_def *ts_compose_missing_var(const ts_compose *c);

/* The variable layers a call of `tool` (a tool of the current driver's registry) resolves
 * with: the agent's env, the env its tools entry gives it, the prompt's env (for
 * ts_dispatch_config.tool_layers). NULL when there is no driver yet. */
const ts_var_layers *ts_compose_tool_layers(const ts_compose *c, const ts_tool *tool);

/* What the loop does after a turn. */
typedef enum {
  TS_COMPOSE_GO_ON = 0,   /* the driver goes on (its tools were called) */
  TS_COMPOSE_DONE = 1,    /* the model ended its reply: the activation is over */
  TS_COMPOSE_HANDOFF = 2, /* the driver changed (from/to set); the next turn is the new one's */
  TS_COMPOSE_NEXT_SIDE = 3, /* dual_ai: the other side answers */
  TS_COMPOSE_SESSION_END = 4, /* dual_ai: a stop/fail tool or maxSessionTurns ended it */
} ts_compose_next;

/* Tells the composition that a turn ended: `called` (1 when the model called tools),
 * `tools` the names of the calls it made (NUL-separated, `tools_len` bytes). Fills
 * *from / *to (agent names) on a handoff. */
ts_compose_next ts_compose_after_turn(ts_compose *c, int called, const char *tools,
                                      size_t tools_len, const char **from, const char **to);

/* For a dual_ai session: 0 while it is open, else 1 stopped (a sessionStopTools tool
 * was called), 2 failed (a sessionFailTools tool), 3 maxSessionTurns replies given. */
int ts_compose_ended(const ts_compose *c);

/* 1 when a dual_ai agent runs the thread. */
int ts_compose_driver_is_dual(const ts_compose *c);

/* A dual_ai session's outcome (after TS_COMPOSE_SESSION_END, or at the end of the run):
 * {"status":"stopped"|"failed"|"max_session_turns","side":"a"|"b","tool":"...",
 *  "session_turns":N} without its braces, appended to `out`. */
void ts_compose_session_outcome(const ts_compose *c, ts_buf *out);

/* The child thread a call (thread, turn, index) runs its prompt or agent in: `thread`
 * + "/t<turn>c<index>" when it fits in TS_THREAD_ID_MAX, else "th_" + 16 hex digits of
 * a hash of the three (the same call, the same id). `out` holds TS_THREAD_ID_MAX + 1. */
void ts_compose_child_id(const char *thread, uint32_t turn, uint32_t index, char *out);

/* The lifecycle tools of a side's subagent relationships (tools-spec §5): for each
 * relationship of `side` that is not hidden, `subagents`, `subagent_create` and
 * `subagent_message` are added to `reg`, the tools a prompt-backed side sees. Called by
 * the composition whenever it builds an agent side's registry (`thread` is the thread the
 * side drives, `cfg` the run); the lifecycle module (issue 14, subagents) implements it.
 * Returns TS_E_OK or a negative ts_err with why. */
int ts__compose_lifecycle_tools(ts_registry *reg, const ts_defs *defs, const ts_defs_agent *agent,
                                const ts_defs_side *side, const ts_agent_config *cfg,
                                char *why, size_t why_cap);

/* Runs a nested activation (internal to the agent room): ts_agent_run for `cfg` with
 * composition depth `depth` and, when `history` is not NULL, that thread's conversation
 * shown before the child's own (includeChat / includePastTools of the driving prompt).
 * A dual_ai session's outcome (ts_compose_session_outcome) is appended to `outcome`
 * (may be NULL). Returns as ts_agent_run. */
int ts__agent_run_nested(const ts_agent_config *cfg, unsigned depth, const char *history,
                         ts_buf *outcome, char *why, size_t why_cap);

#endif /* TS_AGENT_COMPOSE_H */
