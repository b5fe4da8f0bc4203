/* tasks.c — the MCP 2026-07-28 tasks extension (io.modelcontextprotocol/tasks).
 *
 * A tools/call of a tool whose graph marks it taskSupport optional or required, from a
 * request that declared the extension, is answered at once with the task (CreateTaskResult)
 * once its row is stored; the run goes on in the background on the same resumable executor
 * as any call (mcp_http.c gw_task_run: the pool, no thread held while it waits). Its end is
 * written to the row: completed with the CallToolResult (a tool error is completed +
 * isError), failed with a JSON-RPC error (a graph that cannot reach its exit, a limit, an
 * interrupted run), cancelled, or input_required with the inputRequests of its elicit/
 * sample/roots/ask node and the sealed run state (reqstate.c). tasks/update collects the
 * answers and, once every pending request is answered, resumes the run from that state —
 * on whichever replica got the update. tasks/get and tasks/cancel read and write the row
 * only, so any replica sharing the store answers them; a cancel reaching the replica that
 * runs the task also stops the run (the cancel flag of the call, found in this process's
 * table of running tasks). Every store query filters on the tenant.
 *
 * A downstream's request relayed during a task's run (an mcp node with relay: true, a proxied
 * tool: exec.c relay_request) turns the task input_required the same way: the request is an
 * inputRequest (key relay-N), the sealed state names the run, which stays parked in this
 * process with the downstream's call open (provider.c acall_park; bounded per run and per
 * graph version as any relay round). tasks/update resumes it only on this replica: another
 * replica forwards the update here when the state names this one as its holder
 * (cluster.internal_url; gw_task_relay_holder, mcp_http.c forward_request); else elsewhere,
 * or once the downstream's call ended, the resumed call finds no run and the task fails with
 * invalid_state ("call the tool again"). While it waits the table keeps the run's cancel cell
 * (a parked entry), so tasks/cancel — here, or on another replica through the watcher's
 * check — cancels the downstream's call (notifications/cancelled).
 *
 * Ownership: the table of running tasks is the gateway's (gg_gateway's tasks: gateway.c makes
 * it at start and frees it at stop, after the pool), guarded by its mutex; entries are added
 * by gw_task_track and removed by gw_task_finish. A running entry points at its call (alive
 * until gw_task_finish, which removes the entry first); a parked entry holds a reference to
 * the run's cancel cell, dropped when the task resumes here, is cancelled, or its run is gone
 * (the cell's last reference is the entry's: the watcher's pass), or at the gateway's stop.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "gateway/calls.h"
#include "gateway/internal.h"
#include "gateway/relay.h"

#define TASK_TTL_MS 3600000LL   /* tasks/get answers for an hour after the task started */
#define TASK_POLL_MS 1000
#define TASK_ID_MAX 47
#define TASK_ANSWERS_MAX (256 * 1024) /* bytes of the answers a task collects */

/* ------------------------------------------------------------------ running here */

typedef struct running_task {
    char id[TASK_ID_MAX + 1];
    char tenant[GG_NAME_MAX + 1];
    mcp_call *call;        /* running: the task's call (its flag follows the run's cell) */
    mcp_cancel_cell *cell; /* parked: input_required with the run held here (referenced) */
    bool cancelled;        /* by tasks/cancel (not by shutdown) */
    unsigned long seq;     /* which entry the watcher's pass read the row for */
    struct running_task *next;
} running_task;

/* The gateway's table of the tasks running (or parked) in this process (gg_gateway's tasks). */
struct gw_tasks {
    pthread_mutex_t mu;   /* guards everything below */
    running_task *list;
    unsigned long seq;    /* the last entry's seq */
    char owner_id[64];    /* this replica, written to the tasks it runs (gw_tasks_recover) */
};

/* See calls.h. */
gw_tasks *gw_tasks_new(void) {
    gw_tasks *t = calloc(1, sizeof *t);
    if (t) pthread_mutex_init(&t->mu, NULL);
    return t;
}

