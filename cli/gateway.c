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

#include <event2/event.h>

#include "events/bus_pub.h"
#include "cli/cli.h"
#include "net/gateway.h"
#include "stream/tool_defs.h"

static const char gw_usage[] =
    "usage: toolstream gateway --listen HOST:PORT --upstream [PREFIX=]URL... --pub URL [options]\n"
    "\n"
    "A reverse proxy between model clients and providers: every request and response\n"
    "passes through unchanged (streamed replies chunk by chunk, as they arrive), and a\n"
    "tap on a copy of each streamed reply publishes thread events on the event bus\n"
    "(tool_call_started as soon as a tool's progress argument has streamed).\n"
    "\n"
    "options:\n"
    "  --listen HOST:PORT    where to listen (default 127.0.0.1:8787; port 0: any free port);\n"
    "                        the address is printed on the first line of standard output\n"
    "  --upstream [PREFIX=]URL  the provider (http:// or https://; its path is put before the\n"
    "                        client's); with PREFIX, only for paths starting with PREFIX\n"
    "                        (longest prefix wins); repeatable, up to 16\n"
    "  --ca-file FILE        trust these CAs (PEM) for https upstreams instead of the system\n"
    "                        store; certificates are always verified\n"
    "  --tools FILE          JSON array of tool definitions (as for tap); repeatable\n"
    "  --progress-arg T=A    tool T's progress argument is A; repeatable, wins over --tools;\n"
    "                        both win over \"x-progress-argument\" in the request's own tools\n"
    "  --pub URL             publish thread events on the event bus (nng pub0)\n"
    "  --replay URL          serve missed events to subscribers on this URL (nng rep0)\n"
    "  --tls-cert FILE       certificate for wss:// and tls+tcp:// bus listeners\n"
    "  --tls-key FILE        its private key, when not in the certificate file\n"
    "  --deltas              also publish tool_call_delta\n"
    "  --text                also publish text_delta\n"
    "  --connect-timeout MS  TCP connect to the upstream (default 10000)\n"
    "  --headers-timeout MS  from the request to the upstream's headers (default 120000)\n"
    "  --idle-timeout MS     no byte from the upstream for this long (default 300000)\n"
    "  --max-header-bytes N  request headers past this get 431 (default 64k)\n"
    "  --max-body-bytes N    request bodies past this get 413 (default 32m)\n"
    "  -h, --help            this help\n"
    "\n"
    "The thread id is the X-Toolstream-Thread request header, or a fresh one; it is\n"
    "returned in the X-Toolstream-Thread response header. GET /healthz and /metrics\n"
    "(Prometheus) are answered by the gateway itself.\n";

static void on_signal(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  event_base_loopexit(arg, NULL);
}

static int parse_ms(const char *opt, const char *val, int *out) {
  uint64_t n;
  if (ts_cli_parse_size(val, &n) || n == 0 || n > 86400000) {
    fprintf(stderr, "toolstream gateway: %s wants milliseconds from 1 to 86400000\n", opt);
    return -1;
  }
  *out = (int)n;
  return 0;
}

