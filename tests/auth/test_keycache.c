/* White-box tests of the API-key fast path (auth.c is compiled into this program so the
 * cache entries can be inspected): a key that verified once is accepted from its SipHash
 * tag, but any text differing in one byte never is, and revocation (in process, by another
 * process, by invalidation) and entry expiry take effect despite the tag. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../src/auth/auth.c"

#include "db_fixture.h"
#include "../check_main.h"

/* Is id's cache entry present and tagged? */
static bool tagged(gg_auth *a, const char *id) {
    bool t = false;
    pthread_rwlock_rdlock(&a->lock);
    for (cache_entry *e = a->buckets[bucket_of(id)]; e; e = e->next)
        if (strcmp(e->id, id) == 0) t = e->tagged;
    pthread_rwlock_unlock(&a->lock);
    return t;
}

static gg_auth *new_auth(gg_store *s, const char *tenant, char **key, char id[GG_KEY_ID_LEN + 1]) {
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, tenant, &err));
    gg_auth_options o = {.cache_ttl_ms = 600000};
    gg_auth *a = gg_auth_new(s, &o, &err);
    ck_assert_msg(a != NULL, "%s", err.message);
    ck_assert(gg_auth_create_key(a, tenant, GG_SCOPE_TOOLS_READ, NULL, key, id, &err));
    return a;
}

START_TEST(one_byte_off_never_hits) {
    gg_store *s = open_db();
    char *key, id[GG_KEY_ID_LEN + 1];
    gg_auth *a = new_auth(s, "acme", &key, id);
    gg_principal p;
    ck_assert(!tagged(a, id));
    ck_assert_int_eq(gg_auth_verify(a, key, strlen(key), &p), GG_AUTH_OK);
    ck_assert(tagged(a, id));
    ck_assert_int_eq(gg_auth_verify(a, key, strlen(key), &p), GG_AUTH_OK); /* from the tag */
    ck_assert_str_eq(p.tenant, "acme");
    ck_assert_str_eq(p.key_id, id);
    ck_assert_uint_eq(p.scopes, GG_SCOPE_TOOLS_READ);
    /* Every single-byte change of the secret part (same id, so the same tagged entry is
     * consulted) is refused; changes of the id part are other (unknown) keys. */
    char v[GG_KEY_TEXT_LEN + 1];
    static const char alt[] = "AZaz09-_!=+/ .\x7f\xff"; /* in and out of both alphabets */
    int refused = 0;
    for (size_t i = 0; i < GG_KEY_TEXT_LEN; i++) {
        for (const char *c = alt; *c; c++) {
            memcpy(v, key, sizeof v);
            if (v[i] == *c) continue;
            v[i] = *c;
            ck_assert_msg(gg_auth_verify(a, v, strlen(v), &p) != GG_AUTH_OK, "accepted %s", v);
            refused++;
        }
    }
    ck_assert_int_gt(refused, 400);
    /* A prefix or an extension of the real text is refused too. */
    ck_assert_int_eq(gg_auth_verify(a, key, strlen(key) - 1, &p), GG_AUTH_INVALID);
    char longer[GG_KEY_TEXT_LEN + 2];
    snprintf(longer, sizeof longer, "%sA", key);
    ck_assert_int_eq(gg_auth_verify(a, longer, strlen(longer), &p), GG_AUTH_INVALID);
    /* The real key still passes (the wrong ones did not disturb its entry). */
    ck_assert_int_eq(gg_auth_verify(a, key, strlen(key), &p), GG_AUTH_OK);
    ck_assert(tagged(a, id));
    gg_auth_free_secret(key);
    gg_auth_free(a);
    gg_store_close(s);
}
END_TEST

START_TEST(revoked_in_process_refused_at_once) {
    gg_store *s = open_db();
    char *key, id[GG_KEY_ID_LEN + 1];
    gg_auth *a = new_auth(s, "acme", &key, id);
    gg_principal p;
    gg_error err = GG_ERROR_INIT;
    ck_assert_int_eq(gg_auth_verify(a, key, strlen(key), &p), GG_AUTH_OK);
    ck_assert_int_eq(gg_auth_verify(a, key, strlen(key), &p), GG_AUTH_OK);
    ck_assert(tagged(a, id));
    ck_assert(gg_auth_revoke_key(a, id, "acme", &err));
    ck_assert_int_eq(gg_auth_verify(a, key, strlen(key), &p), GG_AUTH_REVOKED);
    ck_assert_int_eq(gg_auth_verify(a, key, strlen(key), &p), GG_AUTH_REVOKED);
    ck_assert(!tagged(a, id));
    gg_auth_free_secret(key);
    gg_auth_free(a);
    gg_store_close(s);
}
END_TEST

