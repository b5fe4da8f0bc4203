/* Unit tests for the node-spec registry: loading and validation of the real specs and of
 * broken ones, the three tools, persistence + FTS5 search through a temporary store, and
 * the MCP provider. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "specs/internal.h"
#include "../store/pg_fixture.h"
#include "specs/specs.h"
#include "store/store.h"
#include "../check_main.h"

static char specs_dir[2048], schema_path[2048], migrations_dir[2048];
static char tmp_root[256];

static void setup_paths(void) {
    const char *src = getenv("GG_SRCDIR"); /* set by make check; else run from build/ */
    if (!src) src = "..";
    snprintf(specs_dir, sizeof specs_dir, "%s/specs", src);
    snprintf(schema_path, sizeof schema_path, "%s/schema/node-spec.schema.json", src);
    snprintf(migrations_dir, sizeof migrations_dir, "%s/migrations", src);
}

static specs_registry *load_real(gg_store *store) {
    specs_registry *r = specs_registry_new(store);
    ck_assert_ptr_nonnull(r);
    gg_error err = GG_ERROR_INIT;
    bool ok = specs_registry_load_dir(r, specs_dir, schema_path, NULL, NULL, &err);
    if (!ok) {
        char buf[1024];
        gg_error_format(&err, buf, sizeof buf);
        ck_abort_msg("load failed: %s", buf);
    }
    return r;
}

/* Run a tool; returns the structuredContent (or the text for errors) parsed. */
static json_t *call(specs_registry *r, const char *tool, const char *args_json, bool *is_error) {
    json_t *args = args_json ? json_loads(args_json, 0, NULL) : NULL;
    specs_output out = SPECS_OUTPUT_INIT;
    gg_error err = GG_ERROR_INIT;
    ck_assert_msg(specs_call(r, tool, args, &out, &err), "specs_call failed: %s", err.message);
    json_decref(args);
    gg_strbuf full = GG_STRBUF_INIT;
    ck_assert(specs_output_serialize(&out, "\"_x\":1", &full));
    json_error_t je;
    json_t *res = json_loadb(full.data, full.len, 0, &je);
    ck_assert_msg(res != NULL, "result is not JSON: %s", je.text);
    *is_error = json_is_true(json_object_get(res, "isError"));
    json_t *text = json_object_get(json_array_get(json_object_get(res, "content"), 0), "text");
    ck_assert(json_is_string(text));
    json_t *v;
    if (*is_error) {
        v = json_incref(text);
    } else {
        v = json_incref(json_object_get(res, "structuredContent"));
        /* the text block carries the same JSON */
        json_t *t = json_loads(json_string_value(text), 0, NULL);
        ck_assert(json_equal(t, v));
        json_decref(t);
    }
    json_decref(res);
    gg_strbuf_free(&full);
    specs_output_free(&out);
    return v;
}

