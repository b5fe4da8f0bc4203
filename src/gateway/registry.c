/* registry.c — every stored graph's active version, by (tenant, graph), with a bounded
 * cache of compiled versions.
 *
 * A growing chained hash table under a read-write lock knows every graph and its active
 * version number (cheap: a few hundred bytes per graph, so 100,000 stored graphs start in
 * well under a second). A version is compiled into an mcp_server only when first used
 * (gw_registry_get calls the loader) or when installed already compiled (an upload or a
 * rollback validates by compiling). At most cache_size compiled versions stay: past it the
 * least recently used one that nobody else references is dropped and compiled again on its
 * next use.
 *
 * Lifetimes are references: a lookup copies out a new reference, so activation (a pointer
 * swap under the write lock) and eviction (dropping the registry's reference) never free a
 * version under a running call or an open stream (streams.c keeps one per session) — they
 * hold it until they let go (RCU-like by refcount). Eviction also skips versions someone
 * else references, so a graph in use is never compiled twice; when every cached version is
 * in use the cache stays over its size until one is released.
 *
 * Concurrent first uses of one version compile it once: the first caller marks the entry
 * loading, the others wait on a condition (compiling takes milliseconds of CPU, never a
 * downstream wait) and then take its result. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/internal.h"

#define MIN_BUCKETS 256

typedef struct gentry {
    char tenant[GG_NAME_MAX + 1], graph[GG_NAME_MAX + 1];
    int version;
    mcp_server *srv;               /* NULL: not compiled (never used, or evicted) */
    _Atomic unsigned long long used; /* LRU clock of the last lookup */
    unsigned long long loading;    /* nonzero: the id of the load in progress */
    unsigned mark;                 /* the sync pass that last saw the graph */
    struct gentry *next;           /* hash chain */
    struct gentry *cprev, *cnext;  /* list of compiled entries */
} gentry;

struct gw_registry {
    pthread_rwlock_t lock;
    gentry **buckets;
    size_t nbuckets, count, compiled, cache_size;
    gentry *compiled_head;
    _Atomic unsigned long long clock; /* LRU clock */
    unsigned long long load_ids;   /* under the write lock */
    gw_registry_loader loader;
    void *loader_user;
    pthread_mutex_t load_mu;       /* load_gen and load_cv: a load finished */
    pthread_cond_t load_cv;
    unsigned long long load_gen;
    struct { _Atomic unsigned long long hits, compiles, evictions, load_failures; } stats;
    gw_registry_hook hook;         /* change listener (the GET streams), set before use */
    void *hook_user;
};

static size_t tenant_graph_hash(const char *a, const char *b) {
    return (size_t)gg_hash_add(gg_hash_sep(gg_hash_str(a), '/'), b);
}

/* An empty registry keeping at most cache_size compiled versions (0 = no bound); loader
 * compiles a stored version on first use. NULL on OOM. */
gw_registry *gw_registry_new(size_t cache_size, gw_registry_loader loader, void *loader_user) {
    gw_registry *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    if (!(r->buckets = calloc(MIN_BUCKETS, sizeof *r->buckets))) {
        free(r);
        return NULL;
    }
    r->nbuckets = MIN_BUCKETS;
    r->cache_size = cache_size;
    r->loader = loader;
    r->loader_user = loader_user;
    pthread_rwlock_init(&r->lock, NULL);
    pthread_mutex_init(&r->load_mu, NULL);
    pthread_cond_init(&r->load_cv, NULL);
    return r;
}

/* Free the registry and its server references. */
void gw_registry_free(gw_registry *r) {
    if (!r) return;
    for (size_t i = 0; i < r->nbuckets; i++)
        for (gentry *e = r->buckets[i], *n; e; e = n) {
            n = e->next;
            mcp_server_unref(e->srv);
            free(e);
        }
    free(r->buckets);
    pthread_cond_destroy(&r->load_cv);
    pthread_mutex_destroy(&r->load_mu);
    pthread_rwlock_destroy(&r->lock);
    free(r);
}

/* Tell the change listener (outside the lock); see internal.h. */
void gw_registry_set_hook(gw_registry *r, gw_registry_hook fn, void *user) {
    r->hook = fn;
    r->hook_user = user;
}

static void changed(gw_registry *r, const char *tenant, const char *graph, bool removed) {
    if (r->hook) r->hook(r->hook_user, tenant, graph, removed);
}

static gentry **find(gw_registry *r, const char *tenant, const char *graph) {
    gentry **pp = &r->buckets[tenant_graph_hash(tenant, graph) % r->nbuckets];
    for (; *pp; pp = &(*pp)->next)
        if (strcmp((*pp)->tenant, tenant) == 0 && strcmp((*pp)->graph, graph) == 0) break;
    return pp;
}

/* Double the table once chains average two entries (under the write lock; on OOM the
 * chains just grow longer). */
