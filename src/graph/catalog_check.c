/* catalog_check.c — a loaded graph's mcp nodes checked against what its downstream servers
 * really offer: each server's tools are listed (every server at once, through the graph's
 * own clients, so the tenant's policy applies and the connection is the one later calls
 * reuse), then every mcp node is checked in the YAML tree, which still has the positions.
 * Runs on the loading thread (an upload thread in the gateway); no thread waits past the
 * listing's timeout, which the clients enforce on their event loop. */
#include "graph/internal.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DOWN_MAX_TOOLS 10000
#define DOWN_DEFAULT_TIMEOUT_MS 10000

int gg_graph_check_mode_parse(const char *s) {
    if (!s) return -1;
    if (!strcmp(s, "error")) return GG_CHECK_ERROR;
    if (!strcmp(s, "warning")) return GG_CHECK_WARNING;
    if (!strcmp(s, "off")) return GG_CHECK_OFF;
    return -1;
}

/* A catalog being gathered page by page: its tools, their bytes and the bound. */
typedef struct gathered {
    json_t *tools;
    size_t bytes, max_bytes;
} gathered;

/* A name a client could not use: NUL or another control character inside (a C string
 * would stop at the NUL, a JSON answer carrying it is unparseable to many clients). */
static bool name_ok(json_t *name) {
    const char *s = json_string_value(name);
    size_t n = json_string_length(name);
    for (size_t i = 0; s && i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) return false;
    return s != NULL;
}

/* Append one tools/list page to c; the next cursor (heap) or NULL. Stops (too_large) at
 * the tool that passes the byte bound, so at most one page past it is ever held. */
static char *take_page(gathered *c, json_t *page, gg_error *err) {
    json_t *list = json_object_get(page, "tools");
    if (!json_is_array(list)) {
        gg_error_set(err, "mcp_error", "tools/list answered without a tools array");
        return NULL;
    }
    size_t i, skipped = 0, max = c->max_bytes ? c->max_bytes : GG_CATALOG_DEFAULT_MAX_BYTES;
    json_t *t;
    json_array_foreach(list, i, t) {
        if (json_array_size(c->tools) >= DOWN_MAX_TOOLS) {
            gg_error_set(err, "too_large", "the server lists more than %d tools", DOWN_MAX_TOOLS);
            return NULL;
        }
        json_t *name = json_object_get(t, "name");
        if (!json_is_string(name)) continue;
        if (!name_ok(name)) {
            skipped++;
            continue;
        }
        c->bytes += json_dumpb(t, NULL, 0, JSON_COMPACT) + 1;
        if (c->bytes > max) {
            gg_error_set(err, "too_large", "the server's tool catalog passes %zu bytes (downstream.max_catalog_bytes)", max);
            return NULL;
        }
        json_array_append(c->tools, t);
    }
    if (skipped) {
        char n[24];
        snprintf(n, sizeof n, "%zu", skipped);
        gg_log(GG_LOG_WARN, "downstream tools whose names hold control characters were skipped", "skipped", n, NULL);
    }
    const char *next = json_string_value(json_object_get(page, "nextCursor"));
    return next && *next ? strdup(next) : NULL;
}

static json_t *page_params(const char *cursor) {
    return cursor ? json_pack("{s:s}", "cursor", cursor) : json_object();
}

json_t *gg_graph_mcp_list_tools(mcp_client *c, int timeout_ms, size_t max_bytes, size_t *bytes, gg_error *err) {
    gathered got = {json_array(), 0, max_bytes};
    char *cursor = NULL;
    for (int page = 0; page < GG_CATALOG_MAX_PAGES; page++) {
        json_t *params = page_params(cursor);
        json_t *res = mcp_client_request(c, "tools/list", params, timeout_ms, NULL, err);
        json_decref(params);
        free(cursor);
        cursor = res ? take_page(&got, res, err) : NULL;
        json_decref(res);
        if (gg_error_is_set(err)) break;
        if (!cursor) {
            if (bytes) *bytes = got.bytes;
            return got.tools;
        }
    }
    free(cursor);
    if (!gg_error_is_set(err)) gg_error_set(err, "too_large", "tools/list has more than %d pages", GG_CATALOG_MAX_PAGES);
    json_decref(got.tools);
    return NULL;
}

