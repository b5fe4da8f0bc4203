/* server.c — the two libmicrohttpd listeners, request lifecycle (body limit, request id,
 * dispatch, access log, metrics) and deferred responses via connection suspend/resume.
 *
 * Locking: one mutex per server (alock) guards every gg_http_async's shared state and the
 * list of live asyncs; critical sections are a few loads and stores. libmicrohttpd's
 * suspend/resume are called with alock held so "owner finished" and "connection suspended"
 * can never cross. */
#include "http/internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef GG_VERSION
#define GG_VERSION "0.0.0"
#endif

/* ---- metrics layout ---------------------------------------------------------------------- */

static const int status_slots[] = {200, 201, 202, 204, 206, 301, 302, 304, 307, 308, 400, 401,
                                   403, 404, 405, 406, 408, 409, 410, 411, 412, 413, 414, 415,
                                   422, 429, 431, 500, 501, 502, 503, 504};
#define NSTATUS (sizeof status_slots / sizeof status_slots[0] + 1) /* last slot: other */
static const double bucket_s[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                  0.1,    0.25,  0.5,    1,     2.5,  5,     10};
#define NBUCKETS (sizeof bucket_s / sizeof bucket_s[0])
#define MAX_HOOKS 16

typedef struct route_metrics {
    atomic_ulong by_status[NSTATUS];
    atomic_ulong buckets[NBUCKETS + 1]; /* non-cumulative; last = above every bound */
    atomic_ullong sum_us;
} route_metrics;

/* Metrics are counted in per-CPU shards (chosen with sched_getcpu, summed on scrape) so the
 * polling threads do not bounce the same counter cache lines on every request. */
#define METRIC_SHARDS 8

/* Access lines are batched: request threads append to `pending` (one memcpy under a mutex)
 * and one writer thread writes everything queued every few milliseconds in one call, so
 * logging costs no system call per request. */
#define ALOG_FLUSH_MS 50
#define ALOG_SIGNAL_BYTES (64u * 1024u)
#define ALOG_MAX_BYTES (8u * 1024u * 1024u) /* beyond this (stuck disk) lines are dropped */

typedef struct access_writer {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    gg_strbuf pending;          /* lines separated by '\n', no trailing newline */
    FILE *file;                 /* NULL = gg_log_json_line */
    pthread_t thread;
    bool running, stop;
    atomic_ulong dropped;
} access_writer;

typedef struct listener {
    gg_http_server *srv;
    gg_listener kind;
    char addr[160];
    struct MHD_Daemon *d;
    unsigned port;
} listener;

struct gg_http_server {
    gg_http_options opts;
    char public_addr[160], internal_addr[160], version[64];
    gg_router *router;
    listener pub, intl;
    double started_ms;
    long long started_wall_ms;
    gg_http_ready_fn ready;
    void *ready_user;
    struct { gg_http_metrics_fn fn; void *user; } hooks[MAX_HOOKS];
    int nhooks;
    route_metrics *rm; /* METRIC_SHARDS blocks of nrm: one per route, plus unmatched */
    int nrm;
    atomic_int draining, abandoning, hurry; /* read per request, written only at shutdown */
    bool started, stopped;
    unsigned char rid_key[crypto_shorthash_siphashx24_KEYBYTES]; /* request ids, see below */
    gg_http_guard_cfg guard;   /* who may address the internal listener */
    gg_conn_tracker *tracker;  /* the receive deadline (NULL until started) */
    struct { gg_http_started_fn fn; void *user; } started_hooks[4];
    int nstarted;
    /* The fields above are read on every request and those below are written on every
     * (deferred, logged) request: the padding keeps them on different cache lines. */
    char pad0[64];
    /* Per-CPU counters: requests in flight (a request decrements the shard it
     * incremented, so every shard stays >= its own live requests and the sum never
     * misses one) and request ids; padded so the shards do not share cache lines. */
    struct {
        atomic_long inflight;
        atomic_ullong rid; /* request-id counter of the shard */
        char pad[64 - sizeof(atomic_long) - sizeof(atomic_ullong)];
    } cpu[METRIC_SHARDS];
    pthread_mutex_t alock; /* deferred requests */
    gg_http_async *alist;
    char pad1[64];
    access_writer alog;
    atomic_llong mhdlog_sec;   /* libmicrohttpd messages: the current second, */
    atomic_uint mhdlog_count;  /* how many were logged in it, */
    atomic_ulong mhdlog_dropped; /* and how many were not (MHD_LOG_PER_SECOND) */
};

/* ---- small helpers ----------------------------------------------------------------------- */

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

static int status_slot(int status) {
    for (size_t i = 0; i + 1 < NSTATUS; i++)
        if (status_slots[i] == status) return (int)i;
    return (int)NSTATUS - 1;
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

static void req_free(gg_http_req *req) {
    if (!req) return;
    req_release(req);
    free(req);
}

/* Per-connection state (libmicrohttpd's socket context): the client address, formatted
 * once, and the memory of the connection's last request, which the next request on the
 * keep-alive connection reuses instead of allocating ~2.8 KB again. A deferred request
 * is never parked here: its owner may outlive the connection. */
typedef struct conn_ctx {
    gg_http_req *spare;
    gg_conn_track track;        /* the receive deadline's view of this connection */
    bool tracked;
    char client[64];
    time_t date_sec;            /* the second date_text shows (0 = none yet) */
    char date_text[32];         /* IMF-fixdate */
    time_t ts_sec;              /* the second ts_text shows, for access lines */
    char ts_text[20];           /* "YYYY-MM-DDTHH:MM:SS" */
} conn_ctx;

/* New connections are refused (accepted and closed at once) while the server drains.
 * This replaces MHD_quiesce_daemon: in libmicrohttpd 0.9.75 quiescing an epoll daemon with a
 * thread pool races the worker threads' own removal of the listen socket from their epoll
 * sets, and the loser aborts the process ("Failed to remove listen FD from epoll set"). */
static enum MHD_Result accept_policy(void *cls, const struct sockaddr *addr, socklen_t addrlen) {
    (void)addr;
    (void)addrlen;
    return atomic_load(&((listener *)cls)->srv->draining) ? MHD_NO : MHD_YES;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
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
        if (x) req_free(x->spare);
        free(x);
        *socket_context = NULL;
    }
}

static conn_ctx *conn_ctx_of(struct MHD_Connection *conn) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* The connection is (again) waiting for a request, or no longer: the receive deadline
 * covers headers and body only, never the time a handler or a stream takes. */
