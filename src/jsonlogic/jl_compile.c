/* jl_compile.c — turn a JSON Logic rule into an immutable tree of jl_node, once.
 *
 * Everything a rule needs at run time is resolved here: operation names to opcodes or
 * custom functions, literal var paths to strings (or to resolver handles in graph mode),
 * constant sub-trees to one shared constant. The tree is never written after compile, so
 * any number of threads may evaluate it at once. */
#include "jsonlogic/jl_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define JL_DEFAULT_DEPTH 256
#define JL_DEFAULT_MEMORY (1L << 30)

struct jsonlogic_ops {
    size_t n, cap;
    struct custom_op { char *name; jsonlogic_op_fn fn; void *user; } *v;
};

/* Which builtins exist, which only in compat mode, and which take their arguments
 * unevaluated (special forms never overridable by custom operations). */
enum { F_COMPAT = 1, F_SPECIAL = 2, F_ITER = 4 };
static const struct { const char *name; uint8_t op, flags; } builtins[] = {
    {"var", OP_VAR, F_SPECIAL}, {"missing", OP_MISSING, 0}, {"missing_some", OP_MISSING_SOME, 0},
    {"if", OP_IF, F_SPECIAL}, {"?:", OP_IF, F_SPECIAL}, {"and", OP_AND, F_SPECIAL},
    {"or", OP_OR, F_SPECIAL}, {"==", OP_EQ, 0}, {"===", OP_SEQ, 0}, {"!=", OP_NE, 0},
    {"!==", OP_SNE, 0}, {">", OP_GT, 0}, {">=", OP_GE, 0}, {"<", OP_LT, 0}, {"<=", OP_LE, 0},
    {"!", OP_NOT, 0}, {"!!", OP_NOTNOT, 0}, {"max", OP_MAX, 0}, {"min", OP_MIN, 0},
    {"+", OP_PLUS, 0}, {"-", OP_MINUS, 0}, {"*", OP_MUL, 0}, {"/", OP_DIV, 0}, {"%", OP_MOD, 0},
    {"in", OP_IN, 0}, {"cat", OP_CAT, 0}, {"substr", OP_SUBSTR, 0}, {"merge", OP_MERGE, 0},
    {"map", OP_MAP, F_SPECIAL | F_ITER}, {"filter", OP_FILTER, F_SPECIAL | F_ITER},
    {"reduce", OP_REDUCE, F_SPECIAL | F_ITER}, {"all", OP_ALL, F_SPECIAL | F_ITER},
    {"none", OP_NONE, F_SPECIAL | F_ITER}, {"some", OP_SOME, F_SPECIAL | F_ITER},
    {"log", OP_LOG, 0},
    {"val", OP_VAL, F_COMPAT | F_SPECIAL}, {"exists", OP_EXISTS, F_COMPAT | F_SPECIAL},
    {"??", OP_COALESCE, F_COMPAT | F_SPECIAL}, {"try", OP_TRY, F_COMPAT | F_SPECIAL},
    {"throw", OP_THROW, F_COMPAT | F_SPECIAL}, {"preserve", OP_CONST, F_COMPAT | F_SPECIAL},
};

/* ---------------------------------------------------------------- custom operations */

/* Create an empty set of custom operations; add to it, then share it read-only. */
jsonlogic_ops *jsonlogic_ops_new(void) { return calloc(1, sizeof(jsonlogic_ops)); }

/* Register (or replace) operation name. Control operations (if, and, map, var, ...) cannot
 * be replaced, as in json-logic-js. Returns false on OOM or a reserved/empty name. */
bool jsonlogic_ops_add(jsonlogic_ops *ops, const char *name, jsonlogic_op_fn fn, void *user) {
    if (!ops || !name || !*name || !fn) return false;
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        if ((builtins[i].flags & F_SPECIAL) && strcmp(builtins[i].name, name) == 0) return false;
    for (size_t i = 0; i < ops->n; i++)
        if (strcmp(ops->v[i].name, name) == 0) { ops->v[i].fn = fn; ops->v[i].user = user; return true; }
    if (ops->n == ops->cap) {
        size_t cap = ops->cap ? ops->cap * 2 : 8;
        void *nv = realloc(ops->v, cap * sizeof *ops->v);
        if (!nv) return false;
        ops->v = nv;
        ops->cap = cap;
    }
    char *copy = strdup(name);
    if (!copy) return false;
    ops->v[ops->n++] = (struct custom_op){copy, fn, user};
    return true;
}

