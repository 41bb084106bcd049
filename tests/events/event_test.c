/*
 * event_test.c: the canonical event encoder and the JSON string escaper it relies on.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "events/event.h"
#include "base/strbuf.h"
#include "support/test_support.h"

static const struct {
  int line;
  const char *label;
  const char *in;
  size_t len;
  const char *want;
} esc_rows[] = {
    {__LINE__, "plain", "abc", 3, "\"abc\""},
    {__LINE__, "quote and backslash", "a\"b\\c", 5, "\"a\\\"b\\\\c\""},
    {__LINE__, "short escapes", "\n\r\t\b\f", 5, "\"\\n\\r\\t\\b\\f\""},
    {__LINE__, "other controls", "\x01\x1f\x7f", 3, "\"\\u0001\\u001f\\u007f\""},
    {__LINE__, "NUL inside", "a\0b", 3, "\"a\\u0000b\""},
    {__LINE__, "valid UTF-8 kept", "caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x98\x80", 14,
     "\"caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x98\x80\""},
    {__LINE__, "stray continuation", "a\x80z", 3, "\"a\xef\xbf\xbdz\""},
    {__LINE__, "overlong", "\xc0\xaf", 2, "\"\xef\xbf\xbd\xef\xbf\xbd\""},
    {__LINE__, "encoded surrogate", "\xed\xa0\x80", 3, "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""},
    {__LINE__, "truncated at end", "ok\xe2\x80", 4, "\"ok\xef\xbf\xbd\xef\xbf\xbd\""},
    {__LINE__, "slash untouched", "a/b", 3, "\"a/b\""},
};

START_TEST(test_escape) {
  for (size_t i = 0; i < sizeof esc_rows / sizeof esc_rows[0]; i++) {
    ts_buf b;
    ts_buf_init(&b, 1 << 10);
    ck_assert_int_eq(ts_buf_append_json_string(&b, esc_rows[i].in, esc_rows[i].len), TS_E_OK);
    ck_assert_msg(b.len == strlen(esc_rows[i].want) && !memcmp(b.p, esc_rows[i].want, b.len),
                  "line %d (%s): got %s", esc_rows[i].line, esc_rows[i].label, b.p);
    ts_buf_fini(&b);
  }
}
END_TEST

START_TEST(test_compact) {
  ts_buf b;
  ts_buf_init(&b, 1 << 10);
  const char *in = "{ \"a\" : [ 1 , 2 ],\n\t\"b c\": \"x \\\" y\" }";
  ts_buf_append_json_compact(&b, in, strlen(in));
  ck_assert_str_eq(b.p, "{\"a\":[1,2],\"b c\":\"x \\\" y\"}");
  ts_buf_fini(&b);
}
END_TEST

START_TEST(test_limits) {
  ts_buf b;
  ts_buf_init(&b, 8);
  ck_assert_int_eq(ts_buf_append(&b, "12345678", 8), TS_E_OK);
  ck_assert_int_eq(ts_buf_putc(&b, 'x'), TS_E_LIMIT);
  ck_assert_int_eq(b.len, 8); /* a failed append changes nothing */
  ck_assert_int_eq(ts_buf_putc(&b, 'y'), TS_E_LIMIT); /* sticky */
  ts_buf_reset(&b);
  ck_assert_int_eq(ts_buf_putc(&b, 'z'), TS_E_OK);
  ts_buf_fini(&b);
  /* out of memory is an error, not a crash */
  ts_buf_init(&b, 1 << 20);
  ts_test_alloc_fail_after(1);
  int rc = ts_buf_append(&b, "abc", 3);
  ts_test_alloc_fail_after(-1);
  ck_assert_int_eq(rc, TS_E_NOMEM);
  ts_buf_fini(&b);
}
END_TEST

static const char *encode(const ts_event *ev, ts_buf *b) {
  ts_buf_reset(b);
  ck_assert_int_eq(ts_event_encode(ev, b), TS_E_OK);
  return b->p;
}

