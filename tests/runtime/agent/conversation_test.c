/*
 * conversation_test.c: request bodies from stored messages (runtime/agent/conversation.h).
 *
 * Each row stores a conversation in a fresh store (messages in commit order: within a
 * turn the tool results are committed before the assistant message that made the
 * calls), builds the request for one provider and compares the body byte for byte.
 * Every body must also be one valid JSON object by the reference checker
 * (support/json_check.h). The rows cover the pairing rules of the header: results
 * after their assistant message, per provider's shape; error results; calls without
 * a result and results without an assistant message left out; an assistant message
 * that is not ours sent as plain text; system messages; tools from the registry.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "agent/conversation.h"
#include "support/json_check.h"
#include "support/runner.h"
#include "support/tempdir.h"
#include "support/test_support.h"

typedef struct {
  int role; /* ts_store_role; -1 ends the list */
  const char *content;
  const char *call_id;
  int is_error;
} smsg;

typedef struct {
  int line;
  const char *label;
  ts_format provider; /* the provider table's row, by its format */
  int tools; /* 1: the registry holds the two tools below */
  smsg msgs[12];
  const char *want;
} row;

#define U(text) {TS_STORE_USER, text, NULL, 0}
#define SYS(text) {TS_STORE_SYSTEM, text, NULL, 0}
#define A(json) {TS_STORE_ASSISTANT, json, NULL, 0}
#define R(id, text) {TS_STORE_TOOL, text, id, 0}
#define RERR(id, text) {TS_STORE_TOOL, text, id, 1}
#define END {-1, NULL, NULL, 0}

#define OAI_HEAD "{\"model\":\"m\",\"stream\":true,\"stream_options\":{\"include_usage\":true},\"messages\":["
#define ANT_HEAD "{\"model\":\"m\",\"max_tokens\":4096,\"stream\":true,\"messages\":["
#define CALL1 "{\"turn\":1,\"text\":\"Let me look.\",\"tool_calls\":[{\"id\":\"c1\",\"name\":\"read_file\"," \
              "\"arguments\":{\"path\":\"a.txt\"}}]}"
#define CALL2 "{\"turn\":1,\"text\":\"\",\"tool_calls\":[{\"id\":\"c1\",\"name\":\"read_file\",\"arguments\":" \
              "{\"path\":\"a\"}},{\"id\":\"c2\",\"name\":\"list_dir\",\"arguments\":{}}]}"

