/*
 * jstools_test.c: JavaScript tools (runtime/jstools.c over runtime/sandbox.c): the spec's
 * own examples (tools-spec §2, §7, §8) brought down to ES5, the z builder's exact JSON
 * Schema, annotations kept unchanged, every `uses` rule of §2.1 (supplied, empty,
 * omitted, qualified names, packed tools, a package missing a tool), variables (§3),
 * errors (a throw, an endless loop, a memory hog) as error results, and queued calls
 * running in order through the dispatcher with their results in the store.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "tools/dispatch.h"
#include "js/jstools.h"
#include "js/sandbox.h"
#include "store/store.h"
#include "support/runner.h"
#include "support/tempdir.h"
#include "support/test_support.h"
#include "tools/registry.h"

static char dir[256];

static const char *module(const char *name, const char *src) {
  if (!dir[0]) ts_test_tempdir(dir, sizeof dir, "jstools");
  const char *path = ts_test_at(dir, name);
  ts_test_put(path, src);
  return path;
}

/* After each test (in its own process): the modules it wrote go. */
static void remove_dir(void) {
  if (dir[0]) ts_test_rm_rf(dir);
}

/* Loads and calls get 20 s: a module's load and a tool's call run under the tool's limit,
 * and on two cores shared with a dozen jobs (under ASan) a load can take seconds of wall
 * time. The tests of the limit itself set a shorter one. */
static ts_jstools_env test_env = {NULL, 0, 1, 20000, 0, NULL};

static void load_ok(ts_registry *reg, const char *name, const char *src) {
  char why[512] = "";
  int rc = ts_jstools_load(reg, module(name, src), &test_env, why, sizeof why);
  ck_assert_msg(rc == TS_E_OK, "%s: %s", name, why);
}

/* Runs `tool` with `args`; returns "+TEXT" for success, "!TEXT" for an error (static). */
static const char *call(ts_registry *reg, const char *tool, const char *args) {
  static char out[4096];
  const ts_tool *t = ts_registry_find(reg, tool, strlen(tool));
  ck_assert_msg(t != NULL, "no tool %s", tool);
  ts_tool_result r;
  char why[256];
  if (ts_tool_validate(t, args, strlen(args), why, sizeof why) != TS_E_OK) {
    snprintf(out, sizeof out, "invalid: %s", why);
    return out;
  }
  ts_call_info ci = {.thread = "t", .turn = 1, .index = 0, .call_id = "c0", .tool = tool,
                     .cancel = NULL, .queue = NULL};
  ts_tool_execute(t, &ci, args, strlen(args), &r);
  snprintf(out, sizeof out, "%c%s", r.is_error ? '!' : '+', r.text ? r.text : "(null)");
  ts_tool_result_free(&r);
  return out;
}

static void echo_tool(void *user, const ts_call_info *c, const char *args, size_t len,
                      ts_tool_result *out) {
  (void)user, (void)c;
  ts_tool_result_json(out, args, len);
}

static ts_registry *registry_with_c_tools(void) {
  ts_registry *reg = ts_registry_new();
  char why[256];
  ts_tool_spec a = {.name = "echo", .execute = echo_tool};
  ts_tool_spec b = {.name = "other", .execute = echo_tool};
  ck_assert_int_eq(ts_registry_add(reg, &a, why, sizeof why), TS_E_OK);
  ck_assert_int_eq(ts_registry_add(reg, &b, why, sizeof why), TS_E_OK);
  return reg;
}

/* ---- the spec's examples, verbatim ------------------------------------------------------
 * tests/runtime/js/spec/ holds each example of tools-spec.txt exactly as the spec prints
 * it (async arrows, `as const`, TypeScript interfaces and type aliases). Definitions load
 * as tool modules and run; the type declarations run through runCode as TypeScript. */

static char *spec_file(const char *name, size_t *len) {
  char rel[128];
  snprintf(rel, sizeof rel, "tests/runtime/js/spec/%s", name);
  return ts_test_read_file(ts_test_path(rel), len);
}

START_TEST(test_spec_verbatim) {
  ts_registry *reg = ts_registry_new();
  size_t n;
  /* §2: an async execute awaiting state.env, with its declared variable */
  const char *vars[] = {"VECTOR_STORE_ID=vs_123"};
  ts_jstools_env env = {vars, 1, 1, 2000, 0, NULL};
  char why[512] = "";
  char *src = spec_file("s2_search_docs.ts", &n);
  ck_assert_msg(ts_jstools_load(reg, module("search_docs.ts", src), &env, why, sizeof why) == TS_E_OK, "%s", why);
  free(src);
  const ts_tool *t = ts_registry_find(reg, "search_docs", 11);
  ck_assert_ptr_nonnull(t);
  ck_assert_str_eq(ts_tool_args_schema(t),
                   "{\"type\":\"object\",\"properties\":{\"query\":{\"type\":\"string\"}},\"required\":[\"query\"]}");
  ck_assert_str_eq(call(reg, "search_docs", "{\"query\":\"q\"}"), "+\"...\"");
  /* §7 and §8 */
  src = spec_file("s7_write_file.ts", &n);
  load_ok(reg, "write_file.ts", src);
  free(src);
  t = ts_registry_find(reg, "write_file", 10);
  ck_assert_str_eq(ts_tool_progress_arg(t), "description");
  ck_assert_str_eq(call(reg, "write_file", "{\"description\":\"d\",\"path\":\"a\",\"content\":\"x\"}"), "+\"...\"");
  src = spec_file("s8_run_typescript.ts", &n);
  load_ok(reg, "run_typescript.ts", src);
  free(src);
  t = ts_registry_find(reg, "run_typescript", 14);
  ck_assert_str_eq(ts_tool_annotations(t),
                   "{\"agentbuilder\":{\"codemode\":{\"codeArgument\":\"code\",\"language\":\"typescript\"}}}");
  ck_assert_str_eq(call(reg, "run_typescript", "{\"code\":\"1\"}"), "+\"...\"");
  /* §2.1: the uses line as written, inside a definition */
  char *uses = spec_file("s2_1_uses.txt", &n);
  while (n && uses[n - 1] == '\n') uses[--n] = '\0';
  char mod[1024];
  snprintf(mod, sizeof mod,
           "export const validate_input = defineTool({ uses: [], execute: async () => ({ status: 'success', result: 'ok' }) });\n"
           "export const format_output = defineTool({ uses: [], execute: async () => ({ status: 'success', result: 'fmt' }) });\n"
           "export const entry = defineTool({\n%s,\n"
           "  execute: async (state) => ({ status: 'success', result: [(await state.invokeTool('validate_input', {})).result,"
           " (await state.invokeTool('other', {})).status] }) });\n", uses);
  free(uses);
  load_ok(reg, "pkg.ts", mod);
  ck_assert_str_eq(call(reg, "entry", "{}"), "+[\"ok\",\"error\"]");
  ts_registry_free(reg);
  /* §3, §4, §8: type declarations are valid TypeScript (and mean nothing at run time) */
  static const char *const decls[] = {"s3_variable_definition.ts", "s4_subprompt_config.ts", "s8_tool_annotations.ts"};
  for (size_t i = 0; i < sizeof decls / sizeof *decls; i++) {
    src = spec_file(decls[i], &n);
    ts_sandbox_opts o = {.language = TS_SANDBOX_LANG_TS};
    ts_sandbox_result r;
    int rc = ts_sandbox_run(src, n, &o, &r);
    ck_assert_msg(rc == 0 && !strcmp(r.value_json, "null"), "%s: %s", decls[i], r.error ? r.error : r.value_json);
    ts_sandbox_result_fini(&r);
    free(src);
  }
}
END_TEST

