/* fn_string.c — the string functions: $string, $length, $substring*, case, $trim, $pad,
 * $contains, $split, $join, $match, $replace, $eval, base64 and URL coding, and the
 * number/integer formatting entry points. Lengths and offsets count code points, as the
 * reference does (it iterates strings with Array.from). */
#include "jsonata/fn_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

FN(jn_fn_string) {
    jn_value *v = FN_ARG(0);
    if (!v) return NULL;
    jn_value *pretty = FN_ARG(1);
    if (v->type == JN_STRING) return jn_incref(v);
    if (v->type == JN_FUNCTION || v->type == JN_REGEX) return jn_string("", 0);
    return jn_to_string(call, v, pretty && pretty->type == JN_BOOL && pretty->u.b, err);
}

FN(jn_fn_length) {
    jn_value *s = FN_ARG(0);
    if (!s) return NULL;
    return jn_number((double)jn_utf8_count(jn_s(s), jn_slen(s)));
}

/* Array.prototype.slice index: truncate toward zero, negative counts from the end,
 * clamp into [0, len]. */
static double slice_index(double d, double len) {
    if (isnan(d)) d = 0;
    d = trunc(d);
    if (d < 0) return len + d < 0 ? 0 : len + d;
    return d > len ? len : d;
}

/* The reference slices the code points: start < 0 counts from the end (clamped to 0 when
 * it reaches before the start), end = start + length computed before truncation. */
FN(jn_fn_substring) {
    jn_value *s = FN_ARG(0), *start = FN_ARG(1), *length = FN_ARG(2);
    if (!s) return NULL;
    if (!start) return jn_incref(s);
    double len = (double)jn_utf8_count(jn_s(s), jn_slen(s));
    double st = start->u.n;
    if (len + st < 0) st = 0;
    double a_idx = slice_index(st, len), b_idx = len;
    if (length) {
        if (length->u.n <= 0) return jn_string("", 0);
        double end = st >= 0 ? st + length->u.n : len + st + length->u.n;
        b_idx = slice_index(end, len);
    }
    if (b_idx <= a_idx) return jn_string("", 0);
    if (a_idx == 0 && b_idx == len) return jn_incref(s); /* values are immutable: share */
    size_t a = jn_utf8_offset(jn_s(s), jn_slen(s), (size_t)a_idx);
    size_t b = jn_utf8_offset(jn_s(s), jn_slen(s), (size_t)b_idx);
    jn_value *r = jn_string(jn_s(s) + a, b - a);
    if (!r) jn_oom(err);
    return r;
}

/* JavaScript-style index for $pad widths. */
static double js_index(double d) {
    if (isnan(d)) return 0;
    return d < 0 ? ceil(d) : floor(d);
}

static const char *find_bytes(const char *h, size_t hn, const char *n, size_t nn) {
    if (nn == 0) return h;
    if (nn > hn) return NULL;
    for (size_t i = 0; i + nn <= hn; i++)
        if (h[i] == n[0] && !memcmp(h + i, n, nn)) return h + i;
    return NULL;
}

FN(jn_fn_substring_before) {
    jn_value *s = FN_ARG(0), *chars = FN_ARG(1);
    if (!s) return NULL;
    if (!chars) return jn_incref(s);
    const char *p = find_bytes(jn_s(s), jn_slen(s), jn_s(chars), jn_slen(chars));
    if (!p) return jn_incref(s);
    return jn_string(jn_s(s), (size_t)(p - jn_s(s)));
}

FN(jn_fn_substring_after) {
    jn_value *s = FN_ARG(0), *chars = FN_ARG(1);
    if (!s) return NULL;
    if (!chars) return jn_incref(s);
    const char *p = find_bytes(jn_s(s), jn_slen(s), jn_s(chars), jn_slen(chars));
    if (!p) return jn_incref(s);
    size_t off = (size_t)(p - jn_s(s)) + jn_slen(chars);
    return jn_string(jn_s(s) + off, jn_slen(s) - off);
}

