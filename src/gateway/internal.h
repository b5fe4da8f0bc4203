/* internal.h — what the gateway's files share: the context, the registry, the worker pool,
 * the HTTP helpers. Not for use outside src/gateway. */
#ifndef GG_GATEWAY_INTERNAL_H
#define GG_GATEWAY_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>

#include "auth/auth.h"
#include "app/app.h"
#include "gateway/gateway.h"
#include "graph/graph.h"
#include "http/http.h"
#include "mcp/mcp.h"
#include "store/store.h"

/* ---- worker pool (pool.c) --------------------------------------------------------------
 * Fixed threads fed by per-tenant queues served round-robin; submit never waits. */
typedef struct gw_pool gw_pool;
typedef struct gw_job {
    void (*run)(void *arg);    /* on a worker */
    void (*refuse)(void *arg); /* instead of run, when the pool stops before it started */
    void *arg;
    const char *tenant;        /* fair-queueing key (copied); NULL or "" = mounts */
} gw_job;
typedef enum { GW_SUBMIT_OK, GW_SUBMIT_FULL, GW_SUBMIT_TENANT_FULL, GW_SUBMIT_STOPPING } gw_submit_rc;
/* tenant_running: jobs of one tenant on workers at once; tenant_queued: new calls of one
 * tenant waiting while another tenant has calls waiting too (0 = no cap); a tenant alone
 * may queue up to half of queue_size. */
gw_pool *gw_pool_new(int threads, int queue_size, int tenant_running, int tenant_queued);
/* Anything but GW_SUBMIT_OK: the job was not taken. */
gw_submit_rc gw_pool_submit(gw_pool *p, gw_job job);
/* A run's continuation (its downstream answer arrived): queued fairly, never refused. */
void gw_pool_resume(gw_pool *p, gw_job job);
/* Stop: queued calls are refused, queued continuations run, running ones finish (the caller
 * cancels them first); joins the threads and frees the pool. */
void gw_pool_stop(gw_pool *p);
int gw_pool_queued(gw_pool *p);
/* Take every tenant's queued calls out now and run their refuse (run when none) on the
 * calling thread: SIGTERM answers what has not started at once. Queued continuations stay
 * for the workers (their calls are running and finish). Returns how many were refused. */
int gw_pool_refuse_queued(gw_pool *p);
int gw_pool_threads(gw_pool *p);

/* ---- graph uploads (uploads.c) ---------------------------------------------------------
 * Validation threads apart from the worker pool; at most per_tenant uploads of one tenant
 * queued or running. submit never waits: false + err "busy" (queue full), "rate_limited"
 * (the tenant's uploads are pending) or "shutting_down". stop refuses what has not started,
 * waits for what runs, joins and frees. */
typedef struct gw_uploads gw_uploads;
gw_uploads *gw_uploads_new(int threads, int per_tenant);
bool gw_uploads_submit(gw_uploads *u, const char *tenant, gw_job job, gg_error *err);
void gw_uploads_stop(gw_uploads *u);

/* ---- tenant-wide endpoint (tenantwide.c) -----------------------------------------------
 * /mcp/{tenant}/_all: every active graph's tools as "<graph>.<tool>" (a name graphs cannot
 * take: they are [a-z0-9-]). The server is built per request over the registry's servers
 * (a new reference) or NULL + err when the store cannot list the graphs. */
#define GW_TENANTWIDE "_all"
typedef struct gw_tenantwide_cache gw_tenantwide_cache; /* servers built lately, reused while nothing changed */
gw_tenantwide_cache *gw_tenantwide_cache_new(void);
void gw_tenantwide_cache_free(gw_tenantwide_cache *c);
mcp_server *gw_tenantwide_server(gg_gateway *gw, const char *tenant, json_t *view /* NULL = all */, gg_error *err);
/* Which graph (and its version) and tool a tenant-wide or view server's tool name runs
 * (strings borrowed from s): false for any other server or an unknown name. */
bool gw_tenantwide_target(mcp_server *s, const char *name, const char **graph, const char **tool, int *version);
/* The selected names of a view server that no graph offers now (new array). */
json_t *gw_tenantwide_missing(mcp_server *s);
/* The definition a view server was built from (compact JSON, sorted keys; borrowed from s),
 * NULL for any other server: what its clients were last told about. */
const char *gw_tenantwide_view_text(const mcp_server *s);
/* A tenant-wide or view server s's proxied uri ("<graph>.<uri>" of a graph it serves
 * resources of) subscribed to at its downstream, as resources/subscribe there does (a
 * subscriptions/listen stream's resourceSubscriptions); false for anything else. */
