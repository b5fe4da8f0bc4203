/* jsonrpc.c — JSON-RPC 2.0 framing: parse a body, classify one message, serialize
 * responses and notifications. No MCP knowledge lives here. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp.h"

/* ---- the request parser ------------------------------------------------------------
 * Every request body goes through here, so it reads the buffer directly instead of through
 * jansson's character stream, and builds the jansson values itself. It accepts exactly what
 * json_loadb(JSON_DECODE_ANY) accepts (RFC 8259 text, strict UTF-8 without surrogates or
 * overlong forms, no \u0000, integers that fit in 64 bits, finite reals, later duplicate
 * keys winning) — tests/mcp/test_mcp.c checks that against jansson on mutated inputs — and
 * bounds nesting itself, so hostile input cannot make it recurse deeply. */

typedef struct jparse {
    const char *start, *p, *end;
    int depth, max_depth;
    const char *why;   /* first error, static text */
    const char *at;    /* where it was found */
    char scratch[256]; /* decoded escaped string values up to this size */
} jparse;

static json_t *jp_value(jparse *s);

static json_t *jp_fail(jparse *s, const char *why) {
    if (!s->why) {
        s->why = why;
        s->at = s->p;
    }
    return NULL;
}

static void jp_ws(jparse *s) {
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t')) s->p++;
}

#define JP_R16(c) c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c
/* The bytes that end a run of plain string bytes: the quote, the backslash, controls and
 * every byte >= 0x80 (UTF-8, checked by gg_utf8_len). */
static const unsigned char jp_stop[256] = {JP_R16(1), JP_R16(1), ['"'] = 1, ['\\'] = 1,
    [0x80] = JP_R16(1), JP_R16(1), JP_R16(1), JP_R16(1), JP_R16(1), JP_R16(1), JP_R16(1), JP_R16(1)};

/* A string starting after its opening quote. Without escapes it is returned in place
 * (*len bytes at the returned pointer); with escapes it is decoded into buf (cap bytes) or,
 * when longer, into *heap (the caller frees it). NULL on error. */
static const char *jp_string(jparse *s, char *buf, size_t cap, size_t *len, char **heap) {
    const char *b = s->p, *p = s->p, *end = s->end;
    bool escaped = false;
    /* every key and string of every request: plain bytes by one table lookup each, on a
     * local pointer (stores through s->p would be reloaded after every byte read) */
    for (;;) {
        while (p < end && !jp_stop[(unsigned char)*p]) p++;
        if (p >= end) break;
        unsigned char c = (unsigned char)*p;
        if (c == '"') break;
        if (c == '\\') {
            escaped = true;
            if (++p >= end) break;
            p++;
            continue;
        }
        s->p = p;
        if (c < 0x20) return jp_fail(s, "control character in a string"), NULL;
        size_t n = gg_utf8_len((const unsigned char *)p, (size_t)(end - p));
        if (!n) return jp_fail(s, "invalid UTF-8 in a string"), NULL;
        p += n;
    }
    s->p = p;
    if (s->p >= s->end) return jp_fail(s, "unterminated string"), NULL;
    const char *e = s->p++; /* past the closing quote */
    if (!escaped) {
        *len = (size_t)(e - b);
        return b;
    }
    /* decoding never grows the text: every escape is at least as long as its output */
    char *o = (size_t)(e - b) <= cap ? buf : (*heap = malloc((size_t)(e - b) + 1));
    if (!o) return jp_fail(s, "out of memory"), NULL;
    size_t n = 0;
    for (const char *q = b; q < e;) {
        if (*q != '\\') { o[n++] = *q++; continue; }
        char c = q[1];
        q += 2;
        switch (c) {
        case '"': o[n++] = '"'; break;
        case '\\': o[n++] = '\\'; break;
        case '/': o[n++] = '/'; break;
        case 'b': o[n++] = '\b'; break;
        case 'f': o[n++] = '\f'; break;
        case 'n': o[n++] = '\n'; break;
        case 'r': o[n++] = '\r'; break;
        case 't': o[n++] = '\t'; break;
        case 'u': {
            int u = e - q >= 4 ? gg_hex4(q) : -1;
            if (u < 0) { s->p = q - 2; return jp_fail(s, "invalid \\u escape"), NULL; }
            q += 4;
            unsigned cp = (unsigned)u;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                int lo = e - q >= 6 && q[0] == '\\' && q[1] == 'u' ? gg_hex4(q + 2) : -1;
                if (lo < 0xDC00 || lo > 0xDFFF) { s->p = q - 6; return jp_fail(s, "invalid Unicode surrogate pair"), NULL; }
                cp = 0x10000 + ((cp - 0xD800) << 10) + ((unsigned)lo - 0xDC00);
                q += 6;
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                s->p = q - 6;
                return jp_fail(s, "invalid Unicode surrogate"), NULL;
            } else if (cp == 0) {
                s->p = q - 6;
                return jp_fail(s, "\\u0000 is not allowed"), NULL;
            }
            n += gg_utf8_encode(cp, o + n);
            break;
        }
        default: s->p = q - 2; return jp_fail(s, "invalid escape"), NULL;
        }
    }
    *len = n;
    return o;
}

