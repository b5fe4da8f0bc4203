/* document.c — a graph's source text as plain JSON, read with the loader's own YAML reader
 * and scalar rules, for viewers that draw the graph (the web console) without a YAML
 * parser of their own. */
#include "graph/internal.h"

json_t *gg_graph_document_json(const char *src, size_t len, gg_error *err) {
    ydoc d = {0};
    if (!ydoc_parse(&d, src, len, err)) return NULL;
    json_t *j = d.root ? yn_to_json(d.root, err) : json_null();
    ydoc_free(&d);
    return j;
}
