/* fixture.h — the fixture the store's check programs share (included by one .c file each,
 * not a library): a fresh temporary directory per test with a copy of migrations/ and a
 * database path in it, and the store opened on it (migrated or not); and, for the history
 * suites (test_usage, test_history_batches), one integer read back with SQL and runs made
 * and written through a history writer. The helpers a program may leave unused are static
 * inline. */
#ifndef GG_TESTS_STORE_FIXTURE_H
#define GG_TESTS_STORE_FIXTURE_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>
#include <zstd.h>

#include "store/store.h"
#include "pg_fixture.h"

static char tmpdir[256];
static char dbpath[300];
static char migdir[300];
static char migfiles[320]; /* where the backend's migration files are: migdir or migdir/postgres */

static void sh(const char *fmt, const char *a, const char *b) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, fmt, a, b);
    ck_assert_int_eq(system(cmd), 0);
}

static void setup(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/gg-store-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    snprintf(dbpath, sizeof dbpath, "%s/var/test.db", tmpdir);
    snprintf(migdir, sizeof migdir, "%s/migrations", tmpdir);
    const char *src = getenv("GG_SRCDIR");
    char from[512];
    snprintf(from, sizeof from, "%s/migrations", src ? src : "..");
    sh("cp -R '%s' '%s'", from, migdir);
    sh("chmod -R u+w '%s'%s", migdir, ""); /* distcheck's source tree is read-only */
    pg_setup(tmpdir);
    snprintf(migfiles, sizeof migfiles, "%s%s", migdir, pg_mode() ? "/postgres" : "");
}

static void teardown(void) {
    pg_teardown();
    sh("rm -rf '%s'%s", tmpdir, "");
}

static gg_store *open_store(void) {
    gg_error err = GG_ERROR_INIT;
    gg_store_options o = {.path = dbpath, .url = pg_store_url(), .pool_size = 3, .busy_timeout_ms = 5000};
    gg_store *s = gg_store_open(&o, &err);
    ck_assert_msg(s != NULL, "open: %s", err.message);
    return s;
}

static gg_store *open_migrated(void) {
    gg_store *s = open_store();
    gg_error err = GG_ERROR_INIT;
    ck_assert_msg(gg_store_migrate(s, migdir, NULL, &err), "migrate: %s", err.message);
    return s;
}

/* SQL history_text(body) on the tests' own connections: a history_batches body as text — a
 * zstd frame (SQLite's rows since migration 0020) decompressed here with zstd's streaming
 * decoder, independently of the store's reader; TEXT as it is. (PostgreSQL has the function
 * from its migration 0020.) */
static void history_text_fn(sqlite3_context *cx, int argc, sqlite3_value **argv) {
    (void)argc;
    if (sqlite3_value_type(argv[0]) != SQLITE_BLOB) {
        sqlite3_result_value(cx, argv[0]);
        return;
    }
    const void *z = sqlite3_value_blob(argv[0]);
    int zn = sqlite3_value_bytes(argv[0]);
    ZSTD_DStream *ds = ZSTD_createDStream();
    ZSTD_inBuffer in = {z, (size_t)zn, 0};
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap);
    size_t rc = 1;
    while (out && rc != 0 && !ZSTD_isError(rc)) {
        if (len == cap) out = realloc(out, cap *= 2);
        if (!out) break;
        ZSTD_outBuffer o = {out, cap, len};
        rc = ZSTD_decompressStream(ds, &o, &in);
        len = o.pos;
        if (rc != 0 && in.pos == in.size && o.pos < o.size) break; /* truncated */
    }
    ZSTD_freeDStream(ds);
    if (!out || rc != 0) {
        free(out);
        sqlite3_result_error(cx, "history_text: not a whole zstd frame", -1);
        return;
    }
    sqlite3_result_text(cx, out, (int)len, free);
}

static inline sqlite3 *open_readonly(void) {
    sqlite3 *db = NULL;
    ck_assert_int_eq(sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_create_function(db, "history_text", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, history_text_fn, NULL, NULL);
    return db;
}

/* sql (?1 = arg when not NULL) stepped to its first row, on a read-only connection of its
 * own to the SQLite database (with history_text); query_done ends both. */
static inline sqlite3_stmt *query_row(const char *sql, const char *arg) {
    sqlite3 *db = open_readonly();
    sqlite3_stmt *st = NULL;
    ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK, "%s", sqlite3_errmsg(db));
    if (arg) sqlite3_bind_text(st, 1, arg, -1, SQLITE_STATIC);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    return st;
}

static inline void query_done(sqlite3_stmt *st) {
    sqlite3 *db = sqlite3_db_handle(st);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* One integer of sql (?1 = arg when not NULL), on a connection of its own: in PostgreSQL
 * mode to the test's database. */
static inline long long query1(const char *sql, const char *arg) {
    if (pg_mode()) return pg_query1(sql, arg);
    sqlite3_stmt *st = query_row(sql, arg);
    long long n = sqlite3_column_int64(st, 0);
    query_done(st);
    return n;
}

/* A run of tenant's (by key_id, NULL for none) started at started_ms; unless st is
 * GG_EXEC_RUNNING, finished 1 ms later with st and a result of pad bytes of 'x'. Its id
 * carries the start, as gg_exec_id_new's does: readers find a run by it. */
static inline gg_exec_record *run_record(const char *tenant, const char *key_id, long long started_ms,
                                         gg_exec_status st, size_t pad) {
    gg_exec_record *r = gg_exec_record_new(tenant, "g", 1, "t", key_id, NULL);
    ck_assert_ptr_nonnull(r);
    char hex[13];
    snprintf(hex, sizeof hex, "%012llx", (unsigned long long)started_ms);
    memcpy(r->id, hex, 12);
    r->started_ms = started_ms;
    if (st == GG_EXEC_RUNNING) return r;
    char *text = malloc(pad + 1);
    ck_assert_ptr_nonnull(text);
    memset(text, 'x', pad);
    text[pad] = '\0';
    r->result = json_string(text);
    free(text);
    r->finished_ms = started_ms + 1;
    r->status = st;
    return r;
}

/* How a suite makes one finished run of its own shape (its key, its node records). */
typedef gg_exec_record *run_maker(const char *tenant, long long started_ms, size_t pad);

/* n runs of tenant's made by make (pad bytes of result each), started step_ms apart from
 * base_ms, submitted to one writer with options o (NULL: the defaults) and flushed before
 * it stops. */
static inline void write_runs_with(gg_store *s, const gg_history_options *o, run_maker *make, const char *tenant,
                                   int n, long long base_ms, long long step_ms, size_t pad) {
    gg_error err = GG_ERROR_INIT;
    gg_history *h = gg_history_start(s, o, &err);
    ck_assert_msg(h != NULL, "%s", err.message);
    for (int i = 0; i < n; i++) ck_assert(gg_history_submit(h, make(tenant, base_ms + i * step_ms, pad)));
    ck_assert(gg_history_flush(h));
    gg_history_stop(h);
}

#endif
