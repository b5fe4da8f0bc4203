/* proxy.c — `proxy:` entries: a downstream server's tools (all, or a chosen and renamed
 * set) re-exported as the graph's own tools. Each proxied tool is compiled into an ordinary
 * tool — entry → pre… → `downstream` (an mcp node calling the original tool) → post… → exit
 * — so execution, history, limits, cancellation and durability are those of any tool.
 *
 * The tool definitions come from the server's catalog: listed live during an upload
 * (gg_graph_options.downstream), else the stored one (gg_graph_options.catalog). Without
 * either (offline `graph validate`) `tools: all` yields no tools and a named list yields
 * tools taking any object, each with a warning — never a silent pass.
 *
 * The synthesized tool is a small YAML tree (ynodes owned by a pool here) whose node maps
 * are the author's own pre/post mappings (positions intact, so every loader error points
 * into the source), each copied only to add the implicit `next` to the following node. */
#include "graph/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROXY_MAX_ENTRIES 64
#define PROXY_MAX_HOOK_NODES 64      /* pre + post of one entry */
#define PROXY_MAX_NODES 20000        /* nodes synthesized for every proxied tool together */

/* ---- synthetic YAML nodes ------------------------------------------------------------- */

typedef struct ypool {
    ynode **all;
    size_t n, cap;
} ypool;

static ynode *ynew(ypool *p, yn_kind kind, const ynode *at) {
    if (p->n == p->cap) {
        size_t nc = p->cap ? 2 * p->cap : 64;
        ynode **na = realloc(p->all, nc * sizeof *na);
        if (!na) return NULL;
        p->all = na;
        p->cap = nc;
    }
    ynode *y = calloc(1, sizeof *y);
    if (!y) return NULL;
    y->kind = kind;
    y->line = at ? at->line : 0;
    y->column = at ? at->column : 0;
    y->expanded = 1;
    y->height = 1;
    p->all[p->n++] = y;
    return y;
}

static ynode *yscalar(ypool *p, const char *s, const ynode *at) {
    ynode *y = ynew(p, YN_SCALAR, at);
    if (y && !(y->str = strdup(s ? s : ""))) return NULL;
    if (y) y->text = y->len = strlen(y->str);
    return y;
}

/* Append item (seq) or key + value (map); sizes kept as the parser keeps them. */
static bool yadd(ynode *c, ynode *k, ynode *v) {
    if (!c || !v || (c->kind == YN_MAP && !k)) return false;
    size_t need = c->kind == YN_MAP ? 2 * c->count + 2 : c->count + 1;
    if (need > c->cap) {
        size_t nc = need * 2;
        ynode **ni = realloc(c->items, nc * sizeof *ni);
        if (!ni) return false;
        c->items = ni;
        c->cap = nc;
    }
    if (c->kind == YN_MAP) {
        c->items[2 * c->count] = k;
        c->items[2 * c->count + 1] = v;
        c->expanded += k->expanded;
    } else {
        c->items[c->count] = v;
    }
    c->count++;
    c->expanded += v->expanded;
    c->text += v->text + (k ? k->text : 0);
    if (v->height + 1 > c->height) c->height = v->height + 1;
    return true;
}

static bool yput(ypool *p, ynode *map, const char *key, ynode *v) {
    return yadd(map, yscalar(p, key, v), v);
}

/* A copy of a node mapping (its values shared) with `next: target` added. */
static ynode *with_next(ypool *p, const ynode *m, const char *target) {
    ynode *c = ynew(p, YN_MAP, m);
    for (size_t i = 0; c && i < m->count; i++)
        if (!yadd(c, m->items[2 * i], m->items[2 * i + 1])) return NULL;
    return c && yput(p, c, "next", yscalar(p, target, m)) ? c : NULL;
}

static void ypool_free(ypool *p) {
    for (size_t i = 0; i < p->n; i++) {
        free(p->all[i]->str);
        free(p->all[i]->items);
        free(p->all[i]);
    }
    free(p->all);
}

/* ---- one entry ------------------------------------------------------------------------ */

typedef struct pctx {
    gg_graph *g;
    const char *file;
    const gg_graph_options *o;
    gg_graph_diags *d;
    const gproxy_sink *sink;
    size_t room;       /* tools that may still be added */
    size_t nodes_left; /* PROXY_MAX_NODES budget */
    bool bounded;      /* the bounds were reported */
    ypool pool;
} pctx;

