/* jl_eval.c — evaluate a compiled JSON Logic tree.
 *
 * Each operation follows json-logic-js 2.0.5 as observed on node; with compat_semantics
 * the behaviour the shared compat suites expect (json-logic-engine's) takes over where the
 * two differ (see tests/jsonlogic/SEMANTICS.md). All state lives in the jl_ctx and the
 * frames on the C stack, so one compiled rule serves any number of threads. */
#include "jsonlogic/jl_internal.h"
#include "jsonata/jsonata.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Handlers stay out of line so jl_eval, the recursive dispatcher, keeps a small frame. */
#define NOINLINE __attribute__((noinline))

/* ---------------------------------------------------------------- errors */

static bool fail(jl_ctx *c, const char *code, const char *fmt, const char *arg) {
    if (!gg_error_is_set(c->err)) gg_error_set(c->err, code, fmt, arg);
    return false;
}
static bool nan_error(jl_ctx *c) { return fail(c, JL_E_NAN, "NaN: %s is not a number", "the result"); }
static NOINLINE bool args_error(jl_ctx *c, const char *op) { return fail(c, JL_E_ARGS, "Invalid Arguments for %s", op); }
static bool oom(jl_ctx *c) { jl_oom(c); return false; }

/* ---------------------------------------------------------------- arguments */

/* The common var: a literal path through objects of the data (or reduce's current /
 * accumulator), read in place. 1: *out is the value; 0: not found (the default applies);
 * -1: the general op_var must decide (arrays, strings, scopes holding references, graph
 * mode, a reduce scope value that needs copying). */
static NOINLINE int var_fast_path(const jl_ctx *c, const jl_node *n, jl_val *out);
/* {"var": ""} (the element itself: half of the vars of map/filter/all/...) is read here,
 * in line; a path is walked out of line, so the element's read pays no call and no
 * saving of the registers the walk needs (17 instructions a read, callgrind). */
static inline __attribute__((always_inline)) int var_fast(const jl_ctx *c, const jl_node *n, jl_val *out) {
    const jl_frame *f = c->top;
    if (n->path) {
        /* reduce's "current" / "accumulator" alone (two reads a step of most reduces) are
         * copied here: var_fast_path's frame cost more than the copy (callgrind) */
        if (f->kind != F_REDUCE || n->nseg != 1 || !n->first_kind) return var_fast_path(c, n, out);
        const jl_val *base = n->first_kind == 1 ? &f->item : f->acc;
        if (base->t == JV_UNDEF || base->t == JV_STR) return -1;
        jl_copy_to(out, base);
        if (base->t == JV_JSON && base->origin == JO_REF) json_incref(base->u.j);
        return 1;
    }
    /* reduce's scope is built as an object: op_var */
    if (f->kind == F_REDUCE || f->item.t == JV_UNDEF || f->item.t == JV_STR) return -1;
    jl_copy_to(out, &f->item);
    if (f->item.t == JV_JSON && f->item.origin == JO_REF) json_incref(f->item.u.j);
    return 1;
}

static NOINLINE int var_fast_path(const jl_ctx *c, const jl_node *n, jl_val *out) {
    const jl_frame *f = c->top;
    const jl_val *base = &f->item;
    int i = 0;
    if (f->kind == F_REDUCE) {
        if (!n->first_kind) return -1;
        base = n->first_kind == 1 ? &f->item : f->acc;
        i = 1; /* "current.qty": the rest of the path is read from current ("current"
                * alone is read by var_fast) */
    }
    if (jl_is_nullish(base)) return 0;
    if (base->t != JV_JSON || base->origin == JO_REF) return -1;
    json_t *j = base->u.j;
    for (; i < n->nseg; i++) {
        if (!json_is_object(j)) return json_is_null(j) ? 0 : -1; /* a null on the way: not found */
        j = jl_obj_get(j, n->path + n->segs[i].off, n->segs[i].len);
        if (!j) return 0;
    }
    if (json_is_string(j) && json_string_length(j) == 2 && (unsigned char)json_string_value(j)[0] == JL_SENTINEL)
        return -1;
    jl_wrap_to(out, j, (jl_origin)base->origin);
    return 1;
}

/* var's value when the path found nothing: the default, else null. */
static NOINLINE bool var_default(jl_ctx *c, const jl_node *n, jl_val *out) {
    out->t = JV_UNDEF;
    if (n->nargs > 1) {
        if (!jl_eval(c, n->args[1], out)) return false;
        if (out->t != JV_UNDEF) return true;
    }
    out->t = JV_NULL;
    return true;
}

/* jl_eval with the leaves most arguments are (constants, literal vars) read without
 * the call and the dispatch. */
static inline bool eval_q(jl_ctx *c, const jl_node *n, jl_val *out) {
    if (n->op == OP_CONST) { *out = n->cval; return true; }
    if (n->var_fast) {
        int k = var_fast(c, n, out);
        if (k >= 0) return k ? true : var_default(c, n, out);
    }
    return jl_eval(c, n, out);
}

typedef struct argv_t {
    jl_val *v;
    int n;
    jl_val small[6];
    jl_val spread; /* the array whose elements were spread into v */
} argv_t;

static void args_free(argv_t *a) {
    for (int i = 0; i < a->n; i++) jl_release(&a->v[i]);
    if (a->v != a->small) free(a->v);
    jl_release(&a->spread);
}

static bool args_alloc(jl_ctx *c, argv_t *a, size_t n) {
    a->n = 0;
    a->spread = JL_UNDEF;
    a->v = a->small;
    if (n > sizeof a->small / sizeof a->small[0]) {
        a->v = malloc(n * sizeof *a->v);
        if (!a->v) { a->v = a->small; return oom(c); }
    }
    return true;
}

/* Evaluate every argument (json-logic-js is eager for all but the control operations).
 * spread: compat mode's chaining, where one non-array argument that evaluates to an
 * array supplies the argument list. */
static bool eval_args(jl_ctx *c, const jl_node *n, argv_t *a, bool spread) {
    if (spread && c->compat && !n->args_array) {
        if (!args_alloc(c, a, 0)) return false;
        if (!jl_eval(c, n->args[0], &a->spread)) return false;
        if (!jl_is_arr(&a->spread)) {
            a->small[0] = a->spread;
            a->spread = JL_UNDEF;
            a->n = 1;
            return true;
        }
        size_t cnt = json_array_size(a->spread.u.j);
        if (cnt > sizeof a->small / sizeof a->small[0]) {
            a->v = malloc(cnt * sizeof *a->v);
            if (!a->v) { a->v = a->small; return oom(c); }
        }
        for (size_t i = 0; i < cnt; i++) jl_elem_to(&a->v[a->n++], &a->spread, i);
        return true;
    }
    if (!args_alloc(c, a, (size_t)n->nargs)) return false;
    for (int i = 0; i < n->nargs; i++) {
        if (!eval_q(c, n->args[i], &a->v[i])) return false;
        a->n = i + 1;
    }
    return true;
}

static const jl_val *arg(const argv_t *a, int i) {
    static const jl_val undef = {.t = JV_UNDEF};
    return i < a->n ? &a->v[i] : &undef;
}

/* ---------------------------------------------------------------- data access */

