/* jsnum.c — a double printed as JavaScript's Number.prototype.toString prints it (shortest
 * round-trip digits laid out by the ECMAScript Number::toString rules). JSONata, JSON Logic
 * and the JSON serializers all print numbers this way, so it lives below them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* See util.h. */
int gg_js_shortest_digits(double d, char digits[24], int *ndigits) {
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
