/*
 * bus_pub.c: the publisher and the replay service (see bus_pub.h, docs/bus.md).
 *
 * Live path. ts_pub_send first appends the event to the thread's history, then sends
 * the live message without blocking. That order matters: a subscriber that sees seq N
 * live and finds a gap before it can always fetch everything up to N from replay,
 * because N was in the history before anyone could have seen it.
 *
 * History. Each thread has a ring of entries (seq + a malloc'd copy of the JSON) that
 * starts small and doubles up to history_events; the oldest entry leaves when it is
 * full. Byte and thread caps are global; going over them evicts the thread published
 * least recently (a linear scan, run only when a cap is hit: eviction is the rare
 * path, and the caps bound the scan). Threads are found through a hash map.
 *
 * Replay. A thread of our own loops on a blocking nng_recvmsg of the rep0 socket and
 * answers each request in turn; closing the socket ends the loop with NNG_ECLOSED.
 * One thread is plenty: an answer is a copy of at most ~1 MiB under the lock, into a
 * buffer of the replay thread's own; nng gets it in one copy after the lock is released.
 */
#include "events/bus_pub.h"

#include <nng/nng.h>
#include <nng/protocol/pubsub0/pub.h>
#include <nng/protocol/reqrep0/rep.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events/bus_net.h"
#include "events/bus_wire.h"
#include "base/error.h"
#include "base/strbuf.h"

#define ENTRY_OVERHEAD 32            /* bytes counted per entry besides its JSON */
#define ANSWER_MAX_BYTES (1u << 20)  /* an answer stops growing past this */

typedef struct {
  uint64_t seq;
  size_t len;
  char *json;
} entry;

typedef struct {
  ts__bus_node node; /* key = thread id */
  size_t idx;        /* position in pub->threads */
  entry *ring;
  size_t cap, head, n; /* ring[head] is the oldest of n entries */
  uint64_t touch;      /* pub->clock at the last send */
} hthread;

struct ts_pub {
  ts__bus_origins origins; /* the Origin rule of the ws:// listeners (bus_net.h) */
  nng_socket sock, rep;
  /* The live send's aio, one for the publisher's life, under send_mu: nng_sendmsg makes
   * and frees an aio per message, and libnng 1.5's aio set-up draws a random number
   * (nni_random: a getrandom(2) system call) to pick its expiry queue, one system call
   * per event published (strace -f -k -e getrandom). */
  nng_aio *aio;
  pthread_mutex_t send_mu;
  int have_rep;
  pthread_t replay;
  /* The replay thread's answer under construction, and the archive's events: reused from
   * request to request. An answer goes into the nng message in one append: appending
   * event by event to the message grew it (a fresh zeroed buffer and a copy of all of it)
   * three times per event, quadratic in the answer, and all of that under the history
   * lock that ts_pub_send needs (perf, 8 subscribers catching up: 22% of the process's
   * CPU in memmove and memset under answer_get, the publisher at 2.8k events/s). */
  ts_buf ans, arch;
  ts_pub_opts o;
  /* Held while the replay thread calls the archive; ts_pub_close sets archive_closed
   * under it, so that no archive call is running or starts once it has returned, even
   * when the close itself was given up on (the caller may then free the archive). */
  pthread_mutex_t arch_mu;
  int archive_closed;
  char url[TS__BUS_URL_MAX], replay_url[TS__BUS_URL_MAX];

  pthread_mutex_t mu; /* guards everything below */
  ts_hmap map;
  hthread **threads;
  size_t nthreads, threads_cap;
  hthread *recent; /* the thread of the last send (NULL after its eviction) */
  size_t bytes;
  uint64_t clock;
  ts_pub_stats st;
};

/* ---- history --------------------------------------------------------------------- */

static entry *ent(hthread *t, size_t i) { return &t->ring[(t->head + i) % t->cap]; }

