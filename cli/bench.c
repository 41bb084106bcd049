/*
 * bench.c: `toolstream bench`: latency benchmarking of model tool-call streams.
 *
 * Three sources of requests, one measurement (agent/latency.h, docs/bench.md):
 *   --model-url   live requests: each line of --requests (or the one PROMPT) with the
 *                 tools of --tools, written in the provider's shape (stream/provider.h)
 *                 and POSTed by the HTTP backend's one poster (cli/model_http.h), --runs
 *                 times, --concurrency at a time, after --warmup unmeasured ones, at most
 *                 --rate per second; each reply goes through a probe (two taps,
 *                 agent/latency_probe.h) stamped with the time each piece arrived, and
 *                 --record keeps it with its arrival times for a later --replay;
 *   --replay DIR  recorded replies (*.sse, name order), each one request, paced by the
 *                 replay backend's player (agent/replay_model.h) at --pace events per
 *                 second or at the recorded times (--pace recorded: NAME.sse.times);
 *   --from-store  the events of past threads in the store, one request per turn, timed by
 *                 their own `mono_us` stamps.
 * No tool is executed: a benchmark measures the model's stream (a tool's result appears
 * only where the store has it).
 *
 * Outputs: the table (p50/p90/p99/max per metric) on standard output, a progress bar on
 * standard error when it is a terminal, --json and --csv with every sample, --svg with a
 * timeline row per call and the lead's distribution (agent/latency_svg.h). --compare A B
 * reads two --json files and prints each metric's medians, their difference and a
 * bootstrap interval on it (a fixed seed, so the verdict is the same at every run).
 *
 * Threads: --concurrency workers take jobs in order from one counter; each job's record is
 * its own slot of a set made before they start, so nothing is shared but the counter, the
 * rate schedule and the progress bar (one mutex).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>

#include "agent/latency.h"
#include "agent/latency_probe.h"
#include "agent/latency_svg.h"
#include "agent/replay_model.h"
#include "base/clock.h"
#include "base/file.h"
#include "base/strbuf.h"
#include "cli/cli.h"
#include "cli/model_http.h"
#include "store/store.h"
#include "stream/json_view.h"
#include "stream/provider.h"
#include "stream/tool_defs.h"

#define BENCH_MAX_REQUESTS 10000          /* lines of --requests */
#define BENCH_MAX_JOBS 100000             /* runs x requests: a day of a busy endpoint */
#define BENCH_MAX_CONCURRENCY 64
#define BENCH_REQUESTS_BYTES ((size_t)16 << 20)
#define BENCH_JSON_BYTES ((size_t)64 << 20)  /* a --compare input */
#define BENCH_RECORD_BYTES ((size_t)64 << 20) /* one recorded reply */
#define BENCH_OUT_BYTES ((size_t)1 << 30)     /* a --json/--csv/--svg document */
#define BENCH_BOOTSTRAP_ITERS 2000

enum {
  O_REQUESTS = 1, O_RUNS,
  O_CONCURRENCY, O_WARMUP, O_RATE, O_REPLAY, O_PACE, O_RECORD, O_FROM_STORE, O_DATA_DIR,
  O_JSON, O_CSV, O_SVG, O_COMPARE, O_SEED, O_QUIET, O_FORMAT
};

static int not_option(const char *arg) { return arg[0] != '-' || !arg[1]; }

static const ts_cli_opt bench_opts[] = {
    {"requests", 0, TS_CLI_STRING, O_REQUESTS, 0, 0, "FILE",
     "JSON Lines, one request per line: {\"prompt\": \"...\"} with an\n"
     "optional \"system\" (instead of a PROMPT argument)", NULL},
    {"runs", 0, TS_CLI_NUMBER, O_RUNS, 1, 100000, "N",
     "how many times each request (or recording) goes (default 1)", NULL},
    {"concurrency", 0, TS_CLI_NUMBER, O_CONCURRENCY, 1, BENCH_MAX_CONCURRENCY, "C",
     "requests in flight at once (default 1, at most 64)", NULL},
    {"warmup", 0, TS_CLI_NUMBER, O_WARMUP, 0, 10000, "K",
     "requests made first and not measured (default 0)", NULL},
    {"rate", 0, TS_CLI_NUMBER, O_RATE, 1, 100000, "R",
     "start at most R requests per second (default: no limit)", NULL},
    {"replay", 0, TS_CLI_STRING, O_REPLAY, 0, 0, "DIR",
     "benchmark recorded replies instead: DIR's *.sse files in name\n"
     "order, each one request (offline, reproducible)", NULL},
    {"pace", 0, TS_CLI_STRING, O_PACE, 0, 0, "N|recorded",
     "--replay pace: N SSE events per second (default 100), or\n"
     "'recorded': each piece at its recorded time (NAME.sse.times,\n"
     "as --record writes it)", NULL},
    {"record", 0, TS_CLI_STRING, O_RECORD, 0, 0, "DIR",
     "keep each measured reply of --model-url in DIR as NNNN.sse\n"
     "with its arrival times (NNNN.sse.times), for --replay", NULL},
    {"from-store", 0, TS_CLI_FLAG, O_FROM_STORE, 0, 0, NULL,
     "benchmark past threads from the store instead, one request\n"
     "per turn, from their stored timestamps (--thread ID: one)", NULL},
    {"data-dir", 0, TS_CLI_STRING, O_DATA_DIR, 0, 0, "DIR",
     "the store of --from-store (default as for run)", NULL},
    {"format", 0, TS_CLI_STRING, O_FORMAT, 0, 0, "F",
     "the replies' stream format as tap names it (default auto)", NULL},
    {"json", 0, TS_CLI_STRING, O_JSON, 0, 0, "FILE",
     "every sample and the summary as JSON ('-': standard output)", NULL},
    {"csv", 0, TS_CLI_STRING, O_CSV, 0, 0, "FILE",
     "every sample as CSV, one row per call (columns: docs/bench.md;\n"
     "'-': standard output)", NULL},
    {"svg", 0, TS_CLI_STRING, O_SVG, 0, 0, "FILE",
     "a timeline row per call and the lead's distribution, as SVG", NULL},
    {"compare", 0, TS_CLI_STRING, O_COMPARE, 0, 0, "A.json B.json",
     "two --json results side by side: medians, B - A, and a 95%\n"
     "bootstrap interval on it (significant when it excludes 0)", not_option},
    {"seed", 0, TS_CLI_NUMBER, O_SEED, 0, UINT64_MAX, "N",
     "the bootstrap's seed for --compare (default 1)", NULL},
    {"quiet", 'q', TS_CLI_FLAG, O_QUIET, 0, 0, NULL, "no progress bar", NULL},
};
static const ts_cli_group bench_group = {"bench", NULL, bench_opts,
                                         sizeof bench_opts / sizeof bench_opts[0], NULL};
