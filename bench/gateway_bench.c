/*
 * gateway_bench.c: what `toolstream gateway` adds per chunk, under load.
 *
 * One process plays both ends on one libevent loop: an upstream that streams OpenAI
 * Chat tool-call chunks paced like a model (RATE chunks per second per stream, random
 * phase), and N concurrent clients that read them. Each chunk carries the monotonic
 * time at which the upstream wrote it; a client takes the time when it has read the
 * chunk, so latency = read time - write time, measured on one clock in one thread.
 *
 * Two phases in the same run: the clients connect straight to the upstream (the
 * baseline: what the loopback, the kernel and this process cost), then through the
 * gateway (a child `toolstream gateway --pub ipc://...`, its tap on). The gateway's
 * added latency is the difference of the two distributions at p50 and p99.
 * Every chunk is checked byte for byte (it is regenerated from its stream, index and
 * time fields); every stream must complete. The gateway's CPU time (utime + stime from
 * /proc) over the phase gives the CPU per 1,000 chunks; its peak resident memory is
 * sampled every 100 ms.
 *
 * Usage: gateway_bench TOOLSTREAM_BINARY [--streams N] [--chunks N] [--rate HZ]
 * Defaults: 1000 streams, 250 chunks each (5 s at 50 chunks/s), 50 chunks/s.
 * Exit status 0 when every stream completed uncorrupted in both phases.
 */
#define _DEFAULT_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

static struct event_base *base;
static int nstreams = 1000, nchunks = 250, rate = 50;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
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

typedef struct {
  struct bufferevent *bev;
  struct event *timer;
  int s, i, started;
} up_conn;

static void up_free(up_conn *u) {
  if (u->timer) event_free(u->timer);
  bufferevent_free(u->bev);
  free(u);
}

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
    return; /* the client closes; our event callback frees */
  }
  struct timeval tv = {0, 1000000 / rate};
  evtimer_add(u->timer, &tv);
}

static void up_read(struct bufferevent *bev, void *arg) {
  up_conn *u = arg;
  struct evbuffer *in = bufferevent_get_input(bev);
  if (u->started) {
    evbuffer_drain(in, evbuffer_get_length(in));
    return;
  }
  size_t len = evbuffer_get_length(in);
  char *p = (char *)evbuffer_pullup(in, -1);
  char *end = p ? strstr(p, "\r\n\r\n") : NULL; /* requests are small and NUL-free */
  (void)len;
  if (!end) return;
  /* the stream id travels in the path: /v1/chat/completions?s=N */
  char *q = strstr(p, "?s=");
  u->s = q ? atoi(q + 3) : -1;
  u->started = 1;
  evbuffer_drain(in, evbuffer_get_length(in));
  static const char head[] =
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
      "Transfer-Encoding: chunked\r\n\r\n";
  bufferevent_write(bev, head, sizeof head - 1);
  u->timer = evtimer_new(base, up_tick, u);
  struct timeval tv = {0, (suseconds_t)(random() % (1000000 / rate))}; /* random phase */
  evtimer_add(u->timer, &tv);
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
  u->bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
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
} client;

static client *clients;
static uint64_t *samples;
static size_t nsamples;
static int completed, corrupted, failed, open_clients;
static int target_port;

static void client_fail(client *c, const char *why) {
  if (c->done) return;
  c->done = 1;
  c->bad = 1;
  failed++;
  open_clients--;
  if (failed <= 5) fprintf(stderr, "stream %d: %s (at chunk %d)\n", c->s, why, c->next_i);
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
    if (n >= sizeof ev) {
      client_fail(c, "event too long");
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
    samples[nsamples++] = t_read - t;
    if (++c->next_i == nchunks) return;
  }
}

