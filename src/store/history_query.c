/* history_query.c — reading execution history, marking interrupted runs, retention. */
#include "store/store_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char SQL_MARK_INTERRUPTED[] =
    "UPDATE executions SET status = 'interrupted', finished_at = ?1,"
    " duration_ms = max(0, ?1 - started_at),"
    " error = coalesce(error, 'interrupted: graphgate stopped before the run finished')"
    " WHERE status = 'running'";
/* Deleting in slices keeps each write transaction short, so request-path readers and the
 * CLI are never held up by a big purge. */
static const char SQL_PRUNE_AGE[] =
    "DELETE FROM executions WHERE id IN"
    " (SELECT id FROM executions WHERE started_at < ?1 ORDER BY started_at LIMIT 2000)";
static const char SQL_NTH_NEWEST[] =
    "SELECT started_at FROM executions ORDER BY started_at DESC LIMIT 1 OFFSET ?1";

long long gg_store_executions_mark_interrupted_conn(gg_store_conn *c, gg_error *err) {
    sqlite3_stmt *st = gg_store_conn_stmt(c, SQL_MARK_INTERRUPTED, err);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, gg_wall_ms());
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) { gg_store_set_db_error(c, err, "executions"); return -1; }
    return sqlite3_changes(c->db);
}

long long gg_store_executions_mark_interrupted(gg_store *s, gg_error *err) {
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return -1;
    long long n = gg_store_executions_mark_interrupted_conn(c, err);
    gg_store_conn_release(s, c);
    return n;
}

static long long delete_before(gg_store_conn *c, long long cutoff, gg_error *err) {
    long long total = 0;
    for (;;) {
        sqlite3_stmt *st = gg_store_conn_stmt(c, SQL_PRUNE_AGE, err);
        if (!st) return -1;
        sqlite3_bind_int64(st, 1, cutoff);
        int rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE) { gg_store_set_db_error(c, err, "executions"); return -1; }
        int n = sqlite3_changes(c->db);
        total += n;
        if (n < 2000) return total;
    }
}

long long gg_store_executions_prune_conn(gg_store_conn *c, long long max_age_ms, long long max_count,
                                         gg_error *err) {
    long long total = 0;
    if (max_age_ms > 0) {
        long long n = delete_before(c, gg_wall_ms() - max_age_ms, err);
        if (n < 0) return -1;
        total += n;
    }
    if (max_count > 0) {
        sqlite3_stmt *st = gg_store_conn_stmt(c, SQL_NTH_NEWEST, err);
        if (!st) return -1;
        sqlite3_bind_int64(st, 1, max_count - 1);
        int rc = sqlite3_step(st);
        long long cutoff = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
        sqlite3_reset(st);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE) { gg_store_set_db_error(c, err, "executions"); return -1; }
        if (rc == SQLITE_ROW) {
            /* Keep the max_count newest (runs started in the same millisecond as the cutoff
             * are kept too). */
            long long n = delete_before(c, cutoff, err);
            if (n < 0) return -1;
            total += n;
        }
    }
    return total;
}

long long gg_store_executions_prune(gg_store *s, long long max_age_ms, long long max_count,
                                    gg_error *err) {
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return -1;
    long long n = gg_store_executions_prune_conn(c, max_age_ms, max_count, err);
    gg_store_conn_release(s, c);
    return n;
}

/* ---- listing ------------------------------------------------------------------------------ */

#define EXEC_COLUMNS \
    "id, tenant, graph, version, tool, key_id, status, started_at, finished_at, duration_ms, error"
#define EXEC_FILTERS \
    " AND (?2 IS NULL OR graph = ?2) AND (?3 IS NULL OR tool = ?3) AND (?4 IS NULL OR status = ?4)" \
    " AND started_at >= ?5 AND (?6 IS NULL OR started_at < ?6 OR (started_at = ?6 AND id < ?7))" \
    " ORDER BY started_at DESC, id DESC LIMIT ?8"
