/* calls.h — tools/calls beyond one endpoint request and what they leave behind: a call's
 * trace span (trace.c), its result in the execution record (mcp_http.c), graph-to-graph
 * calls (graphcall.c), fire-and-forget branches (branches.c), MCP 2026-07-28 tasks
 * (tasks.c) and the authoring toolkit's runs (toolkit.c, toolkit_run.c). Not for use
 * outside src/gateway.
 *
 * Ownership: graph calls, branches and task runs each record their own execution row
 * (parent_id = the caller's) and own copies of what they need from the caller; the gateway
 * holds the one gw_async (gg_gateway's async: made by gateway.c, drained then freed at its
 * stop). The table of running tasks is tasks.c's gw_tasks, gg_gateway's tasks (made by
 * gateway.c before gw_tasks_recover, freed at its stop after the pool; gw_task_track adds,
 * gw_task_finish removes). Results and records are borrowed unless a comment says stolen.
 *
 * Threads: none of these hold a thread while they wait: runs continue on the tenant's pool
 * queue and done callbacks come on a worker (or before the function returns).
 * gw_tasks_check_cancels is the watcher's; tasks.c guards its table with its mutex,
 * branches.c its counts.
 */
#ifndef GG_GATEWAY_CALLS_H
#define GG_GATEWAY_CALLS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "gateway/gateway.h"
#include "graph/graph.h"
#include "http/http.h"
#include "mcp/mcp.h"
#include "store/store.h"

/* trace.c: a tools/call's server span (NULL with telemetry off); the call's trace context
 * is taken from the client (_meta, else HTTP headers) and then set to the span's. */
gg_span *gw_call_span_begin(gg_http_req *req, mcp_call *call, const char *tenant, const char *graph, int version,
                            const char *key_id);
void gw_call_span_end(gg_span *s, mcp_call *call, const char *refused);

/* ---- the authoring toolkit (toolkit.c, toolkit_run.c) ---------------------------------- */
/* A CallToolResult with sc (stolen) as structuredContent and its JSON as text; an error
 * result {"error":{code,message}}. */
json_t *gw_toolkit_result(json_t *sc, bool is_error);
json_t *gw_toolkit_error(const char *code, const char *message);
/* run_graph: compile args.yaml for ctx->identity.tenant and run args.tool with args.arguments on the
 * executor, under every limit a stored graph's run has; done gets {ok, output | error,
 * trace, ...} exactly once (a worker, or before this returns). Stores nothing. */
void gw_toolkit_run_graph(gg_gateway *gw, json_t *args, const mcp_call_ctx *ctx, mcp_provider_done_fn done,
                          void *user);

/* ---- graph-to-graph calls (graphcall.c) ------------------------------------------------
 * gg_graph_call_fn of every graph provider the gateway builds (user = the gateway): runs a
 * tool of another graph of the caller's tenant in-process on the same worker pool, records
 * it as its own execution with the caller's as parent, and refuses past GW_GRAPH_CALL_DEPTH
 * nested calls ("depth_exceeded"). The name is looked up in the caller's tenant only. */
#define GW_GRAPH_CALL_DEPTH 8
void gw_graph_call(void *user, const mcp_call_ctx *caller, const char *graph, const char *tool, json_t *arguments,
                   atomic_int *cancelled, void (*done)(void *done_user, json_t *result, gg_error *err), void *done_user);
/* Refuse an upload whose graph calls itself through other graphs (their active versions):
 * false + err (code "graph_cycle", the path in the message). */
bool gw_graph_calls_acyclic(gg_gateway *gw, const char *tenant, const char *graph, const gg_graph *g, gg_error *err);
/* The tool's value of a CallToolResult into the record (mcp_http.c). */
void gw_record_result(gg_exec_record *r, json_t *res);

