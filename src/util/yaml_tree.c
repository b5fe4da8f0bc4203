/* yaml_tree.c — libyaml events into a small tree that remembers where every node was
 * written, so every later error (unknown key, bad target, expression error) can name
 * file:line:column. Aliases share the anchored node, so every walk of the tree (schema
 * checks, JSON conversion, compilation) sees the expanded document: the parser therefore
 * bounds what expansion costs before anyone walks it — each node knows how many nodes it
 * stands for once expanded (and how many bytes of text) and how deep it reaches; aliases
 * may add at most max_alias_nodes nodes and YT_MAX_ALIAS_BYTES of text to the document
 * (one long string aliased many times is few nodes but much memory), and expanded
 * nesting stays under YT_MAX_DEPTH. An alias to a node still being built (a cycle) is
 * refused. Anchors are found by hash, so 40k anchors and aliases cost linear time. */
#include "util/yaml.h"

#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define YT_MAX_DEPTH 200
#define YT_MAX_NODES 1000000
#define YT_MAX_ALIAS_BYTES (1u << 20) /* scalar text aliases may add to a document */

typedef struct yanchor {
    char *name; /* NULL = empty slot */
    ynode *node;
} yanchor;

struct yarena {
    ynode **nodes;
    size_t count, cap;
    yanchor *anchors; /* open addressing, power-of-two size, at most half full */
    size_t nanchors, canchors;
    size_t expanded;  /* nodes of the document once every alias is expanded */
    size_t text, expanded_text; /* scalar bytes as written / once expanded */
    size_t max_alias_nodes;
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
    n->expanded = 1;
    n->height = 1;
    n->line = (int)m->line + 1;
    n->column = (int)m->column + 1;
    a->nodes[a->count++] = n;
    a->expanded++;
    return n;
}

/* A finished child (or an alias) adds its expanded size and height to its container. */
static void yt_fold(ynode **stack, int depth, const ynode *child) {
    if (depth == 0) return;
    ynode *p = stack[depth - 1];
    p->expanded += child->expanded;
    p->text += child->text;
    if (child->height + 1 > p->height) p->height = child->height + 1;
}