/* Free a set of custom operations (compiled rules do not keep a pointer to it). */
void jsonlogic_ops_free(jsonlogic_ops *ops) {
    if (!ops) return;
    for (size_t i = 0; i < ops->n; i++) free(ops->v[i].name);
    free(ops->v);
    free(ops);
}

/* ---------------------------------------------------------------- compiler */

typedef struct cctx {
    const jsonlogic_options *o;
    bool compat;
    int max_depth;
    gg_error *err;
    char where[256]; /* JSON pointer of the node being compiled, for messages */
    size_t wlen;
} cctx;

static void node_free(const jsonlogic_var_resolver *res, jl_node *n);

static jl_node *node_new(cctx *cc, uint8_t op) {
    jl_node *n = calloc(1, sizeof *n);
    if (!n) gg_error_set(cc->err, "oom", "out of memory compiling a rule");
    else n->op = op;
    return n;
}

static size_t where_push(cctx *cc, const char *seg) {
    size_t old = cc->wlen;
    int k = snprintf(cc->where + old, sizeof cc->where - old, "/%s", seg);
    if (k > 0) cc->wlen = old + (size_t)k < sizeof cc->where ? old + (size_t)k : sizeof cc->where - 1;
    return old;
}
static void where_pop(cctx *cc, size_t old) { cc->wlen = old; cc->where[old] = '\0'; }

static void fail(cctx *cc, const char *code, const char *msg, const char *name) {
    if (gg_error_is_set(cc->err)) return;
    gg_error_set(cc->err, code, msg, name);
    if (cc->wlen) gg_error_set_path(cc->err, cc->where);
}

static bool make_const(cctx *cc, jl_node *n, json_t *v) {
    n->op = OP_CONST;
    n->cjson = gg_json_clone(v);
    if (!n->cjson) { fail(cc, "oom", "out of memory compiling a rule%s", ""); return false; }
    n->cval = jl_wrap(n->cjson, JO_STATIC);
    return true;
}

static jl_node *compile(cctx *cc, json_t *rule, int depth, bool in_iter);
static void fold(cctx *cc, jl_node *n);
#define RES(cc) ((cc)->o ? (cc)->o->resolver : NULL)

static bool compile_args(cctx *cc, jl_node *n, json_t *args, int depth, bool iter_body) {
    n->args_array = json_is_array(args);
    size_t cnt = n->args_array ? json_array_size(args) : 1;
    if (cnt > 1000000) { fail(cc, "invalid_rule", "too many arguments for %s", n->name); return false; }
    n->nargs = (int)cnt;
    if (cnt == 0) return true;
    n->args = calloc(cnt, sizeof *n->args);
    if (!n->args) { fail(cc, "oom", "out of memory compiling %s", n->name); return false; }
    for (size_t i = 0; i < cnt; i++) {
        char idx[24];
        snprintf(idx, sizeof idx, "%zu", i);
        size_t old = n->args_array ? where_push(cc, idx) : cc->wlen;
        /* the logic of an iterator (its second argument) runs on each element */
        bool body = iter_body && i == 1;
        n->args[i] = compile(cc, n->args_array ? json_array_get(args, i) : args, depth + 1, n->in_iter || body);
        where_pop(cc, old);
        if (!n->args[i]) return false;
    }
    return true;
}