/* See calls.h: every run has finished (gw_task_finish took its entry); parked entries
 * let go of their cells. */
void gw_tasks_free(gw_tasks *t) {
    if (!t) return;
    for (running_task *r = t->list, *next; r; r = next) {
        next = r->next;
        mcp_cancel_cell_unref(r->cell);
        free(r);
    }
    pthread_mutex_destroy(&t->mu);
    free(t);
}

/* See calls.h. */
bool gw_tasks_recover(gg_gateway *gw, const char *replica, bool all, gg_error *err) {
    gw_tasks *t = gw->tasks;
    pthread_mutex_lock(&t->mu);
    snprintf(t->owner_id, sizeof t->owner_id, "%s", replica ? replica : "");
    pthread_mutex_unlock(&t->mu);
    long long n = gg_store_tasks_mark_interrupted(gw->store, all ? NULL : t->owner_id, err);
    if (n > 0) {
        char buf[32];
        snprintf(buf, sizeof buf, "%lld", n);
        gg_log(GG_LOG_WARN, "tasks left working by a previous process marked failed (interrupted)", "count", buf, NULL);
    }
    return n >= 0;
}

static void set_owner(gw_tasks *t, gg_task_row *r) {
    pthread_mutex_lock(&t->mu);
    snprintf(r->owner, sizeof r->owner, "%s", t->owner_id);
    pthread_mutex_unlock(&t->mu);
}

static void track(gw_tasks *t, const char *tenant, const char *id, mcp_call *call, mcp_cancel_cell *cell) {
    running_task *r = calloc(1, sizeof *r);
    if (!r) { /* not cancellable in-process: tasks/cancel still ends it in the store */
        mcp_cancel_cell_unref(cell);
        return;
    }
    snprintf(r->id, sizeof r->id, "%s", id);
    snprintf(r->tenant, sizeof r->tenant, "%s", tenant);
    r->call = call;
    r->cell = cell;
    pthread_mutex_lock(&t->mu);
    r->seq = ++t->seq;
    r->next = t->list;
    t->list = r;
    pthread_mutex_unlock(&t->mu);
}

/* Remove the task's entries of one kind (parked or running); whether tasks/cancel asked for
 * one. */
static bool untrack_kind(gw_tasks *t, const char *id, bool parked) {
    bool cancelled = false;
    pthread_mutex_lock(&t->mu);
    for (running_task **p = &t->list; *p;) {
        running_task *r = *p;
        if (strcmp(r->id, id) || (r->cell != NULL) != parked) {
            p = &r->next;
            continue;
        }
        *p = r->next;
        cancelled |= r->cancelled;
        mcp_cancel_cell_unref(r->cell);
        free(r);
    }
    pthread_mutex_unlock(&t->mu);
    return cancelled;
}
static bool untrack(gw_tasks *t, const char *id) { return untrack_kind(t, id, false); }

void gw_task_track(gg_gateway *gw, const char *tenant, const char *id, mcp_call *call) {
    untrack_kind(gw->tasks, id, true); /* resumed: the parked run, if here, is this call's now */
    track(gw->tasks, tenant, id, call, NULL);
}

/* Set the cancel flag of the task's entries (seq: only that one). */
static void cancel_entries(gw_tasks *t, const char *id, unsigned long seq) {
    pthread_mutex_lock(&t->mu);
    for (running_task *r = t->list; r; r = r->next)
        if (!strcmp(r->id, id) && (!seq || r->seq == seq)) {
            r->cancelled = true;
            atomic_store(r->cell ? &r->cell->flag : mcp_call_cancel_flag(r->call), 1);
        }
    pthread_mutex_unlock(&t->mu);
}
static void cancel_local(gw_tasks *t, const char *id) { cancel_entries(t, id, 0); }

/* The parked entry of a task taken out of the table (its cell reference passes to the
 * caller), or NULL. */
