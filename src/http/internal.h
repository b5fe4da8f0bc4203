/* internal.h — what the http sources share with each other (not a public header: other
 * subsystems include only http/http.h). Ownership: as in http.h. */
#ifndef GG_HTTP_INTERNAL_H
#define GG_HTTP_INTERNAL_H

#include "http/http.h"

#include <microhttpd.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdatomic.h>

struct gg_http_res {
    int status;                 /* 0 = not set */
    char *body;                 /* malloc'd, may be NULL for an empty body */
    size_t len;
    char content_type[96];
    size_t nheaders;
    char **headers;             /* name, value, name, value ... (malloc'd strings) */
};

void gg_http_res_init(gg_http_res *res);
/* A fresh request id (32 lowercase hex characters) for a request that brought none; shard
 * is the caller's per-CPU counter shard (any value is correct, the same CPU's is cheapest). */
void gg_http_new_request_id(gg_http_server *srv, unsigned shard, char out[33]);
void gg_http_res_clear(gg_http_res *res);
/* Move src into dst (dst cleared first); src is left empty. */
void gg_http_res_move(gg_http_res *dst, gg_http_res *src);

/* A request header or query argument captured when a request is deferred. */
typedef struct gg_http_kv {
    enum MHD_ValueKind kind;
    const char *name, *value; /* point into the same allocation as the kv array */
} gg_http_kv;

typedef enum {
    CONN_IN_HANDLER,  /* handler running or returned, not yet suspended */
    CONN_SUSPENDED,   /* waiting for the owner */
    CONN_RESPONDING,  /* a response (final or stream) is queued */
    CONN_DONE,        /* libmicrohttpd finished with the connection */
} gg_conn_state;

struct gg_http_async {
    gg_http_req *req;
    gg_http_res res;            /* written by the owner only, read after owner_done/stream */
    int refs;                   /* owner + connection; under server->alock */
    gg_conn_state conn;
    bool owner_done;
    bool ready;                 /* the connection may proceed: result, stream or abandon */
    bool streaming;
    _Atomic bool abandoned;
    bool reader_waiting;        /* the content reader suspended the connection */
    bool client_gone;           /* the client closed while suspended: close, answer nothing */
    bool redispatch;            /* the owner asked for the route's handler to run again */
    gg_strbuf out;              /* queued stream bytes */
    size_t out_off;
    struct gg_http_async *prev, *next; /* server's list of live asyncs */
};

/* The request headers read on (nearly) every call. The one walk over a request's headers
 * that checks its framing also keeps these (the first of each name) in gg_http_req.hdr, so
 * that gg_http_header reads them by index instead of scanning the connection's list again
 * (≈ 190 instructions a read, a dozen reads a tools/call). */
enum {
    GG_HDR_HOST, GG_HDR_ORIGIN, GG_HDR_ACCEPT, GG_HDR_EXPECT, GG_HDR_AUTHORIZATION, GG_HDR_X_API_KEY,
    GG_HDR_DPOP, GG_HDR_CONTENT_LENGTH, GG_HDR_X_REQUEST_ID, GG_HDR_MCP_SESSION_ID,
    GG_HDR_MCP_PROTOCOL_VERSION, GG_HDR_MCP_METHOD, GG_HDR_MCP_NAME, GG_HDR_TRACEPARENT,
    GG_HDR_TRACESTATE, GG_HDR_FORWARDED_KEY, GG_HDR_TRANSFER_ENCODING, GG_HDR_COUNT
};
/* The index of header name (n bytes, any case) in that set, or -1. */
int gg_http_known_header(const char *name, size_t n);

struct gg_http_req {
    gg_http_server *srv;
    struct MHD_Connection *conn;
    gg_listener listener;
    char method[16];
    char *path;                 /* path_inline or malloc'd when longer */
    char path_inline[128];
    gg_route_match match;
    gg_strbuf body;
    size_t discarded;           /* body bytes dropped after the limit */
    bool too_large;
    bool dispatched;
    char request_id[GG_HTTP_REQUEST_ID_MAX + 1];
    char client[64];
    double t0;
    gg_http_res res;
    gg_http_async *async;
    size_t nkv;
    gg_http_kv *kv;             /* headers/query snapshot (one allocation), deferred only */
    const char *hdr[GG_HDR_COUNT]; /* the known headers' values (gg_http_known_header) */
    const char *framing_msg;    /* a refusal of the body's framing, found by req_new */
    int framing_status;         /* ... and its status (0: none) */
    void *user;
    size_t bytes_out;
    int status_out;
    unsigned shard;             /* the server's per-CPU counter shard this request counts in */
};

/* ---- guard.c: refusals before routing ---------------------------------------------------- */

/* 0 when body framing is unambiguous, else 400/501 with *msg (answer, then close). hdr
 * (GG_HDR_COUNT entries, NULL each) gets the known headers' values, which stay valid while
 * the connection holds the request. */
int gg_http_framing_check(struct MHD_Connection *conn, const char *hdr[], const char **msg);

