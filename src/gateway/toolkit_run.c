/* toolkit_run.c — the toolkit's run_graph: compile a graph source the caller sends and run
 * one of its tools on the real executor, answering the result and the node-by-node trace.
 * Nothing is stored (no version, no history row of the run; a graph it calls records its
 * own runs, as any call of that graph does).
 *
 * The run gets exactly what a stored graph's run gets, so the toolkit is no way around a
 * limit: the source is loaded with the upload's options (graphs.max_bytes, the upload time
 * limit, executionLimits refused past the operator's caps: time, node executions, memory),
 * the tenant's downstream policy (gw_build_graph), the tenant's concurrent-execution slot
 * and waiting bounds, the caller's cancel flag (request_timeout and client cancellation),
 * and the history's bounds on the trace (history.max_payload per value,
 * history.max_run_records and history.max_run_bytes per run). The source is compiled on the
 * upload threads (as an upload: bounded per tenant, never a worker); the run is a heap run
 * on the tenant's worker queue that yields on mcp nodes and continues through the caller's
 * resume hook, so no worker waits on a downstream.
 */
#include <stdlib.h>
#include <string.h>

#include "gateway/internal.h"

typedef struct tk_run {
    gg_gateway *gw;
    mcp_server *srv; /* the compiled graph (reference) */
    gg_graph_run *run;
    gg_graph_hooks hooks;
    gg_graph_run_options ro;
    mcp_call_ctx ctx; /* the caller's, without its history: what graphs it calls see */
    char tenant[GG_NAME_MAX + 1];
    json_t *trace;
    size_t trace_bytes, dropped;
    bool slot, waiting; /* the tenant's execution slot / waiting count held */
    const mcp_call_ctx *caller; /* the toolkit call's (lives until done) */
    json_t *args;   /* the call's arguments (reference) */
    json_t *answer; /* compile's refusal, answered from the worker */
    mcp_provider_done_fn done;
    void *user;
} tk_run;

/* ---- the trace: one record per node, bounded as the history bounds a stored run --------- */

typedef struct capped {
    gg_strbuf b;
    size_t max;
} capped;

static int capped_put(const char *buf, size_t n, void *user) {
    capped *c = user;
    if (c->max && c->b.len + n > c->max) return -1; /* stop: the value is over the bound */
    gg_strbuf_append(&c->b, buf, n);
    return 0;
}

/* v as the trace keeps it: a copy, or {"truncated":true} past max bytes of JSON (the dump
 * stops there, so a huge value costs at most max bytes of work). *bytes gets its size. */
static json_t *trace_value(json_t *v, size_t max, size_t *bytes) {
    capped c = {GG_STRBUF_INIT, max};
    int rc = json_dump_callback(v, capped_put, &c, JSON_COMPACT | JSON_ENCODE_ANY);
    json_t *out = rc == 0 && c.b.data ? json_loadb(c.b.data, c.b.len, JSON_DECODE_ANY, NULL) : NULL;
    *bytes = c.b.len;
    if (rc != 0) {
        out = json_pack("{s:b, s:I}", "truncated", 1, "max_bytes", (json_int_t)max);
        *bytes = 40;
    }
    gg_strbuf_free(&c.b);
    return out;
}

/* The error of a node or a run: code, message, and where it is known (expression position,
 * line:col, path). */
static json_t *error_json(const gg_error *e) {
    json_t *o = json_pack("{s:s, s:s}", "code", e->code, "message", e->message ? e->message : e->code);
    if (o && e->position >= 0) json_object_set_new(o, "position", json_integer(e->position));
    if (o && e->line > 0) {
        json_object_set_new(o, "line", json_integer(e->line));
        json_object_set_new(o, "column", json_integer(e->column));
    }
    if (o && e->path) json_object_set_new(o, "path", json_string(e->path));
    return o;
}

static void trace_node(void *user, const gg_graph_event *ev) {
    tk_run *r = user;
    const gg_config *cfg = r->gw->cfg;
    if ((cfg->history_max_run_records > 0 && json_array_size(r->trace) >= (size_t)cfg->history_max_run_records) ||
        (cfg->history_max_run_bytes && r->trace_bytes >= cfg->history_max_run_bytes)) {
        r->dropped++;
        return;
    }
    json_t *rec = json_pack("{s:i, s:s, s:s, s:I, s:f}", "index", ev->execution_index, "node", ev->node_id, "type",
                            ev->node_type, "started_at", (json_int_t)ev->start_ms, "duration_ms", ev->duration_ms);
    size_t n = 0;
    if (rec && ev->input) json_object_set_new(rec, "input", trace_value(ev->input, cfg->history_max_payload, &n));
    r->trace_bytes += n + 100;
    if (rec && ev->output) json_object_set_new(rec, "output", trace_value(ev->output, cfg->history_max_payload, &n));
    r->trace_bytes += n;
    if (rec && ev->error) json_object_set_new(rec, "error", error_json(ev->error));
    if (rec) json_array_append_new(r->trace, rec);
}

/* ---- the run --------------------------------------------------------------------------- */

