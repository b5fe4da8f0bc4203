/* provider.h — how the MCP server learns about tools without knowing where they come from.
 * A graph version is one provider, the node-spec registry another; the gateway wires each
 * endpoint to a provider.
 *
 * A provider is an operations table (mcp_provider_ops: one static const table per kind of
 * provider, so p->ops == &its_ops tells the kind) and the implementation's state (impl),
 * joined by mcp_provider_new.
 *
 * Ownership: mcp_provider_new returns the only reference; mcp_provider_ref takes another
 * (the server holds one for its life), and the last mcp_provider_unref calls ops->destroy
 * (which releases impl) and then frees the provider itself. Every callback borrows its
 * json_t arguments and returns new references.
 *
 * A call reaches the provider with an mcp_call_ctx, grouped by concern: identity (who
 * called: request id, key, tenant, scopes, caller, subject token, trace), client (the
 * caller's MCP client: progress/log sink, requests to it, its capabilities), run
 * (cancellation, time budget, resumption on a worker, adopted cancel cells, input-required
 * rounds), history (where node records go, their bounds, the execution record id and call
 * depth) and outcome (where a failing provider leaves its error code, the capabilities the
 * client lacks, or a URL elicitation for the server's answer).
 *
 * Threads: a shared provider is used from many threads at once (HTTP threads, workers,
 * downstream transport threads): every operation must be safe to call concurrently, ops
 * and impl are fixed once the provider is shared (the impl's setters, e.g.
 * gg_graph_provider_set_*, are called before that), and the reference count is atomic.
 */
#ifndef GG_MCP_PROVIDER_H
#define GG_MCP_PROVIDER_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include "telemetry/telemetry.h"
#include "util/util.h"

/* Where a running call reports progress and log messages; every function may be NULL
 * (the server leaves progress NULL when the client gave no progressToken and log NULL when
 * its logging level asks for nothing, so providers skip building what nobody reads).
 * progress must increase from one report to the next; log levels are MCP's names
 * ("debug", "info", ..., "error"). Both may be called from the worker running the call, or
 * from a downstream client's transport thread while the run waits (a relayed notification,
 * src/graph/exec.c relay_notify): never both at once. */
typedef struct mcp_sink {
    void (*progress)(void *user, double progress, double total /* <0 = unknown */, const char *message);
    void (*log)(void *user, const char *level, const char *logger, json_t *data /* borrowed */);
    void *user;
} mcp_sink;

/* Send a request to the caller's MCP client (elicitation/create, sampling/createMessage)
 * and call done exactly once (any thread) with its result (borrowed) or an error (code
 * "client_error" with the client's message, "timeout", "cancelled", "no_client"). */
typedef void (*mcp_client_request_fn)(void *user, const char *key /* the asking node's id */, const char *method,
                                      json_t *params, int timeout_ms,
                                      atomic_int *cancelled, void (*done)(void *user, json_t *result, gg_error *err),
                                      void *done_user);

#define MCP_FAIL_CODE_MAX 32
typedef struct mcp_cancel_cell mcp_cancel_cell;
/* Who made the call, and the ids it is logged and traced under. */
struct mcp_ctx_identity {
    const char *request_id;   /* X-Request-Id, for logs */
    const char *key_id;       /* API key that made the call, NULL on the internal listener */
    const char *tenant;       /* tenant of the endpoint */
    /* The scopes (auth's GG_SCOPE_* bits, opaque here) of the API key that made the call; 0
     * = none known (internal listener, a graph calling a graph, a task). Information for a
     * provider that acts for the caller beyond running a tool (the toolkit's put_graph
     * needs graphs:write); it grants nothing: the route's own scope check came first. */
    unsigned scopes;
    /* Who made the call (mcp_call_set_caller; graphs read it as $caller), or NULL when it
     * is not known (internal listener, a task, a graph calling a graph). */
    const struct mcp_caller *who;
    /* The caller's access token (mcp_call_set_subject_token), for a downstream server whose
     * credentials are exchanged for it (RFC 8693); NULL: none (an API key, a task, a graph
     * calling a graph). Borrowed for the call's life; never to be recorded or copied out. */
    const char *subject_token;
    /* The call's trace context (the gateway's server span, or the client's traceparent
     * passed through); NULL or invalid = none. Lives as long as the call. */
    const gg_trace_ctx *trace;
};