/* Hash of the parts (each with its NUL) behind a "kind:" prefix. */
static void identity_of(const char *kind, const char *const *parts, size_t n, char out[GG_GRAPH_IDENTITY_MAX]) {
    crypto_generichash_state st;
    unsigned char h[16];
    crypto_generichash_init(&st, NULL, 0, sizeof h);
    for (size_t i = 0; i < n; i++) {
        const char *p = parts[i] ? parts[i] : "";
        crypto_generichash_update(&st, (const unsigned char *)p, strlen(p) + 1);
    }
    crypto_generichash_final(&st, h, sizeof h);
    char hex[2 * sizeof h + 1];
    sodium_bin2hex(hex, sizeof hex, h, sizeof h);
    snprintf(out, GG_GRAPH_IDENTITY_MAX, "%s:%s", kind, hex);
}

static int cmp_str(const void *a, const void *b) {
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    return strcmp(x ? x : "", y ? y : "");
}

/* stdio: command, args, cwd, then the env names sorted (values may be secrets, and a
 * changed token is still the same server). */
static void stdio_identity(const gserver *s, char out[GG_GRAPH_IDENTITY_MAX]) {
    size_t na = 0, ne = 0;
    while (s->cfg.args && s->cfg.args[na]) na++;
    while (s->cfg.env && s->cfg.env[ne]) ne++;
    size_t n = na + ne + 4, k = 0;
    const char **parts = calloc(n, sizeof *parts);
    char **names = calloc(ne + 1, sizeof *names);
    if (!parts || !names) {
        free(parts);
        free(names);
        identity_of("stdio", &s->cfg.command, 1, out);
        return;
    }
    parts[k++] = s->cfg.command;
    for (size_t i = 0; i < na; i++) parts[k++] = s->cfg.args[i];
    parts[k++] = "\001cwd";
    parts[k++] = s->cfg.cwd;
    parts[k++] = "\001env";
    for (size_t i = 0; i < ne; i++) names[i] = strndup(s->cfg.env[i], strcspn(s->cfg.env[i], "="));
    qsort(names, ne, sizeof *names, cmp_str);
    for (size_t i = 0; i < ne && k < n; i++) parts[k++] = names[i];
    identity_of("stdio", parts, k, out);
    for (size_t i = 0; i < ne; i++) free(names[i]);
    free(names);
    free(parts);
}

void gg_graph_server_identity(const gserver *s, char out[GG_GRAPH_IDENTITY_MAX]) {
    /* the stateless era lists a server's tools its own way (x-mcp-header rules), so it is a
     * catalog of its own; the session era keeps the identity it always had */
    const char *http[] = {s->cfg.url, s->cfg.protocol};
    if (s->cfg.transport == MCP_TRANSPORT_HTTP) identity_of("http", http, s->cfg.protocol ? 2 : 1, out);
    else stdio_identity(s, out);
}

/* ---- listing every server at once ---------------------------------------------------- */

typedef struct fetch_set fetch_set;
typedef struct fetch {
    fetch_set *set;
    gathered got;    /* the tools gathered so far */
    json_t *page;    /* the last answer (new reference) */
    char *cursor;    /* next page to ask for */
    gg_error err;
    bool done;
    long long fetched_ms;
} fetch;

struct fetch_set {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int waiting;
};

static void page_done(void *user, json_t *result, gg_error *err) {
    fetch *f = user;
    pthread_mutex_lock(&f->set->mu);
    f->page = json_incref(result);
    if (err && gg_error_is_set(err)) gg_error_move(&f->err, err);
    else if (!result) gg_error_set(&f->err, "transport", "no answer");
    f->set->waiting--;
    pthread_cond_broadcast(&f->set->cv);
    pthread_mutex_unlock(&f->set->mu);
}

