/*
 * gateway.h: a reverse proxy between any model client and a model provider, with a tap
 * on the side.
 *
 * The gateway listens for HTTP/1.1, forwards each request to the upstream chosen by
 * the longest matching path prefix, and passes the answer back: status, headers (minus
 * hop-by-hop ones) and body, byte for byte, each piece of the body written to the
 * client as soon as it was read from the upstream. A copy of every successful
 * text/event-stream body goes through a ts_tap (stream/tap.h) whose events are
 * published on the event bus (events/bus_pub.h) under the request's thread id, so UIs
 * and watchdogs see `tool_call_started` while the client is still reading the call.
 *
 * Its own HTTP/1.1 front (net/http_head.h, net/chunked.h) on libevent bufferevents for
 * the clients (on one event loop, or one per worker: ts_gw_config.workers), one upstream
 * connection per proxied request (plain, or TLS through
 * net/upstream.h with verification always on). Its parts: net/gw_route.h (routes, the
 * path-to-format map), net/progress_strip.h (the x-progress-argument rewrite),
 * net/gw_metrics.h (counters and /metrics).
 *
 * Connections (limits against hostile clients; docs/gateway.md)
 *   - Listens on 127.0.0.1 unless told otherwise. At most max_connections client
 *     connections, at most max_per_client from one address: the extra ones get a 503
 *     and are closed at once, so a flood never takes the fds the others need.
 *   - When accept() fails (out of file descriptors) the gateway stops accepting for a
 *     back-off (50 ms doubling to 1 s) instead of spinning, and logs at most one line a
 *     second (cfg.log, or standard error).
 *   - A request's whole head must arrive within head_timeout_ms of the connection's
 *     accept (or of the first byte of a later request on it): else 408 and close. A
 *     body that stalls for idle_timeout_ms gets 408 too. Kept-alive connections idle for
 *     TS_GW_KEEPALIVE_TIMEOUT_MS are closed.
 *
 * Requests
 *   - Read strictly (net/http_head.h): two different Content-Lengths, a signed or
 *     otherwise malformed one, Transfer-Encoding on HTTP/1.0 or with Content-Length,
 *     obsolete folding, whitespace before a colon, a bare CR: 400 and the connection is
 *     closed (nothing after a bad request is read as a request). Other transfer
 *     codings than chunked: 501. Methods other than GET, POST, PUT, DELETE, PATCH, HEAD,
 *     OPTIONS: 405. HTTP/1.1 needs exactly one Host.
 *   - Paths with a "." or ".." segment (also %2e-encoded), an empty segment ("//x"), a
 *     backslash or an encoded slash are refused with 400: they could reach a path
 *     outside the route's prefix once the upstream normalises them.
 *   - The body is read whole (Content-Length or chunked, decoded) up to max_body_bytes
 *     (413 past it), the head up to max_header_bytes (431 past it). Model requests are
 *     small JSON documents; it is the *response* that streams. 100-continue is
 *     answered; other expectations get 417.
 *   - Forwarded normalised: the gateway's own request line and Host (the upstream's),
 *     every field as received except the hop-by-hop ones (Connection and what it names,
 *     Keep-Alive, Proxy-*, TE, Trailer, Transfer-Encoding, Upgrade), Content-Length
 *     (one, of the body forwarded), Expect and Accept-Encoding (replaced by `identity`,
 *     so the tap reads plain bytes; the client receives the same bytes it would get
 *     uncompressed). A plain (http://) upstream connection is kept alive: after a whole
 *     reply (HTTP/1.1, no "Connection: close", a body with its own end and nothing after
 *     it) it goes to its worker's pool (at most TS_GW_POOL_MAX, closed after
 *     TS_GW_POOL_IDLE_MS idle or when the upstream closes it) and the next request to the
 *     same route takes it; never after a cut or malformed body or an early answer. A kept
 *     connection found closed before any byte of an answer gets the request once more on
 *     a fresh connection. A TLS upstream gets "Connection: close" (one connection per
 *     request).
 *   - The upstream URL's path is a prefix put before the client's path and query
 *     (upstream http://h:8080 + /v1/chat/completions?x=1 -> http://h:8080/v1/chat/...).
 *   - Tool definitions in the body may carry "x-progress-argument": "NAME" in a tool's
 *     JSON Schema (net/progress_strip.h): the top-level one names the tool's progress
 *     argument for this request; every member with that key anywhere inside a tool is
 *     removed before forwarding (all other bytes of the body are left exactly as they
 *     were). Progress arguments from the configuration (ts_gw_config.tools) win over the
 *     request's.
 *   - Thread id: the X-Toolstream-Thread request header, which must be one valid thread
 *     id (base/thread_id.h: 1..TS_THREAD_ID_MAX bytes, no space or control byte): an
 *     invalid, over-long or repeated one is refused with 400 and says why, never
 *     replaced. Without the header, a fresh "th_<16 hex>". It is returned in the
 *     X-Toolstream-Thread response header either way.
 *
 * Responses
 *   - The upstream's status line and headers go to the client when they arrive (1xx
 *     interim answers are dropped); the body follows as it is read, each piece written
 *     to the client in the handler that read it. A chunked body reaches an HTTP/1.1
 *     client with its chunk framing as sent, a Content-Length body with its length; a
 *     body delimited by the upstream's close is re-chunked (so a cut one can be told
 *     from a whole one). An HTTP/1.0 client gets the body decoded, ended by the close.
 *   - Backpressure: when more than TS_GW_CLIENT_HIGH_WATER bytes wait in the client's
 *     output, reading from the upstream stops (TCP flow control then slows the
 *     upstream) until the client's output has drained; memory per stream stays bounded.
 *   - A client that disconnects, also before the upstream has answered, closes the
 *     upstream connection at once and is counted in client_aborts.
 *   - Tap format by path (ts_provider_for_path, stream/provider.h). The tap runs only
 *     when events are published (and not with no_tap), on 2xx answers whose Content-Type is a model stream
 *     (text/event-stream, application/vnd.amazon.eventstream, application/x-ndjson) or,
 *     on a path that names a provider, text/html, and application/json where that
 *     provider streams JSON (its row's json_stream: Gemini); it is handed the
 *     Content-Type (stream/tap.h, "Content type"). The tap is made at the reply's first
 *     body byte, not with its head: a stream still waiting for its first byte holds
 *     none (the taps_open gauge counts them).
 *   - Turns: a thread named by X-Toolstream-Thread counts the replies tapped on it, 1, 2,
 *     3 ... across its requests (the tap's `turn`), so synthesized call ids
 *     ("ts_<turn>_<index>") stay unique within the thread; a made-up thread is turn 1.
 *   - Errors: an upstream error status is passed through untouched and published as a
 *     stream_error (gw_status); an unreachable or broken upstream, or a malformed
 *     response head, gives 502 (504 for a timeout before the headers) and a
 *     stream_error; after the headers were sent, a broken stream (a close or a
 *     malformed chunk mid-body, an idle timeout) is passed on as a broken stream: what
 *     arrived was forwarded, then the client's connection is closed once that has
 *     drained, without the terminating chunk (or short of the Content-Length), and a
 *     stream_error is published.
 *   - Timeouts: connect (TCP, TLS included), headers (from the request's start to the
 *     upstream's status line) and idle (no body byte from the upstream for that long).
 *
 * Built-in endpoints (GET): /healthz answers 200 "ok\n"; /metrics the Prometheus text
 * format (see docs/gateway.md for the metric names).
 *
 * Threads: ts_gw_* calls must come from the caller's event_base thread. With workers > 1
 * the gateway runs threads of its own (one loop each, started by ts_gw_new, stopped and
 * joined by ts_gw_free); what they share takes one lock, never per forwarded chunk: the
 * named threads (seq strictly increasing and turns counted across requests on any
 * worker), every event published (cfg.pub is then used by one thread at a time), and the
 * connection caps, which count every worker's connections. cfg.log may be called from
 * any worker's thread. The counters behind /metrics are each worker's, summed when read
 * (net/gw_metrics.h).
 */
