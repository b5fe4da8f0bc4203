/* telemetry.c — W3C trace context, spans and the OTLP/HTTP JSON exporter (see telemetry.h).
 * The queue is a ring of preallocated span slots under one mutex: ending a span copies it in
 * (or counts a drop when the ring is full) and never waits for the exporter, whose thread
 * takes a batch out under the lock and posts it with the lock released. */
#include "telemetry/telemetry.h"

#include <stdatomic.h>
#include <curl/curl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

/* ------------------------------------------------------------------ ids */

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Random bytes from a per-thread generator seeded once from the kernel: ids must be
 * unique, not secret, and a syscall per span would cost more than the span. */
static void random_bytes(uint8_t *out, size_t n) {
    static __thread uint64_t state;
    static __thread bool seeded;
    if (!seeded) {
        if (getrandom(&state, sizeof state, 0) != (ssize_t)sizeof state)
            state = (uint64_t)gg_tel_wall_ns() ^ (uint64_t)(uintptr_t)&state;
        seeded = true;
    }
    for (size_t i = 0; i < n; i += 8) {
        uint64_t v = splitmix(&state);
        for (size_t k = 0; k < 8 && i + k < n; k++) out[i + k] = (uint8_t)(v >> (8 * k));
    }
}

static bool all_zero(const uint8_t *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (b[i]) return false;
    return true;
}

static void new_id(uint8_t *out, size_t n) {
    do random_bytes(out, n);
    while (all_zero(out, n));
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1; /* uppercase is invalid in traceparent */
}

static bool parse_hex(const char *s, uint8_t *out, size_t n) {
    for (size_t i = 0; i < n; i++) {
        int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
        if (hi < 0 || lo < 0) return false;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return true;
}

static void put_hex(char *out, const uint8_t *b, size_t n) {
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = d[b[i] >> 4];
        out[2 * i + 1] = d[b[i] & 15];
    }
    out[2 * n] = 0;
}

/* tracestate: list members are printable ASCII without control characters; anything else
 * (or too long) is dropped whole rather than passed on half. */
static void set_state(gg_trace_ctx *ctx, const char *ts) {
    ctx->state[0] = 0;
    if (!ts) return;
    size_t n = strlen(ts);
    if (n >= sizeof ctx->state) return;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)ts[i] < 0x20 || (unsigned char)ts[i] > 0x7e) return;
    memcpy(ctx->state, ts, n + 1);
}

bool gg_trace_parse(gg_trace_ctx *ctx, const char *tp, const char *ts) {
    memset(ctx, 0, sizeof *ctx);
    if (!tp) return false;
    size_t n = strlen(tp);
    uint8_t ver;
    if (n < GG_TRACEPARENT_LEN || !parse_hex(tp, &ver, 1) || ver == 0xff || tp[2] != '-' || tp[35] != '-' ||
        tp[52] != '-')
        return false;
    if (ver == 0 && n != GG_TRACEPARENT_LEN) return false;
    if (ver != 0 && n > GG_TRACEPARENT_LEN && tp[GG_TRACEPARENT_LEN] != '-') return false;
    if (!parse_hex(tp + 3, ctx->trace_id, 16) || !parse_hex(tp + 36, ctx->span_id, 8) ||
        !parse_hex(tp + 53, &ctx->flags, 1))
        return false;
    if (all_zero(ctx->trace_id, 16) || all_zero(ctx->span_id, 8)) return false;
    ctx->valid = true;
    set_state(ctx, ts);
    return true;
}

void gg_trace_format(const gg_trace_ctx *ctx, char *out) {
    if (!ctx || !ctx->valid) {
        out[0] = 0;
        return;
    }
    memcpy(out, "00-", 3);
    put_hex(out + 3, ctx->trace_id, 16);
    out[35] = '-';
    put_hex(out + 36, ctx->span_id, 8);
    out[52] = '-';
    put_hex(out + 53, &ctx->flags, 1);
}

void gg_trace_id_hex(const gg_trace_ctx *ctx, char *out) {
    if (!ctx || !ctx->valid) out[0] = 0;
    else put_hex(out, ctx->trace_id, 16);
}

/* ------------------------------------------------------------------ clocks */

long long gg_tel_wall_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Runs keep monotonic instants (gg_now_ms); a span wants wall time: shift by how long ago
 * the instant was, so a span measured across suspend and resume keeps its true length. */
