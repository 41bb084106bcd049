/*
 * attach_path_fuzz.c: the attachment path rule (runtime/agent/attachments.h) on hostile
 * path strings, which a model writes. The input is the path (any bytes, NULs included: the
 * length is given). ts_attach_path_check must agree with the rule of the header, written
 * out again here: 1..TS_ATTACH_PATH_MAX bytes, no control byte or NUL, at most one leading
 * '/', then components that are neither empty, "." nor "..". Opening it under a root that
 * does not exist must fail before anything is read, with TS_E_ATTACH_PATH exactly when the
 * rule refuses it, and a reason that is one line.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/attachments.h"
#include "base/error.h"

static int rule(const char *p, size_t n) {
  if (n == 0 || n > TS_ATTACH_PATH_MAX) return 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f) return 0;
  size_t at = p[0] == '/';
  for (;;) { /* one component per turn, up to the next '/' or the end */
    const char *slash = memchr(p + at, '/', n - at);
    size_t len = slash ? (size_t)(slash - (p + at)) : n - at;
    if (len == 0 || (len == 1 && p[at] == '.') || (len == 2 && !memcmp(p + at, "..", 2))) return 0;
    if (!slash) return 1;
    at += len + 1;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *p = malloc(size ? size : 1); /* exact size: ASan sees any overread */
  if (size) memcpy(p, data, size);
  int ok = ts_attach_path_check(p, size) == 0;
  if (ok != rule(p, size)) abort();
  char why[512] = "";
  int fd = -1;
  int rc = ts_attach_open("/nonexistent/attach_path_fuzz", p, size, &fd, NULL, why, sizeof why);
  if (fd != -1 || rc >= 0 || (rc == TS_E_ATTACH_PATH) == ok || !why[0]) abort();
  for (const char *c = why; *c; c++)
    if ((unsigned char)*c < 0x20 || *c == 0x7f) abort(); /* one line, the path escaped */
  free(p);
  return 0;
}
