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
 * GW_STREAMS_MAX in all (more → 503 with Retry-After). No resumability: events carry no id, Last-Event-ID is ignored
 * (a reconnecting client gets a fresh stream; list_changed is idempotent — the client
 * lists the tools again).
 *
 * Locking: one mutex (mu) guards the table; the HTTP core's own lock is taken inside it
 * (gg_http_async_* calls), never the other way round.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "gateway/internal.h"

#define BUCKETS 64
#define SESSION_HEADER "Mcp-Session-Id"
#define VERSION_HEADER "MCP-Protocol-Version"

static const char LIST_CHANGED[] = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}";
static const char PING[] = ": ping\n\n";
/* Sent before the streams end at shutdown: the SSE reconnection delay, so clients (the SDK
 * reconnects its GET stream by itself) come back once a restarted server listens again. */
static const char RETRY[] = "retry: 3000\n\n";

/* The open streams of one session; streams[n-1] is the newest. */
typedef struct ssess {
    uint8_t nonce[16];
    char tenant[GG_NAME_MAX + 1], graph[GG_NAME_MAX + 1];
    char owner[GG_NAME_MAX + 1]; /* the tenant whose per-tenant bound the streams count in */
    int64_t expires; /* unix seconds */
    gg_http_async *streams[GW_STREAMS_PER_SESSION];
    int n;
    mcp_server *srv; /* the newest version announced: held so the graph cache keeps it */
    struct ssess *next;
} ssess;

struct gw_streams {
    gg_gateway *gw;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC */
    ssess *buckets[BUCKETS];
    size_t open;
    bool stop, thread_started;
    pthread_t thread;
    double next_ping_ms;
    /* counters for /metrics (under mu) */
    unsigned long long opened, notified, refused, refused_tenant;
};

static size_t bucket_of(const uint8_t nonce[16]) {
    return ((size_t)nonce[0] | (size_t)nonce[1] << 8) % BUCKETS;
}

/* A JSON-RPC error (no id) as the body of a non-200 answer. */
static int rpc_error(gg_http_res *res, int status, int code, const char *msg) {
    char *body = mcp_jsonrpc_error(NULL, code, msg, NULL);
    if (body) gg_http_res_bytes_take(res, status, "application/json", body, strlen(body));
    else gg_http_res_error(res, 500, "internal_error", "out of memory");
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
    memmove(&ss->streams[i], &ss->streams[i + 1], (size_t)(ss->n - i - 1) * sizeof ss->streams[0]);
    ss->n--;
    s->open--;
}

static void end_all_of(gw_streams *s, ssess *ss) {
    while (ss->n > 0) end_stream(s, ss, ss->n - 1);
}

static void free_ssess(ssess *ss) {
    /* under mu: the registry (or the mount) normally still holds this version, so this is
     * rarely the last reference; a version replaced meanwhile was swapped out by
     * gw_streams_tools_changed, which releases it outside the lock */
    mcp_server_unref(ss->srv);
    free(ss);
}

/* Unlink and free every session entry left without streams. */
static void prune(gw_streams *s) {
    for (size_t b = 0; b < BUCKETS; b++)
        for (ssess **pp = &s->buckets[b]; *pp;) {
            ssess *ss = *pp;
            if (ss->n == 0) {
                *pp = ss->next;
                free_ssess(ss);
            } else pp = &ss->next;
        }
}

static void notify_extras(gw_streams *s, ssess *ss, gg_http_async *a, mcp_server *srv) {
    if (mcp_server_has_resources(srv)) {
        gg_http_sse_event(a, "message", NULL, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/list_changed\"}");
        mcp_session key = {0};
        memcpy(key.nonce, ss->nonce, sizeof key.nonce);
        json_t *subs = mcp_session_subscriptions(s->gw->sessions, &key), *u;
        size_t i;
        json_array_foreach(subs, i, u) {
            if (!mcp_server_serves_uri(srv, json_string_value(u))) continue;
            json_t *p = json_pack("{s:O}", "uri", u);
            char *msg = p ? mcp_jsonrpc_notification("notifications/resources/updated", p) : NULL;
            if (msg) gg_http_sse_event(a, "message", NULL, msg);
            free(msg);
            json_decref(p);
        }
        json_decref(subs);
    }
    if (mcp_server_has_prompts(srv))
        gg_http_sse_event(a, "message", NULL, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/prompts/list_changed\"}");
}

