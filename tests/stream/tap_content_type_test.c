/*
 * tap_content_type_test.c: the reply's HTTP Content-Type and `auto` (stream/tap.h,
 * "Content type"): ts_tap_config.content_type and ts_tap_content_type.
 *
 * Method: every case runs the tap over a corpus capture (or a stream written here) with
 * a content type, renders every event as one line (type, call index, call id, tool,
 * offset, error code and message, stop reason), and compares with what the same bytes
 * give when the format is named instead, or with a trace written here. Every case is fed
 * whole, byte by byte and in reads of every size 2..31 (support/split.h): the content
 * type is set before the first byte, so no decision may depend on where a read ends.
 *
 * What would fail without the content type: an SSE stream whose payloads look like
 * Ollama's is read as Ollama by sniffing, never under text/event-stream; an HTML page
 * without a leading `<` is an unknown format by sniffing, an HTML error under text/html;
 * an SSE body under application/json is a JSON error, not read as SSE.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/tap.h"
#include "support/sb.h"
#include "support/split.h"
#include "support/test_support.h"

typedef struct {
  ts_format format;
  const char *ct;  /* through the config */
  const char *set; /* through ts_tap_content_type after ts_tap_new */
} setup;

static int render(void *user, const ts_tap_event *e) {
  sb *o = user;
  sb_printf(o, "%s @%llu", ts_tap_type_name(e->type), (unsigned long long)e->offset);
  if (e->is_call)
    sb_printf(o, " #%u %.*s %.*s", e->index, (int)e->call_id.len, e->call_id.p, (int)e->tool.len,
              e->tool.p);
  if (e->type == TS_TAP_TOOL_CALL_READY)
    sb_printf(o, " %.*s", (int)e->arguments.len, e->arguments.p);
  if (e->type == TS_TAP_TURN_FINISHED) sb_printf(o, " '%.*s'", (int)e->stop_reason.len, e->stop_reason.p);
  if (e->type == TS_TAP_TOOL_CALL_ERROR || e->type == TS_TAP_STREAM_ERROR)
    sb_printf(o, " %s '%.*s'", ts_err_name(e->code), (int)e->error.len, e->error.p);
  sb_putc(o, '\n');
  return 0;
}

/* A tap as `su` says, rendering into `out`. */
static ts_tap *tap_for(const setup *su, sb *out) {
  ts_tap_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.format = su->format;
  cfg.content_type = su->ct;
  ts_tap *t = NULL;
  ck_assert_int_eq(ts_tap_new(&t, &cfg, render, out), TS_E_OK);
  if (su->set) ck_assert_int_eq(ts_tap_content_type(t, su->set, strlen(su->set)), TS_E_OK);
  return t;
}

static void tap_end(ts_tap *t, sb *out) {
  ts_tap_finish(t);
  sb_printf(out, "failed=%d\n", ts_tap_failed(t));
  ts_tap_free(t);
}

static void runner(void *user, ts_split *feed, sb *out) {
  ts_tap *t = tap_for(user, out);
  char *p;
  size_t n;
  while (ts_split_next(feed, &p, &n)) ts_tap_feed(t, p, n);
  tap_end(t, out);
}

/* `in` under `su`, checked at every split; the whole run's rendering in *out. */
static void trace(const char *ctx, const setup *su, const char *in, size_t len, sb *out) {
  ts_split_check(ctx, in, len, runner, (void *)su, NULL);
  sb_reset(out);
  ts_tap *t = tap_for(su, out);
  char *buf = malloc(len ? len : 1);
  ck_assert_ptr_nonnull(buf);
  memcpy(buf, in, len);
  ts_tap_feed(t, buf, len);
  tap_end(t, out);
  free(buf);
}

static char *corpus(const char *name, size_t *len) {
  char rel[256];
  snprintf(rel, sizeof rel, "tests/corpus/%s", name);
  return ts_test_read_file(ts_test_path(rel), len);
}