static mcp_cancel_cell *take_parked(gw_tasks *t, const char *id) {
    mcp_cancel_cell *cell = NULL;
    pthread_mutex_lock(&t->mu);
    for (running_task **p = &t->list; *p; p = &(*p)->next) {
        running_task *r = *p;
        if (strcmp(r->id, id) || !r->cell) continue;
        *p = r->next;
        cell = r->cell;
        free(r);
        break;
    }
    pthread_mutex_unlock(&t->mu);
    return cell;
}

/* Parked entries whose run is gone (the entry holds the cell's last reference: the downstream's
 * call ended, the round expired, the run was cancelled): dropped. */
static void prune_parked(gw_tasks *t) {
    pthread_mutex_lock(&t->mu);
    for (running_task **p = &t->list; *p;) {
        running_task *r = *p;
        if (!r->cell || atomic_load(&r->cell->refs) > 1) {
            p = &r->next;
            continue;
        }
        *p = r->next;
        mcp_cancel_cell_unref(r->cell);
        free(r);
    }
    pthread_mutex_unlock(&t->mu);
}

/* See internal.h: a tasks/cancel that reached another replica stops the run here, and so does
 * a task that went on without its parked run. At most CANCEL_CHECK_MAX
 * entries a pass (the newest; an older one is checked once fewer run). */
#define CANCEL_CHECK_MAX 256
void gw_tasks_check_cancels(gg_gateway *gw) {
    struct pick { char id[TASK_ID_MAX + 1], tenant[GG_NAME_MAX + 1]; unsigned long parked; } *pick = NULL;
    size_t n = 0;
    gw_tasks *t = gw->tasks;
    prune_parked(t);
    pthread_mutex_lock(&t->mu);
    if (t->list) pick = malloc(CANCEL_CHECK_MAX * sizeof *pick); /* the list is empty most of the time */
    for (running_task *r = t->list; pick && r && n < CANCEL_CHECK_MAX; r = r->next)
        if (!r->cancelled) {
            memcpy(pick[n].id, r->id, sizeof pick[n].id);
            memcpy(pick[n].tenant, r->tenant, sizeof pick[n].tenant);
            pick[n].parked = r->cell ? r->seq : 0;
            n++;
        }
    pthread_mutex_unlock(&t->mu);
    for (size_t i = 0; i < n; i++) {
        gg_task_row row;
        gg_error e = GG_ERROR_INIT;
        if (gg_store_task_get(gw->store, pick[i].tenant, pick[i].id, &row, &e)) {
            if (!strcmp(row.status, "cancelled")) cancel_local(t, pick[i].id);
            /* a parked run its task went on without (ended, or resumed on another replica:
             * resumed here, its entry left the table before the row changed: do_update) */
            else if (pick[i].parked && strcmp(row.status, "input_required")) cancel_entries(t, pick[i].id, pick[i].parked);
            gg_task_row_clear(&row);
        }
        gg_error_clear(&e);
    }
    free(pick);
}

/* ------------------------------------------------------------------ shapes */

static json_t *iso(long long ms) {
    char b[GG_TIME_ISO_MAX];
    gg_time_iso8601(ms, b);
    return json_string(b);
}

/* The Task fields every answer about a task carries. */
static json_t *task_json(const gg_task_row *r, const char *result_type) {
    return json_pack("{s:s,s:s,s:s,s:o,s:o,s:I,s:i}", "resultType", result_type, "taskId", r->id, "status", r->status,
                     "createdAt", iso(r->created_ms), "lastUpdatedAt", iso(r->updated_ms), "ttlMs", (json_int_t)r->ttl_ms,
                     "pollIntervalMs", TASK_POLL_MS);
}

static char *rpc_result(json_t *id, json_t *res) {
    char *out = res ? mcp_jsonrpc_result(id, res) : mcp_jsonrpc_error(id, MCP_INTERNAL_ERROR, "Internal error: out of memory", NULL);
    json_decref(res);
    return out;
}

/* ------------------------------------------------------------------ create, finish */

