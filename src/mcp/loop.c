/* loop.c — the downstream event loop: one thread per process drives libcurl's multi
 * interface (every HTTP exchange of every client), runs work posted by other threads, and
 * watches the deadline and cancel flag of every pending request in a min-heap, so that
 * thousands of calls can wait on downstream servers with no thread of their own. */
#include "mcp/loop.h"

#include <stdatomic.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* How often the cancel flags of waiting requests are looked at (they are plain flags that
 * other subsystems set: notifications/cancelled, session DELETE, shutdown, timeouts). */
#define CANCEL_TICK_MS 20

typedef struct post_item {
    void (*fn)(void *arg);
    void *arg;
    struct post_item *next;
} post_item;

/* Bytes one owner's downstream answers hold (see mcp_loop_hold); an entry at 0 is freed. */
typedef struct held_owner {
    struct held_owner *next;
    size_t bytes;
    char name[];
} held_owner;

struct mcp_loop {
    pthread_mutex_t mu;
    post_item *head, *tail;
    mcp_pending **heap;
    size_t n, cap;
    CURLM *multi;
    pthread_t thread;
    struct {
        pthread_mutex_t mu; /* its own: charged from write callbacks and stdio readers */
        held_owner *head;   /* owners holding bytes now (a few tenants: a list) */
        size_t max;         /* per owner; 0 = no bound */
    } held;
};

static pthread_once_t shared_once = PTHREAD_ONCE_INIT;
static mcp_loop *shared; /* the process's one loop (set once, then read-only) */

/* ---- pending references ------------------------------------------------------------------- */

void mcp_pending_init(mcp_pending *p, int timeout_ms, atomic_int *cancel, mcp_client_done_fn done, void *user) {
    p->refs = 1;
    p->done = done;
    p->user = user;
    p->cancel = cancel;
    p->deadline = gg_now_ms() + (timeout_ms > 0 ? timeout_ms : MCP_CLIENT_DEFAULT_TIMEOUT_MS);
    p->heap_idx = -1;
}

void mcp_pending_ref(mcp_pending *p) { atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed); }

void mcp_pending_unref(mcp_pending *p) {
    if (p && atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) == 1) p->destroy(p);
}

/* ---- deadline heap (under mu) -------------------------------------------------------------- */

static void heap_swap(mcp_loop *l, size_t a, size_t b) {
    mcp_pending *t = l->heap[a];
    l->heap[a] = l->heap[b];
    l->heap[b] = t;
    l->heap[a]->heap_idx = (int)a;
    l->heap[b]->heap_idx = (int)b;
}