int ts_cli_gateway(int argc, char **argv) {
  ts_gw_config cfg;
  memset(&cfg, 0, sizeof cfg);
  ts_tool_defs defs;
  memset(&defs, 0, sizeof defs);
  ts_gw_upstream ups[TS_GW_MAX_UPSTREAMS];
  char prefixes[TS_GW_MAX_UPSTREAMS][256];
  size_t nups = 0;
  ts_pub_opts popts;
  memset(&popts, 0, sizeof popts);
  const char *val, *listen = "127.0.0.1:8787", *pub_url = NULL, *replay_url = NULL;
  int rc = 2, r;
  uint64_t n;
  ts_pub *pub = NULL;
  struct event_base *base = NULL;
  struct event *sigint = NULL, *sigterm = NULL;
  ts_gw *gw = NULL;
  char host[256];

  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(gw_usage, stdout);
      rc = 0;
      goto out;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--listen", &val))) {
      if (r < 0) goto out;
      listen = val;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--upstream", &val))) {
      if (r < 0) goto out;
      if (nups == TS_GW_MAX_UPSTREAMS) {
        fprintf(stderr, "toolstream gateway: at most %d upstreams\n", TS_GW_MAX_UPSTREAMS);
        goto out;
      }
      const char *eq = val[0] == '/' ? strchr(val, '=') : NULL;
      if (eq && (size_t)(eq - val) < sizeof prefixes[0]) {
        snprintf(prefixes[nups], sizeof prefixes[0], "%.*s", (int)(eq - val), val);
        ups[nups].prefix = prefixes[nups];
        ups[nups].url = eq + 1;
      } else {
        ups[nups].prefix = "";
        ups[nups].url = val;
      }
      nups++;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--ca-file", &val))) {
      if (r < 0) goto out;
      cfg.ca_file = val;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--tools", &val))) {
      if (r < 0) goto out;
      if (ts_cli_tools_json(&defs, val, "toolstream gateway")) goto out;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--progress-arg", &val))) {
      if (r < 0) goto out;
      if (ts_cli_progress_arg(&defs, val, "toolstream gateway")) goto out;
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
    } else if ((r = ts_cli_opt(argc, argv, &i, "--connect-timeout", &val))) {
      if (r < 0 || parse_ms("--connect-timeout", val, &cfg.connect_timeout_ms)) goto out;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--headers-timeout", &val))) {
      if (r < 0 || parse_ms("--headers-timeout", val, &cfg.headers_timeout_ms)) goto out;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--idle-timeout", &val))) {
      if (r < 0 || parse_ms("--idle-timeout", val, &cfg.idle_timeout_ms)) goto out;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--max-header-bytes", &val)) ||
               (r = ts_cli_opt(argc, argv, &i, "--max-body-bytes", &val))) {
      if (r < 0) goto out;
      int hdr = strstr(argv[i], "--max-header-bytes") || (i > 0 && !strcmp(argv[i - 1], "--max-header-bytes"));
      if (ts_cli_parse_size(val, &n) || n < 1024 || n > ((uint64_t)1 << 30)) {
        fprintf(stderr, "toolstream gateway: %s wants a size from 1k to 1g, got '%s'\n",
                hdr ? "--max-header-bytes" : "--max-body-bytes", val);
        goto out;
      }
      if (hdr) cfg.max_header_bytes = (size_t)n;
      else cfg.max_body_bytes = (size_t)n;
    } else if (!strcmp(a, "--deltas")) {
      cfg.deltas = 1;
    } else if (!strcmp(a, "--text")) {
      cfg.text = 1;
    } else {
      fprintf(stderr, "toolstream gateway: unknown option '%s' (try --help)\n", a);
      goto out;
    }
  }
  if (!nups) {
    fprintf(stderr, "toolstream gateway: --upstream URL is required (try --help)\n");
    goto out;
  }
  if (replay_url && !pub_url) {
    fprintf(stderr, "toolstream gateway: --replay needs --pub\n");
    goto out;
  }
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

  rc = 1;
  signal(SIGPIPE, SIG_IGN);
  if (pub_url) {
    int pr = ts_pub_open(pub_url, replay_url, &popts, &pub);
    if (pr) {
      fprintf(stderr, "toolstream gateway: cannot publish on %s%s%s: %s\n", pub_url,
              replay_url ? " / " : "", replay_url ? replay_url : "",
              pr == TS_E_IO ? ts_bus_last_error() : ts_err_message(pr));
      goto out;
    }
  }
  cfg.pub = pub;
  base = event_base_new();
  if (!base) {
    fprintf(stderr, "toolstream gateway: out of memory\n");
    goto out;
  }
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
  if (base) event_base_free(base);
  if (pub) ts_pub_close(pub);
  ts_tool_defs_free(&defs);
  return rc;
}
