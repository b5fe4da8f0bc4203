/* graph.h — mcpGraph-compatible graphs: load YAML, validate (every problem at once, with
 * positions), compile once into an immutable refcounted graph, execute tools with history,
 * limits, hooks and cancellation, and serve a graph version as an mcp_provider.
 *
 * Ownership: a gg_graph is immutable after gg_graph_load_* returns it and is shared by every
 * concurrent run through gg_graph_ref/gg_graph_unref; diagnostics and run results belong to
 * the caller (gg_graph_diags_free, gg_graph_result_clear); json_t arguments are borrowed.
 */
#ifndef GG_GRAPH_H
#define GG_GRAPH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "mcp/mcp.h"
#include "mcp/provider.h"
#include "telemetry/telemetry.h"
#include "util/util.h"
#include "util/yaml.h"

/* ---- diagnostics ---------------------------------------------------------------------- */

typedef enum { GG_DIAG_ERROR, GG_DIAG_WARNING } gg_diag_severity;

typedef struct gg_graph_diag {
    gg_diag_severity severity;
    char code[GG_ERR_CODE_MAX]; /* "unknown_key", "missing_target", "jsonata", ... */
    char *message;
    char *file;   /* source name given to the loader */
    int line, column; /* 1-based position in the YAML source (0 = unknown) */
    char *tool;   /* tool name, or NULL */
    char *node;   /* node id, or NULL */
} gg_graph_diag;

typedef struct gg_graph_diags {
    gg_graph_diag *items;
    size_t count, cap;
    size_t errors, warnings;
} gg_graph_diags;

#define GG_GRAPH_DIAGS_INIT {NULL, 0, 0, 0, 0}
void gg_graph_diags_free(gg_graph_diags *d);
/* One line "file:line:col: error: tool 't' node 'n': message" into buf. */
void gg_graph_diag_format(const gg_graph_diag *d, char *buf, size_t size);
/* The diagnostic as a JSON object {severity, code, message, file, line, column, tool?, node?}. */
json_t *gg_graph_diag_json(const gg_graph_diag *d);

/* ---- loading -------------------------------------------------------------------------- */

/* ${secrets.NAME} in mcpServers url, headers and env values names a secret of the graph's
 * tenant (gg_graph_options.owner). The graph never holds a value but while it makes a
 * client: the stored source keeps the reference. The seam must outlive the graphs. */
typedef struct gg_graph_secrets {
    /* The value (malloc'd, NUL-terminated; the graph wipes and frees it), or NULL + err
     * ("secret_missing" naming the secret, never a value). */
    char *(*resolve)(void *user, const char *tenant, const char *name, gg_error *err);
    /* Whether tenant has the secret (an upload's references are checked with it). */
    bool (*exists)(void *user, const char *tenant, const char *name);
    /* A counter every change of a secret moves: read on every call of a server that uses
     * secrets, so an atomic load; its client is replaced on the first call after a move. */
    long long (*generation)(void *user);
    /* A server using these secrets was called (at most once a minute per server). */
    void (*used)(void *user, const char *tenant, const char *const *names, size_t n);
    void *user;
} gg_graph_secrets;

