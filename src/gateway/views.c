/* views.c — views of the tenant-wide MCP endpoint: admin REST and their MCP servers.
 *
 * PUT /admin/tenants/{t}/views/{name} stores a definition
 *   {"description"?: text, "tools": [{"tool": "<graph>.<tool>", "name"?: new name,
 *                                     "description"?: text}, ...],
 *    "resources"?: ["<graph>", ...], "prompts"?: ["<graph>", ...]}
 * (tools may be absent when resources or prompts name a graph: those graphs' proxied
 * resources and prompts under their tenant-wide names, tenantwide.c)
 * checked here (clear 400s naming the member), bounded (GW_VIEWS_MAX views per tenant,
 * GW_VIEW_TOOLS_MAX tools per view) and served at /mcp/{tenant}/_views/{name}. A selected
 * tool that no active graph offers is not an error: GET reports it under "missing" and the
 * view's tools/list leaves it out. Changing a view's selection sends list_changed to its
 * clients (2025 GET streams and 2026 subscriptions/listen streams), deleting it ends their
 * streams; so does a new version of a graph the view selects from. On every replica: the
 * store bumps the views generation with each change (NOTIFY on PostgreSQL), and each
 * replica's watcher then compares the definitions its clients were told about with the
 * stored ones (gw_views_check), so a client hears of a change once, wherever it was made.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/authz.h"
#include "gateway/internal.h"
#include "gateway/relay.h"

#define VIEW_DESC_MAX 4096

static void vc_bump(gw_views_cache *c);

static bool bad(gg_error *err, const char *fmt, const char *what, size_t i) {
    char msg[256];
    snprintf(msg, sizeof msg, fmt, i, what);
    gg_error_set(err, "invalid_view", "%s", msg);
    return false;
}

static bool short_text(json_t *v) { return !v || (json_is_string(v) && json_string_length(v) <= VIEW_DESC_MAX); }

/* One selection entry i: {"tool", "name"?, "description"?}; the name it serves under goes
 * into seen (duplicates refused). */
static bool check_entry(json_t *e, size_t i, json_t *seen, gg_error *err) {
    if (!json_is_object(e)) return bad(err, "tools[%zu]: %s", "must be an object", i);
    const char *k;
    json_t *v;
    json_object_foreach(e, k, v) if (strcmp(k, "tool") && strcmp(k, "name") && strcmp(k, "description"))
        return bad(err, "tools[%zu]: unknown member (allowed: %s)", "tool, name, description", i);
    const char *tool = json_string_value(json_object_get(e, "tool"));
    if (!tool || !strchr(tool, '.') || !gw_valid_tool_name(tool))
        return bad(err, "tools[%zu].tool: %s", "must be a \"<graph>.<tool>\" name of the tenant-wide endpoint", i);
    json_t *name = json_object_get(e, "name");
    if (name && (!json_is_string(name) || !gw_valid_tool_name(json_string_value(name))))
        return bad(err, "tools[%zu].name: %s", "must be 1..128 characters of A-Z a-z 0-9 _ - . (MCP tool names)", i);
    if (!short_text(json_object_get(e, "description")))
        return bad(err, "tools[%zu].description: %s", "must be a string of at most 4096 bytes", i);
    const char *as = name ? json_string_value(name) : tool;
    if (json_object_get(seen, as)) return bad(err, "tools[%zu]: %s", "serves a name an earlier entry already serves", i);
    json_object_set_new(seen, as, json_true());
    return true;
}

/* "resources" / "prompts": the graphs whose proxied ones the view serves, as a list of
 * distinct graph names (at most GW_VIEW_TOOLS_MAX). */
static bool graphs_check(json_t *d, const char *key, gg_error *err) {
    json_t *l = json_object_get(d, key), *g;
    if (!l) return true;
    if (!json_is_array(l) || json_array_size(l) > GW_VIEW_TOOLS_MAX)
        return gg_error_set(err, "invalid_view", "%s must be an array of at most %d graph names", key, GW_VIEW_TOOLS_MAX), false;
    size_t i, j;
    json_array_foreach(l, i, g) {
        gg_error e = GG_ERROR_INIT;
        bool ok = json_is_string(g) && gg_auth_valid_name(json_string_value(g), "graph", &e);
        gg_error_clear(&e);
        for (j = 0; ok && j < i; j++) ok = !json_equal(json_array_get(l, j), g);
        if (!ok) return gg_error_set(err, "invalid_view", "%s[%zu]: must be a graph name, named once", key, i), false;
    }
    return true;
}