static gg_store *temp_store(void) {
    snprintf(tmp_root, sizeof tmp_root, "/tmp/gg-specs-test.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmp_root));
    char path[512];
    snprintf(path, sizeof path, "%s/gg.db", tmp_root);
    pg_setup(tmp_root); /* PostgreSQL under tests/store/postgres.sh */
    gg_store_options o = {.path = path, .url = pg_store_url()};
    gg_error err = GG_ERROR_INIT;
    gg_store *s = gg_store_open(&o, &err);
    ck_assert_msg(s != NULL, "store: %s", err.message);
    ck_assert_msg(gg_store_migrate(s, migrations_dir, NULL, &err), "migrate: %s", err.message);
    return s;
}

static void rm_tree(const char *dir) {
    if (dir == tmp_root) pg_teardown();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* ---- the real specs ------------------------------------------------------------------- */

START_TEST(real_specs_load) {
    specs_registry *r = load_real(NULL);
    size_t eight = 0;
    for (int t = 0; t < SPECS_NTYPES; t++) {
        ck_assert_msg(specs_registry_count_type(r, t) >= 1, "no spec of type %s", specs_node_types[t]);
        if (strcmp(specs_node_types[t], "GRAPH") != 0) eight += specs_registry_count_type(r, t);
    }
    ck_assert_uint_ge(eight, 50);
    ck_assert_uint_eq(specs_registry_count_type(r, specs_type_index("GRAPH")), 9);
    /* every type/subtype the design document lists */
    static const char *const seed[] = {
        "TRIGGER.MANUAL", "TRIGGER.WEBHOOK", "TRIGGER.CRON", "TRIGGER.GITHUB", "TRIGGER.SLACK", "TRIGGER.EMAIL",
        "AI_AGENT.OPENAI_CHATGPT", "AI_AGENT.ANTHROPIC_CLAUDE", "AI_AGENT.GOOGLE_GEMINI",
        "ACTION.HTTP_REQUEST", "ACTION.DATA_TRANSFORMATION",
        "EXTERNAL_ACTION.SLACK", "EXTERNAL_ACTION.GITHUB", "EXTERNAL_ACTION.NOTION", "EXTERNAL_ACTION.GOOGLE_CALENDAR",
        "EXTERNAL_ACTION.FIRECRAWL", "EXTERNAL_ACTION.DISCORD_ACTION", "EXTERNAL_ACTION.TELEGRAM_ACTION",
        "FLOW.IF", "FLOW.LOOP", "FLOW.MERGE", "FLOW.FILTER", "FLOW.SORT", "FLOW.WAIT", "FLOW.DELAY",
        "HUMAN_IN_THE_LOOP.SLACK_INTERACTION", "HUMAN_IN_THE_LOOP.GMAIL_INTERACTION",
        "HUMAN_IN_THE_LOOP.OUTLOOK_INTERACTION", "HUMAN_IN_THE_LOOP.DISCORD_INTERACTION",
        "HUMAN_IN_THE_LOOP.TELEGRAM_INTERACTION", "HUMAN_IN_THE_LOOP.MANUAL_REVIEW",
        "TOOL.NOTION_MCP_TOOL", "TOOL.GOOGLE_CALENDAR_MCP_TOOL", "TOOL.SLACK_MCP_TOOL", "TOOL.FIRECRAWL_MCP_TOOL",
        "TOOL.DISCORD_MCP_TOOL", "MEMORY.VECTOR_DATABASE", "MEMORY.CONVERSATION_BUFFER", "MEMORY.KEY_VALUE_STORE",
        "GRAPH.ENTRY", "GRAPH.MCP", "GRAPH.TRANSFORM", "GRAPH.SWITCH", "GRAPH.EXIT", "GRAPH.ELICIT", "GRAPH.SAMPLE",
        "GRAPH.ROOTS", "GRAPH.ASK"};
    for (size_t i = 0; i < sizeof seed / sizeof seed[0]; i++) {
        char t[64];
        snprintf(t, sizeof t, "%s", seed[i]);
        char *dot = strchr(t, '.');
        *dot = '\0';
        json_t *doc = specs_registry_get(r, t, dot + 1);
        ck_assert_msg(doc != NULL, "missing %s", seed[i]);
        /* shared configurations are resolved into the spec */
        json_t *ex = json_object_get(doc, "examples");
        ck_assert_msg(json_array_size(ex) >= 1, "%s has no example", seed[i]);
        json_decref(doc);
    }
    json_t *http = specs_registry_get(r, "ACTION", "HTTP_REQUEST");
    json_t *timeout = json_object_get(json_object_get(http, "configurations"), "timeout");
    ck_assert_ptr_nonnull(timeout);
    ck_assert_int_eq(json_integer_value(json_object_get(timeout, "default")), 30);
    json_decref(http);
    json_t *claude = specs_registry_get(r, "AI_AGENT", "ANTHROPIC_CLAUDE");
    timeout = json_object_get(json_object_get(claude, "configurations"), "timeout");
    ck_assert_int_eq(json_integer_value(json_object_get(timeout, "default")), 180); /* override */
    json_decref(claude);
    /* GRAPH documents every node type a graph may use (src/graph/load.c), ask with its
     * requests; every other spec says it is the workflow catalog's */
    static const char *const graph_types[] = {"ENTRY", "MCP", "TRANSFORM", "SWITCH", "EXIT",
                                              "ELICIT", "SAMPLE", "ROOTS", "ASK"};
    for (size_t i = 0; i < sizeof graph_types / sizeof graph_types[0]; i++) {
        json_t *doc = specs_registry_get(r, "GRAPH", graph_types[i]);
        ck_assert_msg(doc != NULL, "no GRAPH spec for node type %s", graph_types[i]);
        ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(doc, "description")), "graphgate graph node"));
        json_decref(doc);
    }
    json_t *ask = specs_registry_get(r, "GRAPH", "ASK");
    json_t *cfg = json_object_get(ask, "configurations");
    ck_assert_int_eq(json_object_size(cfg), 3);
    ck_assert(json_is_true(json_object_get(json_object_get(cfg, "requests"), "required")));
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(cfg, "requests"), "type")), "object");
    ck_assert_ptr_nonnull(json_object_get(cfg, "id"));
    ck_assert_ptr_nonnull(json_object_get(cfg, "next"));
    json_decref(ask);
    json_t *all = NULL;
    specs_output o = SPECS_OUTPUT_INIT;
    gg_error e = GG_ERROR_INIT;
    ck_assert(specs_call(r, "get_node_types", NULL, &o, &e));
    all = json_loadb(o.structured.data, o.structured.len, 0, NULL);
    const char *fam;
    json_t *subs;
    json_object_foreach(all, fam, subs) {
        if (!strcmp(fam, "GRAPH")) continue;
        size_t k;
        json_t *sub;
        json_array_foreach(subs, k, sub) {
            json_t *doc = specs_registry_get(r, fam, json_string_value(sub));
            const char *d = json_string_value(json_object_get(doc, "description"));
            ck_assert_msg(strncmp(d, "Workflow catalog node, not usable in a graphgate graph. ", 56) == 0,
                          "%s.%s is not labelled as the workflow catalog", fam, json_string_value(sub));
            json_decref(doc);
        }
    }
    json_decref(all);
    specs_output_free(&o);
    specs_registry_free(r);
}
END_TEST

/* ---- invalid specs -------------------------------------------------------------------- */

typedef struct errs {
    int n;
    char first[1024];
} errs;

static void collect(void *user, const gg_error *e) {
    errs *x = user;
    if (x->n++ == 0) gg_error_format(e, x->first, sizeof x->first);
}

