/*
 * compose_test.c: running prompts and agents (agent/compose.h) through the agent loop,
 * on recorded turns, one directory per prompt (agent/replay_model.h).
 *
 * Definitions are loaded the way users write them (JSON, tools/definitions.h), the tools
 * are small C tools, and every check reads the store: the thread tree, the messages, the
 * call records and the stored events. A recording backend wraps the replay backend and
 * keeps, per thread, the request body that turn would have sent (Chat Completions), so
 * the system text, the history a child sees and a dual_ai side's view are checked on the
 * bytes an HTTP model would get.
 *
 * Rows: the spec's first table (a function tool, a prompt tool, an agent tool: handoff
 * and dual_ai); each SubpromptConfig field and its default; includeChat /
 * includePastTools; a dual_ai session ended by its stop tool and by maxSessionTurns;
 * replay per prompt directory; resume of a parent SIGKILLed while its child runs.
 */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/compose.h"
#include "agent/conversation.h"
#include "agent/replay_model.h"
#include "agent/run.h"
#include "store/store.h"
#include "stream/provider.h"
#include "support/crash_tools.h"
#include "support/park_stop.h"
#include "support/runner.h"
#include "support/sb.h"
#include "support/tempdir.h"
#include "support/test_support.h"
#include "tools/definitions.h"
#include "tools/demo_tools.h"
#include "tools/registry.h"
#include "tools/variables.h"

static char dir[96], rec[160], ws[160];

/* ---- recordings ----------------------------------------------------------------------- */

/* DIR/<prompt>/turn-N.sse: a text reply. */
static void turn_text(const char *prompt, int n, const char *text) {
  char d[256], path[300], buf[4096];
  snprintf(d, sizeof d, "%s/%s", rec, prompt);
  mkdir(d, 0755);
  snprintf(path, sizeof path, "%s/turn-%d.sse", d, n);
  snprintf(buf, sizeof buf,
           "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"%s\"}}]}\n\n"
           "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
           "data: [DONE]\n\n",
           text);
  ts_test_put(path, buf);
}

/* DIR/<prompt>/turn-N.sse: one call of `tool` with `args` (JSON, escaped for a JSON
 * string already: write \\\" for a quote). */
static void turn_call(const char *prompt, int n, const char *tool, const char *args) {
  char d[256], path[300], buf[8192];
  snprintf(d, sizeof d, "%s/%s", rec, prompt);
  mkdir(d, 0755);
  snprintf(path, sizeof path, "%s/turn-%d.sse", d, n);
  snprintf(buf, sizeof buf,
           "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
           "\"id\":\"c_%s_%d\",\"type\":\"function\",\"function\":{\"name\":\"%s\","
           "\"arguments\":\"%s\"}}]}}]}\n\n"
           "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
           "data: [DONE]\n\n",
           prompt, n, tool, args);
  ts_test_put(path, buf);
}

/* ---- tools -------------------------------------------------------------------------------- */

static void echo_exec(void *user, const ts_call_info *call, const char *args, size_t len,
                      ts_tool_result *out) {
  (void)user, (void)call;
  ts_tool_result_json(out, args, len);
}

static void fail_exec(void *user, const ts_call_info *call, const char *args, size_t len,
                      ts_tool_result *out) {
  (void)user, (void)call, (void)args, (void)len;
  ts_tool_result_error(out, "fail always fails");
}

/* Marks that it started (a file per run), then waits until killed or cancelled. */
static void hang_exec(void *user, const ts_call_info *call, const char *args, size_t len,
                      ts_tool_result *out) {
  (void)user, (void)args, (void)len;
  char path[300];
  snprintf(path, sizeof path, "%s/hang.log", dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd >= 0) {
    ssize_t w = write(fd, "x", 1);
    (void)w;
    fsync(fd);
    close(fd);
  }
  while (!(call->cancel && *call->cancel)) {
    struct timespec p = {0, 2000000L};
    nanosleep(&p, NULL);
  }
  ts_tool_result_error(out, "cancelled");
}

/* Returns the value of its variable COLOR as the call resolves it (or "unset"). */
static const ts_registry *base_reg;
static void show_var_exec(void *user, const ts_call_info *call, const char *args, size_t len,
                          ts_tool_result *out) {
  (void)args, (void)len;
  const char *v = NULL;
  size_t n = 0;
  char why[256];
  const ts_tool *self = ts_registry_find(base_reg, user, strlen(user));
  int r = call->env_get ? call->env_get(call->env_ctx, self, "COLOR", &v, &n, why, sizeof why)
                        : 0;
  if (r == 1) ts_tool_result_string(out, v, n);
  else ts_tool_result_string(out, "unset", 5);
}

static park_greet greet_tool; /* support/park_stop.h */

static ts_registry *tools(void) {
  ts_registry *r = ts_registry_new();
  char why[256];
  ts_tool_spec e = {.name = "echo", .description = "echoes", .execute = echo_exec};
  ts_tool_spec f = {.name = "fail", .description = "fails", .execute = fail_exec};
  ts_tool_spec o = {.name = "other", .description = "not in any prompt", .execute = echo_exec};
  ts_tool_spec s = {.name = "agree", .description = "ends the session", .execute = echo_exec};
  ts_tool_spec g = {.name = "give_up", .description = "fails the session", .execute = echo_exec};
  ts_tool_spec h = {.name = "hang", .description = "waits", .execute = hang_exec};
  ck_assert_int_eq(ts_registry_add(r, &e, why, sizeof why), 0);
  ck_assert_int_eq(ts_registry_add(r, &f, why, sizeof why), 0);
  ck_assert_int_eq(ts_registry_add(r, &o, why, sizeof why), 0);
  ck_assert_int_eq(ts_registry_add(r, &s, why, sizeof why), 0);
  ck_assert_int_eq(ts_registry_add(r, &g, why, sizeof why), 0);
  ck_assert_int_eq(ts_registry_add(r, &h, why, sizeof why), 0);
  ts_var_def color = {"COLOR", TS_VAR_TEXT, 0, 0, "a colour"};
  ts_tool_spec v = {.name = "show_var", .description = "shows COLOR", .vars = &color,
                    .n_vars = 1, .execute = show_var_exec, .user = "show_var"};
  ck_assert_int_eq(ts_registry_add(r, &v, why, sizeof why), 0);
  ts_tool_spec v2 = {.name = "show_var2", .description = "shows COLOR too", .vars = &color,
                     .n_vars = 1, .execute = show_var_exec, .user = "show_var2"};
  ck_assert_int_eq(ts_registry_add(r, &v2, why, sizeof why), 0);
  ck_assert_int_eq(park_greet_add(r, &greet_tool, dir), 0);
  base_reg = r;
  return r;
}

/* ---- a recording backend ------------------------------------------------------------------ */

#define MAX_SEEN 32
typedef struct {
  ts_agent_model inner;
  struct {
    char thread[300];
    char *body; /* the latest request body of that thread */
    char prompt[80];
    int turns;
  } seen[MAX_SEEN];
  int n;
} recorder;

static int rec_has(void *user, const ts_agent_turn *t, char *why, size_t cap) {
  recorder *r = user;
  return r->inner.has_turn(r->inner.user, t, why, cap);
}

static int rec_turn(void *user, const ts_agent_turn *t, ts_tap *tap, char *why, size_t cap) {
  recorder *r = user;
  int i = 0;
  while (i < r->n && strcmp(r->seen[i].thread, t->thread)) i++;
  if (i == r->n && r->n < MAX_SEEN) snprintf(r->seen[r->n++].thread, 300, "%s", t->thread);
  if (i < MAX_SEEN) {
    ts_buf b;
    ts_buf_init(&b, (size_t)16 << 20);
    ck_assert_int_eq(ts_conversation_request_turn(t, ts_provider_get(TS_FORMAT_OPENAI_CHAT),
                                                  "m", 0, &b),
                     0);
    free(r->seen[i].body);
    r->seen[i].body = strndup(b.p, b.len);
    snprintf(r->seen[i].prompt, sizeof r->seen[i].prompt, "%s", t->prompt ? t->prompt : "");
    r->seen[i].turns++;
    ts_buf_fini(&b);
  }
  return r->inner.turn(r->inner.user, t, tap, why, cap);
}

static const char *body_of(recorder *r, const char *thread) {
  for (int i = 0; i < r->n; i++)
    if (!strcmp(r->seen[i].thread, thread)) return r->seen[i].body;
  return NULL;
}

static void rec_free(recorder *r) {
  for (int i = 0; i < r->n; i++) free(r->seen[i].body);
}

/* ---- running ------------------------------------------------------------------------------ */

static ts_defs *load(const char *json) {
  ts_defs *d = ts_defs_new();
  char why[512] = "";
  ck_assert_msg(ts_defs_add_json(d, "test.json", json, strlen(json), NULL, why, sizeof why) == 0,
                "%s", why);
  return d;
}

typedef struct {
  const char *agent, *prompt_name, *prompt;
  int resume;
  recorder *rec;
  double rate; /* SSE events per second of the recordings; 0: as fast as possible */
  const char *parent;
  const volatile sig_atomic_t *cancel;
} run_opts;

static int run(ts_defs *defs, ts_registry *reg, const char *thread, const run_opts *o,
               char *why, size_t cap) {
  ts_store *s = NULL, *ds = NULL;
  ck_assert_int_eq(ts_store_open(dir, &s, why, cap), 0);
  ck_assert_int_eq(ts_store_open(dir, &ds, why, cap), 0);
  char cwhy[512] = "";
  ck_assert_msg(ts_defs_check(defs, reg, cwhy, sizeof cwhy) == 0, "%s", cwhy);
  ts_replay_model replay = {rec, o->rate};
  recorder local;
  memset(&local, 0, sizeof local);
  recorder *r = o->rec ? o->rec : &local;
  r->inner = ts_replay_model_backend(&replay);
  ts_agent_model m = {rec_has, rec_turn, r};
  ts_agent_config ac = {.store = s, .dispatch_store = ds, .reg = reg, .thread = thread,
                        .resume = o->resume, .prompt = o->prompt, .model = m,
                        .sink = {.who = "compose_test", .no_time = 1}, .workspace = ws,
                        .defs = defs, .agent = o->agent, .prompt_name = o->prompt_name,
                        .parent = o->parent, .cancel = o->cancel};
  int rc = ts_agent_run(&ac, NULL, why, cap);
  if (!o->rec) rec_free(&local);
  ts_store_close(s);
  ts_store_close(ds);
  return rc;
}

/* Runs prompt "main" on a new thread with the first message "go" (asserting it ends well,
 * `line` in the message) under the definitions `json` and the test's tools. */
static void run_main(const char *json, const char *thread, int line) {
  ts_defs *defs = load(json);
  ts_registry *reg = tools();
  char why[512];
  run_opts o = {.prompt_name = "main", .prompt = "go"};
  ck_assert_msg(run(defs, reg, thread, &o, why, sizeof why) == 0, "line %d: %s", line, why);
  ts_registry_free(reg);
  ts_defs_free(defs);
}

