/* Unit tests for the JSONata embedding API: compile/evaluate, bindings, registered
 * native functions, error codes and positions, limits (time, cancel, sequence length,
 * stack) and sharing one compiled expression between threads. */
#include <check.h>
#include <dirent.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jsonata/jsonata.h"
#include "../check_main.h"

static json_t *J(const char *text) {
    json_error_t je;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &je);
    ck_assert_msg(v != NULL, "bad test JSON: %s", text);
    return v;
}

/* evaluate expr on input text; returns compact JSON text ("undefined" / "ERR code") */
static char *run(const char *expr, const char *input, const char *bindings,
                 const jsonata_options *opts, const jsonata_env *env, void *call_user) {
    gg_error err = GG_ERROR_INIT;
    json_t *in = input ? J(input) : NULL, *b = bindings ? J(bindings) : NULL;
    char *out = NULL;
    jsonata_expr *e = jsonata_compile(expr, env, &err);
    if (e) {
        json_t *r = jsonata_evaluate(e, in, b, opts, call_user, &err);
        if (!gg_error_is_set(&err))
            out = r ? json_dumps(r, JSON_ENCODE_ANY | JSON_COMPACT) : strdup("undefined");
        json_decref(r);
        jsonata_free(e);
    }
    if (gg_error_is_set(&err)) {
        size_t n = strlen(err.code) + 5;
        out = malloc(n);
        snprintf(out, n, "ERR %s", err.code);
    }
    gg_error_clear(&err);
    json_decref(in);
    json_decref(b);
    return out;
}

#define EXPECT(expr, input, want)                    \
    do {                                             \
        char *got_ = run(expr, input, NULL, NULL, NULL, NULL); \
        ck_assert_str_eq(got_, want);                \
        free(got_);                                  \
    } while (0)

START_TEST(basic_paths_and_constructors) {
    EXPECT("a.b", "{\"a\":{\"b\":[1,2]}}", "[1,2]");
    EXPECT("{\"n\": $count(items), \"first\": items[0].id}",
           "{\"items\":[{\"id\":7},{\"id\":8}]}", "{\"n\":2,\"first\":7}");
    EXPECT("items[price > 1].name", "{\"items\":[{\"name\":\"a\",\"price\":1},{\"name\":\"b\",\"price\":2}]}", "\"b\"");
    EXPECT("nothing", "{}", "undefined");
    EXPECT("$sum([1..100])", NULL, "5050");
    EXPECT("0.1 + 0.2", NULL, "0.30000000000000004");
    /* $keys takes its input unconverted (lazy-safe) and converts only what it lists */
    EXPECT("$keys(a)", "{\"a\":{\"x\":{\"y\":1},\"z\":[{\"w\":2}]}}", "[\"x\",\"z\"]");
    EXPECT("$keys(a.x)", "{\"a\":{\"x\":{\"y\":1}}}", "\"y\"");
    EXPECT("$keys(a)", "{\"a\":[{\"p\":1,\"q\":{\"r\":2}},{\"q\":3,\"s\":4},5]}", "[\"p\",\"q\",\"s\"]");
    EXPECT("$keys($)", "{\"b\":{\"c\":1},\"d\":2}", "[\"b\",\"d\"]");
    /* $lookup too (its reads go through jn_object_get), objects found handed on as they are */
    EXPECT("$lookup(a, \"x\")", "{\"a\":{\"x\":{\"y\":[1,{\"z\":2}]}}}", "{\"y\":[1,{\"z\":2}]}");
    EXPECT("$lookup(a, \"y\")", "{\"a\":[{\"y\":1},{\"x\":2},{\"y\":{\"w\":[3]}}]}", "[1,{\"w\":[3]}]");
    EXPECT("$lookup(a, \"x\").y[1].z", "{\"a\":{\"x\":{\"y\":[1,{\"z\":2}]}}}", "2");
    EXPECT("$keys(a) & $string(a)", "{\"a\":{\"x\":{\"y\":1}}}", "\"x{\\\"x\\\":{\\\"y\\\":1}}\"");
}
END_TEST

