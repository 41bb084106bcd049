/*
 * run_http_test.c: `toolstream run` against a real HTTP server (tests/model_server.c),
 * with both backends: multi-turn sessions, the conversation sent back in each provider's
 * shape (tool results paired with their calls), files written, messages stored, the API
 * key never printed, stored or sent anywhere but its header; 429 then success; a dropped
 * connection and a malformed stream end the run with a clear error.
 */
#define _GNU_SOURCE /* strptime, timegm */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "net/sigv4.h"
#include "support/evs_frame.h"
#include "support/model_server.h"
#include "support/proc.h"
#include "support/raw_server.h"
#include "support/runner.h"
#include "support/sigv4_check.h"
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

/* `run` on the server with the key in `key_env` (TS_TEST_KEY holds KEY). */
static result run_model_as(const char *thread, const char *provider, const char *query,
                           const char *model, const char *key_env) {
  char url[256], ws[128], data[128];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/v1%s", port, query ? query : "");
  snprintf(ws, sizeof ws, "%s/ws", base);
  snprintf(data, sizeof data, "%s/data", base);
  setenv("TS_TEST_KEY", KEY, 1);
  const char *argv[] = {"toolstream", "run", "--model-url", url, "--model", model, "--provider",
                        provider, "--api-key-env", key_env, "--workspace", ws,
                        "--data-dir", data, "--thread", thread, "--json", "make files", NULL};
  return run_bin(BINARY, argv, NULL, 0);
}

static result run_model(const char *thread, const char *provider, const char *query) {
  return run_model_as(thread, provider, query, "m-1", "TS_TEST_KEY");
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

/* A secret must appear nowhere but in the request headers the server recorded (which it
 * redacts): not in our output, not in the store file, not in any request URL or body. */
static void assert_not_leaked(const result *r, const char *secret) {
  ck_assert_ptr_null(strstr(sb_str(&r->out), secret));
  ck_assert_ptr_null(strstr(sb_str(&r->err), secret));
  char p[256];
  snprintf(p, sizeof p, "%s/data/toolstream.db", base);
  size_t n;
  char *db = ts_test_read_file(p, &n);
  size_t kl = strlen(secret);
  for (size_t i = 0; i + kl <= n; i++) ck_assert_msg(memcmp(db + i, secret, kl) != 0, "key in the store");
  free(db);
  for (int i = 1; i <= 8; i++) {
    char name[64];
    snprintf(name, sizeof name, "session/requests/%d.json", i);
    char *body = slurp(name);
    ck_assert_ptr_null(strstr(body, secret));
    free(body);
    snprintf(name, sizeof name, "session/requests/%d.txt", i);
    char *head = slurp(name);
    ck_assert_ptr_null(strstr(head, secret));
    free(head);
  }
}

static void assert_key_not_leaked(const result *r) { assert_not_leaked(r, KEY); }

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

/* ---- OpenAI Responses, Gemini, Bedrock: two turns, one call, the result sent back ----- */

/* The write_file arguments of the one call these tests make (`who` names the file). */
static void write_args(char *out, size_t cap, const char *who, int escaped) {
  if (escaped)
    snprintf(out, cap, "{\\\"description\\\":\\\"writing %s\\\",\\\"path\\\":\\\"%s.txt\\\","
                       "\\\"content\\\":\\\"%s\\\"}", who, who, who);
  else
    snprintf(out, cap, "{\"description\":\"writing %s\",\"path\":\"%s.txt\",\"content\":\"%s\"}",
             who, who, who);
}

/* The body of request n as the server recorded it contains `want`. */
static void assert_request_has(int n, const char *want) {
  char name[64];
  snprintf(name, sizeof name, "session/requests/%d.json", n);
  char *body = slurp(name);
  ck_assert_msg(strstr(body, want) != NULL, "request %d lacks %s:\n%s", n, want, sb_clip(body));
  free(body);
}

START_TEST(test_responses_two_turns) {
  make_base();
  char args[256], esc[256];
  write_args(args, sizeof args, "resp", 0);
  write_args(esc, sizeof esc, "resp", 1);
  sb t1 = {0};
  sb_printf(&t1,
            "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\","
            "\"output_index\":0,\"item\":{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":"
            "\"call_r1\",\"name\":\"write_file\",\"arguments\":\"\",\"status\":\"in_progress\"}}\n\n"
            "event: response.function_call_arguments.delta\ndata: {\"type\":"
            "\"response.function_call_arguments.delta\",\"item_id\":\"fc_1\",\"output_index\":0,"
            "\"delta\":\"%s\"}\n\n"
            "event: response.function_call_arguments.done\ndata: {\"type\":"
            "\"response.function_call_arguments.done\",\"item_id\":\"fc_1\",\"output_index\":0,"
            "\"arguments\":\"%s\"}\n\n"
            "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{"
            "\"id\":\"resp_1\",\"status\":\"completed\",\"usage\":{\"input_tokens\":5}}}\n\n",
            esc, esc);
  put("session/turn-1.sse", sb_str(&t1));
  sb_free(&t1);
  put("session/turn-2.sse",
      "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\","
      "\"item_id\":\"msg_2\",\"output_index\":0,\"delta\":\"done\"}\n\n"
      "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{"
      "\"id\":\"resp_2\",\"status\":\"completed\"}}\n\n");
  start_server();
  result r = run_model("or1", "openai-responses", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, sb_str(&r.err));
  char *f = slurp("ws/resp.txt");
  ck_assert_str_eq(f, "resp");
  free(f);
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "\"progress\":\"writing resp\""));
  char *head = slurp("session/requests/1.txt");
  ck_assert_msg(strstr(head, "POST /v1/responses\n") && strstr(head, "Authorization: <present>"),
                "%s", head);
  free(head);
  assert_request_has(1, "\"input\":[{\"type\":\"message\",\"role\":\"user\","
                        "\"content\":\"make files\"}]");
  assert_request_has(1, "{\"type\":\"function\",\"name\":\"write_file\"");
  /* the second request: the call as a function_call item, its result as its output */
  sb want = {0};
  sb_printf(&want, "{\"type\":\"function_call\",\"call_id\":\"call_r1\",\"name\":\"write_file\","
                   "\"arguments\":\"%s\"},{\"type\":\"function_call_output\",\"call_id\":\"call_r1\","
                   "\"output\":\"",
            esc);
  assert_request_has(2, sb_str(&want));
  char *req2 = slurp("session/requests/2.json");
  ck_assert_ptr_null(strstr(req2, "Error: "));
  sb_free(&want);
  free(req2);
  ck_assert_str_eq(conversation("or1").roles, "utaa");
  assert_key_not_leaked(&r);
  result_free(&r);
  stop_server();
}
END_TEST

