/* Unit tests for the store: migrations, tenants, keys, graphs, history, audit. Each test
 * works on a fresh database file in its own temporary directory. */
#include <check.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>
#include "store/store.h"

#include "fixture.h"
#include "../check_main.h"

/* How many migrations the source tree ships (the tests below add the next ones). */
static int shipped_migrations(void) {
    int n = 0;
    DIR *d = opendir(migfiles);
    ck_assert_ptr_nonnull(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strlen(e->d_name) > 4 && strcmp(e->d_name + strlen(e->d_name) - 4, ".sql") == 0) n++;
    closedir(d);
    return n;
}

static void write_file(const char *dir, const char *name, const char *text) {
    char p[600];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* ---- migrations ------------------------------------------------------------------------- */

START_TEST(migrations_applied_once) {
    gg_store *s = open_store();
    gg_error err = GG_ERROR_INIT;
    ck_assert(!gg_store_migrations_current(s, &err)); /* not verified yet */
    gg_error_clear(&err);
    int applied = -1;
    ck_assert(gg_store_migrate(s, migdir, &applied, &err));
    ck_assert_int_ge(applied, 1);
    int version = gg_store_schema_version(s, &err);
    ck_assert_int_eq(version, applied);
    ck_assert(gg_store_migrate(s, migdir, &applied, &err));
    ck_assert_int_eq(applied, 0);
    ck_assert(gg_store_migrations_current(s, &err));
    ck_assert(gg_store_migrations_verify(s, migdir, &err));
    gg_store_close(s);
    /* A second process (another handle) sees the schema as current and applies nothing. */
    s = open_store();
    ck_assert(gg_store_migrate(s, migdir, &applied, &err));
    ck_assert_int_eq(applied, 0);
    gg_store_close(s);
}
END_TEST

START_TEST(migration_checksum_mismatch) {
    gg_store *s = open_migrated();
    gg_store_close(s);
    sh("printf '\\n-- edited\\n' >> '%s/0001_initial.sql'%s", migfiles, "");
    s = open_store();
    gg_error err = GG_ERROR_INIT;
    ck_assert(!gg_store_migrate(s, migdir, NULL, &err));
    ck_assert_str_eq(err.code, "migration");
    ck_assert_msg(strstr(err.message, "0001_initial.sql was changed"), "%s", err.message);
    gg_error_clear(&err);
    ck_assert(!gg_store_migrations_verify(s, migdir, &err));
    gg_error_clear(&err);
    gg_store_close(s);
}
END_TEST

START_TEST(migration_future_and_missing) {
    int n = shipped_migrations();
    char extra[64], gap[64], num[16];
    snprintf(extra, sizeof extra, "%04d_extra.sql", n + 1);
    snprintf(gap, sizeof gap, "%04d_gap.sql", n + 2);
    snprintf(num, sizeof num, "%04d", n + 1);
    write_file(migfiles, extra, "CREATE TABLE extra (x INTEGER);\n");
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert_int_eq(gg_store_schema_version(s, &err), n + 1);
    gg_store_close(s);
    /* The database is newer than the files: an older binary must refuse it. */
    sh("rm '%s/%s'", migfiles, extra);
    s = open_store();
    ck_assert(!gg_store_migrate(s, migdir, NULL, &err));
    ck_assert_str_eq(err.code, "migration");
    ck_assert_msg(strstr(err.message, num) && strstr(err.message, "newer graphgate"), "%s", err.message);
    gg_error_clear(&err);
    gg_store_close(s);
    /* A gap in the files is refused before touching the database. */
    write_file(migfiles, gap, "SELECT 1;\n");
    s = open_store();
    ck_assert(!gg_store_migrate(s, migdir, NULL, &err));
    ck_assert_msg(strstr(err.message, num) && strstr(err.message, "is missing"), "%s", err.message);
    gg_error_clear(&err);
    gg_store_close(s);
}
END_TEST

START_TEST(migration_pending_and_failing) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    int n = shipped_migrations();
    char broken[64];
    snprintf(broken, sizeof broken, "%04d_broken.sql", n + 1);
    write_file(migfiles, broken, "CREATE TABLE ok1 (x INTEGER);\nCREATE TABLE ok1 (y INTEGER);\n");
    ck_assert(!gg_store_migrations_verify(s, migdir, &err)); /* pending */
    ck_assert_msg(strstr(err.message, "not applied"), "%s", err.message);
    gg_error_clear(&err);
    ck_assert(!gg_store_migrate(s, migdir, NULL, &err));
    ck_assert_msg(strstr(err.message, broken) && strstr(err.message, "failed"), "%s", err.message);
    gg_error_clear(&err);
    /* The failed migration was rolled back entirely. */
    ck_assert_int_eq(gg_store_schema_version(s, &err), n);
    write_file(migfiles, broken, "CREATE TABLE ok1 (x INTEGER);\n");
    ck_assert(gg_store_migrate(s, migdir, NULL, &err));
    ck_assert_int_eq(gg_store_schema_version(s, &err), n + 1);
    write_file(migfiles, "bad-name.sql", "SELECT 1;\n");
    ck_assert(!gg_store_migrate(s, migdir, NULL, &err));
    ck_assert_msg(strstr(err.message, "NNNN_name.sql"), "%s", err.message);
    gg_error_clear(&err);
    gg_store_close(s);
}
END_TEST

/* ---- tenants and keys ---------------------------------------------------------------------- */

static const unsigned char H1[GG_KEY_HASH_LEN] = {1, 2, 3};

/* Tasks of the MCP tasks extension (migration 0008): every query filters on the tenant, the
 * live tasks of a tenant are bounded, an ended task keeps its end, and a starting process
 * marks the working tasks of its replica failed. */
START_TEST(tasks_tenant_bound_and_interrupted) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    gg_task_row r = {0};
    snprintf(r.id, sizeof r.id, "task-1");
    snprintf(r.tenant, sizeof r.tenant, "acme");
    snprintf(r.graph, sizeof r.graph, "g");
    snprintf(r.tool, sizeof r.tool, "t");
    snprintf(r.owner, sizeof r.owner, "replica-a");
    r.version = 1;
    r.ttl_ms = 60000;
    ck_assert(gg_store_task_insert(s, &r, 1, &err));
    snprintf(r.id, sizeof r.id, "task-2");
    ck_assert(!gg_store_task_insert(s, &r, 1, &err)); /* one live task at most */
    ck_assert_str_eq(err.code, "too_many");
    gg_error_clear(&err);
    gg_task_row got;
    ck_assert(!gg_store_task_get(s, "other", "task-1", &got, &err)); /* another tenant's id */
    ck_assert_str_eq(err.code, "not_found");
    gg_error_clear(&err);
    ck_assert(gg_store_task_get(s, "acme", "task-1", &got, &err));
    ck_assert_str_eq(got.status, "working");
    gg_task_row_clear(&got);
    /* another tenant cannot end it */
    gg_task_row end = {0};
    snprintf(end.id, sizeof end.id, "task-1");
    snprintf(end.tenant, sizeof end.tenant, "other");
    snprintf(end.status, sizeof end.status, "cancelled");
    bool changed = true;
    ck_assert(gg_store_task_set(s, &end, NULL, &changed, &err));
    ck_assert(!changed);
    /* a replica's restart fails only its own working tasks */
    ck_assert_int_eq(gg_store_tasks_mark_interrupted(s, "replica-b", &err), 0);
    ck_assert_int_eq(gg_store_tasks_mark_interrupted(s, "replica-a", &err), 1);
    ck_assert(gg_store_task_get(s, "acme", "task-1", &got, &err));
    ck_assert_str_eq(got.status, "failed");
    ck_assert(strstr(json_string_value(json_object_get(got.error, "message")), "interrupted"));
    gg_task_row_clear(&got);
    /* an ended task keeps its end: a late result of its run changes nothing */
    snprintf(end.tenant, sizeof end.tenant, "acme");
    snprintf(end.status, sizeof end.status, "completed");
    ck_assert(gg_store_task_set(s, &end, "working", &changed, &err));
    ck_assert(!changed);
    snprintf(r.id, sizeof r.id, "task-3"); /* the tenant's live count is 0 again */
    ck_assert(gg_store_task_insert(s, &r, 1, &err));
    gg_store_close(s);
}
END_TEST

START_TEST(tenants_and_keys_crud_isolated) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    ck_assert(gg_store_tenant_create(s, "globex", &err));
    ck_assert(!gg_store_tenant_create(s, "acme", &err));
    ck_assert_str_eq(err.code, "conflict");
    gg_error_clear(&err);
    ck_assert(gg_store_tenant_exists(s, "acme", &err));
    ck_assert(!gg_store_tenant_exists(s, "nope", &err));
    ck_assert(gg_store_key_insert(s, "aaaa000000000001", "acme", "ci", H1, "tools:read", &err));
    ck_assert(gg_store_key_insert(s, "bbbb000000000001", "globex", "", H1, "admin", &err));
    ck_assert(!gg_store_key_insert(s, "cccc000000000001", "nope", "", H1, "admin", &err));
    ck_assert_str_eq(err.code, "not_found");
    gg_error_clear(&err);
    ck_assert(!gg_store_key_insert(s, "aaaa000000000001", "acme", "", H1, "admin", &err));
    ck_assert_str_eq(err.code, "conflict");
    gg_error_clear(&err);
    gg_key_row row;
    ck_assert(gg_store_key_get(s, "aaaa000000000001", &row, &err));
    ck_assert_str_eq(row.tenant, "acme");
    ck_assert_str_eq(row.scopes, "tools:read");
    ck_assert(memcmp(row.hash, H1, sizeof H1) == 0);
    ck_assert(!row.revoked);
    json_t *keys = gg_store_keys_list(s, "acme", &err);
    ck_assert_int_eq(json_array_size(keys), 1);
    ck_assert_ptr_null(json_object_get(json_array_get(keys, 0), "hash"));
    json_decref(keys);
    keys = gg_store_keys_list(s, NULL, &err);
    ck_assert_int_eq(json_array_size(keys), 2);
    json_decref(keys);
    /* Another tenant cannot revoke acme's key. */
    long long gen = gg_store_generation_get(s, GG_GEN_KEYS, &err);
    ck_assert(!gg_store_key_revoke(s, "aaaa000000000001", "globex", &err));
    ck_assert_str_eq(err.code, "not_found");
    gg_error_clear(&err);
    ck_assert(gg_store_key_revoke(s, "aaaa000000000001", "acme", &err));
    ck_assert_int_gt(gg_store_generation_get(s, GG_GEN_KEYS, &err), gen);
    ck_assert(gg_store_key_get(s, "aaaa000000000001", &row, &err));
    ck_assert(row.revoked);
    ck_assert(gg_store_key_touch(s, "bbbb000000000001", 1234567, &err));
    ck_assert(gg_store_key_get(s, "bbbb000000000001", &row, &err));
    ck_assert_int_eq(row.last_used_ms, 1234567);
    json_t *tenants = gg_store_tenants_list(s, &err);
    ck_assert_int_eq(json_array_size(tenants), 2);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(tenants, 0), "name")), "acme");
    json_decref(tenants);
    /* Deleting a tenant removes its keys. */
    ck_assert(gg_store_tenant_delete(s, "globex", &err));
    ck_assert(!gg_store_key_get(s, "bbbb000000000001", &row, &err));
    ck_assert_str_eq(err.code, "not_found");
    gg_error_clear(&err);
    ck_assert(!gg_store_tenant_delete(s, "globex", &err));
    ck_assert_str_eq(err.code, "not_found");
    gg_error_clear(&err);
    unsigned char pep1[32], pep2[32];
    ck_assert(gg_store_setting_get_or_create_random(s, "key_pepper", pep1, 32, &err));
    ck_assert(gg_store_setting_get_or_create_random(s, "key_pepper", pep2, 32, &err));
    ck_assert(memcmp(pep1, pep2, 32) == 0);
    gg_store_close(s);
}
END_TEST

/* ---- graphs ------------------------------------------------------------------------------- */

