/* suspicious.c — see suspicious.h. */
#include "util/suspicious.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/util.h"

#define SUSPICIOUS_MAX_DEPTH 64 /* schemas nest; a deeper value is not walked further */

bool gg_suspicious_cp(uint32_t cp) {
    return (cp >= 0xE0000 && cp <= 0xE007F) || (cp >= 0x200B && cp <= 0x200F) || cp == 0x2060 || cp == 0xFEFF ||
           (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

/* The code point of the well-formed sequence of w bytes at p. */
static uint32_t decode(const unsigned char *p, size_t w) {
    uint32_t cp = w == 1 ? p[0] : w == 2 ? p[0] & 0x1Fu : w == 3 ? p[0] & 0x0Fu : p[0] & 0x07u;
    for (size_t k = 1; k < w; k++) cp = (cp << 6) | (p[k] & 0x3Fu);
    return cp;
}

size_t gg_suspicious_scan(const char *s, size_t n, uint32_t *first) {
    const unsigned char *p = (const unsigned char *)s;
    size_t count = 0;
    for (size_t i = 0; p && i < n;) {
        if (p[i] < 0x80) { /* the common case: nothing to decode */
            i++;
            continue;
        }
        size_t w = gg_utf8_len(p + i, n - i);
        if (!w) {
            i++;
            continue;
        }
        uint32_t cp = decode(p + i, w);
        if (gg_suspicious_cp(cp) && count++ == 0 && first) *first = cp;
        i += w;
    }
    return count;
}

typedef struct walk {
    size_t count;
    uint32_t *first;
    char *where;
    size_t where_size;
} walk;

static void note(walk *w, const char *s, size_t n, const char *path) {
    uint32_t cp = 0;
    size_t k = gg_suspicious_scan(s, n, &cp);
    if (!k) return;
    if (!w->count) {
        if (w->first) *w->first = cp;
        if (w->where && w->where_size) snprintf(w->where, w->where_size, "%s", *path ? path : "/");
    }
    w->count += k;
}

static void walk_value(walk *w, const json_t *v, char *path, size_t len, size_t cap, int depth) {
    if (depth > SUSPICIOUS_MAX_DEPTH) return;
    if (json_is_string(v)) {
        note(w, json_string_value(v), json_string_length(v), path);
    } else if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x) {
            int m = snprintf(path + len, cap - len, "/%s", k);
            size_t nl = m < 0 || (size_t)m >= cap - len ? len : len + (size_t)m; /* too deep a path: the parent's */
            note(w, k, strlen(k), path);
            walk_value(w, x, path, nl, cap, depth + 1);
            path[len] = 0;
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) {
            int m = snprintf(path + len, cap - len, "/%zu", i);
            size_t nl = m < 0 || (size_t)m >= cap - len ? len : len + (size_t)m;
            walk_value(w, x, path, nl, cap, depth + 1);
            path[len] = 0;
        }
    }
}

size_t gg_suspicious_json(const json_t *v, uint32_t *first, char *where, size_t where_size) {
    char path[512] = "";
    walk w = {0, first, where, where_size};
    if (where && where_size) where[0] = 0;
    walk_value(&w, v, path, 0, sizeof path, 0);
    return w.count;
}

char *gg_suspicious_escape(const char *s, size_t n) {
    gg_strbuf b = GG_STRBUF_INIT;
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t w = p[i] < 0x80 ? 1 : gg_utf8_len(p + i, n - i);
        if (!w) w = 1; /* an invalid byte passes as it is */
        uint32_t cp = w > 1 ? decode(p + i, w) : p[i];
        if (w > 1 && gg_suspicious_cp(cp)) gg_strbuf_printf(&b, "\xe2\x9f\xa8U+%04X\xe2\x9f\xa9", (unsigned)cp);
        else gg_strbuf_append(&b, s + i, w);
        i += w;
    }
    if (b.oom) {
        gg_strbuf_free(&b);
        return NULL;
    }
    if (!b.data) return strdup("");
    return gg_strbuf_take(&b);
}
