/* fnlib.h — private helpers of the JSONata function library: pure C text, number and
 * date/time formatting that needs no JSONata value type (so each piece is unit-testable).
 *
 * Ownership: every function appends to a caller-owned gg_strbuf or writes caller-owned
 * scalars; errors are reported through a caller-owned gg_error with the reference's code.
 */
#ifndef GG_JSONATA_FNLIB_H
#define GG_JSONATA_FNLIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "util/util.h"

/* ---- UTF-8 (textutil.c) ---- */
/* Decode the code point at s[*i] (n bytes total) and advance *i; invalid bytes decode as
 * U+FFFD one byte at a time. */
uint32_t jn_utf8_next(const char *s, size_t n, size_t *i);
void jn_utf8_put(gg_strbuf *b, uint32_t cp);
size_t jn_utf8_count(const char *s, size_t n);               /* code points */
size_t jn_utf8_offset(const char *s, size_t n, size_t cp);   /* byte offset of code point cp */
/* Unicode-aware case mapping the way String.prototype.toUpperCase/LowerCase do it for the
 * common scripts (full mapping of ß to SS). */
bool jn_case_map(const char *s, size_t n, bool upper, gg_strbuf *out);

/* ---- URL and base64 (textutil.c) ---- */
/* encodeURIComponent (component) / encodeURI; false when s holds a lone surrogate. */
bool jn_url_encode(const char *s, size_t n, bool component, gg_strbuf *out);
/* decodeURIComponent / decodeURI; false on a malformed escape. */
bool jn_url_decode(const char *s, size_t n, bool component, gg_strbuf *out);
/* The reference encodes each UTF-16 code unit's low byte (latin1) ... */
bool jn_base64_encode(const char *s, size_t n, gg_strbuf *out);
/* ... and decodes bytes to code points U+0000..U+00FF. */
bool jn_base64_decode(const char *s, size_t n, gg_strbuf *out);

/* ---- numbers (numfmt.c) ---- */
/* A decimal expansion of a finite double: digits[0..n) with the decimal point after
 * digit number `point` (may be <= 0 or > n). */
typedef struct jn_decimal {
    char d[32]; /* shortest round-trip digits (<= 17) plus a rounding carry */
    int n;
    int point;
    bool neg;
} jn_decimal;
void jn_decimal_from_double(double v, jn_decimal *dec);  /* shortest round-trip digits */
/* Round to `places` digits after the point (negative = left of it), half to even. */
void jn_decimal_round(jn_decimal *dec, int places);
double jn_decimal_to_double(const jn_decimal *dec);
/* $round(v, places) with the reference's half-to-even on the decimal representation. */
double jn_round_half_even(double v, int places);
/* Number.prototype.toString(radix) for an integer-valued double. */
bool jn_format_radix(double v, int radix, gg_strbuf *out);
/* XPath format-number. options: decimal-format overrides as (key, value) pairs, any may be
 * NULL. Errors D3080..D3093. */
typedef struct jn_decimal_format {
    const char *decimal_separator, *grouping_separator, *exponent_separator, *infinity,
        *minus_sign, *nan, *percent, *per_mille, *zero_digit, *digit, *pattern_separator;
} jn_decimal_format;
bool jn_format_number(double v, const char *picture, const jn_decimal_format *fmt,
                      gg_strbuf *out, gg_error *err);
/* The same in two halves, so a literal picture is analysed once, when its expression is
 * compiled (about 1,500 instructions a call): jn_numfmt_compile analyses a picture under
 * the default decimal format into *out (NULL when jn_format_number would fail on it,
 * whose error the call then raises; false when out of memory); jn_numfmt_format formats
 * v with it, given the same picture text (the sub-pictures' prefixes and suffixes are
 * byte ranges of it). */
typedef struct jn_numfmt jn_numfmt;
bool jn_numfmt_compile(const char *picture, jn_numfmt **out);
bool jn_numfmt_format(const jn_numfmt *nf, double v, const char *picture, gg_strbuf *out);
void jn_numfmt_free(jn_numfmt *nf);

/* ---- integers (intfmt.c) ---- */
/* XPath format-integer with the reference's picture handling (D3130, D3131). */
bool jn_format_integer(double v, const char *picture, gg_strbuf *out, gg_error *err);
/* Inverse of the above; *found false when the text holds no number. */
bool jn_parse_integer(const char *s, const char *picture, double *out, bool *found,
                      gg_error *err);
/* Helpers shared with date/time formatting. */
typedef enum { JN_INT_DECIMAL, JN_INT_ROMAN, JN_INT_LETTERS, JN_INT_WORDS } jn_int_kind;
typedef enum { JN_CASE_LOWER, JN_CASE_UPPER, JN_CASE_TITLE } jn_int_case;
typedef struct jn_int_picture {
    jn_int_kind kind;
    jn_int_case letter_case;
    bool ordinal;
    uint32_t zero;       /* zero digit of the decimal digit family */
    int mandatory;       /* mandatory digits */
    int optional;        /* '#' count */
    int ngroups;
    int group_pos[32];   /* positions counted from the right */
    uint32_t group_ch[32];
    bool regular;
} jn_int_picture;
bool jn_int_picture_parse(const char *pic, size_t n, jn_int_picture *p, gg_error *err);
void jn_int_format(double v, const jn_int_picture *p, gg_strbuf *out);
void jn_words(double v, bool ordinal, jn_int_case c, gg_strbuf *out);
/* Parse a prefix of s per picture; returns bytes consumed (0 = no match). */
size_t jn_int_parse_prefix(const char *s, size_t n, const jn_int_picture *p, double *out);

/* ---- date/time (datetime.c) ---- */
/* $fromMillis: picture NULL = ISO 8601; tz NULL = UTC ("+hhmm"/"-hhmm"). */
bool jn_format_datetime(double millis, const char *picture, const char *tz, gg_strbuf *out,
                        gg_error *err);
/* $toMillis: picture NULL = ISO 8601 (D3110 when invalid); *found false when the text does
 * not match the picture. */
bool jn_parse_datetime(const char *s, const char *picture, double *out, bool *found,
                       long long now_ms, gg_error *err);

#endif