/* What the store holds of a thread. */
typedef struct {
  sb roles, results, assistant, users;
  int nresults;
} thread_dump;

static int dump_msg(void *user, const ts_store_message *m) {
  thread_dump *d = user;
  sb_putc(&d->roles, "suat"[m->role]);
  if (m->role == TS_STORE_TOOL) {
    d->nresults++;
    sb_printf(&d->results, "%s%s|%s|%.*s\n", m->is_error ? "!" : "", m->tool_name,
              m->tool_call_id, (int)m->content_len, m->content);
  } else if (m->role == TS_STORE_ASSISTANT) {
    sb_printf(&d->assistant, "%.*s\n", (int)m->content_len, m->content);
  } else if (m->role == TS_STORE_USER) {
    sb_printf(&d->users, "%.*s\n", (int)m->content_len, m->content);
  }
  return 0;
}

static thread_dump dump(const char *thread) {
  thread_dump d;
  memset(&d, 0, sizeof d);
  ts_store *s;
  char why[256];
  ck_assert_int_eq(ts_store_open(dir, &s, why, sizeof why), 0);
  ts_store_messages(s, thread, 0, dump_msg, &d);
  ts_store_close(s);
  return d;
}

static void dump_free(thread_dump *d) {
  sb_free(&d->roles);
  sb_free(&d->results);
  sb_free(&d->assistant);
  sb_free(&d->users);
}

typedef struct {
  char parent[300], workspace[600];
  int found;
} thread_row;

static int grab_row(void *user, const ts_store_thread *t) {
  thread_row *r = user;
  r->found = 1;
  snprintf(r->parent, sizeof r->parent, "%s", t->parent ? t->parent : "");
  snprintf(r->workspace, sizeof r->workspace, "%s", t->workspace ? t->workspace : "");
  return 0;
}

static thread_row row(const char *thread) {
  thread_row r;
  memset(&r, 0, sizeof r);
  ts_store *s;
  char why[256];
  ck_assert_int_eq(ts_store_open(dir, &s, why, sizeof why), 0);
  ts_store_thread_get(s, thread, grab_row, &r);
  ts_store_close(s);
  return r;
}

static int put_event(void *user, uint64_t seq, const char *json, size_t len) {
  (void)seq;
  sb_printf(user, "%.*s\n", (int)len, json);
  return 0;
}

static void events(const char *thread, sb *out) {
  ts_store *s;
  char why[256];
  ck_assert_int_eq(ts_store_open(dir, &s, why, sizeof why), 0);
  ts_store_events_after(s, thread, 0, 100000, put_event, out);
  ts_store_close(s);
}

static int threads_count_cb(void *user, const ts_store_thread *t) {
  (void)t;
  (*(int *)user)++;
  return 0;
}

static int thread_count(void) {
  int n = 0;
  ts_store *s;
  char why[256];
  ck_assert_int_eq(ts_store_open(dir, &s, why, sizeof why), 0);
  ts_store_threads(s, threads_count_cb, &n);
  ts_store_close(s);
  return n;
}

static void fresh(const char *name) {
  ts_test_tempdir(dir, sizeof dir, name);
  snprintf(rec, sizeof rec, "%s/rec", dir);
  snprintf(ws, sizeof ws, "%s/ws", dir);
  ck_assert_int_eq(mkdir(rec, 0755), 0);
  ck_assert_int_eq(mkdir(ws, 0755), 0);
}

#define HAS(hay, needle) ck_assert_msg(strstr((hay), (needle)), "no %s in:\n%s", (needle), (hay))
#define HASNT(hay, needle) ck_assert_msg(!strstr((hay), (needle)), "%s in:\n%s", (needle), (hay))

/* ---- the first table: a function tool ------------------------------------------------------ */

static const char *const FUNCTION_DEFS =
    "[{\"kind\":\"prompt\",\"name\":\"main\",\"prompt\":[\"You are main. \","
    "{\"type\":\"env\",\"name\":\"MOOD\"},{\"type\":\"prompt\",\"name\":\"style\"}],"
    "\"tools\":[\"echo\"],\"env\":{\"MOOD\":\"calm.\"},\"toolChoice\":\"required\","
    "\"parallelToolCalls\":false},"
    " {\"kind\":\"prompt\",\"name\":\"style\",\"prompt\":\" Be brief.\"}]";

START_TEST(test_function_tool_and_the_driving_prompt) {
  fresh("compose-fn");
  turn_call("main", 1, "echo", "{\\\"x\\\":1}");
  turn_call("main", 2, "other", "{}");
  turn_text("main", 3, "ok");
  ts_defs *defs = load(FUNCTION_DEFS);
  ts_registry *reg = tools();
  char why[512];
  recorder r;
  memset(&r, 0, sizeof r);
  run_opts o = {.prompt_name = "main", .prompt = "go", .rec = &r};
  ck_assert_msg(run(defs, reg, "t1", &o, why, sizeof why) == 0, "%s", why);
  thread_dump d = dump("t1");
  ck_assert_str_eq(sb_str(&d.roles), "utataa");
  HAS(sb_str(&d.results), "echo|c_main_1|{\"x\":1}");
  /* a tool of the run that the prompt does not list is not the model's */
  HAS(sb_str(&d.results), "!other|c_main_2|");
  HAS(sb_str(&d.assistant), "{\"turn\":1,\"prompt\":\"main\",");
  /* the system text, parts resolved (the prompt's env, an included prompt) */
  const char *body = body_of(&r, "t1");
  ck_assert_ptr_nonnull(body);
  HAS(body, "{\"role\":\"system\",\"content\":\"You are main. calm. Be brief.\"}");
  HAS(body, "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"echo\","
            "\"description\":\"echoes\"");
  HASNT(body, "\"name\":\"other\",\"description\"");
  /* toolChoice and parallelToolCalls, in the provider's words */
  HAS(body, "\"tool_choice\":\"required\",\"parallel_tool_calls\":false}");
  ts_store *st;
  ck_assert_int_eq(ts_store_open(dir, &st, why, sizeof why), 0);
  ts_agent_turn t = {.store = st, .thread = "t1", .reg = reg, .system = "sys",
                     .tool_choice = "required", .parallel_tool_calls = 1};
  ts_buf b;
  ts_buf_init(&b, 1 << 20);
  ck_assert_int_eq(ts_conversation_request_turn(&t, ts_provider_get(TS_FORMAT_ANTHROPIC), "m",
                                                0, &b),
                   0);
  HAS(b.p, "\"system\":[{\"type\":\"text\",\"text\":\"sys\"}]");
  HAS(b.p, "\"tool_choice\":{\"type\":\"any\",\"disable_parallel_tool_use\":true}}");
  ts_buf_fini(&b);
  ts_store_close(st);
  dump_free(&d);
  rec_free(&r);
  ts_registry_free(reg);
  ts_defs_free(defs);
  ts_test_rm_rf(dir);
}
END_TEST

/* The variable layers a composed thread's tools resolve with (docs/variables.md): the
 * agent's env over the tools entry's over the prompt's; and what the driver declares. */
static const struct {
  int line;
  const char *agent_env, *entry_env, *prompt_env;
  const char *want;
} layer_rows[] = {
    {__LINE__, NULL, NULL, NULL, "\"unset\""},
    {__LINE__, NULL, NULL, "{\"COLOR\":\"prompt\"}", "\"prompt\""},
    {__LINE__, NULL, "{\"COLOR\":\"entry\"}", "{\"COLOR\":\"prompt\"}", "\"entry\""},
    {__LINE__, "{\"COLOR\":\"agent\"}", "{\"COLOR\":\"entry\"}", "{\"COLOR\":\"prompt\"}",
     "\"agent\""},
};

static int grab_decl(void *user, const ts_store_env_decl *d) {
  sb_printf(user, "%s=%s;", d->name, d->declared_by);
  return 0;
}

START_TEST(test_variable_layers_of_a_driver) {
  for (size_t i = 0; i < sizeof layer_rows / sizeof layer_rows[0]; i++) {
    fresh("compose-layers");
    turn_call("main", 1, "show_var", "{}");
    turn_text("main", 2, "ok");
    char json[2048], entry[256], penv[128], aenv[128];
    if (layer_rows[i].entry_env)
      snprintf(entry, sizeof entry, "{\"name\":\"show_var\",\"env\":%s}", layer_rows[i].entry_env);
    else
      snprintf(entry, sizeof entry, "\"show_var\"");
    snprintf(penv, sizeof penv, ",\"env\":%s", layer_rows[i].prompt_env ? layer_rows[i].prompt_env : "{}");
    snprintf(aenv, sizeof aenv, ",\"env\":%s", layer_rows[i].agent_env ? layer_rows[i].agent_env : "{}");
    snprintf(json, sizeof json,
             "[{\"kind\":\"prompt\",\"name\":\"main\",\"prompt\":\"m\",\"tools\":[%s]%s,"
             "\"variables\":[{\"name\":\"REGION\",\"type\":\"text\",\"required\":false,"
             "\"description\":\"where\"}]},"
             " {\"kind\":\"agent\",\"name\":\"a\",\"sideA\":{\"prompt\":\"main\"}%s}]",
             entry, penv, aenv);
    ts_defs *defs = load(json);
    ts_registry *reg = tools();
    char why[512];
    run_opts o = {.agent = "a", .prompt = "go"};
    ck_assert_msg(run(defs, reg, "l1", &o, why, sizeof why) == 0, "line %d: %s",
                  layer_rows[i].line, why);
    thread_dump d = dump("l1");
    char want[256];
    snprintf(want, sizeof want, "show_var|c_main_1|%s\n", layer_rows[i].want);
    ck_assert_msg(strstr(sb_str(&d.results), want), "line %d: %s", layer_rows[i].line,
                  sb_str(&d.results));
    sb decls = {0};
    ts_store *st;
    ck_assert_int_eq(ts_store_open(dir, &st, why, sizeof why), 0);
    ts_store_env_decls(st, "l1", grab_decl, &decls);
    ts_store_close(st);
    ck_assert_str_eq(sb_str(&decls), "COLOR=tool show_var;REGION=prompt main;");
    sb_free(&decls);
    dump_free(&d);
    ts_registry_free(reg);
    ts_defs_free(defs);
    ts_test_rm_rf(dir);
  }
}
END_TEST

/* Each tools entry's env is its own tool's: two entries giving one variable two values. */
START_TEST(test_entry_env_is_per_tool) {
  fresh("compose-entryenv");
  turn_call("main", 1, "show_var", "{}");
  turn_call("main", 2, "show_var2", "{}");
  turn_text("main", 3, "ok");
  run_main("{\"kind\":\"prompt\",\"name\":\"main\",\"prompt\":\"m\",\"tools\":["
           "{\"name\":\"show_var\",\"env\":{\"COLOR\":\"one\"}},"
           "{\"name\":\"show_var2\",\"env\":{\"COLOR\":\"two\"}}],"
           "\"env\":{\"COLOR\":\"prompt\"}}",
           "e1", __LINE__);
  thread_dump d = dump("e1");
  HAS(sb_str(&d.results), "show_var|c_main_1|\"one\"\n");
  HAS(sb_str(&d.results), "show_var2|c_main_2|\"two\"\n");
  dump_free(&d);
  ts_test_rm_rf(dir);
}
END_TEST

