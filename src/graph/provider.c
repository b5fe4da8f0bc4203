/* provider.c — a loaded graph version served as an mcp_provider: tools come from the graph,
 * tools/call runs the executor with the caller's cancel flag and reports each node live through
 * the sink (progress + a debug log per completed node, an error log for a failed one). The
 * asynchronous call runs the same executor as a heap run that yields on mcp nodes and is
 * resumed through the caller's resume hook, so a call waiting downstream holds no thread. */
#include "graph/internal.h"
#include "store/store.h"

#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gprov {
    gg_graph *g;
    gg_graph_history_fn history_fn;
    void *history_user;
    gg_graph_call_fn graph_call;
    void *graph_call_user;
    gg_graph_async_hooks async; /* begin NULL = none; label owned */
    /* runs of 2026-07-28 callers held between input-required rounds (acall_park) */
    pthread_mutex_t parked_mu;
    struct acall *parked;
    int nparked;
    gg_graph_consent_fn consent;
    void *consent_user;
    json_t *holder; /* this replica as a relay round's holder (set_relay_holder); NULL = none */
} gprov;

static json_t *p_server_info(mcp_provider *p) { return gg_graph_server_info(((gprov *)p->impl)->g); }
static const char *p_instructions(mcp_provider *p) { return gg_graph_instructions(((gprov *)p->impl)->g); }
static void p_cache_hint(mcp_provider *p, int *ttl_ms, bool *public_scope) {
    gg_graph_cache(((gprov *)p->impl)->g, ttl_ms, public_scope);
}
static int p_tool_client_needs(mcp_provider *p, const char *name) {
    return gg_graph_tool_client_needs(((gprov *)p->impl)->g, name);
}
static json_t *p_list_tools(mcp_provider *p) { return json_incref(gg_graph_tools(((gprov *)p->impl)->g)); }

static json_t *p_get_tool(mcp_provider *p, const char *name) {
    return json_incref(gg_graph_tool(((gprov *)p->impl)->g, name));
}

typedef struct call_state {
    const mcp_call_ctx *ctx;
    long completed; /* nodes completed so far: the progress value */
    size_t kept, dropped; /* history records written / left out past the run's bounds */
    long long origin_ms; /* node times are written as ms after this (0: as unix ms) */
    /* the records so far rebuild the run's context exactly (no output was JSON null, which
     * the text cannot tell from undefined, nor cut short): a context input may then be
     * written as HISTORY_CONTEXT_REF */
    bool context_exact;
    /* at least the bytes of the context's text: every output so far under its id, as the
     * records printed them (a node run again counts twice); a reference stands only for a
     * copy that would have been written whole (at most max_value) */
    size_t context_bytes;
    /* the bytes the references stand for, counted against the run's max_bytes as the
     * copies were: the readers rebuild them, so what a run shows stays bounded alike */
    size_t ref_bytes;
} call_state;

/* What a node record holds in place of an input that is the run's context, as JSON
 * (GG_HISTORY_CONTEXT_REF, store.h): the context holds every earlier output, so copies of
 * it made a run's text grow with the square of its nodes. */
#define HISTORY_CONTEXT_REF "\"" GG_HISTORY_CONTEXT_REF "\""

static call_state call_state_for(const mcp_call_ctx *ctx, long completed) {
    return (call_state){ctx, completed, 0, 0, ctx ? ctx->history.exec_start_ms : 0, true, 0, 0};
}

/* Milliseconds with microsecond precision, trailing zeros dropped ("0.012", "3"): the
 * history's durations, without the shortest-round-trip search a double would need. */
static void put_ms(gg_strbuf *b, double ms) {
    long long us = ms > 0 && ms < 1e12 ? llround(ms * 1000) : 0;
    gg_strbuf_put_int(b, us / 1000);
    int frac = (int)(us % 1000);
    if (!frac) return;
    char buf[4] = {'.', (char)('0' + frac / 100), (char)('0' + frac / 10 % 10), (char)('0' + frac % 10)};
    size_t n = frac % 10 ? 4 : frac % 100 ? 3 : 2;
    gg_strbuf_append(b, buf, n);
}

/* A node's input or output as stored: past max bytes (0 = no bound) the text is taken back
 * and replaced by {"truncated":true,"bytes":N}, as the history writer bounds values.
 * False when it was. */
static bool put_value(gg_strbuf *b, json_t *v, size_t max) {
    size_t mark = b->len;
    jsonata_dump_to(b, v);
    if (!max || b->len - mark <= max) return true;
    size_t bytes = b->len - mark;
    b->len = mark;
    gg_strbuf_puts(b, "{\"truncated\":true,\"bytes\":");
    gg_strbuf_put_int(b, (long long)bytes);
    gg_strbuf_putc(b, '}');
    return false;
}

/* One node's history record as JSON text in the history store's positional form (see
 * mcp_call_ctx.history.text): [index, "id", "type", start, end, duration, output|null],
 * then input|null when the node had one (what it received: an mcp node's evaluated
 * arguments, the context a transform or switch evaluated: HISTORY_CONTEXT_REF while the
 * records rebuild it) or failed, and a failed node's message. Inputs and outputs are
 * bounded alike (put_value). */