static const row rows[] = {
    {__LINE__, "a prompt (OpenAI)", TS_FORMAT_OPENAI_CHAT, 0, {U("hi"), END},
     OAI_HEAD "{\"role\":\"user\",\"content\":\"hi\"}]}"},
    {__LINE__, "a prompt (Anthropic)", TS_FORMAT_ANTHROPIC, 0, {U("hi"), END},
     ANT_HEAD "{\"role\":\"user\",\"content\":\"hi\"}]}"},
    {__LINE__, "text is escaped", TS_FORMAT_OPENAI_CHAT, 0, {U("say \"x\"\n\ttab"), END},
     OAI_HEAD "{\"role\":\"user\",\"content\":\"say \\\"x\\\"\\n\\ttab\"}]}"},
    {__LINE__, "a system message (OpenAI keeps it)", TS_FORMAT_OPENAI_CHAT, 0, {SYS("be brief"), U("hi"), END},
     OAI_HEAD "{\"role\":\"system\",\"content\":\"be brief\"},{\"role\":\"user\",\"content\":\"hi\"}]}"},
    {__LINE__, "a system message (Anthropic: the top-level system, no such role in messages)",
     TS_FORMAT_ANTHROPIC, 0, {SYS("be brief"), U("hi"), END},
     "{\"model\":\"m\",\"max_tokens\":4096,\"stream\":true,\"system\":[{\"type\":\"text\","
     "\"text\":\"be brief\"}],\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"},
    {__LINE__, "a call and its result, stored result first (OpenAI)", TS_FORMAT_OPENAI_CHAT, 0,
     {U("read a"), R("c1", "{\"text\":\"A\"}"), A(CALL1), END},
     OAI_HEAD "{\"role\":\"user\",\"content\":\"read a\"},"
     "{\"role\":\"assistant\",\"content\":\"Let me look.\",\"tool_calls\":[{\"id\":\"c1\",\"type\":"
     "\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":\"{\\\"path\\\":\\\"a.txt\\\"}\"}}]},"
     "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"{\\\"text\\\":\\\"A\\\"}\"}]}"},
    {__LINE__, "a call and its result (Anthropic)", TS_FORMAT_ANTHROPIC, 0,
     {U("read a"), R("c1", "{\"text\":\"A\"}"), A(CALL1), END},
     ANT_HEAD "{\"role\":\"user\",\"content\":\"read a\"},"
     "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"Let me look.\"},{\"type\":"
     "\"tool_use\",\"id\":\"c1\",\"name\":\"read_file\",\"input\":{\"path\":\"a.txt\"}}]},"
     "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"c1\",\"content\":"
     "\"{\\\"text\\\":\\\"A\\\"}\"}]}]}"},
    {__LINE__, "an error result (OpenAI says so in the content)", TS_FORMAT_OPENAI_CHAT, 0,
     {U("q"), RERR("c1", "no such file"), A(CALL1), END},
     OAI_HEAD "{\"role\":\"user\",\"content\":\"q\"},"
     "{\"role\":\"assistant\",\"content\":\"Let me look.\",\"tool_calls\":[{\"id\":\"c1\",\"type\":"
     "\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":\"{\\\"path\\\":\\\"a.txt\\\"}\"}}]},"
     "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"Error: no such file\"}]}"},
    {__LINE__, "an error result (Anthropic: is_error)", TS_FORMAT_ANTHROPIC, 0,
     {U("q"), RERR("c1", "no such file"), A(CALL1), END},
     ANT_HEAD "{\"role\":\"user\",\"content\":\"q\"},"
     "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"Let me look.\"},{\"type\":"
     "\"tool_use\",\"id\":\"c1\",\"name\":\"read_file\",\"input\":{\"path\":\"a.txt\"}}]},"
     "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"c1\",\"content\":"
     "\"no such file\",\"is_error\":true}]}]}"},
    {__LINE__, "two calls, results in the other order, paired by id (OpenAI)", TS_FORMAT_OPENAI_CHAT, 0,
     {U("q"), R("c2", "[]"), R("c1", "\"A\""), A(CALL2), END},
     OAI_HEAD "{\"role\":\"user\",\"content\":\"q\"},"
     "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":["
     "{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":"
     "\"{\\\"path\\\":\\\"a\\\"}\"}},"
     "{\"id\":\"c2\",\"type\":\"function\",\"function\":{\"name\":\"list_dir\",\"arguments\":\"{}\"}}]},"
     "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"\\\"A\\\"\"},"
     "{\"role\":\"tool\",\"tool_call_id\":\"c2\",\"content\":\"[]\"}]}"},
    {__LINE__, "two calls (Anthropic: one user message of results)", TS_FORMAT_ANTHROPIC, 0,
     {U("q"), R("c2", "[]"), R("c1", "\"A\""), A(CALL2), END},
     ANT_HEAD "{\"role\":\"user\",\"content\":\"q\"},"
     "{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"c1\",\"name\":\"read_file\","
     "\"input\":{\"path\":\"a\"}},{\"type\":\"tool_use\",\"id\":\"c2\",\"name\":\"list_dir\",\"input\":{}}]},"
     "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"c1\",\"content\":"
     "\"\\\"A\\\"\"},{\"type\":\"tool_result\",\"tool_use_id\":\"c2\",\"content\":\"[]\"}]}]}"},
    {__LINE__, "a call without a result is left out (OpenAI)", TS_FORMAT_OPENAI_CHAT, 0,
     {U("q"), R("c1", "\"A\""), A(CALL2), END},
     OAI_HEAD "{\"role\":\"user\",\"content\":\"q\"},"
     "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":["
     "{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":"
     "\"{\\\"path\\\":\\\"a\\\"}\"}}]},"
     "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"\\\"A\\\"\"}]}"},
    {__LINE__, "no result at all: the assistant message alone (OpenAI)", TS_FORMAT_OPENAI_CHAT, 0,
     {U("q"), A(CALL1), END},
     OAI_HEAD "{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"content\":\"Let me look.\"}]}"},
    {__LINE__, "no text and no result (Anthropic needs a content block)", TS_FORMAT_ANTHROPIC, 0,
     {U("q"), A(CALL2), END},
     ANT_HEAD "{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"content\":[{\"type\":"
     "\"text\",\"text\":\"(no text)\"}]}]}"},
    {__LINE__, "a result whose assistant message was never stored is left out", TS_FORMAT_OPENAI_CHAT, 0,
     {U("q"), R("c9", "\"orphan\""), END}, OAI_HEAD "{\"role\":\"user\",\"content\":\"q\"}]}"},
    {__LINE__, "an assistant message that is not ours goes as plain text (a text block)",
     TS_FORMAT_ANTHROPIC, 0, {U("q"), A("plain words"), END},
     ANT_HEAD "{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"content\":"
     "[{\"type\":\"text\",\"text\":\"plain words\"}]}]}"},
    {__LINE__, "two turns", TS_FORMAT_OPENAI_CHAT, 0,
     {U("q"), R("c1", "1"), A(CALL1), A("{\"turn\":2,\"text\":\"done\",\"tool_calls\":[]}"), U("thanks"), END},
     OAI_HEAD "{\"role\":\"user\",\"content\":\"q\"},"
     "{\"role\":\"assistant\",\"content\":\"Let me look.\",\"tool_calls\":[{\"id\":\"c1\",\"type\":"
     "\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":\"{\\\"path\\\":\\\"a.txt\\\"}\"}}]},"
     "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"1\"},"
     "{\"role\":\"assistant\",\"content\":\"done\"},{\"role\":\"user\",\"content\":\"thanks\"}]}"},
    {__LINE__, "tools (OpenAI: function, parameters)", TS_FORMAT_OPENAI_CHAT, 1, {U("q"), END},
     OAI_HEAD "{\"role\":\"user\",\"content\":\"q\"}],\"tools\":["
     "{\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"description\":\"Reads \\\"one\\\" file\","
     "\"parameters\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}}}}},"
     "{\"type\":\"function\",\"function\":{\"name\":\"ping\",\"description\":\"\",\"parameters\":"
     "{\"type\":\"object\"}}}]}"},
    {__LINE__, "tools (Anthropic: input_schema)", TS_FORMAT_ANTHROPIC, 1, {U("q"), END},
     ANT_HEAD "{\"role\":\"user\",\"content\":\"q\"}],\"tools\":["
     "{\"name\":\"read_file\",\"description\":\"Reads \\\"one\\\" file\",\"input_schema\":{\"type\":"
     "\"object\",\"properties\":{\"path\":{\"type\":\"string\"}}}},"
     "{\"name\":\"ping\",\"description\":\"\",\"input_schema\":{\"type\":\"object\"}}]}"},
    {__LINE__, "no messages at all", TS_FORMAT_OPENAI_CHAT, 0, {END}, OAI_HEAD "]}"},
};

static char dir[256];
static ts_store *store;

static void setup(void) {
  ts_test_tempdir(dir, sizeof dir, "conversation");
  char why[256];
  ck_assert_msg(ts_store_open(dir, &store, why, sizeof why) == TS_E_OK, "%s", why);
  ck_assert_int_eq(ts_store_thread_create(store, "t", NULL), TS_E_OK);
}

static void teardown(void) {
  ts_store_close(store);
  store = NULL;
  ts_test_rm_rf(dir);
}

static ts_registry *registry(int with_tools) {
  ts_registry *reg = ts_registry_new();
  ck_assert_ptr_nonnull(reg);
  if (with_tools) {
    char why[256];
    /* the schema has whitespace: the body carries it compacted */
    ts_tool_spec a = {.name = "read_file", .description = "Reads \"one\" file",
                      .args_schema = "{ \"type\": \"object\",\n \"properties\": {\"path\": "
                                     "{\"type\": \"string\"}} }"};
    ts_tool_spec b = {.name = "ping"};
    ck_assert_int_eq(ts_registry_add(reg, &a, why, sizeof why), TS_E_OK);
    ck_assert_int_eq(ts_registry_add(reg, &b, why, sizeof why), TS_E_OK);
  }
  return reg;
}

START_TEST(test_rows) {
  const row *r = &rows[_i];
  for (int i = 0; r->msgs[i].role >= 0; i++) {
    const smsg *m = &r->msgs[i];
    ck_assert_int_eq(ts_store_append_message(store, "t", (ts_store_role)m->role, m->content,
                                             strlen(m->content), m->call_id, NULL, m->is_error,
                                             NULL),
                     TS_E_OK);
  }
  ts_registry *reg = registry(r->tools);
  ts_buf b;
  ts_buf_init(&b, 1 << 20);
  int rc = ts_conversation_request(store, "t", reg, ts_provider_get(r->provider), "m", 0, &b);
  ck_assert_msg(rc == TS_E_OK, "line %d (%s): rc %d", r->line, r->label, rc);
  ck_assert_msg(!strcmp(b.p, r->want), "line %d (%s):\n--- got\n%s\n--- want\n%s", r->line,
                r->label, b.p, r->want);
  ck_assert_msg(ts_test_json_valid(b.p, b.len), "line %d (%s): the body is not JSON", r->line,
                r->label);
  ts_buf_fini(&b);
  ts_registry_free(reg);
}
END_TEST

START_TEST(test_max_tokens_and_model) {
  ts_store_append_message(store, "t", TS_STORE_USER, "q", 1, NULL, NULL, 0, NULL);
  ts_registry *reg = registry(0);
  ts_buf b;
  ts_buf_init(&b, 1 << 20);
  ck_assert_int_eq(ts_conversation_request(store, "t", reg, ts_provider_get(TS_FORMAT_ANTHROPIC),
                                           "claude \"x\"", 512, &b),
                   TS_E_OK);
  ck_assert_str_eq(b.p, "{\"model\":\"claude \\\"x\\\"\",\"max_tokens\":512,\"stream\":true,"
                        "\"messages\":[{\"role\":\"user\",\"content\":\"q\"}]}");
  ts_buf_fini(&b);
  ts_registry_free(reg);
}
END_TEST

/* Another thread's messages never leak in; an unknown thread is an empty conversation. */
START_TEST(test_threads) {
  ck_assert_int_eq(ts_store_thread_create(store, "other", NULL), TS_E_OK);
  ts_store_append_message(store, "other", TS_STORE_USER, "secret", 6, NULL, NULL, 0, NULL);
  ts_store_append_message(store, "t", TS_STORE_USER, "mine", 4, NULL, NULL, 0, NULL);
  ts_registry *reg = registry(0);
  ts_buf b;
  ts_buf_init(&b, 1 << 20);
  ck_assert_int_eq(ts_conversation_request(store, "t", reg, ts_provider_get(TS_FORMAT_OPENAI_CHAT), "m", 0, &b), 0);
  ck_assert_ptr_null(strstr(b.p, "secret"));
  ck_assert_ptr_nonnull(strstr(b.p, "mine"));
  ts_buf_reset(&b);
  ck_assert_int_eq(ts_conversation_request(store, "nobody", reg, ts_provider_get(TS_FORMAT_OPENAI_CHAT), "m", 0, &b),
                   0);
  ck_assert_str_eq(b.p, OAI_HEAD "]}");
  ts_buf_fini(&b);
  ts_registry_free(reg);
}
END_TEST

/* A body over the buffer's limit is TS_E_LIMIT, never a cut body passed as whole. */
START_TEST(test_limit) {
  char big[4000];
  memset(big, 'w', sizeof big);
  ts_store_append_message(store, "t", TS_STORE_USER, big, sizeof big, NULL, NULL, 0, NULL);
  ts_registry *reg = registry(0);
  ts_buf b;
  ts_buf_init(&b, 1000);
  ck_assert_int_eq(ts_conversation_request(store, "t", reg, ts_provider_get(TS_FORMAT_OPENAI_CHAT), "m", 0, &b),
                   TS_E_LIMIT);
  ts_buf_fini(&b);
  ts_registry_free(reg);
}
END_TEST

int main(void) {
  Suite *s = suite_create("conversation");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_loop_test(tc, test_rows, 0, (int)(sizeof rows / sizeof rows[0]));
  tcase_add_test(tc, test_max_tokens_and_model);
  tcase_add_test(tc, test_threads);
  tcase_add_test(tc, test_limit);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
