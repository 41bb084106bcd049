/*
 * bus_sub.c: the subscriber (see bus_sub.h, docs/bus.md).
 *
 * State per thread: the last seq delivered, whether it waits in the catch-up queue,
 * the live messages held beyond a gap (up to HOLD_MAX, in seq order), the seq the
 * catch-up must reach, and replay's newest seq at the last sync.
 *
 * ts_sub_next is a loop over four sources, in this order:
 *   1. the pending items (a replay answer cut into items, GONE notices, held events);
 *   2. the catch-up queue: first whatever the live socket has now (so that its queue
 *      does not overflow while we talk to replay), then one replay request for the
 *      thread at the head, whose answer becomes pending items;
 *   3. the periodic sync ("threads", or "get" for the one thread), which queues the
 *      threads that lost events at the end of a burst. Only the first sync is waited
 *      for; a later one is sent and its answer picked up on a later turn of the loop,
 *      so that the live socket is not left unread for a replay round trip once a
 *      second (under load that round trip is milliseconds, and every event that
 *      arrived meanwhile carried it in its latency);
 *   4. the live socket.
 * Pending items point into the replay answer (`batch`) or own their live message;
 * the answer is freed only when every item cut from it was handed out and the next
 * call came, which is what makes "valid until the next call" hold.
 *
 * Events in flight are not gaps. Under a steady stream replay's newest seq is always
 * ahead of what we delivered (the rest is in our queue), so a sync fetches only a seq
 * that replay already reported at an earlier sync (SYNC_GRACE_MS ago at least) and that
 * has still not arrived; and a catch-up fetches only up to the first held live message
 * (or that seq), never the events still coming live. Otherwise the catch-up would feed
 * itself: while we wait for replay the live queue fills, pub0 drops, and the next sync
 * finds more to fetch.
 *
 * Every delivery raises the thread's `last` when the item is queued, not when it is
 * handed out, so that a live duplicate arriving in between is recognised.
 *
 * Late answers are not losses either. One replay request is in flight at a time; the
 * caller's deadline ends the wait for its answer, not the request, and the next call
 * picks the answer up. Asking again instead would queue the same question behind the
 * first one at a replay service that is already slow: its single thread then answers
 * requests whose askers gave up on them, and never catches up (seen with a few loaded
 * subscribers: every request timed out until the gaps were declared GONE). A late
 * answer may also predate the live messages we hold (its newest is below them): it then
 * says nothing about the seqs in between, and we ask again.
 */
#include "events/bus_sub.h"

#include <stdatomic.h>

#include <nng/nng.h>
#include <nng/protocol/pubsub0/sub.h>
#include <nng/protocol/reqrep0/req.h>
#include <nng/supplemental/util/platform.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events/bus_net.h"
#include "events/bus_wire.h"
#include "base/error.h"

/* Threads tracked at once; past it the least recently active one is forgotten (it
 * would restart as a new thread). Bounds memory for a long-running "all threads" sub. */
#define SUB_THREADS_MAX 65536
#define SYNC_IDLE_MS 200   /* sync after this much quiet on the live socket */
#define SYNC_BUSY_MS 1000  /* ... and at least this often */
/* While a sync's answer is due, the live socket is read in slices this long (ms), so
 * that a quiet socket does not hold the answer back for SYNC_IDLE_MS. */
#define SYNC_POLL_MS 2
/* A seq that replay reported as its newest is taken for lost (and fetched) only when
 * it is still undelivered at a sync at least this long after the report: until then it
 * may simply be in flight (in nng's queues, or not yet read by us). */
#define SYNC_GRACE_MS 200
/* Live messages held per thread while it catches up (they wait for the replayed events
 * before them). Past it newer live messages are dropped and fetched from replay later:
 * a publisher far ahead of a slow replay must not grow our memory without bound. */
#define HOLD_MAX 4096
/* A catch-up waits for replay's answer this long (ms) at a time, reading the live socket
 * in between. */
#define CATCH_SLICE_MS 2
/* Live messages read between two replay answers at most (bounded work per turn). */
#define DRAIN_MAX 8192
/* The after_seq of a sync's "get" for one thread: above any seq, so the answer is
 * "ok 0 <newest>" (replay's newest only, no events). after_seq + 1 must not wrap. */
#define PROBE_AFTER "9223372036854775807"

/* catch_step's answer for "replay did not answer; ask again later" (not an error). */
#define CATCH_RETRY 1
/* request's answer for "sent, no answer yet": the request stays in flight (not an error). */
#define REQ_PENDING 2
/* Longest replay request we send: "get <u64> <thread>". */
#define REQ_MAX (TS_THREAD_ID_MAX + 32)

typedef struct {
  nng_msg *m;
  uint64_t seq;
  const char *json;
  size_t len;
} held_msg;

typedef struct sthread {
  ts__bus_node node;
  size_t idx;
  uint64_t last; /* last seq delivered or queued for delivery; 0 = none */
  uint64_t seen; /* activity clock, for eviction */
  int catching;  /* in the catch-up queue */
  size_t inpend; /* pending items that point at this thread (no eviction meanwhile) */
  struct sthread *qnext;
  nng_time gap_since; /* when replay first failed to answer for a known gap; 0 = none */
  /* Live messages beyond a gap, in seq order, waiting for the catch-up: a ring of
   * hcap (a power of two, up to HOLD_MAX) starting at hhead. */
  held_msg *held;
  size_t hhead, hn, hcap;
  uint64_t target; /* the catch-up fetches at least up to this seq */
  /* Replay's newest at a sync, and when: if it is still undelivered at a sync
   * SYNC_GRACE_MS later, it was lost rather than in flight. */
  uint64_t probe;
  nng_time probe_at;
} sthread;

