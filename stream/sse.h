/*
 * sse.h: an incremental, allocation-free Server-Sent Events framer.
 *
 * Model providers stream their replies as SSE (WHATWG HTML, "Server-sent events",
 * "Interpreting an event stream"). This module turns the bytes of such a stream, in
 * chunks of any size, into events: an event name, its joined `data:` payload, the last
 * event id and the stream offset just past the blank line that ended it. It does no I/O
 * and never allocates (a caller's grow hook may: see "Growing the data buffer"); every
 * buffer it fills has a fixed limit, and crossing a limit is
 * an ordinary, recoverable error reported with its stream offset.
 *
 * What is recognised (the WHATWG rules, applied to bytes)
 *   - Line endings `\n`, `\r` and `\r\n`, freely mixed. A CR at the end of one chunk
 *     and an LF at the start of the next are ONE line ending.
 *   - A UTF-8 byte-order mark (EF BB BF) is skipped at the very start of the stream
 *     only, even when its bytes arrive in different chunks. Elsewhere those bytes are
 *     ordinary data; a stream that starts with a proper prefix of the BOM followed by
 *     something else keeps those prefix bytes.
 *   - A line starting with `:` is a comment (keep-alives): ignored.
 *   - `name:value` lines; one space (0x20) right after the colon is removed, nothing
 *     else is. A line with no colon is a field whose name is the whole line and whose
 *     value is empty. Field names are case-sensitive; only these four mean anything:
 *       event  sets the event name (for this event only; reset at every blank line).
 *       data   appends to the payload; several `data` lines join with "\n" (so
 *              "data:a" "data:" "data:b" gives "a\n\nb"; one "data:" gives "").
 *       id     sets the last event id, unless the value contains a NUL byte (then
 *              the line is ignored). The id PERSISTS across events, as in the spec
 *              (it is what a client sends back as Last-Event-ID); "id:" empties it.
 *       retry  if the value is one or more ASCII digits, sets the reconnection time
 *              (ts_sse_retry; saturates at TS_SSE_RETRY_MAX); otherwise ignored.
 *     Every other field is ignored.
 *   - A blank line dispatches the event if at least one `data` line was seen since the
 *     previous blank line; if none was, nothing is dispatched and the event name is
 *     reset (an `event:` line alone does not make an event).
 *   - An event with no blank line before end of input is dropped by ts_sse_finish.
 *   The event name is reported as sent: an empty name means the spec's default type
 *   "message"; the framer does not substitute it.
 *
 * Items reported through the callback
 *   TS_SSE_DISPATCH  an event: name, data, id, end_offset.
 *   TS_SSE_ERROR     a limit was exceeded: code (a negative ts_err) and err_offset.
 *   Items come in stream order. The callback returns 0 to go on; anything else stops
 *   the framer (feed returns TS_E_ABORTED, sticky) and nothing more is reported. It
 *   must not call feed or finish on the same framer.
 *
 * Ownership and lifetime of the views in ts_sse_event
 *   All views are valid only during the callback.
 *   - id points into the framer's own storage (a fixed array in ts_sse); name too, or,
 *     for an event whose lines all lie in the chunk being fed (see data), into that
 *     chunk. Neither may be modified.
 *   - data is mutable (`char *`) because the consumer decodes JSON strings in place in
 *     it; the callback may modify data[0 .. data_len) and nothing else. It is NOT
 *     NUL-terminated. It points either into the caller's data buffer, or (zero-copy)
 *     straight into the chunk passed to the current ts_sse_feed call: that happens when
 *     the event has exactly one data line whose value lies entirely inside that chunk,
 *     together with the blank line that dispatches it. This is why feed takes `char *`:
 *     the chunk must be writable, and the callback may rewrite those bytes of it (they
 *     lie behind the framer's read position; the framer never reads them again).
 *     Whether a view or a copy is given depends on chunking; the bytes do not.
 *   - The framer keeps no pointer into a chunk after feed returns: data still pending
 *     at the end of a chunk is copied into the data buffer first.
 *
 * Offsets (absolute, counted from the first byte fed, BOM included, starting at 0)
 *   end_offset  the number of stream bytes consumed through the end of the blank line
 *               that dispatched the event: after its LF for "\n" and "\r\n", after its
 *               CR for a lone "\r".
 *   err_offset  the offset of the byte at which the error was detected (see Limits).
 *   Neither depends on how the stream is chunked. To keep that true for CR LF split
 *   across chunks, a blank line that ends with a CR which is the LAST byte of a chunk
 *   is not dispatched at once: the framer waits for the next byte. The next feed
 *   dispatches it first thing (with end_offset after the LF if that byte is an LF,
 *   which is then consumed, otherwise after the CR), and ts_sse_finish dispatches it
 *   if no byte follows (that event IS terminated: a lone CR is a line ending). This is
 *   the only case in which an event is reported later than the feed that completed its
 *   blank line, and the only event finish ever dispatches. A CR inside a chunk is
 *   resolved at once by looking at the byte after it.
 *
 * Limits and their errors (each reported as a TS_SSE_ERROR item)
 *   data    the caller's buffer capacity `cap` bounds an event's joined data
 *           (TS_E_SSE_EVENT_TOO_LARGE). err_offset: the first value byte that does not
 *           fit, or, when the "\n" joining a further data line does not fit, the colon
 *           of that line (the line end for a bare `data` line). The limit applies
 *           whether or not the data would have been a zero-copy view.
 *   line    `max_line` bytes per line, the line ending not counted (any line: comments
 *           and unknown fields too, so that garbage without line breaks is caught)
 *           (TS_E_SSE_LINE_TOO_LONG). err_offset: line start + max_line, the first byte
 *           past the limit. Default: cap + TS_SSE_LINE_SLACK.
 *   event   TS_SSE_MAX_NAME bytes of event name (TS_E_SSE_NAME_TOO_LONG).
 *   id      TS_SSE_MAX_ID bytes of id (TS_E_SSE_ID_TOO_LONG).
 *   Names and ids are never truncated: an over-long one is an error.
 *   Errors are detected in stream order; a line-length error is detected at the byte
 *   past the limit, so any other error on that line is seen first if it is earlier.
 *
 * Keeping less of an event (ts_sse_set_keep)
 *   A consumer that knows, from an event's name alone, that it needs little or nothing of
 *   its payload (a provider repeating text it already sent) can say how many data bytes
 *   to keep. The `keep` callback is asked once per event, at its first `data` line, with
 *   the event name so far (an `event:` line after the data is not seen; an empty name is
 *   not asked). It returns the most data bytes to keep; TS_SSE_KEEP_ALL is the default
 *   behaviour (the data limit applies, over it is an error). With a smaller value the
 *   bytes past it are dropped as they arrive (never stored, never an error, whatever the
 *   event's size, its line lengths included) and the event is dispatched at its blank line
 *   with `cut` set and `data` holding the kept head (not valid JSON in general). The
 *   head is bounded by cap as well.
 *
 * Growing the data buffer on demand (ts_sse_set_grow)
 *   The data buffer is only written when an event's data cannot be a view: an event cut
 *   between two feeds, or one with several data lines. A caller that would rather not
 *   reserve `cap` bytes up front gives ts_sse_init a buffer of `size` bytes (even none)
 *   and a grow hook; the framer asks the hook for more room the moment bytes it has
 *   accepted must be stored and do not fit, never more than `cap` (the limit stays cap,
 *   and an event over it is TS_E_SSE_EVENT_TOO_LARGE as without the hook). A refused
 *   growth drops that event with an ERROR item TS_E_NOMEM (err_offset: the first byte
 *   that did not fit; unlike the limits, where that falls depends on the chunking) and
 *   resynchronises as after a limit error; events already dispatched are not affected,
 *   and the buffer is still the one the framer had. The framer itself never allocates.
 *
 * Resynchronisation after an error
 *   The event being built is dropped (its name and data; `id:` lines already
 *   processed keep their effect), and every line is discarded up to and including the
 *   next blank line; the events after that blank line arrive normally. No further
 *   error is reported for the discarded lines, whatever their length, and nothing is
 *   stored for them. feed still returns TS_E_OK: stream errors are items, not return
 *   codes. A caller that wants them fatal returns nonzero from the callback.
 *
 * Cost
 *   An event of the shape providers send (an optional `event:` line, one `data:` line,
 *   a blank line) that lies whole in the chunk is dispatched from it in one step: a scan
 *   for each line's end (SIMD, 64 or 128 bytes a test; AVX2 where the CPU has it, chosen
 *   by ts_sse_init), no copy. Anything else goes through the line machine, where line
 *   ends are found with memchr (and the search results are reused, so each byte is
 *   searched a bounded number of times per chunk, whatever the line lengths); data bytes
 *   are appended with memcpy or not copied at all. Nothing is quadratic in the chunking:
 *   a byte is copied at most once. Either way the items reported are the same.
 */
