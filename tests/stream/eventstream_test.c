/*
 * eventstream_test.c: tests for stream/eventstream.c, the AWS event stream framer.
 *
 * Frames are built here with a bitwise CRC32 (a reference independent of the framer's
 * table); each stream is fed whole, byte by byte and in reads of every size 2..31, and
 * must give the same items. Bad CRCs (prelude and message), impossible lengths, a header
 * walk past the end, a message over the limit and a stream cut inside a message are the
 * errors that matter.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/eventstream.h"
#include "support/evs_frame.h"
#include "support/grow.h"
#include "support/test_support.h"

#define ref_crc ts_test_crc32 /* support/evs_frame.h: bit by bit, independent of the framer */

static void put32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

static size_t header(uint8_t *p, const char *name, const char *val) {
  size_t nl = strlen(name), vl = strlen(val), o = 0;
  p[o++] = (uint8_t)nl;
  memcpy(p + o, name, nl), o += nl;
  p[o++] = 7;
  p[o++] = (uint8_t)(vl >> 8), p[o++] = (uint8_t)vl;
  memcpy(p + o, val, vl), o += vl;
  return o;
}

/* Appends one message to out at *n: the header block h[0..hl) and the payload. */
static void frame_raw_headers(uint8_t *out, size_t *n, const uint8_t *h, size_t hl, const char *payload) {
  size_t pl = strlen(payload), total = 12 + hl + pl + 4;
  uint8_t *m = out + *n;
  put32(m, (uint32_t)total);
  put32(m + 4, (uint32_t)hl);
  put32(m + 8, ref_crc(m, 8));
  memcpy(m + 12, h, hl);
  memcpy(m + 12 + hl, payload, pl);
  put32(m + total - 4, ref_crc(m, total - 4));
  *n += total;
}

/* Appends one message to out at *n. */
static void frame(uint8_t *out, size_t *n, const char *mtype, const char *etype, const char *payload) {
  uint8_t h[256];
  size_t hl = header(h, ":message-type", mtype);
  hl += header(h + hl, strcmp(mtype, "exception") ? ":event-type" : ":exception-type", etype);
  hl += header(h + hl, ":flag", ""); /* a string header of no interest */
  frame_raw_headers(out, n, h, hl, payload);
}

typedef struct {
  char trace[2048];
  size_t n;
  const char *lo, *hi; /* the chunk being fed */
  size_t views, copies; /* messages handed out in the chunk, and from the buffer */
  int scribble;         /* rewrite each payload after recording it (the consumer may) */
} rec;

static int on_item(void *user, const ts_evs_item *it) {
  rec *r = user;
  int w;
  if (it->kind == TS_EVS_MESSAGE)
    w = snprintf(r->trace + r->n, sizeof r->trace - r->n, "%.*s/%.*s@%llu:%.*s|",
                 (int)it->message_type.len, it->message_type.p, (int)it->event_type.len,
                 it->event_type.p, (unsigned long long)it->end_offset, (int)it->payload_len,
                 it->payload);
  else
    w = snprintf(r->trace + r->n, sizeof r->trace - r->n, "E%s@%llu|", ts_err_name(it->code),
                 (unsigned long long)it->err_offset);
  if (w > 0 && (size_t)w < sizeof r->trace - r->n) r->n += (size_t)w;
  if (it->kind == TS_EVS_MESSAGE && it->error_message.len) { /* before the '|' just written */
    w = snprintf(r->trace + r->n - 1, sizeof r->trace - r->n + 1, "!%.*s|", (int)it->error_message.len,
                 it->error_message.p);
    if (w > 0 && (size_t)w < sizeof r->trace - r->n + 1) r->n += (size_t)w - 1;
  }
  if (it->kind == TS_EVS_MESSAGE) {
    if (it->payload >= r->lo && it->payload + it->payload_len <= r->hi) r->views++;
    else r->copies++;
    if (r->scribble) memset(it->payload, '#', it->payload_len);
  }
  return 0;
}

/* The runs with grow_mode set start with no buffer and grow it on demand
 * (support/grow.h: each growth exactly what is asked, refused past G.max). */
static int grow_mode;
static ts_test_grow G;