static jn_value *case_map(jn_value *s, bool upper, gg_error *err) {
    if (!s) return NULL;
    /* an ASCII string without letters to change is returned as is */
    const unsigned char *p = (const unsigned char *)jn_s(s);
    size_t i = 0, n = jn_slen(s);
    for (; i < n && p[i] < 0x80; i++)
        if (upper ? (p[i] >= 'a' && p[i] <= 'z') : (p[i] >= 'A' && p[i] <= 'Z')) break;
    if (i == n) return jn_incref(s);
    gg_strbuf b = GG_STRBUF_INIT;
    jn_case_map(jn_s(s), jn_slen(s), upper, &b);
    return jn_fn_buf_result(&b, err);
}

FN(jn_fn_uppercase) { return case_map(FN_ARG(0), true, err); }
FN(jn_fn_lowercase) { return case_map(FN_ARG(0), false, err); }

/* Runs of space, tab, CR and LF collapse to one space; the ends are trimmed. */
FN(jn_fn_trim) {
    jn_value *s = FN_ARG(0);
    if (!s) return NULL;
    const char *p = jn_s(s);
    size_t n = jn_slen(s);
    /* already normalised (no edge whitespace, only single spaces inside): share it */
    bool clean = n == 0 || (p[0] != ' ' && p[n - 1] != ' ');
    for (size_t i = 0; clean && i < n; i++) {
        char c = p[i];
        if (c == '\t' || c == '\n' || c == '\r' || (c == ' ' && p[i + 1] == ' ')) clean = false;
    }
    if (clean) return jn_incref(s);
    gg_strbuf b = GG_STRBUF_INIT;
    gg_strbuf_reserve(&b, n);
    size_t i = 0;
    while (i < n) {
        size_t st = i;
        while (i < n && p[i] != ' ' && p[i] != '\t' && p[i] != '\n' && p[i] != '\r') i++;
        if (i > st) {
            if (b.len) gg_strbuf_putc(&b, ' ');
            gg_strbuf_append(&b, p + st, i - st);
        }
        while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r')) i++;
    }
    return jn_fn_buf_result(&b, err);
}

FN(jn_fn_pad) {
    jn_value *s = FN_ARG(0), *width = FN_ARG(1), *chr = FN_ARG(2);
    if (!s) return NULL;
    if (!width) return jn_incref(s);
    const char *pc = chr ? jn_s(chr) : " ";
    size_t pcl = chr ? jn_slen(chr) : 1;
    if (pcl == 0) { pc = " "; pcl = 1; }
    double w = js_index(width->u.n);
    double len = (double)jn_utf8_count(jn_s(s), jn_slen(s));
    double padn = fabs(w) - len;
    if (padn <= 0) return jn_incref(s);
    if (padn > (double)jn_max_sequence(call)) {
        jn_error(call, err, "D1001", "Padding width too large");
        return NULL;
    }
    gg_strbuf pad = GG_STRBUF_INIT;
    size_t need = (size_t)padn, pcount = jn_utf8_count(pc, pcl); /* >= 1: pcl > 0 */
    while (need > 0 && !pad.oom) {
        size_t take = need < pcount ? need : pcount;
        gg_strbuf_append(&pad, pc, jn_utf8_offset(pc, pcl, take));
        need -= take;
    }
    gg_strbuf b = GG_STRBUF_INIT;
    if (w > 0) { gg_strbuf_append(&b, jn_s(s), jn_slen(s)); gg_strbuf_append(&b, pad.data ? pad.data : "", pad.len); }
    else { gg_strbuf_append(&b, pad.data ? pad.data : "", pad.len); gg_strbuf_append(&b, jn_s(s), jn_slen(s)); }
    if (pad.oom) b.oom = true;
    gg_strbuf_free(&pad);
    return jn_fn_buf_result(&b, err);
}

FN(jn_fn_contains) {
    jn_value *s = FN_ARG(0), *pat = FN_ARG(1);
    if (!s || !pat) return NULL;
    if (pat->type == JN_STRING)
        return jn_bool(find_bytes(jn_s(s), jn_slen(s), jn_s(pat), jn_slen(pat)) != NULL);
    fn_matcher m;
    if (!jn_fn_matcher_init(&m, pat, s, err)) return NULL;
    fn_hit mt;
    int rc = jn_fn_matcher_next(call, &m, &mt, err);
    jn_fn_matcher_free(&m);
    if (rc < 0) return NULL;
    return jn_bool(rc == 1);
}

