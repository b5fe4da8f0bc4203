/* Unit tests for the history writer's batch layout (migrations/0019_history_batches.sql,
 * src/store/history.c and history_write.c), read back with SQL on history_batches and the
 * executions view: a run's versions (running then final in two commits, or in one batch;
 * interrupted at start then final), history_running kept, rows cut at 10 ms of starts and at 16 KB of body
 * with their n/bytes/first_ms/last_ms exact, every run found by the rows its start selects,
 * the quota trimming exactly down to 90 % (by the keeper's pass, and in the writer's own
 * commit), retention by age and by count, a line's exact bytes and the rows' order (tenant,
 * start, id), history_usage equal to the rows' sums throughout, bodies stored as zstd frames
 * (0020) beside rows of text, malformed frames refused, one batch of 300 tenants, a batch of
 * 1,200 lines in order (its radix sort). SQLite; each test on a fresh
 * database in its own directory. */
#include <string.h>

#include <sqlite3.h>

#include "fixture.h"
#include "../check_main.h"

/* One text of sql (a copy; NULL for a NULL). */
static char *query_text(const char *sql, const char *arg) {
    sqlite3_stmt *st = query_row(sql, arg);
    const unsigned char *t = sqlite3_column_text(st, 0);
    char *out = t ? strdup((const char *)t) : NULL;
    query_done(st);
    return out;
}

/* Every row's n, bytes, first_ms and last_ms agree with its body, its starts span at most
 * 10 ms, its lines are ordered by start, and history_usage holds the rows' sums. */
static void check_rows_consistent(void) {
    ck_assert_int_eq(query1("SELECT count(*) FROM history_batches WHERE bytes <> length(CAST(history_text(body) AS BLOB))"
                            " OR last_ms - first_ms > 10 OR last_ms < first_ms OR substr(history_text(body), -1) <> char(10)",
                            NULL),
                     0);
    ck_assert_int_eq(query1("SELECT count(*) FROM history_batches b WHERE n <> (SELECT count(*) FROM json_each('['"
                            " || replace(rtrim(history_text(b.body), char(10)), char(10), ',') || ']'))"
                            " OR first_ms <> (SELECT min(r.value ->> 2) FROM json_each('['"
                            " || replace(rtrim(history_text(b.body), char(10)), char(10), ',') || ']') r)"
                            " OR last_ms <> (SELECT max(r.value ->> 2) FROM json_each('['"
                            " || replace(rtrim(history_text(b.body), char(10)), char(10), ',') || ']') r)",
                            NULL),
                     0);
    ck_assert_int_eq(query1("SELECT count(*) FROM history_usage u WHERE rows <> (SELECT coalesce(sum(n), 0)"
                            " FROM history_batches b WHERE b.tenant = u.tenant) OR bytes <> (SELECT"
                            " coalesce(sum(bytes), 0) FROM history_batches b WHERE b.tenant = u.tenant)",
                            NULL),
                     0);
}

/* A run by key1 (see run_record), with a sub-ms duration when finished. */
static gg_exec_record *run_at(const char *tenant, long long started_ms, gg_exec_status st, size_t pad) {
    gg_exec_record *r = run_record(tenant, "key1", started_ms, st, pad);
    if (st != GG_EXEC_RUNNING) r->duration_ms = 1.25;
    return r;
}

static const char SQL_STATUS[] = "SELECT status FROM executions WHERE id = ?1";

static void assert_status(const char *id, const char *want) {
    char *got = query_text(SQL_STATUS, id);
    ck_assert_str_eq(got, want);
    free(got);
}

START_TEST(running_then_final_in_two_commits) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    gg_history *h = gg_history_start(s, NULL, &err);
    gg_exec_record *fin = run_at("acme", gg_wall_ms(), GG_EXEC_SUCCEEDED, 10);
    gg_exec_record *start = gg_exec_record_copy_header(fin);
    start->status = GG_EXEC_RUNNING;
    char id[33];
    memcpy(id, fin->id, sizeof id);
    ck_assert(gg_history_submit(h, start));
    ck_assert(gg_history_flush(h));
    assert_status(id, "running");
    ck_assert_int_eq(query1("SELECT count(*) FROM history_running WHERE id = ?1", id), 1);
    ck_assert(gg_history_submit(h, fin));
    ck_assert(gg_history_flush(h));
    assert_status(id, "succeeded");
    ck_assert_int_eq(query1("SELECT count(*) FROM history_running", NULL), 0);
    ck_assert_int_eq(query1("SELECT count(*) FROM history_batches", NULL), 2); /* two versions, two rows */
    ck_assert_int_eq(query1("SELECT rows FROM history_usage WHERE tenant = ?1", "acme"), 2);
    /* a late running record never hides the final one */
    gg_exec_record *late = run_at("acme", query1("SELECT started_at FROM executions WHERE id = ?1", id), GG_EXEC_RUNNING, 0);
    memcpy(late->id, id, sizeof id);
    ck_assert(gg_history_submit(h, late));
    ck_assert(gg_history_flush(h));
    assert_status(id, "succeeded");
    gg_history_stop(h);
    check_rows_consistent();
    gg_store_close(s);
}
END_TEST

