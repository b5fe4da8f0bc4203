/* limits.c — per-key token buckets and per-tenant execution slots. The buckets are a small
 * hash table of fixed-size entries split into lock stripes, so concurrent requests for
 * different keys rarely contend; entries live as long as the table: their number is bounded
 * by the number of keys, which only authenticated callers reach. The slots are a gg_tally
 * (util's one home of per-tenant counting) under one mutex. */
#include "auth/auth.h"

#include <stdatomic.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define STRIPES 16
#define BUCKETS_PER_STRIPE 64

typedef struct entry {
    struct entry *next;
    char name[GG_TENANT_MAX > GG_KEY_ID_MAX ? GG_TENANT_MAX : GG_KEY_ID_MAX];
    double tokens, last_ms;
} entry;

typedef struct table {
    struct {
        pthread_mutex_t lock;
        entry *buckets[BUCKETS_PER_STRIPE];
    } stripe[STRIPES];
} table;

static size_t hash_name(const char *s) { return (size_t)gg_hash_str(s); }

static table *table_new(void) {
    table *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    for (int i = 0; i < STRIPES; i++) pthread_mutex_init(&t->stripe[i].lock, NULL);
    return t;
}

static void table_free(table *t) {
    if (!t) return;
    for (int i = 0; i < STRIPES; i++) {
        for (int b = 0; b < BUCKETS_PER_STRIPE; b++) {
            entry *e = t->stripe[i].buckets[b];
            while (e) { entry *n = e->next; free(e); e = n; }
        }
        pthread_mutex_destroy(&t->stripe[i].lock);
    }
    free(t);
}

/* Find or create name's entry; returns it with its stripe locked (*lock set), or NULL
 * (nothing locked) on OOM or an over-long name. */
static entry *table_get(table *t, const char *name, pthread_mutex_t **lock, bool create) {
    if (strlen(name) >= sizeof ((entry *)0)->name) return NULL;
    size_t h = hash_name(name);
    size_t si = h % STRIPES, bi = (h / STRIPES) % BUCKETS_PER_STRIPE;
    pthread_mutex_lock(&t->stripe[si].lock);
    entry **slot = &t->stripe[si].buckets[bi];
    for (entry *e = *slot; e; e = e->next) {
        if (strcmp(e->name, name) == 0) { *lock = &t->stripe[si].lock; return e; }
    }
    entry *e = create ? calloc(1, sizeof *e) : NULL;
    if (!e) { pthread_mutex_unlock(&t->stripe[si].lock); return NULL; }
    strcpy(e->name, name);
    e->tokens = -1; /* "new": filled on first use */
    e->next = *slot;
    *slot = e;
    *lock = &t->stripe[si].lock;
    return e;
}

/* ---- rate limiter -------------------------------------------------------------------------- */

struct gg_ratelimit {
    _Atomic double rate, burst;
    table *t;
};

/* rate and burst may change at run time (gg_ratelimit_set): atomics, read once a take. */
static void ratelimit_store(gg_ratelimit *rl, double rate, int burst) {
    double b = burst > 0 ? burst : (rate * 2 >= 1 ? ceil(rate * 2) : 1);
    atomic_store_explicit(&rl->burst, b, memory_order_relaxed);
    atomic_store_explicit(&rl->rate, rate, memory_order_relaxed);
}

gg_ratelimit *gg_ratelimit_new(double rate, int burst) {
    gg_ratelimit *rl = calloc(1, sizeof *rl);
    if (!rl) return NULL;
    ratelimit_store(rl, rate, burst);
    if (!(rl->t = table_new())) { free(rl); return NULL; } /* also unlimited: a reload may set a rate */
    return rl;
}

void gg_ratelimit_set(gg_ratelimit *rl, double rate, int burst) {
    if (rl) ratelimit_store(rl, rate, burst);
}

void gg_ratelimit_free(gg_ratelimit *rl) {
    if (!rl) return;
    table_free(rl->t);
    free(rl);
}

int gg_ratelimit_take(gg_ratelimit *rl, const char *key, double now_ms) {
    double rate = 0, burst = 0;
    if (rl) rate = atomic_load_explicit(&rl->rate, memory_order_relaxed);
    if (!rl || rate <= 0 || !key) return 0;
    burst = atomic_load_explicit(&rl->burst, memory_order_relaxed);
    pthread_mutex_t *lock;
    entry *e = table_get(rl->t, key, &lock, true);
    if (!e) return 1; /* out of memory: refuse briefly rather than run unlimited */
    if (e->tokens < 0) {
        e->tokens = burst;
        e->last_ms = now_ms;
    }
    double elapsed = now_ms - e->last_ms;
    if (elapsed > 0) {
        e->tokens = fmin(burst, e->tokens + elapsed * rate / 1000.0);
        e->last_ms = now_ms;
    }
    int retry = 0;
    if (e->tokens >= 1.0) {
        e->tokens -= 1.0;
    } else {
        double secs = (1.0 - e->tokens) / rate;
        retry = (int)ceil(secs);
        if (retry < 1) retry = 1;
    }
    pthread_mutex_unlock(lock);
    return retry;
}

/* ---- tenant slots --------------------------------------------------------------------------- */

struct gg_tenant_slots {
    pthread_mutex_t mu; /* guards in_use */
    gg_tally in_use;
    _Atomic int max;    /* gg_tenant_slots_set may change it while calls run */
};

gg_tenant_slots *gg_tenant_slots_new(int max_per_tenant) {
    gg_tenant_slots *ts = calloc(1, sizeof *ts);
    if (!ts) return NULL;
    pthread_mutex_init(&ts->mu, NULL);
    ts->max = max_per_tenant;
    return ts;
}

void gg_tenant_slots_set(gg_tenant_slots *ts, int max_per_tenant) {
    if (ts) atomic_store_explicit(&ts->max, max_per_tenant, memory_order_relaxed);
}

void gg_tenant_slots_free(gg_tenant_slots *ts) {
    if (!ts) return;
    gg_tally_clear(&ts->in_use);
    pthread_mutex_destroy(&ts->mu);
    free(ts);
}

/* A tenant name too long to be one (GG_TENANT_MAX) gets no slot. */
bool gg_tenant_slots_acquire(gg_tenant_slots *ts, const char *tenant) {
    if (!ts || !tenant) return true;
    if (strlen(tenant) >= GG_TENANT_MAX) return false;
    int max = atomic_load_explicit(&ts->max, memory_order_relaxed);
    pthread_mutex_lock(&ts->mu);
    bool ok = gg_tally_add(&ts->in_use, tenant, max) == GG_TALLY_OK;
    pthread_mutex_unlock(&ts->mu);
    return ok;
}

void gg_tenant_slots_release(gg_tenant_slots *ts, const char *tenant) {
    if (!ts || !tenant) return;
    pthread_mutex_lock(&ts->mu);
    gg_tally_sub(&ts->in_use, tenant);
    pthread_mutex_unlock(&ts->mu);
}

int gg_tenant_slots_in_use(gg_tenant_slots *ts, const char *tenant) {
    if (!ts || !tenant) return 0;
    pthread_mutex_lock(&ts->mu);
    int n = gg_tally_get(&ts->in_use, tenant);
    pthread_mutex_unlock(&ts->mu);
    return n;
}
