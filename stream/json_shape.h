/*
 * json_shape.h: a shape memo, for readers that see the same payload over and over with a
 * few values changed.
 *
 * A provider streams a tool call as hundreds of delta events whose payloads are the same
 * bytes each time except a few values: the argument fragment, and members nobody reads
 * (`obfuscation`, `sequence_number`, Bedrock's `p` padding). A one-pass reader
 * (json_scan.h, provider.h's fast_event) still walks every member of every payload. The
 * memo lets it walk one: after a payload P0 was read whole with a result of the simple
 * kind (one value the reader uses, the rest fixed), the reader keeps a copy of P0 and the
 * spans of it that may differ: the *used* string (the fragment) and the *ignored* scalar
 * values (members the reader never reads). A later payload P matches when, outside those
 * spans, it is byte for byte P0 (compared 16 bytes a step), and at each span it holds a
 * value of the same kind (a valid JSON string, a valid number), scanned as the scanner
 * would. Then P's reading is P0's with the used value replaced: the scanner's walk over P
 * takes exactly the steps it took over P0, because every byte that decides a step is the
 * same, and a value the reader does not read does not change what it does.
 *
 * The memo is a pure function of the bytes (and the event's name, which some readers fall
 * back on): nothing in it depends on what the reader's caller did with the reading (call
 * ids seen, calls open), so that logic runs after the match as after a full reading.
 *
 * Use, in a reader:
 *   1. ts_json_shape_match(m, text, len, name, &used): 1 when P matches; *used is P's
 *      value of the used span (between its quotes, undecoded, `escaped` set as the
 *      scanner sets it). Report as for P0 with that value.
 *   2. Else read P the normal way; while reading, note (ts_json_shape_pass) each
 *      top-level member the reader never reads whose value may change from payload to
 *      payload, and, after a miss, every other one it never reads.
 *      When the result has the simple kind, ts_json_shape_keep() copies P *before*
 *      anything is decoded in place; otherwise ts_json_shape_clear().
 * Views the reader keeps in the memo for its own result (an id it compares, say) point
 * into the copy, ts_json_shape_text(): never decode them in place (keep only strings
 * without escapes).
 *
 * Limits: payloads up to TS_JSON_SHAPE_MAX bytes and event names up to
 * TS_JSON_SHAPE_NAME_MAX are kept (bigger ones are not memoised: keep returns 0, the memo
 * is empty); at most TS_JSON_SHAPE_SPANS ignored spans. No allocation, no I/O: the memo is
 * a fixed struct that lives where the caller puts it (the adapter's scratch block); a
 * zeroed memo is empty.
 */
#ifndef TS_JSON_SHAPE_H
#define TS_JSON_SHAPE_H

#include <stddef.h>
#include <stdint.h>

#include "base/view.h"
#include "stream/json_scan.h"

/* A delta event's payload is 100-400 bytes; a payload over 1 KiB is a rare event (a
 * call's start or end echoing its arguments) and not worth a memo. */
#define TS_JSON_SHAPE_MAX 1024
#define TS_JSON_SHAPE_NAME_MAX 48
#define TS_JSON_SHAPE_SPANS 6

enum { TS_JSON_SHAPE_STRING = 1, TS_JSON_SHAPE_NUMBER };

/* What a reader notes during its pass over P0: the ignored values. */
typedef struct ts_json_shape_notes {
  uint8_t n, over; /* over: more than TS_JSON_SHAPE_SPANS were noted (nothing is kept) */
  struct {
    const char *p; /* a string's body (between its quotes) or a number's text */
    uint16_t len;
    uint8_t kind;
  } span[TS_JSON_SHAPE_SPANS];
} ts_json_shape_notes;

typedef struct {
  uint16_t off, len; /* in the copy of P0 */
  uint8_t kind;
} ts_json_shape_span;

typedef struct ts_json_shape {
  uint16_t len;      /* P0's length; 0: the memo is empty */
  uint16_t name_len; /* the event name P0 came with */
  uint8_t n_spans;
  uint8_t used;      /* the used span's index in span[] */
  uint8_t one;       /* the used span is the only one (match_value reads it by its extent) */
  uint8_t any_name;  /* set by the reader after keep: its reading of P0 does not depend on the
                      * event name (the payload names its own type), so the match ignores it */
  uint16_t tail;     /* with `one`: P0's bytes after the used span (its closing quote first) */
  ts_json_shape_span span[TS_JSON_SHAPE_SPANS + 1];
  /* The reader's own record of P0's reading apart from the used value (what the
   * reader needs to report it again); set by the reader after keep. */
  int64_t nkey;
  int kind;
  ts_view key; /* into the copy */
  /* The adapter's record of the slot that key or nkey names (ts__adapter_memo_slot):
   * valid while slot_gen equals its table's generation; 0, set by keep: none. */
  int slot;
  uint32_t slot_gen;
  char name[TS_JSON_SHAPE_NAME_MAX];
  char text[TS_JSON_SHAPE_MAX];
} ts_json_shape;

/* Notes item `it` (a top-level member's value that the reader never reads) as an ignored
 * span when it is a string or a number; literals and containers are left as fixed bytes. */
