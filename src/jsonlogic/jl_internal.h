/* jl_internal.h — what the JSON Logic compiler, evaluator and coercions share inside
 * src/jsonlogic (not a public header: only jsonlogic.h is).
 *
 * Evaluation works on jl_val, a small tagged value that can hold what JSON cannot
 * (undefined, NaN, Infinity) and avoids a heap allocation for every scalar. Containers
 * and strings that come from JSON stay json_t; origin says who keeps them alive.
 */
#ifndef GG_JL_INTERNAL_H
#define GG_JL_INTERNAL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "jsonlogic/jsonlogic.h"

typedef enum { JV_UNDEF, JV_NULL, JV_BOOL, JV_NUM, JV_STR, JV_JSON } jl_type;

/* Who keeps a JV_JSON alive: STATIC = the compiled rule (immutable, copy before handing it
 * out), BORROW = the caller's data (lives through the whole apply), REF = we hold one
 * reference (drop it with jl_release). */
typedef enum { JO_STATIC, JO_BORROW, JO_REF } jl_origin;

typedef struct jl_val {
    uint8_t t;      /* jl_type */
    uint8_t origin; /* jl_origin, JV_JSON only */
    union {
        bool b;
        double n;
        json_t *j; /* string, array or object */
        struct { char *s; size_t len; } str; /* JV_STR: owned, NUL-terminated UTF-8 */
        /* JV_NUM read from the data or a constant keeps that json_t (borrowed, it outlives
         * the evaluation) so a result can share it instead of allocating a new number */
        struct { double n; json_t *src; } num;
    } u;
} jl_val;

#define JL_UNDEF ((jl_val){.t = JV_UNDEF})
#define JL_NULL ((jl_val){.t = JV_NULL})
static inline jl_val jl_bool(bool b) { jl_val v = {.t = JV_BOOL}; v.u.b = b; return v; }
static inline jl_val jl_num(double n) { jl_val v = {.t = JV_NUM}; v.u.num.n = n; v.u.num.src = NULL; return v; }
/* Setters write in place; "*out = jl_num(x)" built a temporary first and the copy stalled
 * on store forwarding in the hot paths (measured with perf). */
static inline void jl_set_bool(jl_val *out, bool b) { out->t = JV_BOOL; out->u.b = b; }
static inline void jl_set_num(jl_val *out, double n) { out->t = JV_NUM; out->u.num.n = n; out->u.num.src = NULL; }
static inline void jl_set_str(jl_val *out, char *s, size_t len) { out->t = JV_STR; out->u.str.s = s; out->u.str.len = len; }

/* Evaluation context (one per apply, on the caller's stack). */
typedef struct jl_ctx {
    const struct jsonlogic_rule *rule;
    struct jl_frame *top;
    void *call_user;
    gg_error *err;
    json_t *thrown; /* value of the last {"throw"} while err->code is "thrown" */
    bool compat;
    bool sentinel;  /* some array built here holds a NaN/Infinity/undefined sentinel */
} jl_ctx;

/* Arrays built during evaluation may hold what JSON cannot: NaN, +-Infinity, undefined.
 * They are stored as 2-byte strings starting with 0xFF (never valid UTF-8, so never
 * data), read back by jl_wrap_to, and replaced by null before anything leaves the
 * evaluator (jl_fix_sentinels). */
#define JL_SENTINEL 0xFF
static inline void jl_from_sentinel(jl_val *out, char kind) {
    if (kind == 'U') { out->t = JV_UNDEF; return; }
    out->t = JV_NUM;
    out->u.num.n = kind == 'I' ? INFINITY : kind == 'i' ? -INFINITY : NAN;
    out->u.num.src = NULL;
}

/* ---- values (jl_value.c; the hot helpers are inline) ---- */
void jl_release_slow(jl_val *v);
static inline void jl_release(jl_val *v) {
    if (v->t >= JV_STR) jl_release_slow(v);
    v->t = JV_UNDEF;
}
/* *dst = *src field by field, in the widths they were written in: a whole-struct copy of
 * a value written a moment ago (a scope's element) is one wide load over narrower stores,
 * which the CPU cannot forward and stalls on (measured: half of a var read). */
