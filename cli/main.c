/*
 * main.c: the `toolstream` command: dispatch to the subcommands of cli/commands.c.
 *
 * The top-level help is generated from the same command tables as each command's own
 * --help (cli/opts.h).
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/man.h"

static void usage(FILE *f) {
  fputs("usage: toolstream <command> [options]\n"
        "       toolstream --help | --version\n"
        "\n"
        "Streaming event processor for model tool calls.\n"
        "\n"
        "commands:\n",
        f);
  size_t n;
  const ts_cli_command *const *commands = ts_cli_commands(&n);
  for (size_t i = 0; i < n; i++) fprintf(f, "  %-8s%s\n", commands[i]->name, commands[i]->summary);
  fputs("\nRun 'toolstream <command> --help' for a command's options. Every command takes\n"
        "--help, --version and -- (the end of its options).\n",
        f);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
    usage(stdout);
    return fflush(stdout) ? 1 : 0;
  }
  if (!strcmp(cmd, "--version")) {
    puts(ts_cli_version());
    return fflush(stdout) ? 1 : 0;
  }
  if (!strcmp(cmd, "--generate-man")) return ts_cli_man(argc - 1, argv + 1); /* cli/man.h */
  const ts_cli_command *c = ts_cli_command_find(cmd);
  if (c) return c->main(argc - 1, argv + 1);
  fprintf(stderr, "toolstream: unknown command '%s' (try 'toolstream --help')\n", cmd);
  return 2;
}
