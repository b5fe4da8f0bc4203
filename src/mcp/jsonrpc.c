/* jsonrpc.c — JSON-RPC 2.0 framing: parse a body, classify one message, serialize
 * responses and notifications. No MCP knowledge lives here. */
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp.h"

/* Nesting depth of a JSON text, counting brackets outside strings; -1 when it passes max
 * (checked before parsing so a hostile body cannot make the parser recurse deeply). */
static int json_depth_exceeds(const char *buf, size_t len, int max) {
    int depth = 0;
    bool in_str = false;
    for (size_t i = 0; i < len; i++) {
        char ch = buf[i];
        if (in_str) {
            if (ch == '\\') i++;
            else if (ch == '"') in_str = false;
        } else if (ch == '"') in_str = true;
        else if (ch == '{' || ch == '[') {
            if (++depth > max) return 1;
        } else if (ch == '}' || ch == ']') depth--;
    }
    return 0;
}

/* Parse a request body into one JSON value; NULL with err (code "parse_error") when the
 * text is not JSON, not UTF-8, or nested deeper than max_depth (0 = 64). */
json_t *mcp_jsonrpc_parse(const char *buf, size_t len, int max_depth, gg_error *err) {
    if (max_depth <= 0) max_depth = 64;
    if (!buf || len == 0) {
        gg_error_set(err, "parse_error", "Parse error: empty body");
        return NULL;
    }
    if (json_depth_exceeds(buf, len, max_depth)) {
        gg_error_set(err, "parse_error", "Parse error: JSON nested deeper than %d levels", max_depth);
        return NULL;
    }
    json_error_t je;
    json_t *v = json_loadb(buf, len, JSON_DECODE_ANY, &je);
    if (!v) {
        gg_error_set(err, "parse_error", "Parse error: %s at line %d column %d", je.text, je.line, je.column);
        gg_error_set_pos(err, je.line, je.column);
    }
    return v;
}

static void invalid(mcp_message *out, json_t *id, const char *why) {
    out->kind = MCP_MSG_INVALID;
    out->id = id;
    out->error_code = MCP_INVALID_REQUEST;
    out->error_message = why;
}

/* Classify one parsed value (never an array: batches are split or refused by the caller). */
void mcp_jsonrpc_classify(json_t *value, mcp_message *out) {
    memset(out, 0, sizeof *out);
    if (!json_is_object(value)) {
        invalid(out, NULL, "Invalid Request: a JSON-RPC message must be an object");
        return;
    }
    json_t *id = json_object_get(value, "id");
    json_t *good_id = (json_is_string(id) || json_is_number(id)) ? id : NULL;
    json_t *ver = json_object_get(value, "jsonrpc");
    if (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0") != 0) {
        invalid(out, good_id, "Invalid Request: \"jsonrpc\" must be \"2.0\"");
        return;
    }
    if (id && !good_id) {
        invalid(out, NULL, "Invalid Request: \"id\" must be a string or a number");
        return;
    }
    json_t *method = json_object_get(value, "method");
    if (method) {
        if (!json_is_string(method)) {
            invalid(out, good_id, "Invalid Request: \"method\" must be a string");
            return;
        }
        json_t *params = json_object_get(value, "params");
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
    json_t *result = json_object_get(value, "result"), *error = json_object_get(value, "error");
    if (good_id && ((result != NULL) != (error != NULL)) && (!error || json_is_object(error))) {
        out->kind = MCP_MSG_RESPONSE;
        out->id = good_id;
        return;
    }
    invalid(out, good_id, "Invalid Request: neither a request, a notification nor a response");
}

/* JSON text of v appended to b, byte for byte what json_dumps(v, JSON_COMPACT |
 * JSON_ENCODE_ANY) prints, without its per-token callbacks and temporary string: every
 * response passes through here. Reals (rare in responses) are left to jansson so their
 * digits stay identical. Depth is bounded by the caller's data (parsed with a depth limit
 * or built by us). */
static void put_string(gg_strbuf *b, const char *s, size_t len) {
    static const char hex[] = "0123456789abcdef";
    gg_strbuf_putc(b, '"');
    size_t run = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        gg_strbuf_append(b, s + run, i - run);
        run = i + 1;
        char esc[7] = {'\\', 0, 0, 0, 0, 0, 0};
        size_t n = 2;
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        default:
            esc[1] = 'u'; esc[2] = '0'; esc[3] = '0'; esc[4] = hex[c >> 4]; esc[5] = hex[c & 15];
            n = 6;
        }
        gg_strbuf_append(b, esc, n);
    }
    gg_strbuf_append(b, s + run, len - run);
    gg_strbuf_putc(b, '"');
}

static bool put_json(gg_strbuf *b, json_t *v) {
    char num[32];
    switch (v ? json_typeof(v) : JSON_NULL) {
    case JSON_NULL: return gg_strbuf_puts(b, "null");
    case JSON_TRUE: return gg_strbuf_puts(b, "true");
    case JSON_FALSE: return gg_strbuf_puts(b, "false");
    case JSON_INTEGER: {
        char tmp[24];
        size_t n = 0, k = 0;
        json_int_t i = json_integer_value(v);
        unsigned long long u = i < 0 ? 0ULL - (unsigned long long)i : (unsigned long long)i;
        do tmp[n++] = (char)('0' + u % 10); while ((u /= 10) != 0);
        if (i < 0) num[k++] = '-';
        while (n) num[k++] = tmp[--n];
        return gg_strbuf_append(b, num, k);
    }
    case JSON_REAL: {
        char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        if (!s) return false;
        bool ok = gg_strbuf_puts(b, s);
        free(s);
        return ok;
    }
    case JSON_STRING: put_string(b, json_string_value(v), json_string_length(v)); return !b->oom;
    case JSON_ARRAY: {
        gg_strbuf_putc(b, '[');
        for (size_t i = 0, n = json_array_size(v); i < n; i++) {
            if (i) gg_strbuf_putc(b, ',');
            put_json(b, json_array_get(v, i));
        }
        return gg_strbuf_putc(b, ']');
    }
    case JSON_OBJECT: {
        const char *key;
        json_t *val;
        bool first = true;
        gg_strbuf_putc(b, '{');
        json_object_foreach(v, key, val) {
            if (!first) gg_strbuf_putc(b, ',');
            first = false;
            put_string(b, key, strlen(key));
            gg_strbuf_putc(b, ':');
            put_json(b, val);
        }
        return gg_strbuf_putc(b, '}');
    }
    }
    return false;
}

/* A success response whose result is already serialized JSON text. */
char *mcp_jsonrpc_result_raw(json_t *id, const char *result_json) {
    gg_strbuf b = GG_STRBUF_INIT;
    gg_strbuf_puts(&b, "{\"jsonrpc\":\"2.0\",\"id\":");
    put_json(&b, id);
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
    put_json(&b, id);
    gg_strbuf_puts(&b, ",\"result\":");
    if (result) put_json(&b, result);
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
    put_json(&b, id);
    gg_strbuf_puts(&b, ",\"error\":");
    put_json(&b, err);
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
