/* mcp_http.c — MCP streamable HTTP on the gateway's listeners.
 *
 * One handler serves /mcp/{tenant}/{graph} (public, API key), /internal/mcp/{tenant}/{graph}
 * (internal, no auth) and mounted providers (/mcp/{name}, /internal/mcp/{name}). Order of
 * checks on a request: Origin/Host (DNS rebinding) → API key → rate limit → tenant → the
 * graph's active version → method (POST/GET/DELETE) → JSON-RPC parse → scope for the
 * method → session token → MCP-Protocol-Version → dispatch. tools/call runs on the worker
 * pool while the connection is suspended; its notifications switch the response to
 * text/event-stream when the client accepts it.
 *
 * The stateless 2026-07-28 revision fits here without touching dispatch: a POST without
 * Mcp-Session-Id whose params._meta carries "io.modelcontextprotocol/protocolVersion"
 * skips the session check and passes that version (and the log level from _meta) in
 * mcp_request_ctx; server.c then adds server/discover beside initialize.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "gateway/authz.h"
#include "gateway/calls.h"
#include "gateway/internal.h"
#include "gateway/relay.h"

#define SESSION_HEADER "Mcp-Session-Id"
#define VERSION_HEADER "MCP-Protocol-Version"
#define MAX_JSON_DEPTH 64
#define MAX_BATCH 64

/* ------------------------------------------------------------------ small helpers */

static bool header_has_token(const char *h, const char *token) {
    return h && strcasestr(h, token) != NULL;
}

/* A JSON-RPC error as the body of a non-200 HTTP answer. */
static int rpc_http_error(gg_http_res *res, int status, json_t *id, int code, const char *msg) {
    char *body = mcp_jsonrpc_error(id, code, msg, NULL);
    if (body) gg_http_res_bytes_take(res, status, "application/json", body, strlen(body));
    else gg_http_res_fail(res, "internal_error", "out of memory");
    return GG_HTTP_DONE;
}

/* 403 naming the scope the key lacks; see internal.h. */
void gw_insufficient_scope(gg_http_res *res, gg_scope need) { gg_auth_http_insufficient_scope(res, need); }

/* 403 for a key used on another tenant's resources. */
void gw_wrong_tenant(gg_http_res *res) {
    gg_http_res_fail(res, "forbidden", "this API key belongs to another tenant");
}

/* Authenticate a public request (key, revocation, rate limit); see internal.h. */
bool gw_authenticate(gg_gateway *gw, gg_http_req *req, gg_http_res *res, gg_principal *out) {
    return gg_auth_http_check(gw->auth, req, res, out);
}

/* "host[:port]" → host part into out (brackets kept for IPv6). */
static void host_part(const char *hostport, char *out, size_t n) {
    size_t len;
    if (hostport[0] == '[') {
        const char *end = strchr(hostport, ']');
        len = end ? (size_t)(end - hostport) + 1 : strlen(hostport);
    } else {
        const char *colon = strchr(hostport, ':');
        len = colon ? (size_t)(colon - hostport) : strlen(hostport);
    }
    if (len >= n) len = n - 1;
    memcpy(out, hostport, len);
    out[len] = 0;
}

static bool is_loopback_host(const char *host) {
    return strcasecmp(host, "localhost") == 0 || strncmp(host, "127.", 4) == 0 || strcmp(host, "[::1]") == 0 ||
           strcmp(host, "::1") == 0;
}

static bool in_list(const gg_strlist *l, const char *v) {
    for (size_t i = 0; i < l->n; i++)
        if (strcasecmp(l->items[i], v) == 0) return true;
    return false;
}

/* Origin and Host checks (DNS rebinding protection; see authz.h). */
bool gw_origin_host_ok(gg_gateway *gw, gg_http_req *req, gg_http_res *res) {
    const char *host = gg_http_header(req, "Host");
    bool loopback = gg_http_listener(req) == GG_LISTENER_PUBLIC ? gw->public_loopback : gw->internal_loopback;
    char hn[256] = "";
    if (host) host_part(host, hn, sizeof hn);
    if (loopback) {
        /* a loopback bind only ever answers to loopback names (or configured extras) */
        if (!host || !(is_loopback_host(hn) || in_list(&gw->cfg->allowed_hosts, host) ||
                       in_list(&gw->cfg->allowed_hosts, hn))) {
            rpc_http_error(res, 403, NULL, MCP_SERVER_BUSY, "Forbidden: Host header not allowed");
            return false;
        }
    }
    const char *origin = gg_http_header(req, "Origin");
    if (!origin || !*origin) return true;
    if (in_list(&gw->cfg->origins, "*") || in_list(&gw->cfg->origins, origin)) return true;
    const char *sep = strstr(origin, "://");
    const char *ohost = sep ? sep + 3 : origin;
    char oh[256];
    host_part(ohost, oh, sizeof oh);
    /* same origin as the Host the request was sent to, or loopback on a loopback bind */
    if ((host && strcasecmp(ohost, host) == 0) || (loopback && is_loopback_host(oh))) return true;
    rpc_http_error(res, 403, NULL, MCP_SERVER_BUSY, "Forbidden: Origin not allowed");
    return false;
}

/* ------------------------------------------------------------------ endpoints */

typedef struct endpoint {
    char tenant[GG_NAME_MAX + 1]; /* "" for mounts */
    char graph[GG_NAME_MAX + 1];  /* graph or mount name */
    bool is_graph;
    int version;
    mcp_server *srv; /* reference */
    /* the tenant calls run for: the graph's, or on a mount the caller key's ("" on the
     * internal listener), so a mounted provider can answer per tenant (/mcp/nodes) */
    char caller[GG_NAME_MAX + 1];
} endpoint;

/* ------------------------------------------------------------------ running calls */

/* The pool's fair-queueing key: a graph's tenant, and on a mount the caller key's tenant,
 * so a tenant's toolkit runs queue (and are capped) with its other calls. */
static const char *queue_key(const struct endpoint *ep) {
    return ep->is_graph || !ep->caller[0] ? ep->tenant : ep->caller;
}

typedef struct gw_call_job {
    gg_gateway *gw;
    gg_http_async *a;    /* NULL for a call run inline: then res is the answer */
    gg_http_res *res;
    mcp_call *call;
    mcp_session sess;
    bool has_session;
    endpoint ep;
    char key_id[GG_KEY_ID_LEN + 1];
    bool has_key;
    char request_id[GG_HTTP_REQUEST_ID_MAX];
    bool sse_ok, streaming, plain;
    bool text_history;   /* node records kept as text by the provider (mcp_call_use_history_text) */
    gg_exec_record *rec; /* taken under gw->jobs_mu (the announcer copies it) */
    double accepted_ms;  /* monotonic, when the call was accepted (its time limits count from it) */
    double started_ms;   /* monotonic, when the worker picked it up */
    bool may_wait;       /* counted in the waiting bounds (a tool with mcp nodes) */
    bool announced;      /* a RUNNING record was submitted */
    atomic_int timed_out; /* set with the cancel flag past request_timeout */
    bool refused;        /* never ran: the pool stopped first (recorded as cancelled) */
    gg_span *span;       /* the call's server span (gw_call_span_begin), NULL with telemetry off */
    gw_pstream *ps;      /* a resumable POST stream (then a is NULL: the stream holds it) */
    char task_id[48];    /* a task's run (tasks.c): no HTTP request; its end goes to the store */
    struct gw_call_job *prev, *next;
} gw_call_job;

static void job_free(gw_call_job *j) {
    gw_call_span_end(j->span, j->call, "not run");
    mcp_call_free(j->call);
    mcp_server_unref(j->ep.srv);
    gg_exec_record_free(j->rec);
    free(j);
}

static void running_add(gg_gateway *gw, gw_call_job *j) {
    j->started_ms = gg_now_ms();
    pthread_mutex_lock(&gw->jobs_mu);
    j->next = gw->jobs;
    if (gw->jobs) gw->jobs->prev = j;
    gw->jobs = j;
    gw->running++;
    if (gw->stopping) *mcp_call_cancel_flag(j->call) = 1;
    pthread_mutex_unlock(&gw->jobs_mu);
}

static void running_remove(gg_gateway *gw, gw_call_job *j) {
    pthread_mutex_lock(&gw->jobs_mu);
    if (j->prev) j->prev->next = j->next;
    else gw->jobs = j->next;
    if (j->next) j->next->prev = j->prev;
    gw->running--;
    pthread_cond_broadcast(&gw->jobs_cv);
    pthread_mutex_unlock(&gw->jobs_mu);
}

static void forwards_cancel(gg_gateway *gw, bool all);

/* Runs still going after min_age_ms get a RUNNING record, so a crash leaves a row the next
 * start marks `interrupted`. Short runs skip it: their RUNNING and final records would sit
 * in the same in-memory queue anyway, and writing both would double the writer's work. */
void gw_announce_long_runs(gg_gateway *gw, double min_age_ms) {
    double now = gg_now_ms();
    long long limit = gw->cfg->request_timeout_ms;
    pthread_mutex_lock(&gw->jobs_mu);
    for (gw_call_job *j = gw->jobs; j; j = j->next) {
        if (!j->announced && j->rec && now - j->started_ms >= min_age_ms) {
            j->announced = true;
            gg_exec_record *h = gg_exec_record_copy_header(j->rec);
            if (h) gg_history_submit(gw->history, h);
        }
        /* request_timeout bounds every call from its acceptance (queue time included),
         * whatever the graph's own limits say */
        if (limit > 0 && !j->timed_out && now - j->accepted_ms >= (double)limit) {
            j->timed_out = 1;
            atomic_store_explicit(mcp_call_cancel_flag(j->call), 1, memory_order_relaxed);
        }
        /* the client went away (when the HTTP layer saw it): nobody reads the answer. j->a
         * is ours while j is on this list (it leaves before it answers) */
        if (j->a && gg_http_async_abandoned(j->a))
            atomic_store_explicit(mcp_call_cancel_flag(j->call), 1, memory_order_relaxed);
    }
    forwards_cancel(gw, false);
    pthread_mutex_unlock(&gw->jobs_mu);
}

/* Records queued for the history writer and not yet written. Read on every call (the
 * polling thread and each worker), so it must not take the writer's lock. */
static unsigned long long history_backlog(gg_gateway *gw) {
    return gw->history ? gg_history_backlog(gw->history) : 0;
}

/* Every run is recorded, so runs may not outpace the writer: past the soft mark a worker
 * waits (bounded) before starting the next run; calls then queue in the pool, whose bound
 * answers 503 if the writer stays stuck. */
