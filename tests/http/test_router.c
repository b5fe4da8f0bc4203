/* Unit tests for the route table (patterns, literal precedence, listeners, 404/405) and the
 * JSON error model (status mapping, error bodies). No sockets. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "http/http.h"
#include "../check_main.h"

static int h_a(gg_http_req *q, gg_http_res *r, void *u) { return GG_HTTP_DONE; }
static int h_b(gg_http_req *q, gg_http_res *r, void *u) { return GG_HTTP_DONE; }
static int h_c(gg_http_req *q, gg_http_res *r, void *u) { return GG_HTTP_DONE; }

static gg_router *R;

static void add(unsigned l, const char *m, const char *p, gg_http_handler fn, void *user) {
    gg_error e = GG_ERROR_INIT;
    ck_assert_msg(gg_router_add(R, l, m, p, fn, user, &e), "%s %s: %s", m, p, e.message ? e.message : "");
}

static void setup(void) {
    R = gg_router_new();
    ck_assert_ptr_nonnull(R);
    add(GG_LISTENER_BOTH, "GET", "/health", h_a, "health");
    add(GG_LISTENER_PUBLIC, "POST", "/mcp/{tenant}/{graph}", h_a, "mcp");
    add(GG_LISTENER_PUBLIC, "GET", "/mcp/{tenant}/{graph}", h_b, "mcp-get");
    add(GG_LISTENER_PUBLIC, "DELETE", "/mcp/{tenant}/{graph}", h_c, "mcp-del");
    add(GG_LISTENER_PUBLIC, "POST", "/mcp/tools/{name}", h_b, "tools");
    add(GG_LISTENER_PUBLIC, "GET", "/mcp/health", h_c, "mcp-health");
    add(GG_LISTENER_INTERNAL, "POST", "/internal/mcp/{tenant}/{graph}", h_a, "internal-mcp");
    add(GG_LISTENER_BOTH, "PUT", "/admin/tenants/{t}/graphs/{g}", h_a, "put-graph");
    add(GG_LISTENER_BOTH, "POST", "/admin/tenants/{t}/graphs/{g}/activate", h_b, "activate");
    add(GG_LISTENER_BOTH, "GET", "/admin/tenants/{t}/graphs/{g}/versions", h_c, "versions");
}

static void teardown(void) { gg_router_free(R); }

static const char *param(const gg_route_match *m, const char *name) {
    for (size_t i = 0; i < m->nparams; i++)
        if (strcmp(m->params[i].name, name) == 0) return m->params[i].value;
    return NULL;
}

START_TEST(params_are_extracted) {
    gg_route_match m;
    gg_router_match(R, GG_LISTENER_PUBLIC, "POST", "/mcp/acme/orders", &m);
    ck_assert_int_eq(m.status, 200);
    ck_assert_str_eq((const char *)m.user, "mcp");
    ck_assert_str_eq(m.pattern, "/mcp/{tenant}/{graph}");
    ck_assert_uint_eq(m.nparams, 2);
    ck_assert_str_eq(param(&m, "tenant"), "acme");
    ck_assert_str_eq(param(&m, "graph"), "orders");
    gg_router_match(R, GG_LISTENER_BOTH, "POST", "/admin/tenants/t1/graphs/g-2/activate", &m);
    ck_assert_int_eq(m.status, 200);
    ck_assert_str_eq(param(&m, "t"), "t1");
    ck_assert_str_eq(param(&m, "g"), "g-2");
}
END_TEST

START_TEST(literal_wins_over_param) {
    gg_route_match m;
    gg_router_match(R, GG_LISTENER_PUBLIC, "POST", "/mcp/tools/get_node_types", &m);
    ck_assert_int_eq(m.status, 200);
    ck_assert_str_eq((const char *)m.user, "tools");
    ck_assert_str_eq(param(&m, "name"), "get_node_types");
    gg_router_match(R, GG_LISTENER_PUBLIC, "GET", "/mcp/health", &m);
    ck_assert_int_eq(m.status, 200);
    ck_assert_str_eq((const char *)m.user, "mcp-health");
    ck_assert_uint_eq(m.nparams, 0);
}
END_TEST

START_TEST(literal_precedence_backtracks) {
    /* /mcp/tools/{name} must not shadow GET /mcp/tools/x (pattern route answers) and the
     * pattern route must not shadow POST /mcp/tools/x (literal route answers). */
    gg_route_match m;
    gg_router_match(R, GG_LISTENER_PUBLIC, "GET", "/mcp/tools/x", &m);
    ck_assert_int_eq(m.status, 200);
    ck_assert_str_eq((const char *)m.user, "mcp-get");
    ck_assert_str_eq(param(&m, "tenant"), "tools");
    ck_assert_str_eq(param(&m, "graph"), "x");
    gg_router_match(R, GG_LISTENER_PUBLIC, "POST", "/mcp/tools/x", &m);
    ck_assert_str_eq((const char *)m.user, "tools");
}
END_TEST

