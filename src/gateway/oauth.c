/* oauth.c — the gateway's MCP endpoints as OAuth 2.1 protected resources (MCP
 * authorization): a tenant's authorization servers administered over REST, the RFC 9728
 * protected-resource metadata of every tenant endpoint, and the credentials check of the
 * MCP routes (API key or access token; src/auth does the checking).
 *
 * Why resources are named from public_url and never from the Host header: the resource URL
 * is the audience a token must carry, so a client that could choose it (by sending another
 * Host) could make the gateway accept tokens minted for another server.
 */
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "gateway/authz.h"
#include "gateway/credentials.h"
#include "gateway/internal.h"
#include "gateway/relay.h"

#define WELL_KNOWN "/.well-known/oauth-protected-resource"

/* ---- the public base URL ----------------------------------------------------------------- */

static bool loopback_listen(const char *listen) {
    return !strncmp(listen, "127.", 4) || !strncmp(listen, "localhost:", 10) || !strncmp(listen, "[::1]:", 6);
}

/* public_url, else http://<listen host>:<bound port> when the public listener is on a
 * loopback address (a developer's machine, the tests); else none (tokens are not taken). */
static void compute_base(gg_gateway *gw) {
    const gg_config *c = gw->cfg;
    if (c->public_url && *c->public_url) return; /* set before the start */
    if (c->listen && loopback_listen(c->listen)) {
        char host[128];
        gg_strcopy(host, sizeof host, c->listen);
        char *colon = strrchr(host, ':');
        if (colon) *colon = '\0';
        snprintf(gw->public_base, sizeof gw->public_base, "http://%s:%u", host,
                 gg_http_server_port(gw->app->http, GG_LISTENER_PUBLIC));
    }
    atomic_store_explicit(&gw->public_base_ready, true, memory_order_release);
}

/* The public base, or "" while it is not known yet (the first microseconds after binding). */
static const char *base(gg_gateway *gw) {
    return atomic_load_explicit(&gw->public_base_ready, memory_order_acquire) ? gw->public_base : "";
}

static void on_started(gg_http_server *s, void *user) {
    (void)s;
    compute_base(user);
}

/* ---- resources ------------------------------------------------------------------------- */

/* a, b and c into dst of size bytes, truncated and NUL-terminated: snprintf("%s%s%s")
 * without the formatting machinery (twice on every MCP call) */
static void join3(char *dst, size_t size, const char *a, const char *b, const char *c) {
    const char *part[3] = {a, b, c};
    size_t n = 0;
    for (int i = 0; i < 3; i++) {
        size_t len = strlen(part[i]), room = size - 1 - n;
        if (len > room) len = room;
        memcpy(dst + n, part[i], len);
        n += len;
    }
    dst[n] = '\0';
}

/* The resource a public MCP request is for: its URL is the public base and the request's
 * own (routed, decoded) path. */
static void resource_of(gg_gateway *gw, gg_http_req *req, gw_resource *out) {
    out->r = (gg_resource){0}; /* not the 1.6 KB of URL buffers: every MCP call passes here */
    out->url[0] = out->meta[0] = '\0';
    out->r.tenant = gg_http_param(req, "tenant");
    const char *path = gg_http_path(req), *b = base(gw);
    if (!b[0] || !path || strlen(path) > 512) return;
    join3(out->url, sizeof out->url, b, "", path);
    join3(out->meta, sizeof out->meta, b, WELL_KNOWN, path);
    out->r.url = out->url;
    out->r.metadata_url = out->meta;
}

bool gw_authenticate_mcp(gg_gateway *gw, gg_http_req *req, gg_http_res *res, gg_principal *out) {
    gw_resource r;
    resource_of(gw, req, &r);
    return gg_auth_http_check_resource(gw->auth, gw->oauth, req, res, &r.r, out);
}

void gw_insufficient_scope_mcp(gg_gateway *gw, gg_http_req *req, gg_http_res *res, const gg_principal *p,
                               gg_scope need) {
    gw_resource r;
    resource_of(gw, req, &r);
    gg_auth_http_insufficient_scope_at(res, gw->oauth, &r.r, p, need);
}

