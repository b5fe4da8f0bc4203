/* listen.c — subscriptions/listen of the 2026-07-28 revision: a POST whose response is an
 * SSE stream that stays open and carries the change notifications the client asked for.
 *
 * The stream opens with notifications/subscriptions/acknowledged (the filter the gateway
 * honours); when a new version of the graph becomes active (the registry hook), each stream
 * on it gets notifications/{tools,prompts,resources}/list_changed as its filter asks and
 * notifications/resources/updated for each subscribed URI the new version serves. Every
 * frame carries the request's id as _meta["io.modelcontextprotocol/subscriptionId"]. The
 * graph or tenant deleted, or shutdown, ends a stream with the graceful-closure result.
 *
 * The gateway's watcher ticks the table (gw_listen_tick): streams whose client went away
 * are dropped, the others get a ": ping" comment every GW_STREAM_PING_MS. Bounds: at most
 * GW_LISTEN_MAX streams in all and GW_LISTEN_PER_TENANT per endpoint tenant (more → 429 /
 * 503 with Retry-After), 16 subscribed URIs per stream.
 *
 * A downstream's notifications relayed (catalogs.c): a proxied resources/ or
 * prompts/list_changed goes to the streams of the graphs, views and tenant-wide endpoint
 * re-exporting them whose filter asks for it (gw_listen_relay, already debounced per
 * downstream); a proxied URI a stream names in resourceSubscriptions is subscribed to at its
 * downstream when the stream opens (gg_graph_proxy_subscribe; on _all and views a
 * "<graph>.<uri>" goes to that graph, gw_tenantwide_subscribe), and its
 * notifications/resources/updated reach the stream at most once per GW_UPDATED_MIN_MS per
 * URI, more within it folded into one trailing update the tick sends (gw_listen_updated).
 * Nothing is unsubscribed when a stream ends: the next update nobody hears does it
 * (catalogs.c relay_updated).
 *
 * Task status notifications (task_listen.c holds a stream's watched tasks): a task's row
 * changed by this replica is re-read and sent at once (gw_listen_task_changed); the watcher
 * re-reads the live watched tasks each second, or when PostgreSQL's change watch says tasks
 * changed, for what other replicas and restarts did (gw_listen_tasks_check). A stream whose
 * reader lags (more than LISTEN_TASK_BACKLOG bytes queued) skips a change: its watch keeps
 * the older state, so the next check sends the newest one (counted as coalesced).
 *
 * Locking: task_mu serialises reading a task's row and sending it, so streams get a task's
 * states in the order the store took them; mu guards the list and is taken inside task_mu;
 * the HTTP core's lock is taken inside mu, never around it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/calls.h"
#include "gateway/internal.h"
#include "gateway/relay.h"

#define GW_LISTEN_MAX 1024
#define GW_LISTEN_PER_TENANT 64
#define LISTEN_URIS 16
#define SUB_ID "io.modelcontextprotocol/subscriptionId"
#define LISTEN_TASK_BACKLOG (256 * 1024) /* queued bytes past which a task change is coalesced */
#define TASK_CHECK_MAX 256               /* watched tasks re-read a pass (rotating) */

enum { F_TOOLS = 1, F_PROMPTS = 2, F_RESOURCES = 4 };

typedef struct listener {
    gg_http_async *a;
    char tenant[GG_NAME_MAX + 1], graph[GG_NAME_MAX + 1];
    int filter;
    json_t *id;   /* the subscription id: the request's JSON-RPC id */
    json_t *uris; /* resourceSubscriptions honoured */
    struct {      /* per uris[i]: the last relayed resources/updated, one more due after it */
        double at;
        bool pending;
    } upd[LISTEN_URIS];
    char *view;   /* a view endpoint's definition last announced (gw_tenantwide_view_text) */
    gw_task_watch *tasks; /* notifications/tasks: the tasks watched (NULL: none asked) */
    struct listener *next;
} listener;

