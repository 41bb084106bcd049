/*
 * cli.h: what the subcommands of the `toolstream` command share.
 *
 * Each subcommand is `int ts_cli_<name>(int argc, char **argv)` with argv[0] the
 * subcommand's name; it returns the process exit status: 0 success, 1 the work ended
 * in error (one line on stderr says why), 2 a usage error (cli/opts.h). Each is described
 * by its table, `ts_cli_cmd_<name>` (options, synopsis, help), which main.c lists.
 */
#ifndef TS_CLI_H
#define TS_CLI_H

#include "cli/opts.h"

int ts_cli_tap(int argc, char **argv);
int ts_cli_demo(int argc, char **argv);
int ts_cli_sub(int argc, char **argv);
int ts_cli_run(int argc, char **argv);
int ts_cli_gateway(int argc, char **argv);
int ts_cli_runcode(int argc, char **argv);
int ts_cli_serve(int argc, char **argv);
int ts_cli_serve(int argc, char **argv);

extern const ts_cli_command ts_cli_cmd_tap;
extern const ts_cli_command ts_cli_cmd_run;
extern const ts_cli_command ts_cli_cmd_runcode;
extern const ts_cli_command ts_cli_cmd_sub;
extern const ts_cli_command ts_cli_cmd_demo;
extern const ts_cli_command ts_cli_cmd_gateway;
extern const ts_cli_command ts_cli_cmd_serve;

#endif
