/* Resources, resource templates, prompts and CallToolResult outputs of a graph: the loader's
 * positioned errors for every new YAML form (tests/fixtures/graphs/invalid/extras.yaml), the
 * provider's lookup (fixed URIs, RFC 6570 matching, prompt arguments), runs of the hidden
 * tools, completions, and the MCP server's shaping and errors over the conformance fixture. */
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "../check_main.h"

static char srcdir[PATH_MAX];

/* The start of a graph with one tool t; its remaining keys follow. */
#define ONE_TOOL "server: {name: s, version: '1'}\ntools:\n  - name: t\n    description: d\n    inputSchema: {type: object}\n"

static gg_graph *load_path(const char *rel, gg_graph_diags *d) {
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/%s", srcdir, rel);
    return gg_graph_load_file(p, NULL, d);
}

static bool has_diag(const gg_graph_diags *d, const char *code, int line, int col) {
    for (size_t i = 0; i < d->count; i++)
        if (!strcmp(d->items[i].code, code) && d->items[i].line == line && d->items[i].column == col) return true;
    return false;
}

START_TEST(invalid_extras_positions) {
    gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
    ck_assert_ptr_null(load_path("tests/fixtures/graphs/invalid/extras.yaml", &d));
    static const struct { const char *code; int line, col; } want[] = {
        {"invalid_value", 7, 19},     /* resultFormat: blocks */
        {"invalid_uri", 12, 11},      {"conflicting_keys", 13, 51}, {"invalid_value", 14, 40},
        {"missing_key", 15, 5},       {"invalid_value", 16, 75},    {"invalid_value", 16, 96},
        {"duplicate_name", 16, 5},    {"invalid_template", 18, 19}, {"missing_key", 18, 5},
        {"invalid_template", 19, 18}, {"unknown_key", 24, 19},      {"missing_target", 25, 48},
        {"invalid_type", 28, 39},     {"duplicate_name", 28, 47},
        {"invalid_value", 29, 23},    {"invalid_value", 29, 102},   {"missing_key", 30, 5},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(has_diag(&d, want[i].code, want[i].line, want[i].col), "missing %s at %d:%d", want[i].code,
                      want[i].line, want[i].col);
    ck_assert_int_eq(d.errors, sizeof want / sizeof want[0]);
    /* diagnostics name the item as the history does */
    bool named = false;
    for (size_t i = 0; i < d.count; i++) named |= d.items[i].tool && !strcmp(d.items[i].tool, "prompt:p");
    ck_assert(named);
    gg_graph_diags_free(&d);
}
END_TEST

static mcp_provider *fixture_provider(void) {
    gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
    gg_graph *g = load_path("tests/fixtures/conformance/everything.yaml", &d);
    ck_assert_msg(g != NULL, "the conformance fixture loads");
    gg_graph_diags_free(&d);
    ck_assert_int_eq(gg_graph_tool_count(g), 34); /* hidden tools are not counted or listed */
    mcp_provider *p = gg_graph_provider_new(g);
    gg_graph_unref(g);
    return p;
}

static char *dump(json_t *j) { return j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) : strdup("null"); }

