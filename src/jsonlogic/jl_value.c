/* jl_value.c — JSON Logic's runtime values and the JavaScript coercions json-logic-js
 * relies on (truthiness, ToNumber, parseFloat, ToString, ==, ===, < ...), written from the
 * ECMAScript rules and checked against json-logic-js running on node. Strings are UTF-8
 * here but measured and compared in UTF-16 code units, as JavaScript does. */
#include "jsonlogic/jl_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jsonata/jsonata.h"

/* JSON Logic's values are jansson's: they are counted by the evaluation's budget because
 * every json_t of the process is allocated through it (jsonata/value.c sets that up). */

#define JL_COERCE_DEPTH 256 /* nested arrays followed by ToString / ToNumber */

static bool is_sentinel(const json_t *j);

void jl_oom(jl_ctx *c) {
    if (c && c->err && !gg_error_is_set(c->err)) gg_error_set(c->err, "oom", "out of memory");
}

/* The part of jl_release that frees: owned strings and held references. */
void jl_release_slow(jl_val *v) {
    if (v->t == JV_STR) free(v->u.str.s);
    else if (v->t == JV_JSON && v->origin == JO_REF) json_decref(v->u.j);
}

bool jl_dup(const jl_val *v, jl_val *out) {
    *out = *v;
    if (v->t == JV_STR) {
        char *s = malloc(v->u.str.len + 1);
        if (!s) { out->t = JV_UNDEF; return false; }
        memcpy(s, v->u.str.s, v->u.str.len + 1);
        out->u.str.s = s;
    } else if (v->t == JV_JSON && v->origin == JO_REF) {
        json_incref(v->u.j);
    }
    return true;
}

jl_val jl_str_take(char *s, size_t len) {
    jl_val v = {.t = JV_STR};
    v.u.str.s = s;
    v.u.str.len = len;
    return v;
}

bool jl_str_copy(const char *s, size_t len, jl_val *out) {
    char *d = malloc(len + 1);
    if (!d) return false;
    memcpy(d, s, len);
    d[len] = '\0';
    jl_set_str(out, d, len);
    return true;
}

/* Integral doubles that JSON can carry exactly become integers, like JSON.stringify's
 * output read back by JSON.parse. */
static json_t *num_to_json(double d) {
    if (!isfinite(d)) return json_null();
    if (fabs(d) < 9007199254740992.0 && d == (double)(long long)d) return json_integer((json_int_t)d);
    return json_real(d);
}

json_t *jl_to_json(const jl_val *v) {
    switch (v->t) {
    case JV_BOOL: return json_boolean(v->u.b);
    case JV_NUM: return v->u.num.src ? json_incref(v->u.num.src) : num_to_json(v->u.n);
    case JV_STR: return json_stringn(v->u.str.s, v->u.str.len);
    case JV_JSON: return json_incref(v->u.j); /* shared, read-only (see jsonlogic.h) */
    default: return json_null();
    }
}

json_t *jl_to_json_elem(jl_ctx *c, const jl_val *v) {
    char kind = 0;
    if (v->t == JV_UNDEF) kind = 'U';
    else if (v->t == JV_NUM && !isfinite(v->u.n)) kind = isnan(v->u.n) ? 'N' : v->u.n > 0 ? 'I' : 'i';
    if (!kind) return jl_to_json(v);
    char buf[2] = {(char)JL_SENTINEL, kind};
    c->sentinel = true;
    return json_stringn_nocheck(buf, 2);
}

static bool is_sentinel(const json_t *j) {
    return json_is_string(j) && json_string_length(j) == 2 && (unsigned char)json_string_value(j)[0] == JL_SENTINEL;
}

void jl_fix_sentinels(json_t *j, int depth) {
    if (depth > 4096) return;
    if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++) {
            json_t *e = json_array_get(j, i);
            if (is_sentinel(e)) json_array_set_new(j, i, json_null());
            else jl_fix_sentinels(e, depth + 1);
        }
    } else if (json_is_object(j)) {
        const char *k;
        json_t *e;
        json_object_foreach(j, k, e) {
            if (is_sentinel(e)) json_object_set_new(j, k, json_null());
            else jl_fix_sentinels(e, depth + 1);
        }
    }
}