/* A prompt's required variable must resolve before its turn runs. */
START_TEST(test_required_prompt_variable) {
  fresh("compose-required");
  turn_text("main", 1, "ok");
  const char *json = "{\"kind\":\"prompt\",\"name\":\"main\",\"prompt\":\"m\",\"variables\":"
                     "[{\"name\":\"REGION\",\"type\":\"text\",\"required\":true,"
                     "\"description\":\"where\"}]%s}";
  char buf[1024];
  snprintf(buf, sizeof buf, json, "");
  ts_defs *defs = load(buf);
  ts_registry *reg = tools();
  char why[512];
  run_opts o = {.prompt_name = "main", .prompt = "go"};
  ck_assert_int_eq(run(defs, reg, "q1", &o, why, sizeof why), TS_E_VAR_MISSING);
  HAS(why, "prompt \"main\" requires the variable REGION");
  HAS(why, "env set q1 REGION");
  ts_defs_free(defs);
  snprintf(buf, sizeof buf, json, ",\"env\":{\"REGION\":\"eu\"}");
  defs = load(buf);
  ck_assert_msg(run(defs, reg, "q2", &o, why, sizeof why) == 0, "%s", why);
  ts_registry_free(reg);
  ts_defs_free(defs);
  ts_test_rm_rf(dir);
}
END_TEST

/* A secret is for tools: a system text part naming one stops the run; so does a driver
 * that is not defined. */
START_TEST(test_system_text_refuses_a_secret_and_unknown_drivers) {
  fresh("compose-secret");
  turn_text("main", 1, "never");
  setenv("TOOLSTREAM_SECRET_KEY",
         "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", 1);
  ts_store *st;
  char why[512];
  ck_assert_int_eq(ts_store_open(dir, &st, why, sizeof why), 0);
  ck_assert_int_eq(ts_store_thread_create_child(st, "root", NULL, NULL, NULL), 0);
  ts_vars *v;
  ck_assert_int_eq(ts_vars_open(st, NULL, &v), 0);
  ck_assert_int_eq(ts_vars_set(v, "root", "TOKEN", TS_VAR_SECRET, "sk-very-secret", 14, "test"),
                   0);
  ts_vars_free(v);
  ts_store_close(st);
  ts_defs *defs = load("{\"kind\":\"prompt\",\"name\":\"main\",\"prompt\":[\"key: \","
                       "{\"type\":\"env\",\"name\":\"TOKEN\"}]}");
  ts_registry *reg = tools();
  recorder r;
  memset(&r, 0, sizeof r);
  run_opts o = {.prompt_name = "main", .prompt = "go", .parent = "root", .rec = &r};
  ck_assert_int_eq(run(defs, reg, "s1", &o, why, sizeof why), TS_E_INVAL);
  HAS(why, "variable TOKEN is a secret");
  HASNT(why, "sk-very-secret");
  ck_assert_int_eq(r.n, 0); /* no model saw anything */
  run_opts o2 = {.agent = "nope", .prompt = "go"};
  ck_assert_int_eq(run(defs, reg, "s2", &o2, why, sizeof why), TS_E_INVAL);
  HAS(why, "no agent \"nope\"");
  run_opts o3 = {.prompt_name = "nope", .prompt = "go"};
  ck_assert_int_eq(run(defs, reg, "s3", &o3, why, sizeof why), TS_E_INVAL);
  HAS(why, "no prompt \"nope\"");
  unsetenv("TOOLSTREAM_SECRET_KEY");
  rec_free(&r);
  ts_registry_free(reg);
  ts_defs_free(defs);
  ts_test_rm_rf(dir);
}
END_TEST

/* ---- a prompt tool, and the SubpromptConfig fields ---------------------------------------- */

static char *sub_defs(const char *entry, const char *helper_extra) {
  static char buf[4096];
  snprintf(buf, sizeof buf,
           "[{\"kind\":\"prompt\",\"name\":\"main\",\"prompt\":\"main\",\"tools\":[%s]},"
           " {\"kind\":\"prompt\",\"name\":\"helper\",\"prompt\":\"I help.\",\"model\":\"small\","
           "\"toolDescription\":\"helps with a task\",\"requiredSchema\":{\"type\":\"object\","
           "\"properties\":{\"task\":{\"type\":\"string\"},\"files\":{\"type\":\"array\","
           "\"items\":{\"type\":\"string\"}}},\"required\":[\"task\"]},"
           "\"tools\":[\"echo\",\"fail\"]%s}]",
           entry, helper_extra);
  return buf;
}

/* main calls helper once; helper calls echo, then fail, then answers. */
static void helper_session(const char *args) {
  turn_call("main", 1, "helper", args);
  turn_text("main", 2, "main done");
  turn_call("helper", 1, "echo", "{\\\"y\\\":2}");
  turn_call("helper", 2, "fail", "{}");
  turn_text("helper", 3, "helped");
}

/* Replaces the first `from` in `buf` (a string of `cap` bytes at most) with `to`. */
static void replace_in(char *buf, size_t cap, const char *from, const char *to) {
  char *at = strstr(buf, from);
  ck_assert_ptr_nonnull(at);
  size_t fl = strlen(from), tl = strlen(to), rest = strlen(at + fl);
  ck_assert_uint_lt((size_t)(at - buf) + tl + rest, cap);
  memmove(at + tl, at + fl, rest + 1);
  memcpy(at, to, tl);
}

static char result_of(const char *results, const char *tool, char *out, size_t cap) {
  const char *p = strstr(results, tool);
  ck_assert_ptr_nonnull(p);
  const char *bar = strchr(p + strlen(tool) + 1, '|');
  ck_assert_ptr_nonnull(bar);
  const char *nl = strchr(bar, '\n');
  snprintf(out, cap, "%.*s", (int)(nl - bar - 1), bar + 1);
  return p > results && p[-1] == '!' ? '!' : ' ';
}

START_TEST(test_prompt_tool_defaults) {
  fresh("compose-sub");
  helper_session("{\\\"task\\\":\\\"sum it\\\"}");
  ts_defs *defs = load(sub_defs("\"helper\"", ""));
  ts_registry *reg = tools();
  char why[512];
  recorder r;
  memset(&r, 0, sizeof r);
  run_opts o = {.prompt_name = "main", .prompt = "go", .rec = &r};
  ck_assert_msg(run(defs, reg, "p1", &o, why, sizeof why) == 0, "%s", why);
  thread_dump d = dump("p1");
  ck_assert_str_eq(sb_str(&d.roles), "utaa");
  char res[8192];
  ck_assert_int_eq(result_of(sb_str(&d.results), "helper", res, sizeof res), ' ');
  /* the defaults: text, calls with results, errors */
  ck_assert_str_eq(res,
                   "{\"thread\":\"p1/t1c0\",\"status\":\"done\",\"text\":\"helped\","
                   "\"tool_calls\":[{\"id\":\"c_helper_1\",\"name\":\"echo\",\"arguments\":"
                   "{\"y\":2},\"result\":{\"y\":2}},{\"id\":\"c_helper_2\",\"name\":\"fail\","
                   "\"arguments\":{},\"error\":\"fail always fails\"}],\"errors\":[{\"tool\":"
                   "\"fail\",\"error\":\"fail always fails\"}]}");
  /* the child: a thread of its own under the caller, with its own workspace */
  thread_row c = row("p1/t1c0");
  ck_assert_int_eq(c.found, 1);
  ck_assert_str_eq(c.parent, "p1");
  char want_ws[400];
  snprintf(want_ws, sizeof want_ws, "%s/threads/t1c0", ws);
  ck_assert_str_eq(c.workspace, want_ws);
  struct stat st;
  ck_assert_int_eq(stat(want_ws, &st), 0);
  thread_dump cd = dump("p1/t1c0");
  ck_assert_str_eq(sb_str(&cd.roles), "utataa");
  /* no initUserMessageProperty: the arguments are its first message */
  ck_assert_str_eq(sb_str(&cd.users), "{\"task\":\"sum it\"}\n");
  /* its model sees its own system text and tools, nothing of the caller's conversation */
  const char *body = body_of(&r, "p1/t1c0");
  HAS(body, "{\"role\":\"system\",\"content\":\"I help.\"}");
  HAS(body, "{\"model\":\"small\","); /* its own model; the caller has the run's */
  HAS(body_of(&r, "p1"), "{\"model\":\"m\",");
  HASNT(body, "\"content\":\"go\"");
  HAS(body, "\"name\":\"fail\"");
  HASNT(body, "\"name\":\"helper\"");
  /* the caller's model saw helper as a tool: its description and requiredSchema */
  HAS(body_of(&r, "p1"), "\"name\":\"helper\",\"description\":\"helps with a task\"");
  HAS(body_of(&r, "p1"), "\"required\":[\"task\"]");
  /* the child's events carry thread and parent */
  sb ev = {0};
  events("p1/t1c0", &ev);
  HAS(sb_str(&ev), "\"thread\":\"p1/t1c0\",\"parent\":\"p1\"");
  HAS(sb_str(&ev), "\"type\":\"tool_result\"");
  /* the tree on the bus: the child's first event says what it runs, its last that it
   * finished */
  const char *first = strstr(sb_str(&ev), "\"seq\":1,");
  ck_assert_msg(first && strstr(sb_str(&ev), "\"type\":\"thread_created\"") &&
                    strstr(sb_str(&ev), "\"type\":\"thread_created\"") < strchr(first, '\n'),
                "the first event is not thread_created: %s", sb_str(&ev));
  HAS(sb_str(&ev), "\"agent\":\"helper\",\"name\":\"helper\",\"relationship\":\"prompt_tool\","
                   "\"blocking\":true");
  const char *fin = strstr(sb_str(&ev), "\"type\":\"thread_finished\"");
  ck_assert_msg(fin && !strstr(fin, "\"type\":\"tool_result\""), "thread_finished is not last: %s",
                sb_str(&ev));
  HAS(fin, "\"status\":\"done\"");
  sb_free(&ev);
  dump_free(&d);
  dump_free(&cd);
  rec_free(&r);
  ts_registry_free(reg);
  ts_defs_free(defs);
  ts_test_rm_rf(dir);
}
END_TEST

START_TEST(test_prompt_tool_arguments_are_validated) {
  fresh("compose-val");
  turn_call("main", 1, "helper", "{\\\"task\\\":5}");
  turn_text("main", 2, "main done");
  run_main(sub_defs("\"helper\"", ""), "v1", __LINE__);
  thread_dump d = dump("v1");
  char res[4096];
  ck_assert_int_eq(result_of(sb_str(&d.results), "helper", res, sizeof res), '!');
  HAS(res, "/task");
  ck_assert_int_eq(row("v1/t1c0").found, 0); /* no child for an invalid call */
  dump_free(&d);
  ts_test_rm_rf(dir);
}
END_TEST

