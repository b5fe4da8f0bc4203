/* tenantwide.c — one MCP server over all of a tenant's active graphs.
 *
 * /mcp/{tenant}/_all serves every tool of every active graph of the tenant as
 * "<graph>.<tool>". Graph names are [a-z0-9-] (auth.h), so "_all" can never be a graph's
 * name and the route cannot collide with /mcp/{tenant}/{graph}. A name is stable: it only
 * depends on the graph's and the tool's own names, never on which other graphs exist.
 * MCP 2025-11-25 tool names are 1..128 characters of [A-Za-z0-9_.-]; graph names are at
 * most 63 characters and a tool whose dotted name would break the rule is left out and
 * named in the server's instructions (never silently renamed).
 *
 * Proxied resources, templates, prompts and completions (a graph's `proxy:` entries) are
 * served the same way, under "<graph>.", each request handed to that graph's own forward
 * (see "proxied resources" below), and so are subscriptions to proxied resources; a view
 * names the graphs whose ones it serves.
 *
 * The provider is built per request from the registry's compiled servers (each graph's
 * server is the same one /mcp/{tenant}/{graph} uses), and a call is handed to that graph's
 * own provider: same executor, limits and node history. The graph's server is held until
 * the call ends, so an activation in between does not free it under the run.
 */
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/internal.h"
#include "gateway/relay.h"

#define TW_NAME_MAX 128 /* MCP 2025-11-25 tool name length */
#define TW_GRAPHS_MAX 1000 /* graphs served on one tenant-wide endpoint */

typedef struct tw {
    char tenant[GG_NAME_MAX + 1];
    json_t *tools;   /* array of MCP tool objects under their dotted names */
    json_t *route;   /* dotted name → [graph index, tool name] */
    json_t *skipped; /* names that could not form a valid dotted name */
    json_t *missing; /* a view's selected names that no active graph offers now */
    json_t *unlisted; /* a view's name for each of them → its "<graph>.<tool>" (tw_tool_withheld) */
    mcp_server **srv; /* one reference per graph served */
    json_t *graphs;   /* [[graph name, active version], ...] by the index srv has */
    int *fwd;         /* by that index: MCP_FORWARD_* served here (the graph's, less what a view leaves out) */
    size_t n;
    char *view_text;  /* the view's definition (compact, sorted keys); NULL for _all */
} tw;

/* MCP 2025-11-25: 1..128 chars, ASCII letters, digits, '_', '-', '.'. */
bool gw_valid_tool_name(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > TW_NAME_MAX) return false;
    for (const char *c = s; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' ||
              *c == '-' || *c == '.'))
            return false;
    return true;
}

static json_t *tw_server_info(mcp_provider *p) {
    tw *t = p->impl;
    char name[GG_NAME_MAX + 16];
    snprintf(name, sizeof name, "%s/_all", t->tenant);
    return json_pack("{s:s,s:s}", "name", name, "version", "1");
}

static const char *tw_instructions(mcp_provider *p) {
    (void)p;
    return "Tools of all of this tenant's active graphs, named <graph>.<tool>; their proxied prompts named "
           "<graph>.<prompt> and proxied resources <graph>.<uri>.";
}

static json_t *tw_list_tools(mcp_provider *p) { return json_incref(((tw *)p->impl)->tools); }

/* The graph's provider and the tool's own name for a dotted name, or NULL. */
static mcp_provider *tw_target(tw *t, const char *name, const char **tool, mcp_server **srv) {
    json_t *r = json_object_get(t->route, name);
    if (!r) return NULL;
    size_t i = (size_t)json_integer_value(json_array_get(r, 0));
    *tool = json_string_value(json_array_get(r, 1));
    if (srv) *srv = t->srv[i];
    return mcp_server_provider(t->srv[i]);
}

static json_t *tw_get_tool(mcp_provider *p, const char *name) {
    tw *t = p->impl;
    for (size_t i = 0; i < json_array_size(t->tools); i++) {
        json_t *tool = json_array_get(t->tools, i);
        if (strcmp(json_string_value(json_object_get(tool, "name")), name) == 0) return json_incref(tool);
    }
    return NULL;
}

static json_t *tw_call_tool(mcp_provider *p, const char *name, json_t *arguments, const mcp_call_ctx *ctx,
                            gg_error *err) {
    const char *tool;
    mcp_provider *gp = tw_target(p->impl, name, &tool, NULL);
    if (!gp) {
        gg_error_set(err, "unknown_tool", "Unknown tool: %s", name);
        return NULL;
    }
    return gp->ops->call_tool(gp, tool, arguments, ctx, err);
}