/* A temp specs dir holding _common.yaml from the real one and the given files. */
static void make_dir(char *dir, size_t size, const char *const *files, size_t n) {
    snprintf(dir, size, "/tmp/gg-specs-bad.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char cmd[3000];
    snprintf(cmd, sizeof cmd, "cp '%s/_common.yaml' '%s/'", specs_dir, dir);
    ck_assert_int_eq(system(cmd), 0);
    for (size_t i = 0; i < n; i += 2) {
        char path[2600];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        char *slash = strrchr(path, '/');
        *slash = '\0';
        mkdir(path, 0755);
        *slash = '/';
        FILE *f = fopen(path, "w");
        ck_assert_ptr_nonnull(f);
        fputs(files[i + 1], f);
        fclose(f);
    }
}

static const char GOOD[] =
    "node_type: FLOW\nsubtype: NOOP\nversion: \"1.0.0\"\ndescription: Passes its input through unchanged.\n"
    "common_configurations: [enabled]\n"
    "configurations:\n  label: {type: string, default: x, description: A label.}\n"
    "input_params:\n  data: {type: json, description: Input.}\n"
    "output_params:\n  data: {type: json, description: Output.}\n"
    "tags: [flow]\n"
    "examples:\n  - name: Pass through\n    description: Nothing happens here.\n"
    "    configurations: {label: y, enabled: false}\n";

static void expect_invalid(const char *file, const char *text, const char *want_pos, const char *want_msg) {
    const char *files[] = {"FLOW/NOOP.yaml", GOOD, file, text};
    char dir[256];
    make_dir(dir, sizeof dir, files, 4);
    specs_registry *r = load_real(NULL);
    size_t before = specs_registry_count(r);
    errs x = {0, ""};
    gg_error err = GG_ERROR_INIT;
    ck_assert(!specs_registry_load_dir(r, dir, schema_path, collect, &x, &err));
    ck_assert_str_eq(err.code, "invalid_spec");
    ck_assert_int_ge(x.n, 1);
    ck_assert_msg(strstr(x.first, want_pos) != NULL, "want position %s in: %s", want_pos, x.first);
    ck_assert_msg(strstr(x.first, want_msg) != NULL, "want message '%s' in: %s", want_msg, x.first);
    /* the registry keeps its previous content */
    ck_assert_uint_eq(specs_registry_count(r), before);
    json_t *doc = specs_registry_get(r, "FLOW", "NOOP");
    ck_assert_ptr_null(doc);
    gg_error_clear(&err);
    specs_registry_free(r);
    rm_tree(dir);
}

START_TEST(invalid_specs_rejected_with_position) {
    /* YAML syntax */
    expect_invalid("FLOW/BAD.yaml", "node_type: FLOW\nsubtype: [BAD\n", "BAD.yaml:3:1", "invalid_spec");
    /* unknown key → schema violation at the document */
    expect_invalid("FLOW/BAD.yaml",
                   "node_type: FLOW\nsubtype: BAD\nversion: \"1.0.0\"\ndescription: A bad node for the tests.\n"
                   "configurations: {}\ninput_params: {}\noutput_params: {}\ntags: [x]\n"
                   "examples: [{name: abc, description: something long}]\ncolour: red\n",
                   "BAD.yaml:10:", "colour");
    /* wrong param type at its exact line/column */
    expect_invalid("FLOW/BAD.yaml",
                   "node_type: FLOW\nsubtype: BAD\nversion: \"1.0.0\"\ndescription: A bad node for the tests.\n"
                   "configurations:\n  mode:\n    type: strnig\n    description: The mode.\n"
                   "input_params: {}\noutput_params: {}\ntags: [x]\n"
                   "examples: [{name: abc, description: something long}]\n",
                   "BAD.yaml:7:11", "/configurations/mode/type");
    /* default not among options */
    expect_invalid("FLOW/BAD.yaml",
                   "node_type: FLOW\nsubtype: BAD\nversion: \"1.0.0\"\ndescription: A bad node for the tests.\n"
                   "configurations:\n  mode: {type: string, default: c, options: [a, b], description: The mode.}\n"
                   "input_params: {}\noutput_params: {}\ntags: [x]\n"
                   "examples: [{name: abc, description: something long}]\n",
                   "BAD.yaml:6:", "not one of its options");
    /* example names an undeclared configuration */
    expect_invalid("FLOW/BAD.yaml",
                   "node_type: FLOW\nsubtype: BAD\nversion: \"1.0.0\"\ndescription: A bad node for the tests.\n"
                   "configurations: {}\ninput_params: {}\noutput_params: {}\ntags: [x]\n"
                   "examples:\n  - name: abc\n    description: something long\n    configurations: {nope: 1}\n",
                   "BAD.yaml:12:", "'nope'");
    /* unknown shared configuration */
    expect_invalid("FLOW/BAD.yaml",
                   "node_type: FLOW\nsubtype: BAD\nversion: \"1.0.0\"\ndescription: A bad node for the tests.\n"
                   "common_configurations: [timeout, no_such_common]\n"
                   "configurations: {}\ninput_params: {}\noutput_params: {}\ntags: [x]\n"
                   "examples: [{name: abc, description: something long}]\n",
                   "BAD.yaml:5:", "no_such_common");
    /* subtype must match the file name */
    expect_invalid("FLOW/BAD.yaml",
                   "node_type: FLOW\nsubtype: OTHER\nversion: \"1.0.0\"\ndescription: A bad node for the tests.\n"
                   "configurations: {}\ninput_params: {}\noutput_params: {}\ntags: [x]\n"
                   "examples: [{name: abc, description: something long}]\n",
                   "BAD.yaml:2:10", "file name");
    /* attached_nodes only on AI_AGENT; min > max; override out of range */
    expect_invalid("FLOW/BAD.yaml",
                   "node_type: FLOW\nsubtype: BAD\nversion: \"1.0.0\"\ndescription: A bad node for the tests.\n"
                   "common_configurations: [{ref: timeout, default: 99999}]\n"
                   "configurations: {}\ninput_params: {}\noutput_params: {}\ntags: [x]\n"
                   "examples: [{name: abc, description: something long}]\n",
                   "BAD.yaml:5:", "above max");
}
END_TEST

START_TEST(valid_extra_spec_loads_and_reload_swaps) {
    const char *files[] = {"FLOW/NOOP.yaml", GOOD};
    char dir[256];
    make_dir(dir, sizeof dir, files, 2);
    specs_registry *r = load_real(NULL);
    gg_error err = GG_ERROR_INIT;
    ck_assert_msg(specs_registry_load_dir(r, dir, schema_path, NULL, NULL, &err), "%s", err.message);
    ck_assert_uint_eq(specs_registry_count(r), 1);
    json_t *doc = specs_registry_get(r, "FLOW", "NOOP");
    ck_assert_ptr_nonnull(doc);
    ck_assert_ptr_nonnull(json_object_get(json_object_get(doc, "configurations"), "enabled"));
    json_decref(doc);
    bool is_error;
    json_t *types = call(r, "get_node_types", NULL, &is_error);
    ck_assert(!is_error);
    ck_assert_int_eq(json_object_size(types), 1);
    json_decref(types);
    specs_registry_free(r);
    rm_tree(dir);
}
END_TEST

/* ---- tools --------------------------------------------------------------------------- */

START_TEST(tool_get_node_types) {
    specs_registry *r = load_real(NULL);
    bool e;
    json_t *all = call(r, "get_node_types", "{}", &e);
    ck_assert(!e);
    ck_assert_int_eq(json_object_size(all), SPECS_NTYPES);
    const char *first = json_object_iter_key(json_object_iter(all));
    ck_assert_str_eq(first, "GRAPH"); /* graphgate's own node types come first */
    json_t *ai = json_object_get(all, "AI_AGENT");
    ck_assert_int_ge(json_array_size(ai), 3);
    json_decref(all);
    json_t *one = call(r, "get_node_types", "{\"type_filter\":\"MEMORY\"}", &e);
    ck_assert(!e);
    ck_assert_int_eq(json_object_size(one), 1);
    ck_assert_int_ge(json_array_size(json_object_get(one, "MEMORY")), 3);
    json_decref(one);
    json_t *bad = call(r, "get_node_types", "{\"type_filter\":\"ACTIONS\"}", &e);
    ck_assert(e);
    ck_assert_ptr_nonnull(strstr(json_string_value(bad), "Valid types: GRAPH, TRIGGER, AI_AGENT"));
    ck_assert_ptr_nonnull(strstr(json_string_value(bad), "Did you mean ACTION?"));
    json_decref(bad);
    specs_registry_free(r);
}
END_TEST

static const char *const SEED_FIELDS[] = {
    "node_type", "subtype", "version", "description", "parameters", "configurations", "input_params_schema",
    "output_params_schema", "default_configurations", "default_input_params", "default_output_params",
    "input_ports", "output_ports", "tags", "attached_nodes", "examples"};

START_TEST(tool_get_node_details_fields_and_flags) {
    specs_registry *r = load_real(NULL);
    bool e;
    json_t *d = call(r, "get_node_details", "{\"nodes\":[{\"node_type\":\"AI_AGENT\",\"subtype\":\"OPENAI_CHATGPT\"}]}", &e);
    ck_assert(!e);
    json_t *n = json_array_get(json_object_get(d, "nodes"), 0);
    ck_assert_int_eq(json_object_size(n), sizeof SEED_FIELDS / sizeof SEED_FIELDS[0]);
    size_t i = 0;
    const char *k;
    json_t *v;
    json_object_foreach(n, k, v) ck_assert_str_eq(k, SEED_FIELDS[i++]); /* exact fields, seed order */
    json_t *model = json_object_get(json_object_get(n, "configurations"), "model");
    ck_assert_str_eq(json_string_value(json_object_get(model, "type")), "string");
    ck_assert(json_is_true(json_object_get(model, "required")));
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(n, "default_configurations"), "model")),
                     "gpt-4o-mini");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(n, "default_input_params"), "user_input")), "");
    ck_assert(json_real_value(json_object_get(json_object_get(n, "default_configurations"), "temperature")) == 0.7);
    json_t *p0 = json_array_get(json_object_get(n, "parameters"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(p0, "name")), "model");
    ck_assert_ptr_nonnull(json_object_get(p0, "enum_values"));
    json_decref(d);
    /* flags off: no examples, no schemas; attached_nodes only when present */
    d = call(r, "get_node_details",
             "{\"nodes\":[{\"node_type\":\"TRIGGER\",\"subtype\":\"WEBHOOK\"}],\"include_examples\":false,"
             "\"include_schemas\":false}", &e);
    n = json_array_get(json_object_get(d, "nodes"), 0);
    ck_assert_ptr_null(json_object_get(n, "examples"));
    ck_assert_ptr_null(json_object_get(n, "input_params_schema"));
    ck_assert_ptr_null(json_object_get(n, "output_params_schema"));
    ck_assert_ptr_null(json_object_get(n, "attached_nodes"));
    ck_assert_ptr_nonnull(json_object_get(n, "default_output_params"));
    json_decref(d);
    d = call(r, "get_node_details", "{\"nodes\":[{\"node_type\":\"FLOW\",\"subtype\":\"IF\"}],\"include_examples\":\"yes\"}", &e);
    ck_assert(e);
    json_decref(d);
    specs_registry_free(r);
}
END_TEST

