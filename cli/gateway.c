/*
 * gateway.c: `toolstream gateway`: the reverse proxy of runtime/gateway.h as a command.
 * Prints the address it listens on ("http://127.0.0.1:PORT") alone on the first line of
 * standard output, then serves until SIGINT or SIGTERM.
 */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "events/bus_pub.h"
#include "cli/cli.h"
#include "net/gateway.h"
#include "net/serve.h"
#include "stream/tool_defs.h"

enum {
  O_LISTEN = 1, O_UPSTREAM, O_DELTAS, O_TEXT, O_CONNECT_TIMEOUT, O_HEADERS_TIMEOUT,
  O_IDLE_TIMEOUT, O_MAX_HEADER, O_MAX_BODY,
  O_HEAD_TIMEOUT, O_MAX_CONNECTIONS, O_MAX_PER_CLIENT, /* limits against hostile clients */
  O_SERVE, O_QUIET, O_NO_TAP, O_WORKERS, O_SPREAD_AT
};

static const ts_cli_opt gw_opts[] = {
    {"listen", 0, TS_CLI_STRING, O_LISTEN, 0, 0, "HOST:PORT",
     "where to listen (default 127.0.0.1:8787; port 0: any free port);\n"
     "the address is printed on the first line of standard output", NULL},
    {"upstream", 0, TS_CLI_STRING, O_UPSTREAM, 0, 0, "[PREFIX=]URL",
     "the provider (http:// or https://; its path is put before the\n"
     "client's); with PREFIX, only for paths starting with PREFIX\n"
     "(longest prefix wins); repeatable, up to 16", NULL},
    {"deltas", 0, TS_CLI_FLAG, O_DELTAS, 0, 0, NULL, "also publish tool_call_delta", NULL},
    {"quiet", 0, TS_CLI_FLAG, O_QUIET, 0, 0, NULL,
     "no access-log line per request on standard error", NULL},
    {"text", 0, TS_CLI_FLAG, O_TEXT, 0, 0, NULL, "also publish text_delta", NULL},
    {"workers", 0, TS_CLI_NUMBER, O_WORKERS, 1, TS_GW_MAX_WORKERS, "N",
     "event loops, one thread each, sharing the port (default: one per\n"
     "online CPU, at most " TS_GW_STR(TS_GW_MAX_WORKERS) "; 1 with --serve, which needs 1)", NULL},
    {"spread-at", 0, TS_CLI_NUMBER, O_SPREAD_AT, 0, 1000000, "N",
     "with --workers over 1: the first loop takes every client connection\n"
     "while it holds fewer than N; then each goes to the loop holding\n"
     "fewest, a tie to the one the kernel chose (default "
     TS_GW_STR(TS_GW_SPREAD_AT) "; 0: no filling)", NULL},
    {"no-tap", 0, TS_CLI_FLAG, O_NO_TAP, 0, 0, NULL,
     "forward only: no tap on any reply, no event published (also\n"
     "with --pub or --serve)", NULL},
    {"connect-timeout", 0, TS_CLI_MS, O_CONNECT_TIMEOUT, 1, 86400000, "MS",
     "TCP connect to the upstream (default 10000)", NULL},
    {"headers-timeout", 0, TS_CLI_MS, O_HEADERS_TIMEOUT, 1, 86400000, "MS",
     "from the request to the upstream's headers (default 120000)", NULL},
    {"idle-timeout", 0, TS_CLI_MS, O_IDLE_TIMEOUT, 1, 86400000, "MS",
     "no byte from the upstream for this long (default 300000)", NULL},
    {"max-header-bytes", 0, TS_CLI_SIZE, O_MAX_HEADER, 1024, (uint64_t)1 << 30, "N",
     "request headers past this get 431 (default 64k)", NULL},
    {"max-body-bytes", 0, TS_CLI_SIZE, O_MAX_BODY, 1024, (uint64_t)1 << 30, "N",
     "request bodies past this get 413 (default 32m)", NULL},
    /* limits against hostile clients (issue 18; docs/gateway.md) */
    {"head-timeout", 0, TS_CLI_MS, O_HEAD_TIMEOUT, 1, 86400000, "MS",
     "a request's whole head must arrive within this, else 408 and\n"
     "close (default 10000)", NULL},
    {"max-connections", 0, TS_CLI_NUMBER, O_MAX_CONNECTIONS, 1, 1000000, "N",
     "concurrent client connections; the extra ones get 503 (default:\n"
     "half of the fd limit left after 64, at most 65536)", NULL},
    {"max-per-client", 0, TS_CLI_NUMBER, O_MAX_PER_CLIENT, 1, 1000000, "N",
     "concurrent connections from one client address; the extra ones\n"
     "get 503 (default: half of --max-connections)", NULL},
};
static const ts_cli_opt gw_serve_opts[] = {
    {"serve", 0, TS_CLI_STRING, O_SERVE, 0, 0, "HOST:PORT",
     "also serve the HTTP event endpoint and live page (toolstream serve's,\n"
     "live events only: the gateway keeps no store)", NULL},
};
static const ts_cli_group gw_serve_group = {"gateway", NULL, gw_serve_opts, 1, NULL};
static const ts_cli_group gw_group = {"gateway", NULL, gw_opts, sizeof gw_opts / sizeof gw_opts[0],
                                      NULL};
