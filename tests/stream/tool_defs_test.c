/*
 * tool_defs_test.c: the `--tools FILE` shape (stream/tool_defs.h).
 *
 * Rows give a tools file and either the definitions wanted, rendered one per line as
 *   name|description|progress|args|annotations    ("-" for an absent field)
 * or the error code and a piece of the reason. Then: appending to definitions already
 * held, an error leaving them as they were, set_progress adding and replacing, find by
 * length, and failing every allocation in turn (no leak, no partial result).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/tool_defs.h"
#include "support/sb.h"
#include "support/test_support.h"

typedef struct {
  int line;
  const char *label;
  const char *in;
  int rc;
  const char *want; /* rc == 0: the rendering; else a substring of the reason */
} row;

static void render(sb *o, const ts_tool_defs *d) {
  for (size_t i = 0; i < d->n; i++) {
    const ts_tool_def *t = &d->v[i];
    sb_printf(o, "%s|%s|%s|%s|%s\n", t->name, t->description,
              t->progress_arg ? t->progress_arg : "-", t->args ? t->args : "-",
              t->annotations ? t->annotations : "-");
  }
  if (!o->p) sb_puts(o, "");
}

static const row rows[] = {
    {__LINE__, "an empty array", "[]", 0, ""},
    {__LINE__, "only a name", "[{\"name\":\"ls\"}]", 0, "ls||-|-|-\n"},
    {__LINE__, "every field", "[{\"name\":\"write_file\",\"description\":\"Writes\",\"progressArgument\":"
     "\"description\",\"args\":{\"type\":\"object\"},\"annotations\":{\"readOnlyHint\":false}}]", 0,
     "write_file|Writes|description|{\"type\":\"object\"}|{\"readOnlyHint\":false}\n"},
    {__LINE__, "args and annotations kept byte for byte", "[{\"name\":\"t\",\"args\": { \"type\" : "
     "\"object\" } ,\"annotations\":[1, \"\\u00e9\"]}]", 0,
     "t||-|{ \"type\" : \"object\" }|[1, \"\\u00e9\"]\n"},
    {__LINE__, "strings decoded", "[{\"name\":\"caf\\u00e9\",\"description\":\"a \\\"b\\\"\","
     "\"progressArgument\":\"d\\u00e9\"}]", 0, "café|a \"b\"|dé|-|-\n"},
    {__LINE__, "a null progressArgument is none", "[{\"name\":\"t\",\"progressArgument\":null}]", 0,
     "t||-|-|-\n"},
    {__LINE__, "a non-string description is empty", "[{\"name\":\"t\",\"description\":5}]", 0,
     "t||-|-|-\n"},
    {__LINE__, "unknown members are ignored", "[{\"name\":\"t\",\"x-extra\":{\"a\":1}}]", 0,
     "t||-|-|-\n"},
    {__LINE__, "several, in order", "[{\"name\":\"a\"},{\"name\":\"b\",\"description\":\"B\"}]", 0,
     "a||-|-|-\nb|B|-|-|-\n"},
    {__LINE__, "not JSON", "[{\"name\":", TS_E_JV_BAD_JSON, "not valid JSON"},
    {__LINE__, "empty text", "", TS_E_JV_BAD_JSON, "not valid JSON"},
    {__LINE__, "an object, not an array", "{\"name\":\"t\"}", TS_E_INVAL, "expected a JSON array"},
    {__LINE__, "an element that is not an object", "[{\"name\":\"a\"},3]", TS_E_INVAL,
     "tool definition 1 is not an object"},
    {__LINE__, "no name", "[{\"description\":\"x\"}]", TS_E_INVAL,
     "tool definition 0 has no string \"name\""},
    {__LINE__, "a name that is not a string", "[{\"name\":7}]", TS_E_INVAL, "no string \"name\""},
    {__LINE__, "an empty name", "[{\"name\":\"\"}]", TS_E_INVAL, "no string \"name\""},
    {__LINE__, "a duplicate name", "[{\"name\":\"a\"},{\"name\":\"a\"}]", TS_E_INVAL,
     "duplicate tool name \"a\""},
    {__LINE__, "a progressArgument that is not a string", "[{\"name\":\"t\",\"progressArgument\":1}]",
     TS_E_INVAL, "tool \"t\": progressArgument must be a string"},
    /* tools-spec §5: a subagent relationship is no tool configuration */
    {__LINE__, "a subagent relationship (agent, blocking)",
     "[{\"name\":\"researcher\",\"agent\":\"researcher\",\"blocking\":false}]", TS_E_INVAL,
     "tool \"researcher\" configures a subagent relationship (\"agent\"): relationships are "
     "declared on an agent's side"},
    {__LINE__, "a subagent relationship (subagents)",
     "[{\"name\":\"a\"},{\"name\":\"t\",\"subagents\":[{\"agent\":\"w\"}]}]", TS_E_INVAL,
     "tool \"t\" configures a subagent relationship (\"subagents\")"},
    {__LINE__, "a subagent relationship (hidden)", "[{\"name\":\"t\",\"hidden\":true}]",
     TS_E_INVAL, "(\"hidden\")"},
    {__LINE__, "a subagent relationship (relationship)",
     "[{\"name\":\"t\",\"relationship\":{\"agent\":\"w\"}}]", TS_E_INVAL, "(\"relationship\")"},
    {__LINE__, "a subagent relationship (subagent)", "[{\"name\":\"t\",\"subagent\":\"w\"}]",
     TS_E_INVAL, "(\"subagent\")"},
    /* the older SubagentToolConfig's keys */
    {__LINE__, "a subagent relationship (resumable)",
     "[{\"name\":\"t\",\"resumable\":{\"receives_messages\":\"side_a\"}}]", TS_E_INVAL,
     "(\"resumable\")"},
    {__LINE__, "a subagent relationship (immediate)", "[{\"name\":\"t\",\"immediate\":true}]",
     TS_E_INVAL, "(\"immediate\")"},
    {__LINE__, "a subagent relationship (initAgentNameProperty)",
     "[{\"name\":\"t\",\"initAgentNameProperty\":\"n\"}]", TS_E_INVAL,
     "(\"initAgentNameProperty\")"},
    {__LINE__, "a key merely mentioning agents is fine",
     "[{\"name\":\"t\",\"description\":\"asks an agent\",\"args\":{\"properties\":{\"agent\":{}}}}]",
     0, "t|asks an agent|-|{\"properties\":{\"agent\":{}}}|-\n"},
};

