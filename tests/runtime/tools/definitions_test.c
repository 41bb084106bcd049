/*
 * definitions_test.c: prompt and agent definitions (runtime/tools/definitions.h).
 *
 * Rows {__LINE__, label, definitions text, default kind, add code, add reason, check
 * code, check reason}: one row per definition-time rule, accepted and refused, first what
 * ts_defs_add_json sees in one text (shapes, unknown keys, a subagent key in a prompt's
 * tools entry, reserved names...), then what ts_defs_check sees over the set and the
 * registry (unknown names, exposeAsTool without toolDescription, init*Property against
 * the callee's requiredSchema, cycles of sub-prompts...). Every refusal names the file and
 * the entry. Texts are written with ' for " (to keep them readable in C).
 * Then: the values kept (defaults, resolved targets), all-or-nothing adds, duplicates
 * across files, loading a directory and a file, and every allocation failing in turn.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/runner.h"
#include "support/tempdir.h"
#include "support/test_support.h"
#include "tools/definitions.h"
#include "tools/registry.h"

/* ' -> " (a static buffer; one text at a time). */
static const char *q(const char *s) {
  static char buf[8192];
  size_t n = strlen(s);
  ck_assert_uint_lt(n, sizeof buf);
  for (size_t i = 0; i <= n; i++) buf[i] = s[i] == '\'' ? '"' : s[i];
  return buf;
}

/* The registry the rows check against: search {query, topic}, write_file. */
static ts_registry *test_registry(void) {
  ts_registry *r = ts_registry_new();
  ck_assert_ptr_nonnull(r);
  char why[256];
  ts_tool_spec a = {.name = "search",
                    .args_schema = "{\"type\":\"object\",\"properties\":{\"query\":{\"type\":"
                                   "\"string\"}}}"};
  ts_tool_spec b = {.name = "write_file"};
  ck_assert_int_eq(ts_registry_add(r, &a, why, sizeof why), TS_E_OK);
  ck_assert_int_eq(ts_registry_add(r, &b, why, sizeof why), TS_E_OK);
  return r;
}

typedef struct {
  int line;
  const char *label;
  const char *text;
  const char *kind; /* the default kind */
  int add_rc;
  const char *add_why; /* a substring of the reason, NULL: none expected */
  int check_rc;
  const char *check_why;
} row;

#define P(body) "{'kind':'prompt'," body "}"
#define A(body) "{'kind':'agent'," body "}"
#define SCHEMA "'requiredSchema':{'type':'object','properties':{'task':{'type':'string'},'files':{'type':'array'}}}"
#define HELPER P("'name':'helper','toolDescription':'Helps'," SCHEMA)
#define OK TS_E_OK
#define BAD TS_E_INVAL

