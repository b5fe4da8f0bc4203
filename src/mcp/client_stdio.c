/* client_stdio.c — a downstream MCP server run as a child process speaking newline-delimited
 * JSON-RPC on stdin/stdout. One child per client, kept alive and shared by every run: one
 * reader thread matches responses to waiting callers by id; stderr goes to a ring buffer
 * that is attached to errors; a crashed child is restarted (with backoff) on the next call.
 * The child is spawned with an argv and an explicit environment, never through a shell. */
#include "mcp/mcp.h"

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

typedef struct pending {
    json_int_t id;
    json_t *response; /* the whole JSON-RPC message */
    int generation;
    struct pending *next;
} pending;

typedef struct stdio_client {
    char *name, *command, *cwd;
    char **argv, **envp;
    int timeout_ms;
    const mcp_client_policy *policy;

    pthread_mutex_t mu;       /* guards everything below */
    pthread_cond_t cv;        /* responses arrived, child died, start finished */
    pthread_mutex_t write_mu; /* one writer at a time on stdin */
    pid_t pid;
    int in_fd, out_fd, err_fd;
    pthread_t reader;
    bool reader_started;
    bool alive, ready, starting, closing;
    int generation;           /* bumps with each child */
    int exit_status;
    pending *pend;
    json_int_t next_id;
    char ring[RING_SIZE];
    size_t ring_pos, ring_len;
    int starts, failures;
    double last_start_ms;
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

/* Append the stderr tail to an error message (caller holds mu). */
static void error_with_stderr(stdio_client *c, gg_error *err, const char *code, const char *fmt, const char *arg) {
    char *tail = ring_tail_locked(c, TAIL_BYTES);
    char msg[512];
    snprintf(msg, sizeof msg, fmt, arg);
    if (tail && *tail) gg_error_set(err, code, "%s; stderr: %s", msg, tail);
    else gg_error_set(err, code, "%s", msg);
    free(tail);
}

/* ---- writing ------------------------------------------------------------------------------ */

static bool write_all(stdio_client *c, int fd, const char *buf, size_t len, double deadline_ms) {
    size_t off = 0;
    while (off < len) {
        ssize_t w = send(fd, buf + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            off += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            double left = deadline_ms - gg_now_ms();
            if (left <= 0) return false;
            struct pollfd p = {fd, POLLOUT, 0};
            poll(&p, 1, left > 100 ? 100 : (int)left + 1);
            continue;
        }
        return false;
    }
    return true;
}

static bool send_message(stdio_client *c, int fd, json_t *msg, double deadline_ms) {
    char *s = json_dumps(msg, JSON_COMPACT);
    if (!s) return false;
    size_t n = strlen(s);
    s[n] = '\n'; /* replaces the NUL; length is tracked */
    pthread_mutex_lock(&c->write_mu);
    bool ok = write_all(c, fd, s, n + 1, deadline_ms);
    pthread_mutex_unlock(&c->write_mu);
    free(s);
    return ok;
}

/* ---- reading ------------------------------------------------------------------------------ */

static void handle_line(stdio_client *c, int fd_in, char *line, size_t len, int gen) {
    json_t *msg = json_loadb(line, len, 0, NULL);
    if (!msg || !json_is_object(msg)) {
        json_decref(msg);
        return; /* not JSON-RPC: servers sometimes print banners on stdout */
    }
    json_t *id = json_object_get(msg, "id");
    json_t *method = json_object_get(msg, "method");
    if (method && id) { /* a request from the server: answer ping, refuse the rest */
        json_t *resp = !strcmp(json_string_value(method) ? json_string_value(method) : "", "ping")
                           ? json_pack("{s:s, s:O, s:{}}", "jsonrpc", "2.0", "id", id, "result")
                           : json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id, "error", "code", -32601,
                                       "message", "Method not found");
        if (resp) send_message(c, fd_in, resp, gg_now_ms() + 1000);
        json_decref(resp);
        json_decref(msg);
        return;
    }
    if (!id || !json_is_integer(id)) {
        json_decref(msg);
        return; /* notification (logging, progress): not used by mcp nodes */
    }
    json_int_t want = json_integer_value(id);
    pthread_mutex_lock(&c->mu);
    for (pending *p = c->pend; p; p = p->next)
        if (p->id == want && p->generation == gen && !p->response) {
            p->response = msg;
            msg = NULL;
            pthread_cond_broadcast(&c->cv);
            break;
        }
    pthread_mutex_unlock(&c->mu);
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

static void *reader_main(void *arg) {
    stdio_client *c = arg;
    pthread_mutex_lock(&c->mu);
    int out_fd = c->out_fd, err_fd = c->err_fd, in_fd = c->in_fd, gen = c->generation;
    pid_t pid = c->pid;
    pthread_mutex_unlock(&c->mu);
    char *buf = NULL;
    size_t len = 0, cap = 0;
    bool out_open = true, err_open = true, overflow = false;
    while (out_open) {
        struct pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_open ? err_fd : -1, POLLIN, 0}};
        int rc = poll(fds, 2, 1000);
        if (rc < 0 && errno == EINTR) continue;
        if (rc < 0) break;
        if (err_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
            char eb[4096];
            ssize_t n = read(err_fd, eb, sizeof eb);
            if (n > 0) {
                pthread_mutex_lock(&c->mu);
                ring_put(c, eb, (size_t)n);
                pthread_mutex_unlock(&c->mu);
            } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
                err_open = false;
            }
        }
        if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            if (cap - len < 65536) {
                size_t nc = cap ? cap * 2 : 131072;
                if (nc > MAX_LINE + 65536) {
                    overflow = true;
                    break;
                }
                char *nb = realloc(buf, nc);
                if (!nb) break;
                buf = nb;
                cap = nc;
            }
            ssize_t n = read(out_fd, buf + len, cap - len);
            if (n == 0) break;
            if (n < 0) {
                if (errno == EINTR || errno == EAGAIN) continue;
                break;
            }
            size_t scan = len;
            len += (size_t)n;
            size_t start = 0;
            for (size_t i = scan; i < len; i++)
                if (buf[i] == '\n') {
                    handle_line(c, in_fd, buf + start, i - start, gen);
                    start = i + 1;
                }
            memmove(buf, buf + start, len - start);
            len -= start;
            if (len > MAX_LINE) {
                overflow = true;
                break;
            }
        }
    }
    free(buf);
    /* drain what stderr still holds so the error message explains the crash */
    for (int i = 0; err_open && i < 16; i++) {
        struct pollfd p = {err_fd, POLLIN, 0};
        if (poll(&p, 1, i == 0 ? 50 : 0) <= 0) break;
        char eb[4096];
        ssize_t n = read(err_fd, eb, sizeof eb);
        if (n <= 0) break;
        pthread_mutex_lock(&c->mu);
        ring_put(c, eb, (size_t)n);
        pthread_mutex_unlock(&c->mu);
    }
    if (overflow) kill(-pid, SIGKILL);
    int status = reap(pid);
    pthread_mutex_lock(&c->mu);
    if (overflow) ring_put(c, "\n[graphgate: response line too long]\n", 37);
    c->alive = false;
    c->ready = false;
    c->exit_status = status;
    if (!c->closing) c->failures++;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* ---- process management ------------------------------------------------------------------- */

