/*
 * json_seq.h: a byte stream of JSON values, framed one complete value at a time.
 *
 * Not every model reply is SSE. Some providers stream newline-delimited JSON (Ollama's
 * native /api/chat: one object per line), some one JSON array whose elements arrive over
 * time (Gemini's streamGenerateContent without alt=sse: `[{...}\r\n,{...}\r\n]`), and an
 * error reply is often one plain JSON body, pretty-printed over many lines. This framer
 * does for them what sse.h does for SSE: it finds where each value ends, incrementally,
 * and hands the value's bytes over whole, so that the adapter parses each exactly once.
 *
 * Modes
 *   values  a sequence of top-level objects or arrays, separated by any JSON whitespace
 *           (NDJSON, concatenated JSON, one body). Anything else at the top level is an
 *           error (TS_E_JSEQ_SYNTAX).
 *   array   one top-level array: `[`, then elements separated by commas, then `]`; each
 *           element (an object or array) is one item. Data after `]` is
 *           TS_E_JSEQ_TRAILING.
 *
 * How far it checks: only the framing (brackets, strings and their escapes, the commas
 * of the array). A value's own grammar is the parser's business downstream; a bracket
 * inside a string never counts.
 *
 * Offsets: an item's `end_offset` is the number of bytes fed up to and including the
 * value's last byte (its closing bracket). They do not depend on chunking.
 *
 * Errors are sticky: after one (reported once through the callback), nothing more is
 * framed and the rest of the input is ignored, since a JSON stream cannot be resynced
 * reliably. One exception: a value over the buffer's capacity (TS_E_JSEQ_TOO_LARGE) is
 * reported and skipped, and framing goes on after it.
 *
 * Memory: the caller's buffer holds the value being framed (its capacity is the limit);
 * the framer itself is a small struct, zero-filled plus ts_json_seq_init's settings.
 * Nothing is allocated. A caller that would rather not reserve the limit up front gives
 * a smaller buffer (even none) and a grow hook (ts_json_seq_set_grow), asked for more
 * room, never past cap, when the next byte of a value does not fit; a refused growth is
 * that value's error TS_E_JSEQ_TOO_LARGE's twin, TS_E_NOMEM (err_offset: the byte that
 * did not fit): reported, the value skipped, framing going on after it.
 */
#ifndef TS_JSON_SEQ_H
#define TS_JSON_SEQ_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/grow.h"

typedef enum { TS_JSON_SEQ_VALUE = 1, TS_JSON_SEQ_ERROR } ts_json_seq_kind;

typedef struct {
  int kind;            /* ts_json_seq_kind */
  char *data;          /* VALUE: the value's bytes, in the caller's buffer (writable) */
  size_t len;
  uint64_t end_offset; /* VALUE: see "Offsets" */
  int code;            /* ERROR: a ts_err */
  uint64_t err_offset; /* ERROR: the offset of the offending byte */
} ts_json_seq_item;

/* Return 0 to go on; nonzero stops the framer (feed returns TS_E_ABORTED, sticky). The
 * item's data is valid during the callback only. */
typedef int (*ts_json_seq_cb)(void *user, const ts_json_seq_item *it);

/* Grow hook (ts_json_seq_set_grow) of the value buffer, up to cap: base/grow.h's
 * contract. */
typedef ts_grow_fn ts_json_seq_grow_fn;

typedef struct {
  ts_json_seq_cb cb;
  void *user;
  char *buf;
  size_t cap, len;
  uint64_t pos;       /* bytes fed */
  uint32_t depth;     /* brackets open in the current value */
  uint8_t array;      /* mode */
  uint8_t state;      /* internal */
  uint8_t in_str, esc, skipping, aborted;
  int err;            /* the sticky error */
  size_t room;        /* bytes buf holds now (cap without a grow hook) */
  ts_json_seq_grow_fn grow;
  void *grow_user;
} ts_json_seq;

/* Sets the framer up over buf[0..cap) (cap >= 2). Returns TS_E_OK or TS_E_INVAL. */
int ts_json_seq_init(ts_json_seq *s, int array, char *buf, size_t cap, ts_json_seq_cb cb,
                     void *user);

/* Before the first feed: buf (ts_json_seq_init's) holds only `size` bytes (<= cap; with 0
 * it is never read or written), and `grow` makes room up to cap. The buffer held at the
 * end is the caller's to free (its hook saw every new one). TS_E_OK, or TS_E_INVAL for a
 * NULL grow, a size over cap or a framer already fed. */
int ts_json_seq_set_grow(ts_json_seq *s, size_t size, ts_json_seq_grow_fn grow, void *user);

/* Feeds the next len bytes; reports every value they complete. Returns TS_E_OK (also
 * after reporting an error: it is an item, and the rest is ignored), TS_E_ABORTED, or
 * TS_E_INVAL for a NULL buf with len > 0. */
int ts_json_seq_feed(ts_json_seq *s, const char *buf, size_t len);

/* End of input: returns nonzero when the input ended inside a value, or (array mode)
 * before the array's closing bracket (or before it began): the reply was cut. Reports
 * nothing. */
int ts_json_seq_cut(const ts_json_seq *s);

#endif /* TS_JSON_SEQ_H */