static void client_read(struct bufferevent *bev, void *arg) {
  client *c = arg;
  uint64_t t_read = now_ns();
  struct evbuffer *in = bufferevent_get_input(bev);
  if (!c->headers_done) {
    struct evbuffer_ptr e = evbuffer_search(in, "\r\n\r\n", 4, NULL);
    if (e.pos < 0) return;
    char head[4096];
    size_t hn = (size_t)e.pos + 4 < sizeof head - 1 ? (size_t)e.pos + 4 : sizeof head - 1;
    evbuffer_remove(in, head, hn);
    head[hn] = '\0';
    if (strncmp(head, "HTTP/1.1 200", 12) || !strstr(head, "chunked")) {
      client_fail(c, "bad response head");
      return;
    }
    c->headers_done = 1;
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
  parse_events(c, t_read);
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

static void connect_some(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  struct event *self = arg;
  for (int k = 0; k < 10 && next_client < nstreams; k++, next_client++) {
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
    struct timeval tv = {0, 10000}; /* 10 connections every 10 ms: 1 s for 1000 */
    evtimer_add(self, &tv);
  }
}

/* ---- the gateway process ------------------------------------------------------------- */

static pid_t gw_pid;
static long gw_rss_peak_kb;

static double proc_cpu_s(pid_t pid) {
  char path[64], buf[2048];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *p = strrchr(buf, ')');
  unsigned long ut = 0, st = 0;
  if (p) sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st);
  return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static long proc_rss_kb(pid_t pid) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  long kb = 0;
  if (!f) return 0;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, "VmRSS:", 6)) kb = atol(line + 6);
  fclose(f);
  return kb;
}

static void sample_rss(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  if (gw_pid) {
    long kb = proc_rss_kb(gw_pid);
    if (kb > gw_rss_peak_kb) gw_rss_peak_kb = kb;
  }
  struct timeval tv = {0, 100000};
  evtimer_add(arg, &tv);
}

static int start_gateway(const char *binary, int upstream_port) {
  int pfd[2];
  if (pipe(pfd)) return -1;
  char up[64], pub[128];
  snprintf(up, sizeof up, "http://127.0.0.1:%d", upstream_port);
  snprintf(pub, sizeof pub, "ipc:///tmp/ts-gw-bench-%d.bus", (int)getpid());
  gw_pid = fork();
  if (gw_pid == 0) {
    dup2(pfd[1], 1);
    close(pfd[0]);
    close(pfd[1]);
    execl(binary, "toolstream", "gateway", "--listen", "127.0.0.1:0", "--upstream", up, "--pub",
          pub, "--progress-arg", "write_file=description", (char *)NULL);
    _exit(127);
  }
  close(pfd[1]);
  char line[128];
  ssize_t n = read(pfd[0], line, sizeof line - 1);
  close(pfd[0]);
  if (n <= 0) return -1;
  line[n] = '\0';
  char *colon = strrchr(line, ':');
  return colon ? atoi(colon + 1) : -1;
}

/* ---- phases -------------------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

typedef struct {
  double p50_us, p99_us, p999_us, max_us;
  int completed, failed, corrupted;
  size_t samples;
  double wall_s;
} phase_result;

static phase_result run_phase(int port) {
  target_port = port;
  clients = calloc((size_t)nstreams, sizeof *clients);
  nsamples = 0;
  completed = corrupted = failed = 0;
  open_clients = nstreams;
  next_client = 0;
  struct event *conn = evtimer_new(base, connect_some, event_self_cbarg());
  connect_some(-1, 0, conn);
  uint64_t t0 = now_ns();
  /* a deadline: the streams take nchunks / rate seconds, plus ramp-up and slack */
  struct timeval limit = {nchunks / rate + 30, 0};
  event_base_loopexit(base, &limit);
  event_base_dispatch(base);
  phase_result r;
  memset(&r, 0, sizeof r);
  r.wall_s = (double)(now_ns() - t0) / 1e9;
  event_free(conn);
  for (int i = 0; i < nstreams; i++) {
    if (clients[i].bev) {
      bufferevent_free(clients[i].bev);
      if (!clients[i].done) failed++;
    }
    if (clients[i].body) evbuffer_free(clients[i].body);
  }
  free(clients);
  qsort(samples, nsamples, sizeof *samples, cmp_u64);
  if (nsamples) {
    r.p50_us = (double)samples[nsamples / 2] / 1e3;
    r.p99_us = (double)samples[(size_t)((double)nsamples * 0.99)] / 1e3;
    r.p999_us = (double)samples[(size_t)((double)nsamples * 0.999)] / 1e3;
    r.max_us = (double)samples[nsamples - 1] / 1e3;
  }
  r.completed = completed;
  r.failed = failed;
  r.corrupted = corrupted;
  r.samples = nsamples;
  return r;
}

