/*
 * head_deadline.h: a deadline for every request head on an evhttp server's connections.
 *
 * evhttp (libevent 2.1) waits for a request head for as long as its client likes: a
 * client that sends half a head, or one byte every few seconds, holds a connection and
 * its descriptor forever (slowloris), and enough of them leave none for anyone else. An
 * idle timeout would not do: every byte resets it. Here each head must be complete
 * within `ms` of the accept, or, on a kept-alive connection, of the end of the previous
 * response; otherwise the connection is closed, as evhttp closes one on a read timeout
 * (no reply: the client may be idle, and a reply would race its next request).
 *
 * Timeouts of `ms` too: while a head is awaited, for silence (evhttp's read timeout);
 * while a reply is written, for a client that stops taking it (the write timeout; the
 * read one is lifted, as a client sends nothing while it reads). A response that
 * streams for as long as the client stays (SSE) lifts both with
 * ts_head_deadline_streaming; they come back when it completes.
 *
 * How: the bufferevent of each connection is ours (evhttp_set_bevcb, which this takes
 * over), watched by a timer from the accept. evhttp makes its connection object only
 * after that, so until the first head is in the watch holds a reference on the
 * bufferevent instead, and its late timer finds it alive or already let go (so the
 * descriptor of a client that left mid-head stays open, shut down, until then). A late
 * head gets the event a read timeout would have raised. Later heads are watched through
 * the connection's close callback, which a caller may use only for a request whose
 * head has arrived (ts_head_deadline_arrived clears it).
 *
 * Not thread-safe: everything runs on the server's event base.
 */
#ifndef TS_NET_HEAD_DEADLINE_H
#define TS_NET_HEAD_DEADLINE_H

struct evhttp;
struct evhttp_request;
struct event_base;

typedef struct ts_head_deadline ts_head_deadline;

/* Takes over `http`'s bufferevent callback and sets its timeouts to `ms` (> 0).
 * TS_E_OK and *out; TS_E_INVAL; TS_E_NOMEM; TS_E_IO when libsodium cannot start. */
int ts_head_deadline_new(struct evhttp *http, struct event_base *base, int ms,
                         ts_head_deadline **out);

/* Call first in the request callback: this head arrived in time. The next head on the
 * connection is watched once this request's response completes. */
void ts_head_deadline_arrived(ts_head_deadline *d, struct evhttp_request *req);

/* The response to `req` streams until the client leaves: no read or write timeout on
 * its connection until it completes. */
void ts_head_deadline_streaming(ts_head_deadline *d, struct evhttp_request *req);

/* After evhttp_free (whose connections' close callbacks may still come here). NULL is
 * a no-op. */
void ts_head_deadline_free(ts_head_deadline *d);

#endif
