/* Unit tests for the gateway's worker pool and graph registry (with its compiled-graph
 * cache), and the views' cached selections. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gateway/internal.h"
#include "gateway/relay.h"
#include "../check_main.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int gate_open, ran, refused;

static void blocking_run(void *arg) {
    (void)arg;
    pthread_mutex_lock(&mu);
    while (!gate_open) pthread_cond_wait(&cv, &mu);
    ran++;
    pthread_mutex_unlock(&mu);
}
static void count_refuse(void *arg) {
    (void)arg;
    pthread_mutex_lock(&mu);
    refused++;
    pthread_mutex_unlock(&mu);
}

static void *stopper(void *p) {
    gw_pool_stop(p);
    return NULL;
}

START_TEST(pool_bounds_and_stop) {
    gate_open = ran = refused = 0;
    gw_pool *p = gw_pool_new(2, 3, 0, 0);
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(gw_pool_threads(p), 2);
    gw_job j = {blocking_run, count_refuse, NULL, "t"};
    /* 2 running + 3 queued; the 6th is refused at once */
    int accepted = (gw_pool_submit(p, j) == GW_SUBMIT_OK) + (gw_pool_submit(p, j) == GW_SUBMIT_OK);
    /* bounded waits for events (10 s: a loaded 2-core machine under ASan is slow to
     * schedule the workers), never a fixed time */
    for (int i = 0; i < 1000 && gw_pool_queued(p) != 0; i++) usleep(10000); /* both picked up */
    ck_assert_int_eq(gw_pool_queued(p), 0);
    for (int i = 0; i < 3; i++) accepted += gw_pool_submit(p, j) == GW_SUBMIT_OK;
    ck_assert_int_eq(accepted, 5);
    for (int i = 0; i < 1000 && gw_pool_queued(p) != 3; i++) usleep(10000);
    ck_assert_int_eq(gw_pool_queued(p), 3);
    ck_assert_int_eq(gw_pool_submit(p, j), GW_SUBMIT_FULL);
    /* stop while two run: the queued three are refused, the running two finish */
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, stopper, p), 0);
    usleep(50000);
    pthread_mutex_lock(&mu);
    gate_open = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(t, NULL);
    ck_assert_int_eq(ran + refused, 5);
    ck_assert_int_ge(ran, 2);
}
END_TEST

/* The order jobs ran in, by tag. */
static char order[64];
static int norder;
static void tagged_run(void *arg) {
    pthread_mutex_lock(&mu);
    while (!gate_open) pthread_cond_wait(&cv, &mu);
    if (norder < 63) order[norder++] = *(const char *)arg;
    pthread_mutex_unlock(&mu);
}

static int ran_count(void) {
    pthread_mutex_lock(&mu);
    int n = norder;
    pthread_mutex_unlock(&mu);
    return n;
}

