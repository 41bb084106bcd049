/*
 * dispatch_test.c: the conformance rules of the dispatcher and the registry (tools-spec
 * §2, §8, §9), with tools that record their own execution order.
 */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tools/dispatch.h"
#include "store/store.h"
#include "support/runner.h"
#include "support/tempdir.h"
#include "support/test_support.h"
#include "tools/registry.h"

/* ---- fixtures --------------------------------------------------------------------------- */

typedef struct {
  pthread_mutex_t mu;
  char order[256]; /* "0,1,2," : the indexes in the order the tools ran */
  int started[16];
  char *dir;
  int saw_previous_committed; /* call i>0 found call i-1's result in the store */
  int checks;
} recorder;

static recorder R;

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

typedef struct {
  int count, prev_found;
} msg_scan;

static int scan_msg(void *user, const ts_store_message *m) {
  msg_scan *s = user;
  if (m->role == TS_STORE_TOOL) s->count++;
  return 0;
}

/* Records the order, and checks through a second connection that every earlier call's
 * result is already committed when this one starts. */
static void rec_tool(void *user, const ts_call_info *call, const char *args, size_t len,
                     ts_tool_result *out) {
  (void)user;
  pthread_mutex_lock(&R.mu);
  char n[16];
  snprintf(n, sizeof n, "%u,", call->index);
  strncat(R.order, n, sizeof R.order - strlen(R.order) - 1);
  if (call->index < 16) R.started[call->index] = 1;
  pthread_mutex_unlock(&R.mu);
  ts_store *other;
  char why[256];
  if (ts_store_open(R.dir, &other, why, sizeof why) == TS_E_OK) {
    msg_scan s = {0, 0};
    ts_store_messages(other, call->thread, 0, scan_msg, &s);
    pthread_mutex_lock(&R.mu);
    R.checks++;
    if ((unsigned)s.count >= call->index) R.saw_previous_committed++;
    pthread_mutex_unlock(&R.mu);
    ts_store_close(other);
  }
  ts_tool_result_json(out, args, len); /* echo the arguments */
}

static void fail_tool(void *user, const ts_call_info *call, const char *args, size_t len,
                      ts_tool_result *out) {
  (void)user, (void)call, (void)args, (void)len;
  ts_tool_result_error(out, "disk is full");
}

static const char *schema =
    "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
    "\"description\":{\"type\":\"string\"}},\"required\":[\"path\"]}";

static ts_registry *make_registry(const char *annotations) {
  ts_registry *r = ts_registry_new();
  char why[256];
  ts_tool_spec a = {.name = "rec", .args_schema = schema, .progress_arg = "description",
                    .annotations = annotations, .execute = rec_tool};
  ck_assert_msg(ts_registry_add(r, &a, why, sizeof why) == TS_E_OK, "%s", why);
  ts_tool_spec b = {.name = "fail", .execute = fail_tool};
  ck_assert_msg(ts_registry_add(r, &b, why, sizeof why) == TS_E_OK, "%s", why);
  return r;
}

typedef struct {
  pthread_mutex_t mu;
  char log[4096];
} ev_log;

static void on_event(void *user, const ts_event *eb) {
  const ts_tap_event *ev = &eb->body;
  ev_log *l = user;
  pthread_mutex_lock(&l->mu);
  char line[256];
  snprintf(line, sizeof line, "%s#%u%s;", ts_event_type_name(ev->type), ev->index,
           ev->type == TS_EVENT_TOOL_RESULT ? (eb->is_error ? "!" : "ok") : "");
  strncat(l->log, line, sizeof l->log - strlen(l->log) - 1);
  pthread_mutex_unlock(&l->mu);
}

