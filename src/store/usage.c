/* usage.c — what a tenant holds (graphs, execution history) and the per-tenant history
 * quota.
 *
 * history_usage (migrations/0004_history_usage.sql) holds each tenant's rows and bytes, so
 * "is anyone over quota" is one read of a table with a row per tenant. New runs are added
 * to it in bulk: the history writer adds each batch's sums and moves history_usage_mark
 * (gg_store_usage_writer_add, SQLite), and anything else above the mark (rows written by
 * another process, a batch with updates, PostgreSQL) is read back by catch_up, which adds
 * every executions row above the mark and moves it up; triggers correct what changes below
 * the mark. Every reader catches up first, inside its own transaction, so what it
 * reads is exact. Deletions are counted out by the statement that deletes (migration 0008,
 * gg_store_usage_delete_slice), not per row. The quota keeper is a thread on its own connection that does that every
 * interval and,
 * for each tenant over max_rows or max_bytes, deletes the tenant's oldest runs until it
 * holds at most 90 % of the quota (so a tenant at the limit is pruned in
 * batches, not one run per pass). Each slice is one short IMMEDIATE transaction that also
 * adds what it removed to the tenant's dropped counters, so the history writer and the
 * request paths never wait long on it.
 */
#include "store/store_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Pruning stops once a tenant is back under this share of its quota (90 %). */
#define QUOTA_LOW_DIVISOR 10
/* At most this many runs (about 3 ms of deleting), and about this many bytes, one
 * transaction. */
#define SLICE_ROWS 200
#define SLICE_BYTES (16LL * 1024 * 1024)
/* Tenants handled a pass (the rest the next pass). */
#define PASS_TENANTS 64

static const char SQL_MARK[] = "SELECT counted FROM history_usage_mark WHERE id = 1";
/* Grouped by an expression (column 1), not by the tenant column: grouping by the column
 * made SQLite walk the whole executions_tenant_started index every pass (one second,
 * a quarter of a core at 300k runs) instead of the rowid range of the new runs. */
static const char SQL_NEW_RUNS[] =
    "SELECT tenant || '', count(*), sum(" GG_RUN_BYTES "), max(rowid) FROM executions WHERE rowid > ?1 GROUP BY 1";
static const char SQL_ADD_RUNS[] = "UPDATE history_usage SET rows = rows + ?2, bytes = bytes + ?3 WHERE tenant = ?1";
static const char SQL_SET_MARK[] = "UPDATE history_usage_mark SET counted = ?1 WHERE id = 1";
static const char SQL_HISTORY_USAGE[] =
    "SELECT rows, bytes, dropped, dropped_bytes FROM history_usage WHERE tenant = ?1";
static const char SQL_OVER_QUOTA[] =
    "SELECT tenant FROM history_usage WHERE (CAST(?1 AS INTEGER) > 0 AND rows > ?1) OR (CAST(?2 AS INTEGER) > 0 AND bytes > ?2)"
    " LIMIT ?3";
#define SLICE_OLDEST "SELECT rowid FROM executions WHERE tenant = ?1 ORDER BY started_at LIMIT ?2"
static const char SQL_FORGET_OLDEST[] = GG_USAGE_FORGET(SLICE_OLDEST);
static const char SQL_DELETE_OLDEST[] = "DELETE FROM executions WHERE rowid IN (" SLICE_OLDEST ")";
/* After a delete: if the newest counted runs went, the mark comes down to the highest rowid
 * left, since SQLite gives the next insert max(rowid) + 1, which must be above the mark. */
static const char SQL_LOWER_MARK[] =
    "UPDATE history_usage_mark SET counted = (SELECT coalesce(max(rowid), 0) FROM executions)"
    " WHERE id = 1 AND counted > (SELECT coalesce(max(rowid), 0) FROM executions)";
static const char SQL_COUNT_DROPPED[] =
    "UPDATE history_usage SET dropped = dropped + ?2, dropped_bytes = dropped_bytes + ?3 WHERE tenant = ?1";
static const char SQL_GRAPH_USAGE[] =
    "SELECT count(DISTINCT g.id), count(v.version), coalesce(sum(length(CAST(v.source AS BLOB))), 0),"
    " coalesce(sum(CASE WHEN v.version = g.active_version THEN length(CAST(v.source AS BLOB)) END), 0)"
    " FROM graphs g LEFT JOIN graph_versions v ON v.graph_id = g.id WHERE g.tenant = ?1";

static bool step_done(gg_store_conn *c, gg_db_stmt *st, const char *what, gg_error *err) {
    int rc = gg_db_step(st);
    gg_db_reset(st);
    if (rc == SQLITE_DONE) return true;
    gg_store_set_db_error(c, err, what);
    return false;
}

