/*
 * big_stream.h: generated provider streams carrying one huge tool call, for the scale
 * tests (a call at the default --max-args-bytes in every format, 64 MiB through the
 * command). Generated in the test, never committed.
 *
 * The call is `write` with arguments {"path":"big.txt","content":"..."}: exactly `len`
 * bytes of compact JSON (no whitespace outside strings, so its READY arguments are the
 * text itself), the content mixing ASCII, escapes (\" \\ \n \u00e9) and raw UTF-8 (é, 😀),
 * from a fixed pattern. Each format carries it in its real wire shape (tests/corpus/):
 * Chat, Responses (with its three repeats of the whole arguments: `.done`,
 * `output_item.done`, `response.completed`), Anthropic, Cohere and Bedrock (binary
 * frames, support/evs_frame.h) in fragments of about `piece` bytes cut between UTF-8 characters; Gemini and
 * Ollama whole, in one event, as those providers send a call.
 */
#ifndef TS_TEST_BIG_STREAM_H
#define TS_TEST_BIG_STREAM_H

#include <stddef.h>

#include "support/sb.h"

/* Appends the arguments text (exactly len bytes; len >= 64). */
void ts_test_big_args(sb *out, size_t len);

/* Appends a whole stream of the format named `format` (a provider's --format name:
 * "openai-chat", "openai-responses", "anthropic", "gemini", "ollama", "cohere", "bedrock";
 * a name only, since support files link into every room's tests) carrying the call with
 * arguments args[0..len), in fragments of about `piece` bytes. Returns 0, or -1 for a
 * name it does not know (nothing appended). */
int ts_test_big_stream(sb *out, const char *format, const char *args, size_t len, size_t piece);

#endif
