/* proxy_extras.c — a `proxy:` entry's `resources` and `prompts`: a downstream server's
 * resources, resource templates, prompts and completions re-exported through the graph's
 * endpoint (src/graph/PROXY.md). Unlike proxied tools nothing is compiled or catalogued:
 * the selection is checked at load (line:col diagnostics) and kept in g->px_extras, and each
 * request (resources/list, resources/templates/list, resources/read, prompts/list,
 * prompts/get, completion/complete) is answered by asking the downstream then and there
 * (mcp_provider_ops.forward): its answer is checked and bounded, filtered by the selection and
 * renamed before the client sees it.
 *
 * Names: a proxied prompt is listed as its `as`, else the entry's prefix + its name (as
 * tools are). URIs: with `uri_prefix: P` every URI and uriTemplate of the entry's server is
 * listed as P + the downstream's, and a URI asked for is routed to the entry whose P it
 * starts with and sent without it — reversible because no entry's P is a prefix of another's
 * (refused at load), and the graph's own resources and prompts are looked up first.
 *
 * Pagination: a list answers the graph's own items with the first proxied page; its
 * nextCursor (base64url of "SEGMENT\nDOWNSTREAM-CURSOR") names the entry to ask next and the
 * downstream's own cursor, passed through as it came (bounded). */
#include "graph/internal.h"

#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PX_MAX_SELECTED 500       /* URIs or prompts one entry names */
#define PX_MAX_ITEMS 1000         /* items of one downstream list page, contents of one read */
#define PX_MAX_MESSAGES 1000      /* messages of one prompts/get */
#define PX_MAX_COMPLETIONS 100    /* MCP's own bound on completion values */
#define PX_MAX_KEY 2048           /* bytes of a URI, template or name the downstream lists */
#define PX_MAX_CURSOR 512         /* bytes of a downstream cursor we pass on */
#define PX_MAX_PREFIX 128

#define XERR(d, file, n, code, ...) \
    gg_graph_diag_add(d, GG_DIAG_ERROR, code, file, (n) ? (n)->line : 0, (n) ? (n)->column : 0, NULL, NULL, __VA_ARGS__)

static const char *text_of(const ynode *v) { return v && v->kind == YN_SCALAR ? v->str : NULL; }

static bool has_prefix(const char *s, const char *p) { return !strncmp(s, p, strlen(p)); }

/* Optional string keys of a selection item (title, description) copied into out. */
static bool copy_overrides(json_t *out, const ynode *it, const char *file, gg_graph_diags *d) {
    static const char *const keys[] = {"title", "description"};
    for (int k = 0; k < 2; k++) {
        const ynode *v = gg_yaml_get(it, keys[k]);
        if (!v) continue;
        if (!text_of(v)) {
            XERR(d, file, v, "invalid_type", "%s must be a string", keys[k]);
            return false;
        }
        json_object_set_new(out, keys[k], json_string(text_of(v)));
    }
    return true;
}

static bool only(const ynode *m, const char *const *keys, const char *what, const char *file, gg_graph_diags *d) {
    for (size_t i = 0; i < m->count; i++) {
        const char *k = text_of(m->items[2 * i]);
        size_t j = 0;
        while (k && keys[j] && strcmp(keys[j], k)) j++;
        if (!k || !keys[j]) {
            XERR(d, file, m->items[2 * i], "unknown_key", "unknown key '%s' in %s", k ? k : "?", what);
            return false;
        }
    }
    return true;
}

/* `resources: all | [uri | {uri, title?, description?}]` → "all" or [{uri, ...}]; NULL after
 * an error. */
static json_t *load_resources(const ynode *r, const char *file, gg_graph_diags *d) {
    static const char *const keys[] = {"uri", "title", "description", NULL};
    if (r->kind == YN_SCALAR && !strcmp(r->str, "all")) return json_string("all");
    if (r->kind != YN_SEQ) {
        XERR(d, file, r, "invalid_type", "resources must be 'all' or a sequence of URIs / uriTemplates / {uri, title, description}");
        return NULL;
    }
    if (r->count > PX_MAX_SELECTED) {
        XERR(d, file, r, "too_large", "a proxy entry names at most %d resources", PX_MAX_SELECTED);
        return NULL;
    }
    json_t *out = json_array();
    for (size_t i = 0; out && i < r->count; i++) {
        const ynode *it = r->items[i], *u = it->kind == YN_MAP ? gg_yaml_get(it, "uri") : it;
        if (it->kind == YN_MAP && !only(it, keys, "a proxied resource", file, d)) goto bad;
        const char *uri = text_of(u);
        if (!uri || !*uri || strlen(uri) > PX_MAX_KEY) {
            XERR(d, file, u ? u : it, "missing_key", "a proxied resource needs 'uri' (the downstream's URI or uriTemplate, 1-%d bytes)",
                 PX_MAX_KEY);
            goto bad;
        }
        size_t j;
        json_t *seen;
        json_array_foreach(out, j, seen) if (!strcmp(json_string_value(json_object_get(seen, "uri")), uri)) {
            XERR(d, file, u, "duplicate_resource", "resource '%s' is named twice in this entry", uri);
            goto bad;
        }
        json_t *sel = json_pack("{s:s}", "uri", uri);
        if (!sel || (it->kind == YN_MAP && !copy_overrides(sel, it, file, d))) {
            json_decref(sel);
            goto bad;
        }
        json_array_append_new(out, sel);
    }
    return out;
bad:
    json_decref(out);
    return NULL;
}

/* `prompts: all | [name | {name, as?, title?, description?}]` → "all" or {listed name:
 * {name, title?, description?}}; NULL after an error. */
