/* jsonlogic-suite — run shared JSON Logic conformance files against the engine.
 *
 *   jsonlogic-suite [-v] FILE...
 *
 * Accepts json-logic-js's tests.json (an array of [rule, data, expected], strings are
 * comments; run with json-logic-js semantics), the compat suites (arrays of objects with
 * description, rule, data, result or error; run with compat_semantics) and index.json
 * files listing further files relative to themselves. Every case uses plain var paths.
 * Prints each failing case and ends with "N passed, N failed"; exit 0 only if none failed.
 */
#include <jansson.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonata/jsonata.h"
#include "jsonlogic/jsonlogic.h"

typedef struct counts {
    long passed, failed, waived;
    bool verbose;
    char why[8][240]; /* distinct waiver reasons */
    long why_n[8];
} counts;

/* A case the reference marks {"waived": reason} that fails here is a documented
 * divergence (SEMANTICS.md): counted under "waived", never under "passed". */
static void waive(counts *ct, const char *why) {
    ct->waived++;
    for (int i = 0; i < 8; i++) {
        if (!ct->why[i][0]) snprintf(ct->why[i], sizeof ct->why[i], "%s", why);
        if (strncmp(ct->why[i], why, sizeof ct->why[i] - 1) == 0) { ct->why_n[i]++; return; }
    }
}

/* Equality where 1 and 1.0 are the same number (JSON has one number type). */
static bool same(json_t *a, json_t *b) {
    if (json_is_number(a) && json_is_number(b)) return json_number_value(a) == json_number_value(b);
    if (json_typeof(a) != json_typeof(b)) return false;
    if (json_is_array(a)) {
        if (json_array_size(a) != json_array_size(b)) return false;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!same(json_array_get(a, i), json_array_get(b, i))) return false;
        return true;
    }
    if (json_is_object(a)) {
        if (json_object_size(a) != json_object_size(b)) return false;
        const char *k;
        json_t *v;
        json_object_foreach(a, k, v) {
            json_t *w = json_object_get(b, k);
            if (!w || !same(v, w)) return false;
        }
        return true;
    }
    return json_equal(a, b);
}

static char *show(json_t *v) {
    if (!v) return strdup("(none)");
    char *s = jsonata_dump(v, 0);
    return s ? s : strdup("?");
}

static void report(const char *file, size_t idx, const char *desc, json_t *rule, json_t *data,
                   const char *got, const char *want) {
    char *r = show(rule), *d = show(data);
    printf("FAIL %s #%zu%s%s%s\n  rule: %s\n  data: %s\n  got:  %s\n  want: %s\n", file, idx,
           desc ? " (" : "", desc ? desc : "", desc ? ")" : "", r, d, got, want);
    free(r);
    free(d);
}

/* One case; expected_error is the compat "error" object or NULL. */
static void run_case(counts *ct, const char *file, size_t idx, const char *desc, bool compat,
                     json_t *rule, json_t *data, json_t *expected, json_t *expected_error) {
    jsonlogic_options opts = {.compat_semantics = compat};
    gg_error err = GG_ERROR_INIT;
    json_t *got = NULL;
    jsonlogic_rule *r = jsonlogic_compile(rule, &opts, &err);
    if (r) got = jsonlogic_apply(r, data, NULL, &err);
    bool ok;
    char gotbuf[512];
    if (!got) snprintf(gotbuf, sizeof gotbuf, "error %s: %s", err.code, err.message ? err.message : "");
    if (expected_error) {
        json_t *t = json_object_get(expected_error, "type");
        const char *type = jsonlogic_error_type(&err);
        const char *why = json_string_value(json_object_get(expected_error, "waived"));
        ok = !got && (!json_is_string(t) || (type && strcmp(type, json_string_value(t)) == 0));
        if (!ok && why) {
            waive(ct, why);
            json_decref(got);
            jsonlogic_free(r);
            gg_error_clear(&err);
            return;
        }
        if (!ok) {
            char *g = got ? show(got) : strdup(gotbuf), *w = show(expected_error);
            char wbuf[600];
            snprintf(wbuf, sizeof wbuf, "error %s", w);
            report(file, idx, desc, rule, data, g, wbuf);
            free(g);
            free(w);
        }
    } else {
        if (!expected) expected = json_null();
        ok = got && same(got, expected);
        if (!ok) {
            char *g = got ? show(got) : strdup(gotbuf), *w = show(expected);
            report(file, idx, desc, rule, data, g, w);
            free(g);
            free(w);
        }
        /* jsonlogic_test must agree with the truthiness of the result. A null result may
         * stand for Infinity (truthy in JavaScript), so only non-null results are checked. */
        if (ok && !json_is_null(got)) {
            gg_error terr = GG_ERROR_INIT;
            int t = jsonlogic_test(r, data, NULL, &terr);
            gg_error_clear(&terr);
            if (t != (int)jsonlogic_truthy(got)) {
                snprintf(gotbuf, sizeof gotbuf, "jsonlogic_test gave %d", t);
                report(file, idx, desc, rule, data, gotbuf, "the truthiness of the result");
                ok = false;
            }
        }
    }
    if (ok && ct->verbose) printf("ok   %s #%zu\n", file, idx);
    ok ? ct->passed++ : ct->failed++;
    json_decref(got);
    jsonlogic_free(r);
    gg_error_clear(&err);
}