bool gw_tenantwide_subscribe(const mcp_server *s, const char *uri);
/* ---- views (views.c): /mcp/{tenant}/_views/{name} over the admin REST's definitions ---- */
#define GW_VIEWS_PREFIX "_views/"
#define GW_VIEWS_MAX 100      /* views per tenant */
#define GW_VIEW_TOOLS_MAX 200 /* tools per view */
#define GW_VIEW_NAME_MAX 48   /* view names: [a-z0-9-], as graph names, at most this long */
/* The view's server (new reference) or NULL + err ("not_found" for no such view). */
mcp_server *gw_view_server(gg_gateway *gw, const char *tenant, const char *view, gg_error *err);
/* tenant/graph has a new active version or is gone: list_changed on the open GET streams of
 * the tenant-wide endpoint and of each view selecting one of the graph's tools. */
void gw_tenantwide_graph_changed(gg_gateway *gw, const char *tenant, const char *graph);
/* The watcher (every second, and at once on a views change notification): when the store's
 * views generation moved, each view with clients on this replica whose definition changed
 * (on any replica) sends them list_changed; a deleted one ends their streams. */
void gw_views_check(gg_gateway *gw);
/* Add [tenant, graph] to out (an object keyed by both: each endpoint once). */
void gw_endpoint_add(json_t *out, const char *tenant, const char *graph);
int gw_views_put(gg_http_req *req, gg_http_res *res, void *user);
int gw_views_get(gg_http_req *req, gg_http_res *res, void *user);
int gw_views_list(gg_http_req *req, gg_http_res *res, void *user);
int gw_views_delete(gg_http_req *req, gg_http_res *res, void *user);
/* MCP 2025-11-25 tool name: 1..128 of [A-Za-z0-9_.-]. */
bool gw_valid_tool_name(const char *s);

/* ---- graph registry (registry.c) -------------------------------------------------------
 * (tenant, graph) → the active version number, and its compiled mcp_server in a bounded
 * LRU cache: compiled on first use through the loader, dropped past cache_size when nobody
 * else holds it. Readers take a reference; activation swaps the pointer under the write
 * lock; runs in flight and open streams keep their server alive until they let go. */
typedef struct gw_registry gw_registry;
/* Compile tenant/graph's stored version (a new reference) or NULL + err. */
typedef mcp_server *(*gw_registry_loader)(void *user, const char *tenant, const char *graph, int version,
                                          gg_error *err);
typedef struct gw_registry_stats {
    size_t graphs, compiled, cache_size;
    unsigned long long hits, compiles, evictions, load_failures;
} gw_registry_stats;
gw_registry *gw_registry_new(size_t cache_size, gw_registry_loader loader, void *loader_user);
void gw_registry_free(gw_registry *r);
/* New reference, compiled now when not cached; *version gets its number. NULL + err
 * ("not_found" or the loader's error). */
mcp_server *gw_registry_get(gw_registry *r, const char *tenant, const char *graph, int *version, gg_error *err);
/* The cached server (new reference) or NULL; never compiles. */
mcp_server *gw_registry_peek(gw_registry *r, const char *tenant, const char *graph, int *version);
/* Install srv (reference taken, cached) as the active version of tenant/graph. */
bool gw_registry_put(gw_registry *r, const char *tenant, const char *graph, int version, mcp_server *srv);
/* Install srv as tenant/graph's active version only while version is still the active one
 * (a recompile must not undo an activation that happened meanwhile). */
bool gw_registry_refresh(gw_registry *r, const char *tenant, const char *graph, int version, mcp_server *srv);
/* The store sync: version is active (not compiled until used); mark tags this pass;
 * *was_hot (may be NULL): another version was compiled in the cache and was dropped. */
bool gw_registry_declare(gw_registry *r, const char *tenant, const char *graph, int version, unsigned mark,
                         bool *was_hot);
/* Forget every graph not declared in pass mark. */
void gw_registry_sweep(gw_registry *r, unsigned mark);
void gw_registry_remove(gw_registry *r, const char *tenant, const char *graph);
void gw_registry_remove_tenant(gw_registry *r, const char *tenant);
size_t gw_registry_count(gw_registry *r);
json_t *gw_registry_list(gw_registry *r); /* [[tenant, graph, version], ...] */
/* Drop compiled versions over the size that are no longer in use. */
void gw_registry_trim(gw_registry *r);
gw_registry_stats gw_registry_get_stats(gw_registry *r);
/* Called after every put or declare of a new active version and every removal, outside the
 * registry lock. */
typedef void (*gw_registry_hook)(void *user, const char *tenant, const char *graph, bool removed);
void gw_registry_set_hook(gw_registry *r, gw_registry_hook fn, void *user); /* before use */

/* ---- the context (gateway.c) ----------------------------------------------------------- */
#define GW_MAX_MOUNTS 8

