/* store.c — opening the SQLite or PostgreSQL database, the connection pool, per-connection statement
 * caches, settings and generation counters. */
#include "store/store_internal.h"

#include <errno.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* The pool: connections are created up front so a busy server never pays for opening
 * one; borrowers wait on a condition variable when all are out. */

static void set_sqlite_error(sqlite3 *db, int rc, gg_error *err, const char *what) {
    int ext = db ? sqlite3_extended_errcode(db) : rc;
    const char *msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    const char *code = ((ext & 0xff) == SQLITE_CONSTRAINT) ? "conflict" : "db";
    gg_error_set(err, code, "%s: %s", what ? what : "database", msg ? msg : "error");
}

void gg_store_set_db_error(gg_store_conn *c, gg_error *err, const char *what) {
    if (c && c->pg) {
        bool constraint = strstr(c->errmsg, "violates") != NULL && strstr(c->errmsg, "constraint") != NULL;
        gg_error_set(err, constraint ? "conflict" : "db", "%s: %s", what ? what : "database",
                     c->errmsg[0] ? c->errmsg : "PostgreSQL error");
        return;
    }
    set_sqlite_error(c ? c->db : NULL, SQLITE_ERROR, err, what);
}

/* ---- PostgreSQL connections ------------------------------------------------------------ */

static void pg_quiet_notice(void *arg, const char *message) { (void)arg; (void)message; }

/* Per-session settings, run on every (re)connect. */
static bool pg_setup(gg_store_conn *c, gg_error *err) {
    PQsetNoticeProcessor(c->pg, pg_quiet_notice, NULL);
    char sql[160];
    snprintf(sql, sizeof sql, "SET statement_timeout = %d; SET lock_timeout = %d; SET TIME ZONE 'UTC'",
             c->store->statement_timeout_ms, c->store->busy_timeout_ms);
    PGresult *r = PQexec(c->pg, sql);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (ok && c->replica[0]) { /* the executions.replica default of this session's rows */
        const char *v[1] = {c->replica};
        r = PQexecParams(c->pg, "SELECT set_config('graphgate.replica', $1, false)", 1, NULL, v, NULL, NULL, 0);
        ok = PQresultStatus(r) == PGRES_TUPLES_OK;
        PQclear(r);
    }
    if (!ok) gg_error_set(err, "db", "PostgreSQL: %s", PQerrorMessage(c->pg));
    return ok;
}

bool gg_store_conn_set_replica(gg_store_conn *c, const char *replica, gg_error *err) {
    if ((!c->pg && !c->unopened) || !replica || !*replica) return true;
    if (strlen(replica) >= sizeof c->replica) {
        gg_error_set(err, "invalid", "replica id longer than %zu bytes", sizeof c->replica - 1);
        return false;
    }
    snprintf(c->replica, sizeof c->replica, "%s", replica);
    return c->unopened || pg_setup(c, err); /* an unopened one is set up when it connects */
}

/* Connect c (a fresh or unopened slot); false + err, c->pg NULL, when it cannot. */
static bool pg_connect(gg_store *s, gg_store_conn *c, gg_error *err) {
    c->pg = PQconnectdb(s->url);
    if (!c->pg || PQstatus(c->pg) != CONNECTION_OK) {
        const char *m = c->pg ? PQerrorMessage(c->pg) : "out of memory";
        gg_error_set(err, "db", "cannot connect to PostgreSQL at %s: %.*s", s->path,
                     (int)strcspn(m, "\n"), m);
        PQfinish(c->pg);
        c->pg = NULL;
        return false;
    }
    if (!pg_setup(c, err)) {
        PQfinish(c->pg);
        c->pg = NULL;
        return false;
    }
    c->unopened = false;
    return true;
}

static gg_store_conn *pg_open(gg_store *s, gg_store_conn *c, gg_error *err) {
    if (pg_connect(s, c, err)) return c;
    free(c);
    return NULL;
}

/* A connection the server dropped (restart, failover) is re-established here, at most
 * once per backoff period across the store (100 ms doubling to 5 s), so callers fail fast
 * with the reason while the server is down instead of each waiting on a connect. */
