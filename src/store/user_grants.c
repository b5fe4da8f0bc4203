/* user_grants.c — per-user grants of downstream OAuth servers (migration 0018): what one
 * principal of a tenant consented to for one mcpServers entry, sealed by vault.c like a
 * tenant secret (secrets.c: gg_store_seal_text) with the principal and server in the
 * associated data. The value column holds only ciphertext; the summary never reads it.
 * No generation bump: a grant is read by the replica whose call needs it, when it needs it. */
#include <stdlib.h>
#include <string.h>

#include "store/store_internal.h"

static const char TABLE[] = "downstream_user_grants";
static const char SQL_UPSERT[] =
    "INSERT INTO downstream_user_grants(tenant, server, principal, nonce, value, key_id, expires_at, created_at, "
    "updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8) ON CONFLICT (tenant, server, principal) DO UPDATE SET "
    "nonce = excluded.nonce, value = excluded.value, key_id = excluded.key_id, expires_at = excluded.expires_at, "
    "updated_at = excluded.updated_at";
static const char SQL_HAS[] =
    "SELECT 1 FROM downstream_user_grants WHERE tenant = ?1 AND server = ?2 AND principal = ?3";
static const char SQL_GET[] =
    "SELECT nonce, value FROM downstream_user_grants WHERE tenant = ?1 AND server = ?2 AND principal = ?3";
static const char SQL_DEL_ONE[] =
    "DELETE FROM downstream_user_grants WHERE tenant = ?1 AND server = ?2 AND principal = ?3";
static const char SQL_DEL_ALL[] = "DELETE FROM downstream_user_grants WHERE tenant = ?1 AND server = ?2";
static const char SQL_SUMMARY[] = "SELECT server, count(*) FROM downstream_user_grants WHERE tenant = ?1 "
                                  "GROUP BY server ORDER BY server";
static const char SQL_COUNT[] = "SELECT count(*), coalesce(sum(CASE WHEN key_id = ?1 THEN 0 ELSE 1 END), 0) "
                                "FROM downstream_user_grants";
static const char SQL_ALL[] =
    "SELECT tenant, server, principal, nonce, value FROM downstream_user_grants ORDER BY tenant, server, principal";
static const char SQL_REKEY[] = "UPDATE downstream_user_grants SET nonce = ?4, value = ?5, key_id = ?6 "
                                "WHERE tenant = ?1 AND server = ?2 AND principal = ?3";

/* The vault's name of a grant: "user-grant\n<principal>\n<server>" (no secret's name has a
 * newline: the two never open as each other). false when a part is empty, too long or
 * holds a newline (which would make two splits read alike). */
static bool grant_name(const char *server, const char *principal, char *out, size_t cap) {
    size_t s = server ? strlen(server) : 0, p = principal ? strlen(principal) : 0;
    if (!s || !p || s > GG_STORE_GRANT_SERVER_MAX || p > GG_STORE_GRANT_PRINCIPAL_MAX || strchr(server, '\n') ||
        strchr(principal, '\n'))
        return false;
    int n = snprintf(out, cap, "user-grant\n%s\n%s", principal, server);
    return n > 0 && (size_t)n < cap;
}

/* A grant that does not open: the vault's message would quote the name, newlines and all, so
 * err keeps its code with a message of its own (tenant: NULL when reading, set in a rekey). */
static void unreadable(gg_error *err, const char *tenant, const char *server) {
    if (!err) return;
    char code[GG_ERR_CODE_MAX];
    snprintf(code, sizeof code, "%s", err->code);
    if (tenant)
        gg_error_set(err, code, "the grant of tenant '%s' for server '%s' does not open with the old key", tenant, server);
    else
        gg_error_set(err, code, "the grant for server '%s' cannot be decrypted (another key, or a copied or damaged row)",
                     server);
}

static void bind3(gg_db_stmt *st, const char *tenant, const char *server, const char *principal) {
    gg_db_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 2, server, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 3, principal, -1, SQLITE_STATIC);
}

typedef struct put_args {
    const char *tenant, *server, *principal, *key_id;
    const gg_store_sealed *sl;
    long long expires;
    int created;
} put_args;

static bool put_tx(gg_store_conn *c, void *user, gg_error *err) {
    put_args *a = user;
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_HAS, err);
    if (!st) return false;
    bind3(st, a->tenant, a->server, a->principal);
    int rc = gg_db_step(st);
    gg_db_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return gg_store_set_db_error(c, err, TABLE), false;
    a->created = rc == SQLITE_DONE;
    if (!(st = gg_store_conn_stmt(c, SQL_UPSERT, err))) return false;
    bind3(st, a->tenant, a->server, a->principal);
    gg_db_bind_text(st, 4, a->sl->nonce, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 5, a->sl->value, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 6, a->key_id, -1, SQLITE_STATIC);
    if (a->expires > 0) gg_db_bind_int64(st, 7, a->expires);
    else gg_db_bind_null(st, 7);
    gg_db_bind_int64(st, 8, gg_wall_ms());
    if (gg_store_step_done(c, st, TABLE, err)) return true;
    if (strcmp(err->code, "conflict") == 0) { /* the only constraint left: no such tenant */
        gg_error_clear(err);
        gg_error_set(err, "not_found", "no tenant '%s'", a->tenant);
    }
    return false;
}

