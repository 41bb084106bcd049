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

#include "events/bus_pub.h"
#include "events/bus_sub.h"
#include "cli/cli.h"
#include "cli/live.h"

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

  ts_live w;
  if (!json && ts_live_init(&w)) {
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
      if (!json) ts_live_tick(&w);
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
      ts_live_event(&w, it.json, it.json_len);
    }
    if (count && got >= count) break;
  }
  if (!json) ts_live_fini(&w);
  ts_sub_close(s);
  return rc;
}