START_TEST(test_rows) {
  const row *r = &rows[_i];
  ts_tool_defs d = {0};
  char why[256] = "";
  int rc = ts_tool_defs_parse(&d, r->in, strlen(r->in), why, sizeof why);
  ck_assert_msg(rc == r->rc, "line %d (%s): rc %d, want %d (%s)", r->line, r->label, rc, r->rc,
                why);
  if (rc == 0) {
    sb o = {0};
    render(&o, &d);
    ck_assert_msg(!strcmp(sb_str(&o), r->want), "line %d (%s):\n--- got\n%s--- want\n%s", r->line,
                  r->label, sb_str(&o), r->want);
    sb_free(&o);
  } else {
    ck_assert_msg(strstr(why, r->want), "line %d (%s): reason '%s' lacks '%s'", r->line, r->label,
                  why, r->want);
    ck_assert_uint_eq(d.n, 0);
  }
  ts_tool_defs_free(&d);
}
END_TEST

/* A second file appends; a failing one leaves what was there; a name from the first
 * file repeated in the second is a duplicate. */
START_TEST(test_append_and_keep) {
  ts_tool_defs d = {0};
  char why[256];
  static const char a[] = "[{\"name\":\"a\",\"progressArgument\":\"p\"}]";
  static const char b[] = "[{\"name\":\"b\"}]";
  static const char bad[] = "[{\"name\":\"c\"},{\"name\":\"a\"}]";
  ck_assert_int_eq(ts_tool_defs_parse(&d, a, strlen(a), why, sizeof why), TS_E_OK);
  ck_assert_int_eq(ts_tool_defs_parse(&d, b, strlen(b), why, sizeof why), TS_E_OK);
  ck_assert_int_eq(ts_tool_defs_parse(&d, bad, strlen(bad), why, sizeof why), TS_E_INVAL);
  ck_assert_str_eq(why, "duplicate tool name \"a\"");
  sb o = {0};
  render(&o, &d);
  ck_assert_str_eq(sb_str(&o), "a||p|-|-\nb||-|-|-\n"); /* c was taken back */
  sb_free(&o);
  ck_assert_ptr_nonnull(ts_tool_defs_find(&d, "bxx", 1));
  ck_assert_ptr_null(ts_tool_defs_find(&d, "c", 1));
  ck_assert_ptr_null(ts_tool_defs_find(&d, "ab", 2));
  /* set_progress replaces, or adds a bare definition */
  ck_assert_int_eq(ts_tool_defs_set_progress(&d, "a", "q"), TS_E_OK);
  ck_assert_int_eq(ts_tool_defs_set_progress(&d, "new", "r"), TS_E_OK);
  render(&o, &d);
  ck_assert_str_eq(sb_str(&o), "a||q|-|-\nb||-|-|-\nnew||r|-|-\n");
  sb_free(&o);
  ts_tool_defs_free(&d);
  ck_assert_uint_eq(d.n, 0);
  ck_assert_ptr_null(d.v);
  ts_tool_defs_free(&d); /* twice is fine */
}
END_TEST