static void conn_receiving(struct MHD_Connection *conn, bool receiving) {
    conn_ctx *x = conn_ctx_of(conn);
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
    conn_ctx *x = conn_ctx_of(req->conn);
    if (!x || x->spare) {
        req_free(req);
        return;
    }
    req_release(req);
    x->spare = req;
}

static void async_free(gg_http_async *a) {
    req_free(a->req);
    gg_http_res_clear(&a->res);
    gg_strbuf_free(&a->out);
    free(a);
}

/* Copy s into a fixed field (truncating). */
static void copy_field(char *dst, size_t size, const char *s) {
    size_t n = strnlen(s, size - 1);
    memcpy(dst, s, n);
    dst[n] = '\0';
}

static gg_http_req *req_new(listener *L, struct MHD_Connection *conn, const char *url, const char *method) {
    conn_ctx *x = conn_ctx_of(conn);
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
    const char *rid = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Request-Id");
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
    return MHD_lookup_connection_value(req->conn, kind, name);
}

/* Header value (case-insensitive name), NULL when absent. */
const char *gg_http_header(const gg_http_req *req, const char *name) { return lookup(req, MHD_HEADER_KIND, name); }
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

/* ---- sending ----------------------------------------------------------------------------- */

static void add_common_headers(gg_http_req *req, struct MHD_Response *r, const gg_http_res *res) {
    if (res->content_type[0]) MHD_add_response_header(r, "Content-Type", res->content_type);
    for (size_t i = 0; i < res->nheaders; i++)
        MHD_add_response_header(r, res->headers[2 * i], res->headers[2 * i + 1]);
    MHD_add_response_header(r, "X-Request-Id", req->request_id);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    /* On the connection's own thread (responses are queued only there), so its context is
     * ours alone; without one, libmicrohttpd adds Date itself. */
    conn_ctx *x = conn_ctx_of(req->conn);
    const char *date = x ? conn_date(x) : NULL;
    if (date) MHD_add_response_header(r, "Date", date);
    if (atomic_load(&req->srv->draining)) MHD_add_response_header(r, "Connection", "close");
}

static enum MHD_Result send_res(gg_http_req *req, gg_http_res *res) {
    if (res->status < 100 || res->status > 599) {
        gg_log(GG_LOG_ERROR, "handler produced no response", "route", gg_http_route(req),
               "request_id", req->request_id, NULL);
        gg_http_res_clear(res);
        if (!gg_http_res_error(res, 500, "internal_error", "the handler produced no response")) return MHD_NO;
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
    const char *msg = NULL;
    int status = gg_http_framing_check(req->conn, &msg);
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

/* Content reader for streamed (SSE) bodies: drain the queue, or park the connection until
 * the owner writes more or finishes. */
static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max) {
    gg_http_async *a = cls;
    gg_http_req *req = a->req;
    pthread_mutex_lock(&req->srv->alock);
    size_t avail = a->out.len - a->out_off;
    if (avail) {
        size_t n = avail < max ? avail : max;
        memcpy(buf, a->out.data + a->out_off, n);
        a->out_off += n;
        if (a->out_off == a->out.len) {
            gg_strbuf_reset(&a->out);
            a->out_off = 0;
        }
        pthread_mutex_unlock(&req->srv->alock);
        req->bytes_out += n;
        return (ssize_t)n;
    }
    if (a->owner_done || a->abandoned) {
        pthread_mutex_unlock(&req->srv->alock);
        return MHD_CONTENT_READER_END_OF_STREAM;
    }
    a->reader_waiting = true;
    MHD_suspend_connection(req->conn);
    pthread_mutex_unlock(&req->srv->alock);
    return 0;
}

/* The connection may proceed with a deferred request: stream, result, or 503. */
static enum MHD_Result respond_async(gg_http_req *req) {
    gg_http_async *a = req->async;
    pthread_mutex_lock(&req->srv->alock);
    bool streaming = a->streaming, abandoned = a->abandoned, gone = a->client_gone;
    pthread_mutex_unlock(&req->srv->alock);
    if (gone && !streaming) return MHD_NO; /* nobody to answer: close (logged as 499) */
    if (streaming) {
        struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_reader, a, NULL);
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
        gg_http_res_error(&req->res, 405, "method_not_allowed", "method %s is not allowed here", req->method);
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

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
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
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
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
                if (MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Expect") ||
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

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe);

/* ---- deferred responses ------------------------------------------------------------------ */

typedef struct kv_fill {
    size_t count, bytes; /* pass 1: what to allocate */
    gg_http_kv *kv;      /* pass 2: where to copy */
    char *strings;
    size_t n;
} kv_fill;

static enum MHD_Result kv_measure(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    kv_fill *f = cls;
    if (!key) return MHD_YES;
    f->count++;
    f->bytes += strlen(key) + strlen(value ? value : "") + 2;
    return MHD_YES;
}

static enum MHD_Result kv_copy(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    kv_fill *f = cls;
    if (!key || f->n >= f->count) return MHD_YES;
    size_t kl = strlen(key) + 1, vl = strlen(value ? value : "") + 1;
    gg_http_kv *kv = &f->kv[f->n++];
    kv->kind = kind;
    kv->name = memcpy(f->strings, key, kl);
    kv->value = value ? memcpy(f->strings + kl, value, vl) : NULL; /* as MHD: "?flag" → NULL */
    f->strings += kl + vl;
    return MHD_YES;
}

/* Defer the response; see http.h. */
gg_http_async *gg_http_defer(gg_http_req *req) {
    gg_http_server *srv = req->srv;
    if (req->async || atomic_load(&srv->abandoning)) return NULL;
    /* The owner may read headers after the connection is gone: copy headers and query
     * arguments now, into one allocation (measured first). */
    kv_fill f = {0, 0, NULL, NULL, 0};
    MHD_get_connection_values(req->conn, MHD_HEADER_KIND, kv_measure, &f);
    MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, kv_measure, &f);
    size_t slots = f.count ? f.count : 1; /* never NULL: NULL means "not snapshotted" */
    char *block = malloc(slots * sizeof(gg_http_kv) + f.bytes);
    gg_http_async *a = calloc(1, sizeof *a);
    if (!block || !a) {
        free(block);
        free(a);
        return NULL;
    }
    f.kv = (gg_http_kv *)(void *)block;
    f.strings = block + slots * sizeof(gg_http_kv);
    MHD_get_connection_values(req->conn, MHD_HEADER_KIND, kv_copy, &f);
    MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, kv_copy, &f);
    req->kv = f.kv;
    req->nkv = f.n;
    a->req = req;
    a->refs = 2;
    a->conn = CONN_IN_HANDLER;
    gg_http_res_init(&a->res);
    pthread_mutex_lock(&srv->alock);
    if (atomic_load(&srv->abandoning)) {
        pthread_mutex_unlock(&srv->alock);
        free(a);
        return NULL;
    }
    a->next = srv->alist;
    if (srv->alist) srv->alist->prev = a;
    srv->alist = a;
    req->async = a;
    pthread_mutex_unlock(&srv->alock);
    return a;
}

