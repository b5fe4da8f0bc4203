/* deferred.c — deferred responses (gg_http_defer) and streamed (SSE) bodies via connection
 * suspend/resume, and the watch for clients that leave while suspended.
 *
 * Locking: one mutex per server (alock) guards every gg_http_async's shared state and the
 * list of live asyncs; critical sections are a few loads and stores. libmicrohttpd's
 * suspend/resume are called with alock held so "owner finished" and "connection suspended"
 * can never cross. */
#include "http/internal.h"

#include <stdatomic.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gg_http_async_free(gg_http_async *a) {
    gg_http_req_free(a->req);
    gg_http_res_clear(&a->res);
    gg_strbuf_free(&a->out);
    free(a);
}

void gg_http_async_unlink(gg_http_async *a) {
    gg_http_server *srv = a->req->srv;
    if (a->prev) a->prev->next = a->next;
    else if (srv->alist == a) srv->alist = a->next;
    if (a->next) a->next->prev = a->prev;
    a->prev = a->next = NULL;
}

/* Content reader for streamed (SSE) bodies: drain the queue, or park the connection until
 * the owner writes more or finishes. */
ssize_t gg_http_stream_reader(void *cls, uint64_t pos, char *buf, size_t max) {
    gg_http_async *a = cls;
    gg_http_req *req = a->req;
    pthread_mutex_lock(&req->srv->alock);
    size_t avail = a->out.len - a->out_off;
    if (avail) {
        size_t n = avail < max ? avail : max;
        memcpy(buf, a->out.data + a->out_off, n);
        a->out_off += n;
        if (a->out_off == a->out.len) {
            gg_strbuf_reset(&a->out);
            a->out_off = 0;
        }
        pthread_mutex_unlock(&req->srv->alock);
        req->bytes_out += n;
        return (ssize_t)n;
    }
    if (a->owner_done || a->abandoned) {
        pthread_mutex_unlock(&req->srv->alock);
        return MHD_CONTENT_READER_END_OF_STREAM;
    }
    a->reader_waiting = true;
    MHD_suspend_connection(req->conn);
    pthread_mutex_unlock(&req->srv->alock);
    return 0;
}

/* ---- deferred responses ------------------------------------------------------------------ */

typedef struct kv_fill {
    size_t count, bytes; /* pass 1: what to allocate */
    gg_http_kv *kv;      /* pass 2: where to copy */
    char *strings;
    size_t n;
} kv_fill;

static enum MHD_Result kv_measure(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    kv_fill *f = cls;
    if (!key) return MHD_YES;
    f->count++;
    f->bytes += strlen(key) + strlen(value ? value : "") + 2;
    return MHD_YES;
}

static enum MHD_Result kv_copy(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    kv_fill *f = cls;
    if (!key || f->n >= f->count) return MHD_YES;
    size_t kl = strlen(key) + 1, vl = strlen(value ? value : "") + 1;
    gg_http_kv *kv = &f->kv[f->n++];
    kv->kind = kind;
    kv->name = memcpy(f->strings, key, kl);
    kv->value = value ? memcpy(f->strings + kl, value, vl) : NULL; /* as MHD: "?flag" → NULL */
    f->strings += kl + vl;
    return MHD_YES;
}

/* Copy the request's headers and query arguments into req->kv (one allocation). */
static bool snapshot(gg_http_req *req) {
    kv_fill f = {0, 0, NULL, NULL, 0};
    MHD_get_connection_values(req->conn, MHD_HEADER_KIND, kv_measure, &f);
    MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, kv_measure, &f);
    size_t slots = f.count ? f.count : 1; /* never NULL: NULL means "not snapshotted" */
    char *block = malloc(slots * sizeof(gg_http_kv) + f.bytes);
    if (!block) return false;
    f.kv = (gg_http_kv *)(void *)block;
    f.strings = block + slots * sizeof(gg_http_kv);
    MHD_get_connection_values(req->conn, MHD_HEADER_KIND, kv_copy, &f);
    MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, kv_copy, &f);
    req->kv = f.kv;
    req->nkv = f.n;
    return true;
}

