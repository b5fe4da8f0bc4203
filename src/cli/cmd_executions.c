/* cmd_executions.c — the CLI equivalents of the gateway's admin REST that work on the store
 * directly: `graphgate executions list|show` and `graphgate graph put|list|activate`
 * (registered in cmd_graph.c's table). A running `serve` picks graph changes up within a
 * second (store generation counter). Every change is written to the audit log as "cli". */
#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auth/auth.h"
#include "graph/graph.h"
#include "store/store.h"

/* ------------------------------------------------------------------ shared */

typedef int (*store_fn)(gg_store *s, const gg_config *c, int n, char **rest);

/* Load the configuration (--db, --config), open the store, run fn with the remaining args
 * (rest[0] is the subcommand). */
static int with_store(int argc, char **argv, const char *cmd, void (*usage)(FILE *), store_fn fn) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return GG_EXIT_OK;
        }
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    if (!rest) return GG_EXIT_FAIL;
    gg_config c;
    int n = 0, rc = gg_cli_load_config(&c, argc, argv, cmd, rest, &n);
    if (rc != GG_EXIT_OK) {
        free(rest);
        return rc;
    }
    gg_store *s = gg_cli_open_store(&c, cmd, &rc);
    if (s) {
        rc = fn(s, &c, n, rest);
        gg_store_close(s);
    }
    free(rest);
    gg_config_free(&c);
    return rc;
}

static int fail(const char *cmd, gg_error *err) {
    char buf[1024];
    gg_error_format(err, buf, sizeof buf);
    fprintf(stderr, "graphgate %s: %s\n", cmd, buf);
    int rc = strcmp(err->code, "not_found") == 0 || strcmp(err->code, "invalid") == 0 ||
                     strncmp(err->code, "invalid_", 8) == 0
                 ? GG_EXIT_USAGE
                 : GG_EXIT_FAIL;
    gg_error_clear(err);
    return rc;
}

static void print_json(json_t *v) { gg_cli_print_json(stdout, v, 2); }

/* "--name value" or "--name=value" at rest[*i]; advances *i over a separate value. */
static const char *opt(int n, char **rest, int *i, const char *name) {
    size_t len = strlen(name);
    if (!strcmp(rest[*i], name) && *i + 1 < n) return rest[++*i];
    if (!strncmp(rest[*i], name, len) && rest[*i][len] == '=') return rest[*i] + len + 1;
    return NULL;
}

/* A NULL-terminated view of a config list (the strings stay the config's). */
static const char **strv(const gg_strlist *l) {
    const char **v = calloc(l->n + 1, sizeof *v);
    for (size_t i = 0; v && i < l->n; i++) v[i] = l->items[i];
    return v;
}

/* Validate a source the way `serve` will load it for tenant (same downstream policy). */
static bool validate_source(const gg_config *c, const char *tenant, const char *name, const char *src, size_t len) {
    const char **cmds = strv(&c->policy_stdio_commands), **hosts = strv(&c->policy_http_hosts);
    const char **cg = strv(&c->policy_tenant_stdio_commands), **hg = strv(&c->policy_tenant_http_hosts);
    mcp_client_policy policy = {false, cmds, hosts, true};
    policy.cwd_root = c->policy_stdio_cwd_root;
    gg_error err = GG_ERROR_INIT;
    mcp_policy_set *ps = cmds && hosts && cg && hg ? mcp_policy_set_new(&policy, cg, hg, &err) : NULL;
    bool ok = false;
    if (!ps) {
        fprintf(stderr, "graphgate: %s\n", err.message ? err.message : "out of memory");
    } else {
        gg_graph_options o = {mcp_policy_set_get(ps, tenant), 0, 0};
        gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
        gg_graph *g = gg_graph_load_string(src, len, name, &o, &d);
        for (size_t i = 0; i < d.count; i++) {
            char buf[2048];
            gg_graph_diag_format(&d.items[i], buf, sizeof buf);
            fprintf(stderr, "%s\n", buf);
        }
        ok = g != NULL;
        gg_graph_unref(g);
        gg_graph_diags_free(&d);
        mcp_policy_set_free(ps);
    }
    gg_error_clear(&err);
    free(cmds);
    free(hosts);
    free(cg);
    free(hg);
    return ok;
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) return NULL;
    gg_strbuf b = GG_STRBUF_INIT;
    char chunk[8192];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0 && b.len < (16u << 20)) gg_strbuf_append(&b, chunk, n);
    bool err = ferror(f);
    if (f != stdin) fclose(f);
    if (err || b.oom) {
        gg_strbuf_free(&b);
        return NULL;
    }
    *len = b.len;
    return gg_strbuf_take(&b);
}

/* ------------------------------------------------------------------ graph put|list|activate */

static void graph_put_usage(FILE *f) {
    fprintf(f, "usage: graphgate graph put TENANT GRAPH FILE|- [--db PATH] [--config FILE]\n\n"
               "Validate the graph (every error with its line:col), store it as a new immutable version\n"
               "of TENANT/GRAPH and make that version active. A running serve switches within a second;\n"
               "runs in flight finish on their version.\n");
}

