/*
 * provider_request_test.c: the request writers of OpenAI Responses, Gemini and Bedrock
 * (stream/providers/{openai_responses,gemini,bedrock}.c): the neutral message list
 * (stream/provider.h) into each provider's exact streaming request body.
 *
 * Each body is compared whole with a gold string written from the provider's API
 * reference, and judged by the tests' independent JSON checker. Then the cases where
 * the providers differ from the neutral list: a tool result followed by a new prompt
 * (Gemini and Bedrock want one content per role in a row), an assistant message with
 * nothing in it (refused by both when empty), ids the tap synthesized (not Gemini's, so
 * not sent back to it), a result that is not JSON, max_tokens, and a full buffer.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "stream/provider.h"
#include "support/json_check.h"
#include "support/test_support.h"

#define V(s) {(s), sizeof(s) - 1}

/* The conversation of provider_test.c: a system line, the prompt, a turn with two calls
 * (the second's result an error), and the model's answer. */
static const ts_req_call calls[] = {
    {V("c1"), V("read"), V("{\"path\":\"a\"}")},
    {V("c2"), V("write"), V("{}")},
};
static const ts_req_message msgs[] = {
    {TS_REQ_SYSTEM, V("be brief"), NULL, 0, {NULL, 0}, 0},
    {TS_REQ_USER, V("hi \"you\""), NULL, 0, {NULL, 0}, 0},
    {TS_REQ_ASSISTANT, {"", 0}, calls, 2, {NULL, 0}, 0},
    {TS_REQ_TOOL, V("{\"ok\":1}"), NULL, 0, V("c1"), 0},
    {TS_REQ_TOOL, V("denied"), NULL, 0, V("c2"), 1},
    {TS_REQ_ASSISTANT, V("done"), NULL, 0, {NULL, 0}, 0},
};
static const ts_req_tool tools[] = {
    {V("read"), V("Reads"), V("{ \"type\": \"object\" }")},
};

/* The body p writes for `req`, checked against `want` and the JSON checker; a buffer too
 * small for it is the buffer's error. */
static void check_body(ts_format f, const ts_request *req, const char *want) {
  const ts_provider *p = ts_provider_get(f);
  ts_buf b;
  ts_buf_init(&b, 1 << 20);
  ck_assert_int_eq(ts_provider_request(p, req, &b), TS_E_OK);
  ck_assert_msg(b.len == strlen(want) && !memcmp(b.p, want, b.len), "%s:\n got %.*s\nwant %s",
                p->name, (int)b.len, b.p, want);
  ck_assert_msg(ts_test_json_valid(b.p, b.len), "%s: not JSON", p->name);
  ts_buf_fini(&b);
  ts_buf_init(&b, 16);
  ck_assert_int_eq(ts_provider_request(p, req, &b), TS_E_LIMIT);
  ts_buf_fini(&b);
}

START_TEST(test_responses) {
  ts_request req = {"m-1", 0, msgs, 6, tools, 1};
  check_body(TS_FORMAT_OPENAI_RESPONSES, &req,
             "{\"model\":\"m-1\",\"stream\":true,\"store\":false,\"input\":["
             "{\"type\":\"message\",\"role\":\"system\",\"content\":\"be brief\"},"
             "{\"type\":\"message\",\"role\":\"user\",\"content\":\"hi \\\"you\\\"\"},"
             "{\"type\":\"function_call\",\"call_id\":\"c1\",\"name\":\"read\","
             "\"arguments\":\"{\\\"path\\\":\\\"a\\\"}\"},"
             "{\"type\":\"function_call\",\"call_id\":\"c2\",\"name\":\"write\",\"arguments\":\"{}\"},"
             "{\"type\":\"function_call_output\",\"call_id\":\"c1\",\"output\":\"{\\\"ok\\\":1}\"},"
             "{\"type\":\"function_call_output\",\"call_id\":\"c2\",\"output\":\"Error: denied\"},"
             "{\"type\":\"message\",\"role\":\"assistant\",\"content\":\"done\"}],"
             "\"tools\":[{\"type\":\"function\",\"name\":\"read\",\"description\":\"Reads\","
             "\"parameters\":{\"type\":\"object\"},\"strict\":false}]}");
  /* max_tokens, no tools, an assistant message with text and a call */
  static const ts_req_message m2[] = {
      {TS_REQ_USER, V("go"), NULL, 0, {NULL, 0}, 0},
      {TS_REQ_ASSISTANT, V("ok"), calls, 1, {NULL, 0}, 0},
      {TS_REQ_TOOL, V("1"), NULL, 0, V("c1"), 0},
  };
  ts_request r2 = {"m", 50, m2, 3, NULL, 0};
  check_body(TS_FORMAT_OPENAI_RESPONSES, &r2,
             "{\"model\":\"m\",\"stream\":true,\"store\":false,\"max_output_tokens\":50,\"input\":["
             "{\"type\":\"message\",\"role\":\"user\",\"content\":\"go\"},"
             "{\"type\":\"message\",\"role\":\"assistant\",\"content\":\"ok\"},"
             "{\"type\":\"function_call\",\"call_id\":\"c1\",\"name\":\"read\","
             "\"arguments\":\"{\\\"path\\\":\\\"a\\\"}\"},"
             "{\"type\":\"function_call_output\",\"call_id\":\"c1\",\"output\":\"1\"}]}");
}
END_TEST

