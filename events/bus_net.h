/*
 * bus_net.h: internal nng plumbing shared by bus_pub.c and bus_sub.c: the loopback
 * rule for listeners, TLS configuration, and nng errors mapped to ts_err.
 */
#ifndef TS_BUS_NET_H
#define TS_BUS_NET_H

#include <nng/nng.h>
#include <stddef.h>

typedef struct {
  const char *cert_file; /* listener: certificate (and key when key_file is NULL) */
  const char *key_file;
  const char *key_password;
  const char *ca_file;     /* dialer: CA to verify the server with */
  const char *server_name; /* dialer: name to verify (NULL = the URL's host) */
  int insecure;            /* dialer: no verification */
} ts__bus_tls;

/* Longest URL accepted (the rewritten or bound one included). */
#define TS__BUS_URL_MAX 1024

/* Maps an nng error to a ts_err and records its message for ts_bus_last_error. */
int ts__bus_nng_err(int rv);

/* Checks a bus URL's shape before nng sees it: a scheme nng speaks, an address, and for
 * tcp and tls+tcp a HOST:PORT with a port of 1-65535 (ws and wss: the port may be left
 * to its default), 0 too when `listening`, where the host may also be empty (the
 * loopback rule). 0, or TS_E_INVAL with the reason in ts_bus_last_error. */
int ts__bus_url_check(const char *url, int listening);

/* Empties ts_bus_last_error (at the start of an open, so a reason is this call's). */
void ts__bus_clear_error(void);

/* Applies the loopback rule (bus_pub.h) to a listen URL: writes the URL to listen on
 * into `out`. Returns 0 or TS_E_INVAL (too long, no "://"). */
int ts__bus_listen_url(const char *url, char *out, size_t outsz);

/* Creates, configures and starts a listener on `url` (after the loopback rule);
 * `bound` receives the URL actually bound (port 0 resolved). Returns 0 or a ts_err. */
int ts__bus_listen(nng_socket s, const char *url, const ts__bus_tls *tls, char *bound,
                   size_t boundsz);

/* Creates, configures and starts a dialer that does not wait for the peer and
 * redials forever (100 ms .. 1 s between attempts). Returns 0 or a ts_err. */
int ts__bus_dial(nng_socket s, const char *url, const ts__bus_tls *tls);

/* Browser origins allowed on a socket's ws:// and wss:// listeners (base/origin.h): a
 * copy of the allow-list, and the pipes refused so far. */
typedef struct {
  char **allow;
  size_t n;
  unsigned long refused; /* atomic */
} ts__bus_origins;

/* Copies `allow` (n entries, may be 0) into o. 0 or TS_E_NOMEM. */
int ts__bus_origins_init(ts__bus_origins *o, const char *const *allow, size_t n);
void ts__bus_origins_fini(ts__bus_origins *o);

/* Closes every new WebSocket pipe of `s` whose upgrade request carries an Origin the rule
 * of base/origin.h refuses, before the socket uses it (nng answers the upgrade itself, so
 * the browser sees the connection close at once and no message is ever sent on it).
 * Other transports have no headers and are not affected. `o` must outlive the socket. */
int ts__bus_origin_guard(nng_socket s, ts__bus_origins *o);

/* Runs close(arg) on a thread of its own and waits for it at most wait_ms (monotonic).
 * libnng 1.5.2 (Debian 12's) can hang for good in nng_close (nng issue 1543: its one
 * reaper thread waits on a task that never runs, and every close the process makes after
 * that waits too); a caller must not hang with it. Returns 0 when close finished within
 * the wait, 1 when the caller stopped waiting: close goes on, on that thread, detached,
 * and whatever it frees stays allocated until it returns. When no thread can be started
 * (no memory), close runs on the caller's thread, unbounded, and 0 is returned. */
int ts__bus_close_bounded(void (*close)(void *), void *arg, unsigned wait_ms);

#endif