/* The caller's MCP client: where the call reports to it and what it may ask of it. */
struct mcp_ctx_client {
    const mcp_sink *sink;           /* may be NULL */
    mcp_client_request_fn request;  /* NULL: the client cannot be asked */
    void *user;                     /* request's first argument */
    /* MCP_CLIENT_CAPS_* the caller's client declared (params._meta in 2026-07-28, initialize
     * in a session); 0 = not known (no MCP client behind the call). */
    int caps;
};

/* How the call runs: when it must stop, and where it goes on after waiting. */
struct mcp_ctx_run {
    atomic_int *cancelled;  /* set non-zero by the server to stop the call */
    /* > 0: the caller runs the call speculatively on a thread that serves other requests;
     * a provider that honours it gives up past this many ms with NULL + err code "budget"
     * (nothing reported, nothing appended to history) and the caller runs it again
     * without a budget elsewhere. Only asked of tools tool_is_pure calls pure. */
    double budget_ms;
    double accepted_ms; /* > 0: monotonic time the call was accepted (time limits count from it) */
    /* For call_tool_async: where a call continues once a downstream answer arrived —
     * resume(resume_user, fn, arg) must run fn(arg) soon on a worker (fairly queued with
     * the tenant's other work). NULL = on the thread that delivered the answer. */
    void (*resume)(void *resume_user, void (*fn)(void *arg), void *arg);
    void *resume_user;
    /* A 2026-07-28 call whose run may outlive it (a downstream's request relayed to the
     * client as an input-required round: the downstream's call stays open for the retry):
     * adopt_cancel(adopt_user, cell) makes the call's cancel flag the cell's (referenced
     * until the call is freed), so whatever stops the call — and later the retry that
     * adopts the same cell — stops the run and its downstream call. NULL: not offered. */
    void (*adopt_cancel)(void *adopt_user, mcp_cancel_cell *cell);
    void *adopt_user;
    /* Input-required results (2026-07-28): client.request may leave a request unanswered
     * and set *input_wait instead; call_tool_async then ends the call with the run's saved
     * state as its result (gg_graph_run_save) and no error. resume_state (borrowed; NULL =
     * a fresh run) is such a state to go on from. */
    atomic_int *input_wait;
    json_t *resume_state;
};

/* Where the provider records the nodes it ran, and the execution record they belong to. */
struct mcp_ctx_history {
    /* Array the provider appends one record per executed node to, for the execution
     * history: {node_id, type, started_at (unix ms), duration_ms, status ("ok"|"error"),
     * input?, output?, error?}. Borrowed; NULL when the caller keeps no history. */
    json_t *records;
    /* Alternative to records, cheaper: when set, the provider appends each executed node's
     * record as compact JSON text after what the buffer holds (with a comma first unless it
     * is empty or ends with '['; no closing bracket), in the history store's positional
     * form [index, "node id", "node type", start, end (unix ms, or ms after exec_start_ms
     * when set), duration ms, output|null
     * (, input|null, "error message" — only for a failed node)] (src/store/store.h,
     * gg_exec_record_set_nodes_json); records stays empty. Inputs and outputs longer than
     * max_value bytes (0 = no bound) become {"truncated":true,"bytes":N}. */
    gg_strbuf *text;
    size_t max_value;
    /* Bounds on text for the whole run (0 = none): past max_records records or max_bytes
     * bytes, further records are left out and counted; the provider then ends the text
     * with {"truncated":true,"dropped":N,"kept":K} so the stored run shows it was cut
     * (src/store/history_query.c). */
    size_t max_records, max_bytes;
    /* The call's execution record id ("" or NULL = none) and how many graph-to-graph calls
     * deep it runs (0 = called by an MCP client): a graph calling another records the
     * callee's run with this id as its parent, and refuses past a depth limit. */
    const char *exec_id;
    int call_depth;
    /* The start (unix ms) the record exec_id names is stored at; text's node times are
     * then written as ms after it (fewer bytes; the store takes both). 0 = none: unix ms. */
    long long exec_start_ms;
};

