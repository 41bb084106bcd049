/*
 * run.c: `toolstream run`: the agent loop on the replay backend.
 *
 * A thread's turns: the model's streamed reply (here, a recorded SSE file per turn,
 * paced like a model) goes through the tap, so tool_call_started goes out early; the
 * dispatcher runs the calls in index order as their arguments complete and commits each
 * result; the turn's assistant message is stored; and this repeats until the model ends a
 * turn without tool calls. Events are printed (live view on a terminal, JSON lines
 * otherwise), published with --pub, and stored with the thread.
 *
 * Two store connections: the dispatcher's (its worker thread) and the loop's (messages
 * and events, under the event mutex), because one SQLite connection serves one thread.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>

#include "base/thread_id.h"
#include "events/bus_pub.h"
#include "agent/conversation.h"
#include "net/http_client.h"
#include "js/jstools.h"
#include "cli/cli.h"
#include "tools/demo_tools.h"
#include "tools/dispatch.h"
#include "events/event.h"
#include "cli/live.h"
#include "store/store.h"
#include "stream/tap.h"
#include "stream/tool_defs.h"
#include "tools/registry.h"

static const char run_usage[] =
    "usage: toolstream run [options] [PROMPT]\n"
    "\n"
    "Runs a thread: the model's streamed reply goes through the tap (tool_call_started\n"
    "goes out early), the calls run in order as their arguments complete, each result is\n"
    "committed to the store, and turns repeat until the model stops calling tools.\n"
    "\n"
    "options:\n"
    "  --model-url URL      the model: an OpenAI-compatible Chat Completions endpoint or\n"
    "                       Anthropic Messages (https://api.openai.com/v1,\n"
    "                       http://localhost:11434/v1, https://api.anthropic.com/v1, or\n"
    "                       the full .../chat/completions or .../messages URL)\n"
    "  --model NAME         the model's name (required with --model-url)\n"
    "  --provider P         openai or anthropic (default: anthropic for anthropic.com URLs)\n"
    "  --api-key-env VAR    the environment variable holding the API key (default\n"
    "                       OPENAI_API_KEY or ANTHROPIC_API_KEY; never a flag, never printed)\n"
    "  --ca-file FILE       trust these CA certificates instead of the system's\n"
    "  --max-tokens N       Anthropic's max_tokens (default 4096)\n"
    "  --model-replay DIR   the model: recorded SSE files, one per turn, in name order\n"
    "                       (turn-1.sse, turn-2.sse, ...; format detected as in tap)\n"
    "  --rate N             replay pace in SSE events per second (default 100)\n"
    "  --thread ID          the thread (default: a new th_... id)\n"
    "  --resume             continue an existing thread (interrupted calls are resolved)\n"
    "  --tools FILE         tool definitions (JSON array, as for tap), or a JavaScript\n"
    "                       tool module (FILE.js: defineTool, docs/jstools.md); repeatable;\n"
    "                       more .js files may follow one --tools (--tools tools/*.js)\n"
    "  --var NAME=VALUE     a variable for JavaScript tools (wins over the environment);\n"
    "                       repeatable\n"
    "  --workspace DIR      the demo tools' directory (default ./workspace, created)\n"
    "  --data-dir DIR       where the store lives (default $TOOLSTREAM_DATA_DIR,\n"
    "                       $XDG_DATA_HOME/toolstream, ~/.local/share/toolstream)\n"
    "  --max-turns N        stop after N turns (default 16)\n"
    "  --json               JSON events on standard output even on a terminal\n"
    "  --pub URL, --replay URL   also publish the events (as for tap)\n"
    "  -h, --help           this help\n"
    "\n"
    "Built-in tools: write_file (progress argument: description), read_file, list_dir,\n"
    "confined to the workspace. Ctrl-C stops cleanly: the running tool is told to stop,\n"
    "finished results stay committed, and --thread ID --resume continues.\n"
    "Exit status: 0 when the model ended its turn; 1 on an error, interruption or\n"
    "--max-turns (one line on standard error); 2 for usage errors.\n";

static volatile sig_atomic_t interrupted;
static void on_sigint(int sig) {
  (void)sig;
  interrupted = 1;
}

typedef struct {
  pthread_mutex_t mu;
  char thread[128];
  uint64_t seq;
  ts_buf line;
  int json;
  ts_live live;
  ts_pub *pub;
  ts_store *store; /* the loop's connection: messages and events */
  ts_dispatch *disp;
  const ts_tool_defs *defs;
  /* the turn being streamed */
  ts_buf text;
  ts_buf calls; /* JSON array items of the assistant's tool calls */
  uint32_t ncalls;
  double t0;
  /* for the summary */
  uint32_t total_calls;
  double early_ms_sum;
  uint64_t early_bytes_sum;
  double started_ms[TS_MS_MAX_CALLS];
  uint64_t started_off[TS_MS_MAX_CALLS];
  int store_failed;
} run_state;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Every event goes through here: seq, encode, print or draw, publish, store. */
static void emit(run_state *r, const ts_tap_event *e) {
  pthread_mutex_lock(&r->mu);
  ts_event ev = {.thread = {r->thread, strlen(r->thread)}, .seq = ++r->seq, .body = *e};
  ts_buf_reset(&r->line);
  if (ts_event_encode(&ev, &r->line) == TS_E_OK) {
    if (r->json) {
      fwrite(r->line.p, 1, r->line.len, stdout);
      putchar('\n');
      fflush(stdout);
    } else {
      ts_live_event(&r->live, r->line.p, r->line.len);
    }
    if (r->pub) ts_pub_send(r->pub, r->thread, strlen(r->thread), ev.seq, r->line.p, r->line.len);
    if (ts_store_append_event(r->store, r->thread, ev.seq, r->line.p, r->line.len))
      r->store_failed = 1;
  }
  pthread_mutex_unlock(&r->mu);
}

