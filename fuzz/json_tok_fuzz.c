/*
 * json_tok_fuzz.c: the streaming JSON tokenizer, whole against chunked.
 *
 * Bytes 0..7 choose the chunk sizes, the rest is the document. Both runs must give the
 * same tokens (string fragments merged: their boundaries follow the reads), the same
 * error at the same offset, and the same offset after it (issue 18: an error's offset
 * must not depend on chunking, nor the offset reported after a sticky error). A token
 * the error cut short may have reported its first fragments in one run (they were valid
 * when they were read) and not in the other: that unfinished token is left out.
 *
 * Six runs: whole; in the chosen chunks (1..32 bytes); in chunks three times as long
 * (3..96: long enough for the 32-byte string scan inside a chunk); whole with the
 * 32-byte (AVX2) scan turned off, so the 16-byte scan is checked against it too; and
 * whole against the chosen chunks again under a depth limit of 1 to 8 (from byte 7),
 * so that the limit is met where the grammar short path opens a container (json_tok.c,
 * gram_run) as well as in the machine.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_split.h"
#include "stream/json_tok.h"

typedef struct {
  ts_buf out;
  int in_fragment;
} trace;

static int on_token(void *user, const ts_json_token *tok) {
  trace *t = user;
  ts_buf *b = &t->out;
  /* The fragment discipline, in every run: TS_JSON_FIRST on a token's first fragment and
   * on no other (the tokenizer keeps "nothing reported yet" for a string in its state
   * word between feeds, json_tok.c MODE_FIRST). */
  if (!t->in_fragment != !!(tok->flags & TS_JSON_FIRST)) abort();
  /* One line per token: "kind depth @offset bytes"; the fragments of one key, string or
   * number are merged, since only their bytes (not their boundaries) must not depend on
   * the chunking. */
  if (t->in_fragment && !(tok->flags & TS_JSON_FIRST) && b->len) {
    b->len--; /* continue the open line */
  } else {
    ts_buf_append_u64(b, tok->kind);
    ts_buf_putc(b, ' ');
    ts_buf_append_u64(b, tok->depth);
    ts_buf_puts(b, " @");
    ts_buf_append_u64(b, tok->offset);
    ts_buf_putc(b, ' ');
  }
  ts_buf_append(b, tok->text, tok->len);
  ts_buf_putc(b, '\n');
  t->in_fragment = !(tok->flags & TS_JSON_LAST);
  return 0;
}

static void run(const uint8_t *in, size_t n, ts_fuzz_chunks *chunks, size_t scale,
                uint32_t max_depth, trace *t) {
  ts_buf_init(&t->out, 64u << 20);
  t->in_fragment = 0;
  ts_json_tok tok;
  ts_json_tok_init(&tok, max_depth, on_token, t);
  for (size_t at = 0; at < n;) {
    size_t k = chunks ? ts_fuzz_chunks_next(chunks, n - at) * scale : n - at;
    if (k > n - at) k = n - at;
    (void)ts_json_tok_feed(&tok, (const char *)in + at, k); /* on after an error, as a caller may */
    at += k;
  }
  ts_json_tok_finish(&tok);
  if (ts_json_tok_error(&tok) && t->in_fragment) { /* drop the unfinished token's line */
    while (t->out.len && t->out.p[t->out.len - 1] == '\n') t->out.len--;
    while (t->out.len && t->out.p[t->out.len - 1] != '\n') t->out.len--;
  }
  ts_buf_puts(&t->out, ts_err_name(ts_json_tok_error(&tok)));
  ts_buf_puts(&t->out, " @");
  ts_buf_append_u64(&t->out, ts_json_tok_error_offset(&tok));
  ts_buf_puts(&t->out, " pos ");
  ts_buf_append_u64(&t->out, ts_json_tok_offset(&tok));
  ts_buf_putc(&t->out, '\n');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 8) return 0;
  ts_fuzz_chunks chunks;
  ts_fuzz_chunks_init(&chunks, data, 8);
  trace whole, split, longer, narrow;
  run(data + 8, size - 8, NULL, 1, 64, &whole);
  run(data + 8, size - 8, &chunks, 1, 64, &split);
  ts_fuzz_chunks_init(&chunks, data, 8);
  run(data + 8, size - 8, &chunks, 3, 64, &longer);
  const int wide = ts__json_tok_wide(-1);
  ts__json_tok_wide(0);
  run(data + 8, size - 8, NULL, 1, 64, &narrow);
  ts__json_tok_wide(wide);
  ts_fuzz_same("json_tok", &whole.out, &split.out);
  ts_fuzz_same("json_tok (chunks x3)", &whole.out, &longer.out);
  ts_fuzz_same("json_tok (16-byte scan)", &whole.out, &narrow.out);
  {
    const uint32_t max_depth = 1u + (data[7] & 7u);
    trace whole_d, split_d;
    run(data + 8, size - 8, NULL, 1, max_depth, &whole_d);
    ts_fuzz_chunks_init(&chunks, data, 8);
    run(data + 8, size - 8, &chunks, 1, max_depth, &split_d);
    ts_fuzz_same("json_tok (depth limit)", &whole_d.out, &split_d.out);
    ts_buf_fini(&whole_d.out);
    ts_buf_fini(&split_d.out);
  }
  ts_buf_fini(&whole.out);
  ts_buf_fini(&split.out);
  ts_buf_fini(&longer.out);
  ts_buf_fini(&narrow.out);
  return 0;
}
