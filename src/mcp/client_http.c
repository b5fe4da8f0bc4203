/* client_http.c — a downstream MCP server over streamable HTTP, on libcurl's multi
 * interface: every exchange of every client runs on the event loop's thread (loop.c), so a
 * call waiting for its answer holds no thread. Each request is a POST accepting JSON or an
 * SSE stream; the Mcp-Session-Id from initialize is kept and sent with
 * MCP-Protocol-Version. When the server forgets the session (400/404 naming it, a restart)
 * or the request could not be sent, the session is initialized again and the call retried
 * once. Every socket libcurl opens is checked against the policy (no loopback/private
 * targets by default). A client asked to listen (mcp_client_listen) keeps one GET stream
 * open per session for the server's own messages (list_changed and the like; see "the
 * listen stream" below). A call's SSE answer the server ends before the response is resumed
 * (GET, Last-Event-ID: "resuming an SSE answer"); the requests a server sends go to the
 * client's request handler ("requests the server sends"). With mcp_server_config.protocol
 * 2026-07-28 the client speaks the stateless era instead (no session: "the stateless era"),
 * and hears the server on a subscriptions/listen stream, which also carries the resource
 * subscriptions made through the client ("subscriptions/listen").
 * Everything a server sends is bounded as it arrives, on the loop
 * thread every tenant shares: one message (a plain body, or an SSE event read by the same
 * incremental mcp_sse_reader as the listen stream) at most downstream.max_message_bytes, the
 * transfer aborted at the first byte past; each parsed under downstream.max_parse_bytes
 * (mcp_wire_parse); the bytes an exchange holds charged to its owner's
 * tenants.max_downstream_bytes (mcp_loop_hold) until it ends; a plain answer must carry the
 * request's id. A server with `auth` settings gets its credentials from an mcp_auth_provider
 * (see "credentials" below): on every request, and after a 401/403 the provider resolved.
 * The same exchange carries a raw pass-through request (mcp_http_raw_start, "raw
 * pass-through" below): a POST built whole by its caller, with a client of its own that
 * lives as long as it does, whose answer is handed back as it came.
 * All client state below is touched on the loop thread only. */
#include "mcp/loop.h"
#include "telemetry/telemetry.h"

#include <stdatomic.h>
#include <pthread.h>
#include <sodium.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

typedef struct hreq hreq;

/* ---- this transport's part of a downstream context (mcp_downstream) -----------------------
 * What its clients share: the settings its owner gave (each client copies the limits when
 * created, reads the auth factory then), the listen streams' counters (written on the loop
 * thread, read anywhere) and the live streams per owner (looked at only when a stream
 * connects or ends, never per event). */
struct mcp_http_shared {
    pthread_mutex_t mu;            /* guards max_message, max_parse, owners and owner_max */
    size_t max_message, max_parse; /* what one answer may cost (mcp_http_set_limits) */
    gg_tally owners;               /* live listen streams per owner (tenant) */
    int owner_max;                 /* per owner; 0 = no bound */
    _Atomic int live;              /* listen GETs connecting or open */
    _Atomic unsigned long long opened, events, list_changed, cut_off, no_stream, owner_full;
    /* the auth provider factory (mcp_http_set_auth_factory): user is stored first, so a
     * reader that sees fn sees its user */
    _Atomic(mcp_auth_factory_fn) auth_factory;
    void *_Atomic auth_user;
};

mcp_http_shared *mcp_http_shared_new(void) {
    mcp_http_shared *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    pthread_mutex_init(&h->mu, NULL);
    h->max_message = MCP_HTTP_MAX_MESSAGE_DEFAULT;
    h->max_parse = MCP_HTTP_MAX_PARSE_DEFAULT;
    h->owner_max = MCP_HTTP_LISTEN_MAX_OWNER;
    return h;
}

