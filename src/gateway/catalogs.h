/* catalogs.h — the tenants' downstream servers as the gateway sees them (catalogs.c, and
 * gw_build_version in gateway.c): the catalogs an upload lists and stores, the definitions
 * a version pins and their approval, the periodic and on-demand re-listing (the refresher),
 * the installed graphs' listening to their streamable-HTTP servers and the notifications
 * those send (relayed to clients through gateway/relay.h). Not for use outside src/gateway.
 *
 * Ownership: a gw_catalog_sink lives on its caller's stack for one upload; the strings it
 * borrows must outlive gw_catalog_sink_done, which frees what it holds. The gateway holds
 * the one gw_refresher (gg_gateway's refresher): started by gateway.c, stopped before the
 * upload threads, freed after every graph is gone. gw_stored_catalog and gw_stored_pins
 * return new references.
 *
 * Threads: the refresher has its own thread and runs each tenant's listing as a job on the
 * upload threads; gw_downstream_notified is called on downstream transport threads;
 * gw_pins_check is the watcher's; the admin routes run on HTTP threads.
 */
#ifndef GG_GATEWAY_CATALOGS_H
#define GG_GATEWAY_CATALOGS_H

#include "gateway/gateway.h"
#include "graph/graph.h"
#include "http/http.h"
#include "mcp/mcp.h"

/* ---- downstream catalogs (catalogs.c) --------------------------------------------------
 * An upload lists its graph's downstream servers and checks its mcp nodes against them
 * (gg_graph_downstream); each catalog listed is stored for the tenant. */
typedef struct gw_catalog_sink {
    gg_gateway *gw;
    const char *tenant;
    gg_graph_downstream check;
    json_t *changed; /* servers whose stored catalog changed: identity → true (or NULL) */
    json_t *errors;  /* catalogs refused (over the tenant's quota): [{server, code, error}] or NULL */
} gw_catalog_sink;
/* Fill the sink for tenant (borrowed) and return &sink->check for gg_graph_options. */
const gg_graph_downstream *gw_catalog_sink_init(gw_catalog_sink *sink, gg_gateway *gw, const char *tenant);
/* After the listing: the installed, compiled graphs of the tenant (but skip, may be NULL)
 * with a proxy entry on a server whose catalog changed are compiled again from their
 * stored source with the new catalog and reinstalled as the same version, which sends
 * their clients notifications/tools/list_changed. Frees what the sink holds. */
void gw_catalog_sink_done(gw_catalog_sink *sink, const char *skip);
/* gg_graph_options.catalog: the tenant's stored catalog of a server (user: a gw_catalog_ctx). */
typedef struct gw_catalog_ctx {
    gg_gateway *gw;
    const char *tenant;
} gw_catalog_ctx;
json_t *gw_stored_catalog(void *user, const char *server, const char *identity);
/* Compile tenant/graph's stored version, from its pinned definitions (gateway.c). */
mcp_server *gw_build_version(gg_gateway *gw, const char *tenant, const char *graph, int version, gg_error *err);
/* gg_graph_options.pinned: what tenant/graph's version pinned (user: a gw_pins_ctx). */
typedef struct gw_pins_ctx {
    gg_gateway *gw;
    const char *tenant, *graph;
    int version;
} gw_pins_ctx;
json_t *gw_stored_pins(void *user, const char *server, const char *identity);
/* After an upload is stored: what its graph pinned, stored with the version. */
void gw_pins_store(gg_gateway *gw, const char *tenant, const char *graph, int version, mcp_server *s);
/* The watcher: a definition change approved anywhere (the pins generation) recompiles the
 * compiled graphs that pin definitions. */
void gw_pins_check(gg_gateway *gw);
/* POST /admin/tenants/{t}/downstream/changes/{id}/approve, .../reject (graphs:write). */
int gw_downstream_approve(gg_http_req *req, gg_http_res *res, void *user);
int gw_downstream_reject(gg_http_req *req, gg_http_res *res, void *user);
/* GET /admin/tenants/{t}/downstream, POST /admin/tenants/{t}/downstream/sync (graphs:write). */
int gw_downstream_list(gg_http_req *req, gg_http_res *res, void *user);
int gw_downstream_sync(gg_http_req *req, gg_http_res *res, void *user);
/* The periodic refresh of every tenant's installed graphs' catalogs (its own thread, the
 * listings on the upload threads). Stop before the upload threads. */
typedef struct gw_refresher gw_refresher;
gw_refresher *gw_refresher_start(gg_gateway *gw);
void gw_refresher_stop(gw_refresher *r); /* then notifications are ignored */
void gw_refresher_free(gw_refresher *r); /* after every graph is gone */
/* An installed graph's streamable-HTTP servers start listening (gg_graph_downstream_listen);
 * called for uploads, recompiles and stored versions compiled on first use. */
void gw_downstream_listen(mcp_server *s);
/* s, tenant/graph's version compiled again (a recompile after a catalog change), takes over
 * the clients of the compilation it replaces (when that one is cached at the same version)
 * for every server whose definition is the same: the downstream sessions, GET streams and
 * stdio children carry on instead of starting again (src/graph/clients.c: ownership). */
void gw_downstream_adopt(gg_gateway *gw, const char *tenant, const char *graph, int version, mcp_server *s);
/* The same as a job on the upload threads (s is referenced until it ran): for graphs
 * compiled on first use, on whatever thread needed them. */
void gw_downstream_listen_later(gg_gateway *gw, const char *tenant, mcp_server *s);
/* /metrics lines of the downstream listen streams. */
void gw_downstream_metrics(gg_gateway *gw, gg_strbuf *out);
/* gg_graph_notify_fn of installed graphs (user = the gateway, tag = "tenant/graph"). */
void gw_downstream_notified(void *user, const char *tag, const char *server, const char *method, const char *uri);

#endif