static void close_fds(stdio_client *c) {
    if (c->in_fd >= 0) close(c->in_fd);
    if (c->out_fd >= 0) close(c->out_fd);
    if (c->err_fd >= 0) close(c->err_fd);
    c->in_fd = c->out_fd = c->err_fd = -1;
}

/* Join the previous reader and release its descriptors (caller holds mu, child is dead). */
static void cleanup_dead_locked(stdio_client *c) {
    if (c->reader_started && !c->alive) {
        pthread_join(c->reader, NULL);
        c->reader_started = false;
        close_fds(c);
    }
}

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
    if (rc != 0) {
        close(in_sv[1]);
        close(out_p[0]);
        close(err_p[0]);
        gg_error_set(err, "transport", "cannot start MCP server '%s' (%s%s%s): %s", c->name, c->command,
                     c->cwd ? " in " : "", c->cwd ? c->cwd : "", strerror(rc));
        return false;
    }
    c->pid = pid;
    c->in_fd = in_sv[1];
    c->out_fd = out_p[0];
    c->err_fd = err_p[0];
    c->alive = true;
    c->generation++;
    c->starts++;
    c->last_start_ms = gg_now_ms();
    if (pthread_create(&c->reader, NULL, reader_main, c) != 0) {
        kill(-pid, SIGKILL);
        reap(pid);
        close_fds(c);
        c->alive = false;
        gg_error_set(err, "transport", "cannot start the reader thread");
        return false;
    }
    c->reader_started = true;
    return true;
}

