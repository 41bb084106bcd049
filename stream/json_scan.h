/*
 * json_scan.h: one strict pass over a whole JSON document, handing out its values in
 * order, for readers that want a few members of a payload and none of the rest.
 *
 * A provider's SSE payload is a few hundred bytes of envelope around a few bytes that
 * matter (an argument fragment, a call id). Tokenizing all of it into an array and then
 * looking members up by name (json_view.h) costs several times the bytes; this scanner
 * walks the text once, checks the whole grammar as it goes (RFC 8259: strings with valid
 * escapes, numbers, literals, punctuation; exactly one value), and hands each value to
 * the caller as it passes: key, type, raw text. A caller that wants nothing inside a
 * container skips it (still checked, never handed out item by item).
 *
 * Pull interface: ts_json_scan_next returns the next item: a value (a member's value in
 * an object with its key; an element of an array without one; the root) or the end of a
 * container. After a container's start item, ts_json_scan_next goes into it, while
 * ts_json_scan_skip passes over it.
 *
 * What is not checked: UTF-8 (bytes >= 0x80 pass as they are; the argument tokenizer
 * checks what it reads) and raw control characters inside strings (passed, as jsmn does);
 * a NUL byte anywhere is an error. The caller decodes the strings it uses
 * (json_unescape.h); `escaped` says whether a string holds any backslash.
 *
 * Limits: containers nest at most TS_JSON_SCAN_MAX_DEPTH deep; deeper is an error
 * (TS_E_LIMIT), so a reader can fall back to a parser without the limit.
 *
 * No allocation, no I/O; the struct lives on the caller's stack. Views point into the
 * text, valid while it is.
 */
#ifndef TS_JSON_SCAN_H
#define TS_JSON_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/view.h"

#define TS_JSON_SCAN_MAX_DEPTH 64

typedef enum {
  TS_JSON_SCAN_STRING = 1,
  TS_JSON_SCAN_NUMBER,
  TS_JSON_SCAN_TRUE,
  TS_JSON_SCAN_FALSE,
  TS_JSON_SCAN_NULL,
  TS_JSON_SCAN_OBJECT, /* a container's start: next() goes in, skip() passes over */
  TS_JSON_SCAN_ARRAY,
  TS_JSON_SCAN_END,    /* the end of the container at `depth` */
} ts_json_scan_type;

typedef struct {
  ts_json_scan_type type;
  unsigned depth;   /* 0 for the root, 1 for its members or elements, ... */
  ts_view key;      /* a member's raw key (between its quotes, undecoded); {NULL, 0} else */
  ts_view raw;      /* the value's text: a string between its quotes (undecoded), a
                     * number or literal as written; a container's start: its first byte;
                     * END: the whole container, brackets included */
  int escaped;      /* a string (or key) with a backslash in it */
  int key_escaped;
} ts_json_item;

typedef struct {
  const char *p, *end;
  const char *open[TS_JSON_SCAN_MAX_DEPTH]; /* each open container's first byte */
  uint64_t arrays;  /* bit d set: the container at depth d+1 is an array */
  unsigned depth;   /* open containers */
  uint8_t in_array; /* the innermost open container is an array */
  uint8_t state;    /* internal */
} ts_json_scan;

/* Starts a scan of text[0..len), which must be one JSON value with optional whitespace
 * around it. */
void ts_json_scan_init(ts_json_scan *s, const char *text, size_t len);

/* The next item: returns 1 with *it filled, 0 at the end of the document (once the root
 * value and the trailing whitespace are read), or a negative ts_err: TS_E_JV_BAD_JSON for
 * text that is not one JSON value, TS_E_LIMIT for nesting deeper than the limit. After 0
 * or an error every further call returns the same. */
int ts_json_scan_next(ts_json_scan *s, ts_json_item *it);

/* After next() returned an item: when it was a container's start, reads (and checks) the
 * whole container and returns 1 with *raw (may be NULL) set to its text, brackets
 * included; the next item is what follows it. After any other item nothing is skipped
 * and 1 is returned (*raw untouched). Errors as next(). */
int ts__json_scan_skip(ts_json_scan *s, ts_view *raw);
#define TS__JSON_SCAN_FIRST 1 /* the state right after a container's start */
#define TS__JSON_SCAN_AFTER 2 /* ... right after any other value */
static inline int ts_json_scan_skip(ts_json_scan *s, ts_view *raw) {
  return s->state == TS__JSON_SCAN_AFTER ? 1 : ts__json_scan_skip(s, raw);
}

/* A number's raw text as an int64 when it is a plain integer (no fraction or exponent)
 * that fits: 0 and *out set; -1 otherwise. */
int ts_json_scan_int(ts_view raw, int64_t *out);

/* For readers that collect values to report once the whole payload is read: a string
 * member's raw body (p NULL: absent or null) and whether it holds a backslash. */
typedef struct {
  ts_view raw;
  int escaped;
} ts_json_scan_str;

/* Takes item `it` as a string or null into *out: 1 (for null, *out untouched); 0 for any
 * other type. */
static inline int ts_json_scan_take_str(const ts_json_item *it, ts_json_scan_str *out) {
  if (it->type == TS_JSON_SCAN_STRING) {
    out->raw = it->raw;
    out->escaped = it->escaped;
    return 1;
  }
  return it->type == TS_JSON_SCAN_NULL;
}

/* 1 when the raw key `key` is exactly the bytes of `lit` (raw: an escaped key is
 * compared as written, as json_view.h compares keys). */
static inline int ts_json_scan_key_is(ts_view key, const char *lit, size_t lit_len) {
  return key.len == lit_len && __builtin_memcmp(key.p, lit, lit_len) == 0;
}

#endif /* TS_JSON_SCAN_H */
