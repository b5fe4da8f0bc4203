/* client_stdio.c — a downstream MCP server run as a child process speaking newline-delimited
 * JSON-RPC on stdin/stdout. One child per client, kept alive and shared by every run. Nobody
 * waits on it: a request is a pending entry finished by the child's reader thread (its
 * reply, or the child's death), or by the event loop (deadline, cancel flag). stderr goes
 * to a ring buffer attached to errors; a crashed child is restarted on the next call once
 * its backoff has passed — until then calls fail at once with the reason.
 * Everything the child sends is bounded (downstream.*, docs/operations.md "Downstream limits"): a stdout
 * line by max_message_bytes (dropped as it streams past it), its parse by max_parse_bytes,
 * stderr by stderr_bytes_per_s (then not read for a while: the child blocks on its own
 * writes), its starts by max_starts_per_minute; it runs at child_nice, with optional rlimits.
 * The child is spawned with an argv and an explicit environment, never through a shell. */
#include "mcp/loop.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RING_SIZE 8192
#define TAIL_BYTES 2000
#define MAX_LINE (64u << 20)   /* what the outbox (lines to the child) may hold */
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
#define STABLE_MS 30000        /* a child up this long before it died starts the backoff over */
#define STDERR_CHUNK 65536     /* one read() of stderr: a flood costs few system calls */
#define STDERR_BURST_S 4       /* stderr's rate is averaged over this many seconds */
#define PEEK_BYTES 256         /* head and tail kept of a line too long to keep whole */
#define START_SLOTS 256        /* server definitions whose starts are remembered */
#define START_WINDOW_MS 60000.0

/* ---- this transport's part of a downstream context (mcp_downstream; config downstream.*) ---
 * Under its mutex: the limits its owner set once (mcp_stdio_set_limits), read as a client
 * starts; the start buckets bound one definition's starts across every client of the context. */

/* Starts of one server definition of one owner, across clients: a graph recompiled again and
 * again (a list_changed storm, uploads) makes a new client, and so a new child, each time, so
 * a per-client backoff alone does not bound how often a definition is started. A token bucket
 * per definition (max_starts_per_minute tokens, refilled over a minute) bounds it; a start
 * without a token fails at once with "backoff". The table is bounded: the slot used longest
 * ago is reused (its history forgotten) when a new definition needs one. */
typedef struct start_slot {
    uint64_t key;             /* 0 = free */
    double tokens, at_ms;     /* tokens at at_ms */
} start_slot;

struct mcp_stdio_shared {
    pthread_mutex_t mu; /* guards l and slot */
    mcp_stdio_limits l;
    start_slot slot[START_SLOTS];
};

mcp_stdio_shared *mcp_stdio_shared_new(void) {
    mcp_stdio_shared *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    pthread_mutex_init(&d->mu, NULL);
    d->l = (mcp_stdio_limits)MCP_STDIO_LIMITS_DEFAULT;
    return d;
}

void mcp_stdio_shared_free(mcp_stdio_shared *d) {
    if (!d) return;
    pthread_mutex_destroy(&d->mu);
    free(d);
}

void mcp_stdio_set_limits(mcp_downstream *ds, const mcp_stdio_limits *l) {
    pthread_mutex_lock(&ds->stdio->mu);
    ds->stdio->l = *l;
    pthread_mutex_unlock(&ds->stdio->mu);
}

static mcp_stdio_limits limits_get(mcp_stdio_shared *d) {
    pthread_mutex_lock(&d->mu);
    mcp_stdio_limits l = d->l;
    pthread_mutex_unlock(&d->mu);
    return l;
}

/* Take a start for key; 0 when allowed, else the ms until one is. */
static double start_take(mcp_stdio_shared *d, uint64_t key, int per_minute) {
    if (per_minute <= 0 || !key) return 0;
    double now = gg_now_ms(), rate = per_minute / START_WINDOW_MS;
    pthread_mutex_lock(&d->mu);
    start_slot *s = NULL, *old = &d->slot[0];
    for (int i = 0; i < START_SLOTS && !s; i++) {
        start_slot *x = &d->slot[i];
        if (x->key == key) s = x;
        else if (!x->key || (old->key && x->at_ms < old->at_ms)) old = x;
    }
    if (!s) *(s = old) = (start_slot){key, per_minute, now};
    double tokens = s->tokens + (now - s->at_ms) * rate;
    if (tokens > per_minute) tokens = per_minute;
    double wait = tokens >= 1 ? 0 : (1 - tokens) / rate;
    s->tokens = tokens >= 1 ? tokens - 1 : tokens;
    s->at_ms = now;
    pthread_mutex_unlock(&d->mu);
    return wait;
}

/* a word and a separator: no two splits of the words hash alike */
static uint64_t fnv_add(uint64_t h, const char *str) { return gg_hash_sep(gg_hash_add(h, str), 0xff); }

/* FNV-1a over the owner and everything that makes the child what it is; 0 without an owner
 * (local runs and tests: no tenant to protect from another). */
static uint64_t start_key(const mcp_server_config *cfg) {
    if (!cfg->owner) return 0;
    uint64_t h = fnv_add(fnv_add(fnv_add(GG_HASH_INIT, cfg->owner), cfg->command), cfg->cwd ? cfg->cwd : "");
    for (const char *const *a = cfg->args; a && *a; a++) h = fnv_add(h, *a);
    h = fnv_add(h, "\x01env");
    for (const char *const *e = cfg->env; e && *e; e++) h = fnv_add(h, *e);
    return h ? h : 1;
}

/* One request: queued until the child is initialized, then in flight until its reply,
 * the child's death, its deadline or its cancel flag finishes it. Whoever unlinks it from
 * the client's lists (under mu) finishes it. */
typedef struct sreq {
    mcp_pending p;            /* first: the loop's view */
    struct stdio_client *c;
    json_int_t id;
    int generation;           /* child it was sent to (0 = not sent yet) */
    char *line;               /* the serialized request, newline-terminated */
    size_t len;
    bool init;                /* the initialize of a new child, not a caller's request */
    bool relaying;            /* a call with its own relay (stdio_start_relay): relay is set */
    mcp_call_relay relay;
    int busy;                 /* the reader is in relay.fn / relay.notify (under mu; expire waits) */
    struct sreq *next;
} sreq;

typedef struct stdio_client {
    char *name, *command, *cwd;
    char *owner;              /* the tenant its answers are charged to (mcp_loop_hold); NULL = none */
    char **argv, **envp;
    int timeout_ms;
    const mcp_client_policy *policy;
    mcp_loop *loop;

    pthread_mutex_t mu;       /* guards everything below */
    mcp_client_hooks hooks;   /* the caller's handlers, the capabilities initialize declares (loop.h) */
    json_t *server_caps;      /* what the child's last initialize answer declared (NULL: none yet) */
    int replies;              /* replies on_request owes (each also one of nreqs) */
    pthread_cond_t cv;        /* the reader ended */
    pthread_mutex_t write_mu; /* guards outbox: one writer at a time on stdin */
    gg_strbuf outbox;         /* what the child's stdin did not take yet (its reader drains it) */
    int wake[2];              /* a byte here tells the reader the outbox has data */
    pid_t pid;
    int in_fd;                /* the child's stdin (its stdout and stderr belong to its reader) */
    int readers;              /* reader threads still running (detached) */
    int nreqs;                /* requests not yet destroyed (the loop may hold some) */
    bool alive, ready, starting, closing;
    int generation;           /* bumps with each child */
    int exit_status;
    sreq *sent;               /* in flight */
    sreq *queued;             /* waiting for the child's initialize */
    json_int_t next_id;
    char ring[RING_SIZE];
    size_t ring_pos, ring_len;
    int starts, failures;
    double died_ms;           /* when the last child was seen dead (backoff counts from it) */
    double started_ms;        /* when the last child was spawned */
    mcp_stdio_limits lim;     /* copied at creation */
    uint64_t start_key;       /* its slot in ds's start buckets (0 = not counted) */
    mcp_stdio_shared *ds;     /* its downstream context's part */
    unsigned long long stderr_paused; /* times its stderr was paused (the first is logged) */
} stdio_client;