/* Each include* field off in turn, on the caller's entry. */
static const struct {
  int line;
  const char *entry;
  const char *has, *hasnt;
} include_rows[] = {
    {__LINE__, "{\"name\":\"helper\",\"includeTextResponse\":false}", "\"tool_calls\":[",
     "\"text\":"},
    {__LINE__, "{\"name\":\"helper\",\"includeToolCalls\":false}", "\"text\":\"helped\"",
     "\"tool_calls\":"},
    {__LINE__, "{\"name\":\"helper\",\"includeErrors\":false}", "\"name\":\"echo\"",
     "fail always fails"},
    {__LINE__, "{\"name\":\"helper\",\"includeTextResponse\":true,\"includeToolCalls\":true,"
               "\"includeErrors\":true}",
     "\"errors\":[{\"tool\":\"fail\"", "\"status\":\"failed\""},
};

START_TEST(test_subprompt_include_fields) {
  for (size_t i = 0; i < sizeof include_rows / sizeof include_rows[0]; i++) {
    fresh("compose-inc");
    helper_session("{\\\"task\\\":\\\"t\\\"}");
    run_main(sub_defs(include_rows[i].entry, ""), "i1", include_rows[i].line);
    thread_dump d = dump("i1");
    char res[8192];
    result_of(sb_str(&d.results), "helper", res, sizeof res);
    ck_assert_msg(strstr(res, include_rows[i].has), "line %d: no %s in %s", include_rows[i].line,
                  include_rows[i].has, res);
    ck_assert_msg(!strstr(res, include_rows[i].hasnt), "line %d: %s in %s",
                  include_rows[i].line, include_rows[i].hasnt, res);
    dump_free(&d);
    ts_test_rm_rf(dir);
  }
}
END_TEST

START_TEST(test_init_user_message_and_attachments) {
  fresh("compose-init");
  /* a file in the caller's filesystem */
  char p[400];
  snprintf(p, sizeof p, "%s/attachments", ws);
  ck_assert_int_eq(mkdir(p, 0755), 0);
  snprintf(p, sizeof p, "%s/attachments/notes.txt", ws);
  ts_test_put(p, "the notes");
  helper_session("{\\\"task\\\":\\\"read \\\\\\\"this\\\\\\\"\\\",\\\"files\\\":"
                 "[\\\"/attachments/notes.txt\\\"]}");
  run_main(sub_defs("{\"name\":\"helper\",\"initUserMessageProperty\":\"task\","
                                "\"initAttachmentsProperty\":\"files\"}",
                                ""), "a1", __LINE__);
  thread_dump cd = dump("a1/t1c0");
  /* the exact value of the property, then the attachment in the callee's filesystem */
  ck_assert_str_eq(sb_str(&cd.users), "read \"this\"\n\n[attachment: /attachments/notes.txt]\n");
  snprintf(p, sizeof p, "%s/threads/t1c0/attachments/notes.txt", ws);
  size_t len;
  char *copied = ts_test_read_file(p, &len);
  ck_assert_ptr_nonnull(copied);
  ck_assert_str_eq(copied, "the notes");
  free(copied);
  dump_free(&cd);
  ts_test_rm_rf(dir);
}
END_TEST

/* The child's tools work in the child's filesystem: its read_file finds the copy there,
 * by the path its first message names ("[attachment: /attachments/notes.txt]": the leading
 * '/' is the child's own root, tools-spec §6) and by the same path relative. */
static const struct {
  int line;
  const char *path; /* as the child's read_file is given it */
} child_reads[] = {
    {__LINE__, "attachments/notes.txt"},
    {__LINE__, "/attachments/notes.txt"},
};

START_TEST(test_child_tools_work_in_the_child_filesystem) {
  for (size_t i = 0; i < sizeof child_reads / sizeof child_reads[0]; i++) {
    fresh("compose-childfs");
    char p[400];
    snprintf(p, sizeof p, "%s/docs", ws);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/docs/notes.txt", ws);
    ts_test_put(p, "the notes");
    turn_call("main", 1, "helper", "{\\\"task\\\":\\\"t\\\",\\\"files\\\":[\\\"/docs/notes.txt\\\"]}");
    turn_text("main", 2, "main done");
    char args[256];
    snprintf(args, sizeof args, "{\\\"path\\\":\\\"%s\\\"}", child_reads[i].path);
    turn_call("helper", 1, "read_file", args);
    turn_call("helper", 2, "write_file", "{\\\"description\\\":\\\"d\\\",\\\"path\\\":\\\"out.txt\\\","
              "\\\"content\\\":\\\"mine\\\"}");
    turn_text("helper", 3, "read it");
    char json[4096];
    snprintf(json, sizeof json, "%s",
             sub_defs("{\"name\":\"helper\",\"initAttachmentsProperty\":\"files\"}", ""));
    replace_in(json, sizeof json, "\"tools\":[\"echo\",\"fail\"]",
               "\"tools\":[\"read_file\",\"write_file\"]");
    ts_defs *defs = load(json);
    ts_registry *reg = tools();
    ts_demo_tools *demo = NULL;
    char why[512];
    ck_assert_int_eq(ts_demo_tools_add(reg, ws, &demo, why, sizeof why), 0);
    run_opts o = {.prompt_name = "main", .prompt = "go"};
    ck_assert_msg(run(defs, reg, "fs1", &o, why, sizeof why) == 0, "%s", why);
    thread_dump cd = dump("fs1/t1c0");
    ck_assert_msg(strstr(sb_str(&cd.results), "read_file|c_helper_1|\"the notes\""),
                  "line %d: %s", child_reads[i].line, sb_str(&cd.results));
    snprintf(p, sizeof p, "%s/threads/t1c0/out.txt", ws);
    size_t len;
    char *mine = ts_test_read_file(p, &len);
    ck_assert_ptr_nonnull(mine);
    ck_assert_str_eq(mine, "mine");
    free(mine);
    snprintf(p, sizeof p, "%s/out.txt", ws);
    struct stat st;
    ck_assert_int_ne(stat(p, &st), 0); /* nothing written in the caller's */
    dump_free(&cd);
    ts_registry_free(reg);
    ts_demo_tools_free(demo);
    ts_defs_free(defs);
    ts_test_rm_rf(dir);
  }
}
END_TEST

/* The child's reply crosses back (tools-spec §6): each /attachments/NAME it names that the
 * child holds is copied into the caller's filesystem, the text names the caller-local copy
 * and "attachments" lists it; a path the child does not hold stays as written. */
static const struct {
  int line;
  const char *entry;  /* main's tools entry for helper */
  const char *reply;  /* helper's last reply */
  int caller_has;     /* the caller holds an attachments/cat.txt of its own */
  const char *want;   /* in helper's result */
  const char *copy;   /* the copy in the caller's attachments/, NULL: none */
} reply_rows[] = {
    {__LINE__, "\"helper\"", "drew /attachments/cat.txt.", 0,
     "\"text\":\"drew /attachments/cat.txt.\",\"attachments\":[\"/attachments/cat.txt\"],"
     "\"tool_calls\"",
     "cat.txt"},
    {__LINE__, "\"helper\"", "drew /attachments/cat.txt", 1,
     "\"text\":\"drew /attachments/cat-2.txt\",\"attachments\":[\"/attachments/cat-2.txt\"]",
     "cat-2.txt"},
    {__LINE__, "\"helper\"", "see /attachments/dog.txt", 0,
     "\"text\":\"see /attachments/dog.txt\",\"tool_calls\"", NULL},
    {__LINE__, "{\"name\":\"helper\",\"includeTextResponse\":false}", "drew /attachments/cat.txt",
     0, "{\"thread\":\"rp1/t1c0\",\"status\":\"done\",\"tool_calls\"", NULL},
};

START_TEST(test_reply_attachments_come_back_to_the_caller) {
  for (size_t i = 0; i < sizeof reply_rows / sizeof reply_rows[0]; i++) {
    fresh("compose-reply");
    char p[400];
    if (reply_rows[i].caller_has) {
      snprintf(p, sizeof p, "%s/attachments", ws);
      ck_assert_int_eq(mkdir(p, 0755), 0);
      snprintf(p, sizeof p, "%s/attachments/cat.txt", ws);
      ts_test_put(p, "mine");
    }
    turn_call("main", 1, "helper", "{\\\"task\\\":\\\"draw\\\"}");
    turn_text("main", 2, "main done");
    turn_call("helper", 1, "write_file", "{\\\"description\\\":\\\"d\\\",\\\"path\\\":"
              "\\\"attachments/cat.txt\\\",\\\"content\\\":\\\"=^.^=\\\"}");
    turn_text("helper", 2, reply_rows[i].reply);
    char json[4096];
    snprintf(json, sizeof json, "%s", sub_defs(reply_rows[i].entry, ""));
    replace_in(json, sizeof json, "\"tools\":[\"echo\",\"fail\"]", "\"tools\":[\"write_file\"]");
    ts_defs *defs = load(json);
    ts_registry *reg = tools();
    ts_demo_tools *demo = NULL;
    char why[512];
    ck_assert_int_eq(ts_demo_tools_add(reg, ws, &demo, why, sizeof why), 0);
    run_opts o = {.prompt_name = "main", .prompt = "go"};
    ck_assert_msg(run(defs, reg, "rp1", &o, why, sizeof why) == 0, "%s", why);
    thread_dump d = dump("rp1");
    ck_assert_msg(strstr(sb_str(&d.results), reply_rows[i].want), "line %d: %s",
                  reply_rows[i].line, sb_str(&d.results));
    if (reply_rows[i].copy) {
      snprintf(p, sizeof p, "%s/attachments/%s", ws, reply_rows[i].copy);
      size_t len;
      char *got = ts_test_read_file(p, &len);
      ck_assert_msg(got != NULL, "line %d: no copy %s", reply_rows[i].line, p);
      ck_assert_str_eq(got, "=^.^=");
      free(got);
    }
    if (reply_rows[i].caller_has) { /* the caller's own file is untouched */
      snprintf(p, sizeof p, "%s/attachments/cat.txt", ws);
      size_t len;
      char *mine = ts_test_read_file(p, &len);
      ck_assert_str_eq(mine, "mine");
      free(mine);
    } else if (!reply_rows[i].copy) {
      struct stat st;
      snprintf(p, sizeof p, "%s/attachments/cat.txt", ws);
      ck_assert_msg(stat(p, &st) != 0, "line %d: a copy nothing named", reply_rows[i].line);
    }
    dump_free(&d);
    ts_registry_free(reg);
    ts_demo_tools_free(demo);
    ts_defs_free(defs);
    ts_test_rm_rf(dir);
  }
}
END_TEST

/* A path the caller's filesystem does not hold is an error result, never a copy. */
static const struct {
  int line;
  const char *files;
  const char *error;
} bad_attachments[] = {
    {__LINE__, "[\\\"/attachments/missing.txt\\\"]", "no such file"},
    {__LINE__, "[\\\"/../outside.txt\\\"]", "holds '..'"},
    {__LINE__, "[\\\"/attachments/../../outside.txt\\\"]", "holds '..'"},
    {__LINE__, "[7]", "must be a string"},
    {__LINE__, "\\\"/attachments\\\"", "not a regular file"},
};

