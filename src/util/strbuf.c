/* strbuf.c — growable byte buffer with a sticky out-of-memory flag, so long chains of
 * appends need one check at the end instead of one per call. */
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The slow half of gg_strbuf_reserve (util.h): out of memory before, or not enough room. */
bool gg_strbuf_grow(gg_strbuf *b, size_t extra) {
    if (b->oom) return false;
    if (b->len + extra + 1 <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra + 1) {
        if (cap > ((size_t)-1) / 2) { b->oom = true; return false; }
        cap *= 2;
    }
    char *d = b->borrowed ? malloc(cap) : realloc(b->data, cap);
    if (!d) { b->oom = true; return false; }
    if (b->borrowed) memcpy(d, b->data, b->len); /* leave the caller's array */
    b->borrowed = false;
    b->data = d;
    b->cap = cap;
    return true;
}

/* Start b on the caller's array (cap bytes, at least 1): no allocation until it is full. */
void gg_strbuf_use(gg_strbuf *b, char *buf, size_t cap) {
    *b = (gg_strbuf){buf, 0, cap, false, true};
    buf[0] = '\0';
}

bool gg_strbuf_printf(gg_strbuf *b, const char *fmt, ...) {
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !gg_strbuf_reserve(b, (size_t)n)) { va_end(ap2); return false; }
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    b->len += (size_t)n;
    return true;
}

/* Hand the bytes to the caller and reset b. An empty buffer yields "" (never NULL unless
 * an allocation failed somewhere along the way). */
char *gg_strbuf_take(gg_strbuf *b) {
    if (b->oom) { gg_strbuf_free(b); return NULL; }
    if (!b->data && !gg_strbuf_reserve(b, 0)) return NULL;
    if (b->borrowed) { /* the caller's array: hand out a copy */
        char *d = malloc(b->len + 1);
        if (d) memcpy(d, b->data, b->len + 1);
        *b = (gg_strbuf)GG_STRBUF_INIT;
        return d;
    }
    if (b->len == 0) b->data[0] = '\0';
    char *d = b->data;
    b->data = NULL;
    b->len = b->cap = 0;
    return d;
}

void gg_strbuf_reset(gg_strbuf *b) {
    b->len = 0;
    if (b->data) b->data[0] = '\0';
}

void gg_strbuf_free(gg_strbuf *b) {
    if (!b->borrowed) free(b->data);
    b->borrowed = false;
    b->data = NULL;
    b->len = b->cap = 0;
    b->oom = false;
}

/* "00".."99": two digits a division. */
static const char DIGITS2[201] =
    "0001020304050607080910111213141516171819"
    "2021222324252627282930313233343536373839"
    "4041424344454647484950515253545556575859"
    "6061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* 10^0 .. 10^19: a number's digit count from its bit length (digits10). */
static const unsigned long long POW10[20] = {1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL,
    10000000ULL, 100000000ULL, 1000000000ULL, 10000000000ULL, 100000000000ULL, 1000000000000ULL,
    10000000000000ULL, 100000000000000ULL, 1000000000000000ULL, 10000000000000000ULL,
    100000000000000000ULL, 1000000000000000000ULL, 10000000000000000000ULL};

/* Decimal digits of u (1..20): floor(bits * log10 2) is the count or one short of it (u | 1
 * has the digits of u, and 0 has one). */
static inline int digits10(unsigned long long u) {
    u |= 1;
    int t = ((64 - __builtin_clzll(u)) * 1233) >> 12;
    return t + 1 - (u < POW10[t]);
}

/* Append v in decimal. Serializers call it for every integer they write (a run's history
 * record has 16, ~20 a tools/call), so it formats by hand, two digits at a time, instead of
 * through snprintf, straight into the buffer once its length is known (no copy through a
 * temporary and a memcpy call). */
bool gg_strbuf_put_int(gg_strbuf *b, long long v) {
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    size_t n = (size_t)digits10(u) + (v < 0);
    if (!gg_strbuf_reserve(b, n)) return false;
    char *p = b->data + b->len + n;
    *p = '\0';
    /* four digits a 64-bit division (the history's epoch milliseconds have 13), then two
     * at a time in 32 bits */
    while (u >= 10000) {
        unsigned r = (unsigned)(u % 10000);
        u /= 10000;
        p -= 4;
        memcpy(p, DIGITS2 + 2 * (r / 100), 2);
        memcpy(p + 2, DIGITS2 + 2 * (r % 100), 2);
    }
    unsigned w = (unsigned)u;
    if (w >= 100) {
        p -= 2;
        memcpy(p, DIGITS2 + 2 * (w % 100), 2);
        w /= 100;
    }
    if (w >= 10) {
        p -= 2;
        memcpy(p, DIGITS2 + 2 * w, 2);
    } else {
        *--p = (char)('0' + w);
    }
    if (v < 0) *--p = '-';
    b->len += n;
    return true;
}

/* Value of four hex digits (either case), -1 when one is not a hex digit; s must have 4
 * readable bytes. Shared by the JSON readers' \uXXXX escapes. */
int gg_hex4(const char *s) {
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= c - '0';
        else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
        else return -1;
    }
    return v;
}