static void drop_oldest(ts_pub *p, hthread *t) {
  entry *e = ent(t, 0);
  p->bytes -= e->len + ENTRY_OVERHEAD;
  free(e->json);
  t->head = (t->head + 1) % t->cap;
  t->n--;
}

static void evict(ts_pub *p, hthread *t) {
  if (p->recent == t) p->recent = NULL;
  while (t->n) drop_oldest(p, t);
  ts_hmap_remove(&p->map, &t->node.h);
  p->threads[t->idx] = p->threads[--p->nthreads];
  p->threads[t->idx]->idx = t->idx;
  free(t->ring);
  free(t);
  p->st.evicted++;
}

/* The least recently published thread other than `keep`, or NULL. */
static hthread *lru(ts_pub *p, const hthread *keep) {
  hthread *best = NULL;
  for (size_t i = 0; i < p->nthreads; i++)
    if (p->threads[i] != keep && (!best || p->threads[i]->touch < best->touch))
      best = p->threads[i];
  return best;
}

/* The thread of the previous send is compared first: a turn publishes its events back
 * to back, so most sends skip the hash. */
static hthread *thread_get(ts_pub *p, const char *id, size_t len) {
  hthread *t = p->recent;
  if (t && t->node.klen == len && !memcmp(t->node.key, id, len)) return t;
  t = (hthread *)ts_hmap_find(&p->map, id, len);
  if (t) return p->recent = t;
  while (p->nthreads >= p->o.history_threads) evict(p, lru(p, NULL));
  if (p->nthreads == p->threads_cap) {
    size_t cap = p->threads_cap ? p->threads_cap * 2 : 16;
    hthread **nt = realloc(p->threads, cap * sizeof *nt);
    if (!nt) return NULL;
    p->threads = nt;
    p->threads_cap = cap;
  }
  t = calloc(1, sizeof *t);
  if (!t) return NULL;
  if (ts__bus_node_link(&p->map, &t->node, id, len)) {
    free(t);
    return NULL;
  }
  t->idx = p->nthreads;
  p->threads[p->nthreads++] = t;
  return p->recent = t;
}

/* Appends under p->mu. Returns 0 or a ts_err (nothing changed then). */
static int history_append(ts_pub *p, const char *id, size_t idlen, uint64_t seq,
                          const char *json, size_t len) {
  hthread *t = thread_get(p, id, idlen);
  if (!t) return TS_E_NOMEM;
  if (t->n && seq <= ent(t, t->n - 1)->seq) return TS_E_INVAL;
  if (t->n == t->cap && t->cap < p->o.history_events) { /* grow the ring */
    size_t cap = t->cap ? t->cap * 2 : 16;
    if (cap > p->o.history_events) cap = p->o.history_events;
    entry *r = malloc(cap * sizeof *r);
    if (!r) return TS_E_NOMEM;
    for (size_t i = 0; i < t->n; i++) r[i] = *ent(t, i);
    free(t->ring);
    t->ring = r;
    t->cap = cap;
    t->head = 0;
  }
  char *copy = malloc(len ? len : 1);
  if (!copy) return TS_E_NOMEM;
  memcpy(copy, json, len);
  if (t->n == t->cap) drop_oldest(p, t);
  *ent(t, t->n) = (entry){seq, len, copy};
  t->n++;
  p->bytes += len + ENTRY_OVERHEAD;
  t->touch = ++p->clock;
  while (p->bytes > p->o.history_bytes) {
    hthread *victim = lru(p, t);
    if (victim) evict(p, victim);
    else if (t->n > 1) drop_oldest(p, t);
    else break; /* one event bigger than the cap: keep it, it is the newest */
  }
  return 0;
}

/* ---- replay service ---------------------------------------------------------------- */

/* Collects archived events into an answer body: "<seq> <json>\n" each. */
typedef struct {
  ts_buf *body;
  size_t count, bytes, max;
  uint64_t last, below; /* stop before seq `below` (0: no bound) */
} archive_ctx;