static const ts_cli_group *const bench_groups[] = {&bench_group, &ts_cli_group_model,
                                                   &ts_cli_group_tools,
                                                   &ts_cli_group_thread, &ts_cli_group_ca,
                                                   NULL};

const ts_cli_command ts_cli_cmd_bench = {
    "bench",
    "[options] [PROMPT]",
    "latency of tool-call streams: time to first byte, label, arguments, lead",
    "Measures, per request and per tool call, the time to the first byte, the first\n"
    "token, the call's name, its progress label and its complete arguments, the lead\n"
    "of the label over the arguments (ms and bytes), argument bytes and output tokens\n"
    "per second, the total, errors and retries (docs/bench.md defines each). The\n"
    "source is a live endpoint (--model-url), recorded replies (--replay DIR) or past\n"
    "threads (--from-store); the result is a table of p50/p90/p99/max, and with --json,\n"
    "--csv and --svg every sample. --compare A.json B.json compares two results.",
    bench_groups,
    "Progress labels come from the tools' progress arguments (--tools, --progress-arg).\n"
    "Tools are declared to the model, never executed. Ctrl-C stops: the requests\n"
    "finished so far are reported.\n"
    "Exit status: 0 when the benchmark ran (failed requests are counted in it); 1 when\n"
    "no request could be measured, or a file cannot be read or written; 2 for usage\n"
    "errors (including a --requests line or a --compare file that does not parse).",
    ts_cli_bench,
};

typedef struct {
  ts_http_model hm;
  const char *requests, *replay, *pace, *record, *data_dir, *format;
  const char *json, *csv, *svg, *compare[2], *prompt;
  int ncompare, from_store, quiet;
  uint64_t runs, concurrency, warmup, rate, seed;
} bench_args;

static int bench_set(void *user, const ts_cli_opt *o, const char *val, uint64_t n) {
  bench_args *a = user;
  if (!o) {
    if (a->prompt) {
      fprintf(stderr, "toolstream bench: one prompt only (quote it), or --requests FILE\n");
      return 2;
    }
    a->prompt = val;
    return 0;
  }
  switch (o->id) {
    case O_REQUESTS: a->requests = val; break;
    case O_RUNS: a->runs = n; break;
    case O_CONCURRENCY: a->concurrency = n; break;
    case O_WARMUP: a->warmup = n; break;
    case O_RATE: a->rate = n; break;
    case O_REPLAY: a->replay = val; break;
    case O_PACE: a->pace = val; break;
    case O_RECORD: a->record = val; break;
    case O_FROM_STORE: a->from_store = 1; break;
    case O_DATA_DIR: a->data_dir = val; break;
    case O_FORMAT: a->format = val; break;
    case O_JSON: a->json = val; break;
    case O_CSV: a->csv = val; break;
    case O_SVG: a->svg = val; break;
    case O_SEED: a->seed = n; break;
    case O_QUIET: a->quiet = 1; break;
    case O_COMPARE:
      if (a->ncompare == 2) {
        fprintf(stderr, "toolstream bench: --compare takes two files, A.json B.json\n");
        return 2;
      }
      a->compare[a->ncompare++] = val;
      break;
  }
  return 0;
}

/* ---- requests -------------------------------------------------------------------------- */

typedef struct {
  char *prompt, *system;
} bench_request;

typedef struct {
  bench_request *v;
  size_t n;
} bench_requests;

static void requests_free(bench_requests *r) {
  for (size_t i = 0; i < r->n; i++) free(r->v[i].prompt), free(r->v[i].system);
  free(r->v);
}

/* A decoded copy of string member `key` of object 0, or NULL (absent: *bad 0; not a
 * string: *bad 1). */
static char *member_string(ts_jv *v, const char *key, int *bad) {
  int i = ts_jv_get(v, 0, key);
  if (i < 0) return NULL;
  ts_view s;
  if (ts_jv_str(v, i, &s)) {
    *bad = 1;
    return NULL;
  }
  char *out = malloc(s.len + 1);
  if (out) memcpy(out, s.p, s.len), out[s.len] = '\0';
  return out;
}

/* Reads the file of option `opt` whole, up to max bytes: 0, or 1 after one line. */
static int read_input(const char *opt, const char *path, size_t max, char **text, size_t *len) {
  if (!ts_file_read(path, max, text, len)) return 0;
  if (errno == EFBIG)
    fprintf(stderr, "toolstream bench: %s %s: file too large (at most %zu MiB)\n", opt, path,
            max >> 20);
  else
    fprintf(stderr, "toolstream bench: %s %s: %s\n", opt, path, strerror(errno));
  return 1;
}

/* --requests FILE: 0, or the exit status after one line. */
static int load_requests(const char *path, bench_requests *out) {
  char *text;
  size_t len;
  if (read_input("--requests", path, BENCH_REQUESTS_BYTES, &text, &len)) return 1;
  ts_jv v;
  int rc = 0;
  if (ts_jv_init(&v, 4096)) {
    free(text);
    fprintf(stderr, "toolstream bench: out of memory\n");
    return 1;
  }
  size_t line = 0;
  for (char *p = text, *e; p < text + len; p = e + 1) {
    e = memchr(p, '\n', (size_t)(text + len - p));
    if (!e) e = text + len;
    line++;
    char *q = p;
    while (q < e && (*q == ' ' || *q == '\t' || *q == '\r')) q++;
    if (q == e) continue; /* a blank line */
    int bad = 0;
    if (ts_jv_parse(&v, p, (size_t)(e - p)) || ts_jv_type_of(&v, 0) != TS_JV_OBJECT) {
      fprintf(stderr, "toolstream bench: --requests %s:%zu: not a JSON object (of at most 4096 "
                      "tokens)\n", path, line);
      rc = 2;
      break;
    }
    if (out->n == BENCH_MAX_REQUESTS) {
      fprintf(stderr, "toolstream bench: --requests %s: more than %d requests\n", path,
              BENCH_MAX_REQUESTS);
      rc = 2;
      break;
    }
    bench_request r = {member_string(&v, "prompt", &bad), member_string(&v, "system", &bad)};
    if (!r.prompt || bad) {
      fprintf(stderr, "toolstream bench: --requests %s:%zu: wants {\"prompt\": \"...\"} (and "
                      "an optional string \"system\")\n", path, line);
      free(r.prompt), free(r.system);
      rc = 2;
      break;
    }
    bench_request *nv = realloc(out->v, (out->n + 1) * sizeof *nv);
    if (!nv) {
      free(r.prompt), free(r.system);
      fprintf(stderr, "toolstream bench: out of memory\n");
      rc = 1;
      break;
    }
    out->v = nv;
    out->v[out->n++] = r;
  }
  ts_jv_fini(&v);
  free(text);
  if (!rc && !out->n) {
    fprintf(stderr, "toolstream bench: --requests %s holds no request\n", path);
    rc = 2;
  }
  return rc;
}

