/* views.c — views of the tenant-wide MCP endpoint: admin REST and their MCP servers.
 *
 * PUT /admin/tenants/{t}/views/{name} stores a definition
 *   {"description"?: text, "tools": [{"tool": "<graph>.<tool>", "name"?: new name,
 *                                     "description"?: text}, ...],
 *    "resources"?: ["<graph>", ...], "prompts"?: ["<graph>", ...]}
 * (tools may be absent when resources or prompts name a graph: those graphs' proxied
 * resources and prompts under their tenant-wide names, tenantwide.c)
 * checked here (clear 400s naming the member), bounded (GW_VIEWS_MAX views per tenant,
 * GW_VIEW_TOOLS_MAX tools per view) and served at /mcp/{tenant}/_views/{name}. A selected
 * tool that no active graph offers is not an error: GET reports it under "missing" and the
 * view's tools/list leaves it out. Changing a view's selection sends list_changed to its
 * clients (2025 GET streams and 2026 subscriptions/listen streams), deleting it ends their
 * streams; so does a new version of a graph the view selects from. On every replica: the
 * store bumps the views generation with each change (NOTIFY on PostgreSQL), and each
 * replica's watcher then compares the definitions its clients were told about with the
 * stored ones (gw_views_check), so a client hears of a change once, wherever it was made.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/authz.h"
#include "gateway/internal.h"
#include "gateway/relay.h"

#define VIEW_DESC_MAX 4096

static bool bad(gg_error *err, const char *fmt, const char *what, size_t i) {
    char msg[256];
    snprintf(msg, sizeof msg, fmt, i, what);
    gg_error_set(err, "invalid_view", "%s", msg);
    return false;
}

static bool short_text(json_t *v) { return !v || (json_is_string(v) && json_string_length(v) <= VIEW_DESC_MAX); }

/* One selection entry i: {"tool", "name"?, "description"?}; the name it serves under goes
 * into seen (duplicates refused). */
static bool check_entry(json_t *e, size_t i, json_t *seen, gg_error *err) {
    if (!json_is_object(e)) return bad(err, "tools[%zu]: %s", "must be an object", i);
    const char *k;
    json_t *v;
    json_object_foreach(e, k, v) if (strcmp(k, "tool") && strcmp(k, "name") && strcmp(k, "description"))
        return bad(err, "tools[%zu]: unknown member (allowed: %s)", "tool, name, description", i);
    const char *tool = json_string_value(json_object_get(e, "tool"));
    if (!tool || !strchr(tool, '.') || !gw_valid_tool_name(tool))
        return bad(err, "tools[%zu].tool: %s", "must be a \"<graph>.<tool>\" name of the tenant-wide endpoint", i);
    json_t *name = json_object_get(e, "name");
    if (name && (!json_is_string(name) || !gw_valid_tool_name(json_string_value(name))))
        return bad(err, "tools[%zu].name: %s", "must be 1..128 characters of A-Z a-z 0-9 _ - . (MCP tool names)", i);
    if (!short_text(json_object_get(e, "description")))
        return bad(err, "tools[%zu].description: %s", "must be a string of at most 4096 bytes", i);
    const char *as = name ? json_string_value(name) : tool;
    if (json_object_get(seen, as)) return bad(err, "tools[%zu]: %s", "serves a name an earlier entry already serves", i);
    json_object_set_new(seen, as, json_true());
    return true;
}

/* "resources" / "prompts": the graphs whose proxied ones the view serves, as a list of
 * distinct graph names (at most GW_VIEW_TOOLS_MAX). */
