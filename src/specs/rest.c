/* rest.c — the REST front doors of the node knowledge server design: /mcp/tools,
 * /mcp/tools/{tool_name}, /mcp/invoke, /mcp/health (public listener, API key + scope) and
 * /internal/tools, /internal/invoke, /internal/specs/reload (internal listener, no auth),
 * plus specs_install, which `graphgate serve` calls once. Every tool call goes through
 * specs_call; the responses wrap its pre-serialized parts without building JSON trees. */
#include "specs/internal.h"
#include "auth/auth.h"
#include "app/app.h"
#include "http/http.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef GG_VERSION
#define GG_VERSION "0.0.0"
#endif

typedef struct rest_ctx {
    specs_registry *registry;
    gg_auth *auth;
    bool own_auth;
    char *tools_raw;      /* [{name,title,description,inputSchema,parameters,category,tags}] */
    char *tools_simple;   /* {"tools":[{name,description,inputSchema}]} for /internal/tools */
    specs_vcache *vcache; /* callers' tenants' downstream tools as MCP_TOOL specs (virtual.c) */
    char dir[2048], schema[2048];
} rest_ctx;

static void rest_ctx_free(rest_ctx *c) {
    if (!c) return;
    if (c->own_auth) gg_auth_free(c->auth);
    free(c->tools_raw);
    free(c->tools_simple);
    specs_vcache_free(c->vcache);
    free(c);
}

/* ---- auth ---------------------------------------------------------------------------- */

/* Verify the API key and the scope; on failure the response is filled and false returned
 * (the gateway's answers: gg_auth_http_check). p (may be NULL) receives the caller. */
static bool authorize(rest_ctx *c, gg_http_req *req, gg_http_res *res, gg_scope need, gg_principal *who) {
    gg_principal p;
    if (!gg_auth_http_check(c->auth, req, res, &p)) return false;
    if (who) *who = p;
    if (gg_scope_allows(p.scopes, need)) return true;
    gg_auth_http_insufficient_scope(res, need);
    return false;
}

/* ---- helpers --------------------------------------------------------------------------- */

static void put_json_string(gg_strbuf *b, const char *s) {
    gg_strbuf_putc(b, '"');
    gg_strbuf_json_escape(b, s, strlen(s));
    gg_strbuf_putc(b, '"');
}

static bool send_buf(gg_http_res *res, int status, gg_strbuf *b) {
    if (b->oom) {
        gg_strbuf_free(b);
        return gg_http_res_fail(res, "oom", "out of memory");
    }
    size_t n = b->len;
    char *p = gg_strbuf_take(b);
    return p && gg_http_res_bytes_take(res, status, "application/json", p, n);
}

/* A JSON-RPC error envelope. id_json is raw JSON (a string literal or the client's id). */
static int rpc_error(gg_http_res *res, int status, const char *id_json, int code, const char *message) {
    gg_strbuf b = GG_STRBUF_INIT;
    gg_strbuf_printf(&b, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":%d,\"message\":", id_json, code);
    put_json_string(&b, message);
    gg_strbuf_puts(&b, "}}");
    send_buf(res, status, &b);
    return GG_HTTP_DONE;
}

/* ---- tool metadata for /mcp/tools/{name} --------------------------------------------- */

