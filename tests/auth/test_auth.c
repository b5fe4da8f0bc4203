/* Unit tests for auth: names, scopes, key parsing and headers, key creation and
 * verification (good, bad, revoked — also revoked by another process), the rate limiter
 * and tenant execution slots. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth/auth.h"
#include "store/store.h"

#include "db_fixture.h"
#include "../check_main.h"

START_TEST(names) {
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_auth_valid_name("acme", "tenant", &err));
    ck_assert(gg_auth_valid_name("a-1", "graph", &err));
    ck_assert(gg_auth_valid_name("0", "graph", &err));
    char longest[64];
    memset(longest, 'a', 63);
    longest[63] = '\0';
    ck_assert(gg_auth_valid_name(longest, "tenant", &err));
    const char *bad[] = {"", "Acme", "a_b", "a.b", "a b", "tools", "nodes", "invoke", "health", "internal", "admin", "ä"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(!gg_auth_valid_name(bad[i], "tenant", &err), "accepted '%s'", bad[i]);
        ck_assert_str_eq(err.code, "invalid_name");
        gg_error_clear(&err);
    }
    char too_long[65];
    memset(too_long, 'a', 64);
    too_long[64] = '\0';
    ck_assert(!gg_auth_valid_name(too_long, "tenant", &err));
    gg_error_clear(&err);
}
END_TEST

START_TEST(scopes) {
    gg_error err = GG_ERROR_INIT;
    unsigned m = gg_scopes_parse("tools:read, tools:execute,tools:read", &err);
    ck_assert_uint_eq(m, GG_SCOPE_TOOLS_READ | GG_SCOPE_TOOLS_EXECUTE);
    char buf[160];
    gg_scopes_format(GG_SCOPE_ALL, buf, sizeof buf);
    ck_assert_str_eq(buf, "tools:read,tools:execute,health:check,graphs:write,admin");
    /* truncated as snprintf truncates: the prefix that fits, the length size - 1 */
    char small[16];
    ck_assert_uint_eq(gg_scopes_format(GG_SCOPE_ALL, small, sizeof small), 15);
    ck_assert_str_eq(small, "tools:read,tool");
    ck_assert_uint_eq(gg_scopes_format(GG_SCOPE_TOOLS_READ | GG_SCOPE_TOOLS_EXECUTE, small, 12), 11);
    ck_assert_str_eq(small, "tools:read,");
    ck_assert_uint_eq(gg_scopes_format(GG_SCOPE_TOOLS_READ | GG_SCOPE_TOOLS_EXECUTE, small, 11), 10);
    ck_assert_str_eq(small, "tools:read");
    ck_assert_uint_eq(gg_scopes_format(GG_SCOPE_TOOLS_READ, small, 1), 0);
    ck_assert_str_eq(small, "");
    ck_assert_uint_eq(gg_scopes_format(0, small, sizeof small), 0);
    ck_assert_str_eq(small, "");
    ck_assert_uint_eq(gg_scopes_parse(buf, &err), GG_SCOPE_ALL);
    ck_assert_uint_eq(gg_scopes_parse("tools:write", &err), 0);
    ck_assert_str_eq(err.code, "invalid_scope");
    ck_assert(strstr(err.message, "tools:write"));
    gg_error_clear(&err);
    ck_assert_uint_eq(gg_scopes_parse("", &err), 0);
    gg_error_clear(&err);
    ck_assert(gg_scope_allows(GG_SCOPE_ADMIN, GG_SCOPE_GRAPHS_WRITE));
    ck_assert(!gg_scope_allows(GG_SCOPE_TOOLS_READ, GG_SCOPE_TOOLS_EXECUTE));
    ck_assert_str_eq(gg_scope_name(GG_SCOPE_HEALTH_CHECK), "health:check");
    gg_principal p = {.tenant = "acme", .scopes = GG_SCOPE_TOOLS_READ};
    unsigned missing = 99;
    ck_assert(gg_auth_allows(&p, "acme", GG_SCOPE_TOOLS_READ, &missing));
    ck_assert(!gg_auth_allows(&p, "acme", GG_SCOPE_TOOLS_EXECUTE, &missing));
    ck_assert_uint_eq(missing, GG_SCOPE_TOOLS_EXECUTE);
    ck_assert(!gg_auth_allows(&p, "globex", GG_SCOPE_TOOLS_READ, &missing));
    ck_assert_uint_eq(missing, 0);
    p.scopes = GG_SCOPE_ADMIN;
    ck_assert(gg_auth_allows(&p, "globex", GG_SCOPE_GRAPHS_WRITE, &missing));
}
END_TEST