START_TEST(interrupted_then_final) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    gg_history *h = gg_history_start(s, NULL, &err);
    gg_exec_record *r = run_at("acme", gg_wall_ms(), GG_EXEC_RUNNING, 0);
    char id[33];
    memcpy(id, r->id, sizeof id);
    long long t = r->started_ms;
    ck_assert(gg_history_submit(h, r));
    ck_assert(gg_history_flush(h));
    gg_history_stop(h); /* the process "crashed" with the run going */
    gg_history_options o = {.mark_interrupted = true};
    h = gg_history_start(s, &o, &err);
    ck_assert_msg(h != NULL, "%s", err.message);
    assert_status(id, "interrupted");
    char *e = query_text("SELECT error FROM executions WHERE id = ?1", id);
    ck_assert_str_eq(e, "interrupted: graphgate stopped before the run finished");
    free(e);
    ck_assert_int_eq(query1("SELECT count(*) FROM history_running", NULL), 0);
    ck_assert_int_eq(query1("SELECT count(*) FROM history_batches", NULL), 2);
    /* its final record (a journal replay, a resumed round) wins over interrupted */
    gg_exec_record *fin = run_at("acme", t, GG_EXEC_SUCCEEDED, 5);
    memcpy(fin->id, id, sizeof id);
    ck_assert(gg_history_submit(h, fin));
    ck_assert(gg_history_flush(h));
    assert_status(id, "succeeded");
    gg_history_stop(h);
    /* a second start finds nothing left running */
    h = gg_history_start(s, &o, &err);
    ck_assert_ptr_nonnull(h);
    gg_history_stop(h);
    assert_status(id, "succeeded");
    ck_assert_int_eq(query1("SELECT count(*) FROM history_batches", NULL), 3);
    check_rows_consistent();
    gg_store_close(s);
}
END_TEST

/* Rows cut where starts would span more than 10 ms, and where a body would pass 16 KB
 * (GG_HIST_BODY_MAX, src/store/store_internal.h; a bigger record alone); every run is in a
 * row that its start selects. */
START_TEST(rows_cut_at_10ms_and_16kb) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    ck_assert(gg_store_tenant_create(s, "beta", &err));
    gg_history_options o = {.flush_ms = 200, .max_payload_bytes = 4u << 20};
    gg_history *h = gg_history_start(s, &o, &err);
    long long base = gg_wall_ms() - 100000;
    /* 60 small runs a ms apart, in reverse order, two tenants: one batch */
    for (int i = 59; i >= 0; i--) ck_assert(gg_history_submit(h, run_at(i % 2 ? "beta" : "acme", base + i, GG_EXEC_SUCCEEDED, 20)));
    ck_assert(gg_history_flush(h));
    /* 3 of 6 KB in the same ms (two fit a row), then one of 24 KB */
    for (int i = 0; i < 3; i++) ck_assert(gg_history_submit(h, run_at("acme", base + 1000, GG_EXEC_SUCCEEDED, 6000)));
    ck_assert(gg_history_submit(h, run_at("acme", base + 1001, GG_EXEC_SUCCEEDED, 24000)));
    ck_assert(gg_history_flush(h));
    gg_history_stop(h);
    check_rows_consistent();
    ck_assert_int_eq(query1("SELECT count(*) FROM executions", NULL), 64);
    ck_assert_int_eq(query1("SELECT count(*) FROM history_batches WHERE n = 1 AND bytes > 16384", NULL), 1);
    ck_assert_int_eq(query1("SELECT count(*) FROM history_batches WHERE bytes > 16384 AND n > 1", NULL), 0);
    ck_assert_int_eq(query1("SELECT sum(n) FROM history_batches WHERE bytes > 6000", NULL), 4);
    ck_assert_int_eq(query1("SELECT count(*) FROM history_batches WHERE bytes > 6000", NULL), 3);
    ck_assert_int_eq(query1("SELECT count(*) FROM history_batches WHERE bytes > 12000", NULL), 2);
    /* 30 small runs a tenant over 60 ms: at least 3 rows each, at most 11 ms of starts a row */
    ck_assert_int_ge(query1("SELECT count(*) FROM history_batches WHERE tenant = ?1 AND bytes < 10000", "beta"), 3);
    /* each run lies in a row with last_ms in [t, t + 10] and first_ms <= t */
    ck_assert_int_eq(query1("SELECT count(*) FROM executions e WHERE NOT EXISTS (SELECT 1 FROM history_batches b"
                            " WHERE b.tenant = e.tenant AND b.last_ms BETWEEN e.started_at AND e.started_at + 10"
                            " AND b.first_ms <= e.started_at AND instr(history_text(b.body), '[\"' || e.id || '\"') > 0)",
                            NULL),
                     0);
    gg_store_close(s);
}
END_TEST

