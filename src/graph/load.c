/* load.c — graph file → validated, compiled gg_graph. One pass over the positioned YAML
 * tree checks the structure (unknown keys are errors), builds the compiled nodes and
 * compiles every JSONata expression and JSON Logic rule; a second pass checks the graph
 * (entry/exit, targets, reachability). Every problem is reported, not just the first. */
#include "graph/internal.h"

#include <stdatomic.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DEFAULT_MAX_NODE_EXECUTIONS 1000
#define DEFAULT_MAX_EXECUTION_MS 300000L
#define DEFAULT_MAX_SOURCE (4u << 20)
#define MAX_ARGS_DEPTH 64
#define MAX_TOOLS GG_GRAPH_MAX_TOOLS /* per graph */
#define MAX_NODES 2000         /* per tool */

typedef struct lctx {
    const char *file, *src;
    size_t len;
    gg_graph_diags *d;
    gg_graph *g;
    const gg_graph_options *opts;
    const char *tool, *node; /* what diagnostics are about right now */
    bool timed_out;          /* the deadline passed (reported once) */
} lctx;

#define LERR(c, n, code, ...) \
    gg_graph_diag_add((c)->d, GG_DIAG_ERROR, code, (c)->file, (n) ? (n)->line : 0, (n) ? (n)->column : 0, (c)->tool, (c)->node, __VA_ARGS__)
#define LWARN(c, n, code, ...) \
    gg_graph_diag_add((c)->d, GG_DIAG_WARNING, code, (c)->file, (n) ? (n)->line : 0, (n) ? (n)->column : 0, (c)->tool, (c)->node, __VA_ARGS__)

/* ---- small helpers ----------------------------------------------------------------------- */

/* Whether the caller's deadline has passed; the first time, says so as an error. Checked
 * between tools and nodes: every step in between is bounded by the document's size. */
static bool over_deadline(lctx *c) {
    if (c->timed_out) return true;
    if (!c->opts || c->opts->deadline_ms <= 0 || gg_now_ms() <= c->opts->deadline_ms) return false;
    c->timed_out = true;
    gg_graph_diag_add(c->d, GG_DIAG_ERROR, "timeout", c->file, 0, 0, c->tool, c->node,
              "validating the graph took longer than its time limit; make it smaller");
    return true;
}

/* Report duplicate and unknown keys of a mapping. allowed is NULL-terminated. */
static bool check_keys(lctx *c, const ynode *map, const char *const *allowed, const char *what) {
    bool ok = true;
    long *dup = gg_yaml_duplicate_keys(map);
    for (size_t i = 0; i < map->count; i++) {
        const ynode *k = map->items[2 * i];
        if (k->kind != YN_SCALAR) {
            LERR(c, k, "invalid_key", "keys of %s must be strings", what);
            ok = false;
            continue;
        }
        if (dup && dup[i] >= 0) {
            LERR(c, k, "duplicate_key", "duplicate key '%s' in %s (first at line %d)", k->str, what,
                 map->items[2 * dup[i]]->line);
            ok = false;
        }
        if (!allowed) continue;
        bool known = false;
        for (const char *const *a = allowed; *a; a++)
            if (strcmp(*a, k->str) == 0) known = true;
        if (!known) {
            char list[256] = "";
            size_t n = 0;
            for (const char *const *a = allowed; *a && n < sizeof list; a++)
                n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "", *a);
            LERR(c, k, "unknown_key", "unknown key '%s' in %s (expected one of: %s)", k->str, what, list);
            ok = false;
        }
    }
    free(dup);
    return ok;
}

/* The JSON type a node becomes under YAML 1.2's core schema ("string", "number",
 * "boolean", "null", "object", "array") — what schema/graph.schema.json checks, so the
 * loader takes a plain `8080` or `true` where a string belongs no more than the schema does. */
static const char *json_type_of(const ynode *v) {
    if (v->kind == YN_MAP) return "object";
    if (v->kind == YN_SEQ) return "array";
    if (!v->plain) return "string";
    gg_error e = GG_ERROR_INIT;
    json_t *j = gg_yaml_to_json(v, &e);
    const char *t = !j ? "number" /* .inf / .nan */ : json_is_string(j) ? "string" : json_is_number(j) ? "number"
                  : json_is_boolean(j) ? "boolean" : "null";
    json_decref(j);
    gg_error_clear(&e);
    return t;
}

/* true when v is text; else reports "<what> must be a string, not <type>". */
static bool want_text(lctx *c, const ynode *v, const char *what) {
    const char *t = json_type_of(v);
    if (!strcmp(t, "string")) return true;
    if (v->kind == YN_SCALAR)
        LERR(c, v, "invalid_type", "%s must be a string, not %s (quote it: \"%s\")", what, t, v->str);
    else
        LERR(c, v, "invalid_type", "%s must be a string, not %s", what, gg_yaml_kind_name(v));
    return false;
}

/* A string-valued key: returns the text, NULL when absent (error when required) or wrong.
 * with_number also takes a plain number as its text (version fields). */
static const char *get_str_ex(lctx *c, const ynode *map, const char *key, bool required, const char *what,
                              bool with_number) {
    const ynode *v = gg_yaml_get(map, key);
    if (!v) {
        if (required) LERR(c, map, "missing_key", "%s needs '%s'", what, key);
        return NULL;
    }
    if (with_number && v->kind == YN_SCALAR && !strcmp(json_type_of(v), "number")) return v->str;
    char desc[160];
    snprintf(desc, sizeof desc, "'%s' in %s", key, what);
    return want_text(c, v, desc) ? v->str : NULL;
}

static const char *get_str(lctx *c, const ynode *map, const char *key, bool required, const char *what) {
    return get_str_ex(c, map, key, required, what, false);
}

/* Source line/column of character `offset` inside a scalar's value (for expression errors). */
static void scalar_offset_pos(lctx *c, const ynode *s, int offset, int *line, int *col) {
    *line = s->line;
    *col = s->column;
    if (offset < 0 || !c->src) return;
    /* find the scalar's first character in the source */
    const char *p = c->src, *end = c->src + c->len;
    for (int l = 1; l < s->line && p < end; p++)
        if (*p == '\n') l++;
    const char *start = p + (s->column - 1);
    if (start >= end) return;
    int nl = 0;
    int lastnl = -1;
    for (int i = 0; i < offset && i < (int)s->len; i++)
        if (s->str[i] == '\n') nl++, lastnl = i;
    if (*start == '|' || *start == '>') {
        /* block scalar: content begins on the next line at the block's indentation */
        const char *q = start;
        while (q < end && *q != '\n') q++;
        if (q < end) q++;
        int indent = 0;
        const char *r = q;
        while (r < end) { /* first non-blank content line decides the indentation */
            indent = 0;
            while (r < end && *r == ' ') r++, indent++;
            if (r < end && *r == '\n') { r++; continue; }
            break;
        }
        *line = s->line + 1 + nl;
        *col = indent + (offset - lastnl - 1) + 1;
        return;
    }
    int quote = (*start == '\'' || *start == '"') ? 1 : 0;
    *line = s->line + nl;
    *col = nl ? (offset - lastnl) : s->column + quote + offset;
}

/* ---- JSON Schema well-formedness --------------------------------------------------------- */

static const char *const schema_types[] = {"null", "boolean", "object", "array", "number", "string", "integer", NULL};

static bool is_schema_type(const char *s) {
    for (const char *const *t = schema_types; *t; t++)
        if (strcmp(*t, s) == 0) return true;
    return false;
}

static void check_schema(lctx *c, const ynode *n, const char *where, int depth);

static void check_schema_map(lctx *c, const ynode *v, const char *kw, const char *where, int depth) {
    if (v->kind != YN_MAP) {
        LERR(c, v, "invalid_schema", "%s: '%s' must be a mapping of schemas", where, kw);
        return;
    }
    for (size_t i = 0; i < v->count; i++) check_schema(c, v->items[2 * i + 1], where, depth + 1);
}

static void check_schema_list(lctx *c, const ynode *v, const char *kw, const char *where, int depth) {
    if (v->kind != YN_SEQ || v->count == 0) {
        LERR(c, v, "invalid_schema", "%s: '%s' must be a non-empty sequence of schemas", where, kw);
        return;
    }
    for (size_t i = 0; i < v->count; i++) check_schema(c, v->items[i], where, depth + 1);
}

static bool scalar_is_number(const ynode *v) {
    if (v->kind != YN_SCALAR || !v->plain || !*v->str) return false;
    char *e = NULL;
    errno = 0;
    strtod(v->str, &e);
    return e && !*e && errno == 0;
}

static bool scalar_is_nonneg_int(const ynode *v) {
    if (v->kind != YN_SCALAR || !v->plain || !*v->str) return false;
    for (const char *p = v->str; *p; p++)
        if (!isdigit((unsigned char)*p)) return false;
    return true;
}

