/*
 * bus_sub.h: the event bus subscriber.
 *
 * A ts_sub dials the publisher's live URL (nng sub0) and, optionally, its replay URL
 * (nng req0), subscribes to one thread or to all, and hands its caller every event
 * exactly once and in seq order per thread, through a pull API:
 *
 *     ts_sub *s;
 *     if (ts_sub_open(url, replay_url, thread, NULL, &s)) ...;
 *     while (!interrupted) {
 *       ts_sub_item it;
 *       int r = ts_sub_next(s, &it, 200);   (1 = item, 0 = nothing within 200 ms)
 *       if (r < 0) break;
 *       if (r == 1 && it.kind == TS_SUB_EVENT) print it.json;
 *       if (r == 1 && it.kind == TS_SUB_GONE)  report the lost range;
 *     }
 *     ts_sub_close(s);
 *
 * Everything happens inside ts_sub_next, on the caller's thread (nng's own threads do
 * the I/O): a live message whose seq is the next one is delivered; one at or below the
 * last delivered seq is a duplicate and dropped; one beyond it opens a gap, and the
 * missing events are fetched from replay (in answers of up to ~1024 events, the next
 * one asked for as soon as an answer leaves the gap open, so that replay builds it while
 * the caller takes this one's items) and delivered first; the live messages that arrive meanwhile are held (up to 4096 per
 * thread; later ones are fetched from replay too) and delivered after them. Messages
 * lost at the end of a burst show no gap by themselves, so the subscriber also asks
 * replay for its newest seqs when the live socket has been quiet for 200 ms, and at
 * least once a second, and fetches a seq replay reported at an earlier sync (200 ms
 * before at least) that has still not arrived: newer ones are taken to be in flight.
 *
 * Gaps are never silent: when replay says "gone" (the events left the history), does
 * not know the thread, or is not configured or stays silent for replay_give_up_ms, the
 * caller gets a TS_SUB_GONE item naming the missing seq range, and delivery goes on
 * after it. A late answer is not a loss: one request at a time is in flight, and an
 * unanswered one is awaited across calls, not sent again (a slow replay service that
 * got every late request again would only fall further behind).
 *
 * Restarts: the dialers redial forever (100 ms .. 1 s), so a publisher that restarts
 * on the same URLs is picked up again. Seq numbers are the publisher's caller's, per
 * thread; events whose seq is not above the last delivered one are dropped as
 * duplicates, so a restarted producer must continue its thread's numbering.
 *
 * Not thread-safe: one thread calls ts_sub_next (and ts_sub_close).
 */
#ifndef TS_BUS_SUB_H
#define TS_BUS_SUB_H

#include <stddef.h>
#include <stdint.h>

typedef struct ts_sub ts_sub;

typedef enum {
  TS_SUB_FROM_START = 0, /* deliver everything the history still holds, then live */
  TS_SUB_LIVE = 1,       /* start with the first event received live per thread */
} ts_sub_from;

typedef struct {
  ts_sub_from from;
  /* sub0's receive queue in messages (NNG_OPT_RECVBUF; 0 = 1024, nng caps at 8192). */
  int recv_buffer;
  /* After this many ms without an answer a replay request counts as late (see
   * replay_retries) and may be abandoned for a different request (0 = 2000). A late
   * request is still awaited, not sent again; req0 resends it if its connection drops. */
  int replay_timeout_ms;
  /* How long a known gap keeps being asked for when replay does not answer, in ms
   * (0 = 15000). A late answer is not a loss: only a "gone" answer, or a replay
   * service silent for this long, turns the gap into a TS_SUB_GONE item. */
  int replay_give_up_ms;
  /* TLS dialers (tls+tcp://, wss://): the CA file the publisher's certificate must
   * chain to, and the name to check (NULL = the URL's host). insecure = 1 skips
   * verification (tests, never by default). Without ca_file, verification fails. */
  const char *tls_ca_file;
  const char *tls_server_name;
  int tls_insecure;
} ts_sub_opts;

typedef enum {
  TS_SUB_EVENT = 1, /* an event: thread, seq, json */
  TS_SUB_GONE = 2,  /* events seq .. seq_end of thread are lost for good */
} ts_sub_kind;

typedef struct {
  ts_sub_kind kind;
  const char *thread; /* NUL-terminated; valid until the next ts_sub_next or close */
  size_t thread_len;
  uint64_t seq;     /* EVENT: its seq; GONE: the first missing seq */
  uint64_t seq_end; /* GONE: the last missing seq (inclusive); EVENT: = seq */
  const char *json; /* EVENT: the event JSON (no newline, not NUL-terminated) */
  size_t json_len;
} ts_sub_item;

/* Opens a subscriber of `url` (live) and `replay_url` (NULL = no replay: every gap
 * becomes a TS_SUB_GONE item). `thread` NULL subscribes to every thread, else to
 * that thread id only. `opts` may be NULL (defaults: from start). The dial does not
 * wait for the publisher. Returns 0 and stores *out, or TS_E_INVAL (bad URL, thread
 * id or options; for a URL, ts_bus_last_error says what is wrong with it, and is empty
 * otherwise), TS_E_NOMEM, TS_E_IO (see ts_bus_last_error). */
int ts_sub_open(const char *url, const char *replay_url, const char *thread,
                const ts_sub_opts *opts, ts_sub **out);

/* Waits up to timeout_ms (0 = do not wait; only the first sync with replay may take up
 * to 50 ms) for the next item. A replay answer that has not come by then is awaited by
 * the next call: the request stays in flight. Returns 1 with *item filled,
 * 0 when the time ran out, or a negative ts_err (TS_E_IO: the socket failed). The
 * item's pointers stay valid until the next call. */
int ts_sub_next(ts_sub *sub, ts_sub_item *item, int timeout_ms);

typedef struct {
  uint64_t live;       /* events delivered from live messages */
  uint64_t replayed;   /* events delivered from replay answers */
  uint64_t duplicates; /* live messages dropped as already delivered */
  uint64_t gaps;       /* gaps that sent us to replay */
  uint64_t gone;       /* TS_SUB_GONE items delivered */
  uint64_t malformed;  /* live messages or answers that could not be parsed */
  uint64_t requests;   /* replay requests sent */
  uint64_t replay_retries; /* replay_timeout_ms periods a request waited unanswered */
} ts_sub_stats;

void ts_sub_get_stats(const ts_sub *sub, ts_sub_stats *st);

/* Nonzero while the live socket is connected to a publisher. The dialer connects in the
 * background and redials when the publisher goes away, so this is how a caller tells
 * "nothing is there" from "nothing was published". */
int ts_sub_connected(const ts_sub *sub);

/* Closes the sockets and frees everything. NULL is a no-op. Returns within
 * TS_SUB_CLOSE_WAIT_MS: the close runs on a thread of its own, because libnng 1.5.2
 * (Debian 12's) can hang for good in nng_close of a sub0 socket while its publisher is up
 * (nng issue 1543; every close in the process after it then hangs too, a publisher's
 * included). A close that has not returned by then is left to that thread, which frees
 * the subscriber if it ever returns; until then its sockets and memory stay allocated.
 * Only when no thread can be started (no memory) does it close on the caller's thread,
 * unbounded. Either way `sub` must not be used again. A process that also publishes
 * should close its publisher first (its pipes then close from its side). */
#define TS_SUB_CLOSE_WAIT_MS 2000
void ts_sub_close(ts_sub *sub);

/* How many ts_sub_close calls in this process gave up waiting for libnng's close. */
uint64_t ts_sub_closes_abandoned(void);

#endif /* TS_BUS_SUB_H */
