/*
 * opts.h: the one option parser of the `toolstream` command, and the tables it reads.
 *
 * Every command is described by one ts_cli_command: its name, synopsis, a one-line
 * summary (for `toolstream --help`), a paragraph of description, and its options as a
 * list of option groups. An option (ts_cli_opt) carries its long name, an optional short
 * letter, its value's kind (a flag, a string, a size, a number, milliseconds, a thread
 * id), the accepted range, the metavar and the help text. `--help` is generated from the
 * table, and so can be every other rendering of it (man pages, shell completion):
 * ts_cli_commands() iterates the commands, each command its groups and options.
 *
 * Shared groups (bus, tools, thread, upstream TLS, the model endpoint) are declared once, in opts.c, and
 * referenced by each command that takes them, so every such command takes all of the
 * group's options with the same names, values, checks and help. What a shared group
 * collects goes into the one ts_cli_common the command hands to the parser; the
 * command's own options go to its handler.
 *
 * The grammar, the same for every command:
 *   --name VALUE, --name=VALUE   an option with a value (a missing value is an error)
 *   --name, -x                   a flag (a flag given a value is an error)
 *   --                           ends the options: everything after it is positional
 *   -                            a positional (standard input, by convention)
 *   --help, -h / --version       print the help / the version and exit 0, on every command
 * Values are checked here by their kind: sizes, numbers and milliseconds are decimal
 * integers with an optional k/m/g suffix (powers of 1024, as the commands always took
 * them), within [min, max]; a thread id must pass ts_thread_id_valid
 * (1..TS_THREAD_ID_MAX bytes, no space or control byte).
 *
 * Errors: an unknown option, a missing or malformed value, or a handler's refusal is one
 * line on standard error ("toolstream tap: ...") and exit status 2.
 *
 * Exit statuses of every command: 0 success; 1 the work failed (an input or a file named
 * on the command line cannot be read, a stream ended in error, the store failed; one
 * line on standard error says why); 2 a usage error (the command line, or the content
 * of a configuration file it names, such as a --tools file that does not parse).
 */
#ifndef TS_CLI_OPTS_H
#define TS_CLI_OPTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/thread_id.h"
#include "events/bus_pub.h"
#include "js/jstools.h"
#include "stream/tool_defs.h"
#include "tools/registry.h"

typedef enum {
  TS_CLI_FLAG = 0, /* no value */
  TS_CLI_STRING,   /* any string (may be empty) */
  TS_CLI_SIZE,     /* bytes: an integer with an optional k/m/g suffix */
  TS_CLI_NUMBER,   /* a count: the same syntax; errors say "a number" */
  TS_CLI_MS,       /* milliseconds: the same syntax; errors say "milliseconds" */
  TS_CLI_THREAD,   /* a thread id (base/thread_id.h) */
} ts_cli_kind;

typedef struct {
  const char *name;    /* the long name without "--" */
  char letter;         /* the short form (-h), 0 when none */
  ts_cli_kind kind;
  int id;              /* handed to the handler: which option matched */
  uint64_t min, max;   /* TS_CLI_SIZE/NUMBER/MS: the accepted range (inclusive) */
  const char *metavar; /* the value's name in --help ("FILE"); NULL for a flag */
  const char *help;    /* one or more lines ('\n' between them), no trailing newline */
  /* Greedy options: after the value, the following arguments for which this returns 1
   * are values of the same option too (`--tools tools/X.js Y.js`, as a shell glob expands). */
  int (*more)(const char *arg);
} ts_cli_opt;

typedef struct ts_cli_common ts_cli_common;

/* A group's or a command's handler: one option (o) with its value (val, NULL for a flag;
 * num, the parsed number for SIZE/NUMBER/MS), or a positional argument (o == NULL, val
 * the argument). Returns 0 to go on, or an exit status after printing one line (2 for
 * a usage error). */
typedef int (*ts_cli_set_fn)(void *user, const ts_cli_opt *o, const char *val, uint64_t num);

typedef struct {
  const char *name;     /* "bus", "tools", ...: the group's name in docs */
  const char *heading;  /* NULL: its options are listed with the command's own */
  const ts_cli_opt *opts;
  size_t n_opts;
  /* Shared groups: fills the ts_cli_common (user is the ts_cli_common *). NULL: the
   * command's own options, handed to the command's handler. */
  ts_cli_set_fn set;
} ts_cli_group;

