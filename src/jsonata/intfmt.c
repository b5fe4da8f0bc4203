/* intfmt.c — XPath format-integer pictures as the reference implements them: decimal digit
 * patterns (any Unicode digit family, grouping separators, ordinals), roman numerals,
 * alphabetic sequences and English words; plus the inverse parse ($parseInteger and the
 * date/time picture components). */
#include "jsonata/fnlib.h"
#include "jsonata/jsonata.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Zero digits of the Unicode decimal digit families (general category Nd). */
static const uint32_t DIGIT_ZEROS[] = {
    0x30, 0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6,
    0xD66, 0xDE6, 0xE50, 0xED0, 0xF20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0,
    0x1A80, 0x1A90, 0x1B50, 0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0,
    0xAA50, 0xABF0, 0xFF10, 0x104A0, 0x11066, 0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450,
    0x114D0, 0x11650, 0x116C0, 0x11730, 0x118E0, 0x16A60, 0x16B50, 0x1D7CE, 0x1D7D8,
    0x1D7E2, 0x1D7EC, 0x1D7F6, 0x1E950};

/* Returns the family's zero when cp is a decimal digit, else 0. */
static uint32_t digit_zero(uint32_t cp) {
    if (cp < 0x660) return cp >= '0' && cp <= '9' ? '0' : 0;
    for (size_t i = 0; i < sizeof DIGIT_ZEROS / sizeof DIGIT_ZEROS[0]; i++)
        if (cp >= DIGIT_ZEROS[i] && cp < DIGIT_ZEROS[i] + 10) return DIGIT_ZEROS[i];
    return 0;
}

bool jn_int_picture_parse(const char *pic, size_t n, jn_int_picture *p, gg_error *err) {
    /* the group arrays are only read up to ngroups, so they need no clearing */
    p->kind = JN_INT_DECIMAL;
    p->letter_case = JN_CASE_LOWER;
    p->ordinal = p->regular = false;
    p->mandatory = p->optional = p->ngroups = 0;
    p->zero = '0';
    size_t end = n;
    for (size_t i = n; i > 0; i--) /* modifiers follow the last ';' */
        if (pic[i - 1] == ';') { end = i - 1; break; }
    if (end < n) {
        for (size_t i = end + 1; i < n; i++)
            if (pic[i] == 'o') p->ordinal = true;
    }
    if (end == 1 && (pic[0] == 'A' || pic[0] == 'a')) {
        p->kind = JN_INT_LETTERS;
        p->letter_case = pic[0] == 'A' ? JN_CASE_UPPER : JN_CASE_LOWER;
        return true;
    }
    if (end == 1 && (pic[0] == 'I' || pic[0] == 'i')) {
        p->kind = JN_INT_ROMAN;
        p->letter_case = pic[0] == 'I' ? JN_CASE_UPPER : JN_CASE_LOWER;
        return true;
    }
    if ((end == 1 && (pic[0] == 'W' || pic[0] == 'w')) || (end == 2 && !memcmp(pic, "Ww", 2))) {
        p->kind = JN_INT_WORDS;
        p->letter_case = end == 2 ? JN_CASE_TITLE : pic[0] == 'W' ? JN_CASE_UPPER : JN_CASE_LOWER;
        return true;
    }
    p->kind = JN_INT_DECIMAL;
    uint32_t zero = 0;
    int count = 0; /* digits and '#' seen so far (left to right) */
    int gpos_left[32];
    size_t i = 0;
    while (i < end) {
        uint32_t cp = jn_utf8_next(pic, end, &i);
        uint32_t z = digit_zero(cp);
        if (cp == '#') { p->optional++; count++; }
        else if (z) {
            if (zero && z != zero) {
                gg_error_set(err, "D3131", "In a decimal digit pattern, all digits must be from the same decimal group");
                return false;
            }
            zero = z;
            p->mandatory++;
            count++;
        } else if (p->ngroups < 32) {
            gpos_left[p->ngroups] = count;
            p->group_ch[p->ngroups++] = cp;
        }
    }
    if (!zero) {
        gg_error_set(err, "D3130", "Formatting or parsing an integer as a sequence starting with \"%.*s\" is not supported by this implementation", (int)end, pic);
        return false;
    }
    p->zero = zero;
    /* positions from the right, rightmost separator first */
    for (int k = 0; k < p->ngroups / 2; k++) {
        int t = gpos_left[k]; gpos_left[k] = gpos_left[p->ngroups - 1 - k]; gpos_left[p->ngroups - 1 - k] = t;
        uint32_t c = p->group_ch[k]; p->group_ch[k] = p->group_ch[p->ngroups - 1 - k]; p->group_ch[p->ngroups - 1 - k] = c;
    }
    for (int k = 0; k < p->ngroups; k++) p->group_pos[k] = count - gpos_left[k];
    p->regular = p->ngroups > 0 && p->group_pos[0] > 0;
    for (int k = 0; k < p->ngroups && p->regular; k++)
        if (p->group_ch[k] != p->group_ch[0] || p->group_pos[k] != (k + 1) * p->group_pos[0])
            p->regular = false;
    return true;
}

