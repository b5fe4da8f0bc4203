/* utf16.c — strings measured and ordered as JavaScript does, in UTF-16 code units, while
 * they are kept in UTF-8 (JSONata's $length and sort, JSON Logic's length, substr and
 * comparisons). A supplementary character (4 UTF-8 bytes) is two code units. */
#include "util/util.h"

size_t gg_utf16_len(const char *s, size_t len) {
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c & 0xC0) != 0x80) n += c >= 0xF0 ? 2 : 1;
    }
    return n;
}

/* Byte order equals code-unit order up to the first differing character; there, a
 * supplementary character's high surrogate (0xD800..) sorts below U+E000..U+FFFF. */
int gg_utf16_cmp(const char *a, size_t alen, const char *b, size_t blen) {
    size_t i = 0, m = alen < blen ? alen : blen;
    while (i < m && a[i] == b[i]) i++;
    if (i == m) return alen == blen ? 0 : (alen < blen ? -1 : 1);
    size_t start = i;
    while (start > 0 && ((unsigned char)a[start] & 0xC0) == 0x80) start--;
    const unsigned char *pa = (const unsigned char *)a + start, *pb = (const unsigned char *)b + start;
    size_t na = gg_utf8_lead_len(*pa), nb = gg_utf8_lead_len(*pb);
    if (start + na > alen) na = alen - start;
    if (start + nb > blen) nb = blen - start;
    uint32_t ca = gg_utf8_decode(pa, na), cb = gg_utf8_decode(pb, nb);
    uint32_t ua = ca >= 0x10000 ? 0xD800 + ((ca - 0x10000) >> 10) : ca;
    uint32_t ub = cb >= 0x10000 ? 0xD800 + ((cb - 0x10000) >> 10) : cb;
    if (ua != ub) return ua < ub ? -1 : 1;
    return ca < cb ? -1 : 1;
}
