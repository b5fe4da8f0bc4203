/* secrets.c — a tenant's secrets (migration 0016): rows sealed by vault.c. The value column
 * holds only ciphertext; list/meta never read it. Every change bumps the secrets
 * generation in its transaction (NOTIFY on PostgreSQL), so every replica's downstream
 * clients that use a changed secret are replaced on their next call. */
#include <ctype.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_internal.h"

#define B64 sodium_base64_VARIANT_ORIGINAL
#define NONCE_HEX (2 * GG_STORE_VAULT_NONCE_BYTES + 1)

static const char SQL_HAS[] = "SELECT created_at FROM tenant_secrets WHERE tenant = ?1 AND name = ?2";
static const char SQL_INS[] =
    "INSERT INTO tenant_secrets(tenant, name, nonce, value, key_id, fingerprint, created_at, updated_at) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)";
static const char SQL_UPD[] = "UPDATE tenant_secrets SET nonce = ?3, value = ?4, key_id = ?5, fingerprint = ?6, "
                              "updated_at = ?7 WHERE tenant = ?1 AND name = ?2";
static const char SQL_LIST[] = "SELECT name, fingerprint, created_at, updated_at, last_used_at FROM tenant_secrets "
                               "WHERE tenant = ?1 ORDER BY name";
static const char SQL_META[] = "SELECT name, fingerprint, created_at, updated_at, last_used_at FROM tenant_secrets "
                               "WHERE tenant = ?1 AND name = ?2";
static const char SQL_DEL[] = "DELETE FROM tenant_secrets WHERE tenant = ?1 AND name = ?2";
static const char SQL_GET[] = "SELECT nonce, value FROM tenant_secrets WHERE tenant = ?1 AND name = ?2";
static const char SQL_TOUCH[] = "UPDATE tenant_secrets SET last_used_at = ?3 WHERE tenant = ?1 AND name = ?2 "
                                "AND (last_used_at IS NULL OR last_used_at < ?3)";
static const char SQL_COUNT[] = "SELECT count(*), coalesce(sum(CASE WHEN key_id = ?1 THEN 0 ELSE 1 END), 0) "
                                "FROM tenant_secrets";
static const char SQL_ALL[] = "SELECT tenant, name, nonce, value FROM tenant_secrets ORDER BY tenant, name";

/* See store.h. */
bool gg_store_secret_name_ok(const char *name) {
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > GG_STORE_SECRET_NAME_MAX || isdigit((unsigned char)name[0])) return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)name[i]) && name[i] != '_') return false;
    return true;
}

typedef gg_store_sealed sealed;

/* See store_internal.h. */
bool gg_store_seal_text(const gg_store_vault *v, const char *tenant, const char *name, const char *value, size_t len,
                        gg_store_sealed *out, gg_error *err) {
    unsigned char nonce[GG_STORE_VAULT_NONCE_BYTES];
    size_t n = 0;
    unsigned char *ct = gg_store_vault_seal(v, tenant, name, (const unsigned char *)value, len, nonce, &n, err);
    if (!ct) return false;
    size_t b = sodium_base64_ENCODED_LEN(n, B64);
    out->value = malloc(b);
    if (out->value) sodium_bin2base64(out->value, b, ct, n, B64);
    free(ct);
    if (!out->value) return gg_error_set(err, "oom", "out of memory"), false;
    sodium_bin2hex(out->nonce, sizeof out->nonce, nonce, sizeof nonce);
    gg_store_vault_fingerprint(v, tenant, name, (const unsigned char *)value, len, out->fp);
    return true;
}

/* Run sql (SQL_INS / SQL_UPD) for one sealed row. */
static bool write_row(gg_store_conn *c, const char *sql, const char *tenant, const char *name, const sealed *s,
                      const char *key_id, long long now, gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, sql, err);
    if (!st) return false;
    gg_db_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 2, name, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 3, s->nonce, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 4, s->value, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 5, key_id, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 6, s->fp, -1, SQLITE_STATIC);
    gg_db_bind_int64(st, 7, now);
    if (gg_store_step_done(c, st, "tenant_secrets", err)) return true;
    if (strcmp(err->code, "conflict") == 0) { /* the only constraint left: no such tenant */
        gg_error_clear(err);
        gg_error_set(err, "not_found", "no tenant '%s'", tenant);
    }
    return false;
}