START_TEST(lookup_and_templates) {
    mcp_provider *p = fixture_provider();
    json_t *value, *args;
    char *run;
    json_t *def = p->ops->lookup(p, "resource", "test://static-text", NULL, &value, &run, &args);
    ck_assert_ptr_nonnull(def);
    ck_assert_str_eq(json_string_value(json_object_get(value, "text")), "This is the content of the static text resource.");
    ck_assert_ptr_null(run);
    json_decref(def);
    json_decref(value);
    /* a template: the variable percent-decoded; '/' never inside a {var} */
    def = p->ops->lookup(p, "resource", "test://template/a%20b/data", NULL, &value, &run, &args);
    ck_assert_ptr_nonnull(def);
    ck_assert_ptr_null(value);
    ck_assert_str_eq(run, "template:test://template/{id}/data");
    ck_assert_str_eq(json_string_value(json_object_get(args, "id")), "a b");
    json_t *res = p->ops->call_tool(p, run, args, &(mcp_call_ctx){0}, &(gg_error)GG_ERROR_INIT);
    char *s = dump(res);
    ck_assert_str_eq(s, "{\"value\":\"{\\\"id\\\":\\\"a b\\\",\\\"templateTest\\\":true,\\\"data\\\":\\\"Data for ID: a b\\\"}\"}");
    free(s);
    json_decref(res);
    free(run);
    json_decref(args);
    json_decref(def);
    static const char *const misses[] = {"test://template/a/b/data", "test://template//data", "test://template/1/data/x",
                                         "test://other", "", "test://template/"};
    for (size_t i = 0; i < sizeof misses / sizeof misses[0]; i++)
        ck_assert_msg(!p->ops->lookup(p, "resource", misses[i], NULL, &value, &run, &args), "%s matched", misses[i]);
    ck_assert_ptr_null(p->ops->lookup(p, "prompt", "nope", NULL, &value, &run, &args));
    /* a hidden tool is not a tool */
    gg_error e = GG_ERROR_INIT;
    ck_assert_ptr_null(p->ops->call_tool(p, "test_nope", NULL, &(mcp_call_ctx){0}, &e));
    gg_error_clear(&e);
    /* completions: declared values with the prefix; undeclared → NULL */
    json_t *c = p->ops->complete(p, "ref/prompt", "test_prompt_with_arguments", "arg1", "test");
    s = dump(c);
    ck_assert_str_eq(s, "[\"test\",\"testValue1\"]");
    free(s);
    json_decref(c);
    c = p->ops->complete(p, "ref/resource", "test://template/{id}/data", "id", "1");
    ck_assert_int_eq(json_array_size(c), 2);
    json_decref(c);
    ck_assert_ptr_null(p->ops->complete(p, "ref/prompt", "test_prompt_with_arguments", "arg2", ""));
    mcp_provider_unref(p);
}
END_TEST

/* The MCP server over the fixture: one request in, the response body out. */
static json_t *ask(mcp_server *srv, const char *req, mcp_outcome *o) {
    json_t *v = json_loads(req, 0, NULL);
    ck_assert_ptr_nonnull(v);
    mcp_message m;
    mcp_jsonrpc_classify(v, &m);
    mcp_request_ctx rc = {.protocol_version = "2025-11-25", .log_level = MCP_LOG_OFF};
    mcp_server_dispatch(srv, &m, &rc, o);
    json_decref(v);
    if (o->kind == MCP_OUT_CALL) {
        char *body = mcp_call_run(o->call, "r", NULL, "t");
        json_t *j = json_loads(body, 0, NULL);
        free(body);
        return j;
    }
    return o->body ? json_loads(o->body, 0, NULL) : NULL;
}

static void expect(mcp_server *srv, const char *req, const char *path_key, const char *want_sub) {
    mcp_outcome o;
    json_t *j = ask(srv, req, &o);
    char *s = dump(j);
    ck_assert_msg(strstr(s, want_sub) != NULL, "%s\n → %s\n (want %s in %s)", req, s, want_sub, path_key);
    free(s);
    json_decref(j);
    mcp_outcome_clear(&o);
}

#define REQ(method, params) "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"" method "\",\"params\":" params "}"