#ifndef TS_SSE_H
#define TS_SSE_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/grow.h"

/* Event names in provider streams are short identifiers ("content_block_delta",
 * "response.function_call_arguments.delta" is the longest we know, 38 bytes). */
#define TS_SSE_MAX_NAME 64u
/* Ids are opaque tokens; 256 bytes holds any UUID, ULID or cursor we have seen. */
#define TS_SSE_MAX_ID 256u
/* Default max_line = cap + this: room for a full data line's "data: " prefix and for
 * an id line of TS_SSE_MAX_ID bytes even when cap is tiny. */
#define TS_SSE_LINE_SLACK 512u
/* retry: values saturate here (about 49 days in milliseconds). */
#define TS_SSE_RETRY_MAX 0xFFFFFFFFu

/* keep callback: keep the whole event (the default). */
#define TS_SSE_KEEP_ALL SIZE_MAX

typedef enum {
  TS_SSE_DISPATCH = 1, /* an event */
  TS_SSE_ERROR = 2,    /* a limit was exceeded; the framer resynchronises */
} ts_sse_kind;

typedef struct {
  uint8_t kind;         /* ts_sse_kind */
  int32_t code;         /* ERROR: a negative ts_err; DISPATCH: 0 */
  const char *name;     /* DISPATCH: the `event:` value, may be empty ("message") */
  size_t name_len;
  char *data;           /* DISPATCH: joined `data:` values, mutable, not NUL-terminated */
  size_t data_len;
  const char *id;       /* DISPATCH: the last event id (persists; may be empty) */
  size_t id_len;
  uint64_t end_offset;  /* DISPATCH: bytes consumed through the dispatching blank line */
  uint64_t err_offset;  /* ERROR: offset of the byte at which the error was detected */
  uint8_t cut;          /* DISPATCH: data past the kept head was dropped (ts_sse_set_keep) */
} ts_sse_event;
/* In an ERROR item the views are empty (len 0, pointers valid); in a DISPATCH item
 * err_offset is 0. */

