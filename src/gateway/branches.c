/* branches.c — the gateway's side of fire-and-forget branches (graph.h, gg_graph_async_hooks):
 * admission within the bounds (tenants.max_async_branches per tenant, max_async_branches in
 * all), one execution row per branch (parent_id = the caller's execution, tool
 * "<server>.<tool>", graph = the caller's graph), and shutdown. A branch holds no thread:
 * its call context resumes on the tenant's pool queue, and it owns copies of everything it
 * needs from the caller, whose call may have ended long before the branch does. Shutdown
 * waits (at most GW_ASYNC_DRAIN_MS) for outstanding branches, then cancels the rest, which
 * are recorded as interrupted: nothing admitted goes unrecorded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/calls.h"
#include "gateway/internal.h"

typedef struct gw_branch {
    gg_gateway *gw;
    mcp_call_ctx ctx;
    atomic_int cancel;
    gg_trace_ctx trace;
    char tenant[GG_NAME_MAX + 1];
    char *key_id, *request_id;
    gg_exec_record *rec;
    double started_ms;
    struct gw_branch *prev, *next; /* outstanding, for shutdown */
} gw_branch;

struct gw_async {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    gw_branch *list;
    gg_tally tenants; /* branches outstanding per tenant */
    int total, tenant_max, max;
    bool stopping;
    unsigned long long started, skipped;
    gg_graph_async_hooks hooks; /* what every graph provider of the gateway is given */
};

static void *branch_begin(void *user, const char *label, const mcp_call_ctx *caller, const char *server,
                          const char *tool, json_t *arguments, const mcp_call_ctx **ctx, char *why, size_t why_n);
static void branch_end(void *user, void *handle, json_t *result, const gg_error *err);

gw_async *gw_async_new(gg_gateway *gw, int tenant_max, int max) {
    gw_async *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->hooks = (gg_graph_async_hooks){branch_begin, branch_end, gw, NULL};
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    a->tenant_max = tenant_max;
    a->max = max;
    return a;
}

/* Count the branch in, or say why not (under a->mu). */
static bool admit(gw_async *a, gw_branch *b, char *why, size_t why_n) {
    if (a->stopping) {
        snprintf(why, why_n, "the server is shutting down");
        return false;
    }
    if (a->tenant_max > 0 && gg_tally_get(&a->tenants, b->tenant) >= a->tenant_max) {
        snprintf(why, why_n, "too many outstanding async branches for this tenant (%d)", a->tenant_max);
        return false;
    }
    if (a->max > 0 && a->total >= a->max) {
        snprintf(why, why_n, "too many outstanding async branches (%d)", a->max);
        return false;
    }
    if (gg_tally_add(&a->tenants, b->tenant, 0) != GG_TALLY_OK) {
        snprintf(why, why_n, "out of memory");
        return false;
    }
    a->total++;
    b->next = a->list;
    if (a->list) a->list->prev = b;
    a->list = b;
    return true;
}

