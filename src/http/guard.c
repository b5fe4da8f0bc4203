/* guard.c — what the HTTP layer refuses before a request reaches a route: ambiguous body
 * framing (request smuggling), foreign Host/Origin values on the internal listener (DNS
 * rebinding, a graph calling the gateway through a name), and connections that do not
 * deliver a complete request in time (slowloris).
 *
 * The receive deadline: libmicrohttpd's own timeout is an idle timeout, which a client
 * sending one byte every few seconds never trips. Every connection is tracked from accept
 * to close; a reaper thread shuts down (shutdown(2), so libmicrohttpd closes it on its own
 * thread) each connection that has been waiting for a request's headers and body for longer
 * than the deadline — or, while a listener is nearly full (7/8 of its connections), for
 * longer than a second, so that half-sent requests from many addresses cannot hold every
 * slot for the whole deadline. The list lock is held across shutdown and libmicrohttpd reports a
 * connection closed before it closes the descriptor, so a descriptor is never reused under
 * the reaper. */
#include "http/internal.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

/* ---- framing ------------------------------------------------------------------------------ */

typedef struct framing {
    int cl_count, te_count;
    const char *cl, *te;
    bool cl_conflict, cl_invalid;
} framing;

static bool all_digits(const char *s) {
    if (!*s) return false;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s)) return false;
    return true;
}

/* Names as gg_http_known_header's indices (internal.h's enum, in its order), in lower
 * case and zero-padded to three 8-byte words: only letters and "-" (same_name relies on it). */
#define KNOWN_WORDS 3
static const struct {
    char lower[KNOWN_WORDS * 8];
    size_t len;
} KNOWN[GG_HDR_COUNT] = {
#define K(s) {s, sizeof s - 1}
    K("host"), K("origin"), K("accept"), K("expect"), K("authorization"), K("x-api-key"), K("dpop"),
    K("content-length"), K("x-request-id"), K("mcp-session-id"), K("mcp-protocol-version"), K("mcp-method"),
    K("mcp-name"), K("traceparent"), K("tracestate"), K("graphgate-forwarded-key"), K("transfer-encoding"),
#undef K
};

/* The names of each length, as index + 1 (0 ends a list): a header's length leaves at most
 * three names to compare, and most headers' lengths none. */
#define MAX_KNOWN_LEN 23
static const unsigned char BY_LEN[MAX_KNOWN_LEN + 1][3] = {
    [4] = {GG_HDR_HOST + 1, GG_HDR_DPOP + 1},
    [6] = {GG_HDR_ORIGIN + 1, GG_HDR_ACCEPT + 1, GG_HDR_EXPECT + 1},
    [8] = {GG_HDR_MCP_NAME + 1},
    [9] = {GG_HDR_X_API_KEY + 1},
    [10] = {GG_HDR_MCP_METHOD + 1, GG_HDR_TRACESTATE + 1},
    [11] = {GG_HDR_TRACEPARENT + 1},
    [12] = {GG_HDR_X_REQUEST_ID + 1},
    [13] = {GG_HDR_AUTHORIZATION + 1},
    [14] = {GG_HDR_CONTENT_LENGTH + 1, GG_HDR_MCP_SESSION_ID + 1},
    [17] = {GG_HDR_TRANSFER_ENCODING + 1},
    [20] = {GG_HDR_MCP_PROTOCOL_VERSION + 1},
    [23] = {GG_HDR_FORWARDED_KEY + 1},
};

/* Whether name (its n bytes copied, zero-padded, into w) is the known name k in any case of
 * its letters: a word at a time, w's bytes get 0x20 (lower case) where k has a letter (bit
 * 0x40 set in k: letters are 0x61..0x7a, "-" is 0x2d) and must then equal k's. Only an
 * upper or lower case letter turns into k's letter that way; other bytes compare as they
 * are, so "_" never matches "-". */
static bool same_name(const unsigned char *w, int k, size_t n) {
    for (size_t at = 0; at < n; at += 8) {
        uint64_t x, y;
        memcpy(&x, w + at, 8);
        memcpy(&y, KNOWN[k].lower + at, 8);
        if ((x | ((y & 0x4040404040404040ull) >> 1)) != y) return false;
    }
    return true;
}

/* See internal.h. */
int gg_http_known_header(const char *name, size_t n) {
    if (n > MAX_KNOWN_LEN || !BY_LEN[n][0]) return -1;
    unsigned char w[KNOWN_WORDS * 8] = {0};
    memcpy(w, name, n);
    for (int j = 0; j < 3 && BY_LEN[n][j]; j++)
        if (same_name(w, BY_LEN[n][j] - 1, n)) return BY_LEN[n][j] - 1;
    return -1;
}