static void heap_up(mcp_loop *l, size_t i) {
    while (i > 0 && l->heap[(i - 1) / 2]->deadline > l->heap[i]->deadline) {
        heap_swap(l, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void heap_down(mcp_loop *l, size_t i) {
    for (;;) {
        size_t m = i, a = 2 * i + 1, b = a + 1;
        if (a < l->n && l->heap[a]->deadline < l->heap[m]->deadline) m = a;
        if (b < l->n && l->heap[b]->deadline < l->heap[m]->deadline) m = b;
        if (m == i) return;
        heap_swap(l, i, m);
        i = m;
    }
}

static void heap_remove(mcp_loop *l, size_t i) {
    l->heap[i]->heap_idx = -1;
    l->n--;
    if (i == l->n) return;
    l->heap[i] = l->heap[l->n];
    l->heap[i]->heap_idx = (int)i;
    heap_down(l, i);
    heap_up(l, i);
}

void mcp_loop_watch(mcp_loop *l, mcp_pending *p) {
    mcp_pending_ref(p);
    pthread_mutex_lock(&l->mu);
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 256;
        mcp_pending **nh = realloc(l->heap, nc * sizeof *nh);
        if (!nh) { /* not watched: the transport's own end (reply, crash) still finishes it */
            pthread_mutex_unlock(&l->mu);
            mcp_pending_unref(p);
            return;
        }
        l->heap = nh;
        l->cap = nc;
    }
    p->heap_idx = (int)l->n;
    l->heap[l->n++] = p;
    heap_up(l, l->n - 1);
    pthread_mutex_unlock(&l->mu);
    curl_multi_wakeup(l->multi); /* the loop may be sleeping past the new deadline */
}

/* Finish a pending (see loop.h). */
void mcp_pending_finish(mcp_loop *l, mcp_pending *p, json_t *result, gg_error *err) {
    bool watched = false;
    pthread_mutex_lock(&l->mu);
    if (p->heap_idx >= 0) {
        heap_remove(l, (size_t)p->heap_idx);
        watched = true;
    }
    pthread_mutex_unlock(&l->mu);
    if (watched) mcp_pending_unref(p);
    p->done(p->user, result, err);
    mcp_pending_unref(p);
}

/* ---- bytes held by downstream answers (see loop.h) ---------------------------------------- */

static held_owner **held_find(mcp_loop *l, const char *owner) {
    held_owner **p = &l->held.head;
    while (*p && strcmp((*p)->name, owner) != 0) p = &(*p)->next;
    return p;
}

bool mcp_loop_hold(mcp_loop *l, const char *owner, size_t n, gg_error *err) {
    if (!owner || !n) return true;
    pthread_mutex_lock(&l->held.mu);
    held_owner **p = held_find(l, owner);
    size_t now = *p ? (*p)->bytes : 0, max = l->held.max;
    bool ok = !max || (n <= max && now <= max - n);
    if (ok && !*p) {
        size_t len = strlen(owner);
        held_owner *e = malloc(sizeof *e + len + 1);
        if (e) {
            memcpy(e->name, owner, len + 1);
            e->bytes = 0;
            e->next = NULL;
            *p = e;
        }
        ok = e != NULL;
    }
    if (ok) (*p)->bytes += n;
    pthread_mutex_unlock(&l->held.mu);
    if (!ok && max)
        gg_error_set(err, "transport", "the tenant's downstream answers in flight would hold more than %zu bytes "
                     "(tenants.max_downstream_bytes)", max);
    else if (!ok) gg_error_set(err, "oom", "out of memory");
    return ok;
}

void mcp_loop_unhold(mcp_loop *l, const char *owner, size_t n) {
    if (!owner || !n) return;
    pthread_mutex_lock(&l->held.mu);
    held_owner **p = held_find(l, owner), *e = *p;
    if (e) {
        e->bytes = e->bytes > n ? e->bytes - n : 0;
        if (!e->bytes) {
            *p = e->next;
            free(e);
        }
    }
    pthread_mutex_unlock(&l->held.mu);
}

size_t mcp_loop_held(mcp_loop *l, const char *owner) {
    if (!owner) return 0;
    pthread_mutex_lock(&l->held.mu);
    held_owner *e = *held_find(l, owner);
    size_t n = e ? e->bytes : 0;
    pthread_mutex_unlock(&l->held.mu);
    return n;
}

void mcp_downstream_set_owner_max_bytes(size_t max) {
    mcp_loop *l = mcp_loop_shared();
    if (!l) return;
    pthread_mutex_lock(&l->held.mu);
    l->held.max = max;
    pthread_mutex_unlock(&l->held.mu);
}

/* ---- posted work ------------------------------------------------------------------------- */

bool mcp_loop_post(mcp_loop *l, void (*fn)(void *arg), void *arg) {
    post_item *it = malloc(sizeof *it);
    if (!it) return false;
    it->fn = fn;
    it->arg = arg;
    it->next = NULL;
    pthread_mutex_lock(&l->mu);
    if (l->tail) l->tail->next = it;
    else l->head = it;
    l->tail = it;
    pthread_mutex_unlock(&l->mu);
    curl_multi_wakeup(l->multi);
    return true;
}

CURLM *mcp_loop_multi(mcp_loop *l) { return l->multi; }

/* ---- the loop thread --------------------------------------------------------------------- */

static void run_posted(mcp_loop *l) {
    pthread_mutex_lock(&l->mu);
    post_item *it = l->head;
    l->head = l->tail = NULL;
    pthread_mutex_unlock(&l->mu);
    while (it) {
        post_item *next = it->next;
        it->fn(it->arg);
        free(it);
        it = next;
    }
}

static void finish_transfers(mcp_loop *l) {
    int left;
    CURLMsg *m;
    while ((m = curl_multi_info_read(l->multi, &left))) {
        if (m->msg != CURLMSG_DONE) continue;
        CURL *h = m->easy_handle;
        CURLcode rc = m->data.result;
        mcp_loop_xfer *x = NULL;
        curl_easy_getinfo(h, CURLINFO_PRIVATE, (char **)&x);
        curl_multi_remove_handle(l->multi, h);
        if (x) x->fn(x, rc);
    }
}

/* Pendings past their deadline or with their cancel flag set leave the heap (the loop
 * keeps the heap's reference for the expire call); returns ms until the next deadline. */
static int collect_expired(mcp_loop *l, mcp_pending ***out, size_t *nout, const char ***whys) {
    double now = gg_now_ms();
    int wait = 1000;
    pthread_mutex_lock(&l->mu);
    size_t k = 0;
    bool flags = false;
    for (size_t i = 0; i < l->n; i++) {
        if (l->heap[i]->cancel) flags = true;
        if (l->heap[i]->deadline <= now || (l->heap[i]->cancel && atomic_load_explicit(l->heap[i]->cancel, memory_order_relaxed)))
            k++;
    }
    mcp_pending **list = k ? malloc(k * sizeof *list) : NULL;
    const char **why = k ? malloc(k * sizeof *why) : NULL;
    size_t got = 0;
    for (size_t i = 0; list && why && i < l->n;) {
        mcp_pending *p = l->heap[i];
        bool late = p->deadline <= now;
        if (late || (p->cancel && atomic_load_explicit(p->cancel, memory_order_relaxed))) {
            heap_remove(l, i);
            list[got] = p;
            why[got++] = late ? "timeout" : "cancelled";
            i = 0; /* the heap moved: rescan (k is small) */
            continue;
        }
        i++;
    }
    if (l->n) {
        double d = l->heap[0]->deadline - now;
        if (d < wait) wait = d < 0 ? 0 : (int)d + 1;
    }
    if (flags && wait > CANCEL_TICK_MS) wait = CANCEL_TICK_MS;
    pthread_mutex_unlock(&l->mu);
    if (!got) {
        free(list);
        free(why);
        list = NULL;
        why = NULL;
    }
    *out = list;
    *whys = why;
    *nout = got;
    return wait;
}

static void *loop_main(void *arg) {
    mcp_loop *l = arg;
    int wait = 0;
    for (;;) {
        int numfds = 0;
        curl_multi_poll(l->multi, NULL, 0, wait, &numfds);
        run_posted(l);
        int running = 0;
        curl_multi_perform(l->multi, &running);
        finish_transfers(l);
        mcp_pending **list;
        const char **why;
        size_t n;
        wait = collect_expired(l, &list, &n, &why);
        for (size_t i = 0; i < n; i++) {
            list[i]->expire(list[i], why[i]);
            mcp_pending_unref(list[i]);
        }
        free(list);
        free(why);
        if (n) wait = 0;
        long ct = -1;
        curl_multi_timeout(l->multi, &ct);
        if (ct >= 0 && ct < wait) wait = (int)ct;
    }
    return NULL;
}

static void start_shared(void) {
    curl_global_init(CURL_GLOBAL_ALL);
    mcp_loop *l = calloc(1, sizeof *l);
    if (!l) return;
    pthread_mutex_init(&l->mu, NULL);
    pthread_mutex_init(&l->held.mu, NULL);
    l->held.max = MCP_DOWNSTREAM_OWNER_MAX_BYTES_DEFAULT;
    l->multi = curl_multi_init();
    if (!l->multi) {
        free(l);
        return;
    }
    curl_multi_setopt(l->multi, CURLMOPT_MAX_HOST_CONNECTIONS, 0L);
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&l->thread, &at, loop_main, l) != 0) {
        curl_multi_cleanup(l->multi);
        free(l);
        l = NULL;
    }
    pthread_attr_destroy(&at);
    shared = l;
}

/* The process's loop, started on first use; NULL only when it could not start. */
mcp_loop *mcp_loop_shared(void) {
    pthread_once(&shared_once, start_shared);
    return shared;
}
