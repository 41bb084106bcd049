/*
 * upstream.h: where an HTTP(S) upstream is and how to reach it safely, the one place
 * that knows it for the HTTP client (net/http_client.h) and the gateway
 * (net/gateway.h).
 *
 * Three pieces, each used by both:
 *   - ts_upstream_parse: an http:// or https:// URL into host (no brackets, for
 *     connecting and certificate checks), port, the Host header value (brackets for IPv6
 *     literals, the port only when it is not the scheme's default) and the path.
 *   - ts_upstream_tls_ctx: one client SSL_CTX with verification always on (there is no
 *     insecure mode): against the system store, or only against `ca_file` when given;
 *     TLS 1.2 at least.
 *   - ts_upstream_tls_bev: one TLS bufferevent for one connection to `u`, in the
 *     connecting state, with SNI for names and the certificate checked against the
 *     URL's host (DNS name, or IP address for an IP literal). Servers often close
 *     without close_notify, so a dirty shutdown is allowed: the body's own framing
 *     (chunked or Content-Length) is what tells a complete body from a cut one.
 *   - ts_upstream_tls_failure: after a connection failed, whether TLS was the reason
 *     and which (an untrusted certificate, or OpenSSL's first error).
 *
 * Secrets: nothing here sees a header; URLs with user:password@ are refused (keys go in
 * headers, which are never logged).
 */
#ifndef TS_NET_UPSTREAM_H
#define TS_NET_UPSTREAM_H

#include <stddef.h>

struct bufferevent;
struct event_base;
typedef struct ssl_ctx_st SSL_CTX;

typedef struct {
  int tls;            /* https */
  int port;           /* 1..65535 (the scheme's default when the URL has none) */
  int is_ip;          /* host is an IPv4 or IPv6 literal */
  char host[256];     /* for connecting and verifying: no brackets */
  char host_hdr[280]; /* for the Host header: brackets and a non-default port */
  char path[1024];    /* the URL's path ("" when none), without its query */
  char query[1024];   /* the URL's query without '?' ("" when none) */
} ts_upstream;

/* Parses `url` into *u. Returns 0, or TS_E_HTTP_URL with a one-line reason in `why`
 * (not http(s), user:password@, no host, host, path or query too long, port out of
 * range). `why` may be NULL. */
int ts_upstream_parse(const char *url, ts_upstream *u, char *why, size_t why_cap);

/* A client context as above, in *out. Returns 0, TS_E_NOMEM, or TS_E_HTTP_TLS when the
 * CA file (or the system store) cannot be loaded (`why` says which). */
int ts_upstream_tls_ctx(const char *ca_file, SSL_CTX **out, char *why, size_t why_cap);

/* A TLS bufferevent on `base` for a connection to u (no socket yet: connect it with
 * bufferevent_socket_connect*). BEV_OPT_CLOSE_ON_FREE; freeing it frees its SSL.
 * Returns NULL when out of memory. */
struct bufferevent *ts_upstream_tls_bev(struct event_base *base, SSL_CTX *ctx,
                                        const ts_upstream *u);

/* After `bev` (a ts_upstream_tls_bev, or NULL: returns 0) failed: 1 when TLS is the
 * reason, with the reason written to `why` ("certificate not trusted: ..." or
 * OpenSSL's error text); else 0. Drains the connection's OpenSSL errors either way. */
int ts_upstream_tls_failure(struct bufferevent *bev, char *why, size_t why_cap);

#endif /* TS_NET_UPSTREAM_H */
