/* pool.c — the tool-call worker pool: a fixed set of threads that only compute, fed by one
 * queue per tenant served round-robin. A tenant with a thousand runnable steps delays
 * another tenant's single step by at most one step per worker, and no tenant runs on more
 * than its share of the workers at once. Submitting never blocks: a full queue (the
 * pool's or the tenant's) is the caller's signal to answer at once. Continuations of runs
 * whose downstream answer arrived (gw_pool_resume) join the same per-tenant queues and are
 * never refused. */
#include <stdlib.h>
#include <string.h>

#include "gateway/internal.h"

#define BUCKETS 256

typedef struct qnode {
    gw_job job;
    bool resume;
    struct qnode *next;
} qnode;

typedef struct tq {
    char name[GG_NAME_MAX + 1];
    qnode *head, *tail;
    int queued;        /* new calls waiting (resumes not counted) */
    int running;       /* jobs of this tenant on a worker now */
    bool active;       /* in the round-robin list */
    struct tq *hnext;  /* hash chain */
    struct tq *anext;  /* round-robin list */
} tq;

struct gw_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    tq *buckets[BUCKETS];
    tq *active_head, *active_tail; /* tenants with queued jobs, served from the head */
    qnode *free_nodes;
    int nfree;
    int cap, count;    /* new calls queued in all / allowed */
    int resumes;       /* continuations queued */
    int tenant_running, tenant_queued;
    bool stopping;
    int idle; /* workers blocked in cond_wait: a submit wakes one only if some wait */
    int nthreads;
    pthread_t *threads;
};

static unsigned hash_name(const char *s) { return (unsigned)(gg_hash_str(s) % BUCKETS); }

/* The tenant's queue, made on first use (caller holds mu). */
static tq *tenant_queue(gw_pool *p, const char *name) {
    if (!name) name = "";
    unsigned h = hash_name(name);
    for (tq *q = p->buckets[h]; q; q = q->hnext)
        if (!strcmp(q->name, name)) return q;
    tq *q = calloc(1, sizeof *q);
    if (!q) return NULL;
    snprintf(q->name, sizeof q->name, "%s", name);
    q->hnext = p->buckets[h];
    p->buckets[h] = q;
    return q;
}

static void activate(gw_pool *p, tq *q) {
    if (q->active) return;
    q->active = true;
    q->anext = NULL;
    if (p->active_tail) p->active_tail->anext = q;
    else p->active_head = q;
    p->active_tail = q;
}

/* The next job in round-robin order: the first active tenant below its running cap gives
 * one job and goes to the back of the list (caller holds mu). */
static qnode *take(gw_pool *p, tq **owner) {
    tq *prev = NULL;
    for (tq *q = p->active_head; q; prev = q, q = q->anext) {
        if (!p->stopping && p->tenant_running > 0 && q->running >= p->tenant_running) continue;
        qnode *n = q->head;
        q->head = n->next;
        if (!q->head) q->tail = NULL;
        if (n->resume) p->resumes--;
        else q->queued--, p->count--;
        q->running++;
        /* unlink q, then put it back at the end if it still has work */
        if (prev) prev->anext = q->anext;
        else p->active_head = q->anext;
        if (p->active_tail == q) p->active_tail = prev;
        q->active = false;
        if (q->head) activate(p, q);
        *owner = q;
        return n;
    }
    return NULL;
}

