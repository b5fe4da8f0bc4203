/* yaml_tree.c — libyaml events into a small tree that remembers where every node was
 * written, so every later error (unknown key, bad target, expression error) can name
 * file:line:column. Aliases share the anchored node; expansion is bounded. */
#include "graph/internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define YT_MAX_DEPTH 200
#define YT_MAX_NODES 1000000
#define YT_MAX_EXPANSION 2000000

struct yarena {
    ynode **nodes;
    size_t count, cap;
    struct { char *name; ynode *node; } *anchors;
    size_t nanchors, canchors;
};

static ynode *yt_new(yarena *a, yn_kind kind, const yaml_mark_t *m) {
    if (a->count >= YT_MAX_NODES) return NULL;
    if (a->count == a->cap) {
        size_t nc = a->cap ? a->cap * 2 : 64;
        ynode **nn = realloc(a->nodes, nc * sizeof *nn);
        if (!nn) return NULL;
        a->nodes = nn;
        a->cap = nc;
    }
    ynode *n = calloc(1, sizeof *n);
    if (!n) return NULL;
    n->kind = kind;
    n->line = (int)m->line + 1;
    n->column = (int)m->column + 1;
    a->nodes[a->count++] = n;
    return n;
}

static bool yt_push(ynode *parent, ynode *child) {
    size_t used = parent->kind == YN_MAP ? parent->count * 2 + (parent->len ? 1 : 0) : parent->count;
    if (used + 1 > parent->cap) {
        size_t nc = parent->cap ? parent->cap * 2 : 8;
        ynode **ni = realloc(parent->items, nc * sizeof *ni);
        if (!ni) return false;
        parent->items = ni;
        parent->cap = nc;
    }
    return true;
}

static bool yt_anchor(yarena *a, const char *name, ynode *n) {
    if (!name) return true;
    if (a->nanchors == a->canchors) {
        size_t nc = a->canchors ? a->canchors * 2 : 8;
        void *na = realloc(a->anchors, nc * sizeof *a->anchors);
        if (!na) return false;
        a->anchors = na;
        a->canchors = nc;
    }
    char *dup = strdup(name);
    if (!dup) return false;
    a->anchors[a->nanchors].name = dup;
    a->anchors[a->nanchors].node = n;
    a->nanchors++;
    return true;
}

static ynode *yt_lookup_anchor(yarena *a, const char *name) {
    for (size_t i = a->nanchors; i-- > 0;)
        if (strcmp(a->anchors[i].name, name) == 0) return a->anchors[i].node;
    return NULL;
}

/* Append child to the open container on top of the stack (map: key then value). */
static bool yt_attach(ynode **stack, int depth, ynode *child, ydoc *d) {
    if (depth == 0) {
        d->root = child;
        return true;
    }
    ynode *p = stack[depth - 1];
    if (!yt_push(p, child)) return false;
    if (p->kind == YN_SEQ) {
        p->items[p->count++] = child;
    } else {
        /* map: items holds key/value pairs; count counts complete pairs, the pending key
         * sits at index 2*count until its value arrives (tracked by the odd cap slot). */
        size_t used = p->count * 2 + (p->len ? 1 : 0);
        p->items[used] = child;
        if (p->len) {
            p->len = 0;
            p->count++;
        } else {
            p->len = 1; /* a key is pending */
        }
    }
    return true;
}

static void yt_err(gg_error *err, const yaml_mark_t *m, const char *code, const char *msg) {
    gg_error_set(err, code, "%s", msg);
    if (m) gg_error_set_pos(err, (int)m->line + 1, (int)m->column + 1);
}

