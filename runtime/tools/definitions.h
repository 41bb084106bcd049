/*
 * definitions.h: prompt and agent definitions (tools-spec §1, §4, §5;
 * ../shared/spec/composition.md restates their shapes), beside the function tools of
 * the registry (tools/registry.h). This module is the data and the definition-time
 * rules; running them (prompt tools, agent tools, handoffs, subagents, attachments) is
 * agent/compose.h.
 *
 * Sources. A JSON file holds one definition object or an array of them; each object
 * says what it is with "kind": "prompt" | "agent" (a file under `--prompts DIR` without
 * "kind" is a prompt; `--agent FILE` without one is an agent). JavaScript modules call
 * definePrompt({...}) / defineAgent({...}) (runtime/js/jstools.h): the sandbox turns the
 * object into this same JSON (a `z` schema into JSON Schema) and hands it to
 * ts_defs_add_json, so both sources meet one parser and one set of rules.
 *
 * The JSON shapes (camelCase as the specification writes them; unknown keys are an
 * error, so a typo is caught at load):
 *
 *   prompt: {"kind":"prompt", "name": snake_case, "toolDescription": "...",
 *            "description": "..." (for people and UIs; never sent to a model),
 *            "prompt": "system text" | [part...],   part: "text"
 *                       | {"type":"text","text"} or {"type":"text","content"}
 *                       | {"type":"include","prompt"} or {"type":"prompt","name"} (another
 *                         prompt's text, included)
 *                       | {"type":"env","property"} or {"type":"env","name"} (a variable's
 *                         value at run time),
 *            "model": "...", "tools": [entry...], "requiredSchema": {JSON Schema},
 *            "variables": [VariableDefinition...], "env": {"NAME": "value", ...},
 *            "includeChat": bool, "includePastTools": bool,
 *            "toolChoice": "auto" | "none" | "required", "parallelToolCalls": bool,
 *            "recentImageThreshold": N (no images here: checked, changes nothing)}
 *     The specification's "reasoning", "providerOptions" and "hooks" (prompt or agent)
 *     are refused by name: nothing here acts on them.
 *     tools entry: "name" (a function tool, prompt or exposed agent), or
 *                  {"name", "includeTextResponse", "includeToolCalls", "includeErrors",
 *                   "initUserMessageProperty", "initAttachmentsProperty"} (SubpromptConfig),
 *                  or {"name", "env": {...}, "options": {...}} (a function tool with
 *                  values); an entry with any subagent key ("subagents", "agent",
 *                  "blocking", "hidden", "relationship", and the older SubagentToolConfig's
 *                  "resumable", "immediate", "initAgentNameProperty") is a definition-time
 *                  error (§5).
 *   agent:  {"kind":"agent", "name", "type": "ai_human" (default) | "dual_ai",
 *            "description", "sideA": side, "sideB": side, "maxSessionTurns": N,
 *            "exposeAsTool": bool, "toolDescription": "...", "env": {...},
 *            "variables": [...], and metadata strings that change nothing of how it runs:
 *            "icon", "packageName", "version", "author", "license"}
 *     side: {"prompt": "prompt name" (absent: the human side of an ai_human agent),
 *            "sessionStopTools": ["name"...] or "sessionStop": "name" (or [...]),
 *            "sessionFailTools": ["name"...] or "sessionFail": "name" (or [...]),
 *            "subagents": [{"agent": "agent name", "name": "relationship name"
 *                           (default: the agent's), "description", "blocking": bool
 *                           (default true), "hidden": bool (default false)}...]}
 *
 * Definition-time rules, checked by ts_defs_check once everything is loaded, each failure
 * one line naming the file and the entry ("prompts/coder.json: prompt \"coder\": tools
 * entry \"serach\": no tool, prompt or exposed agent of that name"):
 *   - names are snake_case ([a-z][a-z0-9_]*, at most 64 bytes); a prompt's name is
 *     unique among prompts, an agent's among agents (a second one is refused by
 *     ts_defs_add_json); the tool namespace (function tools, prompts, agents with
 *     exposeAsTool) holds each name once, so a tools entry is never ambiguous (an agent
 *     that is not exposed may share its prompt's name: --agent NAME and --prompt-name
 *     NAME look in different places); the reserved names subagents, subagent_create and
 *     subagent_message are taken by nothing (no tool, prompt, agent, relationship or
 *     tools entry);
 *   - every tools entry names a function tool of the registry, a prompt, or an agent with
 *     exposeAsTool (in that order of lookup: prompt, exposed agent, function tool), each
 *     at most once per prompt; a SubpromptConfig names a prompt or an exposed agent (its
 *     fields on a function tool are an error); its init*Property names a top-level
 *     property of the callee's requiredSchema (an exposed agent's: its sideA prompt's)
 *     when it has one (without one the arguments are any object: any name goes);
 *   - exposeAsTool needs toolDescription; a prompt used as a tool needs toolDescription;
 *   - a side's prompt exists; a relationship's agent exists; sessionStop/Fail tools
 *     name tools the side's prompt has; dual_ai needs both sides with prompts and a
 *     maxSessionTurns (default TS_DEFS_DEFAULT_SESSION_TURNS);
 *   - an ai_human agent needs sideA.prompt (the model's side; sideB is the person); a
 *     side without a prompt has no stop/fail tools or subagents; an included prompt part
 *     names an existing prompt; requiredSchema compiles (tools/schema.h);
 *   - sub-prompt cycles that can never end: a cycle in the graph "prompt P lists
 *     prompt Q, or an exposed dual_ai agent whose side runs Q, in its tools" (P calls Q
 *     calls ... P) is refused, as is a cycle of included prompt parts. An exposed
 *     ai_human agent called from a prompt is a handoff (nothing nests), so agents that
 *     hand back and forth are no cycle.
 *
 * Limits (each refused with TS_E_LIMIT and a reason): TS_DEFS_MAX_DEFS definitions per
 * text and files per directory, TS_DEFS_MAX_LIST entries in any one list (tools, parts,
 * variables, env, subagents, stop tools), maxSessionTurns up to
 * TS_DEFS_MAX_SESSION_TURNS, 16 MiB per text.
 *
 * Ownership: a ts_defs owns copies of everything; free it with ts_defs_free. Not
 * thread-safe for writing; read-only use from several threads is fine.
 */
