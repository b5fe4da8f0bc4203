/* yaml_json.c — one YAML document to a JSON value, remembering where every node starts so
 * schema violations can be reported as file:line:col. Scalars follow the YAML 1.2 core
 * schema (null, booleans, integers, floats; quoted and block scalars stay strings). */
#include "specs/internal.h"

#include <stdlib.h>
#include <string.h>
#include <yaml.h>

typedef struct yj_ctx {
    yaml_parser_t parser;
    specs_doc *doc;
    gg_error *err;
    gg_strbuf ptr; /* pointer of the node being built */
} yj_ctx;

static bool yj_fail(yj_ctx *c, const yaml_mark_t *m, const char *fmt, const char *arg) {
    gg_error_set(c->err, "yaml", fmt, arg ? arg : "");
    gg_error_set_pos(c->err, (int)m->line + 1, (int)m->column + 1);
    return false;
}

static bool yj_next(yj_ctx *c, yaml_event_t *ev) {
    if (yaml_parser_parse(&c->parser, ev)) return true;
    gg_error_set(c->err, "yaml", "%s%s%s", c->parser.problem ? c->parser.problem : "syntax error",
                 c->parser.context ? " " : "", c->parser.context ? c->parser.context : "");
    gg_error_set_pos(c->err, (int)c->parser.problem_mark.line + 1, (int)c->parser.problem_mark.column + 1);
    return false;
}

static bool yj_record(yj_ctx *c, const yaml_mark_t *m) {
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
    d->pos[d->npos++] = (specs_pos){s, (int)m->line + 1, (int)m->column + 1};
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

static json_t *yj_node(yj_ctx *c, yaml_event_t *ev, int depth);

static json_t *yj_mapping(yj_ctx *c, yaml_event_t *start, int depth) {
    json_t *obj = json_object();
    if (!obj) return NULL;
    for (;;) {
        yaml_event_t k;
        if (!yj_next(c, &k)) goto fail;
        if (k.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&k);
            return obj;
        }
        if (k.type != YAML_SCALAR_EVENT) {
            yj_fail(c, &k.start_mark, "mapping keys must be plain strings%s", NULL);
            yaml_event_delete(&k);
            goto fail;
        }
        size_t klen = k.data.scalar.length;
        char *key = strndup((const char *)k.data.scalar.value, klen);
        yaml_mark_t km = k.start_mark;
        yaml_event_delete(&k);
        if (!key) goto fail;
        if (strlen(key) != klen || json_object_get(obj, key)) {
            yj_fail(c, &km, "duplicate or invalid mapping key '%s'", key);
            free(key);
            goto fail;
        }
        size_t saved = c->ptr.len;
        if (!yj_push(&c->ptr, key)) {
            free(key);
            goto fail;
        }
        yaml_event_t v;
        if (!yj_next(c, &v)) {
            free(key);
            goto fail;
        }
        json_t *val = yj_node(c, &v, depth + 1);
        yaml_event_delete(&v);
        c->ptr.len = saved;
        c->ptr.data[saved] = '\0';
        if (!val || json_object_set_new(obj, key, val) != 0) {
            free(key);
            goto fail;
        }
        free(key);
    }
fail:
    (void)start;
    json_decref(obj);
    return NULL;
}

static json_t *yj_sequence(yj_ctx *c, int depth) {
    json_t *arr = json_array();
    if (!arr) return NULL;
    for (size_t i = 0;; i++) {
        yaml_event_t v;
        if (!yj_next(c, &v)) break;
        if (v.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&v);
            return arr;
        }
        size_t saved = c->ptr.len;
        char idx[24];
        snprintf(idx, sizeof idx, "%zu", i);
        json_t *val = yj_push(&c->ptr, idx) ? yj_node(c, &v, depth + 1) : NULL;
        yaml_event_delete(&v);
        c->ptr.len = saved;
        if (c->ptr.data) c->ptr.data[saved] = '\0';
        if (!val || json_array_append_new(arr, val) != 0) break;
    }
    json_decref(arr);
    return NULL;
}

