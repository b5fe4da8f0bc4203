/* Unit tests for src/mcp/reqstate.c: a requestState opens only with the key and binding it
 * was sealed with, unaltered and before its expiry; oversized tokens are refused unread. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "mcp/mcp.h"
#include "../check_main.h"

static uint8_t key[32];

static json_t *state(void) { return json_pack("{s:i,s:s,s:s}", "version", 1, "tool", "t", "node", "ask"); }

START_TEST(round_trip) {
    json_t *st = state();
    char *tok = mcp_reqstate_seal(key, "acme\ng\n3\nk1\nt", st, (int64_t)time(NULL) + 60);
    ck_assert_ptr_nonnull(tok);
    const char *why = NULL;
    json_t *back = mcp_reqstate_open(key, "acme\ng\n3\nk1\nt", tok, &why);
    ck_assert_ptr_nonnull(back);
    ck_assert(json_equal(back, st));
    json_decref(back);
    json_decref(st);
    free(tok);
}
END_TEST

START_TEST(refused) {
    json_t *st = state();
    int64_t now = (int64_t)time(NULL);
    char *tok = mcp_reqstate_seal(key, "acme\ng\n3\nk1\nt", st, now + 60);
    const char *why = NULL;
    /* another graph version, tool, key id or tenant */
    const char *foreign[] = {"acme\ng\n4\nk1\nt", "acme\ng\n3\nk1\nu", "acme\ng\n3\nk2\nt", "evil\ng\n3\nk1\nt"};
    for (size_t i = 0; i < 4; i++) ck_assert_ptr_null(mcp_reqstate_open(key, foreign[i], tok, &why));
    ck_assert(strstr(why, "integrity") != NULL);
    /* another secret */
    uint8_t other[32];
    memcpy(other, key, 32);
    other[0] ^= 1;
    ck_assert_ptr_null(mcp_reqstate_open(other, "acme\ng\n3\nk1\nt", tok, &why));
    /* one character changed anywhere */
    for (size_t i = 0, n = strlen(tok); i < n; i += 7) {
        char *bad = strdup(tok);
        bad[i] = bad[i] == 'A' ? 'B' : 'A';
        ck_assert_ptr_null(mcp_reqstate_open(key, "acme\ng\n3\nk1\nt", bad, &why));
        free(bad);
    }
    free(tok);
    /* expired */
    tok = mcp_reqstate_seal(key, "b", st, now - 1);
    ck_assert_ptr_null(mcp_reqstate_open(key, "b", tok, &why));
    ck_assert(strstr(why, "expired") != NULL);
    free(tok);
    /* not base64, too short, too large */
    ck_assert_ptr_null(mcp_reqstate_open(key, "b", "!!!", &why));
    ck_assert_ptr_null(mcp_reqstate_open(key, "b", "AAAA", &why));
    char *huge = malloc(MCP_REQSTATE_MAX + 2);
    memset(huge, 'A', MCP_REQSTATE_MAX + 1);
    huge[MCP_REQSTATE_MAX + 1] = 0;
    ck_assert_ptr_null(mcp_reqstate_open(key, "b", huge, &why));
    ck_assert(strstr(why, "too large") != NULL);
    free(huge);
    json_decref(st);
}
END_TEST

START_TEST(too_large_state_not_sealed) {
    json_t *st = json_object();
    char *big = malloc(MCP_REQSTATE_MAX);
    memset(big, 'x', MCP_REQSTATE_MAX - 1);
    big[MCP_REQSTATE_MAX - 1] = 0;
    json_object_set_new(st, "blob", json_string(big));
    ck_assert_ptr_null(mcp_reqstate_seal(key, "b", st, (int64_t)time(NULL) + 60));
    free(big);
    json_decref(st);
}
END_TEST

int main(void) {
    if (sodium_init() < 0) return 1;
    randombytes_buf(key, sizeof key);
    Suite *s = suite_create("reqstate");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, round_trip);
    tcase_add_test(tc, refused);
    tcase_add_test(tc, too_large_state_not_sealed);
    suite_add_tcase(s, tc);
    return gg_check_run(s);
}