/* Canonical array index ("0", "17"; not "01", "-1", "1.0"), or -1. */
static long canonical_index(const char *s, size_t len) {
    if (len == 0 || len > 10 || (len > 1 && s[0] == '0')) return -1;
    long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

/* UTF-16 code units [from, to) of a string as a new string; halves of a split
 * surrogate pair become U+FFFD (JSON cannot carry a lone surrogate). */
static bool u16_slice(jl_ctx *c, const char *s, size_t len, size_t from, size_t to, jl_val *out) {
    bool split_a, split_b;
    size_t a = jl_u16_offset(s, len, from, &split_a);
    size_t b = jl_u16_offset(s, len, to, &split_b);
    gg_strbuf buf = GG_STRBUF_INIT;
    if (to <= from) { a = b = 0; split_a = split_b = false; }
    if (split_a) { /* starts on a low surrogate */
        gg_strbuf_puts(&buf, "\xEF\xBF\xBD");
        a += 4;
    }
    if (b > a) gg_strbuf_append(&buf, s + a, b - a);
    if (split_b && (!split_a || b >= a)) gg_strbuf_puts(&buf, "\xEF\xBF\xBD");
    size_t n = buf.len;
    char *r = gg_strbuf_take(&buf);
    if (!r && !(r = calloc(1, 1))) return oom(c);
    jl_set_str(out, r, n);
    return true;
}

/* base[key] as JavaScript reads it for JSON values: own keys of objects, indices and
 * "length" of arrays and strings. Missing gives JV_UNDEF. */
static bool get_prop(jl_ctx *c, const jl_val *base, const char *key, size_t klen, jl_val *out) {
    out->t = JV_UNDEF;
    size_t slen;
    const char *s = jl_strp(base, &slen);
    if (s) {
        if (klen == 6 && memcmp(key, "length", 6) == 0) { jl_set_num(out, (double)gg_utf16_len(s, slen)); return true; }
        long idx = canonical_index(key, klen);
        if (idx >= 0 && (size_t)idx < gg_utf16_len(s, slen)) return u16_slice(c, s, slen, (size_t)idx, (size_t)idx + 1, out);
        return true;
    }
    if (base->t != JV_JSON) return true;
    json_t *j = base->u.j, *e = NULL;
    if (json_is_object(j)) {
        e = jl_obj_get(j, key, klen);
    } else if (json_is_array(j)) {
        if (klen == 6 && memcmp(key, "length", 6) == 0) { jl_set_num(out, (double)json_array_size(j)); return true; }
        long idx = canonical_index(key, klen);
        if (idx >= 0) e = json_array_get(j, (size_t)idx);
    }
    if (!e) return true;
    if (base->origin == JO_REF) jl_wrap_to(out, json_incref(e), JO_REF);
    else jl_wrap_to(out, e, (jl_origin)base->origin);
    return true;
}

/* The data a frame stands for, as an independent value. */
static bool frame_data(jl_ctx *c, const jl_frame *f, jl_val *out) {
    if (f->kind != F_REDUCE) return jl_dup(&f->item, out) || oom(c);
    json_t *o = json_object();
    json_t *cur = jl_to_json_elem(c, &f->item), *acc = jl_to_json_elem(c, f->acc);
    if (!o || !cur || !acc || json_object_set_new(o, "current", cur) != 0 ||
        json_object_set_new(o, "accumulator", acc) != 0) {
        json_decref(o);
        return oom(c);
    }
    jl_wrap_to(out, o, JO_REF);
    return true;
}

/* json-logic-js's var: dotted path from the current data; not_found when a step is
 * missing (a null on the way counts as missing, a null at the end does not). */
static bool var_path(jl_ctx *c, const char *path, size_t plen, jl_val *out, bool *found) {
    const jl_frame *f = c->top;
    *found = true;
    if (!path) return frame_data(c, f, out);
    /* two slots used in turn, so each step writes its result in place */
    jl_val slot[2];
    jl_val *cur = NULL;
    int k = 0;
    const char *p = path, *end = path + plen;
    for (;;) {
        const char *dot = memchr(p, '.', (size_t)(end - p));
        size_t klen = dot ? (size_t)(dot - p) : (size_t)(end - p);
        jl_val *next = dot ? &slot[k] : out; /* the last step lands in *out directly */
        if (!cur && f->kind == F_REDUCE) {
            const jl_val *src = NULL;
            if (klen == 7 && memcmp(p, "current", 7) == 0) src = &f->item;
            else if (klen == 11 && memcmp(p, "accumulator", 11) == 0) src = f->acc;
            next->t = JV_UNDEF;
            if (src && !jl_dup(src, next)) return oom(c);
        } else {
            const jl_val *base = cur ? cur : &f->item;
            if (jl_is_nullish(base) || !get_prop(c, base, p, klen, next)) {
                bool failed = !jl_is_nullish(base);
                if (cur) jl_release(cur);
                if (failed) return false;
                *found = false;
                return true;
            }
        }
        if (cur) jl_release(cur);
        cur = next;
        k ^= 1;
        if (cur->t == JV_UNDEF) { *found = false; return true; }
        if (!dot) return true;
        p = dot + 1;
    }
}

/* var_path for a literal path, split at compile time. */
static bool var_segs(jl_ctx *c, const jl_node *n, jl_val *out, bool *found) {
    const jl_frame *f = c->top;
    *found = true;
    if (!n->path) return frame_data(c, f, out);
    jl_val slot[2];
    jl_val *cur = NULL;
    int k = 0, i = 0;
    if (f->kind == F_REDUCE) { /* the virtual {"current", "accumulator"} object */
        const jl_val *src = n->first_kind == 1 ? &f->item : n->first_kind == 2 ? f->acc : NULL;
        if (!src) { *found = false; return true; }
        jl_val *next = n->nseg > 1 ? &slot[k] : out;
        if (!jl_dup(src, next)) return oom(c);
        cur = next;
        k ^= 1;
        i = 1;
        if (cur->t == JV_UNDEF) { *found = false; return true; }
    }
    for (; i < n->nseg; i++) {
        const jl_val *base = cur ? cur : &f->item;
        jl_val *next = i + 1 < n->nseg ? &slot[k] : out;
        if (jl_is_nullish(base)) {
            if (cur) jl_release(cur);
            *found = false;
            return true;
        }
        bool ok = get_prop(c, base, n->path + n->segs[i].off, n->segs[i].len, next);
        if (cur) jl_release(cur);
        if (!ok) return false;
        cur = next;
        k ^= 1;
        if (cur->t == JV_UNDEF) { *found = false; return true; }
    }
    return true;
}

/* Graph mode: the resolver evaluates the path against the whole execution context. */
static bool var_resolved(jl_ctx *c, void *compiled, jl_val *out, bool *found) {
    const jsonlogic_var_resolver *res = &c->rule->resolver;
    const jl_frame *root = c->top;
    while (root->parent) root = root->parent;
    json_t *data = root->item.t == JV_JSON ? root->item.u.j : NULL;
    json_t *tmp = NULL;
    if (!data && !(data = tmp = jl_to_json(&root->item))) return oom(c);
    json_t *r = res->eval(res->user, compiled, data, c->call_user, c->err);
    json_decref(tmp);
    if (gg_error_is_set(c->err)) { json_decref(r); return false; }
    *found = r != NULL;
    jl_wrap_to(out, r, JO_REF);
    return true;
}

/* A path only known at run time, in graph mode: compile it, use it, drop it. */
static bool var_dynamic_resolved(jl_ctx *c, const char *path, jl_val *out, bool *found) {
    const jsonlogic_var_resolver *res = &c->rule->resolver;
    void *h = res->compile(res->user, path, c->err);
    if (!h) return gg_error_is_set(c->err) ? false : fail(c, "invalid_var", "cannot compile var path %s", path);
    bool ok = var_resolved(c, h, out, found);
    if (res->free) res->free(res->user, h);
    return ok;
}

static bool use_resolver(const jl_ctx *c, const jl_node *n) {
    return c->rule->has_resolver && c->rule->resolver.compile && c->rule->resolver.eval && !n->in_iter;
}

/* var with a path value computed at run time (or a missing key). */
static bool var_value(jl_ctx *c, const jl_node *n, const jl_val *pathv, jl_val *out, bool *found) {
    size_t len;
    const char *s = jl_strp(pathv, &len);
    if (jl_is_nullish(pathv) || (s && len == 0)) return var_path(c, NULL, 0, out, found);
    if (s && !use_resolver(c, n)) return var_path(c, s, len, out, found); /* no copy needed */
    gg_strbuf b = GG_STRBUF_INIT;
    if (!jl_to_string(c, pathv, &b, false)) { gg_strbuf_free(&b); return false; }
    if (!gg_strbuf_putc(&b, '\0')) { gg_strbuf_free(&b); return oom(c); }
    bool ok = s ? var_dynamic_resolved(c, b.data, out, found) : var_path(c, b.data, b.len - 1, out, found);
    gg_strbuf_free(&b);
    return ok;
}

static NOINLINE bool op_var(jl_ctx *c, const jl_node *n, jl_val *out) {
    jl_val pathv = JL_UNDEF;
    bool found = false, ok;
    out->t = JV_UNDEF;
    if (n->resolved) ok = var_resolved(c, n->resolved, out, &found);
    else if (n->path_literal) ok = n->segs || !n->path ? var_segs(c, n, out, &found)
                                                       : var_path(c, n->path, n->path_len, out, &found);
    else ok = jl_eval(c, n->args[0], &pathv) && var_value(c, n, &pathv, out, &found);
    jl_release(&pathv);
    if (!ok) return false;
    if (found && out->t != JV_UNDEF) return true;
    jl_release(out);
    if (n->nargs > 1) {
        if (!jl_eval(c, n->args[1], out)) return false;
        if (out->t != JV_UNDEF) return true;
    }
    out->t = JV_NULL;
    return true;
}

/* missing looks each key up as {"var": key} would: an array key is [path, default]. */
static bool missing_key(jl_ctx *c, const jl_node *n, const jl_val *key, bool *missing) {
    jl_val v = JL_UNDEF, path = JL_UNDEF, dflt = JL_UNDEF;
    bool found, ok;
    if (jl_is_arr(key)) {
        size_t cnt = json_array_size(key->u.j);
        if (cnt > 0) jl_elem_to(&path, key, 0);
        if (cnt > 1) jl_elem_to(&dflt, key, 1);
    }
    ok = var_value(c, n, jl_is_arr(key) ? &path : key, &v, &found);
    if (ok && (!found || v.t == JV_UNDEF) && dflt.t != JV_UNDEF) {
        jl_release(&v);
        v = dflt;
        dflt = JL_UNDEF;
    }
    size_t sl;
    const char *sv = jl_strp(&v, &sl);
    *missing = jl_is_nullish(&v) || (sv && sl == 0);
    jl_release(&v);
    jl_release(&path);
    jl_release(&dflt);
    return ok;
}

/* An empty result (the common "nothing missing") is the node's shared empty array. */
static bool empty_array(jl_ctx *c, const jl_node *n, jl_val *out) {
    json_t *e = n->cjson ? json_incref(n->cjson) : json_array();
    if (!e) return oom(c);
    jl_wrap_to(out, e, JO_REF);
    return true;
}

/* The keys missing looks at: the elements of an array (its first argument, when that is
 * an array) or its arguments themselves. */
typedef struct keylist { const jl_val *args; const jl_val *list; size_t cnt; } keylist;

static void keylist_init(keylist *k, const jl_val *args, size_t nargs) {
    k->args = args;
    k->list = nargs > 0 && jl_is_arr(&args[0]) ? &args[0] : NULL;
    k->cnt = k->list ? json_array_size(k->list->u.j) : nargs;
}

/* Whether the value a key found counts as missing: 1 (null, ""), 0 (present), -1 (a
 * sentinel string: only the generic path can tell). */
static int leaf_missing(const json_t *j) {
    if (json_is_null(j)) return 1;
    if (json_is_string(j)) {
        size_t l = json_string_length(j);
        if (l == 0) return 1;
        if (l == 2 && (unsigned char)json_string_value(j)[0] == JL_SENTINEL) return -1;
    }
    return 0;
}

/* Whether the value at a key (a dotted path computed at run time) is missing, read in
 * place: 1 missing, 0 present, -1 when only the generic path can tell. */
static int path_missing(const jl_frame *f, const char *s, size_t len) {
    if (len == 0 || f->kind == F_REDUCE) return -1;
    if (jl_is_nullish(&f->item)) return 1;
    if (f->item.t != JV_JSON) return -1;
    json_t *j = f->item.u.j;
    const char *end = s + len;
    for (;;) {
        const char *dot = memchr(s, '.', (size_t)(end - s));
        size_t klen = dot ? (size_t)(dot - s) : (size_t)(end - s);
        if (!json_is_object(j)) return json_is_null(j) ? 1 : -1;
        if (!(j = jl_obj_get(j, s, klen))) return 1;
        if (!dot) break;
        s = dot + 1;
    }
    return leaf_missing(j);
}

/* Mark each missing key in flags; *nmiss counts them. No allocation for the result. */
static bool missing_scan(jl_ctx *c, const jl_node *n, const keylist *k, uint8_t *flags, size_t *nmiss) {
    *nmiss = 0;
    for (size_t i = 0; i < k->cnt; i++) {
        jl_val key;
        if (k->list) jl_elem_to(&key, k->list, i);
        else key = k->args[i];
        bool miss = false, ok = true;
        size_t klen;
        const char *ks = jl_strp(&key, &klen);
        int m = ks && !use_resolver(c, n) ? path_missing(c->top, ks, klen) : -1;
        if (m >= 0) miss = m;
        else ok = missing_key(c, n, &key, &miss);
        if (k->list) jl_release(&key);
        if (!ok) return false;
        flags[i] = miss;
        *nmiss += miss;
    }
    return true;
}

static bool missing_build(jl_ctx *c, const jl_node *n, const keylist *k, const uint8_t *flags, size_t nmiss, jl_val *out) {
    if (nmiss == 0) return empty_array(c, n, out);
    json_t *res = json_array();
    if (!res) return oom(c);
    for (size_t i = 0; i < k->cnt; i++) {
        if (!flags[i]) continue;
        json_t *e;
        if (k->list) e = json_incref(json_array_get(k->list->u.j, i));
        else e = jl_to_json_elem(c, &k->args[i]);
        if (!e || json_array_append_new(res, e) != 0) { json_decref(res); return oom(c); }
    }
    jl_wrap_to(out, res, JO_REF);
    return true;
}

/* missing and missing_some share this: scan keys, then (for missing_some) decide. */
/* out == NULL: only say whether the result would be non-empty (*nonempty). */
static bool missing_run(jl_ctx *c, const jl_node *n, const keylist *k, const jl_val *need, double have,
                        jl_val *out, bool *nonempty) {
    uint8_t small[64], *flags = k->cnt <= sizeof small ? small : malloc(k->cnt);
    if (!flags) return oom(c);
    size_t nmiss;
    bool ok = missing_scan(c, n, k, flags, &nmiss);
    if (ok && need) { /* options.length - missing.length >= need_count: nothing is reported */
        jl_val left;
        jl_set_num(&left, have - (double)nmiss); /* in place: see jl_set_num */
        int cmp = jl_compare(c, &left, need);
        if (cmp == 0 || cmp == 1) nmiss = 0;
    }
    if (nonempty) *nonempty = nmiss > 0;
    if (ok && out) ok = missing_build(c, n, k, flags, nmiss, out);
    if (flags != small) free(flags);
    return ok;
}

static bool op_missing(jl_ctx *c, const jl_node *n, const argv_t *a, jl_val *out, bool *nonempty) {
    keylist k;
    keylist_init(&k, a->v, (size_t)a->n);
    return missing_run(c, n, &k, NULL, 0, out, nonempty);
}

/* missing_some(need, options): json-logic-js applies {"missing": options}, so the
 * options' elements become missing's arguments. */
static bool op_missing_some(jl_ctx *c, const jl_node *n, const argv_t *a, jl_val *out, bool *nonempty) {
    const jl_val *opts = arg(a, 1);
    keylist k;
    jl_val first = JL_UNDEF;
    if (jl_is_arr(opts)) {
        if (json_array_size(opts->u.j) > 0) jl_elem_to(&first, opts, 0);
        k.args = NULL;
        k.list = jl_is_arr(&first) ? &first : opts;
        k.cnt = json_array_size(k.list->u.j);
    } else {
        keylist_init(&k, opts, 1);
    }
    size_t sl;
    const char *s = jl_strp(opts, &sl);
    double have = jl_is_arr(opts) ? (double)json_array_size(opts->u.j) : s ? (double)gg_utf16_len(s, sl) : NAN;
    bool ok = missing_run(c, n, &k, arg(a, 0), have, out, nonempty);
    jl_release(&first);
    return ok;
}

/* A literal missing key looked up in place, as var would: 1 missing, 0 present, -1 when
 * only the generic path can tell (scopes of reduce, "length", strings, sentinels). */
static int mkey_missing(const jl_frame *f, const jl_mkey *k) {
    if (k->nseg == 0 || f->kind == F_REDUCE) return -1;
    if (jl_is_nullish(&f->item)) return 1;
    if (f->item.t != JV_JSON) return -1;
    json_t *j = f->item.u.j;
    const char *s = k->s;
    for (int i = 0; i < k->nseg; i++) {
        const char *key = s + k->segs[i].off;
        size_t klen = k->segs[i].len;
        json_t *e;
        if (json_is_object(j)) {
            e = jl_obj_get(j, key, klen);
        } else if (json_is_array(j)) {
            long idx = canonical_index(key, klen);
            if (idx < 0) return klen == 6 && memcmp(key, "length", 6) == 0 ? -1 : 1;
            e = json_array_get(j, (size_t)idx);
        } else {
            return json_is_null(j) ? 1 : -1;
        }
        if (!e) return 1;
        j = e;
    }
    return leaf_missing(j);
}

static bool has_mplan(const jl_node *n) { return n->mk || n->mk_sub; }

/* missing / missing_some with literal keys (compile's prepare_missing): no argument
 * vector, and the result is one of the node's prebuilt arrays when there are few keys.
 * out == NULL: only *nonempty is wanted. */
static NOINLINE bool missing_planned(jl_ctx *c, const jl_node *n, jl_val *out, bool *nonempty) {
    uint8_t small[64], *flags = n->mk_n <= 64 ? small : malloc((size_t)n->mk_n);
    if (!flags) return oom(c);
    size_t nmiss = 0, mask = 0;
    bool ok = true;
    for (int i = 0; ok && i < n->mk_n; i++) {
        int m = mkey_missing(c->top, &n->mk[i]);
        if (m < 0) {
            jl_val key;
            jl_wrap_to(&key, n->mk[i].j, JO_STATIC);
            bool miss = false;
            ok = missing_key(c, n, &key, &miss);
            m = miss;
        }
        flags[i] = (uint8_t)m;
        nmiss += (size_t)m;
        if (m && i < JL_MK_SUBSETS) mask |= (size_t)1 << i;
    }
    if (ok && n->op == OP_MISSING_SOME) { /* options.length - missing.length >= need */
        jl_val left;
        jl_set_num(&left, (double)n->mk_n - (double)nmiss); /* in place: see jl_set_num */
        int cmp = jl_compare(c, &left, &n->args[0]->cval);
        if (cmp == 0 || cmp == 1) nmiss = mask = 0;
    }
    if (nonempty) *nonempty = nmiss > 0;
    if (ok && out) {
        if (nmiss == 0 || n->mk_sub) {
            json_t *r = nmiss == 0 ? n->cjson : n->mk_sub[mask];
            out->t = JV_JSON; /* shared, owned by the rule */
            out->origin = JO_STATIC;
            out->u.j = r;
        } else {
            json_t *r = json_array();
            for (int i = 0; r && i < n->mk_n; i++)
                if (flags[i] && json_array_append(r, n->mk[i].j) != 0) { json_decref(r); r = NULL; }
            if (!r) ok = oom(c);
            else jl_wrap_to(out, r, JO_REF);
        }
    }
    if (flags != small) free(flags);
    return ok;
}

/* ---------------------------------------------------------------- compat: val, exists */

static bool frame_meta(jl_ctx *c, const jl_frame *f, jl_val *out) {
    if (f->kind == F_TRY) { out->t = JV_NULL; return true; }
    json_t *o = json_pack("{sI}", "index", (json_int_t)f->index);
    if (!o) return oom(c);
    jl_wrap_to(out, o, JO_REF);
    return true;
}

/* Scope level l: 0 the current data, 1 the current iteration's metadata ({"index"}),
 * 2 the enclosing data, and so on up to the root. */
static bool scope_data(jl_ctx *c, long l, jl_val *out) {
    const jl_frame *f = c->top;
    if (l < 0) l = -l;
    while (l >= 2 && f->parent) { f = f->parent; l -= 2; }
    if (l >= 1 && f->kind != F_ROOT) return frame_meta(c, f, out);
    return frame_data(c, f, out);
}

/* One val step: numbers index arrays, anything else is a key. */
static bool val_step(jl_ctx *c, const jl_val *base, const jl_val *seg, jl_val *out) {
    if (jl_is_arr(base) && seg->t == JV_NUM) {
        out->t = JV_UNDEF;
        double d = seg->u.n;
        if (d >= 0 && d == floor(d) && d < (double)json_array_size(base->u.j)) jl_elem_to(out, base, (size_t)d);
        return true;
    }
    gg_strbuf b = GG_STRBUF_INIT;
    if (!jl_to_string(c, seg, &b, false)) { gg_strbuf_free(&b); return false; }
    bool ok = get_prop(c, base, b.data ? b.data : "", b.len, out);
    gg_strbuf_free(&b);
    return ok;
}

/* Shared by val and exists: walk the path; *found tells whether the last step existed. */
static bool val_walk(jl_ctx *c, const jl_node *n, jl_val *out, bool *found) {
    argv_t a;
    if (!eval_args(c, n, &a, false)) { args_free(&a); return false; }
    const jl_val *segs = a.v;
    int cnt = a.n;
    jl_val list = JL_UNDEF;
    if (!n->args_array && cnt == 1 && jl_is_arr(&a.v[0])) { /* {"val": <expr giving a path>} */
        list = a.v[0];
        cnt = (int)json_array_size(list.u.j);
        segs = NULL;
    }
    long level = 0;
    int start = 0;
    jl_val first = cnt > 0 ? (segs ? segs[0] : jl_elem(&list, 0)) : JL_UNDEF;
    if (jl_is_arr(&first)) { /* [[n], ...]: climb n scopes first */
        jl_val lv = json_array_size(first.u.j) ? jl_elem(&first, 0) : JL_UNDEF;
        double d = fabs(jl_to_number(&lv));
        level = isnan(d) ? 0 : d > 1e6 ? 1000000 : (long)d; /* deeper than any scope: the root */
        jl_release(&lv);
        start = 1;
    }
    if (!segs) jl_release(&first);
    jl_val cur;
    bool ok = scope_data(c, level, &cur);
    *found = ok;
    for (int i = start; ok && i < cnt; i++) {
        if (jl_is_nullish(&cur)) { *found = false; break; }
        jl_val seg = segs ? segs[i] : jl_elem(&list, (size_t)i), next;
        ok = val_step(c, &cur, &seg, &next);
        if (!segs) jl_release(&seg);
        jl_release(&cur);
        cur = ok ? next : JL_UNDEF;
        if (ok && cur.t == JV_UNDEF) { *found = false; break; }
    }
    args_free(&a);
    if (!ok) { jl_release(&cur); return false; }
    *out = cur;
    return true;
}

static NOINLINE bool op_val(jl_ctx *c, const jl_node *n, jl_val *out) {
    bool found;
    if (!val_walk(c, n, out, &found)) return false;
    if (out->t == JV_UNDEF) out->t = JV_NULL;
    return true;
}

static NOINLINE bool op_exists(jl_ctx *c, const jl_node *n, jl_val *out) {
    bool found;
    jl_val v;
    if (!val_walk(c, n, &v, &found)) return false;
    jl_release(&v);
    jl_set_bool(out, found);
    return true;
}

/* ---------------------------------------------------------------- compat: throw, try */

static const char *jl_thrown_type(json_t *v, char **heap);

static NOINLINE bool op_throw(jl_ctx *c, const jl_node *n, jl_val *out) {
    jl_val v = JL_UNDEF;
    if (n->nargs > 0 && !jl_eval(c, n->args[0], &v)) return false;
    json_t *j = jl_to_json(&v);
    jl_release(&v);
    if (!j) return oom(c);
    char *heap = NULL;
    const char *type = jl_thrown_type(j, &heap);
    gg_error_set(c->err, JL_E_THROWN, "%s", type ? type : "error");
    free(heap);
    json_decref(c->thrown);
    c->thrown = j;
    (void)out;
    return false;
}

/* The error as the value a catch branch sees: {"type": ...} (or the thrown object). */
static json_t *error_object(jl_ctx *c) {
    if (strcmp(c->err->code, JL_E_THROWN) == 0 && c->thrown) {
        json_t *t = c->thrown;
        c->thrown = NULL;
        if (json_is_object(t)) return t;
        json_t *o = json_pack("{sO}", "type", t);
        json_decref(t);
        return o;
    }
    const char *type = jsonlogic_error_type(c->err);
    return json_pack("{ss}", "type", type);
}

static bool catchable(const gg_error *e) {
    return strcmp(e->code, "oom") != 0 && strcmp(e->code, "depth_exceeded") != 0;
}

static NOINLINE bool op_try(jl_ctx *c, const jl_node *n, jl_val *out) {
    jl_frame f = {.parent = c->top, .kind = F_TRY, .item = JL_NULL};
    jl_frame *saved = c->top;
    bool ok = false;
    for (int i = 0; i < n->nargs; i++) {
        ok = jl_eval(c, n->args[i], out);
        if (ok || i == n->nargs - 1 || !catchable(c->err)) break;
        json_t *eo = error_object(c);
        if (!eo) { ok = oom(c); break; }
        gg_error_clear(c->err);
        jl_release(&f.item);
        f.item = jl_wrap(eo, JO_REF);
        c->top = &f;
    }
    c->top = saved;
    jl_release(&f.item);
    if (n->nargs == 0) { out->t = JV_NULL; return true; }
    return ok;
}

static NOINLINE bool op_coalesce(jl_ctx *c, const jl_node *n, jl_val *out) {
    for (int i = 0; i < n->nargs; i++) {
        if (!jl_eval(c, n->args[i], out)) return false;
        if (!jl_is_nullish(out)) return true;
        jl_release(out);
    }
    out->t = JV_NULL;
    return true;
}

/* ---------------------------------------------------------------- logic */

static int eval_truthy(jl_ctx *c, const jl_node *n);

/* missing / missing_some when only "is anything missing" matters: no array is built. */
static NOINLINE int missing_truthy(jl_ctx *c, const jl_node *n) {
    argv_t a;
    bool nonempty = false;
    if (has_mplan(n)) return missing_planned(c, n, NULL, &nonempty) ? nonempty : -1;
    bool ok = eval_args(c, n, &a, false);
    if (ok) ok = n->op == OP_MISSING ? op_missing(c, n, &a, NULL, &nonempty) : op_missing_some(c, n, &a, NULL, &nonempty);
    args_free(&a);
    return ok ? nonempty : -1;
}

static bool cmp_holds(uint8_t op, int r) {
    switch (op) {
    case OP_LT: return r == -1;
    case OP_LE: return r == -1 || r == 0;
    case OP_GT: return r == 1;
    default: return r == 1 || r == 0;
    }
}

/* A json-logic-js comparison written with two arguments, as 1 / 0 (-1 on error): two
 * numbers are compared directly, anything else the general way. */
static int cmp2(jl_ctx *c, const jl_node *n) {
    jl_val a, b;
    if (!eval_q(c, n->args[0], &a)) return -1;
    if (!eval_q(c, n->args[1], &b)) { jl_release(&a); return -1; }
    if (a.t == JV_NUM && b.t == JV_NUM) {
        double x = a.u.n, y = b.u.n;
        switch (n->op) {
        case OP_EQ: case OP_SEQ: return x == y;
        case OP_NE: case OP_SNE: return x != y;
        case OP_LT: return x < y;
        case OP_LE: return x <= y;
        case OP_GT: return x > y;
        default: return x >= y;
        }
    }
    bool r;
    switch (n->op) {
    case OP_EQ: r = jl_loose_eq(c, &a, &b); break;
    case OP_NE: r = !jl_loose_eq(c, &a, &b); break;
    case OP_SEQ: r = jl_strict_eq(&a, &b); break;
    case OP_SNE: r = !jl_strict_eq(&a, &b); break;
    default: r = cmp_holds(n->op, jl_compare(c, &a, &b)); break;
    }
    jl_release(&a);
    jl_release(&b);
    return gg_error_is_set(c->err) ? -1 : r;
}

static bool is_cmp2(const jl_ctx *c, const jl_node *n) {
    return n->op >= OP_EQ && n->op <= OP_LE && !c->compat && n->nargs == 2 && n->args_array;
}

/* Evaluate n for its truthiness only (if conditions, !, !!, predicates, jsonlogic_test):
 * 1, 0, or -1 on error. Same answer as jl_truthy(jl_eval(n)), with less work. */
static int eval_truthy(jl_ctx *c, const jl_node *n) {
    switch (n->op) {
    case OP_CONST: return jl_truthy(&n->cval);
    case OP_MISSING: case OP_MISSING_SOME: return missing_truthy(c, n);
    case OP_EQ: case OP_SEQ: case OP_NE: case OP_SNE: case OP_GT: case OP_GE: case OP_LT: case OP_LE:
        if (is_cmp2(c, n)) return cmp2(c, n);
        break;
    case OP_NOT: case OP_NOTNOT:
        if (n->nargs <= 1) {
            int t = n->nargs ? eval_truthy(c, n->args[0]) : 0; /* !undefined */
            return t < 0 ? -1 : (n->op == OP_NOT ? !t : t);
        }
        break;
    default: break;
    }
    jl_val v;
    if (!eval_q(c, n, &v)) return -1;
    int t = jl_truthy(&v);
    jl_release(&v);
    return t;
}

static NOINLINE bool op_if(jl_ctx *c, const jl_node *n, jl_val *out) {
    int i;
    for (i = 0; i + 1 < n->nargs; i += 2) {
        int yes = eval_truthy(c, n->args[i]);
        if (yes < 0) return false;
        if (yes) return eval_q(c, n->args[i + 1], out);
    }
    if (i + 1 == n->nargs) return eval_q(c, n->args[i], out);
    out->t = JV_NULL;
    return true;
}

/* and returns the first falsy value (or the last), or the first truthy value. */
static NOINLINE bool op_andor(jl_ctx *c, const jl_node *n, bool is_and, jl_val *out) {
    if (c->compat) jl_set_bool(out, false);
    else out->t = JV_UNDEF;
    for (int i = 0; i < n->nargs; i++) {
        jl_release(out);
        if (!eval_q(c, n->args[i], out)) return false;
        if (jl_truthy(out) != is_and) return true;
    }
    return true;
}

/* ---------------------------------------------------------------- comparisons */

/* compat: numbers for everything but containers (which are an error), null is 0. */
static double compat_num(const jl_val *v) {
    size_t len;
    const char *s;
    switch (v->t) {
    case JV_NULL: return 0;
    case JV_BOOL: return v->u.b;
    case JV_NUM: return v->u.n;
    case JV_STR: return jl_str_to_number(v->u.str.s, v->u.str.len);
    case JV_JSON: return (s = jl_strp(v, &len)) ? jl_str_to_number(s, len) : NAN;
    default: return NAN;
    }
}

/* One link of a compat comparison chain; false + err set on NaN. */
static bool compat_pair(jl_ctx *c, uint8_t op, const jl_val *a, const jl_val *b, bool *holds) {
    if (op == OP_SEQ || op == OP_SNE) { *holds = jl_strict_eq(a, b) == (op == OP_SEQ); return true; }
    size_t la, lb;
    const char *sa = jl_strp(a, &la), *sb = jl_strp(b, &lb);
    if (op == OP_EQ || op == OP_NE) {
        bool same_scalar = a->t == b->t && (a->t == JV_NULL || a->t == JV_BOOL || a->t == JV_NUM);
        bool eq;
        if (sa && sb) eq = la == lb && memcmp(sa, sb, la) == 0;
        else if (same_scalar) eq = jl_strict_eq(a, b);
        else {
            double x = compat_num(a), y = compat_num(b);
            if (isnan(x) || isnan(y)) return nan_error(c);
            eq = x == y;
        }
        *holds = eq == (op == OP_EQ);
        return true;
    }
    int r;
    if (sa && sb) r = gg_utf16_cmp(sa, la, sb, lb);
    else {
        double x = compat_num(a), y = compat_num(b);
        if (isnan(x) || isnan(y)) return nan_error(c);
        r = x < y ? -1 : (x > y ? 1 : 0);
    }
    *holds = cmp_holds(op, r);
    return true;
}

/* compat: every adjacent pair must hold; arguments are evaluated only as needed. */
static NOINLINE bool compat_chain(jl_ctx *c, const jl_node *n, jl_val *out) {
    jl_val prev, cur;
    if (!jl_eval(c, n->args[0], &prev)) return false;
    for (int i = 1; i < n->nargs; i++) {
        bool holds;
        if (!jl_eval(c, n->args[i], &cur)) { jl_release(&prev); return false; }
        bool ok = compat_pair(c, n->op, &prev, &cur, &holds);
        jl_release(&prev);
        prev = cur;
        if (!ok) { jl_release(&prev); return false; }
        if (!holds) { jl_release(&prev); jl_set_bool(out, false); return true; }
    }
    jl_release(&prev);
    jl_set_bool(out, true);
    return true;
}

static bool op_compare(jl_ctx *c, const jl_node *n, const argv_t *a, jl_val *out) {
    const jl_val *x = arg(a, 0), *y = arg(a, 1), *z = arg(a, 2);
    bool r;
    switch (n->op) {
    case OP_EQ: r = jl_loose_eq(c, x, y); break;
    case OP_NE: r = !jl_loose_eq(c, x, y); break;
    case OP_SEQ: r = jl_strict_eq(x, y); break;
    case OP_SNE: r = !jl_strict_eq(x, y); break;
    case OP_GT: case OP_GE: r = cmp_holds(n->op, jl_compare(c, x, y)); break;
    default: /* < and <= take an optional third argument: between */
        r = cmp_holds(n->op, jl_compare(c, x, y));
        if (z->t != JV_UNDEF) r = r && cmp_holds(n->op, jl_compare(c, y, z));
        break;
    }
    if (gg_error_is_set(c->err)) return false;
    jl_set_bool(out, r);
    return true;
}

/* ---------------------------------------------------------------- arithmetic */

static bool js_arith(jl_ctx *c, const jl_node *n, const argv_t *a, jl_val *out) {
    double r;
    switch (n->op) {
    case OP_PLUS: /* reduce((a, b) => parseFloat(a) + parseFloat(b), 0) */
        r = 0;
        for (int i = 0; i < a->n; i++) r = r + jl_parse_float(c, &a->v[i]);
        break;
    case OP_MUL: /* reduce without an initial value: one argument comes back untouched */
        if (a->n == 0) return fail(c, JL_E_TYPE, "%s", "Reduce of empty array with no initial value");
        if (a->n == 1) return jl_dup(&a->v[0], out) || oom(c);
        r = jl_parse_float(c, &a->v[0]);
        for (int i = 1; i < a->n; i++) r = r * jl_parse_float(c, &a->v[i]);
        break;
    case OP_MINUS:
        r = arg(a, 1)->t == JV_UNDEF ? -jl_to_number(arg(a, 0)) : jl_to_number(arg(a, 0)) - jl_to_number(arg(a, 1));
        break;
    case OP_DIV: r = jl_to_number(arg(a, 0)) / jl_to_number(arg(a, 1)); break;
    case OP_MOD: r = fmod(jl_to_number(arg(a, 0)), jl_to_number(arg(a, 1))); break;
    default: { /* Math.max / Math.min */
        bool mx = n->op == OP_MAX;
        r = mx ? -INFINITY : INFINITY;
        for (int i = 0; i < a->n; i++) {
            double d = jl_to_number(&a->v[i]);
            if (isnan(d) || isnan(r)) r = NAN;
            else if (mx ? d > r : d < r) r = d;
        }
    }
    }
    if (gg_error_is_set(c->err)) return false;
    jl_set_num(out, r);
    return true;
}

static bool compat_arith(jl_ctx *c, const jl_node *n, const argv_t *a, jl_val *out) {
    double r;
    int cnt = a->n;
    if (cnt == 0 && (n->op == OP_MINUS || n->op == OP_DIV || n->op == OP_MAX || n->op == OP_MIN))
        return args_error(c, n->name);
    if (cnt < 2 && n->op == OP_MOD) return args_error(c, n->name);
    for (int i = 0; i < cnt; i++)
        if (isnan(compat_num(&a->v[i]))) return nan_error(c);
    switch (n->op) {
    case OP_PLUS: r = 0; for (int i = 0; i < cnt; i++) r += compat_num(&a->v[i]); break;
    case OP_MUL: r = 1; for (int i = 0; i < cnt; i++) r *= compat_num(&a->v[i]); break;
    case OP_MINUS:
        r = compat_num(&a->v[0]);
        if (cnt == 1) r = -r;
        for (int i = 1; i < cnt; i++) r -= compat_num(&a->v[i]);
        break;
    case OP_DIV:
        r = compat_num(&a->v[0]);
        if (cnt == 1) r = 1 / r;
        for (int i = 1; i < cnt; i++) r /= compat_num(&a->v[i]);
        break;
    case OP_MOD:
        r = compat_num(&a->v[0]);
        for (int i = 1; i < cnt; i++) r = fmod(r, compat_num(&a->v[i]));
        break;
    default:
        r = compat_num(&a->v[0]);
        for (int i = 1; i < cnt; i++) {
            double d = compat_num(&a->v[i]);
            if (n->op == OP_MAX ? d > r : d < r) r = d;
        }
    }
    if (!isfinite(r)) return nan_error(c);
    jl_set_num(out, r);
    return true;
}

/* ---------------------------------------------------------------- strings and arrays */

static bool op_in(jl_ctx *c, const argv_t *a, jl_val *out) {
    const jl_val *needle = arg(a, 0), *hay = arg(a, 1);
    size_t hl;
    const char *hs = jl_strp(hay, &hl);
    bool r = false;
    if (hs && hl > 0) { /* String.prototype.indexOf(ToString(needle)) */
        gg_strbuf b = GG_STRBUF_INIT;
        if (!jl_to_string(c, needle, &b, false)) { gg_strbuf_free(&b); return false; }
        r = b.len == 0 || memmem(hs, hl, b.data, b.len) != NULL;
        gg_strbuf_free(&b);
    } else if (jl_is_arr(hay)) { /* Array.prototype.indexOf: strict equality */
        for (size_t i = 0; !r && i < json_array_size(hay->u.j); i++) {
            jl_val e;
            jl_wrap_to(&e, json_array_get(hay->u.j, i), JO_BORROW); /* in place: see jl_wrap_to */
            r = jl_strict_eq(needle, &e);
        }
    }
    jl_set_bool(out, r);
    return true;
}

static bool op_cat(jl_ctx *c, const argv_t *a, jl_val *out) {
    gg_strbuf b = GG_STRBUF_INIT;
    for (int i = 0; i < a->n; i++)
        if (!jl_to_string(c, &a->v[i], &b, true)) { gg_strbuf_free(&b); return false; }
    size_t len = b.len;
    char *s = gg_strbuf_take(&b);
    if (!s && !(s = calloc(1, 1))) return oom(c);
    jl_set_str(out, s, len);
    return true;
}

/* ToIntegerOrInfinity */
static double to_integer(const jl_val *v) {
    double d = jl_to_number(v);
    if (isnan(d)) return 0;
    return trunc(d);
}

/* String.prototype.substr(start, length) on UTF-16 code units. */
static bool js_substr(jl_ctx *c, const char *s, size_t len, double start, bool has_len, double length, jl_val *out) {
    double size = (double)gg_utf16_len(s, len);
    if (start < 0) start = fmax(size + start, 0);
    start = fmin(start, size);
    double l = has_len ? fmin(fmax(length, 0), size) : size;
    double end = fmin(start + l, size);
    return u16_slice(c, s, len, (size_t)start, (size_t)(end > start ? end : start), out);
}

static bool op_substr(jl_ctx *c, const argv_t *a, jl_val *out) {
    gg_strbuf b = GG_STRBUF_INIT;
    if (!jl_to_string(c, arg(a, 0), &b, false)) { gg_strbuf_free(&b); return false; }
    const char *s = b.data ? b.data : "";
    double start = to_integer(arg(a, 1));
    const jl_val *end = arg(a, 2);
    jl_val zero = jl_num(0);
    bool ok;
    if (jl_compare(c, end, &zero) == -1) {
        /* temp = substr(start); temp.substr(0, temp.length + end) — "+" concatenates when
         * end is a string, exactly as JavaScript would */
        jl_val temp;
        ok = js_substr(c, s, b.len, start, false, 0, &temp);
        if (ok) {
            double tl = (double)gg_utf16_len(temp.u.str.s, temp.u.str.len), l;
            size_t el;
            if (jl_strp(end, &el)) {
                gg_strbuf t = GG_STRBUF_INIT;
                jl_val tlv = jl_num(tl);
                ok = jl_to_string(c, &tlv, &t, false) && jl_to_string(c, end, &t, false);
                size_t jlen = t.len;
                jl_val joined = jl_str_take(gg_strbuf_take(&t), jlen);
                l = joined.u.str.s ? to_integer(&joined) : 0;
                jl_release(&joined);
                gg_strbuf_free(&t);
            } else {
                l = tl + jl_to_number(end);
                l = isnan(l) ? 0 : trunc(l);
            }
            if (ok) ok = js_substr(c, temp.u.str.s, temp.u.str.len, 0, true, l, out);
            jl_release(&temp);
        }
    } else {
        ok = js_substr(c, s, b.len, start, end->t != JV_UNDEF, to_integer(end), out);
    }
    gg_strbuf_free(&b);
    return ok && !gg_error_is_set(c->err);
}

static bool op_merge(jl_ctx *c, const argv_t *a, jl_val *out) {
    json_t *r = json_array();
    if (!r) return oom(c);
    for (int i = 0; i < a->n; i++) {
        const jl_val *v = &a->v[i];
        json_t *e = jl_is_arr(v) ? NULL : jl_to_json_elem(c, v);
        if (jl_is_arr(v) ? json_array_extend(r, v->u.j) != 0 : (!e || json_array_append_new(r, e) != 0)) {
            json_decref(r);
            return oom(c);
        }
    }
    jl_wrap_to(out, r, JO_REF);
    return true;
}

/* ---------------------------------------------------------------- iteration */

/* Argument i, or undefined when the rule gave fewer. */
static bool eval_arg(jl_ctx *c, const jl_node *n, int i, jl_val *out) {
    if (i >= n->nargs) { out->t = JV_UNDEF; return true; }
    return eval_q(c, n->args[i], out);
}

static NOINLINE bool op_map_filter(jl_ctx *c, const jl_node *n, jl_val *out) {
    jl_val coll;
    if (!eval_arg(c, n, 0, &coll)) return false;
    json_t *r = json_array();
    if (!r) { jl_release(&coll); return oom(c); }
    bool ok = true;
    size_t cnt = jl_is_arr(&coll) ? json_array_size(coll.u.j) : 0;
    const jl_node *logic = n->nargs > 1 ? n->args[1] : NULL;
    if (!logic && n->op == OP_FILTER) cnt = 0; /* no predicate: nothing passes */
    jl_frame f = {.parent = c->top, .kind = F_ITEM}; /* one scope, its element replaced in turn */
    c->top = &f;
    for (size_t i = 0; ok && i < cnt; i++) {
        json_t *e = NULL;
        f.index = i;
        if (n->op == OP_MAP) {
            jl_val v = JL_UNDEF;
            if (logic) {
                jl_elem_to(&f.item, &coll, i);
                ok = eval_q(c, logic, &v);
                jl_release(&f.item);
            }
            if (ok) e = jl_to_json_elem(c, &v);
            jl_release(&v);
        } else {
            jl_elem_to(&f.item, &coll, i);
            int t = eval_truthy(c, logic);
            jl_release(&f.item);
            if (t < 0) ok = false;
            if (t <= 0) continue;
            e = json_incref(json_array_get(coll.u.j, i)); /* the element itself */
        }
        if (ok && (!e || json_array_append_new(r, e) != 0)) ok = oom(c);
    }
    c->top = f.parent;
    jl_release(&coll);
    if (!ok) { json_decref(r); return false; }
    jl_wrap_to(out, r, JO_REF);
    return true;
}

static NOINLINE bool op_reduce(jl_ctx *c, const jl_node *n, jl_val *out) {
    jl_val coll, acc = JL_NULL;
    if (!eval_arg(c, n, 0, &coll)) return false;
    size_t cnt = jl_is_arr(&coll) ? json_array_size(coll.u.j) : 0, i = 0;
    bool ok = true;
    if (n->nargs > 2) ok = jl_eval(c, n->args[2], &acc);
    else if (c->compat) { /* Array.prototype.reduce without an initial value */
        if (cnt > 0) jl_elem_to(&acc, &coll, i++);
    }
    if (ok && !jl_is_arr(&coll)) { *out = acc; jl_release(&coll); return true; }
    jl_frame f = {.parent = c->top, .kind = F_REDUCE, .acc = &acc};
    for (; ok && i < cnt; i++) {
        jl_elem_to(&f.item, &coll, i);
        f.index = i;
        c->top = &f;
        jl_val next = JL_UNDEF;
        ok = n->nargs > 1 ? jl_eval(c, n->args[1], &next) : true;
        c->top = f.parent;
        jl_release(&f.item);
        jl_release(&acc);
        jl_copy_to(&acc, &next);
    }
    jl_release(&coll);
    if (!ok) { jl_release(&acc); return false; }
    jl_copy_to(out, &acc);
    return true;
}

/* all / none / some: json-logic-js's all is false on an empty or non-array set; none and
 * some go through filter. The compat suites make a non-array set an error instead. */
static NOINLINE bool op_quantifier(jl_ctx *c, const jl_node *n, jl_val *out) {
    jl_val coll;
    if (!eval_arg(c, n, 0, &coll)) return false;
    if (!jl_is_arr(&coll)) {
        jl_release(&coll);
        if (c->compat) return args_error(c, n->name);
        jl_set_bool(out, n->op == OP_NONE);
        return true;
    }
    size_t cnt = json_array_size(coll.u.j), hits = 0;
    bool ok = true, want = n->op != OP_ALL; /* all stops at the first falsy, some at the first truthy */
    if (n->op == OP_ALL && cnt == 0) { jl_release(&coll); jl_set_bool(out, false); return true; }
    const jl_node *logic = n->nargs > 1 ? n->args[1] : NULL;
    jl_frame f = {.parent = c->top, .kind = F_ITEM}; /* one scope, its element replaced in turn */
    c->top = &f;
    for (size_t i = 0; ok && i < cnt; i++) {
        int t = 0;
        if (logic) {
            jl_elem_to(&f.item, &coll, i);
            f.index = i;
            t = eval_truthy(c, logic);
            jl_release(&f.item);
        }
        if (t < 0) ok = false;
        else if ((t == 1) == want) { hits++; break; }
    }
    c->top = f.parent;
    jl_release(&coll);
    if (!ok) return false;
    jl_set_bool(out, n->op == OP_ALL ? hits == 0 : n->op == OP_SOME ? hits > 0 : hits == 0);
    return true;
}

/* ---------------------------------------------------------------- custom and log */

static bool op_custom(jl_ctx *c, const jl_node *n, const argv_t *a, jl_val *out) {
    json_t *small[8], **js = small, *data = NULL;
    if (a->n > 8 && !(js = calloc((size_t)a->n, sizeof *js))) return oom(c);
    bool ok = true;
    for (int i = 0; i < a->n && ok; i++) {
        if (!(js[i] = jl_to_json(&a->v[i]))) { ok = oom(c); break; }
        if (c->sentinel && (json_is_array(js[i]) || json_is_object(js[i]))) { /* hand out plain JSON */
            json_t *copy = gg_json_clone(js[i]);
            json_decref(js[i]);
            if (!(js[i] = copy)) { ok = oom(c); break; }
            jl_fix_sentinels(js[i], 0);
        }
    }
    jl_val d = JL_UNDEF;
    if (ok && (!frame_data(c, c->top, &d) || !(data = jl_to_json(&d)))) ok = oom(c);
    jl_release(&d);
    json_t *r = NULL;
    if (ok) {
        r = n->fn(js, a->n, data, n->fn_user, c->err);
        if (gg_error_is_set(c->err)) { json_decref(r); r = NULL; ok = false; }
    }
    for (int i = 0; i < a->n; i++) json_decref(js[i]);
    if (js != small) free(js);
    json_decref(data);
    if (!ok) return false;
    *out = r ? jl_wrap(r, JO_REF) : JL_NULL;
    return true;
}

static bool op_log(jl_ctx *c, const argv_t *a, jl_val *out) {
    json_t *j = jl_to_json(arg(a, 0)), *copy = c->sentinel && j ? gg_json_clone(j) : NULL;
    if (copy) { json_decref(j); j = copy; jl_fix_sentinels(j, 0); }
    char *text = j ? json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    gg_log(GG_LOG_INFO, "jsonlogic log", "value", text ? text : "null", NULL);
    free(text);
    json_decref(j);
    return jl_dup(arg(a, 0), out) || oom(c);
}

/* ---------------------------------------------------------------- dispatch */

static NOINLINE bool eager_op(jl_ctx *c, const jl_node *n, jl_val *out) {
    argv_t a;
    bool spread = n->op == OP_PLUS || n->op == OP_MINUS || n->op == OP_MUL || n->op == OP_DIV ||
                  n->op == OP_MOD || n->op == OP_MAX || n->op == OP_MIN || n->op == OP_CAT;
    bool ok = eval_args(c, n, &a, spread);
    if (ok) switch (n->op) {
    case OP_MISSING: ok = op_missing(c, n, &a, out, NULL); break;
    case OP_MISSING_SOME: ok = op_missing_some(c, n, &a, out, NULL); break;
    case OP_EQ: case OP_SEQ: case OP_NE: case OP_SNE: case OP_GT: case OP_GE: case OP_LT: case OP_LE:
        ok = op_compare(c, n, &a, out);
        break;
    case OP_NOT: jl_set_bool(out, !jl_truthy(arg(&a, 0))); break;
    case OP_NOTNOT: jl_set_bool(out, jl_truthy(arg(&a, 0))); break;
    case OP_MAX: case OP_MIN: case OP_PLUS: case OP_MINUS: case OP_MUL: case OP_DIV: case OP_MOD:
        ok = c->compat ? compat_arith(c, n, &a, out) : js_arith(c, n, &a, out);
        break;
    case OP_IN: ok = op_in(c, &a, out); break;
    case OP_CAT: ok = op_cat(c, &a, out); break;
    case OP_SUBSTR: ok = op_substr(c, &a, out); break;
    case OP_MERGE: ok = op_merge(c, &a, out); break;
    case OP_LOG: ok = op_log(c, &a, out); break;
    case OP_CUSTOM: ok = op_custom(c, n, &a, out); break;
    default: ok = fail(c, "internal_error", "no implementation for %s", n->name);
    }
    args_free(&a);
    return ok;
}

/* json-logic-js comparisons and ! / !! without the generic argument vector: they are
 * most of what switch rules do. Arguments are still all evaluated, in order. */
static NOINLINE bool js_small_op(jl_ctx *c, const jl_node *n, jl_val *out) {
    jl_val v[3];
    int cnt = n->nargs;
    for (int i = 0; i < cnt; i++)
        if (!eval_q(c, n->args[i], &v[i])) {
            while (i-- > 0) jl_release(&v[i]);
            return false;
        }
    for (int i = cnt; i < 3; i++) v[i].t = JV_UNDEF;
    bool r;
    switch (n->op) {
    case OP_NOT: r = !jl_truthy(&v[0]); break;
    case OP_NOTNOT: r = jl_truthy(&v[0]); break;
    case OP_EQ: r = jl_loose_eq(c, &v[0], &v[1]); break;
    case OP_NE: r = !jl_loose_eq(c, &v[0], &v[1]); break;
    case OP_SEQ: r = jl_strict_eq(&v[0], &v[1]); break;
    case OP_SNE: r = !jl_strict_eq(&v[0], &v[1]); break;
    case OP_GT: case OP_GE: r = cmp_holds(n->op, jl_compare(c, &v[0], &v[1])); break;
    default:
        r = cmp_holds(n->op, jl_compare(c, &v[0], &v[1]));
        if (v[2].t != JV_UNDEF) r = r && cmp_holds(n->op, jl_compare(c, &v[1], &v[2]));
    }
    for (int i = 0; i < cnt; i++) jl_release(&v[i]);
    if (gg_error_is_set(c->err)) return false;
    jl_set_bool(out, r);
    return true;
}

/* Whether v nests containers deeper than left levels (stops as soon as it does, so a
 * reduce wrapping its accumulator costs at most JL_VALUE_DEPTH nodes per step). */
#define JL_VALUE_DEPTH 512
static bool nests_deeper(json_t *v, int left) {
    if (!json_is_array(v) && !json_is_object(v)) return false;
    if (left <= 0) return true;
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            if (nests_deeper(json_array_get(v, i), left - 1)) return true;
        return false;
    }
    const char *k;
    json_t *x;
    json_object_foreach(v, k, x) if (nests_deeper(x, left - 1)) return true;
    return false;
}

