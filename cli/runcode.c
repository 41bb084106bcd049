/*
 * runcode.c: `toolstream runcode`: try the runCode sandbox from a shell.
 *
 * The code runs in the sandbox (runtime/js/sandbox.h: a forked child with a fresh heap,
 * a memory cap and a deadline); the result is printed as one JSON object: {"status",
 * "value"|"error", "console"}. Ctrl-C and SIGTERM terminate the run through the
 * sandbox's terminate handle, which kills the child even inside a native call.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/file.h"
#include "cli/cli.h"
#include "js/sandbox.h"

enum { O_TIMEOUT = 1, O_MEMORY, O_INPUT, O_LANGUAGE, O_LIVE };

static const ts_cli_opt runcode_opts[] = {
    {"timeout-ms", 0, TS_CLI_MS, O_TIMEOUT, 1, 86400000, "N",
     "deadline in milliseconds (default 5000)", NULL},
    {"memory-limit", 0, TS_CLI_SIZE, O_MEMORY, 65536, (uint64_t)16 << 30, "BYTES",
     "heap cap, k/m/g suffixes allowed (default 64m)", NULL},
    {"input", 0, TS_CLI_STRING, O_INPUT, 0, 0, "JSON", "data the script sees as the global `input`",
     NULL},
    {"language", 0, TS_CLI_STRING, O_LANGUAGE, 0, 0, "L",
     "js, ts or auto (default auto: TypeScript's syntax is accepted)", NULL},
    {"live", 0, TS_CLI_FLAG, O_LIVE, 0, 0, NULL,
     "print each console entry to standard error as the script prints it", NULL},
};
static const ts_cli_group runcode_group = {"runcode", NULL, runcode_opts,
                                           sizeof runcode_opts / sizeof runcode_opts[0], NULL};
static const ts_cli_group *const runcode_groups[] = {&runcode_group, NULL};

const ts_cli_command ts_cli_cmd_runcode = {
    "runcode",
    "[options] CODE | -",
    "run JavaScript or TypeScript in the runCode sandbox (fresh heap, memory cap, deadline)",
    "Runs JavaScript or TypeScript in the runCode sandbox: a fresh heap in a process of its\n"
    "own, nothing of the host reachable, a memory cap and a deadline that hold even inside\n"
    "one long built-in call; '-' reads the code from standard input. Modern syntax (ES2022:\n"
    "let/const, arrows, classes, async/await, destructuring, ?. ??...) and TypeScript types\n"
    "are brought down to what the engine runs; top-level await and return work, and the\n"
    "value is the last expression's (a promise is awaited). Prints the result as JSON:\n"
    "{\"status\":\"ok\",\"value\":...,\"console\":[...]} or with \"error\".",
    runcode_groups,
    "Exit status: 0 when the script completed; 1 when it threw, timed out, was\n"
    "terminated (Ctrl-C) or ran out of memory (the reason on standard error), or the\n"
    "code cannot be read; 2 for usage errors.",
    ts_cli_runcode,
};

typedef struct {
  ts_sandbox_opts o;
  const char *code;
} runcode_args;

/* --live: each console entry as the script prints it, one line each on stderr. */
static void live_entry(void *user, const char *s, size_t n) {
  (void)user;
  fprintf(stderr, "console: %.*s\n", (int)n, s);
}

static int runcode_set(void *user, const ts_cli_opt *o, const char *val, uint64_t n) {
  runcode_args *a = user;
  if (!o) {
    if (a->code) {
      fprintf(stderr, "toolstream runcode: one CODE argument only (quote it, or use -)\n");
      return 2;
    }
    a->code = val;
    return 0;
  }
  if (o->id == O_TIMEOUT) a->o.timeout_ms = (uint32_t)n;
  else if (o->id == O_MEMORY) a->o.memory_limit_bytes = (size_t)n;
  else if (o->id == O_LIVE) a->o.on_console = live_entry;
  else if (o->id == O_LANGUAGE) {
    if (!strcmp(val, "js")) a->o.language = TS_SANDBOX_LANG_JS;
    else if (!strcmp(val, "ts")) a->o.language = TS_SANDBOX_LANG_TS;
    else if (!strcmp(val, "auto")) a->o.language = TS_SANDBOX_LANG_AUTO;
    else {
      fprintf(stderr, "toolstream runcode: --language wants js, ts or auto, got '%s'\n", val);
      return 2;
    }
  } else {
    a->o.input_json = val;
    a->o.input_len = strlen(val);
  }
  return 0;
}

static ts_sandbox_cancel cancel;
/* The run itself is a child process the sandbox kills when the handle fires, so this
 * stops even a run inside one long native call, within the sandbox's margin. */
static void on_signal(int sig) {
  ts_sandbox_terminate(&cancel, sig == SIGTERM ? "SIGTERM" : "interrupted");
}

int ts_cli_runcode(int argc, char **argv) {
  runcode_args a;
  memset(&a, 0, sizeof a);
  ts_cli_common com;
  memset(&com, 0, sizeof com);
  int r = ts_cli_parse(&ts_cli_cmd_runcode, argc, argv, &com, runcode_set, &a);
  if (r >= 0) return r;
  ts_sandbox_opts o = a.o;
  const char *code = a.code;
  if (!code) {
    fprintf(stderr, "toolstream runcode: no code (give CODE, or - to read standard input)\n");
    return 2;
  }
  char *owned = NULL;
  size_t len = strlen(code);
  if (!strcmp(code, "-")) {
    if (ts_file_read("/dev/stdin", (size_t)64 << 20, &owned, &len)) {
      fprintf(stderr, "toolstream runcode: cannot read standard input: %s\n", strerror(errno));
      return 1;
    }
    code = owned;
  }
  ts_sandbox_cancel_init(&cancel);
  o.cancel = &cancel;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);

  ts_sandbox_result res;
  ts_sandbox_run(code, len, &o, &res);
  size_t jl = 0;
  char *json = ts_sandbox_result_json(&res, &jl);
  int rc = res.status == TS_SANDBOX_OK ? 0 : 1;
  if (json) {
    fwrite(json, 1, jl, stdout);
    putchar('\n');
  }
  if (rc) fprintf(stderr, "toolstream runcode: %s\n", res.error ? res.error : "failed");
  free(json);
  ts_sandbox_result_fini(&res);
  free(owned);
  return rc;
}
