/* textutil.c — UTF-8 walking, case mapping, URL and base64 coding for the string
 * functions, with JavaScript's (and so the reference's) rules. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "jsonata/fnlib.h"

#include <locale.h>
#include <pthread.h>
#include <string.h>
#include <wctype.h>

/* Decode one code point; malformed or overlong sequences yield U+FFFD and skip a byte.
 * Surrogate code points encoded directly (CESU-style, as a lexer may produce for "\ud800")
 * are returned as-is so callers can detect them. */
uint32_t jn_utf8_next(const char *str, size_t n, size_t *i) {
    const unsigned char *s = (const unsigned char *)str;
    size_t k = *i;
    unsigned char c = s[k];
    if (c < 0x80) { *i = k + 1; return c; }
    int len = (c >= 0xF0 && c < 0xF8) ? 4 : (c >= 0xE0) ? 3 : (c >= 0xC2 && c < 0xE0) ? 2 : 0;
    if (len == 0 || k + (size_t)len > n) { *i = k + 1; return 0xFFFD; }
    uint32_t cp = c & (0xFF >> (len + 1));
    for (int j = 1; j < len; j++) {
        if ((s[k + j] & 0xC0) != 0x80) { *i = k + 1; return 0xFFFD; }
        cp = (cp << 6) | (s[k + j] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))) {
        *i = k + 1;
        return 0xFFFD;
    }
    *i = k + (size_t)len;
    return cp;
}

void jn_utf8_put(gg_strbuf *b, uint32_t cp) {
    char t[4];
    gg_strbuf_append(b, t, gg_utf8_encode(cp, t));
}

/* Both walk code points exactly as jn_utf8_next does (an invalid byte counts as one
 * character), so counts and offsets always agree, even on malformed text. */
size_t jn_utf8_count(const char *s, size_t n) {
    size_t c = 0, i = 0;
    while (i < n) {
        if ((unsigned char)s[i] < 0x80) i++;
        else jn_utf8_next(s, n, &i);
        c++;
    }
    return c;
}

size_t jn_utf8_offset(const char *s, size_t n, size_t cp) {
    size_t i = 0;
    while (i < n && cp > 0) {
        if ((unsigned char)s[i] < 0x80) i++;
        else jn_utf8_next(s, n, &i);
        cp--;
    }
    return i;
}

/* The C.UTF-8 locale gives towupper_l/towlower_l Unicode's simple case mappings; it is
 * created once per process and never modified (read-only shared state). */
static locale_t g_utf8_locale;
static pthread_once_t g_utf8_once = PTHREAD_ONCE_INIT;
static void utf8_locale_init(void) {
    g_utf8_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
    if (!g_utf8_locale) g_utf8_locale = newlocale(LC_CTYPE_MASK, "en_US.UTF-8", (locale_t)0);
}

/* Code point ending just before byte offset at. */
static uint32_t prev_cp(const char *s, size_t at) {
    size_t k = at - 1;
    while (k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80) k--;
    return jn_utf8_next(s, at, &k);
}

bool jn_case_map(const char *s, size_t n, bool upper, gg_strbuf *out) {
    pthread_once(&g_utf8_once, utf8_locale_init);
    size_t i = 0;
    if (!gg_strbuf_reserve(out, n)) return false;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x80) { /* ASCII run: map in place in the reserved space */
            size_t st = i;
            while (i < n && (unsigned char)s[i] < 0x80) i++;
            if (!gg_strbuf_reserve(out, i - st)) return false;
            char *d = out->data + out->len;
            for (size_t k = st; k < i; k++) {
                char o = s[k];
                if (upper && o >= 'a' && o <= 'z') o = (char)(o - 32);
                else if (!upper && o >= 'A' && o <= 'Z') o = (char)(o + 32);
                *d++ = o;
            }
            out->len += i - st;
            out->data[out->len] = '\0';
            continue;
        }
        size_t at = i;
        uint32_t cp = jn_utf8_next(s, n, &i);
        if (upper && cp == 0xDF) { gg_strbuf_puts(out, "SS"); continue; }
        if (upper && cp >= 0xFB00 && cp <= 0xFB06) { /* Latin ligatures expand */
            static const char *const LIG[] = {"FF", "FI", "FL", "FFI", "FFL", "ST", "ST"};
            gg_strbuf_puts(out, LIG[cp - 0xFB00]);
            continue;
        }
        if (!upper && cp == 0x130) { gg_strbuf_puts(out, "i\xcc\x87"); continue; }
        if (!upper && cp == 0x3A3 && g_utf8_locale) {
            /* final sigma: after a letter and not before one */
            bool after = at > 0 && iswalpha_l((wint_t)prev_cp(s, at), g_utf8_locale);
            size_t j = i;
            bool before = j < n && iswalpha_l((wint_t)jn_utf8_next(s, n, &j), g_utf8_locale);
            jn_utf8_put(out, after && !before ? 0x3C2 : 0x3C3);
            continue;
        }
        if (g_utf8_locale)
            cp = (uint32_t)(upper ? towupper_l((wint_t)cp, g_utf8_locale)
                                  : towlower_l((wint_t)cp, g_utf8_locale));
        jn_utf8_put(out, cp);
    }
    return !out->oom;
}

static const char HEX[] = "0123456789ABCDEF";

