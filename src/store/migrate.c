/* migrate.c — schema migrations: migrations/NNNN_name.sql applied in order, each in its own
 * transaction, recorded with a sha256 checksum. An applied migration whose file changed or
 * disappeared, or a database newer than the files, stops startup: running a binary against
 * a schema it does not know is how data gets corrupted. */
#include "store/store_internal.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_MIGRATIONS 1000
#define MAX_MIGRATION_BYTES (16 * 1024 * 1024)

typedef struct migration {
    int version;
    char file[256];
    char checksum[65];
    char *sql;
} migration;

typedef struct migration_set {
    migration *items;
    int n;
} migration_set;

static void set_free(migration_set *m) {
    for (int i = 0; i < m->n; i++) free(m->items[i].sql);
    free(m->items);
    m->items = NULL;
    m->n = 0;
}

void gg_store_sha256_hex(const void *data, size_t len, char out[65]) {
    unsigned char h[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(h, data, len);
    sodium_bin2hex(out, 65, h, sizeof h);
}

/* NNNN_name.sql with name in [a-z0-9_-]. Returns the version or -1. */
static int parse_name(const char *name) {
    size_t n = strlen(name);
    if (n < 10 || strcmp(name + n - 4, ".sql") != 0) return -1;
    for (int i = 0; i < 4; i++)
        if (!isdigit((unsigned char)name[i])) return -1;
    if (name[4] != '_') return -1;
    for (size_t i = 5; i < n - 4; i++) {
        char c = name[i];
        if (!(islower((unsigned char)c) || isdigit((unsigned char)c) || c == '_' || c == '-')) return -1;
    }
    return atoi(name) > 0 ? atoi(name) : -1;
}

static char *read_file(const char *path, size_t *len, gg_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f) { gg_error_set(err, "migration", "cannot read %s: %s", path, strerror(errno)); return NULL; }
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 8192;
            char *nb = cap > MAX_MIGRATION_BYTES ? NULL : realloc(buf, cap);
            if (!nb) {
                gg_error_set(err, "migration", "%s is too large or out of memory", path);
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) break;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) { gg_error_set(err, "migration", "error reading %s", path); free(buf); return NULL; }
    buf[n] = '\0';
    *len = n;
    return buf;
}

static int cmp_migration(const void *a, const void *b) {
    return ((const migration *)a)->version - ((const migration *)b)->version;
}

