/* streams.c — the standalone server-to-client SSE stream of the MCP streamable HTTP
 * transport (GET on an MCP endpoint, spec 2025-11-25 "Listening for Messages from the
 * Server").
 *
 * A GET with a valid Mcp-Session-Id and Accept: text/event-stream answers 200
 * text/event-stream and stays open. The server-initiated messages are
 * notifications/tools/list_changed (with resources/ and prompts/list_changed and
 * resources/updated for the session's subscriptions when the version declares resources
 * or prompts): when a new version of a graph becomes active (admin
 * PUT, rollback, a CLI change picked up by the store sync, a remounted provider), every
 * session with an open stream on that endpoint gets it once — on its newest live stream,
 * never on several streams of the same session (the spec forbids broadcasting one message
 * across a session's streams). Deleting the graph, its tenant or the session, the session
 * expiring, and server shutdown end the streams.
 *
 * A keeper thread wakes every GW_STREAM_TICK_MS: it ends streams whose client went away
 * (the HTTP core marks them abandoned once a write fails), ends expired sessions' streams,
 * sends a ": ping" comment every GW_STREAM_PING_MS so proxies keep idle streams open (and
 * so dead clients are found), and as soon as shutdown begins (app->stopping) ends every
 * stream (after a "retry:" reconnection delay) so the graceful stop never waits on them.
 *
 * Bounds: GW_STREAMS_PER_SESSION per session (more → 409), tenants.max_streams per tenant
 * (the endpoint's tenant, or the key's on a mount; none for a mount on the internal
 * listener; more → 429 with Retry-After, so one tenant cannot hold every slot),
 * GW_STREAMS_MAX in all (more → 503 with Retry-After).
 *
 * Resumability (spec 2025-11-25 "Resumability and Redelivery"): each stream of a session
 * has a number and every event an id "<stream>-<seq>", seq counting per session (so ids
 * are unique within it); a 2025-11-25 client first gets a priming event (an id, empty
 * data). The last GW_REPLAY_EVENTS events written on a session's streams stay in a log
 * (kept while the session lives, even with no stream open; an event due while the session
 * has none is logged on its last stream). A GET with Last-Event-ID "<k>-<s>" resumes
 * stream k: the events of k after s are replayed, then it carries on (an older connection
 * still holding k is ended). An id this session never issued → 400. An id older than the
 * log (events after it were dropped) → a fresh stream that starts with the list_changed
 * notifications, so the client lists again (all this stream carries are change signals).
 *
 * A proxied resource's notifications/resources/updated from its downstream
 * (gw_streams_updated) goes to each session of the graph subscribed to the URI, at most one
 * per (session, URI) every GW_UPDATED_MIN_MS: more within it fold into one trailing update
 * the keeper sends on its first pass after the interval.
 *
 * Locking: one mutex (mu) guards the table; the HTTP core's own lock is taken inside it
 * (gg_http_async_* calls), never the other way round.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <sodium.h>

#include "gateway/authz.h"
#include "gateway/internal.h"
#include "gateway/relay.h"

#define BUCKETS 64
#define SESSION_HEADER "Mcp-Session-Id"
#define VERSION_HEADER "MCP-Protocol-Version"

static const char LIST_CHANGED[] = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}";
static const char PING[] = ": ping\n\n";
/* Sent before the streams end at shutdown: the SSE reconnection delay, so clients (the SDK
 * reconnects its GET stream by itself) come back once a restarted server listens again. */
static const char RETRY[] = "retry: 3000\n\n";

/* One logged event: its stream, its seq and its data. */
typedef struct revent {
    unsigned long long stream;
    unsigned long long seq;
    char *data;
} revent;

/* The open streams of one session; streams[n-1] is the newest. */
typedef struct ssess {
    uint8_t nonce[16];
    char tenant[GG_NAME_MAX + 1], graph[GG_NAME_MAX + 1];
    char owner[GG_NAME_MAX + 1]; /* the tenant whose per-tenant bound the streams count in */
    int64_t expires; /* unix seconds */
    gg_http_async *streams[GW_STREAMS_PER_SESSION];
    unsigned long long no[GW_STREAMS_PER_SESSION]; /* each open stream's number */
    int n;
    mcp_server *srv; /* the newest version announced: held so the graph cache keeps it */
    unsigned long long first_no; /* stream numbers are global: the first this entry issued */
    unsigned long long last_no;  /* the newest stream that ended (0: none) */
    unsigned long long seq;      /* the last event seq issued */
    unsigned long long dropped;  /* the highest seq dropped from the log */
    revent log[GW_REPLAY_EVENTS]; /* a ring: log_n entries ending at log_end - 1 */
    int log_n, log_end;
    bool gone;                   /* graph/tenant removed: free with its log */
    struct supd *upd;            /* proxied resources/updated sent lately (gw_streams_updated), or NULL */
    struct ssess *next;
} ssess;

/* One URI's relayed resources/updated on a session: when the last went out, and whether
 * one more came within GW_UPDATED_MIN_MS (sent by the keeper once the interval is over). */
typedef struct supd {
    char *uri; /* NULL: a free slot */
    double at;
    bool pending;
} supd;

/* A POST's SSE stream made resumable (a tools/call of a 2025-11-25 session): the run's
 * events and its final response, each with an id "<no>-<seq>", reach the connection that
 * holds the stream now — the POST itself, or a GET that resumed it with Last-Event-ID —
 * and are logged (the last GW_POST_EVENTS; the final response apart, never dropped) for
 * the next resume. The run never waits on a connection: with none open, events are only
 * logged. */
struct gw_pstream {
    uint8_t nonce[16];
    char tenant[64];   /* counted in tenants.max_resumable_streams */
    unsigned long long no, seq, dropped;
    revent log[GW_POST_EVENTS]; /* a ring, as ssess's */
    int log_n, log_end;
    gg_http_async *a;  /* the connection holding the stream now, NULL = none */
    bool is_post;      /* a is the POST (its 200 may not have started: streaming) */
    bool streaming;    /* a's SSE headers and priming event went out */
    bool job;          /* the run still holds this (until gw_pstream_finish) */
    atomic_int *cancel; /* the run's cancel flag, valid while job */
    double orphan_at_ms; /* monotonic: the client dropped its connection; no resume by then
                            cancels the run (0 = not dropped) */
    char *final;       /* the final response once the run ended and nobody took it */
    unsigned long long final_seq;
    double close_at_ms; /* monotonic: end the POST early (retry hint) then; 0 = never */
    double keep_until_ms; /* monotonic: after the run ended, how long a resume may come */
    struct gw_pstream *next;
};