typedef struct walk {
    framing f;
    const char **hdr;
} walk;

static enum MHD_Result framing_visit(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
                                     const char *value, size_t value_size) {
    (void)kind, (void)value_size;
    walk *w = cls;
    framing *f = &w->f;
    if (!key) return MHD_YES;
    int k = gg_http_known_header(key, key_size);
    if (k >= 0 && w->hdr && !w->hdr[k]) w->hdr[k] = value ? value : "";
    if (k == GG_HDR_CONTENT_LENGTH) {
        const char *v = value ? value : "";
        if (!all_digits(v)) f->cl_invalid = true;
        else if (f->cl && strcmp(f->cl, v)) f->cl_conflict = true;
        f->cl = v;
        f->cl_count++;
    } else if (k == GG_HDR_TRANSFER_ENCODING) {
        f->te = value ? value : "";
        f->te_count++;
    }
    return MHD_YES;
}

/* "chunked" alone (blanks around it allowed), the only transfer coding we decode. */
static bool te_is_chunked(const char *te) {
    while (*te == ' ' || *te == '\t') te++;
    size_t n = strlen(te);
    while (n && (te[n - 1] == ' ' || te[n - 1] == '\t')) n--;
    return n == 7 && !strncasecmp(te, "chunked", 7);
}

/* 0 when the request's body framing is unambiguous; else 400 (conflict) or 501 (a transfer
 * coding we do not implement) with *msg set. The caller answers and closes. */
int gg_http_framing_check(struct MHD_Connection *conn, const char *hdr[], const char **msg) {
    walk w = {.hdr = hdr};
    MHD_get_connection_values_n(conn, MHD_HEADER_KIND, framing_visit, &w);
    const framing f = w.f;
    if (f.cl_invalid) return *msg = "Content-Length is not a decimal number", 400;
    if (f.cl_conflict) return *msg = "conflicting Content-Length headers", 400;
    if (f.te_count && f.cl_count) return *msg = "Content-Length together with Transfer-Encoding", 400;
    if (f.te_count > 1) return *msg = "more than one Transfer-Encoding header", 400;
    if (f.te_count && !te_is_chunked(f.te)) return *msg = "unsupported transfer coding (only chunked is accepted)", 501;
    return 0;
}

/* ---- internal listener: Host and Origin --------------------------------------------------- */

/* "host[:port]" / "[v6][:port]" → host without brackets or port. */
static void host_only(const char *hostport, char *out, size_t size) {
    const char *h = hostport, *end;
    if (*h == '[') {
        h++;
        end = strchr(h, ']');
        if (!end) end = h + strlen(h);
    } else {
        end = strchr(h, ':');
        if (!end) end = h + strlen(h);
    }
    size_t n = (size_t)(end - h);
    if (n >= size) n = size - 1;
    memcpy(out, h, n);
    out[n] = '\0';
}

static bool is_ip_literal(const char *h) {
    unsigned char b[16];
    return inet_pton(AF_INET, h, b) == 1 || inet_pton(AF_INET6, h, b) == 1;
}

static bool is_loopback_name(const char *h) {
    unsigned char b[16];
    if (!strcasecmp(h, "localhost")) return true;
    if (inet_pton(AF_INET, h, b) == 1) return b[0] == 127;
    return !strcmp(h, "::1");
}

static bool in_list(char *const *l, size_t n, const char *v) {
    for (size_t i = 0; l && i < n; i++)
        if (!strcasecmp(l[i], v)) return true;
    return false;
}

/* A Host the internal listener answers: a loopback name or address, a configured name, and
 * on a non-loopback bind also any IP literal (a client that connected by address is not
 * being rebound through DNS). */
static bool host_ok(const gg_http_guard_cfg *g, const char *hostport) {
    char h[256];
    host_only(hostport, h, sizeof h);
    if (!*h) return false;
    return is_loopback_name(h) || in_list(g->hosts, g->nhosts, hostport) || in_list(g->hosts, g->nhosts, h) ||
           (!g->loopback_bind && is_ip_literal(h));
}