/* A var whose path is a literal: keep ToString(path), or hand it to the resolver. */
static bool prepare_var(cctx *cc, jl_node *n, json_t *args) {
    json_t *p = json_is_array(args) ? json_array_get(args, 0) : args;
    if (n->nargs == 0 || !p) { n->path_literal = true; return true; } /* whole data */
    if (json_is_object(p) && json_object_size(p) == 1) return true; /* computed at run time */
    if (json_is_array(p) && json_array_size(p) > 0) return true;    /* evaluated, then joined */
    n->path_literal = true;
    if (json_is_null(p) || (json_is_string(p) && json_string_length(p) == 0)) return true;
    gg_strbuf b = GG_STRBUF_INIT;
    jl_val v = jl_wrap(p, JO_BORROW);
    gg_error e = GG_ERROR_INIT;
    jl_ctx tmp = {.err = &e};
    bool ok = jl_to_string(&tmp, &v, &b, false);
    gg_error_clear(&e);
    n->path_len = b.len;
    n->path = ok ? gg_strbuf_take(&b) : NULL;
    gg_strbuf_free(&b);
    if (!n->path) { fail(cc, "oom", "out of memory compiling %s", "var"); return false; }
    if (n->path_len > UINT32_MAX) { fail(cc, "invalid_rule", "%s path too long", "var"); return false; }
    int nseg = 1;
    for (size_t i = 0; i < n->path_len; i++) nseg += n->path[i] == '.';
    if (!(n->segs = calloc((size_t)nseg, sizeof *n->segs))) { fail(cc, "oom", "out of memory compiling %s", "var"); return false; }
    uint32_t start = 0;
    for (uint32_t i = 0; i <= n->path_len; i++)
        if (i == n->path_len || n->path[i] == '.') {
            n->segs[n->nseg++] = (struct jl_seg){start, i - start};
            start = i + 1;
        }
    if (n->segs[0].len == 7 && memcmp(n->path, "current", 7) == 0) n->first_kind = 1;
    if (n->segs[0].len == 11 && memcmp(n->path, "accumulator", 11) == 0) n->first_kind = 2;
    const jsonlogic_var_resolver *res = cc->o ? cc->o->resolver : NULL;
    if (res && res->compile && !n->in_iter && json_is_string(p)) {
        gg_error e2 = GG_ERROR_INIT;
        n->resolved = res->compile(res->user, n->path, &e2);
        if (!n->resolved) {
            if (!gg_error_is_set(&e2)) gg_error_set(&e2, "invalid_var", "cannot compile var path");
            gg_error_move(cc->err, &e2);
            if (!cc->err->path && cc->wlen) gg_error_set_path(cc->err, cc->where);
            return false;
        }
    }
    return true;
}

/* The keys of missing / missing_some when the rule writes them as literal strings: the
 * evaluator then looks each one up in place (no path parsing, no argument vector) and
 * answers with one of the results built here. Other shapes keep the generic path. */
static bool prepare_missing(cctx *cc, jl_node *n) {
    const jsonlogic_var_resolver *res = RES(cc);
    if (res && res->compile && !n->in_iter) return true; /* keys go through the resolver */
    json_t *list = NULL;
    if (n->op == OP_MISSING) {
        if (n->nargs > 0 && n->args[0]->op == OP_CONST && json_is_array(n->args[0]->cjson)) list = n->args[0]->cjson;
        else
            for (int i = 0; i < n->nargs; i++)
                if (n->args[i]->op != OP_CONST || !json_is_string(n->args[i]->cjson)) return true;
    } else {
        if (n->nargs < 2 || n->args[0]->op != OP_CONST || n->args[1]->op != OP_CONST) return true;
        list = n->args[1]->cjson;
        if (!json_is_array(list) || json_is_array(json_array_get(list, 0))) return true;
    }
    size_t cnt = list ? json_array_size(list) : (size_t)n->nargs;
    if (cnt > 4096) return true;
    for (size_t i = 0; i < cnt; i++)
        if (!json_is_string(list ? json_array_get(list, i) : n->args[i]->cjson)) return true;
    if (cnt && !(n->mk = calloc(cnt, sizeof *n->mk))) goto oom;
    n->mk_n = (int)cnt;
    for (size_t i = 0; i < cnt; i++) {
        jl_mkey *k = &n->mk[i];
        k->j = list ? json_array_get(list, i) : n->args[i]->cjson;
        const char *s = k->s = json_string_value(k->j);
        size_t len = json_string_length(k->j);
        if (len == 0 || len > UINT32_MAX) continue; /* "" is the whole data: generic */
        int nseg = 1;
        for (size_t p = 0; p < len; p++) nseg += s[p] == '.';
        if (!(k->segs = calloc((size_t)nseg, sizeof *k->segs))) goto oom;
        uint32_t start = 0;
        for (uint32_t p = 0; p <= len; p++)
            if (p == len || s[p] == '.') {
                k->segs[k->nseg++] = (struct jl_seg){start, p - start};
                start = p + 1;
            }
    }
    if (cnt > JL_MK_SUBSETS) return true;
    size_t nsub = (size_t)1 << cnt;
    if (!(n->mk_sub = calloc(nsub, sizeof *n->mk_sub))) goto oom;
    n->mk_sub[0] = json_incref(n->cjson);
    for (size_t m = 1; m < nsub; m++) {
        json_t *a = json_array();
        if (!(n->mk_sub[m] = a)) goto oom;
        for (size_t i = 0; i < cnt; i++)
            if ((m >> i & 1) && json_array_append(a, n->mk[i].j) != 0) goto oom;
    }
    return true;
oom:
    fail(cc, "oom", "out of memory compiling %s", n->name);
    return false;
}

