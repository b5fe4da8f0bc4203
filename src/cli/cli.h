/* cli.h — the graphgate command dispatcher and its commands.
 *
 * Ownership: commands borrow argv and own nothing after they return; each returns the
 * process exit code (0 ok, 1 runtime failure, 2 usage or invalid input).
 */
#ifndef GG_CLI_H
#define GG_CLI_H

#include <stdbool.h>
#include <stddef.h>

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

/* ---- serve: the application context (owned by the "http" helper's cmd_serve.c) ----
 * gg_app is the composition root `graphgate serve` builds: configuration, store and HTTP
 * server, plus shutdown callbacks. Subsystems plug in through one installer call each in
 * cmd_serve.c, e.g. `bool gg_gateway_install(gg_app *app, gg_error *err);`, which registers
 * routes on gg_http_server_router(app->http) (before the listeners start) and, if it owns
 * threads or resources, a shutdown callback. Ownership: serve owns everything in gg_app;
 * installers borrow it for the life of the process. */
struct gg_config;
struct gg_store;
struct gg_http_server;
typedef struct gg_app gg_app;
/* Called once at shutdown, in reverse registration order, after the HTTP listeners have
 * stopped (every request finished or abandoned) and before the store is closed. */
typedef void (*gg_app_shutdown_fn)(gg_app *app, void *user);
#define GG_APP_MAX_SHUTDOWN 16
struct gg_app {
    const struct gg_config *config;  /* loaded configuration (file, env, flags applied) */
    struct gg_store *store;          /* open, migrated store */
    struct gg_http_server *http;     /* not yet started while installers run */
    const char *pkgdatadir;          /* where migrations/specs/schema live */
    volatile int stopping;           /* set when shutdown begins (read-only for others) */
    size_t nshutdown;
    struct { gg_app_shutdown_fn fn; void *user; } shutdown[GG_APP_MAX_SHUTDOWN];
};
/* Register a shutdown callback; false when the table is full. */
bool gg_app_on_shutdown(gg_app *app, gg_app_shutdown_fn fn, void *user);
int gg_cmd_serve(int argc, char **argv);

#endif
