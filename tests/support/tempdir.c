/*
 * tempdir.c: see tempdir.h.
 */
#include "support/tempdir.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void die(const char *what, const char *path) {
  fprintf(stderr, "test support: %s %s: %s\n", what, path, strerror(errno));
  abort();
}

char *ts_test_tempdir(char *buf, size_t cap, const char *name) {
  const char *root = getenv("TMPDIR");
  if (!root || !*root) root = "/tmp";
  int n = snprintf(buf, cap, "%s/ts-%s-XXXXXX", root, name);
  if (n < 0 || (size_t)n >= cap) {
    fprintf(stderr, "test support: temp dir name for %s does not fit %zu bytes\n", name, cap);
    abort();
  }
  if (!mkdtemp(buf)) die("mkdtemp", buf);
  return buf;
}

void ts_test_rm_rf(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) return; /* already gone */
  if (S_ISDIR(st.st_mode)) {
    DIR *d = opendir(path);
    if (d) {
      struct dirent *e;
      while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        size_t n = strlen(path) + strlen(e->d_name) + 2;
        char *sub = malloc(n);
        if (!sub) abort();
        snprintf(sub, n, "%s/%s", path, e->d_name);
        ts_test_rm_rf(sub);
        free(sub);
      }
      closedir(d);
    }
    rmdir(path);
  } else {
    unlink(path);
  }
}

const char *ts_test_at(const char *dir, const char *rel) {
  static char bufs[8][4096];
  static int next;
  char *b = bufs[next++ % 8];
  snprintf(b, sizeof bufs[0], "%s/%s", dir, rel);
  return b;
}

void ts_test_write_file(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f) die("cannot create", path);
  if (fwrite(data, 1, len, f) != len || fclose(f) != 0) die("cannot write", path);
}

void ts_test_put(const char *path, const char *text) {
  ts_test_write_file(path, text, strlen(text));
}
