/* In-process tests of the HTTP server: real libmicrohttpd listeners on ephemeral loopback
 * ports, driven by libcurl. Covers body limits, request ids, per-listener routes, 404/405
 * JSON, deferred responses completed from other threads, SSE streaming, /metrics, /ready,
 * and graceful stop with deferred requests in flight. */
#include <check.h>
#include <errno.h>
#include <curl/curl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <dlfcn.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "http/internal.h"
#include "../check_main.h"

static gg_http_server *S;
static unsigned PUB, INT;
static atomic_int ready_flag = 1;
/* Worker threads still holding a gg_http_async: the server may be freed only once every
 * async is completed, so teardown waits for them (a sleep would race, ThreadSanitizer sees it). */
static atomic_int workers_live;

static void sleep_ms(int ms) {
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* ---- handlers ---- */

/* gg_http_headers_prefixed: "name=value;" per header into a 128-byte buffer. */
static bool collect_header(void *user, const char *name, const char *value) {
    char *buf = user;
    size_t n = strlen(buf);
    snprintf(buf + n, 128 - n, "%s=%s;", name, value);
    return true;
}

/* The values gg_http_header reads for names of the known set (read by index) and others
 * (read from libmicrohttpd), each asked in another case than sent. */
static int h_hdrs(gg_http_req *req, gg_http_res *res, void *u) {
    (void)u;
    static const char *names[] = {"AUTHORIZATION", "mcp-protocol-version", "Mcp-Session-Id", "Mcp_Session-Id",
                                  "x-other-name", "TRACEPARENT", "X-Api-Key", "dpop"};
    json_t *o = json_object();
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const char *v = gg_http_header(req, names[i]);
        json_object_set_new(o, names[i], v ? json_string(v) : json_null());
    }
    gg_http_res_json(res, 200, o);
    return GG_HTTP_DONE;
}

static int h_echo(gg_http_req *req, gg_http_res *res, void *u) {
    gg_error e = GG_ERROR_INIT;
    json_t *body = gg_http_body_json(req, true, &e);
    if (!body) {
        gg_http_res_error_from(res, 0, &e);
        gg_error_clear(&e);
        return GG_HTTP_DONE;
    }
    const char *q = gg_http_query(req, "q");
    const char *h = gg_http_header(req, "x-test");
    char hp[128] = "";
    gg_http_headers_prefixed(req, "x-te", collect_header, hp);
    gg_http_res_json(res, 200, json_pack("{s:o,s:s,s:s?,s:s?,s:s,s:s}", "body", body, "id", gg_http_param(req, "id"), "q",
                                         q, "h", h, "route", gg_http_route(req), "hp", hp));
    gg_http_res_header(res, "X-Extra", "yes");
    /* Header injection is refused. */
    if (gg_http_res_header(res, "X-Bad", "a\r\nSet-Cookie: x=1") || gg_http_res_header(res, "X Bad", "v") ||
        gg_http_res_header(res, "", "v"))
        gg_http_res_header(res, "X-Injection", "accepted");
    return GG_HTTP_DONE;
}

static int h_internal(gg_http_req *req, gg_http_res *res, void *u) {
    gg_http_res_json(res, 200, json_pack("{s:s}", "listener",
                                         gg_http_listener(req) == GG_LISTENER_INTERNAL ? "internal" : "public"));
    return GG_HTTP_DONE;
}

static int h_nothing(gg_http_req *req, gg_http_res *res, void *u) { return GG_HTTP_DONE; }

typedef struct job { gg_http_async *a; int delay_ms; bool stream; } job;

static void *worker(void *arg) {
    job *j = arg;
    gg_http_req *req = gg_http_async_req(j->a);
    if (j->stream) {
        ck_assert(gg_http_async_stream(j->a, 200, "text/event-stream"));
        for (int i = 0; i < 3; i++) {
            for (int waited = 0; waited < j->delay_ms && !gg_http_async_abandoned(j->a); waited += 10) sleep_ms(10);
            char data[64];
            snprintf(data, sizeof data, "{\"n\":%d}", i);
            gg_http_sse_event(j->a, "message", NULL, data);
        }
        gg_http_sse_event(j->a, "final", "7", "line1\nline2");
    } else {
        /* Long work checks for abandonment so shutdown can cut it short. */
        for (int waited = 0; waited < j->delay_ms && !gg_http_async_abandoned(j->a); waited += 10) sleep_ms(10);
        const char *h = gg_http_header(req, "X-Test");
        char hp[128] = ""; /* from the snapshot the deferral took */
        gg_http_headers_prefixed(req, "X-TEST", collect_header, hp);
        gg_http_res_json(gg_http_async_res(j->a), 200,
                         json_pack("{s:s,s:s?,s:b,s:s}", "deferred", gg_http_param(req, "ms"), "h", h,
                                   "abandoned", gg_http_async_abandoned(j->a), "hp", hp));
    }
    gg_http_async_complete(j->a);
    free(j);
    atomic_fetch_sub(&workers_live, 1);
    return NULL;
}

static int h_deferred(gg_http_req *req, gg_http_res *res, void *u) {
    gg_http_async *a = gg_http_defer(req);
    if (!a) {
        gg_http_res_error(res, 503, "unavailable", "cannot defer");
        return GG_HTTP_DONE;
    }
    job *j = calloc(1, sizeof *j);
    j->a = a;
    j->delay_ms = atoi(gg_http_param(req, "ms"));
    j->stream = u != NULL;
    pthread_t t;
    atomic_fetch_add(&workers_live, 1);
    pthread_create(&t, NULL, worker, j);
    pthread_detach(t);
    return GG_HTTP_DEFERRED;
}

/* Completes before returning: the "owner finished before the connection suspended" race. */
static int h_deferred_now(gg_http_req *req, gg_http_res *res, void *u) {
    gg_http_async *a = gg_http_defer(req);
    gg_http_res_json(gg_http_async_res(a), 201, json_pack("{s:b}", "immediate", 1));
    gg_http_async_complete(a);
    return GG_HTTP_DEFERRED;
}

/* gg_http_async_redispatch: the handler runs again from the start with the same request;
 * rounds counted in the request's user pointer. Odd rounds are run again from another
 * thread, even ones before the handler returns (before the connection is suspended). */
static void *again_worker(void *arg) {
    sleep_ms(5);
    gg_http_async_redispatch(arg);
    atomic_fetch_sub(&workers_live, 1);
    return NULL;
}