/* Load and checksum every migration file of dir; versions must be 1..N without gaps. */
static bool load_dir(const char *dir, migration_set *out, gg_error *err) {
    DIR *d = opendir(dir);
    if (!d) { gg_error_set(err, "migration", "cannot open migrations directory %s: %s", dir, strerror(errno)); return false; }
    int cap = 0;
    struct dirent *e;
    bool ok = true;
    while (ok && (e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        size_t n = strlen(name);
        if (n < 4 || strcmp(name + n - 4, ".sql") != 0) continue;
        int v = parse_name(name);
        if (v < 0 || n >= sizeof out->items[0].file) {
            gg_error_set(err, "migration", "%s/%s: migration files are named NNNN_name.sql (name in [a-z0-9_-])", dir, name);
            ok = false;
            break;
        }
        if (out->n >= MAX_MIGRATIONS) { gg_error_set(err, "migration", "too many migrations in %s", dir); ok = false; break; }
        if (out->n == cap) {
            cap = cap ? cap * 2 : 16;
            migration *ni = realloc(out->items, sizeof *ni * (size_t)cap);
            if (!ni) { gg_error_set(err, "oom", "out of memory"); ok = false; break; }
            out->items = ni;
        }
        migration *m = &out->items[out->n++];
        memset(m, 0, sizeof *m);
        m->version = v;
        snprintf(m->file, sizeof m->file, "%s", name);
        char path[4096 + 512]; /* dir (up to 4096, see run) + name (< 256) */
        snprintf(path, sizeof path, "%s/%s", dir, name);
        size_t len = 0;
        m->sql = read_file(path, &len, err);
        if (!m->sql) { ok = false; break; }
        gg_store_sha256_hex(m->sql, len, m->checksum);
    }
    closedir(d);
    if (!ok) { set_free(out); return false; }
    if (out->n == 0) { gg_error_set(err, "migration", "no migrations (NNNN_name.sql) in %s", dir); return false; }
    qsort(out->items, (size_t)out->n, sizeof out->items[0], cmp_migration);
    for (int i = 0; i < out->n; i++) {
        if (i > 0 && out->items[i].version == out->items[i - 1].version) {
            gg_error_set(err, "migration", "%s: %s and %s have the same number", dir, out->items[i - 1].file, out->items[i].file);
            set_free(out);
            return false;
        }
        if (out->items[i].version != i + 1) {
            gg_error_set(err, "migration", "%s: migration %04d is missing (next file is %s)", dir, i + 1, out->items[i].file);
            set_free(out);
            return false;
        }
    }
    return true;
}

static const char SQL_CREATE_TABLE[] =
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    " version INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL,"
    " applied_at BIGINT NOT NULL)"; /* BIGINT: milliseconds (PostgreSQL's INTEGER is 32-bit) */
static const char SQL_APPLIED[] = "SELECT version, name, checksum FROM schema_migrations ORDER BY version";
static const char SQL_ONE[] = "SELECT checksum FROM schema_migrations WHERE version = ?1";
static const char SQL_RECORD[] =
    "INSERT INTO schema_migrations(version, name, checksum, applied_at) VALUES (?1, ?2, ?3, ?4)";
static const char SQL_SUMMARY[] = "SELECT count(*), coalesce(max(version), 0) FROM schema_migrations";

/* Compare what the database recorded with the files. *pending gets the index of the first
 * migration to apply (== n when none). */
static bool verify_applied(gg_store_conn *c, const char *dir, const migration_set *m, int *pending,
                           gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_APPLIED, err);
    if (!st) return false;
    int count = 0, rc;
    bool ok = true;
    while (ok && (rc = gg_db_step(st)) == SQLITE_ROW) {
        int v = gg_db_column_int(st, 0);
        const char *name = (const char *)gg_db_column_text(st, 1);
        const char *sum = (const char *)gg_db_column_text(st, 2);
        if (v > m->n) {
            gg_error_set(err, "migration",
                         "the database has migration %04d (%s) applied but %s only goes up to %04d: "
                         "this graphgate is older than the database; run a newer graphgate",
                         v, name ? name : "?", dir, m->n);
            ok = false;
        } else if (v < 1 || v != count + 1) {
            gg_error_set(err, "migration", "the database's schema_migrations skips migration %04d", count + 1);
            ok = false;
        } else if (!sum || strcmp(sum, m->items[v - 1].checksum) != 0) {
            gg_error_set(err, "migration",
                         "%s/%s was changed after it was applied (recorded sha256 %.12s…, file %.12s…); "
                         "restore the original file and put changes in a new migration",
                         dir, m->items[v - 1].file, sum ? sum : "", m->items[v - 1].checksum);
            ok = false;
        }
        count++;
    }
    if (ok && rc != SQLITE_DONE) { gg_store_set_db_error(c, err, "schema_migrations"); ok = false; }
    gg_db_reset(st);
    *pending = count;
    return ok;
}

static bool apply_one_tx(gg_store_conn *c, void *user, gg_error *err) {
    const migration *mg = user;
    /* Another process may have applied it while we waited for the write lock. */
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_ONE, err);
    if (!st) return false;
    gg_db_bind_int(st, 1, mg->version);
    int rc = gg_db_step(st);
    if (rc == SQLITE_ROW) {
        bool same = strcmp((const char *)gg_db_column_text(st, 0), mg->checksum) == 0;
        gg_db_reset(st);
        if (!same) gg_error_set(err, "migration", "%s was applied concurrently with a different checksum", mg->file);
        return same;
    }
    gg_db_reset(st);
    if (rc != SQLITE_DONE) { gg_store_set_db_error(c, err, "schema_migrations"); return false; }
    gg_error e2 = GG_ERROR_INIT;
    if (!gg_store_conn_exec(c, mg->sql, &e2)) {
        gg_error_set(err, "migration", "%s failed: %s", mg->file, e2.message ? e2.message : "error");
        gg_error_clear(&e2);
        return false;
    }
    st = gg_store_conn_stmt(c, SQL_RECORD, err);
    if (!st) return false;
    gg_db_bind_int(st, 1, mg->version);
    gg_db_bind_text(st, 2, mg->file, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 3, mg->checksum, -1, SQLITE_STATIC);
    gg_db_bind_int64(st, 4, gg_wall_ms());
    return gg_store_step_done(c, st, "schema_migrations", err);
}

