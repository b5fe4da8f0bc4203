/* trace.c — the server span of one tools/call (telemetry.h): the caller's W3C context comes
 * from params._meta (MCP) or else the traceparent/tracestate headers (HTTP); the call then
 * runs under the span's context, so its nodes, its downstream calls and its execution
 * record share the trace. With telemetry off nothing is allocated and a client's context
 * passes through unchanged. */
#include "gateway/calls.h"

#include <stdlib.h>
#include <string.h>

/* req may be NULL (a batch's call, started on a worker: its context was taken from the
 * request's headers when the batch was read). */
gg_span *gw_call_span_begin(gg_http_req *req, mcp_call *call, const char *tenant, const char *graph, int version,
                            const char *key_id) {
    gg_trace_ctx *tc = mcp_call_trace(call);
    if (!tc->valid && req) {
        /* tracestate counts only beside a traceparent (gg_trace_parse): without one, a header
         * lookup less (each walks the request's whole header list) */
        const char *tp = gg_http_header(req, "traceparent");
        gg_trace_parse(tc, tp, tp ? gg_http_header(req, "tracestate") : NULL);
    }
    if (!gg_tel_enabled()) return NULL;
    gg_span *s = malloc(sizeof *s);
    if (!s) return NULL;
    char name[160];
    /* a proxied resources/prompts request (mcp_call_tool is then its method) is named by it */
    bool fwd = mcp_call_forwarded(call);
    snprintf(name, sizeof name, fwd ? "%s" : "tools/call %s", mcp_call_tool(call) ? mcp_call_tool(call) : "");
    gg_span_begin(s, tc, GG_SPAN_SERVER, name);
    *tc = s->ctx; /* children (nodes, downstream calls) start under this span */
    gg_span_attr_str(s, "rpc.system", "mcp");
    gg_span_attr_str(s, "rpc.method", fwd ? mcp_call_tool(call) : "tools/call");
    gg_span_attr_str(s, "graphgate.tenant", tenant);
    gg_span_attr_str(s, "graphgate.graph", graph);
    if (version > 0) gg_span_attr_int(s, "graphgate.graph.version", version);
    gg_span_attr_str(s, "graphgate.tool", mcp_call_tool(call));
    if (key_id && *key_id) gg_span_attr_str(s, "graphgate.key_id", key_id);
    const mcp_caller *who = mcp_call_caller(call);
    if (who && who->issuer) { /* an OAuth principal (OpenTelemetry's enduser.*); never the token */
        gg_span_attr_str(s, "enduser.id", who->subject);
        gg_span_attr_str(s, "graphgate.caller.issuer", who->issuer);
        gg_span_attr_str(s, "graphgate.caller.client_id", who->client_id);
    }
    if (who && who->scopes[0]) gg_span_attr_str(s, "enduser.scope", who->scopes);
    if (req) gg_span_attr_str(s, "http.request_id", gg_http_request_id(req));
    return s;
}

/* End and free the span: status from the call, or refused (never ran) with its reason. */
void gw_call_span_end(gg_span *s, mcp_call *call, const char *refused) {
    if (!s) return;
    const char *st = refused ? "refused" : mcp_call_status(call);
    gg_span_attr_str(s, "graphgate.status", st);
    if (refused) gg_span_set_error(s, refused);
    else if (strcmp(st, "ok") != 0) gg_span_set_error(s, mcp_call_error(call) ? mcp_call_error(call) : st);
    else gg_span_set_ok(s);
    gg_span_end(s);
    free(s);
}
