/* Unit tests for the streamable-HTTP client's raw pass-through (src/mcp/client_http.c
 * mcp_http_raw_start), which the gateway's forward to another replica uses (forward.c): only
 * the caller's header lines and its body's bytes go, the answer comes back as sent (an
 * input-required result, a 429 alike) with its Content-Type and a Retry-After only when valid
 * (delay-seconds up to a day, or an IMF-fixdate), a plain answer is bounded (by the request,
 * else by its downstream context's max_message_bytes, else the default), an event stream
 * is handed on chunk by chunk (or buffered when its taker declines it; a taker that stops ends
 * it), and a request cancelled or past its time closes its connection, which the server
 * sees; an unreachable server is "unavailable", naming no address. Against a small HTTP
 * server (tiny_http.h), one canned answer a connection. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mcp/mcp.h"
#include "tiny_http.h"
#include "../check_main.h"

/* ---- the server: one request a connection, answered with reply (or held when reply is "") */
typedef struct fake {
    tiny_http http;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char reply[4096];
    char head[4096]; /* the last request's head */
    char body[256];  /* and its body */
    size_t body_len;
    bool got;    /* a request was read */
    bool closed; /* the client closed a held connection */
} fake;

/* Keep the request's head and body, then send the reply, or hold the connection until the
 * client closes it. */
static void fake_answer(void *user, int s, const char *head, const char *body, size_t len) {
    fake *f = user;
    pthread_mutex_lock(&f->mu);
    snprintf(f->head, sizeof f->head, "%s", head);
    f->body_len = len < sizeof f->body ? len : 0;
    if (f->body_len) memcpy(f->body, body, f->body_len);
    f->got = true;
    pthread_cond_broadcast(&f->cv);
    char reply[sizeof f->reply];
    memcpy(reply, f->reply, sizeof reply);
    pthread_mutex_unlock(&f->mu);
    if (reply[0]) {
        ssize_t w = send(s, reply, strlen(reply), MSG_NOSIGNAL);
        (void)w;
        return;
    }
    char c;
    while (read(s, &c, 1) > 0) {} /* held: until the client closes */
    pthread_mutex_lock(&f->mu);
    f->closed = true;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

static void fake_start(fake *f, const char *reply) {
    memset(f, 0, sizeof *f);
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    snprintf(f->reply, sizeof f->reply, "%s", reply);
    tiny_http_start(&f->http, "/internal/mcp/t/g", fake_answer, f);
}

static void fake_stop(fake *f) {
    tiny_http_stop(&f->http);
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->cv);
}

/* Wait (5 s at most) until *flag, set under f->mu. */
static bool fake_wait(fake *f, bool *flag) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 5;
    pthread_mutex_lock(&f->mu);
    while (!*flag && pthread_cond_timedwait(&f->cv, &f->mu, &ts) != ETIMEDOUT) {}
    bool yes = *flag;
    pthread_mutex_unlock(&f->mu);
    return yes;
}

/* ---- what came back ------------------------------------------------------------------- */
typedef struct outcome {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    long status;
    char ct[128], ra[40], code[32], msg[400];
    bool has_ct, has_ra, has_body;
    char body[4096];
    size_t len;
    /* the stream's taker */
    bool take, stop;
    int heads;
    long head_status;
    char streamed[4096];
    size_t slen;
} outcome;

static void on_done(void *user, const mcp_http_answer *a, gg_error *err) {
    outcome *o = user;
    pthread_mutex_lock(&o->mu);
    o->status = a->status;
    if ((o->has_ct = a->content_type != NULL)) snprintf(o->ct, sizeof o->ct, "%s", a->content_type);
    if ((o->has_ra = a->retry_after != NULL)) snprintf(o->ra, sizeof o->ra, "%s", a->retry_after);
    if ((o->has_body = a->body != NULL) && a->len < sizeof o->body) {
        memcpy(o->body, a->body, a->len + 1);
        o->len = a->len;
    }
    if (err && gg_error_is_set(err)) {
        snprintf(o->code, sizeof o->code, "%s", err->code);
        snprintf(o->msg, sizeof o->msg, "%s", err->message);
    }
    o->done = true;
    pthread_cond_broadcast(&o->cv);
    pthread_mutex_unlock(&o->mu);
}

