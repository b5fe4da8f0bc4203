/* datetime.c — $fromMillis / $toMillis: XPath F&O 3.1 date/time picture strings
 * ([Y0001]-[M01]-[D01], names, ordinals, words, time zones) and ISO 8601, with the
 * reference's behaviour and error codes (D3110, D3130-D3136). All arithmetic is on the
 * proleptic Gregorian calendar in UTC plus a fixed offset. */
#include "jsonata/fnlib.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DT_MAX_ITEMS 64
#define DT_MAX_MILLIS 8.64e15 /* ECMAScript time value limit */

static const char *const MONTHS[] = {"January", "February", "March", "April", "May", "June", "July",
                               "August", "September", "October", "November", "December"};
static const char *const DAYS[] = {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday",
                             "Saturday", "Sunday"};

/* Days since 1970-01-01 for a proleptic Gregorian date (month 1-12). */
static long long days_from_civil(long long y, int m, int d) {
    y -= m <= 2;
    long long era = (y >= 0 ? y : y - 399) / 400;
    long long yoe = y - era * 400;
    long long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(long long z, long long *y, int *m, int *d) {
    z += 719468;
    long long era = (z >= 0 ? z : z - 146096) / 146097;
    long long doe = z - era * 146097;
    long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    long long mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

typedef struct dt_fields {
    long long year, days; /* days since epoch */
    int month, day, yday, wday; /* wday 1 = Monday .. 7 = Sunday */
    int hour, minute, second, ms;
    int iso_week; long long iso_year;
    int month_week, mw_month;
    int offset; /* minutes */
    int tz_h, tz_m; /* the offset as the reference splits it: floor(hhmm / 100), hhmm % 100 */
} dt_fields;

static void dt_compute(double millis, int offset_min, dt_fields *f) {
    memset(f, 0, sizeof *f);
    double t = trunc(millis) + offset_min * 60000.0; /* Date's TimeClip truncates */
    long long days = (long long)floor(t / 86400000.0);
    long long msday = (long long)(t - (double)days * 86400000.0);
    f->days = days;
    civil_from_days(days, &f->year, &f->month, &f->day);
    f->yday = (int)(days - days_from_civil(f->year, 1, 1)) + 1;
    long long w = (days + 3) % 7; /* 1970-01-01 was a Thursday */
    if (w < 0) w += 7;
    f->wday = (int)w + 1;
    f->hour = (int)(msday / 3600000);
    f->minute = (int)(msday / 60000 % 60);
    f->second = (int)(msday / 1000 % 60);
    f->ms = (int)(msday % 1000);
    f->offset = offset_min;
    /* ISO week: the week (Monday-Sunday) belongs to the year/month of its Thursday */
    long long thursday = days - (f->wday - 1) + 3;
    long long ty; int tm, td;
    civil_from_days(thursday, &ty, &tm, &td);
    f->iso_year = ty;
    f->iso_week = (int)((thursday - days_from_civil(ty, 1, 1)) / 7) + 1;
    f->mw_month = tm;
    f->month_week = (td - 1) / 7 + 1;
}

typedef struct dt_marker {
    char comp;
    char pres[64];   /* first presentation modifier (defaulted) */
    bool ordinal;    /* second modifier 'o' */
    bool tflag;      /* 't' on a timezone: print Z for zero offset */
    int minw, maxw;  /* -1 = unspecified */
    bool name;       /* N / n / Nn */
    jn_int_case name_case;
} dt_marker;

/* Items point into the picture string, so parsing a picture allocates nothing. */
typedef struct dt_item {
    bool lit;
    size_t start, len; /* literal: raw text ("[[" / "]]" still escaped); marker: inside [] */
    dt_marker m;
} dt_item;

typedef struct dt_picture {
    dt_item items[DT_MAX_ITEMS];
    int n;
} dt_picture;

/* Append a raw literal, unescaping "[[" and "]]". */
static void put_literal(gg_strbuf *out, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        gg_strbuf_putc(out, s[i]);
        if ((s[i] == '[' || s[i] == ']') && i + 1 < n && s[i + 1] == s[i]) i++;
    }
}

/* Does the raw literal equal the text at s (after unescaping)? Returns bytes matched. */
static size_t match_literal(const char *lit, size_t ln, const char *s, size_t n) {
    size_t j = 0;
    for (size_t i = 0; i < ln; i++) {
        if (j >= n || s[j] != lit[i]) return (size_t)-1;
        j++;
        if ((lit[i] == '[' || lit[i] == ']') && i + 1 < ln && lit[i + 1] == lit[i]) i++;
    }
    return j;
}

static const char *default_pres(char c) {
    switch (c) {
    case 'F': case 'P': case 'C': case 'E': return "n";
    case 'm': case 's': return "01";
    case 'Z': case 'z': return "01:01";
    default: return "1";
    }
}

static bool parse_width(const char *w, dt_marker *m) {
    m->minw = m->maxw = -1;
    const char *dash = strchr(w, '-');
    char a[32] = "", b[32] = "";
    if (dash) {
        snprintf(a, sizeof a, "%.*s", (int)(dash - w), w);
        snprintf(b, sizeof b, "%s", dash + 1);
    } else snprintf(a, sizeof a, "%s", w);
    if (a[0] && strcmp(a, "*")) m->minw = atoi(a);
    if (b[0] && strcmp(b, "*")) m->maxw = atoi(b);
    if (m->minw > 1000) m->minw = 1000; /* bound the padding */
    return true;
}

static bool parse_marker(const char *s, size_t n, dt_marker *m, gg_error *err) {
    char buf[128];
    size_t k = 0;
    for (size_t i = 0; i < n && k < sizeof buf - 1; i++)
        if (!isspace((unsigned char)s[i])) buf[k++] = s[i];
    buf[k] = '\0';
    memset(m, 0, sizeof *m);
    m->minw = m->maxw = -1;
    if (k == 0) { gg_error_set(err, "D3132", "Unknown component specifier \"\" in date/time picture string"); return false; }
    m->comp = buf[0];
    if (!strchr("YMDdFWwXxHhPmsfZzCE", m->comp)) {
        gg_error_set(err, "D3132", "Unknown component specifier \"%c\" in date/time picture string", m->comp);
        return false;
    }
    char *pres = buf + 1;
    char *comma = strrchr(pres, ',');
    if (comma) { *comma = '\0'; parse_width(comma + 1, m); }
    size_t pl = strlen(pres);
    if (pl > 1 && (pres[pl - 1] == 'o' || pres[pl - 1] == 'c')) {
        m->ordinal = pres[pl - 1] == 'o';
        pres[--pl] = '\0';
    }
    if (pl > 1 && pres[pl - 1] == 't' && (m->comp == 'Z' || m->comp == 'z')) {
        m->tflag = true;
        pres[--pl] = '\0';
    }
    const char *ps = pl ? pres : default_pres(m->comp);
    size_t psl = strlen(ps);
    if (psl >= sizeof m->pres) psl = sizeof m->pres - 1;
    memcpy(m->pres, ps, psl);
    m->pres[psl] = '\0';
    if (m->pres[0] == 'N' || m->pres[0] == 'n') {
        if (!strchr("MxFPCE", m->comp)) {
            gg_error_set(err, "D3133", "The 'name' modifier can only be applied to months and days in the date/time picture string, not \"%c\"", m->comp);
            return false;
        }
        m->name = true;
        m->name_case = !strcmp(m->pres, "Nn") ? JN_CASE_TITLE : m->pres[0] == 'N' ? JN_CASE_UPPER : JN_CASE_LOWER;
    }
    return true;
}

static bool add_item(dt_picture *p, bool lit, size_t start, size_t len, gg_error *err) {
    if (p->n >= DT_MAX_ITEMS) {
        gg_error_set(err, "D3135", "The date/time picture string is too long");
        return false;
    }
    dt_item *it = &p->items[p->n++];
    it->lit = lit;
    it->start = start;
    it->len = len;
    return true;
}

/* Split a picture into literals and markers, then validate every marker. */
static bool dt_picture_parse(const char *pic, dt_picture *p, gg_error *err) {
    p->n = 0;
    size_t n = strlen(pic), i = 0, lit = 0;
    while (i < n) {
        char c = pic[i];
        if ((c == '[' || c == ']') && i + 1 < n && pic[i + 1] == c) { i += 2; continue; }
        if (c != '[') { i++; continue; }
        const char *close = memchr(pic + i, ']', n - i);
        if (!close) {
            gg_error_set(err, "D3135", "No matching closing bracket ']' in date/time picture string");
            return false;
        }
        if (i > lit && !add_item(p, true, lit, i - lit, err)) return false;
        size_t end = (size_t)(close - pic);
        if (!add_item(p, false, i + 1, end - i - 1, err)) return false;
        i = lit = end + 1;
    }
    if (n > lit && !add_item(p, true, lit, n - lit, err)) return false;
    for (int k = 0; k < p->n; k++)
        if (!p->items[k].lit && !parse_marker(pic + p->items[k].start, p->items[k].len, &p->items[k].m, err))
            return false;
    return true;
}

static void put_name(gg_strbuf *out, const char *name, const dt_marker *m) {
    size_t n = strlen(name);
    if (m->maxw > 0 && (size_t)m->maxw < n) n = (size_t)m->maxw;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (m->name_case == JN_CASE_UPPER) c = (char)toupper((unsigned char)c);
        else if (m->name_case == JN_CASE_LOWER) c = (char)tolower((unsigned char)c);
        else c = i == 0 ? (char)toupper((unsigned char)c) : (char)tolower((unsigned char)c);
        gg_strbuf_putc(out, c);
    }
}

