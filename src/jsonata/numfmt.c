/* numfmt.c — JSON printed exactly as JavaScript prints it: jsonata_dump is JSON.stringify
 * for jansson values (numbers by gg_js_number_format, util.h). Used well outside JSONata
 * (the CLI, graph results), so this file depends on nothing but jansson and util. */
#include "jsonata/jsonata.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* JSON.stringify's string quoting: only ", \ and control characters are escaped. */
static void dump_string(gg_strbuf *b, const char *s, size_t len) {
    gg_strbuf_putc(b, '"');
    gg_strbuf_json_escape(b, s, len);
    gg_strbuf_putc(b, '"');
}

static void dump_newline(gg_strbuf *b, int indent, int level) {
    if (indent <= 0) return;
    gg_strbuf_putc(b, '\n');
    for (int i = 0; i < indent * level; i++) gg_strbuf_putc(b, ' ');
}

/* Nesting is bounded by the caller's data; jansson itself refuses cycles, and we stop at
 * a generous depth so hostile documents cannot exhaust the stack. */
#define DUMP_MAX_DEPTH 10000

static void dump_value(gg_strbuf *b, json_t *v, int indent, int level) {
    char num[40];
    if (level > DUMP_MAX_DEPTH) { gg_strbuf_puts(b, "null"); return; }
    switch (json_typeof(v)) {
    case JSON_NULL: gg_strbuf_puts(b, "null"); break;
    case JSON_TRUE: gg_strbuf_puts(b, "true"); break;
    case JSON_FALSE: gg_strbuf_puts(b, "false"); break;
    case JSON_INTEGER: {
        json_int_t i = json_integer_value(v);
        /* exact in a double: JavaScript prints the plain digits (the common case, and
         * much cheaper than the shortest-round-trip search) */
        if (i > -9007199254740992LL && i < 9007199254740992LL) gg_strbuf_put_int(b, i);
        else {
            jsonata_format_double((double)i, num, sizeof num);
            gg_strbuf_puts(b, num);
        }
        break;
    }
    case JSON_REAL: {
        double d = json_real_value(v);
        if (!isfinite(d)) { gg_strbuf_puts(b, "null"); break; }
        if (fabs(d) < 1e15 && d == (double)(long long)d && !(d == 0 && signbit(d)))
            gg_strbuf_put_int(b, (long long)d);
        else {
            jsonata_format_double(d, num, sizeof num);
            gg_strbuf_puts(b, num);
        }
        break;
    }
    case JSON_STRING: dump_string(b, json_string_value(v), json_string_length(v)); break;
    case JSON_ARRAY: {
        size_t n = json_array_size(v);
        if (n == 0) { gg_strbuf_puts(b, "[]"); break; }
        gg_strbuf_putc(b, '[');
        for (size_t i = 0; i < n; i++) {
            if (i) gg_strbuf_putc(b, ',');
            dump_newline(b, indent, level + 1);
            dump_value(b, json_array_get(v, i), indent, level + 1);
        }
        dump_newline(b, indent, level);
        gg_strbuf_putc(b, ']');
        break;
    }
    case JSON_OBJECT: {
        /* one iterator walked directly, in json_object_foreach's order: the macro looks each
         * key up again (key_to_iter twice a key); every recorded node's input and output
         * comes through here. The key is measured by strlen as before (a key holding a NUL
         * is printed up to it, unlike put_json: kept, not this change's business) */
        void *it = json_object_iter(v);
        if (!it) { gg_strbuf_puts(b, "{}"); break; }
        gg_strbuf_putc(b, '{');
        for (int first = 1; it; it = json_object_iter_next(v, it), first = 0) {
            if (!first) gg_strbuf_putc(b, ',');
            dump_newline(b, indent, level + 1);
            const char *key = json_object_iter_key(it);
            dump_string(b, key, strlen(key));
            gg_strbuf_putc(b, ':');
            if (indent > 0) gg_strbuf_putc(b, ' ');
            dump_value(b, json_object_iter_value(it), indent, level + 1);
        }
        dump_newline(b, indent, level);
        gg_strbuf_putc(b, '}');
        break;
    }
    }
}

/* JSON.stringify(v, null, indent) for a jansson value (v == NULL prints nothing and
 * returns ""). indent is clamped to 10 as JavaScript does. Returns a heap string the
 * caller frees, or NULL when memory runs out. */