#define PERR(c, n, code, ...) \
    gg_graph_diag_add((c)->d, GG_DIAG_ERROR, code, (c)->file, (n) ? (n)->line : 0, (n) ? (n)->column : 0, NULL, NULL, __VA_ARGS__)
#define PWARN(c, n, code, ...) \
    gg_graph_diag_add((c)->d, GG_DIAG_WARNING, code, (c)->file, (n) ? (n)->line : 0, (n) ? (n)->column : 0, NULL, NULL, __VA_ARGS__)

static const char *text_of(const ynode *v) { return v && v->kind == YN_SCALAR ? v->str : NULL; }

static bool only_keys(pctx *c, const ynode *m, const char *const *keys, const char *what) {
    bool ok = true;
    for (size_t i = 0; i < m->count; i++) {
        const char *k = text_of(m->items[2 * i]);
        size_t j = 0;
        while (k && keys[j] && strcmp(keys[j], k)) j++;
        if (!k || !keys[j]) {
            PERR(c, m->items[2 * i], "unknown_key", "unknown key '%s' in %s", k ? k : "?", what);
            ok = false;
        }
    }
    return ok;
}

/* Hand a catalog listed during an upload to the fetched callback (which stores it); false
 * when it refuses it (over the tenant's quota): the upload fails. */
static bool report_listed(pctx *c, gserver *s, const char *id, json_t *tools, size_t bytes, const ynode *at) {
    if (!c->o->downstream->fetched) return true;
    gg_error e = GG_ERROR_INIT;
    gg_graph_catalog cat = {s->name, id, tools, bytes, gg_wall_ms()};
    bool ok = c->o->downstream->fetched(c->o->downstream->user, &cat, &e);
    if (!ok)
        PERR(c, at, "downstream_quota_exceeded", "server '%s': %s", s->name, e.message ? e.message : "its catalog was refused");
    gg_error_clear(&e);
    return ok;
}

/* The server's tool catalog (new reference) or NULL: listed now during an upload (and
 * handed to the upload's fetched callback, which stores it), else the stored one of the
 * same server (by identity: another graph's server of the same name is not this one).
 * A catalog over its bound fails the upload. */
static json_t *catalog_for(pctx *c, gserver *s, const ynode *at) {
    char id[GG_GRAPH_IDENTITY_MAX];
    gg_graph_server_identity(s, id);
    /* a server acting for each caller (per_user, for_caller) answers its users only: an
     * upload has no caller to list it as (a shared client would only fail principal_required) */
    if (c->o && c->o->downstream && !s->per_user && !s->for_caller) {
        gg_error e = GG_ERROR_INIT;
        mcp_client *mc = gg_graph_server_client(s, c->g->policy, &e);
        int tmo = c->o->downstream->timeout_ms > 0 ? c->o->downstream->timeout_ms : 10000;
        if (c->o->deadline_ms > 0 && c->o->deadline_ms - gg_now_ms() < tmo)
            tmo = c->o->deadline_ms - gg_now_ms() < 1 ? 1 : (int)(c->o->deadline_ms - gg_now_ms());
        size_t bytes = 0;
        json_t *tools = mc ? gg_graph_mcp_list_tools(mc, tmo, c->o->downstream->max_catalog_bytes, &bytes, &e) : NULL;
        if (tools && !report_listed(c, s, id, tools, bytes, at)) {
            json_decref(tools);
            return NULL;
        }
        if (!tools && !strcmp(e.code, "too_large"))
            PERR(c, at, "downstream_catalog_too_large", "server '%s': %s", s->name, e.message ? e.message : e.code);
        else if (!tools)
            PWARN(c, at, "downstream_unreachable", "server '%s' could not be listed: %s%s", s->name,
                  e.message ? e.message : e.code, c->o->catalog ? "; using its stored catalog" : "");
        gg_error_clear(&e);
        if (tools) return tools;
    }
    json_t *tools = c->o && c->o->catalog ? c->o->catalog(c->o->catalog_user, s->name, id) : NULL;
    return json_is_array(tools) ? tools : (json_decref(tools), NULL);
}

/* The catalog this graph serves of s: catalog_for's, seen through the version's pins under
 * s's on_change (pins.c); *held gets the tools quarantine withholds (or NULL). */