/* ---- the jobs ---------------------------------------------------------------------------- */

typedef struct bench bench;

struct bench {
  const bench_args *a;
  ts_tool_defs defs;
  bench_requests reqs;
  char **files; /* --replay: the recordings */
  size_t nfiles;
  double pace;  /* --replay: events per second; 0 with `recorded` */
  int recorded;
  ts_format format;
  ts_lat_set set; /* one slot per measured job, made before the workers start */
  uint8_t *done;  /* per slot: measured */
  size_t njobs, nwarm, next;
  uint64_t t0_us;
  pthread_mutex_t mu;
  size_t finished;
  int bar;
};

static volatile sig_atomic_t bench_stop;
static void on_signal(int sig) {
  (void)sig;
  bench_stop = 1;
}

static const char *progress_of(void *user, const char *tool, size_t len, size_t *arg_len) {
  const ts_tool_defs *d = user;
  const ts_tool_def *t = ts_tool_defs_find(d, tool, len);
  if (!t || !t->progress_arg) return NULL;
  *arg_len = strlen(t->progress_arg);
  return t->progress_arg;
}

/* The request body of request q in the provider's shape. */
static int build_body(const bench *b, const bench_request *q, ts_buf *out) {
  ts_req_message m[2];
  size_t nm = 0;
  memset(m, 0, sizeof m);
  if (q->system) m[nm].role = TS_REQ_SYSTEM, m[nm++].text = (ts_view){q->system, strlen(q->system)};
  m[nm].role = TS_REQ_USER, m[nm++].text = (ts_view){q->prompt, strlen(q->prompt)};
  ts_req_tool *tools = calloc(b->defs.n + 1, sizeof *tools);
  if (!tools) return TS_E_NOMEM;
  for (size_t i = 0; i < b->defs.n; i++) {
    const ts_tool_def *d = &b->defs.v[i];
    const char *schema = d->args ? d->args : "{\"type\":\"object\"}";
    tools[i].name = (ts_view){d->name, strlen(d->name)};
    tools[i].description = (ts_view){d->description, strlen(d->description)};
    tools[i].schema = (ts_view){schema, strlen(schema)};
  }
  ts_request req = {b->a->hm.model, b->a->hm.max_tokens, m, nm, tools, b->defs.n, NULL, -1};
  int rc = ts_provider_request(b->a->hm.provider, &req, out);
  free(tools);
  return rc;
}

/* What one job's reply goes through: the probe, and the recording (--record). */
typedef struct {
  ts_lat_probe *probe;
  const ts_http_response_info *info; /* live: the reply's head, read before its first chunk */
  uint64_t sent_us;
  ts_buf rec, times;
  int recording, seen_bytes;
} job_feed;

static int on_piece(void *user, const char *data, size_t len) {
  job_feed *f = user;
  uint64_t now = ts_clock_mono_us();
  if (f->info && !f->seen_bytes) /* the first bytes: read by the reply's content type */
    ts_lat_probe_content_type(f->probe, f->info->content_type, strlen(f->info->content_type));
  f->seen_bytes = 1;
  int rc = ts_lat_probe_feed(f->probe, data, len, now);
  if (f->recording) {
    ts_buf_append(&f->rec, data, len);
    char line[64];
    snprintf(line, sizeof line, "%llu %zu\n", (unsigned long long)(now - f->sent_us),
             f->rec.len);
    ts_buf_puts(&f->times, line);
    if (f->rec.err || f->times.err) f->recording = 0; /* too large: kept unrecorded */
  }
  return rc != TS_E_OK || bench_stop;
}

static int on_replay_piece(void *user, char *data, size_t len) { return on_piece(user, data, len); }


static int write_whole(const char *path, const char *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  int ok = fwrite(data, 1, len, f) == len;
  ok &= fclose(f) == 0;
  return ok ? 0 : -1;
}

