/* jsnum.c — a double printed as JavaScript's Number.prototype.toString prints it (shortest
 * round-trip digits laid out by the ECMAScript Number::toString rules). JSONata, JSON Logic
 * and the JSON serializers all print numbers this way, so it lives below them. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* Exact powers of ten as doubles: 10^0 .. 10^22 are all representable. */
static const double POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* The fast path of gg_js_shortest_digits, for the numbers people write (at most 15
 * significant digits, 1e-7 <= d < 1e15): scale to a 15-digit integer m and check that
 * m / 10^q gives d back. That division is one correctly rounded operation on exact
 * operands, so the check is strtod's; and a 15-digit decimal that round-trips is the only
 * one (the 15-digit grid is coarser than the double grid), so m without its trailing
 * zeros is the shortest representation. Returns false when the slow path must decide. */
static bool shortest_digits_fast(double d, char digits[24], int *ndigits, int *exp10) {
    if (!(d >= 1e-7 && d < 1e15)) return false;
    int e = (int)floor(log10(d));
    int q = 14 - e; /* digits after the point that make 15 significant ones */
    if (q < 0 || q > 22) return false;
    double m = nearbyint(d * POW10[q]);
    if (m >= 1e15) { /* log10 rounded up across a power of ten */
        e++;
        q--;
        m = nearbyint(d * POW10[q]);
    }
    if (m < 1e14 || m >= 1e15 || m / POW10[q] != d) return false;
    long long mi = (long long)m;
    char tmp[16];
    for (int i = 14; i >= 0; i--, mi /= 10) tmp[i] = (char)('0' + mi % 10);
    int n = 15;
    while (n > 1 && tmp[n - 1] == '0') n--;
    memcpy(digits, tmp, (size_t)n);
    digits[n] = '\0';
    *ndigits = n;
    *exp10 = e;
    return true;
}

/* See util.h. */
int gg_js_shortest_digits(double d, char digits[24], int *ndigits) {
    int e10;
    if (shortest_digits_fast(d, digits, ndigits, &e10)) return e10;
    /* 10^15 < 2^53, so the 15-digit decimal grid is coarser than the double grid: when 15
     * digits round-trip, the shortest representation is those digits without trailing
     * zeros. Otherwise 16 or 17 digits are needed. */
    char tmp[40];
    /* subnormals have fewer significant bits, so they search from one digit up */
    for (int p = d < 2.2250738585072014e-308 ? 1 : 15; p <= 17; p++) {
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
void gg_js_number_format(double d, char *buf, size_t size) {
    if (!buf || size == 0) return;
    if (isnan(d)) { snprintf(buf, size, "NaN"); return; }
    if (isinf(d)) { snprintf(buf, size, d < 0 ? "-Infinity" : "Infinity"); return; }
    if (d == 0) { snprintf(buf, size, "0"); return; } /* also -0 */
    /* Fast path: integers that fit a double exactly. */
    if (fabs(d) < 9007199254740992.0 && d == (double)(long long)d) {
        char tmp[24];
        int k = 0;
        long long v = (long long)d;
        unsigned long long u = v < 0 ? (unsigned long long)(-v) : (unsigned long long)v;
        do { tmp[k++] = (char)('0' + u % 10); u /= 10; } while (u);
        if (v < 0) tmp[k++] = '-';
        size_t o = 0;
        while (k > 0 && o + 1 < size) buf[o++] = tmp[--k];
        buf[o] = '\0';
        return;
    }
    char out[64];
    size_t o = 0;
    if (d < 0) { out[o++] = '-'; d = -d; }
    char digits[24];
    int k;
    int e = gg_js_shortest_digits(d, digits, &k);
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
