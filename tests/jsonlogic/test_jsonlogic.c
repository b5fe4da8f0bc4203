/* Unit tests for the JSON Logic API: compile errors, depth bound, custom operations,
 * truthiness, error values, immutability of compiled rules and concurrent use. */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "jsonlogic/jsonlogic.h"
#include "../check_main.h"

/* Apply rule text to data text; returns the compact JSON of the result or
 * "ERR <code>" / "COMPILE <code>". Caller frees. */
static char *run_opts(const char *rule_text, const char *data_text, const jsonlogic_options *o) {
    json_error_t je;
    json_t *rule = json_loads(rule_text, JSON_DECODE_ANY, &je);
    ck_assert_msg(rule != NULL, "bad rule text %s", rule_text);
    json_t *data = data_text ? json_loads(data_text, JSON_DECODE_ANY, &je) : NULL;
    gg_error err = GG_ERROR_INIT;
    char *out = NULL;
    jsonlogic_rule *r = jsonlogic_compile(rule, o, &err);
    if (!r) {
        out = malloc(strlen(err.code) + 10);
        sprintf(out, "COMPILE %s", err.code);
    } else {
        json_t *v = jsonlogic_apply(r, data, NULL, &err);
        if (!v) {
            out = malloc(strlen(err.code) + 10);
            sprintf(out, "ERR %s", err.code);
        } else {
            out = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
            json_decref(v);
        }
    }
    jsonlogic_free(r);
    json_decref(rule);
    json_decref(data);
    gg_error_clear(&err);
    return out;
}

static char *run(const char *rule_text, const char *data_text) { return run_opts(rule_text, data_text, NULL); }

#define CHECK(rule, data, want)                                                                   \
    do {                                                                                          \
        const char *data_ = data;                                                                 \
        char *got_ = run(rule, data_);                                                            \
        ck_assert_msg(strcmp(got_, want) == 0, "%s on %s: got %s want %s", rule,                  \
                      data_ ? data_ : "(none)", got_, want);                                      \
        free(got_);                                                                               \
    } while (0)

START_TEST(unknown_operation_is_a_compile_error_with_path) {
    json_t *rule = json_loads("{\"and\":[true,{\"frobnicate\":[1]}]}", 0, NULL);
    gg_error err = GG_ERROR_INIT;
    ck_assert_ptr_null(jsonlogic_compile(rule, NULL, &err));
    ck_assert_str_eq(err.code, "unknown_operation");
    ck_assert_ptr_nonnull(strstr(err.message, "frobnicate"));
    ck_assert_str_eq(err.path, "/and/1");
    gg_error_clear(&err);
    json_decref(rule);
}
END_TEST

START_TEST(compat_operators_only_in_compat_mode) {
    char *got = run("{\"val\":\"a\"}", "{\"a\":1}");
    ck_assert_str_eq(got, "COMPILE unknown_operation");
    free(got);
    jsonlogic_options o = {.compat_semantics = true};
    got = run_opts("{\"val\":\"a\"}", "{\"a\":1}", &o);
    ck_assert_str_eq(got, "1");
    free(got);
}
END_TEST

static json_t *nest(const char *op, int depth) {
    json_t *r = json_true();
    for (int i = 0; i < depth; i++) r = json_pack("{so}", op, r);
    return r;
}

START_TEST(depth_is_bounded) {
    gg_error err = GG_ERROR_INIT;
    json_t *deep = nest("!", 5000);
    ck_assert_ptr_null(jsonlogic_compile(deep, NULL, &err));
    ck_assert_str_eq(err.code, "depth_exceeded");
    gg_error_clear(&err);
    json_decref(deep);

    json_t *ok = nest("!!", 200);
    jsonlogic_rule *r = jsonlogic_compile(ok, NULL, &err);
    ck_assert_ptr_nonnull(r);
    json_t *v = jsonlogic_apply(r, NULL, NULL, &err);
    ck_assert(json_is_true(v));
    json_decref(v);
    jsonlogic_free(r);

    jsonlogic_options o = {.max_depth = 50};
    ck_assert_ptr_null(jsonlogic_compile(ok, &o, &err));
    ck_assert_str_eq(err.code, "depth_exceeded");
    gg_error_clear(&err);
    json_decref(ok);
}
END_TEST

