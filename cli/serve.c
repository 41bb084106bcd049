/*
 * serve.c: `toolstream serve`: the HTTP event endpoint (runtime/net/serve.h) over an
 * existing store: the live page at /, threads' events as SSE (resumable), NDJSON, AG-UI
 * or AI SDK UI message streams.
 */
#include <errno.h>
#include <pthread.h>
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

enum { O_LISTEN = 1, O_DATA_DIR };

static const ts_cli_opt serve_opts[] = {
    {"listen", 0, TS_CLI_STRING, O_LISTEN, 0, 0, "HOST:PORT",
     "address to listen on (default 127.0.0.1:8788; port 0: any)", NULL},
    {"data-dir", 0, TS_CLI_STRING, O_DATA_DIR, 0, 0, "DIR",
     "the store (default $TOOLSTREAM_DATA_DIR, $XDG_DATA_HOME/toolstream)", NULL},
};
static const ts_cli_group serve_group = {"serve", NULL, serve_opts,
                                         sizeof serve_opts / sizeof serve_opts[0], NULL};
static const ts_cli_group *const serve_groups[] = {&serve_group, &ts_cli_group_browsers,
                                                   &ts_cli_group_endpoint, NULL};

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
  const char *listen, *data_dir;
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
  }
  return 0;
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

/* ---- one endpoint, in the foreground (serve) or on a thread of its own (run --serve) -- */

struct ts_cli_endpoint {
  struct event_base *base;
  ts_serve *srv;
  ts_store *store; /* its own connection: the store is not shared between threads */
  struct event *tick;
  char *token;
  volatile sig_atomic_t *stop; /* checked every 100 ms; NULL: only ts_cli_endpoint_stop */
  volatile int stopping;
  int ended; /* the streams were ended; the loop is flushing them */
  pthread_t thread;
  int threaded;
};

/* Stopping: every open stream is ended cleanly (the rest of its thread, then the end of
 * the response), and the loop runs on briefly so that those bytes reach the clients. */
static void check_stop(evutil_socket_t fd, short what, void *arg) {
  (void)fd, (void)what;
  ts_cli_endpoint *e = arg;
  if (!(e->stopping || (e->stop && *e->stop)) || e->ended) return;
  e->ended = 1;
  ts_serve_end_streams(e->srv);
  struct timeval flush = {0, 500000};
  event_base_loopexit(e->base, &flush);
}

void ts_cli_endpoint_free(ts_cli_endpoint *e) {
  if (!e) return;
  if (e->tick) event_free(e->tick);
  ts_serve_free(e->srv);
  if (e->base) event_base_free(e->base);
  ts_store_close(e->store);
  free(e->token);
  free(e);
}

int ts_cli_serve_on(const ts_cli_common *c, const char *listen, struct event_base *base,
                    ts_store *store, ts_serve **srv, char **token) {
  *srv = NULL;
  *token = NULL;
  char host[256];
  int port;
  if (split_listen(listen, host, sizeof host, &port)) {
    fprintf(stderr, "%s: the listen address takes HOST:PORT, not '%s'\n", c->who, listen);
    return 2;
  }
  if (c->token_file) {
    size_t len;
    if (ts_file_read(c->token_file, 4096, token, &len)) {
      fprintf(stderr, "%s: cannot read --token-file %s: %s\n", c->who, c->token_file, strerror(errno));
      return 1;
    }
    (*token)[strcspn(*token, "\r\n")] = '\0';
    if (!(*token)[0]) {
      fprintf(stderr, "%s: --token-file %s holds no token\n", c->who, c->token_file);
      free(*token);
      *token = NULL;
      return 1;
    }
  }
  ts_serve_config cfg = {.host = host, .port = port, .store = store, .origins = c->origins,
                         .norigins = c->n_origins, .token = *token};
  char err[256];
  if (ts_serve_new(base, &cfg, srv, err, sizeof err)) {
    fprintf(stderr, "%s: %s\n", c->who, err[0] ? err : "cannot start the event endpoint");
    free(*token);
    *token = NULL;
    return 1;
  }
  int v6 = strchr(host, ':') != NULL;
  fprintf(stderr, "%s: http://%s%s%s:%d/%s%s%s\n", c->who, v6 ? "[" : "", host, v6 ? "]" : "",
          ts_serve_port(*srv), store ? " (store " : " (live events only)", store ? ts_store_path(store) : "",
          store ? ")" : "");
  fflush(stderr);
  return 0;
}

int ts_cli_endpoint_open(const ts_cli_common *c, const char *listen, const char *data_dir,
                         volatile sig_atomic_t *stop, ts_cli_endpoint **out) {
  *out = NULL;
  ts_cli_endpoint *e = calloc(1, sizeof *e);
  if (!e) return 1;
  e->stop = stop;
  char why[512];
  if (ts_store_open(data_dir, &e->store, why, sizeof why)) {
    fprintf(stderr, "%s: %s\n", c->who, why);
    ts_cli_endpoint_free(e);
    return 1;
  }
  e->base = event_base_new();
  if (!e->base) {
    ts_cli_endpoint_free(e);
    return 1;
  }
  int rc = ts_cli_serve_on(c, listen, e->base, e->store, &e->srv, &e->token);
  if (rc) {
    ts_cli_endpoint_free(e);
    return rc;
  }
  e->tick = event_new(e->base, -1, EV_PERSIST, check_stop, e);
  struct timeval tv = {0, 100000};
  if (!e->tick || event_add(e->tick, &tv)) {
    ts_cli_endpoint_free(e);
    return 1;
  }
  *out = e;
  return 0;
}

void ts_cli_endpoint_run(ts_cli_endpoint *e) { event_base_dispatch(e->base); }

static void *endpoint_main(void *arg) {
  ts_cli_endpoint_run(arg);
  return NULL;
}

int ts_cli_endpoint_start(ts_cli_endpoint *e) {
  if (pthread_create(&e->thread, NULL, endpoint_main, e)) return 1;
  e->threaded = 1;
  return 0;
}

void ts_cli_endpoint_stop(ts_cli_endpoint *e) {
  if (!e) return;
  e->stopping = 1; /* the loop sees it within 100 ms */
  if (e->threaded) pthread_join(e->thread, NULL);
  ts_cli_endpoint_free(e);
}

/* ---- the command ---------------------------------------------------------------------- */

static volatile sig_atomic_t stop;
static void on_signal(int sig) {
  (void)sig;
  stop = 1;
}

int ts_cli_serve(int argc, char **argv) {
  serve_args a;
  memset(&a, 0, sizeof a);
  a.listen = "127.0.0.1:8788";
  ts_cli_common com;
  memset(&com, 0, sizeof com);
  int pr = ts_cli_parse(&ts_cli_cmd_serve, argc, argv, &com, serve_set, &a);
  if (pr >= 0) return pr;
  ts_cli_endpoint *e;
  int rc = ts_cli_endpoint_open(&com, a.listen, a.data_dir, &stop, &e);
  if (rc) return rc;
  signal(SIGPIPE, SIG_IGN);
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  ts_cli_endpoint_run(e);
  ts_cli_endpoint_free(e);
  return 0;
}
