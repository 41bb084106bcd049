/*
 * compose_cli_test.c: `toolstream run --prompts DIR` with prompt and agent definitions, as a
 * user runs it: a coordinator that writes a file and calls a sub-prompt with it attached
 * (the child thread in the store, the copy in the child's filesystem, the child's events
 * on standard output with their parent), and a handoff kept across --resume. The model is
 * the replay backend, one recorded directory per prompt (DIR/<prompt>/turn-N.sse), or the
 * model server over HTTP, where each prompt's request names its own model: in the body,
 * and in the URL for the providers whose URL carries it (Gemini, Bedrock, signed as sent).
 */
#define _GNU_SOURCE /* strptime, timegm (support/sigv4_check.h) */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/store.h"
#include "support/model_server.h"
#include "support/evs_frame.h"
#include "support/proc.h"
#include "support/runner.h"
#include "support/sigv4_check.h"
#include "support/tempdir.h"
#include "support/test_support.h"

#define BINARY TS_BINARY_DIR "/toolstream"

static char base[64];

static void put_in(const char *rel, const char *text) {
  char d[256];
  snprintf(d, sizeof d, "%s", ts_test_at(base, rel));
  char *slash = strrchr(d, '/');
  *slash = '\0';
  char cmd[300];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s'", d);
  ck_assert_int_eq(system(cmd), 0);
  ts_test_put(ts_test_at(base, rel), text);
}

static void call_turn(const char *rel, const char *id, const char *tool, const char *args) {
  char buf[4096];
  snprintf(buf, sizeof buf,
           "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"%s\","
           "\"type\":\"function\",\"function\":{\"name\":\"%s\",\"arguments\":\"%s\"}}]}}]}\n\n"
           "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
           "data: [DONE]\n\n",
           id, tool, args);
  put_in(rel, buf);
}

static void text_turn(const char *rel, const char *text) {
  char buf[1024];
  snprintf(buf, sizeof buf,
           "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"%s\"}}]}\n\n"
           "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
           "data: [DONE]\n\n",
           text);
  put_in(rel, buf);
}

static void setup(void) { ts_test_tempdir(base, sizeof base, "compose-cli"); }

static void teardown(void) {
  if (base[0]) ts_test_rm_rf(base);
}

static result run_with(const char *thread, const char *const *extra, int resume) {
  char rec[128], ws[128], data[128], prompts[128];
  snprintf(rec, sizeof rec, "%s/rec", base);
  snprintf(ws, sizeof ws, "%s/ws", base);
  snprintf(data, sizeof data, "%s/data", base);
  snprintf(prompts, sizeof prompts, "%s/prompts", base);
  mkdir(ws, 0755);
  const char *argv[32] = {"toolstream", "run", "--prompts", prompts, "--model-replay", rec,
                          "--workspace", ws, "--data-dir", data, "--rate", "10000",
                          "--thread", thread, "--json"};
  int n = 15;
  if (resume) argv[n++] = "--resume";
  for (int i = 0; extra && extra[i]; i++) argv[n++] = extra[i];
  argv[n] = NULL;
  return run_bin(BINARY, argv, NULL, 0);
}

typedef struct {
  char parent[300], workspace[600];
  int found;
} row;

static int grab_row(void *user, const ts_store_thread *t) {
  row *r = user;
  r->found = 1;
  snprintf(r->parent, sizeof r->parent, "%s", t->parent ? t->parent : "");
  snprintf(r->workspace, sizeof r->workspace, "%s", t->workspace ? t->workspace : "");
  return 0;
}

static row thread_row(const char *thread) {
  row r;
  memset(&r, 0, sizeof r);
  char data[128], why[256];
  snprintf(data, sizeof data, "%s/data", base);
  ts_store *s;
  ck_assert_int_eq(ts_store_open(data, &s, why, sizeof why), 0);
  ts_store_thread_get(s, thread, grab_row, &r);
  ts_store_close(s);
  return r;
}