static bool format_tz(const dt_marker *m, int th, int tm, gg_strbuf *out, gg_error *err) {
    if (m->comp == 'z') gg_strbuf_puts(out, "GMT");
    int hh = abs(th), mm = abs(tm);
    bool neg = th < 0 || (th == 0 && tm < 0);
    const char *pres = m->pres;
    const char *colon = strchr(pres, ':');
    size_t hd = colon ? (size_t)(colon - pres) : strlen(pres);
    for (size_t i = 0; i < strlen(pres); i++)
        if (!isdigit((unsigned char)pres[i]) && pres + i != colon) hd = 99;
    if (hd > 4) {
        gg_error_set(err, "D3134", "The timezone integer format specifier cannot have more than four digits");
        return false;
    }
    if (m->tflag && th == 0 && tm == 0) { gg_strbuf_putc(out, 'Z'); return true; }
    gg_strbuf_putc(out, neg ? '-' : '+');
    if (colon) gg_strbuf_printf(out, "%0*d:%02d", (int)hd, hh, mm);
    else if (hd <= 2) {
        gg_strbuf_printf(out, "%0*d", (int)hd, hh);
        if (tm) gg_strbuf_printf(out, ":%02d", tm); /* the reference keeps the sign here */
    } else gg_strbuf_printf(out, "%0*d%02d", (int)hd - 2, hh, mm);
    return true;
}