static inline void ts_json_shape_note(ts_json_shape_notes *nt, const ts_json_item *it) {
  uint8_t kind = it->type == TS_JSON_SCAN_STRING ? TS_JSON_SHAPE_STRING
                 : it->type == TS_JSON_SCAN_NUMBER ? TS_JSON_SHAPE_NUMBER : 0;
  if (!kind) return;
  if (nt->n == TS_JSON_SHAPE_SPANS || it->raw.len > UINT16_MAX) {
    nt->over = 1;
    return;
  }
  nt->span[nt->n].p = it->raw.p;
  nt->span[nt->n].len = (uint16_t)it->raw.len;
  nt->span[nt->n].kind = kind;
  nt->n++;
}

/* The notes of one full reading, in two sets. `narrow` holds the members the reader knows
 * vary per payload (ts_json_shape_pass_varies: `obfuscation`, `sequence_number`);
 * `wide` holds those and every other top-level string or number member the reader never
 * reads (ts_json_shape_pass_unread), collected only when the memo had just missed: a
 * server or a proxy that stamps each payload with a counter or a time would otherwise miss
 * the memo on every payload. The set kept (ts_json_shape_pass_notes) is wide when it was
 * collected and fits, else narrow. */
typedef struct ts_json_shape_pass {
  ts_json_shape_notes narrow, wide;
  int missed; /* the memo held a payload that this one did not match */
} ts_json_shape_pass;

/* memo: the reader's memo (may be NULL), as it was when this payload missed it. */
static inline void ts_json_shape_pass_init(ts_json_shape_pass *p, const ts_json_shape *memo) {
  p->narrow.n = p->narrow.over = p->wide.n = p->wide.over = 0;
  p->missed = memo && memo->len;
}
static inline void ts_json_shape_pass_varies(ts_json_shape_pass *p, const ts_json_item *it) {
  ts_json_shape_note(&p->narrow, it);
  ts_json_shape_note(&p->wide, it);
}
static inline void ts_json_shape_pass_unread(ts_json_shape_pass *p, const ts_json_item *it) {
  if (p->missed) ts_json_shape_note(&p->wide, it);
}
static inline const ts_json_shape_notes *ts_json_shape_pass_notes(const ts_json_shape_pass *p) {
  return p->missed && !p->wide.over ? &p->wide : &p->narrow;
}

/* Empties the memo. */
static inline void ts_json_shape_clear(ts_json_shape *m) { m->len = 0, m->one = 0; }

/* Keeps P0 = text[0..len), read with event name `name`: a copy of it, the spans noted in
 * *nt (may be NULL: none) and the used string `used` (a string's body inside text, as the
 * scanner handed it out). Returns 1; 0 when P0 cannot be kept (too long, a name too long,
 * too many spans, `used` not inside the text), and the memo is then empty. */
int ts_json_shape_keep(ts_json_shape *m, const char *text, size_t len, ts_view name,
                       const ts_json_shape_notes *nt, ts_view used);

/* 1 when P = text[0..len) with event name `name` (any name, when the reader set any_name)
 * matches the memo (see above), with
 * *used set to P's used value (views into text); 0 otherwise (always for an empty memo).
 * Reads only. */
int ts_json_shape_match(const ts_json_shape *m, const char *text, size_t len, ts_view name,
                        ts_json_scan_str *used);

/* What ts_json_shape_match_value hands back: P's used string as ts_json_shape_match does,
 * and its value decoded. buf holds a decoded value (a delta's fragment is a few dozen
 * bytes; a longer one is left to the caller). Lives on the caller's stack. */
#define TS_JSON_SHAPE_VALUE_BUF 512
typedef struct ts_json_shape_value {
  ts_json_scan_str used;
  ts_view val;
  char buf[TS_JSON_SHAPE_VALUE_BUF];
} ts_json_shape_value;

/* The same match, with P's used string also decoded in the same pass over it (the scan
 * that finds its end; json_scan_impl.h's scan_string_decode): on a match out->used is as
 * ts_json_shape_match sets it and out->val its value, a view into `text` when it holds no
 * escape (no copy), else into out->buf; out->val.p is NULL when the decoding was left to
 * the caller (the value would not fit in the buffer, or an escape the decoder refuses, a
 * surrogate out of its pair): decode out->used then, which reports the error. On no match
 * *out means nothing. Reads `text` only. (Six arguments: all in registers.) */
int ts_json_shape_match_value(const ts_json_shape *m, const char *text, size_t len, ts_view name,
                              ts_json_shape_value *out);

/* ts_json_shape_match_value's answer, to the byte, by a shorter way for a memo whose only
 * span is the used string (an Anthropic delta's `partial_json`): the fixed head and tail
 * are compared first, and the string, whose extent then follows from the payload's
 * length, is read as a known text of at most 64 bytes (one mask per kind of special
 * byte, the escapes decoded where the masks say). Any other memo, or a longer string:
 * ts_json_shape_match_value's way. (Apart so that the readers of other shapes pay
 * nothing for the question.) */
int ts_json_shape_match_one(const ts_json_shape *m, const char *text, size_t len, ts_view name,
                            ts_json_shape_value *out);
/* The same with the head compared by 32-byte blocks where the CPU has AVX2, else
 * ts_json_shape_match_one: for the adapter where it found AVX2 (ts__adapter_memo_fragment),
 * and the tests (not an API). */
int ts__json_shape_match_one_avx2(const ts_json_shape *m, const char *text, size_t len, ts_view name,
                                  ts_json_shape_value *out);

/* A view into P0 (the text given to keep) as the same bytes in the copy. */
static inline ts_view ts_json_shape_rebase(const ts_json_shape *m, const char *text0, ts_view v) {
  return (ts_view){m->text + (v.p - text0), v.len};
}

#endif /* TS_JSON_SHAPE_H */