static void ring_put(stdio_client *c, const char *b, size_t n) {
    if (n > RING_SIZE) b += n - RING_SIZE, n = RING_SIZE; /* the rest would be overwritten */
    for (size_t i = 0; i < n; i++) {
        c->ring[c->ring_pos] = b[i];
        c->ring_pos = (c->ring_pos + 1) % RING_SIZE;
        if (c->ring_len < RING_SIZE) c->ring_len++;
    }
}

/* Last `max` bytes of stderr; caller holds mu. */
static char *ring_tail_locked(stdio_client *c, size_t max) {
    size_t n = c->ring_len < max ? c->ring_len : max;
    char *out = malloc(n + 1);
    if (!out) return NULL;
    size_t start = (c->ring_pos + RING_SIZE - n) % RING_SIZE;
    for (size_t i = 0; i < n; i++) out[i] = c->ring[(start + i) % RING_SIZE];
    out[n] = '\0';
    return out;
}

static char *stdio_stderr_tail(void *impl) {
    stdio_client *c = impl;
    pthread_mutex_lock(&c->mu);
    char *t = ring_tail_locked(c, RING_SIZE);
    pthread_mutex_unlock(&c->mu);
    return t;
}

static int stdio_start_count(void *impl) {
    stdio_client *c = impl;
    pthread_mutex_lock(&c->mu);
    int n = c->starts;
    pthread_mutex_unlock(&c->mu);
    return n;
}

/* ---- writing ------------------------------------------------------------------------------ */

/* Write what the child's stdin takes now, without waiting; the rest stays in the outbox
 * (caller holds write_mu). */
static void outbox_flush(stdio_client *c, int fd) {
    size_t off = 0;
    while (off < c->outbox.len) {
        ssize_t w = send(fd, c->outbox.data + off, c->outbox.len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) off += (size_t)w;
        else if (w < 0 && errno == EINTR) continue;
        else break; /* full (the reader waits for room) or gone (its death ends the requests) */
    }
    memmove(c->outbox.data, c->outbox.data + off, c->outbox.len - off);
    c->outbox.len -= off;
}

/* Queue one line for the child of generation gen and write what fits now. Never waits: a
 * child that does not read its input only grows its outbox, up to MAX_LINE, past which
 * writes fail (false also when the child is gone). */
static bool send_line(stdio_client *c, int gen, const char *line, size_t len, double deadline_ms) {
    (void)deadline_ms;
    pthread_mutex_lock(&c->write_mu);
    pthread_mutex_lock(&c->mu);
    int fd = c->alive && c->generation == gen ? c->in_fd : -1;
    pthread_mutex_unlock(&c->mu);
    bool ok = fd >= 0 && c->outbox.len + len <= MAX_LINE;
    if (ok) {
        bool was_empty = c->outbox.len == 0;
        gg_strbuf_append(&c->outbox, line, len);
        ok = !c->outbox.oom;
        if (ok) outbox_flush(c, fd);
        if (ok && c->outbox.len && was_empty) { /* the reader polls for room from now on */
            char one = 1;
            if (write(c->wake[1], &one, 1) < 0) {} /* full pipe: the reader is awake anyway */
        }
    }
    pthread_mutex_unlock(&c->write_mu);
    return ok;
}

static bool send_message(stdio_client *c, int gen, json_t *msg, double deadline_ms) {
    char *s = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
    if (!s) return false;
    size_t n = strlen(s);
    s[n] = '\n'; /* replaces the NUL; length is tracked */
    bool ok = send_line(c, gen, s, n + 1, deadline_ms);
    free(s);
    return ok;
}

static void send_cancel(stdio_client *c, int gen, json_int_t id, const char *reason) {
    json_t *note = json_pack("{s:s, s:s, s:{s:I, s:s}}", "jsonrpc", "2.0", "method", "notifications/cancelled", "params",
                             "requestId", (json_int_t)id, "reason", reason);
    send_message(c, gen, note, gg_now_ms() + 50); /* best effort: never hold the loop long */
    json_decref(note);
}

/* ---- requests ----------------------------------------------------------------------------- */

static bool unlink_from(sreq **list, sreq *r) {
    for (sreq **pp = list; *pp; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            r->next = NULL;
            return true;
        }
    return false;
}

static sreq *find_sent(stdio_client *c, json_int_t id, int gen) {
    for (sreq **pp = &c->sent; *pp; pp = &(*pp)->next)
        if ((*pp)->id == id && (*pp)->generation == gen) {
            sreq *r = *pp;
            *pp = r->next;
            r->next = NULL;
            return r;
        }
    return NULL;
}

static void fail(sreq *r, const char *code, const char *msg) {
    gg_error e = GG_ERROR_INIT;
    gg_error_set(&e, code, "%s", msg);
    mcp_pending_finish(r->c->loop, &r->p, NULL, &e);
    gg_error_clear(&e);
}

/* Finish every request of a list with the same error. */
static void fail_all(sreq *list, const char *code, const char *msg) {
    while (list) {
        sreq *next = list->next;
        list->next = NULL;
        fail(list, code, msg);
        list = next;
    }
}

static void finish_reply(sreq *r, json_t *msg) {
    gg_error e = GG_ERROR_INIT;
    json_t *err = json_object_get(msg, "error"), *result = json_object_get(msg, "result");
    if (err) {
        const char *m = json_string_value(json_object_get(err, "message"));
        gg_error_set(&e, "mcp_error", "MCP error %lld: %s", (long long)json_integer_value(json_object_get(err, "code")),
                     m ? m : "unknown error");
    } else if (!result) {
        gg_error_set(&e, "mcp_error", "MCP server '%s' sent a response without a result", r->c->name);
    }
    mcp_pending_finish(r->c->loop, &r->p, gg_error_is_set(&e) ? NULL : result, &e);
    gg_error_clear(&e);
}

static void noop_done(void *user, json_t *result, gg_error *err) { (void)user, (void)result, (void)err; }

/* The child answered initialize: send notifications/initialized and the queued requests, or
 * (an error answer) fail them and stop the child. */
