/* json_write.c — the one fast JSON writer: string escaping and jansson values as compact
 * text, appended to a gg_strbuf. Every JSON-RPC response (src/mcp/jsonrpc.c) and every
 * recorded run's texts (src/store/history_text.c) pass through here, so it writes without
 * printf, per-token callbacks or temporary strings; its output is byte for byte what
 * json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) prints, except \u00XX escapes in lowercase
 * hex as JSON.stringify writes them (tests/util/test_util.c checks). */
#include "util/util.h"

#include <jansson.h>
#include <string.h>

/* Quote, backslash, \b \f \n \r \t, other controls as \u00XX (lowercase, as
 * JSON.stringify writes them); with repair, a byte outside well-formed UTF-8 as \ufffd. */
#define ESC_ALWAYS 1 /* controls, quote, backslash */
#define ESC_UTF8 2   /* a byte >= 0x80: looked at with repair */
#define ESC_R16(c) c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c
/* one table lookup a byte instead of four comparisons (~30 strings a tools/call) */
static const unsigned char esc_class[256] = {
    ESC_R16(ESC_ALWAYS), ESC_R16(ESC_ALWAYS), ['"'] = ESC_ALWAYS, ['\\'] = ESC_ALWAYS,
    [0x80] = ESC_R16(ESC_UTF8), ESC_R16(ESC_UTF8), ESC_R16(ESC_UTF8), ESC_R16(ESC_UTF8),
    ESC_R16(ESC_UTF8), ESC_R16(ESC_UTF8), ESC_R16(ESC_UTF8), ESC_R16(ESC_UTF8)};

/* Short strings with nothing to escape (keys, node ids, most values: ~30 a tools/call, 9
 * bytes on average) are copied while they are scanned: the general path's setup and its
 * memcpy call cost more than the bytes themselves. False when s needs the general path;
 * b is then as it was (the scan may have written into its spare capacity only). */
#define ESC_SHORT 64
static inline bool copy_clean_short(gg_strbuf *b, const char *s, size_t n, unsigned mask) {
    if (n > ESC_SHORT || b->oom || b->len + n + 1 > b->cap) return false;
    char *d = b->data + b->len;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (esc_class[ch] & mask) {
            d[0] = '\0'; /* the terminator the scan wrote over */
            return false;
        }
        d[i] = (char)ch;
    }
    d[n] = '\0';
    b->len += n;
    return true;
}

