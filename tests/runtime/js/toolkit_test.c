/*
 * toolkit_test.c: runtime/js/toolkit.js, the `z` builder a tool module uses for its
 * args: each row is a z chain and the JSON Schema Zod 4's own export gives for it
 * (z.toJSONSchema(schema, {io: 'input'}), without "$schema"; docs/jstools.md has the
 * table), read back through ts_sandbox_load_tools as the registry sees it. Misuse (a
 * bad argument) is a load error that names the method.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "js/sandbox.h"
#include "support/runner.h"

static const struct {
  int line;
  const char *z, *want;
} rows[] = {
    {__LINE__, "z.string()", "{\"type\":\"string\"}"},
    {__LINE__, "z.number()", "{\"type\":\"number\"}"},
    {__LINE__, "z.boolean()", "{\"type\":\"boolean\"}"},
    {__LINE__, "z.null()", "{\"type\":\"null\"}"},
    {__LINE__, "z.any()", "{}"},
    {__LINE__, "z.array(z.string())", "{\"type\":\"array\",\"items\":{\"type\":\"string\"}}"},
    {__LINE__, "z.string().array()", "{\"type\":\"array\",\"items\":{\"type\":\"string\"}}"},
    {__LINE__, "z.enum(['a', 'b'])", "{\"type\":\"string\",\"enum\":[\"a\",\"b\"]}"},
    {__LINE__, "z.literal('x')", "{\"type\":\"string\",\"const\":\"x\"}"},
    {__LINE__, "z.literal(7)", "{\"type\":\"number\",\"const\":7}"},
    {__LINE__, "z.literal(true)", "{\"type\":\"boolean\",\"const\":true}"},
    {__LINE__, "z.union([z.string(), z.number()])", "{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"number\"}]}"},
    {__LINE__, "z.string().or(z.number())", "{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"number\"}]}"},
    {__LINE__, "z.string().nullable()", "{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}]}"},
    {__LINE__, "z.string().optional()", "{\"type\":\"string\"}"},
    {__LINE__, "z.string().default('hi')", "{\"type\":\"string\",\"default\":\"hi\"}"},
    {__LINE__, "z.string().describe('a name')", "{\"type\":\"string\",\"description\":\"a name\"}"},
    {__LINE__, "z.string().min(1)", "{\"type\":\"string\",\"minLength\":1}"},
    {__LINE__, "z.string().min(1).max(10)", "{\"type\":\"string\",\"minLength\":1,\"maxLength\":10}"},
    {__LINE__, "z.string().length(4)", "{\"type\":\"string\",\"minLength\":4,\"maxLength\":4}"},
    {__LINE__, "z.string().regex(/^[a-z]+$/)", "{\"type\":\"string\",\"pattern\":\"^[a-z]+$\"}"},
    {__LINE__, "z.string().email()",
     "{\"type\":\"string\",\"format\":\"email\",\"pattern\":\"^(?!\\\\.)(?!.*\\\\.\\\\.)([A-Za-z0-9_'+\\\\-\\\\.]*)"
     "[A-Za-z0-9_+-]@([A-Za-z0-9][A-Za-z0-9\\\\-]*\\\\.)+[A-Za-z]{2,}$\"}"},
    {__LINE__, "z.string().url()", "{\"type\":\"string\",\"format\":\"uri\"}"},
    {__LINE__, "z.url()", "{\"type\":\"string\",\"format\":\"uri\"}"},
    {__LINE__, "z.number().int()",
     "{\"type\":\"integer\",\"minimum\":-9007199254740991,\"maximum\":9007199254740991}"},
    {__LINE__, "z.int()", "{\"type\":\"integer\",\"minimum\":-9007199254740991,\"maximum\":9007199254740991}"},
    {__LINE__, "z.number().int().min(1).max(100)", "{\"type\":\"integer\",\"minimum\":1,\"maximum\":100}"},
    {__LINE__, "z.number().min(5).max(10)", "{\"type\":\"number\",\"minimum\":5,\"maximum\":10}"},
    {__LINE__, "z.number().positive()", "{\"type\":\"number\",\"exclusiveMinimum\":0}"},
    {__LINE__, "z.number().nonnegative()", "{\"type\":\"number\",\"minimum\":0}"},
    {__LINE__, "z.number().gt(5).lt(10)", "{\"type\":\"number\",\"exclusiveMinimum\":5,\"exclusiveMaximum\":10}"},
    {__LINE__, "z.array(z.number()).min(1).max(3)",
     "{\"type\":\"array\",\"items\":{\"type\":\"number\"},\"minItems\":1,\"maxItems\":3}"},
    {__LINE__, "z.array(z.number()).length(2)",
     "{\"type\":\"array\",\"items\":{\"type\":\"number\"},\"minItems\":2,\"maxItems\":2}"},
    {__LINE__, "z.record(z.string(), z.boolean())",
     "{\"type\":\"object\",\"propertyNames\":{\"type\":\"string\"},\"additionalProperties\":{\"type\":\"boolean\"}}"},
    {__LINE__, "z.tuple([z.string(), z.number()])",
     "{\"type\":\"array\",\"prefixItems\":[{\"type\":\"string\"},{\"type\":\"number\"}]}"},
    {__LINE__, "z.tuple([z.string()]).rest(z.boolean())",
     "{\"type\":\"array\",\"prefixItems\":[{\"type\":\"string\"}],\"items\":{\"type\":\"boolean\"}}"},
    {__LINE__, "z.object({ q: z.string(), n: z.number().optional(), d: z.boolean().default(false) })",
     "{\"type\":\"object\",\"properties\":{\"q\":{\"type\":\"string\"},\"n\":{\"type\":\"number\"},"
     "\"d\":{\"type\":\"boolean\",\"default\":false}},\"required\":[\"q\"]}"},
    {__LINE__, "z.object({ a: z.string() }).strict()",
     "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"required\":[\"a\"],\"additionalProperties\":false}"},
    {__LINE__, "z.object({ a: z.string(), b: z.number() }).partial()",
     "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"number\"}}}"},
    {__LINE__, "z.object({ a: z.string() }).extend({ b: z.number() }).describe('x')",
     "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"number\"}},"
     "\"required\":[\"a\",\"b\"],\"description\":\"x\"}"},
    {__LINE__, "z.object({ a: z.string(), b: z.number() }).pick({ b: true })",
     "{\"type\":\"object\",\"properties\":{\"b\":{\"type\":\"number\"}},\"required\":[\"b\"]}"},
    {__LINE__, "z.object({ tags: z.array(z.enum(['x', 'y'])).nullable().optional() })",
     "{\"type\":\"object\",\"properties\":{\"tags\":{\"anyOf\":[{\"type\":\"array\",\"items\":{\"type\":\"string\","
     "\"enum\":[\"x\",\"y\"]}},{\"type\":\"null\"}]}}}"},
    /* Each method returns a new schema: the original is unchanged. */
    {__LINE__, "(function () { var s = z.string(); s.min(3); s.describe('no'); return s })()", "{\"type\":\"string\"}"},
};