/* See calls.h. */
char *gw_task_create(gg_gateway *gw, const char *tenant, const char *graph, int version, const char *key_id,
                     int client_caps, mcp_call *call, char task_id[TASK_ID_MAX + 1], gg_error *err) {
    uint8_t rnd[16];
    randombytes_buf(rnd, sizeof rnd);
    gg_task_row r = {0};
    memcpy(r.id, "task-", 5);
    sodium_bin2hex(r.id + 5, sizeof r.id - 5, rnd, sizeof rnd);
    snprintf(r.tenant, sizeof r.tenant, "%s", tenant);
    snprintf(r.graph, sizeof r.graph, "%s", graph);
    snprintf(r.tool, sizeof r.tool, "%s", mcp_call_tool(call));
    snprintf(r.key_id, sizeof r.key_id, "%s", key_id ? key_id : "");
    snprintf(r.status, sizeof r.status, "working");
    r.version = version;
    r.client_caps = client_caps;
    r.ttl_ms = TASK_TTL_MS;
    r.arguments = mcp_call_arguments(call);
    set_owner(gw->tasks, &r);
    if (!gg_store_task_insert(gw->store, &r, gw->cfg->tenant_max_tasks, err)) return NULL;
    r.created_ms = r.updated_ms = gg_wall_ms();
    snprintf(task_id, TASK_ID_MAX + 1, "%s", r.id);
    return rpc_result(mcp_call_id(call), task_json(&r, "task"));
}

static void set_failed(gg_task_row *r, int code, const char *message) {
    snprintf(r->status, sizeof r->status, "failed");
    r->error = json_pack("{s:i,s:s}", "code", code, "message", message ? message : "the task failed");
}

/* Errors of the run that are the server's or the graph's failure, not the tool reporting
 * one: the task failed (a protocol error) rather than completed with isError. */
static bool run_failure(const char *code) {
    static const char *const codes[] = {"no_route", "limit", "budget", "oom", "invalid_state", "graph_call"};
    for (size_t i = 0; code && i < sizeof codes / sizeof *codes; i++)
        if (!strcmp(code, codes[i])) return true;
    return false;
}

/* See calls.h. */
void gw_task_finish(gg_gateway *gw, const char *tenant, const char *task_id, mcp_call *call, char *body) {
    bool cancelled = untrack(gw->tasks, task_id);
    json_t *v = body ? json_loads(body, 0, NULL) : NULL;
    free(body);
    json_t *res = json_object_get(v, "result"), *err = json_object_get(v, "error");
    gg_task_row r = {0};
    snprintf(r.id, sizeof r.id, "%s", task_id);
    snprintf(r.tenant, sizeof r.tenant, "%s", tenant);
    const char *rt = json_string_value(json_object_get(res, "resultType"));
    mcp_cancel_cell *cell = NULL;
    if (res && rt && !strcmp(rt, "input_required")) {
        /* the run may stay parked here (a downstream's relayed request): its cell keeps the
         * task cancellable (an elicit node's round holds none past the call: pruned) */
        cell = call ? mcp_call_cancel_cell(call) : NULL;
        snprintf(r.status, sizeof r.status, "input_required");
        r.input_requests = json_incref(json_object_get(res, "inputRequests"));
        r.request_state = strdup(json_string_value(json_object_get(res, "requestState")) ? json_string_value(json_object_get(res, "requestState")) : "");
        r.input_responses = json_object();
    } else if (json_is_object(res) && json_is_true(json_object_get(res, "isError")) && call && run_failure(mcp_call_fail_code(call))) {
        const char *text = json_string_value(json_object_get(json_array_get(json_object_get(res, "content"), 0), "text"));
        set_failed(&r, MCP_INTERNAL_ERROR, text);
    } else if (json_is_object(res)) {
        snprintf(r.status, sizeof r.status, "completed");
        r.result = json_incref(res);
        /* the task's result is a 2026-07-28 CallToolResult, whose schema requires resultType
         * (the SDK's ext-tasks client refuses one without it) */
        if (!rt) json_object_set_new(r.result, "resultType", json_string("complete"));
    } else if (json_integer_value(json_object_get(err, "code")) == MCP_REQUEST_CANCELLED && cancelled) {
        snprintf(r.status, sizeof r.status, "cancelled");
    } else if (json_integer_value(json_object_get(err, "code")) == MCP_REQUEST_CANCELLED) {
        set_failed(&r, MCP_INTERNAL_ERROR, "the task was interrupted: the server shut down before it finished");
    } else {
        set_failed(&r, err ? (int)json_integer_value(json_object_get(err, "code")) : MCP_INTERNAL_ERROR,
                   err ? json_string_value(json_object_get(err, "message")) : "the task's run gave no answer");
    }
    bool changed;
    gg_error e = GG_ERROR_INIT;
    /* only a working task takes its run's end: a cancelled one stays cancelled */
    bool stored = gg_store_task_set(gw->store, &r, "working", &changed, &e);
    if (!stored)
        gg_log(GG_LOG_WARN, "task %s: its end could not be stored: %s", task_id, e.message ? e.message : e.code);
    else if (changed) gw_listen_task_changed(gw->listen, tenant, task_id);
    /* listed once the row says input_required (the watcher drops a parked run whose row says
     * otherwise); a task that is not waiting for it (cancelled meanwhile) lets it go */
    if (cell && stored && changed) track(gw->tasks, tenant, task_id, NULL, cell);
    else if (cell) {
        atomic_store(&cell->flag, 1);
        mcp_cancel_cell_unref(cell);
    }
    gg_error_clear(&e);
    gg_task_row_clear(&r);
    json_decref(v);
}