static void put_record(gg_strbuf *b, const gg_graph_event *ev, call_state *cs, size_t max) {
    long long origin_ms = cs->origin_ms;
    bool first = !b->len || b->data[b->len - 1] == '[';
    gg_strbuf_puts(b, first ? "[" : ",[");
    gg_strbuf_put_int(b, ev->execution_index);
    gg_strbuf_putc(b, ',');
    size_t id_at = b->len;
    jsonata_dump_string_to(b, ev->node_id, strlen(ev->node_id));
    size_t id_len = b->len - id_at; /* as a key of the context's text too */
    gg_strbuf_puts(b, ",\"");
    gg_strbuf_puts(b, ev->node_type); /* one of five fixed words */
    gg_strbuf_puts(b, "\",");
    gg_strbuf_put_int(b, ev->start_ms - origin_ms);
    gg_strbuf_putc(b, ',');
    gg_strbuf_put_int(b, ev->end_ms - origin_ms);
    gg_strbuf_putc(b, ',');
    put_ms(b, ev->duration_ms);
    gg_strbuf_putc(b, ',');
    size_t copy = cs->context_bytes + 2; /* the context's text: {members} */
    bool context_ref = ev->input_is_context && cs->context_exact && (!max || copy <= max);
    if (ev->output) {
        size_t mark = b->len;
        cs->context_exact &= put_value(b, ev->output, max) && !json_is_null(ev->output);
        cs->context_bytes += id_len + 1 + (b->len - mark) + 1; /* "id":value, */
    } else {
        gg_strbuf_puts(b, "null");
    }
    if (ev->input || ev->error) {
        gg_strbuf_putc(b, ',');
        if (context_ref) cs->ref_bytes += copy;
        if (context_ref) gg_strbuf_puts(b, HISTORY_CONTEXT_REF);
        else if (ev->input) put_value(b, ev->input, max);
        else gg_strbuf_puts(b, "null");
    }
    if (ev->error) {
        char *m = gg_graph_error_text(ev->error);
        gg_strbuf_putc(b, ',');
        jsonata_dump_string_to(b, m ? m : ev->error->code, strlen(m ? m : ev->error->code));
        free(m);
    }
    gg_strbuf_putc(b, ']');
}

/* A node's record into the history text, unless the run already wrote its bound of
 * records or bytes: then it is only counted (history_truncated writes the count). */
static void history_record(call_state *cs, const gg_graph_event *ev) {
    const mcp_call_ctx *c = cs->ctx;
    if (!c || !c->history.text) return;
    if ((c->history.max_records && cs->kept >= c->history.max_records) ||
        (c->history.max_bytes && c->history.text->len + cs->ref_bytes >= c->history.max_bytes)) {
        cs->dropped++;
        return;
    }
    put_record(c->history.text, ev, cs, c->history.max_value);
    cs->kept++;
}

/* After the run: a run cut by the bounds ends its records with the marker the store shows
 * as nodes_truncated (never a silently shorter list). */
static void history_truncated(const call_state *cs) {
    gg_strbuf *b = cs->ctx ? cs->ctx->history.text : NULL;
    if (!b || !cs->dropped) return;
    bool first = !b->len || b->data[b->len - 1] == '[';
    gg_strbuf_printf(b, "%s{\"truncated\":true,\"dropped\":%zu,\"kept\":%zu}", first ? "" : ",", cs->dropped, cs->kept);
}

/* An input-required round: the node records written so far go into the run's state, so the
 * round that completes the run records them all (one execution record across rounds). */
static void history_carry(const call_state *cs, json_t *state) {
    gg_strbuf *b = cs->ctx ? cs->ctx->history.text : NULL;
    if (!b || b->len < 2 || b->data[0] != '[') return;
    json_object_set_new(state, "historyText", json_stringn(b->data + 1, b->len - 1));
    json_object_set_new(state, "historyKept", json_integer((json_int_t)cs->kept));
    if (cs->ref_bytes) json_object_set_new(state, "historyRefBytes", json_integer((json_int_t)cs->ref_bytes));
}

/* ...and the next round starts its text with them (the state is sealed: the records are
 * the gateway's own). */
static void history_resume(call_state *cs, json_t *state) {
    if (state) cs->context_exact = false; /* not known across rounds: the next inputs are copied */
    gg_strbuf *b = cs->ctx ? cs->ctx->history.text : NULL;
    json_t *text = json_object_get(state, "historyText");
    if (!b || !json_is_string(text) || b->len != 1 || b->data[0] != '[') return;
    gg_strbuf_append(b, json_string_value(text), json_string_length(text));
    cs->kept = (size_t)json_integer_value(json_object_get(state, "historyKept"));
    json_int_t refs = json_integer_value(json_object_get(state, "historyRefBytes"));
    cs->ref_bytes = refs > 0 ? (size_t)refs : 0;
}

/* Live, from the executor's thread, before the result: progress = nodes completed (1 after
 * the first) and one debug log per node. The server drops what the client did not ask for
 * (no progressToken, a higher logging level), so nothing is built for those. */
static void on_node_complete(void *user, const gg_graph_event *ev) {
    call_state *cs = user;
    const mcp_sink *s = cs->ctx ? cs->ctx->client.sink : NULL;
    cs->completed++;
    history_record(cs, ev);
    if (!s) return;
    if (s->progress) {
        char msg[256];
        snprintf(msg, sizeof msg, "node %s (%s) completed", ev->node_id, ev->node_type);
        s->progress(s->user, (double)cs->completed, -1, msg);
    }
    if (s->log) {
        json_t *d = json_pack("{s:s, s:s, s:f}", "node", ev->node_id, "type", ev->node_type, "duration_ms",
                              round(ev->duration_ms * 1000) / 1000);
        if (d) s->log(s->user, "debug", "graph", d);
        json_decref(d);
    }
}

static void on_node_error(void *user, const gg_graph_event *ev) {
    call_state *cs = user;
    const mcp_sink *s = cs->ctx ? cs->ctx->client.sink : NULL;
    history_record(cs, ev);
    if (s && s->log) {
        json_t *d = json_pack("{s:s, s:s, s:f, s:s}", "node", ev->node_id, "type", ev->node_type, "duration_ms",
                              round(ev->duration_ms * 1000) / 1000, "error",
                              ev->error && ev->error->message ? ev->error->message : "");
        if (d && ev->error && ev->error->path) json_object_set_new(d, "detail", gg_graph_error_json(ev->error));
        if (d) s->log(s->user, "error", "graph", d);
        json_decref(d);
    }
}

