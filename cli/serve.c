/*
 * serve.c: `toolstream serve`: the HTTP event endpoint (runtime/net/serve.h) over an
 * existing store: the live page at /, threads' events as SSE (resumable), NDJSON, AG-UI
 * or AI SDK UI message streams.
 */
#include <errno.h>
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/file.h"
#include "cli/cli.h"
#include "net/serve.h"
#include "store/store.h"

enum { O_LISTEN = 1, O_DATA_DIR, O_ORIGIN, O_TOKEN_FILE };

#define SERVE_MAX_ORIGINS 32

static const ts_cli_opt serve_opts[] = {
    {"listen", 0, TS_CLI_STRING, O_LISTEN, 0, 0, "HOST:PORT",
     "address to listen on (default 127.0.0.1:8788; port 0: any)", NULL},
    {"data-dir", 0, TS_CLI_STRING, O_DATA_DIR, 0, 0, "DIR",
     "the store (default $TOOLSTREAM_DATA_DIR, $XDG_DATA_HOME/toolstream)", NULL},
    {"allow-origin", 0, TS_CLI_STRING, O_ORIGIN, 0, 0, "ORIGIN",
     "a browser origin allowed besides this server and loopback\n"
     "(repeatable, up to 32; e.g. https://ui.example.com)", NULL},
    {"token-file", 0, TS_CLI_STRING, O_TOKEN_FILE, 0, 0, "FILE",
     "require 'Authorization: Bearer TOKEN' (or ?token=) with the\n"
     "token in FILE (its first line)", NULL},
};
static const ts_cli_group serve_group = {"serve", NULL, serve_opts,
                                         sizeof serve_opts / sizeof serve_opts[0], NULL};
static const ts_cli_group *const serve_groups[] = {&serve_group, NULL};

const ts_cli_command ts_cli_cmd_serve = {
    "serve",
    "[options]",
    "the HTTP event endpoint and live page over a store (SSE, AG-UI, AI SDK)",
    "Serves the threads of a store over HTTP, for UIs: the live page at /, and\n"
    "GET /threads/ID/events as text/event-stream (id: = seq; resume with Last-Event-ID\n"
    "or ?after=SEQ), as JSON lines (Accept: application/x-ndjson or ?format=ndjson), or\n"
    "as AG-UI events (?format=agui) or an AI SDK UI message stream (?format=ai-sdk);\n"
    "?follow=0 ends after what is stored. See docs/ui.md.",
    serve_groups,
    "Exit status: 0 after SIGINT or SIGTERM; 1 when it cannot start (the store, the\n"
    "address, an unreadable --token-file); 2 for usage errors.",
    ts_cli_serve,
};

typedef struct {
  const char *listen, *data_dir, *token_file;
  const char *origins[SERVE_MAX_ORIGINS];
  size_t norigins;
} serve_args;

static int serve_set(void *user, const ts_cli_opt *o, const char *val, uint64_t n) {
  serve_args *a = user;
  (void)n;
  if (!o) {
    fprintf(stderr, "toolstream serve: unexpected argument '%s' (try --help)\n", val);
    return 2;
  }
  switch (o->id) {
    case O_LISTEN: a->listen = val; break;
    case O_DATA_DIR: a->data_dir = val; break;
    case O_TOKEN_FILE: a->token_file = val; break;
    case O_ORIGIN:
      if (a->norigins == SERVE_MAX_ORIGINS) {
        fprintf(stderr, "toolstream serve: at most %d --allow-origin\n", SERVE_MAX_ORIGINS);
        return 2;
      }
      a->origins[a->norigins++] = val;
      break;
  }
  return 0;
}

static volatile sig_atomic_t stop;
static void on_signal(int sig) {
  (void)sig;
  stop = 1;
}

static void check_stop(evutil_socket_t fd, short what, void *arg) {
  (void)fd, (void)what;
  if (stop) event_base_loopbreak(arg);
}

/* HOST:PORT, [V6]:PORT or PORT. */
static int split_listen(const char *v, char *host, size_t cap, int *port) {
  const char *colon = strrchr(v, ':');
  const char *ps = colon ? colon + 1 : v;
  char *end;
  errno = 0;
  long p = strtol(ps, &end, 10);
  if (!*ps || *end || errno || p < 0 || p > 65535) return -1;
  *port = (int)p;
  if (!colon) {
    snprintf(host, cap, "127.0.0.1");
    return 0;
  }
  size_t n = (size_t)(colon - v);
  if (n >= 2 && v[0] == '[' && v[n - 1] == ']') v++, n -= 2;
  if (n == 0 || n >= cap) return -1;
  memcpy(host, v, n);
  host[n] = '\0';
  return 0;
}

int ts_cli_serve(int argc, char **argv) {
  serve_args a;
  memset(&a, 0, sizeof a);
  a.listen = "127.0.0.1:8788";
  ts_cli_common com;
  memset(&com, 0, sizeof com);
  int pr = ts_cli_parse(&ts_cli_cmd_serve, argc, argv, &com, serve_set, &a);
  if (pr >= 0) return pr;
  const char *listen = a.listen, *data_dir = a.data_dir, *token_file = a.token_file;
  const char **origins = a.origins;
  size_t norigins = a.norigins;
  char host[256];
  int port;
  if (split_listen(listen, host, sizeof host, &port)) {
    fprintf(stderr, "toolstream serve: --listen takes HOST:PORT, not '%s'\n", listen);
    return 2;
  }
  char *token = NULL;
  if (token_file) {
    size_t len;
    if (ts_file_read(token_file, 4096, &token, &len)) {
      fprintf(stderr, "toolstream serve: cannot read --token-file %s: %s\n", token_file, strerror(errno));
      return 1;
    }
    token[strcspn(token, "\r\n")] = '\0';
    if (!token[0]) {
      fprintf(stderr, "toolstream serve: --token-file %s holds no token\n", token_file);
      free(token);
      return 1;
    }
  }
  char why[512];
  ts_store *store = NULL;
  int rc = 1;
  struct event_base *base = NULL;
  ts_serve *srv = NULL;
  struct event *tick = NULL;
  if (ts_store_open(data_dir, &store, why, sizeof why)) {
    fprintf(stderr, "toolstream serve: %s\n", why);
    goto out;
  }
  base = event_base_new();
  if (!base) goto out;
  ts_serve_config cfg = {.host = host, .port = port, .store = store, .origins = origins,
                         .norigins = norigins, .token = token};
  char err[256];
  if (ts_serve_new(base, &cfg, &srv, err, sizeof err)) {
    fprintf(stderr, "toolstream serve: %s\n", err[0] ? err : "cannot start");
    goto out;
  }
  signal(SIGPIPE, SIG_IGN);
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  tick = event_new(base, -1, EV_PERSIST, check_stop, base);
  struct timeval tv = {0, 100000};
  event_add(tick, &tv);
  int v6 = strchr(host, ':') != NULL;
  fprintf(stderr, "toolstream serve: http://%s%s%s:%d/ (store %s)\n", v6 ? "[" : "", host,
          v6 ? "]" : "", ts_serve_port(srv), ts_store_path(store));
  fflush(stderr);
  event_base_dispatch(base);
  rc = 0;
out:
  if (tick) event_free(tick);
  ts_serve_free(srv);
  if (base) event_base_free(base);
  ts_store_close(store);
  free(token);
  return rc;
}