static void grow(gw_registry *r) {
    if (r->count < 2 * r->nbuckets) return;
    size_t n = 2 * r->nbuckets;
    gentry **b = calloc(n, sizeof *b);
    if (!b) return;
    for (size_t i = 0; i < r->nbuckets; i++)
        for (gentry *e = r->buckets[i], *next; e; e = next) {
            next = e->next;
            size_t h = tenant_graph_hash(e->tenant, e->graph) % n;
            e->next = b[h];
            b[h] = e;
        }
    free(r->buckets);
    r->buckets = b;
    r->nbuckets = n;
}

static void touch(gw_registry *r, gentry *e) {
    atomic_store_explicit(&e->used, atomic_fetch_add_explicit(&r->clock, 1, memory_order_relaxed) + 1, memory_order_relaxed);
}

static void stat_add(_Atomic unsigned long long *c) { atomic_fetch_add_explicit(c, 1, memory_order_relaxed); }

/* Take e's compiled server out (under the write lock); the caller unrefs it outside. */
static mcp_server *uncache(gw_registry *r, gentry *e) {
    mcp_server *s = e->srv;
    if (!s) return NULL;
    if (e->cprev) e->cprev->cnext = e->cnext;
    else r->compiled_head = e->cnext;
    if (e->cnext) e->cnext->cprev = e->cprev;
    e->cprev = e->cnext = NULL;
    e->srv = NULL;
    r->compiled--;
    return s;
}

/* Cache srv (a reference is taken) as e's compiled version (under the write lock). */
static void cache(gw_registry *r, gentry *e, mcp_server *srv) {
    e->srv = mcp_server_ref(srv);
    e->cprev = NULL;
    e->cnext = r->compiled_head;
    if (r->compiled_head) r->compiled_head->cprev = e;
    r->compiled_head = e;
    r->compiled++;
    touch(r, e);
}

/* Past the cache size: the least recently used compiled version nobody else holds (under
 * the write lock, so no new reference can appear), or NULL when all are in use. */
static mcp_server *evict_one(gw_registry *r, const gentry *keep) {
    if (!r->cache_size || r->compiled <= r->cache_size) return NULL;
    gentry *victim = NULL;
    for (gentry *e = r->compiled_head; e; e = e->cnext)
        if (e != keep && !mcp_server_shared(e->srv) && (!victim || e->used < victim->used)) victim = e;
    if (!victim) return NULL;
    stat_add(&r->stats.evictions);
    return uncache(r, victim);
}

/* Evict down to the cache size; the servers are released after the lock. */
static size_t evict(gw_registry *r, const gentry *keep, mcp_server **out, size_t max) {
    size_t n = 0;
    while (n < max && (out[n] = evict_one(r, keep))) n++;
    return n;
}

static void release_all(mcp_server **v, size_t n) {
    for (size_t i = 0; i < n; i++) mcp_server_unref(v[i]); /* the last unref may stop downstream clients */
}

#define EVICT_BATCH 8

/* Wake the callers waiting for a load to finish. */
static void load_done(gw_registry *r) {
    pthread_mutex_lock(&r->load_mu);
    r->load_gen++;
    pthread_cond_broadcast(&r->load_cv);
    pthread_mutex_unlock(&r->load_mu);
}

/* Under the write lock, with e loading by someone else: release the lock and wait until a
 * load finishes (any: the caller looks again). */
static void wait_load(gw_registry *r) {
    pthread_mutex_lock(&r->load_mu);
    unsigned long long gen = r->load_gen; /* read before the loader can clear its mark */
    pthread_mutex_unlock(&r->load_mu);
    pthread_rwlock_unlock(&r->lock);
    pthread_mutex_lock(&r->load_mu);
    while (r->load_gen == gen) pthread_cond_wait(&r->load_cv, &r->load_mu);
    pthread_mutex_unlock(&r->load_mu);
}

/* Compile version of tenant/graph (entry marked with load id) and cache it if the entry
 * still wants that version. The compiled server (new reference) or NULL + err. */
static mcp_server *load(gw_registry *r, const char *tenant, const char *graph, int version,
                        unsigned long long id, gg_error *err) {
    mcp_server *s = r->loader(r->loader_user, tenant, graph, version, err);
    stat_add(s ? &r->stats.compiles : &r->stats.load_failures);
    mcp_server *dead[EVICT_BATCH];
    size_t ndead = 0;
    pthread_rwlock_wrlock(&r->lock);
    gentry *e = *find(r, tenant, graph);
    if (e && e->loading == id) {
        e->loading = 0;
        if (s && !e->srv && e->version == version) {
            cache(r, e, s);
            ndead = evict(r, e, dead, EVICT_BATCH);
        }
    }
    pthread_rwlock_unlock(&r->lock);
    load_done(r);
    release_all(dead, ndead);
    return s;
}