static void open_gate(void) {
    pthread_mutex_lock(&mu);
    gate_open = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

/* One worker: tenant a's backlog does not delay tenant b beyond one job per turn. */
START_TEST(pool_round_robin) {
    gate_open = 0;
    norder = 0;
    memset(order, 0, sizeof order);
    gw_pool *p = gw_pool_new(1, 100, 0, 0);
    static const char A = 'a', B = 'b', C = 'c';
    gw_job ja = {tagged_run, count_refuse, (void *)&A, "a"}, jb = {tagged_run, count_refuse, (void *)&B, "b"};
    gw_job jc = {tagged_run, count_refuse, (void *)&C, "c"};
    ck_assert_int_eq(gw_pool_submit(p, ja), GW_SUBMIT_OK); /* the worker takes it and waits at the gate */
    for (int i = 0; i < 100 && gw_pool_queued(p) != 0; i++) usleep(10000);
    for (int i = 0; i < 5; i++) ck_assert_int_eq(gw_pool_submit(p, ja), GW_SUBMIT_OK);
    ck_assert_int_eq(gw_pool_submit(p, jb), GW_SUBMIT_OK);
    ck_assert_int_eq(gw_pool_submit(p, jc), GW_SUBMIT_OK);
    gw_pool_resume(p, jb); /* a continuation joins b's queue */
    open_gate();
    for (int i = 0; i < 200 && gw_pool_queued(p) != 0; i++) usleep(10000);
    gw_pool_stop(p);
    ck_assert_str_eq(order, "aabcabaaa");
}
END_TEST

/* Per-tenant caps: a tenant gets at most tenant_running workers; another tenant still gets
 * a worker at once. tenant_queued waiting calls bound a tenant while another tenant has
 * calls waiting: alone it may queue past it (up to half the pool's queue), since the cap
 * is there to defend other tenants, not to refuse one while workers are free (issue 31). */
START_TEST(pool_tenant_caps) {
    gate_open = 0;
    norder = 0;
    memset(order, 0, sizeof order);
    gw_pool *p = gw_pool_new(2, 100, 1, 2);
    static const char A = 'a', B = 'b';
    gw_job ja = {tagged_run, count_refuse, (void *)&A, "a"}, jb = {tagged_run, count_refuse, (void *)&B, "b"};
    ck_assert_int_eq(gw_pool_submit(p, ja), GW_SUBMIT_OK);
    for (int i = 0; i < 100 && gw_pool_queued(p) != 0; i++) usleep(10000); /* picked up */
    /* one of a's runs (its cap of one worker), the rest wait: a alone queues past its 2 */
    for (int i = 0; i < 4; i++) ck_assert_int_eq(gw_pool_submit(p, ja), GW_SUBMIT_OK);
    ck_assert_int_eq(gw_pool_queued(p), 4);
    /* b's call takes the second worker although a's were queued first */
    ck_assert_int_eq(gw_pool_submit(p, jb), GW_SUBMIT_OK);
    for (int i = 0; i < 100 && gw_pool_queued(p) != 4; i++) usleep(10000);
    ck_assert_int_eq(gw_pool_queued(p), 4);
    /* b's next call waits (b is at its one worker): now a's cap applies, b's does not yet */
    ck_assert_int_eq(gw_pool_submit(p, jb), GW_SUBMIT_OK);
    ck_assert_int_eq(gw_pool_submit(p, ja), GW_SUBMIT_TENANT_FULL);
    ck_assert_int_eq(gw_pool_submit(p, jb), GW_SUBMIT_OK);
    ck_assert_int_eq(gw_pool_submit(p, jb), GW_SUBMIT_TENANT_FULL);
    ck_assert_int_eq(gw_pool_queued(p), 6);
    open_gate();
    for (int i = 0; i < 200 && ran_count() < 8; i++) usleep(10000);
    gw_pool_stop(p);
    ck_assert_int_eq(norder, 8);
}
END_TEST

/* A tenant alone borrows at most half the pool's queue: the other half stays for tenants
 * that arrive, which are then admitted within their own cap. */
START_TEST(pool_tenant_alone_half_queue) {
    gate_open = 0;
    norder = 0;
    memset(order, 0, sizeof order);
    gw_pool *p = gw_pool_new(1, 10, 0, 2);
    static const char A = 'a', B = 'b';
    gw_job ja = {tagged_run, count_refuse, (void *)&A, "a"}, jb = {tagged_run, count_refuse, (void *)&B, "b"};
    ck_assert_int_eq(gw_pool_submit(p, ja), GW_SUBMIT_OK);
    for (int i = 0; i < 100 && gw_pool_queued(p) != 0; i++) usleep(10000); /* picked up */
    for (int i = 0; i < 5; i++) ck_assert_int_eq(gw_pool_submit(p, ja), GW_SUBMIT_OK);
    ck_assert_int_eq(gw_pool_submit(p, ja), GW_SUBMIT_TENANT_FULL); /* 5 = half of 10 */
    ck_assert_int_eq(gw_pool_submit(p, jb), GW_SUBMIT_OK);
    ck_assert_int_eq(gw_pool_submit(p, jb), GW_SUBMIT_OK);
    ck_assert_int_eq(gw_pool_submit(p, jb), GW_SUBMIT_TENANT_FULL); /* b's own cap of 2 */
    open_gate();
    for (int i = 0; i < 200 && ran_count() < 8; i++) usleep(10000);
    gw_pool_stop(p);
    ck_assert_int_eq(norder, 8);
    /* round-robin from the moment b queued: b's calls are not behind all of a's */
    ck_assert_str_eq(order, "aabab" "aaa");
}
END_TEST

/* SIGTERM's drain: every tenant's queued calls are refused at once on the caller's thread;
 * a queued continuation stays and runs on the worker; new calls still queue after. */
START_TEST(pool_refuse_queued_all_tenants) {
    gate_open = 0;
    norder = 0;
    memset(order, 0, sizeof order);
    pthread_mutex_lock(&mu);
    refused = 0;
    pthread_mutex_unlock(&mu);
    gw_pool *p = gw_pool_new(1, 100, 0, 0);
    static const char A = 'a', B = 'b', C = 'c', R = 'r';
    gw_job ja = {tagged_run, count_refuse, (void *)&A, "a"}, jb = {tagged_run, count_refuse, (void *)&B, "b"};
    gw_job jc = {tagged_run, count_refuse, (void *)&C, "c"}, jr = {tagged_run, count_refuse, (void *)&R, "b"};
    ck_assert_int_eq(gw_pool_submit(p, ja), GW_SUBMIT_OK); /* the worker takes it and waits at the gate */
    for (int i = 0; i < 1000 && gw_pool_queued(p) != 0; i++) usleep(10000);
    for (int i = 0; i < 3; i++) ck_assert_int_eq(gw_pool_submit(p, ja), GW_SUBMIT_OK);
    ck_assert_int_eq(gw_pool_submit(p, jb), GW_SUBMIT_OK);
    gw_pool_resume(p, jr); /* between b's two calls */
    ck_assert_int_eq(gw_pool_submit(p, jb), GW_SUBMIT_OK);
    ck_assert_int_eq(gw_pool_submit(p, jc), GW_SUBMIT_OK);
    ck_assert_int_eq(gw_pool_refuse_queued(p), 6);
    pthread_mutex_lock(&mu);
    ck_assert_int_eq(refused, 6);
    pthread_mutex_unlock(&mu);
    ck_assert_int_eq(gw_pool_queued(p), 1); /* the continuation */
    ck_assert_int_eq(gw_pool_submit(p, jc), GW_SUBMIT_OK); /* the queues still work */
    open_gate();
    for (int i = 0; i < 1000 && ran_count() < 3; i++) usleep(10000);
    gw_pool_stop(p);
    ck_assert_str_eq(order, "arc");
}
END_TEST

static json_t *p_list(mcp_provider *p) {
    (void)p;
    return json_pack("[{s:s,s:s,s:{s:s}}]", "name", "t", "description", "d", "inputSchema", "type", "object");
}
static int destroyed;
static void p_destroy(mcp_provider *p) {
    (void)p;
    destroyed++;
}
static const mcp_provider_ops p_ops = {.list_tools = p_list, .destroy = p_destroy};

static mcp_server *server(void) {
    mcp_provider *p = mcp_provider_new(&p_ops, NULL);
    gg_error err = GG_ERROR_INIT;
    mcp_server *s = mcp_server_new(p, NULL, &err);
    mcp_provider_unref(p);
    ck_assert_ptr_nonnull(s);
    return s;
}

START_TEST(registry_swap_and_refcounts) {
    destroyed = 0;
    gw_registry *r = gw_registry_new(0, NULL, NULL);
    mcp_server *v1 = server(), *v2 = server();
    ck_assert(gw_registry_put(r, "acme", "orders", 1, v1));
    ck_assert(gw_registry_put(r, "acme", "billing", 1, v2));
    ck_assert(gw_registry_put(r, "beta", "orders", 4, v2));
    int v = 0;
    mcp_server *held = gw_registry_get(r, "acme", "orders", &v, NULL); /* a run in flight */
    ck_assert_ptr_eq(held, v1);
    ck_assert_int_eq(v, 1);
    ck_assert_ptr_null(gw_registry_get(r, "acme", "nope", NULL, NULL));
    ck_assert_ptr_null(gw_registry_get(r, "acm", "eorders", NULL, NULL));
    ck_assert(gw_registry_put(r, "acme", "orders", 2, v2)); /* activation */
    mcp_server_unref(v1);
    ck_assert_int_eq(destroyed, 0); /* the run still holds version 1 */
    mcp_server_unref(held);
    ck_assert_int_eq(destroyed, 1);
    mcp_server *now = gw_registry_get(r, "acme", "orders", &v, NULL);
    ck_assert_ptr_eq(now, v2);
    ck_assert_int_eq(v, 2);
    mcp_server_unref(now);
    ck_assert_uint_eq(gw_registry_count(r), 3);
    gw_registry_remove_tenant(r, "acme");
    ck_assert_uint_eq(gw_registry_count(r), 1);
    ck_assert_ptr_null(gw_registry_get(r, "acme", "billing", NULL, NULL));
    gw_registry_remove(r, "beta", "orders");
    ck_assert_uint_eq(gw_registry_count(r), 0);
    mcp_server_unref(v2);
    ck_assert_int_eq(destroyed, 2);
    gw_registry_free(r);
}
END_TEST


/* ---- the compiled-graph cache: a loader that builds a server naming its graph and version */

typedef struct fake { /* a provider's impl */
    char graph[16];
    int version;
} fake;

static int compiles[8], compiled_total, freed_total;
static unsigned load_delay_us;

static void fake_destroy(mcp_provider *p) {
    __atomic_add_fetch(&freed_total, 1, __ATOMIC_RELAXED);
    free(p->impl);
}
static const mcp_provider_ops fake_ops = {.list_tools = p_list, .destroy = fake_destroy};

static mcp_server *fake_loader(void *user, const char *tenant, const char *graph, int version, gg_error *err) {
    (void)user;
    (void)tenant;
    if (load_delay_us) usleep(load_delay_us); /* compiling takes a while: concurrent first uses overlap */
    if (strcmp(graph, "bad") == 0) {
        gg_error_set(err, "validation", "1 error(s); first: broken");
        return NULL;
    }
    fake *f = calloc(1, sizeof *f);
    mcp_provider *p = mcp_provider_new(&fake_ops, f);
    snprintf(f->graph, sizeof f->graph, "%s", graph);
    f->version = version;
    if (graph[0] == 'g' && graph[1] >= '0' && graph[1] <= '7') __atomic_add_fetch(&compiles[graph[1] - '0'], 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&compiled_total, 1, __ATOMIC_RELAXED);
    mcp_server *s = mcp_server_new(p, NULL, err);
    mcp_provider_unref(p);
    return s;
}

static void reset_fakes(void) {
    memset(compiles, 0, sizeof compiles);
    compiled_total = freed_total = 0;
    load_delay_us = 0;
}

/* Get tenant "t" graph and check it is the version expected; returns the reference. */
static mcp_server *get_checked(gw_registry *r, const char *graph, int want) {
    int v = 0;
    gg_error err = GG_ERROR_INIT;
    mcp_server *s = gw_registry_get(r, "t", graph, &v, &err);
    ck_assert_msg(s != NULL, "%s: %s", graph, err.message ? err.message : err.code);
    const fake *f = (const fake *)mcp_server_provider(s)->impl;
    ck_assert_str_eq(f->graph, graph);
    ck_assert_int_eq(f->version, want);
    ck_assert_int_eq(v, want);
    return s;
}

static void call_once(gw_registry *r, const char *graph, int want) { mcp_server_unref(get_checked(r, graph, want)); }

START_TEST(cache_lru_two_of_five) {
    reset_fakes();
    gw_registry *r = gw_registry_new(2, fake_loader, NULL);
    static const char *g[5] = {"g0", "g1", "g2", "g3", "g4"};
    for (int i = 0; i < 5; i++) ck_assert(gw_registry_declare(r, "t", g[i], i + 1, 1, NULL));
    gw_registry_stats st = gw_registry_get_stats(r);
    ck_assert_uint_eq(st.graphs, 5);
    ck_assert_uint_eq(st.compiled, 0); /* declaring compiles nothing */
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < 5; i++) {
            call_once(r, g[i], i + 1);
            ck_assert_uint_le(gw_registry_get_stats(r).compiled, 2);
        }
    for (int i = 0; i < 5; i++) ck_assert_int_eq(compiles[i], 3); /* round-robin over 5 with room for 2 */
    /* hot: the two most recent stay, calls hit */
    call_once(r, "g3", 4);
    call_once(r, "g4", 5);
    for (int k = 0; k < 10; k++) call_once(r, g[3 + k % 2], 4 + k % 2);
    ck_assert_int_eq(compiles[3], 3);
    ck_assert_int_eq(compiles[4], 3);
    /* LRU: using g3 then loading g0 evicts g4, not g3 */
    call_once(r, "g3", 4);
    call_once(r, "g0", 1);
    call_once(r, "g3", 4);
    ck_assert_int_eq(compiles[3], 3);
    call_once(r, "g4", 5);
    ck_assert_int_eq(compiles[4], 4);
    st = gw_registry_get_stats(r);
    ck_assert_uint_eq(st.compiled, 2);
    ck_assert_uint_eq(st.compiles, (unsigned long long)compiled_total);
    ck_assert_int_eq(freed_total, compiled_total - 2); /* every evicted version was freed */
    gw_registry_free(r);
    ck_assert_int_eq(freed_total, compiled_total);
}
END_TEST