struct gw_streams {
    gg_gateway *gw;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC */
    ssess *buckets[BUCKETS];
    size_t open, entries;
    unsigned long long next_no; /* stream numbers issued (global, so a session entry that was
                                   freed and made again never repeats an id) */
    bool stop, thread_started;
    pthread_t thread;
    double next_ping_ms;
    gw_pstream *posts; /* resumable POST streams */
    size_t nposts;
    /* counters for /metrics (under mu) */
    unsigned long long opened, notified, refused, refused_tenant, post_closed, post_resumed;
    unsigned long long post_refused_full, post_refused_tenant;
};

static size_t bucket_of(const uint8_t nonce[16]) {
    return ((size_t)nonce[0] | (size_t)nonce[1] << 8) % BUCKETS;
}

/* A JSON-RPC error (no id) as the body of a non-200 answer. */
static int rpc_error(gg_http_res *res, int status, int code, const char *msg) {
    char *body = mcp_jsonrpc_error(NULL, code, msg, NULL);
    if (body) gg_http_res_bytes_take(res, status, "application/json", body, strlen(body));
    else gg_http_res_fail(res, "internal_error", "out of memory");
    return GG_HTTP_DONE;
}

/* ------------------------------------------------------------------ table (under mu) */

static ssess *find_session(gw_streams *s, const uint8_t nonce[16], ssess ***link) {
    ssess **pp = &s->buckets[bucket_of(nonce)];
    for (; *pp; pp = &(*pp)->next)
        if (memcmp((*pp)->nonce, nonce, 16) == 0) break;
    if (link) *link = pp;
    return *pp;
}

/* End stream i of ss (the HTTP core sends the end of the chunked body). */
static void end_stream(gw_streams *s, ssess *ss, int i) {
    gg_http_async_complete(ss->streams[i]);
    ss->last_no = ss->no[i];
    memmove(&ss->streams[i], &ss->streams[i + 1], (size_t)(ss->n - i - 1) * sizeof ss->streams[0]);
    memmove(&ss->no[i], &ss->no[i + 1], (size_t)(ss->n - i - 1) * sizeof ss->no[0]);
    ss->n--;
    s->open--;
    mcp_session_busy(s->gw->sessions, ss->nonce, -1); /* the session may be idle from now */
}

/* The event rings (a session's, a POST stream's): n entries ending at end - 1, the
 * highest seq pushed out in *dropped. */
static void ring_clear(revent *log, int cap, int *n) {
    for (int i = 0; i < cap; i++) {
        free(log[i].data);
        log[i].data = NULL;
    }
    *n = 0;
}

/* Keep data as event seq of stream no (the oldest goes when the ring is full). */
static void ring_add(revent *log, int cap, int *n, int *end, unsigned long long *dropped, unsigned long long no,
                     unsigned long long seq, const char *data) {
    char *copy = strdup(data);
    if (!copy) { /* cannot keep it: a resume from before it must not pretend it saw all */
        *dropped = seq;
        return;
    }
    revent *e = &log[*end];
    if (*n == cap) {
        *dropped = e->seq;
        free(e->data);
    } else (*n)++;
    *e = (revent){no, seq, copy};
    *end = (*end + 1) % cap;
}

/* Send a's events of stream no after seq, oldest first. */
static void ring_replay(gg_http_async *a, const revent *log, int cap, int n, int end, unsigned long long no,
                        unsigned long long seq) {
    for (int k = 0; k < n; k++) {
        const revent *e = &log[(end - n + k + cap) % cap];
        if (e->stream != no || e->seq <= seq) continue;
        char id[48];
        snprintf(id, sizeof id, "%llu-%llu", no, e->seq);
        gg_http_sse_event(a, "message", id, e->data);
    }
}

static void log_clear(ssess *ss) { ring_clear(ss->log, GW_REPLAY_EVENTS, &ss->log_n); }

static void log_add(ssess *ss, unsigned long long no, unsigned long long seq, const char *data) {
    ring_add(ss->log, GW_REPLAY_EVENTS, &ss->log_n, &ss->log_end, &ss->dropped, no, seq, data);
}

/* One event on stream i (or, i < 0, logged on the session's last stream for a resume):
 * false when the stream did not take it. */
static bool send_event(ssess *ss, int i, const char *data) {
    unsigned long long no = i >= 0 ? ss->no[i] : ss->last_no;
    if (!no) return false;
    char id[48];
    snprintf(id, sizeof id, "%llu-%llu", no, ss->seq + 1);
    if (i >= 0 && !gg_http_sse_event(ss->streams[i], "message", id, data)) return false;
    ss->seq++;
    log_add(ss, no, ss->seq, data);
    return true;
}

static void end_all_of(gw_streams *s, ssess *ss) {
    while (ss->n > 0) end_stream(s, ss, ss->n - 1);
}

static void free_ssess(ssess *ss) {
    /* under mu: the registry (or the mount) normally still holds this version, so this is
     * rarely the last reference; a version replaced meanwhile was swapped out by
     * gw_streams_tools_changed, which releases it outside the lock */
    log_clear(ss);
    mcp_server_unref(ss->srv);
    for (int i = 0; ss->upd && i < GW_UPDATED_PER_SESSION; i++) free(ss->upd[i].uri);
    free(ss->upd);
    free(ss);
}

/* Unlink and free every session entry left without streams whose log is of no use (empty,
 * its graph gone, its session expired). Entries kept only for their log are bounded by
 * GW_REPLAY_SESSIONS: past it every such log goes (a later resume is then "too old"). */
static void prune(gw_streams *s) {
    int64_t now = (int64_t)time(NULL);
    bool over = s->entries > GW_REPLAY_SESSIONS;
    for (size_t b = 0; b < BUCKETS; b++)
        for (ssess **pp = &s->buckets[b]; *pp;) {
            ssess *ss = *pp;
            if (ss->n == 0 && (over || ss->log_n == 0 || ss->gone || ss->expires <= now)) {
                *pp = ss->next;
                free_ssess(ss);
                s->entries--;
            } else pp = &ss->next;
        }
}