typedef struct gw_mount {
    struct gg_gateway *gw;
    char name[64];
    pthread_mutex_t mu;
    mcp_server *srv; /* swapped under mu */
} gw_mount;

struct gg_gateway {
    gg_app *app;
    const gg_config *cfg;
    gg_store *store;
    gg_auth *auth;
    gg_oauth *oauth;       /* tenants' authorization servers and token checks (oauth.c) */
    struct gw_secrets *secrets; /* tenant secrets: the key, the graphs' seam (secrets.c) */
    char public_base[256]; /* public_url, or http://<loopback listen>; "" = tokens not taken;
                            * written once (at start, or right after the listeners bound,
                            * when the port is known), then public_base_ready set */
    atomic_bool public_base_ready;
    gg_history *history;
    mcp_sessions *sessions;
    gw_pool *pool;
    gw_registry *registry;
    mcp_client_policy policy;
    char **policy_commands, **policy_hosts; /* NULL-terminated copies for policy */
    char **policy_grants[2];                 /* tenant command / host grants, same */
    mcp_policy_self *policy_self;            /* our listeners: never a graph's target */
    mcp_policy_set *policies;                /* policy plus per-tenant grants */
    bool public_loopback, internal_loopback;
    gw_mount mounts[GW_MAX_MOUNTS];
    int nmounts;
    /* running calls, so shutdown can cancel them */
    pthread_mutex_t jobs_mu;
    pthread_cond_t jobs_cv;
    struct gw_call_job *jobs;
    atomic_int running;    /* changed under jobs_mu; /metrics reads it without */
    atomic_int stopping;
    bool durable;          /* history.durability: durable — answers wait for the commit */
    atomic_int draining;   /* SIGTERM came; calls not yet started are refused */
    /* store change watcher */
    pthread_t watcher;
    bool watcher_started;
    pthread_mutex_t sync_mu; /* one sync at a time */
    pthread_mutex_t watch_mu;
    pthread_cond_t watch_cv;
    long long graphs_gen;
    long long views_gen;          /* the watcher's: the views generation last handled */
    /* PostgreSQL change notifications (NULL on SQLite): the notifier thread waits on the
     * watch and pokes the watcher, which re-reads what changed at once */
    struct gg_store_watch *watch;
    pthread_t notifier;
    bool notifier_started;
    atomic_int watch_poke;    /* GG_WATCH_* bits not yet handled by the watcher */
    double tasks_poked_ms;    /* the watcher's last pass for GG_WATCH_TASKS (watcher thread only) */
    atomic_int notify_up;     /* the watch's connection is up (for /metrics) */
    _Atomic unsigned long long notifications_total;
    /* counters for /metrics */
    _Atomic unsigned long long calls_total, calls_rejected, calls_failed;
    _Atomic unsigned long long calls_inline, calls_inline_over; /* run on the HTTP thread / outgrew the budget */
    /* calls to tools that may wait on downstream servers, in flight (bounded per tenant by
     * tenants.max_waiting and in all by max_waiting_runs) */
    pthread_mutex_t waiting_mu;
    gg_tally waiting;           /* per-tenant counts (under waiting_mu) */
    _Atomic int waiting_total;
    int tenant_max_waiting, max_waiting;
    struct gw_streams *streams; /* standalone GET SSE streams (streams.c) */
    struct gw_listen *listen;   /* 2026-07-28 subscriptions/listen streams (listen.c) */
    struct gw_tenantwide_cache *tenantwide_cache; /* tenant-wide and view servers (tenantwide.c); NULL = none */
    uint8_t state_key[32];      /* seals 2026-07-28 requestStates: from session.secret, so
                                   every replica sharing it resumes them (else random) */
    gg_history_quota *quota;    /* per-tenant history quota pass (store/usage.c) */
    gw_uploads *uploads;        /* graph validation threads (uploads.c, started by admin.c) */
    unsigned sync_mark;         /* the store sync's pass (under sync_mu) */
    struct gw_refresher *refresher; /* periodic downstream catalog refresh (catalogs.c) */
    struct gw_dsauth *dsauth;       /* downstream servers' OAuth providers (downstream_auth.c) */
    struct gw_consent *consent;     /* per-user consent for downstream servers (consent.c) */
    struct gw_async *async;         /* fire-and-forget branches (branches.c) */
};

/* Compile a graph source into an MCP server (diagnostics into diags, may be NULL). opts NULL
 * = gw_graph_options(gw, false, 0): how stored versions are loaded. */
mcp_server *gw_build_graph(gg_gateway *gw, const char *tenant, const char *graph,
                           const char *source, size_t len, const gg_graph_options *opts,
                           gg_graph_diags *diags, gg_error *err);