/* One job: request k (warm-up or measured) into r. */
static void run_job(bench *b, size_t k, ts_lat_request *r) {
  const bench_args *a = b->a;
  size_t m = k < b->nwarm ? k : k - b->nwarm;
  ts_lat_probe_config pc = {.format = b->format, .progress_arg = progress_of,
                            .progress_user = &b->defs};
  job_feed f;
  memset(&f, 0, sizeof f);
  if (ts_lat_probe_new(&pc, r, &f.probe)) {
    ts_lat_request_fail(r, "out of memory");
    return;
  }
  char why[512] = "";
  int failed = 0;
  if (b->files) {
    const char *path = b->files[m % b->nfiles];
    char times[4200];
    snprintf(times, sizeof times, "%s.times", path);
    const char *slash = strrchr(path, '/');
    snprintf(r->source, sizeof r->source, "%s", slash ? slash + 1 : path);
    ts_lat_probe_sent(f.probe, f.sent_us = ts_clock_mono_us());
    if (ts_replay_play(path, b->pace, b->recorded ? times : NULL, on_replay_piece, &f,
                       &bench_stop, why, sizeof why))
      ts_lat_request_fail(r, why), failed = 1;
  } else {
    const bench_request *q = &b->reqs.v[m % b->reqs.n];
    snprintf(r->source, sizeof r->source, "request %zu", m % b->reqs.n + 1);
    ts_buf body;
    ts_buf_init(&body, (size_t)64 << 20);
    int rc = build_body(b, q, &body);
    if (rc) {
      snprintf(why, sizeof why, "cannot write the request: %s", ts_err_message(rc));
      ts_lat_request_fail(r, why);
      failed = 1;
    } else {
      f.recording = a->record && k >= b->nwarm;
      ts_buf_init(&f.rec, BENCH_RECORD_BYTES);
      ts_buf_init(&f.times, BENCH_RECORD_BYTES);
      ts_http_response_info info;
      f.info = &info;
      ts_lat_probe_sent(f.probe, f.sent_us = ts_clock_mono_us());
      rc = ts_http_model_post(&a->hm, body.p, body.len, on_piece, &f, &bench_stop, &info, why,
                              sizeof why);
      r->retries = info.attempts > 1 ? (uint32_t)info.attempts - 1 : 0;
      if (rc && !(bench_stop && (rc == TS_E_ABORTED || rc == TS_E_HTTP_CANCELLED)))
        ts_lat_request_fail(r, why);
      failed = rc != TS_E_OK;
      if (f.recording && !rc) {
        char p[4200];
        snprintf(p, sizeof p, "%s/%04zu.sse", a->record, m + 1);
        int bad = write_whole(p, f.rec.p ? f.rec.p : "", f.rec.len);
        snprintf(p, sizeof p, "%s/%04zu.sse.times", a->record, m + 1);
        bad |= write_whole(p, f.times.p ? f.times.p : "", f.times.len);
        if (bad) fprintf(stderr, "toolstream bench: --record: cannot write %s: %s\n", p,
                         strerror(errno));
      }
      ts_buf_fini(&f.rec);
      ts_buf_fini(&f.times);
    }
    ts_buf_fini(&body);
  }
  /* A failed request is one error: its cut stream is not a second one (the taps are not
   * finished); a stream that ended is settled by the taps (a truncation is theirs). */
  if (failed)
    r->end_us = ts_clock_mono_us();
  else if (ts_lat_probe_finish(f.probe, ts_clock_mono_us()))
    ts_lat_request_fail(r, "out of memory");
  ts_lat_probe_free(f.probe);
}

static void draw_bar(bench *b) {
  if (!b->bar) return;
  size_t n = b->finished, total = b->njobs;
  int w = 30, full = total ? (int)(n * (size_t)w / total) : w;
  char bar[64];
  for (int i = 0; i < w; i++) bar[i] = i < full ? '#' : '.';
  bar[w] = '\0';
  fprintf(stderr, "\r[%s] %zu/%zu requests", bar, n, total);
  fflush(stderr);
}

static void *worker(void *arg) {
  bench *b = arg;
  for (;;) {
    pthread_mutex_lock(&b->mu);
    size_t k = b->next;
    if (k >= b->njobs || bench_stop) {
      pthread_mutex_unlock(&b->mu);
      return NULL;
    }
    b->next++;
    pthread_mutex_unlock(&b->mu);
    /* --rate: job k starts no earlier than k/R seconds after the first */
    if (b->a->rate) {
      uint64_t due = b->t0_us + (uint64_t)((double)k * 1e6 / (double)b->a->rate);
      uint64_t now = ts_clock_mono_us();
      if (due > now) ts_clock_sleep_ms((double)(due - now) / 1e3);
      if (bench_stop) return NULL;
    }
    ts_lat_request warm, *r = &warm;
    if (k < b->nwarm)
      ts_lat_request_init(&warm, NULL);
    else
      r = &b->set.v[k - b->nwarm];
    run_job(b, k, r);
    int cut = bench_stop; /* stopped (Ctrl-C) while it ran: a partial record, left out */
    if (r == &warm) ts_lat_request_fini(&warm);
    pthread_mutex_lock(&b->mu);
    if (r != &warm) b->done[k - b->nwarm] = !cut;
    b->finished++;
    draw_bar(b);
    pthread_mutex_unlock(&b->mu);
  }
}

static int cmp_str(const void *x, const void *y) {
  return strcmp(*(char *const *)x, *(char *const *)y);
}

/* --replay DIR: its *.sse files in name order. 0 or an exit status. */
static int list_recordings(bench *b, const char *dir) {
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "toolstream bench: --replay %s: %s\n", dir, strerror(errno));
    return 1;
  }
  struct dirent *e;
  int rc = 0;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l <= 4 || strcmp(e->d_name + l - 4, ".sse")) continue;
    if (b->nfiles == TS_REPLAY_MAX_FILES) break;
    char **nv = realloc(b->files, (b->nfiles + 1) * sizeof *nv);
    size_t pl = strlen(dir) + l + 2;
    char *p = malloc(pl);
    if (!nv || !p) {
      free(p);
      if (nv) b->files = nv;
      rc = 1;
      break;
    }
    b->files = nv;
    snprintf(p, pl, "%s/%s", dir, e->d_name);
    b->files[b->nfiles++] = p;
  }
  closedir(d);
  if (rc) {
    fprintf(stderr, "toolstream bench: out of memory\n");
    return 1;
  }
  if (!b->nfiles) {
    fprintf(stderr, "toolstream bench: --replay %s holds no .sse file\n", dir);
    return 1;
  }
  qsort(b->files, b->nfiles, sizeof *b->files, cmp_str);
  return 0;
}

/* Runs every job; the set then holds the measured ones that finished. 0 or an exit status. */
static int run_jobs(bench *b) {
  const bench_args *a = b->a;
  size_t per_run = b->files ? b->nfiles : b->reqs.n;
  uint64_t measured = a->runs * per_run;
  if (measured + a->warmup > BENCH_MAX_JOBS) {
    fprintf(stderr, "toolstream bench: %llu requests is more than %d (fewer --runs)\n",
            (unsigned long long)(measured + a->warmup), BENCH_MAX_JOBS);
    return 2;
  }
  b->nwarm = (size_t)a->warmup;
  b->njobs = b->nwarm + (size_t)measured;
  b->done = calloc((size_t)measured + 1, 1);
  for (size_t i = 0; b->done && i < measured; i++) {
    ts_lat_request *r;
    if (ts_lat_set_add(&b->set, NULL, &r)) {
      free(b->done);
      b->done = NULL;
    }
  }
  if (!b->done) {
    fprintf(stderr, "toolstream bench: out of memory\n");
    return 1;
  }
  pthread_mutex_init(&b->mu, NULL);
  b->bar = !a->quiet && isatty(STDERR_FILENO);
  b->t0_us = ts_clock_mono_us();
  size_t nt = (size_t)a->concurrency;
  pthread_t th[BENCH_MAX_CONCURRENCY];
  size_t started = 0;
  for (; started < nt; started++)
    if (pthread_create(&th[started], NULL, worker, b)) break;
  if (!started) worker(b); /* no thread at all: do it here */
  for (size_t i = 0; i < started; i++) pthread_join(th[i], NULL);
  pthread_mutex_destroy(&b->mu);
  if (b->bar) fprintf(stderr, "\r%60s\r", "");
  /* keep the slots that were measured, in order */
  size_t k = 0;
  for (size_t i = 0; i < b->set.n; i++) {
    if (b->done[i]) {
      b->set.v[k] = b->set.v[i];
      b->set.v[k].seq = (uint32_t)k;
      k++;
    } else {
      ts_lat_request_fini(&b->set.v[i]);
    }
  }
  b->set.n = k;
  return 0;
}

