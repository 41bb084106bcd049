/*
 * ui_stream_test.c: thread events translated to AG-UI and to the AI SDK's UI message
 * stream (events/ui_stream.c), and the member walker it reads them with
 * (stream/json_members.c). Each row is a thread's events and the frames expected, in
 * order; the real clients' own parsers read the same output in tests/ui/ (make test).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/strbuf.h"
#include "events/ui_stream.h"
#include "stream/json_members.h"

static int collect(void *user, const char *frame, size_t len) {
  ts_buf *b = user;
  ts_buf_append(b, frame, len);
  ts_buf_putc(b, '\n');
  return 0;
}

/* Runs `events` (one JSON object per line) through a translator, then finish. */
static char *translate(ts_ui_format f, const char *events, int finish) {
  ts_buf out;
  ts_buf_init(&out, 1 << 20);
  ts_ui *u;
  ck_assert_int_eq(ts_ui_new(f, collect, &out, &u), TS_E_OK);
  for (const char *p = events; *p;) {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) : strlen(p);
    ck_assert_int_eq(ts_ui_event(u, p, n), TS_E_OK);
    p += n + (nl ? 1 : 0);
  }
  if (finish) ck_assert_int_eq(ts_ui_finish(u), TS_E_OK);
  ts_ui_free(u);
  char *s = strdup(out.p ? out.p : "");
  ts_buf_fini(&out);
  return s;
}

#define EV(type, rest) "{\"v\":1,\"type\":\"" type "\",\"thread\":\"t1\",\"seq\":1,\"offset\":0" rest "}\n"
#define CALL0 ",\"call_id\":\"c0\",\"tool\":\"write_file\",\"index\":0"

/* A turn with text, a call whose arguments came whole, its result. */
static const char *TURN = EV("text_delta", ",\"text\":\"Hi\"")
    EV("tool_call_started", CALL0 ",\"progress\":\"writing a.txt\"")
    EV("tool_call_ready", CALL0 ",\"arguments\":{\"path\":\"a.txt\",\"n\":[1,{\"x\":\"}\"}]}")
    EV("turn_finished", ",\"stop_reason\":\"tool_use\"")
    EV("tool_execution_started", CALL0)
    EV("tool_result", CALL0 ",\"is_error\":false,\"duration_ms\":1.000,\"result\":{\"ok\":true}");

START_TEST(test_agui_turn) {
  char *got = translate(TS_UI_AGUI, TURN, 1);
  const char *want =
      "{\"type\":\"RUN_STARTED\",\"threadId\":\"t1\",\"runId\":\"t1-run-1\"}\n"
      "{\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"t1-msg-1-1\",\"role\":\"assistant\"}\n"
      "{\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"t1-msg-1-1\",\"delta\":\"Hi\"}\n"
      "{\"type\":\"TEXT_MESSAGE_END\",\"messageId\":\"t1-msg-1-1\"}\n"
      "{\"type\":\"TOOL_CALL_START\",\"toolCallId\":\"c0\",\"toolCallName\":\"write_file\","
      "\"metadata\":{\"progress\":\"writing a.txt\"}}\n"
      "{\"type\":\"TOOL_CALL_ARGS\",\"toolCallId\":\"c0\","
      "\"delta\":\"{\\\"path\\\":\\\"a.txt\\\",\\\"n\\\":[1,{\\\"x\\\":\\\"}\\\"}]}\"}\n"
      "{\"type\":\"TOOL_CALL_END\",\"toolCallId\":\"c0\"}\n"
      "{\"type\":\"TOOL_CALL_RESULT\",\"messageId\":\"c0-result\",\"toolCallId\":\"c0\","
      "\"content\":\"{\\\"ok\\\":true}\",\"role\":\"tool\"}\n"
      "{\"type\":\"RUN_FINISHED\",\"threadId\":\"t1\",\"runId\":\"t1-run-1\"}\n";
  ck_assert_str_eq(got, want);
  free(got);
}
END_TEST

