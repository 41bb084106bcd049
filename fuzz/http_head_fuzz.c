/*
 * http_head_fuzz.c: the gateway's request parsing (runtime/net/http_head.h) on hostile
 * bytes. The head's end is found in fuzzer-chosen reads (resumable: the same length as
 * found whole), then the head is parsed and framed. Anything accepted must keep the
 * promises the gateway relies on against smuggling: HTTP/1.0 or 1.1, at most one framing
 * (a Transfer-Encoding request is chunked, never also Content-Length), fields inside the
 * head.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_split.h"
#include "net/http_head.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 8) return 0;
  ts_fuzz_chunks chunks;
  ts_fuzz_chunks_init(&chunks, data, 8);
  size_t n = size - 8;
  char *p = malloc(n ? n : 1); /* exact size: ASan sees any overread */
  memcpy(p, data + 8, n);
  size_t resume = 0, whole_resume = 0, end = 0;
  size_t whole = ts_http_head_end(p, n, &whole_resume);
  for (size_t have = 0; have < n && !end;) { /* the bytes arriving in reads */
    have += ts_fuzz_chunks_next(&chunks, n - have);
    end = ts_http_head_end(p, have, &resume);
  }
  if (end != whole) abort(); /* the head's end must not depend on the reads */
  if (whole) {
    static ts_http_head h;
    int status = 0;
    const char *why = NULL;
    if (ts_http_parse_request(p, whole, &h, &status, &why) == 0) {
      if (h.minor != 0 && h.minor != 1) abort();
      for (size_t i = 0; i < h.nfields; i++)
        if (h.fields[i].name.p < p || h.fields[i].value.p + h.fields[i].value.len > p + whole) abort();
      ts_http_framing f;
      if (ts_http_request_framing(&h, &f, &status, &why) == 0) {
        ts_view te;
        if (ts_http_field_get(&h, "transfer-encoding", &te) && f.kind != TS_HTTP_BODY_CHUNKED) abort();
        if (ts_http_field_get(&h, "transfer-encoding", &te) && h.minor == 0) abort();
      }
    }
    (void)ts_http_parse_response(p, whole, &h, &why);
  }
  free(p);
  return 0;
}
