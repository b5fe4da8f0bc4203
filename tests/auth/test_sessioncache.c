/* White-box tests of the verified-token cache of MCP sessions (session.c is compiled into
 * this program so its hit counters and entries can be inspected; it lives beside the key
 * cache test because both are credential caches on the request path): a cached token is
 * accepted only as the exact same text for the same tenant, graph and key; a token
 * differing in one byte never hits; expiry and revocation win over the cache. */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../src/mcp/session.c"
#include "../check_main.h"

/* Hits over all CPU shards. main() pins the process to one CPU so a check and the next
 * one use the same shard and the counts below are exact. */
static unsigned long hits(mcp_sessions *ss) {
    unsigned long n = 0;
    for (int i = 0; i < VC_SHARDS; i++) {
        pthread_mutex_lock(&ss->vc[i].mu);
        n += ss->vc[i].hits;
        pthread_mutex_unlock(&ss->vc[i].mu);
    }
    return n;
}

static void pin_to_one_cpu(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    int cpu = sched_getcpu();
    CPU_SET(cpu > 0 ? cpu : 0, &set);
    sched_setaffinity(0, sizeof set, &set);
}

START_TEST(hit_after_issue_and_exact_text_only) {
    uint8_t secret[32] = {7};
    mcp_sessions *ss = mcp_sessions_new(secret, 3600, 100);
    char id[MCP_SESSION_ID_MAX];
    mcp_session s, t;
    gg_error err = GG_ERROR_INIT;
    ck_assert(mcp_session_issue(ss, "acme", "orders", "k1", "2025-11-25", id, &s));
    ck_assert_uint_eq(strlen(id), TOKEN_TEXT_LEN);
    unsigned long h0 = hits(ss);
    ck_assert(mcp_session_check(ss, id, "acme", "orders", "k1", &t, &err));
    ck_assert_uint_eq(hits(ss), h0 + 1); /* issued tokens are cached at once */
    ck_assert_str_eq(t.version, "2025-11-25");
    ck_assert_str_eq(t.tenant, "acme");
    ck_assert_str_eq(t.graph, "orders");
    ck_assert_str_eq(t.key_id, "k1");
    ck_assert_int_eq(t.expires, s.expires);
    ck_assert(memcmp(t.nonce, s.nonce, 16) == 0);
    /* Every one-byte variant: never a hit, always refused. */
    static const char alt[] = "AZaz09-_";
    char v[MCP_SESSION_ID_MAX];
    unsigned long h1 = hits(ss);
    int tried = 0;
    for (size_t i = 0; i < TOKEN_TEXT_LEN; i++)
        for (const char *c = alt; *c; c++) {
            strcpy(v, id);
            if (v[i] == *c) continue;
            v[i] = *c;
            ck_assert_msg(!mcp_session_check(ss, v, "acme", "orders", "k1", NULL, &err), "accepted %s", v);
            gg_error_clear(&err);
            tried++;
        }
    ck_assert_int_gt(tried, 600);
    ck_assert_uint_eq(hits(ss), h1);
    /* Prefixes and extensions: refused. */
    strcpy(v, id);
    v[TOKEN_TEXT_LEN - 1] = '\0';
    ck_assert(!mcp_session_check(ss, v, "acme", "orders", "k1", NULL, &err));
    gg_error_clear(&err);
    snprintf(v, sizeof v, "%sA", id);
    ck_assert(!mcp_session_check(ss, v, "acme", "orders", "k1", NULL, &err));
    gg_error_clear(&err);
    /* Same text, another binding: refused, and that is not a hit either. */
    ck_assert(!mcp_session_check(ss, id, "acme", "billing", "k1", NULL, &err));
    gg_error_clear(&err);
    ck_assert(!mcp_session_check(ss, id, "evil", "orders", "k1", NULL, &err));
    gg_error_clear(&err);
    ck_assert(!mcp_session_check(ss, id, "acme", "orders", "k2", NULL, &err));
    gg_error_clear(&err);
    ck_assert(!mcp_session_check(ss, id, "acme", "orders", NULL, NULL, &err));
    gg_error_clear(&err);
    ck_assert_uint_eq(hits(ss), h1);
    /* The real one still hits. */
    ck_assert(mcp_session_check(ss, id, "acme", "orders", "k1", NULL, &err));
    ck_assert_uint_eq(hits(ss), h1 + 1);
    mcp_sessions_free(ss);
}
END_TEST