typedef struct {
  const char *name;        /* "tap" */
  const char *synopsis;    /* after "toolstream tap ": "[options] [FILE]" */
  const char *summary;     /* one line, for `toolstream --help` */
  const char *description; /* a paragraph ('\n' between lines) */
  const ts_cli_group *const *groups; /* NULL-terminated; the command's own first */
  const char *footer;      /* notes and exit statuses, printed after the options */
  int (*main)(int argc, char **argv); /* argv[0] is the command's name */
} ts_cli_command;

/* ---- what the shared groups collect ---------------------------------------------- */

#define TS_CLI_MAX_TOOLS_FILES 16
#define TS_CLI_MAX_PROGRESS_ARGS 64

#define TS_CLI_MAX_ORIGINS 32
#define TS_CLI_MAX_PROMPTS_DIRS 8

struct ts_cli_common {
  const char *who; /* "toolstream tap": the prefix of every error line */
  /* bus: --pub URL, --replay URL, --tls-cert FILE, --tls-key FILE */
  const char *pub_url, *replay_url, *tls_cert, *tls_key;
  /* tools: --tools FILE (repeatable; .js files are modules), --progress-arg T=A */
  const char *tools_files[TS_CLI_MAX_TOOLS_FILES];
  size_t n_tools_files;
  const char *progress_args[TS_CLI_MAX_PROGRESS_ARGS];
  size_t n_progress_args;
  /* thread: --thread ID (validated); has_thread says it was given */
  char thread[TS_THREAD_ID_MAX + 1];
  int has_thread;
  /* model: --model-url URL, --model NAME, --provider P, --api-key-env VAR, --max-tokens N
   * (max_tokens 0 when not given) */
  const char *model_url, *model, *provider, *key_env;
  unsigned max_tokens;
  /* upstream TLS: --ca-file FILE */
  const char *ca_file;
  /* events: --no-time (no ts / mono_us stamps: reproducible output) */
  int no_time;
  /* browsers: --allow-origin ORIGIN (repeatable), --token-file FILE: who may read the
   * HTTP event endpoint and the bus's ws:// listeners from a page (base/origin.h) */
  const char *origins[TS_CLI_MAX_ORIGINS];
  size_t n_origins;
  const char *token_file;
  /* definitions: --agent FILE|NAME, --prompts DIR (repeatable), --prompt-name NAME */
  const char *agent, *prompt_name;
  const char *prompts_dirs[TS_CLI_MAX_PROMPTS_DIRS];
  size_t n_prompts_dirs;
};

/* The shared groups, for the command tables. */
extern const ts_cli_group ts_cli_group_bus;     /* --pub, --replay, --tls-cert, --tls-key */
extern const ts_cli_group ts_cli_group_tools;   /* --tools, --progress-arg */
extern const ts_cli_group ts_cli_group_thread;  /* --thread */
extern const ts_cli_group ts_cli_group_ca;      /* --ca-file */
extern const ts_cli_group ts_cli_group_model;   /* --model-url, --model, --provider, ... */
extern const ts_cli_group ts_cli_group_events;  /* --no-time */
extern const ts_cli_group ts_cli_group_browsers; /* --allow-origin */
extern const ts_cli_group ts_cli_group_endpoint; /* --token-file */
extern const ts_cli_group ts_cli_group_defs;    /* --agent, --prompts, --prompt-name */
/* --help (-h), --version and --, which every command takes (listed by --help and the man
 * pages; parsed by ts_cli_parse itself, never handed to a `set` function). */
extern const ts_cli_group ts_cli_group_std;

/* Every command, in the order `toolstream --help` lists them; *n gets the count. */
const ts_cli_command *const *ts_cli_commands(size_t *n);

/* The command named `name`, or NULL. */
const ts_cli_command *ts_cli_command_find(const char *name);

/* Parses argv[1..argc-1] for `cmd` (argv[0] is the command's name). Shared groups fill
 * `common` (zeroed by the caller, `who` set by this call); the command's own options and
 * the positional arguments go to `set` with `user`. Returns -1 when the command should go
 * on; otherwise the exit status to return at once (0 after --help or --version, 2 after a
 * usage error, or what a handler returned). */