char *jsonata_dump(json_t *v, int indent) {
    gg_strbuf b = GG_STRBUF_INIT;
    if (indent > 10) indent = 10;
    if (v) dump_value(&b, v, indent, 0);
    return gg_strbuf_take(&b);
}

/* Append JSON.stringify(v) (compact) to b: the serializer of jsonata_dump without its own
 * buffer, for callers assembling a larger document. v NULL appends nothing. False once b
 * ran out of memory. */
bool jsonata_dump_to(gg_strbuf *b, json_t *v) {
    if (v) dump_value(b, v, 0, 0);
    return !b->oom;
}

/* Append the UTF-8 string s (len bytes) as a JSON string literal, escaped as
 * JSON.stringify escapes it. False once b ran out of memory. */
bool jsonata_dump_string_to(gg_strbuf *b, const char *s, size_t len) {
    dump_string(b, s, len);
    return !b->oom;
}

/* ---- decimal digit strings (shared by $round, $formatNumber and friends) ---- */

#include "jsonata/fnlib.h"

void jn_decimal_from_double(double v, jn_decimal *dec) {
    memset(dec, 0, sizeof *dec);
    if (v < 0 || (v == 0 && signbit(v))) { dec->neg = v < 0; v = -v; }
    if (v == 0 || !isfinite(v)) { dec->d[0] = '0'; dec->n = 1; dec->point = 1; return; }
    char digits[24];
    int k;
    int e = gg_js_shortest_digits(v, digits, &k);
    memcpy(dec->d, digits, (size_t)k);
    dec->n = k;
    dec->point = e + 1;
}

/* Round half to even at `places` digits after the point. Digits are exact decimal
 * digits of the shortest representation, so ties are the decimal ties JavaScript's
 * Number(x + "e" + places) trick sees. */
void jn_decimal_round(jn_decimal *dec, int places) {
    if (places > 1000) places = 1000;
    if (places < -1000) places = -1000;
    int keep = dec->point + places; /* digits kept */
    if (keep >= dec->n) return;
    if (keep < 0) { dec->n = 1; dec->d[0] = '0'; dec->point = 1; return; }
    int first = dec->d[keep] - '0';
    bool rest = false;
    for (int i = keep + 1; i < dec->n; i++) if (dec->d[i] != '0') rest = true;
    bool up = first > 5 || (first == 5 && (rest || (keep > 0 && (dec->d[keep - 1] - '0') % 2 == 1)));
    dec->n = keep;
    if (up) {
        int i = keep - 1;
        while (i >= 0 && dec->d[i] == '9') { dec->d[i] = '0'; i--; }
        if (i >= 0) dec->d[i]++;
        else { /* carry out of the top digit */
            memmove(dec->d + 1, dec->d, (size_t)dec->n);
            dec->d[0] = '1';
            dec->n++;
            dec->point++;
        }
    }
    while (dec->n > 0 && dec->d[dec->n - 1] == '0') dec->n--;
    if (dec->n == 0) { dec->d[0] = '0'; dec->n = 1; dec->point = 1; }
}

double jn_decimal_to_double(const jn_decimal *dec) {
    /* digits as an integer m < 2^53 times 10^k with |k| <= 22: one correctly rounded
     * multiplication or division of exact operands, which is what strtod returns */
    if (dec->n <= 15) {
        double m = 0;
        for (int i = 0; i < dec->n; i++) m = m * 10 + (dec->d[i] - '0');
        int k = dec->point - dec->n;
        static const double P10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                       1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
        if (k >= -22 && k <= 22) {
            double r = k >= 0 ? m * P10[k] : m / P10[-k];
            return dec->neg ? -r : r;
        }
    }
    char buf[64];
    snprintf(buf, sizeof buf, "%s0.%.*se%d", dec->neg ? "-" : "", dec->n, dec->d, dec->point);
    return strtod(buf, NULL);
}

/* v * 10^places rounded half to even on v's shortest digits, without computing them,
 * when the product's fraction is clearly away from one half: the shortest digits differ
 * from v by under half an ulp, so only a near-tie can round differently (those, and
 * products past 2^52 or places beyond the exact powers, take the digit path). The
 * result m / 10^places is one correctly rounded division of exact operands, the value
 * jn_decimal_to_double gives for the same digits. False when the digit path must decide. */
