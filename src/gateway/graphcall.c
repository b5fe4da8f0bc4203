/* graphcall.c — graph-to-graph calls: an mcp node whose server is `type: graph` runs a tool
 * of another graph of the same tenant in-process. No HTTP and no thread held: the callee is
 * an asynchronous call of that graph's provider whose continuations join the caller's
 * tenant queue (the caller's resume), and its answer wakes the caller's run like a
 * downstream answer. The callee's run is recorded as its own execution whose parent_id is
 * the caller's (migration 0007). Bounds: GW_GRAPH_CALL_DEPTH nested calls at run time, and
 * at upload a graph that would reach itself through the active versions of the graphs it
 * names is refused. The callee is looked up in the caller's tenant (the endpoint's, never
 * anything a graph or a client names), so a graph cannot reach another tenant's graphs. */
#include <stdlib.h>
#include <string.h>

#include "gateway/calls.h"
#include "gateway/internal.h"

typedef struct gcall {
    gg_gateway *gw;
    mcp_server *srv;     /* reference: keeps the callee's version alive while it runs */
    mcp_call_ctx ctx;
    json_t *history;     /* the callee's node records (the provider's history sink) */
    gg_exec_record *rec; /* NULL without history */
    char tenant[GG_NAME_MAX + 1];
    double started_ms;
    void (*done)(void *user, json_t *result, gg_error *err);
    void *done_user;
} gcall;

static void answer_error(void (*done)(void *, json_t *, gg_error *), void *user, const char *code, const char *msg) {
    gg_error e = GG_ERROR_INIT;
    gg_error_set(&e, code, "%s", msg);
    done(user, NULL, &e);
    gg_error_clear(&e);
}

/* The callee's final record: status from the result (isError or a protocol error fails). */
static void record_callee(gcall *c, json_t *result, const gg_error *err) {
    gg_exec_record *r = c->rec;
    c->rec = NULL;
    if (!r) return;
    bool failed = !result || json_is_true(json_object_get(result, "isError"));
    r->status = !failed ? GG_EXEC_SUCCEEDED
                : err && !strcmp(err->code, "cancelled") ? GG_EXEC_CANCELLED : GG_EXEC_FAILED;
    r->finished_ms = gg_wall_ms();
    r->duration_ms = gg_now_ms() - c->started_ms;
    if (result) gw_record_result(r, result);
    if (err && gg_error_is_set(err)) r->error = strdup(err->message ? err->message : err->code);
    else if (failed) r->error = strdup("tool error");
    gg_exec_record_set_node_history(r, json_incref(c->history), true); /* every node's input */
    gg_history_submit(c->gw->history, r);
}

static void callee_done(void *user, json_t *result, gg_error *err) {
    gcall *c = user;
    record_callee(c, result, err);
    void (*done)(void *, json_t *, gg_error *) = c->done;
    void *done_user = c->done_user;
    mcp_server_unref(c->srv);
    json_decref(c->history);
    gg_exec_record_free(c->rec);
    free(c);
    gg_error e = GG_ERROR_INIT;
    if (err && gg_error_is_set(err)) gg_error_move(&e, err);
    done(done_user, result, &e); /* the caller takes its own reference of result */
    json_decref(result);
    gg_error_clear(&e);
}

