/*
 * tap_bench.c: `toolstream tap` end to end, in process, on the streams tap_streams
 * wrote (one 64 KiB write_file call in 4-16 byte deltas, in the OpenAI Chat, OpenAI
 * Responses, Anthropic, Amazon Bedrock (binary event stream) and Vertex AI (Gemini SSE
 * with streamed `partialArgs`) wire formats). The tap reads each with `auto`, as the
 * command does by default.
 *
 * What one run of a stream is. Exactly what the command does between read() and
 * write(): ts_tap_new with the progress argument of write_file set to `description`,
 * ts_tap_feed over the whole stream, ts_tap_finish, ts_tap_free, and every event
 * encoded by ts_event_encode into a line buffer (the command then writes the line; here
 * it is dropped). Three ways of feeding:
 *   event   one ts_tap_feed per SSE event (Bedrock: per event stream message), as a live
 *           stream arrives (a model emits a
 *           few tokens at a time, each in its own read): the headline row;
 *   deltas  the same with --deltas on (a tool_call_delta event per fragment);
 *   64k     64 KiB reads, as the command reads a file.
 * The input is copied into a fresh buffer before each run (ts_tap_feed decodes in
 * place), outside the timed region.
 *
 * What is measured, per run: CPU time (CLOCK_PROCESS_CPUTIME_ID), wall time
 * (CLOCK_MONOTONIC), and the wall time from the start of the run (before ts_tap_new)
 * to the tool_call_started event that carries the description. A row reports the
 * median over the runs, after warm-up runs; MB/s and events/s are the stream's SSE
 * bytes and SSE events per CPU second (median CPU time; MB = 10^6 bytes). CPU time,
 * not wall time, because these VMs are shared: other work on the machine stretches
 * the wall clock (the table shows both).
 *
 * Every run is checked: one tool_call_started with progress == description.txt, one
 * tool_call_ready whose arguments are byte for byte args.json (for Vertex,
 * args-vertex.json: the same arguments as that reader rebuilds them from the values it
 * is sent), a turn_finished, no error event. A run that fails the check fails the benchmark.
 *
 * `--cli PATH` also times the real command, `PATH tap --progress-arg
 * write_file=description FILE > /dev/null`, a few times per stream (posix_spawn; wall
 * time, and the child's user + system CPU from getrusage(RUSAGE_CHILDREN)): process
 * start, reading the file and writing the lines included.
 *
 * `--only FORMAT` runs one run of the headline row (one feed per SSE event) inside
 * tap_pass() and prints the SSE bytes and events, for valgrind --tool=callgrind
 * --toggle-collect=tap_pass (bench/run.sh turns that into instructions per byte and
 * per event, which repeat where this VM's clocks do not).
 *
 * Output: a readable table on stdout; with `--tsv FILE`, one line per row appended to
 * FILE (format, implementation, bytes, SSE events, CPU ms, wall ms, description ms,
 * runs, best CPU ms), which bench/run.sh merges with the node peers' rows into one report.
 *
 * usage: tap_bench DIR [--runs N] [--cli PATH] [--tsv FILE]
 *        tap_bench DIR --only FORMAT
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "events/event.h"
#include "stream/tap.h"

extern char **environ;

#define WARMUP_RUNS 3
#define DEFAULT_RUNS 25
#define CLI_RUNS 5
#define MAX_RUNS 1000

/* The streams: the row's name, the file tap_streams wrote, the arguments to expect, and
 * whether the file is an AWS event stream (cut per message) rather than SSE (cut per
 * blank line). */
typedef struct {
  const char *name, *file, *args;
  int evs;
} stream_def;

static const stream_def streams[] = {
    {"openai-chat", "openai-chat.sse", "args.json", 0},
    {"openai-responses", "openai-responses.sse", "args.json", 0},
    {"anthropic", "anthropic.sse", "args.json", 0},
    {"bedrock", "bedrock.bin", "args.json", 1},
    {"vertex", "vertex.sse", "args-vertex.json", 0},
};
#define NSTREAMS (sizeof streams / sizeof streams[0])

typedef struct {
  char *p;
  size_t len;
} blob;

static int read_blob(const char *dir, const char *name, blob *b) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "tap_bench: %s: %s\n", path, strerror(errno));
    return -1;
  }
  size_t cap = 1 << 16;
  b->p = malloc(cap);
  b->len = 0;
  for (;;) {
    if (!b->p) {
      fclose(f);
      return -1;
    }
    b->len += fread(b->p + b->len, 1, cap - b->len, f);
    if (b->len < cap) break;
    cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) free(b->p);
    b->p = p;
  }
  fclose(f);
  return 0;
}