/* Time a listing may take: the configured timeout, never past the load's deadline. */
static int listing_timeout(const gg_graph_options *o) {
    int t = o->downstream->timeout_ms > 0 ? o->downstream->timeout_ms : DOWN_DEFAULT_TIMEOUT_MS;
    if (o->deadline_ms > 0) {
        double left = o->deadline_ms - gg_now_ms();
        if (left < t) t = left < 1 ? 1 : (int)left;
    }
    return t;
}

/* One round: ask every unfinished server for its next page and wait for all answers. */
static bool fetch_round(gg_graph *g, fetch *fs, fetch_set *set, const gg_graph_options *o) {
    bool any = false;
    for (size_t i = 0; i < g->nservers; i++) {
        fetch *f = &fs[i];
        if (f->done) continue;
        mcp_client *c = gg_graph_server_client(&g->servers[i], g->policy, &f->err);
        if (!c) {
            f->done = true;
            continue;
        }
        any = true;
        pthread_mutex_lock(&set->mu);
        set->waiting++;
        pthread_mutex_unlock(&set->mu);
        json_t *params = page_params(f->cursor);
        mcp_client_start(c, "tools/list", params, listing_timeout(o), NULL, page_done, f);
        json_decref(params);
    }
    pthread_mutex_lock(&set->mu);
    while (set->waiting > 0) pthread_cond_wait(&set->cv, &set->mu);
    pthread_mutex_unlock(&set->mu);
    return any;
}

/* Fold the answers of a round in: next cursor, or done (listed or failed). */
static void fetch_absorb(fetch *f, int round) {
    free(f->cursor);
    f->cursor = NULL;
    if (!gg_error_is_set(&f->err)) f->cursor = take_page(&f->got, f->page, &f->err);
    json_decref(f->page);
    f->page = NULL;
    if (!gg_error_is_set(&f->err) && f->cursor && round + 1 >= GG_CATALOG_MAX_PAGES)
        gg_error_set(&f->err, "too_large", "tools/list has more than %d pages", GG_CATALOG_MAX_PAGES);
    if (gg_error_is_set(&f->err) || !f->cursor) {
        f->done = true;
        f->fetched_ms = gg_wall_ms();
    }
}

static void fetch_all(gg_graph *g, fetch *fs, const gg_graph_options *o) {
    fetch_set set = {.waiting = 0};
    pthread_mutex_init(&set.mu, NULL);
    pthread_cond_init(&set.cv, NULL);
    for (size_t i = 0; i < g->nservers; i++) {
        fs[i].set = &set;
        fs[i].got = (gathered){json_array(), 0, o->downstream->max_catalog_bytes};
        gg_error e = GG_ERROR_INIT;
        fs[i].err = e;
        /* a per_user (or for_caller) server answers its users only: nobody's tools to
         * list at an upload */
        fs[i].done = g->servers[i].target_graph || g->servers[i].per_user || g->servers[i].for_caller ||
                     g->servers[i].check == GG_CHECK_OFF + 1 ||
                     (!g->servers[i].check && o->downstream->mode == GG_CHECK_OFF);
    }
    for (int round = 0; round < GG_CATALOG_MAX_PAGES && fetch_round(g, fs, &set, o); round++)
        for (size_t i = 0; i < g->nservers; i++)
            if (!fs[i].done) fetch_absorb(&fs[i], round);
    pthread_mutex_destroy(&set.mu);
    pthread_cond_destroy(&set.cv);
}

/* ---- checking the nodes --------------------------------------------------------------- */

typedef struct check_ctx {
    gg_graph *g;
    fetch *fs;
    const char *file, *tool, *node;
    const gg_graph_options *o;
    gg_graph_diags *d;
} check_ctx;