static int graph_put_run(gg_store *s, const gg_config *c, int n, char **rest) {
    if (n != 4) {
        graph_put_usage(stderr);
        return GG_EXIT_USAGE;
    }
    const char *tenant = rest[1], *graph = rest[2], *file = rest[3];
    gg_error err = GG_ERROR_INIT;
    if (!gg_auth_valid_name(graph, "graph", &err)) return fail("graph put", &err);
    size_t len = 0;
    char *src = read_file(file, &len);
    if (!src) {
        fprintf(stderr, "graphgate graph put: cannot read %s\n", file);
        return GG_EXIT_USAGE;
    }
    if (!validate_source(c, tenant, file, src, len)) {
        fprintf(stderr, "graphgate graph put: %s is invalid; nothing stored\n", file);
        free(src);
        return GG_EXIT_USAGE;
    }
    const char *dot = strrchr(file, '.');
    const char *format = dot && !strcmp(dot, ".json") ? "json" : "yaml";
    int version = 0;
    bool ok = gg_store_graph_put(s, tenant, graph, src, len, format, "cli", &version, &err);
    free(src);
    if (!ok) return fail("graph put", &err);
    json_t *d = json_pack("{s:i,s:I}", "version", version, "bytes", (json_int_t)len);
    gg_store_audit_append(s, "cli", tenant, "graph.put", graph, d, NULL);
    json_decref(d);
    printf("graph %s/%s version %d stored and active\n", tenant, graph, version);
    return GG_EXIT_OK;
}

static void graph_list_usage(FILE *f) {
    fprintf(f, "usage: graphgate graph list TENANT [--json] [--db PATH] [--config FILE]\n"
               "       graphgate graph list TENANT GRAPH [--json]   (the graph's versions)\n");
}

static int graph_list_run(gg_store *s, const gg_config *c, int n, char **rest) {
    (void)c;
    bool as_json = n > 1 && !strcmp(rest[n - 1], "--json");
    int args = n - as_json;
    if (args != 2 && args != 3) {
        graph_list_usage(stderr);
        return GG_EXIT_USAGE;
    }
    gg_error err = GG_ERROR_INIT;
    if (args == 3) {
        json_t *v = gg_store_graph_versions(s, rest[1], rest[2], &err);
        if (!v) return fail("graph list", &err);
        if (as_json) print_json(v);
        else {
            printf("%-8s %-7s %-26s %-18s %s\n", "VERSION", "ACTIVE", "CREATED", "BY", "SHA256");
            size_t i;
            json_t *e;
            json_array_foreach(v, i, e) printf("%-8lld %-7s %-26s %-18s %.16s\n",
                                               (long long)json_integer_value(json_object_get(e, "version")),
                                               json_is_true(json_object_get(e, "active")) ? "yes" : "",
                                               json_string_value(json_object_get(e, "created_at")),
                                               json_string_value(json_object_get(e, "created_by")) ? json_string_value(json_object_get(e, "created_by")) : "",
                                               json_string_value(json_object_get(e, "content_hash")));
        }
        json_decref(v);
        return GG_EXIT_OK;
    }
    if (!gg_store_tenant_exists(s, rest[1], &err)) {
        if (!gg_error_is_set(&err)) gg_error_set(&err, "not_found", "no tenant %s", rest[1]);
        return fail("graph list", &err);
    }
    json_t *l = gg_store_graphs_list(s, rest[1], &err);
    if (!l) return fail("graph list", &err);
    if (as_json) print_json(l);
    else {
        printf("%-32s %7s %9s %-26s\n", "NAME", "ACTIVE", "VERSIONS", "UPDATED");
        size_t i;
        json_t *e;
        json_array_foreach(l, i, e) printf("%-32s %7lld %9lld %-26s\n", json_string_value(json_object_get(e, "name")),
                                           (long long)json_integer_value(json_object_get(e, "active_version")),
                                           (long long)json_integer_value(json_object_get(e, "versions")),
                                           json_string_value(json_object_get(e, "updated_at")));
    }
    json_decref(l);
    return GG_EXIT_OK;
}

static void graph_activate_usage(FILE *f) {
    fprintf(f, "usage: graphgate graph activate TENANT GRAPH VERSION [--db PATH] [--config FILE]\n\n"
               "Make an existing version active again (rollback); it is validated first.\n");
}

static int graph_activate_run(gg_store *s, const gg_config *c, int n, char **rest) {
    char *end;
    long v = n == 4 ? strtol(rest[3], &end, 10) : 0;
    if (n != 4 || *end || v < 1) {
        graph_activate_usage(stderr);
        return GG_EXIT_USAGE;
    }
    gg_error err = GG_ERROR_INIT;
    gg_graph_source src = {0};
    if (!gg_store_graph_get_version(s, rest[1], rest[2], (int)v, &src, &err)) return fail("graph activate", &err);
    char name[160];
    snprintf(name, sizeof name, "%s/%s@%ld", rest[1], rest[2], v);
    bool ok = validate_source(c, rest[1], name, src.source, src.source_len);
    gg_store_graph_source_clear(&src);
    if (!ok) {
        fprintf(stderr, "graphgate graph activate: version %ld no longer loads; not activated\n", v);
        return GG_EXIT_USAGE;
    }
    if (!gg_store_graph_activate(s, rest[1], rest[2], (int)v, &err)) return fail("graph activate", &err);
    json_t *d = json_pack("{s:i}", "version", (int)v);
    gg_store_audit_append(s, "cli", rest[1], "graph.activate", rest[2], d, NULL);
    json_decref(d);
    printf("graph %s/%s version %ld active\n", rest[1], rest[2], v);
    return GG_EXIT_OK;
}