START_TEST(headers_and_key_text) {
    size_t n;
    const char *k = gg_auth_key_from_headers("Bearer  gg_abc ", NULL, &n);
    ck_assert_int_eq(n, 6);
    ck_assert(strncmp(k, "gg_abc", n) == 0);
    k = gg_auth_key_from_headers("bearer x", "y", &n);
    ck_assert(strncmp(k, "x", n) == 0 && n == 1);
    k = gg_auth_key_from_headers("Basic Zm9v", " gg_key ", &n);
    ck_assert(strncmp(k, "gg_key", n) == 0 && n == 6);
    ck_assert_ptr_null(gg_auth_key_from_headers(NULL, NULL, &n));
    ck_assert_ptr_null(gg_auth_key_from_headers("Basic Zm9v", NULL, &n));
    const char *good = "gg_0123456789abcdef_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn-_0";
    char id[GG_KEY_ID_LEN + 1];
    const char *sec;
    size_t slen;
    ck_assert(gg_auth_parse_key(good, strlen(good), id, &sec, &slen));
    ck_assert_str_eq(id, "0123456789abcdef");
    ck_assert_int_eq(slen, GG_KEY_SECRET_LEN);
    const char *bad[] = {"gg_0123456789abcdeF_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn-_0",
                         "xx_0123456789abcdef_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn-_0",
                         "gg_0123456789abcdef_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn-_",
                         "gg_0123456789abcdef_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn-+0", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(!gg_auth_parse_key(bad[i], strlen(bad[i]), id, &sec, &slen), "accepted %s", bad[i]);
}
END_TEST

START_TEST(keys_verify_good_bad_revoked) {
    gg_store *s = open_db();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    ck_assert(gg_store_tenant_create(s, "globex", &err));
    gg_auth *a = gg_auth_new(s, NULL, &err);
    ck_assert_msg(a != NULL, "%s", err.message);
    char *key = NULL, id[GG_KEY_ID_LEN + 1];
    ck_assert(gg_auth_create_key(a, "acme", GG_SCOPE_TOOLS_READ | GG_SCOPE_TOOLS_EXECUTE, "ci", &key, id, &err));
    ck_assert_int_eq(strlen(key), GG_KEY_TEXT_LEN);
    ck_assert(strncmp(key, "gg_", 3) == 0);
    /* Only a hash is stored. */
    gg_key_row row;
    ck_assert(gg_store_key_get(s, id, &row, &err));
    ck_assert(memmem(row.hash, sizeof row.hash, key + 20, 8) == NULL);
    ck_assert_str_eq(row.scopes, "tools:read,tools:execute");
    gg_principal p;
    ck_assert_int_eq(gg_auth_verify(a, key, strlen(key), &p), GG_AUTH_OK);
    ck_assert_str_eq(p.tenant, "acme");
    ck_assert_str_eq(p.key_id, id);
    ck_assert_uint_eq(p.scopes, GG_SCOPE_TOOLS_READ | GG_SCOPE_TOOLS_EXECUTE);
    ck_assert_int_eq(gg_auth_verify(a, key, strlen(key), &p), GG_AUTH_OK); /* cached */
    /* Wrong secret with a real id, unknown id, malformed, missing. */
    char wrong[GG_KEY_TEXT_LEN + 1];
    memcpy(wrong, key, sizeof wrong);
    wrong[GG_KEY_TEXT_LEN - 1] = wrong[GG_KEY_TEXT_LEN - 1] == 'A' ? 'B' : 'A';
    ck_assert_int_eq(gg_auth_verify(a, wrong, strlen(wrong), &p), GG_AUTH_INVALID);
    memcpy(wrong, key, sizeof wrong);
    wrong[5] = wrong[5] == 'a' ? 'b' : 'a';
    ck_assert_int_eq(gg_auth_verify(a, wrong, strlen(wrong), &p), GG_AUTH_INVALID);
    ck_assert_int_eq(gg_auth_verify(a, "gg_nope", 7, &p), GG_AUTH_INVALID);
    ck_assert_int_eq(gg_auth_verify(a, NULL, 0, &p), GG_AUTH_MISSING);
    /* A key of an unknown tenant cannot be created. */
    char *k2 = NULL, id2[GG_KEY_ID_LEN + 1];
    ck_assert(!gg_auth_create_key(a, "nope", GG_SCOPE_ADMIN, NULL, &k2, id2, &err));
    ck_assert_str_eq(err.code, "not_found");
    gg_error_clear(&err);
    ck_assert(!gg_auth_create_key(a, "acme", 0, NULL, &k2, id2, &err));
    gg_error_clear(&err);
    /* Another tenant cannot revoke it; its own tenant can, effective at once. */
    ck_assert(!gg_auth_revoke_key(a, id, "globex", &err));
    gg_error_clear(&err);
    ck_assert_int_eq(gg_auth_verify(a, key, strlen(key), &p), GG_AUTH_OK);
    ck_assert(gg_auth_revoke_key(a, id, "acme", &err));
    ck_assert_int_eq(gg_auth_verify(a, key, strlen(key), &p), GG_AUTH_REVOKED);
    ck_assert_int_eq(gg_auth_verify(a, wrong, strlen(wrong), &p), GG_AUTH_INVALID);
    gg_auth_free_secret(key);
    gg_auth_free(a);
    gg_store_close(s);
}
END_TEST

START_TEST(revocation_by_another_process) {
    gg_store *serve_db = open_db();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(serve_db, "acme", &err));
    gg_auth_options o = {.cache_ttl_ms = 600000};
    gg_auth *serve = gg_auth_new(serve_db, &o, &err);
    gg_store *cli_db = open_db();
    gg_auth *cli = gg_auth_new(cli_db, NULL, &err); /* same pepper: it lives in the database */
    char *key = NULL, id[GG_KEY_ID_LEN + 1];
    ck_assert(gg_auth_create_key(cli, "acme", GG_SCOPE_ADMIN, NULL, &key, id, &err));
    gg_principal p;
    ck_assert_int_eq(gg_auth_verify(serve, key, strlen(key), &p), GG_AUTH_OK);
    ck_assert(gg_store_key_revoke(cli_db, id, NULL, &err));
    /* The long cache TTL does not matter: the key generation changed. */
    gg_auth_status st = GG_AUTH_OK;
    for (int i = 0; i < 30 && st == GG_AUTH_OK; i++) {
        usleep(100000);
        st = gg_auth_verify(serve, key, strlen(key), &p);
    }
    ck_assert_int_eq(st, GG_AUTH_REVOKED);
    /* A configured pepper gives different hashes: the key no longer verifies. */
    gg_auth_options peppered = {.pepper = "a-configured-pepper-value"};
    gg_auth *other = gg_auth_new(serve_db, &peppered, &err);
    char *k2 = NULL, id2[GG_KEY_ID_LEN + 1];
    ck_assert(gg_auth_create_key(cli, "acme", GG_SCOPE_TOOLS_READ, NULL, &k2, id2, &err));
    ck_assert_int_eq(gg_auth_verify(other, k2, strlen(k2), &p), GG_AUTH_INVALID);
    ck_assert_int_eq(gg_auth_verify(serve, k2, strlen(k2), &p), GG_AUTH_OK);
    gg_auth_free_secret(k2);
    gg_auth_free(other);
    gg_auth_free_secret(key);
    gg_auth_free(cli);
    gg_auth_free(serve);
    gg_store_close(cli_db);
    gg_store_close(serve_db);
}
END_TEST

