/* tasks.c — rows of the MCP tasks extension (migrations/0009_tasks.sql): created when a
 * task starts, updated as it waits for input, resumes and ends. Every statement filters on
 * the tenant, so another tenant's task id reads as not found. Terminal rows past their TTL
 * are deleted when the tenant creates its next task; the live ones count against the
 * tenant's bound.
 */
#include "store/store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char SQL_TASK_EXPIRE[] =
    "DELETE FROM tasks WHERE tenant = ?1 AND created_at + ttl_ms < ?2"
    " AND status IN ('completed', 'failed', 'cancelled')";
static const char SQL_TASK_LIVE[] =
    "SELECT count(*) FROM tasks WHERE tenant = ?1 AND status IN ('working', 'input_required')";
static const char SQL_TASK_INSERT[] =
    "INSERT INTO tasks (id, tenant, graph, version, tool, key_id, client_caps, status, arguments, created_at,"
    " updated_at, ttl_ms, owner) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'working', ?8, ?9, ?9, ?10, ?11)";
static const char SQL_TASK_GET[] =
    "SELECT id, tenant, graph, version, tool, key_id, client_caps, status, arguments, result, error,"
    " input_requests, input_responses, request_state, created_at, updated_at, ttl_ms"
    " FROM tasks WHERE tenant = ?1 AND id = ?2";
/* ?10: the status the row must have now (NULL: any live one) */
static const char SQL_TASK_SET[] =
    "UPDATE tasks SET status = ?3, result = ?4, error = ?5, input_requests = ?6, input_responses = ?7,"
    " request_state = ?8, updated_at = ?9, owner = coalesce(?11, owner) WHERE tenant = ?1 AND id = ?2"
    " AND ((CAST(?10 AS TEXT) IS NULL AND status IN ('working', 'input_required')) OR status = ?10)";

/* ?2: the replica whose tasks (NULL: every task, one process per SQLite database) */
static const char SQL_TASK_INTERRUPTED[] =
    "UPDATE tasks SET status = 'failed', updated_at = ?1, error ="
    " '{\"code\":-32603,\"message\":\"the task was interrupted: the server running it stopped (restart or crash) before it finished\"}'"
    " WHERE status = 'working' AND (CAST(?2 AS TEXT) IS NULL OR owner = ?2)";

/* A task row changed: on PostgreSQL the other replicas' watches hear "tasks" at once, so
 * their listen streams need not wait for their next periodic check (which stays the safety
 * net: a lost notification costs only latency, so its failure is not the change's). */
static void tasks_changed(gg_store_conn *c) {
    if (!gg_db_is_pg(c)) return;
    gg_error e = GG_ERROR_INIT;
    gg_store_notify(c, "tasks", &e);
    gg_error_clear(&e);
}

long long gg_store_tasks_mark_interrupted(gg_store *s, const char *owner, gg_error *err) {
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return -1;
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_TASK_INTERRUPTED, err);
    long long n = -1;
    if (st) {
        gg_db_bind_int64(st, 1, gg_wall_ms());
        gg_store_bind_text(st, 2, owner);
        if (gg_store_step_done(c, st, "tasks", err)) n = gg_db_changes(c);
    }
    if (n > 0) tasks_changed(c);
    gg_store_conn_release(s, c);
    return n;
}

static char *dump(json_t *v) { return v && !json_is_null(v) ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL; }

void gg_task_row_clear(gg_task_row *r) {
    json_decref(r->arguments);
    json_decref(r->result);
    json_decref(r->error);
    json_decref(r->input_requests);
    json_decref(r->input_responses);
    free(r->request_state);
    memset(r, 0, sizeof *r);
}

typedef struct {
    const gg_task_row *r;
    long long max_live;
} task_insert_args;

/* Expired tasks dropped, then the live count checked against max_live (0: no bound). */
static bool task_room(gg_store_conn *c, const char *tenant, long long max_live, long long now, gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_TASK_EXPIRE, err);
    if (!st) return false;
    gg_store_bind_text(st, 1, tenant);
    gg_db_bind_int64(st, 2, now);
    bool ok = gg_store_step_done(c, st, "tasks", err);
    if (!ok || max_live <= 0) return ok;
    if (!(st = gg_store_conn_stmt(c, SQL_TASK_LIVE, err))) return false;
    gg_store_bind_text(st, 1, tenant);
    long long live = gg_db_step(st) == SQLITE_ROW ? gg_db_column_int64(st, 0) : max_live;
    gg_db_reset(st);
    if (live < max_live) return true;
    gg_error_set(err, "too_many", "the tenant has %lld tasks working or waiting for input (at most %lld)", live, max_live);
    return false;
}

