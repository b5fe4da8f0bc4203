/* config.c — graphgate's configuration: defaults, one YAML file, GRAPHGATE_* environment
 * variables and flags, in that order. Every key is described once in the table below;
 * the file parser, the environment, the flags and the dump all work from it, so a key
 * cannot be accepted in one place and unknown in another. */
#include "app/app.h"
#include "util/yaml.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

typedef enum { T_STR, T_INT, T_LL, T_SIZE, T_DUR, T_DUR_I, T_BOOL, T_LIST, T_LEVEL, T_DOUBLE } key_type;

typedef struct key_def {
    const char *name;
    key_type type;
    size_t offset;
    double min, max;      /* numeric bounds (durations in ms, sizes in bytes) */
    bool secret;          /* masked in dumps */
} key_def;

#define F(field) offsetof(gg_config, field)
static const key_def keys[] = {
    {"listen", T_STR, F(listen), 0, 0, false},
    {"internal_listen", T_STR, F(internal_listen), 0, 0, false},
    {"workers", T_INT, F(workers), 0, 1024, false},
    {"queue_size", T_INT, F(queue_size), 1, 1000000, false},
    {"body_limit", T_SIZE, F(body_limit), 1024, 1024.0 * 1024 * 1024, false},
    {"shutdown_timeout", T_DUR, F(shutdown_timeout_ms), 0, 600000, false},
    {"request_timeout", T_DUR, F(request_timeout_ms), 10, 86400000, false},
    {"inline_budget", T_DUR, F(inline_budget_ms), 0, 1000, false},
    {"mcp.sse_close_after", T_DUR, F(mcp_sse_close_after_ms), 0, 86400000, false},
    {"http.threads", T_INT, F(http_threads), 0, 256, false},
    {"http.origins", T_LIST, F(origins), 0, 0, false},
    {"http.allowed_hosts", T_LIST, F(allowed_hosts), 0, 0, false},
    {"http.max_connections", T_INT, F(http_max_connections), 16, 1000000, false},
    {"http.max_connections_per_ip", T_INT, F(http_max_conn_per_ip), 0, 1000000, false},
    {"http.receive_timeout", T_DUR, F(http_receive_timeout_ms), 1000, 3600000, false},
    {"internal_listen_public", T_BOOL, F(internal_listen_public), 0, 0, false},
    {"database.path", T_STR, F(db_path), 0, 0, false},
    {"database.migrations_dir", T_STR, F(migrations_dir), 0, 0, false},
    {"database.pool_size", T_INT, F(db_pool_size), 2, 64, false},
    {"database.busy_timeout", T_DUR_I, F(busy_timeout_ms), 1, 600000, false},
    {"database.url", T_STR, F(db_url), 0, 0, true},
    {"database.statement_timeout", T_DUR_I, F(statement_timeout_ms), 1, 3600000, false},
    {"log.level", T_LEVEL, F(log_level), 0, 0, false},
    {"log.file", T_STR, F(log_file), 0, 0, false},
    {"log.access", T_BOOL, F(access_log), 0, 0, false},
    {"log.access_file", T_STR, F(access_log_file), 0, 0, false},
    {"session.secret", T_STR, F(session_secret), 0, 0, true},
    {"public_url", T_STR, F(public_url), 0, 0, false},
    {"oauth.refresh", T_DUR, F(oauth_refresh_ms), 10000, 86400000, false},
    {"oauth.unknown_kid_interval", T_DUR, F(oauth_unknown_kid_interval_ms), 1000, 3600000, false},
    {"oauth.fetch_timeout", T_DUR, F(oauth_fetch_timeout_ms), 100, 60000, false},
    {"oauth.max_document_bytes", T_SIZE, F(oauth_max_document_bytes), 1024, 16.0 * 1024 * 1024, false},
    {"session.ttl", T_DUR, F(session_ttl_ms), 1000, 31.0 * 86400000, false},
    {"session.idle_timeout", T_DUR, F(session_idle_timeout_ms), 0, 31.0 * 86400000, false},
    {"auth.key_pepper", T_STR, F(key_pepper), 0, 0, true},
    {"secrets.key", T_STR, F(secrets_key), 0, 0, true},
    {"secrets.key_file", T_STR, F(secrets_key_file), 0, 0, false},
    {"auth.key_cache_ttl", T_DUR, F(key_cache_ttl_ms), 0, 86400000, false},
    {"rate_limit.rate", T_DOUBLE, F(rate_limit_rate), 0, 1e7, false},
    {"rate_limit.burst", T_INT, F(rate_limit_burst), 0, 10000000, false},
    {"tenants.max_concurrent_executions", T_INT, F(tenant_max_concurrent), 0, 1000000, false},
    {"tenants.max_running", T_INT, F(tenant_max_running), 0, 1024, false},
    {"tenants.max_queued", T_INT, F(tenant_max_queued), 0, 1000000, false},
    {"tenants.max_waiting", T_INT, F(tenant_max_waiting), 0, 1000000, false},
    {"tenants.max_tasks", T_INT, F(tenant_max_tasks), 0, 1000000, false},
    {"max_waiting_runs", T_INT, F(max_waiting_runs), 0, 10000000, false},
    {"tenants.max_async_branches", T_INT, F(tenant_max_async_branches), 0, 1000000, false},
    {"max_async_branches", T_INT, F(max_async_branches), 0, 10000000, false},
    {"tenants.max_listen_streams", T_INT, F(tenant_max_listen_streams), 0, 1024, false},
    {"tenants.max_downstream_bytes", T_SIZE, F(tenant_max_downstream_bytes), 0, 1e15, false},
    {"tenants.max_streams", T_INT, F(tenant_max_streams), 0, 1000000, false},
    {"tenants.max_resumable_streams", T_INT, F(tenant_max_resumable_streams), 0, 1000000, false},
    {"tenants.max_sessions", T_INT, F(tenant_max_sessions), 0, 1000000, false},
    {"tenants.max_catalog_bytes", T_SIZE, F(tenant_max_catalog_bytes), 0, 1024.0 * 1024 * 1024 * 1024, false},
    {"downstream.max_catalog_bytes", T_SIZE, F(downstream_max_catalog_bytes), 1024, 1024.0 * 1024 * 1024, false},
    {"history.max_age", T_DUR, F(history_max_age_ms), 0, 3650.0 * 86400000, false},
    {"history.max_count", T_LL, F(history_max_count), 0, 1e12, false},
    {"history.flush_interval", T_DUR_I, F(history_flush_ms), 1, 10000, false},
    {"history.durability", T_STR, F(history_durability), 0, 0, false},
    {"history.commit_window", T_DUR_I, F(history_commit_window_ms), 0, 1000, false},
    {"history.journal_window", T_DUR_I, F(history_journal_window_ms), 1, 10000, false},
    {"history.fsync", T_BOOL, F(history_fsync), 0, 0, false},
    {"history.journal", T_BOOL, F(history_journal), 0, 0, false},
    {"history.replica_id", T_STR, F(history_replica_id), 0, 0, false},
    {"cluster.internal_url", T_STR, F(cluster_internal_url), 0, 0, false},
    {"history.backlog_max", T_SIZE, F(history_backlog_max), 1024.0 * 1024, 64.0 * 1024 * 1024 * 1024, false},
    {"history.max_payload", T_SIZE, F(history_max_payload), 64, 64.0 * 1024 * 1024, false},
    {"history.max_run_records", T_LL, F(history_max_run_records), 1, 1e9, false},
    {"history.max_run_bytes", T_SIZE, F(history_max_run_bytes), 1024, 512.0 * 1024 * 1024, false},
    {"history.tenant_max_rows", T_LL, F(history_tenant_max_rows), 0, 1e12, false},
    {"history.tenant_max_bytes", T_SIZE, F(history_tenant_max_bytes), 0, 1e15, false},
    {"downstream.max_message_bytes", T_SIZE, F(downstream_max_message_bytes), 1024, 1024.0 * 1024 * 1024, false},
    {"downstream.max_parse_bytes", T_SIZE, F(downstream_max_parse_bytes), 64 * 1024, 64.0 * 1024 * 1024 * 1024, false},
    {"downstream.stderr_bytes_per_s", T_SIZE, F(downstream_stderr_bytes_per_s), 0, 1024.0 * 1024 * 1024, false},
    {"downstream.child_nice", T_INT, F(downstream_child_nice), 0, 19, false},
    {"downstream.child_memory_bytes", T_SIZE, F(downstream_child_memory_bytes), 0, 1e15, false},
    {"downstream.child_cpu_seconds", T_INT, F(downstream_child_cpu_seconds), 0, 100000000, false},
    {"downstream.max_starts_per_minute", T_INT, F(downstream_max_starts_per_minute), 0, 100000, false},
    {"downstream.list_changed_min_interval", T_DUR, F(downstream_list_changed_min_interval_ms), 0, 3600000, false},
    {"policy.stdio_commands", T_LIST, F(policy_stdio_commands), 0, 0, false},
    {"policy.http_hosts", T_LIST, F(policy_http_hosts), 0, 0, false},
    {"policy.stdio_cwd_root", T_STR, F(policy_stdio_cwd_root), 0, 0, false},
    {"policy.tenant_stdio_commands", T_LIST, F(policy_tenant_stdio_commands), 0, 0, false},
    {"policy.tenant_http_hosts", T_LIST, F(policy_tenant_http_hosts), 0, 0, false},
    {"graphs.max_per_tenant", T_INT, F(graphs_max_per_tenant), 0, 1000000, false},
    {"graphs.max_bytes", T_SIZE, F(graphs_max_bytes), 1024, 64.0 * 1024 * 1024, false},
    {"graphs.max_tenant_bytes", T_SIZE, F(graphs_max_tenant_bytes), 0, 1024.0 * 1024 * 1024 * 1024, false},
    {"graphs.max_versions", T_INT, F(graphs_max_versions), 0, 1000000, false},
    {"graphs.upload_threads", T_INT, F(graphs_upload_threads), 1, 64, false},
    {"graphs.uploads_per_tenant", T_INT, F(graphs_uploads_per_tenant), 1, 1024, false},
    {"graphs.upload_timeout", T_DUR, F(graphs_upload_timeout_ms), 100, 3600000, false},
    {"graphs.max_node_executions", T_INT, F(graphs_cap_node_executions), 0, 100000000, false},
    {"graphs.max_execution_time", T_DUR, F(graphs_cap_execution_ms), 0, 86400000, false},
    {"graphs.cache_size", T_INT, F(graphs_cache_size), 0, 100000000, false},
    {"limits.eval_memory_bytes", T_SIZE, F(limits_eval_memory_bytes), 1024 * 1024, 64.0 * 1024 * 1024 * 1024, false},
    {"limits.run_memory_bytes", T_SIZE, F(limits_run_memory_bytes), 1024 * 1024, 64.0 * 1024 * 1024 * 1024, false},
    {"specs.dir", T_STR, F(specs_dir), 0, 0, false},
    {"specs.load_on_start", T_BOOL, F(specs_load_on_start), 0, 0, false},
    {"demo.tenant", T_STR, F(demo_tenant), 0, 0, false},
    {"telemetry.otlp_endpoint", T_STR, F(otel_endpoint), 0, 0, false},
    {"telemetry.headers", T_LIST, F(otel_headers), 0, 0, true}, /* may hold a collector key */
    {"telemetry.sampling_ratio", T_DOUBLE, F(otel_sampling_ratio), 0, 1, false},
    {"telemetry.service_name", T_STR, F(otel_service_name), 0, 0, false},
    {"telemetry.queue_size", T_INT, F(otel_queue_spans), 1, 1000000, false},
    {"telemetry.batch_size", T_INT, F(otel_batch_spans), 1, 100000, false},
    {"telemetry.flush_interval", T_DUR_I, F(otel_flush_ms), 10, 600000, false},
    {"telemetry.export_timeout", T_DUR_I, F(otel_timeout_ms), 10, 600000, false},
    {"telemetry.node_values", T_SIZE, F(otel_value_max), 0, 1024, false},
};
#undef F
#define N_KEYS (sizeof keys / sizeof keys[0])