/* {"type": "text", "text": text}, built directly: json_pack's format parsing cost more than
 * the block on every call (NULL when memory runs out) */
static json_t *text_block(const char *text) {
    json_t *b = json_object(); /* a set_new takes its value even when it fails */
    if (!b || json_object_set_new_nocheck(b, "type", json_string_nocheck("text")) != 0 ||
        json_object_set_new_nocheck(b, "text", json_string(text)) != 0) {
        json_decref(b);
        return NULL;
    }
    return b;
}

/* The tools/call result for a run's output, as MCP asks: an object is structuredContent
 * plus the same JSON as one text block (MCP 2025-11-25: structuredContent is a JSON
 * object); a string is one text block holding the string itself; any other value is one
 * text block with its JSON. JSON text is printed as JSON.stringify prints it (mcpGraph's
 * numbers), which is why this is not mcp_tool_result_from_value (jansson's %.17g). */
static json_t *success_result(json_t *out) {
    json_t *block;
    if (json_is_string(out)) {
        block = text_block(json_string_value(out));
    } else {
        char *text = jsonata_dump(out ? out : json_null(), 0);
        block = text ? text_block(text) : NULL;
        free(text);
    }
    /* {"content": [block]}, built directly (see text_block); an append or set_new takes its
     * value even when it fails */
    json_t *content = block ? json_array() : NULL, *r = NULL;
    if (!content) json_decref(block);
    else if (json_array_append_new(content, block) != 0) json_decref(content);
    else if (!(r = json_object())) json_decref(content);
    else if (json_object_set_new_nocheck(r, "content", content) != 0) {
        json_decref(r);
        r = NULL;
    }
    if (r && json_is_object(out) && json_object_set(r, "structuredContent", out) != 0) {
        json_decref(r);
        return NULL;
    }
    return r;
}

/* resultFormat: callToolResult — the exit output is the CallToolResult itself: {content:
 * [blocks], structuredContent?, isError?, _meta?}; anything else is an error result. */
static json_t *content_result(json_t *out) {
    char why[200] = "the exit output must be an object {content: [blocks], structuredContent?, isError?}";
    json_t *content = json_object_get(out, "content"), *sc = json_object_get(out, "structuredContent");
    bool ok = json_is_object(out) && json_is_array(content) && (!sc || json_is_object(sc));
    size_t i;
    json_t *b;
    if (ok) json_array_foreach(content, i, b) {
        char w[150];
        if (!mcp_content_block_valid(b, w, sizeof w)) {
            snprintf(why, sizeof why, "content[%zu]: %s", i, w);
            ok = false;
            break;
        }
    }
    if (!ok) return json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text", why, "isError", 1);
    json_t *r = json_pack("{s:O}", "content", content);
    static const char *const keep[] = {"structuredContent", "isError", "_meta"};
    for (size_t k = 0; r && k < 3; k++)
        if (json_object_get(out, keep[k])) json_object_set(r, keep[k], json_object_get(out, keep[k]));
    return r;
}

/* A failed run's result: its one text (gg_graph_error_text), and for an expression's
 * error the same detail as data in _meta["io.graphgate/error"] {code, message, position?,
 * node, text} (_meta, not structuredContent: that one answers to the tool's outputSchema). */
static json_t *error_result(const gg_error *e) {
    char *text = gg_graph_error_text(e);
    json_t *r = json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text", text ? text : "error", "isError", 1);
    free(text);
    if (r && e->path && json_object_set_new(r, "_meta", json_pack("{s:o*}", "io.graphgate/error", gg_graph_error_json(e)))) {
        json_decref(r);
        return NULL;
    }
    return r;
}

static const gtool *tool_of(const gg_graph *g, const char *name) {
    for (size_t i = 0; i < g->ntools; i++)
        if (!strcmp(g->tools[i].name, name)) return &g->tools[i];
    return NULL;
}

/* A listed tool, or an extra's hidden tool (never listed, reached through lookup). */
static bool runnable(const gg_graph *g, const char *name) {
    return gg_graph_tool(g, name) || (strchr(name, ':') && tool_of(g, name));
}

/* The tools/call outcome of a finished run (NULL + err for protocol-level failures). */
/* The server of the node a run failed at, or NULL. */
static const gserver *failed_server(const gg_graph *g, const char *tool, const char *node) {
    const gtool *t = tool_of(g, tool);
    for (size_t i = 0; t && node && i < t->nnodes; i++)
        if (t->nodes[i].id && !strcmp(t->nodes[i].id, node)) return t->nodes[i].server;
    return NULL;
}

/* The consent hook's elicitation for s: its auth settings with ${secrets.NAME} resolved (the
 * values go only into the sealed consent state, wiped here). NULL when none can be made. */
static json_t *consent_data(gprov *gp, gserver *s, const struct mcp_ctx_identity *id) {
    if (!s->nsecrets) return gp->consent(gp->consent_user, id->tenant, s->name, s->cfg.url, s->auth, id->who);
    gg_graph_resolved rv;
    gg_error e = GG_ERROR_INIT;
    pthread_mutex_lock(&s->lock); /* resolving remembers the values for redaction */
    bool ok = gg_graph_secrets_resolve(s, &rv, &e);
    pthread_mutex_unlock(&s->lock);
    json_t *data = ok ? gp->consent(gp->consent_user, id->tenant, s->name, s->cfg.url, rv.auth, id->who) : NULL;
    if (ok) gg_graph_secrets_resolved_free(&rv);
    gg_error_clear(&e);
    return data;
}