static bool round_fast(double v, int places, double *out) {
    static const double P10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                   1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    if (places < 0 || places > 22) return false;
    double a = fabs(v), s = a * P10[places];
    if (!(s < 4503599627370496.0)) return false; /* 2^52: the fraction still has bits */
    double fl = floor(s), frac = s - fl;
    if (fabs(frac - 0.5) <= s * 4e-15 + 1e-300) return false; /* near a tie */
    double r = (frac > 0.5 ? fl + 1 : fl) / P10[places];
    *out = r == 0 ? 0.0 : (v < 0 ? -r : r);
    return true;
}

double jn_round_half_even(double v, int places) {
    if (!isfinite(v) || v == 0) return v;
    if (places >= 0 && v == floor(v)) return v; /* integers need no rounding */
    double fast;
    if (round_fast(v, places, &fast)) return fast;
    jn_decimal dec;
    jn_decimal_from_double(v, &dec);
    jn_decimal_round(&dec, places);
    double r = jn_decimal_to_double(&dec);
    return r == 0 ? 0.0 : r; /* JavaScript's Math.round gives -0 for -0.4, which prints 0 */
}

/* V8's DoubleToRadixCString for the integer part: while the quotient is still beyond
 * 2^53 the low digits carry no information and print as '0'. */
bool jn_format_radix(double v, int radix, gg_strbuf *out) {
    static const char DIG[] = "0123456789abcdefghijklmnopqrstuvwxyz";
    if (isnan(v)) return gg_strbuf_puts(out, "NaN");
    if (isinf(v)) return gg_strbuf_puts(out, v < 0 ? "-Infinity" : "Infinity");
    if (v < 0) { gg_strbuf_putc(out, '-'); v = -v; }
    char tmp[1100];
    int k = 0;
    v = floor(v);
    while (v / radix >= 9007199254740992.0 && k < (int)sizeof tmp) {
        v /= radix;
        tmp[k++] = '0';
    }
    do {
        double r = fmod(v, radix);
        if (k < (int)sizeof tmp) tmp[k++] = DIG[(int)r];
        v = (v - r) / radix;
    } while (v > 0 && k < (int)sizeof tmp);
    while (k > 0) gg_strbuf_putc(out, tmp[--k]);
    return !out->oom;
}

/* toFixed(places) of a value already rounded by jn_round_half_even; numbers of 1e21 and
 * above print as Number.prototype.toString, as in JavaScript. */
static void to_fixed(double v, int places, gg_strbuf *out) {
    /* v is within half an ulp of some N / 10^places (it was rounded so): below 2^50 the
     * product is within 1/4 of N, and N's digits are what printf's exact expansion rounds
     * to; a product farther from an integer (v not so rounded) takes printf */
    static const double P10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                   1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    double s = places >= 0 && places <= 22 ? fabs(v) * P10[places] : INFINITY;
    double nr = nearbyint(s);
    if (s < 1125899906842624.0 && fabs(s - nr) < 0.25) {
        unsigned long long nv = (unsigned long long)nr;
        char tmp[48];
        int k = 0;
        do { tmp[k++] = (char)('0' + nv % 10); nv /= 10; } while (nv);
        while (k <= places) tmp[k++] = '0'; /* at least one integer digit */
        if (signbit(v)) gg_strbuf_putc(out, '-'); /* printf writes -0.00 too */
        for (int i = k - 1; i >= 0; i--) {
            if (i == places - 1) gg_strbuf_putc(out, '.');
            gg_strbuf_putc(out, tmp[i]);
        }
        return;
    }
    if (fabs(v) >= 1e21) {
        char num[40];
        jsonata_format_double(v, num, sizeof num);
        gg_strbuf_puts(out, num);
        return;
    }
    gg_strbuf_printf(out, "%.*f", places, v);
}

/* ---- $formatNumber: XPath F&O 3.1 format-number ---- */

typedef struct numpic {
    size_t prefix_a, prefix_b, suffix_a, suffix_b; /* byte ranges in the picture */
    int min_int, sf, max_frac, min_frac, min_exp;
    bool has_exp, pct, pml;
    int int_groups[32], n_int_groups;
    int frac_groups[32], n_frac_groups;
} numpic;

typedef struct numfmt_syms {
    uint32_t ds, gs, es, zero, digit, ps;
    const char *minus, *pct, *pml, *inf, *nan;
} numfmt_syms;