static bool wait_cancellable(stdio_client *c, double until_ms, volatile int *cancel) {
    while (gg_now_ms() < until_ms) {
        if (cancel && __atomic_load_n(cancel, __ATOMIC_RELAXED)) return false;
        double left = until_ms - gg_now_ms();
        struct timespec ts = {0, (long)((left > 50 ? 50 : left) * 1e6)};
        pthread_mutex_unlock(&c->mu);
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&c->mu);
    }
    return true;
}

static json_t *roundtrip(stdio_client *c, const char *method, json_t *params, int timeout_ms, volatile int *cancel,
                         gg_error *err);

/* Make sure a child is running and initialized; concurrent callers wait for one start. */
static bool ensure_ready(stdio_client *c, int timeout_ms, volatile int *cancel, gg_error *err) {
    pthread_mutex_lock(&c->mu);
    while (c->starting) pthread_cond_wait(&c->cv, &c->mu);
    if (c->alive && c->ready) {
        pthread_mutex_unlock(&c->mu);
        return true;
    }
    if (c->closing) {
        pthread_mutex_unlock(&c->mu);
        gg_error_set(err, "transport", "client is closing");
        return false;
    }
    c->starting = true;
    if (c->alive) { /* running but not initialized (an earlier initialize failed): restart */
        kill(-c->pid, SIGKILL);
        while (c->alive) pthread_cond_wait(&c->cv, &c->mu);
    }
    cleanup_dead_locked(c);
    if (c->failures > 0) { /* crashed before: back off before starting again */
        int shift = c->failures - 1 > 6 ? 6 : c->failures - 1;
        double delay = BACKOFF_MIN_MS * (double)(1 << shift);
        if (delay > BACKOFF_MAX_MS) delay = BACKOFF_MAX_MS;
        if (!wait_cancellable(c, c->last_start_ms + delay, cancel)) {
            c->starting = false;
            pthread_cond_broadcast(&c->cv);
            pthread_mutex_unlock(&c->mu);
            gg_error_set(err, "cancelled", "Execution cancelled");
            return false;
        }
    }
    bool ok = spawn_locked(c, err);
    pthread_mutex_unlock(&c->mu);
    if (ok) {
        json_t *params = json_pack("{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion", MCP_CLIENT_PROTOCOL_VERSION,
                                   "capabilities", "clientInfo", "name", "graphgate", "version", GG_VERSION);
        json_t *res = roundtrip(c, "initialize", params, timeout_ms, cancel, err);
        json_decref(params);
        ok = res != NULL;
        json_decref(res);
        if (ok) {
            json_t *note = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", "notifications/initialized");
            ok = note && send_message(c, c->in_fd, note, gg_now_ms() + timeout_ms);
            json_decref(note);
            if (!ok) gg_error_set(err, "transport", "cannot write to MCP server '%s'", c->name);
        }
    }
    pthread_mutex_lock(&c->mu);
    c->starting = false;
    c->ready = ok && c->alive;
    if (c->ready) c->failures = 0;
    else if (c->alive) kill(-c->pid, SIGKILL);
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return ok;
}

static void send_cancel(stdio_client *c, json_int_t id, const char *reason) {
    json_t *note = json_pack("{s:s, s:s, s:{s:I, s:s}}", "jsonrpc", "2.0", "method", "notifications/cancelled", "params",
                             "requestId", (json_int_t)id, "reason", reason);
    if (note) send_message(c, c->in_fd, note, gg_now_ms() + 1000);
    json_decref(note);
}