/* Checks the keywords whose shape JSON Schema 2020-12 fixes; other keywords pass through. */
static void check_schema(lctx *c, const ynode *n, const char *where, int depth) {
    if (depth > 64) {
        LERR(c, n, "invalid_schema", "%s: schema nesting is too deep", where);
        return;
    }
    if (n->kind == YN_SCALAR && n->plain && (!strcmp(n->str, "true") || !strcmp(n->str, "false"))) return;
    if (n->kind != YN_MAP) {
        LERR(c, n, "invalid_schema", "%s: a schema must be a mapping or a boolean, not %s", where, gg_yaml_kind_name(n));
        return;
    }
    static const char *const sub_map[] = {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", NULL};
    static const char *const sub_one[] = {"items", "additionalProperties", "not", "if", "then", "else", "contains",
                                          "propertyNames", "unevaluatedItems", "unevaluatedProperties",
                                          "additionalItems", "contentSchema", NULL};
    static const char *const sub_list[] = {"allOf", "anyOf", "oneOf", "prefixItems", NULL};
    static const char *const nums[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", NULL};
    static const char *const counts[] = {"minLength", "maxLength", "minItems", "maxItems", "minProperties",
                                         "maxProperties", "minContains", "maxContains", NULL};
    check_keys(c, n, NULL, "a schema");
    for (size_t i = 0; i < n->count; i++) {
        const ynode *k = n->items[2 * i], *v = n->items[2 * i + 1];
        if (k->kind != YN_SCALAR) continue;
        const char *kw = k->str;
        bool done = false;
        for (const char *const *s = sub_map; *s && !done; s++)
            if (!strcmp(*s, kw)) check_schema_map(c, v, kw, where, depth), done = true;
        for (const char *const *s = sub_one; *s && !done; s++)
            if (!strcmp(*s, kw)) check_schema(c, v, where, depth + 1), done = true;
        for (const char *const *s = sub_list; *s && !done; s++)
            if (!strcmp(*s, kw)) check_schema_list(c, v, kw, where, depth), done = true;
        for (const char *const *s = nums; *s && !done; s++)
            if (!strcmp(*s, kw)) {
                if (!scalar_is_number(v)) LERR(c, v, "invalid_schema", "%s: '%s' must be a number", where, kw);
                done = true;
            }
        for (const char *const *s = counts; *s && !done; s++)
            if (!strcmp(*s, kw)) {
                if (!scalar_is_nonneg_int(v))
                    LERR(c, v, "invalid_schema", "%s: '%s' must be a non-negative integer", where, kw);
                done = true;
            }
        if (done) continue;
        if (!strcmp(kw, "type")) {
            if (v->kind == YN_SCALAR) {
                if (!is_schema_type(v->str)) LERR(c, v, "invalid_schema", "%s: unknown type '%s'", where, v->str);
            } else if (v->kind == YN_SEQ && v->count > 0) {
                for (size_t j = 0; j < v->count; j++)
                    if (v->items[j]->kind != YN_SCALAR || !is_schema_type(v->items[j]->str))
                        LERR(c, v->items[j], "invalid_schema", "%s: 'type' entries must be type names", where);
            } else {
                LERR(c, v, "invalid_schema", "%s: 'type' must be a type name or a list of them", where);
            }
        } else if (!strcmp(kw, "required")) {
            if (v->kind != YN_SEQ) LERR(c, v, "invalid_schema", "%s: 'required' must be a sequence of strings", where);
            else
                for (size_t j = 0; j < v->count; j++)
                    if (v->items[j]->kind != YN_SCALAR)
                        LERR(c, v->items[j], "invalid_schema", "%s: 'required' entries must be strings", where);
        } else if (!strcmp(kw, "enum")) {
            if (v->kind != YN_SEQ) LERR(c, v, "invalid_schema", "%s: 'enum' must be a sequence", where);
        } else if (!strcmp(kw, "pattern") || !strcmp(kw, "$ref") || !strcmp(kw, "$schema") || !strcmp(kw, "$id") ||
                   !strcmp(kw, "format") || !strcmp(kw, "title") || !strcmp(kw, "description")) {
            if (v->kind != YN_SCALAR) LERR(c, v, "invalid_schema", "%s: '%s' must be a string", where, kw);
        }
    }
}

/* inputSchema/outputSchema of an MCP tool: a schema whose type is "object". */
static json_t *load_tool_schema(lctx *c, const ynode *tool, const char *key, bool required) {
    const ynode *v = gg_yaml_get(tool, key);
    if (!v) {
        if (required) LERR(c, tool, "missing_key", "tool needs '%s'", key);
        return NULL;
    }
    char where[64];
    snprintf(where, sizeof where, "%s", key);
    if (v->kind != YN_MAP) {
        LERR(c, v, "invalid_schema", "%s must be a mapping (a JSON Schema object)", key);
        return NULL;
    }
    size_t before = c->d ? c->d->errors : 0;
    check_schema(c, v, where, 0);
    const ynode *t = gg_yaml_get(v, "type");
    if (!t || t->kind != YN_SCALAR || strcmp(t->str, "object") != 0)
        LERR(c, t ? t : v, "invalid_schema", "%s must have type: object (MCP tool schemas describe an object)", key);
    if (c->d && c->d->errors != before) return NULL;
    gg_error e = GG_ERROR_INIT;
    json_t *j = gg_yaml_to_json(v, &e);
    if (!j) {
        LERR(c, v, "invalid_schema", "%s: %s", key, e.message ? e.message : "cannot convert");
        gg_error_clear(&e);
        return NULL;
    }
    /* every tools/list carries it and every call is checked against it */
    size_t max = c->opts && c->opts->max_schema_bytes ? c->opts->max_schema_bytes : GG_GRAPH_MAX_SCHEMA_BYTES;
    size_t bytes = json_dumpb(j, NULL, 0, JSON_COMPACT);
    if (bytes > max) {
        LERR(c, v, "too_large", "%s is %zu bytes as JSON (limit %zu)", key, bytes, max);
        json_decref(j);
        return NULL;
    }
    /* the gateway validates tools/call arguments with this validator: it must accept it */
    mcp_schema *ms = mcp_schema_compile(j, &e);
    if (!ms) {
        LERR(c, v, "invalid_schema", "%s: %s%s%s", key, e.message ? e.message : "does not compile", e.path ? " at " : "",
             e.path ? e.path : "");
        gg_error_clear(&e);
        json_decref(j);
        return NULL;
    }
    mcp_schema_free(ms);
    return j;
}

/* ---- expressions ------------------------------------------------------------------------- */

/* The $variables a run binds for every expression (exec.c bindings_for): never "unknown". */
static const char *const run_variables[] = {"client"};

typedef struct unknown_ctx {
    lctx *c;
    const ynode *s;
    const char *what;
} unknown_ctx;

/* A call of a function that exists nowhere fails every run that reaches it: warn now, at
 * the call's position, with the closest function name when one is near. */
static void warn_unknown_call(void *user, const char *name, int offset) {
    unknown_ctx *u = user;
    int line, col;
    scalar_offset_pos(u->c, u->s, offset, &line, &col);
    const char *near = jsonata_closest_function(u->c->g->env, name);
    gg_graph_diag_add(u->c->d, GG_DIAG_WARNING, "unknown_function", u->c->file, line, col, u->c->tool, u->c->node,
                      "%s calls $%s, which is neither a JSONata function nor a variable bound in the expression%s%s%s",
                      u->what, name, near ? " (did you mean $" : "", near ? near : "", near ? "?)" : "");
}

static jsonata_expr *compile_expr(lctx *c, const ynode *s, const char *what) {
    if (!s || s->kind != YN_SCALAR) {
        LERR(c, s, "invalid_type", "%s must be a string holding a JSONata expression", what);
        return NULL;
    }
    if (!want_text(c, s, what)) return NULL;
    gg_error e = GG_ERROR_INIT;
    jsonata_expr *x = jsonata_compile(s->str, c->g->env, &e);
    if (!x) {
        int line, col;
        scalar_offset_pos(c, s, e.position, &line, &col);
        gg_graph_diag_add(c->d, GG_DIAG_ERROR, "jsonata", c->file, line, col, c->tool, c->node,
                  "%s does not compile: %s %s (expression position %d)", what, e.code[0] ? e.code : "error",
                  e.message ? e.message : "", e.position);
        gg_error_clear(&e);
    }
    unknown_ctx u = {c, s, what};
    jsonata_unknown_calls(x, run_variables, sizeof run_variables / sizeof run_variables[0], warn_unknown_call, &u);
    return x;
}

static void gargs_free(gargs *a) {
    if (!a) return;
    json_decref(a->literal);
    jsonata_free(a->expr);
    for (size_t i = 0; i < a->count; i++) {
        if (a->keys) free(a->keys[i]);
        gargs_free(a->items[i]);
    }
    free(a->keys);
    free(a->items);
    free(a);
}

bool gg_graph_yaml_is_expr_map(const ynode *v) {
    return v->kind == YN_MAP && v->count == 1 && v->items[0]->kind == YN_SCALAR && !strcmp(v->items[0]->str, "expr");
}

/* Does this subtree hold an expression anywhere (otherwise it is one literal)? */
bool gg_graph_yaml_has_expr(const ynode *v, bool top, int depth) {
    if (depth > MAX_ARGS_DEPTH) return false;
    if (v->kind == YN_SCALAR) return top && v->str[0] == '$';
    if (gg_graph_yaml_is_expr_map(v)) return true;
    size_t n = v->kind == YN_MAP ? v->count : v->count;
    for (size_t i = 0; i < n; i++)
        if (gg_graph_yaml_has_expr(v->kind == YN_MAP ? v->items[2 * i + 1] : v->items[i], false, depth + 1)) return true;
    return false;
}

/* args rules: {expr: "..."} is JSONata; a string directly under args starting with '$' is
 * JSONata (the design document's form); everything else is literal, walked recursively. */
static gargs *build_args(lctx *c, const ynode *v, bool top, int depth) {
    gargs *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    if (depth > MAX_ARGS_DEPTH) {
        LERR(c, v, "invalid_args", "args are nested too deeply");
        free(a);
        return NULL;
    }
    if (gg_graph_yaml_is_expr_map(v) || (top && v->kind == YN_SCALAR && v->str[0] == '$')) {
        a->kind = GA_EXPR;
        a->expr = compile_expr(c, gg_graph_yaml_is_expr_map(v) ? v->items[1] : v, "args expression");
        return a;
    }
    if (!gg_graph_yaml_has_expr(v, top, depth)) {
        gg_error e = GG_ERROR_INIT;
        a->kind = GA_LITERAL;
        a->literal = gg_yaml_to_json(v, &e);
        if (!a->literal) {
            LERR(c, v, "invalid_args", "%s", e.message ? e.message : "invalid literal");
            gg_error_clear(&e);
        }
        return a;
    }
    a->kind = v->kind == YN_MAP ? GA_OBJECT : GA_ARRAY;
    a->count = v->count;
    a->items = calloc(v->count ? v->count : 1, sizeof *a->items);
    if (v->kind == YN_MAP) a->keys = calloc(v->count ? v->count : 1, sizeof *a->keys);
    if (!a->items || (v->kind == YN_MAP && !a->keys)) {
        gargs_free(a);
        return NULL;
    }
    for (size_t i = 0; i < v->count; i++) {
        if (v->kind == YN_MAP) {
            a->keys[i] = strdup(v->items[2 * i]->str ? v->items[2 * i]->str : "");
            a->items[i] = build_args(c, v->items[2 * i + 1], false, depth + 1);
        } else {
            a->items[i] = build_args(c, v->items[i], false, depth + 1);
        }
    }
    return a;
}

/* ---- mcpServers ---------------------------------------------------------------------------- */

static char **str_list(lctx *c, const ynode *v, const char *what) {
    if (!v) return calloc(1, sizeof(char *));
    if (v->kind != YN_SEQ) {
        LERR(c, v, "invalid_type", "%s must be a sequence of strings", what);
        return NULL;
    }
    char **out = calloc(v->count + 1, sizeof *out);
    if (!out) return NULL;
    for (size_t i = 0; i < v->count; i++) {
        char desc[96];
        snprintf(desc, sizeof desc, "%s entry %zu", what, i + 1);
        bool text = want_text(c, v->items[i], desc);
        out[i] = strdup(text ? v->items[i]->str : "");
    }
    return out;
}

/* env / headers mappings become "K=V" / "K: V" lists. */
static char **pair_list(lctx *c, const ynode *v, const char *what, const char *sep) {
    if (!v) return calloc(1, sizeof(char *));
    if (v->kind != YN_MAP) {
        LERR(c, v, "invalid_type", "%s must be a mapping of strings", what);
        return NULL;
    }
    check_keys(c, v, NULL, what);
    char **out = calloc(v->count + 1, sizeof *out);
    if (!out) return NULL;
    for (size_t i = 0; i < v->count; i++) {
        const ynode *k = v->items[2 * i], *val = v->items[2 * i + 1];
        char desc[160];
        snprintf(desc, sizeof desc, "%s value of '%s'", what, k->kind == YN_SCALAR ? k->str : "?");
        if (k->kind != YN_SCALAR || !want_text(c, val, desc)) {
            out[i] = strdup("");
            continue;
        }
        if (!strcmp(sep, "=") && (strchr(k->str, '=') || !*k->str))
            LERR(c, k, "invalid_env", "environment variable name '%s' is not valid", k->str);
        if (strchr(sep, ':') && (strpbrk(k->str, ":\r\n") || strpbrk(val->str, "\r\n") || !*k->str))
            LERR(c, k, "invalid_header", "header '%s' is not valid", k->str);
        if (asprintf(&out[i], "%s%s%s", k->str, sep, val->str) < 0) out[i] = NULL;
    }
    return out;
}

/* `type: graph`: an in-process call of another graph of the same tenant, by its name (the
 * name rules of the store: [A-Za-z0-9_-], at most GG_NAME_MAX). No transport, so no policy
 * applies; the gateway resolves the name in the caller's tenant at call time, so a graph
 * can never reach another tenant's. No timeout of its own: the callee's limits and the
 * caller's cancel flag (request_timeout, client gone) bound the wait. */
static void load_graph_server(lctx *c, gserver *s, const ynode *def, const char *what) {
    static const char *const graph_keys[] = {"type", "graph", NULL};
    check_keys(c, def, graph_keys, what);
    s->argv = calloc(1, sizeof(char *));
    s->env = calloc(1, sizeof(char *));
    s->headers = calloc(1, sizeof(char *));
    const char *name = get_str(c, def, "graph", true, what);
    if (!name) return;
    size_t n = strlen(name);
    bool ok = n > 0 && n <= GG_GRAPH_NAME_MAX;
    for (size_t i = 0; ok && i < n; i++)
        ok = isalnum((unsigned char)name[i]) || name[i] == '_' || name[i] == '-';
    if (!ok) LERR(c, gg_yaml_get(def, "graph"), "invalid_server", "%s: graph must be a graph name ([A-Za-z0-9_-], at most %d)",
                  what, GG_GRAPH_NAME_MAX);
    else s->target_graph = strdup(name);
}

/* protocol: the era the client speaks to a streamable HTTP server. 2025-11-25 (the default)
 * initializes a session; 2026-07-28 sends stateless requests (client_http.c). There is no
 * automatic choice: a server that answers both would be asked twice on every first contact,
 * and one that mishandles an unknown version must not decide which era graphgate speaks. */
static void load_protocol(lctx *c, gserver *s, const ynode *p, const char *what) {
    if (!p) return;
    if (p->kind == YN_SCALAR && !strcmp(p->str, MCP_VERSION_MODERN)) s->cfg.protocol = MCP_VERSION_MODERN;
    else if (!(p->kind == YN_SCALAR && !strcmp(p->str, MCP_CLIENT_PROTOCOL_VERSION)))
        LERR(c, p, "invalid_server", "%s: protocol must be %s or %s", what, MCP_CLIENT_PROTOCOL_VERSION,
             MCP_VERSION_MODERN);
}

/* on_change (review | quarantine | follow) and suspicious_text (warn | reject): pins.c. */
static void load_pin_policy(lctx *c, gserver *s, const ynode *def, const char *what) {
    const ynode *oc = gg_yaml_get(def, "on_change"), *st = gg_yaml_get(def, "suspicious_text");
    if (oc && (oc->kind != YN_SCALAR || gg_graph_on_change_parse(oc->str) < 0))
        LERR(c, oc, "invalid_server", "%s: on_change must be review, quarantine or follow", what);
    else if (oc) s->on_change = gg_graph_on_change_parse(oc->str);
    if (st && (st->kind != YN_SCALAR || (strcmp(st->str, "warn") && strcmp(st->str, "reject"))))
        LERR(c, st, "invalid_server", "%s: suspicious_text must be warn or reject", what);
    else if (st) s->suspicious_reject = !strcmp(st->str, "reject");
}

/* ${secrets.NAME} in one value: recorded on s (secrets.c); a malformed reference, or on an
 * upload one naming a secret the tenant lacks, is an error at the value. The message is the
 * same whether another tenant has such a secret or none has. */
static void secret_refs(lctx *c, gserver *s, const ynode *v, const char *what) {
    if (!v || v->kind != YN_SCALAR || !v->str || !strstr(v->str, "${secrets.")) return;
    size_t before = s->nsecrets;
    char msg[160];
    if (!gg_graph_secret_scan(s, v->str, msg, sizeof msg)) {
        LERR(c, v, "invalid_secret_ref", "%s: %s", what, msg);
        return;
    }
    const gg_graph_secrets *sec = c->opts ? c->opts->secrets : NULL;
    if (!c->opts || !c->opts->check_secrets || !sec || !sec->exists) return;
    for (size_t i = before; i < s->nsecrets; i++)
        if (!sec->exists(sec->user, c->opts->owner ? c->opts->owner : "", s->secret_names[i]))
            LERR(c, v, "unknown_secret", "%s: secret '%s' is not set (PUT /admin/tenants/{t}/secrets/%s)", what,
                 s->secret_names[i], s->secret_names[i]);
}

/* The references in url and in every headers / env value. */
static void server_secret_refs(lctx *c, gserver *s, const ynode *def, const char *what) {
    secret_refs(c, s, gg_yaml_get(def, "url"), what);
    static const char *const maps[] = {"headers", "env"};
    for (size_t m = 0; m < 2; m++) {
        const ynode *map = gg_yaml_get(def, maps[m]);
        for (size_t i = 0; map && map->kind == YN_MAP && i < map->count; i++) secret_refs(c, s, map->items[2 * i + 1], what);
    }
}

/* `auth:` of a streamable-HTTP server: how graphgate obtains its credentials (OAuth client,
 * src/auth/oauth_client.c, which checks them again when the client starts; here every
 * mistake gets its line:col). Values stay strings, as headers do. */
static json_t *to_json_at(lctx *c, const ynode *v, const char *what);

/* type token_exchange (RFC 8693, on behalf of the caller): each OAuth caller's own access
 * token is the subject, so a client of graphgate's own must authenticate the exchange, and
 * nothing else (an assertion, a user's consent) can stand in for the caller. */
static void load_exchange(lctx *c, const ynode *v, const char *type, const char *w) {
    bool ex = type && !strcmp(type, "token_exchange");
    if (!ex) {
        if (gg_yaml_get(v, "audience"))
            LERR(c, gg_yaml_get(v, "audience"), "invalid_server", "%s.audience is a token_exchange setting (type: token_exchange)",
                 w);
        return;
    }
    if (!gg_yaml_get(v, "client_id"))
        LERR(c, v, "missing_key", "%s: token_exchange needs 'client_id' (graphgate's client at the authorization server)", w);
    static const char *const not_here[] = {"assertion", "redirect_uri", "client_metadata_url", "idp_token_endpoint",
                                           "idp_client_id", "idp_client_secret"};
    for (size_t i = 0; i < sizeof not_here / sizeof *not_here; i++)
        if (gg_yaml_get(v, not_here[i]))
            LERR(c, gg_yaml_get(v, not_here[i]), "invalid_server",
                 "%s.%s does not apply to token_exchange (the subject is the caller's own token)", w, not_here[i]);
    /* per_user: true is refused by load_auth (it needs type oauth) */
}

/* type id_jag (SEP-990): a configured ID token (`assertion`) is the subject of the IdP's
 * exchange, or with `subject: caller` each OAuth caller's own access token (then the server
 * acts for the caller as a token_exchange one does, mcp_auth_for_caller, and no assertion can
 * stand in for the caller). */
static void load_id_jag(lctx *c, const ynode *v, const char *type, const char *w) {
    bool jag = type && !strcmp(type, "id_jag");
    const ynode *sub = gg_yaml_get(v, "subject");
    if (sub && !jag)
        LERR(c, sub, "invalid_server", "%s.subject is an id_jag setting (type: id_jag, subject: caller)", w);
    else if (sub && (sub->kind != YN_SCALAR || strcmp(sub->str, "caller")))
        LERR(c, sub, "invalid_server", "%s.subject must be caller (the calling user's token is the IdP's subject)", w);
    if (!jag) return;
    bool caller = sub && sub->kind == YN_SCALAR && !strcmp(sub->str, "caller");
    if (caller && gg_yaml_get(v, "assertion"))
        LERR(c, gg_yaml_get(v, "assertion"), "invalid_server",
             "%s.assertion does not apply to id_jag with subject: caller (the subject is the caller's own token)", w);
    /* with a subject (caller, or a wrong one said above), no assertion */
    static const char *const need_jag[] = {"idp_token_endpoint", "idp_client_id", "client_id", "assertion"};
    for (size_t i = 0; i < (sub ? 3u : 4u); i++)
        if (!gg_yaml_get(v, need_jag[i])) LERR(c, v, "missing_key", "%s: id_jag needs '%s'", w, need_jag[i]);
}

static void load_auth(lctx *c, gserver *s, const ynode *v, const char *what) {
    static const char *const keys[] = {"type", "client_id", "client_secret", "scope", "token_endpoint_auth_method",
                                       "client_metadata_url", "redirect_uri", "assertion", "private_key",
                                       "signing_algorithm", "idp_token_endpoint", "idp_client_id", "idp_client_secret",
                                       "audience", "dpop", "timeout", "per_user", "subject", NULL};
    char w[200];
    snprintf(w, sizeof w, "%s.auth", what);
    if (v->kind != YN_MAP) {
        LERR(c, v, "invalid_type", "%s must be a mapping", w);
        return;
    }
    check_keys(c, v, keys, w);
    for (size_t i = 0; i < v->count; i++) secret_refs(c, s, v->items[2 * i + 1], w); /* a client_secret, a key */
    const char *type = get_str(c, v, "type", true, w);
    if (type && strcmp(type, "oauth") && strcmp(type, "client_credentials") && strcmp(type, "jwt_bearer") &&
        strcmp(type, "id_jag") && strcmp(type, "token_exchange"))
        LERR(c, gg_yaml_get(v, "type"), "invalid_server",
             "%s.type must be oauth, client_credentials, jwt_bearer, id_jag or token_exchange, not '%s'", w, type);
    load_exchange(c, v, type, w);
    load_id_jag(c, v, type, w);
    for (size_t i = 1; strcmp(keys[i], "dpop"); i++) get_str(c, v, keys[i], false, w); /* each a string */
    const ynode *dp = gg_yaml_get(v, "dpop");
    if (dp && strcmp(json_type_of(dp), "boolean"))
        LERR(c, dp, "invalid_server", "%s.dpop must be true or false", w);
    /* per_user: every caller's own grant (their consent through a URL elicitation), so only
     * the authorization code grant fits, and a secret would be shared by every user anyway */
    const ynode *pu = gg_yaml_get(v, "per_user");
    if (pu && strcmp(json_type_of(pu), "boolean"))
        LERR(c, pu, "invalid_server", "%s.per_user must be true or false", w);
    else if (pu && !strcmp(pu->str, "true")) {
        s->per_user = true;
        if (type && strcmp(type, "oauth"))
            LERR(c, gg_yaml_get(v, "type"), "invalid_server", "%s.per_user needs type oauth (each user's consent), not '%s'", w,
                 type);
    }
    const char *m = get_str(c, v, "token_endpoint_auth_method", false, w);
    if (m && strcmp(m, "client_secret_basic") && strcmp(m, "client_secret_post") && strcmp(m, "none") &&
        strcmp(m, "private_key_jwt"))
        LERR(c, gg_yaml_get(v, "token_endpoint_auth_method"), "invalid_server",
             "%s.token_endpoint_auth_method must be client_secret_basic, client_secret_post, none or private_key_jwt", w);
    const char *alg = get_str(c, v, "signing_algorithm", false, w);
    if (alg && strcmp(alg, "ES256") && strcmp(alg, "ES384") && strcmp(alg, "RS256") && strcmp(alg, "PS256"))
        LERR(c, gg_yaml_get(v, "signing_algorithm"), "invalid_server", "%s.signing_algorithm must be ES256, ES384, RS256 or PS256",
             w);
    if (m && !strcmp(m, "private_key_jwt") && !gg_yaml_get(v, "private_key"))
        LERR(c, v, "missing_key", "%s: private_key_jwt needs 'private_key' (PEM)", w);
    static const char *const urls[] = {"client_metadata_url", "redirect_uri", "idp_token_endpoint"};
    for (size_t i = 0; i < 3; i++) {
        const char *u = get_str(c, v, urls[i], false, w);
        if (u && strncmp(u, "http://", 7) && strncmp(u, "https://", 8))
            LERR(c, gg_yaml_get(v, urls[i]), "invalid_server", "%s.%s must start with http:// or https://", w, urls[i]);
    }
    if (type && !strcmp(type, "client_credentials") && !gg_yaml_get(v, "client_id"))
        LERR(c, v, "missing_key", "%s: client_credentials needs 'client_id'", w);
    if (type && !strcmp(type, "jwt_bearer") && !gg_yaml_get(v, "assertion"))
        LERR(c, v, "missing_key", "%s: jwt_bearer needs 'assertion' (the workload's JWT)", w);
    const ynode *to = gg_yaml_get(v, "timeout");
    if (to && (!scalar_is_nonneg_int(to) || atol(to->str) < 100 || atol(to->str) > 120000))
        LERR(c, to, "invalid_server", "%s.timeout must be milliseconds between 100 and 120000", w);
    s->auth = to_json_at(c, v, w);
    s->cfg.auth = s->auth;
    s->for_caller = mcp_auth_for_caller(s->auth);
}

static void load_servers(lctx *c, const ynode *v) {
    if (!v) return;
    if (v->kind != YN_MAP) {
        LERR(c, v, "invalid_type", "mcpServers must be a mapping of server name to definition");
        return;
    }
    check_keys(c, v, NULL, "mcpServers");
    gg_graph *g = c->g;
    g->servers = calloc(v->count ? v->count : 1, sizeof *g->servers);
    if (!g->servers) return;
    static const char *const stdio_keys[] = {"type", "command", "args", "cwd", "env", "timeout", "check", "on_change",
                                             "suspicious_text", NULL};
    static const char *const http_keys[] = {"type", "url", "headers", "auth", "timeout", "check", "on_change",
                                            "suspicious_text", "protocol", NULL};
    for (size_t i = 0; i < v->count; i++) {
        const ynode *k = v->items[2 * i], *def = v->items[2 * i + 1];
        gserver *s = &g->servers[g->nservers++];
        pthread_mutex_init(&s->lock, NULL);
        s->graph = g;
        s->name = strdup(k->kind == YN_SCALAR ? k->str : "");
        s->cfg.name = s->name;
        if (c->opts && c->opts->owner) s->cfg.owner = s->owner = strdup(c->opts->owner);
        s->cfg.downstream = c->opts ? c->opts->clients : NULL;
        s->line = k->line;
        s->column = k->column;
        char what[160];
        snprintf(what, sizeof what, "mcpServers.%s", s->name ? s->name : "");
        if (def->kind != YN_MAP) {
            LERR(c, def, "invalid_type", "%s must be a mapping", what);
            continue;
        }
        const char *type = get_str(c, def, "type", false, what);
        bool http = false;
        if (type && !strcmp(type, "graph")) {
            load_graph_server(c, s, def, what);
            continue;
        }
        if (type && !strcmp(type, "streamableHttp")) http = true;
        else if (type && strcmp(type, "stdio") != 0) {
            LERR(c, gg_yaml_get(def, "type"), "invalid_server",
                 "%s: unknown type '%s' (expected stdio, streamableHttp or graph)", what, type);
            continue;
        }
        check_keys(c, def, http ? http_keys : stdio_keys, what);
        const ynode *to = gg_yaml_get(def, "timeout");
        if (to) {
            if (!scalar_is_nonneg_int(to) || atol(to->str) <= 0 || atol(to->str) > 3600000)
                LERR(c, to, "invalid_server", "%s: timeout must be milliseconds between 1 and 3600000", what);
            else s->cfg.timeout_ms = (int)atol(to->str);
        }
        const ynode *ck = gg_yaml_get(def, "check");
        if (ck && (ck->kind != YN_SCALAR || gg_graph_check_mode_parse(ck->str) < 0))
            LERR(c, ck, "invalid_server", "%s: check must be error, warning or off", what);
        else if (ck) s->check = gg_graph_check_mode_parse(ck->str) + 1;
        load_pin_policy(c, s, def, what);
        if (!s->cfg.timeout_ms) s->cfg.timeout_ms = c->opts && c->opts->default_timeout_ms ? c->opts->default_timeout_ms
                                                                                               : MCP_CLIENT_DEFAULT_TIMEOUT_MS;
        gg_error e = GG_ERROR_INIT;
        if (http) {
            s->cfg.transport = MCP_TRANSPORT_HTTP;
            const char *url = get_str(c, def, "url", true, what);
            s->headers = pair_list(c, gg_yaml_get(def, "headers"), "headers", ": ");
            s->cfg.headers = (const char *const *)s->headers;
            if (gg_yaml_get(def, "auth")) load_auth(c, s, gg_yaml_get(def, "auth"), what);
            load_protocol(c, s, gg_yaml_get(def, "protocol"), what);
            s->argv = calloc(1, sizeof(char *));
            s->env = calloc(1, sizeof(char *));
            if (url) {
                s->cfg.url = strdup(url);
                if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))
                    LERR(c, gg_yaml_get(def, "url"), "invalid_server", "%s: url must start with http:// or https://", what);
                else if (c->opts && c->opts->policy && !mcp_policy_check_url(c->opts->policy, url, &e)) {
                    if (!strcmp(e.code, "dns")) /* may resolve later; connections are checked then */
                        LWARN(c, gg_yaml_get(def, "url"), "dns", "%s: %s", what, e.message ? e.message : "");
                    else
                        LERR(c, gg_yaml_get(def, "url"), "policy", "%s: %s", what, e.message ? e.message : "url not allowed");
                }
            }
        } else {
            s->cfg.transport = MCP_TRANSPORT_STDIO;
            const char *cmd = get_str(c, def, "command", true, what);
            s->argv = str_list(c, gg_yaml_get(def, "args"), "args");
            s->env = pair_list(c, gg_yaml_get(def, "env"), "env", "=");
            s->headers = calloc(1, sizeof(char *));
            s->cfg.args = (const char *const *)s->argv;
            s->cfg.env = (const char *const *)s->env;
            const char *cwd = get_str(c, def, "cwd", false, what);
            if (cwd) s->cfg.cwd = strdup(cwd);
            if (cmd) {
                s->cfg.command = strdup(cmd);
                if (!*cmd) LERR(c, gg_yaml_get(def, "command"), "invalid_server", "%s: command is empty", what);
                else if (c->opts && c->opts->policy && !mcp_policy_check_stdio(c->opts->policy, &s->cfg, &e))
                    LERR(c, gg_yaml_get(def, "command"), "policy", "%s: %s", what, e.message ? e.message : "command not allowed");
            }
        }
        server_secret_refs(c, s, def, what);
        /* a per_user server's url is the resource each user consents to: it goes to the
         * authorization server and through the user's browser, so no secret may be in it */
        const ynode *u = gg_yaml_get(def, "url");
        if (s->per_user && u && u->kind == YN_SCALAR && u->str && strstr(u->str, "${secrets."))
            LERR(c, u, "invalid_server",
                 "%s: the url of an auth.per_user server is the resource users consent to (shown to them): it takes no "
                 "${secrets.NAME}; put the secret in a header",
                 what);
        gg_error_clear(&e);
    }
}

