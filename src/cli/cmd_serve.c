/* cmd_serve.c — `graphgate serve`: load the configuration, open and migrate the store, build
 * the HTTP server, let each subsystem install its routes, serve until SIGTERM/SIGINT, then
 * drain and shut down in order (drain callbacks, listeners, subsystems, store). SIGHUP
 * re-reads the configuration and applies what can change at run time. */
#include "cli/cli.h"
#include "console/console.h"
#include "gateway/gateway.h"
#include "http/http.h"
#include "specs/specs.h"
#include "store/store.h"
#include "telemetry/telemetry.h"

#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef GG_PKGDATADIR
#define GG_PKGDATADIR "/usr/local/share/graphgate"
#endif
#ifndef GG_VERSION
#define GG_VERSION "0.0.0"
#endif

static void serve_usage(FILE *f) {
    fprintf(f,
            "usage: graphgate serve [--config FILE] [--listen ADDR:PORT] [--internal-listen ADDR:PORT]\n"
            "                       [--db PATH] [--migrations DIR] [--workers N] [--print-routes]\n\n"
            "Run the gateway in the foreground until SIGTERM or SIGINT. SIGHUP re-reads the\n"
            "configuration: log.level, log.file (reopened), rate_limit.* and\n"
            "tenants.max_concurrent_executions change at once; other changed keys are logged as\n"
            "needing a restart.\n\n"
            "  --config FILE              YAML configuration (default: $GRAPHGATE_CONFIG, else none)\n"
            "  --listen ADDR:PORT         public listener (default 127.0.0.1:8080; port 0 = any free port)\n"
            "  --internal-listen ADDR:PORT  internal listener, no auth (default 127.0.0.1:8081; \"\" = off)\n"
            "  --db PATH                  SQLite database (default ./var/graphgate.db); migrated on start\n"
            "  --database-url URL         PostgreSQL instead (postgres://user:pass@host/db?sslmode=...)\n"
            "  --migrations DIR           migrations directory (default: found automatically)\n"
            "  --workers N                tool-call worker threads (default 2 x cores)\n"
            "  --print-routes             build the server as serve would, print its route table\n"
            "                             (METHOD PATTERN LISTENERS per line) and exit without binding\n\n"
            "Flags override GRAPHGATE_* environment variables, which override the file.\n"
            "On start it prints the public and internal base URLs on stdout.\n");
}

/* Each subsystem that serves HTTP adds one call here: it registers its routes on
 * gg_http_server_router(app->http), its /metrics hooks, and its shutdown callbacks. */
static bool install_subsystems(gg_app *app, gg_error *err) {
    gg_gateway *gw = gg_gateway_install(app, err);
    if (!gw) return false;
    specs_registry *specs = NULL; /* node-spec service: REST routes + MCP at /mcp/nodes */
    if (!specs_install(app, gg_gateway_auth(gw), &specs, err)) return false;
    mcp_provider *nodes = specs_provider_new(specs);
    bool mounted = nodes && gg_gateway_mount(gw, "nodes", nodes, err);
    if (!nodes) gg_error_set(err, "oom", "out of memory");
    mcp_provider_unref(nodes);
    if (!mounted || !gg_gateway_mount_toolkit(gw, err)) return false; /* /mcp/toolkit */
    gg_console_hooks hooks = {gg_gateway_tenant_authorize, gg_gateway_console_origins, gw};
    return gg_console_install(app, gg_gateway_auth(gw), &hooks, err); /* web console at /console */
}

static bool ready_check(void *user, gg_error *err) {
    return gg_store_migrations_current((gg_store *)user, err);
}

/* Pull serve's own flags out of rest (what gg_cli_load_config left) into the config;
 * --print-routes sets *print_routes (NULL on a SIGHUP re-read: the flag is ignored). */
