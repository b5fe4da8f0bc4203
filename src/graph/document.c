/* document.c — a graph's source text as plain JSON, read with the loader's own YAML reader
 * and scalar rules, for viewers that draw the graph (the web console) without a YAML
 * parser of their own. */
#include "graph/internal.h"

/* JSON values a document may expand to. The parser already bounds what aliases add; this
 * bounds the copy itself (~100 bytes a value; real graphs hold a few thousand), so a large
 * document is refused here before anything is built. */
#define DOC_MAX_VALUES 100000
#define DOC_MAX_DEPTH 200 /* the loader's nesting bound, also through aliases */

/* Counts values with aliases expanded; stops as soon as the budget or the depth runs out
 * (so a self-referencing alias ends too). */
static bool within(const ynode *n, long *budget, int depth) {
    if (--*budget < 0 || depth > DOC_MAX_DEPTH) return false;
    size_t items = n->kind == YN_MAP ? 2 * n->count : n->kind == YN_SEQ ? n->count : 0;
    for (size_t i = 0; i < items; i++)
        if (!within(n->items[i], budget, depth + 1)) return false;
    return true;
}

json_t *gg_graph_document_json(const char *src, size_t len, gg_error *err) {
    ydoc d = {0};
    if (!gg_yaml_doc_parse(&d, src, len, 0, err)) return NULL; /* the loader's alias bound */
    long budget = DOC_MAX_VALUES;
    json_t *j = NULL;
    if (!d.root) j = json_null();
    else if (!within(d.root, &budget, 0))
        gg_error_set(err, "too_large", "the document expands to more than %d values or %d levels",
                      DOC_MAX_VALUES, DOC_MAX_DEPTH);
    else j = gg_yaml_to_json(d.root, err);
    gg_yaml_doc_free(&d);
    return j;
}