/* Called for every item, in stream order. Return 0 to go on; nonzero stops the
 * framer (sticky TS_E_ABORTED). */
typedef int (*ts_sse_cb)(void *user, const ts_sse_event *ev);

/* How many data bytes of the event named name[0..len) to keep (see "Keeping less"). */
typedef size_t (*ts_sse_keep_fn)(void *user, const char *name, size_t len);

/* Grow hook (ts_sse_set_grow) of the data buffer, up to cap: base/grow.h's contract. */
typedef ts_grow_fn ts_sse_grow_fn;

/* Opaque in spirit: read it only through the functions below. It is public so the
 * caller can embed it (no allocation). Zero-filled plus ts_sse_init's settings is the
 * start state. About 800 bytes, most of it the name and id storage. */
typedef struct ts_sse {
  ts_sse_cb cb;
  void *user;
  char *buf;            /* the caller's data buffer ... */
  size_t cap;           /* ... and its capacity: the data limit */
  size_t max_line;      /* line limit, ending not counted */
  char *view;           /* data_mode VIEW: the data, inside the chunk being fed */
  size_t data_len;      /* bytes of joined data so far */
  uint64_t pos;         /* bytes fed so far (absolute offset of the next byte) */
  uint64_t line_start;  /* absolute offset of the current line's first byte */
  uint64_t err_offset;  /* where the last error (item or sticky) was detected */
  uint64_t retry_acc;   /* retry value being read */
  int64_t retry;        /* last valid retry value, -1 if none */
  uint32_t nerrors;     /* ERROR items reported */
  int32_t err;          /* sticky error (TS_E_ABORTED), 0 while healthy */
  int32_t last_err;     /* code of the last error (item or sticky) */
  uint8_t state;        /* where in a line we are, see sse.c */
  uint8_t field;        /* the field of the current line */
  uint8_t data_mode;    /* none yet / in buf / view into the chunk */
  uint8_t bom_n;        /* BOM bytes matched at stream start */
  uint8_t fname_len;    /* field-name bytes seen (6: longer than any known name) */
  uint8_t after_cr;     /* the last line ended with a CR that was a chunk's last byte */
  uint8_t pending;      /* ... and that line was a dispatching blank line */
  uint8_t skipping;     /* after an error: discarding up to the next blank line */
  uint8_t finished;
  uint8_t id_nul;       /* the id being read contains a NUL */
  uint8_t retry_any;    /* the retry value read so far has a digit */
  uint8_t retry_bad;    /* ... or a byte that is not one */
  char fname[5];
  uint16_t name_len;
  uint16_t id_len;
  uint16_t id_pend_len;
  char name[TS_SSE_MAX_NAME];
  char id[TS_SSE_MAX_ID];
  char id_pend[TS_SSE_MAX_ID]; /* id being read; becomes `id` at its line end */
  /* Added after 0.1.0 (at the end, so the fields above keep their offsets): */
  ts_sse_keep_fn keep;  /* may be NULL */
  void *keep_user;
  size_t limit;         /* data bytes kept for the event being built (<= cap) */
  size_t keep_ask;      /* what keep said for it (TS_SSE_KEEP_ALL: the limits apply) */
  uint8_t cut;          /* the event being built dropped data past `limit` */
  uint8_t simd;         /* line ends are scanned with AVX2 (set by ts_sse_init from the CPU) */
  size_t short_line;    /* min(cap, max_line): a data line no longer is within both limits */
  ts_sse_event item;    /* the item of a whole event: kind and zeros set once, the rest per event */
  size_t room;          /* bytes buf holds now: cap, unless ts_sse_set_grow said fewer */
  ts_sse_grow_fn grow;  /* may be NULL: buf holds cap bytes and never grows */
  void *grow_user;
} ts_sse;