static int h_again(gg_http_req *req, gg_http_res *res, void *u) {
    intptr_t round = (intptr_t)gg_http_get_user(req) + 1;
    gg_http_set_user(req, (void *)round);
    if (round > atoi(gg_http_param(req, "n"))) {
        size_t len;
        const char *body = gg_http_body(req, &len);
        gg_http_res_json(res, 200, json_pack("{s:I,s:s%,s:s?}", "rounds", (json_int_t)round, "body", body, len, "h",
                                             gg_http_header(req, "X-Test")));
        return GG_HTTP_DONE;
    }
    gg_http_async *a = gg_http_defer(req);
    if (!a) {
        gg_http_res_error(res, 503, "unavailable", "cannot defer round %d", (int)round);
        return GG_HTTP_DONE;
    }
    if (round % 2 == 0) {
        gg_http_async_redispatch(a);
        return GG_HTTP_DEFERRED;
    }
    pthread_t t;
    atomic_fetch_add(&workers_live, 1);
    pthread_create(&t, NULL, again_worker, a);
    pthread_detach(t);
    return GG_HTTP_DEFERRED;
}

static bool ready_fn(void *u, gg_error *e) {
    if (ready_flag) return true;
    gg_error_set(e, "migration", "schema is behind");
    return false;
}

static void metrics_hook(gg_strbuf *out, void *u) { gg_strbuf_puts(out, "test_hook_metric 42\n"); }

static char access_path[64];

static gg_http_server *make_server(size_t limit) {
    snprintf(access_path, sizeof access_path, "/tmp/gg-http-access-%d.log", (int)getpid());
    unlink(access_path);
    gg_http_options o = {.public_addr = "127.0.0.1:0", .internal_addr = "127.0.0.1:0", .threads = 2,
                         .body_limit = limit, .access_log = true, .access_log_file = access_path,
                         .version = "9.9.9"};
    gg_error e = GG_ERROR_INIT;
    gg_http_server *s = gg_http_server_new(&o, &e);
    ck_assert_msg(s != NULL, "%s", e.message ? e.message : "");
    gg_router *r = gg_http_server_router(s);
    ck_assert(gg_router_add(r, GG_LISTENER_BOTH, "POST", "/echo/{id}", h_echo, NULL, &e));
    ck_assert(gg_router_add(r, GG_LISTENER_INTERNAL, "GET", "/internal/only", h_internal, NULL, &e));
    ck_assert(gg_router_add(r, GG_LISTENER_BOTH, "GET", "/nothing", h_nothing, NULL, &e));
    ck_assert(gg_router_add(r, GG_LISTENER_BOTH, "GET", "/deferred/{ms}", h_deferred, NULL, &e));
    ck_assert(gg_router_add(r, GG_LISTENER_BOTH, "POST", "/again/{n}", h_again, NULL, &e));
    ck_assert(gg_router_add(r, GG_LISTENER_BOTH, "GET", "/sse/{ms}", h_deferred, "stream", &e));
    ck_assert(gg_router_add(r, GG_LISTENER_BOTH, "GET", "/now", h_deferred_now, NULL, &e));
    ck_assert(gg_router_add(r, GG_LISTENER_BOTH, "GET", "/hdrs", h_hdrs, NULL, &e));
    gg_http_server_set_ready_check(s, ready_fn, NULL);
    ck_assert(gg_http_server_add_metrics(s, metrics_hook, NULL));
    ck_assert_msg(gg_http_server_start(s, &e), "%s", e.message ? e.message : "");
    return s;
}

static void setup(void) {
    S = make_server(1024);
    PUB = gg_http_server_port(S, GG_LISTENER_PUBLIC);
    INT = gg_http_server_port(S, GG_LISTENER_INTERNAL);
    ck_assert_uint_ne(PUB, 0);
    ck_assert_uint_ne(INT, 0);
    ready_flag = 1;
}

static void teardown(void) {
    gg_http_server_stop(S, 2000);
    for (int i = 0; i < 2000 && atomic_load(&workers_live) > 0; i++) sleep_ms(5);
    ck_assert_int_eq(atomic_load(&workers_live), 0);
    gg_http_server_free(S);
    unlink(access_path);
}

/* ---- client ---- */

typedef struct reply {
    long status;
    gg_strbuf body, headers;
    json_t *json;
} reply;

static size_t on_data(char *p, size_t sz, size_t n, void *u) {
    gg_strbuf_append(u, p, sz * n);
    return sz * n;
}

static const char *hdr(reply *r, const char *name) {
    static char val[256];
    if (!r->headers.data) return NULL;
    size_t nl = strlen(name);
    for (const char *p = r->headers.data; p && *p;) {
        if (strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
            const char *v = p + nl + 1;
            while (*v == ' ') v++;
            size_t k = strcspn(v, "\r\n");
            if (k >= sizeof val) k = sizeof val - 1;
            memcpy(val, v, k);
            val[k] = '\0';
            return val;
        }
        p = strchr(p, '\n');
        if (p) p++;
    }
    return NULL;
}

static void reply_free(reply *r) {
    gg_strbuf_free(&r->body);
    gg_strbuf_free(&r->headers);
    json_decref(r->json);
}

/* body NULL = GET (or method given); chunked forces Transfer-Encoding: chunked. */
static reply call(unsigned port, const char *method, const char *path, const char *body, size_t body_len,
                  const char *extra_header, bool chunked) {
    reply r = {0, GG_STRBUF_INIT, GG_STRBUF_INIT, NULL};
    CURL *c = curl_easy_init();
    char url[4096];
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", port, path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &r.headers);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    struct curl_slist *hl = NULL;
    if (extra_header) hl = curl_slist_append(hl, extra_header);
    if (chunked) hl = curl_slist_append(hl, "Transfer-Encoding: chunked");
    hl = curl_slist_append(hl, "Expect:");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        if (!chunked) curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)body_len);
    }
    if (method) curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    CURLcode rc = curl_easy_perform(c);
    if (rc == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    curl_slist_free_all(hl);
    curl_easy_cleanup(c);
    if (r.body.data) r.json = json_loads(r.body.data, 0, NULL);
    return r;
}

static const char *err_code(reply *r) {
    return json_string_value(json_object_get(json_object_get(r->json, "error"), "code"));
}

/* ---- tests ---- */

/* ---- connection limit ---- */

