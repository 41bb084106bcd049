/*
 * evs_frame.h: AWS event stream messages for tests (the binary framing of Bedrock's
 * ConverseStream reply), built with a bitwise CRC32 that shares nothing with the
 * product's framer (stream/eventstream.c), so a test's frames are an independent
 * reference.
 *
 * A message: total length and headers length (big-endian 32-bit), the prelude's CRC32,
 * the headers (each a 1-byte name length, the name, type 7 = string, a 2-byte value
 * length, the value), the payload, and the CRC32 of everything before it.
 */
#ifndef TS_TEST_EVS_FRAME_H
#define TS_TEST_EVS_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "support/sb.h"

/* CRC-32 (IEEE 802.3, as zlib) of n bytes, bit by bit. */
uint32_t ts_test_crc32(const uint8_t *p, size_t n);

/* Appends one message to `out`: headers `:message-type` mtype, then `:event-type` etype
 * (`:exception-type` when mtype is "exception"), `:content-type` application/json, and
 * the payload `payload` (a JSON text). */
void ts_test_evs_frame(sb *out, const char *mtype, const char *etype, const char *payload);

#endif