/* The tenant's console resource: its admin routes, named by their common prefix
 * /admin/tenants/{t} (docs/oauth.md says why not /console/...). No URL for a name that is
 * not a tenant name, so a crafted path can never name another resource. */
void gw_tenant_resource(gg_gateway *gw, const char *tenant, gw_resource *out) {
    memset(out, 0, sizeof *out);
    out->r.tenant = tenant;
    out->r.console = true;
    const char *b = base(gw);
    gg_error e = GG_ERROR_INIT;
    bool ok = b[0] && tenant && gg_auth_valid_name(tenant, "tenant", &e);
    gg_error_clear(&e);
    if (!ok) return;
    snprintf(out->url, sizeof out->url, "%s" GW_TENANT_ADMIN "%s", b, tenant);
    snprintf(out->meta, sizeof out->meta, "%s" WELL_KNOWN GW_TENANT_ADMIN "%s", b, tenant);
    out->r.url = out->url;
    out->r.metadata_url = out->meta;
}

bool gw_authenticate_tenant(gg_gateway *gw, gg_http_req *req, gg_http_res *res, const char *tenant,
                            gg_principal *out) {
    gw_resource r;
    gw_tenant_resource(gw, tenant, &r);
    return gg_auth_http_check_resource(gw->auth, gw->oauth, req, res, &r.r, out);
}

void gw_insufficient_scope_tenant(gg_gateway *gw, gg_http_res *res, const char *tenant, const gg_principal *p,
                                  gg_scope need) {
    gw_resource r;
    gw_tenant_resource(gw, tenant, &r);
    gg_auth_http_insufficient_scope_at(res, gw->oauth, &r.r, p, need);
}

/* RFC 9728 metadata of resource url (tenant t's), naming the token scopes that grant want. */
static int metadata_answer(gg_gateway *gw, gg_http_res *res, const char *t, const char *url, const char *name,
                           unsigned want) {
    gg_error err = GG_ERROR_INIT;
    json_t *def = base(gw)[0] && t ? gg_oauth_definition(gw->oauth, t, &err) : NULL;
    if (!def) {
        if (err.code[0] && strcmp(err.code, "not_found") != 0) gg_http_res_error_from(res, 0, &err);
        else gg_http_res_fail(res, "not_found", "no OAuth protected resource here");
        gg_error_clear(&err);
        return GG_HTTP_DONE;
    }
    json_t *servers = json_array();
    size_t i;
    json_t *one;
    json_array_foreach(json_object_get(def, "issuers"), i, one) json_array_append(servers, json_object_get(one, "issuer"));
    char scopes[512];
    gg_oauth_scopes_text_for(def, want, scopes, sizeof scopes);
    json_t *list = json_array();
    for (char *s = scopes, *e; *s; s = *e ? e + 1 : e) {
        e = strchr(s, ' ');
        if (!e) e = s + strlen(s);
        json_array_append_new(list, json_stringn(s, (size_t)(e - s)));
    }
    json_t *body = json_pack("{s:s,s:o,s:o,s:[s],s:s}", "resource", url, "authorization_servers", servers,
                             "scopes_supported", list, "bearer_methods_supported", "header", "resource_name", name);
    json_decref(def);
    /* browser-based MCP clients read it from another origin: public, and carries nothing secret */
    gg_http_res_header(res, "Access-Control-Allow-Origin", "*");
    gg_http_res_header(res, "Cache-Control", "max-age=300");
    if (!body || !gg_http_res_json(res, 200, body)) gg_http_res_fail(res, "internal_error", "out of memory");
    return GG_HTTP_DONE;
}

/* GET /.well-known/oauth-protected-resource/mcp/{tenant}/... (RFC 9728): public, cached by
 * clients; 404 alike for an unknown tenant and one without authorization servers. */
static int protected_resource(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    const char *path = gg_http_path(req);
    char url[1024], name[160];
    snprintf(url, sizeof url, "%s%s", base(gw), path + strlen(WELL_KNOWN));
    snprintf(name, sizeof name, "graphgate %s", path + strlen(WELL_KNOWN "/mcp/"));
    return metadata_answer(gw, res, gg_http_param(req, "tenant"), url, name,
                           GG_SCOPE_TOOLS_READ | GG_SCOPE_TOOLS_EXECUTE | GG_SCOPE_HEALTH_CHECK);
}

