/*
 * schema_test.c: tests for runtime/schema.c (the tool-argument validator).
 *
 * Tables of {line, label, schema, args, result, message} rows cover every keyword,
 * pointers into nested objects and arrays (with ~0/~1 escaping), unions and their
 * messages, integers decided from the number's text, lengths in code points, and
 * malformed schemas with their messages. Then the limits (nesting of either
 * document, $ref cycles, exponential $ref schemas) and out-of-memory at every
 * allocation of compile and validate.
 *
 * To keep the rows readable, JSON in them is written with single quotes; q() turns
 * every ' into " before use (no row needs a real apostrophe).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/registry.h"
#include "tools/schema.h"
#include "support/runner.h"
#include "support/test_support.h"

static char *q(const char *s) {
  size_t n = strlen(s);
  char *r = malloc(n + 1);
  ck_assert_ptr_nonnull(r);
  for (size_t i = 0; i <= n; i++) r[i] = s[i] == '\'' ? '"' : s[i];
  return r;
}

/* Compiles text[0..n): the schema, or NULL (then why says why); a NULL result must
 * come with an error code and a schema with TS_E_OK. */
static ts_schema *compile_n(const char *text, size_t n, char *why, size_t cap) {
  ts_schema *r = NULL;
  int rc = ts_schema_compile(text, n, 0, &r, why, cap);
  ck_assert_msg((rc == TS_E_OK) == (r != NULL), "rc %s with schema %p", ts_err_name(rc),
                (void *)r);
  return r;
}

static ts_schema *compile_q(const char *schema, char *why, size_t cap) {
  char *s = q(schema);
  ts_schema *r = compile_n(s, strlen(s), why, cap);
  free(s);
  return r;
}

static int validate_q(const ts_schema *s, const char *args, char *why, size_t cap) {
  char *a = q(args);
  int rc = ts_schema_validate(s, a, strlen(a), why, cap);
  free(a);
  return rc;
}

#define MISMATCH TS_E_SCHEMA_MISMATCH
#define BADJSON TS_E_ARGS_BAD_JSON