static uint32_t first_cp(const char *s, uint32_t dflt) {
    if (!s || !*s) return dflt;
    size_t i = 0;
    return jn_utf8_next(s, strlen(s), &i);
}

static size_t count_occ(const char *s, size_t n, const char *needle) {
    size_t ln = strlen(needle), c = 0;
    if (!ln) return 0;
    for (size_t i = 0; i + ln <= n; i++)
        if (s[i] == needle[0] && !memcmp(s + i, needle, ln)) { c++; i += ln - 1; }
    return c;
}

static bool is_fam(const numfmt_syms *y, uint32_t c) { return c >= y->zero && c < y->zero + 10; }
static bool is_digitish(const numfmt_syms *y, uint32_t c) { return is_fam(y, c) || c == y->digit; }
static bool is_active(const numfmt_syms *y, uint32_t c) {
    return c == y->ds || c == y->gs || c == y->ps || is_digitish(y, c);
}

#define NP_ERR(code, msg) do { gg_error_set(err, code, msg); return false; } while (0)

/* Analyse one sub-picture: cp[0..n) code points, off[i] the byte offset of cp[i]. */
static bool numpic_parse(const char *pic, const uint32_t *cp, const size_t *off, size_t n,
                         const numfmt_syms *y, numpic *p, gg_error *err) {
    memset(p, 0, sizeof *p);
    long fa = -1, la = -1;
    for (size_t i = 0; i < n; i++)
        if (is_active(y, cp[i])) { if (fa < 0) fa = (long)i; la = (long)i; }
    if (fa < 0 && n > 0)
        NP_ERR("D3086", "The sub-picture must not contain a passive character that is preceded by an active character and that is followed by another active character");
    long exp = -1;
    for (long i = fa + 1; fa >= 0 && i < la; i++)
        if (cp[i] == y->es && is_active(y, cp[i - 1]) && is_active(y, cp[i + 1])) { exp = i; break; }
    size_t a = off[0], b = off[n];
    int nds = 0;
    for (size_t i = 0; i < n; i++) if (cp[i] == y->ds) nds++;
    if (nds > 1) NP_ERR("D3081", "The sub-picture must not contain more than one instance of the 'decimal-separator' character");
    size_t npct = count_occ(pic + a, b - a, y->pct), npml = count_occ(pic + a, b - a, y->pml);
    if (npct > 1) NP_ERR("D3082", "The sub-picture must not contain more than one instance of the 'percent' character");
    if (npml > 1) NP_ERR("D3083", "The sub-picture must not contain more than one instance of the 'per-mille' character");
    if (npct && npml) NP_ERR("D3084", "The sub-picture must not contain both a 'percent' and a 'per-mille' character");
    p->pct = npct > 0;
    p->pml = npml > 0;
    long mend = exp >= 0 ? exp : la + 1; /* mantissa is [fa, mend) */
    bool any_digit = false;
    for (long i = fa; fa >= 0 && i < mend; i++) if (is_digitish(y, cp[i])) any_digit = true;
    if (!any_digit) NP_ERR("D3085", "The mantissa part of a sub-picture must contain at least one character that is either an 'optional digit character' or a member of the 'decimal digit family'");
    for (long i = fa; i <= la; i++)
        if (i != exp && !is_active(y, cp[i]))
            NP_ERR("D3086", "The sub-picture must not contain a passive character that is preceded by an active character and that is followed by another active character");
    long dsi = -1;
    for (long i = fa; i < mend; i++) if (cp[i] == y->ds) dsi = i;
    for (long i = fa; i < mend; i++)
        if (cp[i] == y->gs && ((i > fa && cp[i - 1] == y->ds) || (i + 1 < mend && cp[i + 1] == y->ds)))
            NP_ERR("D3087", "The sub-picture must not contain a 'grouping-separator' character that appears adjacent to a 'decimal-separator' character");
    long iend = dsi >= 0 ? dsi : mend; /* integer part is [fa, iend) */
    if (dsi < 0 && iend > fa && cp[iend - 1] == y->gs)
        NP_ERR("D3088", "The sub-picture must not contain a 'grouping-separator' at the end of the integer part");
    for (long i = fa; i + 1 <= la; i++)
        if (cp[i] == y->gs && cp[i + 1] == y->gs)
            NP_ERR("D3089", "The sub-picture must not contain two adjacent instances of the 'grouping-separator' character");
    bool seen_fam = false;
    for (long i = fa; i < iend; i++) {
        if (is_fam(y, cp[i])) seen_fam = true;
        else if (cp[i] == y->digit && seen_fam)
            NP_ERR("D3090", "The integer part of the sub-picture must not contain a member of the 'decimal digit family' that is followed by an instance of the 'optional digit character'");
    }
    bool seen_opt = false;
    for (long i = dsi + 1; dsi >= 0 && i < mend; i++) {
        if (cp[i] == y->digit) seen_opt = true;
        else if (is_fam(y, cp[i]) && seen_opt)
            NP_ERR("D3091", "The fractional part of the sub-picture must not contain an instance of the 'optional digit character' that is followed by a member of the 'decimal digit family'");
    }
    if (exp >= 0) {
        if (p->pct || p->pml)
            NP_ERR("D3092", "A sub-picture that contains a 'percent' or 'per-mille' character must not contain a character treated as an 'exponent-separator'");
        for (long i = exp + 1; i <= la; i++)
            if (!is_fam(y, cp[i]))
                NP_ERR("D3093", "The exponent part of the sub-picture must comprise only of one or more characters that are members of the 'decimal digit family'");
        p->has_exp = true;
        p->min_exp = (int)(la - exp);
    }
    /* sizes and grouping positions */
    int digits_right = 0;
    bool opt_in_int = false;
    for (long i = iend - 1; i >= fa; i--) {
        if (is_fam(y, cp[i])) { p->min_int++; digits_right++; }
        else if (cp[i] == y->digit) { digits_right++; opt_in_int = true; }
        else if (cp[i] == y->gs && p->n_int_groups < 32) p->int_groups[p->n_int_groups++] = digits_right;
    }
    p->sf = p->min_int;
    int digits_left = 0;
    for (long i = dsi + 1; dsi >= 0 && i < mend; i++) {
        if (is_fam(y, cp[i])) { p->min_frac++; p->max_frac++; digits_left++; }
        else if (cp[i] == y->digit) { p->max_frac++; digits_left++; }
        else if (cp[i] == y->gs && p->n_frac_groups < 32) p->frac_groups[p->n_frac_groups++] = digits_left;
    }
    if (p->min_int == 0 && dsi < 0) p->min_int = 1;
    if (p->min_int == 0 && p->max_frac == 0) {
        if (p->has_exp) { p->min_frac = p->max_frac = 1; }
        else p->min_int = 1;
    }
    if (p->has_exp && p->min_int == 0 && opt_in_int) p->min_int = 1;
    p->prefix_a = a;
    p->prefix_b = off[fa];
    p->suffix_a = off[la + 1];
    p->suffix_b = b;
    return true;
}

