/* numfmt.c — numbers and JSON printed exactly as JavaScript prints them.
 *
 * jsonata_format_double is Number.prototype.toString (shortest round-trip digits laid out
 * by the ECMAScript Number::toString rules); jsonata_dump is JSON.stringify for jansson
 * values. Both are used well outside JSONata (JSON Logic, serializers), so this file
 * depends on nothing but jansson and util. */
#include "jsonata/jsonata.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Shortest decimal digits that round-trip to d (d finite, > 0). Writes the digits (no
 * dot) to digits and returns the decimal exponent of the first digit. */
static int shortest_digits(double d, char digits[24], int *ndigits) {
    char tmp[40];
    for (int p = 1; p <= 17; p++) {
        snprintf(tmp, sizeof tmp, "%.*e", p - 1, d);
        if (p == 17 || strtod(tmp, NULL) == d) break;
    }
    /* tmp looks like "d.ddddde[+-]xx" */
    int n = 0;
    const char *s = tmp;
    for (; *s && *s != 'e'; s++)
        if (*s >= '0' && *s <= '9') digits[n++] = *s;
    int exp10 = (*s == 'e') ? atoi(s + 1) : 0;
    while (n > 1 && digits[n - 1] == '0') n--; /* trailing zeros carry no information */
    digits[n] = '\0';
    *ndigits = n;
    return exp10;
}

/* Number::toString(10) from ECMAScript: n is the position of the decimal point relative
 * to the digit string, k its length. */
void jsonata_format_double(double d, char *buf, size_t size) {
    if (!buf || size == 0) return;
    if (isnan(d)) { snprintf(buf, size, "NaN"); return; }
    if (isinf(d)) { snprintf(buf, size, d < 0 ? "-Infinity" : "Infinity"); return; }
    if (d == 0) { snprintf(buf, size, "0"); return; } /* also -0 */
    /* Fast path: integers that fit a double exactly. */
    if (fabs(d) < 9007199254740992.0 && d == (double)(long long)d) {
        snprintf(buf, size, "%lld", (long long)d);
        return;
    }
    char out[64];
    size_t o = 0;
    if (d < 0) { out[o++] = '-'; d = -d; }
    char digits[24];
    int k;
    int e = shortest_digits(d, digits, &k);
    int n = e + 1;
    if (k <= n && n <= 21) {
        memcpy(out + o, digits, (size_t)k); o += (size_t)k;
        for (int i = 0; i < n - k; i++) out[o++] = '0';
    } else if (0 < n && n <= 21) {
        memcpy(out + o, digits, (size_t)n); o += (size_t)n;
        out[o++] = '.';
        memcpy(out + o, digits + n, (size_t)(k - n)); o += (size_t)(k - n);
    } else if (-6 < n && n <= 0) {
        out[o++] = '0'; out[o++] = '.';
        for (int i = 0; i < -n; i++) out[o++] = '0';
        memcpy(out + o, digits, (size_t)k); o += (size_t)k;
    } else {
        out[o++] = digits[0];
        if (k > 1) {
            out[o++] = '.';
            memcpy(out + o, digits + 1, (size_t)(k - 1)); o += (size_t)(k - 1);
        }
        o += (size_t)snprintf(out + o, sizeof out - o, "e%c%d", n - 1 < 0 ? '-' : '+',
                              abs(n - 1));
    }
    out[o] = '\0';
    snprintf(buf, size, "%s", out);
}

/* JSON.stringify's string quoting: only ", \ and control characters are escaped. */
static void dump_string(gg_strbuf *b, const char *s, size_t len) {
    gg_strbuf_putc(b, '"');
    size_t run = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char ubuf[8];
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        default:
            if (c < 0x20) { snprintf(ubuf, sizeof ubuf, "\\u%04x", c); esc = ubuf; }
        }
        if (esc) {
            gg_strbuf_append(b, s + run, i - run);
            gg_strbuf_puts(b, esc);
            run = i + 1;
        }
    }
    gg_strbuf_append(b, s + run, len - run);
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
    case JSON_INTEGER:
        jsonata_format_double((double)json_integer_value(v), num, sizeof num);
        gg_strbuf_puts(b, num);
        break;
    case JSON_REAL: {
        double d = json_real_value(v);
        if (!isfinite(d)) { gg_strbuf_puts(b, "null"); break; }
        jsonata_format_double(d, num, sizeof num);
        gg_strbuf_puts(b, num);
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
        if (json_object_size(v) == 0) { gg_strbuf_puts(b, "{}"); break; }
        gg_strbuf_putc(b, '{');
        int first = 1;
        const char *key;
        json_t *val;
        json_object_foreach(v, key, val) {
            if (!first) gg_strbuf_putc(b, ',');
            first = 0;
            dump_newline(b, indent, level + 1);
            dump_string(b, key, strlen(key));
            gg_strbuf_putc(b, ':');
            if (indent > 0) gg_strbuf_putc(b, ' ');
            dump_value(b, val, indent, level + 1);
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
