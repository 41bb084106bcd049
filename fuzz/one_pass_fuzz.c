/*
 * one_pass_fuzz.c: the providers' one-pass readers against the general way.
 *
 * A provider with a one-pass reader (stream/provider.h, fast_event) must report exactly
 * what its general reader (jsmn tokens, lookups by name) reports, for every payload:
 * the reader either takes the payload whole or hands it back untouched. Byte 0 picks the
 * format; the rest is a sequence of payloads separated by LF, each fed as one SSE event
 * (with the event name before a TAB, when there is one) to two adapters, one of them
 * set to the general way, and to a third with the one-pass readers' shape memo off
 * (stream/json_shape.h). Their traces (every event with its bytes) and return codes must
 * be equal. Byte 0's higher bits also choose to feed each payload twice in a row, or
 * the first payload (the base) again before each later one (its mutations): either way
 * the memo is warmed by a payload of the same shape before the next one comes, which is
 * where a memo that took a different payload for a match would show. A fourth adapter
 * is fed the tap's way: each event offered to ts_adapter_feed_fragment first (its match
 * with AVX2 and without, by turns), a fragment it hands back recorded as the CALL_ARGS it
 * stands for; its trace must be the same too.
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
#include "fuzz_split.h"
#include "stream/adapter.h"
#include "stream/json_scan.h"
#include "stream/json_view.h"

static const ts_format formats[] = {TS_FORMAT_OPENAI_CHAT, TS_FORMAT_OPENAI_RESPONSES,
                                    TS_FORMAT_ANTHROPIC, TS_FORMAT_AUTO, TS_FORMAT_BEDROCK,
                                    TS_FORMAT_GEMINI};

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
  ts_fuzz_put_view(b, ev->id);
  ts_fuzz_put_view(b, ev->name);
  ts_fuzz_put_view(b, ev->text);
  ts_fuzz_put_view(b, ev->stop_reason);
  ts_fuzz_put_view(b, ev->usage);
  ts_fuzz_put_view(b, ev->error);
  ts_buf_putc(b, '\n');
  return 0;
}

/* The fourth adapter's fragments, through the args function or handed back. */
static int on_args(void *user, uint32_t index, ts_view text) {
  ts_adapter_event ev;
  memset(&ev, 0, sizeof ev);
  ev.kind = TS_ADAPTER_CALL_ARGS;
  ev.index = index;
  ev.text = text;
  return on_event(user, &ev);
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
  int repeat = (data[0] / (sizeof formats / sizeof formats[0])) % 3; /* 0, twice, base again */
  data++;
  size--;
  check_scan(data, size);

  ts_buf t[4];
  ts_adapter *ad[4] = {NULL, NULL, NULL, NULL};
  char *copy = malloc(size + 1); /* each feed gets its own bytes: payloads are decoded in place */
  if (!copy) abort();
  for (int k = 0; k < 4; k++) {
    ts_buf_init(&t[k], 1u << 24);
    if (ts_adapter_new(&ad[k], fmt, on_event, &t[k]) != TS_E_OK) abort();
  }
  ts_adapter_set_general(ad[1], 1);
  ts_adapter_set_memo(ad[2], 0);
  ts_adapter_set_args_fn(ad[3], on_args);
  unsigned turn = 0;
  size_t start = 0, base[2] = {0, 0};
  while (start <= size) {
    const uint8_t *nl = memchr(data + start, '\n', size - start);
    size_t end = nl ? (size_t)(nl - data) : size;
    size_t feeds[3][2], nf = 0;
    if (start == 0) base[0] = start, base[1] = end;
    else if (repeat == 2) feeds[nf][0] = base[0], feeds[nf][1] = base[1], nf++; /* the base first */
    feeds[nf][0] = start, feeds[nf][1] = end, nf++;
    if (repeat == 1) feeds[nf][0] = start, feeds[nf][1] = end, nf++; /* and again */
    for (size_t f = 0; f < nf; f++) {
      size_t s0 = feeds[f][0], e0 = feeds[f][1], name_len = 0, at = s0;
      const uint8_t *tab = memchr(data + s0, '\t', e0 - s0);
      if (tab) {
        name_len = (size_t)(tab - data) - s0;
        at = (size_t)(tab - data) + 1;
      }
      int rc[4];
      for (int k = 0; k < 4; k++) {
        memcpy(copy + s0, data + s0, e0 - s0);
        ts_adapter_fragment fr;
        ts__adapter_set_simd(ad[k], (int)(turn++ & 1));
        if (k == 3 && ts_adapter_fragments(ad[k]) &&
            ts_adapter_feed_fragment(ad[k], copy + s0, name_len, copy + at, e0 - at, &fr)) {
          if (!fr.text.len) abort();
          if (on_args(&t[k], fr.index, fr.text)) ts_adapter_abort(ad[k]);
          rc[k] = TS_E_OK; /* nothing but the fragment: no error */
        } else {
          rc[k] = ts_adapter_feed_event(ad[k], copy + s0, name_len, copy + at, e0 - at);
        }
      }
      if (rc[0] != rc[1] || rc[2] != rc[1] || rc[3] != rc[1]) abort();
    }
    start = end + 1;
  }
  int fr[4];
  for (int k = 0; k < 4; k++) fr[k] = ts_adapter_finish(ad[k]);
  if (fr[0] != fr[1] || fr[2] != fr[1] || fr[3] != fr[1]) abort();
  for (int k = 0; k < 4; k += k == 0 ? 2 : 1)
    if (t[k].len != t[1].len || (t[k].len && memcmp(t[k].p, t[1].p, t[k].len) != 0)) abort();
  for (int k = 0; k < 4; k++) {
    ts_adapter_free(ad[k]);
    ts_buf_fini(&t[k]);
  }
  free(copy);
  return 0;
}
