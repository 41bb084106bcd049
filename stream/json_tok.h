/*
 * json_tok.h: an incremental, zero-copy, strict JSON push tokenizer.
 *
 * Model providers stream tool-call arguments a few bytes at a time. This tokenizer
 * reads those bytes exactly once, as they arrive, and reports JSON tokens through a
 * callback. It never buffers text and never rewinds: a token that spans chunks is
 * reported as several fragments, each a view into the chunk that held its bytes.
 *
 * Ownership and lifetime
 *   - `ts_json_tok` is a small plain struct the caller embeds or allocates; it owns
 *     no memory and nothing needs freeing. `ts_json_tok_init` makes it ready.
 *   - Token text (`ts_json_token.text`) points into the chunk passed to the current
 *     `ts_json_tok_feed` call (or, for literals, at a static string). It is valid only
 *     during the callback; copy what you need to keep.
 *   - No allocation happens anywhere in this module.
 *
 * Fragments
 *   KEY, STRING and NUMBER tokens arrive as one or more fragments. The first carries
 *   TS_JSON_FIRST, the last TS_JSON_LAST (a token held whole in one chunk carries
 *   both). Concatenating the fragments' text gives the token's exact source text:
 *     - KEY / STRING: the raw bytes between the quotes, escapes NOT decoded (use
 *       json_unescape.h to decode them, fragment by fragment, when you need the value).
 *       A fragment boundary may fall anywhere, including inside an escape sequence or
 *       inside a multi-byte UTF-8 character.
 *     - NUMBER: the number's characters.
 *   A fragment may be empty (len == 0): a chunk that ends just before a closing quote
 *   gives the string's last fragment as an empty view at the start of the next chunk,
 *   and a number learns that it has ended only at the delimiter after it (or at
 *   ts_json_tok_finish), so its LAST fragment is often empty.
 *   Fragment boundaries depend on chunking; the concatenated text and the token
 *   sequence do not.
 *
 *   Other tokens are single, with TS_JSON_FIRST|TS_JSON_LAST:
 *     OBJECT_BEGIN/END, ARRAY_BEGIN/END: text is the one punctuation byte in the chunk.
 *     TRUE / FALSE / NULL: reported once the last letter has been read; text points at
 *       a static "true"/"false"/"null" (the letters may have spanned chunks).
 *
 * When tokens complete (the moments a watcher cares about)
 *   a string or key at its closing quote; an object or array at its matching close;
 *   a literal at its last letter; a number at the first byte after it (a delimiter,
 *   whitespace), or at ts_json_tok_finish for a top-level number.
 *
 * Depth
 *   `ts_json_token.depth` is the number of containers enclosing the token: the
 *   top-level value has depth 0, the members of a top-level object have depth 1. A
 *   container's BEGIN and END tokens carry the depth of the container itself (so the
 *   top-level object's braces are depth 0 and its keys depth 1).
 *
 * Strictness (RFC 8259)
 *   Exactly one top-level value (any type), surrounded by optional whitespace
 *   (space, tab, LF, CR). Strings must be valid UTF-8 (no overlong forms, no encoded
 *   surrogates, nothing above U+10FFFF, no stray continuation bytes) and contain no
 *   raw byte below 0x20; escapes are the eight single-character ones and \uXXXX;
 *   a \u high surrogate must be followed at once by a \u low surrogate and a low
 *   surrogate must not appear alone. Numbers follow the grammar exactly (no leading
 *   zeros, no '+', no bare '.', digits required after '.' and after the exponent).
 *   A UTF-8 byte-order mark is not JSON and is rejected; strip it before feeding.
 *
 * Errors
 *   feed and finish return TS_E_OK or a negative ts_err (error.h). The first error is
 *   sticky: every later call returns it again and reports nothing. `ts_json_tok_error_offset`
 *   gives the absolute stream offset (bytes fed before this point, counting from 0) of
 *   the byte at which the error was detected; for TS_E_JSON_TRUNCATED and
 *   TS_E_JSON_EMPTY it is the total number of bytes fed. The offset and code do not
 *   depend on chunking. Tokens reported before an error stand; no token is reported
 *   for the bytes at or after the error.
 *
 * Cost
 *   Each byte is examined a bounded number of times whatever the chunking. String
 *   bodies are scanned many bytes at a time (SSE2 on x86-64, 32 bytes a step with AVX2
 *   where the CPU has it, chosen at run time; a portable word-at-a-time scan elsewhere);
 *   on x86-64 escapes and UTF-8 characters held whole in a chunk are
 *   stepped over inside the 16-byte blocks rather than checked byte by byte. A chunk that only continues a string (the common case for a long
 *   argument arriving in deltas) is reported without entering the grammar machine;
 *   a call costs about 30 instructions more than its bytes do, the callback not
 *   counted (docs/performance.md has the figures).
 */
#ifndef TS_JSON_TOK_H
#define TS_JSON_TOK_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

typedef enum {
  TS_JSON_OBJECT_BEGIN = 1,
  TS_JSON_OBJECT_END,
  TS_JSON_ARRAY_BEGIN,
  TS_JSON_ARRAY_END,
  TS_JSON_KEY,
  TS_JSON_STRING,
  TS_JSON_NUMBER,
  TS_JSON_TRUE,
  TS_JSON_FALSE,
  TS_JSON_NULL,
} ts_json_kind;