bool gg_store_conn_ensure(gg_store_conn *c, gg_error *err) {
    if (c->unopened) return pg_connect(c->store, c, err); /* a lazy pool slot's first use */
    if (!c->pg || PQstatus(c->pg) == CONNECTION_OK) return true;
    gg_store *s = c->store;
    long long now = (long long)gg_now_ms();
    pthread_mutex_lock(&s->lock);
    bool wait = now < s->retry_at_ms;
    pthread_mutex_unlock(&s->lock);
    if (!wait) {
        PQreset(c->pg);
        c->epoch++;
        if (PQstatus(c->pg) == CONNECTION_OK && pg_setup(c, err)) {
            pthread_mutex_lock(&s->lock);
            s->backoff_ms = 0;
            s->retry_at_ms = 0;
            pthread_mutex_unlock(&s->lock);
            gg_log(GG_LOG_INFO, "reconnected to PostgreSQL", "db", s->path, NULL);
            return true;
        }
        pthread_mutex_lock(&s->lock);
        s->backoff_ms = s->backoff_ms ? (s->backoff_ms * 2 > 5000 ? 5000 : s->backoff_ms * 2) : 100;
        s->retry_at_ms = now + s->backoff_ms;
        pthread_mutex_unlock(&s->lock);
    }
    const char *m = PQerrorMessage(c->pg);
    gg_error_set(err, "db", "PostgreSQL is unavailable (%s): %.*s", s->path, (int)strcspn(m ? m : "", "\n"),
                 m && *m ? m : "connection lost");
    return false;
}

/* Create the parent directory of path (one level is what ./var/graphgate.db needs; deeper
 * trees are created too, component by component). */
static bool make_parent_dirs(const char *path, gg_error *err) {
    char *copy = strdup(path);
    if (!copy) { gg_error_set(err, "oom", "out of memory"); return false; }
    char *slash = strrchr(copy, '/');
    if (!slash || slash == copy) { free(copy); return true; }
    *slash = '\0';
    for (char *p = copy + 1; ; p++) {
        if (*p == '/' || *p == '\0') {
            char saved = *p;
            *p = '\0';
            if (mkdir(copy, 0750) != 0 && errno != EEXIST) {
                gg_error_set(err, "db", "cannot create directory %s: %s", copy, strerror(errno));
                free(copy);
                return false;
            }
            *p = saved;
            if (saved == '\0') break;
        }
    }
    free(copy);
    return true;
}

/* SQLite's busy handler for every connection. sqlite3_busy_timeout's sleeps grow to 100 ms;
 * a writer that asked while the quota pass held the lock slept through the short gaps
 * between its slices and stalled every durable answer behind it (bench/gateway durable
 * p99 140 ms). Short steady sleeps take the lock within 0.2 ms of its release. */
static int busy_wait(void *arg, int tries) {
    gg_store_conn *c = arg;
    double now = gg_now_ms();
    if (tries == 0) c->busy_since_ms = now;
    if (now - c->busy_since_ms >= c->store->busy_timeout_ms) return 0;
    struct timespec ts = {0, tries < 1000 ? 200 * 1000 : 1000 * 1000};
    nanosleep(&ts, NULL);
    return 1;
}

/* Checkpoint the WAL once it holds about `bytes`, whatever the page size (SQLite counts
 * pages): a WAL that must be copied back before it can be reset needs that much free disk
 * to recover from a full one (tests/gateway/diskfull.sh runs in 16 MiB). */