/* The text need not be NUL-terminated: only `len` bytes are read. */
START_TEST(test_length_bounded) {
  static const char text[] = "[{\"name\":\"a\"}]GARBAGE";
  ts_tool_defs d = {0};
  char why[64];
  ck_assert_int_eq(ts_tool_defs_parse(&d, text, 14, why, sizeof why), TS_E_OK);
  ck_assert_uint_eq(d.n, 1);
  ts_tool_defs_free(&d);
}
END_TEST

/* Fail the n-th allocation, for every n: TS_E_NOMEM with the definitions unchanged, or
 * success; never a leak (ASan) nor a half-made definition. */
START_TEST(test_out_of_memory) {
  static const char text[] = "[{\"name\":\"a\",\"description\":\"A\",\"progressArgument\":\"p\","
                             "\"args\":{},\"annotations\":{}},{\"name\":\"b\"}]";
  for (long n = 1; n < 200; n++) {
    ts_tool_defs d = {0};
    char why[128];
    ck_assert_int_eq(ts_tool_defs_set_progress(&d, "pre", "x"), TS_E_OK);
    ts_test_alloc_fail_after(n);
    int rc = ts_tool_defs_parse(&d, text, strlen(text), why, sizeof why);
    ts_test_alloc_fail_after(-1);
    ck_assert_msg(rc == TS_E_OK || rc == TS_E_NOMEM, "allocation %ld fails: rc %d", n, rc);
    sb o = {0};
    render(&o, &d);
    ck_assert_str_eq(sb_str(&o), rc ? "pre||x|-|-\n" : "pre||x|-|-\na|A|p|{}|{}\nb||-|-|-\n");
    sb_free(&o);
    ts_tool_defs_free(&d);
    if (rc == TS_E_OK) break; /* past the last allocation */
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("tool_defs");
  TCase *tc = tcase_create("core");
  tcase_add_loop_test(tc, test_rows, 0, (int)(sizeof rows / sizeof rows[0]));
  tcase_add_test(tc, test_append_and_keep);
  tcase_add_test(tc, test_length_bounded);
  tcase_add_test(tc, test_out_of_memory);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