static const ts_cli_group *const gw_groups[] = {&gw_group, &ts_cli_group_ca, &ts_cli_group_tools,
                                                &ts_cli_group_bus,
                                                &ts_cli_group_browsers, &gw_serve_group,
                                                &ts_cli_group_endpoint, NULL};

const ts_cli_command ts_cli_cmd_gateway = {
    "gateway",
    "--upstream [PREFIX=]URL... [--listen HOST:PORT] [--pub URL] [options]",
    "reverse proxy to a model provider, publishing events of each streamed reply",
    "A reverse proxy between model clients and providers: every request and response\n"
    "passes through unchanged (streamed replies chunk by chunk, as they arrive), and a\n"
    "tap on a copy of each streamed reply publishes thread events on the event bus\n"
    "(tool_call_started as soon as a tool's progress argument has streamed). --tools\n"
    "and --progress-arg win over \"x-progress-argument\" in the request's own tools.",
    gw_groups,
    "The thread id is the X-Toolstream-Thread request header (an invalid one, or one\n"
    "over 256 bytes, is refused with 400), or a fresh one; it is returned in the\n"
    "X-Toolstream-Thread response header. GET /healthz and /metrics\n"
    "(Prometheus) are answered by the gateway itself. Each request gets one line on\n"
    "standard error: client \"METHOD /path\" status thread=ID milliseconds (--quiet: none).\n"
    "Exit status: 0 after SIGINT or SIGTERM; 1 when it cannot start (a --tools file\n"
    "that cannot be read, a port in use); 2 for usage errors.",
    ts_cli_gateway,
};

typedef struct {
  ts_gw_config *cfg;
  ts_gw_upstream *ups;
  char (*prefixes)[256];
  size_t nups;
  const char *listen;
  const char *serve;
} gw_args;

static int gw_set(void *user, const ts_cli_opt *o, const char *val, uint64_t n) {
  gw_args *a = user;
  if (!o) {
    fprintf(stderr, "toolstream gateway: unexpected argument '%s' (try --help)\n", val);
    return 2;
  }
  switch (o->id) {
    case O_LISTEN: a->listen = val; break;
    case O_UPSTREAM: {
      if (a->nups == TS_GW_MAX_UPSTREAMS) {
        fprintf(stderr, "toolstream gateway: at most %d upstreams\n", TS_GW_MAX_UPSTREAMS);
        return 2;
      }
      const char *eq = val[0] == '/' ? strchr(val, '=') : NULL;
      if (eq && (size_t)(eq - val) < sizeof a->prefixes[0]) {
        snprintf(a->prefixes[a->nups], sizeof a->prefixes[0], "%.*s", (int)(eq - val), val);
        a->ups[a->nups].prefix = a->prefixes[a->nups];
        a->ups[a->nups].url = eq + 1;
      } else {
        a->ups[a->nups].prefix = "";
        a->ups[a->nups].url = val;
      }
      a->nups++;
      break;
    }
    case O_DELTAS: a->cfg->deltas = 1; break;
    case O_TEXT: a->cfg->text = 1; break;
    case O_CONNECT_TIMEOUT: a->cfg->connect_timeout_ms = (int)n; break;
    case O_HEADERS_TIMEOUT: a->cfg->headers_timeout_ms = (int)n; break;
    case O_IDLE_TIMEOUT: a->cfg->idle_timeout_ms = (int)n; break;
    case O_MAX_HEADER: a->cfg->max_header_bytes = (size_t)n; break;
    case O_MAX_BODY: a->cfg->max_body_bytes = (size_t)n; break;
    case O_HEAD_TIMEOUT: a->cfg->head_timeout_ms = (int)n; break;
    case O_MAX_CONNECTIONS: a->cfg->max_connections = (size_t)n; break;
    case O_MAX_PER_CLIENT: a->cfg->max_per_client = (size_t)n; break;
    case O_SERVE: a->serve = val; break;
    case O_QUIET: a->cfg->quiet = 1; break;
    case O_NO_TAP: a->cfg->no_tap = 1; break;
    case O_WORKERS: a->cfg->workers = (int)n; break;
    case O_SPREAD_AT: a->cfg->spread_at = n ? (size_t)n : TS_GW_SPREAD_EVEN; break;
  }
  return 0;
}

static void on_signal(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  event_base_loopexit(arg, NULL);
}