static gserver *find_server(gg_graph *g, const char *name) {
    for (size_t i = 0; i < g->nservers; i++)
        if (g->servers[i].name && !strcmp(g->servers[i].name, name)) return &g->servers[i];
    return NULL;
}

/* ---- tools and nodes ---------------------------------------------------------------------- */

bool gg_graph_tool_name_ok(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > 128) return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-' && *s != '.') return false;
    return true;
}

typedef struct pending_ref { /* a target to resolve once every node id is known */
    int *slot;
    const ynode *at;
    const char *node;
    const char *owner; /* id of the node holding the reference */
    bool guessed;      /* missing target: *slot holds the closest node only while reach runs */
} pending_ref;

typedef struct tool_build {
    const ynode **node_at; /* each node's mapping, for positions */
    pending_ref *refs;
    size_t nrefs, crefs;
    const char *owner;
} tool_build;

static void add_ref(tool_build *tb, int *slot, const ynode *at, const char *node) {
    if (tb->nrefs == tb->crefs) {
        size_t nc = tb->crefs ? tb->crefs * 2 : 16;
        pending_ref *nr = realloc(tb->refs, nc * sizeof *nr);
        if (!nr) return;
        tb->refs = nr;
        tb->crefs = nc;
    }
    tb->refs[tb->nrefs++] = (pending_ref){slot, at, node, tb->owner, false};
}