/* A capture under its provider's content type gives what naming the format gives. */
static void same_as_format(const char *file, const char *ct, ts_format f) {
  size_t len;
  char *in = corpus(file, &len);
  sb with = {0}, named = {0};
  setup a = {TS_FORMAT_AUTO, ct, NULL}, b = {f, NULL, NULL}, c = {TS_FORMAT_AUTO, NULL, ct};
  char ctx[300];
  snprintf(ctx, sizeof ctx, "%s with %s", file, ct);
  trace(ctx, &a, in, len, &with);
  trace(file, &b, in, len, &named);
  ck_assert_str_eq(sb_str(&with), sb_str(&named));
  snprintf(ctx, sizeof ctx, "%s with %s, set after ts_tap_new", file, ct);
  trace(ctx, &c, in, len, &with);
  ck_assert_str_eq(sb_str(&with), sb_str(&named));
  sb_free(&with);
  sb_free(&named);
  free(in);
}

START_TEST(test_bedrock) {
  same_as_format("bedrock-converse-stream-tool.bin", "application/vnd.amazon.eventstream",
                 TS_FORMAT_BEDROCK);
  same_as_format("bedrock-converse-stream-tool-truncated.bin", "application/vnd.amazon.eventstream",
                 TS_FORMAT_BEDROCK);
  same_as_format("bedrock-converse-stream-bad-crc.bin", "application/vnd.amazon.eventstream",
                 TS_FORMAT_BEDROCK);
  same_as_format("bedrock-throttling-exception.bin",
                 " Application/VND.Amazon.EventStream ; charset=binary", TS_FORMAT_BEDROCK);
}
END_TEST

START_TEST(test_ndjson) {
  same_as_format("ollama-native-two-calls.ndjson", "application/x-ndjson", TS_FORMAT_OLLAMA);
  same_as_format("ollama-native-two-calls-truncated.ndjson", "application/x-ndjson; charset=utf-8",
                 TS_FORMAT_OLLAMA);
}
END_TEST

/* text/event-stream: the SSE formats sniff as before; a payload in Ollama's shape is not
 * taken for Ollama (its stream is never SSE), where sniffing alone would. */
START_TEST(test_event_stream) {
  same_as_format("openai-chat-two-parallel-calls.sse", "text/event-stream", TS_FORMAT_OPENAI_CHAT);
  same_as_format("anthropic-text-then-tool.sse", "text/event-stream; charset=utf-8",
                 TS_FORMAT_ANTHROPIC);
  same_as_format("vertex-partial-args.sse", "text/event-stream", TS_FORMAT_GEMINI);

  static const char ollama_in_sse[] =
      "data: {\"model\":\"qwen3\",\"message\":{\"role\":\"assistant\",\"content\":\"\","
      "\"tool_calls\":[{\"function\":{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}}]},"
      "\"done\":false}\n\n"
      "data: {\"model\":\"qwen3\",\"message\":{\"role\":\"assistant\",\"content\":\"\"},"
      "\"done\":true,\"done_reason\":\"stop\"}\n\n";
  size_t len = strlen(ollama_in_sse);
  sb sniffed = {0}, typed = {0};
  setup none = {TS_FORMAT_AUTO, NULL, NULL}, sse = {TS_FORMAT_AUTO, "text/event-stream", NULL};
  trace("ollama-shaped SSE, sniffed", &none, ollama_in_sse, len, &sniffed);
  ck_assert_msg(strstr(sb_str(&sniffed), "tool_call_ready"), "sniffing reads it as Ollama: %s",
                sb_str(&sniffed));
  trace("ollama-shaped SSE, text/event-stream", &sse, ollama_in_sse, len, &typed);
  char want[512];
  snprintf(want, sizeof want,
           "stream_error @%zu ms_unknown_format 'cannot tell the stream's format (Content-Type: "
           "text/event-stream); the reply begins: data: {\"model\":\"qwen3\",\"message\":{\"role\":"
           "\"assistant\",\"content\":\"...'\nfailed=1\n",
           len);
  ck_assert_str_eq(sb_str(&typed), want);
  sb_free(&sniffed);
  sb_free(&typed);
}
END_TEST

