/* yaml_scalar.c — the YAML 1.2 core schema's resolution of a plain (unquoted, untagged)
 * scalar, the one rule graphs and node specs share so the same text means the same value
 * in both: null (empty, ~, null), booleans (true/false in three casings; yes/no/on/off
 * are YAML 1.1 and stay strings), integers (decimal, 0x hex, 0o octal), floats. JSON has
 * no infinity or NaN, so .inf/.nan (and a float that overflows to infinity) are an error
 * the caller positions, not a silent string. Quoted and block scalars never come here. */
#include "util/util.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static bool one_of(const char *s, const char *a, const char *b, const char *c) {
    return !strcmp(s, a) || !strcmp(s, b) || !strcmp(s, c);
}

/* at least one character, all from set */
static bool all_in(const char *s, const char *set) {
    if (!*s) return false;
    for (; *s; s++)
        if (!strchr(set, *s)) return false;
    return true;
}

static const char *digits(const char *s) {
    while (*s >= '0' && *s <= '9') s++;
    return s;
}

/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? after the sign */
static bool is_float(const char *p) {
    const char *e = digits(p);
    bool int_part = e != p;
    if (*e == '.') {
        const char *f = digits(e + 1);
        if (!int_part && f == e + 1) return false;
        e = f;
    } else if (!int_part) {
        return false;
    }
    if (*e == 'e' || *e == 'E') {
        e++;
        if (*e == '-' || *e == '+') e++;
        const char *x = digits(e);
        if (x == e) return false;
        e = x;
    }
    return *e == '\0';
}

static json_t *not_finite(const char *s, gg_error *err) {
    gg_error_set(err, "yaml", "'%.64s' is not a finite number and cannot be represented in JSON (quote it for a string)",
                 s);
    return NULL;
}

/* 0x / 0o integers (unsigned, as the core schema writes them) */
static json_t *radix_int(const char *s, int base, gg_error *err) {
    errno = 0;
    unsigned long long v = strtoull(s + 2, NULL, base);
    if (errno == 0 && v <= (unsigned long long)INT64_MAX) return json_integer((json_int_t)v);
    gg_error_set(err, "yaml", "'%.64s' does not fit in a 64-bit integer", s);
    return NULL;
}

json_t *gg_yaml_plain_scalar(const char *s, size_t n, gg_error *err) {
    if (n == 0 || !strcmp(s, "~") || one_of(s, "null", "Null", "NULL")) return json_null();
    if (one_of(s, "true", "True", "TRUE")) return json_true();
    if (one_of(s, "false", "False", "FALSE")) return json_false();
    if (strlen(s) != n) return json_stringn(s, n); /* an embedded NUL is text, not a number */
    const char *p = s + (*s == '-' || *s == '+');
    if (all_in(p, "0123456789")) {
        errno = 0;
        long long v = strtoll(s, NULL, 10);
        if (errno == 0) return json_integer(v);
        return json_real(strtod(s, NULL)); /* beyond 64 bits: the nearest double, as JSON parsers do */
    }
    if (s[0] == '0' && s[1] == 'x' && all_in(s + 2, "0123456789abcdefABCDEF")) return radix_int(s, 16, err);
    if (s[0] == '0' && s[1] == 'o' && all_in(s + 2, "01234567")) return radix_int(s, 8, err);
    if (one_of(p, ".inf", ".Inf", ".INF") || one_of(s, ".nan", ".NaN", ".NAN")) return not_finite(s, err);
    if (is_float(p)) {
        double v = strtod(s, NULL);
        return isfinite(v) ? json_real(v) : not_finite(s, err);
    }
    return json_stringn(s, n);
}
