/* db.c — the statement layer over SQLite or PostgreSQL (see db.h). On PostgreSQL a
 * statement is prepared on the server once per connection (named, re-prepared after a
 * reconnect), parameters are sent as text (bytea as binary), and a step walks the rows of
 * the result of one execution. */
#include "store/store_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* PostgreSQL type OIDs the columns need (pg_type.h is not in libpq-dev's public headers). */
#define OID_BOOL 16
#define OID_BYTEA 17
#define OID_INT8 20
#define OID_INT2 21
#define OID_INT4 23
#define OID_FLOAT4 700
#define OID_FLOAT8 701
#define OID_NUMERIC 1700
#define OID_TEXT 25

struct gg_db_stmt {
    gg_store_conn *c;
    sqlite3_stmt *lite;
    /* PostgreSQL */
    char *sql;                 /* translated */
    char name[24];             /* server-side name; prepared in epoch */
    unsigned epoch;
    bool prepared;
    int nparams;
    char **vals;
    int *lens, *fmts;
    Oid *types;                /* of the values bound before the first execution */
    PGresult *res;
    int row, nrows;
    bool ran;
    unsigned char *blob;       /* the decoded bytea of blob_col in blob_row */
    size_t blob_len;
    int blob_row, blob_col;
};

bool gg_db_is_pg(const gg_store_conn *c) { return c->pg != NULL; }

/* ---- translation ------------------------------------------------------------------- */

typedef struct { char *p; size_t len, cap; bool oom; } sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->len + n + 1) * 2;
        char *np = realloc(b->p, cap);
        if (!np) { b->oom = true; return; }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

/* SQLite spellings the store's SQL uses, and PostgreSQL's. Matched outside string literals. */
static const struct { const char *from, *to; } REWRITES[] = {
    {"INSERT OR IGNORE INTO", "INSERT INTO"},      /* + ON CONFLICT DO NOTHING at the end */
    {"length(CAST(", "octet_length(CAST("},
    {" AS BLOB))", " AS TEXT))"},                 /* octet_length(CAST(x AS TEXT)) */
    {" AS BLOB)", " AS BYTEA)"},
    {" AS INTEGER)", " AS BIGINT)"},
    {"max(0, ", "GREATEST(0, "},
};

char *gg_db_translate(const char *sql, int *nparams) {
    sbuf b = {0};
    int max_n = 0;
    bool ignore = false;
    for (const char *p = sql; *p;) {
        if (*p == '\'') { /* a literal, copied as is ('' inside included) */
            const char *q = p + 1;
            while (*q && !(*q == '\'' && q[1] != '\'')) q += (*q == '\'' ? 2 : 1);
            if (*q) q++;
            sb_put(&b, p, (size_t)(q - p));
            p = q;
            continue;
        }
        if (*p == '?') {
            int n;
            const char *q = p + 1;
            if (isdigit((unsigned char)*q)) {
                n = 0;
                while (isdigit((unsigned char)*q)) n = n * 10 + (*q++ - '0');
            } else {
                n = max_n + 1; /* SQLite: one more than the largest so far */
            }
            if (n > max_n) max_n = n;
            char tmp[16];
            int len = snprintf(tmp, sizeof tmp, "$%d", n);
            sb_put(&b, tmp, (size_t)len);
            p = q;
            continue;
        }
        bool matched = false;
        for (size_t i = 0; i < sizeof REWRITES / sizeof REWRITES[0]; i++) {
            size_t n = strlen(REWRITES[i].from);
            if (strncmp(p, REWRITES[i].from, n) == 0) {
                sb_put(&b, REWRITES[i].to, strlen(REWRITES[i].to));
                if (i == 0) ignore = true;
                p += n;
                matched = true;
                break;
            }
        }
        if (!matched) sb_put(&b, p++, 1);
    }
    if (ignore) sb_put(&b, " ON CONFLICT DO NOTHING", 23);
    if (b.oom || !b.p) { free(b.p); return NULL; }
    if (nparams) *nparams = max_n;
    return b.p;
}

/* ---- PostgreSQL statements ----------------------------------------------------------- */

