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
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/latency.h"
#include "agent/replay_model.h"
#include "base/clock.h"
#include "agent/run.h"
#include "agent/thread_env.h"
#include "base/file.h"
#include "tools/dotenv.h"
#include "tools/variables.h"
#include "cli/cli.h"
#include "cli/live.h"
#include "cli/model_http.h"
#include "events/bus_pub.h"
#include "events/sink.h"
#include "js/jstools.h"
#include "store/store.h"
#include "tools/definitions.h"
#include "tools/demo_tools.h"
#include "tools/registry.h"

enum {
  O_MODEL_REPLAY = 1, O_RATE,
  O_RESUME, O_VAR, O_WORKSPACE, O_DATA_DIR, O_MAX_TURNS, O_JSON, O_SERVE, O_PARENT,
  O_ENV_FILE, O_CHECK_ENV
};

#define RUN_MAX_ENV_FILES 8

#define RUN_MAX_VARS 64

static const ts_cli_opt run_opts[] = {
    {"model-replay", 0, TS_CLI_STRING, O_MODEL_REPLAY, 0, 0, "DIR",
     "the model: recorded SSE files, one per turn, in name order\n"
     "(turn-1.sse, turn-2.sse, ...; format detected as in tap)", NULL},
    {"rate", 0, TS_CLI_NUMBER, O_RATE, 1, 10000000, "N",
     "replay pace in SSE events per second (default 100)", NULL},
    {"resume", 0, TS_CLI_FLAG, O_RESUME, 0, 0, NULL,
     "continue an existing thread: a turn that was cut (a crash,\n"
     "Ctrl-C) is finished first, every call with one result; a\n"
     "finished thread is left as it is (exit 0)", NULL},
    {"parent", 0, TS_CLI_THREAD, O_PARENT, 0, 0, "ID",
     "create the thread as a child of thread ID: it inherits ID's\n"
     "variables (docs/variables.md)", NULL},
    {"var", 0, TS_CLI_STRING, O_VAR, 0, 0, "NAME=VALUE",
     "a text variable, set in the thread's environment; repeatable,\n"
     "up to 64. Never a secret (a command line is visible to others):\n"
     "use --env-file or 'toolstream env set' for those", NULL},
    {"env-file", 0, TS_CLI_STRING, O_ENV_FILE, 0, 0, "FILE",
     "variables from a dotenv file (NAME=VALUE lines), set in the\n"
     "thread's environment; a name a tool declares secret is sealed;\n"
     "repeatable, up to 8", NULL},
    {"check-env", 0, TS_CLI_FLAG, O_CHECK_ENV, 0, 0, NULL,
     "before the first model request, report every required variable\n"
     "of the tools that has no value, and stop (exit 1) if any", NULL},
    {"workspace", 0, TS_CLI_STRING, O_WORKSPACE, 0, 0, "DIR",
     "the thread's workspace, where the demo tools work (default\n"
     "./workspace; for a --parent child DATA_DIR/workspaces/ID; on\n"
     "--resume the thread's own)", NULL},
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
    &run_group, &ts_cli_group_model, &ts_cli_group_thread, &ts_cli_group_events, &ts_cli_group_ca,
    &ts_cli_group_tools, &ts_cli_group_defs, &ts_cli_group_bus,
    &ts_cli_group_browsers, &ts_cli_group_endpoint,
    NULL};