static int archive_put(void *ctx, uint64_t seq, const char *json, size_t len) {
  archive_ctx *c = ctx;
  if ((c->below && seq >= c->below) || c->count >= c->max ||
      (c->count && c->bytes + len > ANSWER_MAX_BYTES))
    return 1;
  ts_buf_append_u64(c->body, seq);
  ts_buf_putc(c->body, ' ');
  ts_buf_append(c->body, json, len);
  if (ts_buf_putc(c->body, '\n')) return 1;
  c->count++;
  c->bytes += len;
  c->last = seq;
  return 0;
}

/* Answers from the archive into p->ans: "ok <count> <newest>" and the events, when it
 * has any. Returns 1 when it answered, 0 when the caller should answer itself, <0 when
 * the answer could not be built. */
static int answer_archive(ts_pub *p, const char *id, size_t idlen, uint64_t after,
                          uint64_t below, uint64_t newest) {
  if (!p->o.archive) return 0;
  ts_buf_reset(&p->arch);
  archive_ctx c = {&p->arch, 0, 0, p->o.replay_max_events, 0, below};
  uint64_t arch_newest = 0;
  pthread_mutex_lock(&p->arch_mu);
  if (p->archive_closed) {
    pthread_mutex_unlock(&p->arch_mu);
    return 0;
  }
  int n = p->o.archive(p->o.archive_user, id, idlen, after, p->o.replay_max_events,
                       archive_put, &c, &arch_newest);
  pthread_mutex_unlock(&p->arch_mu);
  if (arch_newest > newest) newest = arch_newest;
  ts_buf *a = &p->ans;
  if (n > 0 && c.count && !p->arch.err) {
    ts_buf_puts(a, "ok ");
    ts_buf_append_u64(a, c.count);
    ts_buf_putc(a, ' ');
    ts_buf_append_u64(a, newest > c.last ? newest : c.last);
    ts_buf_putc(a, '\n');
    return ts_buf_append(a, p->arch.p, p->arch.len) ? -1 : 1;
  }
  if (n >= 0 && !below && arch_newest) {
    /* a thread only the archive holds, and nothing after `after`: its newest */
    ts_buf_puts(a, "ok 0 ");
    ts_buf_append_u64(a, newest);
    return ts_buf_putc(a, '\n') ? -1 : 1;
  }
  return 0;
}

/* The answers are written into p->ans (the replay thread's); each returns 0, or nonzero
 * when the answer could not be built (out of memory). */
static int answer_get(ts_pub *p, const char *q, const char *end) {
  ts_buf *a = &p->ans;
  uint64_t after;
  if (ts_bus_parse_u64(&q, end, &after) || q >= end || *q != ' ' ||
      !ts_thread_id_valid(q + 1, (size_t)(end - q - 1)))
    return ts_buf_puts(a, "error bad request\n");
  q++;
  pthread_mutex_lock(&p->mu);
  hthread *t = (hthread *)ts_hmap_find(&p->map, q, (size_t)(end - q));
  /* Older than the history, or a thread it does not hold: the archive, if any, answers
   * first (outside the lock: it may read a disk). */
  uint64_t h_oldest = t && t->n ? ent(t, 0)->seq : 0, h_newest = t && t->n ? ent(t, t->n - 1)->seq : 0;
  if (p->o.archive && (!h_oldest || after + 1 < h_oldest)) {
    pthread_mutex_unlock(&p->mu);
    int r = answer_archive(p, q, (size_t)(end - q), after, h_oldest, h_newest);
    if (r) return r < 0;
    pthread_mutex_lock(&p->mu);
    t = (hthread *)ts_hmap_find(&p->map, q, (size_t)(end - q));
  }
  if (!t || !t->n) {
    ts_buf_puts(a, "unknown\n");
  } else {
    uint64_t oldest = ent(t, 0)->seq, newest = ent(t, t->n - 1)->seq;
    if (after + 1 < oldest) {
      ts_buf_puts(a, "gone ");
      ts_buf_append_u64(a, oldest);
      ts_buf_putc(a, ' ');
      ts_buf_append_u64(a, newest);
      ts_buf_putc(a, '\n');
    } else {
      size_t lo = 0, hi = t->n; /* first entry with seq > after */
      while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ent(t, mid)->seq <= after) lo = mid + 1;
        else hi = mid;
      }
      size_t count = 0, bytes = 0;
      for (size_t i = lo; i < t->n && count < p->o.replay_max_events; i++) {
        if (count && bytes + ent(t, i)->len > ANSWER_MAX_BYTES) break;
        bytes += ent(t, i)->len;
        count++;
      }
      ts_buf_puts(a, "ok ");
      ts_buf_append_u64(a, count);
      ts_buf_putc(a, ' ');
      ts_buf_append_u64(a, newest);
      ts_buf_putc(a, '\n');
      for (size_t i = lo; !a->err && i < lo + count; i++) {
        entry *e = ent(t, i);
        ts_buf_append_u64(a, e->seq);
        ts_buf_putc(a, ' ');
        ts_buf_append(a, e->json, e->len);
        ts_buf_putc(a, '\n');
      }
    }
  }
  pthread_mutex_unlock(&p->mu);
  return a->err;
}