static const struct {
  int line;
  const char *label;
  const char *schema;
  const char *args;
  int want;
  const char *why; /* "" when valid */
} rows[] = {
    /* type */
    {__LINE__, "string ok", "{'type':'string'}", "'x'", TS_E_OK, ""},
    {__LINE__, "string got number", "{'type':'string'}", "5", MISMATCH,
     "(root): expected string, got number"},
    {__LINE__, "number ok", "{'type':'number'}", "-1.5e3", TS_E_OK, ""},
    {__LINE__, "number got string", "{'type':'number'}", "'1'", MISMATCH,
     "(root): expected number, got string"},
    {__LINE__, "boolean ok", "{'type':'boolean'}", "false", TS_E_OK, ""},
    {__LINE__, "boolean got null", "{'type':'boolean'}", "null", MISMATCH,
     "(root): expected boolean, got null"},
    {__LINE__, "object got array", "{'type':'object'}", "[]", MISMATCH,
     "(root): expected object, got array"},
    {__LINE__, "array got object", "{'type':'array'}", "{}", MISMATCH,
     "(root): expected array, got object"},
    {__LINE__, "null ok", "{'type':'null'}", " null ", TS_E_OK, ""},
    {__LINE__, "null got bool", "{'type':'null'}", "true", MISMATCH,
     "(root): expected null, got boolean"},
    {__LINE__, "no type: anything", "{}", "[1,{'a':null}]", TS_E_OK, ""},
    /* integer: decided from the text */
    {__LINE__, "integer", "{'type':'integer'}", "42", TS_E_OK, ""},
    {__LINE__, "integer 1.0", "{'type':'integer'}", "1.0", TS_E_OK, ""},
    {__LINE__, "integer 1e2", "{'type':'integer'}", "1e2", TS_E_OK, ""},
    {__LINE__, "integer 1E+2", "{'type':'integer'}", "1E+2", TS_E_OK, ""},
    {__LINE__, "integer 150e-1", "{'type':'integer'}", "150e-1", TS_E_OK, ""},
    {__LINE__, "integer 12.50e1", "{'type':'integer'}", "12.50e1", TS_E_OK, ""},
    {__LINE__, "integer -0", "{'type':'integer'}", "-0", TS_E_OK, ""},
    {__LINE__, "integer 0.0e-5", "{'type':'integer'}", "0.0e-5", TS_E_OK, ""},
    {__LINE__, "integer huge", "{'type':'integer'}", "123456789012345678901234567890", TS_E_OK,
     ""},
    {__LINE__, "integer 1e400", "{'type':'integer'}", "1e400", TS_E_OK, ""},
    {__LINE__, "integer 1.5", "{'type':'integer'}", "1.5", MISMATCH,
     "(root): expected integer, got number"},
    {__LINE__, "integer 1e-2", "{'type':'integer'}", "1e-2", MISMATCH,
     "(root): expected integer, got number"},
    {__LINE__, "integer 1.25e1", "{'type':'integer'}", "1.25e1", MISMATCH,
     "(root): expected integer, got number"},
    {__LINE__, "integer 1.0000000000000000001", "{'type':'integer'}", "1.0000000000000000001",
     MISMATCH, "(root): expected integer, got number"},
    {__LINE__, "integer 10e-400", "{'type':'integer'}", "10e-400", MISMATCH,
     "(root): expected integer, got number"},
    {__LINE__, "number admits integer", "{'type':'number'}", "7", TS_E_OK, ""},
    /* unions */
    {__LINE__, "union string", "{'type':['string','null']}", "'x'", TS_E_OK, ""},
    {__LINE__, "union null", "{'type':['string','null']}", "null", TS_E_OK, ""},
    {__LINE__, "union miss", "{'type':['string','null']}", "1", MISMATCH,
     "(root): expected string or null, got number"},
    {__LINE__, "union of three", "{'type':['string','number','null']}", "true", MISMATCH,
     "(root): expected string, number or null, got boolean"},
    {__LINE__, "integer or number", "{'type':['integer','number']}", "1.5", TS_E_OK, ""},
    {__LINE__, "nullable", "{'type':'string','nullable':true}", "null", TS_E_OK, ""},
    {__LINE__, "nullable miss", "{'type':'string','nullable':true}", "2", MISMATCH,
     "(root): expected string or null, got number"},
    {__LINE__, "nullable false", "{'type':'string','nullable':false}", "null", MISMATCH,
     "(root): expected string, got null"},
    {__LINE__, "nullable alone", "{'nullable':true}", "3", TS_E_OK, ""},
    /* objects */
    {__LINE__, "required ok",
     "{'type':'object','properties':{'path':{'type':'string'},'n':{'type':'integer'}},"
     "'required':['path'],'additionalProperties':false}",
     "{'path':'a','n':2}", TS_E_OK, ""},
    {__LINE__, "required missing",
     "{'type':'object','properties':{'path':{'type':'string'}},'required':['path']}", "{}",
     MISMATCH, "(root): missing required property \"path\""},
    {__LINE__, "property type",
     "{'type':'object','properties':{'path':{'type':'string'}},'required':['path']}",
     "{'path':1}", MISMATCH, "/path: expected string, got number"},
    {__LINE__, "additional false",
     "{'properties':{'path':{}},'additionalProperties':false}", "{'path':1,'x':2}", MISMATCH,
     "(root): unexpected property \"x\""},
    {__LINE__, "additional true", "{'properties':{},'additionalProperties':true}", "{'x':2}",
     TS_E_OK, ""},
    {__LINE__, "additional schema", "{'additionalProperties':{'type':'number'}}",
     "{'a':1,'b':'x'}", MISMATCH, "/b: expected number, got string"},
    {__LINE__, "additional schema skips declared",
     "{'properties':{'b':{'type':'string'}},'additionalProperties':{'type':'number'}}",
     "{'a':1,'b':'x'}", TS_E_OK, ""},
    {__LINE__, "patternProperties relaxes additional",
     "{'patternProperties':{'^x':{}},'additionalProperties':false}", "{'x1':1}", TS_E_OK, ""},
    {__LINE__, "properties apply to objects only", "{'properties':{'a':{'type':'string'}}}",
     "[1]", TS_E_OK, ""},
    {__LINE__, "minProperties", "{'minProperties':2}", "{'a':1}", MISMATCH,
     "(root): object has fewer than 2 properties"},
    {__LINE__, "maxProperties", "{'maxProperties':1}", "{'a':1,'b':2}", MISMATCH,
     "(root): object has more than 1 property"},
    {__LINE__, "escaped key matches property", "{'properties':{'caf\\u00e9':{'type':'string'}}}",
     "{'caf\xc3\xa9':1}", MISMATCH, "/caf\xc3\xa9: expected string, got number"},
    {__LINE__, "escaped arg key matches property", "{'properties':{'caf\xc3\xa9':{'type':'string'}}}",
     "{'caf\\u00e9':1}", MISMATCH, "/caf\xc3\xa9: expected string, got number"},
    {__LINE__, "control byte in a name", "{'additionalProperties':false}", "{'a\\nb':1}",
     MISMATCH, "(root): unexpected property \"a\\u000ab\""},
    /* pointers */
    {__LINE__, "nested pointer",
     "{'properties':{'files':{'type':'array','items':{'type':'object',"
     "'properties':{'path':{'type':'string'}}}}}}",
     "{'files':[{'path':'a'},{'path':'b'},{'path':3}]}", MISMATCH,
     "/files/2/path: expected string, got number"},
    {__LINE__, "pointer escaping",
     "{'properties':{'a/b':{'properties':{'m~n':{'type':'string'}}}}}", "{'a/b':{'m~n':1}}",
     MISMATCH, "/a~1b/m~0n: expected string, got number"},
    {__LINE__, "pointer into nested arrays", "{'items':{'items':{'type':'null'}}}",
     "[[],[null,null,0]]", MISMATCH, "/1/2: expected null, got number"},
    {__LINE__, "empty key", "{'properties':{'':{'type':'null'}}}", "{'':1}", MISMATCH,
     "/: expected null, got number"},
    {__LINE__, "required deep",
     "{'properties':{'a':{'properties':{'b':{'required':['c']}}}}}", "{'a':{'b':{'d':1}}}",
     MISMATCH, "/a/b: missing required property \"c\""},
    /* arrays */
    {__LINE__, "items", "{'items':{'type':'string'}}", "['a','b',1]", MISMATCH,
     "/2: expected string, got number"},
    {__LINE__, "items on non-array", "{'items':{'type':'string'}}", "'x'", TS_E_OK, ""},
    {__LINE__, "minItems", "{'minItems':2}", "[1]", MISMATCH,
     "(root): array has fewer than 2 items"},
    {__LINE__, "minItems one", "{'minItems':1}", "[]", MISMATCH,
     "(root): array has fewer than 1 item"},
    {__LINE__, "maxItems", "{'maxItems':5}", "[1,2,3,4,5,6]", MISMATCH,
     "(root): array has more than 5 items"},
    {__LINE__, "maxItems 2.0", "{'maxItems':2.0}", "[1,2]", TS_E_OK, ""},
    {__LINE__, "tuple ok", "{'items':[{'type':'string'},{'type':'number'}]}", "['a',1,true]",
     TS_E_OK, ""},
    {__LINE__, "tuple type", "{'items':[{'type':'string'},{'type':'number'}]}", "['a','b']",
     MISMATCH, "/1: expected number, got string"},
    {__LINE__, "tuple closed",
     "{'items':[{'type':'string'},{'type':'number'}],'additionalItems':false}", "['a',1,2]",
     MISMATCH, "(root): array has more than 2 items"},
    {__LINE__, "tuple rest schema", "{'items':[{'type':'string'}],'additionalItems':{'type':'null'}}",
     "['a',null,1]", MISMATCH, "/2: expected null, got number"},
    {__LINE__, "prefixItems", "{'prefixItems':[{'type':'string'}],'items':{'type':'number'}}",
     "['a',1,'b']", MISMATCH, "/2: expected number, got string"},
    {__LINE__, "prefixItems closed", "{'prefixItems':[{}],'items':false}", "[1,2]", MISMATCH,
     "(root): array has more than 1 item"},
    /* enum and const */
    {__LINE__, "enum string", "{'enum':['a','b',1,null,{'x':[1,2]}]}", "'b'", TS_E_OK, ""},
    {__LINE__, "enum number by value", "{'enum':['a','b',1,null,{'x':[1,2]}]}", "1.0", TS_E_OK,
     ""},
    {__LINE__, "enum object", "{'enum':['a','b',1,null,{'x':[1,2]}]}", "{'x':[1.0,2e0]}",
     TS_E_OK, ""},
    {__LINE__, "enum null", "{'enum':['a','b',1,null,{'x':[1,2]}]}", "null", TS_E_OK, ""},
    {__LINE__, "enum miss", "{'enum':['a','b',1,null,{'x':[1,2]}]}", "'c'", MISMATCH,
     "(root): value not in enum"},
    {__LINE__, "enum array order matters", "{'enum':['a','b',1,null,{'x':[1,2]}]}",
     "{'x':[2,1]}", MISMATCH, "(root): value not in enum"},
    {__LINE__, "enum bool vs number", "{'enum':[0,1]}", "false", MISMATCH,
     "(root): value not in enum"},
    {__LINE__, "enum escapes decoded", "{'enum':['caf\\u00e9','a\\/b']}", "'caf\xc3\xa9'",
     TS_E_OK, ""},
    {__LINE__, "enum escapes both sides", "{'enum':['a/b']}", "'a\\/b'", TS_E_OK, ""},
    {__LINE__, "const key order", "{'const':{'a':1,'b':'x'}}", "{'b':'x','a':1}", TS_E_OK, ""},
    {__LINE__, "const missing key", "{'const':{'a':1,'b':'x'}}", "{'a':1}", MISMATCH,
     "(root): value does not equal const"},
    {__LINE__, "const extra key", "{'const':{'a':1,'b':'x'}}", "{'a':1,'b':'x','c':1}", MISMATCH,
     "(root): value does not equal const"},
    {__LINE__, "const other key", "{'const':{'a':1,'b':'x'}}", "{'a':1,'c':'x'}", MISMATCH,
     "(root): value does not equal const"},
    {__LINE__, "const null", "{'const':null}", "null", TS_E_OK, ""},
    {__LINE__, "const false vs 0", "{'const':false}", "0", MISMATCH,
     "(root): value does not equal const"},
    {__LINE__, "const nested", "{'properties':{'v':{'const':[true,{'k':[]}]}}}",
     "{'v':[true,{'k':[0]}]}", MISMATCH, "/v: value does not equal const"},
    {__LINE__, "const -0 equals 0", "{'const':0}", "-0.0", TS_E_OK, ""},
    /* strings: lengths in code points */
    {__LINE__, "minLength", "{'minLength':3}", "'ab'", MISMATCH,
     "(root): string shorter than 3 characters"},
    {__LINE__, "minLength one", "{'minLength':1}", "''", MISMATCH,
     "(root): string shorter than 1 character"},
    {__LINE__, "maxLength", "{'maxLength':2}", "'abc'", MISMATCH,
     "(root): string longer than 2 characters"},
    {__LINE__, "maxLength code points", "{'maxLength':3}", "'\xc3\xa9\xc3\xa9\xc3\xa9'", TS_E_OK,
     ""},
    {__LINE__, "maxLength emoji", "{'maxLength':3}",
     "'\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80'", MISMATCH,
     "(root): string longer than 3 characters"},
    {__LINE__, "escaped surrogate pair is one", "{'maxLength':1}", "'\\ud83d\\ude00'", TS_E_OK,
     ""},
    {__LINE__, "escapes count decoded", "{'minLength':2,'maxLength':2}", "'\\n\\u0000'",
     TS_E_OK, ""},
    {__LINE__, "minLength on a number", "{'minLength':3}", "5", TS_E_OK, ""},
    /* numbers */
    {__LINE__, "minimum", "{'minimum':0,'maximum':10}", "-1", MISMATCH,
     "(root): number below minimum 0"},
    {__LINE__, "maximum", "{'minimum':0,'maximum':10}", "11", MISMATCH,
     "(root): number above maximum 10"},
    {__LINE__, "maximum inclusive", "{'minimum':0,'maximum':10}", "1e1", TS_E_OK, ""},
    {__LINE__, "maximum as written", "{'maximum':1e3}", "1000.5", MISMATCH,
     "(root): number above maximum 1e3"},
    {__LINE__, "exclusiveMinimum", "{'exclusiveMinimum':0}", "0", MISMATCH,
     "(root): number not above exclusive minimum 0"},
    {__LINE__, "exclusiveMinimum ok", "{'exclusiveMinimum':0}", "0.001", TS_E_OK, ""},
    {__LINE__, "exclusiveMaximum", "{'exclusiveMaximum':10}", "10", MISMATCH,
     "(root): number not below exclusive maximum 10"},
    {__LINE__, "draft 4 exclusive", "{'minimum':0,'exclusiveMinimum':true}", "0", MISMATCH,
     "(root): number not above exclusive minimum 0"},
    {__LINE__, "draft 4 exclusive max", "{'exclusiveMaximum':true,'maximum':5}", "5", MISMATCH,
     "(root): number not below exclusive maximum 5"},
    {__LINE__, "draft 4 not exclusive", "{'minimum':0,'exclusiveMinimum':false}", "0", TS_E_OK,
     ""},
    {__LINE__, "bounds on a string", "{'minimum':5}", "'1'", TS_E_OK, ""},
    /* anyOf / oneOf / allOf / not */
    {__LINE__, "anyOf ok", "{'anyOf':[{'type':'string'},{'type':'null'}]}", "'x'", TS_E_OK, ""},
    {__LINE__, "anyOf types", "{'anyOf':[{'type':'string'},{'type':'null'}]}", "1", MISMATCH,
     "(root): expected string or null, got number"},
    {__LINE__, "anyOf one plausible",
     "{'anyOf':[{'type':'string','minLength':3},{'type':'null'}]}", "'ab'", MISMATCH,
     "(root): string shorter than 3 characters"},
    {__LINE__, "anyOf none",
     "{'anyOf':[{'type':'string','minLength':3},{'type':'string','maxLength':1}]}", "'ab'",
     MISMATCH, "(root): matches none of anyOf"},
    {__LINE__, "anyOf untyped branch", "{'anyOf':[{'enum':[1]},{'const':2}]}", "3", MISMATCH,
     "(root): matches none of anyOf"},
    {__LINE__, "anyOf nested pointer",
     "{'properties':{'a':{'anyOf':[{'type':'object','properties':{'b':{'type':'integer'}}},"
     "{'type':'null'}]}}}",
     "{'a':{'b':'x'}}", MISMATCH, "/a/b: expected integer, got string"},
    {__LINE__, "oneOf two", "{'oneOf':[{'type':'integer'},{'type':'number'}]}", "1", MISMATCH,
     "(root): matches 2 of oneOf (must match exactly one)"},
    {__LINE__, "oneOf one", "{'oneOf':[{'type':'integer'},{'type':'number'}]}", "1.5", TS_E_OK,
     ""},
    {__LINE__, "oneOf none", "{'oneOf':[{'type':'integer'},{'type':'boolean'}]}", "'x'",
     MISMATCH, "(root): expected integer or boolean, got string"},
    {__LINE__, "oneOf none deep",
     "{'oneOf':[{'required':['a']},{'required':['b']}]}", "{}", MISMATCH,
     "(root): matches none of oneOf"},
    {__LINE__, "allOf", "{'allOf':[{'type':'object'},{'required':['a']}]}", "{}", MISMATCH,
     "(root): missing required property \"a\""},
    {__LINE__, "not", "{'not':{'type':'null'}}", "null", MISMATCH,
     "(root): value matches the \"not\" schema"},
    {__LINE__, "not ok", "{'not':{'type':'null'}}", "0", TS_E_OK, ""},
    {__LINE__, "union inside union",
     "{'anyOf':[{'anyOf':[{'type':'string'},{'type':'number'}]},{'type':'null'}]}", "true",
     MISMATCH, "(root): matches none of anyOf"},
    /* boolean schemas */
    {__LINE__, "true schema", "true", "{'x':[1]}", TS_E_OK, ""},
    {__LINE__, "false schema", "false", "{}", MISMATCH, "(root): no value is allowed here"},
    {__LINE__, "false property", "{'properties':{'x':false}}", "{'x':1}", MISMATCH,
     "/x: no value is allowed here"},
    {__LINE__, "false items", "{'items':false}", "[]", TS_E_OK, ""},
    /* $ref */
    {__LINE__, "ref definitions",
     "{'definitions':{'p':{'type':'string'}},'properties':{'a':{'$ref':'#/definitions/p'}}}",
     "{'a':1}", MISMATCH, "/a: expected string, got number"},
    {__LINE__, "ref $defs tree",
     "{'$defs':{'node':{'type':'object','properties':{'kids':{'type':'array',"
     "'items':{'$ref':'#/$defs/node'}},'v':{'type':'integer'}}}},'$ref':'#/$defs/node'}",
     "{'kids':[{'kids':[{'v':'x'}]}]}", MISMATCH, "/kids/0/kids/0/v: expected integer, got string"},
    {__LINE__, "ref root",
     "{'type':'object','properties':{'next':{'anyOf':[{'$ref':'#'},{'type':'null'}]}}}",
     "{'next':{'next':{'next':null}}}", TS_E_OK, ""},
    {__LINE__, "ref escaped name", "{'definitions':{'a/b~':{'type':'null'}},"
     "'$ref':'#/definitions/a~1b~0'}", "1", MISMATCH, "(root): expected null, got number"},
    {__LINE__, "ref forward between defs",
     "{'$defs':{'a':{'$ref':'#/$defs/b'},'b':{'type':'boolean'}},'items':{'$ref':'#/$defs/a'}}",
     "[true,1]", MISMATCH, "/1: expected boolean, got number"},
    {__LINE__, "ref union message",
     "{'$defs':{'s':{'type':'string'}},'anyOf':[{'$ref':'#/$defs/s'},{'type':'null'}]}", "1",
     MISMATCH, "(root): expected string or null, got number"},
    {__LINE__, "ref siblings apply", "{'$defs':{'s':{'type':'string'}},'$ref':'#/$defs/s',"
     "'minLength':2}", "'a'", MISMATCH, "(root): string shorter than 2 characters"},
    {__LINE__, "ref cycle", "{'$ref':'#'}", "1", TS_E_SCHEMA_LIMIT,
     "(root): schema recursion too deep (a $ref cycle?)"},
    {__LINE__, "ref cycle between defs",
     "{'$defs':{'a':{'$ref':'#/$defs/b'},'b':{'anyOf':[{'$ref':'#/$defs/a'}]}},"
     "'properties':{'x':{'$ref':'#/$defs/a'}}}",
     "{'x':1}", TS_E_SCHEMA_LIMIT, "/x: schema recursion too deep (a $ref cycle?)"},
    /* ignored keywords */
    {__LINE__, "annotations and unknown keywords",
     "{'type':'string','default':5,'format':'email','description':'d',"
     "'x-foo':{},'$schema':'x','title':1,'contentMediaType':'application/json'}",
     "'y'", TS_E_OK, ""},
    /* pattern: ECMA-262 via PCRE2, searched anywhere */
    {__LINE__, "pattern", "{'pattern':'^[a-z]+$'}", "'abc'", TS_E_OK, ""},
    {__LINE__, "pattern miss", "{'pattern':'^[a-z]+$'}", "'abC'", MISMATCH,
     "(root): string does not match pattern \"^[a-z]+$\""},
    {__LINE__, "pattern unanchored", "{'pattern':'b'}", "'abc'", TS_E_OK, ""},
    {__LINE__, "pattern $ at the very end", "{'pattern':'^a$'}", "'a\\n'", MISMATCH,
     "(root): string does not match pattern \"^a$\""},
    {__LINE__, "pattern code points", "{'pattern':'^.$'}", "'\xf0\x9f\x98\x80'", TS_E_OK, ""},
    {__LINE__, "pattern \\u escape", "{'pattern':'^\\\\u00e9$'}", "'\xc3\xa9'", TS_E_OK, ""},
    {__LINE__, "pattern \\d is ASCII", "{'pattern':'^\\\\d$'}", "'\xd9\xa3'", MISMATCH,
     "(root): string does not match pattern \"^\\d$\""},
    {__LINE__, "pattern on a number", "{'pattern':'^x'}", "5", TS_E_OK, ""},
    {__LINE__, "pattern backtracking limit", "{'pattern':'^(a|aa)+$'}",
     "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab'", TS_E_SCHEMA_LIMIT,
     "(root): pattern matching work limit exceeded"},
    {__LINE__, "patternProperties",
     "{'patternProperties':{'^x-':{'type':'integer'}},'additionalProperties':false}",
     "{'x-a':'s'}", MISMATCH, "/x-a: expected integer, got string"},
    {__LINE__, "patternProperties and additional",
     "{'properties':{'a':{}},'patternProperties':{'^x-':{}},'additionalProperties':false}",
     "{'a':1,'x-b':2,'y':3}", MISMATCH, "(root): unexpected property \"y\""},
    {__LINE__, "patternProperties and properties both apply",
     "{'properties':{'x-a':{'type':'integer'}},'patternProperties':{'a$':{'minimum':5}}}",
     "{'x-a':3}", MISMATCH, "/x-a: number below minimum 5"},
    /* multipleOf: exact on the decimal text */
    {__LINE__, "multipleOf", "{'multipleOf':3}", "9", TS_E_OK, ""},
    {__LINE__, "multipleOf miss", "{'multipleOf':3}", "10", MISMATCH,
     "(root): number not a multiple of 3"},
    {__LINE__, "multipleOf 0.1 exact", "{'multipleOf':0.1}", "0.3", TS_E_OK, ""},
    {__LINE__, "multipleOf 0.01", "{'multipleOf':0.01}", "19.99", TS_E_OK, ""},
    {__LINE__, "multipleOf 0.01 miss", "{'multipleOf':0.01}", "19.999", MISMATCH,
     "(root): number not a multiple of 0.01"},
    {__LINE__, "multipleOf exponent", "{'multipleOf':25e-1}", "1e1", TS_E_OK, ""},
    {__LINE__, "multipleOf huge", "{'multipleOf':7}", "7e400", TS_E_OK, ""},
    {__LINE__, "multipleOf huge miss", "{'multipleOf':3}", "1e400", MISMATCH,
     "(root): number not a multiple of 3"},
    {__LINE__, "multipleOf zero", "{'multipleOf':0.5}", "-0", TS_E_OK, ""},
    /* uniqueItems, contains */
    {__LINE__, "uniqueItems", "{'uniqueItems':true}", "[1,'1',[1],{'a':1}]", TS_E_OK, ""},
    {__LINE__, "uniqueItems numbers by value", "{'uniqueItems':true}", "[0,1,1.0]", MISMATCH,
     "(root): array items 1 and 2 are equal"},
    {__LINE__, "uniqueItems objects any order", "{'uniqueItems':true}",
     "[{'a':1,'b':[2]},{'b':[2],'a':1}]", MISMATCH, "(root): array items 0 and 1 are equal"},
    {__LINE__, "uniqueItems false", "{'uniqueItems':false}", "[1,1]", TS_E_OK, ""},
    {__LINE__, "contains", "{'contains':{'type':'null'}}", "[1,null]", TS_E_OK, ""},
    {__LINE__, "contains miss", "{'contains':{'type':'null'}}", "[1,2]", MISMATCH,
     "(root): array has no item that matches \"contains\""},
    /* propertyNames, dependencies */
    {__LINE__, "propertyNames", "{'propertyNames':{'pattern':'^[a-z]+$'}}", "{'ab':1,'A':2}",
     MISMATCH, "(root): property name \"A\" does not match \"propertyNames\""},
    {__LINE__, "dependencies names", "{'dependencies':{'a':['b']}}", "{'a':1}", MISMATCH,
     "(root): property \"a\" requires property \"b\""},
    {__LINE__, "dependencies absent", "{'dependencies':{'a':['b']}}", "{'c':1}", TS_E_OK, ""},
    {__LINE__, "dependencies schema",
     "{'dependencies':{'a':{'properties':{'b':{'type':'string'}}}}}", "{'a':1,'b':2}", MISMATCH,
     "/b: expected string, got number"},
    {__LINE__, "dependentRequired", "{'dependentRequired':{'a':['b','c']}}", "{'a':1,'b':2}",
     MISMATCH, "(root): property \"a\" requires property \"c\""},
    {__LINE__, "dependentSchemas", "{'dependentSchemas':{'a':{'maxProperties':1}}}",
     "{'a':1,'b':2}", MISMATCH, "(root): object has more than 1 property"},
    /* if / then / else */
    {__LINE__, "if then", "{'if':{'required':['a']},'then':{'required':['b']},"
     "'else':{'required':['c']}}", "{'a':1}", MISMATCH, "(root): missing required property \"b\""},
    {__LINE__, "if else", "{'if':{'required':['a']},'then':{'required':['b']},"
     "'else':{'required':['c']}}", "{'d':1}", MISMATCH, "(root): missing required property \"c\""},
    {__LINE__, "then without if", "{'then':false}", "1", TS_E_OK, ""},
    /* $ref: pointers, $id and anchors */
    {__LINE__, "ref to a property", "{'properties':{'a':{'type':'integer'},"
     "'b':{'$ref':'#/properties/a'}}}", "{'b':'x'}", MISMATCH, "/b: expected integer, got string"},
    {__LINE__, "ref to a tuple item", "{'items':[{'type':'integer'},{'$ref':'#/items/0'}]}",
     "[1,'x']", MISMATCH, "/1: expected integer, got string"},
    {__LINE__, "ref percent-encoded", "{'$defs':{'a b%':{'type':'null'}},'$ref':'#/$defs/a%20b%25'}",
     "1", MISMATCH, "(root): expected null, got number"},
    {__LINE__, "ref nested definitions",
     "{'properties':{'p':{'definitions':{'d':{'type':'null'}},'$ref':'#/properties/p/definitions/d'}}}",
     "{'p':1}", MISMATCH, "/p: expected null, got number"},
    {__LINE__, "ref by $id", "{'$id':'http://x.test/root.json','properties':{'a':{'$ref':'item.json'}},"
     "'$defs':{'i':{'$id':'item.json','type':'string'}}}", "{'a':1}", MISMATCH,
     "/a: expected string, got number"},
    {__LINE__, "ref into an $id document",
     "{'$id':'http://x.test/root.json','properties':{'a':{'$ref':'sub/t.json#/$defs/n'}},"
     "'$defs':{'t':{'$id':'sub/t.json','$defs':{'n':{'type':'null'}}}}}", "{'a':1}", MISMATCH,
     "/a: expected null, got number"},
    {__LINE__, "ref to a plain-name $id", "{'properties':{'a':{'$ref':'#foo'}},"
     "'definitions':{'f':{'$id':'#foo','type':'boolean'}}}", "{'a':1}", MISMATCH,
     "/a: expected boolean, got number"},
    {__LINE__, "ref to an $anchor", "{'properties':{'a':{'$ref':'#foo'}},"
     "'$defs':{'f':{'$anchor':'foo','type':'boolean'}}}", "{'a':true}", TS_E_OK, ""},
    {__LINE__, "draft 7: ref replaces its siblings",
     "{'$schema':'http://json-schema.org/draft-07/schema#','definitions':{'s':{'type':'string'}},"
     "'$ref':'#/definitions/s','minLength':2}", "'a'", TS_E_OK, ""},
    {__LINE__, "draft 7: ref still applies",
     "{'$schema':'http://json-schema.org/draft-07/schema#','definitions':{'s':{'type':'string'}},"
     "'$ref':'#/definitions/s','minLength':2}", "1", MISMATCH, "(root): expected string, got number"},
    /* arguments that are not JSON */
    {__LINE__, "empty args", "{}", "", BADJSON,
     "arguments are not valid JSON: input holds no JSON value"},
    {__LINE__, "blank args", "{}", "  ", BADJSON,
     "arguments are not valid JSON: input holds no JSON value"},
    {__LINE__, "unclosed", "{}", "{'a':1", BADJSON,
     "arguments are not valid JSON: input ended inside a value"},
    {__LINE__, "two values", "{}", "1 2", BADJSON,
     "arguments are not valid JSON: data after the top-level value at byte 2"},
    {__LINE__, "two objects", "{}", "{},{}", BADJSON,
     "arguments are not valid JSON: data after the top-level value at byte 2"},
    {__LINE__, "wrapper escape", "{}", "1],[2", BADJSON,
     "arguments are not valid JSON: data after the top-level value at byte 1"},
    {__LINE__, "trailing comma", "{}", "[1,]", BADJSON,
     "arguments are not valid JSON: trailing comma at byte 3"},
    {__LINE__, "trailing comma object", "{}", "{'a':1, }", BADJSON,
     "arguments are not valid JSON: trailing comma at byte 8"},
    /* what jsmn alone let through (issue 18 item 11) */
    {__LINE__, "double comma", "{}", "[1,,2]", BADJSON,
     "arguments are not valid JSON: unexpected character at byte 3"},
    {__LINE__, "leading comma", "{}", "[,1,2]", BADJSON,
     "arguments are not valid JSON: unexpected character at byte 1"},
    {__LINE__, "colon in an array", "{}", "[:]", BADJSON,
     "arguments are not valid JSON: unexpected character at byte 1"},
    {__LINE__, "colon alone in an object", "{}", "{:}", BADJSON,
     "arguments are not valid JSON: unexpected character at byte 1"},
    {__LINE__, "leading colon", "{}", ":1", BADJSON,
     "arguments are not valid JSON: unexpected character at byte 0"},
    {__LINE__, "const [1,2] vs [1,,2]", "{'const':[1,2]}", "[1,,2]", BADJSON,
     "arguments are not valid JSON: unexpected character at byte 3"},
    {__LINE__, "colon for comma", "{}", "{'a':1:'b':2}", BADJSON,
     "arguments are not valid JSON: unexpected character at byte 6"},
    {__LINE__, "missing value", "{}", "{'a':}", BADJSON,
     "arguments are not valid JSON: unexpected character at byte 5"},
    {__LINE__, "leading zero", "{}", "[01]", BADJSON,
     "arguments are not valid JSON: malformed number at byte 2"},
    {__LINE__, "bare word", "{}", "nul", BADJSON,
     "arguments are not valid JSON: input ended inside a value"},
    {__LINE__, "raw control", "{}", "{'a':'x\x01'}", BADJSON,
     "arguments are not valid JSON: raw control character in string at byte 7"},
    {__LINE__, "lone surrogate", "{}", "'\\ud800'", BADJSON,
     "arguments are not valid JSON: lone or mis-ordered \\u surrogate at byte 7"},
    {__LINE__, "bad UTF-8", "{}", "'\xff'", BADJSON,
     "arguments are not valid JSON: invalid UTF-8 in string at byte 1"},
    {__LINE__, "overlong UTF-8", "{}", "'\xc0\xaf'", BADJSON,
     "arguments are not valid JSON: invalid UTF-8 in string at byte 1"},
    {__LINE__, "UTF-8 surrogate", "{}", "'\xed\xa0\x80'", BADJSON,
     "arguments are not valid JSON: invalid UTF-8 in string at byte 2"},
    {__LINE__, "duplicate key", "{}", "{'a':1,'b':2,'a':1}", BADJSON,
     "(root): duplicate key \"a\""},
    {__LINE__, "duplicate key nested", "{}", "{'x':[{'k':1,'k\\u0000':2},{'k':1,'\\u006b':2}]}",
     BADJSON, "/x/1: duplicate key \"k\""},
};