const ts_cli_command ts_cli_cmd_run = {
    "run",
    "[options] [PROMPT]",
    "run a thread: model turns, tool calls in order, results stored",
    "Runs a thread: the model's streamed reply goes through the tap (tool_call_started\n"
    "goes out early), the calls run in order as their arguments complete, each result is\n"
    "committed to the store, and turns repeat until the model stops calling tools.\n"
    "The thread is a new th_... id unless --thread names one. With --agent or --prompts,\n"
    "prompt and agent definitions drive it (docs/composition.md): the driving prompt gives\n"
    "the system text, the model and the tools the model sees (function tools, prompts\n"
    "called as tools, exposed agents, the subagent tools of the agent's relationships);\n"
    "every definition-time rule is checked before anything runs.",
    run_groups,
    "Built-in tools: write_file (progress argument: description), read_file, list_dir,\n"
    "confined to the workspace. Ctrl-C or SIGTERM stops cleanly at any moment: the\n"
    "running tool is stopped (its result records it as cancelled), no further call\n"
    "starts, finished results stay committed, and --thread ID --resume finishes the\n"
    "turn (the calls that never ran run then) and goes on. A call whose required\n"
    "variable has no value waits (a variable_required event) until 'toolstream\n"
    "env set THREAD NAME' gives it one, from any process, also across a restart\n"
    "(--resume); secrets are sealed at rest (docs/variables.md). The API key\n"
    "and the values of JavaScript tools' secret variables are redacted from every event\n"
    "before it is printed, published or stored (a provider message echoing the key).\n"
    "Exit status: 0 when the model ended its turn; 1 on an error, interruption or\n"
    "--max-turns, or when a file named by an option cannot be read (one line on standard\n"
    "error); 2 for usage errors (including a --tools file that does not parse or load, and\n"
    "a prompt or agent definition that breaks a rule: one line names the file and entry).",
    ts_cli_run,
};