/* json-logic-engine (the compat suites) rejects some argument shapes outright. */
static bool compat_bad_args(const jl_node *n, json_t *args) {
    switch (n->op) {
    case OP_IF: case OP_AND: case OP_OR:
    case OP_EQ: case OP_SEQ: case OP_NE: case OP_SNE: case OP_GT: case OP_GE: case OP_LT: case OP_LE:
        if (!n->args_array) return true;
        return n->op >= OP_EQ && n->nargs < 2;
    case OP_MAP: case OP_FILTER: case OP_REDUCE: case OP_ALL: case OP_NONE: case OP_SOME:
        if (!n->args_array) return true;
        if (json_is_null(json_array_get(args, 0))) return true;
        return (n->op == OP_MAP || n->op == OP_FILTER || n->op == OP_REDUCE) && json_is_null(json_array_get(args, 1));
    default: return false;
    }
}

static jl_node *compile_op(cctx *cc, const char *name, json_t *args, int depth, bool in_iter) {
    const jsonlogic_ops *ops = cc->o ? cc->o->ops : NULL;
    int bi = -1;
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        if (strcmp(builtins[i].name, name) == 0 && (cc->compat || !(builtins[i].flags & F_COMPAT))) { bi = (int)i; break; }
    const struct custom_op *custom = NULL;
    if (ops && (bi < 0 || !(builtins[bi].flags & F_SPECIAL)))
        for (size_t i = 0; i < ops->n; i++)
            if (strcmp(ops->v[i].name, name) == 0) { custom = &ops->v[i]; break; }
    if (bi < 0 && !custom) { fail(cc, "unknown_operation", "Unrecognized operation %s", name); return NULL; }
    jl_node *n = node_new(cc, custom ? OP_CUSTOM : builtins[bi].op);
    if (!n) return NULL;
    n->in_iter = in_iter;
    n->name = custom ? custom->name : builtins[bi].name;
    if (custom) { n->fn = custom->fn; n->fn_user = custom->user; }
    else if (strcmp(name, "preserve") == 0) {
        if (!make_const(cc, n, args)) { free(n); return NULL; }
        return n;
    }
    size_t old = where_push(cc, name);
    bool ok = compile_args(cc, n, args, depth, !custom && (builtins[bi].flags & F_ITER));
    if (ok && n->op == OP_VAR) ok = prepare_var(cc, n, args);
    if (ok && n->op == OP_VAR) n->var_fast = n->path_literal && !n->resolved;
    if (ok && (n->op == OP_MISSING || n->op == OP_MISSING_SOME) && !(n->cjson = json_array())) {
        fail(cc, "oom", "out of memory compiling %s", name);
        ok = false;
    }
    if (ok && (n->op == OP_MISSING || n->op == OP_MISSING_SOME)) ok = prepare_missing(cc, n);
    where_pop(cc, old);
    if (!ok) { node_free(RES(cc), n); return NULL; }
    if (cc->compat && !custom && compat_bad_args(n, args)) n->op = OP_BAD_ARGS;
    else if (!custom) fold(cc, n);
    return n;
}