START_TEST(test_bad_attachments_are_error_results) {
  for (size_t i = 0; i < sizeof bad_attachments / sizeof bad_attachments[0]; i++) {
    fresh("compose-badatt");
    char p[400];
    snprintf(p, sizeof p, "%s/outside.txt", dir);
    ts_test_put(p, "not the caller's");
    snprintf(p, sizeof p, "%s/attachments", ws);
    mkdir(p, 0755);
    char args[512];
    snprintf(args, sizeof args, "{\\\"task\\\":\\\"t\\\",\\\"files\\\":%s}", bad_attachments[i].files);
    turn_call("main", 1, "helper", args);
    turn_text("main", 2, "main done");
    turn_text("helper", 1, "never");
    char json[4096];
    snprintf(json, sizeof json, "%s",
             sub_defs("{\"name\":\"helper\",\"initAttachmentsProperty\":\"files\"}", ""));
    /* any value for files: the runtime's own checks, not the schema's */
    replace_in(json, sizeof json,
               "\"files\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}",
               "\"files\":{}");
    run_main(json, "b1", bad_attachments[i].line);
    thread_dump d = dump("b1");
    char res[4096];
    ck_assert_msg(result_of(sb_str(&d.results), "helper", res, sizeof res) == '!', "line %d: %s",
                  bad_attachments[i].line, res);
    ck_assert_msg(strstr(res, bad_attachments[i].error), "line %d: %s", bad_attachments[i].line,
                  res);
    ck_assert_int_eq(row("b1/t1c0").found, 0);
    dump_free(&d);
    ts_test_rm_rf(dir);
  }
}
END_TEST

/* includeChat / includePastTools on the callee decide what of the caller it sees. */
static const struct {
  int line;
  const char *flags;
  int chat, tools;
} history_rows[] = {
    {__LINE__, "", 0, 0},
    {__LINE__, ",\"includeChat\":true", 1, 0},
    {__LINE__, ",\"includePastTools\":true", 0, 1},
    {__LINE__, ",\"includeChat\":true,\"includePastTools\":true", 1, 1},
};

START_TEST(test_include_chat_and_past_tools) {
  for (size_t i = 0; i < sizeof history_rows / sizeof history_rows[0]; i++) {
    fresh("compose-hist");
    /* main: turn 1 echo (a past tool), turn 2 says something, then the user speaks,
     * turn 3 calls helper */
    turn_call("main", 1, "echo", "{\\\"past\\\":\\\"tool\\\"}");
    turn_text("main", 2, "first answer");
    turn_call("main", 3, "helper", "{\\\"task\\\":\\\"t\\\"}");
    turn_text("main", 4, "main done");
    turn_text("helper", 1, "helped");
    ts_defs *defs = load(sub_defs("\"helper\",\"echo\"", history_rows[i].flags));
    ts_registry *reg = tools();
    char why[512];
    recorder r;
    memset(&r, 0, sizeof r);
    run_opts o = {.prompt_name = "main", .prompt = "question one", .rec = &r};
    ck_assert_msg(run(defs, reg, "h1", &o, why, sizeof why) == 0, "%s", why);
    run_opts o2 = {.prompt_name = "main", .prompt = "question two", .resume = 1, .rec = &r};
    ck_assert_msg(run(defs, reg, "h1", &o2, why, sizeof why) == 0, "%s", why);
    const char *body = body_of(&r, "h1/t3c0");
    ck_assert_msg(body != NULL, "line %d: the helper never ran", history_rows[i].line);
    int chat = strstr(body, "question one") && strstr(body, "first answer");
    int past = strstr(body, "\\\"past\\\":\\\"tool\\\"") != NULL;
    ck_assert_msg(chat == history_rows[i].chat && past == history_rows[i].tools,
                  "line %d: chat %d tools %d:\n%s", history_rows[i].line, chat, past, body);
    if (!history_rows[i].chat) HASNT(body, "question one");
    /* its own first message comes after the caller's history */
    HAS(body, "{\"role\":\"user\",\"content\":\"{\\\"task\\\":\\\"t\\\"}\"}");
    rec_free(&r);
    ts_registry_free(reg);
    ts_defs_free(defs);
    ts_test_rm_rf(dir);
  }
}
END_TEST

/* ---- agent tools: handoff ----------------------------------------------------------------- */

static const char *const HANDOFF_DEFS =
    "[{\"kind\":\"prompt\",\"name\":\"front_p\",\"prompt\":\"front desk\","
    "\"tools\":[\"billing\"]},"
    " {\"kind\":\"prompt\",\"name\":\"billing_p\",\"prompt\":\"billing desk\","
    "\"tools\":[\"echo\"]},"
    " {\"kind\":\"agent\",\"name\":\"front\",\"sideA\":{\"prompt\":\"front_p\"}},"
    " {\"kind\":\"agent\",\"name\":\"billing\",\"exposeAsTool\":true,"
    "\"toolDescription\":\"hands the customer to billing\","
    "\"sideA\":{\"prompt\":\"billing_p\"}}]";

START_TEST(test_handoff) {
  fresh("compose-handoff");
  turn_call("front_p", 1, "billing", "{}");
  turn_text("billing_p", 1, "billing here");
  turn_call("billing_p", 2, "echo", "{\\\"bill\\\":1}");
  turn_text("billing_p", 3, "paid");
  ts_defs *defs = load(HANDOFF_DEFS);
  ts_registry *reg = tools();
  char why[512];
  recorder r;
  memset(&r, 0, sizeof r);
  run_opts o = {.agent = "front", .prompt = "I have a bill", .rec = &r};
  ck_assert_msg(run(defs, reg, "hf", &o, why, sizeof why) == 0, "%s", why);
  thread_dump d = dump("hf");
  ck_assert_str_eq(sb_str(&d.roles), "utaa");
  HAS(sb_str(&d.results), "billing|c_front_p_1|{\"handoff\":{\"from\":\"front\",\"to\":\"billing\"}}");
  HAS(sb_str(&d.assistant), "{\"turn\":2,\"prompt\":\"billing_p\",\"text\":\"billing here\"");
  ck_assert_int_eq(thread_count(), 1); /* the same thread: no child */
  HAS(body_of(&r, "hf"), "billing desk");
  sb ev = {0};
  events("hf", &ev);
  HAS(sb_str(&ev), "\"type\":\"handoff\",\"thread\":\"hf\"");
  HAS(sb_str(&ev), "\"from\":\"front\",\"to\":\"billing\"");
  sb_free(&ev);
  /* --resume keeps the new driver: the next turns are billing's */
  run_opts o2 = {.agent = "front", .prompt = "and now?", .resume = 1, .rec = &r};
  ck_assert_msg(run(defs, reg, "hf", &o2, why, sizeof why) == 0, "%s", why);
  thread_dump d2 = dump("hf");
  ck_assert_str_eq(sb_str(&d2.roles), "utaautaa");
  HAS(sb_str(&d2.results), "echo|c_billing_p_2|{\"bill\":1}");
  HAS(sb_str(&d2.assistant), "\"prompt\":\"billing_p\",\"text\":\"paid\"");
  HASNT(sb_str(&d2.assistant), "{\"turn\":3,\"prompt\":\"front_p\"");
  dump_free(&d);
  dump_free(&d2);
  rec_free(&r);
  ts_registry_free(reg);
  ts_defs_free(defs);
  ts_test_rm_rf(dir);
}
END_TEST

/* ---- agent tools: dual_ai ----------------------------------------------------------------- */

static char *dual_defs(int max) {
  static char buf[4096];
  snprintf(buf, sizeof buf,
           "[{\"kind\":\"prompt\",\"name\":\"main\",\"prompt\":\"main\",\"tools\":[\"debate\"]},"
           " {\"kind\":\"prompt\",\"name\":\"pro\",\"prompt\":\"argue for\","
           "\"tools\":[\"echo\"]},"
           " {\"kind\":\"prompt\",\"name\":\"con\",\"prompt\":\"argue against\","
           "\"tools\":[\"agree\",\"give_up\"]},"
           " {\"kind\":\"agent\",\"name\":\"debate\",\"type\":\"dual_ai\",\"exposeAsTool\":true,"
           "\"toolDescription\":\"debates a motion\",\"maxSessionTurns\":%d,"
           "\"sideA\":{\"prompt\":\"pro\"},\"sideB\":{\"prompt\":\"con\","
           "\"sessionStopTools\":[\"agree\"],\"sessionFailTools\":[\"give_up\"]}}]",
           max);
  return buf;
}

START_TEST(test_dual_ai_stop_tool) {
  fresh("compose-dual");
  turn_call("main", 1, "debate", "{\\\"motion\\\":\\\"tea\\\"}");
  turn_text("main", 2, "main done");
  turn_call("pro", 1, "echo", "{\\\"a\\\":1}");
  turn_text("pro", 2, "tea is good");
  turn_text("con", 1, "tea is bitter");
  turn_text("pro", 3, "add sugar");
  turn_call("con", 2, "agree", "{\\\"verdict\\\":\\\"fine\\\"}");
  ts_defs *defs = load(dual_defs(10));
  ts_registry *reg = tools();
  char why[512];
  recorder r;
  memset(&r, 0, sizeof r);
  run_opts o = {.prompt_name = "main", .prompt = "go", .rec = &r};
  ck_assert_msg(run(defs, reg, "d1", &o, why, sizeof why) == 0, "%s", why);
  thread_dump d = dump("d1");
  char res[8192];
  ck_assert_int_eq(result_of(sb_str(&d.results), "debate", res, sizeof res), ' ');
  HAS(res, "{\"thread\":\"d1/t1c0\",\"status\":\"stopped\",\"side\":\"b\",\"tool\":\"agree\"");
  HAS(res, "\"session_turns\":3");
  HAS(res, "\"name\":\"agree\",\"arguments\":{\"verdict\":\"fine\"}");
  thread_dump cd = dump("d1/t1c0");
  ck_assert_str_eq(sb_str(&cd.roles), "utaaaata");
  HAS(sb_str(&cd.assistant), "\"prompt\":\"con\",\"side\":\"b\",\"text\":\"tea is bitter\"");
  /* each side's reply is the other's next user message; the other side's tools are not */
  const char *body = body_of(&r, "d1/t1c0"); /* the last request: con's second turn */
  HAS(body, "argue against");
  HAS(body, "{\"role\":\"user\",\"content\":\"tea is good\"}");
  HAS(body, "{\"role\":\"assistant\",\"content\":\"tea is bitter\"}");
  HAS(body, "{\"role\":\"user\",\"content\":\"add sugar\"}");
  HASNT(body, "\"a\":1");
  dump_free(&d);
  dump_free(&cd);
  rec_free(&r);
  ts_registry_free(reg);
  ts_defs_free(defs);
  ts_test_rm_rf(dir);
}
END_TEST

