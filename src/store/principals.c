/* principals.c — who called with an OAuth access token (migration 0015): noted once per
 * verified token by the OAuth fetcher thread (src/auth/issuers.c), read by the admin API. An
 * upsert in portable SQL (INSERT ... ON CONFLICT DO UPDATE: SQLite >= 3.24 and PostgreSQL). */
#include "store/store_internal.h"

#include <stdlib.h>
#include <string.h>

static const char SQL_NOTE[] =
    "INSERT INTO principals(tenant, id, issuer, subject, client_id, scopes, first_seen, last_seen) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7) ON CONFLICT(tenant, id) DO UPDATE SET "
    "issuer = excluded.issuer, subject = excluded.subject, client_id = excluded.client_id, "
    "scopes = excluded.scopes, last_seen = excluded.last_seen";
static const char SQL_LIST[] = "SELECT id, issuer, subject, client_id, scopes, first_seen, last_seen FROM principals "
                               "WHERE tenant = ?1 ORDER BY last_seen DESC, id LIMIT 1000";
static const char SQL_GET[] = "SELECT id, issuer, subject, client_id, scopes, first_seen, last_seen FROM principals "
                              "WHERE tenant = ?1 AND id = ?2";

static bool note_tx(gg_store_conn *c, void *user, gg_error *err) {
    const gg_store_principal *p = user;
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_NOTE, err);
    if (!st) return false;
    gg_db_bind_text(st, 1, p->tenant, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 2, p->id, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 3, p->issuer, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 4, p->subject, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 5, p->client_id, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 6, p->scopes, -1, SQLITE_STATIC);
    gg_db_bind_int64(st, 7, p->seen_ms);
    return gg_store_step_done(c, st, "principals", err);
}

bool gg_store_principal_note(gg_store *s, const gg_store_principal *p, gg_error *err) {
    return gg_store_write_tx(s, note_tx, (void *)p, err);
}

static json_t *row_json(gg_db_stmt *st) {
    return json_pack("{s:s,s:s,s:s,s:s,s:s,s:o,s:o}", "id", (const char *)gg_db_column_text(st, 0), "issuer",
                     (const char *)gg_db_column_text(st, 1), "subject", (const char *)gg_db_column_text(st, 2),
                     "client_id", (const char *)gg_db_column_text(st, 3), "scopes",
                     (const char *)gg_db_column_text(st, 4), "first_seen",
                     gg_store_time_json(gg_db_column_int64(st, 5)), "last_seen",
                     gg_store_time_json(gg_db_column_int64(st, 6)));
}

json_t *gg_store_principals_list(gg_store *s, const char *tenant, gg_error *err) {
    return gg_store_tenant_rows(s, SQL_LIST, tenant, NULL, row_json, "principals", err);
}

json_t *gg_store_principal_get(gg_store *s, const char *tenant, const char *id, gg_error *err) {
    json_t *rows = gg_store_tenant_rows(s, SQL_GET, tenant, id, row_json, "principals", err);
    json_t *one = json_incref(json_array_get(rows, 0));
    json_decref(rows);
    return one;
}