struct gw_listen {
    gg_gateway *gw;
    pthread_mutex_t mu, task_mu;
    listener *head;
    size_t open;
    double next_ping_ms;
    atomic_int watching;     /* streams watching tasks: none → a task change costs nothing */
    size_t check_from;       /* rotation of gw_listen_tasks_check (under task_mu) */
    atomic_ullong sent, coalesced; /* notifications/tasks */
};

gw_listen *gw_listen_new(gg_gateway *gw) {
    gw_listen *l = calloc(1, sizeof *l);
    if (!l) return NULL;
    l->gw = gw;
    pthread_mutex_init(&l->mu, NULL);
    pthread_mutex_init(&l->task_mu, NULL);
    return l;
}

void gw_listen_free(gw_listen *l) {
    if (!l) return;
    gw_listen_end(l, NULL, NULL);
    pthread_mutex_destroy(&l->mu);
    pthread_mutex_destroy(&l->task_mu);
    free(l);
}

/* One notification on a stream, tagged with its subscription id (params consumed). */
static bool send_frame(listener *s, const char *method, json_t *params) {
    if (!params) params = json_object();
    json_t *meta = json_object();
    json_object_set(meta, SUB_ID, s->id);
    json_object_set_new(params, "_meta", meta);
    char *body = mcp_jsonrpc_notification(method, params);
    json_decref(params);
    bool ok = body && gg_http_sse_event(s->a, "message", NULL, body);
    free(body);
    return ok;
}

static void listener_free(listener *s) {
    gw_task_watch_free(s->tasks);
    json_decref(s->id);
    json_decref(s->uris);
    free(s->view);
    free(s);
}

/* The graceful end: the listen request's result, then the stream closes. */
static void end_stream(listener *s) {
    json_t *res = json_pack("{s:s,s:{s:O}}", "resultType", "complete", "_meta", SUB_ID, s->id);
    char *body = res ? mcp_jsonrpc_result(s->id, res) : NULL;
    if (body) gg_http_sse_event(s->a, "message", NULL, body);
    free(body);
    json_decref(res);
    gg_http_async_complete(s->a);
    listener_free(s);
}

static size_t tenant_count(gw_listen *l, const char *tenant) {
    size_t n = 0;
    for (listener *s = l->head; s; s = s->next) n += !strcmp(s->tenant, tenant);
    return n;
}

/* The filter the endpoint can honour, from params.notifications. */
static listener *new_listener(const mcp_message *m, const mcp_server *srv) {
    listener *s = calloc(1, sizeof *s);
    if (!s || !(s->uris = json_array())) {
        free(s);
        return NULL;
    }
    json_t *f = json_object_get(m->params, "notifications");
    bool res = mcp_server_has_resources(srv);
    s->filter = (json_is_true(json_object_get(f, "toolsListChanged")) ? F_TOOLS : 0) |
                (json_is_true(json_object_get(f, "promptsListChanged")) && mcp_server_has_prompts(srv) ? F_PROMPTS : 0) |
                (json_is_true(json_object_get(f, "resourcesListChanged")) && res ? F_RESOURCES : 0);
    size_t i;
    json_t *u;
    json_array_foreach(json_object_get(f, "resourceSubscriptions"), i, u)
        if (res && json_is_string(u) && json_array_size(s->uris) < LISTEN_URIS && strlen(json_string_value(u)) < 2048)
            json_array_append(s->uris, u);
    s->id = json_incref(m->id);
    const char *view = gw_tenantwide_view_text(srv);
    if (view && !(s->view = strdup(view))) {
        listener_free(s);
        return NULL;
    }
    return s;
}

/* The filter as acknowledged. */
static json_t *ack_params(const listener *s) {
    json_t *n = json_object();
    if (s->filter & F_TOOLS) json_object_set_new(n, "toolsListChanged", json_true());
    if (s->filter & F_PROMPTS) json_object_set_new(n, "promptsListChanged", json_true());
    if (s->filter & F_RESOURCES) json_object_set_new(n, "resourcesListChanged", json_true());
    if (json_array_size(s->uris)) json_object_set(n, "resourceSubscriptions", s->uris);
    if (s->tasks) json_object_set_new(n, "taskIds", gw_task_watch_ids(s->tasks));
    return json_pack("{s:o}", "notifications", n);
}