/* A run stopped at a per_user server that holds no grant of its caller: the consent hook's
 * URL elicitation goes into the call's slot; true when the call ends with it (-32042). */
static bool consent_needed(gprov *gp, const char *name, const mcp_call_ctx *ctx, const gg_graph_result *r) {
    if (strcmp(r->error.code, "url_elicitation_required") || !gp->consent || !ctx || !ctx->outcome.elicitation ||
        !ctx->identity.who)
        return false;
    const gserver *s = failed_server(gp->g, name, r->failed_node);
    const struct mcp_ctx_identity *id = &ctx->identity;
    json_t *data = s && s->per_user ? consent_data(gp, (gserver *)s, id) : NULL;
    if (!data) return false;
    json_decref(*ctx->outcome.elicitation);
    *ctx->outcome.elicitation = data;
    return true;
}

static json_t *run_outcome(gprov *gp, const char *name, const mcp_call_ctx *ctx, bool ok, gg_graph_result *r,
                           gg_error *err) {
    bool text = ctx && ctx->history.text;
    bool over_budget = !ok && !strcmp(r->error.code, "budget");
    if (gp->history_fn && !over_budget && !text) gp->history_fn(gp->history_user, name, ctx, r);
    json_t *out = NULL;
    if (ok && strchr(name, ':')) { /* an extra's hidden tool: the server shapes the value */
        out = json_pack("{s:O}", "value", r->output ? r->output : json_null());
    } else if (ok && tool_of(gp->g, name) && tool_of(gp->g, name)->content_result) {
        out = content_result(r->output);
    } else if (ok) {
        out = success_result(r->output);
    } else if (over_budget || !strcmp(r->error.code, "cancelled") || !strcmp(r->error.code, "invalid_params") ||
               consent_needed(gp, name, ctx, r)) {
        gg_error_move(err, &r->error);
    } else {
        out = error_result(&r->error);
        if (ctx && ctx->outcome.fail_code) snprintf(ctx->outcome.fail_code, MCP_FAIL_CODE_MAX, "%s", r->error.code);
    }
    if (ok && !out) gg_error_set(err, "oom", "out of memory");
    return out;
}

/* The executor's options for a call: node records as text come from the hooks; the
 * executor's JSON history only for the history sink. */
static gg_graph_run_options run_options(gprov *gp, const mcp_call_ctx *ctx, const gg_graph_hooks *hooks) {
    bool text = ctx && ctx->history.text;
    gg_graph_run_options ro = {hooks, ctx ? ctx->run.cancelled : NULL, text || gp->history_fn != NULL,
                               text || gp->history_fn == NULL, ctx ? ctx->run.budget_ms : 0};
    ro.start_ms = ctx ? ctx->run.accepted_ms : 0;
    ro.client_request = ctx ? ctx->client.request : NULL;
    ro.client_user = ctx ? ctx->client.user : NULL;
    ro.input_wait = ctx ? ctx->run.input_wait : NULL;
    ro.client_caps = ctx ? ctx->client.caps : 0;
    ro.trace = ctx ? ctx->identity.trace : NULL;
    ro.graph_call = gp->graph_call;
    ro.graph_call_user = gp->graph_call_user;
    ro.caller = ctx;
    ro.async = gp->async.begin ? &gp->async : NULL;
    return ro;
}

static json_t *p_call_tool(mcp_provider *p, const char *name, json_t *arguments, const mcp_call_ctx *ctx, gg_error *err) {
    gprov *gp = p->impl;
    if (!runnable(gp->g, name)) {
        gg_graph_unknown_tool(gp->g, name, err);
        return NULL;
    }
    call_state cs = call_state_for(ctx, 0);
    gg_graph_hooks hooks = {NULL, on_node_complete, on_node_error, &cs};
    gg_graph_run_options ro = run_options(gp, ctx, &hooks);
    gg_graph_result r = GG_GRAPH_RESULT_INIT;
    bool ok = gg_graph_execute(gp->g, name, arguments, &ro, &r);
    history_truncated(&cs);
    json_t *out = run_outcome(gp, name, ctx, ok, &r, err);
    gg_graph_result_clear(&r);
    return out;
}

/* ---- asynchronous calls: a heap run that yields on mcp nodes -------------------------------
 * A 2026-07-28 caller's run may outlive its call: a downstream's request relayed to the
 * client (exec.c relay_request) becomes an input-required round while the downstream's call
 * stays open. The call then ends with {"relay": id} as the state the server seals; the run
 * stays here, parked in gprov's list without a thread, until the client's retry (same
 * requestState) takes it back, or its downstream call ends first (it answered, failed or hit
 * its deadline, at most the run's time left): then the run is dropped and a retry is told to
 * call again. One cancel flag (mcp_cancel_cell) follows the run across its calls, and so do
 * the downstream's notifications: acall_options rebinds the run to the call that holds it,
 * none while parked (exec.c relay_notify says why what comes then is dropped).
 *
 * Locking: a->mu guards the call the run belongs to (ctx, done, user) and the flags below;
 * busy: one worker advances the run at a time. gp->parked_mu guards the parked list; it is
 * never taken while a->mu is held. */
#define RELAY_MAX_PARKED 64 /* runs one provider holds between rounds (each keeps a downstream call open) */