START_TEST(graph_versions_and_activation) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    ck_assert(gg_store_tenant_create(s, "globex", &err));
    int v = 0;
    ck_assert(!gg_store_graph_put(s, "nope", "g", "x", 1, "yaml", "cli", &v, &err));
    ck_assert_str_eq(err.code, "not_found");
    gg_error_clear(&err);
    ck_assert(gg_store_graph_put(s, "acme", "orders", "version: 1\n", 11, "yaml", "k1", &v, &err));
    ck_assert_int_eq(v, 1);
    ck_assert(gg_store_graph_put(s, "acme", "orders", "{\"v\":2}", 7, "json", "k2", &v, &err));
    ck_assert_int_eq(v, 2);
    gg_graph_source g;
    ck_assert(gg_store_graph_get_active(s, "acme", "orders", &g, &err));
    ck_assert_int_eq(g.version, 2);
    ck_assert_str_eq(g.source, "{\"v\":2}");
    ck_assert_str_eq(g.format, "json");
    ck_assert_int_eq(strlen(g.content_hash), 64);
    gg_store_graph_source_clear(&g);
    /* Isolation: the other tenant does not see it. */
    ck_assert(!gg_store_graph_get_active(s, "globex", "orders", &g, &err));
    ck_assert_str_eq(err.code, "not_found");
    gg_error_clear(&err);
    ck_assert(!gg_store_graph_activate(s, "globex", "orders", 1, &err));
    gg_error_clear(&err);
    json_t *l = gg_store_graphs_list(s, "globex", &err);
    ck_assert_int_eq(json_array_size(l), 0);
    json_decref(l);
    /* Rollback. */
    ck_assert(gg_store_graph_activate(s, "acme", "orders", 1, &err));
    ck_assert(gg_store_graph_get_active(s, "acme", "orders", &g, &err));
    ck_assert_int_eq(g.version, 1);
    ck_assert_str_eq(g.source, "version: 1\n");
    ck_assert_str_eq(g.created_by, "k1");
    gg_store_graph_source_clear(&g);
    ck_assert(!gg_store_graph_activate(s, "acme", "orders", 9, &err));
    ck_assert_str_eq(err.code, "not_found");
    gg_error_clear(&err);
    ck_assert(gg_store_graph_get_version(s, "acme", "orders", 2, &g, &err));
    ck_assert_int_eq(g.version, 2);
    gg_store_graph_source_clear(&g);
    json_t *vs = gg_store_graph_versions(s, "acme", "orders", &err);
    ck_assert_int_eq(json_array_size(vs), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(vs, 0), "version")), 2);
    ck_assert(json_is_true(json_object_get(json_array_get(vs, 1), "active")));
    json_decref(vs);
    l = gg_store_graphs_list(s, "acme", &err);
    ck_assert_int_eq(json_array_size(l), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(l, 0), "active_version")), 1);
    json_decref(l);
    ck_assert(gg_store_graph_put(s, "globex", "other", "a: 1", 4, "yaml", NULL, &v, &err));
    long long gen = gg_store_generation_get(s, GG_GEN_GRAPHS, &err);
    ck_assert(gg_store_graph_delete(s, "acme", "orders", &err));
    ck_assert_int_gt(gg_store_generation_get(s, GG_GEN_GRAPHS, &err), gen);
    ck_assert(!gg_store_graph_delete(s, "acme", "orders", &err));
    gg_error_clear(&err);
    ck_assert(!gg_store_graph_versions(s, "acme", "orders", &err));
    gg_error_clear(&err);
    gg_store_close(s);
}
END_TEST

/* Every view change bumps the views generation in its transaction (the other replicas'
 * watchers tell their view clients); a refused change does not. The counter reads 0 until
 * its first bump creates its row. */
START_TEST(views_bump_their_generation) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    ck_assert_int_eq(gg_store_generation_get(s, GG_GEN_VIEWS, &err), 0);
    json_t *d = json_pack("{s:[{s:s}]}", "tools", "tool", "g.t");
    bool created = false;
    ck_assert(gg_store_view_put(s, "acme", "v1", d, 1, &created, &err) && created);
    ck_assert_int_eq(gg_store_generation_get(s, GG_GEN_VIEWS, &err), 1);
    ck_assert(gg_store_view_put(s, "acme", "v1", d, 1, &created, &err) && !created);
    ck_assert_int_eq(gg_store_generation_get(s, GG_GEN_VIEWS, &err), 2);
    ck_assert(!gg_store_view_put(s, "acme", "v2", d, 1, &created, &err)); /* over the bound */
    ck_assert_str_eq(err.code, "quota_exceeded");
    gg_error_clear(&err);
    ck_assert_int_eq(gg_store_generation_get(s, GG_GEN_VIEWS, &err), 2);
    ck_assert(gg_store_view_delete(s, "acme", "v1", &err));
    ck_assert_int_eq(gg_store_generation_get(s, GG_GEN_VIEWS, &err), 3);
    ck_assert(!gg_store_view_delete(s, "acme", "v1", &err));
    ck_assert_str_eq(err.code, "not_found");
    gg_error_clear(&err);
    ck_assert_int_eq(gg_store_generation_get(s, GG_GEN_VIEWS, &err), 3);
    ck_assert(gg_store_view_put(s, "acme", "v1", d, 1, &created, &err));
    ck_assert(gg_store_tenant_delete(s, "acme", &err));
    ck_assert_int_eq(gg_store_generation_get(s, GG_GEN_VIEWS, &err), 5);
    json_decref(d);
    gg_store_close(s);
}
END_TEST

/* lazy_pool (CLI commands): one PostgreSQL connection at open, another only when two are
 * in use at once (a walk whose callback uses the store). SQLite ignores the option. */
static const char SQL_BACKENDS[] = "SELECT count(*) FROM pg_stat_activity WHERE datname = ?1 AND pid <> pg_backend_pid()";

static bool nested_visit(void *user, const gg_graph_source *g) {
    gg_error err = GG_ERROR_INIT;
    bool ok = gg_store_tenant_exists(user, g->tenant, &err);
    gg_error_clear(&err);
    return ok;
}

START_TEST(lazy_pool_connects_on_demand) {
    gg_error err = GG_ERROR_INIT;
    gg_store_options o = {.path = dbpath, .url = pg_store_url(), .pool_size = 3, .lazy_pool = true};
    gg_store *s = gg_store_open(&o, &err);
    ck_assert_msg(s != NULL, "open: %s", err.message);
    if (pg_mode()) ck_assert_int_eq(pg_query1(SQL_BACKENDS, pg_db), 1);
    ck_assert(gg_store_migrate(s, migdir, NULL, &err));
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    int v;
    ck_assert(gg_store_graph_put(s, "acme", "g", "a: 1", 4, "yaml", NULL, &v, &err));
    if (pg_mode()) ck_assert_int_eq(pg_query1(SQL_BACKENDS, pg_db), 1); /* one at a time so far */
    ck_assert(gg_store_graphs_foreach_active_version(s, nested_visit, s, &err));
    if (pg_mode()) ck_assert_int_eq(pg_query1(SQL_BACKENDS, pg_db), 2);
    gg_store_close(s);
}
END_TEST

static bool count_visit(void *user, const gg_graph_source *g) {
    (*(int *)user)++;
    return g->version > 0;
}

static bool version_visit(void *user, const gg_graph_source *g) {
    char key[160];
    snprintf(key, sizeof key, "%s/%s", g->tenant, g->name);
    json_object_set_new(user, key, json_integer(g->source ? -1 : g->version)); /* no source read */
    return true;
}

START_TEST(graphs_foreach_active) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "a", &err));
    ck_assert(gg_store_tenant_create(s, "b", &err));
    int v;
    ck_assert(gg_store_graph_put(s, "a", "g1", "x: 1", 4, "yaml", NULL, &v, &err));
    ck_assert(gg_store_graph_put(s, "a", "g1", "x: 2", 4, "yaml", NULL, &v, &err));
    ck_assert(gg_store_graph_put(s, "b", "g2", "x: 3", 4, "yaml", NULL, &v, &err));
    int n = 0;
    ck_assert(gg_store_graphs_foreach_active(s, count_visit, &n, &err));
    ck_assert_int_eq(n, 2);
    /* names and versions only (the gateway's listing at start) */
    json_t *seen = json_object();
    ck_assert(gg_store_graphs_foreach_active_version(s, version_visit, seen, &err));
    ck_assert_int_eq(json_object_size(seen), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(seen, "a/g1")), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(seen, "b/g2")), 1);
    json_decref(seen);
    gg_store_close(s);
}
END_TEST

/* ---- pinned definitions (pins.c, migration 0017) ----------------------------------------- */

static int record(gg_store *s, const char *tenant, const char *tool, const char *kind, const char *new_hash, int max,
                  gg_error *err) {
    char id[32];
    snprintf(id, sizeof id, "id-%s-%s", tool, new_hash ? new_hash : "gone");
    gg_store_change ch = {tenant, "http:x", tool, id, "calc", kind, "h1", new_hash,
                          new_hash ? "{\"name\":\"x\",\"description\":\"new\"}" : NULL, "{\"fields\":[\"description\"]}", 1000};
    return gg_store_change_record(s, &ch, max, err);
}

/* A version's pins are written once and read back per server; the active versions' pins
 * are what a changed catalog is compared with; a change is one row per tool (the same
 * proposal is not recorded twice, a newer one replaces it), bounded per tenant; rejecting
 * keeps it as rejected, approving rewrites the pins and bumps the pins generation. */
START_TEST(pins_and_their_changes) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "a", &err));
    ck_assert(gg_store_tenant_create(s, "b", &err));
    int v;
    ck_assert(gg_store_graph_put(s, "a", "px", "x: 1", 4, "yaml", NULL, &v, &err));
    json_t *pins = json_pack("{s:{s:s,s:s,s:b,s:{s:{s:s,s:s}},s:{s:s}}}", "http:x", "server", "calc", "on_change", "review",
                             "whole", 1, "tools", "add", "name", "add", "description", "old", "hash", "add", "h1");
    ck_assert_msg(gg_store_pins_put(s, "a", "px", v, pins, &err), "%s", err.message);
    ck_assert(gg_store_pins_put(s, "a", "px", v, pins, &err)); /* again: nothing new */
    json_t *got = gg_store_pins_get(s, "a", "px", v, "http:x", &err);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(got, "add"), "description")), "old");
    json_decref(got);
    ck_assert_ptr_null(gg_store_pins_get(s, "a", "px", v, "http:other", &err));
    ck_assert(!gg_error_is_set(&err));
    json_t *act = gg_store_pins_active(s, "a", "http:x", &err);
    ck_assert_int_eq(json_array_size(act), 1);
    ck_assert(json_is_true(json_object_get(json_array_get(act, 0), "whole")));
    json_decref(act);
    act = gg_store_pins_active(s, "b", "http:x", &err); /* another tenant's: none */
    ck_assert_int_eq(json_array_size(act), 0);
    json_decref(act);

    ck_assert_int_eq(record(s, "a", "add", "changed", "h2", 2, &err), 1);
    ck_assert_int_eq(record(s, "a", "add", "changed", "h2", 2, &err), 0); /* proposed already */
    ck_assert_int_eq(record(s, "a", "add", "changed", "h3", 2, &err), 2); /* a newer one, in its place */
    ck_assert_int_eq(record(s, "a", "echo", "added", "h9", 2, &err), 1);
    ck_assert_int_eq(record(s, "a", "more", "added", "h8", 2, &err), -1); /* the tenant's bound */
    ck_assert_str_eq(err.code, "too_many");
    gg_error_clear(&err);
    json_t *l = gg_store_changes_list(s, "a", &err);
    ck_assert_int_eq(json_array_size(l), 2);
    json_decref(l);

    long long gen = gg_store_generation_get(s, GG_GEN_PINS, &err);
    json_t *row = gg_store_change_decide(s, "a", "id-add-h3", false, &err);
    ck_assert_ptr_nonnull(row);
    json_decref(row);
    ck_assert_int_eq(record(s, "a", "add", "changed", "h3", 2, &err), 0); /* rejected: not proposed again */
    ck_assert_ptr_null(gg_store_change_decide(s, "a", "id-add-h3", true, &err));
    ck_assert_str_eq(err.code, "conflict");
    gg_error_clear(&err);
    ck_assert_ptr_null(gg_store_change_decide(s, "b", "id-echo-h9", true, &err)); /* another tenant's id */
    ck_assert_str_eq(err.code, "not_found");
    gg_error_clear(&err);
    ck_assert_int_eq(gg_store_generation_get(s, GG_GEN_PINS, &err), gen);
    json_t *moved = gg_store_pins_tenants_since(s, gen, &err); /* a rejection moves no tenant */
    ck_assert_int_eq(json_array_size(moved), 0);
    json_decref(moved);

    row = gg_store_change_decide(s, "a", "id-echo-h9", true, &err); /* added, under a tools: all entry */
    ck_assert_ptr_nonnull(row);
    json_decref(row);
    ck_assert_int_eq(gg_store_generation_get(s, GG_GEN_PINS, &err), gen + 1);
    moved = gg_store_pins_tenants_since(s, gen, &err); /* the approving tenant only (replicas recompile it) */
    ck_assert_int_eq(json_array_size(moved), 1);
    ck_assert_str_eq(json_string_value(json_array_get(moved, 0)), "a");
    json_decref(moved);
    moved = gg_store_pins_tenants_since(s, gen + 1, &err); /* none since the value seen after it */
    ck_assert_msg(moved && json_array_size(moved) == 0, "%s", err.message ? err.message : "");
    json_decref(moved);
    got = gg_store_pins_get(s, "a", "px", v, "http:x", &err);
    ck_assert_int_eq(json_object_size(got), 2);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(got, "echo"), "description")), "new");
    json_decref(got);
    ck_assert_int_eq(record(s, "a", "add", "changed", "h4", 2, &err), 1); /* replaces the rejected one */
    row = gg_store_change_decide(s, "a", "id-add-h4", true, &err);
    json_decref(row);
    got = gg_store_pins_get(s, "a", "px", v, "http:x", &err);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(got, "add"), "description")), "new");
    json_decref(got);
    ck_assert(gg_store_change_clear(s, "a", "http:x", "add", &err));
    l = gg_store_changes_list(s, "a", &err);
    ck_assert_int_eq(json_array_size(l), 0);
    json_decref(l);
    json_decref(pins);
    gg_store_close(s);
}
END_TEST

