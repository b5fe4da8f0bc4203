/* gateway.c — installing the gateway into `serve`: configuration, the authenticator and
 * history writer, sessions, the worker pool, the graph registry loaded from the store and
 * kept in sync with it, provider mounts, metrics and an orderly shutdown. */
#include <stdatomic.h>
#include <sodium.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "gateway/authz.h"
#include "gateway/calls.h"
#include "gateway/catalogs.h"
#include "gateway/credentials.h"
#include "gateway/internal.h"
#include "gateway/relay.h"

/* ------------------------------------------------------------------ graph versions */

/* The graph provider hands each finished run's node records over; the MCP server keeps
 * them with the call (mcp_call_history) for the history writer. Progress and the per-node
 * log messages are not replayed here: the provider sends them live as each node ends. */
static void history_into_call(void *user, const char *tool, const mcp_call_ctx *ctx, const gg_graph_result *r) {
    (void)user;
    (void)tool;
    if (!ctx || !json_is_array(r->history)) return;
    if (ctx->history.records) json_array_extend(ctx->history.records, r->history);
}

/* Compile one graph version into an MCP server; see internal.h. */
mcp_server *gw_build_graph(gg_gateway *gw, const char *tenant, const char *graph, const char *source,
                           size_t len, const gg_graph_options *opts, gg_graph_diags *diags, gg_error *err) {
    char name[2 * GG_NAME_MAX + 8];
    snprintf(name, sizeof name, "%s/%s", tenant, graph);
    gg_graph_options o = opts ? *opts : gw_graph_options(gw, false, 0);
    o.policy = mcp_policy_set_get(gw->policies, tenant);
    o.owner = tenant;
    if (!o.secrets) o.secrets = gw_secrets_seam(gw);
    gw_catalog_ctx cat = {gw, tenant}; /* proxy entries: the tenant's stored catalogs */
    if (!o.catalog) {
        o.catalog = gw_stored_catalog;
        o.catalog_user = &cat;
    }
    gg_graph_diags local = GG_GRAPH_DIAGS_INIT;
    gg_graph *g = gg_graph_load_string(source, len, name, &o, diags ? diags : &local);
    if (!g) {
        gg_graph_diags *d = diags ? diags : &local;
        char first[512] = "invalid graph";
        for (size_t i = 0; i < d->count; i++)
            if (d->items[i].severity == GG_DIAG_ERROR) {
                gg_graph_diag_format(&d->items[i], first, sizeof first);
                break;
            }
        gg_error_set(err, "validation", "%zu error(s); first: %s", d->errors, first);
        gg_graph_diags_free(&local);
        return NULL;
    }
    gg_graph_diags_free(&local);
    gg_graph_set_downstream_notify(g, gw_downstream_notified, gw, name); /* "tenant/graph" */
    mcp_provider *p = gg_graph_provider_new(g);
    gg_graph_unref(g);
    if (!p) {
        gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    gg_graph_provider_set_history_sink(p, history_into_call, NULL);
    gg_graph_provider_set_graph_call(p, gw_graph_call, gw);
    gg_graph_provider_set_consent(p, gw_consent_elicitation, gw);
    if (gw->async) gg_graph_provider_set_async(p, gw_async_hooks(gw->async), graph);
    if (gw->relay_holder) gg_graph_provider_set_relay_holder(p, gw->relay_holder);
    mcp_server *s = mcp_server_new(p, NULL, err);
    mcp_provider_unref(p);
    return s;
}

/* ------------------------------------------------------------------ store sync */

/* The registry's loader: compile a stored version on its first use (stored versions are
 * loaded with the operator's caps clamped, as they always were). */
/* See catalogs.h. */
mcp_server *gw_build_version(gg_gateway *gw, const char *tenant, const char *graph, int version, gg_error *err) {
    gg_graph_source src = {0};
    mcp_server *s = NULL;
    gw_pins_ctx pins = {gw, tenant, graph, version};
    gg_graph_options o = gw_graph_options(gw, false, 0);
    o.pinned = gw_stored_pins;
    o.pinned_user = &pins;
    if (gg_store_graph_get_version(gw->store, tenant, graph, version, &src, err))
        s = gw_build_graph(gw, tenant, graph, src.source, src.source_len, &o, NULL, err);
    gg_store_graph_source_clear(&src);
    return s;
}

static mcp_server *load_stored(void *user, const char *tenant, const char *graph, int version, gg_error *err) {
    gg_gateway *gw = user;
    gg_error e = GG_ERROR_INIT;
    mcp_server *s = gw_build_version(gw, tenant, graph, version, &e);
    gw_downstream_listen_later(gw, tenant, s);
    if (!s && strcmp(e.code, "not_found") != 0) {
        char v[16];
        snprintf(v, sizeof v, "%d", version);
        gg_log(GG_LOG_ERROR, "stored graph version does not load", "tenant", tenant, "graph", graph, "version", v,
               "error", e.message ? e.message : e.code, NULL);
    }
    if (err) *err = e; /* the caller's is empty: it takes the message */
    else gg_error_clear(&e);
    return s;
}

typedef struct sync_ctx {
    gg_gateway *gw;
    unsigned mark;
    json_t *hot; /* [[tenant, graph], ...] whose cached version was replaced */
} sync_ctx;

static bool sync_visit(void *user, const gg_graph_source *g) {
    sync_ctx *sc = user;
    bool was_hot = false;
    gw_registry_declare(sc->gw->registry, g->tenant, g->name, g->version, sc->mark, &was_hot);
    if (was_hot && sc->hot) json_array_append_new(sc->hot, json_pack("[ss]", g->tenant, g->name));
    return true;
}

/* Bring the registry in line with the store's active versions (names and version numbers
 * only: nothing is compiled during the walk); see gateway.h. A graph whose previous version
 * was in the cache (in use lately) gets its new version compiled now, on this (the
 * watcher's) thread, so its next call does not pay for it. */
bool gg_gateway_sync(gg_gateway *gw, gg_error *err) {
    pthread_mutex_lock(&gw->sync_mu);
    sync_ctx sc = {gw, ++gw->sync_mark, json_array()};
    bool ok = gg_store_graphs_foreach_active_version(gw->store, sync_visit, &sc, err);
    if (ok) gw_registry_sweep(gw->registry, sc.mark); /* graphs deleted elsewhere */
    pthread_mutex_unlock(&gw->sync_mu);
    size_t i;
    json_t *tg;
    json_array_foreach(sc.hot, i, tg) {
        mcp_server_unref(gw_registry_get(gw->registry, json_string_value(json_array_get(tg, 0)),
                                         json_string_value(json_array_get(tg, 1)), NULL, NULL));
    }
    json_decref(sc.hot);
    return ok;
}

/* Re-read the store's graph generation; sync the registry if it moved. Watcher thread only
 * (graphs_gen is its own). */
static void check_graphs(gg_gateway *gw) {
    gg_error err = GG_ERROR_INIT;
    long long gen = gg_store_generation_get(gw->store, GG_GEN_GRAPHS, &err);
    if (gen >= 0 && gen != gw->graphs_gen) {
        gw->graphs_gen = gen;
        gg_gateway_sync(gw, &err);
    }
    gg_error_clear(&err);
}

/* A task changed on another replica: this replica's listen streams watching it hear it (the
 * pass reads only watched tasks: nothing without streams; running tasks' cancel flags stay on
 * the once-a-second check, as every task change anywhere would re-read them all). At most
 * every GW_TASKS_POKE_MS: a poke sooner is kept for a later turn of the watcher. */
#define GW_TASKS_POKE_MS 100
static void tasks_poked(gg_gateway *gw) {
    double now = gg_now_ms();
    if (now - gw->tasks_poked_ms < GW_TASKS_POKE_MS) {
        atomic_fetch_or(&gw->watch_poke, GG_WATCH_TASKS);
        return;
    }
    gw->tasks_poked_ms = now;
    gw_listen_tasks_check(gw->listen);
}

/* What a change notification asks for (watcher thread). */
static void handle_poke(gg_gateway *gw) {
    int poke = atomic_exchange(&gw->watch_poke, 0);
    if (poke & GG_WATCH_GRAPHS) check_graphs(gw);
    if (poke & GG_WATCH_KEYS) gg_auth_check_changes(gw->auth);
    if (poke & GG_WATCH_VIEWS) gw_views_check(gw);
    if (poke & GG_WATCH_OAUTH) gg_oauth_changed(gw->oauth);
    if (poke & GG_WATCH_PINS) gw_pins_check(gw);
    if (poke & GG_WATCH_TASKS) tasks_poked(gw);
    if (poke & GG_WATCH_SECRETS) gw_secrets_check(gw);
}

/* The notifier thread (PostgreSQL): hand every notification to the watcher at once. While
 * the watch is down the watcher's once-a-second check is all there is, as on SQLite. */
static void *notifier(void *arg) {
    gg_gateway *gw = arg;
    while (!atomic_load(&gw->stopping)) {
        int m = gg_store_watch_wait(gw->watch, 1000);
        atomic_store(&gw->notify_up, !(m & GG_WATCH_DOWN));
        m &= ~GG_WATCH_DOWN;
        if (!m) continue;
        atomic_fetch_add_explicit(&gw->notifications_total, 1, memory_order_relaxed);
        atomic_fetch_or(&gw->watch_poke, m);
        pthread_mutex_lock(&gw->watch_mu);
        pthread_cond_signal(&gw->watch_cv);
        pthread_mutex_unlock(&gw->watch_mu);
    }
    return NULL;
}

/* Every 50 ms: RUNNING records for long runs; every second: notice graph, view and key changes
 * made by another process (the CLI, another replica) and trim the compiled-graph cache;
 * at once when a change notification pokes it. */
static void *watcher(void *arg) {
    gg_gateway *gw = arg;
    unsigned tick = 0;
    pthread_mutex_lock(&gw->watch_mu);
    while (!gw->stopping) {
        struct timespec ts = gg_wall_timespec_in_ms(50);
        pthread_cond_timedwait(&gw->watch_cv, &gw->watch_mu, &ts);
        if (gw->stopping) break;
        pthread_mutex_unlock(&gw->watch_mu);
        handle_poke(gw);
        gw_announce_long_runs(gw, GW_ANNOUNCE_AFTER_MS);
        gw_listen_tick(gw->listen, gg_now_ms());
        if (++tick % 20 == 0) {
            check_graphs(gw);
            gw_views_check(gw);             /* views changed through another replica */
            gw_secrets_check(gw);           /* secrets changed elsewhere; last_used reports */
            gw_pins_check(gw);              /* a definition change approved on another replica */
            gw_registry_trim(gw->registry); /* compiled graphs over the cache size freed since */
            gw_tasks_check_cancels(gw);     /* a task cancelled on another replica stops here */
            gw_listen_tasks_check(gw->listen); /* task changes made elsewhere, to this replica's streams */
        }
        pthread_mutex_lock(&gw->watch_mu);
    }
    pthread_mutex_unlock(&gw->watch_mu);
    return NULL;
}

/* ------------------------------------------------------------------ mounts */

/* Serve a provider at /mcp/{name}; see gateway.h. */
bool gg_gateway_mount(gg_gateway *gw, const char *name, mcp_provider *provider, gg_error *err) {
    if (!name || !*name || strlen(name) >= sizeof gw->mounts[0].name || strchr(name, '/')) {
        gg_error_set(err, "invalid_name", "invalid mount name");
        return false;
    }
    mcp_server *s = mcp_server_new(provider, NULL, err);
    if (!s) return false;
    for (int i = 0; i < gw->nmounts; i++)
        if (strcmp(gw->mounts[i].name, name) == 0) {
            pthread_mutex_lock(&gw->mounts[i].mu);
            mcp_server *old = gw->mounts[i].srv;
            gw->mounts[i].srv = s;
            pthread_mutex_unlock(&gw->mounts[i].mu);
            mcp_server_unref(old);
            gw_streams_tools_changed(gw->streams, "", name, s); /* GET streams on the mount */
            gw_listen_changed(gw->listen, "", name);
            return true;
        }
    if (gw->nmounts >= GW_MAX_MOUNTS) {
        mcp_server_unref(s);
        gg_error_set(err, "too_many", "at most %d mounted providers", GW_MAX_MOUNTS);
        return false;
    }
    gw_mount *m = &gw->mounts[gw->nmounts];
    m->gw = gw;
    snprintf(m->name, sizeof m->name, "%s", name);
    pthread_mutex_init(&m->mu, NULL);
    m->srv = s;
    if (!gw_mount_routes(gw, m, err)) {
        mcp_server_unref(s);
        m->srv = NULL;
        pthread_mutex_destroy(&m->mu);
        return false;
    }
    gw->nmounts++;
    return true;
}

/* The gateway's authenticator and history writer (borrowed); see gateway.h. */
struct gg_auth *gg_gateway_auth(gg_gateway *gw) { return gw->auth; }
struct gg_history *gg_gateway_history(gg_gateway *gw) { return gw->history; }

/* ------------------------------------------------------------------ readiness, refusals */

/* See internal.h. */
bool gw_refuse_calls(gg_gateway *gw, bool is_graph, char *why, size_t why_size) {
    if (atomic_load_explicit(&gw->draining, memory_order_relaxed)) {
        snprintf(why, why_size, "Server busy: the server is shutting down; retry the request");
        return true;
    }
    if (is_graph && !gg_history_has_room(gw->history)) { /* bounded memory, either mode */
        snprintf(why, why_size, "Server busy: the execution history backlog is full; retry later");
        return true;
    }
    if (!is_graph || !gw->durable) return false;
    char reason[256];
    if (gg_history_healthy(gw->history, reason, sizeof reason)) return false;
    snprintf(why, why_size, "Server busy: the execution history cannot be written (%s); retry later", reason);
    return true;
}

/* /ready: the database answers with the expected schema, the history writer can write
 * (while its backlog cannot be written the gateway refuses durable calls anyway), and the
 * server is not draining. */
static bool ready_check(void *user, gg_error *err) {
    gg_gateway *gw = user;
    if (atomic_load_explicit(&gw->draining, memory_order_relaxed)) {
        gg_error_set(err, "shutting_down", "the server is shutting down");
        return false;
    }
    if (!gg_store_migrations_current(gw->store, err)) return false;
    char why[256];
    if (!gg_history_healthy(gw->history, why, sizeof why)) {
        gg_error_set(err, "history_unavailable", "the execution history cannot be written: %s", why);
        return false;
    }
    return true;
}

/* SIGTERM: refuse what has not started yet (503 + Retry-After) instead of holding it to the
 * drain deadline; running calls finish. */
static void on_drain(gg_app *app, void *user) {
    (void)app;
    gg_gateway *gw = user;
    atomic_store_explicit(&gw->draining, 1, memory_order_relaxed);
    int n = gw_pool_refuse_queued(gw->pool);
    if (n > 0) {
        char buf[16];
        snprintf(buf, sizeof buf, "%d", n);
        gg_log(GG_LOG_INFO, "draining: queued tool calls refused", "count", buf, NULL);
    }
}

/* SIGHUP: the rate limits and the tenant cap of the new configuration, from now on. */
static void on_reload(gg_app *app, const gg_config *next, void *user) {
    (void)app;
    gg_gateway *gw = user;
    gg_auth_set_limits(gw->auth, next->rate_limit_rate, next->rate_limit_burst, next->tenant_max_concurrent);
}

/* ------------------------------------------------------------------ metrics */

static void metrics(gg_strbuf *out, void *user) {
    gg_gateway *gw = user;
    gg_strbuf_printf(out,
                     "# HELP graphgate_tool_calls_total tools/call requests accepted for execution\n"
                     "# TYPE graphgate_tool_calls_total counter\ngraphgate_tool_calls_total %llu\n"
                     "# HELP graphgate_tool_calls_rejected_total tools/call refused (queue full, tenant cap)\n"
                     "# TYPE graphgate_tool_calls_rejected_total counter\ngraphgate_tool_calls_rejected_total %llu\n"
                     "# HELP graphgate_tool_calls_failed_total tool calls that ended in error or cancellation\n"
                     "# TYPE graphgate_tool_calls_failed_total counter\ngraphgate_tool_calls_failed_total %llu\n"
                     "# HELP graphgate_tool_calls_inline_total tool calls of pure tools run on the HTTP thread\n"
                     "# TYPE graphgate_tool_calls_inline_total counter\ngraphgate_tool_calls_inline_total %llu\n"
                     "# HELP graphgate_tool_calls_inline_over_budget_total inline attempts that outgrew the budget and were re-run on a worker\n"
                     "# TYPE graphgate_tool_calls_inline_over_budget_total counter\ngraphgate_tool_calls_inline_over_budget_total %llu\n"
                     "# HELP graphgate_tool_calls_waiting_capable calls in flight to tools that may wait on downstream servers (bounded by tenants.max_waiting, max_waiting_runs)\n"
                     "# TYPE graphgate_tool_calls_waiting_capable gauge\ngraphgate_tool_calls_waiting_capable %d\n"
                     "# HELP graphgate_tool_calls_running tool calls started and not finished (computing on a worker or waiting downstream without a thread)\n"
                     "# TYPE graphgate_tool_calls_running gauge\ngraphgate_tool_calls_running %d\n"
                     "# HELP graphgate_workers tool-call worker threads\n# TYPE graphgate_workers gauge\ngraphgate_workers %d\n"
                     "# HELP graphgate_queue_depth tool calls waiting for a worker\n# TYPE graphgate_queue_depth gauge\ngraphgate_queue_depth %d\n"
                     "# HELP graphgate_graphs_loaded active graph versions known (compiled or not)\n# TYPE graphgate_graphs_loaded gauge\ngraphgate_graphs_loaded %zu\n",
                     atomic_load_explicit(&gw->calls_total, memory_order_relaxed),
                     atomic_load_explicit(&gw->calls_rejected, memory_order_relaxed),
                     atomic_load_explicit(&gw->calls_failed, memory_order_relaxed),
                     atomic_load_explicit(&gw->calls_inline, memory_order_relaxed),
                     atomic_load_explicit(&gw->calls_inline_over, memory_order_relaxed),
                     atomic_load_explicit(&gw->waiting_total, memory_order_relaxed), atomic_load_explicit(&gw->running, memory_order_relaxed), gw_pool_threads(gw->pool),
                     gw_pool_queued(gw->pool), gw_registry_count(gw->registry));
    if (gw->watch)
        gg_strbuf_printf(out,
                         "# HELP graphgate_change_notify_up the PostgreSQL change-notification connection is up (else the once-a-second check alone)\n"
                         "# TYPE graphgate_change_notify_up gauge\ngraphgate_change_notify_up %d\n"
                         "# HELP graphgate_change_notifications_total change notifications from other processes handled\n"
                         "# TYPE graphgate_change_notifications_total counter\ngraphgate_change_notifications_total %llu\n",
                         atomic_load(&gw->notify_up), atomic_load_explicit(&gw->notifications_total, memory_order_relaxed));
    gw_oauth_metrics(gw, out);
    gw_dsauth_metrics(gw->dsauth, out);
    gw_registry_stats rs = gw_registry_get_stats(gw->registry);
    gg_strbuf_printf(out,
                     "# HELP graphgate_graphs_compiled graph versions compiled in the cache (graphs.cache_size)\n"
                     "# TYPE graphgate_graphs_compiled gauge\ngraphgate_graphs_compiled %zu\n"
                     "# HELP graphgate_graph_cache_total graph cache events: hit (a call found its graph compiled), "
                     "compile (compiled on first use or after eviction), evict, fail (a stored version did not compile)\n"
                     "# TYPE graphgate_graph_cache_total counter\n"
                     "graphgate_graph_cache_total{event=\"hit\"} %llu\n"
                     "graphgate_graph_cache_total{event=\"compile\"} %llu\n"
                     "graphgate_graph_cache_total{event=\"evict\"} %llu\n"
                     "graphgate_graph_cache_total{event=\"fail\"} %llu\n",
                     rs.compiled, rs.hits, rs.compiles, rs.evictions, rs.load_failures);
    gg_history_stats hs;
    gg_history_get_stats(gw->history, &hs);
    gg_strbuf_printf(out,
                     "# HELP graphgate_history_records_total execution records by fate (dropped: refused at "
                     "submit, the backlog bound being reached; lost: given up at stop)\n"
                     "# TYPE graphgate_history_records_total counter\n"
                     "graphgate_history_records_total{fate=\"submitted\"} %llu\n"
                     "graphgate_history_records_total{fate=\"written\"} %llu\n"
                     "graphgate_history_records_total{fate=\"dropped\"} %llu\n"
                     "graphgate_history_records_total{fate=\"lost\"} %llu\n"
                     "# HELP graphgate_history_pending_records records queued or being retried, not yet written\n"
                     "# TYPE graphgate_history_pending_records gauge\ngraphgate_history_pending_records %llu\n"
                     "# HELP graphgate_history_pending_bytes memory held by pending records\n"
                     "# TYPE graphgate_history_pending_bytes gauge\ngraphgate_history_pending_bytes %llu\n"
                     "# HELP graphgate_history_failing 1 while the history cannot be written (batches kept and retried)\n"
                     "# TYPE graphgate_history_failing gauge\ngraphgate_history_failing %d\n"
                     "# HELP graphgate_history_batches_total history transactions committed (records per commit = written / batches)\n"
                     "# TYPE graphgate_history_batches_total counter\ngraphgate_history_batches_total %llu\n"
                     "# HELP graphgate_history_write_errors_total failed history write attempts\n"
                     "# TYPE graphgate_history_write_errors_total counter\ngraphgate_history_write_errors_total %llu\n"
                     "# HELP graphgate_history_durable 1 when tool calls are answered only after their record is committed\n"
                     "# TYPE graphgate_history_durable gauge\ngraphgate_history_durable %d\n"
                     "# HELP graphgate_history_journal 1 when durable answers are made durable by the history's redo "
                     "log (history.journal), 0 when they wait for the commit\n"
                     "# TYPE graphgate_history_journal gauge\ngraphgate_history_journal %d\n",
                     hs.submitted, hs.written, hs.dropped, hs.lost, hs.pending, hs.pending_bytes, hs.failing ? 1 : 0,
                     hs.batches, hs.write_errors, gw->durable ? 1 : 0,
                     gw->durable && gg_history_journaling(gw->history) ? 1 : 0);
    gg_history_quota_stats qs;
    gg_history_quota_get_stats(gw->quota, &qs);
    gg_strbuf_printf(out,
                     "# HELP graphgate_history_quota_dropped_total runs removed, oldest first, from tenants over history.tenant_max_rows/_bytes\n"
                     "# TYPE graphgate_history_quota_dropped_total counter\ngraphgate_history_quota_dropped_total %llu\n"
                     "# HELP graphgate_history_quota_dropped_bytes_total bytes of those runs\n"
                     "# TYPE graphgate_history_quota_dropped_bytes_total counter\ngraphgate_history_quota_dropped_bytes_total %llu\n",
                     qs.dropped, qs.dropped_bytes);
    unsigned long long sess_refused = 0;
    mcp_sessions_owner_usage(gw->sessions, NULL, NULL, NULL, &sess_refused);
    gg_strbuf_printf(out,
                     "# HELP graphgate_mcp_sessions_refused_total initialize refused by the per-tenant bound (tenants.max_sessions)\n"
                     "# TYPE graphgate_mcp_sessions_refused_total counter\ngraphgate_mcp_sessions_refused_total %llu\n",
                     sess_refused);
    unsigned long long sess_evicted = 0, sess_idle = 0;
    mcp_sessions_forgotten(gw->sessions, &sess_evicted, &sess_idle);
    gg_strbuf_printf(out,
                     "# HELP graphgate_mcp_sessions_forgotten_total sessions given up: evicted (least recently used, to admit"
                     " an initialize at tenants.max_sessions) or idle (session.idle_timeout)\n"
                     "# TYPE graphgate_mcp_sessions_forgotten_total counter\n"
                     "graphgate_mcp_sessions_forgotten_total{reason=\"evicted\"} %llu\n"
                     "graphgate_mcp_sessions_forgotten_total{reason=\"idle\"} %llu\n",
                     sess_evicted, sess_idle);
    gw_async_metrics(gw->async, out);
    gw_listen_metrics(gw->listen, out);
    gw_downstream_metrics(gw, out);
    gg_tel_metrics(out);
}

/* ------------------------------------------------------------------ install / shutdown */

static char **strlist_copy(const gg_strlist *l) {
    char **out = calloc(l->n + 1, sizeof *out);
    for (size_t i = 0; out && i < l->n; i++) out[i] = l->items[i];
    return out;
}

static bool bind_is_loopback(const char *addr) {
    char host[128];
    unsigned port;
    gg_error err = GG_ERROR_INIT;
    if (!addr || !*addr || !gg_http_parse_addr(addr, host, sizeof host, &port, &err)) {
        gg_error_clear(&err);
        return false;
    }
    return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0 || strcasecmp(host, "localhost") == 0;
}

/* Graphs may never call the gateway itself: once the listeners are bound (ports known),
 * they join the policy's self list and downstream HTTP opens. */
static void listeners_bound(gg_http_server *s, void *user) {
    gg_gateway *gw = user;
    gg_listener which[2] = {GG_LISTENER_PUBLIC, GG_LISTENER_INTERNAL};
    for (int i = 0; i < 2; i++) {
        struct sockaddr_storage ss;
        if (gg_http_server_bound_addr(s, which[i], &ss)) mcp_policy_self_add(gw->policy_self, (struct sockaddr *)&ss);
    }
    mcp_policy_self_ready(gw->policy_self);
}

/* cluster.internal_url: this replica as the holder its relay rounds name (provider.c
 * acall_park), with an id of this process (runs parked here die with it: a restarted replica
 * at the same URL is another holder). Unset: none (a retry elsewhere is refused). */
static bool relay_holder_new(gg_gateway *gw, gg_error *err) {
    const char *url = gw->cfg->cluster_internal_url;
    if (!url || !*url) return true;
    size_t n = strlen(url);
    bool ok = n < 512 && (!strncmp(url, "http://", 7) || !strncmp(url, "https://", 8));
    for (size_t i = 0; ok && i < n; i++) ok = (unsigned char)url[i] > ' ' && url[i] != 0x7f;
    if (!ok || !gw->cfg->internal_listen || !*gw->cfg->internal_listen) {
        gg_error_set(err, "invalid", "cluster.internal_url must be an http:// or https:// URL (under 512 bytes, no spaces) "
                                    "of this replica's internal listener, and internal_listen must be on");
        return false;
    }
    unsigned char raw[16];
    char id[33];
    randombytes_buf(raw, sizeof raw);
    sodium_bin2hex(id, sizeof id, raw, sizeof raw);
    while (n > 0 && url[n - 1] == '/') n--;
    gw->relay_holder = json_pack("{s:s,s:s%}", "id", id, "url", url, n);
    if (!gw->relay_holder) gg_error_set(err, "oom", "out of memory");
    return gw->relay_holder != NULL;
}

static void gateway_free(gg_gateway *gw) {
    gw_consent_free(gw); /* its helpers end first: they use the store, the token checker and the key */
    gw_refresher_stop(gw->refresher); /* it queues jobs on the upload threads */
    gw_uploads_stop(gw->uploads); /* uploads in progress use everything below */
    if (gw->watcher_started) {
        pthread_mutex_lock(&gw->watch_mu);
        gw->stopping = 1;
        pthread_cond_broadcast(&gw->watch_cv);
        pthread_mutex_unlock(&gw->watch_mu);
        pthread_join(gw->watcher, NULL);
    }
    if (gw->notifier_started) {
        atomic_store(&gw->stopping, 1);
        gg_store_watch_wake(gw->watch);
        pthread_join(gw->notifier, NULL);
    }
    gg_store_watch_free(gw->watch);
    if (gw->pool) {
        gw_cancel_running(gw);
        /* branches finish on the pool: before it stops (no call runs now to start one) */
        gw_async_drain(gw->async, GW_ASYNC_DRAIN_MS);
        gw_pool_stop(gw->pool);
    }
    if (gw->registry) gw_registry_set_hook(gw->registry, NULL, NULL);
    gw_streams_free(gw->streams); /* after the listeners stopped (every stream ended) */
    gw_listen_free(gw->listen);
    gw_tenantwide_cache_free(gw->tenantwide_cache);
    gw_views_cache_free(gw->views_cache);
    for (int i = 0; i < gw->nmounts; i++) {
        mcp_server_unref(gw->mounts[i].srv);
        pthread_mutex_destroy(&gw->mounts[i].mu);
    }
    gw_registry_free(gw->registry);
    gw_refresher_free(gw->refresher); /* no graph left to notify it */
    if (gw->auth) gg_auth_set_history(gw->auth, NULL);
    gg_history_stop(gw->history);
    gg_history_quota_stop(gw->quota);
    gg_auth_free(gw->auth);
    gg_oauth_free(gw->oauth);
    mcp_sessions_free(gw->sessions);
    gw_secrets_free(gw); /* after every graph that could resolve through it */
    gw_dsauth_free(gw->dsauth); /* a client still alive elsewhere frees it with its provider */
    free(gw->policy_commands);
    free(gw->policy_hosts);
    mcp_policy_set_free(gw->policies);
    free(gw->policy_grants[0]);
    free(gw->policy_grants[1]);
    mcp_policy_self_free(gw->policy_self);
    json_decref(gw->relay_holder);
    pthread_mutex_destroy(&gw->jobs_mu);
    pthread_cond_destroy(&gw->jobs_cv);
    gg_tally_clear(&gw->waiting);
    pthread_mutex_destroy(&gw->waiting_mu);
    pthread_mutex_destroy(&gw->sync_mu);
    pthread_mutex_destroy(&gw->watch_mu);
    pthread_cond_destroy(&gw->watch_cv);
    gw_async_free(gw->async); /* after every provider that points at its hooks */
    gw_tasks_free(gw->tasks); /* after the pool: no run is left to finish */
    mcp_downstream_free(gw->downstream); /* freed now, or by the last client still held elsewhere */
    free(gw);
}

static void on_shutdown(gg_app *app, void *user) {
    (void)app;
    gateway_free(user);
}

/* Install the gateway; see gateway.h. */
gg_gateway *gg_gateway_install(gg_app *app, gg_error *err) {
    const gg_config *cfg = app->config;
    gg_gateway *gw = calloc(1, sizeof *gw);
    if (!gw) {
        gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    gw->app = app;
    gw->cfg = cfg;
    gw->store = app->store;
    pthread_mutex_init(&gw->jobs_mu, NULL);
    pthread_cond_init(&gw->jobs_cv, NULL);
    pthread_mutex_init(&gw->waiting_mu, NULL);
    pthread_mutex_init(&gw->sync_mu, NULL);
    pthread_mutex_init(&gw->watch_mu, NULL);
    pthread_cond_init(&gw->watch_cv, NULL);
    gw->policy_commands = strlist_copy(&cfg->policy_stdio_commands);
    gw->policy_hosts = strlist_copy(&cfg->policy_http_hosts);
    if (!gw->policy_commands || !gw->policy_hosts) goto oom;
    gw->policy.allow_all = false;
    gw->policy.command_allowlist = (const char *const *)gw->policy_commands;
    gw->policy.host_allowlist = (const char *const *)gw->policy_hosts;
    gw->policy.allow_http_plaintext = true;
    gw->policy.cwd_root = cfg->policy_stdio_cwd_root;
    gw->policy_grants[0] = strlist_copy(&cfg->policy_tenant_stdio_commands);
    gw->policy_grants[1] = strlist_copy(&cfg->policy_tenant_http_hosts);
    if (!gw->policy_grants[0] || !gw->policy_grants[1] || !(gw->policy_self = mcp_policy_self_new())) goto oom;
    gw->policy.self = gw->policy_self;
    if (!(gw->policies = mcp_policy_set_new(&gw->policy, (const char *const *)gw->policy_grants[0],
                                            (const char *const *)gw->policy_grants[1], err)))
        goto fail;
    if (!gg_http_server_on_start(app->http, listeners_bound, gw)) {
        gg_error_set(err, "too_many", "no room for the gateway's start callback");
        goto fail;
    }
    gw->public_loopback = bind_is_loopback(cfg->listen);
    gw->internal_loopback = bind_is_loopback(cfg->internal_listen);
    if (!relay_holder_new(gw, err)) goto fail;

    gw->durable = !cfg->history_durability || strcmp(cfg->history_durability, "async") != 0;
    gg_history_options ho = {.flush_ms = cfg->history_flush_ms, .max_age_ms = cfg->history_max_age_ms,
                             .max_count = cfg->history_max_count, .max_payload_bytes = cfg->history_max_payload,
                             .mark_interrupted = true, .commit_window_ms = cfg->history_commit_window_ms > 0 ? cfg->history_commit_window_ms : -1,
                             .backlog_max_bytes = cfg->history_backlog_max, .fsync = cfg->history_fsync,
                             .journal_window_ms = cfg->history_journal_window_ms};
    /* Replicas sharing a PostgreSQL database: each marks only its own interrupted runs. */
    char host[64] = "";
    if (!cfg->history_replica_id || !*cfg->history_replica_id) gethostname(host, sizeof host - 1);
    ho.replica_id = cfg->history_replica_id && *cfg->history_replica_id ? cfg->history_replica_id : host;
    ho.max_run_nodes = (size_t)cfg->history_max_run_records;
    ho.max_run_node_bytes = cfg->history_max_run_bytes;
    /* the redo log beside a SQLite file (not PostgreSQL: its replicas' answers must be
     * in the shared database; not with fsync: the log is not synced). Replayed at every
     * start, also when this one does without it: what an earlier process answered. */
    char journal[4200];
    const char *db = gg_store_path(gw->store);
    if (!gg_store_is_postgres(gw->store) && db && strcmp(db, ":memory:") != 0 &&
        (size_t)snprintf(journal, sizeof journal, "%s-history", db) < sizeof journal) {
        ho.journal_dir = journal;
        ho.journal_replay_only = !gw->durable || !cfg->history_journal || cfg->history_fsync;
    }
    if (!(gw->history = gg_history_start(gw->store, &ho, err))) goto fail;
    if (!(gw->tasks = gw_tasks_new())) goto oom;
    if (!gw_tasks_recover(gw, ho.replica_id, !gg_store_is_postgres(gw->store), err)) goto fail; /* as the history */
    gg_history_quota_options qo = {cfg->history_tenant_max_rows, (long long)cfg->history_tenant_max_bytes, 0};
    if (!(gw->quota = gg_history_quota_start(gw->store, &qo, err))) goto fail;
    gg_auth_options ao = {cfg->key_pepper, cfg->key_cache_ttl_ms, cfg->rate_limit_rate, cfg->rate_limit_burst,
                          cfg->tenant_max_concurrent, gw->history};
    if (!(gw->auth = gg_auth_new(gw->store, &ao, err))) goto fail;
    uint8_t secret[32], *sp = NULL;
    if (cfg->session_secret && *cfg->session_secret) {
        crypto_generichash(secret, sizeof secret, (const unsigned char *)cfg->session_secret,
                           strlen(cfg->session_secret), NULL, 0);
        sp = secret;
    }
    /* requestStates get their own key, derived from the same secret (a separate context) */
    static const char ctx_rs[] = "graphgate requestState v1";
    if (sp) crypto_generichash(gw->state_key, sizeof gw->state_key, (const unsigned char *)ctx_rs, sizeof ctx_rs - 1, sp, 32);
    else randombytes_buf(gw->state_key, sizeof gw->state_key);
    long long ttl = cfg->session_ttl_ms > 0 ? cfg->session_ttl_ms / 1000 : 24 * 3600;
    gw->sessions = mcp_sessions_new(sp, ttl > 0 ? ttl : 1, 100000);
    sodium_memzero(secret, sizeof secret);
    if (!gw->sessions) goto oom;
    mcp_sessions_set_owner_max(gw->sessions, cfg->tenant_max_sessions > 0 ? (size_t)cfg->tenant_max_sessions : 0);
    /* abandoned sessions (no DELETE) expire when idle and give way at the bound (whole seconds, rounded up) */
    mcp_sessions_set_idle(gw->sessions, (cfg->session_idle_timeout_ms + 999) / 1000, true);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int workers = cfg->workers > 0 ? cfg->workers : (int)(2 * (cores > 0 ? cores : 1));
    /* no tenant on more than half the workers unless configured: another tenant always
     * finds one free */
    int tenant_running = cfg->tenant_max_running > 0 ? cfg->tenant_max_running : (workers / 2 > 0 ? workers / 2 : 1);
    if (!(gw->pool = gw_pool_new(workers, cfg->queue_size > 0 ? cfg->queue_size : 1024, tenant_running,
                                 cfg->tenant_max_queued)))
        goto oom;
    if (!(gw->async = gw_async_new(gw, cfg->tenant_max_async_branches, cfg->max_async_branches))) goto oom;
    if (!(gw->downstream = mcp_downstream_new())) goto oom;
    mcp_http_set_listen_owner_max(gw->downstream, cfg->tenant_max_listen_streams);
    mcp_http_set_limits(gw->downstream, cfg->downstream_max_message_bytes, cfg->downstream_max_parse_bytes);
    if (!(gw->dsauth = gw_dsauth_install(gw))) goto oom;
    mcp_downstream_set_owner_max_bytes(cfg->tenant_max_downstream_bytes);
    mcp_stdio_set_limits(gw->downstream, &(mcp_stdio_limits){cfg->downstream_max_message_bytes, cfg->downstream_max_parse_bytes,
                                              cfg->downstream_stderr_bytes_per_s, cfg->downstream_child_nice,
                                              cfg->downstream_child_memory_bytes, cfg->downstream_child_cpu_seconds,
                                              cfg->downstream_max_starts_per_minute});
    gw->tenant_max_waiting = cfg->tenant_max_waiting;
    gw->max_waiting = cfg->max_waiting_runs;
    if (!(gw->registry = gw_registry_new(cfg->graphs_cache_size > 0 ? (size_t)cfg->graphs_cache_size : 0,
                                         load_stored, gw)))
        goto oom;
    if (!(gw->streams = gw_streams_new(gw))) goto oom;
    if (!(gw->listen = gw_listen_new(gw)) || !(gw->tenantwide_cache = gw_tenantwide_cache_new()) ||
        !(gw->views_cache = gw_views_cache_new()))
        goto oom;
    gw_registry_set_hook(gw->registry, gw_registry_changed, gw);

    gw->graphs_gen = gg_store_generation_get(gw->store, GG_GEN_GRAPHS, err);
    gg_error_clear(err);
    gw->views_gen = gg_store_generation_get(gw->store, GG_GEN_VIEWS, err);
    gg_error_clear(err);
    if (!gw_secrets_start(gw, err) || !gg_gateway_sync(gw, err)) goto fail;
    if (!gw_mcp_install_routes(gw, err) || !gw_admin_install_routes(gw, err) || !gw_oauth_start(gw, err) ||
        !gw_consent_start(gw, err))
        goto fail;
    if (!(gw->refresher = gw_refresher_start(gw))) {
        gg_error_set(err, "oom", "cannot start the downstream catalog refresh thread");
        goto fail;
    }
    gg_http_server_add_metrics(app->http, metrics, gw);
    gg_http_server_set_ready_check(app->http, ready_check, gw);
    if (pthread_create(&gw->watcher, NULL, watcher, gw) == 0) gw->watcher_started = true;
    if ((gw->watch = gg_store_watch_new(gw->store)) &&
        pthread_create(&gw->notifier, NULL, notifier, gw) == 0)
        gw->notifier_started = true;
    if (!gg_app_on_shutdown(app, on_shutdown, gw) || !gg_app_on_drain(app, on_drain, gw) ||
        !gg_app_on_reload(app, on_reload, gw)) {
        gg_error_set(err, "too_many", "no room for the gateway's shutdown callback");
        goto fail;
    }
    char n[16], w[16];
    snprintf(n, sizeof n, "%zu", gw_registry_count(gw->registry));
    snprintf(w, sizeof w, "%d", workers);
    gg_log(GG_LOG_INFO, "gateway ready", "graphs", n, "workers", w, NULL);
    return gw;
oom:
    gg_error_set(err, "oom", "out of memory");
fail:
    gateway_free(gw);
    return NULL;
}