/* ---- --from-store ------------------------------------------------------------------------ */

typedef struct {
  ts_lat_reader rd;
  int rc;
} store_read;

static int on_stored_event(void *user, uint64_t seq, const char *json, size_t len) {
  (void)seq;
  store_read *s = user;
  int rc = ts_lat_reader_event(&s->rd, json, len);
  if (rc && rc != TS_E_INVAL) {
    s->rc = rc;
    return 1;
  }
  return 0;
}

typedef struct {
  char **ids;
  size_t n;
  int oom;
} thread_list;

static int on_thread(void *user, const ts_store_thread *t) {
  thread_list *l = user;
  char **nv = realloc(l->ids, (l->n + 1) * sizeof *nv);
  char *id = nv ? strdup(t->id) : NULL;
  if (nv) l->ids = nv;
  if (!id) {
    l->oom = 1;
    return 1;
  }
  l->ids[l->n++] = id;
  return 0;
}

int ts_cli_bench_read_thread(ts_store *st, const char *thread, uint64_t after, ts_lat_set *set) {
  store_read s;
  memset(&s, 0, sizeof s);
  ts_lat_reader_init(&s.rd, set, thread);
  int rc = ts_store_events_after(st, thread, after, 0, on_stored_event, &s);
  if (s.rc) return s.rc;
  return rc < 0 ? rc : TS_E_OK;
}

static int read_store(bench *b, const ts_cli_common *com) {
  ts_store *st = NULL;
  char why[512];
  if (ts_store_open(b->a->data_dir, &st, why, sizeof why)) {
    fprintf(stderr, "toolstream bench: cannot open the store: %s\n", why);
    return 1;
  }
  thread_list l = {0};
  int rc = 0;
  if (com->has_thread) {
    if (ts_store_thread_exists(st, com->thread) != 1) {
      fprintf(stderr, "toolstream bench: no thread %s in %s\n", com->thread, ts_store_path(st));
      rc = 1;
    } else {
      on_thread(&l, &(ts_store_thread){.id = com->thread});
    }
  } else if (ts_store_threads(st, on_thread, &l) < 0 || l.oom) {
    fprintf(stderr, "toolstream bench: cannot list the threads: %s\n", ts_store_errmsg(st));
    rc = 1;
  }
  for (size_t i = 0; !rc && i < l.n; i++) {
    int er = ts_cli_bench_read_thread(st, l.ids[i], 0, &b->set);
    if (er) {
      fprintf(stderr, "toolstream bench: thread %s: %s\n", l.ids[i], ts_err_message(er));
      rc = 1;
    }
  }
  for (size_t i = 0; i < l.n; i++) free(l.ids[i]);
  free(l.ids);
  ts_store_close(st);
  return rc;
}

/* ---- output ------------------------------------------------------------------------------ */

static void num(ts_buf *o, double v) {
  char t[64];
  if (isnan(v) || isinf(v)) {
    ts_buf_puts(o, "null");
    return;
  }
  snprintf(t, sizeof t, "%.3f", v);
  ts_buf_puts(o, t);
}

static void print_table(const ts_lat_set *s, FILE *f) {
  size_t calls = 0, labelled = 0, errors = 0, retries = 0;
  for (size_t i = 0; i < s->n; i++) {
    calls += s->v[i].ncalls;
    errors += s->v[i].errors;
    retries += s->v[i].retries;
    for (size_t j = 0; j < s->v[i].ncalls; j++) labelled += s->v[i].calls[j].has_label;
  }
  fprintf(f, "%zu request%s, %zu tool call%s (%zu with a progress label), %zu error%s, %zu "
             "retr%s\n\n", s->n, s->n == 1 ? "" : "s", calls, calls == 1 ? "" : "s", labelled,
          errors, errors == 1 ? "" : "s", retries, retries == 1 ? "y" : "ies");
  fprintf(f, "%-57s %6s %10s %10s %10s %10s\n", "metric", "n", "p50", "p90", "p99", "max");
  for (int m = 0; m < TS_LAT_NMETRICS; m++) {
    size_t n;
    double *v = ts_lat_values(s, m, &n);
    ts_lat_summary sum;
    ts_lat_summarize(v, n, &sum);
    free(v);
    char name[96];
    snprintf(name, sizeof name, "%s (%s, %s)", ts_lat_metric_what(m), ts_lat_metric_key(m),
             ts_lat_metric_unit(m));
    if (!sum.n) {
      fprintf(f, "%-57s %6zu %10s %10s %10s %10s\n", name, sum.n, "-", "-", "-", "-");
      continue;
    }
    fprintf(f, "%-57s %6zu %10.1f %10.1f %10.1f %10.1f\n", name, sum.n, sum.p50, sum.p90,
            sum.p99, sum.max);
  }
  for (size_t i = 0, shown = 0; i < s->n && shown < 5; i++)
    if (s->v[i].error[0]) {
      if (!shown++) fprintf(f, "\nerrors:\n");
      fprintf(f, "  %s: %s\n", s->v[i].source, s->v[i].error);
    }
}

