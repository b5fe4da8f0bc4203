/* fn_object.c — object functions ($keys, $lookup, $spread, $merge, $each, $sift, $clone),
 * $error, $assert, $type and the date/time functions ($now, $millis, $fromMillis,
 * $toMillis). */
#include "jsonata/fn_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

FN(jn_fn_keys) {
    jn_value *v = FN_ARG(0);
    if (!v) return NULL;
    jn_value *out = jn_seq_new(4);
    if (!out) { jn_oom(err); return NULL; }
    /* $keys is lazy-safe (parser.c): only the objects whose keys it lists are
     * materialized, not everything below them */
    if (v->type == JN_OBJECT) {
        if (!jn_force(v)) { jn_decref(out); jn_oom(err); return NULL; }
        for (size_t i = 0; i < v->u.obj.n; i++)
            if (!jn_fn_push(out, jn_incref(v->u.obj.ents[i].key), err)) { jn_decref(out); return NULL; }
    } else if (v->type == JN_ARRAY) {
        jn_value *seen = jn_object_new(8); /* hashed set of keys already listed */
        if (!seen) { jn_decref(out); jn_oom(err); return NULL; }
        for (size_t k = 0; k < jn_alen(v); k++) {
            jn_value *o = jn_aget(v, k);
            if (!o || o->type != JN_OBJECT) continue;
            if (!jn_force(o)) {
                jn_decref(seen);
                jn_decref(out);
                jn_oom(err);
                return NULL;
            }
            for (size_t i = 0; i < o->u.obj.n; i++) {
                jn_value *key = o->u.obj.ents[i].key;
                if (jn_object_get(seen, jn_s(key), jn_slen(key))) continue;
                if (!jn_object_set_key(seen, key, jn_null()) || !jn_fn_push(out, jn_incref(key), err)) {
                    jn_decref(seen);
                    jn_decref(out);
                    if (!gg_error_is_set(err)) jn_oom(err);
                    return NULL;
                }
            }
        }
        jn_decref(seen);
    }
    if (jn_alen(out) == 0) { jn_decref(out); return NULL; }
    return out;
}

/* Append v to out, flattening one level of arrays (sequence semantics). */
static bool seq_append(jn_value *out, jn_value *v, gg_error *err) {
    if (!v) return true;
    if (v->type == JN_ARRAY) {
        for (size_t i = 0; i < jn_alen(v); i++)
            if (!jn_fn_push(out, jn_incref(jn_aget(v, i)), err)) return false;
        return true;
    }
    return jn_fn_push(out, jn_incref(v), err);
}

static jn_value *lookup_rec(jn_value *v, jn_value *key, int depth, gg_error *err) {
    if (!v) return NULL;
    if (v->type == JN_OBJECT) return jn_incref(jn_object_get(v, jn_s(key), jn_slen(key)));
    if (v->type != JN_ARRAY || depth > 200) return NULL;
    jn_value *out = jn_seq_new(jn_alen(v));
    if (!out) { jn_oom(err); return NULL; }
    for (size_t i = 0; i < jn_alen(v); i++) {
        jn_value *r = lookup_rec(jn_aget(v, i), key, depth + 1, err);
        if (gg_error_is_set(err)) { jn_decref(out); return NULL; }
        bool ok = seq_append(out, r, err);
        jn_decref(r);
        if (!ok) { jn_decref(out); return NULL; }
    }
    return out;
}

FN(jn_fn_lookup) {
    if (!FN_ARG(1)) return NULL;
    return lookup_rec(FN_ARG(0), FN_ARG(1), 0, err);
}

static bool spread_into(jn_value *out, jn_value *v, int depth, gg_error *err) {
    if (v->type == JN_ARRAY && depth < 200) {
        for (size_t i = 0; i < jn_alen(v); i++)
            if (!spread_into(out, jn_aget(v, i), depth + 1, err)) return false;
        return true;
    }
    if (v->type != JN_OBJECT) return jn_fn_push(out, jn_incref(v), err);
    for (size_t i = 0; i < v->u.obj.n; i++) {
        jn_value *o = jn_object_new(1);
        if (!o) { jn_oom(err); return false; }
        if (!jn_object_set_key(o, v->u.obj.ents[i].key, jn_incref(v->u.obj.ents[i].val))) {
            jn_decref(o);
            jn_oom(err);
            return false;
        }
        if (!jn_fn_push(out, o, err)) return false;
    }
    return true;
}

FN(jn_fn_spread) {
    jn_value *v = FN_ARG(0);
    if (!v) return NULL;
    if (v->type != JN_ARRAY && v->type != JN_OBJECT) return jn_incref(v);
    jn_value *out = jn_seq_new(4);
    if (!out) { jn_oom(err); return NULL; }
    if (!spread_into(out, v, 0, err)) { jn_decref(out); return NULL; }
    return out;
}

FN(jn_fn_merge) {
    jn_value *a = FN_ARG(0);
    if (!a) return NULL;
    jn_value *out = jn_object_new(8);
    if (!out) { jn_oom(err); return NULL; }
    for (size_t k = 0; k < jn_alen(a); k++) {
        jn_value *o = jn_aget(a, k);
        for (size_t i = 0; o && o->type == JN_OBJECT && i < o->u.obj.n; i++)
            if (!jn_object_set_key(out, o->u.obj.ents[i].key, jn_incref(o->u.obj.ents[i].val))) {
                jn_decref(out);
                jn_oom(err);
                return NULL;
            }
    }
    return out;
}

