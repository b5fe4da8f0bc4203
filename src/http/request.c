/* request.c — one request from headers to completion: per-connection state, request ids,
 * the body limit, routing and dispatch, sending a response, and the completion that logs,
 * counts and recycles the request. */
#include "http/internal.h"

#include <stdatomic.h>
#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <sodium.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static bool request_id_ok(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > GG_HTTP_REQUEST_ID_MAX) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '_' || c == '.' || c == ':' || c == '@' || c == '/' || c == '+' || c == '=';
        if (!ok) return false;
    }
    return true;
}

/* A generated request id: SipHash-128 (a PRF) of a per-server, per-CPU-shard counter under
 * a random key drawn once, as 32 hex characters. Distinct inputs make ids unique in practice
 * (a collision needs about 2^64 ids), the key makes them unpredictable, and no request pays
 * a getrandom system call or writes a counter another CPU uses. */
void gg_http_new_request_id(gg_http_server *srv, unsigned shard, char out[33]) {
    shard %= METRIC_SHARDS;
    /* the shard in the top byte: counters of different shards never produce the same input */
    unsigned long long n = atomic_fetch_add_explicit(&srv->cpu[shard].rid, 1, memory_order_relaxed) |
                           ((unsigned long long)shard << 56);
    unsigned char in[8], r[crypto_shorthash_siphashx24_BYTES];
    for (int i = 0; i < 8; i++) in[i] = (unsigned char)(n >> (8 * i));
    crypto_shorthash_siphashx24(r, in, sizeof in, srv->rid_key);
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < sizeof r; i++) {
        out[2 * i] = hex[r[i] >> 4];
        out[2 * i + 1] = hex[r[i] & 15];
    }
    out[32] = '\0';
}

/* ---- requests ---------------------------------------------------------------------------- */

/* What a request owns besides its own memory. */
static void req_release(gg_http_req *req) {
    if (req->path != req->path_inline) free(req->path);
    req->path = NULL;
    gg_strbuf_free(&req->body);
    gg_http_res_clear(&req->res);
    free(req->kv);
    req->kv = NULL;
}

void gg_http_req_free(gg_http_req *req) {
    if (!req) return;
    req_release(req);
    free(req);
}

void gg_http_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe) {
    gg_http_server *srv = ((listener *)cls)->srv;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        conn_ctx *x = calloc(1, sizeof *x); /* NULL is fine: requests then allocate */
        if (x) {
            const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
            const struct sockaddr *sa = ci ? ci->client_addr : NULL;
            if (sa && sa->sa_family == AF_INET)
                inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, x->client, sizeof x->client);
            else if (sa && sa->sa_family == AF_INET6)
                inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, x->client, sizeof x->client);
            const union MHD_ConnectionInfo *fi = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
            if (fi && srv->tracker) {
                gg_conn_track_add(srv->tracker, &x->track, fi->connect_fd, ((listener *)cls)->kind == GG_LISTENER_INTERNAL);
                x->tracked = true;
            }
        }
        *socket_context = x;
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        conn_ctx *x = *socket_context;
        if (x && x->tracked) gg_conn_track_remove(srv->tracker, &x->track);
        if (x) gg_http_req_free(x->spare);
        free(x);
        *socket_context = NULL;
    }
}

conn_ctx *gg_http_conn_ctx_of(struct MHD_Connection *conn) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* The connection is (again) waiting for a request, or no longer: the receive deadline
 * covers headers and body only, never the time a handler or a stream takes. */
static void conn_receiving(struct MHD_Connection *conn, bool receiving) {
    conn_ctx *x = gg_http_conn_ctx_of(conn);
    if (x && x->tracked) gg_conn_track_receiving(&x->track, receiving);
}

/* Date header value for now, formatted at most once a second per connection (libmicrohttpd
 * would otherwise run gmtime and snprintf on every response). The C locale's names, always. */