/* ---- history ------------------------------------------------------------------------------ */

static gg_exec_record *make_run(const char *tenant, const char *graph, const char *tool, gg_exec_status st) {
    json_t *args = json_pack("{s:i}", "n", 7);
    gg_exec_record *r = gg_exec_record_new(tenant, graph, 3, tool, "key1", args);
    json_decref(args);
    ck_assert_ptr_nonnull(r);
    if (st != GG_EXEC_RUNNING) {
        ck_assert_ptr_nonnull(gg_exec_record_add_node(r, "entry", "entry", r->started_ms, r->started_ms + 1,
                                                      json_pack("{s:i}", "n", 7), json_pack("{s:i}", "n", 7), NULL));
        ck_assert_ptr_nonnull(gg_exec_record_add_node(r, "step", "transform", r->started_ms + 1, r->started_ms + 3,
                                                      json_pack("{s:i}", "n", 7), json_string("out"),
                                                      st == GG_EXEC_FAILED ? "boom" : NULL));
        r->status = st;
        r->finished_ms = r->started_ms + 3;
        r->duration_ms = 3.0;
        if (st == GG_EXEC_FAILED) r->error = strdup("boom");
        else r->result = json_pack("{s:b}", "ok", 1);
    }
    return r;
}

START_TEST(history_writer_batches_and_persists) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    ck_assert(gg_store_tenant_create(s, "globex", &err));
    gg_history_options o = {.flush_ms = 20};
    gg_history *h = gg_history_start(s, &o, &err);
    ck_assert_msg(h != NULL, "%s", err.message);
    char first_id[33] = "";
    for (int i = 0; i < 300; i++) {
        gg_exec_record *r = make_run(i % 3 == 0 ? "globex" : "acme", i % 2 ? "orders" : "billing",
                                     i % 5 == 0 ? "refund" : "lookup", i % 7 == 0 ? GG_EXEC_FAILED : GG_EXEC_SUCCEEDED);
        if (i == 1) {
            memcpy(first_id, r->id, sizeof first_id);
            /* Start state then final state of the same run. */
            gg_exec_record *start = gg_exec_record_copy_header(r);
            start->status = GG_EXEC_RUNNING;
            ck_assert(gg_history_submit(h, start));
        }
        ck_assert(gg_history_submit(h, r));
    }
    gg_history_flush(h);
    gg_history_stats st;
    gg_history_get_stats(h, &st);
    ck_assert_int_eq(st.submitted, 301);
    ck_assert_int_eq(st.written, 301);
    ck_assert_int_eq(st.dropped, 0);
    ck_assert_msg(st.batches < 50, "batches=%llu: writes were not batched", st.batches);
    /* Listing: tenant-scoped, filtered, paginated. */
    json_t *page = gg_store_executions_list(s, "acme", &(gg_exec_filter){.limit = 1000}, &err);
    ck_assert_ptr_nonnull(page);
    ck_assert_int_eq(json_array_size(json_object_get(page, "executions")), 200);
    json_decref(page);
    gg_exec_filter f = {.graph = "orders", .tool = "lookup", .status = "succeeded", .limit = 7};
    int total = 0, pages = 0;
    char cursor[80] = "";
    for (;;) {
        f.cursor = cursor[0] ? cursor : NULL;
        page = gg_store_executions_list(s, "acme", &f, &err);
        ck_assert_msg(page != NULL, "%s", err.message);
        json_t *items = json_object_get(page, "executions");
        size_t i;
        json_t *it;
        json_array_foreach(items, i, it) {
            ck_assert_str_eq(json_string_value(json_object_get(it, "tenant")), "acme");
            ck_assert_str_eq(json_string_value(json_object_get(it, "graph")), "orders");
            ck_assert_str_eq(json_string_value(json_object_get(it, "status")), "succeeded");
        }
        total += (int)json_array_size(items);
        pages++;
        json_t *next = json_object_get(page, "next_cursor");
        if (json_is_null(next)) { json_decref(page); break; }
        snprintf(cursor, sizeof cursor, "%s", json_string_value(next));
        json_decref(page);
    }
    int expect = 0;
    for (int i = 0; i < 300; i++)
        if (i % 3 != 0 && i % 2 && i % 5 != 0 && i % 7 != 0) expect++;
    ck_assert_int_eq(total, expect);
    ck_assert_int_eq(pages, (expect + 6) / 7 + (expect % 7 == 0 ? 1 : 0));
    f = (gg_exec_filter){.status = "bogus"};
    ck_assert_ptr_null(gg_store_executions_list(s, "acme", &f, &err));
    ck_assert_str_eq(err.code, "invalid");
    gg_error_clear(&err);
    f = (gg_exec_filter){.cursor = "zzz"};
    ck_assert_ptr_null(gg_store_executions_list(s, "acme", &f, &err));
    gg_error_clear(&err);
    /* One execution with its node history; another tenant cannot read it. */
    json_t *ex = gg_store_execution_get(s, "acme", first_id, &err);
    ck_assert_msg(ex != NULL, "%s", err.message);
    ck_assert_str_eq(json_string_value(json_object_get(ex, "status")), "succeeded");
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(ex, "arguments"), "n")), 7);
    ck_assert(json_is_true(json_object_get(json_object_get(ex, "result"), "ok")));
    json_t *nodes = json_object_get(ex, "nodes");
    ck_assert_int_eq(json_array_size(nodes), 2);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(nodes, 1), "node_type")), "transform");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(nodes, 1), "output")), "out");
    json_decref(ex);
    ck_assert_ptr_null(gg_store_execution_get(s, "globex", first_id, &err));
    ck_assert_str_eq(err.code, "not_found");
    gg_error_clear(&err);
    ex = gg_store_execution_get(s, NULL, first_id, &err); /* admin */
    ck_assert_ptr_nonnull(ex);
    json_decref(ex);
    gg_history_stop(h);
    gg_store_close(s);
}
END_TEST

START_TEST(history_interrupted_marking) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    gg_history *h = gg_history_start(s, NULL, &err);
    gg_exec_record *r = make_run("acme", "g", "t", GG_EXEC_RUNNING);
    char id[33];
    memcpy(id, r->id, sizeof id);
    ck_assert(gg_history_submit(h, r));
    gg_history_flush(h);
    gg_history_stop(h); /* "crash": the run never finished */
    json_t *ex = gg_store_execution_get(s, "acme", id, &err);
    ck_assert_str_eq(json_string_value(json_object_get(ex, "status")), "running");
    json_decref(ex);
    gg_history_options o = {.mark_interrupted = true};
    h = gg_history_start(s, &o, &err);
    ck_assert_ptr_nonnull(h);
    ex = gg_store_execution_get(s, "acme", id, &err);
    ck_assert_str_eq(json_string_value(json_object_get(ex, "status")), "interrupted");
    ck_assert(json_is_string(json_object_get(ex, "finished_at")));
    json_decref(ex);
    /* A final state never goes back to running. */
    gg_exec_record *late = make_run("acme", "g", "t", GG_EXEC_RUNNING);
    memcpy(late->id, id, sizeof id);
    ck_assert(gg_history_submit(h, late));
    gg_history_flush(h);
    ex = gg_store_execution_get(s, "acme", id, &err);
    ck_assert_str_eq(json_string_value(json_object_get(ex, "status")), "interrupted");
    json_decref(ex);
    /* ...but a run that waited for its client's answer across the restart (input-required
     * rounds keep one id) completes its record. */
    gg_exec_record *resumed = make_run("acme", "g", "t", GG_EXEC_SUCCEEDED);
    memcpy(resumed->id, id, sizeof id);
    ck_assert(gg_history_submit(h, resumed));
    gg_history_flush(h);
    ex = gg_store_execution_get(s, "acme", id, &err);
    ck_assert_str_eq(json_string_value(json_object_get(ex, "status")), "succeeded");
    json_decref(ex);
    /* RUNNING then the final state in a later batch: the row is completed, nodes added. */
    gg_exec_record *fin = make_run("acme", "g", "t", GG_EXEC_SUCCEEDED);
    gg_exec_record *start = gg_exec_record_copy_header(fin);
    start->status = GG_EXEC_RUNNING;
    ck_assert(gg_history_submit(h, start));
    gg_history_flush(h);
    ex = gg_store_execution_get(s, "acme", fin->id, &err);
    ck_assert_str_eq(json_string_value(json_object_get(ex, "status")), "running");
    ck_assert(json_is_null(json_object_get(ex, "finished_at")));
    json_decref(ex);
    memcpy(id, fin->id, sizeof id);
    ck_assert(gg_history_submit(h, fin));
    gg_history_flush(h);
    ex = gg_store_execution_get(s, "acme", id, &err);
    ck_assert_str_eq(json_string_value(json_object_get(ex, "status")), "succeeded");
    ck_assert_int_eq(json_array_size(json_object_get(ex, "nodes")), 2);
    json_decref(ex);
    /* A run of a deleted tenant is dropped, not a failed batch. */
    ck_assert(gg_history_submit(h, make_run("ghost", "g", "t", GG_EXEC_SUCCEEDED)));
    gg_history_flush(h);
    gg_history_stats st;
    gg_history_get_stats(h, &st);
    ck_assert_int_eq(st.failed_batches, 0);
    gg_history_stop(h);
    gg_store_close(s);
}
END_TEST