START_TEST(bindings_and_lambdas) {
    char *got = run("$x * 2", NULL, "{\"x\": 21}", NULL, NULL, NULL);
    ck_assert_str_eq(got, "42");
    free(got);
    EXPECT("($f := function($n){ $n < 2 ? $n : $f($n-1) + $f($n-2) }; $f(15))", NULL, "610");
    /* tail calls do not grow the stack */
    EXPECT("($loop := function($n, $a){ $n = 0 ? $a : $loop($n - 1, $a + 1) }; $loop(100000, 0))", NULL, "100000");
}
END_TEST

START_TEST(errors_carry_code_position_token) {
    gg_error err = GG_ERROR_INIT;
    ck_assert_ptr_null(jsonata_compile("(1 + ", NULL, &err));
    ck_assert_str_eq(err.code, "S0203");
    gg_error_clear(&err);
    jsonata_expr *e = jsonata_compile("1 + \"a\"", NULL, &err);
    ck_assert_ptr_nonnull(e);
    ck_assert_ptr_null(jsonata_evaluate(e, NULL, NULL, NULL, NULL, &err));
    ck_assert_str_eq(err.code, "T2002");
    ck_assert_str_eq(err.path, "+");
    ck_assert_int_eq(err.position, 3);
    gg_error_clear(&err);
    jsonata_free(e);
}
END_TEST

static json_t *previous_node(jsonata_call *call, json_t **args, int nargs, void *user,
                             void *call_user, gg_error *err) {
    (void)call;
    if (nargs != 1 || !json_is_string(args[0])) {
        gg_error_set(err, "T0410", "bad argument");
        return NULL;
    }
    json_t *outputs = call_user;
    json_t *v = json_object_get(outputs, json_string_value(args[0]));
    if (!v) {
        gg_error_set(err, "G0001", "no such node %s (%s)", json_string_value(args[0]), (const char *)user);
        return NULL;
    }
    return json_incref(v);
}

START_TEST(registered_native_functions) {
    gg_error err = GG_ERROR_INIT;
    jsonata_env *env = jsonata_env_new();
    ck_assert(jsonata_env_register(env, "$previousNode", "<s:j>", previous_node, "graph", &err));
    json_t *outputs = J("{\"fetch\": {\"status\": 200, \"body\": [1,2,3]}}");
    char *got = run("$previousNode(\"fetch\").body[1] + 40", NULL, NULL, NULL, env, outputs);
    ck_assert_str_eq(got, "42");
    free(got);
    got = run("$previousNode(\"nope\")", NULL, NULL, NULL, env, outputs);
    ck_assert_str_eq(got, "ERR G0001");
    free(got);
    /* the signature is validated before the function runs */
    got = run("$previousNode(5)", NULL, NULL, NULL, env, outputs);
    ck_assert_str_eq(got, "ERR T0410");
    free(got);
    /* a registered function is a value like any other */
    got = run("[\"fetch\"] ~> $map($previousNode) ~> $map(function($o){$o.status})", NULL, NULL, NULL, env, outputs);
    ck_assert_str_eq(got, "200");
    free(got);
    json_decref(outputs);
    jsonata_env_free(env);
}
END_TEST

/* Collects "name@offset;" for each unknown call. */
static void note_unknown(void *user, const char *name, int offset) {
    char *buf = user;
    size_t n = strlen(buf);
    snprintf(buf + n, 256 - n, "%s@%d;", name, offset);
}

static void unknown_calls_of(const char *src, const jsonata_env *env, char *out) {
    static const char *const known[] = {"client"};
    gg_error err = GG_ERROR_INIT;
    jsonata_expr *e = jsonata_compile(src, env, &err);
    ck_assert_msg(e != NULL, "%s does not compile", src);
    out[0] = '\0';
    jsonata_unknown_calls(e, known, 1, note_unknown, out);
    jsonata_free(e);
}

