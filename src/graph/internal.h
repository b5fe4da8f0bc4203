/* internal.h — shared between the graph subsystem's own files only (not a public API):
 * the positioned YAML tree, the parsed document model and the compiled graph.
 */
#ifndef GG_GRAPH_INTERNAL_H
#define GG_GRAPH_INTERNAL_H

#include <pthread.h>

#include "graph/graph.h"
#include "util/yaml.h"
#include "jsonata/jsonata.h"
#include "jsonlogic/jsonlogic.h"

/* ---- the positioned YAML tree is util/yaml.h (ydoc, ynode) -------------------------- */

/* mcp args (load.c): {expr: "..."} is an expression; so is a string starting with '$'
 * directly under args (top); gg_graph_yaml_has_expr: does the subtree hold one anywhere. */
bool gg_graph_yaml_is_expr_map(const ynode *v);
bool gg_graph_yaml_has_expr(const ynode *v, bool top, int depth);

/* ---- compiled graph (compile.c) ------------------------------------------------------- */

/* elicit and sample ask the run's client (elicitation/create, sampling/createMessage);
 * ask puts several such requests to the client at once (one input-required round). */
typedef enum { GN_ENTRY, GN_MCP, GN_TRANSFORM, GN_SWITCH, GN_EXIT, GN_ELICIT, GN_SAMPLE, GN_ROOTS, GN_ASK } gnode_type;

/* An args template: literal JSON, an expression, or a container of templates. */
typedef struct gargs gargs;
struct gargs {
    enum { GA_LITERAL, GA_EXPR, GA_OBJECT, GA_ARRAY } kind;
    json_t *literal;           /* GA_LITERAL */
    jsonata_expr *expr;        /* GA_EXPR */
    char **keys;               /* GA_OBJECT */
    gargs **items;             /* GA_OBJECT values / GA_ARRAY items */
    size_t count;
};

typedef struct gcond {
    jsonlogic_rule *rule;      /* NULL = default condition (old form without rule) */
    int target;                /* node index */
} gcond;

typedef struct gserver gserver;
typedef struct gclient gclient; /* clients.c */

typedef struct gnode {
    char *id;
    gnode_type type;
    int next;                  /* node index, -1 = none */
    /* mcp */
    gserver *server;
    char *tool;
    gargs *args;
    /* transform */
    jsonata_expr *expr;
    /* switch */
    gcond *conds;
    size_t ncond;
    int default_next;          /* -1 = no default (error at run time if nothing matches) */
    /* elicit, sample (roots: no params): args holds the request's params; how long the client may take */
    int timeout_ms;
    /* exit `error:` (a graphgate extension): the run fails with this text, or with the value
     * of expr (then expr is the error message expression); lets a pre-hook stop a call */
    bool fails;
    char *error_text;
    /* ask: its requests, each an elicit/sample/roots node whose id is the request's key */
    struct gnode *subs;
    size_t nsubs;
    /* mcp: `async: true`, a fire-and-forget branch (branch.c) */
    bool async;
    /* mcp: the output is the downstream's CallToolResult as it came (a proxied tool without
     * post hooks passes every content block, structuredContent and isError through) */
    bool raw_result;
    /* mcp: `relay: true` (every proxied tool's): what the downstream asks during the call
     * goes to the run's client (exec.c relay_request); false: refused, the node fails */
    bool relay;
    /* mcp: the called tool's definition moved from this version's pin under `on_change:
     * quarantine` (pins.c gg_graph_pin_nodes): the node fails with tool_definition_changed */
    bool withheld;
} gnode;

typedef struct gtool {
    char *name;
    json_t *def;               /* {name, description, inputSchema, outputSchema} */
    gnode *nodes;
    size_t nnodes;
    int entry, exit;
    bool content_result;       /* resultFormat: callToolResult — the exit output is the result */
} gtool;

/* A resource, resource template or prompt (load_extras in load.c). Produced either by a
 * static value (resource {text}|{blob}, prompt messages) or by a hidden tool in g->tools
 * past the public ones, named "resource:<uri>", "template:<uriTemplate>", "prompt:<name>"
 * (':' cannot appear in a tool name, so the names never collide). */
typedef enum { GX_RESOURCE, GX_TEMPLATE, GX_PROMPT } gextra_kind;
typedef struct gextra {
    gextra_kind kind;
    char *key;                 /* uri, uriTemplate or prompt name */
    json_t *def;               /* as listed */
    json_t *value;             /* static content or NULL */
    char *run;                 /* "resource:<uri>", "template:<uriTemplate>", "prompt:<name>" */
    bool has_nodes;            /* produced by the hidden tool named run (else value) */
    json_t *completions;       /* {argument or variable: [values]} or NULL */
} gextra;