static void init_replied(stdio_client *c, sreq *init, json_t *msg, int gen) {
    json_t *err = json_object_get(msg, "error");
    char emsg[512] = "";
    if (err || !json_object_get(msg, "result")) {
        const char *m = json_string_value(json_object_get(err, "message"));
        snprintf(emsg, sizeof emsg, "MCP server '%s' refused initialize: %s", c->name, m ? m : "no result");
    } else {
        json_t *note = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", "notifications/initialized");
        if (!send_message(c, gen, note, gg_now_ms() + c->timeout_ms))
            snprintf(emsg, sizeof emsg, "cannot write to MCP server '%s'", c->name);
        json_decref(note);
    }
    /* copied outside the lock (it may be large); a new child may declare otherwise */
    json_t *caps = emsg[0] ? NULL : json_object_get(json_object_get(msg, "result"), "capabilities");
    caps = emsg[0] ? NULL : json_is_object(caps) ? gg_json_clone(caps) : json_object();
    pthread_mutex_lock(&c->mu);
    if (caps) {
        json_decref(c->server_caps);
        c->server_caps = caps;
    }
    sreq *q = c->queued;
    c->queued = NULL;
    c->starting = false;
    bool ok = !emsg[0] && c->alive && c->generation == gen;
    /* the lines go out after mu is let go, when the list may change (a deadline or cancel
     * flag finishes a request): each is held by a reference meanwhile */
    size_t n = 0;
    for (sreq *r = q; r; r = r->next) n++;
    sreq **out = ok && n ? malloc(n * sizeof *out) : NULL;
    if (ok && n && !out) ok = false, snprintf(emsg, sizeof emsg, "out of memory");
    if (ok) {
        c->ready = true;
        n = 0;
        for (sreq *r = q; r; r = r->next) {
            r->generation = gen;
            mcp_pending_ref(&r->p);
            out[n++] = r;
        }
        /* in order, ahead of anything sent later */
        sreq **tail = &q;
        while (*tail) tail = &(*tail)->next;
        *tail = c->sent;
        c->sent = q;
    } else if (c->alive && c->generation == gen) {
        kill(-c->pid, SIGKILL);
    }
    pthread_mutex_unlock(&c->mu);
    mcp_pending_finish(c->loop, &init->p, NULL, NULL);
    if (!ok) {
        fail_all(q, "transport", emsg[0] ? emsg : "MCP server exited during initialize");
        return;
    }
    /* a line that cannot be written means the child is gone: its death fails the rest */
    bool sending = true;
    for (size_t i = 0; i < n; i++) {
        if (sending) sending = send_line(c, gen, out[i]->line, out[i]->len, out[i]->p.deadline);
        mcp_pending_unref(&out[i]->p);
    }
    free(out);
}

/* ---- reading the child's messages --------------------------------------------------------- */

/* The id of the request a message answers, from the bytes kept of a message too long or too
 * costly to parse: the member "id" of the top-level object in its head, or its last member in
 * its tail (servers that write the id last). *note: the head names a method (a notification:
 * there is nobody to tell). */
static bool head_id(const char *p, size_t n, json_int_t *id, bool *note) {
    int depth = 0;
    bool in_str = false, esc = false;
    size_t ks = 0, ke = 0; /* the last string closed: a key when ':' follows it */
    for (size_t i = 0; i < n; i++) {
        char ch = p[i];
        if (in_str) {
            if (esc) esc = false;
            else if (ch == '\\') esc = true;
            else if (ch == '"') in_str = false, ke = i;
            continue;
        }
        if (ch == '"') in_str = true, ks = i + 1;
        else if (ch == '{' || ch == '[') depth++;
        else if (ch == '}' || ch == ']') depth--;
        else if (ch == ':' && depth == 1 && ke >= ks) {
            if (ke - ks == 6 && !memcmp(p + ks, "method", 6)) *note = true;
            if (ke - ks == 2 && !memcmp(p + ks, "id", 2)) {
                char num[24];
                size_t k = 0, j = i + 1;
                while (j < n && (p[j] == ' ' || p[j] == '\t')) j++;
                while (j < n && k < sizeof num - 1 && (p[j] == '-' || (p[j] >= '0' && p[j] <= '9'))) num[k++] = p[j++];
                num[k] = '\0';
                if (k && j < n) return *id = strtoll(num, NULL, 10), true;
            }
        }
    }
    return false;
}

static bool tail_id(const char *p, size_t n, json_int_t *id) {
    size_t e = n;
    while (e > 0 && (p[e - 1] == ' ' || p[e - 1] == '\t' || p[e - 1] == '\r')) e--;
    if (!e || p[--e] != '}') return false;
    while (e > 0 && (p[e - 1] == ' ' || p[e - 1] == '\t')) e--;
    size_t d = e;
    while (d > 0 && p[d - 1] >= '0' && p[d - 1] <= '9') d--;
    if (d == e) return false;
    size_t s = d > 0 && p[d - 1] == '-' ? d - 1 : d, k = s;
    while (k > 0 && (p[k - 1] == ' ' || p[k - 1] == '\t')) k--;
    if (k < 5 || memcmp(p + k - 5, "\"id\":", 5)) return false;
    *id = strtoll(p + s, NULL, 10);
    return true;
}

/* The message with this id (when has_id) was dropped for why: its request fails, or a warning
 * is logged when nobody waits for it. */
static void drop_answer(stdio_client *c, int gen, bool has_id, json_int_t id, const char *why) {
    pthread_mutex_lock(&c->mu);
    sreq *r = has_id ? find_sent(c, id, gen) : NULL;
    pthread_mutex_unlock(&c->mu);
    char m[600];
    snprintf(m, sizeof m, "MCP server '%s' sent a message that was dropped: %s", c->name, why);
    if (!r) {
        gg_log(GG_LOG_WARN, "a downstream server's message was dropped", "server", c->name, "reason", why, NULL);
    } else if (r->init) {
        json_t *msg = json_pack("{s:{s:s}}", "error", "message", m);
        init_replied(c, r, msg, gen); /* a NULL msg (OOM) reads as a refusal too */
        json_decref(msg);
    } else {
        fail(r, "transport", m);
    }
}

/* A message that cannot be used (longer than max_message_bytes, costlier to parse than
 * max_parse_bytes, or not JSON): the request it answered, when its id is in the bytes kept,
 * fails with why; otherwise (a notification, an answer nobody waits for) it is dropped with a
 * warning. A refused initialize answer stops the child like any refused initialize. */
static void drop_message(stdio_client *c, int gen, const char *head, size_t hn, const char *tail, size_t tn,
                         const char *why) {
    json_int_t id = 0;
    bool note = false;
    bool has = head_id(head, hn, &id, &note) || (!note && tail_id(tail, tn, &id));
    drop_answer(c, gen, has && !note, id, why);
}

/* A line looks like a JSON-RPC message (worth a warning when dropped) rather than a banner. */
static bool looks_like_json(const char *p, size_t n) {
    size_t i = 0;
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r')) i++;
    return i < n && (p[i] == '{' || p[i] == '[');
}

static void dispatch(stdio_client *c, json_t *msg, int gen);

/* One line of stdout: parsed under max_parse_bytes, and what the parsed message holds charged
 * to the owner's in-flight bytes (tenants.max_downstream_bytes) until it was handed over. */
static void handle_line(stdio_client *c, char *line, size_t len, int gen) {
    gg_error e = GG_ERROR_INIT;
    size_t held = 0;
    json_t *msg = mcp_wire_parse(line, len, c->lim.max_parse_bytes, &held, &e);
    if (msg && json_is_object(msg) && !mcp_loop_hold(c->loop, c->owner, held, &e)) {
        json_t *id = json_object_get(msg, "id");
        drop_answer(c, gen, json_is_integer(id), json_integer_value(id), e.message);
        gg_error_clear(&e);
        json_decref(msg);
        return;
    }
    if (!msg || !json_is_object(msg)) {
        /* not JSON-RPC: servers sometimes print banners on stdout; a message that fails the
         * parse's budget (or is broken) still ends the call it answered */
        if (looks_like_json(line, len))
            drop_message(c, gen, line, len < PEEK_BYTES ? len : PEEK_BYTES, line + (len > PEEK_BYTES ? len - PEEK_BYTES : 0),
                         len < PEEK_BYTES ? len : PEEK_BYTES, msg ? "not a JSON-RPC object" : e.message);
        gg_error_clear(&e);
        json_decref(msg);
        return;
    }
    dispatch(c, msg, gen);
    json_decref(msg);
    mcp_loop_unhold(c->loop, c->owner, held);
}

