/* cmd_specs.c — `graphgate specs load|check|list|show|search`: validate the node-spec
 * directory, load it into the store, and read the registry the way the tools serve it. */
#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "specs/specs.h"
#include "store/store.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: graphgate specs load [DIR] [--db PATH] [--config FILE]\n"
            "       graphgate specs check [DIR]\n"
            "       graphgate specs list [TYPE] [--json]\n"
            "       graphgate specs show TYPE SUBTYPE [--no-examples] [--no-schemas] [--versions]\n"
            "       graphgate specs search WORDS... [--type TYPE] [--limit N]\n"
            "\n"
            "load validates every specs/<TYPE>/<SUBTYPE>.yaml against schema/node-spec.schema.json\n"
            "and stores them in node_specs (a new row per new version) with the FTS5 search index;\n"
            "invalid files are reported as file:line:col and nothing is changed. check validates\n"
            "only. list, show and search read what the database holds, as the MCP tools serve it.\n"
            "DIR defaults to specs.dir from the configuration, else the installed specs.\n");
}

static void print_error(void *user, const gg_error *e) {
    (void)user;
    char buf[1024];
    gg_error_format(e, buf, sizeof buf);
    fprintf(stderr, "%s\n", buf);
}

static int fail(const char *what, gg_error *err) {
    char buf[1024];
    gg_error_format(err, buf, sizeof buf);
    fprintf(stderr, "graphgate specs %s: %s\n", what, buf);
    int rc = strcmp(err->code, "invalid_spec") == 0 || strcmp(err->code, "not_found") == 0 ? GG_EXIT_USAGE
                                                                                             : GG_EXIT_FAIL;
    gg_error_clear(err);
    return rc;
}

static bool find_dirs(const gg_config *cfg, const char *dir_arg, char *dir, size_t dsize, char *schema,
                      size_t ssize, gg_error *err) {
    char sdir[2048];
    if (!gg_config_find_data_dir(dir_arg ? dir_arg : cfg->specs_dir, "specs", dir, dsize, err)) return false;
    if (!gg_config_find_data_dir(NULL, "schema", sdir, sizeof sdir, err)) return false;
    if ((size_t)snprintf(schema, ssize, "%.2000s/node-spec.schema.json", sdir) >= ssize)
        return gg_error_set(err, "invalid", "schema path too long"), false;
    return true;
}

static void print_counts(specs_registry *r) {
    for (int t = 0; t < SPECS_NTYPES; t++) {
        size_t n = specs_registry_count_type(r, t);
        if (n) printf("  %-18s %zu\n", specs_node_types[t], n);
    }
}

/* load / check */
static int cmd_load(const gg_config *cfg, const char *dir_arg, bool store_it) {
    char dir[2048], schema[2048];
    gg_error err = GG_ERROR_INIT;
    if (!find_dirs(cfg, dir_arg, dir, sizeof dir, schema, sizeof schema, &err)) return fail("load", &err);
    gg_store *store = NULL;
    if (store_it) {
        int code = GG_EXIT_OK;
        store = gg_cli_open_store(cfg, "specs load", &code);
        if (!store) return code ? code : GG_EXIT_FAIL;
    }
    specs_registry *r = specs_registry_new(store);
    int rc = GG_EXIT_OK;
    if (!r) {
        gg_error_set(&err, "oom", "out of memory");
        rc = fail(store_it ? "load" : "check", &err);
    } else if (!specs_registry_load_dir(r, dir, schema, print_error, NULL, &err) ||
               (store_it && !specs_registry_persist(r, dir, &err))) {
        rc = fail(store_it ? "load" : "check", &err);
    } else {
        char sum[65];
        specs_registry_checksum(r, sum);
        printf("%s %zu node specs from %s (checksum %.16s)\n", store_it ? "loaded" : "valid:",
               specs_registry_count(r), dir, sum);
        print_counts(r);
    }
    specs_registry_free(r);
    gg_store_close(store);
    return rc;
}