/* The definition's shape (see the top of the file). */
static bool view_check(json_t *d, gg_error *err) {
    if (!json_is_object(d)) return gg_error_set(err, "invalid_view", "the body must be a JSON object"), false;
    const char *k;
    json_t *v;
    json_object_foreach(d, k, v) if (strcmp(k, "tools") && strcmp(k, "description") && strcmp(k, "resources") && strcmp(k, "prompts"))
        return gg_error_set(err, "invalid_view", "unknown member '%s' (allowed: tools, resources, prompts, description)", k), false;
    if (!short_text(json_object_get(d, "description")))
        return gg_error_set(err, "invalid_view", "description must be a string of at most 4096 bytes"), false;
    if (!graphs_check(d, "resources", err) || !graphs_check(d, "prompts", err)) return false;
    json_t *tools = json_object_get(d, "tools");
    bool extras = json_array_size(json_object_get(d, "resources")) || json_array_size(json_object_get(d, "prompts"));
    if ((tools || !extras) &&
        (!json_is_array(tools) || (json_array_size(tools) == 0 && !extras) || json_array_size(tools) > GW_VIEW_TOOLS_MAX))
        return gg_error_set(err, "invalid_view", "tools must be an array of 1..%d selections", GW_VIEW_TOOLS_MAX), false;
    json_t *seen = json_object();
    bool ok = true;
    for (size_t i = 0; ok && i < json_array_size(tools); i++) ok = check_entry(json_array_get(tools, i), i, seen, err);
    json_decref(seen);
    return ok;
}

/* See relay.h. */
mcp_server *gw_view_server(gg_gateway *gw, const char *tenant, const char *view, gg_error *err) {
    json_t *row = gg_store_view_get(gw->store, tenant, view, err);
    if (!row) return NULL;
    mcp_server *s = gw_tenantwide_server(gw, tenant, json_object_get(row, "definition"), err);
    json_decref(row);
    return s;
}

/* See relay.h. */
void gw_endpoint_add(json_t *out, const char *tenant, const char *graph) {
    char key[2 * GG_NAME_MAX + 2];
    snprintf(key, sizeof key, "%s/%s", tenant, graph); /* tenant names have no '/' */
    if (!json_object_get(out, key)) json_object_set_new(out, key, json_pack("[ss]", tenant, graph));
}

/* Whether some client of this replica (a 2025 session's GET stream or a 2026
 * subscriptions/listen stream) listens on an endpoint of tenant starting with prefix. */
static bool anyone_on(gg_gateway *gw, const char *tenant, const char *prefix) {
    return gw_streams_any_on(gw->streams, tenant, prefix) || gw_listen_any_on(gw->listen, tenant, prefix);
}

/* list_changed to the clients of tenant's view, with its current server (view_only: only
 * those told about another definition); a deleted view ends their streams. */
static void view_changed(gg_gateway *gw, const char *tenant, const char *view, bool view_only) {
    char ep[GG_NAME_MAX + 1];
    snprintf(ep, sizeof ep, "%s%s", GW_VIEWS_PREFIX, view);
    if (!anyone_on(gw, tenant, ep)) return;
    gg_error err = GG_ERROR_INIT;
    mcp_server *s = gw_view_server(gw, tenant, view, &err);
    if (s && view_only) gw_streams_view_changed(gw->streams, tenant, ep, s);
    else if (s) gw_streams_tools_changed(gw->streams, tenant, ep, s);
    if (s) gw_listen_changed_to(gw->listen, tenant, ep, s, view_only);
    else if (strcmp(err.code, "not_found") == 0) { /* deleted: its streams end (a store error ends nothing) */
        gw_streams_end_graph(gw->streams, tenant, ep);
        gw_listen_end(gw->listen, tenant, ep);
    }
    gg_error_clear(&err);
    mcp_server_unref(s);
}