/* See store.h. */
int gg_store_user_grant_put(gg_store *s, const gg_store_vault *v, const char *tenant, const char *server,
                            const char *principal, const char *value, size_t len, long long expires_ms, gg_error *err) {
    char name[GG_STORE_VAULT_AD_MAX];
    if (!grant_name(server, principal, name, sizeof name))
        return gg_error_set(err, "invalid_argument", "a grant's server or principal is empty, too long or has a newline"), -1;
    if (len > GG_STORE_GRANT_VALUE_MAX)
        return gg_error_set(err, "too_large", "a grant is at most %d bytes", GG_STORE_GRANT_VALUE_MAX), -1;
    gg_store_sealed sl = {0};
    if (!gg_store_seal_text(v, tenant, name, value, len, &sl, err)) return -1;
    put_args a = {tenant, server, principal, v->key_id, &sl, expires_ms, 0};
    bool ok = gg_store_write_tx(s, put_tx, &a, err);
    free(sl.value);
    return ok ? a.created : -1;
}

/* See store.h. */
char *gg_store_user_grant_get(gg_store *s, const gg_store_vault *v, const char *tenant, const char *server,
                              const char *principal, size_t *len, gg_error *err) {
    char name[GG_STORE_VAULT_AD_MAX];
    if (!grant_name(server, principal, name, sizeof name))
        return gg_error_set(err, "not_found", "no grant of that principal for server '%.100s'", server ? server : ""), NULL;
    const char *keys[] = {tenant, server, principal};
    char *out;
    int rc = gg_store_sealed_read(s, v, SQL_GET, TABLE, keys, 3, name, &out, len, err);
    if (rc == 0) gg_error_set(err, "not_found", "no grant of that principal for server '%s'", server);
    if (rc == -2) unreadable(err, NULL, server);
    return out;
}

typedef struct del_args {
    const char *tenant, *server, *principal;
    long long n;
} del_args;

static bool delete_tx(gg_store_conn *c, void *user, gg_error *err) {
    del_args *a = user;
    gg_db_stmt *st = gg_store_conn_stmt(c, a->principal ? SQL_DEL_ONE : SQL_DEL_ALL, err);
    if (!st) return false;
    gg_db_bind_text(st, 1, a->tenant, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 2, a->server, -1, SQLITE_STATIC);
    if (a->principal) gg_db_bind_text(st, 3, a->principal, -1, SQLITE_STATIC);
    if (!gg_store_step_done(c, st, TABLE, err)) return false;
    a->n = gg_db_changes(c);
    return true;
}

/* See store.h. */
long long gg_store_user_grant_delete(gg_store *s, const char *tenant, const char *server, const char *principal,
                                     gg_error *err) {
    del_args a = {tenant, server, principal, 0};
    return gg_store_write_tx(s, delete_tx, &a, err) ? a.n : -1;
}

static json_t *summary_row(gg_db_stmt *st) {
    return json_pack("{s:s, s:I}", "server", (const char *)gg_db_column_text(st, 0), "users",
                     (json_int_t)gg_db_column_int64(st, 1));
}

/* See store.h. */
json_t *gg_store_user_grants_summary(gg_store *s, const char *tenant, gg_error *err) {
    return gg_store_tenant_rows(s, SQL_SUMMARY, tenant, NULL, summary_row, TABLE, err);
}

/* See store.h. */
long long gg_store_user_grants_count(gg_store *s, const char *key_id, long long *other, gg_error *err) {
    return gg_store_sealed_count(s, SQL_COUNT, TABLE, key_id, other, err);
}

/* ---- rekey (gg_store_sealed_rekey) --------------------------------------------------- */

static const char *grant_row_name(const char *const *keys, char *buf, size_t cap, gg_error *err) {
    if (grant_name(keys[1], keys[2], buf, cap)) return buf;
    gg_error_set(err, "secret_unreadable", "a grant row has an unusable server or principal");
    return NULL;
}

static bool grant_row_write(gg_store_conn *c, const char *const *keys, const gg_store_sealed *sl, const char *key_id,
                            long long now_ms, gg_error *err) {
    (void)now_ms; /* a rekey is no update of the grant */
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_REKEY, err);
    if (!st) return false;
    bind3(st, keys[0], keys[1], keys[2]);
    gg_db_bind_text(st, 4, sl->nonce, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 5, sl->value, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 6, key_id, -1, SQLITE_STATIC);
    return gg_store_step_done(c, st, TABLE, err);
}

static void grant_row_unreadable(const char *const *keys, gg_error *err) { unreadable(err, keys[0], keys[1]); }

/* See store.h. */
long long gg_store_user_grants_rekey(gg_store *s, const gg_store_vault *old, const gg_store_vault *new_key,
                                     gg_error *err) {
    static const gg_store_sealed_table grants = {TABLE, SQL_ALL, 3, grant_row_name, grant_row_write,
                                                 grant_row_unreadable};
    return gg_store_sealed_rekey(s, &grants, old, new_key, err);
}