static int refuse(gg_http_res *res, json_t *id, int status, const char *msg) {
    gg_http_res_header(res, "Retry-After", "1");
    char *body = mcp_jsonrpc_error(id, MCP_SERVER_BUSY, msg, NULL);
    if (body) gg_http_res_bytes_take(res, status, "application/json", body, strlen(body));
    return GG_HTTP_DONE;
}

/* The proxied URIs among a new stream's resourceSubscriptions are subscribed to at their
 * downstream (its updates come back through gw_listen_updated); the graph's own need nothing.
 * On _all or a view, "<graph>.<uri>" of a graph it serves resources of goes to that graph. */
static void subscribe_proxied(const mcp_server *srv, json_t *uris) {
    gg_graph *g = json_array_size(uris) ? gg_graph_provider_graph(mcp_server_provider(srv)) : NULL;
    size_t i;
    json_t *u;
    json_array_foreach(uris, i, u) {
        if (g) gg_graph_proxy_subscribe(g, json_string_value(u));
        else gw_tenantwide_subscribe(srv, json_string_value(u));
    }
}

/* See relay.h. */
int gw_listen_open(gg_gateway *gw, gg_http_req *req, gg_http_res *res, const char *tenant, const char *graph,
                   const mcp_server *srv, const mcp_message *m, int client_caps) {
    gw_listen *l = gw->listen;
    if (!l || (gw->app && gw->app->stopping)) return refuse(res, m->id, 503, "Server busy: shutting down");
    char *bad = NULL;
    gw_task_watch *tasks = gw_task_watch_open(gw, tenant, graph, m, client_caps, &bad);
    if (bad) {
        gg_http_res_bytes_take(res, mcp_modern_status(bad), "application/json", bad, strlen(bad));
        return GG_HTTP_DONE;
    }
    listener *s = new_listener(m, srv);
    if (!s) {
        gw_task_watch_free(tasks);
        return refuse(res, m->id, 503, "Server busy: out of memory");
    }
    s->tasks = tasks;
    snprintf(s->tenant, sizeof s->tenant, "%s", tenant);
    snprintf(s->graph, sizeof s->graph, "%s", graph);
    pthread_mutex_lock(&l->mu);
    int status = l->open >= GW_LISTEN_MAX ? 503 : tenant_count(l, tenant) >= GW_LISTEN_PER_TENANT ? 429 : 0;
    if (!status && !(s->a = gg_http_defer(req))) status = 503;
    if (status) {
        pthread_mutex_unlock(&l->mu);
        int rc = refuse(res, m->id, status, status == 429 ? "Too many subscription streams for this tenant; retry later"
                                                          : "Server busy: too many subscription streams; retry later");
        listener_free(s);
        return rc;
    }
    gg_http_res_header(gg_http_async_res(s->a), "X-Accel-Buffering", "no");
    if (!gg_http_async_stream(s->a, 200, "text/event-stream")) {
        pthread_mutex_unlock(&l->mu);
        gg_http_async_complete(s->a);
        listener_free(s);
        return GG_HTTP_DEFERRED;
    }
    send_frame(s, "notifications/subscriptions/acknowledged", ack_params(s));
    s->next = l->head;
    l->head = s;
    l->open++;
    json_t *ids = s->tasks ? gw_task_watch_ids(s->tasks) : NULL, *uris = json_incref(s->uris);
    if (s->tasks) atomic_fetch_add(&l->watching, 1);
    pthread_mutex_unlock(&l->mu);
    subscribe_proxied(srv, uris);
    json_decref(uris);
    /* each watched task's state now, so a change made before the stream opened is not missed */
    size_t i;
    json_t *id;
    json_array_foreach(ids, i, id) gw_listen_task_changed(l, tenant, json_string_value(id));
    json_decref(ids);
    return GG_HTTP_DEFERRED;
}

