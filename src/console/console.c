/* console.c — /console routes: the compiled-in assets with their security headers, and the
 * graph document the console draws diagrams from. */
#include "console/console.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth.h"
#include "console/internal.h"
#include "graph/graph.h"
#include "http/http.h"
#include "store/store.h"

typedef struct console_ctx {
    gg_store *store;
    gg_auth *auth;
    gg_console_hooks hooks;
} console_ctx;

#define CONNECT_SELF "connect-src 'self'"

/* The CSP of the page /console?tenant=T: the sign-in through T's authorization server
 * fetches its metadata, registers and exchanges the code from the browser, so
 * connect-src names T's issuers' origins beside 'self' (and nothing else). */
static char *page_csp(console_ctx *c, gg_http_req *req) {
    const char *t = gg_http_query(req, "tenant");
    char origins[1024] = "";
    gg_error e = GG_ERROR_INIT;
    if (t && c->hooks.connect_origins && gg_auth_valid_name(t, "tenant", &e))
        c->hooks.connect_origins(c->hooks.user, t, origins, sizeof origins);
    gg_error_clear(&e);
    const char *csp = GG_CONSOLE_CSP, *at = strstr(csp, CONNECT_SELF);
    if (!origins[0] || !at) return NULL;
    gg_strbuf b = GG_STRBUF_INIT;
    size_t head = (size_t)(at - csp) + strlen(CONNECT_SELF);
    gg_strbuf_append(&b, csp, head);
    gg_strbuf_putc(&b, ' ');
    gg_strbuf_puts(&b, origins);
    gg_strbuf_puts(&b, csp + head);
    return gg_strbuf_take(&b);
}

/* Headers on every console response: the CSP and its companions (no sniffing, no referrer
 * carrying tenant names elsewhere, no stale console after an upgrade). */
static void security_headers_csp(gg_http_res *res, const char *csp) {
    gg_http_res_header(res, "Content-Security-Policy", csp ? csp : GG_CONSOLE_CSP);
    gg_http_res_header(res, "X-Content-Type-Options", "nosniff");
    gg_http_res_header(res, "Referrer-Policy", "no-referrer");
    gg_http_res_header(res, "Cache-Control", "no-cache");
}

static void security_headers(gg_http_res *res) { security_headers_csp(res, NULL); }

static const gg_console_asset *find_asset(const char *name) {
    for (size_t i = 0; i < gg_console_asset_count; i++)
        if (strcmp(gg_console_assets[i].name, name) == 0) return &gg_console_assets[i];
    return NULL;
}

static int send_asset(gg_http_res *res, const char *name, const char *csp) {
    security_headers_csp(res, csp);
    const gg_console_asset *a = find_asset(name);
    if (!a) {
        gg_http_res_fail(res, "not_found", "no console asset '%.100s'", name);
        return GG_HTTP_DONE;
    }
    gg_http_res_bytes(res, 200, a->content_type, a->data, a->len);
    return GG_HTTP_DONE;
}

static int get_index(gg_http_req *req, gg_http_res *res, void *user) {
    char *csp = page_csp(user, req);
    int rc = send_asset(res, "index.html", csp);
    free(csp);
    return rc;
}

static int get_asset(gg_http_req *req, gg_http_res *res, void *user) {
    (void)user;
    const char *name = gg_http_param(req, "asset");
    /* the page itself lives at /console only, so there is one address to bookmark */
    if (strcmp(name, "index.html") == 0) name = "";
    return send_asset(res, name, NULL);
}

/* The key must be valid, within its rate, and hold graphs:write on tenant (or admin):
 * the same rule as GET /admin/tenants/{t}/graphs/{g}, whose source this route reshapes. */
static bool authorize(console_ctx *c, gg_http_req *req, gg_http_res *res, const char *tenant) {
    /* the admin API's own check, so a tenant's console token works here too */
    if (c->hooks.authorize) return c->hooks.authorize(c->hooks.user, req, res, tenant, GG_SCOPE_GRAPHS_WRITE);
    gg_principal p;
    /* the same checks, codes and bodies as the admin API's answers (auth/http_auth.c) */
    if (!gg_auth_http_check(c->auth, req, res, &p)) return false;
    unsigned missing = 0;
    if (!gg_auth_allows(&p, tenant, GG_SCOPE_GRAPHS_WRITE, &missing)) {
        if (missing == 0) gg_http_res_fail(res, "forbidden", "this API key belongs to another tenant");
        else gg_auth_http_insufficient_scope(res, GG_SCOPE_GRAPHS_WRITE);
        return false;
    }
    return true;
}

