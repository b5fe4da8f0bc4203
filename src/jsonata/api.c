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
    return e;
}

/* Free a compiled expression. */
void jsonata_free(jsonata_expr *e) {
    if (!e) return;
    jn_node_free(e->ast);
    free(e->source);
    free(e);
}

/* The source text an expression was compiled from. */
const char *jsonata_source(const jsonata_expr *e) { return e ? e->source : NULL; }

/* Evaluate e against input and bindings (both borrowed); see jsonata.h. */
json_t *jsonata_evaluate(const jsonata_expr *e, json_t *input, json_t *bindings,
                         const jsonata_options *opts, void *call_user, gg_error *err) {
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
