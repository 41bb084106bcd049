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

#include <signal.h>
#include <stdint.h>

#include "cli/opts.h"

int ts_cli_tap(int argc, char **argv);
int ts_cli_demo(int argc, char **argv);
int ts_cli_sub(int argc, char **argv);
int ts_cli_run(int argc, char **argv);
int ts_cli_gateway(int argc, char **argv);
int ts_cli_runcode(int argc, char **argv);
int ts_cli_serve(int argc, char **argv);

/* The HTTP event endpoint (runtime/net/serve.h) of `serve` and `run --serve`: on `listen`
 * (HOST:PORT), over the store in `data_dir` (a connection of its own), with c's
 * --allow-origin and --token-file. Prints its URL on standard error. Returns 0, or an exit
 * status after one line on standard error. ts_cli_endpoint_run serves until `stop` becomes
 * nonzero (checked every 100 ms); ts_cli_endpoint_start serves on a thread of its own
 * until ts_cli_endpoint_stop, which also frees it. */
typedef struct ts_cli_endpoint ts_cli_endpoint;
/* The endpoint on an event loop of the caller's (the gateway's): `store` may be NULL (live
 * events only, fed by ts_serve_publish). *token must be freed after the server. */
struct event_base;
struct ts_serve;
struct ts_store;
int ts_cli_serve_on(const ts_cli_common *c, const char *listen, struct event_base *base,
                    struct ts_store *store, struct ts_serve **srv, char **token);
int ts_cli_endpoint_open(const ts_cli_common *c, const char *listen, const char *data_dir,
                         volatile sig_atomic_t *stop, ts_cli_endpoint **out);
void ts_cli_endpoint_run(ts_cli_endpoint *e);
int ts_cli_endpoint_start(ts_cli_endpoint *e);
void ts_cli_endpoint_stop(ts_cli_endpoint *e);
void ts_cli_endpoint_free(ts_cli_endpoint *e);
int ts_cli_threads(int argc, char **argv);
int ts_cli_bench(int argc, char **argv);

/* The latency records (agent/latency.h) of `thread`'s stored events after seq `after`, one
 * request per turn, appended to `set` (bench --from-store and run's summary line).
 * TS_E_OK or a store error, TS_E_NOMEM, TS_E_LIMIT. */
struct ts_lat_set;
int ts_cli_bench_read_thread(struct ts_store *st, const char *thread, uint64_t after,
                             struct ts_lat_set *set);
int ts_cli_env(int argc, char **argv);

extern const ts_cli_command ts_cli_cmd_tap;
extern const ts_cli_command ts_cli_cmd_run;
extern const ts_cli_command ts_cli_cmd_runcode;
extern const ts_cli_command ts_cli_cmd_sub;
extern const ts_cli_command ts_cli_cmd_demo;
extern const ts_cli_command ts_cli_cmd_gateway;
extern const ts_cli_command ts_cli_cmd_serve;
extern const ts_cli_command ts_cli_cmd_threads;
extern const ts_cli_command ts_cli_cmd_env;
extern const ts_cli_command ts_cli_cmd_bench;

#endif