typedef struct {
  ts_sub_kind kind;
  sthread *t;
  uint64_t seq, seq_end;
  const char *json;
  size_t len;
  nng_msg *own; /* the live message this item points into, or NULL (batch) */
  int replayed;
} pitem;

struct ts_sub {
  nng_socket sock, req;
  int have_req;
  /* The one replay request in flight, and its answer. A request is not abandoned
   * because it is late: under load the replay service answers late, and a request
   * sent again while the first one still waits in its queue only makes the queue
   * longer (with a few subscribers doing that, replay never catches up). So an
   * unanswered request is kept across ts_sub_next calls and awaited; req0 itself sends
   * it again if its connection drops. The aio's callback (on an nng thread) turns a
   * finished send into the receive and records the result under `mu`. */
  nng_aio *aio;
  nng_mtx *mu;
  nng_cv *cv;
  int rq_busy;    /* a request is in flight (main thread only) */
  int rq_sent;    /* under mu: it reached a connection; now the answer is awaited */
  int rq_done;    /* under mu: finished; rq_rv and rq_ans hold the outcome */
  int rq_abandon; /* under mu: we no longer want it (the callback must not go on) */
  int rq_rv;
  nng_msg *rq_ans;
  char rq_q[REQ_MAX];
  size_t rq_qlen;
  nng_time rq_at;    /* when it was sent */
  nng_time rq_retry; /* when the next replay_timeout_ms of silence is counted */
  ts_sub_opts o;
  int one;
  char thread[TS_THREAD_ID_MAX + 1];
  size_t thread_len;

  ts_hmap map;
  sthread **threads;
  size_t n, cap;
  uint64_t clock;
  sthread *recent; /* the thread find() returned last (NULL after it was forgotten) */

  pitem *pend;
  size_t phead, pn, pcap;
  nng_msg *cur, *batch;
  sthread *qhead, *qtail;

  nng_time last_sync, last_msg;
  int synced;
  int sync_wait; /* a sync after the first is in flight; its answer is not waited for */
  unsigned handed; /* items handed out, to drain the live socket every 64 */
  nng_duration recv_timeo;
  ts_sub_stats st;
  atomic_int pipes; /* live connections to the publisher (nng's pipe callbacks) */
};

/* nng calls this from its own threads as connections come and go. */
static void on_pipe(nng_pipe p, nng_pipe_ev ev, void *arg) {
  (void)p;
  ts_sub *s = arg;
  if (ev == NNG_PIPE_EV_ADD_POST) atomic_fetch_add(&s->pipes, 1);
  if (ev == NNG_PIPE_EV_REM_POST) atomic_fetch_sub(&s->pipes, 1);
}

int ts_sub_connected(const ts_sub *s) { return atomic_load(&((ts_sub *)s)->pipes) > 0; }

/* ---- threads and queues -------------------------------------------------------------- */

static held_msg *held_first(sthread *t) { return &t->held[t->hhead]; }
static held_msg *held_lastm(sthread *t) { return &t->held[(t->hhead + t->hn - 1) & (t->hcap - 1)]; }

static void held_pop(sthread *t) {
  t->hhead = (t->hhead + 1) & (t->hcap - 1);
  t->hn--;
}

/* Appends a live message beyond t's gap (seq above every held one). Returns 0, or -1
 * when the ring is full or cannot grow (the caller drops the message). */
static int held_push(sthread *t, nng_msg *m, uint64_t seq, const char *json, size_t len) {
  if (t->hn == t->hcap) {
    if (t->hcap >= HOLD_MAX) return -1;
    size_t cap = t->hcap ? t->hcap * 2 : 16;
    held_msg *nh = malloc(cap * sizeof *nh);
    if (!nh) return -1;
    for (size_t i = 0; i < t->hn; i++) nh[i] = t->held[(t->hhead + i) & (t->hcap - 1)];
    free(t->held);
    t->held = nh;
    t->hhead = 0;
    t->hcap = cap;
  }
  t->held[(t->hhead + t->hn++) & (t->hcap - 1)] = (held_msg){m, seq, json, len};
  return 0;
}

static void forget(ts_sub *s, sthread *t) {
  if (s->recent == t) s->recent = NULL;
  ts_hmap_remove(&s->map, &t->node.h);
  s->threads[t->idx] = s->threads[--s->n];
  s->threads[t->idx]->idx = t->idx;
  while (t->hn) {
    nng_msg_free(held_first(t)->m);
    held_pop(t);
  }
  free(t->held);
  free(t);
}

/* Most live messages belong to the thread of the one before (a turn streams its deltas
 * back to back), so the last thread found is compared first, before hashing. */
static sthread *find(ts_sub *s, const char *id, size_t len) {
  sthread *t = s->recent;
  if (t && t->node.klen == len && !memcmp(t->node.key, id, len)) return t;
  t = (sthread *)ts_hmap_find(&s->map, id, len);
  if (t) s->recent = t;
  return t;
}

