/*
 * bus_net.c: see bus_net.h.
 *
 * The loopback rule is applied to the URL text before nng sees it, because nng binds
 * all interfaces for an empty host, and a bus carries conversation content: exposing
 * it on the network must be a decision written in the URL ("0.0.0.0", "*", a name).
 */
#include "events/bus_net.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <nng/transport/ws/websocket.h>

#include "base/origin.h"

#include <nng/supplemental/tls/tls.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events/bus_pub.h" /* ts_bus_last_error */
#include "base/error.h"
#include "base/file.h"

static _Thread_local char last_error[128];

const char *ts_bus_last_error(void) { return last_error; }

int ts__bus_nng_err(int rv) {
  snprintf(last_error, sizeof last_error, "%s", nng_strerror(rv));
  switch (rv) {
  case NNG_ENOMEM: return TS_E_NOMEM;
  case NNG_EINVAL:
  case NNG_EADDRINVAL:
  case NNG_ENOTSUP: return TS_E_INVAL;
  default: return TS_E_IO;
  }
}

void ts__bus_clear_error(void) { last_error[0] = '\0'; }

/* The schemes nng 1.5 speaks; the `net` ones take host:port (ws ones a path too, and
 * may leave the port to its default). */
static const struct {
  const char *scheme;
  int net;
} schemes[] = {{"ipc", 0},     {"inproc", 0},   {"abstract", 0}, {"tcp", 1},
               {"tcp4", 1},    {"tcp6", 1},     {"ws", 1},       {"ws4", 1},
               {"ws6", 1},     {"wss", 1},      {"wss4", 1},     {"wss6", 1},
               {"tls+tcp", 1}, {"tls+tcp4", 1}, {"tls+tcp6", 1}};

int ts__bus_url_check(const char *url, int listening) {
  const char *sep = url ? strstr(url, "://") : NULL;
  if (!sep) {
    snprintf(last_error, sizeof last_error,
             "not a bus URL: want scheme://address (ipc:///path, tcp://host:port, ws://host:port/path)");
    return TS_E_INVAL;
  }
  const size_t sl = (size_t)(sep - url);
  int net = -1;
  for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++)
    if (strlen(schemes[i].scheme) == sl && !strncmp(url, schemes[i].scheme, sl)) net = schemes[i].net;
  if (net < 0) {
    snprintf(last_error, sizeof last_error,
             "unsupported scheme '%.*s': the bus speaks ipc, tcp, ws, wss, tls+tcp and inproc",
             (int)(sl < 32 ? sl : 32), url);
    return TS_E_INVAL;
  }
  const char *a = sep + 3;
  if (!*a) {
    snprintf(last_error, sizeof last_error, "%.*s:// needs an address", (int)sl, url);
    return TS_E_INVAL;
  }
  if (!net) return 0;
  /* host:port, the host a name, an IPv4 address, [IPv6], '*' or (listening) empty */
  const char *end = a + strcspn(a, "/?#");
  const char *colon = NULL;
  if (*a == '[') {
    const char *close = memchr(a, ']', (size_t)(end - a));
    if (close && close + 1 < end && close[1] == ':') colon = close + 1;
  } else {
    for (const char *c = a; c < end; c++)
      if (*c == ':') colon = c;
  }
  unsigned long port = 0;
  size_t digits = 0;
  if (colon)
    for (const char *c = colon + 1; c < end && digits <= 5; c++, digits++) {
      if (*c < '0' || *c > '9') {
        digits = 0;
        break;
      }
      port = port * 10 + (unsigned long)(*c - '0');
    }
  /* ws:// and wss:// may leave the port out (80, 443); tcp:// and tls+tcp:// may not */
  const int ws = url[0] == 'w';
  if (colon ? digits == 0 || digits > 5 || port > 65535 || (!listening && port == 0) : !ws) {
    snprintf(last_error, sizeof last_error, "%.*s:// wants HOST:PORT with a port of %s", (int)sl,
             url, listening ? "0-65535 (0: any free one)" : "1-65535");
    return TS_E_INVAL;
  }
  if (colon == a && !listening) {
    snprintf(last_error, sizeof last_error, "%.*s:// wants a host to connect to", (int)sl, url);
    return TS_E_INVAL;
  }
  return 0;
}