/* GET /.well-known/oauth-protected-resource/admin/tenants/{tenant}: the console resource. */
static int console_resource(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    const char *t = gg_http_param(req, "tenant");
    gw_resource r;
    gw_tenant_resource(gw, t, &r);
    if (!r.r.url) return gg_http_res_fail(res, "not_found", "no OAuth protected resource here"), GG_HTTP_DONE;
    char name[160];
    snprintf(name, sizeof name, "graphgate console of %s", t);
    return metadata_answer(gw, res, t, r.url, name, GG_SCOPE_GRAPHS_WRITE);
}

/* ---- the console's seam (src/console calls these through gg_console_hooks) ---------------- */

bool gg_gateway_tenant_authorize(void *user, gg_http_req *req, gg_http_res *res, const char *tenant, unsigned need) {
    return gw_admin_allow(user, req, res, tenant, (gg_scope)need);
}

/* "scheme://host[:port]" of url into out when it is plain enough for a CSP source. */
static bool origin_of(const char *url, char *out, size_t n) {
    const char *p = strstr(url, "://");
    if (!p || n < 16) return false;
    size_t i = (size_t)(p - url) + 3;
    while (url[i] && url[i] != '/') i++;
    if (i >= n) return false;
    for (size_t j = 0; j < i; j++)
        if (!(url[j] == ':' || url[j] == '/' || url[j] == '.' || url[j] == '-' || url[j] == '[' || url[j] == ']' ||
              (url[j] >= '0' && url[j] <= '9') || (url[j] >= 'a' && url[j] <= 'z') || (url[j] >= 'A' && url[j] <= 'Z')))
            return false;
    memcpy(out, url, i);
    out[i] = '\0';
    return true;
}

void gg_gateway_console_origins(void *user, const char *tenant, char *buf, size_t n) {
    gg_gateway *gw = user;
    gg_strbuf b = GG_STRBUF_INIT;
    gg_strbuf_use(&b, buf, n);
    if (n) buf[0] = '\0';
    gg_error err = GG_ERROR_INIT;
    json_t *def = tenant ? gg_oauth_definition(gw->oauth, tenant, &err) : NULL;
    gg_error_clear(&err);
    size_t i;
    json_t *one;
    json_array_foreach(json_object_get(def, "issuers"), i, one) {
        char o[300];
        const char *iss = json_string_value(json_object_get(one, "issuer"));
        if (!iss || !origin_of(iss, o, sizeof o) || b.len + strlen(o) + 2 > n) continue;
        if (b.len) gg_strbuf_putc(&b, ' ');
        gg_strbuf_puts(&b, o);
    }
    json_decref(def);
}

/* ---- REST: /admin/tenants/{t}/oauth (admin scope) ----------------------------------------- */

static int answer_error(gg_http_res *res, gg_error *err) {
    gg_http_res_error_from(res, 0, err);
    gg_error_clear(err);
    return GG_HTTP_DONE;
}

/* The stored definition with each issuer's live state on this replica. */
static json_t *with_status(gg_gateway *gw, const char *t, json_t *row) {
    json_t *issuers = json_object_get(json_object_get(row, "definition"), "issuers");
    size_t i;
    json_t *one;
    json_array_foreach(issuers, i, one) json_object_set_new(one, "status", gg_oauth_issuer_status(gw->oauth, one));
    char url[1024];
    const char *b = base(gw);
    if (b[0]) {
        snprintf(url, sizeof url, "%s" WELL_KNOWN "/mcp/%s/{graph}", b, t);
        json_object_set_new(row, "resource_metadata", json_string(url));
        snprintf(url, sizeof url, "%s" WELL_KNOWN GW_TENANT_ADMIN "%s", b, t);
        json_object_set_new(row, "console_resource_metadata", json_string(url));
    } else {
        json_object_set_new(row, "resource_metadata", json_null());
        json_object_set_new(row, "warning", json_string("no public_url: tokens are not accepted until it is set"));
    }
    return row;
}