START_TEST(verified_tokens_are_cached) {
    /* A token issued by another replica (same secret) is cached after its first check. */
    uint8_t secret[32] = {9};
    mcp_sessions *a = mcp_sessions_new(secret, 3600, 100), *b = mcp_sessions_new(secret, 3600, 100);
    char id[MCP_SESSION_ID_MAX];
    gg_error err = GG_ERROR_INIT;
    ck_assert(mcp_session_issue(a, "t", "g", "k", "2025-06-18", id, NULL));
    ck_assert(mcp_session_check(b, id, "t", "g", "k", NULL, &err));
    ck_assert_uint_eq(hits(b), 0);
    ck_assert(mcp_session_check(b, id, "t", "g", "k", NULL, &err));
    ck_assert_uint_eq(hits(b), 1);
    /* another secret: refused, whatever a's cache holds */
    uint8_t other[32] = {1};
    mcp_sessions *c = mcp_sessions_new(other, 3600, 100);
    ck_assert(!mcp_session_check(c, id, "t", "g", "k", NULL, &err));
    gg_error_clear(&err);
    mcp_sessions_free(c);
    mcp_sessions_free(a);
    mcp_sessions_free(b);
}
END_TEST

START_TEST(revocation_beats_the_cache) {
    mcp_sessions *ss = mcp_sessions_new(NULL, 3600, 100);
    char id[MCP_SESSION_ID_MAX];
    mcp_session s;
    gg_error err = GG_ERROR_INIT;
    ck_assert(mcp_session_issue(ss, "t", "g", "k", "2025-11-25", id, NULL));
    ck_assert(mcp_session_check(ss, id, "t", "g", "k", &s, &err));
    unsigned long h = hits(ss);
    mcp_session_revoke(ss, &s);
    ck_assert(!mcp_session_check(ss, id, "t", "g", "k", NULL, &err));
    ck_assert_str_eq(err.code, "not_found");
    gg_error_clear(&err);
    ck_assert_uint_eq(hits(ss), h + 1); /* it was a cache hit, and still refused */
    mcp_sessions_free(ss);
}
END_TEST

/* The log level and revocation are cached with the table's epoch: a level change is seen
 * by the next check (and that check is still a cache hit). */
START_TEST(level_changes_seen_at_once) {
    mcp_sessions *ss = mcp_sessions_new(NULL, 3600, 100);
    char id[MCP_SESSION_ID_MAX];
    mcp_session s;
    gg_error err = GG_ERROR_INIT;
    ck_assert(mcp_session_issue(ss, "t", "g", "k", "2025-11-25", id, NULL));
    ck_assert(mcp_session_check(ss, id, "t", "g", "k", &s, &err));
    ck_assert_int_eq(s.level, MCP_LOG_OFF);
    mcp_session_set_log_level(ss, &s, MCP_LOG_DEBUG);
    unsigned long h = hits(ss);
    ck_assert(mcp_session_check(ss, id, "t", "g", "k", &s, &err));
    ck_assert_int_eq(s.level, MCP_LOG_DEBUG);
    ck_assert(mcp_session_check(ss, id, "t", "g", "k", &s, &err));
    ck_assert_int_eq(s.level, MCP_LOG_DEBUG);
    ck_assert_uint_eq(hits(ss), h + 2);
    mcp_session_set_log_level(ss, &s, MCP_LOG_ERROR);
    ck_assert(mcp_session_check(ss, id, "t", "g", "k", &s, &err));
    ck_assert_int_eq(s.level, MCP_LOG_ERROR);
    mcp_sessions_free(ss);
}
END_TEST

/* Threads check one session as fast as they can while it is revoked: no check that began
 * after mcp_session_revoke returned succeeds. */
typedef struct race {
    mcp_sessions *ss;
    const char *id;
    atomic_int revoked, stop;
    atomic_long late_ok, ok;
} race;

