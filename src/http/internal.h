/* internal.h — what the http sources share with each other (not a public header: other
 * subsystems include only http/http.h). Ownership: as in http.h. */
#ifndef GG_HTTP_INTERNAL_H
#define GG_HTTP_INTERNAL_H

#include "http/http.h"

#include <microhttpd.h>
#include <pthread.h>
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
    bool abandoned;
    bool reader_waiting;        /* the content reader suspended the connection */
    bool client_gone;           /* the client closed while suspended: close, answer nothing */
    gg_strbuf out;              /* queued stream bytes */
    size_t out_off;
    struct gg_http_async *prev, *next; /* server's list of live asyncs */
};

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
    void *user;
    size_t bytes_out;
    int status_out;
    unsigned shard;             /* the server's per-CPU counter shard this request counts in */
};

/* ---- guard.c: refusals before routing ---------------------------------------------------- */

/* 0 when body framing is unambiguous, else 400/501 with *msg (answer, then close). */
int gg_http_framing_check(struct MHD_Connection *conn, const char **msg);

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

#endif
