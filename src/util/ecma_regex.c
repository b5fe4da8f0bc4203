/* ecma_regex.c — ECMAScript (JavaScript) regular expression syntax rewritten for PCRE2.
 *
 * JSONata regexes and JSON Schema "pattern"s are both ECMA-262 regexes; PCRE2 differs
 * where it matters:
 *   - "\s" is Unicode White_Space plus U+FEFF (not U+0085), "\S" its complement; PCRE2
 *     without UCP has an ASCII \s (and with UCP a different set plus Unicode \d/\w, which
 *     JavaScript keeps ASCII). Both are spelled out as classes, inside a class too: "[\S]"
 *     is written as the ranges of the complement, as no class can be negated within one.
 *   - "." excludes exactly \n, \r, U+2028 and U+2029 (PCRE2's "." only the newline).
 *   - "[" inside a class is a literal (PCRE2 would read "[:alpha:]" as a POSIX class).
 * The rest are compile options the caller passes (see util.h). */
#include <string.h>

#include "util/util.h"

/* (with PCRE2_ALT_BSUX \uhhhh is read as in JavaScript; U+10FFFF is written as its UTF-8 bytes) */
#define JS_SPACE "\\t\\n\\x0b\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
#define JS_NONSPACE "\\x00-\\x08\\x0e-\\x1f\\x21-\\x9f\\u00a1-\\u167f\\u1681-\\u1fff\\u200b-\\u2027" \
                    "\\u202a-\\u202e\\u2030-\\u205e\\u2060-\\u2fff\\u3001-\\ufefe\\uff00-\xf4\x8f\xbf\xbf"
#define JS_DOT "[^\\n\\r\\u2028\\u2029]"

/* One escape (backslash and d) into b. */
static void put_escape(gg_strbuf *b, char d, bool in_class) {
    if (d == 's') gg_strbuf_puts(b, in_class ? JS_SPACE : "[" JS_SPACE "]");
    else if (d == 'S') gg_strbuf_puts(b, in_class ? JS_NONSPACE : "[^" JS_SPACE "]");
    else {
        gg_strbuf_putc(b, '\\');
        gg_strbuf_putc(b, d);
    }
}

char *gg_ecma_regex_to_pcre2(const char *src, size_t len, size_t *outlen) {
    gg_strbuf b = GG_STRBUF_INIT;
    bool in_class = false;
    for (size_t i = 0; i < len; i++) {
        char c = src[i];
        if (c == '\\' && i + 1 < len) {
            put_escape(&b, src[++i], in_class);
        } else if (in_class) {
            if (c == ']') in_class = false;
            if (c == '[') gg_strbuf_puts(&b, "\\[");
            else gg_strbuf_putc(&b, c);
        } else if (c == '[') {
            in_class = true;
            gg_strbuf_putc(&b, c);
            if (i + 1 < len && src[i + 1] == '^') gg_strbuf_putc(&b, src[++i]);
        } else if (c == '.') {
            gg_strbuf_puts(&b, JS_DOT);
        } else {
            gg_strbuf_putc(&b, c);
        }
    }
    if (outlen) *outlen = b.len;
    if (b.oom) {
        gg_strbuf_free(&b);
        return NULL;
    }
    return b.data ? gg_strbuf_take(&b) : strdup("");
}