static const struct tool_meta {
    const char *name, *guidance, *examples;
} TOOL_META[] = {
    {"get_node_types",
     "Start here to see every node family and subtype. A graphgate graph uses the GRAPH family (listed first) and "
     "calls your downstream tools (MCP_TOOL) with mcp nodes; the other families are the generic workflow catalog. "
     "In that catalog, ANTI-PATTERN: HIL -> AI_AGENT -> IF. CORRECT: a single HUMAN_IN_THE_LOOP node with built-in "
     "AI analysis routing to confirmed/rejected/unrelated/timeout.",
     "[{},{\"type_filter\":\"ACTION\"},{\"type_filter\":\"GRAPH\"}]"},
    {"get_node_details",
     "Ask for every node you plan to use in one call (up to 100) and copy configuration names exactly. Use "
     "include_examples=false to save tokens once you know a node.",
     "[{\"nodes\":[{\"node_type\":\"GRAPH\",\"subtype\":\"TRANSFORM\"},{\"node_type\":\"GRAPH\",\"subtype\":"
     "\"SWITCH\"}]},{\"nodes\":[{\"node_type\":\"AI_AGENT\",\"subtype\":\"OPENAI_CHATGPT\"}]},"
     "{\"nodes\":[{\"node_type\":\"TRIGGER\",\"subtype\":\"WEBHOOK\"},{\"node_type\":\"AI_AGENT\",\"subtype\":"
     "\"ANTHROPIC_CLAUDE\"},{\"node_type\":\"EXTERNAL_ACTION\",\"subtype\":\"SLACK\"}],\"include_examples\":false,"
     "\"include_schemas\":true}]"},
    {"search_nodes",
     "Describe what the node should do in a few words; follow up with get_node_details on the best matches.",
     "[{\"query\":\"loop over a list\"},{\"query\":\"send a slack message\"},"
     "{\"query\":\"vector memory for rag\",\"type_filter\":\"MEMORY\",\"limit\":3}]"},
};

static const struct tool_meta *tool_meta(const char *name) {
    for (size_t i = 0; i < sizeof TOOL_META / sizeof TOOL_META[0]; i++)
        if (strcmp(TOOL_META[i].name, name) == 0) return &TOOL_META[i];
    return NULL;
}

static bool build_tool_texts(rest_ctx *c) {
    json_t *tools = specs_tool_list();
    json_t *simple = json_array();
    if (!tools || !simple) {
        json_decref(tools);
        json_decref(simple);
        return false;
    }
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        json_array_append_new(simple, json_pack("{s:O, s:O, s:O}", "name", json_object_get(t, "name"), "description",
                                                json_object_get(t, "description"), "inputSchema",
                                                json_object_get(t, "inputSchema")));
        json_object_set(t, "parameters", json_object_get(t, "inputSchema"));
        json_object_set_new(t, "category", json_string("workflow"));
        json_object_set_new(t, "tags", json_pack("[s, s, s]", "nodes", "workflow", "specifications"));
    }
    json_t *wrap = json_pack("{s:o}", "tools", simple);
    c->tools_raw = json_dumps(tools, JSON_COMPACT);
    c->tools_simple = wrap ? json_dumps(wrap, JSON_COMPACT) : NULL;
    json_decref(tools);
    json_decref(wrap);
    return c->tools_raw && c->tools_simple;
}

/* ---- handlers -------------------------------------------------------------------------- */

/* GET /mcp/tools */
static int h_tools(gg_http_req *req, gg_http_res *res, void *user) {
    rest_ctx *c = user;
    if (!authorize(c, req, res, GG_SCOPE_TOOLS_READ, NULL)) return GG_HTTP_DONE;
    gg_strbuf b = GG_STRBUF_INIT;
    gg_strbuf_puts(&b, "{\"jsonrpc\":\"2.0\",\"id\":");
    put_json_string(&b, gg_http_request_id(req));
    gg_strbuf_puts(&b, ",\"result\":{\"tools\":");
    gg_strbuf_puts(&b, c->tools_raw);
    gg_strbuf_puts(&b, "}}");
    send_buf(res, 200, &b);
    return GG_HTTP_DONE;
}