static int apply_serve_flags(gg_config *cfg, char **rest, int n_rest, const char *argv0, bool *print_routes) {
    static const struct { const char *flag, *key; } flags[] = {
        {"--listen", "listen"},
        {"--internal-listen", "internal_listen"},
        {"--workers", "workers"},
    };
    for (int i = 0; i < n_rest; i++) {
        const char *a = rest[i];
        if (i == 0 && argv0 && strcmp(a, argv0) == 0) continue; /* the command name */
        if (strcmp(a, "--print-routes") == 0) {
            if (print_routes) *print_routes = true;
            continue;
        }
        bool matched = false;
        for (size_t f = 0; f < sizeof flags / sizeof flags[0] && !matched; f++) {
            size_t n = strlen(flags[f].flag);
            const char *value = NULL;
            if (strcmp(a, flags[f].flag) == 0) {
                if (i + 1 >= n_rest) {
                    fprintf(stderr, "graphgate serve: %s needs a value\n", flags[f].flag);
                    return GG_EXIT_USAGE;
                }
                value = rest[++i];
            } else if (strncmp(a, flags[f].flag, n) == 0 && a[n] == '=') {
                value = a + n + 1;
            } else {
                continue;
            }
            matched = true;
            gg_error err = GG_ERROR_INIT;
            if (!gg_config_set(cfg, flags[f].key, value, &err)) {
                char buf[512];
                gg_error_format(&err, buf, sizeof buf);
                fprintf(stderr, "graphgate serve: %s: %s\n", flags[f].flag, buf);
                gg_error_clear(&err);
                return GG_EXIT_USAGE;
            }
        }
        if (!matched) {
            fprintf(stderr, "graphgate serve: unknown option '%s'\n", a);
            serve_usage(stderr);
            return GG_EXIT_USAGE;
        }
    }
    gg_error err = GG_ERROR_INIT;
    if (!gg_config_validate(cfg, &err)) {
        char buf[512];
        gg_error_format(&err, buf, sizeof buf);
        fprintf(stderr, "graphgate serve: %s\n", buf);
        gg_error_clear(&err);
        return GG_EXIT_USAGE;
    }
    return GG_EXIT_OK;
}

static void print_url(const char *label, const char *addr, unsigned port) {
    char host[128];
    unsigned ignored;
    gg_error err = GG_ERROR_INIT;
    if (!gg_http_parse_addr(addr, host, sizeof host, &ignored, &err)) {
        gg_error_clear(&err);
        return;
    }
    bool v6 = strchr(host, ':') != NULL;
    printf("  %-8s http://%s%s%s:%u/\n", label, v6 ? "[" : "", host, v6 ? "]" : "", port);
}

/* Open the store with serve's pool size (request threads share it) and migrate. */
static gg_store *open_store(const gg_config *cfg, gg_error *err) {
    char dir[4096];
    if (!gg_config_find_data_dir(cfg->migrations_dir, "migrations", dir, sizeof dir, err)) return NULL;
    gg_store_options o = {.path = cfg->db_path, .url = cfg->db_url, .statement_timeout_ms = cfg->statement_timeout_ms,
                          .pool_size = cfg->db_pool_size, .busy_timeout_ms = cfg->busy_timeout_ms};
    gg_store *s = gg_store_open(&o, err);
    if (s && !gg_store_migrate(s, dir, NULL, err)) {
        gg_store_close(s);
        return NULL;
    }
    return s;
}

/* HTTP polling threads: http.threads, else two per core. More threads than cores because a
 * polling thread also runs pure tool calls inline (up to inline_budget) and is preempted
 * whenever a response wakes its client: with two per core another one takes over meanwhile
 * (bench/gateway: +9 % tools/call throughput over one per core on 2 cores). */
static unsigned polling_threads(const gg_config *cfg) {
    if (cfg->http_threads > 0) return (unsigned)cfg->http_threads;
    long n = 2 * sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 2) n = 2;
    if (n > 32) n = 32;
    return (unsigned)n;
}

/* Waits for a second SIGTERM/SIGINT while draining; SIGUSR2 (sent by serve itself with
 * pthread_kill once the drain is over) just ends the wait. */
static void *second_signal(void *arg) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGUSR2);
    int sig = 0;
    if (sigwait(&set, &sig) == 0 && sig != SIGUSR2) {
        gg_log(GG_LOG_WARN, "second signal: stopping without waiting for in-flight requests", NULL);
        gg_http_server_hurry(arg);
    }
    return NULL;
}

/* Keys SIGHUP applies at once (log here, the others through the reload callbacks: the
 * gateway's rate limits and tenant cap); every other change needs a restart. */
static bool reloadable(const char *key) {
    static const char *const keys[] = {"log.level", "log.file", "rate_limit.rate", "rate_limit.burst",
                                       "tenants.max_concurrent_executions"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcmp(key, keys[i]) == 0) return true;
    return false;
}

static void log_change(void *user, const char *key, const char *old_value, const char *new_value) {
    (void)user;
    if (reloadable(key)) gg_log(GG_LOG_INFO, "configuration reloaded: applied", "key", key, "old", old_value, "new", new_value, NULL);
    else gg_log(GG_LOG_WARN, "configuration reloaded: changed key needs a restart (still running with the old value)",
                "key", key, "old", old_value, "new", new_value, NULL);
}

/* SIGHUP: the configuration as serve would load it now (file, environment, flags), the
 * changes logged, log.level / log.file applied (the log file is reopened either way, which
 * also serves log rotation). A configuration that no longer loads changes nothing. */