/* application/json: an array of events (Gemini without alt=sse) or one body (an error). */
START_TEST(test_json) {
  same_as_format("gemini-array-two-function-calls.json", "application/json; charset=UTF-8",
                 TS_FORMAT_GEMINI);
  same_as_format("gemini-array-two-function-calls-truncated.json", "application/json",
                 TS_FORMAT_GEMINI);
  size_t len;
  char *in = corpus("openai-error-body.json", &len);
  sb out = {0};
  setup js = {TS_FORMAT_AUTO, "application/json", NULL};
  trace("openai error body, application/json", &js, in, len, &out);
  ck_assert_msg(strstr(sb_str(&out), "stream_error") &&
                    strstr(sb_str(&out), "ms_provider 'Incorrect API key provided"),
                "%s", sb_str(&out));
  free(in);
  /* an SSE body under application/json is not read as SSE: a JSON error */
  static const char sse[] = "data: {\"choices\":[]}\n\ndata: [DONE]\n\n";
  trace("SSE under application/json", &js, sse, strlen(sse), &out);
  ck_assert_msg(!strncmp(sb_str(&out), "stream_error @1 jseq_syntax", 27), "%s", sb_str(&out));
  ck_assert_msg(strstr(sb_str(&out), "failed=1\n"), "%s", sb_str(&out));
  sb_free(&out);
}
END_TEST

/* text/html: an error that says HTML, whatever the body starts with and whatever the
 * format; without the content type a page that does not start with '<' is only an
 * unknown format. */
START_TEST(test_html) {
  size_t len;
  char *in = corpus("proxy-error-page.html", &len);
  sb out = {0};
  setup html = {TS_FORMAT_AUTO, "text/html; charset=utf-8", NULL};
  trace("proxy error page, text/html", &html, in, len, &out);
  ck_assert_msg(strstr(sb_str(&out), "ms_not_stream 'the reply is an HTML page (Content-Type: "
                                     "text/html), not a model stream; it begins: "),
                "%s", sb_str(&out));
  ck_assert_msg(strstr(sb_str(&out), "failed=1\n"), "%s", sb_str(&out));
  free(in);

  static const char text[] = "Service Unavailable: the upstream is down\n";
  setup sniff = {TS_FORMAT_AUTO, NULL, NULL}, chat = {TS_FORMAT_OPENAI_CHAT, "TEXT/HTML", NULL};
  trace("plain text, sniffed", &sniff, text, strlen(text), &out);
  ck_assert_msg(strstr(sb_str(&out), "ms_unknown_format"), "%s", sb_str(&out));
  trace("plain text, text/html", &html, text, strlen(text), &out);
  char want[300];
  snprintf(want, sizeof want,
           "stream_error @%zu ms_not_stream 'the reply is an HTML page (Content-Type: text/html), "
           "not a model stream; it begins: Service Unavailable: the upstream is down '\nfailed=1\n",
           strlen(text));
  ck_assert_str_eq(sb_str(&out), want);
  trace("plain text, text/html, --format openai-chat", &chat, text, strlen(text), &out);
  snprintf(want, sizeof want,
           "stream_error @%zu ms_not_stream 'the reply is an HTML page (Content-Type: TEXT/HTML), "
           "not a model stream; it begins: Service Unavailable: the upstream is down '\nfailed=1\n",
           strlen(text));
  ck_assert_str_eq(sb_str(&out), want);
  trace("empty, text/html", &html, "", 0, &out);
  ck_assert_str_eq(sb_str(&out), "stream_error @0 ms_not_stream 'the reply is an HTML page "
                                 "(Content-Type: text/html), not a model stream: it is empty'\n"
                                 "failed=1\n");
  sb_free(&out);
}
END_TEST

/* Other media types, and an empty one, leave the decision to the first bytes; a named
 * format is not overridden by a provider's media type. */
START_TEST(test_other) {
  same_as_format("openai-chat-two-parallel-calls.sse", "text/plain", TS_FORMAT_OPENAI_CHAT);
  same_as_format("bedrock-converse-stream-tool.bin", "application/octet-stream", TS_FORMAT_BEDROCK);
  same_as_format("gemini-sse-two-function-calls.sse", "", TS_FORMAT_GEMINI);
  size_t len;
  char *in = corpus("openai-chat-two-parallel-calls.sse", &len);
  sb a = {0}, b = {0};
  setup named = {TS_FORMAT_OPENAI_CHAT, "application/x-ndjson", NULL}, plain = {TS_FORMAT_OPENAI_CHAT, NULL, NULL};
  trace("chat named, x-ndjson", &named, in, len, &a);
  trace("chat named", &plain, in, len, &b);
  ck_assert_str_eq(sb_str(&a), sb_str(&b));
  sb_free(&a);
  sb_free(&b);
  free(in);
}
END_TEST

