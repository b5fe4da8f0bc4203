/* virtual.c — a tenant's downstream MCP tools as node specs. Every tool in the tenant's
 * stored catalogs (store/catalogs.c, written by uploads and `graphgate mcp sync`) becomes
 * a virtual spec of type MCP_TOOL, subtype "<server>.<tool>", built from its inputSchema
 * and outputSchema. The three tools answer a caller's tenant with the global specs plus its
 * virtual ones; the virtual specs of one tenant are never shown to another.
 *
 * The catalogs are read from the store at most once a second per tenant (a small cache
 * here), so get_node_types/get_node_details stay cheap enough for the HTTP thread. */
#include "specs/internal.h"
#include "store/store.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VSPEC_TYPE "MCP_TOOL"
#define VCACHE_SLOTS 64
#define VCACHE_TTL_MS 1000.0
#define VCACHE_TENANT 128

struct specs_vcache {
    pthread_mutex_t mu;
    struct {
        char tenant[VCACHE_TENANT];
        json_t *entries; /* array of virtual entries (details form) */
        double loaded_ms;
    } slot[VCACHE_SLOTS];
    size_t next; /* round-robin eviction */
};

specs_vcache *specs_vcache_new(void) {
    specs_vcache *c = calloc(1, sizeof *c);
    if (c) pthread_mutex_init(&c->mu, NULL);
    return c;
}

void specs_vcache_free(specs_vcache *c) {
    if (!c) return;
    for (size_t i = 0; i < VCACHE_SLOTS; i++) json_decref(c->slot[i].entries);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* ---- building the virtual entries ---------------------------------------------------- */

/* input_params of a spec from an inputSchema: name → {type, description?, required}. */
static json_t *params_of(json_t *schema) {
    json_t *out = json_object(), *req = json_object_get(schema, "required");
    const char *k;
    json_t *p;
    json_object_foreach(json_object_get(schema, "properties"), k, p) {
        json_t *t = json_object_get(p, "type");
        bool required = false;
        size_t i;
        json_t *r;
        json_array_foreach(req, i, r) if (json_is_string(r) && !strcmp(json_string_value(r), k)) required = true;
        json_t *one = json_pack("{s:O,s:b}", "type", json_is_string(t) ? t : json_string("json"), "required", required);
        if (json_is_string(json_object_get(p, "description")))
            json_object_set(one, "description", json_object_get(p, "description"));
        if (json_object_get(p, "default")) json_object_set(one, "default", json_object_get(p, "default"));
        if (json_object_get(p, "enum")) json_object_set(one, "enum", json_object_get(p, "enum"));
        json_object_set_new(out, k, one);
    }
    return out;
}

/* Defaults of a params object (as the file-based specs give them). */
static json_t *defaults(json_t *params) {
    json_t *out = json_object();
    const char *k;
    json_t *p;
    json_object_foreach(params, k, p) if (json_object_get(p, "default")) json_object_set(out, k, json_object_get(p, "default"));
    return out;
}

static json_t *virtual_entry(const char *server, json_t *tool, json_t *fetched_at) {
    const char *name = json_string_value(json_object_get(tool, "name"));
    char sub[512];
    snprintf(sub, sizeof sub, "%s.%s", server, name);
    json_t *in = params_of(json_object_get(tool, "inputSchema"));
    json_t *outs = json_object_get(tool, "outputSchema");
    json_t *out = outs ? params_of(outs)
                       : json_pack("{s:{s:s,s:s},s:{s:s,s:s}}", "content", "type", "json", "description",
                                   "Text of the tool result, or its parsed structuredContent.", "is_error", "type",
                                   "boolean", "description", "True when the tool returned isError.");
    const char *d = json_string_value(json_object_get(tool, "description"));
    char example[1024];
    snprintf(example, sizeof example, "{id: %s_node, type: mcp, server: %s, tool: %s, args: {...}, next: ...}", name,
             server, name);
    return json_pack("{s:s,s:s,s:s,s:s,s:[],s:{s:{s:s,s:s},s:{s:s,s:s}},s:o,s:o,s:{s:s,s:s},s:o,s:o,"
                     "s:[{s:s,s:s}],s:[{s:s,s:s,s:i}],s:[s,s,s],s:[{s:s,s:s}],s:b,s:s,s:s,s:O,s:O*,s:O*}",
                     "node_type", VSPEC_TYPE, "subtype", sub, "version", "downstream", "description", d ? d : "",
                     "parameters", "configurations", "server", "type", "string", "default", server, "tool", "type",
                     "string", "default", name, "input_params_schema", in, "output_params_schema", out,
                     "default_configurations", "server", server, "tool", name, "default_input_params", defaults(in),
                     "default_output_params", json_object(), "input_ports", "name", "main", "type", "main",
                     "output_ports", "name", "next", "type", "main", "max_connections", 1, "tags", "mcp", "downstream",
                     server, "examples", "name", "Call it from a graph", "description", example, "virtual", 1,
                     "server", server, "tool", name, "fetched_at", fetched_at, "input_schema",
                     json_object_get(tool, "inputSchema"), "output_schema", outs);
}

/* Every virtual entry of the tenant, ordered by subtype (the catalogs come ordered by
 * server, each in the server's order; sorted here for stable answers). */
static int cmp_sub(const void *a, const void *b) {
    return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "subtype")),
                  json_string_value(json_object_get(*(json_t *const *)b, "subtype")));
}