/* Defer the response; see http.h. */
gg_http_async *gg_http_defer(gg_http_req *req) {
    gg_http_server *srv = req->srv;
    if (req->async || atomic_load(&srv->abandoning)) return NULL;
    /* The owner may read headers after the connection is gone: copy headers and query
     * arguments now, into one allocation (measured first); a request deferred again after
     * gg_http_async_redispatch keeps its first copy. */
    gg_http_async *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    if (!req->kv && !snapshot(req)) {
        free(a);
        return NULL;
    }
    a->req = req;
    a->refs = 2;
    a->conn = CONN_IN_HANDLER;
    gg_http_res_init(&a->res);
    pthread_mutex_lock(&srv->alock);
    if (atomic_load(&srv->abandoning)) {
        pthread_mutex_unlock(&srv->alock);
        free(a);
        return NULL;
    }
    a->next = srv->alist;
    if (srv->alist) srv->alist->prev = a;
    srv->alist = a;
    req->async = a;
    pthread_mutex_unlock(&srv->alock);
    return a;
}

gg_http_req *gg_http_async_req(gg_http_async *a) { return a->req; }
gg_http_res *gg_http_async_res(gg_http_async *a) { return &a->res; }

bool gg_http_async_abandoned(const gg_http_async *a) {
    return atomic_load_explicit(&a->abandoned, memory_order_relaxed);
}

/* Let the connection proceed (caller holds alock). */
void gg_http_async_wake(gg_http_async *a) {
    if (a->conn == CONN_SUSPENDED) {
        a->conn = CONN_RESPONDING;
        MHD_resume_connection(a->req->conn);
    }
}

/* Start a streamed body; see http.h. */
bool gg_http_async_stream(gg_http_async *a, int status, const char *content_type) {
    gg_http_server *srv = a->req->srv;
    pthread_mutex_lock(&srv->alock);
    bool ok = !a->abandoned && !a->owner_done && !a->streaming && !a->ready;
    if (ok) {
        a->streaming = true;
        a->res.status = status;
        snprintf(a->res.content_type, sizeof a->res.content_type, "%s",
                 content_type ? content_type : "text/event-stream");
        a->ready = true;
        gg_http_async_wake(a);
    }
    pthread_mutex_unlock(&srv->alock);
    return ok;
}

/* Queue stream bytes; see http.h. */
bool gg_http_async_write(gg_http_async *a, const void *data, size_t len) {
    gg_http_server *srv = a->req->srv;
    pthread_mutex_lock(&srv->alock);
    bool ok = a->streaming && !a->abandoned && !a->owner_done &&
              a->out.len - a->out_off + len <= GG_HTTP_STREAM_BUFFER_MAX &&
              gg_strbuf_append(&a->out, data, len);
    if (ok && a->reader_waiting) {
        a->reader_waiting = false;
        MHD_resume_connection(a->req->conn);
    }
    pthread_mutex_unlock(&srv->alock);
    return ok;
}

/* See http.h. */
size_t gg_http_async_queued(gg_http_async *a) {
    pthread_mutex_lock(&a->req->srv->alock);
    size_t n = a->out.len - a->out_off;
    pthread_mutex_unlock(&a->req->srv->alock);
    return n;
}

/* Called with alock held once a's owner is done or gave up: a waiting stream reader is
 * resumed to read the end, a plain deferred answer is marked ready and its connection woken. */
void gg_http_async_let_go(gg_http_async *a) {
    if (a->streaming) {
        if (a->reader_waiting) {
            a->reader_waiting = false;
            MHD_resume_connection(a->req->conn);
        }
    } else if (!a->ready) {
        a->ready = true;
        gg_http_async_wake(a);
    }
}

/* One SSE event; see http.h. */
bool gg_http_sse_event(gg_http_async *a, const char *event, const char *id, const char *data) {
    gg_strbuf b = GG_STRBUF_INIT;
    if (event) gg_strbuf_printf(&b, "event: %s\n", event);
    if (id) gg_strbuf_printf(&b, "id: %s\n", id);
    const char *p = data ? data : "";
    for (;;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        if (n && p[n - 1] == '\r') n--;
        gg_strbuf_puts(&b, "data: ");
        gg_strbuf_append(&b, p, n);
        gg_strbuf_putc(&b, '\n');
        if (!nl) break;
        p = nl + 1;
    }
    gg_strbuf_putc(&b, '\n');
    bool ok = !b.oom && gg_http_async_write(a, b.data, b.len);
    gg_strbuf_free(&b);
    return ok;
}