#ifndef TS_GATEWAY_H
#define TS_GATEWAY_H

#include <stddef.h>
#include <stdint.h>

#include "events/bus_pub.h"
#include "events/event.h"
#include "net/gw_metrics.h"
#include "stream/tool_defs.h"

struct event_base;

#define TS_GW_CONNECT_TIMEOUT_MS 10000
#define TS_GW_HEADERS_TIMEOUT_MS 120000 /* providers think before the first byte */
#define TS_GW_IDLE_TIMEOUT_MS 300000    /* a reasoning model can be silent for minutes */
#define TS_GW_MAX_HEADER_BYTES (64 * 1024)
#define TS_GW_MAX_BODY_BYTES (32u << 20) /* long conversations with images inline */
/* Bytes waiting for a slow client before the upstream is paused: a few chunks. */
#define TS_GW_CLIENT_HIGH_WATER (64 * 1024)
#define TS_GW_MAX_UPSTREAMS 16
/* The whole request head (request line and every header) must arrive within this, from
 * the connection's accept or from the first byte of a later request on it: a client
 * sending its head a byte at a time (slowloris) is answered 408 and closed. */
#define TS_GW_HEAD_TIMEOUT_MS 10000
/* An idle kept-alive connection is closed after this. */
#define TS_GW_KEEPALIVE_TIMEOUT_MS 60000
/* Concurrent client connections when not configured: half of what the fd limit leaves
 * after TS_GW_FD_RESERVE (each proxied request holds a client and an upstream socket),
 * at most TS_GW_MAX_CONNECTIONS_CAP. Past it, new connections get 503 and are closed. */