static const row rows[] = {
    /* ---- one text: shapes and keys ---------------------------------------------------- */
    {__LINE__, "a bare prompt", P("'name':'coder'"), NULL, OK, NULL, OK, NULL},
    {__LINE__, "a prompt without kind in a prompts file", "{'name':'coder'}", "prompt", OK, NULL,
     OK, NULL},
    {__LINE__, "an agent without kind for --agent FILE",
     "[{'name':'boss','sideA':{'prompt':'lead'}},{'kind':'prompt','name':'lead'}]", "agent", OK,
     NULL, OK, NULL},
    {__LINE__, "no kind and no default", "{'name':'coder'}", NULL, BAD,
     "defs.json: definition 1: needs \"kind\"", 0, NULL},
    {__LINE__, "an unknown kind", "{'kind':'tool','name':'x'}", NULL, BAD,
     "definition 1: \"kind\" must be \"prompt\" or \"agent\"", 0, NULL},
    {__LINE__, "not JSON", "[{'kind':'prompt',", NULL, TS_E_JV_BAD_JSON, "not valid JSON", 0, NULL},
    {__LINE__, "not an object", "[1]", NULL, BAD, "definition 1: not an object", 0, NULL},
    {__LINE__, "a scalar text", "'x'", NULL, BAD, "expected a definition object", 0, NULL},
    {__LINE__, "no name", P("'model':'m'"), NULL, BAD, "a prompt needs a \"name\"", 0, NULL},
    {__LINE__, "a name not snake_case", P("'name':'Coder'"), NULL, BAD,
     "prompt \"Coder\": the name is not snake_case", 0, NULL},
    {__LINE__, "a name of 65 bytes",
     P("'name':'a1234567890123456789012345678901234567890123456789012345678901234'"), NULL, BAD,
     "not snake_case", 0, NULL},
    {__LINE__, "a name of 64 bytes",
     P("'name':'a123456789012345678901234567890123456789012345678901234567890123'"), NULL, OK, NULL,
     OK, NULL},
    {__LINE__, "reserved: a prompt named subagent_create", P("'name':'subagent_create'"), NULL, BAD,
     "defs.json: prompt \"subagent_create\": the name is reserved", 0, NULL},
    {__LINE__, "reserved: an agent named subagents", A("'name':'subagents'"), NULL, BAD,
     "agent \"subagents\": the name is reserved", 0, NULL},
    {__LINE__, "reserved: a prompt named subagent_message", P("'name':'subagent_message'"), NULL,
     BAD, "reserved", 0, NULL},
    {__LINE__, "an unknown key (a typo)", P("'name':'coder','toolDescripton':'x'"), NULL, BAD,
     "defs.json: prompt \"coder\": unknown key \"toolDescripton\" in a prompt", 0, NULL},
    {__LINE__, "an unknown key with a raw newline: still one line (fuzz)",
     P("'name':'a','pro\nmpt':'x'"), NULL, BAD, "unknown key \"pro?mpt\" in a prompt", 0, NULL},
    {__LINE__, "a tools entry with an escaped newline: still one line",
     P("'name':'a','tools':['x\\ny']"), NULL, OK, NULL, BAD, "tools entry \"x?y\": no tool"},
    {__LINE__, "a key given twice", P("'name':'coder','model':'a','model':'b'"), NULL, BAD,
     "key \"model\" given twice", 0, NULL},
    /* the specification's fields with nothing behind them here: refused by name, not as typos */
    {__LINE__, "reasoning", P("'name':'a','reasoning':{'effort':'high'}"), NULL, BAD,
     "prompt \"a\": \"reasoning\" in a prompt is a field of the specification that toolstream "
     "does not support",
     0, NULL},
    {__LINE__, "providerOptions", P("'name':'a','providerOptions':{}"), NULL, BAD,
     "\"providerOptions\" in a prompt is a field of the specification", 0, NULL},
    {__LINE__, "an agent's hooks", A("'name':'x','hooks':['log']"), NULL, BAD,
     "agent \"x\": \"hooks\" in an agent is a field of the specification", 0, NULL},
    {__LINE__, "recentImageThreshold (no images here: nothing to keep)",
     P("'name':'a','recentImageThreshold':10"), NULL, OK, NULL, OK, NULL},
    {__LINE__, "recentImageThreshold negative", P("'name':'a','recentImageThreshold':-1"), NULL,
     BAD, "\"recentImageThreshold\" must be a whole number, 0 or more", 0, NULL},
    {__LINE__, "two prompts of one name in one text", "[" P("'name':'a'") "," P("'name':'a'") "]",
     NULL, BAD, "prompt \"a\": a second prompt of that name", 0, NULL},
    {__LINE__, "a prompt and an agent may share a name (agent not exposed)",
     "[" P("'name':'support'") "," A("'name':'support','sideA':{'prompt':'support'}") "]", NULL, OK,
     NULL, OK, NULL},
    {__LINE__, "toolDescription must be a string", P("'name':'a','toolDescription':3"), NULL, BAD,
     "\"toolDescription\" must be a string", 0, NULL},
    {__LINE__, "toolChoice values", P("'name':'a','toolChoice':'required'"), NULL, OK, NULL, OK,
     NULL},
    {__LINE__, "toolChoice unknown", P("'name':'a','toolChoice':'always'"), NULL, BAD,
     "\"toolChoice\" must be \"auto\", \"none\" or \"required\"", 0, NULL},
    {__LINE__, "includeChat must be a boolean", P("'name':'a','includeChat':'yes'"), NULL, BAD,
     "\"includeChat\" must be true or false", 0, NULL},
    {__LINE__, "parallelToolCalls must be a boolean", P("'name':'a','parallelToolCalls':1"), NULL,
     BAD, "\"parallelToolCalls\" must be true or false", 0, NULL},
    {__LINE__, "a requiredSchema that is not a schema",
     P("'name':'a','requiredSchema':{'type':'strnig'}"), NULL, BAD,
     "prompt \"a\": \"requiredSchema\" is malformed: /type", 0, NULL},
    {__LINE__, "a requiredSchema that is not an object", P("'name':'a','requiredSchema':'x'"), NULL,
     BAD, "\"requiredSchema\" must be a JSON Schema object", 0, NULL},
    /* the system prompt and its parts */
    {__LINE__, "parts of every type",
     "[" P("'name':'a','prompt':['Hi',{'type':'text','text':'t'},{'type':'prompt','name':'b'},"
           "{'type':'env','name':'USER_NAME'}]") "," P("'name':'b','prompt':'B'") "]",
     NULL, OK, NULL, OK, NULL},
    {__LINE__, "parts as the specification's documentation spells them",
     "[" P("'name':'shipping_inquiries','prompt':[{'type':'include','prompt':'company_tone'},"
           "{'type':'text','content':'Details'},{'type':'env','property':'PRODUCT_INVENTORY'}]")
     "," P("'name':'company_tone','prompt':'Be kind.'") "]",
     NULL, OK, NULL, OK, NULL},
    {__LINE__, "an include part naming no prompt",
     P("'name':'a','prompt':[{'type':'include','prompt':'nope'}]"), NULL, OK, NULL, BAD,
     "prompt part 0 includes prompt \"nope\", which does not exist"},
    {__LINE__, "an include part including itself", P("'name':'a','prompt':[{'type':'include','prompt':'a'}]"),
     NULL, OK, NULL, BAD, "prompt parts include each other in a cycle"},
    {__LINE__, "a part giving both spellings",
     P("'name':'a','prompt':[{'type':'text','text':'x','content':'y'}]"), NULL, BAD,
     "part 0 gives both \"text\" and \"content\" (one of them)", 0, NULL},
    {__LINE__, "an include part without its prompt", P("'name':'a','prompt':[{'type':'include'}]"),
     NULL, BAD, "part 0 needs \"prompt\" (or \"name\")", 0, NULL},
    {__LINE__, "an env part with a property naming no variable",
     P("'name':'a','prompt':[{'type':'env','property':'a b'}]"), NULL, BAD,
     "is not a variable name", 0, NULL},
    {__LINE__, "a part of an unknown type", P("'name':'a','prompt':[{'type':'file','name':'x'}]"),
     NULL, BAD, "part 0: \"type\" must be \"text\", \"include\" (or \"prompt\") or \"env\"", 0,
     NULL},
    {__LINE__, "a part with an unknown key", P("'name':'a','prompt':[{'type':'text','txt':'x'}]"),
     NULL, BAD, "unknown key \"txt\" in prompt part 0", 0, NULL},
    {__LINE__, "a prompt that is a number", P("'name':'a','prompt':3"), NULL, BAD,
     "\"prompt\" must be a string or an array of parts", 0, NULL},
    {__LINE__, "an env part naming no variable", P("'name':'a','prompt':[{'type':'env','name':'a b'}]"),
     NULL, BAD, "is not a variable name", 0, NULL},
    /* variables and env */
    {__LINE__, "variables as the spec writes them",
     P("'name':'a','variables':[{'name':'VECTOR_STORE_ID','type':'text','required':true,"
       "'description':'Vector store identifier'},{'name':'KEY','type':'secret','scoped':true}]"),
     NULL, OK, NULL, OK, NULL},
    {__LINE__, "a variable of an unknown type", P("'name':'a','variables':[{'name':'K','type':'int'}]"),
     NULL, BAD, "variable K: \"type\" must be \"text\" or \"secret\"", 0, NULL},
    {__LINE__, "a variable without a name", P("'name':'a','variables':[{'type':'text'}]"), NULL, BAD,
     "variables[0] needs a \"name\"", 0, NULL},
    {__LINE__, "a variable declared twice", P("'name':'a','variables':[{'name':'K'},{'name':'K'}]"),
     NULL, BAD, "variable K declared twice", 0, NULL},
    {__LINE__, "a variable with an unknown key", P("'name':'a','variables':[{'name':'K','secret':true}]"),
     NULL, BAD, "unknown key \"secret\" in variables[0]", 0, NULL},
    {__LINE__, "env of strings, numbers and booleans",
     P("'name':'a','env':{'REGION':'eu','LIMIT':5,'DEBUG':false}"), NULL, OK, NULL, OK, NULL},
    {__LINE__, "an env value that is null", P("'name':'a','env':{'REGION':null}"), NULL, BAD,
     "\"env\": REGION must be a string, a number or a boolean", 0, NULL},
    {__LINE__, "an env name that is not a name", P("'name':'a','env':{'1 x':'v'}"), NULL, BAD,
     "\"env\": \"1 x\" is not a variable name", 0, NULL},
    /* tools entries: shapes, and subagent keys (tools-spec §5) */
    {__LINE__, "tools entries of every shape",
     "[" P("'name':'a','tools':['search',{'name':'helper','includeToolCalls':false,"
           "'initUserMessageProperty':'task'},{'name':'write_file','env':{'ROOT':'/w'},"
           "'options':{'mode':'safe'}}]") "," HELPER "]",
     NULL, OK, NULL, OK, NULL},
    {__LINE__, "a tools entry configuring a subagent (agent)",
     P("'name':'a','tools':[{'name':'researcher','agent':'researcher','blocking':false}]"), NULL,
     BAD,
     "defs.json: prompt \"a\": tools entry \"researcher\" configures a subagent relationship "
     "(\"agent\")",
     0, NULL},
    {__LINE__, "a tools entry configuring a subagent (subagents)",
     P("'name':'a','tools':[{'name':'x','subagents':[{'agent':'b'}]}]"), NULL, BAD,
     "configures a subagent relationship (\"subagents\")", 0, NULL},
    {__LINE__, "a tools entry configuring a subagent (hidden)",
     P("'name':'a','tools':[{'name':'x','hidden':true}]"), NULL, BAD,
     "configures a subagent relationship (\"hidden\")", 0, NULL},
    {__LINE__, "a tools entry configuring a subagent (blocking, no name)",
     P("'name':'a','tools':[{'blocking':true}]"), NULL, BAD,
     "tools entry without a name configures a subagent relationship", 0, NULL},
    {__LINE__, "a tools entry configuring a subagent (relationship)",
     P("'name':'a','tools':[{'name':'x','relationship':'r'}]"), NULL, BAD,
     "configures a subagent relationship (\"relationship\")", 0, NULL},
    /* the older SubagentToolConfig's keys (a child configured in a prompt's tools) */
    {__LINE__, "a tools entry configuring a subagent (resumable)",
     P("'name':'a','tools':[{'name':'x','resumable':{'receives_messages':'side_a'}}]"), NULL, BAD,
     "tools entry \"x\" configures a subagent relationship (\"resumable\")", 0, NULL},
    {__LINE__, "a tools entry configuring a subagent (immediate)",
     P("'name':'x1','tools':[{'name':'x','immediate':true}]"), NULL, BAD,
     "configures a subagent relationship (\"immediate\")", 0, NULL},
    {__LINE__, "a tools entry configuring a subagent (initAgentNameProperty)",
     P("'name':'a','tools':[{'name':'x','initAgentNameProperty':'n'}]"), NULL, BAD,
     "configures a subagent relationship (\"initAgentNameProperty\")", 0, NULL},
    {__LINE__, "a tools entry with an unknown key", P("'name':'a','tools':[{'name':'x','include':1}]"),
     NULL, BAD, "unknown key \"include\" in tools entry \"x\"", 0, NULL},
    {__LINE__, "a tools entry listed twice", P("'name':'a','tools':['search','search']"), NULL, BAD,
     "tools entry \"search\" listed twice", 0, NULL},
    {__LINE__, "a tools entry that is a number", P("'name':'a','tools':[7]"), NULL, BAD,
     "tools entry 0 must be a name or an object", 0, NULL},
    {__LINE__, "options that are not an object",
     P("'name':'a','tools':[{'name':'search','options':[1]}]"), NULL, BAD,
     "\"options\" must be an object", 0, NULL},
    /* agents: shapes */
    {__LINE__, "an agent of an unknown type", A("'name':'x','type':'triple_ai'"), NULL, BAD,
     "agent \"x\": \"type\" must be \"ai_human\" or \"dual_ai\"", 0, NULL},
    {__LINE__, "maxSessionTurns 0", A("'name':'x','maxSessionTurns':0"), NULL, BAD,
     "\"maxSessionTurns\" must be a whole number from 1 to 10000", 0, NULL},
    {__LINE__, "maxSessionTurns 2.5", A("'name':'x','maxSessionTurns':2.5"), NULL, BAD,
     "maxSessionTurns", 0, NULL},
    {__LINE__, "a side with an unknown key", A("'name':'x','sideA':{'prompt':'p','tools':[]}"), NULL,
     BAD, "unknown key \"tools\" in sideA", 0, NULL},
    {__LINE__, "a relationship without an agent", A("'name':'x','sideA':{'subagents':[{'name':'r'}]}"),
     NULL, BAD, "sideA subagents[0] needs \"agent\"", 0, NULL},
    {__LINE__, "a relationship declared twice",
     A("'name':'x','sideA':{'subagents':[{'agent':'w'},{'agent':'v','name':'w'}]}"), NULL, BAD,
     "relationship \"w\" declared twice", 0, NULL},
    {__LINE__, "a relationship name not snake_case",
     A("'name':'x','sideA':{'subagents':[{'agent':'w','name':'Worker'}]}"), NULL, BAD,
     "relationship name \"Worker\" is not snake_case", 0, NULL},
    {__LINE__, "sessionStopTools not names", A("'name':'x','sideA':{'sessionStopTools':[1]}"), NULL,
     BAD, "\"sessionStopTools\"[0] must be a non-empty string", 0, NULL},
    {__LINE__, "sessionStop and sessionFail as one name each (the documentation's spelling)",
     "[" P("'name':'w','tools':['search','write_file']") ","
     A("'name':'x','type':'dual_ai','sideA':{'prompt':'w','sessionStop':'search',"
       "'sessionFail':'write_file'},'sideB':{'prompt':'w'}") "]",
     NULL, OK, NULL, OK, NULL},
    {__LINE__, "sessionStop as an array", "[" P("'name':'w','tools':['search']") ","
     A("'name':'x','sideA':{'prompt':'w','sessionStop':['search']}") "]", NULL, OK, NULL, OK, NULL},
    {__LINE__, "sessionStop naming no tool of the side's prompt",
     "[" P("'name':'w','tools':['search']") ","
     A("'name':'x','sideA':{'prompt':'w','sessionStop':'approve'}") "]", NULL, OK, NULL, BAD,
     "sessionStopTools"},
    {__LINE__, "sessionStop and sessionStopTools both", A("'name':'x','sideA':{'sessionStop':'a',"
                                                          "'sessionStopTools':['a']}"),
     NULL, BAD, "agent \"x\": sideA: \"sessionStop\" and \"sessionStopTools\" both given", 0, NULL},
    {__LINE__, "sessionFail empty", A("'name':'x','sideA':{'sessionFail':''}"), NULL, BAD,
     "\"sessionFail\" must not be empty", 0, NULL},
    {__LINE__, "the agent's metadata (icon, package fields)",
     "[" P("'name':'w'") "," A("'name':'x','icon':'/icons/x.svg','packageName':'@me/x',"
                                 "'version':'1.0.0','author':'Me','license':'MIT',"
                                 "'sideA':{'prompt':'w'}") "]",
     NULL, OK, NULL, OK, NULL},
    {__LINE__, "an icon that is not a string", A("'name':'x','icon':3"), NULL, BAD,
     "agent \"x\": \"icon\" must be a string", 0, NULL},

    /* ---- the set: names and tools entries ----------------------------------------------- */
    {__LINE__, "an unknown tools entry", P("'name':'coder','tools':['serach']"), NULL, OK, NULL, BAD,
     "defs.json: prompt \"coder\": tools entry \"serach\": no tool, prompt or exposed agent of "
     "that name"},
    {__LINE__, "a tools entry naming a reserved name", P("'name':'a','tools':['subagent_message']"),
     NULL, OK, NULL, BAD, "tools entry \"subagent_message\": the name is reserved"},
    {__LINE__, "a prompt used as a tool without toolDescription",
     "[" P("'name':'a','tools':['b']") "," P("'name':'b'") "]", NULL, OK, NULL, BAD,
     "prompt \"a\": tools entry \"b\": prompt \"b\" (defs.json) is used as a tool but has no "
     "toolDescription"},
    {__LINE__, "a prompt used as a tool with toolDescription",
     "[" P("'name':'a','tools':['helper']") "," HELPER "]", NULL, OK, NULL, OK, NULL},
    {__LINE__, "an agent that is not exposed, as a tool",
     "[" P("'name':'a','tools':['boss']") "," A("'name':'boss','sideA':{'prompt':'a'}") "]", NULL, OK,
     NULL, BAD, "tools entry \"boss\": agent \"boss\" is not exposed as a tool"},
    {__LINE__, "exposeAsTool without toolDescription",
     "[" P("'name':'a'") "," A("'name':'boss','exposeAsTool':true,'sideA':{'prompt':'a'}") "]", NULL,
     OK, NULL, BAD, "agent \"boss\": exposeAsTool needs a toolDescription"},
    {__LINE__, "an exposed agent as a tool (a handoff)",
     "[" P("'name':'a','tools':['boss']") "," P("'name':'b'") ","
     A("'name':'boss','exposeAsTool':true,'toolDescription':'Escalate','sideA':{'prompt':'b'}") "]",
     NULL, OK, NULL, OK, NULL},
    {__LINE__, "a SubpromptConfig on a function tool",
     P("'name':'a','tools':[{'name':'search','includeErrors':false}]"), NULL, OK, NULL, BAD,
     "tools entry \"search\": a function tool takes no SubpromptConfig"},
    {__LINE__, "env and options on a function tool",
     P("'name':'a','tools':[{'name':'search','env':{'K':'v'},'options':{'x':1}}]"), NULL, OK, NULL,
     OK, NULL},
    {__LINE__, "initUserMessageProperty naming a property",
     "[" P("'name':'a','tools':[{'name':'helper','initUserMessageProperty':'task',"
           "'initAttachmentsProperty':'files'}]") "," HELPER "]",
     NULL, OK, NULL, OK, NULL},
    {__LINE__, "initUserMessageProperty naming no property",
     "[" P("'name':'a','tools':[{'name':'helper','initUserMessageProperty':'goal'}]") "," HELPER "]",
     NULL, OK, NULL, BAD,
     "prompt \"a\": tools entry \"helper\": initUserMessageProperty \"goal\" is not a top-level "
     "property of the requiredSchema of \"helper\""},
    {__LINE__, "initAttachmentsProperty naming no property",
     "[" P("'name':'a','tools':[{'name':'helper','initAttachmentsProperty':'paths'}]") "," HELPER "]",
     NULL, OK, NULL, BAD, "initAttachmentsProperty \"paths\" is not a top-level property"},
    {__LINE__, "initUserMessageProperty without a requiredSchema (any object: any name)",
     "[" P("'name':'a','tools':[{'name':'b','initUserMessageProperty':'task',"
           "'initAttachmentsProperty':'files'}]") ","
     P("'name':'b','toolDescription':'B'") "]", NULL, OK, NULL, OK, NULL},
    {__LINE__, "initUserMessageProperty of an exposed agent: its sideA prompt's schema",
     "[" P("'name':'a','tools':[{'name':'boss','initUserMessageProperty':'task'}]") "," HELPER ","
     A("'name':'boss','exposeAsTool':true,'toolDescription':'B','sideA':{'prompt':'helper'}") "]",
     NULL, OK, NULL, OK, NULL},
    {__LINE__, "a prompt with a function tool's name", P("'name':'search'"), NULL, OK, NULL, BAD,
     "prompt \"search\": a function tool has the same name"},
    {__LINE__, "an exposed agent with a prompt's name",
     "[" P("'name':'support'") ","
     A("'name':'support','exposeAsTool':true,'toolDescription':'S','sideA':{'prompt':'support'}") "]",
     NULL, OK, NULL, BAD, "agent \"support\": exposed as a tool, but prompt \"support\""},
    {__LINE__, "an exposed agent with a function tool's name",
     "[" P("'name':'a'") "," A("'name':'write_file','exposeAsTool':true,'toolDescription':'W',"
                                "'sideA':{'prompt':'a'}") "]",
     NULL, OK, NULL, BAD, "exposed as a tool, but a function tool has the same name"},

    /* ---- the set: agents and sides -------------------------------------------------------- */
    {__LINE__, "an agent whose side prompt does not exist", A("'name':'x','sideA':{'prompt':'nope'}"),
     NULL, OK, NULL, BAD, "agent \"x\": sideA: no prompt \"nope\""},
    {__LINE__, "an ai_human agent without sideA.prompt", A("'name':'x'"), NULL, OK, NULL, BAD,
     "an ai_human agent needs sideA.prompt"},
    {__LINE__, "a dual_ai agent with one prompt",
     "[" P("'name':'a'") "," A("'name':'x','type':'dual_ai','sideA':{'prompt':'a'}") "]", NULL, OK,
     NULL, BAD, "a dual_ai agent needs a prompt on both sides"},
    {__LINE__, "a dual_ai agent with both sides",
     "[" P("'name':'a','tools':['write_file']") "," P("'name':'b'") ","
     A("'name':'x','type':'dual_ai','maxSessionTurns':6,'sideA':{'prompt':'a',"
       "'sessionStopTools':['write_file']},'sideB':{'prompt':'b'}") "]",
     NULL, OK, NULL, OK, NULL},
    {__LINE__, "a stop tool the side's prompt does not have",
     "[" P("'name':'a','tools':['search']") ","
     A("'name':'x','sideA':{'prompt':'a','sessionStopTools':['write_file']}") "]", NULL, OK, NULL, BAD,
     "sideA: sessionStopTools \"write_file\" is not among the tools of prompt \"a\""},
    {__LINE__, "a fail tool the side's prompt does not have",
     "[" P("'name':'a'") "," A("'name':'x','sideA':{'prompt':'a','sessionFailTools':['give_up']}") "]",
     NULL, OK, NULL, BAD, "sessionFailTools \"give_up\" is not among the tools"},
    {__LINE__, "a relationship to no agent",
     "[" P("'name':'a'") "," A("'name':'x','sideA':{'prompt':'a','subagents':[{'agent':'worker'}]}") "]",
     NULL, OK, NULL, BAD, "sideA: subagent relationship \"worker\": no agent \"worker\""},
    {__LINE__, "a relationship named with a reserved name",
     "[" P("'name':'a'") "," A("'name':'w','sideA':{'prompt':'a'}") ","
     A("'name':'x','sideA':{'prompt':'a','subagents':[{'agent':'w','name':'subagents'}]}") "]",
     NULL, OK, NULL, BAD, "relationship name \"subagents\" is reserved"},
    {__LINE__, "relationships on the agent side",
     "[" P("'name':'a'") "," A("'name':'w','sideA':{'prompt':'a'}") ","
     A("'name':'x','sideA':{'prompt':'a','subagents':[{'agent':'w','blocking':false},"
       "{'agent':'w','name':'quiet_w','hidden':true,'description':'d'}]}") "]",
     NULL, OK, NULL, OK, NULL},
    {__LINE__, "a human side with subagents",
     "[" P("'name':'a'") "," A("'name':'w','sideA':{'prompt':'a'}") ","
     A("'name':'x','sideA':{'prompt':'a'},'sideB':{'subagents':[{'agent':'w'}]}") "]",
     NULL, OK, NULL, BAD, "sideB has no prompt (a human side)"},

    /* ---- the set: cycles ------------------------------------------------------------------ */
    {__LINE__, "a prompt calling itself",
     P("'name':'a','toolDescription':'A','tools':['a']"), NULL, OK, NULL, BAD,
     "sub-prompts call each other in a cycle that can never end (\"a\" calls \"a\")"},
    {__LINE__, "two prompts calling each other",
     "[" P("'name':'a','toolDescription':'A','tools':['b']") ","
     P("'name':'b','toolDescription':'B','tools':['search','a']") "]", NULL, OK, NULL, BAD,
     "(\"a\" calls \"b\" calls \"a\")"},
    {__LINE__, "a chain that ends",
     "[" P("'name':'a','toolDescription':'A','tools':['b','c']") ","
     P("'name':'b','toolDescription':'B','tools':['c']") "," P("'name':'c','toolDescription':'C'") "]",
     NULL, OK, NULL, OK, NULL},
    {__LINE__, "a cycle through a dual_ai agent",
     "[" P("'name':'a','toolDescription':'A','tools':['debate']") "," P("'name':'b'") ","
     A("'name':'debate','type':'dual_ai','exposeAsTool':true,'toolDescription':'D',"
       "'sideA':{'prompt':'b'},'sideB':{'prompt':'a'}") "]",
     NULL, OK, NULL, BAD, "\"a\" calls \"a\""},
    {__LINE__, "ai_human agents handing back and forth: no cycle",
     "[" P("'name':'triage','tools':['billing']") "," P("'name':'billing_p','tools':['front']") ","
     A("'name':'front','exposeAsTool':true,'toolDescription':'Back to triage','sideA':{'prompt':'triage'}") ","
     A("'name':'billing','exposeAsTool':true,'toolDescription':'Billing','sideA':{'prompt':'billing_p'}") "]",
     NULL, OK, NULL, OK, NULL},
    {__LINE__, "a prompt part including itself",
     P("'name':'a','prompt':['x',{'type':'prompt','name':'a'}]"), NULL, OK, NULL, BAD,
     "prompt parts include each other in a cycle (\"a\" includes \"a\")"},
    {__LINE__, "prompt parts including each other",
     "[" P("'name':'a','prompt':[{'type':'prompt','name':'b'}]") ","
     P("'name':'b','prompt':[{'type':'prompt','name':'a'}]") "]", NULL, OK, NULL, BAD,
     "include each other in a cycle"},
    {__LINE__, "a prompt part including no prompt",
     P("'name':'a','prompt':[{'type':'prompt','name':'nope'}]"), NULL, OK, NULL, BAD,
     "prompt part 0 includes prompt \"nope\", which does not exist"},
};

