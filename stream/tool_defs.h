/*
 * tool_defs.h: the `--tools FILE` shape, shared by `tap` and (later) the runtime.
 *
 * A tools file is a JSON array of tool definitions:
 *   [{"name": "write_file", "description": "...", "progressArgument": "description",
 *     "args": {JSON Schema}, "annotations": {...}, "variables": [{...}]}, ...]
 * Only `name` is required. `args` and `annotations` are kept as their exact JSON text.
 * A definition that configures a subagent relationship (any of ts_tool_defs_subagent_keys:
 * "subagents", "subagent", "agent", "blocking", "hidden", "relationship", "resumable",
 * "immediate", "initAgentNameProperty") is refused:
 * relationships belong to an agent's side, not to a tool (tools-spec §5), and taking the
 * file without them would silently drop what its author meant.
 *
 * Ownership: ts_tool_defs owns copies of everything; free it with ts_tool_defs_free.
 */
#ifndef TS_TOOL_DEFS_H
#define TS_TOOL_DEFS_H

#include <stddef.h>

#include "base/error.h"

/* One entry of a definition's "variables" (tools-spec §3):
 *   {"name": "KEY", "type": "text" | "secret", "required": bool, "scoped": bool,
 *    "description": "..."}; only `name` is required, `type` defaults to text. */
typedef struct {
  char *name;
  char *description; /* "" when absent */
  int secret, required, scoped;
} ts_tool_def_var;

typedef struct {
  char *name;
  char *description;   /* "" when absent */
  char *progress_arg;  /* NULL when absent */
  char *args;          /* JSON text, NULL when absent */
  char *annotations;   /* JSON text, NULL when absent */
  ts_tool_def_var *vars; /* the "variables"; has_vars 0 when the key is absent */
  size_t n_vars;
  int has_vars;
} ts_tool_def;

typedef struct {
  ts_tool_def *v;
  size_t n;
} ts_tool_defs;

/* The keys that configure a subagent relationship, NULL-terminated; a tool definition (here)
 * or a prompt's tools entry (tools/definitions.h) holding one is a definition-time error. */
extern const char *const ts_tool_defs_subagent_keys[];

/* Parses `len` bytes of JSON text into defs (appending to what *defs holds). On error
 * returns a negative ts_err, leaves *defs as it was, and writes a one-line reason into
 * `why` (capacity `why_cap`). Errors: TS_E_JV_BAD_JSON for text that is not JSON,
 * TS_E_INVAL for a wrong shape (not an array, a definition without a string `name`,
 * a non-string progressArgument, a duplicate name, a malformed "variables" entry: not an
 * object, no string name, a type other than "text" or "secret", a non-boolean flag; a
 * key that configures a subagent relationship),
 * TS_E_LIMIT for a file over 32 MiB,
 * TS_E_NOMEM. */
int ts_tool_defs_parse(ts_tool_defs *defs, const char *text, size_t len, char *why,
                       size_t why_cap);

/* Adds or replaces the progress argument of tool `name` (creating a bare definition
 * if there is none). Returns TS_E_OK or TS_E_NOMEM. */
int ts_tool_defs_set_progress(ts_tool_defs *defs, const char *name, const char *arg);

const ts_tool_def *ts_tool_defs_find(const ts_tool_defs *defs, const char *name, size_t len);

void ts_tool_defs_free(ts_tool_defs *defs);

#endif /* TS_TOOL_DEFS_H */