START_TEST(test_validate_table) {
  int failed = 0;
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    char why[256];
    ts_schema *s = compile_q(rows[i].schema, why, sizeof why);
    ck_assert_msg(s != NULL, "line %d (%s): schema did not compile: %s", rows[i].line,
                  rows[i].label, why);
    memset(why, 'x', sizeof why);
    int rc = validate_q(s, rows[i].args, why, sizeof why);
    if (rc != rows[i].want || strcmp(why, rows[i].why) != 0) {
      fprintf(stderr, "line %d (%s): got %s \"%s\", want %s \"%s\"\n", rows[i].line,
              rows[i].label, ts_err_name(rc), why, ts_err_name(rows[i].want), rows[i].why);
      failed++;
    }
    ts_schema_free(s);
  }
  ck_assert_msg(failed == 0, "%d rows failed (listed above)", failed);
}
END_TEST

static const struct {
  int line;
  const char *label;
  const char *schema;
  const char *why;
} bad_rows[] = {
    {__LINE__, "not JSON", "{'type':", "schema is not valid JSON: input ended inside a value"},
    {__LINE__, "empty", "", "schema is not valid JSON: input holds no JSON value"},
    {__LINE__, "trailing comma", "{'type':'string',}",
     "schema is not valid JSON: trailing comma at byte 17"},
    {__LINE__, "double comma", "{'enum':[1,,2]}",
     "schema is not valid JSON: unexpected character at byte 11"},
    {__LINE__, "leading comma", "{'enum':[,1]}",
     "schema is not valid JSON: unexpected character at byte 9"},
    {__LINE__, "colon in an array", "{'enum':[:]}",
     "schema is not valid JSON: unexpected character at byte 9"},
    {__LINE__, "colon alone in an object", "{:}",
     "schema is not valid JSON: unexpected character at byte 1"},
    {__LINE__, "leading colon", ":1", "schema is not valid JSON: unexpected character at byte 0"},
    {__LINE__, "const with a hole", "{'const':[1,,2]}",
     "schema is not valid JSON: unexpected character at byte 12"},
    {__LINE__, "a number", "5", "(root): a schema must be an object or a boolean"},
    {__LINE__, "a string", "'x'", "(root): a schema must be an object or a boolean"},
    {__LINE__, "null", "null", "(root): a schema must be an object or a boolean"},
    {__LINE__, "duplicate key", "{'type':'string','type':'number'}",
     "(root): duplicate key \"type\""},
    {__LINE__, "unknown type", "{'type':'strnig'}", "/type: unknown type \"strnig\""},
    {__LINE__, "type not a string", "{'type':5}",
     "/type: must be a type name or an array of type names"},
    {__LINE__, "type empty array", "{'type':[]}", "/type: must not be an empty array"},
    {__LINE__, "type listed twice", "{'type':['string','string']}", "/type/1: type listed twice"},
    {__LINE__, "type array item", "{'type':['string',1]}",
     "/type/1: must be a type name or an array of type names"},
    {__LINE__, "type in union unknown", "{'type':['string','int']}",
     "/type/1: unknown type \"int\""},
    {__LINE__, "nullable", "{'nullable':'yes'}", "/nullable: must be a boolean"},
    {__LINE__, "required string", "{'required':'x'}", "/required: must be an array of strings"},
    {__LINE__, "required item", "{'required':['a',1]}", "/required/1: must be a string"},
    {__LINE__, "properties array", "{'properties':[]}", "/properties: must be an object"},
    {__LINE__, "property bad", "{'properties':{'a':{'type':'strnig'}}}",
     "/properties/a/type: unknown type \"strnig\""},
    {__LINE__, "property not a schema", "{'properties':{'a':5}}",
     "/properties/a: a schema must be an object or a boolean"},
    {__LINE__, "property name escaped in pointer", "{'properties':{'a/b~':{'type':1}}}",
     "/properties/a~1b~0/type: must be a type name or an array of type names"},
    {__LINE__, "negative minLength", "{'minLength':-1}",
     "/minLength: must be a non-negative integer"},
    {__LINE__, "fractional maxLength", "{'maxLength':1.5}",
     "/maxLength: must be a non-negative integer"},
    {__LINE__, "string minItems", "{'minItems':'3'}", "/minItems: must be a non-negative integer"},
    {__LINE__, "maxItems", "{'maxItems':null}", "/maxItems: must be a non-negative integer"},
    {__LINE__, "minProperties", "{'minProperties':true}",
     "/minProperties: must be a non-negative integer"},
    {__LINE__, "maxProperties", "{'maxProperties':-1e0}",
     "/maxProperties: must be a non-negative integer"},
    {__LINE__, "minimum", "{'minimum':'0'}", "/minimum: must be a number"},
    {__LINE__, "maximum", "{'maximum':[]}", "/maximum: must be a number"},
    {__LINE__, "exclusiveMinimum", "{'exclusiveMinimum':'x'}",
     "/exclusiveMinimum: must be a number or a boolean"},
    {__LINE__, "exclusiveMaximum", "{'exclusiveMaximum':null}",
     "/exclusiveMaximum: must be a number or a boolean"},
    {__LINE__, "enum empty", "{'enum':[]}", "/enum: must be a non-empty array"},
    {__LINE__, "enum not array", "{'enum':5}", "/enum: must be a non-empty array"},
    {__LINE__, "anyOf empty", "{'anyOf':[]}", "/anyOf: must be a non-empty array of schemas"},
    {__LINE__, "oneOf object", "{'oneOf':{}}", "/oneOf: must be a non-empty array of schemas"},
    {__LINE__, "allOf item", "{'allOf':[{},5]}",
     "/allOf/1: a schema must be an object or a boolean"},
    {__LINE__, "not", "{'not':[]}", "/not: a schema must be an object or a boolean"},
    {__LINE__, "items", "{'items':5}", "/items: a schema must be an object or a boolean"},
    {__LINE__, "items tuple", "{'items':[{},'x']}",
     "/items/1: a schema must be an object or a boolean"},
    {__LINE__, "prefixItems", "{'prefixItems':{}}", "/prefixItems: must be an array of schemas"},
    {__LINE__, "items array after prefixItems", "{'prefixItems':[],'items':[]}",
     "/items: a schema must be an object or a boolean"},
    {__LINE__, "additionalItems", "{'items':[],'additionalItems':1}",
     "/additionalItems: a schema must be an object or a boolean"},
    {__LINE__, "additionalProperties", "{'additionalProperties':'no'}",
     "/additionalProperties: a schema must be an object or a boolean"},
    {__LINE__, "nested additionalProperties",
     "{'properties':{'a':{'items':{'additionalProperties':{'minimum':'1'}}}}}",
     "/properties/a/items/additionalProperties/minimum: must be a number"},
    {__LINE__, "ref not string", "{'$ref':5}", "/$ref: must be a string"},
    {__LINE__, "ref not found", "{'$ref':'#/definitions/x'}",
     "/$ref: \"#/definitions/x\" not found"},
    {__LINE__, "ref wrong table", "{'definitions':{'x':{}},'$ref':'#/$defs/x'}",
     "/$ref: \"#/$defs/x\" not found"},
    {__LINE__, "ref remote", "{'$ref':'http://x/y'}",
     "/$ref: remote reference \"http://x/y\" is not supported (only references within the "
     "schema)"},
    {__LINE__, "ref relative to an $id", "{'$id':'http://x.test/a.json','$ref':'b.json'}",
     "/$ref: remote reference \"b.json\" is not supported (only references within the schema)"},
    {__LINE__, "ref to a missing anchor", "{'$ref':'#nope'}", "/$ref: \"#nope\" not found"},
    {__LINE__, "ref to a bad index", "{'items':[{}],'$ref':'#/items/01'}",
     "/$ref: \"#/items/01\" not found"},
    {__LINE__, "ref to a non-schema", "{'enum':[1],'$ref':'#/enum/0'}",
     "/enum/0: a schema must be an object or a boolean"},
    {__LINE__, "pattern not a string", "{'pattern':5}", "/pattern: must be a string"},
    {__LINE__, "pattern invalid", "{'pattern':'a('}",
     "/pattern: invalid regular expression: missing closing parenthesis at offset 2"},
    {__LINE__, "patternProperties invalid", "{'patternProperties':{'[':{}}}",
     "/patternProperties: invalid regular expression: missing terminating ] for character "
     "class at offset 1"},
    {__LINE__, "multipleOf zero", "{'multipleOf':0}", "/multipleOf: must be a number greater than 0"},
    {__LINE__, "multipleOf negative", "{'multipleOf':-2}",
     "/multipleOf: must be a number greater than 0"},
    {__LINE__, "uniqueItems", "{'uniqueItems':'yes'}", "/uniqueItems: must be a boolean"},
    {__LINE__, "dependencies item", "{'dependencies':{'a':[1]}}",
     "/dependencies/a/0: must be a string"},
    {__LINE__, "dependentRequired", "{'dependentRequired':{'a':{}}}",
     "/dependentRequired/a: must be an array of strings"},
    {__LINE__, "if", "{'if':5}", "/if: a schema must be an object or a boolean"},
    {__LINE__, "nested definitions", "{'properties':{'a':{'definitions':5}}}",
     "/properties/a/definitions: must be an object"},
    {__LINE__, "ref deep pointer to nothing", "{'definitions':{'a':{}},'$ref':'#/definitions/a/type'}",
     "/$ref: \"#/definitions/a/type\" not found"},
    {__LINE__, "ref bad escape", "{'definitions':{'a~2':{}},'$ref':'#/definitions/a~2'}",
     "/$ref: bad ~ escape in $ref"},
    {__LINE__, "definitions not object", "{'definitions':5}", "/definitions: must be an object"},
    {__LINE__, "bad definition", "{'$defs':{'a':{'type':'x'}}}",
     "/$defs/a/type: unknown type \"x\""},
    {__LINE__, "unused bad definition", "{'definitions':{'a':{'enum':[]}},'type':'object'}",
     "/definitions/a/enum: must be a non-empty array"},
    {__LINE__, "bad UTF-8", "{'enum':['\xff']}",
     "schema is not valid JSON: invalid UTF-8 in string at byte 10"},
};