/* A new version is active: what each stream on the endpoint asked for. */
static void notify(listener *s, const mcp_server *srv) {
    if (s->filter & F_TOOLS) send_frame(s, "notifications/tools/list_changed", NULL);
    if (s->filter & F_PROMPTS) send_frame(s, "notifications/prompts/list_changed", NULL);
    if (s->filter & F_RESOURCES) send_frame(s, "notifications/resources/list_changed", NULL);
    size_t i;
    json_t *u;
    json_array_foreach(s->uris, i, u)
        if (srv && mcp_server_serves_uri(srv, json_string_value(u)))
            send_frame(s, "notifications/resources/updated", json_pack("{s:O}", "uri", u));
}

static bool on(const listener *s, const char *tenant, const char *graph) {
    return !strcmp(s->tenant, tenant) && !strcmp(s->graph, graph);
}

/* See relay.h. */
void gw_listen_changed(gw_listen *l, const char *tenant, const char *graph) {
    if (!l) return;
    /* a sync activating many graphs looks each up only when a stream listens on it */
    pthread_mutex_lock(&l->mu);
    bool any = false;
    for (listener *s = l->head; s && !any; s = s->next) any = on(s, tenant, graph);
    pthread_mutex_unlock(&l->mu);
    if (!any) return;
    mcp_server *srv = l->gw->registry ? gw_registry_get(l->gw->registry, tenant, graph, NULL, NULL) : NULL;
    gw_listen_changed_to(l, tenant, graph, srv, false);
    mcp_server_unref(srv);
}

/* See relay.h. */
void gw_listen_changed_to(gw_listen *l, const char *tenant, const char *graph, const mcp_server *srv, bool view_only) {
    if (!l) return;
    const char *view = gw_tenantwide_view_text(srv);
    pthread_mutex_lock(&l->mu);
    for (listener *s = l->head; s; s = s->next) {
        if (!on(s, tenant, graph)) continue;
        bool same = s->view == view || (s->view && view && !strcmp(s->view, view));
        if (view_only && same) continue; /* told already (by the replica's own admin request) */
        notify(s, srv);
        if (same) continue;
        char *copy = view ? strdup(view) : NULL;
        if (copy || !view) { /* out of memory: kept, told again next time */
            free(s->view);
            s->view = copy;
        }
    }
    pthread_mutex_unlock(&l->mu);
}

/* See relay.h. */
bool gw_listen_any_on(gw_listen *l, const char *tenant, const char *prefix) {
    bool any = false;
    size_t n = strlen(prefix);
    if (!l) return false;
    pthread_mutex_lock(&l->mu);
    for (listener *s = l->head; s && !any; s = s->next) any = !strcmp(s->tenant, tenant) && !strncmp(s->graph, prefix, n);
    pthread_mutex_unlock(&l->mu);
    return any;
}

/* See relay.h. */
void gw_listen_endpoints(gw_listen *l, const char *prefix, json_t *out) {
    size_t n = strlen(prefix);
    if (!l) return;
    pthread_mutex_lock(&l->mu);
    for (listener *s = l->head; s; s = s->next)
        if (!strncmp(s->graph, prefix, n)) gw_endpoint_add(out, s->tenant, s->graph);
    pthread_mutex_unlock(&l->mu);
}

/* See relay.h. */
void gw_listen_end(gw_listen *l, const char *tenant, const char *graph) {
    if (!l) return;
    pthread_mutex_lock(&l->mu);
    for (listener **pp = &l->head; *pp;) {
        listener *s = *pp;
        if (tenant && (strcmp(s->tenant, tenant) || (graph && strcmp(s->graph, graph)))) {
            pp = &s->next;
            continue;
        }
        *pp = s->next;
        l->open--;
        if (s->tasks) atomic_fetch_sub(&l->watching, 1);
        end_stream(s);
    }
    pthread_mutex_unlock(&l->mu);
}