/* ---- state.runCode handles ------------------------------------------------------------
 * A handle is returned at once and can be awaited, read synchronously, or terminated;
 * two runs go on at the same time; console entries arrive live through onConsole. */

START_TEST(test_runcode_handles) {
  ts_registry *reg = ts_registry_new();
  load_ok(reg, "rc.ts",
          "export const both = defineTool({ uses: [], execute: async (state) => {\n"
          "  const code = (n) => `const s = Date.now(); await new Promise(r => setTimeout(r, 400)); [${n}, s, Date.now()]`;\n"
          "  const a = state.runCode(code(1), { timeoutMs: 15000 });\n"
          "  const b = state.runCode(code(2), { timeoutMs: 15000 });\n"
          "  const [ra, rb] = await Promise.all([a, b]);\n"
          "  const [x, y] = [ra.value, rb.value];\n"
          "  /* both ran at once: their intervals overlap (whatever the machine's load) */\n"
          "  return { status: 'success', result: { values: [x[0], y[0]], parallel: x[1] < y[2] && y[1] < x[2] } };\n"
          "} });\n"
          "export const stopper = defineTool({ uses: [], execute: async (state) => {\n"
          "  const seen = [];\n"
          "  const h = state.runCode('console.log(\"tick\"); new Array(1e8).join(\"x\").length',\n"
          "    { language: 'js', timeoutMs: 15000, memoryLimitBytes: 2e9, onConsole: (e) => seen.push(e) });\n"
          "  await new Promise(r => { const iv = setInterval(() => { if (seen.length) { clearInterval(iv); r(); } }, 5); });\n"
          "  h.terminate('enough');\n"
          "  const res = await h;\n"
          "  return { status: 'success', result: { status: res.status, error: res.error, seen, output: h.output } };\n"
          "} });\n"
          "export const sync = defineTool({ uses: [], execute: (state) => {\n"
          "  const h = state.runCode('input.n * 2', { input: { n: 21 }, language: 'ts' });\n"
          "  return { status: 'success', result: [h.status, h.value] };\n"
          "} });\n"
          "export const badlang = defineTool({ uses: [], execute: (state) => {\n"
          "  state.runCode('1', { language: 'python' }); return { status: 'success', result: 1 };\n"
          "} });\n");
  const char *r = call(reg, "both", "{}");
  ck_assert_msg(!strcmp(r, "+{\"values\":[1,2],\"parallel\":true}"), "%s", r);
  r = call(reg, "stopper", "{}");
  ck_assert_msg(!strcmp(r, "+{\"status\":\"terminated\",\"error\":\"terminated: enough\",\"seen\":[\"tick\"],"
                           "\"output\":[\"tick\"]}"), "%s", r);
  ck_assert_str_eq(call(reg, "sync", "{}"), "+[\"ok\",42]");
  r = call(reg, "badlang", "{}");
  ck_assert_msg(strstr(r, "!TypeError: runCode: language must be") == r, "%s", r);
  ts_registry_free(reg);
}
END_TEST

/* ---- a cancelled call (Ctrl-C in `run` sets the dispatcher's cancel flag) -------------
 * The flag stops the tool within the margin even inside one long native call, and the
 * call ends as an error result saying it was cancelled. */

static volatile int cancel_now;
static void *cancel_later(void *arg) {
  (void)arg;
  struct timespec ts = {0, 200 * 1000000L};
  nanosleep(&ts, NULL);
  cancel_now = 1;
  return NULL;
}

START_TEST(test_cancelled_call) {
  ts_registry *reg = ts_registry_new();
  ts_jstools_env env = {NULL, 0, 1, 20000, (size_t)2 << 30, NULL};
  char why[512] = "";
  ck_assert_int_eq(ts_jstools_load(reg, module("slow.js",
      "defineTool({ execute: async () => ({ status: 'success', result: new Array(1e8).join('x').length }) });"),
      &env, why, sizeof why), TS_E_OK);
  const ts_tool *t = ts_registry_find(reg, "slow", 4);
  cancel_now = 0;
  ts_call_info ci = {.thread = "t", .turn = 1, .index = 0, .call_id = "c0", .tool = "slow",
                     .cancel = &cancel_now, .queue = NULL};
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, cancel_later, NULL), 0);
  struct timespec a, b;
  struct rusage u0, u1;
  getrusage(RUSAGE_CHILDREN, &u0);
  clock_gettime(CLOCK_MONOTONIC, &a);
  ts_tool_result r;
  ts_tool_execute(t, &ci, "{}", 2, &r);
  clock_gettime(CLOCK_MONOTONIC, &b);
  getrusage(RUSAGE_CHILDREN, &u1);
  pthread_join(th, NULL);
  double ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
  ck_assert_msg(r.is_error && r.text && !strcmp(r.text, "cancelled: the call was cancelled"), "%s",
                r.text ? r.text : "(null)");
  /* Stopped inside the join: the tool's process used about the 200 ms before the flag in
   * CPU (the join alone takes seconds); the wall bound is only a backstop, since a loaded
   * machine can make the wait for a CPU take long. */
  double cpu = (double)(u1.ru_utime.tv_sec - u0.ru_utime.tv_sec + u1.ru_stime.tv_sec - u0.ru_stime.tv_sec) * 1e3 +
               (double)(u1.ru_utime.tv_usec - u0.ru_utime.tv_usec + u1.ru_stime.tv_usec - u0.ru_stime.tv_usec) / 1e3;
  ck_assert_msg(cpu < 200 + 1500, "used %.0f ms of CPU", cpu);
  ck_assert_msg(ms < 200 + 30000, "took %.0f ms", ms);
  ts_tool_result_free(&r);
  ts_registry_free(reg);
}
END_TEST

/* ---- the tool_call_started hook (§7) ---------------------------------------------------
 * The hook sees the event as it goes out, `progress` included: here it checks it and
 * throws otherwise, so its result shows what it saw. */