static int answer_threads(ts_pub *p) {
  ts_buf *a = &p->ans;
  pthread_mutex_lock(&p->mu);
  size_t n = 0;
  for (size_t i = 0; i < p->nthreads; i++) n += p->threads[i]->n > 0;
  ts_buf_puts(a, "threads ");
  ts_buf_append_u64(a, n);
  ts_buf_putc(a, '\n');
  for (size_t i = 0; !a->err && i < p->nthreads; i++) {
    hthread *t = p->threads[i];
    if (!t->n) continue;
    ts_buf_append_u64(a, ent(t, 0)->seq);
    ts_buf_putc(a, ' ');
    ts_buf_append_u64(a, ent(t, t->n - 1)->seq);
    ts_buf_putc(a, ' ');
    ts_buf_append(a, t->node.key, t->node.klen);
    ts_buf_putc(a, '\n');
  }
  pthread_mutex_unlock(&p->mu);
  return a->err;
}

/* Answers above this size give their buffer back afterwards (a rare huge event must
 * not pin its size in the replay thread for the publisher's lifetime). */
#define ANSWER_KEEP_BYTES (4u << 20)

static void *replay_main(void *arg) {
  ts_pub *p = arg;
  for (;;) {
    nng_msg *req, *a;
    int rv = nng_recvmsg(p->rep, &req, 0);
    if (rv == NNG_ECLOSED) break;
    if (rv) continue;
    const char *q = nng_msg_body(req), *end = q + nng_msg_len(req);
    ts_buf_reset(&p->ans);
    if (end - q > 4 && !memcmp(q, "get ", 4)) rv = answer_get(p, q + 4, end);
    else if (end - q == 7 && !memcmp(q, "threads", 7)) rv = answer_threads(p);
    else rv = ts_buf_puts(&p->ans, "error bad request\n");
    nng_msg_free(req);
    pthread_mutex_lock(&p->mu);
    p->st.requests++;
    pthread_mutex_unlock(&p->mu);
    if (rv != 0) { /* out of memory while copying: say so rather than send half */
      ts_buf_reset(&p->ans);
      ts_buf_puts(&p->ans, "error out of memory\n");
    }
    /* one allocation and one copy, outside the history lock */
    if (nng_msg_alloc(&a, p->ans.len) != 0) {
      continue; /* the requester times out and asks again */
    }
    memcpy(nng_msg_body(a), p->ans.p, p->ans.len);
    if (p->ans.cap > ANSWER_KEEP_BYTES) {
      size_t max = p->ans.max;
      ts_buf_fini(&p->ans);
      ts_buf_init(&p->ans, max);
    }
    if (p->arch.cap > ANSWER_KEEP_BYTES) {
      size_t max = p->arch.max;
      ts_buf_fini(&p->arch);
      ts_buf_init(&p->arch, max);
    }
    if (nng_sendmsg(p->rep, a, 0) != 0) nng_msg_free(a);
  }
  return NULL;
}