START_TEST(invalidate_all_drops_tags) {
    gg_store *s = open_db();
    char *key, id[GG_KEY_ID_LEN + 1];
    gg_auth *a = new_auth(s, "acme", &key, id);
    gg_principal p;
    gg_error err = GG_ERROR_INIT;
    ck_assert_int_eq(gg_auth_verify(a, key, strlen(key), &p), GG_AUTH_OK);
    ck_assert(tagged(a, id));
    /* tenant deletion: the store refuses the key and the admin route invalidates the cache */
    ck_assert(gg_store_tenant_delete(s, "acme", &err));
    gg_auth_invalidate_all(a);
    ck_assert(!tagged(a, id));
    ck_assert_int_ne(gg_auth_verify(a, key, strlen(key), &p), GG_AUTH_OK);
    gg_auth_free_secret(key);
    gg_auth_free(a);
    gg_store_close(s);
}
END_TEST

START_TEST(revoked_by_another_process_despite_tag) {
    gg_store *s = open_db();
    char *key, id[GG_KEY_ID_LEN + 1];
    gg_auth *a = new_auth(s, "acme", &key, id);
    gg_principal p;
    gg_error err = GG_ERROR_INIT;
    ck_assert_int_eq(gg_auth_verify(a, key, strlen(key), &p), GG_AUTH_OK);
    ck_assert(tagged(a, id));
    gg_store *cli = open_db(); /* the CLI: its own connection, no access to a's cache */
    ck_assert(gg_store_key_revoke(cli, id, NULL, &err));
    gg_auth_status st = GG_AUTH_OK;
    int polls = 0;
    for (; polls < 30 && st == GG_AUTH_OK; polls++) {
        usleep(100000);
        st = gg_auth_verify(a, key, strlen(key), &p);
    }
    ck_assert_int_eq(st, GG_AUTH_REVOKED);
    ck_assert_int_le(polls, 12); /* the generation is read at least once a second */
    gg_store_close(cli);
    gg_auth_free_secret(key);
    gg_auth_free(a);
    gg_store_close(s);
}
END_TEST

START_TEST(stale_entry_reloads) {
    gg_store *s = open_db();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    gg_auth_options o = {.cache_ttl_ms = 200};
    gg_auth *a = gg_auth_new(s, &o, &err);
    char *key, id[GG_KEY_ID_LEN + 1];
    ck_assert(gg_auth_create_key(a, "acme", GG_SCOPE_TOOLS_READ, NULL, &key, id, &err));
    gg_principal p;
    ck_assert_int_eq(gg_auth_verify(a, key, strlen(key), &p), GG_AUTH_OK);
    ck_assert(tagged(a, id));
    /* A change the generation counter does not announce (written behind the store's back)
     * is still seen once the entry is older than the TTL, tag or not. */
    ck_assert(gg_store_key_revoke(s, id, NULL, &err));
    a->generation = gg_store_generation_get(s, GG_GEN_KEYS, NULL); /* hide the bump */
    usleep(300000);
    ck_assert_int_eq(gg_auth_verify(a, key, strlen(key), &p), GG_AUTH_REVOKED);
    gg_auth_free_secret(key);
    gg_auth_free(a);
    gg_store_close(s);
}
END_TEST

int main(void) {
    Suite *s = suite_create("keycache");
    TCase *tc = tcase_create("keycache");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, one_byte_off_never_hits);
    tcase_add_test(tc, revoked_in_process_refused_at_once);
    tcase_add_test(tc, invalidate_all_drops_tags);
    tcase_add_test(tc, revoked_by_another_process_despite_tag);
    tcase_add_test(tc, stale_entry_reloads);
    suite_add_tcase(s, tc);
    return gg_check_run(s);
}