static void run(const uint8_t *in, size_t len, size_t cap, size_t step, rec *r) {
  int scribble = r->scribble;
  memset(r, 0, sizeof *r);
  r->scribble = scribble;
  char buf[512];
  ts_evs s;
  ck_assert_int_eq(ts_evs_init(&s, buf, cap, on_item, r), TS_E_OK);
  if (grow_mode) ck_assert_int_eq(ts_evs_set_grow(&s, 0, ts_test_exact_grow, &G), TS_E_OK);
  G.grown = NULL;
  G.bad = 0;
  if (!step) step = len ? len : 1;
  for (size_t off = 0; off < len; off += step) {
    size_t k = len - off < step ? len - off : step;
    char *piece = malloc(k);
    memcpy(piece, in + off, k);
    r->lo = piece, r->hi = piece + k;
    ck_assert_int_eq(ts_evs_feed(&s, piece, k), TS_E_OK);
    free(piece);
  }
  snprintf(r->trace + r->n, sizeof r->trace - r->n, "%s", ts_evs_cut(&s) ? "cut" : "end");
  ck_assert_int_eq(G.bad, 0);
  free(G.grown);
  G.grown = NULL;
}

/* Whole and at every read size 1..31, with the caller's buffer and with none at the start,
 * grown on demand: the same trace every time. */
static void check(int line, const uint8_t *in, size_t len, size_t cap, const char *want) {
  rec whole = {0}, part = {0};
  for (grow_mode = 0; grow_mode < 2; grow_mode++) {
    run(in, len, cap, 0, &whole);
    ck_assert_msg(!strcmp(whole.trace, want), "line %d:\n got %s\nwant %s", line, whole.trace, want);
    for (size_t step = 1; step <= 31; step++) {
      run(in, len, cap, step, &part);
      ck_assert_msg(!strcmp(part.trace, want), "line %d, reads of %zu%s:\n got %s", line, step,
                    grow_mode ? " (grown)" : "", part.trace);
    }
  }
  grow_mode = 0;
}

/* A refused growth: a message that comes in pieces and cannot be given room is the sticky
 * TS_E_NOMEM at that message (as TS_E_EVS_TOO_LARGE); read whole, it needs no buffer. */
START_TEST(test_grow_refused) {
  uint8_t s[2048];
  size_t n = 0;
  frame(s, &n, "event", "contentBlockDelta", "{\"a\":1}");
  size_t first = n;
  frame(s, &n, "event", "messageStop", "{}");
  char want[256];
  rec r = {0};
  grow_mode = 1;
  G.max = 8;
  run(s, n, 512, 0, &r);
  snprintf(want, sizeof want, "event/contentBlockDelta@%zu:{\"a\":1}|event/messageStop@%zu:{}|end", first, n);
  ck_assert_str_eq(r.trace, want);
  for (size_t step = 1; step <= 31; step++) {
    run(s, n, 512, step, &r);
    ck_assert_msg(!strcmp(r.trace, "Enomem@0|cut"), "reads of %zu: %s", step, r.trace);
  }
  /* the first message whole in the first read, the second in pieces (its first byte there) */
  rec two = {0};
  G.max = 0;
  run(s, n, 512, first + 1, &two);
  ck_assert_str_eq(two.trace, want);
  G.max = 8;
  run(s, n, 512, first + 1, &two);
  snprintf(want, sizeof want, "event/contentBlockDelta@%zu:{\"a\":1}|Enomem@%zu|cut", first, first);
  ck_assert_str_eq(two.trace, want);
  G.max = 0;
  grow_mode = 0;
  ts_evs e;
  char buf[16];
  ck_assert_int_eq(ts_evs_init(&e, buf, 16, on_item, &r), TS_E_OK);
  ck_assert_int_eq(ts_evs_set_grow(&e, 0, NULL, NULL), TS_E_INVAL);
  ck_assert_int_eq(ts_evs_set_grow(&e, 17, ts_test_exact_grow, &G), TS_E_INVAL);
  ck_assert_int_eq(ts_evs_feed(&e, buf, 1), TS_E_OK);
  ck_assert_int_eq(ts_evs_set_grow(&e, 0, ts_test_exact_grow, &G), TS_E_INVAL);
}
END_TEST

