/* db_fixture.h — a migrated SQLite database in a fresh temporary directory per test, for the
 * auth tests (included by each test file; every definition is static). */
#ifndef GG_TESTS_AUTH_DB_FIXTURE_H
#define GG_TESTS_AUTH_DB_FIXTURE_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "store/store.h"
#include "../store/pg_fixture.h"

static char tmpdir[64], dbpath[128];

/* Open (and migrate) the test database; the caller closes it. */
static gg_store *open_db(void) {
    gg_error err = GG_ERROR_INIT;
    gg_store_options o = {.path = dbpath, .url = pg_store_url()};
    gg_store *s = gg_store_open(&o, &err);
    ck_assert_msg(s != NULL, "%s", err.message);
    char mig[512];
    const char *src = getenv("GG_SRCDIR");
    snprintf(mig, sizeof mig, "%s/migrations", src ? src : "..");
    ck_assert_msg(gg_store_migrate(s, mig, NULL, &err), "%s", err.message);
    return s;
}

static void setup(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/gg-auth-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    snprintf(dbpath, sizeof dbpath, "%s/auth.db", tmpdir);
    pg_setup(tmpdir);
}

static void teardown(void) {
    pg_teardown();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

#endif
