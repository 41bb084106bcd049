/*
 * jsdefs_test.c: definePrompt({...}) and defineAgent({...}) in tool modules
 * (runtime/js/jstools.h, toolkit.js): definitions written as the specification's
 * documentation writes them, in TypeScript and in JavaScript, beside defineTool, load into
 * the same ts_defs a JSON file gives (z schemas as JSON Schema, definition objects where
 * names go, names from exports), and go through the same rules: a refused definition
 * names the module and the entry, and nothing of the module is registered or added.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "js/jstools.h"
#include "support/runner.h"
#include "support/tempdir.h"
#include "support/test_support.h"
#include "tools/definitions.h"
#include "tools/registry.h"

static char dir[256];

static const char *module(const char *name, const char *src) {
  if (!dir[0]) ts_test_tempdir(dir, sizeof dir, "jsdefs");
  const char *path = ts_test_at(dir, name);
  ts_test_put(path, src);
  return path;
}

static void remove_dir(void) {
  if (dir[0]) ts_test_rm_rf(dir);
}

/* A team in TypeScript, as the documentation writes it: a function tool, two prompts (one
 * used as a sub-prompt with a SubpromptConfig) and two agents, one a subagent of the other. */
static const char *const team_ts =
    "import { z } from 'zod';\n"
    "import { defineTool, definePrompt, defineAgent } from 'toolstream';\n"
    "\n"
    "interface Finding { title: string; url?: string }\n"
    "\n"
    "export const search = defineTool({\n"
    "  description: 'Search indexed docs',\n"
    "  args: z.object({ query: z.string() }),\n"
    "  execute: async (state, args: { query: string }) => {\n"
    "    const found: Finding[] = [];\n"
    "    return { status: 'success', result: found };\n"
    "  },\n"
    "});\n"
    "\n"
    "export const researcher = definePrompt({\n"
    "  toolDescription: 'Research a topic and report what was found',\n"
    "  prompt: 'You research topics thoroughly.',\n"
    "  model: 'gpt-4o-mini',\n"
    "  tools: [search],\n"
    "  requiredSchema: z.object({\n"
    "    topic: z.string().describe('what to research'),\n"
    "    files: z.array(z.string()).optional(),\n"
    "  }),\n"
    "  includeChat: false,\n"
    "});\n"
    "\n"
    "export const coordinator = definePrompt({\n"
    "  prompt: ['You coordinate a small team.', { type: 'env', name: 'TEAM' }],\n"
    "  tools: [\n"
    "    'search',\n"
    "    {\n"
    "      name: 'researcher',\n"
    "      includeToolCalls: false,\n"
    "      initUserMessageProperty: 'topic',\n"
    "      initAttachmentsProperty: 'files',\n"
    "    },\n"
    "  ],\n"
    "  variables: [{ name: 'TEAM', type: 'text', required: false, description: 'the team' }],\n"
    "  toolChoice: 'auto' as const,\n"
    "  parallelToolCalls: false,\n"
    "});\n"
    "\n"
    "export const worker = defineAgent({ sideA: { prompt: researcher } });\n"
    "\n"
    "export const lead = defineAgent({\n"
    "  name: 'lead',\n"
    "  description: 'Leads the team',\n"
    "  sideA: {\n"
    "    prompt: coordinator,\n"
    "    subagents: [{ agent: 'worker', name: 'research_worker', blocking: false }],\n"
    "  },\n"
    "  env: { TEAM: 'blue' },\n"
    "});\n";