static sthread *create(ts_sub *s, const char *id, size_t len, uint64_t last) {
  if (s->n >= SUB_THREADS_MAX) {
    sthread *old = NULL;
    for (size_t i = 0; i < s->n; i++)
      if (!s->threads[i]->catching && !s->threads[i]->inpend &&
          (!old || s->threads[i]->seen < old->seen))
        old = s->threads[i];
    if (!old) return NULL;
    forget(s, old);
  }
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 16;
    sthread **nt = realloc(s->threads, cap * sizeof *nt);
    if (!nt) return NULL;
    s->threads = nt;
    s->cap = cap;
  }
  sthread *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  if (ts__bus_node_link(&s->map, &t->node, id, len)) {
    free(t);
    return NULL;
  }
  t->last = last;
  t->idx = s->n;
  s->threads[s->n++] = t;
  return t;
}

static void enqueue(ts_sub *s, sthread *t) {
  if (t->catching) return;
  t->catching = 1;
  t->gap_since = 0;
  t->qnext = NULL;
  if (s->qtail) s->qtail->qnext = t;
  else s->qhead = t;
  s->qtail = t;
}

static void dequeue_head(ts_sub *s) {
  sthread *t = s->qhead;
  s->qhead = t->qnext;
  if (!s->qhead) s->qtail = NULL;
  t->catching = 0;
  t->qnext = NULL;
  t->gap_since = 0;
}

static int push(ts_sub *s, pitem it) {
  if (s->phead + s->pn == s->pcap) {
    if (s->phead) {
      memmove(s->pend, s->pend + s->phead, s->pn * sizeof *s->pend);
      s->phead = 0;
    } else {
      size_t cap = s->pcap ? s->pcap * 2 : 64;
      pitem *np = realloc(s->pend, cap * sizeof *np);
      if (!np) return TS_E_NOMEM;
      s->pend = np;
      s->pcap = cap;
    }
  }
  s->pend[s->phead + s->pn++] = it;
  it.t->inpend++;
  return 0;
}

/* Queues a GONE notice for first..end of t (nothing when the range is empty). */
static int push_gone(ts_sub *s, sthread *t, uint64_t first, uint64_t end) {
  if (first > end) return 0;
  return push(s, (pitem){TS_SUB_GONE, t, first, end, NULL, 0, NULL, 0});
}

/* Queues for delivery the held live messages that now come next (seq last + 1), and
 * drops those at or below `last` (fetched from replay meanwhile). */
static int settle(ts_sub *s, sthread *t) {
  while (t->hn) {
    held_msg *h = held_first(t);
    if (h->seq > t->last + 1) break;
    if (h->seq <= t->last) {
      s->st.duplicates++;
      nng_msg_free(h->m);
    } else {
      int r = push(s, (pitem){TS_SUB_EVENT, t, h->seq, h->seq, h->json, h->len, h->m, 0});
      if (r) return r;
      t->last = h->seq;
    }
    held_pop(t);
  }
  return 0;
}

/* The seq the catch-up needs next at least: the one before the first held message,
 * else the target. Nothing is needed when it is not above `last`. */
static uint64_t needed(const sthread *t) {
  return t->hn ? t->held[t->hhead].seq - 1 : t->target;
}

/* Reports lost every seq of t up to `upto` that is not held, delivering the held ones
 * on the way. */
static int lose_upto(ts_sub *s, sthread *t, uint64_t upto) {
  int r = settle(s, t);
  while (r == 0 && t->last < upto) {
    uint64_t end = upto;
    if (t->hn && held_first(t)->seq - 1 < end) end = held_first(t)->seq - 1;
    r = push_gone(s, t, t->last + 1, end);
    if (r == 0) {
      t->last = end;
      r = settle(s, t);
    }
  }
  return r;
}

/* Ends t's catch-up (t is at the head of the queue). give_up: replay cannot supply
 * what is missing, so every gap up to the newest held message becomes a GONE item. */
static int finish(ts_sub *s, sthread *t, int give_up) {
  dequeue_head(s);
  int r = 0;
  if (give_up && t->hn) r = lose_upto(s, t, held_lastm(t)->seq);
  if (t->target < t->last) t->target = t->last;
  return r;
}

/* ---- replay requests --------------------------------------------------------------- */

/* The aio callback, on an nng thread: a finished send becomes the receive of the
 * answer; anything else (answer, error, cancel) ends the request. */
static void on_aio(void *arg) {
  ts_sub *s = arg;
  int rv = nng_aio_result(s->aio);
  nng_mtx_lock(s->mu);
  if (!s->rq_sent && rv == 0 && !s->rq_abandon) {
    s->rq_sent = 1;
    nng_aio_set_timeout(s->aio, NNG_DURATION_INFINITE);
    nng_recv_aio(s->req, s->aio); /* completes on nng's task threads, never inline */
    nng_mtx_unlock(s->mu);
    return;
  }
  if (!s->rq_sent) { /* the send failed or was cancelled: the message is still ours */
    nng_msg_free(nng_aio_get_msg(s->aio));
    nng_aio_set_msg(s->aio, NULL);
    if (rv == 0) rv = NNG_ECANCELED;
  } else if (rv == 0) {
    s->rq_ans = nng_aio_get_msg(s->aio);
    nng_aio_set_msg(s->aio, NULL);
  }
  s->rq_rv = rv;
  s->rq_done = 1;
  nng_cv_wake(s->cv);
  nng_mtx_unlock(s->mu);
}

