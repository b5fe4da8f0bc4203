/* downstream.c — the cached tool catalogs of downstream MCP servers, per tenant and server
 * name (migration 0006). Replacing a catalog is DELETE + INSERT in one transaction (no
 * SQLite-only upsert), every query filtered by tenant. */
#include "store/store_internal.h"

#include <stdlib.h>
#include <string.h>

static const char SQL_DEL[] = "DELETE FROM downstream_tools WHERE tenant = ?1 AND server = ?2";
static const char SQL_INS[] =
    "INSERT INTO downstream_tools(tenant, server, tools, tool_count, fetched_at) VALUES (?1, ?2, ?3, ?4, ?5)";
static const char SQL_GET[] =
    "SELECT server, tools, tool_count, fetched_at FROM downstream_tools WHERE tenant = ?1 AND server = ?2";
static const char SQL_LIST[] =
    "SELECT server, tools, tool_count, fetched_at FROM downstream_tools WHERE tenant = ?1 ORDER BY server";

static bool step_done(gg_store_conn *c, gg_db_stmt *st, gg_error *err) {
    int rc = gg_db_step(st);
    gg_db_reset(st);
    if (rc == SQLITE_DONE) return true;
    gg_store_set_db_error(c, err, "downstream_tools");
    return false;
}

static bool put_conn(gg_store_conn *c, const char *tenant, const char *server, const char *text, size_t count,
                     long long fetched_ms, gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_DEL, err);
    if (!st) return false;
    gg_db_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 2, server, -1, SQLITE_STATIC);
    if (!step_done(c, st, err) || !(st = gg_store_conn_stmt(c, SQL_INS, err))) return false;
    gg_db_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 2, server, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 3, text, -1, SQLITE_STATIC);
    gg_db_bind_int64(st, 4, (sqlite3_int64)count);
    gg_db_bind_int64(st, 5, fetched_ms);
    return step_done(c, st, err);
}

typedef struct put_args {
    const char *tenant, *server, *text;
    size_t count;
    long long fetched_ms;
} put_args;

static bool put_tx(gg_store_conn *c, void *user, gg_error *err) {
    put_args *a = user;
    return put_conn(c, a->tenant, a->server, a->text, a->count, a->fetched_ms, err);
}

bool gg_store_downstream_put(gg_store *s, const char *tenant, const char *server, json_t *tools, long long fetched_ms,
                             gg_error *err) {
    char *text = json_dumps(tools, JSON_COMPACT);
    if (!text) {
        gg_error_set(err, "oom", "out of memory");
        return false;
    }
    put_args a = {tenant, server, text, json_array_size(tools), fetched_ms};
    bool ok = gg_store_write_tx(s, put_tx, &a, err);
    free(text);
    return ok;
}

/* {server, tools, tool_count, fetched_at (ISO), fetched_at_ms} of the current row. */
static json_t *row_json(gg_db_stmt *st) {
    long long at = gg_db_column_int64(st, 3);
    return json_pack("{s:s,s:o,s:I,s:o,s:I}", "server", (const char *)gg_db_column_text(st, 0), "tools",
                     gg_store_json_column(st, 1), "tool_count", (json_int_t)gg_db_column_int64(st, 2), "fetched_at",
                     gg_store_time_json(at), "fetched_at_ms", (json_int_t)at);
}

/* Rows of sql for tenant (and server when not NULL) as an array. */
static json_t *query(gg_store *s, const char *sql, const char *tenant, const char *server, gg_error *err) {
    return gg_store_tenant_rows(s, sql, tenant, server, row_json, "downstream_tools", err);
}

json_t *gg_store_downstream_get(gg_store *s, const char *tenant, const char *server, gg_error *err) {
    json_t *rows = query(s, SQL_GET, tenant, server, err);
    if (!rows) return NULL;
    json_t *one = json_incref(json_array_get(rows, 0));
    json_decref(rows);
    if (!one) gg_error_set(err, "not_found", "no tool catalog for server '%s' of tenant '%s' (run graphgate mcp sync)",
                           server, tenant);
    return one;
}

json_t *gg_store_downstream_list(gg_store *s, const char *tenant, gg_error *err) {
    return query(s, SQL_LIST, tenant, NULL, err);
}