START_TEST(test_typescript_team) {
  ts_registry *reg = ts_registry_new();
  ts_defs *d = ts_defs_new();
  ts_jstools_env env = {.no_environ = 1, .timeout_ms = 5000, .defs = d};
  char why[512] = "";
  const char *path = module("team.ts", team_ts);
  ck_assert_msg(ts_jstools_load(reg, path, &env, why, sizeof why) == TS_E_OK, "%s", why);
  ck_assert_ptr_nonnull(ts_registry_find(reg, "search", 6)); /* the tool, beside them */
  ck_assert_uint_eq(ts_defs_prompt_count(d), 2);
  ck_assert_uint_eq(ts_defs_agent_count(d), 2);
  ck_assert_msg(ts_defs_check(d, reg, why, sizeof why) == TS_E_OK, "%s", why);

  const ts_defs_prompt *r = ts_defs_find_prompt(d, "researcher"); /* named by its export */
  ck_assert_ptr_nonnull(r);
  ck_assert_str_eq(r->file, path);
  ck_assert_str_eq(r->tool_description, "Research a topic and report what was found");
  ck_assert_str_eq(r->model, "gpt-4o-mini");
  ck_assert_uint_eq(r->n_parts, 1);
  ck_assert_str_eq(r->parts[0].text, "You research topics thoroughly.");
  ck_assert_uint_eq(r->n_tools, 1);
  ck_assert_str_eq(r->tools[0].name, "search"); /* the tool object stands for its name */
  ck_assert_int_eq(r->tools[0].target, TS_DEFS_TARGET_FUNCTION);
  ck_assert_str_eq(r->required_schema,
                   "{\"type\":\"object\",\"properties\":{\"topic\":{\"type\":\"string\","
                   "\"description\":\"what to research\"},\"files\":{\"type\":\"array\","
                   "\"items\":{\"type\":\"string\"}}},\"required\":[\"topic\"]}");

  const ts_defs_prompt *c = ts_defs_find_prompt(d, "coordinator");
  ck_assert_ptr_nonnull(c);
  ck_assert_uint_eq(c->n_parts, 2);
  ck_assert_int_eq(c->parts[1].kind, TS_DEFS_PART_ENV);
  ck_assert_str_eq(c->parts[1].text, "TEAM");
  ck_assert_uint_eq(c->n_tools, 2);
  ck_assert_int_eq(c->tools[0].target, TS_DEFS_TARGET_FUNCTION);
  const ts_defs_tool_entry *e = &c->tools[1];
  ck_assert_int_eq(e->target, TS_DEFS_TARGET_PROMPT);
  ck_assert_int_eq(e->sub.include_text_response, 1);
  ck_assert_int_eq(e->sub.include_tool_calls, 0);
  ck_assert_int_eq(e->sub.include_errors, 1);
  ck_assert_str_eq(e->sub.init_user_message_property, "topic");
  ck_assert_str_eq(e->sub.init_attachments_property, "files");
  ck_assert_uint_eq(c->n_vars, 1);
  ck_assert_str_eq(c->vars[0].name, "TEAM");
  ck_assert_str_eq(c->vars[0].description, "the team");
  ck_assert_int_eq(c->parallel_tool_calls, 0);

  const ts_defs_agent *lead = ts_defs_find_agent(d, "lead");
  ck_assert_ptr_nonnull(lead);
  ck_assert_str_eq(lead->description, "Leads the team");
  ck_assert_str_eq(lead->side_a.prompt, "coordinator"); /* the prompt object: its name */
  ck_assert_uint_eq(lead->side_a.n_subagents, 1);
  ck_assert_str_eq(lead->side_a.subagents[0].agent, "worker");
  ck_assert_str_eq(lead->side_a.subagents[0].name, "research_worker");
  ck_assert_int_eq(lead->side_a.subagents[0].blocking, 0);
  ck_assert_str_eq(lead->env[0], "TEAM=blue");
  const ts_defs_agent *w = ts_defs_find_agent(d, "worker");
  ck_assert_ptr_nonnull(w);
  ck_assert_str_eq(w->side_a.prompt, "researcher");
  ts_defs_free(d);
  ts_registry_free(reg);
}
END_TEST

