/* access_log.c — one JSON access line per request, built without printf or heap and
 * written in batches by one writer thread. */
#include "http/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Access lines are batched: request threads append to `pending` (one memcpy under a mutex)
 * and one writer thread writes everything queued every few milliseconds in one call, so
 * logging costs no system call per request. */
#define ALOG_FLUSH_MS 50
#define ALOG_SIGNAL_BYTES (64u * 1024u)
#define ALOG_MAX_BYTES (8u * 1024u * 1024u) /* beyond this (stuck disk) lines are dropped */

static void alog_write(access_writer *w, gg_strbuf *batch) {
    if (!batch->len) return;
    if (w->file) {
        fwrite(batch->data, 1, batch->len, w->file);
        fputc('\n', w->file);
        fflush(w->file);
    } else {
        gg_log_json_line(batch->data); /* several lines, written atomically */
    }
    gg_strbuf_reset(batch);
}

static void *alog_thread(void *arg) {
    access_writer *w = arg;
    gg_strbuf batch = GG_STRBUF_INIT;
    pthread_mutex_lock(&w->lock);
    for (;;) {
        if (!w->pending.len && !w->stop) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += ALOG_FLUSH_MS * 1000000L;
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&w->cond, &w->lock, &until);
        }
        gg_strbuf tmp = w->pending; /* swap: the request threads get the empty buffer */
        w->pending = batch;
        batch = tmp;
        bool stop = w->stop;
        pthread_mutex_unlock(&w->lock);
        alog_write(w, &batch);
        if (stop) break;
        pthread_mutex_lock(&w->lock);
    }
    gg_strbuf_free(&batch);
    return NULL;
}

static void alog_append(access_writer *w, const char *line, size_t len) {
    pthread_mutex_lock(&w->lock);
    if (!w->running) { /* not started (or already stopped): write directly */
        pthread_mutex_unlock(&w->lock);
        gg_strbuf one = GG_STRBUF_INIT;
        gg_strbuf_append(&one, line, len);
        if (!one.oom) alog_write(w, &one);
        gg_strbuf_free(&one);
        return;
    }
    if (w->pending.len + len + 1 > ALOG_MAX_BYTES) {
        atomic_fetch_add_explicit(&w->dropped, 1, memory_order_relaxed);
    } else {
        if (w->pending.len) gg_strbuf_putc(&w->pending, '\n');
        gg_strbuf_append(&w->pending, line, len);
        if (w->pending.oom) { /* keep going with an empty buffer */
            gg_strbuf_free(&w->pending);
            atomic_fetch_add_explicit(&w->dropped, 1, memory_order_relaxed);
        }
        if (w->pending.len >= ALOG_SIGNAL_BYTES) pthread_cond_signal(&w->cond);
    }
    pthread_mutex_unlock(&w->lock);
}

bool gg_http_alog_start(access_writer *w) {
    pthread_mutex_lock(&w->lock);
    w->stop = false;
    w->running = pthread_create(&w->thread, NULL, alog_thread, w) == 0;
    pthread_mutex_unlock(&w->lock);
    return w->running;
}

/* Write everything queued and stop the writer thread. */
void gg_http_alog_stop(access_writer *w) {
    pthread_mutex_lock(&w->lock);
    bool running = w->running;
    w->stop = true;
    w->running = false;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    if (running) pthread_join(w->thread, NULL);
    if (w->pending.len) alog_write(w, &w->pending); /* appended while the thread exited */
}

/* The access line is built without printf or heap (on the request path of every request):
 * a stack buffer sized for the worst case of escaping, a per-connection cache of the
 * timestamp's seconds part, hand-formatted numbers. */
typedef struct line {
    char *p;
    size_t n;
} line;

static void put_mem(line *l, const char *s, size_t n) {
    memcpy(l->p + l->n, s, n);
    l->n += n;
}
#define PUT_LIT(l, s) put_mem((l), (s), sizeof(s) - 1)

/* JSON string escaping: quote, backslash and control characters escaped, other bytes as
 * they are. */
static inline bool needs_escape(unsigned char c) { return c < 0x20 || c == '"' || c == '\\' || c == 0x7f; }