static bool format_component(const dt_marker *m, const dt_fields *f, gg_strbuf *out, gg_error *err) {
    double v = 0;
    switch (m->comp) {
    case 'Y': v = (double)f->year; break;
    case 'M': v = f->month; if (m->name) { put_name(out, MONTHS[f->month - 1], m); return true; } break;
    case 'x': v = f->mw_month; if (m->name) { put_name(out, MONTHS[f->mw_month - 1], m); return true; } break;
    case 'D': v = f->day; break;
    case 'd': v = f->yday; break;
    case 'F': v = f->wday; if (m->name) { put_name(out, DAYS[f->wday - 1], m); return true; } break;
    case 'W': v = f->iso_week; break;
    case 'w': v = f->month_week; break;
    case 'X': v = (double)f->iso_year; break;
    case 'H': v = f->hour; break;
    case 'h': v = f->hour % 12 == 0 ? 12 : f->hour % 12; break;
    case 'P': { /* the reference has no title case for am/pm: "Nn" prints lower case */
        dt_marker pm = *m;
        if (pm.name_case == JN_CASE_TITLE) pm.name_case = JN_CASE_LOWER;
        put_name(out, f->hour < 12 ? "am" : "pm", &pm);
        return true;
    }
    case 'm': v = f->minute; break;
    case 's': v = f->second; break;
    case 'f': v = f->ms; break;
    case 'Z': case 'z': return format_tz(m, f->tz_h, f->tz_m, out, err);
    case 'C': case 'E': gg_strbuf_puts(out, "ISO"); return true;
    }
    jn_int_picture ip;
    if (!jn_int_picture_parse(m->pres, strlen(m->pres), &ip, err)) return false;
    ip.ordinal = m->ordinal;
    if (ip.kind == JN_INT_DECIMAL) {
        if (m->minw > ip.mandatory) ip.mandatory = m->minw;
        if (m->maxw > 0 && m->maxw < ip.mandatory) ip.mandatory = m->maxw;
        if (m->comp == 'Y') {
            int digits = m->maxw > 0 ? m->maxw : (ip.mandatory > 1 ? ip.mandatory : 0);
            if (digits > 0 && digits < 18) v = fmod(v, pow(10, digits));
        }
    }
    jn_int_format(v, &ip, out);
    return true;
}