static void pg_error(gg_store_conn *c, const PGresult *res) {
    const char *m = res ? PQresultErrorMessage(res) : NULL;
    if (!m || !*m) m = PQerrorMessage(c->pg);
    snprintf(c->errmsg, sizeof c->errmsg, "%s", m && *m ? m : "PostgreSQL error");
    size_t n = strlen(c->errmsg);
    while (n && (c->errmsg[n - 1] == '\n' || c->errmsg[n - 1] == ' ')) c->errmsg[--n] = '\0';
}

/* SQLite's code for a failed PostgreSQL result: integrity violations (class 23) are
 * constraints, a lost connection is SQLITE_IOERR (the pool reconnects). */
static int pg_code(gg_store_conn *c, const PGresult *res) {
    pg_error(c, res);
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    if (state && strncmp(state, "23", 2) == 0) return SQLITE_CONSTRAINT;
    if (PQstatus(c->pg) != CONNECTION_OK) return SQLITE_IOERR;
    return SQLITE_ERROR;
}

/* Prepared at the first execution, with the types of the values then bound (text, int8,
 * float8, bytea; NULL leaves the type to the server, so the store writes a nullable
 * parameter that only "IS NULL" would type as CAST(?1 AS TEXT) IS NULL): "?2 - ?3" and
 * "?2 - ?3" are typed by their values as SQLite types them, instead of failing to infer. */
static int pg_prepare(gg_db_stmt *st) {
    gg_store_conn *c = st->c;
    if (st->prepared && st->epoch == c->epoch) return SQLITE_OK;
    snprintf(st->name, sizeof st->name, "gg%u", ++c->n_named);
    PGresult *r = PQprepare(c->pg, st->name, st->sql, st->nparams, st->types);
    int rc = PQresultStatus(r) == PGRES_COMMAND_OK ? SQLITE_OK : pg_code(c, r);
    PQclear(r);
    if (rc == SQLITE_OK) { st->prepared = true; st->epoch = c->epoch; }
    return rc;
}

int gg_db_prepare(gg_store_conn *c, const char *sql, gg_db_stmt **out) {
    *out = NULL;
    gg_db_stmt *st = calloc(1, sizeof *st);
    if (!st) return SQLITE_NOMEM;
    st->c = c;
    if (!c->pg) {
        int rc = sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st->lite, NULL);
        if (rc != SQLITE_OK) { free(st); return rc; }
        *out = st;
        return SQLITE_OK;
    }
    st->sql = gg_db_translate(sql, &st->nparams);
    if (st->nparams > 0) {
        st->vals = calloc((size_t)st->nparams, sizeof *st->vals);
        st->lens = calloc((size_t)st->nparams, sizeof *st->lens);
        st->fmts = calloc((size_t)st->nparams, sizeof *st->fmts);
        st->types = calloc((size_t)st->nparams, sizeof *st->types);
    }
    if (!st->sql || (st->nparams > 0 && (!st->vals || !st->lens || !st->fmts || !st->types))) {
        gg_db_finalize(st);
        return SQLITE_NOMEM;
    }
    *out = st;
    return SQLITE_OK;
}

static void pg_clear_result(gg_db_stmt *st) {
    if (st->res) PQclear(st->res);
    st->res = NULL;
    st->ran = false;
    st->row = st->nrows = 0;
    free(st->blob);
    st->blob = NULL;
}

void gg_db_finalize(gg_db_stmt *st) {
    if (!st) return;
    if (st->lite) {
        sqlite3_finalize(st->lite);
        free(st);
        return;
    }
    pg_clear_result(st);
    gg_db_clear_bindings(st);
    if (st->c->pg && st->prepared && st->epoch == st->c->epoch && PQstatus(st->c->pg) == CONNECTION_OK) {
        char sql[48];
        snprintf(sql, sizeof sql, "DEALLOCATE %s", st->name);
        PQclear(PQexec(st->c->pg, sql));
    }
    free(st->vals);
    free(st->lens);
    free(st->fmts);
    free(st->types);
    free(st->sql);
    free(st);
}

int gg_db_clear_bindings(gg_db_stmt *st) {
    if (st->lite) return sqlite3_clear_bindings(st->lite);
    for (int i = 0; st->vals && i < st->nparams; i++) {
        free(st->vals[i]);
        st->vals[i] = NULL;
    }
    return SQLITE_OK;
}