START_TEST(test_rows) {
  const row *r = &rows[_i];
  ts_registry *reg = test_registry();
  ts_defs *d = ts_defs_new();
  ck_assert_ptr_nonnull(d);
  char why[1024] = "";
  const char *text = q(r->text);
  int rc = ts_defs_add_json(d, "defs.json", text, strlen(text), r->kind, why, sizeof why);
  ck_assert_msg(rc == r->add_rc, "line %d (%s): add rc %d, want %d (%s)", r->line, r->label, rc,
                r->add_rc, why);
  if (r->add_why)
    ck_assert_msg(strstr(why, r->add_why), "line %d (%s): reason '%s' lacks '%s'", r->line,
                  r->label, why, r->add_why);
  ck_assert_msg(!strchr(why, '\n'), "line %d: not one line: '%s'", r->line, why);
  if (rc == TS_E_OK) {
    rc = ts_defs_check(d, reg, why, sizeof why);
    ck_assert_msg(!strchr(why, '\n'), "line %d: not one line: '%s'", r->line, why);
    ck_assert_msg(rc == r->check_rc, "line %d (%s): check rc %d, want %d (%s)", r->line, r->label,
                  rc, r->check_rc, why);
    if (r->check_why)
      ck_assert_msg(strstr(why, r->check_why), "line %d (%s): reason '%s' lacks '%s'", r->line,
                    r->label, why, r->check_why);
    if (rc) /* every refusal names the file first */
      ck_assert_msg(!strncmp(why, "defs.json: ", 11), "line %d: '%s'", r->line, why);
  } else {
    ck_assert_uint_eq(ts_defs_prompt_count(d), 0); /* a failing text adds nothing */
    ck_assert_uint_eq(ts_defs_agent_count(d), 0);
    if (rc == TS_E_INVAL)
      ck_assert_msg(!strncmp(why, "defs.json: ", 11), "line %d: '%s'", r->line, why);
  }
  ts_defs_free(d);
  ts_registry_free(reg);
}
END_TEST