START_TEST(test_gemini_two_turns) {
  make_base();
  char args[256];
  write_args(args, sizeof args, "gem", 0);
  sb t1 = {0};
  sb_printf(&t1,
            "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"functionCall\":"
            "{\"name\":\"write_file\",\"args\":%s}}]},\"finishReason\":\"STOP\"}],"
            "\"usageMetadata\":{\"promptTokenCount\":5}}\r\n\r\n",
            args);
  put("session/turn-1.sse", sb_str(&t1));
  sb_free(&t1);
  put("session/turn-2.sse",
      "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"done\"}]},"
      "\"finishReason\":\"STOP\"}]}\r\n\r\n");
  start_server();
  result r = run_model("g1", "gemini", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, sb_str(&r.err));
  char *f = slurp("ws/gem.txt");
  ck_assert_str_eq(f, "gem");
  free(f);
  /* Gemini sent no id: the call's is ts_<turn>_<index> */
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "\"call_id\":\"ts_1_0\""));
  char *head = slurp("session/requests/1.txt");
  /* the key in its header, never in the URL */
  ck_assert_msg(strstr(head, "POST /v1/models/m-1:streamGenerateContent?alt=sse\n") &&
                    strstr(head, "x-goog-api-key: <present>"),
                "%s", head);
  free(head);
  sb want = {0};
  sb_printf(&want, "{\"role\":\"user\",\"parts\":[{\"text\":\"make files\"}]},"
                   "{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"write_file\","
                   "\"args\":%s},\"thoughtSignature\":\"skip_thought_signature_validator\"}]},"
                   "{\"role\":\"user\",\"parts\":[{\"functionResponse\":{\"name\":\"write_file\","
                   "\"response\":{\"output\":{",
            args);
  assert_request_has(2, sb_str(&want));
  assert_request_has(2, "\"functionDeclarations\":[{\"name\":\"write_file\"");
  char *req2 = slurp("session/requests/2.json");
  ck_assert_ptr_null(strstr(req2, "ts_1_0")); /* our id is not Gemini's */
  sb_free(&want);
  free(req2);
  assert_key_not_leaked(&r);
  result_free(&r);
  stop_server();
}
END_TEST

