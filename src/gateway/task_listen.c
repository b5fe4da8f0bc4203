/* task_listen.c — the tasks a subscriptions/listen stream watches (io.modelcontextprotocol/tasks,
 * "Task Status Notifications"): the request names task ids in params.notifications.taskIds;
 * the acknowledgement lists those accepted, and every change of an accepted task's status
 * (or of what its DetailedTask carries) is sent as notifications/tasks (listen.c).
 *
 * An id is accepted only when the endpoint's tenant has it in the store on the endpoint's
 * graph (the same rule as tasks/get), so a stream never hears another tenant's or another
 * graph's task; at most GW_LISTEN_TASKS ids a stream (more are left out of the
 * acknowledgement). Asking for taskIds without declaring the extension is -32021.
 *
 * Each entry remembers the last state sent (status, lastUpdatedAt): no queue of notifications
 * is kept, a change a slow stream could not take (listen.c's backlog bound) is sent later as
 * the newest state (coalesced), and nothing follows a terminal status.
 *
 * Ownership: a watch belongs to its listener; listen.c calls these under its locks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/internal.h"
#include "gateway/relay.h"

#define TASK_ID_MAX 47

typedef struct {
    char id[TASK_ID_MAX + 1];
    char status[16];      /* last sent ("" = nothing yet) */
    long long updated_ms; /* its lastUpdatedAt */
} watched;

struct gw_task_watch {
    size_t n;
    watched t[GW_LISTEN_TASKS];
};

#define GONE "gone" /* the row is no more (deleted past its TTL): nothing further to send */

static bool terminal(const char *status) {
    return !strcmp(status, "completed") || !strcmp(status, "failed") || !strcmp(status, "cancelled") || !strcmp(status, GONE);
}

static char *missing_capability(json_t *id) {
    json_t *data = json_pack("{s:{s:{s:{}}}}", "requiredCapabilities", "extensions", MCP_TASKS_EXTENSION);
    char *out = mcp_jsonrpc_error(id, MCP_MISSING_CAPABILITY, "Missing required client capability: task status "
                                  "notifications need the io.modelcontextprotocol/tasks extension declared", data);
    json_decref(data);
    return out;
}

static bool known(const gw_task_watch *w, const char *id) {
    for (size_t i = 0; i < w->n; i++)
        if (!strcmp(w->t[i].id, id)) return true;
    return false;
}

/* Whether the tenant's store has task id on graph (a store error accepts nothing). */
static bool on_endpoint(gg_gateway *gw, const char *tenant, const char *graph, const char *id) {
    gg_task_row r;
    gg_error e = GG_ERROR_INIT;
    bool ok = gg_store_task_get(gw->store, tenant, id, &r, &e);
    gg_error_clear(&e);
    if (!ok) return false;
    ok = !strcmp(r.graph, graph);
    gg_task_row_clear(&r);
    return ok;
}

/* See relay.h. */
gw_task_watch *gw_task_watch_open(gg_gateway *gw, const char *tenant, const char *graph, const mcp_message *m,
                                  int client_caps, char **error) {
    *error = NULL;
    json_t *ids = json_object_get(json_object_get(m->params, "notifications"), "taskIds");
    if (!ids) return NULL;
    if (!(client_caps & MCP_CLIENT_CAPS_TASKS)) {
        *error = missing_capability(m->id);
        return NULL;
    }
    if (!json_is_array(ids)) {
        *error = mcp_jsonrpc_error(m->id, MCP_INVALID_PARAMS, "Invalid params: notifications.taskIds must be an array of task ids", NULL);
        return NULL;
    }
    gw_task_watch *w = calloc(1, sizeof *w);
    if (!w) {
        *error = mcp_jsonrpc_error(m->id, MCP_INTERNAL_ERROR, "Internal error: out of memory", NULL);
        return NULL;
    }
    /* at most GW_LISTEN_TASKS looked up, so a long list costs no more than a short one */
    size_t i, tried = 0;
    json_t *v;
    json_array_foreach(ids, i, v) {
        if (tried >= GW_LISTEN_TASKS) break;
        const char *id = json_string_value(v);
        if (!id || !*id || strlen(id) > TASK_ID_MAX || known(w, id)) continue;
        tried++;
        if (gw->store && on_endpoint(gw, tenant, graph, id)) snprintf(w->t[w->n++].id, TASK_ID_MAX + 1, "%s", id);
    }
    return w; /* possibly empty: the acknowledgement then says no task is watched */
}

void gw_task_watch_free(gw_task_watch *w) { free(w); }

json_t *gw_task_watch_ids(const gw_task_watch *w) {
    json_t *a = json_array();
    for (size_t i = 0; w && i < w->n; i++) json_array_append_new(a, json_string(w->t[i].id));
    return a;
}

static watched *find(const gw_task_watch *w, const char *id) {
    for (size_t i = 0; w && i < w->n; i++)
        if (!strcmp(w->t[i].id, id)) return (watched *)&w->t[i];
    return NULL;
}

/* See internal.h. A row older than the state sent is stale (read before a newer one went out). */
bool gw_task_watch_due(const gw_task_watch *w, const gg_task_row *r) {
    const watched *e = find(w, r->id);
    if (!e || terminal(e->status) || r->updated_ms < e->updated_ms) return false;
    return strcmp(e->status, r->status) || r->updated_ms != e->updated_ms;
}

void gw_task_watch_sent(gw_task_watch *w, const gg_task_row *r) {
    watched *e = find(w, r->id);
    if (!e) return;
    snprintf(e->status, sizeof e->status, "%s", r->status);
    e->updated_ms = r->updated_ms;
}

void gw_task_watch_gone(gw_task_watch *w, const char *id) {
    watched *e = find(w, id);
    if (e) snprintf(e->status, sizeof e->status, "%s", GONE);
}

void gw_task_watch_live(const gw_task_watch *w, const char *tenant, json_t *out) {
    for (size_t i = 0; w && i < w->n; i++) {
        if (terminal(w->t[i].status)) continue;
        char key[GG_NAME_MAX + TASK_ID_MAX + 2];
        snprintf(key, sizeof key, "%s\n%s", tenant, w->t[i].id); /* neither holds a newline */
        if (!json_object_get(out, key)) json_object_set_new(out, key, json_pack("[ss]", tenant, w->t[i].id));
    }
}
