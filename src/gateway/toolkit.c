/* toolkit.c — the authoring toolkit: an MCP provider mounted at /mcp/toolkit whose tools an
 * agent uses while writing a graph: validate_graph (the upload's loader and limits, every
 * error and warning with line:col), test_jsonata and test_jsonlogic (one evaluation under
 * the evaluation limits), list_downstream_tools (the tenant's cached downstream catalogs),
 * run_graph (toolkit_run.c: a source run on the executor with a node trace, nothing stored)
 * and put_graph (publish a version: the REST upload's path, gw_publish_graph).
 * The tenant is the caller key's (mounts answer per tenant); the route's scopes are the MCP
 * ones (tools/call needs tools:execute). put_graph also needs graphs:write, read from the
 * calling key's scopes (mcp_call_ctx.identity.scopes): it is listed to every key (an agent learns it
 * exists and what it needs) and a key without the scope gets an isError result naming it.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/authz.h"
#include "gateway/calls.h"
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

static const char *const TK_TOOLS =
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
    "\"description\":\"only this mcpServers name (optional)\"}},\"additionalProperties\":false}},"
    "{\"name\":\"run_graph\",\"title\":\"Run a graph without publishing it\","
    "\"description\":\"Compile a graph's YAML and run one of its tools with the given arguments on the real executor, "
    "under the limits a published graph has (its executionLimits within the server's caps, memory, the request "
    "timeout, your tenant's downstream policy and concurrency). Returns ok, the exit output or the error (code, "
    "message, failing node, expression position), and the trace: per node its id, type, input, output, duration "
    "and error. mcp nodes really call their servers; elicit, sample, roots and ask nodes ask you (2026-07-28: "
    "input_required rounds: repeat the call with the same yaml, tool and arguments plus inputResponses and "
    "requestState). Nothing is stored: no version, no execution history.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"yaml\":{\"type\":\"string\",\"description\":\"the graph source\"},"
    "\"tool\":{\"type\":\"string\",\"description\":\"the graph's tool to run\"},"
    "\"arguments\":{\"type\":\"object\",\"description\":\"the tool's arguments\"}},"
    "\"required\":[\"yaml\",\"tool\"],\"additionalProperties\":false}},"
    "{\"name\":\"put_graph\",\"title\":\"Publish a graph\","
    "\"description\":\"Publish a graph's YAML as the new active version of your tenant's graph `name`, exactly as "
    "PUT /admin/tenants/{tenant}/graphs/{name} does (validation, downstream checks, quotas, audit). Its tools are then "
    "served at /mcp/{tenant}/{name}. Needs an API key with the graphs:write scope (without it the call fails naming "
    "the missing scope). Returns the version, its tools and warnings, or the errors with their line and column.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\","
    "\"description\":\"the graph name: lowercase letters, digits and -\"},"
    "\"yaml\":{\"type\":\"string\",\"description\":\"the graph source (YAML or JSON)\"}},"
    "\"required\":[\"name\",\"yaml\"],\"additionalProperties\":false}}]";

/* A CallToolResult carrying sc (stolen) as structured content and as text; see internal.h. */
json_t *gw_toolkit_result(json_t *sc, bool is_error) {
    char *text = sc ? json_dumps(sc, JSON_COMPACT) : NULL;
    json_t *r = text ? json_pack("{s:[{s:s, s:s}], s:o, s:b}", "content", "type", "text", "text", text,
                                 "structuredContent", sc, "isError", is_error)
                     : NULL;
    if (!r) json_decref(sc);
    free(text);
    return r;
}

json_t *gw_toolkit_error(const char *code, const char *message) {
    return gw_toolkit_result(json_pack("{s:{s:s, s:s}}", "error", "code", code, "message", message), true);
}

/* The error object of an evaluation failure: code, message, position/path when known. */
static json_t *tk_eval_error(const gg_error *e) {
    json_t *o = json_pack("{s:s, s:s}", "code", e->code, "message", e->message ? e->message : e->code);
    if (o && e->position >= 0) json_object_set_new(o, "position", json_integer(e->position));
    if (o && e->path) json_object_set_new(o, "path", json_string(e->path));
    return gw_toolkit_result(json_pack("{s:o}", "error", o), true);
}