static void notify_extras(gw_streams *s, ssess *ss, int i, mcp_server *srv) {
    if (mcp_server_has_resources(srv)) {
        send_event(ss, i, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/list_changed\"}");
        mcp_session key = {0};
        memcpy(key.nonce, ss->nonce, sizeof key.nonce);
        json_t *subs = mcp_session_subscriptions(s->gw->sessions, &key), *u;
        size_t k;
        json_array_foreach(subs, k, u) {
            if (!mcp_server_serves_uri(srv, json_string_value(u))) continue;
            json_t *p = json_pack("{s:O}", "uri", u);
            char *msg = p ? mcp_jsonrpc_notification("notifications/resources/updated", p) : NULL;
            if (msg) send_event(ss, i, msg);
            free(msg);
            json_decref(p);
        }
        json_decref(subs);
    }
    if (mcp_server_has_prompts(srv))
        send_event(ss, i, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/prompts/list_changed\"}");
}

/* Send LIST_CHANGED once for this session: on the newest stream that takes it; then, for
 * a version offering them, resources/prompts list_changed and resources/updated for each
 * URI the session subscribed to that the version serves (srv may be NULL). */
static bool notify_session(gw_streams *s, ssess *ss, mcp_server *srv) {
    while (ss->n > 0) {
        int i = ss->n - 1;
        if (send_event(ss, i, LIST_CHANGED)) {
            s->notified++;
            if (srv) notify_extras(s, ss, i, srv);
            return true;
        }
        end_stream(s, ss, i); /* client gone or not reading: this stream is dead */
    }
    /* none open (the client is reconnecting): keep them for its resume of the last one */
    if (!send_event(ss, -1, LIST_CHANGED)) return false;
    if (srv) notify_extras(s, ss, -1, srv);
    return true;
}

/* Streams open for owner (a walk of the table: it holds at most GW_STREAMS_MAX streams). */
static size_t owner_streams(const gw_streams *s, const char *owner) {
    size_t n = 0;
    for (size_t b = 0; b < BUCKETS; b++)
        for (const ssess *ss = s->buckets[b]; ss; ss = ss->next)
            if (strcmp(ss->owner, owner) == 0) n += (size_t)ss->n;
    return n;
}

static bool same_endpoint(const ssess *ss, const char *tenant, const char *graph) {
    return strcmp(ss->tenant, tenant) == 0 && strcmp(ss->graph, graph) == 0;
}

/* ------------------------------------------------------------------ POST streams (under mu) */

static void ps_free(gw_pstream *ps) {
    ring_clear(ps->log, GW_POST_EVENTS, &ps->log_n);
    free(ps->final);
    free(ps);
}

/* End the connection holding ps, if any (the run, if still going, is not affected). */
static void ps_drop(gw_pstream *ps) {
    if (ps->a) gg_http_async_complete(ps->a);
    ps->a = NULL;
}

/* The POST's SSE response starts: headers, then the priming event (an id, empty data) the
 * client resumes from if the stream ends before anything else came. */
static bool ps_begin(gw_pstream *ps) {
    if (ps->streaming) return true;
    if (!gg_http_async_stream(ps->a, 200, "text/event-stream")) return false;
    ps->streaming = true;
    char id[48];
    snprintf(id, sizeof id, "%llu-%llu", ps->no, ++ps->seq);
    gg_http_sse_event(ps->a, NULL, id, "");
    return true;
}

/* Event seq of ps to its connection (a dead one is ended: the client resumes later). */
static void ps_deliver(gw_pstream *ps, unsigned long long seq, const char *data) {
    if (!ps->a) return;
    char id[48];
    snprintf(id, sizeof id, "%llu-%llu", ps->no, seq);
    if (!(ps->is_post ? ps_begin(ps) : true) || !gg_http_sse_event(ps->a, "message", id, data)) ps_drop(ps);
}

static void ps_unlink(gw_streams *s, gw_pstream *ps) {
    for (gw_pstream **pp = &s->posts; *pp; pp = &(*pp)->next)
        if (*pp == ps) {
            *pp = ps->next;
            s->nposts--;
            return;
        }
}

/* The POST is ended early: priming (if nothing went yet), the reconnection delay, end. */
static void ps_close_early(gw_streams *s, gw_pstream *ps) {
    static const char hint[] = "retry: " GW_POST_RETRY_MS_S "\n\n";
    if (ps_begin(ps)) gg_http_async_write(ps->a, hint, sizeof hint - 1);
    ps_drop(ps);
    s->post_closed++;
}

/* The keeper's pass over the POST streams: end abandoned connections (cancelling a run
 * whose client does not resume in time), end POSTs due for an
 * early close (not while stopping: the cancelled runs answer on them), free streams whose
 * run ended and that were delivered or waited for a resume long enough. */
static void keep_posts(gw_streams *s, double now, bool stopping) {
    for (gw_pstream **pp = &s->posts; *pp;) {
        gw_pstream *ps = *pp;
        if (ps->a && gg_http_async_abandoned(ps->a)) {
            /* the client dropped it: a POST before any event id went out can never be
             * resumed, so its run stops now; otherwise the client gets GW_POST_GRACE_MS to
             * come back (a disconnection is not a cancellation, an abandoned run is) */
            if (ps->job) ps->orphan_at_ms = ps->is_post && !ps->streaming ? now : now + GW_POST_GRACE_MS;
            ps_drop(ps);
        }
        if (ps->job && ps->orphan_at_ms > 0 && now >= ps->orphan_at_ms) {
            atomic_store_explicit(ps->cancel, 1, memory_order_relaxed);
            ps->orphan_at_ms = 0;
        }
        if (ps->a && ps->is_post && !stopping && ps->close_at_ms > 0 && now >= ps->close_at_ms) ps_close_early(s, ps);
        if (!ps->job && !ps->a && now >= ps->keep_until_ms) {
            *pp = ps->next;
            s->nposts--;
            ps_free(ps);
        } else pp = &ps->next;
    }
}

/* Resume POST stream k of this session from seq q on the GET req: -1 when k is no POST
 * stream of the session (the caller goes on), else the handler's answer. */