/* ---- what a set keeps ---------------------------------------------------------------- */

static const char *const full =
    "[{'kind':'prompt','name':'coordinator','toolDescription':'Coordinates','description':'Leads',"
    "'prompt':['You coordinate.',{'type':'prompt','name':'style'},{'type':'env','name':'TEAM'}],"
    "'model':'gpt-x','tools':['search',{'name':'researcher','includeTextResponse':false,"
    "'initUserMessageProperty':'question','initAttachmentsProperty':'files'},"
    "{'name':'write_file','env':{'ROOT':'/w'},'options':{'mode':'safe'}},'escalate'],"
    "'variables':[{'name':'TEAM','type':'secret','required':true,'scoped':true,'description':'d'}],"
    "'env':{'TEAM':'blue'},'includeChat':true,'includePastTools':true,'toolChoice':'none',"
    "'parallelToolCalls':false},"
    "{'kind':'prompt','name':'style','prompt':'Be brief.'},"
    "{'kind':'prompt','name':'researcher','toolDescription':'Researches \\u00e9',"
    "'requiredSchema':{'type':'object','properties':{'question':{'type':'string'},"
    "'files':{'type':'array','items':{'type':'string'}}},'required':['question']}},"
    "{'kind':'agent','name':'lead','description':'The lead','sideA':{'prompt':'coordinator',"
    "'subagents':[{'agent':'worker','blocking':false}]},'env':{'A':'1'}},"
    "{'kind':'agent','name':'worker','sideA':{'prompt':'style','sessionStopTools':[]}},"
    "{'kind':'agent','name':'escalate','exposeAsTool':true,'toolDescription':'Hand off',"
    "'type':'dual_ai','maxSessionTurns':7,'sideA':{'prompt':'style'},'sideB':{'prompt':'style'}}]";

