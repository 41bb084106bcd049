/* origin.c: see origin.h. */
#include "base/origin.h"

#include <string.h>
#include <strings.h>

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

/* 1 when [p, p + n) is a port: 1 to 5 digits, at most 65535. */
static int port_ok(const char *p, size_t n) {
  unsigned v = 0;
  if (n < 1 || n > 5) return 0;
  for (size_t i = 0; i < n; i++) {
    if (p[i] < '0' || p[i] > '9') return 0;
    v = v * 10 + (unsigned)(p[i] - '0');
  }
  return v <= 65535;
}

/* 1 when [p, p + n) is a dotted-quad IPv4 literal (each part 0-255, no leading zeros but
 * a lone 0: the form a browser's URL parser writes any IPv4 address in). */
static int ipv4_ok(const char *p, size_t n) {
  unsigned parts = 0;
  size_t i = 0;
  while (parts < 4) {
    size_t d = 0;
    unsigned v = 0;
    while (i < n && p[i] >= '0' && p[i] <= '9' && d < 4) {
      v = v * 10 + (unsigned)(p[i++] - '0');
      d++;
    }
    if (d == 0 || d > 3 || v > 255 || (d > 1 && p[i - d] == '0')) return 0;
    parts++;
    if (parts < 4 && (i >= n || p[i++] != '.')) return 0;
  }
  return i == n;
}

/* 1 when [p, p + n) is the inside of a bracketed IPv6 literal: hex digits, ':' and '.'
 * (an embedded IPv4 tail) only, with at least one ':'. Not a full parse: what matters
 * here is only that it cannot be a DNS name. */
static int ipv6_ok(const char *p, size_t n) {
  int colon = 0;
  if (n < 2 || n > 45) return 0;
  for (size_t i = 0; i < n; i++) {
    const char c = p[i];
    if (c == ':') colon = 1;
    else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == '.'))
      return 0;
  }
  return colon;
}

/* 1 when name [p, p + n) is localhost or under .localhost (a trailing dot allowed),
 * made of what DNS names are made of (letters, digits, '-', '_', '.'). */
static int localhost_ok(const char *p, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const char c = p[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          c == '-' || c == '_' || c == '.'))
      return 0;
  }
  if (n && p[n - 1] == '.') n--;
  if (n == 9) return !strncasecmp(p, "localhost", 9);
  return n > 10 && !strncasecmp(p + n - 10, ".localhost", 10);
}

int ts_host_allowed(const char *host, const char *const *allow, size_t nallow) {
  if (!host) return 1;
  const size_t len = strlen(host);
  size_t name = len; /* the name's length, without the port */
  if (host[0] == '[') {
    const char *close = memchr(host, ']', len);
    if (!close) return 0;
    name = (size_t)(close - host) + 1;
    if (name < len && (host[name] != ':' || !port_ok(host + name + 1, len - name - 1))) return 0;
    return ipv6_ok(host + 1, name - 2);
  }
  const char *colon = memchr(host, ':', len);
  if (colon) {
    name = (size_t)(colon - host);
    if (!port_ok(colon + 1, len - name - 1)) return 0;
  }
  if (name == 0) return 0;
  if (ipv4_ok(host, name) || localhost_ok(host, name)) return 1;
  for (size_t i = 0; i < nallow; i++) {
    const char *h = allow[i] ? strstr(allow[i], "://") : NULL;
    if (h && !strcasecmp(h + 3, host)) return 1;
  }
  return 0;
}