void mcp_http_shared_free(mcp_http_shared *h) {
    if (!h) return;
    gg_tally_clear(&h->owners);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

void mcp_http_set_limits(mcp_downstream *d, size_t max_message_bytes, size_t max_parse_bytes) {
    pthread_mutex_lock(&d->http->mu);
    d->http->max_message = max_message_bytes ? max_message_bytes : MCP_HTTP_MAX_MESSAGE_DEFAULT;
    d->http->max_parse = max_parse_bytes ? max_parse_bytes : MCP_HTTP_MAX_PARSE_DEFAULT;
    pthread_mutex_unlock(&d->http->mu);
}

/* The limits a new client copies (the defaults without a context: a raw request's). */
static void limits_get(mcp_http_shared *h, size_t *max_message, size_t *max_parse) {
    *max_message = MCP_HTTP_MAX_MESSAGE_DEFAULT;
    *max_parse = MCP_HTTP_MAX_PARSE_DEFAULT;
    if (!h) return;
    pthread_mutex_lock(&h->mu);
    *max_message = h->max_message;
    *max_parse = h->max_parse;
    pthread_mutex_unlock(&h->mu);
}

/* Why on_opensocket refused a connection (the policy logs the exact reason). */
#define POLICY_REFUSED "refused by policy.http_hosts (an internal address not listed as an IP, or the gateway's own listener)"

#define RELAY_TAB 64 /* relaying calls a client finds by progressToken (see "progress outside...") */

typedef struct http_client {
    char *name, *url;
    char *owner; /* mcp_server_config.owner (NULL = none): its listen streams are bounded */
    char **headers;
    int timeout_ms;
    size_t max_message, max_parse; /* downstream.max_message_bytes, downstream.max_parse_bytes */
    mcp_http_shared *ds;           /* its downstream context's part (NULL: a raw request's client) */
    const mcp_client_policy *policy;
    mcp_loop *loop;
    mcp_auth_provider auth; /* auth.impl NULL = no credentials (the config had no `auth`) */
    /* loop thread only */
    char *session;      /* Mcp-Session-Id */
    char *protocol;     /* negotiated version */
    bool ready, initing, closing;
    bool init_refused;  /* the last initialize was refused by the policy */
    hreq *waiting;      /* calls waiting for the session */
    hreq *flight;       /* exchanges in the multi handle */
    /* the listen stream (loop thread) */
    bool listen_wanted;    /* mcp_client_listen was called */
    bool no_stream;        /* the server answered 405 to the GET: it offers none, never ask again */
    bool notifies;         /* the session's server declared a listChanged capability */
    bool session_streamed; /* a GET stream of this session opened (a later 404 means the session is gone) */
    hreq *listener;        /* the GET: connecting, open, or waiting out its backoff */
    int listen_fails;      /* streams in a row that failed or died young: the backoff's exponent */
    long retry_ms;         /* the server's retry: hint, -1 none */
    char last_event_id[256];
    /* the stateless era (loop thread but modern, and hooks' caps, on_request: set before the first request) */
    bool modern;           /* mcp_server_config.protocol is MCP_VERSION_MODERN: no session, _meta */
    json_t *tool_headers;  /* tool -> [{path, header}] from the last tools/list (x-mcp-header) */
    hreq *resuming;        /* calls waiting to resume their SSE answer (see resume_call) */
    /* the stateless era's listen stream ("subscriptions/listen" below; loop thread) */
    json_t *subs;          /* the URIs subscribed through this client (resources/subscribe) */
    hreq *disc_waiting;    /* subscriptions waiting for the server's capabilities */
    bool discovering;      /* our own server/discover is in flight */
    /* any thread */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int nreqs;          /* exchanges not yet destroyed */
    int answers;        /* answers to the server's requests not yet destroyed */
    int replies;        /* replies the request handler owes (each also one of nreqs) */
    mcp_client_hooks hooks; /* the caller's handlers and declared capabilities (loop.h) */
    json_t *server_caps;    /* what the server declared (initialize, server/discover); NULL = not yet */
    hreq *relay_tab[RELAY_TAB]; /* relaying calls by progressToken ("progress outside the call's stream") */
    int relay_n;            /* calls in relay_tab */
    _Atomic int starts;
    _Atomic long long next_id;
} http_client;

enum { HR_CALL, HR_INIT, HR_INITIALIZED, HR_FIRE, HR_LISTEN, HR_ANSWER, HR_RAW /* mcp_http_raw_start */ };
enum { HS_NEW, HS_WAITING, HS_FLIGHT, HS_DONE, HS_TIMER /* a listener waiting to reconnect */,
       HS_AUTH /* waiting for the auth provider to resolve a 401/403 */,
       HS_RESUME /* a call whose SSE answer ended early, waiting to resume it (GET, Last-Event-ID) */,
       HS_INPUT /* a stateless call waiting for the answers to its input requests (MRTR) */,
       HS_DISCOVER /* a stateless resources/(un)subscribe waiting for server/discover */ };

/* The WWW-Authenticate header kept from an answer (a challenge is short; longer is cut). */
#define AUTH_CHALLENGE_MAX 2048
/* Authorization (and DPoP) header lines the provider may add to one request. */
#define AUTH_HEADERS_MAX 16384

typedef struct raw_req raw_req; /* a raw pass-through's own part (see "raw pass-through") */

struct hreq {
    mcp_pending p; /* first: the loop's view */
    mcp_loop_xfer lx;
    http_client *c;
    int kind, state;
    long long id;  /* -1 for notifications */
    char *body;    /* the serialized message */
    bool retried, refused_by_policy;
    int auth_rounds;      /* 401/403 answers the provider resolved for this request */
    char *challenge;      /* the last answer's WWW-Authenticate (NULL = none) */
    char dpop_nonce[256]; /* and its DPoP-Nonce ("" = none) */
    gg_error auth_err;    /* the provider's verdict, handed from its thread to the loop */
    CURL *h;
    struct curl_slist *hd;
    gg_strbuf resp;       /* a plain (not event-stream) body */
    bool sse;
    char *session;
    json_t *found;        /* our response out of an SSE stream, or the parsed body */
    size_t found_bytes;   /* what found holds (mcp_wire_parse) */
    size_t held;          /* bytes charged to the owner (mcp_loop_hold): buffers and found */
    char fail[320];       /* why we aborted the transfer ourselves ("" = we did not) */
    /* the event reader of an SSE answer, or of the listen stream while it is open */
    mcp_sse_reader *in;
    bool listen_open;     /* 200 text/event-stream came */
    bool unheard;         /* a subscriptions/listen acknowledgement honouring nothing came */
    bool counted;         /* one of its downstream context's live listen streams */
    const char *cut;      /* why we cut the stream off (static text) */
    double opened_ms;
    /* W3C trace context of a call carrying params._meta.traceparent: also sent as headers */
    char traceparent_hdr[GG_TRACEPARENT_LEN + 16], tracestate_hdr[GG_TRACESTATE_MAX + 16];
    /* the stateless era: the request as the caller gave it (each round is built from it) */
    char *method;
    json_t *params;
    int rounds;           /* InputRequiredResults answered (MRTR), version retries */
    /* the session era: resuming an SSE answer the server ended before the response */
    bool resuming;        /* the next launch is the GET that resumes */
    int resumes;
    char resume_id[256];  /* Last-Event-ID */
    mcp_call_relay relay; /* the call's own handler of the server's requests (fn NULL = the client's) */
    unsigned long long relay_seq; /* its progressToken's N ("gg-relay-N"), in c->relay_tab */
    int relay_slot;       /* 1 + its index in c->relay_tab (0 = not there) */
    raw_req *raw;         /* HR_RAW: the pass-through's own part; else NULL */
    hreq *next, **pprev; /* in c->flight or c->waiting: pprev is the link to it (O(1) unlink) */
};

/* A raw pass-through's own part: its caller's callbacks and what the answer's head said. */
struct raw_req {
    mcp_http_raw_stream_fn stream;
    mcp_http_raw_done_fn done;
    void *user;
    size_t len;             /* the body's bytes (it is sent as given, NULs and all) */
    long status;
    bool started;           /* the first body bytes came: streaming decided */
    bool streaming;         /* the answer is an event stream handed on as it comes */
    bool stopped;           /* the stream's taker took no more */
    const char *fail_code;  /* the error code of hreq.fail */
    char content_type[128]; /* as sent ("" = none, or too long to hand on) */
    char retry_after[32];   /* as sent when valid ("" = none) */
};

/* A raw request's own failure (the transfer is aborted): code and message. */
static void raw_fail(hreq *r, const char *code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void raw_fail(hreq *r, const char *code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->fail, sizeof r->fail, fmt, ap);
    va_end(ap);
    r->raw->fail_code = code;
}

/* ---- exchanges ------------------------------------------------------------------------- */

static void hreq_reset_transfer(hreq *r) {
    if (r->h) curl_easy_cleanup(r->h);
    curl_slist_free_all(r->hd);
    r->h = NULL;
    r->hd = NULL;
    gg_strbuf_free(&r->resp);
    free(r->session);
    r->session = NULL;
    free(r->challenge);
    r->challenge = NULL;
    r->dpop_nonce[0] = '\0';
    json_decref(r->found);
    r->found = NULL;
    r->found_bytes = 0;
    r->sse = r->refused_by_policy = false;
    r->fail[0] = '\0';
    if (r->in) mcp_sse_reader_free(r->in);
    free(r->in);
    r->in = NULL;
    r->cut = NULL;
    mcp_loop_unhold(r->c->loop, r->c->owner, r->held);
    r->held = 0;
}

static void hreq_destroy(mcp_pending *p) {
    hreq *r = (hreq *)p;
    http_client *c = r->c;
    bool answer = r->kind == HR_ANSWER;
    hreq_reset_transfer(r);
    gg_error_clear(&r->auth_err);
    free(r->raw);
    free(r->body);
    free(r->method);
    json_decref(r->params);
    free(r);
    pthread_mutex_lock(&c->mu);
    c->nreqs--;
    if (answer) c->answers--;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static void noop_done(void *user, json_t *result, gg_error *err) { (void)user, (void)result, (void)err; }

static void hreq_expire(mcp_pending *p, const char *why);

/* An HTTP server gets the call's trace context as headers too (where HTTP tracing
 * middleware looks for it); only a well-formed one is passed on. */
static void trace_headers(hreq *r, json_t *meta) {
    gg_trace_ctx tc;
    if (!gg_trace_parse(&tc, json_string_value(json_object_get(meta, "traceparent")),
                        json_string_value(json_object_get(meta, "tracestate"))))
        return;
    char tp[GG_TRACEPARENT_LEN + 1];
    gg_trace_format(&tc, tp);
    snprintf(r->traceparent_hdr, sizeof r->traceparent_hdr, "traceparent: %s", tp);
    if (tc.state[0]) snprintf(r->tracestate_hdr, sizeof r->tracestate_hdr, "tracestate: %s", tc.state);
}

/* The stateless era: every round of a request is its own message (a new id), its params
 * the caller's with the request metadata (_meta) and, when retrying after an
 * InputRequiredResult, the round's extra members (inputResponses, requestState). */
static char *modern_body(hreq *r, json_t *extra) {
    json_t *p = mcp_era_params(r->params, r->c->protocol, r->c->hooks.caps);
    if (p && extra) json_object_update(p, extra);
    json_t *msg = p ? json_pack("{s:s, s:I, s:s, s:o}", "jsonrpc", "2.0", "id", (json_int_t)r->id, "method", r->method,
                                "params", p)
                    : NULL;
    char *b = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
    json_decref(msg);
    return b;
}

static hreq *hreq_new(http_client *c, int kind, const char *method, json_t *params, int timeout_ms,
                      atomic_int *cancel, mcp_client_done_fn done, void *user) {
    hreq *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    mcp_pending_init(&r->p, timeout_ms, cancel, done ? done : noop_done, user);
    r->p.expire = hreq_expire;
    r->p.destroy = hreq_destroy;
    r->c = c;
    r->kind = kind;
    r->id = kind == HR_CALL || kind == HR_INIT ? (atomic_fetch_add_explicit(&c->next_id, 1, memory_order_relaxed) + 1) : -1;
    pthread_mutex_lock(&c->mu);
    c->nreqs++;
    if (kind == HR_ANSWER) c->answers++;
    pthread_mutex_unlock(&c->mu);
    if (!method) return r; /* a GET, or a body the caller sets */
    if (c->modern && kind == HR_CALL) {
        r->method = strdup(method);
        r->params = params ? gg_json_clone(params) : NULL;
        trace_headers(r, json_object_get(params, "_meta"));
        if (r->method && (r->params || !params)) r->body = modern_body(r, NULL);
        if (!r->body) {
            mcp_pending_unref(&r->p);
            return NULL;
        }
        return r;
    }
    json_t *msg = r->id >= 0 ? json_pack("{s:s, s:I, s:s}", "jsonrpc", "2.0", "id", (json_int_t)r->id, "method", method)
                             : json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", method);
    if (msg && params) json_object_set(msg, "params", params);
    trace_headers(r, json_object_get(params, "_meta"));
    r->body = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
    json_decref(msg);
    if (!r->body) {
        mcp_pending_unref(&r->p);
        return NULL;
    }
    return r;
}

/* With a thousand calls in flight a walk of the list per completion was 8 % of the
 * gateway's CPU: the links are doubly kept. A request on no list is left alone. */
static void unlink_req(hreq *r) {
    if (!r->pprev) return;
    *r->pprev = r->next;
    if (r->next) r->next->pprev = r->pprev;
    r->next = NULL;
    r->pprev = NULL;
}

static void link_front(hreq **list, hreq *r) {
    r->next = *list;
    if (r->next) r->next->pprev = &r->next;
    *list = r;
    r->pprev = list;
}

/* ---- progress outside the call's stream -------------------------------------------------
 * A session-era server may send a call's notifications/progress on its GET stream rather than
 * on the call's SSE answer. Each relaying call's progressToken is unique on the client
 * ("gg-relay-N", client_core.c): relay_tab (under mu) holds the calls that asked, at most
 * RELAY_TAB, found by N in a probe of at most RELAY_TAB slots (a call past that many is not
 * in it: its own stream's progress still relays). A notifications/message on the GET stream
 * names no call: it goes to the relaying call when exactly one is in flight on the client,
 * and is dropped with several — any pick could hand one caller's log line (its data) to
 * another caller. The relay's own bounds (10 a second per run, increasing) apply as on the
 * call's stream. Loop thread, but for relay_tab_add (mu). */

static unsigned long long relay_token_seq(json_t *tok) {
    const char *s = json_string_value(tok);
    if (!s || strncmp(s, "gg-relay-", 9)) return 0;
    char *end;
    unsigned long long n = strtoull(s + 9, &end, 10);
    return *end ? 0 : n;
}

static void relay_tab_add(hreq *r, json_t *params) {
    http_client *c = r->c;
    unsigned long long n = relay_token_seq(json_object_get(json_object_get(params, "_meta"), "progressToken"));
    if (!n || !r->relay.notify || c->modern) return; /* the stateless era has no GET stream */
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < RELAY_TAB && !r->relay_slot; i++) {
        int k = (int)((n + (unsigned)i) % RELAY_TAB);
        if (!c->relay_tab[k]) c->relay_tab[k] = r, r->relay_seq = n, r->relay_slot = k + 1, c->relay_n++;
    }
    pthread_mutex_unlock(&c->mu);
}

static void relay_tab_drop(hreq *r) {
    if (!r->relay_slot) return;
    pthread_mutex_lock(&r->c->mu);
    r->c->relay_tab[r->relay_slot - 1] = NULL;
    r->c->relay_n--;
    pthread_mutex_unlock(&r->c->mu);
    r->relay_slot = 0;
}

/* A notification on the GET stream to the relaying call it belongs to (see above). */
static void relay_listen_note(http_client *c, const char *method, json_t *params) {
    bool progress = !strcmp(method, "notifications/progress");
    if (!progress && strcmp(method, "notifications/message")) return;
    unsigned long long n = progress ? relay_token_seq(json_object_get(params, "progressToken")) : 0;
    hreq *to = NULL;
    pthread_mutex_lock(&c->mu);
    if (progress ? n != 0 : c->relay_n == 1)
        for (int i = 0; i < RELAY_TAB && !to; i++) {
            hreq *r = c->relay_tab[(n + (unsigned)i) % RELAY_TAB];
            if (r && (!progress || r->relay_seq == n)) to = r;
        }
    pthread_mutex_unlock(&c->mu);
    /* still in flight: a call leaves relay_tab when it finishes, on this thread */
    if (to) to->relay.notify(to->relay.user, method, params);
}

static void finish(hreq *r, json_t *result, const char *code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void finish(hreq *r, json_t *result, const char *code, const char *fmt, ...) {
    gg_error e = GG_ERROR_INIT;
    if (code) {
        char m[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(m, sizeof m, fmt, ap);
        va_end(ap);
        gg_error_set(&e, code, "%s", m);
    }
    r->state = HS_DONE;
    relay_tab_drop(r);
    mcp_pending_finish(r->c->loop, &r->p, result, &e);
    gg_error_clear(&e);
}

static void finish_result(hreq *r, json_t *result) {
    r->state = HS_DONE;
    relay_tab_drop(r);
    mcp_pending_finish(r->c->loop, &r->p, result, NULL);
}

/* An internal exchange (initialize, notifications) ends: nobody waits for its outcome. */
static void finish_quiet(hreq *r) { finish_result(r, NULL); }

/* ---- reading a response ---------------------------------------------------------------- */

/* Charge the owner for what the exchange holds now (its buffers and parsed answer, as
 * allocated) and give back what it freed: false when that would pass the owner's
 * tenants.max_downstream_bytes (r->fail says so). */
static bool account(hreq *r) {
    size_t now = r->resp.cap + r->found_bytes + (r->in ? r->in->line.cap + r->in->data.cap : 0);
    if (now <= r->held) {
        mcp_loop_unhold(r->c->loop, r->c->owner, r->held - now);
        r->held = now;
        return true;
    }
    gg_error e = GG_ERROR_INIT;
    bool ok = mcp_loop_hold(r->c->loop, r->c->owner, now - r->held, &e);
    if (ok) r->held = now;
    else snprintf(r->fail, sizeof r->fail, "MCP server '%s': %s", r->c->name, e.message);
    gg_error_clear(&e);
    return ok;
}

static void server_request(http_client *c, json_t *id, const char *method, json_t *params, const mcp_call_relay *relay);

/* One event of an SSE answer: keep the response with our id. A request the server sends
 * before it (the session era: an elicitation during a tools/call) goes to the call's or the
 * client's request handler (server_request); a notification to the call's relay, if any
 * (mcp_call_relay.notify: progress, log messages); an event
 * that cannot be parsed (not JSON, or more heap than downstream.max_parse_bytes) fails the
 * call. */
static bool call_event(void *user, const char *data, size_t len) {
    hreq *r = user;
    if (!len || r->found) return true;
    gg_error e = GG_ERROR_INIT;
    size_t bytes = 0;
    json_t *m = mcp_wire_parse(data, len, r->c->max_parse, &bytes, &e);
    if (!m) {
        snprintf(r->fail, sizeof r->fail, "MCP server '%s': %s", r->c->name, e.message);
        gg_error_clear(&e);
        return false;
    }
    json_t *id = json_object_get(m, "id");
    const char *method = json_string_value(json_object_get(m, "method"));
    if (json_is_integer(id) && json_integer_value(id) == r->id &&
        (json_object_get(m, "result") || json_object_get(m, "error"))) {
        r->found = m;
        r->found_bytes = bytes;
        return true;
    }
    if (method && id && !r->c->modern)
        server_request(r->c, id, method, json_object_get(m, "params"), r->relay.fn ? &r->relay : NULL);
    else if (method && !id && r->relay.notify) r->relay.notify(r->relay.user, method, json_object_get(m, "params"));
    json_decref(m);
    return true;
}

/* An SSE answer, read by the same incremental reader as the listen stream (each byte
 * looked at a bounded number of times, an event at most max_message bytes). */
static bool sse_feed(hreq *x, const char *ptr, size_t n) {
    if (!x->in) {
        x->in = malloc(sizeof *x->in);
        if (!x->in) {
            snprintf(x->fail, sizeof x->fail, "MCP server '%s': out of memory", x->c->name);
            return false;
        }
        mcp_sse_reader_init(x->in, x->c->max_message, call_event, x);
    }
    if (mcp_sse_reader_feed(x->in, ptr, n)) return true;
    if (!x->fail[0] && strstr(x->in->error, "bound"))
        snprintf(x->fail, sizeof x->fail,
                 "MCP server '%s' sent an event longer than %zu bytes (downstream.max_message_bytes)", x->c->name,
                 x->c->max_message);
    else if (!x->fail[0]) snprintf(x->fail, sizeof x->fail, "MCP server '%s': %s", x->c->name, x->in->error);
    return false;
}

/* A plain body, kept whole up to max_message bytes (the transfer stops at the first byte past). */
static bool body_append(hreq *x, const char *ptr, size_t n) {
    if (n > x->c->max_message - x->resp.len) {
        if (x->raw) raw_fail(x, "too_large", "%s's answer is longer than %zu bytes", x->c->name, x->c->max_message);
        else snprintf(x->fail, sizeof x->fail,
                      "MCP server '%s' sent a message longer than %zu bytes (downstream.max_message_bytes)", x->c->name,
                      x->c->max_message);
        return false;
    }
    if (gg_strbuf_append(&x->resp, ptr, n)) return true;
    snprintf(x->fail, sizeof x->fail, "MCP server '%s': out of memory", x->c->name);
    if (x->raw) x->raw->fail_code = "oom";
    return false;
}

static size_t raw_body(hreq *x, const char *ptr, size_t n);

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *user) {
    hreq *x = user;
    size_t n = size * nmemb;
    if (x->raw) return raw_body(x, ptr, n);
    if (!(x->sse ? sse_feed(x, ptr, n) : body_append(x, ptr, n)) || !account(x)) return 0; /* aborts the transfer */
    return x->found ? 0 : n; /* got our answer: stop reading the stream */
}

static void listen_opened(hreq *r);

/* The value of a header line (buf: n bytes, its CRLF included) named name (its ':' included),
 * trimmed, *vl bytes long; NULL when the line is another header. */
static const char *header_value(const char *buf, size_t n, const char *name, size_t *vl) {
    size_t k = strlen(name);
    if (n <= k || strncasecmp(buf, name, k)) return NULL;
    const char *v = buf + k;
    size_t l = n - k;
    while (l && (*v == ' ' || *v == '\t')) v++, l--;
    while (l && (v[l - 1] == '\r' || v[l - 1] == '\n' || v[l - 1] == ' ' || v[l - 1] == '\t')) l--;
    *vl = l;
    return v;
}

static void raw_header(hreq *x, const char *buf, size_t n);

static size_t on_header(char *buf, size_t size, size_t nitems, void *user) {
    hreq *x = user;
    size_t n = size * nitems, vl;
    const char *v;
    if (x->kind == HR_LISTEN && n <= 2 && (buf[0] == '\r' || buf[0] == '\n')) listen_opened(x); /* headers end */
    if (x->raw) raw_header(x, buf, n);
    if ((v = header_value(buf, n, "mcp-session-id:", &vl))) {
        free(x->session);
        x->session = strndup(v, vl);
    } else if ((v = header_value(buf, n, "www-authenticate:", &vl))) {
        size_t had = x->challenge ? strlen(x->challenge) : 0; /* several headers are one list (RFC 9110) */
        if (had + vl + 2 <= AUTH_CHALLENGE_MAX) {
            char *m = realloc(x->challenge, had + vl + 3);
            if (m) {
                if (had) memcpy(m + had, ", ", 2), had += 2;
                memcpy(m + had, v, vl);
                m[had + vl] = '\0';
                x->challenge = m;
            }
        }
    } else if ((v = header_value(buf, n, "dpop-nonce:", &vl))) {
        if (vl < sizeof x->dpop_nonce) {
            memcpy(x->dpop_nonce, v, vl);
            x->dpop_nonce[vl] = '\0';
        }
    } else if ((v = header_value(buf, n, "content-type:", &vl))) {
        x->sse = vl >= 17 && !strncasecmp(v, "text/event-stream", 17);
    }
    return n;
}

/* Every address libcurl connects to passes the policy again (DNS rebinding, own listeners). */
static curl_socket_t on_opensocket(void *user, curlsocktype purpose, struct curl_sockaddr *a) {
    hreq *r = user;
    http_client *c = r->c;
    gg_error e = GG_ERROR_INIT;
    if (!mcp_policy_connect_ok(c->policy, c->url, &a->addr, &e)) {
        gg_log(GG_LOG_WARN, "downstream connection refused by policy", "server", c->name, "reason", e.message, NULL);
        gg_error_clear(&e);
        r->refused_by_policy = true;
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype, a->protocol);
}

static void on_done(mcp_loop_xfer *lx, CURLcode rc);
static size_t on_listen_body(char *ptr, size_t size, size_t nmemb, void *user);

/* A listen stream (the session era's GET, the stateless era's subscriptions/listen POST) has
 * no deadline (it may stay quiet for hours): TCP keep-alive finds a dead peer instead, and
 * its events come to on_listen_body. */
static void listen_options(hreq *r, CURL *h) {
    if (!r->c->modern) curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_listen_body);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)r->c->timeout_ms);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 60L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 20L);
}