typedef struct gg_graph_options {
    /* Which downstream servers may be reached; NULL = everything (graphgate run). Checked
     * when the graph is loaded (a definition the policy refuses is a validation error) and
     * again by the client at connect time. The policy must outlive the graph. */
    const mcp_client_policy *policy;
    /* The downstream context the graph's clients belong to (mcp.h: its limits, auth factory,
     * listen counters; each client holds a reference); NULL = each client one of its own with
     * the defaults (validate, tests). */
    struct mcp_downstream *clients;
    /* Per-call timeout for downstream servers that do not set `timeout` (ms; 0 = 30000). */
    int default_timeout_ms;
    /* Stop after this many source bytes (0 = 4 MiB). */
    size_t max_source_bytes;
    /* Nodes YAML aliases may add to the document once expanded (0 = GG_GRAPH_MAX_ALIAS_NODES). */
    size_t max_alias_nodes;
    /* Largest inputSchema/outputSchema, as compact JSON (0 = GG_GRAPH_MAX_SCHEMA_BYTES). */
    size_t max_schema_bytes;
    /* Operator caps on executionLimits (0 = none). A graph declaring more is refused
     * ("limit_exceeds_cap") unless clamp_limits, which lowers it to the cap with a warning
     * (for stored versions loaded at start after the operator lowered a cap). */
    long cap_node_executions;
    long cap_execution_ms;
    /* Memory caps (and defaults) for executionLimits.maxEvalMemoryBytes / maxRunMemoryBytes
     * (0 = GG_GRAPH_EVAL_MEMORY / GG_GRAPH_RUN_MEMORY). */
    long cap_eval_memory;
    long cap_run_memory;
    bool clamp_limits;
    /* Give up with error "timeout" once gg_now_ms() passes this (0 = no deadline). */
    double deadline_ms;
    /* Check every mcp node against its downstream server's tool catalog (catalog_check.c);
     * NULL = no check (graphs loaded at start, `graph validate` without --downstream). */
    const struct gg_graph_downstream *downstream;
    /* The tenant the graph's downstream clients work for (mcp_server_config.owner: their
     * listen streams are bounded per tenant); NULL = none (graphgate run, validate). */
    const char *owner;
    /* `proxy:` entries take their tools from the server's catalog: listed live when
     * downstream is set, else (or when that fails) catalog(catalog_user, server) — a new
     * reference to its stored tools array, or NULL. NULL fn: no stored catalogs. */
    json_t *(*catalog)(void *user, const char *server, const char *identity);
    void *catalog_user;
    /* The definitions this graph version pinned for a server (pins.c): a new reference to
     * {downstream tool name: definition}, or NULL when the version pinned none (an upload:
     * what is listed now becomes its pins, gg_graph_pins). A server with on_change review
     * or quarantine is then served from its pins, not from the catalog. NULL fn: none. */
    json_t *(*pinned)(void *user, const char *server, const char *identity);
    void *pinned_user;
    /* Where ${secrets.NAME} references resolve (NULL: they fail at call time, naming the
     * secret); check_secrets: one naming a secret the owner lacks is a load error
     * ("unknown_secret", an upload). */
    const gg_graph_secrets *secrets;
    bool check_secrets;
} gg_graph_options;

/* ---- downstream catalogs (catalog_check.c) ------------------------------------------------
 * With gg_graph_options.downstream set, a graph that loaded without errors lists the tools
 * of each of its mcpServers (all at once, each listing bounded by timeout_ms and by the
 * load's deadline), then checks every mcp node: the tool exists, required arguments are
 * given, literal arguments match the tool's inputSchema, no unknown argument names.
 * Findings are errors or warnings as the server's `check` key (error|warning|off) or the
 * default mode says; a server that cannot be listed is a warning ("downstream_unreachable"),
 * never a silent pass. Listing uses the graph's own clients, so the policy applies. */
typedef enum { GG_CHECK_ERROR, GG_CHECK_WARNING, GG_CHECK_OFF } gg_check_mode;
/* One server's catalog as listed: what a fetched callback gets (all borrowed). identity
 * is gg_graph_server_identity's: catalogs are kept per server, not per mcpServers name
 * (two graphs may give one name to different servers). */
typedef struct gg_graph_catalog {
    const char *server;   /* the mcpServers name it was listed under */
    const char *identity;
    json_t *tools;
    size_t bytes;         /* its tools serialized (compact JSON), about */
    long long fetched_ms; /* wall clock */
} gg_graph_catalog;
/* A server's catalog may hold this many bytes of serialized tools (0 in
 * gg_graph_downstream.max_catalog_bytes) and come in at most this many tools/list pages;
 * the listing stops at the page that passes either, with err "too_large". */
