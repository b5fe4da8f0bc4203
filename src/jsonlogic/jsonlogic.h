/* jsonlogic.h — JSON Logic rules (json-logic-js 2.0.5 semantics), compiled once.
 *
 * Ownership: jsonlogic_compile copies what it needs from the borrowed rule and returns an
 * owned immutable handle (jsonlogic_free) safe to share between threads; jsonlogic_apply
 * borrows its arguments and returns a new reference the caller must json_decref.
 * Results may share structure with the data and with the rule's constants: treat them as
 * read-only (gg_json_clone, util.h, before modifying).
 */
#ifndef GG_JSONLOGIC_H
#define GG_JSONLOGIC_H

#include <jansson.h>
#include <stdbool.h>
#include "util/util.h"

typedef struct jsonlogic_rule jsonlogic_rule;
typedef struct jsonlogic_ops jsonlogic_ops; /* custom operations; immutable once built */

/* How a string `var` path is resolved. The default is json-logic-js's dotted path.
 * Graph mode supplies a compiler that turns the path into something evaluated against the
 * execution context (graphgate compiles it as JSONata); iteration scopes (map, filter,
 * reduce, all, none, some) always use plain paths on the current element. */
typedef struct jsonlogic_var_resolver {
    /* Compile a var path once; return an opaque handle or NULL with err set. */
    void *(*compile)(void *user, const char *path, gg_error *err);
    /* Evaluate a compiled handle against data (borrowed); new reference or NULL (missing). */
    json_t *(*eval)(void *user, void *compiled, json_t *data, void *call_user, gg_error *err);
    void (*free)(void *user, void *compiled);
    void *user;
} jsonlogic_var_resolver;

typedef struct jsonlogic_options {
    const jsonlogic_ops *ops;                /* NULL = builtins only */
    const jsonlogic_var_resolver *resolver;  /* NULL = plain dotted paths */
    bool compat_semantics;                   /* follow the compat suites where they differ */
    int max_depth;                           /* rule nesting bound; 0 = default (256) */
    long max_memory_bytes;                   /* live bytes of JSON one evaluation may hold
                                              * before error "memory_exceeded"; 0 = default
                                              * (1 GiB) */
} jsonlogic_options;

/* A custom operation: args are the evaluated arguments and data the current scope (the
 * element inside map/filter/...), all borrowed and read-only. Return a new reference,
 * NULL for null, or NULL with err set to fail the evaluation. Names of control operations
 * (var, if, and, or, map, ...) are reserved; other builtins may be replaced. */
typedef json_t *(*jsonlogic_op_fn)(json_t **args, int nargs, json_t *data, void *user, gg_error *err);

jsonlogic_ops *jsonlogic_ops_new(void);
bool jsonlogic_ops_add(jsonlogic_ops *ops, const char *name, jsonlogic_op_fn fn, void *user);
void jsonlogic_ops_free(jsonlogic_ops *ops);

/* Compile errors: "unknown_operation", "depth_exceeded", or the resolver's own code (a
 * JSONata syntax error in graph mode); err->path is the JSON pointer of the node. Pure
 * operations on constants are folded here. */
jsonlogic_rule *jsonlogic_compile(json_t *rule, const jsonlogic_options *opts, gg_error *err);
/* Returns the result (never NULL on success: a missing value is JSON null) or NULL + err. */
json_t *jsonlogic_apply(const jsonlogic_rule *r, json_t *data, void *call_user, gg_error *err);
/* What a switch condition needs: the JavaScript truthiness of the result, without building
 * it as JSON. Returns 1 or 0, or -1 with err set. Prefer it to jsonlogic_truthy(apply(..)):
 * it is faster and exact where JSON is not (Infinity is truthy, though it prints as null). */
int jsonlogic_test(const jsonlogic_rule *r, json_t *data, void *call_user, gg_error *err);
void jsonlogic_free(jsonlogic_rule *r);

/* JavaScript truthiness as json-logic-js applies it ([] is falsy). */
bool jsonlogic_truthy(json_t *v);

/* Runtime error codes: "memory_exceeded" (the evaluation's memory budget), "type_error" (where json-logic-js throws a TypeError) and, with
 * compat_semantics, "nan", "invalid_arguments" and "thrown" ({"throw"}; the message is
 * the thrown type). jsonlogic_error_type names them as the compat suites do ("NaN",
 * "Invalid Arguments", the thrown type); NULL when err is unset. */
const char *jsonlogic_error_type(const gg_error *err);

#endif
