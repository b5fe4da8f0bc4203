/* internal.h — the contract between the JSONata core (values, parser, evaluator) and the
 * function library (fn_*.c). Ownership: every jn_value* a function returns is a new
 * reference the caller must jn_decref; every jn_value* a function takes is borrowed unless
 * its comment says "owned" (then it is consumed even on failure).
 *
 * VALUE MODEL
 *  - "undefined" is the NULL pointer. Natives receive NULL for an undefined argument and
 *    return NULL (with err unset) for an undefined result.
 *  - null / true / false are immortal singletons (jn_null(), jn_bool(b)); incref/decref on
 *    immortal values (rc < 0) is a no-op, so callers never need to special-case them.
 *  - number: IEEE double; the integers 0..255 are immortal too (jn_number hands out shared
 *    values), so a number is never changed after it is made.
 *  - string: UTF-8 bytes (NUL-terminated, may contain no NUL) with a cached length in UTF-16
 *    code units (what JavaScript's .length reports); use jn_str_u16_to_byte() to turn a JS
 *    index into a byte offset.
 *  - array: items + flags. JN_F_SEQUENCE marks a JSONata result sequence (the evaluator
 *    collapses a length-1 sequence to its item and a length-0 sequence to undefined unless
 *    JN_F_KEEP is set). A native that returns a plain array (jn_array_new) returns an array;
 *    one that returns jn_seq_new() returns a sequence — do what the reference does.
 *  - object: insertion-ordered string keys; setting an existing key replaces the value in
 *    place (JS semantics).
 *  - function: lambda, native builtin, registered extern, partial application, or a native
 *    closure (jn_native_new with a bound value). regex: a compiled PCRE2 pattern; it is
 *    callable (applying it to a string returns the reference's match object with next()).
 *  - objects converted from the input may be lazy (u.obj.lazy != NULL) until forced;
 *    arguments given to natives are always forced (see jn_force).
 *  - values are immutable once handed out. Build arrays/objects with push/set, then share.
 *  - refcounts are not atomic: values created during an evaluation belong to that
 *    evaluation's thread. Values owned by a compiled expression are immortal.
 *  - constructors return NULL on out-of-memory; natives then call jn_oom(err).
 *
 * BUILTINS
 *  jsonata-lib defines jn_builtins[] / jn_builtins_count. The evaluator resolves $name to a
 *  builtin at compile time (a user binding of the same name shadows it). Before calling a
 *  native the evaluator validates and coerces the arguments against its signature exactly
 *  as the reference does: context substitution for '-' (T0411 on mismatch), arity and type
 *  checks (T0410), array-element checks (T0412), wrapping a single value into an array for
 *  'a<x>' parameters. So a native can trust its argument types (undefined may still appear
 *  where the signature allows optional or 'x'/'j' etc.). The evaluator fills the error
 *  position and token (the function name) when a native leaves them unset.
 *  Signature NULL means "no validation": args are passed as evaluated.
 */
#ifndef GG_JSONATA_INTERNAL_H
#define GG_JSONATA_INTERNAL_H

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>
#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>
#include "jsonata/jsonata.h"
#include "util/util.h"

typedef enum jn_type {
    JN_UNDEFINED = 0, /* only ever reported by jn_type_of(NULL) */
    JN_NULL,
    JN_BOOL,
    JN_NUMBER,
    JN_STRING,
    JN_ARRAY,
    JN_OBJECT,
    JN_FUNCTION,
    JN_REGEX
} jn_type;

/* array flags */
#define JN_F_SEQUENCE 0x01 /* a JSONata sequence, not a JSON array literal */
#define JN_F_KEEP 0x02     /* keepSingleton: do not collapse a length-1 sequence (path[]) */
#define JN_F_OUTER 0x04    /* outerWrapper: sequence created by a path step */
#define JN_F_CONS 0x08     /* array produced by an array constructor (not flattened) */
#define JN_F_TUPLE 0x10    /* internal tuple stream (evaluator only) */
#define JN_F_CLONE 0x20    /* object copied by a transform (|...|): its own, so changed in place */

typedef struct jn_value jn_value;
typedef struct jsonata_call jn_call;
typedef struct jn_state jn_state; /* per-evaluation state (opaque) */
typedef struct jn_frame jn_frame; /* variable scope (opaque) */
typedef struct jn_sig jn_sig;     /* parsed signature (opaque) */
typedef struct jn_function jn_function;

typedef struct jn_objent {
    jn_value *key; /* a string value */
    jn_value *val;
} jn_objent;

