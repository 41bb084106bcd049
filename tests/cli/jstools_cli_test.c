/*
 * jstools_cli_test.c: `toolstream run --tools t.js --var NAME=VALUE` on a replay session:
 * the model calls a JavaScript tool, which reads its variable, invokes a C tool and
 * queues another call; the results are in the store in order, and a bad module is a
 * usage error.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "support/proc.h"
#include "support/runner.h"
#include "support/tempdir.h"
#include "store/store.h"

#define BINARY TS_BINARY_DIR "/toolstream"

static char base[64];

#define put(name, text) ts_test_put(ts_test_at(base, (name)), (text))

static int grab(void *user, const ts_store_message *m) {
  char *out = user;
  if (m->role != TS_STORE_TOOL) return 0;
  char line[1024];
  snprintf(line, sizeof line, "%s%s=%s\n", m->is_error ? "!" : "", m->tool_call_id, m->content);
  strncat(out, line, 8191 - strlen(out));
  return 0;
}

/* After each test (in its own process): its directory goes. */
static void remove_base(void) {
  if (base[0]) ts_test_rm_rf(base);
}

START_TEST(test_run_with_js_tools) {
  ts_test_tempdir(base, sizeof base, "jscli");
  char p[256];
  snprintf(p, sizeof p, "%s/session", base);
  mkdir(p, 0755);
  snprintf(p, sizeof p, "%s/ws", base);
  mkdir(p, 0755);
  put("greet.js",
      "defineTool({\n"
      "  description: 'Greets and notes it',\n"
      "  progressArgument: 'who',\n"
      "  args: z.object({ who: z.string() }),\n"
      "  uses: ['write_file', 'read_file'],\n"
      "  variables: [{ name: 'GREETING', type: 'text', required: true, description: 'the word' }],\n"
      "  execute: function (state, args) {\n"
      "    var w = state.invokeTool('write_file', { description: 'note', path: 'note.txt', content: state.env('GREETING') });\n"
      "    state.queueTool('read_file', { path: 'note.txt' });\n"
      "    return { status: 'success', result: state.env('GREETING') + ', ' + args.who + ' (' + w.status + ')' };\n"
      "  }\n"
      "});\n");
  put("session/turn-1.sse",
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\","
      "\"type\":\"function\",\"function\":{\"name\":\"greet\",\"arguments\":\"{\\\"who\\\":\\\"Ada\\\"}\"}}]}}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
      "data: [DONE]\n\n");
  put("session/turn-2.sse",
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"done\"}}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
  char session[128], ws[128], data[128], tool[128];
  snprintf(session, sizeof session, "%s/session", base);
  snprintf(ws, sizeof ws, "%s/ws", base);
  snprintf(data, sizeof data, "%s/data", base);
  snprintf(tool, sizeof tool, "%s/greet.js", base);
  setenv("GREETING", "from-env", 1);
  const char *argv[] = {"toolstream", "run", "--model-replay", session, "--workspace", ws,
                        "--data-dir", data, "--rate", "10000", "--thread", "j1", "--json",
                        "--tools", tool, "--var", "GREETING=Hello", "hi", NULL};
  result r = run_bin(BINARY, argv, NULL, 0);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, sb_str(&r.err));
  /* progress from the module's progressArgument */
  ck_assert_msg(strstr(sb_str(&r.out), "\"progress\":\"Ada\""), "%s", sb_str(&r.out));
  ts_store *s;
  char why[256];
  ck_assert_msg(ts_store_open(data, &s, why, sizeof why) == TS_E_OK, "%s", why);
  static char msgs[8192];
  msgs[0] = '\0';
  ts_store_messages(s, "j1", 0, grab, msgs);
  ts_store_close(s);
  ck_assert_msg(!strncmp(msgs, "c1=\"Hello, Ada (success)\"\nqueued_1_1=", 37) &&
                    strstr(msgs, "Hello"),
                "%s", msgs);
  result_free(&r);

  /* without --var, the environment; unset, the required variable would park the call
   * (tests/cli/threads_env_cli_test.c): --check-env says so before the model is asked */
  unsetenv("GREETING");
  const char *argv2[] = {"toolstream", "run", "--model-replay", session, "--workspace", ws,
                         "--data-dir", data, "--rate", "10000", "--thread", "j2", "--json",
                         "--tools", tool, "--check-env", "hi", NULL};
  r = run_bin(BINARY, argv2, NULL, 0);
  ck_assert_msg(r.status == 1, "exit %d: %s", r.status, sb_str(&r.err));
  ck_assert_msg(strstr(sb_str(&r.err), "GREETING (text, required by tool"), "%s", sb_str(&r.err));
  ck_assert_str_eq(sb_str(&r.out), ""); /* not one event: the model was never asked */
  result_free(&r);

  /* a module that does not load is a usage error, with the reason */
  put("bad.js", "defineTool({ execute: (s) => });");
  snprintf(tool, sizeof tool, "%s/bad.js", base);
  const char *argv3[] = {"toolstream", "run", "--model-replay", session, "--workspace", ws,
                         "--data-dir", data, "--thread", "j3", "--tools", tool, NULL};
  r = run_bin(BINARY, argv3, NULL, 0);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(sb_str(&r.err), "SyntaxError"), "%s", sb_str(&r.err));
  result_free(&r);
}
END_TEST

int main(void) {
  Suite *s = suite_create("jstools_cli");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, NULL, remove_base);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_run_with_js_tools);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
