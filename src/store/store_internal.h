/* store_internal.h — what the files of src/store share with each other (not a public
 * header: only src/store/*.c include it). The node-spec functions in store_specs.c use it
 * to borrow a connection and its prepared-statement cache.
 *
 * Ownership: a borrowed connection belongs to the borrowing thread until
 * gg_store_conn_release; statements returned by gg_store_conn_stmt belong to the
 * connection (reset them, never finalize them).
 */
#ifndef GG_STORE_INTERNAL_H
#define GG_STORE_INTERNAL_H

#include <sqlite3.h>

#include "store/store.h"

#define GG_STORE_STMT_CACHE 96

typedef struct gg_store_conn {
    sqlite3 *db;
    struct {
        const char *sql; /* identity: the address of a static SQL string */
        sqlite3_stmt *stmt;
    } cache[GG_STORE_STMT_CACHE];
    int n_cached;
    struct gg_store_conn *next_free;
} gg_store_conn;

/* Borrow a pooled connection (waits while all are in use). Never NULL once the store is
 * open, except on a closing store (then err "db"). */
gg_store_conn *gg_store_conn_acquire(gg_store *s, gg_error *err);
void gg_store_conn_release(gg_store *s, gg_store_conn *c);
/* The connection's prepared statement for sql (prepared on first use, then reused: pass
 * the same static string every time — the cache is keyed by its address). The returned
 * statement is reset with bindings cleared. NULL + err ("db") on a SQL error. */
sqlite3_stmt *gg_store_conn_stmt(gg_store_conn *c, const char *sql, gg_error *err);
/* Run a statement-less SQL (BEGIN, COMMIT, ...). */
bool gg_store_conn_exec(gg_store_conn *c, const char *sql, gg_error *err);
/* Set err from the connection's last SQLite error ("db", or "conflict" for a constraint). */
void gg_store_set_db_error(gg_store_conn *c, gg_error *err, const char *what);

/* Open a connection configured like the pool's (WAL, foreign keys, busy timeout). */
gg_store_conn *gg_store_conn_open(gg_store *s, gg_error *err);
void gg_store_conn_close(gg_store_conn *c);

/* Bind a possibly-NULL text. */
int gg_store_bind_text(sqlite3_stmt *st, int idx, const char *text);
/* Copy a column's text (NULL stays NULL); sets *oom on allocation failure. */
char *gg_store_column_strdup(sqlite3_stmt *st, int col, bool *oom);

#endif