typedef struct jn_regex {
    pcre2_code *code;  /* compiled with PCRE2_UTF|PCRE2_DOLLAR_ENDONLY (+CASELESS/MULTILINE) */
    char *source;      /* pattern text as written between the slashes */
    char flags[4];     /* "i", "m", "im" ... */
} jn_regex;

struct jn_value {
    int32_t rc; /* reference count; < 0 = immortal */
    uint8_t type;
    uint8_t flags;
    union {
        bool b;
        double n;
        struct {
            char *s;
            size_t len;  /* bytes */
            size_t ulen; /* UTF-16 code units */
            /* a literal (immortal) that a $formatNumber call takes as its picture: the
             * picture analysed once at compile time (owned; see jn_numfmt_compile) */
            struct jn_numfmt *numfmt;
        } str;
        struct {
            jn_value **items;
            size_t n, cap;
        } arr;
        struct {
            jn_objent *ents;
            size_t n, cap;
            uint32_t *index; /* open-addressing hash (entry index + 1), built past 8 keys */
            size_t icap;
            void *lazy; /* core-internal: unconverted json_t source (see jn_force) */
        } obj;
        jn_function *fn;
        jn_regex *re;
    } u;
};

/* ---- native functions ---- */
typedef jn_value *(*jn_native_fn)(jn_call *call, jn_value **args, int nargs, gg_error *err);

typedef struct jn_builtin {
    const char *name;      /* without '$' */
    const char *signature; /* JSONata signature, e.g. "<s-nn?:s>", or NULL */
    jn_native_fn fn;
} jn_builtin;

extern const jn_builtin jn_builtins[];
extern const size_t jn_builtins_count;

/* What a native sees about the call in progress. All pointers are borrowed. */
struct jsonata_call {
    jn_state *st;       /* evaluation state (limits, timestamp, user pointer) */
    jn_value *input;    /* the context value the call was evaluated against */
    jn_frame *env;      /* lexical environment at the call site (for $eval) */
    jn_value *self;     /* the function value being invoked */
    int position;       /* character offset of the call in the expression */
    const char *name;   /* name the function was called by (for error tokens), may be NULL */
};

/* ---- memory budget ----
 * Value storage (headers, string bytes, item/entry arrays, key indexes) is allocated
 * through jn_malloc/jn_realloc/jn_free. While an evaluation runs on a thread, its budget
 * (thread-local, set by jsonata_evaluate) counts the LIVE bytes: an allocation that would
 * take it past the limit fails like out-of-memory and marks the budget exceeded (reported
 * as D1014), and a free gives the bytes back, so a long loop of short-lived values never
 * accumulates. No budget (compile time, other threads' values) means plain malloc. */
typedef jsonata_budget jn_budget;
extern _Thread_local jn_budget *jn_tl_budget;
void *jn_malloc(size_t n);
void *jn_calloc(size_t n, size_t size);
void *jn_realloc(void *p, size_t n);
void jn_free(void *p);
bool jn_charge(void *p); /* count memory malloc'd elsewhere now owned by a value */

/* ---- refcounting ---- */
static inline jn_value *jn_incref(jn_value *v) {
    if (v && v->rc >= 0) v->rc++;
    return v;
}
void jn_value_free_(jn_value *v);
static inline void jn_decref(jn_value *v) {
    if (v && v->rc > 0 && --v->rc == 0) jn_value_free_(v);
}
static inline jn_type jn_type_of(const jn_value *v) { return v ? (jn_type)v->type : JN_UNDEFINED; }

/* ---- constructors (NULL on OOM, except the immortal singletons) ---- */
jn_value *jn_null(void);
jn_value *jn_bool(bool b);
jn_value *jn_number(double d);
jn_value *jn_string(const char *s, size_t len);   /* copies */
jn_value *jn_string_cstr(const char *s);          /* copies */
jn_value *jn_string_cat(const char *a, size_t alen, const char *b, size_t blen); /* copies */
jn_value *jn_string_take(char *s, size_t len);    /* owns malloc'd s (NUL at s[len]) even on failure */
jn_value *jn_strbuf_to_string(gg_strbuf *b);      /* takes b's bytes; b is reset */
jn_value *jn_array_new(size_t cap_hint);          /* plain array */
jn_value *jn_seq_new(size_t cap_hint);            /* sequence (JN_F_SEQUENCE) */
bool jn_array_push(jn_value *arr, jn_value *v);   /* v owned; false on OOM */
jn_value *jn_object_new(size_t cap_hint);
bool jn_object_set(jn_value *obj, const char *key, size_t klen, jn_value *v); /* v owned */
bool jn_object_set_key(jn_value *obj, jn_value *key, jn_value *v); /* key borrowed string, v owned */
jn_value *jn_object_get(const jn_value *obj, const char *key, size_t klen);  /* borrowed */