static bool on_stream(void *user, const mcp_http_answer *head, const char *bytes, size_t n) {
    outcome *o = user;
    if (head) {
        o->heads++;
        o->head_status = head->status;
        return o->take;
    }
    if (o->slen + n < sizeof o->streamed) memcpy(o->streamed + o->slen, bytes, n), o->slen += n;
    return !o->stop;
}

static void outcome_init(outcome *o) {
    memset(o, 0, sizeof *o);
    pthread_mutex_init(&o->mu, NULL);
    pthread_cond_init(&o->cv, NULL);
}

static void outcome_wait(outcome *o) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 10;
    pthread_mutex_lock(&o->mu);
    while (!o->done && pthread_cond_timedwait(&o->cv, &o->mu, &ts) != ETIMEDOUT) {}
    pthread_mutex_unlock(&o->mu);
    ck_assert_msg(o->done, "done was not called");
    pthread_mutex_destroy(&o->mu);
    pthread_cond_destroy(&o->cv);
}

/* One raw request to url, waited for. */
static void raw(const char *url, const char *body, size_t len, size_t max, int timeout_ms, atomic_int *cancel,
                bool stream, outcome *o) {
    static const char *const headers[] = {"Content-Type: application/json", "X-Test: one", NULL};
    mcp_http_raw rq = {.url = url, .name = "the other replica", .headers = headers, .body = body, .len = len,
                       .max_bytes = max, .timeout_ms = timeout_ms, .cancel = cancel,
                       .stream = stream ? on_stream : NULL, .done = on_done, .user = o};
    mcp_http_raw_start(&rq);
    outcome_wait(o);
}

/* A canned plain answer with extra header lines (each ending in \r\n). */
static const char *answer(const char *status, const char *extra, const char *body) {
    static char buf[4096];
    snprintf(buf, sizeof buf, "HTTP/1.1 %s\r\nContent-Type: application/json\r\n%sContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
             status, extra, strlen(body), body);
    return buf;
}

#define INPUT_REQUIRED "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"resultType\":\"input_required\",\"requestState\":\"s\"}}"

START_TEST(answer_as_sent) {
    fake f;
    fake_start(&f, answer("200 OK", "Retry-After: 120\r\n", INPUT_REQUIRED));
    outcome o;
    outcome_init(&o);
    raw(f.http.url, "a\0b", 3, 0, 5000, NULL, false, &o);
    ck_assert_msg(!o.code[0], "%s: %s", o.code, o.msg);
    ck_assert_int_eq(o.status, 200);
    ck_assert(o.has_body && o.len == strlen(INPUT_REQUIRED));
    ck_assert_str_eq(o.body, INPUT_REQUIRED); /* an input-required result is an answer like any other */
    ck_assert_str_eq(o.ct, "application/json");
    ck_assert_str_eq(o.ra, "120");
    /* only the caller's header lines, and its body's bytes as given */
    ck_assert_msg(strstr(f.head, "\r\nX-Test: one") && strstr(f.head, "POST /internal/mcp/t/g "), "%s", f.head);
    ck_assert_msg(!strcasestr(f.head, "mcp-protocol-version") && !strcasestr(f.head, "mcp-session-id") &&
                      !strcasestr(f.head, "\r\nAccept:") && !strcasestr(f.head, "\r\nExpect:"),
                  "%s", f.head);
    ck_assert_msg(strstr(f.head, "\r\nContent-Type: application/json"), "%s", f.head);
    ck_assert_int_eq(f.body_len, 3);
    ck_assert(!memcmp(f.body, "a\0b", 3));
    fake_stop(&f);
}
END_TEST

