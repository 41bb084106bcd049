/*
 * dotenv.h: the dotenv format of `run --env-file FILE`: NAME=VALUE lines.
 *
 *   # a comment                     blank lines and comments are skipped
 *   export NAME=value               `export ` is allowed and ignored
 *   NAME=plain value   # comment    unquoted: trimmed; ` #` starts a comment
 *   NAME='literal $x \n'            single quotes: exactly what is inside
 *   NAME="a\nb \"q\" \\ \t"         double quotes: \n \r \t \" \\ escapes
 *   NAME=                           an empty value
 *
 * Names follow ts_store_var_name_valid. A quoted value ends on its line; anything but a
 * comment after the closing quote is an error. No variable expansion ($X stays $X): a
 * value is data, never a command.
 *
 * The parser does no I/O; it decodes values in place in the caller's buffer, so each
 * name and value handed to the callback is NUL-terminated inside `text` and valid until
 * the caller reuses the buffer. Errors give the 1-based line and a reason, never the
 * value (it may be a secret).
 */
#ifndef TS_DOTENV_H
#define TS_DOTENV_H

#include <stddef.h>

#include "base/error.h"

/* The longest file accepted, and the longest value (a secret, a token, a certificate). */
#define TS_DOTENV_MAX ((size_t)1 << 20)
#define TS_DOTENV_VALUE_MAX ((size_t)64 << 10)

typedef int (*ts_dotenv_cb)(void *user, const char *name, const char *value, size_t len);

/* Parses `len` bytes of `text` (modified in place; text[len] must be writable and is set
 * to NUL) and calls cb for each entry in order; a non-zero return from cb stops it.
 * Returns the number of entries; TS_E_ABORTED; TS_E_LIMIT (file or value too long);
 * TS_E_INVAL with *line and a reason in `why` for a malformed line. */
int ts_dotenv_parse(char *text, size_t len, ts_dotenv_cb cb, void *user, size_t *line,
                    char *why, size_t why_cap);

#endif /* TS_DOTENV_H */
