/*
 * sse_text.h: SSE text for tests: line endings rewritten, event boundaries found.
 *
 * A stream must mean the same with LF, CRLF or CR line endings (the SSE spec allows
 * all three), so tests replay captures and generated streams with every line ending
 * rewritten, and name offsets by event boundary ("the end of the k-th event") so that
 * one expectation holds for all three. These helpers are deliberately simple (line by
 * line over the whole text): they are the reference, the framer under test is not.
 */
#ifndef TS_TEST_SSE_TEXT_H
#define TS_TEST_SSE_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "support/sb.h"

enum { TS_TEST_EOL_ASIS = 0, TS_TEST_EOL_CRLF = 1, TS_TEST_EOL_CR = 2 };

/* Appends `in` to `out` with every line ending (LF, CRLF or CR) written as `eol`
 * (TS_TEST_EOL_ASIS copies it unchanged). */
void ts_test_rewrite_eol(sb *out, const char *in, size_t n, int eol);

/* The ends (the offset just after the blank line) of the blank-line-terminated events
 * of `s`, at most `max` of them into `ends`; returns how many were found. An unterminated
 * last event has no end. */
size_t ts_test_event_ends(const char *s, size_t n, uint64_t *ends, size_t max);

/* Appends one OpenAI Chat chunk of a write_file call (call_1, index 0) carrying the
 * argument text `escaped` (already escaped for a JSON string); `first` also names the
 * call. For tests that pace a stream fragment by fragment. */
void ts_test_chat_args_chunk(sb *out, int first, const char *escaped);

/* Writes turn `n` of `who`'s recorded OpenAI Chat turns, DIR/WHO/turn-N.sse (the replay
 * backend's layout; WHO is made when missing): the calls given as (tool, JSON arguments)
 * pairs, `ncalls` of them, ids "WHO_N_I", each in one chunk, then the text `text` (may be
 * NULL), then the finish reason ("tool_calls" with calls, else "stop") and [DONE]. */
void ts_test_chat_turn(const char *dir, const char *who, int n, const char *const *calls,
                       size_t ncalls, const char *text);

#endif