typedef struct acall {
    mcp_provider *p;         /* reference */
    char *tool;
    const mcp_call_ctx *ctx; /* NULL while parked */
    call_state cs;
    gg_graph_hooks hooks;
    gg_graph_run_options ro;     /* the current call's */
    gg_graph_run_options parked; /* between rounds: no caller */
    gg_graph_run *run;
    mcp_provider_done_fn done;
    void *user;
    mcp_cancel_cell *cell; /* a 2026-07-28 caller's: the run's cancel flag */
    atomic_int parked_wait; /* parked.input_wait: nobody reads it */
    pthread_mutex_t mu;
    bool busy, woken, round_due, held; /* held: parked, no call (ctx NULL) */
    char relay_id[33];
    long long until_wall; /* wall ms the run's time limit ends at (0 = none): the holder's */
    struct acall *next; /* gp->parked */
} acall;

static void acall_free(acall *a) {
    gg_graph_run_free(a->run); /* requests still waiting get their error here */
    mcp_cancel_cell_unref(a->cell);
    pthread_mutex_destroy(&a->mu);
    mcp_provider_unref(a->p);
    free(a->tool);
    free(a);
}

/* Take a parked run out of the list (by pointer, or by id when a is NULL): NULL if absent. */
static acall *parked_take(gprov *gp, acall *a, const char *id) {
    pthread_mutex_lock(&gp->parked_mu);
    acall **pp = &gp->parked;
    while (*pp && !(a ? *pp == a : id && !strcmp((*pp)->relay_id, id))) pp = &(*pp)->next;
    acall *got = *pp;
    if (got) {
        *pp = got->next;
        gp->nparked--;
    }
    pthread_mutex_unlock(&gp->parked_mu);
    return got;
}

static void acall_step(void *arg);
static void acall_wake(void *arg);
static bool acall_relay_round(void *arg);

/* The run's options for call ctx (NULL: parked, no caller). */
static void acall_options(acall *a, const mcp_call_ctx *ctx) {
    gprov *gp = a->p->impl;
    gg_graph_run_options *o = ctx ? &a->ro : &a->parked;
    *o = run_options(gp, ctx, &a->hooks);
    o->wake = acall_wake;
    o->wake_user = a;
    if (a->cell) {
        o->cancelled = &a->cell->flag;
        o->relay_round = acall_relay_round;
        o->relay_user = a;
        if (!ctx) {
            o->input_wait = &a->parked_wait;
            o->client_caps = a->ro.client_caps;
        }
    }
}

/* Continue on a worker (a->busy set by the caller). */
static void acall_schedule(acall *a) {
    if (a->ctx && a->ctx->run.resume) a->ctx->run.resume(a->ctx->run.resume_user, acall_step, a);
    else acall_step(a);
}

/* End the call with the run's outcome, or with out/err as given, and free the acall. */
static void acall_finish(acall *a, json_t *out, gg_error *err) {
    mcp_provider_done_fn done = a->done;
    void *user = a->user;
    acall_free(a);
    done(user, out, err);
    gg_error_clear(err);
}

/* List a held run, or drop it when its downstream's call ended meanwhile (a->woken): listed
 * and marked held at once, so a downstream answer before this drops the run here and one
 * after it finds the run listed (acall_wake); either way a is not touched afterwards. */
static void acall_list(gprov *gp, acall *a) {
    pthread_mutex_lock(&gp->parked_mu);
    pthread_mutex_lock(&a->mu);
    a->held = true;
    bool ended = a->woken;
    if (!ended) {
        a->next = gp->parked;
        gp->parked = a;
        gp->nparked++;
    }
    pthread_mutex_unlock(&a->mu);
    pthread_mutex_unlock(&gp->parked_mu);
    if (ended) acall_free(a);
}

/* The run waits on its downstream with requests for the client: this call ends with an
 * input-required round; the run stays parked until the retry (p_call_tool_async). */
static void acall_park(acall *a) {
    gprov *gp = a->p->impl;
    unsigned char raw[16];
    randombytes_buf(raw, sizeof raw);
    sodium_bin2hex(a->relay_id, sizeof a->relay_id, raw, sizeof raw);
    json_t *state = json_pack("{s:i,s:s,s:s}", "version", 1, "tool", a->tool, "relay", a->relay_id);
    /* the replica holding the run, for a retry that reaches another one to be forwarded here
     * (gateway/mcp_http.c): the state is sealed, so the URL another replica will call is one
     * a replica wrote, never one a client chose — the guard against server-side request forgery */
    json_t *holder = gp->holder ? gg_json_clone(gp->holder) : NULL;
    if (holder && a->until_wall > 0) json_object_set_new(holder, "until", json_integer(a->until_wall));
    if (state && holder) json_object_set(state, "holder", holder);
    json_decref(holder);
    if (state) history_carry(&a->cs, state);
    acall_options(a, NULL);
    gg_graph_run_rebind(a->run, &a->parked);
    pthread_mutex_lock(&a->mu);
    mcp_provider_done_fn done = a->done;
    void *user = a->user;
    a->ctx = NULL;
    a->cs.ctx = NULL;
    a->busy = false;
    a->held = true; /* from here a downstream answer no longer advances the run */
    pthread_mutex_unlock(&a->mu);
    acall_list(gp, a);
    gg_error err = GG_ERROR_INIT;
    if (!state) gg_error_set(&err, "oom", "out of memory");
    done(user, state, &err);
    gg_error_clear(&err);
}

