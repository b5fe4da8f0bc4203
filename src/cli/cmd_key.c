/* cmd_key.c — `graphgate key create|list|revoke`. */
#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth.h"
#include "store/store.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: graphgate key create --tenant T --scopes s1,s2 [--name LABEL] [--db PATH] [--config FILE]\n"
            "       graphgate key list [--tenant T] [--json] [--db PATH] [--config FILE]\n"
            "       graphgate key revoke ID [--db PATH] [--config FILE]\n"
            "\n"
            "Manage API keys. Scopes: tools:read, tools:execute, health:check, graphs:write, admin.\n"
            "`key create` prints the key (gg_<id>_<secret>) once, alone on its line, on stdout;\n"
            "only a hash of it is stored. A revoked key stops working within about a second, also\n"
            "for a running `graphgate serve`.\n");
}

static int fail(const char *what, gg_error *err) {
    char buf[1024];
    gg_error_format(err, buf, sizeof buf);
    fprintf(stderr, "graphgate key %s: %s\n", what, buf);
    int rc = strcmp(err->code, "not_found") == 0 || strcmp(err->code, "invalid_scope") == 0 ||
                     strcmp(err->code, "invalid") == 0
                 ? GG_EXIT_USAGE
                 : GG_EXIT_FAIL;
    gg_error_clear(err);
    return rc;
}

/* Options of a subcommand: --tenant, --scopes, --name, --json; positional → *pos. */
typedef struct key_opts {
    const char *tenant, *scopes, *name, *pos;
    bool json;
} key_opts;

static bool parse_opts(int n, char **rest, key_opts *o) {
    memset(o, 0, sizeof *o);
    for (int i = 2; i < n; i++) {
        const char *a = rest[i];
        const char **slot = NULL;
        const char *names[] = {"--tenant", "--scopes", "--name"};
        const char **slots[] = {&o->tenant, &o->scopes, &o->name};
        for (int k = 0; k < 3 && !slot; k++) {
            size_t len = strlen(names[k]);
            if (strncmp(a, names[k], len) == 0 && a[len] == '=') { *slots[k] = a + len + 1; slot = slots[k]; }
            else if (strcmp(a, names[k]) == 0) {
                if (i + 1 >= n) { fprintf(stderr, "graphgate key: %s needs a value\n", a); return false; }
                *slots[k] = rest[++i];
                slot = slots[k];
            }
        }
        if (slot) continue;
        if (strcmp(a, "--json") == 0) { o->json = true; continue; }
        if (a[0] == '-' || o->pos) { fprintf(stderr, "graphgate key: unexpected argument '%s'\n", a); return false; }
        o->pos = a;
    }
    return true;
}

static int cmd_create(gg_store *s, const key_opts *o) {
    gg_error err = GG_ERROR_INIT;
    if (!o->tenant || !o->scopes || o->pos || o->json) {
        fprintf(stderr, "graphgate key create: --tenant and --scopes are required\n");
        usage(stderr);
        return GG_EXIT_USAGE;
    }
    unsigned scopes = gg_scopes_parse(o->scopes, &err);
    if (!scopes) return fail("create", &err);
    gg_auth *a = gg_auth_new(s, NULL, &err);
    if (!a) return fail("create", &err);
    char *key = NULL, id[GG_KEY_ID_LEN + 1];
    bool ok = gg_auth_create_key(a, o->tenant, scopes, o->name, &key, id, &err);
    gg_auth_free(a);
    if (!ok) return fail("create", &err);
    char scopes_text[160];
    gg_scopes_format(scopes, scopes_text, sizeof scopes_text);
    json_t *details = json_pack("{s:s,s:s}", "scopes", scopes_text, "name", o->name ? o->name : "");
    gg_store_audit_append(s, "cli", o->tenant, "key.create", id, details, NULL);
    json_decref(details);
    /* The key alone on stdout (scripts capture it); the rest on stderr. */
    fprintf(stderr, "key %s created for tenant %s with scopes %s; store it now, it is not shown again:\n", id,
            o->tenant, scopes_text);
    printf("%s\n", key);
    fflush(stdout);
    gg_auth_free_secret(key);
    return GG_EXIT_OK;
}