/* Run sql bound to (tenant, name): whether a row came (its first column into *out). */
static int row2(gg_store_conn *c, const char *sql, const char *tenant, const char *name, long long *out,
                gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, sql, err);
    if (!st) return -1;
    gg_db_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 2, name, -1, SQLITE_STATIC);
    int rc = gg_db_step(st);
    if (rc == SQLITE_ROW && out) *out = gg_db_column_int64(st, 0);
    gg_db_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        gg_store_set_db_error(c, err, "tenant_secrets");
        return -1;
    }
    return rc == SQLITE_ROW;
}

typedef struct put_args {
    const char *tenant, *name, *key_id;
    const sealed *s;
    int created;
} put_args;

static bool put_tx(gg_store_conn *c, void *user, gg_error *err) {
    put_args *a = user;
    int has = row2(c, SQL_HAS, a->tenant, a->name, NULL, err);
    if (has < 0) return false;
    a->created = !has;
    return write_row(c, has ? SQL_UPD : SQL_INS, a->tenant, a->name, a->s, a->key_id, gg_wall_ms(), err) &&
           gg_store_bump_generation(c, GG_GEN_SECRETS, err);
}

/* See store.h. */
int gg_store_secret_put(gg_store *s, const gg_store_vault *v, const char *tenant, const char *name,
                        const char *value, size_t len, gg_error *err) {
    if (!gg_store_secret_name_ok(name))
        return gg_error_set(err, "invalid_name", "a secret name is [A-Za-z_][A-Za-z0-9_]{0,63}"), -1;
    if (len > GG_STORE_SECRET_VALUE_MAX)
        return gg_error_set(err, "too_large", "a secret value is at most %d bytes", GG_STORE_SECRET_VALUE_MAX), -1;
    sealed sl = {0};
    if (!gg_store_seal_text(v, tenant, name, value, len, &sl, err)) return -1;
    put_args a = {tenant, name, v->key_id, &sl, 0};
    bool ok = gg_store_write_tx(s, put_tx, &a, err);
    free(sl.value);
    return ok ? a.created : -1;
}

static json_t *meta_json(gg_db_stmt *st) {
    long long used = gg_db_column_type(st, 4) == SQLITE_NULL ? 0 : gg_db_column_int64(st, 4);
    return json_pack("{s:s,s:s,s:o,s:o,s:o}", "name", (const char *)gg_db_column_text(st, 0), "fingerprint",
                     (const char *)gg_db_column_text(st, 1), "created", gg_store_time_json(gg_db_column_int64(st, 2)),
                     "updated", gg_store_time_json(gg_db_column_int64(st, 3)), "last_used", gg_store_time_json(used));
}

/* See store.h. */
json_t *gg_store_secrets_list(gg_store *s, const char *tenant, gg_error *err) {
    return gg_store_tenant_rows(s, SQL_LIST, tenant, NULL, meta_json, "tenant_secrets", err);
}

/* See store.h. */
json_t *gg_store_secret_meta(gg_store *s, const char *tenant, const char *name, gg_error *err) {
    json_t *rows = gg_store_tenant_rows(s, SQL_META, tenant, name, meta_json, "tenant_secrets", err);
    if (!rows) return NULL;
    json_t *one = json_incref(json_array_get(rows, 0));
    json_decref(rows);
    if (!one) gg_error_set(err, "not_found", "no secret '%s'", name);
    return one;
}

typedef struct del_args {
    const char *tenant, *name;
} del_args;

static bool delete_tx(gg_store_conn *c, void *user, gg_error *err) {
    del_args *a = user;
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_DEL, err);
    if (!st) return false;
    gg_db_bind_text(st, 1, a->tenant, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 2, a->name, -1, SQLITE_STATIC);
    if (!gg_store_step_done(c, st, "tenant_secrets", err)) return false;
    if (gg_db_changes(c) == 0) return gg_error_set(err, "not_found", "no secret '%s'", a->name), false;
    return gg_store_bump_generation(c, GG_GEN_SECRETS, err);
}

/* See store.h. */
bool gg_store_secret_delete(gg_store *s, const char *tenant, const char *name, gg_error *err) {
    del_args a = {tenant, name};
    return gg_store_write_tx(s, delete_tx, &a, err);
}

