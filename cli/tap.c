/*
 * tap.c: `toolstream tap`: a provider stream in (a file or standard input), one JSON
 * thread event per line out, each written and flushed the moment it is known.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/thread_id.h"
#include "events/bus_pub.h"
#include "cli/cli.h"
#include "events/event.h"
#include "js/jstools.h"
#include "stream/tap.h"
#include "stream/tool_defs.h"

static const char tap_usage[] =
    "usage: toolstream tap [options] [FILE]\n"
    "\n"
    "Reads a model's streamed reply from FILE (or standard input, also as '-') and\n"
    "writes one JSON event per line to standard output as soon as each is known;\n"
    "tool_call_started fires the moment a tool's progress argument has streamed.\n"
    "\n"
    "options:\n"
    "  --format F            auto (default), openai-chat, openai-responses, anthropic,\n"
    "                        gemini, or raw (the bare arguments JSON of one call)\n"
    "  --tool NAME           the tool's name, for --format raw (required there)\n"
    "  --tools FILE          JSON array of tool definitions (name, description,\n"
    "                        progressArgument, args, annotations), or a JavaScript tool\n"
    "                        module (FILE.js, docs/jstools.md); repeatable\n"
    "  --progress-arg T=A    tool T's progress argument is A; repeatable, wins over --tools\n"
    "  --thread ID           thread id stamped on events (default: a random th_...)\n"
    "  --deltas              also emit tool_call_delta with each argument fragment\n"
    "  --text                also emit text_delta with the model's text\n"
    "  --heartbeat-bytes N   tool_call_heartbeat every N argument bytes (default 4k)\n"
    "  --progress-max N      cap on the progress label in bytes (default 200)\n"
    "  --max-args-bytes N    cap on one call's arguments (default 16m)\n"
    "  --max-event-bytes N   cap on one SSE event's data (default 4m)\n"
    "  --pub URL             also publish every event on the event bus (nng pub0: ipc://,\n"
    "                        tcp://, ws://, wss://, tls+tcp://, inproc://); a URL with no\n"
    "                        host (tcp://:7000) binds loopback only\n"
    "  --replay URL          serve missed events to subscribers on this URL (nng rep0)\n"
    "  --tls-cert FILE       certificate (PEM, may hold the key too) for wss:// and tls+tcp://\n"
    "  --tls-key FILE        its private key, when not in the certificate file\n"
    "  --linger MS           with --pub: keep serving replay this long after the input\n"
    "                        ends, so slow subscribers can catch up (default 1000)\n"
    "  -h, --help            this help\n"
    "\n"
    "Exit status: 0 for a clean stream; 1 when the stream ended in error (a\n"
    "stream_error event; one line on standard error says why); 2 for usage errors.\n";

typedef struct {
  ts_tool_defs defs;
  char thread[128];
  uint64_t seq;
  ts_buf line;
  int write_failed;
  char last_error[256];
  ts_pub *pub;
  int pub_failed;
} tap_out;

/* A --tools FILE.js: loads the module (into a registry of its own) for the progress
 * arguments its tools declare. 0, or -1 after printing why. */
static int tap_js_tools(ts_tool_defs *defs, const char *path) {
  char why[512] = "";
  ts_registry *reg = ts_registry_new();
  int rc = reg ? ts_jstools_load(reg, path, NULL, why, sizeof why) : TS_E_NOMEM;
  for (size_t i = 0; !rc && reg && i < ts_registry_count(reg); i++) {
    const ts_tool *t = ts_registry_at(reg, i);
    if (ts_tool_progress_arg(t))
      rc = ts_tool_defs_set_progress(defs, ts_tool_name(t), ts_tool_progress_arg(t));
  }
  ts_registry_free(reg);
  if (rc) fprintf(stderr, "toolstream tap: %s\n", why[0] ? why : "out of memory");
  return rc ? -1 : 0;
}

static const char *lookup_progress(void *user, const char *tool, size_t len, size_t *arg_len) {
  tap_out *o = user;
  const ts_tool_def *d = ts_tool_defs_find(&o->defs, tool, len);
  if (!d || !d->progress_arg) return NULL;
  *arg_len = strlen(d->progress_arg);
  return d->progress_arg;
}