/* Inside the caller's write transaction: add the runs above the mark to their tenants'
 * rows and bytes and move the mark to the highest rowid added. */
static bool catch_up(gg_store_conn *c, gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_MARK, err);
    if (!st) return false;
    int rc = gg_db_step(st);
    long long mark = rc == SQLITE_ROW ? gg_db_column_int64(st, 0) : 0, top = mark;
    gg_db_reset(st);
    if (rc != SQLITE_ROW) { gg_store_set_db_error(c, err, "history_usage_mark"); return false; }
    gg_db_stmt *sel = gg_store_conn_stmt(c, SQL_NEW_RUNS, err), *add = gg_store_conn_stmt(c, SQL_ADD_RUNS, err);
    if (!sel || !add) return false;
    gg_db_bind_int64(sel, 1, mark);
    bool ok = true;
    while (ok && (rc = gg_db_step(sel)) == SQLITE_ROW) {
        gg_db_bind_text(add, 1, (const char *)gg_db_column_text(sel, 0), -1, SQLITE_TRANSIENT);
        gg_db_bind_int64(add, 2, gg_db_column_int64(sel, 1));
        gg_db_bind_int64(add, 3, gg_db_column_int64(sel, 2));
        if (gg_db_column_int64(sel, 3) > top) top = gg_db_column_int64(sel, 3);
        ok = step_done(c, add, "history_usage", err);
    }
    if (ok && rc != SQLITE_DONE) {
        gg_store_set_db_error(c, err, "executions");
        ok = false;
    }
    gg_db_reset(sel);
    if (!ok || top == mark) return ok;
    gg_db_stmt *up = gg_store_conn_stmt(c, SQL_SET_MARK, err);
    if (!up) return false;
    gg_db_bind_int64(up, 1, top);
    return step_done(c, up, "history_usage_mark", err);
}

static const char SQL_TOP[] = "SELECT coalesce(max(rowid), 0) FROM executions";

/* One integer from a statement without parameters. */
static bool int_query(gg_store_conn *c, const char *sql, const char *what, long long *out, gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, sql, err);
    if (!st) return false;
    int rc = gg_db_step(st);
    *out = rc == SQLITE_ROW ? gg_db_column_int64(st, 0) : 0;
    gg_db_reset(st);
    if (rc != SQLITE_ROW) { gg_store_set_db_error(c, err, what); return false; }
    return true;
}

/* See store_internal.h. Reading the runs back cost the quota pass about as much as the
 * writer's inserts (GROUP BY over every new row's four texts); the writer knows each run's
 * tenant and sizes already. */
bool gg_store_usage_writer_begin(gg_store_conn *c, long long *top, bool *all_counted, gg_error *err) {
    *top = 0;
    *all_counted = false;
    if (gg_db_is_pg(c)) return true; /* other replicas' rows commit out of rowid order */
    long long mark;
    if (!int_query(c, SQL_MARK, "history_usage_mark", &mark, err) || !int_query(c, SQL_TOP, "executions", top, err))
        return false;
    *all_counted = mark == *top;
    return true;
}

bool gg_store_usage_writer_add(gg_store_conn *c, long long top, long long added, const gg_usage_add *adds, int n,
                               bool *applied, gg_error *err) {
    *applied = false;
    long long now;
    if (added <= 0 || !int_query(c, SQL_TOP, "executions", &now, err)) return added <= 0;
    /* rowids are max + 1 each: fewer new ones means some rows were updates, counted by the
     * trigger if old enough and otherwise by the next catch_up, which this leaves to it */
    if (now - top != added) return true;
    for (int i = 0; i < n; i++) {
        if (!adds[i].rows) continue;
        gg_db_stmt *add = gg_store_conn_stmt(c, SQL_ADD_RUNS, err);
        if (!add) return false;
        gg_db_bind_text(add, 1, adds[i].tenant, -1, SQLITE_STATIC);
        gg_db_bind_int64(add, 2, adds[i].rows);
        gg_db_bind_int64(add, 3, adds[i].bytes);
        if (!step_done(c, add, "history_usage", err)) return false;
    }
    gg_db_stmt *up = gg_store_conn_stmt(c, SQL_SET_MARK, err);
    if (!up) return false;
    gg_db_bind_int64(up, 1, now);
    if (!step_done(c, up, "history_usage_mark", err)) return false;
    *applied = true;
    return true;
}

static bool catch_up_body(gg_store_conn *c, void *user, gg_error *err) {
    (void)user;
    return catch_up(c, err);
}