START_TEST(truthiness) {
    const char *falsy[] = {"[]", "\"\"", "0", "0.0", "null", "false"};
    const char *truthy[] = {"[0]", "\"0\"", "1", "-1", "{}", "true", "\" \""};
    for (size_t i = 0; i < sizeof falsy / sizeof *falsy; i++) {
        json_t *v = json_loads(falsy[i], JSON_DECODE_ANY, NULL);
        ck_assert_msg(!jsonlogic_truthy(v), "%s should be falsy", falsy[i]);
        json_decref(v);
    }
    for (size_t i = 0; i < sizeof truthy / sizeof *truthy; i++) {
        json_t *v = json_loads(truthy[i], JSON_DECODE_ANY, NULL);
        ck_assert_msg(jsonlogic_truthy(v), "%s should be truthy", truthy[i]);
        json_decref(v);
    }
    ck_assert(!jsonlogic_truthy(NULL));
    CHECK("{\"!!\":[{\"+\":\"x\"}]}", NULL, "false"); /* NaN is falsy */
    CHECK("{\"if\":[[],\"y\",\"n\"]}", NULL, "\"n\"");
}
END_TEST

static json_t *op_twice(json_t **args, int nargs, json_t *data, void *user, gg_error *err) {
    int *calls = user;
    __atomic_add_fetch(calls, 1, __ATOMIC_RELAXED);
    if (nargs != 1 || !json_is_number(args[0])) {
        gg_error_set(err, "bad_twice", "twice needs one number");
        return NULL;
    }
    return json_real(2 * json_number_value(args[0]));
}

static json_t *op_data_key(json_t **args, int nargs, json_t *data, void *user, gg_error *err) {
    (void)user;
    (void)err;
    if (nargs < 1 || !json_is_string(args[0]) || !json_is_object(data)) return NULL; /* -> null */
    return json_incref(json_object_get(data, json_string_value(args[0])));
}

START_TEST(custom_operations) {
    int calls = 0;
    jsonlogic_ops *ops = jsonlogic_ops_new();
    ck_assert(jsonlogic_ops_add(ops, "twice", op_twice, &calls));
    ck_assert(jsonlogic_ops_add(ops, "key", op_data_key, NULL));
    ck_assert(!jsonlogic_ops_add(ops, "if", op_twice, NULL)); /* control operations are reserved */
    ck_assert(!jsonlogic_ops_add(ops, "map", op_twice, NULL));
    ck_assert(jsonlogic_ops_add(ops, "+", op_twice, &calls)); /* plain operations may be replaced */
    jsonlogic_options o = {.ops = ops};
    json_t *rule = json_loads("{\"map\":[{\"var\":\"xs\"},{\"twice\":{\"+\":[{\"var\":\"\"}]}}]}", 0, NULL);
    gg_error err = GG_ERROR_INIT;
    jsonlogic_rule *r = jsonlogic_compile(rule, &o, &err);
    ck_assert_ptr_nonnull(r);
    jsonlogic_ops_free(ops); /* the compiled rule keeps what it needs */
    json_t *data = json_loads("{\"xs\":[1,2.5]}", 0, NULL);
    json_t *v = jsonlogic_apply(r, data, NULL, &err);
    char *s = json_dumps(v, JSON_COMPACT);
    ck_assert_str_eq(s, "[4,10]");
    ck_assert_int_eq(calls, 4);
    free(s);
    json_decref(v);
    jsonlogic_free(r);
    json_decref(rule);
    json_decref(data);

    /* custom errors come back as values; custom ops see the current data */
    ops = jsonlogic_ops_new();
    jsonlogic_ops_add(ops, "twice", op_twice, &calls);
    jsonlogic_ops_add(ops, "key", op_data_key, NULL);
    o.ops = ops;
    char *got = run_opts("{\"twice\":[\"a\"]}", NULL, &o);
    ck_assert_str_eq(got, "ERR bad_twice");
    free(got);
    got = run_opts("{\"map\":[{\"var\":\"xs\"},{\"key\":\"n\"}]}", "{\"xs\":[{\"n\":1},{\"m\":2}]}", &o);
    ck_assert_str_eq(got, "[1,null]");
    free(got);
    jsonlogic_ops_free(ops);
}
END_TEST

