/*
 * bus_pub.h: the event bus publisher and its replay service.
 *
 * A ts_pub owns an nng pub0 socket listening on one URL and, optionally, an nng rep0
 * socket (the replay service) listening on a second URL. Every ts_pub_send publishes
 * one event as a live message "<thread> <json>" (docs/bus.md) and appends it to a
 * bounded in-memory history per thread, from which the replay service answers
 * "the events of thread T after seq S" (or "gone" when S is older than the history).
 *
 * URLs: anything nng listens on: inproc://, ipc://, tcp://, ws://, wss://, tls+tcp://.
 * Listeners bind to loopback unless the URL names an address: an empty host
 * ("tcp://:5555", "ws://:8080/bus") becomes 127.0.0.1 ([::1] for tcp6://); an explicit
 * host, including 0.0.0.0, is used as given; "*" means all interfaces.
 * WebSocket clients must offer the subprotocol pub.sp.nanomsg.org (replay:
 * rep.sp.nanomsg.org) and, for a listener on 127.0.0.1, send Host 127.0.0.1:PORT
 * (nng answers 404 to Host localhost:PORT there).
 *
 * Threads: ts_pub_send may be called from any thread, but the events of one thread id
 * must be sent in seq order (the caller's seq; tap numbers 1, 2, 3 ...). The replay
 * service runs on a thread of its own; it takes the history lock only while copying
 * one answer.
 *
 * Never blocking: the live send is non-blocking; pub0 drops messages for a subscriber
 * whose queue is full (the subscriber notices the gap and asks replay). The history
 * append is a copy under a mutex held for microseconds.
 */
#ifndef TS_BUS_PUB_H
#define TS_BUS_PUB_H

#include <stddef.h>
#include <stdint.h>

typedef struct ts_pub ts_pub;

typedef struct {
  /* History limits (0 = default). The oldest events of a thread leave its ring first;
   * over the thread or byte cap, the least recently published thread is evicted whole
   * (a single thread over the byte cap loses its oldest events instead). */
  size_t history_events;  /* per thread; default 65536 */
  size_t history_threads; /* default 1024 */
  size_t history_bytes;   /* JSON bytes (plus 32 per event) over all threads; default 256 MiB */
  /* The most events in one replay answer (default 1024); answers also stop at about
   * 1 MiB. The subscriber asks again for the rest. */
  size_t replay_max_events;
  /* pub0's queue per subscriber, in messages (NNG_OPT_SENDBUF; 0 = 1024, nng caps it
   * at 8192). A deeper queue means fewer drops, hence fewer replay requests. */
  int send_buffer;
  /* TLS (tls+tcp:// and wss:// listeners; ignored for other schemes): a PEM file with
   * the certificate (chain), and the PEM private key: either in its own file or, when
   * tls_key_file is NULL, in tls_cert_file after the certificate. tls_key_password
   * decrypts an encrypted key (NULL = none). */
  const char *tls_cert_file;
  const char *tls_key_file;
  const char *tls_key_password;
  /* An archive of older events (the durable store), consulted by the replay service for
   * a `get` that reaches before the in-memory history or names a thread the history no
   * longer (or never) held, e.g. after the publisher restarted. It is called from the
   * replay thread; it hands the thread's events with seq > after_seq, in order, at most
   * `max`, to `put` (which returns nonzero to stop), stores the thread's newest archived
   * seq in *newest (0: the archive does not know the thread), and returns how many it
   * handed over or a negative ts_err. NULL: such requests are answered "gone" /
   * "unknown". */
  int (*archive)(void *user, const char *thread, size_t thread_len, uint64_t after_seq,
                 size_t max, int (*put)(void *ctx, uint64_t seq, const char *json, size_t len),
                 void *ctx, uint64_t *newest);
  void *archive_user;
  /* Browser origins allowed on ws:// and wss:// listeners besides the listener itself and
   * loopback pages (base/origin.h); a WebSocket whose Origin is refused is closed before
   * anything is sent on it. Copied. */
  const char *const *allowed_origins;
  size_t allowed_origins_n;
} ts_pub_opts;

/* Opens the publisher listening on `url`, and the replay service on `replay_url`
 * unless it is NULL. `opts` may be NULL (all defaults); it is copied (the file names
 * are only read during this call). On success stores the publisher in *out and
 * returns 0; on failure returns TS_E_INVAL (bad URL or options; for a URL,
 * ts_bus_last_error says what is wrong with it, and is empty otherwise), TS_E_NOMEM or
 * TS_E_IO (nng refused: see ts_bus_last_error), and *out is untouched. */
int ts_pub_open(const char *url, const char *replay_url, const ts_pub_opts *opts,
                ts_pub **out);

/* Publishes one event: `thread` (valid per ts_thread_id_valid), its `seq` (1 or more,
 * greater than the thread's previous one) and `json`, the event's JSON text exactly as tap
 * prints it (one trailing newline, if present, is not sent). The bytes are copied.
 * Returns 0; TS_E_INVAL for a bad thread id or a seq not above the previous one;
 * TS_E_NOMEM when the history copy or the message cannot be allocated (nothing is
 * published then). A subscriber queue that is full is not an error: replay covers it. */
int ts_pub_send(ts_pub *pub, const char *thread, size_t thread_len, uint64_t seq,
                const char *json, size_t json_len);

/* The address a listener actually bound (after the loopback rewrite and port 0
 * resolution for tcp-based URLs), e.g. "tcp://127.0.0.1:40123"; `which` 0 = live,
 * 1 = replay. NULL when there is no such listener. Valid until ts_pub_close. */
const char *ts_pub_url(const ts_pub *pub, int which);

typedef struct {
  uint64_t sent;      /* events published */
  uint64_t threads;   /* threads in the history now */
  uint64_t events;    /* events in the history now */
  uint64_t bytes;     /* history bytes now */
  uint64_t evicted;   /* threads evicted whole so far */
  uint64_t requests;  /* replay requests served */
  uint64_t origins_refused; /* WebSocket connections closed for their Origin */
} ts_pub_stats;

void ts_pub_get_stats(ts_pub *pub, ts_pub_stats *st);

/* Closes both listeners (subscribers see the publisher go away and redial), stops
 * the replay thread and frees everything. NULL is a no-op. Returns within
 * TS_PUB_CLOSE_WAIT_MS: the close runs on a thread of its own, because libnng 1.5.2
 * (Debian 12's) can hang for good in nng_close once any close in the process has met its
 * reaper bug (nng issue 1543; ts_sub_close, events/bus_sub.h). A close that has not
 * returned by then is left to that thread, which frees the publisher if it ever
 * returns; until then its listeners stay bound and its memory allocated. Only when no
 * thread can be started (no memory) does it close on the caller's thread, unbounded.
 * Either way `pub` must not be used again, and the archive (ts_pub_opts) is not called
 * again once this returns (it waits for a call in progress): the caller may free it. */
#define TS_PUB_CLOSE_WAIT_MS 2000
void ts_pub_close(ts_pub *pub);

/* How many ts_pub_close calls in this process gave up waiting for libnng's close. */
uint64_t ts_pub_closes_abandoned(void);

/* The nng message of the last nng failure in the calling thread ("Address in use"),
 * for the command line's error line; "" when none. Static storage. */
const char *ts_bus_last_error(void);

#endif /* TS_BUS_PUB_H */