/* Operations whose result depends only on their arguments (no data, no side effects). */
static bool is_pure(uint8_t op) {
    switch (op) {
    case OP_IF: case OP_AND: case OP_OR: case OP_EQ: case OP_SEQ: case OP_NE: case OP_SNE:
    case OP_GT: case OP_GE: case OP_LT: case OP_LE: case OP_NOT: case OP_NOTNOT: case OP_MAX:
    case OP_MIN: case OP_PLUS: case OP_MINUS: case OP_MUL: case OP_DIV: case OP_MOD: case OP_IN:
    case OP_CAT: case OP_SUBSTR: case OP_MERGE: case OP_COALESCE:
        return true;
    default: return false;
    }
}

/* Constant folding: a pure operation on constants is evaluated once, here. Results JSON
 * cannot hold (NaN, Infinity, undefined) and errors stay for run time, so folding never
 * changes what a rule returns. */
static void fold(cctx *cc, jl_node *n) {
    if (!is_pure(n->op)) return;
    for (int i = 0; i < n->nargs; i++)
        if (n->args[i]->op != OP_CONST) return;
    struct jsonlogic_rule tmp = {.compat = cc->compat};
    gg_error e = GG_ERROR_INIT;
    jl_frame root = {.kind = F_ROOT, .item = JL_NULL};
    jl_ctx c = {.rule = &tmp, .top = &root, .err = &e, .compat = cc->compat};
    jl_val v;
    bool ok = jl_eval(&c, n, &v);
    json_decref(c.thrown);
    gg_error_clear(&e);
    if (ok && c.sentinel) { jl_release(&v); return; } /* holds NaN/undefined inside: keep it live */
    if (!ok) return;
    bool representable = v.t != JV_UNDEF && !(v.t == JV_NUM && !isfinite(v.u.n));
    json_t *j = representable ? jl_to_json(&v) : NULL;
    jl_release(&v);
    if (!j) return;
    for (int i = 0; i < n->nargs; i++) node_free(RES(cc), n->args[i]);
    free(n->args);
    n->args = NULL;
    n->nargs = 0;
    n->op = OP_CONST;
    n->cjson = j;
    n->cval = jl_wrap(j, JO_STATIC);
}

/* Arrays of constants fold into one constant array. */
static jl_node *compile_array(cctx *cc, json_t *rule, int depth, bool in_iter) {
    jl_node *n = node_new(cc, OP_ARRAY);
    if (!n) return NULL;
    n->in_iter = in_iter;
    n->name = "array";
    if (!compile_args(cc, n, rule, depth, false)) { node_free(RES(cc), n); return NULL; }
    for (int i = 0; i < n->nargs; i++)
        if (n->args[i]->op != OP_CONST) return n;
    /* built from the children's values: a child may itself be a folded operation */
    json_t *arr = json_array();
    for (int i = 0; arr && i < n->nargs; i++)
        if (json_array_append_new(arr, jl_to_json(&n->args[i]->cval)) != 0) { json_decref(arr); arr = NULL; }
    if (!arr) { fail(cc, "oom", "out of memory compiling %s", "an array"); node_free(RES(cc), n); return NULL; }
    for (int i = 0; i < n->nargs; i++) node_free(RES(cc), n->args[i]);
    free(n->args);
    n->args = NULL;
    n->nargs = 0;
    n->op = OP_CONST;
    n->cjson = arr;
    n->cval = jl_wrap(arr, JO_STATIC);
    return n;
}

static jl_node *compile(cctx *cc, json_t *rule, int depth, bool in_iter) {
    if (depth > cc->max_depth) {
        gg_error_set(cc->err, "depth_exceeded", "rule nested deeper than %d levels", cc->max_depth);
        if (cc->wlen) gg_error_set_path(cc->err, cc->where);
        return NULL;
    }
    if (json_is_array(rule)) return compile_array(cc, rule, depth, in_iter);
    if (json_is_object(rule) && json_object_size(rule) == 1) {
        const char *name = json_object_iter_key(json_object_iter(rule));
        return compile_op(cc, name, json_object_iter_value(json_object_iter(rule)), depth, in_iter);
    }
    jl_node *n = node_new(cc, OP_CONST);
    if (n && !make_const(cc, n, rule)) { free(n); return NULL; }
    return n;
}