/* The loader options the configuration asks for (admin.c): the operator's caps on
 * executionLimits (an upload declaring more is refused; a stored version is clamped) and,
 * for uploads, the size limit and the deadline. gw_build_graph adds the policy. */
gg_graph_options gw_graph_options(const gg_gateway *gw, bool upload, double deadline_ms);

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
/* admin.c's authorization of a tenant route for other files: false = answered. */
bool gw_admin_allow(gg_gateway *gw, gg_http_req *req, gg_http_res *res, const char *tenant, gg_scope need);
/* The same, keeping the principal (for gw_admin_audit). */
bool gw_admin_allow_as(gg_gateway *gw, gg_http_req *req, gg_http_res *res, const char *tenant, gg_scope need,
                       gg_principal *pr);
/* Publish src as tenant/graph's new active version for pr, exactly as PUT
 * /admin/tenants/{t}/graphs/{g} does (graphs:write on the tenant, name, size, the upload
 * threads and their per-tenant bound and time limit, validation with the downstream check,
 * cycle check, quota, store, install, audit "graph.put"). done gets the REST answer's status
 * and body (stolen; 201 {tenant, graph, version, tools, warnings} or {"error":...}) exactly
 * once, on an upload thread or before this returns; every string must live until then. */
typedef void (*gw_publish_done)(void *user, int status, json_t *body);
void gw_publish_graph(gg_gateway *gw, const gg_principal *pr, const char *tenant, const char *graph, const char *src,
                      size_t len, gw_publish_done done, void *user);
/* false with 404 (or the store's error) filled when tenant does not exist. */
bool gw_admin_tenant_exists(gg_gateway *gw, gg_http_res *res, const char *tenant);
/* An audit log entry for a change by pr (details stolen, may be NULL). */
void gw_admin_audit(gg_gateway *gw, const gg_principal *pr, const char *tenant, const char *action, const char *target,
                    json_t *details);

/* ---- HTTP helpers (mcp_http.c) ---------------------------------------------------------- */
/* Authenticate a public request: on failure the response (401/429/503) is filled and false
 * returned. Rate limit included. */
bool gw_authenticate(gg_gateway *gw, gg_http_req *req, gg_http_res *res, gg_principal *out);
/* 403 {"error":{"code":"insufficient_scope","message":"Required scope: x","required_scope":"x"}}. */
void gw_insufficient_scope(gg_http_res *res, gg_scope need);
/* ---- MCP endpoints as OAuth protected resources (oauth.c) ------------------------------ */
typedef struct gw_resource {
    gg_resource r;
    char url[800], meta[840];
} gw_resource;
/* gw_authenticate for the MCP endpoints /mcp/{tenant}/...: an API key, or an access token
 * issued for this endpoint by the tenant's authorization servers; 401s carry the challenge
 * naming the endpoint's protected-resource metadata. */
bool gw_authenticate_mcp(gg_gateway *gw, gg_http_req *req, gg_http_res *res, gg_principal *out);
/* gw_insufficient_scope on an MCP endpoint: for a token also the step-up challenge. */
void gw_insufficient_scope_mcp(gg_gateway *gw, gg_http_req *req, gg_http_res *res, const gg_principal *p,
                               gg_scope need);
/* The tenant's console resource: <public base>/admin/tenants/{t} (its admin routes); url
 * NULL when there is no public base or tenant is no valid name. */
#define GW_TENANT_ADMIN "/admin/tenants/"
void gw_tenant_resource(gg_gateway *gw, const char *tenant, gw_resource *out);
/* gw_authenticate for a tenant's admin routes: an API key, or a token of the tenant's
 * authorization servers whose audience is the tenant's console resource. */
bool gw_authenticate_tenant(gg_gateway *gw, gg_http_req *req, gg_http_res *res, const char *tenant,
                            gg_principal *out);
/* gw_insufficient_scope on a tenant's admin route: for a token also the step-up challenge. */
void gw_insufficient_scope_tenant(gg_gateway *gw, gg_http_res *res, const char *tenant, const gg_principal *p,
                                  gg_scope need);
/* Start the token checker and install the admin and metadata routes. */
bool gw_oauth_start(gg_gateway *gw, gg_error *err);
/* secrets.c: tenant secrets. start: the master key from the configuration (refusing to
 * start with secrets stored and no key, or another key), the admin routes; check: the
 * watcher's pass (generation, batched last_used); seam: what gw_build_graph hands the
 * graphs (NULL before start). */
