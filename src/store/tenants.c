/* tenants.c — tenants and API keys. */
#include "store/store_internal.h"

#include <stdlib.h>
#include <string.h>

/* Run one prepared write statement; "not_found" when it changed no row and
 * require_change is set. */
static bool step_write(gg_store_conn *c, gg_db_stmt *st, bool require_change, const char *what,
                       const char *name, gg_error *err) {
    if (!gg_store_step_done(c, st, what, err)) return false;
    if (require_change && gg_db_changes(c) == 0) {
        gg_error_set(err, "not_found", "%s '%s' not found", what, name ? name : "");
        return false;
    }
    return true;
}

static const char SQL_TENANT_INSERT[] =
    "INSERT INTO tenants(name, created_at) VALUES (?1, ?2) ON CONFLICT(name) DO NOTHING";
static const char SQL_TENANT_DELETE[] = "DELETE FROM tenants WHERE name = ?1";
static const char SQL_TENANT_EXISTS[] = "SELECT 1 FROM tenants WHERE name = ?1";
static const char SQL_TENANT_LIST[] =
    "SELECT t.name, t.created_at,"
    " (SELECT count(*) FROM api_keys k WHERE k.tenant = t.name AND k.revoked_at IS NULL),"
    " (SELECT count(*) FROM graphs g WHERE g.tenant = t.name)"
    " FROM tenants t ORDER BY t.name";

bool gg_store_tenant_create(gg_store *s, const char *tenant, gg_error *err) {
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return false;
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_TENANT_INSERT, err);
    bool ok = false;
    if (st) {
        gg_db_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
        gg_db_bind_int64(st, 2, gg_wall_ms());
        ok = step_write(c, st, false, "tenant", tenant, err);
        if (ok && gg_db_changes(c) == 0) {
            gg_error_set(err, "conflict", "tenant '%s' already exists", tenant);
            ok = false;
        }
    }
    gg_store_conn_release(s, c);
    return ok;
}

static bool tenant_delete_tx(gg_store_conn *c, void *user, gg_error *err) {
    const char *tenant = user;
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_TENANT_DELETE, err);
    if (!st) return false;
    gg_db_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
    /* Keys, graphs, views and authorization servers went with the tenant (ON DELETE
     * CASCADE): tell caches. */
    return step_write(c, st, true, "tenant", tenant, err) && gg_store_bump_generation(c, GG_GEN_KEYS, err) &&
           gg_store_bump_generation(c, GG_GEN_GRAPHS, err) && gg_store_bump_generation(c, GG_GEN_VIEWS, err) &&
           gg_store_bump_generation(c, GG_GEN_OAUTH, err) && gg_store_bump_generation(c, GG_GEN_SECRETS, err);
}

bool gg_store_tenant_delete(gg_store *s, const char *tenant, gg_error *err) {
    return gg_store_write_tx(s, tenant_delete_tx, (void *)tenant, err);
}

bool gg_store_tenant_exists(gg_store *s, const char *tenant, gg_error *err) {
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return false;
    bool found = false;
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_TENANT_EXISTS, err);
    if (st) {
        gg_db_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
        int rc = gg_db_step(st);
        found = rc == SQLITE_ROW;
        if (rc != SQLITE_ROW && rc != SQLITE_DONE) gg_store_set_db_error(c, err, "tenant");
        gg_db_reset(st);
    }
    gg_store_conn_release(s, c);
    return found;
}

json_t *gg_store_tenants_list(gg_store *s, gg_error *err) {
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return NULL;
    json_t *arr = json_array();
    gg_db_stmt *st = arr ? gg_store_conn_stmt(c, SQL_TENANT_LIST, err) : NULL;
    int rc = SQLITE_ERROR;
    if (st) {
        while ((rc = gg_db_step(st)) == SQLITE_ROW) {
            json_t *o = json_pack("{s:s,s:o,s:I,s:I}", "name", (const char *)gg_db_column_text(st, 0),
                                  "created_at", gg_store_time_json(gg_db_column_int64(st, 1)),
                                  "keys", (json_int_t)gg_db_column_int64(st, 2),
                                  "graphs", (json_int_t)gg_db_column_int64(st, 3));
            if (!o || json_array_append_new(arr, o) != 0) { rc = SQLITE_NOMEM; break; }
        }
        if (rc != SQLITE_DONE) gg_store_set_db_error(c, err, "tenants");
        gg_db_reset(st);
    }
    gg_store_conn_release(s, c);
    if (rc != SQLITE_DONE) { json_decref(arr); return NULL; }
    return arr;
}