/* A reply the request handler owes (mcp_client_set_request_handler); any thread. */
#define STDIO_REPLIES_MAX 16
typedef struct stdio_reply {
    mcp_client_reply base;
    stdio_client *c;
    json_t *id;
    int gen; /* the child that asked: a reply to a dead one is dropped */
} stdio_reply;

static void stdio_reply_send(mcp_client_reply *base, json_t *result, int code, const char *message) {
    stdio_reply *rp = (stdio_reply *)base;
    stdio_client *c = rp->c;
    json_t *a = mcp_client_reply_message(rp->id, result, code, message);
    send_message(c, rp->gen, a, gg_now_ms() + 1000);
    json_decref(a);
    json_decref(rp->id);
    free(rp);
    pthread_mutex_lock(&c->mu);
    c->replies--;
    c->nreqs--; /* destroy waits for replies owed */
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* ---- a child's messages that name no call --------------------------------------------------
 * A child's requests (elicitation/create, sampling/createMessage, roots/list) and its
 * notifications/message carry no id of the call they belong to: JSON-RPC over one pipe has
 * no per-call stream. When exactly one relaying call (stdio_start_relay) is in flight on the
 * child, nothing else can have caused them: they go to that call's relay. With several, any
 * pick could hand one caller's question or log line (a user's data) to another caller, so a
 * request is refused (-32601, saying why) and a log message dropped; with none, the request
 * goes to the client-wide handler (refused: no call) as before. notifications/progress names
 * its call: its progressToken is the call's request id (sreq_new), matched as a reply is. The
 * look-ups walk c->sent, the child's requests in flight, as every reply's does. */

/* The one relaying call in flight on child gen, or NULL (*several: more than one). Under mu. */
static sreq *sole_relaying(stdio_client *c, int gen, bool *several) {
    sreq *one = NULL;
    *several = false;
    for (sreq *r = c->sent; r; r = r->next)
        if (r->relaying && r->generation == gen) {
            if (one) {
                *several = true;
                return NULL;
            }
            one = r;
        }
    return one;
}

/* The relaying call progressToken names on child gen, or NULL. Under mu. */
static sreq *token_call(stdio_client *c, json_t *params, int gen) {
    json_t *tok = json_object_get(params, "progressToken");
    if (!json_is_integer(tok)) return NULL;
    for (sreq *r = c->sent; r; r = r->next)
        if (r->relaying && r->generation == gen && r->id == json_integer_value(tok)) return r;
    return NULL;
}

/* Hold r for a call into its relay outside mu (sreq_expire waits until it is let go). */
static void relay_hold(sreq *r) { r->busy++; }
static void relay_let_go(stdio_client *c, sreq *r) {
    pthread_mutex_lock(&c->mu);
    r->busy--;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* A notification for a relaying call's relay: progress by its token, a log message when one
 * call is in flight (see above). */
static void relay_notification(stdio_client *c, const char *method, json_t *params, int gen) {
    bool progress = !strcmp(method, "notifications/progress"), several;
    if (!progress && strcmp(method, "notifications/message")) return;
    pthread_mutex_lock(&c->mu);
    sreq *r = progress ? token_call(c, params, gen) : sole_relaying(c, gen, &several);
    if (r && !r->relay.notify) r = NULL;
    if (r) relay_hold(r);
    pthread_mutex_unlock(&c->mu);
    if (!r) return;
    r->relay.notify(r->relay.user, method, params);
    relay_let_go(c, r);
}

/* A request from the server: to the one relaying call's relay, else to the request handler
 * (a ping, or past STDIO_REPLIES_MAX owed, or without one: answered here, ping -> {}, the
 * rest -32601). */
static void server_request(stdio_client *c, json_t *id, const char *method, json_t *params, int gen) {
    pthread_mutex_lock(&c->mu);
    mcp_client_server_request_fn fn = c->hooks.on_request;
    void *u = c->hooks.request_user;
    bool several = false;
    sreq *call = method && strcmp(method, "ping") ? sole_relaying(c, gen, &several) : NULL;
    if (call) fn = call->relay.fn, u = call->relay.user;
    stdio_reply *rp = NULL;
    if (fn && !several && method && strcmp(method, "ping") && c->replies < STDIO_REPLIES_MAX &&
        (rp = calloc(1, sizeof *rp)))
        c->replies++, c->nreqs++;
    if (rp && call) relay_hold(call);
    pthread_mutex_unlock(&c->mu);
    if (!rp) {
        json_t *resp = several ? mcp_client_reply_message(id, NULL, MCP_METHOD_NOT_FOUND,
                                                          "Method not found: several calls are in flight on this "
                                                          "server's process, and its request names none of them")
                               : mcp_client_answer_server_request(id, method);
        send_message(c, gen, resp, gg_now_ms() + 1000);
        json_decref(resp);
        return;
    }
    rp->base.send = stdio_reply_send;
    rp->c = c;
    rp->id = json_incref(id);
    rp->gen = gen;
    fn(u, method, params, &rp->base);
    if (call) relay_let_go(c, call);
}

/* A JSON-RPC message from the child (borrowed). */
static void dispatch(stdio_client *c, json_t *msg, int gen) {
    json_t *id = json_object_get(msg, "id");
    json_t *method = json_object_get(msg, "method");
    if (method && id) { /* a request from the server */
        server_request(c, id, json_string_value(method), json_object_get(msg, "params"), gen);
        return;
    }
    if (!id && json_is_string(method)) { /* a notification: list_changed for the catalog */
        pthread_mutex_lock(&c->mu);
        mcp_client_notify_fn fn = c->hooks.notify;
        void *user = c->hooks.notify_user;
        pthread_mutex_unlock(&c->mu);
        if (fn) fn(user, json_string_value(method), json_object_get(msg, "params"));
        relay_notification(c, json_string_value(method), json_object_get(msg, "params"), gen);
    }
    if (!id || !json_is_integer(id)) return;
    pthread_mutex_lock(&c->mu);
    sreq *r = find_sent(c, json_integer_value(id), gen);
    pthread_mutex_unlock(&c->mu);
    if (r && r->init) init_replied(c, r, msg, gen);
    else if (r) finish_reply(r, msg);
}

/* Reap the child after its stdout closed: a grace period, then the whole process group is
 * killed (npx and similar launchers leave grandchildren). */
static int reap(pid_t pid) {
    int status = 0;
    for (int i = 0; i < 50; i++) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid || (r < 0 && errno != EINTR)) return status;
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    return status;
}

typedef struct reader_arg {
    stdio_client *c;
    int in_fd, out_fd, err_fd, gen;
    pid_t pid;
} reader_arg;

/* stderr is read in large chunks and only its tail kept; a child writing more than
 * stderr_bytes_per_s (averaged over STDERR_BURST_S seconds) is not read for a while: its pipe
 * fills and the child blocks on its own writes, costing the gateway nothing until the
 * average is back under the bound. */
typedef struct err_gate {
    double tokens, at_ms;     /* bytes it may send, as of at_ms */
    double paused_until;      /* not read before (monotonic ms; 0 = not paused) */
} err_gate;

static void err_gate_refill(const stdio_client *c, err_gate *g, double now) {
    double rate = (double)c->lim.stderr_bytes_per_s, burst = rate * STDERR_BURST_S;
    g->tokens += (now - g->at_ms) * rate / 1000;
    if (g->tokens > burst) g->tokens = burst;
    g->at_ms = now;
    if (g->paused_until && now >= g->paused_until) g->paused_until = 0;
}

