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
#include "cli/cli.h"
#include "net/serve.h"
#include "store/store.h"

static const char usage[] =
    "usage: toolstream serve [--listen HOST:PORT] [--data-dir DIR] [--allow-origin ORIGIN]...\n"
    "                        [--token-file FILE]\n"
    "\n"
    "Serves the threads of a store over HTTP, for UIs: the live page at /, and\n"
    "GET /threads/ID/events as text/event-stream (id: = seq; resume with Last-Event-ID\n"
    "or ?after=SEQ), as JSON lines (Accept: application/x-ndjson or ?format=ndjson), or\n"
    "as AG-UI events (?format=agui) or an AI SDK UI message stream (?format=ai-sdk);\n"
    "?follow=0 ends after what is stored. See docs/ui.md.\n"
    "\n"
    "  --listen HOST:PORT   address to listen on (default 127.0.0.1:8788; port 0: any)\n"
    "  --data-dir DIR       the store (default $TOOLSTREAM_DATA_DIR, $XDG_DATA_HOME/toolstream)\n"
    "  --allow-origin O     a browser origin allowed besides this server and loopback\n"
    "                       (repeatable; e.g. https://ui.example.com)\n"
    "  --token-file FILE    require 'Authorization: Bearer TOKEN' (or ?token=) with the\n"
    "                       token in FILE (its first line)\n";

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
  const char *listen = "127.0.0.1:8788", *data_dir = NULL, *token_file = NULL;
  const char *origins[32];
  size_t norigins = 0;
  for (int i = 1; i < argc; i++) {
    const char *v;
    int r;
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      fputs(usage, stdout);
      return 0;
    }
    if ((r = ts_cli_opt(argc, argv, &i, "--listen", &v))) {
      if (r < 0) return 2;
      listen = v;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--data-dir", &v))) {
      if (r < 0) return 2;
      data_dir = v;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--token-file", &v))) {
      if (r < 0) return 2;
      token_file = v;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--allow-origin", &v))) {
      if (r < 0) return 2;
      if (norigins == sizeof origins / sizeof origins[0]) {
        fprintf(stderr, "toolstream serve: at most 32 --allow-origin\n");
        return 2;
      }
      origins[norigins++] = v;
    } else {
      fprintf(stderr, "toolstream serve: unknown option '%s'\n%s", argv[i], usage);
      return 2;
    }
  }
  char host[256];
  int port;
  if (split_listen(listen, host, sizeof host, &port)) {
    fprintf(stderr, "toolstream serve: --listen takes HOST:PORT, not '%s'\n", listen);
    return 2;
  }
  char *token = NULL;
  if (token_file) {
    size_t len;
    token = ts_cli_read_file(token_file, 4096, &len);
    if (!token) {
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