static int raw_connect(unsigned port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

/* Send a keep-alive GET /health; return what arrives within ms (0 bytes = nothing yet,
 * -1 = the connection was closed or reset). */
static int raw_health(int fd, bool send_it, int ms) {
    static const char req[] = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    if (send_it) ck_assert_int_eq(send(fd, req, sizeof req - 1, MSG_NOSIGNAL), (ssize_t)(sizeof req - 1));
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char buf[2048];
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    if (n <= 0) return -1;
    return strncmp(buf, "HTTP/1.1 200", 12) == 0 ? (int)n : -1;
}

/* A server with these options, started (tests that need other options than setup's). */
static gg_http_server *start_with(const gg_http_options *o) {
    gg_error e = GG_ERROR_INIT;
    gg_http_server *s = gg_http_server_new(o, &e);
    ck_assert_msg(s && gg_http_server_start(s, &e), "%s", e.message ? e.message : "");
    return s;
}

static void stop_free(gg_http_server *s) {
    gg_http_server_stop(s, 1000);
    gg_http_server_free(s);
}

/* At max_connections, further connections wait in the kernel backlog (not accepted and
 * closed) and are served as soon as a connection ends. */
START_TEST(connection_limit_queues_not_resets) {
    gg_http_options o = {.public_addr = "127.0.0.1:0", .threads = 2, .max_connections = 2};
    gg_http_server *s = start_with(&o);
    unsigned port = gg_http_server_port(s, GG_LISTENER_PUBLIC);
    int a = raw_connect(port), b = raw_connect(port);
    ck_assert_int_gt(raw_health(a, true, 5000), 0);
    ck_assert_int_gt(raw_health(b, true, 5000), 0);
    int c = raw_connect(port); /* completes in the backlog */
    ck_assert_int_eq(raw_health(c, true, 300), 0); /* not served yet, not reset */
    close(a);
    ck_assert_int_gt(raw_health(c, false, 5000), 0);
    close(b);
    close(c);
    stop_free(s);
}
END_TEST


/* ---- guards: receive deadline, framing, internal Host/Origin, start hook ---- */

/* Read until the peer closes or ms pass; returns the bytes (NUL-terminated) and whether
 * the connection was closed. */
static bool read_until_close(int fd, char *buf, size_t size, int ms) {
    struct timeval tv = {0, 100 * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    size_t len = 0;
    double until = gg_now_ms() + ms;
    while (gg_now_ms() < until) {
        ssize_t n = recv(fd, buf + len, size - 1 - len, 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
            buf[len] = '\0';
            return true;
        }
        if (n > 0) len += (size_t)n;
        if (len >= size - 1) break;
    }
    buf[len] = '\0';
    return false;
}

/* A request whose headers trickle in forever is cut at the deadline; a keep-alive
 * connection that sends whole requests is not (the deadline restarts after each answer). */
START_TEST(receive_deadline) {
    gg_http_options o = {.public_addr = "127.0.0.1:0", .threads = 2, .receive_timeout_ms = 1000};
    gg_http_server *s = start_with(&o);
    unsigned port = gg_http_server_port(s, GG_LISTENER_PUBLIC);
    int slow = raw_connect(port), fine = raw_connect(port);
    static const char part[] = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    ck_assert_int_eq(send(slow, part, sizeof part - 1, MSG_NOSIGNAL), (ssize_t)(sizeof part - 1));
    double t0 = gg_now_ms(), cut_ms = -1;
    bool fine_ok = true;
    while (gg_now_ms() - t0 < 6000 && cut_ms < 0) {
        if (send(slow, "X-A: b\r\n", 8, MSG_NOSIGNAL) < 0) cut_ms = gg_now_ms() - t0;
        char b[64];
        struct timeval tv = {0, 1000};
        setsockopt(slow, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        ssize_t n = recv(slow, b, sizeof b, 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) cut_ms = gg_now_ms() - t0;
        fine_ok = fine_ok && raw_health(fine, true, 2000) > 0;
        sleep_ms(200);
    }
    ck_assert_msg(cut_ms >= 900 && cut_ms < 4000, "half-sent request cut after %.0f ms", cut_ms);
    ck_assert_msg(fine_ok, "a keep-alive connection sending whole requests was cut");
    /* the body counts too: whole headers, then a body one byte at a time */
    int drip = raw_connect(port);
    static const char head[] = "POST /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n";
    ck_assert_int_eq(send(drip, head, sizeof head - 1, MSG_NOSIGNAL), (ssize_t)(sizeof head - 1));
    t0 = gg_now_ms();
    double drip_cut = -1;
    for (int i = 0; i < 60 && drip_cut < 0; i++) {
        char b[256];
        struct timeval tv = {0, 1000};
        setsockopt(drip, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        ssize_t n = recv(drip, b, sizeof b, 0);
        if (send(drip, "x", 1, MSG_NOSIGNAL) < 0 || n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
            drip_cut = gg_now_ms() - t0;
        sleep_ms(100);
    }
    ck_assert_msg(drip_cut >= 900 && drip_cut < 4000, "a dripping body was cut after %.0f ms", drip_cut);
    close(drip);
    close(slow);
    close(fine);
    stop_free(s);
}
END_TEST

/* One raw request → the status line's code and whether the server closed afterwards. */
static int raw_status(unsigned port, const char *request, bool *closed) {
    int fd = raw_connect(port);
    ck_assert_int_eq(send(fd, request, strlen(request), MSG_NOSIGNAL), (ssize_t)strlen(request));
    char buf[4096];
    *closed = read_until_close(fd, buf, sizeof buf, 3000);
    close(fd);
    int code = 0;
    if (strncmp(buf, "HTTP/1.1 ", 9) == 0) code = atoi(buf + 9);
    /* exactly one answer: the rest of the bytes never became a second request */
    ck_assert_msg(!strstr(buf + 1, "HTTP/1.1 "), "two answers: %s", buf);
    return code;
}

/* Header reads: the known names (kept by the framing walk) in any case, the first of a
 * repeated one, an unknown name read from libmicrohttpd, and a name of a known one's length
 * that differs in one non-letter ("_" for "-": never folded). */
START_TEST(header_reads_by_name) {
    int fd = raw_connect(PUB);
    const char *rq = "GET /hdrs HTTP/1.1\r\nHost: 127.0.0.1\r\nauthorization: Bearer first\r\n"
                     "Authorization: Bearer second\r\nMCP-PROTOCOL-VERSION: 2025-11-25\r\n"
                     "Mcp_Session-Id: underscore\r\nX-Other-Name: other\r\nx-api-key: k1\r\n"
                     "Connection: close\r\n\r\n";
    ck_assert_int_eq(send(fd, rq, strlen(rq), MSG_NOSIGNAL), (ssize_t)strlen(rq));
    char buf[4096];
    ck_assert(read_until_close(fd, buf, sizeof buf, 3000));
    close(fd);
    const char *body = strstr(buf, "\r\n\r\n");
    ck_assert_ptr_nonnull(body);
    json_t *o = json_loads(body + 4, 0, NULL);
    ck_assert_msg(o != NULL, "%s", buf);
    ck_assert_str_eq(json_string_value(json_object_get(o, "AUTHORIZATION")), "Bearer first");
    ck_assert_str_eq(json_string_value(json_object_get(o, "mcp-protocol-version")), "2025-11-25");
    ck_assert(json_is_null(json_object_get(o, "Mcp-Session-Id")));
    ck_assert_str_eq(json_string_value(json_object_get(o, "Mcp_Session-Id")), "underscore");
    ck_assert_str_eq(json_string_value(json_object_get(o, "x-other-name")), "other");
    ck_assert_str_eq(json_string_value(json_object_get(o, "X-Api-Key")), "k1");
    ck_assert(json_is_null(json_object_get(o, "TRACEPARENT")));
    ck_assert(json_is_null(json_object_get(o, "dpop")));
    json_decref(o);
}
END_TEST

/* src/cli/mhd_epoll.c, linked into this program as into graphgate: the epoll_wait the
 * process resolves is ours (so libmicrohttpd's calls reach it), and a round right after a
 * full one does not wait, which ends libmicrohttpd's drain loop instead of sleeping its whole
 * timeout with connections marked ready (seen: 256 of them, 60 s). Edge-triggered events,
 * as libmicrohttpd registers its connections: the second round finds nothing ready. */
START_TEST(epoll_round_after_full_does_not_wait) {
    ck_assert_ptr_eq(dlsym(RTLD_DEFAULT, "epoll_wait"), (void *)epoll_wait);
    int ep = epoll_create1(0), a = eventfd(0, EFD_NONBLOCK), b = eventfd(0, EFD_NONBLOCK);
    ck_assert(ep >= 0 && a >= 0 && b >= 0);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLET}, got[2];
    ev.data.fd = a;
    ck_assert_int_eq(epoll_ctl(ep, EPOLL_CTL_ADD, a, &ev), 0);
    ev.data.fd = b;
    ck_assert_int_eq(epoll_ctl(ep, EPOLL_CTL_ADD, b, &ev), 0);
    uint64_t one = 1;
    ck_assert_int_eq(write(a, &one, sizeof one), (ssize_t)sizeof one);
    ck_assert_int_eq(write(b, &one, sizeof one), (ssize_t)sizeof one);
    ck_assert_int_eq(epoll_wait(ep, got, 2, -1), 2); /* a full round */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ck_assert_int_eq(epoll_wait(ep, got, 2, 20000), 0); /* libc's would sleep the 20 s */
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ck_assert_int_lt((t1.tv_sec - t0.tv_sec), 10);
    /* a round that was not full leaves the next one waiting as asked: it sees a later event */
    ck_assert_int_eq(write(a, &one, sizeof one), (ssize_t)sizeof one);
    ck_assert_int_eq(epoll_wait(ep, got, 2, 5000), 1);
    ck_assert_int_eq(got[0].data.fd, a);
    ck_assert_int_eq(epoll_wait(ep, got, 2, 30), 0); /* waits its 30 ms, nothing comes */
    close(a);
    close(b);
    close(ep);
}
END_TEST

START_TEST(ambiguous_framing) {
    bool closed;
    ck_assert_int_eq(raw_status(PUB, "POST /echo/1 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n"
                                     "Content-Length: 40\r\n\r\n{}GET /health HTTP/1.1\r\nHost: a\r\n\r\n",
                                &closed), 400);
    ck_assert(closed);
    ck_assert_int_eq(raw_status(PUB, "POST /echo/1 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n"
                                     "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", &closed), 400);
    ck_assert(closed);
    ck_assert_int_eq(raw_status(PUB, "POST /echo/1 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                     "Transfer-Encoding: xchunked\r\n\r\n{}", &closed), 501);
    ck_assert(closed);
    ck_assert_int_eq(raw_status(INT, "POST /echo/1 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                     "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                                &closed), 400);
    /* what stays valid: identical duplicates, chunked alone */
    reply r = call(PUB, NULL, "/echo/1", "{\"a\":1}", 7, "Content-Length: 7", false);
    ck_assert_int_eq(r.status, 200);
    reply_free(&r);
    r = call(PUB, NULL, "/echo/1", "{\"a\":1}", 7, NULL, true);
    ck_assert_int_eq(r.status, 200);
    reply_free(&r);
}
END_TEST

/* GET path with one extra header → the status. */
static long get_status(unsigned port, const char *path, const char *header) {
    reply r = call(port, NULL, path, NULL, 0, header, false);
    long st = r.status;
    reply_free(&r);
    return st;
}

START_TEST(internal_host_and_origin) {
    reply r = call(INT, NULL, "/internal/only", NULL, 0, "Host: attacker.example", false);
    ck_assert_int_eq(r.status, 403);
    ck_assert_str_eq(err_code(&r), "forbidden");
    reply_free(&r);
    ck_assert_int_eq(get_status(INT, "/metrics", "Host: graphgate.attacker.example:8081"), 403);
    ck_assert_int_eq(get_status(INT, "/internal/only", "Origin: http://attacker.example"), 403);
    ck_assert_int_eq(get_status(INT, "/internal/only", "Origin: http://localhost:3000"), 200);
    ck_assert_int_eq(get_status(INT, "/internal/only", "Host: [::1]:8081"), 200);
    ck_assert_int_eq(get_status(INT, "/health", "Host: 10.0.0.7:8081"), 200); /* probes */
    ck_assert_int_eq(get_status(PUB, "/nothing", "Host: attacker.example"), 500); /* public: the gateway's call */
}
END_TEST

START_TEST(internal_hosts_configured) {
    char *hosts[] = {"graphgate.internal"}, *origins[] = {"https://ops.example"};
    gg_http_options o = {.public_addr = "127.0.0.1:0", .internal_addr = "127.0.0.1:0", .threads = 1,
                         .internal_hosts = hosts, .n_internal_hosts = 1,
                         .internal_origins = origins, .n_internal_origins = 1};
    gg_http_server *s = start_with(&o);
    unsigned port = gg_http_server_port(s, GG_LISTENER_INTERNAL);
    ck_assert_int_eq(get_status(port, "/metrics", "Host: graphgate.internal:8081"), 200);
    ck_assert_int_eq(get_status(port, "/metrics", "Origin: https://ops.example"), 200);
    ck_assert_int_eq(get_status(port, "/metrics", "Host: 10.0.0.7"), 403); /* an IP, but a loopback bind */
    stop_free(s);
}
END_TEST

static void on_started(gg_http_server *s, void *user) {
    struct sockaddr_storage ss;
    if (gg_http_server_bound_addr(s, GG_LISTENER_INTERNAL, &ss) && ss.ss_family == AF_INET)
        *(unsigned *)user = ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

START_TEST(start_hook_sees_bound_ports) {
    gg_http_options o = {.public_addr = "127.0.0.1:0", .internal_addr = "127.0.0.1:0", .threads = 1};
    gg_error e = GG_ERROR_INIT;
    gg_http_server *s = gg_http_server_new(&o, &e);
    unsigned seen = 0;
    ck_assert(gg_http_server_on_start(s, on_started, &seen));
    ck_assert_msg(gg_http_server_start(s, &e), "%s", e.message ? e.message : "");
    ck_assert_uint_ne(seen, 0);
    ck_assert_uint_eq(seen, gg_http_server_port(s, GG_LISTENER_INTERNAL));
    ck_assert(!gg_http_server_on_start(s, on_started, &seen)); /* after start: refused */
    stop_free(s);
}
END_TEST

START_TEST(health_and_request_id) {
    reply r = call(PUB, NULL, "/health", NULL, 0, "X-Request-Id: abc-123.xyz", false);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "status")), "ok");
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "version")), "9.9.9");
    ck_assert(json_is_number(json_object_get(r.json, "uptime_seconds")));
    ck_assert_str_eq(hdr(&r, "X-Request-Id"), "abc-123.xyz");
    ck_assert_str_eq(hdr(&r, "Content-Type"), "application/json");
    reply_free(&r);
    /* Invalid ids (spaces, too long) are replaced by a generated one. */
    r = call(PUB, NULL, "/health", NULL, 0, "X-Request-Id: bad id<script>", false);
    ck_assert_int_eq(r.status, 200);
    const char *id = hdr(&r, "X-Request-Id");
    ck_assert_ptr_nonnull(id);
    ck_assert_uint_eq(strlen(id), 32);
    ck_assert_uint_eq(strspn(id, "0123456789abcdef"), 32);
    reply_free(&r);
    char longid[300] = "X-Request-Id: ";
    memset(longid + 14, 'a', 200);
    r = call(PUB, NULL, "/health", NULL, 0, longid, false);
    ck_assert_uint_eq(strlen(hdr(&r, "X-Request-Id")), 32);
    reply_free(&r);
}
END_TEST

static int cmp_id(const void *a, const void *b) { return memcmp(a, b, 33); }

/* Generated request ids: 32 lowercase hex, unique over 100k draws, and another server (its
 * own random key) does not produce the same sequence. */
START_TEST(generated_request_ids_unique) {
    enum { N = 100000 };
    char (*ids)[33] = malloc((size_t)N * 33);
    ck_assert_ptr_nonnull(ids);
    for (int i = 0; i < N; i++) {
        gg_http_new_request_id(S, (unsigned)i % 3, ids[i]); /* several shards' counters */
        ck_assert_uint_eq(strlen(ids[i]), 32);
        ck_assert_uint_eq(strspn(ids[i], "0123456789abcdef"), 32);
    }
    qsort(ids, N, 33, cmp_id);
    for (int i = 1; i < N; i++) ck_assert_msg(memcmp(ids[i - 1], ids[i], 33) != 0, "duplicate id %s", ids[i]);
    gg_error err = GG_ERROR_INIT;
    gg_http_options o = {.public_addr = "127.0.0.1:0"};
    gg_http_server *other = gg_http_server_new(&o, &err);
    ck_assert_ptr_nonnull(other);
    char a[33], b[33];
    gg_http_new_request_id(other, 0, a);
    gg_http_new_request_id(other, 0, b);
    ck_assert_str_ne(a, b);
    ck_assert_ptr_null(bsearch(a, ids, N, 33, cmp_id)); /* ~2^-111 chance of a false alarm */
    gg_http_server_free(other);
    /* Over HTTP: two requests without an id get two different generated ones. */
    reply r1 = call(PUB, NULL, "/health", NULL, 0, NULL, false);
    reply r2 = call(PUB, NULL, "/health", NULL, 0, NULL, false);
    ck_assert_uint_eq(strlen(hdr(&r1, "X-Request-Id")), 32);
    char first[64];
    snprintf(first, sizeof first, "%s", hdr(&r1, "X-Request-Id")); /* hdr's buffer is static */
    ck_assert_str_ne(first, hdr(&r2, "X-Request-Id"));
    reply_free(&r1);
    reply_free(&r2);
    free(ids);
}
END_TEST

/* Responses carry exactly one Date header (formatted by the server once a second per
 * connection), in IMF-fixdate form, close to now. */
START_TEST(date_header) {
    for (int i = 0; i < 3; i++) {
        reply r = call(PUB, NULL, i == 2 ? "/nope" : "/health", NULL, 0, NULL, false);
        const char *d = hdr(&r, "Date");
        ck_assert_ptr_nonnull(d);
        struct tm tm;
        memset(&tm, 0, sizeof tm);
        const char *end = strptime(d, "%a, %d %b %Y %H:%M:%S GMT", &tm);
        ck_assert_msg(end && *end == '\0' && strlen(d) == 29, "bad Date '%s'", d);
        time_t t = timegm(&tm);
        ck_assert_int_le(llabs((long long)(t - time(NULL))), 5);
        const char *first = strstr(r.headers.data, "\nDate:");
        ck_assert_ptr_nonnull(first);
        ck_assert_ptr_null(strstr(first + 1, "\nDate:"));
        reply_free(&r);
        if (i == 0) sleep_ms(1100); /* a new second on the next request */
    }
}
END_TEST

START_TEST(echo_params_query_headers) {
    reply r = call(PUB, NULL, "/echo/42?q=hello%20world", "{\"a\":[1,2]}", 11, "X-Test: hv", false);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "id")), "42");
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "q")), "hello world");
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "h")), "hv");
    ck_assert_int_eq(strcasecmp(json_string_value(json_object_get(r.json, "hp")), "X-Test=hv;"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "route")), "/echo/{id}");
    ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(json_object_get(r.json, "body"), "a"), 1)), 2);
    ck_assert_str_eq(hdr(&r, "X-Extra"), "yes");
    ck_assert_ptr_null(hdr(&r, "X-Injection"));
    ck_assert_ptr_null(hdr(&r, "Set-Cookie"));
    reply_free(&r);
    r = call(PUB, NULL, "/echo/1", "{bad", 4, NULL, false);
    ck_assert_int_eq(r.status, 400);
    ck_assert_str_eq(err_code(&r), "invalid_json");
    ck_assert(json_is_integer(json_object_get(json_object_get(r.json, "error"), "line")));
    reply_free(&r);
}
END_TEST