static void wal_checkpoint_at(sqlite3 *db, int bytes) {
    sqlite3_stmt *st = NULL;
    int page = 0;
    if (sqlite3_prepare_v2(db, "PRAGMA page_size", -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        page = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    if (page > 0) sqlite3_wal_autocheckpoint(db, bytes / page);
}

gg_store_conn *gg_store_conn_open(gg_store *s, gg_error *err) {
    gg_store_conn *c = calloc(1, sizeof *c);
    if (!c) { gg_error_set(err, "oom", "out of memory"); return NULL; }
    c->store = s;
    if (s->url) return pg_open(s, c, err);
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    int rc = sqlite3_open_v2(s->path, &c->db, flags, NULL);
    if (rc != SQLITE_OK) {
        set_sqlite_error(c->db, rc, err, s->path);
        sqlite3_close(c->db);
        free(c);
        return NULL;
    }
    sqlite3_extended_result_codes(c->db, 1);
    sqlite3_busy_handler(c->db, busy_wait, c);
    if (!gg_history_body_register(c->db)) {
        gg_error_set(err, "db", "%s: cannot register history_text", s->path);
        sqlite3_close(c->db);
        free(c);
        return NULL;
    }
    /* WAL: readers never wait for the writer, and the CLI can write while serve runs.
     * synchronous=NORMAL is durable across process crashes in WAL mode. A new database gets
     * 16 KiB pages (fixed by its first write; an existing one keeps its own): the history
     * is most of what is written, in rows of up to 16 KB that take one or two pages
     * instead of a chain of 4 KiB overflow pages — about a quarter more records a core
     * (bench/history/README.md, session 19). 64 KiB pages wrote ≈ 5-10 % more but made an
     * empty database 3.8 MB (a page a table and index) and its creation 2x slower. */
    static const char setup[] =
        "PRAGMA page_size=16384;"
        "PRAGMA journal_mode=WAL;"
        "PRAGMA synchronous=NORMAL;"
        "PRAGMA foreign_keys=ON;"
        "PRAGMA temp_store=MEMORY;";
    char *msg = NULL;
    if (sqlite3_exec(c->db, setup, NULL, NULL, &msg) != SQLITE_OK) {
        gg_error_set(err, "db", "%s: %s", s->path, msg ? msg : "cannot configure database");
        sqlite3_free(msg);
        sqlite3_close(c->db);
        free(c);
        return NULL;
    }
    wal_checkpoint_at(c->db, 4 << 20); /* SQLite's default: 1000 pages of 4 KiB */
    return c;
}

void gg_store_conn_close(gg_store_conn *c) {
    if (!c) return;
    /* PostgreSQL drops a session's prepared statements with it: no DEALLOCATE round trip
     * per cached statement (a CLI command paid ~10 of them, ~10 ms each, before exiting) */
    c->epoch++;
    for (int i = 0; i < c->n_cached; i++) gg_db_finalize(c->cache[i].stmt);
    if (c->pg) PQfinish(c->pg);
    else if (c->db) sqlite3_close(c->db);
    gg_history_body_free(c);
    free(c);
}

/* Process-wide SQLite settings, applied once before the library initialises: memory
 * statistics off (they take a global mutex on every allocation). */
static pthread_once_t sqlite_config_once = PTHREAD_ONCE_INIT;
static void sqlite_config(void) { sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }

/* The URL as shown in logs and errors: the password replaced by ***. */
static char *redact_url(const char *url) {
    char *r = strdup(url);
    if (!r) return NULL;
    char *scheme = strstr(r, "://");
    char *at = scheme ? strchr(scheme + 3, '@') : NULL;
    char *colon = scheme ? strchr(scheme + 3, ':') : NULL;
    if (at && colon && colon < at) memcpy(colon + 1, "***", 3), memmove(colon + 4, at, strlen(at) + 1);
    return r;
}

static bool is_pg_url(const char *url) {
    return url && (strncmp(url, "postgres://", 11) == 0 || strncmp(url, "postgresql://", 13) == 0);
}

/* Open the database and fill the pool. */
/* A pool slot connected on its first use (gg_store_conn_ensure). */
static gg_store_conn *lazy_slot(gg_store *s, gg_error *err) {
    gg_store_conn *c = calloc(1, sizeof *c);
    if (!c) gg_error_set(err, "oom", "out of memory");
    else {
        c->store = s;
        c->unopened = true;
    }
    return c;
}

gg_store *gg_store_open(const gg_store_options *opts, gg_error *err) {
    if (opts && opts->url && *opts->url && !is_pg_url(opts->url)) {
        gg_error_set(err, "invalid", "database URL must start with postgres:// or postgresql://");
        return NULL;
    }
    bool pg = opts && opts->url && *opts->url;
    if (!opts || (!pg && (!opts->path || !*opts->path))) {
        gg_error_set(err, "invalid", "database path is empty");
        return NULL;
    }
    if (sodium_init() < 0) {
        gg_error_set(err, "db", "libsodium failed to initialise");
        return NULL;
    }
    pthread_once(&sqlite_config_once, sqlite_config);
    gg_store *s = calloc(1, sizeof *s);
    if (s && pg && (!(s->url = strdup(opts->url)) || !(s->path = redact_url(opts->url)))) {
        free(s->url);
        free(s);
        s = NULL;
    }
    if (!s || (!pg && !(s->path = strdup(opts->path)))) {
        free(s);
        gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    /* At least 2: a foreach callback may use the store while the walk holds one. */
    s->pool_size = opts->pool_size > 0 ? opts->pool_size : 4;
    if (s->pool_size < 2) s->pool_size = 2;
    if (s->pool_size > 64) s->pool_size = 64;
    s->busy_timeout_ms = opts->busy_timeout_ms > 0 ? opts->busy_timeout_ms : 5000;
    s->statement_timeout_ms = opts->statement_timeout_ms > 0 ? opts->statement_timeout_ms : 30000;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    struct stat st;
    if (!pg && opts->must_exist && strcmp(s->path, ":memory:") != 0 && stat(s->path, &st) != 0) {
        gg_error_set(err, "not_found", "database %s does not exist (%s); create it with `graphgate migrate --db %s`",
                     s->path, strerror(errno), s->path);
        gg_store_close(s);
        return NULL;
    }
    if (!pg && strcmp(s->path, ":memory:") != 0 && !make_parent_dirs(s->path, err)) {
        gg_store_close(s);
        return NULL;
    }
    for (int i = 0; i < s->pool_size; i++) {
        /* lazy: the last one pushed (the first handed out) is connected now, so a bad URL
         * fails here and a command using one connection at a time never opens another */
        bool lazy = pg && opts->lazy_pool && i < s->pool_size - 1;
        gg_store_conn *c = lazy ? lazy_slot(s, err) : gg_store_conn_open(s, err);
        if (!c) { gg_store_close(s); return NULL; }
        c->next_free = s->free_list;
        s->free_list = c;
        s->n_open++;
    }
    return s;
}

void gg_store_close(gg_store *s) {
    if (!s) return;
    pthread_mutex_lock(&s->lock);
    s->closing = true;
    while (s->n_borrowed > 0) pthread_cond_wait(&s->cond, &s->lock);
    gg_store_conn *c = s->free_list;
    s->free_list = NULL;
    pthread_mutex_unlock(&s->lock);
    while (c) {
        gg_store_conn *next = c->next_free;
        gg_store_conn_close(c);
        c = next;
    }
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->lock);
    free(s->path);
    free(s->url);
    free(s);
}

const char *gg_store_path(const gg_store *s) { return s ? s->path : NULL; }
bool gg_store_is_postgres(const gg_store *s) { return s && s->url; }

gg_store_conn *gg_store_conn_acquire(gg_store *s, gg_error *err) {
    pthread_mutex_lock(&s->lock);
    while (!s->free_list && !s->closing) pthread_cond_wait(&s->cond, &s->lock);
    if (s->closing) {
        pthread_mutex_unlock(&s->lock);
        gg_error_set(err, "db", "the store is closing");
        return NULL;
    }
    gg_store_conn *c = s->free_list;
    s->free_list = c->next_free;
    c->next_free = NULL;
    s->n_borrowed++;
    pthread_mutex_unlock(&s->lock);
    if (!gg_store_conn_ensure(c, err)) {
        gg_store_conn_release(s, c);
        return NULL;
    }
    return c;
}

void gg_store_conn_release(gg_store *s, gg_store_conn *c) {
    if (!c) return;
    /* A borrower that failed mid-statement or mid-transaction must not hand a dirty
     * connection on: an unreset SELECT would pin an old WAL snapshot. */
    for (int i = 0; i < c->n_cached; i++)
        if (gg_db_busy(c->cache[i].stmt)) gg_db_reset(c->cache[i].stmt);
    bool in_tx = c->unopened ? false
                 : c->pg  ? PQtransactionStatus(c->pg) == PQTRANS_INTRANS || PQtransactionStatus(c->pg) == PQTRANS_INERROR
                          : !sqlite3_get_autocommit(c->db);
    if (in_tx) gg_db_exec_quiet(c, "ROLLBACK");
    pthread_mutex_lock(&s->lock);
    c->next_free = s->free_list;
    s->free_list = c;
    s->n_borrowed--;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

gg_db_stmt *gg_store_conn_stmt(gg_store_conn *c, const char *sql, gg_error *err) {
    for (int i = 0; i < c->n_cached; i++) {
        if (c->cache[i].sql == sql) {
            gg_db_stmt *st = c->cache[i].stmt;
            gg_db_reset(st);
            gg_db_clear_bindings(st);
            return st;
        }
    }
    gg_db_stmt *st = NULL;
    int rc = gg_db_prepare(c, sql, &st);
    if (rc != SQLITE_OK) {
        if (c->pg) gg_store_set_db_error(c, err, "prepare");
        else set_sqlite_error(c->db, rc, err, "prepare");
        return NULL;
    }
    if (c->n_cached < GG_STORE_STMT_CACHE) {
        c->cache[c->n_cached].sql = sql;
        c->cache[c->n_cached].stmt = st;
        c->n_cached++;
    } else {
        /* Full cache means a caller passes dynamic SQL: a bug, but stay correct by
         * evicting the oldest entry rather than leaking. */
        gg_db_finalize(c->cache[0].stmt);
        memmove(&c->cache[0], &c->cache[1], sizeof c->cache[0] * (GG_STORE_STMT_CACHE - 1));
        c->cache[GG_STORE_STMT_CACHE - 1].sql = sql;
        c->cache[GG_STORE_STMT_CACHE - 1].stmt = st;
    }
    return st;
}

/* PostgreSQL: BEGIN IMMEDIATE (SQLite's one writer at a time, which the store's
 * read-then-write transactions rely on: next version number, quotas, usage marks) becomes a
 * transaction holding one advisory lock until it ends; PRAGMAs are SQLite's alone. */
static bool pg_exec(gg_store_conn *c, const char *sql, gg_error *err) {
    if (strncmp(sql, "PRAGMA", 6) == 0) return true;
    if (PQstatus(c->pg) != CONNECTION_OK && !gg_store_conn_ensure(c, err)) return false;
    if (strcmp(sql, "BEGIN IMMEDIATE") == 0) sql = "BEGIN; SELECT pg_advisory_xact_lock(7347246)";
    PGresult *r = PQexec(c->pg, sql);
    ExecStatusType st = PQresultStatus(r);
    bool ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
    if (!ok) {
        const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        const char *m = PQresultErrorMessage(r);
        if (!m || !*m) m = PQerrorMessage(c->pg); /* no result: the connection went away */
        gg_error_set(err, state && strncmp(state, "23", 2) == 0 ? "conflict" : "db", "PostgreSQL: %.*s",
                     (int)strcspn(m ? m : "", "\n"), m && *m ? m : "error");
    }
    PQclear(r);
    return ok;
}

bool gg_store_conn_exec(gg_store_conn *c, const char *sql, gg_error *err) {
    if (c->pg) return pg_exec(c, sql, err);
    char *msg = NULL;
    int rc = sqlite3_exec(c->db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        int ext = sqlite3_extended_errcode(c->db);
        gg_error_set(err, (ext & 0xff) == SQLITE_CONSTRAINT ? "conflict" : "db", "%s",
                     msg ? msg : sqlite3_errstr(rc));
        sqlite3_free(msg);
        return false;
    }
    return true;
}

int gg_store_bind_text(gg_db_stmt *st, int idx, const char *text) {
    return text ? gg_db_bind_text(st, idx, text, -1, SQLITE_STATIC) : gg_db_bind_null(st, idx);
}

char *gg_store_column_strdup(gg_db_stmt *st, int col, bool *oom) {
    const unsigned char *t = gg_db_column_text(st, col);
    if (!t) return NULL;
    char *r = strdup((const char *)t);
    if (!r && oom) *oom = true;
    return r;
}

/* ---- settings and generations ------------------------------------------------------- */

static const char SQL_SETTING_INSERT[] =
    "INSERT INTO settings(name, value) VALUES (?1, ?2) ON CONFLICT(name) DO NOTHING";
static const char SQL_SETTING_GET[] = "SELECT value FROM settings WHERE name = ?1";

bool gg_store_setting_get_or_create_random(gg_store *s, const char *name, unsigned char *out,
                                           size_t len, gg_error *err) {
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return false;
    bool ok = false;
    unsigned char fresh[256];
    if (len == 0 || len > sizeof fresh) {
        gg_error_set(err, "invalid", "setting length %zu out of range", len);
        goto done;
    }
    randombytes_buf(fresh, len);
    /* Insert-if-absent then read back: whoever inserted first wins, everyone reads it. */
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_SETTING_INSERT, err);
    if (!st) goto done;
    gg_db_bind_text(st, 1, name, -1, SQLITE_STATIC);
    gg_db_bind_blob(st, 2, fresh, (int)len, SQLITE_STATIC);
    if (!gg_store_step_done(c, st, "settings", err)) goto done;
    st = gg_store_conn_stmt(c, SQL_SETTING_GET, err);
    if (!st) goto done;
    gg_db_bind_text(st, 1, name, -1, SQLITE_STATIC);
    if (gg_db_step(st) != SQLITE_ROW) { gg_store_set_db_error(c, err, "settings"); goto done; }
    if ((size_t)gg_db_column_bytes(st, 0) != len) {
        gg_error_set(err, "db", "setting %s has %d bytes, expected %zu", name,
                     gg_db_column_bytes(st, 0), len);
        goto done;
    }
    memcpy(out, gg_db_column_blob(st, 0), len);
    ok = true;
done:
    sodium_memzero(fresh, sizeof fresh);
    gg_store_conn_release(s, c);
    return ok;
}

static const char SQL_GEN_GET[] = "SELECT value FROM generations WHERE name = ?1";
const char GG_STORE_SQL_GEN_BUMP[] = "UPDATE generations SET value = value + 1 WHERE name = ?1";
/* counters added after 0001 get their row on first bump instead of by a migration */
static const char SQL_GEN_CREATE[] = "INSERT INTO generations(name, value) VALUES (?1, 0) ON CONFLICT(name) DO NOTHING";

static const char *gen_name(gg_store_generation which) {
    static const char *const names[] = {"keys", "graphs", "views", "oauth", NULL, "secrets", "pins"};
    return names[which];
}

long long gg_store_generation_get(gg_store *s, gg_store_generation which, gg_error *err) {
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return -1;
    long long v = -1;
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_GEN_GET, err);
    if (st) {
        gg_db_bind_text(st, 1, gen_name(which), -1, SQLITE_STATIC);
        int rc = gg_db_step(st);
        if (rc == SQLITE_ROW) v = gg_db_column_int64(st, 0);
        else if (rc == SQLITE_DONE && which >= GG_GEN_VIEWS) v = 0; /* never bumped yet */
        else gg_store_set_db_error(c, err, "generations");
        gg_db_reset(st);
    }
    gg_store_conn_release(s, c);
    return v;
}

/* Tell the other replicas' watches (notify.c); PostgreSQL delivers it at commit, and
 * folds duplicates within one transaction. */
static const char SQL_GEN_NOTIFY[] = "SELECT pg_notify('graphgate', ?1)";

/* See store_internal.h. */
bool gg_store_notify(gg_store_conn *c, const char *what, gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_GEN_NOTIFY, err);
    if (!st) return false;
    gg_db_bind_text(st, 1, what, -1, SQLITE_STATIC);
    bool ok = gg_db_step(st) == SQLITE_ROW;
    if (!ok) gg_store_set_db_error(c, err, "notify");
    gg_db_reset(st);
    return ok;
}