/* ------------------------------------------------------------------ the methods */

static char *not_found(json_t *id) {
    return mcp_jsonrpc_error(id, MCP_INVALID_PARAMS, "Invalid params: no such task (unknown taskId, ended past its TTL, or another tenant's)", NULL);
}

static char *store_error(json_t *id, gg_error *e) {
    char msg[300];
    snprintf(msg, sizeof msg, "Internal error: the task store failed: %.200s", e->message ? e->message : e->code);
    return mcp_jsonrpc_error(id, MCP_INTERNAL_ERROR, msg, NULL);
}

/* See internal.h: what tasks/get answers, and notifications/tasks carries (without resultType). */
json_t *gw_task_detailed(const gg_task_row *r, bool as_result) {
    json_t *t = task_json(r, "complete");
    if (t && !strcmp(r->status, "completed") && r->result) json_object_set(t, "result", r->result);
    if (t && !strcmp(r->status, "failed") && r->error) json_object_set(t, "error", r->error);
    if (t && !strcmp(r->status, "input_required") && r->input_requests) json_object_set(t, "inputRequests", r->input_requests);
    if (t && !as_result) json_object_del(t, "resultType");
    return t;
}

static char *do_get(const gg_task_row *r, json_t *id) { return rpc_result(id, gw_task_detailed(r, true)); }

static char *ack(json_t *id) { return mcp_jsonrpc_result_raw(id, "{\"resultType\":\"complete\"}"); }

static char *do_cancel(gg_gateway *gw, gg_task_row *r, json_t *id) {
    snprintf(r->status, sizeof r->status, "cancelled");
    json_decref(r->input_requests);
    r->input_requests = NULL;
    free(r->request_state);
    r->request_state = NULL;
    bool changed;
    gg_error e = GG_ERROR_INIT;
    if (!gg_store_task_set(gw->store, r, NULL, &changed, &e)) {
        char *out = store_error(id, &e);
        gg_error_clear(&e);
        return out;
    }
    cancel_local(gw->tasks, r->id); /* the run, when it runs here; elsewhere its end finds the row cancelled */
    untrack_kind(gw->tasks, r->id, true); /* a parked run's flag is set: its downstream's call ends, then the run */
    if (changed) gw_listen_task_changed(gw->listen, r->tenant, r->id);
    return ack(id); /* a task already ended gets the same acknowledgement */
}

