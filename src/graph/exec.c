/* exec.c — runs one tool of a compiled graph: walks nodes from entry to exit, keeps the
 * context {nodeId: latest output} and the ordered history, checks limits and cancellation
 * before every node, and calls hooks. A run owns its state; the graph is only read. */
#include "graph/internal.h"

#include <stdatomic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct hrec {
    int node;
    json_t *output;
} hrec;

/* A run: everything it needs to go on from where it stopped, so that it can wait for a
 * downstream answer without a thread (gg_graph_run_advance yields, the answer wakes it) and
 * be saved as JSON and restored (gg_graph_run_save/restore). Runs of gg_graph_execute live
 * on its stack; runs of gg_graph_run_new on the heap. */
typedef struct grun {
    gg_graph *g;
    const gtool *t;
    const gg_graph_run_options *opts;
    hrec *hist;
    size_t nhist, chist;
    int **per_node;      /* per node: positions in hist */
    size_t *per_count, *per_cap;
    /* One allocation holds order, per_node, per_count, per_cap, the first HIST_FIRST history
     * entries and PER_FIRST positions per node; only longer runs (loops) allocate more. */
    void *block;
    hrec *hist_first;
    int *pos_first;
    json_t *context;     /* {nodeId: latest output}, rebuilt only when read after a change */
    int *order;          /* node indices, most recently completed first */
    size_t norder;
    bool context_stale;
    jsonata_options jopts;
    long held_bytes;     /* estimated size of the node outputs the run keeps (history) */
    double start_ms;     /* monotonic clock at the start of the run */
    long long start_wall; /* wall clock at the same moment */
    double now;          /* monotonic clock when the current node started */
    /* when the node that just completed ended (0: none since run_advance was entered): the
     * next node starts then, so one clock read serves both */
    double ended_at;
    /* where the run is */
    gg_graph_result *res;
    json_t *args;
    int cur;             /* node to execute next (or the mcp node waiting) */
    bool want_history, record_inputs, ended, ok;
    /* an mcp node waiting for its downstream answer */
    bool waiting, wait_limited;
    _Atomic int rendezvous; /* the starter and the answer meet; the second continues */
    double wait_t0;
    json_t *wait_input;
    json_t *reply;
    gg_error reply_err;
    _Atomic int relayed; /* the downstream's requests relayed to the caller (relay_request) */
    double relay_sent_ms[2]; /* when the last relayed progress / log went out (relay_notify) */
    double relay_progress;   /* the last relayed progress value: later ones must exceed it */
    /* a for_caller server's client holding the caller's token for the call in flight
     * (user_client), released when its answer is taken (exec_mcp_finish) or the run goes */
    gserver *held_server;
    mcp_client *held_client;
    /* a 2026-07-28 caller: the downstream's requests waiting for its answer (relay_park);
     * relay_mu guards them and opts against gg_graph_run_rebind (the transport's thread
     * reads opts while relaying) */
    pthread_mutex_t relay_mu;
    struct relay_wait {
        char key[24];
        char *method;
        json_t *params;
        mcp_client_reply *reply;
    } relay_wait[16];
    int nrelay_wait;
    void (*wake)(void *user); /* opts->wake, kept: opts may be rebound while a reply comes */
    void *wake_user;
    /* an ask node: the request asked next, the answers so far (kept across rounds in the
     * saved state), the requests' params, and whether some wait for a later round */
    int ask_i;
    json_t *ask_out, *ask_in;
    bool ask_parked;
    json_t *bindings;    /* {client: {capabilities}} once an expression asked for $client */
    gg_graph_result own_res; /* heap runs keep their result here */
    struct run_tel *tel; /* spans of the current node and its downstream call; NULL when
                            telemetry is off or the trace is not sampled (no allocation) */
} grun;

/* ---- spans (see telemetry.h): one per node, one per downstream call ---------------------- */

typedef struct run_tel {
    gg_span node, client;
} run_tel;

/* Spans only for a run whose caller's trace is recorded (or a new one) while the exporter
 * runs: with telemetry off this is one atomic load per run. */
static void tel_setup(grun *r) {
    const gg_trace_ctx *parent = r->opts ? r->opts->trace : NULL;
    if (!gg_tel_enabled() || (parent && parent->valid && !(parent->flags & 1))) return;
    r->tel = malloc(sizeof *r->tel);
    if (r->tel) r->tel->node.recording = r->tel->client.recording = false;
}

static void tel_node_begin(grun *r, const gnode *n, const char *type, double t0) {
    if (!r->tel) return;
    char name[96];
    snprintf(name, sizeof name, "%s %s", type, n->id);
    gg_span *s = &r->tel->node;
    gg_span_begin_at(s, r->opts ? r->opts->trace : NULL, GG_SPAN_INTERNAL, name, gg_tel_mono_to_wall_ns(t0));
    gg_span_attr_str(s, "graphgate.node.id", n->id);
    gg_span_attr_str(s, "graphgate.node.type", type);
    gg_span_attr_int(s, "graphgate.node.execution_index", (long long)r->nhist);
}

/* A node's input or output on its span, only when the operator asked for values. */
static void tel_value(gg_span *s, const char *key, json_t *v) {
    size_t max = gg_tel_value_max();
    if (!max || !v || !s->recording) return;
    char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!text) return;
    if (strlen(text) > max) text[max] = 0;
    gg_span_attr_str(s, key, text);
    free(text);
}

static void tel_node_end(grun *r, double t1, json_t *input, json_t *out, const gg_error *e) {
    if (!r->tel) return;
    gg_span *s = &r->tel->node;
    tel_value(s, "graphgate.node.input", input);
    tel_value(s, "graphgate.node.output", out);
    if (gg_error_is_set(e)) {
        gg_span_attr_str(s, "graphgate.error.code", e->code);
        gg_span_set_error(s, e->message);
    }
    gg_span_end_at(s, gg_tel_mono_to_wall_ns(t1));
}

/* The context a downstream call carries: its client span's (a child of the node's span),
 * or, not recording, the caller's own so the trace still passes through. */
static const gg_trace_ctx *tel_client_begin(grun *r, const gnode *n) {
    if (!r->tel) return r->opts && r->opts->trace && r->opts->trace->valid ? r->opts->trace : NULL;
    gg_span *s = &r->tel->client;
    char name[96];
    snprintf(name, sizeof name, "tools/call %s", n->tool);
    gg_span_begin(s, &r->tel->node.ctx, GG_SPAN_CLIENT, name);
    gg_span_attr_str(s, "rpc.system", "mcp");
    gg_span_attr_str(s, "rpc.method", "tools/call");
    gg_span_attr_str(s, "graphgate.mcp.server", n->server->name);
    gg_span_attr_str(s, "graphgate.mcp.tool", n->tool);
    gg_span_attr_str(s, "graphgate.mcp.transport", n->server->cfg.transport == MCP_TRANSPORT_HTTP ? "http" : "stdio");
    return s->ctx.valid ? &s->ctx : NULL;
}

static void tel_client_end(grun *r, const gg_error *e) {
    if (!r->tel) return;
    if (e && gg_error_is_set(e)) {
        gg_span_attr_str(&r->tel->client, "graphgate.error.code", e->code);
        gg_span_set_error(&r->tel->client, e->message);
    }
    gg_span_end(&r->tel->client);
}

struct gg_graph_run {
    grun r;
};

/* ---- history functions ($previousNode & co.) ------------------------------------------ */

static int node_index(const grun *r, const char *id) {
    for (size_t i = 0; i < r->t->nnodes; i++)
        if (!strcmp(r->t->nodes[i].id, id)) return (int)i;
    return -1;
}

static bool arg_number(json_t *v, double *out) {
    if (!v || !json_is_number(v)) return false;
    *out = json_number_value(v);
    return isfinite(*out);
}

static json_t *fn_previous_node(jsonata_call *call, json_t **args, int nargs, void *user, void *call_user, gg_error *err) {
    grun *r = call_user;
    double off = 1;
    if (nargs > 0 && args[0] && !arg_number(args[0], &off)) {
        gg_error_set(err, "T0410", "Argument 1 of function \"previousNode\" must be a number");
        return NULL;
    }
    if (!r) return json_null();
    double idx = (double)r->nhist - floor(off);
    if (idx < 0 || idx >= (double)r->nhist) return json_null();
    return json_incref(r->hist[(size_t)idx].output);
}

static const char *arg_id(json_t **args, int nargs, const char *fn, gg_error *err) {
    if (nargs < 1 || !args[0] || !json_is_string(args[0])) {
        gg_error_set(err, "T0410", "Argument 1 of function \"%s\" must be a node id string", fn);
        return NULL;
    }
    return json_string_value(args[0]);
}

static json_t *fn_execution_count(jsonata_call *call, json_t **args, int nargs, void *user, void *call_user, gg_error *err) {
    grun *r = call_user;
    const char *id = arg_id(args, nargs, "executionCount", err);
    if (!id) return NULL;
    int n = r ? node_index(r, id) : -1;
    return json_integer(n < 0 ? 0 : (json_int_t)r->per_count[n]);
}

static json_t *fn_node_execution(jsonata_call *call, json_t **args, int nargs, void *user, void *call_user, gg_error *err) {
    grun *r = call_user;
    const char *id = arg_id(args, nargs, "nodeExecution", err);
    if (!id) return NULL;
    double want = 0;
    if (nargs < 2 || !arg_number(args[1], &want)) {
        gg_error_set(err, "T0410", "Argument 2 of function \"nodeExecution\" must be a number");
        return NULL;
    }
    int n = r ? node_index(r, id) : -1;
    if (n < 0) return json_null();
    double cnt = (double)r->per_count[n];
    double idx = want < 0 ? cnt + floor(want) : floor(want);
    if (idx < 0 || idx >= cnt) return json_null();
    return json_incref(r->hist[r->per_node[n][(size_t)idx]].output);
}

