/*
 * hmap_test.c: base/hmap.h. Finds what was linked and nothing else across growth,
 * removal and the walk; hashes depend on each map's random key (an unkeyed hash gives
 * every map the same one, so collisions can be computed offline); a failed growth
 * leaves the map as it was.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/hmap.h"
#include "support/runner.h"
#include "support/test_support.h"

typedef struct {
  ts_hmap_node h;
  int value;
  char key[32];
} item;

#define N 5000

START_TEST(test_insert_find_remove_grow) {
  ts_hmap m;
  ck_assert_int_eq(ts_hmap_init(&m), 0);
  item *v = calloc(N, sizeof *v);
  for (int i = 0; i < N; i++) {
    snprintf(v[i].key, sizeof v[i].key, "th_%d", i);
    v[i].value = i;
    ck_assert_ptr_null(ts_hmap_find(&m, v[i].key, strlen(v[i].key)));
    ck_assert_int_eq(ts_hmap_insert(&m, &v[i].h, v[i].key, strlen(v[i].key)), 0);
  }
  ck_assert_uint_eq(m.n, N);
  for (int i = 0; i < N; i++) {
    item *it = (item *)ts_hmap_find(&m, v[i].key, strlen(v[i].key));
    ck_assert_ptr_eq(it, &v[i]);
  }
  /* a prefix of a key, and a key with a byte more, are other keys */
  ck_assert_ptr_null(ts_hmap_find(&m, "th_1", 3));
  ck_assert_ptr_null(ts_hmap_find(&m, "th_10000", 8));
  /* binary keys: NUL inside */
  item z;
  memcpy(z.key, "a\0b", 3);
  ck_assert_int_eq(ts_hmap_insert(&m, &z.h, z.key, 3), 0);
  ck_assert_ptr_eq(ts_hmap_find(&m, "a\0b", 3), &z.h);
  ck_assert_ptr_null(ts_hmap_find(&m, "a\0c", 3));
  ts_hmap_remove(&m, &z.h);
  for (int i = 0; i < N; i += 2) ts_hmap_remove(&m, &v[i].h);
  ck_assert_uint_eq(m.n, N / 2);
  for (int i = 0; i < N; i++) {
    ts_hmap_node *f = ts_hmap_find(&m, v[i].key, strlen(v[i].key));
    if (i % 2) ck_assert_ptr_eq(f, &v[i].h);
    else ck_assert_ptr_null(f);
  }
  /* the walk sees each linked node once, and may remove the node it stands on */
  int seen = 0;
  for (ts_hmap_node *n = ts_hmap_next(&m, NULL), *next; n; n = next) {
    next = ts_hmap_next(&m, n);
    item *it = (item *)n;
    ck_assert_int_eq(it->value % 2, 1);
    it->value = -1;
    ts_hmap_remove(&m, n);
    seen++;
  }
  ck_assert_int_eq(seen, N / 2);
  ck_assert_uint_eq(m.n, 0);
  ts_hmap_fini(&m);
  ts_hmap_fini(&m); /* twice is fine */
  free(v);
}
END_TEST

START_TEST(test_keyed_per_map) {
  /* The same key hashes differently in two maps: the hash is keyed, and each map draws
   * its own key. Eight keys all equal would be a 2^-512 accident. */
  ts_hmap a, b;
  ck_assert_int_eq(ts_hmap_init(&a), 0);
  ck_assert_int_eq(ts_hmap_init(&b), 0);
  item x[8], y[8];
  int differ = 0;
  for (int i = 0; i < 8; i++) {
    snprintf(x[i].key, sizeof x[i].key, "thread-%d", i);
    memcpy(y[i].key, x[i].key, sizeof x[i].key);
    ts_hmap_insert(&a, &x[i].h, x[i].key, strlen(x[i].key));
    ts_hmap_insert(&b, &y[i].h, y[i].key, strlen(y[i].key));
    differ += x[i].h.hash != y[i].h.hash;
  }
  ck_assert_int_gt(differ, 0);
  ts_hmap_fini(&a);
  ts_hmap_fini(&b);
}
END_TEST

START_TEST(test_growth_out_of_memory) {
  ts_hmap m;
  ck_assert_int_eq(ts_hmap_init(&m), 0);
  item *v = calloc(200, sizeof *v);
  int i = 0;
  for (; i < 64; i++) {
    snprintf(v[i].key, sizeof v[i].key, "k%d", i);
    ck_assert_int_eq(ts_hmap_insert(&m, &v[i].h, v[i].key, strlen(v[i].key)), 0);
  }
  /* the 65th insert must grow the buckets: make that fail */
  snprintf(v[i].key, sizeof v[i].key, "k%d", i);
  ts_test_alloc_fail_after(1);
  int rc = ts_hmap_insert(&m, &v[i].h, v[i].key, strlen(v[i].key));
  ts_test_alloc_fail_after(-1);
  ck_assert_int_eq(rc, TS_E_NOMEM);
  ck_assert_uint_eq(m.n, 64);
  ck_assert_ptr_null(ts_hmap_find(&m, v[i].key, strlen(v[i].key)));
  for (int j = 0; j < 64; j++) ck_assert_ptr_eq(ts_hmap_find(&m, v[j].key, strlen(v[j].key)), &v[j].h);
  ck_assert_int_eq(ts_hmap_insert(&m, &v[i].h, v[i].key, strlen(v[i].key)), 0);
  ts_hmap_fini(&m);
  free(v);
}
END_TEST

int main(void) {
  Suite *s = suite_create("hmap");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_insert_find_remove_grow);
  tcase_add_test(tc, test_keyed_per_map);
  tcase_add_test(tc, test_growth_out_of_memory);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