static json_t *tk_validate(toolkit *tk, json_t *args) {
    const char *src = json_string_value(json_object_get(args, "yaml"));
    if (!src) return gw_toolkit_error("invalid_params", "yaml: a string is required");
    size_t len = json_string_length(json_object_get(args, "yaml"));
    const gg_config *cfg = tk->gw->cfg;
    if (cfg->graphs_max_bytes && len > cfg->graphs_max_bytes)
        return gw_toolkit_error("too_large", "the graph source is larger than graphs.max_bytes");
    gg_graph_options o = gw_graph_options(tk->gw, true, gg_now_ms() + (double)cfg->graphs_upload_timeout_ms);
    gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
    gg_graph *g = gg_graph_load_string(src, len, "graph.yaml", &o, &d);
    json_t *list = json_array();
    for (size_t i = 0; list && i < d.count; i++) json_array_append_new(list, gg_graph_diag_json(&d.items[i]));
    json_t *sc = json_pack("{s:b, s:I, s:I, s:o}", "valid", g != NULL, "error_count", (json_int_t)d.errors,
                           "warning_count", (json_int_t)d.warnings, "diagnostics", list);
    if (g) gg_graph_unref(g);
    gg_graph_diags_free(&d);
    return gw_toolkit_result(sc, false);
}

static json_t *tk_jsonata(toolkit *tk, json_t *args, const mcp_call_ctx *ctx) {
    json_t *je = json_object_get(args, "expression"), *bind = json_object_get(args, "bindings");
    if (!json_is_string(je)) return gw_toolkit_error("invalid_params", "expression: a string is required");
    if (json_string_length(je) > TK_EXPR_MAX) return gw_toolkit_error("too_large", "expression: at most 65536 bytes");
    if (bind && !json_is_object(bind)) return gw_toolkit_error("invalid_params", "bindings: an object is required");
    jsonata_options o = {0};
    o.time_limit_ms = TK_EVAL_MS;
    o.max_memory_bytes = (long)tk->gw->cfg->limits_eval_memory_bytes;
    o.max_stack_bytes = 1L << 20; /* well inside a worker thread's stack, ASan frames included */
    o.cancel = ctx ? ctx->run.cancelled : NULL;
    gg_error e = GG_ERROR_INIT;
    json_t *v = jsonata_eval_string(json_string_value(je), json_object_get(args, "context"), bind, &o, &e);
    json_t *r;
    if (gg_error_is_set(&e)) r = tk_eval_error(&e);
    else if (!v) r = gw_toolkit_result(json_pack("{s:b}", "undefined", 1), false);
    else r = gw_toolkit_result(json_pack("{s:O}", "result", v), false);
    json_decref(v);
    gg_error_clear(&e);
    return r;
}

static json_t *tk_jsonlogic(toolkit *tk, json_t *args) {
    json_t *rule = json_object_get(args, "rule");
    if (!rule) return gw_toolkit_error("invalid_params", "rule is required");
    char *dump = json_dumps(rule, JSON_COMPACT | JSON_ENCODE_ANY);
    size_t n = dump ? strlen(dump) : 0;
    free(dump);
    if (n > TK_EXPR_MAX) return gw_toolkit_error("too_large", "rule: at most 65536 bytes of JSON");
    jsonlogic_options o = {0};
    o.max_memory_bytes = (long)tk->gw->cfg->limits_eval_memory_bytes;
    gg_error e = GG_ERROR_INIT;
    jsonlogic_rule *jr = jsonlogic_compile(rule, &o, &e);
    json_t *v = jr ? jsonlogic_apply(jr, json_object_get(args, "data"), NULL, &e) : NULL;
    json_t *r = v ? gw_toolkit_result(json_pack("{s:O, s:b}", "result", v, "truthy", jsonlogic_truthy(v)), false)
                  : tk_eval_error(&e);
    json_decref(v);
    jsonlogic_free(jr);
    gg_error_clear(&e);
    return r;
}