START_TEST(test_values) {
  ts_registry *reg = test_registry();
  ts_defs *d = ts_defs_new();
  char why[512] = "";
  const char *t = q(full);
  ck_assert_int_eq(ts_defs_add_json(d, "team.json", t, strlen(t), NULL, why, sizeof why), TS_E_OK);
  ck_assert_int_eq(ts_defs_check(d, reg, why, sizeof why), TS_E_OK);
  ck_assert_uint_eq(ts_defs_prompt_count(d), 3);
  ck_assert_uint_eq(ts_defs_agent_count(d), 3);
  ck_assert_str_eq(ts_defs_prompt_at(d, 0)->name, "coordinator"); /* in the order given */
  ck_assert_str_eq(ts_defs_agent_at(d, 2)->name, "escalate");
  ck_assert_ptr_null(ts_defs_prompt_at(d, 3));
  const ts_defs_prompt *p = ts_defs_find_prompt(d, "coordinator");
  ck_assert_ptr_nonnull(p);
  ck_assert_str_eq(p->file, "team.json");
  ck_assert_str_eq(p->tool_description, "Coordinates");
  ck_assert_str_eq(p->description, "Leads");
  ck_assert_str_eq(p->model, "gpt-x");
  ck_assert_uint_eq(p->n_parts, 3);
  ck_assert_int_eq(p->parts[0].kind, TS_DEFS_PART_TEXT);
  ck_assert_str_eq(p->parts[0].text, "You coordinate.");
  ck_assert_int_eq(p->parts[1].kind, TS_DEFS_PART_PROMPT);
  ck_assert_str_eq(p->parts[1].text, "style");
  ck_assert_int_eq(p->parts[2].kind, TS_DEFS_PART_ENV);
  ck_assert_str_eq(p->parts[2].text, "TEAM");
  ck_assert_uint_eq(p->n_tools, 4);
  ck_assert_str_eq(p->tools[0].name, "search");
  ck_assert_int_eq(p->tools[0].target, TS_DEFS_TARGET_FUNCTION);
  ck_assert_int_eq(p->tools[0].configured, 0);
  ck_assert_int_eq(p->tools[0].sub.include_text_response, 1); /* the defaults */
  ck_assert_int_eq(p->tools[0].sub.include_tool_calls, 1);
  ck_assert_int_eq(p->tools[0].sub.include_errors, 1);
  const ts_defs_tool_entry *r = &p->tools[1];
  ck_assert_int_eq(r->target, TS_DEFS_TARGET_PROMPT);
  ck_assert_int_eq(r->configured, 1);
  ck_assert_int_eq(r->sub_given, 1);
  ck_assert_int_eq(r->sub.include_text_response, 0);
  ck_assert_int_eq(r->sub.include_tool_calls, 1);
  ck_assert_int_eq(r->sub.include_errors, 1);
  ck_assert_str_eq(r->sub.init_user_message_property, "question");
  ck_assert_str_eq(r->sub.init_attachments_property, "files");
  const ts_defs_tool_entry *w = &p->tools[2];
  ck_assert_int_eq(w->target, TS_DEFS_TARGET_FUNCTION);
  ck_assert_int_eq(w->sub_given, 0);
  ck_assert_uint_eq(w->n_env, 1);
  ck_assert_str_eq(w->env[0], "ROOT=/w");
  ck_assert_str_eq(w->options_json, "{\"mode\":\"safe\"}");
  ck_assert_int_eq(p->tools[3].target, TS_DEFS_TARGET_AGENT);
  ck_assert_uint_eq(p->n_vars, 1);
  ck_assert_str_eq(p->vars[0].name, "TEAM");
  ck_assert_int_eq(p->vars[0].type, TS_VAR_SECRET);
  ck_assert_int_eq(p->vars[0].required, 1);
  ck_assert_int_eq(p->vars[0].scoped, 1);
  ck_assert_str_eq(p->vars[0].description, "d");
  ck_assert_uint_eq(p->n_env, 1);
  ck_assert_str_eq(p->env[0], "TEAM=blue");
  ck_assert_int_eq(p->include_chat, 1);
  ck_assert_int_eq(p->include_past_tools, 1);
  ck_assert_int_eq(p->tool_choice, TS_DEFS_CHOICE_NONE);
  ck_assert_int_eq(p->parallel_tool_calls, 0);
  const ts_defs_prompt *s = ts_defs_find_prompt(d, "style");
  ck_assert_ptr_null(s->tool_description);
  ck_assert_ptr_null(s->description);
  ck_assert_ptr_null(s->model);
  ck_assert_ptr_null(s->required_schema);
  ck_assert_int_eq(s->include_chat, 0);
  ck_assert_int_eq(s->tool_choice, TS_DEFS_CHOICE_AUTO);
  ck_assert_int_eq(s->parallel_tool_calls, -1);
  ck_assert_uint_eq(s->n_parts, 1);
  const ts_defs_prompt *rs = ts_defs_find_prompt(d, "researcher");
  ck_assert_str_eq(rs->tool_description, "Researches \xC3\xA9"); /* escapes decoded */
  ck_assert_ptr_nonnull(strstr(rs->required_schema, "\"required\":[\"question\"]"));
  const ts_defs_agent *lead = ts_defs_find_agent(d, "lead");
  ck_assert_int_eq(lead->type, TS_DEFS_AI_HUMAN);
  ck_assert_str_eq(lead->description, "The lead");
  ck_assert_str_eq(lead->side_a.prompt, "coordinator");
  ck_assert_ptr_null(lead->side_b.prompt); /* the person */
  ck_assert_uint_eq(lead->side_a.n_subagents, 1);
  ck_assert_str_eq(lead->side_a.subagents[0].agent, "worker");
  ck_assert_str_eq(lead->side_a.subagents[0].name, "worker"); /* default: the agent's */
  ck_assert_int_eq(lead->side_a.subagents[0].blocking, 0);
  ck_assert_int_eq(lead->side_a.subagents[0].hidden, 0);
  ck_assert_uint_eq(lead->max_session_turns, TS_DEFS_DEFAULT_SESSION_TURNS);
  ck_assert_int_eq(lead->expose_as_tool, 0);
  ck_assert_str_eq(lead->env[0], "A=1");
  const ts_defs_agent *esc = ts_defs_find_agent(d, "escalate");
  ck_assert_int_eq(esc->type, TS_DEFS_DUAL_AI);
  ck_assert_uint_eq(esc->max_session_turns, 7);
  ck_assert_int_eq(esc->expose_as_tool, 1);
  ck_assert_str_eq(esc->tool_description, "Hand off");
  ck_assert_ptr_null(ts_defs_find_agent(d, "nobody"));
  ck_assert_ptr_null(ts_defs_find_prompt(d, "lead"));
  ts_defs_free(d);
  ts_registry_free(reg);
}
END_TEST

