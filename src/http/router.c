/* router.c — the route table: a segment trie (literal children + one {param} child per
 * node) with per-listener, per-method handlers at the nodes. Lookup walks literal children
 * first and backtracks into the {param} child, so literals win without shadowing. */
#include "http/http.h"

#include <stdlib.h>
#include <string.h>

#define MAX_ROUTES 512

typedef struct route {
    char method[16];
    unsigned listeners;
    gg_http_handler fn;
    void *user;
    char *pattern;
    int index;
    size_t nparams;
    char *param_names[GG_HTTP_MAX_PARAMS];
} route;

typedef struct node {
    char *literal;            /* NULL for the root and the {param} child */
    size_t literal_len;       /* strlen(literal), kept for the per-request walk */
    struct node **children;   /* literal children */
    size_t nchildren;
    struct node *param;       /* the {param} child, if any */
    route **routes;           /* routes ending at this node */
    size_t nroutes;
} node;

struct gg_router {
    node root;
    route *all[MAX_ROUTES];   /* by index, for metrics labels */
    int count;
};

gg_router *gg_router_new(void) { return calloc(1, sizeof(gg_router)); }

static void route_free(route *rt) {
    if (!rt) return;
    free(rt->pattern);
    for (size_t i = 0; i < rt->nparams; i++) free(rt->param_names[i]);
    free(rt);
}

static void node_clear(node *n) {
    for (size_t i = 0; i < n->nchildren; i++) {
        node_clear(n->children[i]);
        free(n->children[i]);
    }
    free(n->children);
    if (n->param) {
        node_clear(n->param);
        free(n->param);
    }
    free(n->routes); /* the routes themselves are owned by gg_router.all */
    free(n->literal);
}

/* Free the table and every route in it. */
void gg_router_free(gg_router *r) {
    if (!r) return;
    node_clear(&r->root);
    for (int i = 0; i < r->count; i++) route_free(r->all[i]);
    free(r);
}

static bool valid_method(const char *m) {
    size_t n = strlen(m);
    if (n == 0 || n >= sizeof(((route *)0)->method)) return false;
    for (size_t i = 0; i < n; i++)
        if (m[i] < 'A' || m[i] > 'Z') return false;
    return true;
}

static bool is_param_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Literal segments may hold any printable byte except the pattern syntax and '/'. */
static bool valid_literal(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= ' ' || c == '{' || c == '}' || c == 0x7f) return false;
    }
    return true;
}

static node *child_literal(node *n, const char *seg, size_t len, bool create) {
    for (size_t i = 0; i < n->nchildren; i++) {
        node *c = n->children[i];
        if (c->literal_len == len && memcmp(c->literal, seg, len) == 0) return c;
    }
    if (!create) return NULL;
    node **grown = realloc(n->children, (n->nchildren + 1) * sizeof *grown);
    if (!grown) return NULL;
    n->children = grown;
    node *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->literal = strndup(seg, len);
    c->literal_len = len;
    if (!c->literal) {
        free(c);
        return NULL;
    }
    n->children[n->nchildren++] = c;
    return c;
}

static node *child_param(node *n) {
    if (!n->param) n->param = calloc(1, sizeof(node));
    return n->param;
}