static const key_def *find_key(const char *name) {
    for (size_t i = 0; i < N_KEYS; i++)
        if (strcmp(keys[i].name, name) == 0) return &keys[i];
    return NULL;
}

/* Is name a section ("http", "database") some key lives under? */
static bool is_section(const char *name) {
    size_t n = strlen(name);
    for (size_t i = 0; i < N_KEYS; i++)
        if (strncmp(keys[i].name, name, n) == 0 && keys[i].name[n] == '.') return true;
    return false;
}

static void list_free(gg_strlist *l) {
    for (size_t i = 0; i < l->n; i++) free(l->items[i]);
    free(l->items);
    l->items = NULL;
    l->n = 0;
}

static bool list_push(gg_strlist *l, const char *s, size_t n) {
    char **items = realloc(l->items, (l->n + 1) * sizeof *items);
    if (!items) return false;
    l->items = items;
    char *d = strndup(s, n);
    if (!d) return false;
    l->items[l->n++] = d;
    return true;
}

static bool set_str(char **slot, const char *v, gg_error *err) {
    char *d = NULL;
    if (v && !(d = strdup(v))) { gg_error_set(err, "oom", "out of memory"); return false; }
    free(*slot);
    *slot = d;
    return true;
}

/* The numeric defaults of the server, its tenants and its downstream servers (deploy/graphgate.yaml
 * documents each). */