static ts_tap_event tap_ev(int type, uint32_t index, const char *tool, const char *args) {
  ts_tap_event e;
  memset(&e, 0, sizeof e);
  e.type = (uint8_t)type;
  e.is_call = 1;
  e.index = index;
  e.tool = (ts_view){tool, strlen(tool)};
  char *id = malloc(16);
  snprintf(id, 16, "call_%u", index);
  e.call_id = (ts_view){id, strlen(id)};
  if (args) {
    if (type == TS_TAP_TOOL_CALL_READY)
      e.arguments = (ts_view){args, strlen(args)};
    else
      e.error = (ts_view){args, strlen(args)};
  }
  return e;
}

static void feed(ts_dispatch *d, int type, uint32_t index, const char *tool, const char *args) {
  ts_tap_event e = tap_ev(type, index, tool, args);
  ts_dispatch_tap_event(d, &e);
  free((char *)e.call_id.p);
}

static ts_store *open_store(void) {
  static char tmpl[256];
  R.dir = ts_test_tempdir(tmpl, sizeof tmpl, "dispatch");
  ts_store *s;
  char why[256];
  ck_assert_msg(ts_store_open(R.dir, &s, why, sizeof why) == TS_E_OK, "%s", why);
  ck_assert_int_eq(ts_store_thread_create(s, "t", NULL), TS_E_OK);
  return s;
}

/* After each test (in its own process): its store's directory goes. */
static void remove_dir(void) {
  if (R.dir) ts_test_rm_rf(R.dir);
}

/* Clears the tallies; the test's directory stays R.dir (a test may reset between two
 * dispatchers on one store), so the fixture still removes it. */
static void reset(void) {
  char *dir = R.dir;
  memset(&R, 0, sizeof R);
  R.dir = dir;
  pthread_mutex_init(&R.mu, NULL);
}

typedef struct {
  char text[64][512];
  int err[64];
  int n;
} tool_msgs;

static int grab(void *user, const ts_store_message *m) {
  tool_msgs *t = user;
  if (m->role != TS_STORE_TOOL || t->n >= 64) return 0;
  snprintf(t->text[t->n], sizeof t->text[0], "%s|%s", m->tool_call_id ? m->tool_call_id : "",
           m->content);
  t->err[t->n++] = m->is_error;
  return 0;
}

/* ---- order, pipelining, persistence ------------------------------------------------------- */

START_TEST(test_index_order_not_completion_order) {
  reset();
  ts_store *s = open_store();
  ts_registry *reg = make_registry(NULL);
  ev_log l = {PTHREAD_MUTEX_INITIALIZER, ""};
  ts_dispatch_config cfg = {.store = s, .reg = reg, .thread = "t", .turn = 1,
                            .on_event = on_event, .user = &l, .pipelined = 1};
  ts_dispatch *d = NULL;
  ck_assert_int_eq(ts_dispatch_new(&d, &cfg), TS_E_OK);
  ck_assert_ptr_nonnull(d);
  for (uint32_t i = 0; i < 4; i++) feed(d, TS_TAP_TOOL_CALL_STARTED, i, "rec", NULL);
  /* arguments complete in the order 2, 3, 1, 0 */
  feed(d, TS_TAP_TOOL_CALL_READY, 2, "rec", "{\"path\":\"c\"}");
  feed(d, TS_TAP_TOOL_CALL_READY, 3, "rec", "{\"path\":\"d\"}");
  sleep_ms(50);
  ck_assert_str_eq(R.order, ""); /* nothing may run before call 0 */
  feed(d, TS_TAP_TOOL_CALL_READY, 1, "rec", "{\"path\":\"b\"}");
  sleep_ms(50);
  ck_assert_str_eq(R.order, "");
  feed(d, TS_TAP_TOOL_CALL_READY, 0, "rec", "{\"path\":\"a\"}");
  ck_assert_int_eq(ts_dispatch_finish(d), TS_E_OK);
  ck_assert_str_eq(R.order, "0,1,2,3,");
  ck_assert_int_eq(R.saw_previous_committed, R.checks);
  ck_assert_int_eq(R.checks, 4);
  ck_assert_str_eq(l.log,
                   "tool_execution_started#0;tool_result#0ok;tool_execution_started#1;"
                   "tool_result#1ok;tool_execution_started#2;tool_result#2ok;"
                   "tool_execution_started#3;tool_result#3ok;");
  tool_msgs m = {0};
  ts_store_messages(s, "t", 0, grab, &m);
  ck_assert_int_eq(m.n, 4);
  ck_assert_str_eq(m.text[0], "call_0|{\"path\":\"a\"}");
  ck_assert_str_eq(m.text[3], "call_3|{\"path\":\"d\"}");
  ts_dispatch_free(d);
  ts_registry_free(reg);
  ts_store_close(s);
}
END_TEST

