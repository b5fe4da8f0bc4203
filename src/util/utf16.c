/* utf16.c — strings measured and ordered as JavaScript does, in UTF-16 code units, while
 * they are kept in UTF-8 (JSONata's $length and sort, JSON Logic's length, substr and
 * comparisons). A supplementary character (4 UTF-8 bytes) is two code units. */
#include "util/util.h"

/* Bytes of the sequence led by c; a stray continuation byte counts as one, so a walk over
 * malformed text still advances. */
static size_t lead_len(unsigned char c) {
    if (c < 0x80) return 1;
    if (c >= 0xF0) return 4;
    if (c >= 0xE0) return 3;
    if (c >= 0xC0) return 2;
    return 1;
}

static uint32_t decode(const unsigned char *s, size_t n) {
    switch (n) {
    case 1: return s[0];
    case 2: return ((uint32_t)(s[0] & 0x1F) << 6) | (s[1] & 0x3F);
    case 3: return ((uint32_t)(s[0] & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
    default:
        return ((uint32_t)(s[0] & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) | ((uint32_t)(s[2] & 0x3F) << 6) |
               (s[3] & 0x3F);
    }
}

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
    size_t na = lead_len(*pa), nb = lead_len(*pb);
    if (start + na > alen) na = alen - start;
    if (start + nb > blen) nb = blen - start;
    uint32_t ca = decode(pa, na), cb = decode(pb, nb);
    uint32_t ua = ca >= 0x10000 ? 0xD800 + ((ca - 0x10000) >> 10) : ca;
    uint32_t ub = cb >= 0x10000 ? 0xD800 + ((cb - 0x10000) >> 10) : cb;
    if (ua != ub) return ua < ub ? -1 : 1;
    return ca < cb ? -1 : 1;
}