gg_http_req *gg_http_async_req(gg_http_async *a) { return a->req; }
gg_http_res *gg_http_async_res(gg_http_async *a) { return &a->res; }

bool gg_http_async_abandoned(const gg_http_async *a) {
    return __atomic_load_n(&a->abandoned, __ATOMIC_RELAXED);
}

/* Let the connection proceed (caller holds alock). */
static void wake(gg_http_async *a) {
    if (a->conn == CONN_SUSPENDED) {
        a->conn = CONN_RESPONDING;
        MHD_resume_connection(a->req->conn);
    }
}

/* Start a streamed body; see http.h. */
bool gg_http_async_stream(gg_http_async *a, int status, const char *content_type) {
    gg_http_server *srv = a->req->srv;
    pthread_mutex_lock(&srv->alock);
    bool ok = !a->abandoned && !a->owner_done && !a->streaming && !a->ready;
    if (ok) {
        a->streaming = true;
        a->res.status = status;
        snprintf(a->res.content_type, sizeof a->res.content_type, "%s",
                 content_type ? content_type : "text/event-stream");
        a->ready = true;
        wake(a);
    }
    pthread_mutex_unlock(&srv->alock);
    return ok;
}

/* Queue stream bytes; see http.h. */
bool gg_http_async_write(gg_http_async *a, const void *data, size_t len) {
    gg_http_server *srv = a->req->srv;
    pthread_mutex_lock(&srv->alock);
    bool ok = a->streaming && !a->abandoned && !a->owner_done &&
              a->out.len - a->out_off + len <= GG_HTTP_STREAM_BUFFER_MAX &&
              gg_strbuf_append(&a->out, data, len);
    if (ok && a->reader_waiting) {
        a->reader_waiting = false;
        MHD_resume_connection(a->req->conn);
    }
    pthread_mutex_unlock(&srv->alock);
    return ok;
}

/* One SSE event; see http.h. */
bool gg_http_sse_event(gg_http_async *a, const char *event, const char *id, const char *data) {
    gg_strbuf b = GG_STRBUF_INIT;
    if (event) gg_strbuf_printf(&b, "event: %s\n", event);
    if (id) gg_strbuf_printf(&b, "id: %s\n", id);
    const char *p = data ? data : "";
    for (;;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        if (n && p[n - 1] == '\r') n--;
        gg_strbuf_puts(&b, "data: ");
        gg_strbuf_append(&b, p, n);
        gg_strbuf_putc(&b, '\n');
        if (!nl) break;
        p = nl + 1;
    }
    gg_strbuf_putc(&b, '\n');
    bool ok = !b.oom && gg_http_async_write(a, b.data, b.len);
    gg_strbuf_free(&b);
    return ok;
}

/* Finish a deferred request; see http.h. */
void gg_http_async_complete(gg_http_async *a) {
    if (!a) return;
    gg_http_server *srv = a->req->srv;
    pthread_mutex_lock(&srv->alock);
    if (a->owner_done) { /* a second completion is a caller bug; keep it harmless */
        pthread_mutex_unlock(&srv->alock);
        return;
    }
    a->owner_done = true;
    if (a->streaming) {
        if (a->reader_waiting) {
            a->reader_waiting = false;
            MHD_resume_connection(a->req->conn);
        }
    } else if (!a->ready) {
        a->ready = true;
        wake(a);
    }
    bool last = --a->refs == 0;
    pthread_mutex_unlock(&srv->alock);
    if (last) async_free(a);
}

/* ---- clients that leave while suspended --------------------------------------------------- */

/* libmicrohttpd does not watch a suspended connection's socket, so a client that closes
 * while its request waits (a run on a downstream server or on the client's own answer, a
 * POST stream between events) would only be noticed when the owner answers. Every quarter
 * second (the tracker's thread) the sockets of suspended deferred requests are polled for a
 * hangup; such a request is marked abandoned (the owner sees gg_http_async_abandoned and
 * cancels its run) and its connection resumed so libmicrohttpd closes it now. A client
 * that only half-closes after sending its request counts as gone too (as libmicrohttpd
 * itself treats a read EOF). */
static bool suspended_now(const gg_http_async *a) {
    return !a->owner_done && !a->abandoned && (a->conn == CONN_SUSPENDED || (a->streaming && a->reader_waiting));
}

static void find_gone_clients(void *user) {
    gg_http_server *s = user;
    pthread_mutex_lock(&s->alock);
    size_t n = 0;
    for (gg_http_async *a = s->alist; a; a = a->next) n += suspended_now(a);
    struct pollfd *fds = n ? calloc(n, sizeof *fds) : NULL;
    gg_http_async **who = n ? calloc(n, sizeof *who) : NULL;
    size_t k = 0;
    for (gg_http_async *a = s->alist; a && fds && who && k < n; a = a->next) {
        if (!suspended_now(a)) continue;
        const union MHD_ConnectionInfo *fi = MHD_get_connection_info(a->req->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!fi) continue;
        fds[k] = (struct pollfd){.fd = fi->connect_fd, .events = POLLRDHUP};
        who[k++] = a;
    }
    /* under alock: a suspended connection cannot be closed meanwhile, so the fds stay ours */
    if (k && poll(fds, k, 0) > 0) {
        for (size_t i = 0; i < k; i++) {
            if (!(fds[i].revents & (POLLRDHUP | POLLHUP | POLLERR))) continue;
            gg_http_async *a = who[i];
            __atomic_store_n(&a->abandoned, true, __ATOMIC_RELAXED);
            a->client_gone = true;
            if (a->streaming) {
                a->reader_waiting = false;
                MHD_resume_connection(a->req->conn);
            } else {
                a->ready = true;
                wake(a);
            }
        }
    }
    pthread_mutex_unlock(&s->alock);
    free(fds);
    free(who);
}

/* ---- completion: access log, metrics, release ------------------------------------------- */

static void alog_write(access_writer *w, gg_strbuf *batch) {
    if (!batch->len) return;
    if (w->file) {
        fwrite(batch->data, 1, batch->len, w->file);
        fputc('\n', w->file);
        fflush(w->file);
    } else {
        gg_log_json_line(batch->data); /* several lines, written atomically */
    }
    gg_strbuf_reset(batch);
}