/* See relay.h. */
void gw_listen_relay(gw_listen *l, const char *tenant, const char *graph, const char *method) {
    int want = !strcmp(method, "notifications/resources/list_changed") ? F_RESOURCES
               : !strcmp(method, "notifications/prompts/list_changed") ? F_PROMPTS : 0;
    if (!l || !want) return;
    pthread_mutex_lock(&l->mu);
    for (listener *s = l->head; s; s = s->next)
        if ((s->filter & want) && on(s, tenant, graph)) send_frame(s, method, NULL);
    pthread_mutex_unlock(&l->mu);
}

static void send_updated(listener *s, size_t i, double now) {
    send_frame(s, "notifications/resources/updated", json_pack("{s:O}", "uri", json_array_get(s->uris, i)));
    s->upd[i].at = now;
    s->upd[i].pending = false;
}

/* See relay.h. */
size_t gw_listen_updated(gw_listen *l, const char *tenant, const char *graph, const char *uri) {
    size_t n = 0, i;
    json_t *u;
    if (!l) return 0;
    double now = gg_now_ms();
    pthread_mutex_lock(&l->mu);
    for (listener *s = l->head; s; s = s->next) {
        if (!on(s, tenant, graph)) continue;
        json_array_foreach(s->uris, i, u) {
            if (strcmp(json_string_value(u), uri)) continue;
            n++;
            if (now - s->upd[i].at >= GW_UPDATED_MIN_MS) send_updated(s, i, now);
            else s->upd[i].pending = true; /* folded into one after the interval (the tick) */
        }
    }
    pthread_mutex_unlock(&l->mu);
    return n;
}

/* The tick's pass on a stream: the trailing update of each URI whose interval is over. */
static void updated_trailing(listener *s, double now) {
    for (size_t i = 0; i < json_array_size(s->uris); i++)
        if (s->upd[i].pending && now - s->upd[i].at >= GW_UPDATED_MIN_MS) send_updated(s, i, now);
}

static const char PING[] = ": ping\n\n";

/* See relay.h. */
void gw_listen_tick(gw_listen *l, double now) {
    if (!l) return;
    if (l->gw->app && l->gw->app->stopping) {
        gw_listen_end(l, NULL, NULL);
        return;
    }
    pthread_mutex_lock(&l->mu);
    bool ping = now >= l->next_ping_ms;
    if (ping) l->next_ping_ms = now + GW_STREAM_PING_MS;
    for (listener **pp = &l->head; *pp;) {
        listener *s = *pp;
        if (!gg_http_async_abandoned(s->a) && !(ping && !gg_http_async_write(s->a, PING, sizeof PING - 1))) {
            updated_trailing(s, now);
            pp = &s->next;
            continue;
        }
        *pp = s->next;
        l->open--;
        if (s->tasks) atomic_fetch_sub(&l->watching, 1);
        gg_http_async_complete(s->a);
        listener_free(s);
    }
    pthread_mutex_unlock(&l->mu);
}

/* ---- notifications/tasks */

/* r to every stream of its tenant watching it that has not heard it (mu held). A lagging
 * reader's copy is skipped and counted; its watch keeps the older state for a later pass. */
static void deliver(gw_listen *l, const gg_task_row *r) {
    json_t *task = NULL;
    for (listener *s = l->head; s; s = s->next) {
        if (!s->tasks || strcmp(s->tenant, r->tenant) || !gw_task_watch_due(s->tasks, r)) continue;
        if (!task && !(task = gw_task_detailed(r, false))) return;
        if (gg_http_async_queued(s->a) > LISTEN_TASK_BACKLOG) {
            atomic_fetch_add(&l->coalesced, 1);
            continue;
        }
        /* not sent (gone, or past the stream's buffer cap): the watch keeps the older state */
        if (!send_frame(s, "notifications/tasks", json_copy(task))) continue;
        gw_task_watch_sent(s->tasks, r);
        atomic_fetch_add(&l->sent, 1);
    }
    json_decref(task);
}

