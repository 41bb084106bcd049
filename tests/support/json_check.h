/*
 * json_check.h: the tests' reference JSON checker, written from RFC 8259 and
 * RFC 3629 alone and sharing no code with the product, so that a test can judge the
 * product's JSON output (events, arguments, request bodies) by an independent rule.
 *
 * Strict: one value and nothing after it, strings of valid UTF-8 (no overlong forms,
 * no surrogates, nothing above U+10FFFF) without raw control bytes, escapes from the
 * RFC's list with four hex digits after \u, numbers in the RFC's grammar, nesting at
 * most TS_TEST_JSON_DEPTH. Whitespace between tokens is allowed by ts_test_json_valid
 * and refused by the compact variants.
 */
#ifndef TS_TEST_JSON_CHECK_H
#define TS_TEST_JSON_CHECK_H

#include <stddef.h>

#include "support/sb.h"

#define TS_TEST_JSON_DEPTH 200

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if invalid or cut. */
size_t ts_test_utf8_seq(const unsigned char *s, size_t n);

/* 1 when all n bytes at p are valid UTF-8. */
int ts_test_utf8_valid(const char *p, size_t n);

/* 1 when p..p+n is exactly one JSON value, whitespace around tokens allowed. */
int ts_test_json_valid(const char *p, size_t n);

/* 1 when p..p+n is exactly one JSON object with no whitespace outside strings. */
int ts_test_json_compact_object(const char *p, size_t n);

/* One member of a top-level object: the key as it is between its quotes (escapes not
 * decoded) and the value's JSON text. */
typedef struct {
  const char *k, *v;
  size_t klen, vlen;
} ts_test_json_member;

/* The members of one compact JSON object, in order (the first `max` stored). Returns
 * how many there are, or -1 when the text is not exactly one compact object. */
int ts_test_json_members(const char *s, size_t n, ts_test_json_member *m, int max);

/* 1 when member `m`'s key is `key`. */
int ts_test_json_key_is(const ts_test_json_member *m, const char *key);

/* Appends the JSON text `s` with the whitespace outside strings removed (the text is
 * not checked: run a validator first when it matters). */
void ts_test_json_compact(sb *out, const char *s, size_t n);

#endif
