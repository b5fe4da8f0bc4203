/* catalogs.c — the cached tool catalogs of downstream MCP servers, per tenant and server
 * identity (migrations 0006, 0011). Replacing a catalog is DELETE + INSERT in one
 * transaction (no SQLite-only upsert), skipped when the stored text is the same (a sync
 * that finds nothing new writes nothing), and refused past the tenant's catalog quota;
 * every query filtered by tenant. */
#include "store/store_internal.h"

#include <stdlib.h>
#include <string.h>

#define COLS "server, identity, tools, tool_count, bytes, fetched_at"
/* 1 when the stored row is the same text under the same name, 0 when only the text is. */
static const char SQL_SAME[] =
    "SELECT CASE WHEN server = ?4 THEN 1 ELSE 0 END FROM downstream_catalogs"
    " WHERE tenant = ?1 AND identity = ?2 AND bytes = ?5 AND tools = ?3";
static const char SQL_RENAME[] = "UPDATE downstream_catalogs SET server = ?3 WHERE tenant = ?1 AND identity = ?2";
/* What the tenant's other catalogs hold (the row replaced and its legacy 0006 row aside). */
static const char SQL_OTHERS[] =
    "SELECT coalesce(sum(bytes), 0) FROM downstream_catalogs WHERE tenant = ?1 AND identity <> ?2 AND identity <> ?3";
static const char SQL_DEL[] = "DELETE FROM downstream_catalogs WHERE tenant = ?1 AND (identity = ?2 OR identity = ?3)";
static const char SQL_INS[] = "INSERT INTO downstream_catalogs(tenant, identity, server, tools, tool_count, bytes, fetched_at)"
                              " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
static const char SQL_GET_NAME[] = "SELECT " COLS " FROM downstream_catalogs WHERE tenant = ?1 AND server = ?2"
                                   " ORDER BY fetched_at DESC LIMIT 1";
static const char SQL_GET_ID[] = "SELECT " COLS " FROM downstream_catalogs WHERE tenant = ?1 AND identity = ?2";
static const char SQL_LIST[] = "SELECT " COLS " FROM downstream_catalogs WHERE tenant = ?1 ORDER BY server, identity";
static const char SQL_PAGE[] = "SELECT " COLS " FROM downstream_catalogs WHERE tenant = ?1 AND identity > ?2"
                               " ORDER BY identity LIMIT ?3";
static const char SQL_USAGE[] = "SELECT count(*), coalesce(sum(bytes), 0) FROM downstream_catalogs WHERE tenant = ?1";

typedef struct put_args {
    const gg_catalog_put *p;
    const char *text;
    size_t len;
    char legacy[160]; /* "name:<server>", the 0006 row this one replaces */
    int outcome;
} put_args;

/* SQL_SAME: -1 no such row, 0 same text under another name, 1 the same. -2 on error. */
static int same_row(gg_store_conn *c, put_args *a, gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_SAME, err);
    if (!st) return -2;
    gg_db_bind_text(st, 1, a->p->tenant, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 2, a->p->identity, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 3, a->text, (int)a->len, SQLITE_STATIC);
    gg_db_bind_text(st, 4, a->p->server, -1, SQLITE_STATIC);
    gg_db_bind_int64(st, 5, (long long)a->len);
    int rc = gg_db_step(st), same = rc == SQLITE_ROW ? gg_db_column_int(st, 0) : -1;
    gg_db_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        gg_store_set_db_error(c, err, "downstream_catalogs");
        return -2;
    }
    return same;
}

