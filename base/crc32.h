/*
 * crc32.h: CRC-32 of the IEEE polynomial (0xEDB88320 reflected; zlib's crc32, the AWS
 * event stream's checksum), continued over any number of pieces.
 *
 * ts_crc32_update(0, p, n) is the CRC of p[0..n); ts_crc32_update(ts_crc32_update(0, a,
 * na), b, nb) is the CRC of a followed by b. It picks at run time the fastest way the CPU
 * has (carry-less multiplication folding on x86-64 with PCLMULQDQ and SSE4.1, about 0.2
 * instructions per byte on long runs and some 30 for any run of 4-15 bytes; else tables,
 * eight bytes a step, about 4 per byte); both give
 * the same value for every input. Pure: no state, no allocation, any alignment, any
 * thread.
 */
#ifndef TS_CRC32_H
#define TS_CRC32_H

#include <stddef.h>
#include <stdint.h>

uint32_t ts_crc32_update(uint32_t crc, const void *p, size_t n);

/* The table way alone, whatever the CPU (for tests and as the reference of the fast way). */
uint32_t ts_crc32_update_table(uint32_t crc, const void *p, size_t n);

/* 1 when ts_crc32_update folds with carry-less multiplication on this CPU, else 0. */
int ts_crc32_accelerated(void);

#endif /* TS_CRC32_H */
