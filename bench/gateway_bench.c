/*
 * gateway_bench.c: `toolstream gateway` side by side with nginx, on the same paced load.
 *
 * One process plays both ends on one libevent loop: an upstream that streams OpenAI
 * Chat tool-call chunks paced like a model (RATE chunks per second per stream, random
 * phase, HTTP/1.1 keep-alive so a proxy's upstream pool can reuse its connections), and
 * N concurrent clients that read them. Each chunk carries the monotonic time at which
 * the upstream wrote it; a client takes the time when it has read the chunk, so latency
 * = read time - write time, measured on one clock in one thread.
 *
 * A cell is one proxy at one stream count. For every stream count, in the same run and
 * one after another: "direct" (the clients connect straight to the upstream: what the
 * loopback, the kernel and this process cost, the baseline), nginx with 1 and 2 workers
 * (Debian's, configured as nginx documents for SSE: proxy_buffering off, HTTP/1.1 to an
 * upstream block with keepalive; a generated config in a temp directory, run
 * unprivileged, see nginx_start), the gateway without its tap (no --pub: it then
 * forwards only) and with it (--pub ipc://), and, when the binary has --workers, the
 * same two with 2 workers. Each proxy is started fresh for its cell, so its peak RSS
 * (VmHWM) is that cell's.
 *
 * What a cell reports:
 *   - added latency at p50 / p99 / p99.9: the cell's percentile minus the direct run's
 *     percentile at the same stream count, same run (the distributions are compared, not
 *     chunk by chunk);
 *   - CPU per forwarded chunk, user and system separately: utime / stime from
 *     /proc/PID/stat of every process of the proxy (nginx: master + workers summed)
 *     over the phase, divided by the chunks the clients read; the clock-tick counts are
 *     coarse (10 ms), so the total is also taken from /proc/PID/task/T/schedstat (ns);
 *   - peak RSS: VmHWM summed over the proxy's processes;
 *   - streams completed and corrupted: every chunk is regenerated from its stream, index
 *     and time fields and compared byte for byte; every stream must complete.
 * Then, per proxy: RSS per idle stream (N streams, then nothing for a second: VmRSS
 * delta / N; once waiting for the reply, its head received, and once paused inside it,
 * head and first chunk received), and system calls per chunk from a separate,
 * smaller run with `strace -c -f -p` attached to the proxy's processes (call counts do
 * not depend on timing, except epoll_wait, which one wake-up shares among all the
 * streams ready at once: fewer per chunk the busier the proxy).
 *
 * Output: markdown tables, the targets of issue 19 item 1 (MET / NOT MET / not measured),
 * and one machine-readable line per cell ("cell\tkey=value\t...") on standard output and
 * in --tsv FILE. Without nginx the nginx cells are skipped, said so on every table, and
 * the ratios read "-".
 *
 * Usage: gateway_bench TOOLSTREAM_BINARY [options], see usage() below.
 * Exit status 0 when every stream of every direct and gateway cell completed
 * uncorrupted; 1 when one did not or a proxy could not be started; 2 for usage errors.
 * nginx's lost streams are a finding about nginx (its listen queue at 5,000 streams with
 * one worker), printed, not a failure of the run.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

static struct event_base *base;
static int nstreams, nchunks = 250, rate = 50;
/* --pin: the bench (load generator and clients, one thread) on the first CPU it may use,
 * every proxy on the others, so that a proxy never waits for the bench's CPU */
static int pin;
static cpu_set_t proxy_cpus;
static void pin_child(void) {
  if (pin && sched_setaffinity(0, sizeof proxy_cpus, &proxy_cpus)) _exit(126);
}
/* Idle streams: 1, the upstream answers with the head only (a model that has not started);
 * 2, the head and the first chunk, then nothing (a model pausing inside a tool call). */
static int idle_mode;
/* Past a stream's paced length, before unfinished ones count. 5,000 streams (250,000
 * chunks/s) take this 2-vCPU machine about 40 s for 5 paced seconds, every proxy alike and
 * direct too: a deadline of 30 s called them unfinished, and "no stream lost" could not be
 * told. A run ends as soon as every stream has; a stream that stalls still counts as
 * unfinished, only later. */
static int deadline_s = 120;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) && errno == EINTR) {
  }
}

/* ---- the stream's chunks ------------------------------------------------------------- */

#define FRAG "lorem ipsum dolor sit amet, consectetur"

/* SSE event number i (0-based) of stream s, stamped t. */
static int make_event(char *out, size_t cap, int s, int i, uint64_t t) {
  if (i == 0)
    return snprintf(out, cap,
                    "data: {\"s\":%d,\"i\":%d,\"t\":%llu,\"choices\":[{\"index\":0,\"delta\":{"
                    "\"tool_calls\":[{\"index\":0,\"id\":\"call_%d\",\"type\":\"function\","
                    "\"function\":{\"name\":\"write_file\",\"arguments\":\"{\\\"description\\\": "
                    "\\\"bench %d\\\", \\\"content\\\": \\\"\"}}]}}]}\n\n",
                    s, i, (unsigned long long)t, s, s);
  if (i == nchunks - 1)
    return snprintf(out, cap,
                    "data: {\"s\":%d,\"i\":%d,\"t\":%llu,\"choices\":[{\"index\":0,\"delta\":{"
                    "\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"}\"}}]},"
                    "\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n",
                    s, i, (unsigned long long)t);
  return snprintf(out, cap,
                  "data: {\"s\":%d,\"i\":%d,\"t\":%llu,\"choices\":[{\"index\":0,\"delta\":{"
                  "\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"" FRAG "\"}}]}}]}\n\n",
                  s, i, (unsigned long long)t);
}

/* ---- upstream ------------------------------------------------------------------------ */

/* One upstream connection. It serves requests one after another (keep-alive): a proxy
 * with an upstream pool sends the next request on the same connection once a reply has
 * ended, so the request is parsed whole (head + Content-Length body) each time. */
typedef struct up_conn {
  struct bufferevent *bev;
  struct event *timer;
  int s, i, streaming;
  struct up_conn *prev, *next; /* every open one, to free them all at the end */
} up_conn;

static up_conn *up_all;

#define UP_MAX_REQUEST 16384 /* our clients send about 150 bytes; past this, a bug */

static void up_free(up_conn *u) {
  if (u->prev) u->prev->next = u->next;
  else up_all = u->next;
  if (u->next) u->next->prev = u->prev;
  if (u->timer) event_free(u->timer);
  bufferevent_free(u->bev);
  free(u);
}

static void up_request(up_conn *u);

static void up_tick(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  up_conn *u = arg;
  char ev[1024], frame[1100];
  int n = make_event(ev, sizeof ev, u->s, u->i, now_ns());
  int m = snprintf(frame, sizeof frame, "%x\r\n%s\r\n", n, ev);
  /* straight to the socket when nothing is queued: the stamp is the write */
  struct evbuffer *out = bufferevent_get_output(u->bev);
  ssize_t w = evbuffer_get_length(out) ? 0 : send(bufferevent_getfd(u->bev), frame, (size_t)m, MSG_NOSIGNAL);
  if (w < 0) w = 0;
  if (w < m) bufferevent_write(u->bev, frame + w, (size_t)(m - w));
  if (++u->i == nchunks) {
    bufferevent_write(u->bev, "0\r\n\r\n", 5);
    u->streaming = 0; /* the reply is complete: the connection may carry another */
    up_request(u);
    return;
  }
  struct timeval tv = {0, 1000000 / rate};
  evtimer_add(u->timer, &tv);
}

/* Starts the reply to the request at the front of the input, if it is all there. */
static void up_request(up_conn *u) {
  struct evbuffer *in = bufferevent_get_input(u->bev);
  struct evbuffer_ptr e = evbuffer_search(in, "\r\n\r\n", 4, NULL);
  size_t len = evbuffer_get_length(in);
  if (e.pos < 0) {
    if (len > UP_MAX_REQUEST) up_free(u);
    return;
  }
  char head[UP_MAX_REQUEST + 1];
  size_t hn = (size_t)e.pos + 4;
  if (hn > UP_MAX_REQUEST) {
    up_free(u);
    return;
  }
  evbuffer_copyout(in, head, hn);
  head[hn] = '\0';
  const char *cl = strcasestr(head, "\r\ncontent-length:");
  size_t body = cl ? strtoul(cl + 17, NULL, 10) : 0;
  if (body > UP_MAX_REQUEST) {
    up_free(u);
    return;
  }
  if (len < hn + body) return;
  evbuffer_drain(in, hn + body);
  /* the stream id travels in the path: /v1/chat/completions?s=N */
  const char *q = strstr(head, "?s=");
  u->s = q ? atoi(q + 3) : -1;
  u->i = 0;
  u->streaming = 1;
  static const char reply[] =
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
      "Transfer-Encoding: chunked\r\n\r\n";
  bufferevent_write(u->bev, reply, sizeof reply - 1);
  if (idle_mode == 1) return; /* a model that has not started answering */
  if (idle_mode == 2) {          /* one chunk, then a pause */
    char ev[1024], frame[1100];
    int n = make_event(ev, sizeof ev, u->s, 0, now_ns());
    int m = snprintf(frame, sizeof frame, "%x\r\n%s\r\n", n, ev);
    bufferevent_write(u->bev, frame, (size_t)m);
    return;
  }
  if (!u->timer) u->timer = evtimer_new(base, up_tick, u);
  struct timeval tv = {0, (suseconds_t)(random() % (1000000 / rate))}; /* random phase */
  evtimer_add(u->timer, &tv);
}

static void up_read(struct bufferevent *bev, void *arg) {
  up_conn *u = arg;
  if (!u->streaming) {
    up_request(u);
    return;
  }
  /* nothing is pipelined behind a request whose reply streams; cap what may wait */
  if (evbuffer_get_length(bufferevent_get_input(bev)) > UP_MAX_REQUEST) up_free(u);
}

static void up_event(struct bufferevent *bev, short what, void *arg) {
  (void)bev;
  if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) up_free(arg);
}

static void up_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int sl,
                      void *arg) {
  (void)l;
  (void)sa;
  (void)sl;
  (void)arg;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  up_conn *u = calloc(1, sizeof *u);
  if (!u) {
    close(fd);
    return;
  }
  u->bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
  u->next = up_all;
  if (up_all) up_all->prev = u;
  up_all = u;
  bufferevent_setcb(u->bev, up_read, NULL, up_event, u);
  bufferevent_enable(u->bev, EV_READ);
}