/* The provider's credentials for one request (none yet: the server's 401 asks for them). */
static struct curl_slist *auth_headers(http_client *c, const char *method, struct curl_slist *hd) {
    if (!c->auth.impl) return hd;
    char buf[AUTH_HEADERS_MAX];
    if (!c->auth.headers(c->auth.impl, c->url, method, buf, sizeof buf)) return hd;
    for (char *line = buf, *nl; line && *line; line = nl) {
        nl = strchr(line, '\n');
        if (nl) *nl++ = '\0';
        if (*line) hd = curl_slist_append(hd, line);
    }
    sodium_memzero(buf, sizeof buf);
    return hd;
}

/* The header lines of an MCP exchange (its configured ones and credentials come after). */
static struct curl_slist *mcp_headers(hreq *r, bool get) {
    http_client *c = r->c;
    struct curl_slist *hd = NULL;
    if (!get) hd = curl_slist_append(hd, "Content-Type: application/json");
    hd = curl_slist_append(hd, get ? "Accept: text/event-stream" : "Accept: application/json, text/event-stream");
    char line[512];
    const char *last_id = r->resuming ? r->resume_id : c->last_event_id;
    if (get && last_id[0]) {
        snprintf(line, sizeof line, "Last-Event-ID: %s", last_id);
        hd = curl_slist_append(hd, line);
    }
    if (c->session && r->kind != HR_INIT) {
        snprintf(line, sizeof line, "Mcp-Session-Id: %s", c->session);
        hd = curl_slist_append(hd, line);
    }
    snprintf(line, sizeof line, "MCP-Protocol-Version: %s",
             c->protocol && r->kind != HR_INIT ? c->protocol : MCP_CLIENT_PROTOCOL_VERSION);
    hd = curl_slist_append(hd, line);
    if (c->modern && r->method) hd = mcp_era_headers(hd, r->method, r->params, c->tool_headers);
    return hd;
}

/* curl's own defaults that a raw request does not send unless its caller gave them (Accept:
 * any, a form's Content-Type, Expect: 100-continue): a line naming one with no value. */
static struct curl_slist *raw_no_defaults(char **given) {
    static const char *const names[] = {"Accept:", "Content-Type:", "Expect:"};
    struct curl_slist *hd = NULL;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        bool has = false;
        for (char **p = given; p && *p && !has; p++) has = !strncasecmp(*p, names[i], strlen(names[i]));
        if (!has) hd = curl_slist_append(hd, names[i]);
    }
    return hd;
}

/* Put an exchange on the wire (loop thread). */
static void launch(hreq *r) {
    http_client *c = r->c;
    hreq_reset_transfer(r);
    CURL *h = r->h = curl_easy_init();
    if (!h) {
        finish(r, NULL, "transport", "cannot create a curl handle");
        return;
    }
    /* the session era's listen stream, or a call's answer resumed (the stateless era's
     * listen stream is a POST: subscriptions/listen) */
    bool get = (r->kind == HR_LISTEN && !c->modern) || r->resuming;
    /* a raw request's header lines are its caller's only */
    struct curl_slist *hd = r->raw ? raw_no_defaults(c->headers) : mcp_headers(r, get);
    for (char **p = c->headers; p && *p; p++) hd = curl_slist_append(hd, *p);
    hd = auth_headers(c, get ? "GET" : "POST", hd);
    if (r->traceparent_hdr[0]) hd = curl_slist_append(hd, r->traceparent_hdr);
    if (r->tracestate_hdr[0]) hd = curl_slist_append(hd, r->tracestate_hdr);
    r->hd = hd;
    r->lx.fn = on_done;
    double left = r->p.deadline - gg_now_ms();
    curl_easy_setopt(h, CURLOPT_PRIVATE, (char *)&r->lx);
    curl_easy_setopt(h, CURLOPT_URL, c->url);
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, r->body);
    if (r->raw) curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)r->raw->len);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, on_opensocket);
    curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, r);
    curl_easy_setopt(h, CURLOPT_PROXY, ""); /* no proxy from the environment: the policy checks real targets */
    /* a backstop: the loop's deadline heap normally ends a late call first */
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, r->kind == HR_LISTEN ? 0L : (long)(left < 1 ? 1 : left + 50));
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    if (r->kind == HR_LISTEN) listen_options(r, h);
    else if (get) curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    if (curl_multi_add_handle(mcp_loop_multi(c->loop), h) != CURLM_OK) {
        finish(r, NULL, "transport", "cannot start an HTTP request");
        return;
    }
    r->state = HS_FLIGHT;
    link_front(&c->flight, r);
}

/* Take an exchange off the wire (loop thread). */
static void land(hreq *r) {
    if (r->state != HS_FLIGHT) return;
    unlink_req(r);
    curl_multi_remove_handle(mcp_loop_multi(r->c->loop), r->h);
    r->state = HS_NEW;
}

/* A notification nobody waits for (notifications/cancelled). */
static void fire(http_client *c, const char *method, json_t *params) {
    hreq *n = hreq_new(c, HR_FIRE, method, params, 2000, NULL, NULL, NULL);
    if (n) launch(n);
}

static void start_init(http_client *c);
static void listen_start(http_client *c);
static void listen_stop(http_client *c);
static void listen_retry_later(http_client *c);

/* The session is usable (or failed): send what waited for it, or fail it; a client that
 * listens opens the session's GET stream. */
static void session_settled_as(http_client *c, const char *code, const char *error);
static void session_settled(http_client *c, const char *error) { session_settled_as(c, "transport", error); }

static void session_settled_as(http_client *c, const char *code, const char *error) {
    c->initing = false;
    c->ready = error == NULL;
    hreq *w = c->waiting;
    c->waiting = NULL;
    while (w) {
        hreq *next = w->next;
        w->next = NULL;
        w->pprev = NULL;
        w->state = HS_NEW;
        if (error) finish(w, NULL, code, "%s", error);
        else launch(w);
        w = next;
    }
    if (!error) listen_start(c);
    else listen_retry_later(c);
}

static void start_init(http_client *c) {
    if (c->initing) return;
    if (c->modern) { /* no session to start: what waited goes out */
        session_settled(c, NULL);
        return;
    }
    listen_stop(c); /* the stream belongs to the old session */
    c->session_streamed = false;
    c->last_event_id[0] = '\0';
    c->initing = true;
    c->ready = false;
    free(c->session);
    c->session = NULL;
    free(c->protocol);
    c->protocol = NULL;
    atomic_fetch_add_explicit(&c->starts, 1, memory_order_relaxed);
    json_t *params = json_pack("{s:s, s:o, s:{s:s, s:s}}", "protocolVersion", MCP_CLIENT_PROTOCOL_VERSION, "capabilities",
                               c->hooks.caps ? gg_json_clone(c->hooks.caps) : json_object(), "clientInfo", "name", "graphgate",
                               "version", GG_VERSION);
    hreq *r = hreq_new(c, HR_INIT, "initialize", params, c->timeout_ms, NULL, NULL, NULL);
    json_decref(params);
    if (!r) session_settled(c, "out of memory");
    else launch(r);
}

/* Queue a call behind a (new) session. */
static void wait_for_session(hreq *r) {
    http_client *c = r->c;
    r->state = HS_WAITING;
    hreq **tail = &c->waiting;
    while (*tail) tail = &(*tail)->next;
    *tail = r;
    r->next = NULL;
    r->pprev = tail;
    start_init(c);
}

static void modern_subscription(hreq *r);

static bool subscription_method(const char *m) {
    return m && (!strcmp(m, "resources/subscribe") || !strcmp(m, "resources/unsubscribe"));
}

static void submit(void *arg) {
    hreq *r = arg;
    http_client *c = r->c;
    if (r->state == HS_NEW) {
        if (c->closing) finish(r, NULL, "transport", "client is closing");
        else if (c->modern && r->kind == HR_CALL && subscription_method(r->method)) modern_subscription(r); /* not sent */
        else if (c->ready) launch(r);
        else wait_for_session(r);
    }
    mcp_pending_unref(&r->p); /* the post's reference */
}

/* The JSON-RPC response of a finished exchange (new reference), or NULL with err: none
 * came, it cannot be parsed (downstream.max_parse_bytes), or a plain body answers another
 * request (only a parse error's id may be null). */
static json_t *response_message(hreq *r, gg_error *err) {
    http_client *c = r->c;
    json_t *m = r->found;
    r->found = NULL;
    if (m) return m;
    if (r->sse || !r->resp.len) {
        gg_error_set(err, "transport", "MCP server '%s' sent no response", c->name);
        return NULL;
    }
    gg_error pe = GG_ERROR_INIT;
    m = mcp_wire_parse(r->resp.data, r->resp.len, c->max_parse, &r->found_bytes, &pe);
    if (!m) gg_error_set(err, "transport", "MCP server '%s': %s", c->name, pe.message);
    gg_error_clear(&pe);
    if (m && !account(r)) {
        gg_error_set(err, "transport", "%s", r->fail);
        json_decref(m);
        m = NULL;
    }
    if (!m) return NULL;
    json_t *id = json_object_get(m, "id");
    bool ours = json_is_integer(id) && json_integer_value(id) == r->id;
    if (!ours && !(json_is_null(id) && json_object_get(m, "error"))) {
        char got[32] = "none";
        if (json_is_integer(id)) snprintf(got, sizeof got, "%lld", (long long)json_integer_value(id));
        else if (id) snprintf(got, sizeof got, "a %s", json_is_string(id) ? "string" : "non-integer");
        gg_error_set(err, "transport", "MCP server '%s' answered request %lld with the id of another (%s)", c->name,
                     r->id, got);
        json_decref(m);
        return NULL;
    }
    return m;
}

static void transport_error(hreq *r, CURLcode rc) {
    http_client *c = r->c;
    if (r->fail[0]) finish(r, NULL, "transport", "%s", r->fail);
    else if (rc == CURLE_OPERATION_TIMEDOUT) finish(r, NULL, "timeout", "MCP error -32001: Request timed out");
    else if (rc == CURLE_COULDNT_CONNECT && r->refused_by_policy)
        finish(r, NULL, "policy", "cannot connect to MCP server '%s': " POLICY_REFUSED, c->name);
    else if (rc == CURLE_COULDNT_CONNECT)
        finish(r, NULL, "refused", "cannot connect to MCP server '%s': connection refused", c->name);
    else finish(r, NULL, "transport", "MCP server '%s': %s", c->name, curl_easy_strerror(rc));
}

/* The server does not know our session (it restarted or expired it). */
static bool session_lost(hreq *r, long status) {
    if (status == 404) return true;
    if (status != 400 || !r->resp.data) return false;
    return strcasestr(r->resp.data, "session") != NULL;
}

/* ---- credentials (mcp_auth_provider) -------------------------------------------------------
 * A 401/403 of a client with a provider: the request waits in HS_AUTH (no thread, its
 * deadline still watched) while the provider resolves the challenge, then goes out again
 * with the new credentials, at most MCP_AUTH_MAX_ROUNDS times. */