/* Makes `s` ready for a new stream.
 *   buf, cap   the caller's data buffer, owned by the caller, used by this framer
 *              alone until the stream ends; cap bounds an event's joined data (cap may
 *              be 0: only empty payloads fit). Must not overlap the chunks fed.
 *   max_line   the line limit; 0 means cap + TS_SSE_LINE_SLACK.
 *   cb, user   the callback and its context.
 * Returns TS_E_OK, or TS_E_INVAL (s unusable) for a NULL s, buf or cb. */
int ts_sse_init(ts_sse *s, char *buf, size_t cap, size_t max_line, ts_sse_cb cb, void *user);

/* Sets (or, with NULL, clears) the keep callback: before the first feed, or from the
 * callback (for the events after the one being dispatched). */
void ts_sse_set_keep(ts_sse *s, ts_sse_keep_fn keep, void *user);

/* Replaces the item callback (not NULL: then nothing changes) and its context: before
 * the first feed, or from the callback, for the items after the one being reported (a
 * consumer that has learnt what the stream is can take a callback made for it). */
void ts_sse_set_cb(ts_sse *s, ts_sse_cb cb, void *user);

/* Before the first feed: the data buffer given to ts_sse_init holds only `size` bytes
 * (size <= cap; with 0 it is never read or written, any non-NULL pointer will do), and
 * `grow` makes room as events need it, up to cap (see "Growing the data buffer"). The
 * buffer the framer holds when the stream ends is the caller's to free: it learns of
 * every new one from its hook. Returns TS_E_OK, or TS_E_INVAL (nothing changed) for a
 * NULL grow, a size over cap or a framer already fed. */
int ts_sse_set_grow(ts_sse *s, size_t size, ts_sse_grow_fn grow, void *user);

/* Feeds the next `len` bytes of the stream (len may be 0, buf then may be NULL).
 * Reports, before returning, every item those bytes complete. The chunk must be
 * writable (see "Ownership"); the framer keeps no pointer into it after returning.
 * Returns TS_E_OK (also when ERROR items were reported: those are recoverable), or
 * TS_E_ABORTED (sticky) if the callback stopped the framer, TS_E_SSE_FINISHED after
 * finish, TS_E_INVAL for a NULL buf with len > 0 (nothing consumed, not sticky). */
int ts_sse_feed(ts_sse *s, char *buf, size_t len);

/* Ends the stream. Dispatches an event whose blank line ended with a CR that was the
 * last byte fed (see "Offsets"); drops an unterminated event, silently (deciding that
 * a stream was truncated is the provider adapter's job). Returns TS_E_OK or the sticky
 * error. Later feeds return TS_E_SSE_FINISHED; finish again returns the same result. */
int ts_sse_finish(ts_sse *s);

/* Before finish: nonzero when the input so far ends inside an event that has data (a
 * `data` field seen, its blank line not), i.e. finish would drop it. For formats that end
 * at EOF, that is how a truncated stream shows. */
int ts_sse_cut(const ts_sse *s);

/* The sticky error (0 if none). */
static inline int ts_sse_error(const ts_sse *s) { return s->err; }

/* The code of the most recent error, item or sticky (0 if none), and its offset. */
static inline int ts_sse_last_error(const ts_sse *s, uint64_t *offset) {
  if (offset) *offset = s->err_offset;
  return s->last_err;
}

/* ERROR items reported so far. */
static inline uint32_t ts_sse_error_count(const ts_sse *s) { return s->nerrors; }

/* Bytes fed so far. */
static inline uint64_t ts_sse_offset(const ts_sse *s) { return s->pos; }

/* The last valid `retry:` value in milliseconds, -1 if none was seen. */
static inline int64_t ts_sse_retry(const ts_sse *s) { return s->retry; }

/* For the tests and the fuzzer (not an API): with on == 0 the framer scans line ends
 * without AVX2 from now on, even where the CPU has it; with on != 0 it goes back to
 * the CPU's choice (ts_sse_init's). Both ways give the same items to the byte. Returns
 * 1 when AVX2 is now in use, else 0. */
int ts__sse_set_simd(ts_sse *s, int on);

#endif /* TS_SSE_H */