/* Calls of names that are no function anywhere, with the offset of their '$'; names bound
 * by the expression, the environment or the embedder are never reported. */
START_TEST(unknown_function_calls) {
    jsonata_env *env = jsonata_env_new();
    gg_error err = GG_ERROR_INIT;
    ck_assert(jsonata_env_register(env, "previousNode", NULL, previous_node, NULL, &err));
    char out[256];
    unknown_calls_of("1 + $upper(\"a\") & $x.$nope(?)", env, out);
    ck_assert_str_eq(out, "upper@4;nope@21;");
    static const char *const fine[] = {
        "($f := function($a){ $a($a) }; $f($f))", "$map([1], function($v){ $v })", "$previousNode(\"x\")",
        "[1,2]#$i[$i(1)]", "[1,2]@$o.$o()", "$client()", "$", "$$.a", "$string(1) ~> $uppercase()",
    };
    for (size_t i = 0; i < sizeof fine / sizeof fine[0]; i++) {
        unknown_calls_of(fine[i], env, out);
        ck_assert_msg(out[0] == '\0', "%s: %s", fine[i], out);
    }
    /* the closest name: by edit distance, else the shortest one the name begins */
    ck_assert_str_eq(jsonata_closest_function(env, "lenght"), "length");
    ck_assert_str_eq(jsonata_closest_function(env, "upper"), "uppercase");
    ck_assert_str_eq(jsonata_closest_function(env, "substr"), "substring");
    ck_assert_str_eq(jsonata_closest_function(env, "previousNod"), "previousNode");
    ck_assert_ptr_null(jsonata_closest_function(env, "frobnicate"));
    ck_assert_ptr_null(jsonata_closest_function(NULL, "previousNod"));
    jsonata_env_free(env);
}
END_TEST

START_TEST(limits) {
    jsonata_options o = {0};
    o.time_limit_ms = 50;
    char *got = run("($f := function(){ $f() }; $f())", NULL, NULL, &o, NULL, NULL);
    ck_assert_str_eq(got, "ERR D1012");
    free(got);
    atomic_int cancel = 1;
    jsonata_options oc = {0};
    oc.cancel = &cancel;
    got = run("($f := function($n){ $n = 0 ? 0 : $f($n - 1) }; $f(1000000))", NULL, NULL, &oc, NULL, NULL);
    ck_assert_str_eq(got, "ERR D1013");
    free(got);
    jsonata_options os = {0};
    os.max_sequence_length = 1000;
    got = run("[1..5000]", NULL, NULL, &os, NULL, NULL);
    ck_assert_str_eq(got, "ERR D2014");
    free(got);
    jsonata_options od = {0};
    od.max_stack_bytes = 64 * 1024;
    got = run("($f := function($n){ $n = 0 ? 0 : 1 + $f($n - 1) }; $f(100000))", NULL, NULL, &od, NULL, NULL);
    ck_assert_str_eq(got, "ERR D1011");
    free(got);
    got = run("[1..10000001]", NULL, NULL, NULL, NULL, NULL);
    ck_assert_str_eq(got, "ERR D2014");
    free(got);
    /* one big range is a single step: limits are checked while it is built */
    jsonata_options ot = {0};
    ot.time_limit_ms = 2;
    double t0 = gg_now_ms();
    got = run("$count([1..9000000])", NULL, NULL, &ot, NULL, NULL);
    ck_assert_str_eq(got, "ERR D1012");
    ck_assert_msg(gg_now_ms() - t0 < 300, "took %.0f ms", gg_now_ms() - t0);
    free(got);
    got = run("$count([1..9000000])", NULL, NULL, &oc, NULL, NULL);
    ck_assert_str_eq(got, "ERR D1013");
    free(got);
}
END_TEST

typedef struct shared_case {
    const jsonata_expr *e;
    json_t *input;
    int ok;
} shared_case;

