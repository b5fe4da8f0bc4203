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

/* A duration rounded to whole microseconds (gg_store_round_us), written as such without
 * printf; only a value past 1e12 ms falls back to full precision. */
static void tb_duration(gg_strbuf *b, double d) {
    if (!isfinite(d)) { gg_strbuf_append(b, "0", 1); return; }
    double us = round(d * 1000.0);
    d = us / 1000.0;
    if (fabs(us) < 1e15 && us / 1000.0 == d) {
        long long v = (long long)us;
        if (v < 0) { gg_strbuf_putc(b, '-'); v = -v; }
        gg_strbuf_put_int(b, v / 1000);
        int frac = (int)(v % 1000);
        if (frac) {
            char f[4] = {(char)('0' + frac / 100), (char)('0' + frac / 10 % 10), (char)('0' + frac % 10), 0};
            int n = 3;
            while (f[n - 1] == '0') n--;
            gg_strbuf_putc(b, '.');
            gg_strbuf_append(b, f, (size_t)n);
        }
        return;
    }
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%.17g", d);
    gg_strbuf_append(b, tmp, (size_t)n);
}

/* A C string of the record (id, type, error message) as JSON; bytes that are not UTF-8
 * become U+FFFD so the text always parses back. */
static void put_string(gg_strbuf *b, const char *s) { gg_strbuf_json_string(b, s, strlen(s)); }

/* A stored JSON value (NULL → null); larger than max bytes → {"truncated":true,"bytes":N}. */
static void tb_value(gg_strbuf *b, json_t *v, size_t max) {
    if (!v) { gg_strbuf_append(b, "null", 4); return; }
    size_t at = b->len;
    if (!gg_strbuf_put_json(b, v)) {
        if (!b->oom) { b->len = at; gg_strbuf_append(b, "null", 4); } /* not representable (NaN) */
        return;
    }
    size_t n = b->len - at;
    if (n <= max) return;
    b->len = at;
    gg_strbuf_append(b, "{\"truncated\":true,\"bytes\":", 26);
    gg_strbuf_put_int(b, (long long)n);
    gg_strbuf_putc(b, '}');
}

/* One node in the stored form: [index,id,type,start,end,duration,output(,input(,error))]. */
static void tb_node(gg_strbuf *b, bool first, long long base, long long index, const char *id, const char *type, long long start,
                    long long end, double duration, json_t *output, const char *output_text, json_t *input,
                    const char *input_text, const char *error, size_t max) {
    if (!first) gg_strbuf_putc(b, ',');
    gg_strbuf_putc(b, '[');
    gg_strbuf_put_int(b, index);
    gg_strbuf_putc(b, ',');
    put_string(b, id ? id : "");
    gg_strbuf_putc(b, ',');
    put_string(b, type ? type : "");
    gg_strbuf_putc(b, ',');
    gg_strbuf_put_int(b, start - base);
    gg_strbuf_putc(b, ',');
    gg_strbuf_put_int(b, end - base);
    gg_strbuf_putc(b, ',');
    tb_duration(b, duration);
    gg_strbuf_putc(b, ',');
    if (output_text) gg_strbuf_append(b, output_text, strlen(output_text));
    else tb_value(b, output, max);
    if (input || input_text || error) {
        gg_strbuf_putc(b, ',');
        if (input_text) gg_strbuf_append(b, input_text, strlen(input_text));
        else tb_value(b, input, max);
        if (error) {
            gg_strbuf_putc(b, ',');
            put_string(b, error);
        }
    }
    gg_strbuf_putc(b, ']');
}

/* The run's node bounds (gg_history_options.max_run_nodes / _node_bytes, 0 = none): room
 * for one more record, else it is counted as dropped. */
typedef struct node_bound {
    size_t max_nodes, max_bytes, start, kept, dropped;
} node_bound;

static bool nb_room(node_bound *nb, const gg_strbuf *b) {
    if ((nb->max_nodes && nb->kept >= nb->max_nodes) || (nb->max_bytes && b->len - nb->start >= nb->max_bytes)) {
        nb->dropped++;
        return false;
    }
    nb->kept++;
    return true;
}

/* Every node of r as one JSON array, appended to b. */
static void tb_nodes(gg_strbuf *b, const gg_exec_record *r, size_t max, node_bound *nb) {
    nb->start = b->len;
    gg_strbuf_putc(b, '[');
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
        gg_strbuf_append(b, m, (size_t)len);
    }
    gg_strbuf_putc(b, ']');
}

static size_t tb_text_value(gg_strbuf *b, json_t *v, const char *text, size_t max) {
    if (!v && !text) return SIZE_MAX;
    size_t at = b->len;
    if (text) gg_strbuf_append(b, text, strlen(text));
    else tb_value(b, v, max);
    gg_strbuf_putc(b, '\0');
    return at;
}

/* Texts of r, one after the other in b (see store_internal.h). */
void gg_history_build_texts(gg_strbuf *b, const gg_exec_record *r, size_t max, size_t max_nodes, size_t max_node_bytes,
                            gg_history_texts *t) {
    t->args = tb_text_value(b, r->arguments, r->arguments_text, max);
    t->result = tb_text_value(b, r->result, r->result_text, max);
    t->nodes = SIZE_MAX;
    if (r->nodes_text) {
        t->nodes = b->len;
        gg_strbuf_append(b, r->nodes_text, strlen(r->nodes_text) + 1);
    } else if (r->node_history || r->n_nodes) {
        t->nodes = b->len;
        node_bound nb = {max_nodes, max_node_bytes, 0, 0, 0};
        tb_nodes(b, r, max, &nb);
        gg_strbuf_putc(b, '\0');
    }
}