/* GET /mcp/tools/{tool_name} */
static int h_tool_info(gg_http_req *req, gg_http_res *res, void *user) {
    rest_ctx *c = user;
    double t0 = gg_now_ms();
    if (!authorize(c, req, res, GG_SCOPE_TOOLS_READ, NULL)) return GG_HTTP_DONE;
    const char *name = gg_http_param(req, "tool_name");
    const struct tool_meta *m = name ? tool_meta(name) : NULL;
    if (!m) {
        gg_http_res_fail(res, "not_found", "Unknown tool '%.100s'. Available tools: get_node_types, "
                          "get_node_details, search_nodes", name ? name : "");
        return GG_HTTP_DONE;
    }
    json_t *tools = specs_tool_list(), *def = NULL;
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) if (strcmp(json_string_value(json_object_get(t, "name")), name) == 0) def = t;
    json_t *body = def ? json_pack("{s:O, s:O, s:O, s:s, s:b, s:s, s:s, s:o, s:O, s:O, s:s}", "name",
                                   json_object_get(def, "name"), "title", json_object_get(def, "title"),
                                   "description", json_object_get(def, "description"), "version", GG_VERSION,
                                   "available", 1, "category", "workflow", "workflow_guidance", m->guidance,
                                   "usage_examples", json_loads(m->examples, 0, NULL), "inputSchema",
                                   json_object_get(def, "inputSchema"), "parameters",
                                   json_object_get(def, "inputSchema"), "request_id", gg_http_request_id(req))
                       : NULL;
    json_decref(tools);
    if (!body) {
        gg_http_res_fail(res, "oom", "out of memory");
        return GG_HTTP_DONE;
    }
    json_object_set_new(body, "processing_time_ms", json_real(gg_now_ms() - t0));
    gg_http_res_json(res, 200, body);
    return GG_HTTP_DONE;
}

/* GET /mcp/health */
static int h_health(gg_http_req *req, gg_http_res *res, void *user) {
    rest_ctx *c = user;
    double t0 = gg_now_ms();
    if (!authorize(c, req, res, GG_SCOPE_HEALTH_CHECK, NULL)) return GG_HTTP_DONE;
    size_t n = specs_registry_count(c->registry);
    /* unhealthy: the JSON error model every error status answers; healthy: "error": null */
    json_t *error = n > 0 ? json_null()
                          : json_pack("{s:s, s:s}", "code", "unavailable", "message", "no node specifications are loaded");
    json_t *body = json_pack("{s:b, s:s, s:[s,s,s], s:I, s:I, s:o, s:s}", "healthy", n > 0, "version", GG_VERSION,
                             "available_tools", "get_node_types", "get_node_details", "search_nodes", "spec_count",
                             (json_int_t)n, "timestamp", (json_int_t)(gg_wall_ms() / 1000), "error", error,
                             "request_id", gg_http_request_id(req));
    if (body) json_object_set_new(body, "processing_time_ms", json_real(gg_now_ms() - t0));
    if (!body) gg_http_res_fail(res, "oom", "out of memory");
    else gg_http_res_json(res, n > 0 ? 200 : 503, body);
    return GG_HTTP_DONE;
}

/* The tool name, arguments and JSON-RPC id of an invoke body: {name, arguments} or a full
 * tools/call request. Fills res and returns false when the body is unusable. */
static bool invoke_request(gg_http_req *req, gg_http_res *res, json_t **body_out, const char **name,
                           json_t **args, char **id_json, bool envelope) {
    gg_error err = GG_ERROR_INIT;
    json_t *body = gg_http_body_object(
        req, "a JSON object like {\"name\": \"search_nodes\", \"arguments\": {\"query\": \"http\"}}", &err);
    *id_json = NULL;
    if (!body) {
        bool parse = !strcmp(err.code, "invalid_json");
        if (envelope) rpc_error(res, 400, "null", parse ? -32700 : -32600, err.message);
        else gg_http_res_error_from(res, 400, &err);
        gg_error_clear(&err);
        return false;
    }
    json_t *src = body, *params = json_object_get(body, "params");
    json_t *id = json_object_get(body, "id");
    if (json_is_object(params) && json_is_string(json_object_get(body, "method"))) src = params;
    *name = json_string_value(json_object_get(src, "name"));
    *args = json_object_get(src, "arguments");
    *id_json = id && (json_is_string(id) || json_is_integer(id)) ? json_dumps(id, JSON_ENCODE_ANY) : NULL;
    if (*id_json && strlen(*id_json) > 128) { /* echo only reasonable ids */
        free(*id_json);
        *id_json = NULL;
    }
    if (!*id_json) {
        gg_strbuf b = GG_STRBUF_INIT;
        put_json_string(&b, gg_http_request_id(req));
        *id_json = gg_strbuf_take(&b);
    }
    if (!*name) {
        const char *msg = "the body needs \"name\" (the tool) and optional \"arguments\" (an object)";
        if (envelope) rpc_error(res, 400, *id_json ? *id_json : "null", -32602, msg);
        else gg_http_res_fail(res, "invalid_params", "%s", msg);
        json_decref(body);
        free(*id_json);
        *id_json = NULL;
        return false;
    }
    *body_out = body;
    return true;
}

