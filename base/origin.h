/*
 * origin.h: the one rule for which browser origins may read toolstream's listeners (the
 * HTTP event endpoint and the bus's ws:// / wss:// listeners).
 *
 * A browser sends `Origin` with every WebSocket upgrade and cross-origin request; a page
 * from anywhere on the web can otherwise read a listener on the user's loopback. Allowed:
 *   - no Origin at all (not a browser: curl, nngcat, the SDKs);
 *   - the listener itself: the origin's host[:port] equals the request's Host;
 *   - a loopback origin (http or https on 127.0.0.1, localhost or [::1], any port):
 *     the developer's own pages on this machine;
 *   - an origin on the allow-list, compared exactly (scheme://host[:port]).
 * Everything else is refused.
 */
#ifndef TS_ORIGIN_H
#define TS_ORIGIN_H

#include <stddef.h>

/* 1 when a request with header values `origin` (NULL: none) and `host` (NULL: none) may
 * be served under the rule above, else 0. */
int ts_origin_allowed(const char *origin, const char *host, const char *const *allow, size_t nallow);

#endif /* TS_ORIGIN_H */