static int is_tls(const char *url) {
  return !strncmp(url, "tls+", 4) || !strncmp(url, "wss", 3);
}

int ts__bus_listen_url(const char *url, char *out, size_t outsz) {
  static const char *const net[] = {"tcp://",     "tcp4://",     "tcp6://", "ws://",
                                    "ws4://",     "ws6://",      "wss://",  "wss4://",
                                    "wss6://",    "tls+tcp://",  "tls+tcp4://",
                                    "tls+tcp6://"};
  const char *sep = strstr(url, "://");
  if (!sep || strlen(url) >= outsz) return TS_E_INVAL;
  int netted = 0;
  for (size_t i = 0; i < sizeof net / sizeof net[0]; i++)
    if (!strncmp(url, net[i], strlen(net[i]))) netted = 1;
  const char *host = sep + 3;
  const char *loop = strstr(url, "6://") ? "[::1]" : "127.0.0.1";
  int n;
  if (netted && host[0] == ':')
    n = snprintf(out, outsz, "%.*s%s%s", (int)(host - url), url, loop, host);
  else if (netted && host[0] == '*' && host[1] == ':')
    n = snprintf(out, outsz, "%.*s%s", (int)(host - url), url, host + 1);
  else
    n = snprintf(out, outsz, "%s", url);
  return n > 0 && (size_t)n < outsz ? 0 : TS_E_INVAL;
}

/* A PEM file (certificate or key): a few KiB; 16 MiB bounds a wrong path (a log). */
static char *read_pem(const char *path) {
  char *b;
  size_t n;
  return ts_file_read(path, (size_t)16 << 20, &b, &n) ? NULL : b;
}

/* Our own config object, configured and then handed to the endpoint (whose setter
 * takes a reference): simpler to reason about than editing the endpoint's default. */
static int listener_tls(nng_listener l, const ts__bus_tls *tls) {
  if (!tls || !tls->cert_file) {
    snprintf(last_error, sizeof last_error, "a TLS listener needs a certificate and key");
    return TS_E_INVAL;
  }
  nng_tls_config *cfg;
  int rv = nng_tls_config_alloc(&cfg, NNG_TLS_MODE_SERVER);
  if (rv) return ts__bus_nng_err(rv);
  int r = 0;
  if (!tls->key_file) {
    rv = nng_tls_config_cert_key_file(cfg, tls->cert_file, tls->key_password);
  } else {
    char *cert = read_pem(tls->cert_file), *key = read_pem(tls->key_file);
    if (cert && key) rv = nng_tls_config_own_cert(cfg, cert, key, tls->key_password);
    else {
      snprintf(last_error, sizeof last_error, "cannot read %s",
               !cert ? tls->cert_file : tls->key_file);
      r = TS_E_IO;
    }
    free(cert);
    free(key);
  }
  if (!r && rv == 0) rv = nng_listener_set_ptr(l, NNG_OPT_TLS_CONFIG, cfg);
  if (!r && rv) r = ts__bus_nng_err(rv);
  nng_tls_config_free(cfg);
  return r;
}

static int dialer_tls(nng_dialer d, const char *url, const ts__bus_tls *tls) {
  nng_tls_config *cfg;
  int rv = nng_tls_config_alloc(&cfg, NNG_TLS_MODE_CLIENT);
  if (rv) return ts__bus_nng_err(rv);
  nng_url *pu = NULL;
  const char *name = tls ? tls->server_name : NULL;
  if (!name && nng_url_parse(&pu, url) == 0) name = pu->u_hostname;
  if (name && *name) rv = nng_tls_config_server_name(cfg, name);
  if (rv == 0 && tls && tls->ca_file) rv = nng_tls_config_ca_file(cfg, tls->ca_file);
  if (rv == 0)
    rv = nng_tls_config_auth_mode(cfg, tls && tls->insecure ? NNG_TLS_AUTH_MODE_NONE
                                                          : NNG_TLS_AUTH_MODE_REQUIRED);
  if (rv == 0) rv = nng_dialer_set_ptr(d, NNG_OPT_TLS_CONFIG, cfg);
  if (pu) nng_url_free(pu);
  nng_tls_config_free(cfg);
  return rv ? ts__bus_nng_err(rv) : 0;
}

