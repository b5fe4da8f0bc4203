/* Unit tests for what a tenant holds and the per-tenant history quota (src/store/usage.c,
 * migrations 0004 and 0019): the usage counts (records and body bytes of history_batches,
 * added by the writer in its commit, counted out by retention and the quota) against an
 * independent sum, the quota pass (oldest first, down to 90 %, counted, other tenants
 * untouched), the keeper thread, the per-run node bounds of the writer, graph usage and the
 * 0004 backfill carried through 0019. Each test works on a fresh
 * database in its own temporary directory. */
#include <string.h>

#include <sqlite3.h>

#include "fixture.h"
#include "../check_main.h"

/* What the tenant's history_batches bodies hold, summed here independently of the counters. */
static long long summed_bytes(const char *tenant) {
    return query1("SELECT coalesce(sum(length(CAST(history_text(body) AS BLOB))), 0) FROM history_batches WHERE tenant = ?1", tenant);
}

/* The tenant's records (every version of a run is one), counted from the bodies' lines. */
static long long summed_records(const char *tenant) {
    return query1("SELECT coalesce(sum(length(history_text(body)) - length(replace(history_text(body), '\n', ''))), 0) FROM history_batches"
                  " WHERE tenant = ?1",
                  tenant);
}

/* A finished run started at started_ms whose result is a string of pad bytes, with its
 * entry node's record. */
static gg_exec_record *run_at(const char *tenant, long long started_ms, size_t pad) {
    gg_exec_record *r = run_record(tenant, NULL, started_ms, GG_EXEC_SUCCEEDED, pad);
    ck_assert_ptr_nonnull(gg_exec_record_add_node(r, "entry", "entry", started_ms, started_ms + 1, NULL,
                                                  json_integer(1), NULL));
    return r;
}

/* n such runs a ms apart from base_ms, through a writer with the default options. */
static void write_runs(gg_store *s, const char *tenant, int n, size_t pad, long long base_ms) {
    write_runs_with(s, NULL, run_at, tenant, n, base_ms, 1, pad);
}

/* n finished runs written with plain SQL: a database at an older schema than the history
 * writer's (which binds every column the latest migration has). */