static json_t *load_entries(struct gg_store *store, const char *tenant, gg_error *err) {
    json_t *cats = gg_store_downstream_list(store, tenant, err);
    if (!cats) return NULL;
    json_t *all = json_array();
    size_t i, j;
    json_t *c, *t;
    json_array_foreach(cats, i, c) {
        const char *server = json_string_value(json_object_get(c, "server"));
        json_array_foreach(json_object_get(c, "tools"), j, t)
            if (json_is_string(json_object_get(t, "name")))
                json_array_append_new(all, virtual_entry(server, t, json_object_get(c, "fetched_at")));
    }
    json_decref(cats);
    size_t n = json_array_size(all);
    json_t **v = n ? malloc(n * sizeof *v) : NULL;
    if (v) {
        for (i = 0; i < n; i++) v[i] = json_incref(json_array_get(all, i));
        qsort(v, n, sizeof *v, cmp_sub);
        json_array_clear(all);
        for (i = 0; i < n; i++) json_array_append_new(all, v[i]);
        free(v);
    }
    return all;
}

/* The tenant's entries (new reference; empty array when none), cached a second. */
static json_t *entries_for(specs_vcache *c, struct gg_store *store, const char *tenant) {
    double now = gg_now_ms();
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < VCACHE_SLOTS; i++)
        if (c->slot[i].entries && !strcmp(c->slot[i].tenant, tenant) && now - c->slot[i].loaded_ms < VCACHE_TTL_MS) {
            json_t *e = json_incref(c->slot[i].entries);
            pthread_mutex_unlock(&c->mu);
            return e;
        }
    pthread_mutex_unlock(&c->mu);
    gg_error err = GG_ERROR_INIT;
    json_t *e = load_entries(store, tenant, &err);
    gg_error_clear(&err);
    if (!e) return json_array();
    pthread_mutex_lock(&c->mu);
    size_t k = VCACHE_SLOTS;
    for (size_t i = 0; i < VCACHE_SLOTS && k == VCACHE_SLOTS; i++)
        if (c->slot[i].entries && !strcmp(c->slot[i].tenant, tenant)) k = i;
    if (k == VCACHE_SLOTS) k = c->next++ % VCACHE_SLOTS;
    json_decref(c->slot[k].entries);
    snprintf(c->slot[k].tenant, sizeof c->slot[k].tenant, "%s", tenant);
    c->slot[k].entries = json_incref(e);
    c->slot[k].loaded_ms = now;
    pthread_mutex_unlock(&c->mu);
    return e;
}