static json_t *served_catalog(pctx *c, gserver *s, const ynode *at, json_t **held) {
    *held = NULL;
    json_t *cat = catalog_for(c, s, at);
    json_t *pins = NULL;
    if (c->o && c->o->pinned && s->on_change != GG_ON_CHANGE_FOLLOW) {
        char id[GG_GRAPH_IDENTITY_MAX];
        gg_graph_server_identity(s, id);
        pins = c->o->pinned(c->o->pinned_user, s->name, id);
    }
    if (!pins) return cat;
    if (!cat) cat = json_array(); /* not listed, none stored: the pins alone */
    json_t *out = gg_graph_pin_apply(s, cat, pins, held);
    json_decref(pins);
    json_decref(cat);
    return out;
}

/* The tool (its name as listed) is withheld by quarantine: not listed, calls refused. */
static void withhold(pctx *c, const char *name) {
    if (!c->g->withheld) c->g->withheld = json_object();
    if (c->g->withheld) json_object_set_new(c->g->withheld, name, json_true());
}

static json_t *find_tool(json_t *tools, const char *name) {
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t)
        if (json_is_string(json_object_get(t, "name")) && !strcmp(json_string_value(json_object_get(t, "name")), name))
            return t;
    return NULL;
}

/* The listed definition: the catalog's (or an open one without a catalog) under our name,
 * with the entry's overrides. A post hook may change the result's shape, so the
 * downstream's outputSchema is dropped then. The downstream's execution goes too: a task is
 * ours to run (td, the entry's taskSupport) — the downstream only ever gets a plain call. */
static json_t *tool_def(pctx *c, json_t *cat, const char *name, const ynode *item, bool has_post, const gtask_decl *td) {
    json_t *def = cat ? gg_json_clone(cat) : json_pack("{s:s,s:{s:s}}", "description", "", "inputSchema", "type", "object");
    if (!def) return NULL;
    json_object_set_new(def, "name", json_string(name));
    json_object_del(def, "execution");
    json_object_del(def, "_meta");
    gg_graph_task_decl_apply(td, def);
    if (has_post) json_object_del(def, "outputSchema");
    if (!json_is_object(json_object_get(def, "inputSchema")))
        json_object_set_new(def, "inputSchema", json_pack("{s:s}", "type", "object"));
    static const char *const keys[] = {"title", "description", "annotations"};
    for (int k = 0; item && item->kind == YN_MAP && k < 3; k++) {
        const ynode *v = gg_yaml_get(item, keys[k]);
        if (!v) continue;
        gg_error e = GG_ERROR_INIT;
        json_t *j = gg_yaml_to_json(v, &e);
        if (!j || (k < 2 && !json_is_string(j)) || (k == 2 && !json_is_object(j)))
            PERR(c, v, "invalid_type", "%s must be %s", keys[k], k < 2 ? "a string" : "a mapping");
        else json_object_set(def, keys[k], j);
        json_decref(j);
        gg_error_clear(&e);
    }
    return def;
}

/* JSONata giving the downstream call's arguments: the output of the pre transform that ran
 * last (context keys are most recent first), else the tool's own arguments. */
static char *args_expr(const ynode *pre) {
    size_t cap = 128;
    for (size_t i = 0; pre && i < pre->count; i++) cap += (text_of(gg_yaml_get(pre->items[i], "id")) ? strlen(text_of(gg_yaml_get(pre->items[i], "id"))) * 2 : 0) + 4;
    char *s = malloc(cap), *p = s;
    if (!s) return NULL;
    p += sprintf(p, "($k := $keys($)[$ in [");
    bool any = false;
    for (size_t i = 0; pre && i < pre->count; i++) {
        const char *type = text_of(gg_yaml_get(pre->items[i], "type")), *id = text_of(gg_yaml_get(pre->items[i], "id"));
        if (!type || !id || strcmp(type, "transform") || strpbrk(id, "\"\\")) continue;
        p += sprintf(p, "%s\"%s\"", any ? "," : "", id);
        any = true;
    }
    if (!any) {
        free(s);
        return strdup("$.entry");
    }
    sprintf(p, "]][0]; $k ? $lookup($, $k) : $.entry)");
    return s;
}

/* Copies of the hook's node mappings, each without `next` pointing at the following node
 * (or at last). Ids the compiled tool uses itself are refused. */