static void *alog_thread(void *arg) {
    access_writer *w = arg;
    gg_strbuf batch = GG_STRBUF_INIT;
    pthread_mutex_lock(&w->lock);
    for (;;) {
        if (!w->pending.len && !w->stop) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += ALOG_FLUSH_MS * 1000000L;
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&w->cond, &w->lock, &until);
        }
        gg_strbuf tmp = w->pending; /* swap: the request threads get the empty buffer */
        w->pending = batch;
        batch = tmp;
        bool stop = w->stop;
        pthread_mutex_unlock(&w->lock);
        alog_write(w, &batch);
        if (stop) break;
        pthread_mutex_lock(&w->lock);
    }
    gg_strbuf_free(&batch);
    return NULL;
}

static void alog_append(access_writer *w, const char *line, size_t len) {
    pthread_mutex_lock(&w->lock);
    if (!w->running) { /* not started (or already stopped): write directly */
        pthread_mutex_unlock(&w->lock);
        gg_strbuf one = GG_STRBUF_INIT;
        gg_strbuf_append(&one, line, len);
        if (!one.oom) alog_write(w, &one);
        gg_strbuf_free(&one);
        return;
    }
    if (w->pending.len + len + 1 > ALOG_MAX_BYTES) {
        atomic_fetch_add_explicit(&w->dropped, 1, memory_order_relaxed);
    } else {
        if (w->pending.len) gg_strbuf_putc(&w->pending, '\n');
        gg_strbuf_append(&w->pending, line, len);
        if (w->pending.oom) { /* keep going with an empty buffer */
            gg_strbuf_free(&w->pending);
            atomic_fetch_add_explicit(&w->dropped, 1, memory_order_relaxed);
        }
        if (w->pending.len >= ALOG_SIGNAL_BYTES) pthread_cond_signal(&w->cond);
    }
    pthread_mutex_unlock(&w->lock);
}

static bool alog_start(access_writer *w) {
    pthread_mutex_lock(&w->lock);
    w->stop = false;
    w->running = pthread_create(&w->thread, NULL, alog_thread, w) == 0;
    pthread_mutex_unlock(&w->lock);
    return w->running;
}

/* Write everything queued and stop the writer thread. */
static void alog_stop(access_writer *w) {
    pthread_mutex_lock(&w->lock);
    bool running = w->running;
    w->stop = true;
    w->running = false;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    if (running) pthread_join(w->thread, NULL);
    if (w->pending.len) alog_write(w, &w->pending); /* appended while the thread exited */
}

/* The access line is built without printf or heap (on the request path of every request):
 * a stack buffer sized for the worst case of escaping, a per-connection cache of the
 * timestamp's seconds part, hand-formatted numbers. */
typedef struct line {
    char *p;
    size_t n;
} line;

static void put_mem(line *l, const char *s, size_t n) {
    memcpy(l->p + l->n, s, n);
    l->n += n;
}
#define PUT_LIT(l, s) put_mem((l), (s), sizeof(s) - 1)

/* JSON string escaping: quote, backslash and control characters escaped, other bytes as
 * they are. */
static inline bool needs_escape(unsigned char c) { return c < 0x20 || c == '"' || c == '\\' || c == 0x7f; }

static void put_escaped(line *l, const char *s) {
    static const char hex[] = "0123456789abcdef";
    for (const unsigned char *q = (const unsigned char *)s; *q; q++) {
        const unsigned char *run = q; /* copy runs of plain bytes at once */
        while (*q && !needs_escape(*q)) q++;
        if (q > run) put_mem(l, (const char *)run, (size_t)(q - run));
        if (!*q) break;
        unsigned char c = *q;
        if (c == '"' || c == '\\') {
            l->p[l->n++] = '\\';
            l->p[l->n++] = (char)c;
        } else if (c < 0x20 || c == 0x7f) {
            char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            put_mem(l, u, 6);
        } else {
            l->p[l->n++] = (char)c;
        }
    }
}

static void put_uint(line *l, unsigned long long v, int min_digits) {
    char d[24];
    int k = 0;
    do {
        d[k++] = (char)('0' + v % 10);
        v /= 10;
    } while (v || k < min_digits);
    while (k) l->p[l->n++] = d[--k];
}

/* "YYYY-MM-DDTHH:MM:SS" for sec (20 bytes with the NUL). */
static void format_ts_seconds(time_t sec, char out[20]) {
    struct tm tm;
    if (!gmtime_r(&sec, &tm)) memset(&tm, 0, sizeof tm);
    line l = {out, 0};
    put_uint(&l, (unsigned long long)(tm.tm_year + 1900) % 10000, 4);
    out[l.n++] = '-';
    put_uint(&l, (unsigned)(tm.tm_mon + 1) % 100, 2);
    out[l.n++] = '-';
    put_uint(&l, (unsigned)tm.tm_mday % 100, 2);
    out[l.n++] = 'T';
    put_uint(&l, (unsigned)tm.tm_hour % 100, 2);
    out[l.n++] = ':';
    put_uint(&l, (unsigned)tm.tm_min % 100, 2);
    out[l.n++] = ':';
    put_uint(&l, (unsigned)tm.tm_sec % 100, 2);
    out[l.n] = '\0';
}

static void access_log(gg_http_req *req, double dur_ms, enum MHD_RequestTerminationCode toe) {
    const char *route = req->match.pattern ? req->match.pattern : "";
    size_t worst = 320 + 6 * (strlen(req->method) + strlen(route) + strlen(req->path) + strlen(req->request_id) +
                              strlen(req->client));
    char stack[4096];
    char *buf = worst <= sizeof stack ? stack : malloc(worst);
    if (!buf) {
        atomic_fetch_add_explicit(&req->srv->alog.dropped, 1, memory_order_relaxed);
        return;
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    conn_ctx *x = req->conn ? conn_ctx_of(req->conn) : NULL;
    char tsbuf[20];
    const char *ts = tsbuf;
    if (x) {
        if (x->ts_sec != now.tv_sec || !x->ts_text[0]) {
            format_ts_seconds(now.tv_sec, x->ts_text);
            x->ts_sec = now.tv_sec;
        }
        ts = x->ts_text;
    } else {
        format_ts_seconds(now.tv_sec, tsbuf);
    }
    line l = {buf, 0};
    PUT_LIT(&l, "{\"ts\":\"");
    put_mem(&l, ts, strlen(ts));
    l.p[l.n++] = '.';
    put_uint(&l, (unsigned long long)(now.tv_nsec / 1000000), 3);
    PUT_LIT(&l, "Z\",\"level\":\"info\",\"msg\":\"access\",\"method\":\"");
    put_escaped(&l, req->method);
    PUT_LIT(&l, "\",\"route\":\"");
    put_escaped(&l, route);
    PUT_LIT(&l, "\",\"path\":\"");
    put_escaped(&l, req->path);
    PUT_LIT(&l, "\",\"status\":");
    if (req->status_out < 0) l.p[l.n++] = '-'; /* never expected; keeps the number exact */
    put_uint(&l, (unsigned long long)(req->status_out < 0 ? -(long long)req->status_out : req->status_out), 1);
    PUT_LIT(&l, ",\"bytes\":");
    put_uint(&l, (unsigned long long)req->bytes_out, 1);
    PUT_LIT(&l, ",\"duration_ms\":");
    unsigned long long us = dur_ms > 0 ? (unsigned long long)(dur_ms * 1000.0 + 0.5) : 0;
    put_uint(&l, us / 1000, 1);
    l.p[l.n++] = '.';
    put_uint(&l, us % 1000, 3);
    PUT_LIT(&l, ",\"request_id\":\"");
    put_escaped(&l, req->request_id);
    if (req->listener == GG_LISTENER_INTERNAL) PUT_LIT(&l, "\",\"listener\":\"internal\",\"client\":\"");
    else PUT_LIT(&l, "\",\"listener\":\"public\",\"client\":\"");
    put_escaped(&l, req->client);
    l.p[l.n++] = '"';
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK) PUT_LIT(&l, ",\"aborted\":true");
    l.p[l.n++] = '}';
    alog_append(&req->srv->alog, buf, l.n);
    if (buf != stack) free(buf);
}

