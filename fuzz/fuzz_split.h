/*
 * fuzz_split.h: what every fuzz target of an incremental component shares.
 *
 * A target reads its input as a small header and a body: the header's bytes choose the
 * chunk sizes (so the fuzzer explores chunk boundaries as well as content), the body is
 * fed once whole and once in those chunks, and the two runs must give the same trace.
 * A difference is a bug (split invariance, docs/architecture.md): the target aborts,
 * which libFuzzer reports with the input that showed it.
 *
 * Traces are plain byte strings built with base/strbuf; the component's own target says
 * how an event becomes a line (merging fragments whose boundaries depend on chunking).
 */
#ifndef TS_FUZZ_SPLIT_H
#define TS_FUZZ_SPLIT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "base/view.h"

/* Chunk sizes 1..32 drawn from `seed` (8 bytes), cycling; deterministic per input. */
typedef struct {
  uint8_t sizes[8];
  unsigned i;
} ts_fuzz_chunks;

static inline void ts_fuzz_chunks_init(ts_fuzz_chunks *c, const uint8_t *seed, size_t n) {
  for (unsigned i = 0; i < 8; i++) c->sizes[i] = (uint8_t)(1 + (i < n ? seed[i] % 32 : i));
  c->i = 0;
}

static inline size_t ts_fuzz_chunks_next(ts_fuzz_chunks *c, size_t left) {
  size_t k = c->sizes[c->i++ % 8];
  return k < left ? k : left;
}

/* Aborts with both traces when they differ. */
static inline void ts_fuzz_same(const char *what, const ts_buf *whole, const ts_buf *split) {
  if (whole->len == split->len && !memcmp(whole->p, split->p, whole->len)) return;
  fprintf(stderr, "%s: chunked input gave other events\n--- whole\n%.*s\n--- chunked\n%.*s\n", what,
          (int)whole->len, whole->p, (int)split->len, split->p);
  abort();
}

/* A view into a trace as "LEN:BYTES " (length first, so no byte of it can be confused
 * with the separator). */
static inline void ts_fuzz_put_view(ts_buf *b, ts_view v) {
  ts_buf_append_u64(b, v.len);
  ts_buf_putc(b, ':');
  if (v.len) ts_buf_append(b, v.p, v.len);
  ts_buf_putc(b, ' ');
}

#endif /* TS_FUZZ_SPLIT_H */
