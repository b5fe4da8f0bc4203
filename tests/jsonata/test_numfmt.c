/* Unit tests for the JSONata function library's pure helpers (number, integer and
 * date/time pictures, URL/base64, JavaScript number printing, JSON.stringify dump) and a
 * few end-to-end function checks (regex limits, matcher errors). Expected values were
 * taken from jsonata@2.2.2 / node. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jsonata/core.h"
#include "jsonata/fnlib.h"
#include "jsonata/jsonata.h"
#include "../check_main.h"

static void expect_double(double d, const char *want) {
    char buf[64];
    jsonata_format_double(d, buf, sizeof buf);
    ck_assert_str_eq(buf, want);
}

START_TEST(format_double_matches_javascript) {
    expect_double(0, "0");
    expect_double(-0.0, "0");
    expect_double(1e21, "1e+21");
    expect_double(1e20, "100000000000000000000");
    expect_double(1.5e-7, "1.5e-7");
    expect_double(0.000001, "0.000001");
    expect_double(0.1 + 0.2, "0.30000000000000004");
    expect_double(123.456, "123.456");
    expect_double(-1.5, "-1.5");
    expect_double(5e-324, "5e-324");
    expect_double(1.7976931348623157e308, "1.7976931348623157e+308");
    expect_double(9007199254740993.0, "9007199254740992");
    expect_double(NAN, "NaN");
    expect_double(-INFINITY, "-Infinity");
}
END_TEST

START_TEST(dump_is_json_stringify) {
    json_t *v = json_pack("{s:[i,f,s,n,b],s:{}}", "a", 1, 2.5, "q\"\n\x01", 1, "b");
    char *s = jsonata_dump(v, 0);
    ck_assert_str_eq(s, "{\"a\":[1,2.5,\"q\\\"\\n\\u0001\",null,true],\"b\":{}}");
    free(s);
    s = jsonata_dump(v, 2);
    ck_assert_str_eq(s, "{\n  \"a\": [\n    1,\n    2.5,\n    \"q\\\"\\n\\u0001\",\n    null,\n    true\n  ],\n  \"b\": {}\n}");
    free(s);
    json_decref(v);
    v = json_real(3.0);
    s = jsonata_dump(v, 0);
    ck_assert_str_eq(s, "3");
    free(s);
    json_decref(v);
}
END_TEST

static void expect_fn(double v, const char *pic, const char *want) {
    gg_strbuf b = GG_STRBUF_INIT;
    gg_error e = GG_ERROR_INIT;
    bool ok = jn_format_number(v, pic, NULL, &b, &e);
    if (want[0] == 'D' && want[1] >= '0' && want[1] <= '9') {
        ck_assert_msg(!ok, "%s should fail", pic);
        ck_assert_str_eq(e.code, want);
    } else {
        ck_assert_msg(ok, "%s failed: %s", pic, e.code);
        ck_assert_str_eq(b.data ? b.data : "", want);
    }
    gg_strbuf_free(&b);
    gg_error_clear(&e);
}

START_TEST(format_number_pictures) {
    expect_fn(12345.6, "#,###.00", "12,345.60");
    expect_fn(123412345678.9, "9,9,99.99", "123412345,6,78.90");
    expect_fn(0.14, "01%", "14%");
    expect_fn(1234.5678, "00.000e0", "12.346e2");
    expect_fn(0.234, "#.00e0", "0.23e0");
    expect_fn(-6, "000", "-006");
    expect_fn(-12, "#0;(#0)", "(12)");
    expect_fn(0.125, "0.00", "0.12");
    expect_fn(0.35, "#.#", ".4");
    expect_fn(1e-7, "0.000000000", "0.000000100");
    expect_fn(0, "#.#", ".0");
    expect_fn(20, "#;#;#", "D3080");
    expect_fn(20, "#.0.0", "D3081");
    expect_fn(20, "#0%%", "D3082");
    expect_fn(20, ".e0", "D3085");
    expect_fn(42, "---", "D3086");
    expect_fn(20, "0,", "D3088");
    expect_fn(20, "0#.e0", "D3090");
    expect_fn(20, "#0.0e0,0", "D3093");
    jn_decimal_format f = {0};
    f.zero_digit = "A";
    gg_strbuf b = GG_STRBUF_INIT;
    gg_error e = GG_ERROR_INIT;
    ck_assert(jn_format_number(0.1, "AeAAA", &f, &b, &e));
    ck_assert_str_eq(b.data, "Be-AAB");
    gg_strbuf_free(&b);
}
END_TEST

static void expect_fi(double v, const char *pic, const char *want) {
    gg_strbuf b = GG_STRBUF_INIT;
    gg_error e = GG_ERROR_INIT;
    bool ok = jn_format_integer(v, pic, &b, &e);
    if (!strncmp(want, "D31", 3)) ck_assert_str_eq(e.code, want);
    else {
        ck_assert_msg(ok, "%s failed", pic);
        ck_assert_str_eq(b.data ? b.data : "", want);
    }
    gg_strbuf_free(&b);
    gg_error_clear(&e);
}

static void expect_pi(const char *s, const char *pic, double want) {
    double v = -1;
    bool found = false;
    gg_error e = GG_ERROR_INIT;
    ck_assert(jn_parse_integer(s, pic, &v, &found, &e));
    ck_assert_msg(found && v == want, "%s/%s gave %g", s, pic, v);
}

START_TEST(integer_pictures_round_trip) {
    expect_fi(-3, "0000", "-0003");
    expect_fi(123, "000;o", "123rd");
    expect_fi(112, "0;o", "112th");
    expect_fi(12340, "###\xd9\xa1", "\xd9\xa1\xd9\xa2\xd9\xa3\xd9\xa4\xd9\xa0");
    expect_fi(1234567890, "#:###,##0", "1234:567,890");
    expect_fi(1984, "I", "MCMLXXXIV");
    expect_fi(555, "Ww", "Five Hundred and Fifty-Five");
    expect_fi(1e46, "w", "ten billion trillion trillion trillion");
    expect_fi(1000000000001, "w;o", "one trillion and first");
    expect_fi(123456, "A", "FZPH");
    expect_fi(12, "#", "D3130");
    expect_fi(12340, "##0\xef\xbc\x90", "D3131");
    expect_pi("four million, three hundred and twenty-seven thousand, seven hundred and thirty-second", "w;o", 4327732);
    expect_pi("MCMLXXXIV", "I", 1984);
    expect_pi("12345,67,890", "##,##,##0", 1234567890);
    expect_pi("FZPH", "A", 123456);
    expect_pi("28th", "#0;o", 28);
}
END_TEST

static void expect_dt(double ms, const char *pic, const char *tz, const char *want) {
    gg_strbuf b = GG_STRBUF_INIT;
    gg_error e = GG_ERROR_INIT;
    bool ok = jn_format_datetime(ms, pic, tz, &b, &e);
    if (!strncmp(want, "D31", 3)) ck_assert_str_eq(e.code, want);
    else {
        ck_assert_msg(ok, "%s failed: %s", pic ? pic : "(iso)", e.code);
        ck_assert_str_eq(b.data ? b.data : "", want);
    }
    gg_strbuf_free(&b);
    gg_error_clear(&e);
}

static void expect_tm(const char *s, const char *pic, double want) {
    double v = 0;
    bool found = false;
    gg_error e = GG_ERROR_INIT;
    ck_assert_msg(jn_parse_datetime(s, pic, &v, &found, 0, &e), "%s: %s", s, e.code);
    ck_assert_msg(found && v == want, "%s gave %.0f", s, v);
}

START_TEST(datetime_pictures) {
    expect_dt(1509380732935, NULL, NULL, "2017-10-30T16:25:32.935Z");
    expect_dt(-1, NULL, NULL, "1969-12-31T23:59:59.999Z");
    expect_dt(1521801216617, "[FNn], the [Dwo] of [MNn] [Y] [E]", NULL, "Friday, the twenty-third of March 2018 ISO");
    expect_dt(1521801216617, "[D#1,2]/[M1,2]/[Y0001,2-2]", NULL, "23/03/18");
    expect_dt(1531310400000, "[Y]-[M01]-[D01]T[H01]:[m]:[s][Z0]", "+0530", "2018-07-11T17:30:00+5:30");
    expect_dt(1521801216617, "[Z01:01]", "-0930", "-10:30");
    expect_dt(1451736000000, "Week: [W]", NULL, "Week: 53");
    expect_dt(1483272000000, "Week: [w] of [xNn]", NULL, "Week: 5 of December");
    expect_dt(1521801216617, "[[[Y0001]]]", NULL, "[2018]");
    expect_dt(0, "[YN]", NULL, "D3133");
    expect_dt(0, "[q]", NULL, "D3132");
    expect_dt(0, "[Z010101t]", NULL, "D3134");
    expect_dt(0, "[Y", NULL, "D3135");
    expect_tm("2018-02-01T09:42:13.123+0000", NULL, 1517478133123);
    expect_tm("2018", NULL, 1514764800000);
    expect_tm("21st 12 1881", "[D1o] [M01] [Y0001]", -2777932800000);
    expect_tm("Twentieth of August, two thousand and seventeen", "[DW] of [MNn], [Yw]", 1503187200000);
    expect_tm("4/4/2018 12:06 am", "[D1]/[M1]/[Y0001] [h]:[m] [P]", 1522800360000);
    expect_tm("2020-09-09 08:00:00 +02:00", "[Y0001]-[M01]-[D01] [H01]:[m01]:[s01] [Z]", 1599631200000);
    double v;
    bool found;
    gg_error e = GG_ERROR_INIT;
    ck_assert(!jn_parse_datetime("2018-02-03 11:15:33", NULL, &v, &found, 0, &e));
    ck_assert_str_eq(e.code, "D3110");
    gg_error_clear(&e);
    ck_assert(!jn_parse_datetime("2018-22", "[Y]-[D]", &v, &found, 0, &e));
    ck_assert_str_eq(e.code, "D3136");
    gg_error_clear(&e);
    ck_assert(jn_parse_datetime("irrelevant", "[Y]-[M]-[D]", &v, &found, 0, &e));
    ck_assert(!found);
}
END_TEST

START_TEST(url_base64_and_rounding) {
    gg_strbuf b = GG_STRBUF_INIT;
    ck_assert(jn_url_encode("a b&\xc3\xa9", 6, true, &b));
    ck_assert_str_eq(b.data, "a%20b%26%C3%A9");
    gg_strbuf_reset(&b);
    ck_assert(jn_url_encode("http://x/a b?q=[1]", 18, false, &b));
    ck_assert_str_eq(b.data, "http://x/a%20b?q=%5B1%5D");
    gg_strbuf_reset(&b);
    ck_assert(!jn_url_decode("%E0%A4%A", 8, true, &b));
    gg_strbuf_reset(&b);
    ck_assert(jn_url_decode("%3Fx%3D%D1%88", 13, false, &b));
    ck_assert_str_eq(b.data, "%3Fx%3D\xd1\x88");
    gg_strbuf_reset(&b);
    ck_assert(jn_base64_encode("\xc3\xa9\xf0\x9f\x98\x80", 6, &b));
    ck_assert_str_eq(b.data, "6T0A");
    gg_strbuf_reset(&b);
    ck_assert(jn_base64_decode("aGVsbG8=", 8, &b));
    ck_assert_str_eq(b.data, "hello");
    gg_strbuf_reset(&b);
    ck_assert(jn_format_radix(1e20, 36, &b));
    ck_assert_str_eq(b.data, "l3r41ifs0p800");
    gg_strbuf_free(&b);
    ck_assert(jn_round_half_even(2.5, 0) == 2);
    ck_assert(jn_round_half_even(4.525, 2) == 4.52);
    ck_assert(jn_round_half_even(4.515, 2) == 4.52);
    ck_assert(jn_round_half_even(12350, -2) == 12400);
    ck_assert(jn_round_half_even(-7.5, 0) == -8);
}
END_TEST

/* Rounding on the shortest digits, as the digit path (jn_decimal_*) does it. */
static double round_by_digits(double v, int places) {
    jn_decimal d;
    jn_decimal_from_double(v, &d);
    jn_decimal_round(&d, places);
    double r = jn_decimal_to_double(&d);
    return r == 0 ? 0.0 : r;
}