/* ---- clients ------------------------------------------------------------------------- */

typedef struct {
  struct bufferevent *bev;
  int s, next_i, headers_done, done, bad;
  struct evbuffer *body; /* de-chunked bytes not yet parsed into events */
  size_t chunk_left;     /* bytes left in the current HTTP chunk (+2 for its CRLF) */
  int in_chunk;
  int idle_counted; /* idle mode 2: its first chunk has arrived */
} client;

static client *clients;
static uint64_t *samples;
static size_t nsamples, samples_cap;
static int completed, corrupted, failed, open_clients, idle_ready;
static int target_port;

static void client_fail(client *c, const char *why) {
  if (c->done) return;
  c->done = 1;
  c->bad = 1;
  failed++;
  open_clients--;
  if (failed <= 5) fprintf(stderr, "  stream %d: %s (at chunk %d)\n", c->s, why, c->next_i);
  bufferevent_free(c->bev);
  c->bev = NULL;
  if (!open_clients) event_base_loopexit(base, NULL);
}

/* Parses complete SSE events out of c->body. */
static void parse_events(client *c, uint64_t t_read) {
  for (;;) {
    size_t len = evbuffer_get_length(c->body);
    if (!len) return;
    struct evbuffer_ptr e = evbuffer_search(c->body, "\n\n", 2, NULL);
    if (e.pos < 0) return;
    size_t n = (size_t)e.pos + 2;
    int last = c->next_i == nchunks - 1;
    if (last) { /* the last chunk holds two events */
      struct evbuffer_ptr d = evbuffer_search(c->body, "data: [DONE]\n\n", 14, NULL);
      if (d.pos < 0) return;
      n = (size_t)d.pos + 14;
    }
    char ev[1200];
    if (n >= sizeof ev || c->next_i >= nchunks) {
      client_fail(c, "event too long, or more events than sent");
      return;
    }
    evbuffer_remove(c->body, ev, n);
    ev[n] = '\0';
    const char *tp = strstr(ev, "\"t\":");
    uint64_t t = tp ? strtoull(tp + 4, NULL, 10) : 0;
    char want[1200];
    int wn = make_event(want, sizeof want, c->s, c->next_i, t);
    if ((size_t)wn != n || memcmp(want, ev, n)) {
      corrupted++;
      client_fail(c, "corrupted chunk");
      return;
    }
    if (nsamples < samples_cap) samples[nsamples++] = t_read - t;
    if (++c->next_i == nchunks) return;
  }
}

static void client_read(struct bufferevent *bev, void *arg) {
  client *c = arg;
  uint64_t t_read = now_ns();
  struct evbuffer *in = bufferevent_get_input(bev);
  if (!c->headers_done) {
    struct evbuffer_ptr e = evbuffer_search(in, "\r\n\r\n", 4, NULL);
    if (e.pos < 0) {
      if (evbuffer_get_length(in) > 4096) client_fail(c, "response head too long");
      return;
    }
    char head[4096];
    size_t hn = (size_t)e.pos + 4;
    if (hn >= sizeof head) {
      client_fail(c, "response head too long");
      return;
    }
    evbuffer_remove(in, head, hn);
    head[hn] = '\0';
    if (strncmp(head, "HTTP/1.1 200", 12) || !strcasestr(head, "chunked")) {
      char *eol = strstr(head, "\r\n");
      if (eol) *eol = '\0';
      client_fail(c, "bad response head");
      if (failed <= 5) fprintf(stderr, "    (%s)\n", head);
      return;
    }
    c->headers_done = 1;
    if (idle_mode == 1) {
      if (++idle_ready == nstreams) event_base_loopexit(base, NULL);
      return;
    }
  }
  for (;;) { /* de-chunk */
    if (!c->in_chunk) {
      struct evbuffer_ptr e = evbuffer_search(in, "\r\n", 2, NULL);
      if (e.pos < 0) break;
      char line[32];
      if (e.pos >= (ssize_t)sizeof line) {
        client_fail(c, "bad chunk line");
        return;
      }
      evbuffer_remove(in, line, (size_t)e.pos + 2);
      line[e.pos] = '\0';
      size_t sz = strtoul(line, NULL, 16);
      if (sz == 0) {
        parse_events(c, t_read);
        if (c->done) return;
        if (c->next_i != nchunks) {
          client_fail(c, "stream ended early");
          return;
        }
        c->done = 1;
        completed++;
        open_clients--;
        bufferevent_free(c->bev);
        c->bev = NULL;
        if (!open_clients) event_base_loopexit(base, NULL);
        return;
      }
      c->chunk_left = sz + 2;
      c->in_chunk = 1;
    }
    size_t avail = evbuffer_get_length(in);
    if (!avail) break;
    size_t take = avail < c->chunk_left ? avail : c->chunk_left;
    size_t data = c->chunk_left > 2 ? c->chunk_left - 2 : 0;
    if (data > take) data = take;
    evbuffer_remove_buffer(in, c->body, data);
    evbuffer_drain(in, take - data); /* CRLF after the data */
    c->chunk_left -= take;
    if (!c->chunk_left) c->in_chunk = 0;
  }
  if (evbuffer_get_length(c->body) > 65536) {
    client_fail(c, "no event boundary in 64 KiB");
    return;
  }
  parse_events(c, t_read);
  if (idle_mode == 2 && !c->done && c->next_i == 1 && !c->idle_counted) {
    c->idle_counted = 1;
    if (++idle_ready == nstreams) event_base_loopexit(base, NULL);
  }
}

static void client_event(struct bufferevent *bev, short what, void *arg) {
  (void)bev;
  client *c = arg;
  if (what & BEV_EVENT_CONNECTED) {
    int one = 1;
    setsockopt(bufferevent_getfd(c->bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char req[256];
    int n = snprintf(req, sizeof req,
                     "POST /v1/chat/completions?s=%d HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
                     c->s);
    bufferevent_write(c->bev, req, (size_t)n);
    return;
  }
  if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) client_fail(c, "connection closed");
}

static int next_client;

/* Opens the streams over about one second, whatever their number (at least 10 per
 * 10 ms), so that at every stream count they overlap for most of a stream's life. */
static void connect_some(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  struct event *self = arg;
  int per_tick = nstreams / 100 > 10 ? nstreams / 100 : 10;
  for (int k = 0; k < per_tick && next_client < nstreams; k++, next_client++) {
    client *c = &clients[next_client];
    c->s = next_client;
    c->body = evbuffer_new();
    c->bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    bufferevent_setcb(c->bev, client_read, NULL, client_event, c);
    bufferevent_enable(c->bev, EV_READ);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((unsigned short)target_port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bufferevent_socket_connect(c->bev, (struct sockaddr *)&sa, sizeof sa) < 0)
      client_fail(c, "connect failed");
  }
  if (next_client < nstreams) {
    struct timeval tv = {0, 10000};
    evtimer_add(self, &tv);
  }
}

static void deadline_cb(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  (void)arg;
  event_base_loopexit(base, NULL);
}

/* Runs the loop until something calls event_base_loopexit(base, NULL) or ms pass. The
 * deadline is an event of its own, deleted on the way out: a timed event_base_loopexit
 * would outlive a loop that ended early and cut a later phase short. */
static void run_loop(int ms) {
  struct event *deadline = evtimer_new(base, deadline_cb, NULL);
  struct timeval tv = {ms / 1000, (suseconds_t)(ms % 1000) * 1000};
  evtimer_add(deadline, &tv);
  event_base_dispatch(base);
  event_free(deadline);
}

/* Lets the loop settle what a phase left: upstream connections closing, timers. */
static void drain_loop(int ms) { run_loop(ms); }

/* ---- phases -------------------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

typedef struct {
  double p50_us, p99_us, p999_us, max_us;
  int completed, failed, corrupted;
  int lost;       /* closed, refused, answered wrongly or corrupted: the proxy's doing */
  int unfinished; /* still streaming at the deadline: the machine did not carry the load */
  size_t samples;
  double wall_s;
} phase_result;

static void clients_free(void) {
  for (int i = 0; i < nstreams; i++) {
    if (clients[i].bev) bufferevent_free(clients[i].bev); /* unfinished */
    if (clients[i].body) evbuffer_free(clients[i].body);
  }
  free(clients);
  clients = NULL;
}

static void clients_start(int port, int n) {
  nstreams = n;
  target_port = port;
  clients = calloc((size_t)nstreams, sizeof *clients);
  if (!clients) {
    fprintf(stderr, "gateway_bench: out of memory\n");
    exit(1);
  }
  nsamples = 0;
  completed = corrupted = failed = idle_ready = 0;
  open_clients = nstreams;
  next_client = 0;
}

/* n paced streams through port, to the end (or a deadline). */
static phase_result run_phase(int port, int n) {
  clients_start(port, n);
  struct event *conn = evtimer_new(base, connect_some, event_self_cbarg());
  connect_some(-1, 0, conn);
  uint64_t t0 = now_ns();
  /* a deadline: the streams take nchunks / rate seconds, plus ramp-up and slack */
  run_loop((nchunks / rate + 1 + deadline_s) * 1000);
  phase_result r;
  memset(&r, 0, sizeof r);
  r.wall_s = (double)(now_ns() - t0) / 1e9;
  event_free(conn);
  clients_free();
  qsort(samples, nsamples, sizeof *samples, cmp_u64);
  if (nsamples) {
    r.p50_us = (double)samples[nsamples / 2] / 1e3;
    r.p99_us = (double)samples[(size_t)((double)nsamples * 0.99)] / 1e3;
    r.p999_us = (double)samples[(size_t)((double)nsamples * 0.999)] / 1e3;
    r.max_us = (double)samples[nsamples - 1] / 1e3;
  }
  r.completed = completed;
  r.failed = nstreams - completed;
  r.lost = failed;
  r.unfinished = nstreams - completed - failed;
  r.corrupted = corrupted;
  r.samples = nsamples;
  return r;
}

/* ---- the proxies ----------------------------------------------------------------------- */

typedef enum { P_DIRECT, P_NGINX, P_GATEWAY } proxy_kind;

