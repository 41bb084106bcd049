/*
 * bus_sub.c: the subscriber (see bus_sub.h, docs/bus.md).
 *
 * State per thread: the last seq delivered, whether it waits in the catch-up queue,
 * and at most one "held" live message (the newest one seen while catching up).
 *
 * ts_sub_next is a loop over four sources, in this order:
 *   1. the pending items (a replay answer cut into items, GONE notices, a held event);
 *   2. the catch-up queue: one replay request for the thread at its head, whose
 *      answer becomes pending items;
 *   3. the periodic sync ("threads", or "get" for the one thread), which queues the
 *      threads that replay knows more of than we delivered;
 *   4. the live socket.
 * Pending items point into the replay answer (`batch`) or own their live message;
 * the answer is freed only when every item cut from it was handed out and the next
 * call came, which is what makes "valid until the next call" hold.
 *
 * Every delivery raises the thread's `last` when the item is queued, not when it is
 * handed out, so that a live duplicate arriving in between is recognised.
 */
#include "bus_sub.h"

#include <stdatomic.h>

#include <nng/nng.h>
#include <nng/protocol/pubsub0/sub.h>
#include <nng/protocol/reqrep0/req.h>
#include <nng/supplemental/util/platform.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus_net.h"
#include "bus_wire.h"
#include "error.h"

/* Threads tracked at once; past it the least recently active one is forgotten (it
 * would restart as a new thread). Bounds memory for a long-running "all threads" sub. */
#define SUB_THREADS_MAX 65536
#define SYNC_IDLE_MS 200   /* sync after this much quiet on the live socket */
#define SYNC_BUSY_MS 1000  /* ... and at least this often */

/* catch_step's answer for "replay did not answer; ask again later" (not an error). */
#define CATCH_RETRY 1

