/* cli.h — the graphgate command dispatcher and its commands.
 *
 * Ownership: commands borrow argv and own nothing after they return; each returns the
 * process exit code (0 ok, 1 runtime failure, 2 usage or invalid input).
 */
#ifndef GG_CLI_H
#define GG_CLI_H

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

#endif