#define AWS_SECRET "aws-secret-DO-NOT-LEAK-77"
#define AWS_TOKEN "aws-session-token-DO-NOT-LEAK-88"

START_TEST(test_bedrock_two_turns) {
  make_base();
  char esc[256], frame_json[512];
  write_args(esc, sizeof esc, "bed", 1);
  sb t1 = {0};
  ts_test_evs_frame(&t1, "event", "messageStart", "{\"role\":\"assistant\"}");
  ts_test_evs_frame(&t1, "event", "contentBlockStart",
                    "{\"contentBlockIndex\":0,\"start\":{\"toolUse\":{\"toolUseId\":\"tooluse_b1\","
                    "\"name\":\"write_file\"}}}");
  snprintf(frame_json, sizeof frame_json,
           "{\"contentBlockIndex\":0,\"delta\":{\"toolUse\":{\"input\":\"%s\"}}}", esc);
  ts_test_evs_frame(&t1, "event", "contentBlockDelta", frame_json);
  ts_test_evs_frame(&t1, "event", "contentBlockStop", "{\"contentBlockIndex\":0}");
  ts_test_evs_frame(&t1, "event", "messageStop", "{\"stopReason\":\"tool_use\"}");
  ts_test_evs_frame(&t1, "event", "metadata",
                    "{\"usage\":{\"inputTokens\":5,\"outputTokens\":7,\"totalTokens\":12}}");
  ts_test_write_file(ts_test_at(base, "session/turn-1.bin"), t1.p, t1.len);
  sb_free(&t1);
  sb t2 = {0};
  ts_test_evs_frame(&t2, "event", "messageStart", "{\"role\":\"assistant\"}");
  ts_test_evs_frame(&t2, "event", "contentBlockDelta",
                    "{\"contentBlockIndex\":0,\"delta\":{\"text\":\"done\"}}");
  ts_test_evs_frame(&t2, "event", "contentBlockStop", "{\"contentBlockIndex\":0}");
  ts_test_evs_frame(&t2, "event", "messageStop", "{\"stopReason\":\"end_turn\"}");
  ts_test_evs_frame(&t2, "event", "metadata", "{\"usage\":{\"inputTokens\":9,\"outputTokens\":1}}");
  ts_test_write_file(ts_test_at(base, "session/turn-2.bin"), t2.p, t2.len);
  sb_free(&t2);
  start_server();
  setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", 1);
  setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET, 1);
  setenv("AWS_SESSION_TOKEN", AWS_TOKEN, 1);
  setenv("AWS_REGION", "us-west-2", 1);
  unsetenv("TS_TEST_NO_KEY");
  result r = run_model_as("b1", "bedrock", NULL, "anthropic.claude-v2:1", "TS_TEST_NO_KEY");
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, sb_str(&r.err));
  char *f = slurp("ws/bed.txt");
  ck_assert_str_eq(f, "bed");
  free(f);

  /* the model id is a path segment (':' encoded); the request is signed (SigV4) and the
   * signature is over exactly what arrived: recomputed here from the recorded request */
  char *head = slurp("session/requests/1.txt");
  ck_assert_msg(strstr(head, "POST /v1/model/anthropic.claude-v2%3A1/converse-stream\n") != NULL,
                "%s", head);
  ck_assert_ptr_nonnull(strstr(head, "X-Amz-Security-Token: <present>"));
  char auth[1024], date[32], host[128], ctype[128], accept[128];
  ck_assert(ts_test_head_value(head, "Authorization", auth, sizeof auth));
  ck_assert(ts_test_head_value(head, "X-Amz-Date", date, sizeof date));
  ck_assert(ts_test_head_value(head, "Host", host, sizeof host));
  ck_assert(ts_test_head_value(head, "Content-Type", ctype, sizeof ctype));
  ck_assert(ts_test_head_value(head, "Accept", accept, sizeof accept));
  ck_assert_str_eq(accept, "application/vnd.amazon.eventstream");
  ck_assert_msg(!strncmp(auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/", 40) &&
                    strstr(auth, "/us-west-2/bedrock/aws4_request, SignedHeaders=accept;content-type;"
                                 "host;x-amz-date;x-amz-security-token, Signature="),
                "%s", auth);
  size_t blen;
  char bpath[256];
  snprintf(bpath, sizeof bpath, "%s/session/requests/1.json", base);
  char *body1 = ts_test_read_file(bpath, &blen);
  const ts_sigv4_key k = {"AKIDEXAMPLE", AWS_SECRET, AWS_TOKEN, "us-west-2", "bedrock"};
  ts_test_assert_signed_as_sent(head, body1, blen, &k);
  free(body1);
  free(head);

  assert_request_has(1, "{\"messages\":[{\"role\":\"user\",\"content\":[{\"text\":"
                        "\"make files\"}]}]");
  assert_request_has(1, "\"toolConfig\":{\"tools\":[{\"toolSpec\":{\"name\":\"write_file\"");
  assert_request_has(1, "\"inputSchema\":{\"json\":{");
  /* the second: the call as toolUse, its result as a toolResult in the next user message */
  char args[256];
  write_args(args, sizeof args, "bed", 0);
  sb want = {0};
  sb_printf(&want, "{\"role\":\"assistant\",\"content\":[{\"toolUse\":{\"toolUseId\":\"tooluse_b1\","
                   "\"name\":\"write_file\",\"input\":%s}}]},{\"role\":\"user\",\"content\":["
                   "{\"toolResult\":{\"toolUseId\":\"tooluse_b1\",\"content\":[{\"text\":",
            args);
  assert_request_has(2, sb_str(&want));
  assert_request_has(2, "\"status\":\"success\"}}]}]");
  sb_free(&want);
  ck_assert_str_eq(conversation("b1").roles, "utaa");
  assert_not_leaked(&r, AWS_SECRET);
  assert_not_leaked(&r, AWS_TOKEN);
  result_free(&r);

  /* credentials but no region (a local URL names none): the turn fails, nothing is sent */
  unsetenv("AWS_REGION");
  unsetenv("AWS_DEFAULT_REGION");
  r = run_model_as("b3", "bedrock", NULL, "m", "TS_TEST_NO_KEY");
  ck_assert_int_eq(r.status, 1);
  ck_assert_msg(strstr(sb_str(&r.err), "set AWS_REGION") != NULL, "%s", sb_str(&r.err));
  char *none = slurp("session/requests/3.txt");
  ck_assert_str_eq(none, "");
  free(none);
  result_free(&r);

  /* neither a Bedrock API key nor AWS credentials, for a remote endpoint: refused at once */
  unsetenv("AWS_ACCESS_KEY_ID");
  unsetenv("AWS_SECRET_ACCESS_KEY");
  unsetenv("AWS_BEARER_TOKEN_BEDROCK");
  const char *argv[] = {"toolstream", "run", "--model-url",
                        "https://bedrock-runtime.us-west-2.amazonaws.com", "--model", "x", "hi", NULL};
  r = run_bin(BINARY, argv, NULL, 0);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(sb_str(&r.err), "AWS_ACCESS_KEY_ID") &&
                    strstr(sb_str(&r.err), "AWS_BEARER_TOKEN_BEDROCK"),
                "%s", sb_str(&r.err));
  result_free(&r);
  unsetenv("AWS_SESSION_TOKEN");
  unsetenv("AWS_REGION");
  stop_server();
}
END_TEST