static void *eval_many(void *arg) {
    shared_case *sc = arg;
    for (int i = 0; i < 2000; i++) {
        gg_error err = GG_ERROR_INIT;
        json_t *r = jsonata_evaluate(sc->e, sc->input, NULL, NULL, NULL, &err);
        if (json_is_integer(r) && json_integer_value(r) == 6) sc->ok++;
        json_decref(r);
        gg_error_clear(&err);
    }
    return NULL;
}

/* Long operator chains and deep nesting end in D1011 at compile time (with a position),
 * never in a crash of a recursive AST walk; a chain of 999 terms still works. */
static char *chain(const char *first, const char *op, const char *term, int n) {
    size_t fl = strlen(first), ol = strlen(op), tl = strlen(term);
    char *s = malloc(fl + (size_t)n * (ol + tl) + 1), *w = s;
    memcpy(w, first, fl);
    w += fl;
    for (int i = 0; i < n; i++) {
        memcpy(w, op, ol);
        memcpy(w + ol, term, tl);
        w += ol + tl;
    }
    *w = 0;
    return s;
}

START_TEST(operator_chains_are_bounded) {
    static const char *const ops[][2] = {
        {"+", "1"}, {" and ", "true"}, {"&", "'a'"}, {" ~> ", "$string"}, {".", "a"},
        {"", "[0]"}, {"*", "1"}, {" or ", "false"}, {"=", "1"},
    };
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        char *s = chain("1", ops[k][0], ops[k][1], 100000);
        gg_error err = GG_ERROR_INIT;
        jsonata_expr *e = jsonata_compile(s, NULL, &err);
        ck_assert_msg(e == NULL, "chain %s compiled", ops[k][0]);
        ck_assert_str_eq(err.code, "D1011");
        ck_assert_int_gt(err.position, 0);
        gg_error_clear(&err);
        free(s);
    }
    static const char *const nests[][2] = {{"(", ")"}, {"[", "]"}, {"{\"a\":", "}"},
                                           {"$string(", ")"}, {"(1;", ")"}, {"-", ""}};
    for (size_t k = 0; k < sizeof nests / sizeof nests[0]; k++) {
        size_t ol = strlen(nests[k][0]), cl = strlen(nests[k][1]), n = 100000;
        char *s = malloc(n * (ol + cl) + 2), *w = s;
        for (size_t i = 0; i < n; i++, w += ol) memcpy(w, nests[k][0], ol);
        *w++ = '1';
        for (size_t i = 0; i < n; i++, w += cl) memcpy(w, nests[k][1], cl);
        *w = 0;
        gg_error err = GG_ERROR_INIT;
        ck_assert(jsonata_compile(s, NULL, &err) == NULL);
        ck_assert_str_eq(err.code, "D1011");
        gg_error_clear(&err);
        free(s);
    }
    char *ok = chain("1", "+", "1", 998), *r = run(ok, NULL, NULL, NULL, NULL, NULL);
    ck_assert_str_eq(r, "999");
    free(r);
    free(ok);
}
END_TEST

/* The memory budget counts live bytes: a bomb fails with D1014, a long loop of
 * short-lived values of the same size passes, and the budget is per evaluation. */
/* The per-thread cache of small freed blocks (value.c): a block handed out again has room
 * for what is asked, whatever size it was freed at; a budget still counts exactly (freed
 * into the cache is given back); a thread's blocks are given back when it ends. */
static void *churn(void *arg) {
    (void)arg;
    void *p[64];
    for (int round = 0; round < 3; round++) {
        for (size_t i = 0; i < 64; i++) p[i] = jsonata_budget_malloc(1 + (i * 37 + (size_t)round * 11) % 200);
        for (size_t i = 0; i < 64; i++) jsonata_budget_free(p[i]);
    }
    return NULL;
}