/* A registry over what the database holds (list/show/search). */
static specs_registry *stored_registry(const gg_config *cfg, gg_store **store_out, int *code) {
    gg_store *store = gg_cli_open_store(cfg, "specs", code);
    if (!store) return NULL;
    gg_error err = GG_ERROR_INIT;
    json_t *specs = gg_store_specs_current(store, &err);
    specs_registry *r = specs ? specs_registry_new(store) : NULL;
    if (!r || !specs_registry_load_resolved(r, specs, "", &err)) {
        if (!gg_error_is_set(&err)) gg_error_set(&err, "oom", "out of memory");
        *code = fail("read", &err);
        specs_registry_free(r);
        r = NULL;
    } else if (json_array_size(specs) == 0) {
        fprintf(stderr, "graphgate specs: the database holds no node specs; run 'graphgate specs load'\n");
    }
    json_decref(specs);
    if (!r) gg_store_close(store);
    else *store_out = store;
    return r;
}

static int print_call(specs_registry *r, const char *tool, json_t *args) {
    specs_output out = SPECS_OUTPUT_INIT;
    gg_error err = GG_ERROR_INIT;
    if (!specs_call(r, tool, args, &out, &err)) return fail(tool, &err);
    int rc = GG_EXIT_OK;
    if (out.is_error) {
        /* the text part is escaped JSON string content; decode it through jansson */
        gg_strbuf q = GG_STRBUF_INIT;
        gg_strbuf_putc(&q, '"');
        gg_strbuf_append(&q, out.text.data, out.text.len);
        gg_strbuf_putc(&q, '"');
        json_t *s = json_loadb(q.data, q.len, JSON_DECODE_ANY, NULL);
        fprintf(stderr, "graphgate specs: %s\n", s ? json_string_value(s) : "error");
        json_decref(s);
        gg_strbuf_free(&q);
        rc = GG_EXIT_USAGE;
    } else {
        json_t *v = json_loadb(out.structured.data, out.structured.len, 0, NULL);
        gg_cli_print_json(stdout, v, 2);
        json_decref(v);
    }
    specs_output_free(&out);
    return rc;
}

static int cmd_list(specs_registry *r, int n, char **a) {
    const char *type = NULL;
    bool as_json = false;
    for (int i = 0; i < n; i++) {
        if (strcmp(a[i], "--json") == 0) as_json = true;
        else if (!type) type = a[i];
        else return usage(stderr), GG_EXIT_USAGE;
    }
    json_t *args = json_object();
    if (type) json_object_set_new(args, "type_filter", json_string(type));
    int rc;
    if (as_json) {
        rc = print_call(r, "get_node_types", args);
    } else {
        json_t *nodes = json_array();
        specs_output out = SPECS_OUTPUT_INIT;
        gg_error err = GG_ERROR_INIT;
        rc = GG_EXIT_OK;
        if (!specs_call(r, "get_node_types", args, &out, &err)) {
            rc = fail("list", &err);
        } else if (out.is_error) {
            specs_output_free(&out);
            rc = print_call(r, "get_node_types", args);
        } else {
            json_t *types = json_loadb(out.structured.data, out.structured.len, 0, NULL);
            const char *t;
            json_t *subs;
            printf("%-18s %-26s %-8s %s\n", "TYPE", "SUBTYPE", "VERSION", "DESCRIPTION");
            json_object_foreach(types, t, subs) {
                size_t i;
                json_t *s;
                json_array_foreach(subs, i, s) {
                    json_t *doc = specs_registry_get(r, t, json_string_value(s));
                    const char *d = json_string_value(json_object_get(doc, "description"));
                    printf("%-18s %-26s %-8s %.60s%s\n", t, json_string_value(s),
                           json_string_value(json_object_get(doc, "version")), d ? d : "",
                           d && strlen(d) > 60 ? "…" : "");
                    json_decref(doc);
                }
            }
            json_decref(types);
            specs_output_free(&out);
        }
        json_decref(nodes);
    }
    json_decref(args);
    return rc;
}