static void auth_resumed(void *arg) {
    hreq *r = arg;
    http_client *c = r->c;
    if (r->state == HS_AUTH) { /* else its deadline or cancel flag ended it meanwhile */
        r->state = HS_NEW;
        bool failed = gg_error_is_set(&r->auth_err);
        if (r->kind == HR_INIT) {
            if (c->closing) finish_quiet(r);
            else if (!failed) launch(r);
            else {
                char m[600];
                snprintf(m, sizeof m, "MCP server '%s' (initialize): %s", c->name, r->auth_err.message);
                finish_quiet(r);
                session_settled_as(c, r->auth_err.code, m);
            }
        } else if (failed) finish(r, NULL, r->auth_err.code, "MCP server '%s': %s", c->name, r->auth_err.message);
        else if (c->closing) finish(r, NULL, "transport", "client is closing");
        else if (c->ready) launch(r);
        else wait_for_session(r);
    }
    mcp_pending_unref(&r->p); /* the challenge's */
}

/* The provider's verdict (any thread): the request goes on on the loop thread. */
static void auth_resolved(void *user, gg_error *err) {
    hreq *r = user;
    if (err && gg_error_is_set(err)) gg_error_move(&r->auth_err, err);
    else gg_error_clear(&r->auth_err);
    /* out of memory for the post: the watched deadline ends the request */
    if (!mcp_loop_post(r->c->loop, auth_resumed, r)) mcp_pending_unref(&r->p);
}

/* A 401/403: true when the provider takes it (the request waits), false when the answer
 * stands (no provider, or the rounds are spent). */
static bool auth_wait(hreq *r, long status) {
    http_client *c = r->c;
    if ((status != 401 && status != 403) || !c->auth.impl || r->auth_rounds >= MCP_AUTH_MAX_ROUNDS) return false;
    r->auth_rounds++;
    r->state = HS_AUTH;
    char *challenge = r->challenge;
    r->challenge = NULL;
    mcp_pending_ref(&r->p);
    c->auth.challenge(c->auth.impl, c->url, (int)status, challenge, r->dpop_nonce[0] ? r->dpop_nonce : NULL, auth_resolved, r);
    free(challenge);
    return true;
}

/* ---- resuming an SSE answer (the session era) -------------------------------------------
 * A server may end a call's SSE answer before the response (2025-11-25, SEP-1699: it
 * polls): when the stream gave an event id, the call waits the stream's retry: hint (1 s
 * without one, at most RESUME_MAX_MS; on a timer of its own, its deadline still watched)
 * and then GETs the stream again with Last-Event-ID, where the response comes; at most
 * RESUME_MAX times per call. A call waiting so is on c->resuming (the client's close ends it). */
#define RESUME_MAX 5
#define RESUME_DEFAULT_MS 1000
#define RESUME_MAX_MS 5000

typedef struct resume_timer {
    mcp_pending p;
    hreq *r; /* a reference */
} resume_timer;

static void resume_fire(mcp_pending *p, const char *why) {
    (void)why;
    hreq *r = ((resume_timer *)p)->r;
    http_client *c = r->c;
    if (r->state != HS_RESUME) return; /* its deadline or cancel flag, or the close, ended it meanwhile */
    unlink_req(r);
    r->state = HS_NEW;
    if (c->closing) finish(r, NULL, "transport", "client is closing");
    else launch(r);
}

static void resume_destroy(mcp_pending *p) {
    resume_timer *t = (resume_timer *)p;
    mcp_pending_unref(&t->r->p);
    free(t);
}

/* The answer ended without the response: resume it later (true), or not (false: no event
 * id to resume from, or the resumptions are spent). */
static bool resume_call(hreq *r) {
    if (!r->in || !r->in->last_id[0] || r->resumes >= RESUME_MAX) return false;
    resume_timer *t = calloc(1, sizeof *t);
    if (!t) return false;
    long ms = r->in->retry_ms >= 0 ? r->in->retry_ms : RESUME_DEFAULT_MS;
    if (ms > RESUME_MAX_MS) ms = RESUME_MAX_MS;
    snprintf(r->resume_id, sizeof r->resume_id, "%s", r->in->last_id);
    r->resumes++;
    r->resuming = true;
    r->state = HS_RESUME;
    link_front(&r->c->resuming, r);
    mcp_pending_init(&t->p, ms > 0 ? (int)ms : 1, NULL, noop_done, NULL);
    t->p.expire = resume_fire;
    t->p.destroy = resume_destroy;
    t->r = r;
    mcp_pending_ref(&r->p);
    mcp_loop_watch(r->c->loop, &t->p);
    mcp_pending_unref(&t->p); /* the creator's: the watch holds it */
    return true;
}

/* ---- the stateless era (2026-07-28) ------------------------------------------------------
 * With mcp_server_config.protocol MCP_VERSION_MODERN there is no initialize and no session:
 * every request carries the request metadata in params._meta (client_era.c) and the
 * standard headers (MCP-Protocol-Version, Mcp-Method, Mcp-Name, and the Mcp-Param-{Name}
 * headers the tool's x-mcp-header annotations designate, learned from tools/list, where
 * tools with invalid annotations are left out). A 4xx answer carries the JSON-RPC error; an
 * UnsupportedProtocolVersionError whose supported list holds our version is retried. An
 * InputRequiredResult (tools/call, prompts/get, resources/read) goes to the request handler,
 * one request per input request, and the original request is sent again, under a new id,
 * with the inputResponses and the requestState exactly as received (MRTR), at most
 * MRTR_MAX_ROUNDS times. No GET stream (a subscriptions/listen POST instead, below, which
 * resources/subscribe and /unsubscribe feed), no notifications/cancelled (closing the answer
 * is the cancellation). */
#define MRTR_MAX_ROUNDS 8
#define MRTR_MAX_INPUTS 16

/* The request again, as a new message (a new id) with extra members (may be NULL). */
static void modern_again(hreq *r, json_t *extra) {
    r->id = (atomic_fetch_add_explicit(&r->c->next_id, 1, memory_order_relaxed) + 1);
    char *b = modern_body(r, extra);
    if (!b) {
        finish(r, NULL, "oom", "out of memory");
        return;
    }
    free(r->body);
    r->body = b;
    launch(r);
}

static bool lists_version(json_t *supported, const char *v) {
    size_t i;
    json_t *s;
    json_array_foreach(supported, i, s)
        if (json_is_string(s) && v && !strcmp(json_string_value(s), v)) return true;
    return false;
}

/* A 4xx answer: the revision puts the JSON-RPC error in its body. */
static void modern_refused(hreq *r, long status) {
    http_client *c = r->c;
    gg_error pe = GG_ERROR_INIT;
    json_t *m = r->resp.len ? mcp_wire_parse(r->resp.data, r->resp.len, c->max_parse, NULL, &pe) : NULL;
    gg_error_clear(&pe);
    json_t *e = json_object_get(m, "error");
    long long code = json_integer_value(json_object_get(e, "code"));
    const char *em = json_string_value(json_object_get(e, "message"));
    if (code == MCP_UNSUPPORTED_VERSION && r->rounds < MRTR_MAX_ROUNDS &&
        lists_version(json_object_get(json_object_get(e, "data"), "supported"), c->protocol)) {
        r->rounds++;
        modern_again(r, NULL);
    } else if (json_is_object(e))
        finish(r, NULL, "mcp_error", "MCP error %lld: %s", code, em ? em : "unknown error");
    else finish(r, NULL, "transport", "MCP server '%s' answered HTTP %ld to a request", c->name, status);
    json_decref(m);
}

/* One InputRequiredResult being answered: its replies come from any thread. */
typedef struct mrtr_round {
    hreq *r; /* a reference */
    pthread_mutex_t mu;
    int left;            /* replies still owed, plus one while they are being asked */
    json_t *responses;   /* NULL when the result had no inputRequests */
    char *state;         /* requestState as received, NULL when none */
    char why[300];       /* the first reply that was an error */
} mrtr_round;

typedef struct mrtr_reply {
    mcp_client_reply base;
    mrtr_round *round;
    char *key;
} mrtr_reply;

static void mrtr_resume(void *arg) {
    mrtr_round *rd = arg;
    hreq *r = rd->r;
    http_client *c = r->c;
    if (r->state == HS_INPUT) { /* else its deadline or cancel flag ended it meanwhile */
        r->state = HS_NEW;
        json_t *extra = json_object();
        if (extra && rd->responses) json_object_set(extra, "inputResponses", rd->responses);
        if (extra && rd->state) json_object_set_new(extra, "requestState", json_string(rd->state));
        if (rd->why[0]) finish(r, NULL, "mcp_error", "MCP server '%s': %s", c->name, rd->why);
        else if (c->closing) finish(r, NULL, "transport", "client is closing");
        else if (!extra) finish(r, NULL, "oom", "out of memory");
        else modern_again(r, extra);
        json_decref(extra);
    }
    json_decref(rd->responses);
    free(rd->state);
    pthread_mutex_destroy(&rd->mu);
    free(rd);
    mcp_pending_unref(&r->p); /* the round's */
}

static void mrtr_release(mrtr_round *rd) {
    pthread_mutex_lock(&rd->mu);
    bool last = --rd->left == 0;
    pthread_mutex_unlock(&rd->mu);
    if (!last) return;
    if (mcp_loop_post(rd->r->c->loop, mrtr_resume, rd)) return;
    snprintf(rd->why, sizeof rd->why, "out of memory"); /* the call's deadline ends it */
    hreq *r = rd->r;
    json_decref(rd->responses);
    free(rd->state);
    pthread_mutex_destroy(&rd->mu);
    free(rd);
    mcp_pending_unref(&r->p);
}

static void mrtr_answer(mrtr_round *rd, const char *key, json_t *result, int code, const char *message) {
    pthread_mutex_lock(&rd->mu);
    if (code && !rd->why[0])
        snprintf(rd->why, sizeof rd->why, "the client could not answer input request '%.64s': MCP error %d: %s", key, code,
                 message); /* the code says why: -32601, the client lacks the capability */
    else if (!code && rd->responses)
        json_object_set_new(rd->responses, key, result ? gg_json_clone(result) : json_object());
    pthread_mutex_unlock(&rd->mu);
    mrtr_release(rd);
}

static void mrtr_send(mcp_client_reply *base, json_t *result, int code, const char *message) {
    mrtr_reply *rp = (mrtr_reply *)base;
    mrtr_answer(rp->round, rp->key, result, code, message);
    free(rp->key);
    free(rp);
}

static bool mrtr_method(const char *m) {
    return !strcmp(m, "tools/call") || !strcmp(m, "prompts/get") || !strcmp(m, "resources/read");
}

/* An InputRequiredResult: ask the handler, the call waits (HS_INPUT) for every reply. */
static void input_required(hreq *r, json_t *result) {
    http_client *c = r->c;
    json_t *reqs = json_object_get(result, "inputRequests"), *state = json_object_get(result, "requestState");
    pthread_mutex_lock(&c->mu);
    mcp_client_server_request_fn fn = r->relay.fn ? r->relay.fn : c->hooks.on_request;
    void *u = r->relay.fn ? r->relay.user : c->hooks.request_user;
    pthread_mutex_unlock(&c->mu);
    const char *first = json_string_value(json_object_get(json_object_iter_value(json_object_iter(reqs)), "method"));
    if ((reqs && !json_is_object(reqs)) || (state && !json_is_string(state)) || (!reqs && !state)) {
        finish(r, NULL, "mcp_error", "MCP server '%s' sent a malformed InputRequiredResult", c->name);
        return;
    }
    if (r->rounds >= MRTR_MAX_ROUNDS || json_object_size(reqs) > MRTR_MAX_INPUTS) {
        finish(r, NULL, "mcp_error", "MCP server '%s' asked for input too often (%d rounds, %zu requests)", c->name,
               r->rounds, json_object_size(reqs));
        return;
    }
    if (json_object_size(reqs) && !fn) {
        finish(r, NULL, "mcp_error", "MCP server '%s' asked the client for input (%.64s), which this client does not answer",
               c->name, first ? first : "?");
        return;
    }
    mrtr_round *rd = calloc(1, sizeof *rd);
    if (!rd || (reqs && !(rd->responses = json_object())) || (state && !(rd->state = strdup(json_string_value(state))))) {
        if (rd) json_decref(rd->responses), free(rd);
        finish(r, NULL, "oom", "out of memory");
        return;
    }
    pthread_mutex_init(&rd->mu, NULL);
    rd->r = r;
    rd->left = (int)json_object_size(reqs) + 1;
    r->rounds++;
    r->state = HS_INPUT;
    mcp_pending_ref(&r->p); /* the round's */
    const char *key;
    json_t *ir;
    json_object_foreach(reqs, key, ir) {
        const char *method = json_string_value(json_object_get(ir, "method"));
        mrtr_reply *rp = method ? calloc(1, sizeof *rp) : NULL;
        if (rp && !(rp->key = strdup(key))) free(rp), rp = NULL;
        if (!rp) {
            mrtr_answer(rd, key, NULL, MCP_INVALID_REQUEST, method ? "out of memory" : "an input request without a method");
            continue;
        }
        rp->base.send = mrtr_send;
        rp->round = rd;
        fn(u, method, json_object_get(ir, "params"), &rp->base);
    }
    mrtr_release(rd); /* the asking's own */
}