/* /metrics once it shows every line in want (NULL-terminated), or after about 5 s: a request
 * is counted when its connection's polling thread completes it, just after the answer went
 * out, so the scrape may come first, and earlier requests may complete in any order. */
static reply metrics_showing(const char *const *want) {
    reply r;
    for (int tries = 0;; tries++) {
        r = call(INT, NULL, "/metrics", NULL, 0, NULL, false);
        bool all = r.body.data != NULL;
        for (int i = 0; all && want[i]; i++) all = strstr(r.body.data, want[i]) != NULL;
        if (all || tries == 500) return r;
        reply_free(&r);
        usleep(10000);
    }
}

START_TEST(not_found_and_method_not_allowed) {
    reply r = call(PUB, NULL, "/no/such/thing", NULL, 0, NULL, false);
    ck_assert_int_eq(r.status, 404);
    ck_assert_str_eq(err_code(&r), "not_found");
    ck_assert_str_eq(hdr(&r, "Content-Type"), "application/json");
    reply_free(&r);
    r = call(PUB, "DELETE", "/health", NULL, 0, NULL, false);
    ck_assert_int_eq(r.status, 405);
    ck_assert_str_eq(err_code(&r), "method_not_allowed");
    ck_assert_str_eq(hdr(&r, "Allow"), "GET, HEAD");
    reply_free(&r);
    /* A %00 never decodes to a NUL that would cut the path short. */
    r = call(PUB, NULL, "/health%00x", NULL, 0, NULL, false);
    ck_assert_int_eq(r.status, 404);
    reply_free(&r);
    r = call(PUB, NULL, "/echo/a%20b?q=x%2Fy%00z", "{}", 2, NULL, false);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "id")), "a b");
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "q")), "x/y%00z");
    reply_free(&r);
    char longpath[3100] = "/";
    memset(longpath + 1, 'a', 3000);
    r = call(PUB, NULL, longpath, NULL, 0, NULL, false);
    ck_assert_int_eq(r.status, 414);
    ck_assert_str_eq(err_code(&r), "uri_too_long");
    reply_free(&r);
    r = metrics_showing((const char *const[]){"route=\"unmatched\",method=\"\",status=\"414\"} 1\n", NULL});
    ck_assert_ptr_nonnull(strstr(r.body.data, "route=\"unmatched\",method=\"\",status=\"414\"} 1\n"));
    ck_assert_ptr_null(strstr(r.body.data, "route=\"/health\",method=\"GET\",status=\"414\""));
    reply_free(&r);
    r = call(PUB, NULL, "/nothing", NULL, 0, NULL, false);
    ck_assert_int_eq(r.status, 500);
    ck_assert_str_eq(err_code(&r), "internal_error");
    reply_free(&r);
}
END_TEST

