/*
 * schema.h: the argument validator of tool calls: JSON Schema draft 7, plus the
 * 2019-09/2020-12 keywords tool schemas use.
 *
 * A tool definition carries a JSON Schema for its arguments (tool_defs.h: `args`).
 * The schema is compiled once, when the tool is defined, into a small graph; every
 * call's arguments are then checked against it, and a call whose arguments
 * fail goes no further than an error result naming the first problem:
 *
 *   /files/2/path: expected string, got number
 *
 * Conformance: every required case of the JSON Schema Test Suite for draft 7 passes
 * (tests/runtime/tools/schema_suite_test.c runs it), except remote references, which
 * are refused when the schema is compiled. Supported keywords:
 *   type (a name, or an array of names: string number integer boolean object array
 *   null), nullable (OpenAPI: true also admits null), enum, const, minLength,
 *   maxLength (counted in Unicode code points, not bytes), pattern (an ECMA-262
 *   regular expression, searched anywhere in the string: see regex.h for how PCRE2
 *   differs), minimum, maximum, exclusiveMinimum, exclusiveMaximum (a number; or,
 *   draft 4 style, a boolean that makes minimum/maximum exclusive), multipleOf
 *   (decided exactly from the numbers' decimal text), properties, patternProperties,
 *   additionalProperties (a boolean or a schema, for the members that neither
 *   properties nor patternProperties name), required, propertyNames, dependencies
 *   (names or a schema per property), dependentRequired, dependentSchemas,
 *   minProperties, maxProperties, items (a schema, or an array of schemas: the tuple
 *   form), prefixItems, additionalItems, contains, minItems, maxItems, uniqueItems,
 *   allOf, anyOf, oneOf, not, if/then/else, definitions and $defs (at any level),
 *   $id (draft 6-7 "#name" ids included) and $anchor, and $ref.
 *   Boolean schemas (true, false) are accepted wherever a schema is.
 *
 * $ref is a URI reference resolved against the base URI in force (set by $id,
 * RFC 3986): its document part must name the schema itself or a subschema with an
 * $id; its fragment is empty, a JSON pointer (RFC 6901, percent-decoded first:
 * "#/definitions/a~1b", "#/properties/x/items/0") or a plain name given by $id
 * "#name" or $anchor. Anything else is a remote reference and a compile error (this
 * module does no I/O). With TS_SCHEMA_DRAFT7, or a root "$schema" naming draft 4, 6 or
 * 7, an object with $ref is that reference alone (its siblings, a sibling $id too, are
 * ignored, as those drafts say); otherwise $ref applies together with its siblings
 * (2019-09 and later).
 *
 * Annotations only (they never make validation stricter): format, contentMediaType,
 * contentEncoding, default, description, title, examples, readOnly, writeOnly,
 * $comment, $schema (except for choosing the draft), and every unknown keyword.
 * Not implemented: unevaluatedProperties, unevaluatedItems, minContains, maxContains,
 * $dynamicRef, $recursiveRef (2019-09 and 2020-12 keywords); they are ignored.
 *
 * Values. integer means a number with no fraction, decided exactly from its text:
 * 1.0, 1e2 and 150e-1 are integers, 1.5 and 1e-2 are not. Numbers are compared as
 * doubles (strtod of the token; this project never calls setlocale), except
 * multipleOf (exact, see above). enum, const and uniqueItems compare JSON values
 * structurally: object key order does not matter, numbers
 * compare by value (1 equals 1.0), strings after decoding escapes.
 *
 * Error text (the `why` buffers): one line, "<pointer>: <reason>". The pointer is an
 * RFC 6901 JSON pointer into the arguments (validation) or into the schema
 * (compilation), with `~` written `~0` and `/` written `~1`; the root, whose pointer
 * is the empty string, is written "(root)" so that the line never starts with a
 * colon. Control bytes in names are written \u00XX to keep the line one line. Text
 * longer than `why_cap` is cut (always NUL-terminated; why may be NULL when
 * why_cap is 0).
 *
 * Limits (hostile input is an error, never a crash or unbounded work):
 *   - arguments nested deeper than TS_SCHEMA_MAX_ARGS_DEPTH: TS_E_ARGS_TOO_DEEP;
 *   - a schema text nested deeper than TS_SCHEMA_MAX_SCHEMA_DEPTH: malformed;
 *   - validation recurses through $ref at most TS_SCHEMA_MAX_RECURSION levels and
 *     does a bounded amount of work (about a million steps plus 64 per argument
 *     token), since $ref can make a schema exponential: TS_E_SCHEMA_LIMIT;
 *   - a pattern search backtracks at most TS_REGEX_MATCH_LIMIT steps (regex.h):
 *     TS_E_SCHEMA_LIMIT.
 * Nothing here recurses on the input beyond these limits.
 *
 * Threads: a compiled schema is immutable; any number of threads may validate
 * against it at once.
 */
