/*
 * jshook_cli_test.c: tools-spec §7's tool_call_started hook end to end. `toolstream run`
 * replays a recorded OpenAI Chat turn (tests/corpus/openai-chat-two-parallel-calls.sse:
 * two calls whose `description` is their progress argument) against a JavaScript module
 * whose tools define onToolCallStarted(event) (one on its definition, one the module's
 * own top-level function). Each hook prints what it saw with console.log, which the
 * command shows on standard error as the hook runs; standard error and the event lines
 * go to one pipe, so their order is the order things happened. Proved:
 *   - each hook ran once, right after its tool_call_started event line and before that
 *     call's tool_call_ready (so at the moment of the event, while the arguments were
 *     still streaming), with the event's call id and index and the same `progress`;
 *   - a hook that throws is one line on standard error and the call still succeeds.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "store/store.h"
#include "support/proc.h"
#include "support/runner.h"
#include "support/tempdir.h"
#include "support/test_support.h"

#define BINARY TS_BINARY_DIR "/toolstream"

static char base[64];

static void remove_base(void) {
  if (base[0]) ts_test_rm_rf(base);
}

/* The line of `text` that contains `needle` (first after `from`), as an offset, or -1. */
static long line_with(const char *text, const char *needle, long from) {
  const char *p = strstr(text + from, needle);
  if (!p) return -1;
  while (p > text && p[-1] != '\n') p--;
  return (long)(p - text);
}

/* The line starting at `at` (a copy in a static buffer). */
static const char *line_at(const char *text, long at) {
  static char buf[4096];
  const char *e = strchr(text + at, '\n');
  size_t n = e ? (size_t)(e - (text + at)) : strlen(text + at);
  if (n >= sizeof buf) n = sizeof buf - 1;
  memcpy(buf, text + at, n);
  buf[n] = '\0';
  return buf;
}

static long next_line(const char *text, long at) {
  const char *e = strchr(text + at, '\n');
  return e ? (long)(e + 1 - text) : -1;
}

static int grab(void *user, const ts_store_message *m) {
  char *out = user;
  if (m->role != TS_STORE_TOOL) return 0;
  char line[512];
  snprintf(line, sizeof line, "%s%s=%s\n", m->is_error ? "!" : "", m->tool_call_id, m->content);
  strncat(out, line, 4095 - strlen(out));
  return 0;
}

/* The thread's tool results as stored ("ID=CONTENT" lines; "!" before an error). */
static const char *stored_results(const char *thread) {
  static char msgs[4096];
  ts_store *s;
  char why[256];
  ck_assert_msg(ts_store_open(ts_test_at(base, "data"), &s, why, sizeof why) == TS_E_OK, "%s", why);
  msgs[0] = '\0';
  ts_store_messages(s, thread, 0, grab, msgs);
  ts_store_close(s);
  return msgs;
}

static const char module[] =
    "const seen = (event) => `saw ${event.tool} #${event.index} ${event.call_id} "
    "progress=${JSON.stringify(event.progress)}`;\n"
    "defineTool({\n"
    "  name: 'create_ticket',\n"
    "  description: 'Opens a ticket',\n"
    "  progressArgument: 'description',\n"
    "  args: z.object({ title: z.string(), description: z.string(), priority: z.number().int() }),\n"
    "  onToolCallStarted: async (event) => { console.log(seen(event)); },\n"
    "  execute: async (state, { title }) => ({ status: 'success', result: `opened ${title}` }),\n"
    "});\n"
    "defineTool({\n"
    "  name: 'notify_team',\n"
    "  description: 'Tells a team',\n"
    "  progressArgument: 'description',\n"
    "  args: z.object({ team: z.string(), description: z.string() }),\n"
    "  execute: (state, args) => ({ status: 'success', result: 'told ' + args.team }),\n"
    "});\n"
    "function onToolCallStarted(event: { tool: string; index: number; progress?: string }) {\n"
    "  console.log(seen(event));\n"
    "  if (event.tool === 'notify_team' && HOOK_THROWS) throw new Error('hook broke');\n"
    "}\n";

static result run_session(const char *thread, int hook_throws) {
  char p[256];
  snprintf(p, sizeof p, "%s/session", base);
  mkdir(p, 0755);
  size_t n = 0;
  char *sse = ts_test_read_file(ts_test_path("tests/corpus/openai-chat-two-parallel-calls.sse"), &n);
  ck_assert_msg(sse, "cannot read the capture");
  ts_test_write_file(ts_test_at(base, "session/turn-1.sse"), sse, n);
  free(sse);
  ts_test_put(ts_test_at(base, "session/turn-2.sse"),
              "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"filed\"}}]}\n\n"
              "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
              "data: [DONE]\n\n");
  static char src[4096];
  snprintf(src, sizeof src, "const HOOK_THROWS = %s;\n%s", hook_throws ? "true" : "false", module);
  ts_test_put(ts_test_at(base, "tickets.ts"), src);
  char session[128], ws[128], data[128], tool[128];
  snprintf(session, sizeof session, "%s/session", base);
  snprintf(ws, sizeof ws, "%s/ws", base);
  mkdir(ws, 0755);
  snprintf(data, sizeof data, "%s/data", base);
  snprintf(tool, sizeof tool, "%s/tickets.ts", base);
  /* one pipe for both: `sh -c 'exec "$0" "$@" 2>&1' toolstream ARGS...` */
  const char *argv[] = {"sh", "-c", "exec \"$0\" \"$@\" 2>&1", BINARY, "run", "--model-replay",
                        session, "--workspace", ws, "--data-dir", data, "--rate", "2000",
                        "--thread", thread, "--json", "--tools", tool, "file it", NULL};
  return run_bin("/bin/sh", argv, NULL, 0);
}

