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
#include <stdatomic.h>
#include <math.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mcp/loop.h"
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

/* One MCP content block with the fields its type requires (see mcp.h). */
bool mcp_content_block_valid(json_t *b, char *why, size_t n) {
    const char *type = json_string_value(json_object_get(b, "type"));
    const char *need = NULL;
#define STR(k) json_is_string(json_object_get(b, k))
    if (!json_is_object(b) || !type) need = "a content block must be an object with a type";
    else if (!strcmp(type, "text")) need = STR("text") ? NULL : "a text block needs text (a string)";
    else if (!strcmp(type, "image") || !strcmp(type, "audio"))
        need = STR("data") && STR("mimeType") ? NULL : "an image or audio block needs data (base64) and mimeType";
    else if (!strcmp(type, "resource_link")) need = STR("uri") && STR("name") ? NULL : "a resource_link needs uri and name";
    else if (!strcmp(type, "resource")) {
        json_t *r = json_object_get(b, "resource");
        bool body = json_is_string(json_object_get(r, "text")) || json_is_string(json_object_get(r, "blob"));
        need = json_is_string(json_object_get(r, "uri")) && body ? NULL : "a resource block needs resource {uri, text or blob}";
    } else need = "type must be text, image, audio, resource or resource_link";
#undef STR
    if (need) snprintf(why, n, "%s", need);
    return need == NULL;
}

/* One ResourceContents item: a string is text; an object gives text or blob (and may name
 * its own uri and mimeType); uri and mimeType default to the request's and the item's. */
static json_t *resource_item(json_t *v, const char *uri, const char *mime, char *why, size_t n) {
    json_t *it = NULL;
    if (json_is_string(v)) it = json_pack("{s:s,s:O}", "uri", uri, "text", v);
    else if (json_is_object(v) && (json_is_string(json_object_get(v, "text")) || json_is_string(json_object_get(v, "blob")))) {
        it = gg_json_clone(v);
        if (it && !json_is_string(json_object_get(it, "uri"))) json_object_set_new(it, "uri", json_string(uri));
    } else {
        snprintf(why, n, "a resource's content must be a string or an object with text or blob");
        return NULL;
    }
    if (it && mime && !json_is_string(json_object_get(it, "mimeType"))) json_object_set_new(it, "mimeType", json_string(mime));
    return it;
}

/* ReadResourceResult {contents} for a value: one item, a list of items, or {contents}. */
static json_t *resource_result(json_t *v, const char *uri, const char *mime, char *why, size_t n) {
    json_t *list = json_is_object(v) && json_is_array(json_object_get(v, "contents")) ? json_object_get(v, "contents") : v;
    json_t *contents = json_array();
    if (!json_is_array(list)) json_array_append_new(contents, resource_item(list, uri, mime, why, n));
    else {
        size_t i;
        json_t *x;
        json_array_foreach(list, i, x) json_array_append_new(contents, resource_item(x, uri, mime, why, n));
    }
    if (!contents || json_array_size(contents) != (json_is_array(list) ? json_array_size(list) : 1)) {
        json_decref(contents);
        if (!*why) snprintf(why, n, "out of memory");
        return NULL;
    }
    return json_pack("{s:o}", "contents", contents);
}

/* One PromptMessage: a string is a user text message; else {role, content block}. */
static json_t *prompt_message(json_t *m, char *why, size_t n) {
    if (json_is_string(m)) return json_pack("{s:s,s:{s:s,s:O}}", "role", "user", "content", "type", "text", "text", m);
    const char *role = json_string_value(json_object_get(m, "role"));
    if (!role || (strcmp(role, "user") && strcmp(role, "assistant"))) {
        snprintf(why, n, "a prompt message needs role 'user' or 'assistant'");
        return NULL;
    }
    return mcp_content_block_valid(json_object_get(m, "content"), why, n) ? json_incref(m) : NULL;
}

/* GetPromptResult {description?, messages} for a value: a string, a list of messages, or
 * {description?, messages}. */
static json_t *prompt_result(json_t *v, const char *desc, char *why, size_t n) {
    json_t *msgs = json_is_object(v) ? json_object_get(v, "messages") : v;
    const char *d = json_is_object(v) && json_is_string(json_object_get(v, "description"))
                        ? json_string_value(json_object_get(v, "description")) : desc;
    json_t *out = json_array();
    if (json_is_string(msgs)) json_array_append_new(out, prompt_message(msgs, why, n));
    else if (json_is_array(msgs)) {
        size_t i;
        json_t *x;
        json_array_foreach(msgs, i, x) json_array_append_new(out, prompt_message(x, why, n));
    } else snprintf(why, n, "a prompt's output must be a string, a list of messages or {messages}");
    if (!out || json_array_size(out) != (json_is_array(msgs) ? json_array_size(msgs) : json_is_string(msgs) ? 1 : 0) ||
        !json_array_size(out)) {
        json_decref(out);
        if (!*why) snprintf(why, n, "a prompt produced no messages");
        return NULL;
    }
    json_t *r = json_pack("{s:o}", "messages", out);
    if (r && d) json_object_set_new(r, "description", json_string(d));
    return r;
}

/* ------------------------------------------------------------------ server */

typedef struct tool {
    const char *name; /* borrowed from def */
    json_t *def;
    mcp_schema *input, *output;
    bool pure;        /* the provider says it only computes: may run inline with a budget */
    _Atomic long long inline_off_until; /* monotonic ms: after a run outgrew the budget,
                                   calls go straight to a worker for a while */
    _Atomic int inline_misses;  /* consecutive inline runs that outgrew it */
    int needs;                  /* MCP_CLIENT_CAPS_* its nodes ask of the client */
    int task_support;           /* 0 forbidden, 1 optional, 2 required (def execution.taskSupport) */
    bool task_after_input;      /* a task only from the round answering its input (_meta io.graphgate/taskStart) */
} tool;

typedef struct pagelist {
    char **pages; /* pre-serialized list results */
    size_t npages;
} pagelist;

enum { L_TOOLS, L_RESOURCES, L_TEMPLATES, L_PROMPTS, L_COUNT };
static const char *const list_keys[L_COUNT] = {"tools", "resources", "resourceTemplates", "prompts"};

struct mcp_server {
    _Atomic int refcount;
    mcp_provider *provider;
    tool *tools;
    size_t ntools;
    pagelist lists[L_COUNT];
    size_t counts[L_COUNT]; /* items listed: a capability is advertised only when non-zero */
    bool completions;       /* some prompt or template exists: completion/complete may suggest */
    int fwd;                /* MCP_FORWARD_* the provider answers through its downstream servers */
};

static void server_free(mcp_server *s) {
    for (size_t i = 0; i < s->ntools; i++) {
        json_decref(s->tools[i].def);
        mcp_schema_free(s->tools[i].input);
        mcp_schema_free(s->tools[i].output);
    }
    free(s->tools);
    for (int l = 0; l < L_COUNT; l++) {
        for (size_t i = 0; i < s->lists[l].npages; i++) free(s->lists[l].pages[i]);
        free(s->lists[l].pages);
    }
    mcp_provider_unref(s->provider);
    free(s);
}

