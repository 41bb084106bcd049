/*
 * sandbox.h: state.runCode: run model- or user-authored JavaScript or TypeScript in a
 * sandbox, and JavaScript tool modules.
 *
 * The spec (docs/tools-spec §1) asks three guarantees of the sandbox, and this module is
 * where they are kept (design: docs/sandbox.md):
 *
 *   - Isolation. Every run happens in a forked child process with a copy-on-write copy of
 *     a template heap that never runs anything itself, so every run starts pristine and
 *     nothing of another run, the host, the tool's globals or the file system is
 *     reachable. The script sees ECMAScript built-ins, the prelude (Promise, Map, Set,
 *     WeakMap, Array/Object/String additions, structuredClone, queueMicrotask, timers), a
 *     `console` whose output is captured, and `input`: the caller's JSON, parsed inside
 *     the heap. Duktape's escape hatches are absent: the `Duktape` global is deleted, and
 *     there is no `require`, module loader, `print` or `alert`.
 *   - Memory caps. The heap allocates through a counting allocator that refuses to grow
 *     past `memory_limit_bytes` on top of the template's own bytes. A script that reaches
 *     the cap ends with status TS_SANDBOX_OOM (even if it catches the allocation error).
 *     Garbage is collected when the cap is reached (not on a schedule), so a run holds
 *     garbage until then and its memory_peak counts it.
 *   - Caller-initiated termination, and deadlines that hold for every call. The caller's
 *     thread watches the child: at the deadline (`timeout_ms`) plus a grace of 15 ms, or
 *     when the terminate handle or the cancel flag fires, it kills the child (SIGKILL),
 *     also in the middle of one long native call (a join, a sort, a JSON encode, a
 *     RegExp). The promised margin is 50 ms. Inside the child, Duktape's interrupt check
 *     still stops ordinary loops at the deadline with a proper result.
 *
 * Language: ES2022 and TypeScript, brought down to Duktape's ES5 by the sandbox's own
 * transpiler (runtime/js/transpile.js; limits in docs/sandbox.md); the transpiled text
 * and its compiled bytecode are cached by content in the calling process, so running
 * the same source again costs neither the transpiler nor the compiler.
 * Syntax errors name the user's line and column; the user's lines are kept, so runtime
 * errors' lines are the user's.
 *
 * Threads: runs are synchronous (ts_sandbox_run returns when the run has ended); different
 * threads may run sandboxes at the same time. The first run in a process builds the
 * templates (once, about 70 ms). Each run costs a fork of the calling process.
 */
#ifndef TS_SANDBOX_H
#define TS_SANDBOX_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Defaults for options left at 0; why these values: docs/sandbox.md. */
#define TS_SANDBOX_DEFAULT_TIMEOUT_MS 5000u
#define TS_SANDBOX_DEFAULT_MEMORY_LIMIT ((size_t)64 << 20) /* 64 MiB */
#define TS_SANDBOX_DEFAULT_CONSOLE_LIMIT ((size_t)64 << 10) /* 64 KiB of console JSON */

typedef enum {
  TS_SANDBOX_OK = 0,     /* the script completed; value_json holds its value */
  TS_SANDBOX_ERROR,      /* it threw, did not compile, or its value/input was not JSON */
  TS_SANDBOX_TIMEOUT,    /* it ran past timeout_ms */
  TS_SANDBOX_TERMINATED, /* the caller called ts_sandbox_terminate */
  TS_SANDBOX_OOM         /* it reached memory_limit_bytes */
} ts_sandbox_status;

/* A terminate handle. Zero-initialise it (or ts_sandbox_cancel_init) before the run,
 * pass it in the options, and call ts_sandbox_terminate from any thread, or from a
 * signal handler, to stop the run. A handle serves one run at a time; re-initialise it
 * before reusing it. */
typedef struct {
  _Atomic(const char *) reason; /* NULL until terminated */
} ts_sandbox_cancel;

void ts_sandbox_cancel_init(ts_sandbox_cancel *c);