/* Resume an input_required task whose requests are all answered: the run goes on from its
 * state with the answers, as a task again. What keeps it from starting fails the task.
 * parked (consumed): the cancel cell of the run parked here, if any — its downstream's call
 * is cancelled when the resumed call does not start (no run would take it back). */
static void resume(gg_gateway *gw, const gw_task_place *pl, gg_task_row *r, mcp_cancel_cell *parked) {
    char binding[3 * GG_NAME_MAX + 64], why[320];
    snprintf(binding, sizeof binding, "%s\n%s\n%d\n%s", r->tenant, r->graph, pl->version, r->key_id);
    json_t *msg = json_pack("{s:s,s:i,s:s,s:{s:s,s:O,s:O,s:s}}", "jsonrpc", "2.0", "id", 0, "method", "tools/call",
                            "params", "name", r->tool, "arguments", r->arguments ? r->arguments : json_object(),
                            "inputResponses", r->input_responses, "requestState", r->request_state ? r->request_state : "");
    mcp_message m;
    mcp_jsonrpc_classify(msg, &m);
    mcp_request_ctx rc = {MCP_VERSION_MODERN, MCP_LOG_OFF, false, true, r->client_caps | MCP_CLIENT_CAPS_TASKS,
                          gw->state_key, binding};
    mcp_outcome o;
    bool started = false;
    mcp_server_dispatch(pl->srv, &m, &rc, &o);
    if (o.kind == MCP_OUT_CALL) {
        mcp_call *c = o.call;
        o.call = NULL;
        started = gw_task_run(gw, pl->ep, c, r->key_id, r->id, why, sizeof why); /* a refusal fails the task */
    } else { /* the state does not open here (another graph version, expired): the task failed */
        gw_task_finish(gw, r->tenant, r->id, NULL, o.body);
        o.body = NULL;
    }
    if (parked && !started) atomic_store(&parked->flag, 1);
    mcp_cancel_cell_unref(parked);
    mcp_outcome_clear(&o);
    json_decref(msg);
}

static char *do_update(gg_gateway *gw, const gw_task_place *pl, gg_task_row *r, json_t *answers, json_t *id) {
    if (strcmp(r->status, "input_required") || !json_is_object(r->input_requests)) return ack(id); /* nothing asked */
    if (!json_is_object(r->input_responses)) {
        json_decref(r->input_responses);
        r->input_responses = json_object();
    }
    const char *k;
    json_t *a;
    json_object_foreach(answers, k, a) { /* answers to what was not asked are ignored */
        if (!json_object_get(r->input_requests, k)) continue;
        json_object_set(r->input_responses, k, a);
        json_object_del(r->input_requests, k);
    }
    char *text = json_dumps(r->input_responses, JSON_COMPACT);
    size_t n = text ? strlen(text) : 0;
    free(text);
    if (n > TASK_ANSWERS_MAX)
        return mcp_jsonrpc_error(id, MCP_INVALID_PARAMS, "Invalid params: the task's inputResponses are too large", NULL);
    bool all = json_object_size(r->input_requests) == 0;
    if (all) {
        snprintf(r->status, sizeof r->status, "working");
        set_owner(gw->tasks, r); /* the run resumes here */
    }
    char *state = r->request_state;
    if (all) r->request_state = NULL; /* the run takes it; the row keeps none */
    /* resuming here: the parked run leaves the table before the row says working, so the
     * watcher never takes it for one abandoned (it goes back if the row did not change) */
    mcp_cancel_cell *parked = all ? take_parked(gw->tasks, r->id) : NULL;
    bool changed;
    gg_error e = GG_ERROR_INIT;
    bool ok = gg_store_task_set(gw->store, r, "input_required", &changed, &e);
    if (parked && !(ok && changed)) { /* still waiting (or another update took it) */
        track(gw->tasks, r->tenant, r->id, NULL, parked);
        parked = NULL;
    }
    if (all) r->request_state = state;
    if (!ok) {
        char *out = store_error(id, &e);
        gg_error_clear(&e);
        return out;
    }
    if (changed) gw_listen_task_changed(gw->listen, r->tenant, r->id); /* working again, or fewer requests */
    if (all && changed) resume(gw, pl, r, parked);
    return ack(id);
}

