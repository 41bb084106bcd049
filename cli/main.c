/*
 * main.c: the `toolstream` command: dispatch to subcommands, shared option helpers.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"

static const char usage[] =
    "usage: toolstream <command> [options]\n"
    "\n"
    "Streaming event processor for model tool calls.\n"
    "\n"
    "commands:\n"
    "  tap     read a provider stream, print thread events as they become known\n"
    "  run     run a thread: model turns, tool calls in order, results stored\n"
    "  runcode run JavaScript in the runCode sandbox (fresh heap, memory cap, deadline)\n"
    "  sub     subscribe to the events tap --pub publishes (live view or JSON lines)\n"
    "  demo    stream a sample write_file call through tap, paced like a model\n"
    "  gateway reverse proxy to a model provider, publishing events of each streamed reply\n"
    "  serve   the HTTP event endpoint and live page over a store (SSE, AG-UI, AI SDK)\n"
    "\n"
    "Run 'toolstream <command> --help' for a command's options.\n";

int ts_cli_opt(int argc, char **argv, int *i, const char *name, const char **val) {
  const char *a = argv[*i];
  size_t n = strlen(name);
  if (strncmp(a, name, n) != 0) return 0;
  if (a[n] == '=') {
    *val = a + n + 1;
    return 1;
  }
  if (a[n] != '\0') return 0;
  if (*i + 1 >= argc) {
    fprintf(stderr, "toolstream: option %s needs a value\n", name);
    return -1;
  }
  *val = argv[++*i];
  return 1;
}

int ts_cli_parse_size(const char *s, uint64_t *out) {
  if (!s || !*s || *s == '-') return -1;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s) return -1;
  unsigned shift = 0;
  if (*end == 'k' || *end == 'K') shift = 10, end++;
  else if (*end == 'm' || *end == 'M') shift = 20, end++;
  else if (*end == 'g' || *end == 'G') shift = 30, end++;
  if (*end) return -1;
  if (shift && v > (~0ull >> shift)) return -1;
  *out = (uint64_t)v << shift;
  return 0;
}

char *ts_cli_read_file(const char *path, size_t max, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap + 1);
  while (buf) {
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
    if (n > max) {
      free(buf);
      fclose(f);
      errno = EFBIG;
      return NULL;
    }
    if (n == cap) {
      char *nb = realloc(buf, cap * 2 + 1);
      if (!nb) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
  }
  int bad = ferror(f);
  fclose(f);
  if (!buf) {
    errno = ENOMEM;
    return NULL;
  }
  if (bad) {
    free(buf);
    errno = EIO;
    return NULL;
  }
  buf[n] = '\0';
  *len = n;
  return buf;
}

int ts_cli_tools_json(ts_tool_defs *defs, const char *path, const char *who) {
  size_t len;
  char *text = ts_cli_read_file(path, (size_t)64 << 20, &len);
  if (!text) {
    fprintf(stderr, "%s: cannot read %s: %s\n", who, path, strerror(errno));
    return -1;
  }
  char why[200] = "";
  int pr = ts_tool_defs_parse(defs, text, len, why, sizeof why);
  free(text);
  if (pr) {
    fprintf(stderr, "%s: %s: %s\n", who, path, pr == TS_E_NOMEM ? "out of memory" : why);
    return -1;
  }
  return 0;
}

int ts_cli_progress_arg(ts_tool_defs *defs, const char *val, const char *who) {
  const char *eq = strchr(val, '=');
  if (!eq || eq == val || !eq[1]) {
    fprintf(stderr, "%s: --progress-arg wants TOOL=ARG, got '%s'\n", who, val);
    return -1;
  }
  char tool[256];
  snprintf(tool, sizeof tool, "%.*s", (int)(eq - val), val);
  if (ts_tool_defs_set_progress(defs, tool, eq + 1)) {
    fprintf(stderr, "%s: out of memory\n", who);
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs(usage, stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
    fputs(usage, stdout);
    return 0;
  }
  if (!strcmp(cmd, "--version")) {
    puts("toolstream 0.1.0");
    return 0;
  }
  if (!strcmp(cmd, "tap")) return ts_cli_tap(argc - 1, argv + 1);
  if (!strcmp(cmd, "demo")) return ts_cli_demo(argc - 1, argv + 1);
  if (!strcmp(cmd, "sub")) return ts_cli_sub(argc - 1, argv + 1);
  if (!strcmp(cmd, "run")) return ts_cli_run(argc - 1, argv + 1);
  if (!strcmp(cmd, "gateway")) return ts_cli_gateway(argc - 1, argv + 1);
  if (!strcmp(cmd, "runcode")) return ts_cli_runcode(argc - 1, argv + 1);
  if (!strcmp(cmd, "serve")) return ts_cli_serve(argc - 1, argv + 1);
  fprintf(stderr, "toolstream: unknown command '%s' (try 'toolstream --help')\n", cmd);
  return 2;
}