#define HAS(hay, needle) ck_assert_msg(strstr((hay), (needle)), "no %s in:\n%s", (needle), (hay))

START_TEST(test_coordinator_calls_a_sub_prompt_with_an_attachment) {
  put_in("prompts/coordinator.json",
         "{\"name\":\"coordinator\",\"prompt\":\"You coordinate.\",\"tools\":[\"write_file\","
         "{\"name\":\"researcher\",\"includeToolCalls\":false,"
         "\"initUserMessageProperty\":\"question\",\"initAttachmentsProperty\":\"files\"}]}");
  put_in("prompts/researcher.json",
         "{\"name\":\"researcher\",\"toolDescription\":\"Answers one question\","
         "\"prompt\":\"You research.\",\"tools\":[\"read_file\"],\"requiredSchema\":{"
         "\"type\":\"object\",\"properties\":{\"question\":{\"type\":\"string\"},"
         "\"files\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}},"
         "\"required\":[\"question\"]}}");
  call_turn("rec/coordinator/turn-1.sse", "w1", "write_file",
            "{\\\"description\\\":\\\"notes\\\",\\\"path\\\":\\\"attachments/notes.md\\\","
            "\\\"content\\\":\\\"the notes\\\"}");
  call_turn("rec/coordinator/turn-2.sse", "r1", "researcher",
            "{\\\"question\\\":\\\"What changed?\\\",\\\"files\\\":[\\\"/attachments/notes.md\\\"]}");
  text_turn("rec/coordinator/turn-3.sse", "all done");
  text_turn("rec/researcher/turn-1.sse", "nothing changed");
  const char *extra[] = {"--prompt-name", "coordinator", NULL};
  result r = run_with("c1", extra, 0);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err.p ? r.err.p : "");
  /* the child's events, on the same output, with their parent */
  HAS(r.out.p, "\"thread\":\"c1/t2c0\",\"parent\":\"c1\"");
  /* the sub-prompt's result, shaped by the entry: text, no calls, errors */
  HAS(r.out.p, "\"result\":{\"thread\":\"c1/t2c0\",\"status\":\"done\",\"text\":\"nothing "
               "changed\",\"errors\":[]}");
  row c = thread_row("c1/t2c0");
  ck_assert_int_eq(c.found, 1);
  ck_assert_str_eq(c.parent, "c1");
  char p[700];
  snprintf(p, sizeof p, "%s/attachments/notes.md", c.workspace);
  size_t len;
  char *copied = ts_test_read_file(p, &len);
  ck_assert_msg(copied != NULL, "no copy at %s", p);
  ck_assert_str_eq(copied, "the notes");
  free(copied);
  result_free(&r);
}
END_TEST

START_TEST(test_handoff_survives_resume) {
  put_in("prompts/defs.json",
         "[{\"kind\":\"prompt\",\"name\":\"triage\",\"prompt\":\"Route.\",\"tools\":[\"billing\"]},"
         " {\"kind\":\"prompt\",\"name\":\"billing_desk\",\"prompt\":\"Billing.\",\"tools\":"
         "[\"read_file\"]},"
         " {\"kind\":\"agent\",\"name\":\"front\",\"sideA\":{\"prompt\":\"triage\"}},"
         " {\"kind\":\"agent\",\"name\":\"billing\",\"exposeAsTool\":true,"
         "\"toolDescription\":\"To billing\",\"sideA\":{\"prompt\":\"billing_desk\"}}]");
  call_turn("rec/triage/turn-1.sse", "h1", "billing", "{}");
  text_turn("rec/billing_desk/turn-1.sse", "billing here");
  text_turn("rec/billing_desk/turn-2.sse", "still billing");
  const char *extra[] = {"--agent", "front", "go", NULL};
  result r = run_with("h1", extra, 0);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err.p ? r.err.p : "");
  HAS(r.out.p, "\"type\":\"handoff\",\"thread\":\"h1\"");
  HAS(r.out.p, "\"from\":\"front\",\"to\":\"billing\"");
  HAS(r.out.p, "billing here");
  result_free(&r);
  const char *extra2[] = {"--agent", "front", "and now?", NULL};
  r = run_with("h1", extra2, 1);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err.p ? r.err.p : "");
  HAS(r.out.p, "still billing"); /* billing_desk's second turn: the driver was kept */
  result_free(&r);
}
END_TEST

