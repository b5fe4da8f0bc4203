/* test_install.c — gg_gateway_install into a gg_app built by hand (what gg_app_serve does):
 * a real migrated SQLite store with one active graph, a real HTTP server on ports the kernel
 * picks. The installer must load the stored graph, register its routes and callbacks, serve
 * a tool call, and on shutdown record the run in the history. */
#include <check.h>
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/app.h"
#include "gateway/gateway.h"
#include "http/http.h"
#include "store/store.h"
#include "../check_main.h"

static char dir[512];

static size_t on_data(char *p, size_t sz, size_t n, void *u) {
    gg_strbuf_append(u, p, sz * n);
    return sz * n;
}

/* POST body to 127.0.0.1:port path; the status, the body in *out (caller frees). */
static long post(unsigned port, const char *path, const char *body, gg_strbuf *out) {
    CURL *c = curl_easy_init();
    char url[512];
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", port, path);
    struct curl_slist *hl = curl_slist_append(NULL, "Content-Type: application/json");
    hl = curl_slist_append(hl, "Accept: application/json, text/event-stream");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    long status = 0;
    if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(hl);
    curl_easy_cleanup(c);
    return status;
}

static char *read_fixture(const char *rel) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", getenv("GG_SRCDIR") ? getenv("GG_SRCDIR") : "..", rel);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

/* A migrated store at dir/gg.db with tenant acme and graph vs (value_switch.yaml) active. */
static gg_store *seed_store(void) {
    gg_error e = GG_ERROR_INIT;
    char mig[4096], db[600];
    ck_assert_msg(gg_config_find_data_dir(NULL, "migrations", mig, sizeof mig, &e), "%s", e.message);
    snprintf(db, sizeof db, "%s/gg.db", dir);
    gg_store_options o = {.path = db};
    gg_store *s = gg_store_open(&o, &e);
    ck_assert_msg(s && gg_store_migrate(s, mig, NULL, &e), "%s", e.message);
    ck_assert(gg_store_tenant_create(s, "acme", &e));
    const char *src = read_fixture("tests/fixtures/graphs/value_switch.yaml");
    int version = 0;
    ck_assert_msg(gg_store_graph_put(s, "acme", "vs", src, strlen(src), "yaml", "test", &version, &e), "%s",
                  e.message);
    ck_assert_int_eq(version, 1);
    return s;
}

static void set(gg_config *c, const char *key, const char *value) {
    gg_error e = GG_ERROR_INIT;
    ck_assert_msg(gg_config_set(c, key, value, &e), "%s: %s", key, e.message);
}

START_TEST(install_serves_stored_graph_and_records_on_shutdown) {
    gg_config cfg;
    gg_error e = GG_ERROR_INIT;
    ck_assert(gg_config_init(&cfg, &e));
    set(&cfg, "listen", "127.0.0.1:0");
    set(&cfg, "internal_listen", "127.0.0.1:0");
    set(&cfg, "workers", "2");
    gg_store *store = seed_store();
    gg_http_options ho = {.public_addr = cfg.listen, .internal_addr = cfg.internal_listen, .threads = 2,
                          .body_limit = cfg.body_limit, .version = "test"};
    gg_app app = {.config = &cfg, .store = store};
    app.http = gg_http_server_new(&ho, &e);
    ck_assert_msg(app.http != NULL, "%s", e.message);

    gg_gateway *gw = gg_gateway_install(&app, &e);
    ck_assert_msg(gw != NULL, "%s", e.message);
    ck_assert_ptr_nonnull(gg_gateway_auth(gw));
    ck_assert_uint_ge(app.nshutdown, 1); /* frees the gateway: without it the run leaks */
    ck_assert_uint_ge(app.ndrain, 1);
    ck_assert_uint_ge(app.nreload, 1);
    ck_assert_msg(gg_http_server_start(app.http, &e), "%s", e.message);
    unsigned pub = gg_http_server_port(app.http, GG_LISTENER_PUBLIC);
    unsigned in = gg_http_server_port(app.http, GG_LISTENER_INTERNAL);

    gg_strbuf b = GG_STRBUF_INIT;
    /* the stored graph was loaded: its tool answers on the internal listener */
    ck_assert_int_eq(post(in, "/internal/tenants/acme/graphs/vs/tools/classify/call", "{\"value\":42}", &b), 200);
    json_t *v = json_loads(b.data, 0, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(v, "result")), "high");
    json_decref(v);
    gg_strbuf_free(&b);
    /* a graph that is not stored is 404; the public MCP route wants an API key */
    ck_assert_int_eq(post(in, "/internal/tenants/acme/graphs/nope/tools/classify/call", "{}", &b), 404);
    gg_strbuf_free(&b);
    ck_assert_int_eq(post(pub, "/mcp/acme/vs", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", &b), 401);
    gg_strbuf_free(&b);

    /* gg_app_serve's shutdown order: drain, listeners, shutdown callbacks in reverse, store */
    app.stopping = 1;
    for (size_t i = 0; i < app.ndrain; i++) app.drain[i].fn(&app, app.drain[i].user);
    ck_assert_int_eq(gg_http_server_stop(app.http, 10000), 0);
    for (size_t i = app.nshutdown; i-- > 0;) app.shutdown[i].fn(&app, app.shutdown[i].user);
    gg_http_server_free(app.http);
    /* the history writer the gateway owned has written the one run before stopping */
    json_t *list = gg_store_executions_list(store, "acme", &(gg_exec_filter){0}, &e);
    ck_assert_msg(list != NULL, "%s", e.message);
    json_t *runs = json_object_get(list, "executions");
    ck_assert_uint_eq(json_array_size(runs), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(runs, 0), "tool")), "classify");
    json_decref(list);
    gg_store_close(store);
    gg_config_free(&cfg);
}
END_TEST

int main(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/gg-install-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) return 1;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    Suite *s = suite_create("gateway_install");
    TCase *tc = tcase_create("install");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, install_serves_stored_graph_and_records_on_shutdown);
    suite_add_tcase(s, tc);
    int failed = gg_check_run(s);
    curl_global_cleanup();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) failed++;
    return failed ? 1 : 0;
}