/* Register a route; see http.h for the pattern syntax and the precedence rule. */
bool gg_router_add(gg_router *r, unsigned listeners, const char *method, const char *pattern,
                   gg_http_handler fn, void *user, gg_error *err) {
    if (!r || !method || !pattern || !fn || (listeners & GG_LISTENER_BOTH) == 0) {
        gg_error_set(err, "invalid_route", "route needs a method, a pattern, a handler and a listener");
        return false;
    }
    if (!valid_method(method)) {
        gg_error_set(err, "invalid_route", "invalid HTTP method '%s'", method);
        return false;
    }
    if (pattern[0] != '/' || strlen(pattern) >= GG_HTTP_MAX_PATH) {
        gg_error_set(err, "invalid_route", "route pattern '%s' must be an absolute path", pattern);
        return false;
    }
    if (r->count >= MAX_ROUTES) {
        gg_error_set(err, "invalid_route", "too many routes (max %d)", MAX_ROUTES);
        return false;
    }
    route *rt = calloc(1, sizeof *rt);
    if (!rt || !(rt->pattern = strdup(pattern))) {
        free(rt);
        gg_error_set(err, "oom", "out of memory registering a route");
        return false;
    }
    strcpy(rt->method, method);
    rt->listeners = listeners & GG_LISTENER_BOTH;
    rt->fn = fn;
    rt->user = user;

    node *n = &r->root;
    const char *p = pattern + 1;
    int depth = 0;
    while (*p) {
        const char *end = strchr(p, '/');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 0 || ++depth > GG_HTTP_MAX_SEGMENTS) {
            gg_error_set(err, "invalid_route", "route pattern '%s' has an empty segment or is too deep", pattern);
            goto fail;
        }
        if (p[0] == '{') {
            if (len < 3 || p[len - 1] != '}' || rt->nparams >= GG_HTTP_MAX_PARAMS) {
                gg_error_set(err, "invalid_route", "bad parameter segment in '%s'", pattern);
                goto fail;
            }
            for (size_t i = 1; i + 1 < len; i++)
                if (!is_param_char(p[i])) {
                    gg_error_set(err, "invalid_route", "bad parameter name in '%s'", pattern);
                    goto fail;
                }
            for (size_t i = 0; i < rt->nparams; i++)
                if (strlen(rt->param_names[i]) == len - 2 && memcmp(rt->param_names[i], p + 1, len - 2) == 0) {
                    gg_error_set(err, "invalid_route", "duplicate parameter name in '%s'", pattern);
                    goto fail;
                }
            if (!(rt->param_names[rt->nparams] = strndup(p + 1, len - 2))) goto oom;
            rt->nparams++;
            n = child_param(n);
        } else {
            if (!valid_literal(p, len)) {
                gg_error_set(err, "invalid_route", "bad literal segment in '%s'", pattern);
                goto fail;
            }
            n = child_literal(n, p, len, true);
        }
        if (!n) goto oom;
        p += len;
        if (*p == '/') {
            p++;
            if (!*p) {
                gg_error_set(err, "invalid_route", "route pattern '%s' has a trailing slash", pattern);
                goto fail;
            }
        }
    }
    for (size_t i = 0; i < n->nroutes; i++)
        if (strcmp(n->routes[i]->method, method) == 0 && (n->routes[i]->listeners & rt->listeners)) {
            gg_error_set(err, "route_conflict", "%s %s is already registered on that listener (as %s)",
                         method, pattern, n->routes[i]->pattern);
            goto fail;
        }
    route **grown = realloc(n->routes, (n->nroutes + 1) * sizeof *grown);
    if (!grown) goto oom;
    n->routes = grown;
    n->routes[n->nroutes++] = rt;
    rt->index = r->count;
    r->all[r->count++] = rt;
    return true;
oom:
    gg_error_set(err, "oom", "out of memory registering a route");
fail:
    route_free(rt);
    return false;
}

typedef struct walk {
    const char *segs[GG_HTTP_MAX_SEGMENTS];
    size_t lens[GG_HTTP_MAX_SEGMENTS];
    size_t nsegs;
    const char *vals[GG_HTTP_MAX_PARAMS]; /* param values in pattern order */
    size_t vlens[GG_HTTP_MAX_PARAMS];
    unsigned listener;
    const char *method;
    bool want_method; /* false: any route on the listener ends the walk (405 search) */
} walk;

static route *node_route(const node *n, const walk *w) {
    for (size_t i = 0; i < n->nroutes; i++) {
        route *rt = n->routes[i];
        if (!(rt->listeners & w->listener)) continue;
        if (!w->want_method || strcmp(rt->method, w->method) == 0) return rt;
    }
    return NULL;
}

