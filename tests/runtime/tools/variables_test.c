/*
 * variables_test.c: variables (runtime/tools/variables.c) and the dispatcher's use of
 * them: precedence at every level, scoped over a three-level tree, secrets sealed at rest
 * (the value and its base64 absent from the database file), the key file and a wrong
 * key, a sealed value moved to another name, redaction, and a call parked for a required
 * variable that another connection's commit wakes, in order, with the secret redacted
 * from its result.
 */
#include <check.h>
#include <dirent.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store/store.h"
#include "support/runner.h"
#include "support/tempdir.h"
#include "support/test_support.h"
#include "tools/dispatch.h"
#include "tools/registry.h"
#include "tools/variables.h"

static char tmp[256];

static void setup(void) {
  strcpy(tmp, "/tmp/ts_vars_test_XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(tmp));
  unsetenv("TOOLSTREAM_SECRET_KEY");
  unsetenv("TS_VT_PROCESS");
}

static void teardown(void) { ts_test_rm_rf(tmp); }

static ts_store *open_store(void) {
  ts_store *s = NULL;
  char why[512];
  int r = ts_store_open(tmp, &s, why, sizeof why);
  ck_assert_msg(r == 0, "%s", why);
  return s;
}

static ts_vars *open_vars(ts_store *s) {
  ts_vars *v = NULL;
  ck_assert_int_eq(ts_vars_open(s, NULL, &v), TS_E_OK);
  return v;
}

/* The value resolved for `name` on `thread`, as "source:value" or "source:-". */
static const char *resolve(ts_vars *v, const char *thread, const ts_var_def *def,
                           const ts_var_layers *layers) {
  static char out[512];
  ts_var_value val;
  int r = ts_vars_resolve(v, thread, def, layers, &val);
  ck_assert_msg(r == TS_E_OK, "%s: %s", ts_err_name(r), ts_vars_errmsg(v));
  snprintf(out, sizeof out, "%s:%s%s%s", ts_var_source_name(val.source),
           val.value ? val.value : "-", val.from_thread[0] ? "@" : "", val.from_thread);
  ts_var_value_fini(&val);
  return out;
}

static void set(ts_vars *v, const char *thread, const char *name, ts_var_type type,
                const char *value) {
  int r = ts_vars_set(v, thread, name, type, value, strlen(value), "test");
  ck_assert_msg(r == TS_E_OK, "%s: %s", ts_err_name(r), ts_vars_errmsg(v));
}

/* ---- precedence ------------------------------------------------------------------------ */

START_TEST(test_precedence_every_level) {
  ts_store *s = open_store();
  ts_vars *v = open_vars(s);
  ck_assert_int_eq(ts_store_thread_create(s, "root", NULL), 0);
  ck_assert_int_eq(ts_store_thread_create_child(s, "kid", "root", NULL, NULL), 0);
  ts_var_def def = {"V", TS_VAR_TEXT, 1, 0, "a value"};
  const char *agent[] = {"V=agent", "W=x"}, *tool[] = {"V=tool"}, *prompt[] = {"V=prompt"};
  setenv("V", "process", 1);
  ts_var_layers all = {agent, 2, tool, 1, prompt, 1, 1};
  /* Peel the layers off from the top: each level wins over everything below it. */
  set(v, "kid", "V", TS_VAR_TEXT, "own");
  set(v, "root", "V", TS_VAR_TEXT, "parent");
  ck_assert_str_eq(resolve(v, "kid", &def, &all), "thread:own@kid");
  ck_assert_int_eq(ts_store_env_unset(s, "kid", "V"), 1);
  ck_assert_str_eq(resolve(v, "kid", &def, &all), "inherited:parent@root");
  ck_assert_int_eq(ts_store_env_unset(s, "root", "V"), 1);
  ck_assert_str_eq(resolve(v, "kid", &def, &all), "agent env:agent");
  all.n_agent = 1;
  agent[0] = "W=y"; /* the agent sets other names only */
  ck_assert_str_eq(resolve(v, "kid", &def, &all), "tool env:tool");
  all.n_tool = 0;
  ck_assert_str_eq(resolve(v, "kid", &def, &all), "prompt env:prompt");
  all.n_prompt = 0;
  ck_assert_str_eq(resolve(v, "kid", &def, &all), "process environment:process");
  all.process_env = 0;
  ck_assert_str_eq(resolve(v, "kid", &def, &all), "unset:-");
  ck_assert_str_eq(resolve(v, "kid", &def, NULL), "unset:-");
  /* the process environment never supplies a secret */
  ts_var_def sdef = {"V", TS_VAR_SECRET, 1, 0, ""};
  all.process_env = 1;
  ck_assert_str_eq(resolve(v, "kid", &sdef, &all), "unset:-");
  /* the last of a name in a layer wins */
  const char *twice[] = {"V=first", "V=second"};
  ts_var_layers t2 = {NULL, 0, twice, 2, NULL, 0, 0};
  ck_assert_str_eq(resolve(v, "kid", &def, &t2), "tool env:second");
  unsetenv("V");
  ts_vars_free(v);
  ts_store_close(s);
}
END_TEST

/* ---- scoped over three levels ------------------------------------------------------------- */

START_TEST(test_scoped_three_levels) {
  ts_store *s = open_store();
  ts_vars *v = open_vars(s);
  ck_assert_int_eq(ts_store_thread_create(s, "a", NULL), 0);
  ck_assert_int_eq(ts_store_thread_create_child(s, "b", "a", NULL, NULL), 0);
  ck_assert_int_eq(ts_store_thread_create_child(s, "c", "b", NULL, NULL), 0);
  ts_var_def plain = {"V", TS_VAR_TEXT, 0, 0, ""}, scoped = {"V", TS_VAR_TEXT, 0, 1, ""};
  set(v, "a", "V", TS_VAR_TEXT, "from-a");
  /* not scoped: everyone inherits a's value */
  ck_assert_str_eq(resolve(v, "b", &plain, NULL), "inherited:from-a@a");
  ck_assert_str_eq(resolve(v, "c", &plain, NULL), "inherited:from-a@a");
  /* b declares V scoped: a's value does not cross into b's subtree ... */
  ck_assert_int_eq(ts_vars_declare(v, "b", &scoped, "tool t"), 0);
  ck_assert_str_eq(resolve(v, "b", &scoped, NULL), "unset:-");
  ck_assert_str_eq(resolve(v, "c", &plain, NULL), "unset:-");
  ck_assert_str_eq(resolve(v, "c", &scoped, NULL), "unset:-");
  ts_var_value val;
  ck_assert_int_eq(ts_vars_resolve(v, "c", &plain, NULL, &val), TS_E_OK);
  ck_assert_int_eq(val.blocked, 1); /* there was a value, blocked on the way */
  ts_var_value_fini(&val);
  /* ... a is unaffected ... */
  ck_assert_str_eq(resolve(v, "a", &plain, NULL), "thread:from-a@a");
  /* ... and a value provided on b flows down to c, whether or not c declares it too */
  set(v, "b", "V", TS_VAR_TEXT, "from-b");
  ck_assert_str_eq(resolve(v, "b", &scoped, NULL), "thread:from-b@b");
  ck_assert_str_eq(resolve(v, "c", &plain, NULL), "inherited:from-b@b");
  ck_assert_int_eq(ts_vars_declare(v, "c", &scoped, "tool t"), 0);
  ck_assert_str_eq(resolve(v, "c", &scoped, NULL), "inherited:from-b@b");
  /* c's own value wins over b's */
  set(v, "c", "V", TS_VAR_TEXT, "from-c");
  ck_assert_str_eq(resolve(v, "c", &scoped, NULL), "thread:from-c@c");
  /* the resolving thread's own definition blocks too (c's tool declares it scoped, c has no
   * value of its own, b's value is not on a declaring thread once b's declaration goes) */
  ck_assert_int_eq(ts_store_env_unset(s, "c", "V"), 1);
  ts_store_env_decl plain_b = {"b", "V", TS_STORE_TEXT, 0, 0, "", "tool t"};
  ck_assert_int_eq(ts_store_env_declare(s, &plain_b), 0);
  ck_assert_str_eq(resolve(v, "c", &plain, NULL), "inherited:from-b@b");
  ck_assert_str_eq(resolve(v, "c", &scoped, NULL), "unset:-");
  /* a declaring root's value flows to every descendant, across declaring threads */
  ts_store_env_decl scoped_a = {"a", "V", TS_STORE_TEXT, 0, 1, "", "tool t"};
  ck_assert_int_eq(ts_store_env_declare(s, &scoped_a), 0);
  ck_assert_int_eq(ts_store_env_unset(s, "b", "V"), 1);
  ck_assert_str_eq(resolve(v, "c", &scoped, NULL), "inherited:from-a@a");
  /* scoped blocks the tree only: the definition layers still apply */
  ck_assert_int_eq(ts_store_env_unset(s, "a", "V"), 1);
  const char *prompt[] = {"V=prompt"};
  ts_var_layers l = {NULL, 0, NULL, 0, prompt, 1, 0};
  ck_assert_str_eq(resolve(v, "c", &scoped, &l), "prompt env:prompt");
  ts_vars_free(v);
  ts_store_close(s);
}
END_TEST

/* ---- secrets ------------------------------------------------------------------------------- */

static int file_contains(const char *path, const char *needle) {
  size_t len;
  char *b = ts_test_read_file(path, &len);
  size_t nl = strlen(needle);
  int found = 0;
  for (size_t i = 0; !found && i + nl <= len; i++) found = !memcmp(b + i, needle, nl);
  free(b);
  return found;
}

static const char *path_in(const char *rel) {
  static char p[2][512];
  static int k;
  k ^= 1;
  snprintf(p[k], sizeof p[k], "%s/%s", tmp, rel);
  return p[k];
}

START_TEST(test_secret_sealed_at_rest) {
  static const char secret[] = "sk-live-Zq8v93hfKx2mPwL";
  static const char b64[] = "c2stbGl2ZS1acTh2OTNoZkt4Mm1Qd0w"; /* base64 of it, no padding */
  ts_store *s = open_store();
  ts_vars *v = open_vars(s);
  ck_assert_int_eq(ts_store_thread_create(s, "t", NULL), 0);
  struct stat sb;
  ck_assert_int_ne(stat(path_in("secret.key"), &sb), 0); /* no secret yet: no key file */
  ck_assert_int_eq(ts_vars_check_key(v), TS_E_OK);
  ck_assert_int_ne(stat(path_in("secret.key"), &sb), 0);
  set(v, "t", "API_KEY", TS_VAR_SECRET, secret);
  ck_assert_int_eq(stat(path_in("secret.key"), &sb), 0);
  ck_assert_uint_eq(sb.st_mode & 0777, 0600);
  ts_var_def def = {"API_KEY", TS_VAR_SECRET, 1, 0, ""};
  ck_assert_str_eq(resolve(v, "t", &def, NULL), "thread:sk-live-Zq8v93hfKx2mPwL@t");
  ts_vars_free(v);
  ts_store_close(s); /* checkpointed into the main file */
  ck_assert_int_eq(file_contains(path_in("toolstream.db"), secret), 0);
  ck_assert_int_eq(file_contains(path_in("toolstream.db"), b64), 0);
  ck_assert_int_eq(file_contains(path_in("toolstream.db"), "sk-live"), 0);
  /* reopened by another "process": the key file opens it */
  s = open_store();
  v = open_vars(s);
  ck_assert_int_eq(ts_vars_check_key(v), TS_E_OK);
  ck_assert_str_eq(resolve(v, "t", &def, NULL), "thread:sk-live-Zq8v93hfKx2mPwL@t");
  /* a text definition of the name still gets the value, still opened only here */
  ts_var_def tdef = {"API_KEY", TS_VAR_TEXT, 0, 0, ""};
  ck_assert_str_eq(resolve(v, "t", &tdef, NULL), "thread:sk-live-Zq8v93hfKx2mPwL@t");
  ck_assert_int_eq(ts_vars_default_type(v, "t", "API_KEY"), TS_VAR_SECRET);
  ck_assert_int_eq(ts_vars_default_type(v, "t", "OTHER"), TS_VAR_TEXT);
  /* a sealed value copied to another name does not open there */
  sqlite3 *db;
  ck_assert_int_eq(sqlite3_open(path_in("toolstream.db"), &db), SQLITE_OK);
  ck_assert_int_eq(sqlite3_exec(db, "INSERT INTO env_values SELECT thread, 'STOLEN', type, "
                                    "value, origin, set_at FROM env_values WHERE name = 'API_KEY'",
                                NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(db);
  ts_var_def stolen = {"STOLEN", TS_VAR_SECRET, 0, 0, ""};
  ts_var_value val;
  ck_assert_int_eq(ts_vars_resolve(v, "t", &stolen, NULL, &val), TS_E_VAR_DECRYPT);
  ck_assert_ptr_null(val.value);
  ck_assert_ptr_null(strstr(ts_vars_errmsg(v), "sk-live"));
  ts_vars_free(v);
  ts_store_close(s);
}
END_TEST

START_TEST(test_wrong_key_refused) {
  ts_store *s = open_store();
  ts_vars *v = open_vars(s);
  ck_assert_int_eq(ts_store_thread_create(s, "t", NULL), 0);
  set(v, "t", "K", TS_VAR_SECRET, "the-secret-value");
  ts_vars_free(v);
  ts_var_def def = {"K", TS_VAR_SECRET, 1, 0, ""};
  ts_var_value val;

  /* another key in the key file: refused before anything is opened */
  FILE *f = fopen(path_in("secret.key"), "w");
  fputs("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n", f);
  fclose(f);
  v = open_vars(s);
  ck_assert_int_eq(ts_vars_check_key(v), TS_E_VAR_KEY);
  ck_assert_ptr_nonnull(strstr(ts_vars_errmsg(v), "is not the one this store's secrets were"));
  ck_assert_ptr_nonnull(strstr(ts_vars_errmsg(v), "secret.key"));
  ck_assert_int_eq(ts_vars_resolve(v, "t", &def, NULL, &val), TS_E_VAR_KEY);
  ck_assert_int_eq(ts_vars_set(v, "t", "K2", TS_VAR_SECRET, "x", 1, "o"), TS_E_VAR_KEY);
  ts_vars_free(v);

  /* malformed */
  f = fopen(path_in("secret.key"), "w");
  fputs("not a key\n", f);
  fclose(f);
  v = open_vars(s);
  ck_assert_int_eq(ts_vars_check_key(v), TS_E_VAR_KEY_FILE);
  ck_assert_ptr_nonnull(strstr(ts_vars_errmsg(v), "malformed"));
  ts_vars_free(v);

  /* readable by others */
  chmod(path_in("secret.key"), 0644);
  v = open_vars(s);
  ck_assert_int_eq(ts_vars_check_key(v), TS_E_VAR_KEY_FILE);
  ck_assert_ptr_nonnull(strstr(ts_vars_errmsg(v), "readable by others"));
  ts_vars_free(v);

  /* missing while secrets exist: not silently replaced by a new key */
  unlink(path_in("secret.key"));
  v = open_vars(s);
  ck_assert_int_eq(ts_vars_resolve(v, "t", &def, NULL, &val), TS_E_VAR_KEY_FILE);
  ck_assert_ptr_nonnull(strstr(ts_vars_errmsg(v), "missing"));
  ck_assert_int_eq(ts_vars_set(v, "t", "K3", TS_VAR_SECRET, "x", 1, "o"), TS_E_VAR_KEY_FILE);
  struct stat sb;
  ck_assert_int_ne(stat(path_in("secret.key"), &sb), 0);
  ts_vars_free(v);

  /* a wrong key from the environment */
  setenv("TOOLSTREAM_SECRET_KEY", "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100", 1);
  v = open_vars(s);
  ck_assert_int_eq(ts_vars_check_key(v), TS_E_VAR_KEY);
  ck_assert_ptr_nonnull(strstr(ts_vars_errmsg(v), "$TOOLSTREAM_SECRET_KEY"));
  ts_vars_free(v);
  setenv("TOOLSTREAM_SECRET_KEY", "short", 1);
  v = open_vars(s);
  ck_assert_int_eq(ts_vars_check_key(v), TS_E_VAR_KEY_FILE);
  ts_vars_free(v);
  unsetenv("TOOLSTREAM_SECRET_KEY");
  ts_store_close(s);
}
END_TEST

START_TEST(test_key_from_environment) {
  setenv("TOOLSTREAM_SECRET_KEY", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", 1);
  ts_store *s = open_store();
  ts_vars *v = open_vars(s);
  ck_assert_int_eq(ts_store_thread_create(s, "t", NULL), 0);
  set(v, "t", "K", TS_VAR_SECRET, "env-keyed-secret");
  struct stat sb;
  ck_assert_int_ne(stat(path_in("secret.key"), &sb), 0); /* no file with a key from $VAR */
  ts_var_def def = {"K", TS_VAR_SECRET, 1, 0, ""};
  ck_assert_str_eq(resolve(v, "t", &def, NULL), "thread:env-keyed-secret@t");
  ts_vars_free(v);
  unsetenv("TOOLSTREAM_SECRET_KEY");
  v = open_vars(s); /* without the key: refused, with a clear reason */
  ts_var_value val;
  ck_assert_int_eq(ts_vars_resolve(v, "t", &def, NULL, &val), TS_E_VAR_KEY_FILE);
  ts_vars_free(v);
  ts_store_close(s);
}
END_TEST

START_TEST(test_bad_values) {
  ts_store *s = open_store();
  ts_vars *v = open_vars(s);
  ck_assert_int_eq(ts_store_thread_create(s, "t", NULL), 0);
  ck_assert_int_eq(ts_vars_set(v, "t", "A", TS_VAR_TEXT, "a\0b", 3, "o"), TS_E_INVAL);
  ck_assert_int_eq(ts_vars_set(v, "t", "bad name", TS_VAR_TEXT, "x", 1, "o"), TS_E_INVAL);
  ck_assert_int_eq(ts_vars_set(v, "nope", "A", TS_VAR_TEXT, "x", 1, "o"), TS_E_STORE_NO_THREAD);
  ts_var_value val;
  ts_var_def def = {"A", TS_VAR_TEXT, 0, 0, ""};
  ck_assert_int_eq(ts_vars_resolve(NULL, "t", &def, NULL, &val), TS_E_INVAL);
  ck_assert_int_eq(ts_vars_resolve(v, "t", NULL, NULL, &val), TS_E_INVAL);
  ts_var_value_fini(NULL);
  ts_vars_free(NULL);
  ts_vars_free(v);
  ts_store_close(s);
}
END_TEST

/* ---- redaction -------------------------------------------------------------------------- */

START_TEST(test_redact) {
  char *t = strdup("{\"echo\":\"hunter22!\",\"again\":\"xhunter22!y\",\"b64\":\"aHVudGVyMjIh\"}");
  size_t len = strlen(t);
  int n = ts_vars_redact(&t, &len, "hunter22!", 9);
  ck_assert_int_eq(n, 3);
  ck_assert_str_eq(t, "{\"echo\":\"[redacted]\",\"again\":\"x[redacted]y\",\"b64\":\"[redacted]\"}");
  ck_assert_uint_eq(len, strlen(t));
  /* URL-safe base64 too */
  free(t);
  t = strdup("id ~~~>>>??? -> fn5-Pj4-Pz8_"); /* base64url of "~~~>>>???" */
  len = strlen(t);
  ck_assert_int_eq(ts_vars_redact(&t, &len, "~~~>>>???", 9), 2);
  ck_assert_str_eq(t, "id [redacted] -> [redacted]");
  /* a length that is not a multiple of 3: the whole encoding, padding and tail too */
  free(t);
  t = strdup("[c2stdGVzdC05ZlEybVo4MXhMcFc=] [c2stdGVzdC05ZlEybVo4MXhMcFc]");
  len = strlen(t);
  ck_assert_int_eq(ts_vars_redact(&t, &len, "sk-test-9fQ2mZ81xLpW", 20), 2);
  ck_assert_str_eq(t, "[[redacted]] [[redacted]]");
  /* too short to look for */
  ck_assert_int_eq(ts_vars_redact(&t, &len, "id", 2), 0);
  free(t);
}
END_TEST

/* ---- the dispatcher: parking and waking ---------------------------------------------------- */

typedef struct {
  pthread_mutex_t mu;
  char log[4096];
} ev_log;

static void on_event(void *user, const ts_event *ev) {
  ev_log *l = user;
  pthread_mutex_lock(&l->mu);
  char line[700];
  const ts_tap_event *b = &ev->body;
  if (b->type == TS_EVENT_VARIABLE_REQUIRED)
    snprintf(line, sizeof line, "%s#%u:%.*s(%.*s,%s);", ts_event_type_name(b->type), b->index,
             (int)ev->var_name.len, ev->var_name.p, (int)ev->var_description.len,
             ev->var_description.p, ev->var_secret ? "secret" : "text");
  else if (b->type == TS_EVENT_TOOL_RESULT)
    snprintf(line, sizeof line, "result#%u=%.*s;", b->index, (int)ev->result.len, ev->result.p);
  else
    snprintf(line, sizeof line, "%s#%u;", ts_event_type_name(b->type), b->index);
  strncat(l->log, line, sizeof l->log - strlen(l->log) - 1);
  pthread_mutex_unlock(&l->mu);
}

static int log_has(ev_log *l, const char *s) {
  pthread_mutex_lock(&l->mu);
  int r = strstr(l->log, s) != NULL;
  pthread_mutex_unlock(&l->mu);
  return r;
}

/* Echoes its variable (a tool that leaks what it was given, verbatim and in base64). */
static void echo_tool(void *user, const ts_call_info *call, const char *args, size_t len,
                      ts_tool_result *out) {
  (void)args, (void)len;
  const char *val = NULL;
  size_t vl = 0;
  char why[256];
  ts_registry *reg = user; /* to find itself */
  int r = call->env_get ? call->env_get(call->env_ctx, ts_registry_find(reg, "echo", 4), "TOKEN",
                                        &val, &vl, why, sizeof why)
                        : -1;
  if (r != 1) {
    ts_tool_result_error(out, "no TOKEN (%d)", r);
    return;
  }
  char json[512];
  snprintf(json, sizeof json, "{\"token\":\"%.*s\",\"b64\":\"%s\"}", (int)vl, val,
           !strcmp(val, "s3cret-token-value") ? "czNjcmV0LXRva2VuLXZhbHVl" : "");
  ts_tool_result_json(out, json, strlen(json));
}

static void plain_tool(void *user, const ts_call_info *call, const char *args, size_t len,
                       ts_tool_result *out) {
  (void)user, (void)call;
  ts_tool_result_json(out, args, len);
}

static void feed(ts_dispatch *d, int type, uint32_t index, const char *tool, const char *args) {
  ts_tap_event ev;
  memset(&ev, 0, sizeof ev);
  ev.type = (uint8_t)type;
  ev.is_call = 1;
  ev.index = index;
  char id[32];
  snprintf(id, sizeof id, "call_%u", index);
  ev.call_id = (ts_view){id, strlen(id)};
  ev.tool = (ts_view){tool, strlen(tool)};
  if (args) ev.arguments = (ts_view){args, strlen(args)};
  ts_dispatch_tap_event(d, &ev);
}

static int count_parked(void *user, const ts_store_parked *p) {
  (void)p;
  (*(int *)user)++;
  return 0;
}

static void wait_for(ev_log *l, const char *s) {
  for (int i = 0; i < 3000 && !log_has(l, s); i++) { /* up to 5 min on a loaded machine */
    struct timespec ts = {0, 100 * 1000000L};
    nanosleep(&ts, NULL);
  }
  ck_assert_msg(log_has(l, s), "never saw %s in %s", s, l->log);
}

static void park_and_wake(ts_var_type type) {
  ts_store *s = open_store();
  ck_assert_int_eq(ts_store_thread_create(s, "t", NULL), 0);
  ts_registry *reg = ts_registry_new();
  ts_var_def vars[] = {{"TOKEN", type, 1, 0, "the service token"}};
  ts_tool_spec plain = {.name = "plain", .execute = plain_tool};
  ts_tool_spec echo = {.name = "echo", .execute = echo_tool, .user = reg, .vars = vars, .n_vars = 1};
  char why[256];
  ck_assert_int_eq(ts_registry_add(reg, &plain, why, sizeof why), TS_E_OK);
  ck_assert_int_eq(ts_registry_add(reg, &echo, why, sizeof why), TS_E_OK);
  ev_log l = {PTHREAD_MUTEX_INITIALIZER, ""};
  ts_dispatch_config cfg = {.store = s, .reg = reg, .thread = "t", .turn = 1,
                            .on_event = on_event, .user = &l, .pipelined = 1, .poll_ms = 10};
  ts_dispatch *d = NULL;
  ck_assert_int_eq(ts_dispatch_new(&d, &cfg), TS_E_OK);
  ck_assert_ptr_nonnull(d);
  feed(d, TS_TAP_TOOL_CALL_STARTED, 0, "plain", NULL);
  feed(d, TS_TAP_TOOL_CALL_READY, 0, "plain", "{\"n\":0}");
  feed(d, TS_TAP_TOOL_CALL_STARTED, 1, "echo", NULL);
  feed(d, TS_TAP_TOOL_CALL_READY, 1, "echo", "{}");
  feed(d, TS_TAP_TOOL_CALL_STARTED, 2, "plain", NULL);
  feed(d, TS_TAP_TOOL_CALL_READY, 2, "plain", "{\"n\":2}");
  wait_for(&l, "variable_required#1:TOKEN(the service token,");
  ck_assert(log_has(&l, type == TS_VAR_SECRET ? ",secret);" : ",text);"));
  /* parked durably, and nothing after it ran */
  ts_store *other = NULL;
  ck_assert_int_eq(ts_store_open(tmp, &other, why, sizeof why), TS_E_OK);
  int parked = 0;
  ck_assert_int_eq(ts_store_parked_calls(other, "t", count_parked, &parked), 1);
  ck_assert_int_eq(parked, 1);
  ck_assert(!log_has(&l, "#2;"));
  ck_assert(log_has(&l, "result#0={\"n\":0};"));
  /* another connection (another process, as env set is) provides the value */
  ts_vars *v = open_vars(other);
  const char *value = type == TS_VAR_SECRET ? "s3cret-token-value" : "plain-token";
  ck_assert_int_eq(ts_vars_set(v, "t", "TOKEN", type, value, strlen(value), "env set"), 0);
  ts_vars_free(v);
  ck_assert_int_eq(ts_dispatch_finish(d), TS_E_OK);
  /* it ran, in order, and the later call after it */
  const char *want =
      type == TS_VAR_SECRET
          ? "tool_execution_started#1;result#1={\"token\":\"[redacted]\",\"b64\":\"[redacted]\"};"
            "tool_execution_started#2;result#2={\"n\":2};"
          : "tool_execution_started#1;result#1={\"token\":\"plain-token\",\"b64\":\"\"};"
            "tool_execution_started#2;result#2={\"n\":2};";
  ck_assert_msg(log_has(&l, want), "%s", l.log);
  parked = 0;
  ck_assert_int_eq(ts_store_parked_calls(other, "t", count_parked, &parked), 0);
  ts_store_close(other);
  ts_dispatch_free(d);
  ts_registry_free(reg);
  ts_store_close(s);
  if (type == TS_VAR_SECRET) {
    ck_assert_int_eq(file_contains(path_in("toolstream.db"), "s3cret-token-value"), 0);
    ck_assert_int_eq(file_contains(path_in("toolstream.db"), "czNjcmV0LXRva2VuLXZhbHVl"), 0);
  }
}

START_TEST(test_park_and_wake_text) { park_and_wake(TS_VAR_TEXT); }
END_TEST

START_TEST(test_park_and_wake_secret) { park_and_wake(TS_VAR_SECRET); }
END_TEST

static volatile sig_atomic_t stop_flag;

START_TEST(test_park_stopped_then_completed) {
  /* Stopped while parked: the call stays parked; a new dispatcher for the same turn from
   * the parked index (first_index) runs it once the value is there, and the turn's later
   * calls after it. */
  ts_store *s = open_store();
  ck_assert_int_eq(ts_store_thread_create(s, "t", NULL), 0);
  ts_registry *reg = ts_registry_new();
  ts_var_def vars[] = {{"TOKEN", TS_VAR_TEXT, 1, 0, ""}};
  ts_tool_spec plain = {.name = "plain", .execute = plain_tool};
  ts_tool_spec echo = {.name = "echo", .execute = echo_tool, .user = reg, .vars = vars, .n_vars = 1};
  char why[256];
  ck_assert_int_eq(ts_registry_add(reg, &plain, why, sizeof why), TS_E_OK);
  ck_assert_int_eq(ts_registry_add(reg, &echo, why, sizeof why), TS_E_OK);
  ev_log l = {PTHREAD_MUTEX_INITIALIZER, ""};
  stop_flag = 0;
  ts_dispatch_config cfg = {.store = s, .reg = reg, .thread = "t", .turn = 3, .on_event = on_event,
                            .user = &l, .pipelined = 1, .poll_ms = 10, .stop = &stop_flag};
  ts_dispatch *d = NULL;
  ck_assert_int_eq(ts_dispatch_new(&d, &cfg), TS_E_OK);
  feed(d, TS_TAP_TOOL_CALL_STARTED, 0, "plain", NULL);
  feed(d, TS_TAP_TOOL_CALL_READY, 0, "plain", "{\"n\":0}");
  feed(d, TS_TAP_TOOL_CALL_STARTED, 1, "echo", NULL);
  feed(d, TS_TAP_TOOL_CALL_READY, 1, "echo", "{}");
  feed(d, TS_TAP_TOOL_CALL_STARTED, 2, "plain", NULL);
  feed(d, TS_TAP_TOOL_CALL_READY, 2, "plain", "{\"n\":2}");
  wait_for(&l, "variable_required#1");
  stop_flag = 1;
  ck_assert_int_eq(ts_dispatch_finish(d), TS_E_ABORTED);
  ts_dispatch_free(d);
  int parked = 0;
  ck_assert_int_eq(ts_store_parked_calls(s, "t", count_parked, &parked), 1);
  ck_assert(!log_has(&l, "#2;"));
  /* the value arrives while nothing runs; the turn is completed from index 1 */
  ts_vars *v = open_vars(s);
  ck_assert_int_eq(ts_vars_set(v, "t", "TOKEN", TS_VAR_TEXT, "late", 4, "env set"), 0);
  ts_vars_free(v);
  stop_flag = 0;
  l.log[0] = '\0';
  cfg.first_index = 1;
  ck_assert_int_eq(ts_dispatch_new(&d, &cfg), TS_E_OK);
  feed(d, TS_TAP_TOOL_CALL_STARTED, 1, "echo", NULL);
  feed(d, TS_TAP_TOOL_CALL_READY, 1, "echo", "{}");
  feed(d, TS_TAP_TOOL_CALL_STARTED, 2, "plain", NULL);
  feed(d, TS_TAP_TOOL_CALL_READY, 2, "plain", "{\"n\":2}");
  ck_assert_int_eq(ts_dispatch_finish(d), TS_E_OK);
  ck_assert_str_eq(l.log, "tool_execution_started#1;result#1={\"token\":\"late\",\"b64\":\"\"};"
                          "tool_execution_started#2;result#2={\"n\":2};");
  ts_dispatch_free(d);
  /* a replay of the whole turn (a crash before the turn's message was stored: a resuming
   * dispatcher) runs nothing twice: committed calls are skipped */
  l.log[0] = '\0';
  cfg.first_index = 0;
  cfg.resuming = 1;
  ck_assert_int_eq(ts_dispatch_new(&d, &cfg), TS_E_OK);
  for (uint32_t i = 0; i < 3; i++) {
    feed(d, TS_TAP_TOOL_CALL_STARTED, i, i == 1 ? "echo" : "plain", NULL);
    feed(d, TS_TAP_TOOL_CALL_READY, i, i == 1 ? "echo" : "plain", "{}");
  }
  ck_assert_int_eq(ts_dispatch_finish(d), TS_E_OK);
  ck_assert_str_eq(l.log, "");
  ts_dispatch_free(d);
  ts_registry_free(reg);
  ts_store_close(s);
}
END_TEST

/* ---- definitions: C tools and tools files ------------------------------------------------ */

START_TEST(test_definitions) {
  ts_registry *reg = ts_registry_new();
  char why[256] = "";
  ts_var_def bad_name[] = {{"no spaces", TS_VAR_TEXT, 0, 0, ""}};
  ts_var_def twice[] = {{"A", TS_VAR_TEXT, 0, 0, ""}, {"A", TS_VAR_SECRET, 1, 0, ""}};
  ts_tool_spec s1 = {.name = "x", .vars = bad_name, .n_vars = 1};
  ck_assert_int_eq(ts_registry_add(reg, &s1, why, sizeof why), TS_E_INVAL);
  ck_assert_ptr_nonnull(strstr(why, "is not a variable name"));
  ts_tool_spec s2 = {.name = "x", .vars = twice, .n_vars = 2};
  ck_assert_int_eq(ts_registry_add(reg, &s2, why, sizeof why), TS_E_INVAL);
  ck_assert_ptr_nonnull(strstr(why, "declared twice"));
  ck_assert_uint_eq(ts_registry_count(reg), 0);
  /* a C tool's variables, then a tools file: one that gives "variables" replaces them,
   * one that does not keeps them */
  ts_var_def c_vars[] = {{"C_VAR", TS_VAR_TEXT, 1, 0, "from C"}};
  ts_tool_spec c1 = {.name = "c1", .vars = c_vars, .n_vars = 1};
  ts_tool_spec c2 = {.name = "c2", .vars = c_vars, .n_vars = 1};
  ck_assert_int_eq(ts_registry_add(reg, &c1, why, sizeof why), TS_E_OK);
  ck_assert_int_eq(ts_registry_add(reg, &c2, why, sizeof why), TS_E_OK);
  const char *file = "[{\"name\":\"c1\",\"variables\":[{\"name\":\"KEY\",\"type\":\"secret\","
                     "\"required\":true,\"scoped\":true,\"description\":\"the key\"},{\"name\":"
                     "\"OPT\"}]},{\"name\":\"c2\",\"description\":\"d\"}]";
  ts_tool_defs defs = {0};
  ck_assert_int_eq(ts_tool_defs_parse(&defs, file, strlen(file), why, sizeof why), TS_E_OK);
  ck_assert_msg(ts_registry_add_defs(reg, &defs, why, sizeof why) == TS_E_OK, "%s", why);
  ts_tool_defs_free(&defs);
  size_t n;
  const ts_var_def *v = ts_tool_vars(ts_registry_find(reg, "c1", 2), &n);
  ck_assert_uint_eq(n, 2);
  ck_assert_str_eq(v[0].name, "KEY");
  ck_assert(v[0].type == TS_VAR_SECRET && v[0].required && v[0].scoped);
  ck_assert_str_eq(v[0].description, "the key");
  ck_assert(v[1].type == TS_VAR_TEXT && !v[1].required && !v[1].scoped);
  ck_assert_str_eq(v[1].description, "");
  const ts_var_def *k = ts_tool_var(ts_registry_find(reg, "c2", 2), "C_VAR");
  ck_assert_ptr_nonnull(k);
  ck_assert_str_eq(k->description, "from C");
  ck_assert_ptr_null(ts_tool_var(ts_registry_find(reg, "c2", 2), "KEY"));
  /* malformed "variables" in a file */
  const char *bad[] = {
      "[{\"name\":\"t\",\"variables\":{}}]",                                   "must be an array",
      "[{\"name\":\"t\",\"variables\":[{\"type\":\"text\"}]}]",                "needs a string",
      "[{\"name\":\"t\",\"variables\":[{\"name\":\"A\",\"type\":\"password\"}]}]", "type must be",
      "[{\"name\":\"t\",\"variables\":[{\"name\":\"A\",\"required\":\"yes\"}]}]", "true or false",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i += 2) {
    ts_tool_defs d2 = {0};
    ck_assert_int_eq(ts_tool_defs_parse(&d2, bad[i], strlen(bad[i]), why, sizeof why), TS_E_INVAL);
    ck_assert_msg(strstr(why, bad[i + 1]), "%s: %s", bad[i], why);
    ck_assert_uint_eq(d2.n, 0);
    ts_tool_defs_free(&d2);
  }
  ts_registry_free(reg);
}
END_TEST

static Suite *suite(void) {
  Suite *su = suite_create("variables");
  TCase *tc = tcase_create("variables");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_precedence_every_level);
  tcase_add_test(tc, test_scoped_three_levels);
  tcase_add_test(tc, test_secret_sealed_at_rest);
  tcase_add_test(tc, test_wrong_key_refused);
  tcase_add_test(tc, test_key_from_environment);
  tcase_add_test(tc, test_bad_values);
  tcase_add_test(tc, test_redact);
  tcase_add_test(tc, test_definitions);
  tcase_add_test(tc, test_park_and_wake_text);
  tcase_add_test(tc, test_park_and_wake_secret);
  tcase_add_test(tc, test_park_stopped_then_completed);
  suite_add_tcase(su, tc);
  return su;
}

int main(void) {
  return ts_test_run(suite(), 0);
}