/* Waits (mu held) until the request in flight finishes or `until` passes. */
static void rq_wait(ts_sub *s, nng_time until) {
  while (!s->rq_done && nng_clock() < until)
    if (nng_cv_until(s->cv, until) == NNG_ETIMEDOUT) break;
}

/* Ends the request in flight (mu held): abandons it if it is still running, waits for
 * the callback, and drops its answer. */
static void rq_drop(ts_sub *s) {
  if (!s->rq_done) {
    s->rq_abandon = 1;
    nng_mtx_unlock(s->mu);
    nng_aio_cancel(s->aio);
    nng_mtx_lock(s->mu);
    while (!s->rq_done) nng_cv_wait(s->cv);
  }
  if (s->rq_ans) nng_msg_free(s->rq_ans);
  s->rq_ans = NULL;
  s->rq_busy = 0;
}

/* Sends q as the request in flight (mu held, none in flight). 0 or TS_E_NOMEM. */
static int rq_start(ts_sub *s, const char *q, size_t qlen) {
  nng_msg *m;
  if (qlen > sizeof s->rq_q || nng_msg_alloc(&m, 0) != 0) return TS_E_NOMEM;
  if (nng_msg_append(m, q, qlen) != 0) {
    nng_msg_free(m);
    return TS_E_NOMEM;
  }
  memcpy(s->rq_q, q, qlen);
  s->rq_qlen = qlen;
  s->rq_busy = 1;
  s->rq_sent = s->rq_done = s->rq_abandon = 0;
  s->rq_rv = 0;
  s->rq_at = nng_clock();
  s->rq_retry = s->rq_at + (nng_time)s->o.replay_timeout_ms;
  s->st.requests++;
  nng_aio_set_msg(s->aio, m);
  nng_aio_set_timeout(s->aio, NNG_DURATION_INFINITE);
  nng_send_aio(s->req, s->aio);
  return 0;
}

/* The catch-up's query for t: the events after the last one delivered or queued. */
static int catch_query(const sthread *t, char q[REQ_MAX]) {
  return snprintf(q, REQ_MAX, "get %llu %s", (unsigned long long)t->last, t->node.key);
}

/* Sends the catch-up's next request for t at once, without waiting, so that replay
 * builds the answer while the caller takes the items of this one (catch_step's next
 * request is the same query and picks that answer up). Nothing when another request is
 * in flight; out of memory, it is simply asked for later. */
static void prefetch(ts_sub *s, const sthread *t) {
  char q[REQ_MAX];
  int ql = catch_query(t, q);
  nng_mtx_lock(s->mu);
  if (!s->rq_busy) (void)rq_start(s, q, (size_t)ql);
  nng_mtx_unlock(s->mu);
}

/* One request, and its answer if it comes by `until`. Returns 0 with *ans, REQ_PENDING
 * when the answer has not come yet (the request stays in flight: asking the same again
 * waits for it, it is not sent twice), or a negative ts_err. A different request while
 * one is in flight waits for that one (and drops its answer), or abandons it once it
 * has been unanswered for replay_timeout_ms. */
static int request(ts_sub *s, const char *q, size_t qlen, nng_time until, nng_msg **ans) {
  nng_mtx_lock(s->mu);
  if (s->rq_busy && (qlen != s->rq_qlen || memcmp(q, s->rq_q, qlen))) {
    if (!s->rq_done && nng_clock() - s->rq_at < (nng_time)s->o.replay_timeout_ms) rq_wait(s, until);
    if (!s->rq_done && nng_clock() - s->rq_at < (nng_time)s->o.replay_timeout_ms) {
      nng_mtx_unlock(s->mu);
      return REQ_PENDING;
    }
    rq_drop(s);
  }
  if (!s->rq_busy && rq_start(s, q, qlen)) {
    nng_mtx_unlock(s->mu);
    return TS_E_NOMEM;
  }
  rq_wait(s, until);
  if (!s->rq_done) {
    nng_time now = nng_clock();
    for (; now >= s->rq_retry; s->rq_retry += (nng_time)s->o.replay_timeout_ms) s->st.replay_retries++;
    nng_mtx_unlock(s->mu);
    return REQ_PENDING;
  }
  int rv = s->rq_rv;
  *ans = s->rq_ans;
  s->rq_ans = NULL;
  s->rq_busy = 0;
  nng_mtx_unlock(s->mu);
  return rv ? ts__bus_nng_err(rv) : 0;
}

/* Reads "word n1 n2\n"-style headers: the word, then up to two numbers. */
static int header(const char **p, const char *end, const char *word, uint64_t *a, uint64_t *b) {
  size_t wl = strlen(word);
  const char *q = *p;
  if ((size_t)(end - q) < wl || memcmp(q, word, wl)) return -1;
  q += wl;
  if (a && (q >= end || *q++ != ' ' || ts_bus_parse_u64(&q, end, a))) return -1;
  if (b && (q >= end || *q++ != ' ' || ts_bus_parse_u64(&q, end, b))) return -1;
  if (q >= end || *q++ != '\n') return -1;
  *p = q;
  return 0;
}

/* One replay request for the thread at the head of the queue. It fetches only what is
 * needed (up to the first held message, or the target): later events are in flight on
 * the live socket, and fetching them too would only turn their live copies into
 * duplicates. */
