/*
 * eventstream.c: see eventstream.h.
 *
 * Two ways to one message. When a chunk holds the whole message (the usual case: a read
 * holds one or more), it is checked and handed out where it lies: the prelude's CRC, the
 * lengths, one CRC run over the rest that goes on from the prelude's CRC (the message CRC
 * covers the prelude and its CRC, so those 8 bytes are never run twice), the headers, and
 * the callback gets views into the chunk. Otherwise two phases: the 12-byte prelude is
 * gathered (it may arrive a byte at a time) and checked the same way, and then the rest
 * of the message is copied into the caller's buffer until `total` bytes have been seen,
 * the CRC running as bytes arrive. Both end in message_done with the same checks in the
 * same order, so the items and errors do not depend on the chunking.
 *
 * The headers are walked once per distinct header block: Bedrock sends the same three
 * (`:event-type`, `:content-type`, `:message-type`) in hundreds of messages in a row, so
 * the last clean block is kept (TS_EVS_HEADERS_MEMO) and a block of the same bytes is
 * compared instead of walked, its two views taken from where they lay last time.
 *
 * CRC32 is the IEEE polynomial (0xEDB88320 reflected), as the format specifies:
 * base/crc32.h, which folds with carry-less multiplication where the CPU has it. The CRC
 * runs over every byte of every message; with tables, eight bytes a step, it was still
 * the largest cost of reading a Bedrock stream (docs/performance.md).
 */
#include "stream/eventstream.h"

#include <string.h>

#include "base/crc32.h"

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int ts_evs_init(ts_evs *s, char *buf, size_t cap, ts_evs_cb cb, void *user) {
  if (!s || !buf || cap < 16 || !cb) return TS_E_INVAL;
  memset(s, 0, sizeof *s);
  s->buf = buf;
  s->cap = cap;
  s->cb = cb;
  s->user = user;
  s->room = cap;
  return TS_E_OK;
}

int ts_evs_set_grow(ts_evs *s, size_t size, ts_evs_grow_fn grow, void *user) {
  if (!s || !grow || size > s->cap || s->pos) return TS_E_INVAL;
  s->room = size;
  s->grow = grow;
  s->grow_user = user;
  return TS_E_OK;
}

/* Room for `need` bytes (room < need <= cap): 0, or -1 when the hook refused. */
static __attribute__((noinline)) int grow_buf(ts_evs *s, size_t need) {
  return ts_grow_to(s->grow, s->grow_user, &s->buf, &s->room, s->cap, need);
}

static void report(ts_evs *s, const ts_evs_item *it) {
  if (!s->aborted && s->cb(s->user, it)) s->aborted = 1;
}

static void fail(ts_evs *s, int code) {
  s->dead = 1;
  ts_evs_item it = {0};
  it.kind = TS_EVS_ERROR;
  it.code = code;
  it.err_offset = s->msg_start;
  report(s, &it);
}

/* The headers of the complete message: the string values of the ones that matter (xtype:
 * `:exception-type`, or an error message's `:error-code`; emsg: its `:error-message`). */
static int walk_headers(const char *hb, size_t hlen, ts_view *mtype, ts_view *etype, ts_view *xtype,
                        ts_view *emsg) {
  const uint8_t *p = (const uint8_t *)hb, *end = p + hlen;
  while (p < end) {
    size_t nl = *p++;
    if ((size_t)(end - p) < nl + 1) return -1;
    const char *name = (const char *)p;
    p += nl;
    uint8_t type = *p++;
    size_t vl;
    switch (type) {
      case 0: case 1: vl = 0; break;          /* true, false */
      case 2: vl = 1; break;                  /* byte */
      case 3: vl = 2; break;                  /* short */
      case 4: vl = 4; break;                  /* integer */
      case 5: case 8: vl = 8; break;          /* long, timestamp */
      case 9: vl = 16; break;                 /* uuid */
      case 6: case 7:                         /* bytes, string */
        if (end - p < 2) return -1;
        vl = (size_t)p[0] << 8 | p[1];
        p += 2;
        break;
      default: return -1;
    }
    if ((size_t)(end - p) < vl) return -1;
    ts_view v = {(const char *)p, vl};
    /* name[1] first: `:content-type`, in every message, has the length of
     * `:message-type` and is never compared whole */
    if (type == 7 && nl > 1) {
      if (nl == 13 && name[1] == 'm' && !memcmp(name, ":message-type", 13)) *mtype = v;
      else if (nl == 11 && name[1] == 'e' && !memcmp(name, ":event-type", 11)) *etype = v;
      else if (nl == 15 && name[1] == 'e' && !memcmp(name, ":exception-type", 15)) *xtype = v;
      else if (nl == 11 && name[1] == 'e' && !memcmp(name, ":error-code", 11)) *xtype = v;
      else if (nl == 14 && name[1] == 'e' && !memcmp(name, ":error-message", 14)) *emsg = v;
    }
    p += vl;
  }
  return 0;
}

/* The message is complete, its headers at hb and its payload after them (in the caller's
 * chunk, or in the buffer), `crc` the CRC of all of it before its own CRC: checks that
 * CRC, reads the headers (from the memo when they are the last message's bytes) and
 * reports the message. Inlined, as take_prelude: a whole message is the hot path, and a
 * call there cost more in saved registers than the work (about 60 instructions a
 * message, docs/performance.md). */
