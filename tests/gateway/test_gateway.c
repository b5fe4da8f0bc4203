/* Unit tests for the gateway's worker pool and graph registry. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gateway/internal.h"

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

/* Per-tenant caps: a tenant gets at most tenant_running workers and tenant_queued waiting
 * calls; another tenant still gets a worker at once. */
START_TEST(pool_tenant_caps) {
    gate_open = 0;
    norder = 0;
    memset(order, 0, sizeof order);
    gw_pool *p = gw_pool_new(2, 100, 1, 2);
    static const char A = 'a', B = 'b';
    gw_job ja = {tagged_run, count_refuse, (void *)&A, "a"}, jb = {tagged_run, count_refuse, (void *)&B, "b"};
    ck_assert_int_eq(gw_pool_submit(p, ja), GW_SUBMIT_OK);
    for (int i = 0; i < 100 && gw_pool_queued(p) != 0; i++) usleep(10000); /* picked up */
    ck_assert_int_eq(gw_pool_submit(p, ja), GW_SUBMIT_OK);
    ck_assert_int_eq(gw_pool_submit(p, ja), GW_SUBMIT_OK);
    /* one of a's runs, two wait: a third waiting call is over a's cap */
    for (int i = 0; i < 100 && gw_pool_queued(p) != 2; i++) usleep(10000);
    ck_assert_int_eq(gw_pool_queued(p), 2);
    ck_assert_int_eq(gw_pool_submit(p, ja), GW_SUBMIT_TENANT_FULL);
    /* b's call takes the second worker although a's were queued first */
    ck_assert_int_eq(gw_pool_submit(p, jb), GW_SUBMIT_OK);
    for (int i = 0; i < 100 && gw_pool_queued(p) != 2; i++) usleep(10000);
    ck_assert_int_eq(gw_pool_queued(p), 2);
    open_gate();
    for (int i = 0; i < 200 && ran_count() < 4; i++) usleep(10000);
    gw_pool_stop(p);
    ck_assert_int_eq(norder, 4);
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
    destroyed++;
    free(p);
}

static mcp_server *server(void) {
    mcp_provider *p = calloc(1, sizeof *p);
    p->list_tools = p_list;
    p->destroy = p_destroy;
    p->refcount = 1;
    gg_error err = GG_ERROR_INIT;
    mcp_server *s = mcp_server_new(p, NULL, &err);
    mcp_provider_unref(p);
    ck_assert_ptr_nonnull(s);
    return s;
}

START_TEST(registry_swap_and_refcounts) {
    destroyed = 0;
    gw_registry *r = gw_registry_new();
    mcp_server *v1 = server(), *v2 = server();
    ck_assert(gw_registry_put(r, "acme", "orders", 1, v1));
    ck_assert(gw_registry_put(r, "acme", "billing", 1, v2));
    ck_assert(gw_registry_put(r, "beta", "orders", 4, v2));
    int v = 0;
    mcp_server *held = gw_registry_get(r, "acme", "orders", &v); /* a run in flight */
    ck_assert_ptr_eq(held, v1);
    ck_assert_int_eq(v, 1);
    ck_assert_ptr_null(gw_registry_get(r, "acme", "nope", NULL));
    ck_assert_ptr_null(gw_registry_get(r, "acm", "eorders", NULL));
    ck_assert(gw_registry_put(r, "acme", "orders", 2, v2)); /* activation */
    mcp_server_unref(v1);
    ck_assert_int_eq(destroyed, 0); /* the run still holds version 1 */
    mcp_server_unref(held);
    ck_assert_int_eq(destroyed, 1);
    mcp_server *now = gw_registry_get(r, "acme", "orders", &v);
    ck_assert_ptr_eq(now, v2);
    ck_assert_int_eq(v, 2);
    mcp_server_unref(now);
    ck_assert_uint_eq(gw_registry_count(r), 3);
    gw_registry_remove_tenant(r, "acme");
    ck_assert_uint_eq(gw_registry_count(r), 1);
    ck_assert_ptr_null(gw_registry_get(r, "acme", "billing", NULL));
    gw_registry_remove(r, "beta", "orders");
    ck_assert_uint_eq(gw_registry_count(r), 0);
    mcp_server_unref(v2);
    ck_assert_int_eq(destroyed, 2);
    gw_registry_free(r);
}
END_TEST

int main(void) {
    Suite *s = suite_create("gateway");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, pool_bounds_and_stop);
    tcase_add_test(tc, pool_round_robin);
    tcase_add_test(tc, pool_tenant_caps);
    tcase_add_test(tc, pool_refuse_queued_all_tenants);
    tcase_add_test(tc, registry_swap_and_refcounts);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr), run = srunner_ntests_run(sr);
    srunner_free(sr);
    printf("%d passed, %d failed\n", run - failed, failed);
    return failed ? 1 : 0;
}