START_TEST(test_new_tells_errors_apart) {
  /* a bad config is TS_E_INVAL; running out of memory at any allocation of the
   * constructor is TS_E_NOMEM; either way *out is untouched and nothing leaks (ASan) */
  reset();
  ts_store *s = open_store();
  ts_registry *reg = make_registry(NULL);
  ts_dispatch *d = (ts_dispatch *)&R;
  ts_dispatch_config cfg = {.store = s, .reg = reg, .thread = "t", .turn = 1,
                            .on_event = NULL, .user = NULL, .pipelined = 1};
  ck_assert_int_eq(ts_dispatch_new(NULL, &cfg), TS_E_INVAL);
  ck_assert_int_eq(ts_dispatch_new(&d, NULL), TS_E_INVAL);
  cfg.store = NULL;
  ck_assert_int_eq(ts_dispatch_new(&d, &cfg), TS_E_INVAL);
  cfg.store = s;
  cfg.reg = NULL;
  ck_assert_int_eq(ts_dispatch_new(&d, &cfg), TS_E_INVAL);
  cfg.reg = reg;
  cfg.thread = NULL;
  ck_assert_int_eq(ts_dispatch_new(&d, &cfg), TS_E_INVAL);
  cfg.thread = "t";
  ck_assert_ptr_eq(d, (ts_dispatch *)&R);
  int made = 0;
  for (long n = 1; n < 20 && !made; n++) {
    d = NULL;
    ts_test_alloc_fail_after(n);
    int rc = ts_dispatch_new(&d, &cfg);
    ts_test_alloc_fail_after(-1);
    if (rc == TS_E_OK) {
      made = 1;
      ck_assert_int_gt(n, 1); /* the dispatcher at least (strdup allocates inside libc) */
      ck_assert_int_eq(ts_dispatch_finish(d), TS_E_OK);
      ts_dispatch_free(d);
    } else {
      ck_assert_int_eq(rc, TS_E_NOMEM);
      ck_assert_ptr_null(d);
    }
  }
  ck_assert(made);
  ts_registry_free(reg);
  ts_store_close(s);
}
END_TEST

START_TEST(test_pipelined_starts_while_later_calls_stream) {
  reset();
  ts_store *s = open_store();
  ts_registry *reg = make_registry(NULL);
  ts_dispatch_config cfg = {.store = s, .reg = reg, .thread = "t", .turn = 1,
                            .on_event = NULL, .user = NULL, .pipelined = 1};
  ts_dispatch *d = NULL;
  ck_assert_int_eq(ts_dispatch_new(&d, &cfg), TS_E_OK);
  feed(d, TS_TAP_TOOL_CALL_STARTED, 0, "rec", NULL);
  feed(d, TS_TAP_TOOL_CALL_READY, 0, "rec", "{\"path\":\"a\"}");
  feed(d, TS_TAP_TOOL_CALL_STARTED, 1, "rec", NULL); /* call 1 is still streaming */
  int ran = 0;
  for (int i = 0; i < 200 && !ran; i++) {
    sleep_ms(10);
    ran = ts_dispatch_done_count(d) == 1;
  }
  ck_assert_msg(ran, "call 0 did not run while call 1 was streaming");
  feed(d, TS_TAP_TOOL_CALL_READY, 1, "rec", "{\"path\":\"b\"}");
  ck_assert_int_eq(ts_dispatch_finish(d), TS_E_OK);
  ck_assert_str_eq(R.order, "0,1,");
  ts_dispatch_free(d);

  /* not pipelined: nothing runs before finish */
  reset();
  cfg.pipelined = 0;
  cfg.turn = 2;
  ck_assert_int_eq(ts_dispatch_new(&d, &cfg), TS_E_OK);
  feed(d, TS_TAP_TOOL_CALL_READY, 0, "rec", "{\"path\":\"a\"}");
  sleep_ms(100);
  ck_assert_uint_eq(ts_dispatch_done_count(d), 0);
  ck_assert_int_eq(ts_dispatch_finish(d), TS_E_OK);
  ck_assert_uint_eq(ts_dispatch_done_count(d), 1);
  ts_dispatch_free(d);
  ts_registry_free(reg);
  ts_store_close(s);
}
END_TEST

