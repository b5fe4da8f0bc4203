/* cmd_eval.c — `graphgate eval jsonata|jsonlogic`: evaluate one expression or rule
 * against a JSON document from the command line, the way a graph node would. */
#include "cli/cli.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graph/graph.h"
#include "jsonata/jsonata.h"
#include "jsonlogic/jsonlogic.h"

#define EVAL_MAX_INPUT (64L * 1024 * 1024) /* largest expression or input file read */

static const char eval_usage[] =
    "usage: graphgate eval jsonata [--bindings JSON] [--history FILE] [--file EXPR_FILE | EXPR] [INPUT.json]\n"
    "       graphgate eval jsonlogic [--compat] RULE_JSON [DATA.json]\n"
    "\n"
    "jsonata    evaluate a JSONata 2.2 expression against INPUT.json (or stdin when it is\n"
    "           not a terminal); prints the result as JSON, nothing when it is undefined.\n"
    "           --bindings JSON  an object of extra $variables\n"
    "           --file FILE      read the expression from FILE\n"
    "           --history FILE   a graph run's node records [{nodeId, output}, ...] in execution\n"
    "                            order (run --trace lines in an array, or executions show --json):\n"
    "                            $previousNode, $executionCount, $nodeExecution and\n"
    "                            $nodeExecutions read them, and without INPUT.json the input is\n"
    "                            the context {nodeId: latest output} a transform node would see\n"
    "jsonlogic  apply a JSON Logic rule (json-logic-js 2.0.5 semantics) to DATA.json (or\n"
    "           stdin when it is not a terminal); prints the result as JSON.\n"
    "           --compat         the compat suites' semantics (val, ??, try, throw, ...)\n"
    "\n"
    "Use - as the file name for stdin. Errors go to stderr; exit 1 on evaluation errors,\n"
    "2 on usage errors or unreadable input.\n";

static bool is_help(const char *a) { return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0; }

/* Read a whole stream (bounded). NULL on error or when too large. */
static char *read_stream(FILE *f, size_t *len) {
    gg_strbuf b = GG_STRBUF_INIT;
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (b.len + n > (size_t)EVAL_MAX_INPUT || !gg_strbuf_append(&b, chunk, n)) { gg_strbuf_free(&b); return NULL; }
    }
    if (ferror(f)) { gg_strbuf_free(&b); return NULL; }
    *len = b.len;
    char *s = gg_strbuf_take(&b);
    return s ? s : calloc(1, 1);
}

static char *read_path(const char *path, size_t *len) {
    if (strcmp(path, "-") == 0) return read_stream(stdin, len);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *s = read_stream(f, len);
    fclose(f);
    return s;
}

/* Parse JSON text (any value). Integers too big for 64 bits are read as doubles. */
static json_t *parse_json(const char *text, size_t len, json_error_t *je) {
    json_t *v = json_loadb(text, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, je);
    if (!v && strstr(je->text, "too big integer"))
        v = json_loadb(text, len, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, je);
    return v;
}

/* The input document: a file, "-", or stdin when it is not a terminal. *present is false
 * when there is no input at all (undefined). Returns false (message printed) on error. */
static bool load_input(const char *cmd, const char *path, json_t **out, bool *present) {
    *out = NULL;
    *present = false;
    if (!path && isatty(STDIN_FILENO)) return true;
    size_t len = 0;
    char *text = read_path(path ? path : "-", &len);
    if (!text) {
        fprintf(stderr, "graphgate eval %s: cannot read %s\n", cmd, path ? path : "stdin");
        return false;
    }
    size_t i = 0;
    while (i < len && (text[i] == ' ' || text[i] == '\n' || text[i] == '\r' || text[i] == '\t')) i++;
    if (i == len && !path) { free(text); return true; } /* empty stdin: no input */
    json_error_t je;
    *out = parse_json(text, len, &je);
    free(text);
    if (!*out) {
        fprintf(stderr, "graphgate eval %s: %s: line %d column %d: %s\n", cmd, path ? path : "stdin", je.line,
                je.column, je.text);
        return false;
    }
    *present = true;
    return true;
}