/* Runs the coordinator prompt of prompts/ over HTTP on the model server serving srv/ (run
 * --model-url http://127.0.0.1:PORT + url_path --model big-model --provider PROVIDER), as
 * thread `thread`, and stops the server. */
static result run_coordinator_http(const char *provider, const char *url_path, const char *thread) {
  ts_test_server srv;
  ts_test_server_start(&srv, ts_test_at(base, "srv"), NULL, NULL);
  char url[256], ws[128], data[128], prompts[128];
  snprintf(url, sizeof url, "http://127.0.0.1:%d%s", srv.port, url_path);
  snprintf(ws, sizeof ws, "%s/ws", base);
  snprintf(data, sizeof data, "%s/data", base);
  snprintf(prompts, sizeof prompts, "%s/prompts", base);
  mkdir(ws, 0755);
  const char *argv[] = {"toolstream", "run", "--prompts", prompts, "--prompt-name",
                        "coordinator", "--model-url", url, "--model", "big-model",
                        "--provider", provider, "--workspace", ws, "--data-dir", data,
                        "--thread", thread, "--json", "go", NULL};
  result r = run_bin(BINARY, argv, NULL, 0);
  ts_test_server_stop(&srv);
  return r;
}

/* Over HTTP: one endpoint for the whole tree, each prompt's request with its own model,
 * system text and tools. The server plays its files in arrival order: the coordinator's
 * turn, the researcher's, the coordinator's again. */
/* A sub-prompt's call waits for a required variable: the child's variable_required event
 * names it and its parent, `threads` shows the child waiting, Ctrl-C leaves the caller's
 * call without a result (not "cancelled"), and `env set` on the child + --resume run it
 * once and give the caller the child's outcome once. */
static int count_in(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p++) n++;
  return n;
}