static inline void jl_copy_to(jl_val *dst, const jl_val *src) {
    dst->t = src->t;
    switch (src->t) {
    case JV_BOOL: dst->u.b = src->u.b; break;
    case JV_NUM: dst->u.num.n = src->u.num.n; dst->u.num.src = src->u.num.src; break;
    case JV_STR: dst->u.str.s = src->u.str.s; dst->u.str.len = src->u.str.len; break;
    case JV_JSON: dst->origin = src->origin; dst->u.j = src->u.j; break;
    default: break;
    }
}
/* Wrap a json_t. For JO_REF the reference is transferred to the result. Scalars become
 * immediate values. Written into *out: building the struct in pieces and returning it by
 * value made the compiler stall on store forwarding (measured). */
static inline void jl_wrap_to(jl_val *out, json_t *j, jl_origin origin) {
    if (!j) { out->t = JV_UNDEF; return; }
    switch (json_typeof(j)) {
    case JSON_NULL: out->t = JV_NULL; break;
    case JSON_TRUE: out->t = JV_BOOL; out->u.b = true; break;
    case JSON_FALSE: out->t = JV_BOOL; out->u.b = false; break;
    case JSON_INTEGER:
    case JSON_REAL:
        out->t = JV_NUM;
        out->u.num.n = json_number_value(j);
        out->u.num.src = origin == JO_REF ? NULL : j; /* a held reference is dropped below */
        break;
    case JSON_STRING:
        if (json_string_length(j) == 2 && (unsigned char)json_string_value(j)[0] == JL_SENTINEL) {
            jl_from_sentinel(out, json_string_value(j)[1]);
            break;
        }
        /* fall through */
    default:
        out->t = JV_JSON;
        out->origin = (uint8_t)origin;
        out->u.j = j;
        return; /* the reference (if any) moves into *out */
    }
    if (origin == JO_REF) json_decref(j);
}
static inline jl_val jl_wrap(json_t *j, jl_origin origin) {
    jl_val v = {0};
    jl_wrap_to(&v, j, origin);
    return v;
}
/* An independent copy (strings duplicated, references taken). false on OOM. */
bool jl_dup(const jl_val *v, jl_val *out);
/* A new json_t reference for v (v unchanged); NaN/Infinity/undefined become null like
 * JSON.stringify. NULL on OOM. */
json_t *jl_to_json(const jl_val *v);
/* The same for a value going into an array built during evaluation: NaN, Infinity and
 * undefined become sentinels (and c->sentinel is set). */
json_t *jl_to_json_elem(struct jl_ctx *c, const jl_val *v);
/* Replace sentinels by null inside arrays/objects (in place; only ever finds them in
 * containers this evaluation built). */
void jl_fix_sentinels(json_t *j, int depth);
/* Take ownership of a malloc'd string. */
jl_val jl_str_take(char *s, size_t len);
bool jl_str_copy(const char *s, size_t len, jl_val *out);

const char *jl_strp(const jl_val *v, size_t *len); /* NULL unless a string */
static inline bool jl_is_arr(const jl_val *v) { return v->t == JV_JSON && json_is_array(v->u.j); }
static inline bool jl_is_obj(const jl_val *v) { return v->t == JV_JSON && json_is_object(v->u.j); }
static inline bool jl_is_nullish(const jl_val *v) { return v->t == JV_UNDEF || v->t == JV_NULL; }
/* Element i of an array value, with the origin its container implies. */
static inline void jl_elem_to(jl_val *out, const jl_val *arr, size_t i) {
    json_t *e = json_array_get(arr->u.j, i);
    if (arr->origin == JO_REF) jl_wrap_to(out, json_incref(e), JO_REF);
    else jl_wrap_to(out, e, (jl_origin)arr->origin);
}
static inline jl_val jl_elem(const jl_val *arr, size_t i) {
    jl_val v = {0};
    jl_elem_to(&v, arr, i);
    return v;
}