#ifndef TS_TOOLS_DEFINITIONS_H
#define TS_TOOLS_DEFINITIONS_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "tools/registry.h"
#include "tools/variables.h"

#define TS_DEFS_NAME_MAX 64
#define TS_DEFS_DEFAULT_SESSION_TURNS 20
#define TS_DEFS_MAX_SESSION_TURNS 10000
#define TS_DEFS_MAX_DEFS 4096
#define TS_DEFS_MAX_LIST 256

/* ---- prompts ---------------------------------------------------------------- */

typedef enum {
  TS_DEFS_PART_TEXT = 0,   /* text: the literal text */
  TS_DEFS_PART_PROMPT = 1, /* text: the included prompt's name */
  TS_DEFS_PART_ENV = 2,    /* text: the variable's name */
} ts_defs_part_kind;

typedef struct {
  ts_defs_part_kind kind;
  char *text;
} ts_defs_part;

/* What a tools entry names, as resolved by ts_defs_check (UNRESOLVED before it). */
typedef enum {
  TS_DEFS_TARGET_UNRESOLVED = 0,
  TS_DEFS_TARGET_FUNCTION = 1, /* a tool of the registry */
  TS_DEFS_TARGET_PROMPT = 2,   /* a prompt: a sub-prompt call */
  TS_DEFS_TARGET_AGENT = 3,    /* an agent with exposeAsTool */
} ts_defs_target;

/* SubpromptConfig (tools-spec §4), with the documented defaults filled in. */
typedef struct {
  int include_text_response;       /* default 1 */
  int include_tool_calls;          /* default 1 */
  int include_errors;              /* default 1 */
  char *init_user_message_property; /* NULL: none */
  char *init_attachments_property;  /* NULL: none */
} ts_defs_subprompt;

typedef struct {
  char *name;
  ts_defs_target target;
  int configured;        /* 1: given as an object (a SubpromptConfig or tool values) */
  ts_defs_subprompt sub; /* defaults when not configured */
  int sub_given;         /* 1: a SubpromptConfig field was given (not only env/options) */
  char **env;            /* "NAME=VALUE" values for a function tool (ts_var_layers.tool) */
  size_t n_env;
  char *options_json;    /* static options, JSON text; NULL: none */
} ts_defs_tool_entry;

typedef enum {
  TS_DEFS_CHOICE_AUTO = 0,
  TS_DEFS_CHOICE_NONE = 1,
  TS_DEFS_CHOICE_REQUIRED = 2,
} ts_defs_tool_choice;

