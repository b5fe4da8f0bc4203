/* forward.c — one JSON-RPC POST to another replica's internal listener (mcp_forward_start):
 * the retry of a relay round whose run is parked there (gateway/mcp_http.c). It runs on the
 * shared event loop like every downstream exchange, so no thread waits for the other replica;
 * the loop's deadline heap and the caller's cancel flag end it. The answer comes back as the
 * other replica wrote it (status and body bytes), for the caller to hand on unchanged; an
 * event stream (the call's progress and log messages, then its answer) is handed on chunk by
 * chunk as it comes when the caller takes one (stream). Not
 * an MCP client: no session, no initialize, no retries — the request is one the caller built
 * whole. The URL is the caller's to trust (a sealed state names it), so no egress policy
 * applies; redirects are not followed, no proxy is used, only http and https. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mcp/loop.h"

typedef struct fwd {
    mcp_pending p; /* first: the loop's view */
    mcp_loop_xfer lx;
    mcp_loop *loop;
    CURL *h;
    struct curl_slist *hd;
    char *url, *body;
    size_t len;
    gg_strbuf resp;
    long status;
    bool flying, finished, too_big;
    bool started;   /* the first body bytes came: streaming decided */
    bool streaming; /* the answer is an event stream handed on as it comes */
    bool stopped;   /* the caller took no more of the stream */
    mcp_forward_stream_fn stream;
    mcp_forward_done_fn done;
    void *user;
} fwd;

static void fwd_destroy(mcp_pending *p) {
    fwd *f = (fwd *)p;
    if (f->h) curl_easy_cleanup(f->h);
    curl_slist_free_all(f->hd);
    gg_strbuf_free(&f->resp);
    free(f->url);
    free(f->body);
    free(f);
}

/* mcp_pending.done: the caller's done with the answer (the body NUL-terminated). */
static void fwd_pending_done(void *user, json_t *result, gg_error *err) {
    (void)result;
    fwd *f = user;
    bool ok = !err || !gg_error_is_set(err);
    if (ok && f->streaming) { /* handed on already: the end of the stream */
        f->done(f->user, f->status, NULL, 0, err);
        return;
    }
    if (ok && !gg_strbuf_putc(&f->resp, '\0')) {
        gg_error e = GG_ERROR_INIT;
        gg_error_set(&e, "oom", "out of memory");
        f->done(f->user, 0, NULL, 0, &e);
        gg_error_clear(&e);
        return;
    }
    f->done(f->user, ok ? f->status : 0, ok ? f->resp.data : NULL, ok ? f->resp.len - 1 : 0, err);
}

/* End the exchange once (loop thread): code NULL = answered. */
static void fwd_finish(fwd *f, const char *code, const char *msg) {
    if (f->finished) return;
    f->finished = true;
    if (f->flying) {
        curl_multi_remove_handle(mcp_loop_multi(f->loop), f->h);
        f->flying = false;
    }
    gg_error e = GG_ERROR_INIT;
    if (code) gg_error_set(&e, code, "%s", msg);
    mcp_pending_finish(f->loop, &f->p, NULL, code ? &e : NULL);
    gg_error_clear(&e);
}

static size_t fwd_body(char *ptr, size_t size, size_t n, void *user) {
    fwd *f = user;
    size_t len = size * n;
    if (!f->started) {
        f->started = true;
        char *ct = NULL;
        curl_easy_getinfo(f->h, CURLINFO_CONTENT_TYPE, &ct);
        curl_easy_getinfo(f->h, CURLINFO_RESPONSE_CODE, &f->status);
        f->streaming = f->stream && ct && !strncasecmp(ct, "text/event-stream", 17) &&
                       f->stream(f->user, f->status, NULL, 0);
    }
    if (f->streaming) { /* the caller bounds what it queues: false stops the transfer */
        if (f->stream(f->user, 0, ptr, len)) return len;
        f->stopped = true;
        return 0;
    }
    if (f->resp.len + len > MCP_FORWARD_MAX_BYTES) {
        f->too_big = true;
        return 0; /* aborts the transfer */
    }
    return gg_strbuf_append(&f->resp, ptr, len) ? len : 0;
}