static void insert_runs_sql(const char *tenant, int n, size_t pad, long long base_ms) {
    sqlite3 *db = NULL;
    ck_assert_int_eq(sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt *st = NULL;
    ck_assert_msg(sqlite3_prepare_v2(db,
                                     "INSERT INTO executions(id, tenant, graph, version, tool, status, started_at,"
                                     " finished_at, duration_ms, result, nodes) VALUES(?1, ?2, 'g', 1, 't', 'succeeded',"
                                     " ?3, ?3 + 1, 1, ?4, '[[0,\"entry\",\"entry\",0,1,1,1]]')",
                                     -1, &st, NULL) == SQLITE_OK,
                  "%s", sqlite3_errmsg(db));
    char *text = malloc(pad + 3);
    text[0] = '"';
    memset(text + 1, 'x', pad);
    memcpy(text + 1 + pad, "\"", 2);
    for (int i = 0; i < n; i++) {
        char id[33];
        snprintf(id, sizeof id, "%016llx%016x", (unsigned long long)(base_ms + i), i);
        sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, tenant, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, base_ms + i);
        sqlite3_bind_text(st, 4, text, -1, SQLITE_STATIC);
        ck_assert_int_eq(sqlite3_step(st), SQLITE_DONE);
        sqlite3_reset(st);
    }
    free(text);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* r's RUNNING row (its header, no result yet), written before r itself is submitted. */
static void submit_running(gg_history *h, const gg_exec_record *r) {
    gg_exec_record *head = gg_exec_record_copy_header(r);
    head->status = GG_EXEC_RUNNING;
    json_decref(head->result);
    head->result = NULL;
    ck_assert(gg_history_submit(h, head));
    gg_history_flush(h);
}

/* Write r through a writer with options o (NULL: defaults) and read the run back. */
static json_t *write_and_get(gg_store *s, const gg_history_options *o, gg_exec_record *r) {
    gg_error err = GG_ERROR_INIT;
    gg_history *h = gg_history_start(s, o, &err);
    ck_assert_msg(h != NULL, "%s", err.message);
    char id[33];
    memcpy(id, r->id, sizeof id);
    ck_assert(gg_history_submit(h, r));
    gg_history_flush(h);
    gg_history_stop(h);
    json_t *ex = gg_store_execution_get(s, "acme", id, &err);
    ck_assert_msg(ex != NULL, "%s", err.message);
    return ex;
}

static gg_history_usage usage_of(gg_store *s, const char *tenant) {
    gg_error err = GG_ERROR_INIT;
    gg_history_usage u;
    ck_assert_msg(gg_store_history_usage(s, tenant, &u, &err), "%s", err.message);
    return u;
}

START_TEST(usage_follows_inserts_updates_deletes) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    ck_assert(gg_store_tenant_create(s, "beta", &err));
    gg_history_usage u = usage_of(s, "acme");
    ck_assert_int_eq(u.rows, 0);
    ck_assert_int_eq(u.bytes, 0);
    write_runs(s, "acme", 7, 300, 1700000000000LL);
    write_runs(s, "beta", 2, 50, 1700000000000LL);
    u = usage_of(s, "acme");
    ck_assert_int_eq(u.rows, 7);
    ck_assert_int_eq(u.bytes, summed_bytes("acme"));
    ck_assert_int_gt(u.bytes, 7 * 300);
    ck_assert_int_eq(usage_of(s, "beta").bytes, summed_bytes("beta"));
    /* a RUNNING record, then its final state in a later commit: two versions, two records */
    gg_history *h = gg_history_start(s, NULL, &err);
    gg_exec_record *r = run_at("acme", 1700000001000LL, 10);
    submit_running(h, r);
    ck_assert_int_eq(usage_of(s, "acme").bytes, summed_bytes("acme"));
    json_decref(r->result);
    r->result = json_string("a much longer final result than the running row had");
    ck_assert(gg_history_submit(h, r));
    gg_history_flush(h);
    gg_history_stop(h);
    u = usage_of(s, "acme");
    ck_assert_int_eq(u.rows, 9);
    ck_assert_int_eq(u.rows, summed_records("acme"));
    ck_assert_int_eq(u.bytes, summed_bytes("acme"));
    /* retention deletes follow too: the 3 newest records stay (beta's 2 and acme's 6 oldest go) */
    ck_assert_int_eq(gg_store_executions_prune(s, 0, 3, &err), 8);
    u = usage_of(s, "acme");
    ck_assert_int_eq(u.rows, 3);
    ck_assert_int_eq(u.rows, summed_records("acme"));
    ck_assert_int_eq(u.bytes, summed_bytes("acme"));
    ck_assert_int_eq(u.dropped, 0); /* retention is not the quota */
    /* a deleted tenant takes its usage row with it */
    ck_assert(gg_store_tenant_delete(s, "beta", &err));
    ck_assert_int_eq(query1("SELECT count(*) FROM history_usage WHERE tenant = ?1", "beta"), 0);
    ck_assert_int_eq(usage_of(s, "beta").rows, 0);
    gg_store_close(s);
}
END_TEST

/* Every delete counts itself out in its own transaction: retention by count across tenants
 * and by age (everything), then history starts again from zero. */
START_TEST(usage_exact_after_deletes) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    ck_assert(gg_store_tenant_create(s, "beta", &err));
    long long base = 1700000000000LL;
    write_runs(s, "acme", 6, 100, base);
    write_runs(s, "beta", 2, 70, base + 50);
    ck_assert_int_eq(gg_store_executions_prune(s, 0, 5, &err), 3);
    gg_history_usage u = usage_of(s, "acme"), v = usage_of(s, "beta");
    ck_assert_int_eq(u.rows + v.rows, 5);
    ck_assert_int_eq(u.rows, summed_records("acme"));
    ck_assert_int_eq(u.bytes, summed_bytes("acme"));
    ck_assert_int_eq(v.bytes, summed_bytes("beta"));
    /* everything goes (by age), and history starts again */
    ck_assert_int_eq(gg_store_executions_prune(s, 1, 0, &err), 5);
    ck_assert_int_eq(usage_of(s, "acme").rows, 0);
    ck_assert_int_eq(usage_of(s, "acme").bytes, 0);
    ck_assert_int_eq(query1("SELECT count(*) FROM history_batches WHERE tenant = ?1", "acme"), 0);
    ck_assert_int_eq(query1("SELECT count(*) FROM history_batches WHERE tenant = ?1", "beta"), 0);
    write_runs(s, "acme", 3, 50, base + 200);
    u = usage_of(s, "acme");
    ck_assert_int_eq(u.rows, 3);
    ck_assert_int_eq(u.bytes, summed_bytes("acme"));
    ck_assert_int_eq(usage_of(s, "beta").rows, 0);
    gg_store_close(s);
}
END_TEST