typedef struct {
  const char *id;    /* machine-readable */
  const char *label; /* for the tables */
  proxy_kind kind;
  int workers, pub;
} proxy_def;

#define MAX_PROCS 16

typedef struct {
  pid_t pid; /* the process we started (nginx: the master) */
  pid_t procs[MAX_PROCS];
  int nprocs;
  int port;
  char dir[128]; /* nginx: its prefix directory */
} proxy_run;

static const char *ts_binary, *nginx_binary;
static char nginx_version[64] = "";
static int gw_has_workers, gw_has_no_tap;
static int up_port;
static int max_streams;

static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t sl = sizeof sa;
  int port = -1;
  if (fd >= 0 && !bind(fd, (struct sockaddr *)&sa, sizeof sa) &&
      !getsockname(fd, (struct sockaddr *)&sa, &sl))
    port = ntohs(sa.sin_port);
  if (fd >= 0) close(fd);
  return port;
}

static int can_connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons((unsigned short)port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int ok = fd >= 0 && !connect(fd, (struct sockaddr *)&sa, sizeof sa);
  if (fd >= 0) close(fd);
  return ok;
}

/* The proxy's processes: the one we started and its children (nginx's workers). */
static void proxy_procs(proxy_run *p) {
  p->nprocs = 0;
  p->procs[p->nprocs++] = p->pid;
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)p->pid, (int)p->pid);
  FILE *f = fopen(path, "r");
  if (!f) return;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  for (char *s = buf, *e; *s && p->nprocs < MAX_PROCS; s = e) {
    long v = strtol(s, &e, 10);
    if (e == s) break;
    p->procs[p->nprocs++] = (pid_t)v;
  }
}

static int write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  int ok = fputs(text, f) >= 0;
  return fclose(f) == 0 && ok ? 0 : -1;
}

/* nginx as a reverse proxy for SSE, as its documentation and Debian's defaults have it,
 * in a fresh temp directory: every path it writes (pid, error log, temp dirs) is inside,
 * nothing under /etc or /var. Run as root (CI is), the master keeps root and the
 * workers drop to nobody:nogroup (Debian has no group "nobody", nginx's default); as
 * another user, nginx runs as that user. */
/* Up to n lines of nginx's error log (what is not a [notice]) on standard error. */
static void nginx_log(const char *dir, int n) {
  char path[200], line[512];
  snprintf(path, sizeof path, "%s/error.log", dir);
  FILE *f = fopen(path, "r");
  for (int k = 0; f && k < n && fgets(line, sizeof line, f);) {
    if (strstr(line, "[notice]")) continue;
    fprintf(stderr, "    nginx: %s", line);
    k++;
  }
  if (f) fclose(f);
}

/* One try; 1 when nginx exited at start (the free port may have been taken meanwhile). */
static int nginx_start_once(const proxy_def *d, proxy_run *p) {
  snprintf(p->dir, sizeof p->dir, "/tmp/ts-gwbench-nginx-XXXXXX");
  if (!mkdtemp(p->dir)) return -1;
  int root = geteuid() == 0;
  if (root) chmod(p->dir, 0755); /* the workers (nobody) open nothing here, but may look */
  p->port = free_port();
  if (p->port <= 0) return -1;
  /* file descriptors: a client and an upstream socket per stream, with room to spare */
  int conns = 2 * max_streams + 1024;
  char conf[4096], path[256];
  snprintf(conf, sizeof conf,
           "# generated by bench/gateway_bench.c for one cell\n"
           "daemon off;\n"
           "master_process on;\n"
           "%s"
           "worker_processes %d;\n"
           "worker_rlimit_nofile %d;\n"
           "error_log %s/error.log warn;\n"
           "pid %s/nginx.pid;\n"
           "events { worker_connections %d; }\n"
           "http {\n"
           "  access_log off;\n"
           "  client_body_temp_path %s/client_body;\n"
           "  proxy_temp_path %s/proxy;\n"
           "  fastcgi_temp_path %s/fastcgi;\n"
           "  uwsgi_temp_path %s/uwsgi;\n"
           "  scgi_temp_path %s/scgi;\n"
           "  upstream model { server 127.0.0.1:%d; keepalive 1024; }\n"
           "  server {\n"
           "    listen 127.0.0.1:%d;\n"
           "    location / {\n"
           "      proxy_pass http://model;\n"
           "      proxy_buffering off;\n"
           "      proxy_http_version 1.1;\n"
           "      proxy_set_header Connection \"\";\n"
           "      proxy_read_timeout 300s;\n"
           "    }\n"
           "  }\n"
           "}\n",
           root ? "user nobody nogroup;\n" : "", d->workers, conns, p->dir, p->dir, conns, p->dir,
           p->dir, p->dir, p->dir, p->dir, up_port, p->port);
  snprintf(path, sizeof path, "%s/nginx.conf", p->dir);
  if (write_file(path, conf)) return -1;
  char elog[200];
  snprintf(elog, sizeof elog, "%s/error.log", p->dir);
  p->pid = fork();
  if (p->pid < 0) return -1;
  if (p->pid == 0) {
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
      dup2(null, 0);
      dup2(null, 1);
    }
    pin_child();
    /* -e: the log for messages before the config is read (else /var/log/nginx) */
    execl(nginx_binary, "nginx", "-p", p->dir, "-c", path, "-e", elog, (char *)NULL);
    _exit(127);
  }
  /* up when it accepts and all its workers exist (a backstop of 30 s: a loaded machine) */
  for (int k = 0; k < 3000; k++) {
    int st;
    if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
      fprintf(stderr, "gateway_bench: nginx exited at start:\n");
      nginx_log(p->dir, 5);
      p->pid = 0;
      return 1;
    }
    proxy_procs(p);
    if (p->nprocs == 1 + d->workers && can_connect(p->port)) return 0;
    sleep_ms(10);
  }
  fprintf(stderr, "gateway_bench: nginx did not come up in 30 s:\n");
  nginx_log(p->dir, 5);
  return -1;
}

static void rm_tree(const char *dir);

static int nginx_start(const proxy_def *d, proxy_run *p) {
  int rc = 1;
  for (int tries = 0; rc == 1 && tries < 3; tries++) {
    if (tries) {
      rm_tree(p->dir);
      memset(p, 0, sizeof *p);
    }
    rc = nginx_start_once(d, p);
  }
  return rc ? -1 : 0;
}

static int gateway_start(const proxy_def *d, proxy_run *p) {
  int pfd[2];
  if (pipe(pfd)) return -1;
  char up[64], pub[128], workers[16], maxc[16];
  snprintf(up, sizeof up, "http://127.0.0.1:%d", up_port);
  snprintf(pub, sizeof pub, "ipc:///tmp/ts-gw-bench-%d.bus", (int)getpid());
  snprintf(workers, sizeof workers, "%d", d->workers);
  /* every stream comes from 127.0.0.1: the per-client cap must not be the limit */
  snprintf(maxc, sizeof maxc, "%d", max_streams + 64);
  const char *argv[24] = {"toolstream", "gateway",           "--listen", "127.0.0.1:0",
                          "--upstream", up,                  "--quiet",  "--max-connections",
                          maxc,         "--max-per-client",  maxc};
  int a = 11;
  if (gw_has_workers) {
    argv[a++] = "--workers";
    argv[a++] = workers;
  }
  if (d->pub) {
    argv[a++] = "--pub";
    argv[a++] = pub;
    argv[a++] = "--progress-arg";
    argv[a++] = "write_file=description";
  } else if (gw_has_no_tap) {
    argv[a++] = "--no-tap";
  }
  argv[a] = NULL;
  p->pid = fork();
  if (p->pid < 0) return -1;
  if (p->pid == 0) {
    dup2(pfd[1], 1);
    close(pfd[0]);
    close(pfd[1]);
    pin_child();
    execv(ts_binary, (char *const *)argv);
    _exit(127);
  }
  close(pfd[1]);
  char line[128];
  ssize_t n = read(pfd[0], line, sizeof line - 1);
  close(pfd[0]);
  if (n <= 0) return -1;
  line[n] = '\0';
  char *colon = strrchr(line, ':');
  p->port = colon ? atoi(colon + 1) : -1;
  proxy_procs(p);
  return p->port > 0 ? 0 : -1;
}

static int proxy_start(const proxy_def *d, proxy_run *p) {
  memset(p, 0, sizeof *p);
  if (d->kind == P_DIRECT) {
    p->port = up_port;
    return 0;
  }
  return d->kind == P_NGINX ? nginx_start(d, p) : gateway_start(d, p);
}

static void rm_tree(const char *dir) {
  DIR *dh = opendir(dir);
  if (!dh) return;
  struct dirent *e;
  char path[512];
  while ((e = readdir(dh))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat st;
    if (!lstat(path, &st) && S_ISDIR(st.st_mode)) rm_tree(path);
    else unlink(path);
  }
  closedir(dh);
  rmdir(dir);
}

/* SIGTERM: nginx's fast shutdown, the gateway's clean exit. */
static void proxy_stop(proxy_run *p) {
  if (p->pid > 0) {
    kill(p->pid, SIGTERM);
    int st;
    waitpid(p->pid, &st, 0);
  }
  p->pid = 0;
  if (p->dir[0]) rm_tree(p->dir);
  p->dir[0] = '\0';
  drain_loop(50); /* the upstream side sees its connections close */
}

/* ---- what the proxy costs, from /proc -------------------------------------------------- */

typedef struct {
  unsigned long long utime, stime; /* clock ticks */
  unsigned long long run_ns;       /* on a CPU, from schedstat, all threads */
} cpu_snap;

static int read_small(const char *path, char *buf, size_t cap) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  size_t n = fread(buf, 1, cap - 1, f);
  fclose(f);
  buf[n] = '\0';
  return 0;
}

static cpu_snap cpu_read(const proxy_run *p) {
  cpu_snap s = {0, 0, 0};
  char path[96], buf[2048];
  for (int k = 0; k < p->nprocs; k++) {
    snprintf(path, sizeof path, "/proc/%d/stat", (int)p->procs[k]);
    if (!read_small(path, buf, sizeof buf)) {
      char *q = strrchr(buf, ')');
      unsigned long long ut = 0, st = 0;
      if (q) sscanf(q + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st);
      s.utime += ut;
      s.stime += st;
    }
    snprintf(path, sizeof path, "/proc/%d/task", (int)p->procs[k]);
    DIR *dh = opendir(path);
    if (!dh) continue;
    struct dirent *e;
    while ((e = readdir(dh))) {
      if (e->d_name[0] == '.') continue;
      char tp[128];
      snprintf(tp, sizeof tp, "/proc/%d/task/%.16s/schedstat", (int)p->procs[k], e->d_name);
      if (!read_small(tp, buf, sizeof buf)) s.run_ns += strtoull(buf, NULL, 10);
    }
    closedir(dh);
  }
  return s;
}