static int resume_post(gw_streams *s, gg_http_req *req, gg_http_res *res, const mcp_session *sess, const char *h) {
    char *end;
    if (!h || *h < '0' || *h > '9') return -1;
    unsigned long long k = strtoull(h, &end, 10), q;
    if (*end != '-' || end[1] < '0' || end[1] > '9') return -1;
    q = strtoull(end + 1, &end, 10);
    if (*end) return -1;
    pthread_mutex_lock(&s->mu);
    gw_pstream *ps = s->posts;
    while (ps && !(ps->no == k && memcmp(ps->nonce, sess->nonce, 16) == 0)) ps = ps->next;
    if (!ps) {
        pthread_mutex_unlock(&s->mu);
        return -1;
    }
    if (q > ps->seq) {
        pthread_mutex_unlock(&s->mu);
        return rpc_error(res, 400, MCP_INVALID_REQUEST, "Bad Request: unknown Last-Event-ID for this session");
    }
    gg_http_async *a = gg_http_defer(req);
    if (!a || !gg_http_async_stream(a, 200, "text/event-stream")) {
        if (a) gg_http_async_complete(a);
        pthread_mutex_unlock(&s->mu);
        if (a) return GG_HTTP_DEFERRED;
        return rpc_error(res, 500, MCP_INTERNAL_ERROR, "Internal error: out of memory");
    }
    ps_drop(ps); /* an older connection (the POST, an earlier resume) gives way */
    ps->a = a;
    ps->orphan_at_ms = 0;
    ps->is_post = false;
    s->post_resumed++;
    ring_replay(a, ps->log, GW_POST_EVENTS, ps->log_n, ps->log_end, ps->no, q);
    if (ps->final) { /* the run ended meanwhile: its response, then this stream is done */
        ps_deliver(ps, ps->final_seq, ps->final);
        ps_drop(ps);
        ps_unlink(s, ps);
        ps_free(ps);
    }
    pthread_mutex_unlock(&s->mu);
    return GG_HTTP_DEFERRED;
}

/* ------------------------------------------------------------------ proxied resources/updated (under mu) */

/* msg once to ss: its newest stream that takes it, else logged for its resume. */
static void deliver(gw_streams *s, ssess *ss, const char *msg) {
    bool sent = false;
    while (!sent && ss->n > 0) {
        sent = send_event(ss, ss->n - 1, msg);
        if (!sent) end_stream(s, ss, ss->n - 1);
    }
    if (!sent) send_event(ss, -1, msg);
}

static void send_updated(gw_streams *s, ssess *ss, supd *u, double now) {
    json_t *p = json_pack("{s:s}", "uri", u->uri);
    char *msg = p ? mcp_jsonrpc_notification("notifications/resources/updated", p) : NULL;
    if (msg) deliver(s, ss, msg);
    free(msg);
    json_decref(p);
    u->at = now;
    u->pending = false;
}

/* The keeper's pass: the trailing update of each URI whose interval is over. */
static void updated_trailing(gw_streams *s, ssess *ss, double now) {
    for (int i = 0; ss->upd && i < GW_UPDATED_PER_SESSION; i++)
        if (ss->upd[i].pending && now - ss->upd[i].at >= GW_UPDATED_MIN_MS) send_updated(s, ss, &ss->upd[i], now);
}

/* uri's slot on ss: its own, a free one, else the one idle longest (NULL: out of memory). */
static supd *upd_slot(ssess *ss, const char *uri) {
    if (!ss->upd && !(ss->upd = calloc(GW_UPDATED_PER_SESSION, sizeof *ss->upd))) return NULL;
    supd *free_slot = NULL, *idle = NULL; /* idle: not pending first, then the oldest */
    for (int i = 0; i < GW_UPDATED_PER_SESSION; i++) {
        supd *u = &ss->upd[i];
        if (u->uri && !strcmp(u->uri, uri)) return u;
        if (!u->uri) free_slot = free_slot ? free_slot : u;
        else if (!idle || (idle->pending && !u->pending) || (idle->pending == u->pending && u->at < idle->at)) idle = u;
    }
    supd *pick = free_slot ? free_slot : idle;
    char *copy = strdup(uri);
    if (!copy) return NULL;
    free(pick->uri);
    *pick = (supd){copy, 0, false};
    return pick;
}

static bool subscribed(gw_streams *s, const ssess *ss, const char *uri) {
    mcp_session key = {0};
    memcpy(key.nonce, ss->nonce, sizeof key.nonce);
    json_t *subs = mcp_session_subscriptions(s->gw->sessions, &key), *u;
    size_t k;
    bool yes = false;
    json_array_foreach(subs, k, u) yes = yes || !strcmp(json_string_value(u), uri);
    json_decref(subs);
    return yes;
}

