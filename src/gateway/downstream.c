/* downstream.c — the tenants' downstream tool catalogs in the gateway. Uploads list their
 * graph's servers and check the mcp nodes against them (src/graph/downstream.c); each
 * catalog listed is stored for the tenant (gw_catalog_sink). The installed graphs'
 * servers are listed again on demand (POST /admin/tenants/{t}/downstream/sync), when one of
 * them sends notifications/tools/list_changed, and every GW_DOWNSTREAM_REFRESH_S s,
 * each tenant's listing as a job on the upload threads (never a polling thread; one
 * tenant's slow servers hold one upload thread, bounded by the listing timeout).
 * Installed graphs keep listening to their streamable-HTTP servers (gw_downstream_listen:
 * a GET stream per session, src/mcp/client_http.c), so those say list_changed too.
 * GET /admin/tenants/{t}/downstream answers the stored catalogs. A catalog that changed
 * recompiles the tenant's graphs that proxy that server (src/graph/proxy.c) and tells
 * their clients tools/list_changed — no re-upload. */
#include <stdlib.h>
#include <string.h>

#include "gateway/internal.h"

#define GW_DOWNSTREAM_REFRESH_S 900
#define GW_DOWNSTREAM_TIMEOUT_MS 10000

/* Whether tools differ from the stored catalog of server (none stored: they do). */
static bool catalog_differs(gw_catalog_sink *sink, const char *server, json_t *tools) {
    gg_error err = GG_ERROR_INIT;
    json_t *row = gg_store_downstream_get(sink->gw->store, sink->tenant, server, &err);
    gg_error_clear(&err);
    bool differs = !row || !json_equal(json_object_get(row, "tools"), tools);
    json_decref(row);
    return differs;
}

static void catalog_fetched(void *user, const char *server, json_t *tools, long long fetched_ms) {
    gw_catalog_sink *sink = user;
    gg_error err = GG_ERROR_INIT;
    if (catalog_differs(sink, server, tools)) {
        if (!sink->changed) sink->changed = json_object();
        json_object_set_new(sink->changed, server, json_true());
    }
    if (!gg_store_downstream_put(sink->gw->store, sink->tenant, server, tools, fetched_ms, &err))
        gg_log(GG_LOG_WARN, "storing a downstream tool catalog failed", "tenant", sink->tenant, "server", server,
               "error", err.message ? err.message : err.code, NULL);
    gg_error_clear(&err);
}

const gg_graph_downstream *gw_catalog_sink_init(gw_catalog_sink *sink, gg_gateway *gw, const char *tenant) {
    *sink = (gw_catalog_sink){.gw = gw, .tenant = tenant};
    sink->check = (gg_graph_downstream){.mode = GG_CHECK_ERROR, .timeout_ms = GW_DOWNSTREAM_TIMEOUT_MS,
                                        .fetched = catalog_fetched, .user = sink};
    return &sink->check;
}

json_t *gw_stored_catalog(void *user, const char *server) {
    gw_catalog_ctx *c = user;
    gg_error err = GG_ERROR_INIT;
    json_t *row = gg_store_downstream_get(c->gw->store, c->tenant, server, &err);
    gg_error_clear(&err);
    json_t *tools = json_incref(json_object_get(row, "tools"));
    json_decref(row);
    return tools;
}

/* Whether g has a proxy entry on one of the servers in changed. */
static bool proxies_any(const gg_graph *g, json_t *changed) {
    const char *server;
    json_t *v;
    json_object_foreach(changed, server, v)
        if (gg_graph_proxies(g, server)) return true;
    return false;
}

/* Compile tenant/graph's stored version again (the catalogs as stored now) and reinstall
 * it, unless another version became active meanwhile. */
static void recompile(gg_gateway *gw, const char *tenant, const char *graph, int version) {
    gg_graph_source src = {0};
    gg_error err = GG_ERROR_INIT;
    mcp_server *s = NULL;
    if (gg_store_graph_get_version(gw->store, tenant, graph, version, &src, &err))
        s = gw_build_graph(gw, tenant, graph, src.source, src.source_len, NULL, NULL, &err);
    gg_store_graph_source_clear(&src);
    if (s) {
        gw_downstream_listen(s); /* the new compilation has its own clients: they listen now */
        gw_registry_refresh(gw->registry, tenant, graph, version, s);
    }
    else
        gg_log(GG_LOG_WARN, "a proxy graph did not compile with its server's new catalog; the previous one stays",
               "tenant", tenant, "graph", graph, "error", err.message ? err.message : err.code, NULL);
    mcp_server_unref(s);
    gg_error_clear(&err);
}