/* ---- every kind of error becomes a result, and the turn goes on ----------------------------- */

START_TEST(test_errors_become_results) {
  reset();
  ts_store *s = open_store();
  ts_registry *reg = make_registry(NULL);
  ev_log l = {PTHREAD_MUTEX_INITIALIZER, ""};
  ts_dispatch_config cfg = {.store = s, .reg = reg, .thread = "t", .turn = 1,
                            .on_event = on_event, .user = &l, .pipelined = 1};
  ts_dispatch *d = NULL;
  ck_assert_int_eq(ts_dispatch_new(&d, &cfg), TS_E_OK);
  feed(d, TS_TAP_TOOL_CALL_READY, 0, "rec", "{\"path\":7}");                      /* schema */
  feed(d, TS_TAP_TOOL_CALL_READY, 1, "nope", "{}");                               /* unknown */
  feed(d, TS_TAP_TOOL_CALL_ERROR, 2, "rec", "json_syntax at argument byte 9");   /* malformed */
  feed(d, TS_TAP_TOOL_CALL_READY, 3, "fail", "{}");                               /* tool error */
  feed(d, TS_TAP_TOOL_CALL_STARTED, 4, "rec", NULL);                              /* never ready */
  feed(d, TS_TAP_TOOL_CALL_READY, 5, "rec", "{\"path\":\"ok\"}");                 /* still runs */
  ck_assert_int_eq(ts_dispatch_finish(d), TS_E_OK);
  tool_msgs m = {0};
  ts_store_messages(s, "t", 0, grab, &m);
  ck_assert_int_eq(m.n, 6);
  ck_assert_str_eq(m.text[0], "call_0|invalid arguments: /path: expected string, got number");
  ck_assert_str_eq(m.text[1], "call_1|unknown tool \"nope\"");
  ck_assert_str_eq(m.text[2],
                   "call_2|the call's arguments are unusable: json_syntax at argument byte 9");
  ck_assert_str_eq(m.text[3], "call_3|disk is full");
  ck_assert_str_eq(m.text[4],
                   "call_4|the call's arguments never completed before the turn ended");
  ck_assert_str_eq(m.text[5], "call_5|{\"path\":\"ok\"}");
  for (int i = 0; i < 5; i++) ck_assert_msg(m.err[i], "message %d not marked as an error", i);
  ck_assert_int_eq(m.err[5], 0);
  ck_assert_str_eq(R.order, "5,"); /* only the valid call reached its tool */
  ck_assert_ptr_nonnull(strstr(l.log, "tool_result#0!;"));
  ck_assert_ptr_nonnull(strstr(l.log, "tool_result#5ok;"));
  ts_dispatch_free(d);
  ts_registry_free(reg);
  ts_store_close(s);
}
END_TEST

/* ---- definitions and annotations ----------------------------------------------------------- */

