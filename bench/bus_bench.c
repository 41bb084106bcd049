/*
 * bus_bench.c: the event bus end to end (tap -> ts_pub -> ts_sub), side by side with
 * raw nng pub0/sub0 carrying the same bytes.
 *
 * The toolstream path. The publisher (this process's main thread) runs an OpenAI Chat
 * stream through ts_tap with --deltas on: turn after turn of one write_file call whose
 * ~330 bytes of arguments arrive in 4-12 byte deltas, one SSE event per ts_tap_feed,
 * a fresh ts_tap per turn, so that nearly every SSE event yields one event
 * (tool_call_started, tool_call_delta ..., tool_call_ready, turn_finished). Every
 * event is encoded by ts_event_encode and published by ts_pub_send, as `toolstream
 * tap --pub` does. The subscribers are threads of the same process, each with its own
 * ts_sub (from start, replay on) over ipc:// or tcp://127.0.0.1, so that one
 * CLOCK_MONOTONIC serves both ends.
 *
 * Latency. Just before the SSE event goes into ts_tap_feed the publisher reads the
 * clock and, for every event that feed produces, stores the time in a table indexed
 * by seq (before ts_pub_send, so the entry is written before any subscriber can see
 * the event). A subscriber reads the clock when ts_sub_next has handed it the event
 * (its JSON and its seq, parsed from the message) and records the difference. So the
 * latency covers tap parsing, encoding, the history append, nng, the subscriber's
 * parsing and, for an event that arrived through replay, the replay round trip.
 * Percentiles (nearest rank) come from all samples of all subscribers, sorted.
 *
 * Losses. "Before replay": events a subscriber did not get live (ts_sub stats: the
 * published count minus `live`). "After replay": events it never got at all (GONE
 * items, or nothing by the deadline, 10 s after the last send).
 *
 * The baseline. Raw nng: one pub0 socket, one sub0 socket per subscriber thread,
 * the same transport, the same queue depths as ts_pub and ts_sub use by default
 * (NNG_OPT_SENDBUF and NNG_OPT_RECVBUF 1024), non-blocking sends. The verdict compares
 * with raw nng fed the way toolstream is: the same SSE through the same tap and encoder,
 * the clock read before ts_tap_feed, then the message toolstream would publish ("<thread>
 * <event JSON>") through nng_msg_alloc and nng_sendmsg. Both sides pay the same production
 * per event, so the difference left is ts_pub/ts_sub against pub0/sub0. Two reference rows
 * keep the earlier baseline: the very bytes toolstream publishes (recorded from a dry run)
 * sent without a tap, the clock read just before nng_msg_alloc; paced, that publisher
 * sleeps and leaves the subscribers a CPU that a publisher running the tap does not, so it
 * measured the event source as much as the bus. Either way the subscriber splits the
 * message and parses the seq (ts_bus_wire_split, ts_bus_json_seq, as ts_sub does) before
 * it reads the clock. Raw pub/sub has no replay: what a full queue drops is lost, and the
 * lost messages have no latency sample (their latency would be infinite), which flatters
 * the baseline's percentiles whenever it loses.
 *
 * Rates. Paced: 10,000 events/s for 2 s per implementation, as two 1 s runs in the
 * order toolstream, raw (same tap), raw (recorded), raw (recorded), raw (same tap),
 * toolstream (this VM's load drifts; the order spreads the drift over all). Pacing sleeps
 * until the send time minus the measured nanosleep overshoot (timer slack set to 1 ns),
 * then spins. Saturation: one run of 50,000 events (20,000 with 8 subscribers) as fast as
 * the publisher goes: toolstream, raw nng through the same tap, then the references: the
 * recorded bytes as fast as pub0 takes them, and paced at the rate toolstream reached.
 *
 * This file includes nng itself (only for the baseline); the toolstream path goes
 * through events/ as the command does.
 *
 * Repeats. --runs N measures every cell N times (make bench: 5), each run interleaving
 * toolstream and raw nng as above, and ends with one summary row per cell: the N p99
 * ratios, their median and min-max, and a verdict (see verdict()), plus one
 * "BUSCELL key=value ..." line per cell for scripts. One run says little on this VM:
 * the same cell's ratio moved by 10x between runs minutes apart.
 *
 * usage: bus_bench [--quick] [--runs N] [--cell ipc:1|ipc:8|tcp:1|tcp:8] [--catchup]
 *   (--quick: 0.5 s paced, 10,000 / 5,000 events at saturation; --cell: that cell only;
 *   --catchup: only the time a late subscriber takes to catch up 50,000 events from the
 *   history, run_catchup)
 *
 * Exit status 1 when a subscriber failed (a socket error), 2 on a bad argument; a missed
 * target is not a failure (the report says MET, NOT MET or UNMEASURABLE).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/pubsub0/pub.h>
#include <nng/protocol/pubsub0/sub.h>

#include "events/bus_pub.h"
#include "events/bus_sub.h"
#include "events/bus_wire.h"
#include "events/event.h"
#include "stream/tap.h"

#define THREAD_ID "th_5ca1ab1e0ddba11"
#define PACED_RATE 10000.0
#define QUEUE_DEPTH 1024  /* ts_pub's and ts_sub's default queues, used for raw nng too */
#define DRAIN_MS 10000    /* how long subscribers may take after the last send */
#define RAW_IDLE_MS 300   /* raw subscribers stop after this much quiet past the last send */
#define MAX_SUBS 8
#define RUNS_MAX 20       /* --runs at most */

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(uint64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
  while (nanosleep(&ts, &ts) && errno == EINTR) {
  }
}

/* Sleeps until `spin` before t, then spins: nanosleep on this VM overshoots by tens of
 * microseconds, more than the 100 us between events at 10,000/s. */
static uint64_t spin_ns = 50000, overshoot_ns;

