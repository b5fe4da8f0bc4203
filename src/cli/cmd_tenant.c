/* cmd_tenant.c — `graphgate tenant create|list|delete`. */
#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth.h"
#include "store/store.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: graphgate tenant create NAME [--db PATH] [--config FILE]\n"
            "       graphgate tenant list [--json] [--db PATH] [--config FILE]\n"
            "       graphgate tenant delete NAME [--db PATH] [--config FILE]\n"
            "\n"
            "Manage tenants. Names: lowercase a-z, 0-9 and '-', 1 to 63 characters; tools, nodes,\n"
            "invoke, health, internal and admin are reserved. Deleting a tenant removes its keys,\n"
            "graphs and execution history (the audit log keeps its entries).\n");
}

static int fail(const char *what, gg_error *err) {
    char buf[1024];
    gg_error_format(err, buf, sizeof buf);
    fprintf(stderr, "graphgate tenant %s: %s\n", what, buf);
    int rc = strcmp(err->code, "not_found") == 0 || strcmp(err->code, "conflict") == 0 ||
                     strcmp(err->code, "invalid_name") == 0
                 ? GG_EXIT_USAGE
                 : GG_EXIT_FAIL;
    gg_error_clear(err);
    return rc;
}

static int run(gg_store *s, int n, char **rest) {
    gg_error err = GG_ERROR_INIT;
    const char *sub = rest[1];
    if (strcmp(sub, "list") == 0) {
        bool as_json = n == 3 && strcmp(rest[2], "--json") == 0;
        if (n > 2 && !as_json) { usage(stderr); return GG_EXIT_USAGE; }
        json_t *list = gg_store_tenants_list(s, &err);
        if (!list) return fail("list", &err);
        if (as_json) {
            gg_cli_print_json(stdout, list, 2);
        } else {
            printf("%-32s %-26s %6s %7s\n", "NAME", "CREATED", "KEYS", "GRAPHS");
            size_t i;
            json_t *t;
            json_array_foreach(list, i, t) {
                printf("%-32s %-26s %6lld %7lld\n", json_string_value(json_object_get(t, "name")),
                       json_string_value(json_object_get(t, "created_at")),
                       (long long)json_integer_value(json_object_get(t, "keys")),
                       (long long)json_integer_value(json_object_get(t, "graphs")));
            }
        }
        json_decref(list);
        return GG_EXIT_OK;
    }
    if (n != 3) { usage(stderr); return GG_EXIT_USAGE; }
    const char *name = rest[2];
    if (strcmp(sub, "create") == 0) {
        if (!gg_auth_valid_name(name, "tenant", &err)) return fail("create", &err);
        if (!gg_store_tenant_create(s, name, &err)) return fail("create", &err);
        gg_store_audit_append(s, "cli", name, "tenant.create", name, NULL, NULL);
        printf("tenant %s created\n", name);
        return GG_EXIT_OK;
    }
    if (strcmp(sub, "delete") == 0) {
        if (!gg_store_tenant_delete(s, name, &err)) return fail("delete", &err);
        gg_store_audit_append(s, "cli", name, "tenant.delete", name, NULL, NULL);
        printf("tenant %s deleted\n", name);
        return GG_EXIT_OK;
    }
    fprintf(stderr, "graphgate tenant: unknown subcommand '%s'\n", sub);
    usage(stderr);
    return GG_EXIT_USAGE;
}

int gg_cmd_tenant(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) { usage(stdout); return GG_EXIT_OK; }
    }
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    if (!rest) return GG_EXIT_FAIL;
    gg_config c;
    int n = 0, rc = gg_cli_load_config(&c, argc, argv, "tenant", rest, &n);
    if (rc != GG_EXIT_OK) { free(rest); return rc; }
    if (n < 2) {
        usage(stderr);
        rc = GG_EXIT_USAGE;
    } else if (strcmp(rest[1], "list") && strcmp(rest[1], "create") && strcmp(rest[1], "delete")) {
        fprintf(stderr, "graphgate tenant: unknown subcommand '%s'\n", rest[1]);
        usage(stderr);
        rc = GG_EXIT_USAGE;
    } else {
        gg_store *s = strcmp(rest[1], "create") == 0 ? gg_cli_open_store_create(&c, "tenant", &rc)
                                                     : gg_cli_open_store(&c, "tenant", &rc);
        if (s) {
            rc = run(s, n, rest);
            gg_store_close(s);
        }
    }
    free(rest);
    gg_config_free(&c);
    return rc;
}