static void on_dispatch_event(void *user, const ts_tap_event *e) { emit(user, e); }

static int on_tap_event(void *user, const ts_tap_event *e) {
  run_state *r = user;
  if (e->is_call && e->index < TS_MS_MAX_CALLS) {
    if (e->type == TS_TAP_TOOL_CALL_STARTED) {
      r->started_ms[e->index] = now_ms();
      r->started_off[e->index] = e->offset;
    } else if (e->type == TS_TAP_TOOL_CALL_READY) {
      r->early_ms_sum += now_ms() - r->started_ms[e->index];
      r->early_bytes_sum += e->offset - r->started_off[e->index];
    }
  }
  if (e->type == TS_TAP_TEXT_DELTA) ts_buf_append(&r->text, e->text.p, e->text.len);
  if (e->type == TS_TAP_TOOL_CALL_READY || e->type == TS_TAP_TOOL_CALL_ERROR) {
    if (r->ncalls++) ts_buf_putc(&r->calls, ',');
    ts_buf_puts(&r->calls, "{\"id\":");
    ts_buf_append_json_string(&r->calls, e->call_id.p, e->call_id.len);
    ts_buf_puts(&r->calls, ",\"name\":");
    ts_buf_append_json_string(&r->calls, e->tool.p, e->tool.len);
    ts_buf_puts(&r->calls, ",\"arguments\":");
    if (e->type == TS_TAP_TOOL_CALL_READY)
      ts_buf_append(&r->calls, e->arguments.p, e->arguments.len);
    else
      ts_buf_puts(&r->calls, "null");
    ts_buf_putc(&r->calls, '}');
  }
  emit(r, e);
  ts_dispatch_tap_event(r->disp, e);
  return interrupted;
}

static const char *progress_of(void *user, const char *tool, size_t len, size_t *arg_len) {
  const ts_registry *reg = user;
  const ts_tool *t = ts_registry_find(reg, tool, len);
  const char *a = t ? ts_tool_progress_arg(t) : NULL;
  if (a) *arg_len = strlen(a);
  return a;
}

/* The bus's replay archive: events older than the publisher's memory come from the store
 * (its own connection: the replay service calls this from its thread). */
