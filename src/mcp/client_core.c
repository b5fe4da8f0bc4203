/* client.c — the transport-independent MCP client front (mcp_client); the policy that
 * decides which downstream servers may be reached is in policy.c. */
#include "mcp/mcp.h"

#include <stdlib.h>
#include <string.h>

struct mcp_client {
    const mcp_client_ops *ops;
    void *impl;
};

/* A client for one downstream server; the transport starts lazily on the first request. */
mcp_client *mcp_client_new(const mcp_server_config *cfg, const mcp_client_policy *policy, gg_error *err) {
    mcp_client *c = calloc(1, sizeof *c);
    if (!c) {
        gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    c->impl = cfg->transport == MCP_TRANSPORT_HTTP ? mcp_http_new(cfg, policy, &c->ops, err)
                                                   : mcp_stdio_new(cfg, policy, &c->ops, err);
    if (!c->impl) {
        free(c);
        return NULL;
    }
    return c;
}

/* Stop the transport (child process or HTTP session) and free the client. */
void mcp_client_free(mcp_client *c) {
    if (!c) return;
    c->ops->destroy(c->impl);
    free(c);
}

/* One JSON-RPC request through the transport (see mcp.h for errors and threading). */
json_t *mcp_client_request(mcp_client *c, const char *method, json_t *params, int timeout_ms, volatile int *cancel,
                           gg_error *err) {
    return c->ops->request(c->impl, method, params, timeout_ms, cancel, err);
}

/* tools/call {name, arguments}; returns the CallToolResult. */
json_t *mcp_client_call_tool(mcp_client *c, const char *tool, json_t *arguments, int timeout_ms, volatile int *cancel,
                             gg_error *err) {
    json_t *params = json_pack("{s:s, s:O}", "name", tool, "arguments", arguments ? arguments : json_object());
    if (!params) {
        gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    json_t *r = mcp_client_request(c, "tools/call", params, timeout_ms, cancel, err);
    json_decref(params);
    return r;
}

/* Diagnostics: the child's recent stderr and how often the transport was (re)started. */
char *mcp_client_stderr_tail(mcp_client *c) { return c->ops->stderr_tail ? c->ops->stderr_tail(c->impl) : strdup(""); }
int mcp_client_start_count(mcp_client *c) { return c->ops->start_count ? c->ops->start_count(c->impl) : 0; }
