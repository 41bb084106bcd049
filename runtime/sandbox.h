/*
 * sandbox.h: state.runCode: run model- or user-authored JavaScript in a sandbox.
 *
 * The spec (docs/tools-spec §1) asks three guarantees of the sandbox, and this module is
 * where they are kept (design: docs/sandbox.md):
 *
 *   - Isolation. Every run gets a fresh Duktape heap, created for that run and destroyed
 *     after it; no heap is ever reused, so nothing of another run, the host, the tool's
 *     globals or the file system is reachable. The script sees ECMAScript built-ins, a
 *     `console` whose output is captured, and `input`: the caller's JSON, parsed inside
 *     the heap (data, never host objects). Duktape's own escape hatches are absent: the
 *     `Duktape` global (act, fin, env, gc, Thread, Pointer, dec/enc...) is deleted, and
 *     there is no `require`, module loader, `print` or `alert`.
 *   - Memory caps. The heap allocates through a counting allocator that refuses to grow
 *     past `memory_limit_bytes`. A script that reaches the cap ends with status
 *     TS_SANDBOX_OOM (even if it catches the allocation error); the host's memory and
 *     every other run are untouched.
 *   - Caller-initiated termination. Duktape is built with its interrupt counter on
 *     (runtime/duk/ts_duk_config.h): every 256 Ki bytecode instructions (about 1 ms) the
 *     run checks its deadline (`timeout_ms`, CLOCK_MONOTONIC) and its cancel handle
 *     (ts_sandbox_terminate, from any thread or a signal handler). Once either fires the
 *     run stops, even in `while (true) {}` and through any try/catch/finally: Duktape
 *     then throws at every instruction until the error has left the script.
 *
 * Pitfalls, documented where the API is:
 *   - Native built-ins do not execute bytecode and are not interrupted while they run:
 *     one call such as `new Array(1e7).join('x')` or a pathological RegExp finishes (or
 *     hits the memory cap) before the deadline is looked at. The memory cap bounds the
 *     former; RegExp backtracking is bounded only by Duktape's own step limit.
 *   - The language is Duktape 2.7's: ES5.1 plus pieces (no let, arrow functions,
 *     Promise, Map...). See docs/sandbox.md.
 *   - Runs are synchronous: ts_sandbox_run returns when the script has ended. Different
 *     threads may run sandboxes at the same time (no shared state).
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

typedef struct {
  uint32_t timeout_ms;       /* wall-clock limit from the start of the run; 0: default */
  size_t memory_limit_bytes; /* cap on the heap's live allocations; 0: default */
  size_t console_limit_bytes; /* cap on console_json; 0: default */
  /* The caller's data, as JSON text; the script sees it parsed, as the global `input`.
   * NULL: `input` is undefined. Invalid JSON ends the run with TS_E_SANDBOX_INPUT. */
  const char *input_json;
  size_t input_len;
  ts_sandbox_cancel *cancel; /* NULL: only the timeout stops the run */
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
  size_t memory_peak; /* the most bytes the heap held at once */
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

#endif /* TS_SANDBOX_H */