static int cmd_list(gg_store *s, const key_opts *o) {
    gg_error err = GG_ERROR_INIT;
    if (o->scopes || o->name || o->pos) { usage(stderr); return GG_EXIT_USAGE; }
    json_t *list = gg_store_keys_list(s, o->tenant, &err);
    if (!list) return fail("list", &err);
    if (o->json) {
        gg_cli_print_json(stdout, list, 2);
    } else {
        printf("%-16s %-20s %-20s %-8s %-24s %s\n", "ID", "TENANT", "NAME", "STATUS", "LAST USED", "SCOPES");
        size_t i;
        json_t *k;
        json_array_foreach(list, i, k) {
            gg_strbuf sc = GG_STRBUF_INIT;
            size_t j;
            json_t *v;
            json_array_foreach(json_object_get(k, "scopes"), j, v) gg_strbuf_printf(&sc, "%s%s", j ? "," : "", json_string_value(v));
            const char *last = json_string_value(json_object_get(k, "last_used_at"));
            printf("%-16s %-20s %-20s %-8s %-24s %s\n", json_string_value(json_object_get(k, "id")),
                   json_string_value(json_object_get(k, "tenant")), json_string_value(json_object_get(k, "name")),
                   json_is_true(json_object_get(k, "revoked")) ? "revoked" : "active", last ? last : "never",
                   sc.data ? sc.data : "");
            gg_strbuf_free(&sc);
        }
    }
    json_decref(list);
    return GG_EXIT_OK;
}

static int cmd_revoke(gg_store *s, const key_opts *o) {
    gg_error err = GG_ERROR_INIT;
    if (!o->pos || o->scopes || o->name || o->json) {
        fprintf(stderr, "graphgate key revoke: the key id is required\n");
        usage(stderr);
        return GG_EXIT_USAGE;
    }
    /* Accept the full key text too, taking its id. */
    char id[GG_KEY_ID_LEN + 1];
    const char *secret;
    size_t slen;
    const char *target = gg_auth_parse_key(o->pos, strlen(o->pos), id, &secret, &slen) ? id : o->pos;
    if (!gg_store_key_revoke(s, target, o->tenant, &err)) return fail("revoke", &err);
    gg_store_audit_append(s, "cli", o->tenant, "key.revoke", target, NULL, NULL);
    printf("key %s revoked\n", target);
    return GG_EXIT_OK;
}

int gg_cmd_key(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) { usage(stdout); return GG_EXIT_OK; }
    }
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    if (!rest) return GG_EXIT_FAIL;
    gg_config c;
    int n = 0, rc = gg_cli_load_config(&c, argc, argv, "key", rest, &n);
    if (rc != GG_EXIT_OK) { free(rest); return rc; }
    key_opts o;
    int (*fn)(gg_store *, const key_opts *) = NULL;
    if (n >= 2) {
        if (strcmp(rest[1], "create") == 0) fn = cmd_create;
        else if (strcmp(rest[1], "list") == 0) fn = cmd_list;
        else if (strcmp(rest[1], "revoke") == 0) fn = cmd_revoke;
    }
    if (!fn) {
        if (n >= 2) fprintf(stderr, "graphgate key: unknown subcommand '%s'\n", rest[1]);
        usage(stderr);
        rc = GG_EXIT_USAGE;
    } else if (!parse_opts(n, rest, &o)) {
        usage(stderr);
        rc = GG_EXIT_USAGE;
    } else {
        gg_store *s = gg_cli_open_store(&c, "key", &rc);
        if (s) {
            rc = fn(s, &o);
            gg_store_close(s);
        }
    }
    free(rest);
    gg_config_free(&c);
    return rc;
}