/* The capabilities a server declared replace the last ones (an answer without an object
 * declares nothing: {}); read from any thread by http_server_declares. */
static void keep_server_caps(http_client *c, json_t *caps) {
    json_t *copy = json_is_object(caps) ? gg_json_clone(caps) : json_object();
    pthread_mutex_lock(&c->mu);
    json_decref(c->server_caps);
    c->server_caps = copy;
    pthread_mutex_unlock(&c->mu);
}

static void listen_reconcile(http_client *c);

/* A stateless request's result: tools/list loses its invalid tools (and teaches the
 * headers), server/discover what the server declares (which the listen stream asks for),
 * an InputRequiredResult starts the next round, anything else is the answer. */
static void modern_result(hreq *r, json_t *result) {
    const char *type = json_string_value(json_object_get(result, "resultType"));
    if (!strcmp(r->method, "tools/list")) mcp_era_filter_tools(result, r->c->tool_headers, r->c->name);
    if (!strcmp(r->method, "server/discover")) {
        keep_server_caps(r->c, json_object_get(result, "capabilities"));
        listen_reconcile(r->c);
    }
    if (type && !strcmp(type, "input_required") && mrtr_method(r->method)) input_required(r, result);
    else finish_result(r, result);
}

static void call_done(hreq *r, CURLcode rc, long status) {
    http_client *c = r->c;
    bool resumed = r->resuming;
    r->resuming = false;
    bool unsent = rc == CURLE_SEND_ERROR || rc == CURLE_COULDNT_CONNECT;
    bool reset = rc == CURLE_RECV_ERROR || rc == CURLE_GOT_NOTHING || rc == CURLE_SEND_ERROR;
    if (reset && !c->modern) c->ready = false; /* the server may have restarted: the next call starts over */
    if (!c->modern && !r->retried && !r->refused_by_policy && ((rc == CURLE_OK && session_lost(r, status)) || (unsent && rc != CURLE_COULDNT_CONNECT))) {
        r->retried = true;
        c->ready = false;
        wait_for_session(r);
        return;
    }
    if (r->fail[0] || (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && r->found))) {
        transport_error(r, rc);
        return;
    }
    if (!c->modern && status == 200 && r->sse && !r->found && resume_call(r)) return;
    if (auth_wait(r, status)) return;
    if ((status == 401 || status == 403) && c->auth.impl) {
        finish(r, NULL, "downstream_auth", "MCP server '%s' refused the credentials (HTTP %ld) after %d tries", c->name,
               status, r->auth_rounds + 1);
        return;
    }
    if (c->modern && status >= 400 && status < 500 && !r->sse) {
        modern_refused(r, status);
        return;
    }
    if (status < 200 || status >= 300) {
        if (resumed)
            finish(r, NULL, "transport", "MCP server '%s' ended a call's stream before its answer and refused to resume it (HTTP %ld)",
                   c->name, status);
        else finish(r, NULL, "transport", "MCP server '%s' answered HTTP %ld to a request", c->name, status);
        return;
    }
    gg_error why = GG_ERROR_INIT;
    json_t *m = response_message(r, &why);
    json_t *e = json_object_get(m, "error"), *result = json_object_get(m, "result");
    if (!m) finish(r, NULL, why.code, "%s", why.message);
    else if (e) {
        const char *em = json_string_value(json_object_get(e, "message"));
        finish(r, NULL, "mcp_error", "MCP error %lld: %s", (long long)json_integer_value(json_object_get(e, "code")),
               em ? em : "unknown error");
    } else if (!result) finish(r, NULL, "mcp_error", "MCP server '%s' sent a response without a result", c->name);
    else if (c->modern && r->method) modern_result(r, result);
    else finish_result(r, result);
    json_decref(m);
    gg_error_clear(&why);
}

/* A server that declares no listChanged sends no list_changed: no stream to hold open. */
static bool declares_list_changed(json_t *caps) {
    static const char *const kinds[] = {"tools", "resources", "prompts"};
    for (size_t i = 0; i < 3; i++)
        if (json_is_true(json_object_get(json_object_get(caps, kinds[i]), "listChanged"))) return true;
    return false;
}

static void init_done(hreq *r, CURLcode rc, long status) {
    http_client *c = r->c;
    char err[600] = "";
    const char *code = "transport";
    json_t *m = NULL;
    gg_error why = GG_ERROR_INIT;
    if (r->fail[0]) {
        snprintf(err, sizeof err, "%s (initialize)", r->fail);
    } else if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && r->found)) {
        snprintf(err, sizeof err, "%s MCP server '%s' (initialize): %s",
                 rc == CURLE_COULDNT_CONNECT && !r->refused_by_policy ? "connection refused by" : "cannot reach", c->name,
                 r->refused_by_policy ? POLICY_REFUSED : curl_easy_strerror(rc));
    } else if (status < 200 || status >= 300) {
        if (auth_wait(r, status)) return;
        if ((status == 401 || status == 403) && c->auth.impl) code = "downstream_auth";
        snprintf(err, sizeof err, "MCP server '%s' answered HTTP %ld to initialize", c->name, status);
    } else if (!(m = response_message(r, &why))) {
        snprintf(err, sizeof err, "%s (initialize)", why.message);
    } else if (!json_is_object(json_object_get(m, "result"))) {
        json_t *e = json_object_get(m, "error");
        const char *em = json_string_value(json_object_get(e, "message"));
        snprintf(err, sizeof err, "MCP server '%s' refused initialize: %s", c->name, em ? em : "no result");
    }
    gg_error_clear(&why);
    c->init_refused = r->refused_by_policy;
    if (err[0]) {
        json_decref(m);
        finish_quiet(r);
        session_settled_as(c, code, err);
        return;
    }
    const char *pv = json_string_value(json_object_get(json_object_get(m, "result"), "protocolVersion"));
    c->notifies = declares_list_changed(json_object_get(json_object_get(m, "result"), "capabilities"));
    keep_server_caps(c, json_object_get(json_object_get(m, "result"), "capabilities"));
    c->protocol = strdup(pv ? pv : MCP_CLIENT_PROTOCOL_VERSION);
    c->session = r->session;
    r->session = NULL;
    json_decref(m);
    finish_quiet(r);
    hreq *n = hreq_new(c, HR_INITIALIZED, "notifications/initialized", NULL, c->timeout_ms, NULL, NULL, NULL);
    if (!n) session_settled(c, "out of memory");
    else launch(n);
}

static void listen_ended(hreq *r, CURLcode rc, long status);
static void raw_ended(hreq *r, CURLcode rc, long status);

/* A transfer ended (loop thread). */
static void on_done(mcp_loop_xfer *lx, CURLcode rc) {
    hreq *r = (hreq *)((char *)lx - offsetof(hreq, lx));
    http_client *c = r->c;
    unlink_req(r);
    r->state = HS_NEW;
    long status = 0;
    curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &status);
    switch (r->kind) {
    case HR_CALL: call_done(r, rc, status); break;
    case HR_INIT: init_done(r, rc, status); break;
    case HR_LISTEN: listen_ended(r, rc, status); break;
    case HR_RAW: raw_ended(r, rc, status); break;
    case HR_INITIALIZED: {
        char err[300] = "";
        if (rc != CURLE_OK || status < 200 || status >= 300)
            snprintf(err, sizeof err, "MCP server '%s' refused notifications/initialized (HTTP %ld)", c->name, status);
        finish_quiet(r);
        session_settled(c, err[0] ? err : NULL);
        break;
    }
    default: finish_quiet(r); break;
    }
}

/* ---- the listen stream ------------------------------------------------------------------
 * The streamable HTTP transport's "listening for messages from the server": one GET
 * (Accept: text/event-stream, the session's id) per session, on the same multi handle as
 * every call, read incrementally by an mcp_sse_reader bounded at MCP_HTTP_LISTEN_MAX_EVENT.
 * Notifications go to the client's notify callback (the gateway's catalog refresh);
 * requests are answered with a POST (ping → {}, anything else → -32601), at most
 * LISTEN_MAX_ANSWERS at a time (more are dropped, logged: a server cannot make us send
 * without bound). A stream that ends is reopened after a backoff (1 s doubling to 60 s, or
 * the server's retry: hint; reset by a stream that lived 30 s or carried an event) with
 * Last-Event-ID; a 404 (or a 400 naming the session) for a session whose stream was open
 * means the server forgot it: the session is initialized again, which reopens the stream.
 * 405 means the server offers none: never asked again. The listener is one hreq that
 * lives from listen_start to listen_stop (re-initialization, client closing), in flight
 * (on c->flight) or as a deadline on the loop's heap while it backs off. The stateless era
 * holds the same listener as a subscriptions/listen POST ("subscriptions/listen" below:
 * the same bounds, backoff and stats; no session to lose, no requests on it). */
#define LISTEN_BACKOFF_MIN_MS 1000
#define LISTEN_BACKOFF_MAX_MS 60000
#define LISTEN_HEALTHY_MS 30000
#define LISTEN_MAX_ANSWERS 8
/* A stream put off for want of a slot looks again this often (a lock and a compare). */
#define LISTEN_SLOT_WAIT_MS 5000
#define LISTEN_ERR_BODY 4096

/* The listen streams' counters and per-owner slots are the downstream context's
 * (mcp_http_shared above): summed over every client of the context. */
void mcp_http_set_listen_owner_max(mcp_downstream *d, int max) {
    pthread_mutex_lock(&d->http->mu);
    d->http->owner_max = max > 0 ? max : 0;
    pthread_mutex_unlock(&d->http->mu);
}

/* Take one of the owner's slots: false when it holds owner_max already (or out of memory). */
static bool owner_take(mcp_http_shared *h, const char *owner) {
    if (!owner) return true;
    pthread_mutex_lock(&h->mu);
    bool ok = gg_tally_add(&h->owners, owner, h->owner_max) == GG_TALLY_OK;
    pthread_mutex_unlock(&h->mu);
    return ok;
}

static void owner_give(mcp_http_shared *h, const char *owner) {
    if (!owner) return;
    pthread_mutex_lock(&h->mu);
    gg_tally_sub(&h->owners, owner);
    pthread_mutex_unlock(&h->mu);
}

mcp_listen_stats mcp_http_listen_stats(const mcp_downstream *d) {
    const mcp_http_shared *h = d->http;
    mcp_listen_stats s = {atomic_load_explicit(&h->live, memory_order_relaxed), atomic_load_explicit(&h->opened, memory_order_relaxed),
                          atomic_load_explicit(&h->events, memory_order_relaxed),
                          atomic_load_explicit(&h->list_changed, memory_order_relaxed),
                          atomic_load_explicit(&h->cut_off, memory_order_relaxed), atomic_load_explicit(&h->no_stream, memory_order_relaxed),
                          atomic_load_explicit(&h->owner_full, memory_order_relaxed)};
    return s;
}

static void stat_add(_Atomic unsigned long long *v) { atomic_fetch_add_explicit(v, 1, memory_order_relaxed); }

/* The response headers are in: a 200 text/event-stream is an open stream. */
static void listen_opened(hreq *r) {
    long status = 0;
    curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200 || !r->sse || r->listen_open) return;
    r->listen_open = true;
    r->c->session_streamed = true;
    r->opened_ms = gg_now_ms();
    stat_add(&r->c->ds->opened);
    gg_log(GG_LOG_DEBUG, "listening to a downstream server", "server", r->c->name, NULL);
}

/* ---- requests the server sends ----------------------------------------------------------
 * On the listen stream or a call's SSE answer (the session era). Each is answered with a
 * POST: by the client's request handler when it has one (mcp_client_set_request_handler;
 * a ping is always answered here), else ping -> {} and anything else -> -32601. We are
 * inside libcurl's write callback, where no transfer may be added: every answer's POST
 * starts from the loop's queue (submit). At most LISTEN_MAX_ANSWERS answers are in flight
 * (past that a request is dropped, logged: a server cannot make us send without bound) and
 * REPLIES_MAX replies owed by the handler (past that the default answer goes). */
#define REPLIES_MAX 16

typedef struct http_reply {
    mcp_client_reply base;
    http_client *c;
    json_t *id;
} http_reply;

static void post_answer(http_client *c, json_t *a, const char *method) {
    hreq *r = a ? hreq_new(c, HR_ANSWER, NULL, NULL, 2000, NULL, NULL, NULL) : NULL;
    if (r) r->body = json_dumps(a, JSON_COMPACT);
    if (!r || !r->body) {
        gg_log(GG_LOG_WARN, "an answer to a downstream server's request was dropped (out of memory)", "server", c->name,
               "method", method, NULL);
        if (r) mcp_pending_unref(&r->p);
        return;
    }
    mcp_loop_watch(c->loop, &r->p);
    mcp_pending_ref(&r->p);
    /* out of memory for the post: the watched deadline ends it; the creator's reference is
     * the one its finish drops */
    if (!mcp_loop_post(c->loop, submit, r)) mcp_pending_unref(&r->p);
}