/* Bedrock with a Bedrock API key: a bearer token, no signature. */
START_TEST(test_bedrock_api_key) {
  make_base();
  sb t1 = {0};
  ts_test_evs_frame(&t1, "event", "contentBlockDelta",
                    "{\"contentBlockIndex\":0,\"delta\":{\"text\":\"hello\"}}");
  ts_test_evs_frame(&t1, "event", "messageStop", "{\"stopReason\":\"end_turn\"}");
  ts_test_evs_frame(&t1, "event", "metadata", "{\"usage\":{\"inputTokens\":1}}");
  ts_test_write_file(ts_test_at(base, "session/turn-1.bin"), t1.p, t1.len);
  sb_free(&t1);
  start_server();
  setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", 1); /* present, but the API key wins */
  setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET, 1);
  result r = run_model_as("b2", "bedrock", NULL, "amazon.nova-lite-v1:0", "TS_TEST_KEY");
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, sb_str(&r.err));
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "\"stop_reason\":\"end_turn\""));
  char *head = slurp("session/requests/1.txt");
  ck_assert_msg(strstr(head, "Authorization: <present>") && !strstr(head, "X-Amz-Date"), "%s", head);
  free(head);
  assert_key_not_leaked(&r);
  result_free(&r);
  unsetenv("AWS_ACCESS_KEY_ID");
  unsetenv("AWS_SECRET_ACCESS_KEY");
  stop_server();
}
END_TEST