#define GG_CATALOG_DEFAULT_MAX_BYTES (1024 * 1024)
#define GG_CATALOG_MAX_PAGES 50
typedef struct gg_graph_downstream {
    gg_check_mode mode;  /* for servers without `check` */
    int timeout_ms;      /* per server listing; 0 = 10000 */
    size_t max_catalog_bytes; /* per server; 0 = GG_CATALOG_DEFAULT_MAX_BYTES */
    /* Called (on the loading thread) for each server listed; false + err refuses the
     * catalog (over the tenant's quota): an upload fails with that error, a refresh counts
     * the server as not listed. May be NULL. */
    bool (*fetched)(void *user, const gg_graph_catalog *cat, gg_error *err);
    void *user;
} gg_graph_downstream;
/* What a server is, as a catalog key: "http:" or "stdio:" and a hash of its URL, or of
 * its command, args, cwd and env names (never values). */
#define GG_GRAPH_IDENTITY_MAX 48
/* Parse "error" | "warning" | "off"; -1 otherwise. */
int gg_graph_check_mode_parse(const char *s);

/* ---- pinned definitions (pins.c) ------------------------------------------------------
 * A server's `on_change` (mcpServers): what a later change of a downstream tool's
 * definition does to the graph's clients. review: they keep the pinned definition until an
 * admin approves the change; quarantine: a changed (added, removed) tool is withheld —
 * not listed, its calls refused with tool_definition_changed — until approved; follow:
 * the new definition is served at once. `suspicious_text: warn|reject` decides whether
 * invisible or direction-changing Unicode in a definition (util/suspicious.h) is a warning
 * or an error at upload. */
typedef enum { GG_ON_CHANGE_REVIEW, GG_ON_CHANGE_QUARANTINE, GG_ON_CHANGE_FOLLOW } gg_on_change;
struct gg_graph;
int gg_graph_on_change_parse(const char *s); /* -1 when unknown */
const char *gg_graph_on_change_name(gg_on_change m);
/* What the compiled graph pinned: {identity: {server, on_change, tools: {name: definition}}}
 * (borrowed; NULL when nothing): each proxied tool's and each mcp node's called tool's
 * definition (upload only for the latter). */
json_t *gg_graph_pins(const struct gg_graph *g);
/* The pinned part of a tool definition: name, title, description, inputSchema,
 * outputSchema, annotations (new reference). */
json_t *gg_graph_tool_pin_part(const json_t *def);
/* BLAKE2b-256 of the canonical JSON (sorted keys, compact) of the pinned part, as hex. */
bool gg_graph_tool_hash(const json_t *def, char out[65]);
/* What changed from old to new (either may be NULL: added, removed): {fields: [names],
 * incompatible: [reasons]} — incompatible: an inputSchema property removed, a newly
 * required property, a property's type changed (new reference). */
json_t *gg_graph_tool_diff(const json_t *old, const json_t *new);
/* Whether name is a tool of g withheld by `on_change: quarantine`. */
bool gg_graph_tool_withheld(const struct gg_graph *g, const char *name);
/* List one server's tools ({tools:[...]} pages followed, at most 10000 tools, max_bytes
 * as in gg_graph_downstream, 0 = default) with a synchronous client (CLI, tests). A tool
 * whose name holds a control character (NUL included) is skipped with a warning. New
 * reference or NULL + err; *bytes (may be NULL) gets the catalog's size. */
json_t *gg_graph_mcp_list_tools(mcp_client *c, int timeout_ms, size_t max_bytes, size_t *bytes, gg_error *err);

#define GG_GRAPH_MAX_ALIAS_NODES GG_YAML_MAX_ALIAS_NODES
#define GG_GRAPH_MAX_TOOLS 500 /* listed tools per graph, proxied ones included */
#define GG_GRAPH_NAME_MAX 63 /* a stored graph's name (the store's GG_NAME_MAX) */
#define GG_GRAPH_EVAL_MEMORY (128L << 20)
#define GG_GRAPH_RUN_MEMORY (256L << 20)
#define GG_GRAPH_MAX_SCHEMA_BYTES (256u * 1024u)