long long gg_tel_mono_to_wall_ns(double mono_ms) {
    return gg_tel_wall_ns() - (long long)llround((gg_now_ms() - mono_ms) * 1e6);
}

/* ------------------------------------------------------------------ exporter state */

typedef struct tel {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    bool stop;
    gg_span *ring; /* queue_spans slots */
    size_t cap, head, count;
    gg_span *batch; /* the exporter's own copy of one batch */
    size_t batch_cap;
    int flush_ms, timeout_ms;
    double ratio;
    size_t value_max;
    char *endpoint, *service;
    struct curl_slist *headers;
    unsigned long long ended, exported, dropped, failed;
} tel;

/* Process-wide on purpose (globals.allow): one exporter per process (telemetry.h), started and
 * stopped by the composition root; spans begin in every layer (http, mcp, graph) with no
 * handle to pass, and the named context is this struct, under its mutex. */
static tel T = {.mu = PTHREAD_MUTEX_INITIALIZER};
static _Atomic int tel_on; /* read without the lock on every span */

bool gg_tel_enabled(void) { return atomic_load_explicit(&tel_on, memory_order_acquire) != 0; }
size_t gg_tel_value_max(void) { return gg_tel_enabled() ? T.value_max : 0; }

/* ------------------------------------------------------------------ spans */

void gg_span_begin_at(gg_span *s, const gg_trace_ctx *parent, gg_span_kind kind, const char *name,
                      long long start_ns) {
    s->recording = false;
    if (!gg_tel_enabled()) {
        if (parent && parent->valid) s->ctx = *parent;
        else s->ctx.valid = false;
        return;
    }
    s->has_parent = parent && parent->valid;
    if (s->has_parent) {
        memcpy(s->ctx.trace_id, parent->trace_id, 16);
        memcpy(s->parent, parent->span_id, 8);
        s->ctx.flags = parent->flags;
        memcpy(s->ctx.state, parent->state, sizeof s->ctx.state);
    } else {
        new_id(s->ctx.trace_id, 16);
        uint64_t r;
        random_bytes((uint8_t *)&r, sizeof r);
        s->ctx.flags = (double)(r >> 11) / 9007199254740992.0 < T.ratio ? 1 : 0;
        s->ctx.state[0] = 0;
    }
    new_id(s->ctx.span_id, 8);
    s->ctx.valid = true;
    s->recording = (s->ctx.flags & 1) != 0;
    if (!s->recording) return;
    s->kind = (uint8_t)kind;
    snprintf(s->name, sizeof s->name, "%s", name);
    s->start_ns = start_ns;
    s->end_ns = 0;
    s->status = 0;
    s->status_msg[0] = 0;
    s->attrs_len = 0;
    s->attrs[0] = 0;
}

void gg_span_begin(gg_span *s, const gg_trace_ctx *parent, gg_span_kind kind, const char *name) {
    gg_span_begin_at(s, parent, kind, name, gg_tel_enabled() ? gg_tel_wall_ns() : 0);
}

/* JSON-escape src into dst (room bytes incl. NUL) without cutting a UTF-8 sequence or an
 * escape; returns the bytes written (dst stays NUL-terminated). */
static size_t escape_into(char *dst, size_t room, const char *src, size_t max_src) {
    size_t o = 0;
    if (!room) return 0;
    for (size_t i = 0; src[i] && i < max_src; i++) {
        unsigned char c = (unsigned char)src[i];
        char tmp[8];
        size_t k;
        if (c == '"' || c == '\\') {
            tmp[0] = '\\';
            tmp[1] = (char)c;
            k = 2;
        } else if (c < 0x20) {
            k = (size_t)snprintf(tmp, sizeof tmp, "\\u%04x", c);
        } else {
            /* a whole UTF-8 sequence or nothing */
            k = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
            size_t have = 0;
            while (have < k && src[i + have]) have++;
            if (have < k || i + k > max_src || o + k >= room) break;
            memcpy(dst + o, src + i, k);
            o += k;
            i += k - 1;
            continue;
        }
        if (o + k >= room) break;
        memcpy(dst + o, tmp, k);
        o += k;
    }
    dst[o] = 0;
    return o;
}