START_TEST(runtime_errors_are_values) {
    CHECK("{\"*\":[]}", NULL, "ERR type_error"); /* json-logic-js: reduce of empty array */
    jsonlogic_options o = {.compat_semantics = true};
    const char *cases[][2] = {{"{\"+\":[\"x\",1]}", "ERR nan"},
                              {"{\"-\":[]}", "ERR invalid_arguments"},
                              {"{\"throw\":\"boom\"}", "ERR thrown"},
                              {"{\"try\":[{\"throw\":\"boom\"},{\"val\":\"type\"}]}", "\"boom\""}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *got = run_opts(cases[i][0], NULL, &o);
        ck_assert_msg(strcmp(got, cases[i][1]) == 0, "%s: got %s", cases[i][0], got);
        free(got);
    }
    json_t *rule = json_loads("{\"throw\":{\"val\":\"e\"}}", 0, NULL);
    json_t *data = json_loads("{\"e\":{\"type\":\"Denied\"}}", 0, NULL);
    gg_error err = GG_ERROR_INIT;
    jsonlogic_rule *r = jsonlogic_compile(rule, &o, &err);
    ck_assert_ptr_nonnull(r);
    ck_assert_ptr_null(jsonlogic_apply(r, data, NULL, &err));
    json_decref(data);
    ck_assert_str_eq(jsonlogic_error_type(&err), "Denied");
    gg_error_clear(&err);
    ck_assert_ptr_null(jsonlogic_error_type(&err));
    jsonlogic_free(r);
    json_decref(rule);
}
END_TEST

START_TEST(javascript_coercions) {
    CHECK("{\"cat\":[1.5,\" \",0.1,\" \",1e21,\" \",[1,[2,null]],\" \",null]}", NULL, "\"1.5 0.1 1e+21 1,2, \"");
    CHECK("{\"+\":[\"3px\",\" 4 \"]}", NULL, "7");       /* parseFloat */
    CHECK("{\"-\":[\"3px\",1]}", NULL, "null");           /* ToNumber: NaN prints as null */
    CHECK("{\"==\":[[1],\"1\"]}", NULL, "true");
    CHECK("{\"==\":[null,0]}", NULL, "false");
    CHECK("{\"<\":[\"10\",\"9\"]}", NULL, "true");        /* string comparison */
    CHECK("{\"<\":[\"10\",9]}", NULL, "false");
    CHECK("{\"substr\":[\"h\\u00e9llo\\ud83d\\ude00x\",5,2]}", NULL, "\"\xF0\x9F\x98\x80\"");
    CHECK("{\"var\":\"s.length\"}", "{\"s\":\"\\ud83d\\ude00a\"}", "3"); /* UTF-16 length */
    CHECK("{\"in\":[1,\"a1\"]}", NULL, "true");
    CHECK("{\"/\":[1,0]}", NULL, "null");                 /* Infinity prints as null */
    /* inside arrays NaN/Infinity/undefined keep their meaning until the result is printed */
    CHECK("{\"cat\":[{\"map\":[[1,0],{\"/\":[1,{\"var\":\"\"}]}]}]}", NULL, "\"1,Infinity\"");
    CHECK("{\"map\":[[1,0],{\"/\":[1,{\"var\":\"\"}]}]}", NULL, "[1,null]");
    CHECK("{\"in\":[{\"or\":[]},{\"map\":[[1],{\"or\":[]}]}]}", NULL, "true");
}
END_TEST