static void record_metrics(gg_http_server *srv, gg_http_req *req, double dur_ms) {
    if (!srv->rm) return;
    int idx = req->match.route_index >= 0 && req->match.route_index < srv->nrm - 1 ? req->match.route_index : srv->nrm - 1;
    route_metrics *m = &srv->rm[req->shard * (unsigned)srv->nrm + (unsigned)idx];
    atomic_fetch_add_explicit(&m->by_status[status_slot(req->status_out)], 1, memory_order_relaxed);
    double s = dur_ms / 1000.0;
    size_t b = 0;
    while (b < NBUCKETS && s > bucket_s[b]) b++;
    atomic_fetch_add_explicit(&m->buckets[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->sum_us, (unsigned long long)(dur_ms * 1000.0), memory_order_relaxed);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
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
    if (srv->opts.access_log) access_log(req, dur, toe);
    record_metrics(srv, req, dur);
    gg_http_async *a = req->async;
    if (a) {
        pthread_mutex_lock(&srv->alock);
        a->conn = CONN_DONE;
        if (!a->owner_done) __atomic_store_n(&a->abandoned, true, __ATOMIC_RELAXED);
        if (a->prev) a->prev->next = a->next;
        else if (srv->alist == a) srv->alist = a->next;
        if (a->next) a->next->prev = a->prev;
        a->prev = a->next = NULL;
        bool last = --a->refs == 0;
        pthread_mutex_unlock(&srv->alock);
        if (last) async_free(a);
    } else {
        req_recycle(req);
    }
    atomic_fetch_sub(&srv->cpu[shard].inflight, 1);
}

/* ---- built-in routes --------------------------------------------------------------------- */

static int h_health(gg_http_req *req, gg_http_res *res, void *user) {
    gg_http_server *srv = user;
    json_int_t up = (json_int_t)((gg_now_ms() - srv->started_ms) / 1000.0);
    json_t *o = json_pack("{s:s,s:s,s:I}", "status", atomic_load(&srv->draining) ? "draining" : "ok",
                          "version", srv->version, "uptime_seconds", up);
    if (!o || !gg_http_res_json(res, 200, o)) gg_http_res_error(res, 500, "internal_error", "out of memory");
    return GG_HTTP_DONE;
}

static int h_ready(gg_http_req *req, gg_http_res *res, void *user) {
    gg_http_server *srv = user;
    gg_error err = GG_ERROR_INIT;
    bool ok = !atomic_load(&srv->draining);
    if (!ok) gg_error_set(&err, "shutting_down", "the server is shutting down");
    else if (srv->ready) ok = srv->ready(srv->ready_user, &err);
    json_t *o;
    if (ok) {
        o = json_pack("{s:s}", "status", "ready");
    } else {
        o = json_pack("{s:s,s:{s:s,s:s}}", "status", "not_ready", "error", "code",
                      err.code[0] ? err.code : "not_ready", "message",
                      err.message ? err.message : "not ready");
    }
    gg_error_clear(&err);
    if (!o || !gg_http_res_json(res, ok ? 200 : 503, o)) gg_http_res_error(res, 500, "internal_error", "out of memory");
    return GG_HTTP_DONE;
}

static void label_escape(gg_strbuf *b, const char *s) {
    for (; *s; s++) {
        if (*s == '\\' || *s == '"') gg_strbuf_putc(b, '\\');
        if (*s == '\n') {
            gg_strbuf_puts(b, "\\n");
            continue;
        }
        gg_strbuf_putc(b, *s);
    }
}

static long rss_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return -1;
    long size, resident;
    int n = fscanf(f, "%ld %ld", &size, &resident);
    fclose(f);
    return n == 2 ? resident * sysconf(_SC_PAGESIZE) : -1;
}

static void route_labels(gg_strbuf *b, gg_http_server *srv, int i) {
    const char *pattern = i < srv->nrm - 1 ? gg_router_pattern(srv->router, i) : "unmatched";
    const char *method = i < srv->nrm - 1 ? gg_router_method(srv->router, i) : "";
    gg_strbuf_puts(b, "route=\"");
    label_escape(b, pattern ? pattern : "");
    gg_strbuf_puts(b, "\",method=\"");
    label_escape(b, method ? method : "");
    gg_strbuf_puts(b, "\"");
}

