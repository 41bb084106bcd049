/*
 * defs_cli_test.c: `toolstream run --agent FILE|NAME --prompts DIR --prompt-name NAME`:
 * definitions loaded from JSON files and JS/TS modules, every rule checked before anything
 * runs, and one clear line with exit status 2 for a definition or usage error (1 for a
 * file that cannot be read). Rows {__LINE__, label, extra file, its text, arguments, exit
 * status, a substring of standard error}; "@" in the arguments is the test's directory.
 * Every row starts from the same good team: prompts/coordinator.json (calls the helper
 * prompt), prompts/helper.json, prompts/agents.json (lead, with worker as a subagent),
 * prompts/notes.ts (a prompt from definePrompt, and a tool), lead.json (one agent, for
 * --agent FILE) and a one-turn recorded session.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "support/proc.h"
#include "support/runner.h"
#include "support/tempdir.h"

#define BINARY TS_BINARY_DIR "/toolstream"

static char base[64];

static void remove_base(void) {
  if (base[0]) ts_test_rm_rf(base);
}

static void put(const char *name, const char *text) { ts_test_put(ts_test_at(base, name), text); }

static void team(void) {
  ts_test_tempdir(base, sizeof base, "defscli");
  mkdir(ts_test_at(base, "prompts"), 0755);
  mkdir(ts_test_at(base, "session"), 0755);
  mkdir(ts_test_at(base, "ws"), 0755);
  put("prompts/coordinator.json",
      "{\"name\":\"coordinator\",\"prompt\":\"You coordinate.\",\"tools\":[\"read_file\","
      "{\"name\":\"helper\",\"initUserMessageProperty\":\"task\"}]}");
  put("prompts/helper.json",
      "{\"name\":\"helper\",\"toolDescription\":\"Helps with one task\",\"prompt\":\"You help.\","
      "\"requiredSchema\":{\"type\":\"object\",\"properties\":{\"task\":{\"type\":\"string\"}},"
      "\"required\":[\"task\"]}}");
  put("prompts/agents.json",
      "[{\"kind\":\"agent\",\"name\":\"lead\",\"sideA\":{\"prompt\":\"coordinator\","
      "\"subagents\":[{\"agent\":\"worker\",\"blocking\":false}]}},"
      "{\"kind\":\"agent\",\"name\":\"worker\",\"sideA\":{\"prompt\":\"helper\"}}]");
  put("prompts/notes.ts",
      "import { definePrompt, defineTool, z } from 'toolstream';\n"
      "export const note_taker = definePrompt({ toolDescription: 'Takes notes',\n"
      "  prompt: 'You take notes.', tools: ['take_note'],\n"
      "  requiredSchema: z.object({ text: z.string() }) });\n"
      "export const take_note = defineTool({ description: 'Keeps a note', uses: [],\n"
      "  args: z.object({ text: z.string() }),\n"
      "  execute: async (state, args: { text: string }) => ({ status: 'success', result: args.text }) });\n");
  put("lead.json",
      "{\"name\":\"solo\",\"sideA\":{\"prompt\":\"coordinator\"}}");
  put("session/turn-1.sse",
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"done\"}}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
}

typedef struct {
  int line;
  const char *label;
  const char *file, *text; /* written before the run (NULL: none) */
  const char *args;        /* after the common ones; "@" is the test's directory */
  int status;
  const char *err; /* a substring of standard error; NULL: anything */
} row;