START_TEST(tool_get_node_details_batch_and_corrections) {
    specs_registry *r = load_real(NULL);
    /* a batch of 100 in one call, order preserved */
    specs_snapshot *s = specs_snapshot_acquire(r);
    gg_strbuf b = GG_STRBUF_INIT;
    gg_strbuf_puts(&b, "{\"include_examples\":false,\"nodes\":[");
    for (int i = 0; i < 100; i++)
        gg_strbuf_printf(&b, "%s{\"node_type\":\"%s\",\"subtype\":\"%s\"}", i ? "," : "", s->v[i % s->n].node_type,
                         s->v[i % s->n].subtype);
    gg_strbuf_puts(&b, "]}");
    bool e;
    json_t *d = call(r, "get_node_details", b.data, &e);
    ck_assert(!e);
    json_t *nodes = json_object_get(d, "nodes");
    ck_assert_int_eq(json_array_size(nodes), 100);
    for (int i = 0; i < 100; i++)
        ck_assert_str_eq(json_string_value(json_object_get(json_array_get(nodes, i), "subtype")), s->v[i % s->n].subtype);
    json_decref(d);
    gg_strbuf_reset(&b);
    gg_strbuf_puts(&b, "{\"nodes\":[");
    for (int i = 0; i < 101; i++) gg_strbuf_printf(&b, "%s{\"node_type\":\"FLOW\",\"subtype\":\"IF\"}", i ? "," : "");
    gg_strbuf_puts(&b, "]}");
    d = call(r, "get_node_details", b.data, &e);
    ck_assert(e);
    ck_assert_ptr_nonnull(strstr(json_string_value(d), "at most 100"));
    json_decref(d);
    gg_strbuf_free(&b);
    specs_snapshot_release(s);
    /* _NODE suffix corrected with the seed's warning; unknown subtype with suggestions */
    d = call(r, "get_node_details",
             "{\"nodes\":[{\"node_type\":\"ACTION_NODE\",\"subtype\":\"HTTP_REQUEST\"},"
             "{\"node_type\":\"ACTION\",\"subtype\":\"HTTP_REQEST\"},"
             "{\"node_type\":\"EXTERNAL_ACTION\",\"subtype\":\"HTTP_REQUEST\"},"
             "{\"node_type\":\"WIDGET\",\"subtype\":\"SLAK\"},"
             "{\"node_type\":\"flow\",\"subtype\":\"if\"}]}", &e);
    ck_assert(!e);
    nodes = json_object_get(d, "nodes");
    json_t *n0 = json_array_get(nodes, 0);
    ck_assert_str_eq(json_string_value(json_object_get(n0, "node_type")), "ACTION");
    ck_assert_str_eq(json_string_value(json_object_get(n0, "warning")),
                     "Auto-corrected: 'ACTION_NODE' → 'ACTION'. Please use correct format without '_NODE' suffix.");
    json_t *n1 = json_array_get(nodes, 1);
    ck_assert_ptr_nonnull(json_object_get(n1, "error"));
    ck_assert_ptr_nonnull(json_object_get(n1, "hint"));
    ck_assert_int_ge(json_array_size(json_object_get(n1, "available_types")), 8);
    json_t *sg = json_array_get(json_object_get(n1, "suggestions"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(sg, "subtype")), "HTTP_REQUEST");
    json_t *n2 = json_array_get(nodes, 2); /* exists in another family */
    sg = json_array_get(json_object_get(n2, "suggestions"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(sg, "node_type")), "ACTION");
    json_t *n3 = json_array_get(nodes, 3);
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(n3, "hint")), "not a node type"));
    sg = json_array_get(json_object_get(n3, "suggestions"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(sg, "subtype")), "SLACK");
    json_t *n4 = json_array_get(nodes, 4);
    ck_assert_str_eq(json_string_value(json_object_get(n4, "subtype")), "IF");
    ck_assert_ptr_nonnull(json_object_get(n4, "warning"));
    json_decref(d);
    /* malformed items and arguments */
    d = call(r, "get_node_details", "{\"nodes\":[{\"node_type\":\"FLOW\"}]}", &e);
    ck_assert(e);
    json_decref(d);
    d = call(r, "get_node_details", "{}", &e);
    ck_assert(e);
    json_decref(d);
    specs_output out = SPECS_OUTPUT_INIT;
    gg_error err = GG_ERROR_INIT;
    ck_assert(!specs_call(r, "no_such_tool", NULL, &out, &err));
    ck_assert_str_eq(err.code, "unknown_tool");
    gg_error_clear(&err);
    specs_output_free(&out);
    specs_registry_free(r);
}
END_TEST

