/* branch.c — fire-and-forget branches (graph.h, gg_graph_async_hooks): an mcp node with
 * `async: true` starts its downstream call (or graph-to-graph call) and the run goes on at
 * once. The branch owns a reference on the graph, so the graph's clients outlive the run that
 * started it; its answer is finished on a worker through the branch context's resume (the
 * client's event-loop thread must not block, and dropping the last graph reference there
 * would stop that very client). No thread waits for a branch. */
#include "graph/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gbranch {
    gg_graph *g;
    gg_graph_async_hooks h; /* a copy: the provider may go before the branch ends */
    void *handle;
    /* copied from the branch context: the gateway's, they outlive the context */
    void (*resume)(void *resume_user, void (*fn)(void *arg), void *arg);
    void *resume_user;
    json_t *result;
    gg_error err;
    gserver *server; /* held through g; its answers are redacted when it uses secrets */
    mcp_client *held; /* a for_caller server's client holding the caller's token until the branch ends */
} gbranch;

static json_t *skipped(const char *why) {
    return json_pack("{s:b, s:s}", "started", 0, "skipped", why && *why ? why : "not started");
}

/* On a worker: report the outcome, then let the graph go. */
static void branch_finish(void *arg) {
    gbranch *b = arg;
    if (b->held) gg_graph_user_release(b->server, b->held); /* the caller's token: let go */
    b->h.end(b->h.user, b->handle, b->result, &b->err);
    json_decref(b->result);
    gg_error_clear(&b->err);
    gg_graph_unref(b->g);
    free(b);
}

/* The downstream (or callee graph's) answer, on any thread: finished on a worker. */
static void branch_answered(void *user, json_t *result, gg_error *err) {
    gbranch *b = user;
    bool redact = b->server && b->server->nsecrets;
    b->result = redact ? gg_graph_secrets_redact(b->server, result) : json_incref(result);
    if (redact && err) gg_graph_secrets_redact_error(b->server, err);
    if (err && gg_error_is_set(err)) gg_error_move(&b->err, err);
    else if (!result) gg_error_set(&b->err, "transport", "no answer");
    b->resume(b->resume_user, branch_finish, b);
}

/* Send the branch's call; its answer (or an immediate failure) goes to branch_answered. */
static void branch_send(gbranch *b, const gnode *n, json_t *args, const mcp_call_ctx *ctx,
                        const gg_graph_run_options *o) {
    gg_error e = GG_ERROR_INIT;
    if (n->server->target_graph) {
        if (!o->graph_call) {
            gg_error_set(&e, "graph_call", "graph-to-graph calls run only in the gateway");
            branch_answered(b, NULL, &e);
            return;
        }
        o->graph_call(o->graph_call_user, ctx, n->server->target_graph, n->tool, args, ctx->run.cancelled,
                      branch_answered, b);
        return;
    }
    /* a server acting for each caller: the client of the caller of the run that started the
     * branch, chosen now (o->caller lives until this returns); its token, if it needs one, is
     * held by that client until the branch ends */
    bool held = false;
    mcp_client *c = n->server->per_user || n->server->for_caller ? gg_graph_caller_client(n->server, o->caller, &held, &e)
                                                                 : gg_graph_server_client(n->server, b->g->policy, &e);
    if (held) b->held = c;
    if (!c) {
        branch_answered(b, NULL, &e);
        return;
    }
    char tp[GG_TRACEPARENT_LEN + 1] = "";
    const gg_trace_ctx *tc = ctx->identity.trace && ctx->identity.trace->valid ? ctx->identity.trace : NULL;
    if (tc) gg_trace_format(tc, tp);
    /* the server's own per-call timeout bounds the branch, not the caller's run limit */
    mcp_client_call_tool_start_traced(c, n->tool, args, n->server->cfg.timeout_ms, ctx->run.cancelled, tc ? tp : NULL,
                                      tc && tc->state[0] ? tc->state : NULL, branch_answered, b);
}

json_t *gg_graph_async_start(gg_graph *g, const gnode *n, json_t *args, const gg_graph_run_options *o) {
    const gg_graph_async_hooks *h = o ? o->async : NULL;
    if (!h || !h->begin || !h->end) return skipped("fire-and-forget branches run only in the gateway");
    char why[200] = "";
    const mcp_call_ctx *ctx = NULL;
    void *handle = h->begin(h->user, h->label, o->caller, n->server->name, n->tool, args, &ctx, why, sizeof why);
    if (!handle) return skipped(why);
    gbranch *b = calloc(1, sizeof *b);
    /* the output first: once sent, the branch may end (and its context go) at any moment */
    const char *exec_id = ctx ? ctx->history.exec_id : NULL;
    json_t *out = json_pack("{s:b, s:s?}", "started", 1, "branch", exec_id && *exec_id ? exec_id : NULL);
    if (!b || !out || !ctx || !ctx->run.resume) {
        gg_error e = GG_ERROR_INIT;
        gg_error_set(&e, "oom", "out of memory");
        h->end(h->user, handle, NULL, &e);
        gg_error_clear(&e);
        free(b);
        json_decref(out);
        return skipped("out of memory");
    }
    b->g = gg_graph_ref(g);
    b->h = *h;
    b->handle = handle;
    b->err = (gg_error)GG_ERROR_INIT;
    b->resume = ctx->run.resume;
    b->resume_user = ctx->run.resume_user;
    b->server = n->server;
    branch_send(b, n, args, ctx, o);
    return out;
}
