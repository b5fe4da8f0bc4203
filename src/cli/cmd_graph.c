/* cmd_graph.c — `graphgate graph <subcommand>`: work with graph files. `validate` is local;
 * more subcommands (put, list, activate) join the table below. */
#include "cli/cli.h"
#include "graph/graph.h"

#include <stdio.h>
#include <string.h>

/* graph validate FILE... [--json]: every error and warning with its position; exit 2 when
 * any file is invalid. Downstream servers are contacted only with --downstream: each mcp
 * node is then checked against its server's tool catalog (an unreachable server is a
 * warning; without the flag the check is skipped). */
static int graph_validate(int argc, char **argv) {
    bool json = false;
    gg_graph_downstream ds = {.mode = GG_CHECK_ERROR};
    gg_graph_options o = {0};
    int files = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = true;
        else if (!strcmp(argv[i], "--downstream")) o.downstream = &ds;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: graphgate graph validate [--json] [--downstream] FILE...\n");
            return GG_EXIT_OK;
        }
    }
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-' && argv[i][1]) continue;
        files++;
        gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
        gg_graph *g = gg_graph_load_file(argv[i], &o, &d);
        for (size_t k = 0; k < d.count; k++) {
            if (json) {
                json_t *o = gg_graph_diag_json(&d.items[k]);
                gg_cli_print_json(stdout, o, 0);
                json_decref(o);
            } else {
                char buf[2048];
                gg_graph_diag_format(&d.items[k], buf, sizeof buf);
                fprintf(stderr, "%s\n", buf);
            }
        }
        if (!g) bad++;
        if (!json) {
            size_t nr = g ? json_array_size(gg_graph_resources(g)) : 0, np = g ? json_array_size(gg_graph_prompts(g)) : 0,
                   nt = g ? json_array_size(gg_graph_resource_templates(g)) : 0;
            if (g && (nr || nt || np))
                printf("%s: ok (%zu tool%s, %zu resource%s, %zu resource template%s, %zu prompt%s, %zu warning%s)\n", argv[i],
                       gg_graph_tool_count(g), gg_graph_tool_count(g) == 1 ? "" : "s", nr, nr == 1 ? "" : "s", nt,
                       nt == 1 ? "" : "s", np, np == 1 ? "" : "s", d.warnings, d.warnings == 1 ? "" : "s");
            else if (g) printf("%s: ok (%zu tool%s, %zu warning%s)\n", argv[i], gg_graph_tool_count(g),
                          gg_graph_tool_count(g) == 1 ? "" : "s", d.warnings, d.warnings == 1 ? "" : "s");
            else printf("%s: invalid (%zu error%s, %zu warning%s)\n", argv[i], d.errors, d.errors == 1 ? "" : "s",
                        d.warnings, d.warnings == 1 ? "" : "s");
        }
        gg_graph_unref(g);
        gg_graph_diags_free(&d);
    }
    if (!files) {
        fprintf(stderr, "usage: graphgate graph validate [--json] [--downstream] FILE...\n");
        return GG_EXIT_USAGE;
    }
    return bad ? GG_EXIT_USAGE : GG_EXIT_OK;
}

/* Subcommands; other subsystems add theirs here. */
static const gg_command graph_commands[] = {
    {"validate", "check graph files and print every error with its position", graph_validate},
    {"put", "store a graph file as a new active version (TENANT GRAPH FILE)", gg_cmd_graph_put},
    {"list", "list a tenant's graphs, or one graph's versions", gg_cmd_graph_list},
    {"activate", "make an existing version active again (rollback)", gg_cmd_graph_activate},
};

int gg_cmd_graph(int argc, char **argv) {
    size_t n = sizeof graph_commands / sizeof graph_commands[0];
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        FILE *f = argc < 2 ? stderr : stdout;
        fprintf(f, "usage: graphgate graph <subcommand> ...\n\nsubcommands:\n");
        for (size_t i = 0; i < n; i++) fprintf(f, "  %-10s %s\n", graph_commands[i].name, graph_commands[i].summary);
        return argc < 2 ? GG_EXIT_USAGE : GG_EXIT_OK;
    }
    for (size_t i = 0; i < n; i++)
        if (!strcmp(argv[1], graph_commands[i].name)) return graph_commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "graphgate graph: unknown subcommand '%s'\n", argv[1]);
    return GG_EXIT_USAGE;
}