/* Two statements so the tenant one can walk the (tenant, started_at, id) index. */
static const char SQL_LIST_TENANT[] = "SELECT " EXEC_COLUMNS " FROM executions WHERE tenant = ?1" EXEC_FILTERS;
static const char SQL_LIST_ALL[] = "SELECT " EXEC_COLUMNS " FROM executions WHERE ?1 IS NULL" EXEC_FILTERS;
static const char SQL_GET[] =
    "SELECT " EXEC_COLUMNS ", arguments, result FROM executions WHERE id = ?1 AND (?2 IS NULL OR tenant = ?2)";
static const char SQL_NODES[] =
    "SELECT execution_index, node_id, node_type, started_at, finished_at, duration_ms, input, output, error"
    " FROM node_executions WHERE execution_id = ?1 ORDER BY execution_index";

static json_t *exec_row(sqlite3_stmt *st) {
    json_t *o = json_pack("{s:s,s:s,s:s,s:I,s:s,s:s?,s:s,s:o,s:o}",
                          "id", (const char *)sqlite3_column_text(st, 0),
                          "tenant", (const char *)sqlite3_column_text(st, 1),
                          "graph", (const char *)sqlite3_column_text(st, 2),
                          "version", (json_int_t)sqlite3_column_int64(st, 3),
                          "tool", (const char *)sqlite3_column_text(st, 4),
                          "key_id", (const char *)sqlite3_column_text(st, 5),
                          "status", (const char *)sqlite3_column_text(st, 6),
                          "started_at", gg_store_time_json(sqlite3_column_int64(st, 7)),
                          "finished_at", gg_store_time_json(sqlite3_column_int64(st, 8)));
    if (!o) return NULL;
    json_object_set_new(o, "duration_ms", sqlite3_column_type(st, 9) == SQLITE_NULL
                                              ? json_null() : json_real(sqlite3_column_double(st, 9)));
    json_object_set_new(o, "error", sqlite3_column_type(st, 10) == SQLITE_NULL
                                        ? json_null() : json_string((const char *)sqlite3_column_text(st, 10)));
    return o;
}

/* Cursor: "<started_ms>-<id>"; returns false when malformed. */
static bool parse_cursor(const char *cur, long long *ms, char id[33]) {
    const char *dash = strchr(cur, '-');
    if (!dash || dash == cur || dash - cur > 18 || strlen(dash + 1) != 32) return false;
    long long v = 0;
    for (const char *p = cur; p < dash; p++) {
        if (!isdigit((unsigned char)*p)) return false;
        v = v * 10 + (*p - '0');
    }
    for (const char *p = dash + 1; *p; p++)
        if (!isxdigit((unsigned char)*p)) return false;
    *ms = v;
    memcpy(id, dash + 1, 33);
    return true;
}