/* ---- answering ---------------------------------------------------------------------- */

/* Upper case, without surrounding blanks, a _NODE suffix removed (*corrected set). */
static void norm_type(const char *in, char *out, size_t size, bool *corrected) {
    size_t n = 0;
    while (*in == ' ') in++;
    for (; in[n] && n + 1 < size; n++) out[n] = (char)toupper((unsigned char)in[n]);
    while (n && out[n - 1] == ' ') n--;
    out[n] = '\0';
    *corrected = false;
    if (n > 5 && !strcmp(out + n - 5, "_NODE")) {
        out[n - 5] = '\0';
        *corrected = true;
    }
}

static json_t *find_entry(json_t *entries, const char *sub, bool nocase) {
    size_t i;
    json_t *e;
    json_array_foreach(entries, i, e) {
        const char *s = json_string_value(json_object_get(e, "subtype"));
        if (nocase ? !strcasecmp(s, sub) : !strcmp(s, sub)) return e;
    }
    return NULL;
}

/* Up to 3 virtual subtypes closest to sub. */
static json_t *suggestions(json_t *entries, const char *sub) {
    json_t *out = json_array();
    const char *best[3] = {0};
    int bd[3] = {1 << 20, 1 << 20, 1 << 20};
    int limit = (int)strlen(sub) / 2 < 3 ? 3 : (int)strlen(sub) / 2;
    size_t i;
    json_t *e;
    json_array_foreach(entries, i, e) {
        const char *s = json_string_value(json_object_get(e, "subtype"));
        int d = specs_edit_distance(sub, s, limit + 1);
        if (d > 1 && sub[0] && strstr(s, sub)) d = 1;
        for (int k = 0; k < 3 && d <= limit; k++)
            if (d < bd[k]) {
                for (int m = 2; m > k; m--) best[m] = best[m - 1], bd[m] = bd[m - 1];
                best[k] = s, bd[k] = d;
                break;
            }
    }
    for (int k = 0; k < 3 && best[k]; k++)
        json_array_append_new(out, json_pack("{s:s,s:s}", "node_type", VSPEC_TYPE, "subtype", best[k]));
    return out;
}

/* One get_node_details item of type MCP_TOOL (or MCP_TOOL_NODE, any case). */
static json_t *details_item(json_t *entries, const char *type, const char *sub, bool corrected, bool ex, bool sc) {
    json_t *e = find_entry(entries, sub, false);
    bool nocase = false;
    if (!e && (e = find_entry(entries, sub, true))) nocase = true;
    if (!e) {
        char msg[512];
        snprintf(msg, sizeof msg, "Node specification not found for %.100s.%.200s", type, sub);
        return json_pack("{s:s,s:s,s:s,s:s,s:o}", "node_type", type, "subtype", sub, "error", msg, "hint",
                         "MCP_TOOL subtypes are <server>.<tool> of your downstream servers; get_node_types lists them.",
                         "suggestions", suggestions(entries, sub));
    }
    json_t *copy = json_copy(e);
    if (!ex) json_object_del(copy, "examples");
    if (!sc) {
        json_object_del(copy, "input_params_schema");
        json_object_del(copy, "output_params_schema");
    }
    char w[512];
    if (corrected || nocase) {
        snprintf(w, sizeof w, "Auto-corrected: '%.100s.%.200s' → '" VSPEC_TYPE ".%s'.%s", type, sub,
                 json_string_value(json_object_get(e, "subtype")),
                 corrected ? " Please use correct format without '_NODE' suffix." : "");
        json_object_set_new(copy, "warning", json_string(w));
    }
    return copy;
}

/* A CallToolResult holding obj as text and structuredContent (steals obj). */
static json_t *result_of(json_t *obj) {
    char *text = json_dumps(obj, JSON_COMPACT);
    json_t *r = json_pack("{s:[{s:s,s:s}],s:o,s:b}", "content", "type", "text", "text", text ? text : "{}",
                          "structuredContent", obj, "isError", 0);
    free(text);
    return r;
}

