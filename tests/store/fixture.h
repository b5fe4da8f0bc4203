/* fixture.h — the fixture the store's check programs share (included by one .c file each,
 * not a library): a fresh temporary directory per test with a copy of migrations/ and a
 * database path in it, and the store opened on it (migrated or not). */
#ifndef GG_TESTS_STORE_FIXTURE_H
#define GG_TESTS_STORE_FIXTURE_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "store/store.h"
#include "pg_fixture.h"

static char tmpdir[256];
static char dbpath[300];
static char migdir[300];
static char migfiles[320]; /* where the backend's migration files are: migdir or migdir/postgres */

static void sh(const char *fmt, const char *a, const char *b) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, fmt, a, b);
    ck_assert_int_eq(system(cmd), 0);
}

static void setup(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/gg-store-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    snprintf(dbpath, sizeof dbpath, "%s/var/test.db", tmpdir);
    snprintf(migdir, sizeof migdir, "%s/migrations", tmpdir);
    const char *src = getenv("GG_SRCDIR");
    char from[512];
    snprintf(from, sizeof from, "%s/migrations", src ? src : "..");
    sh("cp -R '%s' '%s'", from, migdir);
    sh("chmod -R u+w '%s'%s", migdir, ""); /* distcheck's source tree is read-only */
    pg_setup(tmpdir);
    snprintf(migfiles, sizeof migfiles, "%s%s", migdir, pg_mode() ? "/postgres" : "");
}

static void teardown(void) {
    pg_teardown();
    sh("rm -rf '%s'%s", tmpdir, "");
}

static gg_store *open_store(void) {
    gg_error err = GG_ERROR_INIT;
    gg_store_options o = {.path = dbpath, .url = pg_store_url(), .pool_size = 3, .busy_timeout_ms = 5000};
    gg_store *s = gg_store_open(&o, &err);
    ck_assert_msg(s != NULL, "open: %s", err.message);
    return s;
}

static gg_store *open_migrated(void) {
    gg_store *s = open_store();
    gg_error err = GG_ERROR_INIT;
    ck_assert_msg(gg_store_migrate(s, migdir, NULL, &err), "migrate: %s", err.message);
    return s;
}

#endif