START_TEST(alloc_cache) {
    void *p[300];
    for (size_t n = 1; n < 300; n++) p[n] = jsonata_budget_malloc(n);
    for (size_t n = 1; n < 300; n++) jsonata_budget_free(p[n]);
    for (size_t n = 299; n >= 1; n--) { /* the other way round: each from a block freed at another size */
        p[n] = jsonata_budget_malloc(n);
        ck_assert_ptr_nonnull(p[n]);
        ck_assert_uint_ge(malloc_usable_size(p[n]), n);
        memset(p[n], 0xab, n);
    }
    long usable = 0;
    for (size_t n = 1; n < 300; n++) usable += (long)malloc_usable_size(p[n]);
    jsonata_budget b = {.limit = 1 << 20};
    jsonata_budget *old = jsonata_budget_swap(&b);
    for (size_t n = 1; n < 300; n++) jsonata_budget_free(p[n]); /* not counted in: b goes below 0 */
    ck_assert_int_eq(b.live, -usable);
    b.live = 0;
    usable = 0;
    for (size_t n = 1; n < 300; n++) { /* from the cache, counted at their usable size */
        p[n] = jsonata_budget_malloc(n);
        usable += (long)malloc_usable_size(p[n]);
    }
    ck_assert_int_eq(b.live, usable);
    for (size_t n = 1; n < 300; n++) jsonata_budget_free(p[n]);
    ck_assert_int_eq(b.live, 0);
    b.limit = 16; /* refused on the size asked, before the cache is looked at */
    ck_assert_ptr_null(jsonata_budget_malloc(24));
    ck_assert(b.exceeded);
    jsonata_budget_swap(old);
    pthread_t t[4];
    for (int i = 0; i < 4; i++) ck_assert_int_eq(pthread_create(&t[i], NULL, churn, NULL), 0);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
}
END_TEST

START_TEST(memory_budget) {
    jsonata_options o = {.max_memory_bytes = 32L << 20};
    char *r = run("$map([1..40], function($i){[1..1000000]})", NULL, NULL, &o, NULL, NULL);
    ck_assert_str_eq(r, "ERR D1014");
    free(r);
    r = run("$reduce([1..40], function($a,$i){$a & $a}, 'xxxxxxxx')", NULL, NULL, &o, NULL, NULL);
    ck_assert_str_eq(r, "ERR D1014");
    free(r);
    r = run("$sum($map([1..40], function($i){$count([1..500000])}))", NULL, NULL, &o, NULL, NULL);
    ck_assert_str_eq(r, "20000000");
    free(r);
    r = run("$count([1..500000])", NULL, NULL, &o, NULL, NULL); /* nothing left over */
    ck_assert_str_eq(r, "500000");
    free(r);
}
END_TEST

/* Four threads evaluate one folded literal and change what they get (TSan watches). */
static void *literal_many(void *arg) {
    shared_case *sc = arg;
    for (int i = 0; i < 1000; i++) {
        gg_error err = GG_ERROR_INIT;
        json_t *r = jsonata_evaluate(sc->e, sc->input, NULL, NULL, NULL, &err);
        json_t *k = json_object_get(r, "k");
        if (json_is_array(k) && json_array_size(k) == 2 && r->refcount == 1) sc->ok++;
        json_array_clear(k);
        json_decref(r);
        gg_error_clear(&err);
    }
    return NULL;
}

/* A tree of literals is computed once at compile time (api.c's fold_literal): every
 * evaluation still gets a value of its own (a caller may change it), the same for any
 * input, and a literal whose evaluation fails still fails at every run. */
/* Small integers are shared values (jn_number): negating a literal at parse time must make
 * a new one, not change the shared 5 that every later "5" is. */
START_TEST(shared_small_integers_stay_what_they_are) {
    for (int round = 0; round < 2; round++) {
        EXPECT("-5", NULL, "-5");
        EXPECT("5", NULL, "5");
        EXPECT("-(5)", NULL, "-5");
        EXPECT("[0, -255, 255, 256, -256]", NULL, "[0,-255,255,256,-256]");
        EXPECT("-0 = 0", NULL, "true");
        EXPECT("$sum([0..300])", NULL, "45150");
        EXPECT("$count([1..255]) + 1", NULL, "256");
        EXPECT("$map([1..4], function($v) { -$v })", NULL, "[-1,-2,-3,-4]");
        EXPECT("[1, 2, 3] ~> $map(function($v) { $v * 2 })", NULL, "[2,4,6]");
    }
}
END_TEST

