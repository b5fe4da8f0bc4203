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
 *
 * elicit, sample, roots and ask nodes ask the toolkit's own client, as a stored graph's
 * nodes ask theirs: in a 2025 session on the call's SSE stream (the answer comes back
 * through the session), in a 2026-07-28 call as input-required rounds. A round's result is
 * the run's saved state plus the trace so far, which the server seals into requestState
 * (reqstate.c: tenant-less mount binding + API key + tool + expiry); since the graph is not
 * stored, the state also carries a hash of the tenant, the source, the tool and the
 * arguments, and the repeated call must send the same ones (else -32602). The source is
 * compiled again for each round and the run restored at its waiting node: earlier nodes
 * do not run again, the trace goes on from their records.
 */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "gateway/calls.h"
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
    char source[2 * crypto_generichash_BYTES + 1]; /* what a round's state is bound to (source_hash) */
    bool *parked;   /* tk_run_step's: set when an input-required round left the run waiting */
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

/* ---- input-required rounds (2026-07-28) ------------------------------------------------- */

/* The hash a round's state is bound to: the tenant, the source, the tool and the arguments
 * (canonical JSON), each ended by a NUL so no two different calls hash alike. */
static void source_hash(const char *tenant, json_t *args, char out[2 * crypto_generichash_BYTES + 1]) {
    crypto_generichash_state st;
    unsigned char h[crypto_generichash_BYTES];
    json_t *ja = json_object_get(args, "arguments");
    char *canon = ja ? json_dumps(ja, JSON_COMPACT | JSON_SORT_KEYS) : NULL; /* none = {} */
    const char *parts[4] = {tenant, json_string_value(json_object_get(args, "yaml")),
                            json_string_value(json_object_get(args, "tool")), canon ? canon : "{}"};
    size_t lens[4] = {strlen(tenant), json_string_length(json_object_get(args, "yaml")),
                      json_string_length(json_object_get(args, "tool")), canon ? strlen(canon) : 2};
    crypto_generichash_init(&st, (const unsigned char *)"graphgate run_graph", 19, sizeof h);
    for (int i = 0; i < 4; i++) crypto_generichash_update(&st, (const unsigned char *)parts[i], lens[i] + 1);
    crypto_generichash_final(&st, h, sizeof h);
    sodium_bin2hex(out, 2 * crypto_generichash_BYTES + 1, h, sizeof h);
    free(canon);
}

/* The executor's client_request: the caller's (a 2025 session's stream, or a 2026 round's
 * inputResponses); a request the round leaves for the client's next call parks the run. */
static void tk_client_request(void *user, const char *key, const char *method, json_t *params, int timeout_ms,
                              atomic_int *cancelled, void (*done)(void *user, json_t *result, gg_error *err),
                              void *done_user) {
    tk_run *r = user;
    atomic_int *wait = r->caller->run.input_wait;
    bool *parked = r->parked; /* read before: a session's answer may wake (and end) the run at once */
    r->caller->client.request(r->caller->client.user, key, method, params, timeout_ms, cancelled, done, done_user);
    if (wait && atomic_load(wait)) *parked = true; /* a round never answers later: r is still ours */
}

/* A round ends: the answer is the run's state (the server seals it) with what the next
 * round needs that the executor does not keep: the binding hash and the trace so far. */
static void tk_run_park(tk_run *r) {
    gg_error err = GG_ERROR_INIT;
    json_t *state = gg_graph_run_save(r->run);
    if (state && (json_object_set_new(state, "toolkitSource", json_string(r->source)) ||
                  json_object_set(state, "toolkitTrace", r->trace) ||
                  json_object_set_new(state, "toolkitTraceBytes", json_integer((json_int_t)r->trace_bytes)) ||
                  json_object_set_new(state, "toolkitDropped", json_integer((json_int_t)r->dropped)))) {
        json_decref(state);
        state = NULL;
    }
    tk_run_end(r, state, &err);
    gg_error_clear(&err);
}

/* The repeated call's state must be for this tenant, source, tool and arguments: NULL, or
 * why not. */
static const char *state_mismatch(json_t *state, const char *tenant, json_t *args) {
    char want[2 * crypto_generichash_BYTES + 1];
    const char *had = json_string_value(json_object_get(state, "toolkitSource"));
    source_hash(tenant, args, want);
    if (!had) return "requestState is not a run_graph state; call run_graph again without it";
    if (sodium_memcmp(had, want, sizeof want - 1) != 0 || strlen(had) != sizeof want - 1)
        return "requestState was issued for another graph source, tool or arguments: repeat the call with the yaml, "
               "tool and arguments of the call that returned it, or call run_graph again without it";
    return NULL;
}

/* The restored run's trace goes on from the earlier rounds' records. */
static void trace_resume(tk_run *r, json_t *state) {
    json_t *t = json_object_get(state, "toolkitTrace");
    if (!json_is_array(t)) return;
    json_decref(r->trace);
    r->trace = gg_json_clone(t);
    if (!r->trace) r->trace = json_array();
    r->trace_bytes = (size_t)json_integer_value(json_object_get(state, "toolkitTraceBytes"));
    r->dropped = (size_t)json_integer_value(json_object_get(state, "toolkitDropped"));
}

/* A 2026-07-28 call may go on only when its _meta declared what the graph's tool asks of
 * every run (the check a stored graph's tools/call makes before running): the missing
 * MCP_CLIENT_CAPS_* bits, 0 = none. */