static int h_metrics(gg_http_req *req, gg_http_res *res, void *user) {
    gg_http_server *srv = user;
    gg_strbuf b = GG_STRBUF_INIT;
    gg_strbuf_puts(&b, "# HELP graphgate_http_requests_total HTTP requests by route, method and status.\n"
                       "# TYPE graphgate_http_requests_total counter\n");
    for (int i = 0; i < srv->nrm; i++)
        for (size_t s = 0; s < NSTATUS; s++) {
            unsigned long v = 0;
            for (int sh = 0; sh < METRIC_SHARDS; sh++)
                v += atomic_load_explicit(&srv->rm[sh * srv->nrm + i].by_status[s], memory_order_relaxed);
            if (!v) continue;
            gg_strbuf_puts(&b, "graphgate_http_requests_total{");
            route_labels(&b, srv, i);
            if (s + 1 < NSTATUS) gg_strbuf_printf(&b, ",status=\"%d\"} %lu\n", status_slots[s], v);
            else gg_strbuf_printf(&b, ",status=\"other\"} %lu\n", v);
        }
    gg_strbuf_puts(&b, "# HELP graphgate_http_request_duration_seconds Time from request headers to the last byte sent.\n"
                       "# TYPE graphgate_http_request_duration_seconds histogram\n");
    for (int i = 0; i < srv->nrm; i++) {
        unsigned long counts[NBUCKETS + 1], total = 0;
        for (size_t k = 0; k <= NBUCKETS; k++) {
            counts[k] = 0;
            for (int sh = 0; sh < METRIC_SHARDS; sh++)
                counts[k] += atomic_load_explicit(&srv->rm[sh * srv->nrm + i].buckets[k], memory_order_relaxed);
            total += counts[k];
        }
        if (!total) continue;
        unsigned long cum = 0;
        for (size_t k = 0; k <= NBUCKETS; k++) {
            cum += counts[k];
            gg_strbuf_puts(&b, "graphgate_http_request_duration_seconds_bucket{");
            route_labels(&b, srv, i);
            if (k < NBUCKETS) gg_strbuf_printf(&b, ",le=\"%g\"} %lu\n", bucket_s[k], cum);
            else gg_strbuf_printf(&b, ",le=\"+Inf\"} %lu\n", cum);
        }
        gg_strbuf_puts(&b, "graphgate_http_request_duration_seconds_sum{");
        route_labels(&b, srv, i);
        unsigned long long sum_us = 0;
        for (int sh = 0; sh < METRIC_SHARDS; sh++) sum_us += atomic_load(&srv->rm[sh * srv->nrm + i].sum_us);
        gg_strbuf_printf(&b, "} %.6f\n", (double)sum_us / 1e6);
        gg_strbuf_puts(&b, "graphgate_http_request_duration_seconds_count{");
        route_labels(&b, srv, i);
        gg_strbuf_printf(&b, "} %lu\n", total);
    }
    gg_strbuf_printf(&b, "# HELP graphgate_http_requests_in_flight Requests being served (including deferred ones).\n"
                         "# TYPE graphgate_http_requests_in_flight gauge\ngraphgate_http_requests_in_flight %ld\n",
                     gg_http_server_inflight(srv));
    gg_strbuf_printf(&b, "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
                         "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %ld\n",
                     rss_bytes());
    gg_strbuf_printf(&b, "# HELP process_start_time_seconds Start time of the process since the Unix epoch.\n"
                         "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %lld\n",
                     srv->started_wall_ms / 1000);
    gg_strbuf_puts(&b, "# HELP graphgate_build_info Build information.\n# TYPE graphgate_build_info gauge\n"
                       "graphgate_build_info{version=\"");
    label_escape(&b, srv->version);
    gg_strbuf_puts(&b, "\"} 1\n");
    gg_strbuf_printf(&b, "# HELP graphgate_http_receive_timeouts_total Connections cut for not delivering a request within http.receive_timeout.\n"
                         "# TYPE graphgate_http_receive_timeouts_total counter\ngraphgate_http_receive_timeouts_total %lu\n",
                     gg_conn_tracker_cut(srv->tracker));
    gg_strbuf_printf(&b, "# HELP graphgate_access_log_dropped_total Access log lines dropped (writer behind).\n"
                         "# TYPE graphgate_access_log_dropped_total counter\ngraphgate_access_log_dropped_total %lu\n",
                     atomic_load(&srv->alog.dropped));
    for (int i = 0; i < srv->nhooks; i++) srv->hooks[i].fn(&b, srv->hooks[i].user);
    if (b.oom) {
        gg_strbuf_free(&b);
        gg_http_res_error(res, 500, "internal_error", "out of memory");
        return GG_HTTP_DONE;
    }
    size_t len = b.len;
    char *text = gg_strbuf_take(&b);
    if (!text || !gg_http_res_bytes_take(res, 200, "text/plain; version=0.0.4; charset=utf-8", text, len)) {
        free(text);
        gg_http_res_error(res, 500, "internal_error", "out of memory");
    }
    return GG_HTTP_DONE;
}

/* ---- server lifecycle -------------------------------------------------------------------- */

/* Parse "host:port" or "[v6]:port"; see http.h. */
bool gg_http_parse_addr(const char *text, char *host, size_t host_size, unsigned *port, gg_error *err) {
    if (!text || !*text) {
        gg_error_set(err, "invalid_address", "empty listen address");
        return false;
    }
    const char *h = text, *colon;
    size_t hlen;
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (!close || close[1] != ':') {
            gg_error_set(err, "invalid_address", "listen address '%s' must look like [::1]:8080", text);
            return false;
        }
        h = text + 1;
        hlen = (size_t)(close - h);
        colon = close + 1;
    } else {
        colon = strrchr(text, ':');
        if (!colon || strchr(text, ':') != colon) {
            gg_error_set(err, "invalid_address", "listen address '%s' must look like 127.0.0.1:8080", text);
            return false;
        }
        hlen = (size_t)(colon - text);
    }
    if (hlen == 0 || hlen >= host_size) {
        gg_error_set(err, "invalid_address", "listen address '%s' has no usable host", text);
        return false;
    }
    char *end;
    errno = 0;
    unsigned long p = strtoul(colon + 1, &end, 10);
    if (errno || end == colon + 1 || *end || p > 65535 || colon[1] == '-' || colon[1] == '+') {
        gg_error_set(err, "invalid_address", "listen address '%s' has a bad port", text);
        return false;
    }
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    *port = (unsigned)p;
    return true;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Percent-decoding of paths and query arguments, except "%00": a decoded NUL would cut the
 * C string short and make "/health%00x" look like "/health", so it stays literal. */
static size_t unescape(void *cls, struct MHD_Connection *c, char *s) {
    char *w = s;
    for (const char *r = s; *r;) {
        int hi, lo;
        if (r[0] == '%' && (hi = hexval(r[1])) >= 0 && (lo = hexval(r[2])) >= 0 && (hi | lo) != 0) {
            *w++ = (char)(hi * 16 + lo);
            r += 3;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
    return (size_t)(w - s);
}

/* An attacker makes libmicrohttpd log one line per refused or cut connection: at most this
 * many per second reach the log, the rest are counted in the next line that does. */
#define MHD_LOG_PER_SECOND 10u

static void mhd_logger(void *cls, const char *fmt, va_list ap) {
    gg_http_server *srv = cls;
    long long now = (long long)time(NULL), sec = atomic_load(&srv->mhdlog_sec);
    if (sec != now && atomic_compare_exchange_strong(&srv->mhdlog_sec, &sec, now)) {
        atomic_store(&srv->mhdlog_count, 0);
        unsigned long dropped = atomic_exchange(&srv->mhdlog_dropped, 0);
        if (dropped) {
            char n[24];
            snprintf(n, sizeof n, "%lu", dropped);
            gg_log(GG_LOG_WARN, "libmicrohttpd messages suppressed (rate limit)", "count", n, NULL);
        }
    }
    if (atomic_fetch_add(&srv->mhdlog_count, 1) >= MHD_LOG_PER_SECOND) {
        atomic_fetch_add(&srv->mhdlog_dropped, 1);
        return;
    }
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' ')) msg[--n] = '\0';
    gg_log(GG_LOG_WARN, "libmicrohttpd", "detail", msg, NULL);
}