/* Run a generations statement bound to the counter's name; true when it is done. */
static bool gen_exec(gg_store_conn *c, const char *sql, gg_store_generation which, gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, sql, err);
    if (!st) return false;
    gg_db_bind_text(st, 1, gen_name(which), -1, SQLITE_STATIC);
    return gg_store_step_done(c, st, "generations", err);
}

bool gg_store_bump_generation(gg_store_conn *c, gg_store_generation which, gg_error *err) {
    bool ok = (which < GG_GEN_VIEWS || gen_exec(c, SQL_GEN_CREATE, which, err)) && gen_exec(c, GG_STORE_SQL_GEN_BUMP, which, err);
    if (ok && gg_db_is_pg(c)) ok = gg_store_notify(c, gen_name(which), err);
    return ok;
}

/* ---- audit log ------------------------------------------------------------------------ */

static const char SQL_AUDIT_INSERT[] =
    "INSERT INTO audit_log(ts, actor, tenant, action, target, details) VALUES (?1,?2,?3,?4,?5,?6)";
static const char SQL_AUDIT_LIST[] =
    "SELECT id, ts, actor, tenant, action, target, details FROM audit_log"
    " WHERE (CAST(?1 AS TEXT) IS NULL OR tenant = ?1) AND (?2 = 0 OR id < ?2) ORDER BY id DESC LIMIT ?3";