static void tk_run_free(tk_run *r) {
    if (r->slot) gg_auth_exec_release(r->gw->auth, r->tenant);
    if (r->waiting) gw_waiting_release(r->gw, r->tenant);
    gg_graph_run_free(r->run);
    mcp_server_unref(r->srv);
    json_decref(r->trace);
    json_decref(r->args);
    json_decref(r->answer);
    free(r);
}

/* The answer of a run that ended: structured {ok, output | error, trace, ...}. */
static json_t *run_answer(tk_run *r, bool ok, gg_graph_result *res) {
    json_t *sc = json_pack("{s:b, s:b, s:O, s:i, s:f}", "ok", ok, "stored", 0, "trace", r->trace, "node_executions",
                           res->node_executions, "elapsed_ms", res->elapsed_ms);
    if (!sc) return NULL;
    if (ok) json_object_set(sc, "output", res->output ? res->output : json_null());
    else {
        json_t *e = error_json(&res->error);
        if (e && res->failed_node) json_object_set_new(e, "node", json_string(res->failed_node));
        json_object_set_new(sc, "error", e);
    }
    if (r->dropped)
        json_object_set_new(sc, "trace_truncated", json_pack("{s:I, s:I}", "dropped", (json_int_t)r->dropped, "kept",
                                                             (json_int_t)json_array_size(r->trace)));
    return gw_toolkit_result(sc, !ok);
}

static void tk_run_end(tk_run *r, json_t *answer, gg_error *err);

/* Advance (on a worker) and answer once the run ended. */
static void tk_run_step(void *arg) {
    tk_run *r = arg;
    if (!gg_graph_run_advance(r->run)) return; /* waits downstream: tk_run_wake brings it back */
    gg_graph_result res = GG_GRAPH_RESULT_INIT;
    bool ok = gg_graph_run_result(r->run, &res);
    gg_error err = GG_ERROR_INIT;
    json_t *out = NULL;
    if (!ok && !strcmp(res.error.code, "cancelled")) gg_error_move(&err, &res.error); /* as any call's */
    else out = run_answer(r, ok, &res);
    gg_graph_result_clear(&res);
    tk_run_end(r, out, &err);
    gg_error_clear(&err);
}

/* The downstream answer arrived (a client thread): continue on the tenant's queue. */
static void tk_run_wake(void *arg) {
    tk_run *r = arg;
    if (r->ctx.resume) r->ctx.resume(r->ctx.resume_user, tk_run_step, r);
    else tk_run_step(r);
}

/* A load that failed: the diagnostics validate_graph would give, as an error result. */
static json_t *load_failed(gg_graph_diags *d, const gg_error *err) {
    json_t *list = json_array();
    for (size_t i = 0; list && i < d->count; i++) json_array_append_new(list, gg_graph_diag_json(&d->items[i]));
    json_t *e = json_pack("{s:s, s:s}", "code", err->code[0] ? err->code : "validation", "message",
                          err->message ? err->message : "the graph is invalid");
    return gw_toolkit_result(json_pack("{s:b, s:b, s:o, s:o}", "ok", 0, "stored", 0, "error", e, "diagnostics", list), true);
}

/* Compile args.yaml (a string of at most graphs.max_bytes) for the caller's tenant (NULL +
 * *answer when it cannot run). */
static mcp_server *compile(gg_gateway *gw, const char *tenant, json_t *args, json_t **answer) {
    json_t *js = json_object_get(args, "yaml");
    size_t len = json_string_length(js);
    gg_graph_options o = gw_graph_options(gw, true, gg_now_ms() + (double)gw->cfg->graphs_upload_timeout_ms);
    gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
    gg_error e = GG_ERROR_INIT;
    mcp_server *s = gw_build_graph(gw, tenant, "run_graph", json_string_value(js), len, &o, &d, &e);
    if (!s) *answer = load_failed(&d, &e);
    gg_graph_diags_free(&d);
    gg_error_clear(&e);
    return s;
}

/* Take the tenant's execution slot and, for a tool that may wait downstream, a waiting
 * count: the bounds a call on the graph's own endpoint takes. NULL = taken. */
static json_t *take_bounds(tk_run *r, gg_graph *g, const char *tool) {
    if (!(r->slot = gg_auth_exec_acquire(r->gw->auth, r->tenant)))
        return gw_toolkit_error("rate_limited", "too many concurrent executions for this tenant; retry later");
    if (gg_graph_tool_is_pure(g, tool)) return NULL;
    int rc = gw_waiting_acquire(r->gw, r->tenant);
    r->waiting = rc == 0;
    if (rc == 1) return gw_toolkit_error("rate_limited", "too many calls of this tenant waiting on downstream servers");
    if (rc) return gw_toolkit_error("busy", "too many calls waiting on downstream servers; retry later");
    return NULL;
}