static bool apply_one(gg_store_conn *c, const migration *mg, gg_error *err) {
    return gg_store_conn_write_tx(c, apply_one_tx, (void *)mg, err);
}

static bool run(gg_store *s, const char *dir, bool apply, int *applied, gg_error *err) {
    if (applied) *applied = 0;
    if (!dir || !*dir) { gg_error_set(err, "migration", "no migrations directory"); return false; }
    /* PostgreSQL's migrations are the files of dir/postgres, numbered like SQLite's. */
    char pgdir[4096];
    if (gg_store_is_postgres(s)) {
        snprintf(pgdir, sizeof pgdir, "%s/postgres", dir);
        dir = pgdir;
    }
    migration_set m = {0};
    if (!load_dir(dir, &m, err)) return false;
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) { set_free(&m); return false; }
    bool ok = gg_store_conn_exec(c, SQL_CREATE_TABLE, err);
    int pending = 0;
    if (ok) ok = verify_applied(c, dir, &m, &pending, err);
    if (ok && !apply && pending < m.n) {
        gg_error_set(err, "migration", "%d migration(s) not applied yet (first: %s); run graphgate migrate",
                     m.n - pending, m.items[pending].file);
        ok = false;
    }
    for (int i = pending; ok && apply && i < m.n; i++) {
        ok = apply_one(c, &m.items[i], err);
        if (ok && applied) (*applied)++;
        if (ok) gg_log(GG_LOG_INFO, "migration applied", "file", m.items[i].file, NULL);
    }
    if (ok) {
        pthread_mutex_lock(&s->lock);
        s->expected_version = m.n;
        s->expected_count = m.n;
        pthread_mutex_unlock(&s->lock);
    }
    gg_store_conn_release(s, c);
    set_free(&m);
    return ok;
}

bool gg_store_migrate(gg_store *s, const char *dir, int *applied, gg_error *err) {
    return run(s, dir, true, applied, err);
}

bool gg_store_migrations_verify(gg_store *s, const char *dir, gg_error *err) {
    return run(s, dir, false, NULL, err);
}

bool gg_store_migrations_current(gg_store *s, gg_error *err) {
    pthread_mutex_lock(&s->lock);
    int want_v = s->expected_version, want_n = s->expected_count;
    pthread_mutex_unlock(&s->lock);
    if (want_v == 0) { gg_error_set(err, "migration", "migrations have not been verified by this process"); return false; }
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return false;
    bool ok = false;
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_SUMMARY, err);
    if (st) {
        if (gg_db_step(st) == SQLITE_ROW) {
            int n = gg_db_column_int(st, 0), v = gg_db_column_int(st, 1);
            ok = n == want_n && v == want_v;
            if (!ok) gg_error_set(err, "migration", "schema is at %04d (%d applied), expected %04d", v, n, want_v);
        } else {
            gg_store_set_db_error(c, err, "schema_migrations");
        }
        gg_db_reset(st);
    }
    gg_store_conn_release(s, c);
    return ok;
}

int gg_store_schema_version(gg_store *s, gg_error *err) {
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return -1;
    int v = -1;
    if (gg_store_conn_exec(c, SQL_CREATE_TABLE, err)) {
        gg_db_stmt *st = gg_store_conn_stmt(c, SQL_SUMMARY, err);
        if (st) {
            if (gg_db_step(st) == SQLITE_ROW) v = gg_db_column_int(st, 1);
            else gg_store_set_db_error(c, err, "schema_migrations");
            gg_db_reset(st);
        }
    }
    gg_store_conn_release(s, c);
    return v;
}
