/* errcode.c — the one table of error codes: what each means at the edges, as an HTTP status
 * (REST and plain tool calls) and as a JSON-RPC error code (MCP). A code set anywhere in
 * graphgate and not listed here is an internal failure: HTTP 500, JSON-RPC -32603. The table is
 * checked both ways (tests/util/errcodes.sh): every code listed is set somewhere in src/, and
 * every code set in src/ is listed here or follows one of two documented patterns: another
 * invalid_* code (a bad request, 400: gg_error_http_status), or one of JSONata's own codes
 * (a letter and four digits, e.g. T2001, as jsonata-js names them). There are no synonyms:
 * one word per meaning (oom, internal_error, yaml, ...). */
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
    {"invalid_consent", 400, RPC_INTERNAL, "a downstream consent callback whose state is forged, changed or expired"},
    {"too_large", 413, RPC_INVALID_REQUEST, "a body or value over its limit"},
    {"method_not_allowed", 405, RPC_INVALID_REQUEST, "the route exists, not for this method"},
    /* who asks */
    {"unauthorized", 401, RPC_INTERNAL, "no valid API key"},
    {"invalid_token", 401, RPC_INTERNAL, "a bearer token that is malformed, expired, forged or for another resource"},
    {"invalid_dpop_proof", 401, RPC_INTERNAL, "a DPoP proof that is missing, malformed, replayed or for another request (RFC 9449)"},
    {"use_dpop_nonce", 401, RPC_INTERNAL, "the DPoP proof must carry the nonce the server gave (RFC 9449 section 9)"},
    {"forbidden", 403, RPC_INTERNAL, "the key may not do this"},
    {"insufficient_scope", 403, RPC_INTERNAL, "the key lacks the scope the route needs"},
    {"principal_required", 403, RPC_INTERNAL, "a downstream server acting for each user (per-user consent, token exchange) called without an OAuth principal (an API key)"},
    {"url_elicitation_required", 403, -32042, "the user must open a URL first: consent to a per-user downstream server (MCP 2025-11-25)"},
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
    {"downstream_invalid", 502, RPC_INTERNAL, "a downstream server's answer is malformed or past its bounds (proxied resources, prompts)"},
    {"downstream_auth", 502, RPC_INTERNAL, "credentials for a downstream server could not be obtained, or it refused them (OAuth client)"},
    {"token_exchange_failed", 502, RPC_INTERNAL, "the token exchange (RFC 8693) of the caller's token for a downstream server was refused, or its token refused again"},
    {"unavailable", 503, RPC_INTERNAL, "a dependency (store, downstream) is down for now"},
    {"busy", 503, RPC_INTERNAL, "every queue is full"},
    {"shutting_down", 503, RPC_INTERNAL, "the server is draining"},
    {"history_unavailable", 503, RPC_INTERNAL, "runs cannot be recorded (durable history)"},
    {"timeout", 504, -32001, "the request ran past its time limit"},
    {"cancelled", 500, -32800, "the client cancelled the request (nobody reads the HTTP status)"},
    /* the MCP exchange itself (each answered by hand where it happens; listed so the table is whole) */
    {"parse_error", 400, RPC_PARSE, "a JSON-RPC body that is not JSON"},
    {"unknown_response", 400, RPC_INVALID_REQUEST, "a client's response to a request of ours that nobody waits for"},
    {"tool_error", 422, RPC_INTERNAL, "a plain (REST) tool call whose run failed"},
    {"uri_too_long", 414, RPC_INVALID_REQUEST, "a request path over its limit"},
    {"no_tenant", 400, RPC_INTERNAL, "a toolkit call whose key names no tenant"},
    {"graph_unavailable", 503, RPC_INTERNAL, "a stored graph that cannot be loaded now"},
    /* why a run failed: its tool result says so (isError); a request failing with one is a 500 */
    {"exit_error", 500, RPC_INTERNAL, "an exit node of kind error was reached"},
    {"no_route", 500, RPC_INTERNAL, "no switch condition matched and there is no default"},
    {"budget", 500, RPC_INTERNAL, "an expression used up its execution budget"},
    {"limit", 500, RPC_INTERNAL, "a run passed a graph's limits (time, nodes, depth)"},
    {"depth_exceeded", 500, RPC_INTERNAL, "a JSON Logic value nested past its depth bound"},
    {"memory_exceeded", 500, RPC_INTERNAL, "an evaluation passed its memory budget"},
    {"schema_violation", 500, RPC_INTERNAL, "a value that does not match its JSON Schema (tool output)"},
    {"no_history", 500, RPC_INTERNAL, "a history function with no run history to read"},
    {"no_client", 500, RPC_INTERNAL, "a node that asks the client, with no client to ask"},
    {"no_capability", 500, RPC_INTERNAL, "the client did not declare the capability a request to it needs"},
    {"missing_capability", 500, RPC_INTERNAL, "a tool needs a client capability the caller lacks"},
    {"client_error", 500, RPC_INTERNAL, "the client answered our request with an error"},
    {"graph_call", 500, RPC_INTERNAL, "a graph-to-graph call outside the gateway"},
    {"graph_cycle", 500, RPC_INTERNAL, "a graph that calls itself, directly or not"},
    /* downstream servers and the network */
    {"transport", 500, RPC_INTERNAL, "a downstream server's connection failed or it did not answer"},
    {"mcp_error", 500, RPC_INTERNAL, "a downstream server's answer breaks the protocol"},
    {"backoff", 500, RPC_INTERNAL, "a stdio server that keeps failing waits before its next start"},
    {"policy", 500, RPC_INTERNAL, "the egress policy refuses a downstream address or command"},
    {"dns", 500, RPC_INTERNAL, "a host name that does not resolve"},
    {"refused", 500, RPC_INTERNAL, "a downstream server refused the connection"},
    {"secret_unreadable", 500, RPC_INTERNAL, "a stored secret that does not decrypt under the configured key"},
    /* the server's own failures */
    {"internal_error", 500, RPC_INTERNAL, "a bug or an impossible state"},
    {"oom", 500, RPC_INTERNAL, "out of memory"},
    {"db", 500, RPC_INTERNAL, "the store failed"},
    {"migration", 500, RPC_INTERNAL, "a schema migration could not be read or applied"},
    {"auth", 500, RPC_INTERNAL, "the crypto library could not start"},
    {"listen_failed", 500, RPC_INTERNAL, "a listener could not be opened"},
    {"route_conflict", 500, RPC_INTERNAL, "two handlers for one route (a startup bug)"},
    {"yaml_alias", 422, RPC_INTERNAL, "YAML whose aliases expand past their budget"},
    /* findings inside a `validation` answer's diagnostics (never a request's own code) */
    {"unknown_operation", 422, RPC_INTERNAL, "a JSON Logic rule names an operation that does not exist"},
    {"jsonata", 422, RPC_INTERNAL, "a JSONata expression that does not parse"},
    {"unknown_function", 422, RPC_INTERNAL, "an expression calls a function that is not defined (warning)"},
    {"unused_server", 422, RPC_INTERNAL, "an mcpServers entry no node uses (warning)"},
    {"downstream_unknown_tool", 422, RPC_INTERNAL, "a node names a tool its downstream does not list"},
    {"proxy_tools_unlisted", 422, RPC_INTERNAL, "a proxy entry asks for all the tools of a server acting for each caller, which no upload can list"},
    {"suspicious_text", 422, RPC_INTERNAL, "invisible or direction-changing characters in a downstream definition"},
    {"io", 422, RPC_INTERNAL, "a file named for validation cannot be read"},
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
int gg_errcode_http_status(const char *code) {
    const gg_errcode *c = gg_errcode_find(code);
    if (c) return c->http_status;
    return code && strncmp(code, "invalid_", 8) == 0 ? 400 : 500;
}

int gg_error_http_status(const gg_error *e) { return gg_errcode_http_status(e ? e->code : NULL); }

int gg_error_rpc_code(const gg_error *e) {
    const gg_errcode *c = e ? gg_errcode_find(e->code) : NULL;
    return c ? c->rpc_code : RPC_INTERNAL;
}
