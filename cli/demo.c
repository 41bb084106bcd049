/*
 * demo.c: `toolstream demo`: what toolstream is for, in under ten seconds.
 *
 * It builds an OpenAI Chat Completions stream in which a model calls `write_file` twice,
 * each call's `description` first and then tens of kilobytes of file content, and
 * streams it through the tap a few bytes at a time, paced like a real model. Each event
 * is printed as it happens, then a summary of how much earlier `tool_call_started`
 * arrived than the call's complete arguments.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "strbuf.h"
#include "tap.h"

static const char demo_usage[] =
    "usage: toolstream demo [--rate EVENTS_PER_SEC] [--json]\n"
    "\n"
    "Streams a sample reply with two write_file calls (about 40 KiB of content) through\n"
    "the tap, paced like a model (default 2000 SSE events per second), and prints each\n"
    "event as it happens (--json: the events as tap prints them).\n";

typedef struct {
  double t0;
  uint64_t started_off[2], ready_off[2];
  double started_ms[2], ready_ms[2];
  int json;
  unsigned events;
} demo_state;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(double ms) {
  if (ms <= 0) return;
  struct timespec ts = {(time_t)(ms / 1e3), (long)((ms - (double)(time_t)(ms / 1e3) * 1e3) * 1e6)};
  nanosleep(&ts, NULL);
}

static const char *progress_of(void *user, const char *tool, size_t len, size_t *arg_len) {
  (void)user;
  if (len == 10 && !memcmp(tool, "write_file", 10)) {
    *arg_len = 11;
    return "description";
  }
  return NULL;
}

static int on_event(void *user, const ts_tap_event *e) {
  demo_state *d = user;
  double ms = now_ms() - d->t0;
  d->events++;
  if (e->is_call && e->index < 2) {
    if (e->type == TS_TAP_TOOL_CALL_STARTED) d->started_off[e->index] = e->offset, d->started_ms[e->index] = ms;
    if (e->type == TS_TAP_TOOL_CALL_READY) d->ready_off[e->index] = e->offset, d->ready_ms[e->index] = ms;
  }
  switch (e->type) {
    case TS_TAP_TOOL_CALL_STARTED:
      printf("%8.1f ms  %-20s #%u %.*s  \"%.*s\"\n", ms, ts_tap_type_name(e->type), e->index,
             (int)e->tool.len, e->tool.p, (int)e->progress.len, e->progress.p);
      break;
    case TS_TAP_TOOL_CALL_HEARTBEAT:
      printf("%8.1f ms  %-20s #%u   %llu bytes of arguments so far\n", ms,
             ts_tap_type_name(e->type), e->index, (unsigned long long)e->bytes);
      break;
    case TS_TAP_TOOL_CALL_READY:
      printf("%8.1f ms  %-20s #%u   %zu bytes of arguments, complete and valid\n", ms,
             ts_tap_type_name(e->type), e->index, e->arguments.len);
      break;
    case TS_TAP_TURN_FINISHED:
      printf("%8.1f ms  %-20s stop_reason=%.*s\n", ms, ts_tap_type_name(e->type),
             (int)e->stop_reason.len, e->stop_reason.p);
      break;
    default:
      printf("%8.1f ms  %-20s %.*s\n", ms, ts_tap_type_name(e->type), (int)e->error.len,
             e->error.p);
  }
  fflush(stdout);
  return 0;
}

/* One chat chunk carrying an argument fragment for call `index`. */
static void chunk_args(ts_buf *out, int index, const char *id, const char *frag, size_t n) {
  ts_buf_puts(out, "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
                   "\"delta\":{\"tool_calls\":[{\"index\":");
  ts_buf_append_u64(out, (uint64_t)index);
  if (id) {
    ts_buf_puts(out, ",\"id\":\"");
    ts_buf_puts(out, id);
    ts_buf_puts(out, "\",\"type\":\"function\",\"function\":{\"name\":\"write_file\",\"arguments\":");
  } else {
    ts_buf_puts(out, ",\"function\":{\"arguments\":");
  }
  ts_buf_append_json_string(out, frag, n);
  ts_buf_puts(out, "}}]},\"finish_reason\":null}]}\n\n");
}