static bool task_insert_tx(gg_store_conn *c, void *user, gg_error *err) {
    const task_insert_args *a = user;
    const gg_task_row *r = a->r;
    long long now = gg_wall_ms();
    gg_db_stmt *st;
    if (!task_room(c, r->tenant, a->max_live, now, err) || !(st = gg_store_conn_stmt(c, SQL_TASK_INSERT, err)))
        return false;
    char *args = dump(r->arguments);
    gg_store_bind_text(st, 1, r->id);
    gg_store_bind_text(st, 2, r->tenant);
    gg_store_bind_text(st, 3, r->graph);
    gg_db_bind_int64(st, 4, r->version);
    gg_store_bind_text(st, 5, r->tool);
    gg_store_bind_text(st, 6, r->key_id);
    gg_db_bind_int64(st, 7, r->client_caps);
    gg_store_bind_text(st, 8, args);
    gg_db_bind_int64(st, 9, now);
    gg_db_bind_int64(st, 10, r->ttl_ms);
    gg_store_bind_text(st, 11, *r->owner ? r->owner : NULL);
    bool ok = gg_store_step_done(c, st, "tasks", err);
    free(args);
    return ok;
}

bool gg_store_task_insert(gg_store *s, const gg_task_row *r, long long max_live, gg_error *err) {
    task_insert_args a = {r, max_live};
    return gg_store_write_tx(s, task_insert_tx, &a, err);
}

static json_t *json_col(gg_db_stmt *st, int col) {
    return gg_db_column_type(st, col) == SQLITE_NULL ? NULL : gg_store_json_column(st, col);
}

bool gg_store_task_get(gg_store *s, const char *tenant, const char *id, gg_task_row *out, gg_error *err) {
    memset(out, 0, sizeof *out);
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return false;
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_TASK_GET, err);
    bool ok = false;
    if (st) {
        gg_store_bind_text(st, 1, tenant);
        gg_store_bind_text(st, 2, id);
        int rc = gg_db_step(st);
        if (rc == SQLITE_ROW) {
            snprintf(out->id, sizeof out->id, "%s", (const char *)gg_db_column_text(st, 0));
            snprintf(out->tenant, sizeof out->tenant, "%s", (const char *)gg_db_column_text(st, 1));
            snprintf(out->graph, sizeof out->graph, "%s", (const char *)gg_db_column_text(st, 2));
            out->version = (int)gg_db_column_int64(st, 3);
            snprintf(out->tool, sizeof out->tool, "%s", (const char *)gg_db_column_text(st, 4));
            snprintf(out->key_id, sizeof out->key_id, "%s", (const char *)gg_db_column_text(st, 5));
            out->client_caps = (int)gg_db_column_int64(st, 6);
            snprintf(out->status, sizeof out->status, "%s", (const char *)gg_db_column_text(st, 7));
            out->arguments = json_col(st, 8);
            out->result = json_col(st, 9);
            out->error = json_col(st, 10);
            out->input_requests = json_col(st, 11);
            out->input_responses = json_col(st, 12);
            bool oom = false;
            out->request_state = gg_store_column_strdup(st, 13, &oom);
            out->created_ms = gg_db_column_int64(st, 14);
            out->updated_ms = gg_db_column_int64(st, 15);
            out->ttl_ms = gg_db_column_int64(st, 16);
            ok = !oom;
            if (oom) gg_error_set(err, "oom", "out of memory");
        } else if (rc == SQLITE_DONE) {
            gg_error_set(err, "not_found", "no such task");
        } else {
            gg_store_set_db_error(c, err, "tasks");
        }
        gg_db_reset(st);
    }
    gg_store_conn_release(s, c);
    if (!ok) gg_task_row_clear(out);
    return ok;
}

bool gg_store_task_set(gg_store *s, const gg_task_row *r, const char *only_from, bool *changed, gg_error *err) {
    *changed = false;
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return false;
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_TASK_SET, err);
    bool ok = false;
    char *res = dump(r->result), *er = dump(r->error), *ir = dump(r->input_requests), *ans = dump(r->input_responses);
    if (st) {
        gg_store_bind_text(st, 1, r->tenant);
        gg_store_bind_text(st, 2, r->id);
        gg_store_bind_text(st, 3, r->status);
        gg_store_bind_text(st, 4, res);
        gg_store_bind_text(st, 5, er);
        gg_store_bind_text(st, 6, ir);
        gg_store_bind_text(st, 7, ans);
        gg_store_bind_text(st, 8, r->request_state);
        gg_db_bind_int64(st, 9, gg_wall_ms());
        gg_store_bind_text(st, 10, only_from);
        gg_store_bind_text(st, 11, *r->owner ? r->owner : NULL);
        ok = gg_store_step_done(c, st, "tasks", err);
        if (ok) *changed = gg_db_changes(c) > 0;
    }
    if (*changed) tasks_changed(c);
    free(res);
    free(er);
    free(ir);
    free(ans);
    gg_store_conn_release(s, c);
    return ok;
}