static const row rows[] = {
    {__LINE__, "an agent by name from --prompts", NULL, NULL, "--prompts @/prompts --agent lead", 0,
     NULL},
    {__LINE__, "--prompts alone: the team's top agent (worker is lead's subagent)", NULL, NULL,
     "--prompts @/prompts", 0, NULL},
    {__LINE__, "--prompts alone, two top agents", "prompts/solo.json",
     "{\"kind\":\"agent\",\"name\":\"solo\",\"sideA\":{\"prompt\":\"helper\"}}", "--prompts @/prompts", 2,
     "toolstream run: which agent drives the thread? --agent NAME (one of lead, worker and solo)"},
    {__LINE__, "an agent file beside --prompts", NULL, NULL, "--prompts @/prompts --agent @/lead.json",
     0, NULL},
    {__LINE__, "a prompt by name", NULL, NULL, "--prompts @/prompts --prompt-name coordinator", 0,
     NULL},
    {__LINE__, "a prompt defined by a TypeScript module", NULL, NULL,
     "--prompts @/prompts --prompt-name note_taker", 0, NULL},
    {__LINE__, "an unknown agent", NULL, NULL, "--prompts @/prompts --agent nobody", 2,
     "--agent nobody: no agent of that name (loaded: lead and worker)"},
    {__LINE__, "an unknown prompt", NULL, NULL, "--prompts @/prompts --prompt-name nobody", 2,
     "--prompt-name nobody: no prompt of that name (loaded: "},
    {__LINE__, "--agent and --prompt-name", NULL, NULL,
     "--prompts @/prompts --agent lead --prompt-name helper", 2,
     "--agent and --prompt-name both name what drives the thread"},
    {__LINE__, "two --agent", NULL, NULL, "--prompts @/prompts --agent lead --agent worker", 2,
     "one --agent only"},
    {__LINE__, "a missing directory", NULL, NULL, "--prompts @/nope --agent lead", 1,
     "toolstream run: --prompts "},
    {__LINE__, "a missing agent file", NULL, NULL, "--prompts @/prompts --agent @/none.json", 1,
     "--agent "},
    {__LINE__, "a team in one file: the agent no other uses", "team.ts",
     "import { definePrompt, defineAgent } from 'toolstream';\n"
     "export const boss_prompt = definePrompt({ prompt: 'You lead.' });\n"
     "export const helper_prompt = definePrompt({ prompt: 'You help.' });\n"
     "export const helper_agent = defineAgent({ sideA: { prompt: helper_prompt } });\n"
     "export const boss = defineAgent({ sideA: { prompt: boss_prompt, subagents: [{ agent: 'helper_agent' }] } });\n",
     "--agent @/team.ts", 0, NULL},
    {__LINE__, "a file of two unrelated agents, one named as the file", "b.json",
     "[{\"name\":\"a\",\"sideA\":{\"prompt\":\"helper\"}},{\"name\":\"b\",\"sideA\":{\"prompt\":"
     "\"helper\"}}]",
     "--prompts @/prompts --agent @/b.json", 0, NULL},
    {__LINE__, "an agent file with two agents", "two.json",
     "[{\"name\":\"a\",\"sideA\":{\"prompt\":\"helper\"}},{\"name\":\"b\",\"sideA\":{\"prompt\":"
     "\"helper\"}}]",
     "--prompts @/prompts --agent @/two.json", 2,
     "the file defines several agents, and more than one is not a subagent or a tool of another"},
    {__LINE__, "a definitions file that is not JSON", "prompts/bad.json", "{\"name\":", "--prompts @/prompts --agent lead",
     2, "/prompts/bad.json: not valid JSON"},
    {__LINE__, "a prompt tools entry that configures a subagent", "prompts/boss.json",
     "{\"name\":\"boss\",\"tools\":[{\"name\":\"worker\",\"agent\":\"worker\",\"blocking\":false}]}",
     "--prompts @/prompts --agent lead", 2,
     "/prompts/boss.json: prompt \"boss\": tools entry \"worker\" configures a subagent "
     "relationship (\"agent\")"},
    {__LINE__, "an unknown tool", "prompts/boss.json", "{\"name\":\"boss\",\"tools\":[\"serach\"]}",
     "--prompts @/prompts --agent lead", 2,
     "/prompts/boss.json: prompt \"boss\": tools entry \"serach\": no tool, prompt or exposed "
     "agent of that name"},
    {__LINE__, "a reserved name from a module", "prompts/zz.js",
     "definePrompt({ name: 'subagent_create', prompt: 'x' });", "--prompts @/prompts --agent lead",
     2, "/prompts/zz.js: prompt \"subagent_create\": the name is reserved"},
    {__LINE__, "exposeAsTool without toolDescription", "prompts/desk.json",
     "{\"kind\":\"agent\",\"name\":\"desk\",\"exposeAsTool\":true,\"sideA\":{\"prompt\":\"helper\"}}",
     "--prompts @/prompts --agent lead", 2, "agent \"desk\": exposeAsTool needs a toolDescription"},
    {__LINE__, "sub-prompts in a cycle", "prompts/loop.json",
     "[{\"name\":\"ping\",\"toolDescription\":\"P\",\"tools\":[\"pong\"]},"
     "{\"name\":\"pong\",\"toolDescription\":\"Q\",\"tools\":[\"ping\"]}]",
     "--prompts @/prompts --agent lead", 2, "cycle that can never end (\"ping\" calls \"pong\" calls \"ping\")"},
    {__LINE__, "init*Property naming no property", "prompts/coordinator.json",
     "{\"name\":\"coordinator\",\"tools\":[{\"name\":\"helper\",\"initUserMessageProperty\":\"goal\"}]}",
     "--prompts @/prompts --agent lead", 2,
     "initUserMessageProperty \"goal\" is not a top-level property of the requiredSchema of \"helper\""},
    {__LINE__, "a --tools file entry that configures a subagent", "tools.json",
     "[{\"name\":\"researcher\",\"subagents\":[{\"agent\":\"worker\"}]}]", "--tools @/tools.json", 2,
     "tools.json: tool \"researcher\" configures a subagent relationship (\"subagents\")"},
    {__LINE__, "a --tools module's prompt is checked too", "t.js",
     "definePrompt({ name: 'x', tools: ['nothing_here'] });", "--tools @/t.js", 2,
     "t.js: prompt \"x\": tools entry \"nothing_here\": no tool"},
    {__LINE__, "--prompts with no definitions", "empty/readme.txt", "nothing", "--prompts @/empty", 2,
     "--prompts: no prompt or agent defined there"},
    {__LINE__, "--prompts of prompts alone: the one no other uses (the other its sub-prompt)",
     "pair/p.json",
     "[{\"name\":\"coordinator\",\"prompt\":\"x\",\"tools\":[\"researcher\"]},"
     "{\"name\":\"researcher\",\"toolDescription\":\"r\",\"prompt\":[{\"type\":\"include\","
     "\"prompt\":\"tone\"}]},{\"name\":\"tone\",\"prompt\":\"Be kind.\"}]",
     "--prompts @/pair", 0, NULL},
    {__LINE__, "--prompts of two unrelated prompts", "pair/p.json",
     "[{\"name\":\"a\",\"prompt\":\"x\"},{\"name\":\"b\",\"prompt\":\"y\"}]",
     "--prompts @/pair", 2,
     "toolstream run: which prompt drives the thread? --prompt-name NAME (one of a and b)"},
};