static const char *const type_names[] = {"entry", "mcp", "transform", "switch", "exit", "elicit", "sample", "roots", "ask"};

static void load_switch(lctx *c, gnode *n, const ynode *nm, tool_build *tb) {
    const ynode *conds = gg_yaml_get(nm, "conditions");
    const ynode *next = gg_yaml_get(nm, "next");
    if (!conds) {
        LERR(c, nm, "missing_key", "switch node needs 'conditions'");
        return;
    }
    if (conds->kind != YN_SEQ || conds->count == 0) {
        LERR(c, conds, "invalid_type", "conditions must be a non-empty sequence");
        return;
    }
    n->conds = calloc(conds->count, sizeof *n->conds);
    if (!n->conds) return;
    static const char *const new_keys[] = {"rule", "next", NULL};
    static const char *const old_keys[] = {"rule", "target", NULL};
    bool saw_default = false;
    for (size_t i = 0; i < conds->count; i++) {
        const ynode *cm = conds->items[i];
        gcond *gc = &n->conds[n->ncond++];
        gc->target = -1;
        if (cm->kind != YN_MAP) {
            LERR(c, cm, "invalid_type", "a condition must be a mapping {rule, next}");
            continue;
        }
        bool old = gg_yaml_get(cm, "target") != NULL;
        check_keys(c, cm, old ? old_keys : new_keys, "a switch condition");
        const ynode *rule = gg_yaml_get(cm, "rule");
        const ynode *tgt = gg_yaml_get(cm, old ? "target" : "next");
        if (!tgt) LERR(c, cm, "missing_key", "condition needs '%s'", old ? "target" : "next");
        else if (want_text(c, tgt, "a condition's target node id")) add_ref(tb, &gc->target, tgt, tgt->str);
        if (!rule) {
            if (!old) LERR(c, cm, "missing_key", "condition needs 'rule' (the default goes in the node's 'next')");
            else if (saw_default) LERR(c, cm, "duplicate_default", "more than one condition without a rule");
            else if (i + 1 != conds->count)
                LWARN(c, cm, "unreachable_condition", "conditions after the default (no 'rule') are never tried");
            saw_default = true;
            continue;
        }
        gg_error e = GG_ERROR_INIT;
        json_t *rj = gg_yaml_to_json(rule, &e);
        if (!rj) {
            LERR(c, rule, "jsonlogic", "%s", e.message ? e.message : "invalid rule");
            gg_error_clear(&e);
            continue;
        }
        jsonlogic_options lo = {.resolver = &c->g->resolver, .max_memory_bytes = c->g->max_eval_memory};
        gc->rule = jsonlogic_compile(rj, &lo, &e);
        json_decref(rj);
        if (!gc->rule)
            LERR(c, rule, "jsonlogic", "JSON Logic rule does not compile: %s%s%s", e.message ? e.message : e.code,
                 e.path ? " at " : "", e.path ? e.path : "");
        gg_error_clear(&e);
    }
    if (!next && !saw_default)
        LWARN(c, conds, "no_default", "switch has no default ('next'): a run fails when no condition matches");
    if (next) {
        if (saw_default) LERR(c, next, "duplicate_default", "switch has both 'next' and a condition without a rule");
        else if (want_text(c, next, "next (a node id)")) add_ref(tb, &n->default_next, next, next->str);
    }
}

/* elicitation/create's requestedSchema as the spec restricts it: a flat object whose
 * properties are strings (with format or enum), numbers, integers, booleans, or arrays of
 * enumerated strings (multi-select); every property may have a title, description, default. */
static void check_requested_schema(lctx *c, const ynode *v) {
    if (v->kind != YN_MAP) {
        LERR(c, v, "invalid_schema", "requestedSchema must be a mapping {type: object, properties}");
        return;
    }
    const ynode *t = gg_yaml_get(v, "type"), *props = gg_yaml_get(v, "properties");
    if (!t || t->kind != YN_SCALAR || strcmp(t->str, "object"))
        LERR(c, t ? t : v, "invalid_schema", "requestedSchema must have type: object");
    if (!props || props->kind != YN_MAP) {
        LERR(c, props ? props : v, "invalid_schema", "requestedSchema needs properties (a mapping)");
        return;
    }
    for (size_t i = 0; i < props->count; i++) {
        const ynode *pv = props->items[2 * i + 1], *pt = pv->kind == YN_MAP ? gg_yaml_get(pv, "type") : NULL;
        const char *ty = pt && pt->kind == YN_SCALAR ? pt->str : "";
        if (strcmp(ty, "string") && strcmp(ty, "number") && strcmp(ty, "integer") && strcmp(ty, "boolean") &&
            strcmp(ty, "array"))
            LERR(c, pt ? pt : pv, "invalid_schema",
                 "requestedSchema property '%s' must have type string, number, integer, boolean or array (of enum strings)",
                 props->items[2 * i]->str ? props->items[2 * i]->str : "");
    }
}

/* A client node's timeout (ms the client may take). */
static void load_timeout(lctx *c, gnode *n, const ynode *nm) {
    const ynode *to = gg_yaml_get(nm, "timeout");
    if (to && (!scalar_is_nonneg_int(to) || atol(to->str) <= 0 || atol(to->str) > 3600000))
        LERR(c, to, "invalid_value", "timeout must be a positive integer of ms (at most 3600000)");
    else if (to) n->timeout_ms = (int)atol(to->str);
}

/* elicit / sample: the request's params as an args template (expressions allowed as in mcp
 * args), the required keys, and timeout (ms). */
static void load_client_node(lctx *c, gnode *n, const ynode *nm, const char *what) {
    bool elicit = n->type == GN_ELICIT;
    static const char *const skip[] = {"id", "type", "next", "timeout", NULL};
    const char *need[2] = {elicit ? "message" : "messages", elicit ? "requestedSchema" : "maxTokens"};
    for (int i = 0; i < 2; i++)
        if (!gg_yaml_get(nm, need[i])) LERR(c, nm, "missing_key", "%s needs '%s'", what, need[i]);
    const ynode *rs = gg_yaml_get(nm, "requestedSchema");
    if (rs) check_requested_schema(c, rs);
    load_timeout(c, n, nm);
    n->args = calloc(1, sizeof *n->args);
    if (!n->args) return;
    n->args->kind = GA_OBJECT;
    n->args->keys = calloc(nm->count + 1, sizeof(char *));
    n->args->items = calloc(nm->count + 1, sizeof(gargs *));
    for (size_t i = 0; n->args->keys && n->args->items && i < nm->count; i++) {
        const char *k = nm->items[2 * i]->str;
        bool skipped = !k;
        for (const char *const *s = skip; k && *s; s++) skipped |= !strcmp(*s, k);
        if (skipped) continue;
        n->args->keys[n->args->count] = strdup(k);
        n->args->items[n->args->count++] = build_args(c, nm->items[2 * i + 1], true, 1);
    }
}

#define ASK_MAX_REQUESTS 16

/* One request of an ask node: an elicit, sample or roots node without id and next (its key
 * is its id, the inputRequests key of a 2026-07-28 round). */
static void load_ask_request(lctx *c, gnode *s, const char *key, const ynode *v) {
    static const char *const keys[3][12] = {
        {"type", "message", "requestedSchema", "timeout", NULL},
        {"type", "messages", "systemPrompt", "maxTokens", "modelPreferences", "stopSequences", "temperature",
         "includeContext", "metadata", "timeout", NULL},
        {"type", "timeout", NULL},
    };
    s->id = strdup(key);
    s->next = s->default_next = -1;
    s->type = GN_ELICIT;
    if (v->kind != YN_MAP) {
        LERR(c, v, "invalid_type", "ask request '%s' must be a mapping {type: elicit|sample|roots, ...}", key);
        return;
    }
    const char *type = get_str(c, v, "type", true, "an ask request");
    int t = !type ? -1 : !strcmp(type, "elicit") ? 0 : !strcmp(type, "sample") ? 1 : !strcmp(type, "roots") ? 2 : -1;
    if (type && t < 0) LERR(c, gg_yaml_get(v, "type"), "invalid_type", "ask request '%s': type must be elicit, sample or roots", key);
    if (t < 0) return;
    s->type = (gnode_type)(GN_ELICIT + t);
    char what[96];
    snprintf(what, sizeof what, "ask request '%.60s'", key);
    check_keys(c, v, keys[t], what);
    if (t < 2) load_client_node(c, s, v, what);
    else load_timeout(c, s, v);
}

/* ask: requests {key: {type, ...}} — at most ASK_MAX_REQUESTS, asked together. */
static void load_ask(lctx *c, gnode *n, const ynode *nm) {
    const ynode *rq = gg_yaml_get(nm, "requests");
    if (!rq) {
        LERR(c, nm, "missing_key", "an ask node needs 'requests' (a mapping of request key to request)");
        return;
    }
    if (rq->kind != YN_MAP || rq->count == 0 || rq->count > ASK_MAX_REQUESTS) {
        LERR(c, rq, "invalid_value", "requests must be a mapping of 1 to %d requests", ASK_MAX_REQUESTS);
        return;
    }
    n->subs = calloc(rq->count, sizeof *n->subs);
    if (!n->subs) return;
    for (size_t i = 0; i < rq->count; i++) {
        const char *k = rq->items[2 * i]->str;
        load_ask_request(c, &n->subs[n->nsubs++], k ? k : "", rq->items[2 * i + 1]);
    }
}

/* exit `error: TEXT` or `error: {expr: ...}`: reaching the exit fails the run with that
 * message (the client gets an isError result), so a switch can stop a call. */
static void load_exit_error(lctx *c, gnode *n, const ynode *er) {
    if (!er) return;
    n->fails = true;
    if (gg_graph_yaml_is_expr_map(er)) {
        n->expr = compile_expr(c, er->items[1], "exit error expression");
    } else if (er->kind != YN_SCALAR) {
        LERR(c, er, "invalid_type", "exit error must be a string or {expr: ...}");
    } else if (want_text(c, er, "exit error")) {
        n->error_text = strdup(er->str);
    }
}

/* `async: true|false`: only on mcp nodes (a fire-and-forget branch, branch.c). */
static void load_async(lctx *c, gnode *n, const ynode *nm, const char *what) {
    const ynode *a = gg_yaml_get(nm, "async");
    if (!a) return;
    if (n->type != GN_MCP) {
        LERR(c, a, "async_not_allowed", "'async' is allowed only on mcp nodes, not on %s", what);
        return;
    }
    gg_error e = GG_ERROR_INIT;
    json_t *v = a->kind == YN_SCALAR && a->plain ? gg_yaml_plain_scalar(a->str, a->len, &e) : NULL;
    gg_error_clear(&e);
    if (!json_is_boolean(v)) LERR(c, a, "invalid_type", "async must be true or false");
    else n->async = json_is_true(v);
    json_decref(v);
}

/* `relay: true|false` on an mcp node (default false; docs/graphs.md argues why): its
 * server's client then declares the client capabilities it relays. */
static void load_relay(lctx *c, gnode *n, const ynode *nm) {
    const ynode *a = gg_yaml_get(nm, "relay");
    if (!a || n->type != GN_MCP) return; /* on other nodes check_keys reported it */
    gg_error e = GG_ERROR_INIT;
    json_t *v = a->kind == YN_SCALAR && a->plain ? gg_yaml_plain_scalar(a->str, a->len, &e) : NULL;
    gg_error_clear(&e);
    if (!json_is_boolean(v)) LERR(c, a, "invalid_type", "relay must be true or false");
    else n->relay = json_is_true(v);
    json_decref(v);
}