START_TEST(literal_expressions_answer_a_fresh_value) {
    gg_error err = GG_ERROR_INIT;
    jsonata_expr *e = jsonata_compile("{ \"result\": \"high\", \"n\": [1, -2.5, true, null, {\"k\": \"v\"}] }", NULL, &err);
    ck_assert_ptr_nonnull(e);
    const char *inputs[] = {NULL, "[]", "[1,2,3]", "{\"result\":\"low\"}", "\"x\""};
    for (int i = 0; i < 5; i++) {
        json_t *in = inputs[i] ? J(inputs[i]) : NULL;
        json_t *r = jsonata_evaluate(e, in, NULL, NULL, NULL, &err);
        ck_assert(!gg_error_is_set(&err));
        char *text = json_dumps(r, JSON_COMPACT | JSON_SORT_KEYS);
        ck_assert_str_eq(text, "{\"n\":[1,-2.5,true,null,{\"k\":\"v\"}],\"result\":\"high\"}");
        free(text);
        /* the caller owns what it got: changing it must not reach the next evaluation */
        json_object_set_new(r, "result", json_string("changed"));
        json_array_clear(json_object_get(r, "n"));
        ck_assert_int_eq(r->refcount, 1);
        json_decref(r);
        json_decref(in);
    }
    jsonata_free(e);
    e = jsonata_compile("{\"k\": [1, {\"x\": \"y\"}]}", NULL, &err);
    ck_assert_ptr_nonnull(e);
    shared_case sc[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        sc[i] = (shared_case){e, NULL, 0};
        pthread_create(&t[i], NULL, literal_many, &sc[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        ck_assert_int_eq(sc[i].ok, 1000);
    }
    jsonata_free(e);
    EXPECT("[\"a\", [1, 2], {}]", "{}", "[\"a\",[1,2],{}]");
    EXPECT("\"just a string\"", "[1]", "\"just a string\"");
    EXPECT("-7", NULL, "-7");
    /* not literals alone: computed at every run as before */
    EXPECT("[1..3]", NULL, "[1,2,3]");
    EXPECT("{\"a\": 1 + 1}", NULL, "{\"a\":2}");
    /* a literal that cannot evaluate keeps failing at every evaluation */
    e = jsonata_compile("{ 1: \"x\" }", NULL, &err);
    ck_assert_ptr_nonnull(e);
    for (int i = 0; i < 2; i++) {
        json_t *r = jsonata_evaluate(e, NULL, NULL, NULL, NULL, &err);
        ck_assert_ptr_null(r);
        ck_assert_str_eq(err.code, "T1003");
        gg_error_clear(&err);
    }
    jsonata_free(e);
}
END_TEST

START_TEST(compiled_expression_is_shared_between_threads) {
    gg_error err = GG_ERROR_INIT;
    jsonata_expr *e = jsonata_compile("$sum(items.(\"a\" = \"a\" ? v : 0)) ~> $string() ~> $number()", NULL, &err);
    ck_assert_ptr_nonnull(e);
    json_t *in = J("{\"items\":[{\"v\":1},{\"v\":2},{\"v\":3}]}");
    shared_case sc[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        sc[i] = (shared_case){e, in, 0};
        pthread_create(&t[i], NULL, eval_many, &sc[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        ck_assert_int_eq(sc[i].ok, 2000);
    }
    json_decref(in);
    jsonata_free(e);
}
END_TEST

/* Compile one malformed variant; the engine must either accept it or report an error,
 * and in both cases free everything (the sanitizer build's leak check fails otherwise). */
static void compile_and_free(const char *src, size_t len, int *n) {
    char *buf = strndup(src, len);
    ck_assert_ptr_nonnull(buf);
    gg_error err = GG_ERROR_INIT;
    jsonata_expr *e = jsonata_compile(buf, NULL, &err);
    ck_assert_msg(e != NULL || gg_error_is_set(&err), "no result and no error: %s", buf);
    jsonata_free(e);
    gg_error_clear(&err);
    free(buf);
    (*n)++;
}

/* Variants of a valid expression: cut at a few positions and with one bracket/quote
 * dropped. The stride keeps the whole loop at a few thousand compiles. */
static void mutate(const char *x, int *n, unsigned *seed) {
    size_t len = strlen(x);
    for (size_t cut = 0; cut < len; cut += 1 + len / 4) compile_and_free(x, cut, n);
    for (size_t i = 0; i < len; i++) {
        if (!strchr("()[]{}\"'`/|", x[i])) continue;
        *seed = *seed * 1103515245u + 12345u;
        if ((*seed >> 16) % 3) continue;
        char *m = strdup(x);
        ck_assert_ptr_nonnull(m);
        memmove(m + i, m + i + 1, len - i);
        compile_and_free(m, len - 1, n);
        free(m);
    }
}

/* the JSONata suite's groups: GG_CONFORMANCE_DIR/jsonata/groups, else under GG_SHARED */
static char suite_groups[4096];

START_TEST(malformed_expressions_free_everything) {
    const char *dir = suite_groups;
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot open %s", dir);
    int n = 0;
    unsigned seed = 1;
    struct dirent *g;
    while ((g = readdir(d))) {
        if (g->d_name[0] == '.') continue;
        char gdir[4600];
        snprintf(gdir, sizeof gdir, "%s/%s", dir, g->d_name);
        DIR *cd = opendir(gdir);
        if (!cd) continue;
        struct dirent *c;
        while ((c = readdir(cd))) {
            if (!strstr(c->d_name, ".json")) continue;
            char path[5200];
            snprintf(path, sizeof path, "%s/%s", gdir, c->d_name);
            json_t *doc = json_load_file(path, 0, NULL);
            json_t *cases = json_is_array(doc) ? doc : NULL, *one = NULL;
            size_t i;
            if (!cases) { one = json_array(); json_array_append(one, doc); cases = one; }
            json_t *c2;
            json_array_foreach(cases, i, c2) {
                const char *x = json_string_value(json_object_get(c2, "expr"));
                if (x) mutate(x, &n, &seed);
            }
            json_decref(one);
            json_decref(doc);
        }
        closedir(cd);
    }
    closedir(d);
    const char *fixed[] = {"\"abc", "'\\u12", "\"\\", "[1,2", "{\"a\":", "{\"a\" 1}", "$f(1,",
                           "function($x){", "/ab", "a ~> |b|{", "$[", "(1;2", "a[b", "[1..",
                           "$x := ", "a.b{c:", "a^(", "?:", "..", "`abc", "λ($x", "#$i@$j"};
    for (size_t k = 0; k < sizeof fixed / sizeof *fixed; k++)
        compile_and_free(fixed[k], strlen(fixed[k]), &n);
    ck_assert_int_gt(n, 1000);
}
END_TEST

/* jsonata@2.2.2 accepts a range only directly inside an array constructor. */
START_TEST(ranges_only_in_array_constructors) {
    EXPECT("[1,2,3][0..1]", NULL, "ERR S0202");
    EXPECT("a[0..1]", "{\"a\":[5,6,7]}", "ERR S0202");
    EXPECT("[1,2,3][(0..1)]", NULL, "ERR S0202");
    EXPECT("[1,2,3][[0..1]]", NULL, "[1,2]");
    gg_error err = GG_ERROR_INIT;
    ck_assert_ptr_null(jsonata_compile("[1,2,3][0..1]", NULL, &err));
    ck_assert_int_eq(err.position, 11);
    gg_error_clear(&err);
}
END_TEST

/* Results below are jsonata@2.2.2's on node. */
START_TEST(regex_empty_classes_like_javascript) {
    EXPECT("$match(\"a\\nb\", /[^]/).match", NULL, "[\"a\",\"\\n\",\"b\"]");
    EXPECT("$replace(\"a-b\", /[^]/, \"x\")", NULL, "\"xxx\"");
    EXPECT("$match(\"ab\", /a[]/)", NULL, "undefined");
    EXPECT("$contains(\"x\", /[]/)", NULL, "false");
    EXPECT("$split(\"a b\", /[^]/)", NULL, "[\"\",\"\",\"\",\"\"]");
    EXPECT("(\"a\" ~> /[^]/).[match, start, end]", NULL, "[\"a\",0,1]");
}
END_TEST

/* JavaScript's \s covers NBSP and the other Unicode spaces (not U+0085); \d and \w stay
 * ASCII. Results are jsonata@2.2.2's on node. */
START_TEST(regex_space_class_like_javascript) {
    EXPECT("$replace(\"a\\u00a0b\\u2003c\\ufeffd\\u3000e\\u2028f\\u000bg\", /\\s/, \"_\")", NULL,
           "\"a_b_c_d_e_f_g\"");
    EXPECT("$split(\"a\\u00a0b c\", /\\s+/)", NULL, "[\"a\",\"b\",\"c\"]");
    EXPECT("$replace(\"a\\u00a0b\", /[^\\s]/, \"_\")", NULL, "\"_\u00a0_\"");
    EXPECT("$replace(\"a\\u00a0b\", /[^\\S]/, \"_\")", NULL, "\"a_b\"");
    EXPECT("$replace(\"a b\\u00a0c\\u2003d\", /[\\Sx]/, \"_\")", NULL, "\"_ _\u00a0_\u2003_\"");
    EXPECT("$replace(\"a\\u0085b\\u200bc\", /\\s/, \"_\")", NULL, "\"a\xc2\x85" "b\u200bc\"");
    EXPECT("$replace(\"\\u00e91\\u0663x\", /\\w/, \"_\")", NULL, "\"\u00e9_\u0663_\"");
    EXPECT("$replace(\"\\u00e91\\u0663x\", /\\d/, \"_\")", NULL, "\"\u00e9_\u0663x\"");
    EXPECT("$replace(\"a \\\\sb\", /\\\\s/, \"_\")", NULL, "\"a _b\"");
}
END_TEST

int main(void) {
    const char *conf = getenv("GG_CONFORMANCE_DIR"), *shared = getenv("GG_SHARED");
    if (conf && *conf) snprintf(suite_groups, sizeof suite_groups, "%s/jsonata/groups", conf);
    else snprintf(suite_groups, sizeof suite_groups, "%s/conformance/jsonata/groups",
                  shared && *shared ? shared : "../shared");
    bool have_suite = access(suite_groups, R_OK) == 0;
    Suite *s = suite_create("jsonata");
    TCase *tc = tcase_create("api");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, basic_paths_and_constructors);
    tcase_add_test(tc, bindings_and_lambdas);
    tcase_add_test(tc, errors_carry_code_position_token);
    tcase_add_test(tc, registered_native_functions);
    tcase_add_test(tc, unknown_function_calls);
    tcase_add_test(tc, limits);
    tcase_add_test(tc, compiled_expression_is_shared_between_threads);
    tcase_add_test(tc, literal_expressions_answer_a_fresh_value);
    tcase_add_test(tc, shared_small_integers_stay_what_they_are);
    tcase_add_test(tc, operator_chains_are_bounded);
    tcase_add_test(tc, memory_budget);
    tcase_add_test(tc, alloc_cache);
    if (have_suite) tcase_add_test(tc, malformed_expressions_free_everything);
    else printf("# SKIP 1 test: malformed expressions from the JSONata suite: %s not found (set GG_CONFORMANCE_DIR "
                "or GG_SHARED; docs/internals.md: where the conformance suites come from)\n", suite_groups);
    tcase_add_test(tc, ranges_only_in_array_constructors);
    tcase_add_test(tc, regex_empty_classes_like_javascript);
    tcase_add_test(tc, regex_space_class_like_javascript);
    suite_add_tcase(s, tc);
    return gg_check_run_skipped(s, have_suite ? 0 : 1);
}
