/* api.c — the public embedding API of jsonata.h: environments of native functions,
 * compile, evaluate (with jansson conversion) and free. */
#include "jsonata/core.h"

#include <stdlib.h>
#include <string.h>

/* Create an empty environment for registered native functions. */
jsonata_env *jsonata_env_new(void) { return calloc(1, sizeof(jsonata_env)); }

/* Register fn as $name with an optional JSONata signature. Not thread-safe: build the
 * environment fully before sharing it. */
bool jsonata_env_register(jsonata_env *env, const char *name, const char *signature,
                          jsonata_native_fn fn, void *user, gg_error *err) {
    if (!env || !name || !fn) {
        gg_error_set(err, "invalid_argument", "jsonata_env_register: missing argument");
        return false;
    }
    if (name[0] == '$') name++;
    if (env->n == env->cap) {
        size_t nc = env->cap ? env->cap * 2 : 8;
        jn_extern **nf = realloc(env->fns, nc * sizeof *nf);
        if (!nf) {
            jn_oom(err);
            return false;
        }
        env->fns = nf;
        env->cap = nc;
    }
    jn_extern *x = calloc(1, sizeof *x);
    jn_function *f = calloc(1, sizeof *f);
    if (!x || !f || !(x->name = strdup(name))) goto oom;
    if (signature) {
        x->sig = jn_sig_parse(signature, err);
        if (!x->sig) goto fail;
    }
    x->fn = fn;
    x->user = user;
    f->kind = FN_EXTERN;
    f->ext = x;
    x->fnval = jn_function_value(f);
    f = NULL; /* owned by fnval (freed by it on failure) */
    if (!x->fnval) goto oom;
    jn_make_immortal(x->fnval);
    env->fns[env->n++] = x;
    return true;
oom:
    jn_oom(err);
fail:
    free(f);
    if (x) {
        jn_sig_free(x->sig);
        free(x->name);
        free(x);
    }
    return false;
}

/* Release an environment (after every expression compiled against it is freed). */
void jsonata_env_free(jsonata_env *env) {
    if (!env) return;
    for (size_t i = 0; i < env->n; i++) {
        free(env->fns[i]->name);
        jn_sig_free(env->fns[i]->sig);
        jn_free_immortal(env->fns[i]->fnval);
        free(env->fns[i]);
    }
    free(env->fns);
    free(env);
}

/* Numbers, strings, true/false/null, and arrays and object constructors of them only: the
 * value is the same for every input and binding (an object constructor makes its one
 * object even from an empty or array input). No operator is allowed, not even a range of
 * literals, so the value is never bigger than the expression's text: a tenant's upload
 * cannot make the compile step build a large value outside any evaluation's budget. */
static bool literal_tree(const jn_node *n) {
    if (!n || n->nstages || n->group || n->keep_array || n->focus || n->index || n->label) return false;
    switch (n->type) {
    case N_NUMBER: case N_STRING: case N_VALUE: return true;
    case N_NEGATE: return n->lhs && n->lhs->type == N_NUMBER && literal_tree(n->lhs);
    case N_ARRAY:
        for (int i = 0; i < n->nitems; i++)
            if (!literal_tree(n->items[i])) return false;
        return true;
    case N_OBJECT:
        if (n->lhs) return false;
        for (int i = 0; i < n->npairs; i++)
            if (!literal_tree(n->pairs[i].key) || !literal_tree(n->pairs[i].val)) return false;
        return true;
    default: return false;
    }
}

/* A transform like '{ "result": "high" }' is evaluated once, here, instead of once a run
 * (about 1,500 instructions a call of mcpGraph's switch example). An evaluation that fails
 * (a number as a key, a duplicate key) is left to every run, which reports it as before. */
static void fold_literal(jsonata_expr *e) {
    if (!literal_tree(e->ast)) return;
    gg_error local = GG_ERROR_INIT;
    jn_value *r = jn_evaluate_ast(e->ast, NULL, NULL, e->env, NULL, NULL, &local);
    if (!gg_error_is_set(&local) && r) e->literal = jn_to_json(r);
    jn_decref(r);
    gg_error_clear(&local);
}

/* Parse expr into an immutable compiled expression bound to env (may be NULL). */
jsonata_expr *jsonata_compile(const char *expr, const jsonata_env *env, gg_error *err) {
    if (!expr) {
        gg_error_set(err, "S0207", "Unexpected end of expression");
        return NULL;
    }
    jsonata_expr *e = calloc(1, sizeof *e);
    if (!e || !(e->source = strdup(expr))) {
        free(e);
        jn_oom(err);
        return NULL;
    }
    e->env = env;
    e->ast = jn_parse(expr, env, err);
    if (!e->ast) {
        if (!gg_error_is_set(err)) gg_error_set(err, "S0207", "Unexpected end of expression");
        jsonata_free(e);
        return NULL;
    }
    fold_literal(e);
    return e;
}

/* Free a compiled expression. */
void jsonata_free(jsonata_expr *e) {
    if (!e) return;
    jn_node_free(e->ast);
    json_decref(e->literal);
    free(e->source);
    free(e);
}

/* The source text an expression was compiled from. */
const char *jsonata_source(const jsonata_expr *e) { return e ? e->source : NULL; }