/* The graph's server stays referenced until the graph's provider answers. */
typedef struct tw_wait {
    mcp_server *srv;
    mcp_provider_done_fn done;
    void *user;
} tw_wait;

static void tw_done(void *user, json_t *result, gg_error *err) {
    tw_wait *w = user;
    w->done(w->user, result, err);
    mcp_server_unref(w->srv);
    free(w);
}

static void tw_call_tool_async(mcp_provider *p, const char *name, json_t *arguments, const mcp_call_ctx *ctx,
                               mcp_provider_done_fn done, void *user) {
    const char *tool;
    mcp_server *srv = NULL;
    mcp_provider *gp = tw_target(p->impl, name, &tool, &srv);
    tw_wait *w = gp ? calloc(1, sizeof *w) : NULL;
    if (!w) {
        gg_error err = GG_ERROR_INIT;
        gg_error_set(&err, gp ? "oom" : "unknown_tool", gp ? "out of memory" : "Unknown tool: %s", name);
        done(user, NULL, &err);
        gg_error_clear(&err);
        return;
    }
    w->srv = mcp_server_ref(srv);
    w->done = done;
    w->user = user;
    if (gp->ops->call_tool_async) {
        gp->ops->call_tool_async(gp, tool, arguments, ctx, tw_done, w);
        return;
    }
    gg_error err = GG_ERROR_INIT;
    json_t *r = gp->ops->call_tool(gp, tool, arguments, ctx, &err);
    tw_done(w, r, r ? NULL : &err);
    json_decref(r);
    gg_error_clear(&err);
}

static bool tw_tool_is_pure(mcp_provider *p, const char *name) {
    const char *tool;
    mcp_provider *gp = tw_target(p->impl, name, &tool, NULL);
    return gp && gp->ops->tool_is_pure && gp->ops->tool_is_pure(gp, tool);
}

static int tw_tool_client_needs(mcp_provider *p, const char *name) {
    const char *tool;
    mcp_provider *gp = tw_target(p->impl, name, &tool, NULL);
    return gp && gp->ops->tool_client_needs ? gp->ops->tool_client_needs(gp, tool) : 0;
}

/* On _all, "<graph>.<tool>" for a tool its graph withholds (on_change: quarantine), and on
 * a view the name it selected that tool under: the graph's own refusal,
 * tool_definition_changed, rather than "unknown tool". */
static bool tw_tool_withheld(mcp_provider *p, const char *name, gg_error *err) {
    tw *t = p->impl;
    if (t->view_text) name = json_string_value(json_object_get(t->unlisted, name));
    const char *dot = name ? strchr(name, '.') : NULL;
    if (!dot) return false;
    for (size_t i = 0; i < t->n; i++) {
        const char *g = json_string_value(json_array_get(json_array_get(t->graphs, i), 0));
        if (!g || strlen(g) != (size_t)(dot - name) || strncmp(g, name, (size_t)(dot - name))) continue;
        mcp_provider *gp = mcp_server_provider(t->srv[i]);
        return gp->ops->tool_withheld && gp->ops->tool_withheld(gp, dot + 1, err);
    }
    return false;
}

static void tw_free(tw *t);

static void tw_destroy(mcp_provider *p) { tw_free(p->impl); }

/* Add graph g's tools (server srv, index i) under "<g>.<tool>". */
static void tw_add_graph(tw *t, const char *g, size_t i) {
    mcp_provider *gp = mcp_server_provider(t->srv[i]);
    json_t *tools = gp->ops->list_tools(gp);
    for (size_t k = 0; k < json_array_size(tools); k++) {
        json_t *tool = json_array_get(tools, k);
        const char *tn = json_string_value(json_object_get(tool, "name"));
        char dotted[2 * TW_NAME_MAX];
        snprintf(dotted, sizeof dotted, "%s.%s", g, tn ? tn : "");
        if (!tn || !gw_valid_tool_name(dotted)) {
            json_array_append_new(t->skipped, json_string(dotted));
            continue;
        }
        json_t *copy = gg_json_clone(tool);
        json_object_set_new(copy, "name", json_string(dotted));
        json_array_append_new(t->tools, copy);
        json_object_set_new(t->route, dotted, json_pack("[I,s]", (json_int_t)i, tn));
    }
    json_decref(tools);
}

/* Keep only the view's selection (definition: a body gw_view_check accepted), renamed and
 * re-described as it says; selected names no graph offers now go to t->missing. */