static void load_node(lctx *c, gnode *n, const ynode *nm, tool_build *tb) {
    /* "async" is in every list so that a non-mcp node gets its own message below */
    static const char *const keys[9][14] = {
        {"id", "type", "next", "async", NULL},
        {"id", "type", "server", "tool", "args", "next", "async", "relay", NULL},
        {"id", "type", "transform", "next", "async", NULL},
        {"id", "type", "conditions", "next", "async", NULL},
        {"id", "type", "error", "async", NULL},
        {"id", "type", "message", "requestedSchema", "timeout", "next", "async", NULL},
        {"id", "type", "messages", "systemPrompt", "maxTokens", "modelPreferences", "stopSequences", "temperature",
         "includeContext", "metadata", "timeout", "next", "async", NULL},
        {"id", "type", "timeout", "next", "async", NULL},
        {"id", "type", "requests", "next", "async", NULL},
    };
    n->next = n->default_next = -1;
    const char *id = get_str(c, nm, "id", true, "a node");
    n->id = strdup(id ? id : "");
    c->node = id && *id ? id : NULL;
    tb->owner = n->id;
    if (id && !*id) LERR(c, gg_yaml_get(nm, "id"), "invalid_id", "node id must not be empty");
    const char *type = get_str(c, nm, "type", true, "a node");
    int t = -1;
    for (int i = 0; type && i < 9; i++)
        if (!strcmp(type, type_names[i])) t = i;
    if (type && t < 0) {
        LERR(c, gg_yaml_get(nm, "type"), "invalid_type",
             "unknown node type '%s' (expected entry, mcp, transform, switch, exit, elicit, sample, roots or ask)",
             type);
        check_keys(c, nm, NULL, "a node");
        n->type = GN_TRANSFORM;
        return;
    }
    if (t < 0) return;
    n->type = (gnode_type)t;
    char what[64];
    snprintf(what, sizeof what, "a%s %s node", t == GN_ENTRY || t == GN_EXIT || t == GN_MCP || t == GN_ELICIT ? "n" : "", type);
    check_keys(c, nm, keys[t], what);
    load_async(c, n, nm, what);
    load_relay(c, n, nm);
    const ynode *next = gg_yaml_get(nm, "next");
    if (t != GN_SWITCH && t != GN_EXIT) {
        if (!next) LERR(c, nm, "missing_key", "%s needs 'next'", what);
        else if (want_text(c, next, "next (a node id)")) add_ref(tb, &n->next, next, next->str);
    }
    if (t == GN_TRANSFORM) {
        const ynode *tr = gg_yaml_get(nm, "transform");
        if (!tr) LERR(c, nm, "missing_key", "transform node needs 'transform: {expr: ...}'");
        else if (tr->kind != YN_MAP) LERR(c, tr, "invalid_type", "transform must be a mapping {expr: ...}");
        else {
            static const char *const tk[] = {"expr", NULL};
            check_keys(c, tr, tk, "transform");
            const ynode *ex = gg_yaml_get(tr, "expr");
            if (!ex) LERR(c, tr, "missing_key", "transform needs 'expr'");
            else n->expr = compile_expr(c, ex, "transform expression");
        }
    } else if (t == GN_MCP) {
        const char *server = get_str(c, nm, "server", true, what);
        const char *tool = get_str(c, nm, "tool", true, what);
        if (server) {
            n->server = find_server(c->g, server);
            if (n->server && n->relay) n->server->relays = true;
            if (!n->server)
                LERR(c, gg_yaml_get(nm, "server"), "unknown_server", "server '%s' is not defined in mcpServers", server);
        }
        if (tool) n->tool = strdup(tool);
        const ynode *args = gg_yaml_get(nm, "args");
        if (args && args->kind != YN_MAP) LERR(c, args, "invalid_type", "args must be a mapping");
        if (args && args->kind == YN_MAP) {
            /* the top level is always an object of argument templates; a string directly
             * under it starting with '$' counts as an expression */
            n->args = calloc(1, sizeof *n->args);
            if (n->args) {
                n->args->kind = GA_OBJECT;
                n->args->count = args->count;
                n->args->keys = calloc(args->count + 1, sizeof(char *));
                n->args->items = calloc(args->count + 1, sizeof(gargs *));
                for (size_t i = 0; n->args->keys && n->args->items && i < args->count; i++) {
                    n->args->keys[i] = strdup(args->items[2 * i]->str ? args->items[2 * i]->str : "");
                    n->args->items[i] = build_args(c, args->items[2 * i + 1], true, 1);
                }
                check_keys(c, args, NULL, "args");
            }
        }
    } else if (t == GN_SWITCH) {
        load_switch(c, n, nm, tb);
    } else if (t == GN_EXIT) {
        load_exit_error(c, n, gg_yaml_get(nm, "error"));
    }
    if (t == GN_ELICIT || t == GN_SAMPLE) load_client_node(c, n, nm, what);
    if (t == GN_ROOTS) load_timeout(c, n, nm);
    if (t == GN_ASK) load_ask(c, n, nm);
}

/* Breadth-first walk from the entry; marks reached nodes. */
static void reach(const gtool *t, int from, bool *seen) {
    int *queue = malloc((t->nnodes + 1) * sizeof *queue);
    if (!queue || from < 0) {
        free(queue);
        return;
    }
    size_t head = 0, tail = 0;
    queue[tail++] = from;
    seen[from] = true;
    while (head < tail) {
        const gnode *n = &t->nodes[queue[head++]];
        int outs[2] = {n->next, n->default_next};
        for (size_t i = 0; i < 2 + n->ncond; i++) {
            int to = i < 2 ? outs[i] : n->conds[i - 2].target;
            if (to >= 0 && !seen[to]) {
                seen[to] = true;
                queue[tail++] = to;
            }
        }
    }
    free(queue);
}

static void load_nodes(lctx *c, gtool *t, const ynode *tm);

/* The node a missing target most likely meant: the id closest to it (entries cannot be
 * targets, nodes without an id cannot be named), or -1. */
static int closest_node(const gtool *t, const char *name) {
    const char **ids = malloc(t->nnodes * sizeof *ids);
    if (!ids) return -1;
    for (size_t j = 0; j < t->nnodes; j++)
        ids[j] = t->nodes[j].type != GN_ENTRY && t->nodes[j].id && *t->nodes[j].id ? t->nodes[j].id : NULL;
    const char *best = gg_closest(name, ids, t->nnodes);
    int k = -1;
    for (size_t j = 0; best && j < t->nnodes && k < 0; j++)
        if (ids[j] == best) k = (int)j;
    free(ids);
    return k;
}

/* Point every reference at its node now that every id is known. A missing target is an
 * error naming the closest id; its slot holds that node while reachability is checked,
 * so the nodes the typo cut off are not reported too. False when some missing target has
 * no close id. */
static bool resolve_refs(lctx *c, gtool *t, tool_build *tb) {
    bool all_guessed = true;
    for (size_t r = 0; r < tb->nrefs; r++) {
        pending_ref *ref = &tb->refs[r];
        int found = -1;
        for (size_t j = 0; j < t->nnodes && found < 0; j++)
            if (t->nodes[j].id && !strcmp(t->nodes[j].id, ref->node)) found = (int)j;
        *ref->slot = found;
        c->node = ref->owner;
        if (found < 0) {
            int near = closest_node(t, ref->node);
            if (near >= 0) {
                LERR(c, ref->at, "missing_target", "target node '%s' does not exist (did you mean '%s'?)", ref->node,
                     t->nodes[near].id);
                *ref->slot = near;
                ref->guessed = true;
            } else {
                LERR(c, ref->at, "missing_target", "target node '%s' does not exist", ref->node);
                all_guessed = false;
            }
        } else if (t->nodes[found].type == GN_ENTRY) {
            LERR(c, ref->at, "invalid_target", "the entry node '%s' cannot be a target", ref->node);
        }
    }
    c->node = NULL;
    return all_guessed;
}

/* Nodes the entry never reaches: the exit is an error, any other node a warning. */
static void check_reach(lctx *c, const gtool *t, const tool_build *tb) {
    bool *seen = calloc(t->nnodes, sizeof *seen);
    if (!seen) return;
    reach(t, t->entry, seen);
    if (t->exit >= 0 && !seen[t->exit]) {
        c->node = t->nodes[t->exit].id;
        LERR(c, tb->node_at[t->exit], "exit_unreachable", "the exit node is not reachable from the entry node");
    }
    for (size_t j = 0; j < t->nnodes; j++)
        if (!seen[j] && (int)j != t->exit && tb->node_at[j]->kind == YN_MAP) {
            c->node = t->nodes[j].id && *t->nodes[j].id ? t->nodes[j].id : NULL;
            LWARN(c, tb->node_at[j], "unreachable", "node is not reachable from the entry node");
        }
    free(seen);
}

/* taskSupport: forbidden (default) | optional | required — whether a 2026-07-28 client that
 * declared the tasks extension gets the call as a task; listed as execution.taskSupport.
 * The one reading of it: a graph's tools (below) and proxy entries (proxy.c). */
bool gg_graph_task_decl_load(const ynode *map, bool proxied, const char *file, const char *tool, gg_graph_diags *d,
                             gtask_decl *td) {
    lctx c = {.file = file, .d = d, .tool = tool};
    const ynode *ts = gg_yaml_get(map, "taskSupport"), *st = gg_yaml_get(map, "taskStart");
    if (st && proxied) /* a proxied tool has no input rounds of its own (graphs.md) */
        LERR(&c, st, "invalid_key",
             "taskStart does not apply to a proxied tool: it has no input rounds of its own (its downstream's questions "
             "come while that call is held open), so it is a task from the start (taskSupport) or not at all");
    if (!ts) {
        /* taskSupport defaults to forbidden, so a taskStart alone never applies: said, but a
         * warning, not an error — graphs stored before this check must still load */
        if (st && !proxied)
            LWARN(&c, st, "invalid_value",
                  "taskStart has no effect: it needs taskSupport optional or required (absent: forbidden)");
        return !(st && proxied);
    }
    if (ts->kind != YN_SCALAR || (strcmp(ts->str, "forbidden") && strcmp(ts->str, "optional") && strcmp(ts->str, "required"))) {
        LERR(&c, ts, "invalid_value", "taskSupport must be 'forbidden' (default), 'optional' or 'required'");
        return false;
    }
    td->support = !strcmp(ts->str, "required") ? 2 : !strcmp(ts->str, "optional") ? 1 : 0;
    td->after_input = false;
    if (!st || proxied) return !st;
    /* taskStart: immediately (default) | afterInput — the call first gathers its input in
     * input-required rounds and becomes a task on the round that answers them */
    if (st->kind != YN_SCALAR || (strcmp(st->str, "immediately") && strcmp(st->str, "afterInput"))) {
        LERR(&c, st, "invalid_value", "taskStart must be 'immediately' (default) or 'afterInput'");
        return false;
    }
    if (!td->support) {
        LERR(&c, st, "invalid_value", "taskStart needs taskSupport optional or required");
        return false;
    }
    td->after_input = !strcmp(st->str, "afterInput");
    return true;
}

void gg_graph_task_decl_apply(const gtask_decl *td, json_t *def) {
    if (!def || td->support <= 0) return;
    json_object_set_new(def, "execution", json_pack("{s:s}", "taskSupport", td->support == 2 ? "required" : "optional"));
    if (td->after_input) json_object_set_new(def, "_meta", json_pack("{s:s}", "io.graphgate/taskStart", "afterInput"));
}

static void load_tool(lctx *c, gtool *t, const ynode *tm) {
    static const char *const keys[] = {"name", "title", "description", "inputSchema", "outputSchema", "resultFormat",
                                       "taskSupport", "taskStart", "nodes", NULL};
    t->entry = t->exit = -1;
    const char *name = get_str(c, tm, "name", true, "a tool");
    t->name = strdup(name ? name : "");
    c->tool = name;
    c->node = NULL;
    check_keys(c, tm, keys, "a tool");
    if (name && !gg_graph_tool_name_ok(name))
        LERR(c, gg_yaml_get(tm, "name"), "invalid_name",
             "tool name '%s' must be 1-128 characters of A-Z a-z 0-9 _ - . (MCP tool name rules)", name);
    const char *title = get_str(c, tm, "title", false, "a tool");
    const char *desc = get_str(c, tm, "description", true, "a tool");
    json_t *in = load_tool_schema(c, tm, "inputSchema", true);
    json_t *out = load_tool_schema(c, tm, "outputSchema", false);
    t->def = json_object();
    if (t->def) {
        json_object_set_new(t->def, "name", json_string(t->name));
        if (title) json_object_set_new(t->def, "title", json_string(title));
        json_object_set_new(t->def, "description", json_string(desc ? desc : ""));
        json_object_set_new(t->def, "inputSchema", in ? in : json_pack("{s:s}", "type", "object"));
        if (out) json_object_set_new(t->def, "outputSchema", out);
    } else {
        json_decref(in);
        json_decref(out);
    }
    const ynode *rf = gg_yaml_get(tm, "resultFormat");
    if (rf && (rf->kind != YN_SCALAR || (strcmp(rf->str, "value") && strcmp(rf->str, "callToolResult"))))
        LERR(c, rf, "invalid_value", "resultFormat must be 'value' (default) or 'callToolResult'");
    t->content_result = rf && rf->kind == YN_SCALAR && !strcmp(rf->str, "callToolResult");
    gtask_decl td = GTASK_DECL_INIT;
    gg_graph_task_decl_load(tm, false, c->file, c->tool, c->d, &td);
    gg_graph_task_decl_apply(&td, t->def);
    load_nodes(c, t, tm);
}