static int oauth_put(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    const char *t = gg_http_param(req, "t");
    gg_principal pr;
    if (!gw_admin_allow_as(gw, req, res, NULL, GG_SCOPE_ADMIN, &pr) || !gw_admin_tenant_exists(gw, res, t))
        return GG_HTTP_DONE;
    gg_error err = GG_ERROR_INIT;
    json_t *in = gg_http_body_object(req, "a JSON definition like {\"issuers\": [{\"issuer\": \"https://as.example\"}]}",
                                     &err);
    if (!in) return answer_error(res, &err);
    json_t *def = gg_oauth_definition_check(in, &err);
    json_decref(in);
    if (!def || !gg_store_oauth_put(gw->store, t, def, &err)) {
        json_decref(def);
        return answer_error(res, &err);
    }
    gw_admin_audit(gw, &pr, t, "oauth.put", t,
                   json_pack("{s:I}", "issuers", (json_int_t)json_array_size(json_object_get(def, "issuers"))));
    json_decref(def);
    gg_oauth_tenant_changed(gw->oauth, t); /* this replica at once; the others by the generation */
    json_t *row = gg_store_oauth_get(gw->store, t, &err);
    if (!row) return answer_error(res, &err);
    json_decref(gg_oauth_definition(gw->oauth, t, &err)); /* start fetching its keys now */
    gg_error_clear(&err);
    gg_http_res_json(res, 200, with_status(gw, t, row));
    return GG_HTTP_DONE;
}

static int oauth_get(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    const char *t = gg_http_param(req, "t");
    if (!gw_admin_allow(gw, req, res, NULL, GG_SCOPE_ADMIN)) return GG_HTTP_DONE;
    gg_error err = GG_ERROR_INIT;
    json_t *row = gg_store_oauth_get(gw->store, t, &err);
    if (!row) return answer_error(res, &err);
    json_decref(gg_oauth_definition(gw->oauth, t, &err));
    gg_error_clear(&err);
    gg_http_res_json(res, 200, with_status(gw, t, row));
    return GG_HTTP_DONE;
}

static int oauth_delete(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    const char *t = gg_http_param(req, "t");
    gg_principal pr;
    if (!gw_admin_allow_as(gw, req, res, NULL, GG_SCOPE_ADMIN, &pr)) return GG_HTTP_DONE;
    gg_error err = GG_ERROR_INIT;
    if (!gg_store_oauth_delete(gw->store, t, &err)) return answer_error(res, &err);
    gw_admin_audit(gw, &pr, t, "oauth.delete", t, NULL);
    gg_oauth_tenant_changed(gw->oauth, t);
    gg_http_res_json(res, 200, json_pack("{s:b}", "deleted", 1));
    return GG_HTTP_DONE;
}

/* ---- who called ------------------------------------------------------------------------ */

void gw_oauth_caller(gg_gateway *gw, json_t *e) {
    const char *t = json_string_value(json_object_get(e, "tenant")), *k = json_string_value(json_object_get(e, "key_id"));
    if (!t || !k || !*k) return;
    gg_error err = GG_ERROR_INIT;
    json_t *p = gg_store_principal_get(gw->store, t, k, &err);
    gg_error_clear(&err);
    if (!p) return;
    json_object_del(p, "id");
    json_object_set_new(e, "caller", p);
}

int gw_oauth_principals(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    const char *t = gg_http_param(req, "t");
    if (!gw_admin_allow(gw, req, res, t, GG_SCOPE_GRAPHS_WRITE)) return GG_HTTP_DONE;
    gg_error err = GG_ERROR_INIT;
    json_t *l = gg_store_principals_list(gw->store, t, &err);
    if (!l) return answer_error(res, &err);
    gg_http_res_json(res, 200, json_pack("{s:s,s:o}", "tenant", t, "principals", l));
    return GG_HTTP_DONE;
}

/* ---- life ------------------------------------------------------------------------------ */

