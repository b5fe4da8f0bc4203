/* downstream.c — the tenants' downstream tool catalogs in the gateway. Uploads list their
 * graph's servers and check the mcp nodes against them (src/graph/downstream.c); each
 * catalog listed is stored for the tenant (gw_catalog_sink). The installed graphs'
 * servers are listed again on demand (POST /admin/tenants/{t}/downstream/sync), when one of
 * them sends notifications/tools/list_changed, and every GW_DOWNSTREAM_REFRESH_S s,
 * each tenant's listing as a job on the upload threads (never a polling thread; one
 * tenant's slow servers hold one upload thread, bounded by the listing timeout).
 * Installed graphs keep listening to their streamable-HTTP servers (gw_downstream_listen:
 * a GET stream per session, src/mcp/client_http.c), so those say list_changed too. A
 * list_changed re-lists at most once per downstream.list_changed_min_interval for its
 * (tenant, server), the rest coalescing into one trailing re-listing (the refresher below).
 * GET /admin/tenants/{t}/downstream answers the stored catalogs. A catalog that changed
 * recompiles the tenant's graphs that proxy that server (src/graph/proxy.c) and tells
 * their clients tools/list_changed — no re-upload; the recompiled graph takes over the
 * previous compilation's downstream clients (gw_downstream_adopt). */
#include <stdlib.h>
#include <string.h>

#include "gateway/internal.h"

#define GW_DOWNSTREAM_REFRESH_S 900
#define GW_DOWNSTREAM_TIMEOUT_MS 10000
/* GET /admin/tenants/{t}/downstream pages: catalogs a page by default and at most, and the
 * tools bytes past which a page ends (a catalog is at most downstream.max_catalog_bytes). */
#define GW_CATALOG_PAGE_DEFAULT 10
#define GW_CATALOG_PAGE_MAX 100
#define GW_CATALOG_PAGE_BYTES (2LL * 1024 * 1024)
/* Refused catalogs a sync answer lists. */
#define GW_CATALOG_MAX_ERRORS 64

/* Store a catalog listed for the tenant: the store writes only what changed, and refuses
 * one that passes the tenant's catalog quota (an upload then fails; a refresh keeps the
 * stored catalog and reports the server in its errors). */
static bool catalog_fetched(void *user, const gg_graph_catalog *cat, gg_error *err) {
    gw_catalog_sink *sink = user;
    gg_catalog_put p = {sink->tenant, cat->identity, cat->server, cat->tools, cat->fetched_ms,
                        (long long)sink->gw->cfg->tenant_max_catalog_bytes};
    int stored = gg_store_downstream_put(sink->gw->store, &p, err);
    if (stored > 0) {
        if (!sink->changed) sink->changed = json_object();
        json_object_set_new(sink->changed, cat->identity, json_true());
    }
    if (stored >= 0) return true;
    gg_log(GG_LOG_WARN, "a downstream tool catalog was not stored", "tenant", sink->tenant, "server", cat->server,
           "error", err->message ? err->message : err->code, NULL);
    if (!sink->errors) sink->errors = json_array();
    if (json_array_size(sink->errors) < GW_CATALOG_MAX_ERRORS)
        json_array_append_new(sink->errors, json_pack("{s:s,s:s,s:s}", "server", cat->server, "code", err->code, "error",
                                                      err->message ? err->message : err->code));
    return false;
}

const gg_graph_downstream *gw_catalog_sink_init(gw_catalog_sink *sink, gg_gateway *gw, const char *tenant) {
    *sink = (gw_catalog_sink){.gw = gw, .tenant = tenant};
    sink->check = (gg_graph_downstream){.mode = GG_CHECK_ERROR, .timeout_ms = GW_DOWNSTREAM_TIMEOUT_MS,
                                        .max_catalog_bytes = gw->cfg->downstream_max_catalog_bytes,
                                        .fetched = catalog_fetched, .user = sink};
    return &sink->check;
}

/* The stored catalog of the server with this identity; before that server is listed
 * again, the one migration 0011 carried over from the name-keyed table. */
json_t *gw_stored_catalog(void *user, const char *server, const char *identity) {
    gw_catalog_ctx *c = user;
    gg_error err = GG_ERROR_INIT;
    json_t *row = gg_store_downstream_get_identity(c->gw->store, c->tenant, identity, &err);
    gg_error_clear(&err);
    if (!row) {
        char legacy[GG_NAME_MAX + 8];
        snprintf(legacy, sizeof legacy, "name:%s", server);
        row = gg_store_downstream_get_identity(c->gw->store, c->tenant, legacy, &err);
        gg_error_clear(&err);
    }
    json_t *tools = json_incref(json_object_get(row, "tools"));
    json_decref(row);
    return tools;
}

