/* relay.h — how changes reach the clients that hold a stream open: the tenant-wide endpoint
 * and its views (tenantwide.c, views.c), the standalone GET SSE streams and the resumable
 * POST streams (streams.c), the 2026-07-28 subscriptions/listen streams and the tasks they
 * watch (listen.c, task_listen.c), and the registry hook that fans a new active version out
 * to all of them. Downstream servers' list_changed and resources/updated come in through
 * catalogs.c (gateway/catalogs.h) and go out here. Not for use outside src/gateway.
 *
 * Ownership: the gateway holds one gw_streams, one gw_listen, one gw_tenantwide_cache and one
 * gw_views_cache (gg_gateway's streams, listen, tenantwide_cache, views_cache; made in
 * gateway.c, freed at its stop);
 * a GET stream's session holds a reference to the newest server it was told about.
 * gw_tenantwide_server and gw_view_server return new references; what gw_tenantwide_target
 * and gw_tenantwide_view_text hand out is borrowed from the server; a gw_task_watch belongs
 * to its listen stream. Every json_t argument is borrowed.
 *
 * Threads: called from HTTP threads, workers, the watcher, the stream keeper and downstream
 * transport threads at once. gw_streams and gw_listen each guard their table with their own
 * mutex and take the HTTP core's lock inside it, never around it (streams.c, listen.c);
 * gw_views_cache holds its own mutex only around its table, never while fanning out (views.c).
 * gw_views_check, gw_listen_tick and gw_listen_tasks_check are the watcher's.
 */
#ifndef GG_GATEWAY_RELAY_H
#define GG_GATEWAY_RELAY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "auth/auth.h"
#include "gateway/gateway.h"
#include "http/http.h"
#include "mcp/mcp.h"
#include "store/store.h"

/* ---- tenant-wide endpoint (tenantwide.c) -----------------------------------------------
 * /mcp/{tenant}/_all: every active graph's tools as "<graph>.<tool>" (a name graphs cannot
 * take: they are [a-z0-9-]). The server is built per request over the registry's servers
 * (a new reference) or NULL + err when the store cannot list the graphs. */
#define GW_TENANTWIDE "_all"
typedef struct gw_tenantwide_cache gw_tenantwide_cache; /* servers built lately, reused while nothing changed */
gw_tenantwide_cache *gw_tenantwide_cache_new(void);
void gw_tenantwide_cache_free(gw_tenantwide_cache *c);
mcp_server *gw_tenantwide_server(gg_gateway *gw, const char *tenant, json_t *view /* NULL = all */, gg_error *err);
/* Which graph (and its version) and tool a tenant-wide or view server's tool name runs
 * (strings borrowed from s): false for any other server or an unknown name. */
bool gw_tenantwide_target(mcp_server *s, const char *name, const char **graph, const char **tool, int *version);
/* The selected names of a view server that no graph offers now (new array). */
json_t *gw_tenantwide_missing(mcp_server *s);
/* The definition a view server was built from (compact JSON, sorted keys; borrowed from s),
 * NULL for any other server: what its clients were last told about. */
const char *gw_tenantwide_view_text(const mcp_server *s);
/* A tenant-wide or view server s's proxied uri ("<graph>.<uri>" of a graph it serves
 * resources of) subscribed to at its downstream, as resources/subscribe there does (a
 * subscriptions/listen stream's resourceSubscriptions); false for anything else. */
bool gw_tenantwide_subscribe(const mcp_server *s, const char *uri);
/* ---- views (views.c): /mcp/{tenant}/_views/{name} over the admin REST's definitions ---- */
#define GW_VIEWS_PREFIX "_views/"
#define GW_VIEWS_MAX 100      /* views per tenant */
#define GW_VIEW_TOOLS_MAX 200 /* tools per view */
#define GW_VIEW_NAME_MAX 48   /* view names: [a-z0-9-], as graph names, at most this long */
/* Which of a tenant's views name a graph (views.c): the endpoints ("_views/<name>") of those
 * selecting it for any of what (GW_VIEW_*) into eps, at most GW_VIEWS_MAX; how many. Served
 * from a per-tenant cache of the parsed views (gg_gateway's views_cache), read from the store
 * again after any view changed (see views.c); none when the store cannot be read. Any thread. */
enum { GW_VIEW_TOOLS = 1, GW_VIEW_RESOURCES = 2, GW_VIEW_PROMPTS = 4 };
typedef char gw_view_ep[GG_NAME_MAX + 1];
typedef struct gw_views_cache gw_views_cache;
gw_views_cache *gw_views_cache_new(void);
void gw_views_cache_free(gw_views_cache *c);
size_t gw_views_naming(gg_gateway *gw, const char *tenant, const char *graph, int what, gw_view_ep *eps);
/* The view's server (new reference) or NULL + err ("not_found" for no such view). */
mcp_server *gw_view_server(gg_gateway *gw, const char *tenant, const char *view, gg_error *err);
/* tenant/graph has a new active version or is gone: list_changed on the open GET streams of
 * the tenant-wide endpoint and of each view selecting one of the graph's tools. */
