/* toolkit.c — the authoring toolkit: an MCP provider mounted at /mcp/toolkit whose tools an
 * agent uses while writing a graph: validate_graph (the upload's loader and limits, every
 * error and warning with line:col), test_jsonata and test_jsonlogic (one evaluation under
 * the evaluation limits), list_downstream_tools (the tenant's cached downstream catalogs).
 * The tenant is the caller key's (mounts answer per tenant); the route's scopes are the MCP
 * ones (tools/call needs tools:execute). Nothing is stored.
 */
#include <stdlib.h>
#include <string.h>

#include "gateway/internal.h"
#include "jsonata/jsonata.h"
#include "jsonlogic/jsonlogic.h"

#ifndef GG_VERSION
#define GG_VERSION "0.0.0"
#endif

#define TK_EXPR_MAX (64 * 1024) /* bytes of one expression or rule */
#define TK_EVAL_MS 2000         /* wall time of one test evaluation */

typedef struct toolkit {
    gg_gateway *gw;
    json_t *tools;
} toolkit;

static const char *TK_TOOLS =
    "[{\"name\":\"validate_graph\",\"title\":\"Validate a graph\","
    "\"description\":\"Parse and check a graph's YAML exactly as an upload does (same size and time limits); "
    "returns every error and warning with line and column. Nothing is stored.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"yaml\":{\"type\":\"string\",\"description\":\"the graph source\"}},"
    "\"required\":[\"yaml\"],\"additionalProperties\":false}},"
    "{\"name\":\"test_jsonata\",\"title\":\"Evaluate a JSONata expression\","
    "\"description\":\"Evaluate a JSONata expression against a JSON context (and optional $bindings) under the "
    "evaluation limits (time, memory). Returns the result, or the error with its code and character position.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"expression\":{\"type\":\"string\"},"
    "\"context\":{\"description\":\"the input document (any JSON)\"},"
    "\"bindings\":{\"type\":\"object\",\"description\":\"extra $variables\"}},"
    "\"required\":[\"expression\"],\"additionalProperties\":false}},"
    "{\"name\":\"test_jsonlogic\",\"title\":\"Apply a JSON Logic rule\","
    "\"description\":\"Apply a JSON Logic rule to data under the evaluation memory limit. Returns the result and "
    "its truthiness, or the error with the JSON pointer of the failing node.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"rule\":{\"description\":\"the rule (any JSON)\"},"
    "\"data\":{\"description\":\"the data (any JSON)\"}},\"required\":[\"rule\"],\"additionalProperties\":false}},"
    "{\"name\":\"list_downstream_tools\",\"title\":\"List downstream MCP tools\","
    "\"description\":\"The cached tool catalogs of your tenant's downstream MCP servers (as fetched at upload or "
    "by graphgate mcp sync): per server its tools with description and inputSchema, and when it was fetched. "
    "Use the server and tool names in an mcp node.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"server\":{\"type\":\"string\","
    "\"description\":\"only this mcpServers name (optional)\"}},\"additionalProperties\":false}}]";

/* A CallToolResult carrying sc (stolen) as structured content and as text. */
static json_t *tk_result(json_t *sc, bool is_error) {
    char *text = sc ? json_dumps(sc, JSON_COMPACT) : NULL;
    json_t *r = text ? json_pack("{s:[{s:s, s:s}], s:o, s:b}", "content", "type", "text", "text", text,
                                 "structuredContent", sc, "isError", is_error)
                     : NULL;
    if (!r) json_decref(sc);
    free(text);
    return r;
}

static json_t *tk_error(const char *code, const char *message) {
    return tk_result(json_pack("{s:{s:s, s:s}}", "error", "code", code, "message", message), true);
}

/* The error object of an evaluation failure: code, message, position/path when known. */
static json_t *tk_eval_error(const gg_error *e) {
    json_t *o = json_pack("{s:s, s:s}", "code", e->code, "message", e->message ? e->message : e->code);
    if (o && e->position >= 0) json_object_set_new(o, "position", json_integer(e->position));
    if (o && e->path) json_object_set_new(o, "path", json_string(e->path));
    return tk_result(json_pack("{s:o}", "error", o), true);
}

