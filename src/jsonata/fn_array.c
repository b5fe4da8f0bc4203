/* fn_array.c — array functions ($count, $append, $sort, $reverse, $shuffle, $distinct,
 * $zip) and higher-order functions ($map, $filter, $single, $reduce). */
#include "jsonata/fn_common.h"
#include "jsonata/core.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

FN(jn_fn_count) {
    jn_value *a = FN_ARG(0);
    if (!a) return jn_number(0);
    return jn_number(a->type == JN_ARRAY ? (double)jn_alen(a) : 1);
}

FN(jn_fn_append) {
    jn_value *a = FN_ARG(0), *b = FN_ARG(1);
    if (!a) return jn_incref(b);
    if (!b) return jn_incref(a);
    size_t na = a->type == JN_ARRAY ? jn_alen(a) : 1, nb = b->type == JN_ARRAY ? jn_alen(b) : 1;
    if ((double)(na + nb) > (double)jn_max_sequence(call)) {
        jn_error(call, err, "D2014", "The size of the sequence allocated by $append exceeds the maximum");
        return NULL;
    }
    jn_value *out = jn_array_new(na + nb);
    if (!out) { jn_oom(err); return NULL; }
    jn_value *parts[2] = {a, b};
    for (int k = 0; k < 2; k++) {
        jn_value *p = parts[k];
        if (p->type != JN_ARRAY) {
            if (!jn_fn_push(out, jn_incref(p), err)) { jn_decref(out); return NULL; }
            continue;
        }
        for (size_t i = 0; i < jn_alen(p); i++)
            if (!jn_fn_push(out, jn_incref(jn_aget(p, i)), err)) { jn_decref(out); return NULL; }
    }
    return out;
}

/* Stable merge sort over value pointers; cmp returns >0 when a must come after b, <0 on
 * error. */
typedef int (*sort_cmp)(jn_call *call, jn_value *fn, jn_value *a, jn_value *b, gg_error *err);

/* JavaScript compares strings by UTF-16 code units (gg_utf16_cmp). UTF-8 byte order agrees
 * except between U+E000..U+FFFF and supplementary characters (surrogates sort lower), so
 * the slow path only runs when such bytes occur. */
static bool has_high_bytes(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) if ((unsigned char)s[i] >= 0xEE) return true;
    return false;
}

static int default_cmp(jn_call *call, jn_value *fn, jn_value *a, jn_value *b, gg_error *err) {
    if (a->type == JN_NUMBER) return a->u.n > b->u.n;
    if (has_high_bytes(jn_s(a), jn_slen(a)) || has_high_bytes(jn_s(b), jn_slen(b)))
        return gg_utf16_cmp(jn_s(a), jn_slen(a), jn_s(b), jn_slen(b)) > 0;
    size_t n = jn_slen(a) < jn_slen(b) ? jn_slen(a) : jn_slen(b);
    int c = memcmp(jn_s(a), jn_s(b), n);
    return c > 0 || (c == 0 && jn_slen(a) > jn_slen(b));
}

static int fn_cmp(jn_call *call, jn_value *fn, jn_value *a, jn_value *b, gg_error *err) {
    jn_value *args[2] = {a, b};
    jn_value *r = jn_apply(call, fn, args, 2, err);
    if (gg_error_is_set(err)) { jn_decref(r); return -1; }
    int swap = jn_truthy(r) ? 1 : 0;
    jn_decref(r);
    return swap;
}

static bool merge_sort(jn_call *call, jn_value **v, jn_value **tmp, size_t n, sort_cmp cmp,
                       jn_value *fn, gg_error *err) {
    if (n < 2) return true;
    size_t mid = n / 2;
    if (!merge_sort(call, v, tmp, mid, cmp, fn, err) ||
        !merge_sort(call, v + mid, tmp, n - mid, cmp, fn, err))
        return false;
    size_t i = 0, j = mid, k = 0;
    while (i < mid && j < n) {
        int c = cmp(call, fn, v[i], v[j], err);
        if (c < 0) return false;
        tmp[k++] = c > 0 ? v[j++] : v[i++];
    }
    while (i < mid) tmp[k++] = v[i++];
    while (j < n) tmp[k++] = v[j++];
    memcpy(v, tmp, n * sizeof *v);
    return true;
}