START_TEST(test_dual_ai_max_session_turns_and_fail_tool) {
  /* maxSessionTurns 3: pro, con, pro answer and the session ends */
  fresh("compose-dualmax");
  turn_call("main", 1, "debate", "{}");
  turn_text("main", 2, "main done");
  for (int k = 1; k <= 5; k++) turn_text("pro", k, "pro says");
  for (int k = 1; k <= 5; k++) turn_text("con", k, "con says");
  ts_defs *defs = load(dual_defs(3));
  ts_registry *reg = tools();
  char why[512];
  run_opts o = {.prompt_name = "main", .prompt = "go"};
  ck_assert_msg(run(defs, reg, "m1", &o, why, sizeof why) == 0, "%s", why);
  thread_dump d = dump("m1");
  ck_assert_int_eq(d.nresults, 1);
  HAS(sb_str(&d.results), "\"thread\":\"m1/t1c0\",\"status\":\"max_session_turns\","
                          "\"side\":\"a\",\"session_turns\":3,\"text\":\"pro says\"");
  thread_dump cd = dump("m1/t1c0");
  ck_assert_str_eq(sb_str(&cd.roles), "uaaa");
  dump_free(&d);
  dump_free(&cd);
  ts_defs_free(defs);
  ts_test_rm_rf(dir);

  /* a sessionFailTools tool: the session failed */
  fresh("compose-dualfail");
  turn_call("main", 1, "debate", "{}");
  turn_text("main", 2, "main done");
  turn_text("pro", 1, "pro says");
  turn_call("con", 1, "give_up", "{}");
  defs = load(dual_defs(10));
  ck_assert_msg(run(defs, reg, "f1", &o, why, sizeof why) == 0, "%s", why);
  d = dump("f1");
  HAS(sb_str(&d.results), "\"status\":\"failed\",\"side\":\"b\",\"tool\":\"give_up\","
                          "\"session_turns\":1");
  dump_free(&d);
  ts_registry_free(reg);
  ts_defs_free(defs);
  ts_test_rm_rf(dir);
}
END_TEST

/* A chain of prompt tools deeper than TS_COMPOSE_MAX_DEPTH ends in an error result at the
 * limit, and every level above still answers. */
START_TEST(test_nesting_is_bounded) {
  fresh("compose-depth");
  enum { N = TS_COMPOSE_MAX_DEPTH + 2 };
  char json[8192] = "[", name[16], next[16];
  for (int i = 0; i < N; i++) {
    snprintf(name, sizeof name, "p%d", i);
    snprintf(next, sizeof next, "p%d", i + 1);
    size_t at = strlen(json);
    snprintf(json + at, sizeof json - at,
             "%s{\"kind\":\"prompt\",\"name\":\"%s\",\"prompt\":\"level\","
             "\"toolDescription\":\"the next level\",\"tools\":[%s%s%s]}",
             i ? "," : "", name, i + 1 < N ? "\"" : "", i + 1 < N ? next : "",
             i + 1 < N ? "\"" : "");
    if (i + 1 < N) turn_call(name, 1, next, "{}");
    turn_text(name, i + 1 < N ? 2 : 1, "up");
  }
  strcat(json, "]");
  ts_defs *defs = load(json);
  ts_registry *reg = tools();
  char why[512];
  run_opts o = {.prompt_name = "p0", .prompt = "go"};
  ck_assert_msg(run(defs, reg, "n", &o, why, sizeof why) == 0, "%s", why);
  /* the thread at depth TS_COMPOSE_MAX_DEPTH cannot start another level */
  char deepest[TS_THREAD_ID_MAX + 1] = "n";
  for (int i = 0; i < TS_COMPOSE_MAX_DEPTH; i++) strcat(deepest, "/t1c0");
  thread_dump d = dump(deepest);
  HAS(sb_str(&d.results), "nest deeper than");
  char below[TS_THREAD_ID_MAX + 8];
  snprintf(below, sizeof below, "%.200s/t1c0", deepest);
  ck_assert_int_eq(row(below).found, 0);
  thread_dump top = dump("n");
  HAS(sb_str(&top.results), "\"status\":\"done\",\"text\":\"up\"");
  dump_free(&d);
  dump_free(&top);
  ts_registry_free(reg);
  ts_defs_free(defs);
  ts_test_rm_rf(dir);
}
END_TEST

/* A dual_ai agent driving a root thread, stopped when a side has no recorded turn, then
 * resumed: the session goes on with the side whose turn it was, counting the replies
 * already given. */
START_TEST(test_dual_ai_session_resumes_where_it_stopped) {
  fresh("compose-dualresume");
  turn_text("pro", 1, "pro one");
  turn_text("con", 1, "con one");
  turn_text("pro", 2, "pro two");
  ts_defs *defs = load(dual_defs(4));
  ts_registry *reg = tools();
  char why[512];
  run_opts o = {.agent = "debate", .prompt = "tea?"};
  ck_assert_int_eq(run(defs, reg, "dr", &o, why, sizeof why), TS_E_IO);
  HAS(why, "no recorded turn 2 in");
  turn_text("con", 2, "con two");
  run_opts o2 = {.agent = "debate", .resume = 1};
  ck_assert_msg(run(defs, reg, "dr", &o2, why, sizeof why) == 0, "%s", why);
  thread_dump d = dump("dr");
  ck_assert_str_eq(sb_str(&d.roles), "uaaaa"); /* four replies: maxSessionTurns */
  HAS(sb_str(&d.assistant), "\"prompt\":\"con\",\"side\":\"b\",\"text\":\"con two\"");
  /* resuming the ended session runs nothing */
  ck_assert_msg(run(defs, reg, "dr", &o2, why, sizeof why) == 0, "%s", why);
  thread_dump d2 = dump("dr");
  ck_assert_str_eq(sb_str(&d2.roles), "uaaaa");
  dump_free(&d);
  dump_free(&d2);
  ts_registry_free(reg);
  ts_defs_free(defs);
  ts_test_rm_rf(dir);
}
END_TEST

/* ---- replay per prompt directory ---------------------------------------------------------- */

START_TEST(test_replay_needs_the_prompt_directory_for_a_child) {
  fresh("compose-replay");
  turn_call("main", 1, "helper", "{\\\"task\\\":\\\"t\\\"}");
  turn_text("main", 2, "main done");
  /* no rec/helper/: the child cannot play the caller's turns */
  run_main(sub_defs("\"helper\"", ""), "r1", __LINE__);
  thread_dump d = dump("r1");
  char res[4096];
  result_of(sb_str(&d.results), "helper", res, sizeof res);
  HAS(res, "\"status\":\"failed\"");
  HAS(res, "no recorded turns for prompt helper");
  dump_free(&d);
  ts_test_rm_rf(dir);
}
END_TEST

/* ---- resume of a parent killed while its child runs --------------------------------------- */

/* ---- a child that waits for a variable (tools-spec §3) ----------------------------------- */

static int grab_state(void *user, const ts_store_thread *t) {
  snprintf(user, 64, "%s", t->state);
  return 0;
}

static const char *state_of(const char *thread, char out[64]) {
  ts_store *s;
  char why[256];
  out[0] = '\0';
  ck_assert_int_eq(ts_store_open(dir, &s, why, sizeof why), 0);
  ts_store_thread_get(s, thread, grab_state, out);
  ts_store_close(s);
  return out;
}

static void set_var(const char *thread, const char *name, const char *value) {
  park_set_var(dir, thread, name, value); /* support/park_stop.h */
}

static int count_of(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p++) n++;
  return n;
}

/* main calls helper; helper calls greet (WHO required), then answers. */
static void greet_session(char *defs_json, size_t cap, const char *helper_extra) {
  turn_call("main", 1, "helper", "{\\\"task\\\":\\\"t\\\"}");
  turn_text("main", 2, "main done");
  turn_call("helper", 1, "greet", "{}");
  turn_text("helper", 2, "greeted");
  snprintf(defs_json, cap, "%s", sub_defs("\"helper\"", helper_extra));
  replace_in(defs_json, cap, "\"tools\":[\"echo\",\"fail\"]", "\"tools\":[\"greet\"]");
}

/* After WHO is set and the parent resumed: the child's call ran once with the value, the
 * child finished once, and the parent's call has one result, the child's outcome. */
static void check_greeted(const char *parent, const char *child) {
  char st[64], want[300];
  thread_dump cd = dump(child);
  ck_assert_int_eq(cd.nresults, 1);
  snprintf(want, sizeof want, "greet|c_helper_1|\"bob\"");
  HAS(sb_str(&cd.results), want);
  ck_assert_str_eq(state_of(child, st), "done");
  sb ce = {0};
  events(child, &ce);
  ck_assert_int_eq(count_of(sb_str(&ce), "\"type\":\"thread_finished\""), 1);
  ck_assert_int_eq(count_of(sb_str(&ce), "\"type\":\"tool_execution_started\""), 1);
  size_t len;
  char path[300];
  snprintf(path, sizeof path, "%s/greet.log", dir);
  char *log = ts_test_read_file(path, &len);
  ck_assert_str_eq(log, "g"); /* greet ran once */
  free(log);
  thread_dump d = dump(parent);
  ck_assert_int_eq(d.nresults, 1);
  snprintf(want, sizeof want, "helper|c_main_1|{\"thread\":\"%s\",\"status\":\"done\"", child);
  HAS(sb_str(&d.results), want);
  HAS(sb_str(&d.results), "\"text\":\"greeted\"");
  HASNT(sb_str(&d.results), "!helper");
  ck_assert_str_eq(sb_str(&d.roles), "utaa");
  ck_assert_str_eq(state_of(parent, st), "done");
  sb_free(&ce);
  dump_free(&cd);
  dump_free(&d);
}

/* A prompt tool's child whose call waits for a required variable: stopped there (Ctrl-C),
 * the child is waiting_for_variable, the caller's call has no result (it waits with its
 * child, it is not failed); env set on an ancestor and --resume run the child's call once,
 * in order, and the outcome reaches the caller once. */