int ts_cli_parse(const ts_cli_command *cmd, int argc, char **argv, ts_cli_common *common,
                 ts_cli_set_fn set, void *user);

/* The command's --help text, generated from its table, to `f`. */
void ts_cli_print_help(const ts_cli_command *cmd, FILE *f);

/* The version text: "toolstream 0.1.0", then a line naming the libraries the build used
 * ("built with nng 1.5.2, libevent ..."). */
const char *ts_cli_version(void);

/* ---- the shared groups' work, after parsing ---------------------------------------- */

/* --replay needs --pub: 0, or 2 after printing why. Every command with the bus group
 * calls it after parsing. */
int ts_cli_bus_check(const ts_cli_common *c);

/* Opens the publisher of --pub (and --replay) with --tls-cert/--tls-key; `base` (may be
 * NULL) gives the other settings (an archive). Without --pub, *out = NULL and 0. Returns
 * 0, or 1 after printing "cannot publish on URL: why". */
int ts_cli_bus_open(const ts_cli_common *c, const ts_pub_opts *base, ts_pub **out);

/* The thread id: the --thread given, or a fresh one written into c->thread. 0, or 1
 * after printing why (no randomness). */
int ts_cli_thread_or_new(ts_cli_common *c);

/* The tool definitions of --tools and --progress-arg as `ts_tool_defs` (progress
 * arguments, for the tap): JSON files parsed, .js modules loaded for the progress
 * arguments their tools declare, then every --progress-arg applied (it wins, whatever
 * the order on the command line). 0, or the exit status after printing one line: 1 for
 * a file that cannot be read, 2 for one that does not parse. */
int ts_cli_tools_defs(const ts_cli_common *c, ts_tool_defs *defs);

/* The tools of --tools in a registry (for run, which executes them): JSON files added
 * with their schemas, .js modules loaded with `env` (may be NULL). --progress-arg is not
 * applied here (see ts_cli_progress_overrides). 0, or the exit status after printing one
 * line: 1 for a file that cannot be read, 2 for one that does not parse or load. */
int ts_cli_tools_registry(const ts_cli_common *c, ts_registry *reg, const ts_jstools_env *env);

/* The definitions of --prompts and --agent (docs/composition.md), and the entry that drives
 * the thread. `defs` is the caller's set (it may already hold what --tools modules
 * defined: load --tools with env->defs = defs first); `env` (with env->defs == defs) loads
 * the modules. Each --prompts DIR: its *.json files (prompts unless "kind" says
 * otherwise) in name order, then its JavaScript and TypeScript modules in name order
 * (their tools go into `reg`). --agent ARG is a file when it has a '/' or ends in .json
 * or a module's extension (JSON: an agent unless "kind" says otherwise), else the name of
 * a loaded agent. A file's agent is the only one it defines; of several, the one no other
 * definition uses (not a subagent, not in a prompt's tools: a team in one file), else the
 * one named as the file is (team.json: team); any other case is an error. Then every definition-time
 * rule is checked (ts_defs_check against `reg`), and *agent / *prompt_name are set: the
 * --agent, else the --prompt-name, else (with definitions loaded by --prompts) the agent
 * as for a file (the only one, or the one no other definition uses), else the only
 * prompt; both NULL when nothing is defined. Returns 0, or the exit
 * status after printing one line: 1 for a file or directory that cannot be read, 2 for a
 * definition error, an unknown name, or an entry that cannot be chosen. */
int ts_cli_defs_load(const ts_cli_common *c, ts_registry *reg, const ts_jstools_env *env,
                     ts_defs *defs, const char **agent, const char **prompt_name);

/* The --progress-arg settings alone, into `defs`: 0, or 1 after printing (out of memory). */
int ts_cli_progress_overrides(const ts_cli_common *c, ts_tool_defs *defs);

/* Parses a non-negative integer with an optional k/m/g suffix (powers of 1024).
 * Returns 0 on success, -1 for anything else. */
int ts_cli_parse_size(const char *s, uint64_t *out);

#endif /* TS_CLI_OPTS_H */