bool gg_http_deferred(const gg_http_req *req) { return req->async != NULL; }

/* Run the handler again; see http.h. Like a completion for the owner; the connection's
 * thread does the rest (request.c: respond_async). */
void gg_http_async_redispatch(gg_http_async *a) {
    if (!a) return;
    gg_http_server *srv = a->req->srv;
    pthread_mutex_lock(&srv->alock);
    if (a->owner_done || a->streaming) { /* a caller bug; keep it harmless */
        pthread_mutex_unlock(&srv->alock);
        return;
    }
    a->redispatch = true;
    a->owner_done = true;
    gg_http_async_let_go(a);
    bool last = --a->refs == 0;
    pthread_mutex_unlock(&srv->alock);
    if (last) gg_http_async_free(a);
}

/* Finish a deferred request; see http.h. */
void gg_http_async_complete(gg_http_async *a) {
    if (!a) return;
    gg_http_server *srv = a->req->srv;
    pthread_mutex_lock(&srv->alock);
    if (a->owner_done) { /* a second completion is a caller bug; keep it harmless */
        pthread_mutex_unlock(&srv->alock);
        return;
    }
    a->owner_done = true;
    gg_http_async_let_go(a);
    bool last = --a->refs == 0;
    pthread_mutex_unlock(&srv->alock);
    if (last) gg_http_async_free(a);
}

/* ---- clients that leave while suspended --------------------------------------------------- */

/* libmicrohttpd does not watch a suspended connection's socket, so a client that closes
 * while its request waits (a run on a downstream server or on the client's own answer, a
 * POST stream between events) would only be noticed when the owner answers. Every quarter
 * second (the tracker's thread) the sockets of suspended deferred requests are polled for a
 * hangup; such a request is marked abandoned (the owner sees gg_http_async_abandoned and
 * cancels its run) and its connection resumed so libmicrohttpd closes it now. A client
 * that only half-closes after sending its request counts as gone too (as libmicrohttpd
 * itself treats a read EOF). */
static bool suspended_now(const gg_http_async *a) {
    return !a->owner_done && !a->abandoned && (a->conn == CONN_SUSPENDED || (a->streaming && a->reader_waiting));
}

void gg_http_find_gone_clients(void *user) {
    gg_http_server *s = user;
    pthread_mutex_lock(&s->alock);
    size_t n = 0;
    for (gg_http_async *a = s->alist; a; a = a->next) n += suspended_now(a);
    struct pollfd *fds = n ? calloc(n, sizeof *fds) : NULL;
    gg_http_async **who = n ? calloc(n, sizeof *who) : NULL;
    size_t k = 0;
    for (gg_http_async *a = s->alist; a && fds && who && k < n; a = a->next) {
        if (!suspended_now(a)) continue;
        const union MHD_ConnectionInfo *fi = MHD_get_connection_info(a->req->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!fi) continue;
        fds[k] = (struct pollfd){.fd = fi->connect_fd, .events = POLLRDHUP};
        who[k++] = a;
    }
    /* under alock: a suspended connection cannot be closed meanwhile, so the fds stay ours */
    if (k && poll(fds, k, 0) > 0) {
        for (size_t i = 0; i < k; i++) {
            if (!(fds[i].revents & (POLLRDHUP | POLLHUP | POLLERR))) continue;
            gg_http_async *a = who[i];
            atomic_store_explicit(&a->abandoned, true, memory_order_relaxed);
            a->client_gone = true;
            if (a->streaming) {
                a->reader_waiting = false;
                MHD_resume_connection(a->req->conn);
            } else {
                a->ready = true;
                gg_http_async_wake(a);
            }
        }
    }
    pthread_mutex_unlock(&s->alock);
    free(fds);
    free(who);
}