static void ring_read(stdio_client *c, int fd, bool *open, err_gate *g) {
    char eb[STDERR_CHUNK]; /* on the reader's stack (the default thread stack is megabytes) */
    ssize_t n = read(fd, eb, sizeof eb);
    if (n > 0) {
        pthread_mutex_lock(&c->mu);
        ring_put(c, eb, (size_t)n);
        bool first_pause = false;
        if (g && c->lim.stderr_bytes_per_s) {
            g->tokens -= (double)n;
            if (g->tokens < 0) { /* over the bound: wait until the average is back under it */
                g->paused_until = gg_now_ms() + -g->tokens * 1000 / (double)c->lim.stderr_bytes_per_s;
                first_pause = c->stderr_paused++ == 0;
            }
        }
        pthread_mutex_unlock(&c->mu);
        if (first_pause) /* once per client: a flood would otherwise flood the log instead */
            gg_log(GG_LOG_WARN, "a downstream child writes stderr too fast: it is read no faster than "
                   "downstream.stderr_bytes_per_s (the child waits)", "server", c->name, NULL);
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        *open = false;
    }
}

/* The child's stdout, cut into lines. A line longer than max_message_bytes is never held
 * whole: past the bound its bytes are dropped as they come (only PEEK_BYTES of its head and
 * tail are kept, to find the request it answered) until the next newline. */
typedef struct line_buf {
    char *buf;
    size_t len, cap, max;
    size_t skipped;           /* > 0: inside a line too long, this many bytes dropped so far */
    size_t held;              /* bytes of the partial line charged to the owner (mcp_loop_hold) */
    char refused[200];        /* why the line is dropped when the owner's bound refused it */
    char head[PEEK_BYTES], tail[PEEK_BYTES];
    size_t head_len, tail_len;
} line_buf;

static void keep_tail(line_buf *b, const char *p, size_t n) {
    if (n >= PEEK_BYTES) {
        memcpy(b->tail, p + n - PEEK_BYTES, PEEK_BYTES);
        b->tail_len = PEEK_BYTES;
        return;
    }
    size_t keep = b->tail_len + n > PEEK_BYTES ? PEEK_BYTES - n : b->tail_len;
    memmove(b->tail, b->tail + b->tail_len - keep, keep);
    memcpy(b->tail + keep, p, n);
    b->tail_len = keep + n;
}

static void skip_bytes(line_buf *b, const char *p, size_t n) {
    if (!b->skipped) {
        b->head_len = n < PEEK_BYTES ? n : PEEK_BYTES;
        memcpy(b->head, p, b->head_len);
        b->tail_len = 0;
    } else if (b->head_len < PEEK_BYTES) {
        size_t more = n < PEEK_BYTES - b->head_len ? n : PEEK_BYTES - b->head_len;
        memcpy(b->head + b->head_len, p, more);
        b->head_len += more;
    }
    keep_tail(b, p, n);
    b->skipped += n;
}

static void line_too_long(stdio_client *c, line_buf *b, int gen) {
    char why[200];
    if (b->refused[0]) snprintf(why, sizeof why, "%s", b->refused);
    else snprintf(why, sizeof why, "it was longer than %zu bytes (downstream.max_message_bytes; %zu bytes)", b->max,
                  b->skipped);
    drop_message(c, gen, b->head, b->head_len, b->tail, b->tail_len, why);
    b->skipped = 0;
    b->refused[0] = '\0';
}

/* The partial line waits across reads: it is charged to the owner meanwhile. Past the
 * owner's bound it is dropped like a line too long, saying so. */
static void lines_charge(stdio_client *c, line_buf *b) {
    if (b->len < b->held) {
        mcp_loop_unhold(c->loop, c->owner, b->held - b->len);
        b->held = b->len;
        return;
    }
    gg_error e = GG_ERROR_INIT;
    if (b->len == b->held || mcp_loop_hold(c->loop, c->owner, b->len - b->held, &e)) {
        b->held = b->len;
        return;
    }
    snprintf(b->refused, sizeof b->refused, "%s", e.message);
    gg_error_clear(&e);
    skip_bytes(b, b->buf, b->len);
    b->len = 0;
    lines_charge(c, b); /* gives back what the line held */
}

/* Take the n bytes just read at buf + len: whole lines are handled, the rest kept (or
 * dropped, past the bound). */
static void lines_feed(stdio_client *c, line_buf *b, size_t n, int gen) {
    size_t start = 0, end = b->len + n;
    for (size_t i = b->len; i < end; i++) {
        if (b->buf[i] != '\n') continue;
        if (b->skipped || i - start > b->max) {
            skip_bytes(b, b->buf + start, i - start);
            line_too_long(c, b, gen);
        } else {
            handle_line(c, b->buf + start, i - start, gen);
        }
        start = i + 1;
    }
    b->len = end - start;
    if (b->skipped || b->len > b->max) { /* inside a line too long: keep nothing of it */
        skip_bytes(b, b->buf + start, b->len);
        b->len = 0;
    } else {
        memmove(b->buf, b->buf + start, b->len);
    }
    lines_charge(c, b);
    if (b->cap > (1u << 20) && b->len < 65536) { /* a big line went by: give its room back */
        char *nb = realloc(b->buf, 131072);
        if (nb) b->buf = nb, b->cap = 131072;
    }
}

/* Room for the next read: false when out of memory. */
static bool lines_room(line_buf *b) {
    if (b->cap - b->len >= 65536) return true;
    size_t nc = b->cap ? b->cap * 2 : 131072;
    if (nc > b->max + 65536) nc = b->max + 65536; /* len <= max between reads */
    if (nc <= b->cap) return b->cap > b->len;
    char *nb = realloc(b->buf, nc);
    if (!nb) return false;
    b->buf = nb;
    b->cap = nc;
    return true;
}