/* jn_round_half_even skips the digits when the scaled value is clearly away from a tie,
 * and $formatNumber prints fixed digits without printf: both must give what the digit
 * path and printf give, ties and near-ties included. */
START_TEST(rounding_shortcuts_agree_with_digits) {
    static const double vals[] = {1.005, 2.675, 0.125, 0.375, 4.525, 1.0000000000000002, 0.1 + 0.2,
                                  1.0 / 3, 2.0 / 3, 8.0 / 7, 47155.82999999999, 102.51267391304346,
                                  1e-7, 123456789.125, 4503599627370.5, 0.5, 1.5, 2.5, 9.995, 99.995};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
        for (int p = 0; p <= 8; p++)
            for (int sign = -1; sign <= 1; sign += 2) {
                double v = sign * vals[i], want = round_by_digits(v, p), got = jn_round_half_even(v, p);
                ck_assert_msg(got == want && signbit(got) == signbit(want), "%.17g at %d: %.17g, want %.17g", v, p, got, want);
            }
    unsigned long long x = 88172645463325252ULL;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        double v = (double)((x >> 16) % 10000000) / (double)((x >> 44) % 997 + 1);
        int p = (int)(x % 7);
        ck_assert_msg(jn_round_half_even(v, p) == round_by_digits(v, p), "%.17g at %d", v, p);
    }
    expect_fn(1.005, "0.00", "1.00");    /* a decimal tie: half to even */
    expect_fn(2.675, "0.00", "2.68");
    expect_fn(0.125, "0.00", "0.12");
    expect_fn(47155.82999999999, "#,##0.00", "47,155.83");
    expect_fn(8.0 / 7, "0.0%", "114.3%");
    expect_fn(1e-7, "0.000000000", "0.000000100");
    expect_fn(123456789012345.6, "#,##0.0", "123,456,789,012,345.6"); /* past the fast range */
    expect_fn(0.5, "#", "0");
    expect_fn(1.5, "#", "2");
    expect_fn(12345.678, "#,###.##########", "12,345.678");
}
END_TEST

