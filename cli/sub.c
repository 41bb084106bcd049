/*
 * sub.c: `toolstream sub`: subscribe to a thread's live events on the event bus.
 *
 * On a terminal it draws a live view: one line per tool call, with a spinner and the
 * call's progress label while its arguments stream, then its final state, redrawn in
 * place. Without a terminal, or with --json, it prints one event per line exactly as
 * `tap` printed it. The subscriber library (events/bus_sub.h) fills gaps from the replay
 * service, so the events arrive exactly once and in order.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bus_pub.h"
#include "bus_sub.h"
#include "cli.h"
#include "json_view.h"
#include "strbuf.h"

static const char sub_usage[] =
    "usage: toolstream sub URL [options]\n"
    "\n"
    "Subscribes to the events `toolstream tap --pub URL` publishes. On a terminal: a live\n"
    "view, one line per tool call with its progress label. Otherwise, or with --json: one\n"
    "JSON event per line, as tap prints them.\n"
    "\n"
    "options:\n"
    "  --replay URL            the publisher's replay service: fetch missed events, so\n"
    "                          every event arrives exactly once and in order\n"
    "  --thread ID             only this thread (default: every thread)\n"
    "  --json                  one JSON event per line even on a terminal\n"
    "  --live                  start with the next live event (default: everything the\n"
    "                          replay history still holds, then live)\n"
    "  --wait                  keep trying to connect (default: give up after\n"
    "                          --connect-timeout)\n"
    "  --connect-timeout MS    how long to wait for the publisher (default 3000)\n"
    "  --idle-exit MS          exit after MS without events (once one arrived)\n"
    "  --count N               exit after N events\n"
    "  --tls-ca FILE           CA certificate for wss:// and tls+tcp://\n"
    "  --tls-server-name NAME  name to verify in the publisher's certificate\n"
    "  -h, --help              this help\n"
    "\n"
    "Colours follow NO_COLOR. Ctrl-C exits cleanly (status 0). Exit status 1: cannot\n"
    "connect, or the bus failed; 2: usage errors.\n";

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig) {
  (void)sig;
  stop_flag = 1;
}

/* ---- the live view ---------------------------------------------------------------- */

#define VIEW_MAX_CALLS 64  /* lines kept on screen; older calls scroll away */
#define VIEW_TEXT 160

typedef struct {
  char thread[64];
  long index;
  char tool[64];
  char progress[VIEW_TEXT];
  char detail[VIEW_TEXT];
  int state; /* 0 streaming, 1 ready, 2 error, 3 running, 4 done, 5 failed */
} view_call;

typedef struct {
  int color;
  view_call calls[VIEW_MAX_CALLS];
  int n;
  int drawn; /* lines drawn last time (to move back over them) */
  unsigned frame;
  ts_jv jv;
  char *scratch;
  size_t scratch_cap;
} view;

static void copy_str(ts_jv *jv, int i, char *dst, size_t cap) {
  ts_view v;
  dst[0] = '\0';
  if (i < 0 || ts_jv_type_of(jv, i) != TS_JV_STRING || ts_jv_str(jv, i, &v)) return;
  size_t n = v.len < cap - 1 ? v.len : cap - 1;
  while (n && n < v.len && ((unsigned char)v.p[n] & 0xC0) == 0x80) n--; /* whole chars */
  for (size_t k = 0; k < n; k++) dst[k] = (v.p[k] >= 0 && v.p[k] < 0x20) ? ' ' : v.p[k];
  dst[n] = '\0';
}

static view_call *find_call(view *w, const char *thread, long index, const char *tool) {
  for (int i = w->n - 1; i >= 0; i--)
    if (w->calls[i].index == index && !strcmp(w->calls[i].thread, thread)) return &w->calls[i];
  if (w->n == VIEW_MAX_CALLS) { /* the oldest leaves the screen */
    memmove(&w->calls[0], &w->calls[1], sizeof w->calls[0] * (VIEW_MAX_CALLS - 1));
    w->n--;
  }
  view_call *c = &w->calls[w->n++];
  memset(c, 0, sizeof *c);
  snprintf(c->thread, sizeof c->thread, "%s", thread);
  snprintf(c->tool, sizeof c->tool, "%s", tool);
  c->index = index;
  return c;
}

static const char *spinner[] = {"|", "/", "-", "\\"};