START_TEST(server_resources_prompts) {
    mcp_provider *p = fixture_provider();
    gg_error e = GG_ERROR_INIT;
    mcp_server *srv = mcp_server_new(p, NULL, &e);
    ck_assert_ptr_nonnull(srv);
    expect(srv, REQ("initialize", "{\"protocolVersion\":\"2025-11-25\"}"), "caps",
           "\"prompts\":{\"listChanged\":true},\"resources\":{\"listChanged\":true,\"subscribe\":true}");
    expect(srv, REQ("resources/list", "{}"), "list", "\"uri\":\"test://static-binary\"");
    expect(srv, REQ("resources/templates/list", "{}"), "list", "\"uriTemplate\":\"test://template/{id}/data\"");
    expect(srv, REQ("resources/read", "{\"uri\":\"test://static-binary\"}"), "blob",
           "{\"contents\":[{\"blob\":\"iVBOR");
    expect(srv, REQ("resources/read", "{\"uri\":\"test://watched-resource\"}"), "nodes",
           "{\"contents\":[{\"mimeType\":\"text/plain\",\"text\":\"Watched resource content\",\"uri\":\"test://watched-resource\"}]}");
    expect(srv, REQ("resources/read", "{\"uri\":\"test://missing\"}"), "not found",
           "\"error\":{\"code\":-32002,\"data\":{\"uri\":\"test://missing\"}");
    expect(srv, REQ("resources/read", "{}"), "no uri", "-32602");
    expect(srv, REQ("resources/subscribe", "{\"uri\":\"test://missing\"}"), "subscribe unknown", "-32002");
    mcp_outcome o;
    json_t *j = ask(srv, REQ("initialize", "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"elicitation\":{}}}"), &o);
    ck_assert_int_eq(o.client_caps, MCP_CLIENT_CAPS_KNOWN | MCP_CLIENT_CAPS_ELICITATION); /* not sampling */
    json_decref(j);
    mcp_outcome_clear(&o);
    j = ask(srv, REQ("resources/subscribe", "{\"uri\":\"test://template/7/data\"}"), &o);
    ck_assert_int_eq(o.subscribe, 1);
    ck_assert_str_eq(o.subscribe_uri, "test://template/7/data");
    json_decref(j);
    mcp_outcome_clear(&o);
    expect(srv, REQ("prompts/get", "{\"name\":\"test_simple_prompt\"}"), "string prompt",
           "\"messages\":[{\"content\":{\"text\":\"This is a simple prompt for testing.\",\"type\":\"text\"},\"role\":\"user\"}]");
    expect(srv, REQ("prompts/get", "{\"name\":\"test_prompt_with_arguments\",\"arguments\":{\"arg1\":\"x\"}}"), "missing arg",
           "\"code\":-32602,\"message\":\"Invalid params: prompt test_prompt_with_arguments needs argument arg2\"");
    expect(srv, REQ("prompts/get", "{\"name\":\"test_prompt_with_arguments\",\"arguments\":{\"arg1\":1,\"arg2\":\"y\"}}"),
           "non-string arg", "-32602");
    expect(srv, REQ("prompts/get", "{\"name\":\"test_prompt_with_arguments\",\"arguments\":{\"arg1\":\"x\",\"arg2\":\"y\"}}"),
           "nodes prompt", "Prompt with arguments: arg1='x', arg2='y'");
    expect(srv, REQ("prompts/get", "{\"name\":\"test_prompt_with_embedded_resource\",\"arguments\":{\"resourceUri\":\"a://b\"}}"),
           "mixed list", "{\"content\":{\"text\":\"Please process the embedded resource above.\",\"type\":\"text\"},\"role\":\"user\"}");
    expect(srv, REQ("prompts/get", "{\"name\":\"nope\"}"), "unknown prompt", "\"code\":-32602,\"message\":\"Unknown prompt: nope\"");
    expect(srv, REQ("completion/complete", "{\"ref\":{\"type\":\"ref/resource\",\"uri\":\"test://template/{id}/data\"},"
                                           "\"argument\":{\"name\":\"id\",\"value\":\"12\"}}"),
           "completion", "{\"completion\":{\"hasMore\":false,\"total\":1,\"values\":[\"123\"]}}");
    expect(srv, REQ("tools/call", "{\"name\":\"test_multiple_content_types\"}"), "rich content",
           "\"type\":\"image\"");
    mcp_server_unref(srv);
    mcp_provider_unref(p);
}
END_TEST

