/*
 * crc32.c: see crc32.h.
 *
 * Two ways to the same CRC. The table way is slicing by eight (the method of zlib's
 * crc32.c): crc_table[0] is the classic byte table, crc_table[k][b] the CRC of byte b
 * followed by k zero bytes, so eight bytes fold in with eight lookups and no loop over
 * bits. That is about 4 instructions a byte, and on Bedrock's event stream, where every
 * byte of every message is checked, it was the largest cost of the framer.
 *
 * The fast way (x86-64 with PCLMULQDQ) treats the message as a polynomial over GF(2) and
 * folds it 16 bytes at a time: a 128-bit remainder R followed by the next block B has the
 * same CRC as (R.lo * x^a mod P) ^ (R.hi * x^b mod P) ^ B, two carry-less multiplications
 * by constants, for the distance a, b the block stands for. Four lanes run 64 bytes
 * apart while there are 64 bytes to take, then fold into one; the last 128 bits reduce to
 * 64 and 32 bits with two more multiplications and a Barrett reduction (the method of
 * Intel's white paper "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ").
 * All constants are in the bit-reflected form the reflected CRC needs:
 *   K1, K2 = x^(4*128+32), x^(4*128-32) mod P   (fold by four blocks)
 *   K3, K4 = x^(128+32),   x^(128-32)   mod P   (fold by one block)
 *   K5     = x^64 mod P                         (96 bits to 64)
 *   P', MU = the polynomial with its x^32 term, floor(x^64 / P)   (Barrett)
 * The fold takes runs from 16 bytes up, the last 1-15 bytes folded as one more block
 * (crc32_clmul); a run of 4-15 bytes is one block with zeros in front (crc32_clmul_short:
 * the event stream's 8-byte prelude, checked on every message, cost about 42
 * instructions by table, 31 so); runs under 4 bytes go through the tables. Every way ends
 * in the same reduction (reduce). The tests check the two ways against each other on
 * every length up to 600 at every alignment, continued from any register, and both
 * against published check values.
 *
 * The choice is made on every call from __builtin_cpu_supports (a load and a test of the
 * CPU model word libgcc fills before main): no state here, nothing to initialise.
 */
#include "base/crc32.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define TS_CRC32_CLMUL 1
#endif

/* The CRC32 tables of the IEEE polynomial, for slicing by eight. The CRC is linear over
 * GF(2): the entry for byte n is the XOR of the entries for n's bits, so each table is
 * spelled by its 8 one-bit entries (crc_table[k][1 << i], a byte with one bit set followed
 * by k zero bytes) and the preprocessor writes out the 256 entries; the tests check every
 * entry's use against a bitwise CRC. */
#define CRC_BASIS0 0x77073096u, 0xee0e612cu, 0x076dc419u, 0x0edb8832u, 0x1db71064u, 0x3b6e20c8u, 0x76dc4190u, 0xedb88320u
#define CRC_BASIS1 0x191b3141u, 0x32366282u, 0x646cc504u, 0xc8d98a08u, 0x4ac21251u, 0x958424a2u, 0xf0794f05u, 0x3b83984bu
#define CRC_BASIS2 0x01c26a37u, 0x0384d46eu, 0x0709a8dcu, 0x0e1351b8u, 0x1c26a370u, 0x384d46e0u, 0x709a8dc0u, 0xe1351b80u
#define CRC_BASIS3 0xb8bc6765u, 0xaa09c88bu, 0x8f629757u, 0xc5b428efu, 0x5019579fu, 0xa032af3eu, 0x9b14583du, 0xed59b63bu
#define CRC_BASIS4 0x3d6029b0u, 0x7ac05360u, 0xf580a6c0u, 0x30704bc1u, 0x60e09782u, 0xc1c12f04u, 0x58f35849u, 0xb1e6b092u
#define CRC_BASIS5 0xcb5cd3a5u, 0x4dc8a10bu, 0x9b914216u, 0xec53826du, 0x03d6029bu, 0x07ac0536u, 0x0f580a6cu, 0x1eb014d8u
#define CRC_BASIS6 0xa6770bb4u, 0x979f1129u, 0xf44f2413u, 0x33ef4e67u, 0x67de9cceu, 0xcfbd399cu, 0x440b7579u, 0x8816eaf2u
#define CRC_BASIS7 0xccaa009eu, 0x4225077du, 0x844a0efau, 0xd3e51bb5u, 0x7cbb312bu, 0xf9766256u, 0x299dc2edu, 0x533b85dau
#define CRC_ENTRY_(n, b0, b1, b2, b3, b4, b5, b6, b7)                                                 \
  (((n) & 1 ? b0 : 0) ^ ((n) & 2 ? b1 : 0) ^ ((n) & 4 ? b2 : 0) ^ ((n) & 8 ? b3 : 0) ^              \
   ((n) & 16 ? b4 : 0) ^ ((n) & 32 ? b5 : 0) ^ ((n) & 64 ? b6 : 0) ^ ((n) & 128 ? b7 : 0))