START_TEST(cache_never_frees_in_use) {
    reset_fakes();
    gw_registry *r = gw_registry_new(2, fake_loader, NULL);
    for (int i = 0; i < 5; i++) {
        char n[4] = {'g', (char)('0' + i), 0};
        gw_registry_declare(r, "t", n, 1, 1, NULL);
    }
    mcp_server *running = get_checked(r, "g0", 1); /* a call in flight */
    mcp_server *stream = get_checked(r, "g1", 1);  /* a session's open stream */
    for (int k = 0; k < 3; k++) /* many other graphs come and go */
        for (int i = 2; i < 5; i++) {
            char n[4] = {'g', (char)('0' + i), 0};
            call_once(r, n, 1);
        }
    ck_assert_int_eq(compiles[0], 1);
    ck_assert_int_eq(compiles[1], 1);
    /* the held versions were never dropped: using them again is a hit, not a compile */
    call_once(r, "g0", 1);
    call_once(r, "g1", 1);
    ck_assert_int_eq(compiles[0], 1);
    ck_assert_int_eq(compiles[1], 1);
    ck_assert_uint_le(gw_registry_get_stats(r).compiled, 3); /* over the size only by what is in use */
    /* the versions still work after their graphs were replaced and deleted under them */
    ck_assert(gw_registry_declare(r, "t", "g0", 2, 1, NULL));
    gw_registry_remove(r, "t", "g1");
    ck_assert_str_eq(((const fake *)mcp_server_provider(running)->impl)->graph, "g0");
    json_t *tools = mcp_server_provider(stream)->ops->list_tools(mcp_server_provider(stream));
    ck_assert_ptr_nonnull(tools);
    json_decref(tools);
    int before = freed_total;
    mcp_server_unref(running);
    mcp_server_unref(stream);
    ck_assert_int_eq(freed_total, before + 2); /* freed when the last holder let go */
    call_once(r, "g0", 2);
    gg_error err = GG_ERROR_INIT;
    ck_assert_ptr_null(gw_registry_get(r, "t", "g1", NULL, &err));
    ck_assert_str_eq(err.code, "not_found");
    gg_error_clear(&err);
    gw_registry_free(r);
    ck_assert_int_eq(freed_total, compiled_total);
}
END_TEST

