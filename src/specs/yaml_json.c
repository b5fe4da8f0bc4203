/* yaml_json.c — one YAML document to a JSON value, remembering where every node starts so
 * schema violations can be reported as file:line:col. The document is read by the one
 * positioned reader in util (util/yaml.h: bounded aliases, core-schema scalars, the same
 * answers graphs get); this file only walks its tree into JSON plus a pointer → position
 * table, refusing what a spec may not hold (non-scalar or duplicate keys, deep nesting). */
#include "specs/internal.h"
#include "util/yaml.h"

#include <stdlib.h>
#include <string.h>

typedef struct yj_ctx {
    specs_doc *doc;
    gg_error *err;
    gg_strbuf ptr; /* pointer of the node being built */
} yj_ctx;

static bool yj_fail(yj_ctx *c, const ynode *n, const char *fmt, const char *arg) {
    gg_error_set(c->err, "yaml", fmt, arg ? arg : "");
    gg_error_set_pos(c->err, n->line, n->column);
    return false;
}

static bool yj_record(yj_ctx *c, const ynode *n) {
    specs_doc *d = c->doc;
    if (d->npos == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 64;
        specs_pos *p = realloc(d->pos, cap * sizeof *p);
        if (!p) return false;
        d->pos = p;
        d->cap = cap;
    }
    char *s = strdup(c->ptr.data ? c->ptr.data : "");
    if (!s) return false;
    d->pos[d->npos++] = (specs_pos){s, n->line, n->column};
    return true;
}

/* Append "/" + key escaped per RFC 6901 (~ → ~0, / → ~1). */
static bool yj_push(gg_strbuf *b, const char *key) {
    if (!gg_strbuf_putc(b, '/')) return false;
    for (const char *k = key; *k; k++) {
        if (*k == '~') gg_strbuf_puts(b, "~0");
        else if (*k == '/') gg_strbuf_puts(b, "~1");
        else gg_strbuf_putc(b, *k);
    }
    return !b->oom;
}

static json_t *yj_node(yj_ctx *c, const ynode *n, int depth);

/* The child at key (or index text) built with the pointer extended, then restored. */
static json_t *yj_child(yj_ctx *c, const char *key, const ynode *v, int depth) {
    size_t saved = c->ptr.len;
    json_t *val = yj_push(&c->ptr, key) ? yj_node(c, v, depth + 1) : NULL;
    c->ptr.len = saved;
    if (c->ptr.data) c->ptr.data[saved] = '\0';
    return val;
}

static json_t *yj_mapping(yj_ctx *c, const ynode *n, int depth) {
    json_t *obj = json_object();
    if (!obj) return NULL;
    for (size_t i = 0; i < n->count; i++) {
        const ynode *k = n->items[2 * i];
        if (k->kind != YN_SCALAR) {
            yj_fail(c, k, "mapping keys must be plain strings%s", NULL);
            goto fail;
        }
        if (strlen(k->str) != k->len || json_object_get(obj, k->str)) {
            yj_fail(c, k, "duplicate or invalid mapping key '%s'", k->str);
            goto fail;
        }
        json_t *val = yj_child(c, k->str, n->items[2 * i + 1], depth);
        if (!val || json_object_set_new(obj, k->str, val) != 0) goto fail;
    }
    return obj;
fail:
    json_decref(obj);
    return NULL;
}

static json_t *yj_sequence(yj_ctx *c, const ynode *n, int depth) {
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n->count; i++) {
        char idx[24];
        snprintf(idx, sizeof idx, "%zu", i);
        json_t *val = yj_child(c, idx, n->items[i], depth);
        if (!val || json_array_append_new(arr, val) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

static json_t *yj_node(yj_ctx *c, const ynode *n, int depth) {
    if (depth > SPECS_MAX_DEPTH) {
        yj_fail(c, n, "nesting deeper than the limit%s", NULL);
        return NULL;
    }
    if (!yj_record(c, n)) return NULL;
    if (n->kind == YN_MAP) return yj_mapping(c, n, depth);
    if (n->kind == YN_SEQ) return yj_sequence(c, n, depth);
    json_t *v = gg_yaml_to_json(n, c->err); /* the reader's one scalar rule */
    if (!v && !gg_error_is_set(c->err)) yj_fail(c, n, "scalar is not valid UTF-8%s", NULL);
    return v;
}

/* Parse text as exactly one YAML document into doc (see internal.h). */
bool specs_yaml_parse(const char *text, size_t len, specs_doc *doc, gg_error *err) {
    memset(doc, 0, sizeof *doc);
    ydoc y;
    if (!gg_yaml_doc_parse(&y, text, len, 0, err)) return false;
    if (!y.root) {
        gg_yaml_doc_free(&y);
        gg_error_set(err, "yaml", "the file is empty");
        gg_error_set_pos(err, 1, 1);
        return false;
    }
    yj_ctx c = {.doc = doc, .err = err, .ptr = GG_STRBUF_INIT};
    gg_strbuf_puts(&c.ptr, "");
    doc->root = yj_node(&c, y.root, 0);
    gg_strbuf_free(&c.ptr);
    gg_yaml_doc_free(&y);
    if (doc->root) return true;
    if (!gg_error_is_set(err)) gg_error_set(err, "oom", "out of memory");
    specs_doc_free(doc);
    return false;
}

void specs_doc_free(specs_doc *doc) {
    if (!doc) return;
    json_decref(doc->root);
    for (size_t i = 0; i < doc->npos; i++) free(doc->pos[i].pointer);
    free(doc->pos);
    memset(doc, 0, sizeof *doc);
}

/* Find the recorded node whose pointer is the longest prefix of pointer. */
void specs_doc_position(const specs_doc *doc, const char *pointer, int *line, int *column) {
    size_t best = 0;
    bool found = false;
    *line = *column = 0;
    for (size_t i = 0; i < doc->npos; i++) {
        const char *p = doc->pos[i].pointer;
        size_t n = strlen(p);
        if (strncmp(pointer, p, n) != 0 || (pointer[n] != '\0' && pointer[n] != '/')) continue;
        if (!found || n > best) {
            best = n;
            found = true;
            *line = doc->pos[i].line;
            *column = doc->pos[i].column;
        }
    }
}
