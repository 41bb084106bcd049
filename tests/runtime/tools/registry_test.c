/*
 * registry_test.c: the tool registry (runtime/tools/registry.h).
 *
 * Definition rows {__LINE__, label, name, schema, progress argument, want code, want
 * reason}: the definition-time errors the header lists (no name, reserved names,
 * malformed schema, a progress argument that is not a declared top-level property,
 * duplicates) and good definitions. Then what a registry keeps: order, lookup by
 * length, annotations byte for byte, validation through the compiled schema, execution
 * (a tool without an implementation, one that returns nothing), ownership of `user`
 * (moves to the registry only on success, released once), merging a --tools file into
 * C tools, results, the call queue's limit, and every allocation failing in turn.
 */
#include <check.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "tools/registry.h"
#include "support/runner.h"
#include "support/test_support.h"

typedef struct {
  int line;
  const char *label;
  const char *name, *schema, *progress;
  int rc;
  const char *why; /* a substring of the reason; NULL for success */
} row;

#define OBJ_AB "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{}}}"

static const row rows[] = {
    {__LINE__, "a name alone", "ls", NULL, NULL, TS_E_OK, NULL},
    {__LINE__, "a schema and its progress argument", "w", OBJ_AB, "a", TS_E_OK, NULL},
    {__LINE__, "a progress argument of any type", "w", OBJ_AB, "b", TS_E_OK, NULL},
    {__LINE__, "no name", NULL, NULL, NULL, TS_E_INVAL, "a tool needs a name"},
    {__LINE__, "an empty name", "", NULL, NULL, TS_E_INVAL, "a tool needs a name"},
    {__LINE__, "reserved: subagents", "subagents", NULL, NULL, TS_E_INVAL,
     "tool name \"subagents\" is reserved for subagent relationships"},
    {__LINE__, "reserved: subagent_create", "subagent_create", NULL, NULL, TS_E_INVAL, "reserved"},
    {__LINE__, "reserved: subagent_message", "subagent_message", NULL, NULL, TS_E_INVAL,
     "reserved"},
    {__LINE__, "a near-reserved name is fine", "subagents2", NULL, NULL, TS_E_OK, NULL},
    {__LINE__, "a schema that is not JSON", "t", "{\"type\":", NULL, TS_E_INVAL,
     "tool \"t\": malformed argument schema: "},
    {__LINE__, "a schema with a bad type", "t", "{\"type\":\"strin\"}", NULL, TS_E_INVAL,
     "malformed argument schema"},
    {__LINE__, "a progress argument not declared", "t", OBJ_AB, "c", TS_E_INVAL,
     "tool \"t\": progressArgument \"c\" is not a declared top-level property of its arguments"},
    {__LINE__, "a progress argument without a schema", "t", NULL, "a", TS_E_INVAL,
     "progressArgument \"a\" is not a declared top-level property"},
    {__LINE__, "a progress argument declared only deeper down", "t",
     "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"object\",\"properties\":{\"d\":{}}}}}",
     "d", TS_E_INVAL, "not a declared top-level property"},
};

START_TEST(test_rows) {
  const row *r = &rows[_i];
  ts_registry *reg = ts_registry_new();
  ck_assert_ptr_nonnull(reg);
  ts_tool_spec spec = {.name = r->name, .args_schema = r->schema, .progress_arg = r->progress};
  char why[512] = "";
  int rc = ts_registry_add(reg, &spec, why, sizeof why);
  ck_assert_msg(rc == r->rc, "line %d (%s): rc %d, want %d (%s)", r->line, r->label, rc, r->rc,
                why);
  if (r->why)
    ck_assert_msg(strstr(why, r->why), "line %d (%s): reason '%s' lacks '%s'", r->line, r->label,
                  why, r->why);
  ck_assert_uint_eq(ts_registry_count(reg), rc == TS_E_OK);
  if (rc == TS_E_OK) { /* a second add of the same name is a duplicate */
    rc = ts_registry_add(reg, &spec, why, sizeof why);
    ck_assert_int_eq(rc, TS_E_INVAL);
    ck_assert_msg(strstr(why, "duplicate tool name"), "line %d: %s", r->line, why);
    ck_assert_uint_eq(ts_registry_count(reg), 1);
  }
  ts_registry_free(reg);
}
END_TEST

