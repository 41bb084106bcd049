/*
 * file.c: see file.h. Reads with a doubling buffer rather than stat()ing the size first,
 * because the paths include pipes and /dev/stdin, whose size is unknown until the end.
 */
#include "base/file.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"

/* "/dev/stdin" is read through descriptor 0 itself: opening the path fails with ENXIO
 * when standard input is a socket (what Node's child_process and other supervisors
 * hand a child for a pipe). */
static FILE *open_read(const char *path) {
  if (strcmp(path, "/dev/stdin")) return fopen(path, "rb");
  int fd = dup(STDIN_FILENO);
  if (fd < 0) return NULL;
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    int saved = errno;
    close(fd);
    errno = saved;
  }
  return f;
}

int ts_file_read(const char *path, size_t max, char **out, size_t *len) {
  FILE *f = open_read(path);
  if (!f) return TS_E_IO;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap + 1);
  int rc = buf ? TS_E_OK : TS_E_NOMEM;
  while (rc == TS_E_OK) {
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (n > max) {
      rc = TS_E_LIMIT;
      break;
    }
    if (got == 0) break;
    if (n == cap) {
      char *nb = realloc(buf, cap * 2 + 1);
      if (!nb) {
        rc = TS_E_NOMEM;
        break;
      }
      buf = nb;
      cap *= 2;
    }
  }
  if (rc == TS_E_OK && ferror(f)) rc = TS_E_IO;
  int saved = errno;
  fclose(f);
  if (rc != TS_E_OK) {
    free(buf);
    errno = rc == TS_E_LIMIT ? EFBIG : rc == TS_E_NOMEM ? ENOMEM : (saved ? saved : EIO);
    return rc;
  }
  buf[n] = '\0';
  *out = buf;
  *len = n;
  return TS_E_OK;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

void ts_file_names_free(char **names, size_t n) {
  for (size_t i = 0; names && i < n; i++) free(names[i]);
  free(names);
}

int ts_file_list(const char *dir, int (*keep)(const char *name), size_t max, char ***names,
                 size_t *n) {
  DIR *d = opendir(dir);
  if (!d) return TS_E_IO;
  char **v = NULL;
  size_t k = 0, cap = 0;
  int rc = TS_E_OK;
  struct dirent *e;
  while (rc == TS_E_OK && (e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || (keep && !keep(e->d_name)))
      continue;
    if (k == max) {
      rc = TS_E_LIMIT;
      break;
    }
    if (k == cap) {
      size_t nc = cap ? cap * 2 : 16;
      char **nv = realloc(v, nc * sizeof *nv);
      if (!nv) {
        rc = TS_E_NOMEM;
        break;
      }
      v = nv, cap = nc;
    }
    if (!(v[k] = strdup(e->d_name))) rc = TS_E_NOMEM;
    else k++;
  }
  closedir(d);
  if (rc) {
    ts_file_names_free(v, k);
    if (rc == TS_E_NOMEM) errno = ENOMEM;
    return rc;
  }
  if (k) qsort(v, k, sizeof *v, by_name);
  *names = v;
  *n = k;
  return TS_E_OK;
}
