/* jl_bench — graphgate's JSON Logic engine over a tests.json-style file: every rule is
 * compiled once, then all (rule, data) cases are applied round after round for about
 * SECONDS seconds of CPU time (process CPU time, so other load on the machine skews the
 * comparison less). Prints "graphgate <ops/s> <cases> <rounds>".
 *
 *   jl_bench FILE [SECONDS] [apply|test] [serve]
 *
 * With "test", each case is evaluated with jsonlogic_test (truthiness only, what a switch
 * node needs) instead of jsonlogic_apply (JSON result).
 *
 * Before timing, every case's result is checked against the file's expected value (the
 * truthiness of it with "test"); any difference is printed and fails the run, so the
 * figure is never that of wrong answers.
 *
 * With "serve", it times one slice of SECONDS per line read from stdin and prints
 * "<name> <ops/s>" for each: run.sh alternates such slices with jl_bench.js's.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jsonlogic/jsonlogic.h"

static double cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

typedef struct bcase { jsonlogic_rule *rule; json_t *data; json_t *expected; } bcase;

/* JSON equality where 1 and 1.0 are the same number (as in JavaScript). */
static bool same(json_t *a, json_t *b) {
    if (json_is_number(a) && json_is_number(b)) return json_number_value(a) == json_number_value(b);
    if (json_is_array(a) && json_is_array(b)) {
        if (json_array_size(a) != json_array_size(b)) return false;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!same(json_array_get(a, i), json_array_get(b, i))) return false;
        return true;
    }
    if (json_is_object(a) && json_is_object(b)) {
        const char *k;
        json_t *v;
        if (json_object_size(a) != json_object_size(b)) return false;
        json_object_foreach(a, k, v) if (!same(v, json_object_get(b, k))) return false;
        return true;
    }
    return json_equal(a, b);
}

/* 0 when case i gives its expected result, else 1 (printed). */
static int check(const bcase *c, bool test) {
    gg_error err = GG_ERROR_INIT;
    bool ok;
    if (test) {
        int t = jsonlogic_test(c->rule, c->data, NULL, &err);
        ok = t == (int)jsonlogic_truthy(c->expected);
    } else {
        json_t *v = jsonlogic_apply(c->rule, c->data, NULL, &err);
        ok = v && same(v, c->expected);
        json_decref(v);
    }
    if (!ok) {
        char *d = json_dumps(c->expected, JSON_ENCODE_ANY | JSON_COMPACT);
        fprintf(stderr, "jl_bench: result differs from expected %s (%s)\n", d ? d : "?", err.message ? err.message : "");
        free(d);
    }
    gg_error_clear(&err);
    return !ok;
}

/* Apply every case round after round for about seconds of CPU time: ops/s. */
static double slice_rounds(const bcase *cases, size_t n, bool test, double seconds, long *failures, long *rounds_out) {
    long rounds = 0, ops = 0;
    double start = cpu_ms(), now = start;
    while (now - start < seconds * 1000.0) {
        for (size_t i = 0; i < n; i++) {
            gg_error err = GG_ERROR_INIT;
            if (test) {
                if (jsonlogic_test(cases[i].rule, cases[i].data, NULL, &err) < 0) { (*failures)++; gg_error_clear(&err); }
                continue;
            }
            json_t *v = jsonlogic_apply(cases[i].rule, cases[i].data, NULL, &err);
            if (!v) { (*failures)++; gg_error_clear(&err); }
            json_decref(v);
        }
        ops += (long)n;
        rounds++;
        if ((rounds & 15) == 0 || n > 10000) now = cpu_ms();
    }
    now = cpu_ms();
    *rounds_out = rounds;
    return (double)ops / ((now - start) / 1000.0);
}

static double slice(const bcase *cases, size_t n, bool test, double seconds, long *failures) {
    long rounds;
    return slice_rounds(cases, n, test, seconds, failures, &rounds);
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: jl_bench FILE [SECONDS]\n"); return 2; }
    double seconds = argc > 2 ? atof(argv[2]) : 2.0;
    bool test = argc > 3 && strcmp(argv[3], "test") == 0;
    json_error_t je;
    json_t *doc = json_load_file(argv[1], 0, &je);
    if (!json_is_array(doc)) { fprintf(stderr, "jl_bench: %s: %s\n", argv[1], je.text); return 1; }
    size_t n = 0;
    bcase *cases = calloc(json_array_size(doc), sizeof *cases);
    if (!cases) return 1;
    for (size_t i = 0; i < json_array_size(doc); i++) {
        json_t *c = json_array_get(doc, i);
        if (!json_is_array(c) || json_array_size(c) < 3) continue; /* comments */
        gg_error err = GG_ERROR_INIT;
        jsonlogic_rule *r = jsonlogic_compile(json_array_get(c, 0), NULL, &err);
        if (!r) { gg_error_clear(&err); continue; }
        cases[n++] = (bcase){r, json_array_get(c, 1), json_array_get(c, 2)};
    }
    int wrong = 0;
    for (size_t i = 0; i < n; i++) wrong += check(&cases[i], test);
    if (wrong) { fprintf(stderr, "jl_bench: %d wrong results\n", wrong); return 1; }
    const char *name = test ? "graphgate-test" : "graphgate";
    long failures = 0;
    if (argc > 4 && strcmp(argv[4], "serve") == 0) {
        /* paired mode (run.sh): one slice per line read, so the caller can alternate slices
         * of both engines and compare each pair under the same moment's load */
        char line[64];
        setvbuf(stdout, NULL, _IOLBF, 0);
        while (fgets(line, sizeof line, stdin)) printf("%s %.0f\n", name, slice(cases, n, test, seconds, &failures));
    } else {
        long rounds = 0;
        double ops = slice_rounds(cases, n, test, seconds, &failures, &rounds);
        printf("%s %.0f %zu %ld\n", name, ops, n, rounds);
    }
    for (size_t i = 0; i < n; i++) jsonlogic_free(cases[i].rule);
    free(cases);
    json_decref(doc);
    return failures ? 1 : 0;
}