/* Whether the catalog fits the tenant's quota beside its other catalogs. */
static bool fits(gg_store_conn *c, put_args *a, gg_error *err) {
    if (a->p->max_tenant_bytes <= 0) return true;
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_OTHERS, err);
    if (!st) return false;
    gg_db_bind_text(st, 1, a->p->tenant, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 2, a->p->identity, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 3, a->legacy, -1, SQLITE_STATIC);
    int rc = gg_db_step(st);
    long long used = rc == SQLITE_ROW ? gg_db_column_int64(st, 0) : 0;
    gg_db_reset(st);
    if (rc != SQLITE_ROW) return gg_store_set_db_error(c, err, "downstream_catalogs"), false;
    if (used + (long long)a->len <= a->p->max_tenant_bytes) return true;
    gg_error_set(err, "quota_exceeded",
                 "tenant '%s' holds %lld bytes of downstream tool catalogs; the %zu-byte catalog of server '%s' would pass"
                 " its limit of %lld bytes (tenants.max_catalog_bytes)",
                 a->p->tenant, used, a->len, a->p->server, a->p->max_tenant_bytes);
    return false;
}

static bool replace_row(gg_store_conn *c, put_args *a, gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_DEL, err);
    if (!st) return false;
    gg_db_bind_text(st, 1, a->p->tenant, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 2, a->p->identity, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 3, a->legacy, -1, SQLITE_STATIC);
    if (!gg_store_step_done(c, st, "downstream_catalogs", err) || !(st = gg_store_conn_stmt(c, SQL_INS, err))) return false;
    gg_db_bind_text(st, 1, a->p->tenant, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 2, a->p->identity, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 3, a->p->server, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 4, a->text, (int)a->len, SQLITE_STATIC);
    gg_db_bind_int64(st, 5, (long long)json_array_size(a->p->tools));
    gg_db_bind_int64(st, 6, (long long)a->len);
    gg_db_bind_int64(st, 7, a->p->fetched_ms);
    return gg_store_step_done(c, st, "downstream_catalogs", err);
}

static bool rename_row(gg_store_conn *c, put_args *a, gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_RENAME, err);
    if (!st) return false;
    gg_db_bind_text(st, 1, a->p->tenant, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 2, a->p->identity, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 3, a->p->server, -1, SQLITE_STATIC);
    return gg_store_step_done(c, st, "downstream_catalogs", err);
}

static bool put_tx(gg_store_conn *c, void *user, gg_error *err) {
    put_args *a = user;
    int same = same_row(c, a, err);
    if (same == -2) return false;
    a->outcome = 0;
    if (same == 1) return true;
    if (same == 0) return rename_row(c, a, err);
    if (!fits(c, a, err) || !replace_row(c, a, err)) return false;
    a->outcome = 1;
    return true;
}

int gg_store_downstream_put(gg_store *s, const gg_catalog_put *p, gg_error *err) {
    char *text = json_dumps(p->tools, JSON_COMPACT);
    if (!text) {
        gg_error_set(err, "oom", "out of memory");
        return -1;
    }
    put_args a = {.p = p, .text = text, .len = strlen(text), .outcome = -1};
    snprintf(a.legacy, sizeof a.legacy, "name:%s", p->server);
    bool ok = a.len <= (size_t)0x7fffffff && gg_store_write_tx(s, put_tx, &a, err);
    if (!ok && !gg_error_is_set(err)) gg_error_set(err, "too_large", "a tool catalog over 2 GB");
    free(text);
    return ok ? a.outcome : -1;
}

/* The stored tools: they came from a downstream, so a string may hold NUL. */
static json_t *tools_column(gg_db_stmt *st, int col) {
    const char *t = (const char *)gg_db_column_text(st, col);
    json_t *v = t ? json_loads(t, JSON_ALLOW_NUL, NULL) : NULL;
    return json_is_array(v) ? v : (json_decref(v), json_array());
}

/* {server, identity, tools, tool_count, bytes, fetched_at (ISO), fetched_at_ms} of the current row. */
static json_t *row_json(gg_db_stmt *st) {
    long long at = gg_db_column_int64(st, 5);
    return json_pack("{s:s,s:s,s:o,s:I,s:I,s:o,s:I}", "server", (const char *)gg_db_column_text(st, 0), "identity",
                     (const char *)gg_db_column_text(st, 1), "tools", tools_column(st, 2), "tool_count",
                     (json_int_t)gg_db_column_int64(st, 3), "bytes", (json_int_t)gg_db_column_int64(st, 4), "fetched_at",
                     gg_store_time_json(at), "fetched_at_ms", (json_int_t)at);
}