START_TEST(history_retention) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    gg_history *h = gg_history_start(s, NULL, &err);
    long long now = gg_wall_ms();
    for (int i = 0; i < 40; i++) {
        gg_exec_record *r = make_run("acme", "g", "t", GG_EXEC_SUCCEEDED);
        r->started_ms = now - (long long)(40 - i) * 3600 * 1000; /* one per hour */
        gg_exec_id_new(r->id);
        ck_assert(gg_history_submit(h, r));
    }
    gg_history_flush(h);
    gg_history_stop(h);
    /* By age: older than 10.5 hours goes. */
    long long n = gg_store_executions_prune(s, (long long)(10.5 * 3600 * 1000), 0, &err);
    ck_assert_int_eq(n, 30);
    /* By count: the 4 newest stay. */
    n = gg_store_executions_prune(s, 0, 4, &err);
    ck_assert_int_eq(n, 6);
    json_t *page = gg_store_executions_list(s, "acme", NULL, &err);
    ck_assert_int_eq(json_array_size(json_object_get(page, "executions")), 4);
    json_decref(page);
    /* The writer's retention runs on request too. */
    gg_history_options o = {.max_count = 1};
    h = gg_history_start(s, &o, &err);
    gg_history_retention_now(h);
    gg_history_stats st;
    gg_history_get_stats(h, &st);
    ck_assert_int_eq(st.pruned, 3);
    gg_history_stop(h);
    gg_store_close(s);
}
END_TEST

static long long count_rows(const char *sql) {
    if (pg_mode()) return pg_query1(sql, NULL);
    sqlite3 *db = open_readonly();
    sqlite3_stmt *st = NULL;
    ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    long long n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

/* More runs than one writer transaction takes, a run with more nodes than one multi-row
 * INSERT holds, and retention. Pins the layout of 0003: one row a run, its nodes in it. */
START_TEST(history_big_batches_many_nodes_and_cascade) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    gg_history_options o = {.flush_ms = 100};
    gg_history *h = gg_history_start(s, &o, &err);
    ck_assert_msg(h != NULL, "%s", err.message);
    enum { RUNS = 5000, NODES = 19 };
    for (int i = 0; i < RUNS; i++) ck_assert(gg_history_submit(h, make_run("acme", "g", "t", GG_EXEC_SUCCEEDED)));
    gg_exec_record *big = gg_exec_record_new("acme", "g", 1, "t", NULL, NULL);
    ck_assert_ptr_nonnull(big);
    for (int i = 0; i < NODES; i++)
        ck_assert_ptr_nonnull(gg_exec_record_add_node(big, "n", "transform", big->started_ms, big->started_ms,
                                                      NULL, json_integer(i), NULL));
    big->status = GG_EXEC_SUCCEEDED;
    big->finished_ms = big->started_ms;
    char big_id[33];
    memcpy(big_id, big->id, sizeof big_id);
    ck_assert(gg_history_submit(h, big));
    gg_history_flush(h);
    gg_history_stats st;
    gg_history_get_stats(h, &st);
    ck_assert_int_eq(st.written, RUNS + 1);
    ck_assert_msg(st.batches >= 3, "batches=%llu: one transaction took everything", st.batches);
    ck_assert_int_eq(count_rows("SELECT sum(json_array_length(nodes)) FROM executions"), RUNS * 2 + NODES);
    ck_assert_int_eq(count_rows(pg_mode() ? "SELECT count(*) FROM information_schema.tables WHERE table_name = 'node_executions'"
                                           : "SELECT count(*) FROM sqlite_master WHERE name = 'node_executions'"), 0);
    json_t *ex = gg_store_execution_get(s, "acme", big_id, &err);
    ck_assert_msg(ex != NULL, "%s", err.message);
    json_t *nodes = json_object_get(ex, "nodes");
    ck_assert_int_eq(json_array_size(nodes), NODES);
    for (int i = 0; i < NODES; i++) {
        ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(nodes, (size_t)i), "index")), i);
        ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(nodes, (size_t)i), "output")), i);
    }
    json_decref(ex);
    gg_history_stop(h);
    gg_history_options keep1 = {.max_count = 1};
    h = gg_history_start(s, &keep1, &err);
    gg_history_retention_now(h);
    gg_history_stop(h);
    ck_assert_int_eq(count_rows("SELECT count(*) FROM executions"), 1);
    gg_store_close(s);
}
END_TEST

/* gg_history_submit_then: what a committed callback saw. */
typedef struct commit_probe {
    gg_store *s;
    char id[33];
    int calls, oks;        /* atomics */
    int visible;           /* the row was readable when the callback ran */
} commit_probe;

static void probe_committed(void *user, bool ok) {
    commit_probe *p = user;
    if (ok) {
        gg_error err = GG_ERROR_INIT;
        json_t *ex = gg_store_execution_get(p->s, "acme", p->id, &err);
        if (ex) __atomic_store_n(&p->visible, 1, __ATOMIC_SEQ_CST);
        json_decref(ex);
        gg_error_clear(&err);
        __atomic_add_fetch(&p->oks, 1, __ATOMIC_SEQ_CST);
    }
    __atomic_add_fetch(&p->calls, 1, __ATOMIC_SEQ_CST);
}

static bool wait_calls(commit_probe *p, int n) {
    for (int i = 0; i < 1000 && __atomic_load_n(&p->calls, __ATOMIC_SEQ_CST) < n; i++) usleep(10000);
    return __atomic_load_n(&p->calls, __ATOMIC_SEQ_CST) >= n;
}

static void submit_probe(gg_history *h, commit_probe *p) {
    gg_exec_record *r = make_run("acme", "g", "t", GG_EXEC_SUCCEEDED);
    memcpy(p->id, r->id, sizeof p->id);
    ck_assert(gg_history_submit_then(h, r, probe_committed, p));
}

/* The callback runs once the record is committed (the row is readable then); a database
 * locked past the busy timeout makes batches fail: waiters hear "not stored" at once, the
 * records are kept and retried, the writer reports unhealthy, and everything is written
 * when the lock goes away. Stopping with the database still locked gives up (lost). */