/* See store_internal.h. */
char *gg_store_open_text(const gg_store_vault *v, const char *tenant, const char *name, const char *nonce_hex,
                      const char *b64, size_t *len, gg_error *err) {
    unsigned char nonce[GG_STORE_VAULT_NONCE_BYTES];
    size_t got = 0, blen = strlen(b64), n = 0;
    unsigned char *ct = malloc(blen ? blen : 1);
    if (!ct) return gg_error_set(err, "oom", "out of memory"), NULL;
    char *out = NULL;
    if (sodium_hex2bin(nonce, sizeof nonce, nonce_hex, strlen(nonce_hex), NULL, &got, NULL) == 0 &&
        got == sizeof nonce && sodium_base642bin(ct, blen, b64, blen, NULL, &n, NULL, B64) == 0)
        out = gg_store_vault_open(v, tenant, name, nonce, ct, n, len, err);
    else gg_error_set(err, "secret_unreadable", "secret '%s' cannot be decrypted (a damaged row)", name);
    free(ct);
    return out;
}

/* See store_internal.h. */
int gg_store_sealed_read(gg_store *s, const gg_store_vault *v, const char *sql, const char *table,
                         const char *const *keys, int n, const char *name, char **out, size_t *len, gg_error *err) {
    *out = NULL;
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return -1;
    int ret = -1;
    gg_db_stmt *st = gg_store_conn_stmt(c, sql, err);
    if (st) {
        for (int i = 0; i < n; i++) gg_db_bind_text(st, i + 1, keys[i], -1, SQLITE_STATIC);
        int rc = gg_db_step(st);
        if (rc == SQLITE_ROW) {
            *out = gg_store_open_text(v, keys[0], name, (const char *)gg_db_column_text(st, 0),
                                      (const char *)gg_db_column_text(st, 1), len, err);
            ret = *out ? 1 : -2;
        } else if (rc == SQLITE_DONE) ret = 0;
        else gg_store_set_db_error(c, err, table);
        gg_db_reset(st);
    }
    gg_store_conn_release(s, c);
    return ret;
}

/* See store.h. */
char *gg_store_secret_reveal(gg_store *s, const gg_store_vault *v, const char *tenant, const char *name,
                             size_t *len, gg_error *err) {
    const char *keys[] = {tenant, name};
    char *out;
    if (gg_store_sealed_read(s, v, SQL_GET, "tenant_secrets", keys, 2, name, &out, len, err) == 0)
        gg_error_set(err, "not_found", "no secret '%s'", name);
    return out;
}

typedef struct touch_args {
    const char *const *tenants, *const *names;
    size_t n;
    long long at;
} touch_args;

static bool touch_tx(gg_store_conn *c, void *user, gg_error *err) {
    touch_args *a = user;
    for (size_t i = 0; i < a->n; i++) {
        gg_db_stmt *st = gg_store_conn_stmt(c, SQL_TOUCH, err);
        if (!st) return false;
        gg_db_bind_text(st, 1, a->tenants[i], -1, SQLITE_STATIC);
        gg_db_bind_text(st, 2, a->names[i], -1, SQLITE_STATIC);
        gg_db_bind_int64(st, 3, a->at);
        if (!gg_store_step_done(c, st, "tenant_secrets", err)) return false;
    }
    return true;
}

/* See store.h. */
bool gg_store_secrets_touch(gg_store *s, const char *const *tenants, const char *const *names, size_t n,
                            long long at_ms, gg_error *err) {
    if (!n) return true;
    touch_args a = {tenants, names, n, at_ms};
    return gg_store_write_tx(s, touch_tx, &a, err);
}

/* See store_internal.h. */
long long gg_store_sealed_count(gg_store *s, const char *sql, const char *table, const char *key_id, long long *other,
                                gg_error *err) {
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return -1;
    long long total = -1;
    gg_db_stmt *st = gg_store_conn_stmt(c, sql, err);
    if (st) {
        gg_db_bind_text(st, 1, key_id ? key_id : "", -1, SQLITE_STATIC);
        if (gg_db_step(st) == SQLITE_ROW) {
            total = gg_db_column_int64(st, 0);
            if (other) *other = gg_db_column_int64(st, 1);
        } else gg_store_set_db_error(c, err, table);
        gg_db_reset(st);
    }
    gg_store_conn_release(s, c);
    return total;
}

/* See store.h. */
long long gg_store_secrets_count(gg_store *s, const char *key_id, long long *other, gg_error *err) {
    return gg_store_sealed_count(s, SQL_COUNT, "tenant_secrets", key_id, other, err);
}

/* ---- rekey: every sealed row of a table opened with the old key and sealed with the new
 * one, in one transaction (a row the old key cannot open fails it all, nothing changed) -- */

typedef struct rekey_row {
    char *keys[GG_STORE_SEALED_KEYS_MAX];
    char *value;
    size_t len;
} rekey_row;