/* A tool's nodes (a tool's or an extra's hidden tool): compile, resolve targets, check reachability. */
static void load_nodes(lctx *c, gtool *t, const ynode *tm) {
    const ynode *nodes = gg_yaml_get(tm, "nodes");
    if (!nodes) {
        LERR(c, tm, "missing_key", "tool needs 'nodes'");
        return;
    }
    if (nodes->kind != YN_SEQ || nodes->count == 0) {
        LERR(c, nodes, "invalid_type", "nodes must be a non-empty sequence");
        return;
    }
    if (nodes->count > MAX_NODES) {
        LERR(c, nodes, "too_large", "a tool has at most %d nodes (this one has %zu)", MAX_NODES, nodes->count);
        return;
    }
    t->nodes = calloc(nodes->count, sizeof *t->nodes);
    tool_build tb = {calloc(nodes->count, sizeof(ynode *)), NULL, 0, 0, NULL};
    if (!t->nodes || !tb.node_at) {
        free(tb.node_at);
        return;
    }
    for (size_t i = 0; i < nodes->count && !over_deadline(c); i++) {
        const ynode *nm = nodes->items[i];
        gnode *n = &t->nodes[t->nnodes++];
        n->next = n->default_next = -1;
        tb.node_at[i] = nm;
        c->node = NULL;
        if (nm->kind != YN_MAP) {
            LERR(c, nm, "invalid_type", "a node must be a mapping");
            n->id = strdup("");
            continue;
        }
        load_node(c, n, nm, &tb);
        tb.owner = NULL;
        for (size_t j = 0; j < i; j++)
            if (n->id && *n->id && t->nodes[j].id && !strcmp(t->nodes[j].id, n->id))
                LERR(c, nm, "duplicate_id", "duplicate node id '%s' (first at line %d)", n->id, tb.node_at[j]->line);
        if (n->id && gg_yaml_get(nm, "type")) {
            if (n->type == GN_ENTRY) {
                if (t->entry >= 0) LERR(c, nm, "multiple_entry", "more than one entry node (first is '%s')", t->nodes[t->entry].id);
                else t->entry = (int)i;
            } else if (n->type == GN_EXIT && !n->fails) { /* error exits may be many: each ends a run failing */
                if (t->exit >= 0) LERR(c, nm, "multiple_exit", "more than one exit node (first is '%s')", t->nodes[t->exit].id);
                else t->exit = (int)i;
            }
        }
    }
    bool all_guessed = resolve_refs(c, t, &tb);
    c->node = NULL;
    if (t->entry < 0) LERR(c, nodes, "missing_entry", "tool has no entry node");
    if (t->exit < 0) LERR(c, nodes, "missing_exit", "tool has no exit node");
    /* with a missing target nobody can guess, any node may be the one it meant: what is
     * unreachable is unknown until it is fixed (the missing_target error says so) */
    if (t->entry >= 0 && all_guessed) check_reach(c, t, &tb);
    for (size_t r = 0; r < tb.nrefs; r++)
        if (tb.refs[r].guessed) *tb.refs[r].slot = -1;
    c->node = NULL;
    free(tb.node_at);
    free(tb.refs);
}

/* ---- resources, resource templates, prompts ------------------------------------------------ */

/* A plain mapping or sequence converted to JSON (NULL + error at its position). */
static json_t *to_json_at(lctx *c, const ynode *v, const char *what) {
    gg_error e = GG_ERROR_INIT;
    json_t *j = gg_yaml_to_json(v, &e);
    if (!j) LERR(c, v, "invalid_value", "%s: %s", what, e.message ? e.message : "cannot convert");
    gg_error_clear(&e);
    return j;
}

static bool is_base64(const char *s) {
    size_t n = 0, pad = 0;
    for (; *s; s++, n++) {
        if (*s == '=') pad++;
        else if (pad || !(isalnum((unsigned char)*s) || *s == '+' || *s == '/')) return false;
    }
    return n % 4 == 0 && pad <= 2;
}

/* Optional string keys copied into def when present. */
static void copy_strs(lctx *c, const ynode *m, json_t *def, const char *const *keys, const char *what) {
    for (const char *const *k = keys; *k; k++) {
        const char *v = get_str(c, m, *k, false, what);
        if (v) json_object_set_new(def, *k, json_string(v));
    }
}

/* annotations {audience: [user|assistant], priority: 0..1, lastModified: ISO 8601}. */
static void load_annotations(lctx *c, const ynode *m, json_t *def) {
    const ynode *v = gg_yaml_get(m, "annotations");
    if (!v) return;
    static const char *const keys[] = {"audience", "priority", "lastModified", NULL};
    if (v->kind != YN_MAP) {
        LERR(c, v, "invalid_type", "annotations must be a mapping {audience, priority, lastModified}");
        return;
    }
    check_keys(c, v, keys, "annotations");
    const ynode *aud = gg_yaml_get(v, "audience"), *pri = gg_yaml_get(v, "priority");
    if (aud) {
        bool ok = aud->kind == YN_SEQ;
        for (size_t i = 0; ok && i < aud->count; i++)
            ok = aud->items[i]->kind == YN_SCALAR && (!strcmp(aud->items[i]->str, "user") || !strcmp(aud->items[i]->str, "assistant"));
        if (!ok) LERR(c, aud, "invalid_value", "annotations.audience must be a list of 'user' and 'assistant'");
    }
    if (pri && (!scalar_is_number(pri) || atof(pri->str) < 0 || atof(pri->str) > 1))
        LERR(c, pri, "invalid_value", "annotations.priority must be a number from 0 to 1");
    get_str(c, v, "lastModified", false, "annotations");
    json_t *j = to_json_at(c, v, "annotations");
    if (j) json_object_set_new(def, "annotations", j);
}

/* "resource:<uri>" etc.: the name diagnostics and the execution history know an extra by
 * (x->run holds it; its hidden tool, if any, gets the same name). */
static const char *extra_label(gextra *x, const char *prefix) {
    size_t n = strlen(prefix) + strlen(x->key ? x->key : "") + 1;
    if ((x->run = malloc(n))) snprintf(x->run, n, "%s%s", prefix, x->key ? x->key : "");
    return x->run;
}

/* The nodes producing an extra, as a hidden tool appended to g->tools (named x->run). */
static void load_extra_nodes(lctx *c, gextra *x, const ynode *m) {
    gg_graph *g = c->g;
    gtool *nt = realloc(g->tools, (g->ntools + 1) * sizeof *nt);
    if (!nt) return;
    g->tools = nt;
    gtool *t = &g->tools[g->ntools++];
    memset(t, 0, sizeof *t);
    t->entry = t->exit = -1;
    t->name = strdup(x->run ? x->run : "");
    x->has_nodes = true;
    load_nodes(c, t, m);
}

/* completions {name: [values]}: each name must be one of `names` (NULL-terminated). */
static void load_completions(lctx *c, gextra *x, const ynode *m, const char *const *names, const char *what) {
    const ynode *v = gg_yaml_get(m, "completions");
    if (!v) return;
    if (v->kind != YN_MAP) {
        LERR(c, v, "invalid_type", "completions must be a mapping {%s: [values]}", what);
        return;
    }
    check_keys(c, v, names, "completions");
    for (size_t i = 0; i < v->count; i++) {
        const ynode *vals = v->items[2 * i + 1];
        bool ok = vals->kind == YN_SEQ && vals->count <= 1000;
        for (size_t j = 0; ok && j < vals->count; j++) ok = vals->items[j]->kind == YN_SCALAR;
        if (!ok) LERR(c, vals, "invalid_type", "completions of '%s' must be a list of at most 1000 strings", v->items[2 * i]->str);
    }
    x->completions = to_json_at(c, v, "completions");
}

static bool extra_dup(lctx *c, const ynode *at, gextra_kind kind, const char *key) {
    for (size_t i = 0; i + 1 < c->g->nextras; i++)
        if (c->g->extras[i].kind == kind && c->g->extras[i].key && !strcmp(c->g->extras[i].key, key)) {
            LERR(c, at, "duplicate_name", "'%s' is declared twice", key);
            return true;
        }
    return false;
}

/* Exactly one of the content keys (or nodes) must be present. */
static const ynode *one_source(lctx *c, const ynode *m, const char *const *keys, const char *what) {
    const ynode *found = NULL;
    for (const char *const *k = keys; *k; k++) {
        const ynode *v = gg_yaml_get(m, *k);
        if (v && found) LERR(c, v, "conflicting_keys", "%s takes only one of %s", what, "its content keys or nodes");
        if (v && !found) found = v;
    }
    if (!found) LERR(c, m, "missing_key", "%s needs its content (%s%s%s) or nodes", what, keys[0], keys[1] && keys[2] ? ", " : "",
                     keys[1] && keys[2] ? keys[1] : "");
    return found;
}

static void load_resource(lctx *c, gextra *x, const ynode *m) {
    static const char *const keys[] = {"uri", "name", "title", "description", "mimeType", "annotations", "size", "text",
                                       "blob", "nodes", NULL};
    static const char *const strs[] = {"title", "description", "mimeType", NULL};
    static const char *const src[] = {"text", "blob", "nodes", NULL};
    check_keys(c, m, keys, "a resource");
    const char *uri = get_str(c, m, "uri", true, "a resource"), *name = get_str(c, m, "name", true, "a resource");
    if (uri && !strchr(uri, ':')) LERR(c, gg_yaml_get(m, "uri"), "invalid_uri", "resource uri '%s' needs a scheme (scheme:...)", uri);
    x->key = strdup(uri ? uri : "");
    c->tool = extra_label(x, "resource:");
    x->def = json_pack("{s:s,s:s}", "uri", x->key, "name", name ? name : "");
    if (!x->def) return;
    copy_strs(c, m, x->def, strs, "a resource");
    load_annotations(c, m, x->def);
    const ynode *size = gg_yaml_get(m, "size");
    if (size && !scalar_is_nonneg_int(size)) LERR(c, size, "invalid_value", "size must be a non-negative integer (bytes)");
    else if (size) json_object_set_new(x->def, "size", json_integer(atoll(size->str)));
    const ynode *s = one_source(c, m, src, "a resource");
    if (uri) extra_dup(c, m, GX_RESOURCE, uri);
    if (!s) return;
    if (s == gg_yaml_get(m, "nodes")) return load_extra_nodes(c, x, m);
    bool blob = s == gg_yaml_get(m, "blob");
    const char *v = get_str(c, m, blob ? "blob" : "text", false, "a resource");
    if (v && blob && !is_base64(v)) LERR(c, s, "invalid_value", "blob must be base64 (RFC 4648, padded)");
    if (v) x->value = json_pack("{s:s}", blob ? "blob" : "text", v);
}

/* RFC 6570 expressions this server matches: {var} and {+var}; names are returned in vars. */
static void template_vars(lctx *c, const ynode *at, const char *t, const char **vars, size_t max, size_t *n,
                          char *names, size_t names_size) {
    size_t used = 0;
    for (const char *p = t; *p; p++) {
        if (*p == '}') {
            LERR(c, at, "invalid_template", "uriTemplate has a '}' without '{'");
            return;
        }
        if (*p != '{') continue;
        const char *end = strchr(p, '}');
        if (!end) {
            LERR(c, at, "invalid_template", "uriTemplate has an unclosed '{'");
            return;
        }
        const char *name = p + 1 + (p[1] == '+');
        size_t len = (size_t)(end - name);
        bool ok = len > 0 && len < 64;
        for (const char *q = name; ok && q < end; q++) ok = isalnum((unsigned char)*q) || *q == '_' || *q == '.';
        if (!ok) {
            LERR(c, at, "invalid_template", "uriTemplate expression '%.*s' is not {name} or {+name} (RFC 6570 levels 1-2)",
                 (int)(end - p + 1), p);
            return;
        }
        if (end[1] == '{') LERR(c, at, "invalid_template", "uriTemplate has two expressions with nothing between them");
        if (*n == max) {
            LERR(c, at, "invalid_template", "uriTemplate has more than %zu variables", max);
            return;
        }
        if (used + len + 1 <= names_size) {
            memcpy(names + used, name, len);
            names[used + len] = 0;
            vars[(*n)++] = names + used;
            used += len + 1;
        }
        p = end;
    }
}

static void load_template(lctx *c, gextra *x, const ynode *m) {
    static const char *const keys[] = {"uriTemplate", "name", "title", "description", "mimeType", "annotations",
                                       "completions", "nodes", NULL};
    static const char *const strs[] = {"title", "description", "mimeType", NULL};
    check_keys(c, m, keys, "a resource template");
    const char *ut = get_str(c, m, "uriTemplate", true, "a resource template");
    const char *name = get_str(c, m, "name", true, "a resource template");
    x->key = strdup(ut ? ut : "");
    c->tool = extra_label(x, "template:");
    x->def = json_pack("{s:s,s:s}", "uriTemplate", x->key, "name", name ? name : "");
    if (!x->def) return;
    copy_strs(c, m, x->def, strs, "a resource template");
    load_annotations(c, m, x->def);
    const char *vars[17] = {0};
    size_t nv = 0;
    char names[1024];
    size_t before = c->d ? c->d->errors : 0;
    if (ut) template_vars(c, gg_yaml_get(m, "uriTemplate"), ut, vars, 16, &nv, names, sizeof names);
    if (ut && !nv && c->d && c->d->errors == before) LERR(c, gg_yaml_get(m, "uriTemplate"), "invalid_template", "uriTemplate has no {variable}: declare a resource");
    if (ut) extra_dup(c, m, GX_TEMPLATE, ut);
    load_completions(c, x, m, vars, "variable");
    if (!gg_yaml_get(m, "nodes")) LERR(c, m, "missing_key", "a resource template needs nodes (the entry node receives the variables)");
    else load_extra_nodes(c, x, m);
}

/* Static prompt messages: a string (one user text message) or [{role, content}]. */
static json_t *load_messages(lctx *c, const ynode *v) {
    if (v->kind == YN_SCALAR && want_text(c, v, "messages"))
        return json_pack("[{s:s,s:{s:s,s:s}}]", "role", "user", "content", "type", "text", "text", v->str);
    if (v->kind != YN_SEQ || v->count == 0) {
        LERR(c, v, "invalid_type", "messages must be a string or a non-empty list of {role, content}");
        return NULL;
    }
    for (size_t i = 0; i < v->count; i++) {
        const ynode *msg = v->items[i];
        static const char *const mk[] = {"role", "content", NULL};
        if (msg->kind != YN_MAP) {
            LERR(c, msg, "invalid_type", "a message must be a mapping {role, content}");
            continue;
        }
        check_keys(c, msg, mk, "a message");
        const char *role = get_str(c, msg, "role", true, "a message");
        if (role && strcmp(role, "user") && strcmp(role, "assistant"))
            LERR(c, gg_yaml_get(msg, "role"), "invalid_value", "role must be 'user' or 'assistant'");
        const ynode *ct = gg_yaml_get(msg, "content");
        const char *type = ct && ct->kind == YN_MAP ? get_str(c, ct, "type", true, "message content") : NULL;
        if (!ct) LERR(c, msg, "missing_key", "a message needs 'content'");
        else if (ct->kind != YN_MAP) LERR(c, ct, "invalid_type", "content must be a mapping {type, ...}");
        else if (type && strcmp(type, "text") && strcmp(type, "image") && strcmp(type, "audio") && strcmp(type, "resource") &&
                 strcmp(type, "resource_link"))
            LERR(c, gg_yaml_get(ct, "type"), "invalid_value", "content type must be text, image, audio, resource or resource_link");
    }
    return to_json_at(c, v, "messages");
}