/* Asks the run that holds `c` to stop; it ends (within about a millisecond of script
 * execution) with TS_SANDBOX_TERMINATED and the error "terminated: <reason>". `reason`
 * is not copied: it must outlive the run (a string literal). The first reason wins;
 * terminating a handle whose run has not started makes that run stop at its first
 * check; after the run it has no effect. Thread-safe and async-signal-safe. */
void ts_sandbox_terminate(ts_sandbox_cancel *c, const char *reason);

/* The language of the code: AUTO takes TypeScript syntax where it appears (type
 * annotations are otherwise syntax errors in JavaScript, so nothing valid changes
 * meaning), JS refuses it, TS expects it. */
enum { TS_SANDBOX_LANG_AUTO = 0, TS_SANDBOX_LANG_JS, TS_SANDBOX_LANG_TS };

typedef struct {
  uint32_t timeout_ms;       /* wall-clock limit from the start of the run; 0: default */
  size_t memory_limit_bytes; /* cap on the heap's live allocations; 0: default */
  size_t console_limit_bytes; /* cap on console_json; 0: default */
  /* The caller's data, as JSON text; the script sees it parsed, as the global `input`.
   * NULL: `input` is undefined. Invalid JSON ends the run with TS_E_SANDBOX_INPUT. */
  const char *input_json;
  size_t input_len;
  ts_sandbox_cancel *cancel; /* NULL: only the timeout stops the run */
  /* A second way to stop the run: it ends as TS_SANDBOX_TERMINATED ("terminated: the
   * call was cancelled") once *cancel_flag is nonzero (the dispatcher's ts_call_info
   * cancel flag). NULL: none. */
  const volatile int *cancel_flag;
  int language; /* TS_SANDBOX_LANG_*; 0: auto */
  /* Live console output: called on the caller's thread, while the run goes on, with each
   * console entry as the script prints it (UTF-8, not NUL-terminated, valid only during
   * the call; cut at console_limit_bytes). NULL: none. The entries also end up in the
   * result's console_json as before. */
  void (*on_console)(void *user, const char *entry, size_t len);
  void *console_user;
} ts_sandbox_opts;

typedef struct {
  ts_sandbox_status status;
  int code; /* 0, or the ts_err code: TS_E_SANDBOX_* (error.h), TS_E_NOMEM, TS_E_INVAL */
  /* JSON.stringify of the script's completion value (undefined and functions give
   * "null"), NUL-terminated; NULL unless status is TS_SANDBOX_OK. Valid UTF-8: Duktape's
   * surrogate pairs (CESU-8) are joined, and a lone surrogate becomes U+FFFD. */
  char *value_json;
  size_t value_len;
  /* What console.log/info/warn/error/debug printed: a JSON array of strings, one per
   * call (arguments joined by spaces; objects as JSON). Always set ("[]" at least) unless
   * the host itself ran out of memory. Past console_limit_bytes the last entry is cut,
   * later calls are dropped, console_truncated is set and a final entry says so. Kept
   * for every status: what a script printed before a timeout is often the clue. */
  char *console_json;
  size_t console_len;
  int console_truncated;
  /* One line saying why the run failed, NUL-terminated; NULL when status is OK.
   * Timeouts read "timeout: ...", terminations "terminated: <reason>", memory "out of
   * memory: ...", script errors as the error's string ("TypeError: ..."). */
  char *error;
  size_t memory_peak; /* the most bytes the heap held at once (garbage included) */
  double elapsed_ms;  /* from the start of the run to its end, heap teardown included */
} ts_sandbox_result;

/* Runs `code` (`len` bytes, UTF-8 ECMAScript, evaluated as global eval code: the value
 * is the completion value of the last statement) in a fresh heap with the options `o`
 * (NULL: all defaults), and fills `out` (which the caller later gives to
 * ts_sandbox_result_fini, whatever the return). Returns 0 when the status is
 * TS_SANDBOX_OK, else out->code (negative). */
int ts_sandbox_run(const char *code, size_t len, const ts_sandbox_opts *o, ts_sandbox_result *out);