static int parse_version(const char *s) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    return (errno || *end || end == s || v < 1 || v > 1000000000) ? 0 : (int)v;
}

/* {tenant, graph, version, document}: the stored version's source as JSON. */
static int get_document(gg_http_req *req, gg_http_res *res, void *user) {
    console_ctx *c = user;
    const char *t = gg_http_param(req, "t"), *g = gg_http_param(req, "g");
    security_headers(res);
    if (!authorize(c, req, res, t)) return GG_HTTP_DONE;
    int v = parse_version(gg_http_param(req, "v"));
    if (!v) return gg_http_res_fail(res, "bad_request", "version: an integer from 1"), GG_HTTP_DONE;
    gg_graph_source s = {0};
    gg_error err = GG_ERROR_INIT;
    json_t *doc = NULL;
    if (gg_store_graph_get_version(c->store, t, g, v, &s, &err))
        doc = gg_graph_document_json(s.source, s.source_len, &err);
    gg_store_graph_source_clear(&s);
    if (!doc) {
        gg_http_res_error_from(res, 0, &err);
        gg_error_clear(&err);
        return GG_HTTP_DONE;
    }
    gg_http_res_json(res, 200, json_pack("{s:s,s:s,s:i,s:o}", "tenant", t, "graph", g, "version", v, "document", doc));
    return GG_HTTP_DONE;
}

/* {ok, document, diagnostics}: a draft (the request body, YAML or JSON) parsed and
 * validated as an upload would be, without storing it, so a graph author sees the diagram
 * and every error on it before uploading. Downstream policy is not applied here (the
 * upload applies it); nothing is started. */
static int post_check(gg_http_req *req, gg_http_res *res, void *user) {
    console_ctx *c = user;
    security_headers(res);
    if (!authorize(c, req, res, gg_http_param(req, "t"))) return GG_HTTP_DONE;
    size_t len = 0;
    const char *src = gg_http_body(req, &len);
    if (len == 0) return gg_http_res_fail(res, "bad_request", "the body must be a graph (YAML or JSON)"), GG_HTTP_DONE;
    gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
    gg_graph_options o = {0};
    gg_graph_unref(gg_graph_load_string(src, len, "draft", &o, &d));
    gg_error err = GG_ERROR_INIT;
    json_t *doc = gg_graph_document_json(src, len, &err);
    gg_error_clear(&err);
    json_t *diags = json_array();
    for (size_t i = 0; diags && i < d.count; i++) json_array_append_new(diags, gg_graph_diag_json(&d.items[i]));
    json_t *out = json_pack("{s:b,s:o,s:o*}", "ok", d.errors == 0, "document", doc ? doc : json_null(), "diagnostics", diags);
    gg_graph_diags_free(&d);
    if (!out) return gg_http_res_fail(res, "oom", "out of memory"), GG_HTTP_DONE;
    gg_http_res_json(res, 200, out);
    return GG_HTTP_DONE;
}

static void on_shutdown(gg_app *app, void *user) {
    (void)app;
    free(user);
}

bool gg_console_install(gg_app *app, struct gg_auth *auth, const gg_console_hooks *hooks, gg_error *err) {
    console_ctx *c = calloc(1, sizeof *c);
    if (!c) return gg_error_set(err, "oom", "out of memory"), false;
    c->store = app->store;
    c->auth = auth;
    if (hooks) c->hooks = *hooks;
    gg_router *r = gg_http_server_router(app->http);
    if (!gg_router_add(r, GG_LISTENER_PUBLIC, "GET", "/console", get_index, c, err) ||
        !gg_router_add(r, GG_LISTENER_PUBLIC, "GET", "/console/{asset}", get_asset, c, err) ||
        !gg_router_add(r, GG_LISTENER_PUBLIC, "GET", "/console/api/tenants/{t}/graphs/{g}/versions/{v}/document",
                       get_document, c, err) ||
        !gg_router_add(r, GG_LISTENER_PUBLIC, "POST", "/console/api/tenants/{t}/check", post_check, c, err) ||
        !gg_app_on_shutdown(app, on_shutdown, c)) {
        if (!err->code[0]) gg_error_set(err, "too_many", "no room for the console's shutdown callback");
        free(c);
        return false;
    }
    return true;
}