#define CDIAG(c, sev, n, code, ...) \
    gg_graph_diag_add((c)->d, (sev), (code), (c)->file, (n)->line, (n)->column, (c)->tool, (c)->node, __VA_ARGS__)

/* The tool definition named name in tools, or NULL with the closest name (gg_closest) in
 * *near. */
static json_t *find_tool(json_t *tools, const char *name, const char **near) {
    size_t i, n = json_array_size(tools);
    json_t *t;
    *near = NULL;
    const char **names = n ? malloc(n * sizeof *names) : NULL;
    json_array_foreach(tools, i, t) {
        const char *tn = json_string_value(json_object_get(t, "name"));
        if (tn && !strcmp(tn, name)) {
            free(names);
            return t;
        }
        if (names) names[i] = tn;
    }
    if (!names) return NULL; /* no tools, or out of memory: no suggestion */
    *near = gg_closest(name, (const char *const *)names, n);
    free(names);
    return NULL;
}

/* One literal argument against its property schema. */
static void check_literal(check_ctx *c, gg_diag_severity sev, const char *key, json_t *prop, const ynode *v) {
    if (gg_graph_yaml_has_expr(v, true, 1)) return; /* evaluated at run time */
    gg_error e = GG_ERROR_INIT;
    json_t *val = gg_yaml_to_json(v, &e);
    mcp_schema *s = val ? mcp_schema_compile(prop, &e) : NULL;
    if (s && !mcp_schema_validate(s, val, &e))
        CDIAG(c, sev, v, "downstream_argument_type", "argument '%s' does not match the tool's inputSchema: %s%s%s", key,
              e.message ? e.message : "invalid", e.path && *e.path ? " at " : "", e.path && *e.path ? e.path : "");
    mcp_schema_free(s);
    json_decref(val);
    gg_error_clear(&e);
}

/* Required arguments, unknown names and literal types of one node's args. */
static void check_args(check_ctx *c, gg_diag_severity sev, const ynode *nm, json_t *def) {
    json_t *schema = json_object_get(def, "inputSchema");
    json_t *props = json_object_get(schema, "properties");
    const ynode *args = gg_yaml_get(nm, "args");
    if (args && args->kind != YN_MAP) return;
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(schema, "required"), i, r) {
        const char *name = json_string_value(r);
        if (name && !(args && gg_yaml_get(args, name)))
            CDIAG(c, sev, args ? args : nm, "downstream_missing_argument",
                  "tool '%s' requires argument '%s'", json_string_value(json_object_get(def, "name")), name);
    }
    bool closed = json_is_false(json_object_get(schema, "additionalProperties"));
    for (size_t k = 0; args && k < args->count; k++) {
        const ynode *kn = args->items[2 * k], *v = args->items[2 * k + 1];
        if (kn->kind != YN_SCALAR) continue;
        json_t *prop = json_object_get(props, kn->str);
        if (prop) check_literal(c, sev, kn->str, prop, v);
        else if (json_is_object(props))
            CDIAG(c, closed ? sev : GG_DIAG_WARNING, kn, "downstream_unknown_argument",
                  "tool '%s' has no argument '%s'%s", json_string_value(json_object_get(def, "name")), kn->str,
                  closed ? "" : " (the schema lets it through)");
    }
}

static const char *scalar(const ynode *map, const char *key) {
    const ynode *v = map ? gg_yaml_get(map, key) : NULL;
    return v && v->kind == YN_SCALAR ? v->str : NULL;
}