START_TEST(internal_only_route) {
    reply r = call(PUB, NULL, "/internal/only", NULL, 0, NULL, false);
    ck_assert_int_eq(r.status, 404);
    ck_assert_str_eq(err_code(&r), "not_found");
    reply_free(&r);
    r = call(INT, NULL, "/internal/only", NULL, 0, NULL, false);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "listener")), "internal");
    reply_free(&r);
    /* /metrics lives on the internal listener when there is one. */
    r = call(PUB, NULL, "/metrics", NULL, 0, NULL, false);
    ck_assert_int_eq(r.status, 404);
    reply_free(&r);
}
END_TEST

START_TEST(body_limit) {
    char *big = malloc(5000);
    memset(big, ' ', 5000);
    big[0] = '1';
    reply r = call(PUB, NULL, "/echo/1", big, 5000, NULL, false);
    ck_assert_int_eq(r.status, 413);
    ck_assert_str_eq(err_code(&r), "too_large");
    reply_free(&r);
    big[4999] = '\0';
    r = call(PUB, NULL, "/echo/1", big, 0, NULL, true); /* chunked: no Content-Length */
    ck_assert_int_eq(r.status, 413);
    ck_assert_str_eq(err_code(&r), "too_large");
    reply_free(&r);
    /* Exactly at the limit is fine. */
    r = call(PUB, NULL, "/echo/1", big, 1024, NULL, false);
    ck_assert_int_eq(r.status, 200);
    reply_free(&r);
    free(big);
}
END_TEST