static const struct {
  int line;
  const char *label;
  ts_tool_spec spec;
  const char *why_has;
} def_rows[] = {
    {__LINE__, "duplicate name", {.name = "rec"}, "duplicate tool name \"rec\""},
    {__LINE__, "reserved subagents", {.name = "subagents"}, "reserved"},
    {__LINE__, "reserved subagent_create", {.name = "subagent_create"}, "reserved"},
    {__LINE__, "reserved subagent_message", {.name = "subagent_message"}, "reserved"},
    {__LINE__, "no name", {.name = ""}, "needs a name"},
    {__LINE__, "malformed schema", {.name = "x", .args_schema = "{\"type\":\"strnig\"}"},
     "malformed argument schema"},
    {__LINE__, "schema not JSON", {.name = "x", .args_schema = "{type"}, "malformed argument schema"},
    {__LINE__, "progress argument not declared",
     {.name = "x", .args_schema = "{\"type\":\"object\",\"properties\":{\"a\":{}}}",
      .progress_arg = "b"},
     "progressArgument \"b\" is not a declared top-level property"},
    {__LINE__, "progress argument nested only",
     {.name = "x",
      .args_schema = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"object\","
                     "\"properties\":{\"b\":{}}}}}",
      .progress_arg = "b"},
     "not a declared top-level property"},
    {__LINE__, "progress argument without schema", {.name = "x", .progress_arg = "b"},
     "not a declared top-level property"},
};

START_TEST(test_definition_errors) {
  ts_registry *reg = make_registry(NULL);
  for (size_t i = 0; i < sizeof def_rows / sizeof def_rows[0]; i++) {
    char why[256] = "";
    int rc = ts_registry_add(reg, &def_rows[i].spec, why, sizeof why);
    ck_assert_msg(rc == TS_E_INVAL, "line %d (%s): rc %d", def_rows[i].line, def_rows[i].label, rc);
    ck_assert_msg(strstr(why, def_rows[i].why_has) != NULL, "line %d (%s): why '%s'",
                  def_rows[i].line, def_rows[i].label, why);
  }
  ck_assert_uint_eq(ts_registry_count(reg), 2); /* nothing half-added */
  ts_registry_free(reg);
}
END_TEST

START_TEST(test_annotations_unchanged_and_inert) {
  const char *ann = "{ \"agentbuilder\" : {\"codemode\":{\"codeArgument\":\"code\",\"n\":1.50}},"
                    " \"x\": [true, null] }";
  ts_registry *reg = make_registry(ann);
  const ts_tool *t = ts_registry_find(reg, "rec", 3);
  ck_assert_str_eq(ts_tool_annotations(t), ann); /* byte for byte, spacing and 1.50 kept */
  ck_assert_ptr_null(ts_tool_annotations(ts_registry_find(reg, "fail", 4)));

  /* The same turn with other annotations (and none) gives the same results. */
  const char *variants[] = {ann, "{\"agentbuilder\":{\"skip\":true,\"readOnly\":false}}", NULL};
  char results[3][2048];
  for (int v = 0; v < 3; v++) {
    reset();
    ts_store *s = open_store();
    ts_registry *r2 = make_registry(variants[v]);
    ts_dispatch_config cfg = {.store = s, .reg = r2, .thread = "t", .turn = 1,
                            .on_event = NULL, .user = NULL, .pipelined = 1};
    ts_dispatch *d = NULL;
  ck_assert_int_eq(ts_dispatch_new(&d, &cfg), TS_E_OK);
    feed(d, TS_TAP_TOOL_CALL_READY, 0, "rec", "{\"path\":\"a\"}");
    feed(d, TS_TAP_TOOL_CALL_READY, 1, "rec", "{\"path\":5}");
    feed(d, TS_TAP_TOOL_CALL_READY, 2, "fail", "{}");
    ck_assert_int_eq(ts_dispatch_finish(d), TS_E_OK);
    tool_msgs m = {0};
    ts_store_messages(s, "t", 0, grab, &m);
    results[v][0] = '\0';
    for (int i = 0; i < m.n; i++) {
      strncat(results[v], m.text[i], sizeof results[v] - strlen(results[v]) - 1);
      strncat(results[v], m.err[i] ? "!" : ".", sizeof results[v] - strlen(results[v]) - 1);
    }
    if (v) ck_assert_str_eq(results[v], results[0]);
    ts_dispatch_free(d);
    ts_registry_free(r2);
    ts_store_close(s);
    remove_dir(); /* each variant's store goes with it: the fixture removes only the last */
  }
  ts_registry_free(reg);
}
END_TEST