START_TEST(test_frames) {
  uint8_t s[2048];
  size_t n = 0;
  frame(s, &n, "event", "contentBlockDelta", "{\"a\":1}");
  size_t first = n;
  frame(s, &n, "event", "messageStop", "{}");
  frame(s, &n, "exception", "throttlingException", "{\"message\":\"slow down\"}");
  char want[512];
  /* the end offsets, computed independently */
  size_t second = first + (size_t)(((uint32_t)s[first] << 24 | (uint32_t)s[first + 1] << 16 |
                                    (uint32_t)s[first + 2] << 8 | s[first + 3]));
  snprintf(want, sizeof want,
           "event/contentBlockDelta@%zu:{\"a\":1}|event/messageStop@%zu:{}|"
           "exception/throttlingException@%zu:{\"message\":\"slow down\"}|end",
           first, second, n);
  check(__LINE__, s, n, 512, want);
  /* cut inside the second message, at every length inside it */
  for (size_t cut = first + 1; cut < second; cut++) {
    snprintf(want, sizeof want, "event/contentBlockDelta@%zu:{\"a\":1}|cut", first);
    check(__LINE__, s, cut, 512, want);
  }
  /* a bad message CRC: an error at that message, the rest ignored */
  uint8_t bad[2048];
  memcpy(bad, s, n);
  bad[second - 1] ^= 1;
  snprintf(want, sizeof want, "event/contentBlockDelta@%zu:{\"a\":1}|Eevs_crc@%zu|cut", first, first);
  check(__LINE__, bad, n, 512, want);
}
END_TEST

START_TEST(test_errors) {
  uint8_t s[2048];
  size_t n = 0;
  char want[256];
  frame(s, &n, "event", "contentBlockDelta", "{\"a\":1}");
  size_t first = n;
  frame(s, &n, "event", "messageStop", "{}");
  uint8_t bad[2048];
  /* a bad prelude CRC in the second message */
  memcpy(bad, s, n);
  bad[first + 9] ^= 1;
  snprintf(want, sizeof want, "event/contentBlockDelta@%zu:{\"a\":1}|Eevs_crc@%zu|cut", first, first);
  check(__LINE__, bad, n, 512, want);
  /* a total length under the minimum, with a valid prelude CRC */
  memcpy(bad, s, n);
  put32(bad + first, 10);
  put32(bad + first + 8, ref_crc(bad + first, 8));
  snprintf(want, sizeof want, "event/contentBlockDelta@%zu:{\"a\":1}|Eevs_headers@%zu|cut", first, first);
  check(__LINE__, bad, n, 512, want);
  /* headers that run past their length (message CRC recomputed) */
  memcpy(bad, s, n);
  bad[12] = 200; /* the first header's name length */
  put32(bad + first - 4, ref_crc(bad, first - 4));
  snprintf(want, sizeof want, "Eevs_headers@0|cut");
  check(__LINE__, bad, n, 512, want);
  /* a message over the buffer */
  snprintf(want, sizeof want, "Eevs_too_large@0|cut");
  check(__LINE__, s, n, 16, want);
  /* nothing at all */
  check(__LINE__, s, 0, 512, "end");
  /* the API */
  char buf[16];
  ts_evs e;
  rec r;
  ck_assert_int_eq(ts_evs_init(NULL, buf, 16, on_item, &r), TS_E_INVAL);
  ck_assert_int_eq(ts_evs_init(&e, buf, 15, on_item, &r), TS_E_INVAL);
  ck_assert_int_eq(ts_evs_init(&e, buf, 16, NULL, &r), TS_E_INVAL);
  ck_assert_int_eq(ts_evs_init(&e, buf, 16, on_item, &r), TS_E_OK);
  ck_assert_int_eq(ts_evs_feed(&e, NULL, 1), TS_E_INVAL);
}
END_TEST

/* The header memo: a message whose header block is the last one's bytes is read from the
 * memo; one of the same length with another value, or a bad walk of the same length, is
 * walked again. Whole (where the memo is hit) and in every read size. */
