/* cmd_run.c — `graphgate run FILE TOOL [--args JSON] [--trace[=compact]]`: execute one tool of
 * a graph file locally (every downstream server allowed), print the result JSON on stdout.
 * The arguments and the result are checked against the tool's schemas exactly as the
 * gateway's tools/call checks them (mcp_tool_check_*), so a run that passes here passes there;
 * --trace writes each node's record as a JSON line on stderr, --trace=compact a timeline. */
#include "cli/cli.h"
#include "gateway/gateway.h"
#include "graph/graph.h"
#include "jsonata/jsonata.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The run's cancel flag, set by SIGINT/SIGTERM so downstream children are stopped cleanly.
 * A signal handler can only reach it through a static. */
static atomic_int run_cancelled;

static void on_signal(int sig) {
    (void)sig;
    run_cancelled = 1;
}

static void trace_record(void *user, const gg_graph_event *ev) {
    json_t *rec = json_pack("{s:i, s:s, s:s, s:I, s:I, s:f}", "executionIndex", ev->execution_index, "nodeId", ev->node_id,
                            "nodeType", ev->node_type, "startTime", (json_int_t)ev->start_ms, "endTime",
                            (json_int_t)ev->end_ms, "duration", ev->duration_ms);
    if (!rec) return;
    /* microsecond precision is plenty; avoids 17-digit noise in traces */
    json_object_set_new(rec, "duration", json_real(round(ev->duration_ms * 1000) / 1000));
    if (ev->input) json_object_set(rec, "input", ev->input);
    /* no output (undefined, or a failed node) leaves the key out: undefined is not null */
    if (ev->output) json_object_set(rec, "output", ev->output);
    if (ev->error)
        json_object_set_new(rec, "error", json_pack("{s:s, s:s}", "code", ev->error->code, "message",
                                                    ev->error->message ? ev->error->message : ""));
    char *s = jsonata_dump(rec, 0);
    if (s) fprintf(stderr, "%s\n", s);
    free(s);
    json_decref(rec);
}

/* The tool's inputSchema or outputSchema compiled (NULL when it declares none, or when the
 * tool is unknown: the run then says so). The loader compiled it already, so this succeeds. */
static mcp_schema *tool_schema(gg_graph *g, const char *tool, const char *key) {
    json_t *s = json_object_get(gg_graph_tool(g, tool), key);
    gg_error e = GG_ERROR_INIT;
    mcp_schema *ms = s ? mcp_schema_compile(s, &e) : NULL;
    gg_error_clear(&e);
    return ms;
}

/* The gateway's tools/call check of the arguments (an absent --args is {} there too). */
static bool args_ok(gg_graph *g, const char *tool, json_t *args) {
    mcp_schema *in = tool_schema(g, tool, "inputSchema");
    json_t *checked = args ? json_incref(args) : json_object();
    gg_error e = GG_ERROR_INIT;
    bool ok = mcp_tool_check_arguments(in, tool, checked, &e);
    if (!ok) fprintf(stderr, "graphgate run: %s\n", e.message);
    gg_error_clear(&e);
    json_decref(checked);
    mcp_schema_free(in);
    return ok;
}

/* The gateway's check of a result: an object output is its structuredContent. */
static bool output_ok(gg_graph *g, const char *tool, json_t *output) {
    mcp_schema *out = tool_schema(g, tool, "outputSchema");
    gg_error e = GG_ERROR_INIT;
    bool ok = mcp_tool_check_output(out, tool, json_is_object(output) ? output : NULL, &e);
    if (!ok) fprintf(stderr, "graphgate run: %s\n", e.message);
    gg_error_clear(&e);
    mcp_schema_free(out);
    return ok;
}

static int usage(FILE *f) {
    fprintf(f, "usage: graphgate run FILE TOOL [--args JSON] [--trace[=compact]]\n");
    return f == stdout ? GG_EXIT_OK : GG_EXIT_USAGE;
}

