/* fn_regex.c — global regex iteration for $match, $replace, $split and $contains, with
 * JavaScript's "g" semantics, the reference's D1004 for zero-length matches, and PCRE2
 * match/depth limits so pathological patterns end in an error instead of a hang. */
#include "jsonata/fn_common.h"
#include "util/regex.h"

#include <stdlib.h>
#include <string.h>

jn_value *jn_fn_buf_result(gg_strbuf *b, gg_error *err) {
    if (b->oom) { gg_strbuf_free(b); jn_oom(err); return NULL; }
    jn_value *v = jn_strbuf_to_string(b);
    if (!v) jn_oom(err);
    return v;
}

bool jn_fn_push(jn_value *arr, jn_value *v, gg_error *err) {
    if (!v || !jn_array_push(arr, v)) { jn_oom(err); return false; }
    return true;
}


bool jn_fn_matcher_init(fn_matcher *m, jn_value *pattern, jn_value *str, gg_error *err) {
    memset(m, 0, sizeof *m);
    m->str = str;
    m->s = jn_s(str);
    m->len = jn_slen(str);
    if (pattern->type != JN_REGEX) {
        m->fn = pattern;
        return true;
    }
    m->re = pattern->u.re;
    m->mctx = gg_regex_context(GG_REGEX_EXPRESSION);
    m->md = pcre2_match_data_create_from_pattern(m->re->code, NULL);
    if (!m->md || !m->mctx) { jn_fn_matcher_free(m); jn_oom(err); return false; }
    return true;
}

void jn_fn_matcher_free(fn_matcher *m) {
    if (m->md) pcre2_match_data_free(m->md);
    jn_decref(m->cur);
    m->cur = NULL;
    m->md = NULL;
}

static int custom_next(jn_call *call, fn_matcher *m, fn_hit *out, gg_error *err) {
    jn_value *r;
    if (!m->cur) {
        r = jn_apply(call, m->fn, &m->str, 1, err);
    } else {
        jn_value *next = jn_object_get(m->cur, "next", 4);
        if (!next || !jn_is_function(next)) return 0;
        r = jn_apply(call, next, NULL, 0, err);
    }
    if (gg_error_is_set(err)) { jn_decref(r); return -1; }
    jn_decref(m->cur);
    m->cur = r;
    if (!r) return 0;
    jn_value *st = r->type == JN_OBJECT ? jn_object_get(r, "start", 5) : NULL;
    jn_value *en = r->type == JN_OBJECT ? jn_object_get(r, "end", 3) : NULL;
    jn_value *gr = r->type == JN_OBJECT ? jn_object_get(r, "groups", 6) : NULL;
    jn_value *mt = r->type == JN_OBJECT ? jn_object_get(r, "match", 5) : NULL;
    if (!st || st->type != JN_NUMBER || !en || en->type != JN_NUMBER || !mt ||
        (gr && gr->type != JN_ARRAY)) {
        jn_error(call, err, "T1010", "The matcher function argument passed to function %s does not return the correct object structure",
                 call->name ? call->name : "");
        return -1;
    }
    out->start = jn_str_u16_to_byte(m->str, st->u.n < 0 ? 0 : (size_t)st->u.n);
    out->end = jn_str_u16_to_byte(m->str, en->u.n < 0 ? 0 : (size_t)en->u.n);
    if (out->end < out->start) out->end = out->start;
    out->ov = NULL;
    out->groups = gr;
    out->ngroups = gr ? (int)jn_alen(gr) : 0;
    return 1;
}

int jn_fn_matcher_next(jn_call *call, fn_matcher *m, fn_hit *out, gg_error *err) {
    if (!jn_check_limits(call, err)) return -1;
    if (m->fn) return custom_next(call, m, out, err);
    if (m->offset > m->len) return 0;
    int rc = pcre2_match(m->re->code, (PCRE2_SPTR)m->s, m->len, m->offset, 0, m->md, m->mctx);
    if (rc == PCRE2_ERROR_NOMATCH) return 0;
    if (rc < 0) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(rc, msg, sizeof msg);
        jn_error(call, err, "D1012", "Regular expression evaluation failed: %s", (const char *)msg);
        return -1;
    }
    const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(m->md);
    if (ov[1] <= ov[0]) {
        jn_error(call, err, "D1004", "Regular expression matches zero length string");
        return -1;
    }
    out->start = ov[0];
    out->end = ov[1];
    out->ov = ov;
    out->groups = NULL;
    uint32_t cap = 0;
    pcre2_pattern_info(m->re->code, PCRE2_INFO_CAPTURECOUNT, &cap);
    out->ngroups = (int)cap;
    m->offset = ov[1];
    return 1;
}