typedef struct {
  char *name;
  char *file;              /* where it was defined (for errors); "" when given inline */
  char *tool_description;  /* NULL: none */
  ts_defs_part *parts;     /* the system prompt, in order */
  size_t n_parts;
  char *model;             /* NULL: the run's model */
  ts_defs_tool_entry *tools;
  size_t n_tools;
  char *required_schema;   /* JSON Schema text; NULL: any object */
  ts_var_def *vars;        /* strings owned by the ts_defs */
  size_t n_vars;
  char **env;              /* "NAME=VALUE" (ts_var_layers.prompt) */
  size_t n_env;
  int include_chat, include_past_tools; /* default 0 */
  ts_defs_tool_choice tool_choice;      /* default auto */
  int parallel_tool_calls;              /* -1: unset (the provider's default) */
  char *description;                    /* NULL: none (for people; never sent) */
} ts_defs_prompt;

/* ---- agents ----------------------------------------------------------------- */

typedef enum { TS_DEFS_AI_HUMAN = 0, TS_DEFS_DUAL_AI = 1 } ts_defs_agent_type;

typedef struct {
  char *agent;       /* the related agent */
  char *name;        /* the relationship's name (default: the agent's) */
  char *description; /* NULL: none */
  int blocking;      /* default 1: the parent waits for the child's outcome */
  int hidden;        /* default 0: hidden relationships get no lifecycle tools */
} ts_defs_subagent;

typedef struct {
  char *prompt; /* NULL: a human side */
  char **stop_tools;
  size_t n_stop_tools;
  char **fail_tools;
  size_t n_fail_tools;
  ts_defs_subagent *subagents;
  size_t n_subagents;
} ts_defs_side;

typedef struct {
  char *name;
  char *file;
  ts_defs_agent_type type;
  char *description;      /* NULL: none */
  ts_defs_side side_a, side_b;
  uint32_t max_session_turns; /* 0 as given: TS_DEFS_DEFAULT_SESSION_TURNS */
  int expose_as_tool;
  char *tool_description; /* NULL: none */
  char **env;             /* "NAME=VALUE" (ts_var_layers.agent) */
  size_t n_env;
  ts_var_def *vars;
  size_t n_vars;
} ts_defs_agent;

/* ---- the set ---------------------------------------------------------------- */

typedef struct ts_defs ts_defs;

ts_defs *ts_defs_new(void);
void ts_defs_free(ts_defs *d);

/* Parses `len` bytes of JSON (one definition object or an array of them) from `file`
 * (a name for errors; may be "") and adds them. `default_kind` is "prompt", "agent" or
 * NULL (then "kind" is required). On error returns a negative ts_err with one line in
 * `why` naming file and entry, and adds nothing of this text:
 *   TS_E_JV_BAD_JSON  not JSON;  TS_E_INVAL  a wrong shape, an unknown key, a duplicate
 *   name, a subagent key in a prompt's tools entry;  TS_E_LIMIT  over 16 MiB;  TS_E_NOMEM */
int ts_defs_add_json(ts_defs *d, const char *file, const char *json, size_t len,
                     const char *default_kind, char *why, size_t why_cap);

/* Reads a JSON file (as ts_defs_add_json; TS_E_IO when unreadable). */
int ts_defs_load_file(ts_defs *d, const char *path, const char *default_kind, char *why,
                      size_t why_cap);

/* Loads every *.json file of `dir` in name order as prompts (default kind "prompt");
 * JavaScript and TypeScript modules there are the caller's (runtime/js). TS_E_IO for a
 * directory that cannot be read. */
int ts_defs_load_dir(ts_defs *d, const char *dir, char *why, size_t why_cap);

/* Checks every definition-time rule above against `reg` (the function tools) and
 * resolves each tools entry's target. TS_E_OK, or TS_E_INVAL with the first failure. */
int ts_defs_check(ts_defs *d, const ts_registry *reg, char *why, size_t why_cap);

size_t ts_defs_prompt_count(const ts_defs *d);
const ts_defs_prompt *ts_defs_prompt_at(const ts_defs *d, size_t i);
const ts_defs_prompt *ts_defs_find_prompt(const ts_defs *d, const char *name);
size_t ts_defs_agent_count(const ts_defs *d);
const ts_defs_agent *ts_defs_agent_at(const ts_defs *d, size_t i);
const ts_defs_agent *ts_defs_find_agent(const ts_defs *d, const char *name);

/* 1 for subagents, subagent_create and subagent_message. */
int ts_defs_name_reserved(const char *name, size_t len);

#endif /* TS_TOOLS_DEFINITIONS_H */
