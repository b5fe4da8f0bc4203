/* check_main.h — how every check suite in tests/ ends: run it, print "N passed, N failed"
 * (the line tests/summary.sh counts) and turn the result into the exit status.
 *
 * Ownership: gg_check_run takes the suite (the runner frees it). */
#ifndef GG_TESTS_CHECK_MAIN_H
#define GG_TESTS_CHECK_MAIN_H

#include <check.h>
#include <stdio.h>

/* 0 when every test passed, else 1. skipped: checks left out (data missing), counted in
 * the line as ", N skipped". */
static inline int gg_check_run_skipped(Suite *s, int skipped) {
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr), run = srunner_ntests_run(sr);
    srunner_free(sr);
    if (skipped) printf("%d passed, %d failed, %d skipped\n", run - failed, failed, skipped);
    else printf("%d passed, %d failed\n", run - failed, failed);
    fflush(stdout);
    return failed ? 1 : 0;
}
static inline int gg_check_run(Suite *s) { return gg_check_run_skipped(s, 0); }

#endif
