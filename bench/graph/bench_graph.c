/* bench_graph — graph engine throughput: the switch and loop examples executed in-process
 * (runs/s, µs per node) and, in the same invocation, the same tools called on mcpgraph
 * 0.1.23 (the TypeScript original) over stdio. Both run mcpgraph's packaged examples (the
 * older `target` form) when its package is given, else graphgate runs the shared ones.
 * Prints one line per measurement and the ratio.
 *
 * usage: bench_graph SHARED_EXAMPLES_DIR [MCPGRAPH_PKG_DIR NODE_BIN] [seconds per case]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "mcp/mcp.h"

typedef struct bench_case {
    const char *file, *tool, *args;
} bench_case;

static const bench_case cases[] = {
    {"switch_example.yaml", "test_switch", "{\"value\": 15}"},
    {"switch_example.yaml", "test_switch", "{\"value\": -3}"},
    {"loop_example.yaml", "sum_to_n", "{\"n\": 5}"},
    {"loop_example.yaml", "sum_to_n", "{\"n\": 50}"},
};

/* In-process: repeat the run for `secs`; returns runs/s and µs per node. */
static double bench_inproc(const char *dir, const bench_case *c, double secs, bool history, double *us_per_node,
                           char **out) {
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, c->file) >= sizeof path) return -1;
    gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
    gg_graph *g = gg_graph_load_file(path, NULL, &d);
    gg_graph_diags_free(&d);
    if (!g) return -1;
    json_t *args = json_loads(c->args, 0, NULL);
    gg_graph_run_options ro = {.no_history = !history, .record_inputs = history};
    long runs = 0, nodes = 0;
    double t0 = gg_now_ms(), now = t0;
    *out = NULL;
    while (now - t0 < secs * 1000) {
        for (int i = 0; i < 100; i++) {
            gg_graph_result r = GG_GRAPH_RESULT_INIT;
            if (!gg_graph_execute(g, c->tool, args, &ro, &r)) {
                fprintf(stderr, "run failed: %s\n", r.error.message);
                gg_graph_result_clear(&r);
                json_decref(args);
                gg_graph_unref(g);
                return -1;
            }
            if (!*out) *out = json_dumps(r.output, JSON_COMPACT | JSON_ENCODE_ANY);
            nodes += r.node_executions;
            runs++;
            gg_graph_result_clear(&r);
        }
        now = gg_now_ms();
    }
    double el = now - t0;
    *us_per_node = el * 1000.0 / (double)nodes;
    json_decref(args);
    gg_graph_unref(g);
    return runs / (el / 1000.0);
}

/* mcpgraph over stdio: sequential tools/call (it serves one execution at a time). */
static double bench_mcpgraph(const char *pkg, const char *node, const bench_case *c, double secs, char **out) {
    char main_js[4096], graph[4096];
    snprintf(main_js, sizeof main_js, "%s/dist/main.js", pkg);
    snprintf(graph, sizeof graph, "%s/examples/%s", pkg, c->file);
    const char *argv[] = {main_js, "-g", graph, NULL};
    mcp_server_config cfg = {.transport = MCP_TRANSPORT_STDIO, .name = "mcpgraph", .command = node, .args = argv,
                             .timeout_ms = 30000};
    gg_error e = GG_ERROR_INIT;
    mcp_client *cl = mcp_client_new(&cfg, NULL, &e);
    if (!cl) return -1;
    json_t *args = json_loads(c->args, 0, NULL);
    *out = NULL;
    /* warm-up: starts the child, JIT */
    for (int i = 0; i < 20; i++) {
        json_t *r = mcp_client_call_tool(cl, c->tool, args, 0, NULL, &e);
        if (!r) {
            fprintf(stderr, "mcpgraph call failed: %s\n", e.message);
            gg_error_clear(&e);
            json_decref(args);
            mcp_client_free(cl);
            return -1;
        }
        if (!*out) *out = json_dumps(json_object_get(r, "structuredContent"), JSON_COMPACT | JSON_ENCODE_ANY);
        json_decref(r);
    }
    long runs = 0;
    double t0 = gg_now_ms(), now = t0;
    while (now - t0 < secs * 1000) {
        json_t *r = mcp_client_call_tool(cl, c->tool, args, 0, NULL, &e);
        if (!r) break;
        json_decref(r);
        runs++;
        now = gg_now_ms();
    }
    json_decref(args);
    mcp_client_free(cl);
    return runs / ((now - t0) / 1000.0);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_graph SHARED_EXAMPLES_DIR [MCPGRAPH_PKG_DIR NODE_BIN] [seconds]\n");
        return 2;
    }
    gg_log_configure(GG_LOG_ERROR, NULL);
    const char *dir = argv[1];
    const char *pkg = argc > 3 && *argv[2] ? argv[2] : NULL, *node = argc > 3 && *argv[3] ? argv[3] : NULL;
    if (!node) pkg = NULL;
    double secs = argc > 4 ? atof(argv[4]) : 1.0;
    int rc = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const bench_case *c = &cases[i];
        double us = 0;
        char *o1 = NULL, *o2 = NULL;
        /* the same YAML for both: mcpgraph's packaged examples (older `target` form) */
        char pkg_examples[4096];
        if (pkg && (size_t)snprintf(pkg_examples, sizeof pkg_examples, "%s/examples", pkg) >= sizeof pkg_examples) return 2;
        double ours = bench_inproc(pkg ? pkg_examples : dir, c, secs, false, &us, &o1);
        printf("%-22s %-12s %-14s graphgate in-process: %10.0f runs/s  %6.2f us/node  -> %s\n", c->file, c->tool, c->args,
               ours, us, o1 ? o1 : "?");
        char *oh = NULL;
        double us_h = 0, hist = bench_inproc(pkg ? pkg_examples : dir, c, secs / 2, true, &us_h, &oh);
        printf("%-22s %-12s %-14s   with history+inputs: %8.0f runs/s  %6.2f us/node\n", c->file, c->tool, c->args, hist,
               us_h);
        free(oh);
        if (ours < 0) rc = 1;
        if (pkg) {
            double ref = bench_mcpgraph(pkg, node, c, secs, &o2);
            printf("%-22s %-12s %-14s mcpgraph 0.1.23 stdio: %9.0f runs/s                  -> %s\n", c->file, c->tool,
                   c->args, ref, o2 ? o2 : "?");
            if (ref > 0 && ours > 0) printf("  ratio: %.0fx\n", ours / ref);
            if (o1 && o2 && strcmp(o1, o2) != 0) printf("  RESULTS DIFFER\n"), rc = 1;
        }
        free(o1);
        free(o2);
    }
    return rc;
}
