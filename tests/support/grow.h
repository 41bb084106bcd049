/*
 * grow.h: the grow hook the framer tests share (sse.h, eventstream.h and json_seq.h take
 * a ts_grow_fn, base/grow.h).
 *
 * ts_test_exact_grow grows to exactly `need` bytes each time (an exact-size block, so
 * ASan catches a write past the room the framer asked for) and refuses past g->max
 * (0: never). It sets g->bad when the framer hands it a buffer it did not give out last,
 * or asks for no more room than it has. The test frees g->grown at the end.
 */
#ifndef TS_TEST_GROW_H
#define TS_TEST_GROW_H

#include <stddef.h>

typedef struct {
  size_t max;  /* refuse growth past this (0: never) */
  char *grown; /* the buffer given out last (NULL: none yet) */
  int bad;     /* the hook was misused (above) */
} ts_test_grow;

/* user: a ts_test_grow. */
char *ts_test_exact_grow(void *user, char *buf, size_t need, size_t *size);

#endif