bool gw_secrets_start(gg_gateway *gw, gg_error *err);
void gw_secrets_check(gg_gateway *gw);
const gg_graph_secrets *gw_secrets_seam(gg_gateway *gw);
void gw_secrets_free(gg_gateway *gw);
/* The master key (per-user grants are sealed with it too), or NULL when none is configured. */
const gg_store_vault *gw_secrets_vault(gg_gateway *gw);
/* consent.c: per-user consent for downstream servers (`auth.per_user`, docs/oauth.md): the
 * graphs' consent hook (gg_graph_consent_fn: the -32042 elicitation naming the connect
 * page), and the public routes GET /oauth/connect and GET /oauth/callback. start: after
 * gw_secrets_start (the state key derives from the master key); free waits for its helpers. */
bool gw_consent_start(gg_gateway *gw, gg_error *err);
void gw_consent_free(gg_gateway *gw);
json_t *gw_consent_elicitation(void *gw, const char *tenant, const char *server, const char *url, const json_t *auth,
                               const mcp_caller *who);
void gw_oauth_metrics(gg_gateway *gw, gg_strbuf *out);
/* The providers of downstream servers' `auth:` credentials (downstream_auth.c): installed as
 * the MCP client's factory, kept per tenant for the admin view and /metrics. */
struct gw_dsauth *gw_dsauth_install(gg_gateway *gw);
/* The egress checks of an OAuth client's own requests under a tenant's policy. */
gg_oauth_client_net gw_dsauth_net(const mcp_client_policy *policy);
void gw_dsauth_free(struct gw_dsauth *reg); /* the memory goes with the last provider */
json_t *gw_dsauth_tenant(struct gw_dsauth *reg, const char *tenant); /* [{server, url, state, …}] */
/* servers acting for each caller (mcp_auth_for_caller), one row each: [{server, url, callers
 * (principals with a client on this replica), valid (of those, holding a token), requests,
 * failures, last_failure?, last_failure_ms?}] — never a principal, never a token */
json_t *gw_dsauth_for_callers(struct gw_dsauth *reg, const char *tenant);
void gw_dsauth_metrics(struct gw_dsauth *reg, gg_strbuf *out);
/* An execution record (borrowed, changed): "caller" {issuer, subject, client_id, scopes} when
 * its key_id is a principal that called with an OAuth token, else nothing added. */
void gw_oauth_caller(gg_gateway *gw, json_t *execution);
/* GET /admin/tenants/{t}/principals: who called with tokens (graphs:write own, or admin). */
int gw_oauth_principals(gg_http_req *req, gg_http_res *res, void *user);
/* 403 when a key of one tenant reaches for another's resources. */
void gw_wrong_tenant(gg_http_res *res);
/* The bounds on runs waiting on downstream servers (tenants.max_waiting, max_waiting_runs)
 * for runs not started by a graph endpoint: 0 = taken (release it once), 1 = the tenant's
 * bound is full, 2 = the server's. */
int gw_waiting_acquire(gg_gateway *gw, const char *tenant);
void gw_waiting_release(gg_gateway *gw, const char *tenant);
/* Origin and Host (DNS rebinding) checks; fills 403/421 and returns false on refusal. */
bool gw_origin_host_ok(gg_gateway *gw, gg_http_req *req, gg_http_res *res);

bool gw_mcp_install_routes(gg_gateway *gw, gg_error *err);
bool gw_mount_routes(gg_gateway *gw, gw_mount *m, gg_error *err);
bool gw_admin_install_routes(gg_gateway *gw, gg_error *err);
/* True (and why, for the 503) when a new tools/call must be refused before it runs: the
 * server is draining, the history backlog is full (graph calls), or — durable mode, graph
 * calls — the history cannot be written. */
bool gw_refuse_calls(gg_gateway *gw, bool is_graph, char *why, size_t why_size);
/* Cancel running calls and wait for them (shutdown). */
void gw_cancel_running(gg_gateway *gw);
/* Submit RUNNING records for runs older than min_age_ms (called by the watcher). */
void gw_announce_long_runs(gg_gateway *gw, double min_age_ms);
/* History backlog marks (the writer queues at most 65536 records by default): past the
 * soft mark workers wait for the writer before starting a run; past the hard mark new calls
 * are refused (503) so that no run is ever left unrecorded. */
#define GW_HISTORY_BACKLOG_SOFT 16384ull
#define GW_HISTORY_BACKLOG_MAX 60000ull
#define GW_ANNOUNCE_AFTER_MS 50.0

/* ---- standalone GET SSE streams (streams.c) ---------------------------------------------
 * GET /mcp/{tenant}/{graph} (and the internal and mount routes) opens a server-to-client
 * stream carrying notifications/tools/list_changed; see streams.c for the rules. */
