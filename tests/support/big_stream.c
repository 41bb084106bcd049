/*
 * big_stream.c: see big_stream.h.
 */
#include "support/big_stream.h"

#include "support/evs_frame.h"

#include <string.h>

/* One unit of content each: plain text, an escape, raw UTF-8. None is longer than 12. */
static const char *const units[] = {"lorem ipsum ", "\\\"q\\\" ", "back\\\\slash ", "line\\n",
                                    "caf\\u00e9 ", "caf\xc3\xa9 ", "\xf0\x9f\x98\x80 ", "0123456789"};

void ts_test_big_args(sb *out, size_t len) {
  static const char head[] = "{\"path\":\"big.txt\",\"content\":\"";
  size_t body = len - (sizeof head - 1) - 2;
  const size_t nunits = sizeof units / sizeof units[0];
  sb period = {0}, block = {0}; /* the units once each; whole periods up to 64 KiB */
  for (size_t i = 0; i < nunits; i++) sb_puts(&period, units[i]);
  while (block.len < 65536) sb_add(&block, period.p, period.len);
  sb_puts(out, head);
  size_t n = 0;
  while (body - n >= block.len) { /* every block starts on a unit */
    sb_add(out, block.p, block.len);
    n += block.len;
  }
  for (unsigned i = 0; n < body; i++) {
    const char *u = units[i % nunits];
    size_t k = strlen(u);
    if (k > body - n) { /* the tail: plain bytes, so the length is exact */
      for (; n < body; n++) sb_putc(out, 'x');
      break;
    }
    sb_add(out, u, k);
    n += k;
  }
  sb_puts(out, "\"}");
  sb_free(&period);
  sb_free(&block);
}

/* The piece of args at [at, at + piece) moved back to end between UTF-8 characters (a
 * provider's JSON string cannot split one). */
static size_t cut_at(const char *a, size_t len, size_t at, size_t piece) {
  size_t end = at + piece >= len ? len : at + piece;
  while (end < len && end > at + 1 && ((unsigned char)a[end] & 0xC0) == 0x80) end--;
  return end;
}

/* Bedrock's binary event stream: one message per event (support/evs_frame.h). */
static void frame(sb *out, const char *etype, const sb *payload) {
  ts_test_evs_frame(out, "event", etype, sb_str(payload));
}

/* A JSON string of s[0..n), quotes included: runs of bytes that need no escape are
 * appended whole (the streams are tens of MiB; per-byte appends are slow under ASan). */
static void jstr(sb *b, const char *s, size_t n) {
  sb_putc(b, '"');
  size_t i = 0;
  while (i < n) {
    size_t j = i;
    while (j < n && s[j] != '"' && s[j] != '\\' && (unsigned char)s[j] >= 0x20) j++;
    sb_add(b, s + i, j - i);
    if (j < n) sb_json_body(b, s + j, 1);
    i = j + (j < n);
  }
  sb_putc(b, '"');
}

/* ---- the formats ------------------------------------------------------------------------ */

static void sse(sb *out, const char *event, const sb *data) {
  if (event) sb_printf(out, "event: %s\n", event);
  sb_puts(out, "data: ");
  sb_add(out, data->p, data->len);
  sb_puts(out, "\n\n");
}

enum { F_CHAT, F_RESPONSES, F_ANTHROPIC, F_GEMINI, F_OLLAMA, F_COHERE, F_BEDROCK };
static const char *const names[] = {"openai-chat", "openai-responses", "anthropic", "gemini",
                                    "ollama",      "cohere",           "bedrock"};

