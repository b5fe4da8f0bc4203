/* Unit tests for the error value and the string buffer. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

START_TEST(error_set_format_clear) {
    gg_error e = GG_ERROR_INIT;
    ck_assert(!gg_error_is_set(&e));
    gg_error_set(&e, "invalid_config", "unknown key '%s'", "lisen");
    gg_error_set_path(&e, "graphgate.yaml");
    gg_error_set_pos(&e, 3, 5);
    ck_assert(gg_error_is_set(&e));
    char buf[256];
    gg_error_format(&e, buf, sizeof buf);
    ck_assert_str_eq(buf, "graphgate.yaml:3:5: invalid_config: unknown key 'lisen'");
    gg_error_clear(&e);
    ck_assert(!gg_error_is_set(&e));
    ck_assert_ptr_null(e.message);
}
END_TEST

START_TEST(error_move_leaves_source_clear) {
    gg_error a = GG_ERROR_INIT, b = GG_ERROR_INIT;
    gg_error_set(&a, "T2001", "left side of + must be a number");
    a.position = 7;
    gg_error_move(&b, &a);
    ck_assert(!gg_error_is_set(&a));
    ck_assert_str_eq(b.code, "T2001");
    ck_assert_int_eq(b.position, 7);
    char buf[128];
    gg_error_format(&b, buf, sizeof buf);
    ck_assert_str_eq(buf, "T2001: left side of + must be a number (position 7)");
    gg_error_clear(&b);
}
END_TEST

START_TEST(strbuf_integers_and_hex4) {
    gg_strbuf b = GG_STRBUF_INIT;
    const long long vals[] = {0, 7, -7, 10, 1234567890123LL, -9223372036854775807LL - 1, 9223372036854775807LL};
    const char *want = "0,7,-7,10,1234567890123,-9223372036854775808,9223372036854775807";
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        if (i) gg_strbuf_putc(&b, ',');
        ck_assert(gg_strbuf_put_int(&b, vals[i]));
    }
    ck_assert_str_eq(b.data, want);
    gg_strbuf_free(&b);
    ck_assert_int_eq(gg_hex4("00e9"), 0xe9);
    ck_assert_int_eq(gg_hex4("FFfF"), 0xffff);
    ck_assert_int_eq(gg_hex4("D83D"), 0xd83d);
    ck_assert_int_eq(gg_hex4("12g4"), -1);
    ck_assert_int_eq(gg_hex4("-123"), -1);
}
END_TEST

START_TEST(strbuf_grows_and_takes) {
    gg_strbuf b = GG_STRBUF_INIT;
    for (int i = 0; i < 1000; i++) ck_assert(gg_strbuf_printf(&b, "%d,", i));
    ck_assert(b.len > 2000);
    ck_assert(strncmp(b.data, "0,1,2,", 6) == 0);
    char *s = gg_strbuf_take(&b);
    ck_assert_ptr_nonnull(s);
    ck_assert_ptr_null(b.data);
    free(s);
    char *empty = gg_strbuf_take(&b);
    ck_assert_str_eq(empty, "");
    free(empty);
}
END_TEST

int main(void) {
    Suite *s = suite_create("util");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, error_set_format_clear);
    tcase_add_test(tc, error_move_leaves_source_clear);
    tcase_add_test(tc, strbuf_grows_and_takes);
    tcase_add_test(tc, strbuf_integers_and_hex4);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