static void release(gw_async *a, gw_branch *b) {
    pthread_mutex_lock(&a->mu);
    gg_tally_sub(&a->tenants, b->tenant);
    a->total--;
    if (b->prev) b->prev->next = b->next;
    else a->list = b->next;
    if (b->next) b->next->prev = b->prev;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

static void branch_free(gw_branch *b) {
    gg_exec_record_free(b->rec);
    free(b->key_id);
    free(b->request_id);
    free(b);
}

/* Where a branch's continuations run: the tenant's pool queue (never refused). */
static void branch_resume(void *user, void (*fn)(void *arg), void *arg) {
    gw_branch *b = user;
    gw_job job = {fn, fn, arg, b->tenant};
    gw_pool_resume(b->gw->pool, job);
}

/* The branch's row as it starts (RUNNING), so that it is visible while outstanding. */
static bool branch_record(gw_branch *b, const char *graph, const char *server, const char *tool,
                          const mcp_call_ctx *caller, json_t *args) {
    gg_gateway *gw = b->gw;
    char name[2 * GG_NAME_MAX + 4];
    snprintf(name, sizeof name, "%s.%s", server, tool);
    int version = 0;
    mcp_server_unref(gw_registry_peek(gw->registry, b->tenant, graph, &version));
    b->rec = gg_history_record_new(gw->history, b->tenant, graph, version, name, b->key_id, args);
    if (!b->rec) return false;
    if (caller->history.exec_id) snprintf(b->rec->parent_id, sizeof b->rec->parent_id, "%s", caller->history.exec_id);
    if (caller->identity.trace) gg_trace_id_hex(caller->identity.trace, b->rec->trace_id);
    gg_exec_record *running = gg_exec_record_copy_header(b->rec);
    if (running) gg_history_submit(gw->history, running);
    return true;
}

/* gg_graph_async_hooks.begin */
static void *branch_begin(void *user, const char *label, const mcp_call_ctx *caller, const char *server,
                          const char *tool, json_t *arguments, const mcp_call_ctx **ctx, char *why, size_t why_n) {
    gg_gateway *gw = user;
    if (!caller || !caller->identity.tenant || !*caller->identity.tenant || !gw->async) {
        snprintf(why, why_n, "the call has no tenant");
        return NULL;
    }
    if (!gw->history || !gg_history_has_room(gw->history)) {
        snprintf(why, why_n, "the execution history backlog is full");
        return NULL;
    }
    gw_branch *b = calloc(1, sizeof *b);
    if (!b) {
        snprintf(why, why_n, "out of memory");
        return NULL;
    }
    b->gw = gw;
    snprintf(b->tenant, sizeof b->tenant, "%s", caller->identity.tenant);
    pthread_mutex_lock(&gw->async->mu);
    bool ok = admit(gw->async, b, why, why_n);
    if (ok) gw->async->started++;
    else gw->async->skipped++;
    pthread_mutex_unlock(&gw->async->mu);
    if (!ok) {
        free(b);
        char n[2 * GG_NAME_MAX + 4];
        snprintf(n, sizeof n, "%s.%s", server, tool);
        gg_log(GG_LOG_WARN, "async branch skipped", "tenant", caller->identity.tenant, "tool", n, "reason", why, NULL);
        return NULL;
    }
    b->key_id = caller->identity.key_id ? strdup(caller->identity.key_id) : NULL;
    b->request_id = caller->identity.request_id ? strdup(caller->identity.request_id) : NULL;
    if (caller->identity.trace) b->trace = *caller->identity.trace;
    b->started_ms = gg_now_ms();
    if (!branch_record(b, label && *label ? label : "", server, tool, caller, arguments)) {
        release(gw->async, b);
        branch_free(b);
        snprintf(why, why_n, "out of memory");
        return NULL;
    }
    /* the branch's own call: its cancel flag, no client to ask, no history of the caller's */
    b->ctx = (mcp_call_ctx){
        .identity = {.request_id = b->request_id, .key_id = b->key_id, .tenant = b->tenant,
                     .trace = caller->identity.trace ? &b->trace : NULL},
        .run = {.cancelled = &b->cancel, .resume = branch_resume, .resume_user = b, .accepted_ms = b->started_ms},
        .history = {.exec_id = b->rec->id, .call_depth = caller->history.call_depth}};
    *ctx = &b->ctx;
    return b;
}

/* gg_graph_async_hooks.end (on a worker): the final row, then the slot. */
static void branch_end(void *user, void *handle, json_t *result, const gg_error *err) {
    gg_gateway *gw = user;
    gw_branch *b = handle;
    gg_exec_record *r = b->rec;
    b->rec = NULL;
    bool failed = !result || json_is_true(json_object_get(result, "isError"));
    bool cancelled = err && gg_error_is_set(err) && !strcmp(err->code, "cancelled");
    pthread_mutex_lock(&gw->async->mu);
    bool stopping = gw->async->stopping;
    pthread_mutex_unlock(&gw->async->mu);
    r->status = !failed ? GG_EXEC_SUCCEEDED
                : cancelled ? (stopping ? GG_EXEC_INTERRUPTED : GG_EXEC_CANCELLED)
                            : GG_EXEC_FAILED;
    r->finished_ms = gg_wall_ms();
    r->duration_ms = gg_now_ms() - b->started_ms;
    if (result) gw_record_result(r, result);
    /* the error starts with its code, so a timeout ("timeout: ...") is told from a failure */
    char msg[512];
    if (cancelled && stopping) snprintf(msg, sizeof msg, "interrupted: the server stopped before the branch ended");
    else if (err && gg_error_is_set(err)) snprintf(msg, sizeof msg, "%s: %s", err->code, err->message ? err->message : "");
    else snprintf(msg, sizeof msg, "tool_error: the tool answered with isError");
    if (failed) r->error = strdup(msg);
    gg_history_submit(gw->history, r);
    release(gw->async, b);
    branch_free(b);
}

const gg_graph_async_hooks *gw_async_hooks(gw_async *a) { return &a->hooks; }

/* Shutdown (after the running calls ended, before the pool stops): no new branches, wait
 * up to wait_ms for the outstanding ones, cancel the rest and wait for their ends (a
 * cancelled downstream call ends within a few ms). */
void gw_async_drain(gw_async *a, double wait_ms) {
    if (!a) return;
    pthread_mutex_lock(&a->mu);
    a->stopping = true;
    double until = gg_now_ms() + wait_ms;
    while (a->total > 0 && gg_now_ms() < until) {
        struct timespec ts = gg_wall_timespec_in_ms(20);
        pthread_cond_timedwait(&a->cv, &a->mu, &ts);
    }
    for (gw_branch *b = a->list; b; b = b->next) atomic_store(&b->cancel, 1);
    while (a->total > 0) pthread_cond_wait(&a->cv, &a->mu);
    pthread_mutex_unlock(&a->mu);
}

void gw_async_free(gw_async *a) {
    if (!a) return;
    gg_tally_clear(&a->tenants);
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->cv);
    free(a);
}

void gw_async_metrics(gw_async *a, gg_strbuf *out) {
    pthread_mutex_lock(&a->mu);
    int total = a->total;
    unsigned long long started = a->started, skipped = a->skipped;
    pthread_mutex_unlock(&a->mu);
    gg_strbuf_printf(out,
                     "# HELP graphgate_async_branches_outstanding fire-and-forget branches (async: true nodes) started and not ended\n"
                     "# TYPE graphgate_async_branches_outstanding gauge\ngraphgate_async_branches_outstanding %d\n"
                     "# HELP graphgate_async_branches_total fire-and-forget branches: started, or skipped (a bound reached, shutting down)\n"
                     "# TYPE graphgate_async_branches_total counter\n"
                     "graphgate_async_branches_total{event=\"started\"} %llu\n"
                     "graphgate_async_branches_total{event=\"skipped\"} %llu\n",
                     total, started, skipped);
}
