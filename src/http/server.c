/* server.c — the server's lifecycle: options, the two libmicrohttpd listeners, start,
 * graceful stop and free. The request path is in request.c, deferred responses and streams
 * in deferred.c, the access log in access_log.c, metrics and built-in routes in metrics.c. */
#include "http/internal.h"

#include <stdatomic.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef GG_VERSION
#define GG_VERSION "0.0.0"
#endif

/* ---- server lifecycle -------------------------------------------------------------------- */

/* Parse "host:port" or "[v6]:port"; see http.h. */
bool gg_http_parse_addr(const char *text, char *host, size_t host_size, unsigned *port, gg_error *err) {
    if (!text || !*text) {
        gg_error_set(err, "invalid_address", "empty listen address");
        return false;
    }
    const char *h = text, *colon;
    size_t hlen;
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (!close || close[1] != ':') {
            gg_error_set(err, "invalid_address", "listen address '%s' must look like [::1]:8080", text);
            return false;
        }
        h = text + 1;
        hlen = (size_t)(close - h);
        colon = close + 1;
    } else {
        colon = strrchr(text, ':');
        if (!colon || strchr(text, ':') != colon) {
            gg_error_set(err, "invalid_address", "listen address '%s' must look like 127.0.0.1:8080", text);
            return false;
        }
        hlen = (size_t)(colon - text);
    }
    if (hlen == 0 || hlen >= host_size) {
        gg_error_set(err, "invalid_address", "listen address '%s' has no usable host", text);
        return false;
    }
    char *end;
    errno = 0;
    unsigned long p = strtoul(colon + 1, &end, 10);
    if (errno || end == colon + 1 || *end || p > 65535 || colon[1] == '-' || colon[1] == '+') {
        gg_error_set(err, "invalid_address", "listen address '%s' has a bad port", text);
        return false;
    }
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    *port = (unsigned)p;
    return true;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Percent-decoding of paths and query arguments, except "%00": a decoded NUL would cut the
 * C string short and make "/health%00x" look like "/health", so it stays literal. */
static size_t unescape(void *cls, struct MHD_Connection *c, char *s) {
    char *w = s;
    for (const char *r = s; *r;) {
        int hi, lo;
        if (r[0] == '%' && (hi = hexval(r[1])) >= 0 && (lo = hexval(r[2])) >= 0 && (hi | lo) != 0) {
            *w++ = (char)(hi * 16 + lo);
            r += 3;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
    return (size_t)(w - s);
}

/* An attacker makes libmicrohttpd log one line per refused or cut connection: at most this
 * many per second reach the log, the rest are counted in the next line that does. */
#define MHD_LOG_PER_SECOND 10u

static void mhd_logger(void *cls, const char *fmt, va_list ap) {
    gg_http_server *srv = cls;
    long long now = (long long)time(NULL), sec = atomic_load(&srv->mhdlog_sec);
    if (sec != now && atomic_compare_exchange_strong(&srv->mhdlog_sec, &sec, now)) {
        atomic_store(&srv->mhdlog_count, 0);
        unsigned long dropped = atomic_exchange(&srv->mhdlog_dropped, 0);
        if (dropped) {
            char n[24];
            snprintf(n, sizeof n, "%lu", dropped);
            gg_log(GG_LOG_WARN, "libmicrohttpd messages suppressed (rate limit)", "count", n, NULL);
        }
    }
    if (atomic_fetch_add(&srv->mhdlog_count, 1) >= MHD_LOG_PER_SECOND) {
        atomic_fetch_add(&srv->mhdlog_dropped, 1);
        return;
    }
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' ')) msg[--n] = '\0';
    gg_log(GG_LOG_WARN, "libmicrohttpd", "detail", msg, NULL);
}