/* Fragment flags. */
#define TS_JSON_FIRST 1u
#define TS_JSON_LAST 2u

typedef struct {
  const char *text; /* view into the current chunk (or a static literal) */
  size_t len;       /* bytes at text */
  uint64_t offset;  /* absolute stream offset of text[0] (for literals: of the first letter) */
  uint32_t depth;   /* containers enclosing the token; see "Depth" above */
  uint8_t kind;     /* ts_json_kind */
  uint8_t flags;    /* TS_JSON_FIRST / TS_JSON_LAST */
} ts_json_token;

/* Called for every token fragment, in stream order. Return 0 to go on; any other
 * value stops the tokenizer: feed returns TS_E_ABORTED (sticky) and reports nothing
 * more. The callback must not call feed or finish on the same tokenizer. */
typedef int (*ts_json_tok_cb)(void *user, const ts_json_token *tok);

/* The deepest nesting any tokenizer supports; a caller chooses its own limit up to
 * this. 1024 bits of container-kind stack live inside the struct (128 bytes). */
#define TS_JSON_MAX_DEPTH_CAP 1024u
/* A sane default for tool arguments (deeper input is an attack or a bug). */
#define TS_JSON_DEFAULT_MAX_DEPTH 128u

/* Opaque in spirit: read it only through the functions below. It is public so the
 * caller can embed it (no allocation) and so feed can be inlined into hot loops. */
typedef struct ts_json_tok {
  ts_json_tok_cb cb;
  void *user;
  uint64_t pos;        /* absolute offset of the next byte to be fed */
  uint64_t err_offset; /* where the sticky error was detected */
  uint32_t depth;      /* open containers */
  uint32_t max_depth;
  int32_t err;         /* sticky ts_err, 0 while healthy */
  /* The grammar / lexer state (json_tok.c) times 65536, plus, inside a string, the
   * string DFA's state: one word, so that one compare tells a chunk that continues a
   * string between characters from everything else. */
  uint32_t mode;
  uint8_t lit;         /* which literal is being matched */
  uint8_t lit_k;       /* letters of it matched */
  uint8_t in_obj;      /* the innermost open container is an object */
  uint64_t tok_start;  /* absolute offset where the current literal began */
  /* The open key/string/number's token, kept between calls: kind and depth of the
   * token, flags TS_JSON_FIRST until it has reported a fragment. A chunk that only
   * continues a string rewrites its view (text, len, offset) and reports it as is. */
  ts_json_token tok;
  uint8_t stack[TS_JSON_MAX_DEPTH_CAP / 8]; /* 1 bit per open container: 1 = object */
} ts_json_tok;

/* Makes `t` ready for a new stream. `max_depth` is the deepest nesting allowed (1 ..
 * TS_JSON_MAX_DEPTH_CAP; 0 means TS_JSON_DEFAULT_MAX_DEPTH); deeper input fails with
 * TS_E_JSON_DEPTH. Returns TS_E_INVAL (and leaves t unusable) for a limit above the
 * cap or a NULL callback. */
int ts_json_tok_init(ts_json_tok *t, uint32_t max_depth, ts_json_tok_cb cb, void *user);

/* Feeds the next `len` bytes of the stream (len may be 0; buf may then be NULL).
 * Reports every token fragment those bytes complete or extend, through the callback,
 * before returning. Returns TS_E_OK, or the sticky error. */
int ts_json_tok_feed(ts_json_tok *t, const char *buf, size_t len);

/* Ends the stream. Completes a top-level number (reporting its LAST fragment), then
 * checks that exactly one complete value was seen: TS_E_JSON_TRUNCATED if the input
 * stopped inside a value, TS_E_JSON_EMPTY if it held only whitespace. After finish,
 * feed returns TS_E_JSON_FINISHED. Calling finish twice returns the first result. */
int ts_json_tok_finish(ts_json_tok *t);

/* The sticky error (0 if none) and where it was detected. */
static inline int ts_json_tok_error(const ts_json_tok *t) { return t->err; }
static inline uint64_t ts_json_tok_error_offset(const ts_json_tok *t) { return t->err_offset; }

/* Containers open right now (0 outside the top-level value). */
static inline uint32_t ts_json_tok_depth(const ts_json_tok *t) { return t->depth; }

/* Bytes fed so far: every byte passed to feed, also those fed after an error or after
 * finish, so the value does not depend on chunking. */
static inline uint64_t ts_json_tok_offset(const ts_json_tok *t) { return t->pos; }

/* 1 once the top-level value has completed (a top-level number completes only at
 * finish or at the whitespace after it). */
int ts_json_tok_done(const ts_json_tok *t);

/* For tests and benchmarks only: the 32-byte (AVX2) string scan. `on` 0 turns it off
 * (every string body is then scanned 16 bytes at a time, as on a CPU without AVX2), 1
 * turns it on where the CPU has AVX2 (the default, chosen at load), -1 only asks.
 * Returns whether it is in use. Process-wide; not for use while another thread feeds. */
int ts__json_tok_wide(int on);

#endif /* TS_JSON_TOK_H */