typedef struct gg_graph gg_graph;

/* Parse, validate and compile a graph. Every error and warning is appended to diags (which
 * may be NULL); returns NULL if there was any error. name is used in positions. */
gg_graph *gg_graph_load_string(const char *src, size_t len, const char *name,
                               const gg_graph_options *opts, gg_graph_diags *diags);
gg_graph *gg_graph_load_file(const char *path, const gg_graph_options *opts, gg_graph_diags *diags);

gg_graph *gg_graph_ref(gg_graph *g);
/* Dropping the last reference stops the graph's downstream clients. */
void gg_graph_unref(gg_graph *g);

/* ---- introspection -------------------------------------------------------------------- */

/* serverInfo {name, title, version} (new reference). */
json_t *gg_graph_server_info(const gg_graph *g);
const char *gg_graph_instructions(const gg_graph *g); /* NULL when not set */
/* server.cache: ttlMs (default 0) and whether scope is public (default private). */
void gg_graph_cache(const gg_graph *g, int *ttl_ms, bool *public_scope);
/* MCP_CLIENT_CAPS_* the nodes of a listed tool need from the calling client (0 = none). */
int gg_graph_tool_client_needs(const gg_graph *g, const char *name);
/* MCP tools array [{name, description, inputSchema, outputSchema}] (borrowed, immutable). */
json_t *gg_graph_tools(const gg_graph *g);
/* Borrowed tool definition or NULL. */
json_t *gg_graph_tool(const gg_graph *g, const char *name);
size_t gg_graph_tool_count(const gg_graph *g);
/* resources, resourceTemplates and prompts as MCP lists them (borrowed; NULL when none). */
json_t *gg_graph_resources(const gg_graph *g);
json_t *gg_graph_resource_templates(const gg_graph *g);
json_t *gg_graph_prompts(const gg_graph *g);
int gg_graph_max_node_executions(const gg_graph *g);
long gg_graph_max_execution_ms(const gg_graph *g);

/* ---- execution ------------------------------------------------------------------------ */

/* One history record. Fields are borrowed for the duration of a hook call. */
typedef struct gg_graph_event {
    int execution_index;
    const char *node_id;
    const char *node_type;   /* entry, mcp, transform, switch, exit */
    long long start_ms, end_ms; /* wall clock */
    double duration_ms;
    json_t *input;           /* evaluated mcp args / context given to an expression; may be NULL */
    json_t *output;          /* NULL on error, at start, or when the node yielded undefined */
    const gg_error *error;   /* NULL unless the node failed */
    /* input is the run's context (a transform, switch or exit evaluated it): each earlier
     * node's latest output that was not undefined, by node id — so a history can store a
     * reference instead of a copy that grows with every node */
    bool input_is_context;
} gg_graph_event;

/* Hooks: called on the executing thread, synchronously, must not block for long. */
typedef struct gg_graph_hooks {
    void (*node_start)(void *user, const gg_graph_event *ev);
    void (*node_complete)(void *user, const gg_graph_event *ev);
    void (*node_error)(void *user, const gg_graph_event *ev);
    void *user;
} gg_graph_hooks;

typedef void (*gg_graph_call_fn)(void *user, const mcp_call_ctx *caller, const char *graph, const char *tool,
                                 json_t *arguments, atomic_int *cancelled,
                                 void (*done)(void *done_user, json_t *result, gg_error *err), void *done_user);