/* Advance the run (on a worker, a->busy) until it ends, parks or waits for its downstream. */
static void acall_step(void *arg) {
    acall *a = arg;
    gg_error err = GG_ERROR_INIT;
    json_t *out;
    for (;;) {
        pthread_mutex_lock(&a->mu);
        bool advance = a->woken, round = a->round_due;
        a->woken = a->round_due = false;
        if (!advance && !round) {
            a->busy = false;
            pthread_mutex_unlock(&a->mu);
            return;
        }
        pthread_mutex_unlock(&a->mu);
        if (advance && gg_graph_run_advance(a->run)) break;
        /* waits: acall_wake brings it back — unless the client is to answer in a later
         * request (input-required): an elicit node's round ends the call with the run's state */
        if (advance && a->ctx && a->ctx->run.input_wait && *a->ctx->run.input_wait) {
            if (!(out = gg_graph_run_save(a->run))) gg_error_set(&err, "oom", "out of memory");
            else history_carry(&a->cs, out);
            acall_finish(a, out, &err);
            return;
        }
        /* a downstream's requests for the client: answered by this call's inputResponses, or
         * the call ends with them as its round */
        if (a->cell && gg_graph_run_relay_ask(a->run) > 0 && a->ctx->run.input_wait && *a->ctx->run.input_wait) {
            acall_park(a);
            return;
        }
    }
    gg_graph_result r = GG_GRAPH_RESULT_INIT;
    bool ok = gg_graph_run_result(a->run, &r);
    history_truncated(&a->cs);
    out = run_outcome(a->p->impl, a->tool, a->ctx, ok, &r, &err);
    gg_graph_result_clear(&r);
    acall_finish(a, out, &err);
}

/* The downstream answer arrived (client thread): continue on a worker. Parked, the run is
 * dropped (its round expired with the downstream's call) unless a retry is taking it. */
static void acall_wake(void *arg) {
    acall *a = arg;
    pthread_mutex_lock(&a->mu);
    a->woken = true;
    bool parked = a->held, go = !a->held && !a->busy;
    if (go) a->busy = true;
    pthread_mutex_unlock(&a->mu);
    if (parked) {
        if (parked_take(a->p->impl, a, NULL)) acall_free(a);
        return;
    }
    if (go) acall_schedule(a);
}

/* gg_graph_run_options.relay_round (the transport's thread): the round goes out from a
 * worker; parked, it waits for the retry. */
static bool acall_relay_round(void *arg) {
    acall *a = arg;
    gprov *gp = a->p->impl;
    pthread_mutex_lock(&gp->parked_mu);
    bool room = gp->nparked < RELAY_MAX_PARKED;
    pthread_mutex_unlock(&gp->parked_mu);
    if (!room) return false;
    pthread_mutex_lock(&a->mu);
    a->round_due = true;
    bool go = !a->held && !a->busy;
    if (go) a->busy = true;
    pthread_mutex_unlock(&a->mu);
    if (go) acall_schedule(a);
    return true;
}

/* A retry with a relay round's state: the parked run goes on with this call. */
static void acall_resume_relay(gprov *gp, const char *name, const mcp_call_ctx *ctx, mcp_provider_done_fn done,
                               void *user) {
    const char *id = json_string_value(json_object_get(ctx->run.resume_state, "relay"));
    acall *a = id ? parked_take(gp, NULL, id) : NULL;
    if (a && (strcmp(a->tool, name) || !ctx->run.adopt_cancel)) {
        /* not this call's to take (another tool's, or a caller whose calls share no cancel
         * flag; a task's resume adopts it like any retry: tasks.c): the run's downstream call
         * is still open, so it is cancelled and the run goes back to wait for that call's end */
        atomic_store(&a->cell->flag, 1);
        acall_list(gp, a);
        a = NULL;
    }
    if (!a) {
        gg_error err = GG_ERROR_INIT;
        gg_error_set(&err, "invalid_state",
                     "the input round this requestState answers is no longer waiting: its downstream call ended or "
                     "timed out, it was answered already, or another replica holds it; call the tool again without "
                     "requestState");
        done(user, NULL, &err);
        gg_error_clear(&err);
        return;
    }
    ctx->run.adopt_cancel(ctx->run.adopt_user, a->cell);
    acall_options(a, ctx);
    gg_graph_run_rebind(a->run, &a->ro);
    pthread_mutex_lock(&a->mu);
    a->ctx = ctx;
    a->held = false;
    a->cs = call_state_for(ctx, a->cs.completed);
    a->done = done;
    a->user = user;
    a->busy = true;
    a->round_due = true; /* ask the waiting requests: this call's inputResponses answer them */
    pthread_mutex_unlock(&a->mu);
    history_resume(&a->cs, ctx->run.resume_state);
    acall_step(a);
}

static void p_call_tool_async(mcp_provider *p, const char *name, json_t *arguments, const mcp_call_ctx *ctx,
                              mcp_provider_done_fn done, void *user) {
    gprov *gp = p->impl;
    gg_error err = GG_ERROR_INIT;
    if (ctx && ctx->run.resume_state && json_object_get(ctx->run.resume_state, "relay")) {
        acall_resume_relay(gp, name, ctx, done, user);
        return;
    }
    acall *a = runnable(gp->g, name) ? calloc(1, sizeof *a) : NULL;
    if (a) {
        a->p = mcp_provider_ref(p);
        a->tool = strdup(name);
        pthread_mutex_init(&a->mu, NULL);
        a->ctx = ctx;
        a->cs = call_state_for(ctx, 0);
        a->hooks = (gg_graph_hooks){NULL, on_node_complete, on_node_error, &a->cs};
        long max = gg_graph_max_execution_ms(gp->g);
        double since = ctx && ctx->run.accepted_ms > 0 ? gg_now_ms() - ctx->run.accepted_ms : 0;
        if (max > 0) a->until_wall = gg_wall_ms() + (long long)(max - since);
        /* a 2026-07-28 caller: its run may hold its downstream call open across rounds */
        if (ctx && ctx->run.input_wait && ctx->run.adopt_cancel && (a->cell = mcp_cancel_cell_new()))
            ctx->run.adopt_cancel(ctx->run.adopt_user, a->cell);
        acall_options(a, ctx);
        a->done = done;
        a->user = user;
        a->busy = a->woken = true; /* the first step starts the run */
        if (ctx && ctx->run.resume_state) { /* an input-required round: on from the waiting node */
            a->run = gg_graph_run_restore(gp->g, ctx->run.resume_state, &a->ro, &err);
            if (a->run) history_resume(&a->cs, ctx->run.resume_state);
            if (!a->run && gg_error_is_set(&err)) {
                acall_free(a);
                done(user, NULL, &err);
                gg_error_clear(&err);
                return;
            }
        } else {
            a->run = a->tool ? gg_graph_run_new(gp->g, name, arguments, &a->ro) : NULL;
        }
        if (a->run) {
            acall_step(a);
            return;
        }
        acall_free(a);
        gg_error_set(&err, "oom", "out of memory");
    } else if (!runnable(gp->g, name)) {
        gg_graph_unknown_tool(gp->g, name, &err);
    } else {
        gg_error_set(&err, "oom", "out of memory");
    }
    done(user, NULL, &err);
    gg_error_clear(&err);
}