struct gserver {
    char *name;
    char *owner;               /* gg_graph_options.owner, copied (cfg.owner points here) */
    int line, column;          /* where the definition starts, for diagnostics */
    mcp_server_config cfg;     /* strings owned by the arrays below */
    char **argv, **env, **headers;
    json_t *auth;              /* `auth:` settings (cfg.auth points here), NULL = none */
    pthread_mutex_t lock;      /* guards lazy client creation */
    mcp_client *client;        /* shared->client (clients.c: who owns it) */
    gclient *shared;           /* the refcounted holder, shared with other compilations */
    int check;                 /* gg_check_mode + 1 from the `check` key; 0 = not set */
    int on_change;             /* gg_on_change (default review) */
    bool suspicious_reject;    /* suspicious_text: reject */
    bool relays;               /* some node relays its requests: the client declares the
                                  capabilities (clients.c) */
    gg_graph *graph;           /* owner, for notifications (gg_graph_set_downstream_notify) */
    char *target_graph;        /* `type: graph`: another graph of the same tenant, called
                                  in-process through gg_graph_run_options.graph_call */
    /* ${secrets.NAME} references (secrets.c); all NULL/0 for a server without any */
    char **secret_names;       /* the names its url, headers and env use */
    size_t nsecrets;
    struct gsecrets *sec;      /* resolved state, under lock (secrets.c) */
    /* `auth.per_user`: a client per caller (clients.c gg_graph_user_client), under lock */
    bool per_user;
    /* on behalf of the caller (mcp_auth_for_caller: `auth.type: token_exchange`, or
     * id_jag with `subject: caller`): a client per caller as well, each exchanging its
     * caller's own token (mcp_call_ctx.identity.subject_token) for one of this server (exec.c
     * user_client) */
    bool for_caller;
    struct gusers *users;
};

struct gg_graph {
    _Atomic int refcount;
    char *name, *title, *version, *instructions;
    int cache_ttl_ms;  /* server.cache.ttlMs (0..a day) */
    bool cache_public; /* server.cache.scope: public */
    int max_node_executions;
    long max_execution_ms;
    long max_eval_memory;      /* bytes one JSONata / JSON Logic evaluation may hold live */
    long max_run_memory;       /* bytes a run may hold: node outputs kept + one evaluation */
    gtool *tools;
    size_t ntools;             /* including the hidden tools of extras */
    size_t npublic;            /* the listed tools: g->tools[0..npublic) */
    gextra *extras;
    size_t nextras;
    json_t *resources_json, *templates_json, *prompts_json;
    gserver *servers;
    size_t nservers;
    json_t *tools_json;
    json_t *proxied;           /* servers named by proxy entries (array of strings) or NULL */
    json_t *pins;              /* gg_graph_pins, or NULL */
    json_t *withheld;          /* tool name → true: quarantined (gg_graph_tool_withheld), or NULL */
    json_t *px_extras;         /* proxy entries' resources/prompts selections (proxy_extras.c), or NULL */
    jsonata_env *env;          /* history functions */
    jsonlogic_var_resolver resolver;
    const mcp_client_policy *policy;
    const gg_graph_secrets *secrets; /* gg_graph_options.secrets (may be NULL) */
    /* gg_graph_set_downstream_notify; guarded by notify_mu */
    pthread_mutex_t notify_mu;
    gg_graph_notify_fn notify;
    void *notify_user;
    char *notify_tag;
};

void gg_graph_free_internal(gg_graph *g);
/* MCP tool-name rules: 1-128 of A-Z a-z 0-9 _ - . (load.c). */
bool gg_graph_tool_name_ok(const char *s);

/* ---- task support (load.c): a tool's taskSupport (and taskStart), read for a graph's tools
 * and for proxy entries. support: 0 forbidden (the default), 1 optional, 2 required. */
typedef struct gtask_decl {
    int support;
    bool after_input; /* taskStart: afterInput */
} gtask_decl;
#define GTASK_DECL_INIT {0, false}
/* map's taskSupport / taskStart into *td (left alone when absent); each bad value an error at
 * its line:col, and for a proxied tool (proxied) any taskStart; false after an error. */
bool gg_graph_task_decl_load(const ynode *map, bool proxied, const char *file, const char *tool, gg_graph_diags *d,
                             gtask_decl *td);
/* def's execution.taskSupport (and _meta io.graphgate/taskStart: afterInput) from td;
 * nothing for forbidden. */
void gg_graph_task_decl_apply(const gtask_decl *td, json_t *def);

/* ---- proxy entries (proxy.c) ----------------------------------------------------------
 * Each proxied tool is handed to the loader as a tool mapping (entry → pre… → downstream →
 * post… → exit; borrowed, valid during the call) plus its listed definition (def, stolen)
 * and the JSONata source of the downstream node's arguments (args, a scalar). at: where
 * errors about the tool as a whole go (its name, `as`, or `tools: all`). */