/* Frees what a result holds and zeroes it; NULL and zeroed results are fine. */
void ts_sandbox_result_fini(ts_sandbox_result *r);

/* "ok", "error", "timeout", "terminated", "oom"; static. */
const char *ts_sandbox_status_name(ts_sandbox_status s);

/* The result as one JSON object: {"status":"ok","value":V,"console":[...]} or
 * {"status":S,"error":"...","console":[...]} (and "console_truncated":true when cut).
 * Returns a malloc'd NUL-terminated string (length in *len if non-NULL), NULL when out
 * of memory. */
char *ts_sandbox_result_json(const ts_sandbox_result *r, size_t *len);

/* ---- JavaScript tool modules (runtime/js/jstools.c builds the registry side) -------
 *
 * A tool module is JavaScript or TypeScript source (opts.language) that calls
 * defineTool({...}). Every heap that runs a module gets the tool kit
 * (runtime/js/toolkit.js; isolated like runCode) that defines:
 *   - `z`: the common Zod surface, each chain giving the JSON Schema Zod 4's own export
 *     gives for it in input mode (the table: docs/jstools.md). A plain object given
 *     where a schema is expected is taken as JSON Schema as it is.
 *   - `defineTool(def)`: checks that def.execute is a function and returns a definition
 *     object holding def's own properties; its `annotations` is the very object given.
 *   - `module` and `exports` (module.exports === exports at the start), CommonJS-style.
 *
 * Which tools a module defines, and their names:
 *   - module.exports is one definition: that tool, named def.name or else `module_name`;
 *   - module.exports is an object holding definitions: a package; each is named def.name
 *     or else its key, and is marked packed;
 *   - otherwise every defineTool call of the module: one may go unnamed (it takes
 *     `module_name`), several must each have a `name`.
 * Names must be distinct within a module.
 *
 * Each run of a tool evaluates the module again in a fresh heap (no heap is ever
 * reused), so a tool keeps nothing from one call to the next. */

typedef struct {
  char *name;
  char *description; /* "" when absent */
  int required;
  int secret; /* type: 'secret' */
  int scoped; /* scoped: true */
} ts_sandbox_tool_var;

typedef struct {
  char *name;
  char *description;   /* "" when absent */
  char *args_schema;   /* JSON Schema text; NULL when `args` is absent */
  char *progress_arg;  /* NULL when absent */
  char *annotations;   /* JSON.stringify(annotations); NULL when absent */
  ts_sandbox_tool_var *vars;
  size_t n_vars;
  char **uses; /* the `uses` names; NULL (and has_uses 0) when `uses` is omitted */
  size_t n_uses;
  int has_uses;
  int packed; /* exported as a member of a package */
  /* It has a tool_call_started hook: the definition's onToolCallStarted, or the module's
   * (exported, or a top-level function); ts_sandbox_call_hook runs it. */
  int has_started_hook;
} ts_sandbox_tool_def;

typedef struct {
  ts_sandbox_tool_def *v;
  size_t n;
  /* The module's definePrompt / defineAgent definitions, as one JSON array (the shapes of
   * tools/definitions.h; names resolved, z schemas as JSON Schema); NULL when it made
   * none. */
  char *defs_json;
} ts_sandbox_tool_defs;

/* Evaluates module `src` (`len` bytes) under the options `o` (NULL: defaults; the
 * timeout and memory cap stop a module whose top level misbehaves) and fills `out` with
 * its definitions (owned by the caller: ts_sandbox_tool_defs_free, whatever the return).
 * `module_name` names an unnamed single tool (the file's base name). Returns 0, or a
 * negative ts_err with a one-line reason in `why`: TS_E_SANDBOX_* when the module fails
 * (a syntax error, a throw, a timeout), TS_E_INVAL for a malformed definition. */
int ts_sandbox_load_tools(const char *src, size_t len, const char *module_name,
                          const ts_sandbox_opts *o, ts_sandbox_tool_defs *out, char *why,
                          size_t why_cap);