/* See relay.h. */
size_t gw_streams_updated(gw_streams *s, const char *tenant, const char *graph, const char *uri) {
    size_t n = 0;
    if (!s) return 0;
    double now = gg_now_ms();
    pthread_mutex_lock(&s->mu);
    for (size_t b = 0; s->entries && b < BUCKETS; b++)
        for (ssess *ss = s->buckets[b]; ss; ss = ss->next) {
            if (ss->gone || !same_endpoint(ss, tenant, graph) || !subscribed(s, ss, uri)) continue;
            n++;
            supd *u = upd_slot(ss, uri);
            if (u && now - u->at >= GW_UPDATED_MIN_MS) send_updated(s, ss, u, now);
            else if (u) u->pending = true; /* folded into one after the interval */
        }
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* ------------------------------------------------------------------ keeper thread */

/* One pass: reap dead and expired streams; ping when due; end all while stopping. */
static void keep(gw_streams *s, double now) {
    bool stopping = s->gw->app && s->gw->app->stopping;
    bool ping = now >= s->next_ping_ms;
    if (ping) s->next_ping_ms = now + GW_STREAM_PING_MS;
    int64_t wall = (int64_t)time(NULL);
    for (size_t b = 0; b < BUCKETS; b++)
        for (ssess *ss = s->buckets[b]; ss; ss = ss->next) {
            if (stopping || ss->expires <= wall) {
                for (int i = 0; stopping && i < ss->n; i++) gg_http_async_write(ss->streams[i], RETRY, sizeof RETRY - 1);
                end_all_of(s, ss);
                continue;
            }
            for (int i = ss->n - 1; i >= 0; i--)
                if (gg_http_async_abandoned(ss->streams[i]) ||
                    (ping && !gg_http_async_write(ss->streams[i], PING, sizeof PING - 1)))
                    end_stream(s, ss, i);
            updated_trailing(s, ss, now);
        }
    prune(s);
    keep_posts(s, now, stopping);
}

static void *keeper(void *arg) {
    gw_streams *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += GW_STREAM_TICK_MS * 1000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&s->cv, &s->mu, &ts);
        if (s->stop) break;
        if (s->entries || s->nposts) keep(s, gg_now_ms());
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ------------------------------------------------------------------ metrics */

static void metrics(gg_strbuf *out, void *user) {
    gw_streams *s = user;
    pthread_mutex_lock(&s->mu);
    size_t open = s->open;
    unsigned long long opened = s->opened, notified = s->notified, refused = s->refused;
    unsigned long long refused_tenant = s->refused_tenant, post_closed = s->post_closed, post_resumed = s->post_resumed;
    unsigned long long post_full = s->post_refused_full, post_tenant = s->post_refused_tenant;
    size_t nposts = s->nposts;
    pthread_mutex_unlock(&s->mu);
    gg_strbuf_printf(out,
                     "# HELP graphgate_mcp_streams open standalone MCP GET (SSE) streams\n"
                     "# TYPE graphgate_mcp_streams gauge\ngraphgate_mcp_streams %zu\n"
                     "# HELP graphgate_mcp_streams_opened_total standalone MCP GET streams opened\n"
                     "# TYPE graphgate_mcp_streams_opened_total counter\ngraphgate_mcp_streams_opened_total %llu\n"
                     "# HELP graphgate_mcp_streams_refused_total GET streams refused by the per-session or total bound\n"
                     "# TYPE graphgate_mcp_streams_refused_total counter\ngraphgate_mcp_streams_refused_total %llu\n"
                     "# HELP graphgate_mcp_streams_refused_tenant_total GET streams refused by the per-tenant bound (tenants.max_streams)\n"
                     "# TYPE graphgate_mcp_streams_refused_tenant_total counter\ngraphgate_mcp_streams_refused_tenant_total %llu\n"
                     "# HELP graphgate_mcp_list_changed_total notifications/tools/list_changed sent (one per session per change)\n"
                     "# TYPE graphgate_mcp_list_changed_total counter\ngraphgate_mcp_list_changed_total %llu\n",
                     open, opened, refused, refused_tenant, notified);
    gg_strbuf_printf(out,
                     "# HELP graphgate_mcp_post_streams_closed_total tools/call POST streams ended early with a retry hint (mcp.sse_close_after)\n"
                     "# TYPE graphgate_mcp_post_streams_closed_total counter\ngraphgate_mcp_post_streams_closed_total %llu\n"
                     "# HELP graphgate_mcp_post_streams_resumed_total tools/call POST streams resumed by a GET with Last-Event-ID\n"
                     "# TYPE graphgate_mcp_post_streams_resumed_total counter\ngraphgate_mcp_post_streams_resumed_total %llu\n"
                     "# HELP graphgate_mcp_post_streams resumable tools/call POST streams held now\n"
                     "# TYPE graphgate_mcp_post_streams gauge\ngraphgate_mcp_post_streams %zu\n"
                     "# HELP graphgate_mcp_post_streams_refused_total tools/call POSTs answered without a resumable stream:"
                     " all 1024 held (full) or the tenant at tenants.max_resumable_streams (tenant)\n"
                     "# TYPE graphgate_mcp_post_streams_refused_total counter\n"
                     "graphgate_mcp_post_streams_refused_total{reason=\"full\"} %llu\n"
                     "graphgate_mcp_post_streams_refused_total{reason=\"tenant\"} %llu\n",
                     post_closed, post_resumed, nposts, post_full, post_tenant);
}

/* --------------------------------------------------------------------- public (relay.h) */

/* The stream table and its keeper thread, with its /metrics hook; NULL on failure. */
gw_streams *gw_streams_new(gg_gateway *gw) {
    gw_streams *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->gw = gw;
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    s->next_ping_ms = gg_now_ms() + GW_STREAM_PING_MS;
    if (pthread_create(&s->thread, NULL, keeper, s) != 0) {
        gw_streams_free(s);
        return NULL;
    }
    s->thread_started = true;
    if (gw->app && gw->app->http) gg_http_server_add_metrics(gw->app->http, metrics, s);
    return s;
}

/* Stop the keeper and end every stream still open (shutdown, after the listeners stopped:
 * the HTTP core requires every deferred request to be completed before it is freed). */
void gw_streams_free(gw_streams *s) {
    if (!s) return;
    if (s->thread_started) {
        pthread_mutex_lock(&s->mu);
        s->stop = true;
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->thread, NULL);
    }
    for (size_t b = 0; b < BUCKETS; b++)
        for (ssess *ss = s->buckets[b]; ss; ss = ss->next) {
            end_all_of(s, ss);
            ss->gone = true;
        }
    prune(s);
    while (s->posts) { /* every run has ended (gw_cancel_running came first) */
        gw_pstream *ps = s->posts;
        s->posts = ps->next;
        ps_drop(ps);
        ps_free(ps);
    }
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* Last-Event-ID "<k>-<s>" → 1 with *no, *seq (resume); 0 when absent; 2 when issued
 * before this session's entry (freed meanwhile: its log is gone, as if too old); -1 when
 * malformed or never issued (ss may be NULL). */
static int parse_last_id(const char *h, const gw_streams *s, const ssess *ss, unsigned long long *no,
                         unsigned long long *seq) {
    if (!h) return 0;
    char *end;
    if (!*h || *h == '-' || *h == '+') return -1;
    unsigned long long k = strtoull(h, &end, 10);
    if (*end != '-' || end[1] == '-' || end[1] == '+' || !end[1]) return -1;
    unsigned long long q = strtoull(end + 1, &end, 10);
    if (*end || k == 0 || k > s->next_no) return -1;
    if (!ss || k < ss->first_no) return 2;
    if (q > ss->seq) return -1;
    *no = k;
    *seq = q;
    return 1;
}

/* Take stream number no for the new stream at ss->n - 1 (ending a connection that still
 * holds it) and replay its logged events after seq; false when events after seq were
 * dropped from the log: then the new stream keeps a fresh number and gets the change
 * signals instead (the caller). */
static bool resume(gw_streams *s, ssess *ss, unsigned long long no, unsigned long long seq) {
    if (seq < ss->dropped) return false;
    for (int i = ss->n - 2; i >= 0; i--)
        if (ss->no[i] == no) end_stream(s, ss, i);
    int j = ss->n - 1;
    ss->no[j] = no;
    ring_replay(ss->streams[j], ss->log, GW_REPLAY_EVENTS, ss->log_n, ss->log_end, no, seq);
    return true;
}

/* The new stream ss->streams[ss->n - 1] starts: resumed from last_id, or fresh (a too-old
 * id gets the change signals), with a priming event for a 2025-11-25 client. */
static void start_stream(gw_streams *s, ssess *ss, int has_last, unsigned long long no, unsigned long long seq,
                         bool prime) {
    int j = ss->n - 1;
    if (has_last == 1 && resume(s, ss, no, seq)) return;
    ss->no[j] = ++s->next_no;
    if (!ss->first_no) ss->first_no = ss->no[j];
    if (prime) {
        char id[48];
        snprintf(id, sizeof id, "%llu-%llu", ss->no[j], ++ss->seq);
        gg_http_sse_event(ss->streams[j], NULL, id, "");
    }
    if (has_last > 0) { /* too old: what it missed is unknown, so say everything changed */
        mcp_server *srv = s->gw->registry ? gw_registry_get(s->gw->registry, ss->tenant, ss->graph, NULL, NULL) : NULL;
        if (send_event(ss, j, LIST_CHANGED) && srv) notify_extras(s, ss, j, srv);
        mcp_server_unref(srv);
    }
}

/* Open a stream for a checked session owned by owner: 409/429/503 past the bounds, 400 for
 * a Last-Event-ID this session never issued, else 200 streaming. */
static int open_stream(gw_streams *s, gg_http_req *req, gg_http_res *res, const mcp_session *sess,
                       const char *owner, mcp_server *srv, bool prime) {
    int tenant_max = s->gw->cfg ? s->gw->cfg->tenant_max_streams : 0;
    pthread_mutex_lock(&s->mu);
    ssess **link, *ss = find_session(s, sess->nonce, &link);
    unsigned long long last_no = 0, last_seq = 0;
    int has_last = parse_last_id(gg_http_header(req, "Last-Event-ID"), s, ss, &last_no, &last_seq);
    if (has_last < 0) {
        pthread_mutex_unlock(&s->mu);
        return rpc_error(res, 400, MCP_INVALID_REQUEST, "Bad Request: unknown Last-Event-ID for this session");
    }
    if (ss && ss->n >= GW_STREAMS_PER_SESSION) {
        s->refused++;
        pthread_mutex_unlock(&s->mu);
        char msg[128];
        snprintf(msg, sizeof msg, "Conflict: at most %d open GET streams per session", GW_STREAMS_PER_SESSION);
        return rpc_error(res, 409, MCP_INVALID_REQUEST, msg);
    }
    if (tenant_max > 0 && *owner && owner_streams(s, owner) >= (size_t)tenant_max) {
        s->refused++;
        s->refused_tenant++;
        pthread_mutex_unlock(&s->mu);
        char msg[160];
        snprintf(msg, sizeof msg, "Too many requests: at most %d open GET streams per tenant (tenants.max_streams)",
                 tenant_max);
        gg_http_res_header(res, "Retry-After", "5");
        return rpc_error(res, 429, MCP_SERVER_BUSY, msg);
    }
    if (s->open >= GW_STREAMS_MAX) {
        s->refused++;
        pthread_mutex_unlock(&s->mu);
        gg_http_res_header(res, "Retry-After", "5");
        return rpc_error(res, 503, MCP_SERVER_BUSY, "Server busy: too many open GET streams");
    }
    bool created = false;
    if (!ss) {
        if (!(ss = calloc(1, sizeof *ss))) {
            pthread_mutex_unlock(&s->mu);
            return rpc_error(res, 500, MCP_INTERNAL_ERROR, "Internal error: out of memory");
        }
        memcpy(ss->nonce, sess->nonce, 16);
        snprintf(ss->tenant, sizeof ss->tenant, "%s", sess->tenant);
        snprintf(ss->graph, sizeof ss->graph, "%s", sess->graph);
        snprintf(ss->owner, sizeof ss->owner, "%s", owner);
        ss->expires = sess->expires;
        ss->srv = mcp_server_ref(srv);
        created = true;
    }
    gg_http_async *a = gg_http_defer(req);
    if (!a || !gg_http_async_stream(a, 200, "text/event-stream")) {
        if (a) gg_http_async_complete(a); /* abandoned already: the core answers */
        if (created) free_ssess(ss);
        pthread_mutex_unlock(&s->mu);
        if (a) return GG_HTTP_DEFERRED;
        gg_http_res_header(res, "Retry-After", "1");
        return rpc_error(res, 503, MCP_SERVER_BUSY, "Server busy: shutting down");
    }
    if (created) {
        *link = ss;
        s->entries++;
    }
    ss->streams[ss->n++] = a;
    s->open++;
    mcp_session_busy(s->gw->sessions, sess->nonce, +1); /* never idle nor evicted while open */
    s->opened++;
    start_stream(s, ss, has_last, last_no, last_seq, prime);
    pthread_mutex_unlock(&s->mu);
    return GG_HTTP_DEFERRED;
}

/* GET on an MCP endpoint, after Origin/Host, key, tenant and graph checks (pr NULL on the
 * internal listener): scope tools:read (403), Accept: text/event-stream (406), a supported
 * MCP-Protocol-Version if sent (400), Mcp-Session-Id (400 when absent, 404 when not a live
 * session of this endpoint and key), not shutting down (503), the bounds (409/503). */
int gw_streams_get(gg_gateway *gw, gg_http_req *req, gg_http_res *res, const char *tenant, const char *graph,
                   mcp_server *srv, const gg_principal *pr) {
    if (pr && !gg_scope_allows(pr->scopes, GG_SCOPE_TOOLS_READ)) {
        gw_insufficient_scope_mcp(gw, req, res, pr, GG_SCOPE_TOOLS_READ);
        return GG_HTTP_DONE;
    }
    const char *accept = gg_http_header(req, "Accept");
    if (!accept || !strcasestr(accept, "text/event-stream"))
        return rpc_error(res, 406, MCP_INVALID_REQUEST, "Not Acceptable: a GET stream needs Accept: text/event-stream");
    const char *hv = gg_http_header(req, VERSION_HEADER);
    if (hv && !mcp_version_supported(hv))
        return rpc_error(res, 400, MCP_INVALID_REQUEST, "Bad Request: unsupported MCP-Protocol-Version");
    const char *sid = gg_http_header(req, SESSION_HEADER);
    if (!sid) return rpc_error(res, 400, MCP_INVALID_REQUEST, "Bad Request: Mcp-Session-Id header is required");
    mcp_session sess;
    gg_error err = GG_ERROR_INIT;
    if (!mcp_session_check(gw->sessions, sid, tenant, graph, pr ? pr->key_id : "", &sess, &err)) {
        gg_error_clear(&err);
        return rpc_error(res, 404, -32001, "Session not found");
    }
    if (!gw->streams || (gw->app && gw->app->stopping)) {
        gg_http_res_header(res, "Retry-After", "1");
        return rpc_error(res, 503, MCP_SERVER_BUSY, "Server busy: shutting down");
    }
    int prc = resume_post(gw->streams, req, res, &sess, gg_http_header(req, "Last-Event-ID"));
    if (prc >= 0) return prc;
    /* the priming event is a 2025-11-25 feature: older clients may not expect empty data */
    const char *v = hv ? hv : sess.version;
    bool prime = v && strcmp(v, "2025-11-25") >= 0;
    return open_stream(gw->streams, req, res, &sess, *tenant ? tenant : pr ? pr->tenant : "", srv, prime);
}

static bool any_stream_on(gw_streams *s, const char *tenant, const char *graph) {
    bool any = false;
    pthread_mutex_lock(&s->mu);
    for (size_t b = 0; !any && s->entries && b < BUCKETS; b++)
        for (ssess *ss = s->buckets[b]; !any && ss; ss = ss->next) any = same_endpoint(ss, tenant, graph);
    pthread_mutex_unlock(&s->mu);
    return any;
}

static bool same_text(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

/* list_changed to each session with a stream on tenant/graph (once per session), which then
 * holds cur; view_only: only the sessions whose server was built from another view
 * definition than cur's (a views-generation check must not repeat what they were told). */
static void changed_to(gw_streams *s, const char *tenant, const char *graph, mcp_server *cur, bool view_only) {
    mcp_server *old[16];
    size_t nold = 0;
    const char *want = view_only ? gw_tenantwide_view_text(cur) : NULL;
    pthread_mutex_lock(&s->mu);
    for (size_t b = 0; s->entries && b < BUCKETS; b++)
        for (ssess *ss = s->buckets[b]; ss; ss = ss->next)
            if (same_endpoint(ss, tenant, graph) && !(view_only && same_text(gw_tenantwide_view_text(ss->srv), want))) {
                notify_session(s, ss, cur);
                if (cur && ss->srv != cur) { /* the last reference to the old version goes after the lock */
                    if (nold < sizeof old / sizeof old[0]) old[nold++] = ss->srv;
                    else mcp_server_unref(ss->srv); /* many sessions: the same version, one of them is last */
                    ss->srv = mcp_server_ref(cur);
                }
            }
    prune(s);
    pthread_mutex_unlock(&s->mu);
    for (size_t i = 0; i < nold; i++) mcp_server_unref(old[i]);
}

/* A new version of tenant/graph is active: notifications/tools/list_changed to each
 * session with a stream there (once per session), which then holds the new version. srv:
 * the new version (mounts), NULL = ask the registry — only when some stream listens, so a
 * sync declaring thousands of graphs compiles none of them. Mounts use tenant "". */
void gw_streams_tools_changed(gw_streams *s, const char *tenant, const char *graph, mcp_server *srv) {
    if (!s || !any_stream_on(s, tenant, graph)) return;
    mcp_server *cur = srv ? mcp_server_ref(srv)
                          : s->gw->registry ? gw_registry_get(s->gw->registry, tenant, graph, NULL, NULL) : NULL;
    changed_to(s, tenant, graph, cur, false);
    mcp_server_unref(cur);
}

/* See relay.h. */
void gw_streams_notify(gw_streams *s, const char *tenant, const char *graph, const char *msg) {
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    for (size_t b = 0; s->entries && b < BUCKETS; b++)
        for (ssess *ss = s->buckets[b]; ss; ss = ss->next) {
            if (ss->gone || !same_endpoint(ss, tenant, graph)) continue;
            deliver(s, ss, msg); /* once per session: its newest stream that takes it, else kept for its resume */
        }
    prune(s);
    pthread_mutex_unlock(&s->mu);
}

/* See relay.h. */
void gw_streams_view_changed(gw_streams *s, const char *tenant, const char *graph, mcp_server *srv) {
    if (s && srv) changed_to(s, tenant, graph, srv, true);
}

/* See relay.h. */
void gw_streams_endpoints(gw_streams *s, const char *prefix, json_t *out) {
    size_t n = strlen(prefix);
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    for (size_t b = 0; s->entries && b < BUCKETS; b++)
        for (ssess *ss = s->buckets[b]; ss; ss = ss->next)
            if (!ss->gone && strncmp(ss->graph, prefix, n) == 0) gw_endpoint_add(out, ss->tenant, ss->graph);
    pthread_mutex_unlock(&s->mu);
}

/* See relay.h. */
bool gw_streams_elicitation_complete(gw_streams *s, const char *tenant, const char *session, const char *elicitation_id) {
    uint8_t nonce[16];
    size_t n = 0;
    if (!s || !session || strlen(session) != 32 ||
        sodium_hex2bin(nonce, sizeof nonce, session, 32, NULL, &n, NULL) != 0 || n != sizeof nonce)
        return false;
    json_t *p = json_pack("{s:s}", "elicitationId", elicitation_id);
    char *msg = p ? mcp_jsonrpc_notification("notifications/elicitation/complete", p) : NULL;
    json_decref(p);
    bool sent = false;
    pthread_mutex_lock(&s->mu);
    ssess *ss = msg ? find_session(s, nonce, NULL) : NULL;
    if (ss && !ss->gone && !strcmp(ss->tenant, tenant)) {
        while (ss->n > 0 && !(sent = send_event(ss, ss->n - 1, msg)))
            end_stream(s, ss, ss->n - 1); /* client gone or not reading: this stream is dead */
        if (!sent) sent = send_event(ss, -1, msg); /* none open: kept for the client's resume */
    }
    pthread_mutex_unlock(&s->mu);
    free(msg);
    return sent;
}

/* tenant/graph is gone (graph or tenant deleted): end its streams. */
void gw_streams_end_graph(gw_streams *s, const char *tenant, const char *graph) {
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    for (size_t b = 0; s->entries && b < BUCKETS; b++)
        for (ssess *ss = s->buckets[b]; ss; ss = ss->next)
            if (same_endpoint(ss, tenant, graph)) {
                end_all_of(s, ss);
                ss->gone = true;
            }
    prune(s);
    pthread_mutex_unlock(&s->mu);
}

/* The session was deleted: end its streams. */
void gw_streams_end_session(gw_streams *s, const mcp_session *sess) {
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    ssess **link, *ss = find_session(s, sess->nonce, &link);
    if (ss) {
        end_all_of(s, ss);
        *link = ss->next;
        free_ssess(ss);
        s->entries--;
    }
    for (gw_pstream *ps = s->posts; ps; ps = ps->next)
        if (memcmp(ps->nonce, sess->nonce, 16) == 0) {
            ps_drop(ps);
            ps->keep_until_ms = 0; /* freed by the keeper once its run ended */
        }
    pthread_mutex_unlock(&s->mu);
}

/* The registry's change hook (gw_registry_set_hook): a put means a new active version,
 * a removal ends the streams. */
void gw_streams_registry_hook(void *user, const char *tenant, const char *graph, bool removed) {
    if (removed) gw_streams_end_graph(user, tenant, graph);
    else gw_streams_tools_changed(user, tenant, graph, NULL);
    gw_tenantwide_graph_changed(((gw_streams *)user)->gw, tenant, graph); /* tenantwide.c */
}

/* See internal.h: a prefix match, cheap enough to ask on every graph change. */
bool gw_streams_any_on(gw_streams *s, const char *tenant, const char *prefix) {
    bool any = false;
    size_t n = strlen(prefix);
    if (!s) return false;
    pthread_mutex_lock(&s->mu);
    for (size_t b = 0; !any && s->entries && b < BUCKETS; b++)
        for (ssess *ss = s->buckets[b]; !any && ss; ss = ss->next)
            any = strcmp(ss->tenant, tenant) == 0 && strncmp(ss->graph, prefix, n) == 0;
    pthread_mutex_unlock(&s->mu);
    return any;
}

/* Streams open now that count in tenant's bound. */
size_t gw_streams_tenant_count(gw_streams *s, const char *tenant) {
    if (!s) return 0;
    pthread_mutex_lock(&s->mu);
    size_t n = owner_streams(s, tenant);
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* Resumable POST streams the tenant holds now (called with s->mu held). */
static size_t tenant_posts(gw_streams *s, const char *tenant) {
    size_t n = 0;
    for (gw_pstream *ps = s->posts; ps; ps = ps->next) n += strcmp(ps->tenant, tenant) == 0;
    return n;
}

/* Resumable POST streams the tenant holds now (tenants.max_resumable_streams). */
size_t gw_streams_tenant_posts(gw_streams *s, const char *tenant) {
    if (!s) return 0;
    pthread_mutex_lock(&s->mu);
    size_t n = tenant_posts(s, tenant);
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* Streams open now. */
size_t gw_streams_count(gw_streams *s) {
    if (!s) return 0;
    pthread_mutex_lock(&s->mu);
    size_t n = s->open;
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* A tools/call's POST (a, suspended, not answered yet) of a 2025-11-25 session becomes a
 * resumable stream; close_after_ms > 0 ends the POST that long after the run started if
 * it is still going (with a retry hint: the client resumes with GET + Last-Event-ID);
 * cancel: the run's flag, set when the client drops its connection and does not resume.
 * NULL when the table is full or the session's tenant holds tenants.max_resumable_streams
 * (so one tenant cannot take every tenant's resumability): the call then answers on its
 * POST as before, without an early close. */
gw_pstream *gw_pstream_open(gw_streams *s, const mcp_session *sess, gg_http_async *a, atomic_int *cancel,
                            long long close_after_ms) {
    if (!s) return NULL;
    gw_pstream *ps = calloc(1, sizeof *ps);
    if (!ps) return NULL;
    memcpy(ps->nonce, sess->nonce, 16);
    snprintf(ps->tenant, sizeof ps->tenant, "%s", sess->tenant);
    ps->a = a;
    ps->is_post = ps->job = true;
    ps->cancel = cancel;
    if (close_after_ms > 0) ps->close_at_ms = gg_now_ms() + (double)close_after_ms;
    int tenant_max = s->gw->cfg ? s->gw->cfg->tenant_max_resumable_streams : 0;
    pthread_mutex_lock(&s->mu);
    bool full = s->nposts >= GW_POST_STREAMS_MAX;
    if (full || (tenant_max > 0 && tenant_posts(s, ps->tenant) >= (size_t)tenant_max)) {
        if (full) s->post_refused_full++;
        else s->post_refused_tenant++;
        pthread_mutex_unlock(&s->mu);
        free(ps);
        return NULL;
    }
    ps->no = ++s->next_no;
    ps->next = s->posts;
    s->posts = ps;
    s->nposts++;
    if (s->nposts == 1) pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return ps;
}

/* One message of the run (a notification, a request to the client): logged, and sent to
 * the connection holding the stream if any. */
void gw_pstream_event(gw_streams *s, gw_pstream *ps, const char *json) {
    pthread_mutex_lock(&s->mu);
    ring_add(ps->log, GW_POST_EVENTS, &ps->log_n, &ps->log_end, &ps->dropped, ps->no, ++ps->seq, json);
    ps_deliver(ps, ps->seq, json);
    pthread_mutex_unlock(&s->mu);
}

/* The run's final response (body, taken; NULL = out of memory): on the POST if it is still
 * there (plain JSON with status when nothing was streamed; 503 gets Retry-After), else on
 * the resumed GET, else kept for GW_POST_KEEP_MS for a resume. The run lets go of ps. */
void gw_pstream_finish(gw_streams *s, gw_pstream *ps, char *body, int status) {
    pthread_mutex_lock(&s->mu);
    ps->job = false;
    if (ps->a && ps->is_post && !ps->streaming) {
        gg_http_res *res = gg_http_async_res(ps->a);
        if (status == 503) gg_http_res_header(res, "Retry-After", "1");
        if (body) gg_http_res_bytes_take(res, status, "application/json", body, strlen(body));
        else gg_http_res_fail(res, "internal_error", "out of memory");
        body = NULL;
        ps_drop(ps);
        ps->keep_until_ms = 0;
    } else if (body) {
        ps->final = body;
        ps->final_seq = ++ps->seq;
        ps_deliver(ps, ps->final_seq, body);
        if (ps->a) { /* delivered: the stream is done */
            ps_drop(ps);
            ps->keep_until_ms = 0;
        } else ps->keep_until_ms = gg_now_ms() + GW_POST_KEEP_MS;
        body = NULL;
    } else ps_drop(ps);
    if (ps->keep_until_ms == 0) {
        ps_unlink(s, ps);
        ps_free(ps);
    }
    free(body);
    pthread_mutex_unlock(&s->mu);
}