typedef struct gg_graph_run_options {
    const gg_graph_hooks *hooks; /* may be NULL */
    atomic_int *cancelled;     /* set non-zero from any thread to stop at the next check */
    bool record_inputs;          /* store each node's input in its history record */
    bool no_history;             /* skip building the history JSON (benchmarks) */
    double budget_ms;            /* > 0: give up with error code "budget" once the run has
                                    taken this long (a caller running it speculatively on a
                                    thread that must not stall retries elsewhere) */
    /* Heap runs (gg_graph_run_new): called once, from any thread (the downstream client's),
     * when a run that yielded on an mcp node has its answer and may advance again. It must
     * not advance the run itself on that thread: hand it to a worker. */
    void (*wake)(void *user);
    void *wake_user;
    double start_ms;             /* > 0: monotonic time the call was accepted; the run's
                                    time limit counts from there (queue time included) */
    /* elicit and sample nodes ask the caller's MCP client (see mcp_call_ctx.client.request);
     * NULL: those nodes fail with a clear error. */
    mcp_client_request_fn client_request;
    void *client_user;
    /* An input-required round (see mcp_call_ctx.run.input_wait): set when client_request left a
     * request for the client's next call; an ask node then still asks its other requests. */
    atomic_int *input_wait;
    /* MCP_CLIENT_CAPS_* of the caller's client (0 = not known): expressions see them as
     * $client.capabilities (JSONata, and JSON Logic vars, which are JSONata paths). */
    int client_caps;
    /* The caller's trace context (its server span), or NULL: with telemetry on each node
     * is a span under it and each downstream call a client span under its node; either
     * way a valid context goes downstream as traceparent. Must outlive the run. */
    const gg_trace_ctx *trace;
    /* mcp nodes whose server is `type: graph` ask this to run tool of another graph of the
     * caller's tenant and call done exactly once (any thread) with its CallToolResult or an
     * error; NULL: such nodes fail ("graph_call"). caller is the call's context (tenant,
     * execution id, depth), passed through. Set by the gateway (gg_graph_provider_set_graph_call). */
    gg_graph_call_fn graph_call;
    void *graph_call_user;
    const mcp_call_ctx *caller;
    /* mcp nodes with `async: true` (fire-and-forget branches) ask these; NULL: such a node
     * is skipped ({started: false, skipped}). Set by gg_graph_provider_set_async. */
    const struct gg_graph_async_hooks *async;
    /* Heap runs of a 2026-07-28 caller (input_wait set): a downstream's request to its client
     * during an mcp node with relay (elicitation/create, sampling/createMessage, roots/list)
     * waits in the run, its downstream call open, and relay_round(relay_user) is told (any
     * thread, no lock of the run held); it hands the requests to the client in an
     * input-required round (gg_graph_run_relay_ask). false: no round can be held now (the
     * downstream's request is refused). NULL: such requests are refused (-32601). */
    bool (*relay_round)(void *relay_user);
    void *relay_user;
} gg_graph_run_options;

typedef struct gg_graph_result {
    json_t *output;   /* exit node output (new reference; never NULL on success: a falsy
                         previous output becomes {} as in mcpGraph) */
    json_t *history;  /* array of {executionIndex, nodeId, nodeType, startTime, endTime,
                         duration, input?, output?, error?} — one value for one transaction;
                         output is absent when the node failed or yielded undefined */
    gg_error error;   /* set when the run failed; code "unknown_tool", "limit", "cancelled",
                         "timeout", "mcp", "tool_error", an expression's engine code
                         (T1006, D3030, a JSON Logic code; path = node), ... */
    char *failed_node; /* node id of the failure, or NULL */
    int node_executions;
    double elapsed_ms;
} gg_graph_result;

#define GG_GRAPH_RESULT_INIT {NULL, NULL, GG_ERROR_INIT, NULL, 0, 0}
void gg_graph_result_clear(gg_graph_result *r);
/* A run's failure as every surface shows it (tools/call isError, history, CLI): an
 * expression's error keeps the engine's code and position and names its node in path, and
 * reads "node 'sum': T1006 at position 7: message"; any other failure is its message (heap,
 * NULL on OOM). gg_graph_error_json: {code, message, position?, node?, text} (new reference). */
char *gg_graph_error_text(const gg_error *e);
/* err = unknown_tool "Tool not found: NAME" with the closest tool and, for a graph with
 * few tools, their names (gg_suggest). */
