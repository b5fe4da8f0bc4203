/* server.c — MCP method dispatch over one tool provider, independent of the transport.
 *
 * An mcp_server is built once per provider (a graph version, the node-spec registry): the
 * tool list is fetched once, every input/output schema compiled and the tools/list pages
 * pre-serialized, so per request only the id is spliced in. tools/call arguments are
 * validated on the dispatching thread; the run itself is returned as an mcp_call that the
 * transport executes on a worker (mcp_call_run), with progress and log notifications
 * streamed through an emitter.
 *
 * Kept stateless per request (everything a request needs arrives in mcp_request_ctx) so the
 * sessionless 2026-07-28 revision can reuse dispatch with the version taken from _meta.
 */
#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp.h"

#ifndef GG_VERSION
#define GG_VERSION "0"
#endif

static const char *const versions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};

/* true for a protocol version this server speaks. */
bool mcp_version_supported(const char *v) {
    if (!v) return false;
    for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++)
        if (strcmp(v, versions[i]) == 0) return true;
    return false;
}

/* The version answered to a client's initialize: its own when supported, else the latest. */
const char *mcp_version_negotiate(const char *requested) {
    for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++)
        if (requested && strcmp(requested, versions[i]) == 0) return versions[i];
    return MCP_VERSION_LATEST;
}

/* JSON-RPC batches were removed in 2025-06-18. */
bool mcp_version_allows_batch(const char *v) { return v && strcmp(v, "2025-06-18") < 0; }

static const char *const level_names[] = {"debug", "info", "notice", "warning", "error",
                                          "critical", "alert", "emergency"};

/* The level for an MCP level name; -1 when unknown. */
int mcp_log_level_parse(const char *name) {
    for (int i = 0; name && i < 8; i++)
        if (strcmp(name, level_names[i]) == 0) return i;
    return -1;
}

/* The MCP name of a level ("off" for MCP_LOG_OFF). */
const char *mcp_log_level_name(mcp_log_level l) { return l < MCP_LOG_OFF ? level_names[l] : "off"; }

/* ------------------------------------------------------------------ tool results */

static json_t *text_block(const char *text) {
    return json_pack("{s:s,s:s}", "type", "text", "text", text);
}

/* Shape a tool's output value as a CallToolResult (see mcp.h). */
json_t *mcp_tool_result_from_value(json_t *value) {
    json_t *res = json_object();
    json_t *content = json_array();
    if (!res || !content) goto oom;
    json_object_set_new(res, "content", content);
    if (json_is_string(value)) {
        if (json_array_append_new(content, text_block(json_string_value(value))) != 0) goto oom;
        return res;
    }
    char *text = json_dumps(value ? value : json_null(), JSON_COMPACT | JSON_ENCODE_ANY);
    if (!text) goto oom;
    int rc = json_array_append_new(content, text_block(text));
    free(text);
    if (rc != 0) goto oom;
    if (json_is_object(value)) json_object_set(res, "structuredContent", value);
    return res;
oom:
    json_decref(res);
    return NULL;
}

/* A tool-level failure the model can read: one text block and isError. */
json_t *mcp_tool_error_result(const char *message) {
    return json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text",
                     message ? message : "tool failed", "isError", 1);
}

/* ------------------------------------------------------------------ server */

typedef struct tool {
    const char *name; /* borrowed from def */
    json_t *def;
    mcp_schema *input, *output;
    bool pure;        /* the provider says it only computes: may run inline with a budget */
    long long inline_off_until; /* monotonic ms; atomic: after a run outgrew the budget,
                                   calls go straight to a worker for a while */
    int inline_misses;          /* atomic: consecutive inline runs that outgrew it */
} tool;

struct mcp_server {
    int refcount;
    mcp_provider *provider;
    tool *tools;
    size_t ntools;
    char **pages; /* pre-serialized tools/list results */
    size_t npages;
};