static bool limit_arg(jn_call *call, jn_value *lim, const char *code, const char *what,
                      double *out, gg_error *err) {
    *out = -1;
    if (!lim) return true;
    if (lim->u.n < 0) {
        jn_error(call, err, code, "%s", what);
        return false;
    }
    *out = lim->u.n; /* compared as is: a limit of 1.5 allows two items */
    return true;
}

FN(jn_fn_split) {
    jn_value *s = FN_ARG(0), *sep = FN_ARG(1);
    if (!s || !sep) return NULL;
    double limit;
    if (!limit_arg(call, FN_ARG(2), "D3020", "Third argument of split function must evaluate to a positive number", &limit, err))
        return NULL;
    /* a string separator goes through JavaScript's split (integer limit); a regex through
     * the reference's own loop, which compares the count with the raw limit */
    if (sep->type == JN_STRING && limit >= 0) limit = floor(limit);
    jn_value *out = jn_array_new(4);
    if (!out) { jn_oom(err); return NULL; }
    const char *p = jn_s(s);
    size_t n = jn_slen(s);
    if (sep->type == JN_STRING && jn_slen(sep) == 0) { /* one element per character */
        size_t i = 0;
        while (i < n && (limit < 0 || (double)jn_alen(out) < limit)) {
            size_t st = i;
            jn_utf8_next(p, n, &i);
            if (!jn_fn_push(out, jn_string(p + st, i - st), err)) { jn_decref(out); return NULL; }
        }
        return out;
    }
    size_t pos = 0;
    if (sep->type == JN_STRING) {
        const char *q;
        while ((limit < 0 || (double)jn_alen(out) < limit) &&
               (q = find_bytes(p + pos, n - pos, jn_s(sep), jn_slen(sep)))) {
            size_t at = (size_t)(q - p);
            if (!jn_fn_push(out, jn_string(p + pos, at - pos), err)) { jn_decref(out); return NULL; }
            pos = at + jn_slen(sep);
        }
    } else {
        fn_matcher m;
        if (!jn_fn_matcher_init(&m, sep, s, err)) { jn_decref(out); return NULL; }
        fn_hit mt;
        int rc;
        while ((limit < 0 || (double)jn_alen(out) < limit) && (rc = jn_fn_matcher_next(call, &m, &mt, err)) == 1) {
            if (!jn_fn_push(out, jn_string(p + pos, mt.start - pos), err)) { rc = -1; break; }
            pos = mt.end;
        }
        jn_fn_matcher_free(&m);
        if (gg_error_is_set(err)) { jn_decref(out); return NULL; }
    }
    if ((limit < 0 || (double)jn_alen(out) < limit) &&
        !jn_fn_push(out, jn_string(p + pos, n - pos), err)) {
        jn_decref(out);
        return NULL;
    }
    return out;
}

FN(jn_fn_join) {
    jn_value *arr = FN_ARG(0), *sep = FN_ARG(1);
    if (!arr) return NULL;
    gg_strbuf b = GG_STRBUF_INIT;
    for (size_t i = 0; i < jn_alen(arr); i++) {
        if (i && sep) gg_strbuf_append(&b, jn_s(sep), jn_slen(sep));
        jn_value *it = jn_aget(arr, i);
        if (jn_type_of(it) != JN_STRING) { /* guarded by a<s>; kept for direct calls */
            gg_strbuf_free(&b);
            jn_error(call, err, "T0412", "Argument 1 of function \"join\" must be an array of \"strings\"");
            return NULL;
        }
        gg_strbuf_append(&b, jn_s(it), jn_slen(it));
    }
    return jn_fn_buf_result(&b, err);
}