int ts__bus_listen(nng_socket s, const char *url, const ts__bus_tls *tls, char *bound,
                   size_t boundsz) {
  char u[TS__BUS_URL_MAX];
  int r0 = ts__bus_url_check(url, 1);
  if (r0) return r0;
  if (ts__bus_listen_url(url, u, sizeof u)) {
    snprintf(last_error, sizeof last_error, "URL longer than %d bytes", TS__BUS_URL_MAX - 1);
    return TS_E_INVAL;
  }
  nng_listener l;
  int rv = nng_listener_create(&l, s, u);
  if (rv) return ts__bus_nng_err(rv);
  if (is_tls(u)) {
    int r = listener_tls(l, tls);
    if (r) {
      nng_listener_close(l);
      return r;
    }
  }
  if ((rv = nng_listener_start(l, 0)) != 0) {
    nng_listener_close(l);
    return ts__bus_nng_err(rv);
  }
  snprintf(bound, boundsz, "%s", u);
  nng_url *pu;
  if (nng_url_parse(&pu, u) == 0) {
    int port;
    if (pu->u_port && pu->u_hostname && !strcmp(pu->u_port, "0") &&
        nng_listener_get_int(l, NNG_OPT_TCP_BOUND_PORT, &port) == 0) {
      int v6 = strchr(pu->u_hostname, ':') != NULL;
      snprintf(bound, boundsz, "%s://%s%s%s:%d%s", pu->u_scheme, v6 ? "[" : "",
               pu->u_hostname, v6 ? "]" : "", port, pu->u_path);
    }
    nng_url_free(pu);
  }
  return 0;
}

int ts__bus_dial(nng_socket s, const char *url, const ts__bus_tls *tls) {
  int r0 = ts__bus_url_check(url, 0);
  if (r0) return r0;
  nng_dialer d;
  int rv = nng_dialer_create(&d, s, url);
  if (rv) return ts__bus_nng_err(rv);
  nng_dialer_set_ms(d, NNG_OPT_RECONNMINT, 100);
  nng_dialer_set_ms(d, NNG_OPT_RECONNMAXT, 1000);
  if (is_tls(url)) {
    int r = dialer_tls(d, url, tls);
    if (r) {
      nng_dialer_close(d);
      return r;
    }
  }
  if ((rv = nng_dialer_start(d, NNG_FLAG_NONBLOCK)) != 0) {
    nng_dialer_close(d);
    return ts__bus_nng_err(rv);
  }
  return 0;
}

/* ---- browser origins ------------------------------------------------------------------ */

int ts__bus_origins_init(ts__bus_origins *o, const char *const *allow, size_t n) {
  memset(o, 0, sizeof *o);
  if (!n) return 0;
  o->allow = calloc(n, sizeof *o->allow);
  if (!o->allow) return TS_E_NOMEM;
  for (size_t i = 0; i < n; i++) {
    if (!(o->allow[i] = strdup(allow[i] ? allow[i] : ""))) {
      o->n = i;
      ts__bus_origins_fini(o);
      return TS_E_NOMEM;
    }
  }
  o->n = n;
  return 0;
}

void ts__bus_origins_fini(ts__bus_origins *o) {
  for (size_t i = 0; i < o->n; i++) free(o->allow[i]);
  free(o->allow);
  o->allow = NULL;
  o->n = 0;
}

/* The value of header `name` (with its colon; any case) in nng's "Name: value\r\n" list,
 * copied into buf: 1; 0 when absent; -1 when too long for buf. */
static int header(const char *all, const char *name, char *buf, size_t cap) {
  size_t n = strlen(name);
  for (const char *p = all; p && *p;) {
    const char *eol = strpbrk(p, "\r\n");
    size_t len = eol ? (size_t)(eol - p) : strlen(p);
    if (len >= n && !strncasecmp(p, name, n)) {
      const char *v = p + n;
      while (*v == ' ' || *v == '\t') v++;
      size_t vl = len - (size_t)(v - p);
      if (vl >= cap) return -1;
      memcpy(buf, v, vl);
      buf[vl] = '\0';
      return 1;
    }
    p = eol ? eol + strspn(eol, "\r\n") : NULL;
  }
  return 0;
}