/* Keep a copy of len bytes as parameter idx (text: fmt 0, NUL-terminated; binary: 1). */
static int pg_bind(gg_db_stmt *st, int idx, const void *data, size_t len, int fmt, Oid type) {
    if (idx < 1 || idx > st->nparams) return SQLITE_RANGE;
    free(st->vals[idx - 1]);
    st->vals[idx - 1] = NULL;
    if (!data) return SQLITE_OK;
    if (!st->prepared) st->types[idx - 1] = type;
    char *v = malloc(len + 1);
    if (!v) return SQLITE_NOMEM;
    memcpy(v, data, len);
    v[len] = '\0';
    st->vals[idx - 1] = v;
    st->lens[idx - 1] = (int)len;
    st->fmts[idx - 1] = fmt;
    return SQLITE_OK;
}

int gg_db_bind_text(gg_db_stmt *st, int idx, const char *text, int len, void (*del)(void *)) {
    if (st->lite) return sqlite3_bind_text(st->lite, idx, text, len, del);
    if (!text) return pg_bind(st, idx, NULL, 0, 0, 0);
    return pg_bind(st, idx, text, len < 0 ? strlen(text) : (size_t)len, 0, OID_TEXT);
}

int gg_db_bind_blob(gg_db_stmt *st, int idx, const void *data, int len, void (*del)(void *)) {
    if (st->lite) return sqlite3_bind_blob(st->lite, idx, data, len, del);
    return pg_bind(st, idx, data ? data : "", (size_t)len, 1, OID_BYTEA);
}

int gg_db_bind_int64(gg_db_stmt *st, int idx, long long v) {
    if (st->lite) return sqlite3_bind_int64(st->lite, idx, v);
    char tmp[24];
    int n = snprintf(tmp, sizeof tmp, "%lld", v);
    return pg_bind(st, idx, tmp, (size_t)n, 0, OID_INT8);
}

int gg_db_bind_int(gg_db_stmt *st, int idx, int v) {
    if (st->lite) return sqlite3_bind_int(st->lite, idx, v);
    return gg_db_bind_int64(st, idx, v);
}

int gg_db_bind_double(gg_db_stmt *st, int idx, double v) {
    if (st->lite) return sqlite3_bind_double(st->lite, idx, v);
    char tmp[40];
    int n = snprintf(tmp, sizeof tmp, "%.17g", v);
    return pg_bind(st, idx, tmp, (size_t)n, 0, OID_FLOAT8);
}

int gg_db_bind_null(gg_db_stmt *st, int idx) {
    if (st->lite) return sqlite3_bind_null(st->lite, idx);
    return pg_bind(st, idx, NULL, 0, 0, 0);
}

int gg_db_step(gg_db_stmt *st) {
    if (st->lite) return sqlite3_step(st->lite);
    gg_store_conn *c = st->c;
    if (st->ran) {
        free(st->blob);
        st->blob = NULL;
        return ++st->row < st->nrows ? SQLITE_ROW : SQLITE_DONE;
    }
    if (PQstatus(c->pg) != CONNECTION_OK) {
        snprintf(c->errmsg, sizeof c->errmsg, "the PostgreSQL connection is lost");
        return SQLITE_IOERR;
    }
    int rc = pg_prepare(st);
    if (rc != SQLITE_OK) return rc;
    st->res = PQexecPrepared(c->pg, st->name, st->nparams, (const char *const *)st->vals, st->lens,
                             st->fmts, 0);
    st->ran = true;
    ExecStatusType s = PQresultStatus(st->res);
    if (s != PGRES_TUPLES_OK && s != PGRES_COMMAND_OK) {
        rc = pg_code(c, st->res);
        pg_clear_result(st);
        st->ran = true; /* stepping again repeats DONE, as SQLite would after reset */
        st->nrows = 0;
        return rc;
    }
    c->changes = atoi(PQcmdTuples(st->res));
    st->nrows = s == PGRES_TUPLES_OK ? PQntuples(st->res) : 0;
    st->row = 0;
    return st->nrows > 0 ? SQLITE_ROW : SQLITE_DONE;
}

int gg_db_reset(gg_db_stmt *st) {
    if (st->lite) return sqlite3_reset(st->lite);
    pg_clear_result(st);
    return SQLITE_OK;
}

bool gg_db_busy(gg_db_stmt *st) {
    if (st->lite) return sqlite3_stmt_busy(st->lite);
    return st->res != NULL;
}