static void wait_until(uint64_t t) {
  uint64_t n = now_ns();
  if (n >= t) return;
  if (t - n > spin_ns) sleep_ns(t - n - spin_ns);
  while (now_ns() < t) {
  }
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Linux rounds sleeps up by the thread's timer slack (50 us by default); 1 ns makes
 * nanosleep as precise as the VM allows, so the spin tail stays short and the
 * publisher leaves the CPU to the subscribers between events. */
static void calibrate_sleep(void) {
  enum { N = 200 };
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  uint64_t over[N];
  for (int i = 0; i < N; i++) {
    uint64_t t = now_ns();
    sleep_ns(20000);
    over[i] = now_ns() - t - 20000;
  }
  qsort(over, N, sizeof *over, cmp_u64);
  overshoot_ns = over[N * 95 / 100];
  /* At most half the 100 us between events: under load the overshoot grows past the
   * interval, and a publisher spinning all the time would take one of the two CPUs
   * from the subscribers. A late event is sent at once and the schedule catches up. */
  spin_ns = overshoot_ns + 10000;
  if (spin_ns < 20000) spin_ns = 20000;
  if (spin_ns > 50000) spin_ns = 50000;
}

static void loadavg(char *out, size_t n) {
  FILE *f = fopen("/proc/loadavg", "r");
  double a = 0, b = 0, c = 0;
  if (!f || fscanf(f, "%lf %lf %lf", &a, &b, &c) != 3) {
    snprintf(out, n, "?");
  } else {
    snprintf(out, n, "%.2f %.2f %.2f", a, b, c);
  }
  if (f) fclose(f);
}

static void die(const char *what) {
  fprintf(stderr, "bus_bench: %s\n", what);
  exit(1);
}

/* ---- the model stream ------------------------------------------------------------- */

/* One turn in the OpenAI Chat wire format, cut into SSE events. Regenerated per turn
 * from a fixed-seed generator, so every run sends the same bytes. */
typedef struct {
  char buf[32768];
  size_t len;
  size_t cut[256]; /* SSE event ends */
  size_t ncut;
} turn;

static uint32_t rnd_state = 12345;
static uint32_t rnd(void) {
  rnd_state = rnd_state * 1664525u + 1013904223u;
  return rnd_state >> 8;
}

static void tput(turn *t, const char *s, size_t n) {
  if (t->len + n > sizeof t->buf) die("turn buffer too small");
  memcpy(t->buf + t->len, s, n);
  t->len += n;
}

static void tputs(turn *t, const char *s) { tput(t, s, strlen(s)); }

static const char chat_head[] =
    "data: {\"id\":\"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT\",\"object\":\"chat.completion.chunk\","
    "\"created\":1755868211,\"model\":\"gpt-4.1-2025-04-14\",\"system_fingerprint\":"
    "\"fp_a380c0a156\",\"choices\":[{\"index\":0,\"delta\":";

static void chunk_end(turn *t, const char *finish) {
  tputs(t, ",\"logprobs\":null,\"finish_reason\":");
  tputs(t, finish);
  tputs(t, "}]}\n\n");
  t->cut[t->ncut++] = t->len;
}

static void make_turn(turn *t, unsigned k) {
  static const char words[][8] = {"lorem", "ipsum", "dolor", "sit", "amet", "tool",
                                  "stream", "event", "delta", "bus", "write", "file"};
  char args[512];
  int n = snprintf(args, sizeof args, "{\"path\":\"src/module_%u.c\",\"content\":\"", k);
  while (n < 300) {
    n += snprintf(args + n, sizeof args - (size_t)n, "%s ", words[rnd() % 12]);
  }
  n += snprintf(args + n, sizeof args - (size_t)n, "end\"}");
  t->len = t->ncut = 0;
  tputs(t, chat_head);
  tputs(t, "{\"role\":\"assistant\",\"content\":null}");
  chunk_end(t, "null");
  char id[64];
  snprintf(id, sizeof id, "call_%08uXyZaBcDeFgHiJkLmN", k);
  tputs(t, chat_head);
  tputs(t, "{\"tool_calls\":[{\"index\":0,\"id\":\"");
  tputs(t, id);
  tputs(t, "\",\"type\":\"function\",\"function\":{\"name\":\"write_file\",\"arguments\":\"\"}}]}");
  chunk_end(t, "null");
  for (int at = 0; at < n;) {
    int d = 4 + (int)(rnd() % 9);
    if (at + d > n) d = n - at;
    tputs(t, chat_head);
    tputs(t, "{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"");
    for (int i = at; i < at + d; i++) {
      if (args[i] == '"') tputs(t, "\\\"");
      else tput(t, &args[i], 1);
    }
    tputs(t, "\"}}]}");
    chunk_end(t, "null");
    at += d;
  }
  tputs(t, chat_head);
  tputs(t, "{}");
  chunk_end(t, "\"tool_calls\"");
  tputs(t, "data: [DONE]\n\n");
  t->cut[t->ncut++] = t->len;
}

/* ---- the publisher side of the toolstream path ----------------------------------- */

typedef struct {
  ts_pub *pub;                /* NULL and no raw socket: dry run, record the messages */
  nng_socket raw;             /* raw nng pub0, when is_raw: the same tap, then nng_sendmsg */
  int is_raw;
  _Atomic uint64_t *t_in;     /* [seq]: when the input behind seq went into the tap */
  uint64_t cap;               /* entries in t_in / the pool */
  uint64_t seq;               /* last seq emitted */
  uint64_t t_feed;            /* the clock before the current feed */
  ts_buf line;
  /* dry run: every message "<thread> <json>" back to back, msg_off[seq - 1] its start */
  ts_buf pool;
  size_t *msg_off;
  int failed;
} pub_ctx;

static int on_event(void *user, const ts_tap_event *e) {
  pub_ctx *c = user;
  if (c->seq + 1 >= c->cap) return 1;
  if (e->type == TS_TAP_TOOL_CALL_ERROR || e->type == TS_TAP_STREAM_ERROR) {
    fprintf(stderr, "bus_bench: the tap reported %s: %.*s\n", ts_tap_type_name(e->type),
            (int)e->error.len, e->error.p);
    c->failed = 1;
    return 1;
  }
  uint64_t seq = ++c->seq;
  ts_event ev = {.thread = {THREAD_ID, sizeof THREAD_ID - 1}, .seq = seq, .body = *e};
  ts_buf_reset(&c->line);
  if (ts_event_encode(&ev, &c->line)) {
    c->failed = 1;
    return 1;
  }
  if (c->is_raw) {
    /* The baseline with the same production: the same tap and encoder, then pub0 with
     * the message toolstream's publisher would send ("<thread> <json>"). */
    atomic_store_explicit(&c->t_in[seq], c->t_feed, memory_order_relaxed);
    size_t len = sizeof THREAD_ID + c->line.len, jl = c->line.len;
    if (jl && c->line.p[jl - 1] == '\n') len--, jl--;
    nng_msg *m;
    if (nng_msg_alloc(&m, len)) {
      c->failed = 1;
      return 1;
    }
    char *b = nng_msg_body(m);
    memcpy(b, THREAD_ID " ", sizeof THREAD_ID);
    memcpy(b + sizeof THREAD_ID, c->line.p, jl);
    if (nng_sendmsg(c->raw, m, NNG_FLAG_NONBLOCK)) nng_msg_free(m);
    return 0;
  }
  if (!c->pub) {
    c->msg_off[seq - 1] = c->pool.len;
    ts_buf_puts(&c->pool, THREAD_ID " ");
    ts_buf_append(&c->pool, c->line.p, c->line.len);
    if (c->pool.err) c->failed = 1;
    c->msg_off[seq] = c->pool.len;
    return c->failed;
  }
  atomic_store_explicit(&c->t_in[seq], c->t_feed, memory_order_relaxed);
  if (ts_pub_send(c->pub, THREAD_ID, sizeof THREAD_ID - 1, seq, c->line.p, c->line.len)) {
    c->failed = 1;
    return 1;
  }
  return 0;
}

/* Runs turns through the tap until `n` events were emitted, pacing the feeds so that
 * events leave at `rate` per second (0 = as fast as possible). Returns the events. */
static uint64_t run_tap(pub_ctx *c, uint64_t n, double rate, uint64_t *t_start,
                        uint64_t *t_end) {
  static turn tr;
  static char work[32768];
  ts_tap_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.deltas = 1;
  rnd_state = 12345;
  c->seq = 0;
  uint64_t t0 = now_ns();
  *t_start = t0;
  for (unsigned k = 0; c->seq < n && !c->failed; k++) {
    make_turn(&tr, k);
    ts_tap *tap = NULL;
    if (ts_tap_new(&tap, &cfg, on_event, c) != TS_E_OK) die("ts_tap_new failed");
    size_t from = 0;
    for (size_t i = 0; i < tr.ncut && c->seq < n && !c->failed; i++) {
      size_t len = tr.cut[i] - from;
      memcpy(work, tr.buf + from, len);
      from = tr.cut[i];
      if (rate > 0) wait_until(t0 + (uint64_t)((double)c->seq * 1e9 / rate));
      c->t_feed = now_ns();
      ts_tap_feed(tap, work, len);
    }
    ts_tap_free(tap);
  }
  *t_end = now_ns();
  if (c->failed) die("publishing failed");
  return c->seq;
}

/* ---- subscribers ------------------------------------------------------------------ */

typedef struct run run;

typedef struct {
  run *r;
  int idx;
  ts_sub *sub;     /* toolstream */
  nng_socket sock; /* raw */
  uint64_t *lat;   /* ns per delivered event */
  uint64_t *lat_live; /* toolstream: ns per event delivered from a live message */
  uint64_t n, n_live, gone, live;
  ts_sub_stats st;
  uint64_t t_last;
  int err;
  pthread_t th;
} sub_ctx;

struct run {
  int raw, nsubs;
  _Atomic uint64_t *t_in;
  uint64_t cap;
  _Atomic int done;          /* the publisher finished */
  _Atomic uint64_t total;    /* events published (valid once done) */
  _Atomic uint64_t t_pub_end;
  _Atomic int pipes;         /* raw: subscribers connected to the pub socket */
  _Atomic int ready;         /* subscriber threads past their first sync */
  sub_ctx subs[MAX_SUBS];
};

static void *ts_sub_thread(void *arg) {
  sub_ctx *s = arg;
  run *r = s->r;
  ts_sub_item it;
  /* The first call asks replay what it holds; done before the publisher starts, so
   * that it does not find the first events in the history and fetch them from there. */
  if (ts_sub_next(s->sub, &it, 0) < 0) s->err = 1;
  atomic_fetch_add(&r->ready, 1);
  uint64_t replayed = 0;
  for (;;) {
    int rc = ts_sub_next(s->sub, &it, 100);
    uint64_t t = now_ns();
    if (rc < 0) {
      s->err = rc;
      break;
    }
    if (rc == 1 && it.kind == TS_SUB_EVENT) {
      if (it.seq < r->cap && s->n < r->cap) {
        uint64_t d = t - atomic_load_explicit(&r->t_in[it.seq], memory_order_relaxed);
        s->lat[s->n++] = d;
        ts_sub_get_stats(s->sub, &s->st);
        if (s->st.replayed == replayed) s->lat_live[s->n_live++] = d;
        replayed = s->st.replayed;
      }
      s->t_last = t;
    } else if (rc == 1 && it.kind == TS_SUB_GONE) {
      s->gone += it.seq_end - it.seq + 1;
    }
    if (atomic_load(&r->done)) {
      if (s->n + s->gone >= atomic_load(&r->total)) break;
      if (t > atomic_load(&r->t_pub_end) + (uint64_t)DRAIN_MS * 1000000u) break;
    }
  }
  ts_sub_get_stats(s->sub, &s->st);
  s->live = s->st.live;
  return NULL;
}

static void *raw_sub_thread(void *arg) {
  sub_ctx *s = arg;
  run *r = s->r;
  nng_socket_set_ms(s->sock, NNG_OPT_RECVTIMEO, 50);
  atomic_fetch_add(&r->ready, 1);
  for (;;) {
    nng_msg *m;
    int rv = nng_recvmsg(s->sock, &m, 0);
    uint64_t t;
    if (rv == 0) {
      const char *id, *json;
      size_t idlen, jlen;
      uint64_t seq;
      if (ts_bus_wire_split(nng_msg_body(m), nng_msg_len(m), &id, &idlen, &json, &jlen) ||
          ts_bus_json_seq(json, jlen, &seq)) {
        s->err = 1;
        nng_msg_free(m);
        break;
      }
      t = now_ns();
      if (seq < r->cap && s->n < r->cap)
        s->lat[s->n++] = t - atomic_load_explicit(&r->t_in[seq], memory_order_relaxed);
      s->t_last = t;
      nng_msg_free(m);
    } else if (rv == NNG_ETIMEDOUT) {
      t = now_ns();
    } else {
      s->err = rv;
      break;
    }
    if (atomic_load(&r->done)) {
      uint64_t end = atomic_load(&r->t_pub_end), quiet = (uint64_t)RAW_IDLE_MS * 1000000u;
      if (s->n >= atomic_load(&r->total)) break;
      if (t > end + quiet && t > s->t_last + quiet) break;
    }
  }
  s->live = s->n;
  return NULL;
}

static void on_raw_pipe(nng_pipe p, nng_pipe_ev ev, void *arg) {
  (void)p;
  run *r = arg;
  if (ev == NNG_PIPE_EV_ADD_POST) atomic_fetch_add(&r->pipes, 1);
  else if (ev == NNG_PIPE_EV_REM_POST) atomic_fetch_sub(&r->pipes, 1);
}

/* ---- one measurement --------------------------------------------------------------- */

typedef struct {
  uint64_t sent, delivered, lost_live, lost_after;
  double offered, delivered_rate; /* events/s: published; delivered to all subscribers */
  double p50, p99, p999;          /* us */
  double live_p50, live_p99;      /* toolstream: events delivered from live messages */
  uint64_t replayed, duplicates, requests;
  int errors, runs;
  /* sums over the runs of a cell, until settle() */
  uint64_t *v, *w, nv, nw; /* latency samples, ns: all; toolstream, live only */
  uint64_t pub_ns, deliver_ns;
} result;

static const char *const transports[2] = {"ipc", "tcp"};
static int url_counter;

static void make_url(int transport, char *out, size_t n) {
  if (transport == 0)
    snprintf(out, n, "ipc:///tmp/ts-busbench-%ld-%d", (long)getpid(), url_counter++);
  else
    snprintf(out, n, "tcp://127.0.0.1:0");
}

static void wait_connected(run *r) {
  uint64_t limit = now_ns() + 5000000000u;
  for (;;) {
    int ok = 1;
    if (r->raw) ok = atomic_load(&r->pipes) >= r->nsubs;
    else
      for (int i = 0; i < r->nsubs; i++) ok = ok && ts_sub_connected(r->subs[i].sub);
    if (ok) break;
    if (now_ns() > limit) die("subscribers did not connect within 5 s");
    sleep_ns(1000000);
  }
  sleep_ns(50000000); /* let the replay dialers and the pub side's pipes settle */
}

static double pct(const uint64_t *v, uint64_t n, double p) {
  if (!n) return 0;
  uint64_t k = (uint64_t)(p * (double)n + 0.999999);
  if (k < 1) k = 1;
  if (k > n) k = n;
  return (double)v[k - 1] / 1e3;
}

static void append(uint64_t **dst, uint64_t *n, const uint64_t *src, uint64_t k) {
  uint64_t *p = realloc(*dst, (*n + k + 1) * sizeof *p);
  if (!p) die("out of memory");
  memcpy(p + *n, src, k * sizeof *p);
  *dst = p;
  *n += k;
}

/* Joins the subscribers and adds this run's samples and counts to `res` (a cell may
 * be measured in more than one run; settle() turns the sums into the row). */
static void finish_run(run *r, uint64_t t_start, result *res) {
  uint64_t total = atomic_load(&r->total), t_last = t_start;
  for (int i = 0; i < r->nsubs; i++) {
    sub_ctx *s = &r->subs[i];
    pthread_join(s->th, NULL);
    if (s->err) res->errors++;
    res->lost_live += total - (s->live < total ? s->live : total);
    res->lost_after += total - (s->n < total ? s->n : total);
    if (s->t_last > t_last) t_last = s->t_last;
    res->replayed += s->st.replayed;
    res->duplicates += s->st.duplicates;
    res->requests += s->st.requests;
    append(&res->v, &res->nv, s->lat, s->n);
    append(&res->w, &res->nw, s->lat_live, s->n_live);
    free(s->lat);
    free(s->lat_live);
  }
  res->sent += total;
  res->pub_ns += atomic_load(&r->t_pub_end) - t_start;
  res->deliver_ns += t_last - t_start;
  res->runs++;
}

static void settle(result *res) {
  qsort(res->v, res->nv, sizeof *res->v, cmp_u64);
  qsort(res->w, res->nw, sizeof *res->w, cmp_u64);
  res->delivered = res->nv;
  res->p50 = pct(res->v, res->nv, 0.50);
  res->p99 = pct(res->v, res->nv, 0.99);
  res->p999 = pct(res->v, res->nv, 0.999);
  res->live_p50 = pct(res->w, res->nw, 0.50);
  res->live_p99 = pct(res->w, res->nw, 0.99);
  res->offered = res->pub_ns ? (double)res->sent * 1e9 / (double)res->pub_ns : 0;
  res->delivered_rate = res->deliver_ns ? (double)res->nv * 1e9 / (double)res->deliver_ns : 0;
  free(res->v);
  free(res->w);
  res->v = res->w = NULL;
}

static void start_subs(run *r) {
  for (int i = 0; i < r->nsubs; i++) {
    sub_ctx *s = &r->subs[i];
    s->r = r;
    s->idx = i;
    s->lat = malloc(r->cap * sizeof *s->lat);
    s->lat_live = malloc(r->cap * sizeof *s->lat_live);
    if (!s->lat || !s->lat_live) die("out of memory");
    if (pthread_create(&s->th, NULL, r->raw ? raw_sub_thread : ts_sub_thread, s))
      die("pthread_create failed");
  }
  while (atomic_load(&r->ready) < r->nsubs) sleep_ns(1000000);
}

static void run_toolstream(int transport, int nsubs, uint64_t n, double rate, result *res) {
  static run r;
  memset(&r, 0, sizeof r);
  r.nsubs = nsubs;
  r.cap = n + 16;
  r.t_in = calloc(r.cap, sizeof *r.t_in);
  if (!r.t_in) die("out of memory");
  char url[128], rurl[128];
  make_url(transport, url, sizeof url);
  make_url(transport, rurl, sizeof rurl);
  ts_pub *pub;
  if (ts_pub_open(url, rurl, NULL, &pub)) die(ts_bus_last_error());
  ts_sub_opts so;
  memset(&so, 0, sizeof so);
  so.from = TS_SUB_FROM_START;
  for (int i = 0; i < nsubs; i++)
    if (ts_sub_open(ts_pub_url(pub, 0), ts_pub_url(pub, 1), NULL, &so, &r.subs[i].sub))
      die(ts_bus_last_error());
  wait_connected(&r);
  start_subs(&r);

  pub_ctx c;
  memset(&c, 0, sizeof c);
  c.pub = pub;
  c.t_in = r.t_in;
  c.cap = r.cap;
  ts_buf_init(&c.line, 1u << 20);
  uint64_t t_start, t_end;
  uint64_t sent = run_tap(&c, n, rate, &t_start, &t_end);
  atomic_store(&r.total, sent);
  atomic_store(&r.t_pub_end, t_end);
  atomic_store(&r.done, 1);
  finish_run(&r, t_start, res);
  ts_buf_fini(&c.line);
  for (int i = 0; i < nsubs; i++) ts_sub_close(r.subs[i].sub);
  ts_pub_close(pub);
  free(r.t_in);
}

/* The messages toolstream published, recorded once. */
static ts_buf pool;
static size_t *msg_off;
static uint64_t pool_n;

static void record_pool(uint64_t n) {
  pub_ctx c;
  memset(&c, 0, sizeof c);
  c.cap = n + 16;
  c.msg_off = calloc(c.cap + 1, sizeof *c.msg_off);
  if (!c.msg_off) die("out of memory");
  ts_buf_init(&c.line, 1u << 20);
  ts_buf_init(&c.pool, (size_t)1 << 30);
  uint64_t a, b;
  pool_n = run_tap(&c, n, 0, &a, &b);
  ts_buf_fini(&c.line);
  pool = c.pool;
  msg_off = c.msg_off;
}

/* tap: produce the messages as the toolstream path does (the same tap and encoder on the
 * same SSE, the clock read before the feed), else send the pre-recorded bytes. */
static void run_raw(int transport, int nsubs, uint64_t n, double rate, int tap, result *res) {
  static run r;
  memset(&r, 0, sizeof r);
  if (n > pool_n) n = pool_n;
  r.raw = 1;
  r.nsubs = nsubs;
  r.cap = n + 16;
  r.t_in = calloc(r.cap, sizeof *r.t_in);
  if (!r.t_in) die("out of memory");
  char url[128];
  make_url(transport, url, sizeof url);
  nng_socket pub;
  nng_listener l;
  if (nng_pub0_open(&pub)) die("nng_pub0_open failed");
  nng_socket_set_int(pub, NNG_OPT_SENDBUF, QUEUE_DEPTH);
  nng_pipe_notify(pub, NNG_PIPE_EV_ADD_POST, on_raw_pipe, &r);
  nng_pipe_notify(pub, NNG_PIPE_EV_REM_POST, on_raw_pipe, &r);
  if (nng_listen(pub, url, &l, 0)) die("nng_listen failed");
  if (transport == 1) {
    int port;
    if (nng_listener_get_int(l, NNG_OPT_TCP_BOUND_PORT, &port)) die("no bound port");
    snprintf(url, sizeof url, "tcp://127.0.0.1:%d", port);
  }
  for (int i = 0; i < nsubs; i++) {
    nng_socket *s = &r.subs[i].sock;
    if (nng_sub0_open(s)) die("nng_sub0_open failed");
    nng_socket_set_int(*s, NNG_OPT_RECVBUF, QUEUE_DEPTH);
    nng_socket_set(*s, NNG_OPT_SUB_SUBSCRIBE, "", 0);
    if (nng_dial(*s, url, NULL, NNG_FLAG_NONBLOCK)) die("nng_dial failed");
  }
  wait_connected(&r);
  start_subs(&r);

  uint64_t t0, t_end;
  if (tap) {
    pub_ctx c;
    memset(&c, 0, sizeof c);
    c.raw = pub;
    c.is_raw = 1;
    c.t_in = r.t_in;
    c.cap = r.cap;
    ts_buf_init(&c.line, 1u << 20);
    n = run_tap(&c, n, rate, &t0, &t_end);
    ts_buf_fini(&c.line);
  } else {
    t0 = now_ns();
    for (uint64_t i = 0; i < n; i++) {
      if (rate > 0) wait_until(t0 + (uint64_t)((double)i * 1e9 / rate));
      const char *b = pool.p + msg_off[i];
      size_t len = msg_off[i + 1] - msg_off[i];
      atomic_store_explicit(&r.t_in[i + 1], now_ns(), memory_order_relaxed);
      nng_msg *m;
      if (nng_msg_alloc(&m, len)) die("nng_msg_alloc failed");
      memcpy(nng_msg_body(m), b, len);
      if (nng_sendmsg(pub, m, NNG_FLAG_NONBLOCK)) nng_msg_free(m);
    }
    t_end = now_ns();
  }
  atomic_store(&r.total, n);
  atomic_store(&r.t_pub_end, t_end);
  atomic_store(&r.done, 1);
  finish_run(&r, t0, res);
  for (int i = 0; i < nsubs; i++) nng_close(r.subs[i].sock);
  nng_close(pub);
  free(r.t_in);
}

/* ---- the report --------------------------------------------------------------------- */

static void fmt_count(char *out, size_t n, uint64_t lost, uint64_t of) {
  if (!lost) snprintf(out, n, "0");
  else snprintf(out, n, "%" PRIu64 " (%.1f%%)", lost, 100.0 * (double)lost / (double)of);
}

static void row(const char *tr, int subs, const char *rate, const char *impl, const result *x) {
  char a[48], b[48];
  fmt_count(a, sizeof a, x->lost_live, x->sent * (uint64_t)subs);
  fmt_count(b, sizeof b, x->lost_after, x->sent * (uint64_t)subs);
  printf("| %s | %d | %s | %s | %" PRIu64 " | %.0f | %.0f | %.0f | %.0f | %.0f | %s | %s |%s\n",
         tr, subs, rate, impl, x->sent, x->offered, x->p50, x->p99, x->p999, x->delivered_rate, a,
         b, x->errors ? " (subscriber errors)" : "");
  fflush(stdout);
}

/* The split of the toolstream rows by how the events arrived. */
static void split_row(const char *tr, int subs, const char *rate, const result *t) {
  printf("| %s | %d | %s | %.0f | %.0f | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " |\n", tr, subs,
         rate, t->live_p50, t->live_p99, t->replayed, t->duplicates, t->requests);
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: bus_bench [--quick] [--runs N] [--cell TRANSPORT:SUBS] [--catchup]\n"
          "  --quick       0.5 s paced, 10,000 / 5,000 events at saturation per run\n"
          "  --runs N      measure every cell N times (1..%d, default 1), interleaved with\n"
          "                raw nng in each run; with N > 1 the summary gives per cell the N\n"
          "                p99 ratios, their median and spread, and the verdict\n"
          "  --cell T:S    only transport T (ipc, tcp) with S subscribers (1, 8)\n"
          "  --catchup     instead: a late subscriber catching up 50,000 events from the\n"
          "                history (per transport, --runs times; --cell picks the transport)\n"
          "The verdict compares with raw nng fed by the same tap and encoder; raw nng\n"
          "sending the recorded bytes is printed beside it as a reference.\n"
          "Exit status 1 when a subscriber failed; a missed target only prints NOT MET.\n",
          RUNS_MAX);
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(const double *v, int n) {
  double s[RUNS_MAX];
  memcpy(s, v, (size_t)n * sizeof *s);
  qsort(s, (size_t)n, sizeof *s, cmp_dbl);
  return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static void min_max(const double *v, int n, double *lo, double *hi) {
  *lo = *hi = v[0];
  for (int i = 1; i < n; i++) {
    if (v[i] < *lo) *lo = v[i];
    if (v[i] > *hi) *hi = v[i];
  }
}

/* The verdict of one cell over its runs. Five ratios that all sit on one side of the
 * bound decide it whatever the noise. When they straddle it, the median decides unless
 * the baseline itself was not reproducible: raw nng's own p99 moving by more than
 * NOISE_MAX (max / min over the runs) means the machine's load, not the code, chose
 * which runs landed on which side, and the cell is UNMEASURABLE on this run. */
#define BOUND 1.5
#define NOISE_MAX 2.0

static const char *verdict(const double *ratio, const double *base_p99, int n) {
  double lo, hi, blo, bhi;
  min_max(ratio, n, &lo, &hi);
  min_max(base_p99, n, &blo, &bhi);
  if (hi <= BOUND) return "MET";
  if (lo > BOUND) return "NOT MET";
  if (blo <= 0 || bhi / blo > NOISE_MAX) return "UNMEASURABLE";
  return median(ratio, n) <= BOUND ? "MET" : "NOT MET";
}

static void print_list(const double *v, int n, const char *fmt) {
  for (int i = 0; i < n; i++) {
    if (i) putchar(',');
    printf(fmt, v[i]);
  }
}

/* A late subscriber's catch-up: `n` events published through the tap with nobody
 * subscribed (they stay in the publisher's history), then one ts_sub from the start,
 * timed from ts_sub_open to the n-th event in its hands. Everything comes from replay, in
 * answers of up to replay_max_events; nothing is live meanwhile. Returns the time in ns,
 * the replay requests in *requests and the events in *events (n, or the few more the
 * last feed gave); dies on a lost event or a socket error. */
static uint64_t run_catchup(int transport, uint64_t n, uint64_t *requests, uint64_t *events) {
  char url[128], rurl[128];
  make_url(transport, url, sizeof url);
  make_url(transport, rurl, sizeof rurl);
  ts_pub *pub;
  if (ts_pub_open(url, rurl, NULL, &pub)) die(ts_bus_last_error());
  static _Atomic uint64_t *t_in;
  pub_ctx c;
  memset(&c, 0, sizeof c);
  c.pub = pub;
  c.cap = n + 16;
  c.t_in = t_in = calloc(c.cap, sizeof *t_in);
  if (!t_in) die("out of memory");
  ts_buf_init(&c.line, 1u << 20);
  uint64_t t_start, t_end;
  n = run_tap(&c, n, 0, &t_start, &t_end); /* (the last feed may give a few more) */
  ts_sub_opts so;
  memset(&so, 0, sizeof so);
  so.from = TS_SUB_FROM_START;
  ts_sub *sub;
  uint64_t t0 = now_ns(), got = 0;
  if (ts_sub_open(ts_pub_url(pub, 0), ts_pub_url(pub, 1), NULL, &so, &sub)) die(ts_bus_last_error());
  ts_sub_item it;
  while (got < n) {
    int rc = ts_sub_next(sub, &it, 10000);
    if (rc < 0) die("the catch-up's subscriber failed");
    if (rc == 0) die("the catch-up stalled for 10 s");
    if (it.kind == TS_SUB_GONE) die("the catch-up lost events");
    if (it.kind == TS_SUB_EVENT) {
      if (it.seq != got + 1) die("the catch-up delivered out of order");
      got++;
    }
  }
  uint64_t dt = now_ns() - t0;
  ts_sub_stats st;
  ts_sub_get_stats(sub, &st);
  *requests = st.requests;
  *events = n;
  ts_sub_close(sub);
  ts_pub_close(pub);
  ts_buf_fini(&c.line);
  free(t_in);
  return dt;
}

/* --catchup: run_catchup `runs` times per transport, one row each and the median. */
static int catchup_report(int only_tr, int runs) {
  static const uint64_t n = 50000;
  printf("catch-up: %" PRIu64 " events in the history, one subscriber from the start, "
         "timed from ts_sub_open to the last event delivered\n\n", n);
  printf("| transport | runs (ms) | median ms | median events/s | replay requests |\n"
         "|---|---|---:|---:|---:|\n");
  for (int tr = 0; tr < 2; tr++) {
    if (only_tr >= 0 && tr != only_tr) continue;
    double ms[RUNS_MAX];
    uint64_t req = 0, got = n;
    for (int k = 0; k < runs; k++) ms[k] = (double)run_catchup(tr, n, &req, &got) / 1e6;
    double med = median(ms, runs);
    printf("| %s | ", transports[tr]);
    print_list(ms, runs, "%.1f");
    printf(" | %.1f | %.0f | %" PRIu64 " |\n", med, (double)got / (med / 1e3), req);
    printf("CATCHUP transport=%s events=%" PRIu64 " runs=%d median_ms=%.2f requests=%" PRIu64 "\n",
           transports[tr], got, runs, med, req);
    fflush(stdout);
  }
  return 0;
}

int main(int argc, char **argv) {
  int quick = 0, runs = 1, only_tr = -1, only_subs = 0, catchup = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) {
      quick = 1;
    } else if (!strcmp(argv[i], "--catchup")) {
      catchup = 1;
    } else if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
      char *end;
      long v = strtol(argv[++i], &end, 10);
      if (*end || v < 1 || v > RUNS_MAX) {
        fprintf(stderr, "bus_bench: --runs wants 1..%d, not \"%s\"\n", RUNS_MAX, argv[i]);
        return 2;
      }
      runs = (int)v;
    } else if (!strcmp(argv[i], "--cell") && i + 1 < argc) {
      const char *c = argv[++i];
      if (!strcmp(c, "ipc:1") || !strcmp(c, "ipc:8")) only_tr = 0;
      else if (!strcmp(c, "tcp:1") || !strcmp(c, "tcp:8")) only_tr = 1;
      else {
        fprintf(stderr, "bus_bench: --cell wants ipc:1, ipc:8, tcp:1 or tcp:8, not \"%s\"\n", c);
        return 2;
      }
      only_subs = c[4] - '0';
    } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "bus_bench: unknown argument \"%s\"\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  if (catchup) return catchup_report(only_tr, runs);
  /* Saturation with 8 subscribers runs at a few thousand events/s on 2 CPUs: fewer
   * events keep the step within its time. */
  uint64_t paced_n = quick ? 5000 : (uint64_t)(2 * PACED_RATE), sat_n = quick ? 10000 : 50000,
           sat8_n = quick ? 5000 : 20000;
  char la[64];
  loadavg(la, sizeof la);
  calibrate_sleep();
  record_pool(sat_n > paced_n ? sat_n : paced_n);
  size_t minb = (size_t)-1, maxb = 0;
  for (uint64_t i = 0; i < pool_n; i++) {
    size_t len = msg_off[i + 1] - msg_off[i];
    if (len < minb) minb = len;
    if (len > maxb) maxb = len;
  }
#ifdef TS_BENCH_CC
  printf("compiler: %s; flags: %s\n", TS_BENCH_CC, TS_BENCH_CFLAGS);
#endif
  printf("load average before: %s\n", la);
  printf("messages: %" PRIu64 " recorded, %.0f bytes on average (%zu..%zu), \"<thread> <event JSON>\"\n",
         pool_n, (double)pool.len / (double)pool_n, minb, maxb);
  printf("paced: %.0f events/s, %" PRIu64 " events in two runs per implementation "
         "(toolstream, raw same tap, raw recorded, raw recorded, raw same tap, toolstream); "
         "saturation: one run of %" PRIu64 " events (%" PRIu64 " with 8 subscribers) each; pacing spins the last %.0f us (nanosleep overshoot p95 %.0f us)\n",
         PACED_RATE, paced_n, sat_n, sat8_n, (double)spin_ns / 1e3, (double)overshoot_ns / 1e3);
  printf("queues: %d messages per subscriber (pub SENDBUF and sub RECVBUF, both paths)\n",
         QUEUE_DEPTH);
  printf("runs: %d (every cell once per run, toolstream and raw nng side by side)\n", runs);
  fflush(stdout);

  static const int subs_of[2] = {1, 8};
  /* run, transport, subs, paced/saturation, implementation: 0 toolstream, 1 raw nng
   * through the same tap (the verdict's baseline), 2 raw nng with the recorded bytes
   * (paced: at 10k/s; saturation: as fast as it goes), 3 (saturation) the recorded bytes
   * paced at toolstream's rate (2 and 3: reference rows, the earlier baselines) */
  static result res[RUNS_MAX][2][2][2][4];
  memset(res, 0, sizeof res);
  int errors = 0;
  for (int k = 0; k < runs; k++) {
    loadavg(la, sizeof la);
    printf("\nrun %d of %d (load average %s):\n\n", k + 1, runs, la);
    printf("| transport | subs | rate | implementation | events | offered ev/s | p50 us | p99 us "
           "| p99.9 us | delivered ev/s (all subs) | lost before replay | lost after replay |\n");
    printf("|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    fflush(stdout);
    for (int tr = 0; tr < 2; tr++)
      for (int si = 0; si < 2; si++) {
        int ns = subs_of[si];
        if ((only_tr >= 0 && tr != only_tr) || (only_subs && ns != only_subs)) continue;
        uint64_t sat = si ? sat8_n : sat_n;
        result *p = res[k][tr][si][0], *s = res[k][tr][si][1];
        /* Paced: toolstream, raw nng through the same tap, raw nng sending the recorded
         * bytes (the reference row), then the same backwards, so that a change in the
         * machine's load during the cell weighs on all alike. */
        run_toolstream(tr, ns, paced_n / 2, PACED_RATE, &p[0]);
        run_raw(tr, ns, paced_n / 2, PACED_RATE, 1, &p[1]);
        run_raw(tr, ns, paced_n / 2, PACED_RATE, 0, &p[2]);
        run_raw(tr, ns, paced_n / 2, PACED_RATE, 0, &p[2]);
        run_raw(tr, ns, paced_n / 2, PACED_RATE, 1, &p[1]);
        run_toolstream(tr, ns, paced_n / 2, PACED_RATE, &p[0]);
        for (int i = 0; i < 3; i++) settle(&p[i]);
        row(transports[tr], ns, "10k/s", "toolstream", &p[0]);
        row(transports[tr], ns, "10k/s", "raw nng, same tap", &p[1]);
        row(transports[tr], ns, "10k/s", "raw nng, recorded bytes (reference)", &p[2]);
        /* Saturation: both publishers run the same tap and encoder as fast as they go
         * (the verdict's pair), then two reference rows with the recorded bytes: as fast
         * as pub0 takes them, and paced at the rate toolstream reached. */
        run_toolstream(tr, ns, sat, 0, &s[0]);
        settle(&s[0]);
        row(transports[tr], ns, "max", "toolstream", &s[0]);
        run_raw(tr, ns, sat, 0, 1, &s[1]);
        settle(&s[1]);
        row(transports[tr], ns, "max", "raw nng, same tap", &s[1]);
        run_raw(tr, ns, sat, 0, 0, &s[2]);
        settle(&s[2]);
        row(transports[tr], ns, "max", "raw nng, recorded bytes (reference)", &s[2]);
        run_raw(tr, ns, sat, s[0].offered, 0, &s[3]);
        settle(&s[3]);
        char label[48];
        snprintf(label, sizeof label, "%.1fk/s", s[0].offered / 1e3);
        row(transports[tr], ns, label, "raw nng, recorded bytes at toolstream's max (reference)",
            &s[3]);
        for (int i = 0; i < 4; i++) errors += p[i].errors + s[i].errors;
      }
    printf("\ntoolstream rows of run %d, split by how the events arrived (live message or "
           "replay answer):\n\n", k + 1);
    printf("| transport | subs | rate | live p50 us | live p99 us | replayed events | live "
           "duplicates dropped | replay requests |\n|---|---:|---|---:|---:|---:|---:|---:|\n");
    for (int tr = 0; tr < 2; tr++)
      for (int si = 0; si < 2; si++)
        for (int rt = 0; rt < 2; rt++)
          if (res[k][tr][si][rt][0].runs)
            split_row(transports[tr], subs_of[si], rt ? "max" : "10k/s", &res[k][tr][si][rt][0]);
  }
  loadavg(la, sizeof la);
  printf("\nlatency: from the input going into ts_tap_feed (raw nng with the recorded bytes: "
         "from the send) to the "
         "subscriber holding the event and its seq; all subscribers' samples, nearest rank.\n");
  printf("lost: summed over the subscribers (%% of events x subscribers); raw nng has no "
         "replay, so its losses stay, and lost messages have no latency sample.\n");
  printf("load average after: %s\n\n", la);
  printf("targets: p99 within %.1fx of raw nng at the same rate, per cell over %d run%s "
         "(ratio = toolstream p99 / the p99 of raw nng fed by the same tap in the same run; "
         "the reference column divides by raw nng sending the recorded bytes: at 10k/s, and "
         "at saturation paced at toolstream's rate, the earlier baseline). MET / NOT MET when every "
         "ratio is on one side of %.1f; otherwise the median decides, unless raw nng's own "
         "p99 moved by more than %.1fx (max / min) over the runs: UNMEASURABLE.\n\n",
         BOUND, runs, runs > 1 ? "s" : "", BOUND, NOISE_MAX);
  printf("| transport | subs | rate | p99 ratios (run 1..%d) | median | min-max | toolstream p99 "
         "ms | raw nng p99 ms | raw p99 spread | raw nng lost | toolstream lost after replay | "
         "verdict | reference ratios (recorded bytes) | reference median |\n"
         "|---|---:|---|---|---:|---|---|---|---:|---:|---:|---|---|---:|\n", runs);
  char mr[2][2][2][1024];
  for (int tr = 0; tr < 2; tr++)
    for (int si = 0; si < 2; si++)
      for (int rt = 0; rt < 2; rt++) {
        if (!res[0][tr][si][rt][0].runs) continue;
        double ratio[RUNS_MAX], tp[RUNS_MAX], bp[RUNS_MAX], ref[RUNS_MAX];
        uint64_t raw_lost = 0, raw_of = 0, ts_lost = 0;
        for (int k = 0; k < runs; k++) {
          const result *t = &res[k][tr][si][rt][0], *b = &res[k][tr][si][rt][1],
                       *o = &res[k][tr][si][rt][rt ? 3 : 2];
          ref[k] = o->p99 > 0 ? t->p99 / o->p99 : 1e9;
          tp[k] = t->p99 / 1e3;
          bp[k] = b->p99 / 1e3;
          ratio[k] = b->p99 > 0 ? t->p99 / b->p99 : 1e9;
          raw_lost += b->lost_after;
          raw_of += b->sent * (uint64_t)subs_of[si];
          ts_lost += t->lost_after;
        }
        double med = median(ratio, runs), lo, hi, blo, bhi;
        min_max(ratio, runs, &lo, &hi);
        min_max(bp, runs, &blo, &bhi);
        const char *v = verdict(ratio, bp, runs);
        const char *rate = rt ? "max" : "10k/s";
        printf("| %s | %d | %s | ", transports[tr], subs_of[si], rate);
        print_list(ratio, runs, "%.2f");
        printf(" | %.2f | %.2f-%.2f | ", med, lo, hi);
        print_list(tp, runs, "%.2f");
        printf(" | ");
        print_list(bp, runs, "%.2f");
        printf(" | %.1fx | %.1f%% | %" PRIu64 " | %s | ", blo > 0 ? bhi / blo : 0,
               raw_of ? 100.0 * (double)raw_lost / (double)raw_of : 0, ts_lost, v);
        print_list(ref, runs, "%.2f");
        printf(" | %.2f |\n", median(ref, runs));
        /* the machine-readable line, printed after the table */
        int n = snprintf(mr[tr][si][rt], sizeof mr[tr][si][rt],
                         "BUSCELL transport=%s subs=%d rate=%s runs=%d median=%.3f min=%.3f "
                         "max=%.3f raw_p99_spread=%.3f raw_lost_pct=%.2f ts_lost_after=%" PRIu64
                         " verdict=%s ref_median=%.3f ratios=",
                         transports[tr], subs_of[si], rt ? "max" : "10k", runs, med, lo, hi,
                         blo > 0 ? bhi / blo : 0,
                         raw_of ? 100.0 * (double)raw_lost / (double)raw_of : 0, ts_lost, v,
                         median(ref, runs));
        for (int k = 0; k < runs && n > 0 && (size_t)n < sizeof mr[tr][si][rt] - 16; k++)
          n += snprintf(mr[tr][si][rt] + n, sizeof mr[tr][si][rt] - (size_t)n, "%s%.3f",
                        k ? "," : "", ratio[k]);
      }
  printf("\n");
  for (int tr = 0; tr < 2; tr++)
    for (int si = 0; si < 2; si++)
      for (int rt = 0; rt < 2; rt++)
        if (res[0][tr][si][rt][0].runs) printf("%s\n", mr[tr][si][rt]);
  for (int tr = 0; tr < 2; tr++) {
    if (!res[0][tr][1][0][0].runs) continue;
    uint64_t lost = 0, of = 0;
    for (int k = 0; k < runs; k++) {
      lost += res[k][tr][1][0][0].lost_after;
      of += res[k][tr][1][0][0].sent * 8;
    }
    printf("zero lost after replay at 10k/s to 8 subscribers, %s: %s (%" PRIu64 " lost of %" PRIu64
           " over %d run%s)\n",
           transports[tr], lost ? "NOT MET" : "MET", lost, of, runs, runs > 1 ? "s" : "");
  }
  ts_buf_fini(&pool);
  free(msg_off);
  return errors ? 1 : 0;
}
