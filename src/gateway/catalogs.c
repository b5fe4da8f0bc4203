/* catalogs.c — the tenants' downstream tool catalogs in the gateway. Uploads list their
 * graph's servers and check the mcp nodes against them (src/graph/catalog_check.c); each
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
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/authz.h"
#include "gateway/catalogs.h"
#include "gateway/credentials.h"
#include "gateway/internal.h"
#include "gateway/relay.h"
#include "util/suspicious.h"

#define GW_DOWNSTREAM_REFRESH_S 900
#define GW_DOWNSTREAM_TIMEOUT_MS 10000
/* GET /admin/tenants/{t}/downstream pages: catalogs a page by default and at most, and the
 * tools bytes past which a page ends (a catalog is at most downstream.max_catalog_bytes). */
#define GW_CATALOG_PAGE_DEFAULT 10
#define GW_CATALOG_PAGE_MAX 100
#define GW_CATALOG_PAGE_BYTES (2LL * 1024 * 1024)
/* Refused catalogs a sync answer lists. */
#define GW_CATALOG_MAX_ERRORS 64
/* Pending or rejected definition changes a tenant holds at most (one per server tool). */
#define GW_PENDING_MAX 256

static void pins_listed(gw_catalog_sink *sink, const gg_graph_catalog *cat, bool changed);
static void pins_metrics(gw_refresher *r, gg_strbuf *out);

/* Store a catalog listed for the tenant: the store writes only what changed, and refuses
 * one that passes the tenant's catalog quota (an upload then fails; a refresh keeps the
 * stored catalog and reports the server in its errors). */