static NOINLINE bool eval_array(jl_ctx *c, const jl_node *n, jl_val *out) {
    json_t *r = json_array();
    if (!r) return oom(c);
    for (int i = 0; i < n->nargs; i++) {
        const jl_node *a = n->args[i];
        json_t *e;
        if (a->op == OP_CONST && a->cjson) {
            e = json_incref(a->cjson); /* share the constant instead of rebuilding it */
        } else {
            jl_val v;
            if (!jl_eval(c, a, &v)) { json_decref(r); return false; }
            e = jl_to_json_elem(c, &v);
            jl_release(&v);
            /* values built at run time (a reduce wrapping its accumulator) must not nest
             * deeper than every recursive walk of JSON (freeing, printing) can go */
            if (e && nests_deeper(e, JL_VALUE_DEPTH)) {
                json_decref(e);
                json_decref(r);
                gg_error_set(c->err, "depth_exceeded", "an array literal would nest values deeper than %d levels", JL_VALUE_DEPTH);
                return false;
            }
        }
        if (!e || json_array_append_new(r, e) != 0) { json_decref(r); return oom(c); }
    }
    jl_wrap_to(out, r, JO_REF);
    return true;
}

/* + - * / % with two written arguments (json-logic-js semantics): no argument vector,
 * and numbers are combined directly; anything else goes through js_arith. */
