/* forward.c — one request sent, unchanged, to another replica's internal listener
 * (mcp_forward_start): the retry of a relay round whose run is parked there
 * (gateway/mcp_http.c). A raw pass-through of the streamable-HTTP client (client_http.c
 * mcp_http_raw_start) does the exchange; what is said here is the forward's own terms: the
 * URL comes from a sealed state (the gateway's to trust), so no egress policy applies; errors
 * name "the other replica", never its URL; a plain answer is bounded at
 * MCP_FORWARD_MAX_BYTES and charged to the tenant. */
#include "mcp/mcp.h"

/* See mcp.h. */
void mcp_forward_start(mcp_downstream *ds, const char *url, const char *owner, const char *const *headers, const char *body, size_t len,
                       int timeout_ms, atomic_int *cancel, mcp_http_raw_stream_fn stream, mcp_http_raw_done_fn done,
                       void *user) {
    mcp_http_raw rq = {.url = url,
                       .name = "the other replica",
                       .owner = owner,
                       .policy = NULL,
                       .headers = headers,
                       .body = body,
                       .len = len,
                       .max_bytes = MCP_FORWARD_MAX_BYTES,
                       .downstream = ds,
                       .timeout_ms = timeout_ms > 0 ? timeout_ms : 1,
                       .cancel = cancel,
                       .stream = stream,
                       .done = done,
                       .user = user};
    mcp_http_raw_start(&rq);
}