/* A run started at the edge of a cut (the next commit's row starts with older finals) is
 * still found by its start's window. */
START_TEST(run_found_across_a_cut) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    gg_history_options o = {.flush_ms = 200};
    gg_history *h = gg_history_start(s, &o, &err);
    long long base = gg_wall_ms() - 50000;
    gg_exec_record *longrun = run_at("acme", base, GG_EXEC_SUCCEEDED, 3);
    gg_exec_record *start = gg_exec_record_copy_header(longrun);
    start->status = GG_EXEC_RUNNING;
    ck_assert(gg_history_submit(h, start));
    for (int i = 1; i <= 25; i++) ck_assert(gg_history_submit(h, run_at("acme", base + i, GG_EXEC_SUCCEEDED, 3)));
    ck_assert(gg_history_flush(h));
    /* the next commit: the old final first, then runs 30 ms later */
    ck_assert(gg_history_submit(h, longrun));
    for (int i = 30; i < 40; i++) ck_assert(gg_history_submit(h, run_at("acme", base + i, GG_EXEC_SUCCEEDED, 3)));
    ck_assert(gg_history_flush(h));
    gg_history_stop(h);
    check_rows_consistent();
    ck_assert_int_eq(query1("SELECT count(*) FROM executions WHERE status = 'succeeded'", NULL), 36);
    ck_assert_int_eq(query1("SELECT count(*) FROM executions e WHERE NOT EXISTS (SELECT 1 FROM history_batches b"
                            " WHERE b.tenant = e.tenant AND b.last_ms BETWEEN e.started_at AND e.started_at + 10"
                            " AND b.first_ms <= e.started_at AND instr(history_text(b.body), '[\"' || e.id || '\"') > 0)",
                            NULL),
                     0);
    ck_assert_int_eq(query1("SELECT count(*) FROM history_running", NULL), 0);
    gg_store_close(s);
}
END_TEST

static gg_exec_record *succeeded_at(const char *tenant, long long started_ms, size_t pad) {
    return run_at(tenant, started_ms, GG_EXEC_SUCCEEDED, pad);
}

/* n succeeded runs step ms apart from base, through a writer that commits every 50 ms. */
static void write_runs(gg_store *s, const char *tenant, int n, long long base, long long step) {
    static const gg_history_options o = {.flush_ms = 50};
    write_runs_with(s, &o, succeeded_at, tenant, n, base, step, 50);
}

/* The quota pass deletes the oldest rows whole and trims the next, to exactly 90 %. */
START_TEST(quota_trims_exactly) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    ck_assert(gg_store_tenant_create(s, "beta", &err));
    long long base = gg_wall_ms() - 100000;
    write_runs(s, "acme", 100, base, 3);
    write_runs(s, "beta", 10, base, 3);
    ck_assert_int_eq(gg_store_history_quota_enforce(s, 50, 0, NULL, &err), 55);
    gg_history_usage u;
    ck_assert(gg_store_history_usage(s, "acme", &u, &err));
    ck_assert_int_eq(u.rows, 45);
    ck_assert_int_eq(u.dropped, 55);
    ck_assert_int_eq(query1("SELECT count(*) FROM executions WHERE tenant = ?1", "acme"), 45);
    ck_assert_int_eq(query1("SELECT min(started_at) FROM executions WHERE tenant = ?1", "acme") - base, 55 * 3);
    ck_assert_int_eq(query1("SELECT count(*) FROM executions WHERE tenant = ?1", "beta"), 10);
    check_rows_consistent();
    /* by bytes: down to 90 % of the quota or below, the oldest first */
    long long before = u.bytes;
    ck_assert_int_gt(gg_store_history_quota_enforce(s, 0, before / 2, NULL, &err), 0);
    ck_assert(gg_store_history_usage(s, "acme", &u, &err));
    ck_assert_int_le(u.bytes, before / 2 - before / 2 / 10);
    ck_assert_int_gt(u.bytes, before / 2 - before / 2 / 10 - 200); /* within a record */
    ck_assert_int_eq(u.dropped_bytes, query1("SELECT dropped_bytes FROM history_usage WHERE tenant = ?1", "acme"));
    ck_assert_int_gt(u.dropped_bytes, before - before / 2);
    check_rows_consistent();
    gg_store_close(s);
}
END_TEST

