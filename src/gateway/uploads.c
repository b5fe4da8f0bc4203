/* uploads.c — graph validation off the HTTP polling threads. A graph upload (and a
 * rollback, which compiles a stored version) is parsed, validated and compiled on a few
 * dedicated threads, separate from the tool-call workers: a hostile upload then costs one
 * upload thread for at most the upload time limit, never a polling thread (the public
 * listener stays reachable) nor a worker (other tenants' calls keep running).
 *
 * Each tenant has at most per_tenant uploads queued or running, and at most one running
 * while another thread is free for the rest: a thread takes the oldest job whose tenant
 * has none running, so one tenant's slow uploads never hold every thread. The queue as a
 * whole holds at most GW_UPLOAD_QUEUE.
 */
#include <stdlib.h>
#include <string.h>

#include "gateway/internal.h"

#define GW_UPLOAD_QUEUE 64

typedef struct upload_job {
    gw_job job;
    char tenant[GG_TENANT_MAX];
    struct upload_job *next;
} upload_job;

struct gw_uploads {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    upload_job *head, *tail;
    int queued, per_tenant;
    bool stopping;
    /* tenants with pending (queued or running) uploads */
    struct { char tenant[GG_TENANT_MAX]; int n, running; } pending[GW_UPLOAD_QUEUE];
    int npending;
    pthread_t *threads;
    int nthreads;
    int size; /* threads asked for (set before any starts) */
};

/* The pending slot of tenant (created when create), or -1. Under mu. */
static int pending_slot(gw_uploads *u, const char *tenant, bool create) {
    for (int i = 0; i < u->npending; i++)
        if (strcmp(u->pending[i].tenant, tenant) == 0) return i;
    if (!create || u->npending == GW_UPLOAD_QUEUE) return -1;
    snprintf(u->pending[u->npending].tenant, GG_TENANT_MAX, "%s", tenant);
    u->pending[u->npending].n = u->pending[u->npending].running = 0;
    return u->npending++;
}

/* One upload finished: release its tenant's slot. Under mu. */
static void pending_done(gw_uploads *u, const char *tenant) {
    int i = pending_slot(u, tenant, false);
    if (i < 0) return;
    u->pending[i].running--;
    if (--u->pending[i].n == 0) u->pending[i] = u->pending[--u->npending];
}

/* Unlink and return the oldest job whose tenant runs nothing (any job when stopping, or
 * when this is the only thread), or NULL. Under mu. */
static upload_job *take_job(gw_uploads *u) {
    upload_job *prev = NULL;
    for (upload_job *j = u->head; j; prev = j, j = j->next) {
        int i = pending_slot(u, j->tenant, false);
        if (!u->stopping && u->size > 1 && i >= 0 && u->pending[i].running > 0) continue;
        if (prev) prev->next = j->next;
        else u->head = j->next;
        if (u->tail == j) u->tail = prev;
        u->queued--;
        if (i >= 0) u->pending[i].running++;
        return j;
    }
    return NULL;
}

static void *upload_thread(void *arg) {
    gw_uploads *u = arg;
    pthread_mutex_lock(&u->mu);
    for (;;) {
        upload_job *j;
        while (!(j = take_job(u)) && !u->stopping) pthread_cond_wait(&u->cv, &u->mu);
        if (!j) break;
        bool refuse = u->stopping;
        pthread_mutex_unlock(&u->mu);
        if (refuse) j->job.refuse(j->job.arg);
        else j->job.run(j->job.arg);
        pthread_mutex_lock(&u->mu);
        pending_done(u, j->tenant);
        pthread_cond_broadcast(&u->cv); /* the tenant's next job may run now */
        free(j);
    }
    pthread_mutex_unlock(&u->mu);
    return NULL;
}

gw_uploads *gw_uploads_new(int threads, int per_tenant) {
    gw_uploads *u = calloc(1, sizeof *u);
    if (!u) return NULL;
    u->per_tenant = per_tenant > 0 ? per_tenant : 1;
    u->size = threads > 0 ? threads : 1;
    pthread_mutex_init(&u->mu, NULL);
    pthread_cond_init(&u->cv, NULL);
    u->threads = calloc((size_t)u->size, sizeof *u->threads);
    if (!u->threads) {
        gw_uploads_stop(u);
        return NULL;
    }
    for (int i = 0; i < u->size; i++) {
        if (pthread_create(&u->threads[i], NULL, upload_thread, u) != 0) break;
        u->nthreads++;
    }
    if (u->nthreads == 0) {
        gw_uploads_stop(u);
        return NULL;
    }
    return u;
}

bool gw_uploads_submit(gw_uploads *u, const char *tenant, gw_job job, gg_error *err) {
    upload_job *j = calloc(1, sizeof *j);
    if (!j) {
        gg_error_set(err, "unavailable", "out of memory");
        return false;
    }
    j->job = job;
    snprintf(j->tenant, sizeof j->tenant, "%s", tenant);
    pthread_mutex_lock(&u->mu);
    int i = -1;
    if (u->stopping) gg_error_set(err, "shutting_down", "the server is shutting down");
    else if (u->queued >= GW_UPLOAD_QUEUE || (i = pending_slot(u, tenant, true)) < 0)
        gg_error_set(err, "busy", "too many graph uploads are waiting; retry shortly");
    else if (u->pending[i].n >= u->per_tenant)
        gg_error_set(err, "rate_limited", "tenant '%s' already has %d graph upload(s) in progress; retry when they finish",
                     tenant, u->pending[i].n);
    bool ok = !gg_error_is_set(err);
    if (ok) {
        u->pending[i].n++;
        u->queued++;
        if (u->tail) u->tail->next = j;
        else u->head = j;
        u->tail = j;
        pthread_cond_broadcast(&u->cv);
    }
    pthread_mutex_unlock(&u->mu);
    if (!ok) free(j);
    return ok;
}

void gw_uploads_stop(gw_uploads *u) {
    if (!u) return;
    pthread_mutex_lock(&u->mu);
    u->stopping = true;
    pthread_cond_broadcast(&u->cv);
    pthread_mutex_unlock(&u->mu);
    for (int i = 0; i < u->nthreads; i++) pthread_join(u->threads[i], NULL);
    /* threads drained the queue (refusing what had not started) before exiting */
    free(u->threads);
    pthread_mutex_destroy(&u->mu);
    pthread_cond_destroy(&u->cv);
    free(u);
}