/* resultFormat: callToolResult checks what the exit node gives. */
START_TEST(call_tool_result_checked) {
    static const char src[] =
        ONE_TOOL
        "    resultFormat: callToolResult\n"
        "    nodes:\n"
        "      - {id: entry, type: entry, next: x}\n"
        "      - {id: x, type: transform, transform: {expr: '$.entry.out'}, next: exit}\n"
        "      - {id: exit, type: exit}\n";
    gg_graph *g = gg_graph_load_string(src, sizeof src - 1, "t.yaml", NULL, NULL);
    ck_assert_ptr_nonnull(g);
    mcp_provider *p = gg_graph_provider_new(g);
    gg_graph_unref(g);
    static const struct { const char *out, *want; } cases[] = {
        {"{\"out\":{\"content\":[{\"type\":\"audio\",\"data\":\"AA==\",\"mimeType\":\"audio/wav\"}],\"x\":1}}",
         "{\"content\":[{\"data\":\"AA==\",\"mimeType\":\"audio/wav\",\"type\":\"audio\"}]}"},
        {"{\"out\":{\"content\":[{\"type\":\"resource_link\",\"uri\":\"a://b\",\"name\":\"b\"}],\"isError\":true}}",
         "{\"content\":[{\"name\":\"b\",\"type\":\"resource_link\",\"uri\":\"a://b\"}],\"isError\":true}"},
        {"{\"out\":{\"content\":[{\"type\":\"image\",\"data\":\"AA==\"}]}}",
         "content[0]: an image or audio block needs data (base64) and mimeType"},
        {"{\"out\":\"just text\"}", "the exit output must be an object"},
        {"{\"out\":{\"content\":[],\"structuredContent\":[1]}}", "the exit output must be an object"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *args = json_loads(cases[i].out, 0, NULL);
        gg_error e = GG_ERROR_INIT;
        json_t *res = p->ops->call_tool(p, "t", args, &(mcp_call_ctx){0}, &e);
        char *s = dump(res);
        ck_assert_msg(strstr(s, cases[i].want) != NULL, "case %zu: %s", i, s);
        free(s);
        json_decref(res);
        json_decref(args);
    }
    mcp_provider_unref(p);
}
END_TEST

/* A template's variables are bounded (16) and need literal text between them. */
START_TEST(template_bounds) {
    static const char src[] =
        "server: {name: s, version: '1'}\n"
        "tools:\n"
        "  - {name: t, description: d, inputSchema: {type: object}, nodes: [{id: entry, type: entry, next: exit}, {id: exit, type: exit}]}\n"
        "resourceTemplates:\n"
        "  - {uriTemplate: 'a://{a}{b}', name: x, nodes: [{id: entry, type: entry, next: exit}, {id: exit, type: exit}]}\n"
        "  - {uriTemplate: 'a://{a}/{b}/{c}/{d}/{e}/{f}/{g}/{h}/{i}/{j}/{k}/{l}/{m}/{n}/{o}/{p}/{q}', name: y,\n"
        "     nodes: [{id: entry, type: entry, next: exit}, {id: exit, type: exit}]}\n";
    gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
    ck_assert_ptr_null(gg_graph_load_string(src, sizeof src - 1, "t.yaml", NULL, &d));
    ck_assert_int_eq(d.errors, 2);
    ck_assert(has_diag(&d, "invalid_template", 5, 19));
    ck_assert(has_diag(&d, "invalid_template", 6, 19));
    ck_assert(strstr(d.items[1].message, "more than 16 variables") != NULL);
    gg_graph_diags_free(&d);
}
END_TEST

/* Tool t of g (reference taken) asks its client: never pure, and without a client to ask
 * the call is an error result with msg. */
static void no_client_fails(gg_graph *g, const char *msg) {
    ck_assert(!gg_graph_tool_is_pure(g, "t")); /* it waits on the client: never inline */
    mcp_provider *p = gg_graph_provider_new(g);
    gg_graph_unref(g);
    gg_error e = GG_ERROR_INIT;
    json_t *res = p->ops->call_tool(p, "t", NULL, &(mcp_call_ctx){0}, &e);
    char *s = dump(res);
    ck_assert_msg(strstr(s, "\"isError\":true") && strstr(s, msg), "%s", s);
    free(s);
    json_decref(res);
    mcp_provider_unref(p);
}

/* elicit and sample nodes: validated; never pure; without a client to ask they fail clearly. */
START_TEST(client_nodes) {
    static const char bad[] =
        ONE_TOOL
        "    nodes:\n"
        "      - {id: entry, type: entry, next: a}\n"
        "      - {id: a, type: elicit, message: hi, requestedSchema: {type: object, properties: {x: {type: object}}}, next: b}\n"
        "      - {id: b, type: sample, maxTokens: 10, timeout: 0, next: exit}\n"
        "      - {id: exit, type: exit}\n";
    gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
    ck_assert_ptr_null(gg_graph_load_string(bad, sizeof bad - 1, "t.yaml", NULL, &d));
    ck_assert_msg(has_diag(&d, "invalid_schema", 8, 99), "nested object property refused");
    ck_assert_msg(has_diag(&d, "missing_key", 9, 9), "sample needs messages");
    ck_assert_msg(has_diag(&d, "invalid_value", 9, 55), "timeout must be positive");
    ck_assert_int_eq(d.errors, 3);
    gg_graph_diags_free(&d);
    static const char good[] =
        ONE_TOOL
        "    nodes:\n"
        "      - {id: entry, type: entry, next: a}\n"
        "      - {id: a, type: elicit, message: {expr: '$.entry.m'}, requestedSchema: {type: object, properties: {x: {type: string}}}, next: exit}\n"
        "      - {id: exit, type: exit}\n";
    gg_graph *g = gg_graph_load_string(good, sizeof good - 1, "t.yaml", NULL, NULL);
    ck_assert_ptr_nonnull(g);
    no_client_fails(g, "elicitation/create needs a client to ask");
}
END_TEST

/* ask nodes: each request checked like its node type; at most 16; needs all their capabilities. */
START_TEST(ask_nodes) {
    static const char bad[] =
        ONE_TOOL
        "    nodes:\n"
        "      - {id: entry, type: entry, next: a}\n"
        "      - {id: a, type: ask, next: exit, requests: {x: {type: elicit, message: hi}, y: {type: mcp}, z: {type: roots, next: q}}}\n"
        "      - {id: b, type: ask, next: exit, requests: {}}\n"
        "      - {id: exit, type: exit}\n";
    gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
    ck_assert_ptr_null(gg_graph_load_string(bad, sizeof bad - 1, "t.yaml", NULL, &d));
    ck_assert_msg(has_diag(&d, "missing_key", 8, 54), "elicit request needs requestedSchema");
    ck_assert_msg(has_diag(&d, "invalid_type", 8, 93), "a request of another type refused");
    ck_assert_msg(has_diag(&d, "unknown_key", 8, 116), "a request has no next");
    ck_assert_msg(has_diag(&d, "invalid_value", 9, 50), "empty requests refused");
    gg_graph_diags_free(&d);
    char big[4096];
    int n = snprintf(big, sizeof big, "%s    nodes:\n      - {id: entry, type: entry, next: a}\n"
                     "      - {id: a, type: ask, next: exit, requests: {", ONE_TOOL);
    for (int i = 0; i < 17; i++) n += snprintf(big + n, sizeof big - (size_t)n, "%sr%d: {type: roots}", i ? ", " : "", i);
    n += snprintf(big + n, sizeof big - (size_t)n, "}}\n      - {id: exit, type: exit}\n");
    gg_graph_diags d2 = GG_GRAPH_DIAGS_INIT;
    ck_assert_ptr_null(gg_graph_load_string(big, (size_t)n, "t.yaml", NULL, &d2));
    ck_assert_msg(d2.count == 1 && !strcmp(d2.items[0].code, "invalid_value") && strstr(d2.items[0].message, "1 to 16"),
                  "17 requests refused");
    gg_graph_diags_free(&d2);
    static const char good[] =
        ONE_TOOL
        "    nodes:\n"
        "      - {id: entry, type: entry, next: a}\n"
        "      - {id: a, type: ask, next: exit, requests: {s: {type: sample, messages: [], maxTokens: 5}, r: {type: roots}}}\n"
        "      - {id: exit, type: exit}\n";
    gg_graph *g = gg_graph_load_string(good, sizeof good - 1, "t.yaml", NULL, NULL);
    ck_assert_ptr_nonnull(g);
    ck_assert_int_eq(gg_graph_tool_client_needs(g, "t"), MCP_CLIENT_CAPS_SAMPLING | MCP_CLIENT_CAPS_ROOTS);
    no_client_fails(g, "sampling/createMessage needs a client to ask");
    /* a client node some route avoids is not required of the client */
    static const char routed[] =
        ONE_TOOL
        "    nodes:\n"
        "      - {id: entry, type: entry, next: sw}\n"
        "      - {id: sw, type: switch, conditions: [{rule: {var: '$client.capabilities.roots'}, target: r}, {target: s}]}\n"
        "      - {id: r, type: roots, next: s}\n"
        "      - {id: s, type: sample, messages: [], maxTokens: 5, next: exit}\n"
        "      - {id: exit, type: exit}\n";
    g = gg_graph_load_string(routed, sizeof routed - 1, "t.yaml", NULL, NULL);
    ck_assert_ptr_nonnull(g);
    ck_assert_int_eq(gg_graph_tool_client_needs(g, "t"), MCP_CLIENT_CAPS_SAMPLING);
    gg_graph_unref(g);
}
END_TEST

int main(void) {
    const char *sd = getenv("GG_SRCDIR");
    snprintf(srcdir, sizeof srcdir, "%s", sd ? sd : ".");
    Suite *s = suite_create("graph_extras");
    TCase *tc = tcase_create("extras");
    tcase_add_test(tc, invalid_extras_positions);
    tcase_add_test(tc, lookup_and_templates);
    tcase_add_test(tc, server_resources_prompts);
    tcase_add_test(tc, call_tool_result_checked);
    tcase_add_test(tc, template_bounds);
    tcase_add_test(tc, client_nodes);
    tcase_add_test(tc, ask_nodes);
    suite_add_tcase(s, tc);
    return gg_check_run(s);
}