FN(jn_fn_sort) {
    jn_value *a = FN_ARG(0), *fn = FN_ARG(1);
    if (!a) return NULL;
    size_t n = jn_alen(a);
    if (n <= 1) return jn_incref(a);
    if (!fn) {
        int t = jn_aget(a, 0)->type;
        for (size_t i = 0; i < n; i++) {
            int ti = jn_aget(a, i)->type;
            double d = ti == JN_NUMBER ? jn_aget(a, i)->u.n : 0;
            if (t == JN_NUMBER && isinf(d)) { /* the reference's isNumeric throws on infinity */
                jn_error(call, err, "D1001", "Number out of range");
                return NULL;
            }
            if ((ti != JN_NUMBER && ti != JN_STRING) || ti != t || isnan(d)) { /* NaN is no number */
                jn_error(call, err, "D3070", "The single argument form of the sort function can only be applied to an array of strings or an array of numbers.  Use the second argument to specify a comparison function");
                return NULL;
            }
        }
    }
    jn_value *out = jn_array_new(n);
    jn_value **tmp = malloc(n * sizeof *tmp);
    if (!out || !tmp) { jn_decref(out); free(tmp); jn_oom(err); return NULL; }
    for (size_t i = 0; i < n; i++) out->u.arr.items[i] = jn_incref(jn_aget(a, i));
    out->u.arr.n = n;
    bool ok = merge_sort(call, out->u.arr.items, tmp, n, fn ? fn_cmp : default_cmp, fn, err);
    free(tmp);
    if (!ok) { jn_decref(out); return NULL; }
    return out;
}

FN(jn_fn_reverse) {
    jn_value *a = FN_ARG(0);
    if (!a) return NULL;
    size_t n = jn_alen(a);
    jn_value *out = jn_array_new(n);
    if (!out) { jn_oom(err); return NULL; }
    for (size_t i = n; i > 0; i--)
        if (!jn_fn_push(out, jn_incref(jn_aget(a, i - 1)), err)) { jn_decref(out); return NULL; }
    return out;
}

FN(jn_fn_shuffle) {
    jn_value *a = FN_ARG(0);
    if (!a) return NULL;
    size_t n = jn_alen(a);
    jn_value *out = jn_array_new(n);
    if (!out) { jn_oom(err); return NULL; }
    for (size_t i = 0; i < n; i++)
        if (!jn_fn_push(out, jn_incref(jn_aget(a, i)), err)) { jn_decref(out); return NULL; }
    for (size_t i = n; i > 1; i--) { /* Fisher-Yates */
        size_t j = (size_t)arc4random_uniform((uint32_t)i);
        jn_value *t = out->u.arr.items[i - 1];
        out->u.arr.items[i - 1] = out->u.arr.items[j];
        out->u.arr.items[j] = t;
    }
    return out;
}

/* $distinct's scalars seen so far: open addressing on a hash of the value, equal as the
 * reference's === is (jn_deep_equal on scalars: same type; numbers by value, so -0 is 0;
 * strings by their bytes), with no key built a value. Arrays and objects are compared pairwise by deep equality. */
typedef struct scalar_set {
    const jn_value **slot;
    size_t cap, n;
} scalar_set;

static bool is_scalar(const jn_value *v) {
    jn_type t = jn_type_of(v);
    return t == JN_STRING || t == JN_NUMBER || t == JN_BOOL || t == JN_NULL;
}

static uint32_t scalar_hash(const jn_value *v) {
    switch (jn_type_of(v)) {
    case JN_STRING: return jn_hash_key(jn_s(v), jn_slen(v));
    case JN_NUMBER: {
        double d = v->u.n == 0 ? 0 : v->u.n;
        uint64_t b;
        memcpy(&b, &d, sizeof b);
        b *= 0x9e3779b97f4a7c15ULL;
        return (uint32_t)(b >> 32) ^ 0x5bd1e995u;
    }
    case JN_BOOL: return v->u.b ? 1u : 2u;
    default: return 3u; /* null */
    }
}

