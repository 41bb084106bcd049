/*
 * tap.c: `toolstream tap`: a provider stream in (a file or standard input), one JSON
 * thread event per line out, each written and flushed the moment it is known.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "cli/cli.h"
#include "events/bus_pub.h"
#include "events/sink.h"
#include "stream/tap.h"
#include "stream/tool_defs.h"

enum {
  O_FORMAT = 1, O_TOOL, O_DELTAS, O_TEXT, O_HEARTBEAT, O_PROGRESS_MAX, O_MAX_ARGS, O_MAX_EVENT,
  O_LINGER, O_TURN
};

static const ts_cli_opt tap_opts[] = {
    {"format", 0, TS_CLI_STRING, O_FORMAT, 0, 0, "F",
     "auto (default), openai-chat, openai-responses, anthropic,\n"
     "gemini (SSE or its JSON array), ollama (native NDJSON),\n"
     "cohere (v2 chat), bedrock (ConverseStream's binary event\n"
     "stream), or raw (the bare arguments JSON of one call)", NULL},
    {"tool", 0, TS_CLI_STRING, O_TOOL, 0, 0, "NAME",
     "the tool's name, for --format raw (required there)", NULL},
    {"deltas", 0, TS_CLI_FLAG, O_DELTAS, 0, 0, NULL,
     "also emit tool_call_delta with each argument fragment", NULL},
    {"text", 0, TS_CLI_FLAG, O_TEXT, 0, 0, NULL, "also emit text_delta with the model's text",
     NULL},
    {"heartbeat-bytes", 0, TS_CLI_SIZE, O_HEARTBEAT, 1, (uint64_t)1 << 32, "N",
     "tool_call_heartbeat every N argument bytes (default 4k)", NULL},
    {"progress-max", 0, TS_CLI_SIZE, O_PROGRESS_MAX, 1, TS_TAP_PROGRESS_LIMIT, "N",
     "cap on the progress label in bytes (default 200)", NULL},
    {"max-args-bytes", 0, TS_CLI_SIZE, O_MAX_ARGS, 1, (uint64_t)1 << 32, "N",
     "cap on one call's arguments (default 16m)", NULL},
    {"max-event-bytes", 0, TS_CLI_SIZE, O_MAX_EVENT, 1, (uint64_t)1 << 32, "N",
     "cap on one SSE event's data (default: --max-args-bytes\n"
     "plus 1m, so a call sent whole in one event fits)", NULL},
    {"turn", 0, TS_CLI_NUMBER, O_TURN, 1, UINT32_MAX, "N",
     "the stream is turn N of its thread (default 1): events carry\n"
     "it, and call ids made up for calls without one are ts_N_INDEX", NULL},
    {"linger", 0, TS_CLI_MS, O_LINGER, 0, 3600000, "MS",
     "with --pub: keep serving replay this long after the input\n"
     "ends, so slow subscribers can catch up (default 1000)", NULL},
};
static const ts_cli_group tap_group = {"tap", NULL, tap_opts, sizeof tap_opts / sizeof tap_opts[0],
                                       NULL};
static const ts_cli_group *const tap_groups[] = {&tap_group, &ts_cli_group_thread, &ts_cli_group_events,
                                                 &ts_cli_group_tools, &ts_cli_group_bus,
                                                 &ts_cli_group_browsers, NULL};

const ts_cli_command ts_cli_cmd_tap = {
    "tap",
    "[options] [FILE]",
    "read a provider stream, print thread events as they become known",
    "Reads a model's streamed reply from FILE (or standard input, also as '-') and\n"
    "writes one JSON event per line to standard output as soon as each is known;\n"
    "tool_call_started fires the moment a tool's progress argument has streamed.",
    tap_groups,
    "Exit status: 0 for a clean stream; 1 when the stream ended in error (a\n"
    "stream_error event; one line on standard error says why), when FILE or a --tools\n"
    "file cannot be read, when standard output is closed, or when an event cannot be\n"
    "written (out of memory; the line cap is --max-args-bytes plus 256k, so every\n"
    "event of an accepted call fits); 2 for usage errors\n"
    "(including a --tools file that does not parse).",
    ts_cli_tap,
};

typedef struct {
  ts_tap_config cfg;
  const char *path;
  uint64_t linger_ms;
} tap_args;

static int tap_set(void *user, const ts_cli_opt *o, const char *val, uint64_t n) {
  tap_args *a = user;
  if (!o) {
    if (a->path) {
      fprintf(stderr, "toolstream tap: more than one input file\n");
      return 2;
    }
    a->path = val;
    return 0;
  }
  switch (o->id) {
    case O_FORMAT: {
      int f = ts_format_parse(val);
      if (f < 0) {
        fprintf(stderr, "toolstream tap: unknown format '%s' (try --help)\n", val);
        return 2;
      }
      a->cfg.format = (ts_format)f;
      break;
    }
    case O_TOOL: a->cfg.raw_tool = val; break;
    case O_DELTAS: a->cfg.deltas = 1; break;
    case O_TEXT: a->cfg.text = 1; break;
    case O_HEARTBEAT: a->cfg.heartbeat_bytes = n; break;
    case O_PROGRESS_MAX: a->cfg.progress_max = (size_t)n; break;
    case O_MAX_ARGS: a->cfg.max_args_bytes = (size_t)n; break;
    case O_MAX_EVENT: a->cfg.max_event_bytes = (size_t)n; break;
    case O_LINGER: a->linger_ms = n; break;
    case O_TURN: a->cfg.turn = (uint32_t)n; break;
  }
  return 0;
}

typedef struct {
  ts_tool_defs defs;
  ts_sink *sink;
  char last_error[256];
} tap_out;

static const char *lookup_progress(void *user, const char *tool, size_t len, size_t *arg_len) {
  tap_out *o = user;
  const ts_tool_def *d = ts_tool_defs_find(&o->defs, tool, len);
  if (!d || !d->progress_arg) return NULL;
  *arg_len = strlen(d->progress_arg);
  return d->progress_arg;
}

/* Every event to the sink (events/sink.h: numbered, printed and flushed, published); tap
 * is its last reader, so a READY's arguments are not copied. Any failure stops reading: a
 * failed write means the reader went away, an event that cannot be written would leave a
 * hole in what follows (the sink said why, on standard error). */
