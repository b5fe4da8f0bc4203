/* graph_fuzz.c — libFuzzer target for the graph loader: YAML → positioned tree →
 * validation → compilation (JSONata, JSON Logic, schemas), every error as a diagnostic.
 * The graph is not run (downstream servers would be started). Hostile documents (alias
 * bombs, deep nesting, huge keys) must end in diagnostics, never a crash, leak or hang. */
#include <stdbool.h>

#include "fuzz_input.h"
#include "graph/graph.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 64 * 1024) return 0;
    fuzz_input in;
    if (!fuzz_input_take(&in, data, size)) return 0;
    gg_graph_options o = {.max_source_bytes = 64 * 1024};
    gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
    gg_graph *g = gg_graph_load_string(in.buf, in.len, "fuzz.yaml", &o, &d);
    for (size_t i = 0; i < d.count; i++) {
        char line[512];
        gg_graph_diag_format(&d.items[i], line, sizeof line);
        json_decref(gg_graph_diag_json(&d.items[i]));
    }
    if (g) {
        json_t *info = gg_graph_server_info(g);
        char *tools = json_dumps(gg_graph_tools(g), JSON_COMPACT);
        free(tools);
        json_decref(info);
        gg_graph_unref(g);
    }
    gg_graph_diags_free(&d);
    free(in.buf);
    return 0;
}