START_TEST(test_bad_schema_table) {
  int failed = 0;
  for (size_t i = 0; i < sizeof bad_rows / sizeof bad_rows[0]; i++) {
    char why[256];
    memset(why, 'x', sizeof why);
    ts_schema *s = compile_q(bad_rows[i].schema, why, sizeof why);
    if (s != NULL || strcmp(why, bad_rows[i].why) != 0) {
      fprintf(stderr, "line %d (%s): got %s \"%s\", want NULL \"%s\"\n", bad_rows[i].line,
              bad_rows[i].label, s ? "a schema" : "NULL", why, bad_rows[i].why);
      failed++;
    }
    ts_schema_free(s);
  }
  ck_assert_msg(failed == 0, "%d rows failed (listed above)", failed);
}
END_TEST

START_TEST(test_good_schemas_compile) {
  static const char *const good[] = {
      "{'format':[],'x-anything':{'type':'nope'},'title':{'type':1}}",
      "{'pattern':'','patternProperties':{},'dependencies':{},'uniqueItems':false}",
      "{'$id':'http://x.test/s','$ref':'#','definitions':{'a':{'$id':'#a'}}}",
      "{'exclusiveMinimum':true}", /* draft 4 boolean without minimum: no effect */
      "{'minLength':0,'maxLength':1e2,'minItems':2.0,'maxItems':-0}",
      "{'enum':[{'a':{'b':[1,2,{}]}},[],null]}",
      "{'$defs':{},'definitions':{}}",
      "{'properties':{},'required':[],'items':[],'additionalItems':true}",
      "{'prefixItems':[],'items':true}",
      "{'maxLength':1e400}",
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    char why[256];
    ts_schema *s = compile_q(good[i], why, sizeof why);
    ck_assert_msg(s != NULL, "%s: %s", good[i], why);
    ck_assert_str_eq(why, "");
    ts_schema_free(s);
  }
}
END_TEST