/* See internal.h. Graphs not compiled now pick the new catalog up when first used. */
void gw_catalog_sink_done(gw_catalog_sink *sink, const char *skip) {
    json_t *changed = sink->changed;
    sink->changed = NULL;
    if (!changed) return;
    gg_gateway *gw = sink->gw;
    json_t *all = gw_registry_list(gw->registry);
    size_t i;
    json_t *e;
    json_array_foreach(all, i, e) {
        const char *graph = json_string_value(json_array_get(e, 1));
        if (strcmp(json_string_value(json_array_get(e, 0)), sink->tenant) != 0 || (skip && !strcmp(skip, graph))) continue;
        int version = 0;
        mcp_server *s = gw_registry_peek(gw->registry, sink->tenant, graph, &version);
        gg_graph *g = s ? gg_graph_provider_graph(mcp_server_provider(s)) : NULL;
        bool hit = g && proxies_any(g, changed);
        mcp_server_unref(s);
        if (hit) recompile(gw, sink->tenant, graph, version);
    }
    json_decref(all);
    json_decref(changed);
}

/* List the servers of every installed graph of tenant again; returns the servers that
 * could not be listed. */
static int refresh_tenant(gg_gateway *gw, const char *tenant) {
    json_t *all = gw_registry_list(gw->registry);
    gw_catalog_sink sink;
    const gg_graph_downstream *ds = gw_catalog_sink_init(&sink, gw, tenant);
    int failed = 0;
    size_t i;
    json_t *e;
    json_array_foreach(all, i, e) {
        if (strcmp(json_string_value(json_array_get(e, 0)), tenant) != 0) continue;
        int version = 0;
        gg_error gerr = GG_ERROR_INIT; /* a graph that no longer loads has no catalog to refresh */
        mcp_server *s = gw_registry_get(gw->registry, tenant, json_string_value(json_array_get(e, 1)), &version, &gerr);
        gg_error_clear(&gerr);
        gg_graph *g = s ? gg_graph_provider_graph(mcp_server_provider(s)) : NULL;
        if (g) failed += gg_graph_downstream_refresh(g, ds, gg_now_ms() + GW_DOWNSTREAM_TIMEOUT_MS);
        if (g) gg_graph_downstream_listen(g); /* a graph whose listen job was refused catches up */
        if (s) mcp_server_unref(s);
    }
    json_decref(all);
    gw_catalog_sink_done(&sink, NULL); /* proxy graphs follow their servers' catalogs */
    return failed;
}

/* See internal.h. */
void gw_downstream_listen(mcp_server *s) {
    gg_graph *g = s ? gg_graph_provider_graph(mcp_server_provider(s)) : NULL;
    if (g) gg_graph_downstream_listen(g);
}

typedef struct listen_job {
    mcp_server *s;
} listen_job;

static void listen_run(void *arg) {
    listen_job *j = arg;
    gw_downstream_listen(j->s);
    mcp_server_unref(j->s);
    free(j);
}

static void listen_refuse(void *arg) {
    listen_job *j = arg;
    mcp_server_unref(j->s);
    free(j);
}

/* Creating a graph's clients checks their URLs against the policy, which resolves host
 * names: not on the thread that compiled the graph for a call. A job the queue refuses
 * is made up by the next refresh of the tenant (refresh_tenant listens too). */
void gw_downstream_listen_later(gg_gateway *gw, const char *tenant, mcp_server *s) {
    listen_job *j = s && gw->uploads ? malloc(sizeof *j) : NULL; /* no upload threads yet: a refresh listens */
    if (!j) return;
    j->s = mcp_server_ref(s);
    gg_error err = GG_ERROR_INIT;
    if (!gw_uploads_submit(gw->uploads, tenant, (gw_job){listen_run, listen_refuse, j, NULL}, &err)) {
        gg_error_clear(&err);
        listen_refuse(j);
    }
}