/* a[0..n) == b[0..n): keys of data are short, and for 2 to 8 bytes two loads a side
 * (overlapping) cost less than memcmp's call and size dispatch (~17 instructions). */
static inline bool jl_mem_eq(const char *a, const char *b, size_t n) {
    if (n > 8) return memcmp(a, b, n) == 0;
    if (n >= 4) {
        uint32_t a0, b0, a1, b1;
        memcpy(&a0, a, 4), memcpy(&b0, b, 4), memcpy(&a1, a + n - 4, 4), memcpy(&b1, b + n - 4, 4);
        return a0 == b0 && a1 == b1;
    }
    if (n >= 2) {
        uint16_t a0, b0, a1, b1;
        memcpy(&a0, a, 2), memcpy(&b0, b, 2), memcpy(&a1, a + n - 2, 2), memcpy(&b1, b + n - 2, 2);
        return a0 == b0 && a1 == b1;
    }
    return n == 0 || a[0] == b[0];
}

/* Whether the key at iterator it is key[0..klen). Keys that differ mostly differ in
 * their first byte (a key is NUL-terminated, so k[0] is always there): that is checked in
 * line, and only a key that starts the same costs the length call and the compare. */
static inline bool jl_key_is(void *it, const char *key, size_t klen) {
    const char *k = json_object_iter_key(it);
    if (klen && k[0] != key[0]) return false;
    return json_object_iter_key_len(it) == klen && jl_mem_eq(k, key, klen);
}

/* json_object_getn for the data's lookups: objects of a few keys are scanned in order,
 * which costs less than jansson's hashing of the key (callgrind: ~120 instructions a
 * hashed lookup, the largest single cost of an apply); larger ones are hashed. */
#define JL_SCAN_KEYS 4
static inline json_t *jl_obj_get(json_t *o, const char *key, size_t klen) {
    if (json_object_size(o) > JL_SCAN_KEYS) return json_object_getn(o, key, klen);
    for (void *it = json_object_iter(o); it; it = json_object_iter_next(o, it))
        if (jl_key_is(it, key, klen)) return json_object_iter_value(it);
    return NULL;
}

/* ---- JavaScript coercions (jl_value.c) ---- */
bool jl_truthy(const jl_val *v);
double jl_to_number(const jl_val *v);              /* ToNumber (via ToPrimitive) */
double jl_parse_float(jl_ctx *c, const jl_val *v); /* parseFloat(ToString(v)) */
double jl_str_to_number(const char *s, size_t len);
/* Append ToString(v) to b; join_mode renders null/undefined as "" (Array.join). */
bool jl_to_string(jl_ctx *c, const jl_val *v, gg_strbuf *b, bool join_mode);
bool jl_loose_eq(jl_ctx *c, const jl_val *a, const jl_val *b);
bool jl_strict_eq(const jl_val *a, const jl_val *b);
/* Abstract relational comparison: -1, 0, 1, or 2 when unordered (NaN involved). */
int jl_compare(jl_ctx *c, const jl_val *a, const jl_val *b);

/* UTF-16 view of UTF-8 strings (JavaScript string semantics; length and order are util's
 * gg_utf16_len and gg_utf16_cmp). Byte offset of UTF-16 index i (clamped to len); *split
 * set when i lands inside a surrogate pair. */
size_t jl_u16_offset(const char *s, size_t len, size_t i, bool *split);

/* ---- compiled rules (jl_compile.c, evaluated by jl_eval.c) ---- */
typedef enum {
    OP_CONST, OP_ARRAY, OP_CUSTOM, OP_BAD_ARGS, /* OP_BAD_ARGS: fails with Invalid Arguments */
    OP_VAR, OP_MISSING, OP_MISSING_SOME,
    OP_IF, OP_AND, OP_OR,
    OP_EQ, OP_SEQ, OP_NE, OP_SNE, OP_GT, OP_GE, OP_LT, OP_LE,
    OP_NOT, OP_NOTNOT,
    OP_MAX, OP_MIN, OP_PLUS, OP_MINUS, OP_MUL, OP_DIV, OP_MOD,
    OP_IN, OP_CAT, OP_SUBSTR, OP_MERGE,
    OP_MAP, OP_FILTER, OP_REDUCE, OP_ALL, OP_NONE, OP_SOME,
    OP_LOG,
    /* compat suites only (json-logic-engine's newer operators) */
    OP_VAL, OP_EXISTS, OP_COALESCE, OP_TRY, OP_THROW
} jl_opcode;