void gw_graph_call(void *user, const mcp_call_ctx *caller, const char *graph, const char *tool, json_t *arguments,
                   atomic_int *cancelled, void (*done)(void *done_user, json_t *result, gg_error *err), void *done_user) {
    gg_gateway *gw = user;
    char msg[160];
    if (!caller || !caller->identity.tenant || !*caller->identity.tenant) {
        snprintf(msg, sizeof msg, "graph '%s': the call has no tenant", graph);
        answer_error(done, done_user, "graph_call", msg);
        return;
    }
    if (caller->history.call_depth + 1 > GW_GRAPH_CALL_DEPTH) {
        snprintf(msg, sizeof msg, "graph '%s': more than %d nested graph calls", graph, GW_GRAPH_CALL_DEPTH);
        answer_error(done, done_user, "depth_exceeded", msg);
        return;
    }
    int version = 0;
    gg_error e = GG_ERROR_INIT;
    mcp_server *srv = gw_registry_get(gw->registry, caller->identity.tenant, graph, &version, &e);
    gcall *c = srv ? calloc(1, sizeof *c) : NULL;
    if (!c) {
        mcp_server_unref(srv);
        gg_error_clear(&e);
        snprintf(msg, sizeof msg, srv ? "out of memory" : "graph '%s' not found", graph);
        answer_error(done, done_user, srv ? "oom" : "not_found", msg);
        return;
    }
    c->gw = gw;
    c->srv = srv;
    c->done = done;
    c->done_user = done_user;
    c->started_ms = gg_now_ms();
    snprintf(c->tenant, sizeof c->tenant, "%s", caller->identity.tenant);
    c->history = json_array();
    if (gw->history) {
        c->rec = gg_history_record_new(gw->history, c->tenant, graph, version, tool, caller->identity.key_id,
                                       arguments);
        if (c->rec && caller->history.exec_id)
            snprintf(c->rec->parent_id, sizeof c->rec->parent_id, "%s", caller->history.exec_id);
        if (c->rec && caller->identity.trace) gg_trace_id_hex(caller->identity.trace, c->rec->trace_id);
    }
    /* the callee runs as part of the caller's call: same key, request, cancel flag, queue */
    c->ctx = (mcp_call_ctx){
        .identity = {.request_id = caller->identity.request_id, .key_id = caller->identity.key_id,
                     .tenant = c->tenant, .trace = caller->identity.trace},
        .run = {.cancelled = cancelled, .resume = caller->run.resume, .resume_user = caller->run.resume_user,
                .accepted_ms = gg_now_ms()},
        .history = {.records = c->history, .exec_id = c->rec ? c->rec->id : NULL,
                    .call_depth = caller->history.call_depth + 1}};
    mcp_provider *p = mcp_server_provider(srv);
    if (p->ops->call_tool_async) {
        p->ops->call_tool_async(p, tool, arguments, &c->ctx, callee_done, c);
        return;
    }
    json_t *res = p->ops->call_tool(p, tool, arguments, &c->ctx, &e);
    callee_done(c, res, &e);
    gg_error_clear(&e);
}

/* Depth-first over the graphs g names; path holds the names from the uploaded graph on. */
static bool reaches(gg_gateway *gw, const char *tenant, const char *graph, const gg_graph *g, json_t *path, int depth,
                    gg_error *err) {
    json_t *targets = gg_graph_call_targets(g);
    size_t i;
    json_t *t;
    bool found = false;
    json_array_foreach(targets, i, t) {
        const char *name = json_string_value(t);
        json_array_append(path, t);
        if (!strcmp(name, graph)) {
            found = true;
        } else if (depth < GW_GRAPH_CALL_DEPTH) {
            bool seen = false; /* a cycle not through the uploaded graph is the other graph's */
            for (size_t k = 0; k + 1 < json_array_size(path); k++)
                if (!strcmp(json_string_value(json_array_get(path, k)), name)) seen = true;
            gg_error ignore = GG_ERROR_INIT;
            mcp_server *s = seen ? NULL : gw_registry_get(gw->registry, tenant, name, NULL, &ignore);
            gg_error_clear(&ignore);
            gg_graph *callee = s ? gg_graph_provider_graph(mcp_server_provider(s)) : NULL;
            found = callee && reaches(gw, tenant, graph, callee, path, depth + 1, err);
            mcp_server_unref(s);
        }
        if (found) break;
        json_array_remove(path, json_array_size(path) - 1);
    }
    json_decref(targets);
    return found;
}

bool gw_graph_calls_acyclic(gg_gateway *gw, const char *tenant, const char *graph, const gg_graph *g, gg_error *err) {
    json_t *path = json_pack("[s]", graph);
    bool cycle = path && reaches(gw, tenant, graph, g, path, 1, err);
    if (cycle) {
        gg_strbuf b = GG_STRBUF_INIT;
        size_t i;
        json_t *n;
        json_array_foreach(path, i, n) gg_strbuf_printf(&b, "%s%s", i ? " -> " : "", json_string_value(n));
        gg_error_set(err, "graph_cycle", "graph '%s' calls itself: %s", graph, b.data ? b.data : graph);
        gg_strbuf_free(&b);
    }
    json_decref(path);
    return !cycle;
}