/* The checks an alias must pass before it is attached at nesting `depth`; false + err. */
static bool yt_alias_ok(yarena *a, const ynode *t, int depth, const yaml_mark_t *m, gg_error *err) {
    char msg[160];
    if (t->open) {
        snprintf(msg, sizeof msg, "YAML alias refers to a node that contains it (recursive aliases are not supported)");
    } else if (depth + t->height > YT_MAX_DEPTH) {
        snprintf(msg, sizeof msg, "YAML alias expansion nests deeper than %d levels", YT_MAX_DEPTH);
    } else {
        a->expanded += t->expanded;
        a->expanded_text += t->text;
        if (a->expanded - a->count <= a->max_alias_nodes && a->expanded_text - a->text <= YT_MAX_ALIAS_BYTES) return true;
        if (a->expanded - a->count > a->max_alias_nodes)
            snprintf(msg, sizeof msg, "YAML alias expansion exceeds %zu nodes (the limit on what aliases may add to a document)",
                     a->max_alias_nodes);
        else
            snprintf(msg, sizeof msg, "YAML alias expansion exceeds %u bytes of text (the limit on what aliases may add to a document)",
                     YT_MAX_ALIAS_BYTES);
    }
    gg_error_set(err, "yaml_alias", "%s", msg);
    gg_error_set_pos(err, (int)m->line + 1, (int)m->column + 1);
    return false;
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

static yanchor *yt_slot(yanchor *tab, size_t cap, const char *name) {
    for (size_t i = (size_t)gg_hash_str(name) & (cap - 1);; i = (i + 1) & (cap - 1))
        if (!tab[i].name || strcmp(tab[i].name, name) == 0) return &tab[i];
}

static bool yt_anchor_grow(yarena *a) {
    size_t nc = a->canchors ? a->canchors * 2 : 16;
    yanchor *tab = calloc(nc, sizeof *tab);
    if (!tab) return false;
    for (size_t i = 0; i < a->canchors; i++)
        if (a->anchors[i].name) *yt_slot(tab, nc, a->anchors[i].name) = a->anchors[i];
    free(a->anchors);
    a->anchors = tab;
    a->canchors = nc;
    return true;
}

/* Define (or, as YAML allows, redefine) an anchor. */
static bool yt_anchor(yarena *a, const char *name, ynode *n) {
    if (!name) return true;
    if (2 * (a->nanchors + 1) > a->canchors && !yt_anchor_grow(a)) return false;
    yanchor *slot = yt_slot(a->anchors, a->canchors, name);
    if (!slot->name) {
        if (!(slot->name = strdup(name))) return false;
        a->nanchors++;
    }
    slot->node = n;
    return true;
}

static ynode *yt_lookup_anchor(yarena *a, const char *name) {
    return a->canchors ? yt_slot(a->anchors, a->canchors, name)->node : NULL;
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

/* "c: 2" under a line "b 1" at the same indentation: libyaml read "b 1 c" as one plain
 * scalar and fails at the ':' of the second line (or, past a comment, at its key); the
 * mistake is the first line's missing ':'. Finds that earlier line (0-based line, column
 * of its text) when it has no ':'. */
static bool yt_colonless_line_before(const char *src, size_t len, const yaml_mark_t *m, size_t *line, size_t *col) {
    size_t at = m->index < len ? m->index : len, bol = at;
    while (bol > 0 && src[bol - 1] != '\n') bol--;
    size_t indent = 0;
    while (bol + indent < at && src[bol + indent] == ' ') indent++;
    size_t l = m->line;
    while (bol > 0 && l > 0) { /* previous lines, skipping blank ones */
        size_t end = bol - 1, start = end;
        while (start > 0 && src[start - 1] != '\n') start--;
        bol = start;
        l--;
        size_t i = start;
        while (i < end && src[i] == ' ') i++;
        if (i == end || src[i] == '#') continue;
        if (i - start != indent || memchr(src + i, ':', end - i)) return false;
        *line = l;
        *col = indent;
        return true;
    }
    return false;
}

/* libyaml's syntax error, where the writer will look for the mistake. A tab that cannot start
 * a token is indentation (YAML forbids tabs there): say so at the tab. A plain line where a
 * key was expected ("next exit" without ':') is found only on a later line: libyaml's
 * problem mark is there, its context mark on the key, so report the key's line. */
static void yt_syntax_err(gg_error *err, const yaml_parser_t *p, const char *src, size_t len) {
    const char *problem = p->problem ? p->problem : "invalid YAML";
    const yaml_mark_t *m = p->problem ? &p->problem_mark : &p->context_mark;
    char msg[512];
    if (p->problem && m->index < len && src[m->index] == '\t' &&
        (strstr(problem, "cannot start any token") || strstr(problem, "tab character"))) {
        yt_err(err, m, "yaml",
               "YAML syntax error: tab characters are not allowed for indentation in YAML (use spaces)");
        return;
    }
    if (p->problem && p->context && !strcmp(problem, "could not find expected ':'") &&
        !strcmp(p->context, "while scanning a simple key")) {
        yt_err(err, &p->context_mark, "yaml",
               "YAML syntax error: could not find expected ':' after the key that starts here (a mapping entry is "
               "written 'key: value')");
        return;
    }
    yaml_mark_t key = *m;
    if (p->problem &&
        (!strcmp(problem, "mapping values are not allowed in this context") ||
         !strcmp(problem, "did not find expected key")) &&
        yt_colonless_line_before(src, len, m, &key.line, &key.column)) {
        yt_err(err, &key, "yaml",
               "YAML syntax error: this line needs a ':' after its key (a mapping entry is written 'key: value'; "
               "without it the line runs on into the next one)");
        return;
    }
    snprintf(msg, sizeof msg, "YAML syntax error: %s%s%s", problem, p->context ? " " : "",
             p->context ? p->context : "");
    yt_err(err, m, "yaml", msg);
}

/* Parse src into d. Documents after the first are an error (a graph file is one document). */
bool gg_yaml_doc_parse(ydoc *d, const char *src, size_t len, size_t max_alias_nodes, gg_error *err) {
    memset(d, 0, sizeof *d);
    d->arena = calloc(1, sizeof *d->arena);
    if (!d->arena) {
        gg_error_set(err, "oom", "out of memory");
        return false;
    }
    d->arena->max_alias_nodes = max_alias_nodes ? max_alias_nodes : GG_YAML_MAX_ALIAS_NODES;
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
            yt_syntax_err(err, &parser, src, len);
            ok = false;
            break;
        }
        ynode *n = NULL;
        const char *anchor = NULL;
        switch (ev.type) {
        case YAML_STREAM_END_EVENT: done = true; break;
        case YAML_DOCUMENT_START_EVENT:
            if (++docs > 1) {
                yt_err(err, &ev.start_mark, "yaml", "a YAML file holds exactly one document");
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
            n->text = n->len;
            d->arena->text += n->len;
            d->arena->expanded_text += n->len;
            n->plain = ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
                       !(ev.data.scalar.tag && strcmp((const char *)ev.data.scalar.tag, YAML_STR_TAG) == 0);
            anchor = (const char *)ev.data.scalar.anchor;
            if (!yt_anchor(d->arena, anchor, n) || !yt_attach(stack, depth, n, d)) n = NULL;
            else yt_fold(stack, depth, n);
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
            n->open = true;
            stack[depth++] = n;
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            if (depth > 0) {
                ynode *done_node = stack[--depth];
                done_node->open = false;
                yt_fold(stack, depth, done_node);
            }
            n = (ynode *)1;
            break;
        case YAML_ALIAS_EVENT: {
            ynode *t = yt_lookup_anchor(d->arena, (const char *)ev.data.alias.anchor);
            if (!t) {
                yt_err(err, &ev.start_mark, "yaml", "unknown YAML alias");
                ok = false;
                break;
            }
            if (!yt_alias_ok(d->arena, t, depth, &ev.start_mark, err)) {
                ok = false;
                break;
            }
            n = t;
            if (!yt_attach(stack, depth, t, d)) n = NULL;
            else yt_fold(stack, depth, t);
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
        gg_yaml_doc_free(d);
        return false;
    }
    return true;
}

void gg_yaml_doc_free(ydoc *d) {
    if (!d || !d->arena) return;
    yarena *a = d->arena;
    for (size_t i = 0; i < a->count; i++) {
        free(a->nodes[i]->str);
        free(a->nodes[i]->items);
        free(a->nodes[i]);
    }
    for (size_t i = 0; i < a->canchors; i++) free(a->anchors[i].name);
    free(a->anchors);
    free(a->nodes);
    free(a);
    d->arena = NULL;
    d->root = NULL;
}

ynode *gg_yaml_get(const ynode *map, const char *key) {
    if (!map || map->kind != YN_MAP) return NULL;
    for (size_t i = 0; i < map->count; i++) {
        const ynode *k = map->items[2 * i];
        if (k->kind == YN_SCALAR && strcmp(k->str, key) == 0) return map->items[2 * i + 1];
    }
    return NULL;
}

const char *gg_yaml_kind_name(const ynode *n) {
    if (!n) return "nothing";
    if (n->kind == YN_MAP) return "a mapping";
    if (n->kind == YN_SEQ) return "a sequence";
    return "a scalar";
}

/* Plain scalars resolve by the one core-schema rule in util (the same as node specs);
 * quoted scalars and !!str are always strings. */
static json_t *yn_scalar_json(const ynode *n, gg_error *err) {
    if (!n->plain) return json_stringn(n->str, n->len);
    json_t *v = gg_yaml_plain_scalar(n->str, n->len, err);
    if (!v && gg_error_is_set(err)) gg_error_set_pos(err, n->line, n->column);
    return v;
}

/* Recursion is bounded: the parser refused documents whose expanded nesting exceeds
 * YT_MAX_DEPTH and whose aliases expand past the document's budget; the checks below only
 * guard against a tree built some other way. */
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

json_t *gg_yaml_to_json(const ynode *n, gg_error *err) {
    long budget = (long)(n ? n->expanded : 0) + 1;
    if (!n) return json_null();
    return yn_to_json_rec(n, &budget, 0, err);
}

typedef struct ykey {
    const char *s;
    size_t i;
} ykey;

static int ykey_cmp(const void *a, const void *b) {
    const ykey *x = a, *y = b;
    int c = strcmp(x->s, y->s);
    return c ? c : (x->i > y->i) - (x->i < y->i);
}

/* Sorting the keys (ties by position) puts equal keys together, first occurrence first:
 * a mapping of 40k keys costs n log n comparisons instead of n^2 / 2. */
long *gg_yaml_duplicate_keys(const ynode *map) {
    if (!map || map->kind != YN_MAP || map->count == 0) return NULL;
    long *first = malloc(map->count * sizeof *first);
    ykey *keys = malloc(map->count * sizeof *keys);
    if (!first || !keys) {
        free(first);
        free(keys);
        return NULL;
    }
    size_t n = 0;
    for (size_t i = 0; i < map->count; i++) {
        first[i] = -1;
        const ynode *k = map->items[2 * i];
        if (k->kind == YN_SCALAR) keys[n++] = (ykey){k->str, i};
    }
    qsort(keys, n, sizeof *keys, ykey_cmp);
    for (size_t r = 1; r < n; r++) {
        size_t head = r - 1;
        if (strcmp(keys[head].s, keys[r].s) != 0) continue;
        first[keys[r].i] = first[keys[head].i] >= 0 ? first[keys[head].i] : (long)keys[head].i;
    }
    free(keys);
    return first;
}