/* Append one KeyValue whose value object is `{"<type>":` + rendered + `}`: all or nothing. */
static void attr_put(gg_span *s, const char *key, const char *type, const char *val, bool quote) {
    if (!s->recording) return;
    char buf[GG_SPAN_ATTRS_MAX];
    size_t o = (size_t)snprintf(buf, sizeof buf, "%s{\"key\":\"", s->attrs_len ? "," : "");
    o += escape_into(buf + o, sizeof buf - o, key, 128);
    o += (size_t)snprintf(buf + o, sizeof buf - o, "\",\"value\":{\"%s\":%s", type, quote ? "\"" : "");
    if (o >= sizeof buf) return;
    /* a long value is cut so that the attribute still fits (the tail says it was cut) */
    size_t room = GG_SPAN_ATTRS_MAX - s->attrs_len;
    if (room <= o + 8) return;
    o += escape_into(buf + o, room - o - 5, val, (size_t)-1);
    o += (size_t)snprintf(buf + o, sizeof buf - o, "%s}}", quote ? "\"" : "");
    if (s->attrs_len + o >= GG_SPAN_ATTRS_MAX) return;
    memcpy(s->attrs + s->attrs_len, buf, o + 1);
    s->attrs_len += o;
}

void gg_span_attr_str(gg_span *s, const char *key, const char *value) {
    if (s->recording && value) attr_put(s, key, "stringValue", value, true);
}

void gg_span_attr_int(gg_span *s, const char *key, long long value) {
    if (!s->recording) return;
    char v[24];
    snprintf(v, sizeof v, "%lld", value);
    attr_put(s, key, "intValue", v, true); /* OTLP JSON: int64 as a string */
}

void gg_span_attr_bool(gg_span *s, const char *key, bool value) {
    if (s->recording) attr_put(s, key, "boolValue", value ? "true" : "false", false);
}

void gg_span_set_error(gg_span *s, const char *message) {
    if (!s->recording) return;
    s->status = 2;
    escape_into(s->status_msg, sizeof s->status_msg, message ? message : "error", (size_t)-1);
}

void gg_span_set_ok(gg_span *s) {
    if (s->recording && s->status == 0) s->status = 1;
}

void gg_span_end_at(gg_span *s, long long end_ns) {
    if (!s->recording) return;
    s->recording = false; /* ends once */
    s->end_ns = end_ns < s->start_ns ? s->start_ns : end_ns;
    pthread_mutex_lock(&T.mu);
    if (!atomic_load_explicit(&tel_on, memory_order_acquire)) {
        pthread_mutex_unlock(&T.mu);
        return;
    }
    T.ended++;
    if (T.count == T.cap) {
        T.dropped++;
    } else {
        T.ring[(T.head + T.count) % T.cap] = *s;
        if (++T.count >= T.batch_cap) pthread_cond_signal(&T.cv);
    }
    pthread_mutex_unlock(&T.mu);
}

void gg_span_end(gg_span *s) {
    if (s->recording) gg_span_end_at(s, gg_tel_wall_ns());
}

/* ------------------------------------------------------------------ OTLP JSON encoding */

static void put_span(gg_strbuf *b, const gg_span *s) {
    char tid[33], sid[17], pid[17];
    put_hex(tid, s->ctx.trace_id, 16);
    put_hex(sid, s->ctx.span_id, 8);
    gg_strbuf_printf(b, "{\"traceId\":\"%s\",\"spanId\":\"%s\"", tid, sid);
    if (s->has_parent) {
        put_hex(pid, s->parent, 8);
        gg_strbuf_printf(b, ",\"parentSpanId\":\"%s\"", pid);
    }
    if (s->ctx.state[0]) {
        gg_strbuf_puts(b, ",\"traceState\":\"");
        gg_strbuf_json_escape(b, s->ctx.state, strlen(s->ctx.state));
        gg_strbuf_putc(b, '"');
    }
    gg_strbuf_puts(b, ",\"name\":\"");
    gg_strbuf_json_escape(b, s->name, strlen(s->name));
    gg_strbuf_printf(b, "\",\"kind\":%d,\"startTimeUnixNano\":\"%lld\",\"endTimeUnixNano\":\"%lld\",\"attributes\":[",
                     s->kind, s->start_ns, s->end_ns);
    gg_strbuf_append(b, s->attrs, s->attrs_len);
    gg_strbuf_printf(b, "],\"status\":{\"code\":%d", s->status);
    if (s->status_msg[0]) gg_strbuf_printf(b, ",\"message\":\"%s\"", s->status_msg); /* escaped at set */
    gg_strbuf_puts(b, "}}");
}