static bool hook_nodes(pctx *c, ynode *seq, const ynode *hook, const char *last) {
    for (size_t i = 0; hook && i < hook->count; i++) {
        const ynode *m = hook->items[i];
        const char *type = text_of(gg_yaml_get(m, "type"));
        bool fall = m->kind == YN_MAP && !gg_yaml_get(m, "next") && (!type || (strcmp(type, "exit") && strcmp(type, "switch")));
        const char *to = last;
        if (i + 1 < hook->count && text_of(gg_yaml_get(hook->items[i + 1], "id"))) to = text_of(gg_yaml_get(hook->items[i + 1], "id"));
        if (!yadd(seq, NULL, fall ? with_next(&c->pool, m, to) : (ynode *)m)) return false;
    }
    return true;
}

static ynode *simple_node(pctx *c, const ynode *at, const char *id, const char *type, const char *next) {
    ynode *m = ynew(&c->pool, YN_MAP, at);
    if (!m || !yput(&c->pool, m, "id", yscalar(&c->pool, id, at)) || !yput(&c->pool, m, "type", yscalar(&c->pool, type, at)))
        return NULL;
    return !next || yput(&c->pool, m, "next", yscalar(&c->pool, next, at)) ? m : NULL;
}

typedef struct pentry {
    const ynode *m, *server_at, *pre, *post;
    const char *server, *prefix;
    const ynode *args; /* compiled per tool from this source */
    gserver *s;
    json_t *held;      /* downstream tool names quarantine withholds, or NULL */
    gtask_decl task;   /* the entry's taskSupport: every tool it adds, unless a listed one says otherwise */
} pentry;

/* One proxied tool: its synthetic tool mapping, handed to the loader with its definition. */
static void add_tool(pctx *c, const pentry *pe, const char *orig, const char *name, const ynode *at,
                     const ynode *item, json_t *cat, const gtask_decl *td) {
    size_t nodes = 3 + (pe->pre ? pe->pre->count : 0) + (pe->post ? pe->post->count : 0);
    if (!c->room || nodes > c->nodes_left) {
        if (!c->bounded)
            PERR(c, at, "too_large", "proxied tools pass the bounds: at most %d tools per graph and %d nodes over every proxied tool",
                 GG_GRAPH_MAX_TOOLS, PROXY_MAX_NODES);
        c->bounded = true;
        return;
    }
    c->room--;
    c->nodes_left -= nodes;
    ypool *p = &c->pool;
    ynode *tm = ynew(p, YN_MAP, at), *seq = ynew(p, YN_SEQ, at), *schema = ynew(p, YN_MAP, at);
    const char *first_pre = pe->pre && pe->pre->count ? text_of(gg_yaml_get(pe->pre->items[0], "id")) : NULL;
    const char *first_post = pe->post && pe->post->count ? text_of(gg_yaml_get(pe->post->items[0], "id")) : NULL;
    ynode *down = simple_node(c, pe->server_at, "downstream", "mcp", first_post ? first_post : "exit");
    bool ok = tm && seq && schema && down && yput(p, schema, "type", yscalar(p, "object", at)) &&
              yput(p, down, "server", yscalar(p, pe->server, pe->server_at)) && yput(p, down, "tool", yscalar(p, orig, at)) &&
              yadd(seq, NULL, simple_node(c, at, "entry", "entry", first_pre ? first_pre : "downstream")) &&
              hook_nodes(c, seq, pe->pre, "downstream") && yadd(seq, NULL, down) && hook_nodes(c, seq, pe->post, "exit") &&
              yadd(seq, NULL, simple_node(c, at, "exit", "exit", NULL)) &&
              yput(p, tm, "name", yscalar(p, name, at)) && yput(p, tm, "description", yscalar(p, "proxied", at)) &&
              yput(p, tm, "inputSchema", schema) && yput(p, tm, "nodes", seq);
    json_t *def = ok ? tool_def(c, cat, name, item, pe->post && pe->post->count, td) : NULL;
    if (!def) return; /* out of memory or an error already reported */
    if (cat) {
        gg_graph_pin_record(c->g, pe->s, cat);
        if (c->o && c->o->downstream) gg_graph_suspicious_check(pe->s, cat, c->d, c->file, at->line, at->column);
    }
    c->sink->add(c->sink->user, &(gproxy_tool){tm, def, pe->args, at, !(pe->post && pe->post->count)});
}

