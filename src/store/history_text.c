/* history_text.c — the texts of a run as the history writer stores them (arguments,
 * result and the node records as one compact JSON array: the form is described in
 * migrations/0003_history_one_row.sql), built by gg_history_submit on the submitting
 * thread. */
#include "store/store_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool tb_reserve(gg_tbuf *b, size_t extra) {
    if (b->oom) return false;
    if (b->len + extra <= b->cap) return true;
    size_t cap = b->cap * 2;
    while (cap < b->len + extra) cap *= 2;
    char *np = b->heap ? realloc(b->p, cap) : malloc(cap);
    if (!np) { b->oom = true; return false; }
    if (!b->heap) memcpy(np, b->p, b->len);
    b->p = np;
    b->cap = cap;
    b->heap = true;
    return true;
}

void gg_tbuf_put(gg_tbuf *b, const char *s, size_t n) {
    if (!tb_reserve(b, n)) return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void tb_putc(gg_tbuf *b, char c) {
    if (b->len < b->cap || tb_reserve(b, 1)) b->p[b->len++] = c;
}

static void tb_int(gg_tbuf *b, long long v) {
    char tmp[24];
    int i = (int)sizeof tmp;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do { tmp[--i] = (char)('0' + u % 10); u /= 10; } while (u);
    if (v < 0) tmp[--i] = '-';
    gg_tbuf_put(b, tmp + i, sizeof tmp - (size_t)i);
}

/* A duration: the executor's are whole microseconds, written as such without printf;
 * anything else in full precision. */
static void tb_duration(gg_tbuf *b, double d) {
    if (!isfinite(d)) { gg_tbuf_put(b, "0", 1); return; }
    double us = round(d * 1000.0);
    if (fabs(us) < 1e15 && us / 1000.0 == d) {
        long long v = (long long)us;
        if (v < 0) { tb_putc(b, '-'); v = -v; }
        tb_int(b, v / 1000);
        int frac = (int)(v % 1000);
        if (frac) {
            char f[4] = {(char)('0' + frac / 100), (char)('0' + frac / 10 % 10), (char)('0' + frac % 10), 0};
            int n = 3;
            while (f[n - 1] == '0') n--;
            tb_putc(b, '.');
            gg_tbuf_put(b, f, (size_t)n);
        }
        return;
    }
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%.17g", d);
    gg_tbuf_put(b, tmp, (size_t)n);
}

/* s as a JSON string; invalid UTF-8 becomes U+FFFD so the text always parses back. */
static void tb_string(gg_tbuf *b, const char *s) {
    tb_putc(b, '"');
    const unsigned char *p = (const unsigned char *)s, *run = p;
    for (;;) {
        unsigned c = *p;
        if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) { p++; continue; }
        gg_tbuf_put(b, (const char *)run, (size_t)(p - run));
        if (!c) break;
        if (c >= 0x80) {
            int n = (int)gg_utf8_len(p, 4); /* NUL-terminated: see util.h */
            if (n) gg_tbuf_put(b, (const char *)p, (size_t)n);
            else gg_tbuf_put(b, "\\ufffd", 6);
            p += n ? n : 1;
        } else if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            gg_tbuf_put(b, e, 2);
            p++;
        } else {
            char e[8];
            snprintf(e, sizeof e, "\\u%04x", c);
            gg_tbuf_put(b, e, 6);
            p++;
        }
        run = p;
    }
    tb_putc(b, '"');
}

static int tb_dump_cb(const char *buf, size_t size, void *data) {
    gg_tbuf *b = data;
    gg_tbuf_put(b, buf, size);
    return b->oom ? -1 : 0;
}

/* Nesting this deep is handed to jansson's own encoder (which also catches cycles). */
#define TB_JSON_DEPTH 512

/* v as compact JSON, written straight into b: what json_dumps(JSON_COMPACT|JSON_ENCODE_ANY)
 * writes, without its buffer allocations and callback per token (a small value cost
 * ≈ 0.3 µs through json_dumps, a few percent of that here). false when v cannot be
 * encoded (a NaN, a cycle). */
static bool tb_json(gg_tbuf *b, json_t *v, int depth) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        if (depth >= TB_JSON_DEPTH) break;
        tb_putc(b, '{');
        bool first = true;
        const char *k;
        json_t *e;
        json_object_foreach(v, k, e) {
            if (!first) tb_putc(b, ',');
            first = false;
            tb_string(b, k);
            tb_putc(b, ':');
            if (!tb_json(b, e, depth + 1)) return false;
        }
        tb_putc(b, '}');
        return true;
    }
    case JSON_ARRAY: {
        if (depth >= TB_JSON_DEPTH) break;
        tb_putc(b, '[');
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) {
            if (i) tb_putc(b, ',');
            if (!tb_json(b, e, depth + 1)) return false;
        }
        tb_putc(b, ']');
        return true;
    }
    case JSON_STRING: {
        const char *str = json_string_value(v);
        if (strlen(str) != json_string_length(v)) break; /* embedded NUL: jansson writes \u0000 */
        tb_string(b, str);
        return true;
    }
    case JSON_INTEGER: tb_int(b, (long long)json_integer_value(v)); return true;
    case JSON_TRUE: gg_tbuf_put(b, "true", 4); return true;
    case JSON_FALSE: gg_tbuf_put(b, "false", 5); return true;
    case JSON_NULL: gg_tbuf_put(b, "null", 4); return true;
    default: break; /* reals: jansson's formatting, exactly */
    }
    return json_dump_callback(v, tb_dump_cb, b, JSON_COMPACT | JSON_ENCODE_ANY) == 0;
}