static bool set_grow(scalar_set *s) {
    size_t cap = s->cap ? s->cap * 2 : 16;
    const jn_value **slot = jn_calloc(cap, sizeof *slot);
    if (!slot) return false;
    for (size_t i = 0; i < s->cap; i++) {
        if (!s->slot[i]) continue;
        size_t j = scalar_hash(s->slot[i]) & (cap - 1);
        while (slot[j]) j = (j + 1) & (cap - 1);
        slot[j] = s->slot[i];
    }
    jn_free(s->slot);
    s->slot = slot;
    s->cap = cap;
    return true;
}

/* Adds v (borrowed: the input array outlives the set); *seen when an equal one was there. */
static bool set_add(scalar_set *s, const jn_value *v, bool *seen) {
    if (2 * (s->n + 1) > s->cap && !set_grow(s)) return false;
    size_t j = scalar_hash(v) & (s->cap - 1);
    for (; s->slot[j]; j = (j + 1) & (s->cap - 1))
        if (jn_deep_equal(s->slot[j], v)) {
            *seen = true;
            return true;
        }
    s->slot[j] = v;
    s->n++;
    *seen = false;
    return true;
}

FN(jn_fn_distinct) {
    jn_value *a = FN_ARG(0);
    if (!a) return NULL;
    if (a->type != JN_ARRAY || jn_alen(a) <= 1) return jn_incref(a);
    jn_value *out = (a->flags & JN_F_SEQUENCE) ? jn_seq_new(jn_alen(a)) : jn_array_new(jn_alen(a));
    jn_value *complex = jn_array_new(4); /* the non-scalar values kept so far */
    scalar_set set = {NULL, 0, 0};
    bool ok = out && complex;
    for (size_t i = 0; ok && i < jn_alen(a); i++) {
        jn_value *v = jn_aget(a, i);
        bool seen = false;
        if (is_scalar(v)) {
            if (!set_add(&set, v, &seen)) { ok = false; break; }
        } else {
            for (size_t k = 0; k < jn_alen(complex) && !seen; k++)
                seen = jn_deep_equal(jn_aget(complex, k), v);
            if (!seen && !jn_array_push(complex, jn_incref(v))) { ok = false; break; }
        }
        if (!seen && !jn_array_push(out, jn_incref(v))) ok = false;
        if ((i & 255) == 255 && !jn_check_limits(call, err)) { ok = false; break; }
    }
    jn_free(set.slot);
    jn_decref(complex);
    if (!ok) {
        jn_decref(out);
        if (!gg_error_is_set(err)) jn_oom(err);
        return NULL;
    }
    return out;
}

FN(jn_fn_zip) {
    size_t len = (size_t)-1;
    for (int k = 0; k < nargs; k++) {
        if (!args[k]) { len = 0; break; }
        size_t n = args[k]->type == JN_ARRAY ? jn_alen(args[k]) : 1;
        if (n < len) len = n;
    }
    if (nargs == 0) len = 0;
    jn_value *out = jn_array_new(len);
    if (!out) { jn_oom(err); return NULL; }
    for (size_t i = 0; i < len; i++) {
        jn_value *tuple = jn_array_new((size_t)nargs);
        if (!tuple) { jn_decref(out); jn_oom(err); return NULL; }
        for (int k = 0; k < nargs; k++) {
            jn_value *v = args[k]->type == JN_ARRAY ? jn_aget(args[k], i) : args[k];
            if (!jn_fn_push(tuple, jn_incref(v), err)) { jn_decref(tuple); jn_decref(out); return NULL; }
        }
        if (!jn_fn_push(out, tuple, err)) { jn_decref(out); return NULL; }
    }
    return out;
}

/* ---- higher-order functions ---- */

/* The reference sizes higher-order calls of a builtin by its implementation's declared
 * parameters, which is the signature's parameter count except for $string, whose
 * "prettify" parameter has a default (so $map(xs, $string) passes only the value). */
int jn_fn_hof_arity(const jn_value *fn) {
    if (fn && fn->type == JN_FUNCTION && fn->u.fn->kind == FN_NATIVE && fn->u.fn->builtin &&
        !strcmp(fn->u.fn->builtin->name, "string"))
        return 1;
    return jn_fn_arity(fn);
}

