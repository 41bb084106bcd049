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

/* FNV-1a, 64 bit: short keys, no adversary that profits from collisions beyond a
 * slower lookup (the key count is capped by the callers). */
static uint64_t hash_key(const char *k, size_t n) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < n; i++) {
    h ^= (unsigned char)k[i];
    h *= 1099511628211ULL;
  }
  return h;
}

int ts__bus_map_init(ts__bus_map *m) {
  m->nb = 64;
  m->n = 0;
  m->b = calloc(m->nb, sizeof *m->b);
  return m->b ? 0 : TS_E_NOMEM;
}

void ts__bus_map_fini(ts__bus_map *m) {
  free(m->b);
  m->b = NULL;
  m->nb = m->n = 0;
}

ts__bus_node *ts__bus_map_find(const ts__bus_map *m, const char *key, size_t klen) {
  uint64_t h = hash_key(key, klen);
  for (ts__bus_node *n = m->b[h & (m->nb - 1)]; n; n = n->next)
    if (n->hash == h && n->klen == klen && !memcmp(n->key, key, klen)) return n;
  return NULL;
}

static int grow(ts__bus_map *m) {
  size_t nb = m->nb * 2;
  ts__bus_node **b = calloc(nb, sizeof *b);
  if (!b) return TS_E_NOMEM;
  for (size_t i = 0; i < m->nb; i++) {
    ts__bus_node *n = m->b[i];
    while (n) {
      ts__bus_node *next = n->next;
      n->next = b[n->hash & (nb - 1)];
      b[n->hash & (nb - 1)] = n;
      n = next;
    }
  }
  free(m->b);
  m->b = b;
  m->nb = nb;
  return 0;
}

int ts__bus_map_insert(ts__bus_map *m, ts__bus_node *node, const char *key, size_t klen) {
  if (klen > TS_THREAD_ID_MAX) return TS_E_INVAL;
  if (m->n >= m->nb && grow(m) != 0) return TS_E_NOMEM;
  memcpy(node->key, key, klen);
  node->key[klen] = '\0';
  node->klen = klen;
  node->hash = hash_key(key, klen);
  ts__bus_node **slot = &m->b[node->hash & (m->nb - 1)];
  node->next = *slot;
  *slot = node;
  m->n++;
  return 0;
}

void ts__bus_map_remove(ts__bus_map *m, ts__bus_node *node) {
  for (ts__bus_node **pp = &m->b[node->hash & (m->nb - 1)]; *pp; pp = &(*pp)->next) {
    if (*pp == node) {
      *pp = node->next;
      m->n--;
      return;
    }
  }
}