/* `tools: all`: every catalog tool under prefix+name. */
static void add_all(pctx *c, const pentry *pe, const ynode *tools, json_t *cat) {
    if (!cat) {
        PWARN(c, tools, "proxy_no_catalog",
              "server '%s' has no tool catalog here (no upload listing, none stored): this entry adds no tools", pe->server);
        return;
    }
    size_t i;
    json_t *t;
    gg_graph_pin_record(c->g, pe->s, NULL);
    json_array_foreach(cat, i, t) {
        if (c->bounded) break; /* reported once; the rest would be refused too */
        const char *orig = json_string_value(json_object_get(t, "name"));
        char name[160];
        if (!orig || snprintf(name, sizeof name, "%s%s", pe->prefix ? pe->prefix : "", orig) >= (int)sizeof name ||
            !gg_graph_tool_name_ok(name)) {
            PWARN(c, tools, "proxy_skipped_tool", "server '%s' tool '%s%s' is not a valid MCP tool name here: skipped",
                  pe->server, pe->prefix ? pe->prefix : "", orig ? orig : "?");
            continue;
        }
        add_tool(c, pe, orig, name, tools, NULL, t, &pe->task);
    }
    const char *orig;
    json_t *v;
    json_object_foreach(pe->held, orig, v) {
        char name[160];
        if (snprintf(name, sizeof name, "%s%s", pe->prefix ? pe->prefix : "", orig) < (int)sizeof name) withhold(c, name);
    }
}

/* `tools: [name | {name, as, title, description, annotations, taskSupport}]`. */
static void add_list(pctx *c, const pentry *pe, const ynode *tools, json_t *cat) {
    static const char *const keys[] = {"name", "as", "title", "description", "annotations", "taskSupport", "taskStart", NULL};
    if (!cat)
        PWARN(c, tools, "proxy_no_catalog",
              "server '%s' has no tool catalog here: its tools take any object until it is listed", pe->server);
    for (size_t i = 0; i < tools->count && !c->bounded; i++) {
        const ynode *it = tools->items[i], *nm = it->kind == YN_MAP ? gg_yaml_get(it, "name") : it;
        if (it->kind == YN_MAP && !only_keys(c, it, keys, "a proxied tool")) continue;
        gtask_decl td = pe->task; /* a listed tool's own taskSupport overrides the entry's */
        if (it->kind == YN_MAP) gg_graph_task_decl_load(it, true, c->file, NULL, c->d, &td);
        const char *orig = text_of(nm), *as = it->kind == YN_MAP ? text_of(gg_yaml_get(it, "as")) : NULL;
        if (!orig || !*orig) {
            PERR(c, nm ? nm : it, "missing_key", "a proxied tool needs 'name' (the downstream tool's name)");
            continue;
        }
        if (it->kind == YN_MAP && gg_yaml_get(it, "as") && !as) {
            PERR(c, gg_yaml_get(it, "as"), "invalid_type", "as must be a string");
            continue;
        }
        json_t *t = cat ? find_tool(cat, orig) : NULL;
        if (!t && json_object_get(pe->held, orig)) { /* quarantined: listed again once approved */
            char name[160];
            snprintf(name, sizeof name, "%s%s", as ? "" : pe->prefix ? pe->prefix : "", as ? as : orig);
            withhold(c, name);
            continue;
        }
        if (cat && !t) { /* an upload refuses it; a stored graph loads without it */
            gg_graph_diag_add(c->d, c->o && c->o->downstream ? GG_DIAG_ERROR : GG_DIAG_WARNING, "downstream_unknown_tool", c->file,
                      nm->line, nm->column, NULL, NULL, "server '%s' has no tool '%s' (it has %zu tools)", pe->server, orig,
                      json_array_size(cat));
            continue;
        }
        char name[160];
        snprintf(name, sizeof name, "%s%s", as ? "" : pe->prefix ? pe->prefix : "", as ? as : orig);
        const ynode *at = as ? gg_yaml_get(it, "as") : nm;
        if (!gg_graph_tool_name_ok(name)) {
            PERR(c, at, "invalid_name", "tool name '%s' must be 1-128 characters of A-Z a-z 0-9 _ - . (MCP tool name rules)", name);
            continue;
        }
        add_tool(c, pe, orig, name, at, it, t, &td);
    }
}

