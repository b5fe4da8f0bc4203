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
/* PostgreSQL: replicas share the table; a replica marks only the runs it recorded itself. */
static const char SQL_MARK_INTERRUPTED_PG[] =
    "UPDATE executions SET status = 'interrupted', finished_at = ?1,"
    " duration_ms = max(0, ?1 - started_at),"
    " error = coalesce(error, 'interrupted: graphgate stopped before the run finished')"
    " WHERE status = 'running' AND replica IS NOT DISTINCT FROM current_setting('graphgate.replica', true)";
/* Retention deletes in slices, which keeps each write transaction short, so request-path
 * readers and the CLI are never held up by a big purge. Since 0003 there is no index on
 * started_at alone (it cost every run an insert): the age cut walks each tenant's range
 * of executions_tenant_started (tenants found by skipping through that index), the count
 * cut the primary key — ids are time-ordered, their time being the run's start. */
static const char SQL_FIRST_TENANT[] = "SELECT min(tenant) FROM executions";
static const char SQL_NEXT_TENANT[] = "SELECT min(tenant) FROM executions WHERE tenant > ?1";
#define SLICE_AGE "SELECT rowid FROM executions WHERE tenant = ?1 AND started_at < ?2 LIMIT 2000"
static const char SQL_FORGET_AGE[] = GG_USAGE_FORGET(SLICE_AGE);
static const char SQL_PRUNE_AGE[] = "DELETE FROM executions WHERE rowid IN (" SLICE_AGE ")";
static const char SQL_NTH_NEWEST[] = "SELECT id FROM executions ORDER BY id DESC LIMIT 1 OFFSET ?1";
#define SLICE_COUNT "SELECT rowid FROM executions WHERE id < ?1 ORDER BY id LIMIT 2000"
static const char SQL_FORGET_COUNT[] = GG_USAGE_FORGET(SLICE_COUNT);
static const char SQL_PRUNE_COUNT[] = "DELETE FROM executions WHERE rowid IN (" SLICE_COUNT ")";

long long gg_store_executions_mark_interrupted_conn(gg_store_conn *c, gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, gg_db_is_pg(c) ? SQL_MARK_INTERRUPTED_PG : SQL_MARK_INTERRUPTED, err);
    if (!st) return -1;
    gg_db_bind_int64(st, 1, gg_wall_ms());
    int rc = gg_db_step(st);
    gg_db_reset(st);
    if (rc != SQLITE_DONE) { gg_store_set_db_error(c, err, "executions"); return -1; }
    return gg_db_changes(c);
}

long long gg_store_executions_mark_interrupted(gg_store *s, gg_error *err) {
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return -1;
    long long n = gg_store_executions_mark_interrupted_conn(c, err);
    gg_store_conn_release(s, c);
    return n;
}

typedef struct {
    const char *forget_sql, *sql, *text;
    long long num;
    long long n; /* out: rows the slice deleted */
} slice_args;

static bool slice_tx(gg_store_conn *c, void *user, gg_error *err) {
    slice_args *a = user;
    a->n = gg_store_usage_delete_slice(c, a->forget_sql, a->sql, a->text, a->num, a->num != 0, err);
    return a->n >= 0;
}

/* Delete slices (forget_sql/sql: GG_USAGE_FORGET and DELETE of one slice; ?1 = text, ?2 =
 * num when nonzero) until one removes fewer than 2000, each in its own short transaction
 * that also counts it out of history_usage. */
static long long delete_slices(gg_store_conn *c, const char *forget_sql, const char *sql, const char *text,
                               long long num, gg_error *err) {
    slice_args a = {forget_sql, sql, text, num, 0};
    long long total = 0;
    for (;;) {
        if (!gg_store_conn_write_tx(c, slice_tx, &a, err)) return -1;
        total += a.n;
        if (a.n < 2000) return total;
    }
}

/* The smallest tenant name in executions after prev (NULL: the first); *name empty when
 * there is none. */
