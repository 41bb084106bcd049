/*
 * hook_test.c: ts_agent_config.on_tool_call_started, the embedder's tools-spec §7 hook,
 * through ts_agent_run on the recorded-turns backend (the capture
 * tests/corpus/openai-chat-two-parallel-calls.sse, two calls whose progress argument is
 * `description`). Every event the loop emits, every hook call and every tool execution
 * is written to one log in the order they happen. Proved:
 *   - the callback runs once per call, right after that call's tool_call_started went
 *     out and before anything else is emitted or executed, with the very bytes of the
 *     event (the same progress);
 *   - the tool's own hook (ts_tool_spec.on_started) runs first, then the embedder's;
 *   - a call whose tool has no progress argument gets the hook with no progress;
 *   - without the callback the run is the same (NULL is allowed).
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent/replay_model.h"
#include "agent/run.h"
#include "base/error.h"
#include "base/strbuf.h"
#include "store/store.h"
#include "support/runner.h"
#include "support/tempdir.h"
#include "support/test_support.h"
#include "tools/registry.h"

static char dir[64];

static void remove_dir(void) {
  if (dir[0]) ts_test_rm_rf(dir);
}

typedef struct {
  pthread_mutex_t mu;
  ts_buf log;        /* "EV json" / "TOOLHOOK json" / "HOOK json" / "EXEC tool" lines */
  ts_buf last_event; /* the last event's bytes */
  int hooks, mismatches;
} journal;

static void note(journal *j, const char *what, const char *text, size_t len) {
  pthread_mutex_lock(&j->mu);
  ts_buf_puts(&j->log, what);
  ts_buf_putc(&j->log, ' ');
  ts_buf_append(&j->log, text, len);
  ts_buf_putc(&j->log, '\n');
  pthread_mutex_unlock(&j->mu);
}

static void view(void *user, const char *json, size_t len) {
  journal *j = user;
  note(j, "EV", json, len);
  pthread_mutex_lock(&j->mu);
  ts_buf_reset(&j->last_event);
  ts_buf_append(&j->last_event, json, len);
  pthread_mutex_unlock(&j->mu);
}

static void hook(void *user, const char *json, size_t len) {
  journal *j = user;
  pthread_mutex_lock(&j->mu);
  j->hooks++;
  if (j->last_event.len != len || memcmp(j->last_event.p, json, len)) j->mismatches++;
  pthread_mutex_unlock(&j->mu);
  note(j, "HOOK", json, len);
}

static int tool_hook(void *user, const char *json, size_t len, char *why, size_t why_cap) {
  (void)why, (void)why_cap;
  note(user, "TOOLHOOK", json, len);
  return 0;
}

static void execute(void *user, const ts_call_info *call, const char *args, size_t len,
                    ts_tool_result *out) {
  (void)args, (void)len;
  note(user, "EXEC", call->tool, strlen(call->tool));
  ts_tool_result_json(out, "true", 4);
}

static int run_thread(const char *thread, journal *j, int with_hook, int progress) {
  char why[512];
  ts_store *s = NULL, *ds = NULL;
  ck_assert_msg(ts_store_open(dir, &s, why, sizeof why) == TS_E_OK, "%s", why);
  ck_assert_msg(ts_store_open(dir, &ds, why, sizeof why) == TS_E_OK, "%s", why);
  ts_registry *reg = ts_registry_new();
  ck_assert_ptr_nonnull(reg);
  const char *schema =
      "{\"type\":\"object\",\"properties\":{\"title\":{\"type\":\"string\"},"
      "\"team\":{\"type\":\"string\"},\"description\":{\"type\":\"string\"},"
      "\"priority\":{\"type\":\"integer\"}}}";
  ts_tool_spec t1 = {.name = "create_ticket", .args_schema = schema, .progress_arg = progress ? "description" : NULL,
                     .execute = execute, .on_started = tool_hook, .user = j};
  ts_tool_spec t2 = {.name = "notify_team", .args_schema = schema, .progress_arg = progress ? "description" : NULL,
                     .execute = execute, .user = j};
  ck_assert_msg(ts_registry_add(reg, &t1, why, sizeof why) == TS_E_OK, "%s", why);
  ck_assert_msg(ts_registry_add(reg, &t2, why, sizeof why) == TS_E_OK, "%s", why);
  ts_replay_model replay = {ts_test_at(dir, "session"), 0};
  ts_agent_config ac = {.store = s, .dispatch_store = ds, .reg = reg, .thread = thread,
                        .model = ts_replay_model_backend(&replay),
                        .sink = {.who = "hook_test", .view = view, .view_user = j, .no_time = 1},
                        .on_tool_call_started = with_hook ? hook : NULL, .hook_user = j};
  ts_agent_stats st;
  int rc = ts_agent_run(&ac, &st, why, sizeof why);
  ck_assert_msg(rc == TS_E_OK, "%s", why);
  ts_registry_free(reg);
  ts_store_close(s);
  ts_store_close(ds);
  return rc;
}

static void setup_session(void) {
  ts_test_tempdir(dir, sizeof dir, "agenthook");
  char p[128];
  snprintf(p, sizeof p, "%s/session", dir);
  ck_assert_int_eq(mkdir(p, 0755), 0);
  size_t n = 0;
  char *sse = ts_test_read_file(ts_test_path("tests/corpus/openai-chat-two-parallel-calls.sse"), &n);
  ck_assert_msg(sse, "cannot read the capture");
  ts_test_write_file(ts_test_at(dir, "session/turn-1.sse"), sse, n);
  free(sse);
  ts_test_put(ts_test_at(dir, "session/turn-2.sse"),
              "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\n"
              "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
              "data: [DONE]\n\n");
}