const char *jl_strp(const jl_val *v, size_t *len) {
    if (v->t == JV_STR) { *len = v->u.str.len; return v->u.str.s; }
    if (v->t == JV_JSON && json_is_string(v->u.j)) {
        *len = json_string_length(v->u.j);
        return json_string_value(v->u.j);
    }
    return NULL;
}

/* ---------------------------------------------------------------- truthiness */

/* json-logic-js's truthy: JavaScript's, except that an empty array is false. */
bool jl_truthy(const jl_val *v) {
    switch (v->t) {
    case JV_BOOL: return v->u.b;
    case JV_NUM: return v->u.n != 0 && !isnan(v->u.n);
    case JV_STR: return v->u.str.len > 0;
    case JV_JSON:
        if (json_is_string(v->u.j)) return json_string_length(v->u.j) > 0;
        if (json_is_array(v->u.j)) return json_array_size(v->u.j) > 0;
        return true;
    default: return false;
    }
}

/* ---------------------------------------------------------------- UTF-16 view */

size_t jl_u16_offset(const char *s, size_t len, size_t i, bool *split) {
    size_t units = 0, pos = 0;
    if (split) *split = false;
    while (pos < len && units < i) {
        size_t n = gg_utf8_lead_len((unsigned char)s[pos]);
        size_t u = n == 4 ? 2 : 1;
        if (units + u > i) { /* i is the low half of a surrogate pair */
            if (split) *split = true;
            return pos;
        }
        units += u;
        pos += n;
    }
    return pos < len ? pos : len;
}

/* ---------------------------------------------------------------- numbers */

/* Length of the JavaScript WhiteSpace/LineTerminator character at s, or 0. */
static size_t js_space(const unsigned char *s, size_t len) {
    if (len == 0) return 0;
    if (s[0] == ' ' || (s[0] >= 0x09 && s[0] <= 0x0D)) return 1;
    if (len >= 2 && s[0] == 0xC2 && s[1] == 0xA0) return 2; /* NBSP */
    if (len >= 3) {
        uint32_t c = gg_utf8_decode(s, 3);
        if (s[0] >= 0xE0 && s[0] < 0xF0 &&
            (c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
             c == 0x202F || c == 0x205F || c == 0x3000 || c == 0xFEFF))
            return 3;
    }
    return 0;
}

static void trim_js(const char **s, size_t *len) {
    const unsigned char *p = (const unsigned char *)*s;
    size_t n = *len, k;
    while ((k = js_space(p, n)) > 0) { p += k; n -= k; }
    /* trailing: scan forward for the last non-space (multi-byte spaces need a forward scan) */
    size_t last = 0, i = 0;
    while (i < n) {
        k = js_space(p + i, n - i);
        if (k) { i += k; continue; }
        i += gg_utf8_lead_len(p[i]);
        last = i;
    }
    *s = (const char *)p;
    *len = last > n ? n : last;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* Length of the longest StrDecimalLiteral (without sign, without Infinity) at s. */
static size_t decimal_prefix(const char *s, size_t len) {
    size_t i = 0, digits = 0;
    while (i < len && is_digit(s[i])) { i++; digits++; }
    if (i < len && s[i] == '.') {
        i++;
        while (i < len && is_digit(s[i])) { i++; digits++; }
    }
    if (digits == 0) return 0;
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        size_t j = i + 1;
        if (j < len && (s[j] == '+' || s[j] == '-')) j++;
        if (j < len && is_digit(s[j])) {
            while (j < len && is_digit(s[j])) j++;
            i = j;
        }
    }
    return i;
}

