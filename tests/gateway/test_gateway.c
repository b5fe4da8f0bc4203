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
    gw_pool *p = gw_pool_new(2, 3);
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(gw_pool_threads(p), 2);
    gw_job j = {blocking_run, count_refuse, NULL};
    /* 2 running + 3 queued; the 6th is refused at once */
    int accepted = gw_pool_submit(p, j) + gw_pool_submit(p, j);
    /* bounded waits for events (10 s: a loaded 2-core machine under ASan is slow to
     * schedule the workers), never a fixed time */
    for (int i = 0; i < 1000 && gw_pool_queued(p) != 0; i++) usleep(10000); /* both picked up */
    ck_assert_int_eq(gw_pool_queued(p), 0);
    for (int i = 0; i < 3; i++) accepted += gw_pool_submit(p, j);
    ck_assert_int_eq(accepted, 5);
    for (int i = 0; i < 1000 && gw_pool_queued(p) != 3; i++) usleep(10000);
    ck_assert_int_eq(gw_pool_queued(p), 3);
    ck_assert(!gw_pool_submit(p, j));
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
    tcase_add_test(tc, registry_swap_and_refcounts);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr), run = srunner_ntests_run(sr);
    srunner_free(sr);
    printf("%d passed, %d failed\n", run - failed, failed);
    return failed ? 1 : 0;
}