static NOINLINE bool arith2(jl_ctx *c, const jl_node *n, jl_val *out) {
    argv_t a;
    a.v = a.small;
    a.n = 0;
    a.spread = JL_UNDEF;
    if (!eval_q(c, n->args[0], &a.small[0])) return false;
    a.n = 1;
    if (!eval_q(c, n->args[1], &a.small[1])) { args_free(&a); return false; }
    a.n = 2;
    if (a.small[0].t == JV_NUM && a.small[1].t == JV_NUM) {
        double x = a.small[0].u.n, y = a.small[1].u.n, r;
        switch (n->op) {
        case OP_PLUS: r = (0.0 + x) + y; break; /* parseFloat(String(-0)) is 0 */
        case OP_MUL: r = (x == 0 ? 0 : x) * (y == 0 ? 0 : y); break;
        case OP_MINUS: r = x - y; break;
        case OP_DIV: r = x / y; break;
        default: r = fmod(x, y); break;
        }
        jl_set_num(out, r);
        return true;
    }
    bool ok = js_arith(c, n, &a, out);
    args_free(&a);
    return ok;
}

/* Evaluate n into *out (caller releases). false with c->err set on error. */
bool jl_eval(jl_ctx *c, const jl_node *n, jl_val *out) {
    out->t = JV_UNDEF;
    switch (n->op) {
    case OP_CONST: *out = n->cval; return true;
    case OP_ARRAY: return eval_array(c, n, out);
    case OP_BAD_ARGS: return args_error(c, n->name);
    case OP_VAR:
        if (n->var_fast) {
            int k = var_fast(c, n, out);
            if (k >= 0) return k ? true : var_default(c, n, out);
        }
        return op_var(c, n, out);
    case OP_PLUS: case OP_MINUS: case OP_MUL: case OP_DIV: case OP_MOD:
        if (!c->compat && n->nargs == 2 && n->args_array) return arith2(c, n, out);
        return eager_op(c, n, out);
    case OP_MISSING: case OP_MISSING_SOME:
        if (has_mplan(n)) return missing_planned(c, n, out, NULL);
        return eager_op(c, n, out);
    case OP_IF: return op_if(c, n, out);
    case OP_AND: return op_andor(c, n, true, out);
    case OP_OR: return op_andor(c, n, false, out);
    case OP_MAP: case OP_FILTER: return op_map_filter(c, n, out);
    case OP_REDUCE: return op_reduce(c, n, out);
    case OP_ALL: case OP_NONE: case OP_SOME: return op_quantifier(c, n, out);
    case OP_VAL: return op_val(c, n, out);
    case OP_EXISTS: return op_exists(c, n, out);
    case OP_COALESCE: return op_coalesce(c, n, out);
    case OP_TRY: return op_try(c, n, out);
    case OP_THROW: return op_throw(c, n, out);
    case OP_EQ: case OP_SEQ: case OP_NE: case OP_SNE: case OP_GT: case OP_GE: case OP_LT: case OP_LE:
        if (c->compat) return compat_chain(c, n, out);
        if (is_cmp2(c, n)) {
            int t = cmp2(c, n);
            if (t < 0) return false;
            jl_set_bool(out, t);
            return true;
        }
        if (n->nargs <= 3 && n->args_array) return js_small_op(c, n, out);
        return eager_op(c, n, out);
    case OP_NOT: case OP_NOTNOT:
        if (n->nargs <= 1) {
            int t = eval_truthy(c, n);
            if (t < 0) return false;
            jl_set_bool(out, t);
            return true;
        }
        return eager_op(c, n, out);
    default: return eager_op(c, n, out);
    }
}