/* ---- public API -------------------------------------------------------------------- */

int ts_pub_open(const char *url, const char *replay_url, const ts_pub_opts *opts,
                ts_pub **out) {
  ts__bus_clear_error();
  if (!url || !out) return TS_E_INVAL;
  ts_pub *p = calloc(1, sizeof *p);
  if (!p) return TS_E_NOMEM;
  if (opts) p->o = *opts;
  if (!p->o.history_events) p->o.history_events = 65536;
  if (!p->o.history_threads) p->o.history_threads = 1024;
  if (!p->o.history_bytes) p->o.history_bytes = (size_t)256 << 20;
  if (!p->o.replay_max_events) p->o.replay_max_events = 1024;
  if (p->o.send_buffer <= 0) p->o.send_buffer = 1024;
  if (p->o.send_buffer > 8192) p->o.send_buffer = 8192;
  ts__bus_tls tls = {.cert_file = p->o.tls_cert_file,
                     .key_file = p->o.tls_key_file,
                     .key_password = p->o.tls_key_password};
  p->o.tls_cert_file = p->o.tls_key_file = p->o.tls_key_password = NULL; /* not kept */
  if (ts__bus_origins_init(&p->origins, p->o.allowed_origins, p->o.allowed_origins_n)) {
    free(p);
    return TS_E_NOMEM;
  }
  p->o.allowed_origins = NULL; /* the copy is in p->origins */
  /* No limit of their own: an answer holds at most replay_max_events events and stops at
   * about 1 MiB, but its first event may be as large as one event the history (or the
   * archive) kept, and that is bounded where it was accepted. */
  ts_buf_init(&p->ans, SIZE_MAX / 2);
  ts_buf_init(&p->arch, SIZE_MAX / 2);
  int mrc = ts_hmap_init(&p->map);
  if (mrc) {
    ts__bus_origins_fini(&p->origins);
    free(p);
    return mrc;
  }
  pthread_mutex_init(&p->mu, NULL);
  pthread_mutex_init(&p->send_mu, NULL);
  pthread_mutex_init(&p->arch_mu, NULL);
  int r, rv = nng_aio_alloc(&p->aio, NULL, NULL);
  if (rv) {
    r = ts__bus_nng_err(rv);
    goto fail_nosock;
  }
  /* pub0 never waits for a subscriber; a zero timeout also covers the socket's own queue
   * (what NNG_FLAG_NONBLOCK does for nng_sendmsg) */
  nng_aio_set_timeout(p->aio, NNG_DURATION_ZERO);
  if ((rv = nng_pub0_open(&p->sock)) != 0) {
    r = ts__bus_nng_err(rv);
    goto fail_nosock;
  }
  nng_socket_set_int(p->sock, NNG_OPT_SENDBUF, p->o.send_buffer);
  if ((r = ts__bus_origin_guard(p->sock, &p->origins)) != 0) goto fail;
  if ((r = ts__bus_listen(p->sock, url, &tls, p->url, sizeof p->url)) != 0) goto fail;
  if (replay_url) {
    if ((rv = nng_rep0_open(&p->rep)) != 0) {
      r = ts__bus_nng_err(rv);
      goto fail;
    }
    p->have_rep = 1;
    if ((r = ts__bus_origin_guard(p->rep, &p->origins)) != 0) goto fail;
    if ((r = ts__bus_listen(p->rep, replay_url, &tls, p->replay_url,
                            sizeof p->replay_url)) != 0)
      goto fail;
    if (pthread_create(&p->replay, NULL, replay_main, p) != 0) {
      r = TS_E_NOMEM;
      goto fail;
    }
  }
  *out = p;
  return 0;
fail:
  if (p->have_rep) nng_close(p->rep);
  nng_close(p->sock);
fail_nosock:
  if (p->aio) nng_aio_free(p->aio);
  pthread_mutex_destroy(&p->send_mu);
  pthread_mutex_destroy(&p->mu);
  pthread_mutex_destroy(&p->arch_mu);
  ts_hmap_fini(&p->map);
  ts__bus_origins_fini(&p->origins);
  free(p);
  return r;
}