START_TEST(edit_distance) {
    ck_assert_int_eq(specs_edit_distance("SLACK", "SLAK", 10), 1);
    ck_assert_int_eq(specs_edit_distance("http_request", "HTTP_REQUEST", 10), 0);
    ck_assert_int_eq(specs_edit_distance("kitten", "sitting", 10), 3);
    ck_assert_int_eq(specs_edit_distance("a", "bcdefgh", 3), 3);
}
END_TEST


static void fixed_extra(gg_strbuf *b, void *user) {
    (void)user;
    gg_strbuf_puts(b, "\"_x\":1");
}

/* The REST hot path renders exactly the bytes the general path does. */
START_TEST(render_matches_general_path) {
    specs_registry *r = load_real(NULL);
    static const char *const cases[][2] = {
        {"get_node_details", "{\"nodes\":[{\"node_type\":\"AI_AGENT\",\"subtype\":\"OPENAI_CHATGPT\"},"
                             "{\"node_type\":\"GRAPH\",\"subtype\":\"EXIT\"}]}"},
        {"get_node_details", "{\"nodes\":[{\"node_type\":\"FLOW\",\"subtype\":\"IF\"}],\"include_examples\":false}"},
        {"get_node_details", "{\"nodes\":[{\"node_type\":\"FLOW\",\"subtype\":\"IF\"}],\"include_schemas\":false,"
                             "\"include_examples\":true}"},
        {"get_node_details", "{\"nodes\":[{\"node_type\":\"FLOW_NODE\",\"subtype\":\"IF\"}]}"},
        {"get_node_types", "{\"type_filter\":\"TOOL\"}"},
        {"get_node_details", "{\"nodes\":7}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *args = json_loads(cases[i][1], 0, NULL);
        specs_output o = SPECS_OUTPUT_INIT;
        gg_error err = GG_ERROR_INIT;
        ck_assert(specs_call(r, cases[i][0], args, &o, &err));
        gg_strbuf want = GG_STRBUF_INIT;
        gg_strbuf_puts(&want, "[");
        specs_output_serialize(&o, "\"_x\":1", &want);
        gg_strbuf_puts(&want, "]");
        size_t len = 0;
        char *got = specs_call_render(r, cases[i][0], args, "[", fixed_extra, NULL, "]", &len, &err);
        ck_assert_ptr_nonnull(got);
        ck_assert_uint_eq(len, want.len);
        ck_assert_msg(memcmp(got, want.data, len) == 0, "case %zu differs", i);
        json_t *parsed = json_loadb(got + 1, len - 2, 0, NULL);
        ck_assert_ptr_nonnull(parsed);
        json_decref(parsed);
        free(got);
        gg_strbuf_free(&want);
        specs_output_free(&o);
        json_decref(args);
    }
    gg_error err = GG_ERROR_INIT;
    size_t len;
    ck_assert_ptr_null(specs_call_render(r, "nope", NULL, NULL, NULL, NULL, NULL, &len, &err));
    ck_assert_str_eq(err.code, "unknown_tool");
    gg_error_clear(&err);
    specs_registry_free(r);
}
END_TEST

/* ---- persistence and search ------------------------------------------------------------ */

START_TEST(persist_search_and_sync) {
    gg_store *store = temp_store();
    specs_registry *r = specs_registry_new(store);
    gg_error err = GG_ERROR_INIT;
    bool from_dir = false;
    ck_assert_msg(specs_registry_sync(r, specs_dir, schema_path, false, &from_dir, NULL, NULL, &err), "%s", err.message);
    ck_assert(from_dir);
    size_t n = specs_registry_count(r);
    /* a second sync with an unchanged directory reads the database */
    specs_registry *r2 = specs_registry_new(store);
    ck_assert(specs_registry_sync(r2, specs_dir, schema_path, false, &from_dir, NULL, NULL, &err));
    ck_assert(!from_dir);
    ck_assert_uint_eq(specs_registry_count(r2), n);
    /* identical bytes served either way */
    bool e1, e2;
    const char *args = "{\"nodes\":[{\"node_type\":\"MEMORY\",\"subtype\":\"VECTOR_DATABASE\"}]}";
    json_t *a = call(r, "get_node_details", args, &e1), *b = call(r2, "get_node_details", args, &e2);
    ck_assert(json_equal(a, b));
    json_decref(a);
    json_decref(b);
    /* search: bm25 ranking, type filter, limit, bad input */
    json_t *s = call(r2, "search_nodes", "{\"query\":\"http request\"}", &e1);
    ck_assert(!e1);
    json_t *top = json_array_get(json_object_get(s, "results"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(top, "subtype")), "HTTP_REQUEST");
    ck_assert_ptr_nonnull(json_object_get(top, "snippet"));
    ck_assert_ptr_nonnull(json_object_get(top, "description"));
    double prev = 1e9;
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(s, "results"), i, row) {
        double sc = json_number_value(json_object_get(row, "score"));
        ck_assert(sc <= prev);
        prev = sc;
    }
    json_decref(s);
    s = call(r2, "search_nodes", "{\"query\":\"send slack message\",\"limit\":2}", &e1);
    ck_assert_int_eq(json_array_size(json_object_get(s, "results")), 2);
    top = json_array_get(json_object_get(s, "results"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(top, "node_type")), "EXTERNAL_ACTION");
    ck_assert_str_eq(json_string_value(json_object_get(top, "subtype")), "SLACK");
    json_decref(s);
    /* graph-building queries rank graphgate's own family first (the family weighting), the
     * workflow catalog's match after it; limit cuts after the re-ranking */
    s = call(r2, "search_nodes", "{\"query\":\"loop over a list\",\"limit\":5}", &e1);
    ck_assert(!e1);
    ck_assert_int_eq(json_array_size(json_object_get(s, "results")), 5);
    top = json_array_get(json_object_get(s, "results"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(top, "node_type")), "GRAPH");
    ck_assert_str_eq(json_string_value(json_object_get(top, "subtype")), "SWITCH");
    bool loop_listed = false;
    prev = 1e9;
    json_array_foreach(json_object_get(s, "results"), i, row) {
        loop_listed |= strcmp(json_string_value(json_object_get(row, "subtype")), "LOOP") == 0;
        ck_assert(json_number_value(json_object_get(row, "score")) <= prev);
        prev = json_number_value(json_object_get(row, "score"));
    }
    ck_assert(loop_listed);
    json_decref(s);
    s = call(r2, "search_nodes", "{\"query\":\"slack\",\"type_filter\":\"HUMAN_IN_THE_LOOP\"}", &e1);
    json_array_foreach(json_object_get(s, "results"), i, row)
        ck_assert_str_eq(json_string_value(json_object_get(row, "node_type")), "HUMAN_IN_THE_LOOP");
    ck_assert_int_ge(json_array_size(json_object_get(s, "results")), 1);
    json_decref(s);
    s = call(r2, "search_nodes", "{\"query\":\"\\\" OR NEAR( slack*\"}", &e1);
    ck_assert(!e1); /* FTS5 syntax never reaches SQLite: only quoted words do */
    json_decref(s);
    s = call(r2, "search_nodes", "{\"query\":\"(*) - ^\"}", &e1);
    ck_assert(e1); /* no searchable words */
    json_decref(s);
    s = call(r2, "search_nodes", "{\"query\":\"x\",\"limit\":0}", &e1);
    ck_assert(e1);
    json_decref(s);
    /* versions: a changed version adds a row, the old one stays */
    json_t *v = gg_store_specs_versions(store, "FLOW", "IF", &err);
    ck_assert_int_eq(json_array_size(v), 1);
    ck_assert(json_is_true(json_object_get(json_array_get(v, 0), "current")));
    json_decref(v);
    specs_registry_free(r);
    specs_registry_free(r2);
    /* no store → search is a clear tool error */
    specs_registry *r3 = load_real(NULL);
    s = call(r3, "search_nodes", "{\"query\":\"slack\"}", &e1);
    ck_assert(e1);
    json_decref(s);
    specs_registry_free(r3);
    gg_store_close(store);
    rm_tree(tmp_root);
}
END_TEST