void gw_downstream_metrics(gg_strbuf *out) {
    mcp_listen_stats l = mcp_http_listen_stats();
    gg_strbuf_printf(out,
                     "# HELP graphgate_downstream_listen_streams GET streams to streamable-HTTP downstream servers, connecting or open (at most %d)\n"
                     "# TYPE graphgate_downstream_listen_streams gauge\ngraphgate_downstream_listen_streams %d\n"
                     "# HELP graphgate_downstream_listen_total listen-stream events: opened, message (a JSON-RPC message received), "
                     "list_changed (tools/list_changed among them), cut_off (oversized or not JSON-RPC: closed), "
                     "no_stream (a server answered 405: it offers none), owner_full (a connect put off: its tenant "
                     "held its %d streams)\n"
                     "# TYPE graphgate_downstream_listen_total counter\n"
                     "graphgate_downstream_listen_total{event=\"opened\"} %llu\n"
                     "graphgate_downstream_listen_total{event=\"message\"} %llu\n"
                     "graphgate_downstream_listen_total{event=\"list_changed\"} %llu\n"
                     "graphgate_downstream_listen_total{event=\"cut_off\"} %llu\n"
                     "graphgate_downstream_listen_total{event=\"no_stream\"} %llu\n"
                     "graphgate_downstream_listen_total{event=\"owner_full\"} %llu\n",
                     MCP_HTTP_LISTEN_MAX, l.open, MCP_HTTP_LISTEN_MAX_OWNER, l.opened, l.events, l.list_changed, l.cut_off,
                     l.no_stream, l.owner_full);
}

/* ---- REST -------------------------------------------------------------------------------- */

static int answer_catalogs(gg_gateway *gw, gg_http_res *res, const char *tenant, int failed) {
    gg_error err = GG_ERROR_INIT;
    json_t *l = gg_store_downstream_list(gw->store, tenant, &err);
    if (!l) {
        gg_http_res_error_from(res, 0, &err);
        gg_error_clear(&err);
        return GG_HTTP_DONE;
    }
    json_t *body = json_pack("{s:s,s:o}", "tenant", tenant, "catalogs", l);
    if (failed >= 0) json_object_set_new(body, "unreachable", json_integer(failed));
    gg_http_res_json(res, 200, body);
    return GG_HTTP_DONE;
}

int gw_downstream_list(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    const char *t = gg_http_param(req, "t");
    if (!gw_admin_allow(gw, req, res, t, GG_SCOPE_GRAPHS_WRITE)) return GG_HTTP_DONE;
    return answer_catalogs(gw, res, t, -1);
}

typedef struct sync_job {
    gg_gateway *gw;
    gg_http_async *a;
    char tenant[GG_TENANT_MAX];
} sync_job;

static void sync_run(void *arg) {
    sync_job *j = arg;
    if (j->a && gg_http_async_abandoned(j->a)) {
        /* answered already (shutdown) */
    } else {
        int failed = refresh_tenant(j->gw, j->tenant);
        if (j->a) answer_catalogs(j->gw, gg_http_async_res(j->a), j->tenant, failed);
    }
    if (j->a) gg_http_async_complete(j->a);
    free(j);
}

static void sync_refuse(void *arg) {
    sync_job *j = arg;
    if (j->a) {
        gg_http_res_error(gg_http_async_res(j->a), 503, "shutting_down", "the server is shutting down");
        gg_http_async_complete(j->a);
    }
    free(j);
}

/* Queue a refresh of tenant on the upload threads (a = NULL: the periodic one). */
static bool sync_submit(gg_gateway *gw, const char *tenant, gg_http_async *a, gg_error *err) {
    sync_job *j = calloc(1, sizeof *j);
    if (!j) return gg_error_set(err, "unavailable", "out of memory"), false;
    *j = (sync_job){.gw = gw, .a = a};
    snprintf(j->tenant, sizeof j->tenant, "%s", tenant);
    if (gw_uploads_submit(gw->uploads, j->tenant, (gw_job){sync_run, sync_refuse, j, NULL}, err)) return true;
    free(j);
    return false;
}

int gw_downstream_sync(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    const char *t = gg_http_param(req, "t");
    if (!gw_admin_allow(gw, req, res, t, GG_SCOPE_GRAPHS_WRITE)) return GG_HTTP_DONE;
    gg_http_async *a = gg_http_defer(req);
    if (!a) return gg_http_res_error(res, 503, "unavailable", "out of memory"), GG_HTTP_DONE;
    gg_error err = GG_ERROR_INIT;
    if (!sync_submit(gw, t, a, &err)) {
        gg_http_res *ares = gg_http_async_res(a);
        gg_http_res_header(ares, "Retry-After", "1");
        gg_http_res_error_from(ares, strcmp(err.code, "rate_limited") == 0 ? 429 : 503, &err);
        gg_error_clear(&err);
        gg_http_async_complete(a);
    }
    return GG_HTTP_DEFERRED;
}