#define TS_GW_FD_RESERVE 64
#define TS_GW_MAX_CONNECTIONS_CAP 65536
/* Bytes a client may send ahead (a pipelined request) while its request is in flight;
 * past it the gateway stops reading from that client until the reply is done. */
#define TS_GW_PIPELINE_BYTES (64 * 1024)
#define TS_GW_HEADER_THREAD "X-Toolstream-Thread"
/* Idle kept-alive connections to plain (http://) upstreams, per worker, and how long one
 * may stay idle: under the idle timeouts providers and proxies close theirs after (60 s
 * and more), so a kept connection is rarely closed under a request. */
#define TS_GW_POOL_MAX 64
#define TS_GW_POOL_IDLE_MS 20000
/* Event loops (threads) at most; `toolstream gateway` defaults to one per online CPU, up
 * to this (cli/gateway.c). */
#define TS_GW_MAX_WORKERS 64
/* With several workers, the client connections the first loop holds before the others
 * get any (ts_gw_config.spread_at): at 100 streams one loop forwarded a chunk for 0.57x
 * the CPU of two evenly spread ones, at 1,000 two loops halved the added p99
 * (docs/gateway.md, "Workers"). */
#define TS_GW_SPREAD_AT 256
/* ts_gw_config.spread_at for no filling: every connection to the loop holding fewest. */
#define TS_GW_SPREAD_EVEN ((size_t)-1)
#define TS_GW_STR_(x) #x
#define TS_GW_STR(x) TS_GW_STR_(x)

typedef struct {
  const char *prefix; /* "" or NULL: every path; else a path prefix such as "/v1/messages" */
  const char *url;    /* http://host[:port][/base] or https://... */
} ts_gw_upstream;