static json_t *fn_node_executions(jsonata_call *call, json_t **args, int nargs, void *user, void *call_user, gg_error *err) {
    grun *r = call_user;
    const char *id = arg_id(args, nargs, "nodeExecutions", err);
    if (!id) return NULL;
    json_t *out = json_array();
    int n = r ? node_index(r, id) : -1;
    for (size_t i = 0; out && n >= 0 && i < r->per_count[n]; i++) {
        json_t *o = r->hist[r->per_node[n][i]].output; /* NULL: the node yielded undefined */
        json_array_append(out, o ? o : json_null());
    }
    return out;
}

static const struct {
    const char *name;
    jsonata_native_fn fn;
} history_fns[] = {{"previousNode", fn_previous_node},
                   {"executionCount", fn_execution_count},
                   {"nodeExecution", fn_node_execution},
                   {"nodeExecutions", fn_node_executions}};

/* A history function where there is no run (user: its name): saying so beats answering
 * null, which would look like a run that had not executed the node yet. */
static json_t *fn_no_history(jsonata_call *call, json_t **args, int nargs, void *user, void *call_user, gg_error *err) {
    gg_error_set(err, "no_history", "$%s reads the history of a graph run and there is none here; give one with --history FILE",
                 (const char *)user);
    return NULL;
}

static jsonata_env *history_env(bool with_run, gg_error *err) {
    jsonata_env *env = jsonata_env_new();
    if (!env) {
        gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < sizeof history_fns / sizeof *history_fns; i++) {
        const char *name = history_fns[i].name;
        if (!jsonata_env_register(env, name, NULL, with_run ? history_fns[i].fn : fn_no_history, (void *)name, err)) {
            jsonata_env_free(env);
            return NULL;
        }
    }
    return env;
}

/* The environment every expression of a graph compiles against. */
jsonata_env *gg_graph_history_env(gg_error *err) { return history_env(true, err); }

/* See graph.h. */
jsonata_env *gg_graph_expr_env(bool with_history, gg_error *err) { return history_env(with_history, err); }

/* ---- JSON Logic var resolver: a string var is a JSONata expression on the context ------ */

/* A compiled var. Most rule vars are plain paths into the context ("$.node.field",
 * "node.field"); those are walked directly on the JSON as long as every step meets an object
 * and the value found is not an array — exactly where JSONata's path semantics reduce to
 * member lookup — and JSONata evaluates everything else. */
typedef struct gvar {
    jsonata_expr *expr;
    char **keys;   /* the path's names when it is plain; NULL otherwise */
    size_t nkeys;
} gvar;

static bool plain_name(const char *s, size_t n) {
    static const char *const reserved[] = {"and", "or", "in", "true", "false", "null", "function"};
    if (!n || !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_')) return false;
    for (size_t i = 1; i < n; i++)
        if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return false;
    for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++)
        if (strlen(reserved[i]) == n && !memcmp(reserved[i], s, n)) return false;
    return true;
}

/* Split "$.a.b" / "a.b" into names; false (and nothing kept) unless every step is plain. */
static bool plain_path(gvar *v, const char *path) {
    const char *p = !strncmp(path, "$.", 2) ? path + 2 : path;
    size_t n = 1;
    for (const char *q = p; *q; q++) n += *q == '.';
    char **keys = calloc(n, sizeof *keys);
    if (!keys) return false;
    size_t k = 0;
    for (const char *q = p;; k++) {
        const char *dot = strchr(q, '.');
        size_t len = dot ? (size_t)(dot - q) : strlen(q);
        if (!plain_name(q, len) || !(keys[k] = strndup(q, len))) {
            for (size_t i = 0; i < k; i++) free(keys[i]);
            free(keys);
            return false;
        }
        if (!dot) break;
        q = dot + 1;
    }
    v->keys = keys;
    v->nkeys = k + 1;
    return true;
}

static void resolver_free(void *user, void *compiled) {
    gvar *v = compiled;
    if (!v) return;
    jsonata_free(v->expr);
    for (size_t i = 0; i < v->nkeys; i++) free(v->keys[i]);
    free(v->keys);
    free(v);
}

