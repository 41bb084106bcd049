/*
 * regex.h: ECMA-262 style regular expressions for JSON Schema's `pattern` and
 * `patternProperties`, the one wrapper of PCRE2 in the project.
 *
 * JSON Schema says patterns are ECMA-262 regular expressions, matched anywhere in the
 * string (not anchored: write ^ and $ to anchor). The pattern is first rewritten
 * where ECMA-262 (with the u flag, as JSON Schema validators use it) and PCRE2 give
 * the same syntax different meanings, and refused where the syntax means something
 * only to PCRE2; then PCRE2 (Debian's libpcre2-8) compiles it with the options that
 * bring it closest:
 *   - UTF mode: the pattern and the subject are UTF-8, classes work on code points;
 *   - `.` is rewritten to "anything but a line terminator" (LF, CR, U+2028, U+2029),
 *     ECMA-262's set (PCRE2's `.` excludes LF only);
 *   - `\s` and `\S` are rewritten to ECMA-262's white space and line terminators
 *     (U+00A0, U+FEFF, the Unicode space separators, U+2028, U+2029 included; PCRE2's
 *     are ASCII), and `\v` to U+000B alone (PCRE2's is a class of vertical space);
 *   - `$` matches only at the very end (ECMA-262 has no "before a final newline");
 *   - `\uXXXX` and `\u{X...}` are code points, `\xXX` two hex digits;
 *   - `[]` matches nothing and `[^]` any character;
 *   - `\d`, `\w`, `\b` are ASCII in both.
 * Refused (TS_E_INVAL, "... is not ECMA-262 syntax"): letter escapes that only PCRE2
 * knows (`\A \Z \z \G \K \Q \E \h \H \R \X \N \C \e \a \g \o`...), group forms other
 * than (?: (?= (?! (?<= (?<! (?<name> (so no (?i), (?>, (?|, (?R), (?P<...>), and
 * possessive quantifiers (`a++`, `a{2}+`).
 * Known differences that remain (docs/schema.md):
 *   - `\S` inside a character class keeps PCRE2's ASCII meaning;
 *   - identity escapes of punctuation that ECMA-262's u flag refuses (`\-` outside a
 *     class, `\_`) are accepted as the character;
 *   - lookbehind must have a bounded length here (ECMA-262 2018 allows any);
 *   - a backreference to a group that has not matched fails here (ECMA-262 matches it
 *     as the empty string);
 *   - a lone `{` or `}` is a literal here (the u flag makes it an error).
 *
 * Limits: a match does a bounded amount of backtracking (TS_REGEX_MATCH_LIMIT steps,
 * TS_REGEX_HEAP_LIMIT_KIB of backtracking memory), so a catastrophic pattern such as
 * "(a+)+$" costs at most that and reports TS_E_LIMIT instead of hanging a call.
 *
 * Memory: every allocation (the compiled code, the contexts, the match scratch and
 * PCRE2's backtracking frames) goes through this module's malloc and free, so
 * out-of-memory tests reach all of them.
 *
 * Threads: a compiled ts_regex is immutable; any number of threads may search with it
 * at once, each with its own scratch.
 */
#ifndef TS_REGEX_H
#define TS_REGEX_H

#include <stddef.h>

#include "base/error.h"

/* Backtracking steps per search: a legitimate tool-argument pattern needs a few
 * thousand; a million keeps a hostile one to a few milliseconds. */
#define TS_REGEX_MATCH_LIMIT 1000000u
/* Backtracking memory per search. */
#define TS_REGEX_HEAP_LIMIT_KIB 4096u

typedef struct ts_regex ts_regex;
/* Per-search working memory, reused across searches by one thread; created on first
 * use by ts_regex_search. */
typedef struct ts_regex_scratch ts_regex_scratch;

/* Compiles pattern[0..len) (UTF-8, not NUL-terminated, may contain NUL). Returns
 * TS_E_OK and fills *out; TS_E_INVAL for a pattern that is not ECMA-262 (see above) or
 * that PCRE2 refuses, with "<the reason> at offset N" in why (cut to why_cap, always terminated; why may be
 * NULL when why_cap is 0; when the pattern was rewritten, PCRE2's offset would point
 * into the rewritten text, so it is left out); TS_E_NOMEM. *out is set only on
 * success. */
int ts_regex_compile(const char *pattern, size_t len, ts_regex **out, char *why,
                     size_t why_cap);

/* Frees a compiled pattern; NULL is a no-op. */
void ts_regex_free(ts_regex *re);

/* Searches subject[0..len) (valid UTF-8: the caller has checked it) for a match
 * anywhere. *scratch may be NULL at first: it is created here and kept for the next
 * search; free it with ts_regex_scratch_free. Returns 1 (a match), 0 (none),
 * TS_E_LIMIT (the backtracking limits above were reached), TS_E_NOMEM. */
int ts_regex_search(const ts_regex *re, const char *subject, size_t len,
                    ts_regex_scratch **scratch);

/* Frees search scratch; NULL is a no-op. */
void ts_regex_scratch_free(ts_regex_scratch *scratch);

#endif /* TS_REGEX_H */