START_TEST(test_header_memo) {
  uint8_t s[4096];
  size_t n = 0, end[6];
  char want[1024];
  frame(s, &n, "event", "contentBlockDelta", "{\"a\":1}"), end[0] = n;
  frame(s, &n, "event", "contentBlockDelta", "{\"a\":2}"), end[1] = n;
  frame(s, &n, "event", "contentBlockDelta", "{\"a\":3}"), end[2] = n;
  frame(s, &n, "event", "contentBlockDeltb", "{\"a\":4}"), end[3] = n; /* same length, another value */
  frame(s, &n, "exception", "contentBlockDelt", "{}"), end[4] = n;
  frame(s, &n, "event", "contentBlockDelta", "{\"a\":5}"), end[5] = n;
  snprintf(want, sizeof want,
           "event/contentBlockDelta@%zu:{\"a\":1}|event/contentBlockDelta@%zu:{\"a\":2}|"
           "event/contentBlockDelta@%zu:{\"a\":3}|event/contentBlockDeltb@%zu:{\"a\":4}|"
           "exception/contentBlockDelt@%zu:{}|event/contentBlockDelta@%zu:{\"a\":5}|end",
           end[0], end[1], end[2], end[3], end[4], end[5]);
  check(__LINE__, s, n, 512, want);
  /* the third message's headers broken at the same length (a name length past the
   * block; the message CRC recomputed): walked, and refused, not taken from the memo */
  uint8_t bad[4096];
  memcpy(bad, s, n);
  bad[end[1] + 12] = 200;
  put32(bad + end[2] - 4, ref_crc(bad + end[1], end[2] - end[1] - 4));
  snprintf(want, sizeof want,
           "event/contentBlockDelta@%zu:{\"a\":1}|event/contentBlockDelta@%zu:{\"a\":2}|Eevs_headers@%zu|cut",
           end[0], end[1], end[1]);
  check(__LINE__, bad, n, 512, want);
  /* a header block over TS_EVS_HEADERS_MEMO is walked every time */
  uint8_t big[4096];
  size_t m = 0, bend[2];
  char longtype[TS_EVS_HEADERS_MEMO + 8];
  memset(longtype, 'x', sizeof longtype - 1);
  longtype[sizeof longtype - 1] = 0;
  frame(big, &m, "event", longtype, "{}"), bend[0] = m;
  frame(big, &m, "event", longtype, "[]"), bend[1] = m;
  snprintf(want, sizeof want, "event/%s@%zu:{}|event/%s@%zu:[]|end", longtype, bend[0], longtype, bend[1]);
  check(__LINE__, big, m, 512, want);
}
END_TEST

/* A message whole in the chunk is handed out where it lies (no copy into the buffer); one
 * that arrives in pieces comes from the buffer. The consumer may rewrite a payload in
 * place (the tap decodes strings there): that never changes what the framer reads next,
 * whole or in pieces. */
START_TEST(test_views_in_the_chunk) {
  uint8_t s[4096];
  size_t n = 0, end[3];
  frame(s, &n, "event", "contentBlockDelta", "{\"a\":1}"), end[0] = n;
  frame(s, &n, "event", "contentBlockDelta", "{\"a\":2}"), end[1] = n;
  frame(s, &n, "event", "messageStop", "{}"), end[2] = n;
  rec r = {0};
  run(s, n, 512, 0, &r);
  ck_assert_uint_eq(r.views, 3);
  ck_assert_uint_eq(r.copies, 0);
  run(s, n, 512, 1, &r);
  ck_assert_uint_eq(r.views, 0);
  ck_assert_uint_eq(r.copies, 3);
  char want[512];
  snprintf(want, sizeof want,
           "event/contentBlockDelta@%zu:{\"a\":1}|event/contentBlockDelta@%zu:{\"a\":2}|"
           "event/messageStop@%zu:{}|end",
           end[0], end[1], end[2]);
  for (size_t step = 0; step <= 31; step++) {
    rec w = {0};
    w.scribble = 1;
    run(s, n, 512, step, &w);
    ck_assert_msg(!strcmp(w.trace, want), "reads of %zu, payloads rewritten:\n got %s", step, w.trace);
  }
}
END_TEST