static void *resolver_compile(void *user, const char *path, gg_error *err) {
    gg_graph *g = user;
    gvar *v = calloc(1, sizeof *v);
    if (!v) {
        gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    v->expr = jsonata_compile(*path ? path : "$", g->env, err);
    if (!v->expr) {
        free(v);
        return NULL;
    }
    plain_path(v, path); /* an optimisation only: without it JSONata evaluates the path */
    return v;
}

/* $caller: who made the call — {key_id, scopes: [names]} for an API key, plus issuer, sub
 * and client_id for an OAuth access token (never the token itself). */
static json_t *caller_binding(const mcp_caller *who) {
    json_t *scopes = json_array();
    for (const char *s = who->scopes, *e; s && *s; s = *e ? e + 1 : e) {
        e = strchr(s, ',');
        if (!e) e = s + strlen(s);
        if (e > s) json_array_append_new(scopes, json_stringn(s, (size_t)(e - s)));
    }
    json_t *c = json_pack("{s:s,s:s,s:o}", "kind", who->issuer ? "oauth" : "api_key", "key_id", who->key_id,
                          "scopes", scopes);
    if (c && who->issuer)
        json_object_update_new(c, json_pack("{s:s,s:s,s:s}", "issuer", who->issuer, "sub", who->subject,
                                             "client_id", who->client_id));
    return c;
}

/* The $variables an expression may use, bound only for the expressions that name them
 * (building the bindings costs a conversion per run):
 * - $client = {capabilities: {elicitation?, sampling?, roots?}} — what the caller's client
 *   declared (each {} when declared), when the run knows its client;
 * - $caller (caller_binding), when the run knows who called (not on the internal listener,
 *   in a task or a graph called by a graph). */
static json_t *bindings_for(grun *r, const jsonata_expr *e) {
    if (!r || !r->opts) return NULL;
    int caps = r->opts->client_caps;
    const mcp_caller *who = r->opts->caller ? r->opts->caller->identity.who : NULL;
    const char *src = jsonata_source(e);
    if (!((caps & MCP_CLIENT_CAPS_KNOWN) && strstr(src, "$client")) && !(who && strstr(src, "$caller"))) return NULL;
    if (!r->bindings) {
        r->bindings = json_object();
        if (caps & MCP_CLIENT_CAPS_KNOWN) {
            json_t *c = json_object();
            if (caps & MCP_CLIENT_CAPS_ELICITATION) json_object_set_new(c, "elicitation", json_object());
            if (caps & MCP_CLIENT_CAPS_SAMPLING) json_object_set_new(c, "sampling", json_object());
            if (caps & MCP_CLIENT_CAPS_ROOTS) json_object_set_new(c, "roots", json_object());
            json_object_set_new(r->bindings, "client", json_pack("{s:o}", "capabilities", c));
        }
        if (who) json_object_set_new(r->bindings, "caller", caller_binding(who));
    }
    return r->bindings;
}

static json_t *resolver_eval(void *user, void *compiled, json_t *data, void *call_user, gg_error *err) {
    grun *r = call_user;
    gvar *v = compiled;
    if (v->keys) {
        json_t *cur = data;
        size_t i = 0;
        for (; i < v->nkeys && json_is_object(cur); i++) {
            cur = json_object_get(cur, v->keys[i]);
            if (!cur) return NULL; /* a missing member: undefined */
        }
        if (i == v->nkeys && !json_is_array(cur)) return json_incref(cur);
    }
    return jsonata_evaluate(v->expr, data, bindings_for(r, v->expr), r ? &r->jopts : NULL, call_user, err);
}

const jsonlogic_var_resolver gg_graph_var_resolver_template = {resolver_compile, resolver_eval, resolver_free, NULL};

/* ---- run state ---------------------------------------------------------------------------- */

#define HIST_FIRST 16
#define PER_FIRST 4

/* Grow an array that may still live in the run's block (then it is copied, not realloc'd). */
static void *grow(void *p, bool in_block, size_t old_bytes, size_t new_bytes) {
    if (!in_block) return realloc(p, new_bytes);
    void *n = malloc(new_bytes);
    if (n) memcpy(n, p, old_bytes);
    return n;
}

static bool run_setup(grun *r) {
    size_t nn = r->t->nnodes;
    size_t bytes = nn * (sizeof(int) + sizeof(int *) + 2 * sizeof(size_t) + PER_FIRST * sizeof(int)) +
                   HIST_FIRST * sizeof(hrec);
    char *b = gg_zalloc(bytes); /* once a run: the per-thread cache, not calloc */
    if (!b) return false;
    r->block = b;
    r->hist = r->hist_first = (hrec *)(void *)b; /* hrec first: the strictest alignment */
    r->chist = HIST_FIRST;
    b += HIST_FIRST * sizeof(hrec);
    r->per_node = (int **)(void *)b;
    b += nn * sizeof(int *);
    r->per_count = (size_t *)(void *)b;
    b += nn * sizeof(size_t);
    r->per_cap = (size_t *)(void *)b;
    b += nn * sizeof(size_t);
    r->order = (int *)(void *)b;
    b += nn * sizeof(int);
    r->pos_first = (int *)(void *)b;
    for (size_t i = 0; i < nn; i++) {
        r->per_node[i] = r->pos_first + i * PER_FIRST;
        r->per_cap[i] = PER_FIRST;
    }
    return true;
}

static bool pos_in_block(const grun *r, int node) { return r->per_node[node] == r->pos_first + (size_t)node * PER_FIRST; }

/* Roughly what a json_t costs in memory (a node and its text), counted as if nothing were
 * shared. Deeper than the loaders allow counts as one more node. */
static long json_size_estimate(const json_t *v, int depth) {
    if (!v) return 0;
    long n = 48;
    if (depth > 1000) return n;
    switch (json_typeof(v)) {
    case JSON_STRING: return n + (long)json_string_length(v);
    case JSON_ARRAY:
        for (size_t i = 0; i < json_array_size(v); i++) n += 8 + json_size_estimate(json_array_get(v, i), depth + 1);
        return n;
    case JSON_OBJECT: {
        const char *k;
        size_t klen;
        json_t *x;
        json_object_keylen_foreach((json_t *)v, k, klen, x) n += 48 + (long)klen + json_size_estimate(x, depth + 1);
        return n;
    }
    default: return n;
    }
}

static bool run_record(grun *r, int node, json_t *output) {
    if (r->nhist == r->chist) {
        size_t nc = r->chist * 2;
        hrec *nh = grow(r->hist, r->hist == r->hist_first, r->chist * sizeof *nh, nc * sizeof *nh);
        if (!nh) return false;
        r->hist = nh;
        r->chist = nc;
    }
    if (r->per_count[node] == r->per_cap[node]) {
        size_t nc = r->per_cap[node] * 2;
        int *np = grow(r->per_node[node], pos_in_block(r, node), r->per_cap[node] * sizeof *np, nc * sizeof *np);
        if (!np) return false;
        r->per_node[node] = np;
        r->per_cap[node] = nc;
    }
    r->held_bytes += json_size_estimate(output, 0);
    r->per_node[node][r->per_count[node]++] = (int)r->nhist;
    r->hist[r->nhist].node = node;
    r->hist[r->nhist].output = json_incref(output);
    r->nhist++;
    return true;
}

/* A node completed: it moves to the front of the context order. The context object itself
 * is rebuilt only when something reads it (context_get), so nodes that evaluate nothing
 * (entry, exit, mcp with literal args) cost no rebuild. */
static void context_touch(grun *r, int node) {
    size_t i = 0;
    while (i < r->norder && r->order[i] != node) i++;
    if (i == r->norder) r->norder++;
    memmove(r->order + 1, r->order, i * sizeof *r->order);
    r->order[0] = node;
    r->context_stale = true;
}

/* The context {nodeId: latest output} — keys ordered most recently executed first, as
 * mcpGraph builds it. A changed context is a new object and an old one is never modified,
 * so a history record keeps the context it saw by reference instead of copying it. An
 * undefined output (NULL) leaves the node's key out: `$.node` and `$exists($.node)` then see
 * undefined as in mcpGraph. Borrowed; NULL when out of memory. */
static json_t *context_get(grun *r) {
    if (!r->context_stale) return r->context;
    json_t *n = json_object();
    for (size_t i = 0; n && i < r->norder; i++) {
        int node = r->order[i];
        json_t *out = r->hist[r->per_node[node][r->per_count[node] - 1]].output;
        /* node ids are YAML strings, so valid UTF-8: skip jansson's re-check */
        if (out && json_object_set_new_nocheck(n, r->t->nodes[node].id, json_incref(out)) != 0) {
            json_decref(n);
            n = NULL;
        }
    }
    if (!n) return NULL;
    json_decref(r->context);
    r->context = n;
    r->context_stale = false;
    return n;
}

/* The caller's token handed to a for_caller server's client for the call: let go. */
static void release_subject(grun *r) {
    if (!r->held_client) return;
    gg_graph_user_release(r->held_server, r->held_client);
    r->held_client = NULL;
    r->held_server = NULL;
}

static void run_free(grun *r) {
    release_subject(r);
    json_decref(r->context);
    if (!r->block) return;
    for (size_t i = 0; i < r->nhist; i++) json_decref(r->hist[i].output);
    if (r->hist != r->hist_first) free(r->hist);
    for (size_t i = 0; i < r->t->nnodes; i++)
        if (!pos_in_block(r, (int)i)) free(r->per_node[i]);
    free(r->block);
}

/* ---- a history fixture (graphgate eval --history) ----------------------------------------- */

#define FIXTURE_MAX_RECORDS 100000
#define FIXTURE_MAX_NODES 1000

/* A run holding only its history: a tool whose nodes are the ids the records name. */
struct gg_graph_history {
    gtool tool;
    grun run;
};

static int fixture_node(gtool *t, const char *id) {
    for (size_t i = 0; i < t->nnodes; i++)
        if (!strcmp(t->nodes[i].id, id)) return (int)i;
    if (t->nnodes == FIXTURE_MAX_NODES || !(t->nodes[t->nnodes].id = strdup(id))) return -1;
    return (int)t->nnodes++;
}

static bool fixture_records(json_t *v, json_t **records, gg_error *err) {
    *records = json_is_object(v) ? json_object_get(v, "history") : v;
    if (!json_is_array(*records))
        return gg_error_set(err, "invalid_history", "a history is an array of node records (or an object with one as \"history\")"), false;
    if (json_array_size(*records) > FIXTURE_MAX_RECORDS)
        return gg_error_set(err, "invalid_history", "a history holds at most %d records", FIXTURE_MAX_RECORDS), false;
    return true;
}

/* See graph.h. */
gg_graph_history *gg_graph_history_load(json_t *v, gg_error *err) {
    json_t *records;
    if (!fixture_records(v, &records, err)) return NULL;
    gg_graph_history *h = calloc(1, sizeof *h);
    if (!h || !(h->tool.nodes = calloc(FIXTURE_MAX_NODES, sizeof *h->tool.nodes))) {
        free(h);
        return gg_error_set(err, "oom", "out of memory"), NULL;
    }
    size_t i;
    json_t *rec;
    json_array_foreach(records, i, rec) { /* the node ids first: the run's arrays are sized by them */
        const char *id = json_string_value(json_object_get(rec, "nodeId"));
        if (!id || fixture_node(&h->tool, id) < 0) {
            gg_error_set(err, "invalid_history", "record %zu: %s", i,
                         id ? "more distinct node ids than a history may hold" : "needs \"nodeId\" (a string)");
            gg_graph_history_free(h);
            return NULL;
        }
    }
    h->run.t = &h->tool;
    if (!run_setup(&h->run)) {
        gg_graph_history_free(h);
        return gg_error_set(err, "oom", "out of memory"), NULL;
    }
    json_array_foreach(records, i, rec) { /* absent output: the node yielded undefined, or failed */
        int node = fixture_node(&h->tool, json_string_value(json_object_get(rec, "nodeId")));
        if (!run_record(&h->run, node, json_object_get(rec, "output"))) {
            gg_graph_history_free(h);
            return gg_error_set(err, "oom", "out of memory"), NULL;
        }
        context_touch(&h->run, node);
    }
    h->run.context_stale = true;
    return h;
}

/* See graph.h. */
void gg_graph_history_free(gg_graph_history *h) {
    if (!h) return;
    run_free(&h->run);
    for (size_t i = 0; i < h->tool.nnodes; i++) free(h->tool.nodes[i].id);
    free(h->tool.nodes);
    free(h);
}

/* See graph.h. */
json_t *gg_graph_history_context(gg_graph_history *h) { return context_get(&h->run); }

/* See graph.h. */
json_t *gg_graph_history_evaluate(gg_graph_history *h, const jsonata_expr *e, json_t *input, json_t *bindings,
                                  gg_error *err) {
    return jsonata_evaluate(e, input, bindings, NULL, h ? &h->run : NULL, err);
}

/* ---- node execution ----------------------------------------------------------------------- */

/* False with the error when a run that has been going for elapsed ms has used up its budget
 * or its time limit. */
static bool time_left(grun *r, double elapsed, gg_error *err) {
    if (r->opts && r->opts->budget_ms > 0 && elapsed > r->opts->budget_ms) {
        gg_error_set(err, "budget", "Execution budget of %.3f ms used up", r->opts->budget_ms);
        return false;
    }
    if (elapsed > (double)r->g->max_execution_ms) {
        gg_error_set(err, "limit", "Execution limit exceeded: maximum execution time (%ldms) reached. Elapsed time: %ldms",
                     r->g->max_execution_ms, (long)elapsed);
        return false;
    }
    return true;
}

/* An expression's failure keeps the engine's code (T1006, D3030, a JSON Logic code) and
 * position, and names its node in path: gg_graph_error_text and gg_graph_error_json turn
 * that into the one text and object every surface shows. */
static void set_eval_error(grun *r, gg_error *dst, gg_error *src) {
    char code[GG_ERR_CODE_MAX];
    snprintf(code, sizeof code, "%s", src->code[0] ? src->code : "error");
    /* D1013: the expression saw the run's cancel flag (client cancel, shutdown, timeout) */
    if (!strcmp(code, "cancelled") || !strcmp(code, "D1013")) {
        gg_error_set(dst, "cancelled", "Execution cancelled");
    } else if (!strcmp(code, "D1012") && !time_left(r, gg_now_ms() - r->start_ms, dst)) {
        /* the expression's time limit is what was left of the run's (update_time_limit):
         * the run's own limit stopped it, and says so, whichever check saw it first */
    } else {
        gg_error_set(dst, code, "%s", src->message ? src->message : code);
        dst->position = src->position;
        gg_error_set_path(dst, r->t->nodes[r->cur].id);
    }
    gg_error_clear(src);
}

/* The one text of a failure: "node 'sum': T1006 at position 7: message" for an evaluation
 * error (set_eval_error: path is its node), the message alone for any other. Heap. */
char *gg_graph_error_text(const gg_error *e) {
    const char *msg = e->message ? e->message : e->code;
    if (!e->path) return strdup(msg);
    gg_strbuf b = GG_STRBUF_INIT;
    gg_strbuf_printf(&b, "node '%s': %s", e->path, e->code);
    if (e->position >= 0) gg_strbuf_printf(&b, " at position %d", e->position);
    gg_strbuf_printf(&b, ": %s", msg);
    return gg_strbuf_take(&b);
}

/* The same as an object {code, message, position?, node?, text} (history, result _meta). */
json_t *gg_graph_error_json(const gg_error *e) {
    json_t *o = json_object();
    char *text = gg_graph_error_text(e);
    if (!o || !text || json_object_set_new(o, "code", json_string(e->code)) ||
        json_object_set_new(o, "text", json_string(text)) ||
        json_object_set_new(o, "message", json_string(e->message ? e->message : "")) ||
        (e->position >= 0 && json_object_set_new(o, "position", json_integer(e->position))) ||
        (e->path && json_object_set_new(o, "node", json_string(e->path)))) {
        json_decref(o);
        o = NULL;
    }
    free(text);
    return o;
}

/* The time an expression may take: what is left of the run's limit (or of its budget, when
 * that ends first) when its node started. */
static void update_time_limit(grun *r) {
    double left = r->g->max_execution_ms - (r->now - r->start_ms);
    double budget = r->opts ? r->opts->budget_ms : 0;
    if (budget > 0 && budget - (r->now - r->start_ms) < left) left = budget - (r->now - r->start_ms);
    /* rounded up: an expression stopped by this limit has always used all that was left,
     * so the node-level checks (budget, run limit) see the time as spent too */
    r->jopts.time_limit_ms = left < 1 ? 1 : left > 2147483647.0 ? 2147483647 : (int)ceil(left);
    /* memory: the evaluation's own budget, within what the run's kept outputs leave */
    long room = r->g->max_run_memory - r->held_bytes;
    r->jopts.max_memory_bytes = room < r->g->max_eval_memory ? (room < 1 ? 1 : room) : r->g->max_eval_memory;
}

static json_t *eval_args(grun *r, const gargs *a, gg_error *err) {
    switch (a->kind) {
    case GA_LITERAL: return json_incref(a->literal);
    case GA_EXPR: {
        json_t *ctx = context_get(r);
        if (!ctx) {
            gg_error_set(err, "oom", "out of memory");
            return NULL;
        }
        gg_error e = GG_ERROR_INIT;
        json_t *v = jsonata_evaluate(a->expr, ctx, bindings_for(r, a->expr), &r->jopts, r, &e);
        if (gg_error_is_set(&e)) {
            set_eval_error(r, err, &e);
            json_decref(v);
            return NULL;
        }
        return v; /* NULL without an error is undefined: object members drop it */
    }
    case GA_OBJECT: {
        json_t *o = json_object();
        for (size_t i = 0; o && i < a->count; i++) {
            if (!a->items[i]) continue;
            json_t *v = eval_args(r, a->items[i], err);
            if (gg_error_is_set(err)) {
                json_decref(o);
                return NULL;
            }
            if (v) json_object_set_new(o, a->keys[i], v);
        }
        if (!o && !gg_error_is_set(err)) gg_error_set(err, "oom", "out of memory");
        return o;
    }
    case GA_ARRAY: {
        json_t *arr = json_array();
        for (size_t i = 0; arr && i < a->count; i++) {
            json_t *v = a->items[i] ? eval_args(r, a->items[i], err) : NULL;
            if (gg_error_is_set(err)) {
                json_decref(arr);
                return NULL;
            }
            json_array_append_new(arr, v ? v : json_null());
        }
        if (!arr && !gg_error_is_set(err)) gg_error_set(err, "oom", "out of memory");
        return arr;
    }
    }
    return NULL;
}

/* mcpGraph's reading of a CallToolResult: isError → error with the first text; else
 * structuredContent; else the first text parsed as JSON, or the raw string. */
static json_t *tool_result_output(json_t *res, gg_error *err) {
    json_t *content = json_object_get(res, "content");
    const char *first_text = NULL;
    size_t i;
    json_t *item;
    json_array_foreach(content, i, item) {
        if (!strcmp(json_string_value(json_object_get(item, "type")) ? json_string_value(json_object_get(item, "type")) : "", "text")) {
            first_text = json_string_value(json_object_get(item, "text"));
            if (first_text) break;
        }
    }
    if (json_is_true(json_object_get(res, "isError"))) {
        gg_error_set(err, "tool_error", "%s", first_text ? first_text : "MCP tool returned an error");
        return NULL;
    }
    json_t *sc = json_object_get(res, "structuredContent");
    if (sc) return json_incref(sc);
    if (first_text) {
        json_t *parsed = json_loads(first_text, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        return parsed ? parsed : json_string(first_text);
    }
    return content ? json_incref(content) : json_null();
}

static void mcp_answered(void *user, json_t *result, gg_error *err);

/* An mcp node whose server is `type: graph`: the caller's gateway runs the other graph
 * in-process and answers like a downstream server would (a CallToolResult), through
 * mcp_answered — the run yields meanwhile, as for any downstream call. */
static bool exec_graph_call_start(grun *r, const gnode *n, json_t *args, gg_error *err) {
    if (!r->opts || !r->opts->graph_call) {
        gg_error_set(err, "graph_call", "server '%s' calls graph '%s': graph-to-graph calls run only in the gateway",
                     n->server->name, n->server->target_graph);
        return false;
    }
    r->wait_limited = false; /* the callee's own limits and the shared cancel flag bound it */
    r->waiting = true;
    r->rendezvous = 0;
    tel_client_begin(r, n);
    r->opts->graph_call(r->opts->graph_call_user, r->opts->caller, n->server->target_graph, n->tool, args,
                        r->opts->cancelled, mcp_answered, r);
    return true;
}

/* ---- relaying a downstream's requests to the caller ---------------------------------------
 * An mcp node with `relay: true` (every proxied tool's) hands what its downstream asks
 * during the call (elicitation/create, sampling/createMessage, roots/list) to the run's
 * client the way an elicit node asks it (opts->client_request): the same capability check,
 * the same per-session bound on requests waiting for the client, the run's cancel flag, and
 * at most the run's time left. What cannot be relayed is refused with -32601, the answer
 * the spec prescribes for a client without the capability. */
#define RELAY_MAX_PER_RUN 32          /* requests one run relays; past it each is refused */
#define RELAY_TIMEOUT_MS 300000       /* the longest one waits (an elicit node's default) */
#define RELAY_MAX_PARAMS (256u << 10) /* bytes of one request's params */

static bool relay_method(const char *m) {
    return !strcmp(m, "elicitation/create") || !strcmp(m, "sampling/createMessage") || !strcmp(m, "roots/list");
}

/* The caller's answer goes back to the downstream (any thread; touches no run state: the
 * run may have ended meanwhile). */
static void relay_answered(void *user, json_t *result, gg_error *err) {
    mcp_client_reply *reply = user;
    if (result) {
        mcp_client_reply_result(reply, result);
        return;
    }
    char msg[400];
    snprintf(msg, sizeof msg, "%s", err && gg_error_is_set(err) ? err->message : "the calling client did not answer");
    bool missing = err && (!strcmp(err->code, "no_capability") || !strcmp(err->code, "no_client"));
    mcp_client_reply_error(reply, missing ? MCP_METHOD_NOT_FOUND : MCP_INTERNAL_ERROR, msg);
}

static size_t relay_params_size(json_t *params) {
    return params ? json_dumpb(params, NULL, 0, JSON_COMPACT) : 0;
}

/* ---- relaying to a 2026-07-28 caller: input-required rounds ------------------------------
 * The caller cannot be asked on a stream: the downstream's request waits in the run (at most
 * RELAY_MAX_WAITING at once, the transport's own bound on replies owed), the caller's call
 * answers input_required with it (the provider's relay_round, gg_graph_run_relay_ask), and
 * the retry's inputResponses answer the downstream; the downstream's call stays open meanwhile
 * and its deadline (at most the run's time left) bounds the wait. Under relay_mu. */
#define RELAY_MAX_WAITING 16

static int method_cap(const char *m) {
    return !strcmp(m, "elicitation/create") ? MCP_CLIENT_CAPS_ELICITATION
           : !strcmp(m, "sampling/createMessage") ? MCP_CLIENT_CAPS_SAMPLING : MCP_CLIENT_CAPS_ROOTS;
}

static void relay_wait_drop(grun *r, int i) {
    free(r->relay_wait[i].method);
    json_decref(r->relay_wait[i].params);
    r->relay_wait[i] = r->relay_wait[--r->nrelay_wait];
}

/* Every request still waiting gets an error: its call, or the run, ends without the answer
 * (a reply is owed exactly once: the downstream's client waits for it). */
static void relay_fail_all(grun *r, const char *why) {
    pthread_mutex_lock(&r->relay_mu);
    while (r->nrelay_wait > 0) {
        mcp_client_reply_error(r->relay_wait[r->nrelay_wait - 1].reply, MCP_INTERNAL_ERROR, why);
        relay_wait_drop(r, r->nrelay_wait - 1);
    }
    pthread_mutex_unlock(&r->relay_mu);
}

/* Keep the request for the caller's round (relay_mu held); NULL, or why it cannot wait. */
static const char *relay_park(grun *r, const char *method, json_t *params, mcp_client_reply *reply, int *code,
                              char *msg, size_t msg_n) {
    int cap = method_cap(method);
    if (!(r->opts->client_caps & cap)) {
        snprintf(msg, msg_n, "Method not found: the calling client did not declare the %s capability",
                 cap == MCP_CLIENT_CAPS_ELICITATION ? "elicitation" : cap == MCP_CLIENT_CAPS_SAMPLING ? "sampling" : "roots");
        return msg;
    }
    *code = MCP_INTERNAL_ERROR;
    if (r->nrelay_wait >= RELAY_MAX_WAITING) return "Too many requests waiting for the calling client's answer";
    struct relay_wait *w = &r->relay_wait[r->nrelay_wait];
    snprintf(w->key, sizeof w->key, "relay-%d", atomic_load_explicit(&r->relayed, memory_order_relaxed));
    w->method = strdup(method);
    w->params = params ? gg_json_clone(params) : json_object();
    w->reply = reply;
    if (!w->method || !w->params) {
        free(w->method);
        json_decref(w->params);
        return "out of memory";
    }
    r->nrelay_wait++;
    return NULL;
}

/* mcp_call_relay.fn: runs on the transport's thread while the node's call is in flight (the
 * run waits, so r is alive; relay_mu keeps its options from being rebound meanwhile); the
 * reply may come later, from any thread. */
static void relay_request(void *user, const char *method, json_t *params, mcp_client_reply *reply) {
    grun *r = user;
    pthread_mutex_lock(&r->relay_mu);
    const gg_graph_run_options *o = r->opts;
    const gnode *n = &r->t->nodes[r->cur];
    const char *why = NULL;
    char msg[200];
    int code = MCP_METHOD_NOT_FOUND; /* what a client without the capability answers */
    bool modern = o && o->input_wait, round = false;
    if (!relay_method(method)) why = "Method not found";
    else if (!n->relay)
        snprintf(msg, sizeof msg, "Method not found: %s is not relayed: mcp node '%.64s' has relay: false", method, n->id),
            why = msg;
    else if (modern && !o->relay_round)
        why = "Method not found: the calling client speaks 2026-07-28, and this call cannot hold an input-required round";
    else if (!modern && (!o || !o->client_request))
        why = "Method not found: the call that caused this request has no MCP client to ask";
    else if (relay_params_size(params) > RELAY_MAX_PARAMS)
        why = "Request too large to relay to the calling client", code = MCP_INTERNAL_ERROR;
    else if ((atomic_fetch_add_explicit(&r->relayed, 1, memory_order_relaxed) + 1) > RELAY_MAX_PER_RUN)
        why = "Too many requests relayed to the calling client in one call", code = MCP_INTERNAL_ERROR;
    else if (modern && !(why = relay_park(r, method, params, reply, &code, msg, sizeof msg)))
        round = true;
    bool (*hold)(void *) = round ? o->relay_round : NULL;
    void *hold_user = round ? o->relay_user : NULL;
    if (!why && !modern) {
        double left = r->g->max_execution_ms - (gg_now_ms() - r->start_ms);
        int timeout = left < RELAY_TIMEOUT_MS ? (left < 1 ? 1 : (int)left) : RELAY_TIMEOUT_MS;
        o->client_request(o->client_user, n->id, method, params, timeout, o->cancelled, relay_answered, reply);
    }
    pthread_mutex_unlock(&r->relay_mu);
    /* the provider schedules the round (outside the lock: it may ask the run at once) */
    if (hold && !hold(hold_user)) {
        pthread_mutex_lock(&r->relay_mu);
        for (int i = 0; i < r->nrelay_wait; i++)
            if (r->relay_wait[i].reply == reply) {
                relay_wait_drop(r, i);
                why = "Too many input-required rounds waiting on this server; try again later", code = MCP_INTERNAL_ERROR;
                break;
            }
        pthread_mutex_unlock(&r->relay_mu);
        if (!why) return; /* a round took it meanwhile */
    }
    if (why) {
        gg_log(GG_LOG_DEBUG, "a downstream's request was not relayed", "method", method, "why", why, NULL);
        mcp_client_reply_error(reply, code, why);
    }
}

/* What client_request gave a waiting request within a round (synchronously: a round's
 * answers are in the request that carries them). */
typedef struct relay_slot {
    bool called;
    json_t *result;
    gg_error err;
} relay_slot;

static void relay_slot_done(void *user, json_t *result, gg_error *err) {
    relay_slot *s = user;
    s->called = true;
    s->result = json_incref(result);
    if (err && gg_error_is_set(err)) gg_error_move(&s->err, err);
}

int gg_graph_run_relay_ask(gg_graph_run *run) {
    grun *r = &run->r;
    pthread_mutex_lock(&r->relay_mu);
    const gg_graph_run_options *o = r->opts;
    for (int i = 0; o && o->client_request && i < r->nrelay_wait;) {
        struct relay_wait *w = &r->relay_wait[i];
        relay_slot s = {false, NULL, GG_ERROR_INIT};
        o->client_request(o->client_user, w->key, w->method, w->params, 0, o->cancelled, relay_slot_done, &s);
        if (!s.called) {
            i++;
            continue;
        }
        relay_answered(w->reply, s.result, &s.err); /* the answer (or the refusal) goes to the downstream */
        json_decref(s.result);
        gg_error_clear(&s.err);
        relay_wait_drop(r, i);
    }
    int left = r->nrelay_wait;
    pthread_mutex_unlock(&r->relay_mu);
    return left;
}

void gg_graph_run_rebind(gg_graph_run *run, const gg_graph_run_options *opts) {
    grun *r = &run->r;
    pthread_mutex_lock(&r->relay_mu);
    r->opts = opts;
    r->jopts.cancel = opts ? opts->cancelled : NULL;
    pthread_mutex_unlock(&r->relay_mu);
}

/* A downstream's progress fraction in [0, 1): p/total when it gives a total, else a
 * function of p that grows with it. */
static double relay_fraction(json_t *params) {
    double p = json_number_value(json_object_get(params, "progress"));
    double total = json_number_value(json_object_get(params, "total"));
    if (!(p > 0)) return 0;
    double f = total > 0 ? p / total : p / (p + 1);
    return f < 0.999 ? f : 0.999;
}

/* mcp_call_relay.notify: the downstream's notifications on the relayed call's stream go to
 * the caller's sink (the server drops what its client did not ask for: no progressToken, a
 * lower logging level). Progress is the run's (nodes completed) plus the downstream's
 * fraction, so it keeps increasing across nodes; each kind at most 10 a second per run
 * (RELAY_NOTE_MS), the rest dropped. Runs on the transport's thread while the run waits.
 *
 * Across a 2026-07-28 input-required round (provider.c acall_park / acall_resume_relay) the
 * sink is always the current call's: gg_graph_run_rebind swaps opts under relay_mu, so what
 * the downstream sends after the retry took the run goes to the retry's progressToken and
 * logging level. While the run is parked there is no call (opts->caller NULL) and the
 * notification is dropped, not kept for the next round: the downstream is then waiting on
 * the client's answer, so a progress note from that wait says nothing the next one after the
 * answer will not supersede; a log message held back would reach a later request, under
 * that request's level, out of time order; and a retry may never come, so nothing is held
 * for it. The rate bound and relay_progress belong to the run, not the call: a retry sees
 * no burst, and a retry that reuses its progressToken never sees the value go back (a
 * downstream that restarts its count after the answer is held to the old high mark). */
#define RELAY_NOTE_MS 100.0
static void relay_notify_locked(grun *r, const char *method, json_t *params);
static void relay_notify(void *user, const char *method, json_t *params) {
    grun *r = user;
    pthread_mutex_lock(&r->relay_mu); /* the caller's sink is the current call's (rebind) */
    relay_notify_locked(r, method, params);
    pthread_mutex_unlock(&r->relay_mu);
}

static void relay_notify_locked(grun *r, const char *method, json_t *params) {
    const mcp_sink *s = r->opts && r->opts->caller ? r->opts->caller->client.sink : NULL;
    bool progress = !strcmp(method, "notifications/progress");
    if (!s || (!progress && strcmp(method, "notifications/message"))) return;
    if (progress ? !s->progress : !s->log) return;
    double v = progress ? (double)r->nhist + relay_fraction(params) : 0;
    if (progress && r->relay_progress && !(v > r->relay_progress)) return;
    double now = gg_now_ms(), *last = &r->relay_sent_ms[progress ? 0 : 1];
    if (*last && now - *last < RELAY_NOTE_MS) return;
    *last = now;
    if (progress) {
        r->relay_progress = v;
        const char *msg = json_string_value(json_object_get(params, "message"));
        s->progress(s->user, v, -1, msg);
    } else {
        const char *level = json_string_value(json_object_get(params, "level"));
        const char *logger = json_string_value(json_object_get(params, "logger"));
        if (level) s->log(s->user, level, logger, json_object_get(params, "data"));
    }
}

/* A per_user or for_caller server's client for the run's caller (clients.c); a caller's
 * token it holds is let go when the answer is taken (exec_mcp_finish) or the run goes. */
static mcp_client *user_client(grun *r, gserver *s, gg_error *err) {
    bool held = false;
    mcp_client *c = gg_graph_caller_client(s, r->opts ? r->opts->caller : NULL, &held, err);
    if (held) {
        r->held_server = s;
        r->held_client = c;
    }
    return c;
}

/* Start an mcp node's downstream call. False (err set) when it failed before anything was
 * sent; otherwise the answer comes to mcp_answered, possibly before this returns. */
static bool exec_mcp_start(grun *r, const gnode *n, json_t **input, gg_error *err) {
    update_time_limit(r);
    json_t *args = n->args ? eval_args(r, n->args, err) : json_object();
    if (!args && !gg_error_is_set(err)) args = json_object();
    if (!args) {
        if (!gg_error_is_set(err)) gg_error_set(err, "oom", "out of memory");
        return false;
    }
    *input = args;
    if (n->server->target_graph) return exec_graph_call_start(r, n, args, err);
    mcp_client *c = n->server->per_user || n->server->for_caller ? user_client(r, n->server, err)
                                                               : gg_graph_server_client(n->server, r->g->policy, err);
    if (!c && !strcmp(err->code, "principal_required")) gg_error_set_path(err, n->id); /* the result's _meta names it */
    if (!c) return false;
    /* a downstream call never outlives the run's time limit */
    double left = r->g->max_execution_ms - (gg_now_ms() - r->start_ms);
    int timeout = n->server->cfg.timeout_ms;
    r->wait_limited = left < timeout;
    if (r->wait_limited) timeout = left < 1 ? 1 : (int)left;
    r->waiting = true;
    r->rendezvous = 0;
    const gg_trace_ctx *tc = tel_client_begin(r, n);
    char tp[GG_TRACEPARENT_LEN + 1];
    gg_trace_format(tc, tp);
    /* relay: false refuses there, naming the node; notifications only when relaying */
    mcp_call_relay relay = {relay_request, r, n->relay ? relay_notify : NULL};
    mcp_client_call_tool_start_relay(c, n->tool, args, timeout, r->opts ? r->opts->cancelled : NULL, tc ? tp : NULL,
                                     tc && tc->state[0] ? tc->state : NULL, &relay, mcp_answered, r);
    return true;
}

/* A node calling a tool its server's `on_change: quarantine` withholds (pins.c): refused
 * before anything is sent, as a proxy graph's tools/call of it is. */
static void withheld_error(const gnode *n, gg_error *err) {
    gg_error_set(err, "tool_definition_changed",
                 "tool '%.200s' of server '%s' is withheld: its downstream definition changed since this graph "
                 "version pinned it (on_change: quarantine) and awaits an admin's approval",
                 n->tool, n->server->name);
    gg_error_set_path(err, n->id); /* the result's text and _meta name the node */
}

/* `async: true`: the branch starts (branch.c) and its start is the node's output; the run
 * goes on without waiting for it. */
static json_t *exec_async(grun *r, const gnode *n, json_t **input, gg_error *err) {
    update_time_limit(r);
    json_t *args = n->args ? eval_args(r, n->args, err) : json_object();
    if (gg_error_is_set(err)) return NULL;
    if (!args) args = json_object();
    if (!args) return NULL; /* out of memory, reported by node_done */
    *input = args;
    return gg_graph_async_start(r->g, n, args, r->opts);
}

/* The downstream answer of a waiting mcp node (any thread). */
static void mcp_answered(void *user, json_t *result, gg_error *err) {
    grun *r = user;
    gserver *sv = r->t->nodes[r->cur].server; /* a server using secrets gets its answers redacted */
    bool redact = sv && sv->nsecrets;
    r->reply = redact ? gg_graph_secrets_redact(sv, result) : json_incref(result);
    if (redact && err) gg_graph_secrets_redact_error(sv, err);
    if (err && gg_error_is_set(err)) gg_error_move(&r->reply_err, err);
    else if (!result) gg_error_set(&r->reply_err, "transport", "no answer");
    tel_client_end(r, &r->reply_err);
    /* second to arrive continues the run: the starter has already yielded */
    if (atomic_fetch_add_explicit(&r->rendezvous, 1, memory_order_acq_rel) == 1 && r->wake) r->wake(r->wake_user);
}

/* The answer a waiting node got (taken from the run), or NULL with its error — a timeout
 * cut short by the run's own time limit reported as that limit. */
static json_t *take_reply(grun *r, gg_error *err) {
    json_t *res = r->reply;
    r->reply = NULL;
    if (!res) {
        gg_error_move(err, &r->reply_err);
        if (r->wait_limited && !strcmp(err->code, "timeout")) {
            gg_error_clear(err);
            gg_error_set(err, "limit", "Execution limit exceeded: maximum execution time (%ldms) reached. Elapsed time: %ldms",
                         r->g->max_execution_ms, (long)(gg_now_ms() - r->start_ms));
        }
        return NULL;
    }
    gg_error_clear(&r->reply_err);
    return res;
}

/* The node's output from the answer (the reply is consumed). */
static json_t *exec_mcp_finish(grun *r, const gnode *n, gg_error *err) {
    relay_fail_all(r, "the downstream's call ended before the calling client answered this request");
    release_subject(r);
    json_t *res = take_reply(r, err);
    if (!res && !strcmp(err->code, "token_exchange_failed")) gg_error_set_path(err, n->id); /* _meta names it */
    if (!res) return NULL;
    if (n->raw_result) return res;
    json_t *out = tool_result_output(res, err);
    json_decref(res);
    return out;
}

/* elicit / sample: send the request to the run's client; the answer comes to mcp_answered
 * like a downstream one (the run yields meanwhile). False (err set) when nothing was sent. */
static bool exec_client_start(grun *r, const gnode *n, json_t **input, gg_error *err) {
    update_time_limit(r);
    json_t *params = n->args ? eval_args(r, n->args, err) : json_object();
    if (!params) {
        if (!gg_error_is_set(err)) gg_error_set(err, "oom", "out of memory");
        return false;
    }
    *input = params;
    const char *method = n->type == GN_ELICIT ? "elicitation/create" : n->type == GN_SAMPLE ? "sampling/createMessage" : "roots/list";
    if (!r->opts || !r->opts->client_request) {
        gg_error_set(err, "no_client", "%s needs a client to ask: call the tool over MCP from a session whose client "
                     "accepts a text/event-stream answer", method);
        return false;
    }
    double left = r->g->max_execution_ms - (gg_now_ms() - r->start_ms);
    int timeout = n->timeout_ms > 0 ? n->timeout_ms : 300000;
    r->wait_limited = left < timeout;
    if (r->wait_limited) timeout = left < 1 ? 1 : (int)left;
    r->waiting = true;
    r->rendezvous = 0;
    r->opts->client_request(r->opts->client_user, n->id, method, params, timeout, r->opts->cancelled, mcp_answered, r);
    return true;
}

/* The client's answer is the node's output (elicit: {action, content?}; sample: the
 * CreateMessageResult; roots: the ListRootsResult {roots}). */
static json_t *exec_client_finish(grun *r, gg_error *err) { return take_reply(r, err); }

static void ask_reset(grun *r) {
    json_decref(r->ask_out);
    json_decref(r->ask_in);
    r->ask_out = r->ask_in = NULL;
    r->ask_i = 0;
    r->ask_parked = false;
}

/* The answer to the ask node's current request goes into its output. */
static bool ask_take(grun *r, const gnode *n, gg_error *err) {
    json_t *a = take_reply(r, err);
    if (!a) return false;
    json_object_set_new(r->ask_out, n->subs[r->ask_i].id, a);
    r->ask_i++;
    return true;
}

/* An input-required round (2026-07-28) left the request for the client's next call. */
static bool parked(const grun *r) { return r->opts && r->opts->input_wait && atomic_load(r->opts->input_wait); }

/* ask: put each request not answered yet to the client. Answers given at once (a round's
 * inputResponses) are taken here; a request left for the next round does not stop the
 * others, so one input-required result carries them all; in a session each answer comes
 * back on its own (the run yields meanwhile, no thread waits) and the next request goes
 * out after it. 1: all answered (r->ask_out), 0: the run yields, -1: err set. */
static int exec_ask(grun *r, const gnode *n, gg_error *err) {
    if (!r->ask_out) r->ask_out = json_object();
    if (!r->ask_in) r->ask_in = json_object();
    if (!r->ask_out || !r->ask_in) {
        gg_error_set(err, "oom", "out of memory");
        return -1;
    }
    while (r->ask_i < (int)n->nsubs) {
        const gnode *q = &n->subs[r->ask_i];
        if (json_object_get(r->ask_out, q->id)) { /* answered in an earlier round */
            r->ask_i++;
            continue;
        }
        json_t *in = NULL;
        bool sent = exec_client_start(r, q, &in, err);
        if (in) json_object_set_new(r->ask_in, q->id, in);
        if (!sent) return -1;
        if (atomic_fetch_add_explicit(&r->rendezvous, 1, memory_order_acq_rel) == 1) { /* answered already */
            r->waiting = false;
            if (!ask_take(r, n, err)) return -1;
            continue;
        }
        if (!parked(r)) return 0; /* the answer wakes the run (r->waiting) */
        r->waiting = false;
        r->ask_parked = true;
        r->ask_i++;
    }
    return r->ask_parked ? 0 : 1;
}

/* The ask node's outcome once exec_ask is done with it: its output and input (taken). */
static json_t *ask_result(grun *r, int k, json_t **input) {
    json_t *out = k == 1 ? json_incref(r->ask_out) : NULL;
    *input = json_incref(r->ask_in);
    ask_reset(r);
    return out;
}

static json_t *exec_switch(grun *r, const gnode *n, json_t *ctx, int *next, gg_error *err) {
    for (size_t i = 0; i < n->ncond; i++) {
        const gcond *c = &n->conds[i];
        if (!c->rule) {
            *next = c->target;
            return json_string(r->t->nodes[c->target].id);
        }
        /* truthiness straight from the evaluation, as mcpGraph (JavaScript) sees it: an
         * Infinity result is truthy although its JSON form would be null */
        gg_error e = GG_ERROR_INIT;
        int hit = jsonlogic_test(c->rule, ctx, r, &e);
        if (hit < 0) {
            set_eval_error(r, err, &e);
            return NULL;
        }
        if (hit) {
            *next = c->target;
            return json_string(r->t->nodes[c->target].id);
        }
    }
    if (n->default_next < 0) {
        gg_error_set(err, "no_route", "Switch node %s: no condition matched and there is no default", n->id);
        return NULL;
    }
    *next = n->default_next;
    return json_string(r->t->nodes[n->default_next].id);
}

/* An exit node returns the previous node's output; like mcpGraph (`output || {}`) a
 * JavaScript-falsy one (undefined, null, false, 0, "") becomes {}. */
static json_t *exit_output(const grun *r) {
    json_t *prev = r->nhist ? r->hist[r->nhist - 1].output : NULL;
    bool falsy = !prev || json_is_null(prev) || json_is_false(prev) ||
                 (json_is_number(prev) && json_number_value(prev) == 0) ||
                 (json_is_string(prev) && json_string_length(prev) == 0);
    return falsy ? json_object() : json_incref(prev);
}

/* An exit with `error:` fails the run with its text or its expression's value (a string
 * as is, anything else as JSON); an expression that fails reports that instead. */
static void exit_error(grun *r, const gnode *n, json_t **input, gg_error *e) {
    if (!n->expr) {
        gg_error_set(e, "exit_error", "%s", n->error_text ? n->error_text : "error");
        return;
    }
    update_time_limit(r);
    json_t *ctx = context_get(r);
    if (!ctx) return; /* out of memory, reported by the caller */
    if (r->record_inputs) *input = json_incref(ctx);
    gg_error ee = GG_ERROR_INIT;
    json_t *v = jsonata_evaluate(n->expr, ctx, bindings_for(r, n->expr), &r->jopts, r, &ee);
    if (gg_error_is_set(&ee)) {
        set_eval_error(r, e, &ee);
        gg_error_clear(&ee);
    } else if (json_is_string(v)) {
        gg_error_set(e, "exit_error", "%s", json_string_value(v));
    } else {
        char *txt = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
        gg_error_set(e, "exit_error", "%s", txt ? txt : "error");
        free(txt);
    }
    json_decref(v);
}

static const char *const type_name[] = {"entry", "mcp", "transform", "switch", "exit", "elicit", "sample", "roots", "ask"};

static bool put(json_t *o, const char *key, json_t *v) { return json_object_set_new_nocheck(o, key, v) == 0; }

/* One history record, built member by member (json_pack's format parsing and UTF-8
 * re-checks of node ids cost more than the rest of a simple node). NULL when out of memory. */
static json_t *history_record(int idx, const gnode *n, long long start, long long end, double dur, json_t *input,
                              json_t *output, const gg_error *e) {
    json_t *rec = json_object();
    bool ok = rec && put(rec, "executionIndex", json_integer(idx)) && put(rec, "nodeId", json_string_nocheck(n->id)) &&
              put(rec, "nodeType", json_string_nocheck(type_name[n->type])) &&
              put(rec, "startTime", json_integer((json_int_t)start)) && put(rec, "endTime", json_integer((json_int_t)end)) &&
              put(rec, "duration", json_real(round(dur * 1000) / 1000)) && (!input || put(rec, "input", json_incref(input))) &&
              /* absent output: the node yielded undefined, or failed */
              (!output || put(rec, "output", json_incref(output)));
    if (ok && e && gg_error_is_set(e))
        ok = put(rec, "error", gg_graph_error_json(e));
    if (!ok) {
        json_decref(rec);
        return NULL;
    }
    return rec;
}

/* Release a run result and reset it for reuse. */
void gg_graph_result_clear(gg_graph_result *r) {
    if (!r) return;
    json_decref(r->output);
    json_decref(r->history);
    gg_error_clear(&r->error);
    free(r->failed_node);
    memset(r, 0, sizeof *r);
    r->error.position = -1;
}

static bool check_limits(grun *r, gg_error *err) {
    if (r->opts && r->opts->cancelled && atomic_load_explicit(r->opts->cancelled, memory_order_relaxed)) {
        gg_error_set(err, "cancelled", "Execution cancelled");
        return false;
    }
    if ((long)r->nhist >= r->g->max_node_executions) {
        gg_error_set(err, "limit",
                     "Execution limit exceeded: maximum node executions (%d) reached. Current execution count: %zu",
                     r->g->max_node_executions, r->nhist);
        return false;
    }
    if (r->held_bytes > r->g->max_run_memory) {
        gg_error_set(err, "limit", "Execution limit exceeded: node outputs kept by the run (about %ld bytes) passed its memory limit of %ld bytes",
                     r->held_bytes, r->g->max_run_memory);
        return false;
    }
    return time_left(r, r->now - r->start_ms, err);
}

/* "Tool not found: digst; did you mean 'digest'?; tools: digest, sum" — the closest listed
 * tool and, for a graph with few, all of them (an extra's hidden "x:y" tools are not
 * offered). */
void gg_graph_unknown_tool(const gg_graph *g, const char *name, gg_error *err) {
    gg_strbuf b = GG_STRBUF_INIT;
    const char **names = g->ntools ? malloc(g->ntools * sizeof *names) : NULL;
    size_t n = 0;
    gg_strbuf_printf(&b, "Tool not found: %s", name);
    for (size_t i = 0; names && i < g->ntools; i++)
        if (!strchr(g->tools[i].name, ':')) names[n++] = g->tools[i].name;
    if (names) gg_suggest(&b, name, (const char *const *)names, n, "tools");
    free(names);
    gg_error_set(err, "unknown_tool", "%s", b.data && !b.oom ? b.data : "Tool not found");
    gg_strbuf_free(&b);
}

/* Whether a tool only computes (see graph.h): mcp nodes are the only ones that wait. */
bool gg_graph_tool_is_pure(const gg_graph *g, const char *tool) {
    for (size_t i = 0; i < g->ntools; i++) {
        if (strcmp(g->tools[i].name, tool) != 0) continue;
        for (size_t k = 0; k < g->tools[i].nnodes; k++)
            if (g->tools[i].nodes[k].type == GN_MCP || g->tools[i].nodes[k].type >= GN_ELICIT) return false;
        return true;
    }
    return false;
}

/* Set up a run of tool (heap or stack); false with res->error set. */
static bool run_begin(grun *r, gg_graph *g, const char *tool, json_t *arguments, const gg_graph_run_options *opts,
                      gg_graph_result *res) {
    memset(res, 0, sizeof *res);
    res->error.position = -1;
    r->g = g;
    r->opts = opts;
    r->res = res;
    pthread_mutex_init(&r->relay_mu, NULL);
    r->wake = opts ? opts->wake : NULL;
    r->wake_user = opts ? opts->wake_user : NULL;
    r->want_history = !(opts && opts->no_history);
    r->record_inputs = opts && opts->record_inputs;
    r->reply_err = (gg_error)GG_ERROR_INIT;
    if (r->want_history) res->history = json_array();
    for (size_t i = 0; i < g->ntools; i++)
        if (!strcmp(g->tools[i].name, tool)) r->t = &g->tools[i];
    if (!r->t) {
        gg_graph_unknown_tool(g, tool, &res->error);
        return false;
    }
    if (arguments && !json_is_object(arguments)) {
        gg_error_set(&res->error, "invalid_params", "Tool arguments must be an object");
        return false;
    }
    /* the run's time counts from when the call was accepted (queue time included) */
    double now = gg_now_ms();
    r->start_ms = opts && opts->start_ms > 0 && opts->start_ms <= now ? opts->start_ms : now;
    r->start_wall = gg_wall_ms() - (long long)(now - r->start_ms);
    r->context = json_object();
    tel_setup(r);
    bool set_up = run_setup(r);
    r->jopts.cancel = opts ? opts->cancelled : NULL;
    r->args = arguments ? json_incref(arguments) : json_object();
    r->cur = r->t->entry;
    if (!r->context || !set_up || !r->args) {
        gg_error_set(&res->error, "oom", "out of memory");
        return false;
    }
    return true;
}

/* The clock now: the end of the node that just completed when there is one (taken once). */
static double run_clock(grun *r) {
    double t = r->ended_at;
    r->ended_at = 0;
    return t > 0 ? t : gg_now_ms();
}

static void run_end(grun *r) {
    r->res->node_executions = (int)r->nhist;
    r->res->elapsed_ms = run_clock(r) - r->start_ms;
    r->ended = true;
}

/* A node ended (out, or e set): hooks, history, context; true when the run goes on. */
static bool node_done(grun *r, const gnode *n, double t0, json_t *input, json_t *out, bool undefined, gg_error *e,
                      int next) {
    const gg_graph_hooks *hooks = r->opts ? r->opts->hooks : NULL;
    gg_graph_result *res = r->res;
    if (!out && !undefined && !gg_error_is_set(e)) gg_error_set(e, "oom", "out of memory");
    double t1 = r->ended_at = gg_now_ms();
    /* past the budget any failure (an expression's time limit, mostly) is the budget's:
     * the caller re-runs the tool without one and gets the real outcome */
    if (gg_error_is_set(e) && r->opts && r->opts->budget_ms > 0 && t1 - r->start_ms >= r->opts->budget_ms &&
        strcmp(e->code, "cancelled") != 0) {
        gg_error_clear(e);
        gg_error_set(e, "budget", "Execution budget of %.3f ms used up", r->opts->budget_ms);
    }
    gg_graph_event ev = {(int)r->nhist, n->id, type_name[n->type], r->start_wall + (long long)(t0 - r->start_ms),
                         r->start_wall + (long long)(t1 - r->start_ms), t1 - t0, input, out, NULL,
                         input && input == r->context};
    tel_node_end(r, t1, input, out, e);
    if (gg_error_is_set(e)) {
        ev.error = e;
        if (hooks && hooks->node_error) hooks->node_error(hooks->user, &ev);
        if (r->want_history)
            json_array_append_new(res->history,
                                  history_record(ev.execution_index, n, ev.start_ms, ev.end_ms, ev.duration_ms, input, NULL, e));
        res->failed_node = strdup(n->id);
        gg_error_move(&res->error, e);
        json_decref(input);
        return false;
    }
    if (!run_record(r, r->cur, out)) {
        gg_error_set(&res->error, "oom", "out of memory");
        json_decref(input);
        json_decref(out);
        return false;
    }
    context_touch(r, r->cur);
    if (hooks && hooks->node_complete) hooks->node_complete(hooks->user, &ev);
    if (r->want_history)
        json_array_append_new(res->history,
                              history_record(ev.execution_index, n, ev.start_ms, ev.end_ms, ev.duration_ms, input, out, NULL));
    json_decref(input);
    if (n->type == GN_EXIT) {
        res->output = out;
        r->ok = true;
        return false;
    }
    json_decref(out);
    if (next < 0) {
        gg_error_set(&res->error, "no_route", "Node %s has no next node", n->id);
        return false;
    }
    r->cur = next;
    return true;
}

/* Execute nodes until the run ends (true) or an mcp node waits for its answer (false; the
 * answer calls opts->wake, or for a stack run the caller waits for it). Limits and the
 * cancel flag are checked before every node; hooks run synchronously on this thread. */
static bool run_advance(grun *r) {
    if (r->ended) return true;
    const gg_graph_hooks *hooks = r->opts ? r->opts->hooks : NULL;
    r->ended_at = 0; /* a node that ended before a wait is no clock for the next one */
    for (;;) {
        const gnode *n = &r->t->nodes[r->cur];
        json_t *input = NULL, *out = NULL;
        int next = n->next;
        bool undefined = false;
        gg_error e = GG_ERROR_INIT;
        double t0;
        if (r->waiting) { /* the answer of the mcp node we yielded on is here */
            r->waiting = false;
            t0 = r->wait_t0;
            input = r->wait_input;
            r->wait_input = NULL;
            if (n->type == GN_ASK) {
                int k = ask_take(r, n, &e) ? exec_ask(r, n, &e) : -1;
                if (k == 0) return false;
                out = ask_result(r, k, &input);
            } else {
                out = n->type == GN_MCP ? exec_mcp_finish(r, n, &e) : exec_client_finish(r, &e);
            }
        } else {
            /* one clock read at the end of a node, which is also when the next one starts:
             * limits, expression time limits and wall times (start_wall + offset) all come
             * from them */
            t0 = r->now = run_clock(r);
            if (!check_limits(r, &r->res->error)) break;
            tel_node_begin(r, n, type_name[n->type], t0);
            gg_graph_event ev = {(int)r->nhist, n->id, type_name[n->type], r->start_wall + (long long)(t0 - r->start_ms),
                                 0, 0, NULL, NULL, NULL};
            if (hooks && hooks->node_start) hooks->node_start(hooks->user, &ev);
            switch (n->type) {
            case GN_ENTRY: out = json_incref(r->args); break;
            case GN_EXIT:
                if (n->fails) exit_error(r, n, &input, &e);
                else out = exit_output(r);
                break;
            case GN_TRANSFORM: {
                update_time_limit(r);
                json_t *ctx = context_get(r);
                if (!ctx) break; /* out of memory, reported below */
                if (r->record_inputs) input = json_incref(ctx);
                out = jsonata_evaluate(n->expr, ctx, bindings_for(r, n->expr), &r->jopts, r, &e);
                if (gg_error_is_set(&e)) {
                    gg_error err2 = GG_ERROR_INIT;
                    set_eval_error(r, &err2, &e);
                    gg_error_move(&e, &err2);
                    json_decref(out);
                    out = NULL;
                } else if (!out) {
                    undefined = true; /* kept as undefined: absent from context and history */
                }
                break;
            }
            case GN_MCP:
                if (n->withheld) {
                    withheld_error(n, &e);
                    break;
                }
                if (n->async) {
                    out = exec_async(r, n, &input, &e);
                    break;
                }
                /* fall through */
            case GN_ELICIT:
            case GN_SAMPLE:
            case GN_ROOTS:
                if (n->type == GN_MCP ? exec_mcp_start(r, n, &input, &e) : exec_client_start(r, n, &input, &e)) {
                    r->wait_t0 = t0;
                    r->wait_input = input;
                    /* first to arrive yields; if the answer came first, go on right here */
                    if (atomic_fetch_add_explicit(&r->rendezvous, 1, memory_order_acq_rel) == 0) return false;
                    continue;
                }
                break;
            case GN_ASK: {
                int k = exec_ask(r, n, &e);
                if (k == 0) {
                    r->wait_t0 = t0;
                    return false;
                }
                out = ask_result(r, k, &input);
                break;
            }
            case GN_SWITCH: {
                update_time_limit(r);
                json_t *ctx = context_get(r);
                if (!ctx) break;
                if (r->record_inputs) input = json_incref(ctx);
                out = exec_switch(r, n, ctx, &next, &e);
                break;
            }
            }
        }
        if (!node_done(r, n, t0, input, out, undefined, &e, next)) break;
    }
    run_end(r);
    return true;
}

static void run_release(grun *r) {
    relay_fail_all(r, "the call that caused this request ended before the calling client answered it");
    pthread_mutex_destroy(&r->relay_mu);
    json_decref(r->args);
    json_decref(r->wait_input);
    ask_reset(r);
    json_decref(r->bindings);
    json_decref(r->reply);
    gg_error_clear(&r->reply_err);
    free(r->tel);
    if (r->t) run_free(r);
    else json_decref(r->context);
}

/* A synchronous caller waiting for a yielded run's answer. */
typedef struct sync_wait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool woken;
} sync_wait;

static void sync_wake(void *user) {
    sync_wait *w = user;
    pthread_mutex_lock(&w->mu);
    w->woken = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* Run one tool from its entry node to its exit node (see graph.h), on this thread: the
 * resumable executor, waiting here whenever it yields. */
bool gg_graph_execute(gg_graph *g, const char *tool, json_t *arguments, const gg_graph_run_options *opts,
                      gg_graph_result *res) {
    grun r = {0};
    sync_wait w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false};
    gg_graph_run_options local = opts ? *opts : (gg_graph_run_options){0};
    local.wake = sync_wake;
    local.wake_user = &w;
    bool ok = false;
    if (run_begin(&r, g, tool, arguments, &local, res)) {
        while (!run_advance(&r)) {
            pthread_mutex_lock(&w.mu);
            while (!w.woken) pthread_cond_wait(&w.cv, &w.mu);
            w.woken = false;
            pthread_mutex_unlock(&w.mu);
        }
        ok = r.ok;
    }
    run_release(&r);
    return ok;
}

/* ---- heap runs: yield, resume, save, restore ---------------------------------------------- */

gg_graph_run *gg_graph_run_new(gg_graph *g, const char *tool, json_t *arguments, const gg_graph_run_options *opts) {
    gg_graph_run *run = calloc(1, sizeof *run);
    if (!run) return NULL;
    if (!run_begin(&run->r, g, tool, arguments, opts, &run->r.own_res)) run_end(&run->r);
    return run;
}

bool gg_graph_run_advance(gg_graph_run *run) {
    if (!run->r.t && !run->r.ended) run_end(&run->r);
    return run->r.t ? run_advance(&run->r) : true;
}

/* The outcome of an ended run, moved into res. */
bool gg_graph_run_result(gg_graph_run *run, gg_graph_result *res) {
    *res = run->r.own_res;
    memset(&run->r.own_res, 0, sizeof run->r.own_res);
    run->r.own_res.error.position = -1;
    return run->r.ok;
}

void gg_graph_run_free(gg_graph_run *run) {
    if (!run) return;
    run_release(&run->r);
    gg_graph_result_clear(&run->r.own_res);
    free(run);
}

/* The run as JSON (see graph.h): tool, position, arguments, the outputs so far in order,
 * the history records, counters and clocks. A run waiting on a downstream call is saved at
 * that node: restored, it makes the call again. */
json_t *gg_graph_run_save(const gg_graph_run *run) {
    const grun *r = &run->r;
    if (!r->t || r->ended) return NULL;
    json_t *outs = json_array();
    for (size_t i = 0; outs && i < r->nhist; i++) {
        json_t *o = r->hist[i].output;
        json_array_append_new(outs, o ? json_pack("[s,O]", r->t->nodes[r->hist[i].node].id, o)
                                      : json_pack("[s]", r->t->nodes[r->hist[i].node].id));
    }
    double elapsed = gg_now_ms() - r->start_ms;
    /* an ask node waiting for a later round keeps the answers it already has */
    return json_pack("{s:i, s:s, s:s, s:O, s:o, s:O?, s:I, s:f, s:b, s:O*}", "version", 1, "tool", r->t->name, "node",
                     r->t->nodes[r->cur].id, "arguments", r->args, "outputs", outs, "history", r->res->history,
                     "startedAt", (json_int_t)r->start_wall, "elapsedMs", elapsed, "waiting", r->waiting,
                     "answers", r->ask_parked ? r->ask_out : NULL);
}

static int node_by_id(const gtool *t, const char *id) {
    for (size_t i = 0; id && i < t->nnodes; i++)
        if (!strcmp(t->nodes[i].id, id)) return (int)i;
    return -1;
}

/* Restore a saved run on the same graph version; NULL + err when it does not fit. */
gg_graph_run *gg_graph_run_restore(gg_graph *g, json_t *state, const gg_graph_run_options *opts, gg_error *err) {
    const char *tool = json_string_value(json_object_get(state, "tool"));
    json_t *outs = json_object_get(state, "outputs");
    if (json_integer_value(json_object_get(state, "version")) != 1 || !tool || !json_is_array(outs)) {
        gg_error_set(err, "invalid_state", "not a saved run");
        return NULL;
    }
    gg_graph_run *run = calloc(1, sizeof *run);
    if (!run) {
        gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    grun *r = &run->r;
    if (!run_begin(r, g, tool, json_object_get(state, "arguments"), opts, &r->own_res)) {
        gg_error_set(err, "invalid_state", "%s", r->own_res.error.message ? r->own_res.error.message : "bad state");
        gg_graph_run_free(run);
        return NULL;
    }
    r->cur = node_by_id(r->t, json_string_value(json_object_get(state, "node")));
    bool ok = r->cur >= 0;
    size_t i;
    json_t *o;
    json_array_foreach(outs, i, o) {
        int n = node_by_id(r->t, json_string_value(json_array_get(o, 0)));
        if (!ok || n < 0 || !run_record(r, n, json_array_get(o, 1))) {
            ok = false;
            break;
        }
        context_touch(r, n);
    }
    json_t *hist = json_object_get(state, "history");
    if (ok && r->want_history && json_is_array(hist)) json_array_extend(r->res->history, hist);
    json_t *answers = json_object_get(state, "answers");
    if (ok && json_is_object(answers) && r->t->nodes[r->cur].type == GN_ASK) r->ask_out = gg_json_clone(answers);
    double elapsed = json_number_value(json_object_get(state, "elapsedMs"));
    r->start_ms = gg_now_ms() - (elapsed > 0 ? elapsed : 0);
    r->start_wall = (long long)json_integer_value(json_object_get(state, "startedAt"));
    if (!ok) {
        gg_error_set(err, "invalid_state", "the saved run does not match tool '%s' of this graph", tool);
        gg_graph_run_free(run);
        return NULL;
    }
    return run;
}
