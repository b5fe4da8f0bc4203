/* test_jsonschema.c — table-driven tests of the JSON Schema validator (src/jsonschema/jsonschema.c).
 *
 * The table tests/jsonschema/schema_cases.json holds {desc, schema, instance, valid, path?}; path
 * is the JSON pointer of the first violation we report. The same table is run through ajv
 * (JSON Schema 2020-12) by tests/jsonschema/schema_ajv.mjs, which calls this program with --print
 * to get our verdicts, so the expectations are checked against an independent validator.
 *
 * usage: test_jsonschema [CASES.json]          run the table, print "N passed, N failed"
 *        test_jsonschema --print CASES.json    one JSON line per case: {"valid":..,"path":..}
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jsonschema/jsonschema.h"

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

static void check(bool cond, const char *what, int *passed, int *failed) {
    if (cond) (*passed)++;
    else {
        (*failed)++;
        printf("not ok - %s\n", what);
    }
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Budgets: a $ref/allOf schema that would apply a subschema 10^8 times to one value does not
 * compile, a check whose work grows with the value past the step budget fails with the
 * budget message (quickly), too many subschemas do not compile, and big schemas compile in
 * linear time (hashed node and $anchor lookups). Time bounds are generous (loaded CI). */
static void budget_checks(int *passed, int *failed) {
    json_t *defs = json_object();
    json_object_set_new(defs, "l0", json_pack("{s:s}", "type", "string"));
    for (int i = 1; i <= 8; i++) {
        char prev[48], name[8];
        snprintf(prev, sizeof prev, "#/$defs/l%d", i - 1);
        snprintf(name, sizeof name, "l%d", i);
        json_t *all = json_array();
        for (int k = 0; k < 10; k++) json_array_append_new(all, json_pack("{s:s}", "$ref", prev));
        json_object_set_new(defs, name, json_pack("{s:o}", "allOf", all));
    }
    json_t *schema = json_pack("{s:s,s:o,s:{s:{s:s}}}", "type", "object", "$defs", defs, "properties", "x", "$ref",
                               "#/$defs/l8");
    gg_error err = GG_ERROR_INIT;
    double t0 = now_ms();
    mcp_schema *ms = mcp_schema_compile(schema, &err);
    check(!ms && err.message && strstr(err.message, "more than 1000 subschemas to one value"),
          "an exponential $ref/allOf schema does not compile", passed, failed);
    check(now_ms() - t0 < 2000, "… and is refused quickly", passed, failed);
    gg_error_clear(&err);
    json_decref(schema);
    /* 1000 subschemas per item (allowed) x 2000 items: past the 1M-step budget */
    json_t *all = json_array();
    for (int k = 0; k < 999; k++) json_array_append_new(all, json_pack("{s:s}", "type", "integer"));
    schema = json_pack("{s:s,s:{s:o}}", "type", "array", "items", "allOf", all);
    ms = mcp_schema_compile(schema, &err);
    check(ms != NULL, "999 subschemas per item compile", passed, failed);
    json_t *inst = json_array();
    for (int i = 0; i < 2000; i++) json_array_append_new(inst, json_integer(i));
    t0 = now_ms();
    bool ok = ms && mcp_schema_validate(ms, inst, &err);
    check(!ok && err.message && strstr(err.message, "exceeded its budget"), "a check past the step budget fails on it",
          passed, failed);
    check(now_ms() - t0 < 5000, "the budget ends the check quickly", passed, failed);
    gg_error_clear(&err);
    json_decref(inst);
    mcp_schema_free(ms);
    json_decref(schema);

    json_t *props = json_object();
    for (int i = 0; i < 30000; i++) {
        char k[16];
        snprintf(k, sizeof k, "p%d", i);
        json_object_set_new(props, k, json_pack("{s:s,s:s}", "type", "string", "$anchor", k));
    }
    schema = json_pack("{s:s,s:O}", "type", "object", "properties", props);
    ms = mcp_schema_compile(schema, &err);
    check(!ms && err.message && strstr(err.message, "more than 20000 subschemas"), "too many subschemas are refused",
          passed, failed);
    gg_error_clear(&err);
    mcp_schema_free(ms);
    json_decref(schema);
    /* 15000 properties and 4000 "#name" refs: linear */
    for (int i = 15000; i < 30000; i++) {
        char k[16];
        snprintf(k, sizeof k, "p%d", i);
        json_object_del(props, k);
    }
    for (int i = 0; i < 4000; i++) {
        char k[16], r[24];
        snprintf(k, sizeof k, "r%d", i);
        snprintf(r, sizeof r, "#p%d", i);
        json_object_set_new(props, k, json_pack("{s:s}", "$ref", r));
    }
    schema = json_pack("{s:s,s:O}", "type", "object", "properties", props);
    t0 = now_ms();
    ms = mcp_schema_compile(schema, &err);
    check(ms != NULL && now_ms() - t0 < 3000, "15000 properties and 4000 anchor refs compile quickly", passed, failed);
    gg_error_clear(&err);
    mcp_schema_free(ms);
    json_decref(schema);
    json_decref(props);
}

static int run_table(json_t *cases) {
    int passed = 0, failed = 0;
    budget_checks(&passed, &failed);
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
        snprintf(dflt, sizeof dflt, "%s/tests/jsonschema/schema_cases.json", src ? src : ".");
        file = dflt;
    }
    json_t *cases = load_cases(file);
    if (!cases) return 2;
    int rc = print ? print_verdicts(cases) : run_table(cases);
    json_decref(cases);
    return rc;
}
