/* client_stdio.c — a downstream MCP server run as a child process speaking newline-delimited
 * JSON-RPC on stdin/stdout. One child per client, kept alive and shared by every run. Nobody
 * waits on it: a request is a pending entry finished by the child's reader thread (its
 * reply, or the child's death), or by the event loop (deadline, cancel flag). stderr goes
 * to a ring buffer attached to errors; a crashed child is restarted on the next call once
 * its backoff has passed — until then calls fail at once with the reason.
 * The child is spawned with an argv and an explicit environment, never through a shell. */
#include "mcp/loop.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RING_SIZE 8192
#define TAIL_BYTES 2000
#define MAX_LINE (64u << 20)
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000

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
    struct sreq *next;
} sreq;

typedef struct stdio_client {
    char *name, *command, *cwd;
    char **argv, **envp;
    int timeout_ms;
    const mcp_client_policy *policy;
    mcp_loop *loop;

    pthread_mutex_t mu;       /* guards everything below */
    mcp_client_notify_fn notify; /* server notifications (mcp_client_set_notify) */
    void *notify_user;
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
} stdio_client;

static void ring_put(stdio_client *c, const char *b, size_t n) {
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
    pthread_mutex_lock(&c->mu);
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
        c->failures = 0;
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

static void handle_line(stdio_client *c, char *line, size_t len, int gen) {
    json_t *msg = json_loadb(line, len, 0, NULL);
    if (!msg || !json_is_object(msg)) {
        json_decref(msg);
        return; /* not JSON-RPC: servers sometimes print banners on stdout */
    }
    json_t *id = json_object_get(msg, "id");
    json_t *method = json_object_get(msg, "method");
    if (method && id) { /* a request from the server: answer ping, refuse the rest */
        json_t *resp = mcp_client_answer_server_request(id, json_string_value(method));
        send_message(c, gen, resp, gg_now_ms() + 1000);
        json_decref(resp);
        json_decref(msg);
        return;
    }
    if (!id && json_is_string(method)) { /* a notification: list_changed for the catalog */
        pthread_mutex_lock(&c->mu);
        mcp_client_notify_fn fn = c->notify;
        void *user = c->notify_user;
        pthread_mutex_unlock(&c->mu);
        if (fn) fn(user, json_string_value(method), json_object_get(msg, "params"));
    }
    if (!id || !json_is_integer(id)) {
        json_decref(msg);
        return; /* notification (logging, progress): not used by mcp nodes */
    }
    pthread_mutex_lock(&c->mu);
    sreq *r = find_sent(c, json_integer_value(id), gen);
    pthread_mutex_unlock(&c->mu);
    if (r && r->init) init_replied(c, r, msg, gen);
    else if (r) finish_reply(r, msg);
    json_decref(msg);
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

static void ring_read(stdio_client *c, int fd, bool *open) {
    char eb[4096];
    ssize_t n = read(fd, eb, sizeof eb);
    if (n > 0) {
        pthread_mutex_lock(&c->mu);
        ring_put(c, eb, (size_t)n);
        pthread_mutex_unlock(&c->mu);
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        *open = false;
    }
}

/* Read stdout lines until EOF (or an over-long line); false on overflow. */
static bool read_lines(stdio_client *c, const reader_arg *a, bool *err_open) {
    char *buf = NULL;
    size_t len = 0, cap = 0;
    bool ok = true;
    for (;;) {
        pthread_mutex_lock(&c->write_mu);
        bool pending_out = c->outbox.len > 0;
        pthread_mutex_unlock(&c->write_mu);
        struct pollfd fds[4] = {{a->out_fd, POLLIN, 0}, {*err_open ? a->err_fd : -1, POLLIN, 0},
                                {c->wake[0], POLLIN, 0}, {pending_out ? a->in_fd : -1, POLLOUT, 0}};
        int rc = poll(fds, 4, 1000);
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
        if (*err_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) ring_read(c, a->err_fd, err_open);
        if (!(fds[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        if (cap - len < 65536) {
            size_t nc = cap ? cap * 2 : 131072;
            char *nb = nc > MAX_LINE + 65536 ? NULL : realloc(buf, nc);
            if (!nb) {
                ok = nc <= MAX_LINE + 65536;
                break;
            }
            buf = nb;
            cap = nc;
        }
        ssize_t n = read(a->out_fd, buf + len, cap - len);
        if (n == 0) break;
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            break;
        }
        size_t scan = len, start = 0;
        len += (size_t)n;
        for (size_t i = scan; i < len; i++)
            if (buf[i] == '\n') {
                handle_line(c, buf + start, i - start, a->gen);
                start = i + 1;
            }
        memmove(buf, buf + start, len - start);
        len -= start;
        if (len > MAX_LINE) {
            ok = false;
            break;
        }
    }
    free(buf);
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
        ring_read(c, a.err_fd, &err_open);
    }
    if (!ok) kill(-a.pid, SIGKILL);
    int status = reap(a.pid);
    close(a.out_fd);
    close(a.err_fd);
    pthread_mutex_lock(&c->write_mu);
    pthread_mutex_lock(&c->mu);
    if (!ok) ring_put(c, "\n[graphgate: response line too long]\n", 37);
    close(c->in_fd);
    c->in_fd = -1;
    gg_strbuf_reset(&c->outbox); /* lines for the dead child */
    c->alive = c->ready = c->starting = false;
    c->exit_status = status;
    c->died_ms = gg_now_ms();
    if (!c->closing) c->failures++;
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

static sreq *sreq_new(stdio_client *c, bool locked, const char *method, json_t *params, int timeout_ms, atomic_int *cancel,
                      mcp_client_done_fn done, void *user) {
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
    if (req && params) json_object_set(req, "params", params);
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
    if (!spawn_locked(c, err)) return false;
    json_t *params = json_pack("{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion", MCP_CLIENT_PROTOCOL_VERSION,
                               "capabilities", "clientInfo", "name", "graphgate", "version", GG_VERSION);
    sreq *init = sreq_new(c, true, "initialize", params, c->timeout_ms, NULL, noop_done, NULL);
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

static void stdio_start(void *impl, const char *method, json_t *params, int timeout_ms, atomic_int *cancel,
                        mcp_client_done_fn done, void *user) {
    stdio_client *c = impl;
    sreq *r = sreq_new(c, false, method, params, timeout_ms > 0 ? timeout_ms : c->timeout_ms, cancel, done, user);
    gg_error e = GG_ERROR_INIT;
    if (!r || !r->line) {
        if (r) mcp_pending_unref(&r->p);
        gg_error_set(&e, "oom", "out of memory");
        done(user, NULL, &e);
        gg_error_clear(&e);
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
        pthread_mutex_unlock(&c->mu);
        if (mine) fail(r, "transport", "cannot write to the MCP server");
    }
    mcp_pending_unref(&r->p);
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
    free(c->command);
    free(c->cwd);
    free_strv(c->argv);
    free_strv(c->envp);
    free(c);
}

static void stdio_set_notify(void *impl, mcp_client_notify_fn fn, void *user) {
    stdio_client *c = impl;
    pthread_mutex_lock(&c->mu);
    c->notify = fn;
    c->notify_user = user;
    pthread_mutex_unlock(&c->mu);
}

static const mcp_client_ops stdio_ops = {stdio_start, stdio_stderr_tail, stdio_start_count, stdio_destroy,
                                         stdio_set_notify};

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
    c->loop = mcp_loop_shared();
    c->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : MCP_CLIENT_DEFAULT_TIMEOUT_MS;
    c->name = strdup(cfg->name ? cfg->name : cfg->command);
    c->command = strdup(cfg->command);
    c->cwd = cfg->cwd ? strdup(cfg->cwd) : NULL;
    size_t n = 0;
    for (const char *const *p = cfg->args; p && *p; p++) n++;
    c->argv = calloc(n + 2, sizeof *c->argv);
    c->envp = build_env(cfg->env);
    bool ok = pipe2(c->wake, O_NONBLOCK | O_CLOEXEC) == 0 && c->loop && c->name && c->command && (!cfg->cwd || c->cwd) && c->argv && c->envp;
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