static void check_node(check_ctx *c, const ynode *nm) {
    const char *sname = scalar(nm, "server"), *tname = scalar(nm, "tool");
    c->node = scalar(nm, "id");
    if (!sname || !tname) return;
    size_t si = 0;
    while (si < c->g->nservers && strcmp(c->g->servers[si].name, sname)) si++;
    if (si == c->g->nservers) return;
    gserver *s = &c->g->servers[si];
    if (s->target_graph) return; /* another graph of the tenant: no downstream catalog */
    /* per_user, for_caller: listed by nobody at an upload (no caller); a missing tool is
     * the downstream's error at the first call */
    if (s->for_caller || s->per_user) return;
    fetch *f = &c->fs[si];
    int mode = s->check ? s->check - 1 : (int)c->o->downstream->mode;
    if (mode == GG_CHECK_OFF) return;
    const ynode *tn = gg_yaml_get(nm, "tool");
    if (gg_error_is_set(&f->err)) {
        CDIAG(c, GG_DIAG_WARNING, tn, "downstream_unreachable", "tool '%s' not checked: server '%s' could not be listed: %s",
              tname, sname, f->err.message ? f->err.message : f->err.code);
        return;
    }
    gg_diag_severity sev = mode == GG_CHECK_ERROR ? GG_DIAG_ERROR : GG_DIAG_WARNING;
    const char *near;
    json_t *def = find_tool(f->got.tools, tname, &near);
    if (!def) {
        CDIAG(c, sev, tn, "downstream_unknown_tool", "server '%s' has no tool '%s'%s%s%s (it has %zu tools)", sname, tname,
              near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "", json_array_size(f->got.tools));
        return;
    }
    check_args(c, sev, nm, def);
    gg_graph_pin_record(c->g, s, def); /* the called tool's definition, as reviewed now */
    gg_graph_suspicious_check(s, def, c->d, c->file, tn->line, tn->column);
}

/* Every mcp node of every tool (hidden tools of resources and prompts are not walked:
 * they share the same node form but are rarely downstream calls). */
static void check_tree(check_ctx *c, const ynode *root) {
    const ynode *tools = root && root->kind == YN_MAP ? gg_yaml_get(root, "tools") : NULL;
    for (size_t i = 0; tools && tools->kind == YN_SEQ && i < tools->count; i++) {
        const ynode *t = tools->items[i];
        if (t->kind != YN_MAP) continue;
        c->tool = scalar(t, "name");
        const ynode *nodes = gg_yaml_get(t, "nodes");
        for (size_t j = 0; nodes && nodes->kind == YN_SEQ && j < nodes->count; j++) {
            const ynode *nm = nodes->items[j];
            const char *type = nm->kind == YN_MAP ? scalar(nm, "type") : NULL;
            if (type && !strcmp(type, "mcp")) check_node(c, nm);
        }
    }
}

/* Hand server i's listed catalog to the fetched callback; a refusal becomes its error. */
static void report(gg_graph *g, fetch *f, size_t i, const gg_graph_options *o) {
    char id[GG_GRAPH_IDENTITY_MAX];
    gg_graph_server_identity(&g->servers[i], id);
    gg_graph_catalog cat = {g->servers[i].name, id, f->got.tools, f->got.bytes, f->fetched_ms};
    if (!o->downstream->fetched(o->downstream->user, &cat, &f->err) && !gg_error_is_set(&f->err))
        gg_error_set(&f->err, "internal_error", "the catalog could not be stored");
}

/* List every server and hand each catalog to the fetched callback; NULL on OOM. */
static fetch *fetch_and_report(gg_graph *g, const gg_graph_options *o) {
    fetch *fs = calloc(g->nservers, sizeof *fs);
    if (!fs) return NULL;
    fetch_all(g, fs, o);
    for (size_t i = 0; i < g->nservers; i++)
        if (o->downstream->fetched && fs[i].done && fs[i].fetched_ms && !gg_error_is_set(&fs[i].err))
            report(g, &fs[i], i, o);
    return fs;
}

/* A catalog over its bound (or over the tenant's) refuses the upload, whether or not a
 * node calls the server: storing it is what the bound is for. */