/* The arguments JSON of one write_file call with `lines` lines of generated content. */
static void make_args(ts_buf *a, const char *desc, const char *path, int lines) {
  ts_buf content;
  ts_buf_init(&content, 1 << 22);
  for (int i = 0; i < lines; i++) {
    char line[128];
    snprintf(line, sizeof line, "  <p class=\"row-%d\">Caf\xC3\xA9 item %d: \\o/ \"fresh\"</p>\n", i, i);
    ts_buf_puts(&content, line);
  }
  ts_buf_puts(a, "{\"description\":");
  ts_buf_append_json_string(a, desc, strlen(desc));
  ts_buf_puts(a, ",\"path\":");
  ts_buf_append_json_string(a, path, strlen(path));
  ts_buf_puts(a, ",\"content\":");
  ts_buf_append_json_string(a, content.p, content.len);
  ts_buf_puts(a, "}");
  ts_buf_fini(&content);
}

int ts_cli_demo(int argc, char **argv) {
  double rate = 2000;
  demo_state d;
  memset(&d, 0, sizeof d);
  for (int i = 1; i < argc; i++) {
    const char *val;
    int r;
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      fputs(demo_usage, stdout);
      return 0;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--rate", &val))) {
      if (r < 0) return 2;
      rate = atof(val);
      if (rate < 1 || rate > 1e7) {
        fprintf(stderr, "toolstream demo: --rate wants 1 to 10000000\n");
        return 2;
      }
    } else {
      fprintf(stderr, "toolstream demo: unknown option '%s' (try --help)\n", argv[i]);
      return 2;
    }
  }

  /* Build the stream: two calls, arguments cut into 12-byte deltas (on UTF-8 boundaries). */
  ts_buf args[2], sse;
  ts_buf_init(&args[0], 1 << 22);
  ts_buf_init(&args[1], 1 << 22);
  ts_buf_init(&sse, 1 << 24);
  make_args(&args[0], "writing index.html", "index.html", 500);
  make_args(&args[1], "writing menu.html", "menu.html", 300);
  ts_buf_puts(&sse, "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
                    "\"delta\":{\"role\":\"assistant\",\"content\":null},\"finish_reason\":null}]}\n\n");
  size_t bounds[1 << 16];
  size_t nb = 0;
  for (int c = 0; c < 2; c++) {
    const char *p = args[c].p;
    size_t n = args[c].len, at = 0;
    while (at < n) {
      size_t k = n - at < 12 ? n - at : 12;
      while (at + k < n && ((unsigned char)p[at + k] & 0xC0) == 0x80) k++;
      chunk_args(&sse, c, at == 0 ? (c ? "call_menu" : "call_index") : NULL, p + at, k);
      if (nb < sizeof bounds / sizeof bounds[0]) bounds[nb++] = sse.len;
      at += k;
    }
  }
  ts_buf_puts(&sse, "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
                    "\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n");
  bounds[nb++] = sse.len;
  if (sse.err) {
    fprintf(stderr, "toolstream demo: out of memory\n");
    return 1;
  }

  printf("toolstream demo: a model streams two write_file calls (%zu bytes of SSE,\n"
         "%zu events at %.0f/s); each line is printed the moment the tap knows it.\n\n",
         sse.len, nb, rate);
  ts_tap_config cfg = {.format = TS_MS_AUTO, .progress_arg = progress_of, .heartbeat_bytes = 8192};
  ts_tap *tap = ts_tap_new(&cfg, on_event, &d);
  if (!tap) {
    fprintf(stderr, "toolstream demo: out of memory\n");
    return 1;
  }
  d.t0 = now_ms();
  size_t prev = 0;
  for (size_t i = 0; i < nb; i++) {
    double due = (double)i * 1e3 / rate;
    sleep_ms(due - (now_ms() - d.t0));
    ts_tap_feed(tap, sse.p + prev, bounds[i] - prev);
    prev = bounds[i];
  }
  ts_tap_finish(tap);
  int failed = ts_tap_failed(tap);
  ts_tap_free(tap);

  printf("\nsummary:\n");
  for (int c = 0; c < 2; c++) {
    printf("  call #%d: tool_call_started at byte %llu (%.1f ms), arguments complete at byte %llu "
           "(%.1f ms):\n           the label came %.1f ms and %llu bytes earlier.\n",
           c, (unsigned long long)d.started_off[c], d.started_ms[c],
           (unsigned long long)d.ready_off[c], d.ready_ms[c], d.ready_ms[c] - d.started_ms[c],
           (unsigned long long)(d.ready_off[c] - d.started_off[c]));
  }
  ts_buf_fini(&args[0]);
  ts_buf_fini(&args[1]);
  ts_buf_fini(&sse);
  return failed ? 1 : 0;
}