struct jl_seg { uint32_t off, len; };

/* missing / missing_some whose keys are all literal strings (plain var mode): each key
 * pre-split into path segments, looked up in place; results are shared subsets. */
typedef struct jl_mkey {
    json_t *j;            /* the key (a string of the rule's constants) */
    const char *s;        /* its text */
    int nseg;             /* 0: not a plain path ("" or ...): evaluate the generic way */
    struct jl_seg *segs;  /* into json_string_value(j) */
} jl_mkey;

#define JL_MK_SUBSETS 6   /* up to this many keys, every possible result is built once */

/* Fields the evaluator reads on every visit come first, in one cache line. */
typedef struct jl_node {
    uint8_t op;         /* jl_opcode */
    bool args_array;    /* the rule wrote its arguments as an array */
    bool in_iter;       /* inside map/filter/reduce/all/none/some: plain var paths */
    bool path_literal;
    int nargs;
    uint8_t first_kind; /* literal path's first segment: 1 "current", 2 "accumulator", 0 other */
    bool var_fast;      /* OP_VAR with a literal path and no resolver: may be read in place */
    int nseg;           /* literal path split at dots once, at compile time */
    struct jl_node **args;
    jl_val cval;        /* OP_CONST: the value (JV_JSON ones are STATIC, owned by cjson) */
    char *path;         /* OP_VAR with a literal path: ToString of it (NULL = whole data) */
    struct jl_seg *segs;
    /* colder */
    json_t *cjson;
    size_t path_len;
    void *resolved;     /* OP_VAR compiled by the resolver */
    jsonlogic_op_fn fn; /* OP_CUSTOM */
    void *fn_user;
    const char *name;   /* operation name as written (points into the node's own copy) */
    int mk_n;           /* OP_MISSING(_SOME) with literal keys: mk[mk_n] (else mk NULL) */
    jl_mkey *mk;
    json_t **mk_sub;    /* mk_n <= JL_MK_SUBSETS: result array for each bit mask of missing keys */
} jl_node;

struct jsonlogic_rule {
    /* a constant (or fully folded) rule's answers, read first by jsonlogic_apply and
     * jsonlogic_test without following root (2/3 of bench/jsonlogic's calls): its JSON
     * (else NULL) and its truthiness (else -1) */
    json_t *const_json;
    int8_t const_truthy;
    jl_node *root;
    long max_memory; /* bytes; see jsonlogic_options */
    bool compat;
    bool has_resolver;
    /* no evaluation of it allocates JSON (jl_compile.c's alloc_free): apply and test run
     * it without entering the memory budget, which only the building of a result needs */
    bool alloc_free;
    jsonlogic_var_resolver resolver;
};

/* Iteration / try scopes, linked on the C stack. */
typedef enum { F_ROOT, F_ITEM, F_REDUCE, F_TRY } jl_frame_kind;
typedef struct jl_frame {
    struct jl_frame *parent;
    uint8_t kind;
    jl_val item;  /* ROOT/ITEM: the data; REDUCE: "current"; TRY: the error object */
    jl_val *acc;  /* REDUCE: "accumulator" */
    size_t index;
} jl_frame;

bool jl_eval(jl_ctx *c, const jl_node *n, jl_val *out);

/* ---- errors ---- */
void jl_oom(jl_ctx *c);
#define JL_E_NAN "nan"
#define JL_E_ARGS "invalid_arguments"
#define JL_E_THROWN "thrown"
#define JL_E_TYPE "type_error"

#endif