START_TEST(test_aisdk_turn) {
  char *got = translate(TS_UI_AISDK, TURN, 1);
  const char *want =
      "{\"type\":\"start\",\"messageId\":\"t1-assistant\"}\n"
      "{\"type\":\"start-step\"}\n"
      "{\"type\":\"text-start\",\"id\":\"t1-msg-1-1\"}\n"
      "{\"type\":\"text-delta\",\"id\":\"t1-msg-1-1\",\"delta\":\"Hi\"}\n"
      "{\"type\":\"text-end\",\"id\":\"t1-msg-1-1\"}\n"
      "{\"type\":\"tool-input-start\",\"toolCallId\":\"c0\",\"toolName\":\"write_file\","
      "\"title\":\"writing a.txt\"}\n"
      "{\"type\":\"tool-input-delta\",\"toolCallId\":\"c0\","
      "\"inputTextDelta\":\"{\\\"path\\\":\\\"a.txt\\\",\\\"n\\\":[1,{\\\"x\\\":\\\"}\\\"}]}\"}\n"
      "{\"type\":\"tool-input-available\",\"toolCallId\":\"c0\",\"toolName\":\"write_file\","
      "\"input\":{\"path\":\"a.txt\",\"n\":[1,{\"x\":\"}\"}]}}\n"
      "{\"type\":\"tool-output-available\",\"toolCallId\":\"c0\",\"output\":{\"ok\":true}}\n"
      "{\"type\":\"finish-step\"}\n"
      "{\"type\":\"finish\",\"finishReason\":\"tool-calls\"}\n";
  ck_assert_str_eq(got, want);
  free(got);
}
END_TEST

/* Streamed deltas are passed on and the whole arguments are not sent again; a second turn
 * closes the first run; a call without a provider id gets one made from thread, run and
 * index, the same in every frame about it. */
START_TEST(test_deltas_second_turn_made_ids) {
  const char *evs =
      EV("tool_call_started", ",\"call_id\":\"\",\"tool\":\"t\",\"index\":0")
      EV("tool_call_delta", ",\"call_id\":\"\",\"tool\":\"t\",\"index\":0,\"delta\":\"{\\\"a\\\":\"")
      EV("tool_call_delta", ",\"call_id\":\"\",\"tool\":\"t\",\"index\":0,\"delta\":\"\"")
      EV("tool_call_delta", ",\"call_id\":\"\",\"tool\":\"t\",\"index\":0,\"delta\":\"1}\"")
      EV("tool_call_ready", ",\"call_id\":\"\",\"tool\":\"t\",\"index\":0,\"arguments\":{\"a\":1}")
      EV("turn_finished", "")
      EV("tool_result", ",\"call_id\":\"\",\"tool\":\"t\",\"index\":0,\"is_error\":true,\"duration_ms\":0.5,\"error\":\"boom\"")
      EV("text_delta", ",\"text\":\"done\"")
      EV("turn_finished", ",\"stop_reason\":\"end_turn\"");
  char *got = translate(TS_UI_AGUI, evs, 0);
  const char *want =
      "{\"type\":\"RUN_STARTED\",\"threadId\":\"t1\",\"runId\":\"t1-run-1\"}\n"
      "{\"type\":\"TOOL_CALL_START\",\"toolCallId\":\"t1-call-1-0\",\"toolCallName\":\"t\"}\n"
      "{\"type\":\"TOOL_CALL_ARGS\",\"toolCallId\":\"t1-call-1-0\",\"delta\":\"{\\\"a\\\":\"}\n"
      "{\"type\":\"TOOL_CALL_ARGS\",\"toolCallId\":\"t1-call-1-0\",\"delta\":\"1}\"}\n"
      "{\"type\":\"TOOL_CALL_END\",\"toolCallId\":\"t1-call-1-0\"}\n"
      "{\"type\":\"TOOL_CALL_RESULT\",\"messageId\":\"t1-call-1-0-result\",\"toolCallId\":\"t1-call-1-0\","
      "\"content\":\"boom\",\"role\":\"tool\"}\n"
      "{\"type\":\"RUN_FINISHED\",\"threadId\":\"t1\",\"runId\":\"t1-run-1\"}\n"
      "{\"type\":\"RUN_STARTED\",\"threadId\":\"t1\",\"runId\":\"t1-run-2\"}\n"
      "{\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"t1-msg-2-1\",\"role\":\"assistant\"}\n"
      "{\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"t1-msg-2-1\",\"delta\":\"done\"}\n"
      "{\"type\":\"TEXT_MESSAGE_END\",\"messageId\":\"t1-msg-2-1\"}\n";
  ck_assert_str_eq(got, want);
  free(got);
  got = translate(TS_UI_AISDK, evs, 1);
  ck_assert_ptr_nonnull(strstr(got, "{\"type\":\"tool-output-error\",\"toolCallId\":\"t1-call-1-0\",\"errorText\":\"boom\"}\n"
                                    "{\"type\":\"finish-step\"}\n{\"type\":\"start-step\"}\n"));
  ck_assert_ptr_nonnull(strstr(got, "{\"type\":\"finish\",\"finishReason\":\"stop\"}\n"));
  free(got);
}
END_TEST