START_TEST(history_commit_callbacks_and_retry) {
    gg_error err = GG_ERROR_INIT;
    gg_store_options so = {.path = dbpath, .pool_size = 3, .busy_timeout_ms = 30};
    gg_store *s = gg_store_open(&so, &err);
    ck_assert_msg(s && gg_store_migrate(s, migdir, NULL, &err), "%s", err.message);
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    gg_history_options o = {.flush_ms = 5, .stop_retry_ms = 300};
    gg_history *h = gg_history_start(s, &o, &err);
    ck_assert_ptr_nonnull(h);
    commit_probe a = {.s = s};
    submit_probe(h, &a);
    ck_assert(wait_calls(&a, 1));
    ck_assert_int_eq(a.oks, 1);
    ck_assert_int_eq(a.visible, 1);
    ck_assert(gg_history_healthy(h, NULL, 0));

    sqlite3 *lock;
    ck_assert_int_eq(sqlite3_open(dbpath, &lock), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(lock, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);
    commit_probe b = {.s = s};
    submit_probe(h, &b);
    ck_assert(wait_calls(&b, 1));
    ck_assert_int_eq(b.oks, 0); /* answered "not stored" */
    char why[256] = "";
    ck_assert(!gg_history_healthy(h, why, sizeof why));
    ck_assert_msg(strstr(why, "locked") != NULL, "%s", why);
    commit_probe c = {.s = s}; /* while failing: refused at once, still queued */
    submit_probe(h, &c);
    ck_assert_int_eq(c.calls, 1);
    ck_assert_int_eq(c.oks, 0);
    gg_history_stats st;
    gg_history_get_stats(h, &st);
    ck_assert(st.failing);
    ck_assert_int_eq(st.pending, 2);
    ck_assert_int_gt(st.write_errors, 0);
    ck_assert_int_eq(st.dropped, 0);

    ck_assert_int_eq(sqlite3_exec(lock, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
    for (int i = 0; i < 1000 && !gg_history_healthy(h, NULL, 0); i++) usleep(10000);
    ck_assert(gg_history_healthy(h, NULL, 0));
    ck_assert(gg_history_flush(h));
    json_t *ex = gg_store_execution_get(s, "acme", b.id, &err);
    ck_assert_msg(ex != NULL, "the kept record was written");
    json_decref(ex);
    ck_assert_ptr_nonnull(ex = gg_store_execution_get(s, "acme", c.id, &err));
    json_decref(ex);
    ck_assert_int_eq(b.calls, 1); /* exactly once */
    gg_history_get_stats(h, &st);
    ck_assert(!st.failing);
    ck_assert_int_eq(st.pending, 0);
    ck_assert_int_eq(st.written, 3);

    /* stop while locked: retried for stop_retry_ms, then counted lost */
    ck_assert_int_eq(sqlite3_exec(lock, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);
    commit_probe d = {.s = s};
    submit_probe(h, &d);
    ck_assert(wait_calls(&d, 1));
    gg_history_stop(h);
    ck_assert_int_eq(d.calls, 1);
    ck_assert_int_eq(d.oks, 0);
    sqlite3_exec(lock, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(lock);
    gg_store_close(s);
}
END_TEST

/* A full queue refuses a waiter on the calling thread (false, callback with ok = false),
 * and says so beforehand (gg_history_has_room). */
START_TEST(history_submit_then_refused) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    gg_history_options o = {.flush_ms = 500, .commit_window_ms = 500, .queue_max = 1};
    gg_history *h = gg_history_start(s, &o, &err);
    commit_probe a = {.s = s}, b = {.s = s};
    ck_assert(gg_history_has_room(h));
    submit_probe(h, &a);
    ck_assert(!gg_history_has_room(h)); /* the gateway refuses new calls from here */
    gg_exec_record *r = make_run("acme", "g", "t", GG_EXEC_SUCCEEDED);
    ck_assert(!gg_history_submit_then(h, r, probe_committed, &b));
    ck_assert_int_eq(b.calls, 1);
    ck_assert_int_eq(b.oks, 0);
    gg_history_stop(h);
    ck_assert_int_eq(a.calls, 1);
    ck_assert_int_eq(a.oks, 1);
    gg_history_stats st;
    gg_history_get_stats(NULL, &st);
    gg_store_close(s);
}
END_TEST

START_TEST(history_queue_bound_and_truncation) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    gg_history_options o = {.flush_ms = 200, .queue_max = 3, .max_payload_bytes = 64};
    gg_history *h = gg_history_start(s, &o, &err);
    int accepted = 0;
    char big_id[33] = "";
    for (int i = 0; i < 10; i++) {
        gg_exec_record *r = make_run("acme", "g", "t", GG_EXEC_SUCCEEDED);
        json_decref(r->result);
        r->result = json_pack("{s:s}", "text", "0123456789012345678901234567890123456789012345678901234567890123456789");
        if (i == 0) memcpy(big_id, r->id, sizeof big_id);
        if (gg_history_submit(h, r)) accepted++;
    }
    ck_assert_int_le(accepted, 10);
    gg_history_flush(h);
    gg_history_stats st;
    gg_history_get_stats(h, &st);
    ck_assert_int_eq(st.written + st.dropped, 10);
    ck_assert_int_gt(st.dropped, 0);
    json_t *ex = gg_store_execution_get(s, "acme", big_id, &err);
    ck_assert_ptr_nonnull(ex);
    ck_assert(json_is_true(json_object_get(json_object_get(ex, "result"), "truncated")));
    json_decref(ex);
    gg_history_stop(h);
    gg_store_close(s);
}
END_TEST

/* ---- migration 0003 and the ways of handing node records over ------------------------------ */

static void exec_sql(const char *sql) {
    if (pg_mode()) { pg_exec_sql(sql); return; }
    sqlite3 *db = NULL;
    ck_assert_int_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    ck_assert_msg(rc == SQLITE_OK, "%s: %s", sql, msg ? msg : "?");
    sqlite3_close(db);
}

static json_t *iso(long long ms) {
    char buf[GG_TIME_ISO_MAX];
    gg_time_iso8601(ms, buf);
    return json_string(buf);
}

/* v is the ISO 8601 text of ms (the API's time form). */
static bool is_iso(const json_t *v, long long ms) {
    char buf[GG_TIME_ISO_MAX];
    gg_time_iso8601(ms, buf);
    return json_is_string(v) && strcmp(json_string_value(v), buf) == 0;
}

/* A database at 0002 with node rows of every shape, then 0003: each execution shows the
 * same nodes as before, in order, nothing lost, and node_executions is gone. (Ids carry
 * their run's start, as gg_exec_id_new makes them: 0019's readers find a run by it.) */
START_TEST(migration_0003_keeps_node_rows) {
    char olddir[600];
    snprintf(olddir, sizeof olddir, "%s/old", tmpdir);
    sh("mkdir '%s'%s", olddir, "");
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "cp '%s'/0001_*.sql '%s'/0002_*.sql '%s'", migdir, migdir, olddir);
    ck_assert_int_eq(system(cmd), 0);
    gg_store *s = open_store();
    gg_error err = GG_ERROR_INIT;
    ck_assert_msg(gg_store_migrate(s, olddir, NULL, &err), "%s", err.message);
    ck_assert_int_eq(gg_store_schema_version(s, &err), 2);
    exec_sql("INSERT INTO tenants(name, created_at) VALUES ('acme', 1), ('globex', 1);"
             "INSERT INTO executions(id, tenant, graph, version, tool, key_id, status, started_at, finished_at,"
             " duration_ms, arguments, result, error) VALUES"
             " ('018bcfe5680000000000000000000001', 'acme', 'g', 2, 't', 'k1', 'succeeded', 1700000000000,"
             "  1700000000009, 9.5, '{\"value\":42}', '{\"result\":\"high\"}', NULL),"
             " ('018bcfe56be800000000000000000002', 'acme', 'g', 2, 't', NULL, 'running', 1700000001000,"
             "  NULL, NULL, '{}', NULL, NULL),"
             " ('018bcfe56fd000000000000000000003', 'globex', 'h', 1, 'u', NULL, 'failed', 1700000002000,"
             "  1700000002003, 3, 'not json', NULL, 'boom');"
             /* inserted out of order; input/output: JSON, text that is not JSON, NULL, JSON null */
             "INSERT INTO node_executions VALUES"
             " ('018bcfe5680000000000000000000001', 2, 'high_path', 'transform', 1700000000004, 1700000000009,"
             "  5.25, '{\"entry\":{\"value\":42}}', '{\"result\":\"high\"}', NULL),"
             " ('018bcfe5680000000000000000000001', 0, 'entry', 'entry', 1700000000000, 1700000000000, 0.001,"
             "  NULL, '{\"value\":42}', NULL),"
             " ('018bcfe5680000000000000000000001', 1, 'switch_node', 'switch', 1700000000000, 1700000000004,"
             "  4, NULL, '\"high_path\"', NULL),"
             " ('018bcfe56fd000000000000000000003', 0, 'entry', 'entry', 1700000002000, 1700000002000, 0,"
             "  NULL, 'null', NULL),"
             " ('018bcfe56fd000000000000000000003', 1, 'bad', 'transform', 1700000002000, 1700000002003, 3,"
             "  'plain \"text\"', NULL, 'JSONata \"x\" failed: é\n');");
    int applied = 0;
    ck_assert_msg(gg_store_migrate(s, migdir, &applied, &err), "%s", err.message);
    ck_assert_int_ge(applied, 1);
    ck_assert_int_eq(count_rows(pg_mode() ? "SELECT count(*) FROM information_schema.tables WHERE table_name = 'node_executions'"
                                           : "SELECT count(*) FROM sqlite_master WHERE name = 'node_executions'"), 0);
    ck_assert_int_eq(count_rows("SELECT sum(json_array_length(nodes)) FROM executions"), 5);

    json_t *ex = gg_store_execution_get(s, "acme", "018bcfe5680000000000000000000001", &err);
    ck_assert_msg(ex != NULL, "%s", err.message);
    json_t *want = json_pack(
        "[{s:i,s:s,s:s,s:o,s:o,s:f,s:n,s:{s:i},s:n},"
        " {s:i,s:s,s:s,s:o,s:o,s:f,s:n,s:s,s:n},"
        " {s:i,s:s,s:s,s:o,s:o,s:f,s:{s:{s:i}},s:{s:s},s:n}]",
        "index", 0, "node_id", "entry", "node_type", "entry", "started_at", iso(1700000000000),
        "finished_at", iso(1700000000000), "duration_ms", 0.001, "input", "output", "value", 42, "error",
        "index", 1, "node_id", "switch_node", "node_type", "switch", "started_at", iso(1700000000000),
        "finished_at", iso(1700000000004), "duration_ms", 4.0, "input", "output", "high_path", "error",
        "index", 2, "node_id", "high_path", "node_type", "transform", "started_at", iso(1700000000004),
        "finished_at", iso(1700000000009), "duration_ms", 5.25, "input", "entry", "value", 42, "output",
        "result", "high", "error");
    ck_assert_ptr_nonnull(want);
    char *got_s = json_dumps(json_object_get(ex, "nodes"), JSON_COMPACT), *want_s = json_dumps(want, JSON_COMPACT);
    ck_assert_msg(json_equal(json_object_get(ex, "nodes"), want), "got %s\nwant %s", got_s, want_s);
    free(got_s);
    free(want_s);
    json_decref(want);
    ck_assert_str_eq(json_string_value(json_object_get(ex, "status")), "succeeded");
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(ex, "arguments"), "value")), 42);
    json_decref(ex);

    ex = gg_store_execution_get(s, "acme", "018bcfe56be800000000000000000002", &err);
    ck_assert_ptr_nonnull(ex);
    ck_assert_int_eq(json_array_size(json_object_get(ex, "nodes")), 0);
    json_decref(ex);

    ex = gg_store_execution_get(s, NULL, "018bcfe56fd000000000000000000003", &err);
    ck_assert_ptr_nonnull(ex);
    json_t *nodes = json_object_get(ex, "nodes"), *n0 = json_array_get(nodes, 0), *n1 = json_array_get(nodes, 1);
    ck_assert_int_eq(json_array_size(nodes), 2);
    ck_assert(json_is_null(json_object_get(n0, "output")) && json_is_null(json_object_get(n0, "input")));
    ck_assert_str_eq(json_string_value(json_object_get(n1, "input")), "plain \"text\"");
    ck_assert(json_is_null(json_object_get(n1, "output")));
    ck_assert_str_eq(json_string_value(json_object_get(n1, "error")), "JSONata \"x\" failed: é\n");
    ck_assert(json_is_real(json_object_get(n1, "duration_ms")));
    ck_assert_str_eq(json_string_value(json_object_get(ex, "arguments")), "not json");
    json_decref(ex);
    /* The new indexes serve the queries: listing and retention still work. */
    json_t *page = gg_store_executions_list(s, "acme", NULL, &err);
    ck_assert_int_eq(json_array_size(json_object_get(page, "executions")), 2);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(page, "executions"), 0), "id")),
                     "018bcfe56be800000000000000000002");
    json_decref(page);
    ck_assert_int_eq(gg_store_executions_prune(s, 1000, 0, &err), 3);
    gg_store_close(s);
}
END_TEST

/* ---- reading history_batches (0019) --------------------------------------------------- */

/* The id of run k started at ms (its first 12 hex digits are the start, as gg_exec_id_new). */
static void run_id(char id[33], long long ms, int k) { snprintf(id, 33, "%012llx%020d", ms, k); }

/* Append one history_batches row of tenant to sql: records (id, status, start) in the
 * order given, in 0019's line format; first_ms/last_ms/n/bytes computed as the writer does. */
typedef struct hist_line { const char *id; int status; long long ms; } hist_line;

static void add_row(FILE *sql, const char *tenant, const hist_line *l, int n) {
    char *body = NULL;
    size_t len = 0;
    FILE *b = open_memstream(&body, &len);
    ck_assert_ptr_nonnull(b);
    long long first = l[0].ms, last = l[0].ms;
    for (int i = 0; i < n; i++) {
        bool running = l[i].status == GG_EXEC_RUNNING;
        fprintf(b, "[\"%s\",%d,%lld,%lld,%d,2,\"%s\",\"t\",%s,%s,{\"n\":%d},%s,%s,null,null]\n", l[i].id,
                l[i].status, l[i].ms, running ? 0 : l[i].ms + 5, running ? 0 : 5250, l[i].ms % 2 ? "odd" : "even",
                running ? "null" : "\"k1\"", l[i].status == GG_EXEC_FAILED ? "\"boom\"" : "null", i,
                running ? "null" : "{\"ok\":true}", running ? "null" : "[[0,\"entry\",\"entry\",0,1,1.5,{\"n\":1}]]");
        if (l[i].ms < first) first = l[i].ms;
        if (l[i].ms > last) last = l[i].ms;
    }
    fclose(b);
    fprintf(sql, "INSERT INTO history_batches(tenant, first_ms, last_ms, n, bytes, body) VALUES ('%s', %lld, %lld, %d, %zu, '%s');",
            tenant, first, last, n, len, body);
    free(body);
}

static void exec_sql_file(FILE *sql, char **text) {
    fclose(sql);
    exec_sql(*text);
    free(*text);
}

static const char *get_status(gg_store *s, const char *tenant, const char *id) {
    static char st[32];
    gg_error err = GG_ERROR_INIT;
    json_t *ex = gg_store_execution_get(s, tenant, id, &err);
    snprintf(st, sizeof st, "%s", ex ? json_string_value(json_object_get(ex, "status")) : err.code);
    json_decref(ex);
    gg_error_clear(&err);
    return st;
}

/* Versions of a run in different rows: any final state over running, interrupted under
 * another final, then the newer row; a row holding an older run's final next to fresh runs;
 * another tenant's run and malformed ids are not found. */