void gw_tenantwide_graph_changed(gg_gateway *gw, const char *tenant, const char *graph);
/* The watcher (every second, and at once on a views change notification): when the store's
 * views generation moved, each view with clients on this replica whose definition changed
 * (on any replica) sends them list_changed; a deleted one ends their streams. */
void gw_views_check(gg_gateway *gw);
/* Add [tenant, graph] to out (an object keyed by both: each endpoint once). */
void gw_endpoint_add(json_t *out, const char *tenant, const char *graph);
int gw_views_put(gg_http_req *req, gg_http_res *res, void *user);
int gw_views_get(gg_http_req *req, gg_http_res *res, void *user);
int gw_views_list(gg_http_req *req, gg_http_res *res, void *user);
int gw_views_delete(gg_http_req *req, gg_http_res *res, void *user);
/* MCP 2025-11-25 tool name: 1..128 of [A-Za-z0-9_.-]. */
bool gw_valid_tool_name(const char *s);

/* ---- standalone GET SSE streams (streams.c) ---------------------------------------------
 * GET /mcp/{tenant}/{graph} (and the internal and mount routes) opens a server-to-client
 * stream carrying notifications/tools/list_changed; see streams.c for the rules. */
#define GW_STREAMS_PER_SESSION 4 /* more GETs on one session → 409 */
#define GW_STREAMS_MAX 512       /* in all (half the public listener's connections) → 503 */
#define GW_STREAM_PING_MS 15000  /* ": ping" comment on idle streams, for proxies */
#define GW_STREAM_TICK_MS 250    /* the keeper's pass: dead clients, expiry, shutdown */
#define GW_REPLAY_EVENTS 16      /* events kept per session for GET streams resumed with Last-Event-ID */
#define GW_REPLAY_SESSIONS 1024  /* sessions whose log is kept with no stream open (more → logs dropped) */
typedef struct gw_streams gw_streams;
/* Resumable POST streams (tools/call of a 2025-11-25 session; streams.c): each logs its
 * last GW_POST_EVENTS events (the final response apart), at most GW_POST_STREAMS_MAX at once
 * (more answer on their POST without resumability); a stream whose run ended undelivered
 * waits GW_POST_KEEP_MS for a resume; a run whose client dropped its connection (not one
 * the server ended early) is cancelled unless it resumes within GW_POST_GRACE_MS (at once
 * when no event id went out). A POST ended early (mcp.sse_close_after) carries
 * "retry: GW_POST_RETRY_MS" so clients come back at once. */
#define GW_POST_EVENTS 16
#define GW_POST_STREAMS_MAX 1024
#define GW_POST_KEEP_MS 60000.0
#define GW_POST_GRACE_MS 1000.0 /* a connection the client dropped: resume by then or the run is cancelled */
#define GW_POST_RETRY_MS_S "250"
typedef struct gw_pstream gw_pstream;
gw_pstream *gw_pstream_open(gw_streams *s, const mcp_session *sess, gg_http_async *a, atomic_int *cancel,
                            long long close_after_ms);
void gw_pstream_event(gw_streams *s, gw_pstream *ps, const char *json);
void gw_pstream_finish(gw_streams *s, gw_pstream *ps, char *body, int status);
gw_streams *gw_streams_new(gg_gateway *gw);
void gw_streams_free(gw_streams *s);
/* srv: the endpoint's server; each session with a stream holds a reference (the newest
 * version it was told about), so the graph cache never frees a version under a stream. */
int gw_streams_get(gg_gateway *gw, gg_http_req *req, gg_http_res *res, const char *tenant, const char *graph,
                   mcp_server *srv, const gg_principal *pr);
void gw_streams_tools_changed(gw_streams *s, const char *tenant, const char *graph, mcp_server *srv);
/* A view's definition may have changed: list_changed to the sessions on tenant/graph whose
 * server was built from another definition than srv's; they then hold srv. */
void gw_streams_view_changed(gw_streams *s, const char *tenant, const char *graph, mcp_server *srv);
/* msg (a serialized notification) once to each session with a stream on tenant/graph (a
 * downstream's resources/prompts list_changed relayed, catalogs.c). */
void gw_streams_notify(gw_streams *s, const char *tenant, const char *graph, const char *msg);
/* notifications/resources/updated of uri to each session on tenant/graph subscribed to it,
 * at most one per (session, uri) each GW_UPDATED_MIN_MS (more within it: one trailing, sent
 * by the keeper's next pass); returns how many sessions are subscribed (catalogs.c). */
#define GW_UPDATED_MIN_MS 250
#define GW_UPDATED_PER_SESSION 64 /* = a session's subscriptions (mcp_session_subscribe) */
size_t gw_streams_updated(gw_streams *s, const char *tenant, const char *graph, const char *uri);
/* Per-user consent arrived (consent.c): notifications/elicitation/complete for elicitation_id
 * on the GET stream of session (its nonce, 32 hex digits) of tenant, if it has one on this
 * replica (else logged for its resume, as list_changed is); false when nothing took it. */
