/* response.c — building responses and the JSON error model. The HTTP layer is the edge
 * where error codes become statuses, so the one mapping table lives here. */
#include "http/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An empty response (status 0 = "handler set nothing"). */
void gg_http_res_init(gg_http_res *res) { memset(res, 0, sizeof *res); }

/* Free the body and headers; the response is empty again. */
void gg_http_res_clear(gg_http_res *res) {
    free(res->body);
    for (size_t i = 0; i < res->nheaders * 2; i++) free(res->headers[i]);
    free(res->headers);
    gg_http_res_init(res);
}

/* Move src into dst. */
void gg_http_res_move(gg_http_res *dst, gg_http_res *src) {
    gg_http_res_clear(dst);
    *dst = *src;
    gg_http_res_init(src);
}

static bool set_body(gg_http_res *res, int status, const char *ct, char *body, size_t len) {
    free(res->body);
    res->body = body;
    res->len = len;
    res->status = status;
    if (!ct) ct = "application/octet-stream";
    size_t n = strnlen(ct, sizeof res->content_type - 1); /* no snprintf: this is per request */
    memcpy(res->content_type, ct, n);
    res->content_type[n] = '\0';
    return true;
}

/* status + JSON body; steals body. */
bool gg_http_res_json(gg_http_res *res, int status, json_t *body) {
    char *text = body ? json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY) : strdup("{}");
    json_decref(body);
    if (!text) return false;
    return set_body(res, status, "application/json", text, strlen(text));
}

/* status + pre-serialized JSON (copied). */
bool gg_http_res_json_text(gg_http_res *res, int status, const char *json, size_t len) {
    return gg_http_res_bytes(res, status, "application/json", json, len);
}

/* Raw bytes (copied). */
bool gg_http_res_bytes(gg_http_res *res, int status, const char *content_type, const void *data,
                       size_t len) {
    char *copy = malloc(len + 1);
    if (!copy) return false;
    if (len) memcpy(copy, data, len);
    copy[len] = '\0';
    return set_body(res, status, content_type, copy, len);
}

/* Raw bytes, ownership taken. */
bool gg_http_res_bytes_take(gg_http_res *res, int status, const char *content_type, void *data,
                            size_t len) {
    return set_body(res, status, content_type, data, len);
}

static bool header_ok(const char *s, bool name) {
    if (!s || (name && !*s)) return false;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\r' || c == '\n' || c == 0x7f || (c < ' ' && c != '\t')) return false;
        if (name && (c == ':' || c == ' ' || c == '\t')) return false;
    }
    return true;
}

/* Add a header; refuses names/values that would split the header block. */
bool gg_http_res_header(gg_http_res *res, const char *name, const char *value) {
    if (!header_ok(name, true) || !header_ok(value, false)) return false;
    char **grown = realloc(res->headers, (res->nheaders + 1) * 2 * sizeof *grown);
    if (!grown) return false;
    res->headers = grown;
    char *n = strdup(name), *v = strdup(value);
    if (!n || !v) {
        free(n);
        free(v);
        return false;
    }
    res->headers[res->nheaders * 2] = n;
    res->headers[res->nheaders * 2 + 1] = v;
    res->nheaders++;
    return true;
}

int gg_http_res_status(const gg_http_res *res) { return res->status; }

/* {"error":{"code":...,"message":...}} as text; caller frees. */
char *gg_http_error_body(const char *code, const char *message) {
    json_t *o = json_pack("{s:{s:s,s:s}}", "error", "code", code ? code : "internal_error",
                          "message", message ? message : "");
    if (!o) return NULL;
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

static bool error_json(gg_http_res *res, int status, json_t *err_obj) {
    json_t *o = json_object();
    if (!o || !err_obj || json_object_set_new(o, "error", err_obj) != 0) {
        json_decref(o);
        return false;
    }
    return gg_http_res_json(res, status, o);
}

static bool error_va(gg_http_res *res, int status, const char *code, json_t *extra, const char *fmt, va_list ap) {
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    json_t *e = json_pack("{s:s,s:s}", "code", code ? code : "internal_error", "message", msg);
    /* code and message come first and cannot be overwritten by an extra member */
    if (e && extra && json_object_update_missing(e, extra) != 0) {
        json_decref(e);
        e = NULL;
    }
    json_decref(extra);
    if (!e) return false;
    return error_json(res, status, e);
}

/* The JSON error model with a printf message. */
bool gg_http_res_error(gg_http_res *res, int status, const char *code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    bool ok = error_va(res, status, code, NULL, fmt, ap);
    va_end(ap);
    return ok;
}

/* See http.h. */
bool gg_http_res_fail(gg_http_res *res, const char *code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    bool ok = error_va(res, gg_errcode_http_status(code), code, NULL, fmt, ap);
    va_end(ap);
    return ok;
}

/* See http.h. */
bool gg_http_res_error_extra(gg_http_res *res, int status, const char *code, json_t *extra, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    bool ok = error_va(res, status, code, extra, fmt, ap);
    va_end(ap);
    return ok;
}

/* The JSON error model from a gg_error; status 0 derives it from the code. */
bool gg_http_res_error_from(gg_http_res *res, int status, const gg_error *e) {
    if (status == 0) status = gg_http_status_for_error(e);
    const char *code = (e && e->code[0]) ? e->code : "internal_error";
    json_t *o = json_pack("{s:s,s:s}", "code", code, "message",
                          (e && e->message) ? e->message : code);
    if (!o) return false;
    if (e && e->line > 0) {
        json_object_set_new(o, "line", json_integer(e->line));
        json_object_set_new(o, "column", json_integer(e->column));
    }
    if (e && e->position >= 0) json_object_set_new(o, "position", json_integer(e->position));
    if (e && e->path) json_object_set_new(o, "path", json_string(e->path));
    return error_json(res, status, o);
}

/* Error code → HTTP status: the one table in src/util/errcode.c. */
int gg_http_status_for_error(const gg_error *e) { return gg_error_http_status(e); }