START_TEST(test_media) {
  static const struct {
    const char *ct;
    int want;
  } rows[] = {
      {"text/event-stream", TS_TAP_MEDIA_STREAM},
      {" Text/Event-Stream ; charset=utf-8", TS_TAP_MEDIA_STREAM},
      {"application/vnd.amazon.eventstream", TS_TAP_MEDIA_STREAM},
      {"application/x-ndjson", TS_TAP_MEDIA_STREAM},
      {"application/json; charset=UTF-8", TS_TAP_MEDIA_JSON},
      {"text/html;charset=utf-8", TS_TAP_MEDIA_HTML},
      {"text/event-streamx", TS_TAP_MEDIA_OTHER},
      {"text/plain", TS_TAP_MEDIA_OTHER},
      {"", TS_TAP_MEDIA_OTHER},
      {";text/html", TS_TAP_MEDIA_OTHER},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    ck_assert_msg(ts_tap_media(rows[i].ct, strlen(rows[i].ct)) == rows[i].want, "%s", rows[i].ct);
  ck_assert_int_eq(ts_tap_media(NULL, 0), TS_TAP_MEDIA_OTHER);
  ck_assert_int_eq(ts_tap_media("text/html", 4), TS_TAP_MEDIA_OTHER); /* "text": only len bytes */
}
END_TEST

START_TEST(test_api) {
  ts_tap_config cfg;
  memset(&cfg, 0, sizeof cfg);
  sb out = {0};
  ts_tap *t = NULL;
  ck_assert_int_eq(ts_tap_new(&t, &cfg, render, &out), TS_E_OK);
  ck_assert_int_eq(ts_tap_content_type(NULL, "text/event-stream", 17), TS_E_INVAL);
  ck_assert_int_eq(ts_tap_content_type(t, NULL, 3), TS_E_INVAL);
  ck_assert_int_eq(ts_tap_content_type(t, "text/event-stream", 17), TS_E_OK);
  ck_assert_int_eq(ts_tap_content_type(t, "text/html", 9), TS_E_INVAL); /* set already */
  ts_tap_free(t);
  /* too late once a byte was fed */
  ck_assert_int_eq(ts_tap_new(&t, &cfg, render, &out), TS_E_OK);
  char sp[] = " ";
  ts_tap_feed(t, sp, 1);
  ck_assert_int_eq(ts_tap_content_type(t, "text/event-stream", 17), TS_E_INVAL);
  ts_tap_free(t);
  /* raw input has no content type */
  cfg.format = TS_FORMAT_RAW;
  cfg.raw_tool = "x";
  ck_assert_int_eq(ts_tap_new(&t, &cfg, render, &out), TS_E_OK);
  ck_assert_int_eq(ts_tap_content_type(t, "application/json", 16), TS_E_INVAL);
  ts_tap_free(t);
  /* the config's string is read by ts_tap_new only */
  char ct[] = "application/vnd.amazon.eventstream";
  memset(&cfg, 0, sizeof cfg);
  cfg.content_type = ct;
  ck_assert_int_eq(ts_tap_new(&t, &cfg, render, &out), TS_E_OK);
  memset(ct, 'x', sizeof ct - 1);
  size_t len;
  char *in = corpus("bedrock-converse-stream-tool.bin", &len);
  ts_tap_feed(t, in, len);
  ts_tap_finish(t);
  ck_assert_int_eq(ts_tap_failed(t), 0);
  ck_assert_msg(strstr(sb_str(&out), "tool_call_ready"), "%s", sb_str(&out));
  ts_tap_free(t);
  free(in);
  sb_free(&out);
}
END_TEST

int main(void) {
  Suite *s = suite_create("tap_content_type");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_bedrock);
  tcase_add_test(tc, test_ndjson);
  tcase_add_test(tc, test_event_stream);
  tcase_add_test(tc, test_json);
  tcase_add_test(tc, test_html);
  tcase_add_test(tc, test_other);
  tcase_add_test(tc, test_media);
  tcase_add_test(tc, test_api);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
