/*
 * run.c: `toolstream run`: the agent loop (agent/run.h) as a command.
 *
 * This file is the command's surface only: its options, which backend (recorded turns,
 * agent/replay_model.h, or HTTP, cli/model_http.h), the tools, the store, the bus, the
 * output (the live view on a terminal, JSON lines otherwise) and the summary. The loop
 * itself, and every event's path to the store, the screen and the bus, live in the
 * agent room and the event sink.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/replay_model.h"
#include "base/clock.h"
#include "agent/run.h"
#include "cli/cli.h"
#include "cli/live.h"
#include "cli/model_http.h"
#include "events/bus_pub.h"
#include "events/sink.h"
#include "js/jstools.h"
#include "store/store.h"
#include "tools/demo_tools.h"
#include "tools/registry.h"

enum {
  O_MODEL_URL = 1, O_MODEL, O_PROVIDER, O_KEY_ENV, O_MAX_TOKENS, O_MODEL_REPLAY, O_RATE,
  O_RESUME, O_VAR, O_WORKSPACE, O_DATA_DIR, O_MAX_TURNS, O_JSON, O_SERVE
};

#define RUN_MAX_VARS 64

static const ts_cli_opt run_opts[] = {
    {"model-url", 0, TS_CLI_STRING, O_MODEL_URL, 0, 0, "URL",
     "the model: an OpenAI-compatible Chat Completions endpoint or\n"
     "Anthropic Messages (https://api.openai.com/v1,\n"
     "http://localhost:11434/v1, https://api.anthropic.com/v1, or\n"
     "the full .../chat/completions or .../messages URL)", NULL},
    {"model", 0, TS_CLI_STRING, O_MODEL, 0, 0, "NAME", "the model's name (required with --model-url)",
     NULL},
    {"provider", 0, TS_CLI_STRING, O_PROVIDER, 0, 0, "P",
     "openai, anthropic, ollama (native /api/chat; its /v1 is\n"
     "openai) or cohere (v2 chat, base https://api.cohere.com)\n"
     "(default: anthropic or cohere by the URL's host, else\n"
     "openai); run cannot talk to openai-responses, gemini or\n"
     "bedrock (SigV4) yet (tap and gateway read their streams)", NULL},
    {"api-key-env", 0, TS_CLI_STRING, O_KEY_ENV, 0, 0, "VAR",
     "the environment variable holding the API key (default\n"
     "the provider's: OPENAI_API_KEY, ANTHROPIC_API_KEY,\n"
     "OLLAMA_API_KEY or CO_API_KEY; never a flag, never printed)", NULL},
    {"max-tokens", 0, TS_CLI_NUMBER, O_MAX_TOKENS, 1, 1000000, "N",
     "Anthropic's max_tokens (default 4096)", NULL},
    {"model-replay", 0, TS_CLI_STRING, O_MODEL_REPLAY, 0, 0, "DIR",
     "the model: recorded SSE files, one per turn, in name order\n"
     "(turn-1.sse, turn-2.sse, ...; format detected as in tap)", NULL},
    {"rate", 0, TS_CLI_NUMBER, O_RATE, 1, 10000000, "N",
     "replay pace in SSE events per second (default 100)", NULL},
    {"resume", 0, TS_CLI_FLAG, O_RESUME, 0, 0, NULL,
     "continue an existing thread: a turn that was cut (a crash,\n"
     "Ctrl-C) is finished first, every call with one result; a\n"
     "finished thread is left as it is (exit 0)", NULL},
    {"var", 0, TS_CLI_STRING, O_VAR, 0, 0, "NAME=VALUE",
     "a variable for JavaScript tools (wins over the environment);\nrepeatable, up to 64", NULL},
    {"workspace", 0, TS_CLI_STRING, O_WORKSPACE, 0, 0, "DIR",
     "the demo tools' directory (default ./workspace, created)", NULL},
    {"data-dir", 0, TS_CLI_STRING, O_DATA_DIR, 0, 0, "DIR",
     "where the store lives (default $TOOLSTREAM_DATA_DIR,\n"
     "$XDG_DATA_HOME/toolstream, ~/.local/share/toolstream)", NULL},
    {"max-turns", 0, TS_CLI_NUMBER, O_MAX_TURNS, 1, 1000000, "N", "stop after N turns (default 16)",
     NULL},
    {"json", 0, TS_CLI_FLAG, O_JSON, 0, 0, NULL, "JSON events on standard output even on a terminal",
     NULL},
    {"serve", 0, TS_CLI_STRING, O_SERVE, 0, 0, "HOST:PORT",
     "also serve the HTTP event endpoint and live page while it runs\n"
     "(as toolstream serve does; e.g. 127.0.0.1:8788)", NULL},
};
static const ts_cli_group run_group = {"run", NULL, run_opts, sizeof run_opts / sizeof run_opts[0],
                                       NULL};
static const ts_cli_group *const run_groups[] = {
    &run_group, &ts_cli_group_thread, &ts_cli_group_events, &ts_cli_group_ca, &ts_cli_group_tools, &ts_cli_group_bus,
    &ts_cli_group_browsers, &ts_cli_group_endpoint,
    NULL};

const ts_cli_command ts_cli_cmd_run = {
    "run",
    "[options] [PROMPT]",
    "run a thread: model turns, tool calls in order, results stored",
    "Runs a thread: the model's streamed reply goes through the tap (tool_call_started\n"
    "goes out early), the calls run in order as their arguments complete, each result is\n"
    "committed to the store, and turns repeat until the model stops calling tools.\n"
    "The thread is a new th_... id unless --thread names one.",
    run_groups,
    "Built-in tools: write_file (progress argument: description), read_file, list_dir,\n"
    "confined to the workspace. Ctrl-C or SIGTERM stops cleanly at any moment: the\n"
    "running tool is stopped (its result records it as cancelled), no further call\n"
    "starts, finished results stay committed, and --thread ID --resume finishes the\n"
    "turn (the calls that never ran run then) and goes on. The API key\n"
    "and the values of JavaScript tools' secret variables are redacted from every event\n"
    "before it is printed, published or stored (a provider message echoing the key).\n"
    "Exit status: 0 when the model ended its turn; 1 on an error, interruption or\n"
    "--max-turns, or when a file named by an option cannot be read (one line on standard\n"
    "error); 2 for usage errors (including a --tools file that does not parse or load).",
    ts_cli_run,
};

typedef struct {
  ts_http_model hm;
  const char *provider, *replay_dir, *workspace, *data_dir, *prompt, *serve;
  const char *vars[RUN_MAX_VARS];
  size_t nvars;
  int resume, json;
  uint64_t max_turns, rate;
} run_args;

static int run_set(void *user, const ts_cli_opt *o, const char *val, uint64_t n) {
  run_args *a = user;
  if (!o) {
    if (a->prompt) {
      fprintf(stderr, "toolstream run: one prompt only (quote it)\n");
      return 2;
    }
    a->prompt = val;
    return 0;
  }
  switch (o->id) {
    case O_MODEL_URL: a->hm.url = val; break;
    case O_MODEL: a->hm.model = val; break;
    case O_PROVIDER: a->provider = val; break;
    case O_KEY_ENV: a->hm.key_env = val; break;
    case O_MAX_TOKENS: a->hm.max_tokens = (unsigned)n; break;
    case O_MODEL_REPLAY: a->replay_dir = val; break;
    case O_RATE: a->rate = n; break;
    case O_RESUME: a->resume = 1; break;
    case O_WORKSPACE: a->workspace = val; break;
    case O_DATA_DIR: a->data_dir = val; break;
    case O_MAX_TURNS: a->max_turns = n; break;
    case O_JSON: a->json = 1; break;
    case O_SERVE: a->serve = val; break;
    case O_VAR:
      if (!strchr(val, '=') || val[0] == '=' || a->nvars == RUN_MAX_VARS) {
        fprintf(stderr, "toolstream run: --var wants NAME=VALUE (at most %d), got '%s'\n",
                RUN_MAX_VARS, val);
        return 2;
      }
      a->vars[a->nvars++] = val;
      break;
  }
  return 0;
}

/* The checks that need the whole command line; 0 or 2 after printing why. */
static int check_model(run_args *a, const ts_cli_common *com) {
  if (!a->replay_dir == !a->hm.url) {
    fprintf(stderr, "toolstream run: which model? --model-url URL or --model-replay DIR (one; see "
                    "--help)\n");
    return 2;
  }
  if (a->resume && !com->has_thread) {
    fprintf(stderr, "toolstream run: --resume needs --thread ID\n");
    return 2;
  }
  if (!a->hm.url) return 0;
  if (!a->hm.model) {
    fprintf(stderr, "toolstream run: --model-url needs --model NAME\n");
    return 2;
  }
  const char *p = a->provider;
  a->hm.provider = p ? ts_provider_find(p) : ts_provider_for_url(a->hm.url);
  if (!p && !a->hm.provider) a->hm.provider = ts_provider_get(TS_FORMAT_OPENAI_CHAT);
  if (!a->hm.provider || !a->hm.provider->request) {
    /* the names `run` can talk to, from the provider table */
    char names[256] = "";
    size_t nn = 0, k = 0, total = 0;
    for (size_t i = 0; i < ts_provider_count(); i++) total += ts_provider_at(i)->request != NULL;
    for (size_t i = 0; i < ts_provider_count(); i++) {
      const ts_provider *r = ts_provider_at(i);
      if (!r->request) continue;
      const char *sep = !k ? "" : ++k == total ? " or " : ", ";
      if (!k) k = 1;
      int w = snprintf(names + nn, sizeof names - nn, "%s%s", sep, r->alias ? r->alias : r->name);
      if (w > 0 && (size_t)w < sizeof names - nn) nn += (size_t)w;
    }
    fprintf(stderr, "toolstream run: --provider is %s, not '%s'\n", names, p);
    return 2;
  }
  if (!a->hm.key_env) a->hm.key_env = a->hm.provider->key_env;
  const char *key = getenv(a->hm.key_env);
  int local = strstr(a->hm.url, "://localhost") || strstr(a->hm.url, "://127.") ||
              strstr(a->hm.url, "://[::1]");
  if ((!key || !*key) && !local) {
    fprintf(stderr, "toolstream run: set %s to the API key (it is read from the environment "
                    "only)\n", a->hm.key_env);
    return 2;
  }
  return 0;
}