static void put_escaped(line *l, const char *s) {
    static const char hex[] = "0123456789abcdef";
    for (const unsigned char *q = (const unsigned char *)s; *q; q++) {
        const unsigned char *run = q; /* copy runs of plain bytes at once */
        while (*q && !needs_escape(*q)) q++;
        if (q > run) put_mem(l, (const char *)run, (size_t)(q - run));
        if (!*q) break;
        unsigned char c = *q;
        if (c == '"' || c == '\\') {
            l->p[l->n++] = '\\';
            l->p[l->n++] = (char)c;
        } else if (c < 0x20 || c == 0x7f) {
            char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            put_mem(l, u, 6);
        } else {
            l->p[l->n++] = (char)c;
        }
    }
}

static void put_uint(line *l, unsigned long long v, int min_digits) {
    char d[24];
    int k = 0;
    do {
        d[k++] = (char)('0' + v % 10);
        v /= 10;
    } while (v || k < min_digits);
    while (k) l->p[l->n++] = d[--k];
}

/* "YYYY-MM-DDTHH:MM:SS" for sec (20 bytes with the NUL): util's ISO 8601 time without its
 * milliseconds, which each line adds (the seconds are cached per connection). */
static void format_ts_seconds(time_t sec, char out[20]) {
    char full[GG_TIME_ISO_MAX];
    gg_time_iso8601((long long)sec * 1000, full);
    memcpy(out, full, 19);
    out[19] = '\0';
}

void gg_http_access_log(gg_http_req *req, double dur_ms, enum MHD_RequestTerminationCode toe) {
    const char *route = req->match.pattern ? req->match.pattern : "";
    size_t worst = 320 + 6 * (strlen(req->method) + strlen(route) + strlen(req->path) + strlen(req->request_id) +
                              strlen(req->client));
    char stack[4096];
    char *buf = worst <= sizeof stack ? stack : malloc(worst);
    if (!buf) {
        atomic_fetch_add_explicit(&req->srv->alog.dropped, 1, memory_order_relaxed);
        return;
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    conn_ctx *x = req->conn ? gg_http_conn_ctx_of(req->conn) : NULL;
    char tsbuf[20];
    const char *ts = tsbuf;
    if (x) {
        if (x->ts_sec != now.tv_sec || !x->ts_text[0]) {
            format_ts_seconds(now.tv_sec, x->ts_text);
            x->ts_sec = now.tv_sec;
        }
        ts = x->ts_text;
    } else {
        format_ts_seconds(now.tv_sec, tsbuf);
    }
    line l = {buf, 0};
    PUT_LIT(&l, "{\"ts\":\"");
    put_mem(&l, ts, strlen(ts));
    l.p[l.n++] = '.';
    put_uint(&l, (unsigned long long)(now.tv_nsec / 1000000), 3);
    PUT_LIT(&l, "Z\",\"level\":\"info\",\"msg\":\"access\",\"method\":\"");
    put_escaped(&l, req->method);
    PUT_LIT(&l, "\",\"route\":\"");
    put_escaped(&l, route);
    PUT_LIT(&l, "\",\"path\":\"");
    put_escaped(&l, req->path);
    PUT_LIT(&l, "\",\"status\":");
    if (req->status_out < 0) l.p[l.n++] = '-'; /* never expected; keeps the number exact */
    put_uint(&l, (unsigned long long)(req->status_out < 0 ? -(long long)req->status_out : req->status_out), 1);
    PUT_LIT(&l, ",\"bytes\":");
    put_uint(&l, (unsigned long long)req->bytes_out, 1);
    PUT_LIT(&l, ",\"duration_ms\":");
    unsigned long long us = dur_ms > 0 ? (unsigned long long)(dur_ms * 1000.0 + 0.5) : 0;
    put_uint(&l, us / 1000, 1);
    l.p[l.n++] = '.';
    put_uint(&l, us % 1000, 3);
    PUT_LIT(&l, ",\"request_id\":\"");
    put_escaped(&l, req->request_id);
    if (req->listener == GG_LISTENER_INTERNAL) PUT_LIT(&l, "\",\"listener\":\"internal\",\"client\":\"");
    else PUT_LIT(&l, "\",\"listener\":\"public\",\"client\":\"");
    put_escaped(&l, req->client);
    l.p[l.n++] = '"';
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK) PUT_LIT(&l, ",\"aborted\":true");
    l.p[l.n++] = '}';
    alog_append(&req->srv->alog, buf, l.n);
    if (buf != stack) free(buf);
}