/* TcpExt ListenOverflows from /proc/net/netstat: connections the kernel dropped because a
 * listener's accept queue was full (machine-wide: other processes count too). -1 when
 * unreadable. */
static long long listen_overflows(void) {
  FILE *f = fopen("/proc/net/netstat", "r");
  if (!f) return -1;
  char names[4096], values[4096];
  long long v = -1;
  while (fgets(names, sizeof names, f) && fgets(values, sizeof values, f)) {
    if (strncmp(names, "TcpExt:", 7)) continue;
    char *sn, *sv;
    char *n = strtok_r(names, " \n", &sn), *x = strtok_r(values, " \n", &sv);
    for (; n && x; n = strtok_r(NULL, " \n", &sn), x = strtok_r(NULL, " \n", &sv))
      if (!strcmp(n, "ListenOverflows")) v = atoll(x);
    break;
  }
  fclose(f);
  return v;
}

/* The sum over the proxy's processes of a /proc/PID/status field in KiB (VmRSS, VmHWM). */
static long mem_kb(const proxy_run *p, const char *field) {
  long sum = 0;
  size_t fl = strlen(field);
  for (int k = 0; k < p->nprocs; k++) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)p->procs[k]);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    while (fgets(line, sizeof line, f))
      if (!strncmp(line, field, fl) && line[fl] == ':') sum += atol(line + fl + 1);
    fclose(f);
  }
  return sum;
}

/* ---- system calls: strace -c -f attached to the proxy's processes --------------------- */

typedef struct {
  unsigned long total, reads, writes, epoll_wait, epoll_ctl;
  int ok;
} sys_counts;

static sys_counts strace_parse(const char *path) {
  sys_counts c;
  memset(&c, 0, sizeof c);
  FILE *f = fopen(path, "r");
  if (!f) return c;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    char *tok[8];
    int nt = 0;
    for (char *s = strtok(line, " \t\n"); s && nt < 8; s = strtok(NULL, " \t\n")) tok[nt++] = s;
    if (nt < 5 || !strcmp(tok[nt - 1], "total") || tok[0][0] == '%' || tok[0][0] == '-') continue;
    /* % time, seconds, usecs/call, calls, [errors,] syscall */
    unsigned long calls = strtoul(tok[3], NULL, 10);
    const char *name = tok[nt - 1];
    c.total += calls;
    c.ok = 1;
    if (!strcmp(name, "read") || !strcmp(name, "readv") || !strcmp(name, "recvfrom") ||
        !strcmp(name, "recvmsg"))
      c.reads += calls;
    else if (!strcmp(name, "write") || !strcmp(name, "writev") || !strcmp(name, "sendto") ||
             !strcmp(name, "sendmsg"))
      c.writes += calls;
    else if (!strncmp(name, "epoll_wait", 10) || !strcmp(name, "epoll_pwait"))
      c.epoll_wait += calls;
    else if (!strcmp(name, "epoll_ctl"))
      c.epoll_ctl += calls;
  }
  fclose(f);
  return c;
}

static int traced(pid_t pid) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  int t = 0;
  if (!f) return 0;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, "TracerPid:", 10)) t = atoi(line + 10) != 0;
  fclose(f);
  return t;
}

static pid_t strace_start(const proxy_run *p, const char *out) {
  const char *argv[8 + 2 * MAX_PROCS] = {"strace", "-c", "-f", "-qq", "-o", out};
  char pids[MAX_PROCS][16];
  int a = 6;
  for (int k = 0; k < p->nprocs; k++) {
    snprintf(pids[k], sizeof pids[k], "%d", (int)p->procs[k]);
    argv[a++] = "-p";
    argv[a++] = pids[k];
  }
  argv[a] = NULL;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) dup2(null, 2);
    execvp("strace", (char *const *)argv);
    _exit(127);
  }
  for (int k = 0; k < 3000; k++) { /* attached when every process has a tracer (30 s backstop) */
    int all = 1;
    for (int j = 0; j < p->nprocs; j++) all &= traced(p->procs[j]);
    if (all) {
      sleep_ms(200); /* and its threads (-f) */
      return pid;
    }
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid) return -1;
    sleep_ms(10);
  }
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  return -1;
}

/* ---- the matrix ------------------------------------------------------------------------ */

#define MAX_COUNTS 8
#define MAX_PROXIES 8
#define MAX_RUNS 9

typedef struct {
  int run; /* measured (0: skipped, see why) */
  const char *why;
  phase_result r;
  double user_us, sys_us, cpu_us; /* per chunk; cpu from schedstat */
  long ticks_user, ticks_sys;     /* clock ticks over the phase, as read */
  long hwm_kb, start_kb;
  char load[32]; /* the load average (1 min) when the cell ended */
  long long overflows; /* listen queue overflows during the cell (machine-wide), -1: unknown */
} cell;

typedef struct {
  int run;
  const char *why;
  double kib_per_stream;
  long before_kb, after_kb;
  int ready;
} idle_cell;

typedef struct {
  int run;
  const char *why;
  sys_counts c;
  size_t chunks;
} sys_cell;

static proxy_def proxies[MAX_PROXIES];
static int nproxies;
static int counts[MAX_COUNTS], ncounts;
/* The latency matrix of every run (--runs); `cells` is the run being measured or printed. */
static cell run_cells[MAX_RUNS][MAX_COUNTS][MAX_PROXIES];
static cell (*cells)[MAX_PROXIES] = run_cells[0];
static int nruns = 1;
static idle_cell idles[2][MAX_PROXIES]; /* [head only, after one chunk][proxy] */
/* The strace runs, one per --sys-streams count. */
static sys_cell syscells[MAX_COUNTS][MAX_PROXIES];
static int sys_n[MAX_COUNTS], nsys;
static FILE *tsv;
static int idle_n = 1000, idle_ms = 1000, sys_chunks = 0; /* 0: as --chunks */
static int do_idle = 1, do_sys = 1;

