/* oauth.c — a tenant's OAuth authorization servers (migration 0014): one JSON definition
 * per tenant, replaced as DELETE + INSERT in one transaction (portable SQL, no upsert);
 * every change bumps the oauth generation in its transaction (NOTIFY on PostgreSQL), so
 * every replica drops its copy and a removed issuer stops being accepted everywhere. */
#include "store/store_internal.h"

#include <stdlib.h>
#include <string.h>

static const char SQL_HAS[] = "SELECT count(*) FROM tenant_oauth WHERE tenant = ?1";
static const char SQL_DEL[] = "DELETE FROM tenant_oauth WHERE tenant = ?1";
static const char SQL_INS[] = "INSERT INTO tenant_oauth(tenant, definition, updated_at) VALUES (?1, ?2, ?3)";
static const char SQL_GET[] = "SELECT definition, updated_at FROM tenant_oauth WHERE tenant = ?1";

/* Run sql bound to tenant: its single integer into *out, or done. */
static bool run1(gg_store_conn *c, const char *sql, const char *tenant, long long *out, gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, sql, err);
    if (!st) return false;
    gg_db_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
    int rc = gg_db_step(st);
    bool ok = out ? rc == SQLITE_ROW : rc == SQLITE_DONE;
    if (ok && out) *out = gg_db_column_int64(st, 0);
    gg_db_reset(st);
    if (!ok) gg_store_set_db_error(c, err, "tenant_oauth");
    return ok;
}

typedef struct put_args {
    const char *tenant, *text;
} put_args;

static bool put_tx(gg_store_conn *c, void *user, gg_error *err) {
    put_args *a = user;
    if (!run1(c, SQL_DEL, a->tenant, NULL, err)) return false;
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_INS, err);
    if (!st) return false;
    gg_db_bind_text(st, 1, a->tenant, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 2, a->text, -1, SQLITE_STATIC);
    gg_db_bind_int64(st, 3, gg_wall_ms());
    if (!gg_store_step_done(c, st, "tenant_oauth", err)) {
        /* the only constraint an insert after the delete can break: no such tenant */
        if (strcmp(err->code, "conflict") == 0) {
            gg_error_clear(err);
            gg_error_set(err, "not_found", "no tenant '%s'", a->tenant);
        }
        return false;
    }
    return gg_store_bump_generation(c, GG_GEN_OAUTH, err);
}

bool gg_store_oauth_put(gg_store *s, const char *tenant, json_t *definition, gg_error *err) {
    char *text = json_dumps(definition, JSON_COMPACT);
    if (!text) {
        gg_error_set(err, "oom", "out of memory");
        return false;
    }
    put_args a = {tenant, text};
    bool ok = gg_store_write_tx(s, put_tx, &a, err);
    free(text);
    return ok;
}

static json_t *row_json(gg_db_stmt *st) {
    return json_pack("{s:o,s:o}", "definition", gg_store_json_column(st, 0), "updated_at",
                     gg_store_time_json(gg_db_column_int64(st, 1)));
}

json_t *gg_store_oauth_get(gg_store *s, const char *tenant, gg_error *err) {
    json_t *rows = gg_store_tenant_rows(s, SQL_GET, tenant, NULL, row_json, "tenant_oauth", err);
    if (!rows) return NULL;
    json_t *one = json_incref(json_array_get(rows, 0));
    json_decref(rows);
    if (!one) gg_error_set(err, "not_found", "tenant '%s' has no authorization servers", tenant);
    return one;
}

static bool delete_tx(gg_store_conn *c, void *user, gg_error *err) {
    const char *tenant = user;
    long long has = 0;
    if (!run1(c, SQL_HAS, tenant, &has, err)) return false;
    if (!has) {
        gg_error_set(err, "not_found", "tenant '%s' has no authorization servers", tenant);
        return false;
    }
    return run1(c, SQL_DEL, tenant, NULL, err) && gg_store_bump_generation(c, GG_GEN_OAUTH, err);
}

bool gg_store_oauth_delete(gg_store *s, const char *tenant, gg_error *err) {
    return gg_store_write_tx(s, delete_tx, (void *)tenant, err);
}
