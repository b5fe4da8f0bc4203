/* db.h — the store's database layer: one statement API over SQLite or PostgreSQL (libpq),
 * so every query of src/store serves both backends (not a public header: only the .c files
 * of src/store include it, through store_internal.h).
 *
 * The API mirrors sqlite3's (prepare/bind/step/column/reset), and returns SQLite's result
 * codes on both backends (SQLITE_ROW, SQLITE_DONE, SQLITE_CONSTRAINT, SQLITE_ERROR...), so
 * the store's code reads the same as before. SQL is written once in SQLite's dialect with
 * portable types; for PostgreSQL it is translated at prepare time (gg_db_translate):
 * ?N / ? placeholders become $N, and the few SQLite-only spellings the store uses are
 * rewritten. Queries that cannot be shared (full-text search) test gg_db_is_pg.
 *
 * Ownership: a statement belongs to its connection (gg_store_conn_stmt's cache) or, from
 * gg_db_prepare, to the caller (gg_db_finalize). Bound values are copied on PostgreSQL and,
 * with SQLITE_STATIC, referenced on SQLite: keep them alive until the step.
 */
#ifndef GG_STORE_DB_H
#define GG_STORE_DB_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct gg_store_conn gg_store_conn;
typedef struct gg_db_stmt gg_db_stmt;

/* Prepare an uncached statement (the caller finalizes it). SQLITE_OK or an error code. */
int gg_db_prepare(gg_store_conn *c, const char *sql, gg_db_stmt **out);
void gg_db_finalize(gg_db_stmt *st);

int gg_db_bind_text(gg_db_stmt *st, int idx, const char *text, int len, void (*del)(void *));
int gg_db_bind_blob(gg_db_stmt *st, int idx, const void *data, int len, void (*del)(void *));
int gg_db_bind_int(gg_db_stmt *st, int idx, int v);
int gg_db_bind_int64(gg_db_stmt *st, int idx, long long v);
int gg_db_bind_double(gg_db_stmt *st, int idx, double v);
int gg_db_bind_null(gg_db_stmt *st, int idx);
int gg_db_clear_bindings(gg_db_stmt *st);

/* SQLITE_ROW (a row is current), SQLITE_DONE, or an error code (the message is the
 * connection's, see gg_store_set_db_error). */
int gg_db_step(gg_db_stmt *st);
int gg_db_reset(gg_db_stmt *st);
bool gg_db_busy(gg_db_stmt *st);

/* Columns of the current row. Text is NUL-terminated and lives until the next step/reset. */
const unsigned char *gg_db_column_text(gg_db_stmt *st, int col);
long long gg_db_column_int64(gg_db_stmt *st, int col);
int gg_db_column_int(gg_db_stmt *st, int col);
double gg_db_column_double(gg_db_stmt *st, int col);
const void *gg_db_column_blob(gg_db_stmt *st, int col);
int gg_db_column_bytes(gg_db_stmt *st, int col);
/* SQLITE_NULL, SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT or SQLITE_BLOB. */
int gg_db_column_type(gg_db_stmt *st, int col);

/* Rows changed by the connection's last statement. */
int gg_db_changes(gg_store_conn *c);
/* Run SQL ignoring the outcome (ROLLBACK on a failure path, PRAGMAs). */
void gg_db_exec_quiet(gg_store_conn *c, const char *sql);
bool gg_db_is_pg(const gg_store_conn *c);

/* The PostgreSQL spelling of a SQLite-dialect statement (malloc'd; NULL on OOM).
 * *nparams gets the highest parameter number. */
char *gg_db_translate(const char *sql, int *nparams);

#endif