static int run_file(counts *ct, const char *path, int depth);

static int run_index(counts *ct, const char *path, json_t *list, int depth) {
    char *dup = strdup(path);
    if (!dup) return -1;
    const char *dir = dirname(dup);
    int rc = 0;
    for (size_t i = 0; i < json_array_size(list); i++) {
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/%s", dir, json_string_value(json_array_get(list, i)));
        if (run_file(ct, sub, depth + 1) != 0) rc = -1;
    }
    free(dup);
    return rc;
}

static int run_file(counts *ct, const char *path, int depth) {
    json_error_t je;
    json_t *doc = json_load_file(path, 0, &je);
    if (!doc && strstr(je.text, "too big integer")) doc = json_load_file(path, JSON_DECODE_INT_AS_REAL, &je);
    if (!doc || !json_is_array(doc) || depth > 8) {
        fprintf(stderr, "jsonlogic-suite: %s: %s\n", path, doc ? "not a suite" : je.text);
        json_decref(doc);
        ct->failed++;
        return -1;
    }
    bool all_strings = json_array_size(doc) > 0;
    for (size_t i = 0; i < json_array_size(doc); i++)
        if (!json_is_string(json_array_get(doc, i))) all_strings = false;
    int rc = 0;
    if (all_strings) {
        rc = run_index(ct, path, doc, depth);
        json_decref(doc);
        return rc;
    }
    for (size_t i = 0; i < json_array_size(doc); i++) {
        json_t *c = json_array_get(doc, i);
        if (json_is_string(c)) continue;
        if (json_is_array(c) && json_array_size(c) >= 3) {
            /* a 4th element {"error": ...} (differential.js): the reference threw */
            json_t *thrown = json_object_get(json_array_get(c, 3), "error");
            run_case(ct, path, i, NULL, false, json_array_get(c, 0), json_array_get(c, 1), json_array_get(c, 2),
                     thrown ? json_array_get(c, 3) : NULL);
        } else if (json_is_object(c) && json_object_get(c, "rule")) {
            json_t *d = json_object_get(c, "description");
            run_case(ct, path, i, json_is_string(d) ? json_string_value(d) : NULL, true,
                     json_object_get(c, "rule"), json_object_get(c, "data"), json_object_get(c, "result"),
                     json_object_get(c, "error"));
        } else {
            fprintf(stderr, "jsonlogic-suite: %s #%zu: unrecognised case\n", path, i);
            ct->failed++;
        }
    }
    json_decref(doc);
    return rc;
}

int main(int argc, char **argv) {
    counts ct = {0};
    int first = 1;
    if (argc > 1 && strcmp(argv[1], "-v") == 0) { ct.verbose = true; first = 2; }
    if (first >= argc) {
        fprintf(stderr, "usage: jsonlogic-suite [-v] FILE...\n");
        return 2;
    }
    for (int i = first; i < argc; i++) run_file(&ct, argv[i], 0);
    for (int i = 0; i < 8 && ct.why[i][0]; i++) printf("waived %ld: %s\n", ct.why_n[i], ct.why[i]);
    if (ct.waived) printf("%ld passed, %ld failed, %ld waived\n", ct.passed, ct.failed, ct.waived);
    else printf("%ld passed, %ld failed\n", ct.passed, ct.failed);
    return ct.failed == 0 ? 0 : 1;
}