/* See internal.h. Watcher thread only (views_gen is its own). */
void gw_views_check(gg_gateway *gw) {
    gg_error err = GG_ERROR_INIT;
    long long gen = gg_store_generation_get(gw->store, GG_GEN_VIEWS, &err);
    gg_error_clear(&err);
    if (gen < 0 || gen == gw->views_gen) return;
    gw->views_gen = gen;
    vc_bump(gw->views_cache); /* another replica's change, or this one's seen again: read anew */
    json_t *eps = json_object();
    gw_streams_endpoints(gw->streams, GW_VIEWS_PREFIX, eps);
    gw_listen_endpoints(gw->listen, GW_VIEWS_PREFIX, eps);
    const char *k;
    json_t *e;
    json_object_foreach(eps, k, e) view_changed(gw, json_string_value(json_array_get(e, 0)),
                                                json_string_value(json_array_get(e, 1)) + strlen(GW_VIEWS_PREFIX), true);
    json_decref(eps);
}

/* See relay.h. */
void gw_tenantwide_graph_changed(gg_gateway *gw, const char *tenant, const char *graph) {
    if (!gw || !gw->store) return;
    if (anyone_on(gw, tenant, GW_TENANTWIDE)) {
        gg_error err = GG_ERROR_INIT;
        mcp_server *s = gw_tenantwide_server(gw, tenant, NULL, &err);
        gg_error_clear(&err);
        if (s) {
            gw_streams_tools_changed(gw->streams, tenant, GW_TENANTWIDE, s);
            gw_listen_changed_to(gw->listen, tenant, GW_TENANTWIDE, s, false);
        }
        mcp_server_unref(s);
    }
    if (!anyone_on(gw, tenant, GW_VIEWS_PREFIX)) return; /* e.g. the sync at start */
    gw_view_ep eps[GW_VIEWS_MAX];
    size_t n = gw_views_naming(gw, tenant, graph, GW_VIEW_TOOLS | GW_VIEW_RESOURCES | GW_VIEW_PROMPTS, eps);
    for (size_t i = 0; i < n; i++) view_changed(gw, tenant, eps[i] + strlen(GW_VIEWS_PREFIX), false);
}

/* ---- the views' selections, cached per tenant ----------------------------------------------
 * A downstream's relayed resources/updated (catalogs.c relay_tenantwide, on its reader thread)
 * and list_changed, and a graph's new version, go to the views naming the graph; reading the
 * tenant's views from the store for each of them cost ~60 us a relayed update. The cache keeps,
 * per tenant, which graphs each view names (under tools, resources, prompts), parsed once.
 *
 * Freshness: an entry is good while the cache's epoch is the one it was read under. The epoch
 * moves with every change of a view this replica makes (gw_views_put and _delete, after the
 * store took it) and whenever the watcher sees the store's views generation move (gw_views_check:
 * another replica's or process's change, a tenant deleted) — the same bound within which the
 * views' own clients hear of that change (1 s; at once on PostgreSQL's NOTIFY). The epoch is read
 * before the store, so a change racing a read leaves an entry already stale, never a stale one
 * taken for fresh. One epoch for all tenants: views change rarely, and a change costs each
 * tenant with view clients one store read.
 *
 * Bounds: VC_TENANTS tenants and VC_SELS_MAX (view, graph) pairs in all (a tenant's views alone
 * may name 100 x 600 graphs). Past either the least recently used entries go, stale ones first:
 * LRU rather than dropping all, so that one more tenant than fits does not make every tenant
 * read the store again each update; the linear scan over 64 entries costs less than one store
 * read. A tenant whose views alone exceed VC_SELS_MAX is served from the store each time, as
 * before. Only tenants with a client on a view this replica serves ever get an entry. */
#define VC_TENANTS 64
#define VC_SELS_MAX 16384

typedef struct vc_sel {
    unsigned long long h; /* of graph */
    unsigned view;        /* index into the entry's eps */
    int what;             /* GW_VIEW_* */
    char graph[GG_NAME_MAX + 1];
} vc_sel;

typedef struct vc_entry {
    char tenant[GG_NAME_MAX + 1];
    unsigned long long epoch, used;
    size_t nviews, nsel;
    gw_view_ep *eps; /* "_views/<name>" of each view */
    vc_sel *sel;
} vc_entry;

struct gw_views_cache {
    pthread_mutex_t mu;                /* guards all but epoch */
    _Atomic unsigned long long epoch;
    unsigned long long tick;           /* LRU clock */
    size_t n, nsel;                    /* entries; pairs in all of them */
    vc_entry e[VC_TENANTS];
};