START_TEST(last_used_through_history) {
    gg_store *s = open_db();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    gg_history *h = gg_history_start(s, NULL, &err);
    gg_auth_options o = {.history = h};
    gg_auth *a = gg_auth_new(s, &o, &err);
    char *key = NULL, id[GG_KEY_ID_LEN + 1];
    ck_assert(gg_auth_create_key(a, "acme", GG_SCOPE_TOOLS_READ, NULL, &key, id, &err));
    gg_principal p;
    ck_assert_int_eq(gg_auth_verify(a, key, strlen(key), &p), GG_AUTH_OK);
    gg_history_flush(h);
    gg_key_row row;
    ck_assert(gg_store_key_get(s, id, &row, &err));
    ck_assert_int_gt(row.last_used_ms, 0);
    gg_auth_free_secret(key);
    gg_auth_free(a);
    gg_history_stop(h);
    gg_store_close(s);
}
END_TEST

START_TEST(rate_limiter) {
    gg_ratelimit *rl = gg_ratelimit_new(2.0, 3); /* 2/s, bursts of 3 */
    double t = 1000.0;
    ck_assert_int_eq(gg_ratelimit_take(rl, "k", t), 0);
    ck_assert_int_eq(gg_ratelimit_take(rl, "k", t), 0);
    ck_assert_int_eq(gg_ratelimit_take(rl, "k", t), 0);
    ck_assert_int_eq(gg_ratelimit_take(rl, "k", t), 1); /* empty: next token in 0.5s → 1 */
    ck_assert_int_eq(gg_ratelimit_take(rl, "other", t), 0); /* per key */
    ck_assert_int_eq(gg_ratelimit_take(rl, "k", t + 499), 1);
    ck_assert_int_eq(gg_ratelimit_take(rl, "k", t + 501), 0);
    ck_assert_int_eq(gg_ratelimit_take(rl, "k", t + 10000), 0); /* refilled, capped at burst */
    ck_assert_int_eq(gg_ratelimit_take(rl, "k", t + 10000), 0);
    ck_assert_int_eq(gg_ratelimit_take(rl, "k", t + 10000), 0);
    ck_assert_int_eq(gg_ratelimit_take(rl, "k", t + 10000), 1);
    gg_ratelimit_free(rl);
    rl = gg_ratelimit_new(0.1, 1); /* slow: retry-after rounds up to whole seconds */
    ck_assert_int_eq(gg_ratelimit_take(rl, "k", 0), 0);
    ck_assert_int_eq(gg_ratelimit_take(rl, "k", 0), 10);
    gg_ratelimit_free(rl);
    rl = gg_ratelimit_new(0, 0); /* unlimited */
    for (int i = 0; i < 1000; i++) ck_assert_int_eq(gg_ratelimit_take(rl, "k", 0), 0);
    gg_ratelimit_free(rl);
}
END_TEST

