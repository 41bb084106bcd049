/*
 * json_view.h: one complete JSON document, tokenized once, walked by index.
 *
 * Each SSE event of a model stream carries a small, complete JSON document. The
 * provider adapters (adapter.h) need a handful of values out of it: a `type`
 * string, an index, an id, an argument fragment. This module parses the document
 * once with jsmn (strict mode) into a token array that was allocated up front, and
 * offers the few walking helpers the adapters need: find a member by key, step over
 * a subtree, compare a string with a literal, decode a string in place.
 *
 * It is the only file that includes jsmn's implementation; nothing else sees jsmn.
 *
 * Tokens
 *   A document is an array of tokens in source order; token 0 is the top-level
 *   value. A token is named by its index (an int); helpers that find nothing return
 *   -1, and every helper accepts -1 as "absent" (so lookups chain without checks:
 *   ts_jv_get(v, ts_jv_get(v, 0, "delta"), "text")). An object's children are its
 *   keys, each followed by its value; an array's children are its elements.
 *
 * Strictness
 *   jsmn's strict mode alone accepts a few non-JSON shapes (`{"a" "b"}`, `{"a":}`,
 *   `[1:2]`, primitives such as `nul` or `0x1`). ts_jv_parse checks the token tree
 *   after jsmn (every object child is a key with one value; nothing else has
 *   children; primitives are exactly true, false, null or an RFC 8259 number) and
 *   that exactly one value fills the document. Left unchecked, because nothing here
 *   depends on them: trailing commas (`[1,]`), raw control bytes inside strings, and
 *   UTF-8 validity (the argument tokenizer checks what matters downstream).
 *
 * Decoding in place
 *   ts_jv_str decodes a string token's escapes into UTF-8 inside the document buffer
 *   itself (the decoded text is never longer than the escaped text), so the buffer
 *   must be writable. A decoded token remembers its decoded length: asking again
 *   returns the same view and does not decode twice. Decoding touches only that
 *   string's own bytes; raw views of other tokens stay intact, but a raw view of a
 *   container that encloses a decoded string would show the decoded bytes followed
 *   by leftovers: take raw views of containers whose strings you have not decoded.
 *   Keys are compared raw (a key spelled with escapes does not match its literal).
 *
 * Ownership: the token array is allocated by ts_jv_init and freed by ts_jv_fini; the
 * document belongs to the caller and must outlive the views taken from it.
 */
#ifndef TS_JSON_VIEW_H
#define TS_JSON_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/view.h"

typedef enum {
  TS_JV_NONE = 0, /* no such token (index -1 or out of range) */
  TS_JV_OBJECT,
  TS_JV_ARRAY,
  TS_JV_STRING,
  TS_JV_PRIMITIVE, /* number, true, false, null */
} ts_jv_type;

typedef struct ts_jv {
  char *js;   /* the document being viewed (strings decode in place here) */
  size_t len; /* its length */
  void *tok;  /* jsmn's token array (cap entries), opaque outside json_view.c */
  int ntok;   /* tokens of the current document */
  int cap;    /* tokens the array holds */
} ts_jv;

/* Allocates room for `cap` tokens (cap >= 1). Returns TS_E_OK, TS_E_INVAL or
 * TS_E_NOMEM (then `v` holds nothing and ts_jv_fini is still safe). */
int ts_jv_init(ts_jv *v, int cap);
void ts_jv_fini(ts_jv *v); /* frees the token array; safe on a zeroed or failed ts_jv */

/* Tokenizes the complete document js[0..len). Leading and trailing JSON whitespace is
 * allowed. Returns TS_E_OK; TS_E_JV_BAD_JSON for anything that is not exactly one
 * JSON value (including a bare top-level number: strict jsmn cannot end one);
 * TS_E_JV_TOO_MANY_TOKENS when it needs more than `cap` tokens; TS_E_LIMIT for a
 * document of INT_MAX bytes or more (jsmn counts in int). On error the view holds
 * no tokens. Never allocates. */
int ts_jv_parse(ts_jv *v, char *js, size_t len);

/* The type of token i (TS_JV_NONE for -1 or out of range). */
ts_jv_type ts_jv_type_of(const ts_jv *v, int i);

/* Members of an object, elements of an array; 0 for anything else. */
int ts_jv_size(const ts_jv *v, int i);

/* The index just past token i and everything inside it: the next sibling, when there
 * is one. Cost: the number of tokens inside i. */
int ts_jv_skip(const ts_jv *v, int i);

/* The value of member `key` of object `obj` (the first one, with duplicate keys), or
 * -1 when obj is not an object or has no such key. Keys compare raw. */
int ts_jv_get(const ts_jv *v, int obj, const char *key);

/* The first element of array `arr`, or -1 (not an array, or empty). Iterate with
 *   for (int k = 0, e = ts_jv_first(v, arr); k < ts_jv_size(v, arr); k++, e = ts_jv_skip(v, e))
 */
int ts_jv_first(const ts_jv *v, int arr);

/* Nonzero when token i is a string whose raw (still escaped) bytes equal `lit`. */
int ts_jv_eq(const ts_jv *v, int i, const char *lit);

/* Nonzero when token i is a string whose raw bytes start with `prefix`. */
int ts_jv_prefix(const ts_jv *v, int i, const char *prefix);

/* Nonzero when token i is the literal null / true. */
int ts_jv_is_null(const ts_jv *v, int i);
int ts_jv_is_true(const ts_jv *v, int i);

/* Token i as an integer: 0 and *out set when i is a number without fraction or
 * exponent that fits in int64_t; -1 otherwise. */
int ts_jv_int(const ts_jv *v, int i, int64_t *out);

/* The exact source text of token i: an object or array with its brackets, a string
 * with its quotes (undecoded), a primitive as written. {NULL, 0} for -1. */
ts_view ts_jv_raw(const ts_jv *v, int i);

/* Decodes string token i in place (see "Decoding in place") and stores the decoded
 * text in *out. Returns TS_E_OK; TS_E_JV_NOT_STRING when i is not a string (or -1);
 * or the decoder's error (TS_E_JSON_ESCAPE, TS_E_JSON_SURROGATE). */
int ts_jv_str(ts_jv *v, int i, ts_view *out);

#endif /* TS_JSON_VIEW_H */