/* ---- what a registry keeps ------------------------------------------------------- */

static int freed;
static void count_free(void *user) {
  (void)user;
  freed++;
}

static void echo(void *user, const ts_call_info *call, const char *args, size_t len,
                 ts_tool_result *out) {
  (void)user;
  (void)call;
  ts_tool_result_json(out, args, len);
}

static void silent(void *user, const ts_call_info *call, const char *args, size_t len,
                   ts_tool_result *out) {
  (void)user, (void)call, (void)args, (void)len, (void)out;
}

static void silent_error(void *user, const ts_call_info *call, const char *args, size_t len,
                         ts_tool_result *out) {
  (void)user, (void)call, (void)args, (void)len;
  out->is_error = 1;
}

/* tools-spec §7's tool_call_started hook: a tool's on_started gets the event's bytes and
 * its own user; a tool without one reports 0; a failing hook's error comes back. */
static int seen_hooks;
static char seen_json[256];
static int hook_ok(void *user, const char *json, size_t len, char *why, size_t cap) {
  (void)why, (void)cap;
  seen_hooks += *(int *)user;
  snprintf(seen_json, sizeof seen_json, "%.*s", (int)len, json);
  return 0;
}
static int hook_fails(void *user, const char *json, size_t len, char *why, size_t cap) {
  (void)user, (void)json, (void)len;
  snprintf(why, cap, "no");
  return TS_E_SANDBOX_ERROR;
}

START_TEST(test_started_hook) {
  ts_registry *r = ts_registry_new();
  ck_assert_ptr_nonnull(r);
  static int one = 1;
  ts_tool_spec a = {.name = "a", .on_started = hook_ok, .user = &one};
  ts_tool_spec b = {.name = "b", .on_started = hook_fails};
  ts_tool_spec c = {.name = "c"};
  char why[128] = "";
  ck_assert_int_eq(ts_registry_add(r, &a, why, sizeof why), TS_E_OK);
  ck_assert_int_eq(ts_registry_add(r, &b, why, sizeof why), TS_E_OK);
  ck_assert_int_eq(ts_registry_add(r, &c, why, sizeof why), TS_E_OK);
  const char *ev = "{\"type\":\"tool_call_started\",\"progress\":\"x\"}";
  ck_assert_int_eq(ts_tool_call_started(ts_registry_find(r, "a", 1), ev, strlen(ev), why, sizeof why), 1);
  ck_assert_int_eq(seen_hooks, 1);
  ck_assert_str_eq(seen_json, ev);
  ck_assert_int_eq(ts_tool_call_started(ts_registry_find(r, "b", 1), ev, strlen(ev), why, sizeof why),
                   TS_E_SANDBOX_ERROR);
  ck_assert_str_eq(why, "no");
  ck_assert_int_eq(ts_tool_call_started(ts_registry_find(r, "c", 1), ev, strlen(ev), why, sizeof why), 0);
  ck_assert_int_eq(ts_tool_call_started(NULL, ev, strlen(ev), why, sizeof why), 0);
  ts_registry_free(r);
}
END_TEST