/* The caller tenant's catalogs (the tenant filter is the store query's), or one server's. */
static json_t *tk_downstream(toolkit *tk, json_t *args, const mcp_call_ctx *ctx) {
    json_t *js = json_object_get(args, "server");
    if (js && !json_is_string(js)) return gw_toolkit_error("invalid_params", "server: a string is required");
    if (!ctx || !ctx->identity.tenant || !ctx->identity.tenant[0]) return gw_toolkit_error("no_tenant", "no tenant: call with a tenant's API key");
    gg_error e = GG_ERROR_INIT;
    json_t *list;
    if (js) {
        json_t *one = gg_store_downstream_get(tk->gw->store, ctx->identity.tenant, json_string_value(js), &e);
        list = one ? json_pack("[o]", one) : NULL;
    } else {
        list = gg_store_downstream_list(tk->gw->store, ctx->identity.tenant, &e);
    }
    json_t *r = list ? gw_toolkit_result(json_pack("{s:o}", "servers", list), false)
                     : gw_toolkit_error(e.code[0] ? e.code : "oom", e.message ? e.message : "out of memory");
    gg_error_clear(&e);
    return r;
}

/* ---- put_graph -------------------------------------------------------------------------- */

typedef struct tk_put {
    json_t *args; /* reference: name and source live until the upload answered */
    mcp_provider_done_fn done;
    void *user;
} tk_put;

/* The upload's answer (on an upload thread): its body is the tool's structured result. */
static void put_answered(void *user, int status, json_t *body) {
    tk_put *p = user;
    bool ok = status == 200 || status == 201;
    if (body && !ok) json_object_set_new(body, "status", json_integer(status));
    json_t *r = body ? gw_toolkit_result(body, !ok) : NULL;
    gg_error err = GG_ERROR_INIT;
    if (!r) gg_error_set(&err, "oom", "out of memory");
    mcp_provider_done_fn done = p->done;
    void *u = p->user;
    json_decref(p->args);
    free(p);
    done(u, r, &err);
    gg_error_clear(&err);
}

/* The caller's key must hold graphs:write (admin implies it); the tenant is always the
 * key's: no argument names one, so no key can publish into another tenant. */
static void tk_put_graph(toolkit *tk, json_t *args, const mcp_call_ctx *ctx, mcp_provider_done_fn done, void *user) {
    const char *name = json_string_value(json_object_get(args, "name"));
    json_t *src = json_object_get(args, "yaml");
    json_t *answer = NULL;
    gg_principal pr = {0};
    if (!ctx || !ctx->identity.tenant || !ctx->identity.tenant[0] || !ctx->identity.key_id)
        answer = gw_toolkit_error("no_tenant", "no tenant: call with a tenant's API key");
    else if (!gg_scope_allows(ctx->identity.scopes, GG_SCOPE_GRAPHS_WRITE))
        answer = gw_toolkit_result(json_pack("{s:{s:s, s:s, s:s}}", "error", "code", "insufficient_scope", "message",
                                             "put_graph needs an API key with the graphs:write scope; this key lacks it",
                                             "required_scope", "graphs:write"),
                                   true);
    else if (!name || !json_is_string(src))
        answer = gw_toolkit_error("invalid_params", "name and yaml: strings are required");
    tk_put *p = answer ? NULL : calloc(1, sizeof *p);
    if (!p) {
        gg_error err = GG_ERROR_INIT;
        if (!answer) gg_error_set(&err, "oom", "out of memory");
        done(user, answer, &err);
        gg_error_clear(&err);
        return;
    }
    snprintf(pr.key_id, sizeof pr.key_id, "%s", ctx->identity.key_id);
    snprintf(pr.tenant, sizeof pr.tenant, "%s", ctx->identity.tenant);
    pr.scopes = ctx->identity.scopes;
    *p = (tk_put){json_incref(args), done, user};
    gw_publish_graph(tk->gw, &pr, pr.tenant, name, json_string_value(src), json_string_length(src), put_answered, p);
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
           "test_jsonlogic evaluate expressions; list_downstream_tools shows your downstream servers' tools; run_graph runs "
           "a graph's tool without storing it and shows each node's input and output; put_graph publishes it (needs "
           "graphs:write). Find node types with search_nodes/get_node_details at /mcp/nodes.";
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

/* run_graph and put_graph answer asynchronously; the other tools compute at once. */
static void tk_call_tool_async(mcp_provider *p, const char *name, json_t *args, const mcp_call_ctx *ctx,
                               mcp_provider_done_fn done, void *user);

typedef struct tk_wait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    json_t *r;
    gg_error err;
} tk_wait;

