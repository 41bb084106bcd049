/*
 * eventstream_fuzz.c: the AWS event stream framer (stream/eventstream.h) and the CRC
 * under it (base/crc32.h).
 *
 * The first 8 bytes choose chunk sizes (fuzz_split.h); the rest is fed to the framer
 * once whole (where whole messages take the one-run CRC and the header memo) and once in
 * those chunks (the CRC continued piece by piece, the prelude gathered): the two traces,
 * every message with its types, offset and payload and every error, must be the same.
 * The CRC's fast way must equal its table way on the body, whole and continued at every
 * chunk cut.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/crc32.h"
#include "base/strbuf.h"
#include "fuzz_split.h"
#include "stream/eventstream.h"

static int on_item(void *user, const ts_evs_item *it) {
  ts_buf *b = user;
  ts_buf_append_u64(b, (uint64_t)it->kind);
  ts_buf_putc(b, ' ');
  if (it->kind == TS_EVS_MESSAGE) {
    ts_fuzz_put_view(b, it->message_type);
    ts_fuzz_put_view(b, it->event_type);
    ts_fuzz_put_view(b, (ts_view){it->payload, it->payload_len});
    ts_buf_append_u64(b, it->end_offset);
  } else {
    ts_buf_append_u64(b, (uint64_t)(int64_t)it->code);
    ts_buf_putc(b, ' ');
    ts_buf_append_u64(b, it->err_offset);
  }
  ts_buf_putc(b, '\n');
  return 0;
}

enum { CAP = 4096 };

static void run(const uint8_t *body, size_t len, ts_fuzz_chunks *chunks, ts_buf *trace) {
  static char buf[CAP];
  ts_evs s;
  if (ts_evs_init(&s, buf, CAP, on_item, trace) != TS_E_OK) abort();
  size_t at = 0;
  while (at < len) {
    size_t k = chunks ? ts_fuzz_chunks_next(chunks, len - at) : len - at;
    /* each chunk in an allocation of its own size, as a read fills one: the framer may
     * hand out views into it, and ASan sees any read past it */
    char *piece = malloc(k);
    if (!piece) abort();
    memcpy(piece, body + at, k);
    if (ts_evs_feed(&s, piece, k) != TS_E_OK) abort();
    free(piece);
    at += k;
  }
  ts_buf_puts(trace, ts_evs_cut(&s) ? "cut" : "end");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 8) return 0;
  const uint8_t *body = data + 8;
  size_t len = size - 8;
  ts_buf whole, split;
  ts_buf_init(&whole, 64u << 20);
  ts_buf_init(&split, 64u << 20);
  ts_fuzz_chunks chunks;
  ts_fuzz_chunks_init(&chunks, data, 8);
  run(body, len, NULL, &whole);
  run(body, len, &chunks, &split);
  ts_fuzz_same("eventstream", &whole, &split);
  ts_buf_fini(&whole);
  ts_buf_fini(&split);
  /* the CRC, both ways, whole and continued at the same cuts */
  uint32_t want = ts_crc32_update_table(0, body, len);
  if (ts_crc32_update(0, body, len) != want) abort();
  ts_fuzz_chunks_init(&chunks, data, 8);
  uint32_t c = 0;
  for (size_t at = 0; at < len;) {
    size_t k = ts_fuzz_chunks_next(&chunks, len - at) * 7; /* pieces long enough to fold */
    if (k > len - at) k = len - at;
    c = ts_crc32_update(c, body + at, k);
    at += k;
  }
  if (c != want) abort();
  return 0;
}