/* Who may address the internal listener (lists borrowed from the options). */
typedef struct gg_http_guard_cfg {
    bool loopback_bind;        /* the internal listener is bound to a loopback address */
    char *const *hosts;        /* extra Host values (names, host:port) */
    size_t nhosts;
    char *const *origins;      /* extra Origin values ("*" = any) */
    size_t norigins;
} gg_http_guard_cfg;
bool gg_http_internal_host_ok(const gg_http_guard_cfg *g, struct MHD_Connection *conn, const char **msg);

/* One tracked connection (embedded in the connection's context). */
typedef struct gg_conn_track {
    struct gg_conn_track *prev, *next; /* under the tracker's lock */
    int fd;
    unsigned char listener;     /* 0 public, 1 internal */
    bool cut;                   /* already shut down by the reaper (under the lock) */
    atomic_bool receiving;      /* waiting for a request's headers or body */
    atomic_llong since_ms;      /* monotonic time it started waiting */
} gg_conn_track;
typedef struct gg_conn_tracker gg_conn_tracker;
/* Start the reaper: connections receiving for longer than timeout_ms (1 s while their
 * listener holds 7/8 of max_connections) are shut down. */
gg_conn_tracker *gg_conn_tracker_start(unsigned timeout_ms, unsigned max_connections);
/* Also run tick(user) on every reaper round (every quarter second), outside the tracker's
 * lock: the server looks for clients that left while their request was suspended. */
void gg_conn_tracker_set_tick(gg_conn_tracker *t, void (*tick)(void *), void *user);
void gg_conn_tracker_stop(gg_conn_tracker *t); /* after the listeners stopped */
unsigned long gg_conn_tracker_cut(const gg_conn_tracker *t); /* connections cut so far */
void gg_conn_track_add(gg_conn_tracker *t, gg_conn_track *c, int fd, bool internal);
void gg_conn_track_remove(gg_conn_tracker *t, gg_conn_track *c);
void gg_conn_track_receiving(gg_conn_track *c, bool receiving);

/* ---- the server (server.c) ---------------------------------------------------------------- */

/* Metrics are counted in per-CPU shards (chosen with sched_getcpu, summed on scrape) so the
 * polling threads do not bounce the same counter cache lines on every request. */
#define METRIC_SHARDS 8
#define MAX_HOOKS 16
#define GG_HTTP_NSTATUS 33  /* status slots counted one by one (metrics.c), plus "other" */
#define GG_HTTP_NBUCKETS 14 /* latency histogram bounds (metrics.c) */

typedef struct route_metrics {
    atomic_ulong by_status[GG_HTTP_NSTATUS];
    atomic_ulong buckets[GG_HTTP_NBUCKETS + 1]; /* non-cumulative; last = above every bound */
    atomic_ullong sum_us;
} route_metrics;

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
    unsigned char rid_key[crypto_shorthash_siphashx24_KEYBYTES]; /* request ids, see gg_http_new_request_id */
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

/* ---- request.c: the request path ------------------------------------------------------- */

/* libmicrohttpd callbacks (cls is the listener). */
void gg_http_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                           enum MHD_ConnectionNotificationCode toe);
enum MHD_Result gg_http_on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                   const char *method, const char *version, const char *upload_data,
                                   size_t *upload_data_size, void **con_cls);
void gg_http_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                          enum MHD_RequestTerminationCode toe);
conn_ctx *gg_http_conn_ctx_of(struct MHD_Connection *conn); /* NULL when it has none */
void gg_http_req_free(gg_http_req *req);                     /* NULL is fine */

/* ---- deferred.c: deferred responses and streams ------------------------------------------- */

void gg_http_async_free(gg_http_async *a); /* its request too */
/* alock held: take a off the server's list of live asyncs */
void gg_http_async_unlink(gg_http_async *a);
/* Let the connection proceed (caller holds alock). */
void gg_http_async_wake(gg_http_async *a);
/* alock held: the owner is done or gave up; let the connection go on (deferred.c) */
void gg_http_async_let_go(gg_http_async *a);
/* libmicrohttpd content reader of a streamed body (cls is the gg_http_async). */
ssize_t gg_http_stream_reader(void *cls, uint64_t pos, char *buf, size_t max);
/* The conn tracker's tick: abandon suspended requests whose client left (user = server). */
void gg_http_find_gone_clients(void *user);

/* ---- access_log.c ----------------------------------------------------------------------- */

bool gg_http_alog_start(access_writer *w);
void gg_http_alog_stop(access_writer *w); /* writes everything queued */
void gg_http_access_log(gg_http_req *req, double dur_ms, enum MHD_RequestTerminationCode toe);

/* ---- metrics.c: counters and built-in routes ------------------------------------------- */

void gg_http_record_metrics(gg_http_server *srv, gg_http_req *req, double dur_ms);
int gg_http_route_health(gg_http_req *req, gg_http_res *res, void *user);  /* user = server */
int gg_http_route_ready(gg_http_req *req, gg_http_res *res, void *user);
int gg_http_route_metrics(gg_http_req *req, gg_http_res *res, void *user);

#endif