/* Parse src into d. Documents after the first are an error (a graph file is one document). */
bool ydoc_parse(ydoc *d, const char *src, size_t len, gg_error *err) {
    memset(d, 0, sizeof *d);
    d->arena = calloc(1, sizeof *d->arena);
    if (!d->arena) {
        gg_error_set(err, "oom", "out of memory");
        return false;
    }
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        gg_error_set(err, "oom", "cannot initialize the YAML parser");
        return false;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)src, len);
    ynode *stack[YT_MAX_DEPTH];
    int depth = 0, docs = 0;
    bool ok = true, done = false;
    while (ok && !done) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            const yaml_mark_t *m = parser.problem ? &parser.problem_mark : &parser.context_mark;
            char msg[512];
            snprintf(msg, sizeof msg, "YAML syntax error: %s%s%s", parser.problem ? parser.problem : "invalid YAML",
                     parser.context ? " " : "", parser.context ? parser.context : "");
            yt_err(err, m, "yaml", msg);
            ok = false;
            break;
        }
        ynode *n = NULL;
        const char *anchor = NULL;
        switch (ev.type) {
        case YAML_STREAM_END_EVENT: done = true; break;
        case YAML_DOCUMENT_START_EVENT:
            if (++docs > 1) {
                yt_err(err, &ev.start_mark, "yaml", "a graph file holds exactly one YAML document");
                ok = false;
            }
            break;
        case YAML_SCALAR_EVENT:
            n = yt_new(d->arena, YN_SCALAR, &ev.start_mark);
            if (!n) break;
            n->str = malloc(ev.data.scalar.length + 1);
            if (!n->str) { n = NULL; break; }
            memcpy(n->str, ev.data.scalar.value, ev.data.scalar.length);
            n->str[ev.data.scalar.length] = '\0';
            n->len = ev.data.scalar.length;
            n->plain = ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
                       !(ev.data.scalar.tag && strcmp((const char *)ev.data.scalar.tag, YAML_STR_TAG) == 0);
            anchor = (const char *)ev.data.scalar.anchor;
            if (!yt_anchor(d->arena, anchor, n) || !yt_attach(stack, depth, n, d)) n = NULL;
            break;
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            if (depth >= YT_MAX_DEPTH) {
                yt_err(err, &ev.start_mark, "yaml", "YAML nesting is too deep");
                ok = false;
                break;
            }
            n = yt_new(d->arena, ev.type == YAML_SEQUENCE_START_EVENT ? YN_SEQ : YN_MAP, &ev.start_mark);
            if (!n) break;
            anchor = ev.type == YAML_SEQUENCE_START_EVENT ? (const char *)ev.data.sequence_start.anchor
                                                          : (const char *)ev.data.mapping_start.anchor;
            if (!yt_anchor(d->arena, anchor, n) || !yt_attach(stack, depth, n, d)) { n = NULL; break; }
            stack[depth++] = n;
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            if (depth > 0) depth--;
            n = (ynode *)1;
            break;
        case YAML_ALIAS_EVENT: {
            ynode *t = yt_lookup_anchor(d->arena, (const char *)ev.data.alias.anchor);
            if (!t) {
                yt_err(err, &ev.start_mark, "yaml", "unknown YAML alias");
                ok = false;
                break;
            }
            n = t;
            if (!yt_attach(stack, depth, t, d)) n = NULL;
            break;
        }
        default: n = (ynode *)1; break;
        }
        if (ok && !done && !n && ev.type != YAML_STREAM_START_EVENT && ev.type != YAML_DOCUMENT_START_EVENT &&
            ev.type != YAML_DOCUMENT_END_EVENT) {
            if (!gg_error_is_set(err)) yt_err(err, &ev.start_mark, "yaml", "out of memory or too many YAML nodes");
            ok = false;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    if (!ok) {
        ydoc_free(d);
        return false;
    }
    return true;
}

void ydoc_free(ydoc *d) {
    if (!d || !d->arena) return;
    yarena *a = d->arena;
    for (size_t i = 0; i < a->count; i++) {
        free(a->nodes[i]->str);
        free(a->nodes[i]->items);
        free(a->nodes[i]);
    }
    for (size_t i = 0; i < a->nanchors; i++) free(a->anchors[i].name);
    free(a->anchors);
    free(a->nodes);
    free(a);
    d->arena = NULL;
    d->root = NULL;
}

ynode *yn_get(const ynode *map, const char *key) {
    if (!map || map->kind != YN_MAP) return NULL;
    for (size_t i = 0; i < map->count; i++) {
        const ynode *k = map->items[2 * i];
        if (k->kind == YN_SCALAR && strcmp(k->str, key) == 0) return map->items[2 * i + 1];
    }
    return NULL;
}

