/*
 * accept_guard.h: what a listener does when accept() fails, for every listener of ts_net
 * (the gateway's and the HTTP event endpoint's).
 *
 * When the process is out of file descriptors (EMFILE, ENFILE) or the kernel out of
 * buffers, accept() fails but the listening socket stays readable, so a loop that
 * simply tries again spins a core and, with libevent's own warning, writes a log line
 * per attempt (millions a second). The guard, set as the listener's error callback,
 * stops accepting instead and starts again after a pause: 50 ms, doubling while accepts
 * keep failing, up to 1 s; the pause starts over at 50 ms after an accept succeeds
 * (ts_accept_guard_ok) or after 2 s without a failure. Each failure is passed to
 * `report` with a line saying why and for how long accepting pauses, at most one line a
 * second (the failures in between: line NULL, counted in the next line).
 *
 * Ownership: the guard borrows the listener, which must outlive it; it uses the
 * listener's event_base, and works whatever the listener's user data (evhttp's own
 * listeners included: guards are found by listener). Guards on different loops and
 * threads may come and go at once.
 */
#ifndef TS_ACCEPT_GUARD_H
#define TS_ACCEPT_GUARD_H

#include <event2/listener.h>

/* One failed accept: `line` ("cannot accept a connection: Too many open files; pausing
 * accepts for 50 ms"), or NULL for one not reported (the once-a-second rule). */
typedef void (*ts_accept_guard_report)(void *user, const char *line);

typedef struct ts_accept_guard ts_accept_guard;

/* Guards `lev` (sets its error callback). TS_E_OK and *out, or TS_E_NOMEM. `report`
 * may be NULL (nothing said, nothing counted). */
int ts_accept_guard_new(struct evconnlistener *lev, ts_accept_guard_report report, void *user,
                        ts_accept_guard **out);

/* An accept succeeded: the next failure pauses for the shortest time again (NULL: a
 * no-op). */
void ts_accept_guard_ok(ts_accept_guard *g);

/* Stops guarding (the listener's error callback is cleared); NULL is a no-op. */
void ts_accept_guard_free(ts_accept_guard *g);

#endif /* TS_ACCEPT_GUARD_H */
