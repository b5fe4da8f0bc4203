/* client.c — the transport-independent MCP client front (mcp_client) and the downstream
 * context its clients share (mcp_downstream: each transport's part is kept in its own file);
 * the policy that decides which downstream servers may be reached is in src/policy/policy.c. */
#include "mcp/loop.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mcp_client {
    const mcp_client_ops *ops;
    void *impl;
    mcp_downstream *ds; /* its context: one reference held */
    _Atomic unsigned long long relay_seq; /* names each relaying call's progressToken */
};

/* See mcp.h. */
mcp_downstream *mcp_downstream_new(void) {
    mcp_downstream *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    atomic_init(&d->refs, 1);
    d->http = mcp_http_shared_new();
    d->stdio = mcp_stdio_shared_new();
    if (d->http && d->stdio) return d;
    mcp_downstream_free(d);
    return NULL;
}

/* See mcp.h: the last reference (the owner's or a client's) frees it. */
void mcp_downstream_free(mcp_downstream *d) {
    if (!d || atomic_fetch_sub(&d->refs, 1) > 1) return;
    mcp_http_shared_free(d->http);
    mcp_stdio_shared_free(d->stdio);
    free(d);
}

/* A client for one downstream server; the transport starts lazily on the first request. */
mcp_client *mcp_client_new(const mcp_server_config *cfg, const mcp_client_policy *policy, gg_error *err) {
    mcp_client *c = calloc(1, sizeof *c);
    if (c && cfg->downstream) {
        c->ds = cfg->downstream;
        atomic_fetch_add(&c->ds->refs, 1); /* freed after the client, whatever its owner does */
    } else if (c) {
        c->ds = mcp_downstream_new(); /* none given: one of its own, the defaults */
    }
    if (!c || !c->ds) {
        free(c);
        gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    mcp_server_config own = *cfg;
    own.downstream = c->ds;
    c->impl = cfg->transport == MCP_TRANSPORT_HTTP ? mcp_http_new(&own, policy, &c->ops, err)
                                                   : mcp_stdio_new(&own, policy, &c->ops, err);
    if (!c->impl) {
        mcp_downstream_free(c->ds);
        free(c);
        return NULL;
    }
    return c;
}

/* Stop the transport (child process or HTTP session) and free the client, then its hold on
 * the context (nothing of the transport is left to read it). */
void mcp_client_free(mcp_client *c) {
    if (!c) return;
    c->ops->destroy(c->impl);
    mcp_downstream_free(c->ds);
    free(c);
}

/* Start one JSON-RPC request through the transport (see mcp.h). */
void mcp_client_start(mcp_client *c, const char *method, json_t *params, int timeout_ms, atomic_int *cancel,
                      mcp_client_done_fn done, void *user) {
    c->ops->start(c->impl, method, params, timeout_ms, cancel, done, user);
}

void mcp_client_call_tool_start(mcp_client *c, const char *tool, json_t *arguments, int timeout_ms,
                                atomic_int *cancel, mcp_client_done_fn done, void *user) {
    mcp_client_call_tool_start_traced(c, tool, arguments, timeout_ms, cancel, NULL, NULL, done, user);
}

/* The trace context rides in params._meta (the MCP way, what a stdio server sees); the
 * HTTP transport also sends it as traceparent/tracestate headers. */
void mcp_client_call_tool_start_traced(mcp_client *c, const char *tool, json_t *arguments, int timeout_ms,
                                       atomic_int *cancel, const char *traceparent, const char *tracestate,
                                       mcp_client_done_fn done, void *user) {
    mcp_client_call_tool_start_relay(c, tool, arguments, timeout_ms, cancel, traceparent, tracestate, NULL, done, user);
}

/* The same with the call's own handler for what the server asks during it (mcp.h). */
void mcp_client_call_tool_start_relay(mcp_client *c, const char *tool, json_t *arguments, int timeout_ms,
                                      atomic_int *cancel, const char *traceparent, const char *tracestate,
                                      const mcp_call_relay *relay, mcp_client_done_fn done, void *user) {
    json_t *params = json_pack("{s:s, s:o}", "name", tool, "arguments", arguments ? json_incref(arguments) : json_object());
    if (params && traceparent) {
        json_t *meta = json_pack("{s:s}", "traceparent", traceparent);
        if (meta && tracestate) json_object_set_new(meta, "tracestate", json_string(tracestate));
        json_object_set_new(params, "_meta", meta);
    }
    /* the relay hears the call's progress: ask for it under a token unique on this client, so
     * that progress the server sends outside the call's own stream (an HTTP server's GET
     * stream) still finds its call (client_http.c relay_tab; a stdio child's calls use their
     * request id instead, client_stdio.c) */
    if (params && relay && relay->notify && c->ops->start_relay) {
        json_t *meta = json_object_get(params, "_meta");
        if (!meta) json_object_set_new(params, "_meta", meta = json_object());
        char tok[40];
        snprintf(tok, sizeof tok, "gg-relay-%llu", atomic_fetch_add_explicit(&c->relay_seq, 1, memory_order_relaxed) + 1);
        if (meta) json_object_set_new(meta, "progressToken", json_string(tok));
    }
    if (!params) {
        mcp_client_done_oom(done, user);
        return;
    }
    if (relay && relay->fn && c->ops->start_relay)
        c->ops->start_relay(c->impl, "tools/call", params, timeout_ms, cancel, relay, done, user);
    else mcp_client_start(c, "tools/call", params, timeout_ms, cancel, done, user);
    json_decref(params);
}

/* A synchronous caller waiting for its asynchronous request. */
typedef struct waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    json_t *result;
    gg_error err;
} waiter;