bool gw_streams_elicitation_complete(gw_streams *s, const char *tenant, const char *session, const char *elicitation_id);
/* Each endpoint whose graph part starts with prefix that has a session stream (gw_endpoint_add). */
void gw_streams_endpoints(gw_streams *s, const char *prefix, json_t *out);
/* Whether some GET stream is open now on an endpoint of tenant whose graph part starts with
 * prefix (the tenant-wide endpoints ask before they build a server to notify with). */
bool gw_streams_any_on(gw_streams *s, const char *tenant, const char *prefix);
void gw_streams_end_graph(gw_streams *s, const char *tenant, const char *graph);
void gw_streams_end_session(gw_streams *s, const mcp_session *sess);
void gw_streams_registry_hook(void *user, const char *tenant, const char *graph, bool removed);
size_t gw_streams_count(gw_streams *s);

/* ---- subscriptions/listen streams of the 2026-07-28 revision (listen.c) */
typedef struct gw_listen gw_listen;
gw_listen *gw_listen_new(gg_gateway *gw);
void gw_listen_free(gw_listen *l); /* ends what is still open */
/* Open the stream for a checked subscriptions/listen request m (borrowed). */
int gw_listen_open(gg_gateway *gw, gg_http_req *req, gg_http_res *res, const char *tenant, const char *graph,
                   const mcp_server *srv, const mcp_message *m, int client_caps);
void gw_listen_changed(gw_listen *l, const char *tenant, const char *graph); /* a new version is active */
/* A tenant-wide or view endpoint changed to srv: list_changed to its streams (view_only:
 * only those told about another view definition than srv's). */
void gw_listen_changed_to(gw_listen *l, const char *tenant, const char *graph, const mcp_server *srv, bool view_only);
bool gw_listen_any_on(gw_listen *l, const char *tenant, const char *prefix); /* as gw_streams_any_on */
void gw_listen_endpoints(gw_listen *l, const char *prefix, json_t *out);    /* as gw_streams_endpoints */
/* End streams gracefully: of tenant/graph, of tenant (graph NULL), or all (tenant NULL). */
void gw_listen_end(gw_listen *l, const char *tenant, const char *graph);
void gw_listen_tick(gw_listen *l, double now_ms); /* the watcher: reap, ping, end all when stopping */
/* A downstream's notifications/resources|prompts/list_changed (method) relayed to the
 * streams on tenant/graph whose filter asks for it (catalogs.c, already debounced). */
void gw_listen_relay(gw_listen *l, const char *tenant, const char *graph, const char *method);
/* A proxied resource's notifications/resources/updated of uri to the streams on tenant/graph
 * naming it in resourceSubscriptions, rate-bounded as gw_streams_updated; returns how many
 * streams name it (catalogs.c: none here or in sessions → the downstream is unsubscribed). */
size_t gw_listen_updated(gw_listen *l, const char *tenant, const char *graph, const char *uri);
/* notifications/tasks (task_listen.c, listen.c): a listen stream names up to GW_LISTEN_TASKS
 * task ids of its endpoint (params.notifications.taskIds); each status change of one is sent
 * as its DetailedTask. The task's row changed here (tasks.c): its listeners hear it now. */
#define GW_LISTEN_TASKS 16
void gw_listen_task_changed(gw_listen *l, const char *tenant, const char *task_id);
/* The watcher, each second or when the store's change watch says tasks changed: re-read the
 * rows of the live tasks the streams watch (changes made by another replica or a restart). */
void gw_listen_tasks_check(gw_listen *l);
/* graphgate_task_notifications_total{outcome} for /metrics. */
void gw_listen_metrics(gw_listen *l, gg_strbuf *out);
/* One stream's watched tasks (task_listen.c); the listener owns it. */
typedef struct gw_task_watch gw_task_watch;
/* From the request's params.notifications: NULL + *error (a JSON-RPC error body) when taskIds
 * is malformed or the request did not declare the tasks extension; NULL and no error when it
 * names no tasks. Ids are accepted when the tenant's store has them on graph. */
gw_task_watch *gw_task_watch_open(gg_gateway *gw, const char *tenant, const char *graph, const mcp_message *m,
                                  int client_caps, char **error);
void gw_task_watch_free(gw_task_watch *w);
json_t *gw_task_watch_ids(const gw_task_watch *w); /* the accepted ids (for the acknowledgement) */
/* Whether w watches the task and r is news to it (not yet sent, and not after a terminal status). */
bool gw_task_watch_due(const gw_task_watch *w, const gg_task_row *r);
void gw_task_watch_sent(gw_task_watch *w, const gg_task_row *r); /* r went out */
void gw_task_watch_gone(gw_task_watch *w, const char *id);         /* its row is deleted */
/* The ids w still expects changes of (not terminal): out["tenant\nid"] = [tenant, id]. */
void gw_task_watch_live(const gw_task_watch *w, const char *tenant, json_t *out);
/* The registry hook for GET streams and listen streams (user: the gateway). */
void gw_registry_changed(void *user, const char *tenant, const char *graph, bool removed);
size_t gw_streams_tenant_count(gw_streams *s, const char *tenant); /* counted in tenants.max_streams */
size_t gw_streams_tenant_posts(gw_streams *s, const char *tenant); /* tenants.max_resumable_streams */

#endif
