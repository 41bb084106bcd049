/*
 * regex.h: ECMA-262 style regular expressions for JSON Schema's `pattern` and
 * `patternProperties`, the one wrapper of PCRE2 in the project.
 *
 * JSON Schema says patterns are ECMA-262 regular expressions, matched anywhere in the
 * string (not anchored: write ^ and $ to anchor). PCRE2 (Debian's libpcre2-8) is used
 * with the options that bring it closest to ECMA-262:
 *   - UTF mode: the pattern and the subject are UTF-8, `.` and classes work on code
 *     points (so "^.$" matches one emoji);
 *   - `$` matches only at the very end (ECMA-262 has no "before a final newline");
 *   - `\uXXXX` and `\u{X...}` are code points, `\xXX` two hex digits (ECMA-262's
 *     escapes);
 *   - `[]` matches nothing and `[^]` any character, as in ECMA-262;
 *   - `\d`, `\w`, `\b` are ASCII, as in ECMA-262.
 * Known differences that remain (documented in docs/schema.md):
 *   - `\s` matches ASCII white space only; ECMA-262 also matches U+00A0, U+FEFF, the
 *     Unicode space separators, U+2028 and U+2029;
 *   - PCRE2 accepts syntax that ECMA-262 rejects (possessive quantifiers, atomic groups,
 *     `\A`, `\z`, inline flags like `(?i)`, recursion, `\p{..}` without the u flag):
 *     such a pattern compiles here where a browser would refuse it;
 *   - lookbehind must have a bounded length here (ECMA-262 2018 allows any);
 *   - a backreference to a group that has not matched fails here (ECMA-262 matches it
 *     as the empty string);
 *   - ECMA-262 without the u flag would treat a pattern as UTF-16 code units; JSON
 *     Schema validators commonly use the u flag, and so does this module.
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
 * TS_E_OK and fills *out; TS_E_INVAL for a pattern PCRE2 refuses, with
 * "<PCRE2's message> at offset N" in why (cut to why_cap, always terminated; why may be
 * NULL when why_cap is 0); TS_E_NOMEM. *out is set only on success. */
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
