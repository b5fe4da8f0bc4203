/* test_journal.c — the history's redo log (src/store/journal.c): a durable record is
 * acknowledged once appended, survives the death of the process before its commit, is
 * written at the next start, and the log stays small (SQLite only: PostgreSQL durable
 * answers wait for the commit in the shared database). */
#include <check.h>
#include <dirent.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"
#include "../check_main.h"

static char jdir[340];

static void jsetup(void) {
    setup();
    snprintf(jdir, sizeof jdir, "%s-history", dbpath);
}

static gg_exec_record *run(const char *tenant, int i) {
    json_t *args = json_pack("{s:i}", "i", i);
    gg_exec_record *r = gg_exec_record_new(tenant, "orders", 1, "lookup", NULL, args); /* takes a reference */
    json_decref(args);
    ck_assert_ptr_nonnull(r);
    r->status = GG_EXEC_SUCCEEDED;
    r->finished_ms = r->started_ms + 2;
    r->duration_ms = 2.0;
    r->result = json_pack("{s:i}", "twice", 2 * i);
    gg_exec_record_set_nodes_json(r, strdup("[[\"entry\",\"entry\",0,1]]"));
    return r;
}

/* Segment files in the journal; *empty: none holds an entry (each is allocated in full:
 * after its 8-byte magic, a zero length is the end of what was appended). */
static int segments(bool *empty) {
    DIR *d = opendir(jdir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    *empty = true;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (!strstr(e->d_name, ".hj")) continue;
        char p[700];
        snprintf(p, sizeof p, "%s/%s", jdir, e->d_name);
        FILE *f = fopen(p, "rb");
        ck_assert_ptr_nonnull(f);
        unsigned char head[12];
        ck_assert_int_eq(fread(head, 1, sizeof head, f), sizeof head);
        fclose(f);
        unsigned len;
        memcpy(&len, head + 8, 4);
        if (len) *empty = false;
        n++;
    }
    closedir(d);
    return n;
}

/* Leave half an entry after the last whole one of segment 0 (as a crash in the middle of
 * an append would). */
static bool tear_segment(void) {
    char p[700];
    snprintf(p, sizeof p, "%s/%010u.hj", jdir, 0u);
    FILE *f = fopen(p, "r+b");
    if (!f) return false;
    long off = 8;
    unsigned hdr[2];
    while (fseek(f, off, SEEK_SET) == 0 && fread(hdr, sizeof hdr, 1, f) == 1 && hdr[0]) off += 8 + (long)hdr[0];
    unsigned torn[2] = {400, 12345};
    bool ok = fseek(f, off, SEEK_SET) == 0 && fwrite(torn, sizeof torn, 1, f) == 1 && fwrite("torn", 4, 1, f) == 1;
    return fclose(f) == 0 && ok;
}

static gg_history *start_opt(gg_store *s, bool mark_interrupted) {
    gg_error err = GG_ERROR_INIT;
    gg_history_options o = {.flush_ms = 5, .journal_dir = jdir, .mark_interrupted = mark_interrupted};
    gg_history *h = gg_history_start(s, &o, &err);
    ck_assert_msg(h != NULL, "%s", err.message);
    return h;
}

static gg_history *start(gg_store *s) { return start_opt(s, true); }

static void on_done(void *user, bool ok) { *(int *)user = ok ? 1 : 0; }

/* In a child process: journal n runs (ids into ids[]) while another connection holds the
 * database's write lock, so none can be committed, then die without stopping anything
 * (as under kill -9); garbage = also leave half an entry at the end of the segment. */
static void child_journals_and_dies(int n, char (*ids)[33], bool garbage) {
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        sqlite3 *blocker;
        if (sqlite3_open(dbpath, &blocker) != SQLITE_OK || sqlite3_exec(blocker, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
            _exit(2);
        gg_store *s = open_store();
        gg_history *h = start_opt(s, false); /* marking would wait for the lock */
        if (!gg_history_journaling(h)) _exit(3);
        for (int i = 0; i < n; i++) {
            gg_exec_record *r = run("acme", i);
            if (write(fds[1], r->id, 33) != 33) _exit(4);
            if (i % 2) {
                int state = -1;
                if (!gg_history_submit_then(h, r, on_done, &state) || state != 1) _exit(5); /* answered before return */
            } else if (!gg_history_submit_journaled(h, r)) {
                _exit(6);
            }
        }
        if (garbage && !tear_segment()) _exit(7);
        _exit(0);
    }
    close(fds[1]);
    for (int i = 0; i < n; i++) ck_assert_int_eq(read(fds[0], ids[i], 33), 33);
    close(fds[0]);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
}

static void assert_written(gg_store *s, int n, char (*ids)[33]) {
    gg_error err = GG_ERROR_INIT;
    for (int i = 0; i < n; i++) {
        json_t *e = gg_store_execution_get(s, "acme", ids[i], &err);
        ck_assert_msg(e != NULL, "run %d (%s) lost: %s", i, ids[i], err.message);
        ck_assert_str_eq(json_string_value(json_object_get(e, "status")), "succeeded");
        ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(e, "result"), "twice")), 2 * i);
        json_decref(e);
    }
}

