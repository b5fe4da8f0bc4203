/* pool.c — the tool-call worker pool: a fixed set of threads behind a bounded ring queue.
 * Submitting never blocks: a full queue is the caller's signal to answer 503 at once. */
#include <stdlib.h>

#include "gateway/internal.h"

struct gw_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    gw_job *ring;
    int cap, head, count;
    bool stopping;
    int idle; /* workers blocked in cond_wait: a submit wakes one only if some wait */
    int nthreads;
    pthread_t *threads;
};

static void *worker(void *arg) {
    gw_pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (p->count == 0 && !p->stopping) {
            p->idle++;
            pthread_cond_wait(&p->cv, &p->mu);
            p->idle--;
        }
        if (p->count == 0) { /* stopping and drained */
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        gw_job job = p->ring[p->head];
        p->head = (p->head + 1) % p->cap;
        p->count--;
        bool refuse = p->stopping;
        pthread_mutex_unlock(&p->mu);
        if (refuse && job.refuse) job.refuse(job.arg);
        else job.run(job.arg);
    }
}

/* Start threads workers (>= 1) with room for queue_size waiting jobs (>= 1). */
gw_pool *gw_pool_new(int threads, int queue_size) {
    gw_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->cap = queue_size > 0 ? queue_size : 1;
    p->ring = calloc((size_t)p->cap, sizeof *p->ring);
    p->threads = calloc((size_t)(threads > 0 ? threads : 1), sizeof *p->threads);
    if (!p->ring || !p->threads) goto fail;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    for (int i = 0; i < (threads > 0 ? threads : 1); i++) {
        if (pthread_create(&p->threads[i], NULL, worker, p) != 0) break;
        p->nthreads++;
    }
    if (p->nthreads == 0) {
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->cv);
        goto fail;
    }
    return p;
fail:
    free(p->ring);
    free(p->threads);
    free(p);
    return NULL;
}

/* Queue a job; false (job not taken) when the queue is full or the pool is stopping.
 * The wake-up is sent after unlocking (a worker woken under the lock would at once block
 * on it again: profiles showed the polling threads waiting on this mutex) and only when
 * a worker is idle; busy workers take the job when they loop. */
bool gw_pool_submit(gw_pool *p, gw_job job) {
    pthread_mutex_lock(&p->mu);
    bool ok = !p->stopping && p->count < p->cap;
    bool wake = false;
    if (ok) {
        p->ring[(p->head + p->count) % p->cap] = job;
        p->count++;
        wake = p->idle > 0;
    }
    pthread_mutex_unlock(&p->mu);
    if (wake) pthread_cond_signal(&p->cv);
    return ok;
}

/* Jobs waiting (for metrics). */
int gw_pool_queued(gw_pool *p) {
    pthread_mutex_lock(&p->mu);
    int n = p->count;
    pthread_mutex_unlock(&p->mu);
    return n;
}

/* Refuse what is queued, now, on this thread; see internal.h. */
int gw_pool_refuse_queued(gw_pool *p) {
    int n = 0;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        if (p->count == 0) {
            pthread_mutex_unlock(&p->mu);
            return n;
        }
        gw_job job = p->ring[p->head];
        p->head = (p->head + 1) % p->cap;
        p->count--;
        pthread_mutex_unlock(&p->mu);
        if (job.refuse) job.refuse(job.arg);
        else job.run(job.arg);
        n++;
    }
}

/* Worker threads running. */
int gw_pool_threads(gw_pool *p) { return p->nthreads; }

/* Refuse what is queued, let running jobs finish, join and free. */
void gw_pool_stop(gw_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nthreads; i++) pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->ring);
    free(p->threads);
    free(p);
}
