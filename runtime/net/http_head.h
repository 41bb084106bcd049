/*
 * http_head.h: strict reading of HTTP/1.x message heads and their body framing, for the
 * gateway's client side (requests) and upstream side (responses). Pure: no I/O, no
 * allocation; views point into the caller's head bytes.
 *
 * Why strict. A proxy that reads a request's length differently from the server behind
 * it can be made to forward part of one request's body as a second request ("request
 * smuggling"). RFC 9112 closes the gaps, and so does this module:
 *   - Content-Length is 1*DIGIT: no sign, no space inside, at most 18 digits. Repeated
 *     Content-Length fields (or a list) must all carry the same value; different ones
 *     are an error, never "the first wins".
 *   - Transfer-Encoding on an HTTP/1.0 request is an error (its framing is faulty, RFC
 *     9112 6.1); with Content-Length too it is an error; a request whose final coding is
 *     not chunked is an error; codings other than chunked are not implemented (501).
 *   - Field names are tokens with no space before the colon; obsolete line folding, a CR
 *     not followed by LF, NUL and other control bytes in values are errors. Lines end in
 *     CRLF or a bare LF (RFC 9112 2.2 lets a recipient accept it).
 *   - Only HTTP/1.0 and HTTP/1.1.
 * The gateway then forwards a normalised request: its own request line, the fields it
 * keeps, and one Content-Length of the body it actually read (never Transfer-Encoding).
 *
 * Responses get the same field rules; their framing follows RFC 9112 6.3: no body for
 * HEAD, 1xx, 204 and 304; chunked when the final coding is chunked; else one valid
 * Content-Length; else until the connection closes.
 */
#ifndef TS_NET_HTTP_HEAD_H
#define TS_NET_HTTP_HEAD_H

#include <stddef.h>
#include <stdint.h>

#include "base/view.h"

/* Fields per head: more is an attack or a bug (browsers send about 20). */
#define TS_HTTP_MAX_FIELDS 100

typedef struct {
  ts_view name, value; /* value without leading and trailing whitespace */
} ts_http_field;

typedef struct {
  ts_view method, target; /* requests */
  int status;             /* responses: 100..999 */
  ts_view reason;         /* responses (may be empty) */
  int minor;              /* HTTP/1.<minor>: 0 or 1 */
  size_t nfields;
  ts_http_field fields[TS_HTTP_MAX_FIELDS];
} ts_http_head;

typedef enum {
  TS_HTTP_BODY_NONE,    /* no body */
  TS_HTTP_BODY_LENGTH,  /* exactly `length` bytes */
  TS_HTTP_BODY_CHUNKED, /* chunked (net/chunked.h) */
  TS_HTTP_BODY_CLOSE    /* until the connection closes (responses only) */
} ts_http_body;

typedef struct {
  ts_http_body kind;
  uint64_t length;
} ts_http_framing;

/* Scans p[0..n) for the blank line that ends a head. Returns the head's length including
 * that line, or 0 when it has not arrived yet. *resume (0 at first) lets the next call,
 * with more bytes after the same start, go on where this one stopped. Leading empty
 * lines (allowed before a request) are part of the head and skipped by the parsers. */
size_t ts_http_head_end(const char *p, size_t n, size_t *resume);

/* Parse a whole head (as measured by ts_http_head_end). Return 0, or TS_E_GW_REQUEST
 * (requests) / TS_E_GW_RESPONSE (responses) with *status the HTTP status to answer
 * (400, 431 for too many fields, 501, 505) and *why a static one-line reason. */
int ts_http_parse_request(const char *p, size_t n, ts_http_head *h, int *status, const char **why);
int ts_http_parse_response(const char *p, size_t n, ts_http_head *h, const char **why);

/* The value of the only field `name` (case-insensitive). Returns the number of such
 * fields; *v is the first one's value (untouched when there is none). */
size_t ts_http_field_get(const ts_http_head *h, const char *name, ts_view *v);

/* 1 when the comma-separated list value `v` holds `token` (case-insensitive). */
int ts_http_list_has(ts_view v, const char *token);

/* A request's framing, by the rules above. Returns 0 or TS_E_GW_REQUEST with *status
 * and *why as for ts_http_parse_request. */
int ts_http_request_framing(const ts_http_head *h, ts_http_framing *f, int *status,
                            const char **why);

/* A response's framing; `head_request`: it answers a HEAD. Returns 0 or
 * TS_E_GW_RESPONSE (conflicting or malformed Content-Length, Transfer-Encoding with
 * Content-Length). */
int ts_http_response_framing(const ts_http_head *h, int head_request, ts_http_framing *f,
                             const char **why);

#endif /* TS_NET_HTTP_HEAD_H */