START_TEST(answered_runs_survive_a_crash_before_their_commit) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    gg_store_close(s);
    char ids[40][33];
    child_journals_and_dies(40, ids, false);
    s = open_store();
    json_t *none = gg_store_execution_get(s, "acme", ids[0], &err);
    ck_assert_msg(none == NULL, "the child's writer could not have committed");
    gg_error_clear(&err);
    gg_history *h = start(s); /* replays the journal before it returns */
    assert_written(s, 40, ids);
    bool empty;
    ck_assert_int_eq(segments(&empty), 1); /* the replayed one is gone, a fresh one is empty */
    ck_assert(empty);
    gg_history_stop(h);
    /* a second start finds nothing to replay and changes nothing */
    h = start(s);
    assert_written(s, 40, ids);
    gg_history_stop(h);
    gg_store_close(s);
}
END_TEST

START_TEST(a_start_without_the_journal_still_replays_it) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    gg_store_close(s);
    char ids[10][33];
    child_journals_and_dies(10, ids, false);
    s = open_store();
    gg_history_options o = {.flush_ms = 5, .journal_dir = jdir, .journal_replay_only = true};
    gg_history *h = gg_history_start(s, &o, &err); /* e.g. history.journal turned off */
    ck_assert_msg(h != NULL, "%s", err.message);
    ck_assert(!gg_history_journaling(h));
    assert_written(s, 10, ids);
    bool empty;
    ck_assert_int_eq(segments(&empty), 0);
    gg_history_stop(h);
    gg_store_close(s);
}
END_TEST

START_TEST(a_torn_last_entry_is_skipped) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    gg_store_close(s);
    char ids[5][33];
    child_journals_and_dies(5, ids, true);
    s = open_store();
    gg_history *h = start(s);
    assert_written(s, 5, ids);
    gg_history_stop(h);
    gg_store_close(s);
}
END_TEST

/* Rewrite segment 0 in the previous format (magic GGHJ0002, bytewise FNV-1a checksums), as
 * a process of the version before left it. */
static bool segment_to_v2(void) {
    char p[700];
    snprintf(p, sizeof p, "%s/%010u.hj", jdir, 0u);
    FILE *f = fopen(p, "r+b");
    if (!f) return false;
    bool ok = fwrite("GGHJ0002", 8, 1, f) == 1;
    long off = 8;
    unsigned hdr[2];
    unsigned char buf[65536];
    while (ok && fseek(f, off, SEEK_SET) == 0 && fread(hdr, sizeof hdr, 1, f) == 1 && hdr[0] && hdr[0] <= sizeof buf) {
        ok = fread(buf, 1, hdr[0], f) == hdr[0];
        unsigned h = 2166136261u;
        for (unsigned i = 0; i < hdr[0]; i++) h = (h ^ buf[i]) * 16777619u;
        hdr[1] = h;
        ok = ok && fseek(f, off, SEEK_SET) == 0 && fwrite(hdr, sizeof hdr, 1, f) == 1;
        off += 8 + (long)hdr[0];
    }
    return fclose(f) == 0 && ok && off > 8;
}

/* An upgrade keeps what the previous version acknowledged: its segments are replayed. */
START_TEST(a_segment_of_the_previous_format_is_replayed) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    gg_store_close(s);
    char ids[12][33];
    child_journals_and_dies(12, ids, false);
    ck_assert(segment_to_v2());
    s = open_store();
    gg_history *h = start(s);
    assert_written(s, 12, ids);
    gg_history_stop(h);
    gg_store_close(s);
}
END_TEST

