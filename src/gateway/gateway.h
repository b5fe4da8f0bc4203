/* gateway.h — graphgate's product surface: every graph version served as an MCP server
 * (public /mcp/{tenant}/{graph} with API keys, internal /internal/mcp/{tenant}/{graph}
 * without), other providers mounted at /mcp/{name}, the tool-call worker pool, the graph
 * registry with its active-version pointers, the admin REST API and the internal plain
 * tool-call endpoint.
 *
 * Ownership: the gateway belongs to the gg_app it was installed into and is freed by the
 * shutdown callback it registers; callers borrow it. It owns the authenticator, the history
 * writer, the sessions, the worker pool and the registry; it borrows the app's store and
 * configuration. Mounted providers are referenced (mcp_provider_ref) until replaced or
 * shutdown.
 */
#ifndef GG_GATEWAY_H
#define GG_GATEWAY_H

#include <stdbool.h>

#include "app/app.h"
#include "mcp/provider.h"
#include "util/util.h"

typedef struct gg_gateway gg_gateway;
struct gg_auth;
struct gg_history;

/* Install the gateway into a `serve` application before its listeners start: creates the
 * authenticator and history writer (marking runs interrupted by a crash), loads every
 * active graph version from the store, registers the MCP, admin and internal routes and a
 * shutdown callback (drain or cancel runs, record them, stop the writer). NULL + err. */
gg_gateway *gg_gateway_install(gg_app *app, gg_error *err);

/* Serve provider as an MCP endpoint at /mcp/{name} (public, API key with tools:read /
 * tools:execute, any tenant) and /internal/mcp/{name} (internal, no auth), with the same
 * sessions, worker pool and limits as graphs. Routes are added on the first mount of a
 * name, which must happen before the listeners start; mounting the same name again later
 * swaps the provider atomically (e.g. after a reload; calls in flight finish on the old
 * one). name must be a fixed route word such as "nodes" that no tenant can take. */
bool gg_gateway_mount(gg_gateway *gw, const char *name, mcp_provider *provider, gg_error *err);
/* Let downstream streamable-HTTP servers carry `auth` settings: installs the OAuth client
 * (src/auth) as the auth provider factory of ds (the caller's downstream context). Once,
 * before its clients start (run, conformance-client; serve installs its own). */
struct mcp_downstream;
void gg_gateway_downstream_auth_install(struct mcp_downstream *ds);
/* Mount the authoring toolkit (validate_graph, test_jsonata, test_jsonlogic, list_downstream_tools, run_graph,
 * put_graph) at /mcp/toolkit (toolkit.c, toolkit_run.c); answers per caller tenant; only put_graph (graphs:write)
 * stores anything. */
bool gg_gateway_mount_toolkit(gg_gateway *gw, gg_error *err);

/* The authenticator and history writer the gateway runs, for other installers (the
 * node-spec REST routes use the same keys, scopes and rate limits). Borrowed. */
struct gg_auth *gg_gateway_auth(gg_gateway *gw);
struct gg_history *gg_gateway_history(gg_gateway *gw);

/* The web console's seam (src/console is above the gateway; cmd_serve wires these, user the
 * gg_gateway): authorize req on tenant's admin routes for scope `need` (a gg_scope) as the
 * admin API does, an API key or the tenant's console token, filling res on failure; and the
 * origins of tenant's authorization servers ("scheme://host[:port]", space-separated, "" for
 * none) that the console's sign-in page may connect to. */
struct gg_http_req;
struct gg_http_res;
bool gg_gateway_tenant_authorize(void *user, struct gg_http_req *req, struct gg_http_res *res, const char *tenant,
                                 unsigned need);
void gg_gateway_console_origins(void *user, const char *tenant, char *buf, size_t n);

/* Bring the in-memory registry in line with the store's active versions now (the gateway
 * also does this by itself within a second of any change made by another process). */
bool gg_gateway_sync(gg_gateway *gw, gg_error *err);

#endif