typedef struct {
  ts_http_model hm;
  const char *replay_dir, *workspace, *data_dir, *prompt, *serve;
  const char *vars[RUN_MAX_VARS];
  size_t nvars;
  const char *env_files[RUN_MAX_ENV_FILES], *parent;
  size_t nenv_files;
  int resume, json, check_env, workspace_given;
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
    case O_MODEL_REPLAY: a->replay_dir = val; break;
    case O_RATE: a->rate = n; break;
    case O_RESUME: a->resume = 1; break;
    case O_WORKSPACE: a->workspace = val, a->workspace_given = 1; break;
    case O_PARENT: a->parent = val; break;
    case O_CHECK_ENV: a->check_env = 1; break;
    case O_ENV_FILE:
      if (a->nenv_files == RUN_MAX_ENV_FILES) {
        fprintf(stderr, "toolstream run: at most %d --env-file files\n", RUN_MAX_ENV_FILES);
        return 2;
      }
      a->env_files[a->nenv_files++] = val;
      break;
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
  if (!a->replay_dir == !com->model_url) {
    fprintf(stderr, "toolstream run: which model? --model-url URL or --model-replay DIR (one; see "
                    "--help)\n");
    return 2;
  }
  if (a->resume && !com->has_thread) {
    fprintf(stderr, "toolstream run: --resume needs --thread ID\n");
    return 2;
  }
  if (a->resume && a->parent) {
    fprintf(stderr, "toolstream run: --parent is for a new thread (a thread keeps its parent)\n");
    return 2;
  }
  if (!com->model_url) return 0;
  return ts_http_model_resolve(&a->hm, com);
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

/* ---- variables: the thread's environment before the first turn (docs/variables.md) ---- */

typedef struct {
  const run_args *a;
  const ts_registry *reg;
  const ts_var_layers *layers;
  int status; /* the exit status prepare_env chose when it stopped the run */
} run_env;

typedef struct {
  ts_vars *vars;
  const ts_registry *reg;
  const char *thread, *path;
  char origin[300];
  int failed;
} env_file_load;

static int put_env_entry(void *user, const char *name, const char *value, size_t len) {
  env_file_load *l = user;
  int type = ts_thread_env_is_secret(l->reg, name) ? TS_VAR_SECRET
                                                   : ts_vars_default_type(l->vars, l->thread, name);
  if (type < 0 || ts_vars_set(l->vars, l->thread, name, (ts_var_type)type, value, len,
                              l->origin)) {
    fprintf(stderr, "toolstream run: --env-file %s: %s: %s\n", l->path, name,
            ts_vars_errmsg(l->vars));
    l->failed = 1;
    return 1;
  }
  return 0;
}

/* Sets every entry of a dotenv file in the thread's environment. 0, or an exit status. */
static int load_env_file(ts_vars *v, const ts_registry *reg, const char *thread,
                         const char *path) {
  size_t len = 0, line = 0;
  char *text = NULL;
  if (ts_file_read(path, TS_DOTENV_MAX, &text, &len)) {
    fprintf(stderr, "toolstream run: --env-file %s: %s\n", path,
            errno == EFBIG ? "file too large (at most 1 MiB)" : strerror(errno));
    return 1;
  }
  env_file_load l = {v, reg, thread, path, "", 0};
  snprintf(l.origin, sizeof l.origin, "--env-file %s", path);
  char why[256] = "";
  int n = ts_dotenv_parse(text, len, put_env_entry, &l, &line, why, sizeof why);
  ts_vars_wipe(text, len); /* it may hold secrets */
  free(text);
  if (l.failed) return 1;
  if (n < 0) {
    fprintf(stderr, "toolstream run: --env-file %s:%zu: %s\n", path, line, why);
    return 2;
  }
  return 0;
}

static int say_missing(void *user, const ts_tool *tool, const ts_var_def *def) {
  const char *thread = user;
  int desc = def->description && def->description[0];
  fprintf(stderr, "toolstream run: --check-env: %s (%s, required by tool %s%s%s) has no value: "
                  "toolstream env set %s %s\n",
          def->name, def->type == TS_VAR_SECRET ? "secret" : "text", ts_tool_name(tool),
          desc ? ": " : "", desc ? def->description : "", thread, def->name);
  return 0;
}

/* agent/run.h's prepare hook: declarations, --var, --env-file, --check-env. */
static int prepare_env(void *user, ts_store *store, const char *thread) {
  run_env *e = user;
  ts_vars *v = NULL;
  int rc = 1;
  if (ts_vars_open(store, NULL, &v) || ts_thread_env_declare(v, e->reg, thread)) {
    fprintf(stderr, "toolstream run: %s\n", v ? ts_vars_errmsg(v) : "out of memory");
    goto out;
  }
  for (size_t i = 0; i < e->a->nvars; i++) {
    const char *kv = e->a->vars[i], *eq = strchr(kv, '=');
    char name[TS_STORE_VAR_NAME_MAX + 2];
    snprintf(name, sizeof name, "%.*s", (int)(eq - kv), kv);
    if (ts_vars_set(v, thread, name, TS_VAR_TEXT, eq + 1, strlen(eq + 1), "--var")) {
      fprintf(stderr, "toolstream run: --var: %s\n", ts_vars_errmsg(v));
      goto out;
    }
  }
  for (size_t i = 0; i < e->a->nenv_files; i++)
    if ((rc = load_env_file(v, e->reg, thread, e->a->env_files[i]))) goto out;
  rc = 1;
  if (e->a->check_env) {
    int n = ts_vars_check_key(v);
    if (n == TS_E_OK) n = ts_thread_env_check(v, e->reg, thread, e->layers, say_missing,
                                              (void *)thread);
    if (n < 0) {
      fprintf(stderr, "toolstream run: --check-env: %s\n", ts_vars_errmsg(v));
      goto out;
    }
    if (n > 0) {
      fprintf(stderr, "toolstream run: --check-env: %d required variable%s without a value; "
                      "nothing was sent to the model\n", n, n == 1 ? "" : "s");
      goto out;
    }
  }
  rc = 0;
out:
  ts_vars_free(v);
  e->status = rc;
  return rc;
}

typedef struct {
  char *parent, *ws;
} row_out;

static int grab_row(void *user, const ts_store_thread *t) {
  row_out *o = user;
  snprintf(o->parent, TS_THREAD_ID_MAX + 1, "%s", t->parent ? t->parent : "");
  snprintf(o->ws, TS_STORE_PATH_MAX, "%s", t->workspace ? t->workspace : "");
  return 0;
}

/* The summary line: the lead of the progress label over the complete arguments, median and
 * p90, over the calls of this run that had a label (agent/latency.h, from the stored
 * events), and how many calls that is. */
static void print_summary(FILE *f, ts_store *store, const char *thread, uint64_t seq0,
                          const ts_agent_stats *st) {
  ts_lat_set set = {0};
  ts_lat_lead lead;
  int ok = ts_cli_bench_read_thread(store, thread, seq0, &set) == TS_E_OK &&
           ts_lat_lead_of(&set, &lead) == TS_E_OK;
  ts_lat_set_fini(&set);
  fprintf(f, "\n%u turn%s, %u tool call%s in %.2f s. ", st->turns, st->turns == 1 ? "" : "s",
          st->calls, st->calls == 1 ? "" : "s", st->elapsed_ms / 1e3);
  if (!ok)
    fprintf(f, "(The lead could not be read back from the store.) ");
  else if (!lead.labelled)
    fprintf(f, "No call had a progress label, so no lead was measured. ");
  else {
    /* argument bytes when the events counted them (deltas), else bytes of the stream */
    int arg = !isnan(lead.bytes_p50);
    double b50 = arg ? lead.bytes_p50 : lead.stream_p50, b90 = arg ? lead.bytes_p90 : lead.stream_p90;
    if (isnan(lead.ms_p50))
      fprintf(f, "The progress label came %.0f %s bytes (p90 %.0f) before the complete "
                 "arguments (median over the %zu of %zu calls with a label; no times: --no-time). ",
              b50, arg ? "argument" : "stream", b90, lead.labelled, lead.calls);
    else
      fprintf(f, "The progress label came %.1f ms (p90 %.1f ms) and %.0f %s bytes (p90 %.0f) "
                 "before the complete arguments (median over the %zu of %zu calls with a label). ",
              lead.ms_p50, lead.ms_p90, b50, arg ? "argument" : "stream", b90, lead.labelled,
              lead.calls);
  }
  fprintf(f, "Thread %s is stored in %s.\n", thread, ts_store_path(store));
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

  rc = 1;
  char why[512] = "";
  ts_store *store = NULL, *dstore = NULL, *astore = NULL;
  ts_registry *reg = ts_registry_new();
  ts_demo_tools *demo = NULL;
  ts_tool_defs progress = {0};
  ts_defs *defs = ts_defs_new();
  const char *drive_agent = NULL, *drive_prompt = NULL;
  ts_pub *pub = NULL;
  ts_cli_endpoint *endpoint = NULL;
  live_screen live;
  int live_on = 0;

  char wsbuf[TS_STORE_PATH_MAX], parent_row[TS_THREAD_ID_MAX + 1];
  if (ts_store_open(a.data_dir, &store, why, sizeof why) ||
      ts_store_open(a.data_dir, &dstore, why, sizeof why)) {
    fprintf(stderr, "toolstream run: cannot open the store: %s\n", why);
    goto out;
  }
  row_out row = {parent_row, wsbuf};
  wsbuf[0] = '\0';
  if (a.resume && ts_store_thread_get(store, com.thread, grab_row, &row) == 1 &&
      !a.workspace_given && wsbuf[0])
    a.workspace = wsbuf; /* the thread's own */
  if (a.parent && ts_store_thread_exists(store, a.parent) != 1) {
    fprintf(stderr, "toolstream run: --parent: no thread %s in %s\n", a.parent,
            ts_store_path(store));
    rc = 2;
    goto out;
  }
  if (a.parent && !a.workspace_given) { /* a child's filesystem is its own */
    snprintf(wsbuf, sizeof wsbuf, "%s", ts_store_path(store));
    char *slash = strrchr(wsbuf, '/');
    if (slash) *slash = '\0';
    size_t wl = strlen(wsbuf);
    snprintf(wsbuf + wl, sizeof wsbuf - wl, "/workspaces");
    mkdir(wsbuf, 0700);
    wl = strlen(wsbuf);
    snprintf(wsbuf + wl, sizeof wsbuf - wl, "/%s", com.thread);
    a.workspace = wsbuf;
  }
  mkdir(a.workspace, 0755);
  char cwd[PATH_MAX], wsabs[sizeof cwd + sizeof wsbuf + 2]; /* recorded: absolute */
  if (a.workspace[0] != '/' && getcwd(cwd, sizeof cwd))
    snprintf(wsabs, sizeof wsabs, "%s/%s", cwd, a.workspace);
  else
    snprintf(wsabs, sizeof wsabs, "%s", a.workspace);
  if (!reg || !defs || ts_demo_tools_add(reg, a.workspace, &demo, why, sizeof why)) {
    fprintf(stderr, "toolstream run: %s\n", why[0] ? why : "out of memory");
    goto out;
  }
  ts_jstools_env env = {.vars = a.vars, .n_vars = a.nvars, .defs = defs};
  if ((rc = ts_cli_tools_registry(&com, reg, &env)) ||
      (rc = ts_cli_defs_load(&com, reg, &env, defs, &drive_agent, &drive_prompt)) ||
      (rc = ts_cli_progress_overrides(&com, &progress)))
    goto out;
  for (size_t i = 0; i < a.nvars; i++) { /* --var: text only, never a secret */
    char name[TS_STORE_VAR_NAME_MAX + 2];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(a.vars[i], "="), a.vars[i]);
    if (ts_thread_env_is_secret(reg, name)) {
      fprintf(stderr, "toolstream run: --var %s: a tool declares %s a secret, and a command "
                      "line is visible to other users; use --env-file FILE or 'toolstream env "
                      "set THREAD %s'\n", name, name, name);
      rc = 2;
      goto out;
    }
  }
  rc = 1;
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
  if (a.hm.url && a.hm.provider && a.hm.provider->sigv4_service) { /* what signs Bedrock's */
    const char *aws[] = {getenv("AWS_SECRET_ACCESS_KEY"), getenv("AWS_SESSION_TOKEN")};
    for (size_t i = 0; i < 2; i++)
      if (aws[i] && nfound < TS_SINK_MAX_SECRETS) found[nfound++] = aws[i];
  }
  nfound += ts_jstools_secrets(reg, found + nfound, TS_SINK_MAX_SECRETS - nfound);
  for (size_t i = 0; i < nfound; i++)
    if (strlen(found[i]) >= TS_SINK_SECRET_MIN) secrets[nsecrets++] = found[i];
  /* text variables may also come from the process environment (docs/variables.md) */
  ts_var_layers layers = {.process_env = 1};
  run_env renv = {&a, reg, &layers, 0};
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
      .parent = a.parent,
      .workspace = wsabs,
      .layers = &layers,
      .prepare = prepare_env,
      .prepare_user = &renv,
      .defs = ts_defs_prompt_count(defs) || ts_defs_agent_count(defs) ? defs : NULL,
      .agent = drive_agent,
      .prompt_name = drive_prompt,
  };
  ts_agent_stats st;
  uint64_t seq0 = 0; /* the summary covers this run's events only (a resume continues) */
  if (a.resume) ts_store_last_event_seq(store, com.thread, &seq0);
  int arc = ts_agent_run(&ac, &st, why, sizeof why);
  if (arc) {
    if (why[0]) fprintf(stderr, "toolstream run: %s\n", why); /* else prepare said why */
    rc = renv.status ? renv.status : arc == TS_E_STORE_THREAD_EXISTS ? 2 : 1;
    goto out;
  }
  rc = 0;
  FILE *sum = a.json ? stderr : stdout;
  print_summary(sum, store, com.thread, seq0, &st);
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
  ts_defs_free(defs);
  return rc;
}
