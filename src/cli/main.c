/* main.c — graphgate's entry point: find the command, run it, return its exit code.
 * This is the only place the process exits. */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

/* Keep sorted by how often an operator types them; `graphgate --help` prints this order. */
static const gg_command commands[] = {
    {"serve", "run the gateway (public and internal HTTP listeners)", gg_cmd_serve},
    {"graph", "validate graph files; put, list, activate stored versions", gg_cmd_graph},
    {"run", "run one tool of a graph file locally", gg_cmd_run},
    {"eval", "evaluate a JSONata expression or JSON Logic rule", gg_cmd_eval},
    {"migrate", "apply pending database migrations", gg_cmd_migrate},
    {"tenant", "create, list or delete tenants", gg_cmd_tenant},
    {"key", "create, list or revoke API keys", gg_cmd_key},
    {"secret", "set, list or delete a tenant's secrets; re-encrypt them under a new key", gg_cmd_secret},
    {"executions", "list recorded tool runs or show one with its node history", gg_cmd_executions},
    {"mcp", "list downstream MCP servers' tools: sync a graph file's, show a stored catalog", gg_cmd_mcp},
    {"specs", "load, check, list and show node specifications", gg_cmd_specs},
    {"conformance-client", "run one MCP conformance client scenario with the downstream client",
     gg_cmd_conformance_client},
    {"version", "print version information", gg_cmd_version},
};

static void usage(FILE *f) {
    fprintf(f, "usage: graphgate <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nRun 'graphgate <command> --help' for a command's options.\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return GG_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return GG_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0) return gg_cmd_version(1, argv + 1);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "graphgate: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return GG_EXIT_USAGE;
}
