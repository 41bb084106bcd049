/*
 * defs_fuzz.c: prompt and agent definitions (runtime/tools/definitions.h).
 *
 * Input: byte 0 chooses the default kind (0: none, 1: "prompt", 2: "agent") and whether a
 * second text follows (bit 2: the rest splits at byte 1/255 of its length into two texts,
 * added one after the other, as two files are). Each text goes through ts_defs_add_json;
 * then ts_defs_check against a registry holding one function tool. Besides "no crash, no
 * leak, no hang", each run asserts what the contract promises:
 *   - add returns one of its documented codes, with a one-line reason when it fails, and
 *     a failing text adds nothing (the counts are unchanged);
 *   - check returns TS_E_OK or TS_E_INVAL (or TS_E_NOMEM) with a reason, and the same
 *     answer a second time;
 *   - after a successful check every tools entry is resolved, and every name found by
 *     position is found by name.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/definitions.h"
#include "tools/registry.h"

static void fail(const char *what, int rc, const char *why) {
  fprintf(stderr, "defs_fuzz: %s (%s: %s)\n", what, ts_err_name(rc), why);
  abort();
}

static void add(ts_defs *d, const char *p, size_t n, const char *kind) {
  size_t np = ts_defs_prompt_count(d), na = ts_defs_agent_count(d);
  char why[512] = "";
  int rc = ts_defs_add_json(d, "f.json", p, n, kind, why, sizeof why);
  if (rc != TS_E_OK && rc != TS_E_INVAL && rc != TS_E_JV_BAD_JSON && rc != TS_E_LIMIT &&
      rc != TS_E_NOMEM)
    fail("undocumented code from add", rc, why);
  if (rc && (!why[0] || strchr(why, '\n'))) fail("add failed without one line", rc, why);
  if (rc && (ts_defs_prompt_count(d) != np || ts_defs_agent_count(d) != na))
    fail("a failing text added something", rc, why);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  static const char *const kinds[] = {NULL, "prompt", "agent", NULL};
  const char *kind = kinds[data[0] & 3];
  const char *body = (const char *)data + 2;
  size_t n = size - 2;
  ts_defs *d = ts_defs_new();
  ts_registry *reg = ts_registry_new();
  if (!d || !reg) abort();
  char why[512] = "";
  ts_tool_spec spec = {.name = "search",
                       .args_schema = "{\"type\":\"object\",\"properties\":{\"q\":{}}}"};
  if (ts_registry_add(reg, &spec, why, sizeof why)) abort();
  if (data[0] & 4) {
    size_t cut = n * data[1] / 255;
    add(d, body, cut, kind);
    add(d, body + cut, n - cut, kind);
  } else {
    add(d, body, n, kind);
  }
  int rc = ts_defs_check(d, reg, why, sizeof why);
  if (rc != TS_E_OK && rc != TS_E_INVAL && rc != TS_E_NOMEM) fail("undocumented code from check", rc, why);
  if (rc && !why[0]) fail("check failed without a reason", rc, why);
  char why2[512] = "";
  int rc2 = ts_defs_check(d, reg, why2, sizeof why2);
  if (rc2 != rc || strcmp(why, why2)) fail("check answered twice differently", rc2, why2);
  if (rc == TS_E_OK) {
    for (size_t i = 0; i < ts_defs_prompt_count(d); i++) {
      const ts_defs_prompt *p = ts_defs_prompt_at(d, i);
      if (ts_defs_find_prompt(d, p->name) != p) fail("a prompt not found by name", 0, p->name);
      for (size_t k = 0; k < p->n_tools; k++)
        if (p->tools[k].target == TS_DEFS_TARGET_UNRESOLVED)
          fail("an unresolved tools entry after check", 0, p->tools[k].name);
    }
    for (size_t i = 0; i < ts_defs_agent_count(d); i++) {
      const ts_defs_agent *a = ts_defs_agent_at(d, i);
      if (ts_defs_find_agent(d, a->name) != a) fail("an agent not found by name", 0, a->name);
      if (!a->max_session_turns) fail("maxSessionTurns left 0 after check", 0, a->name);
    }
  }
  ts_defs_free(d);
  ts_registry_free(reg);
  return 0;
}