static int catch_step(ts_sub *s, nng_time deadline) {
  sthread *t = s->qhead;
  int r = settle(s, t);
  if (r) return r;
  if (needed(t) <= t->last) return finish(s, t, 0); /* arrived live meanwhile */
  if (!s->have_req) return finish(s, t, 1);
  char q[REQ_MAX];
  int ql = catch_query(t, q);
  /* The answer is awaited in slices of CATCH_SLICE_MS, and never past the caller's
   * deadline: the request stays in flight, and the caller's loop reads the live socket
   * (drain_live) before it looks again. Waiting the whole deadline instead left the live
   * queue unread for a replay round trip; under load that is longer than the queues
   * last at a high rate, and what overflowed then was one more gap to fetch. */
  nng_msg *a;
  nng_time slice = nng_clock() + CATCH_SLICE_MS;
  r = request(s, q, (size_t)ql, slice < deadline ? slice : deadline, &a);
  if (r == TS_E_NOMEM) return r;
  if (r != 0) {
    /* No answer yet. That is not a loss: a loaded replay service answers late, not
     * never. Only after replay_give_up_ms of silence is a known gap (held messages
     * beyond it) reported GONE; a check from a sync (nothing held) is then dropped,
     * and a later sync asks again. */
    nng_time now = nng_clock();
    if (!t->gap_since) t->gap_since = now;
    if (now - t->gap_since < (nng_time)s->o.replay_give_up_ms) return CATCH_RETRY;
    return finish(s, t, 1);
  }
  t->gap_since = 0;
  r = 0;
  const char *p = nng_msg_body(a), *end = p + nng_msg_len(a);
  uint64_t count, newest, oldest;
  if (header(&p, end, "ok", &count, &newest) == 0) {
    uint64_t before = t->last;
    for (uint64_t i = 0; i < count && r == 0; i++) {
      uint64_t seq;
      const char *nl;
      if (ts_bus_parse_u64(&p, end, &seq) || p >= end || *p++ != ' ' ||
          !(nl = memchr(p, '\n', (size_t)(end - p)))) {
        s->st.malformed++;
        break;
      }
      uint64_t need = needed(t);
      if (seq > t->last + 1) { /* a hole in the history (never published, or lost) */
        r = lose_upto(s, t, seq - 1 < need ? seq - 1 : need);
        if (r) break;
        need = needed(t);
      }
      if (seq > t->last) {
        if (seq > need) break; /* the rest is in flight (or held) */
        r = push(s, (pitem){TS_SUB_EVENT, t, seq, seq, p, (size_t)(nl - p), NULL, 1});
        if (r == 0) {
          t->last = seq;
          r = settle(s, t);
        }
      }
      p = nl + 1;
    }
    s->batch = a;
    if (r) return r;
    if (needed(t) <= t->last) return finish(s, t, 0);
    /* An answer older than a message we hold (a late answer: replay's newest was below
     * it when it answered) says nothing about the seqs in between; they are in the
     * history (it is filled before the live send), so ask again. A request sent now is
     * answered after that message was published, so this does not repeat. */
    if (t->hn && newest < needed(t)) {
      prefetch(s, t);
      return 0;
    }
    /* Replay has nothing more of what we need: what the held messages skip is lost. */
    if (count == 0 || t->last >= newest || t->last == before) return finish(s, t, 1);
    prefetch(s, t);
    return 0; /* ask again from the new last */
  }
  if (header(&p, end, "gone", &oldest, &newest) == 0 && oldest > t->last + 1) {
    /* 1 .. oldest - 1 left the history; the held ones among them are not lost. The
     * thread stays queued: the next request starts after them. */
    uint64_t upto = oldest - 1, need = needed(t);
    r = lose_upto(s, t, upto < need ? upto : need);
    if (r == 0 && needed(t) <= t->last) r = finish(s, t, 0);
  } else {
    r = finish(s, t, 1); /* unknown thread, error, or nonsense: stop asking */
  }
  nng_msg_free(a);
  return r;
}

/* A sync learnt that replay's newest seq of t is `newest` (at `at`, when the request
 * went out). The newest of an earlier sync, at least SYNC_GRACE_MS old and still not
 * delivered, was lost (the end of a burst whose live copies were dropped): fetch it. */
static void note_newest(ts_sub *s, sthread *t, uint64_t newest, nng_time at) {
  int aged = at - t->probe_at >= (nng_time)SYNC_GRACE_MS;
  if (t->probe > t->last && aged) {
    if (t->target < t->probe) t->target = t->probe;
    enqueue(s, t);
  }
  if (t->probe <= t->last || aged) {
    t->probe = newest;
    t->probe_at = at;
  }
}

/* Where a thread we have not seen before starts: from its first event (1) or from
 * the seq we first learn of. From the start, always. "Live only" means the events after
 * we connected, and a thread first heard of after the first sync (which listed every
 * thread the history held when we connected) was born after we connected: all of its
 * events are new, from seq 1. Taking the newest seq a sync reported instead would lose
 * them, because the publisher puts an event into its history before it sends it live,
 * so the live copies of a young thread often arrive after a sync has seen it. */
static int born_after_start(const ts_sub *s, int born_after_connect) {
  return s->o.from == TS_SUB_FROM_START || born_after_connect;
}

/* Asks replay what it holds and queues the threads we lost events of. The first sync
 * queues everything the history holds (from start); later ones only what stayed
 * undelivered for a while (note_newest). */