/* The handler's reply (any thread): its answer goes out, the reply is no longer owed. */
static void reply_send(mcp_client_reply *base, json_t *result, int code, const char *message) {
    http_reply *rp = (http_reply *)base;
    http_client *c = rp->c;
    json_t *a = mcp_client_reply_message(rp->id, result, code, message);
    post_answer(c, a, "reply");
    json_decref(a);
    json_decref(rp->id);
    free(rp);
    pthread_mutex_lock(&c->mu);
    c->nreqs--; /* the reply's: _free waits for replies owed */
    c->replies--;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static void server_request(http_client *c, json_t *id, const char *method, json_t *params, const mcp_call_relay *relay) {
    pthread_mutex_lock(&c->mu);
    bool full = c->answers >= LISTEN_MAX_ANSWERS;
    mcp_client_server_request_fn fn = relay ? relay->fn : c->hooks.on_request;
    void *u = relay ? relay->user : c->hooks.request_user;
    http_reply *rp = NULL;
    if (!full && fn && strcmp(method, "ping") && c->replies < REPLIES_MAX && (rp = calloc(1, sizeof *rp)))
        c->nreqs++, c->replies++;
    pthread_mutex_unlock(&c->mu);
    if (full) {
        gg_log(GG_LOG_WARN, "a downstream server's request was dropped (too many unanswered)", "server", c->name,
               "method", method, NULL);
        return;
    }
    if (!rp) {
        json_t *a = mcp_client_answer_server_request(id, method);
        post_answer(c, a, method);
        json_decref(a);
        return;
    }
    rp->base.send = reply_send;
    rp->c = c;
    rp->id = json_incref(id);
    fn(u, method, params, &rp->base);
}

static bool modern_listen_event(hreq *r, json_t *m);

/* One event of the stream: a JSON-RPC message, else the stream is cut off. */
static bool listen_event(void *user, const char *data, size_t len) {
    hreq *r = user;
    http_client *c = r->c;
    if (!len) return true; /* an empty event (a resumability primer) */
    gg_error e = GG_ERROR_INIT;
    json_t *m = mcp_wire_parse(data, len, c->max_parse, NULL, &e);
    gg_error_clear(&e);
    if (!json_is_object(m)) {
        json_decref(m);
        r->in->error = "an event that is not a JSON-RPC message";
        return false;
    }
    stat_add(&r->c->ds->events);
    json_t *id = json_object_get(m, "id");
    const char *method = json_string_value(json_object_get(m, "method"));
    if (c->modern) {
        bool ok = modern_listen_event(r, m);
        json_decref(m);
        return ok;
    }
    if (method && id) server_request(c, id, method, json_object_get(m, "params"), NULL);
    else if (method) {
        if (!strcmp(method, "notifications/tools/list_changed")) stat_add(&r->c->ds->list_changed);
        pthread_mutex_lock(&c->mu);
        mcp_client_notify_fn fn = c->hooks.notify;
        void *nu = c->hooks.notify_user;
        pthread_mutex_unlock(&c->mu);
        if (fn) fn(nu, method, json_object_get(m, "params"));
        relay_listen_note(c, method, json_object_get(m, "params"));
    } /* a response: we send no request whose answer could come here */
    json_decref(m);
    return true;
}

static size_t on_listen_body(char *ptr, size_t size, size_t nmemb, void *user) {
    hreq *r = user;
    size_t n = size * nmemb;
    if (!r->listen_open) { /* an error answer: its start says whether the session is gone */
        size_t room = LISTEN_ERR_BODY - r->resp.len;
        gg_strbuf_append(&r->resp, ptr, n < room ? n : room);
        return n <= room ? n : 0;
    }
    if (!r->in) {
        r->in = malloc(sizeof *r->in);
        if (!r->in) return 0;
        size_t max = r->c->max_message < MCP_HTTP_LISTEN_MAX_EVENT ? r->c->max_message : MCP_HTTP_LISTEN_MAX_EVENT;
        mcp_sse_reader_init(r->in, max, listen_event, r);
    }
    if (mcp_sse_reader_feed(r->in, ptr, n)) return n;
    r->cut = r->in->error;
    return 0;
}

/* Leaving the wire or the heap: no longer one of the live streams. */
static void listen_uncount(hreq *r) {
    if (r->counted) {
        atomic_fetch_sub_explicit(&r->c->ds->live, 1, memory_order_relaxed);
        owner_give(r->c->ds, r->c->owner);
    }
    r->counted = false;
    r->listen_open = false;
}

/* (Re)connect, unless the context has its MCP_HTTP_LISTEN_MAX streams or the client's
 * owner its MCP_HTTP_LISTEN_MAX_OWNER: then wait. */
static void listen_wait(hreq *r, long ms);
static bool modern_listen_prepare(hreq *r);
static void listen_connect(hreq *r) {
    if (r->c->modern && !modern_listen_prepare(r)) { /* nothing (left) to ask for */
        listen_stop(r->c);
        return;
    }
    if (atomic_load_explicit(&r->c->ds->live, memory_order_relaxed) >= MCP_HTTP_LISTEN_MAX) {
        listen_wait(r, LISTEN_SLOT_WAIT_MS);
        return;
    }
    if (!owner_take(r->c->ds, r->c->owner)) {
        stat_add(&r->c->ds->owner_full);
        listen_wait(r, LISTEN_SLOT_WAIT_MS);
        return;
    }
    r->counted = true;
    atomic_fetch_add_explicit(&r->c->ds->live, 1, memory_order_relaxed);
    mcp_pending_ref(&r->p); /* a launch that fails finishes r */
    launch(r);
    if (r->state == HS_DONE) {
        listen_uncount(r);
        r->c->listener = NULL;
    }
    mcp_pending_unref(&r->p);
}

static void listen_wait(hreq *r, long ms) {
    r->state = HS_TIMER;
    r->p.deadline = gg_now_ms() + (double)ms;
    mcp_loop_watch(r->c->loop, &r->p);
}

/* The backoff ran out (loop thread): reconnect, or first start a session again. */
static void listen_expire(mcp_pending *p, const char *why) {
    (void)why;
    hreq *r = (hreq *)p;
    http_client *c = r->c;
    if (r->state != HS_TIMER) return;
    r->state = HS_NEW;
    if (c->modern) { /* the filter is read now; without the server's capabilities, learn them first */
        pthread_mutex_lock(&c->mu);
        bool known = c->server_caps != NULL;
        pthread_mutex_unlock(&c->mu);
        if (known) listen_connect(r);
        else {
            listen_stop(c);
            listen_reconcile(c);
        }
        return;
    }
    if (c->ready) {
        listen_connect(r);
        return;
    }
    listen_stop(c); /* the next session's stream starts when it is ready */
    if (!c->initing && !c->closing) start_init(c);
}

static long listen_backoff(const http_client *c) {
    long base = c->retry_ms >= 0 ? c->retry_ms : LISTEN_BACKOFF_MIN_MS;
    if (base < 100) base = 100;
    int k = c->listen_fails < 7 ? c->listen_fails : 7;
    long ms = base << k;
    return ms > LISTEN_BACKOFF_MAX_MS ? LISTEN_BACKOFF_MAX_MS : ms;
}

static hreq *listen_new(http_client *c) {
    /* the stateless era's stream may be wanted for subscriptions alone (listen_reconcile) */
    if ((!c->listen_wanted && !c->modern) || c->closing || c->no_stream || c->listener) return NULL;
    hreq *r = hreq_new(c, HR_LISTEN, NULL, NULL, c->timeout_ms, NULL, NULL, NULL);
    if (!r) return NULL; /* out of memory: the periodic refresh still follows the catalog */
    r->p.expire = listen_expire;
    c->listener = r;
    return r;
}

/* A stream is worth holding for a server that declared listChanged, or for a client that
 * answers the server's requests (which a server sends on the stream when they belong to no
 * call of ours). */
static void listen_start(http_client *c) {
    if (c->modern) {
        listen_reconcile(c);
        return;
    }
    pthread_mutex_lock(&c->mu);
    bool answers = c->hooks.on_request != NULL;
    pthread_mutex_unlock(&c->mu);
    hreq *r = c->ready && !c->modern && (c->notifies || answers) ? listen_new(c) : NULL;
    if (r) listen_connect(r);
}

/* The session could not start (the server is down): a listening client tries again later,
 * so that it hears the server once it is back even if no call comes meanwhile. */
static void listen_retry_later(http_client *c) {
    if (c->init_refused) return; /* the policy will not change its mind: calls say why */
    hreq *r = listen_new(c);
    if (!r) return;
    c->listen_fails++;
    listen_wait(r, listen_backoff(c));
}

static void listen_stop(http_client *c) {
    hreq *r = c->listener;
    if (!r) return;
    c->listener = NULL;
    land(r);
    listen_uncount(r);
    if (r->state != HS_DONE) finish_quiet(r);
}

/* The server offers no stream (a 405 to the GET; a plain body or an error to the stateless
 * era's POST; an acknowledgement honouring nothing): never asked again, said once. */
static void listen_none(http_client *c, const char *why) {
    stat_add(&c->ds->no_stream);
    gg_log(GG_LOG_INFO, "a downstream server offers no listen stream; its catalog follows the periodic refresh",
           "server", c->name, "status", why, NULL);
    c->no_stream = true;
    listen_stop(c);
}

/* A stateless server's answer to subscriptions/listen that is no stream: anything but a
 * transient failure (5xx, 408, 429, credentials, unreachable, which are tried again). */
static bool modern_no_stream(CURLcode rc, long status) {
    if (rc != CURLE_OK) return false;
    return (status >= 200 && status < 300) ||
           (status >= 400 && status < 500 && status != 401 && status != 403 && status != 408 && status != 429);
}

/* The listen stream ended (loop thread): see the sections' comments for what follows what. */
static void listen_ended(hreq *r, CURLcode rc, long status) {
    http_client *c = r->c;
    if (r->unheard) {
        listen_uncount(r);
        listen_none(c, "acknowledged none of the notifications asked for");
        return;
    }
    bool was_open = r->listen_open;
    double lived = was_open ? gg_now_ms() - r->opened_ms : 0;
    unsigned long long got = r->in ? r->in->events : 0;
    if (c->modern && got) got--; /* the acknowledgement always comes: it says nothing of health */
    if (r->in && r->in->last_id[0]) snprintf(c->last_event_id, sizeof c->last_event_id, "%s", r->in->last_id);
    if (r->in && r->in->retry_ms >= 0) c->retry_ms = r->in->retry_ms;
    listen_uncount(r);
    if (r->cut) {
        stat_add(&r->c->ds->cut_off);
        gg_log(GG_LOG_WARN, "a downstream server's listen stream was cut off", "server", c->name, "reason", r->cut, NULL);
        c->listen_fails++;
    } else if (!was_open) {
        bool lost = !c->modern && (status == 404 || session_lost(r, status));
        if (status == 405 || (rc == CURLE_OK && status >= 200 && status < 300) || (c->modern && modern_no_stream(rc, status))) {
            char why[48];
            snprintf(why, sizeof why, "%s", status == 405 ? "405" : status < 300 ? "not text/event-stream" : "");
            if (!why[0]) snprintf(why, sizeof why, "HTTP %ld", status);
            listen_none(c, why);
            return;
        }
        if (lost) {
            listen_stop(c);
            if (c->session_streamed) { /* the server forgot the session (a restart) */
                c->ready = false;
                start_init(c);
            } /* else it never had a stream for this one: try again with the next session */
            return;
        }
        c->listen_fails++; /* unreachable, 5xx, 409 (an old stream still registered): later */
    } else if (lived >= LISTEN_HEALTHY_MS || got > 0) c->listen_fails = 0;
    else c->listen_fails++;
    listen_wait(r, listen_backoff(c));
}

/* ---- subscriptions/listen (the stateless era) -----------------------------------------
 * A 2026-07-28 server has no GET stream and no resources/subscribe: its own notifications
 * come on a subscriptions/listen POST whose answer is an SSE stream that stays open with
 * what the request's notifications filter asked for. The client holds one such stream as
 * the listener above (the same hreq, backoff, context and owner bounds, stats), asking for
 * the list_changed kinds the server declared (server/discover, learnt first when unknown)
 * when the client listens (mcp_client_listen) and has a notify hook, and for
 * notifications/resources/updated of every URI subscribed through the client.
 * resources/subscribe and /unsubscribe are not sent: they change that set (at most SUBS_MAX
 * URIs of at most SUB_URI_MAX bytes; past either the subscribe fails, saying so) and are
 * answered {} here when the server declared resources.subscribe (else -32601, as a session-era
 * server without it answers; before anything is known, one server/discover first). A changed
 * filter lands the stream and reconnects it after LISTEN_REOPEN_MS, the filter read as it
 * connects, so that a burst of subscriptions opens one stream; nothing left to ask for closes
 * it. On the stream only notifications carrying our subscription id (_meta
 * io.modelcontextprotocol/subscriptionId) of the four change kinds reach the notify hook;
 * the acknowledgement is read here (one honouring nothing: no stream; it does not count as an
 * event that resets the backoff), the graceful-closure result (our id) ends the stream like a
 * drop (reopened after the backoff), and anything else
 * (requests, other ids) is dropped. A server answering the POST with an error or a plain body
 * offers no stream (listen_none). */
#define SUBS_MAX 64
#define SUB_URI_MAX 2048
#define LISTEN_REOPEN_MS 50
#define SUB_ID_META "io.modelcontextprotocol/subscriptionId"

/* What the stream asks for now (new reference), NULL when nothing. */
static json_t *modern_filter(http_client *c) {
    static const char *const kinds[][2] = {
        {"tools", "toolsListChanged"}, {"prompts", "promptsListChanged"}, {"resources", "resourcesListChanged"}};
    json_t *f = json_object();
    if (!f) return NULL;
    pthread_mutex_lock(&c->mu);
    bool hears = c->listen_wanted && c->hooks.notify;
    for (size_t i = 0; i < 3; i++)
        if (hears && json_is_true(json_object_get(json_object_get(c->server_caps, kinds[i][0]), "listChanged")))
            json_object_set_new(f, kinds[i][1], json_true());
    bool subscribes = mcp_client_caps_declare(c->server_caps, "resources.subscribe") == MCP_DECLARES_YES;
    pthread_mutex_unlock(&c->mu);
    if (subscribes && json_array_size(c->subs)) json_object_set_new(f, "resourceSubscriptions", gg_json_clone(c->subs));
    if (!json_object_size(f)) {
        json_decref(f);
        return NULL;
    }
    return f;
}

/* The listener's request for the filter as it is now: false when there is nothing to ask. */
static bool modern_listen_prepare(hreq *r) {
    http_client *c = r->c;
    json_t *f = modern_filter(c);
    if (!f) return false;
    json_decref(r->params);
    r->params = json_pack("{s:o}", "notifications", f);
    if (!r->method) r->method = strdup("subscriptions/listen");
    r->id = atomic_fetch_add_explicit(&c->next_id, 1, memory_order_relaxed) + 1; /* the subscription id */
    free(r->body);
    r->body = r->params && r->method ? modern_body(r, NULL) : NULL;
    return r->body != NULL;
}

static bool change_method(const char *m) {
    return !strcmp(m, "notifications/resources/updated") || !strcmp(m, "notifications/tools/list_changed") ||
           !strcmp(m, "notifications/prompts/list_changed") || !strcmp(m, "notifications/resources/list_changed");
}

/* One message of the stream (see the section): false cuts the stream off. */
static bool modern_listen_event(hreq *r, json_t *m) {
    http_client *c = r->c;
    json_t *params = json_object_get(m, "params");
    const char *method = json_string_value(json_object_get(m, "method"));
    json_t *sid = json_object_get(json_object_get(params, "_meta"), SUB_ID_META);
    if (!method || json_object_get(m, "id") || !json_is_integer(sid) || json_integer_value(sid) != r->id)
        return true; /* the graceful closure (the server ends the stream next), a request, another id */
    if (!strcmp(method, "notifications/subscriptions/acknowledged")) {
        if (json_object_size(json_object_get(params, "notifications"))) return true;
        r->unheard = true;
        r->in->error = "the acknowledgement honours none of the notifications asked for";
        return false;
    }
    if (!change_method(method)) return true;
    if (!strcmp(method, "notifications/tools/list_changed")) stat_add(&r->c->ds->list_changed);
    pthread_mutex_lock(&c->mu);
    mcp_client_notify_fn fn = c->hooks.notify;
    void *nu = c->hooks.notify_user;
    pthread_mutex_unlock(&c->mu);
    if (fn) fn(nu, method, params);
    return true;
}

static void modern_discover(http_client *c);

/* The stream as the filter now wants it: opened (after LISTEN_REOPEN_MS), landed and
 * reconnected with the new filter, or stopped; one waiting to connect reads it then. */
static void listen_reconcile(http_client *c) {
    if (!c->modern || c->closing || c->no_stream) return;
    pthread_mutex_lock(&c->mu);
    bool known = c->server_caps != NULL, hears = c->hooks.notify != NULL;
    pthread_mutex_unlock(&c->mu);
    if (!known) { /* subscriptions need them known: only a listening client with a hook asks */
        if (c->listen_wanted && hears) modern_discover(c);
        return;
    }
    json_t *f = modern_filter(c);
    hreq *r = c->listener;
    if (!f) listen_stop(c);
    else if (!r && (r = listen_new(c))) listen_wait(r, LISTEN_REOPEN_MS);
    else if (r && r->state == HS_FLIGHT && !json_equal(f, json_object_get(r->params, "notifications"))) {
        land(r);
        listen_uncount(r);
        listen_wait(r, LISTEN_REOPEN_MS);
    }
    json_decref(f);
}

/* Our own server/discover ended (loop thread): what waited for the capabilities goes on. */
static void discovered(void *user, json_t *result, gg_error *err) {
    http_client *c = user;
    (void)result;
    c->discovering = false;
    pthread_mutex_lock(&c->mu);
    bool known = c->server_caps != NULL;
    pthread_mutex_unlock(&c->mu);
    bool failed = err && gg_error_is_set(err);
    hreq *w;
    while ((w = c->disc_waiting)) {
        unlink_req(w);
        w->state = HS_NEW;
        if (c->closing) finish(w, NULL, "transport", "client is closing");
        else if (known) modern_subscription(w);
        else finish(w, NULL, failed ? err->code : "mcp_error", "%s",
                    failed ? err->message : "the server did not say what it declares (server/discover)");
    }
    if (c->closing) return;
    if (known) listen_reconcile(c);
    else if (c->listen_wanted && (w = listen_new(c))) { /* a listening client asks again after the backoff */
        c->listen_fails++;
        listen_wait(w, listen_backoff(c));
    }
}

static void modern_discover(http_client *c) {
    if (c->discovering || c->closing) return;
    json_t *p = json_object();
    hreq *d = p ? hreq_new(c, HR_CALL, "server/discover", p, c->timeout_ms, NULL, discovered, c) : NULL;
    json_decref(p);
    c->discovering = true;
    if (!d) {
        gg_error e = GG_ERROR_INIT;
        gg_error_set(&e, "oom", "out of memory");
        discovered(c, NULL, &e);
        gg_error_clear(&e);
        return;
    }
    mcp_loop_watch(c->loop, &d->p);
    launch(d);
}

/* resources/subscribe or /unsubscribe of a stateless server (loop thread): see the section. */
static void modern_subscription(hreq *r) {
    http_client *c = r->c;
    bool sub = !strcmp(r->method, "resources/subscribe");
    const char *uri = json_string_value(json_object_get(r->params, "uri"));
    pthread_mutex_lock(&c->mu);
    mcp_declares d = mcp_client_caps_declare(c->server_caps, "resources.subscribe");
    pthread_mutex_unlock(&c->mu);
    if (d == MCP_DECLARES_UNKNOWN) {
        r->state = HS_DISCOVER;
        link_front(&c->disc_waiting, r);
        modern_discover(c);
        return;
    }
    if (d == MCP_DECLARES_NO) {
        finish(r, NULL, "mcp_error", "MCP error %d: Method not found: MCP server '%s' declares no resources.subscribe",
               MCP_METHOD_NOT_FOUND, c->name);
        return;
    }
    if (!uri || !*uri || strlen(uri) > SUB_URI_MAX) {
        finish(r, NULL, "mcp_error", "MCP error %d: Invalid params: a resource URI of 1 to %d bytes", MCP_INVALID_PARAMS,
               SUB_URI_MAX);
        return;
    }
    size_t i, at = (size_t)-1;
    json_t *u;
    json_array_foreach(c->subs, i, u) if (!strcmp(json_string_value(u), uri)) {
        at = i;
        break;
    }
    if (sub && at == (size_t)-1) {
        if (json_array_size(c->subs) >= SUBS_MAX) {
            finish(r, NULL, "too_many", "MCP server '%s': at most %d resources can be subscribed to at once", c->name,
                   SUBS_MAX);
            return;
        }
        if ((!c->subs && !(c->subs = json_array())) || json_array_append_new(c->subs, json_string(uri))) {
            finish(r, NULL, "oom", "out of memory");
            return;
        }
    } else if (!sub && at != (size_t)-1) json_array_remove(c->subs, at);
    json_t *ok = json_object();
    finish_result(r, ok);
    json_decref(ok);
    listen_reconcile(c);
}

static void http_listen_now(void *arg) {
    http_client *c = arg;
    c->listen_wanted = true;
    if (c->ready) listen_start(c);
    else if (!c->closing) start_init(c);
    pthread_mutex_lock(&c->mu);
    c->nreqs--; /* the post's */
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static void http_listen(void *impl) {
    http_client *c = impl;
    pthread_mutex_lock(&c->mu);
    c->nreqs++;
    pthread_mutex_unlock(&c->mu);
    if (mcp_loop_post(c->loop, http_listen_now, c)) return;
    pthread_mutex_lock(&c->mu);
    c->nreqs--;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static void http_set_notify(void *impl, mcp_client_notify_fn fn, void *user) {
    http_client *c = impl;
    mcp_client_hooks_set_notify(&c->hooks, &c->mu, fn, user);
}

/* Deadline or cancel flag (loop thread): the call ends now; one on the wire is abandoned
 * and the server told with notifications/cancelled. */
static void hreq_expire(mcp_pending *p, const char *why) {
    hreq *r = (hreq *)p;
    http_client *c = r->c;
    if (r->state == HS_DONE) return;
    bool sent = r->state == HS_FLIGHT || r->state == HS_RESUME;
    if (r->state == HS_FLIGHT) land(r);
    if (r->state == HS_WAITING || r->state == HS_RESUME || r->state == HS_DISCOVER) unlink_req(r);
    bool timeout = !strcmp(why, "timeout");
    if (sent && r->kind == HR_CALL && !c->modern) { /* stateless: the closed answer says it */
        json_t *params = json_pack("{s:I, s:s}", "requestId", (json_int_t)r->id, "reason", why);
        fire(c, "notifications/cancelled", params);
        json_decref(params);
    }
    if (timeout && r->raw) finish(r, NULL, "timeout", "%s did not answer in time", c->name);
    else if (timeout) finish(r, NULL, "timeout", "MCP error -32001: Request timed out");
    else finish(r, NULL, "cancelled", "Execution cancelled");
}

static void http_set_request_handler(void *impl, json_t *caps, mcp_client_server_request_fn fn, void *user) {
    http_client *c = impl;
    mcp_client_hooks_set_request_handler(&c->hooks, &c->mu, caps, fn, user);
}

/* A call whose server requests go to its own handler (mcp_client_call_tool_start_relay). */
static void http_start_relay(void *impl, const char *method, json_t *params, int timeout_ms, atomic_int *cancel,
                             const mcp_call_relay *relay, mcp_client_done_fn done, void *user) {
    http_client *c = impl;
    hreq *r = hreq_new(c, HR_CALL, method, params, timeout_ms > 0 ? timeout_ms : c->timeout_ms, cancel, done, user);
    if (!r) {
        mcp_client_done_oom(done, user);
        return;
    }
    if (relay) r->relay = *relay, relay_tab_add(r, params);
    mcp_loop_watch(c->loop, &r->p);
    mcp_pending_ref(&r->p);
    /* out of memory for the post: the watched deadline still ends the call */
    if (!mcp_loop_post(c->loop, submit, r)) mcp_pending_unref(&r->p);
}

static void http_start(void *impl, const char *method, json_t *params, int timeout_ms, atomic_int *cancel,
                       mcp_client_done_fn done, void *user) {
    http_start_relay(impl, method, params, timeout_ms, cancel, NULL, done, user);
}

static char *http_stderr_tail(void *impl) { return strdup(""); }

static int http_start_count(void *impl) { return atomic_load_explicit(&((http_client *)impl)->starts, memory_order_relaxed); }

/* Loop thread: end every exchange of the client. */
static void close_all(void *arg) {
    http_client *c = arg;
    c->closing = true;
    listen_stop(c);
    session_settled(c, "client is closing");
    while (c->disc_waiting) { /* (their server/discover, in flight, ends below) */
        hreq *r = c->disc_waiting;
        unlink_req(r);
        finish(r, NULL, "transport", "client is closing");
    }
    while (c->flight) {
        hreq *r = c->flight;
        land(r);
        finish(r, NULL, "transport", "client is closing");
    }
    while (c->resuming) { /* their timers find them done */
        hreq *r = c->resuming;
        unlink_req(r);
        finish(r, NULL, "transport", "client is closing");
    }
    pthread_mutex_lock(&c->mu);
    c->nreqs--; /* the close itself */
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static void client_release(http_client *c);

/* Ends the session politely (DELETE, short timeout) and frees the client. */
static void http_destroy(void *impl) {
    http_client *c = impl;
    if (c->loop) {
        pthread_mutex_lock(&c->mu);
        c->nreqs++;
        pthread_mutex_unlock(&c->mu);
        if (!mcp_loop_post(c->loop, close_all, c)) {
            pthread_mutex_lock(&c->mu);
            c->nreqs--;
            pthread_mutex_unlock(&c->mu);
        }
        pthread_mutex_lock(&c->mu);
        while (c->nreqs > 0) pthread_cond_wait(&c->cv, &c->mu);
        pthread_mutex_unlock(&c->mu);
    }
    if (c->session) {
        CURL *h = curl_easy_init();
        if (h) {
            char line[512];
            snprintf(line, sizeof line, "Mcp-Session-Id: %s", c->session);
            struct curl_slist *hd = curl_slist_append(NULL, line);
            hd = auth_headers(c, "DELETE", hd);
            hreq probe = {.c = c};
            curl_easy_setopt(h, CURLOPT_URL, c->url);
            curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
            curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L); /* as every exchange: the policy checked this URL only */
            curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
            curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 1000L);
            curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
            curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, on_opensocket);
            curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, &probe);
            curl_easy_setopt(h, CURLOPT_PROXY, ""); /* no proxy from the environment: the policy checks real targets */
            curl_easy_perform(h);
            curl_slist_free_all(hd);
            curl_easy_cleanup(h);
        }
    }
    client_release(c);
}