/* Request headers: the default per-connection memory (GG_HTTP_HEADER_MEMORY) takes ~12 KiB
 * of headers (large tokens, cookies) and refuses ~24 KiB with 431; a POST with a body
 * still works on the same small memory, and a keep-alive connection serves request after
 * request without growing. */
START_TEST(header_limits) {
    size_t n = 12 * 1024;
    char *h = malloc(n + 32);
    ck_assert_ptr_nonnull(h);
    int k = snprintf(h, 32, "X-Big: ");
    memset(h + k, 'a', n);
    h[k + n] = '\0';
    reply r = call(PUB, NULL, "/health", NULL, 0, h, false);
    ck_assert_int_eq(r.status, 200);
    reply_free(&r);
    r = call(PUB, NULL, "/echo/7", "{\"a\":1}", 7, h, false);
    ck_assert_int_eq(r.status, 200);
    reply_free(&r);
    free(h);
    n = 24 * 1024;
    h = malloc(n + 32);
    ck_assert_ptr_nonnull(h);
    k = snprintf(h, 32, "X-Big: ");
    memset(h + k, 'a', n);
    h[k + n] = '\0';
    r = call(PUB, NULL, "/health", NULL, 0, h, false);
    ck_assert_int_eq(r.status, 431);
    reply_free(&r);
    free(h);
    /* and the server keeps serving */
    r = call(PUB, NULL, "/health", NULL, 0, NULL, false);
    ck_assert_int_eq(r.status, 200);
    reply_free(&r);
    int fd = raw_connect(PUB);
    for (int i = 0; i < 200; i++) ck_assert_int_gt(raw_health(fd, true, 2000), 0);
    close(fd);
}
END_TEST

START_TEST(deferred_from_worker_thread) {
    reply r = call(PUB, NULL, "/deferred/50", NULL, 0, "X-Test: kept", false);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "deferred")), "50");
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "h")), "kept");
    ck_assert_int_eq(strcasecmp(json_string_value(json_object_get(r.json, "hp")), "X-Test=kept;"), 0);
    ck_assert(json_is_false(json_object_get(r.json, "abandoned")));
    ck_assert_ptr_nonnull(hdr(&r, "X-Request-Id"));
    reply_free(&r);
    r = call(INT, NULL, "/deferred/0", NULL, 0, NULL, false);
    ck_assert_int_eq(r.status, 200);
    reply_free(&r);
    r = call(PUB, NULL, "/now", NULL, 0, NULL, false);
    ck_assert_int_eq(r.status, 201);
    ck_assert(json_is_true(json_object_get(r.json, "immediate")));
    reply_free(&r);
}
END_TEST

