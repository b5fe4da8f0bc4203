/* uploads.c — graph validation off the HTTP polling threads. A graph upload (and a
 * rollback, which compiles a stored version) is parsed, validated and compiled on a few
 * dedicated threads, separate from the tool-call workers: a hostile upload then costs one
 * upload thread for at most the upload time limit, never a polling thread (the public
 * listener stays reachable) nor a worker (other tenants' calls keep running).
 *
 * Each tenant has at most per_tenant uploads queued or running, so one tenant cannot
 * occupy every upload thread's queue; the queue as a whole holds at most GW_UPLOAD_QUEUE.
 * Jobs run in arrival order.
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
    struct { char tenant[GG_TENANT_MAX]; int n; } pending[GW_UPLOAD_QUEUE];
    int npending;
    pthread_t *threads;
    int nthreads;
};

/* The pending slot of tenant (created when create), or NULL. Under mu. */
static int *pending_count(gw_uploads *u, const char *tenant, bool create) {
    for (int i = 0; i < u->npending; i++)
        if (strcmp(u->pending[i].tenant, tenant) == 0) return &u->pending[i].n;
    if (!create || u->npending == GW_UPLOAD_QUEUE) return NULL;
    snprintf(u->pending[u->npending].tenant, GG_TENANT_MAX, "%s", tenant);
    u->pending[u->npending].n = 0;
    return &u->pending[u->npending++].n;
}

/* One upload finished: release its tenant's slot. Under mu. */
static void pending_done(gw_uploads *u, const char *tenant) {
    for (int i = 0; i < u->npending; i++)
        if (strcmp(u->pending[i].tenant, tenant) == 0) {
            if (--u->pending[i].n == 0) u->pending[i] = u->pending[--u->npending];
            return;
        }
}

static void *upload_thread(void *arg) {
    gw_uploads *u = arg;
    pthread_mutex_lock(&u->mu);
    for (;;) {
        while (!u->head && !u->stopping) pthread_cond_wait(&u->cv, &u->mu);
        if (!u->head) break;
        upload_job *j = u->head;
        u->head = j->next;
        if (!u->head) u->tail = NULL;
        u->queued--;
        bool refuse = u->stopping;
        pthread_mutex_unlock(&u->mu);
        if (refuse) j->job.refuse(j->job.arg);
        else j->job.run(j->job.arg);
        pthread_mutex_lock(&u->mu);
        pending_done(u, j->tenant);
        free(j);
    }
    pthread_mutex_unlock(&u->mu);
    return NULL;
}

gw_uploads *gw_uploads_new(int threads, int per_tenant) {
    gw_uploads *u = calloc(1, sizeof *u);
    if (!u) return NULL;
    u->per_tenant = per_tenant > 0 ? per_tenant : 1;
    pthread_mutex_init(&u->mu, NULL);
    pthread_cond_init(&u->cv, NULL);
    u->threads = calloc((size_t)(threads > 0 ? threads : 1), sizeof *u->threads);
    if (!u->threads) {
        gw_uploads_stop(u);
        return NULL;
    }
    for (int i = 0; i < (threads > 0 ? threads : 1); i++) {
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
    int *n = NULL;
    if (u->stopping) gg_error_set(err, "shutting_down", "the server is shutting down");
    else if (u->queued >= GW_UPLOAD_QUEUE || !(n = pending_count(u, tenant, true)))
        gg_error_set(err, "busy", "too many graph uploads are waiting; retry shortly");
    else if (*n >= u->per_tenant)
        gg_error_set(err, "rate_limited", "tenant '%s' already has %d graph upload(s) in progress; retry when they finish",
                     tenant, *n);
    bool ok = !gg_error_is_set(err);
    if (ok) {
        (*n)++;
        u->queued++;
        if (u->tail) u->tail->next = j;
        else u->head = j;
        u->tail = j;
        pthread_cond_signal(&u->cv);
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