/* Send LIST_CHANGED once for this session: on the newest stream that takes it; then, for
 * a version offering them, resources/prompts list_changed and resources/updated for each
 * URI the session subscribed to that the version serves (srv may be NULL). */
static bool notify_session(gw_streams *s, ssess *ss, mcp_server *srv) {
    while (ss->n > 0) {
        int i = ss->n - 1;
        if (gg_http_sse_event(ss->streams[i], "message", NULL, LIST_CHANGED)) {
            s->notified++;
            if (srv) notify_extras(s, ss, ss->streams[i], srv);
            return true;
        }
        end_stream(s, ss, i); /* client gone or not reading: this stream is dead */
    }
    return false;
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
        }
    prune(s);
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
        if (s->open) keep(s, gg_now_ms());
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
    unsigned long long refused_tenant = s->refused_tenant;
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
}

/* ------------------------------------------------------------------ public (internal.h) */

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
        for (ssess *ss = s->buckets[b]; ss; ss = ss->next) end_all_of(s, ss);
    prune(s);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* Open a stream for a checked session owned by owner: 409/429/503 past the bounds, else
 * 200 streaming. */
static int open_stream(gw_streams *s, gg_http_req *req, gg_http_res *res, const mcp_session *sess,
                       const char *owner, mcp_server *srv) {
    int tenant_max = s->gw->cfg ? s->gw->cfg->tenant_max_streams : 0;
    pthread_mutex_lock(&s->mu);
    ssess **link, *ss = find_session(s, sess->nonce, &link);
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
    if (created) *link = ss;
    ss->streams[ss->n++] = a;
    s->open++;
    s->opened++;
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
        gw_insufficient_scope(res, GG_SCOPE_TOOLS_READ);
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
    return open_stream(gw->streams, req, res, &sess, *tenant ? tenant : pr ? pr->tenant : "", srv);
}

static bool any_stream_on(gw_streams *s, const char *tenant, const char *graph) {
    bool any = false;
    pthread_mutex_lock(&s->mu);
    for (size_t b = 0; !any && s->open && b < BUCKETS; b++)
        for (ssess *ss = s->buckets[b]; !any && ss; ss = ss->next) any = same_endpoint(ss, tenant, graph);
    pthread_mutex_unlock(&s->mu);
    return any;
}

/* A new version of tenant/graph is active: notifications/tools/list_changed to each
 * session with a stream there (once per session), which then holds the new version. srv:
 * the new version (mounts), NULL = ask the registry — only when some stream listens, so a
 * sync declaring thousands of graphs compiles none of them. Mounts use tenant "". */
void gw_streams_tools_changed(gw_streams *s, const char *tenant, const char *graph, mcp_server *srv) {
    if (!s || !any_stream_on(s, tenant, graph)) return;
    mcp_server *cur = srv ? mcp_server_ref(srv)
                          : s->gw->registry ? gw_registry_get(s->gw->registry, tenant, graph, NULL, NULL) : NULL;
    mcp_server *old[16];
    size_t nold = 0;
    pthread_mutex_lock(&s->mu);
    for (size_t b = 0; s->open && b < BUCKETS; b++)
        for (ssess *ss = s->buckets[b]; ss; ss = ss->next)
            if (same_endpoint(ss, tenant, graph)) {
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
    mcp_server_unref(cur);
}

/* tenant/graph is gone (graph or tenant deleted): end its streams. */
void gw_streams_end_graph(gw_streams *s, const char *tenant, const char *graph) {
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    for (size_t b = 0; s->open && b < BUCKETS; b++)
        for (ssess *ss = s->buckets[b]; ss; ss = ss->next)
            if (same_endpoint(ss, tenant, graph)) end_all_of(s, ss);
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
    }
    pthread_mutex_unlock(&s->mu);
}

/* The registry's change hook (gw_registry_set_hook): a put means a new active version,
 * a removal ends the streams. */
void gw_streams_registry_hook(void *user, const char *tenant, const char *graph, bool removed) {
    if (removed) gw_streams_end_graph(user, tenant, graph);
    else gw_streams_tools_changed(user, tenant, graph, NULL);
}

/* Streams open now that count in tenant's bound. */
size_t gw_streams_tenant_count(gw_streams *s, const char *tenant) {
    if (!s) return 0;
    pthread_mutex_lock(&s->mu);
    size_t n = owner_streams(s, tenant);
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