static size_t sync_query(const ts_sub *s, char q[REQ_MAX]) {
  if (!s->one) {
    memcpy(q, "threads", 7);
    return 7;
  }
  return (size_t)snprintf(q, REQ_MAX, "get " PROBE_AFTER " %s", s->thread);
}

/* Nonzero while the request in flight is the sync's (and not a catch-up's, which may
 * have replaced it: request() drops a different request's answer). */
static int sync_in_flight(ts_sub *s) {
  char q[REQ_MAX];
  size_t ql = sync_query(s, q);
  return s->rq_busy && s->rq_qlen == ql && !memcmp(s->rq_q, q, ql);
}

/* Returns 0 when the answer was read, REQ_PENDING when it has not come by `until` (the
 * request stays in flight: the next call with the same query picks the answer up), or a
 * negative ts_err. */
static int sync_threads(ts_sub *s, nng_time until) {
  nng_time at; /* when the answer was read: replay's newest was true then (or before) */
  nng_msg *a;
  const char *p, *end;
  uint64_t count, newest;
  char q[REQ_MAX];
  size_t ql = sync_query(s, q);
  int r = request(s, q, ql, until, &a);
  if (r) return r;
  if (s->one) {
    sthread *t = find(s, s->thread, s->thread_len);
    at = nng_clock();
    p = nng_msg_body(a);
    end = p + nng_msg_len(a);
    if (header(&p, end, "ok", &count, &newest) == 0) {
      int born_after = !t && s->synced;
      if (!t) t = create(s, s->thread, s->thread_len, born_after_start(s, born_after) ? 0 : newest);
      if (t && (!s->synced || born_after)) {
        t->target = newest;
        if (newest > t->last) enqueue(s, t);
      } else if (t) {
        note_newest(s, t, newest, at);
      }
    }
    nng_msg_free(a);
    return 0;
  }
  at = nng_clock();
  p = nng_msg_body(a);
  end = p + nng_msg_len(a);
  if (header(&p, end, "threads", &count, NULL) == 0) {
    for (uint64_t i = 0; i < count; i++) {
      uint64_t oldest;
      const char *nl;
      if (ts_bus_parse_u64(&p, end, &oldest) || p >= end || *p++ != ' ' ||
          ts_bus_parse_u64(&p, end, &newest) || p >= end || *p++ != ' ' ||
          !(nl = memchr(p, '\n', (size_t)(end - p))) || !ts_thread_id_valid(p, (size_t)(nl - p))) {
        s->st.malformed++;
        break;
      }
      sthread *t = find(s, p, (size_t)(nl - p));
      int born_after = !t && s->synced;
      if (!t) t = create(s, p, (size_t)(nl - p), born_after_start(s, born_after) ? 0 : newest);
      if (t && (!s->synced || born_after)) {
        if (t->target < newest) t->target = newest;
        if (newest > t->last) enqueue(s, t);
      } else if (t) {
        note_newest(s, t, newest, at);
      }
      p = nl + 1;
    }
  }
  nng_msg_free(a);
  return 0;
}

/* ---- live messages ----------------------------------------------------------------- */

/* Takes one live message. direct: a message that is next in its thread is handed out at
 * once (returns 1; it becomes s->cur and *item); otherwise it is queued as a pending
 * item (while a catch-up is under way). Returns 0 when it was dropped, held, queued
 * or pending, or TS_E_NOMEM; the message is consumed either way. */
static int on_live(ts_sub *s, nng_msg *m, ts_sub_item *item, int direct) {
  const char *id, *json;
  size_t idlen, jlen;
  uint64_t seq;
  if (ts_bus_wire_split(nng_msg_body(m), nng_msg_len(m), &id, &idlen, &json, &jlen) ||
      ts_bus_json_seq(json, jlen, &seq) || seq == 0 ||
      (s->one && (idlen != s->thread_len || memcmp(id, s->thread, idlen)))) {
    s->st.malformed++;
    nng_msg_free(m);
    return 0;
  }
  sthread *t = find(s, id, idlen);
  if (!t) t = create(s, id, idlen, born_after_start(s, s->have_req && s->synced) ? 0 : seq - 1);
  if (!t) { /* out of memory: better a reported gap than a crash or a silent loss */
    nng_msg_free(m);
    return 0;
  }
  t->seen = ++s->clock;
  if (seq <= t->last || (t->hn && seq <= held_lastm(t)->seq)) {
    s->st.duplicates++;
    nng_msg_free(m);
    return 0;
  }
  if (seq == t->last + 1 && !t->hn) { /* next in line, even while a catch-up is queued */
    t->last = seq;
    if (direct) {
      s->cur = m;
      s->st.live++;
      *item = (ts_sub_item){TS_SUB_EVENT, t->node.key, t->node.klen, seq, seq, json, jlen};
      return 1;
    }
    int r = push(s, (pitem){TS_SUB_EVENT, t, seq, seq, json, jlen, m, 0});
    if (r) {
      t->last = seq - 1;
      nng_msg_free(m);
    }
    return r;
  }
  /* A gap before it: hold it until replay fills the gap. */
  if (held_push(t, m, seq, json, jlen)) {
    nng_msg_free(m); /* full: replay will bring it */
    if (t->target < seq) t->target = seq;
  }
  if (!t->catching) {
    s->st.gaps++;
    enqueue(s, t);
  }
  return 0;
}

/* Reads what the live socket has now, without waiting, while a catch-up is under way:
 * the queue must not overflow (and make pub0 drop) because we are busy with replay. */