/* With a quota keeper on the store, the writer's own commit takes a tenant over max_rows
 * back to 90 % (before the keeper's first pass), counted in the keeper's stats. */
START_TEST(quota_in_the_writers_commit) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    gg_history_quota_options qo = {.max_rows = 20, .interval_ms = 600000};
    gg_history_quota *q = gg_history_quota_start(s, &qo, &err);
    ck_assert_msg(q != NULL, "%s", err.message);
    long long base = gg_wall_ms() - 100000;
    write_runs(s, "acme", 50, base, 2);
    gg_history_quota_stats st;
    gg_history_quota_get_stats(q, &st);
    ck_assert_int_eq(st.passes, 0);
    gg_history_usage u;
    ck_assert(gg_store_history_usage(s, "acme", &u, &err));
    ck_assert_int_le(u.rows, 20);
    ck_assert_int_ge(u.rows, 18);
    ck_assert_int_eq(u.dropped, 50 - u.rows);
    ck_assert_int_eq((long long)st.dropped, u.dropped);
    ck_assert_int_eq((long long)st.dropped_bytes, u.dropped_bytes);
    ck_assert_int_eq(query1("SELECT min(started_at) FROM executions WHERE tenant = ?1", "acme") - base, 2 * u.dropped);
    check_rows_consistent();
    gg_history_quota_stop(q);
    gg_store_close(s);
}
END_TEST

START_TEST(retention_by_age_and_count) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    ck_assert(gg_store_tenant_create(s, "beta", &err));
    long long now = gg_wall_ms();
    write_runs(s, "acme", 40, now - 40000, 1000); /* one a second over the last 40 s */
    write_runs(s, "beta", 5, now - 100000, 1);
    /* older than 20.5 s: acme's first 20 (trimmed inside rows when they straddle) and beta's 5 */
    ck_assert_int_eq(gg_store_executions_prune(s, 20500, 0, &err), 25);
    ck_assert_int_eq(query1("SELECT count(*) FROM executions WHERE tenant = ?1", "acme"), 20);
    ck_assert_int_eq(query1("SELECT count(*) FROM executions WHERE tenant = ?1", "beta"), 0);
    check_rows_consistent();
    /* keep the 7 newest of all tenants */
    ck_assert_int_eq(gg_store_executions_prune(s, 0, 7, &err), 13);
    ck_assert_int_eq(query1("SELECT count(*) FROM executions", NULL), 7);
    ck_assert_int_eq(query1("SELECT min(started_at) FROM executions", NULL), now - 40000 + 33 * 1000);
    check_rows_consistent();
    gg_history_usage u;
    ck_assert(gg_store_history_usage(s, "acme", &u, &err));
    ck_assert_int_eq(u.rows, 7);
    ck_assert_int_eq(u.dropped, 0); /* retention is not the quota */
    gg_store_close(s);
}
END_TEST

/* A line's exact bytes (GG_HL_*: quote, backslash, a control byte, invalid UTF-8, a JSON
 * text with a newline, an empty one, nulls) and the rows' order: tenants by name, then
 * start, then id, whatever the order of submission. */
