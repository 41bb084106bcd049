/*
 * sse_text.c: see sse_text.h.
 */
#include "support/sse_text.h"

void ts_test_rewrite_eol(sb *out, const char *in, size_t n, int eol) {
  sb_puts(out, "");
  for (size_t i = 0; i < n; i++) {
    if (eol && (in[i] == '\r' || in[i] == '\n')) {
      if (in[i] == '\r' && i + 1 < n && in[i + 1] == '\n') i++;
      sb_puts(out, eol == TS_TEST_EOL_CRLF ? "\r\n" : "\r");
    } else {
      sb_putc(out, in[i]);
    }
  }
}

size_t ts_test_event_ends(const char *s, size_t n, uint64_t *ends, size_t max) {
  size_t k = 0, i = 0;
  int nonblank = 0;
  while (i < n) {
    size_t j = i;
    while (j < n && s[j] != '\n' && s[j] != '\r') j++;
    if (j == n) break; /* an unterminated last line */
    size_t end = j + ((s[j] == '\r' && j + 1 < n && s[j + 1] == '\n') ? 2 : 1);
    if (j == i) {
      if (nonblank && k < max) ends[k++] = end;
      nonblank = 0;
    } else {
      nonblank = 1;
    }
    i = end;
  }
  return k;
}

void ts_test_chat_args_chunk(sb *out, int first, const char *escaped) {
  if (first)
    sb_printf(out,
              "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":"
              "\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"write_file\",\"arguments\":"
              "\"%s\"}}]}}]}\n\n",
              escaped);
  else
    sb_printf(out,
              "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
              "\"function\":{\"arguments\":\"%s\"}}]}}]}\n\n",
              escaped);
}