#define GW_STREAMS_PER_SESSION 4 /* more GETs on one session → 409 */
#define GW_STREAMS_MAX 512       /* in all (half the public listener's connections) → 503 */
#define GW_STREAM_PING_MS 15000  /* ": ping" comment on idle streams, for proxies */
#define GW_STREAM_TICK_MS 250    /* the keeper's pass: dead clients, expiry, shutdown */
#define GW_REPLAY_EVENTS 16      /* events kept per session for GET streams resumed with Last-Event-ID */
#define GW_REPLAY_SESSIONS 1024  /* sessions whose log is kept with no stream open (more → logs dropped) */
typedef struct gw_streams gw_streams;
/* Resumable POST streams (tools/call of a 2025-11-25 session; streams.c): each logs its
 * last GW_POST_EVENTS events (the final response apart), at most GW_POST_STREAMS_MAX at once
 * (more answer on their POST without resumability); a stream whose run ended undelivered
 * waits GW_POST_KEEP_MS for a resume; a run whose client dropped its connection (not one
 * the server ended early) is cancelled unless it resumes within GW_POST_GRACE_MS (at once
 * when no event id went out). A POST ended early (mcp.sse_close_after) carries
 * "retry: GW_POST_RETRY_MS" so clients come back at once. */
#define GW_POST_EVENTS 16
#define GW_POST_STREAMS_MAX 1024
#define GW_POST_KEEP_MS 60000.0
#define GW_POST_GRACE_MS 1000.0 /* a connection the client dropped: resume by then or the run is cancelled */
#define GW_POST_RETRY_MS_S "250"
typedef struct gw_pstream gw_pstream;
gw_pstream *gw_pstream_open(gw_streams *s, const mcp_session *sess, gg_http_async *a, atomic_int *cancel,
                            long long close_after_ms);
void gw_pstream_event(gw_streams *s, gw_pstream *ps, const char *json);
void gw_pstream_finish(gw_streams *s, gw_pstream *ps, char *body, int status);
gw_streams *gw_streams_new(gg_gateway *gw);
void gw_streams_free(gw_streams *s);
/* srv: the endpoint's server; each session with a stream holds a reference (the newest
 * version it was told about), so the graph cache never frees a version under a stream. */
int gw_streams_get(gg_gateway *gw, gg_http_req *req, gg_http_res *res, const char *tenant, const char *graph,
                   mcp_server *srv, const gg_principal *pr);
void gw_streams_tools_changed(gw_streams *s, const char *tenant, const char *graph, mcp_server *srv);
/* A view's definition may have changed: list_changed to the sessions on tenant/graph whose
 * server was built from another definition than srv's; they then hold srv. */
void gw_streams_view_changed(gw_streams *s, const char *tenant, const char *graph, mcp_server *srv);
/* msg (a serialized notification) once to each session with a stream on tenant/graph (a
 * downstream's resources/prompts list_changed relayed, catalogs.c). */
void gw_streams_notify(gw_streams *s, const char *tenant, const char *graph, const char *msg);
/* notifications/resources/updated of uri to each session on tenant/graph subscribed to it,
 * at most one per (session, uri) each GW_UPDATED_MIN_MS (more within it: one trailing, sent
 * by the keeper's next pass); returns how many sessions are subscribed (catalogs.c). */
#define GW_UPDATED_MIN_MS 250
#define GW_UPDATED_PER_SESSION 64 /* = a session's subscriptions (mcp_session_subscribe) */
size_t gw_streams_updated(gw_streams *s, const char *tenant, const char *graph, const char *uri);
/* Per-user consent arrived (consent.c): notifications/elicitation/complete for elicitation_id
 * on the GET stream of session (its nonce, 32 hex digits) of tenant, if it has one on this
 * replica (else logged for its resume, as list_changed is); false when nothing took it. */
bool gw_streams_elicitation_complete(gw_streams *s, const char *tenant, const char *session, const char *elicitation_id);
/* Each endpoint whose graph part starts with prefix that has a session stream (gw_endpoint_add). */
void gw_streams_endpoints(gw_streams *s, const char *prefix, json_t *out);
/* Whether some GET stream is open now on an endpoint of tenant whose graph part starts with
 * prefix (the tenant-wide endpoints ask before they build a server to notify with). */
bool gw_streams_any_on(gw_streams *s, const char *tenant, const char *prefix);
void gw_streams_end_graph(gw_streams *s, const char *tenant, const char *graph);
void gw_streams_end_session(gw_streams *s, const mcp_session *sess);
void gw_streams_registry_hook(void *user, const char *tenant, const char *graph, bool removed);
size_t gw_streams_count(gw_streams *s);

/* ---- subscriptions/listen streams of the 2026-07-28 revision (listen.c) */
typedef struct gw_listen gw_listen;
gw_listen *gw_listen_new(gg_gateway *gw);
void gw_listen_free(gw_listen *l); /* ends what is still open */
/* Open the stream for a checked subscriptions/listen request m (borrowed). */
int gw_listen_open(gg_gateway *gw, gg_http_req *req, gg_http_res *res, const char *tenant, const char *graph,
                   const mcp_server *srv, const mcp_message *m, int client_caps);
