/* test_vault.c — tenant secrets: the crypto (src/store/vault.c: round trip, wrong key,
 * wrong tenant/name as associated data, a changed byte, key parsing) and the rows
 * (src/store/secrets.c: put/list/delete, no value in the database file, a row copied to
 * another tenant does not open, rekey in one transaction, key-id counts), and the per-user
 * grants of downstream OAuth servers (src/store/user_grants.c). */
#include <check.h>
#include <sodium.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check_main.h"
#include "fixture.h"
#include "store/store.h"

static const char KEY_A[] = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
static const char KEY_B_B64[] = "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8="; /* bytes 0x20..0x3f */

static gg_store_vault vault(const char *text) {
    gg_store_vault v;
    gg_error err = GG_ERROR_INIT;
    ck_assert_msg(gg_store_vault_init(&v, text, &err), "key: %s", err.message);
    return v;
}

START_TEST(keys_parse_and_have_ids) {
    gg_store_vault a = vault(KEY_A), b = vault(KEY_B_B64), a2 = vault("  000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n");
    ck_assert_str_eq(a.key_id, a2.key_id);
    ck_assert_str_ne(a.key_id, b.key_id);
    ck_assert_int_eq(strlen(a.key_id), GG_STORE_VAULT_ID_LEN);
    ck_assert(strstr(KEY_A, a.key_id) == NULL); /* the id is no part of the key */
    gg_store_vault bad;
    gg_error err = GG_ERROR_INIT;
    ck_assert(!gg_store_vault_init(&bad, "short", &err));
    ck_assert_str_eq(err.code, "invalid_config");
    ck_assert(strstr(err.message, "short") == NULL);
    gg_error_clear(&err);
    ck_assert(!gg_store_vault_init(&bad, "c2hvcnQ=", &err)); /* base64 of 5 bytes */
    gg_error_clear(&err);
}
END_TEST

