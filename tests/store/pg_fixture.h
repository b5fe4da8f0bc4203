/* pg_fixture.h — the store tests' PostgreSQL mode (included by the fixtures, not a library).
 * With GG_TEST_PG set (tests/store/postgres.sh sets it inside a throwaway cluster started
 * by pg_virtualenv, whose PG* variables libpq reads), every test gets a database of its own,
 * created before and dropped after; without it the tests run on SQLite as always. */
#ifndef GG_TESTS_STORE_PG_FIXTURE_H
#define GG_TESTS_STORE_PG_FIXTURE_H

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "store/db.h"

static char pg_db[64], pg_url[128];

static bool pg_mode(void) { return getenv("GG_TEST_PG") && *getenv("GG_TEST_PG"); }

static void pg_psql(const char *sql) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "psql -X -q -v ON_ERROR_STOP=1 -d postgres -c '%s' >/dev/null", sql);
    ck_assert_msg(system(cmd) == 0, "psql failed: %s", sql);
}

/* A fresh database named after the test's temporary directory (unique per test). */
static void pg_setup(const char *tmpdir) {
    if (!pg_mode()) return;
    const char *base = strrchr(tmpdir, '/');
    snprintf(pg_db, sizeof pg_db, "gg_%.40s", base ? base + 1 : tmpdir);
    for (char *p = pg_db; *p; p++) *p = (*p >= 'A' && *p <= 'Z') ? (char)(*p + 32) : (*p == '-' || *p == '.' ? '_' : *p);
    char sql[128];
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", pg_db);
    pg_psql(sql);
    snprintf(pg_url, sizeof pg_url, "postgresql:///%s", pg_db);
}

static void pg_teardown(void) {
    if (!pg_mode() || !pg_db[0]) return;
    char sql[128];
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", pg_db);
    pg_psql(sql);
    pg_db[0] = '\0';
}

/* The test's own SQL (SQLite's dialect, as the store writes it) on the test database: the
 * first column of the first row as a number (query1), or run (exec, several statements). */
__attribute__((unused)) static long long pg_query1(const char *sql, const char *arg) {
    PGconn *c = PQconnectdb(pg_url);
    ck_assert_msg(PQstatus(c) == CONNECTION_OK, "%s", PQerrorMessage(c));
    int n = 0;
    char *t = gg_db_translate(sql, &n);
    /* the tests count node records with SQLite's json_array_length(TEXT) */
    if (strstr(t, "json_array_length(nodes)")) {
        char *r = malloc(strlen(t) + 64);
        char *at = strstr(t, "json_array_length(nodes)");
        sprintf(r, "%.*sjson_array_length(nodes::json)%s", (int)(at - t), t, at + strlen("json_array_length(nodes)"));
        free(t);
        t = r;
    }
    const char *params[1] = {arg};
    PGresult *r = PQexecParams(c, t, n, NULL, params, NULL, NULL, 0);
    ck_assert_msg(PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0, "%s: %s", t, PQerrorMessage(c));
    long long v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    free(t);
    PQfinish(c);
    return v;
}

__attribute__((unused)) static void pg_exec_sql(const char *sql) {
    PGconn *c = PQconnectdb(pg_url);
    ck_assert_msg(PQstatus(c) == CONNECTION_OK, "%s", PQerrorMessage(c));
    char *t = gg_db_translate(sql, NULL);
    PGresult *r = PQexec(c, t);
    ck_assert_msg(PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK, "%s: %s", t,
                  PQerrorMessage(c));
    PQclear(r);
    free(t);
    PQfinish(c);
}

/* The URL for gg_store_options.url: NULL on SQLite. */
static const char *pg_store_url(void) { return pg_mode() ? pg_url : NULL; }

#endif