static void server_free(mcp_server *s) {
    for (size_t i = 0; i < s->ntools; i++) {
        json_decref(s->tools[i].def);
        mcp_schema_free(s->tools[i].input);
        mcp_schema_free(s->tools[i].output);
    }
    free(s->tools);
    for (size_t i = 0; i < s->npages; i++) free(s->pages[i]);
    free(s->pages);
    mcp_provider_unref(s->provider);
    free(s);
}

static void cursor_for(size_t page, char *out, size_t n) {
    char raw[32];
    int len = snprintf(raw, sizeof raw, "page:%zu", page);
    sodium_bin2base64(out, n, (const unsigned char *)raw, (size_t)len, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
}

/* -1 for a cursor this server did not hand out. */
static long page_of_cursor(const mcp_server *s, const char *cursor) {
    unsigned char raw[32];
    size_t len = 0;
    if (strlen(cursor) > 40 ||
        sodium_base642bin(raw, sizeof raw - 1, cursor, strlen(cursor), NULL, &len, NULL,
                          sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0)
        return -1;
    raw[len] = 0;
    char *end;
    if (strncmp((char *)raw, "page:", 5) != 0) return -1;
    long p = strtol((char *)raw + 5, &end, 10);
    return (*end || p <= 0 || (size_t)p >= s->npages) ? -1 : p;
}

static bool build_pages(mcp_server *s, json_t *list, size_t page_size) {
    size_t n = json_array_size(list);
    s->npages = n ? (n + page_size - 1) / page_size : 1;
    if (!(s->pages = calloc(s->npages, sizeof *s->pages))) return false;
    for (size_t p = 0; p < s->npages; p++) {
        json_t *page = json_object(), *arr = json_array();
        if (!page || !arr) { json_decref(page); json_decref(arr); return false; }
        json_object_set_new(page, "tools", arr);
        for (size_t i = p * page_size; i < n && i < (p + 1) * page_size; i++)
            json_array_append(arr, json_array_get(list, i));
        if (p + 1 < s->npages) {
            char cur[64];
            cursor_for(p + 1, cur, sizeof cur);
            json_object_set_new(page, "nextCursor", json_string(cur));
        }
        s->pages[p] = json_dumps(page, JSON_COMPACT);
        json_decref(page);
        if (!s->pages[p]) return false;
    }
    return true;
}

static bool load_tool(tool *t, json_t *def, gg_error *err) {
    t->def = json_incref(def);
    t->name = json_string_value(json_object_get(def, "name"));
    if (!t->name) {
        gg_error_set(err, "invalid_tool", "a tool has no name");
        return false;
    }
    json_t *in = json_object_get(def, "inputSchema"), *out = json_object_get(def, "outputSchema");
    if (in && !(t->input = mcp_schema_compile(in, err))) goto bad;
    if (out && !(t->output = mcp_schema_compile(out, err))) goto bad;
    return true;
bad:
    gg_error_set_path(err, t->name);
    return false;
}

/* Build the server for a provider; see mcp.h. */
mcp_server *mcp_server_new(mcp_provider *provider, const mcp_server_options *opt, gg_error *err) {
    size_t page_size = opt && opt->page_size ? opt->page_size : 100;
    mcp_server *s = calloc(1, sizeof *s);
    if (!s) {
        gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    s->refcount = 1;
    s->provider = mcp_provider_ref(provider);
    json_t *list = provider->list_tools ? provider->list_tools(provider) : json_array();
    if (!json_is_array(list)) {
        gg_error_set(err, "invalid_tool", "the provider listed no tools array");
        goto fail;
    }
    s->tools = calloc(json_array_size(list) + 1, sizeof *s->tools);
    if (!s->tools) goto oom;
    size_t i;
    json_t *def;
    json_array_foreach(list, i, def) {
        s->ntools++;
        if (!load_tool(&s->tools[i], def, err)) goto fail;
        s->tools[i].pure = provider->tool_is_pure && provider->tool_is_pure(provider, s->tools[i].name);
    }
    if (!build_pages(s, list, page_size)) goto oom;
    json_decref(list);
    return s;
oom:
    gg_error_set(err, "oom", "out of memory");
fail:
    json_decref(list);
    server_free(s);
    return NULL;
}

/* Take a reference (calls in flight hold one). */
mcp_server *mcp_server_ref(mcp_server *s) {
    if (s) __atomic_add_fetch(&s->refcount, 1, __ATOMIC_RELAXED);
    return s;
}

/* Drop a reference; the last one frees the server and its provider reference. */
void mcp_server_unref(mcp_server *s) {
    if (s && __atomic_sub_fetch(&s->refcount, 1, __ATOMIC_ACQ_REL) == 0) server_free(s);
}

/* The provider served (borrowed). */
mcp_provider *mcp_server_provider(const mcp_server *s) { return s->provider; }
/* Number of tools listed. */
size_t mcp_server_tool_count(const mcp_server *s) { return s->ntools; }

static const tool *find_tool(const mcp_server *s, const char *name) {
    for (size_t i = 0; i < s->ntools; i++)
        if (strcmp(s->tools[i].name, name) == 0) return &s->tools[i];
    return NULL;
}

/* ------------------------------------------------------------------ calls */

struct mcp_call {
    mcp_server *srv;
    const tool *tool;
    json_t *id, *args, *progress_token;
    mcp_log_level level;
    volatile int cancelled;
    mcp_emit_fn emit;
    void *emit_user;
    json_t *history;
    gg_strbuf history_text; /* node records as JSON text, when use_text */
    bool use_text;
    size_t history_max;
    size_t history_max_records, history_max_bytes; /* mcp_call_bound_history */
    double last_progress;
    bool sent_progress;
    const char *status;
    json_t *result;
    char *error;
    double duration_ms;
    /* an asynchronous run (mcp_call_start): what the provider reads until done */
    mcp_sink sink;
    mcp_call_ctx ctx;
    mcp_call_done_fn done;
    void *done_user;
    double t0;
};

/* Accessors of a call in flight (see mcp.h). */
void mcp_call_set_emitter(mcp_call *c, mcp_emit_fn fn, void *user) {
    c->emit = fn;
    c->emit_user = user;
}
volatile int *mcp_call_cancel_flag(mcp_call *c) { return &c->cancelled; }
const char *mcp_call_tool(const mcp_call *c) { return c->tool->name; }
json_t *mcp_call_id(const mcp_call *c) { return c->id; }
json_t *mcp_call_arguments(const mcp_call *c) { return c->args; }
bool mcp_call_wants_progress(const mcp_call *c) { return c->progress_token != NULL; }
json_t *mcp_call_history(const mcp_call *c) { return c->history; }
const char *mcp_call_status(const mcp_call *c) { return c->status; }
json_t *mcp_call_result(const mcp_call *c) { return c->result; }
const char *mcp_call_error(const mcp_call *c) { return c->error; }
double mcp_call_duration_ms(const mcp_call *c) { return c->duration_ms; }

/* Keep the call's node records as JSON text (mcp_call_ctx.history_text; values past
 * max_value_bytes truncated) instead of the JSON array of mcp_call_history: cheaper when
 * they are only going to be stored. Set before the call runs. */
void mcp_call_use_history_text(mcp_call *c, size_t max_value_bytes) {
    c->use_text = true;
    c->history_max = max_value_bytes;
    gg_strbuf_reserve(&c->history_text, 1000); /* a few nodes' records without regrowing */
    gg_strbuf_putc(&c->history_text, '[');
}

/* Bound the run's node records as text (mcp_call_ctx.history_max_records/_bytes). */
void mcp_call_bound_history(mcp_call *c, size_t max_records, size_t max_bytes) {
    c->history_max_records = max_records;
    c->history_max_bytes = max_bytes;
}

/* The node records as one JSON array text ("[...]"), handed to the caller (free it);
 * NULL when memory ran out. Afterwards the call holds none. */
char *mcp_call_take_history_text(mcp_call *c) {
    if (!c->history_text.len) gg_strbuf_putc(&c->history_text, '[');
    gg_strbuf_putc(&c->history_text, ']');
    if (c->history_text.oom) {
        gg_strbuf_free(&c->history_text);
        return NULL;
    }
    return gg_strbuf_take(&c->history_text);
}

/* Free a call (and the server reference it holds). */
void mcp_call_free(mcp_call *c) {
    if (!c) return;
    json_decref(c->id);
    json_decref(c->args);
    json_decref(c->progress_token);
    json_decref(c->history);
    gg_strbuf_free(&c->history_text);
    json_decref(c->result);
    free(c->error);
    mcp_server_unref(c->srv);
    free(c);
}

static void emit_notification(mcp_call *c, const char *method, json_t *params) {
    if (!c->emit) return;
    char *s = mcp_jsonrpc_notification(method, params);
    if (s) c->emit(c->emit_user, s, strlen(s));
    free(s);
}

/* Whole numbers print as integers (progress 3, not 3.0). */
static json_t *number(double d) {
    if (d == floor(d) && fabs(d) < 9007199254740992.0) return json_integer((json_int_t)d);
    return json_real(d);
}

static void sink_progress(void *user, double progress, double total, const char *message) {
    mcp_call *c = user;
    if (!c->progress_token || (c->sent_progress && !(progress > c->last_progress))) return;
    c->sent_progress = true;
    c->last_progress = progress;
    json_t *p = json_pack("{s:O,s:o}", "progressToken", c->progress_token, "progress", number(progress));
    if (!p) return;
    if (total >= 0) json_object_set_new(p, "total", number(total));
    if (message) json_object_set_new(p, "message", json_string(message));
    emit_notification(c, "notifications/progress", p);
    json_decref(p);
}

static void sink_log(void *user, const char *level, const char *logger, json_t *data) {
    mcp_call *c = user;
    int l = mcp_log_level_parse(level);
    if (l < 0 || (mcp_log_level)l < c->level || c->level == MCP_LOG_OFF) return;
    json_t *p = json_pack("{s:s,s:O}", "level", level, "data", data ? data : json_null());
    if (!p) return;
    if (logger) json_object_set_new(p, "logger", json_string(logger));
    emit_notification(c, "notifications/message", p);
    json_decref(p);
}

static void set_error(mcp_call *c, const char *status, const char *msg) {
    c->status = status;
    free(c->error);
    c->error = strdup(msg ? msg : status);
}

/* The result a client may rely on: structuredContent checked against outputSchema and
 * always mirrored as a text block. Returns the result to send (new reference). */
static json_t *finish_result(mcp_call *c, json_t *res) {
    if (json_is_true(json_object_get(res, "isError"))) {
        json_t *first = json_array_get(json_object_get(res, "content"), 0);
        set_error(c, "error", json_string_value(json_object_get(first, "text")));
        return res;
    }
    json_t *sc = json_object_get(res, "structuredContent");
    if (c->tool->output) {
        gg_error e = GG_ERROR_INIT;
        const char *why = NULL;
        if (!json_is_object(sc)) why = "the tool returned no structured content";
        else if (!mcp_schema_validate(c->tool->output, sc, &e)) why = e.message;
        if (why) {
            char msg[768];
            snprintf(msg, sizeof msg, "Tool %s returned output that does not match its outputSchema: %s%s%s",
                     c->tool->name, e.path && *e.path ? e.path : "", e.path && *e.path ? ": " : "", why);
            gg_error_clear(&e);
            json_decref(res);
            set_error(c, "error", msg);
            return mcp_tool_error_result(msg);
        }
    }
    json_t *content = json_object_get(res, "content");
    if (sc && (!json_is_array(content) || json_array_size(content) == 0)) {
        char *text = json_dumps(sc, JSON_COMPACT);
        json_t *arr = json_array();
        if (text && arr) {
            json_array_append_new(arr, text_block(text));
            json_object_set_new(res, "content", arr);
            arr = NULL;
        }
        json_decref(arr);
        free(text);
    } else if (!json_is_array(content)) {
        json_object_set_new(res, "content", json_array());
    }
    c->status = "ok";
    return res;
}


static char *finish_call(mcp_call *c, json_t *res, gg_error *errp);

/* The provider's view of the call (history as the caller asked, bounds included). */
static mcp_call_ctx call_ctx(mcp_call *c, const mcp_sink *sink, const char *request_id, const char *key_id,
                             const char *tenant, double budget_ms) {
    return (mcp_call_ctx){.sink = sink, .cancelled = &c->cancelled, .request_id = request_id, .key_id = key_id,
                          .tenant = tenant, .history = c->history, .budget_ms = budget_ms,
                          .history_text = c->use_text ? &c->history_text : NULL, .history_max = c->history_max,
                          .history_max_records = c->history_max_records, .history_max_bytes = c->history_max_bytes};
}

/* Run the tool on the calling (worker) thread; returns the serialized response. */
char *mcp_call_run(mcp_call *c, const char *request_id, const char *key_id, const char *tenant) {
    mcp_sink sink = {c->progress_token ? sink_progress : NULL,
                     c->level != MCP_LOG_OFF ? sink_log : NULL, c};
    mcp_call_ctx ctx = call_ctx(c, &sink, request_id, key_id, tenant, 0);
    gg_error err = GG_ERROR_INIT;
    mcp_provider *p = c->srv->provider;
    double t0 = gg_now_ms();
    json_t *res = p->call_tool(p, c->tool->name, c->args, &ctx, &err);
    c->duration_ms = gg_now_ms() - t0;
    return finish_call(c, res, &err);
}

static void call_async_done(void *user, json_t *res, gg_error *err) {
    mcp_call *c = user;
    c->duration_ms = gg_now_ms() - c->t0;
    gg_error e = GG_ERROR_INIT;
    if (err && gg_error_is_set(err)) gg_error_move(&e, err);
    char *body = finish_call(c, res, &e);
    c->done(c->done_user, body);
}

/* Run the tool without holding this thread while it waits on downstream servers (see
 * mcp.h); providers without an asynchronous call run synchronously here. */
void mcp_call_start(mcp_call *c, const char *request_id, const char *key_id, const char *tenant,
                    const mcp_call_async *how) {
    c->sink = (mcp_sink){c->progress_token ? sink_progress : NULL, c->level != MCP_LOG_OFF ? sink_log : NULL, c};
    c->ctx = call_ctx(c, &c->sink, request_id, key_id, tenant, 0);
    c->ctx.resume = how->resume;
    c->ctx.resume_user = how->resume_user;
    c->ctx.accepted_ms = how->accepted_ms;
    c->done = how->done;
    c->done_user = how->user;
    mcp_provider *p = c->srv->provider;
    c->t0 = gg_now_ms();
    if (p->call_tool_async) {
        p->call_tool_async(p, c->tool->name, c->args, &c->ctx, call_async_done, c);
        return;
    }
    gg_error err = GG_ERROR_INIT;
    json_t *res = p->call_tool(p, c->tool->name, c->args, &c->ctx, &err);
    call_async_done(c, res, &err);
    gg_error_clear(&err);
}

/* The response for what the provider returned (res consumed, err cleared). */
static char *finish_call(mcp_call *c, json_t *res, gg_error *errp) {
    gg_error err = *errp;
    *errp = (gg_error)GG_ERROR_INIT;
    char *out;
    if (c->cancelled || strcmp(err.code, "cancelled") == 0) {
        json_decref(res);
        set_error(c, "cancelled", "Request cancelled");
        out = mcp_jsonrpc_error(c->id, MCP_REQUEST_CANCELLED, "Request cancelled", NULL);
    } else if (!res && (strcmp(err.code, "unknown_tool") == 0 || strcmp(err.code, "invalid_params") == 0)) {
        set_error(c, "failed", err.message);
        out = mcp_jsonrpc_error(c->id, MCP_INVALID_PARAMS, err.message ? err.message : "Invalid params", NULL);
    } else {
        if (!res || !json_is_object(res)) {
            /* an execution failure is a tool result the model can read, not a protocol error */
            json_decref(res);
            res = mcp_tool_error_result(err.message ? err.message : "tool execution failed");
        }
        res = finish_result(c, res);
        c->result = res;
        out = mcp_jsonrpc_result(c->id, res);
    }
    gg_error_clear(&err);
    return out;
}

/* A tool that keeps outgrowing its inline budget runs on workers only for a while before it
 * is tried inline again. The budget is wall time, so a thread preempted on a busy machine
 * misses it now and then: only the third miss in a row (no inline success between) counts
 * as "too slow", then 50 ms on workers, doubling with each further miss up to 1 s (short:
 * a tool whose inputs vary gets back inline soon; one that is simply too slow wastes at
 * most one budget a second — its calls meanwhile wait in the tenant's fair queue). */
static long long inline_backoff_ms(int misses) {
    if (misses < 3) return 0;
    long long ms = 50LL << (misses > 8 ? 5 : misses - 3);
    return ms > 1000 ? 1000 : ms;
}

/* Whether the tool can wait on I/O (it is not pure): such calls count in the waiting bounds. */
bool mcp_call_may_wait(const mcp_call *c) { return !c->tool->pure; }

/* Whether the call may be tried on the calling thread with mcp_call_run_inline: the tool
 * only computes, nothing will be streamed (no progressToken, no log level), and it has not
 * outgrown the budget recently. */
bool mcp_call_can_inline(const mcp_call *c) {
    if (!c->tool->pure || c->progress_token || c->level != MCP_LOG_OFF) return false;
    long long off = __atomic_load_n(&c->tool->inline_off_until, __ATOMIC_RELAXED);
    return off == 0 || (long long)gg_now_ms() >= off;
}

/* Run the call here, giving up after budget_ms. Returns the serialized response as
 * mcp_call_run does, or NULL with *over set when the budget ran out: the call is then as
 * it was before (nothing reported or recorded) and must be run with mcp_call_run. */
char *mcp_call_run_inline(mcp_call *c, const char *request_id, const char *key_id, const char *tenant,
                          double budget_ms, bool *over) {
    *over = false;
    mcp_call_ctx ctx = call_ctx(c, NULL, request_id, key_id, tenant, budget_ms);
    gg_error err = GG_ERROR_INIT;
    mcp_provider *p = c->srv->provider;
    double t0 = gg_now_ms();
    json_t *res = p->call_tool(p, c->tool->name, c->args, &ctx, &err);
    if (!res && strcmp(err.code, "budget") == 0) {
        gg_error_clear(&err);
        json_array_clear(c->history);
        gg_strbuf_reset(&c->history_text);
        gg_strbuf_putc(&c->history_text, '[');
        tool *t = (tool *)c->tool; /* only its atomic counters change */
        int misses = __atomic_add_fetch(&t->inline_misses, 1, __ATOMIC_RELAXED);
        long long backoff = inline_backoff_ms(misses);
        if (backoff) __atomic_store_n(&t->inline_off_until, (long long)gg_now_ms() + backoff, __ATOMIC_RELAXED);
        *over = true;
        return NULL;
    }
    if (__atomic_load_n(&c->tool->inline_misses, __ATOMIC_RELAXED))
        __atomic_store_n(&((tool *)c->tool)->inline_misses, 0, __ATOMIC_RELAXED);
    c->duration_ms = gg_now_ms() - t0;
    return finish_call(c, res, &err);
}

/* Answer for a call that will not run (queue full, shutting down). */
char *mcp_call_refuse(mcp_call *c, int code, const char *message) {
    set_error(c, "failed", message);
    return mcp_jsonrpc_error(c->id, code, message, NULL);
}

/* ------------------------------------------------------------------ dispatch */

static void respond(mcp_outcome *out, char *body) {
    out->kind = MCP_OUT_RESPONSE;
    out->body = body;
}

static void respond_error(mcp_outcome *out, json_t *id, int code, const char *msg) {
    respond(out, mcp_jsonrpc_error(id, code, msg, NULL));
}

static void do_initialize(mcp_server *s, const mcp_message *m, mcp_outcome *out) {
    json_t *pv = json_object_get(m->params, "protocolVersion");
    if (!json_is_string(pv)) {
        respond_error(out, m->id, MCP_INVALID_PARAMS, "Invalid params: initialize needs a protocolVersion string");
        return;
    }
    const char *v = mcp_version_negotiate(json_string_value(pv));
    mcp_provider *p = s->provider;
    json_t *info = p->server_info ? p->server_info(p) : NULL;
    if (!json_is_object(info)) {
        json_decref(info);
        info = json_pack("{s:s,s:s}", "name", "graphgate", "version", GG_VERSION);
    }
    if (!json_object_get(info, "version")) json_object_set_new(info, "version", json_string(GG_VERSION));
    json_t *res = json_pack("{s:s,s:{s:{s:b},s:{},s:{}},s:o}", "protocolVersion", v, "capabilities",
                            "tools", "listChanged", 1, "logging", "completions", "serverInfo", info);
    const char *instr = p->instructions ? p->instructions(p) : NULL;
    if (res && instr) json_object_set_new(res, "instructions", json_string(instr));
    respond(out, res ? mcp_jsonrpc_result(m->id, res) : NULL);
    json_decref(res);
    out->initialize = true;
    snprintf(out->negotiated_version, sizeof out->negotiated_version, "%s", v);
}

static void do_tools_list(mcp_server *s, const mcp_message *m, mcp_outcome *out) {
    json_t *cursor = json_object_get(m->params, "cursor");
    long page = 0;
    if (cursor && !json_is_null(cursor)) {
        if (!json_is_string(cursor) || (page = page_of_cursor(s, json_string_value(cursor))) < 0) {
            respond_error(out, m->id, MCP_INVALID_PARAMS, "Invalid params: unknown cursor");
            return;
        }
    }
    respond(out, mcp_jsonrpc_result_raw(m->id, s->pages[page]));
}

static void invalid_arguments(mcp_outcome *out, const mcp_message *m, const char *tool, const gg_error *e) {
    char msg[1024];
    snprintf(msg, sizeof msg, "Invalid arguments for tool %s: %s: %s", tool,
             e->path && *e->path ? e->path : "(root)", e->message ? e->message : "invalid");
    json_t *res = mcp_tool_error_result(msg);
    respond(out, res ? mcp_jsonrpc_result(m->id, res) : NULL);
    json_decref(res);
}

static void do_tools_call(mcp_server *s, const mcp_message *m, const mcp_request_ctx *rc, mcp_outcome *out) {
    json_t *name = json_object_get(m->params, "name");
    json_t *args = json_object_get(m->params, "arguments");
    if (!json_is_string(name)) {
        respond_error(out, m->id, MCP_INVALID_PARAMS, "Invalid params: tools/call needs a tool name");
        return;
    }
    if (args && !json_is_null(args) && !json_is_object(args)) {
        respond_error(out, m->id, MCP_INVALID_PARAMS, "Invalid params: arguments must be an object");
        return;
    }
    const tool *t = find_tool(s, json_string_value(name));
    if (!t) {
        char msg[300];
        snprintf(msg, sizeof msg, "Unknown tool: %.200s", json_string_value(name));
        respond_error(out, m->id, MCP_INVALID_PARAMS, msg);
        return;
    }
    json_t *token = json_object_get(json_object_get(m->params, "_meta"), "progressToken");
    if (token && !json_is_string(token) && !json_is_integer(token)) token = NULL;
    mcp_call *c = calloc(1, sizeof *c);
    if (!c) {
        respond_error(out, m->id, MCP_INTERNAL_ERROR, "Internal error: out of memory");
        return;
    }
    c->srv = mcp_server_ref(s);
    c->tool = t;
    c->id = json_incref(m->id);
    c->args = (args && json_is_object(args)) ? json_incref(args) : json_object();
    c->progress_token = json_incref(token);
    c->level = rc ? rc->log_level : MCP_LOG_OFF;
    c->history = json_array();
    c->status = "running";
    gg_error e = GG_ERROR_INIT;
    if (t->input && !mcp_schema_validate(t->input, c->args, &e)) {
        invalid_arguments(out, m, t->name, &e);
        gg_error_clear(&e);
        mcp_call_free(c);
        return;
    }
    out->kind = MCP_OUT_CALL;
    out->call = c;
}

static void do_set_level(const mcp_message *m, mcp_outcome *out) {
    json_t *lv = json_object_get(m->params, "level");
    int l = json_is_string(lv) ? mcp_log_level_parse(json_string_value(lv)) : -1;
    if (l < 0) {
        respond_error(out, m->id, MCP_INVALID_PARAMS,
                      "Invalid params: level must be one of debug, info, notice, warning, error, critical, alert, emergency");
        return;
    }
    out->set_log_level = l;
    respond(out, mcp_jsonrpc_result_raw(m->id, "{}"));
}

static void do_complete(const mcp_message *m, mcp_outcome *out) {
    json_t *ref = json_object_get(m->params, "ref"), *arg = json_object_get(m->params, "argument");
    if (!json_is_object(ref) || !json_is_string(json_object_get(ref, "type")) || !json_is_object(arg)) {
        respond_error(out, m->id, MCP_INVALID_PARAMS, "Invalid params: completion/complete needs ref and argument objects");
        return;
    }
    /* graphs define no prompts or resource templates: there is never anything to suggest */
    respond(out, mcp_jsonrpc_result_raw(m->id, "{\"completion\":{\"values\":[],\"total\":0,\"hasMore\":false}}"));
}

static void do_notification(const mcp_message *m, mcp_outcome *out) {
    out->kind = MCP_OUT_ACCEPTED;
    if (strcmp(m->method, "notifications/cancelled") == 0) {
        json_t *rid = json_object_get(m->params, "requestId");
        if (json_is_string(rid) || json_is_number(rid)) out->cancel_id = json_incref(rid);
    }
    /* notifications/initialized, progress, roots/list_changed, unknown ones: accepted */
}

/* Dispatch one message; see mcp.h. */
void mcp_server_dispatch(mcp_server *s, const mcp_message *m, const mcp_request_ctx *rc, mcp_outcome *out) {
    memset(out, 0, sizeof *out);
    out->set_log_level = -1;
    switch (m->kind) {
    case MCP_MSG_INVALID:
        respond_error(out, m->id, m->error_code, m->error_message);
        return;
    case MCP_MSG_RESPONSE:
        out->kind = MCP_OUT_ACCEPTED; /* this server sends no requests; nothing to match */
        return;
    case MCP_MSG_NOTIFICATION:
        do_notification(m, out);
        return;
    case MCP_MSG_REQUEST:
        break;
    }
    if (m->params && !json_is_object(m->params)) {
        respond_error(out, m->id, MCP_INVALID_PARAMS, "Invalid params: params must be an object");
        return;
    }
    const char *meth = m->method;
    if (strcmp(meth, "tools/call") == 0) do_tools_call(s, m, rc, out);
    else if (strcmp(meth, "tools/list") == 0) do_tools_list(s, m, out);
    else if (strcmp(meth, "ping") == 0) respond(out, mcp_jsonrpc_result_raw(m->id, "{}"));
    else if (strcmp(meth, "initialize") == 0) do_initialize(s, m, out);
    else if (strcmp(meth, "logging/setLevel") == 0) do_set_level(m, out);
    else if (strcmp(meth, "completion/complete") == 0) do_complete(m, out);
    else {
        char msg[200];
        snprintf(msg, sizeof msg, "Method not found: %.150s", meth);
        respond_error(out, m->id, MCP_METHOD_NOT_FOUND, msg);
    }
    if (out->kind == MCP_OUT_RESPONSE && !out->body) /* only OOM leaves no body */
        out->body = strdup("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32603,\"message\":\"Internal error\"}}");
}

/* Release what an outcome still owns (body, an untaken call, the cancel id). */
void mcp_outcome_clear(mcp_outcome *out) {
    free(out->body);
    mcp_call_free(out->call);
    json_decref(out->cancel_id);
    memset(out, 0, sizeof *out);
    out->set_log_level = -1;
}