START_TEST(lines_exact_and_ordered) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "zeta", &err));
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    gg_history_options o = {.flush_ms = 200};
    gg_history *h = gg_history_start(s, &o, &err);
    long long base = gg_wall_ms() - 100000;
    gg_exec_record *c = gg_exec_record_new("zeta", "g", 1, "t", "key1", NULL);
    snprintf(c->id, sizeof c->id, "%012llx%s", (unsigned long long)base + 1, "11111111111111111111");
    c->started_ms = base + 1;
    c->finished_ms = base + 1;
    c->status = GG_EXEC_SUCCEEDED;
    gg_exec_record *a = gg_exec_record_new("acme", "g\"q\\b", 3, "caf\xc3\xa9\x01", NULL, NULL);
    snprintf(a->id, sizeof a->id, "%012llx%s", (unsigned long long)base, "ffffffffffffffffffff");
    a->started_ms = base;
    a->finished_ms = base + 2;
    a->duration_ms = 1.25;
    a->status = GG_EXEC_FAILED;
    a->error = strdup("bad\xff");
    a->arguments_text = strdup("{\"a\":\n1}");
    a->result_text = strdup("");
    snprintf(a->trace_id, sizeof a->trace_id, "0af7651916cd43dd8448eb211c80319c");
    gg_exec_record *b = gg_exec_record_new("acme", "g", 1, "t", "key1", NULL);
    snprintf(b->id, sizeof b->id, "%012llx%s", (unsigned long long)base, "00000000000000000000");
    b->started_ms = base;
    b->finished_ms = base + 1;
    b->status = GG_EXEC_SUCCEEDED;
    memcpy(b->parent_id, a->id, sizeof b->parent_id);
    char ida[33], idb[33], idc[33];
    memcpy(ida, a->id, sizeof ida);
    memcpy(idb, b->id, sizeof idb);
    memcpy(idc, c->id, sizeof idc);
    ck_assert(gg_history_submit(h, c)); /* one batch: zeta, then acme's in reverse id order */
    ck_assert(gg_history_submit(h, a));
    ck_assert(gg_history_submit(h, b));
    ck_assert(gg_history_flush(h));
    gg_history_stop(h);
    char want[1024];
    snprintf(want, sizeof want,
             "[\"%s\",1,%lld,%lld,0,1,\"g\",\"t\",\"key1\",null,null,null,null,null,\"%s\"]\n"
             "[\"%s\",2,%lld,%lld,1250,3,\"g\\\"q\\\\b\",\"caf\xc3\xa9\\u0001\",null,\"bad\\ufffd\","
             "\"{\\\"a\\\":\\n1}\",\"\",null,\"0af7651916cd43dd8448eb211c80319c\",null]\n",
             idb, base, base + 1, ida, ida, base, base + 2);
    char *got = query_text("SELECT history_text(body) FROM history_batches WHERE tenant = ?1", "acme");
    ck_assert_str_eq(got, want);
    free(got);
    snprintf(want, sizeof want, "[\"%s\",1,%lld,%lld,0,1,\"g\",\"t\",\"key1\",null,null,null,null,null,null]\n", idc,
             base + 1, base + 1);
    got = query_text("SELECT history_text(body) FROM history_batches WHERE tenant = ?1", "zeta");
    ck_assert_str_eq(got, want);
    free(got);
    ck_assert_int_eq(query1("SELECT count(*) FROM history_batches a, history_batches z WHERE a.tenant = 'acme'"
                            " AND z.tenant = 'zeta' AND a.rowid < z.rowid",
                            NULL),
                     1);
    check_rows_consistent();
    gg_store_close(s);
}
END_TEST

/* sql run on the test database, writable (SQLite, with history_text). */
/* Tenant t's name: "t007", or for odd t one of 16 bytes or more ("t007-with-a-long-name"),
 * which the writer compares by its text rather than by the copy it keeps of short names. */
static void tenant_name(char *buf, size_t size, int t) {
    snprintf(buf, size, t % 2 ? "t%03d-with-a-long-name" : "t%03d", t);
}

/* One batch holding the records of 300 tenants, 100 of them unknown (deleted): more than the
 * writer's per-batch table of tenants takes (TENANT_CACHE / 2, history.c), so its lookups
 * by hash and its fallback to SQL both run. Every known tenant gets exactly its records, in
 * rows of its own; the unknown ones' are dropped. */