/* catch_up in a transaction of its own. */
static bool catch_up_tx(gg_store_conn *c, gg_error *err) { return gg_store_conn_write_tx(c, catch_up_body, NULL, err); }

static bool usage_conn(gg_store_conn *c, const char *tenant, gg_history_usage *out, gg_error *err) {
    memset(out, 0, sizeof *out);
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_HISTORY_USAGE, err);
    if (!st) return false;
    gg_db_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
    int rc = gg_db_step(st);
    if (rc == SQLITE_ROW) {
        out->rows = gg_db_column_int64(st, 0);
        out->bytes = gg_db_column_int64(st, 1);
        out->dropped = gg_db_column_int64(st, 2);
        out->dropped_bytes = gg_db_column_int64(st, 3);
    }
    gg_db_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        gg_store_set_db_error(c, err, "history_usage");
        return false;
    }
    return true;
}

typedef struct {
    const char *tenant;
    gg_history_usage *out;
} usage_args;

/* Counters brought up to date (a write, hence the write transaction), then read. */
static bool usage_tx(gg_store_conn *c, void *user, gg_error *err) {
    usage_args *a = user;
    return catch_up(c, err) && usage_conn(c, a->tenant, a->out, err);
}

bool gg_store_history_usage(gg_store *s, const char *tenant, gg_history_usage *out, gg_error *err) {
    memset(out, 0, sizeof *out);
    usage_args a = {tenant, out};
    return gg_store_write_tx(s, usage_tx, &a, err);
}

bool gg_store_graph_usage(gg_store *s, const char *tenant, gg_graph_usage *out, gg_error *err) {
    memset(out, 0, sizeof *out);
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return false;
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_GRAPH_USAGE, err);
    int rc = SQLITE_ERROR;
    if (st) {
        gg_db_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
        rc = gg_db_step(st);
        if (rc == SQLITE_ROW) {
            out->graphs = gg_db_column_int64(st, 0);
            out->versions = gg_db_column_int64(st, 1);
            out->stored_bytes = gg_db_column_int64(st, 2);
            out->active_bytes = gg_db_column_int64(st, 3);
        } else {
            gg_store_set_db_error(c, err, "graphs");
        }
        gg_db_reset(st);
    }
    gg_store_conn_release(s, c);
    return st && rc == SQLITE_ROW;
}

/* How many of the tenant's oldest runs the next slice deletes to get from u down to the
 * low marks: enough for the rows, and for the bytes at the tenant's average run size,
 * bounded per transaction. 0 when already there. */
static long long slice_size(const gg_history_usage *u, long long low_rows, long long low_bytes) {
    long long need = 0;
    if (low_rows >= 0 && u->rows > low_rows) need = u->rows - low_rows;
    long long avg = u->rows > 0 ? u->bytes / u->rows : 0;
    if (low_bytes >= 0 && u->bytes > low_bytes) {
        long long by_bytes = avg > 0 ? (u->bytes - low_bytes + avg - 1) / avg : 1;
        if (by_bytes > need) need = by_bytes;
    }
    if (need <= 0 || u->rows <= 0) return 0;
    long long cap = SLICE_ROWS;
    if (avg > 0 && SLICE_BYTES / avg < cap) cap = SLICE_BYTES / avg > 0 ? SLICE_BYTES / avg : 1;
    return need < cap ? need : cap;
}

typedef struct {
    const char *tenant;
    long long low_rows, low_bytes;
    long long n, deleted, bytes; /* out: the slice size asked for, runs and bytes deleted */
} drop_args;

static bool drop_slice_tx(gg_store_conn *c, void *user, gg_error *err) {
    drop_args *a = user;
    gg_history_usage before, after;
    /* counted first: a run written since may be among the oldest (a long one) */
    if (!catch_up(c, err) || !usage_conn(c, a->tenant, &before, err)) return false;
    a->n = slice_size(&before, a->low_rows, a->low_bytes);
    if (a->n <= 0) return true;
    a->deleted = gg_store_usage_delete_slice(c, SQL_FORGET_OLDEST, SQL_DELETE_OLDEST, a->tenant, a->n, true, err);
    if (a->deleted < 0 || !usage_conn(c, a->tenant, &after, err)) return false;
    if (a->deleted == 0) return true;
    a->bytes = before.bytes - after.bytes;
    gg_db_stmt *up = gg_store_conn_stmt(c, SQL_COUNT_DROPPED, err);
    if (!up) return false;
    gg_db_bind_text(up, 1, a->tenant, -1, SQLITE_STATIC);
    gg_db_bind_int64(up, 2, a->deleted);
    gg_db_bind_int64(up, 3, a->bytes);
    return step_done(c, up, "history_usage", err);
}