/* Parse a "+hhmm" / "-hhmm" offset the way the reference does: as the integer hhmm, split
 * into floor(hhmm / 100) hours and hhmm % 100 minutes (so "-0930" is -10 h and -30 min). */
static bool parse_offset(const char *tz, int *hh, int *mm) {
    const char *s = tz;
    int sign = 1;
    if (*s == '+') s++;
    else if (*s == '-') { sign = -1; s++; }
    long v = 0;
    int k = 0;
    for (; *s && k < 6; s++, k++) {
        if (!isdigit((unsigned char)*s)) return false;
        v = v * 10 + (*s - '0');
    }
    if (*s || k == 0) return false;
    v *= sign;
    *hh = (int)floor(v / 100.0);
    *mm = (int)(v % 100);
    return true;
}

static void put_2digits(char *p, int v) { p[0] = (char)('0' + v / 10 % 10); p[1] = (char)('0' + v % 10); }

/* The default ISO 8601 rendering in UTC, by hand: the common case of $fromMillis/$now. */
static bool format_iso_utc(double millis, gg_strbuf *out) {
    dt_fields f;
    dt_compute(millis, 0, &f);
    if (f.year < 0 || f.year > 9999) return false;
    char b[24];
    put_2digits(b, (int)(f.year / 100));
    put_2digits(b + 2, (int)(f.year % 100));
    b[4] = '-'; put_2digits(b + 5, f.month); b[7] = '-'; put_2digits(b + 8, f.day);
    b[10] = 'T'; put_2digits(b + 11, f.hour); b[13] = ':'; put_2digits(b + 14, f.minute);
    b[16] = ':'; put_2digits(b + 17, f.second); b[19] = '.';
    b[20] = (char)('0' + f.ms / 100); put_2digits(b + 21, f.ms % 100);
    b[23] = 'Z';
    gg_strbuf_append(out, b, 24);
    return true;
}

bool jn_format_datetime(double millis, const char *picture, const char *tz, gg_strbuf *out,
                        gg_error *err) {
    if (!(fabs(millis) <= DT_MAX_MILLIS)) { /* outside JavaScript's Date range */
        gg_error_set(err, "D3110", "The timestamp is outside the supported date range");
        return false;
    }
    if (!picture && !tz && format_iso_utc(millis, out)) return !out->oom;
    int th = 0, tm = 0;
    if (tz && !parse_offset(tz, &th, &tm)) th = tm = 0;
    int off = th * 60 + tm;
    if (!picture) picture = tz && off != 0 ? "[Y0001]-[M01]-[D01]T[H01]:[m01]:[s01].[f001][Z01:01]"
                                           : "[Y0001]-[M01]-[D01]T[H01]:[m01]:[s01].[f001][Z01:01t]";
    dt_picture p;
    bool ok = dt_picture_parse(picture, &p, err);
    if (ok) {
        dt_fields f;
        dt_compute(millis, off, &f);
        f.tz_h = th;
        f.tz_m = tm;
        for (int i = 0; ok && i < p.n; i++) {
            if (p.items[i].lit) put_literal(out, picture + p.items[i].start, p.items[i].len);
            else ok = format_component(&p.items[i].m, &f, out, err);
        }
    }
    return ok && !out->oom;
}

/* ---- parsing ---- */

static bool iso_digits(const char *s, int n) {
    for (int i = 0; i < n; i++) if (!isdigit((unsigned char)s[i])) return false;
    return true;
}

/* The ISO 8601 subset the reference accepts: YYYY[-MM[-DD[THH:MM:SS[.s+][Z|±HH:MM|±HHMM]]]].
 * Returns 0 ok, 1 = shape wrong (D3110), 2 = valid shape but impossible date (undefined). */