/* Create the server and the built-in routes; see http.h. */
gg_http_server *gg_http_server_new(const gg_http_options *opts, gg_error *err) {
    if (sodium_init() < 0) {
        gg_error_set(err, "internal_error", "libsodium failed to initialise");
        return NULL;
    }
    gg_http_server *srv = calloc(1, sizeof *srv);
    if (!srv || !(srv->router = gg_router_new())) {
        free(srv);
        gg_error_set(err, "oom", "out of memory creating the HTTP server");
        return NULL;
    }
    randombytes_buf(srv->rid_key, sizeof srv->rid_key);
    srv->opts = *opts;
    snprintf(srv->public_addr, sizeof srv->public_addr, "%s", opts->public_addr ? opts->public_addr : "127.0.0.1:8080");
    snprintf(srv->internal_addr, sizeof srv->internal_addr, "%s", opts->internal_addr ? opts->internal_addr : "");
    snprintf(srv->version, sizeof srv->version, "%s", opts->version ? opts->version : GG_VERSION);
    srv->opts.public_addr = srv->public_addr;
    srv->opts.internal_addr = srv->internal_addr;
    srv->opts.version = srv->version;
    srv->opts.server_name = NULL;
    if (!srv->opts.threads) srv->opts.threads = 2;
    if (!srv->opts.body_limit) srv->opts.body_limit = 1u << 20;
    if (!srv->opts.connection_timeout) srv->opts.connection_timeout = 60;
    if (!srv->opts.max_connections) srv->opts.max_connections = 1024;
    if (!srv->opts.receive_timeout_ms) srv->opts.receive_timeout_ms = 15000;
    srv->guard.hosts = opts->internal_hosts;
    srv->guard.nhosts = opts->n_internal_hosts;
    srv->guard.origins = opts->internal_origins;
    srv->guard.norigins = opts->n_internal_origins;
    if (!srv->opts.header_memory) srv->opts.header_memory = GG_HTTP_HEADER_MEMORY;
    if (srv->opts.header_memory < 4096) srv->opts.header_memory = 4096;
    pthread_mutex_init(&srv->alock, NULL);
    pthread_mutex_init(&srv->alog.lock, NULL);
    pthread_cond_init(&srv->alog.cond, NULL);
    srv->opts.access_log_file = NULL;
    if (opts->access_log && opts->access_log_file && opts->access_log_file[0]) {
        srv->alog.file = fopen(opts->access_log_file, "a");
        if (!srv->alog.file) {
            gg_error_set(err, "invalid_config", "cannot open access log file %s", opts->access_log_file);
            gg_http_server_free(srv);
            return NULL;
        }
    }
    srv->pub = (listener){srv, GG_LISTENER_PUBLIC, "", NULL, 0};
    srv->intl = (listener){srv, GG_LISTENER_INTERNAL, "", NULL, 0};
    snprintf(srv->pub.addr, sizeof srv->pub.addr, "%s", srv->public_addr);
    snprintf(srv->intl.addr, sizeof srv->intl.addr, "%s", srv->internal_addr);
    srv->started_ms = gg_now_ms();
    srv->started_wall_ms = gg_wall_ms();
    /* /metrics is operator data: internal listener only, unless there is none. */
    unsigned metrics_on = srv->internal_addr[0] ? GG_LISTENER_INTERNAL : GG_LISTENER_PUBLIC;
    if (!gg_router_add(srv->router, GG_LISTENER_BOTH, "GET", "/health", gg_http_route_health, srv, err) ||
        !gg_router_add(srv->router, GG_LISTENER_BOTH, "GET", "/ready", gg_http_route_ready, srv, err) ||
        !gg_router_add(srv->router, metrics_on, "GET", "/metrics", gg_http_route_metrics, srv, err)) {
        gg_http_server_free(srv);
        return NULL;
    }
    return srv;
}

gg_router *gg_http_server_router(gg_http_server *s) { return s->router; }

void gg_http_server_set_ready_check(gg_http_server *s, gg_http_ready_fn fn, void *user) {
    s->ready = fn;
    s->ready_user = user;
}

/* Add a /metrics hook (before start). */
bool gg_http_server_add_metrics(gg_http_server *s, gg_http_metrics_fn fn, void *user) {
    if (!fn || s->nhooks >= MAX_HOOKS || s->started) return false;
    s->hooks[s->nhooks].fn = fn;
    s->hooks[s->nhooks].user = user;
    s->nhooks++;
    return true;
}

/* The internal listener has no authentication: a non-loopback bind (allowed by the
 * configuration only with an explicit flag) is worth a warning at every start, and widens
 * the Host values it answers to IP literals. */