static void put_digits(gg_strbuf *out, const char *s, size_t n, const numfmt_syms *y) {
    for (size_t i = 0; i < n; i++) {
        if (s[i] >= '0' && s[i] <= '9' && y->zero == '0') gg_strbuf_putc(out, s[i]); /* ASCII digits as they are */
        else if (s[i] >= '0' && s[i] <= '9') jn_utf8_put(out, y->zero + (uint32_t)(s[i] - '0'));
        else if (s[i] == ',') jn_utf8_put(out, y->gs); /* placeholder for a separator */
        else gg_strbuf_putc(out, s[i]);
    }
}

/* Insert ',' placeholders into the integer digits per the picture's grouping. */
static void group_int(const char *ip, size_t n, const numpic *p, gg_strbuf *o) {
    bool regular = p->n_int_groups > 0 && p->int_groups[0] > 0;
    for (int k = 0; k < p->n_int_groups && regular; k++)
        if (p->int_groups[k] != (k + 1) * p->int_groups[0]) regular = false;
    for (size_t i = 0; i < n; i++) {
        size_t right = n - i; /* digits at and right of i */
        bool sep = false;
        if (regular) sep = i > 0 && right % (size_t)p->int_groups[0] == 0;
        /* irregular separators keep their exact place, even at the left edge */
        else for (int k = 0; k < p->n_int_groups; k++) if ((size_t)p->int_groups[k] == right) sep = true;
        if (sep) gg_strbuf_putc(o, ',');
        gg_strbuf_putc(o, ip[i]);
    }
}