START_TEST(history_read_versions) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err) && gg_store_tenant_create(s, "globex", &err));
    const long long t = 1800000000000LL;
    char a[33], b[33], c[33], d[33], e[33], f[33], g[33], x[33];
    run_id(a, t, 1);      /* running, then succeeded in a later row */
    run_id(b, t + 1, 2);  /* failed, then a late running version: stays failed */
    run_id(c, t + 2, 3);  /* succeeded, then interrupted (journal replay order): succeeded */
    run_id(d, t + 3, 4);  /* interrupted, then cancelled: cancelled */
    run_id(e, t + 4, 5);  /* interrupted only */
    run_id(f, t + 10, 6); /* a fresh run sharing a row with a's final */
    run_id(g, t + 2, 7);  /* globex's */
    run_id(x, t + 5, 8);  /* succeeded, then failed: the newer row wins */
    char *text = NULL;
    size_t len = 0;
    FILE *sql = open_memstream(&text, &len);
    add_row(sql, "acme", (hist_line[]){{a, GG_EXEC_RUNNING, t}, {b, GG_EXEC_FAILED, t + 1}, {c, GG_EXEC_SUCCEEDED, t + 2},
                                       {d, GG_EXEC_INTERRUPTED, t + 3}, {x, GG_EXEC_SUCCEEDED, t + 5}}, 5);
    add_row(sql, "globex", (hist_line[]){{g, GG_EXEC_SUCCEEDED, t + 2}}, 1);
    add_row(sql, "acme", (hist_line[]){{b, GG_EXEC_RUNNING, t + 1}, {c, GG_EXEC_INTERRUPTED, t + 2},
                                       {e, GG_EXEC_INTERRUPTED, t + 4}, {x, GG_EXEC_FAILED, t + 5}}, 4);
    add_row(sql, "acme", (hist_line[]){{a, GG_EXEC_SUCCEEDED, t}, {d, GG_EXEC_CANCELLED, t + 3},
                                       {f, GG_EXEC_RUNNING, t + 10}}, 3);
    exec_sql_file(sql, &text);
    ck_assert_str_eq(get_status(s, "acme", a), "succeeded");
    ck_assert_str_eq(get_status(s, "acme", b), "failed");
    ck_assert_str_eq(get_status(s, "acme", c), "succeeded");
    ck_assert_str_eq(get_status(s, "acme", d), "cancelled");
    ck_assert_str_eq(get_status(s, "acme", e), "interrupted");
    ck_assert_str_eq(get_status(s, "acme", x), "failed");
    ck_assert_str_eq(get_status(s, NULL, x), "failed");
    ck_assert_str_eq(get_status(s, "acme", f), "running"); /* its row also holds a's final */
    ck_assert_str_eq(get_status(s, "acme", g), "not_found"); /* another tenant's */
    ck_assert_str_eq(get_status(s, "globex", g), "succeeded");
    ck_assert_str_eq(get_status(s, NULL, g), "succeeded");
    const char *bad[] = {"", "nope", "018bcfe56800", "0000000000AA00000000000000000001", "1a3b5c7d9e1f0000000000000000000g",
                         "1a3b5c7d9e1f00000000000000000001x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) ck_assert_str_eq(get_status(s, NULL, bad[i]), "not_found");

    /* the full object of the newest version */
    json_t *ex = gg_store_execution_get(s, "acme", a, &err);
    ck_assert_msg(ex != NULL, "%s", err.message);
    ck_assert_str_eq(json_string_value(json_object_get(ex, "tenant")), "acme");
    ck_assert_str_eq(json_string_value(json_object_get(ex, "key_id")), "k1");
    ck_assert_int_eq(json_integer_value(json_object_get(ex, "version")), 2);
    ck_assert(is_iso(json_object_get(ex, "started_at"), t) && is_iso(json_object_get(ex, "finished_at"), t + 5));
    ck_assert(json_real_value(json_object_get(ex, "duration_ms")) == 5.25);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(ex, "arguments"), "n")), 0);
    ck_assert(json_is_true(json_object_get(json_object_get(ex, "result"), "ok")));
    ck_assert_int_eq(json_array_size(json_object_get(ex, "nodes")), 1);
    ck_assert(is_iso(json_object_get(json_array_get(json_object_get(ex, "nodes"), 0), "finished_at"), t + 1));
    ck_assert(json_is_null(json_object_get(ex, "error")) && json_is_null(json_object_get(ex, "trace_id")));
    json_decref(ex);
    ex = gg_store_execution_get(s, "acme", b, &err);
    ck_assert_str_eq(json_string_value(json_object_get(ex, "error")), "boom");
    json_decref(ex);

    /* the listing: each run once, its newest version, newest start first */
    json_t *page = gg_store_executions_list(s, "acme", NULL, &err);
    ck_assert_msg(page != NULL, "%s", err.message);
    json_t *items = json_object_get(page, "executions");
    const char *want_ids[] = {f, x, e, d, c, b, a};
    const char *want_st[] = {"running", "failed", "interrupted", "cancelled", "succeeded", "failed", "succeeded"};
    ck_assert_int_eq(json_array_size(items), 7);
    for (size_t i = 0; i < 7; i++) {
        json_t *it = json_array_get(items, i);
        ck_assert_str_eq(json_string_value(json_object_get(it, "id")), want_ids[i]);
        ck_assert_str_eq(json_string_value(json_object_get(it, "status")), want_st[i]);
        ck_assert_ptr_null(json_object_get(it, "nodes")); /* the listing leaves the texts out */
    }
    ck_assert(json_is_null(json_object_get(items ? json_array_get(items, 0) : NULL, "duration_ms")));
    json_decref(page);
    /* filters apply to the newest version: a's and b's running versions are not listed */
    page = gg_store_executions_list(s, "acme", &(gg_exec_filter){.status = "running"}, &err);
    ck_assert_int_eq(json_array_size(json_object_get(page, "executions")), 1);
    json_decref(page);
    page = gg_store_executions_list(s, "acme", &(gg_exec_filter){.status = "failed", .graph = "odd"}, &err);
    ck_assert_int_eq(json_array_size(json_object_get(page, "executions")), 2); /* b (t+1), x (t+5) */
    json_decref(page);
    page = gg_store_executions_list(s, "acme", &(gg_exec_filter){.since_ms = t + 3}, &err);
    ck_assert_int_eq(json_array_size(json_object_get(page, "executions")), 4); /* f x e d */
    json_decref(page);
    page = gg_store_executions_list(s, NULL, NULL, &err); /* all tenants */
    ck_assert_int_eq(json_array_size(json_object_get(page, "executions")), 8);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(page, "executions"), 4), "tenant")),
                     "globex"); /* f x e d, then g and c at t + 2: g's id is the larger */
    json_decref(page);
    page = gg_store_executions_list(s, "globex", NULL, &err);
    ck_assert_int_eq(json_array_size(json_object_get(page, "executions")), 1);
    json_decref(page);
    gg_store_close(s);
}
END_TEST

/* Paging with a cursor across many rows (records of a run in two rows, rows of several
 * tenants interleaved, rows holding older runs' finals): every run exactly once, in
 * (started_at, id) order, for one tenant and for all, whatever the page size. */
START_TEST(history_read_paging) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    const char *tenants[] = {"acme", "globex", "initech"};
    for (int i = 0; i < 3; i++) ck_assert(gg_store_tenant_create(s, tenants[i], &err));
    enum { ROWS = 60, PER = 5 };
    const long long t = 1800000000000LL;
    char *text = NULL;
    size_t len = 0;
    FILE *sql = open_memstream(&text, &len);
    static char ids[ROWS][PER][33];
    int runs[3] = {0};
    for (int r = 0; r < ROWS; r++) {
        hist_line l[PER + 1];
        int n = 0;
        long long base = t + r * 3; /* rows of the three tenants overlap in time */
        /* the final of the last run of this tenant's row before (9 ms older: the row spans 9) */
        if (r >= 3) l[n++] = (hist_line){ids[r - 3][PER - 1], GG_EXEC_SUCCEEDED, base - 9 + PER - 1};
        for (int k = 0; k < PER; k++) {
            run_id(ids[r][k], base + k, r * PER + k);
            l[n++] = (hist_line){ids[r][k], k == PER - 1 ? GG_EXEC_RUNNING : GG_EXEC_SUCCEEDED, base + k};
        }
        runs[r % 3] += PER;
        add_row(sql, tenants[r % 3], l, n);
    }
    exec_sql_file(sql, &text);
    for (int lim = 1; lim <= 11; lim += 5) {
        for (int ti = -1; ti < 3; ti++) {
            const char *tenant = ti < 0 ? NULL : tenants[ti];
            int want = ti < 0 ? ROWS * PER : runs[ti], seen = 0;
            char cursor[100] = "", prev[100] = "";
            long long prev_ms = 0;
            for (;;) {
                json_t *page = gg_store_executions_list(s, tenant, &(gg_exec_filter){.limit = lim, .cursor = cursor[0] ? cursor : NULL}, &err);
                ck_assert_msg(page != NULL, "%s", err.message);
                json_t *items = json_object_get(page, "executions");
                ck_assert_int_le(json_array_size(items), lim);
                size_t i;
                json_t *it;
                json_array_foreach(items, i, it) {
                    const char *id = json_string_value(json_object_get(it, "id"));
                    char hex[13];
                    memcpy(hex, id, 12);
                    hex[12] = 0;
                    long long ms = strtoll(hex, NULL, 16); /* the start, from the id */
                    if (prev[0]) ck_assert_msg(ms < prev_ms || (ms == prev_ms && strcmp(id, prev) < 0), "%s after %s", id, prev);
                    snprintf(prev, sizeof prev, "%s", id);
                    prev_ms = ms;
                    if (tenant) ck_assert_str_eq(json_string_value(json_object_get(it, "tenant")), tenant);
                    /* a row's running run has its final in the tenant's next row, but in the last three */
                    long long num = strtoll(id + 12, NULL, 10);
                    ck_assert_str_eq(json_string_value(json_object_get(it, "status")),
                                     num % PER == PER - 1 && num / PER + 3 >= ROWS ? "running" : "succeeded");
                    seen++;
                }
                json_t *next = json_object_get(page, "next_cursor");
                if (json_is_null(next)) { json_decref(page); break; }
                snprintf(cursor, sizeof cursor, "%s", json_string_value(next));
                json_decref(page);
            }
            ck_assert_int_eq(seen, want);
        }
    }
    /* since and a cursor together; a since past every run lists nothing */
    json_t *page = gg_store_executions_list(s, "acme", &(gg_exec_filter){.since_ms = t + 30 * 3}, &err);
    ck_assert_int_eq(json_array_size(json_object_get(page, "executions")), 10 * PER);
    json_decref(page);
    page = gg_store_executions_list(s, NULL, &(gg_exec_filter){.since_ms = t + ROWS * 3 + 10}, &err);
    ck_assert_int_eq(json_array_size(json_object_get(page, "executions")), 0);
    ck_assert(json_is_null(json_object_get(page, "next_cursor")));
    json_decref(page);
    gg_store_close(s);
}
END_TEST

/* The executor's history array of a switch run with a failed last node. */
static json_t *sample_history(long long t) {
    return json_pack("[{s:i,s:s,s:s,s:I,s:I,s:f,s:{s:i}},"
                     " {s:i,s:s,s:s,s:I,s:I,s:f,s:{s:{s:i}},s:s},"
                     " {s:i,s:s,s:s,s:I,s:I,s:f,s:{s:{s:i},s:s},s:{s:s,s:s}}]",
                     "executionIndex", 0, "nodeId", "entry", "nodeType", "entry", "startTime", (json_int_t)t,
                     "endTime", (json_int_t)t, "duration", 0.001, "output", "value", 42,
                     "executionIndex", 1, "nodeId", "switch_node", "nodeType", "switch", "startTime",
                     (json_int_t)t + 1, "endTime", (json_int_t)t + 2, "duration", 1.234, "input", "entry", "value",
                     42, "output", "high_path",
                     "executionIndex", 2, "nodeId", "high_path", "nodeType", "transform", "startTime",
                     (json_int_t)t + 2, "endTime", (json_int_t)t + 7, "duration", 5.0000001, "input", "entry",
                     "value", 42, "switch_node", "high_path", "error", "code", "T0410", "message",
                     "Argument 1 of \"$x\" \x01 bad");
}

/* Record hist through one of the ways; returns the stored execution. */
static json_t *record_with(gg_store *s, gg_history *h, json_t *hist, int way) {
    gg_exec_record *r = gg_exec_record_new("acme", "g", 1, "t", NULL, NULL);
    ck_assert_ptr_nonnull(r);
    r->status = GG_EXEC_FAILED;
    r->finished_ms = r->started_ms + 7;
    r->error = strdup("failed");
    size_t i;
    json_t *n;
    switch (way) {
    case 0: /* one struct a node, the gateway's conversion before the fast path */
        json_array_foreach(hist, i, n) {
            json_t *e = json_object_get(n, "error");
            gg_node_exec_record *nr = gg_exec_record_add_node(
                r, json_string_value(json_object_get(n, "nodeId")), json_string_value(json_object_get(n, "nodeType")),
                json_integer_value(json_object_get(n, "startTime")), json_integer_value(json_object_get(n, "endTime")),
                e ? json_incref(json_object_get(n, "input")) : NULL, json_incref(json_object_get(n, "output")),
                e ? json_string_value(json_object_get(e, "message")) : NULL);
            ck_assert_ptr_nonnull(nr);
            nr->duration_ms = json_number_value(json_object_get(n, "duration"));
        }
        break;
    case 1: gg_exec_record_set_node_history(r, json_incref(hist), false); break;
    case 2: gg_exec_record_set_node_history(r, json_incref(hist), true); break;
    case 3: gg_exec_record_set_nodes_json(r, json_dumps(hist, JSON_COMPACT)); break;
    case 4: { /* the stored positional form with absolute times, inputs on failures only */
        json_t *pos = json_array();
        json_array_foreach(hist, i, n) {
            json_t *e = json_object_get(n, "error");
            json_t *row = json_pack("[O,O,O,O,O,O,O]", json_object_get(n, "executionIndex"), json_object_get(n, "nodeId"),
                                    json_object_get(n, "nodeType"), json_object_get(n, "startTime"),
                                    json_object_get(n, "endTime"), json_object_get(n, "duration"),
                                    json_object_get(n, "output") ? json_object_get(n, "output") : json_null());
            ck_assert_ptr_nonnull(row);
            if (e) {
                json_array_append(row, json_object_get(n, "input"));
                json_array_append(row, json_object_get(e, "message"));
            }
            json_array_append_new(pos, row);
        }
        gg_exec_record_set_nodes_json(r, json_dumps(pos, JSON_COMPACT));
        json_decref(pos);
        break;
    }
    }
    char id[33];
    memcpy(id, r->id, sizeof id);
    ck_assert(gg_history_submit(h, r));
    gg_history_flush(h);
    gg_error err = GG_ERROR_INIT;
    json_t *ex = gg_store_execution_get(s, "acme", id, &err);
    ck_assert_msg(ex != NULL, "%s", err.message);
    return ex;
}

