/* loop.h — private to the MCP client files: the event loop that drives every downstream
 * request without a thread per waiting call, and the pending request all transports share.
 *
 * Ownership: a mcp_pending is refcounted. The transport that created it holds one
 * reference until it finishes it (mcp_pending_finish, exactly once); the loop holds one
 * while the pending sits in its deadline heap. One loop per process (mcp_loop_shared),
 * started on first use; its thread runs libcurl's multi interface, the deadlines and the
 * cancel-flag checks.
 */
#ifndef GG_MCP_LOOP_H
#define GG_MCP_LOOP_H

#include <curl/curl.h>
#include <pthread.h>

#include "mcp/mcp.h"

typedef struct mcp_loop mcp_loop;
typedef struct mcp_pending mcp_pending;

struct mcp_pending {
    _Atomic int refs;
    mcp_client_done_fn done;
    void *user;
    atomic_int *cancel;     /* caller's flag, polled by the loop; may be NULL */
    double deadline;          /* monotonic ms */
    int heap_idx;             /* -1 when not watched; guarded by the loop's mutex */
    /* The loop calls this (on its thread, without its lock) when the deadline passed
     * (why "timeout") or the cancel flag was set (why "cancelled"); the transport finishes
     * the pending unless a reply won the race. */
    void (*expire)(mcp_pending *p, const char *why);
    void (*destroy)(mcp_pending *p); /* frees the containing transport object */
};

mcp_loop *mcp_loop_shared(void);
/* Run fn(arg) on the loop thread soon (FIFO). false on OOM (fn not called). */
bool mcp_loop_post(mcp_loop *l, void (*fn)(void *arg), void *arg);
CURLM *mcp_loop_multi(mcp_loop *l); /* loop thread only */
/* Completion of an easy handle added to the multi: set with CURLOPT_PRIVATE to a
 * mcp_loop_xfer whose fn is called on the loop thread after the handle was removed. */
typedef struct mcp_loop_xfer {
    void (*fn)(struct mcp_loop_xfer *x, CURLcode rc);
} mcp_loop_xfer;

/* Start watching deadline and cancel flag (takes a reference). */
void mcp_loop_watch(mcp_loop *l, mcp_pending *p);
/* Initialise a pending with one (the transport's) reference. */
void mcp_pending_init(mcp_pending *p, int timeout_ms, atomic_int *cancel, mcp_client_done_fn done, void *user);
void mcp_pending_ref(mcp_pending *p);
void mcp_pending_unref(mcp_pending *p);
/* Stop watching, call done (exactly once per pending: callers guarantee it) and drop the
 * transport's reference. result is borrowed (done increfs what it keeps). */
void mcp_pending_finish(mcp_loop *l, mcp_pending *p, json_t *result, gg_error *err);

/* ---- bytes held by downstream answers, per owner (loop.c) ----------------------------------
 * What the answers of one owner's (tenant's) exchanges in flight hold in the gateway's
 * memory: bytes buffered as they arrive, and the parsed message until the exchange ends.
 * Without a bound, a tenant's many waiting calls, each buffering a large answer, could hold
 * gigabytes before any per-run budget applies. Every transport charges here as it buffers
 * (any thread; the loop's own mutex, looked at once per network read):
 *   mcp_loop_hold   charge n more bytes to owner; false (nothing charged, err "transport"
 *                   naming tenants.max_downstream_bytes) when the owner would hold more than
 *                   the bound (mcp_downstream_set_owner_max_bytes; 0 = no bound). An owner
 *                   NULL (the CLI, tests) is never bounded and nothing is kept for it.
 *   mcp_loop_unhold give n bytes back (the exchange freed them, or ended): every byte held
 *                   is given back exactly once.
 *   mcp_loop_held   what owner holds now (tests, stats). */
bool mcp_loop_hold(mcp_loop *l, const char *owner, size_t n, gg_error *err);
void mcp_loop_unhold(mcp_loop *l, const char *owner, size_t n);
size_t mcp_loop_held(mcp_loop *l, const char *owner);

/* ---- text/event-stream reading (sse_reader.c) --------------------------------------------
 * Incremental: feed the bytes as they come. Each complete event of type "message" (or
 * none) goes to on_event with its data (not NUL-terminated; "" when empty); on_event returns
 * false to stop the stream (it may set r->error to say why). A line or an event's data
 * longer than max_bytes stops the reader: feed returns false with error set (static text),
 * and every later feed too. last_id and retry_ms keep the last id: / retry: fields. */