static bool format_sub(double v, bool neg_fallback, const char *pic, const numpic *p,
                       const numfmt_syms *y, gg_strbuf *out) {
    if (neg_fallback) gg_strbuf_puts(out, y->minus); /* before the positive prefix */
    gg_strbuf_append(out, pic + p->prefix_a, p->prefix_b - p->prefix_a);
    double adj = fabs(v) * (p->pct ? 100 : p->pml ? 1000 : 1);
    if (isinf(adj)) {
        gg_strbuf_puts(out, y->inf);
        gg_strbuf_append(out, pic + p->suffix_a, p->suffix_b - p->suffix_a);
        return !out->oom;
    }
    int e = 0;
    double m = adj;
    if (p->has_exp && adj != 0) {
        e = (int)floor(log10(adj)) + 1 - p->sf;
        m = e >= 0 ? adj / pow(10, e) : adj * pow(10, -e);
        m = jn_round_half_even(m, p->max_frac);
        double limit = pow(10, p->sf > 0 ? p->sf : 0);
        if ((p->sf > 0 && m >= limit) || (p->sf == 0 && m >= 1)) {
            e++;
            m = e >= 0 ? adj / pow(10, e) : adj * pow(10, -e);
        }
    }
    m = jn_round_half_even(m, p->max_frac);
    /* the four scratch buffers start on the stack (pictures rarely need more) */
    char fxb[64], ipb[64], gb[96], fgb[64];
    gg_strbuf fx, ip, g, fg;
    gg_strbuf_use(&fx, fxb, sizeof fxb);
    gg_strbuf_use(&ip, ipb, sizeof ipb);
    gg_strbuf_use(&g, gb, sizeof gb);
    gg_strbuf_use(&fg, fgb, sizeof fgb);
    to_fixed(m, p->max_frac, &fx);
    if (fx.oom) { gg_strbuf_free(&fx); out->oom = true; return false; }
    char *s = fx.data;
    char *dot = strchr(s, '.');
    size_t ilen = dot ? (size_t)(dot - s) : fx.len;
    const char *fp = dot ? dot + 1 : "";
    size_t flen = strlen(fp);
    /* integer digits: strip leading zeros, then pad to the minimum */
    size_t lead = 0;
    while (lead < ilen && s[lead] == '0') lead++;
    for (int k = (int)(ilen - lead); k < p->min_int; k++) gg_strbuf_putc(&ip, '0');
    gg_strbuf_append(&ip, s + lead, ilen - lead);
    while (flen > (size_t)p->min_frac && fp[flen - 1] == '0') flen--;
    group_int(ip.data ? ip.data : "", ip.len, p, &g);
    put_digits(out, g.data ? g.data : "", g.len, y);
    /* with no mandatory integer digit the reference never ends on a bare integer */
    if (p->min_int == 0 && flen == 0) { fp = "0"; flen = 1; }
    for (size_t i = 0; i < flen; i++) {
        for (int k = 0; k < p->n_frac_groups; k++)
            if ((size_t)p->frac_groups[k] == i && i > 0) { gg_strbuf_putc(&fg, ','); break; }
        gg_strbuf_putc(&fg, fp[i]);
    }
    for (int k = 0; k < p->n_frac_groups; k++) /* separators past the digits trail them */
        if ((size_t)p->frac_groups[k] >= flen && p->frac_groups[k] > 0) gg_strbuf_putc(&fg, ',');
    if (fg.len > 0) {
        jn_utf8_put(out, y->ds);
        put_digits(out, fg.data ? fg.data : "", fg.len, y);
    }
    gg_strbuf_free(&fg);
    if (p->has_exp) {
        jn_utf8_put(out, y->es);
        if (e < 0) gg_strbuf_puts(out, y->minus);
        char eb[16];
        snprintf(eb, sizeof eb, "%0*d", p->min_exp, abs(e));
        put_digits(out, eb, strlen(eb), y);
    }
    gg_strbuf_append(out, pic + p->suffix_a, p->suffix_b - p->suffix_a);
    gg_strbuf_free(&fx);
    gg_strbuf_free(&ip);
    gg_strbuf_free(&g);
    return !out->oom;
}

/* What format-number derives from a picture and a decimal format before it looks at the
 * number: the symbols and the analysed sub-pictures (byte offsets into the picture). */
struct jn_numfmt {
    numfmt_syms y;
    numpic pos, neg;
    bool has_neg; /* the picture has a negative sub-picture */
};