static void redraw(view *w) {
  const char *dim = w->color ? "\033[2m" : "", *off = w->color ? "\033[0m" : "";
  const char *cyan = w->color ? "\033[36m" : "", *green = w->color ? "\033[32m" : "";
  const char *red = w->color ? "\033[31m" : "", *bold = w->color ? "\033[1m" : "";
  if (w->drawn) printf("\033[%dA", w->drawn);
  for (int i = 0; i < w->n; i++) {
    view_call *c = &w->calls[i];
    const char *mark, *col;
    switch (c->state) {
      case 1: mark = "ready"; col = green; break;
      case 2: mark = "error"; col = red; break;
      case 3: mark = "running"; col = cyan; break;
      case 4: mark = "done"; col = green; break;
      case 5: mark = "failed"; col = red; break;
      default: mark = spinner[w->frame % 4]; col = cyan;
    }
    printf("\r\033[2K%s%-7s%s %s%s%s #%ld %s%s%s%s%s%s\n", col, mark, off, bold, c->tool, off,
           c->index, c->progress[0] ? "\"" : "", c->progress, c->progress[0] ? "\"" : "", dim,
           c->detail[0] ? "  " : "", c->detail);
    printf("%s", off);
  }
  w->drawn = w->n;
  fflush(stdout);
}

/* A line printed above the call list, where it stays. */
static void note_line(view *w, const char *color, const char *text) {
  if (w->drawn) printf("\033[%dA", w->drawn);
  printf("\r\033[2K%s%s%s\n", w->color ? color : "", text, w->color ? "\033[0m" : "");
  w->drawn = 0;
  redraw(w);
}

static void view_event(view *w, const char *json, size_t len) {
  if (len + 1 > w->scratch_cap) {
    size_t cap = len + 1 > 4096 ? len + 1 : 4096;
    char *p = realloc(w->scratch, cap);
    if (!p) return;
    w->scratch = p;
    w->scratch_cap = cap;
  }
  memcpy(w->scratch, json, len);
  w->scratch[len] = '\0';
  int rc;
  while ((rc = ts_jv_parse(&w->jv, w->scratch, len)) == TS_E_MS_TOO_MANY_TOKENS &&
         w->jv.cap < (1 << 20)) { /* a big tool_call_ready: grow the token array */
    int cap = w->jv.cap * 4;
    ts_jv_fini(&w->jv);
    if (ts_jv_init(&w->jv, cap)) return;
    memcpy(w->scratch, json, len);
  }
  if (rc) return;
  ts_jv *jv = &w->jv;
  char type[32], thread[64], tool[64], text[VIEW_TEXT];
  copy_str(jv, ts_jv_get(jv, 0, "type"), type, sizeof type);
  copy_str(jv, ts_jv_get(jv, 0, "thread"), thread, sizeof thread);
  int64_t index = -1, bytes = 0;
  int ii = ts_jv_get(jv, 0, "index");
  if (ii >= 0 && ts_jv_int(jv, ii, &index) == 0 && index >= 0) {
    copy_str(jv, ts_jv_get(jv, 0, "tool"), tool, sizeof tool);
    view_call *c = find_call(w, thread, (long)index, tool);
    if (!strcmp(type, "tool_call_started")) {
      copy_str(jv, ts_jv_get(jv, 0, "progress"), c->progress, sizeof c->progress);
    } else if (!strcmp(type, "tool_call_heartbeat")) {
      ts_jv_int(jv, ts_jv_get(jv, 0, "bytes"), &bytes);
      snprintf(c->detail, sizeof c->detail, "%lld bytes", (long long)bytes);
    } else if (!strcmp(type, "tool_call_ready")) {
      c->state = 1;
      ts_view a = ts_jv_raw(jv, ts_jv_get(jv, 0, "arguments"));
      snprintf(c->detail, sizeof c->detail, "%zu bytes of arguments", a.len);
    } else if (!strcmp(type, "tool_call_error")) {
      c->state = 2;
      copy_str(jv, ts_jv_get(jv, 0, "error"), c->detail, sizeof c->detail);
    } else if (!strcmp(type, "tool_execution_started")) {
      c->state = 3;
    } else if (!strcmp(type, "tool_result")) {
      c->state = ts_jv_is_true(jv, ts_jv_get(jv, 0, "is_error")) ? 5 : 4;
    }
    redraw(w);
    return;
  }
  if (!strcmp(type, "stream_error")) {
    copy_str(jv, ts_jv_get(jv, 0, "error"), text, sizeof text);
    char line[VIEW_TEXT + 128];
    snprintf(line, sizeof line, "stream error (%s): %s", thread, text);
    note_line(w, "\033[31m", line);
  } else if (!strcmp(type, "turn_finished")) {
    copy_str(jv, ts_jv_get(jv, 0, "stop_reason"), text, sizeof text);
    char line[VIEW_TEXT + 128];
    snprintf(line, sizeof line, "turn finished (%s)%s%s", thread, text[0] ? ": " : "", text);
    note_line(w, "\033[2m", line);
  }
}

