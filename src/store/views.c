/* views.c — views of the tenant-wide MCP endpoint, per tenant and name (migration 0010).
 * Replacing a view is DELETE + INSERT in one transaction (no SQLite-only upsert); every
 * query is filtered by tenant; the per-tenant bound is checked inside the transaction.
 * Every change bumps the views generation in its transaction (NOTIFY on PostgreSQL), so
 * the other replicas tell their view clients. */
#include "store/store_internal.h"

#include <stdlib.h>
#include <string.h>

static const char SQL_COUNT[] = "SELECT count(*) FROM views WHERE tenant = ?1 AND name <> ?2";
static const char SQL_HAS[] = "SELECT count(*) FROM views WHERE tenant = ?1 AND name = ?2";
static const char SQL_DEL[] = "DELETE FROM views WHERE tenant = ?1 AND name = ?2";
static const char SQL_INS[] = "INSERT INTO views(tenant, name, definition, updated_at) VALUES (?1, ?2, ?3, ?4)";
static const char SQL_GET[] = "SELECT name, definition, updated_at FROM views WHERE tenant = ?1 AND name = ?2";
static const char SQL_LIST[] = "SELECT name, definition, updated_at FROM views WHERE tenant = ?1 ORDER BY name";

/* Run sql bound to (tenant, name): its single integer (count) into *out, or done. */
static bool exec_tenant_name(gg_store_conn *c, const char *sql, const char *tenant, const char *name, long long *out,
                             gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, sql, err);
    if (!st) return false;
    gg_db_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 2, name, -1, SQLITE_STATIC);
    int rc = gg_db_step(st);
    bool ok = out ? rc == SQLITE_ROW : rc == SQLITE_DONE;
    if (ok && out) *out = gg_db_column_int64(st, 0);
    gg_db_reset(st);
    if (!ok) gg_store_set_db_error(c, err, "views");
    return ok;
}

static bool put_conn(gg_store_conn *c, const char *tenant, const char *name, const char *text, long long now_ms,
                     int max_views, bool *created, gg_error *err) {
    long long others = 0, has = 0;
    if (!exec_tenant_name(c, SQL_COUNT, tenant, name, &others, err) || !exec_tenant_name(c, SQL_HAS, tenant, name, &has, err)) return false;
    if (!has && max_views > 0 && others >= max_views) {
        gg_error_set(err, "quota_exceeded", "tenant '%s' has %lld views (at most %d)", tenant, others, max_views);
        return false;
    }
    *created = !has;
    if (!exec_tenant_name(c, SQL_DEL, tenant, name, NULL, err)) return false;
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_INS, err);
    if (!st) return false;
    gg_db_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 2, name, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 3, text, -1, SQLITE_STATIC);
    gg_db_bind_int64(st, 4, now_ms);
    return gg_store_step_done(c, st, "views", err) && gg_store_bump_generation(c, GG_GEN_VIEWS, err);
}

typedef struct put_args {
    const char *tenant, *name, *text;
    int max_views;
    bool *created;
} put_args;

static bool put_tx(gg_store_conn *c, void *user, gg_error *err) {
    put_args *a = user;
    return put_conn(c, a->tenant, a->name, a->text, gg_wall_ms(), a->max_views, a->created, err);
}

bool gg_store_view_put(gg_store *s, const char *tenant, const char *name, json_t *definition, int max_views,
                       bool *created, gg_error *err) {
    char *text = json_dumps(definition, JSON_COMPACT);
    if (!text) {
        gg_error_set(err, "oom", "out of memory");
        return false;
    }
    put_args a = {tenant, name, text, max_views, created};
    bool ok = gg_store_write_tx(s, put_tx, &a, err);
    free(text);
    return ok;
}

static json_t *row_json(gg_db_stmt *st) {
    return json_pack("{s:s,s:o,s:o}", "name", (const char *)gg_db_column_text(st, 0), "definition",
                     gg_store_json_column(st, 1), "updated_at", gg_store_time_json(gg_db_column_int64(st, 2)));
}

/* Rows of sql for tenant (and name when not NULL): [{name, definition, updated_at}]. */
static json_t *query(gg_store *s, const char *sql, const char *tenant, const char *name, gg_error *err) {
    return gg_store_tenant_rows(s, sql, tenant, name, row_json, "views", err);
}

json_t *gg_store_view_get(gg_store *s, const char *tenant, const char *name, gg_error *err) {
    json_t *rows = query(s, SQL_GET, tenant, name, err);
    if (!rows) return NULL;
    json_t *one = json_incref(json_array_get(rows, 0));
    json_decref(rows);
    if (!one) gg_error_set(err, "not_found", "no view '%s' in tenant '%s'", name, tenant);
    return one;
}

json_t *gg_store_views_list(gg_store *s, const char *tenant, gg_error *err) { return query(s, SQL_LIST, tenant, NULL, err); }

static bool delete_tx(gg_store_conn *c, void *user, gg_error *err) {
    const char *const *tn = user;
    long long has = 0;
    if (!exec_tenant_name(c, SQL_HAS, tn[0], tn[1], &has, err)) return false;
    if (!has) {
        gg_error_set(err, "not_found", "no view '%s' in tenant '%s'", tn[1], tn[0]);
        return false;
    }
    return exec_tenant_name(c, SQL_DEL, tn[0], tn[1], NULL, err) && gg_store_bump_generation(c, GG_GEN_VIEWS, err);
}

bool gg_store_view_delete(gg_store *s, const char *tenant, const char *name, gg_error *err) {
    const char *tn[2] = {tenant, name};
    return gg_store_write_tx(s, delete_tx, tn, err);
}