START_TEST(test_gemini) {
  ts_request req = {"m-1", 0, msgs, 6, tools, 1};
  check_body(TS_FORMAT_GEMINI, &req,
             "{\"contents\":["
             "{\"role\":\"user\",\"parts\":[{\"text\":\"hi \\\"you\\\"\"}]},"
             "{\"role\":\"model\",\"parts\":["
             "{\"functionCall\":{\"name\":\"read\",\"id\":\"c1\",\"args\":{\"path\":\"a\"}},"
             "\"thoughtSignature\":\"skip_thought_signature_validator\"},"
             "{\"functionCall\":{\"name\":\"write\",\"id\":\"c2\",\"args\":{}},"
             "\"thoughtSignature\":\"skip_thought_signature_validator\"}]},"
             "{\"role\":\"user\",\"parts\":["
             "{\"functionResponse\":{\"name\":\"read\",\"id\":\"c1\",\"response\":{\"output\":{\"ok\":1}}}},"
             "{\"functionResponse\":{\"name\":\"write\",\"id\":\"c2\",\"response\":{\"error\":\"denied\"}}}]},"
             "{\"role\":\"model\",\"parts\":[{\"text\":\"done\"}]}],"
             "\"systemInstruction\":{\"parts\":[{\"text\":\"be brief\"}]},"
             "\"tools\":[{\"functionDeclarations\":[{\"name\":\"read\",\"description\":\"Reads\","
             "\"parametersJsonSchema\":{\"type\":\"object\"}}]}]}");
  /* ids the tap made up are not Gemini's: not sent; a result that is not JSON goes as a
   * string; results and the next prompt share one user content; an empty model turn is
   * left out (its neighbours merge); max_tokens */
  static const ts_req_call synth[] = {{V("ts_1_0"), V("read"), V("{\"path\":\"b\"}")}};
  static const ts_req_message m2[] = {
      {TS_REQ_USER, V("go"), NULL, 0, {NULL, 0}, 0},
      {TS_REQ_ASSISTANT, V("reading"), synth, 1, {NULL, 0}, 0},
      {TS_REQ_TOOL, V("plain text"), NULL, 0, V("ts_1_0"), 0},
      {TS_REQ_USER, V("and now?"), NULL, 0, {NULL, 0}, 0},
      {TS_REQ_ASSISTANT, {"", 0}, NULL, 0, {NULL, 0}, 0},
      {TS_REQ_USER, V("hello?"), NULL, 0, {NULL, 0}, 0},
  };
  ts_request r2 = {"m", 100, m2, 6, NULL, 0};
  check_body(TS_FORMAT_GEMINI, &r2,
             "{\"contents\":["
             "{\"role\":\"user\",\"parts\":[{\"text\":\"go\"}]},"
             "{\"role\":\"model\",\"parts\":[{\"text\":\"reading\"},"
             "{\"functionCall\":{\"name\":\"read\",\"args\":{\"path\":\"b\"}},"
             "\"thoughtSignature\":\"skip_thought_signature_validator\"}]},"
             "{\"role\":\"user\",\"parts\":["
             "{\"functionResponse\":{\"name\":\"read\",\"response\":{\"output\":\"plain text\"}}},"
             "{\"text\":\"and now?\"},{\"text\":\"hello?\"}]}],"
             "\"generationConfig\":{\"maxOutputTokens\":100}}");
}
END_TEST