static const char *conn_date(conn_ctx *x) {
    time_t now = time(NULL);
    if (now != x->date_sec) {
        static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
        static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                           "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
        struct tm tm;
        if (!gmtime_r(&now, &tm) || tm.tm_wday < 0 || tm.tm_wday > 6 || tm.tm_mon < 0 || tm.tm_mon > 11)
            return NULL;
        snprintf(x->date_text, sizeof x->date_text, "%s, %02d %s %04d %02d:%02d:%02d GMT", days[tm.tm_wday],
                 tm.tm_mday, months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
        x->date_sec = now;
    }
    return x->date_text;
}

/* A finished, non-deferred request: keep its memory for the connection's next request. */
static void req_recycle(gg_http_req *req) {
    conn_ctx *x = gg_http_conn_ctx_of(req->conn);
    if (!x || x->spare) {
        gg_http_req_free(req);
        return;
    }
    req_release(req);
    x->spare = req;
}

static void copy_field(char *dst, size_t size, const char *s) {
    size_t n = strnlen(s, size - 1);
    memcpy(dst, s, n);
    dst[n] = '\0';
}

static gg_http_req *req_new(listener *L, struct MHD_Connection *conn, const char *url, const char *method) {
    conn_ctx *x = gg_http_conn_ctx_of(conn);
    gg_http_req *req = x ? x->spare : NULL;
    if (req) {
        x->spare = NULL;
        /* everything but the route match, which gg_router_match fills itself */
        memset(req, 0, offsetof(gg_http_req, match));
        memset((char *)req + offsetof(gg_http_req, match) + sizeof req->match, 0,
               sizeof *req - offsetof(gg_http_req, match) - sizeof req->match);
        req->match.status = 0;
        req->match.pattern = NULL;
        req->match.nparams = 0;
    } else if (!(req = calloc(1, sizeof *req))) {
        return NULL;
    }
    req->srv = L->srv;
    req->conn = conn;
    req->listener = L->kind;
    int cpu = sched_getcpu();
    req->shard = cpu > 0 ? (unsigned)cpu % METRIC_SHARDS : 0;
    req->match.route_index = -1; /* "unmatched" until the router says otherwise */
    req->t0 = gg_now_ms();
    copy_field(req->method, sizeof req->method, method);
    size_t ulen = strnlen(url, GG_HTTP_MAX_PATH + 1);
    if (ulen > GG_HTTP_MAX_PATH) ulen = GG_HTTP_MAX_PATH;
    if (ulen < sizeof req->path_inline) {
        memcpy(req->path_inline, url, ulen);
        req->path_inline[ulen] = '\0';
        req->path = req->path_inline;
    } else if (!(req->path = strndup(url, ulen))) {
        free(req);
        return NULL;
    }
    req->framing_status = gg_http_framing_check(conn, req->hdr, &req->framing_msg);
    const char *rid = req->hdr[GG_HDR_X_REQUEST_ID];
    if (rid && request_id_ok(rid)) copy_field(req->request_id, sizeof req->request_id, rid);
    else gg_http_new_request_id(L->srv, req->shard, req->request_id);
    if (x) memcpy(req->client, x->client, sizeof req->client);
    return req;
}

const char *gg_http_method(const gg_http_req *req) { return req->method; }
const char *gg_http_path(const gg_http_req *req) { return req->path; }
const char *gg_http_route(const gg_http_req *req) { return req->match.pattern ? req->match.pattern : ""; }
gg_listener gg_http_listener(const gg_http_req *req) { return req->listener; }
const char *gg_http_request_id(const gg_http_req *req) { return req->request_id; }
const char *gg_http_client_addr(const gg_http_req *req) { return req->client; }
void gg_http_set_user(gg_http_req *req, void *p) { req->user = p; }
void *gg_http_get_user(const gg_http_req *req) { return req->user; }

/* {param} value by name. */
const char *gg_http_param(const gg_http_req *req, const char *name) {
    for (size_t i = 0; i < req->match.nparams; i++)
        if (strcmp(req->match.params[i].name, name) == 0) return req->match.params[i].value;
    return NULL;
}

static const char *lookup(const gg_http_req *req, enum MHD_ValueKind kind, const char *name) {
    if (req->kv) { /* deferred: the connection may be gone, use the snapshot */
        for (size_t i = 0; i < req->nkv; i++) {
            if (req->kv[i].kind != kind) continue;
            bool eq = kind == MHD_HEADER_KIND ? strcasecmp(req->kv[i].name, name) == 0
                                              : strcmp(req->kv[i].name, name) == 0;
            if (eq) return req->kv[i].value;
        }
        return NULL;
    }
    if (kind == MHD_HEADER_KIND) {
        int k = gg_http_known_header(name, strlen(name));
        if (k >= 0) return req->hdr[k];
    }
    return MHD_lookup_connection_value(req->conn, kind, name);
}

/* Header value (case-insensitive name), NULL when absent. */
const char *gg_http_header(const gg_http_req *req, const char *name) { return lookup(req, MHD_HEADER_KIND, name); }
typedef struct prefixed {
    const char *prefix;
    size_t n;
    gg_http_header_fn fn;
    void *user;
    bool stopped;
} prefixed;

static bool prefixed_one(prefixed *p, const char *name, const char *value) {
    if (!p->stopped && name && value && !strncasecmp(name, p->prefix, p->n)) p->stopped = !p->fn(p->user, name, value);
    return !p->stopped;
}

static enum MHD_Result prefixed_mhd(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    (void)kind;
    return prefixed_one(cls, key, value) ? MHD_YES : MHD_NO;
}

/* See http.h. */
void gg_http_headers_prefixed(const gg_http_req *req, const char *prefix, gg_http_header_fn fn, void *user) {
    prefixed p = {prefix, strlen(prefix), fn, user, false};
    if (!req->kv) {
        MHD_get_connection_values(req->conn, MHD_HEADER_KIND, prefixed_mhd, &p);
        return;
    }
    for (size_t i = 0; i < req->nkv; i++)
        if (req->kv[i].kind == MHD_HEADER_KIND && !prefixed_one(&p, req->kv[i].name, req->kv[i].value)) return;
}

/* Query argument, NULL when absent. */
const char *gg_http_query(const gg_http_req *req, const char *name) { return lookup(req, MHD_GET_ARGUMENT_KIND, name); }

/* The body bytes (NUL-terminated). */
const char *gg_http_body(const gg_http_req *req, size_t *len) {
    if (len) *len = req->body.len;
    return req->body.data ? req->body.data : "";
}

/* Parse the body as JSON; see http.h. */
json_t *gg_http_body_json(const gg_http_req *req, bool allow_any, gg_error *err) {
    json_error_t je;
    size_t len;
    const char *b = gg_http_body(req, &len);
    json_t *v = json_loadb(b, len, allow_any ? JSON_DECODE_ANY : 0, &je);
    if (!v) {
        gg_error_set(err, "invalid_json", "request body is not valid JSON: %s", je.text);
        gg_error_set_pos(err, je.line > 0 ? je.line : 1, je.column > 0 ? je.column : 1);
        err->position = je.position;
    }
    return v;
}

/* See http.h. The message says what the route needs, not only what the parser saw. */
json_t *gg_http_body_object(const gg_http_req *req, const char *shape, gg_error *err) {
    size_t len;
    const char *b = gg_http_body(req, &len);
    size_t i = 0;
    while (i < len && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n')) i++;
    if (i == len) {
        gg_error_set(err, "invalid_json", "the request body is empty: expected %s", shape);
        return NULL;
    }
    json_error_t je;
    json_t *v = json_loadb(b, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    if (!v) {
        gg_error_set(err, "invalid_json", "the request body is not valid JSON (%s): expected %s", je.text, shape);
        gg_error_set_pos(err, je.line > 0 ? je.line : 1, je.column > 0 ? je.column : 1);
        err->position = je.position;
        return NULL;
    }
    if (!json_is_object(v)) {
        static const char *const kind[] = {"an object", "an array", "a string", "a number", "a number",
                                           "true", "false", "null"};
        gg_error_set(err, "bad_request", "the request body is %s: expected %s", kind[json_typeof(v)], shape);
        json_decref(v);
        return NULL;
    }
    return v;
}

/* ---- sending ----------------------------------------------------------------------------- */

static void add_common_headers(gg_http_req *req, struct MHD_Response *r, const gg_http_res *res) {
    if (res->content_type[0]) MHD_add_response_header(r, "Content-Type", res->content_type);
    for (size_t i = 0; i < res->nheaders; i++)
        MHD_add_response_header(r, res->headers[2 * i], res->headers[2 * i + 1]);
    MHD_add_response_header(r, "X-Request-Id", req->request_id);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    /* On the connection's own thread (responses are queued only there), so its context is
     * ours alone; without one, libmicrohttpd adds Date itself. */
    conn_ctx *x = gg_http_conn_ctx_of(req->conn);
    const char *date = x ? conn_date(x) : NULL;
    if (date) MHD_add_response_header(r, "Date", date);
    if (atomic_load(&req->srv->draining)) MHD_add_response_header(r, "Connection", "close");
}

static enum MHD_Result send_res(gg_http_req *req, gg_http_res *res) {
    if (res->status < 100 || res->status > 599) {
        gg_log(GG_LOG_ERROR, "handler produced no response", "route", gg_http_route(req),
               "request_id", req->request_id, NULL);
        gg_http_res_clear(res);
        if (!gg_http_res_fail(res, "internal_error", "the handler produced no response")) return MHD_NO;
    }
    struct MHD_Response *r;
    if (res->body && res->len) {
        r = MHD_create_response_from_buffer_with_free_callback(res->len, res->body, free);
        if (r) res->body = NULL; /* libmicrohttpd owns the bytes now */
    } else {
        r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    }
    if (!r) return MHD_NO;
    add_common_headers(req, r, res);
    req->status_out = res->status;
    req->bytes_out = res->len;
    enum MHD_Result ok = MHD_queue_response(req->conn, (unsigned)res->status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result send_error(gg_http_req *req, int status, const char *code, const char *msg) {
    gg_http_res_clear(&req->res);
    if (!gg_http_res_error(&req->res, status, code, "%s", msg)) return MHD_NO;
    return send_res(req, &req->res);
}

/* An answer after which the connection's bytes cannot be trusted to frame a next request. */
static enum MHD_Result send_error_close(gg_http_req *req, int status, const char *code, const char *msg) {
    gg_http_res_clear(&req->res);
    if (!gg_http_res_error(&req->res, status, code, "%s", msg) ||
        !gg_http_res_header(&req->res, "Connection", "close"))
        return MHD_NO;
    return send_res(req, &req->res);
}

/* Checks before routing (framing, internal Host/Origin): false when the request may go on;
 * else true, the refusal queued, req->dispatched set and *out the result for libmicrohttpd. */
static bool refused_early(listener *L, gg_http_req *req, enum MHD_Result *out) {
    const char *msg = req->framing_msg;
    int status = req->framing_status;
    if (status) {
        req->dispatched = true;
        *out = send_error_close(req, status, status == 501 ? "not_implemented" : "bad_request", msg);
        return true;
    }
    if (L->kind == GG_LISTENER_INTERNAL && strcmp(req->path, "/health") && strcmp(req->path, "/ready") &&
        !gg_http_internal_host_ok(&L->srv->guard, req->conn, &msg)) {
        req->dispatched = true;
        *out = send_error(req, 403, "forbidden", msg);
        return true;
    }
    return false;
}

static enum MHD_Result dispatch(gg_http_req *req);

/* gg_http_async_redispatch: the async is dropped (its owner let go, so this connection
 * holds the last reference) and the request goes to its handler again, as if new; the
 * request keeps its body and header snapshot. */
static enum MHD_Result redispatch(gg_http_req *req) {
    gg_http_async *a = req->async;
    pthread_mutex_lock(&req->srv->alock);
    gg_http_async_unlink(a);
    req->async = NULL;
    bool last = --a->refs == 0;
    pthread_mutex_unlock(&req->srv->alock);
    if (last) { /* always: the owner's reference went with its redispatch */
        gg_http_res_clear(&a->res);
        gg_strbuf_free(&a->out);
        free(a);
    }
    gg_http_res_clear(&req->res);
    return dispatch(req);
}

/* The connection may proceed with a deferred request: stream, result, 503, or the handler
 * again. */
static enum MHD_Result respond_async(gg_http_req *req) {
    gg_http_async *a = req->async;
    pthread_mutex_lock(&req->srv->alock);
    bool streaming = a->streaming, abandoned = a->abandoned, gone = a->client_gone, again = a->redispatch;
    pthread_mutex_unlock(&req->srv->alock);
    if (gone && !streaming) return MHD_NO; /* nobody to answer: close (logged as 499) */
    if (again && !abandoned) return redispatch(req);
    if (streaming) {
        struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, gg_http_stream_reader, a, NULL);
        if (!r) return MHD_NO;
        add_common_headers(req, r, &a->res);
        MHD_add_response_header(r, "Cache-Control", "no-cache");
        MHD_add_response_header(r, "X-Accel-Buffering", "no");
        req->status_out = a->res.status;
        enum MHD_Result ok = MHD_queue_response(req->conn, (unsigned)a->res.status, r);
        MHD_destroy_response(r);
        return ok;
    }
    /* Once abandoned the answer is 503 even if the owner finished a moment later: the
     * shutdown already decided, and the client must not see a half-trusted result. */
    if (abandoned)
        return send_error(req, 503, "shutting_down", "the server is shutting down; retry the request");
    return send_res(req, &a->res);
}

/* ---- the access handler ------------------------------------------------------------------ */

static enum MHD_Result dispatch(gg_http_req *req) {
    gg_http_server *srv = req->srv;
    if (req->too_large)
        return send_error(req, 413, "too_large", "request body exceeds the limit");
    if (req->match.status == 404)
        return send_error(req, 404, "not_found", "no route for this path");
    if (req->match.status == 405) {
        gg_http_res_clear(&req->res);
        gg_http_res_fail(&req->res, "method_not_allowed", "method %s is not allowed here", req->method);
        gg_http_res_header(&req->res, "Allow", req->match.allow);
        return send_res(req, &req->res);
    }
    int rc = req->match.fn(req, &req->res, req->match.user);
    gg_http_async *a = req->async;
    if (!a) {
        if (rc == GG_HTTP_DEFERRED) {
            gg_log(GG_LOG_ERROR, "handler returned DEFERRED without gg_http_defer", "route", gg_http_route(req), NULL);
            return send_error(req, 500, "internal_error", "the handler produced no response");
        }
        return send_res(req, &req->res);
    }
    if (rc != GG_HTTP_DEFERRED)
        gg_log(GG_LOG_WARN, "handler deferred but returned DONE; treating as deferred", "route", gg_http_route(req), NULL);
    pthread_mutex_lock(&srv->alock);
    if (a->ready) {
        a->conn = CONN_RESPONDING;
        pthread_mutex_unlock(&srv->alock);
        return respond_async(req);
    }
    a->conn = CONN_SUSPENDED;
    MHD_suspend_connection(req->conn);
    pthread_mutex_unlock(&srv->alock);
    return MHD_YES;
}

enum MHD_Result gg_http_on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls) {
    listener *L = cls;
    gg_http_server *srv = L->srv;
    gg_http_req *req = *con_cls;
    if (!req) {
        req = req_new(L, conn, url, method);
        if (!req) return MHD_NO;
        *con_cls = req;
        atomic_fetch_add(&srv->cpu[req->shard].inflight, 1);
        if (strlen(url) > GG_HTTP_MAX_PATH) {
            req->dispatched = true;
            return send_error(req, 414, "uri_too_long", "request path is too long");
        }
        enum MHD_Result early;
        if (refused_early(L, req, &early)) return early;
        gg_router_match(srv->router, L->kind, req->method, req->path, &req->match);
        const char *cl = req->hdr[GG_HDR_CONTENT_LENGTH];
        if (cl) {
            char *end;
            errno = 0;
            unsigned long long n = strtoull(cl, &end, 10);
            if (errno == 0 && end != cl && n > srv->opts.body_limit) {
                req->too_large = true;
                /* Answering before the body is read closes the connection with unread data,
                 * which resets it: the client, still sending, often never sees the 413. So a
                 * body of reasonable size is read and dropped first (the upload branch
                 * below) and answered at its end; a client waiting for 100-continue, or one
                 * announcing a huge body, is answered at once. */
                if (req->hdr[GG_HDR_EXPECT] ||
                    n > 4ULL * srv->opts.body_limit + (1u << 20)) {
                    req->dispatched = true;
                    return send_error(req, 413, "too_large", "request body exceeds the limit");
                }
            }
        }
        return MHD_YES;
    }
    if (req->dispatched) {
        /* Resumed after a deferral (or called again after an early answer). */
        if (req->async && req->status_out == 0) return respond_async(req);
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (!req->too_large && req->body.len + n > srv->opts.body_limit) {
            req->too_large = true;
            gg_strbuf_free(&req->body);
        }
        if (req->too_large) {
            /* Keep reading (so the client sees the 413) but not forever. */
            req->discarded += n;
            return req->discarded > 4 * srv->opts.body_limit + (1u << 20) ? MHD_NO : MHD_YES;
        }
        if (!gg_strbuf_append(&req->body, upload_data, n)) return MHD_NO;
        return MHD_YES;
    }
    req->dispatched = true;
    conn_receiving(conn, false);
    return dispatch(req);
}
void gg_http_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
    listener *L = cls;
    gg_http_server *srv = L->srv;
    gg_http_req *req = *con_cls;
    conn_receiving(conn, true); /* the next request's deadline starts now */
    if (!req) return;
    *con_cls = NULL;
    unsigned shard = req->shard;
    double dur = gg_now_ms() - req->t0;
    if (req->status_out == 0) req->status_out = 499; /* client went away before any answer */
    if (srv->opts.access_log) gg_http_access_log(req, dur, toe);
    gg_http_record_metrics(srv, req, dur);
    gg_http_async *a = req->async;
    if (a) {
        pthread_mutex_lock(&srv->alock);
        a->conn = CONN_DONE;
        if (!a->owner_done) atomic_store_explicit(&a->abandoned, true, memory_order_relaxed);
        if (a->prev) a->prev->next = a->next;
        else if (srv->alist == a) srv->alist = a->next;
        if (a->next) a->next->prev = a->prev;
        a->prev = a->next = NULL;
        bool last = --a->refs == 0;
        pthread_mutex_unlock(&srv->alock);
        if (last) gg_http_async_free(a);
    } else {
        req_recycle(req);
    }
    atomic_fetch_sub(&srv->cpu[shard].inflight, 1);
}