void gg_graph_unknown_tool(const gg_graph *g, const char *name, gg_error *err);
json_t *gg_graph_error_json(const gg_error *e);

/* ---- the history functions outside a run (graphgate eval) ----------------------------------
 * gg_graph_expr_env: the JSONata environment graph expressions compile against; without a
 * history each history function ($previousNode, $executionCount, $nodeExecution,
 * $nodeExecutions) fails with code "no_history" saying it needs one (free with
 * jsonata_env_free after the expressions compiled against it). gg_graph_history_load: a run's
 * history rebuilt from its node records [{nodeId, output?}, ...] in execution order, as
 * `run --trace`, `executions show --json` and GET /admin/executions/{id} ("history") give
 * them (an object with a "history" array is read too); NULL + err "invalid_history".
 * gg_graph_history_context: the context {nodeId: latest output} a node after those records
 * sees (borrowed). gg_graph_history_evaluate: evaluate with the history functions reading h. */
typedef struct gg_graph_history gg_graph_history;
struct jsonata_env;
struct jsonata_expr;
struct jsonata_env *gg_graph_expr_env(bool with_history, gg_error *err);
gg_graph_history *gg_graph_history_load(json_t *records, gg_error *err);
void gg_graph_history_free(gg_graph_history *h);
json_t *gg_graph_history_context(gg_graph_history *h);
json_t *gg_graph_history_evaluate(gg_graph_history *h, const struct jsonata_expr *e, json_t *input, json_t *bindings,
                                  gg_error *err);

/* Run one tool with arguments (object; NULL = {}). Returns true on success (r->output set),
 * false with r->error set. r->history is filled either way (unless no_history). Safe to call
 * from many threads at once on the same graph. */
bool gg_graph_execute(gg_graph *g, const char *tool, json_t *arguments,
                      const gg_graph_run_options *opts, gg_graph_result *r);

/* A resumable run: it advances node by node until it ends or an mcp node waits for its
 * downstream answer, and then yields instead of blocking — no thread waits for it. When the
 * answer arrives opts->wake is called and gg_graph_run_advance goes on from there (on any
 * thread, one at a time). opts (and what it points to) must outlive the run. */
typedef struct gg_graph_run gg_graph_run;
/* Never NULL except out of memory; a run that cannot start (unknown tool, bad arguments)
 * ends at its first advance with the error. */
gg_graph_run *gg_graph_run_new(gg_graph *g, const char *tool, json_t *arguments,
                               const gg_graph_run_options *opts);
/* true: the run ended (see gg_graph_run_result); false: it waits, wake will be called. */
bool gg_graph_run_advance(gg_graph_run *run);
/* After the run ended: its result moved into res (as gg_graph_execute fills it). */
bool gg_graph_run_result(gg_graph_run *run, gg_graph_result *res);
void gg_graph_run_free(gg_graph_run *run);
/* The run's state as plain JSON {version, tool, node, arguments, outputs:[[id, output?]...],
 * history, startedAt, elapsedMs, waiting} (new reference; NULL once ended), and back: a
 * restored run continues at the saved node with the same context, history, counters and
 * clock (a saved waiting mcp node makes its downstream call again). */
json_t *gg_graph_run_save(const gg_graph_run *run);
gg_graph_run *gg_graph_run_restore(gg_graph *g, json_t *state, const gg_graph_run_options *opts,
                                   gg_error *err);
/* Relaying to a 2026-07-28 caller (gg_graph_run_options.relay_round). The run, waiting on its
 * mcp node, asks each waiting request through opts->client_request under its key
 * ("relay-N", unique in the run): an answer the round carries (inputResponses) goes to the
 * downstream at once; the others stay and set *opts->input_wait. Returns how many still
 * wait. gg_graph_run_rebind: the run goes on with other options (a later call's, or none
 * while no call holds it); only while it waits, from the thread that advances it. */
int gg_graph_run_relay_ask(gg_graph_run *run);
void gg_graph_run_rebind(gg_graph_run *run, const gg_graph_run_options *opts);