START_TEST(quota_drops_oldest_first_and_counts) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    ck_assert(gg_store_tenant_create(s, "beta", &err));
    long long base = 1700000000000LL;
    write_runs(s, "acme", 40, 1000, base);
    write_runs(s, "beta", 30, 1000, base);
    long long before = usage_of(s, "acme").bytes;
    /* rows: 20 at most → down to 18, the 22 oldest go; beta (30 rows) is over too */
    long long bytes = 0;
    ck_assert_int_eq(gg_store_history_quota_enforce(s, 20, 0, &bytes, &err), 22 + 12);
    gg_history_usage u = usage_of(s, "acme");
    ck_assert_int_eq(u.rows, 18);
    ck_assert_int_eq(u.dropped, 22);
    ck_assert_int_eq(u.dropped_bytes, before - u.bytes);
    ck_assert_int_eq(u.bytes, summed_bytes("acme"));
    ck_assert_int_eq(query1("SELECT min(started_at) FROM executions WHERE tenant = ?1", "acme"), base + 22);
    ck_assert_int_eq(usage_of(s, "beta").rows, 18);
    ck_assert_int_eq(bytes, u.dropped_bytes + usage_of(s, "beta").dropped_bytes);
    /* under the bound: nothing to do */
    ck_assert_int_eq(gg_store_history_quota_enforce(s, 20, 0, NULL, &err), 0);
    /* bytes: at most 10 runs' worth → down to 90 % of that, oldest first */
    long long per_run = u.bytes / u.rows, max_bytes = 10 * per_run;
    ck_assert_int_gt(gg_store_history_quota_enforce(s, 0, max_bytes, NULL, &err), 0);
    u = usage_of(s, "acme");
    ck_assert_int_le(u.bytes, max_bytes - max_bytes / 10);
    ck_assert_int_ge(u.rows, 8);
    ck_assert_int_eq(u.dropped, 40 - u.rows);
    ck_assert_int_eq(query1("SELECT max(started_at) FROM executions WHERE tenant = ?1", "acme"), base + 39);
    gg_store_close(s);
}
END_TEST

START_TEST(quota_keeper_thread) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    gg_history_quota_options o = {.max_rows = 10, .interval_ms = 60000};
    gg_history_quota *q = gg_history_quota_start(s, &o, &err);
    ck_assert_msg(q != NULL, "%s", err.message);
    write_runs(s, "acme", 25, 100, 1700000000000LL);
    gg_history_quota_now(q);
    gg_history_quota_stats st;
    gg_history_quota_get_stats(q, &st);
    ck_assert_int_eq(st.dropped, 16);
    ck_assert_int_eq(st.failed_passes, 0);
    ck_assert_int_gt(st.dropped_bytes, 16 * 100);
    ck_assert_int_eq(usage_of(s, "acme").rows, 9);
    gg_history_quota_stop(q);
    gg_history_quota_stop(NULL);
    gg_store_close(s);
}
END_TEST

/* A run's node records past the writer's bounds are left out, and the run says so. */
START_TEST(writer_bounds_node_records_per_run) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    gg_history_options o = {.max_run_nodes = 3};
    gg_exec_record *r = run_at("acme", 1700000000000LL, 5);
    for (int i = 1; i < 10; i++)
        ck_assert_ptr_nonnull(gg_exec_record_add_node(r, "n", "transform", r->started_ms, r->started_ms, NULL,
                                                      json_integer(i), NULL));
    json_t *ex = write_and_get(s, &o, r);
    ck_assert_int_eq(json_array_size(json_object_get(ex, "nodes")), 3);
    ck_assert(json_is_true(json_object_get(ex, "nodes_truncated")));
    ck_assert_int_eq(json_integer_value(json_object_get(ex, "nodes_dropped")), 7);
    json_decref(ex);
    /* by bytes: a 2 KiB bound keeps the first records of ~1 KB outputs */
    gg_history_options ob = {.max_run_node_bytes = 2048};
    r = run_at("acme", 1700000001000LL, 5);
    char big[1001];
    memset(big, 'y', 1000);
    big[1000] = '\0';
    for (int i = 0; i < 10; i++)
        ck_assert_ptr_nonnull(gg_exec_record_add_node(r, "n", "transform", r->started_ms, r->started_ms, NULL,
                                                      json_string(big), NULL));
    ex = write_and_get(s, &ob, r);
    size_t kept = json_array_size(json_object_get(ex, "nodes"));
    ck_assert_int_ge(kept, 2);
    ck_assert_int_le(kept, 4);
    ck_assert_int_eq((long long)kept + json_integer_value(json_object_get(ex, "nodes_dropped")), 11);
    json_decref(ex);
    /* an unbounded run says it is whole */
    ex = write_and_get(s, NULL, run_at("acme", 1700000002000LL, 5));
    ck_assert(json_is_false(json_object_get(ex, "nodes_truncated")));
    ck_assert_int_eq(json_integer_value(json_object_get(ex, "nodes_dropped")), 0);
    json_decref(ex);
    gg_store_close(s);
}
END_TEST