static void emit(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void emit(const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  printf("%s\n", line);
  if (tsv) fprintf(tsv, "%s\n", line);
}

static int find_proxy(proxy_kind k, int workers, int pub) {
  for (int i = 0; i < nproxies; i++)
    if (proxies[i].kind == k && proxies[i].workers == workers && proxies[i].pub == pub) return i;
  return -1;
}

static const char *nginx_missing = "nginx not found";

static const char *load_now(void);
static const char *find_on_path(const char *name, char *buf, size_t cap);

/* Starts the proxy of a measurement, or says in *why why not (nginx missing, a failed
 * start). 0 when it runs. */
static int start_for(const proxy_def *d, proxy_run *p, const char **why) {
  if (d->kind == P_NGINX && !nginx_binary) {
    *why = nginx_missing;
    return -1;
  }
  if (proxy_start(d, p)) {
    fprintf(stderr, "gateway_bench: cannot start %s\n", d->label);
    *why = "did not start";
    proxy_stop(p);
    return -1;
  }
  return 0;
}

static void measure_cell(int ci, int pi) {
  const proxy_def *d = &proxies[pi];
  cell *c = &cells[ci][pi];
  proxy_run p;
  if (start_for(d, &p, &c->why)) return;
  c->start_kb = mem_kb(&p, "VmRSS");
  long long ov0 = listen_overflows();
  cpu_snap a = cpu_read(&p);
  c->r = run_phase(p.port, counts[ci]);
  cpu_snap b = cpu_read(&p);
  long long ov1 = listen_overflows();
  c->overflows = ov0 >= 0 && ov1 >= 0 ? ov1 - ov0 : -1;
  c->hwm_kb = mem_kb(&p, "VmHWM");
  if (c->r.lost && d->kind == P_NGINX) nginx_log(p.dir, 3); /* say why, from its own log */
  proxy_stop(&p);
  c->run = 1;
  snprintf(c->load, sizeof c->load, "%.*s", (int)strcspn(load_now(), " "), load_now());
  double tick_us = 1e6 / (double)sysconf(_SC_CLK_TCK), n = (double)c->r.samples;
  if (n > 0 && d->kind != P_DIRECT) {
    /* the total from schedstat (ns); split as the tick counts split it, as the kernel
     * itself splits getrusage() times (the ticks alone are 10 ms steps) */
    double ut = (double)(b.utime - a.utime), st = (double)(b.stime - a.stime);
    c->cpu_us = (double)(b.run_ns - a.run_ns) / 1e3 / n;
    c->ticks_user = (long)ut;
    c->ticks_sys = (long)st;
    if (ut + st > 0) {
      c->user_us = c->cpu_us * ut / (ut + st);
      c->sys_us = c->cpu_us * st / (ut + st);
    } else {
      c->user_us = c->sys_us = -1; /* not a tick's worth: no split */
    }
    (void)tick_us;
  }
}

/* RSS per idle stream: idle_n streams whose reply head (kind 0) or head and first chunk
 * (kind 1) has arrived, then idle_ms of nothing; the VmRSS delta over the proxy's fresh
 * start, divided by the streams. */
static void measure_idle(int pi, int kind) {
  const proxy_def *d = &proxies[pi];
  idle_cell *c = &idles[kind][pi];
  proxy_run p;
  if (start_for(d, &p, &c->why)) return;
  sleep_ms(idle_ms < 200 ? idle_ms : 200); /* let it settle after its start */
  c->before_kb = mem_kb(&p, "VmRSS");
  idle_mode = 1 + kind;
  clients_start(p.port, idle_n);
  struct event *conn = evtimer_new(base, connect_some, event_self_cbarg());
  connect_some(-1, 0, conn);
  run_loop(30000);
  c->ready = idle_ready;
  drain_loop(idle_ms); /* idle for a while, the loop still answering */
  c->after_kb = mem_kb(&p, "VmRSS");
  event_free(conn);
  clients_free();
  idle_mode = 0;
  proxy_stop(&p);
  c->run = 1;
  c->kib_per_stream = c->ready ? (double)(c->after_kb - c->before_kb) / c->ready : 0;
}

/* A traced proxy that read fewer than 0.9 times per chunk fell behind under strace and
 * read several chunks at once: its counts are lower than at full speed. */
static int sys_behind(const sys_cell *c) { return c->run && (double)c->c.reads < 0.9 * (double)c->chunks; }

static void measure_sys(int si, int pi) {
  const proxy_def *d = &proxies[pi];
  sys_cell *c = &syscells[si][pi];
  int sys_streams = sys_n[si];
  char sbuf[512];
  if (!find_on_path("strace", sbuf, sizeof sbuf)) {
    c->why = "strace not installed (Debian: apt-get install strace)";
    return;
  }
  proxy_run p;
  if (start_for(d, &p, &c->why)) return;
  char out[128];
  snprintf(out, sizeof out, "/tmp/ts-gwbench-strace-%d.txt", (int)getpid());
  pid_t sp = strace_start(&p, out);
  if (sp <= 0) {
    c->why = "strace could not attach";
    proxy_stop(&p);
    return;
  }
  int saved = nchunks;
  nchunks = sys_chunks;
  phase_result r = run_phase(p.port, sys_streams);
  nchunks = saved;
  kill(sp, SIGINT); /* strace detaches and writes its summary */
  waitpid(sp, NULL, 0);
  proxy_stop(&p);
  c->c = strace_parse(out);
  unlink(out);
  c->chunks = r.samples;
  c->run = c->c.ok && r.samples;
  if (!c->run) c->why = "no strace summary";
  if (r.completed != sys_streams) fprintf(stderr, "  (%s under strace: %d/%d streams complete)\n",
                                          d->label, r.completed, sys_streams);
}

static void ratio(char *out, size_t cap, double x, double ref, int have) {
  if (have && ref > 0) snprintf(out, cap, "%.2f", x / ref);
  else snprintf(out, cap, "-");
}

static void print_count(int ci) {
  int s = counts[ci];
  const cell *dc = &cells[ci][0];
  int n1 = find_proxy(P_NGINX, 1, 0), n2 = find_proxy(P_NGINX, 2, 0);
  printf("\n%d concurrent streams x %d chunks at %d/s (%d chunks/s in all)\n\n", s, nchunks, rate,
         s * rate);
  printf("| proxy | streams complete | lost | unfinished | corrupted | chunks | p50 | p99 | p99.9 | added p50 | added p99 | "
         "added p99.9 | user µs/chunk | sys µs/chunk | CPU µs/chunk | CPU / nginx same workers | "
         "CPU / nginx best | added p99 / nginx 2w | peak RSS MiB |\n");
  printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (int pi = 0; pi < nproxies; pi++) {
    const proxy_def *d = &proxies[pi];
    const cell *c = &cells[ci][pi];
    if (!c->run) {
      printf("| %s | skipped: %s | | | | | | | | | | | | | | | | | |\n", d->label, c->why ? c->why : "?");
      emit("cell\tstreams=%d\tproxy=%s\tskipped=%s", s, d->id, c->why ? c->why : "?");
      continue;
    }
    const phase_result *r = &c->r;
    double a50 = r->p50_us - dc->r.p50_us, a99 = r->p99_us - dc->r.p99_us,
           a999 = r->p999_us - dc->r.p999_us;
    char rs[16] = "-", rb[16] = "-", rp[16] = "-";
    if (d->kind != P_DIRECT) {
      int same = find_proxy(P_NGINX, d->workers, 0);
      if (same < 0) same = n2;
      const cell *ns = same >= 0 ? &cells[ci][same] : NULL;
      const cell *b1 = n1 >= 0 ? &cells[ci][n1] : NULL, *b2 = n2 >= 0 ? &cells[ci][n2] : NULL;
      double best = 0;
      if (b1 && b1->run) best = b1->cpu_us;
      if (b2 && b2->run && (!best || b2->cpu_us < best)) best = b2->cpu_us;
      ratio(rs, sizeof rs, c->cpu_us, ns ? ns->cpu_us : 0, ns && ns->run);
      ratio(rb, sizeof rb, c->cpu_us, best, best > 0);
      double n2a = b2 && b2->run ? b2->r.p99_us - dc->r.p99_us : 0;
      ratio(rp, sizeof rp, a99, n2a, b2 && b2->run && n2a > 0);
    }
    if (d->kind == P_DIRECT)
      printf("| %s | %d/%d | %d | %d | %d | %zu | %.0f | %.0f | %.0f | | | | | | | | | | |\n", d->label,
             r->completed, s, r->lost, r->unfinished, r->corrupted, r->samples, r->p50_us, r->p99_us,
             r->p999_us);
    else {
      /* user and sys: "-" when the phase did not last a clock tick of the proxy's CPU */
      char us[16] = "-", ss[16] = "-";
      if (c->user_us >= 0) {
        snprintf(us, sizeof us, "%.2f", c->user_us);
        snprintf(ss, sizeof ss, "%.2f", c->sys_us);
      }
      printf("| %s | %d/%d | %d | %d | %d | %zu | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %s | %s | %.2f | "
             "%s | %s | %s | %.1f |\n",
             d->label, r->completed, s, r->lost, r->unfinished, r->corrupted, r->samples, r->p50_us, r->p99_us, r->p999_us,
             a50, a99, a999, us, ss, c->cpu_us, rs, rb, rp, (double)c->hwm_kb / 1024);
    }
    emit("cell\tstreams=%d\tproxy=%s\tworkers=%d\ttap=%d\tcompleted=%d\tlost=%d\tunfinished=%d\t"
         "corrupted=%d\tchunks=%zu\t"
         "p50_us=%.0f\tp99_us=%.0f\tp999_us=%.0f\tadded_p50_us=%.0f\tadded_p99_us=%.0f\t"
         "added_p999_us=%.0f\tuser_us_per_chunk=%.3f\tsys_us_per_chunk=%.3f\tcpu_us_per_chunk=%.3f\t"
         "cpu_ratio_same=%s\tcpu_ratio_best=%s\tp99_ratio_nginx2=%s\tpeak_rss_kib=%ld\twall_s=%.1f\t"
         "ticks_user=%ld\tticks_sys=%ld\tload=%s\tlisten_overflows=%lld",
         s, d->id, d->workers, d->pub, r->completed, r->lost, r->unfinished, r->corrupted, r->samples, r->p50_us, r->p99_us,
         r->p999_us, d->kind == P_DIRECT ? 0 : a50, d->kind == P_DIRECT ? 0 : a99,
         d->kind == P_DIRECT ? 0 : a999, c->user_us, c->sys_us, c->cpu_us, rs, rb, rp, c->hwm_kb,
         r->wall_s, c->ticks_user, c->ticks_sys, c->load, c->overflows);
  }
  for (int pi = 0; pi < nproxies; pi++) {
    const cell *c = &cells[ci][pi];
    if (c->run && c->overflows > 0)
      printf("(%s: %lld connections dropped by a full accept queue during the cell, machine-wide "
             "(TcpExt ListenOverflows): the clients retry them, later)\n",
             proxies[pi].label, c->overflows);
  }
  fflush(stdout);
}

static char loadavg[64];
static const char *load_now(void) {
  if (read_small("/proc/loadavg", loadavg, sizeof loadavg)) return "?";
  char *sp = loadavg;
  for (int k = 0; k < 3 && sp; k++) sp = strchr(sp + 1, ' ');
  if (sp) *sp = '\0';
  return loadavg;
}

/* ---- several runs ------------------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median_of(const double *v, int n) {
  double t[MAX_RUNS];
  memcpy(t, v, sizeof *t * (size_t)n);
  qsort(t, (size_t)n, sizeof *t, cmp_double);
  if (n % 2) return t[n / 2];
  return t[n / 2] >= 1e9 ? 1e9 : (t[n / 2 - 1] + t[n / 2]) / 2; /* inf stays inf */
}

/* The added-p99 comparison of proxy pi with nginx 2 workers at count ci over the runs:
 * per run the ratio (gateway's added p99 / nginx's; 0 when the gateway adds nothing and
 * nginx something; a large number when nginx adds nothing and the gateway something) and
 * whether it met the bound, nginx's own added p99, and the verdict: MET or NOT MET when
 * every run falls on one side of the bound; otherwise the median decides, unless nginx's
 * added p99 moved by more than 2x over the runs (or was nothing in one), in which case
 * the load, not the proxies, chose the side: UNMEASURABLE. Returns the runs compared
 * (0: not measured). */
typedef struct {
  int n;
  double ratio[MAX_RUNS], ga[MAX_RUNS], na[MAX_RUNS];
  int met[MAX_RUNS];
  double median;
  const char *verdict;
} p99_runs;

static int p99_compare(int ci, int pi, int n2, double bound, p99_runs *o) {
  memset(o, 0, sizeof *o);
  if (n2 < 0) return 0;
  for (int run = 0; run < nruns; run++) {
    const cell *c = &run_cells[run][ci][pi], *b = &run_cells[run][ci][n2], *d = &run_cells[run][ci][0];
    if (!c->run || !b->run || !d->run) continue;
    int k = o->n++;
    o->ga[k] = c->r.p99_us - d->r.p99_us;
    o->na[k] = b->r.p99_us - d->r.p99_us;
    o->met[k] = o->na[k] > 0 ? o->ga[k] <= bound * o->na[k] : o->ga[k] <= 0;
    o->ratio[k] = o->na[k] > 0 ? (o->ga[k] > 0 ? o->ga[k] / o->na[k] : 0) : (o->ga[k] <= 0 ? 0 : 1e9);
  }
  if (!o->n) return 0;
  int nmet = 0;
  double lo = o->na[0], hi = o->na[0];
  for (int k = 0; k < o->n; k++) {
    nmet += o->met[k];
    if (o->na[k] < lo) lo = o->na[k];
    if (o->na[k] > hi) hi = o->na[k];
  }
  o->median = median_of(o->ratio, o->n);
  if (nmet == o->n) o->verdict = "MET";
  else if (nmet == 0) o->verdict = "NOT MET";
  else if (lo <= 0 || hi > 2 * lo) o->verdict = "UNMEASURABLE";
  else o->verdict = o->median <= bound ? "MET" : "NOT MET";
  return o->n;
}