/* The executor's options: the caller's cancel flag and clock, graph calls in the tenant. */
static void run_options(tk_run *r, const mcp_call_ctx *ctx) {
    r->ctx = *ctx;
    r->ctx.tenant = r->tenant;
    r->ctx.history = NULL;
    r->ctx.history_text = NULL;
    r->ctx.exec_id = NULL; /* no record of this run: graphs it calls have no parent row */
    r->ctx.input_wait = NULL;
    r->ctx.resume_state = NULL;
    r->ctx.fail_code = NULL;
    r->ctx.budget_ms = 0;
    if (ctx->input_wait) r->ctx.client_request = NULL; /* a stateless round cannot be resumed here */
    r->hooks = (gg_graph_hooks){NULL, trace_node, trace_node, r};
    r->ro = (gg_graph_run_options){.hooks = &r->hooks, .cancelled = ctx->cancelled, .record_inputs = true,
                                   .no_history = true};
    r->ro.start_ms = ctx->accepted_ms;
    r->ro.client_request = r->ctx.client_request;
    r->ro.client_user = r->ctx.client_user;
    r->ro.client_caps = ctx->client_caps;
    r->ro.trace = ctx->trace;
    r->ro.graph_call = gw_graph_call;
    r->ro.graph_call_user = r->gw;
    r->ro.caller = &r->ctx;
    r->ro.wake = tk_run_wake;
    r->ro.wake_user = r;
}

/* Answer r's caller with answer (or err) and free r. */
static void tk_run_end(tk_run *r, json_t *answer, gg_error *err) {
    mcp_provider_done_fn done = r->done;
    void *user = r->user;
    tk_run_free(r);
    if (!answer && !gg_error_is_set(err)) gg_error_set(err, "oom", "out of memory");
    done(user, answer, err);
}

/* On a worker, once compiled: take the bounds and start the run (or answer why not). */
static void tk_run_start(void *arg) {
    tk_run *r = arg;
    gg_error err = GG_ERROR_INIT;
    json_t *answer = r->answer, *jt = json_object_get(r->args, "tool");
    r->answer = NULL;
    gg_graph *g = r->srv ? gg_graph_provider_graph(mcp_server_provider(r->srv)) : NULL;
    if (g && !gg_graph_tool(g, json_string_value(jt)))
        answer = gw_toolkit_error("unknown_tool", "the graph has no tool of that name");
    else if (g && !(answer = take_bounds(r, g, json_string_value(jt)))) {
        run_options(r, r->caller);
        r->run = gg_graph_run_new(g, json_string_value(jt), json_object_get(r->args, "arguments"), &r->ro);
        if (r->run) {
            tk_run_step(r);
            return;
        }
    }
    tk_run_end(r, answer, &err);
    gg_error_clear(&err);
}

/* On an upload thread: compiling costs up to graphs.upload_timeout of CPU, so it runs where
 * uploads do (their threads, the tenant's bound), never on a worker; then back to the
 * tenant's worker queue. */
static void tk_compile_job(void *arg) {
    tk_run *r = arg;
    r->srv = compile(r->gw, r->tenant, r->args, &r->answer);
    if (r->caller->resume) r->caller->resume(r->caller->resume_user, tk_run_start, r);
    else tk_run_start(r);
}

static void tk_compile_refuse(void *arg) {
    gg_error err = GG_ERROR_INIT;
    tk_run_end(arg, gw_toolkit_error("shutting_down", "the server is shutting down"), &err);
    gg_error_clear(&err);
}

/* See internal.h. */
void gw_toolkit_run_graph(gg_gateway *gw, json_t *args, const mcp_call_ctx *ctx, mcp_provider_done_fn done, void *user) {
    gg_error err = GG_ERROR_INIT;
    json_t *answer = NULL, *ja = json_object_get(args, "arguments");
    tk_run *r = NULL;
    if (!ctx || !ctx->tenant || !ctx->tenant[0]) answer = gw_toolkit_error("no_tenant", "no tenant: call with a tenant's API key");
    else if (!json_is_string(json_object_get(args, "tool"))) answer = gw_toolkit_error("invalid_params", "tool: a string is required");
    else if (ja && !json_is_object(ja)) answer = gw_toolkit_error("invalid_params", "arguments: an object is required");
    else if (!json_is_string(json_object_get(args, "yaml"))) answer = gw_toolkit_error("invalid_params", "yaml: a string is required");
    else if (gw->cfg->graphs_max_bytes && json_string_length(json_object_get(args, "yaml")) > gw->cfg->graphs_max_bytes)
        answer = gw_toolkit_error("too_large", "the graph source is larger than graphs.max_bytes");
    else if ((r = calloc(1, sizeof *r))) {
        r->gw = gw;
        snprintf(r->tenant, sizeof r->tenant, "%s", ctx->tenant);
        r->caller = ctx;
        r->args = json_incref(args);
        r->done = done;
        r->user = user;
        r->trace = json_array();
        if (gw_uploads_submit(gw->uploads, r->tenant, (gw_job){tk_compile_job, tk_compile_refuse, r}, &err)) return;
        tk_run_free(r);
        answer = gw_toolkit_error(err.code, err.message ? err.message : "the upload threads are busy; retry later");
        gg_error_clear(&err);
    }
    if (!answer) gg_error_set(&err, "oom", "out of memory");
    done(user, answer, &err);
    gg_error_clear(&err);
}