FN(jn_fn_match) {
    jn_value *s = FN_ARG(0), *re = FN_ARG(1);
    if (!s) return NULL;
    if (!re) {
        jn_error(call, err, "T0410", "Argument 2 of function \"match\" does not match function signature");
        return NULL;
    }
    double limit;
    if (!limit_arg(call, FN_ARG(2), "D3040", "Third argument of match function must evaluate to a positive number", &limit, err))
        return NULL;
    jn_value *out = jn_seq_new(4);
    if (!out) { jn_oom(err); return NULL; }
    fn_matcher m;
    if (!jn_fn_matcher_init(&m, re, s, err)) { jn_decref(out); return NULL; }
    fn_hit mt;
    while ((limit < 0 || (double)jn_alen(out) < limit) && jn_fn_matcher_next(call, &m, &mt, err) == 1)
        if (!jn_fn_push(out, jn_fn_match_object(s, &mt, err), err)) break;
    jn_fn_matcher_free(&m);
    if (gg_error_is_set(err)) { jn_decref(out); return NULL; }
    return out;
}

/* Expand $0, $n and $$ in a replacement string the way the reference does: the longest
 * group number not exceeding the group count wins; an unknown group gives "". */
static void expand_replacement(const char *r, size_t rn, const char *s, const fn_hit *mt,
                               gg_strbuf *b) {
    for (size_t i = 0; i < rn; i++) {
        if (r[i] != '$' || i + 1 >= rn) { gg_strbuf_putc(b, r[i]); continue; }
        char c = r[i + 1];
        if (c == '$') { gg_strbuf_putc(b, '$'); i++; continue; }
        if (c == '0') { gg_strbuf_append(b, s + mt->start, mt->end - mt->start); i++; continue; }
        if (c < '1' || c > '9') { gg_strbuf_putc(b, '$'); continue; }
        int g = c - '0';
        size_t j = i + 2;
        while (j < rn && r[j] >= '0' && r[j] <= '9' && g * 10 + (r[j] - '0') <= mt->ngroups) {
            g = g * 10 + (r[j] - '0');
            j++;
        }
        const char *gp;
        size_t gn;
        if (jn_fn_hit_group(mt, s, g, &gp, &gn)) gg_strbuf_append(b, gp, gn);
        i = j - 1;
    }
}

static bool replace_with_fn(jn_call *call, jn_value *fn, jn_value *str, jn_value *pat,
                            const fn_hit *mt, gg_strbuf *b, gg_error *err) {
    jn_value *mo = jn_fn_replacer_object(str, pat, mt, err);
    if (!mo) return false;
    jn_value *r = jn_apply(call, fn, &mo, 1, err);
    jn_decref(mo);
    if (gg_error_is_set(err)) { jn_decref(r); return false; }
    if (!r || r->type != JN_STRING) {
        jn_decref(r);
        jn_error(call, err, "D3012", "Attempted to replace a matched string with a non-string value");
        return false;
    }
    gg_strbuf_append(b, jn_s(r), jn_slen(r));
    jn_decref(r);
    return true;
}

static jn_value *replace_impl(jn_call *call, jn_value *s, jn_value *pat, jn_value *rep,
                              jn_value *lim, gg_error *err);

/* Replacement can amplify its input (every match replaced by a long string): cap the
 * result and keep honouring the evaluation's time limit. */
#define FN_MAX_STRING_BYTES (256u << 20)
static bool replace_bounds(jn_call *call, gg_strbuf *b, double count, gg_error *err) {
    if (b->len > FN_MAX_STRING_BYTES) {
        jn_error(call, err, "D1001", "The result of $replace exceeds %u bytes", FN_MAX_STRING_BYTES);
        return false;
    }
    if (((long long)count & 1023) == 0 && !jn_check_limits(call, err)) return false;
    return true;
}

FN(jn_fn_replace) {
    jn_value *s = FN_ARG(0), *pat = FN_ARG(1), *rep = FN_ARG(2);
    if (!s || !pat) return NULL;
    jn_value *undef_rep = NULL;
    if (!rep) { /* JavaScript stringifies the missing replacement */
        undef_rep = jn_string("undefined", 9);
        if (!undef_rep) { jn_oom(err); return NULL; }
        rep = undef_rep;
    }
    jn_value *res = replace_impl(call, s, pat, rep, nargs > 3 ? args[3] : NULL, err);
    jn_decref(undef_rep);
    return res;
}