bool gw_oauth_start(gg_gateway *gw, gg_error *err) {
    const gg_config *c = gw->cfg;
    /* DPoP nonces: replicas sharing session.secret accept each other's */
    unsigned char nk[32];
    static const char ctx[] = "graphgate dpop nonce v1";
    bool shared = c->session_secret && *c->session_secret;
    if (shared)
        crypto_generichash(nk, sizeof nk, (const unsigned char *)ctx, sizeof ctx - 1,
                           (const unsigned char *)c->session_secret,
                           strlen(c->session_secret) > crypto_generichash_KEYBYTES_MAX ? crypto_generichash_KEYBYTES_MAX
                                                                                       : strlen(c->session_secret));
    /* introspection client secrets resolve through the tenant's secret store, as graphs' do */
    const gg_graph_secrets *sec = gw_secrets_seam(gw);
    gg_oauth_options o = {c->oauth_refresh_ms / 1000.0, c->oauth_unknown_kid_interval_ms / 1000.0,
                          c->oauth_fetch_timeout_ms / 1000.0, c->oauth_max_document_bytes, shared ? nk : NULL,
                          sec ? sec->resolve : NULL, sec ? sec->user : NULL};
    gw->oauth = gg_oauth_new(gw->store, &o, err);
    sodium_memzero(nk, sizeof nk);
    if (!gw->oauth) return false;
    if (c->public_url && *c->public_url) {
        gg_strcopy(gw->public_base, sizeof gw->public_base, c->public_url);
        atomic_store(&gw->public_base_ready, true);
    }
    if (!gg_http_server_on_start(gw->app->http, on_started, gw)) {
        gg_error_set(err, "too_many", "no room for the gateway's start callback");
        return false;
    }
    static const struct {
        const char *method, *pattern;
        gg_http_handler fn;
    } routes[] = {
        {"PUT", "/admin/tenants/{t}/oauth", oauth_put},
        {"GET", "/admin/tenants/{t}/oauth", oauth_get},
        {"DELETE", "/admin/tenants/{t}/oauth", oauth_delete},
        {"GET", WELL_KNOWN "/mcp/{tenant}/{graph}", protected_resource},
        {"GET", WELL_KNOWN "/mcp/{tenant}/" GW_TENANTWIDE, protected_resource},
        {"GET", WELL_KNOWN "/mcp/{tenant}/" GW_VIEWS_PREFIX "{view}", protected_resource},
        {"GET", WELL_KNOWN GW_TENANT_ADMIN "{tenant}", console_resource},
    };
    gg_router *r = gg_http_server_router(gw->app->http);
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (!gg_router_add(r, GG_LISTENER_PUBLIC, routes[i].method, routes[i].pattern, routes[i].fn, gw, err))
            return false;
    return true;
}

void gw_oauth_metrics(gg_gateway *gw, gg_strbuf *out) {
    if (!gw->oauth) return;
    unsigned long fetches, failures, calls, ifail, refused;
    gg_oauth_metrics(gw->oauth, &fetches, &failures);
    gg_oauth_introspection_metrics(gw->oauth, &calls, &ifail, &refused);
    gg_strbuf_printf(out,
                     "# HELP graphgate_oauth_introspections_total Opaque access tokens sent to an authorization server's introspection endpoint.\n"
                     "# TYPE graphgate_oauth_introspections_total counter\n"
                     "graphgate_oauth_introspections_total %lu\n"
                     "# HELP graphgate_oauth_introspection_failures_total Introspections without a usable answer (timeout, error status, not JSON).\n"
                     "# TYPE graphgate_oauth_introspection_failures_total counter\n"
                     "graphgate_oauth_introspection_failures_total %lu\n"
                     "# HELP graphgate_oauth_introspections_refused_total Opaque tokens refused (503) because their issuer's introspection concurrency or rate was spent.\n"
                     "# TYPE graphgate_oauth_introspections_refused_total counter\n"
                     "graphgate_oauth_introspections_refused_total %lu\n",
                     calls, ifail, refused);
    gg_strbuf_printf(out,
                     "# HELP graphgate_oauth_key_fetches_total Metadata and JWKS fetches of tenants' authorization servers.\n"
                     "# TYPE graphgate_oauth_key_fetches_total counter\n"
                     "graphgate_oauth_key_fetches_total %lu\n"
                     "# HELP graphgate_oauth_key_fetch_failures_total Key fetches that failed (the old keys stay).\n"
                     "# TYPE graphgate_oauth_key_fetch_failures_total counter\n"
                     "graphgate_oauth_key_fetch_failures_total %lu\n",
                     fetches, failures);
}