static int parse_iso(const char *s, double *out) {
    size_t n = strlen(s);
    int y = 0, mo = 1, d = 1, hh = 0, mi = 0, ss = 0, ms = 0, off = 0;
    if (n < 4 || !iso_digits(s, 4)) return 1;
    y = atoi(s);
    size_t i = 4;
    if (i < n) {
        if (s[i] != '-' || n < i + 3 || !iso_digits(s + i + 1, 2)) return 1;
        mo = atoi(s + i + 1);
        i += 3;
    }
    if (i < n) {
        if (s[i] != '-' || n < i + 3 || !iso_digits(s + i + 1, 2)) return 1;
        d = atoi(s + i + 1);
        i += 3;
    }
    if (i < n) {
        if (s[i] != 'T' || n < i + 9 || !iso_digits(s + i + 1, 2) || s[i + 3] != ':' ||
            !iso_digits(s + i + 4, 2) || s[i + 6] != ':' || !iso_digits(s + i + 7, 2))
            return 1;
        hh = atoi(s + i + 1); mi = atoi(s + i + 4); ss = atoi(s + i + 7);
        i += 9;
        if (i < n && s[i] == '.') {
            i++;
            size_t st = i;
            while (i < n && isdigit((unsigned char)s[i])) i++;
            if (i == st) return 1;
            char frac[4] = "000";
            for (size_t k = 0; k < 3 && st + k < i; k++) frac[k] = s[st + k];
            ms = atoi(frac);
        }
        if (i < n) {
            if (s[i] == 'Z') i++;
            else if (s[i] == '+' || s[i] == '-') {
                int sign = s[i] == '-' ? -1 : 1;
                if (n >= i + 6 && iso_digits(s + i + 1, 2) && s[i + 3] == ':' && iso_digits(s + i + 4, 2)) {
                    off = sign * (atoi(s + i + 1) * 60 + atoi(s + i + 4)); i += 6;
                } else if (n >= i + 5 && iso_digits(s + i + 1, 4)) {
                    char h[3] = {s[i + 1], s[i + 2], 0};
                    off = sign * (atoi(h) * 60 + atoi(s + i + 3)); i += 5;
                } else return 1;
            } else return 1;
        }
        if (i != n) return 1;
    }
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || hh > 24 || mi > 59 || ss > 59 ||
        (hh == 24 && (mi || ss || ms)))
        return 2;
    double days = (double)days_from_civil(y, mo, d);
    *out = days * 86400000.0 + hh * 3600000.0 + mi * 60000.0 + ss * 1000.0 + ms - off * 60000.0;
    return 0;
}

static bool ci_prefix(const char *s, size_t n, const char *word, size_t wl) {
    if (n < wl) return false;
    for (size_t i = 0; i < wl; i++)
        if (tolower((unsigned char)s[i]) != tolower((unsigned char)word[i])) return false;
    return true;
}

/* Match a name (month/day/am-pm): full name first, then the width-truncated form. */
static size_t match_name(const char *s, size_t n, const char *const *names, int count,
                         const dt_marker *m, int *idx) {
    for (int k = 0; k < count; k++) {
        size_t wl = strlen(names[k]);
        if (ci_prefix(s, n, names[k], wl)) { *idx = k; return wl; }
    }
    for (int k = 0; k < count; k++) {
        size_t wl = m->maxw > 0 ? (size_t)m->maxw : 3;
        if (wl > strlen(names[k])) wl = strlen(names[k]);
        if (ci_prefix(s, n, names[k], wl)) { *idx = k; return wl; }
    }
    return 0;
}

static size_t parse_tz_text(const char *s, size_t n, const dt_marker *m, int *off) {
    size_t i = 0;
    if (m->comp == 'z') {
        if (!ci_prefix(s, n, "GMT", 3)) return 0;
        i = 3;
    }
    if (i < n && s[i] == 'Z' && m->tflag) { *off = 0; return i + 1; }
    if (i >= n || (s[i] != '+' && s[i] != '-')) return 0;
    int sign = s[i] == '-' ? -1 : 1;
    i++;
    size_t st = i;
    while (i < n && isdigit((unsigned char)s[i])) i++;
    size_t nd = i - st;
    int hh = 0, mm = 0;
    char buf[8] = {0};
    if (nd == 0 || nd > 4) return 0;
    memcpy(buf, s + st, nd);
    if (nd <= 2) {
        hh = atoi(buf);
        if (i + 3 <= n && s[i] == ':' && isdigit((unsigned char)s[i + 1]) &&
            isdigit((unsigned char)s[i + 2])) {
            mm = (s[i + 1] - '0') * 10 + (s[i + 2] - '0');
            i += 3;
        }
    } else {
        mm = atoi(buf + nd - 2);
        buf[nd - 2] = '\0';
        hh = atoi(buf);
    }
    *off = sign * (hh * 60 + mm);
    return i;
}