/* strtod on a validated decimal literal (not NUL-terminated). */
static double strtod_n(const char *s, size_t len) {
    char small[128];
    char *buf = len < sizeof small ? small : malloc(len + 1);
    if (!buf) return NAN;
    memcpy(buf, s, len);
    buf[len] = '\0';
    double d = strtod(buf, NULL);
    if (buf != small) free(buf);
    return d;
}

static double radix_literal(const char *s, size_t len, int radix) {
    if (len == 0) return NAN;
    double v = 0;
    for (size_t i = 0; i < len; i++) {
        int d;
        char c = s[i];
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else return NAN;
        if (d >= radix) return NAN;
        v = v * radix + d;
    }
    return v;
}

/* StringToNumber: the whole trimmed string must be a numeric literal; "" is 0. */
double jl_str_to_number(const char *s, size_t len) {
    trim_js(&s, &len);
    if (len == 0) return 0;
    if (len > 2 && s[0] == '0') {
        char x = s[1];
        if (x == 'x' || x == 'X') return radix_literal(s + 2, len - 2, 16);
        if (x == 'o' || x == 'O') return radix_literal(s + 2, len - 2, 8);
        if (x == 'b' || x == 'B') return radix_literal(s + 2, len - 2, 2);
    }
    size_t i = 0;
    bool neg = false;
    if (s[0] == '+' || s[0] == '-') { neg = s[0] == '-'; i = 1; }
    if (len - i == 8 && memcmp(s + i, "Infinity", 8) == 0) return neg ? -INFINITY : INFINITY;
    size_t n = decimal_prefix(s + i, len - i);
    if (n == 0 || i + n != len) return NAN;
    return strtod_n(s, len);
}

/* parseFloat on a string: the longest numeric prefix after leading white space. */
static double parse_float_str(const char *s, size_t len) {
    const unsigned char *p = (const unsigned char *)s;
    size_t k;
    while ((k = js_space(p, len)) > 0) { p += k; len -= k; }
    s = (const char *)p;
    size_t i = 0;
    bool neg = false;
    if (len > 0 && (s[0] == '+' || s[0] == '-')) { neg = s[0] == '-'; i = 1; }
    if (len - i >= 8 && memcmp(s + i, "Infinity", 8) == 0) return neg ? -INFINITY : INFINITY;
    size_t n = decimal_prefix(s + i, len - i);
    if (n == 0) return NAN;
    return strtod_n(s, i + n);
}

static double array_to_number(const json_t *a, int depth);

static double json_elem_to_number(const json_t *e, int depth) {
    switch (json_typeof(e)) {
    case JSON_NULL: return 0; /* [null] joins to "" */
    case JSON_INTEGER: return (double)json_integer_value(e);
    case JSON_REAL: return json_real_value(e);
    case JSON_STRING:
        if (is_sentinel(e)) { jl_val v; jl_from_sentinel(&v, json_string_value(e)[1]); return v.t == JV_NUM ? v.u.n : 0; }
        return jl_str_to_number(json_string_value(e), json_string_length(e));
    case JSON_ARRAY: return array_to_number(e, depth + 1);
    default: return NAN; /* "true", "false", "[object Object]" */
    }
}

/* ToNumber(ToPrimitive(array)) = ToNumber(array.join(",")): "" for [], the element's
 * string for [x], and a comma (never numeric) for anything longer. */
static double array_to_number(const json_t *a, int depth) {
    size_t n = json_array_size(a);
    if (n == 0) return 0;
    if (n > 1 || depth > JL_COERCE_DEPTH) return NAN;
    return json_elem_to_number(json_array_get(a, 0), depth);
}

double jl_to_number(const jl_val *v) {
    size_t len;
    const char *s;
    switch (v->t) {
    case JV_NULL: return 0;
    case JV_BOOL: return v->u.b ? 1 : 0;
    case JV_NUM: return v->u.n;
    case JV_STR: return jl_str_to_number(v->u.str.s, v->u.str.len);
    case JV_JSON:
        if ((s = jl_strp(v, &len))) return jl_str_to_number(s, len);
        if (json_is_array(v->u.j)) return array_to_number(v->u.j, 0);
        return NAN;
    default: return NAN;
    }
}