/* A header of every type (0..9: true, false, byte, short, integer, long, bytes, string,
 * timestamp, uuid) in front of the three that matter: each is stepped over by its size;
 * a type past 9 is a header error. */
START_TEST(test_header_types) {
  static const size_t size[10] = {0, 0, 1, 2, 4, 8, 0, 0, 8, 16}; /* 6, 7: a 2-byte length */
  uint8_t h[512];
  size_t hl = 0;
  for (int t = 0; t <= 9; t++) {
    h[hl++] = 2, h[hl++] = 'h', h[hl++] = (uint8_t)('0' + t), h[hl++] = (uint8_t)t;
    size_t vl = size[t];
    if (t == 6 || t == 7) vl = 5, h[hl++] = 0, h[hl++] = 5;
    /* values that look like headers, so a wrong size would misread them */
    for (size_t k = 0; k < vl; k++) h[hl++] = (uint8_t)(k % 2 ? 7 : 13);
  }
  hl += header(h + hl, ":message-type", "event");
  hl += header(h + hl, ":event-type", "metadata");
  uint8_t s[2048];
  size_t n = 0;
  frame_raw_headers(s, &n, h, hl, "{}");
  size_t first = n;
  frame_raw_headers(s, &n, h, hl, "[]"); /* the same block again: from the memo */
  char want[256];
  snprintf(want, sizeof want, "event/metadata@%zu:{}|event/metadata@%zu:[]|end", first, n);
  check(__LINE__, s, n, 512, want);
  /* type 10 does not exist */
  h[3] = 10;
  n = 0;
  frame_raw_headers(s, &n, h, hl, "{}");
  check(__LINE__, s, n, 512, "Eevs_headers@0|cut");
}
END_TEST

/* An `error` message (an error the service did not model): its `:error-code` is the
 * item's type and its `:error-message` is handed out too, also when the next message
 * repeats the same header block (the memo keeps no error message). */
START_TEST(test_error_message) {
  uint8_t h[256];
  size_t hl = header(h, ":error-code", "InternalFailure");
  hl += header(h + hl, ":message-type", "error");
  hl += header(h + hl, ":error-message", "An internal error occurred.");
  uint8_t s[1024];
  size_t n = 0;
  frame(s, &n, "event", "messageStart", "{}");
  size_t first = n;
  frame_raw_headers(s, &n, h, hl, "");
  size_t second = n;
  frame_raw_headers(s, &n, h, hl, "");
  char want[256];
  snprintf(want, sizeof want,
           "event/messageStart@%zu:{}|error/InternalFailure@%zu:!An internal error occurred.|"
           "error/InternalFailure@%zu:!An internal error occurred.|end", first, second, n);
  check(__LINE__, s, n, 512, want);
}
END_TEST

/* Any one byte of a message changed, at every byte, is a CRC error at that message
 * (the prelude's CRC covers its lengths, the message's CRC the rest), whole and at every
 * split; the message before it is kept, the one after it ignored. */
START_TEST(test_corrupt_every_byte) {
  uint8_t s[1024], bad[1024];
  size_t n = 0;
  frame(s, &n, "event", "contentBlockDelta", "{\"a\":1}");
  size_t first = n;
  frame(s, &n, "event", "contentBlockDelta", "{\"a\":2}");
  size_t second = n;
  frame(s, &n, "event", "messageStop", "{}");
  char want[256];
  snprintf(want, sizeof want, "event/contentBlockDelta@%zu:{\"a\":1}|Eevs_crc@%zu|cut", first, first);
  for (size_t at = first; at < second; at++) {
    memcpy(bad, s, n);
    bad[at] ^= 0x41;
    check(__LINE__, bad, n, 512, want);
  }
}
END_TEST

int main(void) {
  Suite *su = suite_create("eventstream");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_frames);
  tcase_add_test(tc, test_errors);
  tcase_add_test(tc, test_grow_refused);
  tcase_add_test(tc, test_header_memo);
  tcase_add_test(tc, test_views_in_the_chunk);
  tcase_add_test(tc, test_header_types);
  tcase_add_test(tc, test_error_message);
  tcase_add_test(tc, test_corrupt_every_byte);
  suite_add_tcase(su, tc);
  SRunner *sr = srunner_create(su);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
