/*
 * upstream.c: see upstream.h. The URL is read by libevent's parser (evhttp_uri), which
 * keeps the brackets of an IPv6 literal in the host; we strip them for connecting and
 * put them back for the Host header. Verification is configured per connection (the
 * host a certificate must name differs per upstream) on a shared context.
 */
#define _DEFAULT_SOURCE
#include "net/upstream.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/http.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "base/error.h"

static void set_why(char *why, size_t cap, const char *msg, const char *arg) {
  if (why && cap) snprintf(why, cap, msg, arg);
}

int ts_upstream_parse(const char *url, ts_upstream *u, char *why, size_t cap) {
  memset(u, 0, sizeof *u);
  struct evhttp_uri *uri = url ? evhttp_uri_parse_with_flags(url, 0) : NULL;
  if (!uri) {
    set_why(why, cap, "%s", "malformed URL");
    return TS_E_HTTP_URL;
  }
  int rc = TS_E_HTTP_URL;
  const char *scheme = evhttp_uri_get_scheme(uri);
  const char *host = evhttp_uri_get_host(uri);
  if (!scheme || (strcasecmp(scheme, "http") && strcasecmp(scheme, "https"))) {
    set_why(why, cap, "%s", "URL must start with http:// or https://");
    goto out;
  }
  if (evhttp_uri_get_userinfo(uri)) {
    set_why(why, cap, "%s", "URL must not carry user:password@ (keys go in headers)");
    goto out;
  }
  if (!host || !*host) {
    set_why(why, cap, "%s", "URL has no host");
    goto out;
  }
  u->tls = !strcasecmp(scheme, "https");
  size_t hl = strlen(host);
  if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') host++, hl -= 2;
  if (hl >= sizeof u->host) {
    set_why(why, cap, "%s", "URL host too long");
    goto out;
  }
  memcpy(u->host, host, hl);
  u->host[hl] = '\0';
  unsigned char addr[16];
  int v6 = inet_pton(AF_INET6, u->host, addr) == 1;
  u->is_ip = v6 || inet_pton(AF_INET, u->host, addr) == 1;
  int port = evhttp_uri_get_port(uri);
  int dflt = u->tls ? 443 : 80;
  u->port = port > 0 ? port : dflt;
  if (u->port > 65535) {
    set_why(why, cap, "%s", "URL port out of range");
    goto out;
  }
  if (u->port == dflt)
    snprintf(u->host_hdr, sizeof u->host_hdr, v6 ? "[%s]" : "%s", u->host);
  else
    snprintf(u->host_hdr, sizeof u->host_hdr, v6 ? "[%s]:%d" : "%s:%d", u->host, u->port);
  const char *path = evhttp_uri_get_path(uri);
  const char *query = evhttp_uri_get_query(uri);
  if (!path) path = "";
  if (!query) query = "";
  if (strlen(path) >= sizeof u->path || strlen(query) >= sizeof u->query) {
    set_why(why, cap, "%s", "URL too long");
    goto out;
  }
  snprintf(u->path, sizeof u->path, "%s", path);
  snprintf(u->query, sizeof u->query, "%s", query);
  rc = 0;
out:
  evhttp_uri_free(uri);
  return rc;
}

int ts_upstream_tls_ctx(const char *ca_file, SSL_CTX **out, char *why, size_t cap) {
  *out = NULL;
  SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
  if (!ctx) {
    set_why(why, cap, "%s", "TLS: cannot create a context");
    return TS_E_NOMEM;
  }
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
  int ok = ca_file ? SSL_CTX_load_verify_locations(ctx, ca_file, NULL)
                   : SSL_CTX_set_default_verify_paths(ctx);
  if (ok != 1) {
    set_why(why, cap, ca_file ? "TLS: cannot load the CA file %s" : "%s",
            ca_file ? ca_file : "TLS: cannot load the system CA store");
    SSL_CTX_free(ctx);
    ERR_clear_error();
    return TS_E_HTTP_TLS;
  }
  *out = ctx;
  return 0;
}

struct bufferevent *ts_upstream_tls_bev(struct event_base *base, SSL_CTX *ctx,
                                        const ts_upstream *u) {
  SSL *ssl = SSL_new(ctx);
  if (!ssl) return NULL;
  if (u->is_ip) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), u->host);
  } else {
    SSL_set_tlsext_host_name(ssl, u->host);
    SSL_set1_host(ssl, u->host);
  }
  struct bufferevent *bev = bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
                                                           BEV_OPT_CLOSE_ON_FREE);
  if (!bev) {
    SSL_free(ssl);
    return NULL;
  }
  bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
  return bev;
}

int ts_upstream_tls_failure(struct bufferevent *bev, char *why, size_t cap) {
  SSL *ssl = bev ? bufferevent_openssl_get_ssl(bev) : NULL;
  if (!ssl) return 0;
  unsigned long e, last = 0;
  while ((e = bufferevent_get_openssl_error(bev))) last = e;
  long vr = SSL_get_verify_result(ssl);
  int failed = 0;
  if (vr != X509_V_OK && !SSL_is_init_finished(ssl)) {
    set_why(why, cap, "certificate not trusted: %s", X509_verify_cert_error_string(vr));
    failed = 1;
  } else if (last) {
    char buf[256];
    ERR_error_string_n(last, buf, sizeof buf);
    set_why(why, cap, "%s", buf);
    failed = 1;
  }
  ERR_clear_error();
  return failed;
}