static const ynode *hook(pctx *c, const ynode *m, const char *key) {
    const ynode *h = gg_yaml_get(m, key);
    if (h && h->kind != YN_SEQ) {
        PERR(c, h, "invalid_type", "%s must be a sequence of nodes", key);
        return NULL;
    }
    for (size_t i = 0; h && i < h->count; i++) {
        const ynode *m = h->items[i];
        const char *id = text_of(gg_yaml_get(m, "id"));
        if (m->kind != YN_MAP) {
            PERR(c, m, "invalid_type", "a node must be a mapping");
            return NULL;
        }
        const char *type = text_of(gg_yaml_get(m, "type"));
        if (type && strcmp(type, "transform") && strcmp(type, "switch") && strcmp(type, "exit") && strcmp(type, "mcp")) {
            PERR(c, gg_yaml_get(m, "type"), "invalid_type", "a %s node is transform, switch, exit or mcp (not %s)", key, type);
            return NULL;
        }
        if (id && (!strcmp(id, "entry") || !strcmp(id, "downstream") || !strcmp(id, "exit"))) {
            PERR(c, gg_yaml_get(m, "id"), "reserved_id", "node id '%s' is the proxied tool's own (entry, downstream, exit)", id);
            return NULL;
        }
    }
    return h;
}

static void load_entry(pctx *c, const ynode *m, json_t *seen) {
    static const char *const keys[] = {"server", "tools", "prefix", "pre", "post", "taskSupport", "taskStart",
                                       "resources", "prompts", "uri_prefix", NULL};
    if (m->kind != YN_MAP) {
        PERR(c, m, "invalid_type", "a proxy entry must be a mapping {server, tools, pre?, post?}");
        return;
    }
    if (!only_keys(c, m, keys, "a proxy entry")) return;
    pentry pe = {.m = m, .server_at = gg_yaml_get(m, "server"), .pre = hook(c, m, "pre"), .post = hook(c, m, "post")};
    pe.server = text_of(pe.server_at);
    pe.prefix = text_of(gg_yaml_get(m, "prefix"));
    const ynode *tools = gg_yaml_get(m, "tools");
    bool extras = gg_yaml_get(m, "resources") || gg_yaml_get(m, "prompts");
    if (!pe.server || (!tools && !extras)) {
        PERR(c, m, "missing_key", "a proxy entry needs 'server' and 'tools' (all, or a list), 'resources' or 'prompts'");
        return;
    }
    if ((gg_yaml_get(m, "pre") && !pe.pre) || (gg_yaml_get(m, "post") && !pe.post)) return;
    gg_graph_task_decl_load(m, true, c->file, NULL, c->d, &pe.task); /* an error fails the load: go on to find others */
    if ((pe.pre ? pe.pre->count : 0) + (pe.post ? pe.post->count : 0) > PROXY_MAX_HOOK_NODES) {
        PERR(c, m, "too_large", "a proxy entry has at most %d pre and post nodes", PROXY_MAX_HOOK_NODES);
        return;
    }
    gserver *s = NULL;
    for (size_t i = 0; i < c->g->nservers; i++)
        if (c->g->servers[i].name && !strcmp(c->g->servers[i].name, pe.server)) s = &c->g->servers[i];
    if (!s || s->target_graph) {
        PERR(c, pe.server_at, "unknown_server", "server '%s' is not a downstream MCP server defined in mcpServers", pe.server);
        return;
    }
    gg_graph_proxy_extras_load(c->g, m, pe.server, pe.prefix, c->file, c->d); /* resources, prompts */
    /* every proxied tool relays its downstream's questions: known before the catalog is
     * listed below, whose client is the one calls use and declares the capabilities then
     * (clients.c declare_relay; in the stateless era they go with every request) */
    if (tools) s->relays = true;
    if (!tools && (pe.pre || pe.post))
        PERR(c, pe.pre ? gg_yaml_get(m, "pre") : gg_yaml_get(m, "post"), "invalid_type",
             "pre and post hooks apply to proxied tools: this entry has no 'tools'");
    if (!tools && gg_yaml_get(m, "taskSupport"))
        PERR(c, gg_yaml_get(m, "taskSupport"), "invalid_key", "taskSupport applies to proxied tools: this entry has no 'tools'");
    if (!tools) { /* resources and prompts only: answered live, nothing to compile */
        json_array_append_new(c->g->proxied, json_string(pe.server));
        return;
    }
    bool all = tools->kind == YN_SCALAR && !strcmp(tools->str, "all");
    if (!all && tools->kind != YN_SEQ) {
        PERR(c, tools, "invalid_type", "tools must be 'all' or a sequence of tool names / {name, as, ...}");
        return;
    }
    if (all && (s->per_user || s->for_caller)) { /* nobody to list its tools as (catalog_for) */
        /* an upload is refused; a version stored before this rule still loads, adding no tools */
        bool stored = c->o && c->o->clamp_limits;
        gg_graph_diag_add(c->d, stored ? GG_DIAG_WARNING : GG_DIAG_ERROR, "proxy_tools_unlisted", c->file, tools->line,
                          tools->column, NULL, NULL,
                          "server '%s' is called %s%s%s: an upload has no caller to list its tools as, so "
                          "'tools: all' cannot be resolved; name them (tools: [name, ...])%s",
                          pe.server,
                          s->for_caller ? "on behalf of the caller (auth.type " : "with each user's own consent (auth.per_user",
                          s->for_caller ? json_string_value(json_object_get(s->auth, "type")) : "", ")",
                          stored ? "; this entry adds no tools" : "");
        return;
    }
    char *expr = args_expr(pe.pre);
    pe.args = expr ? yscalar(&c->pool, expr, m) : NULL;
    free(expr);
    pe.s = s;
    json_t *cat = json_object_get(seen, pe.server);
    if (!cat) { /* one listing per server, however many entries name it */
        json_t *held = NULL;
        cat = served_catalog(c, s, pe.server_at, &held);
        json_object_set_new(seen, pe.server, json_pack("{s:o,s:o}", "cat", cat ? cat : json_null(), "held",
                                                       held ? held : json_null()));
        cat = json_object_get(seen, pe.server);
    }
    pe.held = json_object_get(cat, "held");
    cat = json_object_get(cat, "cat");
    if (json_is_null(cat)) cat = NULL;
    if (json_is_null(pe.held)) pe.held = NULL;
    if (pe.args && all) add_all(c, &pe, tools, cat);
    else if (pe.args) add_list(c, &pe, tools, cat);
    json_array_append_new(c->g->proxied, json_string(pe.server));
}