static void cursor_for(size_t page, char *out, size_t n) {
    char raw[32];
    int len = snprintf(raw, sizeof raw, "page:%zu", page);
    sodium_bin2base64(out, n, (const unsigned char *)raw, (size_t)len, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
}

/* -1 for a cursor this server did not hand out. */
static long page_of_cursor(const pagelist *s, const char *cursor) {
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

static bool build_pages(pagelist *s, const char *key, json_t *list, size_t page_size) {
    size_t n = json_array_size(list);
    s->npages = n ? (n + page_size - 1) / page_size : 1;
    if (!(s->pages = calloc(s->npages, sizeof *s->pages))) return false;
    for (size_t p = 0; p < s->npages; p++) {
        json_t *page = json_object(), *arr = json_array();
        if (!page || !arr) { json_decref(page); json_decref(arr); return false; }
        json_object_set_new(page, key, arr);
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
    json_t *list = provider->ops->list_tools ? provider->ops->list_tools(provider) : json_array();
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
        s->tools[i].pure = provider->ops->tool_is_pure && provider->ops->tool_is_pure(provider, s->tools[i].name);
        s->tools[i].needs = provider->ops->tool_client_needs ? provider->ops->tool_client_needs(provider, s->tools[i].name) : 0;
        const char *ts = json_string_value(json_object_get(json_object_get(def, "execution"), "taskSupport"));
        s->tools[i].task_support = ts && !strcmp(ts, "required") ? 2 : ts && !strcmp(ts, "optional") ? 1 : 0;
        const char *start = json_string_value(json_object_get(json_object_get(def, "_meta"), "io.graphgate/taskStart"));
        s->tools[i].task_after_input = start && !strcmp(start, "afterInput");
    }
    if (!build_pages(&s->lists[L_TOOLS], "tools", list, page_size)) goto oom;
    s->counts[L_TOOLS] = s->ntools;
    json_decref(list);
    list = NULL;
    json_t *(*listers[L_COUNT])(mcp_provider *) = {NULL, provider->ops->list_resources, provider->ops->list_resource_templates,
                                                   provider->ops->list_prompts};
    for (int l = L_RESOURCES; l < L_COUNT; l++) {
        json_t *items = listers[l] ? listers[l](provider) : NULL;
        if (!json_is_array(items)) {
            json_decref(items);
            items = json_array();
        }
        s->counts[l] = json_array_size(items);
        bool ok = build_pages(&s->lists[l], list_keys[l], items, page_size);
        json_decref(items);
        if (!ok) goto oom;
    }
    s->completions = s->counts[L_TEMPLATES] || s->counts[L_PROMPTS];
    s->fwd = provider->ops->forwards && provider->ops->forward ? provider->ops->forwards(provider) : 0;
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
    if (s) atomic_fetch_add_explicit(&s->refcount, 1, memory_order_relaxed);
    return s;
}

/* Drop a reference; the last one frees the server and its provider reference. */
void mcp_server_unref(mcp_server *s) {
    if (s && atomic_fetch_sub_explicit(&s->refcount, 1, memory_order_acq_rel) == 1) server_free(s);
}

/* Another reference than the caller's exists; see mcp.h. */
bool mcp_server_shared(const mcp_server *s) { return atomic_load_explicit(&s->refcount, memory_order_acquire) > 1; }

/* The provider served (borrowed). */
mcp_provider *mcp_server_provider(const mcp_server *s) { return s->provider; }
/* Number of tools listed. */
size_t mcp_server_tool_count(const mcp_server *s) { return s->ntools; }
/* Whether initialize advertises resources (fixed or templates) / prompts. */
bool mcp_server_has_resources(const mcp_server *s) {
    return s->counts[L_RESOURCES] || s->counts[L_TEMPLATES] || (s->fwd & MCP_FORWARD_RESOURCES);
}
bool mcp_server_has_prompts(const mcp_server *s) { return s->counts[L_PROMPTS] || (s->fwd & MCP_FORWARD_PROMPTS); }

/* Whether resources/read of uri finds something (a fixed URI or a template match). */
bool mcp_server_serves_uri(const mcp_server *s, const char *uri) {
    mcp_provider *p = s->provider;
    json_t *value = NULL, *args = NULL;
    char *run = NULL;
    json_t *item = p->ops->lookup ? p->ops->lookup(p, "resource", uri, NULL, &value, &run, &args) : NULL;
    json_decref(value);
    json_decref(args);
    free(run);
    json_decref(item);
    return item != NULL;
}

void mcp_server_cache_hint(const mcp_server *s, int *ttl_ms, bool *public_scope) {
    *ttl_ms = 0;
    *public_scope = false;
    if (s->provider->ops->cache_hint) s->provider->ops->cache_hint(s->provider, ttl_ms, public_scope);
}

static const tool *find_tool(const mcp_server *s, const char *name);
json_t *mcp_server_tool_def(const mcp_server *s, const char *name) {
    const tool *t = find_tool(s, name);
    return t ? t->def : NULL;
}

static const tool *find_tool(const mcp_server *s, const char *name) {
    for (size_t i = 0; i < s->ntools; i++)
        if (strcmp(s->tools[i].name, name) == 0) return &s->tools[i];
    return NULL;
}

/* ------------------------------------------------------------------ calls */

/* CALL_FORWARD: a request the provider answers through its downstream servers (run = the
 * method, args = its params). */
typedef enum { CALL_TOOL, CALL_RESOURCE, CALL_PROMPT, CALL_FORWARD } call_kind;

struct mcp_call {
    mcp_server *srv;
    const tool *tool;   /* CALL_TOOL only */
    call_kind kind;
    char *run;          /* resources/read, prompts/get: the provider's name for the run */
    char *uri;          /* resources/read: the URI asked for */
    json_t *item;       /* resources/read, prompts/get: the item's listed definition */
    json_t *id, *args, *progress_token;
    mcp_log_level level;
    atomic_int cancelled;
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
    /* requests to the client (mcp_call_set_client) */
    mcp_sessions *sessions;
    mcp_session sess;
    gg_trace_ctx trace; /* from params._meta, then the caller's span (mcp_call_trace) */
    bool modern;        /* 2026-07-28: the response is shaped by mcp_modern_shape */
    /* input-required results (modern, with a state key): the client's answers to earlier
     * rounds, the state to go on from, and the request the run now waits for */
    bool can_ask;
    int client_caps;
    uint8_t state_key[32];
    char *binding;
    json_t *input_responses, *resume_state;
    atomic_int input_wait;
    json_t *wait_requests; /* {key: {method, params}}: the round's inputRequests */
    const char *exec_id; /* mcp_call_set_exec_id (borrowed) */
    long long exec_start_ms;
    unsigned scopes;     /* mcp_call_set_scopes */
    /* mcp_call_set_caller: the copies, and the view of them ctx.identity.who points to */
    struct {
        char key_id[24], issuer[160], subject[96], client_id[96], scopes[96], session[33];
        mcp_caller view;
        bool set;
    } who;
    bool as_task;        /* 2026-07-28 tasks extension: the gateway runs it as a task */
    char round_exec[33]; /* the execution record of the run's earlier rounds (from the state) */
    char round_nonce[33]; /* the resumed state's single-use id (claimed by the gateway) */
    int round;            /* the resumed state's round number (1 = the first answer) */
    char fail_code[MCP_FAIL_CODE_MAX]; /* the run's error code when it failed (mcp_call_fail_code) */
    int missing_caps; /* mcp_call_ctx.outcome.missing_caps: what the provider found the client lacks */
    json_t *elicitation; /* mcp_call_ctx.outcome.elicitation: -32042's data, or NULL */
    int consent_rounds;  /* modern: the consent rounds answered before this call (consent_round) */
    mcp_cancel_cell *_Atomic shared_cancel; /* mcp_call_ctx.run.adopt_cancel: the run's flag, or NULL */
    char *subject_token; /* mcp_call_set_subject_token: the caller's token, wiped when freed */
};

/* Accessors of a call in flight (see mcp.h). */
void mcp_call_set_emitter(mcp_call *c, mcp_emit_fn fn, void *user) {
    c->emit = fn;
    c->emit_user = user;
}
atomic_int *mcp_call_cancel_flag(mcp_call *c) {
    mcp_cancel_cell *cell = atomic_load_explicit(&c->shared_cancel, memory_order_acquire);
    return cell ? &cell->flag : &c->cancelled;
}
mcp_cancel_cell *mcp_call_cancel_cell(mcp_call *c) {
    mcp_cancel_cell *cell = atomic_load_explicit(&c->shared_cancel, memory_order_acquire);
    if (cell) mcp_cancel_cell_ref(cell);
    return cell;
}
static bool call_cancelled(mcp_call *c) { return atomic_load_explicit(mcp_call_cancel_flag(c), memory_order_relaxed); }

/* mcp_call_ctx.run.adopt_cancel (once per call): from now on the call's flag is the cell's; a
 * cancellation already set carries over. */
static void call_adopt_cancel(void *user, mcp_cancel_cell *cell) {
    mcp_call *c = user;
    mcp_cancel_cell_ref(cell);
    mcp_cancel_cell *was = atomic_exchange_explicit(&c->shared_cancel, cell, memory_order_acq_rel);
    if (was) mcp_cancel_cell_unref(was);
    if (atomic_load(&c->cancelled)) atomic_store(&cell->flag, 1);
}

/* See provider.h. */
mcp_provider *mcp_provider_new(const mcp_provider_ops *ops, void *impl) {
    mcp_provider *p = malloc(sizeof *p);
    if (!p) return NULL;
    p->ops = ops;
    p->impl = impl;
    atomic_init(&p->refcount, 1);
    return p;
}

mcp_cancel_cell *mcp_cancel_cell_new(void) {
    mcp_cancel_cell *c = calloc(1, sizeof *c);
    if (c) atomic_init(&c->refs, 1);
    return c;
}
void mcp_cancel_cell_ref(mcp_cancel_cell *c) { atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed); }
void mcp_cancel_cell_unref(mcp_cancel_cell *c) {
    if (c && atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) == 1) free(c);
}
gg_trace_ctx *mcp_call_trace(mcp_call *c) { return &c->trace; }
void mcp_call_set_client(mcp_call *c, mcp_sessions *sessions, const mcp_session *sess) {
    c->sessions = sessions;
    c->sess = *sess;
    /* per-user consent names the session, to tell it when the user has consented */
    sodium_bin2hex(c->who.session, sizeof c->who.session, sess->nonce, sizeof sess->nonce);
    c->who.view.session = c->who.session;
}
void mcp_call_set_exec_id(mcp_call *c, const char *exec_id, long long start_ms) {
    c->exec_id = exec_id;
    c->exec_start_ms = start_ms;
}
void mcp_call_set_scopes(mcp_call *c, unsigned scopes) { c->scopes = scopes; }
void mcp_call_set_caller(mcp_call *c, const mcp_caller *who) {
    gg_strcopy(c->who.key_id, sizeof c->who.key_id, who->key_id ? who->key_id : "");
    gg_strcopy(c->who.scopes, sizeof c->who.scopes, who->scopes ? who->scopes : "");
    c->who.view = (mcp_caller){c->who.key_id, NULL, NULL, NULL, c->who.scopes, c->who.session[0] ? c->who.session : NULL};
    if (who->issuer) { /* a token: its claims too */
        gg_strcopy(c->who.issuer, sizeof c->who.issuer, who->issuer);
        gg_strcopy(c->who.subject, sizeof c->who.subject, who->subject ? who->subject : "");
        gg_strcopy(c->who.client_id, sizeof c->who.client_id, who->client_id ? who->client_id : "");
        c->who.view.issuer = c->who.issuer;
        c->who.view.subject = c->who.subject;
        c->who.view.client_id = c->who.client_id;
    }
    c->who.set = true;
}
const mcp_caller *mcp_call_caller(const mcp_call *c) { return c->who.set ? &c->who.view : NULL; }
void mcp_call_set_subject_token(mcp_call *c, const char *token, size_t len) {
    if (c->subject_token) sodium_memzero(c->subject_token, strlen(c->subject_token));
    free(c->subject_token);
    c->subject_token = NULL;
    if (!token || !len || len > MCP_SUBJECT_TOKEN_MAX || memchr(token, '\0', len)) return;
    if ((c->subject_token = malloc(len + 1))) {
        memcpy(c->subject_token, token, len);
        c->subject_token[len] = '\0';
    }
}
const char *mcp_call_tool(const mcp_call *c) { return c->tool ? c->tool->name : c->run; }
json_t *mcp_call_id(const mcp_call *c) { return c->id; }
json_t *mcp_call_arguments(const mcp_call *c) { return c->args; }
bool mcp_call_wants_progress(const mcp_call *c) { return c->progress_token != NULL; }
json_t *mcp_call_history(const mcp_call *c) { return c->history; }
const char *mcp_call_status(const mcp_call *c) { return c->status; }
json_t *mcp_call_result(const mcp_call *c) { return c->result; }
const char *mcp_call_error(const mcp_call *c) { return c->error; }
bool mcp_call_as_task(const mcp_call *c) { return c->as_task; }
bool mcp_call_forwarded(const mcp_call *c) { return c->kind == CALL_FORWARD; }
int mcp_call_http_status(const mcp_call *c, const char *body) {
    return c->modern && c->status && !strcmp(c->status, "failed") && !c->result ? mcp_modern_status(body) : 200;
}
const char *mcp_call_round_exec_id(const mcp_call *c) { return c->round_exec[0] ? c->round_exec : NULL; }
const char *mcp_call_round_nonce(const mcp_call *c, int *round) {
    if (round) *round = c->round;
    return c->round_nonce[0] ? c->round_nonce : NULL;
}
json_t *mcp_call_resume_state(const mcp_call *c) { return c->resume_state; }
bool mcp_call_input_required(const mcp_call *c) {
    const char *rt = json_string_value(json_object_get(c->result, "resultType"));
    return rt && !strcmp(rt, "input_required");
}
const char *mcp_call_fail_code(const mcp_call *c) { return c->fail_code; }
double mcp_call_duration_ms(const mcp_call *c) { return c->duration_ms; }