/* A stored JSON value (NULL → null); larger than max bytes → {"truncated":true,"bytes":N}. */
static void tb_value(gg_tbuf *b, json_t *v, size_t max) {
    if (!v) { gg_tbuf_put(b, "null", 4); return; }
    size_t at = b->len;
    if (!tb_json(b, v, 0)) {
        if (!b->oom) { b->len = at; gg_tbuf_put(b, "null", 4); } /* not representable (NaN) */
        return;
    }
    size_t n = b->len - at;
    if (n <= max) return;
    b->len = at;
    gg_tbuf_put(b, "{\"truncated\":true,\"bytes\":", 26);
    tb_int(b, (long long)n);
    tb_putc(b, '}');
}

/* One node in the stored form: [index,id,type,start,end,duration,output(,input(,error))]. */
static void tb_node(gg_tbuf *b, bool first, long long base, long long index, const char *id, const char *type, long long start,
                    long long end, double duration, json_t *output, const char *output_text, json_t *input,
                    const char *input_text, const char *error, size_t max) {
    if (!first) tb_putc(b, ',');
    tb_putc(b, '[');
    tb_int(b, index);
    tb_putc(b, ',');
    tb_string(b, id ? id : "");
    tb_putc(b, ',');
    tb_string(b, type ? type : "");
    tb_putc(b, ',');
    tb_int(b, start - base);
    tb_putc(b, ',');
    tb_int(b, end - base);
    tb_putc(b, ',');
    tb_duration(b, duration);
    tb_putc(b, ',');
    if (output_text) gg_tbuf_put(b, output_text, strlen(output_text));
    else tb_value(b, output, max);
    if (input || input_text || error) {
        tb_putc(b, ',');
        if (input_text) gg_tbuf_put(b, input_text, strlen(input_text));
        else tb_value(b, input, max);
        if (error) {
            tb_putc(b, ',');
            tb_string(b, error);
        }
    }
    tb_putc(b, ']');
}

/* The run's node bounds (gg_history_options.max_run_nodes / _node_bytes, 0 = none): room
 * for one more record, else it is counted as dropped. */
typedef struct node_bound {
    size_t max_nodes, max_bytes, start, kept, dropped;
} node_bound;

static bool nb_room(node_bound *nb, const gg_tbuf *b) {
    if ((nb->max_nodes && nb->kept >= nb->max_nodes) || (nb->max_bytes && b->len - nb->start >= nb->max_bytes)) {
        nb->dropped++;
        return false;
    }
    nb->kept++;
    return true;
}

/* Every node of r as one JSON array, appended to b. */
static void tb_nodes(gg_tbuf *b, const gg_exec_record *r, size_t max, node_bound *nb) {
    nb->start = b->len;
    tb_putc(b, '[');
    bool first = true;
    size_t i;
    json_t *n;
    json_array_foreach(r->node_history, i, n) {
        if (!nb_room(nb, b)) continue;
        json_t *err = json_object_get(n, "error");
        const char *emsg = NULL;
        if (err) {
            emsg = json_is_object(err) ? json_string_value(json_object_get(err, "message")) : json_string_value(err);
            if (!emsg) emsg = "error";
        }
        json_t *dur = json_object_get(n, "duration");
        long long start = json_integer_value(json_object_get(n, "startTime")),
                  end = json_integer_value(json_object_get(n, "endTime"));
        tb_node(b, first, r->started_ms, json_integer_value(json_object_get(n, "executionIndex")),
                json_string_value(json_object_get(n, "nodeId")), json_string_value(json_object_get(n, "nodeType")),
                start, end, json_is_number(dur) ? json_number_value(dur) : (double)(end - start),
                json_object_get(n, "output"), NULL,
                r->all_inputs || err ? json_object_get(n, "input") : NULL, NULL, emsg, max);
        first = false;
    }
    for (size_t k = 0; k < r->n_nodes; k++) {
        const gg_node_exec_record *d = &r->nodes[k];
        if (!nb_room(nb, b)) continue;
        tb_node(b, first, r->started_ms, d->index, d->node_id, d->node_type, d->start_ms, d->end_ms, d->duration_ms,
                d->output, d->output_text, d->input, d->input_text, d->error, max);
        first = false;
    }
    if (nb->dropped) {
        char m[96];
        int len = snprintf(m, sizeof m, "%s{\"truncated\":true,\"dropped\":%zu,\"kept\":%zu}", first ? "" : ",",
                           nb->dropped, nb->kept);
        gg_tbuf_put(b, m, (size_t)len);
    }
    tb_putc(b, ']');
}

static size_t tb_text_value(gg_tbuf *b, json_t *v, const char *text, size_t max) {
    if (!v && !text) return SIZE_MAX;
    size_t at = b->len;
    if (text) gg_tbuf_put(b, text, strlen(text));
    else tb_value(b, v, max);
    tb_putc(b, '\0');
    return at;
}

/* Texts of r, one after the other in b (see store_internal.h). */
void gg_history_build_texts(gg_tbuf *b, const gg_exec_record *r, size_t max, size_t max_nodes, size_t max_node_bytes,
                            gg_history_texts *t) {
    t->args = tb_text_value(b, r->arguments, r->arguments_text, max);
    t->result = tb_text_value(b, r->result, r->result_text, max);
    t->nodes = SIZE_MAX;
    if (r->nodes_text) {
        t->nodes = b->len;
        gg_tbuf_put(b, r->nodes_text, strlen(r->nodes_text) + 1);
    } else if (r->node_history || r->n_nodes) {
        t->nodes = b->len;
        node_bound nb = {max_nodes, max_node_bytes, 0, 0, 0};
        tb_nodes(b, r, max, &nb);
        tb_putc(b, '\0');
    }
}
