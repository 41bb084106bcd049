/*
 * provider_test.c: tests for stream/provider.c, the provider table.
 *
 * What matters: every row is reachable by its format, name and alias; a request path, a
 * base URL and a first event each select the row they should; URLs are built the way
 * `run` sends them; each request-writing row turns the neutral message list into its
 * provider's exact body; and the tool-schema walker finds each provider's declarations
 * (the gateway's x-progress-argument rewrite depends on it).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "stream/json_view.h"
#include "stream/provider.h"
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

static void check_request(ts_format f, unsigned max_tokens, const char *want) {
  ts_request req = {"m-1", max_tokens, msgs, 6, tools, 1};
  ts_buf b;
  ts_buf_init(&b, 1 << 20);
  ck_assert_int_eq(ts_provider_request(ts_provider_get(f), &req, &b), TS_E_OK);
  ck_assert_msg(b.len == strlen(want) && !memcmp(b.p, want, b.len), "%s:\n got %.*s\nwant %s",
                ts_format_name(f), (int)b.len, b.p, want);
  ts_buf_fini(&b);
  /* a full buffer is the buffer's error, not a partial success */
  ts_buf_init(&b, 16);
  ck_assert_int_eq(ts_provider_request(ts_provider_get(f), &req, &b), TS_E_LIMIT);
  ts_buf_fini(&b);
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
  /* a row without a request writer says so (every row has one now; the other three's
   * bodies are in provider_request_test.c) */
  ts_request req = {"m", 0, msgs, 1, NULL, 0};
  ts_buf b;
  ts_buf_init(&b, 1024);
  const ts_provider none = {.name = "none"};
  ck_assert_int_eq(ts_provider_request(&none, &req, &b), TS_E_INVAL);
  ck_assert_int_eq(ts_provider_request(NULL, &req, &b), TS_E_INVAL);
  ts_buf_fini(&b);
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
};

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
  tcase_add_test(tc, test_tool_schemas);
  tcase_add_test(tc, test_detect);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