START_TEST(cache_activation_deletion_sync) {
    reset_fakes();
    destroyed = 0;
    gw_registry *r = gw_registry_new(2, fake_loader, NULL);
    gw_registry_declare(r, "t", "g0", 1, 1, NULL);
    gw_registry_declare(r, "t", "g1", 1, 1, NULL);
    call_once(r, "g0", 1);
    /* an upload installs its compiled version: cached, no loader call */
    mcp_server *up = server();
    ck_assert(gw_registry_put(r, "t", "g1", 2, up));
    mcp_server *s = gw_registry_get(r, "t", "g1", NULL, NULL);
    ck_assert_ptr_eq(s, up);
    mcp_server_unref(s);
    ck_assert_int_eq(compiles[1], 0);
    /* another process activated version 3 of g0 (sync): the cached v1 is dropped, the next
     * use compiles v3 */
    bool hot = false;
    ck_assert(gw_registry_declare(r, "t", "g0", 3, 2, &hot));
    ck_assert(hot); /* v1 was cached: the sync compiles v3 at once */
    ck_assert_uint_eq(gw_registry_get_stats(r).compiled, 1);
    ck_assert(gw_registry_declare(r, "t", "g1", 2, 2, &hot)); /* unchanged: stays cached */
    ck_assert(!hot);
    call_once(r, "g0", 3);
    s = gw_registry_get(r, "t", "g1", NULL, NULL);
    ck_assert_ptr_eq(s, up);
    mcp_server_unref(s);
    /* a graph the next sync does not see was deleted elsewhere */
    gw_registry_declare(r, "t", "g0", 3, 3, NULL);
    gw_registry_sweep(r, 3);
    ck_assert_uint_eq(gw_registry_count(r), 1);
    ck_assert_ptr_null(gw_registry_get(r, "t", "g1", NULL, NULL));
    mcp_server_unref(up);
    ck_assert_int_eq(destroyed, 1);
    /* a stored version that does not compile: the loader's error, nothing cached */
    gw_registry_declare(r, "t", "bad", 1, 3, NULL);
    gg_error err = GG_ERROR_INIT;
    ck_assert_ptr_null(gw_registry_get(r, "t", "bad", NULL, &err));
    ck_assert_str_eq(err.code, "validation");
    gg_error_clear(&err);
    ck_assert_uint_eq(gw_registry_get_stats(r).load_failures, 1);
    /* tenant deletion */
    gw_registry_remove_tenant(r, "t");
    ck_assert_uint_eq(gw_registry_count(r), 0);
    ck_assert_uint_eq(gw_registry_get_stats(r).compiled, 0);
    gw_registry_free(r);
    ck_assert_int_eq(freed_total, compiled_total);
}
END_TEST