static void tw_apply_view(tw *t, json_t *definition) {
    json_t *by_name = json_object(), *tools = json_array(), *route = json_object();
    size_t i;
    json_t *tool, *sel;
    json_array_foreach(t->tools, i, tool) json_object_set(by_name, json_string_value(json_object_get(tool, "name")), tool);
    json_array_foreach(json_object_get(definition, "tools"), i, sel) {
        const char *from = json_string_value(json_object_get(sel, "tool"));
        const char *as = json_string_value(json_object_get(sel, "name"));
        const char *desc = json_string_value(json_object_get(sel, "description"));
        json_t *found = json_object_get(by_name, from);
        if (!found) {
            json_array_append_new(t->missing, json_string(from));
            json_object_set_new(t->unlisted, as ? as : from, json_string(from));
            continue;
        }
        json_t *copy = gg_json_clone(found);
        json_object_set_new(copy, "name", json_string(as ? as : from));
        if (desc) json_object_set_new(copy, "description", json_string(desc));
        json_array_append_new(tools, copy);
        json_object_set(route, as ? as : from, json_object_get(t->route, from));
    }
    json_decref(by_name);
    json_decref(t->tools);
    json_decref(t->route);
    t->tools = tools;
    t->route = route;
}

/* The tenant's graphs as the registry serves them now: t->srv, t->graphs (and the
 * signature "graph:version;..." of what a server built from them would serve). */
static bool tw_gather(gg_gateway *gw, tw *t, const char *tenant, gg_strbuf *sig, gg_error *err) {
    json_t *graphs = gg_store_graphs_list(gw->store, tenant, err);
    if (!graphs) return false;
    size_t cap = json_array_size(graphs) < TW_GRAPHS_MAX ? json_array_size(graphs) : TW_GRAPHS_MAX;
    t->srv = calloc(cap ? cap : 1, sizeof *t->srv);
    t->fwd = calloc(cap ? cap : 1, sizeof *t->fwd);
    t->graphs = json_array();
    if (!t->srv || !t->fwd) {
        json_decref(graphs);
        gg_error_set(err, "oom", "out of memory");
        return false;
    }
    for (size_t i = 0; i < cap; i++) {
        const char *g = json_string_value(json_object_get(json_array_get(graphs, i), "name"));
        gg_error e = GG_ERROR_INIT;
        int version = 0;
        mcp_server *s = g ? gw_registry_get(gw->registry, tenant, g, &version, &e) : NULL;
        gg_error_clear(&e); /* a graph that does not load now is simply not served here */
        if (!s) continue;
        t->srv[t->n++] = s;
        json_array_append_new(t->graphs, json_pack("[s,i]", g, version));
        gg_strbuf_printf(sig, "%s:%d;", g, version);
    }
    json_decref(graphs);
    return true;
}

static tw *tw_new(const char *tenant) {
    tw *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    snprintf(t->tenant, sizeof t->tenant, "%s", tenant);
    t->tools = json_array();
    t->route = json_object();
    t->skipped = json_array();
    t->missing = json_array();
    t->unlisted = json_object();
    return t;
}

static void tw_free(tw *t) {
    if (!t) return;
    for (size_t i = 0; i < t->n; i++) mcp_server_unref(t->srv[i]);
    free(t->srv);
    free(t->fwd);
    json_decref(t->tools);
    json_decref(t->route);
    json_decref(t->skipped);
    json_decref(t->missing);
    json_decref(t->unlisted);
    json_decref(t->graphs);
    free(t->view_text);
    free(t);
}

/* ---- proxied resources, templates, prompts and completions ------------------------------
 * Each graph answers these through its own forward (src/graph/proxy_extras.c: selection,
 * checks, bounds and secrets as on its endpoint); here its names and URIs go under
 * "<graph>.", as its tools do: a prompt "<graph>.<prompt>" (left out when that breaks MCP's
 * tool-name rule, never renamed), a URI or uriTemplate "<graph>." + the graph's. Graph names
 * have no '.', so the first '.' splits a name or URI back, whatever the rest holds. Only
 * proxied items are served here: a graph's own declared resources and prompts stay on its
 * endpoint (they are left out of its list pages, and a name or URI it answers itself is not
 * forwarded, so a proxied item it shadows stays unreachable here too). A list walks the
 * graphs in order; its nextCursor (base64url of "GRAPH\nGRAPH-CURSOR") names the graph to
 * ask next and the cursor that graph's endpoint handed out ("" = its first page).
 * resources/subscribe and unsubscribe of "<graph>.<uri>" go the same way, to the graph's
 * own subscribe path (its downstream told, the session's 64 subscriptions as anywhere); the
 * downstream's resources/updated comes back through catalogs.c relay_updated, which hands
 * it under "<graph>." to the sessions and listen streams of _all and of the views naming
 * the graph under "resources" (gw_streams_updated, gw_listen_updated: their rate bounds). */