typedef struct mcp_sse_reader mcp_sse_reader;
typedef bool (*mcp_sse_event_fn)(void *user, const char *data, size_t len);
struct mcp_sse_reader {
    size_t max_bytes;
    mcp_sse_event_fn on_event;
    void *user;
    gg_strbuf line, data;
    bool has_data, event_named, after_cr;
    const char *error;
    char last_id[256];
    long retry_ms; /* -1: none given */
    unsigned long long events;
};
void mcp_sse_reader_init(mcp_sse_reader *r, size_t max_bytes, mcp_sse_event_fn fn, void *user);
bool mcp_sse_reader_feed(mcp_sse_reader *r, const char *buf, size_t n);
void mcp_sse_reader_free(mcp_sse_reader *r);

/* ---- downstream messages (wire.c) ---------------------------------------------------------
 * Parse one message a downstream server sent (JSON_ALLOW_NUL: a NUL inside a string is the
 * consumer's to judge, not a reason to drop the whole message) while the parse's heap
 * allocations stay under max_alloc bytes. NULL with err "transport" when the text is not
 * JSON or needs more memory than that; held (may be NULL) gets the bytes the result holds. */
json_t *mcp_wire_parse(const char *buf, size_t len, size_t max_alloc, size_t *held, gg_error *err);

/* The answer (new reference) a client gives a request the server sent it: ping → {},
 * anything else → -32601: what a client without a request handler answers. */
json_t *mcp_client_answer_server_request(json_t *id, const char *method);

/* A reply owed to a request the server sent (mcp_client_set_request_handler): the
 * transport's send delivers it (result borrowed, or code + message) and frees r. */
struct mcp_client_reply {
    void (*send)(mcp_client_reply *r, json_t *result, int code, const char *message);
};
/* The JSON-RPC message (new reference) such a reply sends to request id: result (borrowed;
 * NULL = {}), or when code is not 0 the error code and message. */
json_t *mcp_client_reply_message(json_t *id, json_t *result, int code, const char *message);

/* ---- what every transport keeps for its caller (client_core.c) ---------------------------
 * The handlers mcp_client_set_notify and mcp_client_set_request_handler register, and the
 * capabilities the latter declares. Guarded by the transport's mutex (mu): the setters take
 * it, and the thread delivering a notification or a server's request reads them under it. */
typedef struct mcp_client_hooks {
    mcp_client_notify_fn notify; /* server notifications */
    void *notify_user;
    mcp_client_server_request_fn on_request; /* the server's requests (NULL: the default answers) */
    void *request_user;
    json_t *caps; /* the capabilities declared (initialize, or each request's _meta); NULL = {} */
} mcp_client_hooks;
void mcp_client_hooks_set_notify(mcp_client_hooks *h, pthread_mutex_t *mu, mcp_client_notify_fn fn, void *user);
/* caps borrowed (a copy is kept) */
void mcp_client_hooks_set_request_handler(mcp_client_hooks *h, pthread_mutex_t *mu, json_t *caps,
                                          mcp_client_server_request_fn fn, void *user);
void mcp_client_hooks_clear(mcp_client_hooks *h);

/* Ends a request that could not start: done(user, NULL, "oom" error). */
void mcp_client_done_oom(mcp_client_done_fn done, void *user);
/* What caps (a server's declared capabilities; NULL = none known yet) say of path (see
 * mcp_client_server_declares); a transport calls it under its own lock. */
mcp_declares mcp_client_caps_declare(json_t *caps, const char *path);

/* ---- the stateless 2026-07-28 revision, client side (client_era.c) ----------------------- */
/* params (may be NULL; borrowed) with _meta's protocolVersion, clientInfo and
 * clientCapabilities (caps borrowed; NULL = {}) added: a new object, NULL on OOM. */
json_t *mcp_era_params(json_t *params, const char *version, json_t *caps);
/* A tools/list result (changed in place): tools whose x-mcp-header annotations break the
 * revision's rules are removed (logged, naming server); each kept tool's designated headers
 * go into header_map (tool name -> [{path, header}]). Returns how many were removed. */
size_t mcp_era_filter_tools(json_t *result, json_t *header_map, const char *server);
/* The request's Mcp-Method, Mcp-Name and (tools/call) Mcp-Param-{Name} header lines. */
struct curl_slist *mcp_era_headers(struct curl_slist *hd, const char *method, json_t *params, json_t *header_map);
/* A header value as the revision encodes it (plain, or "=?base64?...?="); false when it
 * does not fit cap bytes. */
bool mcp_era_header_value(const char *v, size_t n, char *out, size_t cap);

#endif
