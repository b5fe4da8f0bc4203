/* app.h — the running application: its configuration (gg_config, loaded from a file, the
 * environment and flags) and its context (gg_app: store, HTTP server, the shutdown, drain
 * and reload callbacks of the subsystems that plugged in).
 *
 * Ownership: `graphgate serve` (src/cli/cmd_serve.c, the composition root) owns the gg_app
 * and everything in it; subsystems (gateway, specs, console) borrow it for the life of the
 * process through their install functions. A gg_config owns all its strings (gg_config_free).
 * This folder sits below gateway and specs, so they see the context without depending on
 * the command line.
 */
#ifndef GG_APP_H
#define GG_APP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "util/util.h"

/* ---- the application context ----
 * gg_app is the composition root `graphgate serve` builds: configuration, store and HTTP
 * server, plus shutdown callbacks. Subsystems plug in through one installer call each in
 * cmd_serve.c, e.g. `bool gg_gateway_install(gg_app *app, gg_error *err);`, which registers
 * routes on gg_http_server_router(app->http) (before the listeners start) and, if it owns
 * threads or resources, a shutdown callback. Ownership: serve owns everything in gg_app;
 * installers borrow it for the life of the process. */
struct gg_config;
struct gg_store;
struct gg_http_server;
typedef struct gg_app gg_app;
/* Called once at shutdown, in reverse registration order, after the HTTP listeners have
 * stopped (every request finished or abandoned) and before the store is closed. */
typedef void (*gg_app_shutdown_fn)(gg_app *app, void *user);
#define GG_APP_MAX_SHUTDOWN 16
/* Called once when SIGTERM/SIGINT arrives, before the listeners drain, on the signal
 * thread: refuse work that has not started (e.g. queued tool calls) at once. Quick. */
typedef void (*gg_app_drain_fn)(gg_app *app, void *user);
#define GG_APP_MAX_DRAIN 8
/* Called on SIGHUP with the configuration as it would load now (validated; borrowed for
 * the call), on the signal thread: apply the run-time-changeable settings the subsystem
 * owns (cmd_serve.c lists which keys those are). */
typedef void (*gg_app_reload_fn)(gg_app *app, const struct gg_config *next, void *user);
#define GG_APP_MAX_RELOAD 8
struct gg_app {
    const struct gg_config *config;  /* loaded configuration (file, env, flags applied) */
    struct gg_store *store;          /* open, migrated store */
    struct gg_http_server *http;     /* not yet started while installers run */
    const char *pkgdatadir;          /* where migrations/specs/schema live */
    atomic_int stopping;           /* set when shutdown begins (read-only for others) */
    size_t nshutdown;
    struct { gg_app_shutdown_fn fn; void *user; } shutdown[GG_APP_MAX_SHUTDOWN];
    size_t ndrain;
    struct { gg_app_drain_fn fn; void *user; } drain[GG_APP_MAX_DRAIN];
    size_t nreload;
    struct { gg_app_reload_fn fn; void *user; } reload[GG_APP_MAX_RELOAD];
};
/* Register a shutdown callback; false when the table is full. */
bool gg_app_on_shutdown(gg_app *app, gg_app_shutdown_fn fn, void *user);
/* Register a drain callback; false when the table is full. */
bool gg_app_on_drain(gg_app *app, gg_app_drain_fn fn, void *user);
/* Register a reload callback; false when the table is full. */
bool gg_app_on_reload(gg_app *app, gg_app_reload_fn fn, void *user);

/* ---- Configuration (src/app/config.c) -------------------------------------------------
 * One YAML file (example: deploy/graphgate.yaml), then GRAPHGATE_* environment variables,
 * then command-line flags, each overriding the one before. Every key has a dotted name
 * ("database.path"); its environment variable is GRAPHGATE_ + the name upper-cased with
 * dots as underscores (GRAPHGATE_DATABASE_PATH); lists in the environment are
 * comma-separated. Durations accept 500ms, 30s, 5m, 2h, 7d; sizes 512, 64KiB, 1MiB, 1GiB.
 * The struct owns all its strings; release with gg_config_free. */