typedef struct sthread {
  ts__bus_node node;
  size_t idx;
  uint64_t last; /* last seq delivered or queued for delivery; 0 = none */
  uint64_t seen; /* activity clock, for eviction */
  int catching;
  struct sthread *qnext;
  nng_time gap_since; /* when replay first failed to answer for a known gap; 0 = none */
  nng_msg *held; /* newest live message seen while catching up */
  uint64_t held_seq;
  const char *held_json;
  size_t held_len;
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
  nng_aio *aio; /* for replay requests */
  ts_sub_opts o;
  int one;
  char thread[TS_BUS_THREAD_MAX + 1];
  size_t thread_len;

  ts__bus_map map;
  sthread **threads;
  size_t n, cap;
  uint64_t clock;

  pitem *pend;
  size_t phead, pn, pcap;
  nng_msg *cur, *batch;
  sthread *qhead, *qtail;

  nng_time last_sync, last_msg;
  int synced;
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

static void forget(ts_sub *s, sthread *t) {
  ts__bus_map_remove(&s->map, &t->node);
  s->threads[t->idx] = s->threads[--s->n];
  s->threads[t->idx]->idx = t->idx;
  if (t->held) nng_msg_free(t->held);
  free(t);
}

static sthread *find(ts_sub *s, const char *id, size_t len) {
  return (sthread *)ts__bus_map_find(&s->map, id, len);
}

static sthread *create(ts_sub *s, const char *id, size_t len, uint64_t last) {
  if (s->n >= SUB_THREADS_MAX) {
    sthread *old = NULL;
    for (size_t i = 0; i < s->n; i++)
      if (!s->threads[i]->catching && (!old || s->threads[i]->seen < old->seen))
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
  if (ts__bus_map_insert(&s->map, &t->node, id, len)) {
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
  return 0;
}

/* Queues a GONE notice for first..end of t (nothing when the range is empty). */
static int push_gone(ts_sub *s, sthread *t, uint64_t first, uint64_t end) {
  if (first > end) return 0;
  return push(s, (pitem){TS_SUB_GONE, t, first, end, NULL, 0, NULL, 0});
}

/* ---- replay requests --------------------------------------------------------------- */

/* One request and its answer, within `timeout` in all. Through an aio with its own
 * timeout: a blocking nng_sendmsg on req0 waits for a pipe without honouring
 * NNG_OPT_SENDTIMEO when the replay service is down (seen with nng 1.5.2). */
static int request(ts_sub *s, const char *q, size_t qlen, nng_duration timeout, nng_msg **ans) {
  nng_msg *m;
  if (nng_msg_alloc(&m, 0) != 0) return TS_E_NOMEM;
  if (nng_msg_append(m, q, qlen) != 0) {
    nng_msg_free(m);
    return TS_E_NOMEM;
  }
  s->st.requests++;
  nng_time end = nng_clock() + (nng_time)timeout;
  nng_aio_set_msg(s->aio, m);
  nng_aio_set_timeout(s->aio, timeout);
  nng_send_aio(s->req, s->aio);
  nng_aio_wait(s->aio);
  int rv = nng_aio_result(s->aio);
  if (rv) {
    nng_msg_free(nng_aio_get_msg(s->aio));
    nng_aio_set_msg(s->aio, NULL);
    return ts__bus_nng_err(rv);
  }
  nng_time now = nng_clock();
  nng_aio_set_timeout(s->aio, now < end ? (nng_duration)(end - now) : 1);
  nng_recv_aio(s->req, s->aio);
  nng_aio_wait(s->aio);
  if ((rv = nng_aio_result(s->aio)) != 0) return ts__bus_nng_err(rv);
  *ans = nng_aio_get_msg(s->aio);
  nng_aio_set_msg(s->aio, NULL);
  return 0;
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

/* Ends t's catch-up: whatever the held live message shows beyond `last` is now
 * either delivered or reported lost. */
static int finish(ts_sub *s, sthread *t) {
  dequeue_head(s);
  t->gap_since = 0;
  int r = 0;
  if (t->held) {
    if (t->held_seq > t->last) {
      r = push_gone(s, t, t->last + 1, t->held_seq - 1);
      if (!r) r = push(s, (pitem){TS_SUB_EVENT, t, t->held_seq, t->held_seq, t->held_json,
                                  t->held_len, t->held, 0});
      if (!r) {
        t->last = t->held_seq;
        t->held = NULL;
      }
    }
    if (t->held) nng_msg_free(t->held);
    t->held = NULL;
  }
  return r;
}

/* One replay request for the thread at the head of the queue. */
static int catch_step(ts_sub *s, nng_time deadline) {
  sthread *t = s->qhead;
  if (!s->have_req) return finish(s, t);
  char q[TS_BUS_THREAD_MAX + 32];
  int ql = snprintf(q, sizeof q, "get %llu %s", (unsigned long long)t->last, t->node.key);
  /* A known gap (a held message) is worth the full replay timeout; a routine check
   * (from a sync) only the caller's remaining time, so that a publisher that is away
   * does not stretch ts_sub_next's timeout. */
  nng_duration timeout = s->o.replay_timeout_ms;
  if (!t->held) {
    nng_time now = nng_clock();
    nng_duration left = deadline > now ? (nng_duration)(deadline - now) : 0;
    if (left < 50) left = 50;
    if (left < timeout) timeout = left;
  }
  nng_msg *a;
  if (request(s, q, (size_t)ql, timeout, &a)) {
    /* No answer in time. For a known gap that is not yet a loss: a loaded replay
     * service answers late, not never. Ask again until replay_give_up_ms have passed
     * since the first silence; only then report the gap as GONE. */
    if (t->held) {
      nng_time now = nng_clock();
      if (!t->gap_since) t->gap_since = now;
      if (now - t->gap_since < (nng_time)s->o.replay_give_up_ms) {
        s->st.replay_retries++;
        return CATCH_RETRY;
      }
    }
    return finish(s, t);
  }
  t->gap_since = 0;
  const char *p = nng_msg_body(a), *end = p + nng_msg_len(a);
  uint64_t count, newest;
  int r = 0;
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
      if (seq > t->last) {
        r = push_gone(s, t, t->last + 1, seq - 1);
        if (!r) r = push(s, (pitem){TS_SUB_EVENT, t, seq, seq, p, (size_t)(nl - p), NULL, 1});
        if (!r) t->last = seq;
      }
      p = nl + 1;
    }
    s->batch = a;
    if (r == 0 && (count == 0 || t->last >= newest || t->last == before)) r = finish(s, t);
    return r;
  }
  uint64_t oldest;
  if (header(&p, end, "gone", &oldest, &newest) == 0 && oldest > t->last + 1) {
    r = push_gone(s, t, t->last + 1, oldest - 1);
    if (!r) t->last = oldest - 1; /* and stay queued: the next request starts there */
  } else {
    r = finish(s, t); /* unknown thread, error, or nonsense: stop asking */
  }
  nng_msg_free(a);
  return r;
}

/* Asks replay what it holds and queues the threads we are behind on. */
static int sync_threads(ts_sub *s, nng_duration timeout) {
  if (s->one) {
    sthread *t = find(s, s->thread, s->thread_len);
    if (!t && s->o.from == TS_SUB_FROM_START) t = create(s, s->thread, s->thread_len, 0);
    if (t) enqueue(s, t);
    return 0;
  }
  nng_msg *a;
  int r = request(s, "threads", 7, timeout, &a);
  if (r) return r;
  const char *p = nng_msg_body(a), *end = p + nng_msg_len(a);
  uint64_t count;
  if (header(&p, end, "threads", &count, NULL) == 0) {
    for (uint64_t i = 0; i < count; i++) {
      uint64_t oldest, newest;
      const char *nl;
      if (ts_bus_parse_u64(&p, end, &oldest) || p >= end || *p++ != ' ' ||
          ts_bus_parse_u64(&p, end, &newest) || p >= end || *p++ != ' ' ||
          !(nl = memchr(p, '\n', (size_t)(end - p))) || !ts_bus_thread_valid(p, (size_t)(nl - p))) {
        s->st.malformed++;
        break;
      }
      sthread *t = find(s, p, (size_t)(nl - p));
      if (!t) t = create(s, p, (size_t)(nl - p), s->o.from == TS_SUB_FROM_START ? 0 : newest);
      if (t && newest > t->last) enqueue(s, t);
      p = nl + 1;
    }
  }
  nng_msg_free(a);
  return 0;
}

/* ---- live messages ----------------------------------------------------------------- */

/* Returns 1 when the message is to be delivered now (it becomes s->cur), else 0
 * (it was dropped, held or queued); the message is consumed either way. */
static int on_live(ts_sub *s, nng_msg *m, ts_sub_item *item) {
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
  if (!t) t = create(s, id, idlen, s->o.from == TS_SUB_FROM_START ? 0 : seq - 1);
  if (!t) { /* out of memory: better a reported gap than a crash or a silent loss */
    nng_msg_free(m);
    return 0;
  }
  t->seen = ++s->clock;
  if (t->catching) {
    if (seq > t->last && (!t->held || seq > t->held_seq)) {
      if (t->held) nng_msg_free(t->held);
      t->held = m;
      t->held_seq = seq;
      t->held_json = json;
      t->held_len = jlen;
    } else {
      nng_msg_free(m);
    }
    return 0;
  }
  if (seq <= t->last) {
    s->st.duplicates++;
    nng_msg_free(m);
    return 0;
  }
  if (seq == t->last + 1) {
    t->last = seq;
    s->cur = m;
    s->st.live++;
    *item = (ts_sub_item){TS_SUB_EVENT, t->node.key, t->node.klen, seq, seq, json, jlen};
    return 1;
  }
  s->st.gaps++;
  t->held = m;
  t->held_seq = seq;
  t->held_json = json;
  t->held_len = jlen;
  enqueue(s, t);
  return 0;
}

/* ---- public API -------------------------------------------------------------------- */

int ts_sub_open(const char *url, const char *replay_url, const char *thread,
                const ts_sub_opts *opts, ts_sub **out) {
  if (!url || !out) return TS_E_INVAL;
  if (thread && !ts_bus_thread_valid(thread, strlen(thread))) return TS_E_INVAL;
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
  if (ts__bus_map_init(&s->map)) {
    free(s);
    return TS_E_NOMEM;
  }
  int r, rv = nng_sub0_open(&s->sock);
  if (rv) {
    r = ts__bus_nng_err(rv);
    ts__bus_map_fini(&s->map);
    free(s);
    return r;
  }
  nng_socket_set_int(s->sock, NNG_OPT_RECVBUF, s->o.recv_buffer);
  char topic[TS_BUS_THREAD_MAX + 1];
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
    if ((rv = nng_aio_alloc(&s->aio, NULL, NULL)) != 0) {
      r = ts__bus_nng_err(rv);
      goto fail;
    }
    nng_socket_set_ms(s->req, NNG_OPT_REQ_RESENDTIME, 1000);
    if ((r = ts__bus_dial(s->req, replay_url, &tls)) != 0) goto fail;
  }
  s->recv_timeo = -2; /* not set yet */
  *out = s;
  return 0;
fail:
  if (s->have_req) nng_close(s->req);
  nng_close(s->sock);
  if (s->aio) nng_aio_free(s->aio);
  ts__bus_map_fini(&s->map);
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
      pitem *it = &s->pend[s->phead++];
      s->pn--;
      if (!s->pn) s->phead = 0;
      *item = (ts_sub_item){it->kind, it->t->node.key, it->t->node.klen, it->seq,
                            it->seq_end, it->json, it->len};
      s->cur = it->own;
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
      if ((r = catch_step(s, deadline)) == CATCH_RETRY) {
        if (nng_clock() >= deadline) return 0; /* the caller's turn; the gap stays queued */
        continue;
      }
      if (r != 0) return r;
      s->last_sync = nng_clock(); /* replay was just asked: that counts as a sync */
      continue;
    }
    nng_time now = nng_clock();
    if (s->have_req && (now < deadline || !s->synced)) {
      nng_duration every = now - s->last_msg >= SYNC_IDLE_MS ? SYNC_IDLE_MS : SYNC_BUSY_MS;
      if (!s->synced || now - s->last_sync >= (nng_time)every) {
        nng_duration left = deadline > now ? (nng_duration)(deadline - now) : 0;
        if (left < 50) left = 50;
        if (left > s->o.replay_timeout_ms) left = s->o.replay_timeout_ms;
        r = sync_threads(s, left);
        if (r == TS_E_NOMEM) return r;
        s->synced = 1;
        s->last_sync = nng_clock();
        if (s->qhead) continue;
      }
    }
    now = nng_clock();
    nng_duration wait = deadline > now ? (nng_duration)(deadline - now) : 0;
    if (s->have_req && wait > SYNC_IDLE_MS) wait = SYNC_IDLE_MS;
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
    if (on_live(s, m, item)) return 1;
  }
}

void ts_sub_get_stats(const ts_sub *s, ts_sub_stats *st) { *st = s->st; }

void ts_sub_close(ts_sub *s) {
  if (!s) return;
  nng_close(s->sock);
  if (s->have_req) nng_close(s->req);
  if (s->aio) nng_aio_free(s->aio);
  for (size_t i = s->phead; i < s->phead + s->pn; i++)
    if (s->pend[i].own) nng_msg_free(s->pend[i].own);
  if (s->cur) nng_msg_free(s->cur);
  if (s->batch) nng_msg_free(s->batch);
  while (s->n) forget(s, s->threads[s->n - 1]);
  free(s->threads);
  free(s->pend);
  ts__bus_map_fini(&s->map);
  free(s);
}