static int missing_caps(const tk_run *r, const gg_graph *g, const char *tool) {
    if (!r->caller->run.input_wait || !r->caller->outcome.missing_caps) return 0; /* a session: its nodes fail as they ask */
    int asked = MCP_CLIENT_CAPS_ELICITATION | MCP_CLIENT_CAPS_SAMPLING | MCP_CLIENT_CAPS_ROOTS;
    return gg_graph_tool_client_needs(g, tool) & ~r->caller->client.caps & asked;
}

/* Advance (on a worker) and answer once the run ended. */
static void tk_run_step(void *arg) {
    tk_run *r = arg;
    bool parked = false; /* r is not read after advance unless parked: a wake may own it */
    r->parked = &parked;
    if (!gg_graph_run_advance(r->run)) {
        if (parked) tk_run_park(r); /* the client answers in its next call */
        return;                     /* else waits: tk_run_wake brings it back */
    }
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
    if (r->ctx.run.resume) r->ctx.run.resume(r->ctx.run.resume_user, tk_run_step, r);
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
    r->ctx.identity.tenant = r->tenant;
    r->ctx.history.records = NULL;
    r->ctx.history.text = NULL;
    r->ctx.history.exec_id = NULL; /* no record of this run: graphs it calls have no parent row */
    r->ctx.run.input_wait = NULL; /* graphs it calls ask no client (gw_graph_call) */
    r->ctx.run.resume_state = NULL;
    r->ctx.outcome.fail_code = NULL;
    r->ctx.outcome.missing_caps = NULL;
    r->ctx.run.budget_ms = 0;
    r->hooks = (gg_graph_hooks){NULL, trace_node, trace_node, r};
    r->ro = (gg_graph_run_options){.hooks = &r->hooks, .cancelled = ctx->run.cancelled, .record_inputs = true,
                                   .no_history = true};
    r->ro.start_ms = ctx->run.accepted_ms;
    r->ro.client_request = ctx->client.request ? tk_client_request : NULL;
    r->ro.client_user = r;
    r->ro.input_wait = ctx->run.input_wait;
    r->ro.client_caps = ctx->client.caps;
    r->ro.trace = ctx->identity.trace;
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
    const char *tool = json_string_value(jt);
    json_t *state = r->caller->run.resume_state;
    int missing = 0;
    if (g && !gg_graph_tool(g, tool)) {
        answer = gw_toolkit_error("unknown_tool", "the graph has no tool of that name");
    } else if (g && (missing = missing_caps(r, g, tool))) {
        *r->caller->outcome.missing_caps = missing;
        gg_error_set(&err, "missing_capability", "Missing required client capability: tool %.100s of the graph asks the "
                     "client for input the request did not declare:%s%s%s", tool,
                     missing & MCP_CLIENT_CAPS_ELICITATION ? " elicitation" : "",
                     missing & MCP_CLIENT_CAPS_SAMPLING ? " sampling" : "", missing & MCP_CLIENT_CAPS_ROOTS ? " roots" : "");
    } else if (g && !(answer = take_bounds(r, g, tool))) {
        run_options(r, r->caller);
        if (state) { /* a later round: on from the waiting node */
            if ((r->run = gg_graph_run_restore(g, state, &r->ro, &err))) trace_resume(r, state);
        } else {
            r->run = gg_graph_run_new(g, tool, json_object_get(r->args, "arguments"), &r->ro);
        }
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
    if (r->caller->run.resume) r->caller->run.resume(r->caller->run.resume_user, tk_run_start, r);
    else tk_run_start(r);
}

static void tk_compile_refuse(void *arg) {
    gg_error err = GG_ERROR_INIT;
    tk_run_end(arg, gw_toolkit_error("shutting_down", "the server is shutting down"), &err);
    gg_error_clear(&err);
}

/* See calls.h. */
void gw_toolkit_run_graph(gg_gateway *gw, json_t *args, const mcp_call_ctx *ctx, mcp_provider_done_fn done, void *user) {
    gg_error err = GG_ERROR_INIT;
    json_t *answer = NULL, *ja = json_object_get(args, "arguments");
    const char *why = NULL;
    tk_run *r = NULL;
    if (!ctx || !ctx->identity.tenant || !ctx->identity.tenant[0]) answer = gw_toolkit_error("no_tenant", "no tenant: call with a tenant's API key");
    else if (!json_is_string(json_object_get(args, "tool"))) answer = gw_toolkit_error("invalid_params", "tool: a string is required");
    else if (ja && !json_is_object(ja)) answer = gw_toolkit_error("invalid_params", "arguments: an object is required");
    else if (!json_is_string(json_object_get(args, "yaml"))) answer = gw_toolkit_error("invalid_params", "yaml: a string is required");
    else if (gw->cfg->graphs_max_bytes && json_string_length(json_object_get(args, "yaml")) > gw->cfg->graphs_max_bytes)
        answer = gw_toolkit_error("too_large", "the graph source is larger than graphs.max_bytes");
    else if (ctx->run.resume_state && (why = state_mismatch(ctx->run.resume_state, ctx->identity.tenant, args)))
        gg_error_set(&err, "invalid_params", "Invalid params: %s", why);
    else if ((r = calloc(1, sizeof *r))) {
        if (ctx->run.input_wait) source_hash(ctx->identity.tenant, args, r->source); /* only a round's state needs it */
        r->gw = gw;
        snprintf(r->tenant, sizeof r->tenant, "%s", ctx->identity.tenant);
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
    if (!answer && !gg_error_is_set(&err)) gg_error_set(&err, "oom", "out of memory");
    done(user, answer, &err);
    gg_error_clear(&err);
}