START_TEST(retry_after_validated) {
    static const struct {
        const char *sent, *kept; /* kept NULL: dropped */
    } cases[] = {
        {"0", "0"},
        {"1", "1"},
        {"86400", "86400"},
        {"86401", NULL},
        {"1234567", NULL},
        {"Sun, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMT"},
        {"Sunday, 06-Nov-94 08:49:37 GMT", NULL}, /* the obsolete forms are not generated: not handed on */
        {"Sun, 06 Nov 1994 08:49:37 UTC", NULL},
        {"soon", NULL},
        {"-1", NULL},
        {"1 2", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char extra[128];
        snprintf(extra, sizeof extra, "Retry-After: %s\r\n", cases[i].sent);
        fake f;
        fake_start(&f, answer("429 Too Many Requests", extra, "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32000,\"message\":\"busy\"}}"));
        outcome o;
        outcome_init(&o);
        raw(f.http.url, "{}", 2, 0, 5000, NULL, false, &o);
        ck_assert_msg(!o.code[0], "%s: %s", o.code, o.msg);
        ck_assert_int_eq(o.status, 429); /* a refusal is an answer too */
        if (cases[i].kept) ck_assert_msg(o.has_ra && !strcmp(o.ra, cases[i].kept), "'%s' kept as '%s'", cases[i].sent, o.ra);
        else ck_assert_msg(!o.has_ra, "'%s' dropped, got '%s'", cases[i].sent, o.ra);
        fake_stop(&f);
    }
}
END_TEST

START_TEST(bounded) {
    char body[200];
    memset(body, 'x', sizeof body - 1);
    body[sizeof body - 1] = '\0';
    fake f;
    fake_start(&f, answer("200 OK", "", body));
    outcome o;
    outcome_init(&o);
    raw(f.http.url, "{}", 2, 64, 5000, NULL, false, &o);
    ck_assert_str_eq(o.code, "too_large");
    ck_assert_msg(strstr(o.msg, "the other replica") && strstr(o.msg, "64"), "%s", o.msg);
    ck_assert(!o.has_body);
    fake_stop(&f);
}
END_TEST

/* No bound of its own: its downstream context's (mcp_http_set_limits) applies; without a
 * context the default's (4 MiB) lets the same answer through. */
START_TEST(bounded_by_context) {
    char body[200];
    memset(body, 'x', sizeof body - 1);
    body[sizeof body - 1] = '\0';
    mcp_downstream *ds = mcp_downstream_new();
    ck_assert_ptr_nonnull(ds);
    mcp_http_set_limits(ds, 64, 0);
    static const char *const headers[] = {"Content-Type: application/json", NULL};
    for (int with = 1; with >= 0; with--) {
        fake f;
        fake_start(&f, answer("200 OK", "", body));
        outcome o;
        outcome_init(&o);
        mcp_http_raw rq = {.url = f.http.url, .name = "the other replica", .headers = headers, .body = "{}", .len = 2,
                           .downstream = with ? ds : NULL, .timeout_ms = 5000, .done = on_done, .user = &o};
        mcp_http_raw_start(&rq);
        outcome_wait(&o);
        if (with) ck_assert_msg(!strcmp(o.code, "too_large") && strstr(o.msg, "64"), "%s", o.msg);
        else ck_assert_msg(!o.code[0] && o.has_body && o.len == sizeof body - 1, "the default bound: %s", o.msg);
        fake_stop(&f);
    }
    mcp_downstream_free(ds);
}
END_TEST

/* Cancelled while the server holds the request: done says so at once, and the server sees
 * its client go (the connection closed), as it would a client of its own. */
START_TEST(cancel_closes) {
    fake f;
    fake_start(&f, "");
    atomic_int cancel = 0;
    outcome o;
    outcome_init(&o);
    static const char *const headers[] = {"X-Test: one", NULL};
    mcp_http_raw rq = {.url = f.http.url, .name = "the other replica", .headers = headers, .body = "{}", .len = 2,
                       .timeout_ms = 20000, .cancel = &cancel, .done = on_done, .user = &o};
    mcp_http_raw_start(&rq);
    ck_assert_msg(fake_wait(&f, &f.got), "the request reached the server");
    atomic_store(&cancel, 1);
    outcome_wait(&o);
    ck_assert_str_eq(o.code, "cancelled");
    ck_assert_msg(fake_wait(&f, &f.closed), "the server saw its client go");
    fake_stop(&f);
}
END_TEST

START_TEST(timeout_closes) {
    fake f;
    fake_start(&f, "");
    outcome o;
    outcome_init(&o);
    raw(f.http.url, "{}", 2, 0, 300, NULL, false, &o);
    ck_assert_str_eq(o.code, "timeout");
    ck_assert_msg(strstr(o.msg, "the other replica did not answer in time"), "%s", o.msg);
    ck_assert_msg(fake_wait(&f, &f.closed), "the server saw its client go");
    fake_stop(&f);
}
END_TEST

START_TEST(unreachable_named_not_addressed) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/x", (unsigned)ntohs(a.sin_port));
    close(fd); /* nobody listens there now */
    outcome o;
    outcome_init(&o);
    raw(url, "{}", 2, 0, 5000, NULL, false, &o);
    ck_assert_str_eq(o.code, "unavailable");
    ck_assert_msg(strstr(o.msg, "the other replica cannot be reached") && !strstr(o.msg, "127.0.0.1") && !strstr(o.msg, "http"),
                  "%s", o.msg);
}
END_TEST