static void fmt_ratio(char *out, size_t cap, double r) {
  if (r >= 1e9) snprintf(out, cap, "inf");
  else snprintf(out, cap, "%.2f", r);
}

/* Per stream count and proxy: the N runs' added-p99 ratios against nginx 2 workers, their
 * median and spread, nginx's own added p99, and the verdict (p99_compare). */
static void print_runs(void) {
  int n2 = find_proxy(P_NGINX, 2, 0);
  printf("\nadded p99 against nginx 2 workers over %d runs (ratio = the proxy's added p99 / nginx 2w's, "
         "same run)\n\n", nruns);
  printf("| streams | proxy | ratios, runs 1..%d | median | min-max | nginx 2w added p99 µs, runs 1..%d | "
         "nginx 2w spread | verdict (<= 1.2x) |\n", nruns, nruns);
  printf("|---:|---|---|---:|---|---|---:|---|\n");
  for (int ci = 0; ci < ncounts; ci++)
    for (int pi = 1; pi < nproxies; pi++) {
      if (pi == n2) continue;
      p99_runs o;
      if (!p99_compare(ci, pi, n2, 1.2, &o)) continue;
      char rs[160] = "", ns[160] = "", t[24];
      double lo = o.ratio[0], hi = o.ratio[0], nlo = o.na[0], nhi = o.na[0];
      for (int k = 0; k < o.n; k++) {
        fmt_ratio(t, sizeof t, o.ratio[k]);
        snprintf(rs + strlen(rs), sizeof rs - strlen(rs), "%s%s", k ? ", " : "", t);
        snprintf(ns + strlen(ns), sizeof ns - strlen(ns), "%s%.0f", k ? ", " : "", o.na[k]);
        if (o.ratio[k] < lo) lo = o.ratio[k];
        if (o.ratio[k] > hi) hi = o.ratio[k];
        if (o.na[k] < nlo) nlo = o.na[k];
        if (o.na[k] > nhi) nhi = o.na[k];
      }
      char med[24], los[24], his[24], spread[24] = "-";
      fmt_ratio(med, sizeof med, o.median);
      fmt_ratio(los, sizeof los, lo);
      fmt_ratio(his, sizeof his, hi);
      if (nlo > 0) snprintf(spread, sizeof spread, "%.1fx", nhi / nlo);
      printf("| %d | %s | %s | %s | %s-%s | %s | %s | %s |\n", counts[ci], proxies[pi].label, rs, med, los,
             his, ns, spread, o.verdict);
      emit("runs\tstreams=%d\tproxy=%s\truns=%d\tp99_ratios=%s\tmedian=%s\tnginx2_added_p99_us=%s\t"
           "verdict=%s",
           counts[ci], proxies[pi].id, o.n, rs, med, ns, o.verdict);
    }
}

/* The targets of issue 19 item 1, from the cells measured (with --runs, the medians). */
static int targets(void) {
  printf("\ntargets (issue 19 item 1):\n");
  int n1 = find_proxy(P_NGINX, 1, 0), n2 = find_proxy(P_NGINX, 2, 0);
  for (int pi = 0; pi < nproxies; pi++) {
    const proxy_def *d = &proxies[pi];
    if (d->kind != P_GATEWAY) continue;
    if (!nsys) printf("  %s: <= 2.2 system calls per chunk: not measured (skipped: --sys-streams 0)\n", d->label);
    for (int si = 0; si < nsys; si++) {
      const sys_cell *sc = &syscells[si][pi];
      double x = sc->run ? (double)sc->c.total / (double)sc->chunks : 0;
      if (!sc->run)
        printf("  %s at %d streams: <= 2.2 system calls per chunk: not measured (%s)\n", d->label,
               sys_n[si], sc->why ? sc->why : "not run");
      else if (sys_behind(sc))
        printf("  %s at %d streams: <= 2.2 system calls per chunk: UNMEASURABLE (%.2f, but it read %.2f "
               "times per chunk: it fell behind under strace)\n",
               d->label, sys_n[si], x, (double)sc->c.reads / (double)sc->chunks);
      else
        printf("  %s at %d streams: <= 2.2 system calls per chunk: %s (%.2f)\n", d->label, sys_n[si],
               x <= 2.2 ? "MET" : "NOT MET", x);
    }
    double lim = d->pub ? 1.25 : 1.0;
    int si = find_proxy(P_NGINX, d->workers, 0) >= 0 ? find_proxy(P_NGINX, d->workers, 0) : n2;
    for (int ci = 0; ci < ncounts; ci++) {
      const cell *c = &cells[ci][pi];
      /* CPU: per run against nginx with as many workers and against nginx's best; the
       * median of the runs */
      double xs[MAX_RUNS], xb[MAX_RUNS], us[MAX_RUNS], bs[MAX_RUNS];
      int n = 0;
      for (int run = 0; run < nruns; run++) {
        const cell *rc = &run_cells[run][ci][pi];
        const cell *a = n1 >= 0 ? &run_cells[run][ci][n1] : NULL, *b = n2 >= 0 ? &run_cells[run][ci][n2] : NULL;
        const cell *same = si >= 0 ? &run_cells[run][ci][si] : NULL;
        double best = 0;
        if (a && a->run) best = a->cpu_us;
        if (b && b->run && (!best || b->cpu_us < best)) best = b->cpu_us;
        if (!rc->run || !best || !same || !same->run) continue;
        xs[n] = rc->cpu_us / same->cpu_us;
        xb[n] = rc->cpu_us / best;
        us[n] = rc->cpu_us;
        bs[n++] = best;
      }
      if (!n) {
        printf("  %s at %d streams: CPU <= %.2fx nginx: not measured (%s)\n", d->label, counts[ci], lim,
               !c->run ? (c->why ? c->why : "?") : nginx_binary ? "nginx not run (--only)" : nginx_missing);
      } else {
        double ms = median_of(xs, n), mb = median_of(xb, n);
        printf("  %s at %d streams: CPU <= %.2fx nginx: %s (%.2fx nginx %dw, %.2fx its best; %.2f against %.2f µs%s)\n",
               d->label, counts[ci], lim, ms <= lim && mb <= lim ? "MET" : "NOT MET", ms,
               find_proxy(P_NGINX, d->workers, 0) >= 0 ? d->workers : 2, mb, median_of(us, n),
               median_of(bs, n), n > 1 ? "; medians of the runs" : "");
      }
      p99_runs o;
      if (!p99_compare(ci, pi, n2, 1.2, &o)) {
        printf("  %s at %d streams: added p99 <= 1.2x nginx 2w: not measured (%s)\n", d->label, counts[ci],
               !c->run ? (c->why ? c->why : "?") : nginx_binary ? "nginx 2w not run (--only)" : nginx_missing);
      } else if (o.n == 1) {
        printf("  %s at %d streams: added p99 <= 1.2x nginx 2w: %s (%.0f against %.0f µs%s)\n", d->label,
               counts[ci], o.verdict, o.ga[0], o.na[0],
               o.na[0] > 0 ? "" : "; nginx adds nothing measurable at p99 here");
      } else {
        char med[24];
        fmt_ratio(med, sizeof med, o.median);
        printf("  %s at %d streams: added p99 <= 1.2x nginx 2w: %s (median ratio %s over %d runs; the "
               "table above)\n", d->label, counts[ci], o.verdict, med, o.n);
      }
      const cell *dc = &cells[ci][0];
      if (counts[ci] >= 5000 && c->run) {
        if (c->r.lost || c->r.corrupted || !c->r.unfinished)
          printf("  %s at %d streams: no stream lost: %s (%d lost, %d corrupted, %d of %d complete)\n",
                 d->label, counts[ci], !c->r.lost && !c->r.corrupted ? "MET" : "NOT MET", c->r.lost,
                 c->r.corrupted, c->r.completed, counts[ci]);
        else
          printf("  %s at %d streams: no stream lost: none lost, but not measured to the end: %d streams "
                 "still running at the deadline (%d complete; direct: %d complete, %d unfinished: this "
                 "machine did not carry %d chunks/s)\n",
                 d->label, counts[ci], c->r.unfinished, c->r.completed, dc->r.completed,
                 dc->r.unfinished, counts[ci] * rate);
      }
    }
    const idle_cell *h = &idles[0][pi], *f = &idles[1][pi];
    if (h->run && f->run) {
      double worst = h->kib_per_stream > f->kib_per_stream ? h->kib_per_stream : f->kib_per_stream;
      printf("  %s: <= 32 KiB per idle stream: %s (%.1f KiB waiting for the reply, %.1f after its first "
             "chunk)\n",
             d->label, worst <= 32 ? "MET" : "NOT MET", h->kib_per_stream, f->kib_per_stream);
    } else {
      printf("  %s: <= 32 KiB per idle stream: not measured (%s)\n", d->label,
             !h->run ? (h->why ? h->why : "not run") : (f->why ? f->why : "not run"));
    }
  }
  int has5000 = 0;
  for (int ci = 0; ci < ncounts; ci++) has5000 |= counts[ci] >= 5000;
  if (!has5000) printf("  no stream lost at 5,000: not measured (not in --streams; --full has it)\n");
  return 0;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: gateway_bench TOOLSTREAM_BINARY [options]\n"
          "\n"
          "The same paced load (CHUNKS chunks per stream at RATE/s, random phase) direct, through\n"
          "nginx (1 and 2 workers) and through `toolstream gateway` (without and with its tap;\n"
          "with 2 workers too when it has --workers), in one run; then RSS per idle stream and\n"
          "system calls per chunk (strace -c -f -p) per proxy.\n"
          "\n"
          "  --streams LIST      stream counts, comma-separated (default 100,1000)\n"
          "  --full              the issue's matrix: --streams 1,100,1000,5000\n"
          "  --chunks N          chunks per stream (default 250)\n"
          "  --rate HZ           chunks per second per stream (default 50)\n"
          "  --deadline S        seconds past a stream's paced length (CHUNKS / RATE, + 1 s of\n"
          "                      ramp) after which streams still running count as unfinished\n"
          "                      (default 120)\n"
          "  --idle-streams N    streams held idle for RSS per stream (default 1000; 0: skip)\n"
          "  --idle-ms MS        how long they stay idle before RSS is read (default 1000)\n"
          "  --sys-streams LIST  stream counts of the strace runs, comma-separated (default 20,100:\n"
          "                      few enough that a traced proxy keeps up; 0: skip)\n"
          "  --sys-chunks N      chunks per stream in the strace runs (default: --chunks)\n"
          "  --nginx PATH        the nginx binary (default: nginx on PATH, else /usr/sbin/nginx;\n"
          "                      'none' skips the nginx cells)\n"
          "  --only LIST         proxies to run, comma-separated ids (direct always runs):\n"
          "                      nginx1 nginx2 gw1 gw1pub gw2 gw2pub\n"
          "  --runs N            measure the latency matrix N times (1-9, default 1), the\n"
          "                      proxies in reverse order every other run; the targets then\n"
          "                      use the median ratio of the N runs, and a p99 cell whose\n"
          "                      runs fall on both sides of the bound while nginx's own added\n"
          "                      p99 moved more than 2x is UNMEASURABLE\n"
          "  --pin               the bench (one thread: upstream and clients) on one CPU and\n"
          "                      every proxy on the others (needs 2 CPUs), so that no proxy\n"
          "                      waits for the bench's CPU; nginx's 2 workers then share\n"
          "                      what is left, as the gateway's do\n"
          "  --tsv FILE          also write the machine-readable cell lines to FILE\n"
          "  -h, --help          this help\n"
          "\n"
          "Exit status: 0 when every stream of every direct and gateway cell completed\n"
          "uncorrupted, 1 otherwise or when a proxy cannot start, 2 for usage errors (streams\n"
          "nginx lost are printed, and do not fail the run).\n");
}