START_TEST(mcp_health_literal) {
    gg_error e = GG_ERROR_INIT;
    gg_router *r = gg_router_new();
    ck_assert(gg_router_add(r, GG_LISTENER_PUBLIC, "GET", "/{a}/{b}", h_a, "pattern", &e));
    ck_assert(gg_router_add(r, GG_LISTENER_PUBLIC, "GET", "/mcp/health", h_b, "literal", &e));
    gg_route_match m;
    gg_router_match(r, GG_LISTENER_PUBLIC, "GET", "/mcp/health", &m);
    ck_assert_str_eq((const char *)m.user, "literal");
    gg_router_match(r, GG_LISTENER_PUBLIC, "GET", "/mcp/other", &m);
    ck_assert_str_eq((const char *)m.user, "pattern");
    gg_router_match(r, GG_LISTENER_PUBLIC, "GET", "/x/health", &m);
    ck_assert_str_eq((const char *)m.user, "pattern");
    gg_router_free(r);
}
END_TEST

START_TEST(per_listener_routes) {
    gg_route_match m;
    gg_router_match(R, GG_LISTENER_INTERNAL, "POST", "/internal/mcp/a/b", &m);
    ck_assert_int_eq(m.status, 200);
    gg_router_match(R, GG_LISTENER_PUBLIC, "POST", "/internal/mcp/a/b", &m);
    ck_assert_int_eq(m.status, 404); /* not 405: the route does not exist there */
    ck_assert_int_eq(m.route_index, -1);
    gg_router_match(R, GG_LISTENER_INTERNAL, "POST", "/mcp/a/b", &m);
    ck_assert_int_eq(m.status, 404);
    gg_router_match(R, GG_LISTENER_INTERNAL, "GET", "/health", &m);
    ck_assert_int_eq(m.status, 200);
    gg_router_match(R, GG_LISTENER_PUBLIC, "GET", "/health", &m);
    ck_assert_int_eq(m.status, 200);
}
END_TEST

START_TEST(method_not_allowed_lists_allow) {
    gg_route_match m;
    gg_router_match(R, GG_LISTENER_PUBLIC, "PATCH", "/mcp/a/b", &m);
    ck_assert_int_eq(m.status, 405);
    ck_assert_ptr_nonnull(strstr(m.allow, "POST"));
    ck_assert_ptr_nonnull(strstr(m.allow, "GET"));
    ck_assert_ptr_nonnull(strstr(m.allow, "DELETE"));
    ck_assert_ptr_nonnull(strstr(m.allow, "HEAD"));
    gg_router_match(R, GG_LISTENER_PUBLIC, "POST", "/health", &m);
    ck_assert_int_eq(m.status, 405);
    ck_assert_str_eq(m.allow, "GET, HEAD");
}
END_TEST

START_TEST(not_found_cases) {
    gg_route_match m;
    const char *paths[] = {"/", "/nope", "/mcp", "/mcp/a", "/mcp/a/b/c", "/health/", "//health",
                           "/mcp//b", "/admin/tenants/t/graphs", "relative", ""};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        gg_router_match(R, GG_LISTENER_PUBLIC, "GET", paths[i], &m);
        ck_assert_msg(m.status == 404, "%s -> %d", paths[i], m.status);
    }
    char deep[4096] = "";
    for (int i = 0; i < 100; i++) strcat(deep, "/a");
    gg_router_match(R, GG_LISTENER_PUBLIC, "GET", deep, &m);
    ck_assert_int_eq(m.status, 404);
    /* A segment longer than a param value never matches a {param}. */
    char longseg[600] = "/mcp/";
    memset(longseg + 5, 'x', 300);
    strcpy(longseg + 305, "/b");
    gg_router_match(R, GG_LISTENER_PUBLIC, "POST", longseg, &m);
    ck_assert_int_eq(m.status, 404);
}
END_TEST

START_TEST(head_falls_back_to_get) {
    gg_route_match m;
    gg_router_match(R, GG_LISTENER_PUBLIC, "HEAD", "/health", &m);
    ck_assert_int_eq(m.status, 200);
    ck_assert_str_eq((const char *)m.user, "health");
}
END_TEST

START_TEST(bad_patterns_rejected) {
    gg_error e = GG_ERROR_INIT;
    const char *bad[] = {"", "health", "/a//b", "/a/", "/{}", "/{a-b}", "/{a}/{a}", "/a{b}", "/{a",
                         "/sp ace"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(!gg_router_add(R, GG_LISTENER_PUBLIC, "GET", bad[i], h_a, NULL, &e), "%s accepted", bad[i]);
        ck_assert_str_eq(e.code, "invalid_route");
        gg_error_clear(&e);
    }
    ck_assert(!gg_router_add(R, GG_LISTENER_PUBLIC, "get", "/x", h_a, NULL, &e));
    gg_error_clear(&e);
    ck_assert(!gg_router_add(R, 0, "GET", "/x", h_a, NULL, &e));
    gg_error_clear(&e);
}
END_TEST