/* ---- periodic refresh ---------------------------------------------------------------------- */

struct gw_refresher {
    gg_gateway *gw;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stopping, joined;
    json_t *pending; /* tenants whose downstream said tools/list_changed: tenant → true */
};

#define GW_DOWNSTREAM_MAX_PENDING 1024

/* A downstream server of an installed graph sent a notification (its reader thread): on
 * tools/list_changed the tenant's catalogs are listed again, soon, by the refresher. */
void gw_downstream_notified(void *user, const char *tenant, const char *server, const char *method) {
    (void)server;
    gw_refresher *r = ((gg_gateway *)user)->refresher;
    if (!r || !tenant || strcmp(method, "notifications/tools/list_changed") != 0) return;
    pthread_mutex_lock(&r->mu);
    if (!r->stopping && json_object_size(r->pending) < GW_DOWNSTREAM_MAX_PENDING) {
        json_object_set_new(r->pending, tenant, json_true());
        pthread_cond_broadcast(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
}

/* Every interval: one refresh job per tenant with installed graphs (a tenant whose
 * uploads fill its share waits for the next round). */
static void refresh_round(gg_gateway *gw) {
    json_t *all = gw_registry_list(gw->registry), *seen = json_object();
    size_t i;
    json_t *e;
    json_array_foreach(all, i, e) {
        const char *t = json_string_value(json_array_get(e, 0));
        if (json_object_get(seen, t)) continue;
        json_object_set_new(seen, t, json_true());
        gg_error err = GG_ERROR_INIT;
        if (!sync_submit(gw, t, NULL, &err)) gg_error_clear(&err);
    }
    json_decref(seen);
    json_decref(all);
}

/* Queue the tenants that asked (taken from pending). Called with mu held. */
static void refresh_pending(gw_refresher *r) {
    json_t *p = r->pending;
    r->pending = json_object();
    pthread_mutex_unlock(&r->mu);
    const char *t;
    json_t *v;
    json_object_foreach(p, t, v) {
        gg_error err = GG_ERROR_INIT;
        if (!sync_submit(r->gw, t, NULL, &err)) gg_error_clear(&err);
    }
    json_decref(p);
    pthread_mutex_lock(&r->mu);
}

static void *refresher_main(void *arg) {
    gw_refresher *r = arg;
    pthread_mutex_lock(&r->mu);
    struct timespec next;
    clock_gettime(CLOCK_REALTIME, &next);
    next.tv_sec += GW_DOWNSTREAM_REFRESH_S;
    while (!r->stopping) {
        int rc = 0;
        while (!r->stopping && json_object_size(r->pending) == 0 && rc == 0)
            rc = pthread_cond_timedwait(&r->cv, &r->mu, &next);
        if (r->stopping) break;
        if (json_object_size(r->pending)) refresh_pending(r);
        if (rc == 0) continue;
        pthread_mutex_unlock(&r->mu); /* the interval passed */
        refresh_round(r->gw);
        pthread_mutex_lock(&r->mu);
        clock_gettime(CLOCK_REALTIME, &next);
        next.tv_sec += GW_DOWNSTREAM_REFRESH_S;
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

gw_refresher *gw_refresher_start(gg_gateway *gw) {
    gw_refresher *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->gw = gw;
    r->pending = json_object();
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    if (pthread_create(&r->thread, NULL, refresher_main, r) != 0) {
        json_decref(r->pending);
        pthread_mutex_destroy(&r->mu);
        pthread_cond_destroy(&r->cv);
        free(r);
        return NULL;
    }
    return r;
}

void gw_refresher_stop(gw_refresher *r) {
    if (!r || r->joined) return;
    pthread_mutex_lock(&r->mu);
    r->stopping = true; /* later notifications are ignored */
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
    r->joined = true;
}

void gw_refresher_free(gw_refresher *r) {
    if (!r) return;
    gw_refresher_stop(r);
    json_decref(r->pending);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
}