static char *encode_batch(const gg_span *spans, size_t n) {
    gg_strbuf b = GG_STRBUF_INIT;
    gg_strbuf_puts(&b, "{\"resourceSpans\":[{\"resource\":{\"attributes\":[{\"key\":\"service.name\",\"value\":{\"stringValue\":\"");
    gg_strbuf_json_escape(&b, T.service, strlen(T.service));
    gg_strbuf_puts(&b, "\"}}]},\"scopeSpans\":[{\"scope\":{\"name\":\"graphgate\"");
#ifdef GG_VERSION
    gg_strbuf_puts(&b, ",\"version\":\"" GG_VERSION "\"");
#endif
    gg_strbuf_puts(&b, "},\"spans\":[");
    for (size_t i = 0; i < n; i++) {
        if (i) gg_strbuf_putc(&b, ',');
        put_span(&b, &spans[i]);
    }
    gg_strbuf_puts(&b, "]}]}]}");
    return gg_strbuf_take(&b);
}

static size_t discard_body(char *p, size_t size, size_t n, void *u) {
    (void)p;
    (void)u;
    return size * n;
}

/* POST one batch; true when the collector answered 2xx. */
static bool post_batch(CURL *curl, const char *body) {
    curl_easy_setopt(curl, CURLOPT_URL, T.endpoint);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, T.headers);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)T.timeout_ms);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, (long)T.timeout_ms);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard_body);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    CURLcode rc = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    if (rc != CURLE_OK || status < 200 || status >= 300) {
        gg_log(GG_LOG_DEBUG, "otlp export failed", "error", rc != CURLE_OK ? curl_easy_strerror(rc) : "http status",
               NULL);
        return false;
    }
    return true;
}

/* Take up to batch_cap spans out of the ring (lock held). */
static size_t take_batch(void) {
    size_t n = T.count < T.batch_cap ? T.count : T.batch_cap;
    for (size_t i = 0; i < n; i++) T.batch[i] = T.ring[(T.head + i) % T.cap];
    T.head = (T.head + n) % T.cap;
    T.count -= n;
    return n;
}

static bool export_batch(CURL *curl, size_t n) {
    char *body = n ? encode_batch(T.batch, n) : NULL;
    bool ok = body && curl && post_batch(curl, body);
    free(body);
    pthread_mutex_lock(&T.mu);
    if (ok) T.exported += n;
    else T.failed += n;
    pthread_mutex_unlock(&T.mu);
    return ok;
}

static void *exporter_main(void *arg) {
    (void)arg;
    CURL *curl = curl_easy_init();
    pthread_mutex_lock(&T.mu);
    for (;;) {
        if (T.count < T.batch_cap && !T.stop) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            long long ns = ts.tv_nsec + (long long)T.flush_ms * 1000000LL;
            ts.tv_sec += ns / 1000000000LL;
            ts.tv_nsec = ns % 1000000000LL;
            pthread_cond_timedwait(&T.cv, &T.mu, &ts);
        }
        bool stopping = T.stop;
        size_t n = take_batch();
        pthread_mutex_unlock(&T.mu);
        bool ok = n && export_batch(curl, n);
        pthread_mutex_lock(&T.mu);
        /* at stop: flush while the collector takes batches, give up at its first failure
         * (a dead collector must not hold the shutdown for a timeout per batch) */
        if (stopping && (T.count == 0 || !ok)) break;
    }
    T.failed += T.count; /* given up at stop */
    T.count = 0;
    pthread_mutex_unlock(&T.mu);
    if (curl) curl_easy_cleanup(curl);
    return NULL;
}

/* ------------------------------------------------------------------ start / stop */

static void tel_free_config(void) {
    free(T.ring);
    free(T.batch);
    free(T.endpoint);
    free(T.service);
    curl_slist_free_all(T.headers);
    T.ring = T.batch = NULL;
    T.endpoint = T.service = NULL;
    T.headers = NULL;
}