/* JavaScript: a lone unnamed default export takes the module's name; an exposed agent. */
START_TEST(test_javascript_default_export) {
  ts_registry *reg = ts_registry_new();
  ts_defs *d = ts_defs_new();
  ts_jstools_env env = {.no_environ = 1, .defs = d};
  char why[512] = "";
  ck_assert_msg(ts_jstools_load(reg,
                                module("summarizer.js",
                                       "module.exports = definePrompt({\n"
                                       "  toolDescription: 'Summarize a text',\n"
                                       "  prompt: [{type: 'text', text: 'Summarize.'}],\n"
                                       "  requiredSchema: {type: 'object', properties: {text: "
                                       "{type: 'string'}}},\n"
                                       "  includePastTools: true,\n"
                                       "});\n"),
                                &env, why, sizeof why) == TS_E_OK,
                "%s", why);
  ck_assert_msg(ts_jstools_load(reg,
                                module("desk.mjs",
                                       "defineAgent({name: 'desk', exposeAsTool: true,\n"
                                       "  toolDescription: 'Hand the user to the desk',\n"
                                       "  sideA: {prompt: 'summarizer'}});\n"
                                       "definePrompt({name: 'front', tools: ['desk', "
                                       "{name: 'summarizer', initUserMessageProperty: 'text'}]});\n"),
                                &env, why, sizeof why) == TS_E_OK,
                "%s", why);
  ck_assert_uint_eq(ts_registry_count(reg), 0); /* no tools: fine */
  ck_assert_msg(ts_defs_check(d, reg, why, sizeof why) == TS_E_OK, "%s", why);
  const ts_defs_prompt *s = ts_defs_find_prompt(d, "summarizer");
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq(s->include_past_tools, 1);
  ck_assert_str_eq(s->parts[0].text, "Summarize.");
  const ts_defs_prompt *f = ts_defs_find_prompt(d, "front");
  ck_assert_int_eq(f->tools[0].target, TS_DEFS_TARGET_AGENT);
  ck_assert_int_eq(f->tools[1].target, TS_DEFS_TARGET_PROMPT);
  ck_assert_int_eq(ts_defs_find_agent(d, "desk")->expose_as_tool, 1);
  ts_defs_free(d);
  ts_registry_free(reg);
}
END_TEST

/* A default export beside named ones (one file per definition is the documentation's
 * idiom, with its helper tools exported beside it): both count. Rows {line, file, source,
 * the tools registered in order, the prompt defined and its tools}. */
static const struct {
  int line;
  const char *file, *src;
  const char *tools, *prompt, *prompt_tools;
} default_rows[] = {
    {__LINE__, "researcher.ts",
     "import { z } from 'zod';\n"
     "import { defineTool, definePrompt } from '@standardagents/spec';\n"
     "export const search = defineTool({\n"
     "  description: 'Search indexed docs',\n"
     "  args: z.object({ query: z.string() }),\n"
     "  execute: async (state, args) => ({ status: 'success', result: '...' }),\n"
     "});\n"
     "export default definePrompt({\n"
     "  toolDescription: 'Research a topic',\n"
     "  prompt: [{ type: 'text', content: 'You research.' }],\n"
     "  model: 'gpt-4o-mini',\n"
     "  tools: [search],\n"
     "});\n",
     "search,", "researcher", "search,"},
    {__LINE__, "writer.mjs",
     "export default definePrompt({ toolDescription: 'Writes', prompt: 'Write.',\n"
     "  tools: ['draft', 'polish'] });\n"
     "export const draft = defineTool({ execute: async () => 'd' });\n"
     "export function helper() { return 1; }\n"
     "export const polish = defineTool({ execute: async () => 'p' });\n",
     "draft,polish,", "writer", "draft,polish,"},
    {__LINE__, "lookup.js",
     "export default defineTool({ description: 'Looks up', execute: async () => 'x' });\n"
     "export const helper = definePrompt({ toolDescription: 'Helps', tools: ['lookup'] });\n",
     "lookup,", "helper", "lookup,"},
};

START_TEST(test_default_export_beside_named_ones) {
  for (size_t i = 0; i < sizeof default_rows / sizeof default_rows[0]; i++) {
    ts_registry *reg = ts_registry_new();
    ts_defs *d = ts_defs_new();
    ts_jstools_env env = {.no_environ = 1, .defs = d};
    char why[512] = "", got[256] = "";
    ck_assert_msg(ts_jstools_load(reg, module(default_rows[i].file, default_rows[i].src), &env,
                                  why, sizeof why) == TS_E_OK &&
                      ts_defs_check(d, reg, why, sizeof why) == TS_E_OK,
                  "line %d: %s", default_rows[i].line, why);
    for (size_t k = 0; k < ts_registry_count(reg); k++)
      snprintf(got + strlen(got), sizeof got - strlen(got), "%s,",
               ts_tool_name(ts_registry_at(reg, k)));
    ck_assert_msg(!strcmp(got, default_rows[i].tools), "line %d: tools %s", default_rows[i].line,
                  got);
    const ts_defs_prompt *p = ts_defs_find_prompt(d, default_rows[i].prompt);
    ck_assert_msg(p != NULL, "line %d: no prompt %s", default_rows[i].line, default_rows[i].prompt);
    got[0] = '\0';
    for (size_t k = 0; k < p->n_tools; k++)
      snprintf(got + strlen(got), sizeof got - strlen(got), "%s,", p->tools[k].name);
    ck_assert_msg(!strcmp(got, default_rows[i].prompt_tools), "line %d: prompt tools %s",
                  default_rows[i].line, got);
    ts_defs_free(d);
    ts_registry_free(reg);
  }
}
END_TEST