static bool graphs_check(json_t *d, const char *key, gg_error *err) {
    json_t *l = json_object_get(d, key), *g;
    if (!l) return true;
    if (!json_is_array(l) || json_array_size(l) > GW_VIEW_TOOLS_MAX)
        return gg_error_set(err, "invalid_view", "%s must be an array of at most %d graph names", key, GW_VIEW_TOOLS_MAX), false;
    size_t i, j;
    json_array_foreach(l, i, g) {
        gg_error e = GG_ERROR_INIT;
        bool ok = json_is_string(g) && gg_auth_valid_name(json_string_value(g), "graph", &e);
        gg_error_clear(&e);
        for (j = 0; ok && j < i; j++) ok = !json_equal(json_array_get(l, j), g);
        if (!ok) return gg_error_set(err, "invalid_view", "%s[%zu]: must be a graph name, named once", key, i), false;
    }
    return true;
}

/* The definition's shape (see the top of the file). */
static bool view_check(json_t *d, gg_error *err) {
    if (!json_is_object(d)) return gg_error_set(err, "invalid_view", "the body must be a JSON object"), false;
    const char *k;
    json_t *v;
    json_object_foreach(d, k, v) if (strcmp(k, "tools") && strcmp(k, "description") && strcmp(k, "resources") && strcmp(k, "prompts"))
        return gg_error_set(err, "invalid_view", "unknown member '%s' (allowed: tools, resources, prompts, description)", k), false;
    if (!short_text(json_object_get(d, "description")))
        return gg_error_set(err, "invalid_view", "description must be a string of at most 4096 bytes"), false;
    if (!graphs_check(d, "resources", err) || !graphs_check(d, "prompts", err)) return false;
    json_t *tools = json_object_get(d, "tools");
    bool extras = json_array_size(json_object_get(d, "resources")) || json_array_size(json_object_get(d, "prompts"));
    if ((tools || !extras) &&
        (!json_is_array(tools) || (json_array_size(tools) == 0 && !extras) || json_array_size(tools) > GW_VIEW_TOOLS_MAX))
        return gg_error_set(err, "invalid_view", "tools must be an array of 1..%d selections", GW_VIEW_TOOLS_MAX), false;
    json_t *seen = json_object();
    bool ok = true;
    for (size_t i = 0; ok && i < json_array_size(tools); i++) ok = check_entry(json_array_get(tools, i), i, seen, err);
    json_decref(seen);
    return ok;
}

/* See relay.h. */
mcp_server *gw_view_server(gg_gateway *gw, const char *tenant, const char *view, gg_error *err) {
    json_t *row = gg_store_view_get(gw->store, tenant, view, err);
    if (!row) return NULL;
    mcp_server *s = gw_tenantwide_server(gw, tenant, json_object_get(row, "definition"), err);
    json_decref(row);
    return s;
}

/* See relay.h. */
void gw_endpoint_add(json_t *out, const char *tenant, const char *graph) {
    char key[2 * GG_NAME_MAX + 2];
    snprintf(key, sizeof key, "%s/%s", tenant, graph); /* tenant names have no '/' */
    if (!json_object_get(out, key)) json_object_set_new(out, key, json_pack("[ss]", tenant, graph));
}

/* Whether some client of this replica (a 2025 session's GET stream or a 2026
 * subscriptions/listen stream) listens on an endpoint of tenant starting with prefix. */
static bool anyone_on(gg_gateway *gw, const char *tenant, const char *prefix) {
    return gw_streams_any_on(gw->streams, tenant, prefix) || gw_listen_any_on(gw->listen, tenant, prefix);
}

/* list_changed to the clients of tenant's view, with its current server (view_only: only
 * those told about another definition); a deleted view ends their streams. */
static void view_changed(gg_gateway *gw, const char *tenant, const char *view, bool view_only) {
    char ep[GG_NAME_MAX + 1];
    snprintf(ep, sizeof ep, "%s%s", GW_VIEWS_PREFIX, view);
    if (!anyone_on(gw, tenant, ep)) return;
    gg_error err = GG_ERROR_INIT;
    mcp_server *s = gw_view_server(gw, tenant, view, &err);
    if (s && view_only) gw_streams_view_changed(gw->streams, tenant, ep, s);
    else if (s) gw_streams_tools_changed(gw->streams, tenant, ep, s);
    if (s) gw_listen_changed_to(gw->listen, tenant, ep, s, view_only);
    else if (strcmp(err.code, "not_found") == 0) { /* deleted: its streams end (a store error ends nothing) */
        gw_streams_end_graph(gw->streams, tenant, ep);
        gw_listen_end(gw->listen, tenant, ep);
    }
    gg_error_clear(&err);
    mcp_server_unref(s);
}