static char *schema_of(const char *zexpr, char *why, size_t cap) {
  char src[2048];
  snprintf(src, sizeof src, "module.exports = defineTool({ args: %s, execute: function () {} });", zexpr);
  ts_sandbox_tool_defs d;
  int rc = ts_sandbox_load_tools(src, strlen(src), "t", NULL, &d, why, cap);
  if (rc) return NULL;
  char *s = d.n == 1 && d.v[0].args_schema ? strdup(d.v[0].args_schema) : NULL;
  ts_sandbox_tool_defs_free(&d);
  return s;
}

START_TEST(test_rows) {
  for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
    char why[512] = "";
    char *got = schema_of(rows[i].z, why, sizeof why);
    ck_assert_msg(got, "line %d: %s: %s", rows[i].line, rows[i].z, why);
    ck_assert_msg(!strcmp(got, rows[i].want), "line %d: %s:\n got  %s\n want %s", rows[i].line,
                  rows[i].z, got, rows[i].want);
    free(got);
  }
}
END_TEST

START_TEST(test_misuse) {
  static const struct {
    const char *z, *needle;
  } bad[] = {
      {"z.string().min('x')", "min wants a non-negative integer"},
      {"z.enum([])", "z.enum wants a non-empty array"},
      {"z.object(5)", "z.object wants an object"},
      {"z.array(42)", "z.array(item) must be a z schema"},
      {"z.literal({})", "z.literal wants"},
      {"z.number().max(NaN)", "maximum wants a number"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char why[512] = "";
    char *got = schema_of(bad[i].z, why, sizeof why);
    ck_assert_msg(!got, "%s: accepted: %s", bad[i].z, got ? got : "");
    ck_assert_msg(strstr(why, bad[i].needle), "%s: %s", bad[i].z, why);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("toolkit");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_rows);
  tcase_add_test(tc, test_misuse);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