START_TEST(var_forms) {
    CHECK("{\"var\":\"a.b\"}", "{\"a\":{\"b\":[1]}}", "[1]");
    CHECK("{\"var\":[\"a.c\",\"dflt\"]}", "{\"a\":{\"b\":1}}", "\"dflt\"");
    CHECK("{\"var\":[\"a.b\",\"dflt\"]}", "{\"a\":{\"b\":null}}", "null");
    CHECK("{\"var\":1}", "[\"x\",\"y\"]", "\"y\"");
    CHECK("{\"var\":{\"cat\":[\"a\",\".\",\"b\"]}}", "{\"a\":{\"b\":7}}", "7");
    CHECK("{\"var\":\"\"}", "5", "5");
    CHECK("{\"reduce\":[{\"var\":\"xs\"},{\"+\":[{\"var\":\"accumulator\"},{\"var\":\"current.n\"}]},0]}",
          "{\"xs\":[{\"n\":1},{\"n\":2}]}", "3");
    CHECK("{\"missing_some\":[1,[\"a\",\"b\"]]}", "{\"b\":0}", "[]");
    CHECK("{\"missing\":[\"a\",\"b\"]}", "{\"b\":\"\"}", "[\"a\",\"b\"]");
}
END_TEST

/* The evaluator reads literal var paths and missing keys in place and answers some
 * operations without the general machinery (prebuilt missing results, two-argument
 * comparisons and arithmetic). Expected values from json-logic-js 2.0.5 on node: arrays,
 * strings and "length" on the way, nulls, reduce scopes, elements of built arrays holding
 * Infinity/NaN, computed keys, more keys than the prebuilt results cover. */
START_TEST(in_place_paths_match_reference) {
    CHECK("{\"missing\":[\"a.length\",\"s.0\",\"s.length\",\"arr.1\",\"arr.x\",\"n.x\",\"z\"]}",
          "{\"a\":[1],\"s\":\"hi\",\"arr\":[0,null],\"n\":5}", "[\"arr.1\",\"arr.x\",\"n.x\",\"z\"]");
    CHECK("{\"missing\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\"]}",
          "{\"b\":0,\"d\":false,\"f\":\"\",\"h\":[]}", "[\"a\",\"c\",\"e\",\"f\",\"g\"]");
    CHECK("{\"missing\":[\"a.b\",\"a.b.c\"]}",
          "{\"a\":{\"b\":null}}", "[\"a.b\",\"a.b.c\"]");
    CHECK("{\"missing_some\":[\"1\",[\"a\",\"b\"]]}",
          "{\"a\":1}", "[]");
    CHECK("{\"missing_some\":[2,[\"a\",\"b\",\"c\"]]}",
          "{\"a\":1}", "[\"b\",\"c\"]");
    CHECK("{\"map\":[{\"map\":[[0,1],[{\"/\":[1,{\"var\":\"\"}]}]]},{\"missing\":[\"0\"]}]}",
          "null", "[[],[]]");
    CHECK("{\"map\":[{\"map\":[[0,1],{\"/\":[0,{\"var\":\"\"}]}]},{\"missing\":[\"\"]}]}",
          "null", "[[],[]]");
    CHECK("{\"missing\":{\"merge\":[\"a.b\",{\"if\":[{\"var\":\"x\"},[\"s.1\"],[]]}]}}",
          "{\"x\":1,\"a\":{\"b\":\"\"},\"s\":\"ab\"}", "[\"a.b\"]");
    CHECK("{\"reduce\":[{\"var\":\"xs\"},{\"cat\":[{\"var\":\"accumulator\"},{\"var\":\"current.a.b\"}]},\"\"]}",
          "{\"xs\":[{\"a\":{\"b\":\"x\"}},{\"a\":null},{\"a\":{\"b\":\"y\"}}]}", "\"xy\"");
    CHECK("{\"reduce\":[[1,2],{\"var\":\"accumulator.n\"},{\"var\":\"init\"}]}",
          "{\"init\":{\"n\":5}}", "null");
    CHECK("{\"reduce\":[[1,2],{\"var\":[\"accumulator.n\",\"d\"]},{\"var\":\"init\"}]}",
          "{\"init\":{\"n\":5}}", "\"d\"");
    CHECK("{\"filter\":[{\"merge\":[{\"var\":\"p\"},{\"var\":\"q\"}]},{\"==\":[{\"var\":\"a\"},2]}]}",
          "{\"p\":[{\"a\":1}],\"q\":[{\"a\":2}]}", "[{\"a\":2}]");
    CHECK("{\"<\":[{\"var\":\"a\"},\"10\"]}",
          "{\"a\":9}", "true");
    CHECK("{\"==\":[{\"var\":\"x\"},0]}",
          "{\"x\":null}", "false");
    CHECK("{\"==\":[{\"/\":[0,0]},{\"/\":[0,0]}]}",
          "null", "false");
    CHECK("{\"!=\":[{\"/\":[0,0]},{\"/\":[0,0]}]}",
          "null", "true");
    CHECK("{\"<=\":[{\"var\":\"x\"},{\"var\":\"y\"}]}",
          "{\"x\":null,\"y\":0}", "true");
    CHECK("{\"/\":[1,{\"*\":[{\"var\":\"x\"},1]}]}",
          "{\"x\":0}", "null");
    CHECK("{\"+\":[{\"var\":\"x\"},{\"var\":\"y\"}]}",
          "{\"x\":\"3px\",\"y\":1}", "4");
    CHECK("{\"%\":[{\"var\":\"x\"},{\"var\":\"y\"}]}",
          "{\"x\":-7,\"y\":3}", "-1");
    CHECK("{\"var\":[\"a.b.c\",\"d\"]}",
          "{\"a\":{\"b\":{}}}", "\"d\"");
    CHECK("{\"var\":[\"a.b\",\"d\"]}",
          "{\"a\":5}", "\"d\"");
    CHECK("{\"var\":\"a.b\"}",
          "{\"a\":null}", "null");
    CHECK("{\"var\":[\"a\",1]}",
          "{\"a\":null}", "null");
    CHECK("{\"all\":[{\"var\":\"xs\"},{\">\":[{\"var\":\"n\"},{\"var\":\"\"}]}]}",
          "{\"xs\":[{\"n\":2}],\"n\":1}", "false");
    CHECK("{\"some\":[[[1],[2]],{\"==\":[{\"var\":\"0\"},2]}]}",
          "null", "true");
    CHECK("{\"map\":[{\"var\":\"xs\"},{\"var\":\"b.c\"}]}",
          "{\"xs\":[{\"b\":{\"c\":1}},{\"b\":2},{}]}", "[1,null,null]");
    CHECK("{\"reduce\":[{\"var\":\"xs\"},{\"+\":[{\"var\":\"accumulator\"},{\"var\":\"current.n\"}]},0]}",
          "{\"xs\":[{\"n\":1},{\"n\":\"2\"},{\"m\":3}]}", "null");
}
END_TEST