START_TEST(test_prompt_tool_child_parks_for_a_variable) {
  fresh("compose-park");
  unsetenv("WHO");
  char defs_json[4096];
  greet_session(defs_json, sizeof defs_json, "");
  ts_defs *defs = load(defs_json);
  ts_registry *reg = tools();
  char why[512], st[64];
  park_stop w;
  park_stop_begin(&w, dir, "w1/t1c0");
  run_opts o = {.prompt_name = "main", .prompt = "go", .cancel = &w.cancel};
  int rc = run(defs, reg, "w1", &o, why, sizeof why);
  ck_assert(park_stop_end(&w));
  ck_assert_msg(rc == TS_E_ABORTED, "%d %s", rc, why);
  thread_dump d0 = dump("w1");
  ck_assert_int_eq(d0.nresults, 0); /* the caller's call waits with its child */
  dump_free(&d0);
  ck_assert_str_eq(state_of("w1/t1c0", st), "waiting_for_variable");
  ck_assert_str_eq(state_of("w1", st), "interrupted");
  sb ce = {0};
  events("w1/t1c0", &ce);
  HAS(sb_str(&ce), "\"type\":\"variable_required\",\"thread\":\"w1/t1c0\",\"parent\":\"w1\"");
  HAS(sb_str(&ce), "\"call_id\":\"c_helper_1\",\"tool\":\"greet\"");
  HAS(sb_str(&ce), "\"name\":\"WHO\",\"description\":\"who to greet\",\"var_type\":\"text\"");
  HASNT(sb_str(&ce), "thread_finished");
  sb_free(&ce);
  char path[300];
  snprintf(path, sizeof path, "%s/greet.log", dir);
  ck_assert_int_ne(access(path, F_OK), 0); /* greet never ran */
  set_var("w1", "WHO", "bob"); /* on the caller: the child inherits it */
  run_opts r = {.prompt_name = "main", .resume = 1};
  ck_assert_msg(run(defs, reg, "w1", &r, why, sizeof why) == 0, "%s", why);
  check_greeted("w1", "w1/t1c0");
  ck_assert_int_eq(thread_count(), 2);
  /* resuming again changes nothing */
  ck_assert_msg(run(defs, reg, "w1", &r, why, sizeof why) == 0, "%s", why);
  check_greeted("w1", "w1/t1c0");
  ts_registry_free(reg);
  ts_defs_free(defs);
  ts_test_rm_rf(dir);
}
END_TEST

/* The same, SIGKILLed while the child's call waits (the park committed), then WHO set on
 * the child and --resume. */
START_TEST(test_prompt_tool_child_parked_survives_sigkill) {
  fresh("compose-park-kill");
  unsetenv("WHO");
  char defs_json[4096];
  greet_session(defs_json, sizeof defs_json, "");
  ts_store *made; /* the store exists before two processes open it */
  char mwhy[256];
  ck_assert_int_eq(ts_store_open(dir, &made, mwhy, sizeof mwhy), 0);
  ts_store_close(made);
  fflush(stdout);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    ts_defs *defs = load(defs_json);
    ts_registry *reg = tools();
    char why[512];
    run_opts o = {.prompt_name = "main", .prompt = "go"};
    _exit(run(defs, reg, "w3", &o, why, sizeof why) == 0 ? 0 : 80);
  }
  park_stop w; /* here only its look at the store: the kill is ours */
  park_stop_begin(&w, dir, "w3/t1c0");
  pthread_join(w.th, NULL);
  ck_assert(w.seen);
  kill(pid, SIGKILL);
  int status;
  waitpid(pid, &status, 0);
  ck_assert(WIFSIGNALED(status));
  char st[64];
  ck_assert_str_eq(state_of("w3/t1c0", st), "waiting_for_variable");
  set_var("w3/t1c0", "WHO", "bob");
  ts_defs *defs = load(defs_json);
  ts_registry *reg = tools();
  char why[512];
  run_opts r = {.prompt_name = "main", .resume = 1};
  ck_assert_msg(run(defs, reg, "w3", &r, why, sizeof why) == 0, "%s", why);
  check_greeted("w3", "w3/t1c0");
  ts_registry_free(reg);
  ts_defs_free(defs);
  ts_test_rm_rf(dir);
}
END_TEST

/* A prompt tool's child whose own prompt requires a variable without a value: the child
 * stops and waits for it (not failed, not reported), and so does its caller, as a root
 * thread does for its own prompt's variable; env set + --resume finish both. */
START_TEST(test_prompt_tool_child_waits_for_its_prompt_variable) {
  fresh("compose-park-prompt");
  unsetenv("WHO");
  unsetenv("REGION");
  char defs_json[4096];
  greet_session(defs_json, sizeof defs_json,
                ",\"variables\":[{\"name\":\"REGION\",\"type\":\"text\",\"required\":true,"
                "\"description\":\"where\"}]");
  ts_defs *defs = load(defs_json);
  ts_registry *reg = tools();
  char why[512], st[64];
  run_opts o = {.prompt_name = "main", .prompt = "go"};
  int rc = run(defs, reg, "w2", &o, why, sizeof why);
  ck_assert_msg(rc == TS_E_VAR_MISSING, "%d %s", rc, why);
  HAS(why, "requires the variable REGION");
  HAS(why, "env set w2/t1c0 REGION");
  thread_dump d0 = dump("w2");
  ck_assert_int_eq(d0.nresults, 0);
  dump_free(&d0);
  ck_assert_str_eq(state_of("w2/t1c0", st), "waiting_for_variable");
  ck_assert_str_eq(state_of("w2", st), "waiting_for_variable");
  sb ce = {0};
  events("w2/t1c0", &ce);
  HAS(sb_str(&ce), "\"type\":\"variable_required\",\"thread\":\"w2/t1c0\",\"parent\":\"w2\"");
  HAS(sb_str(&ce), "\"name\":\"REGION\",\"description\":\"where\"");
  HASNT(sb_str(&ce), "thread_finished");
  sb_free(&ce);
  /* still missing: a resume stops again the same way, nothing run */
  run_opts r = {.prompt_name = "main", .resume = 1};
  ck_assert_int_eq(run(defs, reg, "w2", &r, why, sizeof why), TS_E_VAR_MISSING);
  set_var("w2/t1c0", "REGION", "eu");
  set_var("w2", "WHO", "bob");
  ck_assert_msg(run(defs, reg, "w2", &r, why, sizeof why) == 0, "%s", why);
  check_greeted("w2", "w2/t1c0");
  ts_registry_free(reg);
  ts_defs_free(defs);
  ts_test_rm_rf(dir);
}
END_TEST

/* A subagent (blocking or not) whose agent requires a variable without a value: the child
 * stops and waits (not failed, nothing reported), the parent stops waiting too (its create
 * call suspended, or its loop told a child waits) instead of ending; env set and --resume
 * run the child once and its outcome reaches the parent once. */
static void subagent_waits_for_its_agent_variable(int blocking) {
  fresh(blocking ? "compose-sub-var-b" : "compose-sub-var-nb");
  unsetenv("CHANNEL");
  unsetenv("WHO");
  char json[2048];
  snprintf(json, sizeof json,
           "[{\"kind\":\"prompt\",\"name\":\"lead_p\",\"prompt\":\"lead\"},"
           " {\"kind\":\"prompt\",\"name\":\"work_p\",\"prompt\":\"work\",\"tools\":[\"greet\"]},"
           " {\"kind\":\"agent\",\"name\":\"lead\",\"sideA\":{\"prompt\":\"lead_p\","
           "\"subagents\":[{\"agent\":\"worker\",\"blocking\":%s}]}},"
           " {\"kind\":\"agent\",\"name\":\"worker\",\"sideA\":{\"prompt\":\"work_p\"},"
           "\"variables\":[{\"name\":\"CHANNEL\",\"type\":\"text\",\"required\":true,"
           "\"description\":\"where to post\"}]}]",
           blocking ? "true" : "false");
  turn_call("lead_p", 1, "subagent_create", "{\\\"name\\\":\\\"w\\\",\\\"message\\\":\\\"go\\\"}");
  turn_text("lead_p", 2, "lead done");
  turn_text("lead_p", 3, "heard");
  turn_call("work_p", 1, "greet", "{}");
  turn_text("work_p", 2, "worked");
  ts_defs *defs = load(json);
  ts_registry *reg = tools();
  char why[512], st[64];
  run_opts o = {.agent = "lead", .prompt = "go"};
  int rc = run(defs, reg, "n1", &o, why, sizeof why);
  ck_assert_msg(rc == TS_E_VAR_MISSING, "%d %s", rc, why);
  HAS(why, "requires the variable CHANNEL");
  HAS(why, "n1/t1c0");
  ck_assert_str_eq(state_of("n1/t1c0", st), "waiting_for_variable");
  ck_assert_str_eq(state_of("n1", st), "waiting_for_variable");
  sb ce = {0};
  events("n1/t1c0", &ce);
  HAS(sb_str(&ce), "\"type\":\"variable_required\",\"thread\":\"n1/t1c0\",\"parent\":\"n1\"");
  HAS(sb_str(&ce), "\"name\":\"CHANNEL\",\"description\":\"where to post\"");
  HASNT(sb_str(&ce), "thread_finished");
  sb_free(&ce);
  thread_dump d0 = dump("n1");
  ck_assert_int_eq(d0.nresults, blocking ? 0 : 1); /* blocking: the create call waits */
  HASNT(sb_str(&d0.users), "worked");
  dump_free(&d0);
  set_var("n1/t1c0", "CHANNEL", "general");
  set_var("n1", "WHO", "bob");
  run_opts r = {.agent = "lead", .resume = 1};
  ck_assert_msg(run(defs, reg, "n1", &r, why, sizeof why) == 0, "%s", why);
  ck_assert_str_eq(state_of("n1/t1c0", st), "done");
  ck_assert_str_eq(state_of("n1", st), "done");
  thread_dump cd = dump("n1/t1c0");
  ck_assert_int_eq(cd.nresults, 1);
  HAS(sb_str(&cd.results), "greet|c_work_p_1|\"bob\"");
  dump_free(&cd);
  events("n1/t1c0", &ce);
  ck_assert_int_eq(count_of(sb_str(&ce), "\"type\":\"thread_finished\""), 1);
  sb_free(&ce);
  thread_dump d = dump("n1");
  /* the outcome once: the blocking call's one result, or one message to the parent */
  const char *where = blocking ? sb_str(&d.results) : sb_str(&d.users);
  ck_assert_msg(count_of(where, "\"text\":\"worked\"") == 1, "results:\n%s\nusers:\n%s",
                sb_str(&d.results), sb_str(&d.users));
  ck_assert_int_eq(d.nresults, 1);
  HASNT(sb_str(&d.results), "!subagent_create");
  dump_free(&d);
  size_t len;
  char path[300];
  snprintf(path, sizeof path, "%s/greet.log", dir);
  char *log = ts_test_read_file(path, &len);
  ck_assert_str_eq(log, "g");
  free(log);
  ts_registry_free(reg);
  ts_defs_free(defs);
  ts_test_rm_rf(dir);
}

START_TEST(test_blocking_subagent_waits_for_its_agent_variable) {
  subagent_waits_for_its_agent_variable(1);
}
END_TEST

START_TEST(test_nonblocking_subagent_waits_for_its_agent_variable) {
  subagent_waits_for_its_agent_variable(0);
}
END_TEST