static volatile sig_atomic_t interrupted;
static void on_sigint(int sig) {
  (void)sig;
  interrupted = 1;
}

/* The live view on a terminal: fed by the sink (from the loop's and the dispatcher's
 * threads, one at a time) and ticked by a thread of its own so that spinners turn while a
 * call streams or runs; one lock between the two. */
typedef struct {
  ts_live view;
  pthread_mutex_t mu;
  pthread_t ticker;
  volatile int stop;
  int ticking;
} live_screen;

static void live_view(void *user, const char *json, size_t len) {
  live_screen *l = user;
  pthread_mutex_lock(&l->mu);
  ts_live_event(&l->view, json, len);
  pthread_mutex_unlock(&l->mu);
}

static void *live_tick(void *arg) {
  live_screen *l = arg;
  while (!l->stop) {
    ts_clock_sleep_ms(100);
    pthread_mutex_lock(&l->mu);
    ts_live_tick(&l->view);
    pthread_mutex_unlock(&l->mu);
  }
  return NULL;
}

int ts_cli_run(int argc, char **argv) {
  run_args a;
  memset(&a, 0, sizeof a);
  a.workspace = "workspace";
  a.max_turns = 16;
  a.rate = 100;
  a.json = !isatty(STDOUT_FILENO);
  ts_cli_common com;
  memset(&com, 0, sizeof com);
  int rc = ts_cli_parse(&ts_cli_cmd_run, argc, argv, &com, run_set, &a);
  if (rc >= 0) return rc;
  if ((rc = check_model(&a, &com)) || (rc = ts_cli_bus_check(&com)) ||
      (rc = ts_cli_thread_or_new(&com)))
    return rc;
  a.hm.ca_file = com.ca_file;

  rc = 1;
  char why[512] = "";
  ts_store *store = NULL, *dstore = NULL, *astore = NULL;
  ts_registry *reg = ts_registry_new();
  ts_demo_tools *demo = NULL;
  ts_tool_defs progress = {0};
  ts_pub *pub = NULL;
  ts_cli_endpoint *endpoint = NULL;
  live_screen live;
  int live_on = 0;

  mkdir(a.workspace, 0755);
  if (!reg || ts_demo_tools_add(reg, a.workspace, &demo, why, sizeof why)) {
    fprintf(stderr, "toolstream run: %s\n", why[0] ? why : "out of memory");
    goto out;
  }
  ts_jstools_env env = {.vars = a.vars, .n_vars = a.nvars};
  if ((rc = ts_cli_tools_registry(&com, reg, &env)) ||
      (rc = ts_cli_progress_overrides(&com, &progress)))
    goto out;
  rc = 1;
  if (ts_store_open(a.data_dir, &store, why, sizeof why) ||
      ts_store_open(a.data_dir, &dstore, why, sizeof why)) {
    fprintf(stderr, "toolstream run: cannot open the store: %s\n", why);
    goto out;
  }
  ts_pub_opts popts;
  memset(&popts, 0, sizeof popts);
  if (com.replay_url && ts_store_open(a.data_dir, &astore, why, sizeof why) == TS_E_OK) {
    popts.archive = ts_agent_archive; /* replay serves any event ever stored */
    popts.archive_user = astore;
  }
  if (ts_cli_bus_open(&com, &popts, &pub)) goto out;
  if (a.serve) {
    int er = ts_cli_endpoint_open(&com, a.serve, a.data_dir, NULL, &endpoint);
    if (er || ts_cli_endpoint_start(endpoint)) {
      if (!er) fprintf(stderr, "toolstream run: cannot start the event endpoint\n");
      ts_cli_endpoint_free(endpoint);
      endpoint = NULL;
      rc = er ? er : 1;
      goto out;
    }
  }
  if (!a.json) {
    if (ts_live_init(&live.view)) {
      fprintf(stderr, "toolstream run: out of memory\n");
      goto out;
    }
    live.view.executes = 1; /* run executes every call: a ready call waits for its result */
    pthread_mutex_init(&live.mu, NULL);
    live.stop = 0;
    live.ticking = pthread_create(&live.ticker, NULL, live_tick, &live) == 0;
    live_on = 1;
  }

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  /* A reader that goes away must not kill the run in the middle of a tool call: the
   * write fails (EPIPE), the sink stops writing, and the run goes on (the store is its
   * record; events/sink.h). */
  signal(SIGPIPE, SIG_IGN);

  ts_replay_model replay = {a.replay_dir, (double)a.rate};
  /* The secrets redacted from every event: the API key (a provider message may echo it)
   * and the values of the JavaScript tools' `secret` variables. One shorter than
   * TS_SINK_SECRET_MIN cannot be told from ordinary text and is left out. */
  const char *found[TS_SINK_MAX_SECRETS], *secrets[TS_SINK_MAX_SECRETS];
  size_t nfound = 0, nsecrets = 0;
  const char *key = a.hm.url && a.hm.key_env ? getenv(a.hm.key_env) : NULL;
  if (key) found[nfound++] = key;
  nfound += ts_jstools_secrets(reg, found + nfound, TS_SINK_MAX_SECRETS - nfound);
  for (size_t i = 0; i < nfound; i++)
    if (strlen(found[i]) >= TS_SINK_SECRET_MIN) secrets[nsecrets++] = found[i];
  ts_agent_config ac = {
      .store = store,
      .dispatch_store = dstore,
      .reg = reg,
      .progress = &progress,
      .thread = com.thread,
      .resume = a.resume,
      .prompt = a.prompt,
      .max_turns = (uint32_t)a.max_turns,
      .model = a.replay_dir ? ts_replay_model_backend(&replay) : ts_http_model_backend(&a.hm),
      .sink = {.who = "toolstream run", .out = a.json ? stdout : NULL,
               .view = a.json ? NULL : live_view, .view_user = &live, .pub = pub,
               .secrets = secrets, .n_secrets = nsecrets, .no_time = com.no_time},
      .cancel = &interrupted,
  };
  ts_agent_stats st;
  int arc = ts_agent_run(&ac, &st, why, sizeof why);
  if (arc) {
    fprintf(stderr, "toolstream run: %s\n", why);
    rc = arc == TS_E_STORE_THREAD_EXISTS ? 2 : 1;
    goto out;
  }
  rc = 0;
  FILE *sum = a.json ? stderr : stdout;
  fprintf(sum,
          "\n%u turn%s, %u tool call%s in %.2f s. tool_call_started came on average %.1f ms and "
          "%llu bytes before the call's complete arguments. Thread %s is stored in %s.\n",
          st.turns, st.turns == 1 ? "" : "s", st.calls, st.calls == 1 ? "" : "s",
          st.elapsed_ms / 1e3, st.calls ? st.early_ms_sum / st.calls : 0.0,
          (unsigned long long)(st.calls ? st.early_bytes_sum / st.calls : 0), com.thread,
          ts_store_path(store));
out:
  ts_cli_endpoint_stop(endpoint); /* the run is over: its readers have had every event */
  if (live_on) {
    live.stop = 1;
    if (live.ticking) pthread_join(live.ticker, NULL);
    ts_live_fini(&live.view);
    pthread_mutex_destroy(&live.mu);
  }
  ts_pub_close(pub); /* before the archive's store: its replay thread may be using it */
  ts_store_close(astore);
  ts_store_close(store);
  ts_store_close(dstore);
  ts_registry_free(reg);
  ts_demo_tools_free(demo);
  ts_tool_defs_free(&progress);
  return rc;
}