START_TEST(test_has_property) {
  char why[256];
  ts_schema *s = compile_q("{'type':'object','properties':{'path':{'type':'string'},"
                           "'caf\\u00e9':{},'a/b':{}},'additionalProperties':true}",
                           why, sizeof why);
  ck_assert_ptr_nonnull(s);
  ck_assert(ts_schema_has_property(s, "path"));
  ck_assert(ts_schema_has_property(s, "caf\xc3\xa9"));
  ck_assert(ts_schema_has_property(s, "a/b"));
  ck_assert(!ts_schema_has_property(s, "pat"));
  ck_assert(!ts_schema_has_property(s, "paths"));
  ck_assert(!ts_schema_has_property(s, ""));
  ck_assert(!ts_schema_has_property(s, NULL));
  ts_schema_free(s);

  /* nested properties are not top-level ones; an open schema declares nothing */
  s = compile_q("{'properties':{'a':{'properties':{'b':{}}}}}", why, sizeof why);
  ck_assert(ts_schema_has_property(s, "a"));
  ck_assert(!ts_schema_has_property(s, "b"));
  ts_schema_free(s);
  s = compile_q("{}", why, sizeof why);
  ck_assert(!ts_schema_has_property(s, "a"));
  ts_schema_free(s);
  s = compile_q("true", why, sizeof why);
  ck_assert(!ts_schema_has_property(s, "a"));
  ts_schema_free(s);

  /* a root $ref (pydantic style) is followed */
  s = compile_q("{'$defs':{'Args':{'type':'object','properties':{'q':{}}}},"
                "'$ref':'#/$defs/Args'}",
                why, sizeof why);
  ck_assert_ptr_nonnull(s);
  ck_assert(ts_schema_has_property(s, "q"));
  ts_schema_free(s);
  s = compile_q("{'$ref':'#'}", why, sizeof why); /* a cycle ends */
  ck_assert(!ts_schema_has_property(s, "q"));
  ts_schema_free(s);
  ck_assert(!ts_schema_has_property(NULL, "q"));
}
END_TEST