/* Checks one call: its started line, then at once its hook's line (with the same call
 * id, index and progress), and only after that its tool_call_ready. */
static void check_call(const char *out, const char *tool, int index, const char *call_id,
                       const char *progress_json) {
  char want[256];
  snprintf(want, sizeof want, "\"type\":\"tool_call_started\"");
  long at = 0, started = -1;
  char tool_key[64];
  snprintf(tool_key, sizeof tool_key, "\"tool\":\"%s\"", tool);
  while ((at = line_with(out, want, at)) >= 0) {
    if (strstr(line_at(out, at), tool_key)) {
      started = at;
      break;
    }
    at = next_line(out, at);
    if (at < 0) break;
  }
  ck_assert_msg(started >= 0, "no tool_call_started for %s in:\n%s", tool, out);
  char progress_field[256];
  snprintf(progress_field, sizeof progress_field, "\"progress\":%s", progress_json);
  ck_assert_msg(strstr(line_at(out, started), progress_field), "%s: %s", tool, line_at(out, started));
  long hook = next_line(out, started);
  ck_assert_msg(hook >= 0, "nothing after %s's started line", tool);
  char hook_line[512];
  snprintf(hook_line, sizeof hook_line, "toolstream: %s: onToolCallStarted: saw %s #%d %s progress=%s",
           tool, tool, index, call_id, progress_json);
  ck_assert_msg(!strcmp(line_at(out, hook), hook_line), "the line after %s's started event:\n%s\nwant:\n%s\nall:\n%s",
                tool, line_at(out, hook), hook_line, out);
  /* exactly once */
  ck_assert_msg(line_with(out, hook_line, next_line(out, hook)) < 0, "%s's hook ran twice:\n%s", tool, out);
  /* the call's ready event comes after the hook */
  char ready_key[128];
  snprintf(ready_key, sizeof ready_key, "\"call_id\":\"%s\"", call_id);
  long ready = line_with(out, "\"type\":\"tool_call_ready\"", 0);
  while (ready >= 0 && !strstr(line_at(out, ready), ready_key)) {
    long nx = next_line(out, ready);
    ready = nx < 0 ? -1 : line_with(out, "\"type\":\"tool_call_ready\"", nx);
  }
  ck_assert_msg(ready > hook, "%s: ready at %ld, hook at %ld:\n%s", tool, ready, hook, out);
}

START_TEST(test_hook_at_the_event) {
  ts_test_tempdir(base, sizeof base, "jshook");
  result r = run_session("h1", 0);
  const char *out = sb_str(&r.out);
  ck_assert_msg(r.status == 0, "exit %d:\n%s", r.status, out);
  check_call(out, "create_ticket", 0, "call_W1w2iSIVgFh6DbbY4MN96QVL",
             "\"Café counter unit drips when \\\"steam\\\" is on\"");
  check_call(out, "notify_team", 1, "call_sHgK0WcRpW76QnTEUcvg5bSl",
             "\"Leak near the espresso bar — please check today\"");
  /* create_ticket's arguments were still streaming when its hook ran: its started event
   * is at an earlier offset than its ready event (the capture's event 8 against 9) */
  ck_assert_msg(strstr(out, "\"offset\":2996,\"call_id\":\"call_W1w2iSIVgFh6DbbY4MN96QVL\",\"tool\":\"create_ticket\""),
                "%s", out);
  result_free(&r);
  ck_assert_str_eq(stored_results("h1"), "call_W1w2iSIVgFh6DbbY4MN96QVL=\"opened Espresso machine leaks\"\n"
                         "call_sHgK0WcRpW76QnTEUcvg5bSl=\"told facilities\"\n");
}
END_TEST

START_TEST(test_hook_that_throws) {
  ts_test_tempdir(base, sizeof base, "jshook");
  result r = run_session("h2", 1);
  const char *out = sb_str(&r.out);
  ck_assert_msg(r.status == 0, "exit %d:\n%s", r.status, out);
  ck_assert_msg(strstr(out, "toolstream: tool_call_started hook: notify_team: onToolCallStarted: Error: hook broke"),
                "%s", out);
  /* it still printed first, and the call went on */
  ck_assert_msg(strstr(out, "toolstream: notify_team: onToolCallStarted: saw notify_team #1"), "%s", out);
  result_free(&r);
  const char *msgs = stored_results("h2");
  ck_assert_msg(strstr(msgs, "call_sHgK0WcRpW76QnTEUcvg5bSl=\"told facilities\"\n"), "%s", msgs);
}
END_TEST

int main(void) {
  Suite *s = suite_create("jshook_cli");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, NULL, remove_base);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_hook_at_the_event);
  tcase_add_test(tc, test_hook_that_throws);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
