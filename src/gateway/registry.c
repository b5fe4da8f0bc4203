/* registry.c — the active version of every graph, by (tenant, graph).
 *
 * A small chained hash table under a read-write lock. A lookup copies out a reference to
 * the version's mcp_server, so activation (a pointer swap under the write lock) never
 * waits for runs: they hold the old version until they finish (RCU-like by refcount). */
#include <stdlib.h>
#include <string.h>

#include "gateway/internal.h"

#define BUCKETS 256

typedef struct gentry {
    char tenant[GG_NAME_MAX + 1], graph[GG_NAME_MAX + 1];
    int version;
    mcp_server *srv;
    struct gentry *next;
} gentry;

struct gw_registry {
    pthread_rwlock_t lock;
    gentry *buckets[BUCKETS];
    size_t count;
    gw_registry_hook hook; /* change listener (the GET streams), set before use */
    void *hook_user;
};

static size_t hash2(const char *a, const char *b) {
    size_t h = 1469598103934665603ull;
    for (; *a; a++) h = (h ^ (unsigned char)*a) * 1099511628211ull;
    h = (h ^ '/') * 1099511628211ull;
    for (; *b; b++) h = (h ^ (unsigned char)*b) * 1099511628211ull;
    return h % BUCKETS;
}

/* An empty registry; NULL on OOM. */
gw_registry *gw_registry_new(void) {
    gw_registry *r = calloc(1, sizeof *r);
    if (r) pthread_rwlock_init(&r->lock, NULL);
    return r;
}

/* Free the registry and its server references. */
void gw_registry_free(gw_registry *r) {
    if (!r) return;
    for (size_t i = 0; i < BUCKETS; i++)
        for (gentry *e = r->buckets[i], *n; e; e = n) {
            n = e->next;
            mcp_server_unref(e->srv);
            free(e);
        }
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
    gentry **pp = &r->buckets[hash2(tenant, graph)];
    for (; *pp; pp = &(*pp)->next)
        if (strcmp((*pp)->tenant, tenant) == 0 && strcmp((*pp)->graph, graph) == 0) break;
    return pp;
}

/* The active version's server (new reference) or NULL. */
mcp_server *gw_registry_get(gw_registry *r, const char *tenant, const char *graph, int *version) {
    pthread_rwlock_rdlock(&r->lock);
    gentry *e = *find(r, tenant, graph);
    mcp_server *s = e ? mcp_server_ref(e->srv) : NULL;
    if (e && version) *version = e->version;
    pthread_rwlock_unlock(&r->lock);
    return s;
}

/* Make srv (a reference is taken) the active version. */
bool gw_registry_put(gw_registry *r, const char *tenant, const char *graph, int version, mcp_server *srv) {
    if (strlen(tenant) > GG_NAME_MAX || strlen(graph) > GG_NAME_MAX) return false;
    mcp_server *old = NULL;
    pthread_rwlock_wrlock(&r->lock);
    gentry **pp = find(r, tenant, graph);
    if (*pp) {
        old = (*pp)->srv;
        (*pp)->srv = mcp_server_ref(srv);
        (*pp)->version = version;
    } else {
        gentry *e = calloc(1, sizeof *e);
        if (!e) {
            pthread_rwlock_unlock(&r->lock);
            return false;
        }
        strcpy(e->tenant, tenant);
        strcpy(e->graph, graph);
        e->version = version;
        e->srv = mcp_server_ref(srv);
        *pp = e;
        r->count++;
    }
    pthread_rwlock_unlock(&r->lock);
    mcp_server_unref(old); /* outside the lock: the last unref may stop downstream clients */
    changed(r, tenant, graph, false);
    return true;
}

/* Forget a deleted graph (runs in flight keep their version). */
void gw_registry_remove(gw_registry *r, const char *tenant, const char *graph) {
    pthread_rwlock_wrlock(&r->lock);
    gentry **pp = find(r, tenant, graph), *e = *pp;
    if (e) {
        *pp = e->next;
        r->count--;
    }
    pthread_rwlock_unlock(&r->lock);
    if (e) {
        changed(r, tenant, graph, true);
        mcp_server_unref(e->srv);
        free(e);
    }
}

/* Forget every graph of a deleted tenant. */
void gw_registry_remove_tenant(gw_registry *r, const char *tenant) {
    gentry *dead = NULL;
    pthread_rwlock_wrlock(&r->lock);
    for (size_t i = 0; i < BUCKETS; i++)
        for (gentry **pp = &r->buckets[i]; *pp;) {
            gentry *e = *pp;
            if (strcmp(e->tenant, tenant) == 0) {
                *pp = e->next;
                e->next = dead;
                dead = e;
                r->count--;
            } else pp = &e->next;
        }
    pthread_rwlock_unlock(&r->lock);
    for (gentry *n; dead; dead = n) {
        n = dead->next;
        changed(r, dead->tenant, dead->graph, true);
        mcp_server_unref(dead->srv);
        free(dead);
    }
}

/* [[tenant, graph, version], ...] for the store sync. */
json_t *gw_registry_list(gw_registry *r) {
    json_t *out = json_array();
    pthread_rwlock_rdlock(&r->lock);
    for (size_t i = 0; out && i < BUCKETS; i++)
        for (gentry *e = r->buckets[i]; e; e = e->next)
            json_array_append_new(out, json_pack("[ssi]", e->tenant, e->graph, e->version));
    pthread_rwlock_unlock(&r->lock);
    return out;
}

/* Graph versions loaded. */
size_t gw_registry_count(gw_registry *r) {
    pthread_rwlock_rdlock(&r->lock);
    size_t n = r->count;
    pthread_rwlock_unlock(&r->lock);
    return n;
}