double jl_parse_float(jl_ctx *c, const jl_val *v) {
    if (v->t == JV_NUM) return v->u.n == 0 ? 0 : v->u.n; /* String(-0) is "0" */
    size_t len;
    const char *s = jl_strp(v, &len);
    if (s) return parse_float_str(s, len);
    if (v->t == JV_NUM) return v->u.n == 0 ? 0 : v->u.n; /* String(-0) is "0" */
    if (!jl_is_arr(v)) return NAN; /* "true", "null", "undefined", "[object Object]" */
    gg_strbuf b = GG_STRBUF_INIT;
    double d = NAN;
    if (jl_to_string(c, v, &b, false)) d = parse_float_str(b.data ? b.data : "", b.len);
    gg_strbuf_free(&b);
    return d;
}

/* ---------------------------------------------------------------- strings */

static bool append_number(gg_strbuf *b, double d) {
    char buf[40];
    gg_js_number_format(d, buf, sizeof buf);
    return gg_strbuf_puts(b, buf);
}

static bool json_to_string(jl_ctx *c, const json_t *j, gg_strbuf *b, bool join_mode, int depth) {
    switch (json_typeof(j)) {
    case JSON_NULL: return join_mode ? true : gg_strbuf_puts(b, "null");
    case JSON_TRUE: return gg_strbuf_puts(b, "true");
    case JSON_FALSE: return gg_strbuf_puts(b, "false");
    case JSON_INTEGER: return append_number(b, (double)json_integer_value(j));
    case JSON_REAL: return append_number(b, json_real_value(j));
    case JSON_STRING:
        if (is_sentinel(j)) { /* only ever an array element: join prints undefined as "" */
            jl_val v;
            jl_from_sentinel(&v, json_string_value(j)[1]);
            return v.t == JV_NUM ? append_number(b, v.u.n) : true;
        }
        return gg_strbuf_append(b, json_string_value(j), json_string_length(j));
    case JSON_OBJECT: return gg_strbuf_puts(b, "[object Object]");
    case JSON_ARRAY:
        if (depth > JL_COERCE_DEPTH) {
            if (c && c->err && !gg_error_is_set(c->err))
                gg_error_set(c->err, "depth_exceeded", "array nested too deeply to convert to a string");
            return false;
        }
        for (size_t i = 0; i < json_array_size(j); i++) {
            if (i > 0 && !gg_strbuf_putc(b, ',')) return false;
            if (!json_to_string(c, json_array_get(j, i), b, true, depth + 1)) return false;
        }
        return !b->oom;
    }
    return true;
}

bool jl_to_string(jl_ctx *c, const jl_val *v, gg_strbuf *b, bool join_mode) {
    bool ok;
    switch (v->t) {
    case JV_UNDEF: ok = join_mode ? true : gg_strbuf_puts(b, "undefined"); break;
    case JV_NULL: ok = join_mode ? true : gg_strbuf_puts(b, "null"); break;
    case JV_BOOL: ok = gg_strbuf_puts(b, v->u.b ? "true" : "false"); break;
    case JV_NUM: ok = append_number(b, v->u.n); break;
    case JV_STR: ok = gg_strbuf_append(b, v->u.str.s, v->u.str.len); break;
    default: ok = json_to_string(c, v->u.j, b, join_mode, 0); break;
    }
    if (!ok || b->oom) { jl_oom(c); return false; }
    return true;
}

/* ---------------------------------------------------------------- equality */

typedef enum { K_UNDEF, K_NULL, K_BOOL, K_NUM, K_STR, K_OBJ } js_kind;

static js_kind kind_of(const jl_val *v) {
    switch (v->t) {
    case JV_UNDEF: return K_UNDEF;
    case JV_NULL: return K_NULL;
    case JV_BOOL: return K_BOOL;
    case JV_NUM: return K_NUM;
    case JV_STR: return K_STR;
    default: return json_is_string(v->u.j) ? K_STR : K_OBJ;
    }
}