/* Keep the call's node records as JSON text (mcp_call_ctx.history.text; values past
 * max_value_bytes truncated) instead of the JSON array of mcp_call_history: cheaper when
 * they are only going to be stored. Set before the call runs. */
void mcp_call_use_history_text(mcp_call *c, size_t max_value_bytes) {
    c->use_text = true;
    c->history_max = max_value_bytes;
    gg_strbuf_reserve(&c->history_text, 1000); /* a few nodes' records without regrowing */
    gg_strbuf_putc(&c->history_text, '[');
}

/* Bound the run's node records as text (mcp_call_ctx.history.max_records/_bytes). */
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
static void call_free_rounds(mcp_call *c) {
    free(c->binding);
    json_decref(c->input_responses);
    json_decref(c->resume_state);
    json_decref(c->wait_requests);
}

/* One freed call kept a thread for its next call: an mcp_call (≈ 1.8 KiB) is above glibc's
 * per-thread cache, so its calloc and free took ≈ 1 k instructions a tools/call
 * (bench/gateway/callgrind.sh). Process-wide on purpose (globals.allow): the spare belongs
 * to the thread that freed it; the key, made once, frees it at the thread's end. */
typedef struct call_cache {
    mcp_call *spare;
    bool registered, closed; /* closed: the destructor ran, frees go straight to free */
} call_cache;
static _Thread_local call_cache call_tl_cache;
static pthread_key_t call_cache_key;
static pthread_once_t call_cache_once = PTHREAD_ONCE_INIT;

static void call_cache_flush(void *arg) {
    call_cache *cc = arg;
    free(cc->spare);
    cc->spare = NULL;
    cc->closed = true;
}

static void call_cache_key_make(void) {
    if (pthread_key_create(&call_cache_key, call_cache_flush) != 0) call_cache_key = (pthread_key_t)-1;
}

/* A zeroed call: this thread's spare, else calloc. */
static mcp_call *call_alloc(void) {
    mcp_call *c = call_tl_cache.spare;
    if (!c) return calloc(1, sizeof *c);
    call_tl_cache.spare = NULL;
    memset(c, 0, sizeof *c);
    return c;
}

/* c's memory (its fields already released) kept as this thread's spare, else freed. */
static void call_release(mcp_call *c) {
    call_cache *cc = &call_tl_cache;
    if (cc->spare || cc->closed) {
        free(c);
        return;
    }
    if (!cc->registered) {
        pthread_once(&call_cache_once, call_cache_key_make);
        if (call_cache_key == (pthread_key_t)-1 || pthread_setspecific(call_cache_key, cc) != 0) {
            free(c);
            return;
        }
        cc->registered = true;
    }
    cc->spare = c;
}