static int parse_int(const char *s, int lo, int hi, int *out) {
  char *e;
  long v = strtol(s, &e, 10);
  if (e == s || *e || v < lo || v > hi) return -1;
  *out = (int)v;
  return 0;
}

/* name's path on PATH (in buf), or NULL. */
static const char *find_on_path(const char *name, char *buf, size_t cap) {
  const char *path = getenv("PATH");
  if (!path) return NULL;
  char copy[4096];
  snprintf(copy, sizeof copy, "%s", path);
  for (char *save, *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
    snprintf(buf, cap, "%s/%s", d, name);
    if (!access(buf, X_OK)) return buf;
  }
  return NULL;
}

static const char *find_nginx(void) {
  static char buf[512];
  if (find_on_path("nginx", buf, sizeof buf)) return buf;
  if (!access("/usr/sbin/nginx", X_OK)) return "/usr/sbin/nginx"; /* PATH without sbin */
  return NULL;
}

/* The first line a command prints (stdout and stderr), into out. */
static void first_line(const char *cmd, char *out, size_t cap) {
  FILE *f = popen(cmd, "r");
  out[0] = '\0';
  if (!f) return;
  if (fgets(out, (int)cap, f)) out[strcspn(out, "\n")] = '\0';
  pclose(f);
}

static int help_has(const char *flag) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "'%s' gateway --help 2>&1", ts_binary);
  FILE *f = popen(cmd, "r");
  if (!f) return 0;
  char line[512];
  int found = 0;
  size_t fl = strlen(flag);
  while (fgets(line, sizeof line, f)) {
    char *p = strstr(line, flag);
    if (p && (p[fl] == ' ' || p[fl] == '\n' || p[fl] == '=' || p[fl] == ',')) found = 1;
  }
  pclose(f);
  return found;
}

