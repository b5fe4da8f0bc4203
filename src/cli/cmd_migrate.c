/* cmd_migrate.c — `graphgate migrate`, and the store opening every store command shares. */
#include "cli/cli.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"

static void print_err(const char *cmd, const gg_error *err) {
    char buf[1200];
    gg_error_format(err, buf, sizeof buf);
    fprintf(stderr, "graphgate %s: %s\n", cmd, buf);
}

/* Open the configured database and bring its schema up to date. Commands run this while
 * `serve` may be using the same file: WAL plus the busy timeout make that safe, and
 * migrating is idempotent. */
static gg_store *open_store(const gg_config *c, const char *cmd, bool create, int *exit_code) {
    gg_error err = GG_ERROR_INIT;
    char dir[PATH_MAX];
    if (!gg_config_find_data_dir(c->migrations_dir, "migrations", dir, sizeof dir, &err)) {
        print_err(cmd, &err);
        gg_error_clear(&err);
        *exit_code = GG_EXIT_FAIL;
        return NULL;
    }
    gg_store_options o = {.path = c->db_path, .url = c->db_url, .statement_timeout_ms = c->statement_timeout_ms,
                          .pool_size = 2, .lazy_pool = true, .busy_timeout_ms = c->busy_timeout_ms, .must_exist = !create};
    gg_store *s = gg_store_open(&o, &err);
    if (s && !gg_store_migrate(s, dir, NULL, &err)) {
        gg_store_close(s);
        s = NULL;
    }
    if (!s) {
        print_err(cmd, &err);
        gg_error_clear(&err);
        *exit_code = GG_EXIT_FAIL;
    }
    return s;
}

/* See cli.h. */
gg_store *gg_cli_open_store(const gg_config *c, const char *cmd, int *exit_code) {
    return open_store(c, cmd, false, exit_code);
}

gg_store *gg_cli_open_store_create(const gg_config *c, const char *cmd, int *exit_code) {
    return open_store(c, cmd, true, exit_code);
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: graphgate migrate [--db PATH] [--config FILE] [--migrations DIR] [--check]\n"
            "\n"
            "Apply pending database migrations (serve also does this at start).\n"
            "\n"
            "  --db PATH          database file (default from the configuration: ./var/graphgate.db)\n"
            "  --database-url URL PostgreSQL instead of the file (postgres://…; migrations/postgres)\n"
            "  --config FILE      configuration file (or $GRAPHGATE_CONFIG)\n"
            "  --migrations DIR   migrations directory (default: found next to the binary or installed)\n"
            "  --check            only verify: exit 1 if migrations are pending, changed or missing\n");
}

int gg_cmd_migrate(int argc, char **argv) {
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    if (!rest) return GG_EXIT_FAIL;
    bool check = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            free(rest);
            return GG_EXIT_OK;
        }
    }
    gg_config c;
    int n = 0, rc = gg_cli_load_config(&c, argc, argv, "migrate", rest, &n);
    if (rc != GG_EXIT_OK) { free(rest); return rc; }
    for (int i = 1; i < n; i++) {
        if (strcmp(rest[i], "--check") == 0) { check = true; continue; }
        fprintf(stderr, "graphgate migrate: unexpected argument '%s'\n", rest[i]);
        usage(stderr);
        free(rest);
        gg_config_free(&c);
        return GG_EXIT_USAGE;
    }
    free(rest);
    gg_error err = GG_ERROR_INIT;
    char dir[PATH_MAX];
    gg_store *s = NULL;
    int applied = 0;
    rc = GG_EXIT_FAIL;
    if (!gg_config_find_data_dir(c.migrations_dir, "migrations", dir, sizeof dir, &err)) goto out;
    gg_store_options o = {.path = c.db_path, .url = c.db_url, .statement_timeout_ms = c.statement_timeout_ms,
                          .pool_size = 2, .busy_timeout_ms = c.busy_timeout_ms};
    if (!(s = gg_store_open(&o, &err))) goto out;
    if (check) {
        if (!gg_store_migrations_verify(s, dir, &err)) goto out;
        printf("%s: schema is current (migration %04d)\n", gg_store_path(s), gg_store_schema_version(s, &err));
        rc = GG_EXIT_OK;
        goto out;
    }
    if (!gg_store_migrate(s, dir, &applied, &err)) goto out;
    printf("%s: %d migration(s) applied, schema at %04d\n", gg_store_path(s), applied, gg_store_schema_version(s, &err));
    rc = GG_EXIT_OK;
out:
    if (gg_error_is_set(&err) && rc != GG_EXIT_OK) print_err("migrate", &err);
    gg_error_clear(&err);
    gg_store_close(s);
    gg_config_free(&c);
    return rc;
}