static int print_json(json_t *v) {
    char *s = jsonata_dump(v, 0);
    if (!s) {
        fprintf(stderr, "graphgate eval: cannot serialize the result\n");
        return GG_EXIT_FAIL;
    }
    printf("%s\n", s);
    free(s);
    return GG_EXIT_OK;
}

static void print_error(const gg_error *e) {
    fprintf(stderr, "%s: %s", e->code, e->message ? e->message : "");
    if (e->position >= 0) fprintf(stderr, " (position %d)", e->position);
    else if (e->path) fprintf(stderr, " (at %s)", e->path);
    fputc('\n', stderr);
}

/* --history FILE as a run's history; NULL (message printed) when unreadable or malformed. */
static gg_graph_history *load_history(const char *path) {
    size_t len = 0;
    char *text = read_path(path, &len);
    if (!text) {
        fprintf(stderr, "graphgate eval jsonata: cannot read %s\n", path);
        return NULL;
    }
    json_error_t je;
    json_t *v = parse_json(text, len, &je);
    free(text);
    if (!v) {
        fprintf(stderr, "graphgate eval jsonata: %s: line %d column %d: %s\n", path, je.line, je.column, je.text);
        return NULL;
    }
    gg_error err = GG_ERROR_INIT;
    gg_graph_history *h = gg_graph_history_load(v, &err);
    if (!h) fprintf(stderr, "graphgate eval jsonata: %s: %s\n", path, err.message);
    gg_error_clear(&err);
    json_decref(v);
    return h;
}

static int eval_jsonata(int argc, char **argv) {
    const char *bindings_text = NULL, *expr_file = NULL, *expr = NULL, *input = NULL, *history_file = NULL;
    for (int i = 1; i < argc; i++) {
        if (is_help(argv[i])) { fputs(eval_usage, stdout); return GG_EXIT_OK; }
        if (strcmp(argv[i], "--bindings") == 0 && i + 1 < argc) bindings_text = argv[++i];
        else if (strcmp(argv[i], "--file") == 0 && i + 1 < argc) expr_file = argv[++i];
        else if (strcmp(argv[i], "--history") == 0 && i + 1 < argc) history_file = argv[++i];
        else if (argv[i][0] == '-' && argv[i][1] == '-') {
            fprintf(stderr, "graphgate eval jsonata: unknown or incomplete option '%s'\n%s", argv[i], eval_usage);
            return GG_EXIT_USAGE;
        } else if (!expr && !expr_file) expr = argv[i];
        else if (!input) input = argv[i];
        else { fprintf(stderr, "graphgate eval jsonata: unexpected argument '%s'\n", argv[i]); return GG_EXIT_USAGE; }
    }
    if (!expr && !expr_file) { fprintf(stderr, "graphgate eval jsonata: missing expression\n%s", eval_usage); return GG_EXIT_USAGE; }
    char *expr_text = NULL;
    if (expr_file) {
        size_t len;
        if (!(expr_text = read_path(expr_file, &len))) {
            fprintf(stderr, "graphgate eval jsonata: cannot read %s\n", expr_file);
            return GG_EXIT_USAGE;
        }
        expr = expr_text;
    }
    json_t *bindings = NULL, *in = NULL;
    gg_graph_history *hist = NULL;
    bool present;
    int rc = GG_EXIT_USAGE;
    if (history_file && !(hist = load_history(history_file))) goto out;
    if (bindings_text) {
        json_error_t je;
        bindings = parse_json(bindings_text, strlen(bindings_text), &je);
        if (!json_is_object(bindings)) {
            fprintf(stderr, "graphgate eval jsonata: --bindings must be a JSON object%s%s\n", bindings ? "" : ": ",
                    bindings ? "" : je.text);
            goto out;
        }
    }
    if (!load_input("jsonata", input, &in, &present)) goto out;
    if (hist && !present) { /* what a transform node after those records sees as $ */
        in = json_incref(gg_graph_history_context(hist));
        present = in != NULL;
    }
    gg_error err = GG_ERROR_INIT;
    /* the graph's environment: the history functions read --history or say they need it */
    jsonata_env *env = gg_graph_expr_env(hist != NULL, &err);
    jsonata_expr *e = env ? jsonata_compile(expr, env, &err) : NULL;
    json_t *r = e ? gg_graph_history_evaluate(hist, e, present ? in : NULL, bindings, &err) : NULL;
    if (gg_error_is_set(&err)) { print_error(&err); rc = GG_EXIT_FAIL; }
    else rc = r ? print_json(r) : GG_EXIT_OK; /* undefined prints nothing */
    json_decref(r);
    jsonata_free(e);
    jsonata_env_free(env);
    gg_error_clear(&err);
out:
    gg_graph_history_free(hist);
    json_decref(bindings);
    json_decref(in);
    free(expr_text);
    return rc;
}