typedef struct gproxy_tool {
    const ynode *map;
    json_t *def;
    const ynode *args;
    const ynode *at;
    bool raw;          /* no post hooks: the downstream's result passes through unchanged */
} gproxy_tool;
typedef struct gproxy_sink {
    void (*add)(void *user, const gproxy_tool *t);
    void *user;
} gproxy_sink;
/* The graph's `proxy:` sequence (NULL: none); room = tools that may still be added;
 * records each entry's server in g->proxied. */
void gg_graph_proxy_load(gg_graph *g, const ynode *proxy, const char *file, const gg_graph_options *o, gg_graph_diags *d,
                 size_t room, const gproxy_sink *sink);
mcp_client *gg_graph_server_client(gserver *s, const mcp_client_policy *policy, gg_error *err);
/* proxy_extras.c: entry m's `resources`, `prompts` and `uri_prefix` checked (diagnostics at
 * their line:col, collisions with earlier entries included) and kept in g->px_extras;
 * gg_graph_forwards: the MCP_FORWARD_* kinds they give; gg_graph_forward: the provider's
 * forward (mcp/provider.h), answered through the entry's server. */
void gg_graph_proxy_extras_load(gg_graph *g, const ynode *m, const char *server, const char *prefix, const char *file,
                                gg_graph_diags *d);
int gg_graph_forwards(const gg_graph *g);
void gg_graph_forward(gg_graph *g, const char *method, json_t *params, const mcp_call_ctx *ctx, mcp_provider_done_fn done,
                      void *user);
/* clients.c: the client of a per_user server for one principal (its key_id): made on first
 * use with the principal passed to its credential provider, kept in a table of at most
 * GG_GRAPH_USERS_MAX principals per server entry (the least recently used one leaves;
 * its client is retired, freed once a call on it can no longer be in flight). NULL + err. */
#define GG_GRAPH_USERS_MAX 256
#define GG_GRAPH_PRINCIPAL_MAX 64
/* An entry unused this long leaves the table too (its client retired likewise), found on a
 * later lookup of the server's table; gg_graph_users_set_idle changes it for one server. */
#define GG_GRAPH_USER_IDLE_MS (15.0 * 60 * 1000)
void gg_graph_users_set_idle(gserver *s, double idle_ms);
/* The principals in s's table now, and into *retired (may be NULL) the clients retired and
 * not yet freed. */
size_t gg_graph_users_count(gserver *s, size_t *retired);
mcp_client *gg_graph_user_client(gserver *s, const char *principal, const mcp_client_policy *policy, gg_error *err);
/* clients.c: one hold of the caller's token on a per-user client (mcp_client_auth_subject)
 * released, if c is still one of s's (current or retired): a client already freed wiped it. */
void gg_graph_user_release(gserver *s, mcp_client *c);
/* clients.c: a per_user or for_caller server's client for the caller of ctx (a node, an
 * async branch, a proxied resource or prompt). Only an OAuth principal has grants or a token
 * of its own: an API key, the internal listener or a task gets principal_required (NULL +
 * err). For a for_caller server the caller's token is handed to the client now (the client
 * keeps a counted copy, wiped when its last holder lets go): *held is set, and the caller of
 * this lets go with gg_graph_user_release(s, c) once the call's answer is taken. */
mcp_client *gg_graph_caller_client(gserver *s, const mcp_call_ctx *ctx, bool *held, gg_error *err);
/* proxy_extras.c: g's mcpServers entry of that name (NULL: none, or name NULL). */
gserver *gg_graph_server_named(const gg_graph *g, const char *name);
/* clients.c: frees s's per-user clients (the gserver is going). */
void gg_graph_users_free(gserver *s);
/* clients.c: s gets a new client in a holder of its own (s->lock held); NULL + err. */
mcp_client *gg_graph_client_attach(gserver *s, const mcp_client_policy *policy, gg_error *err);
/* clients.c: the same, made from cfg (s->cfg with its secrets resolved; copied). */
mcp_client *gg_graph_client_attach_cfg(gserver *s, const mcp_server_config *cfg, const mcp_client_policy *policy,
                                       gg_error *err);
/* clients.c: s lets go of its holder without leaving it (the client keeps running for the
 * calls in flight on it); gg_graph_client_leave ends that later. */
gclient *gg_graph_client_release(gserver *s);
void gg_graph_client_leave(gclient *h, gserver *s);