START_TEST(test_bedrock) {
  ts_request req = {"m-1", 0, msgs, 6, tools, 1};
  check_body(TS_FORMAT_BEDROCK, &req,
             "{\"messages\":["
             "{\"role\":\"user\",\"content\":[{\"text\":\"hi \\\"you\\\"\"}]},"
             "{\"role\":\"assistant\",\"content\":["
             "{\"toolUse\":{\"toolUseId\":\"c1\",\"name\":\"read\",\"input\":{\"path\":\"a\"}}},"
             "{\"toolUse\":{\"toolUseId\":\"c2\",\"name\":\"write\",\"input\":{}}}]},"
             "{\"role\":\"user\",\"content\":["
             "{\"toolResult\":{\"toolUseId\":\"c1\",\"content\":[{\"text\":\"{\\\"ok\\\":1}\"}],"
             "\"status\":\"success\"}},"
             "{\"toolResult\":{\"toolUseId\":\"c2\",\"content\":[{\"text\":\"denied\"}],"
             "\"status\":\"error\"}}]},"
             "{\"role\":\"assistant\",\"content\":[{\"text\":\"done\"}]}],"
             "\"system\":[{\"text\":\"be brief\"}],"
             "\"toolConfig\":{\"tools\":[{\"toolSpec\":{\"name\":\"read\",\"description\":\"Reads\","
             "\"inputSchema\":{\"json\":{\"type\":\"object\"}}}}]}}");
  /* the results and the next prompt in one user message, an empty assistant message left
   * out, an empty result said so (Converse refuses empty text), max_tokens */
  static const ts_req_message m2[] = {
      {TS_REQ_USER, V("go"), NULL, 0, {NULL, 0}, 0},
      {TS_REQ_ASSISTANT, V("ok"), calls, 1, {NULL, 0}, 0},
      {TS_REQ_TOOL, {"", 0}, NULL, 0, V("c1"), 0},
      {TS_REQ_USER, V("next"), NULL, 0, {NULL, 0}, 0},
      {TS_REQ_ASSISTANT, {"", 0}, NULL, 0, {NULL, 0}, 0},
      {TS_REQ_USER, V("again"), NULL, 0, {NULL, 0}, 0},
  };
  ts_request r2 = {"m", 7, m2, 6, NULL, 0};
  check_body(TS_FORMAT_BEDROCK, &r2,
             "{\"messages\":["
             "{\"role\":\"user\",\"content\":[{\"text\":\"go\"}]},"
             "{\"role\":\"assistant\",\"content\":[{\"text\":\"ok\"},"
             "{\"toolUse\":{\"toolUseId\":\"c1\",\"name\":\"read\",\"input\":{\"path\":\"a\"}}}]},"
             "{\"role\":\"user\",\"content\":["
             "{\"toolResult\":{\"toolUseId\":\"c1\",\"content\":[{\"text\":\"(empty)\"}],"
             "\"status\":\"success\"}},{\"text\":\"next\"},{\"text\":\"again\"}]}],"
             "\"inferenceConfig\":{\"maxTokens\":7}}");
}
END_TEST

/* Where each of the three sends its request, the model id a path segment of its own. */
START_TEST(test_urls) {
  char out[512];
  const ts_provider *bedrock = ts_provider_get(TS_FORMAT_BEDROCK);
  ck_assert_int_eq(ts_provider_url(bedrock, "https://bedrock-runtime.us-east-1.amazonaws.com",
                                   "anthropic.claude-3-5-sonnet-20240620-v1:0", out, sizeof out),
                   TS_E_OK);
  ck_assert_str_eq(out, "https://bedrock-runtime.us-east-1.amazonaws.com/model/"
                        "anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse-stream");
  ck_assert_int_eq(ts_provider_url(bedrock, "http://127.0.0.1:9/", "arn:aws:x/y", out, sizeof out),
                   TS_E_OK);
  ck_assert_str_eq(out, "http://127.0.0.1:9/model/arn%3Aaws%3Ax%2Fy/converse-stream");
  ck_assert_int_eq(ts_provider_url(ts_provider_get(TS_FORMAT_OPENAI_RESPONSES),
                                   "https://api.openai.com/v1", "gpt-5", out, sizeof out),
                   TS_E_OK);
  ck_assert_str_eq(out, "https://api.openai.com/v1/responses");
  ck_assert_int_eq(ts_provider_url(ts_provider_get(TS_FORMAT_GEMINI),
                                   "https://generativelanguage.googleapis.com/v1beta",
                                   "gemini-2.5-flash", out, sizeof out),
                   TS_E_OK);
  ck_assert_str_eq(out, "https://generativelanguage.googleapis.com/v1beta/models/"
                        "gemini-2.5-flash:streamGenerateContent?alt=sse");
  /* the hosts select their providers; Bedrock signs, the others send their key */
  ck_assert_ptr_eq(ts_provider_for_url("https://bedrock-runtime.eu-west-1.amazonaws.com"), bedrock);
  ck_assert_ptr_eq(ts_provider_for_url("https://generativelanguage.googleapis.com/v1beta"),
                   ts_provider_get(TS_FORMAT_GEMINI));
  ck_assert_str_eq(bedrock->sigv4_service, "bedrock");
  ck_assert_ptr_null(ts_provider_get(TS_FORMAT_GEMINI)->sigv4_service);
  ck_assert_str_eq(ts_provider_get(TS_FORMAT_GEMINI)->auth_header, "x-goog-api-key");
}
END_TEST

int main(void) {
  Suite *s = suite_create("provider_request");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_responses);
  tcase_add_test(tc, test_gemini);
  tcase_add_test(tc, test_bedrock);
  tcase_add_test(tc, test_urls);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
