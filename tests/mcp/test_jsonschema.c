/* test_jsonschema.c — table-driven tests of the JSON Schema validator (src/mcp/jsonschema.c).
 *
 * The table tests/mcp/schema_cases.json holds {desc, schema, instance, valid, path?}; path
 * is the JSON pointer of the first violation we report. The same table is run through ajv
 * (JSON Schema 2020-12) by tests/mcp/schema_ajv.mjs, which calls this program with --print
 * to get our verdicts, so the expectations are checked against an independent validator.
 *
 * usage: test_jsonschema [CASES.json]          run the table, print "N passed, N failed"
 *        test_jsonschema --print CASES.json    one JSON line per case: {"valid":..,"path":..}
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp.h"

/* Our verdict for one case: 1 valid, 0 invalid (path set, caller frees), -1 bad schema. */
static int verdict(json_t *schema, json_t *instance, char **path, char **message) {
    gg_error err = GG_ERROR_INIT;
    *path = *message = NULL;
    mcp_schema *s = mcp_schema_compile(schema, &err);
    if (!s) {
        *message = strdup(err.message ? err.message : "?");
        gg_error_clear(&err);
        return -1;
    }
    int ok = mcp_schema_validate(s, instance, &err);
    if (!ok) {
        *path = strdup(err.path ? err.path : "");
        *message = strdup(err.message ? err.message : "");
    }
    gg_error_clear(&err);
    mcp_schema_free(s);
    return ok;
}

static json_t *load_cases(const char *file) {
    json_error_t e;
    json_t *cases = json_load_file(file, 0, &e);
    if (!json_is_array(cases)) {
        fprintf(stderr, "cannot read %s: %s (line %d)\n", file, e.text, e.line);
        json_decref(cases);
        return NULL;
    }
    return cases;
}

static int print_verdicts(json_t *cases) {
    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c) {
        char *path, *msg;
        int v = verdict(json_object_get(c, "schema"), json_object_get(c, "instance"), &path, &msg);
        json_t *line = v < 0 ? json_pack("{s:s}", "error", msg)
                             : json_pack("{s:b, s:s?}", "valid", v, "path", path);
        char *text = line ? json_dumps(line, JSON_COMPACT) : NULL;
        printf("%s\n", text ? text : "{\"error\":\"out of memory\"}");
        free(text);
        json_decref(line);
        free(path);
        free(msg);
    }
    return 0;
}

static int run_table(json_t *cases) {
    int passed = 0, failed = 0;
    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c) {
        const char *desc = json_string_value(json_object_get(c, "desc"));
        bool want = json_is_true(json_object_get(c, "valid"));
        const char *want_path = json_string_value(json_object_get(c, "path"));
        char *path, *msg;
        int v = verdict(json_object_get(c, "schema"), json_object_get(c, "instance"), &path, &msg);
        bool ok = v >= 0 && (bool)v == want && (want || !want_path || strcmp(path, want_path) == 0);
        if (ok) passed++;
        else {
            failed++;
            printf("not ok %zu - %s: %s (path %s, %s)\n", i + 1, desc ? desc : "?",
                   v < 0 ? "schema refused" : v ? "accepted" : "refused", path ? path : "-", msg ? msg : "");
        }
        free(path);
        free(msg);
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

int main(int argc, char **argv) {
    bool print = argc > 1 && strcmp(argv[1], "--print") == 0;
    const char *file = argc > (print ? 2 : 1) ? argv[print ? 2 : 1] : NULL;
    char dflt[4096];
    if (!file) {
        const char *src = getenv("GG_SRCDIR");
        snprintf(dflt, sizeof dflt, "%s/tests/mcp/schema_cases.json", src ? src : ".");
        file = dflt;
    }
    json_t *cases = load_cases(file);
    if (!cases) return 2;
    int rc = print ? print_verdicts(cases) : run_table(cases);
    json_decref(cases);
    return rc;
}
