/* Graph mode: JSON Logic whose string vars are JSONata expressions on the execution
 * context (the real JSONata engine as resolver), while iteration scopes keep plain paths. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "jsonata/jsonata.h"
#include "jsonlogic/jsonlogic.h"
#include "../check_main.h"

/* The resolver graphgate plugs in: compile the path as JSONata once, evaluate it against
 * the context with the per-run pointer handed to native functions. */
static void *r_compile(void *user, const char *path, gg_error *err) {
    return jsonata_compile(*path ? path : "$", user, err);
}
static json_t *r_eval(void *user, void *compiled, json_t *data, void *call_user, gg_error *err) {
    (void)user;
    return jsonata_evaluate(compiled, data, NULL, NULL, call_user, err);
}
static void r_free(void *user, void *compiled) {
    (void)user;
    jsonata_free(compiled);
}

/* $runValue(): a native reading the per-run state, like graphgate's $previousNode(). */
static json_t *fn_run_value(jsonata_call *call, json_t **args, int nargs, void *user, void *call_user, gg_error *err) {
    (void)call; (void)args; (void)nargs; (void)user; (void)err;
    return call_user ? json_incref(call_user) : NULL;
}

static jsonata_env *env;
static jsonlogic_var_resolver resolver;
static json_t *context;

static void setup(void) {
    gg_error err = GG_ERROR_INIT;
    env = jsonata_env_new();
    ck_assert(jsonata_env_register(env, "runValue", NULL, fn_run_value, NULL, &err));
    resolver = (jsonlogic_var_resolver){r_compile, r_eval, r_free, env};
    context = json_loads("{\"entry\":{\"value\":5,\"items\":[1,2,3],\"base\":10,\"groups\":[{\"xs\":[1,2]},{\"xs\":[3]}],"
                         "\"people\":[{\"name\":\"ann\",\"age\":41},{\"name\":\"bob\",\"age\":25}]},"
                         "\"increment_node\":{\"counter\":7}}", 0, NULL);
    ck_assert_ptr_nonnull(context);
}

static void teardown(void) {
    json_decref(context);
    jsonata_env_free(env);
}

/* Compile rule_text in graph mode, apply it to the context; compact JSON or "ERR code". */
static char *graph_apply(const char *rule_text, json_t *call_user) {
    json_t *rule = json_loads(rule_text, JSON_DECODE_ANY, NULL);
    ck_assert_msg(rule != NULL, "bad rule %s", rule_text);
    jsonlogic_options o = {.resolver = &resolver};
    gg_error err = GG_ERROR_INIT;
    char *out;
    jsonlogic_rule *r = jsonlogic_compile(rule, &o, &err);
    json_t *v = r ? jsonlogic_apply(r, context, call_user, &err) : NULL;
    if (v) out = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    else {
        out = malloc(64);
        snprintf(out, 64, "ERR %s", err.code);
    }
    json_decref(v);
    jsonlogic_free(r);
    json_decref(rule);
    gg_error_clear(&err);
    return out;
}

#define EXPECT(rule, want)                                                           \
    do {                                                                             \
        char *got_ = graph_apply(rule, NULL);                                        \
        ck_assert_msg(strcmp(got_, want) == 0, "%s: got %s want %s", rule, got_, want); \
        free(got_);                                                                  \
    } while (0)

START_TEST(string_vars_are_jsonata) {
    EXPECT("{\"var\":\"entry.value\"}", "5");
    EXPECT("{\"var\":\"$.increment_node.counter\"}", "7");
    EXPECT("{\"==\":[{\"var\":\"$count(entry.items)\"},3]}", "true");
    EXPECT("{\">\":[{\"var\":\"$sum(entry.items) * 2\"},11]}", "true");
    EXPECT("{\"var\":\"entry.people[age > 30].name\"}", "\"ann\"");
    EXPECT("{\"var\":{\"cat\":[\"entry\",\".value\"]}}", "5"); /* computed path, compiled at run time */
    EXPECT("{\"missing\":[\"entry.value\",\"entry.nope\"]}", "[\"entry.nope\"]");
}
END_TEST

START_TEST(array_var_defaults) {
    EXPECT("{\"var\":[\"entry.nope\",\"dflt\"]}", "\"dflt\"");
    EXPECT("{\"var\":[\"entry.value\",0]}", "5");
    EXPECT("{\"var\":[\"entry.nope\"]}", "null");
}
END_TEST

START_TEST(iterators_see_the_element) {
    EXPECT("{\"map\":[{\"var\":\"entry.items\"},{\"*\":[{\"var\":\"\"},2]}]}", "[2,4,6]");
    EXPECT("{\"filter\":[{\"var\":\"entry.people\"},{\">\":[{\"var\":\"age\"},30]}]}", "[{\"name\":\"ann\",\"age\":41}]");
    EXPECT("{\"reduce\":[{\"var\":\"entry.items\"},{\"+\":[{\"var\":\"accumulator\"},{\"var\":\"current\"}]},"
           "{\"var\":\"entry.base\"}]}", "16");
    EXPECT("{\"all\":[{\"var\":\"entry.people\"},{\"var\":\"name\"}]}", "true");
    EXPECT("{\"some\":[{\"var\":\"entry.people\"},{\"==\":[{\"var\":\"name\"},\"bob\"]}]}", "true");
    EXPECT("{\"none\":[{\"var\":\"entry.items\"},{\">\":[{\"var\":\"\"},5]}]}", "true");
    /* nested: the inner collection is read from the element with a plain path */
    EXPECT("{\"map\":[{\"var\":\"entry.groups\"},{\"reduce\":[{\"var\":\"xs\"},"
           "{\"+\":[{\"var\":\"accumulator\"},{\"var\":\"current\"}]},0]}]}", "[3,3]");
}
END_TEST

START_TEST(natives_get_the_call_pointer) {
    json_t *run = json_string("from-run");
    char *got = graph_apply("{\"cat\":[{\"var\":\"$runValue()\"},\"!\"]}", run);
    ck_assert_str_eq(got, "\"from-run!\"");
    free(got);
    json_decref(run);
}
END_TEST

START_TEST(jsonata_errors_surface) {
    json_t *rule = json_loads("{\"and\":[true,{\"var\":\"entry.(\"}]}", 0, NULL);
    jsonlogic_options o = {.resolver = &resolver};
    gg_error err = GG_ERROR_INIT;
    ck_assert_ptr_null(jsonlogic_compile(rule, &o, &err));
    ck_assert_msg(err.code[0] == 'S', "expected a JSONata syntax code, got %s", err.code);
    gg_error_clear(&err);
    json_decref(rule);
    char *got = graph_apply("{\"var\":\"$number('x')\"}", NULL); /* run-time JSONata error */
    ck_assert_msg(strncmp(got, "ERR ", 4) == 0, "got %s", got);
    free(got);
}
END_TEST

int main(void) {
    Suite *s = suite_create("jsonlogic-graph");
    TCase *tc = tcase_create("resolver");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, string_vars_are_jsonata);
    tcase_add_test(tc, array_var_defaults);
    tcase_add_test(tc, iterators_see_the_element);
    tcase_add_test(tc, natives_get_the_call_pointer);
    tcase_add_test(tc, jsonata_errors_surface);
    suite_add_tcase(s, tc);
    return gg_check_run(s);
}
