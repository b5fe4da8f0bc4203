/* jn_bench.c — the C side of bench/jsonata/run.sh: for each expression of a TSV file
 * (name, input, expression) compile once and evaluate repeatedly for a time budget;
 * print "name<TAB>evals/s<TAB>result" per line. The input document is converted to the
 * engine's value type once, as jsonata-js also receives an already-parsed object.
 *   jn_bench EXPRS.tsv DOC.json DATASETS_DIR MS_PER_EXPR [--check]
 * input column: "doc" (DOC.json), "-" (undefined) or a dataset name in DATASETS_DIR. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonata/core.h"
#include "jsonata/jsonata.h"

static jn_value *load_input(const char *which, const char *doc, const char *dsdir,
                            jn_value *docval) {
    if (!strcmp(which, "-")) return NULL;
    if (!strcmp(which, "doc")) return jn_incref(docval);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.json", dsdir, which);
    json_error_t je;
    json_t *j = json_load_file(path, JSON_DECODE_ANY, &je);
    if (!j) { fprintf(stderr, "cannot load %s: %s\n", path, je.text); return NULL; }
    jn_value *v = jn_from_json(j);
    json_decref(j);
    (void)doc;
    return v;
}

/* One evaluation; returns the result rendered as JSON (or "ERR code") when want_text. */
static char *eval_once(const jsonata_expr *e, jn_value *in, bool want_text, bool *failed) {
    gg_error err = GG_ERROR_INIT;
    jn_value *r = jn_evaluate_ast(e->ast, jn_incref(in), NULL, e->env, NULL, NULL, &err); /* consumes input */
    char *text = NULL;
    *failed = gg_error_is_set(&err);
    if (want_text) {
        if (*failed) {
            size_t n = strlen(err.code) + 8;
            text = malloc(n);
            if (text) snprintf(text, n, "ERR %s", err.code);
        } else if (!r) text = strdup("undefined");
        else {
            json_t *j = jn_to_json(r);
            text = jsonata_dump(j, 0);
            json_decref(j);
        }
    }
    jn_decref(r);
    gg_error_clear(&err);
    return text;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: jn_bench EXPRS.tsv DOC.json DATASETS_DIR MS [--check]\n");
        return 2;
    }
    bool check = argc > 5 && !strcmp(argv[5], "--check");
    double budget = atof(argv[4]);
    json_error_t je;
    json_t *docj = json_load_file(argv[2], 0, &je);
    if (!docj) { fprintf(stderr, "cannot load %s: %s\n", argv[2], je.text); return 1; }
    jn_value *doc = jn_from_json(docj);
    json_decref(docj);
    FILE *f = fopen(argv[1], "r");
    if (!f || !doc) { fprintf(stderr, "cannot read %s\n", argv[1]); return 1; }
    char line[8192];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (!line[0] || line[0] == '#') continue;
        char *name = line, *input = strchr(line, '\t');
        if (!input) continue;
        *input++ = '\0';
        char *expr = strchr(input, '\t');
        if (!expr) continue;
        *expr++ = '\0';
        gg_error err = GG_ERROR_INIT;
        jsonata_expr *e = jsonata_compile(expr, NULL, &err);
        if (!e) {
            printf("%s\t0\tERR %s\n", name, err.code);
            gg_error_clear(&err);
            continue;
        }
        jn_value *in = load_input(input, argv[2], argv[3], doc);
        bool failed = false;
        char *text = eval_once(e, in, true, &failed);
        long iters = 0;
        if (!check) { /* same warm-up as the node side (caches, allocator) */
            double w0 = gg_now_ms();
            while (gg_now_ms() - w0 < budget / 3) free(eval_once(e, in, false, &failed));
        }
        double t0 = gg_now_ms(), t = t0;
        if (!check) {
            long batch = 1;
            while (t - t0 < budget) {
                for (long k = 0; k < batch; k++) free(eval_once(e, in, false, &failed));
                iters += batch;
                t = gg_now_ms();
                if (t - t0 < budget / 10) batch *= 2;
            }
        }
        double rate = iters > 0 ? iters / ((t - t0) / 1000.0) : 0;
        printf("%s\t%.0f\t%s\n", name, rate, text ? text : "?");
        fflush(stdout);
        free(text);
        jn_decref(in);
        jsonata_free(e);
    }
    fclose(f);
    jn_decref(doc);
    return 0;
}
