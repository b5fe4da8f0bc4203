/* metrics.c — per-route request counters and latency histograms (per-CPU shards) and the
 * built-in routes /health, /ready and /metrics. */
#include "http/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const int status_slots[] = {200, 201, 202, 204, 206, 301, 302, 304, 307, 308, 400, 401,
                                   403, 404, 405, 406, 408, 409, 410, 411, 412, 413, 414, 415,
                                   422, 429, 431, 500, 501, 502, 503, 504};
#define NSTATUS GG_HTTP_NSTATUS /* last slot: other */
_Static_assert(sizeof status_slots / sizeof status_slots[0] + 1 == NSTATUS, "GG_HTTP_NSTATUS");
static const double bucket_s[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                  0.1,    0.25,  0.5,    1,     2.5,  5,     10};
#define NBUCKETS GG_HTTP_NBUCKETS
_Static_assert(sizeof bucket_s / sizeof bucket_s[0] == NBUCKETS, "GG_HTTP_NBUCKETS");

static int status_slot(int status) {
    for (size_t i = 0; i + 1 < NSTATUS; i++)
        if (status_slots[i] == status) return (int)i;
    return (int)NSTATUS - 1;
}

void gg_http_record_metrics(gg_http_server *srv, gg_http_req *req, double dur_ms) {
    if (!srv->rm) return;
    int idx = req->match.route_index >= 0 && req->match.route_index < srv->nrm - 1 ? req->match.route_index : srv->nrm - 1;
    route_metrics *m = &srv->rm[req->shard * (unsigned)srv->nrm + (unsigned)idx];
    atomic_fetch_add_explicit(&m->by_status[status_slot(req->status_out)], 1, memory_order_relaxed);
    double s = dur_ms / 1000.0;
    size_t b = 0;
    while (b < NBUCKETS && s > bucket_s[b]) b++;
    atomic_fetch_add_explicit(&m->buckets[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->sum_us, (unsigned long long)(dur_ms * 1000.0), memory_order_relaxed);
}

/* ---- built-in routes --------------------------------------------------------------------- */

int gg_http_route_health(gg_http_req *req, gg_http_res *res, void *user) {
    gg_http_server *srv = user;
    json_int_t up = (json_int_t)((gg_now_ms() - srv->started_ms) / 1000.0);
    json_t *o = json_pack("{s:s,s:s,s:I}", "status", atomic_load(&srv->draining) ? "draining" : "ok",
                          "version", srv->version, "uptime_seconds", up);
    if (!o || !gg_http_res_json(res, 200, o)) gg_http_res_fail(res, "internal_error", "out of memory");
    return GG_HTTP_DONE;
}

int gg_http_route_ready(gg_http_req *req, gg_http_res *res, void *user) {
    gg_http_server *srv = user;
    gg_error err = GG_ERROR_INIT;
    bool ok = !atomic_load(&srv->draining);
    if (!ok) gg_error_set(&err, "shutting_down", "the server is shutting down");
    else if (srv->ready) ok = srv->ready(srv->ready_user, &err);
    json_t *o;
    if (ok) {
        o = json_pack("{s:s}", "status", "ready");
    } else {
        o = json_pack("{s:s,s:{s:s,s:s}}", "status", "not_ready", "error", "code",
                      err.code[0] ? err.code : "not_ready", "message",
                      err.message ? err.message : "not ready");
    }
    gg_error_clear(&err);
    if (!o || !gg_http_res_json(res, ok ? 200 : 503, o)) gg_http_res_fail(res, "internal_error", "out of memory");
    return GG_HTTP_DONE;
}

static void label_escape(gg_strbuf *b, const char *s) {
    for (; *s; s++) {
        if (*s == '\\' || *s == '"') gg_strbuf_putc(b, '\\');
        if (*s == '\n') {
            gg_strbuf_puts(b, "\\n");
            continue;
        }
        gg_strbuf_putc(b, *s);
    }
}

static long rss_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return -1;
    long size, resident;
    int n = fscanf(f, "%ld %ld", &size, &resident);
    fclose(f);
    return n == 2 ? resident * sysconf(_SC_PAGESIZE) : -1;
}

static void route_labels(gg_strbuf *b, gg_http_server *srv, int i) {
    const char *pattern = i < srv->nrm - 1 ? gg_router_pattern(srv->router, i) : "unmatched";
    const char *method = i < srv->nrm - 1 ? gg_router_method(srv->router, i) : "";
    gg_strbuf_puts(b, "route=\"");
    label_escape(b, pattern ? pattern : "");
    gg_strbuf_puts(b, "\",method=\"");
    label_escape(b, method ? method : "");
    gg_strbuf_puts(b, "\"");
}

