/*
 * schema_fuzz.c: the schema compiler and the argument validator.
 *
 * Input: byte 0 chooses the mode (bit 0: TS_SCHEMA_DRAFT7) and byte 1 where the rest
 * splits into a schema text and an argument text (at byte1/255 of its length). The
 * schema is compiled; when it compiles, the arguments are validated against it.
 * Besides "no crash, no leak, no hang" (the sanitizers, libFuzzer's timeout), each run
 * asserts what the contract promises (issue 18 item 11: nothing that is not strict
 * JSON gets through):
 *   - compile returns TS_E_OK exactly when it fills the schema, otherwise one of its
 *     documented codes and a reason;
 *   - a schema text that the strict tokenizer refuses never compiles;
 *   - arguments that the strict tokenizer refuses never validate: args_bad_json or
 *     args_too_deep (never ok, never a mismatch);
 *   - validate returns one of its documented codes, and the same code twice (a
 *     compiled schema is immutable).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/json_tok.h"
#include "tools/schema.h"

static int count_tok(void *user, const ts_json_token *tok) {
  (void)user;
  (void)tok;
  return 0;
}

/* 1 when the strict tokenizer takes p[0..n) as exactly one JSON value. */
static int strict_json(const char *p, size_t n, uint32_t depth) {
  ts_json_tok t;
  if (ts_json_tok_init(&t, depth, count_tok, NULL) != TS_E_OK) abort();
  int rc = ts_json_tok_feed(&t, p, n);
  if (rc == TS_E_OK) rc = ts_json_tok_finish(&t);
  return rc == TS_E_OK;
}

static void fail(const char *what, int rc, const char *why) {
  fprintf(stderr, "schema_fuzz: %s (%s: %s)\n", what, ts_err_name(rc), why);
  abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  int flags = (data[0] & 1) ? TS_SCHEMA_DRAFT7 : 0;
  const char *body = (const char *)data + 2;
  size_t n = size - 2, cut = n * data[1] / 255;
  const char *schema = body, *args = body + cut;
  size_t slen = cut, alen = n - cut;

  char why[256] = "";
  ts_schema *s = NULL;
  int rc = ts_schema_compile(schema, slen, flags, &s, why, sizeof why);
  if ((rc == TS_E_OK) != (s != NULL)) fail("compile's code and result disagree", rc, why);
  if (rc != TS_E_OK && rc != TS_E_SCHEMA_INVALID && rc != TS_E_NOMEM)
    fail("compile returned an undocumented code", rc, why);
  if (rc != TS_E_OK && !why[0]) fail("compile failed without a reason", rc, why);
  if (rc == TS_E_OK && !strict_json(schema, slen, TS_SCHEMA_MAX_SCHEMA_DEPTH))
    fail("a schema that is not strict JSON compiled", rc, why);
  if (!s) return 0;

  int v = ts_schema_validate(s, args, alen, why, sizeof why);
  if (v != TS_E_OK && v != TS_E_SCHEMA_MISMATCH && v != TS_E_ARGS_BAD_JSON &&
      v != TS_E_ARGS_TOO_DEEP && v != TS_E_SCHEMA_LIMIT && v != TS_E_NOMEM && v != TS_E_LIMIT)
    fail("validate returned an undocumented code", v, why);
  int strict = strict_json(args, alen, TS_SCHEMA_MAX_ARGS_DEPTH);
  if (!strict && v != TS_E_ARGS_BAD_JSON && v != TS_E_ARGS_TOO_DEEP)
    fail("arguments that are not strict JSON got past the loader", v, why);
  if (strict && (v == TS_E_ARGS_BAD_JSON && !strstr(why, "duplicate key")))
    fail("strict JSON refused as not JSON", v, why);
  int again = ts_schema_validate(s, args, alen, why, sizeof why);
  if (again != v) fail("validating twice gave two answers", again, why);
  ts_schema_free(s);
  return 0;
}