/* True when the tool exists and none of its nodes can block on I/O (no mcp nodes): a run
 * then only computes, so with a budget it may run on a thread that serves other work. */
bool gg_graph_tool_is_pure(const gg_graph *g, const char *tool);

/* ---- document ------------------------------------------------------------------------- */

/* The source text (YAML or JSON) as a JSON value, with the loader's YAML 1.2 core scalar
 * rules; no validation. At most 100000 values and 200 levels with aliases expanded (a
 * viewer's copy, so tighter than the loader's walk). NULL + err ("too_large", or the
 * positioned parse error) otherwise. */
json_t *gg_graph_document_json(const char *src, size_t len, gg_error *err);

/* ---- provider ------------------------------------------------------------------------- */

/* The graph as an MCP tool provider (takes its own reference on g). call_tool runs the
 * executor with the context's cancel flag and reports each node live through the sink:
 * after each completed node progress = nodes completed so far (1, 2, ...) and a debug log
 * {node, type, duration_ms}; a failed node an error log {node, type, duration_ms, error}.
 * Results: an object output → {content:[text: its JSON], structuredContent}; a string →
 * one text block holding the string; anything else → one text block with its JSON; an
 * execution error → an isError result with the message. */
mcp_provider *gg_graph_provider_new(gg_graph *g);
/* Optional: receive each finished run's history (e.g. to persist it); borrowed arrays. */
typedef void (*gg_graph_history_fn)(void *user, const char *tool, const mcp_call_ctx *ctx,
                                    const gg_graph_result *r);
void gg_graph_provider_set_history_sink(mcp_provider *p, gg_graph_history_fn fn, void *user);
/* Optional: how the provider's runs call other graphs (gg_graph_run_options.graph_call). */
void gg_graph_provider_set_graph_call(mcp_provider *p, gg_graph_call_fn fn, void *user);
/* Optional: a run that failed because a per_user server (`auth.per_user`) holds no grant of
 * its caller (code url_elicitation_required) asks fn for the URLElicitationRequiredError's
 * data (new reference; NULL: the run's failure stands), for the caller's tenant, the server's
 * name, URL and auth settings, and who called; the call then ends with -32042
 * (mcp_call_ctx.outcome.elicitation). */
typedef json_t *(*gg_graph_consent_fn)(void *user, const char *tenant, const char *server, const char *url,
                                       const json_t *auth, const mcp_caller *who);
void gg_graph_provider_set_consent(mcp_provider *p, gg_graph_consent_fn fn, void *user);
/* Fire-and-forget branches (branch.c): an mcp node with `async: true` starts its call when
 * reached — through the same client (policy, per-call timeout) or graph-call path as any
 * mcp node — records {started: true, branch: "<id>"} as its output and the run goes on at
 * once; the run never waits for the branch and the branch's outcome never reaches it.
 * begin (on the run's thread) admits a branch: NULL and a reason in why (the node's output
 * is then {started: false, skipped: why}, and the run goes on) or a handle, with in *ctx a
 * call context owned by the handle until end: its cancelled flag stops the branch, resume
 * (required) is where the branch's end runs (a worker, not the client's thread), exec_id
 * names the branch (a graph target records its run under it). end runs once per admitted
 * branch with the outcome (result borrowed; NULL with err) and releases the handle. label is
 * what set_async gave (the graph's name, for the branch's record). */
typedef struct gg_graph_async_hooks {
    void *(*begin)(void *user, const char *label, const mcp_call_ctx *caller, const char *server, const char *tool,
                   json_t *arguments, const mcp_call_ctx **ctx, char *why, size_t why_n);
    void (*end)(void *user, void *branch, json_t *result, const gg_error *err);
    void *user;
    const char *label; /* set by gg_graph_provider_set_async */
} gg_graph_async_hooks;
/* hooks must outlive every branch of the provider's runs; label is copied. */
void gg_graph_provider_set_async(mcp_provider *p, const gg_graph_async_hooks *hooks, const char *label);
/* This replica as the holder of the runs its relay rounds park (an object the gateway makes:
 * {"id": this process, "url": its internal listener}; a reference is kept): each such round's
 * state names it, with "until" (wall ms its run's time limit ends), so that a retry reaching
 * another replica can be forwarded here. Set before the provider is shared; NULL = none. */