START_TEST(test_call_started_hook) {
  ts_registry *reg = registry_with_c_tools();
  load_ok(reg, "hooked.ts",
          "export const write = defineTool({ progressArgument: 'description', uses: [],\n"
          "  args: z.object({ description: z.string() }),\n"
          "  execute: async () => ({ status: 'success', result: 'ok' }),\n"
          "  onToolCallStarted: async (event) => {\n"
          "    await new Promise(r => setTimeout(r, 5));\n"
          "    if (event.progress !== 'writing index.html' || event.tool !== 'write') throw new Error('saw ' + JSON.stringify(event));\n"
          "  } });\n"
          "export const plain = defineTool({ uses: [], execute: async () => ({ status: 'success', result: 1 }) });\n"
          "export const spin = defineTool({ uses: [], execute: async () => ({ status: 'success', result: 1 }),\n"
          "  onToolCallStarted() { while (true) {} } });\n");
  load_ok(reg, "modhook.js",
          "function onToolCallStarted(event) { if (event.progress !== undefined) throw new Error('progress ' + event.progress); }\n"
          "defineTool({ execute: () => ({ status: 'success', result: 0 }) });\n");
  char why[512] = "";
  const char *ev = "{\"type\":\"tool_call_started\",\"tool\":\"write\",\"call_id\":\"c1\",\"progress\":\"writing index.html\"}";
  const ts_tool *t = ts_registry_find(reg, "write", 5);
  ck_assert_int_eq(ts_jstools_call_started(t, ev, strlen(ev), why, sizeof why), 1);
  const char *ev2 = "{\"type\":\"tool_call_started\",\"tool\":\"write\",\"call_id\":\"c2\",\"progress\":\"other\"}";
  ck_assert_int_lt(ts_jstools_call_started(t, ev2, strlen(ev2), why, sizeof why), 0);
  ck_assert_msg(strstr(why, "onToolCallStarted: Error: saw") && strstr(why, "other"), "%s", why);
  /* a module-level hook, and no progress (the event has none) */
  const char *ev3 = "{\"type\":\"tool_call_started\",\"tool\":\"modhook\",\"call_id\":\"c3\"}";
  ck_assert_int_eq(ts_jstools_call_started(ts_registry_find(reg, "modhook", 7), ev3, strlen(ev3), why, sizeof why), 1);
  /* no hook, a C tool: nothing to run */
  ck_assert_int_eq(ts_jstools_call_started(ts_registry_find(reg, "plain", 5), ev, strlen(ev), why, sizeof why), 0);
  ck_assert_int_eq(ts_jstools_call_started(ts_registry_find(reg, "echo", 4), ev, strlen(ev), why, sizeof why), 0);
  /* a hook that never ends is stopped at its limit */
  ck_assert_int_eq(ts_jstools_call_started(ts_registry_find(reg, "spin", 4), ev, strlen(ev), why, sizeof why),
                   TS_E_SANDBOX_TIMEOUT);
  ts_registry_free(reg);
}
END_TEST

/* ---- the spec's examples -------------------------------------------------------------- */

START_TEST(test_spec_examples) {
  ts_registry *reg = ts_registry_new();
  /* §7, with `async (state, args) =>` as an ES5 function */
  load_ok(reg, "write_file.js",
          "defineTool({\n"
          "  description: 'Write a file to the workspace',\n"
          "  progressArgument: 'description',\n"
          "  args: z.object({\n"
          "    description: z.string().describe('e.g. \"writing index.html\"'),\n"
          "    path: z.string(),\n"
          "    content: z.string(),\n"
          "  }),\n"
          "  execute: function (state, args) {\n"
          "    return { status: 'success', result: 'wrote ' + args.path };\n"
          "  },\n"
          "});\n");
  const ts_tool *t = ts_registry_find(reg, "write_file", 10);
  ck_assert_ptr_nonnull(t);
  ck_assert_str_eq(ts_tool_description(t), "Write a file to the workspace");
  ck_assert_str_eq(ts_tool_progress_arg(t), "description");
  ck_assert_str_eq(ts_tool_args_schema(t),
                   "{\"type\":\"object\",\"properties\":{\"description\":{\"type\":\"string\","
                   "\"description\":\"e.g. \\\"writing index.html\\\"\"},\"path\":{\"type\":"
                   "\"string\"},\"content\":{\"type\":\"string\"}},\"required\":[\"description\","
                   "\"path\",\"content\"]}");
  ck_assert_ptr_null(ts_tool_annotations(t));
  ck_assert_str_eq(call(reg, "write_file", "{\"description\":\"d\",\"path\":\"a.txt\",\"content\":\"x\"}"),
                   "+\"wrote a.txt\"");
  /* the schema is enforced like a C tool's */
  ck_assert_ptr_nonnull(strstr(call(reg, "write_file", "{\"path\":\"a\"}"), "invalid"));

  /* §8 */
  load_ok(reg, "run_ts.js",
          "defineTool({\n"
          "  description: 'Run a TypeScript module in a sandbox',\n"
          "  args: z.object({ code: z.string() }),\n"
          "  annotations: {\n"
          "    agentbuilder: { codemode: { codeArgument: 'code', language: 'typescript' } },\n"
          "  },\n"
          "  execute: function (state, args) {\n"
          "    return { status: 'success', result: state.runCode(args.code, {timeoutMs: 500}) };\n"
          "  },\n"
          "});\n");
  t = ts_registry_find(reg, "run_ts", 6);
  ck_assert_str_eq(ts_tool_annotations(t),
                   "{\"agentbuilder\":{\"codemode\":{\"codeArgument\":\"code\",\"language\":"
                   "\"typescript\"}}}");
  ck_assert_str_eq(call(reg, "run_ts", "{\"code\":\"console.log('hi'); 1 + 2\"}"),
                   "+{\"status\":\"ok\",\"value\":3,\"console\":[\"hi\"]}");
  const char *r = call(reg, "run_ts", "{\"code\":\"while (true) {}\"}");
  ck_assert_msg(strstr(r, "+{\"status\":\"timeout\"") == r, "%s", r);

  /* §2, with its variable */
  const char *vars[] = {"VECTOR_STORE_ID=vs_123"};
  ts_jstools_env env = {vars, 1, 1, 2000, 0, NULL};
  char why[512];
  ck_assert_int_eq(ts_jstools_load(reg, module("search_docs.js",
                                              "defineTool({\n"
                                              "  description: 'Search indexed docs',\n"
                                              "  args: z.object({ query: z.string() }),\n"
                                              "  execute: function (state, args) {\n"
                                              "    var vectorStoreId = state.env('VECTOR_STORE_ID');\n"
                                              "    return { status: 'success', result: vectorStoreId + ':' + args.query };\n"
                                              "  },\n"
                                              "  variables: [{ name: 'VECTOR_STORE_ID', type: 'text', required: true,\n"
                                              "                description: 'Vector store identifier' }],\n"
                                              "});\n"),
                                   &env, why, sizeof why),
                   TS_E_OK);
  ck_assert_str_eq(call(reg, "search_docs", "{\"query\":\"q\"}"), "+\"vs_123:q\"");
  ts_registry_free(reg);
}
END_TEST

