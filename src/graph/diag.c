/* diag.c — validation diagnostics: every problem found in a graph file, with its position. */
#include "graph/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

/* Append one diagnostic; allocation failures drop the diagnostic but still count it so the
 * graph is never accepted with a lost error. */
void gg_graph_diag_add(gg_graph_diags *d, gg_diag_severity sev, const char *code, const char *file, int line,
               int col, const char *tool, const char *node, const char *fmt, ...) {
    if (!d) return;
    if (sev == GG_DIAG_ERROR) d->errors++;
    else d->warnings++;
    if (d->count == d->cap) {
        size_t nc = d->cap ? d->cap * 2 : 16;
        gg_graph_diag *ni = realloc(d->items, nc * sizeof *ni);
        if (!ni) return;
        d->items = ni;
        d->cap = nc;
    }
    gg_graph_diag *g = &d->items[d->count];
    memset(g, 0, sizeof *g);
    g->severity = sev;
    snprintf(g->code, sizeof g->code, "%s", code);
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&g->message, fmt, ap) < 0) g->message = NULL;
    va_end(ap);
    g->file = dup_or_null(file);
    g->line = line;
    g->column = col;
    g->tool = dup_or_null(tool);
    g->node = dup_or_null(node);
    d->count++;
}

static void diag_clear(gg_graph_diag *x) {
    free(x->message);
    free(x->file);
    free(x->tool);
    free(x->node);
}

/* Drop the diagnostics from index start on that repeat an earlier one's code and position:
 * the hook nodes of a proxy entry are compiled once per proxied tool, reported once. */
void gg_graph_diag_dedupe_from(gg_graph_diags *d, size_t start) {
    size_t keep = start;
    for (size_t i = start; d && i < d->count; i++) {
        gg_graph_diag *x = &d->items[i];
        bool dup = false;
        for (size_t j = 0; j < keep && !dup; j++)
            dup = d->items[j].line == x->line && d->items[j].column == x->column && !strcmp(d->items[j].code, x->code) &&
                  !strcmp(d->items[j].file ? d->items[j].file : "", x->file ? x->file : "");
        if (!dup) {
            d->items[keep++] = *x;
            continue;
        }
        if (x->severity == GG_DIAG_ERROR) d->errors--;
        else d->warnings--;
        diag_clear(x);
    }
    if (d) d->count = keep;
}

/* Release every diagnostic and reset the list. */
void gg_graph_diags_free(gg_graph_diags *d) {
    if (!d) return;
    for (size_t i = 0; i < d->count; i++) diag_clear(&d->items[i]);
    free(d->items);
    memset(d, 0, sizeof *d);
}

/* "file:line:col: error: tool 't' node 'n': message" (parts that are unknown are left out). */
void gg_graph_diag_format(const gg_graph_diag *d, char *buf, size_t size) {
    if (!buf || !size) return;
    size_t n = 0;
    buf[0] = '\0';
#define PUT(...)                                                                \
    do {                                                                        \
        if (n < size) {                                                         \
            int w_ = snprintf(buf + n, size - n, __VA_ARGS__);                  \
            if (w_ > 0) n += (size_t)w_;                                        \
        }                                                                       \
    } while (0)
    if (d->file) PUT("%s:", d->file);
    if (d->line > 0) PUT("%d:%d:", d->line, d->column);
    if (n) PUT(" ");
    PUT("%s: ", d->severity == GG_DIAG_ERROR ? "error" : "warning");
    if (d->tool) PUT("tool '%s' ", d->tool);
    if (d->node) PUT("node '%s' ", d->node);
    if (d->tool || d->node) {
        if (n && n < size) {
            buf[n - 1] = ':';
            PUT(" ");
        }
    }
    PUT("%s [%s]", d->message ? d->message : "", d->code);
#undef PUT
}

/* The diagnostic as {severity, code, message, file, line, column, tool?, node?}. */
json_t *gg_graph_diag_json(const gg_graph_diag *d) {
    json_t *o = json_pack("{s:s, s:s, s:s, s:i, s:i}", "severity", d->severity == GG_DIAG_ERROR ? "error" : "warning",
                          "code", d->code, "message", d->message ? d->message : "", "line", d->line, "column",
                          d->column);
    if (!o) return NULL;
    if (d->file) json_object_set_new(o, "file", json_string(d->file));
    if (d->tool) json_object_set_new(o, "tool", json_string(d->tool));
    if (d->node) json_object_set_new(o, "node", json_string(d->node));
    return o;
}