gw_views_cache *gw_views_cache_new(void) {
    gw_views_cache *c = calloc(1, sizeof *c);
    if (c) pthread_mutex_init(&c->mu, NULL);
    return c;
}

static void vc_entry_clear(vc_entry *e) {
    free(e->eps);
    free(e->sel);
    memset(e, 0, sizeof *e);
}

void gw_views_cache_free(gw_views_cache *c) {
    if (!c) return;
    for (size_t i = 0; i < c->n; i++) vc_entry_clear(&c->e[i]);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* A view changed somewhere: every entry is stale from now on. */
static void vc_bump(gw_views_cache *c) {
    if (c) atomic_fetch_add(&c->epoch, 1);
}

/* Note that view number view names graph for what (seen: "graph" → its pair's index, this
 * view's pairs only). False when out of memory or over VC_SELS_MAX. */
static bool vc_note(vc_entry *e, size_t *cap, json_t *seen, unsigned view, const char *graph, size_t glen, int what) {
    char name[GG_NAME_MAX + 1];
    if (!glen || glen > GG_NAME_MAX) return true; /* no graph can have it: names nothing */
    memcpy(name, graph, glen);
    name[glen] = 0;
    json_t *at = json_object_get(seen, name);
    if (at) return e->sel[json_integer_value(at)].what |= what, true;
    if (e->nsel == *cap) {
        size_t more = *cap ? 2 * *cap : 16;
        vc_sel *grown = more <= VC_SELS_MAX ? realloc(e->sel, more * sizeof *grown) : NULL;
        if (!grown) return false;
        e->sel = grown, *cap = more;
    }
    vc_sel *p = &e->sel[e->nsel];
    p->h = gg_hash_str(name), p->view = view, p->what = what;
    memcpy(p->graph, name, glen + 1);
    json_object_set_new(seen, name, json_integer((json_int_t)e->nsel++));
    return true;
}

/* One stored view {"name", "definition"} as view number e->nviews. */
static bool vc_add_view(vc_entry *e, size_t *cap, json_t *v) {
    const char *name = json_string_value(json_object_get(v, "name"));
    json_t *d = json_object_get(v, "definition"), *x, *seen = json_object();
    unsigned view = (unsigned)e->nviews;
    int len = snprintf(e->eps[view], sizeof e->eps[view], "%s%s", GW_VIEWS_PREFIX, name ? name : "");
    if (!seen || !name || len < 0 || (size_t)len >= sizeof e->eps[view]) return json_decref(seen), seen != NULL;
    bool ok = true;
    size_t i;
    json_array_foreach(json_object_get(d, "tools"), i, x) {
        const char *tool = json_string_value(json_object_get(x, "tool"));
        if (ok && tool) ok = vc_note(e, cap, seen, view, tool, strcspn(tool, "."), GW_VIEW_TOOLS);
    }
    static const char *const keys[] = {"resources", "prompts"};
    for (int k = 0; k < 2; k++)
        json_array_foreach(json_object_get(d, keys[k]), i, x) if (ok && json_is_string(x))
            ok = vc_note(e, cap, seen, view, json_string_value(x), json_string_length(x), k ? GW_VIEW_PROMPTS : GW_VIEW_RESOURCES);
    json_decref(seen);
    e->nviews++;
    return ok;
}

/* e from tenant's stored views (a store read); false when the store failed, memory ran out or
 * the views name more than VC_SELS_MAX graphs (e then holds what fitted; not to be cached). */
static bool vc_read(gg_gateway *gw, const char *tenant, vc_entry *e) {
    gg_error err = GG_ERROR_INIT;
    json_t *views = gg_store_views_list(gw->store, tenant, &err), *v;
    gg_error_clear(&err);
    size_t n = json_array_size(views) < GW_VIEWS_MAX ? json_array_size(views) : GW_VIEWS_MAX, cap = 0, i;
    snprintf(e->tenant, sizeof e->tenant, "%s", tenant);
    bool ok = views && (n == 0 || (e->eps = calloc(n, sizeof *e->eps)) != NULL);
    json_array_foreach(views, i, v) if (ok && i < n) ok = vc_add_view(e, &cap, v);
    json_decref(views);
    return ok;
}

/* The endpoints of e's views naming graph for any of what. */
static size_t vc_match(const vc_entry *e, const char *graph, int what, gw_view_ep *eps) {
    unsigned long long h = gg_hash_str(graph);
    size_t n = 0;
    for (size_t i = 0; i < e->nsel; i++)
        if (e->sel[i].h == h && (e->sel[i].what & what) && !strcmp(e->sel[i].graph, graph))
            memcpy(eps[n++], e->eps[e->sel[i].view], sizeof *eps); /* one pair per (view, graph) */
    return n;
}

/* tenant's entry read under epoch, or NULL (mu held). */
static vc_entry *vc_find(gw_views_cache *c, const char *tenant, unsigned long long epoch) {
    for (size_t i = 0; i < c->n; i++)
        if (c->e[i].epoch == epoch && !strcmp(c->e[i].tenant, tenant)) return &c->e[i];
    return NULL;
}

/* Free entry i (mu held). */
static void vc_drop(gw_views_cache *c, size_t i) {
    c->nsel -= c->e[i].nsel;
    vc_entry_clear(&c->e[i]);
    c->e[i] = c->e[--c->n];
    memset(&c->e[c->n], 0, sizeof c->e[c->n]);
}

/* Keep fresh (taken, or freed when it cannot stay): it replaces its tenant's older entry; room
 * is made by dropping stale entries first, then the least recently used (mu held). */
static void vc_keep(gw_views_cache *c, vc_entry *fresh, unsigned long long now_epoch) {
    if (fresh->epoch != now_epoch) { /* a view changed during the read: of no use */
        vc_entry_clear(fresh);
        return;
    }
    for (size_t i = 0; i < c->n; i++)
        if (!strcmp(c->e[i].tenant, fresh->tenant)) {
            vc_drop(c, i); /* stale, or as fresh (another thread read it meanwhile) */
            break;
        }
    while (c->n && (c->n == VC_TENANTS || c->nsel + fresh->nsel > VC_SELS_MAX)) {
        size_t victim = 0;
        for (size_t i = 1; i < c->n; i++) {
            bool stale = c->e[i].epoch != now_epoch, vstale = c->e[victim].epoch != now_epoch;
            if (stale > vstale || (stale == vstale && c->e[i].used < c->e[victim].used)) victim = i;
        }
        vc_drop(c, victim);
    }
    fresh->used = ++c->tick;
    c->nsel += fresh->nsel;
    c->e[c->n++] = *fresh;
}

/* See relay.h. */
size_t gw_views_naming(gg_gateway *gw, const char *tenant, const char *graph, int what, gw_view_ep *eps) {
    gw_views_cache *c = gw->views_cache;
    if (!gw->store) return 0;
    unsigned long long epoch = c ? atomic_load(&c->epoch) : 0;
    if (c) {
        pthread_mutex_lock(&c->mu);
        vc_entry *e = vc_find(c, tenant, epoch);
        size_t n = e ? vc_match(e, graph, what, eps) : 0;
        if (e) e->used = ++c->tick;
        pthread_mutex_unlock(&c->mu);
        if (e) return n;
    }
    vc_entry fresh = {.epoch = epoch}; /* the store read happens outside mu */
    bool whole = vc_read(gw, tenant, &fresh);
    size_t n = vc_match(&fresh, graph, what, eps);
    if (!c || !whole) {
        vc_entry_clear(&fresh);
        return n;
    }
    pthread_mutex_lock(&c->mu);
    vc_keep(c, &fresh, atomic_load(&c->epoch));
    pthread_mutex_unlock(&c->mu);
    return n;
}

/* ---- REST -------------------------------------------------------------------------------- */

static int answer_error(gg_http_res *res, gg_error *err) {
    gg_http_res_error_from(res, strcmp(err->code, "invalid_view") == 0 ? 400 : 0, err);
    gg_error_clear(err);
    return GG_HTTP_DONE;
}

/* The stored row plus what the tenant's graphs offer now: "missing" selected names. */
static json_t *with_missing(gg_gateway *gw, const char *tenant, json_t *row) {
    gg_error err = GG_ERROR_INIT;
    mcp_server *s = gw_tenantwide_server(gw, tenant, json_object_get(row, "definition"), &err);
    gg_error_clear(&err);
    json_object_set_new(row, "missing", s ? gw_tenantwide_missing(s) : json_null());
    json_object_set_new(row, "tool_count", json_integer(s ? (json_int_t)mcp_server_tool_count(s) : 0));
    char url[GG_NAME_MAX * 2 + 32];
    snprintf(url, sizeof url, "/mcp/%s/%s%s", tenant, GW_VIEWS_PREFIX, json_string_value(json_object_get(row, "name")));
    json_object_set_new(row, "endpoint", json_string(url));
    mcp_server_unref(s);
    return row;
}

static bool view_name_ok(gg_http_res *res, const char *v) {
    gg_error err = GG_ERROR_INIT;
    if (strlen(v) <= GW_VIEW_NAME_MAX && gg_auth_valid_name(v, "view", &err)) return true;
    gg_http_res_fail(res, "invalid_name", "a view name is 1..%d characters of [a-z0-9-], not starting or ending with '-'",
                      GW_VIEW_NAME_MAX);
    gg_error_clear(&err);
    return false;
}

int gw_views_put(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    const char *t = gg_http_param(req, "t"), *v = gg_http_param(req, "name");
    gg_principal pr;
    if (!gw_admin_allow_as(gw, req, res, t, GG_SCOPE_GRAPHS_WRITE, &pr) || !view_name_ok(res, v) ||
        !gw_admin_tenant_exists(gw, res, t))
        return GG_HTTP_DONE;
    gg_error err = GG_ERROR_INIT;
    json_t *d = gg_http_body_object(req, "a JSON view definition like {\"tools\": [{\"tool\": \"graph.tool\"}]}", &err);
    if (!d) return answer_error(res, &err);
    bool created = false;
    if (!view_check(d, &err) || !gg_store_view_put(gw->store, t, v, d, GW_VIEWS_MAX, &created, &err)) {
        json_decref(d);
        return answer_error(res, &err);
    }
    gw_admin_audit(gw, &pr, t, created ? "view.create" : "view.update", v,
                   json_pack("{s:I}", "tools", (json_int_t)json_array_size(json_object_get(d, "tools"))));
    json_decref(d);
    vc_bump(gw->views_cache); /* the next relayed update reads the new selection */
    view_changed(gw, t, v, true); /* this replica's clients at once; the others' by the views generation */
    json_t *row = gg_store_view_get(gw->store, t, v, &err);
    if (!row) return answer_error(res, &err);
    gg_http_res_json(res, created ? 201 : 200, with_missing(gw, t, row));
    return GG_HTTP_DONE;
}

int gw_views_get(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    const char *t = gg_http_param(req, "t"), *v = gg_http_param(req, "name");
    if (!gw_admin_allow(gw, req, res, t, GG_SCOPE_GRAPHS_WRITE)) return GG_HTTP_DONE;
    gg_error err = GG_ERROR_INIT;
    json_t *row = gg_store_view_get(gw->store, t, v, &err);
    if (!row) return answer_error(res, &err);
    gg_http_res_json(res, 200, with_missing(gw, t, row));
    return GG_HTTP_DONE;
}

int gw_views_list(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    const char *t = gg_http_param(req, "t");
    if (!gw_admin_allow(gw, req, res, t, GG_SCOPE_GRAPHS_WRITE)) return GG_HTTP_DONE;
    gg_error err = GG_ERROR_INIT;
    json_t *l = gg_store_views_list(gw->store, t, &err);
    if (!l) return answer_error(res, &err);
    gg_http_res_json(res, 200, json_pack("{s:s,s:o}", "tenant", t, "views", l));
    return GG_HTTP_DONE;
}

int gw_views_delete(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    const char *t = gg_http_param(req, "t"), *v = gg_http_param(req, "name");
    gg_principal pr;
    if (!gw_admin_allow_as(gw, req, res, t, GG_SCOPE_GRAPHS_WRITE, &pr)) return GG_HTTP_DONE;
    gg_error err = GG_ERROR_INIT;
    if (!gg_store_view_delete(gw->store, t, v, &err)) return answer_error(res, &err);
    vc_bump(gw->views_cache);
    gw_admin_audit(gw, &pr, t, "view.delete", v, NULL);
    view_changed(gw, t, v, true);
    gg_http_res_json(res, 200, json_pack("{s:b}", "deleted", 1));
    return GG_HTTP_DONE;
}