/* See store_internal.h. The reset keeps the error: SQLite hands the statement's error to
 * the connection again, PostgreSQL's stays in c->errmsg. */
bool gg_store_step_done(gg_store_conn *c, gg_db_stmt *st, const char *what, gg_error *err) {
    int rc = gg_db_step(st);
    gg_db_reset(st);
    if (rc == SQLITE_DONE) return true;
    gg_store_set_db_error(c, err, what);
    return false;
}

static const char *pg_value(gg_db_stmt *st, int col) {
    if (!st->res || st->row >= st->nrows || col < 0 || col >= PQnfields(st->res)) return NULL;
    if (PQgetisnull(st->res, st->row, col)) return NULL;
    return PQgetvalue(st->res, st->row, col);
}

const unsigned char *gg_db_column_text(gg_db_stmt *st, int col) {
    if (st->lite) return sqlite3_column_text(st->lite, col);
    return (const unsigned char *)pg_value(st, col);
}

long long gg_db_column_int64(gg_db_stmt *st, int col) {
    if (st->lite) return sqlite3_column_int64(st->lite, col);
    const char *v = pg_value(st, col);
    if (!v) return 0;
    if (PQftype(st->res, col) == OID_BOOL) return v[0] == 't';
    if (PQftype(st->res, col) == OID_FLOAT8 || PQftype(st->res, col) == OID_NUMERIC ||
        PQftype(st->res, col) == OID_FLOAT4)
        return (long long)strtod(v, NULL);
    return strtoll(v, NULL, 10);
}

int gg_db_column_int(gg_db_stmt *st, int col) {
    if (st->lite) return sqlite3_column_int(st->lite, col);
    return (int)gg_db_column_int64(st, col);
}

double gg_db_column_double(gg_db_stmt *st, int col) {
    if (st->lite) return sqlite3_column_double(st->lite, col);
    const char *v = pg_value(st, col);
    return v ? strtod(v, NULL) : 0.0;
}

/* bytea arrives as text ("\x…"): decoded once per row and column. */
static const unsigned char *pg_blob(gg_db_stmt *st, int col, size_t *len) {
    const char *v = pg_value(st, col);
    *len = 0;
    if (!v) return NULL;
    if (PQftype(st->res, col) != OID_BYTEA) {
        *len = (size_t)PQgetlength(st->res, st->row, col);
        return (const unsigned char *)v;
    }
    if (!st->blob || st->blob_row != st->row || st->blob_col != col) {
        free(st->blob);
        st->blob = PQunescapeBytea((const unsigned char *)v, &st->blob_len);
        st->blob_row = st->row;
        st->blob_col = col;
        if (!st->blob) return NULL;
    }
    *len = st->blob_len;
    return st->blob;
}

const void *gg_db_column_blob(gg_db_stmt *st, int col) {
    if (st->lite) return sqlite3_column_blob(st->lite, col);
    size_t len;
    return pg_blob(st, col, &len);
}

int gg_db_column_bytes(gg_db_stmt *st, int col) {
    if (st->lite) return sqlite3_column_bytes(st->lite, col);
    size_t len;
    pg_blob(st, col, &len);
    return (int)len;
}

int gg_db_column_type(gg_db_stmt *st, int col) {
    if (st->lite) return sqlite3_column_type(st->lite, col);
    if (!pg_value(st, col)) return SQLITE_NULL;
    switch (PQftype(st->res, col)) {
    case OID_INT2: case OID_INT4: case OID_INT8: case OID_BOOL: return SQLITE_INTEGER;
    case OID_FLOAT4: case OID_FLOAT8: case OID_NUMERIC: return SQLITE_FLOAT;
    case OID_BYTEA: return SQLITE_BLOB;
    default: return SQLITE_TEXT;
    }
}

int gg_db_changes(gg_store_conn *c) {
    return c->pg ? c->changes : sqlite3_changes(c->db);
}

void gg_db_exec_quiet(gg_store_conn *c, const char *sql) {
    if (!c->pg) {
        sqlite3_exec(c->db, sql, NULL, NULL, NULL);
        return;
    }
    if (strncmp(sql, "PRAGMA", 6) == 0) return;
    PQclear(PQexec(c->pg, sql));
}