/* Small objects are scanned key by key, larger ones hashed (jl_obj_get): the same answers
 * on both sides of the threshold, for keys sharing a prefix or a length; and a constant
 * rule's shared result. */
START_TEST(object_lookups_small_and_large) {
    const char *data[] = {
        "{\"ab\":1,\"a\":2,\"abc\":3,\"b\":{\"ab\":4}}",
        "{\"ab\":1,\"a\":2,\"abc\":3,\"b\":{\"ab\":4},\"c\":5,\"d\":6,\"e\":7,\"f\":8,\"g\":9}"};
    for (int i = 0; i < 2; i++) {
        CHECK("[{\"var\":\"a\"},{\"var\":\"ab\"},{\"var\":\"abc\"},{\"var\":\"abcd\"},{\"var\":\"b.ab\"},{\"var\":\"b.a\"}]",
              data[i], "[2,1,3,null,4,null]");
        CHECK("{\"missing\":[\"a\",\"ba\",\"b.ab\",\"b.abc\",\"abc\"]}", data[i], "[\"ba\",\"b.abc\"]");
        CHECK("{\"missing\":{\"merge\":[\"ab\",\"b.a\",\"b.ab\"]}}", data[i], "[\"b.a\"]");
        CHECK("{\"map\":[[1,2],{\"var\":\"b\"}]}", "{\"b\":9}", "[null,null]");
    }
    /* keys of 2 to 12 bytes that start (and end) alike and differ inside: compared in two
     * overlapping loads up to 8 bytes (jl_mem_eq), by memcmp past that */
    CHECK("[{\"var\":\"qa\"},{\"var\":\"qya\"},{\"var\":\"qyb\"}]", "{\"qb\":1,\"qyb\":2}", "[null,null,2]");
    CHECK("[{\"var\":\"qxyz\"},{\"var\":\"qxzz\"},{\"var\":\"qrstuvwz\"},{\"var\":\"qrstuvxz\"},{\"var\":\"qrstuvwxyz12\"},{\"var\":\"qrstuvwxyz13\"}]",
          "{\"qxzz\":1,\"qrstuvxz\":2,\"qrstuvwxyz13\":3}", "[null,1,null,2,null,3]");
    CHECK("{\"missing\":[\"qxyz\",\"qxzz\",\"qrstuvwz\",\"qrstuvxz\"]}", "{\"qxzz\":1,\"qrstuvxz\":2}",
          "[\"qxyz\",\"qrstuvwz\"]");
    /* a key holding a NUL is not the key cut at it, either way round */
    const char *nul_rule = "[{\"var\":\"a\"},{\"var\":\"a\\u0000b\"},{\"var\":\"a\\u0000c\"}]";
    const char *nul_want[] = {"[null,1,null]", "[1,null,null]"};
    for (int i = 0; i < 2; i++) {
        gg_error en = GG_ERROR_INIT;
        json_t *nr = json_loads(nul_rule, JSON_ALLOW_NUL, NULL), *nd = json_object(); /* jansson parses no NUL in keys */
        json_object_setn_new(nd, "a\0b", i == 0 ? 3 : 1, json_integer(1));
        jsonlogic_rule *rr = jsonlogic_compile(nr, NULL, &en);
        ck_assert_ptr_nonnull(rr);
        json_t *v = jsonlogic_apply(rr, nd, NULL, &en);
        char *got = json_dumps(v, JSON_COMPACT);
        ck_assert_str_eq(got, nul_want[i]);
        free(got);
        json_decref(v);
        jsonlogic_free(rr);
        json_decref(nr);
        json_decref(nd);
    }
    /* no error wanted, and no rule */
    gg_error e0 = GG_ERROR_INIT;
    ck_assert_ptr_null(jsonlogic_apply(NULL, NULL, NULL, NULL));
    ck_assert_ptr_null(jsonlogic_apply(NULL, NULL, NULL, &e0));
    ck_assert_str_eq(e0.code, "invalid_rule");
    gg_error_clear(&e0);
    ck_assert_int_eq(jsonlogic_test(NULL, NULL, NULL, NULL), -1);
    ck_assert_int_eq(jsonlogic_test(NULL, NULL, NULL, &e0), -1);
    ck_assert_str_eq(e0.code, "invalid_rule");
    gg_error_clear(&e0);
    CHECK("{\"==\":[1,1]}", NULL, "true");
    CHECK("{\"cat\":[\"a\",\"b\"]}", "{}", "\"ab\"");
    /* a folded constant is shared with the rule: two applies give equal, unchanged values */
    gg_error err = GG_ERROR_INIT;
    json_t *rule = json_loads("{\"merge\":[[1],[2]]}", 0, NULL);
    jsonlogic_rule *r = jsonlogic_compile(rule, NULL, &err);
    ck_assert_ptr_nonnull(r);
    json_t *a = jsonlogic_apply(r, NULL, NULL, &err), *b = jsonlogic_apply(r, NULL, NULL, &err);
    ck_assert(a && b && json_equal(a, b) && json_array_size(a) == 2);
    ck_assert_int_eq(jsonlogic_test(r, NULL, NULL, &err), 1);
    json_decref(a);
    json_decref(b);
    jsonlogic_free(r);
    json_decref(rule);
}
END_TEST

