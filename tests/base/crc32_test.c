/*
 * crc32_test.c: base/crc32.h. Both ways (the folding with carry-less multiplication the
 * CPU may have, and the tables) against published check values and against a bitwise
 * CRC that shares nothing with them (support/evs_frame.h), on every length up to 600 at
 * every alignment 0..15 and on random lengths up to 64 KiB, whole and continued in two
 * pieces cut anywhere, and at the very end of an allocation (the fold's last partial block).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "base/crc32.h"
#include "support/evs_frame.h"
#include "support/runner.h"

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

static const struct {
  const char *name;
  crc_fn fn;
} ways[] = {{"dispatch", ts_crc32_update}, {"table", ts_crc32_update_table}};

/* n pseudo-random bytes from `seed` (the caller frees them). */
static uint8_t *random_bytes(size_t n, unsigned seed) {
  uint8_t *buf = malloc(n);
  ck_assert(buf);
  srand(seed);
  for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)rand();
  return buf;
}

START_TEST(test_check_values) {
  static const struct {
    const char *text;
    uint32_t crc;
  } v[] = {
      {"", 0x00000000u},
      {"a", 0xe8b7be43u},
      {"123456789", 0xcbf43926u},
      {"The quick brown fox jumps over the lazy dog", 0x414fa339u},
      {"12345678901234567890123456789012345678901234567890123456789012345678901234567890", 0x7ca94a72u},
  };
  for (size_t w = 0; w < 2; w++)
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
      uint32_t got = ways[w].fn(0, v[k].text, strlen(v[k].text));
      ck_assert_msg(got == v[k].crc, "%s, \"%s\": %08x, want %08x", ways[w].name, v[k].text, got, v[k].crc);
    }
  /* 4 KiB of zeros and of 0xff: long runs through every lane of the fold */
  uint8_t *z = calloc(1, 4096);
  for (size_t w = 0; w < 2; w++) {
    memset(z, 0, 4096);
    ck_assert_uint_eq(ways[w].fn(0, z, 4096), ts_test_crc32(z, 4096));
    memset(z, 0xff, 4096);
    ck_assert_uint_eq(ways[w].fn(0, z, 4096), ts_test_crc32(z, 4096));
  }
  free(z);
}
END_TEST

START_TEST(test_every_length_and_alignment) {
  enum { MAX = 600 };
  uint8_t *buf = random_bytes(MAX + 16, 12345);
  for (size_t align = 0; align < 16; align++)
    for (size_t n = 0; n <= MAX; n++) {
      const uint8_t *p = buf + align;
      uint32_t want = ts_test_crc32(p, n);
      for (size_t w = 0; w < 2; w++) {
        uint32_t got = ways[w].fn(0, p, n);
        ck_assert_msg(got == want, "%s, %zu bytes at +%zu: %08x, want %08x", ways[w].name, n, align, got, want);
      }
    }
  free(buf);
}
END_TEST

START_TEST(test_random_and_continued) {
  enum { MAX = 65536 };
  uint8_t *buf = random_bytes(MAX + 16, 777);
  for (int round = 0; round < 300; round++) {
    size_t n = (size_t)rand() % (MAX + 1), align = (size_t)rand() % 16, cut = n ? (size_t)rand() % (n + 1) : 0;
    const uint8_t *p = buf + align;
    uint32_t want = ts_test_crc32(p, n);
    for (size_t w = 0; w < 2; w++) {
      ck_assert_msg(ways[w].fn(0, p, n) == want, "%s, %zu bytes at +%zu", ways[w].name, n, align);
      uint32_t two = ways[w].fn(ways[w].fn(0, p, cut), p + cut, n - cut);
      ck_assert_msg(two == want, "%s, %zu bytes at +%zu cut at %zu", ways[w].name, n, align, cut);
    }
  }
  free(buf);
}
END_TEST

/* A run ending at the end of its allocation, every length up to 100 and each last partial
 * block 1..15: the fold takes the last 1-15 bytes from the run's last 16, never past it
 * (ASan sees a read past the block), with the same value as the bitwise CRC. */
START_TEST(test_tail_at_end_of_buffer) {
  srand(4242);
  for (size_t n = 1; n <= 100; n++) {
    uint8_t *buf = malloc(n);
    for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)rand();
    uint32_t want = ts_test_crc32(buf, n);
    for (size_t w = 0; w < 2; w++) {
      ck_assert_msg(ways[w].fn(0, buf, n) == want, "%s, %zu bytes at the end", ways[w].name, n);
      /* continued: the second piece's tail at the end too */
      size_t cut = n / 3;
      ck_assert_msg(ways[w].fn(ways[w].fn(0, buf, cut), buf + cut, n - cut) == want, "%s, %zu cut %zu",
                    ways[w].name, n, cut);
    }
    free(buf);
  }
}
END_TEST

/* Short runs continued from a register that is not zero: every length up to 48 cut at
 * every place, so each piece of 4-15 bytes (one block built from two loads, the register
 * on the run's first 4 bytes) and of 16-31 (a block and a partial one) is continued from
 * the register the first piece left. */
START_TEST(test_short_runs_continued) {
  uint8_t buf[48];
  srand(99);
  for (int round = 0; round < 20; round++) {
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)rand();
    for (size_t n = 0; n <= sizeof buf; n++) {
      uint32_t want = ts_test_crc32(buf, n);
      for (size_t cut = 0; cut <= n; cut++)
        for (size_t w = 0; w < 2; w++) {
          uint32_t two = ways[w].fn(ways[w].fn(0, buf, cut), buf + cut, n - cut);
          ck_assert_msg(two == want, "%s, %zu bytes cut at %zu", ways[w].name, n, cut);
        }
    }
  }
}
END_TEST

/* The fast way is really taken where the CPU has it (else the tests above checked the
 * tables twice). */
START_TEST(test_fast_way_used) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  int has = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
  ck_assert_int_eq(ts_crc32_accelerated(), has);
#else
  ck_assert_int_eq(ts_crc32_accelerated(), 0);
#endif
}
END_TEST

int main(void) {
  Suite *s = suite_create("crc32");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_check_values);
  tcase_add_test(tc, test_every_length_and_alignment);
  tcase_add_test(tc, test_random_and_continued);
  tcase_add_test(tc, test_tail_at_end_of_buffer);
  tcase_add_test(tc, test_short_runs_continued);
  tcase_add_test(tc, test_fast_way_used);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
