/* util.h — the few pieces every subsystem shares: the error value, a growable string
 * buffer and the structured logger.
 *
 * Ownership: a gg_error owns its message (free it with gg_error_clear); a gg_strbuf owns
 * its bytes until gg_strbuf_take hands them to the caller; nothing here keeps a pointer
 * to caller memory.
 */
#ifndef GG_UTIL_H
#define GG_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Error codes are short stable strings ("not_found", "T2001", "invalid_config") so
 * every layer can map them once, at the edge, to an HTTP status or JSON-RPC code. */
#define GG_ERR_CODE_MAX 32

typedef struct gg_error {
    char code[GG_ERR_CODE_MAX]; /* empty string means "no error" */
    char *message;              /* heap, may be NULL */
    int position;               /* character offset in an expression, or -1 */
    int line, column;           /* 1-based source position, or 0 when unknown */
    char *path;                 /* file name, JSON pointer or node id; heap, may be NULL */
} gg_error;

#define GG_ERROR_INIT {"", NULL, -1, 0, 0, NULL}

static inline bool gg_error_is_set(const gg_error *e) { return e && e->code[0] != '\0'; }
void gg_error_set(gg_error *e, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void gg_error_vset(gg_error *e, const char *code, const char *fmt, va_list ap);
void gg_error_set_pos(gg_error *e, int line, int column);
void gg_error_set_path(gg_error *e, const char *path);
void gg_error_clear(gg_error *e);
void gg_error_move(gg_error *dst, gg_error *src);
/* "path:line:col: code: message" into buf (always NUL-terminated). */
void gg_error_format(const gg_error *e, char *buf, size_t size);

/* The one table of error codes (errcode.c): each code's HTTP status and JSON-RPC code. An
 * unlisted code is an internal failure (500, -32603). */
typedef struct gg_errcode {
    const char *code;
    int http_status;
    int rpc_code;
    const char *meaning;
} gg_errcode;
const gg_errcode *gg_errcode_find(const char *code); /* NULL when unlisted */
const gg_errcode *gg_errcode_table(size_t *n);
int gg_error_http_status(const gg_error *e);
/* The HTTP status of a code: the table's, 400 for another invalid_* code, else 500. */
int gg_errcode_http_status(const char *code);
int gg_error_rpc_code(const gg_error *e);

typedef struct gg_strbuf {
    char *data;
    size_t len, cap;
    bool oom; /* sticky: once an allocation failed every append is a no-op */
    bool borrowed; /* data is the caller's array (gg_strbuf_use): never freed or resized */
} gg_strbuf;

#define GG_STRBUF_INIT {NULL, 0, 0, false, false}
/* Room for extra more bytes and the NUL. Reserve, append and puts are inline when the bytes
 * fit (a recorded tools/call makes ~200 of these calls: bench/gateway/callgrind.sh); only
 * growing calls gg_strbuf_grow. */
bool gg_strbuf_grow(gg_strbuf *b, size_t extra);
static inline bool gg_strbuf_reserve(gg_strbuf *b, size_t extra) {
    if (!b->oom && b->len + extra + 1 <= b->cap) return true;
    return gg_strbuf_grow(b, extra);
}
static inline bool gg_strbuf_append(gg_strbuf *b, const char *s, size_t n) {
    if (!gg_strbuf_reserve(b, n)) return false;
    if (n) memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
    return true;
}
static inline bool gg_strbuf_puts(gg_strbuf *b, const char *s) { return gg_strbuf_append(b, s, strlen(s)); }
/* Start b on a caller's array (e.g. on the stack) of cap >= 1 bytes; past it b moves to the
 * heap. gg_strbuf_free / _take work as usual (take hands out a heap copy). */
void gg_strbuf_use(gg_strbuf *b, char *buf, size_t cap);
/* Inline: the JSON writers append single characters between every token. */
static inline bool gg_strbuf_putc(gg_strbuf *b, char c) {
    if (b->len + 2 > b->cap || b->oom) return gg_strbuf_append(b, &c, 1);
    b->data[b->len++] = c;
    b->data[b->len] = '\0';
    return true;
}
bool gg_strbuf_printf(gg_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* n zeroed bytes (free()), or NULL: malloc then memset, not calloc. glibc's calloc never
 * takes the per-thread cache (blocks up to 1,032 bytes; ~300 instructions more a block,
 * bench/gateway/callgrind.sh), and GCC turns a plain malloc + memset back into calloc: the
 * empty asm hides where the pointer came from. */
static inline void *gg_zalloc(size_t n) {
    void *p = malloc(n);
    __asm__("" : "+r"(p));
    if (p) memset(p, 0, n);
    return p;
}
char *gg_strbuf_take(gg_strbuf *b); /* NUL-terminated, caller frees; NULL on OOM */
void gg_strbuf_reset(gg_strbuf *b);
void gg_strbuf_free(gg_strbuf *b);
bool gg_strbuf_put_int(gg_strbuf *b, long long v); /* decimal digits, no printf */

/* The one JSON writer (json_write.c). */
bool gg_strbuf_json_escape(gg_strbuf *b, const char *s, size_t n); /* inside of a JSON string */
/* s (n bytes) as a JSON string, quotes included, escaped as above; a byte that is
 * not part of well-formed UTF-8 becomes \ufffd, so the text always parses back. */
bool gg_strbuf_json_string(gg_strbuf *b, const char *s, size_t n);
/* v as compact JSON appended to b: byte for byte json_dumps(v, JSON_COMPACT |
 * JSON_ENCODE_ANY) but for the hex digits of \u00XX escapes, lowercase as JSON.stringify
 * writes them; without json_dumps' allocations and callback per token. NULL writes null.
 * False when b ran out of memory or v cannot be encoded (a cycle): b then holds a partial
 * text the caller cuts off. */
struct json_t;
bool gg_strbuf_put_json(gg_strbuf *b, const struct json_t *v);
/* The value of the 4 hex digits at s (a \uXXXX escape), or -1 if one is not a hex digit. */
int gg_hex4(const char *s);
/* The members of obj named keys[0..n) into vals[0..n), NULL where absent or obj is no
 * object: what n json_object_get calls return, in one walk over obj's members (each
 * json_object_get hashes its key: ≈ 150 instructions, ≈ 25 a tools/call). Keys are
 * GG_JSON_KEY("literal"): their lengths are known, so most members are passed over by one
 * comparison. */
typedef struct gg_json_key {
    const char *name;
    size_t len;
} gg_json_key;
#define GG_JSON_KEY(lit) {(lit), sizeof(lit) - 1}
void gg_json_members(const struct json_t *obj, size_t n, const gg_json_key keys[], struct json_t *vals[]);
/* A copy of v sharing nothing with it (NULL when out of memory): json_deep_copy without
 * its loop check, which allocates a table and prints a pointer for every object and array
 * (≈ 2,000 instructions for a one-key object, the copy itself ≈ 400). v must be a tree,
 * as every value parsed or built is; its depth is the caller's bound. */
struct json_t *gg_json_clone(const struct json_t *v);

/* Length (1..4) of the well-formed UTF-8 sequence at p, at most n bytes long; 0 when it is
 * invalid, overlong, a surrogate, above U+10FFFF or cut short. Bytes are read in order and
 * a NUL is never a continuation byte, so a NUL-terminated string may pass n = 4. Inline:
 * the JSON encoders and parsers call it per non-ASCII character. */
static inline size_t gg_utf8_len(const unsigned char *p, size_t n) {
    unsigned c = p[0], cp;
    size_t w;
    if (c < 0x80) return n ? 1 : 0;
    if (c >= 0xC2 && c <= 0xDF) w = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) w = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) w = 4, cp = c & 0x07;
    else return 0;
    if (n < w) return 0;
    for (size_t k = 1; k < w; k++) {
        if ((p[k] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (p[k] & 0x3F);
    }
    if ((w == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (w == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
        return 0;
    return w;
}

/* Bytes (1..4) of the sequence led by c, unchecked: a stray continuation byte counts as one,
 * so a walk over malformed text still advances. For text already checked (jansson's strings,
 * gg_utf8_len), where it is the sequence's length. */
static inline size_t gg_utf8_lead_len(unsigned char c) {
    if (c < 0x80) return 1;
    if (c >= 0xF0) return 4;
    if (c >= 0xE0) return 3;
    if (c >= 0xC0) return 2;
    return 1;
}
/* The code point of the n-byte (1..4) sequence at s, unchecked (gg_utf8_len checks). */
static inline uint32_t gg_utf8_decode(const unsigned char *s, size_t n) {
    switch (n) {
    case 1: return s[0];
    case 2: return ((uint32_t)(s[0] & 0x1F) << 6) | (s[1] & 0x3F);
    case 3: return ((uint32_t)(s[0] & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
    default:
        return ((uint32_t)(s[0] & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) | ((uint32_t)(s[2] & 0x3F) << 6) |
               (s[3] & 0x3F);
    }
}

/* JavaScript's view of a UTF-8 string (utf16.c): its length in UTF-16 code units, and the
 * order of two strings by code units (<0, 0, >0), as String.prototype.length and < do. */
size_t gg_utf16_len(const char *s, size_t len);
int gg_utf16_cmp(const char *a, size_t alen, const char *b, size_t blen);

/* The UTF-8 bytes (1..4) of code point cp (below U+110000) into out; the count. A lone
 * surrogate gets its 3-byte (WTF-8) form, as JSONata keeps it like a JavaScript string; the
 * JSON parser pairs surrogates or replaces them before it gets here. */
static inline size_t gg_utf8_encode(uint32_t cp, char out[4]) {
    if (cp < 0x80) return out[0] = (char)cp, 1;
    if (cp < 0x800) return out[0] = (char)(0xC0 | cp >> 6), out[1] = (char)(0x80 | (cp & 0x3F)), 2;
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12), out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        return out[2] = (char)(0x80 | (cp & 0x3F)), 3;
    }
    out[0] = (char)(0xF0 | cp >> 18), out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* JavaScript's Number.prototype.toString for a double (shortest round trip: 0.1, 1e+21,
 * -Infinity, NaN) into buf (at least 32 bytes for every value). */
void gg_js_number_format(double d, char *buf, size_t size);
/* The shortest decimal digits that round-trip to d (finite, > 0), without the point, into
 * digits; returns the decimal exponent of the first digit, the count in *ndigits. */
int gg_js_shortest_digits(double d, char digits[24], int *ndigits);

/* An ECMAScript regex (JSONata, JSON Schema "pattern") rewritten in PCRE2 syntax: \s, \S
 * and "." with JavaScript's meaning, "[" literal inside a class. Compile the result with
 * PCRE2_UTF | PCRE2_ALT_BSUX | PCRE2_DOLLAR_ENDONLY | PCRE2_ALLOW_EMPTY_CLASS ("[]" matches
 * nothing, "[^]" anything, "$" only at the end, as in JavaScript). src need not be
 * NUL-terminated; the result is, with its length in *outlen (may be NULL); NULL on OOM. */
char *gg_ecma_regex_to_pcre2(const char *src, size_t len, size_t *outlen);

/* The YAML 1.2 core schema's value of a plain scalar s (n bytes, NUL-terminated): null,
 * true/false, integer (decimal, 0x, 0o), float, else a string. JSON has no infinity or
 * NaN, so .inf/.nan or a float overflowing to infinity is NULL + err (code "yaml"; the
 * caller adds the position). NULL without err only on OOM. Returns a new reference. */
struct json_t *gg_yaml_plain_scalar(const char *s, size_t n, gg_error *err);

/* Structured logging: one JSON object per line on the log stream (stderr by default). */
typedef enum { GG_LOG_DEBUG, GG_LOG_INFO, GG_LOG_WARN, GG_LOG_ERROR } gg_log_level;
void gg_log_configure(gg_log_level min_level, const char *file_path /* NULL = stderr */);
/* kv is a NULL-terminated list of key, value string pairs added to the line. */
void gg_log(gg_log_level level, const char *msg, ...);
/* A pre-rendered JSON object line (e.g. an access log record) written atomically. */
void gg_log_json_line(const char *json_line);
bool gg_log_enabled(gg_log_level level);

/* A wall-clock time in ms since the epoch as ISO 8601 UTC with milliseconds,
 * "2026-11-29T07:40:00.123Z": the one format of times in logs, API answers and records. */
#define GG_TIME_ISO_MAX 64 /* the 25 it takes, with room for any int in struct tm */
void gg_time_iso8601(long long wall_ms, char out[GG_TIME_ISO_MAX]);

/* Counts per name (tenant) with an optional bound (tally.c). Zero-initialised is empty; the
 * caller serialises. gg_tally_add with max <= 0 has no bound; a name at 0 holds no memory. */
typedef struct gg_tally {
    struct gg_tally_entry *head;
} gg_tally;
typedef enum { GG_TALLY_OK, GG_TALLY_FULL, GG_TALLY_OOM } gg_tally_rc;
gg_tally_rc gg_tally_add(gg_tally *t, const char *name, int max);
void gg_tally_sub(gg_tally *t, const char *name);
int gg_tally_get(gg_tally *t, const char *name);
void gg_tally_clear(gg_tally *t);

/* Copy src (NULL = "") into dst of size bytes (> 0), truncated and NUL-terminated: what
 * snprintf(dst, size, "%s", src) does, without the formatting machinery (about 600
 * instructions a call, several a request on the MCP path). */
static inline void gg_strcopy(char *dst, size_t size, const char *src) {
    size_t n = src ? strnlen(src, size - 1) : 0;
    memcpy(dst, src ? src : "", n);
    dst[n] = '\0';
}

/* The hash of the in-memory tables (FNV-1a, 64 bits): fast on short names, not for anything an
 * attacker may choose to collide where that would hurt (every table using it is bounded or
 * keyed by names an admin created). Compose keys with gg_hash_add and a separator byte
 * between parts, so "ab"+"c" and "a"+"bc" differ. */
#define GG_HASH_INIT 0xcbf29ce484222325ull /* the FNV offset basis */
static inline unsigned long long gg_hash_add(unsigned long long h, const char *s) {
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}
static inline unsigned long long gg_hash_sep(unsigned long long h, unsigned char sep) {
    return (h ^ sep) * 1099511628211ull;
}
static inline unsigned long long gg_hash_str(const char *s) { return gg_hash_add(GG_HASH_INIT, s); }
static inline unsigned long long gg_hash_addn(unsigned long long h, const void *p, size_t n) {
    for (size_t i = 0; i < n; i++) h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
    return h;
}

/* Ask the cache for the n bytes at p ahead of their use (a hint: no fault, no effect on
 * what the program computes). For loops over records another core wrote, whose addresses
 * are known a few iterations early: the history writer's batch. */
static inline void gg_prefetch(const void *p, size_t n) {
    for (size_t off = 0; off < n; off += 64) __builtin_prefetch((const char *)p + off);
}

/* The candidate closest to word by edit distance (suggest.c), if within max(2, strlen(word)/3)
 * edits; the first of equally close ones; NULL when none is that close (NULL entries are
 * skipped). For "did you mean 'x'?" in messages about a misspelt name. */
const char *gg_closest(const char *word, const char *const *candidates, size_t n);
/* The tail of an unknown-name message, appended to b: "; did you mean 'digest'?" when
 * gg_closest finds one, then "; <what>: a, b, c" when there are at most GG_SUGGEST_LIST_MAX
 * names (NULL entries skipped). */
#define GG_SUGGEST_LIST_MAX 20
void gg_suggest(gg_strbuf *b, const char *word, const char *const *names, size_t n, const char *what);

/* Monotonic and wall clocks in milliseconds / microseconds. */
double gg_now_ms(void);
long long gg_wall_ms(void);
/* CLOCK_REALTIME ms from now, for pthread_cond_timedwait on a default condition variable. */
struct timespec gg_wall_timespec_in_ms(long ms);

#endif
