/* jsonata.h — the JSONata 2.2 engine: compile an expression once, evaluate it many times.
 *
 * Ownership: jsonata_compile returns an owned, immutable handle (release with jsonata_free)
 * that any number of threads may evaluate at once; every function borrows its json_t
 * arguments and returns a new reference (or NULL for "undefined") the caller must decref.
 */
#ifndef GG_JSONATA_H
#define GG_JSONATA_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include "util/util.h"

typedef struct jsonata_expr jsonata_expr;
typedef struct jsonata_env jsonata_env;   /* registered native functions; immutable once built */
typedef struct jsonata_call jsonata_call; /* opaque per-evaluation state given to natives */

/* Limits for one evaluation; zero means "use the default". */
typedef struct jsonata_options {
    int max_depth;            /* nested evaluation steps before D1011 (default 10000; the suite's
                               * "depth" counts the same way as the reference's harness) */
    int time_limit_ms;        /* wall time before D1012 (default 0 = none) */
    long max_sequence_length; /* longest sequence/array/range produced, D2014 (default 10,000,000) */
    const atomic_int *cancel; /* optional: evaluation stops with D1013 once *cancel != 0 */
    long max_stack_bytes;     /* C stack an evaluation may use before D1011 (default 4 MB;
                               * lower it when evaluating on threads with small stacks) */
    long max_memory_bytes;    /* live bytes of values (strings, arrays, objects, sequences,
                               * ranges) the evaluation may hold at once before D1014
                               * (default 1 GiB; bytes freed during the evaluation are
                               * given back, so long loops of short-lived values pass) */
} jsonata_options;

/* The memory budget of the evaluation running on this thread. jsonata_evaluate installs
 * one for its values; other engines (JSON Logic, for the json_t it allocates) install
 * theirs with jsonata_budget_swap and allocate through jsonata_budget_malloc/free, which
 * count the LIVE bytes (a free gives them back) and fail an allocation that would pass
 * the limit, setting exceeded. Without a budget they are plain malloc/free. */
typedef struct jsonata_budget {
    long live, limit, peak;
    bool exceeded;
} jsonata_budget;
jsonata_budget *jsonata_budget_swap(jsonata_budget *b); /* returns the previous one */
void *jsonata_budget_malloc(size_t n);
void jsonata_budget_free(void *p);
/* Small blocks freed through these (every json_t, JSONata's values) wait in a per-thread
 * cache for the next allocation of their size (value.c). This returns the calling thread's
 * cached blocks to free() and stops caching on it: for a test that counts malloc and free
 * calls (tests/jsonata/test_parse_oom.c). */
void jsonata_alloc_cache_close(void);

/* A native function: args are borrowed (NULL for undefined), result is a new reference or
 * NULL for undefined. On failure set err (code, message) and return NULL. user is the
 * pointer given at registration; call_user is the pointer given to jsonata_evaluate. */
typedef json_t *(*jsonata_native_fn)(jsonata_call *call, json_t **args, int nargs,
                                     void *user, void *call_user, gg_error *err);

/* Environments hold extra native functions (e.g. graphgate's $previousNode). Build one,
 * register functions, then share it read-only. NULL env means "builtins only". */
jsonata_env *jsonata_env_new(void);
/* signature uses JSONata's syntax, e.g. "<n?:j>" ; NULL means "any arguments". */
bool jsonata_env_register(jsonata_env *env, const char *name, const char *signature,
                          jsonata_native_fn fn, void *user, gg_error *err);
void jsonata_env_free(jsonata_env *env);

/* Parse and compile. On error returns NULL and fills err: code is the reference's code
 * (e.g. "S0202"), position the character offset, message the reference's text. */
jsonata_expr *jsonata_compile(const char *expr, const jsonata_env *env, gg_error *err);
void jsonata_free(jsonata_expr *e);
const char *jsonata_source(const jsonata_expr *e);

/* The calls $name(...) in e whose name is neither a builtin, a function of e's environment,
 * a variable bound anywhere in e ($v := ..., lambda parameters, @$v, #$i) nor one of known
 * (variables the embedder binds at evaluation, without "$"): evaluating such a call fails
 * ("Attempted to invoke a non-function"), so a validator reports it before. fn gets each
 * name (without "$") and the character offset of its "$" in the source. */
typedef void (*jsonata_unknown_call_fn)(void *user, const char *name, int offset);
void jsonata_unknown_calls(const jsonata_expr *e, const char *const *known, size_t nknown,
                           jsonata_unknown_call_fn fn, void *user);
/* The builtin or env function name closest to name (gg_closest, else the shortest one name
 * begins), for "did you mean"; NULL when none is close. Points into a static table or env. */
const char *jsonata_closest_function(const jsonata_env *env, const char *name);

/* Evaluate against input (NULL = undefined). bindings: object of extra $variables (may be
 * NULL). call_user is handed to native functions. Returns the result (NULL = undefined, in
 * which case err is unset) or NULL with err set. err->path, when set, holds the offending
 * token (the suite's "token" field). */
json_t *jsonata_evaluate(const jsonata_expr *e, json_t *input, json_t *bindings,
                         const jsonata_options *opts, void *call_user, gg_error *err);

/* Convenience: compile + evaluate + free. */
json_t *jsonata_eval_string(const char *expr, json_t *input, json_t *bindings,
                            const jsonata_options *opts, gg_error *err);

/* JavaScript's Number.prototype.toString for a double: gg_js_number_format (util.h), under
 * the name JSONata's code calls it by. */
static inline void jsonata_format_double(double d, char *buf, size_t size) { gg_js_number_format(d, buf, size); }

/* Serialize a json_t the way JSON.stringify does (numbers printed as JavaScript prints
 * them). indent 0 = compact. Caller frees. */
char *jsonata_dump(json_t *v, int indent);
/* The same, compact, appended to a buffer; and one string literal. False on OOM. */
bool jsonata_dump_to(gg_strbuf *b, json_t *v);
bool jsonata_dump_string_to(gg_strbuf *b, const char *s, size_t len);

#endif