static void internal_bind_check(gg_http_server *s) {
    char host[128];
    unsigned port;
    gg_error e = GG_ERROR_INIT;
    s->guard.loopback_bind = true;
    if (!s->internal_addr[0] || !gg_http_parse_addr(s->internal_addr, host, sizeof host, &port, &e)) {
        gg_error_clear(&e);
        return;
    }
    s->guard.loopback_bind = !strncmp(host, "127.", 4) || !strcmp(host, "::1") || !strcasecmp(host, "localhost");
    if (!s->guard.loopback_bind)
        gg_log(GG_LOG_WARN, "internal listener bound to a non-loopback address: its routes have no authentication",
               "internal_listen", s->internal_addr, NULL);
}

/* New connections are refused (accepted and closed at once) while the server drains.
 * This replaces MHD_quiesce_daemon: in libmicrohttpd 0.9.75 quiescing an epoll daemon with a
 * thread pool races the worker threads' own removal of the listen socket from their epoll
 * sets, and the loser aborts the process ("Failed to remove listen FD from epoll set"). */
static enum MHD_Result accept_policy(void *cls, const struct sockaddr *addr, socklen_t addrlen) {
    (void)addr;
    (void)addrlen;
    return atomic_load(&((listener *)cls)->srv->draining) ? MHD_NO : MHD_YES;
}

static bool start_listener(gg_http_server *srv, listener *L, gg_error *err) {
    char host[128];
    unsigned port;
    if (!gg_http_parse_addr(L->addr, host, sizeof host, &port, err)) return false;
    struct addrinfo hints = {0}, *ai = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    int rc = getaddrinfo(host, NULL, &hints, &ai);
    if (rc != 0 || !ai) {
        gg_error_set(err, "listen_failed", "cannot resolve listen host '%s': %s", host, gai_strerror(rc));
        return false;
    }
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
    bool v6 = ai->ai_family == AF_INET6;
    freeaddrinfo(ai);
    if (v6) ((struct sockaddr_in6 *)(void *)&ss)->sin6_port = htons((uint16_t)port);
    else ((struct sockaddr_in *)(void *)&ss)->sin_port = htons((uint16_t)port);
    unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    if (v6) flags |= MHD_USE_IPv6;
    L->d = MHD_start_daemon(flags, (uint16_t)port, accept_policy, L, gg_http_on_request, L,
                            MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, srv,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                            MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL,
                            MHD_OPTION_NOTIFY_COMPLETED, gg_http_on_completed, L,
                            MHD_OPTION_NOTIFY_CONNECTION, gg_http_on_connection, L,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)srv->opts.connection_timeout,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned int)srv->opts.max_connections,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)srv->opts.max_connections_per_ip,
                            MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)srv->opts.threads,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, srv->opts.header_memory,
                            MHD_OPTION_END);
    if (!L->d) {
        gg_error_set(err, "listen_failed", "cannot listen on %s (address in use or not permitted)", L->addr);
        return false;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(L->d, MHD_DAEMON_INFO_BIND_PORT);
    L->port = di ? di->port : port;
    return true;
}

/* Bind and start; see http.h. */
bool gg_http_server_start(gg_http_server *s, gg_error *err) {
    if (s->started) return true;
    s->nrm = gg_router_count(s->router) + 1;
    s->rm = calloc((size_t)s->nrm * METRIC_SHARDS, sizeof *s->rm);
    if (!s->rm) {
        gg_error_set(err, "oom", "out of memory for metrics");
        return false;
    }
    if (s->opts.access_log && !s->alog.running && !gg_http_alog_start(&s->alog)) {
        gg_error_set(err, "internal_error", "cannot start the access log writer thread");
        return false;
    }
    if (!s->tracker && !(s->tracker = gg_conn_tracker_start(s->opts.receive_timeout_ms, s->opts.max_connections))) {
        gg_error_set(err, "internal_error", "cannot start the receive-deadline thread");
        return false;
    }
    gg_conn_tracker_set_tick(s->tracker, gg_http_find_gone_clients, s);
    internal_bind_check(s);
    /* before the listeners start: their threads read it (/health uptime) */
    s->started_ms = gg_now_ms();
    if (!start_listener(s, &s->pub, err)) return false;
    if (s->internal_addr[0] && !start_listener(s, &s->intl, err)) {
        MHD_stop_daemon(s->pub.d);
        s->pub.d = NULL;
        return false;
    }
    s->started = true;
    for (int i = 0; i < s->nstarted; i++) s->started_hooks[i].fn(s, s->started_hooks[i].user);
    return true;
}