bool gg_tel_start(const gg_tel_config *cfg, gg_error *err) {
    if (!cfg || !cfg->enabled) return true;
    if (gg_tel_enabled()) {
        gg_error_set(err, "invalid_config", "telemetry already started");
        return false;
    }
    if (!cfg->endpoint || (strncmp(cfg->endpoint, "http://", 7) != 0 && strncmp(cfg->endpoint, "https://", 8) != 0)) {
        gg_error_set(err, "invalid_config", "telemetry.otlp_endpoint must be an http:// or https:// URL");
        return false;
    }
    if (!(cfg->sampling_ratio >= 0 && cfg->sampling_ratio <= 1)) {
        gg_error_set(err, "invalid_config", "telemetry.sampling_ratio must be between 0 and 1");
        return false;
    }
    T.cap = cfg->queue_spans ? cfg->queue_spans : 2048;
    T.batch_cap = cfg->batch_spans ? cfg->batch_spans : 256;
    if (T.batch_cap > T.cap) T.batch_cap = T.cap;
    T.flush_ms = cfg->flush_ms > 0 ? cfg->flush_ms : 1000;
    T.timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : 5000;
    T.ratio = cfg->sampling_ratio;
    T.value_max = cfg->value_max;
    T.ring = malloc(T.cap * sizeof *T.ring);
    T.batch = malloc(T.batch_cap * sizeof *T.batch);
    T.endpoint = strdup(cfg->endpoint);
    T.service = strdup(cfg->service_name && *cfg->service_name ? cfg->service_name : "graphgate");
    T.headers = curl_slist_append(NULL, "Content-Type: application/json");
    for (size_t i = 0; cfg->headers && cfg->headers[i]; i++) {
        if (!strchr(cfg->headers[i], ':') || strpbrk(cfg->headers[i], "\r\n")) {
            gg_error_set(err, "invalid_config", "telemetry.headers: \"Name: value\" expected");
            tel_free_config();
            return false;
        }
        struct curl_slist *h = curl_slist_append(T.headers, cfg->headers[i]);
        if (h) T.headers = h;
    }
    T.head = T.count = 0;
    T.stop = false;
    T.ended = T.exported = T.dropped = T.failed = 0;
    if (!T.ring || !T.batch || !T.endpoint || !T.service || !T.headers) {
        gg_error_set(err, "oom", "out of memory");
        tel_free_config();
        return false;
    }
    pthread_cond_init(&T.cv, NULL);
    atomic_store_explicit(&tel_on, 1, memory_order_release);
    if (pthread_create(&T.thread, NULL, exporter_main, NULL) != 0) {
        atomic_store_explicit(&tel_on, 0, memory_order_release);
        pthread_cond_destroy(&T.cv);
        tel_free_config();
        gg_error_set(err, "internal_error", "cannot start the telemetry exporter thread");
        return false;
    }
    return true;
}

void gg_tel_stop(void) {
    if (!gg_tel_enabled()) return;
    pthread_mutex_lock(&T.mu);
    atomic_store_explicit(&tel_on, 0, memory_order_release); /* spans ending from now on are not queued */
    T.stop = true;
    pthread_cond_signal(&T.cv);
    pthread_mutex_unlock(&T.mu);
    pthread_join(T.thread, NULL);
    pthread_cond_destroy(&T.cv);
    tel_free_config();
}

void gg_tel_get_stats(gg_tel_stats *s) {
    pthread_mutex_lock(&T.mu);
    *s = (gg_tel_stats){T.ended, T.exported, T.dropped, T.failed, T.count};
    pthread_mutex_unlock(&T.mu);
}

void gg_tel_metrics(gg_strbuf *out) {
    gg_tel_stats s;
    gg_tel_get_stats(&s);
    gg_strbuf_printf(out,
                     "# HELP graphgate_otel_spans_total trace spans by fate (dropped: the export queue was full; "
                     "failed: the collector refused or did not answer)\n"
                     "# TYPE graphgate_otel_spans_total counter\n"
                     "graphgate_otel_spans_total{fate=\"ended\"} %llu\n"
                     "graphgate_otel_spans_total{fate=\"exported\"} %llu\n"
                     "graphgate_otel_spans_total{fate=\"dropped\"} %llu\n"
                     "graphgate_otel_spans_total{fate=\"failed\"} %llu\n"
                     "# HELP graphgate_otel_queued_spans spans waiting for export\n"
                     "# TYPE graphgate_otel_queued_spans gauge\ngraphgate_otel_queued_spans %llu\n",
                     s.ended, s.exported, s.dropped, s.failed, s.queued);
}
