/*
 * runcode.c: `toolstream runcode`: try the runCode sandbox from a shell.
 *
 * The code runs in a fresh Duktape heap with a memory cap and a deadline (runtime/
 * sandbox.h); the result is printed as one JSON object: {"status","value"|"error",
 * "console"}. Ctrl-C terminates the run through the sandbox's terminate handle.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "js/sandbox.h"

static const char runcode_usage[] =
    "usage: toolstream runcode [options] CODE\n"
    "       toolstream runcode [options] -        (the code from standard input)\n"
    "\n"
    "Runs JavaScript (ES5) in the runCode sandbox: a fresh heap, nothing of the host\n"
    "reachable, a memory cap and a deadline. Prints the result as JSON:\n"
    "{\"status\":\"ok\",\"value\":...,\"console\":[...]} or with \"error\".\n"
    "\n"
    "options:\n"
    "  --timeout-ms N        deadline in milliseconds (default 5000)\n"
    "  --memory-limit BYTES  heap cap, k/m/g suffixes allowed (default 64m)\n"
    "  --input JSON          data the script sees as the global `input`\n"
    "  -h, --help            this help\n"
    "\n"
    "Exit status: 0 when the script completed; 1 when it threw, timed out, was\n"
    "terminated (Ctrl-C) or ran out of memory (the reason on standard error);\n"
    "2 for usage errors.\n";

static ts_sandbox_cancel cancel;
static void on_signal(int sig) {
  (void)sig;
  ts_sandbox_terminate(&cancel, "interrupted");
}

int ts_cli_runcode(int argc, char **argv) {
  ts_sandbox_opts o;
  memset(&o, 0, sizeof o);
  const char *code = NULL, *val;
  uint64_t n;
  int r;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(runcode_usage, stdout);
      return 0;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--timeout-ms", &val))) {
      if (r < 0) return 2;
      if (ts_cli_parse_size(val, &n) || n == 0 || n > 86400000) {
        fprintf(stderr, "toolstream runcode: --timeout-ms wants 1 to 86400000, got '%s'\n", val);
        return 2;
      }
      o.timeout_ms = (uint32_t)n;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--memory-limit", &val))) {
      if (r < 0) return 2;
      if (ts_cli_parse_size(val, &n) || n < 65536 || n > ((uint64_t)16 << 30)) {
        fprintf(stderr, "toolstream runcode: --memory-limit wants 64k to 16g, got '%s'\n", val);
        return 2;
      }
      o.memory_limit_bytes = (size_t)n;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--input", &val))) {
      if (r < 0) return 2;
      o.input_json = val;
      o.input_len = strlen(val);
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "toolstream runcode: unknown option '%s' (try --help)\n", a);
      return 2;
    } else if (code) {
      fprintf(stderr, "toolstream runcode: one CODE argument only (quote it, or use -)\n");
      return 2;
    } else {
      code = a;
    }
  }
  if (!code) {
    fprintf(stderr, "toolstream runcode: no code (give CODE, or - to read standard input)\n");
    return 2;
  }
  char *owned = NULL;
  size_t len = strlen(code);
  if (!strcmp(code, "-")) {
    owned = ts_cli_read_file("/dev/stdin", (size_t)64 << 20, &len);
    if (!owned) {
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