START_TEST(test_tools_file_merges) {
  ts_registry *reg = make_registry(NULL);
  ts_tool_defs defs = {0};
  char why[256];
  const char *file = "[{\"name\":\"rec\",\"description\":\"records\",\"args\":{\"type\":\"object\","
                     "\"properties\":{\"label\":{\"type\":\"string\"}}},\"progressArgument\":"
                     "\"label\",\"annotations\":{\"k\":1}},{\"name\":\"described_only\"}]";
  ck_assert_int_eq(ts_tool_defs_parse(&defs, file, strlen(file), why, sizeof why), TS_E_OK);
  ck_assert_msg(ts_registry_add_defs(reg, &defs, why, sizeof why) == TS_E_OK, "%s", why);
  const ts_tool *t = ts_registry_find(reg, "rec", 3);
  ck_assert_str_eq(ts_tool_description(t), "records");
  ck_assert_str_eq(ts_tool_progress_arg(t), "label");
  ck_assert_str_eq(ts_tool_annotations(t), "{\"k\":1}");
  ck_assert_uint_eq(ts_registry_count(reg), 3);
  /* the C implementation stays bound; the file-only tool has none */
  ts_tool_result res;
  ts_call_info ci = {.thread = "t", .turn = 1, .index = 0, .call_id = "c", .tool = "rec",
                     .cancel = NULL, .queue = NULL};
  ts_tool_execute(t, &ci, "{}", 2, &res);
  ck_assert_int_eq(res.is_error, 0);
  ts_tool_result_free(&res);
  ts_tool_execute(ts_registry_find(reg, "described_only", 14), &ci, "{}", 2, &res);
  ck_assert_int_eq(res.is_error, 1);
  ck_assert_ptr_nonnull(strstr(res.text, "no implementation"));
  ts_tool_result_free(&res);
  ts_tool_defs_free(&defs);
  ts_registry_free(reg);
}
END_TEST

/* ---- resume ------------------------------------------------------------------------------ */

static int idem_runs;
static void idem_tool(void *user, const ts_call_info *call, const char *args, size_t len,
                      ts_tool_result *out) {
  (void)user, (void)call, (void)args, (void)len;
  idem_runs++;
  ts_tool_result_json(out, "\"again\"", 7);
}

/* ---- stopping by signal flag, resuming a cut turn ----------------------------------------- */

static volatile sig_atomic_t stop_flag;
static volatile int waiting_runs;

/* Waits for its cancel flag, polling; gives up (a plain result) after 60 s. */
static void wait_tool(void *user, const ts_call_info *call, const char *args, size_t len,
                      ts_tool_result *out) {
  (void)user, (void)args, (void)len;
  waiting_runs++;
  for (int i = 0; i < 60000; i++) {
    if (*call->cancel) {
      ts_tool_result_error(out, "cancelled: stopped by its flag");
      return;
    }
    sleep_ms(1);
  }
  ts_tool_result_json(out, "\"gave up waiting\"", 17);
}

/* What a signal handler does, once the waiting tool runs (seen from its own counter). */
static void *raise_later(void *arg) {
  (void)arg;
  while (!waiting_runs) sleep_ms(1);
  stop_flag = 1;
  return NULL;
}

static int count_unfinished(void *user, const ts_store_call *c) {
  (void)c;
  (*(int *)user)++;
  return 0;
}

