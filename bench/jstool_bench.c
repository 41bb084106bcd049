/*
 * jstool_bench.c: what a JavaScript tool costs per call, against a C tool.
 *
 * Both tools do nothing ({status: 'success', result: null} / "null") and are called
 * through ts_tool_execute, as the dispatcher calls them, with the arguments already
 * validated. The JS tool's cost is the sandbox's: a fresh Duktape heap, the prelude
 * (z, defineTool), the module evaluated again, execute, the result stringified, the heap
 * torn down. Reports p50/p99/max per call in microseconds.
 *
 * usage: jstool_bench [--calls N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "js/jstools.h"
#include "tools/registry.h"

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void noop_tool(void *user, const ts_call_info *call, const char *args, size_t len,
                      ts_tool_result *out) {
  (void)user, (void)call, (void)args, (void)len;
  ts_tool_result_json(out, "null", 4);
}

static void measure(const char *label, const ts_tool *t, int calls) {
  double *v = malloc((size_t)calls * sizeof *v);
  if (!v) exit(1);
  ts_call_info ci = {.thread = "bench", .turn = 1, .index = 0, .call_id = "c", .tool = ts_tool_name(t),
                     .cancel = NULL, .queue = NULL};
  for (int i = 0; i < calls; i++) {
    ts_tool_result r;
    double t0 = now_us();
    ts_tool_execute(t, &ci, "{\"x\":1}", 7, &r);
    v[i] = now_us() - t0;
    if (r.is_error) {
      fprintf(stderr, "%s failed: %s\n", label, r.text);
      exit(1);
    }
    ts_tool_result_free(&r);
  }
  qsort(v, (size_t)calls, sizeof *v, cmp_double);
  printf("%-28s %8d calls  p50 %9.2f us  p99 %9.2f us  max %9.2f us\n", label, calls,
         v[calls / 2], v[(size_t)((double)calls * 0.99)], v[calls - 1]);
  free(v);
}

int main(int argc, char **argv) {
  int calls = 2000;
  for (int i = 1; i + 1 < argc; i++)
    if (!strcmp(argv[i], "--calls")) calls = atoi(argv[++i]);
  if (calls < 10) calls = 10;
  char dir[] = "/tmp/ts-jstool-bench-XXXXXX", path[256], why[512];
  if (!mkdtemp(dir)) return 1;
  snprintf(path, sizeof path, "%s/noop.js", dir);
  FILE *f = fopen(path, "w");
  if (!f) return 1;
  fputs("defineTool({ description: 'does nothing', args: z.object({ x: z.number() }),\n"
        "  execute: function (state, args) { return { status: 'success', result: null }; } });\n",
        f);
  fclose(f);
  ts_registry *reg = ts_registry_new();
  ts_tool_spec c = {.name = "noop_c", .execute = noop_tool};
  if (!reg || ts_registry_add(reg, &c, why, sizeof why) ||
      ts_jstools_load(reg, path, NULL, why, sizeof why)) {
    fprintf(stderr, "setup: %s\n", why);
    return 1;
  }
  printf("per-call overhead of a no-op tool through ts_tool_execute\n");
  measure("C tool", ts_registry_find(reg, "noop_c", 6), calls * 10);
  measure("JavaScript tool (Duktape)", ts_registry_find(reg, "noop", 4), calls);
  ts_registry_free(reg);
  unlink(path);
  rmdir(dir);
  return 0;
}