START_TEST(test_events) {
  ts_buf b;
  ts_buf_init(&b, 1 << 16);
  ts_event ev;
  memset(&ev, 0, sizeof ev);
  ev.thread = (ts_view){"t\"1", 3};
  ev.seq = 7;
  ev.body.type = TS_TAP_TOOL_CALL_STARTED;
  ev.body.offset = 99;
  ev.body.is_call = 1;
  ev.body.index = 2;
  ev.body.call_id = (ts_view){"call_1", 6};
  ev.body.tool = (ts_view){"write_file", 10};
  ck_assert_str_eq(encode(&ev, &b),
                   "{\"v\":1,\"type\":\"tool_call_started\",\"thread\":\"t\\\"1\",\"seq\":7,\"offset\":99,"
                   "\"call_id\":\"call_1\",\"tool\":\"write_file\",\"index\":2}");
  ev.body.has_progress = 1;
  ev.body.progress = (ts_view){"writing \"a\"", 11};
  ev.body.progress_truncated = 1;
  ck_assert_str_eq(encode(&ev, &b),
                   "{\"v\":1,\"type\":\"tool_call_started\",\"thread\":\"t\\\"1\",\"seq\":7,\"offset\":99,"
                   "\"call_id\":\"call_1\",\"tool\":\"write_file\",\"index\":2,"
                   "\"progress\":\"writing \\\"a\\\"\",\"progress_truncated\":true}");
  /* the turn and, when the call id was synthesized, the provider's own id */
  ev.body.turn = 3;
  ev.body.call_id = (ts_view){"ts_3_2", 6};
  ev.body.provider_call_id = (ts_view){"call_1", 6};
  ck_assert_str_eq(encode(&ev, &b),
                   "{\"v\":1,\"type\":\"tool_call_started\",\"thread\":\"t\\\"1\",\"seq\":7,\"offset\":99,"
                   "\"call_id\":\"ts_3_2\",\"provider_call_id\":\"call_1\",\"tool\":\"write_file\","
                   "\"index\":2,\"turn\":3,"
                   "\"progress\":\"writing \\\"a\\\"\",\"progress_truncated\":true}");
  memset(&ev.body, 0, sizeof ev.body);
  ev.body.type = TS_TAP_TOOL_CALL_READY;
  ev.body.is_call = 1;
  ev.body.arguments = (ts_view){"{\"a\":1}", 7};
  ck_assert_ptr_nonnull(strstr(encode(&ev, &b), ",\"arguments\":{\"a\":1}}"));
  memset(&ev.body, 0, sizeof ev.body);
  ev.body.type = TS_TAP_TURN_FINISHED;
  ev.body.stop_reason = (ts_view){"tool_calls", 10};
  ev.body.usage = (ts_view){"{ \"in\": 1,\n \"out\": 2 }", 22};
  ck_assert_str_eq(encode(&ev, &b),
                   "{\"v\":1,\"type\":\"turn_finished\",\"thread\":\"t\\\"1\",\"seq\":7,\"offset\":0,"
                   "\"stop_reason\":\"tool_calls\",\"usage\":{\"in\":1,\"out\":2}}");
  memset(&ev.body, 0, sizeof ev.body);
  ev.body.type = TS_TAP_STREAM_ERROR;
  ev.body.code = TS_E_MS_TRUNCATED;
  ev.body.error = (ts_view){"bad\nthing", 9};
  ck_assert_str_eq(encode(&ev, &b),
                   "{\"v\":1,\"type\":\"stream_error\",\"thread\":\"t\\\"1\",\"seq\":7,\"offset\":0,"
                   "\"code\":\"ms_truncated\",\"error\":\"bad\\nthing\"}");
  memset(&ev.body, 0, sizeof ev.body);
  ev.body.type = TS_TAP_TOOL_CALL_HEARTBEAT;
  ev.body.is_call = 1;
  ev.body.bytes = 8192;
  ck_assert_ptr_nonnull(strstr(encode(&ev, &b), ",\"bytes\":8192}"));
  memset(&ev.body, 0, sizeof ev.body);
  ev.body.type = TS_EVENT_TOOL_EXECUTION_STARTED;
  ev.body.is_call = 1;
  ev.body.tool = (ts_view){"w", 1};
  ck_assert_str_eq(encode(&ev, &b),
                   "{\"v\":1,\"type\":\"tool_execution_started\",\"thread\":\"t\\\"1\",\"seq\":7,"
                   "\"offset\":0,\"call_id\":\"\",\"tool\":\"w\",\"index\":0}");
  /* a child thread's events name its parent, right after the thread */
  ev.parent = (ts_view){"root", 4};
  ev.body.type = TS_EVENT_VARIABLE_REQUIRED;
  ev.var_name = (ts_view){"API_KEY", 7};
  ev.var_description = (ts_view){"the \"key\"", 9};
  ev.var_secret = 1;
  ck_assert_str_eq(encode(&ev, &b),
                   "{\"v\":1,\"type\":\"variable_required\",\"thread\":\"t\\\"1\",\"parent\":\"root\","
                   "\"seq\":7,\"offset\":0,\"call_id\":\"\",\"tool\":\"w\",\"index\":0,\"name\":\"API_KEY\","
                   "\"description\":\"the \\\"key\\\"\",\"var_type\":\"secret\"}");
  ev.var_secret = 0;
  ck_assert_ptr_nonnull(strstr(encode(&ev, &b), ",\"var_type\":\"text\"}"));
  ev.parent = (ts_view){NULL, 0};
  ev.body.type = TS_EVENT_TOOL_RESULT;
  ev.duration_us = 1234567;
  ev.result = (ts_view){"{ \"ok\": true }", 14};
  ck_assert_ptr_nonnull(strstr(encode(&ev, &b),
                               ",\"is_error\":false,\"duration_ms\":1234.567,\"result\":{\"ok\":true}}"));
  ev.is_error = 1;
  ev.duration_us = 5;
  ev.result = (ts_view){"no \"such\" file", 14};
  ck_assert_ptr_nonnull(strstr(encode(&ev, &b),
                               ",\"is_error\":true,\"duration_ms\":0.005,\"error\":\"no \\\"such\\\" file\"}"));
  /* a handoff is the thread's, not a call's: no call fields */
  memset(&ev.body, 0, sizeof ev.body);
  ev.body.type = TS_EVENT_HANDOFF;
  ev.handoff_from = (ts_view){"front", 5};
  ev.handoff_to = (ts_view){"bill\"ing", 8};
  ck_assert_str_eq(encode(&ev, &b),
                   "{\"v\":1,\"type\":\"handoff\",\"thread\":\"t\\\"1\",\"seq\":7,\"offset\":0,"
                   "\"from\":\"front\",\"to\":\"bill\\\"ing\"}");
  /* the thread tree: a child's creation, a queued message taken in, a child's end */
  memset(&ev, 0, sizeof ev);
  ev.thread = (ts_view){"p/1.0", 5};
  ev.parent = (ts_view){"p", 1};
  ev.seq = 1;
  ev.body.type = TS_EVENT_THREAD_CREATED;
  ev.agent = (ts_view){"researcher", 10};
  ev.name = (ts_view){"alpha \"one\"", 11};
  ev.relationship = (ts_view){"research", 8};
  ev.blocking = 1;
  ck_assert_str_eq(encode(&ev, &b),
                   "{\"v\":1,\"type\":\"thread_created\",\"thread\":\"p/1.0\",\"parent\":\"p\","
                   "\"seq\":1,\"offset\":0,\"agent\":\"researcher\",\"name\":\"alpha \\\"one\\\"\","
                   "\"relationship\":\"research\",\"blocking\":true}");
  ev.body.type = TS_EVENT_SUBAGENT_MESSAGE;
  ev.from = (ts_view){"p", 1};
  ev.inbox_seq = 2;
  ev.message = (ts_view){"go\non", 5};
  ck_assert_ptr_nonnull(strstr(encode(&ev, &b),
                               ",\"from\":\"p\",\"inbox_seq\":2,\"message\":\"go\\non\"}"));
  ev.from = (ts_view){NULL, 0};
  ck_assert_ptr_null(strstr(encode(&ev, &b), "\"from\""));
  ev.body.type = TS_EVENT_THREAD_FINISHED;
  ev.status = (ts_view){"done", 4};
  ev.outcome = (ts_view){"{ \"text\": \"ok\" }", 16};
  ck_assert_ptr_nonnull(strstr(encode(&ev, &b),
                               "\"type\":\"thread_finished\""));
  ck_assert_ptr_nonnull(strstr(encode(&ev, &b),
                               ",\"status\":\"done\",\"outcome\":{\"text\":\"ok\"}}"));
  ev.outcome = (ts_view){NULL, 0};
  ck_assert_ptr_nonnull(strstr(encode(&ev, &b), ",\"status\":\"done\"}"));
  ck_assert_str_eq(ts_event_type_name(TS_EVENT_SUBAGENT_MESSAGE), "subagent_message");
  ts_buf_fini(&b);
}
END_TEST

int main(void) {
  Suite *s = suite_create("event");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_escape);
  tcase_add_test(tc, test_compact);
  tcase_add_test(tc, test_limits);
  tcase_add_test(tc, test_events);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