/* One transaction: delete the tenant's n oldest runs and count them as dropped. *deleted
 * and *bytes get what went; *done when nothing was left to delete. */
static bool drop_slice(gg_store_conn *c, const char *tenant, long long low_rows, long long low_bytes,
                       long long *deleted, long long *bytes, bool *done, gg_error *err) {
    drop_args a = {tenant, low_rows, low_bytes, 0, 0, 0};
    bool ok = gg_store_conn_write_tx(c, drop_slice_tx, &a, err);
    *deleted = ok ? a.deleted : 0;
    *bytes = ok ? a.bytes : 0;
    *done = ok && (a.n <= 0 || a.deleted == 0);
    return ok;
}

/* One prepared statement run to completion with ?1 = text and, when has_num, ?2 = num. */
static bool run_bound(gg_store_conn *c, const char *sql, const char *text, long long num, bool has_num,
                      const char *what, gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, sql, err);
    if (!st) return false;
    if (text) gg_db_bind_text(st, 1, text, -1, SQLITE_TRANSIENT);
    if (has_num) gg_db_bind_int64(st, 2, num);
    return step_done(c, st, what, err);
}

/* See store_internal.h. */
long long gg_store_usage_delete_slice(gg_store_conn *c, const char *forget_sql, const char *delete_sql,
                                      const char *text, long long num, bool has_num, gg_error *err) {
    if (!catch_up(c, err) || !run_bound(c, forget_sql, text, num, has_num, "history_usage", err) ||
        !run_bound(c, delete_sql, text, num, has_num, "executions", err))
        return -1;
    long long deleted = gg_db_changes(c);
    if (deleted > 0 && !run_bound(c, SQL_LOWER_MARK, NULL, 0, false, "history_usage_mark", err)) return -1;
    return deleted;
}

/* Between two slices: leave the write lock free for a moment, so the history writer (which
 * polls for it every 0.2 ms, store.c's busy_wait) commits its batch before the next slice
 * and durable answers are not held up behind a whole pass. */
static void yield_lock(gg_store_conn *c) {
    if (gg_db_is_pg(c)) return; /* row locks: the writer never waits for the pass there */
    struct timespec ts = {0, 1000 * 1000};
    nanosleep(&ts, NULL);
}

/* Where pruning a tenant over quota stops; -1 for no quota. */
static long long low_mark(long long quota) { return quota > 0 ? quota - quota / QUOTA_LOW_DIVISOR : -1; }

/* The tenants over quota now (at most PASS_TENANTS), as a JSON array of names. */
static json_t *over_quota(gg_store_conn *c, long long max_rows, long long max_bytes, gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_OVER_QUOTA, err);
    if (!st) return NULL;
    json_t *names = json_array();
    gg_db_bind_int64(st, 1, max_rows);
    gg_db_bind_int64(st, 2, max_bytes);
    gg_db_bind_int(st, 3, PASS_TENANTS);
    int rc;
    while (names && (rc = gg_db_step(st)) == SQLITE_ROW)
        json_array_append_new(names, json_string((const char *)gg_db_column_text(st, 0)));
    if (names && rc != SQLITE_DONE) {
        gg_store_set_db_error(c, err, "history_usage");
        json_decref(names);
        names = NULL;
    }
    gg_db_reset(st);
    if (!names && !err->code[0]) gg_error_set(err, "oom", "out of memory");
    return names;
}

long long gg_store_history_quota_enforce_conn(gg_store_conn *c, long long max_rows, long long max_bytes,
                                              long long *bytes_out, gg_quota_progress_fn progress, void *ctx,
                                              gg_error *err) {
    if (bytes_out) *bytes_out = 0;
    if (!catch_up_tx(c, err)) return -1;
    if (max_rows <= 0 && max_bytes <= 0) return 0;
    json_t *names = over_quota(c, max_rows, max_bytes, err);
    if (!names) return -1;
    long long total = 0, total_bytes = 0;
    size_t i;
    json_t *name;
    json_array_foreach(names, i, name) {
        for (;;) {
            long long n, b;
            bool done;
            if (!drop_slice(c, json_string_value(name), low_mark(max_rows), low_mark(max_bytes), &n, &b, &done, err)) {
                json_decref(names);
                return -1;
            }
            total += n;
            total_bytes += b;
            if (progress && n > 0) progress(ctx, n, b);
            if (done) break;
            yield_lock(c);
        }
    }
    json_decref(names);
    if (bytes_out) *bytes_out = total_bytes;
    return total;
}

