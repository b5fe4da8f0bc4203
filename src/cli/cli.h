/* cli.h — the graphgate command dispatcher and its commands.
 *
 * Ownership: commands borrow argv and own nothing after they return; each returns the
 * process exit code (0 ok, 1 runtime failure, 2 usage or invalid input).
 */
#ifndef GG_CLI_H
#define GG_CLI_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "app/app.h"

typedef int (*gg_cmd_fn)(int argc, char **argv);

typedef struct gg_command {
    const char *name;
    const char *summary;
    gg_cmd_fn run;
} gg_command;

enum { GG_EXIT_OK = 0, GG_EXIT_FAIL = 1, GG_EXIT_USAGE = 2 };

/* Each command lives in src/cli/cmd_<name>.c (or in its subsystem) and is listed in the
 * table in main.c. argv[0] is the command name. */
int gg_cmd_version(int argc, char **argv);
/* graph files (src/cli/cmd_graph.c) and local tool runs (src/cli/cmd_run.c) */
int gg_cmd_graph(int argc, char **argv);
/* store-backed graph subcommands and execution history (src/cli/cmd_executions.c) */
int gg_cmd_graph_put(int argc, char **argv);
int gg_cmd_graph_list(int argc, char **argv);
int gg_cmd_graph_activate(int argc, char **argv);
int gg_cmd_executions(int argc, char **argv);
/* downstream tool catalogs (src/cli/cmd_mcp.c): graphgate mcp sync|tools */
int gg_cmd_mcp(int argc, char **argv);
int gg_cmd_run(int argc, char **argv);
/* JSONata / JSON Logic evaluation (src/cli/cmd_eval.c) */
int gg_cmd_eval(int argc, char **argv);
/* the client leg of the MCP conformance suite on the downstream client (src/cli/cmd_conformance.c) */
int gg_cmd_conformance_client(int argc, char **argv);

int gg_cmd_serve(int argc, char **argv); /* builds the gg_app (src/app/app.h) and runs it */

/* Common store options every store-touching command accepts:
 *   --config FILE, --db PATH, --migrations DIR (and --opt=value forms).
 * Parses them out of argv (others are left for the command, in order, in rest/n_rest,
 * which must hold argc entries) and loads the configuration. Returns GG_EXIT_OK or an exit
 * code after printing the error to stderr. */
int gg_cli_load_config(gg_config *c, int argc, char **argv, const char *cmd, char **rest,
                       int *n_rest);
/* Open the store configured in c and apply pending migrations (prints errors; returns NULL
 * with *exit_code set). A database path that does not exist is refused (a typo must not
 * silently read an empty database); only migrate, serve and `tenant create` (the first
 * step of a new installation) create one, the last with gg_cli_open_store_create. */
struct gg_store *gg_cli_open_store(const gg_config *c, const char *cmd, int *exit_code);
struct gg_store *gg_cli_open_store_create(const gg_config *c, const char *cmd, int *exit_code);

int gg_cmd_migrate(int argc, char **argv);
int gg_cmd_tenant(int argc, char **argv);
int gg_cmd_key(int argc, char **argv);
int gg_cmd_secret(int argc, char **argv); /* cmd_secret.c: graphgate secret set|list|delete|rekey */
/* src/cli/cmd_specs.c (built with src/specs): graphgate specs load|check|list|show|search */
int gg_cmd_specs(int argc, char **argv);

/* timeline.c: a run's nodes as a terminal timeline (start offset, duration, status, a bar on
 * the run's time axis): a stored execution (gg_store_execution_get's object) with input and
 * output previews, or the executor's history array, compact. */
#include <jansson.h>
void gg_cli_timeline_execution(FILE *f, json_t *execution);
void gg_cli_timeline_history(FILE *f, json_t *history, double elapsed_ms);

/* JSON as every command prints it (timeline.c): JSON.stringify(v, null, indent) and a
 * newline, numbers shortest round trip (48.6, never jansson's %.17g 48.600000000000001),
 * as the executions API and `graphgate eval` print them. Nothing for v NULL; false when
 * out of memory. */
bool gg_cli_print_json(FILE *f, json_t *v, int indent);

#endif