static void *checker(void *arg) {
    race *r = arg;
    gg_error err = GG_ERROR_INIT;
    while (!atomic_load(&r->stop)) {
        int after = atomic_load(&r->revoked);
        bool ok = mcp_session_check(r->ss, r->id, "t", "g", "k", NULL, &err);
        gg_error_clear(&err);
        if (ok) atomic_fetch_add(&r->ok, 1);
        if (ok && after) atomic_fetch_add(&r->late_ok, 1);
    }
    return NULL;
}

START_TEST(revocation_race) {
    mcp_sessions *ss = mcp_sessions_new(NULL, 3600, 100);
    char id[MCP_SESSION_ID_MAX];
    mcp_session s;
    gg_error err = GG_ERROR_INIT;
    ck_assert(mcp_session_issue(ss, "t", "g", "k", "2025-11-25", id, NULL));
    ck_assert(mcp_session_check(ss, id, "t", "g", "k", &s, &err));
    race r = {.ss = ss, .id = id};
    pthread_t th[4];
    for (int i = 0; i < 4; i++) ck_assert_int_eq(pthread_create(&th[i], NULL, checker, &r), 0);
    while (atomic_load(&r.ok) < 2000) usleep(1000);
    mcp_session_revoke(ss, &s);
    atomic_store(&r.revoked, 1);
    usleep(50000);
    atomic_store(&r.stop, 1);
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    ck_assert_int_eq(atomic_load(&r.late_ok), 0);
    mcp_sessions_free(ss);
}
END_TEST

START_TEST(expiry_beats_the_cache) {
    mcp_sessions *ss = mcp_sessions_new(NULL, 1, 10);
    char id[MCP_SESSION_ID_MAX];
    gg_error err = GG_ERROR_INIT;
    ck_assert(mcp_session_issue(ss, "t", "g", "", "2025-11-25", id, NULL));
    ck_assert(mcp_session_check(ss, id, "t", "g", NULL, NULL, &err));
    ck_assert_uint_eq(hits(ss), 1);
    sleep(2);
    ck_assert(!mcp_session_check(ss, id, "t", "g", NULL, NULL, &err));
    gg_error_clear(&err);
    ck_assert_uint_eq(hits(ss), 1);
    mcp_sessions_free(ss);
}
END_TEST

START_TEST(bounded_and_evicting) {
    /* Far more sessions than cache slots: all stay valid (misses re-verify), the table
     * does not grow, and the most recent ones hit. */
    mcp_sessions *ss = mcp_sessions_new(NULL, 3600, 100);
    enum { N = VC_SETS * VC_WAYS * 3 };
    char(*ids)[MCP_SESSION_ID_MAX] = malloc((size_t)N * MCP_SESSION_ID_MAX);
    ck_assert_ptr_nonnull(ids);
    gg_error err = GG_ERROR_INIT;
    for (int i = 0; i < N; i++) ck_assert(mcp_session_issue(ss, "t", "g", "k", "2025-11-25", ids[i], NULL));
    for (int i = 0; i < N; i++) ck_assert(mcp_session_check(ss, ids[i], "t", "g", "k", NULL, &err));
    unsigned long h = hits(ss);
    ck_assert(mcp_session_check(ss, ids[N - 1], "t", "g", "k", NULL, &err));
    ck_assert_uint_eq(hits(ss), h + 1);
    free(ids);
    mcp_sessions_free(ss);
}
END_TEST

int main(void) {
    pin_to_one_cpu();
    Suite *s = suite_create("sessioncache");
    TCase *tc = tcase_create("sessioncache");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, hit_after_issue_and_exact_text_only);
    tcase_add_test(tc, verified_tokens_are_cached);
    tcase_add_test(tc, revocation_beats_the_cache);
    tcase_add_test(tc, expiry_beats_the_cache);
    tcase_add_test(tc, level_changes_seen_at_once);
    tcase_add_test(tc, revocation_race);
    tcase_add_test(tc, bounded_and_evicting);
    suite_add_tcase(s, tc);
    return gg_check_run(s);
}
