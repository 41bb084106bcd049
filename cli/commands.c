/*
 * commands.c: the list of toolstream's commands (cli/opts.h: ts_cli_commands). A new
 * command is its table (in its own .c file) and one line here; `toolstream --help`, the
 * command's --help and the tests all read it from this list.
 */
#include <string.h>

#include "cli/cli.h"

static const ts_cli_command *const commands[] = {
    &ts_cli_cmd_tap, &ts_cli_cmd_run, &ts_cli_cmd_runcode,
    &ts_cli_cmd_sub, &ts_cli_cmd_demo, &ts_cli_cmd_gateway, &ts_cli_cmd_serve,
    &ts_cli_cmd_threads, &ts_cli_cmd_env, &ts_cli_cmd_bench,
};

const ts_cli_command *const *ts_cli_commands(size_t *n) {
  *n = sizeof commands / sizeof commands[0];
  return commands;
}

const ts_cli_command *ts_cli_command_find(const char *name) {
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(commands[i]->name, name)) return commands[i];
  return NULL;
}