bool gg_store_audit_append(gg_store *s, const char *actor, const char *tenant,
                           const char *action, const char *target, json_t *details,
                           gg_error *err) {
    char *d = details ? json_dumps(details, JSON_COMPACT) : NULL;
    if (details && !d) { gg_error_set(err, "oom", "out of memory"); return false; }
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    bool ok = false;
    if (c) {
        gg_db_stmt *st = gg_store_conn_stmt(c, SQL_AUDIT_INSERT, err);
        if (st) {
            gg_db_bind_int64(st, 1, gg_wall_ms());
            gg_db_bind_text(st, 2, actor ? actor : "unknown", -1, SQLITE_STATIC);
            gg_store_bind_text(st, 3, tenant);
            gg_db_bind_text(st, 4, action ? action : "", -1, SQLITE_STATIC);
            gg_store_bind_text(st, 5, target);
            gg_store_bind_text(st, 6, d);
            ok = gg_store_step_done(c, st, "audit", err);
        }
        gg_store_conn_release(s, c);
    }
    free(d);
    return ok;
}

/* Parse stored JSON text back into a value; text that is not JSON stays a string. */
json_t *gg_store_json_column(gg_db_stmt *st, int col) {
    const char *t = (const char *)gg_db_column_text(st, col);
    if (!t) return json_null();
    json_t *v = json_loads(t, JSON_DECODE_ANY, NULL);
    return v ? v : json_string(t);
}