static json_t *tk_validate(toolkit *tk, json_t *args) {
    const char *src = json_string_value(json_object_get(args, "yaml"));
    if (!src) return tk_error("invalid_params", "yaml: a string is required");
    size_t len = json_string_length(json_object_get(args, "yaml"));
    const gg_config *cfg = tk->gw->cfg;
    if (cfg->graphs_max_bytes && len > cfg->graphs_max_bytes)
        return tk_error("too_large", "the graph source is larger than graphs.max_bytes");
    gg_graph_options o = gw_graph_options(tk->gw, true, gg_now_ms() + (double)cfg->graphs_upload_timeout_ms);
    gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
    gg_graph *g = gg_graph_load_string(src, len, "graph.yaml", &o, &d);
    json_t *list = json_array();
    for (size_t i = 0; list && i < d.count; i++) json_array_append_new(list, gg_graph_diag_json(&d.items[i]));
    json_t *sc = json_pack("{s:b, s:I, s:I, s:o}", "valid", g != NULL, "error_count", (json_int_t)d.errors,
                           "warning_count", (json_int_t)d.warnings, "diagnostics", list);
    if (g) gg_graph_unref(g);
    gg_graph_diags_free(&d);
    return tk_result(sc, false);
}

static json_t *tk_jsonata(toolkit *tk, json_t *args, const mcp_call_ctx *ctx) {
    json_t *je = json_object_get(args, "expression"), *bind = json_object_get(args, "bindings");
    if (!json_is_string(je)) return tk_error("invalid_params", "expression: a string is required");
    if (json_string_length(je) > TK_EXPR_MAX) return tk_error("too_large", "expression: at most 65536 bytes");
    if (bind && !json_is_object(bind)) return tk_error("invalid_params", "bindings: an object is required");
    jsonata_options o = {0};
    o.time_limit_ms = TK_EVAL_MS;
    o.max_memory_bytes = (long)tk->gw->cfg->limits_eval_memory_bytes;
    o.max_stack_bytes = 1L << 20; /* well inside a worker thread's stack, ASan frames included */
    o.cancel = ctx ? ctx->cancelled : NULL;
    gg_error e = GG_ERROR_INIT;
    json_t *v = jsonata_eval_string(json_string_value(je), json_object_get(args, "context"), bind, &o, &e);
    json_t *r;
    if (gg_error_is_set(&e)) r = tk_eval_error(&e);
    else if (!v) r = tk_result(json_pack("{s:b}", "undefined", 1), false);
    else r = tk_result(json_pack("{s:O}", "result", v), false);
    json_decref(v);
    gg_error_clear(&e);
    return r;
}

static json_t *tk_jsonlogic(toolkit *tk, json_t *args) {
    json_t *rule = json_object_get(args, "rule");
    if (!rule) return tk_error("invalid_params", "rule is required");
    char *dump = json_dumps(rule, JSON_COMPACT | JSON_ENCODE_ANY);
    size_t n = dump ? strlen(dump) : 0;
    free(dump);
    if (n > TK_EXPR_MAX) return tk_error("too_large", "rule: at most 65536 bytes of JSON");
    jsonlogic_options o = {0};
    o.max_memory_bytes = (long)tk->gw->cfg->limits_eval_memory_bytes;
    gg_error e = GG_ERROR_INIT;
    jsonlogic_rule *jr = jsonlogic_compile(rule, &o, &e);
    json_t *v = jr ? jsonlogic_apply(jr, json_object_get(args, "data"), NULL, &e) : NULL;
    json_t *r = v ? tk_result(json_pack("{s:O, s:b}", "result", v, "truthy", jsonlogic_truthy(v)), false)
                  : tk_eval_error(&e);
    json_decref(v);
    jsonlogic_free(jr);
    gg_error_clear(&e);
    return r;
}