typedef struct invoke_extra {
    const char *tool, *request_id;
    double t0;
} invoke_extra;

/* The seed's bookkeeping members, appended once the tool has run. */
static void write_extra(gg_strbuf *b, void *user) {
    invoke_extra *x = user;
    gg_strbuf_puts(b, "\"_tool_name\":");
    put_json_string(b, x->tool);
    gg_strbuf_printf(b, ",\"_execution_time_ms\":%.3f,\"_request_id\":", gg_now_ms() - x->t0);
    put_json_string(b, x->request_id);
}

/* The answer for a caller whose tenant has downstream tools (MCP_TOOL specs): what
 * /mcp/nodes answers the same key, with the bookkeeping members and the envelope. NULL when
 * the global answer applies (specs_virtual_call's rule) or on failure (err set). */
static char *render_virtual(rest_ctx *c, const char *tenant, const char *name, json_t *args, const char *prefix,
                            invoke_extra *x, const char *suffix, size_t *len, gg_error *err) {
    json_t *v = specs_virtual_call(c->registry, c->vcache, name, args, tenant, err);
    if (!v) return NULL;
    char *body = json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(15));
    json_decref(v);
    gg_strbuf b = GG_STRBUF_INIT;
    bool ok = body != NULL;
    if (ok && prefix) gg_strbuf_puts(&b, prefix);
    if (ok) gg_strbuf_append(&b, body, strlen(body) - 1); /* up to the closing brace */
    gg_strbuf_putc(&b, ',');
    write_extra(&b, x);
    gg_strbuf_putc(&b, '}');
    if (suffix) gg_strbuf_puts(&b, suffix);
    free(body);
    if (!ok || b.oom) {
        gg_strbuf_free(&b);
        gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    *len = b.len;
    return gg_strbuf_take(&b);
}

/* POST /mcp/invoke (envelope) and POST /internal/invoke (direct result). tenant: the
 * caller's (NULL on the internal listener), whose downstream tools join the answer. */
static int invoke(gg_http_req *req, gg_http_res *res, rest_ctx *c, bool envelope, const char *tenant) {
    invoke_extra x = {.t0 = gg_now_ms(), .request_id = gg_http_request_id(req)};
    json_t *body = NULL, *args = NULL;
    const char *name = NULL;
    char *id_json = NULL;
    if (!invoke_request(req, res, &body, &name, &args, &id_json, envelope)) return GG_HTTP_DONE;
    x.tool = name;
    gg_error err = GG_ERROR_INIT;
    char prefix[256];
    snprintf(prefix, sizeof prefix, "{\"jsonrpc\":\"2.0\",\"id\":%.200s,\"result\":", id_json);
    size_t len = 0;
    char *out = tenant ? render_virtual(c, tenant, name, args, envelope ? prefix : NULL, &x, envelope ? "}" : NULL,
                                        &len, &err)
                       : NULL;
    if (!out && !gg_error_is_set(&err))
        out = specs_call_render(c->registry, name, args, envelope ? prefix : NULL, write_extra, &x,
                                envelope ? "}" : NULL, &len, &err);
    if (out) {
        gg_http_res_bytes_take(res, 200, "application/json", out, len); /* takes out */
    } else {
        bool unknown = strcmp(err.code, "unknown_tool") == 0;
        char msg[300];
        snprintf(msg, sizeof msg, "%s%s", err.message ? err.message : err.code,
                 unknown ? ". Available tools: get_node_types, get_node_details, search_nodes" : "");
        if (envelope) rpc_error(res, unknown ? 404 : 500, id_json, unknown ? -32602 : -32603, msg);
        else gg_http_res_fail(res, unknown ? "not_found" : "internal_error", "%s", msg);
    }
    gg_error_clear(&err);
    json_decref(body);
    free(id_json);
    return GG_HTTP_DONE;
}

