/* origin.c: see origin.h. */
#include "base/origin.h"

#include <string.h>

static int loopback(const char *o) {
  const char *h;
  if (!strncmp(o, "http://", 7)) h = o + 7;
  else if (!strncmp(o, "https://", 8)) h = o + 8;
  else return 0;
  static const char *const hosts[] = {"127.0.0.1", "localhost", "[::1]"};
  for (size_t i = 0; i < sizeof hosts / sizeof hosts[0]; i++) {
    size_t n = strlen(hosts[i]);
    if (!strncmp(h, hosts[i], n) && (h[n] == '\0' || h[n] == ':')) return 1;
  }
  return 0;
}

int ts_origin_allowed(const char *origin, const char *host, const char *const *allow, size_t nallow) {
  if (!origin) return 1;
  const char *h = strstr(origin, "://");
  if (host && h && !strcmp(h + 3, host)) return 1;
  if (loopback(origin)) return 1;
  for (size_t i = 0; i < nallow; i++)
    if (allow[i] && !strcmp(origin, allow[i])) return 1;
  return 0;
}
