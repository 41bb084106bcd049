/*
 * sandbox_bench.c: runCode latency (runtime/js/sandbox.h), every run in its own forked
 * child with a copy of the template heap (no heap is ever reused across runs):
 *
 *   - ES5: a tiny script and a small JSON-building one (the figures before modern
 *     syntax; their source passes through the transpiler too, and hits its cache);
 *   - a 20-line modern snippet (let/const, arrows, a class, destructuring, a template,
 *     ?. and ??, async/await), cached: the same source again, so the parent's cache
 *     gives the transpiled code and the child only runs it;
 *   - the same snippet, first run: a different comment on each run defeats the cache,
 *     so every run transpiles in the child.
 *
 * Targets: cached p50 < 1 ms, first run p50 < 20 ms. The process's first run also
 * builds the template heaps (once per process); it is reported on its own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "js/sandbox.h"

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* CPU time of this process and of its reaped children (the run processes), in µs: on a
 * loaded machine the wall p50 is mostly waiting for a CPU, the CPU is what a run costs. */
static double cpu_us(void) {
  struct rusage a, b;
  getrusage(RUSAGE_SELF, &a);
  getrusage(RUSAGE_CHILDREN, &b);
  return (double)(a.ru_utime.tv_sec + a.ru_stime.tv_sec + b.ru_utime.tv_sec + b.ru_stime.tv_sec) * 1e6 +
         (double)(a.ru_utime.tv_usec + a.ru_stime.tv_usec + b.ru_utime.tv_usec + b.ru_stime.tv_usec);
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static const char modern[] =
    "class Inventory {\n"
    "  #items = new Map();\n"
    "  add({ sku, qty = 1, price }) {\n"
    "    const cur = this.#items.get(sku) ?? { qty: 0, price };\n"
    "    this.#items.set(sku, { ...cur, qty: cur.qty + qty });\n"
    "    return this;\n"
    "  }\n"
    "  get total() {\n"
    "    let sum = 0;\n"
    "    for (const [, { qty, price }] of this.#items) sum += qty * price;\n"
    "    return sum;\n"
    "  }\n"
    "}\n"
    "const inv = new Inventory();\n"
    "[{ sku: 'a', price: 2 }, { sku: 'b', qty: 3, price: 5 }, { sku: 'a', qty: 2 }]\n"
    "  .forEach((it) => inv.add(it));\n"
    "const fmt = async (n) => `total: ${n.toFixed(2)}`;\n"
    "const label = await fmt(inv.total);\n"
    "const first = [...'xyz'].at(0)?.toUpperCase();\n"
    "({ label, first, total: inv.total })\n";

/* label, source maker (NULL: `code` as is), runs */
static int measure(const char *label, const char *code, int unique, int runs, double target_ms) {
  double *t = malloc(sizeof(double) * (size_t)runs), *c = malloc(sizeof(double) * (size_t)runs);
  size_t cap = strlen(code) + 64;
  char *buf = malloc(cap);
  ts_sandbox_opts o = {0};
  for (int i = 0; i < runs; i++) {
    const char *src = code;
    if (unique) {
      snprintf(buf, cap, "// run %d\n%s", i, code);
      src = buf;
    }
    ts_sandbox_result r;
    double c0 = cpu_us(), t0 = now_us();
    ts_sandbox_run(src, strlen(src), &o, &r);
    t[i] = now_us() - t0;
    c[i] = cpu_us() - c0;
    if (r.status != TS_SANDBOX_OK) {
      fprintf(stderr, "sandbox_bench: %s failed: %s\n", label, r.error ? r.error : "?");
      return 1;
    }
    ts_sandbox_result_fini(&r);
  }
  qsort(t, (size_t)runs, sizeof *t, cmp);
  qsort(c, (size_t)runs, sizeof *c, cmp);
  printf("  %-38s p50 %7.3f ms   p99 %7.3f ms   CPU p50 %7.3f ms   (%d runs)", label,
         t[runs / 2] / 1e3, t[(size_t)(runs * 0.99)] / 1e3, c[runs / 2] / 1e3, runs);
  if (target_ms > 0)
    printf("   target p50 < %g ms: %s", target_ms, t[runs / 2] < target_ms * 1e3 ? "MET" : "NOT MET");
  putchar('\n');
  free(buf);
  free(t);
  free(c);
  return 0;
}

static int want(const char *only, const char *name) { return !only || !strcmp(only, name); }

int main(int argc, char **argv) {
  const char *only = NULL;
  int runs = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--only") && i + 1 < argc) {
      only = argv[++i];
    } else if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
      runs = atoi(argv[++i]);
    } else {
      fprintf(stderr,
              "usage: sandbox_bench [--only es5|json|cached|first] [--runs N]\n"
              "  runCode latency (docs/performance.md); --only one measurement, --runs N each\n"
              "  (for callgrind: valgrind --tool=callgrind --trace-children=yes ...)\n");
      return 2;
    }
  }
  if (runs < 0 || runs > 1000000) runs = 0;
  printf("runCode latency: a forked child per run, a copy of the template heap, result over a "
         "socketpair:\n");
  ts_sandbox_result r;
  double t0 = now_us();
  ts_sandbox_run("1", 1, NULL, &r);
  printf("  %-38s %7.3f ms (once per process)\n", "first run in the process (templates)",
         (now_us() - t0) / 1e3);
  ts_sandbox_result_fini(&r);
  int rc = 0;
  if (want(only, "es5")) rc |= measure("ES5: tiny script (1 + 1)", "1 + 1", 0, runs ? runs : 2000, 1);
  if (want(only, "json"))
    rc |= measure("ES5: small JSON-building script",
                  "var o = {items: []}; for (var i = 0; i < 20; i++) o.items.push({i: i, s: 'x' + i});"
                  " console.log(o.items.length); o",
                  0, runs ? runs : 2000, 1);
  if (want(only, "cached"))
    rc |= measure("modern 20 lines, cached", modern, 0, runs ? runs : 2000, 1);
  if (want(only, "first"))
    rc |= measure("modern 20 lines, first run (transpile)", modern, 1, runs ? runs : 300, 20);
  return rc;
}