typedef struct hammer_arg {
    gw_registry *r;
    int seed;
} hammer_arg;

static void *hammer(void *p) {
    hammer_arg *a = p;
    unsigned x = (unsigned)a->seed * 2654435761u + 1;
    for (int k = 0; k < 300; k++) {
        x = x * 1103515245u + 12345u;
        int i = (int)((x >> 16) % 6);
        char n[4] = {'g', (char)('0' + i), 0};
        mcp_server *s = get_checked(a->r, n, 1);
        if (k % 7 == 0) usleep(100); /* hold it a while, like a run */
        mcp_server_unref(s);
    }
    return NULL;
}

static void *first_use(void *p) {
    mcp_server_unref(get_checked(p, "g5", 1));
    return NULL;
}

START_TEST(cache_concurrent_first_use) {
    reset_fakes();
    gw_registry *r = gw_registry_new(2, fake_loader, NULL);
    for (int i = 0; i < 6; i++) {
        char n[4] = {'g', (char)('0' + i), 0};
        gw_registry_declare(r, "t", n, 1, 1, NULL);
    }
    /* first uses of one cold graph at once compile it once (the others wait for it) */
    load_delay_us = 20000;
    pthread_t th[4];
    for (int i = 0; i < 4; i++) ck_assert_int_eq(pthread_create(&th[i], NULL, first_use, r), 0);
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    ck_assert_int_eq(compiles[5], 1);
    /* many threads over more graphs than the cache holds: always the right graph */
    load_delay_us = 200;
    hammer_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (hammer_arg){r, i + 1};
        ck_assert_int_eq(pthread_create(&th[i], NULL, hammer, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    gw_registry_trim(r); /* the watcher's pass: what was in use when the cache filled goes now */
    ck_assert_uint_le(gw_registry_get_stats(r).compiled, 2);
    gw_registry_free(r);
    ck_assert_int_eq(freed_total, compiled_total);
}
END_TEST

/* ---- the views' cached selections (views.c) --------------------------------------------- */

static void view_put(gg_store *s, const char *tenant, const char *name, const char *definition) {
    gg_error e = GG_ERROR_INIT;
    json_t *d = json_loads(definition, 0, NULL);
    bool created;
    ck_assert_msg(d && gg_store_view_put(s, tenant, name, d, GW_VIEWS_MAX, &created, &e), "%s", e.message);
    json_decref(d);
}

/* How many of tenant's views name graph for what, the first being first (NULL: none). */
static void naming(gg_gateway *gw, const char *tenant, const char *graph, int what, size_t n, const char *first) {
    gw_view_ep eps[GW_VIEWS_MAX];
    size_t got = gw_views_naming(gw, tenant, graph, what, eps);
    ck_assert_uint_eq(got, n);
    if (first) ck_assert_str_eq(eps[0], first);
}

/* Answers come from the cache while no change was seen (a change written to the store behind
 * it, as another replica would, shows only once the watcher saw the generation move); the
 * cache keeps 64 tenants, the least recently used going first. */
START_TEST(views_cache_fresh_and_bounded) {
    char dir[512], db[600], mig[4096], cmd[600];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/gg-views-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    ck_assert(mkdtemp(dir));
    snprintf(db, sizeof db, "%s/gg.db", dir);
    gg_error e = GG_ERROR_INIT;
    ck_assert_msg(gg_config_find_data_dir(NULL, "migrations", mig, sizeof mig, &e), "%s", e.message);
    gg_store_options o = {.path = db};
    gg_store *s = gg_store_open(&o, &e);
    ck_assert_msg(s && gg_store_migrate(s, mig, NULL, &e), "%s", e.message);
    char t[16];
    for (int i = 0; i <= 64; i++) {
        snprintf(t, sizeof t, "t%d", i);
        ck_assert(gg_store_tenant_create(s, t, &e));
    }
    view_put(s, "t0", "v1", "{\"resources\": [\"g\"]}");
    view_put(s, "t0", "v2", "{\"tools\": [{\"tool\": \"g.x\"}], \"prompts\": [\"h\"]}");
    gg_gateway *gw = calloc(1, sizeof *gw);
    gw->store = s;
    gw->views_cache = gw_views_cache_new();
    gw->views_gen = gg_store_generation_get(s, GG_GEN_VIEWS, &e);

    naming(gw, "t0", "g", GW_VIEW_RESOURCES, 1, "_views/v1");
    naming(gw, "t0", "g", GW_VIEW_TOOLS, 1, "_views/v2");
    naming(gw, "t0", "g", GW_VIEW_TOOLS | GW_VIEW_RESOURCES | GW_VIEW_PROMPTS, 2, NULL);
    naming(gw, "t0", "h", GW_VIEW_PROMPTS, 1, "_views/v2");
    naming(gw, "t0", "h", GW_VIEW_RESOURCES, 0, NULL);
    /* changed behind the cache: the old answer (no store read) until the watcher's check */
    view_put(s, "t0", "v1", "{\"resources\": [\"h\"]}");
    naming(gw, "t0", "g", GW_VIEW_RESOURCES, 1, "_views/v1");
    gw_views_check(gw);
    naming(gw, "t0", "g", GW_VIEW_RESOURCES, 0, NULL);
    naming(gw, "t0", "h", GW_VIEW_RESOURCES, 1, "_views/v1");
    /* 63 more tenants fit beside t0 (its stale answer stays); the 65th evicts t0, the least
     * recently used, whose next answer is read anew */
    view_put(s, "t0", "v1", "{\"resources\": [\"k\"]}");
    for (int i = 1; i <= 63; i++) {
        snprintf(t, sizeof t, "t%d", i);
        naming(gw, t, "g", GW_VIEW_RESOURCES, 0, NULL);
    }
    naming(gw, "t0", "k", GW_VIEW_RESOURCES, 0, NULL); /* still cached (stale), used last */
    for (int i = 1; i <= 63; i++) {
        snprintf(t, sizeof t, "t%d", i);
        naming(gw, t, "g", GW_VIEW_RESOURCES, 0, NULL);
    }
    naming(gw, "t64", "g", GW_VIEW_RESOURCES, 0, NULL); /* t0 now the least recently used */
    naming(gw, "t0", "k", GW_VIEW_RESOURCES, 1, "_views/v1");

    gw_views_cache_free(gw->views_cache);
    free(gw);
    gg_store_close(s);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

int main(void) {
    Suite *s = suite_create("gateway");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, pool_bounds_and_stop);
    tcase_add_test(tc, pool_round_robin);
    tcase_add_test(tc, pool_tenant_caps);
    tcase_add_test(tc, pool_tenant_alone_half_queue);
    tcase_add_test(tc, pool_refuse_queued_all_tenants);
    tcase_add_test(tc, registry_swap_and_refcounts);
    tcase_add_test(tc, cache_lru_two_of_five);
    tcase_add_test(tc, cache_never_frees_in_use);
    tcase_add_test(tc, cache_activation_deletion_sync);
    tcase_add_test(tc, cache_concurrent_first_use);
    tcase_add_test(tc, views_cache_fresh_and_bounded);
    suite_add_tcase(s, tc);
    return gg_check_run(s);
}