static void tk_waited(void *user, json_t *r, gg_error *err) {
    tk_wait *w = user;
    pthread_mutex_lock(&w->mu);
    w->r = r;
    if (err && gg_error_is_set(err)) gg_error_move(&w->err, err);
    w->done = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* call_tool's contract for the asynchronous tools (a caller without call_tool_async): the
 * calling thread waits for the answer. The gateway's server never takes this path. */
static json_t *tk_call_blocking(mcp_provider *p, const char *name, json_t *args, const mcp_call_ctx *ctx,
                               gg_error *err) {
    tk_wait w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, NULL, GG_ERROR_INIT};
    tk_call_tool_async(p, name, args, ctx, tk_waited, &w);
    pthread_mutex_lock(&w.mu);
    while (!w.done) pthread_cond_wait(&w.cv, &w.mu);
    pthread_mutex_unlock(&w.mu);
    if (gg_error_is_set(&w.err)) gg_error_move(err, &w.err);
    return w.r;
}

static json_t *tk_call_tool(mcp_provider *p, const char *name, json_t *args, const mcp_call_ctx *ctx, gg_error *err) {
    toolkit *tk = p->impl;
    if (!strcmp(name, "run_graph") || !strcmp(name, "put_graph")) return tk_call_blocking(p, name, args, ctx, err);
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

static void tk_call_tool_async(mcp_provider *p, const char *name, json_t *args, const mcp_call_ctx *ctx,
                               mcp_provider_done_fn done, void *user) {
    toolkit *tk = p->impl;
    bool obj = !args || json_is_object(args);
    json_t *none = obj && !args ? json_object() : NULL;
    if (obj && !strcmp(name, "run_graph")) gw_toolkit_run_graph(tk->gw, args ? args : none, ctx, done, user);
    else if (obj && !strcmp(name, "put_graph")) tk_put_graph(tk, args ? args : none, ctx, done, user);
    else {
        gg_error err = GG_ERROR_INIT;
        json_t *r = tk_call_tool(p, name, args, ctx, &err);
        done(user, r, &err);
        gg_error_clear(&err);
    }
    json_decref(none);
}

static void tk_destroy(mcp_provider *p) {
    toolkit *tk = p->impl;
    json_decref(tk->tools);
    free(tk);
}

static const mcp_provider_ops tk_ops = {
    .server_info = tk_server_info,
    .instructions = tk_instructions,
    .list_tools = tk_list_tools,
    .get_tool = tk_get_tool,
    .call_tool = tk_call_tool,
    .call_tool_async = tk_call_tool_async,
    .destroy = tk_destroy,
};

/* See gateway.h. */
bool gg_gateway_mount_toolkit(gg_gateway *gw, gg_error *err) {
    toolkit *tk = calloc(1, sizeof *tk);
    json_t *tools = json_loads(TK_TOOLS, 0, NULL);
    mcp_provider *p = tk && tools ? mcp_provider_new(&tk_ops, tk) : NULL;
    if (!p) {
        free(tk);
        json_decref(tools);
        gg_error_set(err, "oom", "out of memory");
        return false;
    }
    tk->gw = gw;
    tk->tools = tools;
    bool ok = gg_gateway_mount(gw, "toolkit", p, err);
    mcp_provider_unref(p);
    return ok;
}
