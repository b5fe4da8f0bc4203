/* jsonschema.c — a compiled JSON Schema (2020-12, with draft-4/7 forms) validator for tool
 * arguments and results.
 *
 * A schema is compiled once into a tree of nodes (patterns rewritten to PCRE2 with
 * ECMA-262 meaning, $refs resolved to nodes, cycles allowed); validation walks the tree
 * with a bounded depth and reports violations with the JSON pointer of the failing instance
 * location. Beyond the keywords listed in jsonschema.h it applies minContains/maxContains,
 * dependentSchemas, unevaluatedProperties/unevaluatedItems and "#name" $anchor refs.
 * Subschemas that only decide a match (anyOf, oneOf, not, if, contains, propertyNames)
 * run quietly and stop at their first failure; tests/jsonschema/schema_cases.json holds the
 * cases, checked against ajv by tests/jsonschema/schema_ajv.mjs.
 *
 * Budgets: a schema has at most SCHEMA_MAX_NODES subschemas (compiled nodes are found by
 * hash, so compiling is linear). $ref and allOf can make a small schema apply a subschema
 * exponentially often to one value (each level allOf ten $refs of the previous): a schema
 * applying more than SCHEMA_MAX_FANOUT subschemas at one instance location does not
 * compile (a $ref loop that never moves into the value ends at the depth bound, on its
 * first path). One validation takes at
 * most SCHEMA_MAX_STEPS subschema applications (what is left grows with the value's size);
 * a check that runs out fails with a clear message instead of holding a thread.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonschema/jsonschema.h"
#include "util/regex.h"

#define SCHEMA_MAX_COMPILE_DEPTH 128
#define SCHEMA_MAX_VALIDATE_DEPTH 256
#define SCHEMA_MAX_NODES 20000
#define SCHEMA_MAX_STEPS 1000000
#define SCHEMA_MAX_FANOUT 1000

enum {
    T_NULL = 1 << 0, T_BOOLEAN = 1 << 1, T_OBJECT = 1 << 2, T_ARRAY = 1 << 3,
    T_NUMBER = 1 << 4, T_STRING = 1 << 5, T_INTEGER = 1 << 6,
};

typedef struct snode snode;

typedef struct regex {
    pcre2_code *code;
    char *source;
} regex;

struct snode {
    json_t *src;            /* borrowed from the root held by mcp_schema */
    int boolean;            /* 1 = true schema, 0 = false schema, -1 = object schema */
    unsigned types;         /* 0 = any */
    size_t nprops;
    const char **prop_names;
    snode **props;
    size_t npatprops;
    regex *patprop_re;
    snode **patprops;
    snode *additional;      /* NULL = unconstrained */
    snode *property_names;
    json_t *required;       /* array of strings, borrowed */
    json_t *dependent_required; /* object name -> array, borrowed */
    size_t ndepschemas;
    const char **depschema_names;
    snode **depschemas;     /* dependentSchemas */
    json_t *enum_values;    /* array, borrowed */
    json_t *const_value;    /* borrowed; NULL = none (a JSON null const is json_null()) */
    snode *items;
    size_t nprefix;
    snode **prefix;
    snode *contains;
    bool has_min, has_max, has_xmin, has_xmax, has_multiple, unique;
    double min, max, xmin, xmax, multiple;
    json_int_t multiple_int; /* an integer multipleOf, for exact checks of integers; 0 = none */
    json_t *min_j, *max_j, *xmin_j, *xmax_j; /* the bounds as written (borrowed), for exact integer compares */
    long long min_len, max_len, min_items, max_items, min_props, max_props;
    long long min_contains, max_contains; /* -1 = absent */
    regex pattern;
    snode *ref;
    size_t nall, nany, none;
    snode **all_of, **any_of, **one_of;
    snode *not_, *if_, *then_, *else_;
    snode *uneval_props, *uneval_items; /* unevaluatedProperties / unevaluatedItems */
    size_t fanout;          /* subschemas applied at one instance location (0 = not known yet) */
    bool fanout_busy;       /* being computed (a cycle that never moves into the value) */
};

struct mcp_schema {
    json_t *root;
    snode *top;
    snode **nodes; /* every node, for freeing */
    size_t nnodes, cap;
    snode **index; /* open addressing by src pointer (power-of-two size, at most half full) */
    size_t index_cap;
    json_t *anchors; /* "$anchor" name → subschema, built on the first "#name" $ref */
    pcre2_match_context *mctx; /* bounds backtracking of every pattern (ReDoS) */
};

/* ------------------------------------------------------------------ compile */

typedef struct cctx {
    mcp_schema *s;
    gg_error *err;
    int depth;
} cctx;

static snode *compile_node(cctx *c, json_t *js);

static size_t index_slot(snode **index, size_t cap, const json_t *js) {
    uintptr_t h = (uintptr_t)js;
    h ^= h >> 17;
    h *= 0x9e3779b97f4a7c15ull;
    for (size_t i = (size_t)(h >> 20) & (cap - 1);; i = (i + 1) & (cap - 1))
        if (!index[i] || index[i]->src == js) return i;
}

static snode *find_compiled(mcp_schema *s, json_t *js) {
    if (!s->index_cap) return NULL;
    return s->index[index_slot(s->index, s->index_cap, js)];
}

static bool index_add(mcp_schema *s, snode *n) {
    if (2 * (s->nnodes + 1) > s->index_cap) {
        size_t cap = s->index_cap ? s->index_cap * 2 : 64;
        snode **idx = calloc(cap, sizeof *idx);
        if (!idx) return false;
        for (size_t i = 0; i < s->nnodes; i++) idx[index_slot(idx, cap, s->nodes[i]->src)] = s->nodes[i];
        free(s->index);
        s->index = idx;
        s->index_cap = cap;
    }
    s->index[index_slot(s->index, s->index_cap, n->src)] = n;
    return true;
}

/* Keep n (src already set) for freeing and for later lookups (shared subschemas, $ref). */
static bool register_node(mcp_schema *s, snode *n) {
    if (!index_add(s, n)) return false;
    if (s->nnodes == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        snode **nn = realloc(s->nodes, cap * sizeof *nn);
        if (!nn) return false;
        s->nodes = nn;
        s->cap = cap;
    }
    s->nodes[s->nnodes++] = n;
    return true;
}

/* Patterns are ECMA-262 regexes: gg_ecma_regex_to_pcre2 (util.h) gives them JavaScript's
 * meaning under PCRE2. */