/* n levels of [ ... ] around a 0. */
static char *nested_array(int n) {
  char *b = malloc((size_t)n * 2 + 2);
  ck_assert_ptr_nonnull(b);
  memset(b, '[', (size_t)n);
  b[n] = '0';
  memset(b + n + 1, ']', (size_t)n);
  b[2 * n + 1] = '\0';
  return b;
}

START_TEST(test_args_depth) {
  char why[256];
  ts_schema *s = compile_q("{'items':{'items':{'type':'array'}}}", why, sizeof why);
  ck_assert_ptr_nonnull(s);
  char *ok = nested_array(TS_SCHEMA_MAX_ARGS_DEPTH);
  ck_assert_int_eq(ts_schema_validate(s, ok, strlen(ok), why, sizeof why), TS_E_OK);
  char *deep = nested_array(TS_SCHEMA_MAX_ARGS_DEPTH + 1);
  ck_assert_int_eq(ts_schema_validate(s, deep, strlen(deep), why, sizeof why),
                   TS_E_ARGS_TOO_DEEP);
  ck_assert_str_eq(why, "arguments are nested deeper than 64 levels");
  free(deep);
  /* hostile nesting far beyond the limit: an error, not a crash */
  deep = nested_array(1000000);
  ck_assert_int_eq(ts_schema_validate(s, deep, strlen(deep), why, sizeof why),
                   TS_E_ARGS_TOO_DEEP);
  free(deep);
  /* an enum comparison walks as deep as the arguments go */
  ts_schema_free(s);
  s = compile_q("{'enum':[[[[0]]]]}", why, sizeof why);
  ck_assert_int_eq(ts_schema_validate(s, ok, strlen(ok), why, sizeof why), TS_E_SCHEMA_MISMATCH);
  ck_assert_str_eq(why, "(root): value not in enum");
  free(ok);
  ts_schema_free(s);
}
END_TEST