static int store_archive(void *user, const char *thread, size_t thread_len, uint64_t after,
                         size_t max, int (*put)(void *, uint64_t, const char *, size_t),
                         void *ctx, uint64_t *newest) {
  char th[300];
  *newest = 0;
  if (thread_len >= sizeof th) return 0;
  memcpy(th, thread, thread_len);
  th[thread_len] = '\0';
  if (ts_store_last_event_seq(user, th, newest) != TS_E_OK) *newest = 0;
  return ts_store_events_after(user, th, after, max, put, ctx);
}

static int cmp_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The n-th (0-based) *.sse file of dir in name order, into path; 0 if found. */
static int turn_file(const char *dir, uint32_t n, char *path, size_t cap) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  char *names[1024];
  size_t k = 0;
  struct dirent *e;
  while ((e = readdir(d)) && k < 1024) {
    size_t l = strlen(e->d_name);
    if (l > 4 && !strcmp(e->d_name + l - 4, ".sse")) names[k++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, k, sizeof names[0], cmp_name);
  int rc = -1;
  if (n < k) {
    snprintf(path, cap, "%s/%s", dir, names[n]);
    rc = 0;
  }
  for (size_t i = 0; i < k; i++) free(names[i]);
  return rc;
}

static int count_assistant(void *user, const ts_store_message *m) {
  if (m->role == TS_STORE_ASSISTANT) (*(uint32_t *)user)++;
  return 0;
}

typedef struct {
  ts_tap *tap;
  char *scratch;
  size_t cap;
} http_feed;

/* Each chunk as it arrives: copied (the tap decodes JSON strings in place) and fed. */
static int on_http_chunk(void *user, const char *data, size_t len) {
  http_feed *f = user;
  if (len > f->cap) {
    char *p = realloc(f->scratch, len);
    if (!p) return 1;
    f->scratch = p;
    f->cap = len;
  }
  memcpy(f->scratch, data, len);
  ts_tap_feed(f->tap, f->scratch, len);
  return interrupted;
}

typedef struct {
  const char *url, *model, *key_env, *ca_file;
  ts_provider provider;
  unsigned max_tokens;
} http_model;

/* One model turn over HTTP: the stored conversation as the request, the streamed reply
 * through the tap. Returns 0, or -1 after emitting a stream_error event (why filled). */
static int http_turn(run_state *st, const http_model *m, const ts_registry *reg, ts_tap *tap,
                     char *why, size_t why_cap) {
  ts_buf body;
  ts_buf_init(&body, (size_t)256 << 20);
  int rc = ts_conversation_request(st->store, st->thread, reg, m->provider, m->model,
                                   m->max_tokens, &body);
  if (rc) {
    snprintf(why, why_cap, "cannot build the request: %s", ts_err_message(rc));
    ts_buf_fini(&body);
    return -1;
  }
  /* A base URL gets the provider's path; a query string stays at the end. */
  char url[2048];
  const char *suffix = m->provider == TS_PROVIDER_ANTHROPIC ? "/messages" : "/chat/completions";
  const char *q = strchr(m->url, '?');
  size_t ul = q ? (size_t)(q - m->url) : strlen(m->url), sl = strlen(suffix);
  if (ul >= sl && !strncmp(m->url + ul - sl, suffix, sl))
    snprintf(url, sizeof url, "%s", m->url);
  else
    snprintf(url, sizeof url, "%.*s%s%s%s", (int)ul, m->url, (ul && m->url[ul - 1] == '/') ? "" : "/",
             suffix + 1, q ? q : "");
  const char *key = getenv(m->key_env);
  char auth[4096] = "";
  ts_http_header h[4];
  size_t nh = 0;
  h[nh++] = (ts_http_header){"Content-Type", "application/json"};
  h[nh++] = (ts_http_header){"Accept", "text/event-stream"};
  if (key && *key) {
    if (m->provider == TS_PROVIDER_ANTHROPIC) {
      h[nh++] = (ts_http_header){"x-api-key", key};
    } else {
      snprintf(auth, sizeof auth, "Bearer %s", key);
      h[nh++] = (ts_http_header){"Authorization", auth};
    }
  }
  if (m->provider == TS_PROVIDER_ANTHROPIC) h[nh++] = (ts_http_header){"anthropic-version", "2023-06-01"};
  ts_http_request req = {.url = url, .headers = h, .n_headers = nh, .body = body.p,
                         .body_len = body.len, .ca_file = m->ca_file, .cancel = &interrupted};
  http_feed f = {tap, NULL, 0};
  ts_http_response_info info;
  rc = ts_http_post_stream(&req, on_http_chunk, &f, &info, why, why_cap);
  memset(auth, 0, sizeof auth); /* the key does not linger in this frame */
  free(f.scratch);
  ts_buf_fini(&body);
  if (rc && !interrupted) {
    ts_tap_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = TS_TAP_STREAM_ERROR;
    ev.code = rc;
    ev.offset = ts_tap_offset(tap);
    ev.error = (ts_view){why, strlen(why)};
    emit(st, &ev);
    return -1;
  }
  return 0;
}

