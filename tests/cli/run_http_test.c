/*
 * run_http_test.c: `toolstream run` against a real HTTP server (tests/model_server.c),
 * with both backends: multi-turn sessions, the conversation sent back in each provider's
 * shape (tool results paired with their calls), files written, messages stored, the API
 * key never printed, stored or sent anywhere but its header; 429 then success; a dropped
 * connection and a malformed stream end the run with a clear error.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "support/model_server.h"
#include "support/proc.h"
#include "support/tempdir.h"
#include "store/store.h"
#include "support/test_support.h"

#define BINARY TS_BINARY_DIR "/toolstream"
#define KEY "sk-test-DO-NOT-LEAK-42"

static char base[64];
static ts_test_server server;
static int port;

#define put(name, text) ts_test_put(ts_test_at(base, (name)), (text))

static char *slurp(const char *name) {
  char p[256];
  snprintf(p, sizeof p, "%s/%s", base, name);
  size_t n;
  return access(p, F_OK) == 0 ? ts_test_read_file(p, &n) : strdup("");
}

/* A fresh directory: session/ (the turns the server serves, written before it starts,
 * since it lists them at start) and ws/ (the workspace). */
static void make_base(void) {
  if (base[0]) ts_test_rm_rf(base); /* a test that starts over */
  ts_test_tempdir(base, sizeof base, "run-http");
  char p[256];
  snprintf(p, sizeof p, "%s/session", base);
  mkdir(p, 0755);
  snprintf(p, sizeof p, "%s/ws", base);
  mkdir(p, 0755);
}

static void start_server(void) {
  char p[300];
  snprintf(p, sizeof p, "%s/session", base);
  ts_test_server_start(&server, p, NULL, NULL);
  port = server.port;
}

static void stop_server(void) { ts_test_server_stop(&server); }

/* After each test (in its own process): the directory goes. */
static void remove_base(void) {
  if (base[0]) ts_test_rm_rf(base);
}

/* OpenAI Chat: one turn with whole-in-a-few-chunks calls (args escaped for the string). */
static void chat_turn(const char *name, const char *text, const char *calls) {
  char buf[8192];
  snprintf(buf, sizeof buf,
           "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"%s\"}}]}\n\n%s"
           "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"%s\"}]}\n\n"
           "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":7}}\n\n"
           "data: [DONE]\n\n",
           text, calls, calls[0] ? "tool_calls" : "stop");
  put(name, buf);
}

static const char *chat_call(int index, const char *id, const char *tool, const char *args) {
  static char buf[4][2048];
  snprintf(buf[index], sizeof buf[index],
           "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":%d,\"id\":\"%s\","
           "\"type\":\"function\",\"function\":{\"name\":\"%s\",\"arguments\":\"%s\"}}]}}]}\n\n",
           index, id, tool, args);
  return buf[index];
}

/* Anthropic Messages: one turn with one tool_use block (input JSON escaped). */
static void anthropic_turn(const char *name, const char *text, const char *id, const char *tool,
                           const char *input) {
  char buf[8192];
  int n = snprintf(buf, sizeof buf,
                   "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\","
                   "\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":3}}}\n\n"
                   "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
                   "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
                   "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
                   "\"delta\":{\"type\":\"text_delta\",\"text\":\"%s\"}}\n\n"
                   "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
                   text);
  if (id)
    n += snprintf(buf + n, sizeof buf - (size_t)n,
                  "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,"
                  "\"content_block\":{\"type\":\"tool_use\",\"id\":\"%s\",\"name\":\"%s\",\"input\":{}}}\n\n"
                  "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,"
                  "\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"%s\"}}\n\n"
                  "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
                  id, tool, input);
  snprintf(buf + n, sizeof buf - (size_t)n,
           "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
           "\"%s\"},\"usage\":{\"output_tokens\":9}}\n\n"
           "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
           id ? "tool_use" : "end_turn");
  put(name, buf);
}

static result run_model(const char *thread, const char *provider, const char *query) {
  char url[256], ws[128], data[128];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/v1%s", port, query ? query : "");
  snprintf(ws, sizeof ws, "%s/ws", base);
  snprintf(data, sizeof data, "%s/data", base);
  setenv("TS_TEST_KEY", KEY, 1);
  const char *argv[] = {"toolstream", "run", "--model-url", url, "--model", "m-1", "--provider",
                        provider, "--api-key-env", "TS_TEST_KEY", "--workspace", ws,
                        "--data-dir", data, "--thread", thread, "--json", "make files", NULL};
  return run_bin(BINARY, argv, NULL, 0);
}

typedef struct {
  char roles[32];
  char all[8192];
} convo;