/* The stop flag is set while ts_dispatch_finish waits (Ctrl-C after the turn's stream has
 * ended): the running tool sees its cancel flag, its error result is committed, and the
 * next call never starts (no start record, no result). */
START_TEST(test_stop_flag_cancels_the_running_tool) {
  reset();
  ts_store *s = open_store();
  ts_registry *reg = make_registry(NULL);
  char why[256];
  ts_tool_spec w = {.name = "wait", .execute = wait_tool};
  ck_assert_msg(ts_registry_add(reg, &w, why, sizeof why) == TS_E_OK, "%s", why);
  ev_log l = {PTHREAD_MUTEX_INITIALIZER, ""};
  stop_flag = 0;
  waiting_runs = 0;
  ts_dispatch_config cfg = {.store = s, .reg = reg, .thread = "t", .turn = 1,
                            .on_event = on_event, .user = &l, .pipelined = 1,
                            .stop = &stop_flag};
  ts_dispatch *d = NULL;
  ck_assert_int_eq(ts_dispatch_new(&d, &cfg), TS_E_OK);
  feed(d, TS_TAP_TOOL_CALL_READY, 0, "wait", "{}");
  feed(d, TS_TAP_TOOL_CALL_READY, 1, "rec", "{\"path\":\"x\"}");
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, raise_later, NULL), 0);
  ck_assert_int_eq(ts_dispatch_finish(d), TS_E_ABORTED);
  ts_dispatch_free(d); /* joins the worker: the cancelled call is committed */
  pthread_join(th, NULL);
  ck_assert_int_eq(R.started[1], 0);
  ck_assert_str_eq(l.log, "tool_execution_started#0;tool_result#0!;");
  tool_msgs t = {0};
  ts_store_messages(s, "t", 0, grab, &t);
  ck_assert_int_eq(t.n, 1);
  ck_assert_str_eq(t.text[0], "call_0|cancelled: stopped by its flag");
  ck_assert_int_eq(t.err[0], 1);
  int left = 0;
  ts_store_unfinished_calls(s, "t", count_unfinished, &left);
  ck_assert_int_eq(left, 0);
  /* a dispatcher whose flag is already up starts nothing */
  cfg.turn = 2;
  ck_assert_int_eq(ts_dispatch_new(&d, &cfg), TS_E_OK);
  feed(d, TS_TAP_TOOL_CALL_READY, 0, "rec", "{\"path\":\"y\"}");
  ck_assert_int_eq(ts_dispatch_finish(d), TS_E_ABORTED);
  ts_dispatch_free(d);
  ck_assert_int_eq(R.started[0], 0);
  ts_registry_free(reg);
  ts_store_close(s);
}
END_TEST

/* A turn streamed again after a cut (run --resume): a call that has its result keeps it
 * and does not run again, silently; the others run, in order. Without `resuming` such a
 * call is a store error, as a new turn never has one. */
