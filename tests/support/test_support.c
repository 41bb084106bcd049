/*
 * test_support.c: see test_support.h. The allocation counter wraps libc's allocator
 * through the linker's --wrap, which works the same with and without ASan (ASan's
 * interceptors sit behind __real_malloc).
 */
#include "support/test_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);

static uint64_t alloc_count;
static long fail_after = -1;

/* Threads may allocate (the gateway's workers): the count is atomic, and so is the check of
 * fail_after in its usual unset state; failing the Nth allocation is for one thread. */
static int should_fail(void) {
  __atomic_fetch_add(&alloc_count, 1, __ATOMIC_RELAXED);
  if (__atomic_load_n(&fail_after, __ATOMIC_RELAXED) < 0) return 0;
  if (fail_after > 1) {
    fail_after--;
    return 0;
  }
  fail_after = 1; /* stays failing until reset */
  return 1;
}

void *__wrap_malloc(size_t n) { return should_fail() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t m) { return should_fail() ? NULL : __real_calloc(n, m); }
void *__wrap_realloc(void *p, size_t n) { return should_fail() ? NULL : __real_realloc(p, n); }
void __wrap_free(void *p) { __real_free(p); }

uint64_t ts_test_alloc_count(void) { return __atomic_load_n(&alloc_count, __ATOMIC_RELAXED); }
void ts_test_alloc_fail_after(long n) { __atomic_store_n(&fail_after, n <= 0 ? -1 : n, __ATOMIC_RELAXED); }

char *ts_test_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "test: cannot open %s\n", path);
    abort();
  }
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap + 1);
  if (!buf) abort();
  size_t got;
  while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      cap *= 2;
      char *nb = realloc(buf, cap + 1);
      if (!nb) abort();
      buf = nb;
    }
  }
  fclose(f);
  buf[n] = '\0';
  *len = n;
  return buf;
}

const char *ts_test_path(const char *relative) {
  static char path[4096];
  snprintf(path, sizeof path, "%s/%s", TS_SOURCE_DIR, relative);
  return path;
}