/* End-to-end checks of behaviour the suite does not pin down. */
static void expect_eval(const char *expr, const char *want) {
    gg_error e = GG_ERROR_INIT;
    json_t *r = jsonata_eval_string(expr, NULL, NULL, NULL, &e);
    if (want[0] == '!') {
        ck_assert_msg(gg_error_is_set(&e), "%s should fail", expr);
        ck_assert_str_eq(e.code, want + 1);
    } else {
        ck_assert_msg(!gg_error_is_set(&e), "%s: %s %s", expr, e.code, e.message ? e.message : "");
        char *s = r ? jsonata_dump(r, 0) : strdup("undefined");
        ck_assert_str_eq(s, want);
        free(s);
    }
    json_decref(r);
    gg_error_clear(&e);
}

START_TEST(functions_end_to_end) {
    expect_eval("$replace(\"abc\", /(b)/, \"$1$1$$-$2-$10-$\")", "\"abb$--b0-$c\"");
    expect_eval("$split(\"a1b22c\", /\\d+/)", "[\"a\",\"b\",\"c\"]");
    expect_eval("$substring(\"abcdef\", -2, 5)", "\"ef\"");
    expect_eval("$match(\"a\xf0\x9f\x98\x80" "a\", /a/).index", "[0,3]");
    expect_eval("$replace(\"abc\", /x*/, \"-\")", "!D1004");
    /* catastrophic backtracking ends in an error, not a hang */
    expect_eval("$match(\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\", /(a+)+$/)", "!D1012");
    expect_eval("$formatBase(100, 37)", "!D3100");
    expect_eval("$single([1,2], function($v){ $v > 0 })", "!D3138");
    expect_eval("$map([1,2,3], $string)", "[\"1\",\"2\",\"3\"]");
    expect_eval("$sort([{\"k\":2,\"v\":\"a\"},{\"k\":1,\"v\":\"b\"},{\"k\":2,\"v\":\"c\"}], function($a,$b){$a.k > $b.k}).v", "[\"b\",\"a\",\"c\"]");
    expect_eval("$parseInteger(\"xii\", \"I\")", "null");
    /* malformed UTF-8 counts one character per bad byte and never stalls (fuzzer find) */
    expect_eval("$length($pad(\"x\", 5, \"\x98\x80\"))", "5");
    /* $string rounds to 15 significant digits; numbers that have at most 15 keep theirs */
    expect_eval("$string(0.1 + 0.2)", "\"0.3\"");
    expect_eval("$string(1 / 3)", "\"0.333333333333333\"");
    expect_eval("$string(120.01) & \" EUR\"", "\"120.01 EUR\"");
    expect_eval("$string(-0.000001234)", "\"-0.000001234\"");
    expect_eval("$string(123456789012.345)", "\"123456789012.345\"");
    expect_eval("$string(1e-8 / 3)", "\"3.33333333333333e-9\"");
    /* signatures: the greedy match and the backtracking one agree, errors included */
    expect_eval("$substring(\"hello\", 1)", "\"ello\"");
    expect_eval("$formatNumber(1234.5, \"#,##0.00\")", "\"1,234.50\"");
    expect_eval("$string(1, 2)", "!T0410");
    expect_eval("$join([\"a\", \"b\"], 1)", "!T0410");
    expect_eval("[1, 2].$string()", "[\"1\",\"2\"]");
    expect_eval("$zip([1, 2], [3, 4], [5, 6])", "[[1,3,5],[2,4,6]]");
    /* field steps over objects (eval.c's step_item shortcut) keep the reference's shapes */
    expect_eval("[{\"a\":[1,2]},{\"a\":3},{\"b\":4}].a", "[1,2,3]");
    expect_eval("{\"x\":{\"y\":null}}.x.y", "null");
    expect_eval("[{\"a\":{\"b\":[[1],[2]]}}].a.b", "[[1],[2]]");
    expect_eval("({\"k\": [5]}).k", "[5]");
    expect_eval("{\"a\": [1,2].($)}.a", "[1,2]");
    expect_eval("[{\"a\":1}].a[]", "[1]");
}
END_TEST