START_TEST(test_keeps) {
  ts_registry *reg = ts_registry_new();
  char why[256];
  static const char annotations[] = "{ \"readOnlyHint\" : true,\"x\":[1,2] }";
  int user = 7;
  ts_tool_spec a = {.name = "alpha",
                    .description = "first",
                    .args_schema = OBJ_AB,
                    .progress_arg = "a",
                    .annotations = annotations,
                    .idempotent = 1,
                    .execute = echo,
                    .user = &user};
  ts_tool_spec b = {.name = "beta"};
  ck_assert_int_eq(ts_registry_add(reg, &a, why, sizeof why), TS_E_OK);
  ck_assert_int_eq(ts_registry_add(reg, &b, why, sizeof why), TS_E_OK);
  ck_assert_uint_eq(ts_registry_count(reg), 2);
  ck_assert_str_eq(ts_tool_name(ts_registry_at(reg, 0)), "alpha"); /* in order of adding */
  ck_assert_str_eq(ts_tool_name(ts_registry_at(reg, 1)), "beta");
  ck_assert_ptr_null(ts_registry_at(reg, 2));
  const ts_tool *t = ts_registry_find(reg, "alphabet", 5); /* by length */
  ck_assert_ptr_eq(t, ts_registry_at(reg, 0));
  ck_assert_ptr_null(ts_registry_find(reg, "alp", 3));
  ck_assert_ptr_null(ts_registry_find(reg, "Alpha", 5));
  ck_assert_str_eq(ts_tool_description(t), "first");
  ck_assert_str_eq(ts_tool_description(ts_registry_at(reg, 1)), ""); /* none given */
  ck_assert_str_eq(ts_tool_args_schema(t), OBJ_AB);
  ck_assert_ptr_null(ts_tool_args_schema(ts_registry_at(reg, 1)));
  ck_assert_str_eq(ts_tool_progress_arg(t), "a");
  ck_assert_str_eq(ts_tool_annotations(t), annotations); /* byte for byte */
  ck_assert_ptr_null(ts_tool_annotations(ts_registry_at(reg, 1)));
  ck_assert_int_eq(ts_tool_idempotent(t), 1);
  ck_assert_int_eq(ts_tool_idempotent(ts_registry_at(reg, 1)), 0);
  ck_assert_ptr_eq(ts_tool_user_of(t, echo), &user);
  ck_assert_ptr_null(ts_tool_user_of(t, silent)); /* another module's tool */
  ck_assert_ptr_null(ts_tool_user_of(NULL, echo));

  /* the spec's strings were copied */
  char name[] = "gamma";
  ts_tool_spec g = {.name = name};
  ck_assert_int_eq(ts_registry_add(reg, &g, why, sizeof why), TS_E_OK);
  name[0] = 'X';
  ck_assert_ptr_nonnull(ts_registry_find(reg, "gamma", 5));
  ts_registry_free(reg);
  ts_registry_free(NULL);
}
END_TEST

START_TEST(test_validate_and_execute) {
  ts_registry *reg = ts_registry_new();
  char why[256];
  ts_tool_spec a = {.name = "a", .args_schema = "{\"type\":\"object\",\"required\":[\"p\"],"
                    "\"properties\":{\"p\":{\"type\":\"string\"}}}", .execute = echo};
  ts_tool_spec n = {.name = "none"};
  ts_tool_spec s = {.name = "silent", .execute = silent};
  ts_tool_spec e = {.name = "silent_error", .execute = silent_error};
  ck_assert_int_eq(ts_registry_add(reg, &a, why, sizeof why), TS_E_OK);
  ck_assert_int_eq(ts_registry_add(reg, &n, why, sizeof why), TS_E_OK);
  ck_assert_int_eq(ts_registry_add(reg, &s, why, sizeof why), TS_E_OK);
  ck_assert_int_eq(ts_registry_add(reg, &e, why, sizeof why), TS_E_OK);
  const ts_tool *ta = ts_registry_find(reg, "a", 1);
  ck_assert_int_eq(ts_tool_validate(ta, "{\"p\":\"x\"}", 9, why, sizeof why), TS_E_OK);
  ck_assert_int_lt(ts_tool_validate(ta, "{\"p\":1}", 7, why, sizeof why), 0);
  ck_assert_str_eq(why, "/p: expected string, got number");
  ck_assert_int_lt(ts_tool_validate(ta, "{}", 2, why, sizeof why), 0);
  /* without a schema any arguments pass */
  ck_assert_int_eq(ts_tool_validate(ts_registry_find(reg, "none", 4), "[1]", 3, why, sizeof why),
                   TS_E_OK);

  ts_call_info call = {.thread = "t", .tool = "a"};
  ts_tool_result r;
  ts_tool_execute(ta, &call, "{\"p\":\"x\"}", 9, &r);
  ck_assert_int_eq(r.is_error, 0);
  ck_assert_str_eq(r.text, "{\"p\":\"x\"}");
  ts_tool_result_free(&r);
  ts_tool_execute(ts_registry_find(reg, "none", 4), &call, "{}", 2, &r);
  ck_assert_int_eq(r.is_error, 1);
  ck_assert_str_eq(r.text, "tool \"none\" has no implementation in this runtime");
  ts_tool_result_free(&r);
  ts_tool_execute(ts_registry_find(reg, "silent", 6), &call, "{}", 2, &r);
  ck_assert_int_eq(r.is_error, 1);
  ck_assert_str_eq(r.text, "tool returned no result");
  ts_tool_result_free(&r);
  ts_tool_execute(ts_registry_find(reg, "silent_error", 12), &call, "{}", 2, &r);
  ck_assert_int_eq(r.is_error, 1);
  ck_assert_str_eq(r.text, "tool failed without a message");
  ts_tool_result_free(&r);
  ts_registry_free(reg);
}
END_TEST