#define SSE_REPLY "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n" \
                  "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n" \
                  "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"
#define SSE_BODY "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n" \
                 "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"

START_TEST(stream_handed_on) {
    fake f;
    fake_start(&f, SSE_REPLY);
    outcome o;
    outcome_init(&o);
    o.take = true;
    raw(f.http.url, "{}", 2, 0, 5000, NULL, true, &o);
    ck_assert_msg(!o.code[0], "%s: %s", o.code, o.msg);
    ck_assert_int_eq(o.heads, 1);
    ck_assert_int_eq(o.head_status, 200);
    ck_assert(!o.has_body); /* handed on already */
    ck_assert_int_eq(o.slen, strlen(SSE_BODY));
    ck_assert(!memcmp(o.streamed, SSE_BODY, o.slen));
    fake_stop(&f);
}
END_TEST

START_TEST(stream_declined_or_stopped) {
    fake f;
    fake_start(&f, SSE_REPLY);
    outcome o;
    outcome_init(&o); /* the taker declines: buffered like any answer */
    raw(f.http.url, "{}", 2, 0, 5000, NULL, true, &o);
    ck_assert_msg(!o.code[0], "%s: %s", o.code, o.msg);
    ck_assert_int_eq(o.heads, 1);
    ck_assert(o.has_body);
    ck_assert_str_eq(o.body, SSE_BODY);
    ck_assert_str_eq(o.ct, "text/event-stream");
    outcome_init(&o); /* the taker stops at the first chunk */
    o.take = o.stop = true;
    raw(f.http.url, "{}", 2, 0, 5000, NULL, true, &o);
    ck_assert_str_eq(o.code, "cancelled");
    fake_stop(&f);
}
END_TEST

int main(void) {
    Suite *s = suite_create("http_raw");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, answer_as_sent);
    tcase_add_test(tc, retry_after_validated);
    tcase_add_test(tc, bounded);
    tcase_add_test(tc, bounded_by_context);
    tcase_add_test(tc, cancel_closes);
    tcase_add_test(tc, timeout_closes);
    tcase_add_test(tc, unreachable_named_not_addressed);
    tcase_add_test(tc, stream_handed_on);
    tcase_add_test(tc, stream_declined_or_stopped);
    tcase_set_timeout(tc, 30);
    suite_add_tcase(s, tc);
    return gg_check_run(s);
}