#define CRC_APPLY(f, args) f args /* args expanded first: the basis's 8 values become 8 arguments */
#define CRC_ENTRY(n, k) CRC_APPLY(CRC_ENTRY_, (n, CRC_BASIS##k))
#define CRC_4(n, k) CRC_ENTRY(n, k), CRC_ENTRY(n + 1, k), CRC_ENTRY(n + 2, k), CRC_ENTRY(n + 3, k)
#define CRC_16(n, k) CRC_4(n, k), CRC_4(n + 4, k), CRC_4(n + 8, k), CRC_4(n + 12, k)
#define CRC_64(n, k) CRC_16(n, k), CRC_16(n + 16, k), CRC_16(n + 32, k), CRC_16(n + 48, k)
#define CRC_TABLE(k) {CRC_64(0, k), CRC_64(64, k), CRC_64(128, k), CRC_64(192, k)}
static const uint32_t crc_table[8][256] = {
    CRC_TABLE(0), CRC_TABLE(1), CRC_TABLE(2), CRC_TABLE(3),
    CRC_TABLE(4), CRC_TABLE(5), CRC_TABLE(6), CRC_TABLE(7),
};

uint32_t ts_crc32_update_table(uint32_t crc, const void *data, size_t n) {
  const uint8_t *p = data;
  crc = ~crc;
  for (; n >= 8; p += 8, n -= 8) {
    uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                         (uint32_t)p[3] << 24);
    crc = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF] ^
          crc_table[5][(lo >> 16) & 0xFF] ^ crc_table[4][lo >> 24] ^ crc_table[3][p[4]] ^
          crc_table[2][p[5]] ^ crc_table[1][p[6]] ^ crc_table[0][p[7]];
  }
  while (n--) crc = crc_table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

#ifdef TS_CRC32_CLMUL
#define CLMUL_TARGET __attribute__((target("pclmul,sse4.1")))

CLMUL_TARGET static inline __m128i load16(const uint8_t *p) {
  return _mm_loadu_si128((const __m128i *)(const void *)p);
}

/* (x.lo * k.lo) ^ (x.hi * k.hi) ^ next: x moved one fold distance on and the next block added. */
CLMUL_TARGET static inline __m128i fold(__m128i x, __m128i k, __m128i next) {
  return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), next);
}

/* Byte shuffles for the last partial block: loaded at r, `shl` puts bytes 0..r-1 of a
 * register at 16-r..15 (zeros below); loaded at 16 + r, `shr` moves bytes r..15 to
 * 0..15-r (zeros above). keep_hi, loaded at r, keeps bytes 16-r..15. */
static const uint8_t shuf_tbl[48] = {
    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
    0,    1,    2,    3,    4,    5,    6,    7,    8,    9,    10,   11,   12,   13,   14,   15,
    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80};
static const uint8_t keep_hi[32] = {0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,
                                    0,    0,    0,    0,    0,    0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                                    0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};

/* 128 bits of remainder to the CRC register: x.lo * K4 ^ x.hi (128 bits to 64, with 32
 * zero bits appended), the low 32 * K5 ^ the rest (96 to 64), then Barrett: q = (x.low32
 * * MU).low32, remainder = x ^ q * P', in bits 32..63. */
CLMUL_TARGET static inline uint32_t reduce(__m128i x) {
  const __m128i k3k4 = _mm_set_epi64x(0x0ccaa009e, 0x1751997d0);
  const __m128i k5 = _mm_set_epi64x(0, 0x163cd6124);
  const __m128i poly = _mm_set_epi64x(0x1f7011641, 0x1db710641); /* MU, P' */
  const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
  x = _mm_xor_si128(_mm_srli_si128(x, 8), _mm_clmulepi64_si128(x, k3k4, 0x10));
  x = _mm_xor_si128(_mm_srli_si128(x, 4), _mm_clmulepi64_si128(_mm_and_si128(x, mask32), k5, 0x00));
  __m128i t = _mm_and_si128(_mm_clmulepi64_si128(_mm_and_si128(x, mask32), poly, 0x10), mask32);
  x = _mm_xor_si128(x, _mm_clmulepi64_si128(t, poly, 0x00));
  return (uint32_t)_mm_extract_epi32(x, 1);
}