static void assert_same_nodes(json_t *a, json_t *b) {
    char *as = json_dumps(json_object_get(a, "nodes"), JSON_COMPACT), *bs = json_dumps(json_object_get(b, "nodes"), JSON_COMPACT);
    ck_assert_msg(json_equal(json_object_get(a, "nodes"), json_object_get(b, "nodes")), "\n%s\n%s", as, bs);
    free(as);
    free(bs);
}

START_TEST(history_node_paths_agree) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    gg_history *h = gg_history_start(s, NULL, &err);
    json_t *hist = sample_history(1700000000000LL);
    json_t *structs = record_with(s, h, hist, 0), *fast = record_with(s, h, hist, 1);
    json_t *all = record_with(s, h, hist, 2), *text = record_with(s, h, hist, 3), *pos = record_with(s, h, hist, 4);
    assert_same_nodes(structs, fast);
    assert_same_nodes(structs, pos);
    assert_same_nodes(all, text);
    json_t *nodes = json_object_get(fast, "nodes");
    ck_assert_int_eq(json_array_size(nodes), 3);
    json_t *last = json_array_get(nodes, 2);
    ck_assert_str_eq(json_string_value(json_object_get(last, "error")), "Argument 1 of \"$x\" \x01 bad");
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(json_object_get(last, "input"), "entry"), "value")), 42);
    ck_assert(json_is_null(json_object_get(last, "output")));
    ck_assert(json_is_null(json_object_get(json_array_get(nodes, 1), "input"))); /* kept on failures only */
    ck_assert(json_is_object(json_object_get(json_array_get(json_object_get(all, "nodes"), 1), "input")));
    ck_assert(json_real_value(json_object_get(last, "duration_ms")) == 5.0); /* 5.0000001 to the µs */
    ck_assert(json_real_value(json_object_get(json_array_get(nodes, 1), "duration_ms")) == 1.234);
    ck_assert_str_eq(json_string_value(json_object_get(last, "started_at")), "2023-11-14T22:13:20.002Z");
    ck_assert_str_eq(json_string_value(json_object_get(last, "finished_at")), "2023-11-14T22:13:20.007Z");
    json_decref(structs);
    json_decref(fast);
    json_decref(all);
    json_decref(text);
    json_decref(pos);
    json_decref(hist);
    gg_history_stop(h);
    gg_store_close(s);
}
END_TEST

/* The start an id carries: 12 hex digits of ms, then 20 random ones, 32 lowercase hex
 * digits in all; anything else carries none (get refuses it as not found). */
START_TEST(exec_id_start) {
    char id[33];
    gg_exec_id_new(id);
    long long now = gg_wall_ms();
    long long t = gg_exec_id_start_ms(id);
    ck_assert(t > now - 60000 && t <= now);
    ck_assert_int_eq(gg_exec_id_start_ms("0000000003e8ffffffffffffffffffff"), 1000);
    static const char *bad[] = {"", "0000000003e8", "0000000003e8fffffffffffffffffff", /* 31 */
                                "0000000003e8ffffffffffffffffffff0", /* 33 */
                                "0000000003E8ffffffffffffffffffff", "0000000003e8fffffffffffffffffffg",
                                "0000000003e8ffffffff/fffffffffff", "0000000003e8fffffff" "\xe9" "fffffffffff",
                                "g000000003e8ffffffffffffffffffff", NULL};
    for (int i = 0; bad[i]; i++) ck_assert_msg(gg_exec_id_start_ms(bad[i]) == -1, "%s", bad[i]);
    ck_assert_int_eq(gg_exec_id_start_ms(NULL), -1);
}
END_TEST

/* The gateway's node text (src/graph/provider.c): times as ms after the run's start and an
 * input that was the run's context stored as "$context", which get rebuilds from the
 * records before it — each node's latest output by id, a node whose latest output was
 * undefined (stored null) left out, as the executor keeps the context. */
START_TEST(history_context_ref) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    gg_history *h = gg_history_start(s, NULL, &err);
    gg_exec_record *r = gg_exec_record_new("acme", "g", 1, "t", NULL, NULL);
    ck_assert_ptr_nonnull(r);
    r->status = GG_EXEC_SUCCEEDED;
    r->finished_ms = r->started_ms + 9;
    gg_exec_record_set_nodes_json(r, strdup("[[0,\"entry\",\"entry\",0,0,0.001,{\"n\":1}],"
                                            "[1,\"x\",\"transform\",1,2,0.5,{\"k\":1},\"$context\"],"
                                            "[2,\"y\",\"switch\",2,3,0.5,\"x\",\"$context\"],"
                                            "[3,\"x\",\"transform\",3,4,0.5,null,\"$context\"],"
                                            "[4,\"z\",\"transform\",4,5,0.5,7,\"$context\"],"
                                            "[5,\"exit\",\"exit\",9,9,0,7]]"));
    char id[33];
    memcpy(id, r->id, sizeof id);
    long long start = r->started_ms;
    ck_assert(gg_history_submit(h, r));
    gg_history_flush(h);
    json_t *ex = gg_store_execution_get(s, "acme", id, &err);
    ck_assert_msg(ex != NULL, "%s", err.message);
    json_t *nodes = json_object_get(ex, "nodes");
    char *text = json_dumps(nodes, JSON_COMPACT);
    static const char *want[] = {NULL, "{\"entry\":{\"n\":1}}", "{\"entry\":{\"n\":1},\"x\":{\"k\":1}}",
                                 "{\"entry\":{\"n\":1},\"x\":{\"k\":1},\"y\":\"x\"}",
                                 "{\"entry\":{\"n\":1},\"y\":\"x\"}", NULL};
    for (size_t i = 0; i < 6; i++) {
        json_t *in = json_object_get(json_array_get(nodes, i), "input");
        json_t *w = want[i] ? json_loads(want[i], 0, NULL) : json_null();
        ck_assert_msg(json_equal(in, w), "node %zu: %s", i, text);
        json_decref(w);
    }
    char at[40], day[24];
    time_t secs = (time_t)((start + 4) / 1000);
    struct tm tm;
    strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", gmtime_r(&secs, &tm));
    snprintf(at, sizeof at, "%s.%03lldZ", day, (start + 4) % 1000);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(nodes, 4), "started_at")), at);
    free(text);
    json_decref(ex);
    gg_history_stop(h);
    gg_store_close(s);
}
END_TEST

/* A call refused by its tool's inputSchema is a run of its own status (migration 0013),
 * listed by that status; durations are stored and read to the microsecond. */
START_TEST(history_invalid_input_and_durations) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    gg_history *h = gg_history_start(s, NULL, &err);
    ck_assert_msg(h != NULL, "%s", err.message);
    ck_assert_int_eq(gg_exec_status_parse("invalid_input"), GG_EXEC_INVALID_INPUT);
    ck_assert_str_eq(gg_exec_status_name(GG_EXEC_INVALID_INPUT), "invalid_input");
    json_t *args = json_pack("{s:s}", "n", "five");
    gg_exec_record *r = gg_exec_record_new("acme", "g", 1, "quick", "k1", args);
    json_decref(args);
    r->status = GG_EXEC_INVALID_INPUT;
    r->finished_ms = r->started_ms;
    r->error = strdup("Invalid arguments for tool quick: /n: expected number");
    char refused[33];
    memcpy(refused, r->id, sizeof refused);
    ck_assert(gg_history_submit(h, r));
    gg_exec_record *ok = make_run("acme", "g", "quick", GG_EXEC_SUCCEEDED);
    ok->duration_ms = 0.48612600000342354;
    ok->nodes[1].duration_ms = 48.600000000000001 + 1e-9;
    char ok_id[33];
    memcpy(ok_id, ok->id, sizeof ok_id);
    ck_assert(gg_history_submit(h, ok));
    gg_history_flush(h);
    json_t *l = gg_store_executions_list(s, "acme", &(gg_exec_filter){.status = "invalid_input"}, &err);
    ck_assert_msg(l != NULL, "%s", err.message);
    ck_assert_int_eq(json_array_size(json_object_get(l, "executions")), 1);
    json_t *e = json_array_get(json_object_get(l, "executions"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(e, "id")), refused);
    ck_assert_str_eq(json_string_value(json_object_get(e, "status")), "invalid_input");
    json_decref(l);
    json_t *x = gg_store_execution_get(s, "acme", refused, &err);
    ck_assert_ptr_nonnull(x);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(x, "arguments"), "n")), "five");
    ck_assert(strstr(json_string_value(json_object_get(x, "error")), "/n: expected number") != NULL);
    ck_assert_int_eq(json_array_size(json_object_get(x, "nodes")), 0);
    json_decref(x);
    x = gg_store_execution_get(s, "acme", ok_id, &err);
    ck_assert_ptr_nonnull(x);
    ck_assert(json_real_value(json_object_get(x, "duration_ms")) == 0.486);
    ck_assert(json_real_value(json_object_get(json_array_get(json_object_get(x, "nodes"), 1), "duration_ms")) == 48.6);
    json_decref(x);
    gg_history_stop(h);
    gg_store_close(s);
}
END_TEST

/* Payload bounds on node values, every JSON type through the encoder, invalid UTF-8. */
START_TEST(history_node_values_encoded) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    gg_history_options o = {.max_payload_bytes = 200};
    gg_history *h = gg_history_start(s, &o, &err);
    json_t *big = json_array();
    for (int i = 0; i < 100; i++) json_array_append_new(big, json_integer(i));
    json_t *mixed = json_pack("{s:[b,b,n,f,f,I,s],s:{},s:[],s:s#}", "a", 1, 0, 2.5, -0.0, (json_int_t)-9007199254740993LL,
                              "tab\tnl\n\"q\" \\ é €", "o", "e", "z", "a\0b", (size_t)3);
    ck_assert_ptr_nonnull(mixed);
    json_t *hist = json_pack("[{s:i,s:s,s:s,s:I,s:I,s:f,s:O},{s:i,s:s,s:s,s:I,s:I,s:f,s:O}]",
                             "executionIndex", 0, "nodeId", "big", "nodeType", "transform", "startTime", (json_int_t)5,
                             "endTime", (json_int_t)6, "duration", 1.0, "output", big,
                             "executionIndex", 1, "nodeId", "mixed", "nodeType", "transform", "startTime",
                             (json_int_t)6, "endTime", (json_int_t)6, "duration", 0.0, "output", mixed);
    gg_exec_record *r = gg_exec_record_new("acme", "g", 1, "t", NULL, NULL);
    r->status = GG_EXEC_SUCCEEDED;
    gg_exec_record_set_node_history(r, hist, false);
    ck_assert_ptr_nonnull(gg_exec_record_add_node(r, "bad\xff\xc3(utf8", "transform", 7, 8, NULL, json_string("x"),
                                                  "err \xe2\x82"));
    char id[33];
    memcpy(id, r->id, sizeof id);
    ck_assert(gg_history_submit(h, r));
    gg_history_flush(h);
    json_t *ex = gg_store_execution_get(s, "acme", id, &err);
    ck_assert_msg(ex != NULL, "%s", err.message);
    json_t *nodes = json_object_get(ex, "nodes");
    ck_assert_int_eq(json_array_size(nodes), 3);
    json_t *out0 = json_object_get(json_array_get(nodes, 0), "output");
    ck_assert(json_is_true(json_object_get(out0, "truncated")));
    char *bigtext = json_dumps(big, JSON_COMPACT);
    ck_assert_int_eq(json_integer_value(json_object_get(out0, "bytes")), (json_int_t)strlen(bigtext));
    free(bigtext);
    json_t *out1 = json_object_get(json_array_get(nodes, 1), "output");
    char *a = json_dumps(out1, JSON_COMPACT), *b = json_dumps(mixed, JSON_COMPACT);
    ck_assert_msg(json_equal(out1, mixed), "\n%s\n%s", a, b);
    free(a);
    free(b);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(nodes, 2), "node_id")), "bad\xef\xbf\xbd\xef\xbf\xbd(utf8");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(nodes, 2), "error")), "err \xef\xbf\xbd\xef\xbf\xbd");
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(nodes, 2), "index")), 0);
    json_decref(ex);
    json_decref(big);
    json_decref(mixed);
    gg_history_stop(h);
    gg_store_close(s);
}
END_TEST

