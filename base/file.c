/*
 * file.c: see file.h. Reads with a doubling buffer rather than stat()ing the size first,
 * because the paths include pipes and /dev/stdin, whose size is unknown until the end.
 */
#include "base/file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/error.h"

int ts_file_read(const char *path, size_t max, char **out, size_t *len) {
  FILE *f = fopen(path, "rb");
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