static int eval_jsonlogic(int argc, char **argv) {
    const char *rule_text = NULL, *input = NULL;
    jsonlogic_options opts = {0};
    for (int i = 1; i < argc; i++) {
        if (is_help(argv[i])) { fputs(eval_usage, stdout); return GG_EXIT_OK; }
        if (strcmp(argv[i], "--compat") == 0) opts.compat_semantics = true;
        else if (argv[i][0] == '-' && argv[i][1] == '-') {
            fprintf(stderr, "graphgate eval jsonlogic: unknown option '%s'\n%s", argv[i], eval_usage);
            return GG_EXIT_USAGE;
        } else if (!rule_text) rule_text = argv[i];
        else if (!input) input = argv[i];
        else { fprintf(stderr, "graphgate eval jsonlogic: unexpected argument '%s'\n", argv[i]); return GG_EXIT_USAGE; }
    }
    if (!rule_text) { fprintf(stderr, "graphgate eval jsonlogic: missing rule\n%s", eval_usage); return GG_EXIT_USAGE; }
    json_error_t je;
    json_t *rule = parse_json(rule_text, strlen(rule_text), &je);
    if (!rule) {
        fprintf(stderr, "graphgate eval jsonlogic: rule is not JSON: column %d: %s\n", je.column, je.text);
        return GG_EXIT_USAGE;
    }
    json_t *data = NULL;
    bool present;
    if (!load_input("jsonlogic", input, &data, &present)) { json_decref(rule); return GG_EXIT_USAGE; }
    gg_error err = GG_ERROR_INIT;
    jsonlogic_rule *r = jsonlogic_compile(rule, &opts, &err);
    json_t *res = r ? jsonlogic_apply(r, data, NULL, &err) : NULL;
    int rc = res ? print_json(res) : GG_EXIT_FAIL;
    if (!res) print_error(&err);
    json_decref(res);
    jsonlogic_free(r);
    json_decref(rule);
    json_decref(data);
    gg_error_clear(&err);
    return rc;
}

/* `graphgate eval jsonata ...` / `graphgate eval jsonlogic ...` */
int gg_cmd_eval(int argc, char **argv) {
    if (argc < 2) { fputs(eval_usage, stderr); return GG_EXIT_USAGE; }
    if (is_help(argv[1])) { fputs(eval_usage, stdout); return GG_EXIT_OK; }
    if (strcmp(argv[1], "jsonata") == 0) return eval_jsonata(argc - 1, argv + 1);
    if (strcmp(argv[1], "jsonlogic") == 0) return eval_jsonlogic(argc - 1, argv + 1);
    fprintf(stderr, "graphgate eval: unknown language '%s' (jsonata or jsonlogic)\n%s", argv[1], eval_usage);
    return GG_EXIT_USAGE;
}