static bool compile_regex(cctx *c, const char *src, regex *out) {
    int rc = 0;
    PCRE2_SIZE off = 0;
    char *pat = gg_ecma_regex_to_pcre2(src, strlen(src), NULL);
    pcre2_compile_context *cc = pcre2_compile_context_create(NULL);
    if (cc) pcre2_set_compile_extra_options(cc, PCRE2_EXTRA_ALT_BSUX);
    out->code = pat && cc ? pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED,
                                          PCRE2_UTF | PCRE2_ALT_BSUX | PCRE2_DOLLAR_ENDONLY | PCRE2_ALLOW_EMPTY_CLASS,
                                          &rc, &off, cc)
                          : NULL;
    pcre2_compile_context_free(cc);
    free(pat);
    if (!out->code) {
        PCRE2_UCHAR msg[160] = "out of memory";
        if (rc) pcre2_get_error_message(rc, msg, sizeof msg);
        gg_error_set(c->err, "invalid_schema", "invalid pattern \"%s\": %s", src, (const char *)msg);
        return false;
    }
    (void)pcre2_jit_compile(out->code, PCRE2_JIT_COMPLETE); /* best effort */
    out->source = strdup(src);
    if (!out->source) {
        gg_error_set(c->err, "oom", "out of memory");
        return false;
    }
    return true;
}