static json_t *jp_number(jparse *s) {
    const char *b = s->p;
    bool real = false;
    if (s->p < s->end && *s->p == '-') s->p++;
    if (s->p >= s->end || *s->p < '0' || *s->p > '9') return jp_fail(s, "invalid number");
    if (*s->p == '0') s->p++;
    else while (s->p < s->end && *s->p >= '0' && *s->p <= '9') s->p++;
    if (s->p < s->end && *s->p == '.') {
        real = true;
        s->p++;
        if (s->p >= s->end || *s->p < '0' || *s->p > '9') return jp_fail(s, "invalid number");
        while (s->p < s->end && *s->p >= '0' && *s->p <= '9') s->p++;
    }
    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
        real = true;
        s->p++;
        if (s->p < s->end && (*s->p == '+' || *s->p == '-')) s->p++;
        if (s->p >= s->end || *s->p < '0' || *s->p > '9') return jp_fail(s, "invalid number");
        while (s->p < s->end && *s->p >= '0' && *s->p <= '9') s->p++;
    }
    size_t n = (size_t)(s->p - b);
    if (!real) {
        /* accumulate negatively: covers LLONG_MIN, detects overflow either way */
        bool neg = *b == '-';
        long long v = 0;
        for (const char *q = b + neg; q < s->p; q++) {
            int d = *q - '0';
            if (v < (LLONG_MIN + d) / 10) { s->p = b; return jp_fail(s, "too big integer"); }
            v = v * 10 - d;
        }
        if (!neg) {
            if (v == LLONG_MIN) { s->p = b; return jp_fail(s, "too big integer"); }
            v = -v;
        }
        return json_integer(v);
    }
    char buf[64], *tmp = n < sizeof buf ? buf : malloc(n + 1);
    if (!tmp) return jp_fail(s, "out of memory");
    memcpy(tmp, b, n);
    tmp[n] = '\0';
    char *endp;
    double d = strtod(tmp, &endp);
    if (tmp != buf) free(tmp);
    if (!isfinite(d)) { s->p = b; return jp_fail(s, "real number overflow"); }
    return json_real(d);
}

static bool jp_literal(jparse *s, const char *word, size_t n) {
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0) return false;
    s->p += n;
    return true;
}

static json_t *jp_object(jparse *s) {
    json_t *o = json_object();
    if (!o) return jp_fail(s, "out of memory");
    jp_ws(s);
    if (s->p < s->end && *s->p == '}') { s->p++; return o; }
    for (;;) {
        jp_ws(s);
        if (s->p >= s->end || *s->p != '"') { json_decref(o); return jp_fail(s, "string or '}' expected"); }
        s->p++;
        size_t klen = 0;
        char *heap = NULL, kbuf[64]; /* the key must outlive the value's parse */
        const char *k = jp_string(s, kbuf, sizeof kbuf, &klen, &heap);
        if (!k) { free(heap); json_decref(o); return NULL; } /* an escape error after decoding began */
        jp_ws(s);
        if (s->p >= s->end || *s->p != ':') { free(heap); json_decref(o); return jp_fail(s, "':' expected"); }
        s->p++;
        json_t *v = jp_value(s);
        if (!v) { free(heap); json_decref(o); return NULL; }
        int rc = json_object_setn_new_nocheck(o, k, klen, v);
        free(heap);
        if (rc != 0) { json_decref(o); return jp_fail(s, "out of memory"); }
        jp_ws(s);
        if (s->p < s->end && *s->p == ',') { s->p++; continue; }
        if (s->p < s->end && *s->p == '}') { s->p++; return o; }
        json_decref(o);
        return jp_fail(s, "',' or '}' expected");
    }
}

