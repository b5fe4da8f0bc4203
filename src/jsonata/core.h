/* core.h — private structures of the JSONata core (AST, functions, frames, evaluation
 * state). Ownership: an AST belongs to its jsonata_expr and is never mutated after
 * compilation; frames belong to the evaluation state that created them. */
#ifndef GG_JSONATA_CORE_H
#define GG_JSONATA_CORE_H

#include "jsonata/internal.h"

typedef enum {
    N_NUMBER, N_STRING, N_VALUE, N_REGEX, N_NAME, N_VAR, N_WILDCARD, N_DESCENDANT,
    N_PARENT, N_PATH, N_BINARY, N_NEGATE, N_ARRAY, N_OBJECT, N_CALL, N_PARTIAL,
    N_PLACEHOLDER, N_LAMBDA, N_CONDITION, N_BLOCK, N_BIND, N_APPLY, N_SORT,
    N_TRANSFORM, N_COALESCE, N_ELVIS, N_FILTER_EXPR /* non-path expression with stages */
} jn_ntype;

typedef enum {
    OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MOD, OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE,
    OP_AND, OP_OR, OP_CONCAT, OP_RANGE, OP_IN
} jn_op;

typedef struct jn_node jn_node;

typedef struct jn_stage { /* predicate [expr] or index binding #$i on a step */
    int kind;             /* 0 = filter, 1 = index */
    jn_node *expr;
    char *var;            /* index variable name */
    int position;
} jn_stage;

typedef struct jn_pair {
    jn_node *key, *val;
} jn_pair;

typedef struct jn_sortterm {
    jn_node *expr;
    bool desc;
} jn_sortterm;

struct jn_node {
    jn_ntype type;
    int position;          /* character offset (end of token, like the reference) */
    jn_op op;
    char *str;             /* name / string / variable / operator token */
    size_t slen;
    double num;
    jn_value *value;       /* literal (immortal) */
    jn_node *lhs, *rhs, *third;
    jn_node **items;       /* path steps, array items, call args, block exprs, lambda params */
    int nitems;
    jn_pair *pairs;        /* object constructor / group-by */
    int npairs;
    jn_sortterm *terms;
    int nterms;
    jn_stage *stages;      /* predicates / index bindings (steps and filter exprs) */
    int nstages;
    jn_node *group;        /* group-by object node (pairs) attached to a step or expr */
    char *focus;           /* @$var */
    char *index;           /* #$var (when not inside stages) */
    jn_sig *sig;           /* lambda signature */
    const jn_builtin *builtin;  /* N_VAR resolving to a builtin */
    jn_value *builtin_fn;       /* immortal function value for that builtin */
    const struct jn_extern *ext; /* N_VAR resolving to a registered extern */
    bool keep_array;       /* step[] */
    bool cons_array;       /* array constructor used as a path step */
    bool keep_singleton;
    bool tuple;            /* path needs a tuple stream (focus/index/parent) */
    bool thunk;            /* lambda body is a tail call */
    bool constant;         /* value does not depend on context or variables */
    bool scope;            /* N_BLOCK: binds variables itself, so it needs its own frame */
    uint32_t khash;        /* N_NAME: hash of the key (jn_hash_key) */
    int slot;              /* parse-time: ancestry slot + 1 (% nodes, ancestor steps) */
    int *seek;             /* parse-time: unresolved ancestry slots */
    int nseek;
    char *label;           /* % node: label to look up; step: label binding its input */
};

typedef enum { FN_LAMBDA, FN_NATIVE, FN_EXTERN, FN_PARTIAL, FN_CLOSURE, FN_THUNK, FN_COMPOSE } jn_fnkind;

typedef struct jn_extern {
    char *name;
    jn_sig *sig;
    jsonata_native_fn fn;
    void *user;
    jn_value *fnval; /* immortal */
} jn_extern;

struct jn_function {
    jn_fnkind kind;
    const jn_node *lambda;     /* FN_LAMBDA */
    jn_frame *env;             /* FN_LAMBDA closure scope (owned by the eval state) */
    jn_value *input;           /* FN_LAMBDA captured context (owned ref) */
    const jn_builtin *builtin; /* FN_NATIVE */
    const jn_extern *ext;      /* FN_EXTERN */
    jn_sig *sig;               /* FN_NATIVE/FN_CLOSURE signature (owned unless borrowed_sig) */
    bool borrowed_sig;
    bool lazy_ok;              /* FN_NATIVE: never walks object entries itself, so its
                                * arguments need not be materialized (see jn_force) */
    jn_native_fn native;       /* FN_NATIVE / FN_CLOSURE */
    char *name;                /* FN_CLOSURE name (owned) */
    jn_value *bound;           /* FN_CLOSURE bound value */
    jn_value *target;          /* FN_PARTIAL function */
    jn_value **args;           /* FN_PARTIAL args (NULL slot = placeholder when ph[i]) */
    const jn_node *tcall;      /* FN_THUNK: the tail call to make (input in .input, scope in .env) */
    bool *ph;
    int nargs;
};

/* signatures */
jn_sig *jn_sig_parse(const char *s, gg_error *err);
void jn_sig_free(jn_sig *sig);
int jn_sig_arity(const jn_sig *sig);
/* Validate + coerce args into *out: args itself when every parameter takes the argument in
 * its place unchanged (nothing to release); otherwise a new vector of new references, buf
 * when it has room (bufcap entries), else malloc'd (free it when *out != buf). */
bool jn_sig_validate(const jn_sig *sig, jn_value **args, int nargs, jn_value *context,
                     jn_value ***out, int *nout, int position, const char *name, gg_error *err,
                     jn_value **buf, int bufcap);

/* values */
jn_value *jn_function_value(jn_function *f);  /* takes f */
void jn_make_immortal(jn_value *v);
void jn_free_immortal(jn_value *v);
bool jn_is_sequence(const jn_value *v);
jn_value *jn_array_copy(const jn_value *a, size_t extra);
jn_value *jn_from_json_lazy(json_t *j);
jn_value *jn_object_get_key(const jn_value *obj, jn_value *key, uint32_t hash);
uint32_t jn_hash_key(const char *s, size_t n);
void jn_object_remove(jn_value *o, const char *key, size_t klen);

/* parser */
jn_node *jn_parse(const char *src, const jsonata_env *env, gg_error *err);
void jn_node_free(jn_node *n);

struct jsonata_env {
    jn_extern **fns; /* each allocated separately: compiled expressions point at them */
    size_t n, cap;
};

struct jsonata_expr {
    char *source;
    jn_node *ast;
    const jsonata_env *env;
    json_t *literal; /* the value of a tree of literals, computed once at compile time
                      * (literal_tree in api.c); NULL otherwise. Read-only after compile:
                      * threads evaluating e deep-copy it and never touch its count. */
};

/* evaluation (input is consumed) */
jn_value *jn_evaluate_ast(const jn_node *ast, jn_value *input, jn_value *bindings,
                          const jsonata_env *env, const jsonata_options *opts,
                          void *call_user, gg_error *err);

#endif