int gg_cmd_run(int argc, char **argv) {
    const char *file = NULL, *tool = NULL, *args_text = NULL;
    bool trace = false, compact = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return usage(stdout);
        if (!strcmp(argv[i], "--trace")) trace = true;
        else if (!strcmp(argv[i], "--trace=compact")) compact = true;
        else if (!strcmp(argv[i], "--args") && i + 1 < argc) args_text = argv[++i];
        else if (!strncmp(argv[i], "--args=", 7)) args_text = argv[i] + 7;
        else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "graphgate run: unknown option '%s'\n", argv[i]);
            return usage(stderr);
        } else if (!file) file = argv[i];
        else if (!tool) tool = argv[i];
        else return usage(stderr);
    }
    if (!file || !tool) return usage(stderr);
    json_t *args = NULL;
    if (args_text) {
        json_error_t je;
        args = json_loads(args_text, 0, &je);
        if (!args || !json_is_object(args)) {
            fprintf(stderr, "graphgate run: --args must be a JSON object (%s)\n", args ? "not an object" : je.text);
            json_decref(args);
            return GG_EXIT_USAGE;
        }
    }
    mcp_client_policy local = {.allow_all = true};
    /* check off: no mcp node is checked, but proxy entries list their servers' tools */
    gg_graph_downstream live = {.mode = GG_CHECK_OFF};
    mcp_downstream *ds = mcp_downstream_new(); /* what the run's clients share */
    if (!ds) {
        json_decref(args);
        fprintf(stderr, "graphgate run: out of memory\n");
        return GG_EXIT_FAIL;
    }
    gg_gateway_downstream_auth_install(ds); /* servers with `auth:` get their tokens here too */
    gg_graph_options opts = {.policy = &local, .clients = ds, .downstream = &live};
    gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
    gg_graph *g = gg_graph_load_file(file, &opts, &d);
    for (size_t k = 0; k < d.count; k++) {
        char buf[2048];
        gg_graph_diag_format(&d.items[k], buf, sizeof buf);
        fprintf(stderr, "%s\n", buf);
    }
    gg_graph_diags_free(&d);
    if (!g || !args_ok(g, tool, args)) {
        json_decref(args);
        gg_graph_unref(g);
        mcp_downstream_free(ds);
        return GG_EXIT_USAGE;
    }
    struct sigaction sa = {0}, old_int, old_term;
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    gg_graph_hooks hooks = {NULL, trace_record, trace_record, NULL};
    /* compact: the timeline from the run's history once it ended */
    gg_graph_run_options ro = {trace ? &hooks : NULL, &run_cancelled, trace, !compact};
    gg_graph_result r = GG_GRAPH_RESULT_INIT;
    int rc = GG_EXIT_OK;
    bool ok = gg_graph_execute(g, tool, args, &ro, &r);
    if (compact) gg_cli_timeline_history(stderr, r.history, r.elapsed_ms);
    if (ok && !output_ok(g, tool, r.output)) {
        rc = GG_EXIT_FAIL;
    } else if (ok) {
        char *s = jsonata_dump(r.output, 0);
        printf("%s\n", s ? s : "null");
        free(s);
    } else {
        char *text = gg_graph_error_text(&r.error); /* an expression's error names its node */
        const char *msg = text ? text : r.error.code;
        if (r.failed_node && !r.error.path) fprintf(stderr, "graphgate run: node '%s': %s\n", r.failed_node, msg);
        else fprintf(stderr, "graphgate run: %s\n", msg);
        free(text);
        rc = !strcmp(r.error.code, "unknown_tool") ? GG_EXIT_USAGE : GG_EXIT_FAIL;
    }
    gg_graph_result_clear(&r);
    json_decref(args);
    gg_graph_unref(g);
    mcp_downstream_free(ds); /* after the graph: its clients held it */
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    return rc;
}