static void node_free(const jsonlogic_var_resolver *res, jl_node *n) {
    if (!n) return;
    for (int i = 0; i < n->nargs; i++) node_free(res, n->args[i]);
    free(n->args);
    if (n->resolved && res && res->free) res->free(res->user, n->resolved);
    json_decref(n->cjson);
    if (n->mk_sub)
        for (size_t m = 0; m < (size_t)1 << n->mk_n; m++) json_decref(n->mk_sub[m]);
    free(n->mk_sub);
    for (int i = 0; i < n->mk_n; i++) free(n->mk[i].segs);
    free(n->mk);
    free(n->segs);
    free(n->path);
    free(n);
}

/* Whether evaluating n never allocates JSON (jansson's allocations are what the memory
 * budget counts), so that apply and test need not enter the budget (~20 instructions a
 * call). A short list of operations known not to build a json_t, for json-logic-js mode
 * without a resolver (the caller checks): vars read in place (only a reduce scope,
 * excluded here, builds an object for a var), logic, comparisons and arithmetic (their
 * strings are plain malloc, never counted), all/none/some over borrowed elements, and
 * missing whose every result is prebuilt (mk_sub). Anything else (map, filter, reduce,
 * merge, arrays, cat, custom operations, ...) keeps the budget. The recursion is bounded
 * by the rule's depth limit. */
static bool alloc_free(const jl_node *n) {
    switch (n->op) {
    case OP_CONST: return true;
    case OP_MISSING: case OP_MISSING_SOME:
        if (!n->mk_sub) return false;
        break;
    case OP_VAR: case OP_IF: case OP_AND: case OP_OR: case OP_NOT: case OP_NOTNOT:
    case OP_EQ: case OP_SEQ: case OP_NE: case OP_SNE: case OP_GT: case OP_GE: case OP_LT: case OP_LE:
    case OP_MAX: case OP_MIN: case OP_PLUS: case OP_MINUS: case OP_MUL: case OP_DIV: case OP_MOD:
    case OP_ALL: case OP_NONE: case OP_SOME:
        break;
    default: return false;
    }
    for (int i = 0; i < n->nargs; i++)
        if (!alloc_free(n->args[i])) return false;
    return true;
}

/* Compile rule (borrowed; nothing of it is kept) with opts (may be NULL). The resolver's
 * user pointer must outlive the rule; custom operations are copied into the tree. On error
 * returns NULL with err set (code "unknown_operation", "depth_exceeded", or the
 * resolver's own code; err->path is the JSON pointer of the offending node). */
jsonlogic_rule *jsonlogic_compile(json_t *rule, const jsonlogic_options *opts, gg_error *err) {
    gg_error local = GG_ERROR_INIT;
    if (!err) err = &local;
    cctx cc = {.o = opts, .compat = opts && opts->compat_semantics, .err = err};
    cc.max_depth = opts && opts->max_depth > 0 ? opts->max_depth : JL_DEFAULT_DEPTH;
    jsonlogic_rule *r = calloc(1, sizeof *r);
    if (!r) { gg_error_set(err, "oom", "out of memory compiling a rule"); gg_error_clear(&local); return NULL; }
    r->compat = cc.compat;
    r->max_memory = opts && opts->max_memory_bytes > 0 ? opts->max_memory_bytes : JL_DEFAULT_MEMORY;
    if (opts && opts->resolver) { r->has_resolver = true; r->resolver = *opts->resolver; }
    r->root = compile(&cc, rule ? rule : json_null(), 0, false);
    if (!r->root) {
        if (!gg_error_is_set(err)) gg_error_set(err, "invalid_rule", "cannot compile rule");
        free(r);
        gg_error_clear(&local);
        return NULL;
    }
    bool constant = r->root->op == OP_CONST;
    r->const_json = constant ? r->root->cjson : NULL; /* owned by root */
    r->const_truthy = constant ? (int8_t)jl_truthy(&r->root->cval) : -1;
    r->alloc_free = !constant && !r->compat && !r->has_resolver && alloc_free(r->root);
    return r;
}

/* Release a compiled rule (and, through the resolver's free, what it compiled). */
void jsonlogic_free(jsonlogic_rule *r) {
    if (!r) return;
    node_free(r->has_resolver ? &r->resolver : NULL, r->root);
    free(r);
}