START_TEST(test_resume_parent_killed_while_child_runs) {
  fresh("compose-kill");
  turn_call("main", 1, "helper", "{\\\"task\\\":\\\"t\\\"}");
  turn_text("main", 2, "main done");
  turn_call("helper", 1, "echo", "{\\\"y\\\":1}");
  turn_call("helper", 2, "hang", "{}");
  turn_text("helper", 3, "helped after all");
  char defs_json[4096];
  snprintf(defs_json, sizeof defs_json, "%s", sub_defs("\"helper\"", ""));
  /* helper may also hang */
  replace_in(defs_json, sizeof defs_json, "\"tools\":[\"echo\",\"fail\"]",
             "\"tools\":[\"echo\",\"hang\"]");
  fflush(stdout);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    ts_defs *defs = load(defs_json);
    ts_registry *reg = tools();
    char why[512];
    run_opts o = {.prompt_name = "main", .prompt = "go"};
    _exit(run(defs, reg, "k1", &o, why, sizeof why) == 0 ? 0 : 80);
  }
  char marker[300];
  snprintf(marker, sizeof marker, "%s/hang.log", dir);
  struct stat st;
  /* the marker's byte, not just the file: the tool creates it, then writes, and a kill
   * between the two (a loaded machine) would leave it empty */
  for (int i = 0; i < 30000 && (stat(marker, &st) || st.st_size < 1); i++) { /* up to a minute */
    struct timespec p = {0, 2000000L};
    nanosleep(&p, NULL);
  }
  ck_assert_int_eq(stat(marker, &st), 0);
  ck_assert_int_ge(st.st_size, 1);
  kill(pid, SIGKILL);
  int status;
  waitpid(pid, &status, 0);
  ck_assert(WIFSIGNALED(status));
  /* killed inside the child's hang call: the parent's helper call is unfinished */
  thread_dump d0 = dump("k1");
  ck_assert_int_eq(d0.nresults, 0);
  dump_free(&d0);
  ts_defs *defs = load(defs_json);
  ts_registry *reg = tools();
  char why[512];
  run_opts o = {.prompt_name = "main", .resume = 1};
  ck_assert_msg(run(defs, reg, "k1", &o, why, sizeof why) == 0, "%s", why);
  /* the same child, resumed: its committed echo is not run again, the hang call has the
   * interrupted result, and it went on to its answer */
  ck_assert_int_eq(thread_count(), 2);
  thread_dump cd = dump("k1/t1c0");
  ck_assert_str_eq(sb_str(&cd.roles), "utataa");
  HAS(sb_str(&cd.results), "echo|c_helper_1|{\"y\":1}");
  HAS(sb_str(&cd.results), "!hang|c_helper_2|interrupted");
  ck_assert_int_eq(cd.nresults, 2);
  size_t len;
  char *log = ts_test_read_file(marker, &len);
  ck_assert_str_eq(log, "x"); /* hang ran once */
  free(log);
  thread_dump d = dump("k1");
  ck_assert_int_eq(d.nresults, 1); /* one result for the parent's call */
  ck_assert_str_eq(sb_str(&d.roles), "utaa");
  HAS(sb_str(&d.results), "helper|c_main_1|{\"thread\":\"k1/t1c0\",\"status\":\"done\","
                   "\"text\":\"helped after all\"");
  /* resuming again changes nothing */
  ck_assert_msg(run(defs, reg, "k1", &o, why, sizeof why) == 0, "%s", why);
  thread_dump d3 = dump("k1");
  ck_assert_str_eq(sb_str(&d3.roles), "utaa");
  dump_free(&d3);
  dump_free(&cd);
  dump_free(&d);
  ts_registry_free(reg);
  ts_defs_free(defs);
  ts_test_rm_rf(dir);
}
END_TEST

/* SIGKILL at random points of a run whose prompt tool's child runs two tools, paced so
 * that the kills land in the caller's turn, in the child's turns and between them; after
 * --resume: one child per call, every call of both threads has exactly one result, in
 * order, both threads finished, and a second resume changes nothing. */
static int count_results(const char *results, const char *tool) {
  int n = 0;
  for (const char *p = results; (p = strstr(p, tool)); p++) n++;
  return n;
}

/* The run the kills interrupt: the definitions, and one whole run of `thread` in a child
 * process (support/crash_tools.h), paced so that it lasts long enough to be hit. */
static char kills_defs[4096];
static const run_opts kills_run = {.prompt_name = "main", .prompt = "go", .rate = 300};

static void kills_child(const char *thread, unsigned seed) {
  srand(seed);
  ts_defs *defs = load(kills_defs);
  ts_registry *reg = tools();
  char why[512];
  run_opts o = kills_run;
  _exit(run(defs, reg, thread, &o, why, sizeof why) == 0 ? 0 : 80);
}

START_TEST(test_tree_survives_random_kills) {
  fresh("compose-kills");
  turn_call("main", 1, "helper", "{\\\"task\\\":\\\"t\\\"}");
  turn_text("main", 2, "main done");
  turn_call("helper", 1, "echo", "{\\\"n\\\":1}");
  turn_call("helper", 2, "echo", "{\\\"n\\\":2}");
  turn_text("helper", 3, "helped");
  snprintf(kills_defs, sizeof kills_defs, "%s", sub_defs("\"helper\"", ""));
  const char *defs_json = kills_defs;
  ts_test_crash_seed("compose_test", 0xC0DEu);
  /* how long a whole run takes here; every kill lands at a random point of it */
  long span_us = ts_test_crash_span(kills_child);
  ck_assert_msg(span_us > 0, "the probe run failed");
  ts_test_kill_plan plan = {NULL, span_us, 0, 0};
  int in_child = 0, child_partial = 0;
  for (int round = 0; round < 12; round++) {
    char thread[32], child[64];
    snprintf(thread, sizeof thread, "kk%d", round);
    snprintf(child, sizeof child, "kk%d/t1c0", round);
    ts_test_crash_kill(&plan, round, thread, kills_child);
    ts_defs *defs = load(defs_json);
    ts_registry *reg = tools();
    char why[512];
    run_opts o = {.prompt_name = "main", .resume = 1};
    thread_row before = row(thread);
    thread_dump at_kill = dump(thread), child_at_kill = dump(child);
    if (!before.found) { /* killed before the thread existed: start it again */
      o.resume = 0;
      o.prompt = "go";
    } else if (!strchr(sb_str(&at_kill.roles), 'u')) {
      o.prompt = "go"; /* killed between the thread's creation and its first message */
    }
    in_child += row(child).found && !strchr(sb_str(&at_kill.roles), 'a');
    child_partial += child_at_kill.nresults > 0 && child_at_kill.nresults < 2;
    dump_free(&at_kill);
    dump_free(&child_at_kill);
    ck_assert_msg(run(defs, reg, thread, &o, why, sizeof why) == 0, "round %d: %s", round, why);
    thread_dump p = dump(thread), c = dump(child);
    /* a user message stored before the kill: "utaa"; else the restart stored it */
    ck_assert_msg(!strcmp(sb_str(&p.roles), "utaa"), "round %d: %s", round, sb_str(&p.roles));
    ck_assert_msg(!strcmp(sb_str(&c.roles), "utataa"), "round %d: %s", round, sb_str(&c.roles));
    ck_assert_int_eq(count_results(sb_str(&p.results), "helper|"), 1);
    ck_assert_int_eq(count_results(sb_str(&c.results), "|c_helper_1|"), 1);
    ck_assert_int_eq(count_results(sb_str(&c.results), "|c_helper_2|"), 1);
    ck_assert_ptr_nonnull(strstr(sb_str(&c.results), "c_helper_1"));
    ck_assert(strstr(sb_str(&c.results), "c_helper_1") < strstr(sb_str(&c.results), "c_helper_2"));
    HAS(sb_str(&p.results), "\"thread\":\"");
    HAS(sb_str(&p.results), child);
    thread_row cr = row(child);
    ck_assert_str_eq(cr.parent, thread);
    dump_free(&p);
    dump_free(&c);
    /* a second resume: nothing changes */
    o.resume = 1;
    o.prompt = NULL;
    ck_assert_msg(run(defs, reg, thread, &o, why, sizeof why) == 0, "round %d: %s", round, why);
    thread_dump p2 = dump(thread);
    ck_assert_str_eq(sb_str(&p2.roles), "utaa");
    dump_free(&p2);
    ts_registry_free(reg);
    ts_defs_free(defs);
  }
  printf("compose_test: %d of 12 kills while the child ran (%d between its calls)\n", in_child,
         child_partial);
  ck_assert_int_eq(thread_count(), 2 + 24);
  ts_test_rm_rf(dir);
}
END_TEST

START_TEST(test_child_id) {
  char out[TS_THREAD_ID_MAX + 1];
  ts_compose_child_id("abc", 3, 1, out);
  ck_assert_str_eq(out, "abc/t3c1");
  char longid[TS_THREAD_ID_MAX + 1];
  memset(longid, 'x', TS_THREAD_ID_MAX);
  longid[TS_THREAD_ID_MAX] = '\0';
  ts_compose_child_id(longid, 3, 1, out);
  ck_assert_int_eq(strlen(out), TS_THREAD_ID_GEN_LEN);
  char again[TS_THREAD_ID_MAX + 1], other[TS_THREAD_ID_MAX + 1];
  ts_compose_child_id(longid, 3, 1, again);
  ts_compose_child_id(longid, 3, 2, other);
  ck_assert_str_eq(out, again);
  ck_assert_str_ne(out, other);
}
END_TEST

int main(void) {
  Suite *s = suite_create("compose");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 240);
  tcase_add_test(tc, test_child_id);
  tcase_add_test(tc, test_function_tool_and_the_driving_prompt);
  tcase_add_test(tc, test_variable_layers_of_a_driver);
  tcase_add_test(tc, test_entry_env_is_per_tool);
  tcase_add_test(tc, test_required_prompt_variable);
  tcase_add_test(tc, test_system_text_refuses_a_secret_and_unknown_drivers);
  tcase_add_test(tc, test_prompt_tool_defaults);
  tcase_add_test(tc, test_prompt_tool_arguments_are_validated);
  tcase_add_test(tc, test_subprompt_include_fields);
  tcase_add_test(tc, test_init_user_message_and_attachments);
  tcase_add_test(tc, test_bad_attachments_are_error_results);
  tcase_add_test(tc, test_child_tools_work_in_the_child_filesystem);
  tcase_add_test(tc, test_reply_attachments_come_back_to_the_caller);
  tcase_add_test(tc, test_include_chat_and_past_tools);
  tcase_add_test(tc, test_handoff);
  tcase_add_test(tc, test_dual_ai_stop_tool);
  tcase_add_test(tc, test_dual_ai_max_session_turns_and_fail_tool);
  tcase_add_test(tc, test_dual_ai_session_resumes_where_it_stopped);
  tcase_add_test(tc, test_replay_needs_the_prompt_directory_for_a_child);
  tcase_add_test(tc, test_nesting_is_bounded);
  tcase_add_test(tc, test_resume_parent_killed_while_child_runs);
  tcase_add_test(tc, test_prompt_tool_child_parks_for_a_variable);
  tcase_add_test(tc, test_prompt_tool_child_parked_survives_sigkill);
  tcase_add_test(tc, test_prompt_tool_child_waits_for_its_prompt_variable);
  tcase_add_test(tc, test_blocking_subagent_waits_for_its_agent_variable);
  tcase_add_test(tc, test_nonblocking_subagent_waits_for_its_agent_variable);
  tcase_add_test(tc, test_tree_survives_random_kills);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
