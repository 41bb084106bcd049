/*
 * provider_test.c: tests for stream/provider.c, the provider table.
 *
 * What matters: every row is reachable by its format, name and alias; a request path, a
 * base URL and a first event each select the row they should; URLs are built the way
 * `run` sends them; each row's request writer turns the neutral message list into its
 * provider's exact body (a gold string from the provider's API reference, valid JSON by
 * the tests' own checker); and the tool-schema walker finds each provider's declarations
 * (the gateway's x-progress-argument rewrite depends on it).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "stream/json_view.h"
#include "stream/provider.h"
#include "support/json_check.h"
#include "support/test_support.h"

#define V(s) {(s), sizeof(s) - 1}

START_TEST(test_rows) {
  ck_assert_uint_ge(ts_provider_count(), 4);
  for (size_t i = 0; i < ts_provider_count(); i++) {
    const ts_provider *p = ts_provider_at(i);
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_eq(ts_provider_get(p->format), p); /* rows are in enum order */
    ck_assert_str_eq(ts_format_name(p->format), p->name);
    ck_assert_int_eq(ts_format_parse(p->name), p->format);
    ck_assert_ptr_eq(ts_provider_find(p->name), p);
    ck_assert(p->event != NULL);
    ck_assert_ptr_nonnull(p->key_env);
    ck_assert_ptr_nonnull(p->auth_header);
    ck_assert_ptr_nonnull(p->auth_prefix);
  }
  ck_assert_ptr_null(ts_provider_at(ts_provider_count()));
  ck_assert_ptr_null(ts_provider_get(TS_FORMAT_AUTO));
  ck_assert_ptr_null(ts_provider_get(TS_FORMAT_RAW));
  ck_assert_ptr_null(ts_provider_get((ts_format)99));
  ck_assert_str_eq(ts_format_name(TS_FORMAT_AUTO), "auto");
  ck_assert_str_eq(ts_format_name(TS_FORMAT_RAW), "raw");
  ck_assert_str_eq(ts_format_name((ts_format)99), "unknown");
  ck_assert_int_eq(ts_format_parse("auto"), TS_FORMAT_AUTO);
  ck_assert_int_eq(ts_format_parse("raw"), TS_FORMAT_RAW);
  ck_assert_int_eq(ts_format_parse("openai"), -1); /* an alias is no format name */
  ck_assert_int_eq(ts_format_parse(NULL), -1);
  ck_assert_ptr_eq(ts_provider_find("openai"), ts_provider_get(TS_FORMAT_OPENAI_CHAT));
  ck_assert_ptr_null(ts_provider_find("nope"));
  ck_assert_ptr_null(ts_provider_find(NULL));
}
END_TEST