START_TEST(deferred_then_redispatched) {
    reply r = call(PUB, NULL, "/again/3", "{\"a\":1}", 7, "X-Test: kept", false);
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "rounds")), 4); /* 3 deferrals, then the answer */
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "body")), "{\"a\":1}");
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "h")), "kept");
    reply_free(&r);
    r = call(PUB, NULL, "/again/0", "{}", 2, NULL, false); /* never deferred: as before */
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "rounds")), 1);
    reply_free(&r);
}
END_TEST

typedef struct par { unsigned port; char path[64]; long status; } par;
static void *par_call(void *arg) {
    par *p = arg;
    reply r = call(p->port, NULL, p->path, NULL, 0, NULL, false);
    p->status = r.status;
    reply_free(&r);
    return NULL;
}

START_TEST(many_deferred_in_parallel) {
    /* More deferred requests than polling threads: suspension must free the threads. */
    enum { N = 24 };
    pthread_t t[N];
    par p[N];
    double t0 = gg_now_ms();
    for (int i = 0; i < N; i++) {
        p[i].port = PUB;
        snprintf(p[i].path, sizeof p[i].path, "/deferred/300");
        pthread_create(&t[i], NULL, par_call, &p[i]);
    }
    for (int i = 0; i < N; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < N; i++) ck_assert_int_eq(p[i].status, 200);
    ck_assert_msg(gg_now_ms() - t0 < 3000, "deferred requests were serialized: %.0f ms", gg_now_ms() - t0);
}
END_TEST

START_TEST(sse_stream) {
    reply r = call(PUB, NULL, "/sse/20", NULL, 0, NULL, false);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(hdr(&r, "Content-Type"), "text/event-stream");
    ck_assert_str_eq(hdr(&r, "Cache-Control"), "no-cache");
    ck_assert_str_eq(r.body.data,
                     "event: message\ndata: {\"n\":0}\n\n"
                     "event: message\ndata: {\"n\":1}\n\n"
                     "event: message\ndata: {\"n\":2}\n\n"
                     "event: final\nid: 7\ndata: line1\ndata: line2\n\n");
    reply_free(&r);
}
END_TEST

START_TEST(metrics_and_ready) {
    reply r = call(PUB, NULL, "/health", NULL, 0, NULL, false);
    reply_free(&r);
    r = call(PUB, NULL, "/nope", NULL, 0, NULL, false);
    reply_free(&r);
    r = metrics_showing((const char *const[]){"route=\"unmatched\",method=\"\",status=\"404\"} 1\n",
                                              "route=\"/health\",method=\"GET\",le=\"+Inf\"} 1\n",
                                              "route=\"/health\",method=\"GET\",status=\"200\"} 1\n", NULL});
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_nonnull(strstr(hdr(&r, "Content-Type"), "text/plain"));
    const char *m = r.body.data;
    ck_assert_ptr_nonnull(strstr(m, "graphgate_http_requests_total{route=\"/health\",method=\"GET\",status=\"200\"} 1\n"));
    ck_assert_ptr_nonnull(strstr(m, "graphgate_http_requests_total{route=\"unmatched\",method=\"\",status=\"404\"} 1\n"));
    ck_assert_ptr_nonnull(strstr(m, "graphgate_http_request_duration_seconds_bucket{route=\"/health\",method=\"GET\",le=\"+Inf\"} 1\n"));
    ck_assert_ptr_nonnull(strstr(m, "graphgate_http_requests_in_flight 1\n")); /* this scrape */
    ck_assert_ptr_nonnull(strstr(m, "process_resident_memory_bytes "));
    ck_assert_ptr_null(strstr(m, "process_resident_memory_bytes -1"));
    ck_assert_ptr_nonnull(strstr(m, "test_hook_metric 42\n"));
    reply_free(&r);
    r = call(PUB, NULL, "/ready", NULL, 0, NULL, false);
    ck_assert_int_eq(r.status, 200);
    reply_free(&r);
    ready_flag = 0;
    r = call(PUB, NULL, "/ready", NULL, 0, NULL, false);
    ck_assert_int_eq(r.status, 503);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "status")), "not_ready");
    ck_assert_str_eq(err_code(&r), "migration");
    reply_free(&r);
}
END_TEST

START_TEST(graceful_stop_waits_for_inflight) {
    par p = {PUB, "/deferred/400", 0};
    pthread_t t;
    pthread_create(&t, NULL, par_call, &p);
    while (gg_http_server_inflight(S) == 0) sleep_ms(5);
    double t0 = gg_now_ms();
    int abandoned = gg_http_server_stop(S, 5000);
    ck_assert_int_eq(abandoned, 0);
    ck_assert(gg_now_ms() - t0 >= 200);
    pthread_join(t, NULL);
    ck_assert_int_eq(p.status, 200);
    /* New connections are refused once stopped. */
    reply r = call(PUB, NULL, "/health", NULL, 0, NULL, false);
    ck_assert_int_eq(r.status, 0);
    reply_free(&r);
}
END_TEST

START_TEST(graceful_stop_abandons_past_deadline) {
    par p = {PUB, "/deferred/10000", 0}, q = {PUB, "/sse/3000", 0};
    pthread_t t, u;
    pthread_create(&t, NULL, par_call, &p);
    pthread_create(&u, NULL, par_call, &q);
    while (gg_http_server_inflight(S) < 2) sleep_ms(5);
    sleep_ms(50);
    double t0 = gg_now_ms();
    int abandoned = gg_http_server_stop(S, 200);
    ck_assert_int_eq(abandoned, 2);
    ck_assert(gg_now_ms() - t0 < 3000);
    pthread_join(t, NULL);
    pthread_join(u, NULL);
    ck_assert_int_eq(p.status, 503);
    ck_assert_int_eq(q.status, 200); /* the stream had started; it was ended early */
    /* Workers notice the abandonment, finish and release their asyncs after the stop
     * (teardown waits for them). */
}
END_TEST

static char *slurp(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    gg_strbuf b = GG_STRBUF_INIT;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) gg_strbuf_append(&b, buf, n);
    fclose(f);
    return gg_strbuf_take(&b);
}