START_TEST(test_z_builder_exact_schema) {
  ts_registry *reg = ts_registry_new();
  load_ok(reg, "zz.js",
          "defineTool({ args: z.object({\n"
          "  s: z.string().describe('a string'),\n"
          "  n: z.number().optional(),\n"
          "  b: z.boolean().optional().describe('flag'),\n"
          "  a: z.array(z.string()),\n"
          "  e: z.enum(['x', 'y']),\n"
          "  o: z.object({ k: z.number() }).optional(),\n"
          "}), execute: function () { return {status: 'success'}; } });\n");
  ck_assert_str_eq(
      ts_tool_args_schema(ts_registry_find(reg, "zz", 2)),
      "{\"type\":\"object\",\"properties\":{\"s\":{\"type\":\"string\",\"description\":\"a "
      "string\"},\"n\":{\"type\":\"number\"},\"b\":{\"type\":\"boolean\",\"description\":"
      "\"flag\"},\"a\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},\"e\":{\"type\":"
      "\"string\",\"enum\":[\"x\",\"y\"]},\"o\":{\"type\":\"object\",\"properties\":{\"k\":{"
      "\"type\":\"number\"}},\"required\":[\"k\"]}},\"required\":[\"s\",\"a\",\"e\"]}");
  /* the same schema written as JSON Schema gives the same text */
  load_ok(reg, "plain.js",
          "defineTool({ args: {type: 'object', properties: {q: {type: 'string'}}, required: ['q']},\n"
          "  execute: function () { return {status: 'success'}; } });\n");
  load_ok(reg, "zq.js",
          "defineTool({ args: z.object({ q: z.string() }),\n"
          "  execute: function () { return {status: 'success'}; } });\n");
  ck_assert_str_eq(ts_tool_args_schema(ts_registry_find(reg, "plain", 5)),
                   ts_tool_args_schema(ts_registry_find(reg, "zq", 2)));
  ck_assert_str_eq(call(reg, "zq", "{\"q\":\"x\"}"), "+null"); /* result undefined -> null */
  ts_registry_free(reg);
}
END_TEST

START_TEST(test_annotations_unchanged_and_inert) {
  ts_registry *reg = ts_registry_new();
  load_ok(reg, "ann.js",
          "var A = { ui: { icon: 'pen', weights: [1, 2.5, null] }, other: 'x' };\n"
          "var d = defineTool({ annotations: A, args: z.object({ v: z.number() }),\n"
          "  execute: function (state, args) {\n"
          "    return { status: 'success', result: { same: d.annotations === A, v: args.v } };\n"
          "  } });\n"
          "if (d.annotations !== A) throw new Error('annotations changed');\n");
  load_ok(reg, "noann.js",
          "defineTool({ args: z.object({ v: z.number() }),\n"
          "  execute: function (state, args) { return { status: 'success', result: { same: true, v: args.v } }; } });\n");
  ck_assert_str_eq(ts_tool_annotations(ts_registry_find(reg, "ann", 3)),
                   "{\"ui\":{\"icon\":\"pen\",\"weights\":[1,2.5,null]},\"other\":\"x\"}");
  char a[512];
  snprintf(a, sizeof a, "%s", call(reg, "ann", "{\"v\":1}"));
  ck_assert_str_eq(a, "+{\"same\":true,\"v\":1}");
  ck_assert_str_eq(call(reg, "noann", "{\"v\":1}"), a); /* behaves identically */
  ck_assert_str_eq(ts_tool_args_schema(ts_registry_find(reg, "ann", 3)),
                   ts_tool_args_schema(ts_registry_find(reg, "noann", 5)));
  ts_registry_free(reg);
}
END_TEST

/* ---- errors ----------------------------------------------------------------------------- */

/* Tool modules as models and developers write them (TypeScript, ES modules, async,
 * classes, async generators), each called once: the acceptance audit's. */
