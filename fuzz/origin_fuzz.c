/*
 * origin_fuzz.c: the browser rules of base/origin.h on hostile header values. The input
 * is an Origin and a Host value (split at the first NUL; no NUL: a Host alone). Besides
 * not crashing or reading past either value, the rules must keep what every listener
 * relies on:
 *   - an allow-list only ever admits more (never refuses what passes without one);
 *   - without one, a Host passes only as an IP literal or a localhost name, so it is
 *     printable ASCII with no space, and the verdict does not depend on letter case;
 *   - a request without an Origin always passes the Origin rule.
 */
#include <ctype.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/origin.h"

static const char *const allow[] = {"https://ui.example", "http://team.example:8080"};

static char *copy(const uint8_t *p, size_t n) {
  char *s = malloc(n + 1); /* exact size: ASan sees any overread */
  memcpy(s, p, n);
  s[n] = '\0';
  return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *nul = memchr(data, 0, size);
  char *origin = nul ? copy(data, (size_t)(nul - data)) : NULL;
  char *host = nul ? copy(nul + 1, size - (size_t)(nul - data) - 1) : copy(data, size);
  const int bare = ts_host_allowed(host, NULL, 0);
  if (bare && !ts_host_allowed(host, allow, 2)) abort();
  if (bare)
    for (const char *c = host; *c; c++)
      if (*c <= ' ' || *c > '~') abort();
  char *lower = strdup(host);
  for (char *c = lower; *c; c++) *c = (char)tolower((unsigned char)*c);
  if (ts_host_allowed(lower, NULL, 0) != bare) abort();
  if (ts_origin_allowed(origin, host, NULL, 0) && !ts_origin_allowed(origin, host, allow, 2)) abort();
  if (!ts_origin_allowed(NULL, host, NULL, 0)) abort();
  free(lower);
  free(host);
  free(origin);
  return 0;
}