/* The global answer of tool for args as JSON (new reference), or NULL when it was a tool
 * error (then *error_result holds that CallToolResult). */
static json_t *global_answer(specs_registry *r, const char *tool, json_t *args, json_t **error_result, gg_error *err) {
    specs_output o = SPECS_OUTPUT_INIT;
    json_t *v = NULL;
    if (specs_call(r, tool, args, &o, err)) {
        if (!o.is_error && o.structured.len) v = json_loadb(o.structured.data, o.structured.len, 0, NULL);
        else {
            gg_strbuf b = GG_STRBUF_INIT;
            specs_output_serialize(&o, NULL, &b);
            *error_result = b.data ? json_loadb(b.data, b.len, 0, NULL) : NULL;
            gg_strbuf_free(&b);
        }
    }
    specs_output_free(&o);
    return v;
}

static json_t *node_types(specs_registry *r, json_t *entries, json_t *args, gg_error *err) {
    const char *tf = json_string_value(json_object_get(args, "type_filter"));
    char t[64];
    bool corr;
    norm_type(tf ? tf : "", t, sizeof t, &corr);
    json_t *subs = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(entries, i, e) json_array_append(subs, json_object_get(e, "subtype"));
    if (tf && !strcmp(t, VSPEC_TYPE)) return result_of(json_pack("{s:o}", VSPEC_TYPE, subs));
    json_t *errres = NULL, *v = global_answer(r, "get_node_types", args, &errres, err);
    if (!v || tf) {
        json_decref(subs);
        return v ? result_of(v) : errres;
    }
    json_object_set_new(v, VSPEC_TYPE, subs);
    return result_of(v);
}

static json_t *node_details(specs_registry *r, json_t *entries, json_t *args, gg_error *err) {
    json_t *nodes = json_object_get(args, "nodes");
    json_t *rest = json_array(), *slots = json_array();
    bool ex = !json_is_false(json_object_get(args, "include_examples")),
         sc = !json_is_false(json_object_get(args, "include_schemas"));
    size_t i;
    json_t *item;
    json_array_foreach(nodes, i, item) {
        const char *type = json_string_value(json_object_get(item, "node_type"));
        const char *sub = json_string_value(json_object_get(item, "subtype"));
        char t[128];
        bool corr = false;
        norm_type(type ? type : "", t, sizeof t, &corr);
        if (type && sub && !strcmp(t, VSPEC_TYPE)) json_array_append_new(slots, details_item(entries, type, sub, corr, ex, sc));
        else {
            json_array_append(rest, item);
            json_array_append_new(slots, json_null()); /* filled from the global answer */
        }
    }
    json_t *out = NULL, *errres = NULL;
    if (json_array_size(rest) || !json_array_size(nodes)) {
        json_t *a = gg_json_clone(args);
        json_object_set(a, "nodes", rest);
        json_t *v = global_answer(r, "get_node_details", a, &errres, err);
        json_decref(a);
        json_t *got = json_object_get(v, "nodes");
        size_t k = 0;
        json_array_foreach(slots, i, item) if (json_is_null(item)) json_array_set(slots, i, json_array_get(got, k++));
        if (v) out = result_of(json_pack("{s:O}", "nodes", slots));
        json_decref(v);
    } else {
        out = result_of(json_pack("{s:O}", "nodes", slots));
    }
    json_decref(rest);
    json_decref(slots);
    return out ? out : errres;
}

