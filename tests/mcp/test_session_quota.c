/* Unit tests for the per-owner session bound of src/mcp/session.c
 * (mcp_sessions_set_owner_max, tenants.max_sessions): live sessions capped per tenant,
 * deleted ones capped at 4x until their tokens expire, owners independent, mounts counted
 * per key, the internal listener unbounded, expired sessions free their slots; with
 * mcp_sessions_set_idle the least recently used idle session gives way at the bound and
 * idle ones expire. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp/mcp.h"
#include "../check_main.h"

#define V "2025-11-25"

/* Issue a session of tenant (graph "g") for key; true when one was issued. */
static bool issue(mcp_sessions *ss, const char *tenant, const char *key, mcp_session *out) {
    char id[MCP_SESSION_ID_MAX];
    return mcp_session_issue(ss, tenant, "g", key, V, id, out);
}

static size_t live_of(mcp_sessions *ss, const char *tenant, size_t *revoked) {
    size_t live = 0;
    mcp_sessions_owner_usage(ss, tenant, &live, revoked, NULL);
    return live;
}

START_TEST(live_sessions_capped_per_tenant) {
    mcp_sessions *ss = mcp_sessions_new(NULL, 3600, 1000);
    mcp_sessions_set_owner_max(ss, 3);
    mcp_session s[3];
    for (int i = 0; i < 3; i++) ck_assert(issue(ss, "acme", "k1", &s[i]));
    ck_assert(!issue(ss, "acme", "k2", NULL)); /* another key of the same tenant too */
    ck_assert(issue(ss, "beta", "k3", NULL));  /* another tenant is not affected */
    ck_assert_uint_eq(live_of(ss, "acme", NULL), 3);
    ck_assert_uint_eq(live_of(ss, "beta", NULL), 1);
    unsigned long long refused = 0;
    mcp_sessions_owner_usage(ss, NULL, NULL, NULL, &refused);
    ck_assert_uint_eq(refused, 1);
    /* DELETE frees a live slot; the revoked token stays refused */
    mcp_session_revoke(ss, &s[0]);
    size_t revoked = 0;
    ck_assert_uint_eq(live_of(ss, "acme", &revoked), 2);
    ck_assert_uint_eq(revoked, 1);
    ck_assert(issue(ss, "acme", "k1", NULL));
    ck_assert(!issue(ss, "acme", "k1", NULL));
    mcp_sessions_free(ss);
}
END_TEST

/* Deleting sessions as fast as they are made runs into the bound on remembered deletions
 * (4 x max), so one tenant cannot fill the table every tenant's revocations need. */
START_TEST(deleted_sessions_bounded_until_expiry) {
    mcp_sessions *ss = mcp_sessions_new(NULL, 3600, 1000);
    mcp_sessions_set_owner_max(ss, 2);
    int issued = 0;
    for (int i = 0; i < 20; i++) {
        mcp_session s;
        if (!issue(ss, "acme", "k", &s)) break;
        issued++;
        mcp_session_revoke(ss, &s);
    }
    ck_assert_int_eq(issued, 8);
    size_t revoked = 0;
    ck_assert_uint_eq(live_of(ss, "acme", &revoked), 0);
    ck_assert_uint_eq(revoked, 8);
    ck_assert(issue(ss, "beta", "k", NULL));
    mcp_sessions_free(ss);
}
END_TEST

START_TEST(expired_sessions_free_their_slots) {
    mcp_sessions *ss = mcp_sessions_new(NULL, 1, 1000);
    mcp_sessions_set_owner_max(ss, 2);
    ck_assert(issue(ss, "acme", "k", NULL));
    mcp_session s;
    ck_assert(issue(ss, "acme", "k", &s));
    mcp_session_revoke(ss, &s);
    ck_assert(issue(ss, "acme", "k", NULL));
    ck_assert(!issue(ss, "acme", "k", NULL));
    /* expiry is in whole seconds (1 s TTL, expired strictly after): wait for it, bounded */
    size_t revoked = 9;
    for (int i = 0; i < 100 && (live_of(ss, "acme", &revoked) || revoked); i++) usleep(50000);
    ck_assert_uint_eq(live_of(ss, "acme", &revoked), 0);
    ck_assert_uint_eq(revoked, 0);
    ck_assert(issue(ss, "acme", "k", NULL));
    mcp_sessions_free(ss);
}
END_TEST

START_TEST(mounts_per_key_internal_unbounded) {
    mcp_sessions *ss = mcp_sessions_new(NULL, 3600, 1000);
    mcp_sessions_set_owner_max(ss, 1);
    /* a mount (no tenant in the endpoint): bounded per key */
    ck_assert(issue(ss, "", "k1", NULL));
    ck_assert(!issue(ss, "", "k1", NULL));
    ck_assert(issue(ss, "", "k2", NULL));
    /* the internal listener of a mount (no tenant, no key): the operator's, unbounded */
    for (int i = 0; i < 5; i++) ck_assert(issue(ss, "", "", NULL));
    /* 0 lifts the bound */
    mcp_sessions_set_owner_max(ss, 0);
    ck_assert(issue(ss, "", "k1", NULL));
    mcp_sessions_free(ss);
}
END_TEST