static void load_prompt(lctx *c, gextra *x, const ynode *m) {
    static const char *const keys[] = {"name", "title", "description", "arguments", "completions", "messages", "nodes", NULL};
    static const char *const strs[] = {"title", "description", NULL};
    static const char *const src[] = {"messages", "nodes", NULL};
    check_keys(c, m, keys, "a prompt");
    const char *name = get_str(c, m, "name", true, "a prompt");
    x->key = strdup(name ? name : "");
    c->tool = extra_label(x, "prompt:");
    x->def = json_pack("{s:s}", "name", x->key);
    if (!x->def) return;
    copy_strs(c, m, x->def, strs, "a prompt");
    const ynode *args = gg_yaml_get(m, "arguments");
    const char *names[65] = {0};
    size_t na = 0;
    if (args && (args->kind != YN_SEQ || args->count > 64)) LERR(c, args, "invalid_type", "arguments must be a list of at most 64 {name, description, required}");
    else if (args) {
        json_t *arr = json_array();
        for (size_t i = 0; i < args->count; i++) {
            const ynode *a = args->items[i];
            static const char *const ak[] = {"name", "title", "description", "required", NULL};
            static const char *const as[] = {"title", "description", NULL};
            if (a->kind != YN_MAP) {
                LERR(c, a, "invalid_type", "an argument must be a mapping {name, description, required}");
                continue;
            }
            check_keys(c, a, ak, "a prompt argument");
            const char *an = get_str(c, a, "name", true, "a prompt argument");
            const ynode *req = gg_yaml_get(a, "required");
            if (req && (req->kind != YN_SCALAR || !req->plain || (strcmp(req->str, "true") && strcmp(req->str, "false"))))
                LERR(c, req, "invalid_type", "required must be true or false");
            if (!an) continue;
            for (size_t j = 0; j < na; j++)
                if (!strcmp(names[j], an)) LERR(c, a, "duplicate_name", "argument '%s' is declared twice", an);
            names[na++] = an;
            json_t *ad = json_pack("{s:s}", "name", an);
            copy_strs(c, a, ad, as, "a prompt argument");
            if (req && !strcmp(req->str, "true")) json_object_set_new(ad, "required", json_true());
            json_array_append_new(arr, ad);
        }
        json_object_set_new(x->def, "arguments", arr);
    }
    if (name) extra_dup(c, m, GX_PROMPT, name);
    load_completions(c, x, m, names, "argument");
    const ynode *s = one_source(c, m, src, "a prompt");
    if (s && s == gg_yaml_get(m, "nodes")) load_extra_nodes(c, x, m);
    else if (s) x->value = load_messages(c, s);
}

/* resources, resourceTemplates and prompts next to tools (each optional). */
static void load_extras(lctx *c, const ynode *root) {
    static const char *const lists[] = {"resources", "resourceTemplates", "prompts"};
    gg_graph *g = c->g;
    g->npublic = g->ntools;
    json_t **out[] = {&g->resources_json, &g->templates_json, &g->prompts_json};
    size_t total = 0;
    for (int k = 0; k < 3; k++) {
        const ynode *v = gg_yaml_get(root, lists[k]);
        if (v && v->kind != YN_SEQ) LERR(c, v, "invalid_type", "%s must be a sequence", lists[k]);
        else if (v) total += v->count;
    }
    if (!total || !(g->extras = calloc(total, sizeof *g->extras))) return;
    for (int k = 0; k < 3; k++) {
        const ynode *v = gg_yaml_get(root, lists[k]);
        if (!v || v->kind != YN_SEQ) continue;
        *out[k] = json_array();
        for (size_t i = 0; i < v->count; i++) {
            gextra *x = &g->extras[g->nextras++];
            x->kind = (gextra_kind)k;
            c->tool = c->node = NULL;
            if (v->items[i]->kind != YN_MAP) {
                LERR(c, v->items[i], "invalid_type", "an item of %s must be a mapping", lists[k]);
                continue;
            }
            if (k == 0) load_resource(c, x, v->items[i]);
            else if (k == 1) load_template(c, x, v->items[i]);
            else load_prompt(c, x, v->items[i]);
            if (x->def) json_array_append(*out[k], x->def);
        }
    }
    c->tool = c->node = NULL;
}

/* ---- top level ---------------------------------------------------------------------------- */

static long get_limit(lctx *c, const ynode *lim, const char *key, long def) {
    const ynode *v = gg_yaml_get(lim, key);
    if (!v) return def;
    if (!scalar_is_nonneg_int(v) || atol(v->str) <= 0 || strlen(v->str) > 12) {
        LERR(c, v, "invalid_limit", "executionLimits.%s must be a positive integer", key);
        return def;
    }
    return atol(v->str);
}

/* A declared limit above the operator's cap: refused at upload, lowered (with a warning)
 * when clamp_limits (stored versions loaded after the cap was lowered). */
static long cap_limit(lctx *c, const ynode *lim, const char *key, long v, long cap) {
    const ynode *at = gg_yaml_get(lim, key);
    if (cap <= 0 || v <= cap || !at) return v;
    if (c->opts && c->opts->clamp_limits) {
        LWARN(c, at, "limit_clamped", "executionLimits.%s %ld is above the server's cap; %ld is used", key, v, cap);
        return cap;
    }
    LERR(c, at, "limit_exceeds_cap", "executionLimits.%s %ld is above this server's cap of %ld", key, v, cap);
    return cap;
}

/* server.cache: the caching hint of 2026-07-28 list and read results. ttlMs is how long a
 * client may keep a result, so also how long a new version may stay unseen: bounded to a
 * day. */
static void load_cache(lctx *c, const ynode *cache) {
    c->g->cache_ttl_ms = 0;
    c->g->cache_public = false;
    if (!cache) return;
    if (cache->kind != YN_MAP) {
        LERR(c, cache, "invalid_type", "server.cache must be a mapping {ttlMs, scope}");
        return;
    }
    static const char *const ck[] = {"ttlMs", "scope", NULL};
    check_keys(c, cache, ck, "server.cache");
    const ynode *ttl = gg_yaml_get(cache, "ttlMs");
    if (ttl && (!scalar_is_nonneg_int(ttl) || strlen(ttl->str) > 9 || atol(ttl->str) > 86400000))
        LERR(c, ttl, "invalid_value", "server.cache.ttlMs must be an integer from 0 to 86400000 (a day)");
    else if (ttl) c->g->cache_ttl_ms = (int)atol(ttl->str);
    const char *scope = get_str(c, cache, "scope", false, "server.cache");
    if (scope && strcmp(scope, "public") && strcmp(scope, "private"))
        LERR(c, gg_yaml_get(cache, "scope"), "invalid_value", "server.cache.scope must be public or private");
    else c->g->cache_public = scope && !strcmp(scope, "public");
}

/* The ordinary tools: a non-empty sequence, or an empty / absent one beside `proxy:`. */
static bool load_tools(lctx *c, const ynode *root, const ynode *tools, bool proxy) {
    gg_graph *g = c->g;
    if (!(g->tools_json = json_array())) return false;
    if (!tools && !proxy) {
        LERR(c, root, "missing_key", "the graph file needs 'tools' (or 'proxy')");
        return false;
    }
    if (tools && (tools->kind != YN_SEQ || (tools->count == 0 && !proxy))) {
        LERR(c, tools, "invalid_type", "tools must be a non-empty sequence");
        return false;
    }
    if (tools && tools->count > MAX_TOOLS) {
        LERR(c, tools, "too_large", "a graph has at most %d tools (this one has %zu)", MAX_TOOLS, tools->count);
        return false;
    }
    if (!tools || !tools->count) return true;
    if (!(g->tools = calloc(tools->count, sizeof *g->tools))) return false;
    for (size_t i = 0; i < tools->count && !over_deadline(c); i++) {
        const ynode *tm = tools->items[i];
        gtool *t = &g->tools[g->ntools++];
        t->entry = t->exit = -1;
        c->tool = NULL;
        c->node = NULL;
        if (tm->kind != YN_MAP) {
            LERR(c, tm, "invalid_type", "a tool must be a mapping");
            t->name = strdup("");
            continue;
        }
        load_tool(c, t, tm);
        for (size_t j = 0; j < i; j++)
            if (*t->name && !strcmp(g->tools[j].name, t->name))
                LERR(c, tm, "duplicate_tool", "duplicate tool name '%s'", t->name);
        if (t->def) json_array_append(g->tools_json, t->def);
    }
    return true;
}

/* A proxied tool (proxy.c): loaded as any tool from its synthesized mapping, then listed
 * with the downstream's definition, its downstream node's arguments compiled from args. */
static void add_proxy_tool(void *user, const gproxy_tool *pt) {
    lctx *c = user;
    gg_graph *g = c->g;
    gtool *nt = realloc(g->tools, (g->ntools + 1) * sizeof *nt);
    if (!nt) {
        json_decref(pt->def);
        return;
    }
    g->tools = nt;
    gtool *t = &g->tools[g->ntools++];
    memset(t, 0, sizeof *t);
    size_t before = c->d ? c->d->count : 0;
    load_tool(c, t, pt->map);
    gg_graph_diag_dedupe_from(c->d, before); /* the entry's hook nodes again: reported for its first tool */
    for (size_t j = 0; j + 1 < g->ntools; j++)
        if (!strcmp(g->tools[j].name, t->name)) {
            LERR(c, pt->at, "duplicate_tool", "duplicate tool name '%s' (a proxied tool's name must differ from every other tool's)",
                 t->name);
            break;
        }
    json_decref(t->def);
    t->def = pt->def;
    for (size_t j = 0; j < t->nnodes; j++)
        if (t->nodes[j].type == GN_MCP && !strcmp(t->nodes[j].id, "downstream") && (c->node = "downstream")) {
            gargs_free(t->nodes[j].args);
            if ((t->nodes[j].args = calloc(1, sizeof(gargs)))) {
                t->nodes[j].args->kind = GA_EXPR;
                t->nodes[j].args->expr = compile_expr(c, pt->args, "proxy arguments");
            }
            t->nodes[j].raw_result = pt->raw;
            t->nodes[j].relay = true; /* a proxy passes its downstream's questions through */
            if (t->nodes[j].server) t->nodes[j].server->relays = true;
        }
    if (pt->raw) t->content_result = true; /* the exit's output is that CallToolResult */
    c->tool = c->node = NULL;
    json_array_append(g->tools_json, t->def);
}