static void origin_cb(nng_pipe p, nng_pipe_ev ev, void *arg) {
  ts__bus_origins *o = arg;
  char *all = NULL;
  if (ev != NNG_PIPE_EV_ADD_PRE || nng_pipe_get_string(p, NNG_OPT_WS_REQUEST_HEADERS, &all) != 0)
    return; /* not a WebSocket pipe (or a dialer's): no browser behind it */
  char ob[1024], hb[1024];
  int ho = header(all, "origin:", ob, sizeof ob), hh = header(all, "host:", hb, sizeof hb);
  nng_strfree(all);
  /* An Origin too long to copy is refused, not waved through. A browser's (one with an
   * Origin) must also name us by a Host that cannot be a rebinding name: nng checks the
   * Host only against a listen URL with a host, not on 0.0.0.0 or *. */
  const char *const *allow = (const char *const *)o->allow;
  if (ho < 0 || hh < 0 ||
      (ho > 0 && !ts_host_allowed(hh > 0 ? hb : NULL, allow, o->n)) ||
      !ts_origin_allowed(ho ? ob : NULL, hh > 0 ? hb : NULL, allow, o->n)) {
    __atomic_add_fetch(&o->refused, 1, __ATOMIC_RELAXED);
    nng_pipe_close(p);
  }
}

int ts__bus_origin_guard(nng_socket s, ts__bus_origins *o) {
  int rv = nng_pipe_notify(s, NNG_PIPE_EV_ADD_PRE, origin_cb, o);
  return rv ? ts__bus_nng_err(rv) : 0;
}

/* ---- a close that does not hang its caller ------------------------------------------- */

/* The rendezvous of a bounded close: whichever of the caller and the closer is last
 * frees it. */
typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv; /* on CLOCK_MONOTONIC */
  int done;          /* the closer has finished */
  int abandoned;     /* the caller stopped waiting: the closer frees this */
  void (*close)(void *);
  void *arg;
} closer;

static void closer_free(closer *c) {
  pthread_cond_destroy(&c->cv);
  pthread_mutex_destroy(&c->mu);
  free(c);
}

static void *closer_main(void *arg) {
  closer *c = arg;
  c->close(c->arg);
  pthread_mutex_lock(&c->mu);
  c->done = 1;
  const int abandoned = c->abandoned;
  pthread_cond_signal(&c->cv);
  pthread_mutex_unlock(&c->mu);
  if (abandoned) closer_free(c);
  return NULL;
}

/* A closer with its lock and its monotonic condition variable, or NULL. */
static closer *closer_new(void (*close)(void *), void *arg) {
  closer *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  pthread_condattr_t ca;
  if (pthread_condattr_init(&ca)) {
    free(c);
    return NULL;
  }
  int bad = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) || pthread_cond_init(&c->cv, &ca);
  pthread_condattr_destroy(&ca);
  if (!bad && pthread_mutex_init(&c->mu, NULL)) {
    pthread_cond_destroy(&c->cv);
    bad = 1;
  }
  if (bad) {
    free(c);
    return NULL;
  }
  c->close = close;
  c->arg = arg;
  return c;
}

int ts__bus_close_bounded(void (*close)(void *), void *arg, unsigned wait_ms) {
  closer *c = closer_new(close, arg);
  pthread_t th;
  if (c && pthread_create(&th, NULL, closer_main, c)) {
    closer_free(c);
    c = NULL;
  }
  if (!c) { /* no thread to spare: the close on this one, unbounded */
    close(arg);
    return 0;
  }
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += wait_ms / 1000;
  until.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&c->mu);
  while (!c->done && pthread_cond_timedwait(&c->cv, &c->mu, &until) != ETIMEDOUT) {
  }
  const int done = c->done;
  if (!done) c->abandoned = 1;
  pthread_mutex_unlock(&c->mu);
  if (!done) {
    pthread_detach(th);
    return 1;
  }
  pthread_join(th, NULL);
  closer_free(c);
  return 0;
}