static json_t *jp_array(jparse *s) {
    json_t *a = json_array();
    if (!a) return jp_fail(s, "out of memory");
    jp_ws(s);
    if (s->p < s->end && *s->p == ']') { s->p++; return a; }
    for (;;) {
        json_t *v = jp_value(s);
        if (!v || json_array_append_new(a, v) != 0) { json_decref(a); return v ? jp_fail(s, "out of memory") : NULL; }
        jp_ws(s);
        if (s->p < s->end && *s->p == ',') { s->p++; continue; }
        if (s->p < s->end && *s->p == ']') { s->p++; return a; }
        json_decref(a);
        return jp_fail(s, "',' or ']' expected");
    }
}

static json_t *jp_value(jparse *s) {
    jp_ws(s);
    if (s->p >= s->end) return jp_fail(s, "unexpected end of input");
    char c = *s->p;
    if (c == '{' || c == '[') {
        if (++s->depth > s->max_depth) return jp_fail(s, "nested too deeply");
        s->p++;
        json_t *v = c == '{' ? jp_object(s) : jp_array(s);
        s->depth--;
        return v;
    }
    if (c == '"') {
        s->p++;
        size_t len = 0;
        char *heap = NULL;
        const char *str = jp_string(s, s->scratch, sizeof s->scratch, &len, &heap);
        json_t *v = str ? json_stringn_nocheck(str, len) : NULL;
        free(heap);
        return v || !str ? v : jp_fail(s, "out of memory");
    }
    if (c == '-' || (c >= '0' && c <= '9')) return jp_number(s);
    if (jp_literal(s, "true", 4)) return json_true();
    if (jp_literal(s, "false", 5)) return json_false();
    if (jp_literal(s, "null", 4)) return json_null();
    return jp_fail(s, "invalid token");
}

/* Parse a request body into one JSON value; NULL with err (code "parse_error", message with
 * line and column) when the text is not JSON, not UTF-8, or nested deeper than max_depth
 * (0 = 64). */
json_t *mcp_jsonrpc_parse(const char *buf, size_t len, int max_depth, gg_error *err) {
    if (max_depth <= 0) max_depth = 64;
    if (!buf || len == 0) {
        gg_error_set(err, "parse_error", "Parse error: empty body");
        return NULL;
    }
    jparse s = {.start = buf, .p = buf, .end = buf + len, .max_depth = max_depth};
    json_t *v = jp_value(&s);
    if (v) {
        jp_ws(&s);
        if (s.p < s.end) {
            json_decref(v);
            v = jp_fail(&s, "end of input expected");
        }
    }
    if (!v) {
        int line = 1, col = 1;
        for (const char *q = buf; q < s.at && q < s.end; q++) {
            if (*q == '\n') line++, col = 1;
            else col++;
        }
        if (s.why && strcmp(s.why, "nested too deeply") == 0)
            gg_error_set(err, "parse_error", "Parse error: JSON nested deeper than %d levels", max_depth);
        else gg_error_set(err, "parse_error", "Parse error: %s at line %d column %d", s.why ? s.why : "invalid JSON", line, col);
        gg_error_set_pos(err, line, col);
    }
    return v;
}

static void invalid(mcp_message *out, json_t *id, const char *why) {
    out->kind = MCP_MSG_INVALID;
    out->id = id;
    out->error_code = MCP_INVALID_REQUEST;
    out->error_message = why;
}

/* The envelope's members, found in one walk over its keys: a lookup by name costs ~160
 * instructions (strlen, hash, bucket) and classify needs four on every request, a walk ~30
 * a member. Keys compare with their lengths, exactly as json_object_get matches them. */
typedef struct envelope {
    json_t *id, *jsonrpc, *method, *params, *result, *error;
} envelope;

#define KEY_IS(k, n, lit) ((n) == sizeof(lit) - 1 && !memcmp((k), (lit), sizeof(lit) - 1))

static void envelope_of(json_t *v, envelope *e) {
    memset(e, 0, sizeof *e);
    for (void *it = json_object_iter(v); it; it = json_object_iter_next(v, it)) {
        const char *k = json_object_iter_key(it);
        size_t n = json_object_iter_key_len(it);
        json_t *val = json_object_iter_value(it);
        if (KEY_IS(k, n, "id")) e->id = val;
        else if (KEY_IS(k, n, "jsonrpc")) e->jsonrpc = val;
        else if (KEY_IS(k, n, "method")) e->method = val;
        else if (KEY_IS(k, n, "params")) e->params = val;
        else if (KEY_IS(k, n, "result")) e->result = val;
        else if (KEY_IS(k, n, "error")) e->error = val;
    }
}