/* Bytes encodeURIComponent leaves alone (bit 0) and those encodeURI also keeps (bit 1). */
static unsigned char url_class(unsigned char c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return 3;
    if (c && strchr("-_.!~*'()", c)) return 3;
    if (c && strchr(";,/?:@&=+$#", c)) return 2;
    return 0;
}

bool jn_url_encode(const char *s, size_t n, bool component, gg_strbuf *out) {
    unsigned char keep = component ? 1 : 2;
    size_t i = 0, run = 0;
    gg_strbuf_reserve(out, n + n / 2);
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x80 && (url_class(c) & keep)) { i++; continue; }
        gg_strbuf_append(out, s + run, i - run);
        size_t start = i;
        uint32_t cp = jn_utf8_next(s, n, &i);
        if ((cp >= 0xD800 && cp <= 0xDFFF) || (cp == 0xFFFD && i - start == 1 && c >= 0x80))
            return false; /* lone surrogate / malformed: URIError in JavaScript */
        for (size_t k = start; k < i; k++) {
            unsigned char b = (unsigned char)s[k];
            char t[3] = {'%', HEX[b >> 4], HEX[b & 15]};
            gg_strbuf_append(out, t, 3);
        }
        run = i;
    }
    gg_strbuf_append(out, s + run, n - run);
    return !out->oom;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int pct_byte(const char *s, size_t n, size_t i) {
    if (i + 3 > n || s[i] != '%') return -1;
    int h = hexval(s[i + 1]), l = hexval(s[i + 2]);
    return (h < 0 || l < 0) ? -1 : (h << 4) | l;
}

bool jn_url_decode(const char *s, size_t n, bool component, gg_strbuf *out) {
    static const char *const reserved = ";/?:@&=+$,#";
    size_t i = 0;
    gg_strbuf_reserve(out, n);
    while (i < n) {
        if (s[i] != '%') {
            const char *pct = memchr(s + i, '%', n - i);
            size_t to = pct ? (size_t)(pct - s) : n;
            gg_strbuf_append(out, s + i, to - i);
            i = to;
            continue;
        }
        int b = pct_byte(s, n, i);
        if (b < 0) return false;
        if (b < 0x80) {
            if (!component && b && strchr(reserved, b)) gg_strbuf_append(out, s + i, 3);
            else gg_strbuf_putc(out, (char)b);
            i += 3;
            continue;
        }
        int len = (b >= 0xF0 && b < 0xF8) ? 4 : (b >= 0xE0 && b < 0xF0) ? 3 : (b >= 0xC0 && b < 0xE0) ? 2 : 0;
        if (!len) return false;
        char bytes[4];
        bytes[0] = (char)b;
        for (int k = 1; k < len; k++) {
            int cb = pct_byte(s, n, i + 3 * (size_t)k);
            if (cb < 0 || (cb & 0xC0) != 0x80) return false;
            bytes[k] = (char)cb;
        }
        size_t j = 0;
        uint32_t cp = jn_utf8_next(bytes, (size_t)len, &j);
        if (j != (size_t)len || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        gg_strbuf_append(out, bytes, (size_t)len);
        i += 3 * (size_t)len;
    }
    return !out->oom;
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Each UTF-16 code unit contributes its low byte, which is what Node's latin1 ("binary")
 * conversion of a JavaScript string does. */
bool jn_base64_encode(const char *s, size_t n, gg_strbuf *out) {
    gg_strbuf bytes = GG_STRBUF_INIT;
    size_t i = 0;
    while (i < n) {
        uint32_t cp = jn_utf8_next(s, n, &i);
        if (cp >= 0x10000) {
            uint32_t v = cp - 0x10000;
            gg_strbuf_putc(&bytes, (char)((0xD800 | (v >> 10)) & 0xFF));
            gg_strbuf_putc(&bytes, (char)((0xDC00 | (v & 0x3FF)) & 0xFF));
        } else gg_strbuf_putc(&bytes, (char)(cp & 0xFF));
    }
    if (bytes.oom) { gg_strbuf_free(&bytes); return false; }
    const unsigned char *d = (const unsigned char *)bytes.data;
    for (size_t k = 0; k < bytes.len; k += 3) {
        size_t have = bytes.len - k < 3 ? bytes.len - k : 3;
        unsigned b0 = d[k], b1 = have > 1 ? d[k + 1] : 0, b2 = have > 2 ? d[k + 2] : 0;
        char t[4] = {B64[b0 >> 2], B64[((b0 & 3) << 4) | (b1 >> 4)],
                     have > 1 ? B64[((b1 & 15) << 2) | (b2 >> 6)] : '=',
                     have > 2 ? B64[b2 & 63] : '='};
        gg_strbuf_append(out, t, 4);
    }
    gg_strbuf_free(&bytes);
    return !out->oom;
}

/* Node's Buffer.from(s, 'base64') is lenient: it skips characters outside the alphabet
 * and stops at the first '='. */
bool jn_base64_decode(const char *s, size_t n, gg_strbuf *out) {
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int v;
        if (c == '=') break;
        if (c == '-') v = 62;
        else if (c == '_') v = 63;
        else {
            const char *p = c ? strchr(B64, c) : NULL;
            if (!p) continue;
            v = (int)(p - B64);
        }
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            jn_utf8_put(out, (acc >> bits) & 0xFF);
        }
    }
    return !out->oom;
}