static void waiter_done(void *user, json_t *result, gg_error *err) {
    waiter *w = user;
    pthread_mutex_lock(&w->mu);
    w->result = json_incref(result);
    if (err && gg_error_is_set(err)) gg_error_move(&w->err, err);
    w->done = true;
    pthread_cond_signal(&w->cv); /* under the lock: the waiter frees w once it sees done */
    pthread_mutex_unlock(&w->mu);
}

/* Wait for the asynchronous request (see mcp.h for errors and threading). */
json_t *mcp_client_request(mcp_client *c, const char *method, json_t *params, int timeout_ms, atomic_int *cancel,
                           gg_error *err) {
    waiter w = {.done = false, .result = NULL, .err = GG_ERROR_INIT};
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    mcp_client_start(c, method, params, timeout_ms, cancel, waiter_done, &w);
    pthread_mutex_lock(&w.mu);
    while (!w.done) pthread_cond_wait(&w.cv, &w.mu);
    pthread_mutex_unlock(&w.mu);
    pthread_mutex_destroy(&w.mu);
    pthread_cond_destroy(&w.cv);
    if (!w.result) {
        if (gg_error_is_set(&w.err)) gg_error_move(err, &w.err);
        else gg_error_set(err, "transport", "request failed");
    }
    gg_error_clear(&w.err);
    return w.result;
}

/* tools/call {name, arguments}; returns the CallToolResult. */
json_t *mcp_client_call_tool(mcp_client *c, const char *tool, json_t *arguments, int timeout_ms, atomic_int *cancel,
                             gg_error *err) {
    json_t *params = json_pack("{s:s, s:o}", "name", tool, "arguments", arguments ? json_incref(arguments) : json_object());
    if (!params) {
        gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    json_t *r = mcp_client_request(c, "tools/call", params, timeout_ms, cancel, err);
    json_decref(params);
    return r;
}

/* Diagnostics: the child's recent stderr and how often the transport was (re)started. */
void mcp_client_set_notify(mcp_client *c, mcp_client_notify_fn fn, void *user) {
    if (c->ops->set_notify) c->ops->set_notify(c->impl, fn, user);
}

char *mcp_client_stderr_tail(mcp_client *c) { return c->ops->stderr_tail ? c->ops->stderr_tail(c->impl) : strdup(""); }
int mcp_client_start_count(mcp_client *c) { return c->ops->start_count ? c->ops->start_count(c->impl) : 0; }
void mcp_client_auth_subject(mcp_client *c, const char *token) {
    if (c && c->ops->auth_subject) c->ops->auth_subject(c->impl, token);
}

/* Both transports answer what a server asks them the same way: a ping is answered (a server
 * may drop a session whose pings go unanswered), anything else refused at once rather than
 * left to time out on the server's side. */
json_t *mcp_client_answer_server_request(json_t *id, const char *method) {
    if (method && !strcmp(method, "ping")) return json_pack("{s:s, s:O, s:{}}", "jsonrpc", "2.0", "id", id, "result");
    return json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id, "error", "code", MCP_METHOD_NOT_FOUND,
                     "message", "Method not found");
}