int ts_pub_send(ts_pub *p, const char *thread, size_t thread_len, uint64_t seq,
                const char *json, size_t json_len) {
  if (!p || !ts_thread_id_valid(thread, thread_len) || seq == 0 || (!json && json_len))
    return TS_E_INVAL;
  if (json_len && json[json_len - 1] == '\n') json_len--;
  nng_msg *m;
  if (nng_msg_alloc(&m, thread_len + 1 + json_len) != 0) return TS_E_NOMEM;
  char *b = nng_msg_body(m);
  memcpy(b, thread, thread_len);
  b[thread_len] = TS_BUS_SEP;
  if (json_len) memcpy(b + thread_len + 1, json, json_len);
  pthread_mutex_lock(&p->mu);
  int r = history_append(p, thread, thread_len, seq, json, json_len);
  if (r == 0) p->st.sent++;
  pthread_mutex_unlock(&p->mu);
  if (r) {
    nng_msg_free(m);
    return r;
  }
  /* pub0 never waits for a subscriber (the aio's zero timeout); the wait is for the
   * completion pub0 reports at once. On failure the message is still ours. */
  pthread_mutex_lock(&p->send_mu);
  nng_aio_set_msg(p->aio, m);
  nng_send_aio(p->sock, p->aio);
  nng_aio_wait(p->aio);
  if (nng_aio_result(p->aio) != 0) nng_msg_free(nng_aio_get_msg(p->aio));
  nng_aio_set_msg(p->aio, NULL);
  pthread_mutex_unlock(&p->send_mu);
  return 0;
}

const char *ts_pub_url(const ts_pub *p, int which) {
  if (!p) return NULL;
  if (which == 0) return p->url;
  return p->have_rep ? p->replay_url : NULL;
}

void ts_pub_get_stats(ts_pub *p, ts_pub_stats *st) {
  pthread_mutex_lock(&p->mu);
  *st = p->st;
  st->threads = p->nthreads;
  st->bytes = p->bytes;
  st->events = 0;
  for (size_t i = 0; i < p->nthreads; i++) st->events += p->threads[i]->n;
  pthread_mutex_unlock(&p->mu);
  st->origins_refused = __atomic_load_n(&p->origins.refused, __ATOMIC_RELAXED);
}

/* Everything ts_pub_close ends: the listeners, the replay thread and the memory. */
static void close_all(void *arg) {
  ts_pub *p = arg;
  nng_close(p->sock);
  nng_aio_free(p->aio);
  pthread_mutex_destroy(&p->send_mu);
  if (p->have_rep) {
    nng_close(p->rep); /* ends replay_main's recv with NNG_ECLOSED */
    pthread_join(p->replay, NULL);
  }
  while (p->nthreads) evict(p, p->threads[p->nthreads - 1]);
  free(p->threads);
  ts_hmap_fini(&p->map);
  ts__bus_origins_fini(&p->origins);
  pthread_mutex_destroy(&p->mu);
  pthread_mutex_destroy(&p->arch_mu);
  ts_buf_fini(&p->ans);
  ts_buf_fini(&p->arch);
  free(p);
}

static _Atomic uint64_t closes_abandoned;

void ts_pub_close(ts_pub *p) {
  if (!p) return;
  pthread_mutex_lock(&p->arch_mu); /* waits for an archive call in progress */
  p->archive_closed = 1;
  pthread_mutex_unlock(&p->arch_mu);
  if (ts__bus_close_bounded(close_all, p, TS_PUB_CLOSE_WAIT_MS)) atomic_fetch_add(&closes_abandoned, 1);
}

uint64_t ts_pub_closes_abandoned(void) { return atomic_load(&closes_abandoned); }