static void defaults_serving(gg_config *c) {
    c->workers = 0;
    c->queue_size = 1024;
    c->body_limit = 1024 * 1024;
    c->shutdown_timeout_ms = 10000;
    c->request_timeout_ms = 60000;
    c->inline_budget_ms = 2;
    c->db_pool_size = 4;
    c->busy_timeout_ms = 5000;
    c->statement_timeout_ms = 30000;
    c->log_level = GG_LOG_INFO;
    c->access_log = true;
    c->session_ttl_ms = 24LL * 3600 * 1000;
    c->session_idle_timeout_ms = 30LL * 60 * 1000;
    c->key_cache_ttl_ms = 30000;
    c->rate_limit_rate = 0;
    c->rate_limit_burst = 0;
    c->tenant_max_concurrent = 64;
    c->tenant_max_queued = 64;
    c->tenant_max_waiting = 64;
    c->tenant_max_tasks = 100;
    c->max_waiting_runs = 4096;
    c->tenant_max_async_branches = 64;
    c->max_async_branches = 1024;
    c->tenant_max_listen_streams = 128; /* MCP_HTTP_LISTEN_MAX_OWNER */
    c->tenant_max_downstream_bytes = 64u << 20; /* MCP_DOWNSTREAM_OWNER_MAX_BYTES_DEFAULT */
    c->downstream_max_message_bytes = 4u << 20;
    c->downstream_max_parse_bytes = 32u << 20;
    c->downstream_stderr_bytes_per_s = 1u << 20;
    c->downstream_child_nice = 10;
    c->downstream_max_starts_per_minute = 12;
    c->downstream_list_changed_min_interval_ms = 5000;
}