enum { P_Y, P_M, P_D, P_d, P_H, P_h, P_P, P_m, P_s, P_f, P_Z, P_COUNT };

/* Read one numeric component (decimal, roman, letters or words) at s. A decimal field
 * directly followed by another marker is fixed-width (the picture's digit count), as in
 * "[Y0001][M01]". Returns bytes used (0 = no match) or -1 on a picture error. */
static long scan_number(const dt_picture *p, int k, const char *s, size_t n, double *v,
                        gg_error *err) {
    const dt_marker *m = &p->items[k].m;
    jn_int_picture ip;
    if (!jn_int_picture_parse(m->pres, strlen(m->pres), &ip, err)) return -1;
    ip.ordinal = m->ordinal;
    if (m->comp == 'f' && ip.kind == JN_INT_DECIMAL) { /* fraction of a second */
        size_t e = 0;
        while (e < n && isdigit((unsigned char)s[e])) e++;
        char frac[4] = "000";
        for (size_t q = 0; q < 3 && q < e; q++) frac[q] = s[q];
        *v = atoi(frac);
        return (long)e;
    }
    size_t limit = n;
    if (ip.kind == JN_INT_DECIMAL) {
        bool next_marker = k + 1 < p->n && !p->items[k + 1].lit;
        size_t w = m->maxw > 0 ? (size_t)m->maxw : next_marker ? (size_t)(ip.mandatory + ip.optional) : 0;
        if (w && w < limit) limit = w;
    }
    return (long)jn_int_parse_prefix(s, limit, &ip, v);
}

/* Read marker k at s: bytes used (0 = no match, -1 = error) and its value in *v. */
static long scan_marker(const dt_picture *p, int k, const char *s, size_t n, double *v,
                        gg_error *err) {
    static const char *const AMPM[] = {"am", "pm"};
    const dt_marker *m = &p->items[k].m;
    int idx = 0, off = 0;
    size_t used;
    switch (m->comp) {
    case 'M': case 'x':
        if (!m->name) break;
        used = match_name(s, n, MONTHS, 12, m, &idx);
        *v = idx + 1;
        return (long)used;
    case 'F':
        if (!m->name) break;
        used = match_name(s, n, DAYS, 7, m, &idx);
        *v = idx + 1;
        return (long)used;
    case 'P':
        used = match_name(s, n, AMPM, 2, m, &idx);
        *v = idx;
        return (long)used;
    case 'Z': case 'z':
        used = parse_tz_text(s, n, m, &off);
        *v = off;
        return (long)used;
    case 'C': case 'E': return ci_prefix(s, n, "ISO", 3) ? 3 : 0;
    default: break;
    }
    return scan_number(p, k, s, n, v, err);
}

/* Where a component's value goes; -1 for those that carry nothing we use (F, C, E) and
 * -2 for the ISO week components, which the reference cannot parse either. */
static int slot_of(char comp) {
    switch (comp) {
    case 'Y': return P_Y;
    case 'M': return P_M;
    case 'D': return P_D;
    case 'd': return P_d;
    case 'H': return P_H;
    case 'h': return P_h;
    case 'P': return P_P;
    case 'm': return P_m;
    case 's': return P_s;
    case 'f': return P_f;
    case 'Z': case 'z': return P_Z;
    case 'X': case 'x': case 'W': case 'w': return -2;
    default: return -1;
    }
}

static bool missing_specifiers(gg_error *err) {
    gg_error_set(err, "D3136", "The date/time picture string is missing specifiers required to parse the timestamp");
    return false;
}

/* Match s against the picture, filling val/have. *matched false when the text does not fit;
 * false with err on a picture error. */