static int on_event(void *user, const ts_tap_event *e) {
  tap_out *o = user;
  ts_event ev = {.thread = {o->thread, strlen(o->thread)}, .seq = ++o->seq, .body = *e};
  ts_buf_reset(&o->line);
  if (ts_event_encode(&ev, &o->line) || ts_buf_putc(&o->line, '\n')) {
    fprintf(stderr, "toolstream tap: cannot encode event: %s\n", ts_err_message(o->line.err));
    return 1;
  }
  if (e->type == TS_TAP_STREAM_ERROR)
    snprintf(o->last_error, sizeof o->last_error, "%.*s", (int)e->error.len, e->error.p);
  if (o->pub && !o->pub_failed) {
    int pr = ts_pub_send(o->pub, o->thread, strlen(o->thread), ev.seq, o->line.p, o->line.len - 1);
    if (pr) { /* keep printing; say once that the bus stopped taking events */
      fprintf(stderr, "toolstream tap: cannot publish: %s\n", ts_err_message(pr));
      o->pub_failed = 1;
    }
  }
  if (fwrite(o->line.p, 1, o->line.len, stdout) != o->line.len || fflush(stdout) != 0) {
    o->write_failed = 1;
    return 1; /* the reader went away: stop */
  }
  return 0;
}

int ts_cli_tap(int argc, char **argv) {
  ts_tap_config cfg;
  memset(&cfg, 0, sizeof cfg);
  tap_out o;
  memset(&o, 0, sizeof o);
  ts_buf_init(&o.line, (size_t)64 << 20);
  const char *path = NULL, *val, *pub_url = NULL, *replay_url = NULL;
  ts_pub_opts popts;
  memset(&popts, 0, sizeof popts);
  uint64_t linger_ms = 1000;
  int rc = 2, r;
  uint64_t n;
  char *buf = NULL;
  ts_tap *tap = NULL;
  int fd = -1;

  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(tap_usage, stdout);
      rc = 0;
      goto out;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--format", &val))) {
      if (r < 0) goto out;
      int f = ts_ms_format_parse(val);
      if (f < 0) {
        fprintf(stderr, "toolstream tap: unknown format '%s' (try --help)\n", val);
        goto out;
      }
      cfg.format = (ts_ms_format)f;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--tool", &val))) {
      if (r < 0) goto out;
      cfg.raw_tool = val;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--tools", &val))) {
      if (r < 0) goto out;
      if (ts_jstools_is_module(val)) { /* a JavaScript module: its progress arguments */
        if (tap_js_tools(&o.defs, val)) goto out;
        continue;
      }
      if (ts_cli_tools_json(&o.defs, val, "toolstream tap")) goto out;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--progress-arg", &val))) {
      if (r < 0) goto out;
      if (ts_cli_progress_arg(&o.defs, val, "toolstream tap")) goto out;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--thread", &val))) {
      if (r < 0) goto out;
      if (!*val || strlen(val) >= sizeof o.thread) {
        fprintf(stderr, "toolstream tap: --thread wants 1 to %zu bytes\n", sizeof o.thread - 1);
        goto out;
      }
      snprintf(o.thread, sizeof o.thread, "%s", val);
    } else if ((r = ts_cli_opt(argc, argv, &i, "--pub", &val))) {
      if (r < 0) goto out;
      pub_url = val;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--replay", &val))) {
      if (r < 0) goto out;
      replay_url = val;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--tls-cert", &val))) {
      if (r < 0) goto out;
      popts.tls_cert_file = val;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--tls-key", &val))) {
      if (r < 0) goto out;
      popts.tls_key_file = val;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--linger", &val))) {
      if (r < 0) goto out;
      if (ts_cli_parse_size(val, &linger_ms) || linger_ms > 3600000) {
        fprintf(stderr, "toolstream tap: --linger wants milliseconds from 0 to 3600000\n");
        goto out;
      }
    } else if (!strcmp(a, "--deltas")) {
      cfg.deltas = 1;
    } else if (!strcmp(a, "--text")) {
      cfg.text = 1;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--heartbeat-bytes", &val)) ||
               (r = ts_cli_opt(argc, argv, &i, "--progress-max", &val)) ||
               (r = ts_cli_opt(argc, argv, &i, "--max-args-bytes", &val)) ||
               (r = ts_cli_opt(argc, argv, &i, "--max-event-bytes", &val))) {
      if (r < 0) goto out;
      const char *opt = argv[i][0] == '-' && strchr(argv[i], '=') ? argv[i] : argv[i - 1];
      if (ts_cli_parse_size(val, &n) || n == 0 || n > ((uint64_t)1 << 32)) {
        fprintf(stderr, "toolstream tap: %.*s wants a size from 1 to 4g, got '%s'\n",
                (int)strcspn(opt, "="), opt, val);
        goto out;
      }
      if (!strncmp(opt, "--heartbeat-bytes", 17)) cfg.heartbeat_bytes = n;
      else if (!strncmp(opt, "--progress-max", 14)) {
        if (n > TS_TAP_PROGRESS_LIMIT) {
          fprintf(stderr, "toolstream tap: --progress-max wants at most %u\n", TS_TAP_PROGRESS_LIMIT);
          goto out;
        }
        cfg.progress_max = (size_t)n;
      }
      else if (!strncmp(opt, "--max-args-bytes", 16)) cfg.max_args_bytes = (size_t)n;
      else cfg.max_event_bytes = (size_t)n;
    } else if (a[0] == '-' && a[1] != '\0') {
      fprintf(stderr, "toolstream tap: unknown option '%s' (try --help)\n", a);
      goto out;
    } else if (path) {
      fprintf(stderr, "toolstream tap: more than one input file\n");
      goto out;
    } else {
      path = a;
    }
  }
  if (cfg.format == TS_MS_RAW && !cfg.raw_tool) {
    fprintf(stderr, "toolstream tap: --format raw needs --tool NAME\n");
    goto out;
  }
  if (replay_url && !pub_url) {
    fprintf(stderr, "toolstream tap: --replay needs --pub\n");
    goto out;
  }
  if (!o.thread[0]) ts_thread_id_new(o.thread, sizeof o.thread);
  for (const char *c = o.thread; *c; c++) {
    if ((unsigned char)*c <= 0x20 || *c == 0x7F) {
      fprintf(stderr, "toolstream tap: --thread must not hold spaces or control characters\n");
      goto out;
    }
  }
  if (pub_url) {
    int pr = ts_pub_open(pub_url, replay_url, &popts, &o.pub);
    if (pr) {
      fprintf(stderr, "toolstream tap: cannot publish on %s%s%s: %s\n", pub_url,
              replay_url ? " / " : "", replay_url ? replay_url : "",
              pr == TS_E_IO ? ts_bus_last_error() : ts_err_message(pr));
      rc = 1;
      goto out;
    }
  }

  fd = (!path || !strcmp(path, "-")) ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    fprintf(stderr, "toolstream tap: cannot open %s: %s\n", path, strerror(errno));
    rc = 1;
    goto out;
  }
  cfg.progress_arg = lookup_progress;
  cfg.progress_user = &o;
  tap = ts_tap_new(&cfg, on_event, &o);
  enum { CHUNK = 64 * 1024 };
  buf = malloc(CHUNK);
  if (!tap || !buf) {
    fprintf(stderr, "toolstream tap: out of memory\n");
    rc = 1;
    goto out;
  }
  rc = 0;
  for (;;) {
    ssize_t got = read(fd, buf, CHUNK);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      fprintf(stderr, "toolstream tap: read error: %s\n", strerror(errno));
      rc = 1;
      break;
    }
    if (got == 0) break;
    if (ts_tap_feed(tap, buf, (size_t)got)) break;
  }
  ts_tap_finish(tap);
  if (o.write_failed) {
    rc = 1; /* standard output closed: nothing to report to */
  } else if (rc == 0 && ts_tap_failed(tap)) {
    fprintf(stderr, "toolstream tap: stream ended in error: %s\n", o.last_error);
    rc = 1;
  }

out:
  if (o.pub) {
    if (rc != 2 && linger_ms) { /* let queued messages go and late subscribers catch up */
      struct timespec ts = {(time_t)(linger_ms / 1000), (long)(linger_ms % 1000) * 1000000L};
      nanosleep(&ts, NULL);
    }
    ts_pub_close(o.pub);
  }
  if (fd > STDIN_FILENO) close(fd);
  free(buf);
  ts_tap_free(tap);
  ts_tool_defs_free(&o.defs);
  ts_buf_fini(&o.line);
  return rc;
}