/* The numeric defaults of the history, graphs, engines, OAuth and telemetry. */
static void defaults_keeping(gg_config *c) {
    c->history_max_age_ms = 30LL * 86400 * 1000;
    c->history_max_count = 1000000;
    c->history_flush_ms = 5;
    c->history_journal = true;
    c->history_commit_window_ms = 1;
    c->history_journal_window_ms = 20;
    c->history_backlog_max = 256u << 20;
    c->history_max_payload = 64 * 1024;
    c->history_max_run_records = 10000;
    c->history_max_run_bytes = 4 * 1024 * 1024;
    c->history_tenant_max_rows = 100000;
    c->history_tenant_max_bytes = 256 * 1024 * 1024;
    c->tenant_max_streams = 64;
    c->tenant_max_resumable_streams = 128;
    c->mcp_sse_close_after_ms = 1000;
    c->tenant_max_sessions = 256;
    c->tenant_max_catalog_bytes = 8 * 1024 * 1024;
    c->downstream_max_catalog_bytes = 1024 * 1024;
    c->graphs_max_per_tenant = 100;
    c->graphs_max_bytes = 1024 * 1024;
    c->graphs_max_tenant_bytes = 16 * 1024 * 1024;
    c->graphs_max_versions = 20;
    c->graphs_upload_threads = 2;
    c->graphs_uploads_per_tenant = 4;
    c->graphs_upload_timeout_ms = 10000;
    c->graphs_cap_node_executions = 100000;
    c->graphs_cap_execution_ms = 300000;
    c->graphs_cache_size = 1000;
    c->limits_eval_memory_bytes = 128u << 20;
    c->limits_run_memory_bytes = 256u << 20;
    c->specs_load_on_start = true;
    c->http_max_connections = 1024;
    c->http_max_conn_per_ip = 256;
    c->http_receive_timeout_ms = 15000;
    c->oauth_refresh_ms = 300000;
    c->oauth_unknown_kid_interval_ms = 10000;
    c->oauth_fetch_timeout_ms = 5000;
    c->oauth_max_document_bytes = 256 * 1024;
    c->otel_sampling_ratio = 1;
    c->otel_queue_spans = 2048;
    c->otel_batch_spans = 256;
    c->otel_flush_ms = 1000;
    c->otel_timeout_ms = 5000;
}

bool gg_config_init(gg_config *c, gg_error *err) {
    memset(c, 0, sizeof *c);
    defaults_serving(c);
    defaults_keeping(c);
    if (!set_str(&c->listen, "127.0.0.1:8080", err) || !set_str(&c->internal_listen, "127.0.0.1:8081", err) ||
        !set_str(&c->db_path, "./var/graphgate.db", err) || !set_str(&c->demo_tenant, "demo", err) ||
        !set_str(&c->history_durability, "durable", err) ||
        !set_str(&c->otel_service_name, "graphgate", err)) {
        gg_config_free(c);
        return false;
    }
    return true;
}

void gg_config_free(gg_config *c) {
    if (!c) return;
    for (size_t i = 0; i < N_KEYS; i++) {
        void *slot = (char *)c + keys[i].offset;
        if (keys[i].type == T_STR) { free(*(char **)slot); *(char **)slot = NULL; }
        else if (keys[i].type == T_LIST) list_free(slot);
    }
    free(c->config_file);
    c->config_file = NULL;
}

/* ---- value parsing (shared by file, environment and flags) ------------------------------ */

static bool parse_number(const char *v, double *out, const char **rest) {
    errno = 0;
    char *end;
    double d = strtod(v, &end);
    if (end == v || errno || !isfinite(d)) return false;
    *out = d;
    *rest = end;
    return true;
}

static bool parse_size(const char *v, double *out) {
    const char *u;
    if (!parse_number(v, out, &u)) return false;
    while (*u == ' ') u++;
    static const struct { const char *suffix; double mult; } units[] = {
        {"", 1}, {"b", 1}, {"k", 1000}, {"kb", 1000}, {"kib", 1024}, {"m", 1e6}, {"mb", 1e6},
        {"mib", 1048576}, {"g", 1e9}, {"gb", 1e9}, {"gib", 1073741824.0}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcasecmp(u, units[i].suffix) == 0) {
            *out *= units[i].mult;
            return *out >= 0 && floor(*out) == *out;
        }
    }
    return false;
}

/* Durations: a bare number is seconds; units ms, s, m, h, d. */
static bool parse_duration(const char *v, double *out_ms) {
    const char *u;
    if (!parse_number(v, out_ms, &u)) return false;
    while (*u == ' ') u++;
    static const struct { const char *suffix; double mult; } units[] = {
        {"", 1000}, {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(u, units[i].suffix) == 0) {
            *out_ms *= units[i].mult;
            return *out_ms >= 0;
        }
    }
    return false;
}

static bool parse_bool(const char *v, bool *out) {
    static const char *const yes[] = {"true", "yes", "on", "1"}, *const no[] = {"false", "no", "off", "0"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(v, yes[i]) == 0) { *out = true; return true; }
        if (strcasecmp(v, no[i]) == 0) { *out = false; return true; }
    }
    return false;
}

static bool parse_level(const char *v, gg_log_level *out) {
    static const struct { const char *n; gg_log_level l; } lv[] = {
        {"debug", GG_LOG_DEBUG}, {"info", GG_LOG_INFO}, {"warn", GG_LOG_WARN},
        {"warning", GG_LOG_WARN}, {"error", GG_LOG_ERROR}};
    for (size_t i = 0; i < sizeof lv / sizeof lv[0]; i++)
        if (strcasecmp(v, lv[i].n) == 0) { *out = lv[i].l; return true; }
    return false;
}