/* Classify one parsed value (never an array: batches are split or refused by the caller). */
void mcp_jsonrpc_classify(json_t *value, mcp_message *out) {
    memset(out, 0, sizeof *out);
    if (!json_is_object(value)) {
        invalid(out, NULL, "Invalid Request: a JSON-RPC message must be an object");
        return;
    }
    envelope env;
    envelope_of(value, &env);
    json_t *id = env.id;
    json_t *good_id = (json_is_string(id) || json_is_number(id)) ? id : NULL;
    json_t *ver = env.jsonrpc;
    if (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0") != 0) {
        invalid(out, good_id, "Invalid Request: \"jsonrpc\" must be \"2.0\"");
        return;
    }
    if (id && !good_id) {
        invalid(out, NULL, "Invalid Request: \"id\" must be a string or a number");
        return;
    }
    json_t *method = env.method;
    if (method) {
        if (!json_is_string(method)) {
            invalid(out, good_id, "Invalid Request: \"method\" must be a string");
            return;
        }
        json_t *params = env.params;
        if (params && !json_is_object(params) && !json_is_array(params)) {
            invalid(out, good_id, "Invalid Request: \"params\" must be an object");
            return;
        }
        out->kind = good_id ? MCP_MSG_REQUEST : MCP_MSG_NOTIFICATION;
        out->id = good_id;
        out->method = json_string_value(method);
        out->params = params;
        return;
    }
    json_t *result = env.result, *error = env.error;
    if (good_id && ((result != NULL) != (error != NULL)) && (!error || json_is_object(error))) {
        out->kind = MCP_MSG_RESPONSE;
        out->id = good_id;
        out->result = result;
        out->error = error;
        return;
    }
    invalid(out, good_id, "Invalid Request: neither a request, a notification nor a response");
}

/* A success response whose result is already serialized JSON text. */
char *mcp_jsonrpc_result_raw(json_t *id, const char *result_json) {
    gg_strbuf b = GG_STRBUF_INIT;
    gg_strbuf_puts(&b, "{\"jsonrpc\":\"2.0\",\"id\":");
    gg_strbuf_put_json(&b, id);
    gg_strbuf_puts(&b, ",\"result\":");
    gg_strbuf_puts(&b, result_json);
    gg_strbuf_putc(&b, '}');
    if (b.oom) { gg_strbuf_free(&b); return NULL; }
    return gg_strbuf_take(&b);
}

/* A success response {"jsonrpc":"2.0","id":id,"result":result}; heap string. */
char *mcp_jsonrpc_result(json_t *id, json_t *result) {
    gg_strbuf b = GG_STRBUF_INIT;
    gg_strbuf_reserve(&b, 480); /* a typical tool result without regrowing */
    gg_strbuf_puts(&b, "{\"jsonrpc\":\"2.0\",\"id\":");
    gg_strbuf_put_json(&b, id);
    gg_strbuf_puts(&b, ",\"result\":");
    if (result) gg_strbuf_put_json(&b, result);
    else gg_strbuf_puts(&b, "{}");
    gg_strbuf_putc(&b, '}');
    if (b.oom) { gg_strbuf_free(&b); return NULL; }
    return gg_strbuf_take(&b);
}

/* An error response; id NULL serializes as null (the id could not be determined). */
char *mcp_jsonrpc_error(json_t *id, int code, const char *message, json_t *data) {
    json_t *err = json_pack("{s:i,s:s}", "code", code, "message", message ? message : "error");
    if (!err) return NULL;
    if (data) json_object_set(err, "data", data);
    gg_strbuf b = GG_STRBUF_INIT;
    gg_strbuf_puts(&b, "{\"jsonrpc\":\"2.0\",\"id\":");
    gg_strbuf_put_json(&b, id);
    gg_strbuf_puts(&b, ",\"error\":");
    gg_strbuf_put_json(&b, err);
    gg_strbuf_putc(&b, '}');
    json_decref(err);
    if (b.oom) { gg_strbuf_free(&b); return NULL; }
    return gg_strbuf_take(&b);
}

/* A notification {"jsonrpc":"2.0","method":...,"params":...}. */
char *mcp_jsonrpc_notification(const char *method, json_t *params) {
    json_t *m = json_pack("{s:s,s:s}", "jsonrpc", "2.0", "method", method);
    if (!m) return NULL;
    if (params) json_object_set(m, "params", params);
    char *s = json_dumps(m, JSON_COMPACT);
    json_decref(m);
    return s;
}