START_TEST(one_batch_of_many_tenants) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    char name[40];
    for (int t = 0; t < 200; t++) {
        tenant_name(name, sizeof name, t);
        ck_assert(gg_store_tenant_create(s, name, &err));
    }
    gg_history_options o = {.flush_ms = 60000}; /* one batch: nothing is written before the flush */
    gg_history *h = gg_history_start(s, &o, &err);
    ck_assert_msg(h != NULL, "%s", err.message);
    long long t0 = gg_wall_ms();
    for (int k = 0; k < 3; k++)
        for (int t = 0; t < 300; t++) { /* interleaved: each tenant's records far apart in the batch */
            tenant_name(name, sizeof name, (t * 7) % 300);
            ck_assert(gg_history_submit(h, run_at(name, t0 + k, GG_EXEC_SUCCEEDED, (size_t)t)));
        }
    ck_assert(gg_history_flush(h));
    gg_history_stats st;
    gg_history_get_stats(h, &st);
    ck_assert_uint_eq(st.batches, 1);
    ck_assert_uint_eq(st.written, 900);
    gg_history_stop(h);
    ck_assert_int_eq(query1("SELECT count(*) FROM executions", NULL), 600);
    ck_assert_int_eq(query1("SELECT count(*) FROM history_usage WHERE rows = 3", NULL), 200);
    ck_assert_int_eq(query1("SELECT count(*) FROM history_usage WHERE tenant >= 't200'", NULL), 0);
    ck_assert_int_eq(query1("SELECT count(DISTINCT tenant) FROM executions", NULL), 200);
    ck_assert_int_eq(query1("SELECT count(*) FROM executions WHERE tenant >= 't200'", NULL), 0);
    /* each run under its own tenant: the k-th of the loop (its result k bytes) is t(7k mod 300) */
    ck_assert_int_eq(query1("SELECT count(*) FROM executions WHERE CAST(substr(tenant, 2) AS INTEGER) <>"
                            " ((length(result ->> '$') * 7) % 300)",
                            NULL),
                     0);
    check_rows_consistent();
    gg_store_close(s);
}
END_TEST

/* A batch of 1,200 lines over three tenants, five milliseconds, ids of each millisecond in
 * random order: the writer sorts it by radix (history_write.c, sort_radix; the merge takes
 * batches with few runs). Among them, ids that agree on the bytes its key holds (13th to
 * 15th) and ids whose time differs from their start, which only its insertion pass orders.
 * Every tenant's lines, read row after row, come in (start, id) order, each exactly once. */
START_TEST(large_batch_sorted_by_start_and_id) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    const char *tenants[3] = {"acme", "beta", "zeta"};
    for (int t = 0; t < 3; t++) ck_assert(gg_store_tenant_create(s, tenants[t], &err));
    gg_history_options o = {.flush_ms = 60000}; /* one batch */
    gg_history *h = gg_history_start(s, &o, &err);
    ck_assert_msg(h != NULL, "%s", err.message);
    long long base = gg_wall_ms() - 100000;
    unsigned seed = 12345;
    for (int i = 0; i < 1200; i++) {
        long long start = base + i % 5;
        gg_exec_record *r = run_at(tenants[i % 3], start, GG_EXEC_SUCCEEDED, 1);
        char tail[21];
        for (int k = 0; k < 20; k++) {
            seed = seed * 1103515245u + 12345u;
            tail[k] = "0123456789abcdef"[(seed >> 16) & 15];
        }
        tail[20] = 0;
        if (i % 7 == 0) memcpy(tail, "777", 3);           /* the key's bytes alike: the id decides later */
        long long id_t = i % 11 == 0 ? start + 1 : start; /* an id whose time is not its start */
        snprintf(r->id, sizeof r->id, "%012llx%s", (unsigned long long)id_t, tail);
        ck_assert(gg_history_submit(h, r));
    }
    ck_assert(gg_history_flush(h));
    gg_history_stats st;
    gg_history_get_stats(h, &st);
    ck_assert_uint_eq(st.batches, 1);
    gg_history_stop(h);
    for (int t = 0; t < 3; t++) {
        sqlite3_stmt *q = query_row("SELECT history_text(body) FROM history_batches WHERE tenant = ?1 ORDER BY rowid",
                                    tenants[t]);
        long long prev_start = -1, lines = 0;
        char prev_id[33] = "";
        for (int rc = SQLITE_ROW; rc == SQLITE_ROW; rc = sqlite3_step(q)) {
            const char *body = (const char *)sqlite3_column_text(q, 0);
            for (const char *p = body, *nl; (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
                json_t *line = json_loadb(p, (size_t)(nl - p), 0, NULL);
                ck_assert_ptr_nonnull(line);
                const char *id = json_string_value(json_array_get(line, 0));
                long long start = json_integer_value(json_array_get(line, 2));
                ck_assert_msg(start > prev_start || (start == prev_start && strcmp(id, prev_id) > 0),
                              "%s: %lld %s after %lld %s", tenants[t], start, id, prev_start, prev_id);
                prev_start = start;
                snprintf(prev_id, sizeof prev_id, "%s", id);
                json_decref(line);
                lines++;
            }
        }
        query_done(q);
        ck_assert_int_eq(lines, 400);
    }
    check_rows_consistent();
    gg_store_close(s);
}
END_TEST