/* The one row of sql bound to (tenant, key), or NULL + not_found. */
static json_t *one(gg_store *s, const char *sql, const char *tenant, const char *key, gg_error *err) {
    json_t *rows = gg_store_tenant_rows(s, sql, tenant, key, row_json, "downstream_catalogs", err);
    if (!rows) return NULL;
    json_t *row = json_incref(json_array_get(rows, 0));
    json_decref(rows);
    if (!row) gg_error_set(err, "not_found", "no tool catalog for server '%s' of tenant '%s' (run graphgate mcp sync)", key, tenant);
    return row;
}

json_t *gg_store_downstream_get(gg_store *s, const char *tenant, const char *server, gg_error *err) {
    return one(s, SQL_GET_NAME, tenant, server, err);
}

json_t *gg_store_downstream_get_identity(gg_store *s, const char *tenant, const char *identity, gg_error *err) {
    return one(s, SQL_GET_ID, tenant, identity, err);
}

json_t *gg_store_downstream_list(gg_store *s, const char *tenant, gg_error *err) {
    return gg_store_tenant_rows(s, SQL_LIST, tenant, NULL, row_json, "downstream_catalogs", err);
}

/* Rows of SQL_PAGE into arr until limit or max_bytes (after the first); *more when one
 * was left. SQLITE_DONE or the failing code. */
static int page_rows(gg_db_stmt *st, json_t *arr, int limit, long long max_bytes, bool *more) {
    long long bytes = 0;
    int rc;
    while ((rc = gg_db_step(st)) == SQLITE_ROW) {
        long long b = gg_db_column_int64(st, 4);
        if ((int)json_array_size(arr) == limit || (json_array_size(arr) && bytes + b > max_bytes)) {
            *more = true;
            return SQLITE_DONE;
        }
        json_t *o = row_json(st);
        if (!o || json_array_append_new(arr, o) != 0) return SQLITE_NOMEM;
        bytes += b;
    }
    return rc;
}

json_t *gg_store_downstream_page(gg_store *s, const char *tenant, const char *after, int limit, long long max_bytes,
                                 char **next, gg_error *err) {
    *next = NULL;
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return NULL;
    json_t *arr = json_array();
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_PAGE, err);
    int rc = SQLITE_ERROR;
    bool more = false;
    if (st) {
        gg_db_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
        gg_db_bind_text(st, 2, after ? after : "", -1, SQLITE_STATIC);
        gg_db_bind_int64(st, 3, limit + 1);
        rc = page_rows(st, arr, limit, max_bytes, &more);
        if (rc != SQLITE_DONE) gg_store_set_db_error(c, err, "downstream_catalogs");
        gg_db_reset(st);
    }
    gg_store_conn_release(s, c);
    if (rc != SQLITE_DONE) {
        json_decref(arr);
        return NULL;
    }
    json_t *last = json_array_get(arr, json_array_size(arr) - 1);
    if (more && last) *next = strdup(json_string_value(json_object_get(last, "identity")));
    return arr;
}

bool gg_store_downstream_usage(gg_store *s, const char *tenant, long long *count, long long *bytes, gg_error *err) {
    *count = *bytes = 0;
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return false;
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_USAGE, err);
    int rc = SQLITE_ERROR;
    if (st) {
        gg_db_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
        rc = gg_db_step(st);
        if (rc == SQLITE_ROW) {
            *count = gg_db_column_int64(st, 0);
            *bytes = gg_db_column_int64(st, 1);
        } else gg_store_set_db_error(c, err, "downstream_catalogs");
        gg_db_reset(st);
    }
    gg_store_conn_release(s, c);
    return rc == SQLITE_ROW;
}