bool jn_fn_hit_group(const fn_hit *h, const char *s, int g, const char **p, size_t *n) {
    if (g < 1 || g > h->ngroups) return false;
    if (h->groups) {
        jn_value *v = jn_aget(h->groups, (size_t)g - 1);
        if (!v || v->type != JN_STRING) return false;
        *p = jn_s(v);
        *n = jn_slen(v);
        return true;
    }
    if (h->ov[2 * g] == PCRE2_UNSET) return false;
    *p = s + h->ov[2 * g];
    *n = h->ov[2 * g + 1] - h->ov[2 * g];
    return true;
}

static jn_value *match_like(const jn_value *str, const fn_hit *mt, bool replacer, gg_error *err);

jn_value *jn_fn_match_object(const jn_value *str, const fn_hit *mt, gg_error *err) {
    return match_like(str, mt, false, err);
}

/* next() of a replacer object: the following match of the same regex, or undefined.
 * Bound value: [subject, regex, byte offset where the search resumes]. */
static jn_value *replacer_next(jn_call *call, jn_value **args, int nargs, gg_error *err) {
    jn_value *b = jn_fn_bound(call->self);
    if (!b || b->type != JN_ARRAY || jn_alen(b) != 3) return NULL;
    jn_value *str = jn_aget(b, 0), *re = jn_aget(b, 1);
    fn_matcher m;
    if (!jn_fn_matcher_init(&m, re, str, err)) return NULL;
    m.offset = (size_t)jn_aget(b, 2)->u.n;
    fn_hit h;
    int rc = jn_fn_matcher_next(call, &m, &h, err);
    jn_value *r = rc == 1 ? jn_fn_replacer_object(str, re, &h, err) : NULL;
    jn_fn_matcher_free(&m);
    return r;
}

/* $replace hands its function the matcher's raw object: {match, start, end, groups} and,
 * for a regex, next() continuing the search. */
jn_value *jn_fn_replacer_object(jn_value *str, jn_value *pattern, const fn_hit *mt, gg_error *err) {
    jn_value *o = match_like(str, mt, true, err);
    if (!o || !pattern || pattern->type != JN_REGEX) return o;
    jn_value *bound = jn_array_new(3);
    bool ok = bound && jn_array_push(bound, jn_incref(str)) && jn_array_push(bound, jn_incref(pattern));
    jn_value *off = ok ? jn_number((double)mt->end) : NULL;
    ok = ok && off && jn_array_push(bound, off); /* push consumes off even on failure */
    if (!ok) {
        jn_decref(bound);
        jn_decref(o);
        jn_oom(err);
        return NULL;
    }
    jn_value *next = jn_native_new("next", NULL, replacer_next, bound, err);
    if (!next || !jn_object_set(o, "next", 4, next)) {
        jn_decref(o);
        if (!gg_error_is_set(err)) jn_oom(err);
        return NULL;
    }
    return o;
}

static jn_value *match_like(const jn_value *str, const fn_hit *mt, bool replacer, gg_error *err) {
    jn_value *o = jn_object_new(4);
    jn_value *groups = jn_array_new((size_t)mt->ngroups);
    if (!o || !groups) { jn_decref(o); jn_decref(groups); jn_oom(err); return NULL; }
    const char *s = jn_s(str);
    jn_value *mv = jn_string(s + mt->start, mt->end - mt->start);
    jn_value *iv = jn_number((double)jn_str_byte_to_u16(str, mt->start));
    jn_value *ev = replacer ? jn_number((double)jn_str_byte_to_u16(str, mt->end)) : NULL;
    bool ok = mv && iv && (ev || !replacer);
    if (ok) {
        ok = jn_object_set(o, "match", 5, mv) &&
             jn_object_set(o, replacer ? "start" : "index", 5, iv) &&
             (!replacer || jn_object_set(o, "end", 3, ev));
    } else { jn_decref(mv); jn_decref(iv); jn_decref(ev); }
    for (int g = 1; ok && g <= mt->ngroups; g++) {
        const char *gp;
        size_t gn;
        /* an unmatched group is undefined in JavaScript, which serialises as null */
        jn_value *gv = jn_fn_hit_group(mt, s, g, &gp, &gn) ? jn_string(gp, gn) : jn_null();
        ok = gv && jn_array_push(groups, gv);
    }
    if (!ok) jn_decref(groups);
    if (!ok || !jn_object_set(o, "groups", 6, groups)) {
        jn_decref(o);
        jn_oom(err);
        return NULL;
    }
    return o;
}