START_TEST(seal_open_round_trip_and_refusals) {
    gg_store_vault a = vault(KEY_A), b = vault(KEY_B_B64);
    const char *value = "ghp_s3cr3t-value";
    unsigned char nonce[GG_STORE_VAULT_NONCE_BYTES];
    size_t n = 0, got = 0;
    gg_error err = GG_ERROR_INIT;
    unsigned char *ct = gg_store_vault_seal(&a, "acme", "TOKEN", (const unsigned char *)value, strlen(value), nonce, &n, &err);
    ck_assert_ptr_nonnull(ct);
    ck_assert(memmem(ct, n, value, strlen(value)) == NULL);
    char *pt = gg_store_vault_open(&a, "acme", "TOKEN", nonce, ct, n, &got, &err);
    ck_assert_ptr_nonnull(pt);
    ck_assert_str_eq(pt, value);
    ck_assert_uint_eq(got, strlen(value));
    gg_store_secret_free(pt, got);
    /* wrong key, wrong tenant, wrong name, a tenant/name split moved */
    const struct {
        const gg_store_vault *v;
        const char *t, *nm;
    } bad[] = {{&b, "acme", "TOKEN"}, {&a, "other", "TOKEN"}, {&a, "acme", "TOKEN2"}, {&a, "acmeT", "OKEN"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_ptr_null(gg_store_vault_open(bad[i].v, bad[i].t, bad[i].nm, nonce, ct, n, &got, &err));
        ck_assert_str_eq(err.code, "secret_unreadable");
        ck_assert(strstr(err.message, value) == NULL);
        gg_error_clear(&err);
    }
    /* every single changed byte of the ciphertext and of the nonce is refused */
    for (size_t i = 0; i < n; i++) {
        ct[i] ^= 0x01;
        ck_assert_ptr_null(gg_store_vault_open(&a, "acme", "TOKEN", nonce, ct, n, &got, &err));
        gg_error_clear(&err);
        ct[i] ^= 0x01;
    }
    nonce[3] ^= 0x80;
    ck_assert_ptr_null(gg_store_vault_open(&a, "acme", "TOKEN", nonce, ct, n, &got, &err));
    gg_error_clear(&err);
    free(ct);
    /* fingerprints: stable under one key, another under another key or tenant */
    char f1[GG_STORE_VAULT_ID_LEN + 1], f2[GG_STORE_VAULT_ID_LEN + 1], f3[GG_STORE_VAULT_ID_LEN + 1],
        f4[GG_STORE_VAULT_ID_LEN + 1];
    gg_store_vault_fingerprint(&a, "acme", "TOKEN", (const unsigned char *)value, strlen(value), f1);
    gg_store_vault_fingerprint(&a, "acme", "TOKEN", (const unsigned char *)value, strlen(value), f2);
    gg_store_vault_fingerprint(&b, "acme", "TOKEN", (const unsigned char *)value, strlen(value), f3);
    gg_store_vault_fingerprint(&a, "beta", "TOKEN", (const unsigned char *)value, strlen(value), f4);
    ck_assert_str_eq(f1, f2);
    ck_assert_str_ne(f1, f3);
    ck_assert_str_ne(f1, f4);
}
END_TEST

/* Whether the file at path holds needle anywhere. */
static bool file_has(const char *path, const char *needle) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    size_t cap = 1 << 20, n = 0, len = strlen(needle);
    char *buf = malloc(cap);
    bool found = false;
    size_t r;
    while ((r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    found = memmem(buf, n, needle, len) != NULL;
    free(buf);
    return found;
}

START_TEST(rows_put_list_reveal_delete_rekey) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    gg_store_vault a = vault(KEY_A), b = vault(KEY_B_B64);
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    ck_assert(gg_store_tenant_create(s, "beta", &err));
    const char *v1 = "first-value-0123456789", *v2 = "second-value-9876543210";
    long long g0 = gg_store_generation_get(s, GG_GEN_SECRETS, &err);
    ck_assert_int_eq(gg_store_secret_put(s, &a, "acme", "TOKEN", v1, strlen(v1), &err), 1);
    ck_assert_int_gt(gg_store_generation_get(s, GG_GEN_SECRETS, &err), g0);
    ck_assert_int_eq(gg_store_secret_put(s, &a, "acme", "TOKEN", v2, strlen(v2), &err), 0);
    ck_assert_int_eq(gg_store_secret_put(s, &a, "acme", "1BAD", v2, strlen(v2), &err), -1);
    ck_assert_str_eq(err.code, "invalid_name");
    gg_error_clear(&err);
    ck_assert_int_eq(gg_store_secret_put(s, &a, "nobody", "TOKEN", v2, strlen(v2), &err), -1);
    ck_assert_str_eq(err.code, "not_found");
    gg_error_clear(&err);
    json_t *l = gg_store_secrets_list(s, "acme", &err);
    ck_assert_int_eq(json_array_size(l), 1);
    char *dump = json_dumps(l, 0);
    ck_assert(strstr(dump, v2) == NULL && strstr(dump, "\"fingerprint\"") && strstr(dump, "\"last_used\": null"));
    free(dump);
    json_decref(l);
    l = gg_store_secrets_list(s, "beta", &err);
    ck_assert_int_eq(json_array_size(l), 0);
    json_decref(l);
    size_t len = 0;
    char *got = gg_store_secret_reveal(s, &a, "acme", "TOKEN", &len, &err);
    ck_assert_str_eq(got, v2);
    gg_store_secret_free(got, len);
    ck_assert_ptr_null(gg_store_secret_reveal(s, &a, "beta", "TOKEN", &len, &err));
    ck_assert_str_eq(err.code, "not_found");
    gg_error_clear(&err);
    if (!pg_mode()) {
        ck_assert(!file_has(dbpath, v2));
        /* a row copied to another tenant does not open there */
        sqlite3 *db;
        ck_assert_int_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
        ck_assert_int_eq(sqlite3_exec(db, "INSERT INTO tenant_secrets SELECT 'beta', name, nonce, value, key_id, "
                                          "fingerprint, created_at, updated_at, NULL FROM tenant_secrets WHERE tenant='acme'",
                                      NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
        ck_assert_ptr_null(gg_store_secret_reveal(s, &a, "beta", "TOKEN", &len, &err));
        ck_assert_str_eq(err.code, "secret_unreadable");
        gg_error_clear(&err);
        ck_assert(gg_store_secret_delete(s, "beta", "TOKEN", &err));
    }
    const char *tn[] = {"acme"}, *nm[] = {"TOKEN"};
    ck_assert(gg_store_secrets_touch(s, tn, nm, 1, 1700000000000LL, &err));
    json_t *m = gg_store_secret_meta(s, "acme", "TOKEN", &err);
    ck_assert(json_is_string(json_object_get(m, "last_used")));
    json_decref(m);
    /* counts by key, rekey, counts again */
    long long other = -1;
    ck_assert_int_eq(gg_store_secrets_count(s, a.key_id, &other, &err), 1);
    ck_assert_int_eq(other, 0);
    ck_assert_int_eq(gg_store_secrets_count(s, b.key_id, &other, &err), 1);
    ck_assert_int_eq(other, 1);
    ck_assert_int_eq(gg_store_secrets_rekey(s, &b, &a, &err), -1); /* the wrong old key changes nothing */
    ck_assert(gg_error_is_set(&err) && strstr(err.message, "TOKEN"));
    gg_error_clear(&err);
    ck_assert_int_eq(gg_store_secrets_rekey(s, &a, &b, &err), 1);
    ck_assert_int_eq(gg_store_secrets_count(s, b.key_id, &other, &err), 1);
    ck_assert_int_eq(other, 0);
    got = gg_store_secret_reveal(s, &b, "acme", "TOKEN", &len, &err);
    ck_assert_str_eq(got, v2);
    gg_store_secret_free(got, len);
    ck_assert_ptr_null(gg_store_secret_reveal(s, &a, "acme", "TOKEN", &len, &err));
    gg_error_clear(&err);
    ck_assert(gg_store_secret_delete(s, "acme", "TOKEN", &err));
    ck_assert(!gg_store_secret_delete(s, "acme", "TOKEN", &err));
    ck_assert_str_eq(err.code, "not_found");
    gg_error_clear(&err);
    gg_store_close(s);
}
END_TEST

/* Per-user grants (src/store/user_grants.c): sealed like secrets, bound to tenant, server
 * and principal, counted per server without reading a value, deleted, rekeyed. */
START_TEST(user_grants_put_get_summary_delete_rekey) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    gg_store_vault a = vault(KEY_A), b = vault(KEY_B_B64);
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    ck_assert(gg_store_tenant_create(s, "beta", &err));
    const char *g1 = "{\"access_token\":\"at-alice-0123456789abcdef\"}", *g2 = "{\"access_token\":\"at-bob-fedcba9876543210\"}";
    ck_assert_int_eq(gg_store_user_grant_put(s, &a, "acme", "docs", "p-alice", g1, strlen(g1), 1700000000000LL, &err), 1);
    ck_assert_int_eq(gg_store_user_grant_put(s, &a, "acme", "docs", "p-alice", g1, strlen(g1), 0, &err), 0);
    ck_assert_int_eq(gg_store_user_grant_put(s, &a, "acme", "docs", "p-bob", g2, strlen(g2), 0, &err), 1);
    ck_assert_int_eq(gg_store_user_grant_put(s, &a, "acme", "do\ncs", "p-bob", g2, strlen(g2), 0, &err), -1);
    ck_assert_str_eq(err.code, "invalid_argument");
    gg_error_clear(&err);
    ck_assert_int_eq(gg_store_user_grant_put(s, &a, "nobody", "docs", "p-bob", g2, strlen(g2), 0, &err), -1);
    ck_assert_str_eq(err.code, "not_found");
    gg_error_clear(&err);
    size_t len = 0;
    char *got = gg_store_user_grant_get(s, &a, "acme", "docs", "p-alice", &len, &err);
    ck_assert_str_eq(got, g1);
    gg_store_secret_free(got, len);
    /* another principal, server or tenant has none */
    const char *miss[][3] = {{"acme", "docs", "p-carol"}, {"acme", "mail", "p-alice"}, {"beta", "docs", "p-alice"}};
    for (size_t i = 0; i < 3; i++) {
        ck_assert_ptr_null(gg_store_user_grant_get(s, &a, miss[i][0], miss[i][1], miss[i][2], &len, &err));
        ck_assert_str_eq(err.code, "not_found");
        gg_error_clear(&err);
    }
    json_t *sum = gg_store_user_grants_summary(s, "acme", &err);
    char *dump = json_dumps(sum, JSON_COMPACT);
    ck_assert_str_eq(dump, "[{\"server\":\"docs\",\"users\":2}]");
    free(dump);
    json_decref(sum);
    if (!pg_mode()) {
        ck_assert(!file_has(dbpath, "at-alice-0123456789abcdef") && !file_has(dbpath, "at-bob-fedcba9876543210"));
        /* a row copied to another tenant, principal or server does not open there */
        sqlite3 *db;
        ck_assert_int_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
        ck_assert_int_eq(sqlite3_exec(db,
                                      "INSERT INTO downstream_user_grants SELECT 'beta', server, principal, nonce, value, "
                                      "key_id, expires_at, created_at, updated_at FROM downstream_user_grants WHERE "
                                      "principal='p-alice';"
                                      "INSERT INTO downstream_user_grants SELECT tenant, server, 'p-mallory', nonce, value, "
                                      "key_id, expires_at, created_at, updated_at FROM downstream_user_grants WHERE "
                                      "tenant='acme' AND principal='p-alice';"
                                      "INSERT INTO downstream_user_grants SELECT tenant, 'mail', principal, nonce, value, "
                                      "key_id, expires_at, created_at, updated_at FROM downstream_user_grants WHERE "
                                      "tenant='acme' AND principal='p-alice'",
                                      NULL, NULL, NULL),
                         SQLITE_OK);
        sqlite3_close(db);
        const char *copied[][3] = {{"beta", "docs", "p-alice"}, {"acme", "docs", "p-mallory"}, {"acme", "mail", "p-alice"}};
        for (size_t i = 0; i < 3; i++) {
            ck_assert_ptr_null(gg_store_user_grant_get(s, &a, copied[i][0], copied[i][1], copied[i][2], &len, &err));
            ck_assert_str_eq(err.code, "secret_unreadable");
            ck_assert(strchr(err.message, '\n') == NULL && strstr(err.message, "cannot be decrypted"));
            gg_error_clear(&err);
        }
        ck_assert_int_eq(gg_store_user_grant_delete(s, "beta", "docs", NULL, &err), 1);
        ck_assert_int_eq(gg_store_user_grant_delete(s, "acme", "mail", NULL, &err), 1);
        ck_assert_int_eq(gg_store_user_grant_delete(s, "acme", "docs", "p-mallory", &err), 1);
    }
    /* counts by key, rekey, counts again; a secret's rows are not the grants' */
    long long other = -1;
    ck_assert_int_eq(gg_store_user_grants_count(s, a.key_id, &other, &err), 2);
    ck_assert_int_eq(other, 0);
    ck_assert_int_eq(gg_store_user_grants_rekey(s, &b, &a, &err), -1);
    ck_assert(strchr(err.message, '\n') == NULL && strstr(err.message, "does not open with the old key"));
    gg_error_clear(&err);
    ck_assert_int_eq(gg_store_user_grants_rekey(s, &a, &b, &err), 2);
    ck_assert_int_eq(gg_store_user_grants_count(s, b.key_id, &other, &err), 2);
    ck_assert_int_eq(other, 0);
    got = gg_store_user_grant_get(s, &b, "acme", "docs", "p-bob", &len, &err);
    ck_assert_str_eq(got, g2);
    gg_store_secret_free(got, len);
    ck_assert_ptr_null(gg_store_user_grant_get(s, &a, "acme", "docs", "p-bob", &len, &err));
    gg_error_clear(&err);
    ck_assert_int_eq(gg_store_user_grant_delete(s, "acme", "docs", "p-bob", &err), 1);
    ck_assert_int_eq(gg_store_user_grant_delete(s, "acme", "docs", "p-bob", &err), 0);
    ck_assert_int_eq(gg_store_user_grant_delete(s, "acme", "docs", NULL, &err), 1);
    sum = gg_store_user_grants_summary(s, "acme", &err);
    ck_assert_int_eq(json_array_size(sum), 0);
    json_decref(sum);
    gg_store_close(s);
}
END_TEST

int main(void) {
    Suite *s = suite_create("vault");
    TCase *tc = tcase_create("vault");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, keys_parse_and_have_ids);
    tcase_add_test(tc, seal_open_round_trip_and_refusals);
    tcase_add_test(tc, rows_put_list_reveal_delete_rekey);
    tcase_add_test(tc, user_grants_put_get_summary_delete_rekey);
    suite_add_tcase(s, tc);
    return gg_check_run(s);
}