/* Create the server and the built-in routes; see http.h. */
gg_http_server *gg_http_server_new(const gg_http_options *opts, gg_error *err) {
    if (sodium_init() < 0) {
        gg_error_set(err, "internal_error", "libsodium failed to initialise");
        return NULL;
    }
    gg_http_server *srv = calloc(1, sizeof *srv);
    if (!srv || !(srv->router = gg_router_new())) {
        free(srv);
        gg_error_set(err, "oom", "out of memory creating the HTTP server");
        return NULL;
    }
    randombytes_buf(srv->rid_key, sizeof srv->rid_key);
    srv->opts = *opts;
    snprintf(srv->public_addr, sizeof srv->public_addr, "%s", opts->public_addr ? opts->public_addr : "127.0.0.1:8080");
    snprintf(srv->internal_addr, sizeof srv->internal_addr, "%s", opts->internal_addr ? opts->internal_addr : "");
    snprintf(srv->version, sizeof srv->version, "%s", opts->version ? opts->version : GG_VERSION);
    srv->opts.public_addr = srv->public_addr;
    srv->opts.internal_addr = srv->internal_addr;
    srv->opts.version = srv->version;
    srv->opts.server_name = NULL;
    if (!srv->opts.threads) srv->opts.threads = 2;
    if (!srv->opts.body_limit) srv->opts.body_limit = 1u << 20;
    if (!srv->opts.connection_timeout) srv->opts.connection_timeout = 60;
    if (!srv->opts.max_connections) srv->opts.max_connections = 1024;
    if (!srv->opts.receive_timeout_ms) srv->opts.receive_timeout_ms = 15000;
    srv->guard.hosts = opts->internal_hosts;
    srv->guard.nhosts = opts->n_internal_hosts;
    srv->guard.origins = opts->internal_origins;
    srv->guard.norigins = opts->n_internal_origins;
    if (!srv->opts.header_memory) srv->opts.header_memory = GG_HTTP_HEADER_MEMORY;
    if (srv->opts.header_memory < 4096) srv->opts.header_memory = 4096;
    pthread_mutex_init(&srv->alock, NULL);
    pthread_mutex_init(&srv->alog.lock, NULL);
    pthread_cond_init(&srv->alog.cond, NULL);
    srv->opts.access_log_file = NULL;
    if (opts->access_log && opts->access_log_file && opts->access_log_file[0]) {
        srv->alog.file = fopen(opts->access_log_file, "a");
        if (!srv->alog.file) {
            gg_error_set(err, "invalid_config", "cannot open access log file %s", opts->access_log_file);
            gg_http_server_free(srv);
            return NULL;
        }
    }
    srv->pub = (listener){srv, GG_LISTENER_PUBLIC, "", NULL, 0};
    srv->intl = (listener){srv, GG_LISTENER_INTERNAL, "", NULL, 0};
    snprintf(srv->pub.addr, sizeof srv->pub.addr, "%s", srv->public_addr);
    snprintf(srv->intl.addr, sizeof srv->intl.addr, "%s", srv->internal_addr);
    srv->started_ms = gg_now_ms();
    srv->started_wall_ms = gg_wall_ms();
    /* /metrics is operator data: internal listener only, unless there is none. */
    unsigned metrics_on = srv->internal_addr[0] ? GG_LISTENER_INTERNAL : GG_LISTENER_PUBLIC;
    if (!gg_router_add(srv->router, GG_LISTENER_BOTH, "GET", "/health", h_health, srv, err) ||
        !gg_router_add(srv->router, GG_LISTENER_BOTH, "GET", "/ready", h_ready, srv, err) ||
        !gg_router_add(srv->router, metrics_on, "GET", "/metrics", h_metrics, srv, err)) {
        gg_http_server_free(srv);
        return NULL;
    }
    return srv;
}

gg_router *gg_http_server_router(gg_http_server *s) { return s->router; }

void gg_http_server_set_ready_check(gg_http_server *s, gg_http_ready_fn fn, void *user) {
    s->ready = fn;
    s->ready_user = user;
}

/* Add a /metrics hook (before start). */
bool gg_http_server_add_metrics(gg_http_server *s, gg_http_metrics_fn fn, void *user) {
    if (!fn || s->nhooks >= MAX_HOOKS || s->started) return false;
    s->hooks[s->nhooks].fn = fn;
    s->hooks[s->nhooks].user = user;
    s->nhooks++;
    return true;
}

/* The internal listener has no authentication: a non-loopback bind (allowed by the
 * configuration only with an explicit flag) is worth a warning at every start, and widens
 * the Host values it answers to IP literals. */
static void internal_bind_check(gg_http_server *s) {
    char host[128];
    unsigned port;
    gg_error e = GG_ERROR_INIT;
    s->guard.loopback_bind = true;
    if (!s->internal_addr[0] || !gg_http_parse_addr(s->internal_addr, host, sizeof host, &port, &e)) {
        gg_error_clear(&e);
        return;
    }
    s->guard.loopback_bind = !strncmp(host, "127.", 4) || !strcmp(host, "::1") || !strcasecmp(host, "localhost");
    if (!s->guard.loopback_bind)
        gg_log(GG_LOG_WARN, "internal listener bound to a non-loopback address: its routes have no authentication",
               "internal_listen", s->internal_addr, NULL);
}