static void refuse_oversized(gg_graph *g, fetch *fs, const char *file, gg_graph_diags *d) {
    for (size_t i = 0; i < g->nservers; i++) {
        const char *code = fs[i].err.code;
        if (!gg_error_is_set(&fs[i].err) || (strcmp(code, "too_large") && strcmp(code, "quota_exceeded"))) continue;
        gserver *s = &g->servers[i];
        gg_graph_diag_add(d, GG_DIAG_ERROR, !strcmp(code, "too_large") ? "downstream_catalog_too_large" : "downstream_quota_exceeded",
                          file, s->line, s->column, NULL, NULL, "server '%s': %s", s->name,
                          fs[i].err.message ? fs[i].err.message : code);
    }
}

static void fetch_free(gg_graph *g, fetch *fs) {
    for (size_t i = 0; i < g->nservers; i++) {
        json_decref(fs[i].got.tools);
        json_decref(fs[i].page);
        free(fs[i].cursor);
        gg_error_clear(&fs[i].err);
    }
    free(fs);
}

void gg_graph_downstream_check(gg_graph *g, const ynode *root, const char *file, const gg_graph_options *o, gg_graph_diags *d) {
    if (!g->nservers) return;
    fetch *fs = fetch_and_report(g, o);
    if (!fs) {
        gg_graph_diag_add(d, GG_DIAG_ERROR, "internal_error", file, 0, 0, NULL, NULL, "out of memory");
        return;
    }
    refuse_oversized(g, fs, file, d);
    check_ctx c = {g, fs, file, NULL, NULL, o, d};
    check_tree(&c, root);
    fetch_free(g, fs);
}

int gg_graph_downstream_refresh(gg_graph *g, const gg_graph_downstream *ds, double deadline_ms) {
    if (!g->nservers) return 0;
    gg_graph_options o = {.downstream = ds, .deadline_ms = deadline_ms};
    fetch *fs = fetch_and_report(g, &o);
    if (!fs) return (int)g->nservers;
    int failed = 0;
    for (size_t i = 0; i < g->nservers; i++) failed += gg_error_is_set(&fs[i].err);
    fetch_free(g, fs);
    return failed;
}

/* ---- notifications ---------------------------------------------------------------------- */

void gg_graph_downstream_listen(gg_graph *g) {
    int n = 0;
    for (size_t i = 0; i < g->nservers; i++) {
        gserver *s = &g->servers[i];
        if (s->target_graph || !s->cfg.url || s->cfg.transport != MCP_TRANSPORT_HTTP || s->check == GG_CHECK_OFF + 1)
            continue; /* check: off servers are not listed on refresh either */
        if (n++ == GG_GRAPH_LISTEN_MAX) {
            gg_log(GG_LOG_INFO, "a graph's further HTTP servers are not listened to (GG_GRAPH_LISTEN_MAX)", "graph",
                   g->name ? g->name : "", "server", s->name, NULL);
            break;
        }
        gg_error err = GG_ERROR_INIT; /* a server the policy refuses has no client: nothing to hear */
        mcp_client *c = gg_graph_server_client(s, g->policy, &err);
        gg_error_clear(&err);
        if (c) mcp_client_listen(c);
    }
}

void gg_graph_downstream_notified(void *server, const char *method, json_t *params) {
    gserver *s = server;
    gg_graph *g = s->graph;
    char uri[2304] = "";
    if (!strcmp(method, "notifications/resources/updated") && /* only a selected URI travels on */
        !gg_graph_proxy_client_uri(g, s->name, json_string_value(json_object_get(params, "uri")), uri, sizeof uri))
        return;
    pthread_mutex_lock(&g->notify_mu);
    if (g->notify) g->notify(g->notify_user, g->notify_tag, s->name, method, *uri ? uri : NULL);
    pthread_mutex_unlock(&g->notify_mu);
}

void gg_graph_set_downstream_notify(gg_graph *g, gg_graph_notify_fn fn, void *user, const char *tag) {
    char *t = tag ? strdup(tag) : NULL;
    pthread_mutex_lock(&g->notify_mu);
    free(g->notify_tag);
    g->notify_tag = t;
    g->notify = fn;
    g->notify_user = user;
    pthread_mutex_unlock(&g->notify_mu);
}
