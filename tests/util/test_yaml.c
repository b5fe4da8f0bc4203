/* The YAML readers' one scalar rule: the core-schema resolver on its own, then the same
 * scalar text read through a graph (ydoc), a node spec (specs_doc) and the configuration
 * file, which must give one answer — the disagreements issue 18 found (0x1F read as 31 by
 * graphs and as a string by specs; .inf an error in one and a string in the other) stay
 * fixed. Also the bounds every reader must keep: deep nesting, alias bombs, duplicate keys. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/app.h"
#include "graph/internal.h"
#include "specs/internal.h"
#include "util/util.h"
#include "../check_main.h"

/* The resolver's answer as compact JSON, or "error:LINE" text for a refused scalar. */
static char *plain(const char *s) {
    gg_error e = GG_ERROR_INIT;
    json_t *j = gg_yaml_plain_scalar(s, strlen(s), &e);
    char *out;
    if (!j) {
        ck_assert_str_eq(e.code, "yaml");
        out = strdup("error");
    } else {
        out = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT);
    }
    json_decref(j);
    gg_error_clear(&e);
    return out;
}

static const struct { const char *in, *want; } cases[] = {
    {"0x1F", "31"}, {"0o17", "15"}, {"017", "17"}, {"-12", "-12"}, {"+7", "7"},
    {"1.5", "1.5"}, {".5", "0.5"}, {"1e3", "1000.0"}, {"-1.25e-1", "-0.125"},
    {".inf", "error"}, {"-.Inf", "error"}, {"+.INF", "error"}, {".nan", "error"}, {".NaN", "error"},
    {"1e999", "error"}, {"0xFFFFFFFFFFFFFFFFF", "error"},
    {"~", "null"}, {"null", "null"}, {"NULL", "null"}, {"", "null"},
    {"true", "true"}, {"False", "false"}, {"TRUE", "true"},
    {"yes", "\"yes\""}, {"no", "\"no\""}, {"on", "\"on\""}, {"off", "\"off\""}, {"y", "\"y\""},
    {"0x", "\"0x\""}, {"0xG1", "\"0xG1\""}, {"0o8", "\"0o8\""}, {"1_000", "\"1_000\""}, {"inf", "\"inf\""},
    {"nan", "\"nan\""}, {"0b101", "\"0b101\""}, {"1.2.3", "\"1.2.3\""}, {"e3", "\"e3\""}, {".", "\".\""},
};

START_TEST(core_schema_scalars) {
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = plain(cases[i].in);
        ck_assert_msg(strcmp(got, cases[i].want) == 0, "'%s': got %s, want %s", cases[i].in, got, cases[i].want);
        free(got);
    }
}
END_TEST

/* `v: TEXT` through the graph reader: the value as compact JSON, or "error@L:C". */
static char *via_graph(const char *text) {
    char src[256];
    snprintf(src, sizeof src, "v: %s\n", text);
    ydoc d;
    gg_error e = GG_ERROR_INIT;
    char *out = NULL;
    json_t *j = NULL;
    if (gg_yaml_doc_parse(&d, src, strlen(src), 0, &e)) {
        j = gg_yaml_to_json(d.root, &e);
        gg_yaml_doc_free(&d);
    }
    if (j) out = json_dumps(json_object_get(j, "v"), JSON_ENCODE_ANY | JSON_COMPACT);
    else if (asprintf(&out, "error@%d:%d", e.line, e.column) < 0) out = NULL;
    json_decref(j);
    gg_error_clear(&e);
    return out;
}

static char *via_spec(const char *text) {
    char src[256];
    snprintf(src, sizeof src, "v: %s\n", text);
    specs_doc d;
    gg_error e = GG_ERROR_INIT;
    char *out = NULL;
    if (specs_yaml_parse(src, strlen(src), &d, &e)) {
        out = json_dumps(json_object_get(d.root, "v"), JSON_ENCODE_ANY | JSON_COMPACT);
        specs_doc_free(&d);
    } else if (asprintf(&out, "error@%d:%d", e.line, e.column) < 0) {
        out = NULL;
    }
    gg_error_clear(&e);
    return out;
}

START_TEST(graph_and_spec_read_a_scalar_alike) {
    static const char *const texts[] = {"0x1F", "0o17", ".inf", ".nan", "~", "\"0x1F\"", "'.inf'", "yes", "no",
                                        "1e3", "12", "true", "hello"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        char *g = via_graph(texts[i]), *s = via_spec(texts[i]);
        ck_assert_msg(g && s && strcmp(g, s) == 0, "'%s': graph %s, spec %s", texts[i], g, s);
        free(g);
        free(s);
    }
    char *g = via_graph("0x1F"), *q = via_graph("\"0x1F\""), *inf = via_graph(".inf");
    ck_assert_str_eq(g, "31");
    ck_assert_str_eq(q, "\"0x1F\"");
    ck_assert_str_eq(inf, "error@1:4"); /* positioned at the scalar */
    free(g);
    free(q);
    free(inf);
}
END_TEST

/* workers: TEXT in a configuration file: the int the key got, or -1 when refused. */
static int via_config(const char *text) {
    char path[] = "gg_yaml_cfg_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    char src[128];
    int n = snprintf(src, sizeof src, "workers: %s\n", text);
    ck_assert_int_eq(write(fd, src, (size_t)n), n);
    close(fd);
    gg_config c;
    gg_error e = GG_ERROR_INIT;
    ck_assert(gg_config_init(&c, &e));
    int got = gg_config_load_file(&c, path, &e) ? c.workers : -1;
    gg_config_free(&c);
    gg_error_clear(&e);
    unlink(path);
    return got;
}