/* Call fn with (value, index, array) cut to the function's declared arity. */
static jn_value *hof_call(jn_call *call, jn_value *fn, jn_value *v, size_t i, jn_value *arr,
                          gg_error *err) {
    int arity = jn_fn_hof_arity(fn);
    if (arity < 0 || arity > 3) arity = 3;
    jn_value *idx = NULL;
    jn_value *args[3] = {v, NULL, arr};
    if (arity >= 2) {
        idx = jn_number((double)i);
        if (!idx) { jn_oom(err); return NULL; }
        args[1] = idx;
    }
    jn_value *r = jn_apply(call, fn, args, arity < 1 ? 1 : arity, err);
    jn_decref(idx);
    return r;
}

FN(jn_fn_map) {
    jn_value *a = FN_ARG(0), *fn = FN_ARG(1);
    if (!a || !fn) return NULL;
    jn_value *out = jn_seq_new(jn_alen(a));
    if (!out) { jn_oom(err); return NULL; }
    for (size_t i = 0; i < jn_alen(a); i++) {
        jn_value *r = hof_call(call, fn, jn_aget(a, i), i, a, err);
        if (gg_error_is_set(err)) { jn_decref(r); jn_decref(out); return NULL; }
        if (r && !jn_fn_push(out, r, err)) { jn_decref(out); return NULL; }
    }
    return out;
}

FN(jn_fn_filter) {
    jn_value *a = FN_ARG(0), *fn = FN_ARG(1);
    if (!a || !fn) return NULL;
    jn_value *out = jn_seq_new(jn_alen(a));
    if (!out) { jn_oom(err); return NULL; }
    for (size_t i = 0; i < jn_alen(a); i++) {
        jn_value *v = jn_aget(a, i);
        jn_value *r = hof_call(call, fn, v, i, a, err);
        if (gg_error_is_set(err)) { jn_decref(r); jn_decref(out); return NULL; }
        if (jn_truth_meets_infinity(r)) jn_error(call, err, "D1001", "Number out of range");
        bool keep = jn_truthy(r);
        jn_decref(r);
        if (gg_error_is_set(err)) { jn_decref(out); return NULL; }
        if (keep && !jn_fn_push(out, jn_incref(v), err)) { jn_decref(out); return NULL; }
    }
    return out;
}

FN(jn_fn_single) {
    jn_value *a = FN_ARG(0), *fn = FN_ARG(1);
    if (!a) return NULL;
    jn_value *found = NULL;
    bool have = false;
    for (size_t i = 0; i < jn_alen(a); i++) {
        jn_value *v = jn_aget(a, i);
        bool pass = true;
        if (fn) {
            jn_value *r = hof_call(call, fn, v, i, a, err);
            if (gg_error_is_set(err)) { jn_decref(r); return NULL; }
            if (jn_truth_meets_infinity(r)) jn_error(call, err, "D1001", "Number out of range");
            pass = jn_truthy(r);
            jn_decref(r);
            if (gg_error_is_set(err)) return NULL;
        }
        if (!pass) continue;
        if (have) {
            jn_error(call, err, "D3138", "The $single() function expected exactly 1 matching result.  Instead it matched more.");
            return NULL;
        }
        have = true;
        found = v;
    }
    if (!have) {
        jn_error(call, err, "D3139", "The $single() function expected exactly 1 matching result.  Instead it matched 0.");
        return NULL;
    }
    return jn_incref(found);
}

FN(jn_fn_reduce) {
    jn_value *a = FN_ARG(0), *fn = FN_ARG(1), *init = FN_ARG(2);
    if (!a || !fn) return NULL;
    int arity = jn_fn_hof_arity(fn);
    if (arity >= 0 && arity < 2) {
        jn_error(call, err, "D3050", "The second argument of reduce function must be a function with at least two arguments");
        return NULL;
    }
    if (arity < 0 || arity > 4) arity = 4;
    size_t i = 0;
    jn_value *acc;
    if (nargs > 2 && init) acc = jn_incref(init);
    else if (jn_alen(a) > 0) acc = jn_incref(jn_aget(a, i++));
    else return NULL;
    for (; i < jn_alen(a); i++) {
        jn_value *idx = jn_number((double)i);
        if (!idx) { jn_decref(acc); jn_oom(err); return NULL; }
        jn_value *cargs[4] = {acc, jn_aget(a, i), idx, a};
        jn_value *r = jn_apply(call, fn, cargs, arity, err);
        jn_decref(idx);
        jn_decref(acc);
        if (gg_error_is_set(err)) { jn_decref(r); return NULL; }
        acc = r;
    }
    return acc;
}