/* Read stdout lines until EOF; false when out of memory. */
static bool read_lines(stdio_client *c, const reader_arg *a, bool *err_open) {
    line_buf b = {.max = c->lim.max_message_bytes};
    err_gate g = {.tokens = (double)c->lim.stderr_bytes_per_s * STDERR_BURST_S, .at_ms = gg_now_ms()};
    bool ok = true;
    for (;;) {
        pthread_mutex_lock(&c->write_mu);
        bool pending_out = c->outbox.len > 0;
        pthread_mutex_unlock(&c->write_mu);
        err_gate_refill(c, &g, gg_now_ms());
        bool err_read = *err_open && !g.paused_until;
        int wait_ms = g.paused_until ? (int)(g.paused_until - g.at_ms) + 1 : 1000;
        struct pollfd fds[4] = {{a->out_fd, POLLIN, 0}, {err_read ? a->err_fd : -1, POLLIN, 0},
                                {c->wake[0], POLLIN, 0}, {pending_out ? a->in_fd : -1, POLLOUT, 0}};
        int rc = poll(fds, 4, wait_ms < 1000 ? wait_ms : 1000);
        if (rc < 0 && errno == EINTR) continue;
        if (rc < 0) break;
        if (fds[2].revents & POLLIN) {
            char drain[64];
            while (read(c->wake[0], drain, sizeof drain) > 0) {}
        }
        if (fds[3].revents & (POLLOUT | POLLERR | POLLHUP)) { /* room on the child's stdin */
            pthread_mutex_lock(&c->write_mu);
            outbox_flush(c, a->in_fd);
            pthread_mutex_unlock(&c->write_mu);
        }
        if (err_read && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) ring_read(c, a->err_fd, err_open, &g);
        if (!(fds[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        if (!lines_room(&b)) {
            ok = false;
            break;
        }
        ssize_t n = read(a->out_fd, b.buf + b.len, b.cap - b.len);
        if (n == 0) break;
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            break;
        }
        lines_feed(c, &b, (size_t)n, a->gen);
    }
    mcp_loop_unhold(c->loop, c->owner, b.held);
    free(b.buf);
    return ok;
}

/* The child's death message for its requests (caller holds mu). */
static void death_message(stdio_client *c, char *out, size_t size) {
    char m[256];
    int st = c->exit_status;
    if (WIFSIGNALED(st)) snprintf(m, sizeof m, "MCP server '%s' was killed by signal %d", c->name, WTERMSIG(st));
    else snprintf(m, sizeof m, "MCP server '%s' exited with status %d", c->name, WEXITSTATUS(st));
    char *tail = ring_tail_locked(c, TAIL_BYTES);
    if (tail && *tail) snprintf(out, size, "%s; stderr: %s", m, tail);
    else snprintf(out, size, "%s", m);
    free(tail);
}

static void *reader_main(void *arg) {
    reader_arg a = *(reader_arg *)arg;
    free(arg);
    stdio_client *c = a.c;
    bool err_open = true;
    bool ok = read_lines(c, &a, &err_open);
    /* drain what stderr still holds so the error message explains the crash */
    for (int i = 0; err_open && i < 16; i++) {
        struct pollfd p = {a.err_fd, POLLIN, 0};
        if (poll(&p, 1, i == 0 ? 50 : 0) <= 0) break;
        ring_read(c, a.err_fd, &err_open, NULL);
    }
    if (!ok) kill(-a.pid, SIGKILL);
    int status = reap(a.pid);
    close(a.out_fd);
    close(a.err_fd);
    pthread_mutex_lock(&c->write_mu);
    pthread_mutex_lock(&c->mu);
    static const char oom_note[] = "\n[graphgate: out of memory reading the answers]\n";
    if (!ok) ring_put(c, oom_note, sizeof oom_note - 1);
    close(c->in_fd);
    c->in_fd = -1;
    gg_strbuf_reset(&c->outbox); /* lines for the dead child */
    c->alive = c->ready = c->starting = false;
    c->exit_status = status;
    c->died_ms = gg_now_ms();
    /* a child that keeps dying soon after its start backs off longer each time, even when it
     * answered initialize (one that crashes on every call); one that stayed up a while starts
     * the count over */
    if (!c->closing) c->failures = c->died_ms - c->started_ms >= STABLE_MS ? 1 : c->failures + 1;
    /* every request of this child (and those queued for its initialize) ends now */
    sreq *dead = c->queued, **tail = &dead;
    c->queued = NULL;
    while (*tail) tail = &(*tail)->next;
    for (sreq **pp = &c->sent; *pp;) {
        if ((*pp)->generation == a.gen) {
            sreq *r = *pp;
            *pp = r->next;
            r->next = NULL;
            *tail = r;
            tail = &r->next;
        } else {
            pp = &(*pp)->next;
        }
    }
    char msg[2600];
    death_message(c, msg, sizeof msg);
    pthread_mutex_unlock(&c->mu);
    pthread_mutex_unlock(&c->write_mu);
    fail_all(dead, "transport", msg);
    pthread_mutex_lock(&c->mu);
    c->readers--;
    pthread_cond_broadcast(&c->cv); /* under the lock: destroy frees c once it sees 0 */
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* ---- process management ------------------------------------------------------------------- */

/* Lower the new child's priority and set its limits (downstream.child_*). posix_spawn has no
 * attribute for either, so the gateway sets them on the child just after its exec: the
 * child has run only its loader by then, and whatever it starts later inherits them. A host
 * that refuses (a container without prlimit) is logged once per child, not fatal. */
static void child_confine(stdio_client *c, pid_t pid) {
    const mcp_stdio_limits *l = &c->lim;
    /* the whole process group (the child leads it): every thread it has started already */
    if (l->child_nice > 0 && setpriority(PRIO_PGRP, (id_t)pid, l->child_nice) != 0)
        gg_log(GG_LOG_WARN, "cannot lower a downstream child's priority", "server", c->name, "error", strerror(errno), NULL);
    struct {
        int resource;
        rlim_t value;
    } set[] = {{RLIMIT_AS, (rlim_t)l->child_memory_bytes}, {RLIMIT_CPU, (rlim_t)l->child_cpu_seconds}};
    for (size_t i = 0; i < sizeof set / sizeof set[0]; i++) {
        struct rlimit rl = {set[i].value, set[i].value};
        if (set[i].value && prlimit(pid, set[i].resource, &rl, NULL) != 0)
            gg_log(GG_LOG_WARN, "cannot set a downstream child's resource limit", "server", c->name, "error",
                   strerror(errno), NULL);
    }
}

/* Start a child and its reader (caller holds mu; the previous child is dead). A restarted
 * child starts with an empty stderr tail: the old one belongs to the old crash. */
static bool spawn_locked(stdio_client *c, gg_error *err) {
    int in_sv[2] = {-1, -1}, out_p[2] = {-1, -1}, err_p[2] = {-1, -1};
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in_sv) != 0 || pipe2(out_p, O_CLOEXEC) != 0 ||
        pipe2(err_p, O_CLOEXEC) != 0) {
        gg_error_set(err, "transport", "cannot create pipes: %s", strerror(errno));
        for (int i = 0; i < 2; i++) {
            if (in_sv[i] >= 0) close(in_sv[i]);
            if (out_p[i] >= 0) close(out_p[i]);
            if (err_p[i] >= 0) close(err_p[i]);
        }
        return false;
    }
    shutdown(in_sv[1], SHUT_RD);
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    posix_spawn_file_actions_adddup2(&fa, in_sv[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out_p[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err_p[1], 2);
    /* the child gets stdin/stdout/stderr and nothing else of the gateway (listening sockets,
     * database handles of other subsystems may lack O_CLOEXEC) */
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    if (c->cwd) posix_spawn_file_actions_addchdir_np(&fa, c->cwd);
    sigset_t none, def;
    sigemptyset(&none);
    sigemptyset(&def);
    sigaddset(&def, SIGPIPE);
    sigaddset(&def, SIGTERM);
    sigaddset(&def, SIGINT);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &def);
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid = -1;
    int rc = posix_spawnp(&pid, c->command, &fa, &at, c->argv, c->envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(in_sv[0]);
    close(out_p[1]);
    close(err_p[1]);
    reader_arg *ra = rc == 0 ? malloc(sizeof *ra) : NULL;
    if (!ra) {
        close(in_sv[1]);
        close(out_p[0]);
        close(err_p[0]);
        if (rc == 0) kill(-pid, SIGKILL), reap(pid);
        gg_error_set(err, "transport", "cannot start MCP server '%s' (%s%s%s): %s", c->name, c->command,
                     c->cwd ? " in " : "", c->cwd ? c->cwd : "", strerror(rc ? rc : ENOMEM));
        return false;
    }
    child_confine(c, pid);
    c->started_ms = gg_now_ms();
    c->ring_pos = c->ring_len = 0;
    c->pid = pid;
    c->in_fd = in_sv[1];
    c->alive = true;
    c->generation++;
    c->starts++;
    *ra = (reader_arg){c, in_sv[1], out_p[0], err_p[0], c->generation, pid};
    pthread_t th;
    pthread_attr_t pa;
    pthread_attr_init(&pa);
    pthread_attr_setdetachstate(&pa, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&th, &pa, reader_main, ra);
    pthread_attr_destroy(&pa);
    if (rc != 0) {
        free(ra);
        kill(-pid, SIGKILL);
        reap(pid);
        close(c->in_fd);
        close(out_p[0]);
        close(err_p[0]);
        c->in_fd = -1;
        c->alive = false;
        gg_error_set(err, "transport", "cannot start the reader thread");
        return false;
    }
    c->readers++;
    return true;
}

/* ---- the transport ------------------------------------------------------------------------ */

static void sreq_free(mcp_pending *p) {
    sreq *r = (sreq *)p;
    free(r->line);
    free(r);
}

static void sreq_destroy(mcp_pending *p) {
    stdio_client *c = ((sreq *)p)->c;
    sreq_free(p);
    pthread_mutex_lock(&c->mu);
    c->nreqs--;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* Deadline or cancel flag (loop thread): finish the request unless a reply or the child's
 * death already took it; a request the child has tells it with notifications/cancelled. A
 * timed-out initialize fails the requests queued behind it and stops the child. */
static void sreq_expire(mcp_pending *p, const char *why) {
    sreq *r = (sreq *)p;
    stdio_client *c = r->c;
    pthread_mutex_lock(&c->mu);
    bool was_sent = unlink_from(&c->sent, r);
    bool found = was_sent || unlink_from(&c->queued, r);
    while (found && r->busy) pthread_cond_wait(&c->cv, &c->mu); /* the reader is in its relay */
    sreq *q = NULL;
    if (found && r->init) {
        q = c->queued;
        c->queued = NULL;
        c->starting = false;
        if (c->alive && c->generation == r->generation) kill(-c->pid, SIGKILL);
    }
    pthread_mutex_unlock(&c->mu);
    if (!found) return;
    bool timeout = !strcmp(why, "timeout");
    if (r->init) {
        char m[300];
        snprintf(m, sizeof m, "MCP server '%s' did not answer initialize in time", c->name);
        mcp_pending_finish(c->loop, &r->p, NULL, NULL);
        fail_all(q, "transport", m);
        return;
    }
    if (was_sent) send_cancel(c, r->generation, r->id, timeout ? "timeout" : "cancelled");
    if (timeout) fail(r, "timeout", "MCP error -32001: Request timed out");
    else fail(r, "cancelled", "Execution cancelled");
}

/* relay (NULL: none): a call's own relay; when it hears notifications the call asks for
 * progress under its own request id, the token a child's notifications/progress is routed by
 * (relay_notification). */
static sreq *sreq_new(stdio_client *c, bool locked, const char *method, json_t *params, int timeout_ms, atomic_int *cancel,
                      const mcp_call_relay *relay, mcp_client_done_fn done, void *user) {
    sreq *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    mcp_pending_init(&r->p, timeout_ms, cancel, done, user);
    r->p.expire = sreq_expire;
    r->p.destroy = sreq_destroy;
    r->c = c;
    if (!locked) pthread_mutex_lock(&c->mu);
    r->id = ++c->next_id;
    c->nreqs++;
    if (!locked) pthread_mutex_unlock(&c->mu);
    json_t *req = json_pack("{s:s, s:I, s:s}", "jsonrpc", "2.0", "id", (json_int_t)r->id, "method", method);
    json_t *meta = json_object_get(params, "_meta");
    if (relay) r->relaying = true, r->relay = *relay;
    if (req && relay && relay->notify && json_is_object(meta)) { /* copies: params is the caller's */
        json_t *p = json_copy(params), *m = json_copy(meta);
        if (p && m) json_object_set_new(m, "progressToken", json_integer(r->id)), json_object_set(p, "_meta", m);
        json_decref(m);
        json_object_set_new(req, "params", p);
    } else if (req && params) json_object_set(req, "params", params);
    char *s = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    if (s) {
        r->len = strlen(s) + 1;
        s[r->len - 1] = '\n';
    }
    r->line = s;
    return r;
}

/* Start a child and queue its initialize (caller holds mu; nothing is running). */
static bool start_child_locked(stdio_client *c, gg_error *err) {
    if (c->failures > 0) { /* crashed before: no restart until the backoff has passed */
        int shift = c->failures - 1 > 6 ? 6 : c->failures - 1;
        double delay = BACKOFF_MIN_MS * (double)(1 << shift);
        if (delay > BACKOFF_MAX_MS) delay = BACKOFF_MAX_MS;
        double left = c->died_ms + delay - gg_now_ms();
        if (left > 0) {
            char m[300];
            death_message(c, m, sizeof m);
            gg_error_set(err, "backoff", "%s; restarting in %d ms", m, (int)left + 1);
            return false;
        }
    }
    double wait = start_take(c->ds, c->start_key, c->lim.max_starts_per_minute);
    if (wait > 0) {
        gg_error_set(err, "backoff", "MCP server '%s' was started %d times in the last minute "
                     "(downstream.max_starts_per_minute); restarting in %d ms", c->name, c->lim.max_starts_per_minute,
                     (int)wait + 1);
        return false;
    }
    if (!spawn_locked(c, err)) return false;
    json_t *caps = c->hooks.caps ? gg_json_clone(c->hooks.caps) : json_object();
    json_t *params = json_pack("{s:s, s:o, s:{s:s, s:s}}", "protocolVersion", MCP_CLIENT_PROTOCOL_VERSION,
                               "capabilities", caps, "clientInfo", "name", "graphgate", "version", GG_VERSION);
    sreq *init = sreq_new(c, true, "initialize", params, c->timeout_ms, NULL, NULL, noop_done, NULL);
    json_decref(params);
    if (!init || !init->line) {
        if (init) { /* never watched: its last reference frees it (which takes mu) */
            c->nreqs--;
            init->p.destroy = sreq_free;
            mcp_pending_unref(&init->p);
        }
        kill(-c->pid, SIGKILL);
        gg_error_set(err, "oom", "out of memory");
        return false;
    }
    init->init = true;
    init->generation = c->generation;
    c->starting = true;
    c->ready = false;
    mcp_loop_watch(c->loop, &init->p);
    init->next = c->sent;
    c->sent = init;
    int gen = c->generation;
    pthread_mutex_unlock(&c->mu);
    bool ok = send_line(c, gen, init->line, init->len, init->p.deadline);
    pthread_mutex_lock(&c->mu);
    if (!ok && c->alive && c->generation == gen) kill(-c->pid, SIGKILL); /* the reader fails everything */
    return true;
}

static void start_req(stdio_client *c, const char *method, json_t *params, int timeout_ms, atomic_int *cancel,
                      const mcp_call_relay *relay, mcp_client_done_fn done, void *user) {
    sreq *r = sreq_new(c, false, method, params, timeout_ms > 0 ? timeout_ms : c->timeout_ms, cancel, relay, done, user);
    gg_error e = GG_ERROR_INIT;
    if (!r || !r->line) {
        if (r) mcp_pending_unref(&r->p);
        mcp_client_done_oom(done, user);
        return;
    }
    pthread_mutex_lock(&c->mu);
    if (c->closing) gg_error_set(&e, "transport", "client is closing");
    else if (c->alive && !c->ready && !c->starting)
        gg_error_set(&e, "backoff", "MCP server '%s' is restarting; retry shortly", c->name);
    else if (!c->alive) start_child_locked(c, &e);
    if (gg_error_is_set(&e)) {
        pthread_mutex_unlock(&c->mu);
        mcp_pending_finish(c->loop, &r->p, NULL, &e);
        gg_error_clear(&e);
        return;
    }
    mcp_loop_watch(c->loop, &r->p);
    if (!c->ready) { /* behind the initialize, in order */
        sreq **tail = &c->queued;
        while (*tail) tail = &(*tail)->next;
        *tail = r;
        pthread_mutex_unlock(&c->mu);
        return;
    }
    r->generation = c->generation;
    r->next = c->sent;
    c->sent = r;
    mcp_pending_ref(&r->p); /* the reply may finish r while its line is written */
    pthread_mutex_unlock(&c->mu);
    if (!send_line(c, r->generation, r->line, r->len, r->p.deadline)) {
        pthread_mutex_lock(&c->mu);
        bool mine = unlink_from(&c->sent, r);
        while (mine && r->busy) pthread_cond_wait(&c->cv, &c->mu); /* the reader is in its relay */
        pthread_mutex_unlock(&c->mu);
        if (mine) fail(r, "transport", "cannot write to the MCP server");
    }
    mcp_pending_unref(&r->p);
}

static void stdio_start(void *impl, const char *method, json_t *params, int timeout_ms, atomic_int *cancel,
                        mcp_client_done_fn done, void *user) {
    start_req(impl, method, params, timeout_ms, cancel, NULL, done, user);
}

/* A call with its own relay: what the child asks or notes while it is the one relaying call
 * in flight, and its progress by token, go there (see "a child's messages that name no call"). */
static void stdio_start_relay(void *impl, const char *method, json_t *params, int timeout_ms, atomic_int *cancel,
                              const mcp_call_relay *relay, mcp_client_done_fn done, void *user) {
    start_req(impl, method, params, timeout_ms, cancel, relay, done, user);
}

static void free_strv(char **v) {
    for (char **p = v; p && *p; p++) free(*p);
    free(v);
}

static void stdio_destroy(void *impl) {
    stdio_client *c = impl;
    pthread_mutex_lock(&c->mu);
    c->closing = true;
    if (c->alive) {
        /* polite first: EOF on stdin ends most servers, then SIGTERM, then the reader's
         * reap() kills the group if it lingers */
        shutdown(c->in_fd, SHUT_WR);
        double t0 = gg_now_ms();
        int stage = 0;
        while (c->alive) {
            double el = gg_now_ms() - t0;
            if (stage == 0 && el > 300) kill(-c->pid, SIGTERM), stage = 1;
            if (stage == 1 && el > 1500) kill(-c->pid, SIGKILL), kill(c->pid, SIGKILL), stage = 2;
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 20 * 1000 * 1000;
            if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
            pthread_cond_timedwait(&c->cv, &c->mu, &ts);
        }
    }
    /* the reader and every request (the loop may still hold one) must be gone */
    while (c->readers > 0 || c->nreqs > 0) pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->write_mu);
    pthread_cond_destroy(&c->cv);
    for (int i = 0; i < 2; i++)
        if (c->wake[i] >= 0) close(c->wake[i]);
    gg_strbuf_free(&c->outbox);
    free(c->name);
    free(c->owner);
    free(c->command);
    free(c->cwd);
    mcp_client_hooks_clear(&c->hooks);
    json_decref(c->server_caps);
    free_strv(c->argv);
    free_strv(c->envp);
    free(c);
}

static void stdio_set_notify(void *impl, mcp_client_notify_fn fn, void *user) {
    stdio_client *c = impl;
    mcp_client_hooks_set_notify(&c->hooks, &c->mu, fn, user);
}

static void stdio_set_request_handler(void *impl, json_t *caps, mcp_client_server_request_fn fn, void *user) {
    stdio_client *c = impl;
    mcp_client_hooks_set_request_handler(&c->hooks, &c->mu, caps, fn, user);
}

/* See mcp_client_server_declares: learnt from the child's initialize (any request starts one). */
static mcp_declares stdio_server_declares(void *impl, const char *path, const char **probe) {
    stdio_client *c = impl;
    *probe = "ping";
    pthread_mutex_lock(&c->mu);
    mcp_declares d = mcp_client_caps_declare(c->server_caps, path);
    pthread_mutex_unlock(&c->mu);
    return d;
}

static const mcp_client_ops stdio_ops = {stdio_start,      stdio_stderr_tail, stdio_start_count,        stdio_destroy,
                                         stdio_set_notify, NULL,              stdio_set_request_handler,
                                         stdio_start_relay,
                                         NULL /* no credentials */, stdio_server_declares};

static bool has_var(const char *const *env, const char *name) {
    size_t n = strlen(name);
    for (; env && *env; env++)
        if (!strncmp(*env, name, n) && (*env)[n] == '=') return true;
    return false;
}

/* Environment of the child: the configured variables plus PATH and HOME of the gateway. */
static char **build_env(const char *const *env) {
    size_t n = 0;
    for (const char *const *p = env; p && *p; p++) n++;
    char **out = calloc(n + 3, sizeof *out);
    if (!out) return NULL;
    size_t k = 0;
    for (const char *const *p = env; p && *p; p++)
        if (!(out[k++] = strdup(*p))) goto fail;
    const char *inherit[] = {"PATH", "HOME"};
    for (int i = 0; i < 2; i++) {
        const char *v = getenv(inherit[i]);
        if (v && !has_var(env, inherit[i]) && asprintf(&out[k++], "%s=%s", inherit[i], v) < 0) {
            out[--k] = NULL;
            goto fail;
        }
    }
    return out;
fail:
    free_strv(out);
    return NULL;
}

/* The stdio transport: checks the command against the policy and copies the definition;
 * the child is spawned by the first request. */
void *mcp_stdio_new(const mcp_server_config *cfg, const mcp_client_policy *policy, const mcp_client_ops **ops,
                    gg_error *err) {
    if (!cfg->command || !*cfg->command) {
        gg_error_set(err, "invalid_config", "stdio MCP server needs a command");
        return NULL;
    }
    if (!mcp_policy_check_stdio(policy, cfg, err)) return NULL;
    stdio_client *c = calloc(1, sizeof *c);
    if (!c) {
        gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    c->in_fd = -1;
    c->wake[0] = c->wake[1] = -1;
    c->policy = policy;
    c->ds = cfg->downstream->stdio;
    c->lim = limits_get(c->ds);
    c->start_key = start_key(cfg);
    c->loop = mcp_loop_shared();
    c->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : MCP_CLIENT_DEFAULT_TIMEOUT_MS;
    c->name = strdup(cfg->name ? cfg->name : cfg->command);
    c->owner = cfg->owner ? strdup(cfg->owner) : NULL;
    c->command = strdup(cfg->command);
    c->cwd = cfg->cwd ? strdup(cfg->cwd) : NULL;
    size_t n = 0;
    for (const char *const *p = cfg->args; p && *p; p++) n++;
    c->argv = calloc(n + 2, sizeof *c->argv);
    c->envp = build_env(cfg->env);
    bool ok = pipe2(c->wake, O_NONBLOCK | O_CLOEXEC) == 0 && c->loop && c->name && c->command && (!cfg->cwd || c->cwd) &&
              (!cfg->owner || c->owner) && c->argv && c->envp;
    if (c->argv) {
        c->argv[0] = strdup(cfg->command);
        ok = ok && c->argv[0];
        for (size_t i = 0; ok && i < n; i++) ok = (c->argv[i + 1] = strdup(cfg->args[i])) != NULL;
    }
    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&c->write_mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    if (!ok) {
        stdio_destroy(c);
        gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    *ops = &stdio_ops;
    return c;
}