/* ---------------------------------------------------------------- public entry points */

/* The type name a JSON Logic error carries (json-logic-engine's error.type): "NaN",
 * "Invalid Arguments", or what {"throw"} threw; for other errors the code. */
const char *jsonlogic_error_type(const gg_error *err) {
    if (!err || !gg_error_is_set(err)) return NULL;
    if (strcmp(err->code, JL_E_NAN) == 0) return "NaN";
    if (strcmp(err->code, JL_E_ARGS) == 0) return "Invalid Arguments";
    if (strcmp(err->code, JL_E_THROWN) == 0 && err->message) return err->message;
    return err->code;
}

/* What a thrown value's type is: a string itself, an object's "type" string, else its
 * JSON text (*heap then owns it). */
static const char *jl_thrown_type(json_t *v, char **heap) {
    *heap = NULL;
    if (json_is_string(v)) return json_string_value(v);
    json_t *t = json_is_object(v) ? json_object_get(v, "type") : NULL;
    if (json_is_string(t)) return json_string_value(t);
    *heap = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    return *heap;
}

/* The JSON an evaluation allocates (through jansson, whose allocator is the budget's: see
 * jl_value.c) counts against the rule's memory budget while the evaluation runs; a refused
 * allocation fails like out-of-memory and is reported as "memory_exceeded". */