/* Depth-first, literal child before the {param} child; returns the end node's route. */
static route *walk_node(const node *n, walk *w, size_t depth, size_t nvals, const node **end) {
    if (depth == w->nsegs) {
        route *rt = node_route(n, w);
        if (rt) *end = n;
        return rt;
    }
    const node *c = NULL;
    for (size_t i = 0; i < n->nchildren; i++) {
        const node *k = n->children[i];
        if (k->literal_len == w->lens[depth] && memcmp(k->literal, w->segs[depth], w->lens[depth]) == 0) {
            c = k;
            break;
        }
    }
    if (c) {
        route *rt = walk_node(c, w, depth + 1, nvals, end);
        if (rt) return rt;
    }
    if (n->param && w->lens[depth] > 0 && w->lens[depth] < 256 && nvals < GG_HTTP_MAX_PARAMS) {
        w->vals[nvals] = w->segs[depth];
        w->vlens[nvals] = w->lens[depth];
        return walk_node(n->param, w, depth + 1, nvals + 1, end);
    }
    return NULL;
}

static void fill_match(const route *rt, const walk *w, gg_route_match *m) {
    m->status = 200;
    m->fn = rt->fn;
    m->user = rt->user;
    m->pattern = rt->pattern;
    m->route_index = rt->index;
    m->nparams = rt->nparams;
    for (size_t i = 0; i < rt->nparams; i++) {
        m->params[i].name = rt->param_names[i];
        memcpy(m->params[i].value, w->vals[i], w->vlens[i]);
        m->params[i].value[w->vlens[i]] = '\0';
    }
}

/* Look a request up; see http.h. */
void gg_router_match(const gg_router *r, gg_listener listener, const char *method,
                     const char *path, gg_route_match *m) {
    m->status = 404;
    m->fn = NULL;
    m->user = NULL;
    m->pattern = NULL;
    m->route_index = -1;
    m->allow[0] = '\0';
    m->nparams = 0;
    if (!r || !path || path[0] != '/' || !method) return;

    walk w;
    w.nsegs = 0;
    w.listener = (unsigned)listener;
    w.method = method;
    const char *p = path + 1;
    if (*p) {
        for (;;) {
            if (w.nsegs == GG_HTTP_MAX_SEGMENTS) return; /* deeper than any route */
            const char *end = strchr(p, '/');
            size_t len = end ? (size_t)(end - p) : strlen(p);
            w.segs[w.nsegs] = p;
            w.lens[w.nsegs++] = len;
            if (!end) break;
            p = end + 1;
        }
    }
    const node *end = NULL;
    w.want_method = true;
    route *rt = walk_node(&r->root, &w, 0, 0, &end);
    if (!rt && strcmp(method, "HEAD") == 0) {
        w.method = "GET";
        rt = walk_node(&r->root, &w, 0, 0, &end);
    }
    if (rt) {
        fill_match(rt, &w, m);
        return;
    }
    /* No route for this method: 405 when the path exists on this listener. */
    w.want_method = false;
    end = NULL;
    if (!walk_node(&r->root, &w, 0, 0, &end) || !end) return;
    m->status = 405;
    size_t used = 0;
    bool get = false, head = false;
    for (size_t i = 0; i < end->nroutes; i++) {
        const route *x = end->routes[i];
        if (!(x->listeners & w.listener)) continue;
        if (strcmp(x->method, "GET") == 0) get = true;
        if (strcmp(x->method, "HEAD") == 0) head = true;
        size_t need = strlen(x->method) + (used ? 2 : 0);
        if (used + need + 1 > sizeof m->allow) break;
        if (used) memcpy(m->allow + used, ", ", 2), used += 2;
        memcpy(m->allow + used, x->method, strlen(x->method));
        used += strlen(x->method);
        m->allow[used] = '\0';
    }
    if (get && !head && used + 7 < sizeof m->allow) {
        memcpy(m->allow + used, ", HEAD", 7);
    }
}

/* Number of registered routes. */
int gg_router_count(const gg_router *r) { return r ? r->count : 0; }

/* Pattern of route i, NULL when out of range. */
const char *gg_router_pattern(const gg_router *r, int i) {
    return (r && i >= 0 && i < r->count) ? r->all[i]->pattern : NULL;
}

/* Method of route i, NULL when out of range. */
const char *gg_router_method(const gg_router *r, int i) {
    return (r && i >= 0 && i < r->count) ? r->all[i]->method : NULL;
}

/* Listener mask of route i (gg_listener bits), 0 when out of range. */
unsigned gg_router_listeners(const gg_router *r, int i) {
    return (r && i >= 0 && i < r->count) ? r->all[i]->listeners : 0;
}