void gw_listen_changed(gw_listen *l, const char *tenant, const char *graph); /* a new version is active */
/* A tenant-wide or view endpoint changed to srv: list_changed to its streams (view_only:
 * only those told about another view definition than srv's). */
void gw_listen_changed_to(gw_listen *l, const char *tenant, const char *graph, const mcp_server *srv, bool view_only);
bool gw_listen_any_on(gw_listen *l, const char *tenant, const char *prefix); /* as gw_streams_any_on */
void gw_listen_endpoints(gw_listen *l, const char *prefix, json_t *out);    /* as gw_streams_endpoints */
/* End streams gracefully: of tenant/graph, of tenant (graph NULL), or all (tenant NULL). */
void gw_listen_end(gw_listen *l, const char *tenant, const char *graph);
void gw_listen_tick(gw_listen *l, double now_ms); /* the watcher: reap, ping, end all when stopping */
/* A downstream's notifications/resources|prompts/list_changed (method) relayed to the
 * streams on tenant/graph whose filter asks for it (catalogs.c, already debounced). */
void gw_listen_relay(gw_listen *l, const char *tenant, const char *graph, const char *method);
/* A proxied resource's notifications/resources/updated of uri to the streams on tenant/graph
 * naming it in resourceSubscriptions, rate-bounded as gw_streams_updated; returns how many
 * streams name it (catalogs.c: none here or in sessions → the downstream is unsubscribed). */
size_t gw_listen_updated(gw_listen *l, const char *tenant, const char *graph, const char *uri);
/* notifications/tasks (task_listen.c, listen.c): a listen stream names up to GW_LISTEN_TASKS
 * task ids of its endpoint (params.notifications.taskIds); each status change of one is sent
 * as its DetailedTask. The task's row changed here (tasks.c): its listeners hear it now. */
#define GW_LISTEN_TASKS 16
void gw_listen_task_changed(gw_listen *l, const char *tenant, const char *task_id);
/* The watcher, each second or when the store's change watch says tasks changed: re-read the
 * rows of the live tasks the streams watch (changes made by another replica or a restart). */
void gw_listen_tasks_check(gw_listen *l);
/* graphgate_task_notifications_total{outcome} for /metrics. */
void gw_listen_metrics(gw_listen *l, gg_strbuf *out);
/* One stream's watched tasks (task_listen.c); the listener owns it. */
typedef struct gw_task_watch gw_task_watch;
/* From the request's params.notifications: NULL + *error (a JSON-RPC error body) when taskIds
 * is malformed or the request did not declare the tasks extension; NULL and no error when it
 * names no tasks. Ids are accepted when the tenant's store has them on graph. */
gw_task_watch *gw_task_watch_open(gg_gateway *gw, const char *tenant, const char *graph, const mcp_message *m,
                                  int client_caps, char **error);
void gw_task_watch_free(gw_task_watch *w);
json_t *gw_task_watch_ids(const gw_task_watch *w); /* the accepted ids (for the acknowledgement) */
/* Whether w watches the task and r is news to it (not yet sent, and not after a terminal status). */
bool gw_task_watch_due(const gw_task_watch *w, const gg_task_row *r);
void gw_task_watch_sent(gw_task_watch *w, const gg_task_row *r); /* r went out */
void gw_task_watch_gone(gw_task_watch *w, const char *id);         /* its row is deleted */
/* The ids w still expects changes of (not terminal): out["tenant\nid"] = [tenant, id]. */
void gw_task_watch_live(const gw_task_watch *w, const char *tenant, json_t *out);
/* The registry hook for GET streams and listen streams (user: the gateway). */
void gw_registry_changed(void *user, const char *tenant, const char *graph, bool removed);
size_t gw_streams_tenant_count(gw_streams *s, const char *tenant); /* counted in tenants.max_streams */
size_t gw_streams_tenant_posts(gw_streams *s, const char *tenant); /* tenants.max_resumable_streams */

/* trace.c: a tools/call's server span (NULL with telemetry off); the call's trace context
 * is taken from the client (_meta, else HTTP headers) and then set to the span's. */
gg_span *gw_call_span_begin(gg_http_req *req, mcp_call *call, const char *tenant, const char *graph, int version,
                            const char *key_id);
void gw_call_span_end(gg_span *s, mcp_call *call, const char *refused);

/* ---- the authoring toolkit (toolkit.c, toolkit_run.c) ---------------------------------- */
/* A CallToolResult with sc (stolen) as structuredContent and its JSON as text; an error
 * result {"error":{code,message}}. */
