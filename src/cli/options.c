/* options.c — the store options every store-touching command accepts (--config, --db,
 * --database-url, --migrations) and opening the store they name. */
#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store.h"

/* ---- the common store options of CLI commands ------------------------------------------- */

/* Match "--name VALUE" or "--name=VALUE"; advances *i past a separate value. */
static int take_opt(int argc, char **argv, int *i, const char *name, const char **value) {
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0) return 0;
    if (argv[*i][n] == '=') { *value = argv[*i] + n + 1; return 1; }
    if (argv[*i][n] != '\0') return 0;
    if (*i + 1 >= argc) return -1;
    *value = argv[++*i];
    return 1;
}

int gg_cli_load_config(gg_config *c, int argc, char **argv, const char *cmd, char **rest,
                       int *n_rest) {
    const char *config = NULL, *db = NULL, *migrations = NULL, *db_url = NULL;
    int nr = 0;
    for (int i = 0; i < argc; i++) {
        const char *v = NULL;
        int r;
        if (i > 0 && strcmp(argv[i], "--") == 0) {
            while (i < argc) rest[nr++] = argv[i++];
            break;
        }
        static const char *const names[] = {"--config", "--db", "--migrations", "--database-url"};
        const char **slots[] = {&config, &db, &migrations, &db_url};
        bool taken = false;
        for (int k = 0; i > 0 && k < 4 && !taken; k++) {
            const char *opt = argv[i];
            if ((r = take_opt(argc, argv, &i, names[k], &v)) < 0) {
                fprintf(stderr, "graphgate %s: %s needs a value\n", cmd, opt);
                return GG_EXIT_USAGE;
            }
            if (r > 0) { *slots[k] = v; taken = true; }
        }
        if (taken) continue;
        rest[nr++] = argv[i];
    }
    *n_rest = nr;
    gg_error err = GG_ERROR_INIT;
    bool ok = gg_config_load(c, config, &err);
    if (ok && db) ok = gg_config_set(c, "database.path", db, &err);
    if (ok && migrations) ok = gg_config_set(c, "database.migrations_dir", migrations, &err);
    if (ok && db_url) ok = gg_config_set(c, "database.url", db_url, &err);
    if (ok) ok = gg_config_validate(c, &err);
    if (!ok) {
        char buf[1024];
        gg_error_format(&err, buf, sizeof buf);
        fprintf(stderr, "graphgate %s: %s\n", cmd, buf);
        gg_error_clear(&err);
        gg_config_free(c);
        return GG_EXIT_USAGE;
    }
    return GG_EXIT_OK;
}