static int drain_live(ts_sub *s) {
  for (int i = 0; i < DRAIN_MAX; i++) {
    nng_msg *m;
    int rv = nng_recvmsg(s->sock, &m, NNG_FLAG_NONBLOCK);
    if (rv == NNG_EAGAIN || rv == NNG_ETIMEDOUT) return 0;
    if (rv) return ts__bus_nng_err(rv);
    s->last_msg = nng_clock();
    int r = on_live(s, m, NULL, 0);
    if (r) return r;
  }
  return 0;
}

/* ---- public API -------------------------------------------------------------------- */

int ts_sub_open(const char *url, const char *replay_url, const char *thread,
                const ts_sub_opts *opts, ts_sub **out) {
  ts__bus_clear_error();
  if (!url || !out) return TS_E_INVAL;
  if (thread && !ts_thread_id_valid(thread, strlen(thread))) return TS_E_INVAL;
  ts_sub *s = calloc(1, sizeof *s);
  if (!s) return TS_E_NOMEM;
  if (opts) s->o = *opts;
  if (s->o.recv_buffer <= 0) s->o.recv_buffer = 1024;
  if (s->o.recv_buffer > 8192) s->o.recv_buffer = 8192;
  if (s->o.replay_timeout_ms <= 0) s->o.replay_timeout_ms = 2000;
  if (s->o.replay_give_up_ms <= 0) s->o.replay_give_up_ms = 15000;
  ts__bus_tls tls = {.ca_file = s->o.tls_ca_file,
                     .server_name = s->o.tls_server_name,
                     .insecure = s->o.tls_insecure};
  s->o.tls_ca_file = s->o.tls_server_name = NULL;
  if (thread) {
    s->one = 1;
    s->thread_len = strlen(thread);
    memcpy(s->thread, thread, s->thread_len);
  }
  int mrc = ts_hmap_init(&s->map);
  if (mrc) {
    free(s);
    return mrc;
  }
  int r, rv = nng_sub0_open(&s->sock);
  if (rv) {
    r = ts__bus_nng_err(rv);
    ts_hmap_fini(&s->map);
    free(s);
    return r;
  }
  nng_socket_set_int(s->sock, NNG_OPT_RECVBUF, s->o.recv_buffer);
  char topic[TS_THREAD_ID_MAX + 1];
  size_t tl = 0;
  if (thread) {
    memcpy(topic, thread, s->thread_len);
    topic[s->thread_len] = TS_BUS_SEP;
    tl = s->thread_len + 1;
  }
  if ((rv = nng_socket_set(s->sock, NNG_OPT_SUB_SUBSCRIBE, topic, tl)) != 0) {
    r = ts__bus_nng_err(rv);
    goto fail;
  }
  atomic_init(&s->pipes, 0);
  nng_pipe_notify(s->sock, NNG_PIPE_EV_ADD_POST, on_pipe, s);
  nng_pipe_notify(s->sock, NNG_PIPE_EV_REM_POST, on_pipe, s);
  if ((r = ts__bus_dial(s->sock, url, &tls)) != 0) goto fail;
  if (replay_url) {
    if ((rv = nng_req0_open(&s->req)) != 0) {
      r = ts__bus_nng_err(rv);
      goto fail;
    }
    s->have_req = 1;
    if ((rv = nng_mtx_alloc(&s->mu)) != 0 || (rv = nng_cv_alloc(&s->cv, s->mu)) != 0 ||
        (rv = nng_aio_alloc(&s->aio, on_aio, s)) != 0) {
      r = ts__bus_nng_err(rv);
      goto fail;
    }
    /* No periodic resend: a request waiting in a slow replay's queue must not be queued
     * again behind itself. req0 still resends it when its connection drops. */
    nng_socket_set_ms(s->req, NNG_OPT_REQ_RESENDTIME, (nng_duration)s->o.replay_give_up_ms);
    if ((r = ts__bus_dial(s->req, replay_url, &tls)) != 0) goto fail;
  }
  s->recv_timeo = -2; /* not set yet */
  *out = s;
  return 0;
fail:
  if (s->have_req) nng_close(s->req);
  nng_close(s->sock);
  if (s->aio) nng_aio_free(s->aio);
  if (s->cv) nng_cv_free(s->cv);
  if (s->mu) nng_mtx_free(s->mu);
  ts_hmap_fini(&s->map);
  free(s);
  return r;
}