/* The active version's server (new reference), compiled now if it is not cached; NULL +
 * err "not_found" when no such graph, or the loader's error. */
mcp_server *gw_registry_get(gw_registry *r, const char *tenant, const char *graph, int *version, gg_error *err) {
    pthread_rwlock_rdlock(&r->lock);
    gentry *e = *find(r, tenant, graph);
    mcp_server *s = e ? mcp_server_ref(e->srv) : NULL;
    if (s) {
        touch(r, e);
        if (version) *version = e->version;
        stat_add(&r->stats.hits);
    }
    pthread_rwlock_unlock(&r->lock);
    if (s || !e) {
        if (!s) gg_error_set(err, "not_found", "no graph %s/%s", tenant, graph);
        return s;
    }
    for (;;) { /* cold: compile it, or wait for whoever already does */
        pthread_rwlock_wrlock(&r->lock);
        e = *find(r, tenant, graph);
        if (!e || e->srv) {
            s = e ? mcp_server_ref(e->srv) : NULL;
            if (s && version) *version = e->version;
            if (s) touch(r, e);
            pthread_rwlock_unlock(&r->lock);
            if (!s) gg_error_set(err, "not_found", "no graph %s/%s", tenant, graph);
            return s;
        }
        if (!e->loading) break;
        wait_load(r);
    }
    unsigned long long id = e->loading = ++r->load_ids;
    int v = e->version;
    pthread_rwlock_unlock(&r->lock);
    if (version) *version = v;
    return load(r, tenant, graph, v, id, err);
}

/* The cached server (new reference) or NULL: never compiles. */
mcp_server *gw_registry_peek(gw_registry *r, const char *tenant, const char *graph, int *version) {
    pthread_rwlock_rdlock(&r->lock);
    gentry *e = *find(r, tenant, graph);
    mcp_server *s = e ? mcp_server_ref(e->srv) : NULL;
    if (e && version) *version = e->version;
    pthread_rwlock_unlock(&r->lock);
    return s;
}

/* The entry for tenant/graph, created (not compiled) when absent; NULL on OOM or a name
 * too long. Under the write lock. */
static gentry *entry(gw_registry *r, const char *tenant, const char *graph, bool *created) {
    *created = false;
    if (strlen(tenant) > GG_NAME_MAX || strlen(graph) > GG_NAME_MAX) return NULL;
    gentry **pp = find(r, tenant, graph);
    if (*pp) return *pp;
    gentry *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    strcpy(e->tenant, tenant);
    strcpy(e->graph, graph);
    *pp = e;
    r->count++;
    *created = true;
    grow(r);
    return e;
}

/* Make srv (a reference is taken, and cached) the active version. */
bool gw_registry_put(gw_registry *r, const char *tenant, const char *graph, int version, mcp_server *srv) {
    mcp_server *dead[EVICT_BATCH + 1];
    size_t ndead = 0;
    bool created;
    pthread_rwlock_wrlock(&r->lock);
    gentry *e = entry(r, tenant, graph, &created);
    if (e) {
        if ((dead[0] = uncache(r, e))) ndead++;
        e->version = version;
        e->loading = 0; /* a load of the previous version does not cache itself */
        cache(r, e, srv);
        ndead += evict(r, e, dead + ndead, EVICT_BATCH);
    }
    pthread_rwlock_unlock(&r->lock);
    release_all(dead, ndead);
    if (e) changed(r, tenant, graph, false);
    return e != NULL;
}

/* See internal.h: as gw_registry_put, for an entry still at version. */
bool gw_registry_refresh(gw_registry *r, const char *tenant, const char *graph, int version, mcp_server *srv) {
    mcp_server *old = NULL;
    pthread_rwlock_wrlock(&r->lock);
    gentry *e = *find(r, tenant, graph);
    bool ok = e && e->version == version;
    if (ok) {
        old = uncache(r, e);
        e->loading = 0;
        cache(r, e, srv);
    }
    pthread_rwlock_unlock(&r->lock);
    mcp_server_unref(old);
    if (ok) changed(r, tenant, graph, false);
    return ok;
}

/* The store's sync (gateway.c): tenant/graph's active version is version, seen in pass
 * mark. A new graph or another version is not compiled here; the old version's server is
 * dropped (runs in flight keep it) and *was_hot tells whether it was compiled (the caller
 * compiles the new one in the background then). */
bool gw_registry_declare(gw_registry *r, const char *tenant, const char *graph, int version, unsigned mark,
                         bool *was_hot) {
    mcp_server *old = NULL;
    bool created, news = false;
    pthread_rwlock_wrlock(&r->lock);
    gentry *e = entry(r, tenant, graph, &created);
    if (e) {
        e->mark = mark;
        if (created || e->version != version) {
            old = uncache(r, e);
            e->version = version;
            e->loading = 0;
            news = true;
        }
    }
    pthread_rwlock_unlock(&r->lock);
    if (was_hot) *was_hot = old != NULL;
    mcp_server_unref(old);
    if (news) changed(r, tenant, graph, false);
    return e != NULL;
}

