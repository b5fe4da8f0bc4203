/* test_downstream_hold.c — the per-owner budget for bytes held by downstream answers in
 * flight (src/mcp/loop.c, mcp_loop_hold / mcp_loop_unhold, config
 * tenants.max_downstream_bytes): charges add up per owner, a charge past the bound is
 * refused whole with an error naming the key, owners do not share, NULL is never bounded,
 * and what is given back frees room again. Also the bounded parse of a downstream message
 * (src/mcp/wire.c, mcp_wire_parse): tiny objects that would cost far more heap than their
 * text are refused before or during the parse, NUL inside a string is kept, and what
 * fits parses as usual. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/loop.h"
#include "../check_main.h"

START_TEST(per_owner_bound) {
    mcp_loop *l = mcp_loop_shared();
    ck_assert_ptr_nonnull(l);
    mcp_downstream_set_owner_max_bytes(1000);
    gg_error e = GG_ERROR_INIT;
    ck_assert(mcp_loop_hold(l, "a", 600, &e));
    ck_assert(mcp_loop_hold(l, "a", 400, &e)); /* exactly the bound */
    ck_assert(!mcp_loop_hold(l, "a", 1, &e));
    ck_assert_str_eq(e.code, "transport");
    ck_assert(strstr(e.message, "tenants.max_downstream_bytes"));
    gg_error_clear(&e);
    ck_assert_uint_eq(mcp_loop_held(l, "a"), 1000); /* the refused charge took nothing */
    ck_assert(mcp_loop_hold(l, "b", 1000, &e));      /* another owner has its own room */
    ck_assert(mcp_loop_hold(l, NULL, (size_t)1 << 40, &e));
    ck_assert_uint_eq(mcp_loop_held(l, NULL), 0);
    mcp_loop_unhold(l, "a", 600);
    ck_assert_uint_eq(mcp_loop_held(l, "a"), 400);
    ck_assert(mcp_loop_hold(l, "a", 600, &e));
    ck_assert(!mcp_loop_hold(l, "b", 2000, &e)); /* larger than the bound itself */
    gg_error_clear(&e);
    mcp_loop_unhold(l, "a", 1000);
    mcp_loop_unhold(l, "b", 1000);
    ck_assert_uint_eq(mcp_loop_held(l, "a") + mcp_loop_held(l, "b"), 0);
    mcp_downstream_set_owner_max_bytes(0); /* 0: no bound */
    ck_assert(mcp_loop_hold(l, "a", (size_t)1 << 40, &e));
    mcp_loop_unhold(l, "a", (size_t)1 << 40);
    ck_assert_uint_eq(mcp_loop_held(l, "a"), 0);
}
END_TEST

/* "[{},{},…]" of n objects. */
static char *tiny_objects(size_t n, size_t *len) {
    char *s = malloc(n * 3 + 2);
    size_t k = 0;
    s[k++] = '[';
    for (size_t i = 0; i < n; i++) {
        if (i) s[k++] = ',';
        s[k++] = '{', s[k++] = '}';
    }
    s[k++] = ']';
    *len = k;
    return s;
}

START_TEST(wire_parse_bounded) {
    gg_error e = GG_ERROR_INIT;
    size_t len, held = 0;
    char *txt = tiny_objects(100000, &len); /* 300 KB of text, tens of MB in jansson */
    ck_assert_ptr_null(mcp_wire_parse(txt, len, 4u << 20, &held, &e));
    ck_assert_str_eq(e.code, "transport");
    ck_assert(strstr(e.message, "downstream.max_parse_bytes"));
    gg_error_clear(&e);
    json_t *ok = mcp_wire_parse(txt, len, 256u << 20, &held, &e); /* a generous budget: parses */
    ck_assert_ptr_nonnull(ok);
    ck_assert_uint_eq(json_array_size(ok), 100000);
    ck_assert_uint_gt(held, len); /* what it holds is counted, and is more than the text */
    json_decref(ok);
    free(txt);
    /* past the linear floor but not the real cost: the budget of the parse stops it */
    /* (200 nested arrays: the floor counts 96 bytes each, jansson takes at least 104) */
    char nested[402];
    memset(nested, '[', 200);
    nested[200] = '1';
    memset(nested + 201, ']', 200);
    ck_assert_ptr_null(mcp_wire_parse(nested, 401, 20200, NULL, &e));
    ck_assert(strstr(e.message, "downstream.max_parse_bytes"));
    gg_error_clear(&e);
    static const char nul[] = "{\"name\": \"a\\u0000b\"}";
    json_t *m = mcp_wire_parse(nul, strlen(nul), 1u << 20, NULL, &e);
    ck_assert_ptr_nonnull(m);
    ck_assert_uint_eq(json_string_length(json_object_get(m, "name")), 3);
    json_decref(m);
    ck_assert_ptr_null(mcp_wire_parse("{\"a\":", 5, 1u << 20, NULL, &e));
    ck_assert(strstr(e.message, "invalid JSON"));
    gg_error_clear(&e);
}
END_TEST

int main(void) {
    Suite *s = suite_create("downstream_hold");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, per_owner_bound);
    tcase_add_test(tc, wire_parse_bounded);
    suite_add_tcase(s, tc);
    return gg_check_run(s);
}