void ts_sandbox_tool_defs_free(ts_sandbox_tool_defs *d);

/* What `state` asks of the host while a tool runs. The callbacks run synchronously on
 * the calling thread, inside the tool's run; the run's time limit is paused while they
 * do (each has limits of its own). Strings given to them are valid only during the
 * callback. */
typedef struct {
  void *user;
  /* state.env(name): 1 with *value set (borrowed; copied at once) when it resolves, 0
   * when it does not (the script gets undefined), -1 with a message in err to throw. */
  int (*env)(void *user, const char *name, const char **value, char *err, size_t err_cap);
  /* state.invokeTool(name, args): args_json is JSON text ("{}" when omitted). Fills
   * *is_error and *text (malloc'd; success: JSON text; error: the message), which the
   * sandbox frees. */
  void (*invoke)(void *user, const char *tool, const char *args_json, size_t args_len,
                 int *is_error, char **text, size_t *text_len);
  /* state.queueTool(name, args): 0 when queued; else -1 with a message in err, which the
   * script gets thrown as an Error. */
  int (*queue)(void *user, const char *tool, const char *args_json, size_t args_len, char *err,
               size_t err_cap);
} ts_sandbox_host;

typedef struct {
  ts_sandbox_status status; /* OK: execute returned (a success or an error result) */
  int is_error;             /* the tool's answer is an error; always so when status != OK */
  char *text;               /* malloc'd, NUL-terminated: success: JSON text of `result`;
                               error: the message */
  size_t len;
  double elapsed_ms;
  size_t memory_peak;
} ts_sandbox_tool_result;

/* Runs tool `tool` of module `src`: a fresh heap, the prelude, the module, then
 * def.execute(state, args) with `args` parsed from args_json, under the options `o`
 * (timeout, memory cap, terminate handle, cancel flag; input_json is ignored). `state`
 * has env(name), invokeTool(name, args), queueTool(name, args) (through `host`, served on
 * the caller's thread while the tool's child waits; a NULL callback makes the call throw
 * "not available") and runCode(code, options) (options language, timeoutMs,
 * memoryLimitBytes, input, onConsole): a handle, at once, to a run of its own that can
 * be awaited ({status, value, console, error} as ts_sandbox_result_json), read
 * synchronously, or terminated; its limits are capped at the tool's own. An async
 * execute's promise is awaited.
 * execute's value {status: 'success', result} gives a success (JSON of result, "null"
 * for undefined); {status: 'error', error} an error (error as a string: a string as is,
 * an Error's message, anything else as JSON); anything else, a throw, a timeout, the
 * memory cap or a termination give an error result with a message saying so
 * ("timed out after N ms: ...", "out of memory: ...", the thrown error's string).
 * Always fills `out` (ts_sandbox_tool_result_fini it); returns 0 unless the host itself
 * ran out of memory (TS_E_NOMEM; out is then an error with text possibly NULL). */
int ts_sandbox_call_tool(const char *src, size_t len, const char *module_name, const char *tool,
                         const char *args_json, size_t args_len, const ts_sandbox_host *host,
                         const ts_sandbox_opts *o, ts_sandbox_tool_result *out);
void ts_sandbox_tool_result_fini(ts_sandbox_tool_result *r);

/* Runs the tool_call_started hook of tool `tool` of module `src` (tools-spec §7): a fresh
 * heap, the module, then onToolCallStarted(event) with `event` parsed from event_json
 * (the thread event's JSON, `progress` included), a returned promise awaited; under the
 * options' limits (a hook is meant to be quick: give it a short timeout). The hook's
 * value is ignored. Returns 0 when it ran (or the tool has none), else a negative ts_err
 * with a one-line reason in `why` (a throw, a timeout...). */
int ts_sandbox_call_hook(const char *src, size_t len, const char *module_name, const char *tool,
                         const char *event_json, size_t event_len, const ts_sandbox_opts *o,
                         char *why, size_t why_cap);

#endif /* TS_SANDBOX_H */
