/* notify.c — the change watch: one dedicated libpq connection per process LISTENs on the
 * channel "graphgate", where every generation bump (store.c) NOTIFYs the counter's name.
 * The pool's connections are never used for it: a LISTEN belongs to its session, and a
 * pooled connection is borrowed by anyone. It reconnects by itself with a backoff (100 ms
 * doubling to 5 s) and reports GG_WATCH_DOWN meanwhile, so the caller keeps polling. */
#include "store/store_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/util.h"

#define WATCH_BACKOFF_FIRST_MS 100
#define WATCH_BACKOFF_MAX_MS 5000
#define WATCH_ALL (GG_WATCH_KEYS | GG_WATCH_GRAPHS | GG_WATCH_VIEWS | GG_WATCH_OAUTH | GG_WATCH_TASKS | GG_WATCH_SECRETS | GG_WATCH_PINS)

struct gg_store_watch {
    gg_store *s;
    PGconn *pg;          /* NULL while down */
    int wake[2];         /* self-pipe: gg_store_watch_wake interrupts a wait */
    int backoff_ms;
    double retry_at_ms;  /* no connection attempt before */
};

gg_store_watch *gg_store_watch_new(gg_store *s) {
    if (!s || !s->url) return NULL;
    gg_store_watch *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    if (pipe2(w->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        free(w);
        return NULL;
    }
    w->s = s;
    return w;
}

void gg_store_watch_wake(gg_store_watch *w) {
    if (w && write(w->wake[1], "x", 1) < 0 && errno != EAGAIN) gg_log(GG_LOG_WARN, "watch wake failed", NULL);
}

void gg_store_watch_free(gg_store_watch *w) {
    if (!w) return;
    PQfinish(w->pg);
    close(w->wake[0]);
    close(w->wake[1]);
    free(w);
}

static bool watch_connect(gg_store_watch *w) {
    PGconn *pg = PQconnectdb(w->s->url);
    bool ok = pg && PQstatus(pg) == CONNECTION_OK;
    if (ok) {
        PGresult *r = PQexec(pg, "LISTEN graphgate");
        ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
    }
    if (!ok) {
        PQfinish(pg);
        return false;
    }
    w->pg = pg;
    return true;
}

static void watch_lost(gg_store_watch *w, double now) {
    PQfinish(w->pg);
    w->pg = NULL;
    w->backoff_ms = w->backoff_ms ? (w->backoff_ms * 2 > WATCH_BACKOFF_MAX_MS ? WATCH_BACKOFF_MAX_MS : w->backoff_ms * 2)
                                  : WATCH_BACKOFF_FIRST_MS;
    w->retry_at_ms = now + w->backoff_ms;
}

/* Wait on fd (or -1: none) and the wake pipe; true when fd is readable. */
static bool wait_readable(gg_store_watch *w, int fd, int timeout_ms) {
    struct pollfd p[2] = {{w->wake[0], POLLIN, 0}, {fd, POLLIN, 0}};
    int n = poll(p, fd >= 0 ? 2 : 1, timeout_ms < 0 ? 0 : timeout_ms);
    if (n > 0 && (p[0].revents & POLLIN)) {
        char buf[64];
        while (read(w->wake[0], buf, sizeof buf) > 0) {}
    }
    return n > 0 && fd >= 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR));
}

static int take_notifications(gg_store_watch *w) {
    int mask = 0;
    PGnotify *n;
    while ((n = PQnotifies(w->pg))) {
        if (strcmp(n->extra, "keys") == 0) mask |= GG_WATCH_KEYS;
        else if (strcmp(n->extra, "graphs") == 0) mask |= GG_WATCH_GRAPHS;
        else if (strcmp(n->extra, "views") == 0) mask |= GG_WATCH_VIEWS;
        else if (strcmp(n->extra, "oauth") == 0) mask |= GG_WATCH_OAUTH;
        else if (strcmp(n->extra, "tasks") == 0) mask |= GG_WATCH_TASKS;
        else if (strcmp(n->extra, "secrets") == 0) mask |= GG_WATCH_SECRETS;
        else if (strcmp(n->extra, "pins") == 0) mask |= GG_WATCH_PINS;
        PQfreemem(n);
    }
    return mask;
}

/* See store.h. */
int gg_store_watch_wait(gg_store_watch *w, int timeout_ms) {
    double now = gg_now_ms();
    if (!w->pg) {
        if (now >= w->retry_at_ms) {
            if (watch_connect(w)) {
                if (w->backoff_ms) gg_log(GG_LOG_INFO, "change notifications are back", NULL);
                w->backoff_ms = 0;
                return WATCH_ALL; /* whatever was sent while down is lost: refresh everything */
            }
            watch_lost(w, now);
        }
        double until = w->retry_at_ms - now;
        wait_readable(w, -1, until < timeout_ms ? (int)until : timeout_ms);
        return GG_WATCH_DOWN;
    }
    int mask = take_notifications(w); /* already read with an earlier message */
    if (mask) return mask;
    if (!wait_readable(w, PQsocket(w->pg), timeout_ms)) return 0;
    if (!PQconsumeInput(w->pg) || PQstatus(w->pg) != CONNECTION_OK) {
        gg_log(GG_LOG_WARN, "change notifications lost their connection; polling until it is back", NULL);
        watch_lost(w, now);
        return GG_WATCH_DOWN;
    }
    return take_notifications(w);
}