static bool next_tenant(gg_store_conn *c, const char *prev, char *name, size_t size, gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, prev ? SQL_NEXT_TENANT : SQL_FIRST_TENANT, err);
    if (!st) return false;
    if (prev) gg_db_bind_text(st, 1, prev, -1, SQLITE_TRANSIENT);
    int rc = gg_db_step(st);
    const char *t = rc == SQLITE_ROW ? (const char *)gg_db_column_text(st, 0) : NULL;
    name[0] = '\0';
    if (t) snprintf(name, size, "%s", t);
    gg_db_reset(st);
    if (rc != SQLITE_ROW) { gg_store_set_db_error(c, err, "executions"); return false; }
    return true;
}

static long long prune_age(gg_store_conn *c, long long cutoff, gg_error *err) {
    long long total = 0;
    char tenant[256], prev[256];
    if (!next_tenant(c, NULL, tenant, sizeof tenant, err)) return -1;
    while (tenant[0]) {
        long long n = delete_slices(c, SQL_FORGET_AGE, SQL_PRUNE_AGE, tenant, cutoff, err);
        if (n < 0) return -1;
        total += n;
        memcpy(prev, tenant, sizeof prev);
        if (!next_tenant(c, prev, tenant, sizeof tenant, err)) return -1;
    }
    return total;
}

