/* cmd_secret.c — `graphgate secret set|list|delete|rekey`: a tenant's secrets in the store,
 * sealed under the configured master key (secrets.key / secrets.key_file, or
 * GRAPHGATE_SECRETS_KEY / GRAPHGATE_SECRETS_KEY_FILE). A value is read from standard input
 * or --value-file, never from the command line (argv is visible to every local user). */
#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth.h"
#include "store/store.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: graphgate secret set TENANT NAME [--value-file FILE] [--db PATH] [--config FILE]\n"
            "       graphgate secret list TENANT [--json] [--db PATH] [--config FILE]\n"
            "       graphgate secret delete TENANT NAME [--db PATH] [--config FILE]\n"
            "       graphgate secret rekey --new-key-file FILE [--db PATH] [--config FILE]\n"
            "\n"
            "Manage a tenant's secrets, which graphs reference as ${secrets.NAME} in mcpServers\n"
            "url, headers and env values. set reads the value from standard input (one trailing\n"
            "newline dropped) or from --value-file; values are never printed. NAME:\n"
            "[A-Za-z_][A-Za-z0-9_]{0,63}; a value is 1 to 16384 bytes. The master key comes from\n"
            "secrets.key_file or secrets.key (GRAPHGATE_SECRETS_KEY_FILE, GRAPHGATE_SECRETS_KEY).\n"
            "rekey re-encrypts every secret of every tenant under the key in FILE, in one\n"
            "transaction; then configure that key and restart the servers.\n");
}

static int fail(const char *what, gg_error *err) {
    char buf[1024];
    gg_error_format(err, buf, sizeof buf);
    fprintf(stderr, "graphgate secret %s: %s\n", what, buf);
    int rc = strcmp(err->code, "not_found") == 0 || strcmp(err->code, "invalid_name") == 0 ||
                     strcmp(err->code, "too_large") == 0 || strcmp(err->code, "invalid_config") == 0
                 ? GG_EXIT_USAGE
                 : GG_EXIT_FAIL;
    gg_error_clear(err);
    return rc;
}

/* The configured master key; false + err when none is configured or it is malformed. */
static bool config_key(const gg_config *c, gg_store_vault *v, gg_error *err) {
    if (c->secrets_key && *c->secrets_key) return gg_store_vault_init(v, c->secrets_key, err);
    if (c->secrets_key_file && *c->secrets_key_file) return gg_store_vault_load_file(v, c->secrets_key_file, err);
    gg_error_set(err, "invalid_config",
                 "no secrets key is configured (secrets.key_file, GRAPHGATE_SECRETS_KEY_FILE or GRAPHGATE_SECRETS_KEY)");
    return false;
}

/* All of f (at most the value limit + 2 bytes) into a malloc'd buffer; NULL + err. */
static char *read_value(FILE *f, size_t *len, gg_error *err) {
    size_t cap = GG_STORE_SECRET_VALUE_MAX + 2;
    char *buf = malloc(cap + 1);
    if (!buf) return gg_error_set(err, "oom", "out of memory"), NULL;
    size_t n = fread(buf, 1, cap, f);
    buf[n] = '\0';
    if (n && buf[n - 1] == '\n') buf[--n] = '\0';
    if (n && buf[n - 1] == '\r') buf[--n] = '\0';
    if (n > GG_STORE_SECRET_VALUE_MAX) gg_error_set(err, "too_large", "a secret value is at most %d bytes", GG_STORE_SECRET_VALUE_MAX);
    else if (n == 0 || strlen(buf) != n) gg_error_set(err, "invalid_argument", "the value must be 1 or more bytes, without NUL");
    if (gg_error_is_set(err)) {
        gg_store_secret_free(buf, cap + 1);
        return NULL;
    }
    *len = n;
    return buf;
}

static int do_set(gg_store *s, const gg_config *c, const char *tenant, const char *name, const char *file) {
    gg_error err = GG_ERROR_INIT;
    gg_store_vault v;
    if (!gg_store_secret_name_ok(name)) {
        gg_error_set(&err, "invalid_name", "a secret name is [A-Za-z_][A-Za-z0-9_]{0,63}");
        return fail("set", &err);
    }
    if (!config_key(c, &v, &err)) return fail("set", &err);
    FILE *f = file ? fopen(file, "rb") : stdin;
    if (!f) {
        gg_store_vault_wipe(&v);
        gg_error_set(&err, "not_found", "cannot read %s", file);
        return fail("set", &err);
    }
    size_t len = 0;
    char *value = read_value(f, &len, &err);
    if (file) fclose(f);
    int created = value ? gg_store_secret_put(s, &v, tenant, name, value, len, &err) : -1;
    gg_store_secret_free(value, len);
    gg_store_vault_wipe(&v);
    if (created < 0) return fail("set", &err);
    gg_store_audit_append(s, "cli", tenant, created ? "secret.create" : "secret.update", name, NULL, NULL);
    printf("secret %s of tenant %s %s\n", name, tenant, created ? "created" : "updated");
    return GG_EXIT_OK;
}