static inline __attribute__((always_inline)) void message_done(ts_evs *s, char *hb, uint32_t crc) {
  size_t body = s->total - 16; /* headers + payload */
  if (be32((const uint8_t *)hb + body) != crc) {
    fail(s, TS_E_EVS_CRC);
    return;
  }
  ts_evs_item it;
  it.kind = TS_EVS_MESSAGE;
  it.error_message = (ts_view){"", 0};
  if (s->hm_len && s->hlen == s->hm_len && !memcmp(hb, s->hm, s->hlen)) {
    /* the last message's headers: the same walk, the same views */
    it.message_type = (ts_view){hb + s->hm_off[0], s->hm_vlen[0]};
    it.event_type = (ts_view){hb + s->hm_off[1], s->hm_vlen[1]};
  } else {
    ts_view mt = {"", 0}, et = {"", 0}, xt = {"", 0}, em = {NULL, 0};
    s->hm_len = 0;
    if (walk_headers(hb, s->hlen, &mt, &et, &xt, &em) < 0) {
      fail(s, TS_E_EVS_HEADERS);
      return;
    }
    it.message_type = mt;
    it.event_type = xt.len ? xt : et;
    if (em.p) it.error_message = em;
    if (s->hlen > 0 && s->hlen <= TS_EVS_HEADERS_MEMO && !em.p) { /* (the memo keeps two views) */
      /* inside the block: under TS_EVS_HEADERS_MEMO; an empty view keeps its "" */
      s->hm_vlen[0] = (uint16_t)it.message_type.len;
      s->hm_vlen[1] = (uint16_t)it.event_type.len;
      s->hm_off[0] = it.message_type.len ? (uint16_t)(it.message_type.p - hb) : 0;
      s->hm_off[1] = it.event_type.len ? (uint16_t)(it.event_type.p - hb) : 0;
      memcpy(s->hm, hb, s->hlen);
      s->hm_len = (uint16_t)s->hlen;
    }
  }
  it.payload = hb + s->hlen;
  it.payload_len = body - s->hlen;
  it.end_offset = s->msg_start + s->total;
  it.code = 0;
  it.err_offset = 0;
  report(s, &it);
  s->plen = 0;
  s->len = 0;
  s->msg_start += s->total;
}

/* Checks a complete prelude (its CRC, then the lengths) and takes total and hlen from it:
 * 0, with *crc8 the CRC of its first 8 bytes (the start of the message's CRC); -1 after
 * failing the framer. */
static inline __attribute__((always_inline)) int take_prelude(ts_evs *s, const uint8_t *pre, uint32_t *crc8) {
  *crc8 = ts_crc32_update(0, pre, 8);
  if (*crc8 != be32(pre + 8)) {
    fail(s, TS_E_EVS_CRC);
    return -1;
  }
  s->total = be32(pre);
  s->hlen = be32(pre + 4);
  if (s->total < 16 || s->hlen > s->total - 16) {
    fail(s, TS_E_EVS_HEADERS);
    return -1;
  }
  if (s->total - 12 > s->cap) {
    fail(s, TS_E_EVS_TOO_LARGE);
    return -1;
  }
  return 0;
}

int ts_evs_feed(ts_evs *s, char *buf, size_t len) {
  if (!s || (!buf && len)) return TS_E_INVAL;
  if (s->aborted) return TS_E_ABORTED;
  size_t i = 0;
  while (i < len && !s->dead && !s->aborted) {
    uint8_t *p = (uint8_t *)buf + i;
    if (s->plen == 0 && len - i >= 16) {
      /* A whole message at hand (the usual case: a read holds one or more): its CRC in
       * one run over the input, where the CRC is fastest, and no copy: the message is
       * handed out where it lies. The same checks in the same order as byte by byte. */
      uint32_t total = be32(p), crc;
      if (total >= 16 && total <= len - i) {
        if (take_prelude(s, p, &crc) < 0) break;
        /* the prelude's CRC is the CRC of its first 8 bytes: the message's CRC goes on
         * from it over the prelude's CRC and the rest */
        crc = ts_crc32_update(crc, p + 8, total - 12);
        i += total;
        message_done(s, (char *)p + 12, crc);
        continue;
      }
    }
    if (s->plen < 12) {
      size_t want = (size_t)(12 - s->plen), k = want < len - i ? want : len - i;
      memcpy(s->prelude + s->plen, p, k);
      s->plen = (uint8_t)(s->plen + k);
      i += k;
      if (s->plen < 12) break;
      uint32_t crc;
      if (take_prelude(s, s->prelude, &crc) < 0) break;
      if (s->total - 12 > s->room && grow_buf(s, s->total - 12)) { /* the rest goes to buf */
        fail(s, TS_E_NOMEM);
        break;
      }
      s->crc = ts_crc32_update(crc, s->prelude + 8, 4);
      s->len = 0;
      continue;
    }
    /* the message after its prelude: all but the last 4 bytes count in the CRC */
    size_t need = s->total - 12 - s->len;
    size_t k = need < len - i ? need : len - i;
    memcpy(s->buf + s->len, p, k);
    size_t crc_end = s->total - 16; /* bytes of headers + payload */
    if (s->len < crc_end) {
      size_t c = s->len + k <= crc_end ? k : crc_end - s->len;
      s->crc = ts_crc32_update(s->crc, (const uint8_t *)s->buf + s->len, c);
    }
    s->len += k;
    i += k;
    if (s->len == s->total - 12) message_done(s, s->buf, s->crc);
  }
  s->pos += len;
  return s->aborted ? TS_E_ABORTED : TS_E_OK;
}

int ts_evs_cut(const ts_evs *s) { return s->dead || s->plen > 0 || s->len > 0; }