static bool match_picture(const char *s, const char *picture, const dt_picture *p,
                          double *val, bool *have, bool *matched, gg_error *err) {
    size_t n = strlen(s), i = 0;
    bool unsupported = false;
    *matched = true;
    for (int k = 0; *matched && k < p->n; k++) {
        const dt_item *it = &p->items[k];
        if (it->lit) {
            size_t used = match_literal(picture + it->start, it->len, s + i, n - i);
            if (used == (size_t)-1) *matched = false;
            else i += used;
            continue;
        }
        double v = 0;
        long used = scan_marker(p, k, s + i, n - i, &v, err);
        if (used < 0) return false;
        if (used == 0) { *matched = false; break; }
        i += (size_t)used;
        int slot = slot_of(it->m.comp);
        if (slot == -2) unsupported = true;
        if (slot >= 0) { val[slot] = v; have[slot] = true; }
    }
    /* the week components are reported even when the text did not match */
    for (int k = 0; k < p->n; k++)
        if (!p->items[k].lit && slot_of(p->items[k].m.comp) == -2) unsupported = true;
    return unsupported ? missing_specifiers(err) : true;
}

/* Turn matched components into milliseconds: present components must be contiguous from
 * the most significant one; those above it come from "now", those below default to the
 * start of the period. *found false (undefined) for out-of-range values. */
static bool assemble(double *val, bool *have, bool matched, long long now_ms, double *out,
                     bool *found, gg_error *err) {
    if (have[P_h]) { /* hour from h + P */
        double h = fmod(val[P_h], 12);
        if (have[P_P] && val[P_P] == 1) h += 12;
        val[P_H] = h;
        have[P_H] = true;
    }
    static const int order_md[] = {P_Y, P_M, P_D, P_H, P_m, P_s, P_f};
    static const int order_d[] = {P_Y, P_d, P_H, P_m, P_s, P_f};
    const int *order = have[P_d] ? order_d : order_md;
    int olen = have[P_d] ? 6 : 7;
    int first = -1, last = -1;
    for (int k = 0; k < olen; k++) if (have[order[k]]) { if (first < 0) first = k; last = k; }
    for (int k = first; first >= 0 && k <= last; k++)
        if (!have[order[k]]) return missing_specifiers(err);
    if (!matched || first < 0) return true; /* undefined */
    dt_fields now;
    dt_compute((double)now_ms, 0, &now);
    double from_now[P_COUNT] = {0};
    from_now[P_Y] = (double)now.year; from_now[P_M] = now.month; from_now[P_D] = now.day;
    from_now[P_d] = now.yday; from_now[P_H] = now.hour; from_now[P_m] = now.minute;
    from_now[P_s] = now.second; from_now[P_f] = now.ms;
    for (int k = 0; k < olen; k++) {
        int c = order[k];
        if (!have[c]) val[c] = k < first ? from_now[c] : (c == P_M || c == P_D || c == P_d) ? 1 : 0;
    }
    for (int k = 0; k < P_COUNT; k++)
        if (have[k] && !(fabs(val[k]) < 1e7)) return true;
    if (!(fabs(val[P_Y]) < 300000)) return true;
    double days;
    if (have[P_d]) days = (double)days_from_civil((long long)val[P_Y], 1, 1) + val[P_d] - 1;
    else {
        long long y = (long long)val[P_Y], mo = (long long)val[P_M] - 1; /* months roll over */
        y += mo >= 0 ? mo / 12 : (mo - 11) / 12;
        mo = ((mo % 12) + 12) % 12;
        days = (double)days_from_civil(y, (int)mo + 1, 1) + val[P_D] - 1;
    }
    double ms = days * 86400000.0 + val[P_H] * 3600000.0 + val[P_m] * 60000.0 +
                val[P_s] * 1000.0 + val[P_f];
    if (have[P_Z]) ms -= val[P_Z] * 60000.0;
    *out = ms;
    *found = true;
    return true;
}

bool jn_parse_datetime(const char *s, const char *picture, double *out, bool *found,
                       long long now_ms, gg_error *err) {
    *found = false;
    if (!picture) {
        int r = parse_iso(s, out);
        if (r == 1) {
            gg_error_set(err, "D3110", "The argument of the toMillis function must be an ISO 8601 formatted timestamp. Given \"%s\"", s);
            return false;
        }
        *found = r == 0;
        return true;
    }
    dt_picture p;
    if (!dt_picture_parse(picture, &p, err)) return false;
    double val[P_COUNT] = {0};
    bool have[P_COUNT] = {false};
    bool matched;
    if (!match_picture(s, picture, &p, val, have, &matched, err)) return false;
    return assemble(val, have, matched, now_ms, out, found, err);
}