/* Register a post-start hook; see http.h. */
bool gg_http_server_on_start(gg_http_server *s, gg_http_started_fn fn, void *user) {
    if (!fn || s->started || s->nstarted >= (int)(sizeof s->started_hooks / sizeof s->started_hooks[0])) return false;
    s->started_hooks[s->nstarted].fn = fn;
    s->started_hooks[s->nstarted].user = user;
    s->nstarted++;
    return true;
}

/* The bound address of a running listener; see http.h. */
bool gg_http_server_bound_addr(const gg_http_server *s, gg_listener which, struct sockaddr_storage *out) {
    const listener *L = which == GG_LISTENER_INTERNAL ? &s->intl : &s->pub;
    if (!L->d) return false;
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(L->d, MHD_DAEMON_INFO_LISTEN_FD);
    socklen_t len = sizeof *out;
    memset(out, 0, sizeof *out);
    return di && getsockname(di->listen_fd, (struct sockaddr *)out, &len) == 0;
}

unsigned gg_http_server_port(const gg_http_server *s, gg_listener which) {
    const listener *L = which == GG_LISTENER_INTERNAL ? &s->intl : &s->pub;
    return L->d ? L->port : 0;
}

long gg_http_server_inflight(const gg_http_server *s) {
    long n = 0;
    for (int i = 0; i < METRIC_SHARDS; i++) n += atomic_load(&((gg_http_server *)s)->cpu[i].inflight);
    return n;
}

static void wait_idle(gg_http_server *s, double until_ms) {
    while (gg_http_server_inflight(s) > 0 && gg_now_ms() < until_ms && !atomic_load(&s->hurry)) {
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* Cut a running graceful stop short; see http.h. */
void gg_http_server_hurry(gg_http_server *s) { atomic_store(&s->hurry, 1); }

/* Graceful stop; see http.h. */
int gg_http_server_stop(gg_http_server *s, unsigned deadline_ms) {
    if (s->stopped) return 0;
    s->stopped = true;
    if (!s->started) return 0;
    atomic_store(&s->draining, 1); /* accept_policy refuses new connections from here */
    listener *ls[2] = {&s->pub, &s->intl};
    wait_idle(s, gg_now_ms() + deadline_ms);
    /* Past the deadline: answer whatever is still deferred so no connection stays suspended
     * (libmicrohttpd cannot stop with suspended connections). */
    int abandoned = 0;
    pthread_mutex_lock(&s->alock);
    atomic_store(&s->abandoning, 1);
    for (gg_http_async *a = s->alist; a; a = a->next) {
        if (a->conn == CONN_DONE || a->owner_done) continue;
        atomic_store_explicit(&a->abandoned, true, memory_order_relaxed);
        abandoned++;
        gg_http_async_let_go(a);
    }
    pthread_mutex_unlock(&s->alock);
    if (abandoned) {
        gg_log(GG_LOG_WARN, "shutdown deadline reached; abandoned deferred requests", NULL);
        wait_idle(s, gg_now_ms() + 1000);
    }
    for (int i = 0; i < 2; i++) {
        if (!ls[i]->d) continue;
        MHD_stop_daemon(ls[i]->d);
        ls[i]->d = NULL;
    }
    gg_conn_tracker_stop(s->tracker); /* every connection is closed: nothing left to cut */
    s->tracker = NULL;
    gg_http_alog_stop(&s->alog);
    return abandoned;
}

/* Stop (without waiting) if needed and free. Every gg_http_async must be completed first. */
void gg_http_server_free(gg_http_server *s) {
    if (!s) return;
    gg_http_server_stop(s, 0);
    gg_conn_tracker_stop(s->tracker); /* started, then the listeners failed to bind */
    gg_router_free(s->router);
    free(s->rm);
    gg_http_alog_stop(&s->alog);
    gg_strbuf_free(&s->alog.pending);
    if (s->alog.file) fclose(s->alog.file);
    pthread_mutex_destroy(&s->alog.lock);
    pthread_cond_destroy(&s->alog.cond);
    pthread_mutex_destroy(&s->alock);
    sodium_memzero(s->rid_key, sizeof s->rid_key);
    free(s);
}
