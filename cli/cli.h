/*
 * cli.h: what the subcommands of the `toolstream` command share.
 *
 * Each subcommand is `int ts_cli_<name>(int argc, char **argv)` with argv[0] the
 * subcommand's name; it returns the process exit status: 0 success, 1 the work ended
 * in error (one line on stderr says why), 2 a usage error.
 */
#ifndef TS_CLI_H
#define TS_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "stream/tool_defs.h"

int ts_cli_tap(int argc, char **argv);
int ts_cli_demo(int argc, char **argv);
int ts_cli_sub(int argc, char **argv);
int ts_cli_run(int argc, char **argv);
int ts_cli_gateway(int argc, char **argv);
int ts_cli_runcode(int argc, char **argv);
int ts_cli_serve(int argc, char **argv);

/* Option parsing: matches argv[*i] against "--name" (taking the next argument as the
 * value) or "--name=value". Returns 1 and sets *val on a match, 0 otherwise; on a
 * missing value prints an error and returns -1. */
int ts_cli_opt(int argc, char **argv, int *i, const char *name, const char **val);

/* The tool options shared by tap and gateway, with errors on stderr prefixed by `who`
 * ("toolstream tap"). Return 0, or -1 after printing why. */
int ts_cli_tools_json(ts_tool_defs *defs, const char *path, const char *who);
int ts_cli_progress_arg(ts_tool_defs *defs, const char *val, const char *who);

/* Parses a non-negative integer with an optional k/m/g suffix (powers of 1024).
 * Returns 0 on success, -1 for anything else. */
int ts_cli_parse_size(const char *s, uint64_t *out);


/* Reads a whole file; returns malloc'd bytes (NUL-terminated) or NULL with errno set.
 * Refuses files over `max` bytes (errno EFBIG). */
char *ts_cli_read_file(const char *path, size_t max, size_t *len);

#endif