void mcp_call_free(mcp_call *c) {
    if (!c) return;
    call_free_rounds(c);
    json_decref(c->id);
    json_decref(c->args);
    json_decref(c->progress_token);
    json_decref(c->history);
    gg_strbuf_free(&c->history_text);
    json_decref(c->result);
    free(c->error);
    free(c->run);
    free(c->uri);
    json_decref(c->item);
    json_decref(c->elicitation);
    mcp_call_set_subject_token(c, NULL, 0); /* wiped */
    mcp_cancel_cell_unref(atomic_load(&c->shared_cancel));
    mcp_server_unref(c->srv);
    call_release(c);
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
    static const gg_json_key keys[] = {GG_JSON_KEY("isError"), GG_JSON_KEY("structuredContent"), GG_JSON_KEY("content")};
    json_t *m[3];
    gg_json_members(res, 3, keys, m); /* one walk, not three lookups */
    json_t *sc = m[1], *content = m[2];
    if (json_is_true(m[0])) {
        json_t *first = json_array_get(content, 0);
        set_error(c, "error", json_string_value(json_object_get(first, "text")));
        return res;
    }
    gg_error e = GG_ERROR_INIT;
    if (!mcp_tool_check_output(c->tool->output, c->tool->name, sc, &e)) {
        json_decref(res);
        set_error(c, "error", e.message);
        res = mcp_tool_error_result(e.message);
        gg_error_clear(&e);
        return res;
    }
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
static char *missing_capability_error(json_t *id, const char *msg, int missing);

/* The provider's view of the call (history as the caller asked, bounds included). */
/* What the call's client declared: the request's _meta (2026-07-28) or its session's
 * initialize; 0 when neither is known. */
static int call_client_caps(const mcp_call *c) {
    if (c->modern) return c->client_caps;
    return c->sessions ? mcp_session_client_caps(c->sessions, &c->sess) : 0;
}

static mcp_call_ctx call_ctx(mcp_call *c, const mcp_sink *sink, const char *request_id, const char *key_id,
                             const char *tenant, double budget_ms) {
    return (mcp_call_ctx){
        .identity = {.request_id = request_id, .key_id = key_id, .tenant = tenant, .scopes = c->scopes,
                     .who = c->who.set ? &c->who.view : NULL, .subject_token = c->subject_token,
                     .trace = &c->trace},
        .client = {.sink = sink, .caps = call_client_caps(c)},
        .run = {.cancelled = &c->cancelled, .budget_ms = budget_ms},
        .history = {.records = c->history, .text = c->use_text ? &c->history_text : NULL,
                    .max_value = c->history_max, .max_records = c->history_max_records,
                    .max_bytes = c->history_max_bytes, .exec_id = c->exec_id,
                    .exec_start_ms = c->exec_start_ms}};
}

/* The shaped result of a resources/read or prompts/get value (new reference), or NULL with
 * why. */
static json_t *shape_item(call_kind kind, json_t *item, const char *uri, json_t *value, char *why, size_t n) {
    *why = 0;
    if (kind == CALL_RESOURCE)
        return resource_result(value, uri, json_string_value(json_object_get(item, "mimeType")), why, n);
    return prompt_result(value, json_string_value(json_object_get(item, "description")), why, n);
}

/* resources/read or prompts/get after its nodes ran (res consumed): the shaped result, or
 * an internal error naming what went wrong (a failed node, an output of the wrong shape). */
static char *finish_item(mcp_call *c, json_t *res, gg_error *err) {
    char why[300] = "";
    json_t *value = json_object_get(res, "value");
    json_t *shaped = value ? shape_item(c->kind, c->item, c->uri, value, why, sizeof why) : NULL;
    if (!value) {
        json_t *first = json_array_get(json_object_get(res, "content"), 0);
        const char *m = json_string_value(json_object_get(first, "text"));
        snprintf(why, sizeof why, "%s", m ? m : err->message ? err->message : "the graph failed");
    }
    json_decref(res);
    if (!shaped) {
        char msg[400];
        snprintf(msg, sizeof msg, "%s %.150s failed: %s", c->kind == CALL_RESOURCE ? "Reading resource" : "Getting prompt",
                 c->kind == CALL_RESOURCE ? c->uri : json_string_value(json_object_get(c->item, "name")), why);
        set_error(c, "error", msg);
        return mcp_jsonrpc_error(c->id, MCP_INTERNAL_ERROR, msg, NULL);
    }
    c->status = "ok";
    c->result = shaped;
    return mcp_jsonrpc_result(c->id, shaped);
}

/* A forwarded request's answer (res consumed): the provider's result as it is, or its
 * error as the JSON-RPC error its code maps to. */
static char *finish_forward(mcp_call *c, json_t *res, gg_error *err) {
    if (res && json_is_object(res)) {
        c->status = "ok";
        c->result = res;
        return mcp_jsonrpc_result(c->id, res);
    }
    json_decref(res);
    const char *msg = err->message ? err->message : "the downstream server did not answer";
    set_error(c, "failed", msg);
    if (!strncmp(c->run, "resources/", 10) && !strcmp(err->code, "not_found")) { /* read, (un)subscribe */
        json_t *data = json_pack("{s:O}", "uri", json_object_get(c->args, "uri") ? json_object_get(c->args, "uri") : json_null());
        char *out = mcp_jsonrpc_error(c->id, MCP_RESOURCE_NOT_FOUND, msg, data);
        json_decref(data);
        return out;
    }
    return mcp_jsonrpc_error(c->id, gg_error_rpc_code(err) == MCP_INVALID_PARAMS ? MCP_INVALID_PARAMS : MCP_INTERNAL_ERROR, msg,
                             NULL);
}

/* Run the tool on the calling (worker) thread; returns the serialized response. */
char *mcp_call_run(mcp_call *c, const char *request_id, const char *key_id, const char *tenant) {
    mcp_sink sink = {c->progress_token ? sink_progress : NULL,
                     c->level != MCP_LOG_OFF ? sink_log : NULL, c};
    mcp_call_ctx ctx = call_ctx(c, &sink, request_id, key_id, tenant, 0);
    gg_error err = GG_ERROR_INIT;
    mcp_provider *p = c->srv->provider;
    if (c->kind == CALL_FORWARD) /* only asynchronous: the provider waits on its downstream */
        return mcp_call_refuse(c, MCP_INTERNAL_ERROR, "Internal error: a forwarded request runs only asynchronously");
    double t0 = gg_now_ms();
    json_t *res = p->ops->call_tool(p, mcp_call_tool(c), c->args, &ctx, &err);
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

/* ---- requests to the client: elicitation/create, sampling/createMessage -------------------- */

/* One request waiting for the client's answer: the loop watches its deadline and the call's
 * cancel flag; the session table routes the answer. Exactly one of them finishes it. */
typedef struct creq {
    mcp_pending p; /* first: the loop's view */
    _Atomic int claimed; /* 1 once answered, expired or cancelled */
    mcp_sessions *sessions;
    mcp_session sess;
    char id[48];
} creq;

static bool creq_claim(creq *q) {
    int zero = 0;
    return atomic_compare_exchange_strong_explicit(&q->claimed, &zero, 1, memory_order_acq_rel, memory_order_acquire);
}
static void creq_destroy(mcp_pending *p) { free(p); }
static void creq_release(void *u) { mcp_pending_unref(&((creq *)u)->p); }

static void creq_deliver(void *u, json_t *result, json_t *error) {
    creq *q = u;
    if (!creq_claim(q)) return;
    gg_error e = GG_ERROR_INIT;
    if (!result || !json_is_object(result))
        gg_error_set(&e, "client_error", "the client answered with error %lld: %s",
                     (long long)json_integer_value(json_object_get(error, "code")),
                     json_string_value(json_object_get(error, "message")) ? json_string_value(json_object_get(error, "message"))
                                                                          : "(no message)");
    mcp_pending_finish(mcp_loop_shared(), &q->p, e.code[0] ? NULL : result, &e);
    gg_error_clear(&e);
}

static void creq_expire(mcp_pending *p, const char *why) {
    creq *q = (creq *)p;
    if (!creq_claim(q)) return;
    mcp_session_untrack_request(q->sessions, &q->sess, q->id);
    gg_error e = GG_ERROR_INIT;
    if (!strcmp(why, "timeout")) gg_error_set(&e, "timeout", "the client did not answer in time");
    else gg_error_set(&e, "cancelled", "cancelled while waiting for the client");
    mcp_pending_finish(mcp_loop_shared(), p, NULL, &e);
    gg_error_clear(&e);
}

/* The client capability a request to the client needs. */
static int cap_of_method(const char *method) {
    return !strcmp(method, "elicitation/create") ? MCP_CLIENT_CAPS_ELICITATION
           : !strcmp(method, "sampling/createMessage") ? MCP_CLIENT_CAPS_SAMPLING : MCP_CLIENT_CAPS_ROOTS;
}

/* mcp_call_ctx.client.request: the request goes out on the call's stream (as its SSE
 * events go) with an id unique to the session; the answer comes back through the session. */
static void call_client_request(void *user, const char *key, const char *method, json_t *params, int timeout_ms,
                                atomic_int *cancelled,
                                void (*done)(void *user, json_t *result, gg_error *err), void *done_user) {
    mcp_call *c = user;
    (void)key;
    gg_error e = GG_ERROR_INIT;
    int caps = mcp_session_client_caps(c->sessions, &c->sess);
    int need = cap_of_method(method);
    if ((caps & MCP_CLIENT_CAPS_KNOWN) && !(caps & need)) {
        gg_error_set(&e, "no_capability", "%s: the client did not declare the %s capability at initialize", method,
                     need == MCP_CLIENT_CAPS_SAMPLING ? "sampling" : need == MCP_CLIENT_CAPS_ROOTS ? "roots" : "elicitation");
        done(done_user, NULL, &e);
        gg_error_clear(&e);
        return;
    }
    creq *q = calloc(1, sizeof *q);
    mcp_loop *loop = mcp_loop_shared();
    if (!q || !loop) {
        free(q);
        gg_error_set(&e, "oom", "out of memory");
        done(done_user, NULL, &e);
        gg_error_clear(&e);
        return;
    }
    unsigned char rnd[12];
    randombytes_buf(rnd, sizeof rnd);
    memcpy(q->id, "gg-", 3);
    sodium_bin2hex(q->id + 3, sizeof q->id - 3, rnd, sizeof rnd);
    q->sessions = c->sessions;
    q->sess = c->sess;
    mcp_pending_init(&q->p, timeout_ms, cancelled, done, done_user);
    q->p.expire = creq_expire;
    q->p.destroy = creq_destroy;
    mcp_pending_ref(&q->p); /* the session table's */
    if (!mcp_session_track_request(c->sessions, &c->sess, q->id, creq_deliver, creq_release, q)) {
        mcp_pending_unref(&q->p);
        creq_claim(q);
        gg_error_set(&e, "too_many", "%s: this session already has 16 requests waiting for its client", method);
        mcp_pending_finish(loop, &q->p, NULL, &e);
        gg_error_clear(&e);
        return;
    }
    mcp_loop_watch(loop, &q->p);
    json_t *req = json_pack("{s:s,s:s,s:s,s:O}", "jsonrpc", "2.0", "id", q->id, "method", method, "params", params);
    char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    if (text && c->emit) c->emit(c->emit_user, text, strlen(text));
    free(text);
}

/* ---- input-required rounds (2026-07-28) ---------------------------------------------------- */

static void respond_error(mcp_outcome *out, json_t *id, int code, const char *msg);
static void respond(mcp_outcome *out, char *body);

/* An answer of the shape its method returns; anything else is asked for again. */
static bool response_fits(const char *method, json_t *r) {
    if (!json_is_object(r)) return false;
    if (!strcmp(method, "elicitation/create")) {
        const char *a = json_string_value(json_object_get(r, "action"));
        return a && (!strcmp(a, "accept") || !strcmp(a, "decline") || !strcmp(a, "cancel"));
    }
    if (!strcmp(method, "sampling/createMessage")) return json_is_object(json_object_get(r, "content")) ||
                                                          json_is_array(json_object_get(r, "content"));
    return json_is_array(json_object_get(r, "roots"));
}

/* mcp_call_ctx.client.request of a modern call: the answer the request carries in
 * inputResponses under the node's id, else the run stops here and the call becomes an
 * input-required result (finish_call). */
static void round_request(void *user, const char *key, const char *method, json_t *params, int timeout_ms,
                          atomic_int *cancelled, void (*done)(void *user, json_t *result, gg_error *err),
                          void *done_user) {
    mcp_call *c = user;
    (void)timeout_ms;
    (void)cancelled;
    if (!(c->client_caps & cap_of_method(method))) {
        gg_error e = GG_ERROR_INIT;
        gg_error_set(&e, "no_capability", "%s: the request did not declare the client capability it needs", method);
        done(done_user, NULL, &e);
        gg_error_clear(&e);
        return;
    }
    json_t *resp = json_incref(json_object_get(c->input_responses, key));
    if (resp && response_fits(method, resp)) {
        json_object_del(c->input_responses, key); /* a loop back to the node asks again */
        done(done_user, resp, NULL);
        json_decref(resp);
        return;
    }
    json_decref(resp);
    /* an ask node puts several requests in one round: each is kept under its key */
    if (!c->wait_requests) c->wait_requests = json_object();
    if (c->wait_requests)
        json_object_set_new(c->wait_requests, key, json_pack("{s:s,s:O}", "method", method, "params", params ? params : json_null()));
    c->input_wait = 1;
}

/* The call's answer when its run waits for the client: the request and the sealed state. */
static char *input_required(mcp_call *c, json_t *state) {
    /* the run's record travels in the state: the next round writes the same row */
    if (c->exec_id && *c->exec_id) json_object_set_new(state, "execution", json_string(c->exec_id));
    /* each state is answered once: a fresh nonce the answering call claims in the shared
     * store (mcp_call_round_nonce), and the round it answers */
    unsigned char raw[16];
    char nonce[33];
    randombytes_buf(raw, sizeof raw);
    sodium_bin2hex(nonce, sizeof nonce, raw, sizeof raw);
    json_object_set_new(state, "nonce", json_string(nonce));
    json_object_set_new(state, "round", json_integer(c->round + 1));
    char *tok = json_object_size(c->wait_requests) ? mcp_reqstate_seal(c->state_key, c->binding, state,
                                                                  (int64_t)time(NULL) + MCP_REQSTATE_TTL_S) : NULL;
    if (!tok) {
        set_error(c, "failed", "the run's state is too large to hand to the client");
        return mcp_jsonrpc_error(c->id, MCP_INTERNAL_ERROR, "Internal error: the run's state is too large to hand to the client", NULL);
    }
    json_t *res = json_pack("{s:s,s:O,s:s}", "resultType", "input_required", "inputRequests", c->wait_requests,
                            "requestState", tok);
    free(tok);
    if (!res) return mcp_jsonrpc_error(c->id, MCP_INTERNAL_ERROR, "Internal error: out of memory", NULL);
    c->status = "ok";
    json_decref(c->result);
    c->result = res;
    return mcp_jsonrpc_result(c->id, res);
}

/* ---- per-user consent in the 2026-07-28 era -------------------------------------------------
 * 2026-07-28 has no -32042: the URL elicitation a provider puts in mcp_call_ctx.outcome.elicitation
 * (a per-user downstream server without the caller's grant) becomes an input-required round
 * whose one request, under the key "consent-<elicitationId>", is a URL-mode elicitation/create
 * naming the connect page. The client opens the URL, answers accept and repeats the call; the
 * state marks it as a consent round (nothing of the run is kept: the run starts afresh and
 * finds the grant in the shared store, on any replica). Still no grant after
 * MCP_CONSENT_ROUNDS_MAX accepted rounds: a tool error says so. A client that did not declare
 * URL-mode elicitation gets -32021. */
#define MCP_CONSENT_ROUNDS_MAX 3

static char *consent_round(mcp_call *c) {
    json_t *el = json_array_get(json_object_get(c->elicitation, "elicitations"), 0);
    const char *id = json_string_value(json_object_get(el, "elicitationId"));
    const char *url = json_string_value(json_object_get(el, "url")), *msg = json_string_value(json_object_get(el, "message"));
    if (!c->can_ask || !(c->client_caps & MCP_CLIENT_CAPS_ELICITATION_URL) || !id || !url) {
        set_error(c, "failed", "the client cannot take the URL-mode elicitation the user's consent needs");
        return missing_capability_error(c->id, "Missing required client capability: the user must open a URL to consent to "
                                               "a downstream server, and the request did not declare URL-mode elicitation",
                                        MCP_CLIENT_CAPS_ELICITATION_URL);
    }
    if (c->consent_rounds >= MCP_CONSENT_ROUNDS_MAX) {
        json_t *res = finish_result(c, mcp_tool_error_result(
                                           "The user's consent to a downstream server did not arrive after 3 requests: open the "
                                           "link, finish signing in, then call the tool again for a new link."));
        c->result = res;
        return mcp_jsonrpc_result(c->id, res);
    }
    char key[64];
    snprintf(key, sizeof key, "consent-%.40s", id);
    json_decref(c->wait_requests);
    c->wait_requests = json_pack("{s:{s:s,s:{s:s,s:s,s:s}}}", key, "method", "elicitation/create", "params", "mode", "url",
                                 "message", msg ? msg : "Authorization is required", "url", url);
    json_t *state = json_pack("{s:{s:s,s:i}}", "consent", "key", key, "n", c->consent_rounds + 1);
    char *out = c->wait_requests && state ? input_required(c, state)
                                          : mcp_jsonrpc_error(c->id, MCP_INTERNAL_ERROR, "Internal error: out of memory", NULL);
    json_decref(state);
    return out;
}

/* The retry of a consent round (its state says "consent"): the client's answer under the
 * round's key. accept: the call runs afresh (resume_state dropped); decline or cancel: a tool
 * error, unrun; no answer: -32602. False when out holds the answer. */
static bool consent_answer(mcp_call *c, const mcp_message *m, mcp_outcome *out) {
    json_t *cn = json_object_get(c->resume_state, "consent");
    const char *k = json_string_value(json_object_get(cn, "key"));
    char key[64]; /* a copy: the state goes before the answer is read */
    snprintf(key, sizeof key, "%s", k ? k : "");
    json_int_t n = json_integer_value(json_object_get(cn, "n"));
    const char *action = key[0] ? json_string_value(json_object_get(json_object_get(c->input_responses, key), "action")) : NULL;
    c->consent_rounds = n > 0 && n <= MCP_CONSENT_ROUNDS_MAX ? (int)n : MCP_CONSENT_ROUNDS_MAX;
    json_decref(c->resume_state); /* nothing of the run is kept: it starts afresh */
    c->resume_state = NULL;
    if (action && !strcmp(action, "accept")) return true;
    if (action && (!strcmp(action, "decline") || !strcmp(action, "cancel"))) {
        json_t *res = mcp_tool_error_result("The user did not consent to the downstream server this tool needs: nothing was "
                                            "run. Call the tool again to be asked again.");
        respond(out, res ? mcp_jsonrpc_result(m->id, res) : NULL);
        json_decref(res);
        return false;
    }
    char msg[200];
    snprintf(msg, sizeof msg, "Invalid params: inputResponses must answer %.64s (accept, decline or cancel)", key);
    respond_error(out, m->id, MCP_INVALID_PARAMS, msg);
    return false;
}

/* A modern call may ask its client through input-required rounds: take the state key, the
 * answers and the state to go on from (checked here: a bad one is the request's error). */
static bool setup_rounds(mcp_call *c, const mcp_message *m, const mcp_request_ctx *rc, const char *run,
                         mcp_outcome *out) {
    if (!rc || !rc->modern || !rc->state_key) return true;
    c->can_ask = true;
    c->client_caps = rc->client_caps;
    memcpy(c->state_key, rc->state_key, sizeof c->state_key);
    size_t n = strlen(rc->state_binding ? rc->state_binding : "") + strlen(run) + 2;
    if ((c->binding = malloc(n))) snprintf(c->binding, n, "%s\n%s", rc->state_binding ? rc->state_binding : "", run);
    json_t *ir = json_object_get(m->params, "inputResponses");
    c->input_responses = json_is_object(ir) ? gg_json_clone(ir) : json_object();
    json_t *rs = json_object_get(m->params, "requestState");
    if (!rs || json_is_null(rs)) return c->binding && c->input_responses;
    const char *why = "requestState must be a string";
    if (json_is_string(rs) && c->binding)
        c->resume_state = mcp_reqstate_open(c->state_key, c->binding, json_string_value(rs), &why);
    if (c->resume_state) {
        /* the sealed state names the record of its run's earlier rounds (32 hex digits) */
        const char *ex = json_string_value(json_object_get(c->resume_state, "execution"));
        if (ex && strlen(ex) == 32 && strspn(ex, "0123456789abcdef") == 32) memcpy(c->round_exec, ex, 33);
        /* a state sealed before nonces existed has none: it expires within the TTL */
        const char *nonce = json_string_value(json_object_get(c->resume_state, "nonce"));
        if (nonce && strlen(nonce) == 32 && strspn(nonce, "0123456789abcdef") == 32) memcpy(c->round_nonce, nonce, 33);
        json_int_t round = json_integer_value(json_object_get(c->resume_state, "round"));
        c->round = round > 0 && round < 1000000 ? (int)round : 1;
        json_object_del(c->resume_state, "nonce"); /* not the run's: the next round gets its own */
        json_object_del(c->resume_state, "round");
        return json_object_get(c->resume_state, "consent") ? consent_answer(c, m, out) : true;
    }
    char msg[300];
    snprintf(msg, sizeof msg, "Invalid params: %s", why);
    respond_error(out, m->id, MCP_INVALID_PARAMS, msg);
    return false;
}

/* Run the tool without holding this thread while it waits on downstream servers (see
 * mcp.h); providers without an asynchronous call run synchronously here. */
void mcp_call_start(mcp_call *c, const char *request_id, const char *key_id, const char *tenant,
                    const mcp_call_async *how) {
    c->sink = (mcp_sink){c->progress_token ? sink_progress : NULL, c->level != MCP_LOG_OFF ? sink_log : NULL, c};
    c->ctx = call_ctx(c, &c->sink, request_id, key_id, tenant, 0);
    c->ctx.outcome.fail_code = c->fail_code;
    c->ctx.outcome.missing_caps = &c->missing_caps;
    c->ctx.outcome.elicitation = &c->elicitation;
    c->ctx.run.resume = how->resume;
    c->ctx.run.resume_user = how->resume_user;
    c->ctx.run.accepted_ms = how->accepted_ms;
    if (c->sessions && c->emit) {
        c->ctx.client.request = call_client_request;
        c->ctx.client.user = c;
    }
    if (c->can_ask) {
        c->ctx.client.request = round_request;
        c->ctx.client.user = c;
        c->ctx.run.input_wait = &c->input_wait;
        c->ctx.run.resume_state = c->resume_state;
        /* a task's too: the gateway's tasks/cancel goes through mcp_call_cancel_flag, which
         * follows the adopted cell (tasks.c) */
        c->ctx.run.adopt_cancel = call_adopt_cancel;
        c->ctx.run.adopt_user = c;
    }
    c->done = how->done;
    c->done_user = how->user;
    mcp_provider *p = c->srv->provider;
    c->t0 = gg_now_ms();
    if (c->kind == CALL_FORWARD) {
        p->ops->forward(p, c->run, c->args, &c->ctx, call_async_done, c);
        return;
    }
    if (p->ops->call_tool_async) {
        p->ops->call_tool_async(p, mcp_call_tool(c), c->args, &c->ctx, call_async_done, c);
        return;
    }
    gg_error err = GG_ERROR_INIT;
    json_t *res = p->ops->call_tool(p, mcp_call_tool(c), c->args, &c->ctx, &err);
    call_async_done(c, res, &err);
    gg_error_clear(&err);
}

/* The response for what the provider returned (res consumed, err cleared). */
static char *finish_call(mcp_call *c, json_t *res, gg_error *errp) {
    gg_error err = *errp;
    *errp = (gg_error)GG_ERROR_INIT;
    char *out;
    if (gg_error_is_set(&err)) snprintf(c->fail_code, sizeof c->fail_code, "%s", err.code);
    if (c->input_wait && res && !gg_error_is_set(&err) && !call_cancelled(c)) {
        out = input_required(c, res);
        json_decref(res);
        return out;
    }
    if (call_cancelled(c) || strcmp(err.code, "cancelled") == 0) {
        json_decref(res);
        set_error(c, "cancelled", "Request cancelled");
        out = mcp_jsonrpc_error(c->id, MCP_REQUEST_CANCELLED, "Request cancelled", NULL);
    } else if (!res && c->missing_caps && !strcmp(err.code, "missing_capability")) {
        set_error(c, "failed", err.message);
        out = missing_capability_error(c->id, err.message ? err.message : "Missing required client capability", c->missing_caps);
    } else if (!res && c->elicitation && !strcmp(err.code, "url_elicitation_required")) {
        if (!c->modern) set_error(c, "failed", err.message); /* a round is no failure: consent_round says */
        out = c->modern ? consent_round(c)
                        : mcp_jsonrpc_error(c->id, MCP_URL_ELICITATION_REQUIRED,
                                            err.message ? err.message : "URL elicitation required", c->elicitation);
    } else if (c->kind == CALL_FORWARD) {
        out = finish_forward(c, res, &err);
    } else if (!res && gg_error_rpc_code(&err) == MCP_INVALID_PARAMS) { /* unknown_tool, invalid_params, ... */
        set_error(c, "failed", err.message);
        out = mcp_jsonrpc_error(c->id, MCP_INVALID_PARAMS, err.message ? err.message : "Invalid params", NULL);
    } else if (c->kind != CALL_TOOL) {
        out = finish_item(c, res, &err);
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
    if (c->modern)
        out = mcp_modern_shape(c->srv, c->kind == CALL_TOOL ? "tools/call" : c->kind == CALL_RESOURCE ? "resources/read"
                                       : c->kind == CALL_FORWARD ? c->run : "prompts/get", out);
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
bool mcp_call_may_wait(const mcp_call *c) { return !c->tool || !c->tool->pure; }

/* Whether the call may be tried on the calling thread with mcp_call_run_inline: the tool
 * only computes, nothing will be streamed (no progressToken, no log level), and it has not
 * outgrown the budget recently. */
bool mcp_call_can_inline(const mcp_call *c) {
    if (!c->tool || !c->tool->pure || c->progress_token || c->level != MCP_LOG_OFF) return false;
    long long off = atomic_load_explicit(&c->tool->inline_off_until, memory_order_relaxed);
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
    json_t *res = p->ops->call_tool(p, mcp_call_tool(c), c->args, &ctx, &err);
    if (!res && strcmp(err.code, "budget") == 0) {
        gg_error_clear(&err);
        json_array_clear(c->history);
        gg_strbuf_reset(&c->history_text);
        gg_strbuf_putc(&c->history_text, '[');
        tool *t = (tool *)c->tool; /* only its atomic counters change */
        int misses = (atomic_fetch_add_explicit(&t->inline_misses, 1, memory_order_relaxed) + 1);
        long long backoff = inline_backoff_ms(misses);
        if (backoff) atomic_store_explicit(&t->inline_off_until, (long long)gg_now_ms() + backoff, memory_order_relaxed);
        *over = true;
        return NULL;
    }
    if (atomic_load_explicit(&c->tool->inline_misses, memory_order_relaxed))
        atomic_store_explicit(&((tool *)c->tool)->inline_misses, 0, memory_order_relaxed);
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

/* What the server offers: tools always, resources, prompts and completions when the
 * provider has them. */
static json_t *server_caps(const mcp_server *s) {
    json_t *caps = json_pack("{s:{s:b},s:{}}", "tools", "listChanged", 1, "logging");
    /* the graph's own resources, and proxied ones (relayed to and from their downstream) */
    bool own = s->counts[L_RESOURCES] || s->counts[L_TEMPLATES] || (s->fwd & MCP_FORWARD_SUBSCRIBE);
    if (caps && mcp_server_has_resources(s))
        json_object_set_new(caps, "resources", json_pack("{s:b,s:b}", "subscribe", own, "listChanged", 1));
    if (caps && mcp_server_has_prompts(s)) json_object_set_new(caps, "prompts", json_pack("{s:b}", "listChanged", 1));
    if (caps && (s->completions || s->fwd)) json_object_set_new(caps, "completions", json_object());
    return caps;
}

/* serverInfo {name, version, title?} (the provider's, completed). */
static json_t *server_info(const mcp_server *s) {
    mcp_provider *p = s->provider;
    json_t *info = p->ops->server_info ? p->ops->server_info(p) : NULL;
    if (!json_is_object(info)) {
        json_decref(info);
        info = json_pack("{s:s,s:s}", "name", "graphgate", "version", GG_VERSION);
    }
    if (info && !json_object_get(info, "version")) json_object_set_new(info, "version", json_string(GG_VERSION));
    return info;
}

/* server/discover (2026-07-28): versions, capabilities, instructions; serverInfo in _meta. */
static void do_discover(mcp_server *s, const mcp_message *m, mcp_outcome *out) {
    json_t *res = json_pack("{s:o,s:o,s:{s:o}}", "supportedVersions", mcp_modern_versions(), "capabilities",
                            server_caps(s), "_meta", "io.modelcontextprotocol/serverInfo", server_info(s));
    const char *instr = s->provider->ops->instructions ? s->provider->ops->instructions(s->provider) : NULL;
    if (res && instr) json_object_set_new(res, "instructions", json_string(instr));
    /* the tasks extension: tasks/get, tasks/update, tasks/cancel are served (gateway tasks.c) */
    json_t *caps = json_object_get(res, "capabilities");
    if (caps) json_object_set_new(caps, "extensions", json_pack("{s:{}}", MCP_TASKS_EXTENSION));
    respond(out, res ? mcp_jsonrpc_result(m->id, res) : NULL);
    json_decref(res);
}

static void do_initialize(mcp_server *s, const mcp_message *m, mcp_outcome *out) {
    json_t *pv = json_object_get(m->params, "protocolVersion");
    if (!json_is_string(pv)) {
        respond_error(out, m->id, MCP_INVALID_PARAMS, "Invalid params: initialize needs a protocolVersion string");
        return;
    }
    const char *v = mcp_version_negotiate(json_string_value(pv));
    mcp_provider *p = s->provider;
    json_t *info = server_info(s);
    json_t *res = json_pack("{s:s,s:o,s:o}", "protocolVersion", v, "capabilities", server_caps(s), "serverInfo", info);
    const char *instr = p->ops->instructions ? p->ops->instructions(p) : NULL;
    if (res && instr) json_object_set_new(res, "instructions", json_string(instr));
    respond(out, res ? mcp_jsonrpc_result(m->id, res) : NULL);
    json_decref(res);
    out->initialize = true;
    json_t *cc = json_object_get(m->params, "capabilities");
    out->client_caps = MCP_CLIENT_CAPS_KNOWN | (json_object_get(cc, "elicitation") ? MCP_CLIENT_CAPS_ELICITATION : 0) |
                       (json_object_get(cc, "sampling") ? MCP_CLIENT_CAPS_SAMPLING : 0) |
                       (json_object_get(cc, "roots") ? MCP_CLIENT_CAPS_ROOTS : 0) |
                       (json_object_get(json_object_get(cc, "elicitation"), "url") ? MCP_CLIENT_CAPS_ELICITATION_URL : 0);
    snprintf(out->negotiated_version, sizeof out->negotiated_version, "%s", v);
}

static void do_list(mcp_server *s, int l, const mcp_message *m, mcp_outcome *out) {
    json_t *cursor = json_object_get(m->params, "cursor");
    long page = 0;
    if (cursor && !json_is_null(cursor)) {
        if (!json_is_string(cursor) || (page = page_of_cursor(&s->lists[l], json_string_value(cursor))) < 0) {
            respond_error(out, m->id, MCP_INVALID_PARAMS, "Invalid params: unknown cursor");
            return;
        }
    }
    respond(out, mcp_jsonrpc_result_raw(m->id, s->lists[l].pages[page]));
}

/* A known tool's call refused for its arguments: noted in the outcome for the transport to
 * record (mcp_outcome.refused_*), whatever answer the caller gets. */
static void note_refusal(mcp_outcome *out, const mcp_message *m, const char *why) {
    out->refused_tool = strdup(json_string_value(json_object_get(m->params, "name")));
    out->refused_error = strdup(why);
    json_t *args = json_object_get(m->params, "arguments");
    out->refused_args = args ? json_incref(args) : json_object();
}

/* e: from mcp_tool_check_arguments, whose message names the tool and the argument. */
static void invalid_arguments(mcp_outcome *out, const mcp_message *m, const gg_error *e) {
    json_t *res = mcp_tool_error_result(e->message ? e->message : "Invalid arguments");
    respond(out, res ? mcp_jsonrpc_result(m->id, res) : NULL);
    json_decref(res);
    note_refusal(out, m, e->message ? e->message : "Invalid arguments");
}

/* -32021 with msg, naming as ClientCapabilities what the call needs and the request did not
 * declare. */
static char *missing_capability_error(json_t *id, const char *msg, int missing) {
    json_t *need = json_object();
    if (missing & MCP_CLIENT_CAPS_ELICITATION) json_object_set_new(need, "elicitation", json_object());
    if (missing & MCP_CLIENT_CAPS_ELICITATION_URL) json_object_set_new(need, "elicitation", json_pack("{s:{}}", "url"));
    if (missing & MCP_CLIENT_CAPS_SAMPLING) json_object_set_new(need, "sampling", json_object());
    if (missing & MCP_CLIENT_CAPS_ROOTS) json_object_set_new(need, "roots", json_object());
    if (missing & MCP_CLIENT_CAPS_TASKS)
        json_object_set_new(need, "extensions", json_pack("{s:{}}", MCP_TASKS_EXTENSION));
    json_t *data = json_pack("{s:o}", "requiredCapabilities", need);
    char *body = mcp_jsonrpc_error(id, MCP_MISSING_CAPABILITY, msg, data);
    json_decref(data);
    return body;
}

static void missing_capability(mcp_outcome *out, json_t *id, const char *tool, int missing) {
    char msg[300];
    snprintf(msg, sizeof msg, "Missing required client capability: tool %.150s asks the client for input it did not declare", tool);
    respond(out, missing_capability_error(id, msg, missing));
}

/* "Unknown tool: digst; did you mean 'digest'?; tools: digest, summarize" — the closest
 * name and, for a server with few tools, all of them (gg_suggest). */
static void unknown_tool(mcp_outcome *out, json_t *id, const mcp_server *s, const char *name) {
    gg_strbuf b = GG_STRBUF_INIT;
    const char **names = s->ntools ? malloc(s->ntools * sizeof *names) : NULL;
    gg_strbuf_printf(&b, "Unknown tool: %.200s", name);
    for (size_t i = 0; names && i < s->ntools; i++) names[i] = s->tools[i].name;
    if (names) gg_suggest(&b, name, (const char *const *)names, s->ntools, "tools");
    free(names);
    respond_error(out, id, MCP_INVALID_PARAMS, b.data && !b.oom ? b.data : "Unknown tool");
    gg_strbuf_free(&b);
}

/* A tool the provider withholds for now (provider.h, tool_withheld): its error, with the
 * code in data so a client can tell it from a typo. */
static bool withheld_tool(mcp_outcome *out, json_t *id, const mcp_server *s, const char *name) {
    gg_error err = GG_ERROR_INIT;
    if (!s->provider->ops->tool_withheld || !s->provider->ops->tool_withheld(s->provider, name, &err)) return false;
    json_t *data = json_pack("{s:s,s:s}", "code", err.code, "tool", name);
    respond(out, mcp_jsonrpc_error(id, gg_error_rpc_code(&err), err.message ? err.message : err.code, data));
    json_decref(data);
    gg_error_clear(&err);
    return true;
}

static void do_tools_call(mcp_server *s, const mcp_message *m, const mcp_request_ctx *rc, mcp_outcome *out) {
    static const gg_json_key keys[] = {GG_JSON_KEY("name"), GG_JSON_KEY("arguments"), GG_JSON_KEY("_meta"),
                                        GG_JSON_KEY("requestState")};
    json_t *pm[4];
    gg_json_members(m->params, 4, keys, pm); /* one walk, not four lookups */
    json_t *name = pm[0], *args = pm[1], *meta = pm[2];
    if (!json_is_string(name)) {
        respond_error(out, m->id, MCP_INVALID_PARAMS, "Invalid params: tools/call needs a tool name");
        return;
    }
    if (args && !json_is_null(args) && !json_is_object(args)) {
        respond_error(out, m->id, MCP_INVALID_PARAMS, "Invalid params: arguments must be an object");
        if (find_tool(s, json_string_value(name))) note_refusal(out, m, "Invalid params: arguments must be an object");
        return;
    }
    const tool *t = find_tool(s, json_string_value(name));
    if (!t && withheld_tool(out, m->id, s, json_string_value(name))) return;
    if (!t) {
        unknown_tool(out, m->id, s, json_string_value(name));
        return;
    }
    if (rc && rc->modern && (t->needs & ~rc->client_caps & (MCP_CLIENT_CAPS_ELICITATION | MCP_CLIENT_CAPS_SAMPLING | MCP_CLIENT_CAPS_ROOTS))) {
        missing_capability(out, m->id, t->name, t->needs & ~rc->client_caps);
        return;
    }
    bool tasks_ok = rc && rc->modern && (rc->client_caps & MCP_CLIENT_CAPS_TASKS);
    if (t->task_support == 2 && !tasks_ok) {
        missing_capability(out, m->id, t->name, MCP_CLIENT_CAPS_TASKS);
        return;
    }
    json_t *token = json_object_get(meta, "progressToken");
    if (token && !json_is_string(token) && !json_is_integer(token)) token = NULL;
    mcp_call *c = call_alloc();
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
    c->modern = rc && rc->modern;
    if (c->modern) c->client_caps = rc->client_caps;
    /* afterInput: the first round runs as an ordinary call (its input-required results are
     * the client's to answer); the round carrying the answers and the state becomes a task */
    c->as_task = tasks_ok && t->task_support > 0 && (!t->task_after_input || json_is_string(pm[3]));
    c->history = json_array();
    c->status = "running";
    gg_trace_parse(&c->trace, json_string_value(json_object_get(meta, "traceparent")),
                   json_string_value(json_object_get(meta, "tracestate")));
    gg_error e = GG_ERROR_INIT;
    if (!mcp_tool_check_arguments(t->input, t->name, c->args, &e)) {
        invalid_arguments(out, m, &e);
        gg_error_clear(&e);
        mcp_call_free(c);
        return;
    }
    if (!setup_rounds(c, m, rc, t->name, out)) {
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

/* A request the provider answers through its downstream servers: a call the transport runs
 * like a tools/call (unrecorded: mcp_call_forwarded). */
static void do_forward(mcp_server *s, const mcp_message *m, mcp_outcome *out) {
    mcp_call *c = call_alloc();
    if (!c || !(c->run = strdup(m->method)) || !(c->args = m->params ? gg_json_clone(m->params) : json_object())) {
        if (c) free(c->run);
        free(c);
        respond_error(out, m->id, MCP_INTERNAL_ERROR, "Internal error: out of memory");
        return;
    }
    c->srv = mcp_server_ref(s);
    c->kind = CALL_FORWARD;
    c->id = json_incref(m->id);
    c->level = MCP_LOG_OFF;
    c->history = json_array();
    c->status = "running";
    out->kind = MCP_OUT_CALL;
    out->call = c;
}

static void do_complete(mcp_server *s, const mcp_message *m, mcp_outcome *out) {
    json_t *ref = json_object_get(m->params, "ref"), *arg = json_object_get(m->params, "argument");
    const char *type = json_string_value(json_object_get(ref, "type"));
    const char *name = json_string_value(json_object_get(arg, "name"));
    const char *value = json_string_value(json_object_get(arg, "value"));
    const char *target = json_string_value(json_object_get(ref, !type || strcmp(type, "ref/resource") ? "name" : "uri"));
    if (!type || !json_is_object(arg) || !name || !value || !target ||
        (strcmp(type, "ref/prompt") && strcmp(type, "ref/resource"))) {
        respond_error(out, m->id, MCP_INVALID_PARAMS,
                      "Invalid params: completion/complete needs ref {type: ref/prompt, name} or {type: ref/resource, uri} "
                      "and argument {name, value}");
        return;
    }
    mcp_provider *p = s->provider;
    json_t *vals = p->ops->complete ? p->ops->complete(p, type, target, name, value) : NULL;
    if (!vals && s->fwd) { /* not one of the graph's own: maybe a proxied prompt's or template's */
        do_forward(s, m, out);
        return;
    }
    size_t total = json_array_size(vals);
    while (json_array_size(vals) > 100) json_array_remove(vals, json_array_size(vals) - 1);
    json_t *res = json_pack("{s:{s:o,s:I,s:b}}", "completion", "values", vals ? vals : json_array(), "total",
                            (json_int_t)total, "hasMore", total > 100);
    respond(out, res ? mcp_jsonrpc_result(m->id, res) : NULL);
    json_decref(res);
}

/* The spec's resource-not-found error, naming the URI in data. */
static void resource_not_found(mcp_outcome *out, json_t *id, const char *uri) {
    char msg[400];
    snprintf(msg, sizeof msg, "Resource not found: %.300s", uri);
    json_t *data = json_pack("{s:s}", "uri", uri);
    respond(out, mcp_jsonrpc_error(id, MCP_RESOURCE_NOT_FOUND, msg, data));
    json_decref(data);
}

/* resources/read, prompts/get: a static item answers here; one produced by nodes becomes a
 * call the transport runs like a tools/call. */
static void do_get(mcp_server *s, const mcp_message *m, const mcp_request_ctx *rc, call_kind kind, const char *key, json_t *args,
                   mcp_outcome *out) {
    mcp_provider *p = s->provider;
    json_t *value = NULL, *run_args = NULL;
    char *run = NULL;
    json_t *item = p->ops->lookup ? p->ops->lookup(p, kind == CALL_RESOURCE ? "resource" : "prompt", key, args, &value, &run, &run_args) : NULL;
    char msg[400];
    if (!item && (s->fwd & (kind == CALL_RESOURCE ? MCP_FORWARD_RESOURCES : MCP_FORWARD_PROMPTS))) {
        do_forward(s, m, out); /* not the graph's own: a proxied one, or the downstream says so */
        return;
    }
    if (!item) {
        snprintf(msg, sizeof msg, "Unknown prompt: %.300s", key);
        if (kind == CALL_RESOURCE) resource_not_found(out, m->id, key);
        else respond_error(out, m->id, MCP_INVALID_PARAMS, msg);
        return;
    }
    if (value) {
        char why[300];
        json_t *res = shape_item(kind, item, key, value, why, sizeof why);
        if (res) respond(out, mcp_jsonrpc_result(m->id, res));
        else respond_error(out, m->id, MCP_INTERNAL_ERROR, why);
        json_decref(res);
        json_decref(value);
        json_decref(item);
        return;
    }
    mcp_call *c = run ? call_alloc() : NULL;
    if (!c) {
        free(run);
        json_decref(run_args);
        json_decref(item);
        respond_error(out, m->id, MCP_INTERNAL_ERROR, "Internal error: out of memory");
        return;
    }
    c->srv = mcp_server_ref(s);
    c->kind = kind;
    c->run = run;
    c->uri = kind == CALL_RESOURCE ? strdup(key) : NULL;
    c->item = item;
    c->id = json_incref(m->id);
    c->args = run_args;
    c->level = MCP_LOG_OFF;
    c->history = json_array();
    c->status = "running";
    if (!setup_rounds(c, m, rc, run, out)) {
        mcp_call_free(c);
        return;
    }
    out->kind = MCP_OUT_CALL;
    out->call = c;
}

/* resources/subscribe|unsubscribe: a URI the graph serves (fixed or through a template);
 * the transport remembers it for the session (mcp_outcome.subscribe). */
static void do_subscribe(mcp_server *s, const mcp_message *m, const char *uri, mcp_outcome *out) {
    mcp_provider *p = s->provider;
    json_t *value = NULL, *run_args = NULL;
    char *run = NULL;
    json_t *item = p->ops->lookup ? p->ops->lookup(p, "resource", uri, NULL, &value, &run, &run_args) : NULL;
    json_decref(value);
    json_decref(run_args);
    free(run);
    if (!item && (s->fwd & MCP_FORWARD_SUBSCRIBE)) { /* maybe a proxied URI: its downstream decides */
        do_forward(s, m, out);
    } else if (!item) {
        resource_not_found(out, m->id, uri);
        return;
    } else {
        json_decref(item);
        respond(out, mcp_jsonrpc_result_raw(m->id, "{}"));
    }
    /* remembered for the session at once; a proxied URI refused stays there unused until
     * unsubscribed (within the session's 64) */
    out->subscribe = strcmp(m->method, "resources/subscribe") ? -1 : 1;
    out->subscribe_uri = strdup(uri);
}

/* prompts/get arguments: an object of strings with every required argument. */
static bool prompt_args_ok(const mcp_server *s, const char *name, json_t *args, char *why, size_t n) {
    if (args && !json_is_object(args)) return snprintf(why, n, "Invalid params: arguments must be an object") < 0;
    const char *k;
    json_t *v;
    json_object_foreach(args, k, v) if (!json_is_string(v)) return snprintf(why, n, "Invalid params: argument %.100s must be a string", k) < 0;
    json_t *prompt = NULL, *a;
    size_t i;
    json_t *all = s->provider->ops->list_prompts ? s->provider->ops->list_prompts(s->provider) : NULL;
    json_array_foreach(all, i, a) if (!strcmp(json_string_value(json_object_get(a, "name")), name)) prompt = a;
    bool ok = true;
    json_array_foreach(json_object_get(prompt, "arguments"), i, a) {
        const char *an = json_string_value(json_object_get(a, "name"));
        if (ok && json_is_true(json_object_get(a, "required")) && !json_object_get(args, an)) {
            snprintf(why, n, "Invalid params: prompt %.100s needs argument %.100s", name, an);
            ok = false;
        }
    }
    json_decref(all);
    return ok;
}

static void do_extras(mcp_server *s, const mcp_message *m, const mcp_request_ctx *rc, mcp_outcome *out) {
    const char *meth = m->method;
    const char *uri = json_string_value(json_object_get(m->params, "uri"));
    const char *name = json_string_value(json_object_get(m->params, "name"));
    char why[300];
    bool resources = mcp_server_has_resources(s);
    bool fwd_list = (s->fwd & (meth[0] == 'r' ? MCP_FORWARD_RESOURCES : MCP_FORWARD_PROMPTS)) &&
                    (!strcmp(meth, "resources/list") || !strcmp(meth, "resources/templates/list") || !strcmp(meth, "prompts/list"));
    if (!(meth[0] == 'r' ? resources : mcp_server_has_prompts(s))) { /* not advertised: not there */
        snprintf(why, sizeof why, "Method not found: %.150s (the graph declares no %s)", meth,
                 meth[0] == 'r' ? "resources" : "prompts");
        respond_error(out, m->id, MCP_METHOD_NOT_FOUND, why);
    } else if (fwd_list) do_forward(s, m, out); /* the graph's own items come first in its answer */
    else if (!strcmp(meth, "resources/list")) do_list(s, L_RESOURCES, m, out);
    else if (!strcmp(meth, "resources/templates/list")) do_list(s, L_TEMPLATES, m, out);
    else if (!strcmp(meth, "prompts/list")) do_list(s, L_PROMPTS, m, out);
    else if (!strcmp(meth, "prompts/get") && !name) respond_error(out, m->id, MCP_INVALID_PARAMS, "Invalid params: prompts/get needs a name");
    else if (!strcmp(meth, "prompts/get") && !prompt_args_ok(s, name, json_object_get(m->params, "arguments"), why, sizeof why))
        respond_error(out, m->id, MCP_INVALID_PARAMS, why);
    else if (!strcmp(meth, "prompts/get")) do_get(s, m, rc, CALL_PROMPT, name, json_object_get(m->params, "arguments"), out);
    else if (strcmp(meth, "resources/read") && strcmp(meth, "resources/subscribe") && strcmp(meth, "resources/unsubscribe")) {
        snprintf(why, sizeof why, "Method not found: %.150s", meth);
        respond_error(out, m->id, MCP_METHOD_NOT_FOUND, why);
    } else if (!uri) {
        snprintf(why, sizeof why, "Invalid params: %.100s needs a uri", meth);
        respond_error(out, m->id, MCP_INVALID_PARAMS, why);
    } else if (!strcmp(meth, "resources/read")) do_get(s, m, rc, CALL_RESOURCE, uri, NULL, out);
    else do_subscribe(s, m, uri, out);
}

static void do_notification(const mcp_message *m, mcp_outcome *out) {
    out->kind = MCP_OUT_ACCEPTED;
    if (strcmp(m->method, "notifications/cancelled") == 0) {
        json_t *rid = json_object_get(m->params, "requestId");
        if (json_is_string(rid) || json_is_number(rid)) out->cancel_id = json_incref(rid);
    }
    /* notifications/initialized, progress, roots/list_changed, unknown ones: accepted */
}

/* Methods of the session era that 2026-07-28 removed (initialize selects that era instead). */
static bool session_only(const char *meth) {
    static const char *const gone[] = {"initialize", "ping", "logging/setLevel", "resources/subscribe",
                                       "resources/unsubscribe"};
    for (size_t i = 0; i < sizeof gone / sizeof *gone; i++)
        if (!strcmp(meth, gone[i])) return true;
    return false;
}

/* Dispatch one message; see mcp.h. */
void mcp_server_dispatch(mcp_server *s, const mcp_message *m, const mcp_request_ctx *rc, mcp_outcome *out) {
    memset(out, 0, sizeof *out);
    out->set_log_level = -1;
    switch (m->kind) {
    case MCP_MSG_INVALID:
        respond_error(out, m->id, m->error_code, m->error_message);
        return;
    case MCP_MSG_RESPONSE: /* to a request of an elicit or sample node: the session routes it */
        out->kind = MCP_OUT_ACCEPTED;
        out->response_id = json_incref(m->id);
        out->response_result = json_incref(m->result);
        out->response_error = json_incref(m->error);
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
    bool modern = rc && rc->modern;
    if (modern ? session_only(meth) : !strcmp(meth, "server/discover")) {
        char msg[200];
        snprintf(msg, sizeof msg, "Method not found: %.100s (not part of protocol version %s)", meth,
                 modern ? MCP_VERSION_MODERN : "2025-11-25 and earlier");
        respond_error(out, m->id, MCP_METHOD_NOT_FOUND, msg);
    } else if (strcmp(meth, "server/discover") == 0) do_discover(s, m, out);
    else if (strcmp(meth, "tools/call") == 0) do_tools_call(s, m, rc, out);
    else if (strcmp(meth, "tools/list") == 0) do_list(s, L_TOOLS, m, out);
    else if (!strncmp(meth, "resources/", 10) || !strncmp(meth, "prompts/", 8)) do_extras(s, m, rc, out);
    else if (strcmp(meth, "ping") == 0) respond(out, mcp_jsonrpc_result_raw(m->id, "{}"));
    else if (strcmp(meth, "initialize") == 0) do_initialize(s, m, out);
    else if (strcmp(meth, "logging/setLevel") == 0) do_set_level(m, out);
    else if (strcmp(meth, "completion/complete") == 0) do_complete(s, m, out);
    else {
        char msg[200];
        snprintf(msg, sizeof msg, "Method not found: %.150s", meth);
        respond_error(out, m->id, MCP_METHOD_NOT_FOUND, msg);
    }
    if (out->kind == MCP_OUT_RESPONSE && !out->body) /* only OOM leaves no body */
        out->body = strdup("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32603,\"message\":\"Internal error\"}}");
    if (modern && out->kind == MCP_OUT_RESPONSE) out->body = mcp_modern_shape(s, meth, out->body);
    if (modern && out->kind == MCP_OUT_CALL) out->call->modern = true;
}

/* Release what an outcome still owns (body, an untaken call, the cancel id). */
void mcp_outcome_clear(mcp_outcome *out) {
    free(out->body);
    mcp_call_free(out->call);
    json_decref(out->cancel_id);
    free(out->subscribe_uri);
    json_decref(out->response_id);
    json_decref(out->response_result);
    json_decref(out->response_error);
    free(out->refused_tool);
    free(out->refused_error);
    json_decref(out->refused_args);
    memset(out, 0, sizeof *out);
    out->set_log_level = -1;
}