json_t *mcp_client_reply_message(json_t *id, json_t *result, int code, const char *message) {
    if (code)
        return json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id, "error", "code", code, "message", message);
    return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result ? json_incref(result) : json_object());
}

/* See loop.h: one home for what both transports hold for their caller. */
void mcp_client_hooks_set_notify(mcp_client_hooks *h, pthread_mutex_t *mu, mcp_client_notify_fn fn, void *user) {
    pthread_mutex_lock(mu);
    h->notify = fn;
    h->notify_user = user;
    pthread_mutex_unlock(mu);
}

void mcp_client_hooks_set_request_handler(mcp_client_hooks *h, pthread_mutex_t *mu, json_t *caps,
                                          mcp_client_server_request_fn fn, void *user) {
    json_t *copy = caps ? gg_json_clone(caps) : NULL; /* outside the lock: it may be large */
    pthread_mutex_lock(mu);
    json_decref(h->caps);
    h->caps = copy;
    h->on_request = fn;
    h->request_user = user;
    pthread_mutex_unlock(mu);
}

void mcp_client_hooks_clear(mcp_client_hooks *h) {
    json_decref(h->caps);
    *h = (mcp_client_hooks){0};
}

void mcp_client_done_oom(mcp_client_done_fn done, void *user) {
    gg_error e = GG_ERROR_INIT;
    gg_error_set(&e, "oom", "out of memory");
    done(user, NULL, &e);
    gg_error_clear(&e);
}

void mcp_client_listen(mcp_client *c) {
    if (c->ops->listen) c->ops->listen(c->impl);
}

void mcp_client_set_request_handler(mcp_client *c, json_t *capabilities, mcp_client_server_request_fn fn, void *user) {
    if (c->ops->set_request_handler) c->ops->set_request_handler(c->impl, capabilities, fn, user);
}

void mcp_client_reply_result(mcp_client_reply *r, json_t *result) { r->send(r, result, 0, NULL); } /* NULL: {} */

void mcp_client_reply_error(mcp_client_reply *r, int code, const char *message) {
    r->send(r, NULL, code, message ? message : "error");
}

/* A path of at most this many members ("resources.subscribe" has two). */
#define DECLARES_MAX_DEPTH 8

mcp_declares mcp_client_caps_declare(json_t *caps, const char *path) {
    if (!json_is_object(caps)) return MCP_DECLARES_UNKNOWN;
    json_t *v = caps;
    char key[128];
    const char *p = path ? path : "";
    for (int depth = 0; *p && depth < DECLARES_MAX_DEPTH; depth++) {
        size_t n = strcspn(p, ".");
        if (n >= sizeof key || !json_is_object(v)) return MCP_DECLARES_NO;
        memcpy(key, p, n);
        key[n] = '\0';
        v = json_object_get(v, key);
        p += n + (p[n] == '.');
    }
    if (*p) return MCP_DECLARES_NO; /* deeper than any capability goes */
    return json_is_object(v) || json_is_true(v) ? MCP_DECLARES_YES : MCP_DECLARES_NO;
}

mcp_declares mcp_client_server_declares(mcp_client *c, const char *path) {
    const char *probe = NULL;
    return c && c->ops->server_declares ? c->ops->server_declares(c->impl, path, &probe) : MCP_DECLARES_UNKNOWN;
}

/* The probe's answer only teaches the transport; its result is nobody's. */
typedef struct declared_wait {
    mcp_client_done_fn done;
    void *user;
} declared_wait;

static void declared_done(void *user, json_t *result, gg_error *err) {
    declared_wait w = *(declared_wait *)user;
    (void)result;
    free(user);
    w.done(w.user, NULL, err);
}

void mcp_client_declared_start(mcp_client *c, atomic_int *cancel, mcp_client_done_fn done, void *user) {
    const char *probe = NULL;
    mcp_declares d = c->ops->server_declares ? c->ops->server_declares(c->impl, "", &probe) : MCP_DECLARES_UNKNOWN;
    declared_wait *w = d == MCP_DECLARES_UNKNOWN && probe ? malloc(sizeof *w) : NULL;
    if (d != MCP_DECLARES_UNKNOWN || !probe) { /* known, or a transport that never knows: nothing to ask */
        done(user, NULL, NULL);
        return;
    }
    if (!w) {
        mcp_client_done_oom(done, user);
        return;
    }
    *w = (declared_wait){done, user};
    json_t *params = json_object();
    mcp_client_start(c, probe, params, 0, cancel, declared_done, w);
    json_decref(params);
}