START_TEST(test_sub_prompt_waits_for_a_variable_across_ctrl_c) {
  put_in("prompts/main.json", "{\"name\":\"main\",\"prompt\":\"You are main.\",\"tools\":[\"helper\"]}");
  put_in("prompts/helper.json",
         "{\"name\":\"helper\",\"toolDescription\":\"helps\",\"prompt\":\"You help.\","
         "\"tools\":[\"greet\"]}");
  put_in("greet.js",
         "defineTool({ name: 'greet', description: 'greets', args: z.object({}),\n"
         "  variables: [{ name: 'WHO', type: 'text', required: true, description: 'who' }],\n"
         "  execute: function (state, args) { return { status: 'success', result: { hello: "
         "state.env('WHO') } }; } });\n");
  call_turn("rec/main/turn-1.sse", "m1", "helper", "{}");
  text_turn("rec/main/turn-2.sse", "main done");
  call_turn("rec/helper/turn-1.sse", "h1", "greet", "{}");
  text_turn("rec/helper/turn-2.sse", "greeted");
  unsetenv("WHO");
  char rec[128], ws[128], data[128], prompts[128], tools[128];
  snprintf(rec, sizeof rec, "%s/rec", base);
  snprintf(ws, sizeof ws, "%s/ws", base);
  snprintf(data, sizeof data, "%s/data", base);
  snprintf(prompts, sizeof prompts, "%s/prompts", base);
  snprintf(tools, sizeof tools, "%s/greet.js", base);
  mkdir(ws, 0755);
  const char *argv[] = {"toolstream", "run", "--prompts", prompts, "--prompt-name", "main",
                        "--tools", tools, "--model-replay", rec, "--workspace", ws,
                        "--data-dir", data, "--rate", "10000", "--thread", "v1", "--json",
                        "go", NULL};
  child c = spawn_bin(BINARY, argv, 0);
  result r;
  memset(&r, 0, sizeof r);
  double end = now_ms() + 300000; /* a backstop only: it waits for the event */
  while (!strstr(sb_str(&r.out), "\"type\":\"variable_required\"") && now_ms() < end)
    if (pump(&c, &r, 50) == 0) break;
  HAS(sb_str(&r.out), "\"type\":\"variable_required\",\"thread\":\"v1/t1c0\",\"parent\":\"v1\"");
  const char *ls[] = {"toolstream", "threads", "--data-dir", data, NULL};
  result l = run_bin(BINARY, ls, NULL, 0);
  ck_assert_int_eq(l.status, 0);
  HAS(sb_str(&l.out), "waiting_for_variable");
  result_free(&l);
  kill(c.pid, SIGINT);
  finish_child(&c, &r);
  ck_assert_int_eq(r.status, 1);
  ck_assert_msg(!strstr(sb_str(&r.out), "\"tool\":\"helper\",\"index\":0,\"turn\":1,\"is_error\""),
                "the caller's call got a result: %s", sb_str(&r.out));
  result_free(&r);
  const char *set[] = {"toolstream", "env", "set", "v1/t1c0", "WHO", "--text", "--data-dir",
                       data, NULL};
  result e = run_bin(BINARY, set, "bob\n", 4);
  ck_assert_msg(e.status == 0, "%s", sb_str(&e.err));
  result_free(&e);
  result rr = run_with("v1", (const char *const[]){"--prompt-name", "main", "--tools", tools,
                                                    NULL}, 1);
  ck_assert_msg(rr.status == 0, "exit %d: %s", rr.status, sb_str(&rr.err));
  HAS(sb_str(&rr.out), "\"result\":{\"hello\":\"bob\"}");
  ck_assert_int_eq(count_in(sb_str(&rr.out), "\"type\":\"tool_execution_started\",\"thread\":"
                                               "\"v1/t1c0\""), 1);
  ck_assert_int_eq(count_in(sb_str(&rr.out), "\"result\":{\"thread\":\"v1/t1c0\",\"status\":"
                                               "\"done\",\"text\":\"greeted\""), 1);
  result_free(&rr);
  result t = run_bin(BINARY, ls, NULL, 0);
  ck_assert_msg(!strstr(sb_str(&t.out), "waiting_for_variable"), "%s", sb_str(&t.out));
  result_free(&t);
}
END_TEST

START_TEST(test_http_each_prompt_its_model_and_system_text) {
  put_in("prompts/defs.json",
         "[{\"name\":\"coordinator\",\"prompt\":\"You coordinate.\",\"tools\":["
         "{\"name\":\"researcher\",\"initUserMessageProperty\":\"question\"}]},"
         " {\"name\":\"researcher\",\"toolDescription\":\"Answers one question\","
         "\"prompt\":\"You research.\",\"model\":\"small-model\",\"toolChoice\":\"none\","
         "\"requiredSchema\":{\"type\":\"object\",\"properties\":{\"question\":"
         "{\"type\":\"string\"}},\"required\":[\"question\"]}}]");
  call_turn("srv/1.sse", "r1", "researcher", "{\\\"question\\\":\\\"Why?\\\"}");
  text_turn("srv/2.sse", "because");
  text_turn("srv/3.sse", "all done");
  result r = run_coordinator_http("openai", "/v1", "x1");
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err.p ? r.err.p : "");
  size_t len;
  char *q1 = ts_test_read_file(ts_test_at(base, "srv/requests/1.json"), &len);
  char *q2 = ts_test_read_file(ts_test_at(base, "srv/requests/2.json"), &len);
  ck_assert_ptr_nonnull(q1);
  ck_assert_ptr_nonnull(q2);
  HAS(q1, "{\"model\":\"big-model\",");
  HAS(q1, "{\"role\":\"system\",\"content\":\"You coordinate.\"}");
  HAS(q1, "\"name\":\"researcher\",\"description\":\"Answers one question\"");
  HAS(q2, "{\"model\":\"small-model\",");
  HAS(q2, "{\"role\":\"system\",\"content\":\"You research.\"},{\"role\":\"user\","
          "\"content\":\"Why?\"}");
  ck_assert_ptr_null(strstr(q2, "You coordinate."));
  HAS(r.out.p, "\"text\":\"because\"");
  free(q1);
  free(q2);
  result_free(&r);
}
END_TEST