static jn_value *replace_impl(jn_call *call, jn_value *s, jn_value *pat, jn_value *rep,
                              jn_value *lim, gg_error *err) {
    if (pat->type == JN_STRING && jn_slen(pat) == 0) {
        jn_error(call, err, "D3010", "Second argument of replace function cannot be an empty string");
        return NULL;
    }
    double limit;
    if (!limit_arg(call, lim, "D3011", "Fourth argument of replace function must evaluate to a positive number", &limit, err))
        return NULL;
    const char *p = jn_s(s);
    size_t n = jn_slen(s), pos = 0;
    gg_strbuf b = GG_STRBUF_INIT;
    double count = 0;
    if (pat->type == JN_STRING) {
        const char *q;
        while ((limit < 0 || count < limit) && (q = find_bytes(p + pos, n - pos, jn_s(pat), jn_slen(pat)))) {
            size_t at = (size_t)(q - p);
            gg_strbuf_append(&b, p + pos, at - pos);
            if (rep->type == JN_STRING) gg_strbuf_append(&b, jn_s(rep), jn_slen(rep));
            else {
                PCRE2_SIZE ov[2] = {at, at + jn_slen(pat)};
                fn_hit mt = {at, at + jn_slen(pat), 0, ov, NULL};
                if (!replace_with_fn(call, rep, s, pat, &mt, &b, err)) { gg_strbuf_free(&b); return NULL; }
            }
            pos = at + jn_slen(pat);
            count++;
            if (!replace_bounds(call, &b, count, err)) { gg_strbuf_free(&b); return NULL; }
        }
    } else {
        fn_matcher m;
        if (!jn_fn_matcher_init(&m, pat, s, err)) { gg_strbuf_free(&b); return NULL; }
        fn_hit mt;
        while ((limit < 0 || count < limit) && jn_fn_matcher_next(call, &m, &mt, err) == 1) {
            gg_strbuf_append(&b, p + pos, mt.start - pos);
            if (rep->type == JN_STRING) expand_replacement(jn_s(rep), jn_slen(rep), p, &mt, &b);
            else if (!replace_with_fn(call, rep, s, pat, &mt, &b, err)) break;
            pos = mt.end;
            count++;
            if (!replace_bounds(call, &b, count, err)) break;
        }
        jn_fn_matcher_free(&m);
        if (gg_error_is_set(err)) { gg_strbuf_free(&b); return NULL; }
    }
    if (count == 0) { gg_strbuf_free(&b); return jn_incref(s); } /* nothing replaced */
    gg_strbuf_append(&b, p + pos, n - pos);
    return jn_fn_buf_result(&b, err);
}

FN(jn_fn_eval) {
    jn_value *expr = FN_ARG(0);
    if (!expr) return NULL;
    jn_value *ctx = nargs > 1 ? args[1] : call->input;
    return jn_eval_source(call, jn_s(expr), jn_slen(expr), ctx, NULL, err);
}

typedef bool (*coder_fn)(const char *, size_t, gg_strbuf *);

/* Run a text coder over s. url: a failure other than out-of-memory is the reference's
 * D3140 "Malformed URL" (base64 coders only fail on out-of-memory). */
static jn_value *code_string(jn_call *call, jn_value *s, bool url, coder_fn fn,
                             const char *name, gg_error *err) {
    if (!s) return NULL;
    gg_strbuf b = GG_STRBUF_INIT;
    if (!fn(jn_s(s), jn_slen(s), &b)) {
        bool oom = b.oom;
        gg_strbuf_free(&b);
        if (oom || !url) { jn_oom(err); return NULL; }
        jn_error(call, err, "D3140", "Malformed URL passed to $%s(): \"%s\"", name, jn_s(s));
        return NULL;
    }
    return jn_fn_buf_result(&b, err);
}

static bool enc_comp(const char *s, size_t n, gg_strbuf *b) { return jn_url_encode(s, n, true, b); }
static bool enc_uri(const char *s, size_t n, gg_strbuf *b) { return jn_url_encode(s, n, false, b); }
static bool dec_comp(const char *s, size_t n, gg_strbuf *b) { return jn_url_decode(s, n, true, b); }
static bool dec_uri(const char *s, size_t n, gg_strbuf *b) { return jn_url_decode(s, n, false, b); }

