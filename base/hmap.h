/*
 * hmap.h: the one hash map of toolstream, for keys a client chooses (thread ids on the
 * bus and in the gateway, client addresses in the gateway's per-client cap).
 *
 * Keys are hashed with SipHash-2-4 (libsodium's crypto_shorthash) under a 128-bit key
 * drawn from the system's random source (randombytes_buf) when the map is made, so an
 * attacker who picks the keys cannot predict which of them collide: an unkeyed hash
 * (FNV-1a, as before) lets a client send thread ids that all land in one bucket and turn
 * every lookup into a walk of the whole map.
 *
 * Intrusive and chained: the caller embeds a ts_hmap_node in its own struct and owns
 * that struct and the key bytes, which must stay unchanged while the node is linked.
 * The map allocates only its bucket array, which doubles when there are as many nodes
 * as buckets (so chains stay about one long). It never frees nodes.
 *
 * Not thread-safe: callers lock around it as they lock around what the nodes hold.
 */
#ifndef TS_BASE_HMAP_H
#define TS_BASE_HMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct ts_hmap_node {
  struct ts_hmap_node *next; /* internal */
  uint64_t hash;             /* internal */
  const char *key;           /* the key bytes (the caller's storage) */
  size_t klen;
} ts_hmap_node;

typedef struct {
  ts_hmap_node **_b;
  size_t _nb;    /* buckets, a power of two */
  size_t n;      /* nodes linked */
  unsigned char _k[16]; /* the SipHash key */
} ts_hmap;

/* Makes an empty map with a fresh random key. Returns 0, TS_E_NOMEM, or TS_E_IO when
 * libsodium cannot start (no random source). */
int ts_hmap_init(ts_hmap *m);

/* Frees the bucket array (not the nodes). The map may be initialised again. Zeroed or
 * already finished maps are fine. */
void ts_hmap_fini(ts_hmap *m);

/* The node with this key, or NULL. */
ts_hmap_node *ts_hmap_find(const ts_hmap *m, const char *key, size_t klen);

/* Links `node` under `key` (klen bytes, borrowed as described above). The caller makes
 * sure the key is not already present. Returns 0, or TS_E_NOMEM when the bucket array
 * had to grow and could not (the node is then not linked). */
int ts_hmap_insert(ts_hmap *m, ts_hmap_node *node, const char *key, size_t klen);

/* Unlinks a linked node. */
void ts_hmap_remove(ts_hmap *m, ts_hmap_node *node);

/* Walks every node: pass NULL for the first; returns NULL after the last. The map must
 * not change during a walk, except that the node just returned may be removed when the
 * walk goes on from its successor (take ts_hmap_next(m, node) before removing it). */
ts_hmap_node *ts_hmap_next(const ts_hmap *m, const ts_hmap_node *prev);

#endif /* TS_BASE_HMAP_H */