static void journal_init(journal *j) {
  memset(j, 0, sizeof *j);
  pthread_mutex_init(&j->mu, NULL);
  ts_buf_init(&j->log, 1 << 20);
  ts_buf_init(&j->last_event, 1 << 20);
}

static void journal_fini(journal *j) {
  ts_buf_fini(&j->log);
  ts_buf_fini(&j->last_event);
  pthread_mutex_destroy(&j->mu);
}

/* The line after the one that starts at `at`, or NULL. */
static const char *next(const char *at) {
  const char *e = strchr(at, '\n');
  return e && e[1] ? e + 1 : NULL;
}

static int starts(const char *line, const char *prefix) {
  return !strncmp(line, prefix, strlen(prefix));
}

/* The first line starting with "EV" that contains `a` and `b`. */
static const char *find_event(const char *log, const char *a, const char *b) {
  for (const char *l = log; l; l = next(l)) {
    const char *e = strchr(l, '\n');
    size_t n = e ? (size_t)(e - l) : strlen(l);
    char line[4096];
    if (n >= sizeof line) continue;
    memcpy(line, l, n);
    line[n] = '\0';
    if (starts(line, "EV ") && strstr(line, a) && strstr(line, b)) return l;
  }
  return NULL;
}

/* `line` (up to its newline) equals prefix + the bytes of the event line `ev` (its text
 * after "EV "). */
static int same_json(const char *line, const char *prefix, const char *ev) {
  size_t pl = strlen(prefix);
  if (strncmp(line, prefix, pl)) return 0;
  const char *a = line + pl, *b = ev + 3;
  while (*a && *a != '\n' && *a == *b) a++, b++;
  return (*a == '\n' || !*a) && (*b == '\n' || !*b);
}

START_TEST(test_callback_at_the_event) {
  setup_session();
  journal j;
  journal_init(&j);
  run_thread("hk1", &j, 1, 1);
  const char *log = j.log.p;
  ck_assert_msg(j.hooks == 2 && j.mismatches == 0, "hooks %d, mismatches %d:\n%s", j.hooks,
                j.mismatches, log);
  /* call 0: its started event (progress streamed, arguments not yet), the tool's hook,
   * the embedder's, then only the call's ready event */
  const char *s0 = find_event(log, "\"type\":\"tool_call_started\"", "\"index\":0");
  ck_assert_msg(s0, "%s", log);
  ck_assert_msg(strstr(s0, "\"progress\":\"Café counter unit drips when \\\"steam\\\" is on\""), "%s", log);
  const char *h0 = next(s0), *h1 = h0 ? next(h0) : NULL, *after = h1 ? next(h1) : NULL;
  ck_assert_msg(h0 && same_json(h0, "TOOLHOOK ", s0), "%s", log);
  ck_assert_msg(h1 && same_json(h1, "HOOK ", s0), "%s", log);
  ck_assert_msg(after && starts(after, "EV {\"v\":1,\"type\":\"tool_call_ready\"") &&
                    strstr(after, "\"index\":0"),
                "%s", log);
  /* call 1: the started event, then at once the embedder's hook (no tool hook here);
   * call 0's execution runs on the dispatcher's thread meanwhile and may be noted
   * between the two (events are emitted under the sink's lock, tools are not) */
  const char *s1 = find_event(log, "\"type\":\"tool_call_started\"", "\"index\":1");
  ck_assert_msg(s1 && strstr(s1, "\"progress\":\"Leak near the espresso bar — please check today\""), "%s", log);
  const char *g1 = next(s1);
  if (g1 && starts(g1, "EXEC create_ticket\n")) g1 = next(g1);
  ck_assert_msg(g1 && same_json(g1, "HOOK ", s1), "%s", log);
  /* nothing ran before its hook */
  ck_assert_msg(strstr(log, "EXEC create_ticket") > h1 && strstr(log, "EXEC notify_team") > g1, "%s", log);
  journal_fini(&j);
}
END_TEST

START_TEST(test_callback_without_progress) {
  setup_session();
  journal j;
  journal_init(&j);
  run_thread("hk2", &j, 1, 0);
  const char *log = j.log.p;
  ck_assert_msg(j.hooks == 2 && j.mismatches == 0, "hooks %d, mismatches %d:\n%s", j.hooks,
                j.mismatches, log);
  const char *s0 = find_event(log, "\"type\":\"tool_call_started\"", "\"index\":0");
  ck_assert_msg(s0 && !strstr(s0, "\"progress\""), "%s", log);
  const char *h = next(next(s0));
  ck_assert_msg(h && same_json(h, "HOOK ", s0), "%s", log);
  journal_fini(&j);
}
END_TEST

START_TEST(test_no_callback) {
  setup_session();
  journal j;
  journal_init(&j);
  run_thread("hk3", &j, 0, 1);
  ck_assert_int_eq(j.hooks, 0);
  ck_assert_msg(strstr(j.log.p, "TOOLHOOK ") && strstr(j.log.p, "EXEC notify_team"), "%s", j.log.p);
  journal_fini(&j);
}
END_TEST

int main(void) {
  Suite *s = suite_create("agent_hook");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, NULL, remove_dir);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_callback_at_the_event);
  tcase_add_test(tc, test_callback_without_progress);
  tcase_add_test(tc, test_no_callback);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