START_TEST(test_rows) {
  const row *r = &rows[_i];
  team();
  if (r->file) {
    const char *slash = strchr(r->file, '/');
    if (slash) { /* a directory of its own (empty/, pair/): made when missing */
      char sub[64];
      snprintf(sub, sizeof sub, "%.*s", (int)(slash - r->file), r->file);
      mkdir(ts_test_at(base, sub), 0755);
    }
    put(r->file, r->text);
  }
  const char *argv[64] = {"toolstream", "run", "--model-replay", NULL, "--workspace", NULL,
                          "--data-dir", NULL, "--rate", "100000", "--json", "--thread", "d1"};
  char session[128], ws[128], data[128];
  snprintf(session, sizeof session, "%s/session", base);
  snprintf(ws, sizeof ws, "%s/ws", base);
  snprintf(data, sizeof data, "%s/data", base);
  argv[3] = session, argv[5] = ws, argv[7] = data;
  int n = 13;
  static char words[4096];
  char *w = words;
  for (const char *a = r->args; *a;) { /* split on spaces, "@" -> base */
    while (*a == ' ') a++;
    if (!*a) break;
    argv[n++] = w;
    for (; *a && *a != ' '; a++) {
      if (*a == '@') w += sprintf(w, "%s", base);
      else *w++ = *a;
    }
    *w++ = '\0';
  }
  argv[n++] = "hello";
  argv[n] = NULL;
  result res = run_bin(BINARY, argv, NULL, 0);
  ck_assert_msg(res.status == r->status, "line %d (%s): exit %d, want %d: %s", r->line, r->label,
                res.status, r->status, sb_str(&res.err));
  if (r->err)
    ck_assert_msg(strstr(sb_str(&res.err), r->err), "line %d (%s): stderr '%s' lacks '%s'", r->line,
                  r->label, sb_str(&res.err), r->err);
  if (r->status) {
    /* one line, and nothing ran */
    const char *e = sb_str(&res.err);
    const char *nl = strchr(e, '\n');
    ck_assert_msg(nl && !nl[1], "line %d: not one line: '%s'", r->line, e);
    ck_assert_str_eq(sb_str(&res.out), "");
  }
  result_free(&res);
}
END_TEST

/* --help lists the options (the man page is made from the same table). */
START_TEST(test_help) {
  const char *argv[] = {"toolstream", "run", "--help", NULL};
  result r = run_bin(BINARY, argv, NULL, 0);
  ck_assert_int_eq(r.status, 0);
  const char *o = sb_str(&r.out);
  ck_assert_msg(strstr(o, "prompts and agents:\n  --agent FILE|NAME"), "%s", o);
  ck_assert_ptr_nonnull(strstr(o, "--prompts DIR"));
  ck_assert_ptr_nonnull(strstr(o, "--prompt-name NAME"));
  result_free(&r);
}
END_TEST

int main(void) {
  Suite *s = suite_create("defs_cli");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, NULL, remove_base);
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_rows, 0, (int)(sizeof rows / sizeof rows[0]));
  tcase_add_test(tc, test_help);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