static json_t *load_prompts(const ynode *r, const char *prefix, const char *file, gg_graph_diags *d) {
    static const char *const keys[] = {"name", "as", "title", "description", NULL};
    if (r->kind == YN_SCALAR && !strcmp(r->str, "all")) return json_string("all");
    if (r->kind != YN_SEQ) {
        XERR(d, file, r, "invalid_type", "prompts must be 'all' or a sequence of prompt names / {name, as, title, description}");
        return NULL;
    }
    if (r->count > PX_MAX_SELECTED) {
        XERR(d, file, r, "too_large", "a proxy entry names at most %d prompts", PX_MAX_SELECTED);
        return NULL;
    }
    json_t *out = json_object();
    for (size_t i = 0; out && i < r->count; i++) {
        const ynode *it = r->items[i], *nm = it->kind == YN_MAP ? gg_yaml_get(it, "name") : it;
        if (it->kind == YN_MAP && !only(it, keys, "a proxied prompt", file, d)) goto bad;
        const char *orig = text_of(nm), *as = it->kind == YN_MAP ? text_of(gg_yaml_get(it, "as")) : NULL;
        if (!orig || !*orig) {
            XERR(d, file, nm ? nm : it, "missing_key", "a proxied prompt needs 'name' (the downstream prompt's name)");
            goto bad;
        }
        if (it->kind == YN_MAP && gg_yaml_get(it, "as") && !as) {
            XERR(d, file, gg_yaml_get(it, "as"), "invalid_type", "as must be a string");
            goto bad;
        }
        char name[160];
        const ynode *at = as ? gg_yaml_get(it, "as") : nm;
        if (snprintf(name, sizeof name, "%s%s", as ? "" : prefix, as ? as : orig) >= (int)sizeof name ||
            !gg_graph_tool_name_ok(name)) {
            XERR(d, file, at, "invalid_name", "prompt name '%s%s' must be 1-128 characters of A-Z a-z 0-9 _ - .", as ? "" : prefix,
                 as ? as : orig);
            goto bad;
        }
        if (json_object_get(out, name)) {
            XERR(d, file, at, "duplicate_prompt", "two proxied prompts are named '%s'", name);
            goto bad;
        }
        json_t *sel = json_pack("{s:s}", "name", orig);
        if (!sel || (it->kind == YN_MAP && !copy_overrides(sel, it, file, d))) {
            json_decref(sel);
            goto bad;
        }
        json_object_set_new(out, name, sel);
    }
    return out;
bad:
    json_decref(out);
    return NULL;
}

/* Whether two entries' prompt selections could both answer one listed name. */
static bool prompts_overlap(json_t *a, const char *pa, json_t *b, const char *pb, const char **which) {
    bool all_a = json_is_string(a), all_b = json_is_string(b);
    const char *k;
    json_t *v;
    if (all_a && all_b) return has_prefix(pa, pb) || has_prefix(pb, pa);
    if (all_a || all_b) {
        json_t *list = all_a ? b : a;
        const char *p = all_a ? pa : pb;
        json_object_foreach(list, k, v) if (has_prefix(k, p)) return *which = k, true;
        return false;
    }
    json_object_foreach(a, k, v) if (json_object_get(b, k)) return *which = k, true;
    return false;
}

/* The entry's `uri_prefix` (NULL after an error; "" when absent). */
static const char *uri_prefix(const ynode *m, const char *file, gg_graph_diags *d) {
    const ynode *v = gg_yaml_get(m, "uri_prefix");
    if (!v) return "";
    const char *p = text_of(v);
    bool ok = p && *p && strlen(p) <= PX_MAX_PREFIX;
    for (const char *q = p; ok && *q; q++)
        if ((unsigned char)*q <= ' ' || *q == '{' || *q == '}' || *q == 0x7f) ok = false;
    if (!ok) {
        XERR(d, file, v, "invalid_type", "uri_prefix must be 1-%d characters without spaces, control characters, '{' or '}'",
             PX_MAX_PREFIX);
        return NULL;
    }
    return p;
}

/* See internal.h. */
void gg_graph_proxy_extras_load(gg_graph *g, const ynode *m, const char *server, const char *prefix, const char *file,
                                gg_graph_diags *d) {
    const ynode *rn = gg_yaml_get(m, "resources"), *pn = gg_yaml_get(m, "prompts");
    const char *up = uri_prefix(m, file, d);
    if (!up) return;
    if (*up && !rn) {
        XERR(d, file, gg_yaml_get(m, "uri_prefix"), "invalid_type", "uri_prefix needs 'resources' in the same entry");
        return;
    }
    if (!rn && !pn) return;
    json_t *res = rn ? load_resources(rn, file, d) : NULL, *prm = pn ? load_prompts(pn, prefix ? prefix : "", file, d) : NULL;
    if ((rn && !res) || (pn && !prm)) goto done;
    if (!g->px_extras && !(g->px_extras = json_array())) goto done;
    size_t i;
    json_t *e;
    json_array_foreach(g->px_extras, i, e) {
        const char *other = json_string_value(json_object_get(e, "server"));
        const char *oup = json_string_value(json_object_get(e, "uri_prefix"));
        if (res && json_object_get(e, "res") && (has_prefix(up, oup) || has_prefix(oup, up))) {
            XERR(d, file, gg_yaml_get(m, "uri_prefix") ? gg_yaml_get(m, "uri_prefix") : rn, "proxy_uri_collision",
                 "the resources of this entry and of an earlier one (server '%s') could share URIs: give each entry a "
                 "uri_prefix that is not a prefix of the other's (now '%s' and '%s')", other, up, oup);
            goto done;
        }
        const char *which = NULL;
        json_t *oprm = json_object_get(e, "prm");
        if (prm && oprm &&
            prompts_overlap(prm, prefix ? prefix : "", oprm, json_string_value(json_object_get(e, "prefix")), &which)) {
            XERR(d, file, pn, "duplicate_prompt",
                 "the prompts of this entry and of an earlier one (server '%s') could share names%s%s%s: give them distinct "
                 "prefixes (neither a prefix of the other) or names", other, which ? " ('" : "", which ? which : "", which ? "')" : "");
            goto done;
        }
    }
    json_t *entry = json_pack("{s:s,s:s,s:s}", "server", server, "uri_prefix", up, "prefix", prefix ? prefix : "");
    if (entry && res) json_object_set(entry, "res", res);
    if (entry && prm) json_object_set(entry, "prm", prm);
    if (entry) json_array_append_new(g->px_extras, entry);
done:
    json_decref(res);
    json_decref(prm);
}