static void load_top(lctx *c, const ynode *root) {
    static const char *const keys[] = {"version", "server", "executionLimits", "mcpServers", "tools", "resources",
                                       "resourceTemplates", "prompts", "proxy", NULL};
    gg_graph *g = c->g;
    if (!root || root->kind != YN_MAP) {
        LERR(c, root, "invalid_type", "a graph file must be a mapping with server and tools");
        return;
    }
    check_keys(c, root, keys, "the graph file");
    const ynode *ver = gg_yaml_get(root, "version");
    if (ver && strcmp(json_type_of(ver), "number") != 0) want_text(c, ver, "version");
    const ynode *srv = gg_yaml_get(root, "server");
    if (!srv) LERR(c, root, "missing_key", "the graph file needs 'server' {name, version}");
    else if (srv->kind != YN_MAP) LERR(c, srv, "invalid_type", "server must be a mapping {name, version}");
    else {
        static const char *const sk[] = {"name", "version", "title", "instructions", "cache", NULL};
        check_keys(c, srv, sk, "server");
        const char *name = get_str(c, srv, "name", true, "server");
        const char *version = get_str_ex(c, srv, "version", true, "server", true);
        const char *title = get_str(c, srv, "title", false, "server");
        const char *instr = get_str(c, srv, "instructions", false, "server");
        if (name && !*name) LERR(c, gg_yaml_get(srv, "name"), "invalid_name", "server name must not be empty");
        g->name = strdup(name ? name : "");
        g->version = strdup(version ? version : "");
        g->title = strdup(title ? title : g->name ? g->name : "");
        if (instr) g->instructions = strdup(instr);
        load_cache(c, gg_yaml_get(srv, "cache"));
    }
    g->max_node_executions = DEFAULT_MAX_NODE_EXECUTIONS;
    g->max_execution_ms = DEFAULT_MAX_EXECUTION_MS;
    /* the operator's memory caps are also the defaults: a graph may only ask for less */
    g->max_eval_memory = c->opts && c->opts->cap_eval_memory > 0 ? c->opts->cap_eval_memory : GG_GRAPH_EVAL_MEMORY;
    g->max_run_memory = c->opts && c->opts->cap_run_memory > 0 ? c->opts->cap_run_memory : GG_GRAPH_RUN_MEMORY;
    const ynode *lim = gg_yaml_get(root, "executionLimits");
    if (lim) {
        if (lim->kind != YN_MAP) LERR(c, lim, "invalid_type", "executionLimits must be a mapping");
        else {
            static const char *const lk[] = {"maxNodeExecutions", "maxExecutionTimeMs", "maxEvalMemoryBytes",
                                             "maxRunMemoryBytes", NULL};
            check_keys(c, lim, lk, "executionLimits");
            long m = get_limit(c, lim, "maxNodeExecutions", DEFAULT_MAX_NODE_EXECUTIONS);
            m = cap_limit(c, lim, "maxNodeExecutions", m, c->opts ? c->opts->cap_node_executions : 0);
            g->max_node_executions = m > 100000000 ? 100000000 : (int)m;
            g->max_execution_ms = get_limit(c, lim, "maxExecutionTimeMs", DEFAULT_MAX_EXECUTION_MS);
            g->max_execution_ms = cap_limit(c, lim, "maxExecutionTimeMs", g->max_execution_ms,
                                            c->opts ? c->opts->cap_execution_ms : 0);
            g->max_eval_memory = cap_limit(c, lim, "maxEvalMemoryBytes",
                                           get_limit(c, lim, "maxEvalMemoryBytes", g->max_eval_memory),
                                           g->max_eval_memory);
            g->max_run_memory = cap_limit(c, lim, "maxRunMemoryBytes",
                                          get_limit(c, lim, "maxRunMemoryBytes", g->max_run_memory),
                                          g->max_run_memory);
        }
    }
    /* the defaults obey the caps too, silently (the graph did not ask for more) */
    if (c->opts && c->opts->cap_node_executions > 0 && g->max_node_executions > c->opts->cap_node_executions)
        g->max_node_executions = (int)c->opts->cap_node_executions;
    if (c->opts && c->opts->cap_execution_ms > 0 && g->max_execution_ms > c->opts->cap_execution_ms)
        g->max_execution_ms = c->opts->cap_execution_ms;
    load_servers(c, gg_yaml_get(root, "mcpServers"));
    const ynode *tools = gg_yaml_get(root, "tools"), *proxy = gg_yaml_get(root, "proxy");
    if (!load_tools(c, root, tools, proxy != NULL)) return;
    gproxy_sink sink = {add_proxy_tool, c};
    gg_graph_proxy_load(g, proxy, c->file, c->opts, c->d, MAX_TOOLS - g->ntools, &sink);
    gg_graph_pin_nodes(g, c->opts); /* quarantined tools its mcp nodes call fail there */
    load_extras(c, root);
    c->tool = NULL;
    for (size_t i = 0; i < g->nservers; i++) { /* servers nobody calls are probably a typo */
        bool used = false;
        for (size_t t = 0; t < g->ntools && !used; t++)
            for (size_t n = 0; n < g->tools[t].nnodes && !used; n++)
                if (g->tools[t].nodes[n].server == &g->servers[i]) used = true;
        used |= gg_graph_proxies(g, g->servers[i].name); /* even while its catalog is unknown */
        if (!used)
            gg_graph_diag_add(c->d, GG_DIAG_WARNING, "unused_server", c->file, g->servers[i].line, g->servers[i].column, NULL, NULL,
                      "mcpServers.%s is not used by any mcp node", g->servers[i].name);
    }
}

/* ---- public API --------------------------------------------------------------------------- */

/* Free everything a (possibly half-built) graph holds. */
void gg_graph_free_internal(gg_graph *g) {
    if (!g) return;
    for (size_t i = 0; i < g->ntools; i++) {
        gtool *t = &g->tools[i];
        for (size_t j = 0; j < t->nnodes; j++) {
            gnode *n = &t->nodes[j];
            free(n->id);
            free(n->tool);
            free(n->error_text);
            gargs_free(n->args);
            jsonata_free(n->expr);
            for (size_t k = 0; k < n->ncond; k++) jsonlogic_free(n->conds[k].rule);
            free(n->conds);
            for (size_t k = 0; k < n->nsubs; k++) {
                free(n->subs[k].id);
                gargs_free(n->subs[k].args);
            }
            free(n->subs);
        }
        free(t->nodes);
        free(t->name);
        json_decref(t->def);
    }
    free(g->tools);
    for (size_t i = 0; i < g->nextras; i++) {
        free(g->extras[i].key);
        free(g->extras[i].run);
        json_decref(g->extras[i].def);
        json_decref(g->extras[i].value);
        json_decref(g->extras[i].completions);
    }
    free(g->extras);
    json_decref(g->resources_json);
    json_decref(g->templates_json);
    json_decref(g->prompts_json);
    for (size_t i = 0; i < g->nservers; i++) {
        gserver *s = &g->servers[i];
        gg_graph_client_detach(s); /* the last compilation sharing it stops it (clients.c) */
        gg_graph_secrets_free(s);
        gg_graph_users_free(s);
        pthread_mutex_destroy(&s->lock);
        free(s->name);
        free(s->owner);
        free((char *)s->cfg.command);
        free((char *)s->cfg.cwd);
        free((char *)s->cfg.url);
        free(s->target_graph);
        for (char **p = s->argv; p && *p; p++) free(*p);
        for (char **p = s->env; p && *p; p++) free(*p);
        for (char **p = s->headers; p && *p; p++) free(*p);
        free(s->argv);
        free(s->env);
        free(s->headers);
        json_decref(s->auth);
    }
    free(g->servers);
    pthread_mutex_destroy(&g->notify_mu);
    free(g->notify_tag);
    json_decref(g->tools_json);
    json_decref(g->proxied);
    json_decref(g->pins);
    json_decref(g->withheld);
    json_decref(g->px_extras);
    jsonata_env_free(g->env);
    free(g->name);
    free(g->title);
    free(g->version);
    free(g->instructions);
    free(g);
}

/* Parse, validate and compile YAML source; every problem goes to diags; NULL on any error. */
gg_graph *gg_graph_load_string(const char *src, size_t len, const char *name, const gg_graph_options *opts,
                               gg_graph_diags *diags) {
    gg_graph_diags local = GG_GRAPH_DIAGS_INIT;
    gg_graph_diags *d = diags ? diags : &local;
    size_t errors_before = d->errors;
    size_t max = opts && opts->max_source_bytes ? opts->max_source_bytes : DEFAULT_MAX_SOURCE;
    lctx c = {name, src, len, d, NULL, opts, NULL, NULL, false};
    if (len > max) {
        gg_graph_diag_add(d, GG_DIAG_ERROR, "too_large", name, 0, 0, NULL, NULL, "graph source is %zu bytes (limit %zu)", len, max);
        gg_graph_diags_free(&local);
        return NULL;
    }
    gg_error e = GG_ERROR_INIT;
    ydoc doc;
    if (!gg_yaml_doc_parse(&doc, src, len, opts ? opts->max_alias_nodes : 0, &e)) {
        gg_graph_diag_add(d, GG_DIAG_ERROR, e.code, name, e.line, e.column, NULL, NULL, "%s", e.message ? e.message : "invalid YAML");
        gg_error_clear(&e);
        gg_graph_diags_free(&local);
        return NULL;
    }
    gg_graph *g = calloc(1, sizeof *g);
    if (!g) {
        gg_yaml_doc_free(&doc);
        gg_graph_diags_free(&local);
        return NULL;
    }
    g->refcount = 1;
    pthread_mutex_init(&g->notify_mu, NULL);
    g->policy = opts ? opts->policy : NULL;
    g->secrets = opts ? opts->secrets : NULL;
    g->env = gg_graph_history_env(&e);
    g->resolver = gg_graph_var_resolver_template;
    g->resolver.user = g;
    c.g = g;
    if (!g->env) {
        gg_graph_diag_add(d, GG_DIAG_ERROR, "internal_error", name, 0, 0, NULL, NULL, "cannot build the expression environment: %s",
                  e.message ? e.message : "");
        gg_error_clear(&e);
    } else {
        load_top(&c, doc.root);
        if (d->errors == errors_before && opts && opts->downstream) gg_graph_downstream_check(g, doc.root, name, opts, d);
    }
    gg_yaml_doc_free(&doc);
    bool failed = d->errors != errors_before;
    gg_graph_diags_free(&local);
    if (failed) {
        gg_graph_free_internal(g);
        return NULL;
    }
    return g;
}

/* gg_graph_load_string on a file's content (bounded by max_source_bytes). */
gg_graph *gg_graph_load_file(const char *path, const gg_graph_options *opts, gg_graph_diags *diags) {
    size_t max = opts && opts->max_source_bytes ? opts->max_source_bytes : DEFAULT_MAX_SOURCE;
    FILE *f = fopen(path, "rb");
    if (!f) {
        gg_graph_diag_add(diags, GG_DIAG_ERROR, "io", path, 0, 0, NULL, NULL, "cannot open: %s", strerror(errno));
        return NULL;
    }
    char *buf = malloc(max + 1);
    size_t n = buf ? fread(buf, 1, max + 1, f) : 0;
    bool err = ferror(f);
    fclose(f);
    if (!buf || err) {
        gg_graph_diag_add(diags, GG_DIAG_ERROR, "io", path, 0, 0, NULL, NULL, "cannot read the file");
        free(buf);
        return NULL;
    }
    gg_graph *g = gg_graph_load_string(buf, n, path, opts, diags);
    free(buf);
    return g;
}

/* Another holder of the immutable graph (runs, providers). */
gg_graph *gg_graph_ref(gg_graph *g) {
    if (g) atomic_fetch_add_explicit(&g->refcount, 1, memory_order_relaxed);
    return g;
}

/* The last unref frees the graph and stops its downstream clients (may block ~1 s). */
void gg_graph_unref(gg_graph *g) {
    if (g && atomic_fetch_sub_explicit(&g->refcount, 1, memory_order_acq_rel) == 1) gg_graph_free_internal(g);
}

/* serverInfo for initialize: {name, title (defaults to name), version}. */
json_t *gg_graph_server_info(const gg_graph *g) {
    return json_pack("{s:s, s:s, s:s}", "name", g->name, "title", g->title, "version", g->version);
}

/* Accessors of the immutable graph (borrowed results). */
const char *gg_graph_instructions(const gg_graph *g) { return g->instructions; }
void gg_graph_cache(const gg_graph *g, int *ttl_ms, bool *public_scope) {
    *ttl_ms = g->cache_ttl_ms;
    *public_scope = g->cache_public;
}
json_t *gg_graph_tools(const gg_graph *g) { return g->tools_json; }
size_t gg_graph_tool_count(const gg_graph *g) { return g->npublic; }
json_t *gg_graph_resources(const gg_graph *g) { return g->resources_json; }
json_t *gg_graph_resource_templates(const gg_graph *g) { return g->templates_json; }
json_t *gg_graph_prompts(const gg_graph *g) { return g->prompts_json; }
int gg_graph_max_node_executions(const gg_graph *g) { return g->max_node_executions; }
long gg_graph_max_execution_ms(const gg_graph *g) { return g->max_execution_ms; }

/* One tool definition by name (borrowed) or NULL. */
json_t *gg_graph_tool(const gg_graph *g, const char *name) {
    for (size_t i = 0; i < g->npublic; i++)
        if (!strcmp(g->tools[i].name, name)) return g->tools[i].def;
    return NULL;
}

static int cap_of_node(gnode_type t) {
    return t == GN_ELICIT ? MCP_CLIENT_CAPS_ELICITATION : t == GN_SAMPLE ? MCP_CLIENT_CAPS_SAMPLING
         : t == GN_ROOTS ? MCP_CLIENT_CAPS_ROOTS : 0;
}

/* Whether every run of t passes node k: the exit cannot be reached around it. */
static bool on_every_path(const gtool *t, int k) {
    if (t->exit < 0 || t->entry == k) return true;
    bool *seen = calloc(t->nnodes, sizeof *seen);
    if (!seen) return true;
    seen[k] = true; /* blocked */
    reach(t, t->entry, seen);
    bool around = seen[t->exit];
    free(seen);
    return !around;
}

/* MCP_CLIENT_CAPS_* bits of the client features a tool's runs always ask for: its elicit,
 * sample, roots and ask nodes that no route avoids (a node behind a switch — e.g. one on
 * $client.capabilities — is not required of the client). */
int gg_graph_tool_client_needs(const gg_graph *g, const char *name) {
    int need = 0;
    for (size_t i = 0; i < g->npublic; i++) {
        const gtool *t = &g->tools[i];
        if (strcmp(t->name, name)) continue;
        for (size_t k = 0; k < t->nnodes; k++) {
            const gnode *n = &t->nodes[k];
            int want = cap_of_node(n->type);
            for (size_t j = 0; j < n->nsubs; j++) want |= cap_of_node(n->subs[j].type);
            if (want && on_every_path(t, (int)k)) need |= want;
        }
    }
    return need;
}

json_t *gg_graph_call_targets(const gg_graph *g) {
    json_t *a = json_array();
    for (size_t i = 0; a && i < g->nservers; i++) {
        const char *t = g->servers[i].target_graph;
        bool seen = false;
        for (size_t j = 0; t && j < i; j++)
            if (g->servers[j].target_graph && !strcmp(g->servers[j].target_graph, t)) seen = true;
        if (t && !seen) json_array_append_new(a, json_string(t));
    }
    return a;
}

/* The graph's client for a server, created on first use (the child starts on first call). */
mcp_client *gg_graph_server_client(gserver *s, const mcp_client_policy *policy, gg_error *err) {
    if (s->target_graph || (!s->cfg.command && !s->cfg.url)) { /* a graph server has no transport */
        gg_error_set(err, "invalid_server", "server '%s' is not a downstream MCP server", s->name ? s->name : "");
        return NULL;
    }
    if (s->nsecrets) gg_graph_secrets_reclaim(s);
    pthread_mutex_lock(&s->lock);
    mcp_client *c = s->nsecrets ? gg_graph_secrets_client(s, policy, err)
                                : (s->client ? s->client : gg_graph_client_attach(s, policy, err));
    pthread_mutex_unlock(&s->lock);
    return c;
}