int ts_test_big_stream(sb *out, const char *format, const char *a, size_t len, size_t piece) {
  int fmt = -1;
  for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
    if (!strcmp(format, names[i])) fmt = i;
  if (fmt < 0) return -1;
  sb d = {0};
  int whole = fmt == F_GEMINI || fmt == F_OLLAMA;
  /* the opening */
  switch (fmt) {
    case F_CHAT:
      sb_puts(&d, "{\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":"
                  "\"assistant\",\"tool_calls\":[{\"index\":0,\"id\":\"call_big\",\"type\":"
                  "\"function\",\"function\":{\"name\":\"write\",\"arguments\":\"\"}}]}}]}");
      sse(out, NULL, &d);
      break;
    case F_RESPONSES:
      sb_puts(&d, "{\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"status\":"
                  "\"in_progress\",\"output\":[]}}");
      sse(out, "response.created", &d);
      sb_reset(&d);
      sb_puts(&d, "{\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"id\":"
                  "\"fc_1\",\"type\":\"function_call\",\"status\":\"in_progress\",\"arguments\":"
                  "\"\",\"call_id\":\"call_big\",\"name\":\"write\"}}");
      sse(out, "response.output_item.added", &d);
      break;
    case F_ANTHROPIC:
      sb_puts(&d, "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\","
                  "\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":10}}}");
      sse(out, "message_start", &d);
      sb_reset(&d);
      sb_puts(&d, "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":"
                  "\"tool_use\",\"id\":\"call_big\",\"name\":\"write\",\"input\":{}}}");
      sse(out, "content_block_start", &d);
      break;
    case F_COHERE:
      sb_puts(&d, "{\"type\":\"message-start\",\"id\":\"m1\",\"delta\":{\"message\":{\"role\":"
                  "\"assistant\"}}}");
      sse(out, "message-start", &d);
      sb_reset(&d);
      sb_puts(&d, "{\"type\":\"tool-call-start\",\"index\":0,\"delta\":{\"message\":{\"tool_calls\":"
                  "{\"id\":\"call_big\",\"type\":\"function\",\"function\":{\"name\":\"write\","
                  "\"arguments\":\"\"}}}}}");
      sse(out, "tool-call-start", &d);
      break;
    case F_BEDROCK:
      sb_puts(&d, "{\"role\":\"assistant\"}");
      frame(out, "messageStart", &d);
      sb_reset(&d);
      sb_puts(&d, "{\"contentBlockIndex\":0,\"start\":{\"toolUse\":{\"toolUseId\":\"call_big\","
                  "\"name\":\"write\"}}}");
      frame(out, "contentBlockStart", &d);
      break;
    case F_GEMINI:
      sb_puts(&d, "{\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"write\","
                  "\"args\":");
      sb_add(&d, a, len);
      sb_puts(&d, "}}],\"role\":\"model\"},\"finishReason\":\"STOP\",\"index\":0}],"
                  "\"usageMetadata\":{\"promptTokenCount\":5,\"totalTokenCount\":9}}");
      sse(out, NULL, &d);
      break;
    case F_OLLAMA:
      sb_puts(out, "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"\","
                   "\"tool_calls\":[{\"function\":{\"name\":\"write\",\"arguments\":");
      sb_add(out, a, len);
      sb_puts(out, "}}]},\"done\":false}\n{\"model\":\"m\",\"message\":{\"role\":\"assistant\","
                   "\"content\":\"\"},\"done_reason\":\"stop\",\"done\":true}\n");
      break;
    default:
      break;
  }
  /* the fragments */
  for (size_t at = 0; !whole && at < len;) {
    size_t end = cut_at(a, len, at, piece);
    sb_reset(&d);
    switch (fmt) {
      case F_CHAT:
        sb_puts(&d, "{\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":"
                    "{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":");
        jstr(&d, a + at, end - at);
        sb_puts(&d, "}}]}}]}");
        sse(out, NULL, &d);
        break;
      case F_RESPONSES:
        sb_puts(&d, "{\"type\":\"response.function_call_arguments.delta\",\"item_id\":\"fc_1\","
                    "\"output_index\":0,\"delta\":");
        jstr(&d, a + at, end - at);
        sb_puts(&d, "}");
        sse(out, "response.function_call_arguments.delta", &d);
        break;
      case F_ANTHROPIC:
        sb_puts(&d, "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
                    "\"input_json_delta\",\"partial_json\":");
        jstr(&d, a + at, end - at);
        sb_puts(&d, "}}");
        sse(out, "content_block_delta", &d);
        break;
      case F_COHERE:
        sb_puts(&d, "{\"type\":\"tool-call-delta\",\"index\":0,\"delta\":{\"message\":"
                    "{\"tool_calls\":{\"function\":{\"arguments\":");
        jstr(&d, a + at, end - at);
        sb_puts(&d, "}}}}}");
        sse(out, "tool-call-delta", &d);
        break;
      case F_BEDROCK:
        sb_puts(&d, "{\"contentBlockIndex\":0,\"delta\":{\"toolUse\":{\"input\":");
        jstr(&d, a + at, end - at);
        sb_puts(&d, "}}}");
        frame(out, "contentBlockDelta", &d);
        break;
      default:
        break;
    }
    at = end;
  }
  /* the end */
  sb_reset(&d);
  switch (fmt) {
    case F_CHAT:
      sb_puts(&d, "{\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},"
                  "\"finish_reason\":\"tool_calls\"}]}");
      sse(out, NULL, &d);
      sb_reset(&d);
      sb_puts(&d, "[DONE]");
      sse(out, NULL, &d);
      break;
    case F_RESPONSES: {
      sb item = {0};
      sb_puts(&item, "{\"id\":\"fc_1\",\"type\":\"function_call\",\"status\":\"completed\","
                     "\"arguments\":");
      jstr(&item, a, len);
      sb_puts(&item, ",\"call_id\":\"call_big\",\"name\":\"write\"}");
      sb_puts(&d, "{\"type\":\"response.function_call_arguments.done\",\"item_id\":\"fc_1\","
                  "\"output_index\":0,\"arguments\":");
      jstr(&d, a, len);
      sb_puts(&d, "}");
      sse(out, "response.function_call_arguments.done", &d);
      sb_reset(&d);
      sb_puts(&d, "{\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":");
      sb_add(&d, item.p, item.len);
      sb_puts(&d, "}");
      sse(out, "response.output_item.done", &d);
      sb_reset(&d);
      sb_puts(&d, "{\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"status\":"
                  "\"completed\",\"output\":[");
      sb_add(&d, item.p, item.len);
      sb_puts(&d, "],\"usage\":{\"input_tokens\":5,\"output_tokens\":9}}}");
      sse(out, "response.completed", &d);
      sb_free(&item);
      break;
    }
    case F_ANTHROPIC:
      sb_puts(&d, "{\"type\":\"content_block_stop\",\"index\":0}");
      sse(out, "content_block_stop", &d);
      sb_reset(&d);
      sb_puts(&d, "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":"
                  "{\"output_tokens\":9}}");
      sse(out, "message_delta", &d);
      sb_reset(&d);
      sb_puts(&d, "{\"type\":\"message_stop\"}");
      sse(out, "message_stop", &d);
      break;
    case F_COHERE:
      sb_puts(&d, "{\"type\":\"tool-call-end\",\"index\":0}");
      sse(out, "tool-call-end", &d);
      sb_reset(&d);
      sb_puts(&d, "{\"type\":\"message-end\",\"delta\":{\"finish_reason\":\"TOOL_CALL\"}}");
      sse(out, "message-end", &d);
      break;
    case F_BEDROCK:
      sb_puts(&d, "{\"contentBlockIndex\":0}");
      frame(out, "contentBlockStop", &d);
      sb_reset(&d);
      sb_puts(&d, "{\"stopReason\":\"tool_use\"}");
      frame(out, "messageStop", &d);
      break;
    default:
      break;
  }
  sb_free(&d);
  return 0;
}
