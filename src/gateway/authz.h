/* authz.h — who may do what on the gateway's routes: API keys and OAuth access tokens on
 * the MCP endpoints and the tenants' admin routes (mcp_http.c, oauth.c), scope and tenant
 * refusals, the Origin/Host check, and admin.c's tenant authorization, audit log and
 * publishing for the other files' admin routes. Not for use outside src/gateway.
 *
 * Ownership: a gg_principal filled by gw_authenticate* belongs to the caller (usually on
 * its stack); a refusal fills the response and returns false, and the handler then only
 * returns. gw_admin_audit steals details; gw_publish_graph's strings must live until done
 * ran, and done steals the body.
 *
 * Threads: everything here runs on HTTP threads (gw_publish_graph's done on an upload
 * thread or before it returns) and is safe to call concurrently; the token checker started
 * by gw_oauth_start keeps its own state (oauth.c, src/auth/).
 */
#ifndef GG_GATEWAY_AUTHZ_H
#define GG_GATEWAY_AUTHZ_H

#include <stdbool.h>

#include "auth/auth.h"
#include "gateway/gateway.h"
#include "http/http.h"

/* ---- HTTP helpers (mcp_http.c) ---------------------------------------------------------- */
/* Authenticate a public request: on failure the response (401/429/503) is filled and false
 * returned. Rate limit included. */
bool gw_authenticate(gg_gateway *gw, gg_http_req *req, gg_http_res *res, gg_principal *out);
/* 403 {"error":{"code":"insufficient_scope","message":"Required scope: x","required_scope":"x"}}. */
void gw_insufficient_scope(gg_http_res *res, gg_scope need);
/* ---- MCP endpoints as OAuth protected resources (oauth.c) ------------------------------ */
typedef struct gw_resource {
    gg_resource r;
    char url[800], meta[840];
} gw_resource;
/* gw_authenticate for the MCP endpoints /mcp/{tenant}/...: an API key, or an access token
 * issued for this endpoint by the tenant's authorization servers; 401s carry the challenge
 * naming the endpoint's protected-resource metadata. */
bool gw_authenticate_mcp(gg_gateway *gw, gg_http_req *req, gg_http_res *res, gg_principal *out);
/* gw_insufficient_scope on an MCP endpoint: for a token also the step-up challenge. */
void gw_insufficient_scope_mcp(gg_gateway *gw, gg_http_req *req, gg_http_res *res, const gg_principal *p,
                               gg_scope need);
/* The tenant's console resource: <public base>/admin/tenants/{t} (its admin routes); url
 * NULL when there is no public base or tenant is no valid name. */
#define GW_TENANT_ADMIN "/admin/tenants/"
void gw_tenant_resource(gg_gateway *gw, const char *tenant, gw_resource *out);
/* gw_authenticate for a tenant's admin routes: an API key, or a token of the tenant's
 * authorization servers whose audience is the tenant's console resource. */
bool gw_authenticate_tenant(gg_gateway *gw, gg_http_req *req, gg_http_res *res, const char *tenant,
                            gg_principal *out);
/* gw_insufficient_scope on a tenant's admin route: for a token also the step-up challenge. */
void gw_insufficient_scope_tenant(gg_gateway *gw, gg_http_res *res, const char *tenant, const gg_principal *p,
                                  gg_scope need);
/* Start the token checker and install the admin and metadata routes. */
bool gw_oauth_start(gg_gateway *gw, gg_error *err);

void gw_oauth_metrics(gg_gateway *gw, gg_strbuf *out);

/* An execution record (borrowed, changed): "caller" {issuer, subject, client_id, scopes} when
 * its key_id is a principal that called with an OAuth token, else nothing added. */
void gw_oauth_caller(gg_gateway *gw, json_t *execution);
/* GET /admin/tenants/{t}/principals: who called with tokens (graphs:write own, or admin). */
int gw_oauth_principals(gg_http_req *req, gg_http_res *res, void *user);
/* 403 when a key of one tenant reaches for another's resources. */
void gw_wrong_tenant(gg_http_res *res);

/* Origin and Host (DNS rebinding) checks; fills 403/421 and returns false on refusal. */
bool gw_origin_host_ok(gg_gateway *gw, gg_http_req *req, gg_http_res *res);

/* admin.c's authorization of a tenant route for other files: false = answered. */
bool gw_admin_allow(gg_gateway *gw, gg_http_req *req, gg_http_res *res, const char *tenant, gg_scope need);
/* The same, keeping the principal (for gw_admin_audit). */
bool gw_admin_allow_as(gg_gateway *gw, gg_http_req *req, gg_http_res *res, const char *tenant, gg_scope need,
                       gg_principal *pr);
/* Publish src as tenant/graph's new active version for pr, exactly as PUT
 * /admin/tenants/{t}/graphs/{g} does (graphs:write on the tenant, name, size, the upload
 * threads and their per-tenant bound and time limit, validation with the downstream check,
 * cycle check, quota, store, install, audit "graph.put"). done gets the REST answer's status
 * and body (stolen; 201 {tenant, graph, version, tools, warnings} or {"error":...}) exactly
 * once, on an upload thread or before this returns; every string must live until then. */
typedef void (*gw_publish_done)(void *user, int status, json_t *body);
void gw_publish_graph(gg_gateway *gw, const gg_principal *pr, const char *tenant, const char *graph, const char *src,
                      size_t len, gw_publish_done done, void *user);
/* false with 404 (or the store's error) filled when tenant does not exist. */
bool gw_admin_tenant_exists(gg_gateway *gw, gg_http_res *res, const char *tenant);
/* An audit log entry for a change by pr (details stolen, may be NULL). */
void gw_admin_audit(gg_gateway *gw, const gg_principal *pr, const char *tenant, const char *action, const char *target,
                    json_t *details);

#endif