static int grab(void *user, const ts_store_message *m) {
  convo *c = user;
  size_t n = strlen(c->roles);
  if (n + 1 < sizeof c->roles) c->roles[n] = "suat"[m->role], c->roles[n + 1] = '\0';
  strncat(c->all, m->content, sizeof c->all - strlen(c->all) - 2);
  strcat(c->all, "\n");
  return 0;
}

static convo conversation(const char *thread) {
  char data[128];
  snprintf(data, sizeof data, "%s/data", base);
  ts_store *s;
  char why[256];
  ck_assert_msg(ts_store_open(data, &s, why, sizeof why) == TS_E_OK, "%s", why);
  convo c;
  memset(&c, 0, sizeof c);
  ts_store_messages(s, thread, 0, grab, &c);
  ts_store_close(s);
  return c;
}

/* The key must appear nowhere but in the request headers the server recorded (which it
 * redacts): not in our output, not in the store file, not in any request body. */
static void assert_key_not_leaked(const result *r) {
  ck_assert_ptr_null(strstr(sb_str(&r->out), KEY));
  ck_assert_ptr_null(strstr(sb_str(&r->err), KEY));
  char p[256];
  snprintf(p, sizeof p, "%s/data/toolstream.db", base);
  size_t n;
  char *db = ts_test_read_file(p, &n);
  size_t kl = strlen(KEY);
  for (size_t i = 0; i + kl <= n; i++) ck_assert_msg(memcmp(db + i, KEY, kl) != 0, "key in the store");
  free(db);
  for (int i = 1; i <= 8; i++) {
    char name[64];
    snprintf(name, sizeof name, "session/requests/%d.json", i);
    char *body = slurp(name);
    ck_assert_ptr_null(strstr(body, KEY));
    free(body);
    snprintf(name, sizeof name, "session/requests/%d.txt", i);
    char *head = slurp(name);
    ck_assert_ptr_null(strstr(head, KEY));
    free(head);
  }
}

START_TEST(test_openai_multi_turn) {
  make_base();
  char calls[4096];
  snprintf(calls, sizeof calls, "%s%s",
           chat_call(0, "call_a", "write_file",
                     "{\\\"description\\\":\\\"writing a\\\",\\\"path\\\":\\\"a.txt\\\",\\\"content\\\":\\\"A\\\"}"),
           chat_call(1, "call_b", "list_dir", "{}"));
  chat_turn("session/turn-1.sse", "two calls", calls);
  chat_turn("session/turn-2.sse", "one more",
            chat_call(0, "call_c", "read_file", "{\\\"path\\\":\\\"a.txt\\\"}"));
  chat_turn("session/turn-3.sse", "done", "");
  start_server();
  result r = run_model("o1", "openai", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, sb_str(&r.err));
  char *a = slurp("ws/a.txt");
  ck_assert_str_eq(a, "A");
  free(a);
  convo c = conversation("o1");
  ck_assert_str_eq(c.roles, "uttataa"); /* per turn: its results, then its assistant message */
  /* the second request carries the first turn in OpenAI's shape */
  char *req2 = slurp("session/requests/2.json");
  ck_assert_ptr_nonnull(strstr(req2, "\"model\":\"m-1\""));
  ck_assert_ptr_nonnull(strstr(req2, "\"role\":\"tool\",\"tool_call_id\":\"call_a\""));
  ck_assert_ptr_nonnull(strstr(req2, "\"role\":\"tool\",\"tool_call_id\":\"call_b\""));
  const char *asst = strstr(req2, "\"role\":\"assistant\"");
  const char *tool = strstr(req2, "\"role\":\"tool\"");
  ck_assert(asst && tool && asst < tool); /* the assistant message before its results */
  ck_assert_ptr_nonnull(strstr(req2, "\"arguments\":\"{\\\"description\\\":\\\"writing a\\\""));
  ck_assert_ptr_nonnull(strstr(req2, "\"parameters\":{\"type\":\"object\""));
  free(req2);
  char *head = slurp("session/requests/1.txt");
  ck_assert_msg(strstr(head, "Authorization: <present>") != NULL, "%s", head);
  free(head);
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "\"progress\":\"writing a\""));
  assert_key_not_leaked(&r);
  result_free(&r);
  stop_server();
}
END_TEST