/* ---- fire-and-forget branches (branches.c) -------------------------------------------------
 * The gg_graph_async_hooks of every graph provider the gateway builds: per-tenant and total
 * bounds on outstanding branches (0 = no cap), one execution row per branch (parent_id =
 * the caller's), shutdown that waits, then cancels and records what is left as interrupted. */
typedef struct gw_async gw_async;
#define GW_ASYNC_DRAIN_MS 5000.0
gw_async *gw_async_new(gg_gateway *gw, int tenant_max, int max);
const gg_graph_async_hooks *gw_async_hooks(gw_async *a);
/* No new branches; wait up to wait_ms, then cancel the rest and wait for their rows. */
void gw_async_drain(gw_async *a, double wait_ms);
void gw_async_free(gw_async *a);
/* graphgate_async_branches_outstanding and graphgate_async_branches_total{event} for /metrics. */
void gw_async_metrics(gw_async *a, gg_strbuf *out);

/* ---- MCP 2026-07-28 tasks (tasks.c) ---------------------------------------------------- */
/* Where a task runs: the endpoint's tenant, graph, active version and server; ep is
 * mcp_http.c's endpoint, handed back to gw_task_run. */
typedef struct gw_task_place {
    const char *tenant, *graph;
    int version;
    mcp_server *srv;
    void *ep;
} gw_task_place;
/* The table of tasks running or parked in this process (gg_gateway's tasks): NULL on OOM;
 * freed after the last run finished (parked entries let go of their cancel cells). */
typedef struct gw_tasks gw_tasks;
gw_tasks *gw_tasks_new(void);
void gw_tasks_free(gw_tasks *t);
/* At start: remember this replica's id (written to the tasks it runs) and mark its tasks
 * left working by a previous process failed (all of them: SQLite, one process). */
bool gw_tasks_recover(gg_gateway *gw, const char *replica, bool all, gg_error *err);
/* The holder a tasks/update's task names (new reference; NULL: none): the task waits on a
 * relay round whose run a replica holds (its sealed state's "holder"), so the update is for
 * that replica to take (mcp_http.c forwards it). */
json_t *gw_task_relay_holder(gg_gateway *gw, const gw_task_place *pl, const mcp_message *m);
/* Store a new working task for call; its CreateTaskResult (a JSON-RPC response) and its
 * id in task_id, or NULL + err ("too_many" past tenants.max_tasks, store errors). */
char *gw_task_create(gg_gateway *gw, const char *tenant, const char *graph, int version, const char *key_id,
                     int client_caps, mcp_call *call, char task_id[48], gg_error *err);
/* The task's run is running here as call (tasks/cancel sets its cancel flag; the call stays
 * alive until gw_task_finish). */
void gw_task_track(gg_gateway *gw, const char *tenant, const char *id, mcp_call *call);
/* Each second (the watcher): running tasks of this process cancelled in the store (by
 * tasks/cancel on another replica) get their cancel flag set, and so do runs parked here
 * with a downstream's relayed request whose task went on without them (tasks.c). */
void gw_tasks_check_cancels(gg_gateway *gw);
/* The task's run ended with body (consumed): its end goes to the store. */
void gw_task_finish(gg_gateway *gw, const char *tenant, const char *task_id, mcp_call *call, char *body);
/* The DetailedTask of row r: what tasks/get answers (as_result: with resultType "complete")
 * and what notifications/tasks carries (without). NULL on OOM. */
json_t *gw_task_detailed(const gg_task_row *r, bool as_result);
/* tasks/get, tasks/update, tasks/cancel (other tasks methods: -32601): the response body. */
char *gw_tasks_dispatch(gg_gateway *gw, const gw_task_place *pl, const mcp_message *m, int client_caps);
/* mcp_http.c: run call as task task_id on the pool (ep: an endpoint*); false + why when refused. */
bool gw_task_run(gg_gateway *gw, void *ep, mcp_call *call, const char *key_id, const char *task_id, char *why,
                 size_t why_n);

#endif