long long gg_store_executions_prune_conn(gg_store_conn *c, long long max_age_ms, long long max_count,
                                         gg_error *err) {
    long long total = 0;
    if (max_age_ms > 0) {
        long long n = prune_age(c, gg_wall_ms() - max_age_ms, err);
        if (n < 0) return -1;
        total += n;
    }
    if (max_count > 0) {
        gg_db_stmt *st = gg_store_conn_stmt(c, SQL_NTH_NEWEST, err);
        if (!st) return -1;
        gg_db_bind_int64(st, 1, max_count - 1);
        int rc = gg_db_step(st);
        char cutoff[64] = "";
        if (rc == SQLITE_ROW) snprintf(cutoff, sizeof cutoff, "%s", (const char *)gg_db_column_text(st, 0));
        gg_db_reset(st);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE) { gg_store_set_db_error(c, err, "executions"); return -1; }
        if (rc == SQLITE_ROW) { /* keep the max_count newest: everything before the cutoff id goes */
            long long n = delete_slices(c, SQL_FORGET_COUNT, SQL_PRUNE_COUNT, cutoff, 0, err);
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
    "id, tenant, graph, version, tool, key_id, status, started_at, finished_at, duration_ms, error, trace_id, parent_id"
#define EXEC_FILTERS \
    " AND (CAST(?2 AS TEXT) IS NULL OR graph = ?2) AND (CAST(?3 AS TEXT) IS NULL OR tool = ?3) AND (CAST(?4 AS TEXT) IS NULL OR status = ?4)" \
    " AND started_at >= ?5 AND (CAST(?6 AS INTEGER) IS NULL OR started_at < ?6 OR (started_at = ?6 AND id < ?7))" \
    " ORDER BY started_at DESC, id DESC LIMIT ?8"
/* Two statements so the tenant one can walk the (tenant, started_at, id) index. */
static const char SQL_LIST_TENANT[] = "SELECT " EXEC_COLUMNS " FROM executions WHERE tenant = ?1" EXEC_FILTERS;
static const char SQL_LIST_ALL[] = "SELECT " EXEC_COLUMNS " FROM executions WHERE CAST(?1 AS TEXT) IS NULL" EXEC_FILTERS;
static const char SQL_GET[] =
    "SELECT " EXEC_COLUMNS ", arguments, result, nodes FROM executions WHERE id = ?1 AND (CAST(?2 AS TEXT) IS NULL OR tenant = ?2)";

static json_t *exec_row(gg_db_stmt *st) {
    json_t *o = json_pack("{s:s,s:s,s:s,s:I,s:s,s:s?,s:s,s:o,s:o}",
                          "id", (const char *)gg_db_column_text(st, 0),
                          "tenant", (const char *)gg_db_column_text(st, 1),
                          "graph", (const char *)gg_db_column_text(st, 2),
                          "version", (json_int_t)gg_db_column_int64(st, 3),
                          "tool", (const char *)gg_db_column_text(st, 4),
                          "key_id", (const char *)gg_db_column_text(st, 5),
                          "status", (const char *)gg_db_column_text(st, 6),
                          "started_at", gg_store_time_json(gg_db_column_int64(st, 7)),
                          "finished_at", gg_store_time_json(gg_db_column_int64(st, 8)));
    if (!o) return NULL;
    json_object_set_new(o, "duration_ms", gg_db_column_type(st, 9) == SQLITE_NULL
                                              ? json_null() : json_real(gg_store_round_us(gg_db_column_double(st, 9))));
    json_object_set_new(o, "error", gg_db_column_type(st, 10) == SQLITE_NULL
                                        ? json_null() : json_string((const char *)gg_db_column_text(st, 10)));
    json_object_set_new(o, "trace_id", gg_db_column_type(st, 11) == SQLITE_NULL
                                           ? json_null() : json_string((const char *)gg_db_column_text(st, 11)));
    json_object_set_new(o, "parent_id", gg_db_column_type(st, 12) == SQLITE_NULL
                                            ? json_null() : json_string((const char *)gg_db_column_text(st, 12)));
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
        gg_error_set(err, "invalid",
                     "status must be one of running, succeeded, failed, cancelled, interrupted, invalid_input");
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
    gg_db_stmt *st = arr ? gg_store_conn_stmt(c, tenant ? SQL_LIST_TENANT : SQL_LIST_ALL, err) : NULL;
    int rc = SQLITE_ERROR, n = 0;
    char next[64] = "";
    if (st) {
        gg_store_bind_text(st, 1, tenant);
        gg_store_bind_text(st, 2, f->graph);
        gg_store_bind_text(st, 3, f->tool);
        gg_store_bind_text(st, 4, f->status);
        gg_db_bind_int64(st, 5, f->since_ms > 0 ? f->since_ms : 0);
        if (cur_id[0]) {
            gg_db_bind_int64(st, 6, cur_ms);
            gg_db_bind_text(st, 7, cur_id, -1, SQLITE_STATIC);
        }
        gg_db_bind_int(st, 8, limit + 1); /* one more tells whether a next page exists */
        while ((rc = gg_db_step(st)) == SQLITE_ROW) {
            if (n == limit) {
                rc = SQLITE_DONE;
                json_t *last = json_array_get(arr, (size_t)n - 1);
                snprintf(next, sizeof next, "%lld-%s", (long long)json_integer_value(json_object_get(last, "_ms")),
                         json_string_value(json_object_get(last, "id")));
                break;
            }
            json_t *o = exec_row(st);
            if (!o) { rc = SQLITE_NOMEM; break; }
            json_object_set_new(o, "_ms", json_integer(gg_db_column_int64(st, 7)));
            if (json_array_append_new(arr, o) != 0) { rc = SQLITE_NOMEM; break; }
            n++;
        }
        if (rc != SQLITE_DONE) gg_store_set_db_error(c, err, "executions");
        gg_db_reset(st);
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

/* A stored value as the API shows it: absent → null (a stored string stays a string). */
static json_t *value_or_null(json_t *v) { return v ? json_incref(v) : json_null(); }

static json_t *error_or_null(json_t *e) {
    if (json_is_string(e)) return json_incref(e);
    if (json_is_object(e)) {
        json_t *m = json_object_get(e, "message");
        return json_is_string(m) ? json_incref(m) : json_string("error");
    }
    return json_null();
}

/* Below this a positional node's time is an offset from the run's started_at, above it an
 * absolute wall-clock time (1973-03-03): a run never lasts years, a clock is never that
 * old. So a writer without the run's start at hand (one writing the text as the run goes)
 * can give absolute times. */
#define ABSOLUTE_MS_MIN 100000000000LL

static long long node_time(json_t *v, long long run_start) {
    long long t = json_integer_value(v);
    return t < ABSOLUTE_MS_MIN ? run_start + t : t;
}

/* One stored node as the API's object: from the positional form of 0003 (times relative
 * to the run's start, or absolute, see ABSOLUTE_MS_MIN) or from an executor-shaped object
 * (absolute times). NULL when it is neither or memory ran out. */
static json_t *node_object(json_t *n, long long run_start) {
    json_t *idx, *id, *type, *start, *end, *dur, *in, *out, *err;
    long long t0, t1;
    if (json_is_array(n)) {
        idx = json_array_get(n, 0), id = json_array_get(n, 1), type = json_array_get(n, 2);
        start = json_array_get(n, 3), end = json_array_get(n, 4), dur = json_array_get(n, 5);
        out = json_array_get(n, 6), in = json_array_get(n, 7), err = json_array_get(n, 8);
        t0 = node_time(start, run_start), t1 = node_time(end, run_start);
    } else if (json_is_object(n)) {
        idx = json_object_get(n, "executionIndex"), id = json_object_get(n, "nodeId");
        type = json_object_get(n, "nodeType"), start = json_object_get(n, "startTime");
        end = json_object_get(n, "endTime"), dur = json_object_get(n, "duration");
        out = json_object_get(n, "output"), in = json_object_get(n, "input"), err = json_object_get(n, "error");
        t0 = json_integer_value(start), t1 = json_integer_value(end);
    } else {
        return NULL;
    }
    return json_pack("{s:I,s:s,s:s,s:o,s:o,s:f,s:o,s:o,s:o}",
                     "index", json_integer_value(idx),
                     "node_id", json_is_string(id) ? json_string_value(id) : "",
                     "node_type", json_is_string(type) ? json_string_value(type) : "",
                     "started_at", gg_store_time_json(t0),
                     "finished_at", gg_store_time_json(t1),
                     "duration_ms", json_is_number(dur) ? gg_store_round_us(json_number_value(dur)) : 0.0,
                     "input", value_or_null(in),
                     "output", value_or_null(out),
                     "error", error_or_null(err));
}

/* The marker a run cut by its history bounds ends with: {"truncated":true,"dropped":N,
 * "kept":K} (src/graph/provider.c, src/store/history.c). */
static bool is_truncation_marker(json_t *n) {
    return json_is_object(n) && json_is_true(json_object_get(n, "truncated")) && !json_object_get(n, "nodeId");
}

/* The nodes column as the API's array ([] for NULL or text that is not a JSON array);
 * *dropped gets the records a truncation marker says were left out (0 when none). */
static json_t *nodes_array(gg_db_stmt *st, int col, long long run_start, long long *dropped) {
    *dropped = 0;
    json_t *res = json_array();
    if (!res || gg_db_column_type(st, col) == SQLITE_NULL) return res;
    json_t *stored = json_loadb((const char *)gg_db_column_blob(st, col), (size_t)gg_db_column_bytes(st, col),
                                JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    size_t i;
    json_t *n;
    json_array_foreach(stored, i, n) {
        if (is_truncation_marker(n)) {
            *dropped += json_integer_value(json_object_get(n, "dropped"));
            continue;
        }
        json_t *o = node_object(n, run_start);
        if (!o && (json_is_array(n) || json_is_object(n))) { /* out of memory */
            json_decref(res);
            res = NULL;
            break;
        }
        if (o && json_array_append_new(res, o) != 0) {
            json_decref(res);
            res = NULL;
            break;
        }
    }
    json_decref(stored);
    return res;
}

json_t *gg_store_execution_get(gg_store *s, const char *tenant, const char *id, gg_error *err) {
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return NULL;
    json_t *o = NULL;
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_GET, err);
    if (st) {
        gg_db_bind_text(st, 1, id, -1, SQLITE_STATIC);
        gg_store_bind_text(st, 2, tenant);
        int rc = gg_db_step(st);
        if (rc == SQLITE_ROW) {
            o = exec_row(st);
            long long dropped = 0;
            json_t *nodes = o ? nodes_array(st, 15, gg_db_column_int64(st, 7), &dropped) : NULL;
            if (o && nodes) {
                json_object_set_new(o, "arguments", gg_store_json_column(st, 13));
                json_object_set_new(o, "result", gg_store_json_column(st, 14));
                json_object_set_new(o, "nodes", nodes);
                /* a run cut by history.max_run_records / max_run_bytes says so */
                json_object_set_new(o, "nodes_truncated", json_boolean(dropped > 0));
                json_object_set_new(o, "nodes_dropped", json_integer(dropped));
            } else {
                json_decref(o);
                o = NULL;
                gg_error_set(err, "oom", "out of memory");
            }
        } else if (rc == SQLITE_DONE) {
            gg_error_set(err, "not_found", "execution '%s' not found", id);
        } else {
            gg_store_set_db_error(c, err, "executions");
        }
        gg_db_reset(st);
    }
    gg_store_conn_release(s, c);
    return o;
}