/* What a client holds, freed: every exchange of it has ended. */
static void client_release(http_client *c) {
    if (c->auth.impl) c->auth.destroy(c->auth.impl); /* every challenge ended with its request */
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    for (char **p = c->headers; p && *p; p++) free(*p);
    free(c->headers);
    free(c->name);
    free(c->url);
    free(c->owner);
    free(c->session);
    free(c->protocol);
    mcp_client_hooks_clear(&c->hooks);
    json_decref(c->server_caps);
    json_decref(c->tool_headers);
    json_decref(c->subs);
    free(c);
}

/* The auth provider factory the context's owner installed (once, before clients start). */
void mcp_http_set_auth_factory(mcp_downstream *d, mcp_auth_factory_fn fn, void *user) {
    atomic_store(&d->http->auth_user, user);
    atomic_store(&d->http->auth_factory, fn);
}

/* See mcp.h. */
bool mcp_auth_for_caller(const json_t *auth) {
    const char *type = json_string_value(json_object_get(auth, "type"));
    const char *subject = json_string_value(json_object_get(auth, "subject"));
    if (!type) return false;
    return !strcmp(type, "token_exchange") || (!strcmp(type, "id_jag") && subject && !strcmp(subject, "caller"));
}

static bool auth_attach(http_client *c, const mcp_server_config *cfg, gg_error *err) {
    if (!cfg->auth) return true;
    mcp_auth_factory_fn fn = atomic_load(&c->ds->auth_factory);
    if (!fn) {
        gg_error_set(err, "invalid_config", "MCP server '%s': auth settings are not supported here", c->name);
        return false;
    }
    return fn(atomic_load(&c->ds->auth_user), cfg->auth, cfg->url, c->name, cfg->owner, cfg->principal, c->policy,
              &c->auth, err);
}

