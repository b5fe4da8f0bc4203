/* downstream.c — where an upload's downstream listing goes: each catalog the graph loader
 * fetched (src/graph/downstream.c) is stored for the tenant, so `graphgate mcp tools` and
 * the node-spec service see what the servers offered at the last upload. Runs on the upload
 * thread, never on a polling thread. */
#include "gateway/internal.h"

static void catalog_fetched(void *user, const char *server, json_t *tools, long long fetched_ms) {
    gw_catalog_sink *sink = user;
    gg_error err = GG_ERROR_INIT;
    if (!gg_store_downstream_put(sink->gw->store, sink->tenant, server, tools, fetched_ms, &err))
        gg_log(GG_LOG_WARN, "storing the tool catalog of server '%s' of tenant '%s' failed: %s", server, sink->tenant,
               err.message ? err.message : err.code);
    gg_error_clear(&err);
}

const gg_graph_downstream *gw_catalog_sink_init(gw_catalog_sink *sink, gg_gateway *gw, const char *tenant) {
    *sink = (gw_catalog_sink){.gw = gw, .tenant = tenant};
    sink->check = (gg_graph_downstream){.mode = GG_CHECK_ERROR, .fetched = catalog_fetched, .user = sink};
    return &sink->check;
}