const char *yn_kind_name(const ynode *n) {
    if (!n) return "nothing";
    if (n->kind == YN_MAP) return "a mapping";
    if (n->kind == YN_SEQ) return "a sequence";
    return "a scalar";
}

static bool all_match(const char *s, const char *set) {
    if (!*s) return false;
    for (; *s; s++)
        if (!strchr(set, *s)) return false;
    return true;
}

/* YAML 1.2 core schema resolution of a plain scalar (what js-yaml does for the common
 * cases); quoted scalars are always strings. */
static json_t *yn_scalar_json(const ynode *n, gg_error *err) {
    const char *s = n->str;
    if (!n->plain) return json_stringn(s, n->len);
    if (!*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL"))
        return json_null();
    if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE")) return json_true();
    if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE")) return json_false();
    const char *p = s;
    if (*p == '+' || *p == '-') p++;
    if (all_match(p, "0123456789")) {
        errno = 0;
        long long v = strtoll(s, NULL, 10);
        if (errno == 0) return json_integer(v);
        return json_real(strtod(s, NULL));
    }
    if ((p[0] == '0' && (p[1] == 'x' || p[1] == 'o')) && p == s) {
        if (p[1] == 'x' && all_match(p + 2, "0123456789abcdefABCDEF")) return json_integer(strtoll(p + 2, NULL, 16));
        if (p[1] == 'o' && all_match(p + 2, "01234567")) return json_integer(strtoll(p + 2, NULL, 8));
    }
    if (!strcmp(p, ".inf") || !strcmp(p, ".Inf") || !strcmp(p, ".INF") || !strcmp(s, ".nan") ||
        !strcmp(s, ".NaN") || !strcmp(s, ".NAN")) {
        gg_error_set(err, "yaml", "'%s' is not a finite number and cannot be represented in JSON", s);
        gg_error_set_pos(err, n->line, n->column);
        return NULL;
    }
    /* float: digits with optional fraction and exponent, or a leading dot */
    const char *q = p;
    bool digits = false;
    while (*q >= '0' && *q <= '9') q++, digits = true;
    if (*q == '.') {
        q++;
        while (*q >= '0' && *q <= '9') q++, digits = true;
    }
    if (digits && (*q == 'e' || *q == 'E')) {
        q++;
        if (*q == '+' || *q == '-') q++;
        if (!(*q >= '0' && *q <= '9')) return json_stringn(s, n->len);
        while (*q >= '0' && *q <= '9') q++;
    }
    if (digits && !*q) {
        double v = strtod(s, NULL);
        if (isfinite(v)) return json_real(v);
    }
    return json_stringn(s, n->len);
}

static json_t *yn_to_json_rec(const ynode *n, long *budget, int depth, gg_error *err) {
    if (--*budget < 0 || depth > YT_MAX_DEPTH) {
        gg_error_set(err, "yaml", "YAML aliases expand to too much data");
        gg_error_set_pos(err, n->line, n->column);
        return NULL;
    }
    if (n->kind == YN_SCALAR) {
        json_t *v = yn_scalar_json(n, err);
        if (!v && !gg_error_is_set(err)) gg_error_set(err, "oom", "out of memory");
        return v;
    }
    json_t *out = n->kind == YN_SEQ ? json_array() : json_object();
    if (!out) {
        gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < n->count; i++) {
        const ynode *k = n->kind == YN_MAP ? n->items[2 * i] : NULL;
        const ynode *vnode = n->kind == YN_MAP ? n->items[2 * i + 1] : n->items[i];
        if (k && k->kind != YN_SCALAR) {
            gg_error_set(err, "yaml", "mapping keys must be scalars");
            gg_error_set_pos(err, k->line, k->column);
            json_decref(out);
            return NULL;
        }
        json_t *v = yn_to_json_rec(vnode, budget, depth + 1, err);
        if (!v) {
            json_decref(out);
            return NULL;
        }
        int rc = k ? json_object_set_new(out, k->str, v) : json_array_append_new(out, v);
        if (rc != 0) {
            gg_error_set(err, "oom", "out of memory");
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

json_t *yn_to_json(const ynode *n, gg_error *err) {
    long budget = YT_MAX_EXPANSION;
    if (!n) return json_null();
    return yn_to_json_rec(n, &budget, 0, err);
}