void gg_graph_provider_set_relay_holder(mcp_provider *p, json_t *holder);

/* Graphs g's `type: graph` servers name (each once, in definition order; borrowed strings in
 * a new array), for the gateway's cycle check at upload. */
json_t *gg_graph_call_targets(const gg_graph *g);

/* List g's downstream servers again (as a load with downstream set does, no node check):
 * ds->fetched gets each catalog listed; servers set to `check: off` are skipped. Returns
 * how many servers could not be listed. deadline_ms as in gg_graph_options (0 = none). */
int gg_graph_downstream_refresh(gg_graph *g, const gg_graph_downstream *ds, double deadline_ms);
/* Keep listening to g's streamable-HTTP servers (mcp_client_listen: a session and its GET
 * stream now, for their notifications) — for installed graphs, not one-off runs. At most
 * GG_GRAPH_LISTEN_MAX servers of a graph listen (the first in mcpServers order); the
 * others follow the periodic refresh. Stdio servers are always heard once started. */
#define GG_GRAPH_LISTEN_MAX 16
void gg_graph_downstream_listen(gg_graph *g);
/* Server notifications of g's downstream servers (tools/list_changed and others, from a
 * stdio server's stdout or an HTTP server's listen stream) go to fn(user, tag, server,
 * method, uri) on a reader or event-loop thread (must not block); tag is copied. uri: for
 * notifications/resources/updated of a proxied resource, its URI as the graph's clients
 * name it (uri_prefix added); NULL otherwise (an updated URI no entry selects is dropped).
 * fn NULL stops them. */
typedef void (*gg_graph_notify_fn)(void *user, const char *tag, const char *server, const char *method, const char *uri);
void gg_graph_set_downstream_notify(gg_graph *g, gg_graph_notify_fn fn, void *user, const char *tag);
/* No client of the graph subscribes to the proxied uri (as its clients name it) any more:
 * resources/unsubscribe to its downstream, answered nowhere (proxy_extras.c). */
void gg_graph_proxy_unsubscribe(gg_graph *g, const char *uri);
/* resources/subscribe of the proxied uri (as the graph's clients name it) to its downstream,
 * answered nowhere (a 2026-07-28 subscriptions/listen naming it); false when no entry of g
 * selects uri (nothing sent). */
bool gg_graph_proxy_subscribe(gg_graph *g, const char *uri);
/* g (a new compilation) takes over old's downstream clients — sessions, GET listen streams,
 * stdio children — for every mcpServers entry whose definition is identical, instead of
 * starting its own; both share them until the last one is freed (src/graph/clients.c has
 * the ownership rule). Returns how many were taken over. */
size_t gg_graph_adopt_clients(gg_graph *g, gg_graph *old);
/* Whether a `proxy:` entry of g re-exports server's tools (its catalog shapes g's list). */
bool gg_graph_proxies(const gg_graph *g, const char *server);
/* The MCP_FORWARD_* kinds (resources, prompts) g's `proxy:` entries re-export from server
 * (NULL: from any server), so its list_changed can reach g's clients. */
int gg_graph_proxies_extras(const gg_graph *g, const char *server);
/* Whether a `proxy:` entry of g re-exports the server whose identity this is, or an mcp
 * node calls it under `on_change: quarantine` (its catalog decides what the node may call). */
bool gg_graph_proxies_identity(const gg_graph *g, const char *identity);
/* The graph a provider made by gg_graph_provider_new serves (borrowed), else NULL. */
gg_graph *gg_graph_provider_graph(mcp_provider *p);

#endif