/* Call fn(value, key, object) cut to its declared arity. */
static jn_value *entry_call(jn_call *call, jn_value *fn, jn_value *obj, size_t i, gg_error *err) {
    int arity = jn_fn_hof_arity(fn);
    if (arity < 0 || arity > 3) arity = 3;
    jn_value *args[3] = {obj->u.obj.ents[i].val, obj->u.obj.ents[i].key, obj};
    return jn_apply(call, fn, args, arity < 1 ? 1 : arity, err);
}

FN(jn_fn_each) {
    jn_value *o = FN_ARG(0), *fn = FN_ARG(1);
    if (!o || !fn) return NULL;
    jn_value *out = jn_seq_new(o->u.obj.n);
    if (!out) { jn_oom(err); return NULL; }
    for (size_t i = 0; i < o->u.obj.n; i++) {
        jn_value *r = entry_call(call, fn, o, i, err);
        if (gg_error_is_set(err)) { jn_decref(r); jn_decref(out); return NULL; }
        if (r && !jn_fn_push(out, r, err)) { jn_decref(out); return NULL; }
    }
    return out;
}

FN(jn_fn_sift) {
    jn_value *o = FN_ARG(0), *fn = FN_ARG(1);
    if (!o || !fn) return NULL;
    jn_value *out = jn_object_new(o->u.obj.n);
    if (!out) { jn_oom(err); return NULL; }
    for (size_t i = 0; i < o->u.obj.n; i++) {
        jn_value *r = entry_call(call, fn, o, i, err);
        if (gg_error_is_set(err)) { jn_decref(r); jn_decref(out); return NULL; }
        if (jn_truth_meets_infinity(r)) jn_error(call, err, "D1001", "Number out of range");
        bool keep = jn_truthy(r);
        jn_decref(r);
        if (gg_error_is_set(err)) { jn_decref(out); return NULL; }
        if (keep && !jn_object_set_key(out, o->u.obj.ents[i].key, jn_incref(o->u.obj.ents[i].val))) {
            jn_decref(out);
            jn_oom(err);
            return NULL;
        }
    }
    if (out->u.obj.n == 0) { jn_decref(out); return NULL; }
    return out;
}

/* Values are immutable once built, so a clone can share the original. */
FN(jn_fn_clone) { return jn_incref(FN_ARG(0)); }

FN(jn_fn_error) {
    jn_value *m = FN_ARG(0);
    jn_error(call, err, "D3137", "%s", m && m->type == JN_STRING ? jn_s(m) : "$error() function evaluated");
    return NULL;
}

FN(jn_fn_assert) {
    jn_value *c = FN_ARG(0), *m = FN_ARG(1);
    if (c && c->type == JN_BOOL && c->u.b) return NULL;
    jn_error(call, err, "D3141", "%s", m && m->type == JN_STRING ? jn_s(m) : "$assert() statement failed");
    return NULL;
}

FN(jn_fn_type) {
    jn_value *v = FN_ARG(0);
    switch (jn_type_of(v)) {
    case JN_UNDEFINED: return NULL;
    case JN_NULL: return jn_string("null", 4);
    case JN_BOOL: return jn_string("boolean", 7);
    case JN_NUMBER: /* the reference asks isNumeric: infinity throws, NaN is no number */
        if (isinf(v->u.n)) {
            jn_error(call, err, "D1001", "Number out of range");
            return NULL;
        }
        return isnan(v->u.n) ? jn_string("object", 6) : jn_string("number", 6);
    case JN_STRING: return jn_string("string", 6);
    case JN_ARRAY: return jn_string("array", 5);
    case JN_OBJECT: return jn_string("object", 6);
    case JN_FUNCTION: case JN_REGEX: return jn_string("function", 8);
    }
    return NULL;
}

/* ---- date/time ---- */

static jn_value *dt_error(jn_call *call, gg_error *tmp, gg_error *err) {
    jn_error(call, err, tmp->code, "%s", tmp->message ? tmp->message : tmp->code);
    gg_error_clear(tmp);
    return NULL;
}

static jn_value *format_millis(jn_call *call, double ms, jn_value *pic, jn_value *tz, gg_error *err) {
    if (!(fabs(ms) <= 8.64e15)) return NULL; /* not a valid JavaScript Date: undefined */
    gg_strbuf b = GG_STRBUF_INIT;
    gg_error tmp = GG_ERROR_INIT;
    if (!jn_format_datetime(ms, pic ? jn_s(pic) : NULL, tz ? jn_s(tz) : NULL, &b, &tmp)) {
        gg_strbuf_free(&b);
        return dt_error(call, &tmp, err);
    }
    return jn_fn_buf_result(&b, err);
}

FN(jn_fn_now) { return format_millis(call, (double)jn_now_ms(call), FN_ARG(0), FN_ARG(1), err); }

FN(jn_fn_millis) { return jn_number((double)jn_now_ms(call)); }

FN(jn_fn_from_millis) {
    jn_value *v = FN_ARG(0);
    if (!v) return NULL;
    return format_millis(call, v->u.n, FN_ARG(1), FN_ARG(2), err);
}

FN(jn_fn_to_millis) {
    jn_value *s = FN_ARG(0), *pic = FN_ARG(1);
    if (!s) return NULL;
    gg_error tmp = GG_ERROR_INIT;
    double ms = 0;
    bool found = false;
    if (!jn_parse_datetime(jn_s(s), pic ? jn_s(pic) : NULL, &ms, &found, jn_now_ms(call), &tmp))
        return dt_error(call, &tmp, err);
    return found ? jn_number(ms) : NULL;
}