int ts_cli_gateway(int argc, char **argv) {
  ts_gw_config cfg;
  memset(&cfg, 0, sizeof cfg);
  ts_tool_defs defs;
  memset(&defs, 0, sizeof defs);
  ts_gw_upstream ups[TS_GW_MAX_UPSTREAMS];
  char prefixes[TS_GW_MAX_UPSTREAMS][256];
  size_t nups = 0;
  const char *listen;
  int rc;
  uint64_t n;
  ts_pub *pub = NULL;
  struct event_base *base = NULL;
  struct event *sigint = NULL, *sigterm = NULL;
  ts_gw *gw = NULL;
  ts_serve *srv = NULL;
  char *token = NULL;
  char host[256];

  ts_cli_common com;
  memset(&com, 0, sizeof com);
  gw_args a = {&cfg, ups, prefixes, 0, "127.0.0.1:8787", NULL};
  rc = ts_cli_parse(&ts_cli_cmd_gateway, argc, argv, &com, gw_set, &a);
  if (rc >= 0) goto out;
  rc = 2;
  nups = a.nups;
  listen = a.listen;
  cfg.ca_file = com.ca_file;
  if (!nups) {
    fprintf(stderr, "toolstream gateway: --upstream URL is required (try --help)\n");
    goto out;
  }
  if ((rc = ts_cli_bus_check(&com)) || (rc = ts_cli_tools_defs(&com, &defs))) goto out;
  rc = 2;
  /* HOST:PORT, [V6]:PORT, or :PORT (loopback) */
  const char *colon = strrchr(listen, ':');
  const char *hs = listen, *he = colon;
  if (colon && listen[0] == '[' && colon > listen && colon[-1] == ']') hs++, he--;
  if (!colon || ts_cli_parse_size(colon + 1, &n) || n > 65535 || (size_t)(he - hs) >= sizeof host) {
    fprintf(stderr, "toolstream gateway: --listen wants HOST:PORT, got '%s'\n", listen);
    goto out;
  }
  snprintf(host, sizeof host, "%.*s", (int)(he - hs), hs);
  cfg.listen_host = host[0] ? host : "127.0.0.1";
  cfg.listen_port = (int)n;
  cfg.upstreams = ups;
  cfg.n_upstreams = nups;
  cfg.tools = &defs;
  if (a.serve && cfg.workers > 1) {
    fprintf(stderr, "toolstream gateway: --serve needs one event loop: --workers 1 (or leave it out)\n");
    goto out;
  }
  /* The default is a loop per CPU: the first takes every connection below --spread-at, so
   * the others cost nothing until there is load to share (docs/gateway.md, "Workers"). */
  if (!cfg.workers) {
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    cfg.workers = a.serve || ncpu < 1 ? 1 : ncpu > TS_GW_MAX_WORKERS ? TS_GW_MAX_WORKERS : (int)ncpu;
  }

  rc = 1;
  signal(SIGPIPE, SIG_IGN);
  if (ts_cli_bus_open(&com, NULL, &pub)) goto out;
  cfg.pub = pub;
  base = event_base_new();
  if (!base) {
    fprintf(stderr, "toolstream gateway: out of memory\n");
    goto out;
  }
  if (a.serve) {
    com.who = "toolstream gateway";
    if ((rc = ts_cli_serve_on(&com, a.serve, base, NULL, &srv, &token))) goto out;
    rc = 1;
    cfg.serve = srv;
  }
  cfg.origins = com.origins;
  cfg.norigins = com.n_origins;
  char why[512] = "";
  int gr = ts_gw_new(base, &cfg, &gw, why, sizeof why);
  if (gr) {
    fprintf(stderr, "toolstream gateway: %s\n", why[0] ? why : ts_err_message(gr));
    rc = gr == TS_E_INVAL ? 2 : 1;
    goto out;
  }
  sigint = evsignal_new(base, SIGINT, on_signal, base);
  sigterm = evsignal_new(base, SIGTERM, on_signal, base);
  if (!sigint || !sigterm) {
    fprintf(stderr, "toolstream gateway: out of memory\n");
    goto out;
  }
  event_add(sigint, NULL);
  event_add(sigterm, NULL);
  printf(strchr(cfg.listen_host, ':') ? "http://[%s]:%d\n" : "http://%s:%d\n", cfg.listen_host,
         ts_gw_port(gw));
  fflush(stdout);
  event_base_dispatch(base);
  rc = 0;

out:
  if (sigint) event_free(sigint);
  if (sigterm) event_free(sigterm);
  ts_gw_free(gw);
  ts_serve_free(srv); /* after the gateway: its sinks feed the endpoint */
  free(token);
  if (base) event_base_free(base);
  if (pub) ts_pub_close(pub);
  ts_tool_defs_free(&defs);
  return rc;
}