/* A literal picture is analysed when the expression is compiled (parser.c's
 * analyse_pictures): the literal carries the analysis, and every call gives what the
 * analysis at each call gives (a picture built at run time), errors included. */
static const jn_node *find_string(const jn_node *n, const char *s) {
    if (!n) return NULL;
    if (n->type == N_STRING && !strcmp(n->str, s)) return n;
    const jn_node *r = find_string(n->lhs, s);
    if (!r) r = find_string(n->rhs, s);
    for (int i = 0; !r && i < n->nitems; i++) r = find_string(n->items[i], s);
    return r;
}

static char *eval_text(const char *expr) {
    gg_error e = GG_ERROR_INIT;
    json_t *r = jsonata_eval_string(expr, NULL, NULL, NULL, &e);
    char err[64], *s;
    snprintf(err, sizeof err, "!%s@%d", e.code, e.position);
    s = gg_error_is_set(&e) ? strdup(err) : r ? jsonata_dump(r, 0) : strdup("undefined");
    json_decref(r);
    gg_error_clear(&e);
    return s;
}

static void expect_same_as_runtime(const char *v, const char *pic, const char *want) {
    char lit[256], dyn[256], ctx[256];
    snprintf(lit, sizeof lit, "$formatNumber(%s, \"%s\")", v, pic);
    snprintf(dyn, sizeof dyn, "$formatNumber(%s, $substring(\"%s\", 0))", v, pic);
    snprintf(ctx, sizeof ctx, "%s ~> $formatNumber(\"%s\")", v, pic);
    char *a = eval_text(lit), *b = eval_text(dyn), *c = eval_text(ctx);
    ck_assert_str_eq(a, want);
    if (want[0] != '!') { /* an error's position is where each call stands */
        ck_assert_str_eq(b, want);
        ck_assert_str_eq(c, want);
    } else {
        ck_assert_msg(!strncmp(b, want, strcspn(want, "@")), "%s: %s", dyn, b);
    }
    free(a);
    free(b);
    free(c);
}

