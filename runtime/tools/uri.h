/*
 * uri.h: URI reference resolution (RFC 3986 section 5), for JSON Schema's `$id` and
 * `$ref`.
 *
 * A schema names its parts with URIs: `$id` sets the base URI of the subschema it
 * stands in (resolved against the enclosing base), and `$ref` is resolved against the
 * base in force where it stands. Only the resolution algorithm lives here: no
 * normalisation beyond dot segments, no percent-decoding (the fragment is decoded by
 * the caller, where it becomes a JSON pointer or an anchor name), no I/O.
 *
 * Inputs are byte ranges (not NUL-terminated). A base may be the empty string (a
 * document without an id) or any URI reference; RFC 3986 wants an absolute base, and
 * with a relative one the same algorithm gives a relative result, which is what a
 * schema without a root $id needs ("#/definitions/a" against "" is "#/definitions/a").
 */
#ifndef TS_URI_H
#define TS_URI_H

#include <stddef.h>

#include "base/error.h"

/* Resolves ref[0..rlen) against base[0..blen). Returns TS_E_OK with a malloc'd,
 * NUL-terminated result in *out (its length in *out_len; the caller frees it), or
 * TS_E_NOMEM. Any byte string is accepted: nothing here fails on content. */
int ts_uri_resolve(const char *base, size_t blen, const char *ref, size_t rlen, char **out,
                   size_t *out_len);

/* The length of the part before the fragment: the index of the first '#', or len. */
size_t ts_uri_strip_fragment(const char *uri, size_t len);

#endif /* TS_URI_H */