static void reload_config(gg_app *app, gg_config *cfg, int argc, char **argv) {
    gg_config next;
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    int n_rest = 0;
    int rc = rest ? gg_cli_load_config(&next, argc, argv, "serve", rest, &n_rest) : GG_EXIT_FAIL;
    if (rc == GG_EXIT_OK) {
        rc = apply_serve_flags(&next, rest, n_rest, argv[0], NULL);
        if (rc != GG_EXIT_OK) gg_config_free(&next);
    }
    free(rest);
    if (rc != GG_EXIT_OK) {
        gg_log(GG_LOG_ERROR, "SIGHUP: the configuration does not load (see stderr); nothing changed", NULL);
        return;
    }
    size_t n = gg_config_diff(cfg, &next, log_change, NULL);
    for (size_t i = 0; i < app->nreload; i++) app->reload[i].fn(app, &next, app->reload[i].user);
    cfg->rate_limit_rate = next.rate_limit_rate; /* the running values, for the next diff */
    cfg->rate_limit_burst = next.rate_limit_burst;
    cfg->tenant_max_concurrent = next.tenant_max_concurrent;
    cfg->log_level = next.log_level;
    char *old_file = cfg->log_file;
    cfg->log_file = next.log_file;
    next.log_file = old_file;
    gg_log_configure(cfg->log_level, cfg->log_file);
    gg_config_free(&next);
    char buf[32];
    snprintf(buf, sizeof buf, "%zu", n);
    gg_log(GG_LOG_INFO, "SIGHUP: configuration re-read", "changed_keys", buf, NULL);
}

/* The trace exporter (telemetry.h): on only when telemetry.otlp_endpoint is set. */
static bool start_telemetry(const gg_config *cfg, gg_error *err) {
    if (!cfg->otel_endpoint || !*cfg->otel_endpoint) return true;
    /* the exporter wants a NULL-terminated list (it copies the strings) */
    const char **headers = calloc(cfg->otel_headers.n + 1, sizeof *headers);
    if (!headers) {
        gg_error_set(err, "oom", "out of memory");
        return false;
    }
    for (size_t i = 0; i < cfg->otel_headers.n; i++) headers[i] = cfg->otel_headers.items[i];
    gg_tel_config tc = {.enabled = true, .endpoint = cfg->otel_endpoint, .headers = headers,
                        .sampling_ratio = cfg->otel_sampling_ratio, .service_name = cfg->otel_service_name,
                        .queue_spans = (size_t)cfg->otel_queue_spans, .batch_spans = (size_t)cfg->otel_batch_spans,
                        .flush_ms = cfg->otel_flush_ms, .timeout_ms = cfg->otel_timeout_ms,
                        .value_max = cfg->otel_value_max};
    bool ok = gg_tel_start(&tc, err);
    free(headers);
    if (!ok) return false;
    gg_log(GG_LOG_INFO, "exporting traces", "otlp_endpoint", cfg->otel_endpoint, NULL);
    return true;
}

/* --print-routes: one line per route of the table install_subsystems built, so docs/rest.md
 * can be checked against the routes the server really registers (tests/docs/routes.sh). */
static void print_route_table(gg_router *r) {
    for (int i = 0; i < gg_router_count(r); i++) {
        unsigned l = gg_router_listeners(r, i);
        printf("%s %s %s\n", gg_router_method(r, i), gg_router_pattern(r, i),
               l == GG_LISTENER_BOTH ? "public,internal" : l == GG_LISTENER_INTERNAL ? "internal" : "public");
    }
    fflush(stdout);
}

