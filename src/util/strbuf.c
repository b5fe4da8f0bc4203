/* strbuf.c — growable byte buffer with a sticky out-of-memory flag, so long chains of
 * appends need one check at the end instead of one per call. */
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool gg_strbuf_reserve(gg_strbuf *b, size_t extra) {
    if (b->oom) return false;
    if (b->len + extra + 1 <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra + 1) {
        if (cap > ((size_t)-1) / 2) { b->oom = true; return false; }
        cap *= 2;
    }
    char *d = realloc(b->data, cap);
    if (!d) { b->oom = true; return false; }
    b->data = d;
    b->cap = cap;
    return true;
}

bool gg_strbuf_append(gg_strbuf *b, const char *s, size_t n) {
    if (!gg_strbuf_reserve(b, n)) return false;
    if (n) memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
    return true;
}

bool gg_strbuf_puts(gg_strbuf *b, const char *s) { return gg_strbuf_append(b, s, strlen(s)); }

bool gg_strbuf_putc(gg_strbuf *b, char c) { return gg_strbuf_append(b, &c, 1); }

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
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->oom = false;
}

/* Append v in decimal. Serializers call it for every integer they write, so it formats by
 * hand instead of through snprintf. */
bool gg_strbuf_put_int(gg_strbuf *b, long long v) {
    char tmp[24], out[24];
    size_t n = 0, k = 0;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do tmp[n++] = (char)('0' + u % 10);
    while ((u /= 10) != 0);
    if (v < 0) out[k++] = '-';
    while (n) out[k++] = tmp[--n];
    return gg_strbuf_append(b, out, k);
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

/* Append s (n bytes, UTF-8) escaped for the inside of a JSON string, as JSON.stringify and
 * jansson escape it: quote, backslash, \b \f \n \r \t, other controls as \u00XX; every
 * other byte as it is. False once b ran out of memory. Shared by every JSON writer. */
bool gg_strbuf_json_escape(gg_strbuf *b, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    if (!gg_strbuf_reserve(b, n + n / 8 + 16)) return false;
    size_t run = 0; /* bytes copied verbatim in one go */
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch >= 0x20 && ch != '"' && ch != '\\') continue;
        gg_strbuf_append(b, s + run, i - run);
        run = i + 1;
        char esc[7] = {'\\', 0, 0, 0, 0, 0, 0};
        size_t en = 2;
        switch (ch) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        default:
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = hex[ch >> 4];
            esc[5] = hex[ch & 15];
            en = 6;
        }
        gg_strbuf_append(b, esc, en);
    }
    gg_strbuf_append(b, s + run, n - run);
    return !b->oom;
}