static json_t *yj_node(yj_ctx *c, yaml_event_t *ev, int depth) {
    if (depth > SPECS_MAX_DEPTH) {
        yj_fail(c, &ev->start_mark, "nesting deeper than the limit%s", NULL);
        return NULL;
    }
    if (!yj_record(c, &ev->start_mark)) {
        gg_error_set(c->err, "oom", "out of memory");
        return NULL;
    }
    switch (ev->type) {
    case YAML_SCALAR_EVENT: {
        const char *s = (const char *)ev->data.scalar.value;
        size_t n = ev->data.scalar.length;
        const char *tag = (const char *)ev->data.scalar.tag;
        if (tag && strcmp(tag, YAML_STR_TAG) == 0) return json_stringn(s, n);
        if (tag && strcmp(tag, "!") != 0) {
            yj_fail(c, &ev->start_mark, "unsupported tag '%s'", tag);
            return NULL;
        }
        /* plain scalars resolve by the one core-schema rule in util (the same as graphs) */
        json_t *v = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? gg_yaml_plain_scalar(s, n, c->err)
                                                                      : json_stringn(s, n);
        if (v) return v;
        if (gg_error_is_set(c->err)) gg_error_set_pos(c->err, (int)ev->start_mark.line + 1, (int)ev->start_mark.column + 1);
        else yj_fail(c, &ev->start_mark, "scalar is not valid UTF-8%s", NULL);
        return NULL;
    }
    case YAML_MAPPING_START_EVENT:
        return yj_mapping(c, ev, depth);
    case YAML_SEQUENCE_START_EVENT:
        return yj_sequence(c, depth);
    case YAML_ALIAS_EVENT:
        yj_fail(c, &ev->start_mark, "aliases are not supported%s", NULL);
        return NULL;
    default:
        yj_fail(c, &ev->start_mark, "unexpected YAML event%s", NULL);
        return NULL;
    }
}

/* Parse text as exactly one YAML document into doc (see internal.h). */
bool specs_yaml_parse(const char *text, size_t len, specs_doc *doc, gg_error *err) {
    memset(doc, 0, sizeof *doc);
    yj_ctx c = {.doc = doc, .err = err, .ptr = GG_STRBUF_INIT};
    if (!yaml_parser_initialize(&c.parser)) {
        gg_error_set(err, "oom", "out of memory");
        return false;
    }
    yaml_parser_set_input_string(&c.parser, (const unsigned char *)text, len);
    gg_strbuf_puts(&c.ptr, "");
    bool ok = false;
    yaml_event_t ev;
    int stage = 0; /* 0 stream start, 1 document start, 2 root, 3 document end, 4 stream end */
    while (stage < 5) {
        if (!yj_next(&c, &ev)) goto done;
        yaml_event_type_t t = ev.type;
        if (stage == 0 && t == YAML_STREAM_START_EVENT) stage = 1;
        else if (stage == 1 && t == YAML_DOCUMENT_START_EVENT) stage = 2;
        else if (stage == 1 && t == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&ev);
            gg_error_set(err, "yaml", "the file is empty");
            gg_error_set_pos(err, 1, 1);
            goto done;
        } else if (stage == 2) {
            doc->root = yj_node(&c, &ev, 0);
            if (!doc->root) {
                if (!gg_error_is_set(err)) gg_error_set(err, "oom", "out of memory");
                yaml_event_delete(&ev);
                goto done;
            }
            stage = 3;
        } else if (stage == 3 && t == YAML_DOCUMENT_END_EVENT) stage = 4;
        else if (stage == 4 && t == YAML_STREAM_END_EVENT) stage = 5;
        else {
            yj_fail(&c, &ev.start_mark, "only one YAML document per file is allowed%s", NULL);
            yaml_event_delete(&ev);
            goto done;
        }
        yaml_event_delete(&ev);
    }
    ok = true;
done:
    yaml_parser_delete(&c.parser);
    gg_strbuf_free(&c.ptr);
    if (!ok) specs_doc_free(doc);
    return ok;
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
