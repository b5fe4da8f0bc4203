/* http.h — the HTTP core: two listeners (public, internal) on libmicrohttpd, a route table,
 * request/response objects, JSON errors, metrics, and deferred (suspend/resume) responses.
 *
 * Ownership: the server owns every request and response object; a handler borrows them for
 * the duration of the call — or, after gg_http_defer, until it calls gg_http_async_complete,
 * which it must call exactly once on every gg_http_async it obtained.
 *
 * Threads: handlers run on libmicrohttpd polling threads and must not block (no graph runs,
 * no downstream calls, no long SQL): hand such work to a worker and return GG_HTTP_DEFERRED.
 * Routes are registered before gg_http_server_start and are immutable afterwards.
 */
#ifndef GG_HTTP_H
#define GG_HTTP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include "util/util.h"

/* ------------------------------------------------------------------------------------------
 * Listeners, handlers, routes
 * ---------------------------------------------------------------------------------------- */

/* Which listener a request arrived on; also a bit mask when registering routes. */
typedef enum {
    GG_LISTENER_PUBLIC = 1,
    GG_LISTENER_INTERNAL = 2,
    GG_LISTENER_BOTH = 3,
} gg_listener;

typedef struct gg_http_req gg_http_req;     /* one request (server-owned) */
typedef struct gg_http_res gg_http_res;     /* the response being built (server-owned) */
typedef struct gg_http_async gg_http_async; /* a deferred response, see below */
typedef struct gg_router gg_router;         /* the route table */
typedef struct gg_http_server gg_http_server;

/* Handler return values. */
enum {
    GG_HTTP_DONE = 0,     /* the response in res is complete; send it */
    GG_HTTP_DEFERRED = 1, /* gg_http_defer was called; the response comes later */
};

/* A route handler. Fill res (gg_http_res_json, gg_http_res_error, ...) and return
 * GG_HTTP_DONE, or call gg_http_defer(req) and return GG_HTTP_DEFERRED. A handler that
 * returns GG_HTTP_DONE without setting a response yields 500 internal_error. */
typedef int (*gg_http_handler)(gg_http_req *req, gg_http_res *res, void *user);

#define GG_HTTP_MAX_PARAMS 8     /* {param} segments per pattern */
#define GG_HTTP_MAX_SEGMENTS 32  /* path segments per pattern / per request path */
#define GG_HTTP_MAX_PATH 2048    /* longer request paths answer 414 */
#define GG_HTTP_REQUEST_ID_MAX 128
#define GG_HTTP_HEADER_MEMORY 16384 /* headers up to ~15 KiB pass (Node's default is 16 KiB) */

/* An empty route table. NULL on allocation failure. */
gg_router *gg_router_new(void);
void gg_router_free(gg_router *r);

/* Register method (e.g. "GET", "POST"; upper case) + pattern on the listeners in the mask.
 * Pattern: absolute path of literal segments and "{name}" segments, e.g.
 * "/admin/tenants/{t}/graphs/{g}". A {name} segment matches one non-empty path segment;
 * literal segments win over {param} segments at the same depth (with backtracking, so
 * "/mcp/tools/{name}" and "/mcp/{tenant}/{graph}" never shadow each other).
 * Registering the same method + pattern + listener twice is an error ("route_conflict"),
 * as is a malformed pattern ("invalid_route"). GET routes also answer HEAD. */
bool gg_router_add(gg_router *r, unsigned listeners, const char *method, const char *pattern,
                   gg_http_handler fn, void *user, gg_error *err);

/* The result of a lookup (exposed for unit tests and for the server). */
typedef struct gg_route_match {
    int status;                 /* 200 matched, 404 no such path on this listener, 405 */
    gg_http_handler fn;
    void *user;
    const char *pattern;        /* the matched route's pattern ("/mcp/{tenant}/{graph}") */
    int route_index;            /* stable index of the matched route, -1 when none */
    char allow[64];             /* for 405: "GET, POST" */
    size_t nparams;
    struct { const char *name; char value[256]; } params[GG_HTTP_MAX_PARAMS];
} gg_route_match;

/* Find the route for method + path on one listener. Query strings must already be removed.
 * Never allocates. A path segment longer than 255 bytes never matches a {param}. */
void gg_router_match(const gg_router *r, gg_listener listener, const char *method,
                     const char *path, gg_route_match *m);

/* Number of registered (method, pattern) routes and the pattern of route i (for metrics). */
int gg_router_count(const gg_router *r);
const char *gg_router_pattern(const gg_router *r, int i);
const char *gg_router_method(const gg_router *r, int i);
/* The listeners route i is registered on (GG_LISTENER_* bits; 0 when out of range), so
 * `graphgate serve --print-routes` can list the table the server really builds. */