static bool start_listener(gg_http_server *srv, listener *L, gg_error *err) {
    char host[128];
    unsigned port;
    if (!gg_http_parse_addr(L->addr, host, sizeof host, &port, err)) return false;
    struct addrinfo hints = {0}, *ai = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    int rc = getaddrinfo(host, NULL, &hints, &ai);
    if (rc != 0 || !ai) {
        gg_error_set(err, "listen_failed", "cannot resolve listen host '%s': %s", host, gai_strerror(rc));
        return false;
    }
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
    bool v6 = ai->ai_family == AF_INET6;
    freeaddrinfo(ai);
    if (v6) ((struct sockaddr_in6 *)(void *)&ss)->sin6_port = htons((uint16_t)port);
    else ((struct sockaddr_in *)(void *)&ss)->sin_port = htons((uint16_t)port);
    unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    if (v6) flags |= MHD_USE_IPv6;
    L->d = MHD_start_daemon(flags, (uint16_t)port, accept_policy, L, on_request, L,
                            MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, srv,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                            MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, L,
                            MHD_OPTION_NOTIFY_CONNECTION, on_connection, L,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)srv->opts.connection_timeout,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned int)srv->opts.max_connections,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)srv->opts.max_connections_per_ip,
                            MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)srv->opts.threads,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, srv->opts.header_memory,
                            MHD_OPTION_END);
    if (!L->d) {
        gg_error_set(err, "listen_failed", "cannot listen on %s (address in use or not permitted)", L->addr);
        return false;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(L->d, MHD_DAEMON_INFO_BIND_PORT);
    L->port = di ? di->port : port;
    return true;
}

/* Bind and start; see http.h. */
bool gg_http_server_start(gg_http_server *s, gg_error *err) {
    if (s->started) return true;
    s->nrm = gg_router_count(s->router) + 1;
    s->rm = calloc((size_t)s->nrm * METRIC_SHARDS, sizeof *s->rm);
    if (!s->rm) {
        gg_error_set(err, "oom", "out of memory for metrics");
        return false;
    }
    if (s->opts.access_log && !s->alog.running && !alog_start(&s->alog)) {
        gg_error_set(err, "internal_error", "cannot start the access log writer thread");
        return false;
    }
    if (!s->tracker && !(s->tracker = gg_conn_tracker_start(s->opts.receive_timeout_ms, s->opts.max_connections))) {
        gg_error_set(err, "internal_error", "cannot start the receive-deadline thread");
        return false;
    }
    gg_conn_tracker_set_tick(s->tracker, find_gone_clients, s);
    internal_bind_check(s);
    /* before the listeners start: their threads read it (/health uptime) */
    s->started_ms = gg_now_ms();
    if (!start_listener(s, &s->pub, err)) return false;
    if (s->internal_addr[0] && !start_listener(s, &s->intl, err)) {
        MHD_stop_daemon(s->pub.d);
        s->pub.d = NULL;
        return false;
    }
    s->started = true;
    for (int i = 0; i < s->nstarted; i++) s->started_hooks[i].fn(s, s->started_hooks[i].user);
    return true;
}

/* Register a post-start hook; see http.h. */
bool gg_http_server_on_start(gg_http_server *s, gg_http_started_fn fn, void *user) {
    if (!fn || s->started || s->nstarted >= (int)(sizeof s->started_hooks / sizeof s->started_hooks[0])) return false;
    s->started_hooks[s->nstarted].fn = fn;
    s->started_hooks[s->nstarted].user = user;
    s->nstarted++;
    return true;
}

/* The bound address of a running listener; see http.h. */
bool gg_http_server_bound_addr(const gg_http_server *s, gg_listener which, struct sockaddr_storage *out) {
    const listener *L = which == GG_LISTENER_INTERNAL ? &s->intl : &s->pub;
    if (!L->d) return false;
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(L->d, MHD_DAEMON_INFO_LISTEN_FD);
    socklen_t len = sizeof *out;
    memset(out, 0, sizeof *out);
    return di && getsockname(di->listen_fd, (struct sockaddr *)out, &len) == 0;
}

unsigned gg_http_server_port(const gg_http_server *s, gg_listener which) {
    const listener *L = which == GG_LISTENER_INTERNAL ? &s->intl : &s->pub;
    return L->d ? L->port : 0;
}

long gg_http_server_inflight(const gg_http_server *s) {
    long n = 0;
    for (int i = 0; i < METRIC_SHARDS; i++) n += atomic_load(&((gg_http_server *)s)->cpu[i].inflight);
    return n;
}

static void wait_idle(gg_http_server *s, double until_ms) {
    while (gg_http_server_inflight(s) > 0 && gg_now_ms() < until_ms && !atomic_load(&s->hurry)) {
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* Cut a running graceful stop short; see http.h. */
void gg_http_server_hurry(gg_http_server *s) { atomic_store(&s->hurry, 1); }

/* Graceful stop; see http.h. */
int gg_http_server_stop(gg_http_server *s, unsigned deadline_ms) {
    if (s->stopped) return 0;
    s->stopped = true;
    if (!s->started) return 0;
    atomic_store(&s->draining, 1); /* accept_policy refuses new connections from here */
    listener *ls[2] = {&s->pub, &s->intl};
    wait_idle(s, gg_now_ms() + deadline_ms);
    /* Past the deadline: answer whatever is still deferred so no connection stays suspended
     * (libmicrohttpd cannot stop with suspended connections). */
    int abandoned = 0;
    pthread_mutex_lock(&s->alock);
    atomic_store(&s->abandoning, 1);
    for (gg_http_async *a = s->alist; a; a = a->next) {
        if (a->conn == CONN_DONE || a->owner_done) continue;
        __atomic_store_n(&a->abandoned, true, __ATOMIC_RELAXED);
        abandoned++;
        if (a->streaming) {
            if (a->reader_waiting) {
                a->reader_waiting = false;
                MHD_resume_connection(a->req->conn);
            }
        } else if (!a->ready) {
            a->ready = true;
            wake(a);
        }
    }
    pthread_mutex_unlock(&s->alock);
    if (abandoned) {
        gg_log(GG_LOG_WARN, "shutdown deadline reached; abandoned deferred requests", NULL);
        wait_idle(s, gg_now_ms() + 1000);
    }
    for (int i = 0; i < 2; i++) {
        if (!ls[i]->d) continue;
        MHD_stop_daemon(ls[i]->d);
        ls[i]->d = NULL;
    }
    gg_conn_tracker_stop(s->tracker); /* every connection is closed: nothing left to cut */
    s->tracker = NULL;
    alog_stop(&s->alog);
    return abandoned;
}

/* Stop (without waiting) if needed and free. Every gg_http_async must be completed first. */
void gg_http_server_free(gg_http_server *s) {
    if (!s) return;
    gg_http_server_stop(s, 0);
    gg_conn_tracker_stop(s->tracker); /* started, then the listeners failed to bind */
    gg_router_free(s->router);
    free(s->rm);
    alog_stop(&s->alog);
    gg_strbuf_free(&s->alog.pending);
    if (s->alog.file) fclose(s->alog.file);
    pthread_mutex_destroy(&s->alog.lock);
    pthread_cond_destroy(&s->alog.cond);
    pthread_mutex_destroy(&s->alock);
    sodium_memzero(s->rid_key, sizeof s->rid_key);
    free(s);
}
