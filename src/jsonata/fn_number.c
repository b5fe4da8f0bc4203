/* fn_number.c — numeric and boolean functions: $number, $abs, $floor, $ceil, $round
 * (half to even, with precision), $power, $sqrt, $random, $sum, $max, $min, $average,
 * $boolean, $not, $exists. */
#include "jsonata/fn_common.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* JSON number grammar (what the reference accepts for strings), plus the 0x/0o/0b
 * integer prefixes that JavaScript's Number() understands. */
static bool parse_number_string(const char *s, size_t n, double *out) {
    if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X' || s[1] == 'o' || s[1] == 'O' ||
                                 s[1] == 'b' || s[1] == 'B')) {
        int base = (s[1] == 'x' || s[1] == 'X') ? 16 : (s[1] == 'o' || s[1] == 'O') ? 8 : 2;
        double v = 0;
        for (size_t i = 2; i < n; i++) {
            int d = isdigit((unsigned char)s[i]) ? s[i] - '0'
                    : isalpha((unsigned char)s[i]) ? tolower((unsigned char)s[i]) - 'a' + 10 : 99;
            if (d >= base) return false;
            v = v * base + d;
        }
        *out = v;
        return true;
    }
    size_t i = 0;
    if (i < n && s[i] == '-') i++;
    if (i >= n) return false;
    if (!isdigit((unsigned char)s[i])) return false;
    while (i < n && isdigit((unsigned char)s[i])) i++;
    if (i < n && s[i] == '.') {
        i++;
        if (i >= n || !isdigit((unsigned char)s[i])) return false;
        while (i < n && isdigit((unsigned char)s[i])) i++;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) i++;
        if (i >= n || !isdigit((unsigned char)s[i])) return false;
        while (i < n && isdigit((unsigned char)s[i])) i++;
    }
    if (i != n) return false;
    double v = strtod(s, NULL);
    if (!isfinite(v)) return false;
    *out = v;
    return true;
}

FN(jn_fn_number) {
    jn_value *v = FN_ARG(0);
    if (!v) return NULL;
    double d;
    switch (v->type) {
    case JN_NUMBER: return jn_incref(v);
    case JN_BOOL: return jn_number(v->u.b ? 1 : 0);
    case JN_STRING:
        if (parse_number_string(jn_s(v), jn_slen(v), &d)) return jn_number(d);
        jn_error(call, err, "D3030", "Unable to cast value to a number: \"%s\"", jn_s(v));
        return NULL;
    default:
        jn_error(call, err, "D3030", "Unable to cast value to a number");
        return NULL;
    }
}

#define UNARY_MATH(name, expr)                      \
    FN(name) {                                      \
        jn_value *v = FN_ARG(0);                    \
        if (!v) return NULL;                        \
        double x = v->u.n;                          \
        return jn_number(expr);                     \
    }
UNARY_MATH(jn_fn_abs, fabs(x))
UNARY_MATH(jn_fn_floor, floor(x))
UNARY_MATH(jn_fn_ceil, ceil(x))

FN(jn_fn_round) {
    jn_value *v = FN_ARG(0), *p = FN_ARG(1);
    if (!v) return NULL;
    double places = p ? p->u.n : 0;
    /* The reference shifts the decimal exponent by the precision: a fractional precision,
     * or a shift beyond the double range, yields NaN (null in JSON). */
    if (places != floor(places) || fabs(places) > 1000) return jn_number(NAN);
    if (v->u.n != 0 && isfinite(v->u.n) && log10(fabs(v->u.n)) + places >= 308.3) {
        char buf[64];
        snprintf(buf, sizeof buf, "%.17ge%d", v->u.n, (int)places);
        if (isinf(strtod(buf, NULL))) return jn_number(NAN);
    }
    return jn_number(jn_round_half_even(v->u.n, (int)places));
}

FN(jn_fn_power) {
    jn_value *b = FN_ARG(0), *e = FN_ARG(1);
    if (!b) return NULL;
    double r = e ? pow(b->u.n, e->u.n) : NAN;
    if (!isfinite(r)) {
        char bs[32], es[32] = "undefined";
        jsonata_format_double(b->u.n, bs, sizeof bs);
        if (e) jsonata_format_double(e->u.n, es, sizeof es);
        jn_error(call, err, "D3061", "The power function has resulted in a value that cannot be represented as a JSON number: base=%s, exponent=%s", bs, es);
        return NULL;
    }
    return jn_number(r);
}

FN(jn_fn_sqrt) {
    jn_value *v = FN_ARG(0);
    if (!v) return NULL;
    if (v->u.n < 0) {
        char bs[32];
        jsonata_format_double(v->u.n, bs, sizeof bs);
        jn_error(call, err, "D3060", "The sqrt function cannot be applied to a negative number: %s", bs);
        return NULL;
    }
    return jn_number(sqrt(v->u.n));
}

/* Uniform in [0, 1) with 53 random bits from the kernel-seeded arc4random. */
FN(jn_fn_random) {
    uint64_t r = ((uint64_t)arc4random() << 21) ^ (uint64_t)arc4random();
    return jn_number((double)(r & ((1ULL << 53) - 1)) / 9007199254740992.0);
}

/* The evaluator has checked a<n>; this re-check only guards natives called directly. */
static bool all_numbers(jn_call *call, const jn_value *a, gg_error *err) {
    for (size_t i = 0; i < jn_alen(a); i++)
        if (jn_type_of(jn_aget(a, i)) != JN_NUMBER) {
            jn_error(call, err, "T0412", "Argument 1 of function \"%s\" must be an array of \"numbers\"",
                     call->name ? call->name : "");
            return false;
        }
    return true;
}

FN(jn_fn_sum) {
    jn_value *a = FN_ARG(0);
    if (!a || !all_numbers(call, a, err)) return NULL;
    double s = 0;
    for (size_t i = 0; i < jn_alen(a); i++) s += jn_aget(a, i)->u.n;
    return jn_number(s);
}

static jn_value *extreme(jn_value *a, bool max) {
    if (!a || jn_alen(a) == 0) return NULL;
    double m = jn_aget(a, 0)->u.n;
    for (size_t i = 1; i < jn_alen(a); i++) {
        double x = jn_aget(a, i)->u.n;
        if (max ? x > m : x < m) m = x;
    }
    return jn_number(m);
}

FN(jn_fn_max) { return FN_ARG(0) && all_numbers(call, FN_ARG(0), err) ? extreme(FN_ARG(0), true) : NULL; }
FN(jn_fn_min) { return FN_ARG(0) && all_numbers(call, FN_ARG(0), err) ? extreme(FN_ARG(0), false) : NULL; }

FN(jn_fn_average) {
    jn_value *a = FN_ARG(0);
    if (!a || jn_alen(a) == 0 || !all_numbers(call, a, err)) return NULL;
    double s = 0;
    for (size_t i = 0; i < jn_alen(a); i++) s += jn_aget(a, i)->u.n;
    return jn_number(s / (double)jn_alen(a));
}

FN(jn_fn_boolean) {
    jn_value *v = FN_ARG(0);
    if (!v) return NULL;
    if (jn_truth_meets_infinity(v)) { jn_error(call, err, "D1001", "Number out of range"); return NULL; }
    return jn_bool(jn_truthy(v));
}

FN(jn_fn_not) {
    jn_value *v = FN_ARG(0);
    if (!v) return NULL;
    if (jn_truth_meets_infinity(v)) { jn_error(call, err, "D1001", "Number out of range"); return NULL; }
    return jn_bool(!jn_truthy(v));
}

FN(jn_fn_exists) { return jn_bool(FN_ARG(0) != NULL); }