/* Ownership of `user` moves only on success, and is released exactly once. */
START_TEST(test_user_ownership) {
  ts_registry *reg = ts_registry_new();
  char why[256];
  freed = 0;
  ts_tool_spec ok = {.name = "ok", .user = &freed, .user_free = count_free};
  ts_tool_spec bad = {.name = "bad", .progress_arg = "x", .user = &freed, .user_free = count_free};
  ts_tool_spec dup = {.name = "ok", .user = &freed, .user_free = count_free};
  ck_assert_int_eq(ts_registry_add(reg, &ok, why, sizeof why), TS_E_OK);
  ck_assert_int_eq(ts_registry_add(reg, &bad, why, sizeof why), TS_E_INVAL);
  ck_assert_int_eq(ts_registry_add(reg, &dup, why, sizeof why), TS_E_INVAL);
  ck_assert_int_eq(freed, 0); /* the failed adds left `user` with the caller */
  ts_registry_free(reg);
  ck_assert_int_eq(freed, 1);
}
END_TEST

/* A --tools file describes C tools (merged: the C implementation stays, the file's
 * description, schema and progress argument win) and adds tools of its own. */
START_TEST(test_add_defs) {
  ts_registry *reg = ts_registry_new();
  char why[256];
  freed = 0;
  ts_tool_spec c = {.name = "write_file", .description = "C", .execute = echo, .user = &freed,
                    .user_free = count_free, .idempotent = 1};
  ck_assert_int_eq(ts_registry_add(reg, &c, why, sizeof why), TS_E_OK);
  static const char file[] =
      "[{\"name\":\"write_file\",\"description\":\"from the file\",\"progressArgument\":\"a\","
      "\"args\":" OBJ_AB "},{\"name\":\"remote\",\"annotations\":{\"k\":1}}]";
  ts_tool_defs defs = {0};
  ck_assert_int_eq(ts_tool_defs_parse(&defs, file, strlen(file), why, sizeof why), TS_E_OK);
  ck_assert_int_eq(ts_registry_add_defs(reg, &defs, why, sizeof why), TS_E_OK);
  ck_assert_uint_eq(ts_registry_count(reg), 2);
  const ts_tool *w = ts_registry_at(reg, 0);
  ck_assert_str_eq(ts_tool_name(w), "write_file");
  ck_assert_str_eq(ts_tool_description(w), "from the file");
  ck_assert_str_eq(ts_tool_progress_arg(w), "a");
  ck_assert_ptr_eq(ts_tool_user_of(w, echo), &freed); /* still the C implementation */
  ck_assert_int_eq(ts_tool_idempotent(w), 1);
  ck_assert_int_eq(freed, 0); /* the replaced tool did not release the user it handed on */
  const ts_tool *r = ts_registry_at(reg, 1);
  ck_assert_str_eq(ts_tool_name(r), "remote");
  ck_assert_str_eq(ts_tool_annotations(r), "{\"k\":1}");
  ts_tool_result res;
  ts_call_info call = {.tool = "remote"};
  ts_tool_execute(r, &call, "{}", 2, &res);
  ck_assert_int_eq(res.is_error, 1); /* described, not implemented here */
  ts_tool_result_free(&res);
  /* a file whose definition is wrong for the registry: the reason names it */
  static const char bad[] = "[{\"name\":\"x\",\"progressArgument\":\"nope\"}]";
  ts_tool_defs bd = {0};
  ck_assert_int_eq(ts_tool_defs_parse(&bd, bad, strlen(bad), why, sizeof why), TS_E_OK);
  ck_assert_int_eq(ts_registry_add_defs(reg, &bd, why, sizeof why), TS_E_INVAL);
  ck_assert_msg(strstr(why, "tool \"x\": progressArgument \"nope\""), "%s", why);
  ts_tool_defs_free(&bd);
  ts_tool_defs_free(&defs);
  ts_registry_free(reg);
  ck_assert_int_eq(freed, 1);
}
END_TEST