static int write_json(const ts_lat_set *s, const char *source, ts_buf *o) {
  ts_buf_puts(o, "{\"toolstream_bench\":1,\"source\":");
  ts_buf_append_json_string(o, source, strlen(source));
  ts_buf_puts(o, ",\"requests\":[");
  for (size_t i = 0; i < s->n; i++) {
    const ts_lat_request *r = &s->v[i];
    if (i) ts_buf_putc(o, ',');
    ts_buf_puts(o, "\n{\"seq\":");
    ts_buf_append_u64(o, r->seq);
    ts_buf_puts(o, ",\"source\":");
    ts_buf_append_json_string(o, r->source, strlen(r->source));
    ts_buf_puts(o, ",\"turn\":");
    ts_buf_append_u64(o, r->turn);
    for (int m = 0; m < TS_LAT_NMETRICS; m++) {
      if (ts_lat_metric_per_call(m)) continue;
      ts_buf_puts(o, ",\"");
      ts_buf_puts(o, ts_lat_metric_key(m));
      ts_buf_puts(o, "\":");
      num(o, ts_lat_request_value(r, m));
    }
    ts_buf_puts(o, ",\"output_tokens\":");
    if (r->has_tokens) ts_buf_append_u64(o, r->out_tokens);
    else ts_buf_puts(o, "null");
    ts_buf_puts(o, ",\"errors\":");
    ts_buf_append_u64(o, r->errors);
    ts_buf_puts(o, ",\"retries\":");
    ts_buf_append_u64(o, r->retries);
    ts_buf_puts(o, ",\"error\":");
    ts_buf_append_json_string(o, r->error, strlen(r->error));
    ts_buf_puts(o, ",\"calls\":[");
    for (size_t j = 0; j < r->ncalls; j++) {
      const ts_lat_call *c = &r->calls[j];
      if (j) ts_buf_putc(o, ',');
      ts_buf_puts(o, "{\"index\":");
      ts_buf_append_u64(o, c->index);
      ts_buf_puts(o, ",\"call_id\":");
      ts_buf_append_json_string(o, c->call_id, strlen(c->call_id));
      ts_buf_puts(o, ",\"tool\":");
      ts_buf_append_json_string(o, c->tool, strlen(c->tool));
      ts_buf_puts(o, c->has_label ? ",\"has_label\":true" : ",\"has_label\":false");
      ts_buf_puts(o, ",\"arg_bytes\":");
      ts_buf_append_u64(o, c->arg_bytes);
      for (int m = 0; m < TS_LAT_NMETRICS; m++) {
        if (!ts_lat_metric_per_call(m)) continue;
        ts_buf_puts(o, ",\"");
        ts_buf_puts(o, ts_lat_metric_key(m));
        ts_buf_puts(o, "\":");
        num(o, ts_lat_call_value(r, c, m));
      }
      ts_buf_putc(o, '}');
    }
    ts_buf_puts(o, "]}");
  }
  ts_buf_puts(o, "\n],\"summary\":{");
  for (int m = 0; m < TS_LAT_NMETRICS; m++) {
    size_t n;
    double *v = ts_lat_values(s, m, &n);
    ts_lat_summary sum;
    ts_lat_summarize(v, n, &sum);
    free(v);
    if (m) ts_buf_putc(o, ',');
    ts_buf_puts(o, "\n\"");
    ts_buf_puts(o, ts_lat_metric_key(m));
    ts_buf_puts(o, "\":{\"n\":");
    ts_buf_append_u64(o, sum.n);
    static const char *const k[] = {",\"p50\":", ",\"p90\":", ",\"p99\":", ",\"max\":",
                                    ",\"mean\":"};
    double x[] = {sum.p50, sum.p90, sum.p99, sum.max, sum.mean};
    for (int i = 0; i < 5; i++) ts_buf_puts(o, k[i]), num(o, x[i]);
    ts_buf_puts(o, ",\"unit\":\"");
    ts_buf_puts(o, ts_lat_metric_unit(m));
    ts_buf_puts(o, "\"}");
  }
  ts_buf_puts(o, "\n}}\n");
  return o->err;
}

/* A CSV field: quoted when it holds a comma, a quote or a line break. */
static void csv_field(ts_buf *o, const char *s) {
  if (!strpbrk(s, ",\"\r\n")) {
    ts_buf_puts(o, s);
    return;
  }
  ts_buf_putc(o, '"');
  for (; *s; s++) {
    if (*s == '"') ts_buf_putc(o, '"');
    ts_buf_putc(o, *s);
  }
  ts_buf_putc(o, '"');
}

static void csv_num(ts_buf *o, double v) {
  if (isnan(v) || isinf(v)) return; /* empty: not measured */
  char t[64];
  snprintf(t, sizeof t, "%.3f", v);
  ts_buf_puts(o, t);
}

/* The columns (docs/bench.md lists them): the request's, then the call's. */
static const char CSV_HEAD[] =
    "request,source,turn,ttfb_ms,first_token_ms,total_ms,output_tokens,output_tokens_per_s,"
    "errors,retries,call_index,call_id,tool,has_label,arg_bytes,name_ms,label_ms,args_ms,"
    "lead_ms,lead_bytes,lead_stream_bytes,arg_bytes_per_s,result_ms,error\n";

static int write_csv(const ts_lat_set *s, ts_buf *o) {
  ts_buf_puts(o, CSV_HEAD);
  for (size_t i = 0; i < s->n; i++) {
    const ts_lat_request *r = &s->v[i];
    for (size_t j = 0; j < (r->ncalls ? r->ncalls : 1); j++) {
      const ts_lat_call *c = r->ncalls ? &r->calls[j] : NULL;
      char t[64];
      snprintf(t, sizeof t, "%u,", r->seq);
      ts_buf_puts(o, t);
      csv_field(o, r->source);
      snprintf(t, sizeof t, ",%u,", r->turn);
      ts_buf_puts(o, t);
      csv_num(o, ts_lat_request_value(r, TS_LAT_TTFB));
      ts_buf_putc(o, ',');
      csv_num(o, ts_lat_request_value(r, TS_LAT_FIRST_TOKEN));
      ts_buf_putc(o, ',');
      csv_num(o, ts_lat_request_value(r, TS_LAT_TOTAL));
      ts_buf_putc(o, ',');
      if (r->has_tokens) ts_buf_append_u64(o, r->out_tokens);
      ts_buf_putc(o, ',');
      csv_num(o, ts_lat_request_value(r, TS_LAT_OUT_TPS));
      snprintf(t, sizeof t, ",%u,%u,", r->errors, r->retries);
      ts_buf_puts(o, t);
      if (c) {
        snprintf(t, sizeof t, "%u,", c->index);
        ts_buf_puts(o, t);
        csv_field(o, c->call_id);
        ts_buf_putc(o, ',');
        csv_field(o, c->tool);
        snprintf(t, sizeof t, ",%d,%llu", c->has_label, (unsigned long long)c->arg_bytes);
        ts_buf_puts(o, t);
        static const int cm[] = {TS_LAT_NAME, TS_LAT_LABEL, TS_LAT_ARGS, TS_LAT_LEAD_MS,
                                 TS_LAT_LEAD_BYTES, TS_LAT_LEAD_STREAM_BYTES, TS_LAT_ARG_BPS,
                                 TS_LAT_RESULT};
        for (size_t k = 0; k < sizeof cm / sizeof cm[0]; k++) {
          ts_buf_putc(o, ',');
          csv_num(o, ts_lat_call_value(r, c, cm[k]));
        }
        ts_buf_putc(o, ',');
      } else {
        ts_buf_puts(o, ",,,,,,,,,,,,");
      }
      csv_field(o, r->error);
      ts_buf_putc(o, '\n');
    }
  }
  return o->err;
}