void gg_graph_proxy_load(gg_graph *g, const ynode *proxy, const char *file, const gg_graph_options *o, gg_graph_diags *d,
                 size_t room, const gproxy_sink *sink) {
    if (!proxy) return;
    pctx c = {g, file, o, d, sink, room, PROXY_MAX_NODES, false, {0}};
    if (proxy->kind != YN_SEQ) {
        PERR(&c, proxy, "invalid_type", "proxy must be a sequence of {server, tools, pre?, post?}");
        return;
    }
    if (proxy->count > PROXY_MAX_ENTRIES) {
        PERR(&c, proxy, "too_large", "a graph has at most %d proxy entries (this one has %zu)", PROXY_MAX_ENTRIES, proxy->count);
        return;
    }
    json_t *seen = json_object();
    if (!g->proxied) g->proxied = json_array();
    for (size_t i = 0; seen && g->proxied && i < proxy->count; i++) load_entry(&c, proxy->items[i], seen);
    json_decref(seen);
    ypool_free(&c.pool);
}

bool gg_graph_proxies(const gg_graph *g, const char *server) {
    size_t i;
    json_t *s;
    json_array_foreach(g->proxied, i, s)
        if (!strcmp(json_string_value(s), server)) return true;
    return false;
}

bool gg_graph_proxies_identity(const gg_graph *g, const char *identity) {
    for (size_t i = 0; i < g->nservers; i++) {
        const gserver *s = &g->servers[i]; /* a quarantined server's mcp nodes follow its catalog too */
        bool follows = gg_graph_proxies(g, s->name) || (s->on_change == GG_ON_CHANGE_QUARANTINE && gg_graph_server_called(g, s));
        if (s->target_graph || !follows) continue;
        char id[GG_GRAPH_IDENTITY_MAX];
        gg_graph_server_identity(&g->servers[i], id);
        if (!strcmp(id, identity)) return true;
    }
    return false;
}