static void wait_for_history(gg_gateway *gw) {
    for (int i = 0; i < 10000 && !gw->stopping && history_backlog(gw) > GW_HISTORY_BACKLOG_SOFT; i++) {
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* Shutdown: stop every running call and wait until they have answered and recorded. */
void gw_cancel_running(gg_gateway *gw) {
    pthread_mutex_lock(&gw->jobs_mu);
    gw->stopping = 1;
    for (gw_call_job *j = gw->jobs; j; j = j->next) atomic_store_explicit(mcp_call_cancel_flag(j->call), 1, memory_order_relaxed);
    forwards_cancel(gw, true);
    while (gw->running > 0) pthread_cond_wait(&gw->jobs_cv, &gw->jobs_mu);
    pthread_mutex_unlock(&gw->jobs_mu);
}

static void job_emit(void *user, const char *json, size_t len) {
    (void)len;
    gw_call_job *j = user;
    if (j->ps) {
        gw_pstream_event(j->gw->streams, j->ps, json);
        return;
    }
    if (!j->sse_ok || j->plain) return; /* a plain JSON client gets the result only */
    if (!j->streaming) {
        if (!gg_http_async_stream(j->a, 200, "text/event-stream")) return;
        j->streaming = true;
    }
    gg_http_sse_event(j->a, "message", NULL, json);
}

/* Convert the graph's node records to the store's and submit the final state; done (may
 * be NULL) runs once it is committed (gg_history_submit_then), at once when nothing is
 * recorded. */
static gg_exec_record *record_final(gw_call_job *j);
static void record_finish_then(gw_call_job *j, gg_history_committed_fn done, void *user) {
    gg_exec_record *r = record_final(j);
    if (!r) {
        if (done) done(user, true);
        return;
    }
    gg_history_submit_then(j->gw->history, r, done, user);
}

/* The final state of j's record, taken from j (NULL when nothing is recorded). */
static gg_exec_record *record_final(gw_call_job *j) {
    gg_gateway *gw = j->gw;
    pthread_mutex_lock(&gw->jobs_mu);
    gg_exec_record *r = j->rec;
    j->rec = NULL;
    pthread_mutex_unlock(&gw->jobs_mu);
    if (!r || !gw->history) {
        gg_exec_record_free(r);
        return NULL;
    }
    const char *st = mcp_call_status(j->call);
    r->status = strcmp(st, "ok") == 0 ? GG_EXEC_SUCCEEDED
                : (strcmp(st, "cancelled") == 0 || j->refused) ? GG_EXEC_CANCELLED : GG_EXEC_FAILED;
    bool waiting = r->status == GG_EXEC_SUCCEEDED && mcp_call_input_required(j->call);
    if (waiting) r->status = GG_EXEC_RUNNING; /* its client answers in a later round (or tasks/update) */
    r->finished_ms = waiting ? 0 : gg_wall_ms();
    r->duration_ms = mcp_call_duration_ms(j->call);
    gw_record_result(r, mcp_call_result(j->call));
    if (mcp_call_error(j->call)) r->error = strdup(mcp_call_error(j->call));
    if (j->text_history) {
        /* the provider wrote the node records as text while the run went (bounded there) */
        char *nodes = mcp_call_take_history_text(j->call);
        if (nodes) gg_exec_record_set_nodes_json(r, nodes);
        return r;
    }
    size_t i;
    json_t *n;
    json_array_foreach(mcp_call_history(j->call), i, n) {
        json_t *err = json_object_get(n, "error");
        /* the error's one text (gg_graph_error_text: code, position and node when known) */
        json_t *etext = json_object_get(err, "text");
        const char *emsg = json_is_string(etext) ? json_string_value(etext)
                           : json_is_object(err) ? json_string_value(json_object_get(err, "message"))
                                                 : json_string_value(err);
        json_t *in = json_object_get(n, "input"), *out = json_object_get(n, "output");
        gg_node_exec_record *nr = gg_exec_record_add_node(r, json_string_value(json_object_get(n, "nodeId")),
                                json_string_value(json_object_get(n, "nodeType")),
                                json_integer_value(json_object_get(n, "startTime")),
                                json_integer_value(json_object_get(n, "endTime")),
                                /* what the node received (bounded like its output) */
                                json_incref(in), json_incref(out),
                                err ? (emsg ? emsg : "error") : NULL);
        if (nr && json_is_number(json_object_get(n, "duration")))
            nr->duration_ms = json_number_value(json_object_get(n, "duration"));
    }
    return r;
}

/* The result as the tool's value: structuredContent, else the lone text, else content. */
void gw_record_result(gg_exec_record *r, json_t *res) {
    static const gg_json_key keys[] = {GG_JSON_KEY("content"), GG_JSON_KEY("structuredContent")};
    json_t *m[2];
    gg_json_members(res, 2, keys, m); /* one walk, not two lookups */
    json_t *content = m[0], *sc = m[1];
    if (sc) {
        r->result = json_incref(sc);
        return;
    }
    json_t *text = json_array_size(content) == 1 ? json_object_get(json_array_get(content, 0), "text") : NULL;
    if (json_is_string(text)) r->result = json_incref(text);
    else if (content) r->result = json_incref(content);
}

static void record_finish(gw_call_job *j) { record_finish_then(j, NULL, NULL); }

/* A graph's tools/call refused before it ran, its arguments failing the tool's inputSchema
 * (mcp_outcome.refused_*): recorded as a run of its own status, invalid_input, with no
 * nodes, the arguments bounded as every run's are and the refusal's message as its error.
 * key_id NULL on the internal listener. */
static void record_refusal(gg_gateway *gw, const endpoint *ep, const char *key_id, const mcp_outcome *o) {
    if (!o->refused_tool || !o->refused_error || !ep->is_graph || !gw->history) return;
    /* a call through the tenant-wide endpoint or a view is recorded as the graph's own */
    const char *graph = ep->graph, *tool = o->refused_tool;
    int version = ep->version;
    if (graph[0] == '_') gw_tenantwide_target(ep->srv, tool, &graph, &tool, &version);
    gg_exec_record *r = gg_history_record_new(gw->history, ep->tenant, graph, version, tool, key_id, o->refused_args);
    if (!r) return;
    r->status = GG_EXEC_INVALID_INPUT;
    r->finished_ms = r->started_ms;
    r->duration_ms = 0;
    r->error = strdup(o->refused_error);
    gg_history_submit(gw->history, r); /* a full queue drops it, counted as any record */
}

static gg_http_res *job_res(gw_call_job *j) { return j->a ? gg_http_async_res(j->a) : j->res; }

/* Plain JSON (internal tools/call endpoint): the tool's value, or an error object. */
static void respond_plain(gw_call_job *j, const char *rpc_body) {
    gg_http_res *res = job_res(j);
    json_t *resp = json_loads(rpc_body ? rpc_body : "null", 0, NULL);
    json_t *err = json_object_get(resp, "error"), *result = json_object_get(resp, "result");
    if (err) {
        int code = (int)json_integer_value(json_object_get(err, "code"));
        const char *msg = json_string_value(json_object_get(err, "message"));
        int status = code == MCP_INVALID_PARAMS ? 400 : code == MCP_REQUEST_TIMEOUT ? 504 : 503;
        const char *ecode = status == 400 ? "invalid_params" : status == 504 ? "timeout" : "unavailable";
        gg_http_res_error(res, status, ecode, "%s", msg ? msg : "error");
    } else if (json_is_true(json_object_get(result, "isError"))) {
        json_t *first = json_array_get(json_object_get(result, "content"), 0);
        const char *msg = json_string_value(json_object_get(first, "text"));
        gg_http_res_fail(res, "tool_error", "%s", msg ? msg : "tool failed");
    } else {
        /* the tool's value exactly as the exit node yielded it (the text block cannot tell
         * the string "42" from the number 42); results without that history fall back to
         * structuredContent, else the text */
        json_t *hist = mcp_call_history(j->call);
        json_t *last = json_array_get(hist, json_array_size(hist) - 1);
        json_t *out = json_object_get(last, "output");
        json_t *sc = json_object_get(result, "structuredContent");
        const char *ntype = json_string_value(json_object_get(last, "nodeType"));
        if (out && ntype && strcmp(ntype, "exit") == 0) gg_http_res_json(res, 200, json_incref(out));
        else if (sc) gg_http_res_json(res, 200, json_incref(sc));
        else {
            const char *text = json_string_value(json_object_get(json_array_get(json_object_get(result, "content"), 0), "text"));
            json_t *v = text ? json_loads(text, JSON_DECODE_ANY, NULL) : NULL;
            if (!v && text) v = json_string(text);
            gg_http_res_json(res, 200, v ? v : json_null());
        }
    }
    json_decref(resp);
}

/* Fill the response (the last event when streaming); the caller completes it. */
static void job_fill(gw_call_job *j, char *body, int status) {
    if (j->plain) respond_plain(j, body);
    else if (j->streaming) {
        if (body) gg_http_sse_event(j->a, "message", NULL, body);
    } else if (body) {
        gg_http_res_bytes_take(job_res(j), status, "application/json", body, strlen(body));
        body = NULL;
    } else {
        gg_http_res_fail(job_res(j), "internal_error", "out of memory");
    }
    free(body);
}

static void job_respond(gw_call_job *j, char *body, int status) {
    job_fill(j, body, status);
    if (j->a) gg_http_async_complete(j->a);
}

/* "Answered means recorded" (history.durability: durable): the answer is filled in at
 * once but sent only when the history writer has committed the batch holding the call's
 * record (on the writer thread, every answer of a batch together). What waits is this
 * small block; the job is freed by the thread that made it. A record that cannot be
 * stored turns the answer into a 503. */
typedef struct gw_waiter {
    gg_http_async *a;
    gw_streams *streams; /* with ps: the answer goes to the resumable stream */
    gw_pstream *ps;
    int status;
    bool plain;
    char *sse;  /* streaming: the final event, sent on commit */
    json_t *id; /* the call's JSON-RPC id, for the refusal */
} gw_waiter;

#define GW_UNRECORDED "Server busy: the execution history cannot be written, so the call is not acknowledged; retry later"

static void waiter_committed(void *user, bool ok) {
    gw_waiter *w = user;
    if (w->ps) {
        if (!ok) {
            free(w->sse);
            w->sse = mcp_jsonrpc_error(w->id, MCP_SERVER_BUSY, GW_UNRECORDED, NULL);
            w->status = 503;
        }
        gw_pstream_finish(w->streams, w->ps, w->sse, w->status);
        json_decref(w->id);
        free(w);
        return;
    }
    if (!ok && w->sse) {
        free(w->sse);
        w->sse = mcp_jsonrpc_error(w->id, MCP_SERVER_BUSY, GW_UNRECORDED, NULL);
    } else if (!ok) {
        gg_http_res *res = gg_http_async_res(w->a);
        gg_http_res_header(res, "Retry-After", "1");
        if (w->plain) gg_http_res_fail(res, "unavailable", "%s", GW_UNRECORDED);
        else rpc_http_error(res, 503, w->id, MCP_SERVER_BUSY, GW_UNRECORDED);
    }
    if (w->sse) gg_http_sse_event(w->a, "message", NULL, w->sse);
    gg_http_async_complete(w->a);
    free(w->sse);
    json_decref(w->id);
    free(w);
}

/* Record j's final state and answer it: at once (async), or once the record is committed
 * (durable; j->a must be set). The caller frees j. */
/* job_answer for a resumable POST stream: the stream takes the answer (after the commit
 * when durable). */
static void job_answer_ps(gw_call_job *j, char *body, int status) {
    gw_waiter *w = j->gw->durable && j->rec && j->gw->history ? calloc(1, sizeof *w) : NULL;
    if (!w) {
        record_finish(j);
        gw_pstream_finish(j->gw->streams, j->ps, body, status);
    } else {
        *w = (gw_waiter){.streams = j->gw->streams, .ps = j->ps, .status = status, .sse = body,
                         .id = json_incref(mcp_call_id(j->call))};
        record_finish_then(j, waiter_committed, w);
    }
    j->ps = NULL;
}

static void job_answer(gw_call_job *j, char *body, int status) {
    if (j->ps) {
        job_answer_ps(j, body, status);
        return;
    }
    bool wait = j->gw->durable && j->rec && j->gw->history;
    if (wait && !j->a) { /* inline with the history journal: durable once appended */
        gg_exec_record *r = record_final(j);
        if (r && !gg_history_submit_journaled(j->gw->history, r)) {
            free(body);
            gg_http_res_header(j->res, "Retry-After", "1");
            body = mcp_call_refuse(j->call, MCP_SERVER_BUSY, GW_UNRECORDED);
            status = 503;
        }
        job_respond(j, body, status);
        return;
    }
    gw_waiter *w = wait && j->a ? calloc(1, sizeof *w) : NULL;
    if (!w) {
        record_finish(j);
        if (wait) { /* out of memory: the answer cannot wait for the commit */
            free(body);
            body = mcp_call_refuse(j->call, MCP_SERVER_BUSY, "Server busy: out of memory; retry later");
            status = 503;
        }
        job_respond(j, body, status);
        return;
    }
    w->a = j->a;
    w->plain = j->plain;
    w->id = json_incref(mcp_call_id(j->call));
    if (j->streaming) w->sse = body;
    else job_fill(j, body, status);
    j->a = NULL; /* the waiter completes it */
    record_finish_then(j, waiter_committed, w);
}

/* The execution record, made on the worker (off the HTTP thread) when the run starts. */
static void job_make_record(gw_call_job *j) {
    /* a proxied resources/prompts request is no run of the graph: nothing to record */
    if (!j->ep.is_graph || mcp_call_forwarded(j->call)) return;
    /* a call through the tenant-wide endpoint or a view is recorded as the graph's own run */
    const char *graph = j->ep.graph, *tool = mcp_call_tool(j->call);
    int version = j->ep.version;
    if (graph[0] == '_') gw_tenantwide_target(j->ep.srv, tool, &graph, &tool, &version);
    j->rec = j->gw->history
                 ? gg_history_record_new(j->gw->history, j->ep.tenant, graph, version, tool,
                                         j->has_key ? j->key_id : NULL, mcp_call_arguments(j->call))
                 : gg_exec_record_new(j->ep.tenant, graph, version, tool, j->has_key ? j->key_id : NULL,
                                      mcp_call_arguments(j->call));
    if (!j->rec) return;
    gg_trace_id_hex(mcp_call_trace(j->call), j->rec->trace_id);
    /* a later input-required round writes the row of its run's first round */
    const char *ex = mcp_call_round_exec_id(j->call);
    if (ex) memcpy(j->rec->id, ex, sizeof j->rec->id);
    /* graphs it calls name it parent; its node records give times from the start the record
     * is stored at (the id's: an input-required round's record is stored at its first's) */
    long long start = ex ? gg_exec_id_start_ms(j->rec->id) : j->rec->started_ms; /* a new id is made of its start */
    mcp_call_set_exec_id(j->call, j->rec->id, start > 0 ? start : 0);
}

static void job_call_done(void *user, char *body);

/* A continuation of the job's run (its downstream answer arrived): back to the pool, on the
 * tenant's queue. */
static void job_resume(void *user, void (*fn)(void *arg), void *arg) {
    gw_call_job *j = user;
    gw_job job = {fn, fn, arg, queue_key(&j->ep)};
    gw_pool_resume(j->gw->pool, job);
}

static void waiting_release(gg_gateway *gw, const char *tenant);

/* How long past the state's own expiry its claim is kept: the replicas' clocks differ. */
#define GW_ROUND_CLAIM_SLACK_S 300

/* A resumed input-required round goes on once: the state's nonce is claimed in the shared
 * store (one INSERT every replica races on) before the run — and any side effect after the
 * node that asked — continues. A state answered before is refused here, unrun and
 * unrecorded; the store unreachable refuses too (503: answering blind could run the round
 * twice). Claimed on the worker, so a call refused earlier (busy, draining) may be retried
 * with the same state. On refusal j is answered and freed: false. */
static bool job_claim_round(gw_call_job *j) {
    int round = 0;
    const char *nonce = mcp_call_round_nonce(j->call, &round);
    /* a mount's run (toolkit run_graph) is the caller's own source and arguments, runnable
     * afresh at will, and unrecorded: its state grants nothing a replay could abuse */
    if (!nonce || !j->ep.is_graph) return true;
    gg_gateway *gw = j->gw;
    gg_error e = GG_ERROR_INIT;
    long long until = gg_wall_ms() + (MCP_REQSTATE_TTL_S + GW_ROUND_CLAIM_SLACK_S) * 1000LL;
    if (gg_store_round_claim(gw->store, nonce, j->ep.tenant, mcp_call_round_exec_id(j->call), round, until, &e))
        return true;
    bool used = !strcmp(e.code, "already_answered");
    if (!used) gg_log(GG_LOG_WARN, "input-required round not claimed", "code", e.code, "error", e.message, NULL);
    char msg[300];
    if (used) snprintf(msg, sizeof msg, "Invalid params: %s", e.message ? e.message : "already answered");
    else snprintf(msg, sizeof msg, "Server busy: the answer to this input request cannot be checked against the store "
                                   "now; retry later with the same requestState");
    gg_error_clear(&e);
    gw_call_span_end(j->span, j->call, used ? "input request already answered" : "store unavailable");
    j->span = NULL;
    char *body = mcp_call_refuse(j->call, used ? MCP_INVALID_PARAMS : MCP_SERVER_BUSY, msg);
    if (j->ep.is_graph) gg_auth_exec_release(gw->auth, j->ep.tenant);
    if (j->may_wait) waiting_release(gw, j->ep.tenant);
    atomic_fetch_add_explicit(&gw->calls_failed, 1, memory_order_relaxed);
    if (*j->task_id) gw_task_finish(gw, j->ep.tenant, j->task_id, j->call, body);
    else {
        if (!used && j->a) gg_http_res_header(gg_http_async_res(j->a), "Retry-After", "1");
        job_respond(j, body, used ? 400 : 503);
    }
    job_free(j);
    return false;
}

static void job_run(void *arg) {
    gw_call_job *j = arg;
    gg_gateway *gw = j->gw;
    if (!job_claim_round(j)) return;
    if (j->ep.is_graph) wait_for_history(gw);
    job_make_record(j);
    /* a 2025-11-25 session's call made resumable: the stream holds the POST from here (a
     * POST ended early does not cancel the run; one the client drops does unless the client
     * resumes within GW_POST_GRACE_MS) */
    if (j->has_session && j->sse_ok && !j->plain && strcmp(j->sess.version, "2025-11-25") >= 0 &&
        (j->ps = gw_pstream_open(gw->streams, &j->sess, j->a, mcp_call_cancel_flag(j->call),
                                 gw->cfg->mcp_sse_close_after_ms)))
        j->a = NULL;
    running_add(gw, j);
    if (j->has_session) mcp_session_track_call(gw->sessions, &j->sess, mcp_call_id(j->call), mcp_call_cancel_flag(j->call));
    mcp_call_set_emitter(j->call, job_emit, j);
    if (j->has_session && j->sse_ok && !j->plain) mcp_call_set_client(j->call, gw->sessions, &j->sess);
    /* the run holds this worker only while it computes: waiting on a downstream server it
     * yields, and its continuation comes back through job_resume */
    mcp_call_async how = {job_resume, j, j->accepted_ms, job_call_done, j};
    mcp_call_start(j->call, j->request_id, j->has_key ? j->key_id : NULL, j->ep.caller, &how);
}

/* The run ended (on a worker): record, answer, release. */
static void job_call_done(void *user, char *body) {
    gw_call_job *j = user;
    gg_gateway *gw = j->gw;
    if (j->timed_out && strcmp(mcp_call_status(j->call), "cancelled") == 0) {
        char msg[96];
        snprintf(msg, sizeof msg, "Request timed out after %lld ms", gw->cfg->request_timeout_ms);
        free(body);
        body = mcp_call_refuse(j->call, MCP_REQUEST_TIMEOUT, msg);
    }
    if (j->has_session) mcp_session_untrack_call(gw->sessions, &j->sess, mcp_call_id(j->call));
    if (strcmp(mcp_call_status(j->call), "ok") != 0) atomic_fetch_add_explicit(&gw->calls_failed, 1, memory_order_relaxed);
    /* free the tenant's slot before answering: the client may send its next call at once */
    if (j->ep.is_graph) gg_auth_exec_release(gw->auth, j->ep.tenant);
    if (j->may_wait) waiting_release(gw, j->ep.tenant);
    /* off the watcher's list before the answer: once answered (or handed to the commit
     * waiter) j->a is no longer the job's */
    running_remove(gw, j);
    gw_call_span_end(j->span, j->call, NULL);
    j->span = NULL;
    if (*j->task_id) {
        record_finish(j);
        gw_task_finish(gw, j->ep.tenant, j->task_id, j->call, body);
    } else job_answer(j, body, mcp_call_http_status(j->call, body));
    job_free(j);
}

static void job_refuse(void *arg) {
    gw_call_job *j = arg;
    j->refused = true;
    job_make_record(j);
    gw_call_span_end(j->span, j->call, "the server is shutting down");
    j->span = NULL;
    char *body = mcp_call_refuse(j->call, MCP_SERVER_BUSY, "the server is shutting down; retry the request");
    if (j->a) gg_http_res_header(gg_http_async_res(j->a), "Retry-After", "1");
    record_finish(j);
    if (j->ep.is_graph) gg_auth_exec_release(j->gw->auth, j->ep.tenant);
    if (j->may_wait) waiting_release(j->gw, j->ep.tenant);
    if (*j->task_id) gw_task_finish(j->gw, j->ep.tenant, j->task_id, j->call, body);
    else job_respond(j, body, 503);
    job_free(j);
}

/* A call to a tool that only computes runs right here, on the HTTP thread, within the
 * inline budget: no hand-off to a worker, no suspend/resume of the connection (together
 * more than a small graph run costs). Past the budget the attempt is dropped unrecorded
 * (a pure run has no effects) and the call goes to the pool like any other. Not for calls
 * that stream notifications, nor while the history writer is behind (the pool path waits
 * for it, an HTTP thread must not). The tenant slot is already held. -1 = not run here (to
 * the pool), else the handler's answer: GG_HTTP_DONE, or GG_HTTP_DEFERRED when durable
 * (the answer waits for the commit of its record). */
static int try_inline(gg_gateway *gw, gg_http_req *req, gg_http_res *res, const endpoint *ep, mcp_call *call,
                      const gg_principal *pr, bool plain, bool text_history, gg_span *span) {
    if (gw->cfg->inline_budget_ms <= 0 || gw->stopping || !mcp_call_can_inline(call)) return -1;
    if (ep->is_graph && mcp_call_round_nonce(call, NULL)) return -1; /* its round is claimed first (job_run) */
    if (ep->is_graph && history_backlog(gw) > GW_HISTORY_BACKLOG_SOFT) return -1;
    gw_call_job j = {.gw = gw, .res = res, .call = call, .ep = *ep, .plain = plain, .text_history = text_history};
    if (pr) {
        gg_strcopy(j.key_id, sizeof j.key_id, pr->key_id);
        j.has_key = true;
    }
    gg_strcopy(j.request_id, sizeof j.request_id, gg_http_request_id(req));
    job_make_record(&j);
    bool over = false;
    char *body = mcp_call_run_inline(call, j.request_id, j.has_key ? j.key_id : NULL, ep->caller,
                                     (double)gw->cfg->inline_budget_ms, &over);
    if (over) {
        gg_exec_record_free(j.rec);
        atomic_fetch_add_explicit(&gw->calls_inline_over, 1, memory_order_relaxed);
        return -1;
    }
    atomic_fetch_add_explicit(&gw->calls_inline, 1, memory_order_relaxed);
    gw_call_span_end(span, call, NULL);
    if (strcmp(mcp_call_status(call), "ok") != 0) atomic_fetch_add_explicit(&gw->calls_failed, 1, memory_order_relaxed);
    if (ep->is_graph) gg_auth_exec_release(gw->auth, ep->tenant);
    /* durable: answered once the record is committed, or at once when the history journal
     * holds it (job_answer) */
    if (gw->durable && j.rec && !gg_history_journaling(gw->history)) j.a = gg_http_defer(req);
    int rc = j.a ? GG_HTTP_DEFERRED : GG_HTTP_DONE;
    job_answer(&j, body, 200);
    mcp_call_free(call);
    return rc;
}

/* ------------------------------------------------------------------ waiting bounds */

/* Calls of one tenant in flight to tools that may wait on downstream servers (gw->waiting,
 * under waiting_mu). Such a call holds no thread while it waits, so the bound is on memory
 * and downstream load, not on workers. */
typedef enum { WAIT_OK, WAIT_TENANT_FULL, WAIT_FULL } wait_rc;

static wait_rc waiting_acquire(gg_gateway *gw, const char *tenant) {
    wait_rc rc = WAIT_OK;
    pthread_mutex_lock(&gw->waiting_mu);
    if (gw->max_waiting > 0 && gw->waiting_total >= gw->max_waiting) rc = WAIT_FULL;
    else {
        gg_tally_rc t = gg_tally_add(&gw->waiting, tenant, gw->tenant_max_waiting);
        if (t == GG_TALLY_FULL) rc = WAIT_TENANT_FULL;
        else if (t == GG_TALLY_OOM) rc = WAIT_FULL;
        else atomic_fetch_add_explicit(&gw->waiting_total, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&gw->waiting_mu);
    return rc;
}

static void waiting_release(gg_gateway *gw, const char *tenant) {
    pthread_mutex_lock(&gw->waiting_mu);
    if (gg_tally_get(&gw->waiting, tenant) > 0) {
        gg_tally_sub(&gw->waiting, tenant);
        atomic_fetch_sub_explicit(&gw->waiting_total, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&gw->waiting_mu);
}

/* See internal.h: the same bounds for a run a mounted provider starts (toolkit run_graph). */
int gw_waiting_acquire(gg_gateway *gw, const char *tenant) { return (int)waiting_acquire(gw, tenant); }
void gw_waiting_release(gg_gateway *gw, const char *tenant) { waiting_release(gw, tenant); }

/* Answer a call that will not run now (429 for the tenant's own caps, 503 otherwise). */
static int refuse_call(gg_http_res *res, json_t *id, bool plain, int status, const char *message) {
    gg_http_res_header(res, "Retry-After", "1");
    if (plain) gg_http_res_error(res, status, status == 429 ? "rate_limited" : "busy", "%s", message);
    else rpc_http_error(res, status, id, MCP_SERVER_BUSY, message);
    json_decref(id);
    return GG_HTTP_DONE;
}

/* See internal.h: a task's run, on the pool like any call, answered to the store. */
static bool task_refused(gg_gateway *gw, const endpoint *ep, mcp_call *call, const char *task_id, const char *why) {
    mcp_call_free(call);
    gw_task_finish(gw, ep->tenant, task_id, NULL, mcp_jsonrpc_error(NULL, MCP_SERVER_BUSY, why, NULL));
    return false;
}

bool gw_task_run(gg_gateway *gw, void *epv, mcp_call *call, const char *key_id, const char *task_id, char *why,
                 size_t why_n) {
    endpoint *ep = epv;
    if (gw_refuse_calls(gw, ep->is_graph, why, why_n)) return task_refused(gw, ep, call, task_id, why);
    if (ep->is_graph && !gg_auth_exec_acquire(gw->auth, ep->tenant)) {
        snprintf(why, why_n, "too many concurrent executions for this tenant");
        return task_refused(gw, ep, call, task_id, why);
    }
    gw_call_job *j = calloc(1, sizeof *j);
    if (!j) {
        snprintf(why, why_n, "out of memory");
        if (ep->is_graph) gg_auth_exec_release(gw->auth, ep->tenant);
        return task_refused(gw, ep, call, task_id, why);
    }
    j->gw = gw;
    j->call = call;
    j->ep = *ep;
    j->ep.srv = mcp_server_ref(ep->srv);
    if (key_id && *key_id) {
        gg_strcopy(j->key_id, sizeof j->key_id, key_id);
        j->has_key = true;
    }
    snprintf(j->task_id, sizeof j->task_id, "%s", task_id);
    gg_strcopy(j->request_id, sizeof j->request_id, task_id);
    j->accepted_ms = gg_now_ms();
    if (ep->is_graph && gw->history) {
        j->text_history = true;
        mcp_call_use_history_text(call, gw->cfg->history_max_payload);
        mcp_call_bound_history(call, (size_t)gw->cfg->history_max_run_records, gw->cfg->history_max_run_bytes);
    }
    gw_task_track(gw, ep->tenant, task_id, call);
    gw_job job = {job_run, job_refuse, j, j->ep.tenant};
    if (gw_pool_submit(gw->pool, job) != GW_SUBMIT_OK) {
        snprintf(why, why_n, "the tenant's call queue is full");
        j->refused = true;
        job_make_record(j);
        record_finish(j);
        gw_task_finish(gw, j->ep.tenant, task_id, NULL, mcp_jsonrpc_error(NULL, MCP_SERVER_BUSY, why, NULL));
        if (ep->is_graph) gg_auth_exec_release(gw->auth, ep->tenant);
        job_free(j);
        return false;
    }
    return true;
}

/* A tools/call answered with a task: the row first (a tasks/get right after the answer
 * finds it), then the run. */
static int submit_task(gg_gateway *gw, gg_http_res *res, endpoint *ep, mcp_call *call, const gg_principal *pr,
                       int client_caps) {
    char task_id[48], why[320];
    gg_error err = GG_ERROR_INIT;
    json_t *id = json_incref(mcp_call_id(call));
    char *body = gw_task_create(gw, ep->tenant, ep->graph, ep->version, pr ? pr->key_id : "", client_caps, call, task_id, &err);
    if (!body) {
        bool many = !strcmp(err.code, "too_many");
        int rc = rpc_http_error(res, many ? 429 : 503, id, MCP_SERVER_BUSY, err.message ? err.message : "the task could not be stored");
        gg_error_clear(&err);
        json_decref(id);
        mcp_call_free(call);
        return rc;
    }
    json_decref(id);
    gw_task_run(gw, ep, call, pr ? pr->key_id : "", task_id, why, sizeof why); /* a refusal fails the task */
    gg_http_res_bytes_take(res, 200, "application/json", body, strlen(body));
    return GG_HTTP_DONE;
}

/* The calling principal's scopes and identity on the call (graphs read it as $caller):
 * copied into the call, nothing allocated. */
static void set_principal(mcp_call *call, const gg_principal *pr) {
    mcp_call_set_scopes(call, pr ? pr->scopes : 0);
    if (!pr) return;
    char scopes[96];
    gg_scopes_format(pr->scopes, scopes, sizeof scopes);
    mcp_caller who = {pr->key_id, NULL, NULL, NULL, scopes};
    if (pr->oauth) {
        who.issuer = pr->issuer;
        who.subject = pr->subject;
        who.client_id = pr->client_id;
    }
    mcp_call_set_caller(call, &who);
}

/* An OAuth principal's own access token on the call, for a downstream server whose
 * credentials are exchanged for it (auth type token_exchange, RFC 8693): held by the call in
 * memory only, never recorded (mcp_call_set_subject_token). An API key's call has none. */
static void set_subject_token(mcp_call *call, gg_http_req *req, const gg_principal *pr) {
    const char *h = pr && pr->oauth ? gg_http_header(req, "Authorization") : NULL;
    size_t skip = h && !strncasecmp(h, "Bearer ", 7) ? 7 : h && !strncasecmp(h, "DPoP ", 5) ? 5 : 0;
    if (!skip) return;
    const char *t = h + skip;
    while (*t == ' ') t++;
    size_t len = strlen(t);
    while (len && t[len - 1] == ' ') len--;
    mcp_call_set_subject_token(call, t, len);
}

/* Hand a validated tools/call to the pool; answers 429/503 itself when it cannot. */
static int submit_call(gg_gateway *gw, gg_http_req *req, gg_http_res *res, endpoint *ep, mcp_call *call,
                       const mcp_session *sess, const gg_principal *pr, bool plain) {
    double accepted = gg_now_ms(); /* the call's time limits count from here */
    atomic_fetch_add_explicit(&gw->calls_total, 1, memory_order_relaxed);
    set_principal(call, pr);
    set_subject_token(call, req, pr);
    json_t *id = json_incref(mcp_call_id(call));
    char why[320];
    if (gw_refuse_calls(gw, ep->is_graph, why, sizeof why)) { /* draining, or durable and unrecordable */
        atomic_fetch_add_explicit(&gw->calls_rejected, 1, memory_order_relaxed);
        mcp_call_free(call);
        gg_http_res_header(res, "Retry-After", "1");
        if (plain) gg_http_res_fail(res, "unavailable", "%s", why);
        else rpc_http_error(res, 503, id, MCP_SERVER_BUSY, why);
        json_decref(id);
        return GG_HTTP_DONE;
    }
    if (ep->is_graph && history_backlog(gw) > GW_HISTORY_BACKLOG_MAX) {
        /* every run is recorded: refuse rather than run one the writer would drop */
        atomic_fetch_add_explicit(&gw->calls_rejected, 1, memory_order_relaxed);
        mcp_call_free(call);
        gg_http_res_header(res, "Retry-After", "1");
        if (plain) gg_http_res_fail(res, "busy", "the execution history writer is behind; retry later");
        else rpc_http_error(res, 503, id, MCP_SERVER_BUSY, "Server busy: the execution history writer is behind; retry later");
        json_decref(id);
        return GG_HTTP_DONE;
    }
    if (ep->is_graph && !gg_auth_exec_acquire(gw->auth, ep->tenant)) {
        atomic_fetch_add_explicit(&gw->calls_rejected, 1, memory_order_relaxed);
        mcp_call_free(call);
        gg_http_res_header(res, "Retry-After", "1");
        if (plain) gg_http_res_fail(res, "rate_limited", "too many concurrent executions for this tenant; retry later");
        else rpc_http_error(res, 429, id, MCP_SERVER_BUSY, "Too many concurrent executions for this tenant; retry later");
        json_decref(id);
        return GG_HTTP_DONE;
    }
    bool may_wait = ep->is_graph && mcp_call_may_wait(call);
    wait_rc wrc = may_wait ? waiting_acquire(gw, ep->tenant) : WAIT_OK;
    if (wrc != WAIT_OK) {
        atomic_fetch_add_explicit(&gw->calls_rejected, 1, memory_order_relaxed);
        mcp_call_free(call);
        gg_auth_exec_release(gw->auth, ep->tenant);
        return refuse_call(res, id, plain, wrc == WAIT_TENANT_FULL ? 429 : 503,
                           wrc == WAIT_TENANT_FULL ? "Too many calls of this tenant waiting on downstream servers; retry later"
                                                   : "Server busy: too many calls waiting on downstream servers; retry later");
    }
    /* the plain endpoint answers from the exit node's output in the JSON history */
    bool text_history = ep->is_graph && !plain && gw->history;
    if (text_history) {
        mcp_call_use_history_text(call, gw->cfg->history_max_payload);
        mcp_call_bound_history(call, (size_t)gw->cfg->history_max_run_records, gw->cfg->history_max_run_bytes);
    }
    gg_span *span = gw_call_span_begin(req, call, ep->tenant, ep->graph, ep->version, pr ? pr->key_id : NULL);
    int irc = try_inline(gw, req, res, ep, call, pr, plain, text_history, span);
    if (irc >= 0) {
        json_decref(id);
        return irc;
    }
    gw_call_job *j = calloc(1, sizeof *j);
    gg_http_async *a = j ? gg_http_defer(req) : NULL;
    if (!a) {
        free(j);
        gw_call_span_end(span, call, "out of memory");
        mcp_call_free(call);
        if (ep->is_graph) gg_auth_exec_release(gw->auth, ep->tenant);
        if (may_wait) waiting_release(gw, ep->tenant);
        gg_http_res_header(res, "Retry-After", "1");
        if (plain) gg_http_res_fail(res, "busy", "server busy; retry later");
        else rpc_http_error(res, 503, id, MCP_SERVER_BUSY, "Server busy");
        json_decref(id);
        return GG_HTTP_DONE;
    }
    j->gw = gw;
    j->a = a;
    j->call = call;
    j->span = span;
    j->ep = *ep;
    j->ep.srv = mcp_server_ref(ep->srv);
    if (sess) {
        j->sess = *sess;
        j->has_session = true;
    }
    if (pr) {
        gg_strcopy(j->key_id, sizeof j->key_id, pr->key_id);
        j->has_key = true;
    }
    gg_strcopy(j->request_id, sizeof j->request_id, gg_http_request_id(req));
    j->sse_ok = header_has_token(gg_http_header(req, "Accept"), "text/event-stream");
    j->plain = plain;
    j->text_history = text_history;
    j->accepted_ms = accepted;
    j->may_wait = may_wait;
    gw_job job = {job_run, job_refuse, j, queue_key(ep)};
    gw_submit_rc src = gw_pool_submit(gw->pool, job);
    if (src != GW_SUBMIT_OK) {
        /* queue full (the pool's or the tenant's): answer at once instead of piling up */
        atomic_fetch_add_explicit(&gw->calls_rejected, 1, memory_order_relaxed);
        bool tenant = src == GW_SUBMIT_TENANT_FULL;
        const char *msg = tenant ? "Too many queued calls for this tenant; retry later"
                                 : "Server busy: the tool-call queue is full; retry later";
        char *body = mcp_call_refuse(call, MCP_SERVER_BUSY, msg);
        gg_http_res *ares = gg_http_async_res(a);
        gg_http_res_header(ares, "Retry-After", "1");
        if (plain)
            gg_http_res_error_extra(ares, tenant ? 429 : 503, tenant ? "rate_limited" : "busy",
                                    json_pack("{s:i}", "retry_after", 1), "%s", msg);
        else if (body) gg_http_res_bytes(ares, tenant ? 429 : 503, "application/json", body, strlen(body));
        free(body);
        gg_http_async_complete(a);
        if (ep->is_graph) gg_auth_exec_release(gw->auth, ep->tenant);
        if (may_wait) waiting_release(gw, ep->tenant);
        job_free(j);
    }
    json_decref(id);
    return GG_HTTP_DEFERRED;
}

/* ------------------------------------------------------------------ batches (2025-03-26) */

typedef struct batch_job {
    gg_gateway *gw;
    gg_http_async *a;
    json_t *responses;  /* array being filled */
    mcp_call **calls;
    size_t ncalls;
    endpoint ep;
    char key_id[GG_KEY_ID_LEN + 1];
    bool has_key;
    size_t next;        /* the call running or next to run */
    _Atomic int meet;   /* its starter and its answer meet; the second goes on */
    gw_call_job rec;    /* the running call's execution record (job_make_record) */
    bool *unrecorded;   /* by response index: durable, and the call's record was not stored */
    _Atomic int pending; /* 1 for the calls + records waiting for their commit */
} batch_job;

/* Every call ran and (durable) every record is committed: the answer goes out, each call
 * whose record could not be stored answered with the history error instead of its result. */
static void batch_end(batch_job *b) {
    bool refused = false;
    for (size_t i = 0; b->unrecorded && i < json_array_size(b->responses); i++) {
        if (!b->unrecorded[i]) continue;
        char *e = mcp_jsonrpc_error(json_object_get(json_array_get(b->responses, i), "id"), MCP_SERVER_BUSY,
                                    GW_UNRECORDED, NULL);
        json_t *ev = e ? json_loads(e, 0, NULL) : NULL;
        free(e);
        if (ev) json_array_set_new(b->responses, i, ev);
        refused = true;
    }
    if (refused) gg_http_res_header(gg_http_async_res(b->a), "Retry-After", "1");
    free(b->calls);
    free(b->unrecorded);
    gg_http_res_json(gg_http_async_res(b->a), 200, b->responses);
    gg_http_async_complete(b->a);
    free(b);
}

static void batch_release(batch_job *b) {
    if (atomic_fetch_sub_explicit(&b->pending, 1, memory_order_acq_rel) == 1) batch_end(b);
}

typedef struct batch_commit {
    batch_job *b;
    size_t idx; /* the call's response */
} batch_commit;

/* The history writer committed (or could not store) one call's record. */
static void batch_committed(void *user, bool ok) {
    batch_commit *c = user;
    batch_job *b = c->b;
    if (!ok) b->unrecorded[c->idx] = true;
    free(c);
    batch_release(b);
}

/* The running call's record, made as it starts (graph endpoints only). */
static void batch_record_start(batch_job *b) {
    gw_call_job *j = &b->rec;
    j->call = b->calls[b->next];
    if (!b->ep.is_graph) return;
    j->span = gw_call_span_begin(NULL, j->call, b->ep.tenant, b->ep.graph, b->ep.version, b->has_key ? b->key_id : NULL);
    j->text_history = b->gw->history != NULL;
    if (j->text_history) {
        mcp_call_use_history_text(j->call, b->gw->cfg->history_max_payload);
        mcp_call_bound_history(j->call, (size_t)b->gw->cfg->history_max_run_records, b->gw->cfg->history_max_run_bytes);
    }
    job_make_record(j);
}

/* The finished call's record; durable, the batch's answer waits for its commit. */
static void batch_record_finish(batch_job *b, size_t idx, bool answered) {
    gw_call_job *j = &b->rec;
    j->call = b->calls[b->next];
    gw_call_span_end(j->span, j->call, NULL);
    j->span = NULL;
    if (!j->rec) return;
    bool wait = b->gw->durable && b->gw->history && answered;
    batch_commit *c = wait ? malloc(sizeof *c) : NULL;
    if (!c) {
        if (wait) b->unrecorded[idx] = true; /* out of memory: cannot wait for the commit */
        record_finish(j);
        return;
    }
    c->b = b;
    c->idx = idx;
    atomic_fetch_add_explicit(&b->pending, 1, memory_order_acq_rel);
    record_finish_then(j, batch_committed, c);
}

static void batch_add(batch_job *b, char *body) {
    json_t *v = body ? json_loads(body, 0, NULL) : NULL;
    size_t idx = json_array_size(b->responses);
    if (v) json_array_append_new(b->responses, v);
    free(body);
    batch_record_finish(b, idx, v != NULL);
    mcp_call_free(b->calls[b->next]);
    b->next++;
}

/* All calls ended: the tenant's slot and the server are let go here, before the answer,
 * which may go out from the history writer's commit callback (kept short there). */
static void batch_calls_done(batch_job *b) {
    if (b->ep.is_graph) gg_auth_exec_release(b->gw->auth, b->ep.tenant);
    mcp_server_unref(b->ep.srv);
    b->ep.srv = NULL;
    b->rec.ep.srv = NULL;
    batch_release(b);
}

static void batch_resume(void *user, void (*fn)(void *arg), void *arg) {
    batch_job *b = user;
    gw_job job = {fn, fn, arg, b->ep.tenant};
    gw_pool_resume(b->gw->pool, job);
}

static void batch_step(batch_job *b);

/* One call of the batch ended (on a worker, or inside mcp_call_start). */
static void batch_call_done(void *user, char *body) {
    batch_job *b = user;
    batch_add(b, body);
    /* the second of starter and answer goes on with the next call */
    if (atomic_fetch_add_explicit(&b->meet, 1, memory_order_acq_rel) == 1) batch_step(b);
}

/* Run the batch's calls one after another; a call waiting downstream holds no thread. */
static void batch_step(batch_job *b) {
    while (b->next < b->ncalls) {
        atomic_store_explicit(&b->meet, 0, memory_order_relaxed);
        batch_record_start(b);
        mcp_call_async how = {batch_resume, b, 0, batch_call_done, b};
        mcp_call_start(b->calls[b->next], NULL, b->has_key ? b->key_id : NULL, b->ep.caller, &how);
        if (atomic_fetch_add_explicit(&b->meet, 1, memory_order_acq_rel) == 0) return; /* the answer goes on */
    }
    batch_calls_done(b);
}

static void batch_refuse_all(batch_job *b, const char *why) {
    while (b->next < b->ncalls) batch_add(b, mcp_call_refuse(b->calls[b->next], MCP_SERVER_BUSY, why));
    batch_calls_done(b);
}

static void batch_run(void *arg) {
    batch_job *b = arg;
    b->rec = (gw_call_job){.gw = b->gw, .ep = b->ep, .has_key = b->has_key};
    snprintf(b->rec.key_id, sizeof b->rec.key_id, "%s", b->key_id);
    b->unrecorded = calloc(json_array_size(b->responses) + b->ncalls, sizeof *b->unrecorded);
    if (!b->unrecorded) batch_refuse_all(b, "Server busy: out of memory; retry later");
    else batch_step(b);
}

static void batch_refuse(void *arg) { batch_refuse_all(arg, "the server is shutting down"); }

/* ------------------------------------------------------------------ the handler */

static int handle_delete(gg_gateway *gw, gg_http_req *req, gg_http_res *res, endpoint *ep, const char *key_id) {
    const char *sid = gg_http_header(req, SESSION_HEADER);
    if (!sid) return rpc_http_error(res, 400, NULL, MCP_INVALID_REQUEST, "Bad Request: Mcp-Session-Id header is required");
    mcp_session s;
    gg_error err = GG_ERROR_INIT;
    if (!mcp_session_check(gw->sessions, sid, ep->tenant, ep->graph, key_id, &s, &err)) {
        gg_error_clear(&err);
        return rpc_http_error(res, 404, NULL, -32001, "Session not found");
    }
    mcp_session_revoke(gw->sessions, &s);
    gw_streams_end_session(gw->streams, &s); /* its GET streams end with it */
    gg_http_res_bytes(res, 200, "application/json", "{}", 2);
    return GG_HTTP_DONE;
}

static gg_scope scope_for(const mcp_message *m) {
    bool exec = m->kind == MCP_MSG_REQUEST && (!strcmp(m->method, "tools/call") || !strcmp(m->method, "tasks/update") ||
                                               !strcmp(m->method, "tasks/cancel"));
    return exec ? GG_SCOPE_TOOLS_EXECUTE : GG_SCOPE_TOOLS_READ;
}

/* initialize past the tenant's bound of live sessions (tenants.max_sessions) while every
 * one of them is held by a GET stream or a call in flight (an idle one would have been
 * evicted), or past the bound on deleted ones: 429 with the request's id, no session. */
static int session_refused(gg_gateway *gw, gg_http_res *res, mcp_outcome *o) {
    json_t *resp = o->body ? json_loads(o->body, 0, NULL) : NULL;
    char msg[200];
    snprintf(msg, sizeof msg, "Too many sessions: at most %d live MCP sessions per tenant (tenants.max_sessions),"
             " each with an open stream or a call in flight; end one with DELETE or retry later",
             gw->cfg->tenant_max_sessions);
    gg_http_res_header(res, "Retry-After", "60");
    int rc = rpc_http_error(res, 429, json_object_get(resp, "id"), MCP_SERVER_BUSY, msg);
    json_decref(resp);
    mcp_outcome_clear(o);
    return rc;
}

/* Apply an outcome's session side effects and turn it into the HTTP answer. */
static int finish_outcome(gg_gateway *gw, gg_http_req *req, gg_http_res *res, endpoint *ep, mcp_outcome *o,
                          const mcp_session *sess, const gg_principal *pr) {
    const char *key_id = pr ? pr->key_id : "";
    record_refusal(gw, ep, pr ? pr->key_id : NULL, o);
    if (o->initialize) {
        char sid[MCP_SESSION_ID_MAX];
        mcp_session issued;
        if (mcp_session_issue(gw->sessions, ep->tenant, ep->graph, key_id, o->negotiated_version, sid, &issued)) {
            gg_http_res_header(res, SESSION_HEADER, sid);
            mcp_session_set_client_caps(gw->sessions, &issued, o->client_caps);
        } else return session_refused(gw, res, o);
    }
    if (sess && o->set_log_level >= 0) mcp_session_set_log_level(gw->sessions, sess, (mcp_log_level)o->set_log_level);
    if (sess && o->cancel_id) mcp_session_cancel_call(gw->sessions, sess, o->cancel_id);
    if (sess && o->subscribe) mcp_session_subscribe(gw->sessions, sess, o->subscribe_uri, o->subscribe > 0);
    if (o->response_id && !(sess && mcp_session_deliver(gw->sessions, sess, o->response_id, o->response_result, o->response_error))) {
        mcp_outcome_clear(o);
        return gg_http_res_fail(res, "unknown_response", "no request of this session waits for this response id"), GG_HTTP_DONE;
    }
    int rc = GG_HTTP_DONE;
    switch (o->kind) {
    case MCP_OUT_ACCEPTED:
        gg_http_res_bytes(res, 202, "application/json", "", 0);
        break;
    case MCP_OUT_RESPONSE:
        gg_http_res_bytes_take(res, 200, "application/json", o->body, strlen(o->body));
        o->body = NULL;
        break;
    case MCP_OUT_CALL: {
        mcp_call *c = o->call;
        o->call = NULL;
        rc = submit_call(gw, req, res, ep, c, sess, pr, false);
        break;
    }
    }
    mcp_outcome_clear(o);
    return rc;
}

static int handle_batch(gg_gateway *gw, gg_http_req *req, gg_http_res *res, endpoint *ep, json_t *arr,
                        const mcp_session *sess, const char *version, const gg_principal *pr) {
    size_t n = json_array_size(arr);
    if (n == 0 || n > MAX_BATCH)
        return rpc_http_error(res, 400, NULL, MCP_INVALID_REQUEST, n ? "Invalid Request: batch too large" : "Invalid Request: empty batch");
    batch_job *b = calloc(1, sizeof *b);
    if (!b || !(b->responses = json_array()) || !(b->calls = calloc(n, sizeof *b->calls))) {
        if (b) json_decref(b->responses);
        free(b);
        return rpc_http_error(res, 500, NULL, MCP_INTERNAL_ERROR, "Internal error: out of memory");
    }
    mcp_request_ctx rc = {version, sess ? sess->level : MCP_LOG_OFF, sess != NULL};
    size_t i;
    json_t *v;
    int status = 0; /* a non-200 answer for the whole batch (scope) */
    json_array_foreach(arr, i, v) {
        mcp_message m;
        mcp_jsonrpc_classify(v, &m);
        if (pr && m.kind != MCP_MSG_INVALID && !gg_scope_allows(pr->scopes, scope_for(&m))) {
            gw_insufficient_scope_mcp(gw, req, res, pr, scope_for(&m));
            status = 403;
            break;
        }
        if (m.kind == MCP_MSG_REQUEST && strcmp(m.method, "initialize") == 0) {
            json_array_append_new(b->responses, json_loads("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"Invalid Request: initialize must not be part of a batch\"}}", 0, NULL));
            json_object_set(json_array_get(b->responses, json_array_size(b->responses) - 1), "id", m.id);
            continue;
        }
        mcp_outcome o;
        mcp_server_dispatch(ep->srv, &m, &rc, &o);
        record_refusal(gw, ep, pr ? pr->key_id : NULL, &o);
        if (sess && o.set_log_level >= 0) mcp_session_set_log_level(gw->sessions, sess, (mcp_log_level)o.set_log_level);
        if (sess && o.cancel_id) mcp_session_cancel_call(gw->sessions, sess, o.cancel_id);
        if (sess && o.subscribe) mcp_session_subscribe(gw->sessions, sess, o.subscribe_uri, o.subscribe > 0);
        if (sess && o.response_id) mcp_session_deliver(gw->sessions, sess, o.response_id, o.response_result, o.response_error);
        if (o.kind == MCP_OUT_RESPONSE) {
            json_t *r = json_loads(o.body, 0, NULL);
            if (r) json_array_append_new(b->responses, r);
        } else if (o.kind == MCP_OUT_CALL) {
            gg_trace_ctx *tc = mcp_call_trace(o.call); /* no _meta context: the request's headers */
            if (!tc->valid) gg_trace_parse(tc, gg_http_header(req, "traceparent"), gg_http_header(req, "tracestate"));
            set_principal(o.call, pr);
            set_subject_token(o.call, req, pr);
            b->calls[b->ncalls++] = o.call;
            o.call = NULL;
        }
        mcp_outcome_clear(&o);
    }
    if (status || b->ncalls == 0) {
        for (size_t k = 0; k < b->ncalls; k++) mcp_call_free(b->calls[k]);
        free(b->calls);
        if (!status) {
            if (json_array_size(b->responses)) gg_http_res_json(res, 200, json_incref(b->responses));
            else gg_http_res_bytes(res, 202, "application/json", "", 0);
        }
        json_decref(b->responses);
        free(b);
        return GG_HTTP_DONE;
    }
    char why[320];
    bool refuse = gw_refuse_calls(gw, ep->is_graph, why, sizeof why); /* draining, or durable and unrecordable */
    if (refuse || (ep->is_graph && !gg_auth_exec_acquire(gw->auth, ep->tenant))) {
        for (size_t k = 0; k < b->ncalls; k++) mcp_call_free(b->calls[k]);
        free(b->calls);
        json_decref(b->responses);
        free(b);
        gg_http_res_header(res, "Retry-After", "1");
        if (refuse) return rpc_http_error(res, 503, NULL, MCP_SERVER_BUSY, why);
        return rpc_http_error(res, 429, NULL, MCP_SERVER_BUSY, "Too many concurrent executions for this tenant");
    }
    b->gw = gw;
    b->pending = 1; /* the calls' own share (batch_calls_done) */
    b->ep = *ep;
    b->ep.srv = mcp_server_ref(ep->srv);
    if (pr) {
        snprintf(b->key_id, sizeof b->key_id, "%s", pr->key_id);
        b->has_key = true;
    }
    b->a = gg_http_defer(req);
    gw_job job = {batch_run, batch_refuse, b, b->ep.tenant};
    if (!b->a || gw_pool_submit(gw->pool, job) != GW_SUBMIT_OK) {
        if (b->a) { /* answer the deferred request with 503 */
            gg_http_res_header(gg_http_async_res(b->a), "Retry-After", "1");
            char *body = mcp_jsonrpc_error(NULL, MCP_SERVER_BUSY, "Server busy", NULL);
            if (body) gg_http_res_bytes_take(gg_http_async_res(b->a), 503, "application/json", body, strlen(body));
            gg_http_async_complete(b->a);
        }
        for (size_t k = 0; k < b->ncalls; k++) mcp_call_free(b->calls[k]);
        free(b->calls);
        json_decref(b->responses);
        if (ep->is_graph) gg_auth_exec_release(gw->auth, ep->tenant);
        mcp_server_unref(b->ep.srv);
        bool deferred = b->a != NULL;
        free(b);
        if (!deferred) {
            gg_http_res_header(res, "Retry-After", "1");
            return rpc_http_error(res, 503, NULL, MCP_SERVER_BUSY, "Server busy");
        }
    }
    return GG_HTTP_DEFERRED;
}

static const char *req_header(void *req, const char *name) { return gg_http_header(req, name); }

/* ------------------------------------------------------------------ relay runs held elsewhere
 * A relay round's run (provider.c acall_park) is held in the memory of the replica that
 * parked it, its downstream call open there; the round's sealed state names that holder
 * ({"id","url","until"}: cluster.internal_url). A 2026-07-28 retry that reaches another
 * replica is checked here as usual (key, scope, the state opened under the caller's binding)
 * and then sent, unchanged, to the holder's internal listener with the caller's key id in
 * GW_FORWARD_HEADER; the holder's answer — the result, or the next round with a new state
 * naming it again — goes back as it came. The forwarder claims nothing: the round's nonce is
 * claimed once, by the holder (job_claim_round), and records nothing (the holder writes the
 * run's row). Only the internal listener reads the header (the public one never does: a
 * client cannot choose whose binding a state is opened under), and a request carrying it is
 * never forwarded again (one hop). The forward accepts what the client accepts: when the holder
 * answers with an event stream (the client asked for progress or log messages), its bytes go
 * on to the client as they come, notifications and answer alike; the holder's Retry-After goes
 * back too (a refusal for want of a slot: 429 with Retry-After). The request to the holder is
 * client_http.c's raw pass-through (forward.c): a client that goes away closes it (the
 * watcher sees the client gone, forwards_cancel), and the holder, seeing its own client go,
 * cancels the run as it does for a client of its own. */
#define GW_FORWARD_HEADER "Graphgate-Forwarded-Key"

/* The key id a forwarded request names (internal listener only): NULL when it is not one,
 * "" for a caller without a key. */
static const char *forwarded_key(gg_http_req *req) {
    if (gg_http_listener(req) != GG_LISTENER_INTERNAL) return NULL;
    const char *k = gg_http_header(req, GW_FORWARD_HEADER);
    if (!k) return NULL;
    if (!strcmp(k, "-")) return "";
    size_t n = strlen(k);
    return n && n <= GG_KEY_ID_LEN && strspn(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == n ? k : NULL;
}

/* A forward in flight: on gw->forwards (under jobs_mu) from its start until its answer. */
typedef struct gw_fwd {
    gg_gateway *gw;
    gg_http_async *a;
    json_t *id;
    bool streamed;              /* the holder's event stream is the client's answer */
    atomic_int cancel;          /* the forward's: its client went away, or shutdown */
    struct gw_fwd *next, *prev; /* gw->forwards */
    char tenant[GG_TENANT_MAX];
} gw_fwd;

/* Under jobs_mu (the watcher every 50 ms, shutdown with all): a forward whose client went
 * away — which a plain JSON answer, written only at the end, would never notice — closes its
 * request, so that the holder sees its own client go and cancels the run as it would for a
 * client of its own. */
static void forwards_cancel(gg_gateway *gw, bool all) {
    for (gw_fwd *f = gw->forwards; f; f = f->next)
        if (all || gg_http_async_abandoned(f->a)) atomic_store_explicit(&f->cancel, 1, memory_order_relaxed);
}

/* On gw->forwards (in: also counted as a call in flight, which shutdown waits for; cancelled
 * at once when shutdown began already) or off it. */
static void forward_link(gw_fwd *f, bool in) {
    gg_gateway *gw = f->gw;
    pthread_mutex_lock(&gw->jobs_mu);
    if (in) {
        gw->running++;
        atomic_store_explicit(&f->cancel, atomic_load(&gw->stopping) ? 1 : 0, memory_order_relaxed);
        f->next = gw->forwards;
        if (f->next) f->next->prev = f;
        gw->forwards = f;
    } else {
        if (f->prev) f->prev->next = f->next;
        else gw->forwards = f->next;
        if (f->next) f->next->prev = f->prev;
    }
    pthread_mutex_unlock(&gw->jobs_mu);
}

/* The holder's Retry-After (validated by the client: delay-seconds or a date) goes on. */
static void forward_retry_after(gw_fwd *f, const mcp_http_answer *a) {
    if (a->retry_after) gg_http_res_header(gg_http_async_res(f->a), "Retry-After", a->retry_after);
}

/* mcp_http_raw_stream_fn (loop thread): the holder's event stream, passed on unchanged
 * (bounded by the stream's buffer: a client that does not read stops the forward). */
static bool forward_stream(void *user, const mcp_http_answer *head, const char *bytes, size_t n) {
    gw_fwd *f = user;
    if (!head) return gg_http_async_write(f->a, bytes, n);
    forward_retry_after(f, head);
    return (f->streamed = gg_http_async_stream(f->a, (int)head->status, "text/event-stream"));
}

/* The holder's answer (loop thread): a JSON-RPC answer goes back as it came; anything else, or
 * no answer, is an error naming neither the holder nor its URL. Either way a Retry-After the
 * holder sent goes back with it. */
static void forward_done(void *user, const mcp_http_answer *a, gg_error *err) {
    gw_fwd *f = user;
    forward_link(f, false); /* f->a is completed below */
    gg_http_res *res = gg_http_async_res(f->a);
    bool failed = err && gg_error_is_set(err);
    json_t *v = !failed && a->body ? json_loadb(a->body, a->len, 0, NULL) : NULL;
    if (f->streamed) { /* handed on as it came: a stream that broke off just ends */
        if (failed) gg_log(GG_LOG_WARN, "relay round forward ended early", "tenant", f->tenant, "code", err->code, NULL);
    } else if (v && json_is_object(v) && json_object_get(v, "jsonrpc") && a->status >= 200 && a->status < 600) {
        char *copy = malloc(a->len + 1);
        if (copy) memcpy(copy, a->body, a->len + 1);
        if (copy) forward_retry_after(f, a);
        if (copy) gg_http_res_bytes_take(res, (int)a->status, "application/json", copy, a->len);
        else rpc_http_error(res, 500, f->id, MCP_INTERNAL_ERROR, "Internal error: out of memory");
    } else {
        char msg[320];
        if (!failed) forward_retry_after(f, a); /* a holder saying when to come back says so here too */
        if (!failed) snprintf(msg, sizeof msg, "Internal error: the replica holding this run answered HTTP %ld; call the tool "
                                               "again without requestState", a->status);
        else snprintf(msg, sizeof msg, "Internal error: %s; call the tool again without requestState", err->message);
        gg_log(GG_LOG_WARN, "relay round not forwarded", "tenant", f->tenant, "code", failed ? err->code : "answer", NULL);
        rpc_http_error(res, failed && !strcmp(err->code, "timeout") ? 504 : 502, f->id, MCP_INTERNAL_ERROR, msg);
    }
    json_decref(v);
    gg_gateway *gw = f->gw;
    waiting_release(gw, f->tenant);
    json_decref(f->id);
    gg_http_async_complete(f->a);
    free(f);
    /* last: shutdown (gw_cancel_running) waits for this */
    pthread_mutex_lock(&gw->jobs_mu);
    gw->running--;
    pthread_cond_broadcast(&gw->jobs_cv);
    pthread_mutex_unlock(&gw->jobs_mu);
}

/* The Mcp-Param-* headers of a forwarded request (its tool's x-mcp-header arguments, which
 * the holder checks again): at most GW_FORWARD_PARAMS, each line under 256 bytes. */
#define GW_FORWARD_PARAMS 16
typedef struct fwd_params {
    char line[GW_FORWARD_PARAMS][256];
    size_t n;
} fwd_params;

static bool fwd_param(void *user, const char *name, const char *value) {
    fwd_params *p = user;
    if (p->n < GW_FORWARD_PARAMS &&
        (size_t)snprintf(p->line[p->n], sizeof p->line[p->n], "%s: %s", name, value) < sizeof p->line[p->n])
        p->n++;
    return p->n < GW_FORWARD_PARAMS;
}

/* The URL of the replica holder names when it is another one (NULL: this one, or none). */
static const char *holder_elsewhere(gg_gateway *gw, json_t *holder) {
    const char *hid = json_string_value(json_object_get(holder, "id")), *url = json_string_value(json_object_get(holder, "url"));
    const char *mine = json_string_value(json_object_get(gw->relay_holder, "id"));
    return hid && url && !(mine && !strcmp(hid, mine)) ? url : NULL;
}

/* Send the request, unchanged, to the same route on the internal listener at url (the
 * holder's), for request id of tenant's; *rc and the answer set. Never a request forwarded
 * already (fkey): refused here. */
static int forward_request(gg_gateway *gw, gg_http_req *req, gg_http_res *res, const char *tenant, json_t *id,
                           json_t *holder, const char *url, const gg_principal *pr, const char *fkey) {
    const char *path = gg_http_path(req);
    char target[1200], key[64], acc[128], hv[64], mm[64], mn[160], tp[96];
    bool internal = !strncmp(path, "/internal/mcp/", 14);
    if (fkey || (!internal && strncmp(path, "/mcp/", 5) != 0) ||
        (size_t)snprintf(target, sizeof target, "%s%s%s", url, internal ? "" : "/internal", path) >= sizeof target)
        return rpc_http_error(res, 400, id, MCP_INVALID_PARAMS,
                              "Invalid params: the input round this requestState answers is held by another replica, "
                              "which this request cannot reach; call the tool again without requestState");
    wait_rc wrc = atomic_load(&gw->stopping) ? WAIT_FULL : waiting_acquire(gw, tenant);
    if (wrc != WAIT_OK) /* the state is not spent: the client may retry it */
        return refuse_call(res, json_incref(id), false, wrc == WAIT_TENANT_FULL ? 429 : 503,
                           atomic_load(&gw->stopping) ? "the server is shutting down; retry the request"
                                                      : "Server busy: too many calls waiting on downstream servers; retry later");
    gw_fwd *f = calloc(1, sizeof *f);
    if (f) f->a = gg_http_defer(req);
    if (!f || !f->a) {
        free(f);
        waiting_release(gw, tenant);
        return rpc_http_error(res, 500, id, MCP_INTERNAL_ERROR, "Internal error: out of memory");
    }
    f->gw = gw;
    f->id = json_incref(id);
    gg_strcopy(f->tenant, sizeof f->tenant, tenant);
    const char *h;
    fwd_params params;
    params.n = 0;
    gg_http_headers_prefixed(req, "Mcp-Param-", fwd_param, &params);
    const char *lines[8 + GW_FORWARD_PARAMS];
    size_t nl = 0;
    for (size_t i = 0; i < params.n; i++) lines[nl++] = params.line[i];
    lines[nl++] = "Content-Type: application/json";
    h = gg_http_header(req, "Accept");
    if (h && strlen(h) < 100) snprintf(acc, sizeof acc, "Accept: %s", h), lines[nl++] = acc;
    else lines[nl++] = "Accept: application/json";
    snprintf(key, sizeof key, GW_FORWARD_HEADER ": %s", pr && pr->key_id[0] ? pr->key_id : "-");
    lines[nl++] = key;
    /* the headers the 2026-07-28 checks compare with the body (values bounded: cut ones fail there) */
    if ((h = gg_http_header(req, VERSION_HEADER)) && strlen(h) < 40) snprintf(hv, sizeof hv, VERSION_HEADER ": %s", h), lines[nl++] = hv;
    if ((h = gg_http_header(req, "Mcp-Method")) && strlen(h) < 40) snprintf(mm, sizeof mm, "Mcp-Method: %s", h), lines[nl++] = mm;
    if ((h = gg_http_header(req, "Mcp-Name")) && strlen(h) < 140) snprintf(mn, sizeof mn, "Mcp-Name: %s", h), lines[nl++] = mn;
    if ((h = gg_http_header(req, "traceparent")) && strlen(h) < 80) snprintf(tp, sizeof tp, "traceparent: %s", h), lines[nl++] = tp;
    lines[nl] = NULL;
    /* the run's time left (the holder's clock; a little slack for the replicas' clocks),
     * never past this replica's own bound on a call */
    long long limit = gw->cfg->request_timeout_ms > 0 ? gw->cfg->request_timeout_ms : 60000;
    json_int_t until = json_integer_value(json_object_get(holder, "until"));
    long long left = until > 0 ? until - gg_wall_ms() + 2000 : limit;
    int timeout = (int)(left < 1000 ? 1000 : left > limit ? limit : left);
    size_t len = 0;
    const char *body = gg_http_body(req, &len);
    forward_link(f, true); /* shutdown sets its cancel flag and waits for it to end */
    mcp_forward_start(gw->downstream, target, tenant, lines, body, len, timeout, &f->cancel, forward_stream, forward_done, f);
    return GG_HTTP_DEFERRED;
}

/* The retry of a relay round whose run another replica holds: forwarded there (true: *rc
 * set, c consumed) — unless it was forwarded already (fkey set): then it is refused here,
 * before its round's nonce is claimed, which only the holder may do. False: the run is this
 * replica's, or no holder is named. */
static bool forward_to_holder(gg_gateway *gw, gg_http_req *req, gg_http_res *res, const endpoint *ep, mcp_call *c,
                              const gg_principal *pr, const char *fkey, int *rc) {
    json_t *st = mcp_call_resume_state(c), *holder = json_object_get(st, "holder");
    const char *url = json_object_get(st, "relay") ? holder_elsewhere(gw, holder) : NULL;
    if (!url) return false;
    *rc = forward_request(gw, req, res, ep->tenant, mcp_call_id(c), holder, url, pr, fkey);
    mcp_call_free(c);
    return true;
}

/* A 2026-07-28 request (mcp_request_is_modern): no session; checked, dispatched and shaped
 * by stateless.c; its calls run like any other. */
static int handle_modern(gg_gateway *gw, gg_http_req *req, gg_http_res *res, endpoint *ep, json_t *v, const char *hv,
                         const gg_principal *pr) {
    mcp_message m;
    mcp_jsonrpc_classify(v, &m);
    if (m.kind == MCP_MSG_INVALID) return rpc_http_error(res, 400, m.id, m.error_code, m.error_message);
    if (gg_http_header(req, SESSION_HEADER))
        return rpc_http_error(res, 400, m.id, MCP_INVALID_REQUEST, "Invalid Request: a request of protocol version "
                              "2026-07-28 carries no Mcp-Session-Id (a session speaks the version its initialize chose)");
    if (pr && !gg_scope_allows(pr->scopes, scope_for(&m))) {
        gw_insufficient_scope_mcp(gw, req, res, pr, scope_for(&m));
        return GG_HTTP_DONE;
    }
    mcp_modern_req mr;
    if (!mcp_modern_check(ep->srv, &m, hv, req_header, req, &mr)) {
        gg_http_res_bytes_take(res, mr.status, "application/json", mr.error, strlen(mr.error));
        return GG_HTTP_DONE;
    }
    if (m.kind != MCP_MSG_REQUEST) return gg_http_res_bytes(res, 202, "application/json", "", 0), GG_HTTP_DONE;
    if (!strcmp(m.method, "subscriptions/listen")) return gw_listen_open(gw, req, res, ep->tenant, ep->graph, ep->srv, &m, mr.client_caps);
    /* a requestState resumes only on this endpoint's active version, with the same key: the
     * caller's, or on the internal listener the one a forwarding replica names */
    const char *fkey = forwarded_key(req);
    char binding[3 * GG_NAME_MAX + 64];
    snprintf(binding, sizeof binding, "%s\n%s\n%d\n%s", ep->tenant, ep->graph, ep->version, pr ? pr->key_id : fkey ? fkey : "");
    mcp_request_ctx rctx = {MCP_VERSION_MODERN, mr.log_level, false, true, mr.client_caps, gw->state_key, binding};
    if (!strncmp(m.method, "tasks/", 6)) {
        gw_task_place pl = {ep->tenant, ep->graph, ep->version, ep->srv, ep};
        /* the answer to a task's relay round goes to the replica holding its run (tasks.c) */
        json_t *holder = !fkey && ep->is_graph && !strcmp(m.method, "tasks/update") && (mr.client_caps & MCP_CLIENT_CAPS_TASKS)
                             ? gw_task_relay_holder(gw, &pl, &m) : NULL;
        const char *url = holder_elsewhere(gw, holder);
        if (url) {
            int frc = forward_request(gw, req, res, ep->tenant, m.id, holder, url, NULL, NULL);
            json_decref(holder);
            return frc;
        }
        json_decref(holder);
        char *body = gw_tasks_dispatch(gw, &pl, &m, mr.client_caps);
        if (!body) return rpc_http_error(res, 500, m.id, MCP_INTERNAL_ERROR, "Internal error: out of memory");
        gg_http_res_bytes_take(res, mcp_modern_status(body), "application/json", body, strlen(body));
        return GG_HTTP_DONE;
    }
    mcp_outcome o;
    mcp_server_dispatch(ep->srv, &m, &rctx, &o);
    record_refusal(gw, ep, pr ? pr->key_id : NULL, &o);
    int rc = GG_HTTP_DONE;
    if (o.kind == MCP_OUT_RESPONSE) {
        gg_http_res_bytes_take(res, mcp_modern_status(o.body), "application/json", o.body, strlen(o.body));
        o.body = NULL;
    } else if (o.kind == MCP_OUT_CALL) {
        mcp_call *c = o.call;
        o.call = NULL;
        if (mcp_call_as_task(c)) rc = submit_task(gw, res, ep, c, pr, mr.client_caps);
        else if (!ep->is_graph || !forward_to_holder(gw, req, res, ep, c, pr, fkey, &rc)) /* one hop at most */
            rc = submit_call(gw, req, res, ep, c, NULL, pr, false);
    } else gg_http_res_bytes(res, 202, "application/json", "", 0);
    mcp_outcome_clear(&o);
    return rc;
}

static int handle_post(gg_gateway *gw, gg_http_req *req, gg_http_res *res, endpoint *ep, const gg_principal *pr) {
    size_t len = 0;
    const char *body = gg_http_body(req, &len);
    gg_error err = GG_ERROR_INIT;
    json_t *v = mcp_jsonrpc_parse(body, len, MAX_JSON_DEPTH, &err);
    if (!v) {
        rpc_http_error(res, 400, NULL, MCP_PARSE_ERROR, err.message ? err.message : "Parse error");
        gg_error_clear(&err);
        return GG_HTTP_DONE;
    }
    const char *hv = gg_http_header(req, VERSION_HEADER);
    if (mcp_request_is_modern(v, hv)) {
        int rc = handle_modern(gw, req, res, ep, v, hv, pr);
        json_decref(v);
        return rc;
    }
    if (hv && !mcp_version_supported(hv)) {
        json_decref(v);
        char msg[160];
        snprintf(msg, sizeof msg, "Bad Request: unsupported MCP-Protocol-Version %.40s (supported: 2025-11-25, 2025-06-18, 2025-03-26)", hv);
        return rpc_http_error(res, 400, NULL, MCP_INVALID_REQUEST, msg);
    }
    mcp_message m;
    bool batch = json_is_array(v);
    if (!batch) mcp_jsonrpc_classify(v, &m);
    if (!batch && m.kind == MCP_MSG_INVALID) {
        rpc_http_error(res, 400, m.id, m.error_code, m.error_message);
        json_decref(v);
        return GG_HTTP_DONE;
    }
    bool is_init = !batch && m.kind == MCP_MSG_REQUEST && strcmp(m.method, "initialize") == 0;
    /* scope first: list results never reveal what a call would refuse */
    if (!batch && pr && m.kind != MCP_MSG_INVALID && !gg_scope_allows(pr->scopes, scope_for(&m))) {
        gw_insufficient_scope_mcp(gw, req, res, pr, scope_for(&m));
        json_decref(v); /* m borrows from v */
        return GG_HTTP_DONE;
    }
    mcp_session sess;
    bool has_sess = false;
    const char *sid = gg_http_header(req, SESSION_HEADER);
    if (!is_init) {
        if (!sid) {
            json_decref(v);
            return rpc_http_error(res, 400, NULL, MCP_INVALID_REQUEST, "Bad Request: Mcp-Session-Id header is required");
        }
        if (!mcp_session_check(gw->sessions, sid, ep->tenant, ep->graph, pr ? pr->key_id : "", &sess, &err)) {
            gg_error_clear(&err);
            json_decref(v);
            return rpc_http_error(res, 404, NULL, -32001, "Session not found");
        }
        has_sess = true;
    }
    /* The header SHOULD repeat the negotiated version; a different supported one is the
     * version the client speaks on this request (the spec refuses only unsupported ones). */
    const char *version = hv ? hv : has_sess ? sess.version : MCP_VERSION_DEFAULT;
    int rc;
    if (batch) {
        if (!mcp_version_allows_batch(version))
            rc = rpc_http_error(res, 400, NULL, MCP_INVALID_REQUEST, "Invalid Request: JSON-RPC batches are not supported in this protocol version");
        else rc = handle_batch(gw, req, res, ep, v, has_sess ? &sess : NULL, version, pr);
        json_decref(v);
        return rc;
    }
    mcp_request_ctx rctx = {version, has_sess ? sess.level : MCP_LOG_OFF, has_sess};
    mcp_outcome o;
    mcp_server_dispatch(ep->srv, &m, &rctx, &o);
    json_decref(v); /* the outcome owns what it needs */
    return finish_outcome(gw, req, res, ep, &o, has_sess ? &sess : NULL, pr);
}

/* ep's graph server from the registry (compiled now if the cache does not hold it): false
 * with the answer filled — 404 for no such graph or a stored version that does not compile
 * (logged), 503 when it cannot be read now (store error). */
static bool graph_server(gg_gateway *gw, gg_http_res *res, endpoint *ep, const char *t, const char *g) {
    gg_error err = GG_ERROR_INIT;
    if (strlen(t) <= GG_NAME_MAX && strlen(g) <= GG_NAME_MAX) /* ep's copies are cut to fit */
        ep->srv = gw_registry_get(gw->registry, ep->tenant, ep->graph, &ep->version, &err);
    if (ep->srv) return true;
    if (!err.code[0] || strcmp(err.code, "not_found") == 0)
        gg_http_res_fail(res, "not_found", "no graph %s/%s", ep->tenant, ep->graph);
    else if (strcmp(err.code, "validation") == 0) /* e.g. the policy no longer allows it: not served */
        gg_http_res_fail(res, "not_found", "graph %s/%s is stored but does not load: %s", ep->tenant, ep->graph,
                          err.message ? err.message : err.code);
    else gg_http_res_fail(res, "graph_unavailable", "graph %s/%s cannot be loaded now: %s", ep->tenant, ep->graph,
                           err.message ? err.message : err.code);
    gg_error_clear(&err);
    return false;
}

/* ep's tenant-wide server (view NULL) or view's: false with 404 (no such view) or 503 (the
 * store cannot be read now) filled. */
static bool tenantwide_server(gg_gateway *gw, gg_http_res *res, endpoint *ep, const char *view) {
    if (!gw_admin_tenant_exists(gw, res, ep->tenant)) return false; /* 404 as for its graphs */
    gg_error err = GG_ERROR_INIT;
    snprintf(ep->graph, sizeof ep->graph, "%s%s", view ? GW_VIEWS_PREFIX : GW_TENANTWIDE, view ? view : "");
    if (view && strlen(view) > GW_VIEW_NAME_MAX) gg_error_set(&err, "not_found", "no view %s", view);
    else ep->srv = view ? gw_view_server(gw, ep->tenant, view, &err) : gw_tenantwide_server(gw, ep->tenant, NULL, &err);
    if (!ep->srv) gg_http_res_error_from(res, 0, &err); /* not_found → 404, store errors → 5xx */
    gg_error_clear(&err);
    return ep->srv != NULL;
}

/* Resolve, authenticate and run one MCP request on an endpoint. mount NULL = graph route. */
static int mcp_handle(gg_gateway *gw, gg_http_req *req, gg_http_res *res, gw_mount *mount) {
    if (!gw_origin_host_ok(gw, req, res)) return GG_HTTP_DONE;
    gg_principal pr, *prp = NULL;
    /* a mount under a tenant (/mcp/{tenant}/_toolkit) is that tenant's resource: OAuth tokens
     * are taken there, as on a graph; the bare mount (/mcp/toolkit) names no tenant whose
     * authorization servers could vouch for a token, so it takes API keys only */
    const char *mount_tenant = mount ? gg_http_param(req, "tenant") : NULL;
    if (gg_http_listener(req) == GG_LISTENER_PUBLIC) {
        if (!(mount && !mount_tenant ? gw_authenticate(gw, req, res, &pr) : gw_authenticate_mcp(gw, req, res, &pr)))
            return gg_http_deferred(req) ? GG_HTTP_DEFERRED : GG_HTTP_DONE; /* deferred: introspection, then again */
        prp = &pr;
    }
    if (mount_tenant && prp && !(prp->scopes & GG_SCOPE_ADMIN) && strcmp(prp->tenant, mount_tenant) != 0) {
        gw_wrong_tenant(res);
        return GG_HTTP_DONE;
    }
    endpoint ep = {0};
    if (mount) {
        gg_strcopy(ep.graph, sizeof ep.graph, mount->name);
        pthread_mutex_lock(&mount->mu);
        ep.srv = mcp_server_ref(mount->srv);
        pthread_mutex_unlock(&mount->mu);
    } else {
        const char *t = gg_http_param(req, "tenant"), *g = gg_http_param(req, "graph");
        if (prp && !(prp->scopes & GG_SCOPE_ADMIN) && strcmp(prp->tenant, t) != 0) {
            gw_wrong_tenant(res);
            return GG_HTTP_DONE;
        }
        gg_strcopy(ep.tenant, sizeof ep.tenant, t);
        gg_strcopy(ep.graph, sizeof ep.graph, g);
        ep.is_graph = true;
        if (!g) { /* /mcp/{tenant}/_all or /mcp/{tenant}/_views/{view} (tenantwide.c, views.c) */
            if (!tenantwide_server(gw, res, &ep, gg_http_param(req, "view"))) return GG_HTTP_DONE;
        } else if (!graph_server(gw, res, &ep, t, g)) return GG_HTTP_DONE;
    }
    gg_strcopy(ep.caller, sizeof ep.caller, mount ? (mount_tenant ? mount_tenant : prp ? prp->tenant : "") : ep.tenant);
    if (!ep.srv) {
        gg_http_res_fail(res, "not_found", "no graph %s/%s", ep.tenant, ep.graph);
        return GG_HTTP_DONE;
    }
    const char *method = gg_http_method(req);
    int rc;
    if (strcmp(method, "POST") == 0) rc = handle_post(gw, req, res, &ep, prp);
    else if (strcmp(method, "DELETE") == 0) rc = handle_delete(gw, req, res, &ep, prp ? prp->key_id : "");
    else if (strcmp(method, "GET") == 0) rc = gw_streams_get(gw, req, res, ep.tenant, ep.graph, ep.srv, prp); /* streams.c */
    else { /* HEAD: a stream has no headers-only form */
        gg_http_res_header(res, "Allow", "GET, POST, DELETE");
        gg_http_res_fail(res, "method_not_allowed", "use GET (with Accept: text/event-stream) to open the stream");
        rc = GG_HTTP_DONE;
    }
    mcp_server_unref(ep.srv);
    return rc;
}

static int on_graph_mcp(gg_http_req *req, gg_http_res *res, void *user) { return mcp_handle(user, req, res, NULL); }

static int on_mount_mcp(gg_http_req *req, gg_http_res *res, void *user) {
    gw_mount *m = user;
    return mcp_handle(m->gw, req, res, m);
}

/* /mcp/{name} and /internal/mcp/{name} for a mounted provider. */
bool gw_mount_routes(gg_gateway *gw, gw_mount *m, gg_error *err) {
    gg_router *r = gg_http_server_router(gw->app->http);
    static const char *const methods[] = {"POST", "GET", "DELETE"};
    char pub[96], in[112], scoped[112];
    snprintf(pub, sizeof pub, "/mcp/%s", m->name);
    snprintf(in, sizeof in, "/internal/mcp/%s", m->name);
    snprintf(scoped, sizeof scoped, "/mcp/{tenant}/_%s", m->name); /* OAuth-capable (mcp_handle) */
    for (size_t i = 0; i < 3; i++)
        if (!gg_router_add(r, GG_LISTENER_PUBLIC, methods[i], pub, on_mount_mcp, m, err) ||
            !gg_router_add(r, GG_LISTENER_PUBLIC, methods[i], scoped, on_mount_mcp, m, err) ||
            !gg_router_add(r, GG_LISTENER_INTERNAL, methods[i], in, on_mount_mcp, m, err))
            return false;
    return true;
}

/* ------------------------------------------------------------------ internal tools/call */

/* POST /internal/tenants/{t}/graphs/{g}/tools/{tool}/call: arguments in, value out. */
static int on_internal_call(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    if (!gw_origin_host_ok(gw, req, res)) return GG_HTTP_DONE;
    const char *t = gg_http_param(req, "t"), *g = gg_http_param(req, "g"), *tool = gg_http_param(req, "tool");
    endpoint ep = {0};
    gg_strcopy(ep.tenant, sizeof ep.tenant, t);
    gg_strcopy(ep.graph, sizeof ep.graph, g);
    ep.is_graph = true;
    gg_strcopy(ep.caller, sizeof ep.caller, t); /* the graph's tenant, as on /mcp */
    if (!graph_server(gw, res, &ep, t, g)) return GG_HTTP_DONE;
    size_t len = 0;
    const char *body = gg_http_body(req, &len);
    gg_error err = GG_ERROR_INIT;
    json_t *args = len ? mcp_jsonrpc_parse(body, len, MAX_JSON_DEPTH, &err) : json_object();
    int rc = GG_HTTP_DONE;
    if (!args) {
        gg_http_res_fail(res, "invalid_json", "the request body is not valid JSON (%s): expected a JSON object "
                          "of the tool's arguments, like {\"a\": 1}", err.message ? err.message : "invalid JSON");
    } else if (!json_is_object(args)) {
        gg_http_res_fail(res, "bad_request", "the request body is not an object: expected a JSON object of the "
                          "tool's arguments, like {\"a\": 1}");
    } else {
        json_t *msg = json_pack("{s:s,s:i,s:s,s:{s:s,s:O}}", "jsonrpc", "2.0", "id", 1, "method", "tools/call",
                                "params", "name", tool, "arguments", args);
        mcp_message m;
        mcp_jsonrpc_classify(msg, &m);
        mcp_request_ctx rctx = {MCP_VERSION_LATEST, MCP_LOG_OFF, false};
        mcp_outcome o;
        mcp_server_dispatch(ep.srv, &m, &rctx, &o);
        record_refusal(gw, &ep, NULL, &o);
        if (o.kind == MCP_OUT_CALL) {
            mcp_call *c = o.call;
            o.call = NULL;
            rc = submit_call(gw, req, res, &ep, c, NULL, NULL, true);
        } else {
            json_t *resp = json_loads(o.body ? o.body : "{}", 0, NULL);
            json_t *e = json_object_get(resp, "error"), *r = json_object_get(resp, "result");
            const char *emsg = json_string_value(json_object_get(e, "message"));
            if (e && emsg && strncmp(emsg, "Unknown tool", 12) == 0) gg_http_res_fail(res, "not_found", "%s", emsg);
            else if (e) gg_http_res_fail(res, "invalid_params", "%s", emsg ? emsg : "invalid");
            else {
                const char *text = json_string_value(json_object_get(json_array_get(json_object_get(r, "content"), 0), "text"));
                gg_http_res_fail(res, "invalid_params", "%s", text ? text : "invalid arguments");
            }
            json_decref(resp);
        }
        mcp_outcome_clear(&o);
        json_decref(msg);
    }
    gg_error_clear(&err);
    json_decref(args);
    mcp_server_unref(ep.srv);
    return rc;
}

/* ------------------------------------------------------------------ routes */

/* MCP on both listeners and the internal plain tool-call route. */
bool gw_mcp_install_routes(gg_gateway *gw, gg_error *err) {
    gg_router *r = gg_http_server_router(gw->app->http);
    static const char *const methods[] = {"POST", "GET", "DELETE"};
    for (size_t i = 0; i < 3; i++) {
        if (!gg_router_add(r, GG_LISTENER_PUBLIC, methods[i], "/mcp/{tenant}/{graph}", on_graph_mcp, gw, err) ||
            !gg_router_add(r, GG_LISTENER_INTERNAL, methods[i], "/internal/mcp/{tenant}/{graph}", on_graph_mcp, gw, err) ||
            !gg_router_add(r, GG_LISTENER_PUBLIC, methods[i], "/mcp/{tenant}/" GW_TENANTWIDE, on_graph_mcp, gw, err) ||
            !gg_router_add(r, GG_LISTENER_INTERNAL, methods[i], "/internal/mcp/{tenant}/" GW_TENANTWIDE, on_graph_mcp, gw,
                           err) ||
            !gg_router_add(r, GG_LISTENER_PUBLIC, methods[i], "/mcp/{tenant}/" GW_VIEWS_PREFIX "{view}", on_graph_mcp, gw,
                           err) ||
            !gg_router_add(r, GG_LISTENER_INTERNAL, methods[i], "/internal/mcp/{tenant}/" GW_VIEWS_PREFIX "{view}",
                           on_graph_mcp, gw, err))
            return false;
    }
    return gg_router_add(r, GG_LISTENER_INTERNAL, "POST", "/internal/tenants/{t}/graphs/{g}/tools/{tool}/call",
                         on_internal_call, gw, err);
}
