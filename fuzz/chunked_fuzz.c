/*
 * chunked_fuzz.c: the chunked-body decoder (runtime/net/chunked.h), whole against chunked.
 *
 * The gateway decodes hostile chunked bodies in both directions, and a proxy must find the
 * same end as the peer whatever the reads, so: bytes 0..7 choose chunk sizes
 * (fuzz_split.h), the rest is fed once whole and once in those chunks (each an exact-size
 * heap block, so ASan sees a read past it). Both runs must report the same outcome (done,
 * need more, or an error with its offset and reason), the same bytes consumed and the same
 * concatenated data. Besides: data runs lie inside the bytes just fed and never exceed
 * what was consumed; the offset is the bytes consumed; once done, feeding consumes nothing
 * (and stays done); once failed, feeding fails again with a reason and the offset kept.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_split.h"
#include "net/chunked.h"

typedef struct {
  ts_buf data;
  const char *lo, *hi; /* the bytes of the current feed */
} sink;

static void on_data(void *user, const char *p, size_t n) {
  sink *s = user;
  if (!n || p < s->lo || p + n > s->hi) abort(); /* a run outside what was fed */
  ts_buf_append(&s->data, p, n);
}

/* Feeds in[0..n) (in chunks, or whole when chunks is NULL) and renders the outcome. */
static void run(const uint8_t *in, size_t n, ts_fuzz_chunks *chunks, ts_buf *out) {
  ts_chunked c;
  memset(&c, 0, sizeof c);
  sink s = {.lo = NULL};
  ts_buf_init(&s.data, 64u << 20);
  size_t consumed = 0;
  int state = 1; /* 0 done, 1 need more, -1 error */
  const char *why = NULL; /* the first failure's reason */
  for (size_t at = 0; at < n || (at == 0 && n == 0);) {
    size_t k = chunks ? ts_fuzz_chunks_next(chunks, n - at) : n - at;
    char *p = malloc(k ? k : 1);
    if (k) memcpy(p, in + at, k);
    s.lo = p;
    s.hi = p + k;
    int done = 0;
    long used = ts_chunked_feed(&c, p, k, on_data, &s, &done, &why);
    if (used < 0) {
      if (!why || state == 0) abort(); /* no reason, or a failure after the end */
      state = -1;
    } else {
      if ((size_t)used > k) abort();
      if (state == 0 && (used || !done)) abort(); /* after the end: nothing, still done */
      if (!done && (size_t)used != k) abort(); /* fewer bytes only when the body ended */
      consumed += (size_t)used;
      if (c.offset != consumed) abort();
      if (done) state = 0;
    }
    free(p);
    at += k;
    if (!k || state == -1) break;
  }
  uint64_t err_at = c.offset;
  if (state == -1) { /* and again: still failed, the offset kept */
    int done = 1;
    const char *again = NULL;
    if (ts_chunked_feed(&c, "0\r\n\r\n", 5, on_data, &s, &done, &again) >= 0 || !again || done ||
        c.offset != err_at)
      abort();
  }
  if (s.data.len > (state == -1 ? err_at : consumed)) abort(); /* data is part of the input */
  ts_buf_init(out, 64u << 20);
  ts_buf_puts(out, state == 0 ? "done" : state == 1 ? "more" : "error");
  if (state != -1) { /* a failing feed consumes nothing it reports: its offset says where */
    ts_buf_puts(out, " consumed ");
    ts_buf_append_u64(out, consumed);
  } else {
    ts_buf_puts(out, " @");
    ts_buf_append_u64(out, err_at);
    ts_buf_putc(out, ' ');
    ts_buf_puts(out, why);
  }
  ts_buf_putc(out, '\n');
  ts_fuzz_put_view(out, (ts_view){s.data.p, s.data.len});
  ts_buf_fini(&s.data);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 8) return 0;
  ts_fuzz_chunks chunks;
  ts_fuzz_chunks_init(&chunks, data, 8);
  ts_buf whole, split;
  run(data + 8, size - 8, NULL, &whole);
  run(data + 8, size - 8, &chunks, &split);
  ts_fuzz_same("chunked", &whole, &split);
  ts_buf_fini(&whole);
  ts_buf_fini(&split);
  return 0;
}
