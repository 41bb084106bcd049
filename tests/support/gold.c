/*
 * gold.c: see gold.h. The directory is read with readdir and sorted, so the order of
 * the tests does not depend on the file system.
 */
#include "support/gold.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/test_support.h"

static void die(const char *fmt, const char *what) {
  fprintf(stderr, "test support (gold): ");
  fprintf(stderr, fmt, what);
  fputc('\n', stderr);
  abort();
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n > k && !strcmp(s + n - k, suffix);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted names in tests/corpus ending in `suffix`, without it. */
static size_t names(const char *suffix, char ***out) {
  const char *dir = ts_test_path("tests/corpus");
  DIR *d = opendir(dir);
  if (!d) die("cannot open %s", dir);
  size_t n = 0, cap = 16;
  char **v = malloc(cap * sizeof *v);
  if (!v) abort();
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!ends_with(e->d_name, suffix)) continue;
    if (n == cap) {
      cap *= 2;
      char **nv = realloc(v, cap * sizeof *v);
      if (!nv) abort();
      v = nv;
    }
    v[n] = strndup(e->d_name, strlen(e->d_name) - strlen(suffix));
    if (!v[n]) abort();
    n++;
  }
  closedir(d);
  qsort(v, n, sizeof *v, cmp_str);
  *out = v;
  return n;
}

static void free_names(char **v, size_t n) {
  for (size_t i = 0; i < n; i++) free(v[i]);
  free(v);
}

static void corpus_path(char *out, size_t cap, const char *name, const char *suffix) {
  char rel[512];
  snprintf(rel, sizeof rel, "tests/corpus/%s%s", name, suffix);
  snprintf(out, cap, "%s", ts_test_path(rel));
}

/* What a capture may be: an event stream, or a plain body (a JSON array, NDJSON, an
 * error page) that the tap reads as well. */
static const char *const capture_exts[] = {".sse", ".json", ".ndjson", ".html", ".bin"};
#define N_EXTS (sizeof capture_exts / sizeof capture_exts[0])

/* The path of capture `name` (NAME.sse, NAME.json, ...) in `out`; 0 when there is none. */
static int find_capture(char *out, size_t cap, const char *name) {
  for (size_t e = 0; e < N_EXTS; e++) {
    corpus_path(out, cap, name, capture_exts[e]);
    if (access(out, F_OK) == 0) return 1;
  }
  return 0;
}

static void read_args(ts_test_gold *g) {
  char path[4096];
  corpus_path(path, sizeof path, g->name, ".args");
  g->argc = 0;
  g->argv[0] = NULL;
  if (access(path, F_OK) != 0) return;
  size_t len;
  g->text = ts_test_read_file(path, &len);
  for (char *line = g->text; line && *line;) {
    char *nl = strchr(line, '\n');
    if (nl) *nl = '\0';
    if (*line && *line != '#') {
      if (g->argc == TS_TEST_GOLD_MAX_ARGS) die("%s: too many arguments", path);
      g->argv[g->argc++] = line;
    }
    line = nl ? nl + 1 : NULL;
  }
  g->argv[g->argc] = NULL;
}

size_t ts_test_gold_list(ts_test_gold **out) {
  char **ev, **args;
  size_t n = names(".events", &ev), na = names(".args", &args);
  ts_test_gold *g = calloc(n ? n : 1, sizeof *g);
  if (!g) abort();
  for (size_t i = 0; i < n; i++) {
    snprintf(g[i].name, sizeof g[i].name, "%s", ev[i]);
    char cap[256];
    snprintf(cap, sizeof cap, "%.*s", (int)strcspn(ev[i], "."), ev[i]);
    corpus_path(g[i].events, sizeof g[i].events, ev[i], ".events");
    if (!find_capture(g[i].capture, sizeof g[i].capture, cap))
      die("gold %s has no capture", g[i].events);
    read_args(&g[i]);
  }
  for (size_t i = 0; i < na; i++) {
    int found = 0;
    for (size_t k = 0; k < n && !found; k++) found = !strcmp(args[i], ev[k]);
    if (!found) die("tests/corpus/%s.args has no .events beside it", args[i]);
  }
  free_names(ev, n);
  free_names(args, na);
  *out = g;
  return n;
}

void ts_test_gold_free(ts_test_gold *g, size_t n) {
  for (size_t i = 0; g && i < n; i++) free(g[i].text);
  free(g);
}

size_t ts_test_gold_orphans(char *missing, size_t cap) {
  size_t k = 0;
  if (cap) missing[0] = '\0';
  for (size_t e = 0; e < N_EXTS; e++) {
    char **caps;
    size_t n = names(capture_exts[e], &caps);
    for (size_t i = 0; i < n; i++) {
      char path[4096];
      corpus_path(path, sizeof path, caps[i], ".events");
      if (access(path, F_OK) == 0) continue;
      size_t used = strlen(missing);
      snprintf(missing + used, cap - used, "%s%s%s", k ? " " : "", caps[i], capture_exts[e]);
      k++;
    }
    free_names(caps, n);
  }
  return k;
}