START_TEST(config_reads_numbers_like_graphs) {
    ck_assert_int_eq(via_config("0x1F"), 31);
    ck_assert_int_eq(via_config("0o17"), 15);
    ck_assert_int_eq(via_config("12"), 12);
    ck_assert_int_eq(via_config(".inf"), -1);
    ck_assert_int_eq(via_config(".nan"), -1);
    ck_assert_int_eq(via_config("yes"), -1);
    char *g = via_graph("0o17");
    ck_assert_str_eq(g, "15");
    free(g);
}
END_TEST

START_TEST(bounds_hold_in_every_reader) {
    /* nesting past the limit: refused with a position by both */
    char deep[2048] = "";
    for (int i = 0; i < 600; i++) strcat(deep, "[");
    ydoc d;
    gg_error e = GG_ERROR_INIT;
    ck_assert(!gg_yaml_doc_parse(&d, deep, strlen(deep), 0, &e));
    ck_assert_int_gt(e.line, 0);
    gg_error_clear(&e);
    specs_doc sd;
    ck_assert(!specs_yaml_parse(deep, strlen(deep), &sd, &e));
    ck_assert_int_gt(e.line, 0);
    gg_error_clear(&e);
    /* an alias bomb: both readers bound the expansion the same way */
    const char *bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
                       "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                       "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
                       "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                       "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
                       "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
                       "g: [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n";
    ck_assert(!gg_yaml_doc_parse(&d, bomb, strlen(bomb), 0, &e));
    ck_assert_str_eq(e.code, "yaml_alias");
    ck_assert_int_gt(e.line, 0);
    int bomb_line = e.line;
    gg_error_clear(&e);
    ck_assert(!specs_yaml_parse(bomb, strlen(bomb), &sd, &e));
    ck_assert_str_eq(e.code, "yaml_alias");
    ck_assert_int_eq(e.line, bomb_line);
    gg_error_clear(&e);
    /* duplicate keys: specs refuse at the second key's position; graphs report both */
    const char *dup = "k: 1\nk: 2\n";
    ck_assert(!specs_yaml_parse(dup, strlen(dup), &sd, &e));
    ck_assert_int_eq(e.line, 2);
    gg_error_clear(&e);
    ck_assert(gg_yaml_doc_parse(&d, dup, strlen(dup), 0, &e));
    long *first = gg_yaml_duplicate_keys(d.root);
    ck_assert_ptr_nonnull(first);
    ck_assert_int_eq(first[0], -1);
    ck_assert_int_eq(first[1], 0);
    ck_assert_int_eq(d.root->items[0]->line, 1);
    ck_assert_int_eq(d.root->items[2]->line, 2);
    free(first);
    gg_yaml_doc_free(&d);
}
END_TEST

#define RUN_ON_ERROR                                                                                           \
    "YAML syntax error: this line needs a ':' after its key (a mapping entry is written 'key: value'; without it " \
    "the line runs on into the next one)"
#define TAB_ERROR "YAML syntax error: tab characters are not allowed for indentation in YAML (use spaces)"

/* src through the graph reader: "CODE@L:C MESSAGE" of its syntax error. */
static char *yaml_error(const char *src) {
    ydoc d;
    gg_error e = GG_ERROR_INIT;
    char *out = NULL;
    if (gg_yaml_doc_parse(&d, src, strlen(src), 0, &e)) gg_yaml_doc_free(&d);
    else if (asprintf(&out, "%s@%d:%d %s", e.code, e.line, e.column, e.message) < 0) out = NULL;
    gg_error_clear(&e);
    return out;
}

/* Syntax errors point where the writer must look: a tab used as indentation is named at the
 * tab; a key without its ':' at the key's line, not at a later line where libyaml gives up. */
START_TEST(syntax_errors_point_at_the_mistake) {
    static const char *const cases[][2] = {
        {"a: 1\nb:\n\tc: 2\n", "yaml@3:1 " TAB_ERROR},
        {"a:\n  b: 1\n  \tc: 2\n", "yaml@3:3 " TAB_ERROR},
        {"a:\n  - id: x\n    next exit\n    type: t\n",
         "yaml@3:5 YAML syntax error: could not find expected ':' after the key that starts here (a mapping entry is "
         "written 'key: value')"},
        /* the next line is a key at the same indentation: the first one runs on into it */
        {"a:\n  b 1\n  c: 2\n", "yaml@2:3 " RUN_ON_ERROR},
        {"a:\n  b 1\n\n  # note\n  c: 2\n", "yaml@2:3 " RUN_ON_ERROR},
        /* other errors keep libyaml's words and mark */
        {"a:\n  b: 1\n  c: 2: 3\n", "yaml@3:7 YAML syntax error: mapping values are not allowed in this context"},
        {"a:\n  b: 1\n  - x\n", "yaml@3:3 YAML syntax error: did not find expected key while parsing a block mapping"},
        {"a: {b: 1\nc: 2\n",
         "yaml@2:2 YAML syntax error: did not find expected ',' or '}' while parsing a flow mapping"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = yaml_error(cases[i][0]);
        ck_assert_msg(got && !strcmp(got, cases[i][1]), "case %zu: %s", i, got ? got : "(parsed)");
        free(got);
    }
    char *fine = yaml_error("a:\tb\n"); /* a tab that is not indentation is YAML */
    ck_assert_ptr_null(fine);
}
END_TEST

int main(void) {
    Suite *s = suite_create("yaml");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, core_schema_scalars);
    tcase_add_test(tc, graph_and_spec_read_a_scalar_alike);
    tcase_add_test(tc, config_reads_numbers_like_graphs);
    tcase_add_test(tc, bounds_hold_in_every_reader);
    tcase_add_test(tc, syntax_errors_point_at_the_mistake);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return gg_check_run(s);
}