/* A text that fails adds nothing; a duplicate across texts names the first one's file; a
 * pointer handed out stays valid while more are added. */
/* The specification's documentation spells some values its own way; each spelling reads as
 * ours does: {line, definitions, the prompt "a"'s parts as kind:text;... , agent "x"'s sideA
 * stop and fail tools as "stop|fail"}. */
static const struct {
  int line;
  const char *text;
  const char *parts, *side;
} spelling_rows[] = {
    {__LINE__,
     "[" P("'name':'a','prompt':[{'type':'include','prompt':'b'},{'type':'text','content':'Hi'},"
           "{'type':'env','property':'INV'}]") "," P("'name':'b','prompt':'B'") "]",
     "1:b;0:Hi;2:INV;", NULL},
    {__LINE__,
     "[" P("'name':'a','prompt':[{'type':'prompt','name':'b'},{'type':'text','text':'Hi'},"
           "{'type':'env','name':'INV'}]") "," P("'name':'b','prompt':'B'") "]",
     "1:b;0:Hi;2:INV;", NULL},
    {__LINE__,
     "[" P("'name':'a','tools':['search','write_file']") ","
     A("'name':'x','type':'dual_ai','sideA':{'prompt':'a','sessionStop':'search',"
       "'sessionFail':'write_file'},'sideB':{'prompt':'a'}") "]",
     "", "search|write_file"},
    {__LINE__,
     "[" P("'name':'a','tools':['search','write_file']") ","
     A("'name':'x','sideA':{'prompt':'a','sessionStopTools':['search','write_file']}") "]", "",
     "search,write_file|"},
};

