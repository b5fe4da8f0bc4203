/* internal.h — what nearly every gateway file shares: the context (struct gg_gateway and
 * its mounts), the worker pool, the upload threads, the graph registry, compiling a graph,
 * and the calls' admission, routes and shutdown (gateway.c, mcp_http.c, admin.c). The rest
 * is split by concern, each included only where used: gateway/relay.h (streams, listen,
 * tenant-wide and views), gateway/catalogs.h (downstream catalogs, pins, refresher),
 * gateway/authz.h (authentication, scopes, admin checks and audit), gateway/credentials.h
 * (secrets, consent, downstream OAuth) and gateway/calls.h (trace, graph calls, branches,
 * tasks, toolkit). Not for use outside src/gateway.
 *
 * Ownership: gateway.c makes the gg_gateway and what it points to (admin.c starts the
 * upload threads) and frees them at stop; the other files borrow gw for its whole life.
 *
 * Threads: gg_gateway's configuration and subsystem pointers are set at start, before the
 * listeners and workers run; what changes later is atomic, guarded by the mutex its
 * comment names (jobs_mu, sync_mu, watch_mu, waiting_mu), or the watcher thread's own
 * (graphs_gen, views_gen, tasks_poked_ms). The pool, the upload threads and the registry
 * lock themselves (pool.c, uploads.c, registry.c): their functions may be called from any
 * thread. */
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
    struct gw_views_cache *views_cache; /* the views' selections per tenant (views.c); NULL = none */
    uint8_t state_key[32];      /* seals 2026-07-28 requestStates: from session.secret, so
                                   every replica sharing it resumes them (else random) */
    json_t *relay_holder;       /* {"id","url"}: this replica as a parked relay run's holder
                                   (cluster.internal_url; NULL = none), see mcp_http.c forward */
    struct gw_fwd *forwards;    /* requests forwarded to a holder, in flight (mcp_http.c;
                                   under jobs_mu) */
    gg_history_quota *quota;    /* per-tenant history quota pass (store/usage.c) */
    gw_uploads *uploads;        /* graph validation threads (uploads.c, started by admin.c) */
    unsigned sync_mark;         /* the store sync's pass (under sync_mu) */
    struct gw_refresher *refresher; /* periodic downstream catalog refresh (catalogs.c) */
    struct gw_dsauth *dsauth;       /* downstream servers' OAuth providers (downstream_auth.c) */
    mcp_downstream *downstream;     /* what its downstream clients share (mcp.h): limits, auth
                                       factory, listen counters; one reference per client */
    struct gw_consent *consent;     /* per-user consent for downstream servers (consent.c) */
    struct gw_async *async;         /* fire-and-forget branches (branches.c) */
    struct gw_tasks *tasks;         /* tasks running or parked here (tasks.c) */
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

/* ---- calls: admission, routes, shutdown (mcp_http.c, admin.c, gateway.c) ------------------ */
/* The bounds on runs waiting on downstream servers (tenants.max_waiting, max_waiting_runs)
 * for runs not started by a graph endpoint: 0 = taken (release it once), 1 = the tenant's
 * bound is full, 2 = the server's. */
int gw_waiting_acquire(gg_gateway *gw, const char *tenant);
void gw_waiting_release(gg_gateway *gw, const char *tenant);

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

#endif