static bool catalog_fetched(void *user, const gg_graph_catalog *cat, gg_error *err) {
    gw_catalog_sink *sink = user;
    gg_catalog_put p = {sink->tenant, cat->identity, cat->server, cat->tools, cat->fetched_ms,
                        (long long)sink->gw->cfg->tenant_max_catalog_bytes};
    int stored = gg_store_downstream_put(sink->gw->store, &p, err);
    if (stored >= 0) pins_listed(sink, cat, stored > 0);
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
    gg_error err = GG_ERROR_INIT;
    mcp_server *s = gw_build_version(gw, tenant, graph, version, &err);
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

/* See catalogs.h. */
void gw_downstream_adopt(gg_gateway *gw, const char *tenant, const char *graph, int version, mcp_server *s) {
    int v = 0;
    mcp_server *old = gw_registry_peek(gw->registry, tenant, graph, &v);
    if (old && v == version)
        gg_graph_adopt_clients(gg_graph_provider_graph(mcp_server_provider(s)), gg_graph_provider_graph(mcp_server_provider(old)));
    mcp_server_unref(old);
}

/* See catalogs.h. */
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

void gw_downstream_metrics(gg_gateway *gw, gg_strbuf *out) {
    pins_metrics(gw->refresher, out);
    mcp_listen_stats l = mcp_http_listen_stats(gw->downstream);
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
    json_t *changes = cursor ? NULL : gg_store_changes_list(gw->store, tenant, &err); /* on the first page */
    gg_error_clear(&err);
    json_t *body = json_pack("{s:s,s:o,s:o}", "tenant", tenant, "catalogs", l, "next_cursor",
                             next ? json_string(next) : json_null());
    if (changes) json_object_set_new(body, "changes", changes);
    if (!cursor) json_object_set_new(body, "auth", gw_dsauth_tenant(gw->dsauth, tenant)); /* credentials in use */
    if (!cursor) json_object_set_new(body, "for_caller", gw_dsauth_for_callers(gw->dsauth, tenant));
    if (!cursor) { /* per_user servers: how many users hold a grant (never a token) */
        json_t *pu = gg_store_user_grants_summary(gw->store, tenant, &err);
        gg_error_clear(&err);
        json_object_set_new(body, "per_user", pu ? pu : json_array());
    }
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
            gg_http_res_fail(res, "bad_request", "limit: 1..%d", GW_CATALOG_PAGE_MAX);
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
        gg_http_res_fail(gg_http_async_res(j->a), "shutting_down", "the server is shutting down");
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
    if (!a) return gg_http_res_fail(res, "unavailable", "out of memory"), GG_HTTP_DONE;
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
    int relay;                    /* MCP_FORWARD_* whose list_changed is still to relay (relay_due) */
    double relayed_ms[2];         /* when each kind (resources, prompts) was last relayed
                                   * (monotonic; 0 = never): bounded apart, so one kind's
                                   * relay never holds back the other's first */
} lc_key;

#define UNSUB_SLOTS 256
#define UNSUB_EVERY_MS 1000

struct gw_refresher {
    gg_gateway *gw;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stopping, joined;
    lc_key *keys; /* LC_MAX of them */
    size_t nkeys;
    json_t *running; /* tenants whose re-listing is queued or running: tenant → true */
    /* pinned definitions: counters (any thread) and the pins generation seen (watcher) */
    atomic_ullong changes_recorded, changes_dropped, suspicious, suspicious_listed;
    atomic_ullong pins_tenant_recompiles; /* tenants the watcher recompiled after an approval */
    long long pins_gen; /* -1: not read yet */
    /* proxied URIs unsubscribed downstream lately (hash of "tenant/graph\nuri" → when),
     * so that a flood of updates nobody hears costs one resources/unsubscribe a second */
    struct { uint64_t h; double at; } unsub[UNSUB_SLOTS];
};

static double lc_interval(const gw_refresher *r) {
    return r->gw->cfg ? (double)r->gw->cfg->downstream_list_changed_min_interval_ms : 5000;
}

/* Make room: drop the keys with nothing due whose interval is over (mu held). */
static void lc_prune(gw_refresher *r, double now) {
    size_t n = 0;
    for (size_t i = 0; i < r->nkeys; i++)
        if (r->keys[i].due || r->keys[i].relay || now - r->keys[i].last_ms < lc_interval(r) ||
            now - r->keys[i].relayed_ms[0] < lc_interval(r) || now - r->keys[i].relayed_ms[1] < lc_interval(r))
            r->keys[n++] = r->keys[i];
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

/* Whether to tell tag's downstream that nobody subscribes to uri now: once a second per
 * (graph, uri) slot at most. */
static bool unsub_due(gw_refresher *r, const char *tag, const char *uri) {
    uint64_t h = gg_hash_add(gg_hash_sep(gg_hash_str(tag), '\n'), uri);
    double now = gg_now_ms();
    pthread_mutex_lock(&r->mu);
    bool due = !r->stopping && (r->unsub[h % UNSUB_SLOTS].h != h || now - r->unsub[h % UNSUB_SLOTS].at >= UNSUB_EVERY_MS);
    if (due) r->unsub[h % UNSUB_SLOTS].h = h, r->unsub[h % UNSUB_SLOTS].at = now;
    pthread_mutex_unlock(&r->mu);
    return due;
}

/* uri to the sessions of tenant's endpoint ep subscribed to it and its subscriptions/listen
 * streams naming it (gw_streams_updated, gw_listen_updated bound the rate): how many. */
static size_t updated_on(gg_gateway *gw, const char *tenant, const char *ep, const char *uri) {
    return gw_streams_updated(gw->streams, tenant, ep, uri) + gw_listen_updated(gw->listen, tenant, ep, uri);
}

/* Whether a client of this replica is on one of tenant's views (before they are looked up). */
static bool on_views(gg_gateway *gw, const char *tenant) {
    return gw_streams_any_on(gw->streams, tenant, GW_VIEWS_PREFIX) || gw_listen_any_on(gw->listen, tenant, GW_VIEWS_PREFIX);
}

/* graph's proxied uri as tenant's _all and the views naming graph under "resources" serve
 * it, "<graph>.<uri>" (tenantwide.c), to their subscribers: how many. The views are looked up
 * only while a client of this replica is on one of the tenant's views, from their cache
 * (gw_views_naming: no store read while they are unchanged). */
static size_t relay_tenantwide(gg_gateway *gw, const char *tenant, const char *graph, const char *uri) {
    char dotted[GG_NAME_MAX + 2 + 2304]; /* a relayed URI is shorter (gg_graph_downstream_notified) */
    int len = snprintf(dotted, sizeof dotted, "%s.%s", graph, uri);
    if (len < 0 || (size_t)len >= sizeof dotted) return 0;
    size_t heard = updated_on(gw, tenant, GW_TENANTWIDE, dotted), n = 0;
    gw_view_ep eps[GW_VIEWS_MAX];
    if (on_views(gw, tenant)) n = gw_views_naming(gw, tenant, graph, GW_VIEW_RESOURCES, eps);
    for (size_t i = 0; i < n; i++) heard += updated_on(gw, tenant, eps[i], dotted);
    return heard;
}

/* A proxied resource's notifications/resources/updated (uri as the graph's clients name it)
 * to the subscribers on tag's graph's endpoint, and under "<graph>." to those on its
 * tenant's _all and views (relay_tenantwide); none left anywhere: the downstream is told to
 * stop (ended sessions and streams, unsubscribes). Only tag's tenant's endpoints: another
 * tenant's sessions are on other endpoints. */
static void relay_updated(gg_gateway *gw, const char *tag, const char *uri) {
    char tenant[GG_NAME_MAX + 1], graph[GG_NAME_MAX + 1];
    const char *slash = strchr(tag, '/');
    if (!slash || (size_t)(slash - tag) > GG_NAME_MAX || strlen(slash + 1) > GG_NAME_MAX) return;
    snprintf(tenant, sizeof tenant, "%.*s", (int)(slash - tag), tag);
    snprintf(graph, sizeof graph, "%s", slash + 1);
    size_t heard = updated_on(gw, tenant, graph, uri) + relay_tenantwide(gw, tenant, graph, uri);
    if (heard || !gw->refresher || !unsub_due(gw->refresher, tag, uri)) return;
    mcp_server *s = gw->registry ? gw_registry_peek(gw->registry, tenant, graph, NULL) : NULL;
    gg_graph *g = s ? gg_graph_provider_graph(mcp_server_provider(s)) : NULL;
    if (g) gg_graph_proxy_unsubscribe(g, uri);
    mcp_server_unref(s);
}

/* A downstream server of an installed graph sent a notification (its reader thread): on
 * tools/list_changed its tenant's catalogs are listed again by the refresher, debounced;
 * resources/ and prompts/list_changed are relayed by it to the clients of the graphs that
 * proxy them, debounced the same way (relay_due); a proxied resource's
 * resources/updated goes to its subscribers at once (relay_updated). */
void gw_downstream_notified(void *user, const char *tag, const char *server, const char *method, const char *uri) {
    gw_refresher *r = ((gg_gateway *)user)->refresher;
    char tenant[GG_NAME_MAX + 1];
    snprintf(tenant, sizeof tenant, "%.*s", (int)strcspn(tag ? tag : "", "/"), tag ? tag : "");
    if (uri && tag && !strcmp(method, "notifications/resources/updated")) {
        relay_updated(user, tag, uri);
        return;
    }
    int relay = !strcmp(method, "notifications/resources/list_changed") ? MCP_FORWARD_RESOURCES
                : !strcmp(method, "notifications/prompts/list_changed") ? MCP_FORWARD_PROMPTS : 0;
    if (!r || !tag || (!relay && strcmp(method, "notifications/tools/list_changed") != 0)) return;
    pthread_mutex_lock(&r->mu);
    lc_key *k = r->stopping ? NULL : lc_find(r, tenant, server ? server : "", gg_now_ms());
    if (k && relay && !(k->relay & relay)) {
        k->relay |= relay;
        pthread_cond_broadcast(&r->cv);
    } else if (k && !relay && !k->due) { /* the first since its last re-listing: the refresher works out when */
        k->due = true;
        pthread_cond_broadcast(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
}

static const char *const LC_METHOD[] = {"notifications/resources/list_changed", "notifications/prompts/list_changed"};

/* list_changed number k (0: resources, 1: prompts; msg its serialized notification) to the
 * GET streams of tenant's endpoint ep and to its 2026-07-28 listen streams asking for it. */
static void relay_to(gg_gateway *gw, const char *tenant, const char *ep, int k, const char *msg) {
    gw_streams_notify(gw->streams, tenant, ep, msg);
    gw_listen_relay(gw->listen, tenant, ep, LC_METHOD[k]);
}

/* notifications/resources|prompts/list_changed (kinds: MCP_FORWARD_*) of tenant's server
 * ("": any of its servers) to the GET and listen streams of each installed graph
 * re-exporting them, of /mcp/{t}/_all, and of the views naming such a graph (the
 * refresher's thread). */
static void relay_list_changed(gg_gateway *gw, const char *tenant, const char *server, int kinds) {
    static const char *const msg[] = {"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/list_changed\"}",
                                      "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/prompts/list_changed\"}"};
    json_t *all = gw_registry_list(gw->registry), *e;
    int tw = 0, viewers = -1; /* -1: not asked yet */
    size_t i;
    json_array_foreach(all, i, e) {
        const char *graph = json_string_value(json_array_get(e, 1));
        if (strcmp(json_string_value(json_array_get(e, 0)), tenant)) continue;
        mcp_server *s = gw_registry_peek(gw->registry, tenant, graph, NULL);
        gg_graph *g = s ? gg_graph_provider_graph(mcp_server_provider(s)) : NULL;
        int hit = g ? kinds & gg_graph_proxies_extras(g, *server ? server : NULL) : 0;
        mcp_server_unref(s);
        if (!hit) continue;
        tw |= hit;
        if (viewers < 0) viewers = on_views(gw, tenant);
        for (int k = 0; k < 2; k++) {
            if (!(hit & (1 << k))) continue;
            relay_to(gw, tenant, graph, k, msg[k]);
            gw_view_ep eps[GW_VIEWS_MAX];
            size_t n = viewers ? gw_views_naming(gw, tenant, graph, k ? GW_VIEW_PROMPTS : GW_VIEW_RESOURCES, eps) : 0;
            for (size_t x = 0; x < n; x++) relay_to(gw, tenant, eps[x], k, msg[k]);
        }
    }
    for (int k = 0; k < 2; k++)
        if (tw & (1 << k)) relay_to(gw, tenant, GW_TENANTWIDE, k, msg[k]);
    json_decref(all);
}

/* next, or earlier when a key has a relay pending: a notification that came while mu was let
 * go broadcast to nobody (the refresher was relaying, not waiting), so its relay, trailing or
 * not, is scheduled from here rather than left for the next notification (mu held). */
static double relay_next(gw_refresher *r, double next) {
    double iv = lc_interval(r), now = gg_now_ms();
    for (size_t i = 0; i < r->nkeys; i++)
        for (int b = 0; b < 2; b++) {
            if (!(r->keys[i].relay & (1 << b))) continue;
            double at = r->keys[i].relayed_ms[b] && r->keys[i].relayed_ms[b] + iv > now ? r->keys[i].relayed_ms[b] + iv : now;
            if (!next || at < next) next = at;
        }
    return next;
}

/* Relay the list_changed notifications due now (mu held, let go meanwhile): per (tenant,
 * server, kind) the first at once, later ones within downstream.list_changed_min_interval folded
 * into one trailing relay. The next time one falls due (0: none). */
static double relay_due(gw_refresher *r) {
    double now = gg_now_ms(), iv = lc_interval(r), next = 0;
    struct due { char tenant[GG_TENANT_MAX], server[GG_NAME_MAX + 1]; int kinds; } *go = NULL;
    size_t n = 0;
    for (size_t i = 0; i < r->nkeys; i++) {
        lc_key *k = &r->keys[i];
        int kinds = 0;
        for (int b = 0; b < 2; b++) {
            if (!(k->relay & (1 << b))) continue;
            double at = k->relayed_ms[b] ? k->relayed_ms[b] + iv : now;
            if (at <= now) kinds |= 1 << b;
            else if (!next || at < next) next = at;
        }
        if (!kinds) continue;
        struct due *more = realloc(go, (n + 1) * sizeof *go);
        if (!more) break; /* out of memory: tried again on the next wake */
        go = more;
        memcpy(go[n].tenant, k->tenant, sizeof go[n].tenant);
        memcpy(go[n].server, k->server, sizeof go[n].server);
        go[n++].kinds = kinds;
        k->relay &= ~kinds;
        for (int b = 0; b < 2; b++)
            if (kinds & (1 << b)) k->relayed_ms[b] = now;
    }
    if (!n) return next;
    pthread_mutex_unlock(&r->mu);
    for (size_t i = 0; i < n; i++) relay_list_changed(r->gw, go[i].tenant, go[i].server, go[i].kinds);
    free(go);
    pthread_mutex_lock(&r->mu);
    return relay_next(r, next);
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
        double next = refresh_due(r), rnext = r->stopping ? 0 : relay_due(r);
        if (rnext && (!next || rnext < next)) next = rnext;
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
    r->pins_gen = -1;
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

/* ---- pinned definitions (issue 28) ------------------------------------------------------
 * An upload stores what its graph pinned (gw_pins_store); a stored version compiles from
 * its pins (gw_stored_pins, src/graph/pins.c applies the server's on_change). A listing
 * whose catalog changed is compared with the pins of the tenant's active versions on that
 * server (review and quarantine): each differing tool is a pending change with its diff,
 * one row per tool (a newer change replaces it), at most GW_PENDING_MAX per tenant, an
 * audit entry when first proposed, and counted. An admin approves (the pins take the new
 * definition, the pins generation moves: every replica recompiles, gw_pins_check) or
 * rejects (the row stays as rejected, so the same definition is not proposed again). */

/* Hashes of the definitions g pinned, beside them (the store cannot hash: graph layer). */
static json_t *pins_with_hashes(json_t *pins) {
    json_t *out = gg_json_clone(pins);
    const char *id, *tool;
    json_t *e, *def;
    json_object_foreach(out, id, e) {
        json_t *h = json_object();
        json_object_foreach(json_object_get(e, "tools"), tool, def) {
            char hex[65];
            if (gg_graph_tool_hash(def, hex)) json_object_set_new(h, tool, json_string(hex));
        }
        json_object_set_new(e, "hash", h);
    }
    return out;
}

void gw_pins_store(gg_gateway *gw, const char *tenant, const char *graph, int version, mcp_server *s) {
    gg_graph *g = s ? gg_graph_provider_graph(mcp_server_provider(s)) : NULL;
    json_t *pins = g ? pins_with_hashes(gg_graph_pins(g)) : NULL;
    gg_error err = GG_ERROR_INIT;
    if (pins && !gg_store_pins_put(gw->store, tenant, graph, version, pins, &err))
        gg_log(GG_LOG_ERROR, "the version's pinned definitions were not stored; it follows its servers' catalogs", "tenant",
               tenant, "graph", graph, "error", err.message ? err.message : err.code, NULL);
    gg_error_clear(&err);
    json_decref(pins);
}

json_t *gw_stored_pins(void *user, const char *server, const char *identity) {
    (void)server;
    gw_pins_ctx *c = user;
    gg_error err = GG_ERROR_INIT;
    json_t *pins = gg_store_pins_get(c->gw->store, c->tenant, c->graph, c->version, identity, &err);
    gg_error_clear(&err);
    return pins;
}

/* The definition named name in tools, or NULL. */
static json_t *def_named(json_t *tools, const char *name) {
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t)
        if (json_is_string(json_object_get(t, "name")) && !strcmp(json_string_value(json_object_get(t, "name")), name)) return t;
    return NULL;
}

/* A change's id: what it changes and to what, so an approval names exactly what was shown. */
static void change_id(const char *identity, const char *tool, const char *new_hash, char out[17]) {
    crypto_generichash_state st;
    unsigned char h[8];
    const char *parts[] = {identity, tool, new_hash ? new_hash : ""};
    crypto_generichash_init(&st, NULL, 0, sizeof h);
    for (int i = 0; i < 3; i++) crypto_generichash_update(&st, (const unsigned char *)parts[i], strlen(parts[i]) + 1);
    crypto_generichash_final(&st, h, sizeof h);
    sodium_bin2hex(out, 17, h, sizeof h);
}

/* Suspicious text in a definition, for the change's note (NULL when none). */
static json_t *suspicious_note(const json_t *def) {
    json_t *part = gg_graph_tool_pin_part(def);
    uint32_t cp = 0;
    char where[128], first[16];
    size_t n = part ? gg_suspicious_json(part, &cp, where, sizeof where) : 0;
    json_decref(part);
    if (!n) return NULL;
    snprintf(first, sizeof first, "U+%04X", (unsigned)cp);
    return json_pack("{s:I,s:s,s:s}", "count", (json_int_t)n, "first", first, "at", where);
}

/* Record one tool's change (old/new definitions may be NULL: added, removed). */
static void record_change(gg_gateway *gw, const gg_graph_catalog *cat, const char *tenant, const char *tool, json_t *old,
                          const char *old_hash, json_t *now) {
    gw_refresher *r = gw->refresher;
    char new_hash[65] = "", id[17];
    if (now) gg_graph_tool_hash(now, new_hash);
    change_id(cat->identity, tool, now ? new_hash : NULL, id);
    json_t *diff = gg_graph_tool_diff(old, now), *part = now ? gg_graph_tool_pin_part(now) : NULL;
    json_t *sus = now ? suspicious_note(now) : NULL;
    if (sus) json_object_set_new(diff, "suspicious", sus);
    char *difft = json_dumps(diff, JSON_COMPACT), *deft = part ? json_dumps(part, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    const char *kind = !old ? "added" : !now ? "removed" : "changed";
    gg_store_change ch = {tenant, cat->identity, tool, id, cat->server, kind, old_hash, now ? new_hash : NULL, deft,
                          difft ? difft : "{}", gg_wall_ms()};
    gg_error err = GG_ERROR_INIT;
    int got = difft ? gg_store_change_record(gw->store, &ch, GW_PENDING_MAX, &err) : -1;
    if (got > 0 && r) atomic_fetch_add(&r->changes_recorded, 1);
    if (got > 0 && sus && r) atomic_fetch_add(&r->suspicious, 1);
    if (got < 0 && r) atomic_fetch_add(&r->changes_dropped, 1);
    if (got == 1) {
        gg_principal pr = {.key_id = "internal"};
        gw_admin_audit(gw, &pr, tenant, "downstream.change", cat->server,
                       json_pack("{s:s,s:s,s:s,s:O}", "id", id, "tool", tool, "kind", kind, "diff", diff));
    }
    if (got < 0)
        gg_log(GG_LOG_WARN, "a pinned definition's change was not recorded (the pin stays)", "tenant", tenant, "server",
               cat->server, "tool", tool, "error", err.message ? err.message : err.code, NULL);
    else if (got > 0)
        gg_log(GG_LOG_WARN, "a downstream tool's pinned definition changed; held for review", "tenant", tenant, "server",
               cat->server, "tool", tool, "kind", kind, "id", id, NULL);
    gg_error_clear(&err);
    free(difft);
    free(deft);
    json_decref(part);
    json_decref(diff);
}

/* A listed catalog that changed, against the pins of the tenant's active versions on it. */
static void pins_compare(gg_gateway *gw, const char *tenant, const gg_graph_catalog *cat) {
    gg_error err = GG_ERROR_INIT;
    json_t *pins = gg_store_pins_active(gw->store, tenant, cat->identity, &err), *seen = json_object();
    gg_error_clear(&err);
    json_t *pending = json_object(), *rows = json_array_size(pins) ? gg_store_changes_list(gw->store, tenant, &err) : NULL;
    gg_error_clear(&err);
    size_t k;
    json_t *row;
    json_array_foreach(rows, k, row) /* the tools with a pending change here: cleared when back to the pin */
        if (!strcmp(json_string_value(json_object_get(row, "identity")), cat->identity) &&
            !strcmp(json_string_value(json_object_get(row, "status")), "pending"))
            json_object_set_new(pending, json_string_value(json_object_get(row, "tool")), json_true());
    json_decref(rows);
    bool whole = false;
    size_t i;
    json_t *p;
    json_array_foreach(pins, i, p) {
        const char *tool = json_string_value(json_object_get(p, "tool"));
        whole = whole || json_is_true(json_object_get(p, "whole"));
        json_t *now = def_named(cat->tools, tool);
        char h[65] = "";
        if (now) gg_graph_tool_hash(now, h);
        bool same = now && !strcmp(h, json_string_value(json_object_get(p, "hash")));
        if (!same) record_change(gw, cat, tenant, tool, json_object_get(p, "definition"),
                                 json_string_value(json_object_get(p, "hash")), now);
        else if (json_object_get(pending, tool) && !json_object_get(seen, tool))
            gg_store_change_clear(gw->store, tenant, cat->identity, tool, &err);
        gg_error_clear(&err);
        json_object_set_new(seen, tool, json_true());
    }
    json_t *t;
    json_array_foreach(whole ? cat->tools : NULL, i, t) { /* added: only a `tools: all` entry lists it */
        const char *tool = json_string_value(json_object_get(t, "name"));
        if (tool && !json_object_get(seen, tool)) record_change(gw, cat, tenant, tool, NULL, NULL, t);
    }
    json_decref(pending);
    json_decref(seen);
    json_decref(pins);
}

/* Every listing: suspicious text counted; a changed catalog compared with the pins. */
static void pins_listed(gw_catalog_sink *sink, const gg_graph_catalog *cat, bool changed) {
    gw_refresher *r = sink->gw->refresher;
    size_t i;
    json_t *t;
    json_array_foreach(cat->tools, i, t) {
        json_t *sus = suspicious_note(t);
        if (!sus) continue;
        if (r) atomic_fetch_add(&r->suspicious_listed, 1);
        if (changed)
            gg_log(GG_LOG_WARN, "a downstream tool definition holds invisible or direction-changing characters", "tenant",
                   sink->tenant, "server", cat->server, "tool", json_string_value(json_object_get(t, "name")), "first",
                   json_string_value(json_object_get(sus, "first")), NULL);
        json_decref(sus);
    }
    if (changed) pins_compare(sink->gw, sink->tenant, cat);
}

/* Recompile the installed graphs of tenant that proxy identity (every one when NULL). */
static void recompile_proxies(gg_gateway *gw, const char *tenant, const char *identity) {
    json_t *all = gw_registry_list(gw->registry);
    size_t i;
    json_t *e;
    json_array_foreach(all, i, e) {
        const char *t = json_string_value(json_array_get(e, 0)), *graph = json_string_value(json_array_get(e, 1));
        if (tenant && strcmp(t, tenant)) continue;
        int version = 0;
        mcp_server *s = gw_registry_peek(gw->registry, t, graph, &version);
        gg_graph *g = s ? gg_graph_provider_graph(mcp_server_provider(s)) : NULL;
        bool hit = g && (identity ? gg_graph_proxies_identity(g, identity) : json_object_size(gg_graph_pins(g)) > 0);
        mcp_server_unref(s);
        if (hit) recompile(gw, t, graph, version);
    }
    json_decref(all);
}

/* Recompiling compiles and connects (the policy resolves host names): a job on the upload
 * threads, never the HTTP or the watcher thread. identity "": every graph that pins. */
typedef struct pins_job {
    gg_gateway *gw;
    char tenant[GG_TENANT_MAX];
    char identity[GG_GRAPH_IDENTITY_MAX];
} pins_job;

static void pins_job_run(void *arg) {
    pins_job *j = arg;
    recompile_proxies(j->gw, j->tenant, j->identity[0] ? j->identity : NULL);
    free(j);
}

static void pins_job_refuse(void *arg) { free(arg); } /* shutting down */

static void recompile_later(gg_gateway *gw, const char *tenant, const char *identity) {
    pins_job *j = gw->uploads ? calloc(1, sizeof *j) : NULL;
    if (!j) return;
    j->gw = gw;
    snprintf(j->tenant, sizeof j->tenant, "%s", tenant);
    snprintf(j->identity, sizeof j->identity, "%s", identity ? identity : "");
    gg_error err = GG_ERROR_INIT;
    if (!gw_uploads_submit(gw->uploads, j->tenant, (gw_job){pins_job_run, pins_job_refuse, j, NULL}, &err)) {
        gg_log(GG_LOG_WARN, "an approved definition is served after the next catalog change or restart (upload threads refused)",
               "tenant", tenant, "error", err.message ? err.message : err.code, NULL);
        free(j);
    }
    gg_error_clear(&err);
}

/* The tenants whose approvals moved the pins generation past since, as a set (NULL: the
 * store did not say; every tenant then). */
static json_t *tenants_moved(gg_gateway *gw, long long since) {
    gg_error err = GG_ERROR_INIT;
    json_t *list = gg_store_pins_tenants_since(gw->store, since, &err), *set = list ? json_object() : NULL;
    if (!list)
        gg_log(GG_LOG_WARN, "the tenants of an approved definition change are unknown; every tenant's pinned graphs recompile",
               "error", err.message ? err.message : err.code, NULL);
    gg_error_clear(&err);
    size_t i;
    json_t *t;
    json_array_foreach(list, i, t) json_object_set_new(set, json_string_value(t), json_true());
    json_decref(list);
    return set;
}

/* The watcher (every replica): an approval anywhere moves the pins generation and the
 * approving tenant's own counter; each such tenant with compiled graphs that pin
 * definitions recompiles them (another tenant's graphs stay as they are). */
void gw_pins_check(gg_gateway *gw) {
    gw_refresher *r = gw->refresher;
    gg_error err = GG_ERROR_INIT;
    long long gen = r ? gg_store_generation_get(gw->store, GG_GEN_PINS, &err) : -1;
    gg_error_clear(&err);
    if (gen < 0 || gen == r->pins_gen) return;
    long long since = r->pins_gen;
    r->pins_gen = gen;
    if (since < 0) return; /* the first read: nothing compiled before it is stale */
    json_t *moved = tenants_moved(gw, since);
    json_t *all = gw_registry_list(gw->registry), *tenants = json_object();
    size_t i;
    json_t *e;
    json_array_foreach(all, i, e) {
        const char *t = json_string_value(json_array_get(e, 0));
        if (moved && !json_object_get(moved, t)) continue;
        int version = 0;
        mcp_server *s = json_object_get(tenants, t) ? NULL : gw_registry_peek(gw->registry, t, json_string_value(json_array_get(e, 1)), &version);
        gg_graph *g = s ? gg_graph_provider_graph(mcp_server_provider(s)) : NULL;
        if (g && json_object_size(gg_graph_pins(g))) json_object_set_new(tenants, t, json_true());
        mcp_server_unref(s);
    }
    const char *t;
    json_t *v;
    json_object_foreach(tenants, t, v) {
        atomic_fetch_add(&r->pins_tenant_recompiles, 1);
        recompile_later(gw, t, NULL);
    }
    json_decref(tenants);
    json_decref(moved);
    json_decref(all);
}

/* POST /admin/tenants/{t}/downstream/changes/{id}/approve|reject (graphs:write). */
static int decide(gg_http_req *req, gg_http_res *res, gg_gateway *gw, bool approve) {
    const char *t = gg_http_param(req, "t"), *id = gg_http_param(req, "id");
    gg_principal pr;
    if (!gw_admin_allow_as(gw, req, res, t, GG_SCOPE_GRAPHS_WRITE, &pr)) return GG_HTTP_DONE;
    gg_error err = GG_ERROR_INIT;
    json_t *row = gg_store_change_decide(gw->store, t, id, approve, &err);
    if (!row) {
        gg_http_res_error_from(res, 0, &err);
        gg_error_clear(&err);
        return GG_HTTP_DONE;
    }
    const char *server = json_string_value(json_object_get(row, "server"));
    gw_admin_audit(gw, &pr, t, approve ? "downstream.change.approve" : "downstream.change.reject", server,
                   json_pack("{s:s,s:O,s:O}", "id", id, "tool", json_object_get(row, "tool"), "kind", json_object_get(row, "kind")));
    if (approve) recompile_later(gw, t, json_string_value(json_object_get(row, "identity"))); /* here at once */
    json_object_set_new(row, "status", json_string(approve ? "approved" : "rejected"));
    gg_http_res_json(res, 200, row);
    return GG_HTTP_DONE;
}

int gw_downstream_approve(gg_http_req *req, gg_http_res *res, void *user) { return decide(req, res, user, true); }
int gw_downstream_reject(gg_http_req *req, gg_http_res *res, void *user) { return decide(req, res, user, false); }

static void pins_metrics(gw_refresher *r, gg_strbuf *out) {
    if (r)
        gg_strbuf_printf(out,
                         "# HELP graphgate_downstream_definition_changes_total changes of pinned downstream tool definitions: "
                         "recorded (pending review), dropped (over a tenant's %d)\n"
                         "# TYPE graphgate_downstream_definition_changes_total counter\n"
                         "graphgate_downstream_definition_changes_total{outcome=\"recorded\"} %llu\n"
                         "graphgate_downstream_definition_changes_total{outcome=\"dropped\"} %llu\n"
                         "# HELP graphgate_downstream_suspicious_text_total downstream tool definitions holding invisible or "
                         "direction-changing characters: listed (every listing), changed (in a recorded change)\n"
                         "# TYPE graphgate_downstream_suspicious_text_total counter\n"
                         "graphgate_downstream_suspicious_text_total{seen=\"listed\"} %llu\n"
                         "graphgate_downstream_suspicious_text_total{seen=\"changed\"} %llu\n"
                         "# HELP graphgate_downstream_pins_tenant_recompiles_total tenants whose compiled graphs pinning "
                         "definitions were recompiled because an approval (here or on another replica) changed their pins\n"
                         "# TYPE graphgate_downstream_pins_tenant_recompiles_total counter\n"
                         "graphgate_downstream_pins_tenant_recompiles_total %llu\n",
                         GW_PENDING_MAX, (unsigned long long)atomic_load(&r->changes_recorded),
                         (unsigned long long)atomic_load(&r->changes_dropped),
                         (unsigned long long)atomic_load(&r->suspicious_listed), (unsigned long long)atomic_load(&r->suspicious),
                         (unsigned long long)atomic_load(&r->pins_tenant_recompiles));
}