static const char *const ONES[] = {"zero", "one", "two", "three", "four", "five", "six", "seven",
                             "eight", "nine", "ten", "eleven", "twelve", "thirteen",
                             "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
                             "nineteen"};
static const char *const TENS[] = {"", "ten", "twenty", "thirty", "forty", "fifty", "sixty",
                             "seventy", "eighty", "ninety"};
static const struct { double v; const char *w; } MAGS[] = {
    {1e12, "trillion"}, {1e9, "billion"}, {1e6, "million"}, {1e3, "thousand"}};

static void words_rec(double n, gg_strbuf *b, int depth) {
    if (depth > 64) return;
    if (n < 20) { gg_strbuf_puts(b, ONES[(int)n]); return; }
    if (n < 100) {
        int t = (int)n / 10, o = (int)n % 10;
        gg_strbuf_puts(b, TENS[t]);
        if (o) { gg_strbuf_putc(b, '-'); gg_strbuf_puts(b, ONES[o]); }
        return;
    }
    if (n < 1000) {
        int h = (int)n / 100, r = (int)n % 100;
        gg_strbuf_puts(b, ONES[h]);
        gg_strbuf_puts(b, " hundred");
        if (r) { gg_strbuf_puts(b, " and "); words_rec(r, b, depth + 1); }
        return;
    }
    size_t m = 0;
    while (m < 3 && n < MAGS[m].v) m++;
    double q = floor(n / MAGS[m].v);
    double r = n - q * MAGS[m].v;
    words_rec(q, b, depth + 1);
    gg_strbuf_putc(b, ' ');
    gg_strbuf_puts(b, MAGS[m].w);
    if (r > 0) {
        gg_strbuf_puts(b, r < 100 ? " and " : ", ");
        words_rec(r, b, depth + 1);
    }
}

/* English ordinal of a cardinal word. */
static void ordinal_word(const char *w, size_t n, gg_strbuf *b) {
    static const struct { const char *c, *o; } IRR[] = {
        {"one", "first"}, {"two", "second"}, {"three", "third"}, {"five", "fifth"},
        {"eight", "eighth"}, {"nine", "ninth"}, {"twelve", "twelfth"}};
    for (size_t i = 0; i < sizeof IRR / sizeof IRR[0]; i++)
        if (strlen(IRR[i].c) == n && !memcmp(IRR[i].c, w, n)) { gg_strbuf_puts(b, IRR[i].o); return; }
    if (n && w[n - 1] == 'y') { gg_strbuf_append(b, w, n - 1); gg_strbuf_puts(b, "ieth"); return; }
    gg_strbuf_append(b, w, n);
    gg_strbuf_puts(b, "th");
}

