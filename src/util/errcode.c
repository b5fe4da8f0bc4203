/* errcode.c — the one table of error codes: what each means at the edges, as an HTTP status
 * (REST and plain tool calls) and as a JSON-RPC error code (MCP). A code set anywhere in
 * graphgate and not listed here is an internal failure: HTTP 500, JSON-RPC -32603. Every
 * code listed is set somewhere in src/ (tests/util/errcodes.sh checks), and there are no
 * synonyms: one word per meaning (oom, internal_error, yaml, ...). */
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

enum { RPC_PARSE = -32700, RPC_INVALID_REQUEST = -32600, RPC_INVALID_PARAMS = -32602, RPC_INTERNAL = -32603 };

/* Keep this table in the order of the HTTP status, grouped by what went wrong. The JSON-RPC
 * code is what an MCP request that fails with the code answers: -32602 only where the
 * caller's params are at fault; a run's own failure is a tool result with isError, and
 * the rest are internal errors of the request (-32603). */
static const gg_errcode TABLE[] = {
    /* the request itself */
    {"bad_request", 400, RPC_INVALID_REQUEST, "the request is malformed"},
    {"invalid", 400, RPC_INTERNAL, "a value out of its allowed set or range (store arguments)"},
    {"invalid_json", 400, RPC_PARSE, "the body is not JSON"},
    {"invalid_params", 400, RPC_INVALID_PARAMS, "the arguments do not fit the method or tool"},
    {"invalid_argument", 400, RPC_INVALID_PARAMS, "one argument is invalid"},
    {"invalid_name", 400, RPC_INTERNAL, "a tenant, graph or key name breaks the naming rules"},
    {"invalid_scope", 400, RPC_INTERNAL, "an unknown key scope"},
    {"unknown_tool", 400, RPC_INVALID_PARAMS, "no such tool in this graph"},
    {"invalid_state", 400, RPC_INVALID_PARAMS, "a requestState that is forged, expired or bound elsewhere"},
    {"already_answered", 400, RPC_INVALID_PARAMS, "a requestState whose input-required round was answered already (single-use)"},
    {"too_large", 413, RPC_INVALID_REQUEST, "a body or value over its limit"},
    {"method_not_allowed", 405, RPC_INVALID_REQUEST, "the route exists, not for this method"},
    /* who asks */
    {"unauthorized", 401, RPC_INTERNAL, "no valid API key"},
    {"invalid_token", 401, RPC_INTERNAL, "a bearer token that is malformed, expired, forged or for another resource"},
    {"invalid_dpop_proof", 401, RPC_INTERNAL, "a DPoP proof that is missing, malformed, replayed or for another request (RFC 9449)"},
    {"use_dpop_nonce", 401, RPC_INTERNAL, "the DPoP proof must carry the nonce the server gave (RFC 9449 section 9)"},
    {"forbidden", 403, RPC_INTERNAL, "the key may not do this"},
    {"insufficient_scope", 403, RPC_INTERNAL, "the key lacks the scope the route needs"},
    /* what is stored */
    {"not_found", 404, RPC_INTERNAL, "no such tenant, graph, version, key or execution"},
    {"conflict", 409, RPC_INTERNAL, "exists already, or changed meanwhile"},
    {"tool_definition_changed", 409, RPC_INVALID_PARAMS, "a tool withheld until an admin approves its downstream's changed definition"},
    {"secret_missing", 409, RPC_INTERNAL, "a downstream server needs a tenant secret that is not set"},
    {"quota_exceeded", 409, RPC_INTERNAL, "the tenant holds as much as its quota allows"},
    {"validation", 422, RPC_INTERNAL, "a graph or spec that does not validate"},
    {"yaml", 422, RPC_INTERNAL, "YAML that cannot be read (syntax, aliases, depth)"},
    /* load and availability */
    {"rate_limited", 429, RPC_INTERNAL, "over a per-tenant or per-client rate or concurrency limit"},
    {"too_many", 429, RPC_INTERNAL, "over a count limit (sessions, streams, waiting runs)"},
    {"downstream_auth", 502, RPC_INTERNAL, "credentials for a downstream server could not be obtained, or it refused them (OAuth client)"},
    {"unavailable", 503, RPC_INTERNAL, "a dependency (store, downstream) is down for now"},
    {"busy", 503, RPC_INTERNAL, "every queue is full"},
    {"shutting_down", 503, RPC_INTERNAL, "the server is draining"},
    {"history_unavailable", 503, RPC_INTERNAL, "runs cannot be recorded (durable history)"},
    {"timeout", 504, -32001, "the request ran past its time limit"},
    {"cancelled", 500, -32800, "the client cancelled the request (nobody reads the HTTP status)"},
};

const gg_errcode *gg_errcode_find(const char *code) {
    if (!code || !code[0]) return NULL;
    for (size_t i = 0; i < sizeof TABLE / sizeof TABLE[0]; i++)
        if (strcmp(code, TABLE[i].code) == 0) return &TABLE[i];
    return NULL;
}

const gg_errcode *gg_errcode_table(size_t *n) {
    *n = sizeof TABLE / sizeof TABLE[0];
    return TABLE;
}

/* Beside the table, one rule: any other invalid_* code (invalid_config, invalid_schema,
 * invalid_route, ...) is a bad request, 400. */
int gg_error_http_status(const gg_error *e) {
    const gg_errcode *c = e ? gg_errcode_find(e->code) : NULL;
    if (c) return c->http_status;
    return e && strncmp(e->code, "invalid_", 8) == 0 ? 400 : 500;
}

int gg_error_rpc_code(const gg_error *e) {
    const gg_errcode *c = e ? gg_errcode_find(e->code) : NULL;
    return c ? c->rpc_code : RPC_INTERNAL;
}
