/*
 * gw_route.h: the gateway's routing table (which upstream serves a request path). Which
 * stream format a path's reply is in is the provider table's to say
 * (ts_provider_for_path, stream/provider.h).
 *
 * A route is a path prefix and an upstream URL; the longest prefix that matches the
 * request's path wins ("" matches every path). The upstream URL's own path is a base
 * put before the client's path and query (http://h:8080/base + /v1/x?y=1 ->
 * /base/v1/x?y=1), without a trailing slash.
 */
#ifndef TS_NET_GW_ROUTE_H
#define TS_NET_GW_ROUTE_H

#include <stddef.h>

#include "net/upstream.h"

typedef struct {
  char prefix[256];
  ts_upstream up;
  char base_path[1024]; /* the upstream URL's path without a trailing slash */
} ts_gw_route;

/* Fills *rt from a prefix (NULL or "" for every path; else it starts with '/') and an
 * upstream URL. Returns 0 or TS_E_INVAL with the reason in `why`. */
int ts_gw_route_parse(const char *prefix, const char *url, ts_gw_route *rt, char *why,
                      size_t why_cap);

/* The route of `path` among n routes: the longest matching prefix; NULL when none. */
const ts_gw_route *ts_gw_route_pick(const ts_gw_route *routes, size_t n, const char *path);

#endif /* TS_NET_GW_ROUTE_H */