START_TEST(literal_pictures_analysed_once) {
    gg_error e = GG_ERROR_INIT;
    jsonata_expr *x = jsonata_compile("[1, 2].$formatNumber($, \"#,##0.00\") & $formatNumber(3, \"#.0.0\")", NULL, &e);
    ck_assert_ptr_nonnull(x);
    const jn_node *good = find_string(x->ast, "#,##0.00"), *bad = find_string(x->ast, "#.0.0");
    ck_assert_ptr_nonnull(good);
    ck_assert_ptr_nonnull(bad);
    ck_assert_ptr_nonnull(good->value->u.str.numfmt);
    ck_assert_ptr_null(bad->value->u.str.numfmt); /* D3081: left to the call */
    jsonata_free(x);
    /* a string literal elsewhere is left alone */
    x = jsonata_compile("$uppercase(\"#,##0.00\")", NULL, &e);
    ck_assert_ptr_nonnull(x);
    ck_assert_ptr_null(find_string(x->ast, "#,##0.00")->value->u.str.numfmt);
    jsonata_free(x);

    expect_same_as_runtime("1234.5", "#,##0.00", "\"1,234.50\"");
    expect_same_as_runtime("-1234.5", "#,##0.00", "\"-1,234.50\"");
    expect_same_as_runtime("-12", "#0;(#0)", "\"(12)\"");
    expect_same_as_runtime("0.14", "01%", "\"14%\"");
    expect_same_as_runtime("1234.5678", "00.000e0", "\"12.346e2\"");
    expect_same_as_runtime("1/0", "#,##0", "\"Infinity\"");
    expect_same_as_runtime("20", "#.0.0", "!D3081@14");
    expect_same_as_runtime("20", "#;#;#", "!D3080@14");
    /* with a decimal format the literal's analysis (default symbols) is not used */
    char *s = eval_text("$formatNumber(0.1, \"AeAAA\", {\"zero-digit\": \"A\"})");
    ck_assert_str_eq(s, "\"Be-AAB\"");
    free(s);
    s = eval_text("$map([1, 22.5], function($v) { $formatNumber($v, \"000.0\") })");
    ck_assert_str_eq(s, "[\"001.0\",\"022.5\"]");
    free(s);
}
END_TEST

int main(void) {
    Suite *s = suite_create("jsonata-functions");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, format_double_matches_javascript);
    tcase_add_test(tc, dump_is_json_stringify);
    tcase_add_test(tc, format_number_pictures);
    tcase_add_test(tc, integer_pictures_round_trip);
    tcase_add_test(tc, datetime_pictures);
    tcase_add_test(tc, url_base64_and_rounding);
    tcase_add_test(tc, rounding_shortcuts_agree_with_digits);
    tcase_add_test(tc, functions_end_to_end);
    tcase_add_test(tc, literal_pictures_analysed_once);
    suite_add_tcase(s, tc);
    return gg_check_run(s);
}