/* Node records given as text (the gateway's path) end with the provider's marker. */
START_TEST(truncation_marker_in_node_text) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    gg_exec_record *r = run_at("acme", 1700000000000LL, 5);
    gg_exec_record_set_nodes_json(r, strdup("[[0,\"entry\",\"entry\",0,1,1,null],[1,\"spin\",\"transform\",1,2,1,5],"
                                            "{\"truncated\":true,\"dropped\":99,\"kept\":2}]"));
    json_t *ex = write_and_get(s, NULL, r);
    ck_assert_int_eq(json_array_size(json_object_get(ex, "nodes")), 2);
    ck_assert(json_is_true(json_object_get(ex, "nodes_truncated")));
    ck_assert_int_eq(json_integer_value(json_object_get(ex, "nodes_dropped")), 99);
    json_decref(ex);
    gg_store_close(s);
}
END_TEST

START_TEST(graph_usage_counts_versions_and_bytes) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    ck_assert(gg_store_tenant_create(s, "beta", &err));
    int v;
    ck_assert(gg_store_graph_put(s, "acme", "a", "0123456789", 10, "yaml", "cli", &v, &err));
    ck_assert(gg_store_graph_put(s, "acme", "a", "01234", 5, "yaml", "cli", &v, &err));
    ck_assert(gg_store_graph_put(s, "acme", "b", "abc", 3, "yaml", "cli", &v, &err));
    ck_assert(gg_store_graph_put(s, "beta", "c", "zzzzzzzzzzzzzzzzzzzz", 20, "yaml", "cli", &v, &err));
    gg_graph_usage g;
    ck_assert(gg_store_graph_usage(s, "acme", &g, &err));
    ck_assert_int_eq(g.graphs, 2);
    ck_assert_int_eq(g.versions, 3);
    ck_assert_int_eq(g.stored_bytes, 18);
    ck_assert_int_eq(g.active_bytes, 8);
    ck_assert(gg_store_graph_activate(s, "acme", "a", 1, &err));
    ck_assert(gg_store_graph_usage(s, "acme", &g, &err));
    ck_assert_int_eq(g.active_bytes, 13);
    ck_assert(gg_store_graph_usage(s, "nobody", &g, &err));
    ck_assert_int_eq(g.graphs + g.versions + g.stored_bytes + g.active_bytes, 0);
    gg_store_close(s);
}
END_TEST

/* A database with history before 0004: the migration fills history_usage from it. */
START_TEST(migration_0004_backfills_usage) {
    char cmd[1024];
    /* every migration after 0003 waits aside */
    snprintf(cmd, sizeof cmd,
             "mkdir -p '%s/later' && cd '%s' && for f in *.sql; do case $f in 000[123]_*) ;; *) mv \"$f\" ../later/ ;; esac; done",
             tmpdir, migdir);
    ck_assert_int_eq(system(cmd), 0);
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert_int_eq(gg_store_schema_version(s, &err), 3);
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    ck_assert(gg_store_tenant_create(s, "empty", &err));
    insert_runs_sql("acme", 5, 200, 1700000000000LL);
    snprintf(cmd, sizeof cmd, "mv '%s/later/'*.sql '%s/'", tmpdir, migdir);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_msg(gg_store_migrate(s, migdir, NULL, &err), "%s", err.message);
    gg_history_usage u = usage_of(s, "acme");
    ck_assert_int_eq(u.rows, 5);
    ck_assert_int_eq(u.bytes, summed_bytes("acme"));
    ck_assert_int_eq(query1("SELECT count(*) FROM history_usage WHERE tenant = ?1", "empty"), 1);
    gg_store_close(s);
}
END_TEST

int main(void) {
    Suite *s = suite_create("usage");
    TCase *tc = tcase_create("usage");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, usage_follows_inserts_updates_deletes);
    /* SQLite-only: a database taken back to migration 0003. */
    tcase_add_test(tc, usage_exact_after_deletes);
    tcase_add_test(tc, quota_drops_oldest_first_and_counts);
    tcase_add_test(tc, quota_keeper_thread);
    tcase_add_test(tc, writer_bounds_node_records_per_run);
    tcase_add_test(tc, truncation_marker_in_node_text);
    tcase_add_test(tc, graph_usage_counts_versions_and_bytes);
    if (!pg_mode()) tcase_add_test(tc, migration_0004_backfills_usage);
    suite_add_tcase(s, tc);
    return gg_check_run(s);
}