void jn_words(double v, bool ordinal, jn_int_case c, gg_strbuf *out) {
    gg_strbuf b = GG_STRBUF_INIT;
    words_rec(v, &b, 0);
    if (b.oom) { out->oom = true; gg_strbuf_free(&b); return; }
    char *s = b.data ? b.data : (char *)"";
    size_t len = b.len;
    size_t last = 0;
    for (size_t i = 0; i < len; i++)
        if (s[i] == ' ' || s[i] == '-') last = i + 1;
    size_t start = out->len;
    gg_strbuf_append(out, s, last);
    if (ordinal) ordinal_word(s + last, len - last, out);
    else gg_strbuf_append(out, s + last, len - last);
    gg_strbuf_free(&b);
    if (out->oom) return;
    char *o = out->data + start;
    size_t olen = out->len - start;
    for (size_t i = 0; i < olen; i++) {
        bool word_start = i == 0 || o[i - 1] == ' ' || o[i - 1] == '-';
        if (c == JN_CASE_UPPER) o[i] = (char)(o[i] >= 'a' && o[i] <= 'z' ? o[i] - 32 : o[i]);
        else if (c == JN_CASE_TITLE && word_start && o[i] >= 'a' && o[i] <= 'z' &&
                 !(olen - i >= 4 && !memcmp(o + i, "and ", 4)))
            o[i] = (char)(o[i] - 32);
    }
}

static void roman(double v, bool upper, gg_strbuf *out) {
    static const struct { int v; const char *s; } R[] = {
        {1000, "m"}, {900, "cm"}, {500, "d"}, {400, "cd"}, {100, "c"}, {90, "xc"},
        {50, "l"}, {40, "xl"}, {10, "x"}, {9, "ix"}, {5, "v"}, {4, "iv"}, {1, "i"}};
    if (v > 1e6) v = 1e6; /* bound the output: a million M's is already absurd */
    long n = (long)v;
    for (size_t i = 0; i < 13; i++)
        while (n >= R[i].v) {
            for (const char *p = R[i].s; *p; p++) gg_strbuf_putc(out, upper ? (char)(*p - 32) : *p);
            n -= R[i].v;
        }
}

static void letters(double v, bool upper, gg_strbuf *out) {
    char tmp[32];
    int k = 0;
    double n = v;
    while (n > 0 && k < 31) {
        n -= 1;
        double r = fmod(n, 26);
        tmp[k++] = (char)((upper ? 'A' : 'a') + (int)r);
        n = floor(n / 26);
    }
    while (k > 0) gg_strbuf_putc(out, tmp[--k]);
}

static const char *ordinal_suffix(const char *digits, size_t n) {
    int last = n ? digits[n - 1] - '0' : 0;
    int tens = n > 1 ? digits[n - 2] - '0' : 0;
    if (tens == 1) return "th";
    return last == 1 ? "st" : last == 2 ? "nd" : last == 3 ? "rd" : "th";
}

static void decimal(double v, const jn_int_picture *p, gg_strbuf *out) {
    char digits[64];
    jsonata_format_double(v, digits, sizeof digits);
    size_t nd = strlen(digits);
    bool plain = strspn(digits, "0123456789") == nd;
    int total = (int)nd < p->mandatory ? p->mandatory : (int)nd;
    /* code points of the result, built right to left: every digit can be preceded by a
     * regular separator, plus the picture's irregular ones */
    size_t cap = 2 * (size_t)total + (size_t)p->ngroups + 4;
    uint32_t small[256], *buf = cap <= 256 ? small : malloc(cap * sizeof *buf);
    if (!buf) { out->oom = true; return; }
    size_t k = 0;
    int count = 0;
    if (plain && !p->regular) /* separators right of every digit */
        for (int g = 0; g < p->ngroups; g++)
            if (p->group_pos[g] == 0) buf[k++] = p->group_ch[g];
    for (int i = total - 1; i >= 0; i--) {
        int idx = i - (total - (int)nd);
        char c = idx >= 0 ? digits[idx] : '0';
        if (plain && count > 0) {
            if (p->regular) {
                if (count % p->group_pos[0] == 0) buf[k++] = p->group_ch[0];
            } else {
                for (int g = 0; g < p->ngroups; g++)
                    if (count == p->group_pos[g]) buf[k++] = p->group_ch[g];
            }
        }
        buf[k++] = (c >= '0' && c <= '9') ? p->zero + (uint32_t)(c - '0') : (uint32_t)(unsigned char)c;
        count++;
    }
    if (plain && !p->regular && count > 0) /* irregular separators left of every digit */
        for (int g = 0; g < p->ngroups; g++)
            if (p->group_pos[g] == count) buf[k++] = p->group_ch[g];
    while (k > 0) jn_utf8_put(out, buf[--k]);
    if (buf != small) free(buf);
    if (p->ordinal) gg_strbuf_puts(out, ordinal_suffix(digits, nd));
}