START_TEST(test_documentation_spellings) {
  for (size_t i = 0; i < sizeof spelling_rows / sizeof spelling_rows[0]; i++) {
    ts_registry *reg = test_registry();
    ts_defs *d = ts_defs_new();
    char why[512] = "", got[512] = "";
    const char *t = q(spelling_rows[i].text);
    ck_assert_msg(ts_defs_add_json(d, "defs.json", t, strlen(t), NULL, why, sizeof why) == 0 &&
                      ts_defs_check(d, reg, why, sizeof why) == 0,
                  "line %d: %s", spelling_rows[i].line, why);
    const ts_defs_prompt *p = ts_defs_find_prompt(d, "a");
    ck_assert_ptr_nonnull(p);
    for (size_t k = 0; k < p->n_parts; k++)
      snprintf(got + strlen(got), sizeof got - strlen(got), "%d:%s;", (int)p->parts[k].kind,
               p->parts[k].text);
    ck_assert_msg(!strcmp(got, spelling_rows[i].parts), "line %d: parts %s",
                  spelling_rows[i].line, got);
    if (spelling_rows[i].side) {
      const ts_defs_side *sd = &ts_defs_find_agent(d, "x")->side_a;
      got[0] = '\0';
      for (size_t k = 0; k < sd->n_stop_tools; k++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", k ? "," : "",
                 sd->stop_tools[k]);
      snprintf(got + strlen(got), sizeof got - strlen(got), "|");
      for (size_t k = 0; k < sd->n_fail_tools; k++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", k ? "," : "",
                 sd->fail_tools[k]);
      ck_assert_msg(!strcmp(got, spelling_rows[i].side), "line %d: side %s",
                    spelling_rows[i].line, got);
    }
    ts_defs_free(d);
    ts_registry_free(reg);
  }
}
END_TEST