START_TEST(test_model_style_tools) {
  static const struct {
    int line;
    const char *file, *src, *tool, *args, *want;
  } rows[] = {
      {__LINE__, "search_docs.ts",
       "import { z } from 'zod';\n"
       "interface Hit { id: string; score: number }\n"
       "type Args = { query: string; limit?: number };\n"
       "const DOCS = [{ id: 'a', text: 'alpha beta' }, { id: 'b', text: 'beta gamma' }] as const;\n"
       "export default defineTool({\n"
       "  description: 'Search indexed docs',\n"
       "  args: z.object({ query: z.string().min(1), limit: z.number().int().positive().optional() }),\n"
       "  execute: async (state, { query, limit = 5 }: Args) => {\n"
       "    const hits: Hit[] = DOCS.filter(d => d.text.includes(query)).map((d, i) => ({ id: d.id, score: 1 / (i + 1) }));\n"
       "    return { status: 'success', result: hits.slice(0, limit) } satisfies { status: string; result: Hit[] };\n"
       "  },\n"
       "});\n",
       "search_docs", "{\"query\":\"beta\",\"limit\":1}", "+[{\"id\":\"a\",\"score\":1}]"},
      {__LINE__, "stats.ts",
       "enum Kind { Sum = 'sum', Mean = 'mean' }\n"
       "abstract class Agg { constructor(protected readonly xs: number[]) {} abstract value(): number }\n"
       "class Sum extends Agg { value() { return this.xs.reduce((a, b) => a + b, 0) } }\n"
       "class Mean extends Sum { override value() { return super.value() / this.xs.length } }\n"
       "export const stats = defineTool({\n"
       "  args: { type: 'object', properties: { xs: { type: 'array', items: { type: 'number' } }, kind: { type: 'string' } }, required: ['xs'] },\n"
       "  async execute(_state, args: { xs: number[]; kind?: Kind }) {\n"
       "    const agg = args.kind === Kind.Mean ? new Mean(args.xs) : new Sum(args.xs);\n"
       "    return { status: 'success', result: { kind: args.kind ?? Kind.Sum, value: agg.value(), max: Math.max(...args.xs), last: args.xs.at(-1) } };\n"
       "  },\n"
       "});\n",
       "stats", "{\"xs\":[1,2,6],\"kind\":\"mean\"}", "+{\"kind\":\"mean\",\"value\":3,\"max\":6,\"last\":6}"},
      {__LINE__, "pages.js",
       "async function* pages(n) { for (let i = 1; i <= n; i++) { await new Promise(r => setTimeout(r, 1)); yield { page: i, items: [i * 10] } } }\n"
       "module.exports = defineTool({\n"
       "  args: { type: 'object', properties: { n: { type: 'integer' } } },\n"
       "  execute: async (state, { n }) => {\n"
       "    const all = [];\n"
       "    try { for await (const p of pages(n)) { if (p.page > 2) break; all.push(...p.items) } }\n"
       "    finally { all.push('done') }\n"
       "    return { status: 'success', result: all };\n"
       "  },\n"
       "});\n",
       "pages", "{\"n\":5}", "+[10,20,\"done\"]"},
      {__LINE__, "fmt.js",
       "module.exports = defineTool({\n"
       "  execute: (state, args) => {\n"
       "    const { name = 'world', tags = [] } = args\n"
       "    const m = /^(\\d{4})-(\\d{2})/.exec('2024-05-01')\n"
       "    return {\n"
       "      status: 'success',\n"
       "      result: `Hello, ${name}! ${tags.map(t => `#${t}`).join(' ')} ${m[1]}/${m[2]} ${(1234.5).toLocaleString('en-US')}`,\n"
       "    }\n"
       "  },\n"
       "})\n",
       "fmt", "{\"name\":\"Ada\",\"tags\":[\"x\",\"y\"]}", "+\"Hello, Ada! #x #y 2024/05 1,234.5\""},
      {__LINE__, "fails.ts",
       "class NotFound extends Error { constructor(public key: string) { super(`no such key: ${key}`); this.name = 'NotFound' } }\n"
       "export default defineTool({ execute: async (s, a: { key: string }) => { await null; throw new NotFound(a.key) } });\n",
       "fails", "{\"key\":\"k1\"}", "!NotFound: no such key: k1"},
      {__LINE__, "nonerror.js",
       "module.exports = defineTool({ execute: async () => { throw { code: 42 } } });\n",
       "nonerror", "{}", "!{\"code\":42}"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
    ts_registry *reg = ts_registry_new();
    load_ok(reg, rows[i].file, rows[i].src);
    const char *got = call(reg, rows[i].tool, rows[i].args);
    ck_assert_msg(!strcmp(got, rows[i].want), "line %d (%s): got %s, want %s", rows[i].line, rows[i].file, got, rows[i].want);
    ts_registry_free(reg);
  }
}
END_TEST

START_TEST(test_errors_become_results) {
  ts_registry *reg = ts_registry_new();
  ts_jstools_env env = {NULL, 0, 1, 4000, (size_t)8 << 20, NULL}; /* the module loads under it too: room for a loaded machine */
  char why[512];
  ck_assert_int_eq(ts_jstools_load(reg, module("bad.js",
      "exports.thrower = defineTool({ uses: [], execute: function () { throw new Error('disk on fire'); } });\n"
      "exports.looper = defineTool({ uses: [], execute: function () { while (true) {} } });\n"
      "exports.catcher = defineTool({ uses: [], execute: function () { for (;;) { try { while (true) {} } catch (e) {} } } });\n"
      "exports.hog = defineTool({ uses: [], execute: function () { var s = 'x'; while (true) s = s + s; } });\n"
      "exports.refuser = defineTool({ uses: [], execute: function () { return { status: 'error', error: 'nope' }; } });\n"
      "exports.errobj = defineTool({ uses: [], execute: function () { return { status: 'error', error: new TypeError('typed') }; } });\n"
      "exports.bare = defineTool({ uses: [], execute: function () { return 42; } });\n"
      "exports.fine = defineTool({ uses: [], execute: function () { return { status: 'success', result: [1, '\\u00e9\\ud83d\\ude00'] }; } });\n"),
      &env, why, sizeof why), TS_E_OK);
  const char *r = call(reg, "thrower", "{}");
  ck_assert_msg(!strcmp(r, "!Error: disk on fire"), "%s", r);
  r = call(reg, "looper", "{}");
  ck_assert_msg(strstr(r, "!timed out") == r && strstr(r, "4000 ms"), "%s", r);
  r = call(reg, "catcher", "{}");
  ck_assert_msg(strstr(r, "!timed out") == r, "%s", r);
  r = call(reg, "hog", "{}");
  ck_assert_msg(strstr(r, "!out of memory") == r, "%s", r);
  ck_assert_str_eq(call(reg, "refuser", "{}"), "!nope");
  ck_assert_str_eq(call(reg, "errobj", "{}"), "!typed");
  ck_assert_ptr_nonnull(strstr(call(reg, "bare", "{}"), "!the tool returned number"));
  ck_assert_str_eq(call(reg, "fine", "{}"), "+[1,\"\xc3\xa9\xf0\x9f\x98\x80\"]");

  /* load-time errors leave the registry as it was */
  size_t n = ts_registry_count(reg);
  ck_assert_int_eq(ts_jstools_load(reg, module("syntax.js", "defineTool({\n  execute: (s) => });"),
                                   &env, why, sizeof why), TS_E_SANDBOX_ERROR);
  /* the user's line and column */
  ck_assert_msg(strstr(why, "SyntaxError") && strstr(why, "line 2, column 19"), "%s", why);
  ck_assert_int_eq(ts_jstools_load(reg, module("none.js", "var x = 1;"), &env, why, sizeof why),
                   TS_E_SANDBOX_ERROR);
  ck_assert_msg(strstr(why, "defines no tool"), "%s", why);
  ck_assert_int_eq(ts_jstools_load(reg, module("noexec.js", "defineTool({});"), &env, why, sizeof why),
                   TS_E_SANDBOX_ERROR);
  ck_assert_int_eq(ts_jstools_load(reg, module("loop.js", "while (true) {}"), &env, why, sizeof why),
                   TS_E_SANDBOX_TIMEOUT);
  ck_assert_int_eq(ts_jstools_load(reg, module("two.js",
                   "exports.a = defineTool({ execute: function () {} });\n"
                   "exports.b = defineTool({ progressArgument: 'nope', execute: function () {} });\n"),
                   &env, why, sizeof why), TS_E_INVAL);
  ck_assert_msg(strstr(why, "progressArgument"), "%s", why);
  ck_assert_int_eq(ts_jstools_load(reg, module("dup.js", "defineTool({ name: 'fine', execute: function () {} });"),
                                   &env, why, sizeof why), TS_E_INVAL);
  ck_assert_msg(strstr(why, "duplicate"), "%s", why);
  ck_assert_int_eq(ts_jstools_load(reg, "/nonexistent/x.js", &env, why, sizeof why), TS_E_IO);
  ck_assert_uint_eq(ts_registry_count(reg), n);
  ts_registry_free(reg);
}
END_TEST

/* ---- uses ------------------------------------------------------------------------------ */

/* A tool that tries invokeTool and queueTool on each name of args.targets and reports. */
#define PROBE(USES)                                                                          \
  "defineTool({ " USES " execute: function (state, args) {\n"                               \
  "  var out = [];\n"                                                                        \
  "  for (var i = 0; i < args.targets.length; i++) {\n"                                      \
  "    var r = state.invokeTool(args.targets[i], { x: i });\n"                               \
  "    var q; try { state.queueTool(args.targets[i], {}); q = 'queued'; } catch (e) { q = 'threw: ' + e.message; }\n" \
  "    out.push(args.targets[i] + ' ' + r.status + ' ' + (r.status === 'success' ? JSON.stringify(r.result) : r.error) + ' | ' + q);\n" \
  "  }\n"                                                                                    \
  "  return { status: 'success', result: out.join('; ') };\n"                                \
  "} });\n"

static const char *probe(ts_registry *reg, const char *tool, const char *targets,
                         ts_call_queue *q) {
  static char out[4096];
  char args[256];
  snprintf(args, sizeof args, "{\"targets\":%s}", targets);
  const ts_tool *t = ts_registry_find(reg, tool, strlen(tool));
  ck_assert_ptr_nonnull(t);
  ts_call_info ci = {.thread = "t", .turn = 1, .index = 0, .call_id = "c0", .tool = tool,
                     .cancel = NULL, .queue = q};
  ts_tool_result r;
  ts_tool_execute(t, &ci, args, strlen(args), &r);
  snprintf(out, sizeof out, "%c%s", r.is_error ? '!' : '+', r.text);
  ts_tool_result_free(&r);
  return out;
}

START_TEST(test_uses_rules) {
  ts_registry *reg = registry_with_c_tools();
  load_ok(reg, "supplied.js", PROBE("uses: ['echo'],"));
  load_ok(reg, "empty.js", PROBE("uses: [],"));
  load_ok(reg, "omitted.js", PROBE(""));
  ts_call_queue q;
  memset(&q, 0, sizeof q);
  /* supplied: the listed target runs; another is refused both ways */
  const char *r = probe(reg, "supplied", "[\"echo\",\"other\"]", &q);
  ck_assert_msg(!strcmp(r, "+\"echo success {\\\"x\\\":0} | queued; other error invokeTool: \\\"other\\\" "
                          "is not in the `uses` list of tool \\\"supplied\\\" | threw: queueTool: "
                          "\\\"other\\\" is not in the `uses` list of tool \\\"supplied\\\"\""),
                "%s", r);
  ck_assert_uint_eq(q.n, 1);
  ck_assert_str_eq(q.v[0].tool, "echo");
  ck_assert_str_eq(q.v[0].queued_by, "supplied");
  /* empty: nothing */
  r = probe(reg, "empty", "[\"echo\"]", &q);
  ck_assert_msg(strstr(r, "echo error invokeTool: \\\"echo\\\" is not in the `uses` list") &&
                    strstr(r, "threw: queueTool"), "%s", r);
  ck_assert_uint_eq(q.n, 1);
  /* omitted: anything, including itself */
  r = probe(reg, "omitted", "[\"echo\",\"other\"]", &q);
  ck_assert_msg(!strcmp(r, "+\"echo success {\\\"x\\\":0} | queued; other success {\\\"x\\\":1} | queued\""),
                "%s", r);
  ck_assert_uint_eq(q.n, 3);
  /* an unknown tool: error result / throw, even when unrestricted */
  r = probe(reg, "omitted", "[\"ghost\"]", &q);
  ck_assert_msg(strstr(r, "ghost error invokeTool: unknown tool \\\"ghost\\\" | threw: queueTool: unknown tool"),
                "%s", r);
  /* no queue (not run by the dispatcher): queueTool throws, saying so */
  r = probe(reg, "omitted", "[\"echo\"]", NULL);
  ck_assert_msg(strstr(r, "threw: queueTool: no queue here"), "%s", r);
  ts_call_queue_fini(&q);
  ts_registry_free(reg);
}
END_TEST

START_TEST(test_uses_packages_and_qualified_names) {
  ts_registry *reg = registry_with_c_tools();
  /* a package: members invoke each other by local and by qualified name (files/...) */
  load_ok(reg, "files.js",
          "function member(uses, body) { return defineTool({ uses: uses, args: z.object({ t: z.string().optional() }),\n"
          "  execute: body }); }\n"
          "module.exports = {\n"
          "  read: member([], function () { return { status: 'success', result: 'read' }; }),\n"
          "  write: member(['files/read', 'echo'], function (state, args) {\n"
          "    var r = state.invokeTool(args.t, {});\n"
          "    return { status: 'success', result: r.status + ':' + (r.result || r.error) };\n"
          "  }),\n"
          "  loose: defineTool({ execute: function (state) {\n"
          "    return { status: 'success', result: state.invokeTool('read', {}).error }; } }),\n"
          "};\n");
  ck_assert_ptr_nonnull(ts_registry_find(reg, "read", 4)); /* registered by local name */
  ck_assert_str_eq(call(reg, "write", "{\"t\":\"read\"}"), "+\"success:read\"");       /* local */
  ck_assert_str_eq(call(reg, "write", "{\"t\":\"files/read\"}"), "+\"success:read\""); /* qualified */
  ck_assert_str_eq(call(reg, "write", "{\"t\":\"echo\"}"), "+\"success:[object Object]\"");
  const char *r = call(reg, "write", "{\"t\":\"other\"}");
  ck_assert_msg(strstr(r, "error:invokeTool: \\\"other\\\" is not in the `uses` list"), "%s", r);
  r = call(reg, "write", "{\"t\":\"nope/read\"}"); /* a qualifier that is not the package */
  ck_assert_msg(strstr(r, "error:invokeTool: \\\"nope/read\\\" is not in the `uses`"), "%s", r);
  /* a packed tool that omits `uses` must not invoke anything */
  r = call(reg, "loose", "{}");
  ck_assert_msg(strstr(r, "packed tool \\\"loose\\\" declares no `uses`"), "%s", r);

  /* a package lacking a tool that a member uses: a load-time error, nothing registered */
  size_t n = ts_registry_count(reg);
  char why[512];
  ck_assert_int_eq(ts_jstools_load(reg, module("broken.js",
      "exports.a = defineTool({ uses: ['b', 'echo'], execute: function () {} });\n"),
      &test_env, why, sizeof why), TS_E_INVAL);
  ck_assert_msg(strstr(why, "package \"broken\" lacks tool \"b\", which its member \"a\" uses"), "%s", why);
  ck_assert_int_eq(ts_jstools_load(reg, module("broken2.js",
      "exports.a = defineTool({ uses: ['broken2/c'], execute: function () {} });\n"
      "exports.b = defineTool({ uses: [], execute: function () {} });\n"),
      &test_env, why, sizeof why), TS_E_INVAL);
  ck_assert_msg(strstr(why, "lacks tool \"broken2/c\""), "%s", why);
  ck_assert_uint_eq(ts_registry_count(reg), n);
  /* ...and one whose targets are all there (in it, or already registered) loads */
  load_ok(reg, "complete.js",
          "exports.c1 = defineTool({ uses: ['c2', 'complete/c2', 'files/read', 'echo'], execute: function () {} });\n"
          "exports.c2 = defineTool({ uses: [], execute: function () {} });\n");
  ts_registry_free(reg);
}
END_TEST

START_TEST(test_invoke_depth_is_bounded) {
  ts_registry *reg = ts_registry_new();
  load_ok(reg, "rec.js",
          "defineTool({ execute: function (state, args) {\n"
          "  var r = state.invokeTool('rec', { d: (args.d || 0) + 1 });\n"
          "  if (r.status === 'error') return { status: 'success', result: 'stopped at ' + args.d + ': ' + r.error };\n"
          "  return r;\n"
          "} });\n");
  const char *r = call(reg, "rec", "{}");
  ck_assert_msg(strstr(r, "+\"stopped at 8: invokeTool: \\\"rec\\\" would nest calls deeper than 8\""),
                "%s", r);
  ts_registry_free(reg);
}
END_TEST

/* ---- variables -------------------------------------------------------------------------- */

START_TEST(test_variables) {
  const char *src =
      "defineTool({ variables: [{ name: 'TS_JS_TOKEN', type: 'secret', required: true, description: 'API token' },\n"
      "                         { name: 'TS_JS_OPT', type: 'text', required: false, description: '' }],\n"
      "  execute: function (state) {\n"
      "    var u; try { state.env('HOME'); u = 'read'; } catch (e) { u = e.message; }\n"
      "    return { status: 'success', result: [state.env('TS_JS_TOKEN'), state.env('TS_JS_OPT') === undefined, u] };\n"
      "  } });\n";
  /* missing required: an error result naming it, before execute */
  unsetenv("TS_JS_TOKEN");
  unsetenv("TS_JS_OPT");
  ts_registry *reg = ts_registry_new();
  ts_jstools_env env = {NULL, 0, 0, 2000, 0, NULL};
  char why[512];
  ck_assert_int_eq(ts_jstools_load(reg, module("vars.js", src), &env, why, sizeof why), TS_E_OK);
  ck_assert_str_eq(call(reg, "vars", "{}"),
                   "!missing required variable TS_JS_TOKEN (API token): set TS_JS_TOKEN in the "
                   "environment or pass --var TS_JS_TOKEN=VALUE");
  /* from the environment */
  setenv("TS_JS_TOKEN", "from-env", 1);
  ck_assert_str_eq(call(reg, "vars", "{}"),
                   "+[\"from-env\",true,\"state.env: \\\"HOME\\\" is not declared in the variables of tool \\\"vars\\\"\"]");
  ts_registry_free(reg);
  /* --var wins over the environment; the last --var of a name wins */
  const char *vars[] = {"TS_JS_TOKEN=first", "TS_JS_TOKEN=from-flag"};
  ts_jstools_env env2 = {vars, 2, 0, 2000, 0, NULL};
  reg = ts_registry_new();
  ck_assert_int_eq(ts_jstools_load(reg, module("vars.js", src), &env2, why, sizeof why), TS_E_OK);
  ck_assert_str_eq(call(reg, "vars", "{}"),
                   "+[\"from-flag\",true,\"state.env: \\\"HOME\\\" is not declared in the variables of tool \\\"vars\\\"\"]");
  ts_registry_free(reg);
  unsetenv("TS_JS_TOKEN");
}
END_TEST

/* ---- the dispatcher: queued calls, errors persisted ------------------------------------- */

typedef struct {
  pthread_mutex_t mu;
  char log[8192];
} ev_log;

static void on_event(void *user, const ts_event *eb) {
  const ts_tap_event *ev = &eb->body;
  ev_log *l = user;
  pthread_mutex_lock(&l->mu);
  char line[256];
  snprintf(line, sizeof line, "%s#%u%s;", ev->type == TS_EVENT_TOOL_RESULT ? "res" : "run", ev->index,
           ev->type == TS_EVENT_TOOL_RESULT ? (eb->is_error ? "!" : "") : "");
  strncat(l->log, line, sizeof l->log - strlen(l->log) - 1);
  pthread_mutex_unlock(&l->mu);
}

typedef struct {
  char text[65536];
} msgs;

static int grab(void *user, const ts_store_message *m) {
  msgs *t = user;
  if (m->role != TS_STORE_TOOL) return 0;
  char line[512];
  snprintf(line, sizeof line, "%s%s %s=%s\n", m->is_error ? "!" : "", m->tool_call_id,
           m->tool_name ? m->tool_name : "", m->content);
  strncat(t->text, line, sizeof t->text - strlen(t->text) - 1);
  return 0;
}

static int count_unfinished(void *user, const ts_store_call *c) {
  (void)c;
  (*(int *)user)++;
  return 0;
}

static void feed(ts_dispatch *d, uint32_t index, const char *tool, const char *args) {
  char id[16];
  snprintf(id, sizeof id, "call_%u", index);
  ts_tap_event e;
  memset(&e, 0, sizeof e);
  e.is_call = 1;
  e.index = index;
  e.tool = (ts_view){tool, strlen(tool)};
  e.call_id = (ts_view){id, strlen(id)};
  e.type = TS_TAP_TOOL_CALL_STARTED;
  ts_dispatch_tap_event(d, &e);
  e.type = TS_TAP_TOOL_CALL_READY;
  e.arguments = (ts_view){args, strlen(args)};
  ts_dispatch_tap_event(d, &e);
}

/* A JavaScript tool's variable definitions reach the registry whole (type, required,
 * scoped, description), so the dispatcher and `env` see them as they see a C tool's; a
 * type other than text or secret, or a malformed name, is a definition error. */
START_TEST(test_variable_definitions_registered) {
  const char *src =
      "defineTool({ name: 'vdefs', description: 'd', args: z.object({}),\n"
      "  variables: [{ name: 'KEY', type: 'secret', required: true, scoped: true,\n"
      "                description: 'the key' }, { name: 'OPT' }],\n"
      "  execute: function (s, a) { return { status: 'success', result: 1 }; } });\n";
  ts_registry *reg = ts_registry_new();
  char why[512];
  ck_assert_msg(ts_jstools_load(reg, module("vdefs.js", src), NULL, why, sizeof why) == TS_E_OK,
                "%s", why);
  const ts_tool *t = ts_registry_find(reg, "vdefs", 5);
  size_t n;
  const ts_var_def *v = ts_tool_vars(t, &n);
  ck_assert_uint_eq(n, 2);
  ck_assert_str_eq(v[0].name, "KEY");
  ck_assert(v[0].type == TS_VAR_SECRET && v[0].required && v[0].scoped);
  ck_assert_str_eq(v[0].description, "the key");
  ck_assert(v[1].type == TS_VAR_TEXT && !v[1].required && !v[1].scoped);
  const char *bad =
      "defineTool({ name: 'vbad', description: 'd', args: z.object({}),\n"
      "  variables: [{ name: 'K', type: 'password' }],\n"
      "  execute: function (s, a) { return { status: 'success', result: 1 }; } });\n";
  ck_assert_int_ne(ts_jstools_load(reg, module("vbad.js", bad), NULL, why, sizeof why), TS_E_OK);
  ck_assert_msg(strstr(why, "type must be 'text' or 'secret'"), "%s", why);
  ck_assert_ptr_null(ts_registry_find(reg, "vbad", 4));
  const char *badname =
      "defineTool({ name: 'vname', description: 'd', args: z.object({}),\n"
      "  variables: [{ name: 'no spaces' }],\n"
      "  execute: function (s, a) { return { status: 'success', result: 1 }; } });\n";
  ck_assert_int_eq(ts_jstools_load(reg, module("vname.js", badname), NULL, why, sizeof why),
                   TS_E_INVAL);
  ck_assert_msg(strstr(why, "is not a variable name"), "%s", why);
  ts_registry_free(reg);
}
END_TEST

START_TEST(test_queue_order_and_errors_persisted) {
  char sdir[256];
  ts_test_tempdir(sdir, sizeof sdir, "jstools-store");
  ts_store *s;
  char why[512];
  ck_assert_msg(ts_store_open(sdir, &s, why, sizeof why) == TS_E_OK, "%s", why);
  ck_assert_int_eq(ts_store_thread_create(s, "t", NULL), TS_E_OK);
  ts_registry *reg = registry_with_c_tools();
  ts_jstools_env env = {NULL, 0, 1, 4000, (size_t)8 << 20, NULL}; /* the module loads under it too: room for a loaded machine */
  ck_assert_int_eq(ts_jstools_load(reg, module("flow.js",
      "exports.starter = defineTool({ uses: ['step', 'echo'], execute: function (state) {\n"
      "  state.queueTool('step', { n: 1 });\n"
      "  state.queueTool('step', { n: 2 });\n"
      "  state.queueTool('echo', { n: 'e' });\n"
      "  return { status: 'success', result: 'started' }; } });\n"
      "exports.step = defineTool({ uses: ['step'], args: z.object({ n: z.number() }), execute: function (state, args) {\n"
      "  if (args.n === 1) state.queueTool('step', { n: 3 });\n"
      "  return { status: 'success', result: 'step ' + args.n }; } });\n"
      "exports.thrower = defineTool({ uses: [], execute: function () { throw new Error('boom'); } });\n"
      "exports.looper = defineTool({ uses: [], execute: function () { while (true) {} } });\n"
      "exports.hog = defineTool({ uses: [], execute: function () { var s = 'x'; while (true) s = s + s; } });\n"
      "exports.selfq = defineTool({ uses: ['selfq'], execute: function (state) {\n"
      "  try { state.queueTool('selfq', {}); } catch (e) { return { status: 'error', error: e.message }; }\n"
      "  return { status: 'success', result: 'again' }; } });\n"),
      &env, why, sizeof why), TS_E_OK);
  ev_log l = {PTHREAD_MUTEX_INITIALIZER, ""};
  ts_dispatch_config cfg = {.store = s, .reg = reg, .thread = "t", .turn = 1,
                            .on_event = on_event, .user = &l, .pipelined = 1};
  ts_dispatch *d = NULL;
  ck_assert_int_eq(ts_dispatch_new(&d, &cfg), TS_E_OK);
  ck_assert_ptr_nonnull(d);
  feed(d, 0, "starter", "{}");
  feed(d, 1, "thrower", "{}");
  feed(d, 2, "looper", "{}");
  feed(d, 3, "hog", "{}");
  feed(d, 4, "echo", "{\"last\":true}");
  ck_assert_int_eq(ts_dispatch_finish(d), TS_E_OK);
  ts_dispatch_free(d);
  static msgs m;
  memset(&m, 0, sizeof m);
  ts_store_messages(s, "t", 0, grab, &m);
  /* the queue runs right after the call that filled it, first in first out (step 3,
   * queued by step 1, after echo); then the model's next call; errors are results */
  const char *want_prefix =
      "call_0 starter=\"started\"\n"
      "queued_1_1 step=\"step 1\"\n"
      "queued_1_2 step=\"step 2\"\n"
      "queued_1_3 echo={\"n\":\"e\"}\n"
      "queued_1_4 step=\"step 3\"\n"
      "!call_1 thrower=Error: boom\n"
      "!call_2 looper=timed out: the tool ran longer than its limit of 4000 ms\n"
      "!call_3 hog=out of memory";
  ck_assert_msg(!strncmp(m.text, want_prefix, strlen(want_prefix)), "%s", m.text);
  ck_assert_msg(strstr(m.text, "\ncall_4 echo={\"last\":true}\n"), "%s", m.text);
  ck_assert_str_eq(l.log,
                   "run#0;res#0;run#256;res#256;run#257;res#257;run#258;res#258;run#259;res#259;"
                   "run#1;res#1!;run#2;res#2!;run#3;res#3!;run#4;res#4;");
  int unfinished = 0;
  ck_assert_int_eq(ts_store_unfinished_calls(s, "t", count_unfinished, &unfinished), 0);

  /* a tool that queues itself forever stops at the turn's limit */
  memset(&l, 0, sizeof l);
  pthread_mutex_init(&l.mu, NULL);
  cfg.turn = 2;
  ck_assert_int_eq(ts_dispatch_new(&d, &cfg), TS_E_OK);
  feed(d, 0, "selfq", "{}");
  ck_assert_int_eq(ts_dispatch_finish(d), TS_E_OK);
  ts_dispatch_free(d);
  memset(&m, 0, sizeof m);
  ts_store_messages(s, "t", 0, grab, &m);
  ck_assert_msg(strstr(m.text, "!queued_2_256 selfq=queueTool: the turn's queue is full (256 calls)"),
                "%s", m.text + (strlen(m.text) > 600 ? strlen(m.text) - 600 : 0));
  ck_assert_ptr_null(strstr(m.text, "queued_2_257"));
  ck_assert_int_eq(ts_store_unfinished_calls(s, "t", count_unfinished, &unfinished), 0);
  ts_registry_free(reg);
  ts_store_close(s);
  ts_test_rm_rf(sdir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("jstools");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, NULL, remove_dir);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_spec_examples);
  tcase_add_test(tc, test_spec_verbatim);
  tcase_add_test(tc, test_runcode_handles);
  tcase_add_test(tc, test_call_started_hook);
  tcase_add_test(tc, test_cancelled_call);
  tcase_add_test(tc, test_z_builder_exact_schema);
  tcase_add_test(tc, test_annotations_unchanged_and_inert);
  tcase_add_test(tc, test_errors_become_results);
  tcase_add_test(tc, test_model_style_tools);
  tcase_add_test(tc, test_uses_rules);
  tcase_add_test(tc, test_uses_packages_and_qualified_names);
  tcase_add_test(tc, test_invoke_depth_is_bounded);
  tcase_add_test(tc, test_variables);
  tcase_add_test(tc, test_variable_definitions_registered);
  tcase_add_test(tc, test_queue_order_and_errors_persisted);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