static const struct {
  int line;
  const char *path;
  ts_format want;
} path_rows[] = {
    {__LINE__, "/v1/chat/completions", TS_FORMAT_OPENAI_CHAT},
    {__LINE__, "/openai/v1/chat/completions?x=1", TS_FORMAT_OPENAI_CHAT},
    {__LINE__, "/v1/responses", TS_FORMAT_OPENAI_RESPONSES},
    {__LINE__, "/v1/messages", TS_FORMAT_ANTHROPIC},
    {__LINE__, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", TS_FORMAT_GEMINI},
    {__LINE__, "/api/chat", TS_FORMAT_OLLAMA},
    {__LINE__, "/v2/chat", TS_FORMAT_COHERE},
    {__LINE__, "/v1/models", TS_FORMAT_AUTO},
    {__LINE__, "/", TS_FORMAT_AUTO},
    {__LINE__, "", TS_FORMAT_AUTO},
};

START_TEST(test_for_path) {
  for (size_t i = 0; i < sizeof path_rows / sizeof path_rows[0]; i++)
    ck_assert_msg(ts_provider_for_path(path_rows[i].path, strlen(path_rows[i].path)) ==
                      path_rows[i].want,
                  "line %d: %s", path_rows[i].line, path_rows[i].path);
  ck_assert_int_eq(ts_provider_for_path(NULL, 0), TS_FORMAT_AUTO);
  ck_assert_ptr_eq(ts_provider_for_url("https://api.anthropic.com/v1"),
                   ts_provider_get(TS_FORMAT_ANTHROPIC));
  ck_assert_ptr_null(ts_provider_for_url("http://localhost:11434/v1"));
  ck_assert_ptr_eq(ts_provider_for_url("https://api.cohere.com"), ts_provider_get(TS_FORMAT_COHERE));
  ck_assert_ptr_null(ts_provider_for_url(NULL));
}
END_TEST

static const struct {
  int line;
  ts_format f;
  const char *base, *model, *want;
} url_rows[] = {
    {__LINE__, TS_FORMAT_OPENAI_CHAT, "https://api.openai.com/v1", "m",
     "https://api.openai.com/v1/chat/completions"},
    {__LINE__, TS_FORMAT_OPENAI_CHAT, "https://api.openai.com/v1/", "m",
     "https://api.openai.com/v1/chat/completions"},
    {__LINE__, TS_FORMAT_OPENAI_CHAT, "http://h/v1/chat/completions", "m",
     "http://h/v1/chat/completions"},
    {__LINE__, TS_FORMAT_OPENAI_CHAT, "http://h/v1?key=1", "m", "http://h/v1/chat/completions?key=1"},
    {__LINE__, TS_FORMAT_ANTHROPIC, "https://api.anthropic.com/v1", "m",
     "https://api.anthropic.com/v1/messages"},
    {__LINE__, TS_FORMAT_ANTHROPIC, "https://api.anthropic.com/v1/messages", "m",
     "https://api.anthropic.com/v1/messages"},
    {__LINE__, TS_FORMAT_GEMINI, "https://generativelanguage.googleapis.com/v1beta", "gemini-2.5-flash",
     "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"},
    {__LINE__, TS_FORMAT_OLLAMA, "http://localhost:11434", "qwen3", "http://localhost:11434/api/chat"},
    {__LINE__, TS_FORMAT_COHERE, "https://api.cohere.com", "command-a", "https://api.cohere.com/v2/chat"},
    {__LINE__, TS_FORMAT_GEMINI, "https://g/v1beta/models/x:streamGenerateContent?alt=sse", "x",
     "https://g/v1beta/models/x:streamGenerateContent?alt=sse"},
};

START_TEST(test_url) {
  char out[512];
  for (size_t i = 0; i < sizeof url_rows / sizeof url_rows[0]; i++) {
    int rc = ts_provider_url(ts_provider_get(url_rows[i].f), url_rows[i].base, url_rows[i].model,
                             out, sizeof out);
    ck_assert_msg(rc == TS_E_OK && !strcmp(out, url_rows[i].want), "line %d: %s -> %s (%s)",
                  url_rows[i].line, url_rows[i].base, out, ts_err_name(rc));
  }
  const ts_provider *chat = ts_provider_get(TS_FORMAT_OPENAI_CHAT);
  ck_assert_int_eq(ts_provider_url(chat, "http://h/v1", "m", out, 20), TS_E_LIMIT);
  ck_assert_int_eq(ts_provider_url(NULL, "http://h", "m", out, sizeof out), TS_E_INVAL);
  ck_assert_int_eq(ts_provider_url(chat, NULL, "m", out, sizeof out), TS_E_INVAL);
}
END_TEST

/* A conversation: a system line, the prompt, a turn with two calls (the second's result an
 * error), and the model's answer. */
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

/* The body f writes for `req`, checked against `want` and the tests' independent JSON
 * checker; a buffer too small for it is the buffer's error, not a partial success. */
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

static void check_request(ts_format f, unsigned max_tokens, const char *want) {
  ts_request req = {"m-1", max_tokens, msgs, 6, tools, 1, NULL, -1};
  check_body(f, &req, want);
}

START_TEST(test_request_bodies) {
  check_request(TS_FORMAT_OPENAI_CHAT, 0,
                "{\"model\":\"m-1\",\"stream\":true,\"stream_options\":{\"include_usage\":true},"
                "\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},"
                "{\"role\":\"user\",\"content\":\"hi \\\"you\\\"\"},"
                "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":["
                "{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"read\","
                "\"arguments\":\"{\\\"path\\\":\\\"a\\\"}\"}},"
                "{\"id\":\"c2\",\"type\":\"function\",\"function\":{\"name\":\"write\","
                "\"arguments\":\"{}\"}}]},"
                "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"{\\\"ok\\\":1}\"},"
                "{\"role\":\"tool\",\"tool_call_id\":\"c2\",\"content\":\"Error: denied\"},"
                "{\"role\":\"assistant\",\"content\":\"done\"}],"
                "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"read\","
                "\"description\":\"Reads\",\"parameters\":{\"type\":\"object\"}}}]}");
  check_request(TS_FORMAT_ANTHROPIC, 0,
                "{\"model\":\"m-1\",\"max_tokens\":4096,\"stream\":true,"
                "\"system\":[{\"type\":\"text\",\"text\":\"be brief\"}],"
                "\"messages\":[{\"role\":\"user\",\"content\":\"hi \\\"you\\\"\"},"
                "{\"role\":\"assistant\",\"content\":["
                "{\"type\":\"tool_use\",\"id\":\"c1\",\"name\":\"read\",\"input\":{\"path\":\"a\"}},"
                "{\"type\":\"tool_use\",\"id\":\"c2\",\"name\":\"write\",\"input\":{}}]},"
                "{\"role\":\"user\",\"content\":["
                "{\"type\":\"tool_result\",\"tool_use_id\":\"c1\",\"content\":\"{\\\"ok\\\":1}\"},"
                "{\"type\":\"tool_result\",\"tool_use_id\":\"c2\",\"content\":\"denied\","
                "\"is_error\":true}]},"
                "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}],"
                "\"tools\":[{\"name\":\"read\",\"description\":\"Reads\","
                "\"input_schema\":{\"type\":\"object\"}}]}");
  check_request(TS_FORMAT_OLLAMA, 0,
                "{\"model\":\"m-1\",\"stream\":true,\"messages\":["
                "{\"role\":\"system\",\"content\":\"be brief\"},"
                "{\"role\":\"user\",\"content\":\"hi \\\"you\\\"\"},"
                "{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":["
                "{\"function\":{\"name\":\"read\",\"arguments\":{\"path\":\"a\"}}},"
                "{\"function\":{\"name\":\"write\",\"arguments\":{}}}]},"
                "{\"role\":\"tool\",\"content\":\"{\\\"ok\\\":1}\",\"tool_name\":\"read\"},"
                "{\"role\":\"tool\",\"content\":\"Error: denied\",\"tool_name\":\"write\"},"
                "{\"role\":\"assistant\",\"content\":\"done\"}],"
                "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"read\","
                "\"description\":\"Reads\",\"parameters\":{\"type\":\"object\"}}}]}");
  check_request(TS_FORMAT_COHERE, 0,
                "{\"model\":\"m-1\",\"stream\":true,\"messages\":["
                "{\"role\":\"system\",\"content\":\"be brief\"},"
                "{\"role\":\"user\",\"content\":\"hi \\\"you\\\"\"},"
                "{\"role\":\"assistant\",\"tool_calls\":["
                "{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"read\","
                "\"arguments\":\"{\\\"path\\\":\\\"a\\\"}\"}},"
                "{\"id\":\"c2\",\"type\":\"function\",\"function\":{\"name\":\"write\","
                "\"arguments\":\"{}\"}}]},"
                "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"{\\\"ok\\\":1}\"},"
                "{\"role\":\"tool\",\"tool_call_id\":\"c2\",\"content\":\"Error: denied\"},"
                "{\"role\":\"assistant\",\"content\":\"done\"}],"
                "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"read\","
                "\"description\":\"Reads\",\"parameters\":{\"type\":\"object\"}}}]}");
  /* a row without a request writer says so (every row of the table has one now) */
  ts_request req = {"m", 0, msgs, 1, NULL, 0, NULL, -1};
  ts_buf b;
  ts_buf_init(&b, 1024);
  const ts_provider none = {.name = "none"};
  ck_assert_int_eq(ts_provider_request(&none, &req, &b), TS_E_INVAL);
  ck_assert_int_eq(ts_provider_request(NULL, &req, &b), TS_E_INVAL);
  ts_buf_fini(&b);
}
END_TEST

/* OpenAI Responses, Gemini and Bedrock, beside the same conversation, then where they
 * differ from the neutral list: a tool result followed by a new prompt (Gemini and
 * Bedrock want one content per role in a row), an assistant message with nothing in it
 * (both refuse empty ones), ids the tap synthesized (not Gemini's, so not sent back to
 * it), a result that is not JSON, max_tokens. */
START_TEST(test_responses) {
  check_request(TS_FORMAT_OPENAI_RESPONSES, 0,
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
  ts_request r2 = {"m", 50, m2, 3, NULL, 0, NULL, -1};
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
  check_request(TS_FORMAT_GEMINI, 0,
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
  ts_request r2 = {"m", 100, m2, 6, NULL, 0, NULL, -1};
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
  check_request(TS_FORMAT_BEDROCK, 0,
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
  ts_request r2 = {"m", 7, m2, 6, NULL, 0, NULL, -1};
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
/* A prompt's toolChoice and parallelToolCalls (agent/compose.h), in each provider's
 * words; nothing of them without tools, and nothing for a provider without the setting. */
static const struct {
  int line;
  ts_format f;
  const char *choice;
  int parallel;
  const char *want; /* NULL: neither key written */
} choice_rows[] = {
    {__LINE__, TS_FORMAT_OPENAI_CHAT, "required", 0,
     "}}],\"tool_choice\":\"required\",\"parallel_tool_calls\":false}"},
    {__LINE__, TS_FORMAT_OPENAI_CHAT, NULL, 1, "}}],\"parallel_tool_calls\":true}"},
    {__LINE__, TS_FORMAT_OPENAI_CHAT, NULL, -1, NULL},
    {__LINE__, TS_FORMAT_OPENAI_RESPONSES, "none", -1, ",\"strict\":false}],\"tool_choice\":\"none\"}"},
    {__LINE__, TS_FORMAT_ANTHROPIC, "required", 0,
     ",\"tool_choice\":{\"type\":\"any\",\"disable_parallel_tool_use\":true}}"},
    {__LINE__, TS_FORMAT_ANTHROPIC, "none", 0, ",\"tool_choice\":{\"type\":\"none\"}}"},
    {__LINE__, TS_FORMAT_ANTHROPIC, NULL, 0,
     ",\"tool_choice\":{\"type\":\"auto\",\"disable_parallel_tool_use\":true}}"},
    {__LINE__, TS_FORMAT_GEMINI, "required", -1,
     ",\"toolConfig\":{\"functionCallingConfig\":{\"mode\":\"ANY\"}}"},
    {__LINE__, TS_FORMAT_BEDROCK, "required", 0, NULL},
};

START_TEST(test_tool_choice) {
  for (size_t i = 0; i < sizeof choice_rows / sizeof choice_rows[0]; i++) {
    for (int with_tools = 0; with_tools < 2; with_tools++) {
      ts_request req = {"m-1", 10, msgs, 6, with_tools ? tools : NULL, (size_t)with_tools,
                        choice_rows[i].choice, choice_rows[i].parallel};
      ts_buf b;
      ts_buf_init(&b, 1 << 20);
      ck_assert_int_eq(ts_provider_request(ts_provider_get(choice_rows[i].f), &req, &b), TS_E_OK);
      ts_buf_putc(&b, '\0');
      int has = strstr(b.p, "tool_choice") || strstr(b.p, "parallel_tool") ||
                strstr(b.p, "toolConfig\":{\"function");
      if (with_tools && choice_rows[i].want)
        ck_assert_msg(strstr(b.p, choice_rows[i].want), "line %d: %s", choice_rows[i].line, b.p);
      else
        ck_assert_msg(!has, "line %d: %s", choice_rows[i].line, b.p);
      ck_assert_msg(ts_test_json_valid(b.p, b.len - 1), "line %d: not JSON", choice_rows[i].line);
      ts_buf_fini(&b);
    }
  }
}
END_TEST

START_TEST(test_request_urls) {
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
  /* its OpenAI-compatible endpoint on the same host is OpenAI Chat (the default) */
  ck_assert_ptr_null(ts_provider_for_url("https://generativelanguage.googleapis.com/v1beta/openai/"));
  ck_assert_str_eq(bedrock->sigv4_service, "bedrock");
  ck_assert_ptr_null(ts_provider_get(TS_FORMAT_GEMINI)->sigv4_service);
  ck_assert_str_eq(ts_provider_get(TS_FORMAT_GEMINI)->auth_header, "x-goog-api-key");
}
END_TEST

/* Out of memory at every allocation in turn, for every writer: the buffer's TS_E_NOMEM,
 * or a body that is still valid JSON (Gemini's check of a result's JSON needs memory of
 * its own; without it the result goes as a string), never a crash or a leak. */
START_TEST(test_request_out_of_memory) {
  ts_request req = {"m-1", 10, msgs, 6, tools, 1, NULL, -1};
  for (size_t i = 0; i < ts_provider_count(); i++) {
    const ts_provider *p = ts_provider_at(i);
    int done = 0;
    for (long n = 1; n < 100 && !done; n++) {
      ts_buf b;
      ts_buf_init(&b, 1 << 20);
      ts_test_alloc_fail_after(n);
      int rc = ts_provider_request(p, &req, &b);
      ts_test_alloc_fail_after(-1);
      ck_assert_msg(rc == TS_E_OK || rc == TS_E_NOMEM, "%s, allocation %ld: %s", p->name, n,
                    ts_err_name(rc));
      if (rc == TS_E_OK) ck_assert_msg(ts_test_json_valid(b.p, b.len), "%s: %s", p->name, b.p);
      done = rc == TS_E_OK;
      ts_buf_fini(&b);
    }
    ck_assert_msg(done, "%s never succeeded", p->name);
  }
}
END_TEST

/* The schema walker's findings as "name=schema;" pairs (raw text). */
static void on_schema(void *user, ts_jv *jv, int name, int schema) {
  ts_buf *b = user;
  ts_view n = ts_jv_raw(jv, name), s = ts_jv_raw(jv, schema);
  ts_buf_append(b, n.p ? n.p : "-", n.p ? n.len : 1);
  ts_buf_putc(b, '=');
  ts_buf_append(b, s.p ? s.p : "-", s.p ? s.len : 1);
  ts_buf_putc(b, ';');
}

static const struct {
  int line;
  ts_format f; /* AUTO: every row's shapes */
  const char *body, *want;
} schema_rows[] = {
    {__LINE__, TS_FORMAT_OPENAI_CHAT,
     "{\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"a\",\"parameters\":{\"x\":1}}}]}",
     "\"a\"={\"x\":1};"},
    {__LINE__, TS_FORMAT_ANTHROPIC, "{\"tools\":[{\"name\":\"b\",\"input_schema\":{\"y\":2}}]}",
     "\"b\"={\"y\":2};"},
    {__LINE__, TS_FORMAT_OPENAI_RESPONSES,
     "{\"tools\":[{\"type\":\"function\",\"name\":\"c\",\"parameters\":{}}]}", "\"c\"={};"},
    {__LINE__, TS_FORMAT_GEMINI,
     "{\"tools\":[{\"functionDeclarations\":[{\"name\":\"d\",\"parameters\":{}},"
     "{\"name\":\"e\",\"parametersJsonSchema\":{\"z\":3}}]}]}",
     "\"d\"={};\"e\"={\"z\":3};"},
    {__LINE__, TS_FORMAT_GEMINI, "{\"tools\":[{\"function_declarations\":[{\"name\":\"f\"}]}]}",
     "\"f\"=-;"},
    /* every shape at once, as the gateway reads a body of unknown provider */
    {__LINE__, TS_FORMAT_AUTO,
     "{\"tools\":[{\"functionDeclarations\":[{\"name\":\"g\",\"parameters\":{}}]},"
     "{\"type\":\"function\",\"function\":{\"name\":\"h\",\"parameters\":{}}},"
     "{\"name\":\"i\",\"input_schema\":{}},{\"name\":\"j\",\"parameters\":{}},{\"name\":\"k\"}]}",
     "\"g\"={};\"h\"={};\"i\"={};\"j\"={};"},
    /* a provider's own shapes only */
    {__LINE__, TS_FORMAT_ANTHROPIC,
     "{\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"h\",\"parameters\":{}}}]}", ""},
    {__LINE__, TS_FORMAT_AUTO, "{\"tools\":{}}", ""},
    {__LINE__, TS_FORMAT_AUTO, "{\"model\":\"m\"}", ""},
    /* Bedrock Converse: toolConfig.tools[].toolSpec, the schema under inputSchema.json; a
     * cachePoint entry declares no tool */
    {__LINE__, TS_FORMAT_BEDROCK,
     "{\"toolConfig\":{\"tools\":[{\"toolSpec\":{\"name\":\"l\",\"inputSchema\":{\"json\":"
     "{\"w\":4}}}},{\"cachePoint\":{\"type\":\"default\"}},{\"toolSpec\":{\"name\":\"m\"}}]}}",
     "\"l\"={\"w\":4};\"m\"=-;"},
    {__LINE__, TS_FORMAT_AUTO,
     "{\"toolConfig\":{\"tools\":[{\"toolSpec\":{\"name\":\"n\",\"inputSchema\":{\"json\":{}}}}]},"
     "\"tools\":[{\"name\":\"o\",\"input_schema\":{}}]}",
     "\"o\"={};\"n\"={};"},
    /* a top-level tools[] is not Bedrock's; toolConfig.tools is nobody else's */
    {__LINE__, TS_FORMAT_BEDROCK, "{\"tools\":[{\"toolSpec\":{\"name\":\"p\"}}]}", ""},
    {__LINE__, TS_FORMAT_ANTHROPIC,
     "{\"toolConfig\":{\"tools\":[{\"name\":\"q\",\"input_schema\":{}}]}}", ""},
    {__LINE__, TS_FORMAT_BEDROCK, "{\"toolConfig\":{\"tools\":{}}}", ""},
};

START_TEST(test_media_types) {
  ck_assert_int_eq(ts_provider_for_media_type("application/vnd.amazon.eventstream", 34),
                   TS_FORMAT_BEDROCK);
  ck_assert_int_eq(ts_provider_for_media_type("Application/X-NDJSON", 20), TS_FORMAT_OLLAMA);
  ck_assert_int_eq(ts_provider_for_media_type("text/event-stream", 17), TS_FORMAT_AUTO);
  ck_assert_int_eq(ts_provider_for_media_type("application/x-ndjso", 19), TS_FORMAT_AUTO);
  ck_assert_int_eq(ts_provider_for_media_type(NULL, 0), TS_FORMAT_AUTO);
  /* the arrays that declare tools: tools, and Bedrock's toolConfig.tools, once each */
  static const char body[] = "{\"toolConfig\":{\"tools\":[]},\"tools\":[1]}";
  ts_jv jv;
  ck_assert_int_eq(ts_jv_init(&jv, 64), TS_E_OK);
  char *copy = strdup(body);
  ck_assert_int_eq(ts_jv_parse(&jv, copy, strlen(copy)), TS_E_OK);
  int arr[8];
  ck_assert_int_eq(ts_provider_tool_arrays(NULL, &jv, arr, 8), 2);
  ck_assert_int_eq(ts_jv_size(&jv, arr[0]), 1); /* tools first */
  ck_assert_int_eq(ts_jv_size(&jv, arr[1]), 0);
  ck_assert_int_eq(ts_provider_tool_arrays(ts_provider_get(TS_FORMAT_BEDROCK), &jv, arr, 8), 1);
  ck_assert_int_eq(ts_jv_size(&jv, arr[0]), 0);
  ck_assert_int_eq(ts_provider_tool_arrays(ts_provider_get(TS_FORMAT_ANTHROPIC), &jv, arr, 8), 1);
  ck_assert_int_eq(ts_provider_tool_arrays(NULL, &jv, arr, 1), 1);
  free(copy);
  ts_jv_fini(&jv);
}
END_TEST

START_TEST(test_tool_schemas) {
  for (size_t i = 0; i < sizeof schema_rows / sizeof schema_rows[0]; i++) {
    ts_jv jv;
    ck_assert_int_eq(ts_jv_init(&jv, 256), TS_E_OK);
    char *copy = strdup(schema_rows[i].body);
    ck_assert_int_eq(ts_jv_parse(&jv, copy, strlen(copy)), TS_E_OK);
    ts_buf b;
    ts_buf_init(&b, 4096);
    ts_provider_tool_schemas(ts_provider_get(schema_rows[i].f), &jv, on_schema, &b);
    ck_assert_msg(b.len == strlen(schema_rows[i].want) &&
                      (!b.len || !memcmp(b.p, schema_rows[i].want, b.len)),
                  "line %d: got %.*s", schema_rows[i].line, (int)b.len, b.p);
    ts_buf_fini(&b);
    free(copy);
    ts_jv_fini(&jv);
  }
}
END_TEST

static const struct {
  int line;
  const char *name, *data;
  ts_format want;
} detect_rows[] = {
    {__LINE__, "response.output_item.added", "", TS_FORMAT_OPENAI_RESPONSES},
    {__LINE__, "content_block_delta", "", TS_FORMAT_ANTHROPIC},
    {__LINE__, "message_stop", "", TS_FORMAT_ANTHROPIC},
    {__LINE__, "", " [DONE] ", TS_FORMAT_OPENAI_CHAT},
    {__LINE__, "tool-call-delta", "", TS_FORMAT_COHERE},
    {__LINE__, "message-end", "", TS_FORMAT_COHERE},
    {__LINE__, "ping", "", TS_FORMAT_AUTO},
    {__LINE__, "", "{\"type\":\"message_start\"}", TS_FORMAT_AUTO}, /* names only: no parse */
};

START_TEST(test_detect) {
  for (size_t i = 0; i < sizeof detect_rows / sizeof detect_rows[0]; i++) {
    ts_view n = {detect_rows[i].name, strlen(detect_rows[i].name)};
    ts_view d = {detect_rows[i].data, strlen(detect_rows[i].data)};
    ck_assert_msg(ts_provider_detect_name(n, d) == detect_rows[i].want, "line %d",
                  detect_rows[i].line);
  }
  static const struct {
    const char *doc;
    ts_format want;
  } docs[] = {
      {"{\"type\":\"message_start\",\"message\":{}}", TS_FORMAT_ANTHROPIC},
      {"{\"type\":\"response.created\"}", TS_FORMAT_OPENAI_RESPONSES},
      {"{\"choices\":[]}", TS_FORMAT_OPENAI_CHAT},
      {"{\"object\":\"chat.completion.chunk\"}", TS_FORMAT_OPENAI_CHAT},
      {"{\"candidates\":[]}", TS_FORMAT_GEMINI},
      {"[{\"usageMetadata\":{}}]", TS_FORMAT_GEMINI},
      {"{\"foo\":1}", TS_FORMAT_AUTO},
      {"[1]", TS_FORMAT_AUTO},
  };
  for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
    ts_jv jv;
    ck_assert_int_eq(ts_jv_init(&jv, 64), TS_E_OK);
    char *copy = strdup(docs[i].doc);
    ck_assert_int_eq(ts_jv_parse(&jv, copy, strlen(copy)), TS_E_OK);
    ck_assert_msg(ts_provider_detect_doc(&jv) == docs[i].want, "%s", docs[i].doc);
    free(copy);
    ts_jv_fini(&jv);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("provider");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_rows);
  tcase_add_test(tc, test_for_path);
  tcase_add_test(tc, test_url);
  tcase_add_test(tc, test_request_bodies);
  tcase_add_test(tc, test_responses);
  tcase_add_test(tc, test_gemini);
  tcase_add_test(tc, test_bedrock);
  tcase_add_test(tc, test_tool_choice);
  tcase_add_test(tc, test_request_urls);
  tcase_add_test(tc, test_request_out_of_memory);
  tcase_add_test(tc, test_tool_schemas);
  tcase_add_test(tc, test_media_types);
  tcase_add_test(tc, test_detect);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