static int do_list(gg_store *s, const char *tenant, bool as_json) {
    gg_error err = GG_ERROR_INIT;
    if (!gg_store_tenant_exists(s, tenant, &err)) {
        if (!gg_error_is_set(&err)) gg_error_set(&err, "not_found", "no tenant %s", tenant);
        return fail("list", &err);
    }
    json_t *list = gg_store_secrets_list(s, tenant, &err);
    if (!list) return fail("list", &err);
    if (as_json) gg_cli_print_json(stdout, list, 2);
    else {
        printf("%-32s %-16s %-24s %-24s\n", "NAME", "FINGERPRINT", "UPDATED", "LAST USED");
        size_t i;
        json_t *e;
        json_array_foreach(list, i, e) {
            const char *used = json_string_value(json_object_get(e, "last_used"));
            printf("%-32s %-16s %-24s %-24s\n", json_string_value(json_object_get(e, "name")),
                   json_string_value(json_object_get(e, "fingerprint")),
                   json_string_value(json_object_get(e, "updated")), used ? used : "-");
        }
    }
    json_decref(list);
    return GG_EXIT_OK;
}

static int do_rekey(gg_store *s, const gg_config *c, const char *file) {
    gg_error err = GG_ERROR_INIT;
    gg_store_vault old, nk;
    if (!config_key(c, &old, &err)) return fail("rekey", &err);
    if (!gg_store_vault_load_file(&nk, file, &err)) {
        gg_store_vault_wipe(&old);
        return fail("rekey", &err);
    }
    long long n = gg_store_secrets_rekey(s, &old, &nk, &err);
    /* per-user grants of downstream servers are sealed with the same key */
    long long g = n < 0 ? -1 : gg_store_user_grants_rekey(s, &old, &nk, &err);
    char id[GG_STORE_VAULT_ID_LEN + 1];
    memcpy(id, nk.key_id, sizeof id);
    gg_store_vault_wipe(&old);
    gg_store_vault_wipe(&nk);
    if (n < 0 || g < 0) return fail("rekey", &err);
    json_t *details = json_pack("{s:I, s:I}", "secrets", (json_int_t)n, "user_grants", (json_int_t)g); /* borrowed */
    gg_store_audit_append(s, "cli", NULL, "secret.rekey", id, details, NULL);
    json_decref(details);
    printf("%lld secret(s) and %lld per-user grant(s) re-encrypted under key %s; configure that key and restart the "
           "servers\n", n, g, id);
    return GG_EXIT_OK;
}

/* Arguments after the subcommand: positional ones into pos (at most 2), --value-file,
 * --new-key-file and --json taken out. False on anything else. */
typedef struct args {
    const char *pos[2];
    int npos;
    const char *value_file, *new_key_file;
    bool json;
} args;

static bool parse(int n, char **rest, args *a) {
    memset(a, 0, sizeof *a);
    for (int i = 2; i < n; i++) {
        if (!strcmp(rest[i], "--json")) a->json = true;
        else if (!strcmp(rest[i], "--value-file") && i + 1 < n) a->value_file = rest[++i];
        else if (!strncmp(rest[i], "--value-file=", 13)) a->value_file = rest[i] + 13;
        else if (!strcmp(rest[i], "--new-key-file") && i + 1 < n) a->new_key_file = rest[++i];
        else if (!strncmp(rest[i], "--new-key-file=", 15)) a->new_key_file = rest[i] + 15;
        else if (rest[i][0] == '-' || a->npos == 2) return false;
        else a->pos[a->npos++] = rest[i];
    }
    return true;
}

static int run(gg_store *s, const gg_config *c, const char *sub, const args *a) {
    if (!strcmp(sub, "set") && a->npos == 2 && !a->new_key_file && !a->json) return do_set(s, c, a->pos[0], a->pos[1], a->value_file);
    if (!strcmp(sub, "list") && a->npos == 1 && !a->value_file && !a->new_key_file) return do_list(s, a->pos[0], a->json);
    if (!strcmp(sub, "delete") && a->npos == 2 && !a->value_file && !a->new_key_file && !a->json) {
        gg_error err = GG_ERROR_INIT;
        if (!gg_store_secret_delete(s, a->pos[0], a->pos[1], &err)) return fail("delete", &err);
        gg_store_audit_append(s, "cli", a->pos[0], "secret.delete", a->pos[1], NULL, NULL);
        printf("secret %s of tenant %s deleted\n", a->pos[1], a->pos[0]);
        return GG_EXIT_OK;
    }
    if (!strcmp(sub, "rekey") && a->npos == 0 && a->new_key_file && !a->value_file && !a->json) return do_rekey(s, c, a->new_key_file);
    usage(stderr);
    return GG_EXIT_USAGE;
}

int gg_cmd_secret(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return GG_EXIT_OK;
        }
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    if (!rest) return GG_EXIT_FAIL;
    gg_config c;
    int n = 0, rc = gg_cli_load_config(&c, argc, argv, "secret", rest, &n);
    if (rc != GG_EXIT_OK) {
        free(rest);
        return rc;
    }
    args a;
    if (n < 2 || (strcmp(rest[1], "set") && strcmp(rest[1], "list") && strcmp(rest[1], "delete") &&
                  strcmp(rest[1], "rekey")) || !parse(n, rest, &a)) {
        if (n >= 2) fprintf(stderr, "graphgate secret: bad arguments for '%s'\n", rest[1]);
        usage(stderr);
        rc = GG_EXIT_USAGE;
    } else {
        gg_store *s = gg_cli_open_store(&c, "secret", &rc);
        if (s) {
            rc = run(s, &c, rest[1], &a);
            gg_store_close(s);
        }
    }
    free(rest);
    gg_config_free(&c);
    return rc;
}