typedef struct gg_strlist {
    char **items;
    size_t n;
} gg_strlist;

typedef struct gg_config {
    char *config_file;            /* the file loaded, or NULL */
    /* listeners */
    char *listen;                 /* listen: public "ADDR:PORT", default 127.0.0.1:8080 */
    char *internal_listen;        /* internal_listen: default 127.0.0.1:8081; "" = off */
    int workers;                  /* workers: tool-call worker threads; 0 = 2 x cores */
    int queue_size;               /* queue_size: waiting tool calls before 503; 1024 */
    size_t body_limit;            /* body_limit: bytes, default 1 MiB */
    long long shutdown_timeout_ms;/* shutdown_timeout: in-flight deadline on SIGTERM; 10s */
    long long request_timeout_ms; /* request_timeout: one tools/call at most; 60s */
    long long inline_budget_ms;   /* inline_budget: a tool without mcp nodes first runs on the
                                   * HTTP thread for up to this long (then on a worker);
                                   * 0 = always on workers; 2ms */
    int http_threads;             /* http.threads: HTTP polling threads; 0 = 2 x cores */
    gg_strlist origins;           /* http.origins: allowed Origin values ("*" = any) */
    gg_strlist allowed_hosts;     /* http.allowed_hosts: Host values accepted besides
                                   * the listen address on loopback binds */
    int http_max_connections;     /* http.max_connections: per listener; 1024 */
    int http_max_conn_per_ip;     /* http.max_connections_per_ip: per listener; 256; 0 = off */
    long long http_receive_timeout_ms; /* http.receive_timeout: a request's headers and body
                                   * must arrive within this (also the keep-alive idle
                                   * limit); 15s */
    bool internal_listen_public;  /* internal_listen_public: allow a non-loopback internal
                                   * listener (no authentication there); false */
    /* database */
    char *db_path;                /* database.path: default ./var/graphgate.db */
    char *migrations_dir;         /* database.migrations_dir: NULL = search */
    int db_pool_size;             /* database.pool_size: 4 */
    int busy_timeout_ms;          /* database.busy_timeout: 5s */
    char *db_url;                 /* database.url: postgres://… selects PostgreSQL; NULL = SQLite */
    int statement_timeout_ms;     /* database.statement_timeout (PostgreSQL): 30s */
    /* logging */
    gg_log_level log_level;       /* log.level: debug|info|warn|error, default info */
    char *log_file;               /* log.file: NULL = stderr */
    bool access_log;              /* log.access: one JSON line per request, default true */
    char *access_log_file;        /* log.access_file: NULL = the log stream */
    /* auth */
    char *session_secret;         /* session.secret: >= 32 chars; NULL = random per start */
    long long session_ttl_ms;     /* session.ttl: 24h */
    long long session_idle_timeout_ms; /* session.idle_timeout: 30m; 0 = sessions never idle */
    char *key_pepper;             /* auth.key_pepper: NULL = per-database random pepper */
    char *secrets_key;            /* secrets.key: the tenant secrets' master key (32 bytes, hex or
                                   * base64); NULL = none (GRAPHGATE_SECRETS_KEY) */
    char *secrets_key_file;       /* secrets.key_file: a file holding that key instead */
    char *public_url;             /* public_url: the base URL clients reach the public
                                   * listener at ("https://mcp.example.com"); names the
                                   * OAuth resources; NULL = http://<listen> on a loopback
                                   * listen address, else OAuth tokens are not accepted */
    long long oauth_refresh_ms;   /* oauth.refresh: an issuer's keys refetched; 5m */
    long long oauth_unknown_kid_interval_ms; /* oauth.unknown_kid_interval: at most one
                                   * refetch per issuer this often for unknown kids; 10s */
    long long oauth_fetch_timeout_ms; /* oauth.fetch_timeout: one metadata/JWKS fetch; 5s */
    size_t oauth_max_document_bytes;  /* oauth.max_document_bytes: 256 KiB */
    long long key_cache_ttl_ms;   /* auth.key_cache_ttl: 30s (revocation in-process is
                                   * immediate, from another process within 1s) */
    double rate_limit_rate;       /* rate_limit.rate: requests/s per key; 0 = unlimited */
    int rate_limit_burst;         /* rate_limit.burst: bucket size; default 2 x rate */
    int tenant_max_concurrent;    /* tenants.max_concurrent_executions: 64; 0 = no cap */
    int tenant_max_running;       /* tenants.max_running: one tenant's jobs on workers at once;
                                   * 0 = half the workers (at least 1) */
    int tenant_max_queued;        /* tenants.max_queued: one tenant's calls waiting for a
                                   * worker while another tenant's wait too (alone: up to
                                   * half of queue_size); 64; 0 = no cap */
    int tenant_max_waiting;       /* tenants.max_waiting: one tenant's calls in flight to tools
                                   * that may wait on downstream servers; 64; 0 = no cap */
    int tenant_max_tasks;         /* tenants.max_tasks: one tenant's live MCP tasks (store-wide); 100; 0 = no cap */
    int max_waiting_runs;         /* max_waiting_runs: the same in all; 4096; 0 = no cap */
    int tenant_max_async_branches; /* tenants.max_async_branches: one tenant's fire-and-forget
                                    * branches outstanding; 64; 0 = no cap */
    int max_async_branches;       /* max_async_branches: the same in all; 1024; 0 = no cap */
    int tenant_max_listen_streams; /* tenants.max_listen_streams: one tenant's GET streams to its
                                    * streamable-HTTP downstreams (of MCP_HTTP_LISTEN_MAX); 128;
                                    * 0 = only the process bound */
    size_t tenant_max_downstream_bytes; /* tenants.max_downstream_bytes: bytes one tenant's downstream
                                         * answers in flight may hold at once; 64MiB; 0 = no cap */
    long long mcp_sse_close_after_ms; /* mcp.sse_close_after: a tools/call POST stream of a 2025-11-25
                                         session still running then ends with a retry hint; 0 = never */
    int tenant_max_streams;       /* tenants.max_streams: 64 open GET streams; 0 = no cap */
    int tenant_max_resumable_streams; /* tenants.max_resumable_streams: 128 resumable POST
                                         streams held at once; 0 = only the global 1024 */
    int tenant_max_sessions;      /* tenants.max_sessions: 256 live MCP sessions; 0 = no cap */
    size_t tenant_max_catalog_bytes;     /* tenants.max_catalog_bytes: downstream tool catalogs stored; 8MiB; 0 = no cap */
    size_t downstream_max_catalog_bytes; /* downstream.max_catalog_bytes: one server's tools serialized; 1MiB */
    /* history */
    long long history_max_age_ms; /* history.max_age: 30d; 0 = keep */
    long long history_max_count;  /* history.max_count: 1000000; 0 = keep */
    int history_flush_ms;         /* history.flush_interval: 5ms */
    char *history_durability;     /* history.durability: "durable" (a tools/call is answered
                                   * only once its record is committed) or "async" */
    int history_commit_window_ms; /* history.commit_window: batch window while answers
                                   * wait for the commit; 1ms */
    int history_journal_window_ms; /* history.journal_window: batch window while every
                                    * queued record is in the journal; 20ms */
    size_t history_backlog_max;   /* history.backlog_max: memory for records waiting to be
                                   * written (disk full...); past it calls are refused; 256MiB */
    bool history_fsync;           /* history.fsync: sync every commit (power-loss safe); false */
    bool history_journal;         /* history.journal: durable answers through the redo log; true */
    char *history_replica_id;     /* history.replica_id: NULL = the host name */
    char *cluster_internal_url;   /* cluster.internal_url: where other replicas reach this one's internal
                                     listener (a relay round's retry forwarded to its holder); NULL = none */
    size_t history_max_payload;   /* history.max_payload: 64KiB per stored JSON value */
    long long history_max_run_records; /* history.max_run_records: 10000 node records a run */
    size_t history_max_run_bytes; /* history.max_run_bytes: 4MiB of node records a run */
    long long history_tenant_max_rows; /* history.tenant_max_rows: 100000; 0 = no cap */
    size_t history_tenant_max_bytes; /* history.tenant_max_bytes: 256MiB; 0 = no cap */
    /* downstream MCP servers (what one may cost the gateway; see docs/operations.md "Downstream limits") */
    size_t downstream_max_message_bytes; /* downstream.max_message_bytes: one message (stdio line,
                                          * HTTP body or event); 4MiB */
    size_t downstream_max_parse_bytes; /* downstream.max_parse_bytes: heap one message's parse may
                                        * use; 32MiB */
    size_t downstream_stderr_bytes_per_s; /* downstream.stderr_bytes_per_s: a stdio child's stderr
                                           * read at most this fast (then paused); 1MiB; 0 = no bound */
    int downstream_child_nice;    /* downstream.child_nice: stdio children's nice value; 10 */
    size_t downstream_child_memory_bytes; /* downstream.child_memory_bytes: RLIMIT_AS; 0 = not set */
    int downstream_child_cpu_seconds; /* downstream.child_cpu_seconds: RLIMIT_CPU; 0 = not set */
    int downstream_max_starts_per_minute; /* downstream.max_starts_per_minute: starts of one stdio
                                           * server definition (per tenant); 12; 0 = no bound */
    long long downstream_list_changed_min_interval_ms; /* downstream.list_changed_min_interval: one
                                    * (tenant, server)'s tools/list_changed re-lists at most this
                                    * often (more coalesce into one trailing re-listing); 5s */
    /* policy for graph nodes that reach out */
    gg_strlist policy_stdio_commands; /* policy.stdio_commands: allowed argv prefixes
                                       * ("npx -y @scope/server"); empty = none */
    gg_strlist policy_http_hosts; /* policy.http_hosts: allowed downstream hosts
                                   * ("host" or "host:port"); empty = none */
    char *policy_stdio_cwd_root;  /* policy.stdio_cwd_root: stdio cwd confined here;
                                   * NULL = graphs cannot set cwd */
    gg_strlist policy_tenant_stdio_commands; /* policy.tenant_stdio_commands: "TENANT=ENTRY" */
    gg_strlist policy_tenant_http_hosts;     /* policy.tenant_http_hosts: "TENANT=ENTRY" */
    /* graph uploads (per tenant; 0 = no limit unless noted) */
    int graphs_max_per_tenant;    /* graphs.max_per_tenant: graphs a tenant may have; 100 */
    size_t graphs_max_bytes;      /* graphs.max_bytes: one graph source; 1MiB */
    size_t graphs_max_tenant_bytes; /* graphs.max_tenant_bytes: all stored versions; 16MiB */
    int graphs_max_versions;      /* graphs.max_versions: kept per graph (oldest inactive
                                   * dropped first); 20 */
    int graphs_upload_threads;    /* graphs.upload_threads: validation threads; 2 (min 1) */
    int graphs_uploads_per_tenant;/* graphs.uploads_per_tenant: queued + running; 4 (one
                                   * runs at a time while others wait) */
    long long graphs_upload_timeout_ms; /* graphs.upload_timeout: validation time limit; 10s */
    int graphs_cap_node_executions; /* graphs.max_node_executions: cap on executionLimits
                                     * .maxNodeExecutions; 100000 */
    long long graphs_cap_execution_ms; /* graphs.max_execution_time: cap on executionLimits
                                        * .maxExecutionTimeMs; 5m */
    int graphs_cache_size;        /* graphs.cache_size: compiled graph versions kept (LRU);
                                     1000, 0 = no bound */
    /* memory (caps and defaults of executionLimits.maxEvalMemoryBytes / maxRunMemoryBytes) */
    size_t limits_eval_memory_bytes; /* limits.eval_memory_bytes: live bytes of one JSONata or
                                      * JSON Logic evaluation; 128MiB */
    size_t limits_run_memory_bytes;  /* limits.run_memory_bytes: node outputs a run keeps +
                                      * its current evaluation; 256MiB */
    /* node specs */
    char *specs_dir;              /* specs.dir: NULL = search */
    bool specs_load_on_start;     /* specs.load_on_start: true */
    /* demo */
    char *demo_tenant;            /* demo.tenant: tenant the demo loader creates; "demo" */
    /* OpenTelemetry traces (src/telemetry); off while otlp_endpoint is unset */
    char *otel_endpoint;          /* telemetry.otlp_endpoint: OTLP/HTTP traces URL */
    gg_strlist otel_headers;      /* telemetry.headers: "Name: value" sent with each export */
    double otel_sampling_ratio;   /* telemetry.sampling_ratio: new traces kept; 1 */
    char *otel_service_name;      /* telemetry.service_name: "graphgate" */
    int otel_queue_spans;         /* telemetry.queue_size: spans waiting; 2048 (more dropped) */
    int otel_batch_spans;         /* telemetry.batch_size: spans an export; 256 */
    int otel_flush_ms;            /* telemetry.flush_interval: 1s */
    int otel_timeout_ms;          /* telemetry.export_timeout: 5s */
    size_t otel_value_max;        /* telemetry.node_values: node input/output bytes on spans; 0 = none */
} gg_config;

