/*
 * bus_wire.c: see bus_wire.h and docs/bus.md.
 *
 * The seq reader walks the event JSON instead of searching for the text "seq": the
 * canonical encoder puts "seq" fourth, but a subscriber should not depend on key order,
 * and a thread id or an argument can contain anything. The walk tracks only what it
 * needs: inside a string or not (and a pending backslash), and the nesting depth. A
 * key is recognised at depth 1 as a string followed by ':'.
 */
#include "events/bus_wire.h"

#include <stdlib.h>
#include <string.h>

#include "base/error.h"

int ts_bus_wire_split(const char *msg, size_t len, const char **thread, size_t *thread_len,
                      const char **json, size_t *json_len) {
  size_t lim = len < TS_THREAD_ID_MAX + 1 ? len : TS_THREAD_ID_MAX + 1;
  const char *sep = memchr(msg, TS_BUS_SEP, lim);
  if (!sep || !ts_thread_id_valid(msg, (size_t)(sep - msg))) return TS_E_INVAL;
  *thread = msg;
  *thread_len = (size_t)(sep - msg);
  *json = sep + 1;
  *json_len = len - *thread_len - 1;
  return 0;
}

int ts_bus_parse_u64(const char **pp, const char *end, uint64_t *out) {
  const char *p = *pp;
  uint64_t v = 0;
  int digits = 0;
  while (p < end && *p >= '0' && *p <= '9') {
    unsigned d = (unsigned)(*p - '0');
    if (v > (UINT64_MAX - d) / 10) return TS_E_INVAL;
    v = v * 10 + d;
    p++;
    if (++digits > 20) return TS_E_INVAL;
  }
  if (!digits) return TS_E_INVAL;
  *pp = p;
  *out = v;
  return 0;
}

int ts_bus_json_seq(const char *json, size_t len, uint64_t *seq) {
  const char *p = json, *end = json + len;
  int depth = 0;
  while (p < end) {
    char c = *p++;
    if (c == '"') {
      const char *s = p; /* string body starts here */
      while (p < end && *p != '"') p += (*p == '\\') ? 2 : 1;
      if (p >= end) return TS_E_INVAL;
      size_t n = (size_t)(p - s);
      p++; /* closing quote */
      if (depth == 1 && n == 3 && !memcmp(s, "seq", 3)) {
        const char *q = p;
        while (q < end && (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n')) q++;
        if (q < end && *q == ':') {
          q++;
          while (q < end && (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n')) q++;
          return ts_bus_parse_u64(&q, end, seq);
        }
      }
    } else if (c == '{' || c == '[') {
      depth++;
    } else if (c == '}' || c == ']') {
      depth--;
    }
  }
  return TS_E_INVAL;
}

int ts__bus_node_link(ts_hmap *m, ts__bus_node *node, const char *key, size_t klen) {
  if (klen > TS_THREAD_ID_MAX) return TS_E_INVAL;
  memcpy(node->key, key, klen);
  node->key[klen] = '\0';
  node->klen = klen;
  return ts_hmap_insert(m, &node->h, node->key, klen);
}