/* true when a request on the internal listener may proceed; else *msg says why (403). */
bool gg_http_internal_host_ok(const gg_http_guard_cfg *g, struct MHD_Connection *conn, const char **msg) {
    const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Host");
    if (!host || !host_ok(g, host)) return *msg = "Host header not allowed on the internal listener", false;
    const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
    if (!origin) return true;
    if (in_list(g->origins, g->norigins, "*") || in_list(g->origins, g->norigins, origin)) return true;
    const char *sep = strstr(origin, "://");
    if (sep && host_ok(g, sep + 3)) return true;
    return *msg = "Origin not allowed on the internal listener", false;
}

/* ---- the receive deadline ----------------------------------------------------------------- */

struct gg_conn_tracker {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    gg_conn_track *head;
    long long timeout_ms;
    int count[2];      /* tracked connections per listener (public, internal) */
    int pressure;      /* from this many on, a listener is nearly full */
    bool stop;
    pthread_t thread;
    atomic_ulong cut;
    void (*tick)(void *);
    void *tick_user;
};

static long long mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#define PRESSURE_DEADLINE_MS 1000

static void reap(gg_conn_tracker *t) {
    long long now = mono_ms(), limit[2];
    for (int l = 0; l < 2; l++)
        limit[l] = t->count[l] >= t->pressure && t->timeout_ms > PRESSURE_DEADLINE_MS ? PRESSURE_DEADLINE_MS
                                                                                      : t->timeout_ms;
    for (gg_conn_track *c = t->head; c; c = c->next) {
        if (c->cut || !atomic_load_explicit(&c->receiving, memory_order_acquire)) continue;
        if (now - atomic_load_explicit(&c->since_ms, memory_order_relaxed) <= limit[c->listener]) continue;
        shutdown(c->fd, SHUT_RDWR);
        c->cut = true;
        atomic_fetch_add_explicit(&t->cut, 1, memory_order_relaxed);
    }
}

static void *reaper(void *arg) {
    gg_conn_tracker *t = arg;
    pthread_mutex_lock(&t->mu);
    while (!t->stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 250 * 1000000L; /* the deadline holds to within a quarter second */
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&t->cv, &t->mu, &until);
        if (t->stop) break;
        reap(t);
        if (t->tick) { /* outside our lock: the tick takes the server's */
            void (*tick)(void *) = t->tick;
            void *user = t->tick_user;
            pthread_mutex_unlock(&t->mu);
            tick(user);
            pthread_mutex_lock(&t->mu);
        }
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

gg_conn_tracker *gg_conn_tracker_start(unsigned timeout_ms, unsigned max_connections) {
    gg_conn_tracker *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    t->timeout_ms = timeout_ms;
    t->pressure = (int)(max_connections - max_connections / 8);
    if (pthread_create(&t->thread, NULL, reaper, t) != 0) {
        pthread_mutex_destroy(&t->mu);
        pthread_cond_destroy(&t->cv);
        free(t);
        return NULL;
    }
    return t;
}

void gg_conn_tracker_set_tick(gg_conn_tracker *t, void (*tick)(void *), void *user) {
    pthread_mutex_lock(&t->mu);
    t->tick = tick;
    t->tick_user = user;
    pthread_mutex_unlock(&t->mu);
}

void gg_conn_tracker_stop(gg_conn_tracker *t) {
    if (!t) return;
    pthread_mutex_lock(&t->mu);
    t->stop = true;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->thread, NULL);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    free(t);
}

unsigned long gg_conn_tracker_cut(const gg_conn_tracker *t) { return t ? atomic_load(&((gg_conn_tracker *)t)->cut) : 0; }

void gg_conn_track_receiving(gg_conn_track *c, bool receiving) {
    if (receiving) atomic_store_explicit(&c->since_ms, mono_ms(), memory_order_relaxed);
    atomic_store_explicit(&c->receiving, receiving, memory_order_release);
}

void gg_conn_track_add(gg_conn_tracker *t, gg_conn_track *c, int fd, bool internal) {
    c->fd = fd;
    c->listener = internal ? 1 : 0;
    c->cut = false;
    gg_conn_track_receiving(c, true);
    pthread_mutex_lock(&t->mu);
    c->prev = NULL;
    c->next = t->head;
    if (t->head) t->head->prev = c;
    t->head = c;
    t->count[c->listener]++;
    pthread_mutex_unlock(&t->mu);
}

void gg_conn_track_remove(gg_conn_tracker *t, gg_conn_track *c) {
    pthread_mutex_lock(&t->mu);
    if (c->prev) c->prev->next = c->next;
    else t->head = c->next;
    if (c->next) c->next->prev = c->prev;
    t->count[c->listener]--;
    pthread_mutex_unlock(&t->mu);
}
