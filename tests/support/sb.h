/*
 * sb.h: the tests' one string builder.
 *
 * A growable, NUL-terminated byte string for the text a test assembles (streams, traces,
 * expected output, a child's captured stdout). Tests are not the product: out of memory
 * aborts the test program instead of being reported, so no call returns an error. A
 * zero-filled sb is empty and valid; sb_str never returns NULL.
 *
 * Ownership: the sb owns `p` (malloc'd); sb_free releases it and empties the sb.
 */
#ifndef TS_TEST_SB_H
#define TS_TEST_SB_H

#include <stddef.h>

typedef struct {
  char *p;
  size_t len, cap;
} sb;

void sb_add(sb *b, const void *s, size_t n);
void sb_puts(sb *b, const char *s);
void sb_putc(sb *b, char c);
/* printf into the builder (any length). */
void sb_printf(sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* `s` as the body of a JSON string (no quotes): `"` and `\` escaped, bytes below 0x20 as
 * \u00XX, everything else as is. */
void sb_json_body(sb *b, const char *s, size_t n);
/* Empties the builder, keeping its memory. */
void sb_reset(sb *b);
void sb_free(sb *b);
/* The text ("" for a builder that never held anything). */
const char *sb_str(const sb *b);

/* `s` clipped for a failure message (check sends messages through a pipe with a size
 * limit): itself when short, else its start and a note of how much is left out, in one of
 * a few static buffers reused in turn. */
const char *sb_clip(const char *s);

#endif