static bool anyone_watches(gw_listen *l, const char *tenant, const char *task_id) {
    gg_task_row probe = {0};
    snprintf(probe.id, sizeof probe.id, "%s", task_id);
    probe.updated_ms = 1LL << 62; /* newer than anything sent: due whenever watched and not ended */
    bool any = false;
    pthread_mutex_lock(&l->mu);
    for (listener *s = l->head; s && !any; s = s->next)
        any = s->tasks && !strcmp(s->tenant, tenant) && gw_task_watch_due(s->tasks, &probe);
    pthread_mutex_unlock(&l->mu);
    return any;
}

/* Read the task's row and send it where it is news (task_mu held). */
static void refresh(gw_listen *l, const char *tenant, const char *task_id) {
    gg_task_row r;
    gg_error e = GG_ERROR_INIT;
    if (gg_store_task_get(l->gw->store, tenant, task_id, &r, &e)) {
        pthread_mutex_lock(&l->mu);
        deliver(l, &r);
        pthread_mutex_unlock(&l->mu);
        gg_task_row_clear(&r);
    } else if (!strcmp(e.code, "not_found")) { /* deleted past its TTL: no longer re-read */
        pthread_mutex_lock(&l->mu);
        for (listener *s = l->head; s; s = s->next)
            if (s->tasks && !strcmp(s->tenant, tenant)) gw_task_watch_gone(s->tasks, task_id);
        pthread_mutex_unlock(&l->mu);
    }
    gg_error_clear(&e);
}

/* See relay.h. */
void gw_listen_task_changed(gw_listen *l, const char *tenant, const char *task_id) {
    if (!l || !atomic_load(&l->watching) || !anyone_watches(l, tenant, task_id)) return;
    pthread_mutex_lock(&l->task_mu);
    refresh(l, tenant, task_id);
    pthread_mutex_unlock(&l->task_mu);
}

/* See relay.h. */
void gw_listen_tasks_check(gw_listen *l) {
    if (!l || !atomic_load(&l->watching)) return;
    json_t *live = json_object();
    pthread_mutex_lock(&l->mu);
    for (listener *s = l->head; s; s = s->next) gw_task_watch_live(s->tasks, s->tenant, live);
    pthread_mutex_unlock(&l->mu);
    size_t n = json_object_size(live), k = 0;
    pthread_mutex_lock(&l->task_mu);
    size_t from = n ? l->check_from % n : 0;
    l->check_from = from + TASK_CHECK_MAX;
    pthread_mutex_unlock(&l->task_mu);
    const char *key;
    json_t *p;
    json_object_foreach(live, key, p) { /* a window of TASK_CHECK_MAX from the rotating start */
        size_t at = k++;
        if ((at + n - from) % n >= TASK_CHECK_MAX) continue;
        pthread_mutex_lock(&l->task_mu); /* taken per task, so a local change waits one read at most */
        refresh(l, json_string_value(json_array_get(p, 0)), json_string_value(json_array_get(p, 1)));
        pthread_mutex_unlock(&l->task_mu);
    }
    json_decref(live);
}

/* See relay.h. */
void gw_listen_metrics(gw_listen *l, gg_strbuf *out) {
    if (!l) return;
    gg_strbuf_printf(out, "# HELP graphgate_task_notifications_total notifications/tasks on subscriptions/listen streams: "
                          "sent, or coalesced (a lagging stream gets the newest state later)\n"
                          "# TYPE graphgate_task_notifications_total counter\n"
                          "graphgate_task_notifications_total{outcome=\"sent\"} %llu\n"
                          "graphgate_task_notifications_total{outcome=\"coalesced\"} %llu\n",
                     (unsigned long long)atomic_load(&l->sent), (unsigned long long)atomic_load(&l->coalesced));
}

/* The registry's change hook for both kinds of streams: GET streams of sessions
 * (streams.c) and subscriptions/listen streams. */
void gw_registry_changed(void *user, const char *tenant, const char *graph, bool removed) {
    gg_gateway *gw = user;
    gw_streams_registry_hook(gw->streams, tenant, graph, removed);
    if (removed) gw_listen_end(gw->listen, tenant, graph);
    else gw_listen_changed(gw->listen, tenant, graph);
}
