/*
 * grow.h: the grow hook of a caller-owned buffer that a parser fills and that starts
 * small (even empty) and grows on demand up to a limit: one contract for the framers
 * that take one (sse.h, eventstream.h, json_seq.h). The parsers never allocate; the
 * caller's hook does.
 */
#ifndef TS_GROW_H
#define TS_GROW_H

#include <stddef.h>

/* The buffer `buf` of *size bytes (buf NULL when *size is 0: none yet) must hold at least
 * `need` bytes (*size < need <= the parser's limit). Returns a buffer of at least need
 * bytes whose first *size bytes are the old buffer's, and stores its size in *size (the
 * old buffer is then the hook's to free: realloc's contract); or NULL to refuse, leaving
 * buf and *size as they were. Called from inside a feed, never from a callback; it must
 * not call into the parser. */
typedef char *(*ts_grow_fn)(void *user, char *buf, size_t need, size_t *size);

/* The parsers' side: asks `grow` (NULL: it cannot grow) for room for `need` bytes of the
 * buffer *buf, which holds *room bytes (room < need <= cap). Returns 0 with *buf and
 * *room updated (*room never above cap), or -1 when the hook refused (nothing changed) or
 * gave too little (its buffer kept, *room what it gave). */
static inline int ts_grow_to(ts_grow_fn grow, void *user, char **buf, size_t *room, size_t cap,
                             size_t need) {
  size_t size = *room;
  char *b = grow ? grow(user, size ? *buf : NULL, need, &size) : NULL;
  if (!b) return -1;
  *buf = b;
  *room = size < cap ? size : cap;
  return *room < need ? -1 : 0;
}

#endif