static jsonata_budget *budget_enter(const jsonlogic_rule *r, jsonata_budget *b) {
    *b = (jsonata_budget){0, r->max_memory, 0, false};
    return jsonata_budget_swap(b);
}

static bool budget_leave(const jsonata_budget *b, jsonata_budget *outer, gg_error *err) {
    jsonata_budget_swap(outer);
    if (!b->exceeded) return true;
    gg_error_clear(err);
    gg_error_set(err, "memory_exceeded", "JSON Logic evaluation exceeded its memory budget of %ld bytes", b->limit);
    return false;
}

/* The data as the root scope's value. An object (the usual data) is stored in line:
 * jl_wrap_to's dispatch on the type cost ~10 instructions an apply (callgrind). */
static inline void root_item(jl_val *item, json_t *data) {
    if (json_is_object(data)) {
        item->t = JV_JSON;
        item->origin = JO_BORROW;
        item->u.j = data;
        return;
    }
    jl_wrap_to(item, data ? data : json_null(), JO_BORROW);
}

/* A result that must be built (a computed number, a string): jl_to_json, under the
 * rule's memory budget. An alloc_free rule's evaluation ran without the budget, which is
 * entered here for this one allocation: the same bytes are counted as when the whole
 * apply runs under it. NULL on failure (err set to "memory_exceeded" when refused). */