/* A schema nested n levels deep through properties: {"properties":{"a":...}} */
static char *nested_schema(int levels) {
  size_t cap = (size_t)levels * 24 + 16;
  char *b = malloc(cap);
  ck_assert_ptr_nonnull(b);
  size_t n = 0;
  for (int i = 0; i < levels; i++) n += (size_t)snprintf(b + n, cap - n, "{\"properties\":{\"a\":");
  n += (size_t)snprintf(b + n, cap - n, "{\"type\":\"string\"}");
  for (int i = 0; i < levels; i++) n += (size_t)snprintf(b + n, cap - n, "}}");
  return b;
}

static char *nested_args(int levels, const char *leaf) {
  size_t cap = (size_t)levels * 8 + strlen(leaf) + 1;
  char *b = malloc(cap);
  ck_assert_ptr_nonnull(b);
  size_t n = 0;
  for (int i = 0; i < levels; i++) n += (size_t)snprintf(b + n, cap - n, "{\"a\":");
  n += (size_t)snprintf(b + n, cap - n, "%s", leaf);
  for (int i = 0; i < levels; i++) b[n++] = '}';
  b[n] = '\0';
  return b;
}

START_TEST(test_schema_depth) {
  char why[256];
  /* 63 levels of objects fit in both limits (schema: 2 per level + the leaf) */
  char *text = nested_schema(63);
  ts_schema *s = compile_n(text, strlen(text), why, sizeof why);
  ck_assert_msg(s != NULL, "%s", why);
  char *args = nested_args(63, "1");
  ck_assert_int_eq(ts_schema_validate(s, args, strlen(args), why, sizeof why),
                   TS_E_SCHEMA_MISMATCH);
  ck_assert_uint_eq(strlen(why), 63 * 2 + strlen(": expected string, got number"));
  free(args);
  args = nested_args(63, "\"x\"");
  ck_assert_int_eq(ts_schema_validate(s, args, strlen(args), why, sizeof why), TS_E_OK);
  free(args);
  ts_schema_free(s);
  free(text);
  /* 64 levels: 129 levels of JSON */
  text = nested_schema(64);
  ck_assert_ptr_null(compile_n(text, strlen(text), why, sizeof why));
  ck_assert_str_eq(why, "schema is nested deeper than 128 levels");
  free(text);
  text = nested_array(100000);
  ck_assert_ptr_null(compile_n(text, strlen(text), why, sizeof why));
  ck_assert_str_eq(why, "schema is nested deeper than 128 levels");
  free(text);
}
END_TEST

/* definitions d0..d(n-1): each an anyOf of two refs to the next; the last a string.
 * A number fails every path: 2^n of them without a work limit. */
START_TEST(test_exponential_ref) {
  enum { N = 40 };
  char text[8192];
  size_t n = (size_t)snprintf(text, sizeof text, "{\"$defs\":{");
  for (int i = 0; i < N; i++)
    n += (size_t)snprintf(text + n, sizeof text - n,
                          "\"d%d\":{\"anyOf\":[{\"$ref\":\"#/$defs/d%d\"},{\"$ref\":\"#/$defs/d%d\"}]},",
                          i, i + 1, i + 1);
  n += (size_t)snprintf(text + n, sizeof text - n,
                        "\"d%d\":{\"type\":\"string\"}},\"$ref\":\"#/$defs/d0\"}", N);
  ck_assert_uint_lt(n, sizeof text);
  char why[256];
  ts_schema *s = compile_n(text, n, why, sizeof why);
  ck_assert_msg(s != NULL, "%s", why);
  ck_assert_int_eq(ts_schema_validate(s, "\"x\"", 3, why, sizeof why), TS_E_OK);
  ck_assert_int_eq(ts_schema_validate(s, "1", 1, why, sizeof why), TS_E_SCHEMA_LIMIT);
  ck_assert_str_eq(why, "(root): validation work limit exceeded");
  ts_schema_free(s);
}
END_TEST

START_TEST(test_why_buffer) {
  char why[256];
  ts_schema *s = compile_q("{'properties':{'path':{'type':'string'}}}", why, sizeof why);
  ck_assert_ptr_nonnull(s);
  /* cut to the capacity, always terminated */
  char small[8];
  memset(small, 'x', sizeof small);
  ck_assert_int_eq(ts_schema_validate(s, "{\"path\":1}", 10, small, sizeof small),
                   TS_E_SCHEMA_MISMATCH);
  ck_assert_str_eq(small, "/path: ");
  /* no buffer at all */
  ck_assert_int_eq(ts_schema_validate(s, "{\"path\":1}", 10, NULL, 0), TS_E_SCHEMA_MISMATCH);
  ck_assert_int_eq(ts_schema_validate(s, "{\"path\":\"x\"}", 12, NULL, 0), TS_E_OK);
  /* the text need not be NUL-terminated: only len bytes are read */
  ck_assert_int_eq(ts_schema_validate(s, "{\"path\":\"x\"}garbage", 12, why, sizeof why),
                   TS_E_OK);
  ck_assert_int_eq(ts_schema_validate(NULL, "{}", 2, why, sizeof why), TS_E_INVAL);
  /* NUL bytes: after the value, or inside a string */
  ck_assert_int_eq(ts_schema_validate(s, "{}\0{}", 5, why, sizeof why), TS_E_ARGS_BAD_JSON);
  ck_assert_str_eq(why, "arguments are not valid JSON: data after the top-level value at byte 2");
  ck_assert_int_eq(ts_schema_validate(s, "{\"path\":\"a\0b\"}", 14, why, sizeof why),
                   TS_E_ARGS_BAD_JSON);
  ck_assert_str_eq(why, "arguments are not valid JSON: raw control character in string at byte 10");
  ts_schema_free(s);
  ts_schema_free(NULL);
  s = compile_n("{\"type\":\"string\"}xyz", 17, NULL, 0);
  ck_assert_ptr_nonnull(s);
  ts_schema_free(s);
  ck_assert_ptr_null(compile_n("{\"type\":\"strnig\"}", 17, NULL, 0));
  /* the schema keeps its own copy of what it needs */
  char text[] = "{\"properties\":{\"k\":{\"enum\":[\"v\"]}},\"required\":[\"k\"]}";
  s = compile_n(text, strlen(text), why, sizeof why);
  memset(text, ' ', sizeof text - 1);
  ck_assert_int_eq(ts_schema_validate(s, "{\"k\":\"v\"}", 9, why, sizeof why), TS_E_OK);
  ck_assert_int_eq(ts_schema_validate(s, "{\"k\":\"w\"}", 9, why, sizeof why),
                   TS_E_SCHEMA_MISMATCH);
  ck_assert_str_eq(why, "/k: value not in enum");
  ck_assert(ts_schema_has_property(s, "k"));
  ts_schema_free(s);
}
END_TEST