unsigned gg_router_listeners(const gg_router *r, int i);

/* ------------------------------------------------------------------------------------------
 * Requests
 * ---------------------------------------------------------------------------------------- */

const char *gg_http_method(const gg_http_req *req);     /* "GET" */
const char *gg_http_path(const gg_http_req *req);       /* decoded path, no query */
const char *gg_http_route(const gg_http_req *req);      /* matched pattern */
gg_listener gg_http_listener(const gg_http_req *req);
const char *gg_http_request_id(const gg_http_req *req); /* accepted or generated */
const char *gg_http_client_addr(const gg_http_req *req);/* "127.0.0.1" or "::1" */
/* {param} value by name, NULL if the pattern has no such param. */
const char *gg_http_param(const gg_http_req *req, const char *name);
/* Header (case-insensitive name) / query argument, NULL when absent. */
const char *gg_http_header(const gg_http_req *req, const char *name);
/* Each header whose name starts with prefix (case-insensitive), in the order received:
 * fn(user, name, value) until it returns false. */
typedef bool (*gg_http_header_fn)(void *user, const char *name, const char *value);
void gg_http_headers_prefixed(const gg_http_req *req, const char *prefix, gg_http_header_fn fn, void *user);
const char *gg_http_query(const gg_http_req *req, const char *name);
/* The body, NUL-terminated for convenience (len excludes the NUL); len 0 when empty. */
const char *gg_http_body(const gg_http_req *req, size_t *len);
/* Parse the body as JSON (NULL + err "invalid_json" with line/column on failure; a JSON body
 * is required to be an object or array unless allow_any). New reference. */
json_t *gg_http_body_json(const gg_http_req *req, bool allow_any, gg_error *err);
/* A body that must be one JSON object (duplicate keys refused): NULL + err when it is empty,
 * not JSON ("invalid_json", with line/column) or another value ("bad_request"), each message
 * ending in what the route needs: shape, e.g. "a JSON object like {\"version\": N}". */
json_t *gg_http_body_object(const gg_http_req *req, const char *shape, gg_error *err);
/* Opaque per-request slot a handler (or middleware) may use; freed by nobody. */
void gg_http_set_user(gg_http_req *req, void *p);
void *gg_http_get_user(const gg_http_req *req);

/* ------------------------------------------------------------------------------------------
 * Responses (each setter replaces any body set before; headers accumulate)
 * ---------------------------------------------------------------------------------------- */

/* status + JSON body (steals the reference; body NULL means "{}"). Content-Type
 * application/json. Returns false on allocation failure (then the server answers 500). */