long long gg_store_history_quota_enforce(gg_store *s, long long max_rows, long long max_bytes, long long *bytes_out,
                                         gg_error *err) {
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return -1;
    long long n = gg_store_history_quota_enforce_conn(c, max_rows, max_bytes, bytes_out, NULL, NULL, err);
    gg_store_conn_release(s, c);
    return n;
}

/* ---- the keeper thread ----------------------------------------------------------------- */

struct gg_history_quota {
    gg_store_conn *conn;
    gg_history_quota_options opt;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;       /* CLOCK_MONOTONIC */
    bool stop;
    unsigned long long req, done; /* passes asked for / passes completed */
    gg_history_quota_stats stats;
};

/* Counted as each slice commits, not at the end of the pass: a pass over a tenant far over
 * its quota takes many slices, and /metrics should show the pruning while it happens. */
static void count_slice(void *arg, long long rows, long long bytes) {
    gg_history_quota *q = arg;
    pthread_mutex_lock(&q->mu);
    q->stats.dropped += (unsigned long long)rows;
    q->stats.dropped_bytes += (unsigned long long)bytes;
    pthread_mutex_unlock(&q->mu);
}

static void quota_pass(gg_history_quota *q) {
    gg_error err = GG_ERROR_INIT;
    long long bytes = 0;
    long long n = gg_store_history_quota_enforce_conn(q->conn, q->opt.max_rows, q->opt.max_bytes, &bytes, count_slice, q,
                                                      &err);
    if (n < 0) {
        gg_log(GG_LOG_WARN, "history quota pass failed", "error", err.message, NULL);
        gg_error_clear(&err);
    } else if (n > 0) {
        char a[32], b[32];
        snprintf(a, sizeof a, "%lld", n);
        snprintf(b, sizeof b, "%lld", bytes);
        gg_log(GG_LOG_INFO, "history quota: oldest runs dropped", "runs", a, "bytes", b, NULL);
    }
    pthread_mutex_lock(&q->mu);
    q->stats.passes++;
    if (n < 0) q->stats.failed_passes++;
    pthread_mutex_unlock(&q->mu);
}

static void *keeper_main(void *arg) {
    gg_history_quota *q = arg;
    pthread_setname_np(pthread_self(), "gg-quota");
    pthread_mutex_lock(&q->mu);
    while (!q->stop) {
        if (q->req == q->done) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            ts.tv_sec += q->opt.interval_ms / 1000;
            ts.tv_nsec += (long)(q->opt.interval_ms % 1000) * 1000000L;
            if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
            while (!q->stop && q->req == q->done && pthread_cond_timedwait(&q->cv, &q->mu, &ts) == 0) {}
            if (q->stop) break;
        }
        unsigned long long want = q->req;
        pthread_mutex_unlock(&q->mu);
        quota_pass(q);
        pthread_mutex_lock(&q->mu);
        q->done = want;
        pthread_cond_broadcast(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

gg_history_quota *gg_history_quota_start(gg_store *s, const gg_history_quota_options *o, gg_error *err) {
    gg_history_quota *q = calloc(1, sizeof *q);
    if (!q) { gg_error_set(err, "oom", "out of memory"); return NULL; }
    if (o) q->opt = *o;
    if (q->opt.interval_ms <= 0) q->opt.interval_ms = 1000;
    if (!(q->conn = gg_store_conn_open(s, err))) { free(q); return NULL; }
    pthread_mutex_init(&q->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&q->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&q->thread, NULL, keeper_main, q) != 0) {
        gg_error_set(err, "db", "cannot start the history quota thread");
        pthread_cond_destroy(&q->cv);
        pthread_mutex_destroy(&q->mu);
        gg_store_conn_close(q->conn);
        free(q);
        return NULL;
    }
    return q;
}

void gg_history_quota_now(gg_history_quota *q) {
    if (!q) return;
    pthread_mutex_lock(&q->mu);
    unsigned long long want = ++q->req;
    pthread_cond_broadcast(&q->cv);
    while (!q->stop && q->done < want) pthread_cond_wait(&q->cv, &q->mu);
    pthread_mutex_unlock(&q->mu);
}

void gg_history_quota_get_stats(gg_history_quota *q, gg_history_quota_stats *out) {
    memset(out, 0, sizeof *out);
    if (!q) return;
    pthread_mutex_lock(&q->mu);
    *out = q->stats;
    pthread_mutex_unlock(&q->mu);
}

void gg_history_quota_stop(gg_history_quota *q) {
    if (!q) return;
    pthread_mutex_lock(&q->mu);
    q->stop = true;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    pthread_join(q->thread, NULL);
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
    gg_store_conn_close(q->conn);
    free(q);
}