/* See internal.h. Watcher thread only (views_gen is its own). */
void gw_views_check(gg_gateway *gw) {
    gg_error err = GG_ERROR_INIT;
    long long gen = gg_store_generation_get(gw->store, GG_GEN_VIEWS, &err);
    gg_error_clear(&err);
    if (gen < 0 || gen == gw->views_gen) return;
    gw->views_gen = gen;
    json_t *eps = json_object();
    gw_streams_endpoints(gw->streams, GW_VIEWS_PREFIX, eps);
    gw_listen_endpoints(gw->listen, GW_VIEWS_PREFIX, eps);
    const char *k;
    json_t *e;
    json_object_foreach(eps, k, e) view_changed(gw, json_string_value(json_array_get(e, 0)),
                                                json_string_value(json_array_get(e, 1)) + strlen(GW_VIEWS_PREFIX), true);
    json_decref(eps);
}

/* Whether view definition d selects a tool of graph ("<graph>."). */
static bool selects_from(json_t *d, const char *graph) {
    size_t i, n = strlen(graph);
    json_t *e;
    json_array_foreach(json_object_get(d, "tools"), i, e) {
        const char *tool = json_string_value(json_object_get(e, "tool"));
        if (tool && strncmp(tool, graph, n) == 0 && tool[n] == '.') return true;
    }
    static const char *const keys[] = {"resources", "prompts"};
    for (int k = 0; k < 2; k++)
        json_array_foreach(json_object_get(d, keys[k]), i, e) if (json_is_string(e) && !strcmp(json_string_value(e), graph)) return true;
    return false;
}

/* See relay.h. */
void gw_tenantwide_graph_changed(gg_gateway *gw, const char *tenant, const char *graph) {
    if (!gw || !gw->store) return;
    if (anyone_on(gw, tenant, GW_TENANTWIDE)) {
        gg_error err = GG_ERROR_INIT;
        mcp_server *s = gw_tenantwide_server(gw, tenant, NULL, &err);
        gg_error_clear(&err);
        if (s) {
            gw_streams_tools_changed(gw->streams, tenant, GW_TENANTWIDE, s);
            gw_listen_changed_to(gw->listen, tenant, GW_TENANTWIDE, s, false);
        }
        mcp_server_unref(s);
    }
    if (!anyone_on(gw, tenant, GW_VIEWS_PREFIX)) return; /* e.g. the sync at start */
    gg_error err = GG_ERROR_INIT;
    json_t *views = gg_store_views_list(gw->store, tenant, &err);
    gg_error_clear(&err);
    size_t i;
    json_t *v;
    json_array_foreach(views, i, v) if (selects_from(json_object_get(v, "definition"), graph))
        view_changed(gw, tenant, json_string_value(json_object_get(v, "name")), false);
    json_decref(views);
}

/* ---- REST -------------------------------------------------------------------------------- */

static int answer_error(gg_http_res *res, gg_error *err) {
    gg_http_res_error_from(res, strcmp(err->code, "invalid_view") == 0 ? 400 : 0, err);
    gg_error_clear(err);
    return GG_HTTP_DONE;
}

/* The stored row plus what the tenant's graphs offer now: "missing" selected names. */
static json_t *with_missing(gg_gateway *gw, const char *tenant, json_t *row) {
    gg_error err = GG_ERROR_INIT;
    mcp_server *s = gw_tenantwide_server(gw, tenant, json_object_get(row, "definition"), &err);
    gg_error_clear(&err);
    json_object_set_new(row, "missing", s ? gw_tenantwide_missing(s) : json_null());
    json_object_set_new(row, "tool_count", json_integer(s ? (json_int_t)mcp_server_tool_count(s) : 0));
    char url[GG_NAME_MAX * 2 + 32];
    snprintf(url, sizeof url, "/mcp/%s/%s%s", tenant, GW_VIEWS_PREFIX, json_string_value(json_object_get(row, "name")));
    json_object_set_new(row, "endpoint", json_string(url));
    mcp_server_unref(s);
    return row;
}

