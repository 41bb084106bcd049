/*
 * origin.h: the one rule for which browser origins may reach toolstream's listeners (the
 * HTTP event endpoint, the gateway and the bus's ws:// / wss:// listeners).
 *
 * A browser sends `Origin` with every WebSocket upgrade and cross-origin request; a page
 * from anywhere on the web can otherwise read a listener on the user's loopback. Allowed:
 *   - no Origin at all (not a browser: curl, nngcat, the SDKs);
 *   - the listener itself: the origin's host[:port] equals the request's Host;
 *   - a loopback origin (http or https on 127.0.0.1, localhost or [::1], any port):
 *     the developer's own pages on this machine;
 *   - an origin on the allow-list, compared exactly (scheme://host[:port]).
 * Everything else is refused.
 *
 * The Host header is checked too (ts_host_allowed: by the HTTP event endpoint on every
 * request, by the gateway and the bus's WebSocket listeners on a browser's, one with an
 * Origin), against DNS rebinding: a page of evil.example whose name is made to resolve to
 * 127.0.0.1 reaches a loopback listener as its own origin (its requests carry `Host:
 * evil.example:PORT`, and a same-origin GET carries no Origin at all), so neither rule
 * above can tell it from the listener's own page. A name the attacker controls only ever
 * arrives as a name, so allowed are:
 *   - no Host at all (HTTP/1.0: not a browser, which always sends one);
 *   - an IP literal (127.0.0.1:8788, [::1]:8788, 192.0.2.7): nothing to rebind;
 *   - localhost and any name under .localhost, which browsers resolve to loopback
 *     themselves (RFC 6761), with or without a trailing dot, spelled as DNS names are
 *     (letters, digits, '-', '_' and '.');
 *   - the host[:port] of an origin on the allow-list (any case), for a name people use
 *     to reach the listener, e.g. through a reverse proxy that passes its Host on.
 */
#ifndef TS_ORIGIN_H
#define TS_ORIGIN_H

#include <stddef.h>

/* 1 when a request with header values `origin` (NULL: none) and `host` (NULL: none) may
 * be served under the rule above, else 0. */
int ts_origin_allowed(const char *origin, const char *host, const char *const *allow, size_t nallow);

/* 1 when a request whose Host header value is `host` (NULL: none) may be served under
 * the Host rule above, else 0 (an empty or malformed value included). */
int ts_host_allowed(const char *host, const char *const *allow, size_t nallow);

#endif /* TS_ORIGIN_H */