/* See calls.h. */
json_t *gw_task_relay_holder(gg_gateway *gw, const gw_task_place *pl, const mcp_message *m) {
    json_t *tid = json_object_get(m->params, "taskId"), *holder = NULL;
    if (!json_is_string(tid) || !json_string_length(tid) || json_string_length(tid) > TASK_ID_MAX) return NULL;
    gg_task_row r;
    gg_error e = GG_ERROR_INIT;
    if (gg_store_task_get(gw->store, pl->tenant, json_string_value(tid), &r, &e)) {
        if (!strcmp(r.graph, pl->graph) && !strcmp(r.status, "input_required") && r.request_state) {
            /* opened as resume() will: the task's binding, the tool's name after it (server.c) */
            char binding[4 * GG_NAME_MAX + 256];
            const char *why;
            snprintf(binding, sizeof binding, "%s\n%s\n%d\n%s\n%s", r.tenant, r.graph, pl->version, r.key_id, r.tool);
            json_t *st = mcp_reqstate_open(gw->state_key, binding, r.request_state, &why);
            if (json_object_get(st, "relay")) holder = json_incref(json_object_get(st, "holder"));
            json_decref(st);
        }
        gg_task_row_clear(&r);
    }
    gg_error_clear(&e);
    return holder;
}

/* See calls.h. */
char *gw_tasks_dispatch(gg_gateway *gw, const gw_task_place *pl, const mcp_message *m, int client_caps) {
    const char *meth = m->method;
    if (strcmp(meth, "tasks/get") && strcmp(meth, "tasks/update") && strcmp(meth, "tasks/cancel")) {
        char msg[200];
        snprintf(msg, sizeof msg, "Method not found: %.100s (tasks/get, tasks/update and tasks/cancel are the tasks methods)", meth);
        return mcp_jsonrpc_error(m->id, MCP_METHOD_NOT_FOUND, msg, NULL);
    }
    if (!(client_caps & MCP_CLIENT_CAPS_TASKS)) {
        json_t *data = json_pack("{s:{s:{s:{}}}}", "requiredCapabilities", "extensions", MCP_TASKS_EXTENSION);
        char *out = mcp_jsonrpc_error(m->id, MCP_MISSING_CAPABILITY, "Missing required client capability: "
                                      "the tasks methods need the io.modelcontextprotocol/tasks extension declared", data);
        json_decref(data);
        return out;
    }
    json_t *tid = json_object_get(m->params, "taskId");
    if (!json_is_string(tid) || !json_string_length(tid) || json_string_length(tid) > TASK_ID_MAX)
        return json_is_string(tid) ? not_found(m->id)
                                   : mcp_jsonrpc_error(m->id, MCP_INVALID_PARAMS, "Invalid params: taskId must be a string", NULL);
    json_t *answers = json_object_get(m->params, "inputResponses");
    if (!strcmp(meth, "tasks/update") && !json_is_object(answers))
        return mcp_jsonrpc_error(m->id, MCP_INVALID_PARAMS, "Invalid params: tasks/update needs inputResponses (an object)", NULL);
    gg_task_row r;
    gg_error e = GG_ERROR_INIT;
    char *out;
    if (!gg_store_task_get(gw->store, pl->tenant, json_string_value(tid), &r, &e))
        out = !strcmp(e.code, "not_found") ? not_found(m->id) : store_error(m->id, &e);
    else if (strcmp(r.graph, pl->graph))
        out = not_found(m->id); /* a task of another graph of the tenant is not this endpoint's */
    else if (!strcmp(meth, "tasks/get")) out = do_get(&r, m->id);
    else if (!strcmp(meth, "tasks/cancel")) out = do_cancel(gw, &r, m->id);
    else out = do_update(gw, pl, &r, answers, m->id);
    gg_error_clear(&e);
    gg_task_row_clear(&r);
    return out;
}