START_TEST(test_anthropic_multi_turn) {
  make_base();
  anthropic_turn("session/turn-1.sse", "writing", "toolu_1", "write_file",
                 "{\\\"description\\\":\\\"writing b\\\",\\\"path\\\":\\\"b.txt\\\",\\\"content\\\":\\\"B\\\"}");
  anthropic_turn("session/turn-2.sse", "reading", "toolu_2", "read_file",
                 "{\\\"path\\\":\\\"missing.txt\\\"}");
  anthropic_turn("session/turn-3.sse", "done", NULL, NULL, NULL);
  start_server();
  result r = run_model("a1", "anthropic", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, sb_str(&r.err));
  char *b = slurp("ws/b.txt");
  ck_assert_str_eq(b, "B");
  free(b);
  char *req3 = slurp("session/requests/3.json");
  ck_assert_ptr_nonnull(strstr(req3, "\"max_tokens\":4096"));
  ck_assert_ptr_nonnull(strstr(req3, "{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"write_file\","
                                     "\"input\":{\"description\":\"writing b\""));
  ck_assert_ptr_nonnull(strstr(req3, "{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_1\""));
  /* read_file of a missing file: an error result, sent back as such */
  ck_assert_msg(strstr(req3, "\"tool_use_id\":\"toolu_2\"") && strstr(req3, "\"is_error\":true"),
                "%s", req3);
  ck_assert_ptr_nonnull(strstr(req3, "\"input_schema\":"));
  free(req3);
  char *head = slurp("session/requests/1.txt");
  ck_assert_ptr_nonnull(strstr(head, "x-api-key: <present>"));
  ck_assert_ptr_nonnull(strstr(head, "anthropic-version: 2023-06-01"));
  free(head);
  assert_key_not_leaked(&r);
  result_free(&r);
  stop_server();
}
END_TEST

START_TEST(test_retry_then_success_and_failures) {
  make_base();
  chat_turn("session/turn-1.sse", "only text", "");
  start_server();
  result r = run_model("r1", "openai", "?status=429&times=2&retry-after=0");
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, sb_str(&r.err));
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "\"type\":\"turn_finished\""));
  result_free(&r);
  stop_server();

  make_base();
  char calls[4096];
  snprintf(calls, sizeof calls, "%s",
           chat_call(0, "call_x", "write_file",
                     "{\\\"description\\\":\\\"never finished\\\",\\\"path\\\":\\\"x.txt\\\",\\\"content\\\":\\\"0123456789\\\"}"));
  chat_turn("session/turn-1.sse", "dropping", calls);
  start_server();
  r = run_model("d1", "openai", "?drop-after=150");
  ck_assert_int_eq(r.status, 1);
  ck_assert_ptr_nonnull(strstr(sb_str(&r.err), "model request failed"));
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "\"type\":\"stream_error\""));
  result_free(&r);
  r = run_model("m1", "openai", "?malformed=1");
  ck_assert_int_eq(r.status, 1);
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "\"type\":\"stream_error\""));
  result_free(&r);
  r = run_model("s1", "openai", "?status=401");
  ck_assert_int_eq(r.status, 1);
  ck_assert_ptr_nonnull(strstr(sb_str(&r.err), "401"));
  result_free(&r);
  stop_server();

  /* no key for a remote host: refused before any request */
  unsetenv("OPENAI_API_KEY");
  const char *argv[] = {"toolstream", "run", "--model-url", "https://api.example.com/v1",
                        "--model", "x", "hi", NULL};
  r = run_bin(BINARY, argv, NULL, 0);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(sb_str(&r.err), "OPENAI_API_KEY"));
  result_free(&r);
}
END_TEST

/* A provider error that echoes the API key (issue 18 item 9): the run fails with the
 * provider's message, but the key is redacted from the stream_error event printed and
 * stored, and from the error line. */
START_TEST(test_provider_error_echoing_key) {
  make_base();
  put("session/turn-1.sse",
      "data: {\"error\":{\"message\":\"Incorrect API key provided: Bearer " KEY
      ". You can find your API key at https://example.com\",\"type\":\"invalid_request_error\"}}\n\n");
  start_server();
  result r = run_model("k1", "openai", NULL);
  ck_assert_int_eq(r.status, 1);
  ck_assert_msg(strstr(sb_str(&r.out), "\"type\":\"stream_error\"") &&
                    strstr(sb_str(&r.out), "Incorrect API key provided: Bearer [redacted]."),
                "%s", sb_str(&r.out));
  assert_key_not_leaked(&r);
  result_free(&r);
  stop_server();
}
END_TEST

int main(void) {
  Suite *s = suite_create("run_http");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_checked_fixture(tc, NULL, remove_base);
  tcase_add_test(tc, test_openai_multi_turn);
  tcase_add_test(tc, test_anthropic_multi_turn);
  tcase_add_test(tc, test_retry_then_success_and_failures);
  tcase_add_test(tc, test_provider_error_echoing_key);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