static int serve(gg_config *cfg, int argc, char **argv, bool print_routes) {
    /* Signals are taken synchronously by this thread (sigwait), so they must be blocked
     * before any other thread starts: every thread inherits the mask. */
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    sigset_t waited = stop_signals;
    sigaddset(&waited, SIGHUP);
    sigset_t blocked = waited;
    sigaddset(&blocked, SIGUSR2); /* only used to wake the second-signal watcher */
    pthread_sigmask(SIG_BLOCK, &blocked, NULL);
    signal(SIGPIPE, SIG_IGN);

    gg_log_configure(cfg->log_level, cfg->log_file);
    gg_error err = GG_ERROR_INIT;
    int rc = GG_EXIT_FAIL; /* what the fail/unbuilt exit returns */
    gg_store *store = open_store(cfg, &err);
    if (!store) {
        char buf[512];
        gg_error_format(&err, buf, sizeof buf);
        fprintf(stderr, "graphgate serve: %s\n", buf);
        gg_error_clear(&err);
        return GG_EXIT_FAIL;
    }

    gg_http_options o = {
        .public_addr = cfg->listen,
        .internal_addr = cfg->internal_listen,
        .threads = polling_threads(cfg),
        .body_limit = cfg->body_limit,
        .max_connections = (unsigned)cfg->http_max_connections,
        .max_connections_per_ip = (unsigned)cfg->http_max_conn_per_ip,
        .receive_timeout_ms = (unsigned)cfg->http_receive_timeout_ms,
        .internal_hosts = cfg->allowed_hosts.items,
        .n_internal_hosts = cfg->allowed_hosts.n,
        .internal_origins = cfg->origins.items,
        .n_internal_origins = cfg->origins.n,
        .access_log = cfg->access_log,
        .access_log_file = cfg->access_log_file,
        .version = GG_VERSION,
    };
    /* Responses of a few hundred KB are built and freed on every call; without these glibc
     * returns that memory to the kernel each time and the TLB shootdowns cost ~20% CPU. */
    mallopt(M_TRIM_THRESHOLD, 64 * 1024 * 1024);
    mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
    gg_app app = {.config = cfg, .store = store, .pkgdatadir = GG_PKGDATADIR};
    app.http = gg_http_server_new(&o, &err);
    if (!app.http) goto fail;
    gg_http_server_set_ready_check(app.http, ready_check, store);
    if (!start_telemetry(cfg, &err)) goto fail;
    if (!install_subsystems(&app, &err)) goto fail;
    if (print_routes) {
        print_route_table(gg_http_server_router(app.http));
        rc = GG_EXIT_OK;
        goto unbuilt;
    }
    if (!gg_http_server_start(app.http, &err)) goto fail;

    printf("graphgate %s serving (Ctrl-C or SIGTERM to stop)\n", GG_VERSION);
    print_url("public", cfg->listen, gg_http_server_port(app.http, GG_LISTENER_PUBLIC));
    if (cfg->internal_listen && cfg->internal_listen[0])
        print_url("internal", cfg->internal_listen, gg_http_server_port(app.http, GG_LISTENER_INTERNAL));
    fflush(stdout);
    char ports[64];
    snprintf(ports, sizeof ports, "%u/%u", gg_http_server_port(app.http, GG_LISTENER_PUBLIC),
             gg_http_server_port(app.http, GG_LISTENER_INTERNAL));
    gg_log(GG_LOG_INFO, "serving", "listen", cfg->listen, "internal_listen", cfg->internal_listen,
           "ports", ports, "db", gg_store_path(store), NULL);

    int sig = 0;
    while (sigwait(&waited, &sig) == 0 && sig == SIGHUP) reload_config(&app, cfg, argc, argv);
    app.stopping = 1;
    gg_log(GG_LOG_INFO, "shutting down", "signal", sig == SIGINT ? "SIGINT" : "SIGTERM", NULL);
    for (size_t i = 0; i < app.ndrain; i++) app.drain[i].fn(&app, app.drain[i].user);
    /* A second signal while draining means "now": a watcher thread cuts the wait short. */
    pthread_t watcher;
    bool watching = pthread_create(&watcher, NULL, second_signal, app.http) == 0;
    long long deadline = cfg->shutdown_timeout_ms > 0 ? cfg->shutdown_timeout_ms : 0;
    if (deadline > 3600000) deadline = 3600000;
    int abandoned = gg_http_server_stop(app.http, (unsigned)deadline);
    if (watching) {
        pthread_kill(watcher, SIGUSR2);
        pthread_join(watcher, NULL);
    }
    for (size_t i = app.nshutdown; i-- > 0;) app.shutdown[i].fn(&app, app.shutdown[i].user);
    gg_tel_stop(); /* after the gateway: the last calls' spans are queued by now */
    gg_http_server_free(app.http);
    gg_store_close(store);
    char n[32];
    snprintf(n, sizeof n, "%d", abandoned);
    gg_log(GG_LOG_INFO, "stopped", "abandoned_requests", n, NULL);
    return GG_EXIT_OK;

fail: {
    char buf[512];
    gg_error_format(&err, buf, sizeof buf);
    fprintf(stderr, "graphgate serve: %s\n", buf);
    gg_error_clear(&err);
}
unbuilt: /* the subsystems installed so far stop in reverse order; nothing was bound */
    for (size_t i = app.nshutdown; i-- > 0;) app.shutdown[i].fn(&app, app.shutdown[i].user);
    gg_tel_stop();
    gg_http_server_free(app.http);
    gg_store_close(store);
    return rc;
}

/* `graphgate serve`; see serve_usage. */
int gg_cmd_serve(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            serve_usage(stdout);
            return GG_EXIT_OK;
        }
    gg_config cfg;
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    if (!rest) {
        fprintf(stderr, "graphgate serve: out of memory\n");
        return GG_EXIT_FAIL;
    }
    int n_rest = 0;
    int rc = gg_cli_load_config(&cfg, argc, argv, "serve", rest, &n_rest);
    if (rc != GG_EXIT_OK) {
        free(rest);
        return rc;
    }
    bool print_routes = false;
    rc = apply_serve_flags(&cfg, rest, n_rest, argv[0], &print_routes);
    free(rest);
    if (rc == GG_EXIT_OK) rc = serve(&cfg, argc, argv, print_routes);
    gg_config_free(&cfg);
    return rc;
}