/* ---- keys ------------------------------------------------------------------------------- */

static const char SQL_KEY_INSERT[] =
    "INSERT INTO api_keys(id, tenant, name, hash, scopes, created_at)"
    " SELECT ?1, ?2, ?3, CAST(?4 AS BLOB), ?5, CAST(?6 AS INTEGER) WHERE EXISTS (SELECT 1 FROM tenants WHERE name = ?2)";
static const char SQL_KEY_GET[] =
    "SELECT id, tenant, scopes, hash, revoked_at, created_at, last_used_at FROM api_keys WHERE id = ?1";
static const char SQL_KEY_LIST[] =
    "SELECT id, tenant, name, scopes, created_at, last_used_at, revoked_at FROM api_keys"
    " WHERE (CAST(?1 AS TEXT) IS NULL OR tenant = ?1) ORDER BY tenant, created_at, id";
static const char SQL_KEY_REVOKE[] =
    "UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?2) WHERE id = ?1 AND (CAST(?3 AS TEXT) IS NULL OR tenant = ?3)";
static const char SQL_KEY_TOUCH[] =
    "UPDATE api_keys SET last_used_at = ?2 WHERE id = ?1 AND (last_used_at IS NULL OR last_used_at < ?2)";

bool gg_store_key_insert(gg_store *s, const char *id, const char *tenant, const char *name,
                         const unsigned char hash[GG_KEY_HASH_LEN], const char *scopes, gg_error *err) {
    if (strlen(id) >= GG_KEY_ID_MAX || strlen(tenant) >= GG_TENANT_MAX || strlen(scopes) >= sizeof ((gg_key_row *)0)->scopes) {
        gg_error_set(err, "invalid", "key id, tenant or scopes too long");
        return false;
    }
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return false;
    bool ok = false;
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_KEY_INSERT, err);
    if (st) {
        gg_db_bind_text(st, 1, id, -1, SQLITE_STATIC);
        gg_db_bind_text(st, 2, tenant, -1, SQLITE_STATIC);
        gg_db_bind_text(st, 3, name ? name : "", -1, SQLITE_STATIC);
        gg_db_bind_blob(st, 4, hash, GG_KEY_HASH_LEN, SQLITE_STATIC);
        gg_db_bind_text(st, 5, scopes, -1, SQLITE_STATIC);
        gg_db_bind_int64(st, 6, gg_wall_ms());
        ok = step_write(c, st, false, "key", id, err);
        if (ok && gg_db_changes(c) == 0) {
            gg_error_set(err, "not_found", "tenant '%s' not found", tenant);
            ok = false;
        }
    }
    gg_store_conn_release(s, c);
    return ok;
}

bool gg_store_key_get(gg_store *s, const char *id, gg_key_row *out, gg_error *err) {
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return false;
    bool ok = false;
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_KEY_GET, err);
    if (st) {
        gg_db_bind_text(st, 1, id, -1, SQLITE_STATIC);
        int rc = gg_db_step(st);
        if (rc == SQLITE_ROW && gg_db_column_bytes(st, 3) == GG_KEY_HASH_LEN) {
            memset(out, 0, sizeof *out);
            snprintf(out->id, sizeof out->id, "%s", (const char *)gg_db_column_text(st, 0));
            snprintf(out->tenant, sizeof out->tenant, "%s", (const char *)gg_db_column_text(st, 1));
            snprintf(out->scopes, sizeof out->scopes, "%s", (const char *)gg_db_column_text(st, 2));
            memcpy(out->hash, gg_db_column_blob(st, 3), GG_KEY_HASH_LEN);
            out->revoked = gg_db_column_type(st, 4) != SQLITE_NULL;
            out->created_ms = gg_db_column_int64(st, 5);
            out->last_used_ms = gg_db_column_int64(st, 6);
            ok = true;
        } else if (rc == SQLITE_ROW || rc == SQLITE_DONE) {
            gg_error_set(err, "not_found", "key '%s' not found", id);
        } else {
            gg_store_set_db_error(c, err, "key");
        }
        gg_db_reset(st);
    }
    gg_store_conn_release(s, c);
    return ok;
}