static double now(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- one run ------------------------------------------------------------------------ */

typedef struct {
  const blob *args, *desc;
  ts_buf line;
  uint64_t seq;
  size_t out_bytes; /* encoded event bytes: the work cannot be optimised away */
  unsigned events, started, ready, finished, errors;
  double t0, t_desc;
  char why[200];
} run_ctx;

static const char *progress_arg(void *user, const char *tool, size_t len, size_t *arg_len) {
  (void)user;
  if (len != 10 || memcmp(tool, "write_file", 10)) return NULL;
  *arg_len = 11;
  return "description";
}

static int on_event(void *user, const ts_tap_event *e) {
  run_ctx *r = user;
  ts_event ev = {.thread = {"th_bench0123456789", 18}, .seq = ++r->seq, .body = *e};
  ts_buf_reset(&r->line);
  if (ts_event_encode(&ev, &r->line) || ts_buf_putc(&r->line, '\n')) {
    snprintf(r->why, sizeof r->why, "cannot encode an event");
    return 1;
  }
  r->out_bytes += r->line.len;
  r->events++;
  switch (e->type) {
    case TS_TAP_TOOL_CALL_STARTED:
      if (!r->started++) r->t_desc = now(CLOCK_MONOTONIC);
      if (!e->has_progress || e->progress.len != r->desc->len ||
          memcmp(e->progress.p, r->desc->p, r->desc->len))
        snprintf(r->why, sizeof r->why, "tool_call_started without the description");
      break;
    case TS_TAP_TOOL_CALL_READY:
      r->ready++;
      if (e->arguments.len != r->args->len || memcmp(e->arguments.p, r->args->p, r->args->len))
        snprintf(r->why, sizeof r->why, "tool_call_ready arguments differ from args.json");
      break;
    case TS_TAP_TURN_FINISHED:
      r->finished++;
      break;
    case TS_TAP_TOOL_CALL_ERROR:
    case TS_TAP_STREAM_ERROR:
      r->errors++;
      snprintf(r->why, sizeof r->why, "%s: %.*s", ts_tap_type_name(e->type), (int)e->error.len,
               e->error.p);
      break;
    default:
      break;
  }
  return 0;
}

typedef enum { FEED_EVENT, FEED_DELTAS, FEED_64K } feed_mode;
static const char *const mode_names[3] = {"toolstream", "toolstream --deltas",
                                          "toolstream 64k reads"};

typedef struct {
  double cpu, wall, desc;
  unsigned events;
} run_result;

/* `work` holds a fresh copy of the stream; `cuts` are the SSE event ends. */
static int run_once(feed_mode mode, char *work, size_t len, const size_t *cuts, size_t ncuts,
                    const blob *args, const blob *desc, run_result *out) {
  run_ctx r;
  memset(&r, 0, sizeof r);
  r.args = args;
  r.desc = desc;
  ts_buf_init(&r.line, (size_t)64 << 20);
  ts_tap_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.progress_arg = progress_arg;
  cfg.deltas = mode == FEED_DELTAS;

  double c0 = now(CLOCK_PROCESS_CPUTIME_ID);
  r.t0 = now(CLOCK_MONOTONIC);
  ts_tap *tap = NULL;
  ts_tap_new(&tap, &cfg, on_event, &r); /* stays NULL on error */
  if (!tap) {
    ts_buf_fini(&r.line);
    fprintf(stderr, "tap_bench: ts_tap_new failed\n");
    return -1;
  }
  int rc = 0;
  if (mode == FEED_64K) {
    for (size_t at = 0; at < len && !rc; at += 65536)
      rc = ts_tap_feed(tap, work + at, len - at < 65536 ? len - at : 65536);
  } else {
    size_t at = 0;
    for (size_t i = 0; i < ncuts && !rc; i++) {
      rc = ts_tap_feed(tap, work + at, cuts[i] - at);
      at = cuts[i];
    }
    if (!rc && at < len) rc = ts_tap_feed(tap, work + at, len - at);
  }
  if (!rc) rc = ts_tap_finish(tap);
  int failed = ts_tap_failed(tap);
  ts_tap_free(tap);
  double t1 = now(CLOCK_MONOTONIC);
  double c1 = now(CLOCK_PROCESS_CPUTIME_ID);
  ts_buf_fini(&r.line);

  if (!r.why[0] && (rc || failed || r.started != 1 || r.ready != 1 || r.finished != 1 || r.errors))
    snprintf(r.why, sizeof r.why, "rc %d, failed %d, started %u, ready %u, finished %u", rc,
             failed, r.started, r.ready, r.finished);
  if (r.why[0]) {
    fprintf(stderr, "tap_bench: %s: %s\n", mode_names[mode], r.why);
    return -1;
  }
  out->cpu = c1 - c0;
  out->wall = t1 - r.t0;
  out->desc = r.t_desc - r.t0;
  out->events = r.events;
  return 0;
}

/* The one run that --only measures under callgrind (--toggle-collect=tap_pass). */
__attribute__((noinline, noclone)) int tap_pass(char *work, size_t len, const size_t *cuts,
                                                size_t ncuts, const blob *args, const blob *desc,
                                                run_result *out);
__attribute__((noinline, noclone)) int tap_pass(char *work, size_t len, const size_t *cuts,
                                                size_t ncuts, const blob *args, const blob *desc,
                                                run_result *out) {
  return run_once(FEED_EVENT, work, len, cuts, ncuts, args, desc, out);
}

/* ---- the real command ----------------------------------------------------------------- */

static int run_cli(const char *cli, const char *file, double *wall, double *cpu) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  char *argv[] = {(char *)cli, "tap", "--progress-arg", "write_file=description", (char *)file,
                  NULL};
  struct rusage before, after;
  getrusage(RUSAGE_CHILDREN, &before);
  double t0 = now(CLOCK_MONOTONIC);
  pid_t pid;
  int rc = posix_spawn(&pid, cli, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc) {
    fprintf(stderr, "tap_bench: cannot run %s: %s\n", cli, strerror(rc));
    return -1;
  }
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  *wall = now(CLOCK_MONOTONIC) - t0;
  getrusage(RUSAGE_CHILDREN, &after);
  *cpu = (double)(after.ru_utime.tv_sec - before.ru_utime.tv_sec) +
         (double)(after.ru_utime.tv_usec - before.ru_utime.tv_usec) * 1e-6 +
         (double)(after.ru_stime.tv_sec - before.ru_stime.tv_sec) +
         (double)(after.ru_stime.tv_usec - before.ru_stime.tv_usec) * 1e-6;
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    fprintf(stderr, "tap_bench: %s tap %s failed (status %d)\n", cli, file, st);
    return -1;
  }
  return 0;
}