/* Retention by age covers every tenant (it walks the tenant index tenant by tenant). */
START_TEST(history_retention_every_tenant) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    const char *tenants[] = {"a", "b", "c"};
    for (int t = 0; t < 3; t++) ck_assert(gg_store_tenant_create(s, tenants[t], &err));
    gg_history *h = gg_history_start(s, NULL, &err);
    long long now = gg_wall_ms();
    for (int i = 0; i < 30; i++) {
        gg_exec_record *r = make_run(tenants[i % 3], "g", "t", GG_EXEC_SUCCEEDED);
        r->started_ms = i < 12 ? now - 48LL * 3600 * 1000 : now;
        ck_assert(gg_history_submit(h, r));
    }
    gg_history_stop(h);
    ck_assert_int_eq(gg_store_executions_prune(s, 24LL * 3600 * 1000, 0, &err), 12);
    for (int t = 0; t < 3; t++) {
        json_t *page = gg_store_executions_list(s, tenants[t], NULL, &err);
        ck_assert_int_eq(json_array_size(json_object_get(page, "executions")), 6);
        json_decref(page);
    }
    ck_assert_int_eq(gg_store_executions_prune(s, 0, 5, &err), 13);
    ck_assert_int_eq(count_rows("SELECT count(*) FROM executions"), 5);
    gg_store_close(s);
}
END_TEST

/* ---- audit and concurrent processes ------------------------------------------------------- */

START_TEST(audit_log) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    json_t *d = json_pack("{s:i}", "version", 2);
    ck_assert(gg_store_audit_append(s, "k1", "acme", "graph.put", "orders", d, &err));
    json_decref(d);
    ck_assert(gg_store_audit_append(s, "cli", "globex", "tenant.create", "globex", NULL, &err));
    ck_assert(gg_store_audit_append(s, "cli", NULL, "tenant.list", NULL, NULL, &err));
    json_t *all = gg_store_audit_list(s, NULL, 0, 0, &err);
    ck_assert_int_eq(json_array_size(all), 3);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(all, 0), "action")), "tenant.list");
    json_decref(all);
    json_t *acme = gg_store_audit_list(s, "acme", 0, 10, &err);
    ck_assert_int_eq(json_array_size(acme), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(json_array_get(acme, 0), "details"), "version")), 2);
    json_decref(acme);
    gg_store_close(s);
}
END_TEST

START_TEST(two_processes_share_the_database) {
    /* serve (a store + writer) and the CLI (another store) on one file at once. */
    gg_store *serve = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(serve, "acme", &err));
    gg_history_options o = {.flush_ms = 1};
    gg_history *h = gg_history_start(serve, &o, &err);
    gg_store *cli = open_migrated();
    for (int i = 0; i < 50; i++) {
        ck_assert(gg_history_submit(h, make_run("acme", "g", "t", GG_EXEC_SUCCEEDED)));
        char name[32];
        snprintf(name, sizeof name, "t%d", i);
        ck_assert_msg(gg_store_tenant_create(cli, name, &err), "%s", err.message);
    }
    gg_history_flush(h);
    json_t *t = gg_store_tenants_list(serve, &err);
    ck_assert_int_eq(json_array_size(t), 51);
    json_decref(t);
    json_t *page = gg_store_executions_list(cli, "acme", &(gg_exec_filter){.limit = 100}, &err);
    ck_assert_int_eq(json_array_size(json_object_get(page, "executions")), 50);
    json_decref(page);
    gg_history_stop(h);
    gg_store_close(cli);
    gg_store_close(serve);
}
END_TEST

/* Request threads share the pool: many threads, fewer connections, mixed reads and writes. */
static gg_store *shared_store;

static void *pool_worker(void *arg) {
    long n = (long)arg;
    gg_error err = GG_ERROR_INIT;
    for (int i = 0; i < 200; i++) {
        gg_graph_source g;
        if (!gg_store_tenant_exists(shared_store, "acme", &err)) return (void *)1;
        if (!gg_store_graph_get_active(shared_store, "acme", "g", &g, &err)) return (void *)2;
        gg_store_graph_source_clear(&g);
        if (i % 50 == 0) {
            char name[32];
            snprintf(name, sizeof name, "t%ld-%d", n, i);
            if (!gg_store_tenant_create(shared_store, name, &err)) return (void *)3;
        }
    }
    return NULL;
}

START_TEST(pool_shared_by_threads) {
    shared_store = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(shared_store, "acme", &err));
    int v;
    ck_assert(gg_store_graph_put(shared_store, "acme", "g", "a: 1", 4, "yaml", NULL, &v, &err));
    pthread_t th[8];
    for (long i = 0; i < 8; i++) pthread_create(&th[i], NULL, pool_worker, (void *)i);
    for (int i = 0; i < 8; i++) {
        void *rc;
        pthread_join(th[i], &rc);
        ck_assert_ptr_null(rc);
    }
    json_t *t = gg_store_tenants_list(shared_store, &err);
    ck_assert_int_eq(json_array_size(t), 1 + 8 * 4);
    json_decref(t);
    gg_store_close(shared_store);
}
END_TEST

/* Several threads submit at once (the gateway's workers): every record is written once,
 * with its nodes, whether its queue item came from the pool or from malloc (small and
 * oversized records mixed), and the writer keeps up with a short flush window. */
static gg_history *shared_history;

static void *history_worker(void *arg) {
    long t = (long)arg;
    json_t *hist = sample_history(gg_wall_ms());
    char big[5000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    for (int i = 0; i < 2000; i++) {
        gg_exec_record *r = i % 2 ? gg_exec_record_new("acme", "g", 1, "t", NULL, NULL)
                                  : gg_history_record_new(shared_history, "acme", "g", 1, "u", NULL, NULL);
        if (!r) return (void *)1;
        r->status = GG_EXEC_SUCCEEDED;
        r->finished_ms = r->started_ms;
        if (i % 97 == (int)t) r->result = json_string(big); /* past the pooled item size */
        gg_exec_record_set_node_history(r, json_incref(hist), false);
        if (!gg_history_submit(shared_history, r)) return (void *)2;
    }
    json_decref(hist);
    return NULL;
}

START_TEST(history_concurrent_submitters) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    gg_history_options o = {.flush_ms = 1};
    shared_history = gg_history_start(s, &o, &err);
    ck_assert_ptr_nonnull(shared_history);
    pthread_t th[4];
    for (long i = 0; i < 4; i++) pthread_create(&th[i], NULL, history_worker, (void *)i);
    for (int i = 0; i < 4; i++) {
        void *rc;
        pthread_join(th[i], &rc);
        ck_assert_ptr_null(rc);
    }
    gg_history_flush(shared_history);
    gg_history_stats st;
    gg_history_get_stats(shared_history, &st);
    ck_assert_int_eq(st.submitted, 8000);
    ck_assert_int_eq(st.written, 8000);
    ck_assert_int_eq(st.dropped, 0);
    ck_assert(st.writer_cpu_ns > 0);
    gg_history_stop(shared_history);
    ck_assert_int_eq(count_rows("SELECT count(*) FROM executions"), 8000);
    ck_assert_int_eq(count_rows("SELECT count(DISTINCT id) FROM executions"), 8000);
    ck_assert_int_eq(count_rows("SELECT sum(json_array_length(nodes)) FROM executions"), 8000 * 3);
    ck_assert_int_eq(count_rows("SELECT count(*) FROM executions WHERE length(result) > 4900"), 4 * 21);
    gg_store_close(s);
}
END_TEST

/* PostgreSQL: replicas share executions; one starting marks only its own runs interrupted. */
START_TEST(history_interrupted_per_replica) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    gg_history_options oa = {.replica_id = "replica-a"}, ob = {.replica_id = "replica-b"};
    gg_history *a = gg_history_start(s, &oa, &err), *b = gg_history_start(s, &ob, &err);
    ck_assert(a && b);
    gg_exec_record *ra = make_run("acme", "g", "t", GG_EXEC_RUNNING), *rb = make_run("acme", "g", "t", GG_EXEC_RUNNING);
    char ida[33], idb[33];
    memcpy(ida, ra->id, sizeof ida);
    memcpy(idb, rb->id, sizeof idb);
    ck_assert(gg_history_submit(a, ra));
    ck_assert(gg_history_submit(b, rb));
    gg_history_flush(a);
    gg_history_flush(b);
    gg_history_stop(a); /* replica a "crashes" and comes back; b keeps running its run */
    oa.mark_interrupted = true;
    a = gg_history_start(s, &oa, &err);
    ck_assert_ptr_nonnull(a);
    json_t *ex = gg_store_execution_get(s, "acme", ida, &err);
    ck_assert_str_eq(json_string_value(json_object_get(ex, "status")), "interrupted");
    json_decref(ex);
    ex = gg_store_execution_get(s, "acme", idb, &err);
    ck_assert_str_eq(json_string_value(json_object_get(ex, "status")), "running");
    json_decref(ex);
    ck_assert_int_eq(count_rows("SELECT count(*) FROM executions WHERE replica = 'replica-b'"), 1);
    gg_history_stop(a);
    gg_history_stop(b);
    gg_store_close(s);
}
END_TEST

int main(void) {
    Suite *s = suite_create("store");
    TCase *tc = tcase_create("store");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, migrations_applied_once);
    tcase_add_test(tc, migration_checksum_mismatch);
    tcase_add_test(tc, migration_future_and_missing);
    tcase_add_test(tc, migration_pending_and_failing);
    tcase_add_test(tc, tenants_and_keys_crud_isolated);
    tcase_add_test(tc, graph_versions_and_activation);
    tcase_add_test(tc, graphs_foreach_active);
    tcase_add_test(tc, history_writer_batches_and_persists);
    tcase_add_test(tc, history_interrupted_marking);
    tcase_add_test(tc, history_retention);
    tcase_add_test(tc, history_queue_bound_and_truncation);
    /* SQLite-only: a second SQLite handle holds the write lock, or the database is taken
     * back to migration 0002 (PostgreSQL's own lock and restart cases are in
     * tests/gateway/postgres.sh). */
    if (!pg_mode()) tcase_add_test(tc, history_commit_callbacks_and_retry);
    tcase_add_test(tc, history_submit_then_refused);
    tcase_add_test(tc, history_big_batches_many_nodes_and_cascade);
    if (!pg_mode()) tcase_add_test(tc, migration_0003_keeps_node_rows);
    if (pg_mode()) tcase_add_test(tc, history_interrupted_per_replica); /* replica ids: PostgreSQL only */
    tcase_add_test(tc, history_node_paths_agree);
    tcase_add_test(tc, history_context_ref);
    tcase_add_test(tc, exec_id_start);
    tcase_add_test(tc, tasks_tenant_bound_and_interrupted);
    tcase_add_test(tc, history_node_values_encoded);
    tcase_add_test(tc, history_retention_every_tenant);
    tcase_add_test(tc, history_concurrent_submitters);
    tcase_add_test(tc, audit_log);
    tcase_add_test(tc, history_invalid_input_and_durations);
    tcase_add_test(tc, views_bump_their_generation);
    tcase_add_test(tc, lazy_pool_connects_on_demand);
    tcase_add_test(tc, two_processes_share_the_database);
    tcase_add_test(tc, pool_shared_by_threads);
    tcase_add_test(tc, pins_and_their_changes);
    tcase_add_test(tc, history_read_versions);
    tcase_add_test(tc, history_read_paging);
    suite_add_tcase(s, tc);
    return gg_check_run(s);
}