/* The caller's token for the provider to exchange (mcp_auth_provider.subject). */
static void http_auth_subject(void *impl, const char *token) {
    http_client *c = impl;
    if (c->auth.impl && c->auth.subject) c->auth.subject(c->auth.impl, token);
}

/* See mcp_client_server_declares: the session era learns them from initialize (any request
 * starts one), the stateless era from server/discover. */
static mcp_declares http_server_declares(void *impl, const char *path, const char **probe) {
    http_client *c = impl;
    *probe = c->modern ? "server/discover" : "ping";
    pthread_mutex_lock(&c->mu);
    mcp_declares d = mcp_client_caps_declare(c->server_caps, path);
    pthread_mutex_unlock(&c->mu);
    return d;
}

static const mcp_client_ops http_ops = {http_start,      http_stderr_tail, http_start_count,        http_destroy,
                                        http_set_notify, http_listen,      http_set_request_handler,
                                        http_start_relay, http_auth_subject, http_server_declares};

/* A copy of "Name: value" lines (NULL-terminated; NULL: none), NULL when out of memory. */
static char **lines_copy(const char *const *lines) {
    size_t n = 0;
    for (const char *const *p = lines; p && *p; p++) n++;
    char **out = calloc(n + 1, sizeof *out);
    for (size_t i = 0; out && i < n; i++)
        if (!(out[i] = strdup(lines[i]))) {
            while (i > 0) free(out[--i]);
            free(out);
            out = NULL;
        }
    return out;
}

/* The streamable HTTP transport: checks the URL against the policy; the session starts
 * with the first request. */
void *mcp_http_new(const mcp_server_config *cfg, const mcp_client_policy *policy, const mcp_client_ops **ops,
                   gg_error *err) {
    if (!cfg->url || (strncasecmp(cfg->url, "http://", 7) && strncasecmp(cfg->url, "https://", 8))) {
        gg_error_set(err, "invalid_config", "streamable HTTP MCP server needs an http(s) url");
        return NULL;
    }
    if (cfg->protocol && !mcp_version_is_modern(cfg->protocol) && strcmp(cfg->protocol, MCP_CLIENT_PROTOCOL_VERSION)) {
        gg_error_set(err, "invalid_config", "MCP protocol version '%.32s' is not one this client speaks (%s, %s)",
                     cfg->protocol, MCP_CLIENT_PROTOCOL_VERSION, MCP_VERSION_MODERN);
        return NULL;
    }
    if (!mcp_policy_check_url(policy, cfg->url, err)) return NULL;
    http_client *c = calloc(1, sizeof *c);
    if (!c) {
        gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    c->loop = mcp_loop_shared();
    c->policy = policy;
    c->ds = cfg->downstream->http;
    c->retry_ms = -1;
    c->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : MCP_CLIENT_DEFAULT_TIMEOUT_MS;
    limits_get(c->ds, &c->max_message, &c->max_parse);
    c->name = strdup(cfg->name ? cfg->name : cfg->url);
    c->url = strdup(cfg->url);
    if (cfg->owner && !(c->owner = strdup(cfg->owner))) {
        http_destroy(c);
        gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    c->headers = lines_copy(cfg->headers);
    bool ok = c->loop && c->name && c->url && c->headers;
    if (ok && cfg->protocol && mcp_version_is_modern(cfg->protocol)) { /* stateless: ready at once, no session */
        c->modern = c->ready = true;
        ok = (c->protocol = strdup(cfg->protocol)) && (c->tool_headers = json_object());
    }
    if (!ok) {
        http_destroy(c);
        gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    if (!auth_attach(c, cfg, err)) {
        c->auth.impl = NULL;
        http_destroy(c);
        return NULL;
    }
    *ops = &http_ops;
    return c;
}

/* ---- raw pass-through (mcp_http_raw_start) ------------------------------------------------
 * A POST its caller built whole goes through the same exchange as every MCP request above —
 * launch, on_header, on_body, on_done, hreq_expire: the deadline and cancel flag on the loop,
 * the size bound and owner charge, the policy's connect check, no proxy, no redirects — with
 * a client of its own (no session, ready at once; the caller's name for messages, the URL,
 * the header lines) that lives as long as the request and is freed with it (raw_destroy). What
 * differs is at the edges: only the caller's header lines go (launch), the body's length is
 * as given, and the answer is not read as JSON-RPC but kept as bytes, or handed on as it
 * comes when it is an event stream the caller takes (raw_body), with its status,
 * Content-Type and a valid Retry-After (raw_header); the errors carry the codes mcp.h names
 * (raw_ended). A cancelled request is landed, which closes its connection: the other end
 * sees its client go, as it would a client of its own. */

/* A Retry-After worth handing on (RFC 9110 section 10.2.3): delay-seconds up to
 * MCP_HTTP_RETRY_AFTER_MAX, or an IMF-fixdate (the one date form a sender may generate). */
static bool retry_after_valid(const char *v, size_t n) {
    char buf[32];
    if (!n || n >= sizeof buf) return false;
    memcpy(buf, v, n);
    buf[n] = '\0';
    if (strspn(buf, "0123456789") == n) return n <= 6 && strtol(buf, NULL, 10) <= MCP_HTTP_RETRY_AFTER_MAX;
    struct tm tm;
    const char *end = n == 29 ? strptime(buf, "%a, %d %b %Y %H:%M:%S GMT", &tm) : NULL;
    return end && !*end;
}

/* One header line of a raw answer: what the caller may hand on. */
static void raw_header(hreq *x, const char *buf, size_t n) {
    raw_req *q = x->raw;
    size_t vl;
    const char *v;
    if (n > 5 && !strncmp(buf, "HTTP/", 5)) { /* a new head (after a 1xx): what an earlier one said goes */
        q->content_type[0] = q->retry_after[0] = '\0';
    } else if ((v = header_value(buf, n, "content-type:", &vl))) {
        bool ok = vl < sizeof q->content_type;
        for (size_t i = 0; ok && i < vl; i++) ok = (unsigned char)v[i] >= ' ' && v[i] != 0x7f;
        snprintf(q->content_type, sizeof q->content_type, "%.*s", ok ? (int)vl : 0, v);
    } else if ((v = header_value(buf, n, "retry-after:", &vl))) {
        snprintf(q->retry_after, sizeof q->retry_after, "%.*s", retry_after_valid(v, vl) ? (int)vl : 0, v);
    }
}

/* What the answer's head said (no body). */
static mcp_http_answer raw_head(const hreq *x) {
    const raw_req *q = x->raw;
    mcp_http_answer a = {q->status, q->content_type[0] ? q->content_type : NULL, q->retry_after[0] ? q->retry_after : NULL,
                         NULL, 0};
    return a;
}

/* A raw answer's bytes: handed on as they come when the caller takes its event stream, else
 * kept (bounded at max_message, charged to the owner). 0 aborts the transfer. */
static size_t raw_body(hreq *x, const char *ptr, size_t n) {
    raw_req *q = x->raw;
    if (!q->started) {
        q->started = true;
        curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &q->status);
        mcp_http_answer head = raw_head(x);
        q->streaming = q->stream && x->sse && q->stream(q->user, &head, NULL, 0);
    }
    if (q->streaming) { /* the taker bounds what it queues: false stops the transfer */
        if (q->stream(q->user, NULL, ptr, n)) return n;
        q->stopped = true;
        return 0;
    }
    if (!body_append(x, ptr, n)) return 0;
    if (account(x)) return n;
    q->fail_code = "too_large"; /* the owner's tenants.max_downstream_bytes (r->fail says so) */
    return 0;
}

/* The transfer ended (loop thread): answered, or why not — curl's words name a failure,
 * never the URL. */
static void raw_ended(hreq *r, CURLcode rc, long status) {
    raw_req *q = r->raw;
    const char *name = r->c->name;
    q->status = status;
    if (rc == CURLE_OK) finish_result(r, NULL);
    else if (q->stopped) finish(r, NULL, "cancelled", "the caller took no more of %s's answer", name);
    else if (r->fail[0]) finish(r, NULL, q->fail_code ? q->fail_code : "unavailable", "%s", r->fail);
    else if (rc == CURLE_OPERATION_TIMEDOUT) finish(r, NULL, "timeout", "%s did not answer in time", name);
    else if (r->refused_by_policy) finish(r, NULL, "policy", "cannot connect to %s: " POLICY_REFUSED, name);
    else finish(r, NULL, "unavailable", "%s cannot be reached (%s)", name, curl_easy_strerror(rc));
}

/* mcp_pending.done: the caller's done with the answer (its body NUL-terminated). */
static void raw_answered(void *user, json_t *result, gg_error *err) {
    (void)result;
    hreq *r = user;
    raw_req *q = r->raw;
    mcp_http_answer a = raw_head(r);
    bool ok = !err || !gg_error_is_set(err);
    if (ok && !q->streaming && !gg_strbuf_putc(&r->resp, '\0')) {
        gg_error e = GG_ERROR_INIT;
        gg_error_set(&e, "oom", "out of memory");
        q->done(q->user, &a, &e);
        gg_error_clear(&e);
        return;
    }
    if (ok && !q->streaming) a.body = r->resp.data, a.len = r->resp.len - 1;
    q->done(q->user, &a, ok ? NULL : err);
}

/* The request's client goes with it. */
static void raw_destroy(mcp_pending *p) {
    http_client *c = ((hreq *)p)->c;
    hreq_destroy(p);
    client_release(c);
}

/* The request's own client: no session (ready at once), no credentials. */
static http_client *raw_client(const mcp_http_raw *rq) {
    http_client *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    c->loop = mcp_loop_shared();
    c->policy = rq->policy;
    c->retry_ms = -1;
    c->ready = true;
    c->timeout_ms = rq->timeout_ms > 0 ? rq->timeout_ms : MCP_CLIENT_DEFAULT_TIMEOUT_MS;
    limits_get(rq->downstream ? rq->downstream->http : NULL, &c->max_message, &c->max_parse);
    if (rq->max_bytes) c->max_message = rq->max_bytes;
    c->name = strdup(rq->name ? rq->name : "the server");
    c->url = strdup(rq->url ? rq->url : "");
    c->headers = lines_copy(rq->headers);
    if (c->loop && c->name && c->url && c->headers && (!rq->owner || (c->owner = strdup(rq->owner)))) return c;
    client_release(c);
    return NULL;
}

/* See mcp.h. */
void mcp_http_raw_start(const mcp_http_raw *rq) {
    http_client *c = raw_client(rq);
    hreq *r = c ? hreq_new(c, HR_RAW, NULL, NULL, c->timeout_ms, rq->cancel, raw_answered, NULL) : NULL;
    if (c && !r) client_release(c);
    if (r) {
        r->p.destroy = raw_destroy;
        r->p.user = r;
        r->raw = calloc(1, sizeof *r->raw);
        r->body = r->raw ? malloc(rq->len + 1) : NULL;
    }
    if (!r || !r->body) {
        if (r) mcp_pending_unref(&r->p);
        mcp_http_answer none = {0, NULL, NULL, NULL, 0};
        gg_error e = GG_ERROR_INIT;
        gg_error_set(&e, "oom", "out of memory");
        rq->done(rq->user, &none, &e);
        gg_error_clear(&e);
        return;
    }
    if (rq->len) memcpy(r->body, rq->body, rq->len);
    r->body[rq->len] = '\0';
    raw_req *q = r->raw;
    q->len = rq->len;
    q->stream = rq->stream;
    q->done = rq->done;
    q->user = rq->user;
    mcp_loop_watch(c->loop, &r->p);
    mcp_pending_ref(&r->p);
    /* out of memory for the post: the watched deadline still ends it */
    if (!mcp_loop_post(c->loop, submit, r)) mcp_pending_unref(&r->p);
}