FN(jn_fn_base64encode) { return code_string(call, FN_ARG(0), false, jn_base64_encode, "base64encode", err); }
FN(jn_fn_base64decode) { return code_string(call, FN_ARG(0), false, jn_base64_decode, "base64decode", err); }
FN(jn_fn_encode_url_component) { return code_string(call, FN_ARG(0), true, enc_comp, "encodeUrlComponent", err); }
FN(jn_fn_encode_url) { return code_string(call, FN_ARG(0), true, enc_uri, "encodeUrl", err); }
FN(jn_fn_decode_url_component) { return code_string(call, FN_ARG(0), true, dec_comp, "decodeUrlComponent", err); }
FN(jn_fn_decode_url) { return code_string(call, FN_ARG(0), true, dec_uri, "decodeUrl", err); }

/* Report a formatting error raised by the pure helpers at the call's position. */
static jn_value *fmt_error(jn_call *call, gg_error *tmp, gg_error *err) {
    jn_error(call, err, tmp->code, "%s", tmp->message ? tmp->message : tmp->code);
    gg_error_clear(tmp);
    return NULL;
}

static const char *opt_str(jn_value *opts, const char *key) {
    if (!opts || opts->type != JN_OBJECT) return NULL;
    jn_value *v = jn_object_get(opts, key, strlen(key));
    return v && v->type == JN_STRING ? jn_s(v) : NULL;
}

FN(jn_fn_format_number) {
    jn_value *v = FN_ARG(0), *pic = FN_ARG(1), *opts = FN_ARG(2);
    if (!v || !pic) return NULL;
    if (pic->u.str.numfmt && !opts) { /* a literal picture analysed at compile time */
        gg_strbuf b = GG_STRBUF_INIT;
        jn_numfmt_format(pic->u.str.numfmt, v->u.n, jn_s(pic), &b); /* fails only when b ran out of memory */
        return jn_fn_buf_result(&b, err);
    }
    jn_decimal_format f = {
        opt_str(opts, "decimal-separator"), opt_str(opts, "grouping-separator"),
        opt_str(opts, "exponent-separator"), opt_str(opts, "infinity"),
        opt_str(opts, "minus-sign"), opt_str(opts, "NaN"), opt_str(opts, "percent"),
        opt_str(opts, "per-mille"), opt_str(opts, "zero-digit"), opt_str(opts, "digit"),
        opt_str(opts, "pattern-separator")};
    gg_strbuf b = GG_STRBUF_INIT;
    gg_error tmp = GG_ERROR_INIT;
    if (!jn_format_number(v->u.n, jn_s(pic), &f, &b, &tmp)) {
        gg_strbuf_free(&b);
        return fmt_error(call, &tmp, err);
    }
    return jn_fn_buf_result(&b, err);
}

FN(jn_fn_format_base) {
    jn_value *v = FN_ARG(0), *radix = FN_ARG(1);
    if (!v) return NULL;
    double r = radix ? jn_round_half_even(radix->u.n, 0) : 10;
    if (r < 2 || r > 36) {
        jn_error(call, err, "D3100", "The radix of the formatBase function must be between 2 and 36.  It was given %g", r);
        return NULL;
    }
    gg_strbuf b = GG_STRBUF_INIT;
    jn_format_radix(jn_round_half_even(v->u.n, 0), (int)r, &b);
    return jn_fn_buf_result(&b, err);
}

FN(jn_fn_format_integer) {
    jn_value *v = FN_ARG(0), *pic = FN_ARG(1);
    if (!v || !pic) return NULL;
    gg_strbuf b = GG_STRBUF_INIT;
    gg_error tmp = GG_ERROR_INIT;
    if (!jn_format_integer(v->u.n, jn_s(pic), &b, &tmp)) {
        gg_strbuf_free(&b);
        return fmt_error(call, &tmp, err);
    }
    return jn_fn_buf_result(&b, err);
}

FN(jn_fn_parse_integer) {
    jn_value *s = FN_ARG(0), *pic = FN_ARG(1);
    if (!s || !pic) return NULL;
    gg_error tmp = GG_ERROR_INIT;
    double v = 0;
    bool found = false;
    if (!jn_parse_integer(jn_s(s), jn_s(pic), &v, &found, &tmp)) return fmt_error(call, &tmp, err);
    return found ? jn_number(v) : jn_null(); /* the reference yields null for no number */
}