/* The CRC after p[0..n) from `crc` (both as the caller sees them: the register inverted,
 * inside too, so the call is the caller's last step), n at least 16. The last n % 16 bytes r: the
 * pending 16 bytes X followed by r bytes T are, as a polynomial, the block of X's first r
 * bytes (zeros in front add nothing) followed by the block of X's last 16 - r bytes and
 * T; the first folds onto the second like any block. T comes from the last 16 bytes of
 * the input (it is at least 16 long), masked to its r bytes: no byte past p + n is read. */
CLMUL_TARGET static uint32_t crc32_clmul(uint32_t crc, const uint8_t *p, size_t n) {
  const __m128i k1k2 = _mm_set_epi64x(0x1c6e41596, 0x154442bd4);
  const __m128i k3k4 = _mm_set_epi64x(0x0ccaa009e, 0x1751997d0);
  __m128i x = _mm_xor_si128(load16(p), _mm_cvtsi32_si128((int)~crc));
  p += 16, n -= 16;
  if (n >= 48) { /* four lanes */
    __m128i x1 = x, x2 = load16(p), x3 = load16(p + 16), x4 = load16(p + 32);
    p += 48, n -= 48;
    for (; n >= 64; p += 64, n -= 64) {
      x1 = fold(x1, k1k2, load16(p));
      x2 = fold(x2, k1k2, load16(p + 16));
      x3 = fold(x3, k1k2, load16(p + 32));
      x4 = fold(x4, k1k2, load16(p + 48));
    }
    x = fold(fold(fold(x1, k3k4, x2), k3k4, x3), k3k4, x4);
  }
  for (; n >= 16; p += 16, n -= 16) x = fold(x, k3k4, load16(p));
  if (n) {
    __m128i head = _mm_shuffle_epi8(x, load16(shuf_tbl + n));
    __m128i rest = _mm_shuffle_epi8(x, load16(shuf_tbl + 16 + n));
    __m128i tail = _mm_and_si128(load16(p + n - 16), load16(keep_hi + n));
    x = fold(head, k3k4, _mm_or_si128(rest, tail));
  }
  return ~reduce(x);
}

/* The same for 4 <= n < 16 (the event stream's 8-byte prelude, a run's short tail): the
 * n bytes as one block, after 16 - n zero bytes, which add nothing to a register of zero;
 * the register goes onto the run's first 4 bytes instead of the block's. The block is
 * built from two loads that together cover the run (8 bytes from each end, or 4), each
 * moved to its place; where they overlap they hold the same bytes. */
CLMUL_TARGET static uint32_t crc32_clmul_short(uint32_t crc, const uint8_t *p, size_t n) {
  __m128i head, end; /* the run's first bytes at the bottom; its last at the top */
  if (n >= 8) {
    head = _mm_loadl_epi64((const __m128i *)(const void *)p);
    end = _mm_slli_si128(_mm_loadl_epi64((const __m128i *)(const void *)(p + n - 8)), 8);
  } else {
    uint32_t a, b;
    memcpy(&a, p, 4), memcpy(&b, p + n - 4, 4);
    head = _mm_cvtsi32_si128((int)a);
    end = _mm_slli_si128(_mm_cvtsi32_si128((int)b), 12);
  }
  __m128i shl = load16(shuf_tbl + n); /* bytes 0..n-1 to 16-n..15 */
  __m128i x = _mm_or_si128(_mm_shuffle_epi8(head, shl), end);
  return ~reduce(_mm_xor_si128(x, _mm_shuffle_epi8(_mm_cvtsi32_si128((int)~crc), shl)));
}
#endif

int ts_crc32_accelerated(void) {
#ifdef TS_CRC32_CLMUL
  return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
#else
  return 0;
#endif
}

uint32_t ts_crc32_update(uint32_t crc, const void *data, size_t n) {
#ifdef TS_CRC32_CLMUL
  if (n >= 4 && ts_crc32_accelerated())
    return n >= 16 ? crc32_clmul(crc, data, n) : crc32_clmul_short(crc, data, n);
#endif
  return ts_crc32_update_table(crc, data, n);
}