START_TEST(test_gives_truthiness) {
    const char *rules[] = {"{\"var\":\"a\"}", "{\"var\":\"b\"}", "{\"*\":[]}", "[]", "{\"merge\":[[1]]}", "{\"/\":[0,0]}"};
    const int want[] = {1, 0, -1, 0, 1, 0};
    json_t *data = json_loads("{\"a\":[0],\"b\":\"\"}", 0, NULL);
    for (size_t i = 0; i < sizeof rules / sizeof *rules; i++) {
        json_t *rule = json_loads(rules[i], 0, NULL);
        gg_error err = GG_ERROR_INIT;
        jsonlogic_rule *r = jsonlogic_compile(rule, NULL, &err);
        ck_assert_ptr_nonnull(r);
        int got = jsonlogic_test(r, data, NULL, &err);
        ck_assert_msg(got == want[i], "%s: got %d want %d", rules[i], got, want[i]);
        ck_assert(got >= 0 || gg_error_is_set(&err));
        json_t *v = jsonlogic_apply(r, data, NULL, NULL);
        if (got >= 0) ck_assert_int_eq(jsonlogic_truthy(v), got); /* same answer as apply */
        json_decref(v);
        gg_error_clear(&err);
        jsonlogic_free(r);
        json_decref(rule);
    }
    json_decref(data);
}
END_TEST