/* A native closure: fn is called with call->self == the returned function, whose bound
 * value (owned by the function) is jn_fn_bound(call->self). signature may be NULL. */
jn_value *jn_native_new(const char *name, const char *signature, jn_native_fn fn,
                        jn_value *bound /* owned */, gg_error *err);
jn_value *jn_fn_bound(const jn_value *fn);

/* ---- conversions ---- */
jn_value *jn_from_json(json_t *j);          /* NULL json = undefined; NULL also on OOM */
/* Objects converted from the evaluation input are materialized on demand. Natives
 * receive fully materialized arguments (the evaluator forces them) — except the builtins
 * listed in parser.c lazy_safe_builtin(), which must read objects only through
 * jn_object_get / jn_deep_equal / jn_to_string / jn_truthy (or call jn_force first).
 * Code that walks u.obj of values obtained some other way calls these. false on OOM. */
bool jn_force(jn_value *v);                 /* materialize one object's entries */
bool jn_force_deep(jn_value *v);            /* ... and everything below it */
json_t *jn_to_json(const jn_value *v);      /* undefined -> NULL; functions -> "" */

/* JSON.stringify with the reference's $string replacer: numbers rounded to 15 significant
 * digits and printed by jsonata_format_double, functions as "", non-finite numbers are
 * error D3001. A string value is returned as itself. pretty = 2-space indentation. */
jn_value *jn_to_string(jn_call *call, const jn_value *v, bool pretty, gg_error *err);
/* Append v serialized as above to out (strings quoted). */
bool jn_stringify(const jn_value *v, bool pretty, gg_strbuf *out, gg_error *err);

/* ---- helpers for natives ---- */
bool jn_deep_equal(const jn_value *a, const jn_value *b);
bool jn_is_function(const jn_value *v);       /* function or regex */
bool jn_is_array(const jn_value *v);
int jn_fn_arity(const jn_value *fn);          /* declared parameter count (for $map etc.) */
bool jn_truthy(const jn_value *v);             /* the reference's boolean cast ($boolean) */
/* Whether that cast meets an infinite number (alone or inside arrays, at any depth): the
 * reference's boolean() throws D1001 there, so every condition, predicate and $filter
 * does. NaN is no error: it is simply false. */
bool jn_truth_meets_infinity(const jn_value *v);
/* byte offset of UTF-16 index u16 (clamped to the string's end) */
size_t jn_str_u16_to_byte(const jn_value *s, size_t u16);
/* UTF-16 index of byte offset (for regex match positions) */
size_t jn_str_byte_to_u16(const jn_value *s, size_t byte);

/* Apply a function value (function or regex) to args (borrowed, NULL = undefined). */
jn_value *jn_apply(jn_call *call, jn_value *fn, jn_value **args, int nargs, gg_error *err);

/* $eval support: parse expr (error -> D3120) and evaluate it against input (NULL =
 * undefined) in call->env extended with the keys of bindings (an object or NULL);
 * evaluation errors are reported as D3121 carrying the inner message. */
jn_value *jn_eval_source(jn_call *call, const char *expr, size_t len, jn_value *input,
                         jn_value *bindings, gg_error *err);

/* Set err with code and printf message at the call's position. */
void jn_error(jn_call *call, gg_error *err, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void jn_oom(gg_error *err); /* D0000 out of memory */

/* Limits: returns false with err set (D1012 time, "cancelled") when the evaluation must
 * stop; call it inside any loop that may run long. */
bool jn_check_limits(jn_call *call, gg_error *err);
long jn_max_sequence(const jn_call *call);   /* longest array a native may build */
long long jn_now_ms(const jn_call *call);    /* evaluation timestamp (same for the whole eval) */
void *jn_call_user(const jn_call *call);     /* call_user given to jsonata_evaluate */

/* Regex compile (JS-syntax pattern; flags from "im"); NULL with err D1004-like on failure.
 * Owned by the caller; free with jn_regex_free. Regex values own theirs. */
jn_regex *jn_regex_compile(const char *pattern, size_t len, const char *flags, gg_error *err);
void jn_regex_free(jn_regex *re);
jn_value *jn_regex_value(jn_regex *re /* owned */);

#endif