static bool str_eq(const jl_val *a, const jl_val *b) {
    size_t la, lb;
    const char *sa = jl_strp(a, &la), *sb = jl_strp(b, &lb);
    return la == lb && memcmp(sa, sb, la) == 0;
}

bool jl_strict_eq(const jl_val *a, const jl_val *b) {
    js_kind ka = kind_of(a), kb = kind_of(b);
    if (ka != kb) return false;
    switch (ka) {
    case K_UNDEF: case K_NULL: return true;
    case K_BOOL: return a->u.b == b->u.b;
    case K_NUM: return a->u.n == b->u.n;
    case K_STR: return str_eq(a, b);
    default: return a->u.j == b->u.j; /* objects compare by identity */
    }
}

/* ToPrimitive of an array or object: its string form, as an owned JV_STR. */
static bool to_primitive(jl_ctx *c, const jl_val *v, jl_val *out) {
    gg_strbuf b = GG_STRBUF_INIT;
    if (!jl_to_string(c, v, &b, false)) { gg_strbuf_free(&b); return false; }
    size_t len = b.len;
    char *s = gg_strbuf_take(&b);
    if (!s) { jl_oom(c); return false; }
    jl_set_str(out, s, len);
    return true;
}

/* IsLooselyEqual from ECMAScript, on the JSON value space plus undefined/NaN. */
bool jl_loose_eq(jl_ctx *c, const jl_val *a, const jl_val *b) {
    if (a->t == JV_NUM && b->t == JV_NUM) return a->u.n == b->u.n; /* the common case */
    js_kind ka = kind_of(a), kb = kind_of(b);
    if (ka == kb) return jl_strict_eq(a, b);
    bool an = ka == K_UNDEF || ka == K_NULL, bn = kb == K_UNDEF || kb == K_NULL;
    if (an || bn) return an && bn;
    jl_val x; /* set in place: see jl_set_num */
    if (ka == K_BOOL) { jl_set_num(&x, a->u.b ? 1 : 0); return jl_loose_eq(c, &x, b); }
    if (kb == K_BOOL) { jl_set_num(&x, b->u.b ? 1 : 0); return jl_loose_eq(c, a, &x); }
    if (ka == K_NUM && kb == K_STR) return a->u.n == jl_to_number(b);
    if (ka == K_STR && kb == K_NUM) return jl_to_number(a) == b->u.n;
    /* one side is an object, the other a number or string */
    jl_val p;
    const jl_val *obj = ka == K_OBJ ? a : b, *other = ka == K_OBJ ? b : a;
    if (!to_primitive(c, obj, &p)) return false;
    bool r = jl_loose_eq(c, &p, other);
    jl_release(&p);
    return r;
}

/* IsLessThan after ToPrimitive: strings compare by code units, the rest as numbers. */
int jl_compare(jl_ctx *c, const jl_val *a, const jl_val *b) {
    if (a->t == JV_NUM && b->t == JV_NUM) { /* the common case */
        double x = a->u.n, y = b->u.n;
        return x < y ? -1 : x > y ? 1 : x == y ? 0 : 2;
    }
    jl_val pa = JL_UNDEF, pb = JL_UNDEF;
    const jl_val *x = a, *y = b;
    int r = 2;
    if (kind_of(a) == K_OBJ) { if (!to_primitive(c, a, &pa)) goto out; x = &pa; }
    if (kind_of(b) == K_OBJ) { if (!to_primitive(c, b, &pb)) goto out; y = &pb; }
    size_t lx, ly;
    const char *sx = jl_strp(x, &lx), *sy = jl_strp(y, &ly);
    if (sx && sy) {
        r = gg_utf16_cmp(sx, lx, sy, ly);
    } else {
        double dx = jl_to_number(x), dy = jl_to_number(y);
        if (isnan(dx) || isnan(dy)) r = 2;
        else r = dx < dy ? -1 : (dx > dy ? 1 : 0);
    }
out:
    jl_release(&pa);
    jl_release(&pb);
    return r;
}