START_TEST(access_log_lines) {
    for (int i = 0; i < 50; i++) {
        char id[64];
        snprintf(id, sizeof id, "X-Request-Id: acc-%d", i);
        reply r = call(i % 2 ? INT : PUB, NULL, i % 5 ? "/health" : "/missing", NULL, 0, id, false);
        reply_free(&r);
    }
    char *text = NULL;
    for (int waited = 0; waited < 2000; waited += 20) { /* the writer batches every 50 ms */
        free(text);
        text = slurp(access_path);
        if (text && strstr(text, "\"request_id\":\"acc-49\"")) break;
        sleep_ms(20);
    }
    ck_assert_ptr_nonnull(text);
    int lines = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        json_t *j = json_loads(line, 0, NULL);
        ck_assert_msg(j != NULL, "not JSON: %s", line);
        ck_assert_str_eq(json_string_value(json_object_get(j, "msg")), "access");
        ck_assert(json_is_integer(json_object_get(j, "status")));
        ck_assert(json_is_integer(json_object_get(j, "bytes")));
        ck_assert(json_is_number(json_object_get(j, "duration_ms")));
        const char *id = json_string_value(json_object_get(j, "request_id"));
        if (id && strcmp(id, "acc-10") == 0) {
            ck_assert_str_eq(json_string_value(json_object_get(j, "route")), "");
            ck_assert_int_eq(json_integer_value(json_object_get(j, "status")), 404);
        }
        if (id && strcmp(id, "acc-11") == 0) {
            ck_assert_str_eq(json_string_value(json_object_get(j, "route")), "/health");
            ck_assert_str_eq(json_string_value(json_object_get(j, "listener")), "internal");
            ck_assert_str_eq(json_string_value(json_object_get(j, "method")), "GET");
        }
        json_decref(j);
        lines++;
    }
    ck_assert_int_eq(lines, 50);
    free(text);
}
END_TEST

/* Access lines escape what they carry (a decoded path with a quote, a backslash and a
 * control character), take long paths (the heap-buffer branch), and have the exact field
 * formats: ts "YYYY-MM-DDTHH:MM:SS.mmmZ" near now, duration_ms with three decimals. */
START_TEST(access_log_escaping_and_formats) {
    char longpath[2100] = "/long/";
    memset(longpath + 6, 'a', 2000);
    longpath[2006] = '\0';
    reply r = call(PUB, NULL, "/esc%22q%5C%01x", NULL, 0, "X-Request-Id: acc-esc", false);
    reply_free(&r);
    r = call(PUB, NULL, longpath, NULL, 0, "X-Request-Id: acc-long", false);
    reply_free(&r);
    char *text = NULL;
    for (int waited = 0; waited < 2000; waited += 20) {
        free(text);
        text = slurp(access_path);
        if (text && strstr(text, "\"request_id\":\"acc-esc\"") && strstr(text, "\"request_id\":\"acc-long\"")) break;
        sleep_ms(20);
    }
    ck_assert_ptr_nonnull(text);
    int seen = 0;
    for (char *ln = strtok(text, "\n"); ln; ln = strtok(NULL, "\n")) {
        json_t *j = json_loads(ln, 0, NULL);
        ck_assert_msg(j != NULL, "not JSON: %s", ln);
        const char *id = json_string_value(json_object_get(j, "request_id"));
        const char *ts = json_string_value(json_object_get(j, "ts"));
        ck_assert_ptr_nonnull(ts);
        struct tm tm;
        memset(&tm, 0, sizeof tm);
        const char *rest = strptime(ts, "%Y-%m-%dT%H:%M:%S", &tm);
        ck_assert_msg(rest && strlen(ts) == 24 && rest[0] == '.' && strspn(rest + 1, "0123456789") == 3 && rest[4] == 'Z',
                      "bad ts %s", ts);
        ck_assert_int_le(llabs((long long)(timegm(&tm) - time(NULL))), 5);
        const char *d = strstr(ln, "\"duration_ms\":");
        ck_assert_ptr_nonnull(d);
        d += strlen("\"duration_ms\":");
        size_t ip = strspn(d, "0123456789");
        ck_assert_msg(ip >= 1 && d[ip] == '.' && strspn(d + ip + 1, "0123456789") == 3 && d[ip + 4] == ',',
                      "bad duration in %s", ln);
        ck_assert_str_eq(json_string_value(json_object_get(j, "client")), "127.0.0.1");
        if (id && strcmp(id, "acc-esc") == 0) {
            ck_assert_str_eq(json_string_value(json_object_get(j, "path")), "/esc\"q\\\001x");
            ck_assert_int_eq(json_integer_value(json_object_get(j, "status")), 404);
            seen++;
        }
        if (id && strcmp(id, "acc-long") == 0) {
            ck_assert_str_eq(json_string_value(json_object_get(j, "path")), longpath);
            seen++;
        }
        json_decref(j);
    }
    ck_assert_int_eq(seen, 2);
    free(text);
}
END_TEST

int main(void) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    Suite *s = suite_create("http-server");
    TCase *tc = tcase_create("server");
    tcase_set_timeout(tc, 30);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, health_and_request_id);
    tcase_add_test(tc, generated_request_ids_unique);
    tcase_add_test(tc, date_header);
    tcase_add_test(tc, echo_params_query_headers);
    tcase_add_test(tc, not_found_and_method_not_allowed);
    tcase_add_test(tc, internal_only_route);
    tcase_add_test(tc, body_limit);
    tcase_add_test(tc, header_limits);
    tcase_add_test(tc, deferred_from_worker_thread);
    tcase_add_test(tc, many_deferred_in_parallel);
    tcase_add_test(tc, deferred_then_redispatched);
    tcase_add_test(tc, sse_stream);
    tcase_add_test(tc, metrics_and_ready);
    tcase_add_test(tc, access_log_lines);
    tcase_add_test(tc, access_log_escaping_and_formats);
    tcase_add_test(tc, graceful_stop_waits_for_inflight);
    tcase_add_test(tc, graceful_stop_abandons_past_deadline);
    tcase_add_test(tc, connection_limit_queues_not_resets);
    tcase_add_test(tc, receive_deadline);
    tcase_add_test(tc, ambiguous_framing);
    tcase_add_test(tc, header_reads_by_name);
    tcase_add_test(tc, internal_host_and_origin);
    tcase_add_test(tc, internal_hosts_configured);
    tcase_add_test(tc, start_hook_sees_bound_ports);
    tcase_add_test(tc, epoll_round_after_full_does_not_wait);
    suite_add_tcase(s, tc);
    int failed = gg_check_run(s);
    curl_global_cleanup();
    return failed ? 1 : 0;
}