START_TEST(test_resuming_keeps_committed_results) {
  reset();
  ts_store *s = open_store();
  ts_registry *reg = make_registry(NULL);
  ck_assert_int_eq(ts_store_call_started(s, "t", 1, 0, "call_0", "rec", "{\"path\":\"a\"}", 12,
                                         NULL), TS_E_OK);
  ck_assert_int_eq(ts_store_call_finished(s, "t", 1, 0, "first", 5, 0, NULL), TS_E_OK);
  ev_log l = {PTHREAD_MUTEX_INITIALIZER, ""};
  ts_dispatch_config cfg = {.store = s, .reg = reg, .thread = "t", .turn = 1,
                            .on_event = on_event, .user = &l, .pipelined = 1, .resuming = 1};
  ts_dispatch *d = NULL;
  ck_assert_int_eq(ts_dispatch_new(&d, &cfg), TS_E_OK);
  feed(d, TS_TAP_TOOL_CALL_READY, 0, "rec", "{\"path\":\"a\"}");
  feed(d, TS_TAP_TOOL_CALL_READY, 1, "rec", "{\"path\":\"b\"}");
  ck_assert_int_eq(ts_dispatch_finish(d), TS_E_OK);
  ck_assert_int_eq(ts_dispatch_done_count(d), 2);
  ts_dispatch_free(d);
  ck_assert_str_eq(R.order, "1,");
  ck_assert_str_eq(l.log, "tool_execution_started#1;tool_result#1ok;");
  tool_msgs t = {0};
  ts_store_messages(s, "t", 0, grab, &t);
  ck_assert_int_eq(t.n, 2);
  ck_assert_str_eq(t.text[0], "call_0|first");
  ck_assert_str_eq(t.text[1], "call_1|{\"path\":\"b\"}");
  cfg.resuming = 0;
  ck_assert_int_eq(ts_dispatch_new(&d, &cfg), TS_E_OK);
  feed(d, TS_TAP_TOOL_CALL_READY, 0, "rec", "{\"path\":\"a\"}");
  ck_assert_int_eq(ts_dispatch_finish(d), TS_E_STORE_CALL_FINISHED);
  ts_dispatch_free(d);
  ts_registry_free(reg);
  ts_store_close(s);
}
END_TEST

START_TEST(test_resume_resolves_interrupted_calls) {
  reset();
  ts_store *s = open_store();
  ts_registry *reg = make_registry(NULL);
  char why[256];
  ts_tool_spec idem = {.name = "idem", .idempotent = 1, .execute = idem_tool};
  ck_assert_int_eq(ts_registry_add(reg, &idem, why, sizeof why), TS_E_OK);
  /* as a crash leaves them: started, never finished */
  ck_assert_int_eq(ts_store_call_started(s, "t", 1, 0, "c0", "rec", "{\"path\":\"a\"}", 12, NULL),
                   TS_E_OK);
  ck_assert_int_eq(ts_store_call_started(s, "t", 1, 1, "c1", "idem", "{}", 2, NULL), TS_E_OK);
  ev_log l = {PTHREAD_MUTEX_INITIALIZER, ""};
  uint32_t n = 0;
  idem_runs = 0;
  ck_assert_int_eq(ts_dispatch_resume(s, reg, "t", on_event, &l, &n), TS_E_OK);
  ck_assert_uint_eq(n, 2);
  ck_assert_int_eq(idem_runs, 1);
  ck_assert_str_eq(R.order, ""); /* the non-idempotent tool was not run again */
  tool_msgs m = {0};
  ts_store_messages(s, "t", 0, grab, &m);
  ck_assert_int_eq(m.n, 2);
  ck_assert_msg(strncmp(m.text[0], "c0|interrupted:", 15) == 0, "%s", m.text[0]);
  ck_assert_int_eq(m.err[0], 1);
  ck_assert_str_eq(m.text[1], "c1|\"again\"");
  ck_assert_int_eq(m.err[1], 0);
  /* resolved for good: a second resume finds nothing */
  ck_assert_int_eq(ts_dispatch_resume(s, reg, "t", NULL, NULL, &n), TS_E_OK);
  ck_assert_uint_eq(n, 0);
  ts_registry_free(reg);
  ts_store_close(s);
}
END_TEST

int main(void) {
  Suite *s = suite_create("dispatch");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, NULL, remove_dir);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_index_order_not_completion_order);
  tcase_add_test(tc, test_pipelined_starts_while_later_calls_stream);
  tcase_add_test(tc, test_new_tells_errors_apart);
  tcase_add_test(tc, test_errors_become_results);
  tcase_add_test(tc, test_definition_errors);
  tcase_add_test(tc, test_annotations_unchanged_and_inert);
  tcase_add_test(tc, test_tools_file_merges);
  tcase_add_test(tc, test_resume_resolves_interrupted_calls);
  tcase_add_test(tc, test_stop_flag_cancels_the_running_tool);
  tcase_add_test(tc, test_resuming_keeps_committed_results);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