static bool view_name_ok(gg_http_res *res, const char *v) {
    gg_error err = GG_ERROR_INIT;
    if (strlen(v) <= GW_VIEW_NAME_MAX && gg_auth_valid_name(v, "view", &err)) return true;
    gg_http_res_fail(res, "invalid_name", "a view name is 1..%d characters of [a-z0-9-], not starting or ending with '-'",
                      GW_VIEW_NAME_MAX);
    gg_error_clear(&err);
    return false;
}

int gw_views_put(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    const char *t = gg_http_param(req, "t"), *v = gg_http_param(req, "name");
    gg_principal pr;
    if (!gw_admin_allow_as(gw, req, res, t, GG_SCOPE_GRAPHS_WRITE, &pr) || !view_name_ok(res, v) ||
        !gw_admin_tenant_exists(gw, res, t))
        return GG_HTTP_DONE;
    gg_error err = GG_ERROR_INIT;
    json_t *d = gg_http_body_object(req, "a JSON view definition like {\"tools\": [{\"tool\": \"graph.tool\"}]}", &err);
    if (!d) return answer_error(res, &err);
    bool created = false;
    if (!view_check(d, &err) || !gg_store_view_put(gw->store, t, v, d, GW_VIEWS_MAX, &created, &err)) {
        json_decref(d);
        return answer_error(res, &err);
    }
    gw_admin_audit(gw, &pr, t, created ? "view.create" : "view.update", v,
                   json_pack("{s:I}", "tools", (json_int_t)json_array_size(json_object_get(d, "tools"))));
    json_decref(d);
    view_changed(gw, t, v, true); /* this replica's clients at once; the others' by the views generation */
    json_t *row = gg_store_view_get(gw->store, t, v, &err);
    if (!row) return answer_error(res, &err);
    gg_http_res_json(res, created ? 201 : 200, with_missing(gw, t, row));
    return GG_HTTP_DONE;
}

int gw_views_get(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    const char *t = gg_http_param(req, "t"), *v = gg_http_param(req, "name");
    if (!gw_admin_allow(gw, req, res, t, GG_SCOPE_GRAPHS_WRITE)) return GG_HTTP_DONE;
    gg_error err = GG_ERROR_INIT;
    json_t *row = gg_store_view_get(gw->store, t, v, &err);
    if (!row) return answer_error(res, &err);
    gg_http_res_json(res, 200, with_missing(gw, t, row));
    return GG_HTTP_DONE;
}

int gw_views_list(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    const char *t = gg_http_param(req, "t");
    if (!gw_admin_allow(gw, req, res, t, GG_SCOPE_GRAPHS_WRITE)) return GG_HTTP_DONE;
    gg_error err = GG_ERROR_INIT;
    json_t *l = gg_store_views_list(gw->store, t, &err);
    if (!l) return answer_error(res, &err);
    gg_http_res_json(res, 200, json_pack("{s:s,s:o}", "tenant", t, "views", l));
    return GG_HTTP_DONE;
}

int gw_views_delete(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    const char *t = gg_http_param(req, "t"), *v = gg_http_param(req, "name");
    gg_principal pr;
    if (!gw_admin_allow_as(gw, req, res, t, GG_SCOPE_GRAPHS_WRITE, &pr)) return GG_HTTP_DONE;
    gg_error err = GG_ERROR_INIT;
    if (!gg_store_view_delete(gw->store, t, v, &err)) return answer_error(res, &err);
    gw_admin_audit(gw, &pr, t, "view.delete", v, NULL);
    view_changed(gw, t, v, true);
    gg_http_res_json(res, 200, json_pack("{s:b}", "deleted", 1));
    return GG_HTTP_DONE;
}