/* Where a provider that ends a call with a failure says more about it than gg_error can,
 * for the server's answer; each NULL: nowhere (no such detail). */
struct mcp_ctx_outcome {
    /* where a provider that turns a failed run into an isError result writes the run's error
     * code (MCP_FAIL_CODE_MAX bytes): the tasks extension tells a tool's own error from the
     * graph's failure by it */
    char *fail_code;
    /* Where a provider that learns only while running what the client must have declared
     * (the toolkit's run_graph compiles the graph it runs) writes the MCP_CLIENT_CAPS_* the
     * request lacks; it then ends the call with NULL + err code "missing_capability", which
     * the server answers with -32021 naming them. */
    int *missing_caps;
    /* Where a provider whose call needs the user to open a URL first (per-user consent for a
     * downstream server) puts the URLElicitationRequiredError's data (new reference); it
     * then ends the call with NULL + err code "url_elicitation_required", which the server
     * answers with -32042 carrying it. NULL: the call fails as a tool error. */
    json_t **elicitation;
};

/* What a provider learns about one call besides the tool and its arguments; a zeroed
 * struct is a valid ctx (no caller known, nothing recorded, never cancelled). */
typedef struct mcp_call_ctx {
    struct mcp_ctx_identity identity;
    struct mcp_ctx_client client;
    struct mcp_ctx_run run;
    struct mcp_ctx_history history;
    struct mcp_ctx_outcome outcome;
} mcp_call_ctx;

/* A cancel flag shared by the calls one run spans (mcp_call_ctx.run.adopt_cancel): referenced,
 * freed with its last reference (any thread). */
struct mcp_cancel_cell {
    _Atomic int refs;
    atomic_int flag;
};
mcp_cancel_cell *mcp_cancel_cell_new(void);
void mcp_cancel_cell_ref(mcp_cancel_cell *c);
void mcp_cancel_cell_unref(mcp_cancel_cell *c);

/* Outcome of call_tool_async: the same contract as call_tool's return (result new
 * reference given to the callee, or NULL with err). */
typedef void (*mcp_provider_done_fn)(void *user, json_t *result, gg_error *err);

typedef struct mcp_provider mcp_provider;