/* A proxied tool quarantined by its server's on_change (pins.c). */
static bool p_tool_withheld(mcp_provider *p, const char *name, gg_error *err) {
    gprov *gp = p->impl;
    if (!gg_graph_tool_withheld(gp->g, name)) return false;
    gg_error_set(err, "tool_definition_changed",
                 "Tool %.200s is withheld: its downstream definition changed (on_change: quarantine) and awaits an "
                 "admin's approval", name);
    return true;
}

static bool p_tool_is_pure(mcp_provider *p, const char *name) {
    return gg_graph_tool_is_pure(((gprov *)p->impl)->g, name);
}

/* ---- resources, templates, prompts ----------------------------------------------------------- */

static json_t *p_list_resources(mcp_provider *p) { return json_incref(gg_graph_resources(((gprov *)p->impl)->g)); }
static json_t *p_list_templates(mcp_provider *p) {
    return json_incref(gg_graph_resource_templates(((gprov *)p->impl)->g));
}
static json_t *p_list_prompts(mcp_provider *p) { return json_incref(gg_graph_prompts(((gprov *)p->impl)->g)); }

static int hexval(char ch) {
    return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
}

/* A variable's text as the entry node gets it: percent-decoded (a malformed escape stays). */
static json_t *decoded(const char *s, size_t n) {
    char *buf = malloc(n + 1);
    size_t o = 0;
    if (!buf) return NULL;
    for (size_t i = 0; i < n; i++) {
        int hi = s[i] == '%' && i + 2 < n ? hexval(s[i + 1]) : -1, lo = hi >= 0 ? hexval(s[i + 2]) : -1;
        if (hi >= 0 && lo >= 0) {
            buf[o++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            buf[o++] = s[i];
        }
    }
    json_t *j = json_stringn(buf, o);
    free(buf);
    return j;
}

/* RFC 6570 match of uri against a template of literals, {var} and {+var} (the loader allows
 * nothing else): each variable takes the shortest non-empty text up to the next literal;
 * {var} never spans '/', '?' or '#' (level 1 would have encoded them). NULL = no match. */
static json_t *match_template(const char *t, const char *uri) {
    json_t *vars = json_object();
    const char *u = uri;
    for (const char *p = t; vars && *p;) {
        if (*p != '{') {
            if (*p++ != *u++) goto no;
            continue;
        }
        const char *end = strchr(p, '}');
        bool reserved = p[1] == '+';
        const char *name = p + 1 + reserved, *lit = end + 1;
        size_t litlen = strcspn(lit, "{");
        const char *stop = litlen ? NULL : u + strlen(u);
        for (const char *q = u; !stop && *q; q++)
            if (q > u && !strncmp(q, lit, litlen)) stop = q;
        if (!stop || stop == u) goto no;
        if (!reserved && strcspn(u, "/?#") < (size_t)(stop - u)) goto no;
        char key[64];
        snprintf(key, sizeof key, "%.*s", (int)(end - name), name);
        json_object_set_new(vars, key, decoded(u, (size_t)(stop - u)));
        u = stop;
        p = lit;
    }
    if (vars && !*u) return vars;
no:
    json_decref(vars);
    return NULL;
}

static json_t *p_lookup(mcp_provider *p, const char *kind, const char *key, json_t *arguments, json_t **value,
                        char **run, json_t **run_args) {
    const gg_graph *g = ((gprov *)p->impl)->g;
    *value = *run_args = NULL;
    *run = NULL;
    bool prompt = !strcmp(kind, "prompt");
    const gextra *found = NULL;
    json_t *args = NULL;
    for (size_t i = 0; i < g->nextras && !found; i++) /* fixed URIs win over templates */
        if (g->extras[i].kind == (prompt ? GX_PROMPT : GX_RESOURCE) && g->extras[i].key && !strcmp(g->extras[i].key, key))
            found = &g->extras[i];
    for (size_t i = 0; i < g->nextras && !found && !prompt; i++)
        if (g->extras[i].kind == GX_TEMPLATE && g->extras[i].key && (args = match_template(g->extras[i].key, key)))
            found = &g->extras[i];
    if (!found) return NULL;
    if (found->value) {
        *value = json_incref(found->value);
        json_decref(args);
    } else {
        *run = found->has_nodes && found->run ? strdup(found->run) : NULL;
        *run_args = args ? args : json_is_object(arguments) ? json_incref(arguments) : json_object();
    }
    return json_incref(found->def);
}

/* Declared completions starting with prefix, at most 100 (MCP's bound per answer). */
static json_t *p_complete(mcp_provider *p, const char *ref_type, const char *ref, const char *arg, const char *prefix) {
    const gg_graph *g = ((gprov *)p->impl)->g;
    gextra_kind k = !strcmp(ref_type, "ref/prompt") ? GX_PROMPT : GX_TEMPLATE;
    for (size_t i = 0; i < g->nextras; i++) {
        const gextra *x = &g->extras[i];
        if (x->kind != k || !x->key || strcmp(x->key, ref)) continue;
        json_t *vals = json_object_get(x->completions, arg);
        if (!vals) return NULL;
        json_t *out = json_array();
        size_t j, plen = strlen(prefix);
        json_t *v;
        json_array_foreach(vals, j, v) {
            const char *s = json_string_value(v);
            if (s && !strncmp(s, prefix, plen)) json_array_append(out, v);
        }
        return out;
    }
    return NULL;
}

/* Proxied resources and prompts (proxy_extras.c): answered by the entry's downstream. */
static int p_forwards(mcp_provider *p) { return gg_graph_forwards(((gprov *)p->impl)->g); }
/* A forwarded request to a per_user server whose caller holds no grant: the consent hook's
 * URL elicitation goes into the call's slot, as for a tools call (consent_needed). */
typedef struct fwd_consent {
    gprov *gp;
    const mcp_call_ctx *ctx;
    mcp_provider_done_fn done;
    void *user;
} fwd_consent;

static bool has_per_user(const gg_graph *g) {
    for (size_t i = 0; i < g->nservers; i++)
        if (g->servers[i].per_user) return true;
    return false;
}

static void forward_done(void *arg, json_t *res, gg_error *err) {
    fwd_consent *f = arg;
    const mcp_call_ctx *ctx = f->ctx;
    gserver *s = !res && err && !strcmp(err->code, "url_elicitation_required") && err->path && f->gp->consent &&
                         ctx->outcome.elicitation && ctx->identity.who
                     ? gg_graph_server_named(f->gp->g, err->path)
                     : NULL;
    json_t *data = s && s->per_user ? consent_data(f->gp, s, &ctx->identity) : NULL;
    if (data) {
        json_decref(*ctx->outcome.elicitation);
        *ctx->outcome.elicitation = data;
    }
    mcp_provider_done_fn done = f->done;
    void *user = f->user;
    free(f);
    done(user, res, err);
}

static void p_forward(mcp_provider *p, const char *method, json_t *params, const mcp_call_ctx *ctx, mcp_provider_done_fn done,
                      void *user) {
    gprov *gp = p->impl;
    fwd_consent *f = gp->consent && ctx && has_per_user(gp->g) ? malloc(sizeof *f) : NULL;
    if (f) *f = (fwd_consent){gp, ctx, done, user};
    gg_graph_forward(gp->g, method, params, ctx, f ? forward_done : done, f ? (void *)f : user);
}

static void p_destroy(mcp_provider *p) {
    gprov *gp = p->impl;
    gg_graph_unref(gp->g);
    pthread_mutex_destroy(&gp->parked_mu); /* empty: each parked run holds a reference */
    free((char *)gp->async.label);
    json_decref(gp->holder);
    free(gp);
}

static const mcp_provider_ops p_ops = {
    .server_info = p_server_info,
    .instructions = p_instructions,
    .list_tools = p_list_tools,
    .get_tool = p_get_tool,
    .call_tool = p_call_tool,
    .destroy = p_destroy,
    .tool_is_pure = p_tool_is_pure,
    .call_tool_async = p_call_tool_async,
    .list_resources = p_list_resources,
    .list_resource_templates = p_list_templates,
    .list_prompts = p_list_prompts,
    .lookup = p_lookup,
    .complete = p_complete,
    .cache_hint = p_cache_hint,
    .tool_client_needs = p_tool_client_needs,
    .tool_withheld = p_tool_withheld,
    .forwards = p_forwards,
    .forward = p_forward,
};

mcp_provider *gg_graph_provider_new(gg_graph *g) {
    gprov *gp = calloc(1, sizeof *gp);
    mcp_provider *p = gp ? mcp_provider_new(&p_ops, gp) : NULL;
    if (!p) {
        free(gp);
        return NULL;
    }
    gp->g = gg_graph_ref(g);
    pthread_mutex_init(&gp->parked_mu, NULL);
    return p;
}

/* Set before the provider is shared: receives every finished run (e.g. to persist it). */
void gg_graph_provider_set_history_sink(mcp_provider *p, gg_graph_history_fn fn, void *user) {
    gprov *gp = p->impl;
    gp->history_fn = fn;
    gp->history_user = user;
}

/* See graph.h: only a provider of ours (recognised by its ops table). */
void gg_graph_provider_set_consent(mcp_provider *p, gg_graph_consent_fn fn, void *user) {
    gprov *gp = p->impl;
    gp->consent = fn;
    gp->consent_user = user;
}

void gg_graph_provider_set_graph_call(mcp_provider *p, gg_graph_call_fn fn, void *user) {
    gprov *gp = p->impl;
    gp->graph_call = fn;
    gp->graph_call_user = user;
}

void gg_graph_provider_set_async(mcp_provider *p, const gg_graph_async_hooks *hooks, const char *label) {
    gprov *gp = p->impl;
    free((char *)gp->async.label);
    gp->async = *hooks;
    gp->async.label = strdup(label ? label : "");
}

/* See graph.h. */
void gg_graph_provider_set_relay_holder(mcp_provider *p, json_t *holder) {
    gprov *gp = p->impl;
    json_decref(gp->holder);
    gp->holder = json_incref(holder);
}

gg_graph *gg_graph_provider_graph(mcp_provider *p) {
    return p && p->ops == &p_ops ? ((gprov *)p->impl)->g : NULL;
}