/* The providers whose URL names the model: a sub-prompt's request goes to its own model's
 * URL on the same endpoint (and, for Bedrock, is signed for that path), whether
 * --model-url is the base or the whole URL of the run's own model. The coordinator
 * (big-model, from --model) calls the researcher (its own model, with a ':' that the
 * path carries as %3A), which answers; the coordinator ends. */
typedef struct {
  int line;
  const char *provider, *url_path; /* --model-url: http://127.0.0.1:PORT + url_path */
  const char *big, *small;         /* the request lines of each model's requests */
} url_row;

static const url_row url_rows[] = {
    {__LINE__, "gemini", "/v1beta", "POST /v1beta/models/big-model:streamGenerateContent?alt=sse\n",
     "POST /v1beta/models/anthropic.small-v1%3A0:streamGenerateContent?alt=sse\n"},
    {__LINE__, "gemini", "/v1beta/models/big-model:streamGenerateContent?alt=sse",
     "POST /v1beta/models/big-model:streamGenerateContent?alt=sse\n",
     "POST /v1beta/models/anthropic.small-v1%3A0:streamGenerateContent?alt=sse\n"},
    {__LINE__, "bedrock", "", "POST /model/big-model/converse-stream\n",
     "POST /model/anthropic.small-v1%3A0/converse-stream\n"},
    {__LINE__, "bedrock", "/model/big-model/converse-stream?x=1",
     "POST /model/big-model/converse-stream?x=1\n",
     "POST /model/anthropic.small-v1%3A0/converse-stream?x=1\n"},
};

