/*
 * serve.h: the HTTP event endpoint UIs read (`toolstream serve`, and built into `run
 * --serve` and, later, the gateway).
 *
 *   GET /                       the live page (web/, compiled into the binary)
 *   GET /threads                {"threads":[{id, parent?, state, created_ms,
 *                                last_activity_ms, turns, calls, children, depth}...]}:
 *                               every thread, each root followed by its subtree
 *   GET /threads/ID             {"thread":ID,"last_seq":N}
 *   GET /threads/ID/events      the thread's events, then live:
 *       text/event-stream (default): one SSE event per event, `id:` = its seq, a
 *         `: keep-alive` comment every heartbeat; resume with the Last-Event-ID header
 *         or ?after=SEQ (a browser's EventSource reconnects and resumes with no gap);
 *       application/x-ndjson (Accept, or ?format=ndjson): one JSON line per event;
 *       ?format=agui | ai-sdk: the same events as AG-UI events or AI SDK UI message
 *         chunks (events/ui_stream.h), as SSE, `id:` = the seq they came from;
 *       ?follow=0: end after what is stored (AG-UI: RUN_FINISHED; AI SDK: finish and
 *         `[DONE]`) instead of waiting for more.
 *       HEAD: the head a GET would get, then the response ends (no stream is opened).
 *
 * Where events come from: the store (everything `run` and the gateway keep), read from a
 * snapshot for the backlog and then every `poll_ms` for what another process added; and
 * ts_serve_publish for events made in this process, which go out at once.
 *
 * Security: the listener binds what it is given (the CLI defaults to 127.0.0.1). A request
 * with an `Origin` header is refused (403) unless the origin is this server itself (the
 * Host it was asked as), a loopback origin, or on the allow-list; with a token set, every
 * request but the page itself needs `Authorization: Bearer TOKEN` or `?token=TOKEN` (the
 * page passes the one it was opened with; EventSource cannot set headers); compared in
 * constant time. Thread ids in paths follow base/thread_id.h; anything else is 404/400.
 *
 * Limits: SERVE_MAX_STREAMS concurrent event streams (503 beyond); a slow reader is sent
 * more only when what it has was written out (the backlog goes in batches), so a stalled
 * client holds at most one batch plus the live events of its thread that arrived meanwhile
 * (capped: past TS_SERVE_MAX_BACKLOG bytes pending the stream is closed; it can resume).
 * A request's head must be complete within head_timeout_ms of the accept (or of the
 * previous response, on a kept-alive connection), and a plain reply must keep moving
 * (the same time without progress): otherwise the connection is closed. An event stream
 * has no timeout while it lasts (its client sends nothing).
 */
#ifndef TS_SERVE_H
#define TS_SERVE_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

struct event_base;

/* A request head not complete this long after the accept (or, kept alive, after the
 * previous response) closes the connection: net/head_deadline.h. */
#define TS_SERVE_HEAD_TIMEOUT_MS 10000

/* Bytes a stream may have queued for a client that does not read before it is closed. */
#define TS_SERVE_MAX_BACKLOG (8u << 20)

typedef struct {
  const char *host; /* bind address: "127.0.0.1" (NULL), "::1", "0.0.0.0", ... */
  int port;         /* 0: any free port (ts_serve_port tells) */
  ts_store *store;  /* where events are read from; not owned; NULL: live events only */
  const char *const *origins; /* extra allowed origins ("https://ui.example"), may be NULL */
  size_t norigins;
  const char *token;    /* required bearer token, or NULL */
  int heartbeat_ms;     /* 0: 15000 */
  int poll_ms;          /* how often the store is read for other processes' events; 0: 200 */
  int head_timeout_ms;  /* a request's whole head must arrive within it; 0: the default */
} ts_serve_config;

typedef struct ts_serve ts_serve;

/* Listens on `base`. TS_E_OK and *out; TS_E_INVAL for a bad config; TS_E_IO when the
 * address cannot be bound (why in errmsg); TS_E_NOMEM. */
int ts_serve_new(struct event_base *base, const ts_serve_config *cfg, ts_serve **out,
                 char *errmsg, size_t errcap);
void ts_serve_free(ts_serve *s); /* closes every stream; NULL is a no-op */
int ts_serve_port(const ts_serve *s);

/* An event made in this process (already numbered; stored or not): streams of its thread
 * get it at once. Call it on the base's thread. */
void ts_serve_publish(ts_serve *s, const char *thread, size_t thread_len, uint64_t seq,
                      const char *json, size_t len);

/* Ends every open stream cleanly, as a server about to stop should: what the store holds
 * beyond each stream's last event goes out first, then the response's end (AG-UI:
 * RUN_FINISHED; AI SDK: finish and [DONE]), so a follower sees the stream end rather
 * than a connection cut. The bytes leave while the base's loop runs on; new requests
 * are still answered. */
void ts_serve_end_streams(ts_serve *s);

/* Streams open now (for tests and /metrics). */
size_t ts_serve_streams(const ts_serve *s);

#endif /* TS_SERVE_H */
