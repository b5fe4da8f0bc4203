/* fn_regex.c — global regex iteration for $match, $replace, $split and $contains, with
 * JavaScript's "g" semantics, the reference's D1004 for zero-length matches, and PCRE2
 * match/depth limits so pathological patterns end in an error instead of a hang. */
#include "jsonata/fn_common.h"

#include <stdlib.h>

/* Backtracking budget per match attempt: generous for real patterns, small enough that
 * catastrophic backtracking stops within milliseconds. */
#define FN_REGEX_MATCH_LIMIT 2000000
#define FN_REGEX_DEPTH_LIMIT 20000

jn_value *fn_buf_result(gg_strbuf *b, gg_error *err) {
    if (b->oom) { gg_strbuf_free(b); jn_oom(err); return NULL; }
    jn_value *v = jn_strbuf_to_string(b);
    if (!v) jn_oom(err);
    return v;
}

bool fn_push(jn_value *arr, jn_value *v, gg_error *err) {
    if (!v || !jn_array_push(arr, v)) { jn_oom(err); return false; }
    return true;
}

bool fn_matcher_init(fn_matcher *m, const jn_regex *re, const char *s, size_t len, gg_error *err) {
    m->re = re;
    m->s = s;
    m->len = len;
    m->offset = 0;
    m->md = pcre2_match_data_create_from_pattern(re->code, NULL);
    m->mc = pcre2_match_context_create(NULL);
    if (!m->md || !m->mc) { fn_matcher_free(m); jn_oom(err); return false; }
    pcre2_set_match_limit(m->mc, FN_REGEX_MATCH_LIMIT);
    pcre2_set_depth_limit(m->mc, FN_REGEX_DEPTH_LIMIT);
    return true;
}

void fn_matcher_free(fn_matcher *m) {
    if (m->md) pcre2_match_data_free(m->md);
    if (m->mc) pcre2_match_context_free(m->mc);
    m->md = NULL;
    m->mc = NULL;
}

int fn_matcher_next(jn_call *call, fn_matcher *m, fn_hit *out, gg_error *err) {
    if (m->offset > m->len) return 0;
    if (!jn_check_limits(call, err)) return -1;
    int rc = pcre2_match(m->re->code, (PCRE2_SPTR)m->s, m->len, m->offset, 0, m->md, m->mc);
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
    out->ngroups = (int)pcre2_get_ovector_count(m->md) - 1;
    uint32_t cap = 0;
    pcre2_pattern_info(m->re->code, PCRE2_INFO_CAPTURECOUNT, &cap);
    out->ngroups = (int)cap;
    m->offset = ov[1];
    return 1;
}

jn_value *fn_match_object(const jn_value *str, const fn_hit *mt, gg_error *err) {
    jn_value *o = jn_object_new(3);
    jn_value *groups = jn_array_new((size_t)mt->ngroups);
    if (!o || !groups) { jn_decref(o); jn_decref(groups); jn_oom(err); return NULL; }
    const char *s = jn_s(str);
    jn_value *mv = jn_string(s + mt->start, mt->end - mt->start);
    jn_value *iv = jn_number((double)jn_str_byte_to_u16(str, mt->start));
    bool ok = mv && iv;
    if (ok) ok = jn_object_set(o, "match", 5, mv) && jn_object_set(o, "index", 5, iv);
    else { jn_decref(mv); jn_decref(iv); }
    for (int g = 1; ok && g <= mt->ngroups; g++) {
        PCRE2_SIZE a = mt->ov[2 * g], b = mt->ov[2 * g + 1];
        /* an unmatched group is undefined in JavaScript, which serialises as null */
        jn_value *gv = a == PCRE2_UNSET ? jn_null() : jn_string(s + a, b - a);
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