START_TEST(conflicts_detected_per_listener) {
    gg_error e = GG_ERROR_INIT;
    ck_assert(!gg_router_add(R, GG_LISTENER_PUBLIC, "POST", "/mcp/{x}/{y}", h_a, NULL, &e));
    ck_assert_str_eq(e.code, "route_conflict");
    gg_error_clear(&e);
    /* Same pattern on the other listener only is fine. */
    ck_assert(gg_router_add(R, GG_LISTENER_INTERNAL, "POST", "/mcp/{x}/{y}", h_b, "int", &e));
    gg_route_match m;
    gg_router_match(R, GG_LISTENER_INTERNAL, "POST", "/mcp/a/b", &m);
    ck_assert_str_eq((const char *)m.user, "int");
    ck_assert_str_eq(param(&m, "x"), "a");
    gg_router_match(R, GG_LISTENER_PUBLIC, "POST", "/mcp/a/b", &m);
    ck_assert_str_eq((const char *)m.user, "mcp");
    ck_assert_int_eq(gg_router_count(R), 11);
    ck_assert_str_eq(gg_router_pattern(R, 10), "/mcp/{x}/{y}");
    ck_assert_str_eq(gg_router_method(R, 10), "POST");
    ck_assert_ptr_null(gg_router_pattern(R, 11));
    ck_assert_uint_eq(gg_router_listeners(R, 10), GG_LISTENER_INTERNAL);
    ck_assert_uint_eq(gg_router_listeners(R, 11), 0);
}
END_TEST

/* ---- error model ---- */

static int status_of(const char *code) {
    gg_error e = GG_ERROR_INIT;
    gg_error_set(&e, code, "x");
    int s = gg_http_status_for_error(&e);
    gg_error_clear(&e);
    return s;
}

START_TEST(error_codes_map_to_status) {
    ck_assert_int_eq(status_of("not_found"), 404);
    ck_assert_int_eq(status_of("invalid_json"), 400);
    ck_assert_int_eq(status_of("invalid_name"), 400);
    ck_assert_int_eq(status_of("unauthorized"), 401);
    ck_assert_int_eq(status_of("forbidden"), 403);
    ck_assert_int_eq(status_of("conflict"), 409);
    ck_assert_int_eq(status_of("too_large"), 413);
    ck_assert_int_eq(status_of("validation"), 422); /* "validation_failed" was a synonym nothing set */
    ck_assert_int_eq(status_of("rate_limited"), 429);
    ck_assert_int_eq(status_of("busy"), 503);
    ck_assert_int_eq(status_of("timeout"), 504);
    ck_assert_int_eq(status_of("db"), 500);
    ck_assert_int_eq(gg_http_status_for_error(NULL), 500);
}
END_TEST

START_TEST(error_body_shape) {
    char *s = gg_http_error_body("not_found", "no \"such\" graph");
    ck_assert_ptr_nonnull(s);
    json_t *j = json_loads(s, 0, NULL);
    ck_assert_ptr_nonnull(j);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "error"), "code")), "not_found");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "error"), "message")), "no \"such\" graph");
    ck_assert_uint_eq(json_object_size(j), 1);
    json_decref(j);
    free(s);
}
END_TEST

START_TEST(parse_addresses) {
    char host[64];
    unsigned port;
    gg_error e = GG_ERROR_INIT;
    ck_assert(gg_http_parse_addr("127.0.0.1:8080", host, sizeof host, &port, &e));
    ck_assert_str_eq(host, "127.0.0.1");
    ck_assert_uint_eq(port, 8080);
    ck_assert(gg_http_parse_addr("[::1]:0", host, sizeof host, &port, &e));
    ck_assert_str_eq(host, "::1");
    ck_assert_uint_eq(port, 0);
    const char *bad[] = {"", "8080", "127.0.0.1", "127.0.0.1:", "127.0.0.1:70000", ":80", "::1:80",
                         "[::1]80", "host:-1", "host:8x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(!gg_http_parse_addr(bad[i], host, sizeof host, &port, &e), "%s accepted", bad[i]);
        ck_assert_str_eq(e.code, "invalid_address");
        gg_error_clear(&e);
    }
}
END_TEST

int main(void) {
    Suite *s = suite_create("http-router");
    TCase *tc = tcase_create("router");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, params_are_extracted);
    tcase_add_test(tc, literal_wins_over_param);
    tcase_add_test(tc, literal_precedence_backtracks);
    tcase_add_test(tc, mcp_health_literal);
    tcase_add_test(tc, per_listener_routes);
    tcase_add_test(tc, method_not_allowed_lists_allow);
    tcase_add_test(tc, not_found_cases);
    tcase_add_test(tc, head_falls_back_to_get);
    tcase_add_test(tc, bad_patterns_rejected);
    tcase_add_test(tc, conflicts_detected_per_listener);
    suite_add_tcase(s, tc);
    TCase *te = tcase_create("errors");
    tcase_add_test(te, error_codes_map_to_status);
    tcase_add_test(te, error_body_shape);
    tcase_add_test(te, parse_addresses);
    suite_add_tcase(s, te);
    return gg_check_run(s);
}