/* ---- the command ------------------------------------------------------------------- */

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int ts_cli_sub(int argc, char **argv) {
  const char *url = NULL, *replay = NULL, *thread = NULL, *val;
  ts_sub_opts so;
  memset(&so, 0, sizeof so);
  int json = 0, wait_forever = 0, r;
  uint64_t connect_ms = 3000, idle_ms = 0, count = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(sub_usage, stdout);
      return 0;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--replay", &val))) {
      if (r < 0) return 2;
      replay = val;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--thread", &val))) {
      if (r < 0) return 2;
      thread = val;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--tls-ca", &val))) {
      if (r < 0) return 2;
      so.tls_ca_file = val;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--tls-server-name", &val))) {
      if (r < 0) return 2;
      so.tls_server_name = val;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--connect-timeout", &val)) ||
               (r = ts_cli_opt(argc, argv, &i, "--idle-exit", &val)) ||
               (r = ts_cli_opt(argc, argv, &i, "--count", &val))) {
      if (r < 0) return 2;
      const char *opt = strchr(argv[i], '=') && argv[i][0] == '-' ? argv[i] : argv[i - 1];
      uint64_t n;
      if (ts_cli_parse_size(val, &n) || n > 1000000000ull) {
        fprintf(stderr, "toolstream sub: %.*s wants a number, got '%s'\n",
                (int)strcspn(opt, "="), opt, val);
        return 2;
      }
      if (!strncmp(opt, "--connect-timeout", 17)) connect_ms = n;
      else if (!strncmp(opt, "--idle-exit", 11)) idle_ms = n;
      else count = n;
    } else if (!strcmp(a, "--json")) {
      json = 1;
    } else if (!strcmp(a, "--live")) {
      so.from = TS_SUB_LIVE;
    } else if (!strcmp(a, "--wait")) {
      wait_forever = 1;
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "toolstream sub: unknown option '%s' (try --help)\n", a);
      return 2;
    } else if (url) {
      fprintf(stderr, "toolstream sub: more than one URL\n");
      return 2;
    } else {
      url = a;
    }
  }
  if (!url) {
    fprintf(stderr, "toolstream sub: which URL? (try --help)\n");
    return 2;
  }
  if (!isatty(STDOUT_FILENO)) json = 1;

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);

  ts_sub *s;
  if ((r = ts_sub_open(url, replay, thread, &so, &s)) != 0) {
    fprintf(stderr, "toolstream sub: cannot subscribe to %s: %s\n", url,
                r == TS_E_IO ? ts_bus_last_error() : ts_err_message(r));
    return r == TS_E_INVAL ? 2 : 1;
  }
  /* nng dials in the background; wait until something answers, or say it did not. */
  double t0 = now_ms();
  while (!ts_sub_connected(s) && !stop_flag) {
    if (!wait_forever && now_ms() - t0 >= (double)connect_ms) {
      fprintf(stderr,
              "toolstream sub: cannot connect to %s: no publisher answered within %llu ms "
              "(--wait keeps trying)\n",
              url, (unsigned long long)connect_ms);
      ts_sub_close(s);
      return 1;
    }
    struct timespec ts = {0, 20 * 1000000L};
    nanosleep(&ts, NULL);
  }

  view w;
  memset(&w, 0, sizeof w);
  const char *nc = getenv("NO_COLOR");
  w.color = !(nc && nc[0]);
  if (!json && ts_jv_init(&w.jv, 4096)) {
    fprintf(stderr, "toolstream sub: out of memory\n");
    ts_sub_close(s);
    return 1;
  }
  int rc = 0;
  uint64_t got = 0;
  double last_event = now_ms();
  while (!stop_flag) {
    ts_sub_item it;
    r = ts_sub_next(s, &it, 100);
    if (r < 0) {
      fprintf(stderr, "toolstream sub: %s\n", r == TS_E_IO ? ts_bus_last_error() : ts_err_message(r));
      rc = 1;
      break;
    }
    if (r == 0) {
      if (!json && w.n) {
        w.frame++;
        redraw(&w);
      }
      if (idle_ms && got && now_ms() - last_event >= (double)idle_ms) break;
      continue;
    }
    last_event = now_ms();
    if (it.kind == TS_SUB_GONE) {
      fprintf(stderr, "toolstream sub: events %llu..%llu of thread %s are lost (no longer in the "
                      "publisher's history)\n",
              (unsigned long long)it.seq, (unsigned long long)it.seq_end, it.thread);
      continue;
    }
    got++;
    if (json) {
      if (fwrite(it.json, 1, it.json_len, stdout) != it.json_len || putchar('\n') == EOF ||
          fflush(stdout) != 0) {
        rc = errno == EPIPE ? 0 : 1; /* the reader went away */
        break;
      }
    } else {
      view_event(&w, it.json, it.json_len);
    }
    if (count && got >= count) break;
  }
  if (!json) {
    ts_jv_fini(&w.jv);
    free(w.scratch);
  }
  ts_sub_close(s);
  return rc;
}