static void gemini_turns(void) {
  put_in("srv/1.sse", "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":["
                      "{\"functionCall\":{\"name\":\"researcher\",\"args\":{\"question\":"
                      "\"Why?\"}}}]},\"finishReason\":\"STOP\"}]}\r\n\r\n");
  put_in("srv/2.sse", "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":["
                      "{\"text\":\"because\"}]},\"finishReason\":\"STOP\"}]}\r\n\r\n");
  put_in("srv/3.sse", "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":["
                      "{\"text\":\"all done\"}]},\"finishReason\":\"STOP\"}]}\r\n\r\n");
}

static void bedrock_text(const char *rel, const char *text) {
  sb t = {0}, d = {0};
  sb_printf(&d, "{\"contentBlockIndex\":0,\"delta\":{\"text\":\"%s\"}}", text);
  ts_test_evs_frame(&t, "event", "messageStart", "{\"role\":\"assistant\"}");
  ts_test_evs_frame(&t, "event", "contentBlockDelta", sb_str(&d));
  ts_test_evs_frame(&t, "event", "contentBlockStop", "{\"contentBlockIndex\":0}");
  ts_test_evs_frame(&t, "event", "messageStop", "{\"stopReason\":\"end_turn\"}");
  ts_test_write_file(ts_test_at(base, rel), t.p, t.len);
  sb_free(&t);
  sb_free(&d);
}

static void bedrock_turns(void) {
  mkdir(ts_test_at(base, "srv"), 0755);
  sb t = {0};
  ts_test_evs_frame(&t, "event", "messageStart", "{\"role\":\"assistant\"}");
  ts_test_evs_frame(&t, "event", "contentBlockStart",
                    "{\"contentBlockIndex\":0,\"start\":{\"toolUse\":{\"toolUseId\":\"tu_1\","
                    "\"name\":\"researcher\"}}}");
  ts_test_evs_frame(&t, "event", "contentBlockDelta",
                    "{\"contentBlockIndex\":0,\"delta\":{\"toolUse\":{\"input\":"
                    "\"{\\\"question\\\":\\\"Why?\\\"}\"}}}");
  ts_test_evs_frame(&t, "event", "contentBlockStop", "{\"contentBlockIndex\":0}");
  ts_test_evs_frame(&t, "event", "messageStop", "{\"stopReason\":\"tool_use\"}");
  ts_test_write_file(ts_test_at(base, "srv/1.bin"), t.p, t.len);
  sb_free(&t);
  bedrock_text("srv/2.bin", "because");
  bedrock_text("srv/3.bin", "all done");
}

static char *request_file(int n, const char *ext, size_t *len) {
  char rel[64];
  snprintf(rel, sizeof rel, "srv/requests/%d.%s", n, ext);
  char *p = ts_test_read_file(ts_test_at(base, rel), len);
  ck_assert_msg(p != NULL, "no %s", rel);
  return p;
}

START_TEST(test_http_sub_prompt_url_names_its_model) {
  const url_row *u = &url_rows[_i];
  put_in("prompts/defs.json",
         "[{\"name\":\"coordinator\",\"prompt\":\"You coordinate.\",\"tools\":["
         "{\"name\":\"researcher\",\"initUserMessageProperty\":\"question\"}]},"
         " {\"name\":\"researcher\",\"toolDescription\":\"Answers one question\","
         "\"prompt\":\"You research.\",\"model\":\"anthropic.small-v1:0\","
         "\"requiredSchema\":{\"type\":\"object\",\"properties\":{\"question\":"
         "{\"type\":\"string\"}},\"required\":[\"question\"]}}]");
  int bedrock = !strcmp(u->provider, "bedrock");
  if (bedrock) {
    bedrock_turns();
    setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "compose-secret", 1);
    setenv("AWS_REGION", "eu-west-1", 1);
    unsetenv("AWS_SESSION_TOKEN");
    unsetenv("AWS_BEARER_TOKEN_BEDROCK");
  } else {
    gemini_turns();
  }
  result r = run_coordinator_http(u->provider, u->url_path, "u1");
  ck_assert_msg(r.status == 0, "row %d: exit %d: %s", u->line, r.status,
                r.err.p ? r.err.p : "");
  HAS(r.out.p, "\"text\":\"because\"");
  HAS(r.out.p, "\"text\":\"all done\"");
  const char *want[] = {u->big, u->small, u->big};
  for (int n = 1; n <= 3; n++) {
    size_t hl, bl;
    char *head = request_file(n, "txt", &hl), *body = request_file(n, "json", &bl);
    ck_assert_msg(!strncmp(head, want[n - 1], strlen(want[n - 1])), "row %d, request %d: %s",
                  u->line, n, head);
    if (bedrock) {
      const ts_sigv4_key k = {"AKIDEXAMPLE", "compose-secret", NULL, "eu-west-1", "bedrock"};
      ts_test_assert_signed_as_sent(head, body, bl, &k);
    }
    free(head);
    free(body);
  }
  result_free(&r);
}
END_TEST

int main(void) {
  Suite *s = suite_create("compose_cli");
  TCase *tc = ts_test_tcase(s, "core", 120);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_coordinator_calls_a_sub_prompt_with_an_attachment);
  tcase_add_test(tc, test_handoff_survives_resume);
  tcase_add_test(tc, test_sub_prompt_waits_for_a_variable_across_ctrl_c);
  tcase_add_test(tc, test_http_each_prompt_its_model_and_system_text);
  tcase_add_loop_test(tc, test_http_sub_prompt_url_names_its_model, 0,
                      (int)(sizeof url_rows / sizeof url_rows[0]));
  return ts_test_run(s, 0);
}
