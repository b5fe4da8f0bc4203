/* rows.c — what the store's files share: every write transaction (BEGIN IMMEDIATE … COMMIT,
 * on SQLite and PostgreSQL alike), and the rows of a tenant-filtered query as a JSON array. */
#include "store/store_internal.h"

/* See store_internal.h. */
bool gg_store_conn_write_tx(gg_store_conn *c, gg_store_tx_fn fn, void *user, gg_error *err) {
    if (!gg_store_conn_exec(c, "BEGIN IMMEDIATE", err)) return false;
    if (fn(c, user, err) && gg_store_conn_exec(c, "COMMIT", err)) return true;
    /* A failed COMMIT (SQLite: busy) leaves the transaction open: end it here, since the
     * caller may go on using the connection. */
    gg_db_exec_quiet(c, "ROLLBACK");
    return false;
}

/* See store_internal.h. */
bool gg_store_write_tx(gg_store *s, gg_store_tx_fn fn, void *user, gg_error *err) {
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return false;
    bool ok = gg_store_conn_write_tx(c, fn, user, err);
    gg_store_conn_release(s, c);
    return ok;
}

/* See store_internal.h. */
json_t *gg_store_tenant_rows(gg_store *s, const char *sql, const char *tenant, const char *key,
                             json_t *(*row)(gg_db_stmt *st), const char *table, gg_error *err) {
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return NULL;
    json_t *arr = json_array();
    gg_db_stmt *st = gg_store_conn_stmt(c, sql, err);
    int rc = SQLITE_ERROR;
    if (st) {
        gg_db_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
        if (key) gg_db_bind_text(st, 2, key, -1, SQLITE_STATIC);
        while ((rc = gg_db_step(st)) == SQLITE_ROW) {
            json_t *o = row(st);
            if (!o || json_array_append_new(arr, o) != 0) { rc = SQLITE_NOMEM; break; }
        }
        if (rc != SQLITE_DONE) gg_store_set_db_error(c, err, table);
        gg_db_reset(st);
    }
    gg_store_conn_release(s, c);
    if (rc != SQLITE_DONE) { json_decref(arr); return NULL; }
    return arr;
}