/* A new version adds a row and becomes current; an invalid directory changes nothing. */
START_TEST(versions_and_failed_sync) {
    gg_store *store = temp_store();
    char dir[512], cmd[3000];
    snprintf(dir, sizeof dir, "%s/specs", tmp_root);
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", specs_dir, dir);
    ck_assert_int_eq(system(cmd), 0);
    specs_registry *r = specs_registry_new(store);
    gg_error err = GG_ERROR_INIT;
    ck_assert(specs_registry_sync(r, dir, schema_path, false, NULL, NULL, NULL, &err));
    snprintf(cmd, sizeof cmd, "sed -i 's/^version: \"1.0.0\"/version: \"1.1.0\"/' '%s/FLOW/IF.yaml'", dir);
    ck_assert_int_eq(system(cmd), 0);
    bool from_dir = false;
    ck_assert_msg(specs_registry_sync(r, dir, schema_path, false, &from_dir, NULL, NULL, &err), "%s", err.message);
    ck_assert(from_dir); /* the checksum changed */
    json_t *v = gg_store_specs_versions(store, "FLOW", "IF", &err);
    ck_assert_int_eq(json_array_size(v), 2);
    json_t *cur = NULL;
    size_t i;
    json_t *row;
    json_array_foreach(v, i, row) if (json_is_true(json_object_get(row, "current"))) cur = row;
    ck_assert_str_eq(json_string_value(json_object_get(cur, "version")), "1.1.0");
    json_decref(v);
    char sum[65], stored[65];
    specs_registry_checksum(r, sum);
    long long count;
    bool found;
    ck_assert(gg_store_specs_meta(store, stored, &count, &found, &err));
    ck_assert(found);
    ck_assert_str_eq(sum, stored);
    /* break a file: the sync fails, memory and database keep the last good load */
    snprintf(cmd, sizeof cmd, "printf 'node_type: FLOW\\n' > '%s/FLOW/SORT.yaml'", dir);
    ck_assert_int_eq(system(cmd), 0);
    errs x = {0, ""};
    ck_assert(!specs_registry_sync(r, dir, schema_path, false, NULL, collect, &x, &err));
    ck_assert_ptr_nonnull(strstr(x.first, "FLOW/SORT.yaml:1:1"));
    gg_error_clear(&err);
    ck_assert_uint_eq(specs_registry_count(r), (size_t)count);
    json_t *sort = specs_registry_get(r, "FLOW", "SORT");
    ck_assert_ptr_nonnull(sort);
    json_decref(sort);
    char again[65];
    ck_assert(gg_store_specs_meta(store, again, &count, &found, &err));
    ck_assert_str_eq(again, stored);
    specs_registry_free(r);
    gg_store_close(store);
    rm_tree(tmp_root);
}
END_TEST