static void *worker(void *arg) {
    gw_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        tq *q = NULL;
        qnode *n = take(p, &q);
        if (!n) {
            if (p->stopping && p->count + p->resumes == 0) break;
            p->idle++;
            pthread_cond_wait(&p->cv, &p->mu);
            p->idle--;
            continue;
        }
        gw_job job = n->job;
        bool refuse = p->stopping && !n->resume;
        n->next = p->free_nodes; /* keep nodes for the next submits: no malloc per call */
        p->free_nodes = n;
        p->nfree++;
        pthread_mutex_unlock(&p->mu);
        if (refuse && job.refuse) job.refuse(job.arg);
        else job.run(job.arg);
        pthread_mutex_lock(&p->mu);
        q->running--;
        /* a tenant held back by its cap may go on now */
        if (q->head && p->idle > 0) pthread_cond_signal(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Start threads workers (>= 1) with room for queue_size waiting jobs (>= 1); a tenant may
 * have at most tenant_running jobs on workers and tenant_queued calls waiting (0 = no cap;
 * more while it is alone: tenant_may_queue). */
gw_pool *gw_pool_new(int threads, int queue_size, int tenant_running, int tenant_queued) {
    gw_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->cap = queue_size > 0 ? queue_size : 1;
    p->tenant_running = tenant_running;
    p->tenant_queued = tenant_queued;
    p->threads = calloc((size_t)(threads > 0 ? threads : 1), sizeof *p->threads);
    if (!p->threads) goto fail;
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
    free(p->threads);
    free(p);
    return NULL;
}

/* Queue a job on its tenant's queue (caller holds mu); false on OOM. */
static bool enqueue(gw_pool *p, gw_job job, bool resume) {
    tq *q = tenant_queue(p, job.tenant);
    qnode *n = p->free_nodes;
    if (n) {
        p->free_nodes = n->next;
        p->nfree--;
    } else {
        n = malloc(sizeof *n);
    }
    if (!q || !n) {
        free(n);
        return false;
    }
    n->job = job;
    n->resume = resume;
    n->next = NULL;
    if (q->tail) q->tail->next = n;
    else q->head = n;
    q->tail = n;
    if (resume) p->resumes++;
    else q->queued++, p->count++;
    activate(p, q);
    return true;
}

/* Whether q may queue one more new call (caller holds mu). Within tenant_queued always.
 * Past it only while no other tenant has a call waiting, and up to half the pool's queue:
 * the per-tenant cap exists to keep room and turns for other tenants, so a tenant alone
 * borrows the idle capacity instead of being refused while workers are free (issue 31: one
 * tenant at 256 connections got 429 whenever its calls left the inline path). Once another
 * tenant queues, the cap applies again to new calls; what was borrowed drains round-robin,
 * and the other half of the queue is still free for the newcomers. */
static bool tenant_may_queue(const gw_pool *p, const tq *q) {
    if (p->tenant_queued <= 0 || q->queued < p->tenant_queued) return true;
    bool others_waiting = p->count > q->queued;
    return !others_waiting && q->queued < p->cap / 2;
}

/* Queue a new call (see internal.h). The wake-up is sent after unlocking (a worker woken
 * under the lock would at once block on it again: profiles showed the polling threads
 * waiting on this mutex) and only when a worker is idle; busy workers take the job when
 * they loop. */
gw_submit_rc gw_pool_submit(gw_pool *p, gw_job job) {
    pthread_mutex_lock(&p->mu);
    gw_submit_rc rc = GW_SUBMIT_OK;
    if (p->stopping) rc = GW_SUBMIT_STOPPING;
    else if (p->count >= p->cap) rc = GW_SUBMIT_FULL;
    else {
        tq *q = tenant_queue(p, job.tenant);
        if (q && !tenant_may_queue(p, q)) rc = GW_SUBMIT_TENANT_FULL;
        else if (!enqueue(p, job, false)) rc = GW_SUBMIT_FULL;
    }
    bool wake = rc == GW_SUBMIT_OK && p->idle > 0;
    pthread_mutex_unlock(&p->mu);
    if (wake) pthread_cond_signal(&p->cv);
    return rc;
}

/* Queue a continuation: never refused; without a pool to run it (stopped, out of memory)
 * it runs right here. */
void gw_pool_resume(gw_pool *p, gw_job job) {
    pthread_mutex_lock(&p->mu);
    bool ok = p->nthreads > 0 && enqueue(p, job, true);
    bool wake = ok && p->idle > 0;
    pthread_mutex_unlock(&p->mu);
    if (wake) pthread_cond_signal(&p->cv);
    if (!ok) job.run(job.arg);
}

/* Jobs waiting (for metrics). */
int gw_pool_queued(gw_pool *p) {
    pthread_mutex_lock(&p->mu);
    int n = p->count + p->resumes;
    pthread_mutex_unlock(&p->mu);
    return n;
}

/* Unlink the new calls (not the continuations) of q into *out; q leaves the round-robin
 * list when nothing stays queued (caller holds mu). */
static void take_calls(gw_pool *p, tq *q, qnode **out) {
    qnode **pp = &q->head, *last = NULL;
    while (*pp) {
        qnode *n = *pp;
        if (n->resume) {
            last = n;
            pp = &n->next;
            continue;
        }
        *pp = n->next;
        q->queued--;
        p->count--;
        n->next = *out;
        *out = n;
    }
    q->tail = last;
}

/* Refuse what is queued, now, on this thread; see internal.h. Every tenant's queued calls
 * are taken out under one lock; continuations stay for the workers (their runs are running
 * calls, which finish). */
int gw_pool_refuse_queued(gw_pool *p) {
    qnode *calls = NULL;
    pthread_mutex_lock(&p->mu);
    tq *prev = NULL;
    for (tq *q = p->active_head, *next; q; q = next) {
        next = q->anext;
        take_calls(p, q, &calls);
        if (q->head) {
            prev = q;
            continue;
        }
        if (prev) prev->anext = next;
        else p->active_head = next;
        if (p->active_tail == q) p->active_tail = prev;
        q->active = false;
    }
    pthread_mutex_unlock(&p->mu);
    int n = 0;
    qnode *done = NULL;
    while (calls) { /* no order among them: each answers its own client */
        qnode *c = calls;
        calls = c->next;
        if (c->job.refuse) c->job.refuse(c->job.arg);
        else c->job.run(c->job.arg);
        c->next = done;
        done = c;
        n++;
    }
    pthread_mutex_lock(&p->mu);
    while (done) { /* back to the free list, which the pool frees at stop */
        qnode *c = done;
        done = c->next;
        c->next = p->free_nodes;
        p->free_nodes = c;
        p->nfree++;
    }
    pthread_mutex_unlock(&p->mu);
    return n;
}

/* Worker threads running. */
int gw_pool_threads(gw_pool *p) { return p->nthreads; }

/* Refuse queued calls, run queued continuations, let running jobs finish, join and free. */
void gw_pool_stop(gw_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nthreads; i++) pthread_join(p->threads[i], NULL);
    pthread_mutex_lock(&p->mu);
    p->nthreads = 0; /* late continuations run inline (gw_pool_resume) */
    pthread_mutex_unlock(&p->mu);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    for (int b = 0; b < BUCKETS; b++)
        while (p->buckets[b]) {
            tq *q = p->buckets[b];
            p->buckets[b] = q->hnext;
            free(q);
        }
    while (p->free_nodes) {
        qnode *n = p->free_nodes;
        p->free_nodes = n->next;
        free(n);
    }
    free(p->threads);
    free(p);
}
