/*
 * chunked.h: an incremental decoder of HTTP/1.1 chunked bodies (RFC 9112 7.1), in the
 * picohttpparser idiom: a small zero-filled struct that resumes exactly where the last
 * bytes stopped (inside a size line, an extension, chunk data, a trailer), no rewinding,
 * no allocation, no I/O.
 *
 * The gateway runs one on each chunked request body (to forward the decoded body with a
 * Content-Length) and one on each chunked upstream response (to hand the tap the data
 * while the raw bytes go to the client unchanged, and to know where the response ends).
 *
 * Strict, because a proxy and the peer behind it must agree on where a body ends: lines
 * end in CRLF (a bare LF or CR is an error); a size is 1..15 hex digits (no sign, no
 * space before the extension's ';'); an extension line is at most TS_CHUNKED_MAX_LINE
 * bytes; the trailer section at most TS_CHUNKED_MAX_TRAILER bytes (trailers are read
 * and dropped).
 */
#ifndef TS_NET_CHUNKED_H
#define TS_NET_CHUNKED_H

#include <stddef.h>
#include <stdint.h>

/* A size line with its extensions: real ones are a few bytes ("1a2b\r\n"). */
#define TS_CHUNKED_MAX_LINE 4096
/* Trailer fields, read and dropped. */
#define TS_CHUNKED_MAX_TRAILER (16 * 1024)

typedef struct {
  int _state;
  unsigned _digits;
  uint64_t _left;   /* data bytes left in the current chunk */
  size_t _line;     /* bytes of the current size or trailer line */
  size_t _trailer;  /* trailer bytes so far */
  uint64_t offset;  /* bytes consumed so far (for error reports) */
} ts_chunked;

/* Called with each run of chunk data, in order; `data` points into the fed bytes. */
typedef void (*ts_chunked_data_fn)(void *user, const char *data, size_t len);

/* Feeds n bytes. Returns the bytes consumed: n, or fewer when the body ended inside
 * them (the rest belongs to what follows the body); *done is set to 1 once the last
 * chunk and the trailers are through (feeding after that consumes nothing). Returns -1
 * on malformed input (c->offset is where; *why a static reason); the decoder stays
 * failed. Same results for any split of the same bytes. */
long ts_chunked_feed(ts_chunked *c, const char *p, size_t n, ts_chunked_data_fn fn,
                     void *user, int *done, const char **why);

#endif /* TS_NET_CHUNKED_H */