/* Unlink and collect every entry matching (under the write lock). */
static gentry *unlink_if(gw_registry *r, bool (*match)(const gentry *, const void *), const void *arg) {
    gentry *dead = NULL;
    for (size_t i = 0; i < r->nbuckets; i++)
        for (gentry **pp = &r->buckets[i]; *pp;) {
            gentry *e = *pp;
            if (match(e, arg)) {
                *pp = e->next;
                mcp_server *s = uncache(r, e);
                e->srv = s; /* released with the entry, outside the lock */
                e->next = dead;
                dead = e;
                r->count--;
            } else pp = &e->next;
        }
    return dead;
}

/* Tell the listener and free the unlinked entries (outside the lock). */
static void bury(gw_registry *r, gentry *dead) {
    for (gentry *n; dead; dead = n) {
        n = dead->next;
        changed(r, dead->tenant, dead->graph, true);
        mcp_server_unref(dead->srv);
        free(dead);
    }
}

static bool same_tenant(const gentry *e, const void *arg) { return strcmp(e->tenant, arg) == 0; }

static bool unmarked(const gentry *e, const void *arg) { return e->mark != *(const unsigned *)arg; }

/* Forget a deleted graph (runs in flight keep their version). */
void gw_registry_remove(gw_registry *r, const char *tenant, const char *graph) {
    if (strlen(tenant) > GG_NAME_MAX || strlen(graph) > GG_NAME_MAX) return;
    pthread_rwlock_wrlock(&r->lock);
    gentry **pp = find(r, tenant, graph), *e = *pp;
    if (e) {
        *pp = e->next;
        e->srv = uncache(r, e);
        e->next = NULL;
        r->count--;
    }
    pthread_rwlock_unlock(&r->lock);
    bury(r, e);
}

/* Forget every graph of a deleted tenant. */
void gw_registry_remove_tenant(gw_registry *r, const char *tenant) {
    pthread_rwlock_wrlock(&r->lock);
    gentry *dead = unlink_if(r, same_tenant, tenant);
    pthread_rwlock_unlock(&r->lock);
    bury(r, dead);
}

/* Forget every graph the sync pass mark did not see (deleted elsewhere). */
void gw_registry_sweep(gw_registry *r, unsigned mark) {
    pthread_rwlock_wrlock(&r->lock);
    gentry *dead = unlink_if(r, unmarked, &mark);
    pthread_rwlock_unlock(&r->lock);
    bury(r, dead);
}

/* Drop compiled versions past the cache size that were in use when the cache filled and
 * are free now (the gateway's watcher calls it every second). */
void gw_registry_trim(gw_registry *r) {
    mcp_server *dead[EVICT_BATCH];
    size_t n;
    do {
        pthread_rwlock_wrlock(&r->lock);
        n = evict(r, NULL, dead, EVICT_BATCH);
        pthread_rwlock_unlock(&r->lock);
        release_all(dead, n);
    } while (n == EVICT_BATCH);
}

/* Counters and gauges for /metrics and the tests. */
gw_registry_stats gw_registry_get_stats(gw_registry *r) {
    gw_registry_stats st;
    pthread_rwlock_rdlock(&r->lock);
    st.graphs = r->count;
    st.compiled = r->compiled;
    st.cache_size = r->cache_size;
    pthread_rwlock_unlock(&r->lock);
    st.hits = atomic_load_explicit(&r->stats.hits, memory_order_relaxed);
    st.compiles = atomic_load_explicit(&r->stats.compiles, memory_order_relaxed);
    st.evictions = atomic_load_explicit(&r->stats.evictions, memory_order_relaxed);
    st.load_failures = atomic_load_explicit(&r->stats.load_failures, memory_order_relaxed);
    return st;
}

/* Graphs known (compiled or not). */
/* Every known graph as [tenant, graph, version] (compiled or not), for walks that must not
 * hold the lock while they work (the downstream catalog refresh). */
json_t *gw_registry_list(gw_registry *r) {
    json_t *out = json_array();
    pthread_rwlock_rdlock(&r->lock);
    for (size_t i = 0; out && i < r->nbuckets; i++)
        for (gentry *e = r->buckets[i]; e; e = e->next)
            json_array_append_new(out, json_pack("[ssi]", e->tenant, e->graph, e->version));
    pthread_rwlock_unlock(&r->lock);
    return out;
}

size_t gw_registry_count(gw_registry *r) {
    pthread_rwlock_rdlock(&r->lock);
    size_t n = r->count;
    pthread_rwlock_unlock(&r->lock);
    return n;
}