static bool check_range(const key_def *k, double v, const char *text, gg_error *err) {
    if (v < k->min || v > k->max) {
        gg_error_set(err, "invalid_config", "%s: %s is out of range (%.0f..%.0f)", k->name, text, k->min, k->max);
        return false;
    }
    return true;
}

/* A number key's text read by the one core-schema rule graphs and node specs use (0x1F
 * and 0o17 are integers, .inf/.nan are not numbers), from the file, environment or a flag
 * alike. */
static bool core_number(const char *v, double *out) {
    gg_error e = GG_ERROR_INIT;
    json_t *j = gg_yaml_plain_scalar(v, strlen(v), &e);
    gg_error_clear(&e);
    bool ok = j && json_is_number(j);
    if (ok) *out = json_number_value(j);
    json_decref(j);
    return ok;
}

/* Set a scalar key from text. */
static bool set_scalar(gg_config *c, const key_def *k, const char *v, gg_error *err) {
    void *slot = (char *)c + k->offset;
    double d;
    switch (k->type) {
    case T_STR:
        return set_str(slot, v, err);
    case T_INT:
    case T_LL:
        if (!core_number(v, &d) || floor(d) != d) break;
        if (!check_range(k, d, v, err)) return false;
        if (k->type == T_INT) *(int *)slot = (int)d;
        else *(long long *)slot = (long long)d;
        return true;
    case T_DOUBLE:
        if (!core_number(v, &d)) break;
        if (!check_range(k, d, v, err)) return false;
        *(double *)slot = d;
        return true;
    case T_SIZE:
        if (!parse_size(v, &d)) break;
        if (!check_range(k, d, v, err)) return false;
        *(size_t *)slot = (size_t)d;
        return true;
    case T_DUR:
    case T_DUR_I:
        if (!parse_duration(v, &d)) break;
        if (!check_range(k, d, v, err)) return false;
        if (k->type == T_DUR) *(long long *)slot = (long long)d;
        else *(int *)slot = (int)d;
        return true;
    case T_BOOL:
        if (!parse_bool(v, slot)) break;
        return true;
    case T_LEVEL:
        if (!parse_level(v, slot)) break;
        return true;
    case T_LIST: {
        gg_strlist l = {0};
        for (const char *p = v; *p;) {
            const char *e = strchr(p, ',');
            size_t n = e ? (size_t)(e - p) : strlen(p);
            const char *s = p;
            size_t m = n;
            while (m && isspace((unsigned char)*s)) { s++; m--; }
            while (m && isspace((unsigned char)s[m - 1])) m--;
            if (m && !list_push(&l, s, m)) { list_free(&l); gg_error_set(err, "oom", "out of memory"); return false; }
            p += n + (e ? 1 : 0);
        }
        list_free(slot);
        *(gg_strlist *)slot = l;
        return true;
    }
    }
    static const char *const expect[] = {"a string", "an integer", "an integer", "a size (e.g. 1MiB)",
                                         "a duration (e.g. 30s, 5m)", "a duration (e.g. 500ms)",
                                         "true or false", "a list", "one of debug, info, warn, error",
                                         "a number"};
    gg_error_set(err, "invalid_config", "%s: '%s' is not %s", k->name, v, expect[k->type]);
    return false;
}

bool gg_config_set(gg_config *c, const char *key, const char *value, gg_error *err) {
    const key_def *k = find_key(key);
    if (!k) { gg_error_set(err, "invalid_config", "unknown configuration key '%s'", key); return false; }
    return set_scalar(c, k, value ? value : "", err);
}

/* ---- the YAML file ---------------------------------------------------------------------- */

typedef struct file_ctx {
    gg_config *c;
    const char *path;
} file_ctx;

static bool node_error(file_ctx *f, const ynode *n, gg_error *err) {
    gg_error_set_path(err, f->path);
    if (n) gg_error_set_pos(err, n->line, n->column);
    return false;
}

static bool is_null_scalar(const ynode *v) {
    if (v->kind != YN_SCALAR || !v->plain) return false;
    const char *s = v->str;
    return !*s || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 || strcmp(s, "Null") == 0 || strcmp(s, "NULL") == 0;
}

static bool apply_node(file_ctx *f, const key_def *k, const ynode *v, gg_error *err) {
    void *slot = (char *)f->c + k->offset;
    if (k->type == T_LIST) {
        if (is_null_scalar(v)) { list_free(slot); return true; }
        if (v->kind != YN_SEQ) {
            gg_error_set(err, "invalid_config", "%s must be a list", k->name);
            return node_error(f, v, err);
        }
        gg_strlist l = {0};
        for (size_t i = 0; i < v->count; i++) {
            const ynode *item = v->items[i];
            if (item->kind != YN_SCALAR) {
                list_free(&l);
                gg_error_set(err, "invalid_config", "%s: list items must be strings", k->name);
                return node_error(f, item, err);
            }
            if (!list_push(&l, item->str, item->len)) {
                list_free(&l);
                gg_error_set(err, "oom", "out of memory");
                return false;
            }
        }
        list_free(slot);
        *(gg_strlist *)slot = l;
        return true;
    }
    if (v->kind != YN_SCALAR) {
        gg_error_set(err, "invalid_config", "%s must be a single value", k->name);
        return node_error(f, v, err);
    }
    if (k->type == T_STR && is_null_scalar(v)) return set_str(slot, NULL, err);
    if (is_null_scalar(v)) {
        gg_error_set(err, "invalid_config", "%s needs a value", k->name);
        return node_error(f, v, err);
    }
    if (!set_scalar(f->c, k, v->str, err)) return node_error(f, v, err);
    return true;
}