json_t *gg_store_executions_list(gg_store *s, const char *tenant, const gg_exec_filter *f,
                                 gg_error *err) {
    gg_exec_filter none = {0};
    if (!f) f = &none;
    int limit = f->limit <= 0 ? 50 : f->limit;
    if (limit > 1000) { gg_error_set(err, "invalid", "limit must be between 1 and 1000"); return NULL; }
    if (f->status && gg_exec_status_parse(f->status) < 0) {
        gg_error_set(err, "invalid", "status must be one of running, succeeded, failed, cancelled, interrupted");
        return NULL;
    }
    long long cur_ms = 0;
    char cur_id[33] = "";
    if (f->cursor && *f->cursor && !parse_cursor(f->cursor, &cur_ms, cur_id)) {
        gg_error_set(err, "invalid", "malformed cursor");
        return NULL;
    }
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return NULL;
    json_t *arr = json_array(), *res = NULL;
    sqlite3_stmt *st = arr ? gg_store_conn_stmt(c, tenant ? SQL_LIST_TENANT : SQL_LIST_ALL, err) : NULL;
    int rc = SQLITE_ERROR, n = 0;
    char next[64] = "";
    if (st) {
        gg_store_bind_text(st, 1, tenant);
        gg_store_bind_text(st, 2, f->graph);
        gg_store_bind_text(st, 3, f->tool);
        gg_store_bind_text(st, 4, f->status);
        sqlite3_bind_int64(st, 5, f->since_ms > 0 ? f->since_ms : 0);
        if (cur_id[0]) {
            sqlite3_bind_int64(st, 6, cur_ms);
            sqlite3_bind_text(st, 7, cur_id, -1, SQLITE_STATIC);
        }
        sqlite3_bind_int(st, 8, limit + 1); /* one more tells whether a next page exists */
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            if (n == limit) {
                rc = SQLITE_DONE;
                json_t *last = json_array_get(arr, (size_t)n - 1);
                snprintf(next, sizeof next, "%lld-%s", (long long)json_integer_value(json_object_get(last, "_ms")),
                         json_string_value(json_object_get(last, "id")));
                break;
            }
            json_t *o = exec_row(st);
            if (!o) { rc = SQLITE_NOMEM; break; }
            json_object_set_new(o, "_ms", json_integer(sqlite3_column_int64(st, 7)));
            if (json_array_append_new(arr, o) != 0) { rc = SQLITE_NOMEM; break; }
            n++;
        }
        if (rc != SQLITE_DONE) gg_store_set_db_error(c, err, "executions");
        sqlite3_reset(st);
    }
    gg_store_conn_release(s, c);
    if (rc != SQLITE_DONE) { json_decref(arr); return NULL; }
    size_t i;
    json_t *o;
    json_array_foreach(arr, i, o) json_object_del(o, "_ms");
    res = json_pack("{s:o,s:o}", "executions", arr, "next_cursor", next[0] ? json_string(next) : json_null());
    if (!res) gg_error_set(err, "oom", "out of memory");
    return res;
}

json_t *gg_store_execution_get(gg_store *s, const char *tenant, const char *id, gg_error *err) {
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return NULL;
    json_t *o = NULL;
    sqlite3_stmt *st = gg_store_conn_stmt(c, SQL_GET, err);
    if (st) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        gg_store_bind_text(st, 2, tenant);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            o = exec_row(st);
            if (o) {
                json_object_set_new(o, "arguments", gg_store_json_column(st, 11));
                json_object_set_new(o, "result", gg_store_json_column(st, 12));
            } else {
                gg_error_set(err, "oom", "out of memory");
            }
        } else if (rc == SQLITE_DONE) {
            gg_error_set(err, "not_found", "execution '%s' not found", id);
        } else {
            gg_store_set_db_error(c, err, "executions");
        }
        sqlite3_reset(st);
    }
    json_t *nodes = o ? json_array() : NULL;
    if (nodes && (st = gg_store_conn_stmt(c, SQL_NODES, err)) != NULL) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            json_t *n = json_pack("{s:i,s:s,s:s,s:o,s:o,s:f,s:o,s:o,s:o}",
                                  "index", sqlite3_column_int(st, 0),
                                  "node_id", (const char *)sqlite3_column_text(st, 1),
                                  "node_type", (const char *)sqlite3_column_text(st, 2),
                                  "started_at", gg_store_time_json(sqlite3_column_int64(st, 3)),
                                  "finished_at", gg_store_time_json(sqlite3_column_int64(st, 4)),
                                  "duration_ms", sqlite3_column_double(st, 5),
                                  "input", gg_store_json_column(st, 6),
                                  "output", gg_store_json_column(st, 7),
                                  "error", sqlite3_column_type(st, 8) == SQLITE_NULL
                                               ? json_null() : json_string((const char *)sqlite3_column_text(st, 8)));
            if (!n || json_array_append_new(nodes, n) != 0) { rc = SQLITE_NOMEM; break; }
        }
        if (rc != SQLITE_DONE) {
            gg_store_set_db_error(c, err, "node_executions");
            json_decref(nodes);
            nodes = NULL;
        }
        sqlite3_reset(st);
    }
    gg_store_conn_release(s, c);
    if (o && !nodes) {
        if (!gg_error_is_set(err)) gg_error_set(err, "oom", "out of memory");
        json_decref(o);
        return NULL;
    }
    if (o) json_object_set_new(o, "nodes", nodes);
    return o;
}