bool gg_http_res_json(gg_http_res *res, int status, json_t *body);
/* status + a pre-serialized JSON text (copied), for hot paths that cache their bytes. */
bool gg_http_res_json_text(gg_http_res *res, int status, const char *json, size_t len);
/* The JSON error model: {"error":{"code":code,"message":message}}. */
bool gg_http_res_error(gg_http_res *res, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The same with the status the one error table (util/errcode.c) gives code: the usual call,
 * so a code's status is written once. gg_http_res_error is for a status the code alone does
 * not say (a 503 graph_unavailable beside the table's, a status computed elsewhere). */
bool gg_http_res_fail(gg_http_res *res, const char *code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The same with extra members in the error object ({"required_scope": ...}, {"retry_after":
 * N}); extra is stolen and may be NULL. */
bool gg_http_res_error_extra(gg_http_res *res, int status, const char *code, json_t *extra, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Same from a gg_error; status 0 means "derive from the code" (gg_http_status_for_error).
 * Adds "line"/"column"/"position"/"path" members when the error carries them. */
bool gg_http_res_error_from(gg_http_res *res, int status, const gg_error *e);
/* Raw bytes (copied) with a content type. */
bool gg_http_res_bytes(gg_http_res *res, int status, const char *content_type,
                       const void *data, size_t len);
/* Raw bytes whose ownership (malloc'd) passes to the response. */
bool gg_http_res_bytes_take(gg_http_res *res, int status, const char *content_type,
                            void *data, size_t len);
/* Add a response header (name and value copied). Content-Type is set by the body setters;
 * X-Request-Id is always added by the server. */
bool gg_http_res_header(gg_http_res *res, const char *name, const char *value);
int gg_http_res_status(const gg_http_res *res);

/* The HTTP status of an error code: gg_error_http_status (src/util/errcode.c, one table). */
int gg_http_status_for_error(const gg_error *e);
/* The canonical error body text for code/message (malloc'd, caller frees; NULL on OOM). */
char *gg_http_error_body(const char *code, const char *message);

/* ------------------------------------------------------------------------------------------
 * Deferred responses (connection suspend/resume)
 *
 *   int h(gg_http_req *req, gg_http_res *res, void *user) {
 *       gg_http_async *a = gg_http_defer(req);   // NULL on OOM → answer 503 synchronously
 *       if (!a) return gg_http_res_error(res, 503, "unavailable", "busy"), GG_HTTP_DONE;
 *       queue_job(job_with(a));                  // the worker owns a from now on
 *       return GG_HTTP_DEFERRED;
 *   }
 *   // later, on any thread:
 *   gg_http_res_json(gg_http_async_res(a), 200, result);
 *   gg_http_async_complete(a);                   // sends it; a is invalid afterwards
 *
 * Streaming (SSE): instead of filling the response, call
 *   gg_http_async_stream(a, 200, "text/event-stream");   // headers go out now
 *   gg_http_sse_event(a, "message", json_text);            // any number of events
 *   gg_http_async_complete(a);                             // ends the stream
 *
 * The request (params, headers, body) stays valid until gg_http_async_complete. If the
 * server abandons the request (shutdown deadline; the client gone, also while the request
 * is suspended: the core polls those sockets every quarter second), it answers 503 itself
 * (or closes the connection, or ends the stream); later calls on a are harmless no-ops and
 * gg_http_async_abandoned(a) turns true so long work can stop early. Every gg_http_async
 * must still be completed exactly once to release it.
 * ---------------------------------------------------------------------------------------- */

/* Call from the handler only; at most once per dispatch of a request. */
gg_http_async *gg_http_defer(gg_http_req *req);
/* Whether the handler running now deferred its request (for a handler whose helper may
 * have deferred: it then returns GG_HTTP_DEFERRED). */
bool gg_http_deferred(const gg_http_req *req);
/* Instead of completing: run the request's route handler again from the start, on the
 * connection's polling thread, once the connection is resumed (from any thread; a is
 * released like by gg_http_async_complete, and nothing of a's response is sent). The
 * request keeps its body, method, path, params and headers; the handler sees it as a new
 * dispatch, answers or defers it again (gg_http_defer works anew). For an owner that waited
 * for something the handler needs (e.g. a credential check done on a background thread)
 * without holding the polling thread: that state must be where the handler's second run
 * finds it, else it may defer forever. An abandoned request is not run again (503, or
 * closed). Not after gg_http_async_stream. */
void gg_http_async_redispatch(gg_http_async *a);
/* The request this async belongs to (valid until completion). */
gg_http_req *gg_http_async_req(gg_http_async *a);
/* The response to fill before gg_http_async_complete (only the owner writes it). */
gg_http_res *gg_http_async_res(gg_http_async *a);
/* Switch to a streamed body: sends the status and headers (from gg_http_async_res, plus
 * Cache-Control: no-cache) now; the body is what gg_http_async_write / gg_http_sse_event
 * append. Returns false if abandoned or on OOM. */
bool gg_http_async_stream(gg_http_async *a, int status, const char *content_type);
/* Append raw bytes to a stream (copied, queued; never blocks). False when abandoned, not
 * streaming, or past the stream's buffer cap (GG_HTTP_STREAM_BUFFER_MAX queued bytes). */
#define GG_HTTP_STREAM_BUFFER_MAX (8u * 1024u * 1024u)
bool gg_http_async_write(gg_http_async *a, const void *data, size_t len);
/* Stream bytes queued and not yet read by the connection (a slow reader's backlog). */
size_t gg_http_async_queued(gg_http_async *a);
/* Append one SSE event: "event: <event>\n" (omitted when NULL), "id: <id>\n" when id is
 * non-NULL, one "data: " line per line of data, then a blank line. */
bool gg_http_sse_event(gg_http_async *a, const char *event, const char *id, const char *data);
/* Finish: send the filled response, or end the stream. a is freed (eventually); do not use
 * it afterwards. */
void gg_http_async_complete(gg_http_async *a);
bool gg_http_async_abandoned(const gg_http_async *a);

/* ------------------------------------------------------------------------------------------
 * The server
 * ---------------------------------------------------------------------------------------- */

typedef struct gg_http_options {
    const char *public_addr;     /* "127.0.0.1:8080", "[::1]:8080"; port 0 = ephemeral */
    const char *internal_addr;   /* same form; NULL or "" = no internal listener */
    unsigned threads;            /* polling threads per listener (0 → 2) */
    size_t body_limit;           /* bytes (0 → 1 MiB); larger bodies answer 413 */
    unsigned connection_timeout; /* idle seconds (0 → 60) */
    unsigned max_connections;    /* per listener (0 → 1024) */
    unsigned max_connections_per_ip; /* per listener and client address (0 = no cap) */
    unsigned receive_timeout_ms; /* a request's headers and body must arrive within this
                                  * from when the connection starts waiting for it (accept
                                  * or the previous response), else the connection is cut:
                                  * slowloris; also the keep-alive idle limit (0 → 15000) */
    char *const *internal_hosts;   /* Host values the internal listener accepts besides
                                    * loopback names (borrowed; n_internal_hosts of them) */
    size_t n_internal_hosts;
    char *const *internal_origins; /* Origin values it accepts ("*" = any; borrowed) */
    size_t n_internal_origins;
    size_t header_memory;        /* per-connection bytes for request line + headers (0 →
                                  * GG_HTTP_HEADER_MEMORY, at least 4096); a request whose
                                  * headers need more answers 431. libmicrohttpd zeroes this
                                  * memory on every request: 32 KiB cost ~1 us per request */
    bool access_log;             /* one JSON line per request via gg_log_json_line */
    const char *access_log_file; /* append access lines here instead (NULL/"" = log stream) */
    const char *version;         /* reported by /health (NULL → GG_VERSION) */
    const char *server_name;     /* "graphgate" (Server header is not sent) */
} gg_http_options;

/* Ready check for /ready: return true when the service can take traffic; otherwise set err
 * (its message is reported in the 503 body). Runs on a polling thread: keep it quick. */
typedef bool (*gg_http_ready_fn)(void *user, gg_error *err);
/* Adds Prometheus text lines (with # HELP/# TYPE) to out on every /metrics scrape. */
typedef void (*gg_http_metrics_fn)(gg_strbuf *out, void *user);

/* A server with a fresh router and the built-in routes (/health, /ready, /metrics on both
 * listeners). Options are copied. Does not bind yet. NULL + err on failure. */
gg_http_server *gg_http_server_new(const gg_http_options *opts, gg_error *err);
gg_router *gg_http_server_router(gg_http_server *s);
void gg_http_server_set_ready_check(gg_http_server *s, gg_http_ready_fn fn, void *user);
/* Register before start; at most 16 hooks. */
bool gg_http_server_add_metrics(gg_http_server *s, gg_http_metrics_fn fn, void *user);
/* Called once by gg_http_server_start right after both listeners are bound (at most 4). */
typedef void (*gg_http_started_fn)(gg_http_server *s, void *user);
bool gg_http_server_on_start(gg_http_server *s, gg_http_started_fn fn, void *user);
/* The address a running listener is bound to, with its real port; false when not running. */
struct sockaddr_storage;
bool gg_http_server_bound_addr(const gg_http_server *s, gg_listener which, struct sockaddr_storage *out);
/* Request framing and the internal listener (every route there but /health and /ready)
 * are checked before routing: conflicting or invalid Content-Length, Content-Length with
 * Transfer-Encoding → 400; a transfer coding other than chunked → 501 (both close the
 * connection); a Host that is not a loopback name, an internal_hosts value or (on a
 * non-loopback bind) an IP literal, or an Origin that is not listed or loopback → 403. */
/* Bind and start both listeners. False + err ("listen_failed") when a port cannot be bound. */
bool gg_http_server_start(gg_http_server *s, gg_error *err);
/* The port actually bound (useful with port 0); 0 when that listener is not running. */
unsigned gg_http_server_port(const gg_http_server *s, gg_listener which);
/* Requests accepted and not yet finished (including deferred ones). */
long gg_http_server_inflight(const gg_http_server *s);
/* Graceful stop: stop accepting new connections, wait up to deadline_ms for in-flight
 * requests to finish, abandon deferred requests still pending (503 / end of stream), then
 * close every connection and stop the threads. Returns the number of requests that had to
 * be abandoned. Safe to call once; gg_http_server_free calls it with deadline 0 if needed. */
int gg_http_server_stop(gg_http_server *s, unsigned deadline_ms);
/* From any thread (e.g. on a second SIGTERM): end the drain wait of a running
 * gg_http_server_stop now, as if its deadline had passed. */
void gg_http_server_hurry(gg_http_server *s);
void gg_http_server_free(gg_http_server *s);

/* Parse "ADDR:PORT" / "[v6]:PORT" (exposed for config validation and tests). */
bool gg_http_parse_addr(const char *text, char *host, size_t host_size, unsigned *port,
                        gg_error *err);

#endif
