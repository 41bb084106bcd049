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
#include <unistd.h>

#include "base/clock.h"
#include "events/bus_pub.h"
#include "events/bus_sub.h"
#include "cli/cli.h"
#include "cli/live.h"

enum { O_REPLAY = 1, O_JSON, O_LIVE, O_WAIT, O_CONNECT, O_IDLE, O_COUNT, O_TLS_CA, O_TLS_NAME };

static const ts_cli_opt sub_opts[] = {
    {"replay", 0, TS_CLI_STRING, O_REPLAY, 0, 0, "URL",
     "the publisher's replay service: fetch missed events, so\n"
     "every event arrives exactly once and in order", NULL},
    {"json", 0, TS_CLI_FLAG, O_JSON, 0, 0, NULL, "one JSON event per line even on a terminal", NULL},
    {"live", 0, TS_CLI_FLAG, O_LIVE, 0, 0, NULL,
     "start with the next live event (default: everything the\n"
     "replay history still holds, then live)", NULL},
    {"wait", 0, TS_CLI_FLAG, O_WAIT, 0, 0, NULL,
     "keep trying to connect (default: give up after\n--connect-timeout)", NULL},
    {"connect-timeout", 0, TS_CLI_MS, O_CONNECT, 0, 1000000000, "MS",
     "how long to wait for the publisher (default 3000)", NULL},
    {"idle-exit", 0, TS_CLI_MS, O_IDLE, 0, 1000000000, "MS",
     "exit after MS without events (counted from connecting\n"
     "until the first event arrives; 0: never)", NULL},
    {"count", 0, TS_CLI_NUMBER, O_COUNT, 0, 1000000000, "N", "exit after N events", NULL},
    {"tls-ca", 0, TS_CLI_STRING, O_TLS_CA, 0, 0, "FILE",
     "CA certificate for wss:// and tls+tcp://", NULL},
    {"tls-server-name", 0, TS_CLI_STRING, O_TLS_NAME, 0, 0, "NAME",
     "name to verify in the publisher's certificate", NULL},
};
static const ts_cli_group sub_group = {"sub", NULL, sub_opts, sizeof sub_opts / sizeof sub_opts[0],
                                       NULL};
static const ts_cli_group *const sub_groups[] = {&sub_group, &ts_cli_group_thread, NULL};

const ts_cli_command ts_cli_cmd_sub = {
    "sub",
    "URL [options]",
    "subscribe to the events tap --pub publishes (live view or JSON lines)",
    "Subscribes to the events `toolstream tap --pub URL` publishes. On a terminal: a live\n"
    "view, one line per tool call with its progress label. Otherwise, or with --json: one\n"
    "JSON event per line, as tap prints them. With --thread ID: only that thread.",
    sub_groups,
    "Colours follow NO_COLOR. Ctrl-C exits cleanly (status 0). Exit status 1: cannot\n"
    "connect, or the bus failed; 2: usage errors.",
    ts_cli_sub,
};

typedef struct {
  const char *url, *replay;
  ts_sub_opts so;
  int json, wait_forever;
  uint64_t connect_ms, idle_ms, count;
} sub_args;

static int sub_set(void *user, const ts_cli_opt *o, const char *val, uint64_t n) {
  sub_args *a = user;
  if (!o) {
    if (a->url) {
      fprintf(stderr, "toolstream sub: more than one URL\n");
      return 2;
    }
    a->url = val;
    return 0;
  }
  switch (o->id) {
    case O_REPLAY: a->replay = val; break;
    case O_JSON: a->json = 1; break;
    case O_LIVE: a->so.from = TS_SUB_LIVE; break;
    case O_WAIT: a->wait_forever = 1; break;
    case O_CONNECT: a->connect_ms = n; break;
    case O_IDLE: a->idle_ms = n; break;
    case O_COUNT: a->count = n; break;
    case O_TLS_CA: a->so.tls_ca_file = val; break;
    case O_TLS_NAME: a->so.tls_server_name = val; break;
  }
  return 0;
}

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig) {
  (void)sig;
  stop_flag = 1;
}

/* ---- closing ------------------------------------------------------------------------ */

/* Everything printed is flushed before the close, which returns within
 * TS_SUB_CLOSE_WAIT_MS even when libnng's does not (events/bus_sub.h). */
static int close_sub(ts_sub *s, int rc) {
  fflush(stdout);
  fflush(stderr);
  ts_sub_close(s);
  return rc;
}

/* ---- the command ------------------------------------------------------------------- */

int ts_cli_sub(int argc, char **argv) {
  sub_args a;
  memset(&a, 0, sizeof a);
  a.connect_ms = 3000;
  ts_cli_common com;
  memset(&com, 0, sizeof com);
  int r = ts_cli_parse(&ts_cli_cmd_sub, argc, argv, &com, sub_set, &a);
  if (r >= 0) return r;
  const char *url = a.url, *replay = a.replay, *thread = com.has_thread ? com.thread : NULL;
  ts_sub_opts so = a.so;
  int json = a.json, wait_forever = a.wait_forever;
  uint64_t connect_ms = a.connect_ms, idle_ms = a.idle_ms, count = a.count;
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
            r == TS_E_IO || (r == TS_E_INVAL && *ts_bus_last_error()) ? ts_bus_last_error()
                                                                     : ts_err_message(r));
    return r == TS_E_INVAL ? 2 : 1;
  }
  /* nng dials in the background; wait until something answers, or say it did not. */
  double t0 = ts_clock_ms();
  while (!ts_sub_connected(s) && !stop_flag) {
    if (!wait_forever && ts_clock_ms() - t0 >= (double)connect_ms) {
      fprintf(stderr,
              "toolstream sub: cannot connect to %s: no publisher answered within %llu ms "
              "(--wait keeps trying)\n",
              url, (unsigned long long)connect_ms);
      return close_sub(s, 1);
    }
    ts_clock_sleep_ms(20);
  }

  ts_live w;
  if (!json && ts_live_init(&w)) {
    fprintf(stderr, "toolstream sub: out of memory\n");
    return close_sub(s, 1);
  }
  int rc = 0;
  uint64_t got = 0;
  double last_event = ts_clock_ms();
  while (!stop_flag) {
    ts_sub_item it;
    r = ts_sub_next(s, &it, 100);
    if (r < 0) {
      fprintf(stderr, "toolstream sub: %s\n", r == TS_E_IO ? ts_bus_last_error() : ts_err_message(r));
      rc = 1;
      break;
    }
    if (r == 0) {
      if (!json) ts_live_tick(&w);
      /* idle: no event for idle_ms, counted from connecting until the first one */
      if (idle_ms && ts_clock_ms() - last_event >= (double)idle_ms) break;
      continue;
    }
    last_event = ts_clock_ms();
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
      ts_live_event(&w, it.json, it.json_len);
    }
    if (count && got >= count) break;
  }
  if (!json) ts_live_fini(&w);
  return close_sub(s, rc);
}