static void fwd_done(mcp_loop_xfer *lx, CURLcode rc) {
    fwd *f = (fwd *)((char *)lx - offsetof(fwd, lx));
    f->flying = false; /* the loop removed the handle */
    curl_easy_getinfo(f->h, CURLINFO_RESPONSE_CODE, &f->status);
    if (rc == CURLE_OK) fwd_finish(f, NULL, NULL);
    else if (f->too_big) fwd_finish(f, "too_large", "the other replica's answer is too large");
    else if (f->stopped) fwd_finish(f, "cancelled", "the caller took no more of the other replica's answer");
    else { /* curl's words name the failure, never the URL */
        char msg[160];
        snprintf(msg, sizeof msg, "the other replica cannot be reached (%s)", curl_easy_strerror(rc));
        fwd_finish(f, "unavailable", msg);
    }
}

/* Deadline or cancel flag (loop thread). */
static void fwd_expire(mcp_pending *p, const char *why) {
    fwd *f = (fwd *)p;
    if (!strcmp(why, "timeout")) fwd_finish(f, "timeout", "the other replica did not answer in time");
    else fwd_finish(f, "cancelled", "Execution cancelled");
}

/* On the loop thread: put the request on the wire (holds a reference, dropped here). */
static void fwd_submit(void *arg) {
    fwd *f = arg;
    if (!f->finished) {
        double left = f->p.deadline - gg_now_ms();
        CURL *h = f->h = curl_easy_init();
        if (h) {
            f->lx.fn = fwd_done;
            curl_easy_setopt(h, CURLOPT_PRIVATE, (char *)&f->lx);
            curl_easy_setopt(h, CURLOPT_URL, f->url);
            curl_easy_setopt(h, CURLOPT_POST, 1L);
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, f->body);
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)f->len);
            curl_easy_setopt(h, CURLOPT_HTTPHEADER, f->hd);
            curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, fwd_body);
            curl_easy_setopt(h, CURLOPT_WRITEDATA, f);
            curl_easy_setopt(h, CURLOPT_PROXY, "");
            curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
            curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
            curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
            /* a backstop: the loop's deadline heap normally ends it first */
            curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(left < 1 ? 1 : left + 50));
        }
        if (h && curl_multi_add_handle(mcp_loop_multi(f->loop), h) == CURLM_OK) f->flying = true;
        else fwd_finish(f, "unavailable", "the other replica cannot be reached (cannot start an HTTP request)");
    }
    mcp_pending_unref(&f->p);
}

/* See mcp.h. */
void mcp_forward_start(const char *url, const char *const *headers, const char *body, size_t len, int timeout_ms,
                       atomic_int *cancel, mcp_forward_stream_fn stream, mcp_forward_done_fn done, void *user) {
    fwd *f = calloc(1, sizeof *f);
    if (f) {
        f->url = strdup(url);
        f->body = malloc(len + 1);
    }
    bool ok = f && f->url && f->body;
    for (const char *const *l = headers; ok && l && *l; l++) {
        struct curl_slist *n = curl_slist_append(f->hd, *l);
        ok = n != NULL;
        if (n) f->hd = n;
    }
    if (!ok) {
        if (f) {
            curl_slist_free_all(f->hd);
            free(f->url);
            free(f->body);
            free(f);
        }
        gg_error e = GG_ERROR_INIT;
        gg_error_set(&e, "oom", "out of memory");
        done(user, 0, NULL, 0, &e);
        gg_error_clear(&e);
        return;
    }
    memcpy(f->body, body, len);
    f->body[len] = '\0';
    f->len = len;
    f->stream = stream;
    f->done = done;
    f->user = user;
    f->loop = mcp_loop_shared();
    mcp_pending_init(&f->p, timeout_ms > 0 ? timeout_ms : 1, cancel, fwd_pending_done, f);
    f->p.expire = fwd_expire;
    f->p.destroy = fwd_destroy;
    mcp_loop_watch(f->loop, &f->p);
    mcp_pending_ref(&f->p);
    /* out of memory for the post: the watched deadline still ends it */
    if (!mcp_loop_post(f->loop, fwd_submit, f)) mcp_pending_unref(&f->p);
}