/* Defaults (never fails except on OOM). */
bool gg_config_init(gg_config *c, gg_error *err);
void gg_config_free(gg_config *c);
/* Load a YAML file over c. Unknown keys, wrong types and out-of-range values fail with
 * err path = file, line/column = the offending node. */
bool gg_config_load_file(gg_config *c, const char *path, gg_error *err);
/* Apply GRAPHGATE_* variables from envp (NULL = the process environment). Unknown
 * GRAPHGATE_ variables are errors, except GRAPHGATE_CONFIG (the file to load). */
bool gg_config_apply_env(gg_config *c, char **envp, gg_error *err);
/* Set one key from text (flags use this: gg_config_set(c, "database.path", v, err)). */
bool gg_config_set(gg_config *c, const char *key, const char *value, gg_error *err);
/* Cross-field checks after all overrides (addresses parse, limits in range). */
bool gg_config_validate(const gg_config *c, gg_error *err);
/* The usual sequence: defaults, file (config_file, else $GRAPHGATE_CONFIG, else none),
 * environment, validate. Commands then apply their flags with gg_config_set and call
 * gg_config_validate again. */
bool gg_config_load(gg_config *c, const char *config_file, gg_error *err);
/* Find a data directory (migrations, specs, schema): the configured path if non-NULL
 * (must exist), else $GG_SRCDIR/<name> (how the tests point a binary at a source tree),
 * next to the binary (../share/graphgate/<name>, ../<name>, ../../<name>: a build
 * directory inside the tree), then GG_PKGDATADIR/<name>. No source path is compiled in.
 * Writes the path into out. "not_found" lists where it looked. */
bool gg_config_find_data_dir(const char *configured, const char *name, char *out, size_t size,
                             gg_error *err);
/* Print the effective configuration as YAML-ish "key: value" lines (secrets masked). */
void gg_config_dump(const gg_config *c, FILE *f);
/* Call fn for every key whose value differs between a and b (values as the dump prints
 * them, secrets masked); returns how many. */
typedef void (*gg_config_diff_fn)(void *user, const char *key, const char *old_value, const char *new_value);
size_t gg_config_diff(const gg_config *a, const gg_config *b, gg_config_diff_fn fn, void *user);

#endif