static const char big_schema[] =
    "{'$defs':{'file':{'type':'object','properties':{'path':{'type':'string','minLength':1},"
    "'mode':{'enum':['r','w',{'x':[1,2]}]},'size':{'type':['integer','null'],'minimum':0}},"
    "'required':['path'],'additionalProperties':false}},"
    "'type':'object','properties':{'files':{'type':'array','items':{'$ref':'#/$defs/file'},"
    "'maxItems':10},'note':{'anyOf':[{'type':'string','maxLength':100},{'type':'null'}]},"
    "'const':{'const':{'a':[true,null]}},'t':{'prefixItems':[{'type':'string'}],'items':false},"
    "'o':{'oneOf':[{'type':'integer'},{'type':'string'}]},'n':{'not':{'type':'null'}},"
    "'all':{'allOf':[{'minimum':1},{'exclusiveMaximum':9}]},"
    "'p':{'type':'string','pattern':'^[a-z]+(-[a-z]+)*$'},'m':{'multipleOf':0.5},"
    "'u':{'uniqueItems':true,'contains':{'const':2}},"
    "'d':{'$id':'http://example.com/d','$ref':'#/definitions/e','definitions':{'e':{}}}},"
    "'patternProperties':{'^x-':{'type':'integer'}},'propertyNames':{'maxLength':8},"
    "'dependencies':{'p':['m'],'m':{'required':['p']}},"
    "'if':{'required':['note']},'then':{'required':['o']},"
    "'required':['files'],'additionalProperties':{'type':'boolean'}}";
static const char big_args[] =
    "{'files':[{'path':'a','mode':'r','size':1},{'path':'b','mode':{'x':[1,2]},'size':null}],"
    "'note':null,'const':{'a':[true,null]},'t':['x'],'o':1,'n':0,'all':5,'extra':true,"
    "'p':'ab-cd','m':2.5,'u':[1,2,[3]],'d':7,'x-a':1}";

/* Every allocation of compile and of validate fails in turn: TS_E_NOMEM with "out of
 * memory" (never "malformed schema", issue 11), never a crash; leaks show under the
 * sanitizer. PCRE2's allocations (patterns, match memory) are among them. */
START_TEST(test_alloc_failure) {
  char *schema = q(big_schema), *args = q(big_args);
  size_t slen = strlen(schema), alen = strlen(args);
  char why[256];
  uint64_t before = ts_test_alloc_count();
  ts_schema *s = NULL;
  int crc = ts_schema_compile(schema, slen, 0, &s, why, sizeof why);
  uint64_t compile_allocs = ts_test_alloc_count() - before;
  ck_assert_int_eq(crc, TS_E_OK);
  ck_assert_msg(s != NULL, "%s", why);
  ck_assert_int_eq(ts_schema_validate(s, args, alen, why, sizeof why), TS_E_OK);
  ts_schema_free(s);
  ck_assert_uint_gt(compile_allocs, 10);
  /* (no check assertion between the counters: check allocates for its own records) */
  for (long n = 1; n <= (long)compile_allocs + 1; n++) {
    s = NULL;
    ts_test_alloc_fail_after(n);
    int rc = ts_schema_compile(schema, slen, 0, &s, why, sizeof why);
    ts_test_alloc_fail_after(-1);
    if (n <= (long)compile_allocs) {
      ck_assert_msg(rc == TS_E_NOMEM && s == NULL,
                    "allocation %ld of %lu failed, yet compile returned %s", n,
                    (unsigned long)compile_allocs, ts_err_name(rc));
      ck_assert_str_eq(why, "out of memory");
    } else {
      ck_assert_int_eq(rc, TS_E_OK);
      ck_assert_int_eq(ts_schema_validate(s, args, alen, why, sizeof why), TS_E_OK);
      ts_schema_free(s);
    }
  }
  s = compile_n(schema, slen, why, sizeof why);
  ck_assert_ptr_nonnull(s);
  before = ts_test_alloc_count();
  int rc = ts_schema_validate(s, args, alen, why, sizeof why);
  uint64_t validate_allocs = ts_test_alloc_count() - before;
  ck_assert_int_eq(rc, TS_E_OK);
  /* the copy, the token array, the key scratch, and the pattern scratch (its struct,
   * PCRE2's match data, PCRE2's backtracking frames) */
  ck_assert_uint_ge(validate_allocs, 5);
  for (long n = 1; n <= (long)validate_allocs + 1; n++) {
    ts_test_alloc_fail_after(n);
    rc = ts_schema_validate(s, args, alen, why, sizeof why);
    ts_test_alloc_fail_after(-1);
    if (n <= (long)validate_allocs) {
      ck_assert_msg(rc == TS_E_NOMEM, "allocation %ld of %lu: %s", n,
                    (unsigned long)validate_allocs, ts_err_name(rc));
      ck_assert_str_eq(why, "out of memory");
    } else {
      ck_assert_int_eq(rc, TS_E_OK);
    }
  }
  ts_schema_free(s);
  free(schema);
  free(args);
}
END_TEST

/* Issue 11: out of memory while a tool's schema compiles is TS_E_NOMEM from
 * ts_registry_add, never "inval" with "malformed argument schema: out of memory". Every
 * allocation of the add fails in turn. */
START_TEST(test_registry_nomem) {
  char *schema = q(big_schema);
  ts_registry *r = ts_registry_new();
  ck_assert_ptr_nonnull(r);
  ts_tool_spec spec = {.name = "t", .args_schema = schema, .progress_arg = "note"};
  char why[256];
  uint64_t before = ts_test_alloc_count();
  int rc = ts_registry_add(r, &spec, why, sizeof why);
  uint64_t allocs = ts_test_alloc_count() - before;
  ck_assert_msg(rc == TS_E_OK, "%s", why);
  ts_registry_free(r);
  long bad = 0;
  for (long n = 1; n <= (long)allocs + 1; n++) {
    r = ts_registry_new();
    ck_assert_ptr_nonnull(r);
    why[0] = '\0';
    ts_test_alloc_fail_after(n);
    rc = ts_registry_add(r, &spec, why, sizeof why);
    ts_test_alloc_fail_after(-1);
    if (n <= (long)allocs ? rc != TS_E_NOMEM || strstr(why, "malformed") : rc != TS_E_OK) {
      fprintf(stderr, "allocation %ld of %lu: %s \"%s\"\n", n, (unsigned long)allocs,
              ts_err_name(rc), why);
      bad++;
    }
    ts_registry_free(r);
  }
  ck_assert_msg(bad == 0, "%ld allocation failures misreported (listed above)", bad);
  /* a malformed schema is still a definition error */
  r = ts_registry_new();
  spec.args_schema = "{\"type\":\"strnig\"}";
  spec.progress_arg = NULL;
  ck_assert_int_eq(ts_registry_add(r, &spec, why, sizeof why), TS_E_INVAL);
  ck_assert_str_eq(why, "tool \"t\": malformed argument schema: /type: unknown type \"strnig\"");
  ts_registry_free(r);
  free(schema);
}
END_TEST

/* A large, flat argument object: validation stays linear (no work limit hit). */
START_TEST(test_large_args) {
  enum { N = 20000 };
  char why[256];
  ts_schema *s = compile_q("{'type':'object','required':['k0','k19999'],"
                           "'additionalProperties':{'anyOf':[{'type':'integer'},"
                           "{'type':'string','maxLength':3},{'enum':[[1,2]]}]}}",
                           why, sizeof why);
  ck_assert_ptr_nonnull(s);
  size_t cap = (size_t)N * 24 + 16;
  char *a = malloc(cap);
  ck_assert_ptr_nonnull(a);
  for (int bad = 0; bad < 2; bad++) {
    size_t n = 0;
    a[n++] = '{';
    for (int i = 0; i < N; i++) {
      const char *val = i % 3 == 0 ? "1" : i % 3 == 1 ? "\"abc\"" : "[1,2]";
      if (bad && i == N - 1) val = "[2,1]"; /* the last one wrong */
      n += (size_t)snprintf(a + n, cap - n, "%s\"k%d\":%s", i ? "," : "", i, val);
    }
    a[n++] = '}';
    int rc = ts_schema_validate(s, a, n, why, sizeof why);
    if (!bad) {
      ck_assert_int_eq(rc, TS_E_OK);
    } else {
      ck_assert_int_eq(rc, TS_E_SCHEMA_MISMATCH);
      /* the one branch that admits arrays explains */
      ck_assert_str_eq(why, "/k19999: value not in enum");
    }
  }
  free(a);
  ts_schema_free(s);
}
END_TEST

int main(void) {
  Suite *s = suite_create("schema");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_validate_table);
  tcase_add_test(tc, test_bad_schema_table);
  tcase_add_test(tc, test_good_schemas_compile);
  tcase_add_test(tc, test_has_property);
  tcase_add_test(tc, test_args_depth);
  tcase_add_test(tc, test_schema_depth);
  tcase_add_test(tc, test_exponential_ref);
  tcase_add_test(tc, test_why_buffer);
  tcase_add_test(tc, test_alloc_failure);
  tcase_add_test(tc, test_registry_nomem);
  tcase_add_test(tc, test_large_args);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
