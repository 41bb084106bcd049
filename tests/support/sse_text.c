/*
 * sse_text.c: see sse_text.h.
 */
#include "support/sse_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "support/tempdir.h"

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

void ts_test_chat_turn(const char *dir, const char *who, int n, const char *const *calls,
                       size_t ncalls, const char *text) {
  char path[1024], id_prefix[300];
  snprintf(path, sizeof path, "%s/%s", dir, who);
  mkdir(path, 0755);
  snprintf(path, sizeof path, "%s/%s/turn-%d.sse", dir, who, n);
  snprintf(id_prefix, sizeof id_prefix, "%s_%d", who, n);
  sb b = {0};
  for (size_t i = 0; i < ncalls; i++) {
    sb_printf(&b,
              "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":%zu,"
              "\"id\":\"%s_%zu\",\"type\":\"function\",\"function\":{\"name\":\"%s\","
              "\"arguments\":\"",
              i, id_prefix, i, calls[2 * i]);
    sb_json_body(&b, calls[2 * i + 1], strlen(calls[2 * i + 1]));
    sb_puts(&b, "\"}}]}}]}\n\n");
  }
  if (text) {
    sb_puts(&b, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"");
    sb_json_body(&b, text, strlen(text));
    sb_puts(&b, "\"}}]}\n\n");
  }
  sb_printf(&b, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"%s\"}]}\n\n"
                "data: [DONE]\n\n", ncalls ? "tool_calls" : "stop");
  ts_test_put(path, sb_str(&b));
  sb_free(&b);
}