START_TEST(test_adds) {
  ts_defs *d = ts_defs_new();
  char why[512] = "";
  const char *a = q("[{'kind':'prompt','name':'one'}]");
  ck_assert_int_eq(ts_defs_add_json(d, "a.json", a, strlen(a), NULL, why, sizeof why), TS_E_OK);
  const ts_defs_prompt *one = ts_defs_find_prompt(d, "one");
  const char *b = q("[{'kind':'prompt','name':'two'},{'kind':'prompt','name':'three','x':1}]");
  ck_assert_int_eq(ts_defs_add_json(d, "b.json", b, strlen(b), NULL, why, sizeof why), TS_E_INVAL);
  ck_assert_str_eq(why, "b.json: prompt \"three\": unknown key \"x\" in a prompt");
  ck_assert_uint_eq(ts_defs_prompt_count(d), 1);
  ck_assert_ptr_null(ts_defs_find_prompt(d, "two"));
  const char *c = q("{'kind':'prompt','name':'one'}");
  ck_assert_int_eq(ts_defs_add_json(d, "c.json", c, strlen(c), NULL, why, sizeof why), TS_E_INVAL);
  ck_assert_str_eq(why, "c.json: prompt \"one\": a second prompt of that name (the first: a.json)");
  for (int i = 0; i < 300; i++) { /* many more, in reverse name order */
    char t[128];
    snprintf(t, sizeof t, "{\"kind\":\"prompt\",\"name\":\"p%03d\"}", 299 - i);
    ck_assert_int_eq(ts_defs_add_json(d, "", t, strlen(t), NULL, why, sizeof why), TS_E_OK);
  }
  ck_assert_ptr_eq(ts_defs_find_prompt(d, "one"), one);
  ck_assert_str_eq(one->name, "one");
  for (int i = 0; i < 300; i++) {
    char n[16];
    snprintf(n, sizeof n, "p%03d", i);
    ck_assert_ptr_nonnull(ts_defs_find_prompt(d, n));
    ck_assert_str_eq(ts_defs_prompt_at(d, 1 + (size_t)(299 - i))->name, n);
  }
  const char *e = q("{'kind':'prompt','name':'bad name'}"); /* inline: no file in the reason */
  ck_assert_int_eq(ts_defs_add_json(d, "", e, strlen(e), NULL, why, sizeof why), TS_E_INVAL);
  ck_assert_ptr_nonnull(strstr(why, "prompt \"bad name\": the name is not snake_case"));
  ck_assert_int_eq(why[0], 'p');
  ck_assert_int_eq(ts_defs_add_json(d, "", "", 0, NULL, why, sizeof why), TS_E_JV_BAD_JSON);
  ck_assert_int_eq(ts_defs_add_json(NULL, "", "{}", 2, NULL, why, sizeof why), TS_E_INVAL);
  ck_assert_int_eq(ts_defs_name_reserved("subagents", 9), 1);
  ck_assert_int_eq(ts_defs_name_reserved("subagent", 8), 0);
  ts_defs_free(d);
  ts_defs_free(NULL);
}
END_TEST

/* A directory: its *.json files in name order as prompts, nothing else. */
START_TEST(test_load_dir_and_file) {
  char dir[512];
  ts_test_tempdir(dir, sizeof dir, "defs");
  ts_test_put(ts_test_at(dir, "b.json"), "{\"name\":\"second\"}");
  ts_test_put(ts_test_at(dir, "a.json"),
              "[{\"name\":\"first\"},{\"kind\":\"agent\",\"name\":\"boss\",\"sideA\":{\"prompt\":"
              "\"first\"}}]");
  ts_test_put(ts_test_at(dir, "notes.txt"), "not JSON");
  ts_test_put(ts_test_at(dir, "tool.js"), "defineTool({})");
  ts_test_put(ts_test_at(dir, ".hidden.json"), "oops");
  ts_defs *d = ts_defs_new();
  char why[512] = "";
  ck_assert_int_eq(ts_defs_load_dir(d, dir, why, sizeof why), TS_E_OK);
  ck_assert_uint_eq(ts_defs_prompt_count(d), 2);
  ck_assert_str_eq(ts_defs_prompt_at(d, 0)->name, "first");
  ck_assert_str_eq(ts_defs_prompt_at(d, 1)->name, "second");
  ck_assert_ptr_nonnull(strstr(ts_defs_prompt_at(d, 1)->file, "/b.json"));
  ck_assert_uint_eq(ts_defs_agent_count(d), 1);
  ck_assert_int_eq(ts_defs_check(d, NULL, why, sizeof why), TS_E_OK);
  ts_defs_free(d);

  /* a bad file: the error names it; what came before it stays */
  ts_test_put(ts_test_at(dir, "c.json"), "{\"name\":\"third\",\"tools\":[{\"name\":\"w\",\"agent\":\"w\"}]}");
  d = ts_defs_new();
  ck_assert_int_eq(ts_defs_load_dir(d, dir, why, sizeof why), TS_E_INVAL);
  ck_assert_ptr_nonnull(strstr(why, "/c.json: prompt \"third\": tools entry \"w\" configures a subagent"));
  ts_defs_free(d);

  d = ts_defs_new();
  ck_assert_int_eq(ts_defs_load_dir(d, ts_test_at(dir, "missing"), why, sizeof why), TS_E_IO);
  ck_assert_ptr_nonnull(strstr(why, "missing: No such file or directory"));
  ck_assert_int_eq(ts_defs_load_file(d, ts_test_at(dir, "none.json"), "agent", why, sizeof why), TS_E_IO);
  ck_assert_int_eq(ts_defs_load_file(d, ts_test_at(dir, "b.json"), "agent", why, sizeof why),
                   TS_E_OK); /* an agent by default here */
  ck_assert_ptr_nonnull(ts_defs_find_agent(d, "second"));
  ts_defs_free(d);
  ts_test_rm_rf(dir);
}
END_TEST

/* Every allocation failing in turn: TS_E_NOMEM or success, never a crash or a leak (ASan). */
START_TEST(test_out_of_memory) {
  ts_registry *reg = test_registry();
  const char *t = q(full);
  char text[8192];
  snprintf(text, sizeof text, "%s", t);
  for (long n = 1; n < 100000; n++) {
    ts_defs *d = ts_defs_new();
    if (!d) continue;
    char why[512] = "";
    ts_test_alloc_fail_after(n);
    int rc = ts_defs_add_json(d, "f.json", text, strlen(text), NULL, why, sizeof why);
    if (rc == TS_E_OK) rc = ts_defs_check(d, reg, why, sizeof why);
    ts_test_alloc_fail_after(-1);
    ck_assert_msg(rc == TS_E_OK || rc == TS_E_NOMEM, "allocation %ld fails: rc %d (%s)", n, rc,
                  why);
    if (rc == TS_E_NOMEM) ck_assert_str_eq(why, "out of memory");
    ts_defs_free(d);
    if (rc == TS_E_OK) {
      ts_registry_free(reg);
      return;
    }
  }
  ck_abort_msg("never succeeded");
}
END_TEST

int main(void) {
  Suite *s = suite_create("definitions");
  TCase *tc = tcase_create("core");
  tcase_add_loop_test(tc, test_rows, 0, (int)(sizeof rows / sizeof rows[0]));
  tcase_add_test(tc, test_values);
  tcase_add_test(tc, test_documentation_spellings);
  tcase_add_test(tc, test_adds);
  tcase_add_test(tc, test_load_dir_and_file);
  tcase_add_test(tc, test_out_of_memory);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