static void print_phase(const char *name, const phase_result *r) {
  printf("| %s | %d/%d | %d | %zu | %.0f | %.0f | %.0f | %.0f |\n", name, r->completed, nstreams,
         r->corrupted, r->samples, r->p50_us, r->p99_us, r->p999_us, r->max_us);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: gateway_bench TOOLSTREAM_BINARY [--streams N] [--chunks N] [--rate HZ]\n");
    return 2;
  }
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--streams")) nstreams = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--chunks")) nchunks = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--rate")) rate = atoi(argv[i + 1]);
  }
  if (nstreams < 1 || nchunks < 2 || rate < 1 || rate > 10000) {
    fprintf(stderr, "gateway_bench: bad options\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  struct rlimit rl;
  if (!getrlimit(RLIMIT_NOFILE, &rl)) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  srandom(1);
  base = event_base_new();
  samples = malloc(sizeof *samples * (size_t)nstreams * (size_t)nchunks);
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  struct evconnlistener *l = evconnlistener_new_bind(
      base, up_accept, NULL, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 4096,
      (struct sockaddr *)&sa, sizeof sa);
  if (!l) {
    fprintf(stderr, "gateway_bench: cannot listen\n");
    return 1;
  }
  socklen_t sl = sizeof sa;
  getsockname(evconnlistener_get_fd(l), (struct sockaddr *)&sa, &sl);
  int up_port = ntohs(sa.sin_port);
  int gw_port = start_gateway(argv[1], up_port);
  if (gw_port <= 0) {
    fprintf(stderr, "gateway_bench: cannot start the gateway (%s)\n", argv[1]);
    return 1;
  }
  struct event *rss = evtimer_new(base, sample_rss, event_self_cbarg());
  long rss_idle = proc_rss_kb(gw_pid);

  printf("gateway_bench: %d concurrent streams x %d chunks at %d chunks/s each (%d chunks/s in all)\n",
         nstreams, nchunks, rate, nstreams * rate);
  phase_result direct = run_phase(up_port);
  sample_rss(-1, 0, rss);
  double cpu0 = proc_cpu_s(gw_pid);
  phase_result via = run_phase(gw_port);
  double cpu1 = proc_cpu_s(gw_pid);
  evtimer_del(rss);
  long rss_after = proc_rss_kb(gw_pid);

  printf("\nlatency from the upstream writing a chunk to the client reading it (us)\n\n");
  printf("| path | streams completed | corrupted | chunks | p50 | p99 | p99.9 | max |\n");
  printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
  print_phase("direct", &direct);
  print_phase("through the gateway", &via);
  printf("\nadded by the gateway: p50 %.0f us, p99 %.0f us\n", via.p50_us - direct.p50_us,
         via.p99_us - direct.p99_us);
  double chunks = (double)via.samples;
  printf("gateway CPU: %.2f s over %.1f s for %.0f chunks = %.1f ms per 1,000 chunks (%.0f%% of one core)\n",
         cpu1 - cpu0, via.wall_s, chunks, chunks ? (cpu1 - cpu0) * 1e6 / chunks : 0,
         100 * (cpu1 - cpu0) / via.wall_s);
  printf("gateway resident memory: %ld KiB idle, %ld KiB peak under load, %ld KiB after\n", rss_idle,
         gw_rss_peak_kb, rss_after);

  kill(gw_pid, SIGTERM);
  int st;
  waitpid(gw_pid, &st, 0);
  event_free(rss);
  evconnlistener_free(l);
  event_base_free(base);
  free(samples);
  int ok = direct.completed == nstreams && via.completed == nstreams && !direct.corrupted &&
           !via.corrupted;
  printf("%s\n", ok ? "all streams complete and intact" : "FAILED: streams incomplete or corrupted");
  return ok ? 0 : 1;
}
