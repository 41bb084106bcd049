/* grow.c: see grow.h. */
#include "support/grow.h"

#include <stdlib.h>

char *ts_test_exact_grow(void *user, char *buf, size_t need, size_t *size) {
  ts_test_grow *g = user;
  if (buf != g->grown || need <= *size) g->bad = 1;
  if (g->max && need > g->max) return NULL;
  char *b = realloc(buf, need);
  if (!b) return NULL;
  g->grown = b;
  *size = need;
  return b;
}