void jn_int_format(double v, const jn_int_picture *p, gg_strbuf *out) {
    v = floor(v);
    if (v < 0) { gg_strbuf_putc(out, '-'); v = -v; }
    switch (p->kind) {
    case JN_INT_LETTERS: letters(v, p->letter_case == JN_CASE_UPPER, out); break;
    case JN_INT_ROMAN: roman(v, p->letter_case == JN_CASE_UPPER, out); break;
    case JN_INT_WORDS: jn_words(v, p->ordinal, p->letter_case, out); break;
    case JN_INT_DECIMAL: decimal(v, p, out); break;
    }
}

bool jn_format_integer(double v, const char *picture, gg_strbuf *out, gg_error *err) {
    jn_int_picture p;
    if (!jn_int_picture_parse(picture, strlen(picture), &p, err)) return false;
    jn_int_format(v, &p, out);
    return !out->oom;
}

/* ---- parsing ---- */

static int roman_val(char c, bool any_case) {
    if (!any_case && c >= 'a' && c <= 'z') return 0;
    switch (c | 0x20) {
    case 'i': return 1; case 'v': return 5; case 'x': return 10; case 'l': return 50;
    case 'c': return 100; case 'd': return 500; case 'm': return 1000;
    default: return 0;
    }
}

/* An upper-case picture reads only upper-case numerals; a lower-case one reads both. */
static size_t parse_roman(const char *s, size_t n, bool any_case, double *out) {
    size_t i = 0;
    double total = 0;
    while (i < n && roman_val(s[i], any_case)) i++;
    for (size_t k = 0; k < i; k++) {
        int v = roman_val(s[k], any_case);
        if (k + 1 < i && roman_val(s[k + 1], any_case) > v) total -= v;
        else total += v;
    }
    *out = total;
    return i == 0 && n == 0 ? 0 : i;
}

static size_t parse_letters(const char *s, size_t n, bool upper, double *out) {
    size_t i = 0;
    double total = 0;
    char a = upper ? 'A' : 'a';
    while (i < n && s[i] >= a && s[i] < a + 26) { total = total * 26 + (s[i] - a + 1); i++; }
    *out = total;
    return i;
}

/* Value of a (lower-case) number word, cardinal or ordinal; -1 when unknown. */
static double word_value(const char *w, size_t n) {
    char buf[32];
    if (n == 0 || n >= sizeof buf) return -1;
    for (size_t i = 0; i < n; i++) buf[i] = (char)(w[i] >= 'A' && w[i] <= 'Z' ? w[i] + 32 : w[i]);
    buf[n] = '\0';
    for (int i = 0; i < 20; i++) if (!strcmp(buf, ONES[i])) return i;
    for (int i = 1; i < 10; i++) if (!strcmp(buf, TENS[i])) return i * 10;
    if (!strcmp(buf, "hundred")) return 100;
    for (int i = 0; i < 4; i++) if (!strcmp(buf, MAGS[i].w)) return MAGS[i].v;
    /* ordinals: compare against each cardinal's ordinal form */
    for (int v = 0; v < 20 + 8 + 1 + 4; v++) {
        double val;
        const char *card;
        if (v < 20) { card = ONES[v]; val = v; }
        else if (v < 28) { card = TENS[v - 18]; val = (v - 18) * 10; }
        else if (v == 28) { card = "hundred"; val = 100; }
        else { card = MAGS[v - 29].w; val = MAGS[v - 29].v; }
        gg_strbuf o = GG_STRBUF_INIT;
        ordinal_word(card, strlen(card), &o);
        bool eq = o.data && !strcmp(o.data, buf);
        gg_strbuf_free(&o);
        if (eq) return val;
    }
    return -1;
}

