/*
 * evs_frame.c: see evs_frame.h. Plain byte pushing: this is the reference the framer
 * under test is compared with, so it is written for obviousness, not speed.
 */
#include "support/evs_frame.h"

#include <string.h>

uint32_t ts_test_crc32(const uint8_t *p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
  }
  return ~c;
}

static void put32(sb *b, uint32_t v) {
  uint8_t x[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
  sb_add(b, x, 4);
}

static void header(sb *b, const char *name, const char *val) {
  size_t nl = strlen(name), vl = strlen(val);
  uint8_t x[3] = {7, (uint8_t)(vl >> 8), (uint8_t)vl};
  sb_putc(b, (char)nl);
  sb_add(b, name, nl);
  sb_add(b, x, 3);
  sb_add(b, val, vl);
}

void ts_test_evs_frame(sb *out, const char *mtype, const char *etype, const char *payload) {
  sb h = {0};
  header(&h, ":message-type", mtype);
  header(&h, strcmp(mtype, "exception") ? ":event-type" : ":exception-type", etype);
  header(&h, ":content-type", "application/json");
  size_t pl = strlen(payload), total = 12 + h.len + pl + 4;
  sb m = {0};
  put32(&m, (uint32_t)total);
  put32(&m, (uint32_t)h.len);
  put32(&m, ts_test_crc32((const uint8_t *)m.p, 8));
  sb_add(&m, h.p, h.len);
  sb_add(&m, payload, pl);
  put32(&m, ts_test_crc32((const uint8_t *)m.p, m.len));
  sb_add(out, m.p, m.len);
  sb_free(&h);
  sb_free(&m);
}
