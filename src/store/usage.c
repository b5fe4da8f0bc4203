/* usage.c — what a tenant holds (graphs, execution history) and the per-tenant history
 * quota.
 *
 * On SQLite the history writer enforces the keeper's max_rows itself, in the commit that
 * takes a tenant over it (history_write.c: the oldest rows deleted whole, the next one
 * trimmed, ≈ 20x cheaper a record than a keeper's pass over per-run rows); the keeper still
 * runs for max_bytes, for PostgreSQL (replicas write concurrently) and for what a commit
 * left.
 *
 * history_usage (migrations/0004_history_usage.sql) holds each tenant's rows (records) and
 * bytes (history_batches body bytes since 0019), so "is anyone over quota" is one read of a
 * table with a row per tenant. Whoever writes or deletes history_batches rows changes it in
 * the same transaction (history_write.c), so it is always exact. The quota keeper is a
 * thread on its own connection that, every interval, for each tenant over max_rows or
 * max_bytes, deletes the tenant's oldest rows (the last one only partly) until it holds at
 * most 90 % of the quota (so a tenant at the limit is pruned in batches, not one run per
 * pass). Each slice is one short IMMEDIATE transaction that also adds what it removed to the
 * tenant's dropped counters, so the history writer and the request paths never wait long on
 * it.
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

static const char SQL_HISTORY_USAGE[] =
    "SELECT rows, bytes, dropped, dropped_bytes FROM history_usage WHERE tenant = ?1";
static const char SQL_OVER_QUOTA[] =
    "SELECT tenant FROM history_usage WHERE (CAST(?1 AS INTEGER) > 0 AND rows > ?1) OR (CAST(?2 AS INTEGER) > 0 AND bytes > ?2)"
    " LIMIT ?3";
static const char SQL_GRAPH_USAGE[] =
    "SELECT count(DISTINCT g.id), count(v.version), coalesce(sum(length(CAST(v.source AS BLOB))), 0),"
    " coalesce(sum(CASE WHEN v.version = g.active_version THEN length(CAST(v.source AS BLOB)) END), 0)"
    " FROM graphs g LEFT JOIN graph_versions v ON v.graph_id = g.id WHERE g.tenant = ?1";

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

/* Read inside a transaction (the counters of one commit together). */
static bool usage_tx(gg_store_conn *c, void *user, gg_error *err) {
    usage_args *a = user;
    return usage_conn(c, a->tenant, a->out, err);
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

typedef struct {
    const char *tenant;
    long long low_rows, low_bytes;
    long long deleted, bytes; /* out: records and bytes deleted */
} drop_args;

static bool drop_slice_tx(gg_store_conn *c, void *user, gg_error *err) {
    drop_args *a = user;
    gg_history_usage u;
    if (!usage_conn(c, a->tenant, &u, err)) return false;
    long long need_rows = a->low_rows >= 0 && u.rows > a->low_rows ? u.rows - a->low_rows : 0;
    long long need_bytes = a->low_bytes >= 0 && u.bytes > a->low_bytes ? u.bytes - a->low_bytes : 0;
    if (need_rows <= 0 && need_bytes <= 0) return true;
    return gg_history_drop_oldest(c, a->tenant, need_rows, need_bytes, &a->deleted, &a->bytes, err);
}

/* One transaction: delete the tenant's oldest records (a slice of rows) and count them as
 * dropped. *deleted and *bytes get what went; *done when nothing was left to delete. */
static bool drop_slice(gg_store_conn *c, const char *tenant, long long low_rows, long long low_bytes,
                       long long *deleted, long long *bytes, bool *done, gg_error *err) {
    drop_args a = {tenant, low_rows, low_bytes, 0, 0};
    bool ok = gg_store_conn_write_tx(c, drop_slice_tx, &a, err);
    *deleted = ok ? a.deleted : 0;
    *bytes = ok ? a.bytes : 0;
    *done = ok && a.deleted == 0;
    return ok;
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
    gg_store *store;
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
    q->store = s;
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
    if (!gg_db_is_pg(q->conn)) { /* one writer commits there: it enforces max_rows itself */
        pthread_mutex_lock(&s->lock);
        s->quota = q;
        pthread_mutex_unlock(&s->lock);
    }
    return q;
}

/* See store_internal.h. The writer reads the keeper under the store's lock, which the stop
 * takes to unregister it before freeing. */
long long gg_store_quota_rows(gg_store *s) {
    pthread_mutex_lock(&s->lock);
    long long n = s->quota ? s->quota->opt.max_rows : 0;
    pthread_mutex_unlock(&s->lock);
    return n > 0 ? n : 0;
}

void gg_store_quota_counted(gg_store *s, long long rows, long long bytes) {
    pthread_mutex_lock(&s->lock);
    if (s->quota) count_slice(s->quota, rows, bytes);
    pthread_mutex_unlock(&s->lock);
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
    pthread_mutex_lock(&q->store->lock);
    if (q->store->quota == q) q->store->quota = NULL;
    pthread_mutex_unlock(&q->store->lock);
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