int gg_graph_forwards(const gg_graph *g) {
    int kinds = 0;
    size_t i;
    json_t *e;
    json_array_foreach(g->px_extras, i, e) {
        if (json_object_get(e, "res")) kinds |= MCP_FORWARD_RESOURCES | MCP_FORWARD_SUBSCRIBE;
        if (json_object_get(e, "prm")) kinds |= MCP_FORWARD_PROMPTS;
    }
    return kinds;
}

/* See graph.h. */
int gg_graph_proxies_extras(const gg_graph *g, const char *server) {
    int kinds = 0;
    size_t i;
    json_t *e;
    json_array_foreach(g->px_extras, i, e) {
        if (server && strcmp(json_string_value(json_object_get(e, "server")), server)) continue;
        if (json_object_get(e, "res")) kinds |= MCP_FORWARD_RESOURCES;
        if (json_object_get(e, "prm")) kinds |= MCP_FORWARD_PROMPTS;
    }
    return kinds;
}

/* ---- answering: one request, one downstream exchange --------------------------------------- */

typedef enum { F_LIST, F_READ, F_GET, F_COMPLETE, F_SUBSCRIBE } fkind;

typedef struct freq {
    gg_graph *g; /* reference */
    fkind kind;
    const char *list_key; /* F_LIST: "resources", "resourceTemplates" or "prompts" */
    char method[32];
    json_t *entry;        /* borrowed from g->px_extras */
    size_t seg;           /* F_LIST: the entry's segment number (1-based among those listing) */
    json_t *own;          /* F_LIST, first page: the graph's own items to put first (or NULL) */
    json_t *mine;         /* F_LIST: the graph's own items of this kind (borrowed from g) */
    char *asked;          /* F_READ: the URI as the client named it */
    char *orig;           /* F_SUBSCRIBE: the downstream's URI (while its capabilities are learnt) */
    bool probing;         /* F_SUBSCRIBE: waiting for mcp_client_declared_start */
    json_t *sel;          /* F_GET: the prompt's selection item (title/description overrides) */
    json_t *result;       /* the downstream's answer */
    gg_error err;
    const mcp_call_ctx *ctx;
    mcp_provider_done_fn done;
    void *user;
    gserver *held_server; /* a for_caller server's client holding the caller's token for the call */
    mcp_client *held;
} freq;

/* See internal.h. */
gserver *gg_graph_server_named(const gg_graph *g, const char *name) {
    if (!name) return NULL;
    for (size_t i = 0; i < g->nservers; i++)
        if (g->servers[i].name && !strcmp(g->servers[i].name, name)) return &g->servers[i];
    return NULL;
}

static void freq_end(freq *q, json_t *res) {
    if (q->held) gg_graph_user_release(q->held_server, q->held);
    mcp_provider_done_fn done = q->done;
    void *user = q->user;
    gg_error err = q->err;
    q->err = (gg_error)GG_ERROR_INIT;
    json_decref(q->result);
    json_decref(q->own);
    free(q->asked);
    free(q->orig);
    gg_graph_unref(q->g);
    free(q);
    done(user, res, &err);
    gg_error_clear(&err);
}

