/*
 * sse_fuzz.c: the SSE framer, whole against chunked.
 *
 * Byte 0 picks a small data buffer (so the limit errors are reached by short inputs) and
 * whether events keep only a head by name (ts_sse_set_keep: a name starting with 'a' keeps
 * nothing, 'b' three bytes) and which run scans line ends without AVX2 (ts__sse_set_simd:
 * the other uses the CPU's choice) and whether the chunked run starts with no data buffer
 * and grows it on demand (ts_sse_set_grow, to exactly what is asked: an exact-size block,
 * so a write past the room asked for is caught), bytes 1..8 the chunk sizes, the rest is
 * the stream.
 * Both runs must report the same events (name, data, id, cut, end offset) and errors
 * (code, offset), and the same retry.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_split.h"
#include "stream/sse.h"

static int on_item(void *user, const ts_sse_event *ev) {
  ts_buf *b = user;
  if (ev->kind == TS_SSE_ERROR) {
    ts_buf_puts(b, "error ");
    ts_buf_puts(b, ts_err_name(ev->code));
    ts_buf_puts(b, " @");
    ts_buf_append_u64(b, ev->err_offset);
  } else {
    ts_buf_puts(b, "event @");
    ts_buf_append_u64(b, ev->end_offset);
    ts_buf_putc(b, ' ');
    ts_buf_append_json_string(b, ev->name, ev->name_len);
    ts_buf_putc(b, ' ');
    ts_buf_append_json_string(b, ev->id, ev->id_len);
    ts_buf_putc(b, ' ');
    ts_buf_append_json_string(b, ev->data, ev->data_len);
    if (ev->cut) ts_buf_puts(b, " cut");
  }
  ts_buf_putc(b, '\n');
  return 0;
}

static size_t keep_by_name(void *user, const char *name, size_t len) {
  (void)user, (void)len;
  return name[0] == 'a' ? 0 : name[0] == 'b' ? 3 : TS_SSE_KEEP_ALL;
}

static char *grown;

static char *exact_grow(void *user, char *buf, size_t need, size_t *size) {
  (void)user;
  if (buf != grown || need <= *size) abort(); /* against the hook's contract */
  char *b = realloc(buf, need);
  if (!b) return NULL;
  grown = b;
  *size = need;
  return b;
}

static void run(const uint8_t *in, size_t n, size_t cap, int keep, int simd, int grow,
                ts_fuzz_chunks *chunks, ts_buf *out) {
  ts_buf_init(out, 64u << 20);
  char none = 0;
  char *data = grow ? &none : malloc(cap ? cap : 1);
  char *buf = malloc(n ? n : 1); /* the framer may write into the chunks it is fed */
  memcpy(buf, in, n);
  ts_sse s;
  if (ts_sse_init(&s, data, cap, 0, on_item, out)) abort();
  grown = NULL;
  if (grow && ts_sse_set_grow(&s, 0, exact_grow, NULL)) abort();
  ts__sse_set_simd(&s, simd);
  if (keep) ts_sse_set_keep(&s, keep_by_name, NULL);
  for (size_t at = 0; at < n;) {
    size_t k = chunks ? ts_fuzz_chunks_next(chunks, n - at) : n - at;
    ts_sse_feed(&s, buf + at, k);
    at += k;
  }
  ts_sse_finish(&s);
  ts_buf_puts(out, "retry ");
  ts_buf_append_u64(out, (uint64_t)ts_sse_retry(&s));
  ts_buf_putc(out, '\n');
  free(buf);
  if (grow) free(grown);
  else free(data);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 9) return 0;
  static const size_t caps[] = {0, 1, 7, 64, 4096};
  size_t cap = caps[data[0] % 5];
  int keep = (data[0] / 5) & 1;
  int simd = (data[0] / 10) & 1; /* the whole run's scan; the chunked run has the other */
  ts_fuzz_chunks chunks;
  ts_fuzz_chunks_init(&chunks, data + 1, 8);
  ts_buf whole, split;
  int grow = (data[0] / 20) & 1;
  run(data + 9, size - 9, cap, keep, simd, 0, NULL, &whole);
  run(data + 9, size - 9, cap, keep, !simd, grow, &chunks, &split);
  ts_fuzz_same("sse", &whole, &split);
  ts_buf_fini(&whole);
  ts_buf_fini(&split);
  return 0;
}