#define TW_MAX_CURSOR 1024 /* bytes of a graph's cursor carried (its own are at most ~700) */

typedef struct tw_fwd {
    tw *t;             /* borrowed: the call holds the server that owns it */
    mcp_server *srv;   /* the graph's server, held until it answered */
    size_t gi;         /* its index */
    int bit;           /* MCP_FORWARD_* of the method */
    const char *key;   /* a list's result member: "resources", "resourceTemplates" or "prompts" */
    json_t *params;    /* what the graph is asked (owned) */
    char *asked;       /* resources/read: the URI the client named */
    mcp_provider_done_fn done;
    void *user;
} tw_fwd;

static const char *tw_str(json_t *v) { return json_is_string(v) ? json_string_value(v) : ""; }

static const char *tw_graph_name(const tw *t, size_t i) {
    return json_string_value(json_array_get(json_array_get(t->graphs, i), 0));
}

/* The index of the graph named by len bytes of name serving kind bit here, or -1. */
static long tw_graph_index(const tw *t, const char *name, size_t len, int bit) {
    for (size_t i = 0; i < t->n; i++) {
        const char *g = tw_graph_name(t, i);
        if ((t->fwd[i] & bit) && g && strlen(g) == len && !strncmp(g, name, len)) return (long)i;
    }
    return -1;
}

/* "<graph>.<rest>" → the graph's index (serving bit) and *rest; -1 when none. */
static long tw_split(const tw *t, const char *s, int bit, const char **rest) {
    const char *dot = s ? strchr(s, '.') : NULL;
    if (!dot || !dot[1]) return -1;
    *rest = dot + 1;
    return tw_graph_index(t, s, (size_t)(dot - s), bit);
}

static char *tw_dotted(const char *graph, const char *id) {
    size_t n = strlen(graph) + strlen(id) + 2;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s.%s", graph, id);
    return s;
}