/* Check a session of tenant "acme" (graph "g", key "k") by its token. */
static bool alive(mcp_sessions *ss, const char *id) {
    gg_error err = GG_ERROR_INIT;
    bool ok = mcp_session_check(ss, id, "acme", "g", "k", NULL, &err);
    gg_error_clear(&err);
    return ok;
}

/* At the bound, initialize forgets the least recently used session nothing holds (it then
 * answers not_found); a held one (stream, call) is never evicted; all held → refused;
 * another tenant's sessions are not touched. */
START_TEST(lru_evicted_at_bound_held_kept) {
    mcp_sessions *ss = mcp_sessions_new(NULL, 3600, 1000);
    mcp_sessions_set_owner_max(ss, 3);
    mcp_sessions_set_idle(ss, 0, true);
    char id[4][MCP_SESSION_ID_MAX], other[MCP_SESSION_ID_MAX];
    mcp_session s[4];
    ck_assert(mcp_session_issue(ss, "beta", "g", "k", V, other, NULL));
    for (int i = 0; i < 3; i++) ck_assert(mcp_session_issue(ss, "acme", "g", "k", V, id[i], &s[i]));
    mcp_session_busy(ss, s[0].nonce, +1); /* the oldest holds a stream */
    ck_assert(alive(ss, id[1]));           /* s[1] used: s[2] is the least recently used */
    ck_assert(mcp_session_issue(ss, "acme", "g", "k", V, id[3], &s[3]));
    ck_assert(!alive(ss, id[2]));
    ck_assert(alive(ss, id[0]) && alive(ss, id[1]) && alive(ss, id[3]));
    ck_assert_uint_eq(live_of(ss, "acme", NULL), 3);
    unsigned long long ev = 0;
    mcp_sessions_forgotten(ss, &ev, NULL);
    ck_assert_uint_eq(ev, 1);
    for (int i = 1; i < 4; i++) mcp_session_busy(ss, s[i].nonce, +1);
    ck_assert(!issue(ss, "acme", "k", NULL)); /* every session held: refused */
    mcp_session_busy(ss, s[1].nonce, -1);    /* let go: evictable again */
    ck_assert(issue(ss, "acme", "k", NULL));
    ck_assert(!alive(ss, id[1]));
    gg_error err = GG_ERROR_INIT;
    ck_assert(mcp_session_check(ss, other, "beta", "g", "k", NULL, &err));
    mcp_sessions_free(ss);
}
END_TEST

/* A session unused for longer than the idle time is forgotten (not_found, slot free);
 * one used meanwhile or held is not. */
START_TEST(idle_sessions_expire) {
    mcp_sessions *ss = mcp_sessions_new(NULL, 3600, 1000);
    mcp_sessions_set_owner_max(ss, 8);
    mcp_sessions_set_idle(ss, 1, false);
    char a[MCP_SESSION_ID_MAX], b[MCP_SESSION_ID_MAX], c[MCP_SESSION_ID_MAX];
    mcp_session sc;
    ck_assert(mcp_session_issue(ss, "acme", "g", "k", V, a, NULL));
    ck_assert(mcp_session_issue(ss, "acme", "g", "k", V, b, NULL));
    ck_assert(mcp_session_issue(ss, "acme", "g", "k", V, c, &sc));
    mcp_session_busy(ss, sc.nonce, +1);
    /* idle means more than 1 whole second unused: between 1 and 2 s; keep b in use */
    for (int i = 0; i < 50 && alive(ss, b) && live_of(ss, "acme", NULL) == 3; i++) usleep(100000);
    ck_assert(alive(ss, b));
    ck_assert_uint_eq(live_of(ss, "acme", NULL), 2);
    ck_assert(!alive(ss, a));
    ck_assert(alive(ss, c));
    unsigned long long idle = 0;
    mcp_sessions_forgotten(ss, NULL, &idle);
    ck_assert_uint_eq(idle, 1);
    mcp_sessions_free(ss);
}
END_TEST

int main(void) {
    Suite *s = suite_create("session_quota");
    TCase *tc = tcase_create("session_quota");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, live_sessions_capped_per_tenant);
    tcase_add_test(tc, deleted_sessions_bounded_until_expiry);
    tcase_add_test(tc, expired_sessions_free_their_slots);
    tcase_add_test(tc, mounts_per_key_internal_unbounded);
    tcase_add_test(tc, lru_evicted_at_bound_held_kept);
    tcase_add_test(tc, idle_sessions_expire);
    suite_add_tcase(s, tc);
    return gg_check_run(s);
}