/* Whether g has a proxy entry on one of the servers (identities) in changed. */
static bool proxies_any(const gg_graph *g, json_t *changed) {
    const char *identity;
    json_t *v;
    json_object_foreach(changed, identity, v)
        if (gg_graph_proxies_identity(g, identity)) return true;
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
        gw_downstream_adopt(gw, tenant, graph, version, s); /* same servers: same sessions, streams, children */
        gw_downstream_listen(s); /* its clients listen (already, when taken over) */
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
    json_decref(sink->errors);
    sink->errors = NULL;
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
static int refresh_tenant(gg_gateway *gw, const char *tenant, json_t **errors) {
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
    if (errors) *errors = json_incref(sink.errors);
    gw_catalog_sink_done(&sink, NULL); /* proxy graphs follow their servers' catalogs */
    return failed;
}

/* See internal.h. */
void gw_downstream_adopt(gg_gateway *gw, const char *tenant, const char *graph, int version, mcp_server *s) {
    int v = 0;
    mcp_server *old = gw_registry_peek(gw->registry, tenant, graph, &v);
    if (old && v == version)
        gg_graph_adopt_clients(gg_graph_provider_graph(mcp_server_provider(s)), gg_graph_provider_graph(mcp_server_provider(old)));
    mcp_server_unref(old);
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

/* A page of the tenant's catalogs: at most limit of them and, past the first, about
 * GW_CATALOG_PAGE_BYTES of tools, so no answer holds a tenant's whole store. */
static int answer_catalogs(gg_gateway *gw, gg_http_res *res, const char *tenant, const char *cursor, int limit,
                           int failed, json_t *errors) {
    gg_error err = GG_ERROR_INIT;
    char *next = NULL;
    json_t *l = gg_store_downstream_page(gw->store, tenant, cursor, limit, GW_CATALOG_PAGE_BYTES, &next, &err);
    if (!l) {
        json_decref(errors);
        gg_http_res_error_from(res, 0, &err);
        gg_error_clear(&err);
        return GG_HTTP_DONE;
    }
    json_t *body = json_pack("{s:s,s:o,s:o}", "tenant", tenant, "catalogs", l, "next_cursor",
                             next ? json_string(next) : json_null());
    free(next);
    if (failed >= 0) json_object_set_new(body, "unreachable", json_integer(failed));
    if (failed >= 0) json_object_set_new(body, "errors", errors ? errors : json_array());
    else json_decref(errors);
    gg_http_res_json(res, 200, body);
    return GG_HTTP_DONE;
}

int gw_downstream_list(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    const char *t = gg_http_param(req, "t");
    if (!gw_admin_allow(gw, req, res, t, GG_SCOPE_GRAPHS_WRITE)) return GG_HTTP_DONE;
    const char *lim = gg_http_query(req, "limit");
    long limit = GW_CATALOG_PAGE_DEFAULT;
    if (lim) {
        char *end;
        limit = strtol(lim, &end, 10);
        if (*end || limit < 1 || limit > GW_CATALOG_PAGE_MAX) {
            gg_http_res_error(res, 400, "bad_request", "limit: 1..%d", GW_CATALOG_PAGE_MAX);
            return GG_HTTP_DONE;
        }
    }
    return answer_catalogs(gw, res, t, gg_http_query(req, "cursor"), (int)limit, -1, NULL);
}

typedef struct sync_job {
    gg_gateway *gw;
    gg_http_async *a;
    bool notified; /* a re-listing after list_changed: the refresher is told when it ends */
    char tenant[GG_TENANT_MAX];
} sync_job;

static void relisted(gw_refresher *r, const char *tenant);

static void sync_run(void *arg) {
    sync_job *j = arg;
    if (j->a && gg_http_async_abandoned(j->a)) {
        /* answered already (shutdown) */
    } else {
        json_t *errors = NULL;
        int failed = refresh_tenant(j->gw, j->tenant, &errors);
        if (j->a) answer_catalogs(j->gw, gg_http_async_res(j->a), j->tenant, NULL, GW_CATALOG_PAGE_DEFAULT, failed, errors);
        else json_decref(errors);
    }
    if (j->a) gg_http_async_complete(j->a);
    if (j->notified) relisted(j->gw->refresher, j->tenant);
    free(j);
}

static void sync_refuse(void *arg) {
    sync_job *j = arg;
    if (j->a) {
        gg_http_res_error(gg_http_async_res(j->a), 503, "shutting_down", "the server is shutting down");
        gg_http_async_complete(j->a);
    }
    if (j->notified) relisted(j->gw->refresher, j->tenant);
    free(j);
}

/* Queue a refresh of tenant on the upload threads (a = NULL: the periodic one or, notified,
 * one after list_changed). */
static bool sync_submit(gg_gateway *gw, const char *tenant, gg_http_async *a, bool notified, gg_error *err) {
    sync_job *j = calloc(1, sizeof *j);
    if (!j) return gg_error_set(err, "unavailable", "out of memory"), false;
    *j = (sync_job){.gw = gw, .a = a, .notified = notified};
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
    if (!sync_submit(gw, t, a, false, &err)) {
        gg_http_res *ares = gg_http_async_res(a);
        gg_http_res_header(ares, "Retry-After", "1");
        gg_http_res_error_from(ares, strcmp(err.code, "rate_limited") == 0 ? 429 : 503, &err);
        gg_error_clear(&err);
        gg_http_async_complete(a);
    }
    return GG_HTTP_DEFERRED;
}

/* ---- periodic refresh ---------------------------------------------------------------------- */

/* Re-listing after tools/list_changed is debounced per (tenant, server): the first
 * notification re-lists the tenant at once, those after it within
 * downstream.list_changed_min_interval fold into one trailing re-listing once the interval
 * is over, and a tenant has at most one such re-listing queued or running. A server sending
 * hundreds a second thus costs one tenant listing per interval (and, when its catalog
 * changed, one recompile, which keeps the clients: gw_downstream_adopt). A tenant's servers
 * past LC_PER_TENANT share one key; past LC_MAX keys in all, keys with nothing due are
 * dropped to make room, else the notification is left to the periodic refresh. */
#define LC_MAX 4096
#define LC_PER_TENANT 16

typedef struct lc_key {
    char tenant[GG_TENANT_MAX];
    char server[GG_NAME_MAX + 1]; /* "": the tenant's servers past LC_PER_TENANT */
    double last_ms;               /* its tenant's last re-listing for it (monotonic); 0 = never */
    bool due;                     /* a list_changed no re-listing has answered yet */
} lc_key;

struct gw_refresher {
    gg_gateway *gw;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stopping, joined;
    lc_key *keys; /* LC_MAX of them */
    size_t nkeys;
    json_t *running; /* tenants whose re-listing is queued or running: tenant → true */
};

static double lc_interval(const gw_refresher *r) {
    return r->gw->cfg ? (double)r->gw->cfg->downstream_list_changed_min_interval_ms : 5000;
}

/* Make room: drop the keys with nothing due whose interval is over (mu held). */
static void lc_prune(gw_refresher *r, double now) {
    size_t n = 0;
    for (size_t i = 0; i < r->nkeys; i++)
        if (r->keys[i].due || now - r->keys[i].last_ms < lc_interval(r)) r->keys[n++] = r->keys[i];
    r->nkeys = n;
}

/* The key of tenant's server, added when new; NULL when the table is full (mu held). */
static lc_key *lc_find(gw_refresher *r, const char *tenant, const char *server, double now) {
    lc_key want = {0};
    snprintf(want.tenant, sizeof want.tenant, "%s", tenant);
    snprintf(want.server, sizeof want.server, "%s", server);
    size_t mine = 0;
    for (size_t i = 0; i < r->nkeys; i++) {
        lc_key *k = &r->keys[i];
        if (strcmp(k->tenant, want.tenant)) continue;
        if (!strcmp(k->server, want.server)) return k;
        mine++;
    }
    if (mine >= LC_PER_TENANT && want.server[0]) return lc_find(r, tenant, "", now);
    if (r->nkeys == LC_MAX) lc_prune(r, now);
    if (r->nkeys == LC_MAX) return NULL;
    r->keys[r->nkeys] = want;
    return &r->keys[r->nkeys++];
}

/* A downstream server of an installed graph sent a notification (its reader thread): on
 * tools/list_changed its tenant's catalogs are listed again by the refresher, debounced. */
void gw_downstream_notified(void *user, const char *tenant, const char *server, const char *method) {
    gw_refresher *r = ((gg_gateway *)user)->refresher;
    if (!r || !tenant || strcmp(method, "notifications/tools/list_changed") != 0) return;
    pthread_mutex_lock(&r->mu);
    lc_key *k = r->stopping ? NULL : lc_find(r, tenant, server ? server : "", gg_now_ms());
    if (k && !k->due) { /* the first since its last re-listing: the refresher works out when */
        k->due = true;
        pthread_cond_broadcast(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
}

/* A re-listing after list_changed ended (an upload thread): the tenant's keys may go on. */
static void relisted(gw_refresher *r, const char *tenant) {
    if (!r) return;
    pthread_mutex_lock(&r->mu);
    json_object_del(r->running, tenant);
    pthread_cond_broadcast(&r->cv);
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
        if (!sync_submit(gw, t, NULL, false, &err)) gg_error_clear(&err);
    }
    json_decref(seen);
    json_decref(all);
}

/* The tenants with a key due now and no re-listing running, marked running, their due keys
 * answered (mu held); *next gets the earliest time a key falls due later (0: none). */
static json_t *lc_take_due(gw_refresher *r, double now, double *next) {
    json_t *start = json_object();
    double iv = lc_interval(r);
    *next = 0;
    for (size_t i = 0; i < r->nkeys; i++) {
        lc_key *k = &r->keys[i];
        if (!k->due || json_object_get(r->running, k->tenant)) continue; /* running: its end wakes us */
        double at = k->last_ms ? k->last_ms + iv : now;
        if (at <= now) json_object_set_new(start, k->tenant, json_true());
        else if (!*next || at < *next) *next = at;
    }
    const char *t;
    json_t *v;
    json_object_foreach(start, t, v) {
        json_object_set_new(r->running, t, json_true());
        for (size_t i = 0; i < r->nkeys; i++)
            if (r->keys[i].due && !strcmp(r->keys[i].tenant, t)) {
                r->keys[i].due = false; /* this re-listing answers it */
                r->keys[i].last_ms = now;
            }
    }
    return start;
}

/* Queue the re-listings due now (mu held, let go meanwhile); one the upload threads refuse
 * is tried again after the interval. The next time a key falls due (0: none). */
static double refresh_due(gw_refresher *r) {
    double next;
    json_t *start = lc_take_due(r, gg_now_ms(), &next);
    if (!json_object_size(start)) {
        json_decref(start);
        return next;
    }
    pthread_mutex_unlock(&r->mu);
    json_t *refused = json_array();
    const char *t;
    json_t *v;
    json_object_foreach(start, t, v) {
        gg_error err = GG_ERROR_INIT;
        if (!sync_submit(r->gw, t, NULL, true, &err)) json_array_append_new(refused, json_string(t));
        gg_error_clear(&err);
    }
    json_decref(start);
    pthread_mutex_lock(&r->mu);
    size_t i;
    json_array_foreach(refused, i, v) {
        json_object_del(r->running, json_string_value(v));
        for (size_t k = 0; k < r->nkeys; k++)
            if (!strcmp(r->keys[k].tenant, json_string_value(v))) r->keys[k].due = true;
    }
    double retry = json_array_size(refused) ? gg_now_ms() + lc_interval(r) : 0;
    json_decref(refused);
    return !next || (retry && retry < next) ? retry : next;
}

/* now + ms as a CLOCK_REALTIME deadline (what pthread_cond_timedwait takes). */
static struct timespec realtime_in(double ms) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    long long ns = t.tv_nsec + (long long)(ms * 1e6);
    t.tv_sec += ns / 1000000000LL;
    t.tv_nsec = ns % 1000000000LL;
    return t;
}

static bool before(const struct timespec *a, const struct timespec *b) {
    return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

static void *refresher_main(void *arg) {
    gw_refresher *r = arg;
    pthread_mutex_lock(&r->mu);
    struct timespec round = realtime_in(GW_DOWNSTREAM_REFRESH_S * 1000.0), now;
    while (!r->stopping) {
        double next = refresh_due(r);
        if (r->stopping) break;
        struct timespec until = round;
        if (next) {
            struct timespec due = realtime_in(next - gg_now_ms() + 1);
            if (before(&due, &until)) until = due;
        }
        pthread_cond_timedwait(&r->cv, &r->mu, &until); /* a notification, a re-listing's end, or time */
        clock_gettime(CLOCK_REALTIME, &now);
        if (r->stopping || before(&now, &round)) continue;
        pthread_mutex_unlock(&r->mu); /* the interval passed */
        refresh_round(r->gw);
        pthread_mutex_lock(&r->mu);
        round = realtime_in(GW_DOWNSTREAM_REFRESH_S * 1000.0);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

gw_refresher *gw_refresher_start(gg_gateway *gw) {
    gw_refresher *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->gw = gw;
    r->running = json_object();
    r->keys = calloc(LC_MAX, sizeof *r->keys);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    if (!r->running || !r->keys || pthread_create(&r->thread, NULL, refresher_main, r) != 0) {
        json_decref(r->running);
        free(r->keys);
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
    json_decref(r->running);
    free(r->keys);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
}
