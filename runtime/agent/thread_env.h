/*
 * thread_env.h: what a run does with its thread's variables (tools/variables.h), between
 * the tools it loaded and the thread it runs: declares their definitions on the thread,
 * checks up front that every required variable resolves (`run --check-env`), and
 * completes a turn whose call was parked for a variable when the run was stopped or
 * killed (`run --resume`).
 */
#ifndef TS_THREAD_ENV_H
#define TS_THREAD_ENV_H

#include <stdint.h>

#include "store/store.h"
#include "tools/dispatch.h"
#include "tools/registry.h"
#include "tools/variables.h"

/* Records on `thread` the variable definitions of every tool in `reg` ("tool NAME"), so
 * that `scoped` blocks for its descendants and `env list` can say what is declared.
 * Returns TS_E_OK or the resolver's error (ts_vars_errmsg). */
int ts_thread_env_declare(ts_vars *v, const ts_registry *reg, const char *thread);

/* 1 when some tool of `reg` declares `name` as a secret, else 0. */
int ts_thread_env_is_secret(const ts_registry *reg, const char *name);

typedef int (*ts_thread_env_missing_cb)(void *user, const ts_tool *tool, const ts_var_def *def);

/* Calls cb for every required variable of every tool in `reg` that does not resolve on
 * `thread` (with `layers`), in registry order. Returns how many are missing, or a
 * negative ts_err (a key problem: ts_vars_errmsg says which). Values are opened to be
 * checked and wiped at once; nothing is printed. */
int ts_thread_env_check(ts_vars *v, const ts_registry *reg, const char *thread,
                        const ts_var_layers *layers, ts_thread_env_missing_cb cb, void *user);

/* When `thread` has a call parked for a variable (a run stopped while it waited), runs
 * the rest of that turn, from the parked call on, with a dispatcher on `store` configured
 * like `base` (its store, thread, turn and first_index are set here): the parked call
 * waits again until its variable resolves, then it and the calls after it run in order.
 * Returns 1 when a turn was completed (*turn_out: its number), 0 when nothing is parked
 * or the parked turn's assistant message was never stored (the turn is then played
 * again, and the dispatcher skips what was committed), TS_E_ABORTED when stopped again,
 * or a store error. */
int ts_thread_env_complete_parked(ts_store *store, const ts_dispatch_config *base,
                                  uint32_t *turn_out);

#endif /* TS_THREAD_ENV_H */