/* ---- ${secrets.NAME} (secrets.c) --------------------------------------------------------
 * scan: the names text references, added to s (deduplicated); false + msg when a reference
 * is malformed. client: s's client for the current secrets (s->lock held): the first call
 * after the secrets generation moved replaces it, the old one serving its calls in flight
 * until their time is up. redact: a downstream's answer with every value s was given
 * replaced by "[secret:NAME]" (new reference); redact_error: the same in err's message. */
bool gg_graph_secret_scan(gserver *s, const char *text, char *msg, size_t msglen);
mcp_client *gg_graph_secrets_client(gserver *s, const mcp_client_policy *policy, gg_error *err);
json_t *gg_graph_secrets_redact(gserver *s, json_t *v);
void gg_graph_secrets_redact_error(gserver *s, gg_error *err);
void gg_graph_secrets_reclaim(gserver *s); /* frees retired clients past their time */
/* s->cfg with every reference resolved now (s->lock held; values remembered for redaction),
 * for a client made per caller (clients.c); the copies are wiped by _resolved_free. gen: the
 * secrets generation they were read at (gg_graph_secrets_generation: now; 0 = none). */
typedef struct gg_graph_resolved {
    mcp_server_config cfg;
    char *url, **headers, **env;
    json_t *auth;
    long long gen;
} gg_graph_resolved;
bool gg_graph_secrets_resolve(gserver *s, gg_graph_resolved *out, gg_error *err);
void gg_graph_secrets_resolved_free(gg_graph_resolved *r);
long long gg_graph_secrets_generation(const gserver *s);
void gg_graph_secrets_free(gserver *s);
/* clients.c: s lets go of its client (the last holder stops it). */
void gg_graph_client_detach(gserver *s);
/* s's catalog key (see GG_GRAPH_IDENTITY_MAX, catalog_check.c). */
void gg_graph_server_identity(const gserver *s, char out[GG_GRAPH_IDENTITY_MAX]);

/* pins.c: record def (the downstream's, borrowed; NULL: s's whole catalog is proxied, a
 * `tools: all` entry) as what g pinned of s's tool; scan it for
 * suspicious text (a diagnostic at line:col: a warning, or an error under
 * suspicious_text: reject) when d is set. */
void gg_graph_pin_record(gg_graph *g, const gserver *s, const json_t *def);
/* pins.c: whether an mcp node of g calls s. */
bool gg_graph_server_called(const gg_graph *g, const gserver *s);
/* pins.c: a stored version compiled from its pins (o->pinned): each mcp node calling a tool
 * that its server's `on_change: quarantine` withholds now gets gnode.withheld; the pins of
 * such servers go into g->pins (an approval recompiles the graph). */
void gg_graph_pin_nodes(gg_graph *g, const gg_graph_options *o);
void gg_graph_suspicious_check(const gserver *s, const json_t *def, gg_graph_diags *d, const char *file, int line, int col);
/* pins.c: the catalog the graph serves of s under its on_change policy, from the listed or
 * stored catalog cat (borrowed) and the version's pins (borrowed; NULL = none): a new
 * reference; *held (new object or NULL) gets the downstream tool names quarantine withholds. */
json_t *gg_graph_pin_apply(const gserver *s, json_t *cat, json_t *pins, json_t **held);

/* A downstream client's notification, passed on to the graph's notify hook (catalog_check.c). */
void gg_graph_downstream_notified(void *server, const char *method, json_t *params);
/* The URI a proxied resource's downstream uri is known by to the graph's clients, written
 * to out (n bytes); false when no entry of server selects it (proxy_extras.c). */
bool gg_graph_proxy_client_uri(const gg_graph *g, const char *server, const char *uri, char *out, size_t n);
/* The downstream check of a loaded graph (catalog_check.c); root is its YAML document. */
void gg_graph_downstream_check(gg_graph *g, const ynode *root, const char *file, const gg_graph_options *o, gg_graph_diags *d);

/* Start n's call as a fire-and-forget branch with args (borrowed) for a run of g with
 * options o (branch.c, graph.h): the node's output (new reference), never an error. */
json_t *gg_graph_async_start(gg_graph *g, const gnode *n, json_t *args, const gg_graph_run_options *o);

/* Diagnostics helper (diag.c). */
void gg_graph_diag_add(gg_graph_diags *d, gg_diag_severity sev, const char *code, const char *file,
               int line, int col, const char *tool, const char *node, const char *fmt, ...)
    __attribute__((format(printf, 9, 10)));

/* Drop diagnostics from index start on that repeat an earlier one (code, file, position). */
void gg_graph_diag_dedupe_from(gg_graph_diags *d, size_t start);

/* History functions registered in the graph's JSONata environment (exec.c). */
jsonata_env *gg_graph_history_env(gg_error *err);
extern const jsonlogic_var_resolver gg_graph_var_resolver_template;

#endif
