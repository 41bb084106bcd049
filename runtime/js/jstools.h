/*
 * jstools.h: function tools written in JavaScript (tools-spec §2, §2.1, §3, §7, §8).
 *
 * A tool module is a `.js` or `.ts` file (modern JavaScript or TypeScript, brought down
 * to what Duktape runs by the sandbox's transpiler) that calls
 * defineTool({description, args, execute: function (state, args) {...}, variables, uses,
 * progressArgument, annotations}); `args` is JSON Schema or built with the `z` builder.
 * ts_jstools_load evaluates the module once (in the sandbox, runtime/sandbox.h, which
 * says how names are chosen and what `z` produces) and adds each tool it defines to the
 * registry, beside the C tools: the model, the dispatcher and state.invokeTool see one
 * registry. Every call then runs the module again in a fresh sandbox heap, under the
 * time limit and memory cap of `ts_jstools_env`, with `state`:
 *
 *   state.env(name)        the value of a variable the tool declares in `variables`,
 *                          from --var NAME=VALUE (wins) or else the process environment;
 *                          undefined when unset; a name not declared throws. A variable
 *                          declared `required` that does not resolve stops the call
 *                          before execute runs, with an error result naming it.
 *   state.invokeTool(n, a) runs tool n now (validating a against its schema) and returns
 *                          {status: 'success', result} or {status: 'error', error};
 *                          nesting is bounded by TS_JSTOOLS_MAX_DEPTH.
 *   state.queueTool(n, a)  queues a call that the dispatcher runs after the current one
 *                          (ts_call_info.queue; dispatch.h); throws when it cannot.
 *   state.runCode(c, o)    runs code in a fresh sandbox: {status, value, console, error}.
 *
 * `uses` (§2.1). Names are local (`read`) or qualified `PACKAGE/TOOL`, where PACKAGE is
 * the package module's file base name (`files.js` -> `files/read`); a qualified name
 * resolves only to a tool of that package. When a tool supplies `uses`, a target is
 * permitted when an entry names the same registered tool (locally or qualified) or is
 * the same string; anything else is rejected: invokeTool returns an error result,
 * queueTool throws. An empty list permits nothing; an omitted `uses` permits anything,
 * except for a packed tool (a member of a package), which must declare its targets: an
 * omitted `uses` there permits nothing. Loading a package checks every member's `uses`:
 * each entry must name a member of the package or a tool already registered, else the
 * load fails and nothing of the package is registered.
 *
 * Annotations are kept as JSON.stringify of the object given and never read.
 *
 * Threads: tools run on the caller's thread (the dispatcher's worker); the registry
 * must not change while they run.
 */
#ifndef TS_JSTOOLS_H
#define TS_JSTOOLS_H

#include <stddef.h>
#include <stdint.h>

#include "tools/definitions.h"
#include "tools/registry.h"

/* How deep state.invokeTool may nest (a tool invoking itself stops here). */
#define TS_JSTOOLS_MAX_DEPTH 8

typedef struct {
  /* --var NAME=VALUE settings, each "NAME=VALUE"; they win over the environment. */
  const char *const *vars;
  size_t n_vars;
  int no_environ;            /* 1: do not read the process environment (tests) */
  uint32_t timeout_ms;       /* per call of a tool (its own JavaScript time); 0: default */
  size_t memory_limit_bytes; /* per call; 0: the sandbox's default */
  /* Where the module's definePrompt({...}) / defineAgent({...}) definitions go
   * (tools/definitions.h: ts_defs_add_json, so they meet the same parser and rules as
   * JSON files; ts_defs_check is the caller's, once everything is loaded). NULL: the
   * caller runs no prompts (tap), and they are not read. Borrowed during the load. */
  ts_defs *defs;
} ts_jstools_env;

/* Reads the module at `path`, evaluates it (under env's limits) and registers each tool
 * it defines in `reg` (tools whose execute callback runs the module; `reg` must outlive
 * its use by them), and adds the prompts and agents it defines to env->defs when that is
 * set. A module may define tools, prompts and agents, or only some of them:
 *
 *   export const researcher = definePrompt({toolDescription: 'Research a topic',
 *     prompt: 'You research.', tools: ['search'], requiredSchema: z.object({topic: z.string()})});
 *   export default defineAgent({name: 'lead', sideA: {prompt: 'coordinator'}});
 *
 * Names: a definition's `name`, else the key it is exported under, else the module's name
 * for a lone unnamed one. A `z` schema becomes JSON Schema (as for `args`); a definition
 * object where a name is expected (tools: [search, researcher], sideA: {prompt: coder})
 * stands for its name; a function anywhere in a prompt or agent is an error.
 * `env` (may be NULL: defaults) is copied. Returns TS_E_OK; or, with a one-line reason in
 * `why` and nothing registered or added: TS_E_IO (unreadable file), TS_E_LIMIT (a file
 * over 16 MiB), TS_E_SANDBOX_* (the module failed to evaluate), TS_E_INVAL (a bad
 * definition, a duplicate name, a package missing a tool its members use),
 * TS_E_JV_BAD_JSON (never in practice: the definitions' JSON), TS_E_NOMEM (which may
 * leave the prompts added). */
int ts_jstools_load(ts_registry *reg, const char *path, const ts_jstools_env *env, char *why,
                    size_t why_cap);

/* The values that the `type: 'secret'` variables of the JavaScript tools in `reg`
 * resolve to now (--var, then the environment), each once, for redaction from thread
 * events (events/sink.h). Stores up to `cap` pointers in `out` (valid while `reg` lives
 * and the environment is unchanged) and returns how many. */
size_t ts_jstools_secrets(const ts_registry *reg, const char **out, size_t cap);

/* 1 when `path` names a tool module: JavaScript (".js", ".mjs", ".cjs"; TypeScript's
 * syntax is accepted there too) or TypeScript (".ts", ".mts", ".cts"). */
int ts_jstools_is_module(const char *path);

/* The most a tool_call_started hook may run (the tool's own limit when that is less):
 * the hook is called as the event goes out, and must not hold the stream up. */
#define TS_JSTOOLS_HOOK_TIMEOUT_MS 1000u

/* tools-spec §7's `tool_call_started` hook for a JavaScript tool: when the tool (or its
 * module) defines onToolCallStarted(event), runs it in the sandbox with `event_json`,
 * the thread event's JSON as it goes out (tool, call id, index and the same `progress`),
 * awaiting a returned promise, under TS_JSTOOLS_HOOK_TIMEOUT_MS. Call it at the moment
 * the event is emitted, on the caller's thread (it blocks until the hook has run).
 * Returns 1 when a hook ran, 0 when there is none (a C tool, or no hook), or a negative
 * ts_err with a one-line reason in `why` (the hook threw or timed out); a failing hook
 * never changes the call. What the hook prints with console.* goes to standard error as
 * it prints it, a line per entry: "toolstream: TOOL: onToolCallStarted: ENTRY" (control
 * characters shown as `?`, an entry cut at 4 KiB). */
int ts_jstools_call_started(const ts_tool *t, const char *event_json, size_t len, char *why,
                            size_t why_cap);

#endif /* TS_JSTOOLS_H */