/* Errors: a broken call, a stream error (AG-UI: RUN_ERROR ends the run, the next event
 * starts a new one), and input that is not an event. */
START_TEST(test_errors) {
  const char *evs =
      EV("tool_call_started", CALL0)
      EV("tool_call_error", CALL0 ",\"code\":\"tap_incomplete\",\"error\":\"cut\"")
      EV("stream_error", ",\"code\":\"ms_truncated\",\"error\":\"ended early\"")
      EV("text_delta", ",\"text\":\"again\"");
  char *got = translate(TS_UI_AGUI, evs, 1);
  const char *want =
      "{\"type\":\"RUN_STARTED\",\"threadId\":\"t1\",\"runId\":\"t1-run-1\"}\n"
      "{\"type\":\"TOOL_CALL_START\",\"toolCallId\":\"c0\",\"toolCallName\":\"write_file\"}\n"
      "{\"type\":\"TOOL_CALL_END\",\"toolCallId\":\"c0\"}\n"
      "{\"type\":\"CUSTOM\",\"name\":\"toolstream.tool_call_error\",\"value\":{\"toolCallId\":\"c0\","
      "\"code\":\"tap_incomplete\",\"error\":\"cut\"}}\n"
      "{\"type\":\"RUN_ERROR\",\"message\":\"ended early\",\"code\":\"ms_truncated\"}\n"
      "{\"type\":\"RUN_STARTED\",\"threadId\":\"t1\",\"runId\":\"t1-run-2\"}\n"
      "{\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"t1-msg-2-1\",\"role\":\"assistant\"}\n"
      "{\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"t1-msg-2-1\",\"delta\":\"again\"}\n"
      "{\"type\":\"TEXT_MESSAGE_END\",\"messageId\":\"t1-msg-2-1\"}\n"
      "{\"type\":\"RUN_FINISHED\",\"threadId\":\"t1\",\"runId\":\"t1-run-2\"}\n";
  ck_assert_str_eq(got, want);
  free(got);
  got = translate(TS_UI_AISDK, evs, 0);
  ck_assert_ptr_nonnull(strstr(got, "{\"type\":\"tool-input-error\",\"toolCallId\":\"c0\",\"toolName\":"
                                    "\"write_file\",\"input\":null,\"errorText\":\"cut\"}\n"));
  ck_assert_ptr_nonnull(strstr(got, "{\"type\":\"error\",\"errorText\":\"ended early\"}\n"));
  free(got);

  ts_buf out;
  ts_buf_init(&out, 1 << 16);
  ts_ui *u;
  ck_assert_int_eq(ts_ui_new(TS_UI_AGUI, collect, &out, &u), TS_E_OK);
  static const char *bad[] = {"", "[]", "{", "{\"type\":\"text_delta\"}", "{\"thread\":\"t\"}",
                              "{\"type\":1,\"thread\":\"t\"}", "{\"type\":\"x\",\"thread\":\"\"}",
                              "{\"type\":\"tool_call_started\",\"thread\":\"t\",\"tool\":5}",
                              "{\"type\":\"text_delta\",\"thread\":\"t\",\"text\":\"unterminated}"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    ck_assert_msg(ts_ui_event(u, bad[i], strlen(bad[i])) == TS_E_INVAL, "accepted %s", bad[i]);
  ck_assert_uint_eq(out.len, 0);
  ck_assert_int_eq(ts_ui_new((ts_ui_format)9, collect, &out, &u) == TS_E_INVAL, 1);
  ts_ui_free(u);
  ts_buf_fini(&out);
}
END_TEST

/* Quiet replay (a resumed stream): the state advances, nothing is sent, and the frames
 * after it continue the same run and call ids. */
START_TEST(test_quiet_resume) {
  ts_buf out;
  ts_buf_init(&out, 1 << 16);
  ts_ui *u;
  ck_assert_int_eq(ts_ui_new(TS_UI_AGUI, collect, &out, &u), TS_E_OK);
  ts_ui_set_quiet(u, 1);
  const char *a = "{\"type\":\"tool_call_started\",\"thread\":\"t1\",\"call_id\":\"\",\"tool\":\"w\",\"index\":3}";
  ck_assert_int_eq(ts_ui_event(u, a, strlen(a)), TS_E_OK);
  ck_assert_uint_eq(out.len, 0);
  ts_ui_set_quiet(u, 0);
  const char *b = "{\"type\":\"tool_call_ready\",\"thread\":\"t1\",\"call_id\":\"\",\"tool\":\"w\",\"index\":3,\"arguments\":{}}";
  ck_assert_int_eq(ts_ui_event(u, b, strlen(b)), TS_E_OK);
  ck_assert_str_eq(out.p, "{\"type\":\"TOOL_CALL_ARGS\",\"toolCallId\":\"t1-call-1-3\",\"delta\":\"{}\"}\n"
                          "{\"type\":\"TOOL_CALL_END\",\"toolCallId\":\"t1-call-1-3\"}\n");
  ts_ui_free(u);
  ts_buf_fini(&out);
}
END_TEST

/* Timestamps: an event's `ts` (µs since the epoch) becomes the frame's `timestamp` (ms). */
START_TEST(test_timestamp) {
  char *got = translate(TS_UI_AGUI, "{\"type\":\"text_delta\",\"thread\":\"t\",\"ts\":1764584430123456,\"text\":\"x\"}\n", 0);
  ck_assert_ptr_nonnull(strstr(got, "\"delta\":\"x\",\"timestamp\":1764584430123}"));
  free(got);
}
END_TEST

/* The member walker: top-level members only, brackets and quotes inside strings and
 * nested values do not count, malformed punctuation is an error, never an overread. */
START_TEST(test_members) {
  const char *j = " {\"a\" : \"x\\\"}\" , \"b\":{\"a\":[1,\"]\"]},\"c\":-1.5e3,\"d\":true} ";
  ts_json_members it;
  ts_view k, v;
  ts_json_members_init(&it, j, strlen(j));
  const char *keys[] = {"a", "b", "c", "d"};
  const char *vals[] = {"\"x\\\"}\"", "{\"a\":[1,\"]\"]}", "-1.5e3", "true"};
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(ts_json_members_next(&it, &k, &v), 1);
    ck_assert_int_eq((int)k.len, (int)strlen(keys[i]));
    ck_assert(!memcmp(k.p, keys[i], k.len));
    ck_assert_int_eq((int)v.len, (int)strlen(vals[i]));
    ck_assert(!memcmp(v.p, vals[i], v.len));
  }
  ck_assert_int_eq(ts_json_members_next(&it, &k, &v), 0);
  ck_assert_int_eq(ts_json_members_next(&it, &k, &v), 0);
  ts_view m = ts_json_member(j, strlen(j), "c");
  ck_assert(m.len == 6 && !memcmp(m.p, "-1.5e3", 6));
  ck_assert_ptr_null(ts_json_member(j, strlen(j), "z").p);
  static const char *bad[] = {"", "x", "[1]", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "{\"a\":1 \"b\":2}",
                              "{\"a\":\"x}", "{\"a\":[1,2}", "{a:1}", "{\"a\":1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ts_json_members_init(&it, bad[i], strlen(bad[i]));
    int r;
    while ((r = ts_json_members_next(&it, &k, &v)) == 1) {
    }
    ck_assert_msg(r == TS_E_INVAL, "accepted %s", bad[i]);
  }
  ts_json_members_init(&it, "{}", 2);
  ck_assert_int_eq(ts_json_members_next(&it, &k, &v), 0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("ui_stream");
  TCase *tc = tcase_create("ui_stream");
  tcase_add_test(tc, test_agui_turn);
  tcase_add_test(tc, test_aisdk_turn);
  tcase_add_test(tc, test_deltas_second_turn_made_ids);
  tcase_add_test(tc, test_errors);
  tcase_add_test(tc, test_quiet_resume);
  tcase_add_test(tc, test_timestamp);
  tcase_add_test(tc, test_members);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