int ts_sub_next(ts_sub *s, ts_sub_item *item, int timeout_ms) {
  if (!s || !item) return TS_E_INVAL;
  if (s->cur) {
    nng_msg_free(s->cur);
    s->cur = NULL;
  }
  nng_time deadline = nng_clock() + (nng_time)(timeout_ms > 0 ? timeout_ms : 0);
  for (;;) {
    if (s->pn) {
      /* A long answer is handed out item by item: meanwhile keep the live queue from
       * overflowing (within bounds: a caller slower than the stream is left to replay). */
      if (s->qhead && s->pn < HOLD_MAX && !(++s->handed & 63)) {
        int r = drain_live(s);
        if (r) return r;
      }
      pitem *it = &s->pend[s->phead++];
      s->pn--;
      if (!s->pn) s->phead = 0;
      *item = (ts_sub_item){it->kind, it->t->node.key, it->t->node.klen, it->seq,
                            it->seq_end, it->json, it->len};
      s->cur = it->own;
      it->t->inpend--;
      if (it->kind == TS_SUB_GONE) s->st.gone++;
      else if (it->replayed) s->st.replayed++;
      else s->st.live++;
      return 1;
    }
    if (s->batch) {
      nng_msg_free(s->batch);
      s->batch = NULL;
    }
    int r;
    if (s->qhead) {
      if ((r = drain_live(s)) != 0) return r;
      if ((r = catch_step(s, deadline)) == CATCH_RETRY) {
        if (nng_clock() >= deadline && !s->pn) return 0; /* the caller's turn; the gap stays queued */
        continue;
      }
      if (r != 0) return r;
      s->last_sync = nng_clock(); /* replay was just asked: that counts as a sync */
      if (!s->pn && s->qhead && nng_clock() >= deadline) return 0; /* the caller's turn */
      continue;
    }
    nng_time now = nng_clock();
    if (s->sync_wait) { /* a later sync's answer, looked for without waiting */
      if (!sync_in_flight(s)) {
        s->sync_wait = 0; /* a catch-up took its place; the next sync asks again */
      } else if ((r = sync_threads(s, 0)) != REQ_PENDING) {
        s->sync_wait = 0;
        if (r == TS_E_NOMEM) return r;
        if (s->qhead || s->pn) continue;
      }
    }
    /* The first sync (what the history holds) is tried even when the caller's time is
     * up, again every SYNC_IDLE_MS until it is answered, and waited for: what it finds
     * comes before anything live. Later ones are sent and not waited for: the live
     * socket is read while replay answers, and the loop picks the answer up. */
    int first = !s->synced && (!s->last_sync || now - s->last_sync >= SYNC_IDLE_MS);
    if (s->have_req && !s->sync_wait && (now < deadline || first)) {
      nng_duration every = now - s->last_msg >= SYNC_IDLE_MS ? SYNC_IDLE_MS : SYNC_BUSY_MS;
      if (first || (s->synced && now - s->last_sync >= (nng_time)every)) {
        nng_time until = !first ? now : deadline > now + 50 ? deadline : now + 50;
        r = sync_threads(s, until);
        if (r == TS_E_NOMEM) return r;
        if (r == 0) s->synced = 1;
        if (r == REQ_PENDING && s->synced) s->sync_wait = 1;
        s->last_sync = now = nng_clock();
        if (s->qhead || s->pn) continue;
      }
    }
    nng_duration wait = deadline > now ? (nng_duration)(deadline - now) : 0;
    if (s->have_req && wait > SYNC_IDLE_MS) wait = SYNC_IDLE_MS;
    if (s->sync_wait && wait > SYNC_POLL_MS) wait = SYNC_POLL_MS;
    nng_msg *m;
    int rv;
    if (wait == 0) {
      rv = nng_recvmsg(s->sock, &m, NNG_FLAG_NONBLOCK);
    } else {
      if (s->recv_timeo != wait) {
        nng_socket_set_ms(s->sock, NNG_OPT_RECVTIMEO, wait);
        s->recv_timeo = wait;
      }
      rv = nng_recvmsg(s->sock, &m, 0);
    }
    if (rv == NNG_ETIMEDOUT || rv == NNG_EAGAIN) {
      if (nng_clock() >= deadline) return 0;
      continue;
    }
    if (rv) return ts__bus_nng_err(rv);
    s->last_msg = nng_clock();
    if ((r = on_live(s, m, item, 1)) != 0) return r;
  }
}

void ts_sub_get_stats(const ts_sub *s, ts_sub_stats *st) { *st = s->st; }

/* Everything ts_sub_close ends: the sockets, the request in flight and the memory. */
static void close_all(void *arg) {
  ts_sub *s = arg;
  nng_close(s->sock);
  if (s->aio) {
    /* The request in flight (often a sync: those are not waited for) is cancelled and
     * its callback awaited before the socket closes, so that nng_close(req) never meets
     * an operation of ours still running on it (nng 1.5.2 was seen to hang in that
     * close, under load, with a request outstanding). */
    nng_mtx_lock(s->mu);
    if (s->rq_busy) rq_drop(s);
    s->rq_abandon = 1;
    nng_mtx_unlock(s->mu);
    nng_aio_stop(s->aio);
  }
  if (s->have_req) nng_close(s->req);
  if (s->aio) {
    nng_aio_free(s->aio);
    if (s->rq_ans) nng_msg_free(s->rq_ans);
    nng_cv_free(s->cv);
    nng_mtx_free(s->mu);
  }
  for (size_t i = s->phead; i < s->phead + s->pn; i++)
    if (s->pend[i].own) nng_msg_free(s->pend[i].own);
  if (s->cur) nng_msg_free(s->cur);
  if (s->batch) nng_msg_free(s->batch);
  while (s->n) forget(s, s->threads[s->n - 1]);
  free(s->threads);
  free(s->pend);
  ts_hmap_fini(&s->map);
  free(s);
}

static _Atomic uint64_t closes_abandoned;

/* libnng's nng_close of a sub0 socket was seen to hang while its publisher is up and
 * sending (bus_net.h): the close is bounded. */
void ts_sub_close(ts_sub *s) {
  if (s && ts__bus_close_bounded(close_all, s, TS_SUB_CLOSE_WAIT_MS))
    atomic_fetch_add(&closes_abandoned, 1);
}

uint64_t ts_sub_closes_abandoned(void) { return atomic_load(&closes_abandoned); }
