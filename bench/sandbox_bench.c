/*
 * sandbox_bench.c: runCode latency, fresh heap included (runtime/sandbox.h): p50/p99 of
 * 2,000 runs of a tiny script and of a small JSON-building one, each in its own new heap
 * (no heap is ever reused across runs). Target: p50 under 1 ms.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "js/sandbox.h"

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int measure(const char *label, const char *code, int runs) {
  double *t = malloc(sizeof(double) * (size_t)runs);
  ts_sandbox_opts o = {0};
  for (int i = 0; i < runs; i++) {
    ts_sandbox_result r;
    double t0 = now_us();
    ts_sandbox_run(code, strlen(code), &o, &r);
    t[i] = now_us() - t0;
    if (r.status != TS_SANDBOX_OK) {
      fprintf(stderr, "sandbox_bench: %s failed: %s\n", label, r.error ? r.error : "?");
      return 1;
    }
    ts_sandbox_result_fini(&r);
  }
  qsort(t, (size_t)runs, sizeof *t, cmp);
  printf("  %-28s p50 %.3f ms   p99 %.3f ms   (%d runs)   target p50 < 1 ms: %s\n", label,
         t[runs / 2] / 1e3, t[(size_t)(runs * 0.99)] / 1e3, runs, t[runs / 2] < 1000 ? "MET" : "NOT MET");
  free(t);
  return 0;
}

int main(void) {
  printf("runCode latency, a fresh heap per run (create, run, serialize, destroy):\n");
  int rc = measure("tiny script (1 + 1)", "1 + 1", 2000);
  rc |= measure("small JSON-building script",
                "var o = {items: []}; for (var i = 0; i < 20; i++) o.items.push({i: i, s: 'x' + i});"
                " console.log(o.items.length); o",
                2000);
  return rc;
}