#ifndef TS_SCHEMA_H
#define TS_SCHEMA_H

#include <stddef.h>

#include "base/error.h"

/* JSON nesting of the arguments: 64 levels is far beyond what a tool takes, and keeps
 * the checks' recursion shallow. */
#define TS_SCHEMA_MAX_ARGS_DEPTH 64
/* JSON nesting of a schema text: a level of nested object costs two ("properties",
 * then the property), so 128 admits schemas as deep as the arguments may be. */
#define TS_SCHEMA_MAX_SCHEMA_DEPTH 128
/* Validation steps into subschemas (through $ref, anyOf, ...) on one path: far more
 * than 64 levels of arguments need, few enough for a small thread stack. */
#define TS_SCHEMA_MAX_RECURSION 256

typedef struct ts_schema ts_schema;

/* Flags of ts_schema_compile. */
#define TS_SCHEMA_DRAFT7 1 /* drafts 4-7 $ref rule when "$schema" does not name a draft */

/* Compiles the JSON Schema text json[0..len) (not NUL-terminated; the text is not
 * kept: the schema owns copies of everything it needs). On success returns TS_E_OK
 * and fills *out (the caller frees it with ts_schema_free); on error *out is left
 * alone and `why` holds a one-line reason:
 *   TS_E_SCHEMA_INVALID  the text is not a schema:
 *     - "schema is not valid JSON: <reason> at byte N" for text that is not exactly
 *       one JSON value (the strict tokenizer's reason, e.g. "unexpected character",
 *       "trailing comma"; "...: input ended inside a value" without an offset), or
 *       "<pointer>: duplicate key \"a\""; "schema is nested deeper than 128 levels";
 *       "schema is too large";
 *     - "<schema pointer>: <reason>" for a malformed schema, e.g.
 *       "/properties/path/type: unknown type \"strnig\"",
 *       "/required: must be an array of strings",
 *       "/properties/a/minLength: must be a non-negative integer",
 *       "/pattern: invalid regular expression: missing closing parenthesis at offset 3",
 *       "/$ref: \"#/definitions/x\" not found",
 *       "/$ref: remote reference \"http://x/y\" is not supported (only references
 *       within the schema)";
 *   TS_E_NOMEM           "out of memory" (never reported as a malformed schema);
 *   TS_E_INVAL           out is NULL, or json is NULL with len > 0.
 * flags: 0 or TS_SCHEMA_DRAFT7. */
int ts_schema_compile(const char *json, size_t len, int flags, ts_schema **out, char *why,
                      size_t why_cap);

/* Frees a compiled schema; NULL is a no-op. */
void ts_schema_free(ts_schema *s);

/* Nonzero when the root schema declares `name` (NUL-terminated, compared with the
 * decoded property names) in its `properties` (following a root $ref). Used to
 * check a tool's progressArgument at definition time: a name that is not declared
 * there is a definition error, even when the schema would admit any property. */
int ts_schema_has_property(const ts_schema *s, const char *name);

/* Validates the arguments args_json[0..len) against `s`. Returns TS_E_OK, or:
 *   TS_E_SCHEMA_MISMATCH  the arguments do not match; why = "<pointer>: <reason>"
 *                         for the first problem found (in schema keyword order,
 *                         then document order), e.g.
 *                         "/files/2/path: expected string, got number",
 *                         "(root): missing required property \"path\"";
 *   TS_E_ARGS_BAD_JSON    not exactly one strict RFC 8259 value (`[1,,2]`, `{:}`,
 *                         `[1,]` are refused: why = "arguments are not valid JSON:
 *                         <reason> at byte N"), invalid escapes or UTF-8,
 *                         raw control characters in strings, or duplicate keys in
 *                         an object (the tool might read the other one);
 *   TS_E_ARGS_TOO_DEEP    nested deeper than TS_SCHEMA_MAX_ARGS_DEPTH;
 *   TS_E_SCHEMA_LIMIT     the schema's recursion or work limit, or a pattern's
 *                         backtracking limit (see above and regex.h);
 *   TS_E_LIMIT            len of 2 GiB or more;
 *   TS_E_INVAL            s is NULL;
 *   TS_E_NOMEM.
 * Allocates scratch in proportion to len (a private copy, decoded in place, and its
 * token array; with patterns, PCRE2's match memory) and frees it before returning. */
int ts_schema_validate(const ts_schema *s, const char *args_json, size_t len, char *why,
                       size_t why_cap);

#endif /* TS_SCHEMA_H */