START_TEST(rule_outlives_its_source) {
    json_t *rule = json_loads("[\"a\",{\"x\":1,\"y\":2},{\"merge\":[[1],[2]]}]", 0, NULL);
    gg_error err = GG_ERROR_INIT;
    jsonlogic_rule *r = jsonlogic_compile(rule, NULL, &err);
    json_array_clear(rule); /* compile copied what it needs */
    json_decref(rule);
    for (int i = 0; i < 2; i++) {
        json_t *v = jsonlogic_apply(r, NULL, NULL, &err);
        char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
        ck_assert_str_eq(s, "[\"a\",{\"x\":1,\"y\":2},[1,2]]");
        free(s);
        json_decref(v);
    }
    jsonlogic_free(r);
}
END_TEST

typedef struct thread_arg { const jsonlogic_rule *r; int failures; } thread_arg;

static void *worker(void *p) {
    thread_arg *t = p;
    for (int i = 0; i < 2000; i++) {
        json_t *data = json_pack("{s:[i,i,i],s:s}", "xs", i, i + 1, i + 2, "name", "n");
        gg_error err = GG_ERROR_INIT;
        json_t *v = jsonlogic_apply(t->r, data, NULL, &err);
        if (!json_is_string(v) || strcmp(json_string_value(v), i % 2 ? "n-odd" : "n-even") != 0) t->failures++;
        json_decref(v);
        json_decref(data);
    }
    return NULL;
}

/* Deep rules are refused at compile time; an evaluation holding more live JSON than its
 * budget fails with memory_exceeded, one that frees as it goes passes. */
START_TEST(depth_and_memory_budget) {
    size_t n = 100000;
    char *deep = malloc(n * 6 + 2), *w = deep;
    for (size_t i = 0; i < n; i++, w += 5) memcpy(w, "{\"!\":", 5);
    *w++ = '1';
    memset(w, '}', n);
    w[n] = 0;
    json_error_t je;
    json_t *rule = json_loads(deep, 0, &je); /* jansson refuses this depth itself */
    if (rule) {
        gg_error err = GG_ERROR_INIT;
        ck_assert(jsonlogic_compile(rule, NULL, &err) == NULL);
        ck_assert_str_eq(err.code, "depth_exceeded");
        gg_error_clear(&err);
        json_decref(rule);
    }
    free(deep);
    json_t *xs = json_array();
    for (int i = 0; i < 4000; i++) json_array_append_new(xs, json_integer(i));
    json_t *data = json_pack("{s:o}", "xs", xs);
    char *dt = json_dumps(data, JSON_COMPACT);
    json_decref(data);
    jsonlogic_options o = {.max_memory_bytes = 4L << 20};
    /* each step keeps a copy of the accumulator plus one more item: quadratic live size */
    char *r = run_opts("{\"reduce\":[{\"var\":\"xs\"},{\"merge\":[{\"var\":\"accumulator\"},[{\"cat\":[\"item\",{\"var\":\"current\"}]}],{\"var\":\"accumulator\"}]},[]]}", dt, &o);
    ck_assert_str_eq(r, "ERR memory_exceeded");
    free(r);
    r = run_opts("{\"reduce\":[{\"var\":\"xs\"},{\"+\":[{\"var\":\"accumulator\"},{\"var\":\"current\"}]},0]}", dt, &o);
    ck_assert_str_eq(r, "7998000");
    free(r);
    /* a reduce wrapping its accumulator would build 4000 levels that freeing recurses on */
    r = run("{\"reduce\":[{\"var\":\"xs\"},[{\"var\":\"accumulator\"}],[]]}", dt);
    ck_assert_str_eq(r, "ERR depth_exceeded");
    free(r);
    free(dt);
}
END_TEST