/* How many of the query's words (lower case, 2+ characters) the entry mentions. */
static int match_score(json_t *e, const char *q) {
    char *hay = NULL;
    json_t *in = json_object_get(e, "input_params_schema");
    char *params = json_dumps(in, JSON_COMPACT);
    if (asprintf(&hay, "%s %s %s", json_string_value(json_object_get(e, "subtype")),
                 json_string_value(json_object_get(e, "description")), params ? params : "") < 0)
        hay = NULL;
    free(params);
    if (!hay) return 0;
    for (char *p = hay; *p; p++) *p = (char)tolower((unsigned char)*p);
    int score = 0;
    for (const char *p = q; *p;) {
        while (*p && !isalnum((unsigned char)*p)) p++;
        char w[64];
        size_t n = 0;
        while (*p && isalnum((unsigned char)*p)) {
            if (n + 1 < sizeof w) w[n++] = (char)tolower((unsigned char)*p);
            p++;
        }
        w[n] = '\0';
        if (n >= 2 && strstr(hay, w)) score++;
    }
    free(hay);
    return score;
}

static json_t *search(specs_registry *r, json_t *entries, json_t *args, gg_error *err) {
    const char *q = json_string_value(json_object_get(args, "query"));
    const char *tf = json_string_value(json_object_get(args, "type_filter"));
    char t[64];
    bool corr;
    norm_type(tf ? tf : "", t, sizeof t, &corr);
    bool only_virtual = tf && !strcmp(t, VSPEC_TYPE);
    json_t *errres = NULL, *v = NULL;
    if (only_virtual) {
        if (!q || !q[0] || strlen(q) > 200) return NULL; /* the global tool words the error */
        v = json_pack("{s:s,s:i,s:[]}", "query", q, "count", 0, "results");
    } else if (!(v = global_answer(r, "search_nodes", args, &errres, err))) {
        return errres;
    }
    json_int_t limit = json_is_integer(json_object_get(args, "limit")) ? json_integer_value(json_object_get(args, "limit")) : 10;
    json_t *results = json_object_get(v, "results");
    size_t i;
    json_t *e;
    json_array_foreach(entries, i, e) {
        int s = match_score(e, q);
        if (s) json_array_append_new(results, json_pack("{s:s,s:O,s:O,s:O,s:f}", "node_type", VSPEC_TYPE, "subtype",
                                                        json_object_get(e, "subtype"), "description",
                                                        json_object_get(e, "description"), "snippet",
                                                        json_object_get(e, "description"), "score", (double)s));
    }
    /* best first, then cut to limit */
    size_t n = json_array_size(results);
    for (size_t a = 1; a < n; a++)
        for (size_t b = a; b > 0; b--) {
            json_t *x = json_array_get(results, b - 1), *y = json_array_get(results, b);
            if (json_number_value(json_object_get(x, "score")) >= json_number_value(json_object_get(y, "score")))
                break;
            json_incref(x);
            json_array_set(results, b - 1, y);
            json_array_set_new(results, b, x);
        }
    while ((json_int_t)json_array_size(results) > limit) json_array_remove(results, json_array_size(results) - 1);
    json_object_set_new(v, "count", json_integer((json_int_t)json_array_size(results)));
    return result_of(v);
}

json_t *specs_virtual_call(specs_registry *r, specs_vcache *c, const char *tool, json_t *args, const char *tenant,
                           gg_error *err) {
    if (!c || !r->store || !tenant || !tenant[0] || !specs_tool_exists(tool) || !json_is_object(args)) return NULL;
    json_t *entries = entries_for(c, r->store, tenant);
    json_t *res = NULL;
    char t[64];
    bool corr;
    const char *tf = json_string_value(json_object_get(args, "type_filter"));
    norm_type(tf ? tf : "", t, sizeof t, &corr);
    /* MCP_TOOL asked for by name is answered here even when the tenant has none */
    if (json_array_size(entries) || !strcmp(t, VSPEC_TYPE)) {
        if (!strcmp(tool, "get_node_types")) res = node_types(r, entries, args, err);
        else if (!strcmp(tool, "get_node_details")) {
            size_t n = json_array_size(json_object_get(args, "nodes"));
            if (n > 0 && n <= SPECS_MAX_BATCH) res = node_details(r, entries, args, err);
        } else res = search(r, entries, args, err);
    }
    json_decref(entries);
    return res;
}
