/*
 * test_support.h: small helpers shared by the check programs under tests/.
 *
 * - Files: read a whole file (the corpus, fixtures) into a NUL-terminated heap buffer.
 * - Allocation counting: every test program is linked with
 *   -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free, so every allocation made
 *   by the project's static libraries and the test itself goes through a counter here.
 *   A test proves "no allocation while feeding" by reading ts_test_alloc_count() around
 *   the feed calls. ts_test_alloc_fail_after(n) makes the n-th allocation from now fail
 *   (for out-of-memory tests); -1 turns failing off.
 */
#ifndef TS_TEST_SUPPORT_H
#define TS_TEST_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

/* Reads `path` whole; returns a malloc'd buffer with a NUL after the bytes (the caller
 * frees it) and stores the length in *len. Aborts the test program on failure. */
char *ts_test_read_file(const char *path, size_t *len);

/* The absolute path of a file under the source tree (TS_SOURCE_DIR), in a static buffer
 * that the next call overwrites. */
const char *ts_test_path(const char *relative);

/* Allocations (malloc, calloc, realloc) made so far in this process. */
uint64_t ts_test_alloc_count(void);

/* Make the n-th allocation from now (1 = the next one) fail, and every one after it until
 * reset; n < 0 turns failing off. */
void ts_test_alloc_fail_after(long n);

#endif