/* Rules whose evaluation builds no JSON (vars, logic, comparisons, arithmetic, some/all,
 * prebuilt missing) run without entering the memory budget; the result they must build (a
 * computed number) is still counted, so a budget too small for it fails as before, while
 * results that are shared (read from the data, booleans, prebuilt) need none. */
START_TEST(budget_counts_the_result_of_rules_that_allocate_nothing) {
    jsonlogic_options o = {.max_memory_bytes = 1};
    const char *data = "{\"a\":1,\"b\":\"x\",\"xs\":[1,2]}";
    struct { const char *rule, *want; } cases[] = {
        {"{\"+\":[{\"var\":\"a\"},1]}", "ERR memory_exceeded"},
        {"{\"if\":[{\"var\":\"a\"},{\"*\":[{\"var\":\"a\"},3]},0]}", "ERR memory_exceeded"},
        {"{\"var\":\"a\"}", "1"},
        {"{\"if\":[{\">\":[{\"var\":\"a\"},0]},{\"var\":\"b\"},2]}", "\"x\""},
        {"{\"some\":[{\"var\":\"xs\"},{\">\":[{\"var\":\"\"},1]}]}", "true"},
        {"{\"missing\":[\"a\",\"z\"]}", "[\"z\"]"},
        {"{\"map\":[{\"var\":\"xs\"},{\"*\":[{\"var\":\"\"},2]}]}", "ERR memory_exceeded"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = run_opts(cases[i].rule, data, &o);
        ck_assert_msg(strcmp(got, cases[i].want) == 0, "%s: got %s want %s", cases[i].rule, got, cases[i].want);
        free(got);
    }
    /* test builds no result: the same rule passes there */
    json_t *rule = json_loads("{\"+\":[{\"var\":\"a\"},1]}", 0, NULL), *d = json_loads(data, 0, NULL);
    gg_error err = GG_ERROR_INIT;
    jsonlogic_rule *r = jsonlogic_compile(rule, &o, &err);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(jsonlogic_test(r, d, NULL, &err), 1);
    ck_assert(!gg_error_is_set(&err));
    jsonlogic_free(r);
    json_decref(rule);
    json_decref(d);
}
END_TEST

START_TEST(one_rule_many_threads) {
    json_t *rule = json_loads("{\"cat\":[{\"var\":\"name\"},\"-\",{\"if\":[{\"==\":[{\"%\":[{\"reduce\":[{\"var\":\"xs\"},"
                              "{\"+\":[{\"var\":\"accumulator\"},{\"var\":\"current\"}]},0]},2]},0]},\"odd\",\"even\"]}]}",
                              0, NULL);
    gg_error err = GG_ERROR_INIT;
    jsonlogic_rule *r = jsonlogic_compile(rule, NULL, &err);
    ck_assert_ptr_nonnull(rule);
    ck_assert_ptr_nonnull(r);
    pthread_t th[4];
    thread_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (thread_arg){r, 0};
        pthread_create(&th[i], NULL, worker, &args[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(args[i].failures, 0);
    }
    jsonlogic_free(r);
    json_decref(rule);
}
END_TEST

int main(void) {
    Suite *s = suite_create("jsonlogic");
    TCase *tc = tcase_create("api");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, unknown_operation_is_a_compile_error_with_path);
    tcase_add_test(tc, compat_operators_only_in_compat_mode);
    tcase_add_test(tc, depth_is_bounded);
    tcase_add_test(tc, truthiness);
    tcase_add_test(tc, custom_operations);
    tcase_add_test(tc, runtime_errors_are_values);
    tcase_add_test(tc, javascript_coercions);
    tcase_add_test(tc, var_forms);
    tcase_add_test(tc, in_place_paths_match_reference);
    tcase_add_test(tc, object_lookups_small_and_large);
    tcase_add_test(tc, rule_outlives_its_source);
    tcase_add_test(tc, test_gives_truthiness);
    tcase_add_test(tc, one_rule_many_threads);
    tcase_add_test(tc, depth_and_memory_budget);
    tcase_add_test(tc, budget_counts_the_result_of_rules_that_allocate_nothing);
    suite_add_tcase(s, tc);
    return gg_check_run(s);
}
