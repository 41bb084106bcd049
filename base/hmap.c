/*
 * hmap.c: see hmap.h. The bucket index is the low bits of the 64-bit SipHash; growth
 * rehashes nothing (each node keeps its hash) and relinks every node once.
 */
#include "base/hmap.h"

#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "base/error.h"

#define FIRST_BUCKETS 64

static uint64_t hash_key(const ts_hmap *m, const char *k, size_t n) {
  unsigned char out[crypto_shorthash_BYTES];
  crypto_shorthash(out, (const unsigned char *)k, n, m->_k);
  uint64_t h;
  memcpy(&h, out, sizeof h);
  return h;
}

int ts_hmap_init(ts_hmap *m) {
  memset(m, 0, sizeof *m);
  if (sodium_init() < 0) return TS_E_IO;
  randombytes_buf(m->_k, sizeof m->_k);
  m->_b = calloc(FIRST_BUCKETS, sizeof *m->_b);
  if (!m->_b) return TS_E_NOMEM;
  m->_nb = FIRST_BUCKETS;
  return 0;
}

void ts_hmap_fini(ts_hmap *m) {
  free(m->_b);
  m->_b = NULL;
  m->_nb = m->n = 0;
  sodium_memzero(m->_k, sizeof m->_k);
}

ts_hmap_node *ts_hmap_find(const ts_hmap *m, const char *key, size_t klen) {
  if (!m->_nb) return NULL;
  uint64_t h = hash_key(m, key, klen);
  for (ts_hmap_node *n = m->_b[h & (m->_nb - 1)]; n; n = n->next)
    if (n->hash == h && n->klen == klen && !memcmp(n->key, key, klen)) return n;
  return NULL;
}

static int grow(ts_hmap *m) {
  size_t nb = m->_nb ? m->_nb * 2 : FIRST_BUCKETS;
  if (nb > SIZE_MAX / sizeof(ts_hmap_node *)) return TS_E_NOMEM;
  ts_hmap_node **b = calloc(nb, sizeof *b);
  if (!b) return TS_E_NOMEM;
  for (size_t i = 0; i < m->_nb; i++) {
    ts_hmap_node *n = m->_b[i];
    while (n) {
      ts_hmap_node *next = n->next;
      n->next = b[n->hash & (nb - 1)];
      b[n->hash & (nb - 1)] = n;
      n = next;
    }
  }
  free(m->_b);
  m->_b = b;
  m->_nb = nb;
  return 0;
}

int ts_hmap_insert(ts_hmap *m, ts_hmap_node *node, const char *key, size_t klen) {
  if (m->n >= m->_nb && grow(m) != 0) return TS_E_NOMEM;
  node->key = key;
  node->klen = klen;
  node->hash = hash_key(m, key, klen);
  ts_hmap_node **slot = &m->_b[node->hash & (m->_nb - 1)];
  node->next = *slot;
  *slot = node;
  m->n++;
  return 0;
}

void ts_hmap_remove(ts_hmap *m, ts_hmap_node *node) {
  for (ts_hmap_node **pp = &m->_b[node->hash & (m->_nb - 1)]; *pp; pp = &(*pp)->next) {
    if (*pp == node) {
      *pp = node->next;
      m->n--;
      return;
    }
  }
}

ts_hmap_node *ts_hmap_next(const ts_hmap *m, const ts_hmap_node *prev) {
  size_t i = 0;
  if (prev) {
    if (prev->next) return prev->next;
    i = (prev->hash & (m->_nb - 1)) + 1;
  }
  for (; i < m->_nb; i++)
    if (m->_b[i]) return m->_b[i];
  return NULL;
}