/* Plays one recorded turn through the tap, paced at `rate` SSE events per second. */
static int play_turn(const char *path, double rate, ts_tap *tap) {
  size_t len;
  char *buf = ts_cli_read_file(path, (size_t)256 << 20, &len);
  if (!buf) return -1;
  double t0 = now_ms();
  size_t at = 0, events = 0;
  while (at < len && !interrupted) {
    /* the next event: through its blank line (LF LF, CRLF CRLF or CR CR) */
    size_t end = at;
    while (end < len) {
      if (buf[end] == '\n' && end + 1 < len && buf[end + 1] == '\n') { end += 2; break; }
      if (buf[end] == '\r' && end + 3 < len && !memcmp(buf + end, "\r\n\r\n", 4)) { end += 4; break; }
      end++;
    }
    double due = (double)events * 1e3 / rate - (now_ms() - t0);
    if (due > 0) {
      struct timespec ts = {(time_t)(due / 1e3), (long)((due - (double)(time_t)(due / 1e3) * 1e3) * 1e6)};
      nanosleep(&ts, NULL);
    }
    ts_tap_feed(tap, buf + at, end - at);
    at = end;
    events++;
  }
  ts_tap_finish(tap);
  free(buf);
  return 0;
}

int ts_cli_run(int argc, char **argv) {
  const char *replay_dir = NULL, *workspace = "workspace", *data_dir = NULL, *thread = NULL;
  const char *pub_url = NULL, *replay_url = NULL, *prompt = NULL, *val;
  http_model hm = {0};
  const char *provider = NULL;
  const char *tools_files[16];
  const char *vars[64];
  size_t nvars = 0;
  int ntools_files = 0, resume = 0, json = !isatty(STDOUT_FILENO), r;
  uint64_t max_turns = 16, rate_n = 100;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(run_usage, stdout);
      return 0;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--model-replay", &val))) {
      if (r < 0) return 2;
      replay_dir = val;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--model-url", &val))) {
      if (r < 0) return 2;
      hm.url = val;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--model", &val))) {
      if (r < 0) return 2;
      hm.model = val;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--provider", &val))) {
      if (r < 0) return 2;
      provider = val;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--api-key-env", &val))) {
      if (r < 0) return 2;
      hm.key_env = val;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--ca-file", &val))) {
      if (r < 0) return 2;
      hm.ca_file = val;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--max-tokens", &val))) {
      if (r < 0) return 2;
      uint64_t n;
      if (ts_cli_parse_size(val, &n) || n == 0 || n > 1000000) {
        fprintf(stderr, "toolstream run: --max-tokens wants a number from 1, got '%s'\n", val);
        return 2;
      }
      hm.max_tokens = (unsigned)n;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--workspace", &val))) {
      if (r < 0) return 2;
      workspace = val;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--data-dir", &val))) {
      if (r < 0) return 2;
      data_dir = val;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--thread", &val))) {
      if (r < 0) return 2;
      thread = val;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--pub", &val))) {
      if (r < 0) return 2;
      pub_url = val;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--replay", &val))) {
      if (r < 0) return 2;
      replay_url = val;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--tools", &val))) {
      if (r < 0) return 2;
      if (ntools_files == 16) {
        fprintf(stderr, "toolstream run: at most 16 --tools files\n");
        return 2;
      }
      tools_files[ntools_files++] = val;
      /* --tools tools/X.js Y.js: the shell expands a glob into more .js arguments */
      while (i + 1 < argc && ts_jstools_is_module(argv[i + 1]) && ntools_files < 16)
        tools_files[ntools_files++] = argv[++i];
    } else if ((r = ts_cli_opt(argc, argv, &i, "--var", &val))) {
      if (r < 0) return 2;
      if (!strchr(val, '=') || val[0] == '=' || nvars == 64) {
        fprintf(stderr, "toolstream run: --var wants NAME=VALUE (at most 64), got '%s'\n", val);
        return 2;
      }
      vars[nvars++] = val;
    } else if ((r = ts_cli_opt(argc, argv, &i, "--max-turns", &val)) ||
               (r = ts_cli_opt(argc, argv, &i, "--rate", &val))) {
      if (r < 0) return 2;
      const char *opt = strchr(argv[i], '=') && argv[i][0] == '-' ? argv[i] : argv[i - 1];
      uint64_t n;
      if (ts_cli_parse_size(val, &n) || n == 0 || n > 10000000) {
        fprintf(stderr, "toolstream run: %.*s wants a number from 1, got '%s'\n",
                (int)strcspn(opt, "="), opt, val);
        return 2;
      }
      if (!strncmp(opt, "--max-turns", 11)) max_turns = n;
      else rate_n = n;
    } else if (!strcmp(a, "--resume")) {
      resume = 1;
    } else if (!strcmp(a, "--json")) {
      json = 1;
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "toolstream run: unknown option '%s' (try --help)\n", a);
      return 2;
    } else if (prompt) {
      fprintf(stderr, "toolstream run: one prompt only (quote it)\n");
      return 2;
    } else {
      prompt = a;
    }
  }
  if (!replay_dir == !hm.url) {
    fprintf(stderr, "toolstream run: which model? --model-url URL or --model-replay DIR (one; see "
                    "--help)\n");
    return 2;
  }
  if (hm.url) {
    if (!hm.model) {
      fprintf(stderr, "toolstream run: --model-url needs --model NAME\n");
      return 2;
    }
    if (provider && strcmp(provider, "openai") && strcmp(provider, "anthropic")) {
      fprintf(stderr, "toolstream run: --provider is openai or anthropic, not '%s'\n", provider);
      return 2;
    }
    hm.provider = provider ? (!strcmp(provider, "anthropic") ? TS_PROVIDER_ANTHROPIC
                                                             : TS_PROVIDER_OPENAI)
                           : (strstr(hm.url, "anthropic.com") ? TS_PROVIDER_ANTHROPIC
                                                              : TS_PROVIDER_OPENAI);
    if (!hm.key_env)
      hm.key_env = hm.provider == TS_PROVIDER_ANTHROPIC ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY";
    const char *key = getenv(hm.key_env);
    int local = strstr(hm.url, "://localhost") || strstr(hm.url, "://127.") ||
                strstr(hm.url, "://[::1]");
    if ((!key || !*key) && !local) {
      fprintf(stderr, "toolstream run: set %s to the API key (it is read from the environment "
                      "only)\n", hm.key_env);
      return 2;
    }
  }
  if (resume && !thread) {
    fprintf(stderr, "toolstream run: --resume needs --thread ID\n");
    return 2;
  }
  if (replay_url && !pub_url) {
    fprintf(stderr, "toolstream run: --replay needs --pub\n");
    return 2;
  }

  int rc = 1;
  char why[512] = "";
  run_state st;
  memset(&st, 0, sizeof st);
  pthread_mutex_init(&st.mu, NULL);
  st.json = json;
  ts_buf_init(&st.line, (size_t)64 << 20);
  ts_buf_init(&st.text, (size_t)16 << 20);
  ts_buf_init(&st.calls, (size_t)64 << 20);
  ts_store *dstore = NULL, *astore = NULL;
  ts_registry *reg = ts_registry_new();
  ts_demo_tools *demo = NULL;
  ts_tool_defs defs = {0};
  if (thread) snprintf(st.thread, sizeof st.thread, "%s", thread);
  else ts_thread_id_new(st.thread, sizeof st.thread);

  mkdir(workspace, 0755);
  if (!reg || ts_demo_tools_add(reg, workspace, &demo, why, sizeof why)) {
    fprintf(stderr, "toolstream run: %s\n", why[0] ? why : "out of memory");
    goto out;
  }
  for (int i = 0; i < ntools_files; i++) {
    if (ts_jstools_is_module(tools_files[i])) {
      ts_jstools_env env = {.vars = vars, .n_vars = nvars};
      if (ts_jstools_load(reg, tools_files[i], &env, why, sizeof why)) {
        fprintf(stderr, "toolstream run: %s\n", why);
        rc = 2;
        goto out;
      }
      continue;
    }
    size_t len;
    char *text = ts_cli_read_file(tools_files[i], (size_t)64 << 20, &len);
    if (!text || ts_tool_defs_parse(&defs, text, len, why, sizeof why) ||
        ts_registry_add_defs(reg, &defs, why, sizeof why)) {
      fprintf(stderr, "toolstream run: %s: %s\n", tools_files[i], text ? why : strerror(errno));
      free(text);
      rc = 2;
      goto out;
    }
    free(text);
    ts_tool_defs_free(&defs);
  }
  if (ts_store_open(data_dir, &st.store, why, sizeof why) ||
      ts_store_open(data_dir, &dstore, why, sizeof why)) {
    fprintf(stderr, "toolstream run: cannot open the store: %s\n", why);
    goto out;
  }
  int exists = ts_store_thread_exists(st.store, st.thread);
  if (resume && exists != 1) {
    fprintf(stderr, "toolstream run: no thread %s in %s\n", st.thread, ts_store_path(st.store));
    goto out;
  }
  if (!resume && exists == 1) {
    fprintf(stderr, "toolstream run: thread %s exists; add --resume to continue it\n", st.thread);
    rc = 2;
    goto out;
  }
  if (!resume && ts_store_thread_create(st.store, st.thread, NULL)) {
    fprintf(stderr, "toolstream run: %s\n", ts_store_errmsg(st.store));
    goto out;
  }
  ts_store_last_event_seq(st.store, st.thread, &st.seq);
  ts_pub_opts popts;
  memset(&popts, 0, sizeof popts);
  if (replay_url && ts_store_open(data_dir, &astore, why, sizeof why) == TS_E_OK) {
    popts.archive = store_archive; /* replay serves any event ever stored, not only recent ones */
    popts.archive_user = astore;
  }
  if (pub_url && ts_pub_open(pub_url, replay_url, &popts, &st.pub)) {
    fprintf(stderr, "toolstream run: cannot publish on %s: %s\n", pub_url, ts_bus_last_error());
    goto out;
  }
  if (!json && ts_live_init(&st.live)) goto out;

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);

  uint32_t turn = 0;
  ts_store_messages(st.store, st.thread, 0, count_assistant, &turn);
  if (resume) {
    uint32_t resolved = 0;
    if (ts_dispatch_resume(dstore, reg, st.thread, on_dispatch_event, &st, &resolved)) {
      fprintf(stderr, "toolstream run: resume failed: %s\n", ts_store_errmsg(dstore));
      goto out;
    }
  }
  if (prompt && ts_store_append_message(st.store, st.thread, TS_STORE_USER, prompt,
                                        strlen(prompt), NULL, NULL, 0, NULL)) {
    fprintf(stderr, "toolstream run: %s\n", ts_store_errmsg(st.store));
    goto out;
  }
  st.t0 = now_ms();
  uint32_t turns_run = 0;
  for (;;) {
    if (turns_run >= max_turns) {
      fprintf(stderr, "toolstream run: stopped after --max-turns %llu; --resume continues\n",
              (unsigned long long)max_turns);
      goto out;
    }
    char path[4096] = "";
    if (replay_dir && turn_file(replay_dir, turn, path, sizeof path)) {
      fprintf(stderr, "toolstream run: no recorded turn %u in %s\n", turn + 1, replay_dir);
      goto out;
    }
    ts_buf_reset(&st.text);
    ts_buf_reset(&st.calls);
    st.ncalls = 0;
    ts_dispatch_config dc = {dstore, reg, st.thread, turn + 1, on_dispatch_event, &st, 1};
    st.disp = ts_dispatch_new(&dc);
    ts_tap_config tc = {.progress_arg = progress_of, .progress_user = reg, .text = 1};
    ts_tap *tap = st.disp ? ts_tap_new(&tc, on_tap_event, &st) : NULL;
    if (!tap) {
      fprintf(stderr, "toolstream run: out of memory\n");
      ts_dispatch_free(st.disp);
      goto out;
    }
    char herr[512] = "";
    int played = replay_dir ? play_turn(path, (double)rate_n, tap)
                            : http_turn(&st, &hm, reg, tap, herr, sizeof herr);
    if (!replay_dir) ts_tap_finish(tap);
    int failed = ts_tap_failed(tap);
    ts_tap_free(tap);
    if (interrupted) ts_dispatch_cancel(st.disp);
    int drc = ts_dispatch_finish(st.disp);
    ts_dispatch_free(st.disp);
    st.disp = NULL;
    /* the assistant's message of this turn: its text and its calls */
    ts_buf msg;
    ts_buf_init(&msg, (size_t)96 << 20);
    ts_buf_puts(&msg, "{\"turn\":");
    ts_buf_append_u64(&msg, turn + 1);
    ts_buf_puts(&msg, ",\"text\":");
    ts_buf_append_json_string(&msg, st.text.p ? st.text.p : "", st.text.len);
    ts_buf_puts(&msg, ",\"tool_calls\":[");
    ts_buf_append(&msg, st.calls.p ? st.calls.p : "", st.calls.len);
    ts_buf_puts(&msg, "]}");
    pthread_mutex_lock(&st.mu);
    int mrc = ts_store_append_message(st.store, st.thread, TS_STORE_ASSISTANT, msg.p, msg.len,
                                      NULL, NULL, 0, NULL);
    pthread_mutex_unlock(&st.mu);
    ts_buf_fini(&msg);
    st.total_calls += st.ncalls;
    turn++;
    turns_run++;
    if (interrupted) {
      fprintf(stderr, "toolstream run: interrupted; finished results are stored; continue with "
                      "--thread %s --resume\n", st.thread);
      goto out;
    }
    if (played) {
      if (replay_dir)
        fprintf(stderr, "toolstream run: cannot read %s: %s\n", path, strerror(errno));
      else
        fprintf(stderr, "toolstream run: the model request failed: %s\n", herr);
      goto out;
    }
    if (drc || mrc || st.store_failed) {
      fprintf(stderr, "toolstream run: the store failed: %s\n", ts_store_errmsg(drc ? dstore : st.store));
      goto out;
    }
    if (failed) {
      fprintf(stderr, "toolstream run: the model's stream for turn %u ended in error (see the "
                      "stream_error event)\n", turn);
      goto out;
    }
    if (st.ncalls == 0) break; /* the model ended its turn without tool calls */
  }
  rc = 0;
  FILE *sum = json ? stderr : stdout;
  fprintf(sum,
          "\n%u turn%s, %u tool call%s in %.2f s. tool_call_started came on average %.1f ms and "
          "%llu bytes before the call's complete arguments. Thread %s is stored in %s.\n",
          turns_run, turns_run == 1 ? "" : "s", st.total_calls, st.total_calls == 1 ? "" : "s",
          (now_ms() - st.t0) / 1e3, st.total_calls ? st.early_ms_sum / st.total_calls : 0.0,
          (unsigned long long)(st.total_calls ? st.early_bytes_sum / st.total_calls : 0), st.thread,
          ts_store_path(st.store));
out:
  if (!json && st.live.jv.tok) ts_live_fini(&st.live);
  ts_pub_close(st.pub); /* before the archive's store: its replay thread may be using it */
  ts_store_close(astore);
  ts_store_close(st.store);
  ts_store_close(dstore);
  ts_registry_free(reg);
  ts_demo_tools_free(demo);
  ts_tool_defs_free(&defs);
  ts_buf_fini(&st.line);
  ts_buf_fini(&st.text);
  ts_buf_fini(&st.calls);
  return rc;
}