START_TEST(the_log_is_cut_back_once_committed) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    gg_history *h = start(s);
    ck_assert(gg_history_journaling(h));
    char ids[200][33];
    for (int i = 0; i < 200; i++) {
        gg_exec_record *r = run("acme", i);
        memcpy(ids[i], r->id, 33);
        ck_assert(gg_history_submit_journaled(h, r));
    }
    ck_assert(gg_history_flush(h));
    assert_written(s, 200, ids);
    bool empty;
    ck_assert_int_eq(segments(&empty), 1);
    ck_assert_msg(empty, "the segment still holds entries after everything committed");
    gg_history_stats st;
    gg_history_get_stats(h, &st);
    ck_assert_msg(st.batches < 40, "journaled records are batched like async ones (%llu batches)", st.batches);
    gg_history_stop(h);
    ck_assert_int_eq(segments(&empty), 0); /* a clean stop leaves no segment */
    gg_store_close(s);
}
END_TEST

START_TEST(one_process_holds_the_log) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    gg_history *h1 = start(s);
    gg_history *h2 = start(s); /* the lock is taken: h2 waits for commits instead */
    ck_assert(gg_history_journaling(h1));
    ck_assert(!gg_history_journaling(h2));
    ck_assert(!gg_history_submit_journaled(h2, run("acme", 1))); /* refused: not durable yet */
    int state = -1;
    ck_assert(gg_history_submit_then(h2, run("acme", 2), on_done, &state));
    ck_assert(gg_history_flush(h2));
    ck_assert_int_eq(state, 1); /* answered by the writer, after the commit */
    gg_history_stats st;
    gg_history_get_stats(h2, &st);
    ck_assert_int_eq(st.written, 2); /* the refused one was still queued and written */
    gg_history_stop(h2);
    gg_history_stop(h1);
    gg_store_close(s);
}
END_TEST

/* With every queued row in the journal the writer waits journal_window_ms before it
 * commits (nothing answered can be lost meanwhile); a row that is neither journaled nor
 * waited for brings the window back to flush_ms, since a crash would lose it. */
START_TEST(the_journal_window_holds_only_journaled_rows) {
    gg_store *s = open_migrated();
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_store_tenant_create(s, "acme", &err));
    gg_history_options o = {.flush_ms = 1, .journal_window_ms = 60000, .journal_dir = jdir};
    gg_history *h = gg_history_start(s, &o, &err);
    ck_assert_msg(h != NULL, "%s", err.message);
    ck_assert(gg_history_journaling(h));
    char ids[3][33];
    gg_exec_record *r = run("acme", 0);
    memcpy(ids[0], r->id, 33);
    ck_assert(gg_history_submit_journaled(h, r));
    usleep(300 * 1000); /* three hundred flush windows: a commit there would be flush_ms's */
    gg_history_stats st;
    gg_history_get_stats(h, &st);
    ck_assert_msg(st.written == 0, "a journaled row was committed within the journal window");
    r = run("acme", 1);
    memcpy(ids[1], r->id, 33);
    ck_assert(gg_history_submit(h, r)); /* plain: the writer must not sit on it */
    for (int i = 0; i < 10000 && (gg_history_get_stats(h, &st), st.written < 2); i++) usleep(1000);
    ck_assert_msg(st.written == 2, "a plain row waited for the journal window (%llu written)", st.written);
    r = run("acme", 2); /* journaled again: the long window is back */
    memcpy(ids[2], r->id, 33);
    ck_assert(gg_history_submit_journaled(h, r));
    usleep(300 * 1000);
    gg_history_get_stats(h, &st);
    ck_assert_msg(st.written == 2, "the window stayed short after the plain row was written");
    ck_assert(gg_history_flush(h)); /* a flush does not wait for the window */
    assert_written(s, 3, ids);
    gg_history_stop(h);
    gg_store_close(s);
}
END_TEST

int main(void) {
    if (pg_mode()) {
        printf("SKIP: the history journal is SQLite's (PostgreSQL answers wait for the shared database)\n");
        return 77;
    }
    Suite *su = suite_create("journal");
    TCase *tc = tcase_create("journal");
    tcase_add_checked_fixture(tc, jsetup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, answered_runs_survive_a_crash_before_their_commit);
    tcase_add_test(tc, a_start_without_the_journal_still_replays_it);
    tcase_add_test(tc, a_torn_last_entry_is_skipped);
    tcase_add_test(tc, a_segment_of_the_previous_format_is_replayed);
    tcase_add_test(tc, the_log_is_cut_back_once_committed);
    tcase_add_test(tc, one_process_holds_the_log);
    tcase_add_test(tc, the_journal_window_holds_only_journaled_rows);
    suite_add_tcase(su, tc);
    return gg_check_run(su);
}