static NOINLINE json_t *result_built(const jsonlogic_rule *r, jl_val *v, bool budgeted, gg_error *err) {
    jsonata_budget b, *outer = budgeted ? NULL : budget_enter(r, &b);
    json_t *res = jl_to_json(v);
    jl_release(v);
    if (!budgeted && !budget_leave(&b, outer, err)) {
        json_decref(res);
        res = NULL;
    }
    return res;
}

/* apply's result as a new reference, consuming v. The common results are answered in
 * line without jl_to_json's call, and allocate nothing: a value we hold (our reference
 * becomes the caller's), a value of the data or the rule (shared, read-only: see
 * jsonlogic.h), a number read from them (its json_t), a boolean (jansson's own). The same
 * values jl_to_json gives. */
static inline json_t *result_json(const jsonlogic_rule *r, jl_val *v, bool budgeted, gg_error *err) {
    switch (v->t) {
    case JV_JSON: return v->origin == JO_REF ? v->u.j : json_incref(v->u.j);
    case JV_BOOL: return v->u.b ? json_true() : json_false();
    case JV_NUM:
        if (v->u.num.src) return json_incref(v->u.num.src);
        break;
    default: break;
    }
    return result_built(r, v, budgeted, err); /* computed numbers, strings, undefined */
}

/* Apply a compiled rule to data (borrowed; NULL means null). call_user is handed to the
 * resolver. Returns a new reference (JSON null for undefined/NaN/Infinity, as
 * JSON.stringify prints them) or NULL with err set. */