typedef struct {
  const char *listen_host; /* NULL: 127.0.0.1 */
  int listen_port;         /* 0: the kernel chooses (see ts_gw_port) */
  const ts_gw_upstream *upstreams;
  size_t n_upstreams;      /* 1 .. TS_GW_MAX_UPSTREAMS */
  const char *ca_file;     /* PEM file of trusted CAs instead of the system store */
  const ts_tool_defs *tools; /* may be NULL; borrowed for the gateway's lifetime */
  ts_pub *pub;             /* may be NULL (no events published); borrowed */
  int connect_timeout_ms;  /* 0: defaults above */
  int headers_timeout_ms;
  int idle_timeout_ms;
  size_t max_header_bytes;
  size_t max_body_bytes;
  int head_timeout_ms;     /* 0: TS_GW_HEAD_TIMEOUT_MS */
  size_t max_connections;  /* 0: from the fd limit (above) */
  size_t max_per_client;   /* connections from one client address; 0: half of the above */
  /* Where the gateway's own complaints go (accept failures, at most one line a second);
   * NULL: standard error. */
  void (*log)(void *user, const char *line);
  void *log_user;
  /* 1: forward only, no tap on any reply and no event published (--no-tap; with no pub
   * and no serve there is no tap either). */
  int no_tap;
  int deltas;              /* publish tool_call_delta too */
  int text;                /* publish text_delta too */
  /* Browser origins that may call the gateway besides loopback pages (base/origin.h);
   * borrowed. A request with an Origin header (a browser's) is refused with 403 unless
   * that origin is allowed and its Host passes the DNS rebinding rule (an IP address,
   * localhost, or an allowed origin's host); requests without one (the SDKs, curl) are
   * not affected. */
  const char *const *origins;
  size_t norigins;
  /* The HTTP event endpoint on the same loop (net/serve.h; no store): every event goes to
   * its live streams as well. May be NULL; borrowed. */
  struct ts_serve *serve;
  /* Every event the gateway publishes, in-process too (a program embedding the gateway
   * that wants its events without a bus): called after the bus and the endpoint got the
   * event, on the worker's thread, under the gateway's publishing lock, so it must return
   * quickly and not call into the gateway. Like pub and serve, it turns the tap on. May
   * be NULL. */
  void (*emitted)(void *user, const ts_event *ev, const char *json, size_t len);
  void *emitted_user;
  /* Event loops: 0 or 1, one, on the caller's base (the loop and thread ts_gw_new is called
   * on); N > 1: that one and N - 1 more, each on a thread and an event_base of its own,
   * every one with its own listener on the same port (SO_REUSEPORT) and its own
   * connections, upstreams and taps. At most TS_GW_MAX_WORKERS; only 1 with `serve` (the
   * endpoint lives on the caller's loop). Whichever listener the kernel picks, the first
   * loop takes every client connection while it holds fewer than `spread_at`; after that
   * each new one goes to the loop holding the fewest (a tie: the loop whose listener the
   * kernel picked), handed over within the process, and stays there until it closes. */
  int workers;
  /* As above (workers > 1); 0: TS_GW_SPREAD_AT; TS_GW_SPREAD_EVEN: no filling. */
  size_t spread_at;
  /* 0: one access-log line per request on standard error ("client \"METHOD /path\"
   * status thread=ID N ms"); 1: none (--quiet). */
  int quiet;
} ts_gw_config;

typedef struct ts_gw ts_gw;

/* Binds the listener on `base` (and, with cfg.workers > 1, one more per worker on the same
 * port, each on an event_base of its own, and starts their threads) and validates the
 * upstream URLs. On success stores the gateway in *out and returns 0; otherwise TS_E_INVAL
 * (bad URL or config, workers over TS_GW_MAX_WORKERS or over 1 with serve: `why` says
 * which), TS_E_GW_TLS (CA file unreadable), TS_E_IO (cannot listen) or TS_E_NOMEM; then no
 * thread runs and *out is untouched. */
int ts_gw_new(struct event_base *base, const ts_gw_config *cfg, ts_gw **out, char *why,
              size_t why_cap);

/* The port actually bound. */
int ts_gw_port(const ts_gw *gw);

/* The counters behind /metrics (net/gw_metrics.h). */
void ts_gw_get_stats(const ts_gw *gw, ts_gw_stats *st);

/* The same counters for worker i alone (0 .. workers - 1; 0 is the caller's loop).
 * Returns 0, or TS_E_INVAL (no such worker: *st untouched). */
int ts_gw_get_worker_stats(const ts_gw *gw, size_t i, ts_gw_stats *st);

/* Stops and joins the workers' threads, then closes every listener and connection
 * (upstream requests are cancelled) and frees everything. NULL is a no-op. */
void ts_gw_free(ts_gw *gw);

#endif /* TS_GATEWAY_H */