/* Evaluate e against input and bindings (both borrowed); see jsonata.h. */
json_t *jsonata_evaluate(const jsonata_expr *e, json_t *input, json_t *bindings,
                         const jsonata_options *opts, void *call_user, gg_error *err) {
    if (e->literal) {
        json_t *copy = gg_json_clone(e->literal);
        if (!copy) jn_oom(err);
        return copy;
    }
    jn_value *in = NULL, *b = NULL;
    if (input && !(in = jn_from_json_lazy(input))) {
        jn_oom(err);
        return NULL;
    }
    if (bindings && !(b = jn_from_json(bindings))) {
        jn_decref(in);
        jn_oom(err);
        return NULL;
    }
    gg_error local = GG_ERROR_INIT;
    jn_value *r = jn_evaluate_ast(e->ast, in, b, e->env, opts, call_user, &local);
    jn_decref(b);
    if (gg_error_is_set(&local)) {
        jn_decref(r);
        gg_error_move(err, &local);
        return NULL;
    }
    json_t *out = jn_to_json(r);
    jn_decref(r);
    return out;
}

/* Compile, evaluate once and free. */
json_t *jsonata_eval_string(const char *expr, json_t *input, json_t *bindings,
                            const jsonata_options *opts, gg_error *err) {
    jsonata_expr *e = jsonata_compile(expr, NULL, err);
    if (!e) return NULL;
    json_t *r = jsonata_evaluate(e, input, bindings, opts, NULL, err);
    jsonata_free(e);
    return r;
}

/* ---- calls to functions that do not exist (graph validation) ------------------------------ */

typedef struct name_set {
    const char **v;
    size_t n, cap;
} name_set;

static void names_add(name_set *s, const char *name) {
    if (!name || !*name) return;
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 8;
        const char **nv = realloc(s->v, nc * sizeof *nv);
        if (!nv) return; /* a lost name can only add a warning, never hide an error */
        s->v = nv;
        s->cap = nc;
    }
    s->v[s->n++] = name;
}

static bool names_has(const name_set *s, const char *name) {
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->v[i], name)) return true;
    return false;
}

typedef void (*node_visit)(const jn_node *n, void *user);

/* Visit n and every node under it (the same children jn_node_free releases). */
static void walk_nodes(const jn_node *n, node_visit visit, void *user) {
    if (!n) return;
    visit(n, user);
    walk_nodes(n->lhs, visit, user);
    walk_nodes(n->rhs, visit, user);
    walk_nodes(n->third, visit, user);
    for (int i = 0; i < n->nitems; i++) walk_nodes(n->items[i], visit, user);
    for (int i = 0; i < n->npairs; i++) {
        walk_nodes(n->pairs[i].key, visit, user);
        walk_nodes(n->pairs[i].val, visit, user);
    }
    for (int i = 0; i < n->nterms; i++) walk_nodes(n->terms[i].expr, visit, user);
    for (int i = 0; i < n->nstages; i++) walk_nodes(n->stages[i].expr, visit, user);
    walk_nodes(n->group, visit, user);
}

/* Every name the expression binds somewhere: $v := ..., lambda parameters, @$v, #$i. Scope
 * is ignored on purpose: a name bound anywhere is never reported. */
static void collect_bound(const jn_node *n, void *user) {
    name_set *s = user;
    if (n->type == N_BIND && n->lhs) names_add(s, n->lhs->str);
    if (n->type == N_LAMBDA)
        for (int i = 0; i < n->nitems; i++) names_add(s, n->items[i]->str);
    names_add(s, n->focus);
    names_add(s, n->index);
    for (int i = 0; i < n->nstages; i++) names_add(s, n->stages[i].var);
}

typedef struct unknown_walk {
    name_set bound;
    jsonata_unknown_call_fn fn;
    void *user;
} unknown_walk;

static void report_unknown(const jn_node *n, void *user) {
    unknown_walk *w = user;
    if (n->type != N_CALL && n->type != N_PARTIAL) return;
    const jn_node *f = n->lhs;
    if (!f || f->type != N_VAR || f->builtin || f->ext || !f->str || !*f->str || names_has(&w->bound, f->str)) return;
    /* a variable token ends at position and is "$" + name long */
    w->fn(w->user, f->str, f->position - (int)strlen(f->str) - 1);
}

/* See jsonata.h. */
void jsonata_unknown_calls(const jsonata_expr *e, const char *const *known, size_t nknown,
                           jsonata_unknown_call_fn fn, void *user) {
    if (!e || !fn) return;
    unknown_walk w = {{NULL, 0, 0}, fn, user};
    for (size_t i = 0; i < nknown; i++) names_add(&w.bound, known[i]);
    walk_nodes(e->ast, collect_bound, &w.bound);
    walk_nodes(e->ast, report_unknown, &w);
    free(w.bound.v);
}

/* A name cut short ($upper, $substr) is far from the function by edit distance: the shortest
 * candidate that name begins (at least 3 characters of it), or NULL. */
static const char *shortest_extension(const char *name, const char *const *names, size_t n) {
    size_t len = strlen(name);
    const char *best = NULL;
    for (size_t i = 0; len >= 3 && i < n; i++)
        if (!strncmp(names[i], name, len) && (!best || strlen(names[i]) < strlen(best))) best = names[i];
    return best;
}

/* See jsonata.h. */
const char *jsonata_closest_function(const jsonata_env *env, const char *name) {
    size_t n = jn_builtins_count + (env ? env->n : 0);
    const char **names = malloc(n * sizeof *names);
    if (!names) return NULL; /* the suggestion is a courtesy */
    for (size_t i = 0; i < jn_builtins_count; i++) names[i] = jn_builtins[i].name;
    for (size_t i = 0; env && i < env->n; i++) names[jn_builtins_count + i] = env->fns[i]->name;
    const char *best = gg_closest(name, names, n);
    if (!best) best = shortest_extension(name, names, n);
    free(names);
    return best;
}