START_TEST(test_results) {
  ts_tool_result r = {0};
  ts_tool_result_string(&r, "say \"hi\"\n", 9);
  ck_assert_int_eq(r.is_error, 0);
  ck_assert_str_eq(r.text, "\"say \\\"hi\\\"\\n\"");
  ck_assert_uint_eq(r.len, strlen(r.text));
  ts_tool_result_error(&r, "failed %d times", 3); /* replaces the previous result */
  ck_assert_int_eq(r.is_error, 1);
  ck_assert_str_eq(r.text, "failed 3 times");
  ts_tool_result_json(&r, "[1,2]", 5);
  ck_assert_int_eq(r.is_error, 0);
  ck_assert_str_eq(r.text, "[1,2]");
  char big[3000];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  ts_tool_result_error(&r, "%s", big); /* a long message is cut, not overflowed */
  ck_assert_uint_lt(r.len, sizeof big);
  ck_assert_uint_eq(strlen(r.text), r.len);
  ts_tool_result_free(&r);
  ck_assert_ptr_null(r.text);
}
END_TEST

START_TEST(test_call_queue) {
  ts_call_queue q = {0};
  q.limit = 3;
  ck_assert_int_eq(ts_call_queue_push(&q, "a", "{\"n\":1}", 7, "starter"), TS_E_OK);
  ck_assert_int_eq(ts_call_queue_push(&q, "b", "{}", 2, NULL), TS_E_OK);
  ck_assert_int_eq(ts_call_queue_push(&q, "c", "{}", 2, "x"), TS_E_OK);
  ck_assert_int_eq(ts_call_queue_push(&q, "d", "{}", 2, "x"), TS_E_LIMIT);
  ck_assert_uint_eq(q.n, 3);
  ck_assert_str_eq(q.v[0].tool, "a");
  ck_assert_str_eq(q.v[0].args, "{\"n\":1}");
  ck_assert_str_eq(q.v[0].queued_by, "starter");
  ck_assert_str_eq(q.v[1].queued_by, "");
  ts_call_queue_fini(&q);
  ck_assert_uint_eq(q.n, 0);
  ck_assert_uint_eq(q.limit, 3); /* the limit survives for reuse */
  ts_call_queue d = {0};        /* the default limit */
  for (int i = 0; i < TS_CALL_QUEUE_MAX; i++)
    ck_assert_int_eq(ts_call_queue_push(&d, "t", "{}", 2, "q"), TS_E_OK);
  ck_assert_int_eq(ts_call_queue_push(&d, "t", "{}", 2, "q"), TS_E_LIMIT);
  ts_call_queue_fini(&d);
}
END_TEST

/* Fail the n-th allocation of an add, for every n, schema compilation included: out of
 * memory is TS_E_NOMEM (never "malformed argument schema"), nothing leaks, and the
 * registry is as before. */
START_TEST(test_out_of_memory) {
  ts_tool_spec spec = {.name = "w", .description = "d", .args_schema = OBJ_AB,
                       .progress_arg = "a", .annotations = "{}"};
  for (long n = 1; n < 500; n++) {
    ts_registry *reg = ts_registry_new();
    ck_assert_ptr_nonnull(reg);
    char why[256] = "";
    ts_test_alloc_fail_after(n);
    int rc = ts_registry_add(reg, &spec, why, sizeof why);
    ts_test_alloc_fail_after(-1);
    ck_assert_msg(rc == TS_E_OK || rc == TS_E_NOMEM, "allocation %ld fails: rc %d (%s)", n, rc,
                  why);
    ck_assert_uint_eq(ts_registry_count(reg), rc == TS_E_OK);
    ts_registry_free(reg);
    if (rc == TS_E_OK) return;
  }
  ck_abort_msg("ts_registry_add never succeeded");
}
END_TEST

int main(void) {
  Suite *s = suite_create("registry");
  TCase *tc = tcase_create("core");
  tcase_add_loop_test(tc, test_rows, 0, (int)(sizeof rows / sizeof rows[0]));
  tcase_add_test(tc, test_keeps);
  tcase_add_test(tc, test_started_hook);
  tcase_add_test(tc, test_validate_and_execute);
  tcase_add_test(tc, test_user_ownership);
  tcase_add_test(tc, test_add_defs);
  tcase_add_test(tc, test_results);
  tcase_add_test(tc, test_call_queue);
  tcase_add_test(tc, test_out_of_memory);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