/* A run's RUNNING record and its final one in the same batch: only the final is written (the
 * writer skips a RUNNING record its batch supersedes) and nothing is left in history_running;
 * another run's RUNNING record in that batch is written and kept running, and its final in
 * a later batch clears it. */
START_TEST(running_and_final_in_one_batch) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    gg_history_options o = {.flush_ms = 60000}; /* one batch a flush */
    gg_history *h = gg_history_start(s, &o, &err);
    ck_assert_msg(h != NULL, "%s", err.message);
    long long t = gg_wall_ms();
    gg_exec_record *fin = run_at("acme", t, GG_EXEC_SUCCEEDED, 10);
    gg_exec_record *start = gg_exec_record_copy_header(fin);
    start->status = GG_EXEC_RUNNING;
    gg_exec_record *other = run_at("acme", t + 1, GG_EXEC_RUNNING, 0);
    gg_exec_record *other_fin = gg_exec_record_copy_header(other);
    other_fin->status = GG_EXEC_FAILED;
    other_fin->finished_ms = t + 2;
    char id[33], oid[33];
    memcpy(id, fin->id, sizeof id);
    memcpy(oid, other->id, sizeof oid);
    ck_assert(gg_history_submit(h, start));
    ck_assert(gg_history_submit(h, other));
    ck_assert(gg_history_submit(h, fin));
    ck_assert(gg_history_flush(h));
    gg_history_stats st;
    gg_history_get_stats(h, &st);
    ck_assert_uint_eq(st.batches, 1);
    assert_status(id, "succeeded");
    assert_status(oid, "running");
    ck_assert_int_eq(query1("SELECT sum(n) FROM history_batches", NULL), 2); /* fin and other */
    ck_assert_int_eq(query1("SELECT count(*) FROM history_running", NULL), 1);
    ck_assert_int_eq(query1("SELECT count(*) FROM history_running WHERE id = ?1", oid), 1);
    ck_assert(gg_history_submit(h, other_fin));
    ck_assert(gg_history_flush(h));
    assert_status(oid, "failed");
    ck_assert_int_eq(query1("SELECT count(*) FROM history_running", NULL), 0);
    gg_history_stop(h);
    check_rows_consistent();
    gg_store_close(s);
}
END_TEST