typedef struct { gg_ratelimit *rl; int allowed; } rl_thread;

static void *hammer(void *arg) {
    rl_thread *t = arg;
    for (int i = 0; i < 10000; i++)
        if (gg_ratelimit_take(t->rl, "shared", 5000.0) == 0) t->allowed++;
    return NULL;
}

START_TEST(rate_limiter_threads) {
    gg_ratelimit *rl = gg_ratelimit_new(1.0, 500);
    pthread_t th[4];
    rl_thread ts[4] = {{rl, 0}, {rl, 0}, {rl, 0}, {rl, 0}};
    for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, hammer, &ts[i]);
    int total = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        total += ts[i].allowed;
    }
    ck_assert_int_eq(total, 500); /* exactly the burst, no lost updates */
    gg_ratelimit_free(rl);
}
END_TEST

START_TEST(tenant_slots) {
    gg_tenant_slots *t = gg_tenant_slots_new(2);
    ck_assert(gg_tenant_slots_acquire(t, "acme"));
    ck_assert(gg_tenant_slots_acquire(t, "acme"));
    ck_assert(!gg_tenant_slots_acquire(t, "acme"));
    ck_assert(gg_tenant_slots_acquire(t, "globex"));
    ck_assert_int_eq(gg_tenant_slots_in_use(t, "acme"), 2);
    gg_tenant_slots_release(t, "acme");
    ck_assert(gg_tenant_slots_acquire(t, "acme"));
    gg_tenant_slots_release(t, "nobody"); /* harmless */
    gg_tenant_slots_free(t);
    t = gg_tenant_slots_new(0);
    for (int i = 0; i < 100; i++) ck_assert(gg_tenant_slots_acquire(t, "acme"));
    gg_tenant_slots_set(t, 100); /* a reload's lower cap: the running calls finish, no new one */
    ck_assert(!gg_tenant_slots_acquire(t, "acme"));
    gg_tenant_slots_release(t, "acme");
    ck_assert(gg_tenant_slots_acquire(t, "acme"));
    char long_name[GG_TENANT_MAX + 1];
    memset(long_name, 'x', GG_TENANT_MAX);
    long_name[GG_TENANT_MAX] = 0;
    ck_assert(!gg_tenant_slots_acquire(t, long_name)); /* not a tenant name: no slot */
    ck_assert_int_eq(gg_tenant_slots_in_use(t, long_name), 0);
    gg_tenant_slots_free(t);
}
END_TEST

int main(void) {
    Suite *s = suite_create("auth");
    TCase *pure = tcase_create("pure");
    tcase_add_test(pure, names);
    tcase_add_test(pure, scopes);
    tcase_add_test(pure, headers_and_key_text);
    tcase_add_test(pure, rate_limiter);
    tcase_add_test(pure, rate_limiter_threads);
    tcase_add_test(pure, tenant_slots);
    suite_add_tcase(s, pure);
    TCase *db = tcase_create("keys");
    tcase_add_checked_fixture(db, setup, teardown);
    tcase_set_timeout(db, 30);
    tcase_add_test(db, keys_verify_good_bad_revoked);
    tcase_add_test(db, revocation_by_another_process);
    tcase_add_test(db, last_used_through_history);
    suite_add_tcase(s, db);
    return gg_check_run(s);
}