/* Stored scopes text → JSON array of names. */
static json_t *scopes_array(const char *csv) {
    json_t *a = json_array();
    if (!a || !csv) return a;
    const char *p = csv;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n) json_array_append_new(a, json_stringn(p, n));
        p += n + (e ? 1 : 0);
    }
    return a;
}

json_t *gg_store_keys_list(gg_store *s, const char *tenant, gg_error *err) {
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return NULL;
    json_t *arr = json_array();
    gg_db_stmt *st = arr ? gg_store_conn_stmt(c, SQL_KEY_LIST, err) : NULL;
    int rc = SQLITE_ERROR;
    if (st) {
        gg_store_bind_text(st, 1, tenant);
        while ((rc = gg_db_step(st)) == SQLITE_ROW) {
            bool revoked = gg_db_column_type(st, 6) != SQLITE_NULL;
            json_t *o = json_pack("{s:s,s:s,s:s,s:o,s:o,s:o,s:b,s:o}",
                                  "id", (const char *)gg_db_column_text(st, 0),
                                  "tenant", (const char *)gg_db_column_text(st, 1),
                                  "name", (const char *)gg_db_column_text(st, 2),
                                  "scopes", scopes_array((const char *)gg_db_column_text(st, 3)),
                                  "created_at", gg_store_time_json(gg_db_column_int64(st, 4)),
                                  "last_used_at", gg_store_time_json(gg_db_column_int64(st, 5)),
                                  "revoked", revoked,
                                  "revoked_at", gg_store_time_json(gg_db_column_int64(st, 6)));
            if (!o || json_array_append_new(arr, o) != 0) { rc = SQLITE_NOMEM; break; }
        }
        if (rc != SQLITE_DONE) gg_store_set_db_error(c, err, "keys");
        gg_db_reset(st);
    }
    gg_store_conn_release(s, c);
    if (rc != SQLITE_DONE) { json_decref(arr); return NULL; }
    return arr;
}

typedef struct {
    const char *id, *tenant;
} key_revoke_args;

static bool key_revoke_tx(gg_store_conn *c, void *user, gg_error *err) {
    const key_revoke_args *a = user;
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_KEY_REVOKE, err);
    if (!st) return false;
    gg_db_bind_text(st, 1, a->id, -1, SQLITE_STATIC);
    gg_db_bind_int64(st, 2, gg_wall_ms());
    gg_store_bind_text(st, 3, a->tenant);
    return step_write(c, st, true, "key", a->id, err) && gg_store_bump_generation(c, GG_GEN_KEYS, err);
}

bool gg_store_key_revoke(gg_store *s, const char *id, const char *tenant, gg_error *err) {
    key_revoke_args a = {id, tenant};
    return gg_store_write_tx(s, key_revoke_tx, &a, err);
}

bool gg_store_key_touch(gg_store *s, const char *id, long long when_ms, gg_error *err) {
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return false;
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_KEY_TOUCH, err);
    bool ok = false;
    if (st) {
        gg_db_bind_text(st, 1, id, -1, SQLITE_STATIC);
        gg_db_bind_int64(st, 2, when_ms);
        ok = step_write(c, st, false, "key", id, err);
    }
    gg_store_conn_release(s, c);
    return ok;
}

/* Used by the history writer on its own connection. */
bool gg_store_key_touch_conn(gg_store_conn *c, const char *id, long long when_ms, gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_KEY_TOUCH, err);
    if (!st) return false;
    gg_db_bind_text(st, 1, id, -1, SQLITE_STATIC);
    gg_db_bind_int64(st, 2, when_ms);
    return step_write(c, st, false, "key", id, err);
}
