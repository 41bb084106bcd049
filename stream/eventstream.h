/*
 * eventstream.h: the AWS event stream framing (application/vnd.amazon.eventstream), one
 * message at a time, incrementally.
 *
 * Amazon Bedrock's ConverseStream answers in binary frames:
 *
 *   total length (4 bytes, big endian) | headers length (4) | prelude CRC32 (4)
 *   headers | payload | message CRC32 (4)
 *
 * The prelude CRC covers the first 8 bytes, the message CRC everything before it. A
 * header is: name length (1 byte), name, value type (1 byte), value (type 7, a string:
 * 2-byte big-endian length and the bytes; the other types have fixed sizes, or a 2-byte
 * length for bytes, and are skipped). The headers that matter: `:message-type` (`event`
 * `exception` or `error`), `:event-type` (`contentBlockDelta`, ...), `:exception-type`; an
 * `error` message (an error the service did not model) has no payload to speak of, but
 * `:error-code` and `:error-message` headers.
 *
 * The framer checks both CRCs, the lengths (a message is at least 16 bytes, at most the
 * caller's buffer plus the prelude), and the header walk; each of those is a sticky error
 * (TS_E_EVS_*): a binary stream cannot be resynced. It is split invariant: a message is
 * delivered when its last byte arrives, however the input was cut.
 *
 * Offsets: a message's `end_offset` is the bytes fed up to and including its CRC.
 * Memory: the caller's buffer holds one message after its prelude (only when the message
 * came in pieces), and the framer a copy of the last header block (TS_EVS_HEADERS_MEMO);
 * nothing is allocated. A caller that would rather not reserve the limit up front gives
 * a smaller buffer (even none) and a grow hook (ts_evs_set_grow), asked for room for a
 * whole message (never past cap) when its prelude says it will not fit; a refused growth
 * is the sticky error TS_E_NOMEM at that message, as TS_E_EVS_TOO_LARGE is.
 */
#ifndef TS_EVENTSTREAM_H
#define TS_EVENTSTREAM_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/grow.h"
#include "base/view.h"

typedef enum { TS_EVS_MESSAGE = 1, TS_EVS_ERROR } ts_evs_kind;

/* Header blocks up to this size are remembered (Bedrock's three headers take about 90
 * bytes); a bigger one is walked every time. */
#define TS_EVS_HEADERS_MEMO 160

typedef struct {
  int kind;              /* ts_evs_kind */
  ts_view message_type;  /* MESSAGE: `:message-type` (may be empty) */
  ts_view event_type;    /* MESSAGE: `:event-type`, or `:exception-type` for an exception,
                          * or `:error-code` for an error message */
  char *payload;         /* MESSAGE: the payload (writable: see ts_evs_feed) */
  size_t payload_len;
  uint64_t end_offset;   /* MESSAGE */
  int code;              /* ERROR: a ts_err */
  uint64_t err_offset;   /* ERROR: the offset of the message that failed */
  ts_view error_message; /* MESSAGE: `:error-message` (an `error` message's), else empty
                          * (last, so that the fields before it keep their places) */
} ts_evs_item;

/* Return 0 to go on; nonzero stops the framer (TS_E_ABORTED, sticky). */
typedef int (*ts_evs_cb)(void *user, const ts_evs_item *it);

/* Grow hook (ts_evs_set_grow) of the message buffer, up to cap: base/grow.h's contract. */
typedef ts_grow_fn ts_evs_grow_fn;

typedef struct {
  ts_evs_cb cb;
  void *user;
  char *buf;
  size_t cap, len;      /* the message after its prelude, so far */
  uint64_t pos;         /* bytes fed */
  uint64_t msg_start;   /* offset of the current message */
  uint32_t total, hlen; /* from the prelude */
  uint32_t crc;         /* running CRC32 of the current message */
  uint8_t prelude[12];
  uint8_t plen;         /* prelude bytes so far */
  uint8_t dead, aborted;
  /* The last message's header block when it walked clean (0: none), and where its three
   * values lay in it: the next message's headers are nearly always the same bytes, and
   * are then compared, not walked. */
  uint16_t hm_len;
  uint16_t hm_off[2], hm_vlen[2]; /* the item's message_type and event_type */
  uint8_t hm[TS_EVS_HEADERS_MEMO];
  size_t room;          /* bytes buf holds now (cap without a grow hook) */
  ts_evs_grow_fn grow;
  void *grow_user;
} ts_evs;

/* Sets the framer up over buf[0..cap) (cap >= 16). TS_E_OK or TS_E_INVAL. */
int ts_evs_init(ts_evs *s, char *buf, size_t cap, ts_evs_cb cb, void *user);

/* Before the first feed: buf (ts_evs_init's) holds only `size` bytes (<= cap; with 0 it is
 * never read or written), and `grow` makes room up to cap. The buffer held at the end is
 * the caller's to free (its hook saw every new one). TS_E_OK, or TS_E_INVAL for a NULL
 * grow, a size over cap or a framer already fed. */
int ts_evs_set_grow(ts_evs *s, size_t size, ts_evs_grow_fn grow, void *user);

/* Feeds bytes; reports every message they complete. TS_E_OK (also after an error item:
 * the rest is then ignored), TS_E_ABORTED, or TS_E_INVAL for NULL buf with len > 0.
 *
 * The chunk must be writable, as ts_sse_feed's: a message that lies whole in it is
 * handed out where it lies (its views point into the chunk, no copy), one that arrives in
 * pieces from the caller's buffer, which holds it after its prelude. The callback may
 * rewrite payload[0..payload_len) (the consumer decodes JSON strings in place) and
 * nothing else; the views are valid only during the callback, and the framer keeps no
 * pointer into the chunk after returning. Which of the two a message gets depends on
 * the chunking; its bytes, offsets and errors do not. */
int ts_evs_feed(ts_evs *s, char *buf, size_t len);

/* Nonzero when the input so far ends inside a message, or a message failed its checks
 * (the rest was ignored): the stream was cut. */
int ts_evs_cut(const ts_evs *s);

#endif /* TS_EVENTSTREAM_H */