/* What a kind of provider does; the entries marked optional may be NULL. */
typedef struct mcp_provider_ops {
    /* serverInfo {name, title?, version} and instructions (may be NULL). */
    json_t *(*server_info)(mcp_provider *p);
    const char *(*instructions)(mcp_provider *p);
    /* Array of MCP tool objects {name, title?, description, inputSchema, outputSchema?}.
     * Returned as a new reference; providers cache it and return json_incref'd copies. */
    json_t *(*list_tools)(mcp_provider *p);
    /* Look up one tool's definition (new reference) or NULL if unknown. */
    json_t *(*get_tool)(mcp_provider *p, const char *name);
    /* Run a tool. Returns an MCP CallToolResult object {content, structuredContent?, isError?}
     * as a new reference. Tool-level failures are results with isError; NULL + err only for
     * protocol-level failures (unknown tool → code "unknown_tool", invalid arguments →
     * "invalid_params", cancelled → "cancelled"). May block: the server calls it on a
     * worker thread. */
    json_t *(*call_tool)(mcp_provider *p, const char *name, json_t *arguments,
                         const mcp_call_ctx *ctx, gg_error *err);
    /* Releases impl when the last reference goes (NULL = nothing to release); the provider
     * itself is freed by mcp_provider_unref afterwards. */
    void (*destroy)(mcp_provider *p);
    /* Optional: true when the tool never waits on I/O (it only computes), so it may run
     * with a budget on the HTTP thread instead of a worker. NULL = never. */
    bool (*tool_is_pure)(mcp_provider *p, const char *name);
    /* Optional: call_tool without holding the calling thread while the tool waits on I/O.
     * done is called exactly once (maybe before this returns); ctx and everything it points
     * to must stay valid until then. NULL = only call_tool. */
    void (*call_tool_async)(mcp_provider *p, const char *name, json_t *arguments, const mcp_call_ctx *ctx,
                            mcp_provider_done_fn done, void *user);
    /* Optional (NULL = none): resources, resource templates and prompts as listed — arrays
     * of MCP Resource, ResourceTemplate and Prompt objects (new references). An empty or
     * NULL list means the capability is not advertised. */
    json_t *(*list_resources)(mcp_provider *p);
    json_t *(*list_resource_templates)(mcp_provider *p);
    json_t *(*list_prompts)(mcp_provider *p);
    /* What resources/read (kind "resource", key = the URI, fixed or matching a template) or
     * prompts/get (kind "prompt", key = its name) serves. NULL when unknown; else the item's
     * listed definition (new reference) and either *value, its static content (new reference:
     * {text}|{blob} for a resource, the messages array for a prompt), or *run, a name to give
     * call_tool/call_tool_async (malloc'd) with *run_args (new reference: the template's
     * variables, the prompt's arguments). Such a run answers {"value": exit output} (or an
     * isError result) instead of a CallToolResult; the server shapes it. */
    json_t *(*lookup)(mcp_provider *p, const char *kind, const char *key, json_t *arguments, json_t **value,
                      char **run, json_t **run_args);
    /* Optional: completion/complete — the declared values of argument arg of a prompt
     * (ref_type "ref/prompt", ref = name) or a template variable ("ref/resource", ref = the
     * uriTemplate) that start with prefix (new array; NULL = nothing declared). */
    json_t *(*complete)(mcp_provider *p, const char *ref_type, const char *ref, const char *arg, const char *prefix);
    /* Optional (NULL = ttlMs 0, private): the caching hint of 2026-07-28 list and read results. */
    void (*cache_hint)(mcp_provider *p, int *ttl_ms, bool *public_scope);
    /* Optional (NULL = none): MCP_CLIENT_CAPS_* (mcp.h) a tool needs the client to have
     * declared (a 2026-07-28 call without them is refused with -32021). */
    int (*tool_client_needs)(mcp_provider *p, const char *name);
    /* Optional (NULL = none): whether a tool that is not listed is withheld for now (a
     * downstream definition changed under on_change: quarantine); a tools/call for it is
     * answered with err's code in the error's data instead of "unknown tool". */
    bool (*tool_withheld)(mcp_provider *p, const char *name, gg_error *err);
    /* Optional (NULL = none): requests the provider answers by asking its downstream servers
     * (a graph's proxied resources and prompts, src/graph/proxy_extras.c). forwards returns
     * the MCP_FORWARD_* kinds: their capabilities are advertised, their list methods
     * (resources/list, resources/templates/list, prompts/list) always go to forward, and so do
     * a resources/read, prompts/get or completion/complete the provider's own lookup and
     * complete do not know. forward ends with done exactly once (any thread) with the
     * JSON-RPC result (new reference given) or NULL + err ("invalid_params" → -32602,
     * "not_found" of resources/read → -32002, else -32603 with err's message); params is
     * borrowed until then. */
    int (*forwards)(mcp_provider *p);
    void (*forward)(mcp_provider *p, const char *method, json_t *params, const mcp_call_ctx *ctx,
                    mcp_provider_done_fn done, void *user);
} mcp_provider_ops;

struct mcp_provider {
    const mcp_provider_ops *ops;
    void *impl;
    _Atomic int refcount; /* private: only mcp_provider_new, mcp_provider_ref and _unref touch it */
};

#define MCP_FORWARD_RESOURCES 1
#define MCP_FORWARD_PROMPTS 2
/* resources/subscribe and /unsubscribe of URIs the provider's lookup does not know go to
 * forward too, and resources.subscribe is advertised ("not_found" → -32002 as for a read) */
#define MCP_FORWARD_SUBSCRIBE 4

/* A provider of kind ops over impl, holding one reference (NULL when out of memory; impl is
 * then still the caller's to release). ops must outlive the provider (a static table). */
mcp_provider *mcp_provider_new(const mcp_provider_ops *ops, void *impl);
static inline mcp_provider *mcp_provider_ref(mcp_provider *p) {
    if (p) atomic_fetch_add_explicit(&p->refcount, 1, memory_order_relaxed);
    return p;
}
static inline void mcp_provider_unref(mcp_provider *p) {
    if (!p || atomic_fetch_sub_explicit(&p->refcount, 1, memory_order_acq_rel) != 1) return;
    if (p->ops->destroy) p->ops->destroy(p);
    free(p);
}

#endif