static char *tw_cursor_make(const char *graph, const char *gc) {
    char raw[GG_NAME_MAX + TW_MAX_CURSOR + 4];
    int n = snprintf(raw, sizeof raw, "%s\n%s", graph, gc);
    if (n < 0 || (size_t)n >= sizeof raw) return NULL; /* the graph's own cursors are bounded well below */
    size_t cap = sodium_base64_ENCODED_LEN((size_t)n, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    char *out = malloc(cap);
    if (out) sodium_bin2base64(out, cap, (const unsigned char *)raw, (size_t)n, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    return out;
}

/* A cursor handed out here: the graph's index (serving bit) and its cursor into gc. */
static long tw_cursor_read(const tw *t, const char *cur, int bit, char *gc, size_t gcn) {
    unsigned char raw[GG_NAME_MAX + TW_MAX_CURSOR + 4];
    size_t len = 0;
    if (strlen(cur) > sodium_base64_ENCODED_LEN(sizeof raw - 1, sodium_base64_VARIANT_URLSAFE_NO_PADDING) ||
        sodium_base642bin(raw, sizeof raw - 1, cur, strlen(cur), NULL, &len, NULL, sodium_base64_VARIANT_URLSAFE_NO_PADDING))
        return -1;
    raw[len] = 0;
    char *nl = strchr((char *)raw, '\n');
    if (!nl || memchr(raw, 0, len) || strlen(nl + 1) >= gcn) return -1;
    snprintf(gc, gcn, "%s", nl + 1);
    return tw_graph_index(t, (char *)raw, (size_t)(nl - (char *)raw), bit);
}

static void tw_fwd_end(tw_fwd *f, json_t *res, gg_error *err) {
    mcp_provider_done_fn done = f->done;
    void *user = f->user;
    mcp_server_unref(f->srv);
    json_decref(f->params);
    free(f->asked);
    free(f);
    done(user, res, err);
}

static void tw_fwd_fail(tw_fwd *f, const char *code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void tw_fwd_fail(tw_fwd *f, const char *code, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    gg_error e = GG_ERROR_INIT;
    gg_error_set(&e, code, "%s", msg);
    tw_fwd_end(f, NULL, &e);
    gg_error_clear(&e);
}

/* Whether list (the graph's own items) has one whose idkey is id. */
static bool tw_listed_in(json_t *list, const char *idkey, const char *id) {
    size_t i;
    json_t *o;
    json_array_foreach(list, i, o) if (!strcmp(tw_str(json_object_get(o, idkey)), id)) return true;
    return false;
}

/* A graph whose list failed (its downstream down or answering out of bounds) is skipped on
 * that page rather than failing it: one broken server must not hide the other graphs' items
 * behind a cursor no client could get past. Logged, and named in the page's _meta. */
static json_t *tw_skipped(const char *tenant, const char *graph, gg_error *err) {
    gg_log(GG_LOG_WARN, "tenant-wide list: a graph's proxied items skipped", "tenant", tenant, "graph", graph, "error",
           err->message ? err->message : err->code, NULL);
    return json_pack("{s:[{s:s,s:s}]}", "io.graphgate/skipped", "graph", graph, "error", err->message ? err->message : err->code);
}

/* A graph's list page: its proxied items under "<graph>.", the cursor onwards (the next
 * graph's first page when it has no more). */
static void tw_listed(void *user, json_t *res, gg_error *err) {
    tw_fwd *f = user;
    if (!res && (!err || !strcmp(err->code, "cancelled"))) {
        tw_fwd_end(f, NULL, err);
        return;
    }
    json_t *skipped = res ? NULL : tw_skipped(f->t->tenant, tw_graph_name(f->t, f->gi), err);
    mcp_provider *gp = mcp_server_provider(f->srv);
    const char *g = tw_graph_name(f->t, f->gi);
    bool prompts = f->bit == MCP_FORWARD_PROMPTS, tpl = !strcmp(f->key, "resourceTemplates");
    const char *idkey = prompts ? "name" : tpl ? "uriTemplate" : "uri";
    json_t *(*lister)(mcp_provider *) = prompts ? gp->ops->list_prompts : tpl ? gp->ops->list_resource_templates : gp->ops->list_resources;
    json_t *own = lister ? lister(gp) : NULL, *items = json_array(), *it;
    size_t i;
    json_array_foreach(json_object_get(res, f->key), i, it) {
        const char *id = json_string_value(json_object_get(it, idkey));
        char *named = id && !tw_listed_in(own, idkey, id) ? tw_dotted(g, id) : NULL;
        json_t *c = named && (!prompts || gw_valid_tool_name(named)) ? json_copy(it) : NULL;
        if (c) json_object_set_new(c, idkey, json_string(named));
        if (c) json_array_append_new(items, c);
        free(named);
    }
    json_decref(own);
    const char *gnext = json_string_value(json_object_get(res, "nextCursor"));
    char *next = NULL;
    if (gnext && *gnext) next = tw_cursor_make(g, gnext);
    for (size_t j = f->gi + 1; !next && !(gnext && *gnext) && j < f->t->n; j++)
        if (f->t->fwd[j] & f->bit) next = tw_cursor_make(tw_graph_name(f->t, j), "");
    json_t *out = json_pack("{s:o}", f->key, items);
    if (out && next) json_object_set_new(out, "nextCursor", json_string(next));
    if (out && skipped) json_object_set_new(out, "_meta", skipped);
    else json_decref(skipped);
    free(next);
    json_decref(res);
    tw_fwd_end(f, out, NULL);
}

/* A graph's resources/read: the contents' URIs under "<graph>." (and its (un)subscribe: no
 * contents, the error naming the URI as for a read). */
static void tw_read(void *user, json_t *res, gg_error *err) {
    tw_fwd *f = user;
    if (!res && err && !strcmp(err->code, "not_found")) /* name the URI the client asked for */
        tw_fwd_fail(f, "not_found", "Resource not found: %.300s", f->asked);
    else if (!res) tw_fwd_end(f, NULL, err);
    if (!res) return;
    const char *g = tw_graph_name(f->t, f->gi);
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(res, "contents"), i, c) {
        char *u = tw_dotted(g, tw_str(json_object_get(c, "uri")));
        if (u) json_object_set_new(c, "uri", json_string(u));
        free(u);
    }
    tw_fwd_end(f, res, NULL);
}

static void tw_passed(void *user, json_t *res, gg_error *err) { tw_fwd_end(user, res, err); }

/* Whether the graph answers prompt name itself (its own, not forwarded). */
static bool tw_own_prompt(mcp_server *s, const char *name) {
    mcp_provider *gp = mcp_server_provider(s);
    json_t *own = gp->ops->list_prompts ? gp->ops->list_prompts(gp) : NULL;
    bool mine = tw_listed_in(own, "name", name);
    json_decref(own);
    return mine;
}

/* params with member key (of ref when ref) set to val: what the graph is asked. */
static json_t *tw_params(json_t *params, bool ref, const char *key, const char *val) {
    json_t *p = gg_json_clone(params);
    json_t *o = ref ? json_object_get(p, "ref") : p;
    if (json_is_object(o)) json_object_set_new(o, key, json_string(val));
    if (p) json_object_del(p, "_meta"); /* the caller's progress token and trace are not the graph's */
    return p;
}

/* Which graph to ask, what, and which callback shapes its answer; false: answered already. */
static bool tw_route(tw_fwd *f, const char *method, json_t *params, mcp_provider_done_fn *cb) {
    tw *t = f->t;
    const char *rest = NULL;
    long gi = -1;
    f->bit = method[0] == 'p' ? MCP_FORWARD_PROMPTS : MCP_FORWARD_RESOURCES;
    if (!strcmp(method, "resources/list") || !strcmp(method, "resources/templates/list") || !strcmp(method, "prompts/list")) {
        f->key = f->bit == MCP_FORWARD_PROMPTS ? "prompts" : !strcmp(method, "resources/list") ? "resources" : "resourceTemplates";
        json_t *cur = json_object_get(params, "cursor");
        char gc[TW_MAX_CURSOR + 1] = "";
        if (!cur || json_is_null(cur))
            for (size_t i = 0; gi < 0 && i < t->n; i++) gi = t->fwd[i] & f->bit ? (long)i : -1;
        else if (!json_is_string(cur) || (gi = tw_cursor_read(t, json_string_value(cur), f->bit, gc, sizeof gc)) < 0)
            return tw_fwd_fail(f, "invalid_params", "Invalid params: unknown cursor"), false;
        if (gi < 0) return tw_fwd_end(f, json_pack("{s:[]}", f->key), NULL), false;
        f->params = *gc ? json_pack("{s:s}", "cursor", gc) : json_object();
        *cb = tw_listed;
    } else if (!strcmp(method, "resources/read") || !strcmp(method, "resources/subscribe") ||
               !strcmp(method, "resources/unsubscribe")) {
        /* (un)subscribe goes to the graph's own subscribe path; its downstream's updates come
         * back under "<graph>." (catalogs.c relay_updated) */
        const char *uri = json_string_value(json_object_get(params, "uri"));
        if (strcmp(method, "resources/read")) f->bit = MCP_FORWARD_SUBSCRIBE;
        gi = tw_split(t, uri, f->bit, &rest);
        if (gi < 0 || mcp_server_serves_uri(t->srv[gi], rest))
            return tw_fwd_fail(f, "not_found", "Resource not found: %.300s", uri), false;
        f->asked = strdup(uri);
        f->params = tw_params(params, false, "uri", rest);
        *cb = tw_read;
    } else if (!strcmp(method, "prompts/get")) {
        const char *name = json_string_value(json_object_get(params, "name"));
        gi = tw_split(t, name, f->bit, &rest);
        if (gi < 0 || tw_own_prompt(t->srv[gi], rest))
            return tw_fwd_fail(f, "invalid_params", "Unknown prompt: %.300s", name), false;
        f->params = tw_params(params, false, "name", rest);
        *cb = tw_passed;
    } else if (!strcmp(method, "completion/complete")) {
        json_t *ref = json_object_get(params, "ref");
        bool prompt = !strcmp(tw_str(json_object_get(ref, "type")), "ref/prompt");
        f->bit = prompt ? MCP_FORWARD_PROMPTS : MCP_FORWARD_RESOURCES;
        gi = tw_split(t, json_string_value(json_object_get(ref, prompt ? "name" : "uri")), f->bit, &rest);
        if (gi >= 0 && (prompt ? tw_own_prompt(t->srv[gi], rest) : mcp_server_serves_uri(t->srv[gi], rest))) gi = -1;
        if (gi < 0) /* nothing proxied under that name: no suggestions, as on a graph's endpoint */
            return tw_fwd_end(f, json_pack("{s:{s:[],s:i,s:b}}", "completion", "values", "total", 0, "hasMore", 0), NULL), false;
        f->params = tw_params(params, true, prompt ? "name" : "uri", rest);
        *cb = tw_passed;
    } else {
        return tw_fwd_fail(f, "invalid_params", "Method not found: %.100s", method), false;
    }
    f->gi = (size_t)gi;
    if (!f->params) return tw_fwd_fail(f, "oom", "out of memory"), false;
    return true;
}

/* The provider's forward: the request handed to the graph it names (or to each in turn). */
static void tw_forward(mcp_provider *p, const char *method, json_t *params, const mcp_call_ctx *ctx, mcp_provider_done_fn done,
                       void *user) {
    tw_fwd *f = calloc(1, sizeof *f);
    if (!f) {
        gg_error e = GG_ERROR_INIT;
        gg_error_set(&e, "oom", "out of memory");
        done(user, NULL, &e);
        gg_error_clear(&e);
        return;
    }
    f->t = p->impl;
    f->done = done;
    f->user = user;
    mcp_provider_done_fn cb = NULL;
    if (!tw_route(f, method, params, &cb)) return;
    f->srv = mcp_server_ref(f->t->srv[f->gi]);
    mcp_provider *gp = mcp_server_provider(f->srv);
    gp->ops->forward(gp, method, f->params, ctx, cb, f);
}

static int tw_forwards(mcp_provider *p) {
    tw *t = p->impl;
    int kinds = 0;
    for (size_t i = 0; i < t->n; i++) kinds |= t->fwd[i];
    return kinds;
}

/* What graph i forwards, less what view (when not NULL) leaves out: its "resources" and
 * "prompts" name the graphs whose proxied ones it serves. */
static int tw_graph_forwards(tw *t, size_t i, json_t *view) {
    mcp_provider *gp = mcp_server_provider(t->srv[i]);
    int kinds = gp->ops->forwards && gp->ops->forward ? gp->ops->forwards(gp) : 0, keep = view ? 0 : kinds;
    static const char *const keys[] = {"resources", "prompts"};
    for (int k = 0; view && k < 2; k++) {
        size_t j;
        json_t *g;
        json_array_foreach(json_object_get(view, keys[k]), j, g)
            if (!strcmp(tw_str(g), tw_graph_name(t, i)))
                keep |= k ? MCP_FORWARD_PROMPTS : MCP_FORWARD_RESOURCES | MCP_FORWARD_SUBSCRIBE;
    }
    return kinds & keep;
}

static const mcp_provider_ops tw_ops = {
    .server_info = tw_server_info,
    .instructions = tw_instructions,
    .list_tools = tw_list_tools,
    .get_tool = tw_get_tool,
    .call_tool = tw_call_tool,
    .call_tool_async = tw_call_tool_async,
    .tool_is_pure = tw_tool_is_pure,
    .tool_client_needs = tw_tool_client_needs,
    .tool_withheld = tw_tool_withheld,
    .forwards = tw_forwards,
    .forward = tw_forward,
    .destroy = tw_destroy,
};

/* The provider over t's gathered servers (takes t), the view applied when not NULL. */
static mcp_provider *tw_provider_new(tw *t, json_t *view) {
    mcp_provider *p = mcp_provider_new(&tw_ops, t);
    if (!p) {
        tw_free(t);
        return NULL;
    }
    for (size_t i = 0; i < t->n; i++) tw_add_graph(t, json_string_value(json_array_get(json_array_get(t->graphs, i), 0)), i);
    if (view) tw_apply_view(t, view);
    for (size_t i = 0; i < t->n; i++) t->fwd[i] = tw_graph_forwards(t, i, view);
    return p;
}

/* Servers built lately, by tenant and signature (the graphs' versions + the view): a
 * request finding its signature reuses the server instead of compiling every tool's schema
 * again (50 graphs x 10 tools, loaded 2-core machine, curl per request: 86 ms a
 * tools/list without it, 60 ms with it, 40 ms on one graph's endpoint). Bounded; oldest slot replaced. */
#define TW_CACHE_SLOTS 64
typedef struct tw_slot {
    char tenant[GG_NAME_MAX + 1];
    char *sig;
    mcp_server *srv;
} tw_slot;
struct gw_tenantwide_cache {
    pthread_mutex_t mu;
    tw_slot slot[TW_CACHE_SLOTS];
    size_t next;
};

gw_tenantwide_cache *gw_tenantwide_cache_new(void) {
    gw_tenantwide_cache *c = calloc(1, sizeof *c);
    if (c) pthread_mutex_init(&c->mu, NULL);
    return c;
}

void gw_tenantwide_cache_free(gw_tenantwide_cache *c) {
    if (!c) return;
    for (size_t i = 0; i < TW_CACHE_SLOTS; i++) {
        free(c->slot[i].sig);
        mcp_server_unref(c->slot[i].srv);
    }
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static mcp_server *cache_find(gw_tenantwide_cache *c, const char *tenant, const char *sig) {
    mcp_server *s = NULL;
    if (!c) return NULL;
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; !s && i < TW_CACHE_SLOTS; i++)
        if (c->slot[i].sig && strcmp(c->slot[i].tenant, tenant) == 0 && strcmp(c->slot[i].sig, sig) == 0)
            s = mcp_server_ref(c->slot[i].srv);
    pthread_mutex_unlock(&c->mu);
    return s;
}

static void cache_put(gw_tenantwide_cache *c, const char *tenant, const char *sig, mcp_server *s) {
    char *copy = c ? strdup(sig) : NULL;
    if (!copy) return;
    pthread_mutex_lock(&c->mu);
    tw_slot *sl = &c->slot[c->next++ % TW_CACHE_SLOTS];
    char *old_sig = sl->sig;
    mcp_server *old = sl->srv;
    snprintf(sl->tenant, sizeof sl->tenant, "%s", tenant);
    sl->sig = copy;
    sl->srv = mcp_server_ref(s);
    pthread_mutex_unlock(&c->mu);
    free(old_sig);
    mcp_server_unref(old); /* outside the lock: it may be the last reference */
}

/* See relay.h. */
mcp_server *gw_tenantwide_server(gg_gateway *gw, const char *tenant, json_t *view, gg_error *err) {
    tw *t = tw_new(tenant);
    gg_strbuf sig = GG_STRBUF_INIT;
    if (!t || !tw_gather(gw, t, tenant, &sig, err)) {
        if (!t) gg_error_set(err, "oom", "out of memory");
        tw_free(t);
        gg_strbuf_free(&sig);
        return NULL;
    }
    t->view_text = view ? json_dumps(view, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    gg_strbuf_printf(&sig, "|%s", t->view_text ? t->view_text : "");
    char *key = gg_strbuf_take(&sig); /* NULL (out of memory): no caching */
    mcp_server *s = key ? cache_find(gw->tenantwide_cache, tenant, key) : NULL;
    if (s) {
        tw_free(t);
        free(key);
        return s;
    }
    mcp_provider *p = tw_provider_new(t, view);
    if (!p) gg_error_set(err, "oom", "out of memory");
    else {
        s = mcp_server_new(p, NULL, err);
        mcp_provider_unref(p);
    }
    if (s && key) cache_put(gw->tenantwide_cache, tenant, key, s);
    free(key);
    return s;
}

/* See relay.h. */
bool gw_tenantwide_subscribe(const mcp_server *s, const char *uri) {
    mcp_provider *p = s ? mcp_server_provider(s) : NULL;
    if (!p || p->ops != &tw_ops) return false;
    const char *rest = NULL;
    long gi = tw_split(p->impl, uri, MCP_FORWARD_SUBSCRIBE, &rest);
    mcp_server *gs = gi >= 0 ? ((tw *)p->impl)->srv[gi] : NULL;
    if (!gs || mcp_server_serves_uri(gs, rest)) return false; /* as resources/subscribe here */
    gg_graph *g = gg_graph_provider_graph(mcp_server_provider(gs));
    return g && gg_graph_proxy_subscribe(g, rest);
}

/* See relay.h. */
const char *gw_tenantwide_view_text(const mcp_server *s) {
    mcp_provider *p = s ? mcp_server_provider(s) : NULL;
    return p && p->ops == &tw_ops ? ((tw *)p->impl)->view_text : NULL;
}

/* See relay.h. */
json_t *gw_tenantwide_missing(mcp_server *s) {
    mcp_provider *p = mcp_server_provider(s);
    if (!p || p->ops != &tw_ops) return json_array();
    return json_copy(((tw *)p->impl)->missing);
}

/* See relay.h. */
bool gw_tenantwide_target(mcp_server *s, const char *name, const char **graph, const char **tool, int *version) {
    mcp_provider *p = mcp_server_provider(s);
    if (!p || p->ops != &tw_ops || !name) return false;
    tw *t = p->impl;
    json_t *r = json_object_get(t->route, name);
    json_t *g = json_array_get(t->graphs, (size_t)json_integer_value(json_array_get(r, 0)));
    if (!r || !g) return false;
    *graph = json_string_value(json_array_get(g, 0));
    *version = (int)json_integer_value(json_array_get(g, 1));
    *tool = json_string_value(json_array_get(r, 1));
    return true;
}
