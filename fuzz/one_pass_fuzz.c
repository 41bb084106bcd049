/*
 * one_pass_fuzz.c: the providers' one-pass readers against the general way.
 *
 * A provider with a one-pass reader (stream/provider.h, fast_event) must report exactly
 * what its general reader (jsmn tokens, lookups by name) reports, for every payload:
 * the reader either takes the payload whole or hands it back untouched. Byte 0 picks the
 * format; the rest is a sequence of payloads separated by LF, each fed as one SSE event
 * (with the event name before a TAB, when there is one) to two adapters, one of them
 * set to the general way. Their traces (every event with its bytes) and return codes
 * must be equal.
 *
 * Also, the scanner (stream/json_scan.h) against the token array: a document the
 * scanner reads to its end must parse (or be over the token limit). (Not the other way:
 * jsmn takes some text that is not JSON, `[1 2]`, which the scanner refuses; a reader
 * then goes the general way, as before.)
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "stream/adapter.h"
#include "stream/json_scan.h"
#include "stream/json_view.h"

static const ts_format formats[] = {TS_FORMAT_OPENAI_CHAT, TS_FORMAT_OPENAI_RESPONSES,
                                    TS_FORMAT_ANTHROPIC, TS_FORMAT_AUTO, TS_FORMAT_BEDROCK,
                                    TS_FORMAT_GEMINI};

static void put_view(ts_buf *b, ts_view v) {
  ts_buf_append_u64(b, v.len);
  ts_buf_putc(b, ':');
  if (v.len) ts_buf_append(b, v.p, v.len);
  ts_buf_putc(b, ' ');
}

static int on_event(void *user, const ts_adapter_event *ev) {
  ts_buf *b = user;
  ts_buf_append_u64(b, ev->kind);
  ts_buf_putc(b, ' ');
  ts_buf_append_u64(b, ev->index);
  ts_buf_putc(b, ' ');
  ts_buf_append_u64(b, (uint64_t)(int64_t)ev->code);
  ts_buf_putc(b, ' ');
  ts_buf_append_u64(b, ev->terminal);
  ts_buf_putc(b, ' ');
  put_view(b, ev->id);
  put_view(b, ev->name);
  put_view(b, ev->text);
  put_view(b, ev->stop_reason);
  put_view(b, ev->usage);
  put_view(b, ev->error);
  ts_buf_putc(b, '\n');
  return 0;
}

static void check_scan(const uint8_t *data, size_t len) {
  ts_json_scan s;
  ts_json_item it;
  ts_json_scan_init(&s, (const char *)data, len);
  int rc;
  while ((rc = ts_json_scan_next(&s, &it)) == 1) {
  }
  char *copy = malloc(len + 1);
  if (!copy) return;
  memcpy(copy, data, len);
  ts_jv jv;
  if (ts_jv_init(&jv, TS_ADAPTER_MAX_TOKENS) != TS_E_OK) {
    free(copy);
    return;
  }
  int jrc = ts_jv_parse(&jv, copy, len);
  /* a number or literal at the root the token array refuses (the adapters want an
   * object), the scanner takes */
  int root_scalar = 0;
  {
    size_t i = 0;
    while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r')) i++;
    root_scalar = i < len && data[i] != '{' && data[i] != '[' && data[i] != '"';
  }
  if (rc == 0 && !root_scalar && jrc != TS_E_OK && jrc != TS_E_JV_TOO_MANY_TOKENS) abort();
  ts_jv_fini(&jv);
  free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  ts_format fmt = formats[data[0] % (sizeof formats / sizeof formats[0])];
  data++;
  size--;
  check_scan(data, size);

  ts_buf ta, tb;
  ts_buf_init(&ta, 1u << 24);
  ts_buf_init(&tb, 1u << 24);
  ts_adapter *a = NULL, *b = NULL;
  if (ts_adapter_new(&a, fmt, on_event, &ta) != TS_E_OK ||
      ts_adapter_new(&b, fmt, on_event, &tb) != TS_E_OK)
    abort();
  ts_adapter_set_general(b, 1);
  char *ca = malloc(size + 1), *cb = malloc(size + 1);
  if (!ca || !cb) abort();
  memcpy(ca, data, size);
  memcpy(cb, data, size);
  size_t start = 0;
  while (start <= size) {
    const uint8_t *nl = memchr(data + start, '\n', size - start);
    size_t end = nl ? (size_t)(nl - data) : size;
    size_t name_len = 0, at = start;
    const uint8_t *tab = memchr(data + start, '\t', end - start);
    if (tab) {
      name_len = (size_t)(tab - data) - start;
      at = (size_t)(tab - data) + 1;
    }
    int ra = ts_adapter_feed_event(a, ca + start, name_len, ca + at, end - at);
    int rb = ts_adapter_feed_event(b, cb + start, name_len, cb + at, end - at);
    if (ra != rb) abort();
    start = end + 1;
  }
  if (ts_adapter_finish(a) != ts_adapter_finish(b)) abort();
  if (ta.len != tb.len || (ta.len && memcmp(ta.p, tb.p, ta.len) != 0)) abort();
  ts_adapter_free(a);
  ts_adapter_free(b);
  ts_buf_fini(&ta);
  ts_buf_fini(&tb);
  free(ca);
  free(cb);
  return 0;
}