static void fail(freq *q, const char *code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(freq *q, const char *code, const char *fmt, ...) {
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char c[GG_ERR_CODE_MAX];
    snprintf(c, sizeof c, "%s", code); /* code may be q->err's own, cleared next */
    gg_error_clear(&q->err);
    gg_error_set(&q->err, c, "%s", msg);
    freq_end(q, NULL);
}

/* A string member of at most PX_MAX_KEY bytes (non-empty). */
static const char *key_str(json_t *o, const char *k) {
    const char *s = json_string_value(json_object_get(o, k));
    return s && *s && strlen(s) <= PX_MAX_KEY ? s : NULL;
}

static bool selected_uri(json_t *res, const char *uri, json_t **sel) {
    *sel = NULL;
    if (json_is_string(res)) return true;
    size_t i;
    json_t *s;
    json_array_foreach(res, i, s) if (!strcmp(json_string_value(json_object_get(s, "uri")), uri)) return *sel = s, true;
    return false;
}

/* RFC 6570 level-1/2 match of uri against a template: each {expr} takes one non-empty run
 * up to the next literal; a plain {var} never spans '/', '?' or '#'. */
static bool template_matches(const char *t, const char *u) {
    while (*t) {
        if (*t != '{') {
            if (*t++ != *u++) return false;
            continue;
        }
        const char *end = strchr(t, '}');
        if (!end) return false;
        bool reserved = t[1] == '+' || t[1] == '#';
        const char *lit = end + 1;
        size_t litlen = strcspn(lit, "{");
        const char *stop = litlen ? NULL : u + strlen(u);
        for (const char *q = u; !stop && *q; q++)
            if (q > u && !strncmp(q, lit, litlen)) stop = q;
        if (!stop || stop == u || (!reserved && strcspn(u, "/?#") < (size_t)(stop - u))) return false;
        u = stop;
        t = lit;
    }
    return !*u;
}

/* Whether a resources/read of the downstream's uri is in the entry's selection: every URI
 * under `all`, else a named URI or one matching a named template. */
static bool readable(json_t *res, const char *uri, json_t **sel) {
    if (selected_uri(res, uri, sel)) return true;
    size_t i;
    json_t *s;
    json_array_foreach(res, i, s) {
        const char *t = json_string_value(json_object_get(s, "uri"));
        if (strchr(t, '{') && template_matches(t, uri)) return *sel = s, true;
    }
    return false;
}

/* The entry whose uri_prefix the URI starts with, and the downstream's URI (a pointer into
 * uri); NULL when none proxies it. */
static json_t *route_uri(const gg_graph *g, const char *uri, const char **orig) {
    size_t i;
    json_t *e;
    json_array_foreach(g->px_extras, i, e) {
        const char *p = json_string_value(json_object_get(e, "uri_prefix"));
        if (json_object_get(e, "res") && has_prefix(uri, p)) {
            *orig = uri + strlen(p);
            return e;
        }
    }
    return NULL;
}

/* The entry serving the listed prompt name, its downstream name and its selection item. */
static json_t *route_prompt(const gg_graph *g, const char *name, const char **orig, json_t **sel) {
    size_t i;
    json_t *e;
    *sel = NULL;
    json_array_foreach(g->px_extras, i, e) {
        json_t *prm = json_object_get(e, "prm");
        const char *p = json_string_value(json_object_get(e, "prefix"));
        if (json_is_object(prm) && (*sel = json_object_get(prm, name))) {
            *orig = json_string_value(json_object_get(*sel, "name"));
            return e;
        }
        if (json_is_string(prm) && has_prefix(name, p) && name[strlen(p)]) {
            *orig = name + strlen(p);
            return e;
        }
    }
    return NULL;
}

/* ---- cursors ---- */

static char *cursor_make(size_t seg, const char *dc) {
    char raw[PX_MAX_CURSOR + 32];
    int n = snprintf(raw, sizeof raw, "%zu\n%s", seg, dc ? dc : "");
    size_t cap = sodium_base64_ENCODED_LEN((size_t)n, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    char *out = malloc(cap);
    if (out) sodium_bin2base64(out, cap, (const unsigned char *)raw, (size_t)n, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    return out;
}

/* A cursor we handed out: its segment (>= 1) and downstream cursor ("" = from the start). */
static bool cursor_read(const char *cur, size_t *seg, char *dc, size_t dcn) {
    unsigned char raw[PX_MAX_CURSOR + 32];
    size_t len = 0;
    if (strlen(cur) > sodium_base64_ENCODED_LEN(sizeof raw - 1, sodium_base64_VARIANT_URLSAFE_NO_PADDING) ||
        sodium_base642bin(raw, sizeof raw - 1, cur, strlen(cur), NULL, &len, NULL, sodium_base64_VARIANT_URLSAFE_NO_PADDING))
        return false;
    raw[len] = 0;
    char *nl = strchr((char *)raw, '\n'), *end;
    if (!nl || memchr(raw, 0, len)) return false;
    unsigned long s = strtoul((char *)raw, &end, 10);
    if (end != nl || s < 1 || s > 64) return false;
    *seg = s;
    snprintf(dc, dcn, "%s", nl + 1);
    return true;
}

/* The n-th (1-based) entry that lists this kind, or NULL. */
static json_t *segment(const gg_graph *g, const char *sel_key, size_t n) {
    size_t i, k = 0;
    json_t *e;
    json_array_foreach(g->px_extras, i, e) if (json_object_get(e, sel_key) && ++k == n) return e;
    return NULL;
}

/* ---- checking and shaping a downstream answer ---- */

/* A list page: its items checked, the selected ones renamed; NULL after fail(). */
static json_t *shaped_list(freq *q, const char *server) {
    json_t *items = json_object_get(q->result, q->list_key);
    bool prompts = !strcmp(q->list_key, "prompts"), templates = !strcmp(q->list_key, "resourceTemplates");
    const char *idkey = prompts ? "name" : templates ? "uriTemplate" : "uri";
    if (!json_is_array(items)) {
        fail(q, "downstream_invalid", "server '%s' answered %s without a %s array", server, q->method, q->list_key);
        return NULL;
    }
    if (json_array_size(items) > PX_MAX_ITEMS) {
        fail(q, "downstream_invalid", "server '%s' answered %s with %zu items in one page (at most %d)", server, q->method,
             json_array_size(items), PX_MAX_ITEMS);
        return NULL;
    }
    json_t *out = json_array(), *sel_all = json_object_get(q->entry, prompts ? "prm" : "res");
    if (!out) {
        fail(q, "oom", "out of memory");
        return NULL;
    }
    const char *up = json_string_value(json_object_get(q->entry, "uri_prefix"));
    const char *pp = json_string_value(json_object_get(q->entry, "prefix"));
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it) {
        const char *id = key_str(it, idkey);
        if (!json_is_object(it) || !id) {
            json_decref(out);
            fail(q, "downstream_invalid", "server '%s' answered %s with a malformed item: %s[%zu] has no %s (a string of 1-%d bytes)",
                 server, q->method, q->list_key, i, idkey, PX_MAX_KEY);
            return NULL;
        }
        if (!prompts) {
            json_t *sel = NULL;
            if (!selected_uri(sel_all, id, &sel)) continue;
            json_t *c = json_copy(it);
            size_t n = strlen(up) + strlen(id) + 1;
            char *u = malloc(n);
            if (!c || !u) {
                json_decref(c);
                free(u);
                continue;
            }
            snprintf(u, n, "%s%s", up, id);
            json_object_set_new(c, idkey, json_string(u));
            free(u);
            if (sel) {
                json_t *t = json_object_get(sel, "title"), *dsc = json_object_get(sel, "description");
                if (t) json_object_set(c, "title", t);
                if (dsc) json_object_set(c, "description", dsc);
            }
            json_array_append_new(out, c);
            continue;
        }
        /* prompts: each listed name that selects this one (an explicit list may rename it twice) */
        if (json_is_string(sel_all)) {
            char name[160];
            if (snprintf(name, sizeof name, "%s%s", pp, id) >= (int)sizeof name || !gg_graph_tool_name_ok(name)) continue;
            json_t *c = json_copy(it);
            if (c) json_object_set_new(c, "name", json_string(name));
            if (c) json_array_append_new(out, c);
            continue;
        }
        const char *ours;
        json_t *sel;
        json_object_foreach(sel_all, ours, sel) {
            if (strcmp(json_string_value(json_object_get(sel, "name")), id)) continue;
            json_t *c = json_copy(it);
            if (!c) continue;
            json_object_set_new(c, "name", json_string(ours));
            json_t *t = json_object_get(sel, "title"), *dsc = json_object_get(sel, "description");
            if (t) json_object_set(c, "title", t);
            if (dsc) json_object_set(c, "description", dsc);
            json_array_append_new(out, c);
        }
    }
    return out;
}

/* The graph's own items take precedence: a proxied one listed under the same name or URI
 * would never be reached, so it is left out. */
static void drop_shadowed(json_t *list, json_t *own, const char *idkey) {
    for (size_t i = json_array_size(list); i-- > 0;) {
        const char *id = json_string_value(json_object_get(json_array_get(list, i), idkey));
        size_t j;
        json_t *o;
        json_array_foreach(own, j, o) {
            const char *mine = json_string_value(json_object_get(o, idkey));
            if (id && mine && !strcmp(id, mine)) {
                json_array_remove(list, i);
                break;
            }
        }
    }
}

static void finish_list(freq *q, const char *server) {
    const char *dnext = json_string_value(json_object_get(q->result, "nextCursor"));
    json_t *nc = json_object_get(q->result, "nextCursor");
    if ((nc && !json_is_null(nc) && !dnext) || (dnext && strlen(dnext) > PX_MAX_CURSOR)) {
        fail(q, "downstream_invalid", "server '%s' answered %s with a nextCursor that is not a string of at most %d bytes", server,
             q->method, PX_MAX_CURSOR);
        return;
    }
    json_t *items = shaped_list(q, server);
    if (!items) return;
    bool prompts = !strcmp(q->list_key, "prompts");
    drop_shadowed(items, q->mine, prompts ? "name" : !strcmp(q->list_key, "resourceTemplates") ? "uriTemplate" : "uri");
    if (q->own) { /* the first page: the graph's own items first */
        json_array_extend(q->own, items);
        json_decref(items);
        items = json_incref(q->own);
    }
    char *next = NULL;
    if (dnext && *dnext) next = cursor_make(q->seg, dnext);
    else if (segment(q->g, prompts ? "prm" : "res", q->seg + 1)) next = cursor_make(q->seg + 1, "");
    json_t *res = json_pack("{s:o}", q->list_key, items);
    if (res && next) json_object_set_new(res, "nextCursor", json_string(next));
    free(next);
    freq_end(q, res);
}

static void finish_read(freq *q, const char *server) {
    json_t *contents = json_object_get(q->result, "contents");
    if (!json_is_array(contents) || json_array_size(contents) > PX_MAX_ITEMS) {
        fail(q, "downstream_invalid", "server '%s' answered resources/read without a contents array of at most %d items", server,
             PX_MAX_ITEMS);
        return;
    }
    const char *up = json_string_value(json_object_get(q->entry, "uri_prefix"));
    json_t *out = json_array();
    size_t i;
    json_t *c;
    json_array_foreach(contents, i, c) {
        const char *u = key_str(c, "uri");
        bool text = json_is_string(json_object_get(c, "text")), blob = json_is_string(json_object_get(c, "blob"));
        json_t *mt = json_object_get(c, "mimeType");
        if (!json_is_object(c) || !u || text == blob || (mt && !json_is_string(mt))) {
            json_decref(out);
            fail(q, "downstream_invalid",
                 "server '%s' answered resources/read with a malformed item: contents[%zu] needs a uri and either text or blob "
                 "(strings)", server, i);
            return;
        }
        json_t *cc = json_copy(c);
        size_t n = strlen(up) + strlen(u) + 1;
        char *uu = malloc(n);
        if (cc && uu) {
            snprintf(uu, n, "%s%s", up, u);
            json_object_set_new(cc, "uri", json_string(uu));
            json_array_append(out, cc);
        }
        json_decref(cc);
        free(uu);
    }
    json_t *res = json_pack("{s:o}", "contents", out);
    freq_end(q, res);
}

static void finish_get(freq *q, const char *server) {
    json_t *msgs = json_object_get(q->result, "messages"), *desc = json_object_get(q->result, "description");
    if (!json_is_array(msgs) || json_array_size(msgs) > PX_MAX_MESSAGES || (desc && !json_is_string(desc))) {
        fail(q, "downstream_invalid", "server '%s' answered prompts/get without a messages array of at most %d items", server,
             PX_MAX_MESSAGES);
        return;
    }
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m) {
        const char *role = json_string_value(json_object_get(m, "role"));
        json_t *content = json_object_get(m, "content");
        if (!role || (strcmp(role, "user") && strcmp(role, "assistant")) || !json_is_object(content) ||
            !json_is_string(json_object_get(content, "type"))) {
            fail(q, "downstream_invalid",
                 "server '%s' answered prompts/get with a malformed item: messages[%zu] needs role user|assistant and a content "
                 "object with a type", server, i);
            return;
        }
    }
    json_t *res = json_pack("{s:O}", "messages", msgs);
    json_t *over = json_object_get(q->sel, "description");
    if (res && (over || desc)) json_object_set(res, "description", over ? over : desc);
    freq_end(q, res);
}

static void finish_complete(freq *q, const char *server) {
    json_t *c = json_object_get(q->result, "completion"), *vals = json_object_get(c, "values");
    json_t *total = json_object_get(c, "total"), *more = json_object_get(c, "hasMore");
    bool ok = json_is_array(vals) && json_array_size(vals) <= PX_MAX_COMPLETIONS && (!total || json_is_integer(total)) &&
              (!more || json_is_boolean(more));
    size_t i;
    json_t *v;
    json_array_foreach(vals, i, v) if (!json_is_string(v) || json_string_length(v) > PX_MAX_KEY) ok = false;
    if (!ok) {
        fail(q, "downstream_invalid",
             "server '%s' answered completion/complete without a completion {values: at most %d strings, total?, hasMore?}", server,
             PX_MAX_COMPLETIONS);
        return;
    }
    json_t *out = json_pack("{s:O}", "values", vals);
    if (out && total) json_object_set(out, "total", total);
    if (out && more) json_object_set(out, "hasMore", more);
    freq_end(q, json_pack("{s:o}", "completion", out));
}

static void subscribe_step(void *arg);

/* On a worker (or the transport's thread without a resume hook): check and shape. */
static void fstep(void *arg) {
    freq *q = arg;
    if (q->probing) { /* the downstream's capabilities were being learnt */
        subscribe_step(q);
        return;
    }
    const char *server = json_string_value(json_object_get(q->entry, "server"));
    if (gg_error_is_set(&q->err)) {
        int code = 0;
        /* the downstream's "no such resource" stays one for the client */
        if (!strcmp(q->err.code, "mcp_error") && q->err.message && sscanf(q->err.message, "MCP error %d", &code) == 1 &&
            (q->kind == F_READ || q->kind == F_SUBSCRIBE) && (code == -32002 || code == -32602)) {
            fail(q, "not_found", "Resource not found: %.300s", q->asked);
            return;
        }
        if (!strcmp(q->err.code, "cancelled")) {
            freq_end(q, NULL);
            return;
        }
        if (!strcmp(q->err.code, "url_elicitation_required") || !strcmp(q->err.code, "principal_required")) {
            gg_error_set_path(&q->err, server); /* the provider asks for consent to it (provider.c) */
            freq_end(q, NULL);
            return;
        }
        if (q->kind == F_SUBSCRIBE && code == -32601) { /* it declares no resources.subscribe */
            fail(q, "invalid_params", "server '%s' does not support resource subscriptions", server);
            return;
        }
        fail(q, !strcmp(q->err.code, "mcp_error") && code == -32602 ? "invalid_params" : q->err.code, "server '%s': %s", server,
             q->err.message ? q->err.message : q->err.code);
        return;
    }
    if (!json_is_object(q->result)) {
        fail(q, "downstream_invalid", "server '%s' answered %s with a result that is not an object", server, q->method);
        return;
    }
    switch (q->kind) {
    case F_LIST: finish_list(q, server); break;
    case F_READ: finish_read(q, server); break;
    case F_GET: finish_get(q, server); break;
    case F_COMPLETE: finish_complete(q, server); break;
    case F_SUBSCRIBE: freq_end(q, json_object()); break;
    }
}

/* The downstream's answer (its transport's thread: must not block). */
static void fanswered(void *user, json_t *result, gg_error *err) {
    freq *q = user;
    gserver *s = gg_graph_server_named(q->g, json_string_value(json_object_get(q->entry, "server")));
    bool redact = s && s->nsecrets; /* a server using secrets gets its answers redacted */
    q->result = result ? (redact ? gg_graph_secrets_redact(s, result) : json_incref(result)) : NULL;
    if (err && gg_error_is_set(err)) {
        if (redact) gg_graph_secrets_redact_error(s, err);
        gg_error_move(&q->err, err);
    } else if (!result && !q->probing) { /* a probe's success has no result */
        gg_error_set(&q->err, "transport", "no answer");
    }
    if (q->ctx && q->ctx->run.resume) q->ctx->run.resume(q->ctx->run.resume_user, fstep, q);
    else fstep(q);
}

static void fsend(freq *q, json_t *params) {
    const char *server = json_string_value(json_object_get(q->entry, "server"));
    gserver *s = gg_graph_server_named(q->g, server);
    gg_error e = GG_ERROR_INIT;
    /* a server acting for each caller answers with the caller's own grant or token, as a
     * tools call does (consent asked the same way: provider.c) */
    bool held = false;
    mcp_client *c = !s ? NULL
                    : s->per_user || s->for_caller ? gg_graph_caller_client(s, q->ctx, &held, &e)
                                                   : gg_graph_server_client(s, q->g->policy, &e);
    if (held) {
        q->held_server = s;
        q->held = c;
    }
    if (!c) {
        if (!s) gg_error_set(&e, "internal_error", "server '%s' is not defined", server);
        gg_error_move(&q->err, &e);
        json_decref(params);
        fstep(q);
        return;
    }
    mcp_client_start(c, q->method, params, 0, q->ctx ? q->ctx->run.cancelled : NULL, fanswered, q);
    json_decref(params);
}

/* params with key's ref member replaced by val (a copy; ref.* for completion/complete). */
static json_t *with_ref(json_t *params, const char *key, const char *val) {
    json_t *p = gg_json_clone(params);
    json_t *ref = json_object_get(p, "ref");
    if (ref) json_object_set_new(ref, key, json_string(val));
    json_object_del(p, "_meta"); /* the caller's progress token and trace are not the downstream's */
    return p;
}

static void start_list(freq *q, json_t *params) {
    bool prompts = !strcmp(q->method, "prompts/list");
    q->kind = F_LIST;
    q->list_key = prompts ? "prompts" : !strcmp(q->method, "resources/list") ? "resources" : "resourceTemplates";
    json_t *cur = json_object_get(params, "cursor");
    char dc[PX_MAX_CURSOR + 1] = "";
    q->seg = 1;
    if (cur && !json_is_null(cur) && (!json_is_string(cur) || !cursor_read(json_string_value(cur), &q->seg, dc, sizeof dc))) {
        fail(q, "invalid_params", "Invalid params: unknown cursor");
        return;
    }
    q->mine = prompts ? q->g->prompts_json : !strcmp(q->list_key, "resources") ? q->g->resources_json : q->g->templates_json;
    if (!cur || json_is_null(cur)) /* the first page: the graph's own items first */
        q->own = json_is_array(q->mine) ? json_copy(q->mine) : json_array();
    if (!(q->entry = segment(q->g, prompts ? "prm" : "res", q->seg))) {
        fail(q, "invalid_params", "Invalid params: unknown cursor");
        return;
    }
    fsend(q, *dc ? json_pack("{s:s}", "cursor", dc) : json_object());
}

/* q (of kind) asks for params.uri: true with *orig the downstream's URI when a selected
 * entry serves it, else q fails with -32002 (resources/read and subscribe alike). */
static bool route_selected(freq *q, json_t *params, fkind kind, const char **orig) {
    const char *uri = json_string_value(json_object_get(params, "uri"));
    json_t *sel = NULL;
    q->kind = kind;
    q->asked = strdup(uri ? uri : "");
    *orig = NULL;
    if (!q->asked || !uri || !(q->entry = route_uri(q->g, uri, orig)) || !**orig ||
        !readable(json_object_get(q->entry, "res"), *orig, &sel)) {
        fail(q, "not_found", "Resource not found: %.300s", uri ? uri : "");
        return false;
    }
    return true;
}

static void start_read(freq *q, json_t *params) {
    const char *orig;
    if (route_selected(q, params, F_READ, &orig)) fsend(q, json_pack("{s:s}", "uri", orig));
}

/* resources/subscribe of a selected proxied URI goes to its downstream, every time (a
 * subscription is idempotent there; nothing is counted here). resources/unsubscribe is
 * answered here: the downstream is told once an update of the URI finds no client left
 * subscribed to it (gg_graph_proxy_unsubscribe), which covers sessions that ended too. */
static void start_subscribe(freq *q, json_t *params) {
    const char *orig;
    if (!route_selected(q, params, F_SUBSCRIBE, &orig)) return;
    if (strcmp(q->method, "resources/subscribe")) freq_end(q, json_object());
    else if (!(q->orig = strdup(orig))) fail(q, "oom", "out of memory");
    else subscribe_step(q);
}

/* A subscription is asked of a downstream only when it declared resources.subscribe: one
 * that declared otherwise is refused here, unasked. Before its capabilities are known (no
 * session yet, a stateless server not discovered) they are learnt first (a ping or
 * server/discover, once); a stateless server that cannot tell is asked anyway, and its
 * -32601 still reads as no support (fstep). Runs where fstep runs. */
static void subscribe_step(void *arg) {
    freq *q = arg;
    const char *server = json_string_value(json_object_get(q->entry, "server"));
    bool probed = q->probing;
    q->probing = false;
    if (gg_error_is_set(&q->err)) {
        if (strcmp(q->err.code, "mcp_error")) { /* unreachable, cancelled, ...: said as for the request */
            fstep(q);
            return;
        }
        gg_error_clear(&q->err);
    }
    gserver *s = gg_graph_server_named(q->g, server);
    gg_error e = GG_ERROR_INIT;
    mcp_client *c = s ? gg_graph_server_client(s, q->g->policy, &e) : NULL;
    gg_error_clear(&e);
    mcp_declares d = c ? mcp_client_server_declares(c, "resources.subscribe") : MCP_DECLARES_UNKNOWN;
    if (d == MCP_DECLARES_NO) {
        fail(q, "invalid_params", "server '%s' does not support resource subscriptions", server);
    } else if (d == MCP_DECLARES_UNKNOWN && c && !probed) {
        q->probing = true;
        mcp_client_declared_start(c, NULL /* a ping or server/discover: its timeout bounds it */, fanswered, q);
    } else {
        fsend(q, json_pack("{s:s}", "uri", q->orig)); /* fsend says why when there is no client */
    }
}

/* See internal.h. */
bool gg_graph_proxy_client_uri(const gg_graph *g, const char *server, const char *uri, char *out, size_t n) {
    size_t i;
    json_t *e, *sel;
    if (!uri || !*uri || strlen(uri) > PX_MAX_KEY) return false;
    json_array_foreach(g->px_extras, i, e) {
        const char *p = json_string_value(json_object_get(e, "uri_prefix"));
        json_t *res = json_object_get(e, "res");
        if (res && !strcmp(json_string_value(json_object_get(e, "server")), server) && readable(res, uri, &sel))
            return snprintf(out, n, "%s%s", p ? p : "", uri) < (int)n;
    }
    return false;
}

static void unsubscribed(void *user, json_t *result, gg_error *err) { (void)user, (void)result, (void)err; }

/* method (resources/subscribe or unsubscribe) of the downstream's uri to server s, its
 * answer not awaited. */
static void tell_downstream(gg_graph *g, gserver *s, const char *method, const char *uri) {
    gg_error err = GG_ERROR_INIT;
    mcp_client *c = s ? gg_graph_server_client(s, g->policy, &err) : NULL;
    gg_error_clear(&err);
    json_t *p = c ? json_pack("{s:s}", "uri", uri) : NULL;
    if (p) mcp_client_start(c, method, p, 0, NULL, unsubscribed, NULL);
    json_decref(p);
}

/* See graph.h. */
bool gg_graph_proxy_subscribe(gg_graph *g, const char *uri) {
    const char *orig = NULL;
    json_t *sel = NULL, *e = uri && strlen(uri) <= PX_MAX_KEY ? route_uri(g, uri, &orig) : NULL;
    if (!e || !*orig || !readable(json_object_get(e, "res"), orig, &sel)) return false;
    /* answered nowhere: a refusal leaves the URI subscribed here, unused, as in the session era;
     * a downstream known to declare no resources.subscribe is not asked at all */
    gserver *s = gg_graph_server_named(g, json_string_value(json_object_get(e, "server")));
    gg_error err = GG_ERROR_INIT;
    mcp_client *c = s ? gg_graph_server_client(s, g->policy, &err) : NULL;
    gg_error_clear(&err);
    if (c && mcp_client_server_declares(c, "resources.subscribe") != MCP_DECLARES_NO)
        tell_downstream(g, s, "resources/subscribe", orig);
    return true;
}

/* See graph.h. */
void gg_graph_proxy_unsubscribe(gg_graph *g, const char *uri) {
    const char *orig = NULL;
    json_t *e = uri ? route_uri(g, uri, &orig) : NULL;
    gserver *s = e ? gg_graph_server_named(g, json_string_value(json_object_get(e, "server"))) : NULL;
    bool live = false; /* a server not started holds no subscription: none is started for this */
    if (s && *orig) {
        pthread_mutex_lock(&s->lock);
        live = s->client || s->nsecrets;
        pthread_mutex_unlock(&s->lock);
    }
    if (live) tell_downstream(g, s, "resources/unsubscribe", orig);
}

static void start_get(freq *q, json_t *params) {
    const char *name = json_string_value(json_object_get(params, "name")), *orig = NULL;
    q->kind = F_GET;
    if (!name || !(q->entry = route_prompt(q->g, name, &orig, &q->sel))) {
        fail(q, "invalid_params", "Unknown prompt: %.300s", name ? name : "");
        return;
    }
    json_t *p = json_pack("{s:s}", "name", orig), *args = json_object_get(params, "arguments");
    if (p && args) json_object_set(p, "arguments", args);
    fsend(q, p);
}

static void start_complete(freq *q, json_t *params) {
    json_t *ref = json_object_get(params, "ref");
    const char *type = json_string_value(json_object_get(ref, "type")), *orig = NULL;
    q->kind = F_COMPLETE;
    json_t *sel = NULL;
    if (type && !strcmp(type, "ref/prompt")) {
        const char *name = json_string_value(json_object_get(ref, "name"));
        if (name && (q->entry = route_prompt(q->g, name, &orig, &sel))) {
            fsend(q, with_ref(params, "name", orig));
            return;
        }
    } else if (type && !strcmp(type, "ref/resource")) {
        const char *uri = json_string_value(json_object_get(ref, "uri"));
        if (uri && (q->entry = route_uri(q->g, uri, &orig)) && *orig && selected_uri(json_object_get(q->entry, "res"), orig, &sel)) {
            fsend(q, with_ref(params, "uri", orig));
            return;
        }
    }
    /* nothing declared here and nothing proxied: no suggestions, as for the graph's own */
    freq_end(q, json_pack("{s:{s:[],s:i,s:b}}", "completion", "values", "total", 0, "hasMore", 0));
}

/* See internal.h: answer one request of the forwarded kinds through the downstream. */
void gg_graph_forward(gg_graph *g, const char *method, json_t *params, const mcp_call_ctx *ctx, mcp_provider_done_fn done,
                      void *user) {
    freq *q = calloc(1, sizeof *q);
    if (!q) {
        gg_error e = GG_ERROR_INIT;
        gg_error_set(&e, "oom", "out of memory");
        done(user, NULL, &e);
        gg_error_clear(&e);
        return;
    }
    q->g = gg_graph_ref(g);
    q->ctx = ctx;
    q->done = done;
    q->user = user;
    q->err = (gg_error)GG_ERROR_INIT;
    snprintf(q->method, sizeof q->method, "%s", method);
    if (!strcmp(method, "resources/list") || !strcmp(method, "resources/templates/list") || !strcmp(method, "prompts/list"))
        start_list(q, params);
    else if (!strcmp(method, "resources/read")) start_read(q, params);
    else if (!strcmp(method, "prompts/get")) start_get(q, params);
    else if (!strcmp(method, "resources/subscribe") || !strcmp(method, "resources/unsubscribe")) start_subscribe(q, params);
    else if (!strcmp(method, "completion/complete")) start_complete(q, params);
    else fail(q, "invalid_params", "Method not found: %.100s", method);
}