static int cmd_show(specs_registry *r, gg_store *store, int n, char **a) {
    const char *type = NULL, *sub = NULL;
    bool examples = true, schemas = true, versions = false;
    for (int i = 0; i < n; i++) {
        if (strcmp(a[i], "--no-examples") == 0) examples = false;
        else if (strcmp(a[i], "--no-schemas") == 0) schemas = false;
        else if (strcmp(a[i], "--versions") == 0) versions = true;
        else if (!type) type = a[i];
        else if (!sub) sub = a[i];
        else return usage(stderr), GG_EXIT_USAGE;
    }
    if (!type || !sub) return usage(stderr), GG_EXIT_USAGE;
    if (versions) {
        gg_error err = GG_ERROR_INIT;
        json_t *v = gg_store_specs_versions(store, type, sub, &err);
        if (!v) return fail("show", &err);
        gg_cli_print_json(stdout, v, 2);
        json_decref(v);
        return GG_EXIT_OK;
    }
    json_t *args = json_pack("{s:[{s:s, s:s}], s:b, s:b}", "nodes", "node_type", type, "subtype", sub,
                             "include_examples", examples, "include_schemas", schemas);
    int rc = print_call(r, "get_node_details", args);
    json_decref(args);
    return rc;
}

static int cmd_search(specs_registry *r, int n, char **a) {
    gg_strbuf q = GG_STRBUF_INIT;
    json_t *args = json_object();
    for (int i = 0; i < n; i++) {
        if (strcmp(a[i], "--type") == 0 && i + 1 < n) json_object_set_new(args, "type_filter", json_string(a[++i]));
        else if (strcmp(a[i], "--limit") == 0 && i + 1 < n) json_object_set_new(args, "limit", json_integer(atoi(a[++i])));
        else {
            if (q.len) gg_strbuf_putc(&q, ' ');
            gg_strbuf_puts(&q, a[i]);
        }
    }
    int rc;
    if (!q.len) {
        usage(stderr);
        rc = GG_EXIT_USAGE;
    } else {
        json_object_set_new(args, "query", json_string(q.data));
        rc = print_call(r, "search_nodes", args);
    }
    gg_strbuf_free(&q);
    json_decref(args);
    return rc;
}

/* `graphgate specs ...`; see usage. */
int gg_cmd_specs(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return GG_EXIT_OK;
        }
    gg_config cfg;
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    if (!rest) return GG_EXIT_FAIL;
    int n = 0;
    int rc = gg_cli_load_config(&cfg, argc, argv, "specs", rest, &n);
    if (rc != GG_EXIT_OK) {
        free(rest);
        return rc;
    }
    char **a = rest;
    if (n > 0 && strcmp(a[0], argv[0]) == 0) a++, n--;
    if (n < 1) {
        usage(stderr);
        rc = GG_EXIT_USAGE;
    } else if (strcmp(a[0], "load") == 0 || strcmp(a[0], "check") == 0) {
        if (n > 2) usage(stderr), rc = GG_EXIT_USAGE;
        else rc = cmd_load(&cfg, n == 2 ? a[1] : NULL, strcmp(a[0], "load") == 0);
    } else if (strcmp(a[0], "list") == 0 || strcmp(a[0], "show") == 0 || strcmp(a[0], "search") == 0) {
        gg_store *store = NULL;
        specs_registry *r = stored_registry(&cfg, &store, &rc);
        if (r) {
            if (a[0][1] == 'i') rc = cmd_list(r, n - 1, a + 1);
            else if (a[0][1] == 'h') rc = cmd_show(r, store, n - 1, a + 1);
            else rc = cmd_search(r, n - 1, a + 1);
            specs_registry_free(r);
            gg_store_close(store);
        } else if (rc == GG_EXIT_OK) {
            rc = GG_EXIT_FAIL;
        }
    } else {
        fprintf(stderr, "graphgate specs: unknown subcommand '%s'\n", a[0]);
        usage(stderr);
        rc = GG_EXIT_USAGE;
    }
    free(rest);
    gg_config_free(&cfg);
    return rc;
}