static bool escape_general(gg_strbuf *b, const char *s, size_t n, bool repair) {
    static const char hex[] = "0123456789abcdef";
    if (!gg_strbuf_reserve(b, n + n / 8 + 16)) return false;
    const unsigned mask = repair ? ESC_ALWAYS | ESC_UTF8 : ESC_ALWAYS;
    size_t run = 0; /* start of the bytes copied verbatim in one go */
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (!(esc_class[ch] & mask)) continue;
        if (ch >= 0x80) {
            size_t w = gg_utf8_len((const unsigned char *)s + i, n - i);
            if (w) {
                i += w - 1;
                continue;
            }
            gg_strbuf_append(b, s + run, i - run);
            gg_strbuf_append(b, "\\ufffd", 6);
            run = i + 1;
            continue;
        }
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

static inline bool escape(gg_strbuf *b, const char *s, size_t n, bool repair) {
    return copy_clean_short(b, s, n, repair ? ESC_ALWAYS | ESC_UTF8 : ESC_ALWAYS) || escape_general(b, s, n, repair);
}

/* The inside of a JSON string, every other byte as it is. Shared by every JSON writer. */
bool gg_strbuf_json_escape(gg_strbuf *b, const char *s, size_t n) { return escape(b, s, n, false); }

bool gg_strbuf_json_string(gg_strbuf *b, const char *s, size_t n) {
    gg_strbuf_putc(b, '"');
    escape(b, s, n, true);
    return gg_strbuf_putc(b, '"');
}

static int dump_cb(const char *buf, size_t size, void *data) {
    return gg_strbuf_append(data, buf, size) ? 0 : -1;
}

/* Nesting this deep is handed to jansson's own encoder, which also catches cycles. */
#define JSON_WRITE_DEPTH 512

static bool put_json(gg_strbuf *b, json_t *v, int depth) {
    switch (v ? json_typeof(v) : JSON_NULL) {
    case JSON_NULL: return gg_strbuf_append(b, "null", 4);
    case JSON_TRUE: return gg_strbuf_append(b, "true", 4);
    case JSON_FALSE: return gg_strbuf_append(b, "false", 5);
    case JSON_INTEGER: return gg_strbuf_put_int(b, (long long)json_integer_value(v));
    case JSON_STRING: return gg_strbuf_json_string(b, json_string_value(v), json_string_length(v));
    case JSON_ARRAY: {
        if (depth >= JSON_WRITE_DEPTH) break;
        gg_strbuf_putc(b, '[');
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) {
            if (i) gg_strbuf_putc(b, ',');
            if (!put_json(b, e, depth + 1)) return false;
        }
        return gg_strbuf_putc(b, ']');
    }
    case JSON_OBJECT: {
        if (depth >= JSON_WRITE_DEPTH) break;
        gg_strbuf_putc(b, '{');
        /* one iterator walked directly, in json_object_keylen_foreach's order: the macro
         * looks each key up again (key_to_iter three times a key) */
        bool first = true;
        for (void *it = json_object_iter(v); it; it = json_object_iter_next(v, it), first = false) {
            if (!first) gg_strbuf_putc(b, ',');
            gg_strbuf_json_string(b, json_object_iter_key(it), json_object_iter_key_len(it));
            gg_strbuf_putc(b, ':');
            if (!put_json(b, json_object_iter_value(it), depth + 1)) return false;
        }
        return gg_strbuf_putc(b, '}');
    }
    case JSON_REAL: break; /* jansson's formatting, exactly */
    }
    return json_dump_callback(v, dump_cb, b, JSON_COMPACT | JSON_ENCODE_ANY) == 0 && !b->oom;
}

bool gg_strbuf_put_json(gg_strbuf *b, const struct json_t *v) { return put_json(b, (json_t *)v, 0); }

/* See util.h. A set_new or append_new takes its value even when it fails. */
json_t *gg_json_clone(const json_t *v) {
    if (!v) return NULL;
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        json_t *o = json_object();
        for (void *it = json_object_iter((json_t *)v); o && it; it = json_object_iter_next((json_t *)v, it)) {
            json_t *c = gg_json_clone(json_object_iter_value(it));
            if (!c || json_object_setn_new_nocheck(o, json_object_iter_key(it), json_object_iter_key_len(it), c)) {
                json_decref(o);
                return NULL;
            }
        }
        return o;
    }
    case JSON_ARRAY: {
        size_t n = json_array_size(v);
        json_t *a = json_array();
        for (size_t i = 0; a && i < n; i++) {
            json_t *c = gg_json_clone(json_array_get(v, i));
            if (!c || json_array_append_new(a, c)) {
                json_decref(a);
                return NULL;
            }
        }
        return a;
    }
    case JSON_STRING: return json_stringn_nocheck(json_string_value(v), json_string_length(v));
    case JSON_INTEGER: return json_integer(json_integer_value(v));
    case JSON_REAL: return json_real(json_real_value(v));
    default: return json_incref((json_t *)v); /* true, false, null: shared constants */
    }
}

/* See util.h. Keys are matched with their lengths, as jansson matches them. */
void gg_json_members(const struct json_t *obj, size_t n, const gg_json_key keys[], struct json_t *vals[]) {
    for (size_t i = 0; i < n; i++) vals[i] = NULL;
    json_t *o = (json_t *)obj;
    if (!json_is_object(o)) return;
    size_t left = n;
    for (void *it = json_object_iter(o); it && left; it = json_object_iter_next(o, it)) {
        size_t len = json_object_iter_key_len(it);
        const char *k = NULL;
        for (size_t i = 0; i < n; i++) {
            if (keys[i].len != len || vals[i]) continue;
            if (!k) k = json_object_iter_key(it);
            if (memcmp(k, keys[i].name, len) != 0) continue;
            vals[i] = json_object_iter_value(it);
            left--;
            break;
        }
    }
}