static bool analyse_picture(const char *picture, const uint32_t *cp, const size_t *off, size_t n,
                            jn_numfmt *nf, gg_error *err);

/* Analyse picture under fmt (NULL = the defaults) into *nf: errors D3080..D3093. The
 * symbols point into fmt, which must outlive nf. */
static bool numfmt_analyse(const char *picture, const jn_decimal_format *fmt, jn_numfmt *nf,
                           gg_error *err) {
    jn_decimal_format none = {0};
    if (!fmt) fmt = &none;
    nf->y = (numfmt_syms){
        .ds = first_cp(fmt->decimal_separator, '.'), .gs = first_cp(fmt->grouping_separator, ','),
        .es = first_cp(fmt->exponent_separator, 'e'), .zero = first_cp(fmt->zero_digit, '0'),
        .digit = first_cp(fmt->digit, '#'), .ps = first_cp(fmt->pattern_separator, ';'),
        .minus = fmt->minus_sign ? fmt->minus_sign : "-",
        .pct = fmt->percent ? fmt->percent : "%",
        .pml = fmt->per_mille ? fmt->per_mille : "\xe2\x80\xb0",
        .inf = fmt->infinity ? fmt->infinity : "Infinity",
        .nan = fmt->nan ? fmt->nan : "NaN"};
    size_t len = strlen(picture);
    if (len > 4096) { gg_error_set(err, "D3080", "The picture string is too long"); return false; }
    /* pictures are short: their code points and offsets fit on the stack */
    uint32_t cp_small[64];
    size_t off_small[65];
    bool small = len < 64;
    uint32_t *cp = small ? cp_small : malloc((len + 1) * sizeof *cp);
    size_t *off = small ? off_small : malloc((len + 2) * sizeof *off);
    if (!cp || !off) {
        if (!small) { free(cp); free(off); }
        gg_error_set(err, "D0000", "out of memory");
        return false;
    }
    size_t n = 0, i = 0;
    while (i < len) { off[n] = i; cp[n++] = jn_utf8_next(picture, len, &i); }
    off[n] = len;
    cp[n] = 0;
    bool ok = analyse_picture(picture, cp, off, n, nf, err);
    if (!small) { free(cp); free(off); }
    return ok;
}

static bool analyse_picture(const char *picture, const uint32_t *cp, const size_t *off, size_t n,
                            jn_numfmt *nf, gg_error *err) {
    size_t sep = n;
    int nsep = 0;
    for (size_t k = 0; k < n; k++) if (cp[k] == nf->y.ps) { nsep++; sep = k; }
    if (nsep > 1) { gg_error_set(err, "D3080", "The picture string must not contain more than one instance of the 'pattern-separator' character"); return false; }
    if (!numpic_parse(picture, cp, off, sep, &nf->y, &nf->pos, err)) return false;
    nf->has_neg = nsep > 0;
    if (nsep && !numpic_parse(picture, cp + sep + 1, off + sep + 1, n - sep - 1, &nf->y, &nf->neg, err)) return false;
    return true;
}

bool jn_numfmt_format(const jn_numfmt *nf, double v, const char *picture, gg_strbuf *out) {
    if (isnan(v)) { gg_strbuf_puts(out, nf->y.nan); return !out->oom; }
    if (v < 0) return nf->has_neg ? format_sub(v, false, picture, &nf->neg, &nf->y, out)
                                  : format_sub(v, true, picture, &nf->pos, &nf->y, out);
    return format_sub(v, false, picture, &nf->pos, &nf->y, out);
}

bool jn_format_number(double v, const char *picture, const jn_decimal_format *fmt,
                      gg_strbuf *out, gg_error *err) {
    jn_numfmt nf;
    return numfmt_analyse(picture, fmt, &nf, err) && jn_numfmt_format(&nf, v, picture, out);
}

bool jn_numfmt_compile(const char *picture, jn_numfmt **out) {
    *out = NULL;
    jn_numfmt *nf = malloc(sizeof *nf);
    if (!nf) return false;
    gg_error err = GG_ERROR_INIT;
    bool ok = numfmt_analyse(picture, NULL, nf, &err);
    bool oom = !ok && strcmp(err.code, "D0000") == 0;
    gg_error_clear(&err);
    if (ok) *out = nf;
    else free(nf);
    return !oom;
}

void jn_numfmt_free(jn_numfmt *nf) { free(nf); }