int gg_http_route_metrics(gg_http_req *req, gg_http_res *res, void *user) {
    gg_http_server *srv = user;
    gg_strbuf b = GG_STRBUF_INIT;
    gg_strbuf_puts(&b, "# HELP graphgate_http_requests_total HTTP requests by route, method and status.\n"
                       "# TYPE graphgate_http_requests_total counter\n");
    for (int i = 0; i < srv->nrm; i++)
        for (size_t s = 0; s < NSTATUS; s++) {
            unsigned long v = 0;
            for (int sh = 0; sh < METRIC_SHARDS; sh++)
                v += atomic_load_explicit(&srv->rm[sh * srv->nrm + i].by_status[s], memory_order_relaxed);
            if (!v) continue;
            gg_strbuf_puts(&b, "graphgate_http_requests_total{");
            route_labels(&b, srv, i);
            if (s + 1 < NSTATUS) gg_strbuf_printf(&b, ",status=\"%d\"} %lu\n", status_slots[s], v);
            else gg_strbuf_printf(&b, ",status=\"other\"} %lu\n", v);
        }
    gg_strbuf_puts(&b, "# HELP graphgate_http_request_duration_seconds Time from request headers to the last byte sent.\n"
                       "# TYPE graphgate_http_request_duration_seconds histogram\n");
    for (int i = 0; i < srv->nrm; i++) {
        unsigned long counts[NBUCKETS + 1], total = 0;
        for (size_t k = 0; k <= NBUCKETS; k++) {
            counts[k] = 0;
            for (int sh = 0; sh < METRIC_SHARDS; sh++)
                counts[k] += atomic_load_explicit(&srv->rm[sh * srv->nrm + i].buckets[k], memory_order_relaxed);
            total += counts[k];
        }
        if (!total) continue;
        unsigned long cum = 0;
        for (size_t k = 0; k <= NBUCKETS; k++) {
            cum += counts[k];
            gg_strbuf_puts(&b, "graphgate_http_request_duration_seconds_bucket{");
            route_labels(&b, srv, i);
            if (k < NBUCKETS) gg_strbuf_printf(&b, ",le=\"%g\"} %lu\n", bucket_s[k], cum);
            else gg_strbuf_printf(&b, ",le=\"+Inf\"} %lu\n", cum);
        }
        gg_strbuf_puts(&b, "graphgate_http_request_duration_seconds_sum{");
        route_labels(&b, srv, i);
        unsigned long long sum_us = 0;
        for (int sh = 0; sh < METRIC_SHARDS; sh++) sum_us += atomic_load(&srv->rm[sh * srv->nrm + i].sum_us);
        gg_strbuf_printf(&b, "} %.6f\n", (double)sum_us / 1e6);
        gg_strbuf_puts(&b, "graphgate_http_request_duration_seconds_count{");
        route_labels(&b, srv, i);
        gg_strbuf_printf(&b, "} %lu\n", total);
    }
    gg_strbuf_printf(&b, "# HELP graphgate_http_requests_in_flight Requests being served (including deferred ones).\n"
                         "# TYPE graphgate_http_requests_in_flight gauge\ngraphgate_http_requests_in_flight %ld\n",
                     gg_http_server_inflight(srv));
    gg_strbuf_printf(&b, "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
                         "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %ld\n",
                     rss_bytes());
    gg_strbuf_printf(&b, "# HELP process_start_time_seconds Start time of the process since the Unix epoch.\n"
                         "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %lld\n",
                     srv->started_wall_ms / 1000);
    gg_strbuf_puts(&b, "# HELP graphgate_build_info Build information.\n# TYPE graphgate_build_info gauge\n"
                       "graphgate_build_info{version=\"");
    label_escape(&b, srv->version);
    gg_strbuf_puts(&b, "\"} 1\n");
    gg_strbuf_printf(&b, "# HELP graphgate_http_receive_timeouts_total Connections cut for not delivering a request within http.receive_timeout.\n"
                         "# TYPE graphgate_http_receive_timeouts_total counter\ngraphgate_http_receive_timeouts_total %lu\n",
                     gg_conn_tracker_cut(srv->tracker));
    gg_strbuf_printf(&b, "# HELP graphgate_access_log_dropped_total Access log lines dropped (writer behind).\n"
                         "# TYPE graphgate_access_log_dropped_total counter\ngraphgate_access_log_dropped_total %lu\n",
                     atomic_load(&srv->alog.dropped));
    for (int i = 0; i < srv->nhooks; i++) srv->hooks[i].fn(&b, srv->hooks[i].user);
    if (b.oom) {
        gg_strbuf_free(&b);
        gg_http_res_fail(res, "internal_error", "out of memory");
        return GG_HTTP_DONE;
    }
    size_t len = b.len;
    char *text = gg_strbuf_take(&b);
    if (!text || !gg_http_res_bytes_take(res, 200, "text/plain; version=0.0.4; charset=utf-8", text, len)) {
        free(text);
        gg_http_res_fail(res, "internal_error", "out of memory");
    }
    return GG_HTTP_DONE;
}