START_TEST(provider_calls) {
    specs_registry *r = load_real(NULL);
    mcp_provider *p = specs_provider_new(r);
    specs_registry_free(r); /* the provider keeps it alive */
    json_t *tools = p->ops->list_tools(p);
    ck_assert_int_eq(json_array_size(tools), 3);
    json_decref(tools);
    json_t *t = p->ops->get_tool(p, "search_nodes");
    ck_assert_ptr_nonnull(json_object_get(t, "inputSchema"));
    json_decref(t);
    ck_assert_ptr_null(p->ops->get_tool(p, "nope"));
    json_t *args = json_loads("{\"nodes\":[{\"node_type\":\"GRAPH\",\"subtype\":\"SWITCH\"}]}", 0, NULL);
    gg_error err = GG_ERROR_INIT;
    mcp_call_ctx ctx = {0};
    json_t *res = p->ops->call_tool(p, "get_node_details", args, &ctx, &err);
    ck_assert_ptr_nonnull(res);
    json_t *n = json_array_get(json_object_get(json_object_get(res, "structuredContent"), "nodes"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(n, "subtype")), "SWITCH");
    ck_assert(json_is_false(json_object_get(res, "isError")));
    json_decref(res);
    ck_assert_ptr_null(p->ops->call_tool(p, "nope", args, &ctx, &err));
    ck_assert_str_eq(err.code, "unknown_tool");
    gg_error_clear(&err);
    json_decref(args);
    args = json_loads("{\"type_filter\":\"NOPE\"}", 0, NULL);
    res = p->ops->call_tool(p, "get_node_types", args, &ctx, &err);
    ck_assert(json_is_true(json_object_get(res, "isError")));
    ck_assert_ptr_null(json_object_get(res, "structuredContent"));
    const char *msg = json_string_value(json_object_get(json_array_get(json_object_get(res, "content"), 0), "text"));
    ck_assert_ptr_nonnull(strstr(msg, "Unknown type_filter 'NOPE'. Valid types: GRAPH, TRIGGER"));
    json_decref(res);
    json_decref(args);
    json_t *info = p->ops->server_info(p);
    ck_assert_str_eq(json_string_value(json_object_get(info, "name")), "graphgate-nodes");
    json_decref(info);
    mcp_provider_unref(p);
}
END_TEST