static size_t parse_words(const char *s, size_t n, double *out) {
    double parts[16], tags[16];
    int np = 0;
    double cur = 0;
    size_t i = 0, consumed = 0;
    bool any = false;
    while (i < n) {
        while (i < n && (s[i] == ' ' || s[i] == ',' || s[i] == '-')) i++;
        size_t st = i;
        while (i < n && ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z'))) i++;
        if (i == st) break;
        if (i - st == 3 && !strncmp(s + st, "and", 3)) continue;
        if (i - st == 3 && !strncmp(s + st, "AND", 3)) continue;
        if (i - st == 3 && !strncmp(s + st, "And", 3)) continue;
        double v = word_value(s + st, i - st);
        if (v < 0) { i = st; break; }
        any = true;
        consumed = i;
        if (v == 100) cur = (cur ? cur : 1) * 100;
        else if (v >= 1000) {
            double sum = cur ? cur : (np ? 0 : 1);
            while (np > 0 && tags[np - 1] <= v) sum += parts[--np];
            if (sum == 0) sum = 1;
            if (np < 16) { parts[np] = sum * v; tags[np] = v; np++; }
            cur = 0;
        } else cur += v;
    }
    double total = cur;
    for (int k = 0; k < np; k++) total += parts[k];
    *out = total;
    return any ? consumed : 0;
}

size_t jn_int_parse_prefix(const char *s, size_t n, const jn_int_picture *p, double *out) {
    switch (p->kind) {
    case JN_INT_ROMAN: return parse_roman(s, n, p->letter_case == JN_CASE_LOWER, out);
    case JN_INT_LETTERS: return parse_letters(s, n, p->letter_case == JN_CASE_UPPER, out);
    case JN_INT_WORDS: return parse_words(s, n, out);
    case JN_INT_DECIMAL: break;
    }
    size_t i = 0;
    bool neg = false;
    if (i < n && s[i] == '-') { neg = true; i++; }
    double v = 0;
    int digits = 0;
    size_t last = 0;
    while (i < n) {
        size_t j = i;
        uint32_t cp = jn_utf8_next(s, n, &j);
        if (cp >= p->zero && cp < p->zero + 10) {
            v = v * 10 + (cp - p->zero);
            digits++;
            i = j;
            last = i;
            continue;
        }
        bool sep = false;
        for (int g = 0; g < p->ngroups; g++) if (p->group_ch[g] == cp) sep = true;
        if (!sep || digits == 0) break;
        i = j;
    }
    if (!digits) return 0;
    if (p->ordinal && last + 2 <= n) {
        const char *suf[] = {"st", "nd", "rd", "th"};
        for (int k = 0; k < 4; k++)
            if (!strncmp(s + last, suf[k], 2)) { last += 2; break; }
    }
    *out = neg ? -v : v;
    return last;
}

bool jn_parse_integer(const char *s, const char *picture, double *out, bool *found,
                      gg_error *err) {
    jn_int_picture p;
    *found = false;
    if (!jn_int_picture_parse(picture, strlen(picture), &p, err)) return false;
    size_t n = strlen(s);
    double v = 0;
    if (p.kind == JN_INT_LETTERS) {
        /* the reference reads every character as a digit relative to 'a' / 'A' */
        uint32_t base = p.letter_case == JN_CASE_UPPER ? 'A' : 'a';
        size_t i = 0;
        while (i < n) v = v * 26 + ((double)jn_utf8_next(s, n, &i) - base + 1);
        *out = v;
        *found = true;
        return true;
    }
    size_t used = jn_int_parse_prefix(s, n, &p, &v);
    if (used == 0 && !(p.kind == JN_INT_ROMAN && n == 0)) return true;
    *out = v;
    *found = true;
    return true;
}