/* Writes a document to `path` ('-': standard output). 0, or 1 after one line. */
static int emit(const char *what, const char *path, const ts_buf *doc) {
  if (doc->err) {
    fprintf(stderr, "toolstream bench: %s: %s\n", what, ts_err_message(doc->err));
    return 1;
  }
  if (!strcmp(path, "-")) {
    int ok = fwrite(doc->p ? doc->p : "", 1, doc->len, stdout) == doc->len && fflush(stdout) == 0;
    if (!ok) fprintf(stderr, "toolstream bench: %s: cannot write standard output\n", what);
    return ok ? 0 : 1;
  }
  if (write_whole(path, doc->p ? doc->p : "", doc->len)) {
    fprintf(stderr, "toolstream bench: %s %s: %s\n", what, path, strerror(errno));
    return 1;
  }
  return 0;
}

/* ---- --compare --------------------------------------------------------------------------- */

/* The samples of every metric in a --json document: per metric an array of values. */
typedef struct {
  double *v[TS_LAT_NMETRICS];
  size_t n[TS_LAT_NMETRICS];
} samples;

static void samples_free(samples *s) {
  for (int m = 0; m < TS_LAT_NMETRICS; m++) free(s->v[m]);
}

static double jv_number(ts_jv *v, int i) {
  if (i < 0 || ts_jv_type_of(v, i) != TS_JV_PRIMITIVE || ts_jv_is_null(v, i)) return NAN;
  ts_view raw = ts_jv_raw(v, i);
  char t[64];
  if (raw.len >= sizeof t) return NAN;
  memcpy(t, raw.p, raw.len);
  t[raw.len] = '\0';
  char *e;
  double x = strtod(t, &e);
  return *e ? NAN : x;
}

static int add_sample(samples *s, int m, double x) {
  double *p = realloc(s->v[m], (s->n[m] + 1) * sizeof *p);
  if (!p) return -1;
  s->v[m] = p;
  p[s->n[m]++] = x;
  return 0;
}

/* 0, or the exit status after one line. */
static int load_samples(const char *path, samples *out) {
  char *text;
  size_t len;
  if (read_input("--compare", path, BENCH_JSON_BYTES, &text, &len)) return 1;
  ts_jv v;
  /* a token takes at least two bytes of JSON ("1,"), so len/2 + a few always suffices */
  int rc = 0;
  if (ts_jv_init(&v, (int)(len / 2 + 16))) {
    free(text);
    fprintf(stderr, "toolstream bench: out of memory\n");
    return 1;
  }
  int reqs = -1;
  if (ts_jv_parse(&v, text, len) || ts_jv_type_of(&v, 0) != TS_JV_OBJECT ||
      ts_jv_get(&v, 0, "toolstream_bench") < 0 ||
      ts_jv_type_of(&v, reqs = ts_jv_get(&v, 0, "requests")) != TS_JV_ARRAY) {
    fprintf(stderr, "toolstream bench: --compare %s: not a toolstream bench --json result\n", path);
    rc = 2;
  }
  for (int k = 0, r = rc ? -1 : ts_jv_first(&v, reqs); !rc && k < ts_jv_size(&v, reqs);
       k++, r = ts_jv_skip(&v, r)) {
    for (int m = 0; m < TS_LAT_NMETRICS && !rc; m++) {
      if (ts_lat_metric_per_call(m)) continue;
      if (add_sample(out, m, jv_number(&v, ts_jv_get(&v, r, ts_lat_metric_key(m))))) rc = 1;
    }
    int calls = ts_jv_get(&v, r, "calls");
    if (ts_jv_type_of(&v, calls) != TS_JV_ARRAY) continue;
    for (int j = 0, c = ts_jv_first(&v, calls); !rc && j < ts_jv_size(&v, calls);
         j++, c = ts_jv_skip(&v, c))
      for (int m = 0; m < TS_LAT_NMETRICS && !rc; m++) {
        if (!ts_lat_metric_per_call(m)) continue;
        if (add_sample(out, m, jv_number(&v, ts_jv_get(&v, c, ts_lat_metric_key(m))))) rc = 1;
      }
  }
  if (rc == 1) fprintf(stderr, "toolstream bench: out of memory\n");
  ts_jv_fini(&v);
  free(text);
  return rc;
}

static int compare(const bench_args *a) {
  samples s[2];
  memset(s, 0, sizeof s);
  int rc = load_samples(a->compare[0], &s[0]);
  if (!rc) rc = load_samples(a->compare[1], &s[1]);
  if (!rc) {
    printf("A: %s\nB: %s\n(medians; B - A with a 95%% bootstrap interval, %d resamples, "
           "seed %llu)\n\n", a->compare[0], a->compare[1], BENCH_BOOTSTRAP_ITERS,
           (unsigned long long)a->seed);
    printf("%-22s %6s %10s %6s %10s %10s %23s  %s\n", "metric", "n A", "A", "n B", "B", "B - A",
           "95% interval", "significant");
    for (int m = 0; m < TS_LAT_NMETRICS; m++) {
      ts_lat_diff d;
      int br = ts_lat_bootstrap(s[0].v[m], s[0].n[m], s[1].v[m], s[1].n[m],
                                BENCH_BOOTSTRAP_ITERS, a->seed, 0.95, &d);
      if (br == TS_E_NOMEM) {
        fprintf(stderr, "toolstream bench: out of memory\n");
        rc = 1;
        break;
      }
      if (br) {
        printf("%-22s %6zu %10s %6zu %10s %10s %23s  %s\n", ts_lat_metric_key(m), d.na,
               d.na ? "" : "-", d.nb, d.nb ? "" : "-", "-", "-", "-");
        continue;
      }
      char ci[64];
      snprintf(ci, sizeof ci, "[%.1f, %.1f]", d.lo, d.hi);
      printf("%-22s %6zu %10.1f %6zu %10.1f %+10.1f %23s  %s\n", ts_lat_metric_key(m), d.na,
             d.a_median, d.nb, d.b_median, d.diff, ci, d.significant ? "yes" : "no");
    }
  }
  samples_free(&s[0]);
  samples_free(&s[1]);
  return rc;
}