json_t *gw_toolkit_result(json_t *sc, bool is_error);
json_t *gw_toolkit_error(const char *code, const char *message);
/* run_graph: compile args.yaml for ctx->tenant and run args.tool with args.arguments on the
 * executor, under every limit a stored graph's run has; done gets {ok, output | error,
 * trace, ...} exactly once (a worker, or before this returns). Stores nothing. */
void gw_toolkit_run_graph(gg_gateway *gw, json_t *args, const mcp_call_ctx *ctx, mcp_provider_done_fn done,
                          void *user);

/* ---- graph-to-graph calls (graphcall.c) ------------------------------------------------
 * gg_graph_call_fn of every graph provider the gateway builds (user = the gateway): runs a
 * tool of another graph of the caller's tenant in-process on the same worker pool, records
 * it as its own execution with the caller's as parent, and refuses past GW_GRAPH_CALL_DEPTH
 * nested calls ("depth_exceeded"). The name is looked up in the caller's tenant only. */
#define GW_GRAPH_CALL_DEPTH 8
void gw_graph_call(void *user, const mcp_call_ctx *caller, const char *graph, const char *tool, json_t *arguments,
                   atomic_int *cancelled, void (*done)(void *done_user, json_t *result, gg_error *err), void *done_user);
/* Refuse an upload whose graph calls itself through other graphs (their active versions):
 * false + err (code "graph_cycle", the path in the message). */
bool gw_graph_calls_acyclic(gg_gateway *gw, const char *tenant, const char *graph, const gg_graph *g, gg_error *err);
/* The tool's value of a CallToolResult into the record (mcp_http.c). */
void gw_record_result(gg_exec_record *r, json_t *res);

/* ---- fire-and-forget branches (branches.c) -------------------------------------------------
 * The gg_graph_async_hooks of every graph provider the gateway builds: per-tenant and total
 * bounds on outstanding branches (0 = no cap), one execution row per branch (parent_id =
 * the caller's), shutdown that waits, then cancels and records what is left as interrupted. */
typedef struct gw_async gw_async;
#define GW_ASYNC_DRAIN_MS 5000.0
gw_async *gw_async_new(gg_gateway *gw, int tenant_max, int max);
const gg_graph_async_hooks *gw_async_hooks(gw_async *a);
/* No new branches; wait up to wait_ms, then cancel the rest and wait for their rows. */
void gw_async_drain(gw_async *a, double wait_ms);
void gw_async_free(gw_async *a);
/* graphgate_async_branches_outstanding and graphgate_async_branches_total{event} for /metrics. */
void gw_async_metrics(gw_async *a, gg_strbuf *out);

/* ---- MCP 2026-07-28 tasks (tasks.c) ---------------------------------------------------- */
/* Where a task runs: the endpoint's tenant, graph, active version and server; ep is
 * mcp_http.c's endpoint, handed back to gw_task_run. */
typedef struct gw_task_place {
    const char *tenant, *graph;
    int version;
    mcp_server *srv;
    void *ep;
} gw_task_place;
/* At start: remember this replica's id (written to the tasks it runs) and mark its tasks
 * left working by a previous process failed (all of them: SQLite, one process). */
bool gw_tasks_recover(gg_gateway *gw, const char *replica, bool all, gg_error *err);
/* Store a new working task for call; its CreateTaskResult (a JSON-RPC response) and its
 * id in task_id, or NULL + err ("too_many" past tenants.max_tasks, store errors). */
char *gw_task_create(gg_gateway *gw, const char *tenant, const char *graph, int version, const char *key_id,
                     int client_caps, mcp_call *call, char task_id[48], gg_error *err);
/* The task's run is running here with this cancel flag (tasks/cancel sets it). */
void gw_task_track(const char *tenant, const char *id, atomic_int *cancel);
/* Each second (the watcher): running tasks of this process cancelled in the store (by
 * tasks/cancel on another replica) get their cancel flag set. */
void gw_tasks_check_cancels(gg_gateway *gw);
/* The task's run ended with body (consumed): its end goes to the store. */
void gw_task_finish(gg_gateway *gw, const char *tenant, const char *task_id, mcp_call *call, char *body);
/* The DetailedTask of row r: what tasks/get answers (as_result: with resultType "complete")
 * and what notifications/tasks carries (without). NULL on OOM. */
json_t *gw_task_detailed(const gg_task_row *r, bool as_result);
/* tasks/get, tasks/update, tasks/cancel (other tasks methods: -32601): the response body. */
char *gw_tasks_dispatch(gg_gateway *gw, const gw_task_place *pl, const mcp_message *m, int client_caps);
/* mcp_http.c: run call as task task_id on the pool (ep: an endpoint*); false + why when refused. */
bool gw_task_run(gg_gateway *gw, void *ep, mcp_call *call, const char *key_id, const char *task_id, char *why,
                 size_t why_n);

#endif