/* A key given twice in one mapping is an error naming both places (silently taking the
 * last would hide a typo'd override). */
static bool check_duplicate(file_ctx *f, const ynode *map, size_t i, const char *prefix, gg_error *err) {
    const ynode *kn = map->items[2 * i];
    for (size_t j = 0; j < i; j++) {
        const ynode *prev = map->items[2 * j];
        if (prev->kind != YN_SCALAR || prev->len != kn->len || memcmp(prev->str, kn->str, kn->len) != 0) continue;
        gg_error_set(err, "invalid_config", "duplicate key '%s%s%s' (first at line %d, column %d)", prefix,
                     *prefix ? "." : "", kn->str, prev->line, prev->column);
        return node_error(f, kn, err);
    }
    return true;
}

static bool walk_mapping(file_ctx *f, const ynode *map, const char *prefix, int depth, gg_error *err) {
    for (size_t i = 0; i < map->count; i++) {
        const ynode *kn = map->items[2 * i], *vn = map->items[2 * i + 1];
        if (kn->kind != YN_SCALAR) {
            gg_error_set(err, "invalid_config", "keys must be plain names");
            return node_error(f, kn, err);
        }
        if (!check_duplicate(f, map, i, prefix, err)) return false;
        char name[128];
        int n = snprintf(name, sizeof name, "%s%s%s", prefix, *prefix ? "." : "", kn->str);
        if (n < 0 || (size_t)n >= sizeof name) {
            gg_error_set(err, "invalid_config", "key too long");
            return node_error(f, kn, err);
        }
        const key_def *k = find_key(name);
        if (k) {
            if (!apply_node(f, k, vn, err)) return false;
        } else if (depth == 0 && is_section(name)) {
            if (is_null_scalar(vn)) continue;
            if (vn->kind != YN_MAP) {
                gg_error_set(err, "invalid_config", "%s must be a mapping of settings", name);
                return node_error(f, vn, err);
            }
            if (!walk_mapping(f, vn, name, depth + 1, err)) return false;
        } else {
            gg_error_set(err, "invalid_config", "unknown configuration key '%s'", name);
            return node_error(f, kn, err);
        }
    }
    return true;
}

/* The whole file in memory (a configuration file is the operator's, a few KiB). */
static char *read_file(FILE *fp, size_t *len) {
    gg_strbuf b = GG_STRBUF_INIT;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, fp)) > 0) gg_strbuf_append(&b, chunk, n);
    if (ferror(fp) || b.oom) {
        gg_strbuf_free(&b);
        return NULL;
    }
    *len = b.len;
    return gg_strbuf_take(&b);
}

/* The configuration read by the one positioned YAML reader (util/yaml.h): the same scalars,
 * alias bounds and positions as graphs and node specs. */
static bool load_tree(file_ctx *f, const char *src, size_t len, gg_error *err) {
    ydoc doc;
    gg_error perr = GG_ERROR_INIT;
    if (!gg_yaml_doc_parse(&doc, src, len, 0, &perr)) {
        gg_error_set(err, "invalid_config", "YAML: %s", perr.message ? perr.message : "parse error");
        gg_error_set_path(err, f->path);
        gg_error_set_pos(err, perr.line, perr.column);
        gg_error_clear(&perr);
        return false;
    }
    bool ok = true;
    const ynode *root = doc.root;
    if (root && !is_null_scalar(root)) {
        if (root->kind != YN_MAP) {
            gg_error_set(err, "invalid_config", "the configuration must be a mapping of settings");
            ok = node_error(f, root, err);
        } else {
            ok = walk_mapping(f, root, "", 0, err);
        }
    }
    gg_yaml_doc_free(&doc);
    return ok;
}

bool gg_config_load_file(gg_config *c, const char *path, gg_error *err) {
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        gg_error_set(err, "invalid_config", "cannot open configuration file: %s", strerror(errno));
        gg_error_set_path(err, path);
        return false;
    }
    size_t len = 0;
    char *src = read_file(fp, &len);
    fclose(fp);
    if (!src) {
        gg_error_set(err, "invalid_config", "cannot read configuration file");
        gg_error_set_path(err, path);
        return false;
    }
    file_ctx f = {c, path};
    bool ok = load_tree(&f, src, len, err);
    free(src);
    if (ok) ok = set_str(&c->config_file, path, err);
    return ok;
}

/* ---- environment ------------------------------------------------------------------------- */