/* ---- report ------------------------------------------------------------------------------ */

static FILE *tsv;

/* One row from the runs' samples: medians, and the best (least) CPU time. */
static void row(const char *format, const char *impl, const blob *s, size_t nev, double *cpu_v,
                double *wall_v, double *desc_v, int runs, unsigned out_events) {
  double best = cpu_v[0];
  for (int i = 1; i < runs; i++)
    if (cpu_v[i] < best) best = cpu_v[i];
  double cpu = median(cpu_v, runs), wall = median(wall_v, runs);
  char d[32] = "-";
  if (desc_v) snprintf(d, sizeof d, "%.3f", median(desc_v, runs) * 1e3);
  printf("| %-16s | %-24s | %8.1f | %9.0f | %8.3f | %8.3f | %8.3f | %8s | %10u |\n", format, impl,
         (double)s->len / cpu / 1e6, (double)nev / cpu, cpu * 1e3, best * 1e3, wall * 1e3, d,
         out_events);
  if (tsv)
    fprintf(tsv, "%s\t%s\t%zu\t%zu\t%.6f\t%.6f\t%s\t%d\t%.6f\n", format, impl, s->len, nev,
            cpu * 1e3, wall * 1e3, d, runs, best * 1e3);
}

int main(int argc, char **argv) {
  const char *dir = NULL, *cli = NULL, *tsv_path = NULL, *only = NULL;
  int runs = DEFAULT_RUNS;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--runs") && i + 1 < argc) runs = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--cli") && i + 1 < argc) cli = argv[++i];
    else if (!strcmp(argv[i], "--tsv") && i + 1 < argc) tsv_path = argv[++i];
    else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    else if (argv[i][0] != '-' && !dir) dir = argv[i];
    else dir = NULL, i = argc;
  }
  if (!dir || runs < 1 || runs > MAX_RUNS) {
    fputs("usage: tap_bench DIR [--runs N] [--cli PATH] [--tsv FILE]\n"
          "       tap_bench DIR --only openai-chat|openai-responses|anthropic|bedrock|vertex\n",
          stderr);
    return 2;
  }
  blob desc;
  if (read_blob(dir, "description.txt", &desc)) return 1;
  if (tsv_path && !(tsv = fopen(tsv_path, "a"))) {
    fprintf(stderr, "tap_bench: %s: %s\n", tsv_path, strerror(errno));
    return 1;
  }

  if (only) {
    size_t k = 0;
    while (k < NSTREAMS && strcmp(only, streams[k].name)) k++;
    if (k == NSTREAMS) {
      fprintf(stderr, "tap_bench: unknown format '%s'\n", only);
      return 2;
    }
  }
  if (!only) {
    printf("toolstream tap, in process: %s, %s; %d runs after %d warm-up, medians\n",
           TS_BENCH_CC, TS_BENCH_CFLAGS, runs, WARMUP_RUNS);
    printf("| format           | implementation           | SSE MB/s | events/s  | CPU ms   "
           "| best CPU | wall ms  | desc ms  | out events |\n");
    printf("|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
  }
  int status = 0;
  double *store = malloc(sizeof(double) * (size_t)runs * 9);
  if (!store) return 1;
  double *cpu[3], *wall[3], *dsc[3]; /* per mode, per run */
  for (int m = 0; m < 3; m++) {
    cpu[m] = store + (size_t)runs * (3 * (size_t)m);
    wall[m] = cpu[m] + runs;
    dsc[m] = wall[m] + runs;
  }

  for (size_t f = 0; f < NSTREAMS; f++) {
    const char *fname = streams[f].name, *name = streams[f].file;
    if (only && strcmp(only, fname)) continue;
    blob s, args;
    if (read_blob(dir, name, &s) || read_blob(dir, streams[f].args, &args)) return 1;
    size_t ncuts = 0, *cuts = malloc(sizeof *cuts * (s.len / 2 + 1));
    char *work = malloc(s.len ? s.len : 1);
    if (!cuts || !work) return 1;
    if (streams[f].evs) { /* message ends: each prelude's total length */
      for (size_t at = 0; at + 12 <= s.len;) {
        const unsigned char *p = (const unsigned char *)s.p + at;
        size_t total = (size_t)p[0] << 24 | (size_t)p[1] << 16 | (size_t)p[2] << 8 | p[3];
        if (total < 16 || total > s.len - at) break;
        at += total;
        cuts[ncuts++] = at;
      }
    } else { /* SSE event ends: the byte after each blank line (the generator writes "\n\n") */
      for (size_t i = 0; i + 1 < s.len; i++)
        if (s.p[i] == '\n' && s.p[i + 1] == '\n') cuts[ncuts++] = i + 2;
    }

    if (only) {
      run_result r;
      memcpy(work, s.p, s.len);
      if (tap_pass(work, s.len, cuts, ncuts, &args, &desc, &r)) return 1;
      printf("only %s: bytes=%zu events=%zu\n", fname, s.len, ncuts);
      free(s.p), free(cuts), free(work), free(store), free(args.p), free(desc.p);
      return 0;
    }
    /* The modes take turns run by run, so that a burst of other work on the machine
     * falls on all of them alike. */
    run_result r[3];
    int ok[3] = {1, 1, 1};
    memset(r, 0, sizeof r);
    for (int k = 0; k < WARMUP_RUNS + runs; k++)
      for (int m = FEED_EVENT; m <= FEED_64K; m++) {
        if (!ok[m]) continue;
        memcpy(work, s.p, s.len);
        if (run_once((feed_mode)m, work, s.len, cuts, ncuts, &args, &desc, &r[m])) {
          ok[m] = 0;
        } else if (k >= WARMUP_RUNS) {
          cpu[m][k - WARMUP_RUNS] = r[m].cpu;
          wall[m][k - WARMUP_RUNS] = r[m].wall;
          dsc[m][k - WARMUP_RUNS] = r[m].desc;
        }
      }
    for (int m = FEED_EVENT; m <= FEED_64K; m++) {
      if (!ok[m]) {
        printf("| %-16s | %-24s | FAILED: see the message above |\n", fname, mode_names[m]);
        status = 1;
        continue;
      }
      row(fname, mode_names[m], &s, ncuts, cpu[m], wall[m], dsc[m], runs, r[m].events);
    }

    if (cli) {
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", dir, name);
      int n = 0;
      double w, c;
      for (int k = 0; k < 1 + CLI_RUNS; k++) {
        if (run_cli(cli, path, &w, &c)) {
          status = 1;
          break;
        }
        if (k) cpu[0][n] = c, wall[0][n] = w, n++; /* the first run warms the page cache */
      }
      if (n == CLI_RUNS)
        row(fname, "toolstream tap (process)", &s, ncuts, cpu[0], wall[0], NULL, n, 0);
    }
    free(s.p);
    free(args.p);
    free(cuts);
    free(work);
  }
  free(store);
  free(desc.p);
  if (tsv) fclose(tsv);
  return status;
}