static void exec_rw(const char *sql) {
    sqlite3 *db = NULL;
    ck_assert_int_eq(sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_create_function(db, "history_text", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, history_text_fn, NULL, NULL);
    char *msg = NULL;
    ck_assert_msg(sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK, "%s: %s", sql, msg ? msg : "");
    sqlite3_close(db);
}

/* gg_store_execution_get's error code for id ("" when found). */
static char *get_code(gg_store *s, const char *id) {
    static char code[32];
    gg_error err = GG_ERROR_INIT;
    json_t *ex = gg_store_execution_get(s, "acme", id, &err);
    snprintf(code, sizeof code, "%s", ex ? "" : err.code);
    json_decref(ex);
    gg_error_clear(&err);
    return code;
}

/* The first run id of the row with the rowid-th smallest rowid (0-based). */
static char *first_id_of_row(int k) {
    char sql[200];
    snprintf(sql, sizeof sql,
             "SELECT substr(history_text(body), 3, 32) FROM history_batches ORDER BY rowid LIMIT 1 OFFSET %d", k);
    return query_text(sql, NULL);
}

/* SQLite stores a body as one zstd frame when that is smaller (migrations/0020) with bytes
 * still the text's; a row of text beside them (as rows written before 0020 are) reads
 * alike; a body that is not a whole frame, or a frame claiming more than a row can hold, is
 * an error of that read (get and list), never a crash or an allocation of what it claims. */
START_TEST(bodies_compressed_text_rows_and_malformed_frames) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    ck_assert(gg_store_tenant_create(s, "beta", &err));
    long long base = gg_wall_ms() - 100000;
    /* rows of 5-6 runs (10 ms of starts each) of 2 KB: bodies past GG_HIST_COMPRESS_MIN */
    static const gg_history_options o = {.flush_ms = 50};
    write_runs_with(s, &o, succeeded_at, "acme", 60, base, 2, 2000);
    write_runs(s, "beta", 5, base, 2); /* short bodies stay text */
    check_rows_consistent();
    long long rows = query1("SELECT count(*) FROM history_batches", NULL);
    ck_assert_int_ge(rows, 10);
    ck_assert_int_eq(query1("SELECT count(*) FROM history_batches WHERE typeof(body) <> 'blob' AND tenant = 'acme'", NULL), 0);
    ck_assert_int_eq(query1("SELECT count(*) FROM history_batches WHERE typeof(body) <> 'text' AND tenant = 'beta'", NULL), 0);
    ck_assert_int_lt(3 * query1("SELECT sum(length(body)) FROM history_batches WHERE tenant = 'acme'", NULL),
                     query1("SELECT sum(bytes) FROM history_batches WHERE tenant = 'acme'", NULL));
    /* the quota trims compressed rows exactly (a cut row's rest written again) */
    ck_assert_int_eq(gg_store_history_quota_enforce(s, 50, 0, NULL, &err), 15);
    ck_assert_int_eq(query1("SELECT count(*) FROM executions WHERE tenant = ?1", "acme"), 45);
    ck_assert_int_eq(query1("SELECT min(started_at) FROM executions WHERE tenant = ?1", "acme") - base, 15 * 2);
    check_rows_consistent();
    /* acme's row 0 back to text: both forms read, in one listing */
    exec_rw("UPDATE history_batches SET body = history_text(body) WHERE rowid = (SELECT min(rowid) FROM history_batches)");
    ck_assert_int_eq(query1("SELECT count(*) FROM history_batches WHERE typeof(body) = 'text' AND tenant = 'acme'", NULL), 1);
    char *id0 = first_id_of_row(0), *id1 = first_id_of_row(1), *id2 = first_id_of_row(2);
    ck_assert_str_eq(get_code(s, id0), "");
    ck_assert_str_eq(get_code(s, id1), "");
    gg_exec_filter f = {.limit = 1000};
    json_t *l = gg_store_executions_list(s, "acme", &f, &err);
    ck_assert_msg(l != NULL, "%s", err.message);
    ck_assert_int_eq(json_array_size(json_object_get(l, "executions")), 45);
    json_decref(l);
    check_rows_consistent();
    /* row 1: a zstd magic and garbage; row 2: a frame header claiming 2^40 bytes */
    exec_rw("UPDATE history_batches SET body = CAST(x'28b52ffd' || randomblob(40) AS BLOB) WHERE rowid = "
            "(SELECT rowid FROM history_batches ORDER BY rowid LIMIT 1 OFFSET 1)");
    exec_rw("UPDATE history_batches SET body = CAST(x'28b52ffde00000000000010000' || randomblob(40) AS BLOB) WHERE rowid = "
            "(SELECT rowid FROM history_batches ORDER BY rowid LIMIT 1 OFFSET 2)");
    ck_assert_int_eq(query1("SELECT count(*) FROM history_batches WHERE typeof(body) = 'blob' AND length(body) = 44"
                            " AND hex(substr(body, 1, 4)) = '28B52FFD'", NULL), 1);
    ck_assert_str_eq(get_code(s, id0), "");
    ck_assert_str_eq(get_code(s, id1), "db");
    ck_assert_str_eq(get_code(s, id2), "db");
    l = gg_store_executions_list(s, "acme", &f, &err);
    ck_assert_ptr_null(l);
    ck_assert_str_eq(err.code, "db");
    gg_error_clear(&err);
    free(id0);
    free(id1);
    free(id2);
    gg_store_close(s);
}
END_TEST

int main(void) {
    Suite *su = suite_create("history_batches");
    TCase *tc = tcase_create("history_batches");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, running_then_final_in_two_commits);
    tcase_add_test(tc, interrupted_then_final);
    tcase_add_test(tc, rows_cut_at_10ms_and_16kb);
    tcase_add_test(tc, run_found_across_a_cut);
    tcase_add_test(tc, quota_trims_exactly);
    tcase_add_test(tc, quota_in_the_writers_commit);
    tcase_add_test(tc, retention_by_age_and_count);
    tcase_add_test(tc, lines_exact_and_ordered);
    tcase_add_test(tc, bodies_compressed_text_rows_and_malformed_frames);
    tcase_add_test(tc, one_batch_of_many_tenants);
    tcase_add_test(tc, large_batch_sorted_by_start_and_id);
    tcase_add_test(tc, running_and_final_in_one_batch);
    suite_add_tcase(su, tc);
    return gg_check_run(su);
}