static int h_invoke(gg_http_req *req, gg_http_res *res, void *user) {
    rest_ctx *c = user;
    gg_principal who;
    if (!authorize(c, req, res, GG_SCOPE_TOOLS_EXECUTE, &who)) return GG_HTTP_DONE;
    return invoke(req, res, c, true, who.tenant);
}

static int h_internal_invoke(gg_http_req *req, gg_http_res *res, void *user) {
    return invoke(req, res, user, false, NULL);
}

/* GET /internal/tools */
static int h_internal_tools(gg_http_req *req, gg_http_res *res, void *user) {
    (void)req;
    rest_ctx *c = user;
    gg_http_res_json_text(res, 200, c->tools_simple, strlen(c->tools_simple));
    return GG_HTTP_DONE;
}

static void log_load_error(void *user, const gg_error *e) {
    char buf[1024];
    gg_error_format(e, buf, sizeof buf);
    if (user) {
        json_t *arr = user;
        json_array_append_new(arr, json_string(buf));
    }
    gg_log(GG_LOG_WARN, "invalid node spec", "error", buf, NULL);
}

/* POST /internal/specs/reload: validate the directory again and swap it in (or keep the
 * current registry and answer 422 with every error). */
static int h_internal_reload(gg_http_req *req, gg_http_res *res, void *user) {
    (void)req;
    rest_ctx *c = user;
    json_t *errors = json_array();
    gg_error err = GG_ERROR_INIT;
    bool from_dir = false;
    bool ok = specs_registry_sync(c->registry, c->dir, c->schema, true, &from_dir, log_load_error, errors, &err);
    if (ok) {
        json_decref(errors);
        gg_http_res_json(res, 200, json_pack("{s:b, s:I}", "reloaded", 1, "spec_count",
                                             (json_int_t)specs_registry_count(c->registry)));
    } else {
        json_t *body = json_pack("{s:{s:s, s:s, s:o}}", "error", "code", err.code, "message",
                                 err.message ? err.message : err.code, "errors", errors);
        gg_http_res_json(res, strcmp(err.code, "invalid_spec") == 0 ? 422 : 500, body);
    }
    gg_error_clear(&err);
    return GG_HTTP_DONE;
}

/* ---- install ------------------------------------------------------------------------- */

static void on_shutdown(gg_app *app, void *user) {
    (void)app;
    rest_ctx *c = user;
    specs_registry *r = c->registry;
    rest_ctx_free(c);
    specs_registry_free(r);
}

static bool add(gg_router *rt, unsigned listeners, const char *method, const char *pattern, gg_http_handler fn,
                rest_ctx *c, gg_error *err) {
    return gg_router_add(rt, listeners, method, pattern, fn, c, err);
}

/* Load the registry for serve: sync with the store; if the directory is invalid, keep
 * what the store holds from the last good load. */
