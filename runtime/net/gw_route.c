/*
 * gw_route.c: see gw_route.h. The table is tiny (TS_GW_MAX_UPSTREAMS routes), so a
 * linear scan per request is the whole lookup.
 */
#include "net/gw_route.h"

#include <stdio.h>
#include <string.h>

#include "base/error.h"

int ts_gw_route_parse(const char *prefix, const char *url, ts_gw_route *rt, char *why,
                      size_t cap) {
  memset(rt, 0, sizeof *rt);
  if (!prefix) prefix = "";
  if (strlen(prefix) >= sizeof rt->prefix || (*prefix && *prefix != '/')) {
    if (why && cap) snprintf(why, cap, "upstream prefix '%s' must start with '/'", prefix);
    return TS_E_INVAL;
  }
  snprintf(rt->prefix, sizeof rt->prefix, "%s", prefix);
  if (!url || ts_upstream_parse(url, &rt->up, NULL, 0)) {
    if (why && cap) {
      /* a user:password@ in the URL is not echoed (error messages end up in logs) */
      const char *a = url ? strstr(url, "://") : NULL, *at = NULL;
      if (a)
        for (const char *c = a + 3; *c && *c != '/' && *c != '?' && *c != '#'; c++)
          if (*c == '@') at = c;
      if (at)
        snprintf(why, cap,
                 "upstream URL '%.*s://***%s' is not http(s)://host[:port][/path] (no user "
                 "or password in it: credentials go in the client's headers)",
                 (int)(a - url), url, at);
      else
        snprintf(why, cap, "upstream URL '%s' is not http(s)://host[:port][/path]",
                 url ? url : "(null)");
    }
    return TS_E_INVAL;
  }
  snprintf(rt->base_path, sizeof rt->base_path, "%s", rt->up.path);
  size_t l = strlen(rt->base_path);
  while (l && rt->base_path[l - 1] == '/') rt->base_path[--l] = '\0';
  return 0;
}

const ts_gw_route *ts_gw_route_pick(const ts_gw_route *routes, size_t n, const char *path) {
  const ts_gw_route *best = NULL;
  size_t best_len = 0;
  for (size_t i = 0; i < n; i++) {
    size_t l = strlen(routes[i].prefix);
    if (strncmp(path, routes[i].prefix, l)) continue;
    if (!best || l > best_len) best = &routes[i], best_len = l;
  }
  return best;
}