static void env_name(const char *key, char *out, size_t size) {
    size_t n = (size_t)snprintf(out, size, "GRAPHGATE_");
    for (const char *p = key; *p && n + 1 < size; p++) out[n++] = *p == '.' ? '_' : (char)toupper((unsigned char)*p);
    out[n] = '\0';
}

bool gg_config_apply_env(gg_config *c, char **envp, gg_error *err) {
    if (!envp) envp = environ;
    for (char **e = envp; e && *e; e++) {
        if (strncmp(*e, "GRAPHGATE_", 10) != 0) continue;
        const char *eq = strchr(*e, '=');
        if (!eq) continue;
        size_t nlen = (size_t)(eq - *e);
        if (nlen == 16 && strncmp(*e, "GRAPHGATE_CONFIG", 16) == 0) continue;
        const key_def *k = NULL;
        char name[128];
        for (size_t i = 0; i < N_KEYS && !k; i++) {
            env_name(keys[i].name, name, sizeof name);
            if (strlen(name) == nlen && strncmp(name, *e, nlen) == 0) k = &keys[i];
        }
        if (!k) {
            /* Other tools share the prefix (test harnesses, wrappers): warn, not fail. */
            fprintf(stderr, "graphgate: warning: ignoring unknown variable %.*s\n", (int)nlen, *e);
            continue;
        }
        if (!set_scalar(c, k, eq + 1, err)) {
            char prefix[160];
            snprintf(prefix, sizeof prefix, "%.*s", (int)nlen, *e);
            gg_error_set_path(err, prefix);
            return false;
        }
    }
    return true;
}

/* ---- validation ------------------------------------------------------------------------- */

/* "host:port", "[v6]:port"; port 0..65535. */
static bool valid_addr(const char *a) {
    const char *colon = strrchr(a, ':');
    if (!colon || colon == a || !colon[1]) return false;
    if (a[0] == '[' && colon[-1] != ']') return false;
    char *end;
    errno = 0;
    long port = strtol(colon + 1, &end, 10);
    return !*end && !errno && port >= 0 && port <= 65535;
}

/* 127.0.0.0/8, [::1] or localhost (the internal listener's safe binds). */
static bool loopback_addr(const char *a) {
    return !strncmp(a, "127.", 4) || !strncmp(a, "[::1]:", 6) || !strncasecmp(a, "localhost:", 10);
}

bool gg_config_validate(const gg_config *c, gg_error *err) {
    if (!c->listen || !valid_addr(c->listen)) {
        gg_error_set(err, "invalid_config", "listen: '%s' is not ADDR:PORT", c->listen ? c->listen : "");
        return false;
    }
    if (c->internal_listen && *c->internal_listen && !valid_addr(c->internal_listen)) {
        gg_error_set(err, "invalid_config", "internal_listen: '%s' is not ADDR:PORT (or \"\" to disable)", c->internal_listen);
        return false;
    }
    if (c->internal_listen && *c->internal_listen && !c->internal_listen_public && !loopback_addr(c->internal_listen)) {
        gg_error_set(err, "invalid_config",
                     "internal_listen: '%s' is not a loopback address; the internal listener has no authentication "
                     "(set internal_listen_public: true to bind it there anyway)", c->internal_listen);
        return false;
    }
    if (c->db_url && *c->db_url && strncmp(c->db_url, "postgres://", 11) != 0 &&
        strncmp(c->db_url, "postgresql://", 13) != 0) {
        gg_error_set(err, "invalid_config", "database.url must start with postgres:// or postgresql://");
        return false;
    }
    if (!c->db_path || !*c->db_path) {
        gg_error_set(err, "invalid_config", "database.path must not be empty");
        return false;
    }
    if (c->public_url && *c->public_url) {
        size_t n = strlen(c->public_url);
        if ((strncmp(c->public_url, "https://", 8) && strncmp(c->public_url, "http://", 7)) ||
            strpbrk(c->public_url, "?#@ ") || c->public_url[n - 1] == '/') {
            gg_error_set(err, "invalid_config",
                         "public_url must be an http(s) base URL without a trailing slash, query or fragment");
            return false;
        }
    }
    if (c->session_secret && *c->session_secret && strlen(c->session_secret) < 32) {
        gg_error_set(err, "invalid_config", "session.secret must be at least 32 characters");
        return false;
    }
    if (!c->history_durability || (strcmp(c->history_durability, "durable") != 0 &&
                                   strcmp(c->history_durability, "async") != 0)) {
        gg_error_set(err, "invalid_config", "history.durability: '%s' is not durable or async",
                     c->history_durability ? c->history_durability : "");
        return false;
    }
    if (c->key_pepper && *c->key_pepper && strlen(c->key_pepper) < 16) {
        gg_error_set(err, "invalid_config", "auth.key_pepper must be at least 16 characters");
        return false;
    }
    return true;
}

bool gg_config_load(gg_config *c, const char *config_file, gg_error *err) {
    if (!gg_config_init(c, err)) return false;
    if (!config_file || !*config_file) config_file = getenv("GRAPHGATE_CONFIG");
    if (config_file && *config_file && !gg_config_load_file(c, config_file, err)) return false;
    if (!gg_config_apply_env(c, NULL, err)) return false;
    return gg_config_validate(c, err);
}