static bool load_for_serve(rest_ctx *c, const gg_config *cfg, gg_error *err) {
    bool from_dir = false;
    if (!cfg->specs_load_on_start && c->registry->store) {
        gg_error e = GG_ERROR_INIT;
        json_t *stored = gg_store_specs_current(c->registry->store, &e);
        bool ok = stored && json_array_size(stored) > 0 &&
                  specs_registry_load_resolved(c->registry, stored, "", &e);
        json_decref(stored);
        gg_error_clear(&e);
        if (ok) return true;
    }
    if (specs_registry_sync(c->registry, c->dir, c->schema, false, &from_dir, log_load_error, NULL, err)) {
        char n[32];
        snprintf(n, sizeof n, "%zu", specs_registry_count(c->registry));
        gg_log(GG_LOG_INFO, "node specs loaded", "count", n, "source", from_dir ? c->dir : "database", NULL);
        return true;
    }
    gg_error e = GG_ERROR_INIT;
    json_t *stored = c->registry->store ? gg_store_specs_current(c->registry->store, &e) : NULL;
    bool ok = stored && json_array_size(stored) > 0 && specs_registry_load_resolved(c->registry, stored, "", &e);
    json_decref(stored);
    gg_error_clear(&e);
    if (ok) {
        char buf[1024];
        gg_error_format(err, buf, sizeof buf);
        gg_log(GG_LOG_WARN, "node specs directory invalid; serving the last stored specs", "error", buf, NULL);
        gg_error_clear(err);
    }
    return ok;
}

/* See specs.h. */
bool specs_install(gg_app *app, gg_auth *auth, specs_registry **registry_out, gg_error *err) {
    const gg_config *cfg = app->config;
    rest_ctx *c = calloc(1, sizeof *c);
    if (!c) return gg_error_set(err, "oom", "out of memory"), false;
    char sdir[2048];
    if (!gg_config_find_data_dir(cfg->specs_dir, "specs", c->dir, sizeof c->dir, err) ||
        !gg_config_find_data_dir(NULL, "schema", sdir, sizeof sdir, err)) {
        free(c);
        return false;
    }
    snprintf(c->schema, sizeof c->schema, "%.2000s/node-spec.schema.json", sdir);
    c->registry = specs_registry_new(app->store);
    c->vcache = specs_vcache_new();
    if (!c->registry || !c->vcache || !build_tool_texts(c)) {
        gg_error_set(err, "oom", "out of memory");
        goto fail;
    }
    if (!load_for_serve(c, cfg, err)) goto fail;
    c->auth = auth;
    if (!c->auth) {
        gg_auth_options ao = {.pepper = cfg->key_pepper, .cache_ttl_ms = cfg->key_cache_ttl_ms,
                              .rate = cfg->rate_limit_rate, .burst = cfg->rate_limit_burst,
                              .tenant_max_concurrent = cfg->tenant_max_concurrent};
        c->auth = gg_auth_new(app->store, &ao, err);
        if (!c->auth) goto fail;
        c->own_auth = true;
    }
    gg_router *rt = gg_http_server_router(app->http);
    if (!add(rt, GG_LISTENER_PUBLIC, "GET", "/mcp/tools", h_tools, c, err) ||
        !add(rt, GG_LISTENER_PUBLIC, "GET", "/mcp/tools/{tool_name}", h_tool_info, c, err) ||
        !add(rt, GG_LISTENER_PUBLIC, "POST", "/mcp/invoke", h_invoke, c, err) ||
        !add(rt, GG_LISTENER_PUBLIC, "GET", "/mcp/health", h_health, c, err) ||
        !add(rt, GG_LISTENER_INTERNAL, "GET", "/internal/tools", h_internal_tools, c, err) ||
        !add(rt, GG_LISTENER_INTERNAL, "POST", "/internal/invoke", h_internal_invoke, c, err) ||
        !add(rt, GG_LISTENER_INTERNAL, "POST", "/internal/specs/reload", h_internal_reload, c, err))
        goto fail;
    if (!gg_app_on_shutdown(app, on_shutdown, c)) {
        gg_error_set(err, "internal_error", "too many shutdown callbacks");
        goto fail; /* routes registered with c stay unreachable: the server never starts */
    }
    if (registry_out) *registry_out = c->registry;
    return true;
fail:
    if (c->registry) specs_registry_free(c->registry);
    rest_ctx_free(c);
    return false;
}