typedef struct {
  int line;
  const char *label;
  const char *file, *src;
  int rc;
  const char *why; /* a substring of the reason */
} bad_row;

static const bad_row bad[] = {
    {__LINE__, "a subagent key in a prompt's tools entry", "p1.ts",
     "definePrompt({name: 'boss', tools: [{name: 'helper', agent: 'helper', blocking: false}]});\n"
     "defineTool({name: 'helper', execute: async () => ({status: 'success', result: 1})});\n",
     TS_E_INVAL, "p1.ts: prompt \"boss\": tools entry \"helper\" configures a subagent relationship"},
    {__LINE__, "an unknown key", "p2.js", "definePrompt({name: 'a', tool: ['x']});", TS_E_INVAL,
     "p2.js: prompt \"a\": unknown key \"tool\" in a prompt"},
    {__LINE__, "a reserved name", "p3.js", "defineAgent({name: 'subagent_create'});", TS_E_INVAL,
     "agent \"subagent_create\": the name is reserved"},
    {__LINE__, "a function in a prompt", "p4.js",
     "definePrompt({name: 'a', prompt: function () { return 'x'; }});", TS_E_SANDBOX_ERROR,
     "prompt \"a\": prompt: a function cannot be part of a definition"},
    {__LINE__, "two unnamed prompts", "p5.js", "definePrompt({prompt: 'a'}); definePrompt({prompt: 'b'});",
     TS_E_SANDBOX_ERROR, "2 prompts and agents without a name"},
    {__LINE__, "definePrompt of a non-object", "p6.js", "definePrompt('a');", TS_E_SANDBOX_ERROR,
     "definePrompt wants an object"},
    {__LINE__, "a bad requiredSchema", "p7.js",
     "definePrompt({name: 'a', requiredSchema: {type: 'strnig'}});", TS_E_INVAL,
     "prompt \"a\": \"requiredSchema\" is malformed"},
    {__LINE__, "a module that defines nothing", "p8.js", "var x = 1;", TS_E_SANDBOX_ERROR,
     "defines no tool, prompt or agent"},
};

START_TEST(test_refused) {
  const bad_row *b = &bad[_i];
  ts_registry *reg = ts_registry_new();
  ts_defs *d = ts_defs_new();
  ts_jstools_env env = {.no_environ = 1, .defs = d};
  char why[512] = "";
  int rc = ts_jstools_load(reg, module(b->file, b->src), &env, why, sizeof why);
  ck_assert_msg(rc == b->rc, "line %d (%s): rc %d, want %d (%s)", b->line, b->label, rc, b->rc,
                why);
  ck_assert_msg(strstr(why, b->why), "line %d (%s): '%s' lacks '%s'", b->line, b->label, why,
                b->why);
  ck_assert_uint_eq(ts_registry_count(reg), 0); /* nothing of the module */
  ck_assert_uint_eq(ts_defs_prompt_count(d) + ts_defs_agent_count(d), 0);
  ts_defs_free(d);
  ts_registry_free(reg);
}
END_TEST

/* Without a ts_defs (tap), a module's prompts are not read; its tools load as before. */
START_TEST(test_no_defs) {
  ts_registry *reg = ts_registry_new();
  ts_jstools_env env = {.no_environ = 1};
  char why[512] = "";
  ck_assert_msg(ts_jstools_load(reg, module("team.ts", team_ts), &env, why, sizeof why) == TS_E_OK,
                "%s", why);
  ck_assert_uint_eq(ts_registry_count(reg), 1);
  ts_registry_free(reg);
}
END_TEST

int main(void) {
  Suite *s = suite_create("jsdefs");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_checked_fixture(tc, NULL, remove_dir);
  tcase_add_test(tc, test_typescript_team);
  tcase_add_test(tc, test_javascript_default_export);
  tcase_add_test(tc, test_default_export_beside_named_ones);
  tcase_add_loop_test(tc, test_refused, 0, (int)(sizeof bad / sizeof bad[0]));
  tcase_add_test(tc, test_no_defs);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