START_TEST(yaml_positions_and_scalars) {
    specs_doc doc;
    gg_error err = GG_ERROR_INIT;
    const char *y = "a: 1\nb: 1.5\nc: 'x'\nd: true\ne: ~\nf:\n  - g: \"2\"\n";
    ck_assert(specs_yaml_parse(y, strlen(y), &doc, &err));
    ck_assert(json_is_integer(json_object_get(doc.root, "a")));
    ck_assert(json_is_real(json_object_get(doc.root, "b")));
    ck_assert(json_is_string(json_object_get(doc.root, "c")));
    ck_assert(json_is_true(json_object_get(doc.root, "d")));
    ck_assert(json_is_null(json_object_get(doc.root, "e")));
    int line, col;
    specs_doc_position(&doc, "/f/0/g", &line, &col);
    ck_assert_int_eq(line, 7);
    ck_assert_int_eq(col, 8);
    specs_doc_free(&doc);
    /* aliases are read as graphs read them (expanded, bounded: tests/util/test_yaml) */
    ck_assert(specs_yaml_parse("a: &x 1\nb: *x\n", 14, &doc, &err));
    ck_assert_int_eq(json_integer_value(json_object_get(doc.root, "b")), 1);
    specs_doc_free(&doc);
    ck_assert(!specs_yaml_parse("a: 1\na: 2\n", 10, &doc, &err));
    ck_assert_int_eq(err.line, 2);
    gg_error_clear(&err);
}
END_TEST

int main(void) {
    setup_paths();
    Suite *s = suite_create("specs");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, real_specs_load);
    tcase_add_test(tc, invalid_specs_rejected_with_position);
    tcase_add_test(tc, valid_extra_spec_loads_and_reload_swaps);
    tcase_add_test(tc, tool_get_node_types);
    tcase_add_test(tc, tool_get_node_details_fields_and_flags);
    tcase_add_test(tc, tool_get_node_details_batch_and_corrections);
    tcase_add_test(tc, edit_distance);
    tcase_add_test(tc, render_matches_general_path);
    tcase_add_test(tc, persist_search_and_sync);
    tcase_add_test(tc, versions_and_failed_sync);
    tcase_add_test(tc, provider_calls);
    tcase_add_test(tc, yaml_positions_and_scalars);
    suite_add_tcase(s, tc);
    return gg_check_run(s);
}