/* A comma-separated list of stream counts (1-100000, at most MAX_COUNTS) into out[]. */
static int parse_counts(const char *opt, const char *arg, int *out, int *n) {
  char copy[256];
  *n = 0;
  if (strlen(arg) >= sizeof copy) {
    fprintf(stderr, "gateway_bench: %s list too long: %s\n", opt, arg);
    return -1;
  }
  snprintf(copy, sizeof copy, "%s", arg);
  for (char *save, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (*n == MAX_COUNTS || parse_int(t, 1, 100000, &out[*n])) {
      fprintf(stderr, "gateway_bench: bad %s list: %s\n", opt, arg);
      return -1;
    }
    (*n)++;
  }
  if (!*n) {
    fprintf(stderr, "gateway_bench: empty %s list\n", opt);
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  const char *streams_arg = "100,1000", *sys_arg = "20,100", *only = NULL, *tsv_path = NULL, *nginx_arg = NULL;
  if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
    usage(stdout);
    return 0;
  }
  if (argc < 2 || argv[1][0] == '-') {
    usage(stderr);
    return 2;
  }
  ts_binary = argv[1];
  for (int i = 2; i < argc; i++) {
    const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int bad = 0;
    if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(o, "--runs") && v && !parse_int(v, 1, MAX_RUNS, &nruns)) {
      i++;
      continue;
    } else if (!strcmp(o, "--runs")) {
      fprintf(stderr, "gateway_bench: --runs needs a count from 1 to %d\n", MAX_RUNS);
      return 2;
    } else if (!strcmp(o, "--pin")) {
      pin = 1;
      continue;
    } else if (!strcmp(o, "--full")) {
      streams_arg = "1,100,1000,5000";
      continue;
    }
    static const char *const with_value[] = {"--streams",    "--chunks",   "--rate",
                                             "--deadline",   "--idle-streams", "--idle-ms",
                                             "--sys-streams", "--sys-chunks", "--nginx",
                                             "--only",       "--tsv"};
    int known = 0;
    for (size_t k = 0; k < sizeof with_value / sizeof *with_value; k++) known |= !strcmp(o, with_value[k]);
    if (!known) {
      fprintf(stderr, "gateway_bench: unknown option %s (--help)\n", o);
      return 2;
    }
    if (!v) {
      fprintf(stderr, "gateway_bench: %s needs a value (--help)\n", o);
      return 2;
    }
    i++;
    if (!strcmp(o, "--streams")) streams_arg = v;
    else if (!strcmp(o, "--chunks")) bad = parse_int(v, 2, 100000, &nchunks);
    else if (!strcmp(o, "--rate")) bad = parse_int(v, 1, 10000, &rate);
    else if (!strcmp(o, "--idle-streams")) bad = parse_int(v, 0, 100000, &idle_n);
    else if (!strcmp(o, "--deadline")) bad = parse_int(v, 1, 3600, &deadline_s);
    else if (!strcmp(o, "--idle-ms")) bad = parse_int(v, 0, 600000, &idle_ms);
    else if (!strcmp(o, "--sys-streams")) sys_arg = v;
    else if (!strcmp(o, "--sys-chunks")) bad = parse_int(v, 2, 100000, &sys_chunks);
    else if (!strcmp(o, "--nginx")) nginx_arg = v;
    else if (!strcmp(o, "--only")) only = v;
    else if (!strcmp(o, "--tsv")) tsv_path = v;
    else {
      fprintf(stderr, "gateway_bench: unknown option %s (--help)\n", o);
      return 2;
    }
    if (bad) {
      fprintf(stderr, "gateway_bench: bad value for %s: %s\n", o, v);
      return 2;
    }
  }
  if (parse_counts("--streams", streams_arg, counts, &ncounts)) return 2;
  if (strcmp(sys_arg, "0") && parse_counts("--sys-streams", sys_arg, sys_n, &nsys)) return 2;
  if (!sys_chunks) sys_chunks = nchunks;
  do_idle = idle_n > 0;
  do_sys = nsys > 0;
  if (access(ts_binary, X_OK)) {
    fprintf(stderr, "gateway_bench: %s: not an executable\n", ts_binary);
    return 2;
  }
  nginx_binary = nginx_arg ? (strcmp(nginx_arg, "none") ? nginx_arg : NULL) : find_nginx();
  if (nginx_arg && nginx_binary && access(nginx_binary, X_OK)) {
    fprintf(stderr, "gateway_bench: %s: not an executable\n", nginx_binary);
    return 2;
  }
  if (nginx_binary) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "'%s' -v 2>&1", nginx_binary);
    first_line(cmd, nginx_version, sizeof nginx_version);
  }
  gw_has_workers = help_has("--workers");
  gw_has_no_tap = help_has("--no-tap");

  /* the proxies of every stream count, in this order */
  static const proxy_def all[] = {
      {"direct", "direct", P_DIRECT, 0, 0},
      {"nginx1", "nginx 1 worker", P_NGINX, 1, 0},
      {"nginx2", "nginx 2 workers", P_NGINX, 2, 0},
      {"gw1", "gateway, no tap", P_GATEWAY, 1, 0},
      {"gw1pub", "gateway --pub", P_GATEWAY, 1, 1},
      {"gw2", "gateway 2 workers, no tap", P_GATEWAY, 2, 0},
      {"gw2pub", "gateway 2 workers --pub", P_GATEWAY, 2, 1},
  };
  for (size_t k = 0; k < sizeof all / sizeof *all; k++) {
    const proxy_def *d = &all[k];
    if (d->kind == P_GATEWAY && d->workers > 1 && !gw_has_workers) continue;
    if (only && d->kind != P_DIRECT) {
      const char *p = strstr(only, d->id);
      size_t l = strlen(d->id);
      int hit = 0;
      for (; p; p = strstr(p + 1, d->id))
        if ((p == only || p[-1] == ',') && (p[l] == ',' || !p[l])) hit = 1;
      if (!hit) continue;
    }
    proxies[nproxies++] = *d;
  }
  if (tsv_path && !(tsv = fopen(tsv_path, "w"))) {
    fprintf(stderr, "gateway_bench: cannot write %s: %s\n", tsv_path, strerror(errno));
    return 1;
  }

  max_streams = idle_n;
  for (int ci = 0; ci < ncounts; ci++)
    if (counts[ci] > max_streams) max_streams = counts[ci];
  for (int si = 0; si < nsys; si++)
    if (sys_n[si] > max_streams) max_streams = sys_n[si];
  signal(SIGPIPE, SIG_IGN);
  /* each stream holds up to four sockets here (client, upstream) and two in the proxy */
  struct rlimit rl;
  if (!getrlimit(RLIMIT_NOFILE, &rl)) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur != RLIM_INFINITY && (rlim_t)max_streams * 2 + 256 > rl.rlim_cur) {
      fprintf(stderr,
              "gateway_bench: %d streams need about %d file descriptors, the hard limit is %llu: "
              "raise it (ulimit -Hn) or ask for fewer\n",
              max_streams, max_streams * 2 + 256, (unsigned long long)rl.rlim_cur);
      return 1;
    }
  }
  if (pin) { /* the first CPU allowed for the bench, the rest for the proxies */
    cpu_set_t allowed, self;
    CPU_ZERO(&self);
    CPU_ZERO(&proxy_cpus);
    if (sched_getaffinity(0, sizeof allowed, &allowed)) {
      perror("gateway_bench: sched_getaffinity");
      return 1;
    }
    int first = -1;
    for (int c = 0; c < CPU_SETSIZE; c++) {
      if (!CPU_ISSET(c, &allowed)) continue;
      if (first < 0) {
        first = c;
        CPU_SET(c, &self);
      } else {
        CPU_SET(c, &proxy_cpus);
      }
    }
    if (first < 0 || !CPU_COUNT(&proxy_cpus)) {
      fprintf(stderr, "gateway_bench: --pin needs at least 2 CPUs (this process may use %d)\n",
              CPU_COUNT(&allowed));
      return 2;
    }
    if (sched_setaffinity(0, sizeof self, &self)) {
      perror("gateway_bench: sched_setaffinity");
      return 1;
    }
    printf("pinned: the bench on CPU %d, the proxies on %d other CPU(s)\n", first,
           CPU_COUNT(&proxy_cpus));
  }
  srandom(1);
  base = event_base_new();
  samples_cap = (size_t)max_streams * (size_t)(nchunks > sys_chunks ? nchunks : sys_chunks);
  samples = malloc(sizeof *samples * samples_cap);
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  struct evconnlistener *l = evconnlistener_new_bind(
      base, up_accept, NULL, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 4096,
      (struct sockaddr *)&sa, sizeof sa);
  if (!l || !samples) {
    fprintf(stderr, "gateway_bench: cannot listen\n");
    return 1;
  }
  socklen_t sl = sizeof sa;
  getsockname(evconnlistener_get_fd(l), (struct sockaddr *)&sa, &sl);
  up_port = ntohs(sa.sin_port);

  printf("gateway_bench: %d chunks per stream at %d/s; stream counts", nchunks, rate);
  for (int ci = 0; ci < ncounts; ci++) printf(" %d", counts[ci]);
  printf("; file descriptor limit %llu\n", (unsigned long long)rl.rlim_cur);
  printf("nginx: %s\n", nginx_binary ? (nginx_version[0] ? nginx_version : nginx_binary)
                                     : "not found: the nginx cells are skipped (Debian: apt-get install nginx)");
  printf("gateway: %s (%s; %s)\n", ts_binary,
         gw_has_workers ? "has --workers: 1 and 2 workers" : "no --workers: one loop",
         gw_has_no_tap ? "no tap: --no-tap" : "no tap: without --pub");
  printf("load average at start: %s\n", load_now());
  fflush(stdout);

  for (int pi = 0; pi < nproxies; pi++) { /* what a skipped part says in the targets */
    if (!do_idle) idles[0][pi].why = idles[1][pi].why = "skipped: --idle-streams 0";
  }
  for (int run = 0; run < nruns; run++) {
    cells = run_cells[run];
    if (nruns > 1) printf("\n## run %d of %d\n", run + 1, nruns);
    for (int ci = 0; ci < ncounts; ci++) {
      /* direct first (the others' baseline); the proxies in order, then reversed in the
       * next run, so that a drift of the load falls on every side */
      measure_cell(ci, 0);
      for (int k = 1; k < nproxies; k++) {
        int pi = run % 2 ? nproxies - k : k;
        fprintf(stderr, "gateway_bench: %d streams, %s\n", counts[ci], proxies[pi].label);
        measure_cell(ci, pi);
      }
      print_count(ci);
      printf("load average after: %s\n", load_now());
    }
  }
  cells = run_cells[0];
  if (nruns > 1) print_runs();

  if (do_idle) {
    printf("\nRSS per idle stream: %d streams, then %d ms of nothing: waiting for the reply (its head "
           "received) and paused inside it (head and first chunk received); VmRSS delta over the "
           "fresh proxy (nginx: master + workers) / streams\n\n",
           idle_n, idle_ms);
    printf("| proxy | idle streams | waiting: RSS before / with them KiB | KiB per stream | paused: RSS before "
           "/ with them KiB | KiB per stream |\n");
    printf("|---|---:|---:|---:|---:|---:|\n");
    static const char *const kinds[] = {"waiting", "paused"};
    for (int pi = 1; pi < nproxies; pi++) {
      for (int kind = 0; kind < 2; kind++) {
        fprintf(stderr, "gateway_bench: idle streams (%s), %s\n", kinds[kind], proxies[pi].label);
        measure_idle(pi, kind);
        const idle_cell *c = &idles[kind][pi];
        if (!c->run)
          emit("idle\tproxy=%s\tkind=%s\tskipped=%s", proxies[pi].id, kinds[kind], c->why);
        else
          emit("idle\tproxy=%s\tkind=%s\tstreams=%d\tready=%d\trss_before_kib=%ld\trss_after_kib=%ld\t"
               "kib_per_stream=%.2f",
               proxies[pi].id, kinds[kind], idle_n, c->ready, c->before_kb, c->after_kb, c->kib_per_stream);
      }
    }
    for (int pi = 1; pi < nproxies; pi++) {
      const idle_cell *h = &idles[0][pi], *f = &idles[1][pi];
      if (!h->run || !f->run) {
        printf("| %s | skipped: %s | | | | |\n", proxies[pi].label, !h->run ? h->why : f->why);
        continue;
      }
      printf("| %s | %d/%d, %d/%d | %ld / %ld | %.1f | %ld / %ld | %.1f |\n", proxies[pi].label, h->ready,
             idle_n, f->ready, idle_n, h->before_kb, h->after_kb, h->kib_per_stream, f->before_kb,
             f->after_kb, f->kib_per_stream);
    }
  }

  if (do_sys) {
    printf("\nsystem calls per forwarded chunk: strace -c -f -p on the proxy's processes, separate "
           "runs of");
    for (int si = 0; si < nsys; si++) printf("%s %d", si ? "," : "", sys_n[si]);
    printf(" streams x %d chunks at %d/s (epoll_wait counts fall as more streams share a wake-up; the "
           "rest do not depend on timing)\n\n",
           sys_chunks, rate);
    printf("| streams | proxy | chunks | calls per chunk | reads | writes | epoll_wait | epoll_ctl | other | calls / nginx same workers |\n");
    printf("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    int behind = 0;
    for (int si = 0; si < nsys; si++) {
      for (int pi = 1; pi < nproxies; pi++) {
        fprintf(stderr, "gateway_bench: system calls, %d streams, %s\n", sys_n[si], proxies[pi].label);
        measure_sys(si, pi);
      }
      for (int pi = 1; pi < nproxies; pi++) {
        const sys_cell *c = &syscells[si][pi];
        if (!c->run) {
          printf("| %d | %s | skipped: %s | | | | | | | |\n", sys_n[si], proxies[pi].label, c->why);
          emit("syscalls\tstreams=%d\tproxy=%s\tskipped=%s", sys_n[si], proxies[pi].id, c->why);
          continue;
        }
        behind |= sys_behind(c);
        double n = (double)c->chunks;
        unsigned long other = c->c.total - c->c.reads - c->c.writes - c->c.epoll_wait - c->c.epoll_ctl;
        int same = find_proxy(P_NGINX, proxies[pi].workers, 0);
        char rs[16] = "-";
        if (proxies[pi].kind == P_GATEWAY && same >= 0 && syscells[si][same].run)
          ratio(rs, sizeof rs, (double)c->c.total / n,
                (double)syscells[si][same].c.total / (double)syscells[si][same].chunks, 1);
        printf("| %d | %s | %zu | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %s |\n", sys_n[si],
               proxies[pi].label, c->chunks, (double)c->c.total / n, (double)c->c.reads / n,
               (double)c->c.writes / n, (double)c->c.epoll_wait / n, (double)c->c.epoll_ctl / n,
               (double)other / n, rs);
        emit("syscalls\tstreams=%d\tproxy=%s\tchunks=%zu\tper_chunk=%.3f\treads=%.3f\twrites=%.3f\t"
             "epoll_wait=%.3f\tepoll_ctl=%.3f\tother=%.3f\tbehind=%d",
             sys_n[si], proxies[pi].id, c->chunks, (double)c->c.total / n, (double)c->c.reads / n,
             (double)c->c.writes / n, (double)c->c.epoll_wait / n, (double)c->c.epoll_ctl / n,
             (double)other / n, sys_behind(c));
      }
    }
    printf("\n%s\n", behind ? "note: a proxy read fewer than 0.9 times per chunk: under strace it fell behind and "
                              "read several chunks at once, so its counts are lower than at full speed "
                              "(its target is UNMEASURABLE there; try fewer --sys-streams)"
                            : "every traced proxy read about once per chunk: it kept up under strace");
  }
  targets();
  printf("load average at the end: %s\n", load_now());

  int ok = 1, nginx_short = 0;
  for (int run = 0; run < nruns; run++)
    for (int ci = 0; ci < ncounts; ci++)
      for (int pi = 0; pi < nproxies; pi++) {
        const cell *c = &run_cells[run][ci][pi];
        if (!c->run && c->why != nginx_missing) ok = 0;
        if (!c->run || (c->r.completed == counts[ci] && !c->r.corrupted)) continue;
        if (proxies[pi].kind != P_NGINX) {
          ok = 0; /* lost, unfinished or corrupted */
          continue;
        }
        nginx_short = 1;
        printf("%s at %d streams (run %d): %d of %d complete, %d lost, %d unfinished, %d corrupted\n",
               proxies[pi].label, counts[ci], run + 1, c->r.completed, counts[ci], c->r.lost,
               c->r.unfinished, c->r.corrupted);
      }
  drain_loop(50);
  while (up_all) up_free(up_all);
  evconnlistener_free(l);
  event_base_free(base);
  free(samples);
  if (tsv) fclose(tsv);
  printf("%s\n", ok ? nginx_short ? "all streams of every direct and gateway cell complete and intact (nginx's "
                                    "shortfall above)"
                                  : "all streams of every cell complete and intact"
                    : "FAILED: streams lost, corrupted or unfinished at the deadline, or a proxy did not start");
  return ok ? 0 : 1;
}