/* ---- the command ----------------------------------------------------------------------------- */

static int check_args(bench_args *a, const ts_cli_common *com, bench *b) {
  int sources = !!com->model_url + !!a->replay + !!a->from_store;
  if (a->ncompare) {
    if (a->ncompare != 2 || sources) {
      fprintf(stderr, "toolstream bench: --compare takes two files, A.json B.json, and no "
                      "other source\n");
      return 2;
    }
    return 0;
  }
  if (sources != 1) {
    fprintf(stderr, "toolstream bench: what to measure? --model-url URL, --replay DIR or "
                    "--from-store (one; see --help)\n");
    return 2;
  }
  if (com->model_url) {
    if (!a->requests == !a->prompt) {
      fprintf(stderr, "toolstream bench: --model-url needs a PROMPT or --requests FILE (one)\n");
      return 2;
    }
    int rc = ts_http_model_resolve(&a->hm, com);
    if (rc) return rc;
  } else if (a->requests || a->prompt || a->record) {
    fprintf(stderr, "toolstream bench: a PROMPT, --requests and --record are for --model-url\n");
    return 2;
  }
  if (com->has_thread && !a->from_store) {
    fprintf(stderr, "toolstream bench: --thread is for --from-store\n");
    return 2;
  }
  if (a->pace && !a->replay) {
    fprintf(stderr, "toolstream bench: --pace is for --replay\n");
    return 2;
  }
  if (a->from_store && (a->runs != 1 || a->warmup || a->rate || a->concurrency != 1)) {
    fprintf(stderr, "toolstream bench: --runs, --warmup, --rate and --concurrency are not for "
                    "--from-store\n");
    return 2;
  }
  b->pace = 100;
  if (a->pace) {
    if (!strcmp(a->pace, "recorded")) {
      b->recorded = 1;
      b->pace = 0;
    } else {
      uint64_t n;
      if (ts_cli_parse_size(a->pace, &n) || n < 1 || n > 10000000) {
        fprintf(stderr, "toolstream bench: --pace wants events per second (1..10000000) or "
                        "'recorded', not '%s'\n", a->pace);
        return 2;
      }
      b->pace = (double)n;
    }
  }
  if (a->format) {
    int f = ts_format_parse(a->format);
    if (f < 0 || f == TS_FORMAT_RAW) {
      fprintf(stderr, "toolstream bench: --format: unknown format '%s'\n", a->format);
      return 2;
    }
    b->format = (ts_format)f;
  }
  if (a->record && mkdir(a->record, 0755) && errno != EEXIST) {
    fprintf(stderr, "toolstream bench: --record %s: %s\n", a->record, strerror(errno));
    return 1;
  }
  return 0;
}

int ts_cli_bench(int argc, char **argv) {
  bench_args a;
  memset(&a, 0, sizeof a);
  a.runs = 1;
  a.concurrency = 1;
  a.seed = 1;
  ts_cli_common com;
  memset(&com, 0, sizeof com);
  int rc = ts_cli_parse(&ts_cli_cmd_bench, argc, argv, &com, bench_set, &a);
  if (rc >= 0) return rc;
  bench b;
  memset(&b, 0, sizeof b);
  b.a = &a;
  if ((rc = check_args(&a, &com, &b))) return rc;
  if (a.ncompare) return compare(&a);

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);

  const char *source = a.hm.url ? "model-url" : a.replay ? "replay" : "store";
  if ((rc = ts_cli_tools_defs(&com, &b.defs))) goto out;
  if (a.hm.url) {
    if (a.requests) {
      if ((rc = load_requests(a.requests, &b.reqs))) goto out;
    } else {
      b.reqs.v = calloc(1, sizeof *b.reqs.v);
      if (!b.reqs.v || !(b.reqs.v[0].prompt = strdup(a.prompt))) {
        fprintf(stderr, "toolstream bench: out of memory\n");
        rc = 1;
        goto out;
      }
      b.reqs.n = 1;
    }
    rc = run_jobs(&b);
  } else if (a.replay) {
    if ((rc = list_recordings(&b, a.replay))) goto out;
    rc = run_jobs(&b);
  } else {
    rc = read_store(&b, &com);
  }
  if (rc) goto out;

  size_t measured = 0;
  for (size_t i = 0; i < b.set.n; i++)
    measured += b.set.v[i].first_byte_us || (a.from_store && b.set.v[i].first_event_us);
  int to_stdout = (a.json && !strcmp(a.json, "-")) || (a.csv && !strcmp(a.csv, "-"));
  print_table(&b.set, to_stdout ? stderr : stdout);
  ts_buf doc;
  if (a.json) {
    ts_buf_init(&doc, BENCH_OUT_BYTES);
    write_json(&b.set, source, &doc);
    rc |= emit("--json", a.json, &doc);
    ts_buf_fini(&doc);
  }
  if (a.csv) {
    ts_buf_init(&doc, BENCH_OUT_BYTES);
    write_csv(&b.set, &doc);
    rc |= emit("--csv", a.csv, &doc);
    ts_buf_fini(&doc);
  }
  if (a.svg) {
    ts_buf_init(&doc, BENCH_OUT_BYTES);
    char title[512];
    snprintf(title, sizeof title, "toolstream bench: %s%s%s", source,
             a.hm.url ? " " : a.replay ? " " : "", a.hm.url ? a.hm.model : a.replay ? a.replay : "");
    ts_lat_svg(&b.set, title, &doc);
    rc |= emit("--svg", a.svg, &doc);
    ts_buf_fini(&doc);
  }
  if (!rc && !measured) {
    fprintf(stderr, "toolstream bench: nothing was measured%s\n",
            b.set.n && b.set.v[0].error[0] ? " (every request failed)" : "");
    rc = 1;
  }
out:
  ts_lat_set_fini(&b.set);
  free(b.done);
  for (size_t i = 0; i < b.nfiles; i++) free(b.files[i]);
  free(b.files);
  requests_free(&b.reqs);
  ts_tool_defs_free(&b.defs);
  return rc;
}