int gg_cmd_graph_put(int argc, char **argv) { return with_store(argc, argv, "graph", graph_put_usage, graph_put_run); }
int gg_cmd_graph_list(int argc, char **argv) { return with_store(argc, argv, "graph", graph_list_usage, graph_list_run); }
int gg_cmd_graph_activate(int argc, char **argv) {
    return with_store(argc, argv, "graph", graph_activate_usage, graph_activate_run);
}

/* ------------------------------------------------------------------ executions */

static void executions_usage(FILE *f) {
    fprintf(f,
            "usage: graphgate executions list TENANT [--graph G] [--tool T] [--status S] [--since TIME]\n"
            "                                [--limit N] [--cursor C] [--json] [--db PATH] [--config FILE]\n"
            "       graphgate executions show ID [--tenant T] [--timeline] [--db PATH] [--config FILE]\n\n"
            "The recorded tool runs, newest first (status: running, succeeded, failed, cancelled,\n"
            "interrupted, invalid_input = refused by the tool's inputSchema; TIME:\n"
            "milliseconds since the epoch), and one run with its node history\n"
            "(JSON, with the run's trace_id; --timeline: each node's start offset, duration, status\n"
            "and a short input/output preview on the run's time axis).\n");
}

static int executions_run(gg_store *s, const gg_config *c, int n, char **rest) {
    (void)c;
    gg_error err = GG_ERROR_INIT;
    if (n >= 3 && !strcmp(rest[1], "show")) {
        const char *tenant = NULL;
        bool timeline = false;
        for (int i = 3; i < n; i++) {
            if (!strcmp(rest[i], "--timeline")) {
                timeline = true;
                continue;
            }
            const char *v = opt(n, rest, &i, "--tenant");
            if (!v) {
                executions_usage(stderr);
                return GG_EXIT_USAGE;
            }
            tenant = v;
        }
        json_t *e = gg_store_execution_get(s, tenant, rest[2], &err);
        if (!e) return fail("executions show", &err);
        if (timeline) gg_cli_timeline_execution(stdout, e);
        else print_json(e);
        json_decref(e);
        return GG_EXIT_OK;
    }
    if (n < 3 || strcmp(rest[1], "list") != 0) {
        executions_usage(stderr);
        return GG_EXIT_USAGE;
    }
    gg_exec_filter f = {0};
    bool as_json = false;
    for (int i = 3; i < n; i++) {
        const char *v;
        if (!strcmp(rest[i], "--json")) as_json = true;
        else if ((v = opt(n, rest, &i, "--graph"))) f.graph = v;
        else if ((v = opt(n, rest, &i, "--tool"))) f.tool = v;
        else if ((v = opt(n, rest, &i, "--status"))) f.status = v;
        else if ((v = opt(n, rest, &i, "--since"))) f.since_ms = atoll(v);
        else if ((v = opt(n, rest, &i, "--limit"))) f.limit = atoi(v);
        else if ((v = opt(n, rest, &i, "--cursor"))) f.cursor = v;
        else {
            fprintf(stderr, "graphgate executions: unknown option '%s'\n", rest[i]);
            return GG_EXIT_USAGE;
        }
    }
    json_t *l = gg_store_executions_list(s, rest[2], &f, &err);
    if (!l) return fail("executions list", &err);
    if (as_json) print_json(l);
    else {
        printf("%-32s %-20s %-4s %-20s %-13s %-26s %10s\n", "ID", "GRAPH", "VER", "TOOL", "STATUS", "STARTED", "MS");
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(l, "executions"), i, e)
            printf("%-32s %-20s %-4lld %-20s %-13s %-26s %10.3f\n", json_string_value(json_object_get(e, "id")),
                   json_string_value(json_object_get(e, "graph")),
                   (long long)json_integer_value(json_object_get(e, "version")),
                   json_string_value(json_object_get(e, "tool")), json_string_value(json_object_get(e, "status")),
                   json_string_value(json_object_get(e, "started_at")),
                   json_number_value(json_object_get(e, "duration_ms")));
        const char *next = json_string_value(json_object_get(l, "next_cursor"));
        if (next) printf("next page: --cursor %s\n", next);
    }
    json_decref(l);
    return GG_EXIT_OK;
}

/* `graphgate executions list|show`. */
int gg_cmd_executions(int argc, char **argv) {
    return with_store(argc, argv, "executions", executions_usage, executions_run);
}