static inline __attribute__((always_inline)) json_t *apply(const jsonlogic_rule *r, json_t *data, void *call_user,
                                                           gg_error *err, bool budgeted) {
    if (r->root->op == OP_CONST) { /* a constant (or fully folded) rule */
        json_t *res = r->root->cjson ? json_incref(r->root->cjson) : jl_to_json(&r->root->cval);
        if (!res) gg_error_set(err, "oom", "out of memory building the result");
        return res;
    }
    jl_frame root;
    root.parent = NULL;
    root.kind = F_ROOT;
    root_item(&root.item, data);
    jl_ctx c = {.rule = r, .top = &root, .call_user = call_user, .err = err, .compat = r->compat};
    jl_val v;
    json_t *res = NULL;
    if (jl_eval(&c, r->root, &v)) {
        res = result_json(r, &v, budgeted, err);
        if (!res) {
            if (!gg_error_is_set(err)) gg_error_set(err, "oom", "out of memory building the result");
        } else if (c.sentinel) {
            jl_fix_sentinels(res, 0);
        }
    } else if (!gg_error_is_set(err)) {
        gg_error_set(err, "internal_error", "evaluation failed");
    }
    json_decref(c.thrown);
    return res;
}

/* Apply r and return the truthiness of the result: 1, 0, or -1 with err set. The result
 * is never converted to JSON (no allocation for it). */
static inline __attribute__((always_inline)) int test(const jsonlogic_rule *r, json_t *data, void *call_user,
                                                      gg_error *err) {
    if (r->root->op == OP_CONST) return jl_truthy(&r->root->cval);
    jl_frame root;
    root.parent = NULL;
    root.kind = F_ROOT;
    root_item(&root.item, data);
    jl_ctx c = {.rule = r, .top = &root, .call_user = call_user, .err = err, .compat = r->compat};
    int res = eval_truthy(&c, r->root);
    if (res < 0 && !gg_error_is_set(err)) gg_error_set(err, "internal_error", "evaluation failed");
    json_decref(c.thrown);
    return res;
}

/* apply under the rule's memory budget; out of line so that the constant rules'
 * early return in jsonlogic_apply does not pay this frame's set-up. */
static NOINLINE json_t *apply_budgeted(const jsonlogic_rule *r, json_t *data, void *call_user, gg_error *err) {
    jsonata_budget b, *outer = budget_enter(r, &b);
    json_t *res = apply(r, data, call_user, err, true);
    if (!budget_leave(&b, outer, err)) {
        json_decref(res);
        res = NULL;
    }
    return res;
}

/* apply of an alloc_free rule: no budget to enter and leave (a result that must be built
 * enters it: result_built). */
static NOINLINE json_t *apply_unbudgeted(const jsonlogic_rule *r, json_t *data, void *call_user, gg_error *err) {
    return apply(r, data, call_user, err, false);
}

/* jsonlogic_apply's rare cases, out of line so that its common ones set up no frame: no
 * error wanted (a scratch one is used) and no rule. */
static NOINLINE json_t *apply_unusual(const jsonlogic_rule *r, json_t *data, void *call_user, gg_error *err) {
    if (!err) {
        gg_error scratch = GG_ERROR_INIT;
        json_t *res = r ? jsonlogic_apply(r, data, call_user, &scratch) : NULL;
        gg_error_clear(&scratch);
        return res;
    }
    gg_error_set(err, "invalid_rule", "no rule");
    return NULL;
}

json_t *jsonlogic_apply(const jsonlogic_rule *r, json_t *data, void *call_user, gg_error *err) {
    if (__builtin_expect(!r, 0)) return apply_unusual(r, data, call_user, err);
    /* a constant (or fully folded) rule shares its prebuilt JSON: nothing is allocated, so
     * no budget is entered (two thirds of the calls of bench/jsonlogic's rules); it cannot
     * fail, so err is checked after it (4 instructions less a constant call) */
    if (r->const_json) return json_incref(r->const_json);
    if (__builtin_expect(!err, 0)) return apply_unusual(r, data, call_user, err);
    if (r->alloc_free) return apply_unbudgeted(r, data, call_user, err);
    return apply_budgeted(r, data, call_user, err);
}

static NOINLINE int test_budgeted(const jsonlogic_rule *r, json_t *data, void *call_user, gg_error *err) {
    jsonata_budget b, *outer = budget_enter(r, &b);
    int res = test(r, data, call_user, err);
    return budget_leave(&b, outer, err) ? res : -1;
}

/* test of an alloc_free rule: it allocates no JSON, so no budget. */
static NOINLINE int test_unbudgeted(const jsonlogic_rule *r, json_t *data, void *call_user, gg_error *err) {
    return test(r, data, call_user, err);
}

/* jsonlogic_test's rare cases, out of line as apply_unusual. */
static NOINLINE int test_unusual(const jsonlogic_rule *r, json_t *data, void *call_user, gg_error *err) {
    if (!err) {
        gg_error scratch = GG_ERROR_INIT;
        int res = r ? jsonlogic_test(r, data, call_user, &scratch) : -1;
        gg_error_clear(&scratch);
        return res;
    }
    gg_error_set(err, "invalid_rule", "no rule");
    return -1;
}

int jsonlogic_test(const jsonlogic_rule *r, json_t *data, void *call_user, gg_error *err) {
    if (__builtin_expect(!r, 0)) return test_unusual(r, data, call_user, err);
    if (r->const_truthy >= 0) return r->const_truthy; /* constant: allocates nothing, cannot fail */
    if (__builtin_expect(!err, 0)) return test_unusual(r, data, call_user, err);
    if (r->alloc_free) return test_unbudgeted(r, data, call_user, err);
    return test_budgeted(r, data, call_user, err);
}

/* JavaScript truthiness as json-logic-js applies it ([] is falsy). NULL is falsy. */
bool jsonlogic_truthy(json_t *v) {
    jl_val x;
    jl_wrap_to(&x, v, JO_BORROW);
    return jl_truthy(&x);
}