typedef struct rekey_args {
    const gg_store_sealed_table *t;
    const gg_store_vault *old, *new_key;
    rekey_row *rows;
    size_t n, cap;
} rekey_args;

/* The row st is on, kept in a->rows and opened with the old key. */
static bool rekey_keep(rekey_args *a, gg_db_stmt *st, gg_error *err) {
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 16;
        rekey_row *r = realloc(a->rows, cap * sizeof *r);
        if (!r) return gg_error_set(err, "oom", "out of memory"), false;
        a->rows = r;
        a->cap = cap;
    }
    rekey_row *r = &a->rows[a->n++];
    *r = (rekey_row){0};
    int k = a->t->nkeys;
    for (int i = 0; i < k; i++)
        if (!(r->keys[i] = strdup((const char *)gg_db_column_text(st, i))))
            return gg_error_set(err, "oom", "out of memory"), false;
    const char *const *keys = (const char *const *)r->keys;
    char buf[GG_STORE_VAULT_AD_MAX];
    const char *name = a->t->name(keys, buf, sizeof buf, err);
    if (!name) return false;
    r->value = gg_store_open_text(a->old, keys[0], name, (const char *)gg_db_column_text(st, k),
                                  (const char *)gg_db_column_text(st, k + 1), &r->len, err);
    if (!r->value && a->t->unreadable) a->t->unreadable(keys, err);
    return r->value != NULL;
}

static bool rekey_write(gg_store_conn *c, rekey_args *a, const rekey_row *r, long long now, gg_error *err) {
    const char *const *keys = (const char *const *)r->keys;
    char buf[GG_STORE_VAULT_AD_MAX];
    const char *name = a->t->name(keys, buf, sizeof buf, err); /* not NULL: it was when read */
    gg_store_sealed sl = {0};
    bool ok = gg_store_seal_text(a->new_key, keys[0], name, r->value, r->len, &sl, err) &&
              a->t->write(c, keys, &sl, a->new_key->key_id, now, err);
    free(sl.value);
    return ok;
}

static bool rekey_tx(gg_store_conn *c, void *user, gg_error *err) {
    rekey_args *a = user;
    gg_db_stmt *st = gg_store_conn_stmt(c, a->t->all_sql, err);
    if (!st) return false;
    int rc;
    bool ok = true;
    while (ok && (rc = gg_db_step(st)) == SQLITE_ROW) ok = rekey_keep(a, st, err);
    if (ok && rc != SQLITE_DONE) ok = (gg_store_set_db_error(c, err, a->t->table), false);
    gg_db_reset(st);
    long long now = gg_wall_ms();
    for (size_t i = 0; ok && i < a->n; i++) ok = rekey_write(c, a, &a->rows[i], now, err);
    return ok;
}

/* See store_internal.h. */
long long gg_store_sealed_rekey(gg_store *s, const gg_store_sealed_table *t, const gg_store_vault *old,
                                const gg_store_vault *new_key, gg_error *err) {
    rekey_args a = {t, old, new_key, NULL, 0, 0};
    bool ok = gg_store_write_tx(s, rekey_tx, &a, err);
    for (size_t i = 0; i < a.n; i++) {
        for (int k = 0; k < t->nkeys; k++) free(a.rows[i].keys[k]);
        gg_store_secret_free(a.rows[i].value, a.rows[i].len);
    }
    free(a.rows);
    return ok ? (long long)a.n : -1;
}

/* A secret's row is sealed as its name. */
static const char *secret_row_name(const char *const *keys, char *buf, size_t cap, gg_error *err) {
    (void)buf, (void)cap, (void)err;
    return keys[1];
}

static bool secret_row_write(gg_store_conn *c, const char *const *keys, const gg_store_sealed *sl, const char *key_id,
                             long long now, gg_error *err) {
    return write_row(c, SQL_UPD, keys[0], keys[1], sl, key_id, now, err);
}

/* See store.h. No generation bump: the values are the same, and running servers (still on
 * the old key until their restart) keep the clients they made instead of failing to open
 * the rows again. */
long long gg_store_secrets_rekey(gg_store *s, const gg_store_vault *old, const gg_store_vault *new_key, gg_error *err) {
    static const gg_store_sealed_table secrets = {"tenant_secrets", SQL_ALL, 2, secret_row_name, secret_row_write,
                                                  NULL /* the vault's message names the secret */};
    return gg_store_sealed_rekey(s, &secrets, old, new_key, err);
}