static unsigned type_bit(const char *name) {
    static const struct { const char *n; unsigned b; } tab[] = {
        {"null", T_NULL}, {"boolean", T_BOOLEAN}, {"object", T_OBJECT}, {"array", T_ARRAY},
        {"number", T_NUMBER}, {"string", T_STRING}, {"integer", T_INTEGER},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (strcmp(tab[i].n, name) == 0) return tab[i].b;
    return 0;
}

/* Decode one JSON pointer token in place (~1 → /, ~0 → ~, %XX percent-escapes). */
static void pointer_unescape(char *t) {
    char *w = t;
    for (char *r = t; *r; r++) {
        if (r[0] == '~' && r[1] == '1') { *w++ = '/'; r++; }
        else if (r[0] == '~' && r[1] == '0') { *w++ = '~'; r++; }
        else if (r[0] == '%' && r[1] && r[2]) {
            char hex[3] = {r[1], r[2], 0};
            char *end;
            long v = strtol(hex, &end, 16);
            if (*end == 0) { *w++ = (char)v; r += 2; }
            else *w++ = *r;
        } else *w++ = *r;
    }
    *w = 0;
}

/* The subschema declaring "$anchor": name. Values of enum/const/default/examples are data,
 * not schemas, so they are not searched. Bounded like compilation. */
/* Every "$anchor" of the schema into out (name → subschema, the first one in document order
 * wins), in one walk: looking each "#name" $ref up separately would be quadratic. */
static void collect_anchors(json_t *js, json_t *out, int depth) {
    if (depth > SCHEMA_MAX_COMPILE_DEPTH) return;
    if (json_is_object(js)) {
        json_t *a = json_object_get(js, "$anchor");
        if (json_is_string(a) && !json_object_get(out, json_string_value(a)))
            json_object_set(out, json_string_value(a), js);
        const char *k;
        json_t *sub;
        json_object_foreach(js, k, sub) {
            if (!strcmp(k, "enum") || !strcmp(k, "const") || !strcmp(k, "default") || !strcmp(k, "examples")) continue;
            collect_anchors(sub, out, depth + 1);
        }
    } else if (json_is_array(js)) {
        size_t i;
        json_t *sub;
        json_array_foreach(js, i, sub) collect_anchors(sub, out, depth + 1);
    }
}

static json_t *find_anchor(mcp_schema *s, const char *name) {
    if (!s->anchors && (s->anchors = json_object())) collect_anchors(s->root, s->anchors, 0);
    return json_object_get(s->anchors, name);
}

static json_t *resolve_ref(cctx *c, const char *ref) {
    /* "<the root's $id>#..." is the same document */
    const char *id = json_string_value(json_object_get(c->s->root, "$id"));
    size_t idlen = id ? strlen(id) : 0;
    if (idlen && idlen < strlen(ref) + 1 && strncmp(ref, id, idlen) == 0 && (ref[idlen] == '#' || !ref[idlen]))
        ref = ref[idlen] ? ref + idlen : "#";
    if (ref[0] != '#') {
        gg_error_set(c->err, "invalid_schema", "unsupported $ref \"%s\" (only references within the schema)", ref);
        return NULL;
    }
    if (ref[1] == 0) return c->s->root;
    if (ref[1] != '/') {
        json_t *target = find_anchor(c->s, ref + 1);
        if (!target) gg_error_set(c->err, "invalid_schema", "$ref \"%s\": no \"$anchor\" of that name", ref);
        return target;
    }
    char *copy = strdup(ref + 2);
    if (!copy) { gg_error_set(c->err, "oom", "out of memory"); return NULL; }
    json_t *cur = c->s->root;
    /* split on every "/" (an empty token is the key "", unlike strtok) */
    for (char *tok = copy, *next; tok && cur; tok = next) {
        char *slash = strchr(tok, '/');
        next = slash ? slash + 1 : NULL;
        if (slash) *slash = 0;
        pointer_unescape(tok);
        if (json_is_object(cur)) cur = json_object_get(cur, tok);
        else if (json_is_array(cur)) {
            char *end;
            long idx = strtol(tok, &end, 10);
            cur = (!*tok || *end || idx < 0) ? NULL : json_array_get(cur, (size_t)idx);
        } else cur = NULL;
    }
    free(copy);
    if (!cur) gg_error_set(c->err, "invalid_schema", "$ref \"%s\" points nowhere", ref);
    return cur;
}

static bool get_count(cctx *c, json_t *js, const char *kw, long long *out) {
    *out = -1;
    json_t *v = json_object_get(js, kw);
    if (!v) return true;
    double d = json_number_value(v);
    if (!json_is_number(v) || d < 0 || d != floor(d)) {
        gg_error_set(c->err, "invalid_schema", "\"%s\" must be a non-negative integer", kw);
        return false;
    }
    /* A count past what any instance can reach (2e91) means "no limit" for max and "never"
     * for min; clamp before the cast, which is undefined for out-of-range doubles. */
    *out = d >= 9.2e18 ? LLONG_MAX : (long long)d;
    return true;
}

static bool get_number(cctx *c, json_t *js, const char *kw, bool *has, double *out) {
    json_t *v = json_object_get(js, kw);
    *has = false;
    if (!v || json_is_boolean(v)) return true; /* draft-4 booleans handled by the caller */
    if (!json_is_number(v)) {
        gg_error_set(c->err, "invalid_schema", "\"%s\" must be a number", kw);
        return false;
    }
    *has = true;
    *out = json_number_value(v);
    return true;
}

static bool compile_list(cctx *c, json_t *js, const char *kw, snode ***out, size_t *n) {
    json_t *arr = json_object_get(js, kw);
    *n = 0;
    if (!arr) return true;
    if (!json_is_array(arr) || json_array_size(arr) == 0) {
        gg_error_set(c->err, "invalid_schema", "\"%s\" must be a non-empty array of schemas", kw);
        return false;
    }
    *out = calloc(json_array_size(arr), sizeof **out);
    if (!*out) { gg_error_set(c->err, "oom", "out of memory"); return false; }
    size_t i;
    json_t *sub;
    json_array_foreach(arr, i, sub) {
        if (!((*out)[i] = compile_node(c, sub))) return false;
        (*n)++;
    }
    return true;
}

static bool compile_sub(cctx *c, json_t *js, const char *kw, snode **out) {
    json_t *sub = json_object_get(js, kw);
    *out = NULL;
    if (!sub) return true;
    *out = compile_node(c, sub);
    return *out != NULL;
}

static bool compile_types(cctx *c, snode *n, json_t *t) {
    if (!t) return true;
    if (json_is_string(t)) {
        if (!(n->types = type_bit(json_string_value(t)))) goto bad;
        return true;
    }
    if (json_is_array(t)) {
        size_t i;
        json_t *e;
        json_array_foreach(t, i, e) {
            unsigned b = json_is_string(e) ? type_bit(json_string_value(e)) : 0;
            if (!b) goto bad;
            n->types |= b;
        }
        return true;
    }
bad:
    gg_error_set(c->err, "invalid_schema", "\"type\" must name JSON types (null, boolean, object, array, number, string, integer)");
    return false;
}

static bool compile_object_keywords(cctx *c, json_t *js, snode *n) {
    json_t *props = json_object_get(js, "properties");
    if (props) {
        if (!json_is_object(props)) {
            gg_error_set(c->err, "invalid_schema", "\"properties\" must be an object");
            return false;
        }
        size_t cnt = json_object_size(props);
        n->prop_names = calloc(cnt ? cnt : 1, sizeof *n->prop_names);
        n->props = calloc(cnt ? cnt : 1, sizeof *n->props);
        if (!n->prop_names || !n->props) { gg_error_set(c->err, "oom", "out of memory"); return false; }
        const char *k;
        json_t *sub;
        json_object_foreach(props, k, sub) {
            n->prop_names[n->nprops] = k;
            if (!(n->props[n->nprops] = compile_node(c, sub))) return false;
            n->nprops++;
        }
    }
    json_t *pp = json_object_get(js, "patternProperties");
    if (pp) {
        if (!json_is_object(pp)) {
            gg_error_set(c->err, "invalid_schema", "\"patternProperties\" must be an object");
            return false;
        }
        size_t cnt = json_object_size(pp);
        n->patprop_re = calloc(cnt ? cnt : 1, sizeof *n->patprop_re);
        n->patprops = calloc(cnt ? cnt : 1, sizeof *n->patprops);
        if (!n->patprop_re || !n->patprops) { gg_error_set(c->err, "oom", "out of memory"); return false; }
        const char *k;
        json_t *sub;
        json_object_foreach(pp, k, sub) {
            if (!compile_regex(c, k, &n->patprop_re[n->npatprops])) return false;
            n->npatprops++;
            if (!(n->patprops[n->npatprops - 1] = compile_node(c, sub))) return false;
        }
    }
    if (!compile_sub(c, js, "additionalProperties", &n->additional)) return false;
    if (!compile_sub(c, js, "propertyNames", &n->property_names)) return false;
    json_t *req = json_object_get(js, "required");
    if (req) {
        size_t i;
        json_t *e;
        bool ok = json_is_array(req);
        if (ok) json_array_foreach(req, i, e) if (!json_is_string(e)) ok = false;
        if (!ok) {
            gg_error_set(c->err, "invalid_schema", "\"required\" must be an array of strings");
            return false;
        }
        n->required = req;
    }
    json_t *dr = json_object_get(js, "dependentRequired");
    if (dr && json_is_object(dr)) n->dependent_required = dr;
    json_t *ds = json_object_get(js, "dependentSchemas");
    if (ds) {
        if (!json_is_object(ds)) {
            gg_error_set(c->err, "invalid_schema", "\"dependentSchemas\" must be an object");
            return false;
        }
        size_t cnt = json_object_size(ds);
        n->depschema_names = calloc(cnt ? cnt : 1, sizeof *n->depschema_names);
        n->depschemas = calloc(cnt ? cnt : 1, sizeof *n->depschemas);
        if (!n->depschema_names || !n->depschemas) { gg_error_set(c->err, "oom", "out of memory"); return false; }
        const char *k;
        json_t *sub;
        json_object_foreach(ds, k, sub) {
            n->depschema_names[n->ndepschemas] = k;
            if (!(n->depschemas[n->ndepschemas] = compile_node(c, sub))) return false;
            n->ndepschemas++;
        }
    }
    return get_count(c, js, "minProperties", &n->min_props) && get_count(c, js, "maxProperties", &n->max_props);
}

static bool compile_array_keywords(cctx *c, json_t *js, snode *n) {
    json_t *items = json_object_get(js, "items");
    json_t *prefix = json_object_get(js, "prefixItems");
    /* draft-7 tuple form: "items": [..] with "additionalItems" */
    if (items && json_is_array(items)) {
        prefix = items;
        items = json_object_get(js, "additionalItems");
    }
    if (prefix) {
        if (!json_is_array(prefix)) {
            gg_error_set(c->err, "invalid_schema", "\"prefixItems\" must be an array of schemas");
            return false;
        }
        n->prefix = calloc(json_array_size(prefix) + 1, sizeof *n->prefix);
        if (!n->prefix) { gg_error_set(c->err, "oom", "out of memory"); return false; }
        size_t i;
        json_t *sub;
        json_array_foreach(prefix, i, sub) {
            if (!(n->prefix[i] = compile_node(c, sub))) return false;
            n->nprefix++;
        }
    }
    if (items && !(n->items = compile_node(c, items))) return false;
    if (!compile_sub(c, js, "contains", &n->contains)) return false;
    n->unique = json_is_true(json_object_get(js, "uniqueItems"));
    return get_count(c, js, "minItems", &n->min_items) && get_count(c, js, "maxItems", &n->max_items) &&
           get_count(c, js, "minContains", &n->min_contains) && get_count(c, js, "maxContains", &n->max_contains);
}

static bool compile_scalar_keywords(cctx *c, json_t *js, snode *n) {
    if (!get_number(c, js, "minimum", &n->has_min, &n->min) ||
        !get_number(c, js, "maximum", &n->has_max, &n->max) ||
        !get_number(c, js, "exclusiveMinimum", &n->has_xmin, &n->xmin) ||
        !get_number(c, js, "exclusiveMaximum", &n->has_xmax, &n->xmax) ||
        !get_number(c, js, "multipleOf", &n->has_multiple, &n->multiple))
        return false;
    /* draft-4: exclusiveMinimum/Maximum are booleans modifying minimum/maximum */
    if (json_is_true(json_object_get(js, "exclusiveMinimum")) && n->has_min) {
        n->has_xmin = true; n->xmin = n->min; n->has_min = false;
    }
    if (json_is_true(json_object_get(js, "exclusiveMaximum")) && n->has_max) {
        n->has_xmax = true; n->xmax = n->max; n->has_max = false;
    }
    if (n->has_multiple && !(n->multiple > 0)) {
        gg_error_set(c->err, "invalid_schema", "\"multipleOf\" must be greater than 0");
        return false;
    }
    n->min_j = n->has_min ? json_object_get(js, "minimum") : NULL;
    n->max_j = n->has_max ? json_object_get(js, "maximum") : NULL;
    n->xmin_j = n->has_xmin && json_is_number(json_object_get(js, "exclusiveMinimum")) ? json_object_get(js, "exclusiveMinimum") : NULL;
    n->xmax_j = n->has_xmax && json_is_number(json_object_get(js, "exclusiveMaximum")) ? json_object_get(js, "exclusiveMaximum") : NULL;
    if (n->has_multiple && json_is_integer(json_object_get(js, "multipleOf")))
        n->multiple_int = json_integer_value(json_object_get(js, "multipleOf"));
    if (!get_count(c, js, "minLength", &n->min_len) || !get_count(c, js, "maxLength", &n->max_len))
        return false;
    json_t *pat = json_object_get(js, "pattern");
    if (pat) {
        if (!json_is_string(pat)) {
            gg_error_set(c->err, "invalid_schema", "\"pattern\" must be a string");
            return false;
        }
        if (!compile_regex(c, json_string_value(pat), &n->pattern)) return false;
    }
    json_t *en = json_object_get(js, "enum");
    if (en) {
        if (!json_is_array(en)) {
            gg_error_set(c->err, "invalid_schema", "\"enum\" must be an array");
            return false;
        }
        n->enum_values = en;
    }
    n->const_value = json_object_get(js, "const");
    return true;
}

/* Compile one (sub)schema. The node is registered before its keywords are compiled so a
 * $ref back to an ancestor finds it (recursive schemas). */
static snode *compile_node(cctx *c, json_t *js) {
    snode *seen = find_compiled(c->s, js);
    if (seen) return seen;
    if (++c->depth > SCHEMA_MAX_COMPILE_DEPTH) {
        gg_error_set(c->err, "invalid_schema", "schema nested deeper than %d levels", SCHEMA_MAX_COMPILE_DEPTH);
        return NULL;
    }
    if (c->s->nnodes >= SCHEMA_MAX_NODES) {
        c->depth--;
        gg_error_set(c->err, "invalid_schema", "schema has more than %d subschemas", SCHEMA_MAX_NODES);
        return NULL;
    }
    snode *n = calloc(1, sizeof *n);
    if (n) n->src = js;
    if (!n || !register_node(c->s, n)) {
        free(n);
        c->depth--;
        gg_error_set(c->err, "oom", "out of memory");
        return NULL;
    }
    n->boolean = -1;
    n->min_len = n->max_len = n->min_items = n->max_items = n->min_props = n->max_props = -1;
    n->min_contains = n->max_contains = -1;
    bool ok = true;
    if (json_is_boolean(js)) n->boolean = json_is_true(js);
    else if (!json_is_object(js)) {
        gg_error_set(c->err, "invalid_schema", "a schema must be an object or a boolean");
        ok = false;
    } else {
        json_t *ref = json_object_get(js, "$ref");
        if (ref) {
            json_t *target = json_is_string(ref) ? resolve_ref(c, json_string_value(ref)) : NULL;
            if (!json_is_string(ref) && !gg_error_is_set(c->err))
                gg_error_set(c->err, "invalid_schema", "\"$ref\" must be a string");
            ok = target && (n->ref = compile_node(c, target));
        }
        ok = ok && compile_types(c, n, json_object_get(js, "type")) &&
             compile_object_keywords(c, js, n) && compile_array_keywords(c, js, n) &&
             compile_scalar_keywords(c, js, n) &&
             compile_list(c, js, "allOf", &n->all_of, &n->nall) &&
             compile_list(c, js, "anyOf", &n->any_of, &n->nany) &&
             compile_list(c, js, "oneOf", &n->one_of, &n->none) &&
             compile_sub(c, js, "not", &n->not_) && compile_sub(c, js, "if", &n->if_) &&
             compile_sub(c, js, "then", &n->then_) && compile_sub(c, js, "else", &n->else_) &&
             compile_sub(c, js, "unevaluatedProperties", &n->uneval_props) &&
             compile_sub(c, js, "unevaluatedItems", &n->uneval_items);
    }
    c->depth--;
    return ok ? n : NULL;
}

static void free_node(snode *n) {
    free(n->prop_names);
    free(n->props);
    for (size_t i = 0; i < n->npatprops; i++) {
        pcre2_code_free(n->patprop_re[i].code);
        free(n->patprop_re[i].source);
    }
    free(n->patprop_re);
    free(n->patprops);
    free(n->depschema_names);
    free(n->depschemas);
    free(n->prefix);
    if (n->pattern.code) pcre2_code_free(n->pattern.code);
    free(n->pattern.source);
    free(n->all_of);
    free(n->any_of);
    free(n->one_of);
    free(n);
}

static size_t fanout_add(size_t a, size_t b) { return a + b > SCHEMA_MAX_FANOUT ? SCHEMA_MAX_FANOUT + 1 : a + b; }

static size_t fanout_list(snode **l, size_t n);

/* How many subschemas applying n to one value applies at that same location (n included):
 * $ref, allOf/anyOf/oneOf, not, if/then/else and dependentSchemas stay there, the other
 * applicators move into the value. Saturates past SCHEMA_MAX_FANOUT; a node already being
 * counted (a loop) counts once: validation stops such a loop at the depth bound. */
static size_t fanout(snode *n) {
    if (!n || n->boolean >= 0) return 1;
    if (n->fanout) return n->fanout;
    if (n->fanout_busy) return 1;
    n->fanout_busy = true;
    size_t f = fanout_add(1, n->ref ? fanout(n->ref) : 0);
    f = fanout_add(f, fanout_list(n->all_of, n->nall));
    f = fanout_add(f, fanout_list(n->any_of, n->nany));
    f = fanout_add(f, fanout_list(n->one_of, n->none));
    f = fanout_add(f, fanout_list(n->depschemas, n->ndepschemas));
    snode *same[] = {n->not_, n->if_, n->then_, n->else_};
    for (size_t i = 0; i < 4; i++)
        if (same[i]) f = fanout_add(f, fanout(same[i]));
    n->fanout_busy = false;
    return n->fanout = f;
}

static size_t fanout_list(snode **l, size_t n) {
    size_t f = 0;
    for (size_t i = 0; i < n && f <= SCHEMA_MAX_FANOUT; i++) f = fanout_add(f, fanout(l[i]));
    return f;
}

/* Every compiled node's fan-out within the limit; else err. */
static bool check_fanout(mcp_schema *s, gg_error *err) {
    for (size_t i = 0; i < s->nnodes; i++)
        if (fanout(s->nodes[i]) > SCHEMA_MAX_FANOUT) {
            gg_error_set(err, "invalid_schema",
                         "the schema applies more than %d subschemas to one value ($ref/allOf/anyOf chains multiply)",
                         SCHEMA_MAX_FANOUT);
            return false;
        }
    return true;
}

/* Compile a JSON Schema once; the result is immutable and may be shared by threads. */
mcp_schema *mcp_schema_compile(json_t *schema, gg_error *err) {
    mcp_schema *s = calloc(1, sizeof *s);
    if (!s) {
        gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    s->root = json_incref(schema);
    s->mctx = gg_regex_context(GG_REGEX_SCHEMA);
    gg_error tmp = GG_ERROR_INIT;
    cctx c = {s, err ? err : &tmp, 0};
    s->top = schema ? compile_node(&c, schema) : NULL;
    if (!s->top || !check_fanout(s, c.err)) {
        s->top = NULL;
        if (!schema) gg_error_set(c.err, "invalid_schema", "no schema");
        gg_error_clear(&tmp);
        mcp_schema_free(s);
        return NULL;
    }
    return s;
}

/* Free a compiled schema and its reference to the source document. */
void mcp_schema_free(mcp_schema *s) {
    if (!s) return;
    for (size_t i = 0; i < s->nnodes; i++) free_node(s->nodes[i]);
    free(s->nodes);
    free(s->index);
    json_decref(s->anchors);
    json_decref(s->root);
    free(s);
}

/* ------------------------------------------------------------------ validate */

typedef struct vctx {
    size_t max, count;
    int quiet; /* > 0 inside anyOf/oneOf/not/if/contains/propertyNames: record nothing */
    bool quiet_failed; /* a failure was seen in the current quiet subschema check */
    int depth;
    size_t steps;   /* subschema applications so far (SCHEMA_MAX_STEPS) */
    bool exhausted; /* the budget ran out: everything stops, the check fails */
    mcp_schema_error_fn fn;
    void *user;
    gg_strbuf path;
    pcre2_match_data *md;
    pcre2_match_context *mctx; /* the schema's (read-only) match limits */
} vctx;

/* Whether the remaining checks can be skipped: only once a failure is already known (the
 * first failure decides a quiet subschema check; max failures end a reporting run). */
static bool stop(const vctx *v) {
    if (v->exhausted) return true;
    return v->quiet > 0 ? v->quiet_failed : v->count >= v->max;
}

/* Count one subschema application; false once the budget is spent. */
static bool step(vctx *v) {
    if (!v->exhausted && ++v->steps > SCHEMA_MAX_STEPS) v->exhausted = true;
    return !v->exhausted;
}

static bool fail(vctx *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(vctx *v, const char *fmt, ...) {
    if (v->exhausted) return false; /* reported once, as the budget, at the end */
    if (v->quiet > 0) {
        v->quiet_failed = true;
        return false;
    }
    if (v->count >= v->max) return false;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    v->count++;
    if (v->fn) v->fn(v->user, v->path.data ? v->path.data : "", msg);
    return false;
}

static size_t push_key(vctx *v, const char *key) {
    size_t mark = v->path.len;
    gg_strbuf_putc(&v->path, '/');
    for (const char *p = key; *p; p++) {
        if (*p == '~') gg_strbuf_append(&v->path, "~0", 2);
        else if (*p == '/') gg_strbuf_append(&v->path, "~1", 2);
        else gg_strbuf_putc(&v->path, *p);
    }
    return mark;
}

static size_t push_index(vctx *v, size_t i) {
    size_t mark = v->path.len;
    gg_strbuf_printf(&v->path, "/%zu", i);
    return mark;
}

static void pop(vctx *v, size_t mark) {
    v->path.len = mark;
    if (v->path.data) v->path.data[mark] = 0;
}

static bool is_integral(json_t *x) {
    if (json_is_integer(x)) return true;
    if (!json_is_real(x)) return false;
    double d = json_real_value(x);
    return isfinite(d) && d == floor(d);
}

static const char *type_name(json_t *x) {
    switch (json_typeof(x)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER: return "integer";
    case JSON_REAL: return "number";
    case JSON_TRUE: case JSON_FALSE: return "boolean";
    default: return "null";
    }
}

/* JSON Schema equality: numbers by value (1 == 1.0), containers deeply. */
static bool jv_equal(json_t *a, json_t *b) {
    /* two integers exactly (doubles lose precision beyond 2^53) */
    if (json_is_integer(a) && json_is_integer(b)) return json_integer_value(a) == json_integer_value(b);
    if (json_is_number(a) && json_is_number(b)) return json_number_value(a) == json_number_value(b);
    if (json_typeof(a) != json_typeof(b)) return false;
    if (json_is_array(a)) {
        if (json_array_size(a) != json_array_size(b)) return false;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!jv_equal(json_array_get(a, i), json_array_get(b, i))) return false;
        return true;
    }
    if (json_is_object(a)) {
        if (json_object_size(a) != json_object_size(b)) return false;
        const char *k;
        json_t *va;
        json_object_foreach(a, k, va) {
            json_t *vb = json_object_get(b, k);
            if (!vb || !jv_equal(va, vb)) return false;
        }
        return true;
    }
    return json_equal(a, b);
}

/* A hash consistent with jv_equal (numbers by value, object members in any order), so
 * uniqueItems needs O(n log n) work, not O(n^2), on large arrays. */
static uint64_t jv_hash(json_t *x) {
    uint64_t h = GG_HASH_INIT;
    switch (json_typeof(x)) {
    case JSON_INTEGER: case JSON_REAL: {
        double d = json_number_value(x);
        if (d == 0) d = 0; /* -0 == 0 */
        unsigned char bytes[sizeof d];
        memcpy(bytes, &d, sizeof d);
        return gg_hash_addn(h, bytes, sizeof d);
    }
    case JSON_STRING: {
        return gg_hash_addn(h, json_string_value(x), json_string_length(x)) ^ 0x5bd1e995u;
    }
    case JSON_ARRAY: {
        size_t i;
        json_t *e;
        h = 0x9e3779b97f4a7c15ull;
        json_array_foreach(x, i, e) h = h * 31 + jv_hash(e);
        return h;
    }
    case JSON_OBJECT: {
        const char *k;
        json_t *e;
        uint64_t sum = 0x2545f4914f6cdd1dull;
        json_object_foreach(x, k, e) {
            sum += (gg_hash_str(k) * 0x9e3779b97f4a7c15ull) ^ jv_hash(e);
        }
        return sum;
    }
    case JSON_TRUE: return 2;
    case JSON_FALSE: return 3;
    default: return 1;
    }
}

typedef struct hashed { uint64_t h; size_t i; } hashed;

static int cmp_hashed(const void *a, const void *b) {
    const hashed *x = a, *y = b;
    if (x->h != y->h) return x->h < y->h ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* Whether two items of arr are equal; *a < *b name the first such pair found. */
static bool has_duplicates(json_t *arr, size_t *a, size_t *b) {
    size_t n = json_array_size(arr);
    hashed *hs = n > 16 ? malloc(n * sizeof *hs) : NULL;
    if (!hs) { /* small arrays (or no memory): compare every pair */
        for (size_t i = 0; i < n; i++)
            for (size_t j = i + 1; j < n; j++)
                if (jv_equal(json_array_get(arr, i), json_array_get(arr, j))) return *a = i, *b = j, true;
        return false;
    }
    for (size_t i = 0; i < n; i++) hs[i] = (hashed){jv_hash(json_array_get(arr, i)), i};
    qsort(hs, n, sizeof *hs, cmp_hashed);
    bool dup = false;
    for (size_t r = 0; r < n && !dup; r++)
        for (size_t t = r + 1; t < n && hs[t].h == hs[r].h && !dup; t++)
            if (jv_equal(json_array_get(arr, hs[r].i), json_array_get(arr, hs[t].i))) {
                *a = hs[r].i;
                *b = hs[t].i;
                dup = true;
            }
    free(hs);
    return dup;
}

static bool type_matches(unsigned types, json_t *x) {
    switch (json_typeof(x)) {
    case JSON_NULL: return types & T_NULL;
    case JSON_TRUE: case JSON_FALSE: return types & T_BOOLEAN;
    case JSON_OBJECT: return types & T_OBJECT;
    case JSON_ARRAY: return types & T_ARRAY;
    case JSON_STRING: return types & T_STRING;
    default: return (types & T_NUMBER) || ((types & T_INTEGER) && is_integral(x));
    }
}

static void types_text(unsigned types, char *buf, size_t n) {
    static const char *const names[] = {"null", "boolean", "object", "array", "number", "string", "integer"};
    buf[0] = 0;
    for (int i = 0; i < 7; i++)
        if (types & (1u << i)) {
            if (buf[0]) strncat(buf, " or ", n - strlen(buf) - 1);
            strncat(buf, names[i], n - strlen(buf) - 1);
        }
}

static void value_text(json_t *x, char *buf, size_t n) {
    char *s = json_dumps(x, JSON_COMPACT | JSON_ENCODE_ANY);
    snprintf(buf, n, "%s", s ? s : "?");
    if (s && strlen(s) >= n && n > 4) memcpy(buf + n - 4, "...", 4);
    free(s);
}

static size_t utf8_codepoints(const char *s, size_t len) {
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80) n++;
    return n;
}

static int regex_search(vctx *v, const regex *re, const char *s, size_t len) {
    if (!v->md && !(v->md = pcre2_match_data_create(1, NULL))) return -1;
    /* jansson holds only valid UTF-8, so PCRE2 need not check it again */
    int rc = pcre2_match(re->code, (PCRE2_SPTR)s, len, 0, PCRE2_NO_UTF_CHECK, v->md, v->mctx);
    return rc >= 0 ? 1 : (rc == PCRE2_ERROR_NOMATCH ? 0 : -1);
}

static bool validate(vctx *v, const snode *n, json_t *x);

/* Whether x matches n, reporting nothing (anyOf, oneOf, not, if, contains, propertyNames).
 * Nested checks keep their own failure flag so an inner failure does not stop the outer. */
static bool check_subschema(vctx *v, const snode *n, json_t *x) {
    bool outer_failed = v->quiet_failed;
    v->quiet_failed = false;
    v->quiet++;
    bool ok = validate(v, n, x);
    v->quiet--;
    v->quiet_failed = outer_failed;
    return ok;
}

static bool validate_object(vctx *v, const snode *n, json_t *x) {
    bool ok = true;
    if (n->required) {
        size_t i;
        json_t *e;
        json_array_foreach(n->required, i, e) {
            if (json_object_get(x, json_string_value(e))) continue;
            size_t m = push_key(v, json_string_value(e));
            ok = fail(v, "required property '%s' is missing", json_string_value(e));
            pop(v, m);
            if (stop(v)) return false;
        }
    }
    size_t size = json_object_size(x);
    if (n->min_props >= 0 && (long long)size < n->min_props) {
        ok = fail(v, "must have at least %lld properties", n->min_props);
        if (stop(v)) return false;
    }
    if (n->max_props >= 0 && (long long)size > n->max_props) {
        ok = fail(v, "must have at most %lld properties", n->max_props);
        if (stop(v)) return false;
    }
    const char *k;
    json_t *val;
    json_object_foreach(x, k, val) {
        size_t m = push_key(v, k);
        bool matched = false;
        for (size_t i = 0; i < n->nprops; i++)
            if (strcmp(n->prop_names[i], k) == 0) {
                matched = true;
                if (!validate(v, n->props[i], val)) ok = false;
                break;
            }
        for (size_t i = 0; i < n->npatprops && !stop(v); i++) {
            int r = regex_search(v, &n->patprop_re[i], k, strlen(k));
            if (r < 0) ok = fail(v, "pattern \"%s\" could not be evaluated", n->patprop_re[i].source);
            else if (r) {
                matched = true;
                if (!validate(v, n->patprops[i], val)) ok = false;
            }
        }
        if (!matched && n->additional && !stop(v)) {
            if (n->additional->boolean == 0) ok = fail(v, "unexpected property '%s'", k);
            else if (!validate(v, n->additional, val)) ok = false;
        }
        if (n->property_names && !stop(v)) {
            json_t *name = json_string(k);
            if (name && !check_subschema(v, n->property_names, name))
                ok = fail(v, "property name '%s' is not allowed", k);
            json_decref(name);
        }
        if (n->dependent_required && !stop(v)) {
            json_t *deps = json_object_get(n->dependent_required, k);
            size_t i;
            json_t *d;
            if (json_is_array(deps)) json_array_foreach(deps, i, d)
                if (json_is_string(d) && !json_object_get(x, json_string_value(d)))
                    ok = fail(v, "property '%s' requires property '%s'", k, json_string_value(d));
        }
        pop(v, m);
        if (!ok && stop(v)) return false;
        /* dependentSchemas apply to the whole object, so they run at its own path */
        for (size_t i = 0; i < n->ndepschemas && !stop(v); i++)
            if (strcmp(n->depschema_names[i], k) == 0 && !validate(v, n->depschemas[i], x)) ok = false;
        if (!ok && stop(v)) return false;
    }
    return ok;
}

static bool validate_array(vctx *v, const snode *n, json_t *x) {
    bool ok = true;
    size_t size = json_array_size(x);
    if (n->min_items >= 0 && (long long)size < n->min_items) {
        ok = fail(v, "must have at least %lld items", n->min_items);
        if (stop(v)) return false;
    }
    if (n->max_items >= 0 && (long long)size > n->max_items) {
        ok = fail(v, "must have at most %lld items", n->max_items);
        if (stop(v)) return false;
    }
    for (size_t i = 0; i < size; i++) {
        const snode *sub = i < n->nprefix ? n->prefix[i] : n->items;
        if (!sub) continue;
        size_t m = push_index(v, i);
        if (sub->boolean == 0 && i >= n->nprefix) ok = fail(v, "no item allowed at this position");
        else if (!validate(v, sub, json_array_get(x, i))) ok = false;
        pop(v, m);
        if (!ok && stop(v)) return false;
    }
    if (n->contains) {
        /* minContains (default 1) and maxContains bound how many items match */
        long long lo = n->min_contains >= 0 ? n->min_contains : 1, hi = n->max_contains, found = 0;
        for (size_t i = 0; i < size && (found < lo || hi >= 0); i++)
            found += check_subschema(v, n->contains, json_array_get(x, i));
        if (found < lo) {
            ok = lo == 1 ? fail(v, "must contain at least one matching item")
                         : fail(v, "must contain at least %lld matching items", lo);
            if (stop(v)) return false;
        }
        if (hi >= 0 && found > hi) {
            ok = fail(v, "must contain at most %lld matching items", hi);
            if (stop(v)) return false;
        }
    }
    if (n->unique) {
        size_t a, b;
        if (has_duplicates(x, &a, &b)) return fail(v, "items %zu and %zu are equal (uniqueItems)", a, b);
    }
    return ok;
}

/* x compared with a bound: two integers exactly (doubles merge integers past 2^53),
 * otherwise as doubles. bound_j NULL = the double bound (draft-4 boolean forms). */
static int num_cmp(json_t *x, json_t *bound_j, double bound) {
    if (bound_j && json_is_integer(x) && json_is_integer(bound_j)) {
        json_int_t a = json_integer_value(x), b = json_integer_value(bound_j);
        return (a > b) - (a < b);
    }
    double d = json_number_value(x);
    return (d > bound) - (d < bound);
}

static bool validate_number(vctx *v, const snode *n, json_t *x) {
    double d = json_number_value(x);
    if (n->has_min && num_cmp(x, n->min_j, n->min) < 0) return fail(v, "must be >= %g", n->min);
    if (n->has_max && num_cmp(x, n->max_j, n->max) > 0) return fail(v, "must be <= %g", n->max);
    if (n->has_xmin && num_cmp(x, n->xmin_j, n->xmin) <= 0) return fail(v, "must be > %g", n->xmin);
    if (n->has_xmax && num_cmp(x, n->xmax_j, n->xmax) >= 0) return fail(v, "must be < %g", n->xmax);
    if (n->has_multiple) {
        /* a quotient past 2^53 (or overflowing) is judged by the exact remainder instead */
        double q = d / n->multiple;
        bool multiple = n->multiple_int > 0 && json_is_integer(x) ? json_integer_value(x) % n->multiple_int == 0
                      : isfinite(q) && fabs(q) < 9007199254740992.0 ? fabs(q - nearbyint(q)) <= 1e-9 * fmax(1.0, fabs(q))
                                                                    : fmod(d, n->multiple) == 0;
        if (!multiple)
            return fail(v, "must be a multiple of %g", n->multiple);
    }
    return true;
}

static bool validate_string(vctx *v, const snode *n, json_t *x) {
    const char *s = json_string_value(x);
    size_t len = json_string_length(x);
    if (n->min_len >= 0 || n->max_len >= 0) {
        size_t cps = utf8_codepoints(s, len);
        if (n->min_len >= 0 && (long long)cps < n->min_len)
            return fail(v, "must be at least %lld characters long", n->min_len);
        if (n->max_len >= 0 && (long long)cps > n->max_len)
            return fail(v, "must be at most %lld characters long", n->max_len);
    }
    if (n->pattern.code) {
        int r = regex_search(v, &n->pattern, s, len);
        if (r < 0) return fail(v, "pattern \"%s\" could not be evaluated", n->pattern.source);
        if (r == 0) return fail(v, "must match pattern \"%s\"", n->pattern.source);
    }
    return true;
}

static bool validate_combinators(vctx *v, const snode *n, json_t *x) {
    bool ok = true;
    for (size_t i = 0; i < n->nall; i++) {
        if (!validate(v, n->all_of[i], x)) ok = false;
        if (!ok && stop(v)) return false;
    }
    if (n->nany) {
        bool any = false;
        for (size_t i = 0; i < n->nany && !any; i++) any = check_subschema(v, n->any_of[i], x);
        if (!any) {
            /* one alternative: its own errors are the most useful explanation */
            if (n->nany == 1) ok = validate(v, n->any_of[0], x);
            else ok = fail(v, "must match at least one of the %zu schemas in anyOf", n->nany);
            if (stop(v)) return false;
        }
    }
    if (n->none) {
        size_t matched = 0;
        for (size_t i = 0; i < n->none && matched < 2; i++) matched += check_subschema(v, n->one_of[i], x);
        if (matched != 1) {
            ok = fail(v, "must match exactly one schema in oneOf (matched %s)", matched ? "more than one" : "none");
            if (stop(v)) return false;
        }
    }
    if (n->not_ && check_subschema(v, n->not_, x)) {
        ok = fail(v, "must not match the schema in \"not\"");
        if (stop(v)) return false;
    }
    if (n->if_) {
        const snode *branch = check_subschema(v, n->if_, x) ? n->then_ : n->else_;
        if (branch && !validate(v, branch, x)) ok = false;
    }
    return ok;
}

/* ---- unevaluatedProperties / unevaluatedItems
 * A property (item) is evaluated when a successfully applied subschema at the same instance
 * location declares it through properties, patternProperties, additionalProperties or a
 * nested unevaluatedProperties (prefixItems, items, contains, unevaluatedItems), following
 * $ref, allOf, the anyOf/oneOf alternatives that match, if/then/else and dependentSchemas. */

typedef struct evaluated {
    json_t *props; /* object used as a set of names */
    bool *items;   /* one flag per item */
    bool all;      /* every property / item */
} evaluated;

static void mark_property(evaluated *e, const char *k) {
    if (e->props) json_object_set_new(e->props, k, json_true());
}

static void collect_evaluated(vctx *v, const snode *n, json_t *x, evaluated *e, int depth) {
    if (!n || n->boolean >= 0 || e->all || depth > SCHEMA_MAX_VALIDATE_DEPTH || !step(v)) return;
    if (json_is_object(x)) {
        /* depth 0 is the schema whose unevaluatedProperties is being applied */
        if (n->additional || (n->uneval_props && depth > 0)) { e->all = true; return; }
        const char *k;
        json_t *val;
        json_object_foreach(x, k, val) {
            bool hit = false;
            for (size_t i = 0; i < n->nprops && !hit; i++) hit = strcmp(n->prop_names[i], k) == 0;
            for (size_t i = 0; i < n->npatprops && !hit; i++) hit = regex_search(v, &n->patprop_re[i], k, strlen(k)) == 1;
            if (hit) mark_property(e, k);
        }
        for (size_t i = 0; i < n->ndepschemas; i++)
            if (json_object_get(x, n->depschema_names[i])) collect_evaluated(v, n->depschemas[i], x, e, depth + 1);
    } else if (json_is_array(x)) {
        size_t size = json_array_size(x);
        if (n->items || (n->uneval_items && depth > 0)) { e->all = true; return; }
        for (size_t i = 0; i < n->nprefix && i < size; i++) e->items[i] = true;
        if (n->contains)
            for (size_t i = 0; i < size; i++)
                if (!e->items[i] && check_subschema(v, n->contains, json_array_get(x, i))) e->items[i] = true;
    }
    collect_evaluated(v, n->ref, x, e, depth + 1);
    for (size_t i = 0; i < n->nall; i++) collect_evaluated(v, n->all_of[i], x, e, depth + 1);
    for (size_t i = 0; i < n->nany; i++)
        if (check_subschema(v, n->any_of[i], x)) collect_evaluated(v, n->any_of[i], x, e, depth + 1);
    for (size_t i = 0; i < n->none; i++)
        if (check_subschema(v, n->one_of[i], x)) collect_evaluated(v, n->one_of[i], x, e, depth + 1);
    if (n->if_) {
        bool cond = check_subschema(v, n->if_, x);
        if (cond) collect_evaluated(v, n->if_, x, e, depth + 1);
        collect_evaluated(v, cond ? n->then_ : n->else_, x, e, depth + 1);
    }
}

static bool validate_unevaluated(vctx *v, const snode *n, json_t *x) {
    bool objects = n->uneval_props && json_is_object(x), arrays = n->uneval_items && json_is_array(x);
    if (!objects && !arrays) return true;
    size_t size = arrays ? json_array_size(x) : 0;
    evaluated e = {objects ? json_object() : NULL, arrays ? calloc(size ? size : 1, sizeof(bool)) : NULL, false};
    bool ok = true;
    if (objects ? !e.props : !e.items) {
        ok = fail(v, "out of memory");
        goto done;
    }
    collect_evaluated(v, n, x, &e, 0);
    if (e.all) goto done;
    if (objects) {
        const char *k;
        json_t *val;
        json_object_foreach(x, k, val) {
            if (json_object_get(e.props, k)) continue;
            size_t m = push_key(v, k);
            if (n->uneval_props->boolean == 0) ok = fail(v, "unevaluated property '%s' is not allowed", k);
            else if (!validate(v, n->uneval_props, val)) ok = false;
            pop(v, m);
            if (!ok && stop(v)) break;
        }
    } else {
        for (size_t i = 0; i < size; i++) {
            if (e.items[i]) continue;
            size_t m = push_index(v, i);
            if (n->uneval_items->boolean == 0) ok = fail(v, "unevaluated item %zu is not allowed", i);
            else if (!validate(v, n->uneval_items, json_array_get(x, i))) ok = false;
            pop(v, m);
            if (!ok && stop(v)) break;
        }
    }
done:
    json_decref(e.props);
    free(e.items);
    return ok;
}

static bool validate(vctx *v, const snode *n, json_t *x) {
    if (!step(v)) return false;
    if (n->boolean >= 0) return n->boolean ? true : fail(v, "no value is allowed here");
    if (++v->depth > SCHEMA_MAX_VALIDATE_DEPTH) {
        v->depth--;
        return fail(v, "value or schema nested too deeply (limit %d)", SCHEMA_MAX_VALIDATE_DEPTH);
    }
    bool ok = true;
    if (n->ref && !validate(v, n->ref, x)) ok = false;
    if (!ok && stop(v)) goto out;
    if (n->types && !type_matches(n->types, x)) {
        char want[96];
        types_text(n->types, want, sizeof want);
        ok = fail(v, "expected %s, got %s", want, type_name(x));
        goto out; /* the remaining keywords would only repeat the type error */
    }
    if (n->const_value && !jv_equal(n->const_value, x)) {
        char want[128];
        value_text(n->const_value, want, sizeof want);
        ok = fail(v, "must equal %s", want);
        if (stop(v)) goto out;
    }
    if (n->enum_values) {
        bool found = false;
        for (size_t i = 0; i < json_array_size(n->enum_values) && !found; i++)
            found = jv_equal(json_array_get(n->enum_values, i), x);
        if (!found) {
            char want[256];
            value_text(n->enum_values, want, sizeof want);
            ok = fail(v, "must be one of %s", want);
            if (stop(v)) goto out;
        }
    }
    bool sub_ok = true;
    if (json_is_object(x)) sub_ok = validate_object(v, n, x);
    else if (json_is_array(x)) sub_ok = validate_array(v, n, x);
    else if (json_is_number(x)) sub_ok = validate_number(v, n, x);
    else if (json_is_string(x)) sub_ok = validate_string(v, n, x);
    if (!sub_ok) ok = false;
    if (!ok && stop(v)) goto out;
    if (!validate_combinators(v, n, x)) ok = false;
    if (!ok && stop(v)) goto out;
    if (!validate_unevaluated(v, n, x)) ok = false;
out:
    v->depth--;
    return ok;
}

/* Validate and report up to max violations through fn; returns the number reported. */
size_t mcp_schema_validate_all(const mcp_schema *s, json_t *instance, size_t max,
                               mcp_schema_error_fn fn, void *user) {
    vctx v = {max ? max : 1, 0, 0, false, 0, 0, false, fn, user, GG_STRBUF_INIT, NULL, s->mctx};
    char path[256]; /* the instance path on the stack until a deep one needs more (every call validates) */
    gg_strbuf_use(&v.path, path, sizeof path);
    bool ok = validate(&v, s->top, instance);
    if (v.exhausted && v.count < v.max) { /* say why rather than blame the value */
        v.count++;
        char msg[128];
        snprintf(msg, sizeof msg, "checking the value against the schema exceeded its budget of %d steps",
                 SCHEMA_MAX_STEPS);
        if (fn) fn(user, "", msg);
    } else if (!ok && v.count == 0) { /* a failure always reports something */
        v.count++;
        if (fn) fn(user, "", "value does not match the schema");
    }
    gg_strbuf_free(&v.path);
    if (v.md) pcre2_match_data_free(v.md);
    return v.count;
}

typedef struct first_error {
    gg_error *err;
} first_error;

static void keep_first(void *user, const char *pointer, const char *message) {
    first_error *fe = user;
    if (!fe->err || gg_error_is_set(fe->err)) return;
    gg_error_set(fe->err, "schema_violation", "%s", message);
    gg_error_set_path(fe->err, pointer);
}

/* Validate an instance; on failure err names the first violation and its JSON pointer. */
bool mcp_schema_validate(const mcp_schema *s, json_t *instance, gg_error *err) {
    first_error fe = {err};
    return mcp_schema_validate_all(s, instance, 1, keep_first, &fe) == 0;
}
