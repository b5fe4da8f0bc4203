/* cmd_mcp.c — `graphgate mcp sync|tools`: the tool catalogs of downstream MCP servers.
 * sync lists the servers of a graph file (as `graphgate run` would reach them: the
 * operator's own file, no policy), prints each catalog and, with --tenant, stores it for
 * that tenant; tools prints a stored catalog. */
#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "store/store.h"

static void usage(FILE *f) {
    fprintf(f, "usage: graphgate mcp sync FILE [--tenant T] [--json] [--db PATH] [--config FILE]\n"
               "       graphgate mcp tools SERVER --tenant T [--json] [--db PATH] [--config FILE]\n");
}

typedef struct sync_ctx {
    gg_store *store;   /* NULL: print only */
    const char *tenant;
    json_t *out;       /* server → {tools, tool_count, fetched_at_ms} */
    int failed;
    long long max_tenant_bytes; /* tenants.max_catalog_bytes */
} sync_ctx;

static bool fetched(void *user, const gg_graph_catalog *cat, gg_error *ferr) {
    (void)ferr; /* a refusal is counted in failed and printed, the listing goes on */
    sync_ctx *s = user;
    const char *server = cat->server;
    json_t *tools = cat->tools;
    long long fetched_ms = cat->fetched_ms;
    json_object_set_new(s->out, server, json_pack("{s:O,s:I,s:I}", "tools", tools, "tool_count",
                                                  (json_int_t)json_array_size(tools), "fetched_at_ms",
                                                  (json_int_t)fetched_ms));
    gg_error err = GG_ERROR_INIT;
    gg_catalog_put p = {s->tenant, cat->identity, server, tools, fetched_ms, s->max_tenant_bytes};
    if (s->store && gg_store_downstream_put(s->store, &p, &err) < 0) {
        fprintf(stderr, "graphgate mcp sync: storing %s: %s\n", server, err.message ? err.message : err.code);
        s->failed++;
    }
    gg_error_clear(&err);
    return true;
}

static void print_tools(const char *server, json_t *tools, bool header) {
    if (header) printf("# %s: %zu tool%s\n", server, json_array_size(tools), json_array_size(tools) == 1 ? "" : "s");
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        const char *d = json_string_value(json_object_get(t, "description"));
        int n = d ? (int)strcspn(d, "\n") : 0;
        printf("%s\t%.*s\n", json_string_value(json_object_get(t, "name")), n > 200 ? 200 : n, d ? d : "");
    }
}

static void print_json(json_t *v) { gg_cli_print_json(stdout, v, 2); }

static int mcp_sync(const gg_config *c, const char *file, gg_store *store, const char *tenant, bool json) {
    sync_ctx s = {store, tenant, json_object(), 0, (long long)c->tenant_max_catalog_bytes};
    gg_graph_downstream ds = {.mode = GG_CHECK_WARNING, .max_catalog_bytes = c->downstream_max_catalog_bytes,
                              .fetched = fetched, .user = &s};
    gg_graph_options o = {.downstream = &ds};
    gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
    gg_graph *g = gg_graph_load_file(file, &o, &d);
    for (size_t k = 0; k < d.count; k++) {
        char buf[2048];
        gg_graph_diag_format(&d.items[k], buf, sizeof buf);
        fprintf(stderr, "%s\n", buf);
    }
    if (json) print_json(s.out);
    else {
        const char *name;
        json_t *v;
        json_object_foreach(s.out, name, v) print_tools(name, json_object_get(v, "tools"), true);
    }
    int rc = !g ? GG_EXIT_USAGE : s.failed ? GG_EXIT_FAIL : GG_EXIT_OK;
    gg_graph_unref(g);
    gg_graph_diags_free(&d);
    json_decref(s.out);
    return rc;
}

static int mcp_tools(gg_store *store, const char *tenant, const char *server, bool json) {
    gg_error err = GG_ERROR_INIT;
    json_t *cat = gg_store_downstream_get(store, tenant, server, &err);
    if (!cat) {
        fprintf(stderr, "graphgate mcp tools: %s\n", err.message ? err.message : err.code);
        gg_error_clear(&err);
        return GG_EXIT_FAIL;
    }
    if (json) print_json(cat);
    else {
        printf("# %s: %lld tools, fetched at %s\n", server, (long long)json_integer_value(json_object_get(cat, "tool_count")),
               json_string_value(json_object_get(cat, "fetched_at")));
        print_tools(server, json_object_get(cat, "tools"), false);
    }
    json_decref(cat);
    return GG_EXIT_OK;
}

/* After the common options: SUB ARG [--tenant T] [--json]. */
static int run(const gg_config *c, int n, char **rest) {
    const char *sub = n > 1 ? rest[1] : NULL, *arg = NULL, *tenant = NULL;
    bool json = false;
    for (int i = 2; i < n; i++) {
        if (!strcmp(rest[i], "--json")) json = true;
        else if (!strcmp(rest[i], "--tenant") && i + 1 < n) tenant = rest[++i];
        else if (!strncmp(rest[i], "--tenant=", 9)) tenant = rest[i] + 9;
        else if (!arg && rest[i][0] != '-') arg = rest[i];
        else return usage(stderr), GG_EXIT_USAGE;
    }
    bool tools = sub && !strcmp(sub, "tools");
    if (!sub || !arg || (strcmp(sub, "sync") && !tools) || (tools && !tenant)) return usage(stderr), GG_EXIT_USAGE;
    int rc = GG_EXIT_OK;
    gg_store *s = tenant ? gg_cli_open_store(c, "mcp", &rc) : NULL;
    if (tenant && !s) return rc;
    rc = tools ? mcp_tools(s, tenant, arg, json) : mcp_sync(c, arg, s, tenant, json);
    if (s) gg_store_close(s);
    return rc;
}

int gg_cmd_mcp(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return usage(stdout), GG_EXIT_OK;
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    if (!rest) return GG_EXIT_FAIL;
    gg_config c;
    int n = 0, rc = gg_cli_load_config(&c, argc, argv, "mcp", rest, &n);
    if (rc == GG_EXIT_OK) {
        rc = run(&c, n, rest);
        gg_config_free(&c);
    }
    free(rest);
    return rc;
}