/* The reply's Content-Type reaches the tap (stream/tap.h, "Content type"): a login wall
 * served as text/html is reported as an HTML page, even though its first bytes alone
 * only say that the format cannot be told. */
START_TEST(test_content_type_reaches_the_tap) {
  make_base();
  put("session/turn-1.sse", "Service Unavailable: sign in to continue\n");
  put("session/turn-2.sse", "Service Unavailable: sign in to continue\n");
  start_server();
  result r = run_model("h1", "openai", "?type=text/html;%20charset=utf-8");
  ck_assert_int_eq(r.status, 1);
  ck_assert_msg(strstr(sb_str(&r.out), "\"type\":\"stream_error\"") &&
                    strstr(sb_str(&r.out), "the reply is an HTML page (Content-Type: text/html), "
                                           "not a model stream; it begins: Service Unavailable"),
                "out: %s\nerr: %s", sb_str(&r.out), sb_str(&r.err));
  result_free(&r);
  r = run_model("h2", "openai", NULL); /* the same bytes as text/event-stream */
  ck_assert_int_eq(r.status, 1);
  ck_assert_msg(!strstr(sb_str(&r.out), "HTML page"), "out: %s", sb_str(&r.out));
  result_free(&r);
  stop_server();
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

/* A reply whose text echoes the key: redacted from the text_delta events (the sink) and
 * from the assistant message stored with the turn, which the next request is built from. */
START_TEST(test_model_text_echoing_key) {
  make_base();
  chat_turn("session/turn-1.sse", "your key is Bearer " KEY " as sent", "");
  start_server();
  result r = run_model("k2", "openai", NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, sb_str(&r.err));
  convo c = conversation("k2");
  ck_assert_msg(strstr(c.all, "your key is Bearer [redacted] as sent") != NULL, "%s", c.all);
  assert_key_not_leaked(&r);
  result_free(&r);
  stop_server();
}
END_TEST

#define FILL64 "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"
#define FILL1K FILL64 FILL64 FILL64 FILL64 FILL64 FILL64 FILL64 FILL64 \
  FILL64 FILL64 FILL64 FILL64 FILL64 FILL64 FILL64 FILL64

/* A reply whose one SSE line never ends: past the event cap the tap's stream_error fails
 * the turn, and the run stops reading there (exit 1, that error) rather than drain an
 * endless body for as long as the server sends. */
START_TEST(test_endless_sse_line_ends_the_run) {
  make_base();
  const ts_raw_script sc = {"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
                            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"",
                            FILL1K, -1, 0};
  ts_raw_server rs;
  ts_raw_server_start(&rs, &sc);
  port = rs.port;
  result r = run_model("e1", "openai", NULL);
  ts_raw_server_stop(&rs);
  ck_assert_msg(r.status == 1, "exit %d: %s", r.status, sb_str(&r.err));
  ck_assert_msg(strstr(sb_str(&r.out), "\"code\":\"sse_event_too_large\""), "%.2000s",
                sb_str(&r.out));
  ck_assert_msg(strstr(sb_str(&r.err), "ended in error (see the stream_error event)"), "%s",
                sb_str(&r.err));
  assert_key_not_leaked(&r);
  result_free(&r);
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
  tcase_add_test(tc, test_content_type_reaches_the_tap);
  tcase_add_test(tc, test_provider_error_echoing_key);
  tcase_add_test(tc, test_model_text_echoing_key);
  tcase_add_test(tc, test_endless_sse_line_ends_the_run);
  tcase_add_test(tc, test_responses_two_turns);
  tcase_add_test(tc, test_gemini_two_turns);
  tcase_add_test(tc, test_bedrock_two_turns);
  tcase_add_test(tc, test_bedrock_api_key);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