/* ---- data directories ------------------------------------------------------------------- */

static bool is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

bool gg_config_find_data_dir(const char *configured, const char *name, char *out, size_t size,
                             gg_error *err) {
    if (configured && *configured) {
        if (!is_dir(configured)) {
            gg_error_set(err, "not_found", "%s directory %s does not exist", name, configured);
            return false;
        }
        snprintf(out, size, "%s", configured);
        return true;
    }
    char cands[5][PATH_MAX];
    int n = 0;
    const char *src = getenv("GG_SRCDIR");
    if (src && *src) snprintf(cands[n++], PATH_MAX, "%s/%s", src, name);
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) *slash = '\0';
        /* The installed layout first: for PREFIX/bin/graphgate, PREFIX/../<name> could be
         * any unrelated folder; ../ and ../../ serve a binary inside a build tree. */
        snprintf(cands[n++], PATH_MAX, "%.3000s/../share/graphgate/%s", exe, name);
        snprintf(cands[n++], PATH_MAX, "%.3000s/../%s", exe, name);
        snprintf(cands[n++], PATH_MAX, "%.3000s/../../%s", exe, name);
    }
#ifdef GG_PKGDATADIR
    snprintf(cands[n++], PATH_MAX, "%s/%s", GG_PKGDATADIR, name);
#endif
    for (int i = 0; i < n; i++) {
        if (is_dir(cands[i])) {
            char *real = realpath(cands[i], NULL);
            snprintf(out, size, "%s", real ? real : cands[i]);
            free(real);
            return true;
        }
    }
    gg_strbuf b = GG_STRBUF_INIT;
    for (int i = 0; i < n; i++) gg_strbuf_printf(&b, "%s%s", i ? ", " : "", cands[i]);
    gg_error_set(err, "not_found", "cannot find the %s directory (looked in %s); set it in the configuration",
                 name, b.data ? b.data : "nowhere");
    gg_strbuf_free(&b);
    return false;
}

/* ---- dump ------------------------------------------------------------------------------- */

/* One key's value as dump text (secrets masked, unless reveal) into b. */
static void format_value(const gg_config *c, const key_def *k, bool reveal, gg_strbuf *b) {
    static const char *const levels[] = {"debug", "info", "warn", "error"};
    const void *slot = (const char *)c + k->offset;
    switch (k->type) {
    case T_STR: {
        const char *s = *(char *const *)slot;
        if (!s) gg_strbuf_printf(b, "null");
        else if (k->secret && *s && !reveal) gg_strbuf_printf(b, "\"********\"");
        else gg_strbuf_printf(b, "\"%s\"", s);
        break;
    }
    case T_INT: case T_DUR_I: gg_strbuf_printf(b, "%d%s", *(const int *)slot, k->type == T_DUR_I ? "ms" : ""); break;
    case T_LL: gg_strbuf_printf(b, "%lld", *(const long long *)slot); break;
    case T_DUR: gg_strbuf_printf(b, "%lldms", *(const long long *)slot); break;
    case T_SIZE: gg_strbuf_printf(b, "%zu", *(const size_t *)slot); break;
    case T_DOUBLE: gg_strbuf_printf(b, "%g", *(const double *)slot); break;
    case T_BOOL: gg_strbuf_printf(b, "%s", *(const bool *)slot ? "true" : "false"); break;
    case T_LEVEL: gg_strbuf_printf(b, "%s", levels[*(const gg_log_level *)slot]); break;
    case T_LIST: {
        const gg_strlist *l = slot;
        gg_strbuf_printf(b, "[");
        for (size_t j = 0; j < l->n; j++)
            gg_strbuf_printf(b, "%s\"%s\"", j ? ", " : "", k->secret && !reveal ? "********" : l->items[j]);
        gg_strbuf_printf(b, "]");
        break;
    }
    }
}

void gg_config_dump(const gg_config *c, FILE *f) {
    for (size_t i = 0; i < N_KEYS; i++) {
        gg_strbuf b = GG_STRBUF_INIT;
        format_value(c, &keys[i], false, &b);
        fprintf(f, "%s: %s\n", keys[i].name, b.data ? b.data : "");
        gg_strbuf_free(&b);
    }
}

/* Every key whose value differs between a and b; see app.h. */
size_t gg_config_diff(const gg_config *a, const gg_config *b, gg_config_diff_fn fn, void *user) {
    size_t n = 0;
    for (size_t i = 0; i < N_KEYS; i++) {
        gg_strbuf va = GG_STRBUF_INIT, vb = GG_STRBUF_INIT, ma = GG_STRBUF_INIT, mb = GG_STRBUF_INIT;
        format_value(a, &keys[i], true, &va);
        format_value(b, &keys[i], true, &vb);
        if (strcmp(va.data ? va.data : "", vb.data ? vb.data : "") != 0) {
            format_value(a, &keys[i], false, &ma);
            format_value(b, &keys[i], false, &mb);
            fn(user, keys[i].name, ma.data ? ma.data : "", mb.data ? mb.data : "");
            n++;
        }
        gg_strbuf_free(&va);
        gg_strbuf_free(&vb);
        gg_strbuf_free(&ma);
        gg_strbuf_free(&mb);
    }
    return n;
}