/* The caller tenant's catalogs (the tenant filter is the store query's), or one server's. */
static json_t *tk_downstream(toolkit *tk, json_t *args, const mcp_call_ctx *ctx) {
    json_t *js = json_object_get(args, "server");
    if (js && !json_is_string(js)) return tk_error("invalid_params", "server: a string is required");
    if (!ctx || !ctx->tenant || !ctx->tenant[0]) return tk_error("no_tenant", "no tenant: call with a tenant's API key");
    gg_error e = GG_ERROR_INIT;
    json_t *list;
    if (js) {
        json_t *one = gg_store_downstream_get(tk->gw->store, ctx->tenant, json_string_value(js), &e);
        list = one ? json_pack("[o]", one) : NULL;
    } else {
        list = gg_store_downstream_list(tk->gw->store, ctx->tenant, &e);
    }
    json_t *r = list ? tk_result(json_pack("{s:o}", "servers", list), false)
                     : tk_error(e.code[0] ? e.code : "oom", e.message ? e.message : "out of memory");
    gg_error_clear(&e);
    return r;
}

/* ---- the provider ---------------------------------------------------------------------- */

static json_t *tk_server_info(mcp_provider *p) {
    (void)p;
    return json_pack("{s:s, s:s, s:s}", "name", "graphgate-toolkit", "title", "graphgate authoring toolkit",
                     "version", GG_VERSION);
}

static const char *tk_instructions(mcp_provider *p) {
    (void)p;
    return "Tools for writing graphs: validate_graph checks a graph's YAML as an upload would; test_jsonata and "
           "test_jsonlogic evaluate expressions. Find node types with search_nodes/get_node_details at /mcp/nodes.";
}

static json_t *tk_list_tools(mcp_provider *p) { return json_incref(((toolkit *)p->impl)->tools); }

static json_t *tk_get_tool(mcp_provider *p, const char *name) {
    size_t i;
    json_t *t;
    json_array_foreach(((toolkit *)p->impl)->tools, i, t) {
        if (strcmp(json_string_value(json_object_get(t, "name")), name) == 0) return json_incref(t);
    }
    return NULL;
}

static json_t *tk_call_tool(mcp_provider *p, const char *name, json_t *args, const mcp_call_ctx *ctx, gg_error *err) {
    toolkit *tk = p->impl;
    if (args && !json_is_object(args)) {
        gg_error_set(err, "invalid_params", "arguments must be an object");
        return NULL;
    }
    json_t *r = NULL;
    if (strcmp(name, "validate_graph") == 0) r = tk_validate(tk, args);
    else if (strcmp(name, "test_jsonata") == 0) r = tk_jsonata(tk, args, ctx);
    else if (strcmp(name, "test_jsonlogic") == 0) r = tk_jsonlogic(tk, args);
    else if (strcmp(name, "list_downstream_tools") == 0) r = tk_downstream(tk, args, ctx);
    else {
        gg_error_set(err, "unknown_tool", "unknown tool: %s", name);
        return NULL;
    }
    if (!r) gg_error_set(err, "oom", "out of memory");
    return r;
}

static void tk_destroy(mcp_provider *p) {
    toolkit *tk = p->impl;
    json_decref(tk->tools);
    free(tk);
    free(p);
}

/* See gateway.h. */
bool gg_gateway_mount_toolkit(gg_gateway *gw, gg_error *err) {
    mcp_provider *p = calloc(1, sizeof *p);
    toolkit *tk = calloc(1, sizeof *tk);
    json_t *tools = json_loads(TK_TOOLS, 0, NULL);
    if (!p || !tk || !tools) {
        free(p);
        free(tk);
        json_decref(tools);
        gg_error_set(err, "oom", "out of memory");
        return false;
    }
    tk->gw = gw;
    tk->tools = tools;
    p->server_info = tk_server_info;
    p->instructions = tk_instructions;
    p->list_tools = tk_list_tools;
    p->get_tool = tk_get_tool;
    p->call_tool = tk_call_tool;
    p->destroy = tk_destroy;
    p->refcount = 1;
    p->impl = tk;
    bool ok = gg_gateway_mount(gw, "toolkit", p, err);
    mcp_provider_unref(p);
    return ok;
}