json_t *gg_store_time_json(long long ms) {
    if (ms <= 0) return json_null();
    char buf[GG_TIME_ISO_MAX];
    gg_time_iso8601(ms, buf);
    return json_string(buf);
}

json_t *gg_store_audit_list(gg_store *s, const char *tenant, long long before_id, int limit,
                            gg_error *err) {
    if (limit <= 0) limit = 100;
    if (limit > 1000) limit = 1000;
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return NULL;
    json_t *arr = json_array();
    gg_db_stmt *st = arr ? gg_store_conn_stmt(c, SQL_AUDIT_LIST, err) : NULL;
    if (!st) goto fail;
    gg_store_bind_text(st, 1, tenant);
    gg_db_bind_int64(st, 2, before_id > 0 ? before_id : 0);
    gg_db_bind_int(st, 3, limit);
    int rc;
    while ((rc = gg_db_step(st)) == SQLITE_ROW) {
        json_t *o = json_pack("{s:I,s:o,s:s,s:s?,s:s,s:s?,s:o}",
            "id", (json_int_t)gg_db_column_int64(st, 0),
            "ts", gg_store_time_json(gg_db_column_int64(st, 1)),
            "actor", (const char *)gg_db_column_text(st, 2),
            "tenant", (const char *)gg_db_column_text(st, 3),
            "action", (const char *)gg_db_column_text(st, 4),
            "target", (const char *)gg_db_column_text(st, 5),
            "details", gg_store_json_column(st, 6));
        if (!o || json_array_append_new(arr, o) != 0) { gg_error_set(err, "oom", "out of memory"); goto fail; }
    }
    if (rc != SQLITE_DONE) { gg_store_set_db_error(c, err, "audit"); goto fail; }
    gg_db_reset(st);
    gg_store_conn_release(s, c);
    return arr;
fail:
    if (st) gg_db_reset(st);
    gg_store_conn_release(s, c);
    json_decref(arr);
    return NULL;
}