static int on_event(void *user, const ts_tap_event *e) {
  tap_out *o = user;
  if (e->type == TS_TAP_STREAM_ERROR)
    snprintf(o->last_error, sizeof o->last_error, "%.*s", (int)e->error.len, e->error.p);
  return ts_sink_emit_tap_last(o->sink, e) != TS_E_OK;
}

int ts_cli_tap(int argc, char **argv) {
  tap_args a;
  memset(&a, 0, sizeof a);
  a.linger_ms = 1000;
  ts_cli_common com;
  memset(&com, 0, sizeof com);
  tap_out o;
  memset(&o, 0, sizeof o);
  ts_pub *pub = NULL;
  char *buf = NULL;
  ts_tap *tap = NULL;
  int fd = -1;
  int rc = ts_cli_parse(&ts_cli_cmd_tap, argc, argv, &com, tap_set, &a);
  if (rc >= 0) goto out;
  /* A reader that goes away is a failed write (EPIPE), which ends tap with status 1 as
   * documented, rather than a silent death by SIGPIPE. */
  signal(SIGPIPE, SIG_IGN);
  rc = 2;
  ts_tap_config cfg = a.cfg;
  const char *path = a.path;
  if (cfg.format == TS_FORMAT_RAW && !cfg.raw_tool) {
    fprintf(stderr, "toolstream tap: --format raw needs --tool NAME\n");
    goto out;
  }
  if ((rc = ts_cli_bus_check(&com)) || (rc = ts_cli_tools_defs(&com, &o.defs)) ||
      (rc = ts_cli_thread_or_new(&com)))
    goto out;
  if ((rc = ts_cli_bus_open(&com, NULL, &pub))) goto out;
  /* The line cap follows --max-args-bytes: a READY line carries the whole arguments. */
  ts_sink_config sc = {.thread = com.thread, .who = "toolstream tap", .out = stdout, .pub = pub,
                       .no_time = com.no_time,
                       .max_event_bytes = ts_sink_cap_for_args(cfg.max_args_bytes)};
  if ((rc = ts_sink_new(&sc, &o.sink))) {
    fprintf(stderr, "toolstream tap: %s\n", ts_err_message(rc));
    rc = 1;
    goto out;
  }

  fd = (!path || !strcmp(path, "-")) ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    fprintf(stderr, "toolstream tap: cannot open %s: %s\n", path, strerror(errno));
    rc = 1;
    goto out;
  }
  cfg.progress_arg = lookup_progress;
  cfg.progress_user = &o;
  int made = ts_tap_new(&tap, &cfg, on_event, &o);
  enum { CHUNK = 64 * 1024 };
  buf = malloc(CHUNK);
  if (made != TS_E_OK || !buf) {
    fprintf(stderr, "toolstream tap: %s\n", ts_err_message(made ? made : TS_E_NOMEM));
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
  if (ts_sink_output_failed(o.sink) || ts_sink_error(o.sink)) {
    rc = 1; /* standard output closed, or an event could not be written (the sink said so) */
  } else if (rc == 0 && ts_tap_failed(tap)) {
    fprintf(stderr, "toolstream tap: stream ended in error: %s\n", o.last_error);
    rc = 1;
  }

out:
  if (pub) {
    if (rc != 2) ts_clock_sleep_ms((double)a.linger_ms); /* queued messages go, late subscribers catch up */
    ts_pub_close(pub);
  }
  ts_sink_free(o.sink);
  if (fd > STDIN_FILENO) close(fd);
  free(buf);
  ts_tap_free(tap);
  ts_tool_defs_free(&o.defs);
  return rc;
}