/* Send one request and wait for its response (the child must be running). */
static json_t *roundtrip(stdio_client *c, const char *method, json_t *params, int timeout_ms, volatile int *cancel,
                         gg_error *err) {
    double deadline = gg_now_ms() + timeout_ms;
    pending p = {0};
    pthread_mutex_lock(&c->mu);
    if (!c->alive) {
        error_with_stderr(c, err, "transport", "MCP server '%s' is not running", c->name);
        pthread_mutex_unlock(&c->mu);
        return NULL;
    }
    p.id = ++c->next_id;
    p.generation = c->generation;
    p.next = c->pend;
    c->pend = &p;
    int fd = c->in_fd;
    pthread_mutex_unlock(&c->mu);

    json_t *req = json_pack("{s:s, s:I, s:s}", "jsonrpc", "2.0", "id", (json_int_t)p.id, "method", method);
    if (req && params) json_object_set(req, "params", params);
    bool sent = req && send_message(c, fd, req, deadline);
    json_decref(req);

    pthread_mutex_lock(&c->mu);
    enum { RT_OK, RT_DEAD, RT_TIMEOUT, RT_CANCEL, RT_SEND } why = RT_OK;
    if (!sent) why = RT_SEND;
    while (why == RT_OK && !p.response) {
        if (!c->alive || c->generation != p.generation) why = RT_DEAD;
        else if (cancel && __atomic_load_n(cancel, __ATOMIC_RELAXED)) why = RT_CANCEL;
        else if (gg_now_ms() >= deadline) why = RT_TIMEOUT;
        else {
            double left = deadline - gg_now_ms();
            if (left > 50) left = 50; /* poll the cancel flag */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            long ns = ts.tv_nsec + (long)(left * 1e6);
            ts.tv_sec += ns / 1000000000L;
            ts.tv_nsec = ns % 1000000000L;
            pthread_cond_timedwait(&c->cv, &c->mu, &ts);
        }
    }
    if (p.response) why = RT_OK;
    for (pending **pp = &c->pend; *pp; pp = &(*pp)->next)
        if (*pp == &p) {
            *pp = p.next;
            break;
        }
    json_t *result = NULL;
    switch (why) {
    case RT_OK: {
        json_t *e = json_object_get(p.response, "error");
        if (e) {
            const char *m = json_string_value(json_object_get(e, "message"));
            gg_error_set(err, "mcp_error", "MCP error %lld: %s", (long long)json_integer_value(json_object_get(e, "code")),
                         m ? m : "unknown error");
        } else {
            result = json_incref(json_object_get(p.response, "result"));
            if (!result) gg_error_set(err, "mcp_error", "MCP server '%s' sent a response without a result", c->name);
        }
        break;
    }
    case RT_DEAD: {
        char m[256];
        int st = c->exit_status;
        if (WIFSIGNALED(st)) snprintf(m, sizeof m, "MCP server '%%s' was killed by signal %d during %s", WTERMSIG(st), method);
        else snprintf(m, sizeof m, "MCP server '%%s' exited with status %d during %s", WEXITSTATUS(st), method);
        error_with_stderr(c, err, "transport", m, c->name);
        break;
    }
    case RT_SEND: error_with_stderr(c, err, "transport", "cannot write to MCP server '%s'", c->name); break;
    case RT_TIMEOUT: gg_error_set(err, "timeout", "MCP error -32001: Request timed out"); break;
    case RT_CANCEL: gg_error_set(err, "cancelled", "Execution cancelled"); break;
    }
    bool alive = c->alive && c->generation == p.generation;
    pthread_mutex_unlock(&c->mu);
    if ((why == RT_TIMEOUT || why == RT_CANCEL) && alive)
        send_cancel(c, p.id, why == RT_TIMEOUT ? "timeout" : "cancelled");
    json_decref(p.response);
    return result;
}

static json_t *stdio_request(void *impl, const char *method, json_t *params, int timeout_ms, volatile int *cancel,
                             gg_error *err) {
    stdio_client *c = impl;
    if (timeout_ms <= 0) timeout_ms = c->timeout_ms;
    if (!ensure_ready(c, timeout_ms, cancel, err)) return NULL;
    return roundtrip(c, method, params, timeout_ms, cancel, err);
}

static void free_strv(char **v) {
    for (char **p = v; p && *p; p++) free(*p);
    free(v);
}

static void stdio_destroy(void *impl) {
    stdio_client *c = impl;
    pthread_mutex_lock(&c->mu);
    c->closing = true;
    while (c->starting) pthread_cond_wait(&c->cv, &c->mu);
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
    cleanup_dead_locked(c);
    pthread_mutex_unlock(&c->mu);
    close_fds(c);
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->write_mu);
    pthread_cond_destroy(&c->cv);
    free(c->name);
    free(c->command);
    free(c->cwd);
    free_strv(c->argv);
    free_strv(c->envp);
    free(c);
}

static const mcp_client_ops stdio_ops = {stdio_request, stdio_stderr_tail, stdio_start_count, stdio_destroy};

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
    c->in_fd = c->out_fd = c->err_fd = -1;
    c->policy = policy;
    c->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : MCP_CLIENT_DEFAULT_TIMEOUT_MS;
    c->name = strdup(cfg->name ? cfg->name : cfg->command);
    c->command = strdup(cfg->command);
    c->cwd = cfg->cwd ? strdup(cfg->cwd) : NULL;
    size_t n = 0;
    for (const char *const *p = cfg->args; p && *p; p++) n++;
    c->argv = calloc(n + 2, sizeof *c->argv);
    c->envp = build_env(cfg->env);
    bool ok = c->name && c->command && (!cfg->cwd || c->cwd) && c->argv && c->envp;
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
