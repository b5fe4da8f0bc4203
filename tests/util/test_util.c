/* Unit tests for the error value, the string buffer, the JSON writer and the ECMAScript
 * regex rewrite. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <check.h>
#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "util/suspicious.h"
#include "util/regex.h"
#include "util/util.h"
#include "../check_main.h"

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
    /* every digit count and both signs, against printf */
    long long v = 1;
    for (int d = 0; d < 19; d++, v = d < 19 ? v * 10 : v) {
        const long long near[] = {v - 1, v, v + 1, v * 3 + 7, -v, -(v - 1), -(v * 7 + 3)};
        for (size_t i = 0; i < sizeof near / sizeof near[0]; i++) {
            char ref[32];
            snprintf(ref, sizeof ref, "%lld", near[i]);
            gg_strbuf_reset(&b);
            ck_assert(gg_strbuf_put_int(&b, near[i]));
            ck_assert_str_eq(b.data, ref);
        }
    }
    gg_strbuf_free(&b);
    char small[6];
    gg_strcopy(small, sizeof small, "tenant");
    ck_assert_str_eq(small, "tenan"); /* truncated like snprintf */
    gg_strcopy(small, sizeof small, NULL);
    ck_assert_str_eq(small, "");
    gg_strcopy(small, sizeof small, "ab");
    ck_assert_str_eq(small, "ab");
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

/* Does the ECMAScript regex re match s, once rewritten and compiled as util.h says? */
static bool ecma_match(const char *re, const char *s) {
    size_t n;
    char *pat = gg_ecma_regex_to_pcre2(re, strlen(re), &n);
    ck_assert_ptr_nonnull(pat);
    ck_assert_uint_eq(n, strlen(pat));
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *code = pcre2_compile((PCRE2_SPTR)pat, n,
                                     PCRE2_UTF | PCRE2_ALT_BSUX | PCRE2_DOLLAR_ENDONLY | PCRE2_ALLOW_EMPTY_CLASS,
                                     &ec, &eo, NULL);
    ck_assert_msg(code != NULL, "/%s/ rewritten as /%s/ does not compile (error %d)", re, pat, ec);
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(code, NULL);
    int rc = pcre2_match(code, (PCRE2_SPTR)s, strlen(s), 0, 0, md, NULL);
    pcre2_match_data_free(md);
    pcre2_code_free(code);
    free(pat);
    return rc >= 0;
}

/* The cases where JavaScript and PCRE2 disagree (and where JSONata's and JSON Schema's
 * rewrites once disagreed: "[\S]" was ASCII for schema patterns). */
START_TEST(ecma_regex_has_javascript_meaning) {
    /* \S inside a class is Unicode non-space, not PCRE2's ASCII one */
    ck_assert(ecma_match("^[\\S]$", "\xc3\xa9"));          /* é */
    ck_assert(ecma_match("^[\\S]$", "\xc2\x85"));          /* U+0085 is not JS white space */
    ck_assert(!ecma_match("^[\\S]$", "\xc2\xa0"));         /* U+00A0 is */
    ck_assert(!ecma_match("^[\\S]$", "\xe3\x80\x80"));     /* U+3000 too */
    ck_assert(!ecma_match("^[\\S]$", " "));
    ck_assert(ecma_match("^[^\\S]$", "\xe2\x80\xa8"));     /* U+2028: [^\S] is \s */
    ck_assert(ecma_match("^[\\S]$", "\xf0\x9f\x98\x80"));  /* astral */
    /* \s and \S outside classes */
    ck_assert(ecma_match("^\\s$", "\xef\xbb\xbf"));        /* U+FEFF */
    ck_assert(!ecma_match("^\\s$", "\xc2\x85"));
    ck_assert(ecma_match("^\\S$", "\xc2\x85"));
    /* "." excludes \n, \r, U+2028 and U+2029 only */
    ck_assert(!ecma_match("^a.b$", "a\rb"));
    ck_assert(!ecma_match("^a.b$", "a\xe2\x80\xa9" "b"));
    ck_assert(ecma_match("^a.b$", "a\xc2\x85" "b"));
    ck_assert(ecma_match("^a[.]b$", "a.b"));
    ck_assert(!ecma_match("^a[.]b$", "axb"));
    /* "[" inside a class is a literal, not a POSIX class */
    ck_assert(ecma_match("^[[:a]+$", "[:a"));
    ck_assert(!ecma_match("^[[:alpha:]]$", "x"));
    /* [] matches nothing, [^] anything, $ only at the end, escapes stay */
    ck_assert(!ecma_match("a[]", "a"));
    ck_assert(ecma_match("^a[^]b$", "a\nb"));
    ck_assert(!ecma_match("^a$", "a\n"));
    ck_assert(ecma_match("^\\.\\[\\u0041$", ".[A"));
    /* not NUL-terminated input: only len bytes are read */
    size_t n;
    char *p = gg_ecma_regex_to_pcre2("ab.", 2, &n);
    ck_assert_str_eq(p, "ab");
    free(p);
    p = gg_ecma_regex_to_pcre2("", 0, NULL);
    ck_assert_str_eq(p, "");
    free(p);
}
END_TEST

START_TEST(utf8_len_accepts_only_well_formed) {
#define U(s, n) gg_utf8_len((const unsigned char *)(s), n)
    ck_assert_uint_eq(U("a", 1), 1);
    ck_assert_uint_eq(U("", 0), 0);
    ck_assert_uint_eq(U("\xc3\xa9", 2), 2);             /* é */
    ck_assert_uint_eq(U("\xe2\x80\xa8", 3), 3);         /* U+2028 */
    ck_assert_uint_eq(U("\xf4\x8f\xbf\xbf", 4), 4);     /* U+10FFFF */
    ck_assert_uint_eq(U("\xc3\xa9", 1), 0);             /* cut short */
    ck_assert_uint_eq(U("\xc3", 4), 0);                 /* NUL-terminated: the NUL ends it */
    ck_assert_uint_eq(U("\xc0\xaf", 2), 0);             /* overlong */
    ck_assert_uint_eq(U("\xe0\x9f\xbf", 3), 0);         /* overlong 3-byte */
    ck_assert_uint_eq(U("\xf0\x8f\xbf\xbf", 4), 0);     /* overlong 4-byte */
    ck_assert_uint_eq(U("\xed\xa0\x80", 3), 0);         /* lone surrogate U+D800 */
    ck_assert_uint_eq(U("\xf4\x90\x80\x80", 4), 0);     /* above U+10FFFF */
    ck_assert_uint_eq(U("\xf5\x80\x80\x80", 4), 0);
    ck_assert_uint_eq(U("\x80", 1), 0);                 /* a continuation byte alone */
    ck_assert_uint_eq(U("\xe2\x28\xa1", 3), 0);
#undef U
}
END_TEST

/* The definition: the fewest significant digits (1..17) whose decimal reads back as d. */
static int shortest_by_search(double d, char digits[24], int *n) {
    char tmp[40];
    for (int p = 1; p <= 17; p++) {
        snprintf(tmp, sizeof tmp, "%.*e", p - 1, d);
        if (strtod(tmp, NULL) == d) break;
    }
    int k = 0;
    const char *c = tmp;
    for (; *c && *c != 'e'; c++)
        if (*c >= '0' && *c <= '9') digits[k++] = *c;
    while (k > 1 && digits[k - 1] == '0') k--;
    digits[k] = '\0';
    *n = k;
    return atoi(c + 1);
}

/* gg_js_shortest_digits has a fast path for numbers of up to 15 digits: it must agree with
 * the definition on values people write (k / 10^j), on random bit patterns, and at powers
 * of ten where log10 rounds. */
START_TEST(shortest_digits_match_the_definition) {
    unsigned long long x = 88172645463325252ULL;
    for (int i = 0; i < 300000; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        double d;
        switch (i % 4) {
        case 0: d = (double)(x % 100000000000ULL) / pow(10, (double)(x >> 60)); break;
        case 1: { memcpy(&d, &x, sizeof d); d = fabs(d); break; }
        case 2: d = pow(10, (double)((int)(x % 40) - 12)) * (1 + (double)(i % 3) * 1e-15); break;
        default: d = (double)(x % 1000000) / 1000 + 0.001 * (double)(x >> 62); break;
        }
        if (!isfinite(d) || d <= 0) continue;
        char a[24], b[24];
        int na, nb;
        int ea = gg_js_shortest_digits(d, a, &na), eb = shortest_by_search(d, b, &nb);
        if (ea != eb || na != nb || strcmp(a, b) != 0)
            ck_abort_msg("%.17g: fast %s e%d, definition %s e%d", d, a, ea, b, eb);
    }
}
END_TEST

/* One table: HTTP status and JSON-RPC code per error code; invalid_* is 400; unlisted 500. */
START_TEST(error_codes_map_once) {
    gg_error e = GG_ERROR_INIT;
    struct { const char *code; int http, rpc; } want[] = {
        {"invalid", 400, -32603},       {"invalid_params", 400, -32602}, {"unknown_tool", 400, -32602},
        {"not_found", 404, -32603},     {"quota_exceeded", 409, -32603}, {"yaml", 422, -32603},
        {"too_many", 429, -32603},      {"shutting_down", 503, -32603},  {"timeout", 504, -32001},
        {"invalid_config", 400, -32603}, {"oom", 500, -32603},           {"no_such_code", 500, -32603},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        gg_error_set(&e, want[i].code, "x");
        ck_assert_msg(gg_error_http_status(&e) == want[i].http, "%s: HTTP %d", want[i].code, gg_error_http_status(&e));
        ck_assert_msg(gg_error_rpc_code(&e) == want[i].rpc, "%s: JSON-RPC %d", want[i].code, gg_error_rpc_code(&e));
        gg_error_clear(&e);
    }
    size_t n;
    const gg_errcode *t = gg_errcode_table(&n);
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) ck_assert_str_ne(t[i].code, t[j].code);
    ck_assert_int_eq(gg_error_http_status(NULL), 500);
}
END_TEST

/* ---- the JSON writer (json_write.c) against json_dumps ------------------------------------- */

static unsigned long long rng_state = 88172645463325252ULL;
static unsigned rnd(unsigned n) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (unsigned)(rng_state % n);
}

/* A string of n pieces: plain ASCII, controls, quote/backslash/DEL, 2-4 byte UTF-8, NUL. */
static json_t *rnd_string(bool allow_nul) {
    static const char *const pieces[] = {"a", "Z", " ", "/", "\"", "\\", "\x7f", "\n", "\r", "\t", "\b", "\f",
                                         "\x01", "\x1f", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
                                         "\xef\xbf\xbd", "\xed\x9f\xbf", "</script>", "\\u0000"};
    char buf[256];
    size_t len = 0, n = rnd(12);
    for (size_t i = 0; i < n; i++) {
        if (allow_nul && rnd(20) == 0) {
            buf[len++] = '\0';
            continue;
        }
        const char *p = pieces[rnd(sizeof pieces / sizeof pieces[0])];
        memcpy(buf + len, p, strlen(p));
        len += strlen(p);
    }
    return json_stringn(buf, len);
}

static json_t *rnd_number(void) {
    static const double reals[] = {0.0, -0.0, 0.1, 1.5, -2.25, 1e21, 1e-7, 3.141592653589793, 1e300, -5e-324, 123456789.0};
    static const json_int_t ints[] = {0, 1, -1, 9, 10, 42, -99, 2147483648LL, INT64_MAX, INT64_MIN, INT64_MIN + 1};
    if (rnd(2)) return json_integer(ints[rnd(sizeof ints / sizeof ints[0])]);
    return json_real(reals[rnd(sizeof reals / sizeof reals[0])] * (rnd(4) ? 1 : 1.0 / 3));
}

static json_t *rnd_value(int depth) {
    unsigned k = depth > 5 ? rnd(6) : rnd(9);
    switch (k) {
    case 0: return json_null();
    case 1: return json_true();
    case 2: return json_false();
    case 3: case 4: return rnd_number();
    case 5: return rnd_string(true);
    case 6: case 7: {
        json_t *o = json_object();
        for (unsigned i = rnd(5); i > 0; i--) {
            json_t *key = rnd_string(false);
            json_object_set_new(o, json_string_value(key), rnd_value(depth + 1));
            json_decref(key);
        }
        return o;
    }
    default: {
        json_t *a = json_array();
        for (unsigned i = rnd(5); i > 0; i--) json_array_append_new(a, rnd_value(depth + 1));
        return a;
    }
    }
}

/* jansson writes \u001F, the writer \u001f (as JSON.stringify and as graphgate always did). */
static void lowercase_u_escapes(char *s) {
    for (; *s; s++) {
        if (*s != '\\') continue;
        if (s[1] == 'u')
            for (int k = 2; k < 6; k++) s[k] = (char)tolower((unsigned char)s[k]);
        s++;
    }
}

static void assert_writes_like_dumps(json_t *v) {
    char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    ck_assert_ptr_nonnull(want);
    lowercase_u_escapes(want);
    char stack[16];
    gg_strbuf b;
    gg_strbuf_use(&b, stack, sizeof stack); /* small: most values move to the heap */
    ck_assert(gg_strbuf_put_json(&b, v));
    ck_assert_uint_eq(b.len, strlen(want));
    ck_assert_str_eq(b.data, want);
    gg_strbuf_free(&b);
    free(want);
}

START_TEST(json_write_matches_json_dumps) {
    for (int i = 0; i < 20000; i++) {
        json_t *v = rnd_value(0);
        assert_writes_like_dumps(v);
        json_decref(v);
    }
    /* deeper than the writer walks itself: handed to jansson, same text */
    json_t *deep = json_integer(7);
    for (int i = 0; i < 600; i++) {
        json_t *w = i % 2 ? json_array() : json_object();
        if (i % 2) json_array_append_new(w, deep);
        else json_object_set_new(w, "k\n", deep);
        deep = w;
    }
    assert_writes_like_dumps(deep);
    json_decref(deep);
    gg_strbuf b = GG_STRBUF_INIT;
    ck_assert(gg_strbuf_put_json(&b, NULL));
    ck_assert_str_eq(b.data, "null");
    gg_strbuf_free(&b);
}
END_TEST

START_TEST(json_string_repairs_utf8_and_parses_back) {
    static const struct { const char *in; size_t n; const char *want; } cases[] = {
        {"plain", 5, "\"plain\""},
        {"a\"b\\c\n\x01\x7f", 8, "\"a\\\"b\\\\c\\n\\u0001\x7f\""},
        {"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9, "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\""},
        {"x\xff" "y", 3, "\"x\\ufffdy\""},                 /* not UTF-8 at all */
        {"\xc3", 1, "\"\\ufffd\""},                        /* cut short */
        {"\xe2\x82", 2, "\"\\ufffd\\ufffd\""},
        {"\xc0\xaf", 2, "\"\\ufffd\\ufffd\""},             /* overlong */
        {"\xed\xa0\x80", 3, "\"\\ufffd\\ufffd\\ufffd\""},  /* a surrogate */
        {"a\0b", 3, "\"a\\u0000b\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gg_strbuf b = GG_STRBUF_INIT;
        ck_assert(gg_strbuf_json_string(&b, cases[i].in, cases[i].n));
        ck_assert_str_eq(b.data, cases[i].want);
        json_error_t je;
        json_t *back = json_loads(b.data, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
        ck_assert_msg(back != NULL, "case %zu does not parse back: %s", i, je.text);
        json_decref(back);
        gg_strbuf_free(&b);
    }
    /* the raw escaper keeps bytes as they are */
    gg_strbuf b = GG_STRBUF_INIT;
    ck_assert(gg_strbuf_json_escape(&b, "x\xff\t", 3));
    ck_assert_str_eq(b.data, "x\xff\\t");
    gg_strbuf_free(&b);
}
END_TEST

/* Short clean strings are copied while scanned (json_write.c copy_clean_short); a byte to
 * escape anywhere in them, or a length past the short bound, takes the general path with
 * the same text, and a buffer with room for the bytes keeps its terminator either way. */
START_TEST(json_escape_short_and_long_alike) {
    char s[80];
    for (size_t n = 0; n <= 70; n++) {
        for (size_t at = 0; at <= n; at++) { /* at == n: nothing to escape */
            memset(s, 'a', n);
            if (at < n) s[at] = at % 2 ? '"' : '\n';
            gg_strbuf b = GG_STRBUF_INIT;
            ck_assert(gg_strbuf_reserve(&b, 200));
            ck_assert(gg_strbuf_puts(&b, "<"));
            ck_assert(gg_strbuf_json_escape(&b, s, n));
            ck_assert_uint_eq(b.len, 1 + n + (at < n));
            ck_assert_uint_eq(strlen(b.data), b.len);
            if (at < n) ck_assert(!memcmp(b.data + 1 + at, at % 2 ? "\\\"" : "\\n", 2));
            gg_strbuf_reset(&b);
            if (at < n) s[at] = '\xff'; /* repaired only by json_string */
            ck_assert(gg_strbuf_json_string(&b, s, n));
            ck_assert_uint_eq(b.len, n + 2 + (at < n ? 5 : 0));
            ck_assert_uint_eq(strlen(b.data), b.len);
            gg_strbuf_free(&b);
        }
    }
}
END_TEST

/* gg_json_members answers what json_object_get answers for each key, in one walk: keys
 * of the same length but other bytes, a longer key sharing the prefix, absent keys, no
 * object. */
START_TEST(json_members_as_object_get) {
    json_t *o = json_loads("{\"name\":\"t\",\"namE\":1,\"arguments\":{\"a\":1},\"nam\":2,\"_meta\":null}", 0, NULL);
    ck_assert_ptr_nonnull(o);
    static const gg_json_key keys[] = {GG_JSON_KEY("name"), GG_JSON_KEY("arguments"), GG_JSON_KEY("_meta"),
                                       GG_JSON_KEY("requestState"), GG_JSON_KEY("na")};
    json_t *v[5];
    gg_json_members(o, 5, keys, v);
    for (int i = 0; i < 5; i++) ck_assert_ptr_eq(v[i], json_object_get(o, keys[i].name));
    ck_assert_str_eq(json_string_value(v[0]), "t");
    ck_assert(json_is_null(v[2]));
    ck_assert_ptr_null(v[3]);
    ck_assert_ptr_null(v[4]); /* "na\u0000e" is another key */
    json_t *arr = json_array();
    v[0] = o;
    gg_json_members(arr, 1, keys, v);
    ck_assert_ptr_null(v[0]);
    gg_json_members(NULL, 1, keys, v);
    ck_assert_ptr_null(v[0]);
    json_decref(arr);
    json_decref(o);
}
END_TEST

/* gg_json_clone: equal to the original, key order and number kinds kept, nothing shared
 * (changing the clone leaves the original as it was), keys with a NUL byte kept whole. */
START_TEST(json_clone_shares_nothing) {
    json_t *o = json_loads("{\"z\":1,\"a\":[1.5,\"s\",true,false,null,{\"k\":[[]]}],\"m\":{}}", 0, NULL);
    ck_assert_ptr_nonnull(o);
    json_object_setn_new(json_array_get(json_object_get(o, "a"), 5), "k\0x", 3, json_integer(7));
    json_t *c = gg_json_clone(o);
    ck_assert_ptr_nonnull(c);
    char *a = json_dumps(o, JSON_COMPACT), *b = json_dumps(c, JSON_COMPACT);
    ck_assert_str_eq(a, b); /* the same order of keys, 1 stays an integer, 1.5 a real */
    free(a);
    free(b);
    ck_assert_ptr_ne(json_object_get(c, "a"), json_object_get(o, "a"));
    ck_assert_ptr_ne(json_array_get(json_object_get(c, "a"), 5), json_array_get(json_object_get(o, "a"), 5));
    ck_assert_int_eq(json_object_get(o, "a")->refcount, 1);
    json_array_clear(json_object_get(c, "a"));
    json_object_set_new(c, "z", json_string("changed"));
    json_object_clear(json_object_get(c, "m"));
    a = json_dumps(o, JSON_COMPACT);
    ck_assert_str_eq(a, "{\"z\":1,\"a\":[1.5,\"s\",true,false,null,{\"k\":[[]],\"k\\u0000x\":7}],\"m\":{}}");
    free(a);
    ck_assert_ptr_null(gg_json_clone(NULL));
    json_t *s = json_string("only");
    json_t *sc = gg_json_clone(s);
    ck_assert_str_eq(json_string_value(sc), "only");
    ck_assert_ptr_ne(sc, s);
    json_decref(s);
    json_decref(sc);
    json_decref(c);
    json_decref(o);
}
END_TEST

START_TEST(strbuf_on_a_callers_array) {
    char stack[8];
    gg_strbuf b;
    gg_strbuf_use(&b, stack, sizeof stack);
    ck_assert(gg_strbuf_puts(&b, "abc"));
    ck_assert_ptr_eq(b.data, stack);
    ck_assert(gg_strbuf_puts(&b, "defghijkl")); /* past the array: copied to the heap */
    ck_assert_ptr_ne(b.data, stack);
    ck_assert_str_eq(b.data, "abcdefghijkl");
    gg_strbuf_free(&b);
    gg_strbuf_use(&b, stack, sizeof stack);
    gg_strbuf_putc(&b, 'x');
    char *s = gg_strbuf_take(&b); /* a heap copy, the array stays the caller's */
    ck_assert_ptr_ne(s, stack);
    ck_assert_str_eq(s, "x");
    free(s);
    ck_assert_ptr_null(b.data);
    gg_strbuf_use(&b, stack, sizeof stack);
    gg_strbuf_free(&b); /* never frees the array */
}
END_TEST

/* gg_tally: counts per name, the bound refuses without counting, a name back at 0 is gone
 * (so removing and re-adding starts from 0), other names are independent. */
START_TEST(tally_counts_per_name_with_a_bound) {
    gg_tally t = {0};
    ck_assert_int_eq(gg_tally_add(&t, "a", 2), GG_TALLY_OK);
    ck_assert_int_eq(gg_tally_add(&t, "a", 2), GG_TALLY_OK);
    ck_assert_int_eq(gg_tally_add(&t, "a", 2), GG_TALLY_FULL);
    ck_assert_int_eq(gg_tally_get(&t, "a"), 2);
    ck_assert_int_eq(gg_tally_add(&t, "b", 2), GG_TALLY_OK);
    ck_assert_int_eq(gg_tally_add(&t, "b", 0), GG_TALLY_OK); /* no bound */
    ck_assert_int_eq(gg_tally_add(&t, "b", 0), GG_TALLY_OK);
    ck_assert_int_eq(gg_tally_get(&t, "b"), 3);
    gg_tally_sub(&t, "a");
    ck_assert_int_eq(gg_tally_add(&t, "a", 2), GG_TALLY_OK);
    gg_tally_sub(&t, "a");
    gg_tally_sub(&t, "a");
    ck_assert_int_eq(gg_tally_get(&t, "a"), 0);
    gg_tally_sub(&t, "a"); /* below 0: nothing */
    gg_tally_sub(&t, "nobody");
    ck_assert_int_eq(gg_tally_get(&t, "a"), 0);
    ck_assert_int_eq(gg_tally_get(&t, "b"), 3);
    ck_assert_ptr_nonnull(t.head);
    gg_tally_sub(&t, "b");
    gg_tally_sub(&t, "b");
    gg_tally_sub(&t, "b");
    ck_assert_ptr_null(t.head); /* every name at 0 holds nothing */
    ck_assert_int_eq(gg_tally_add(&t, "c", 1), GG_TALLY_OK);
    gg_tally_clear(&t);
    ck_assert_ptr_null(t.head);
}
END_TEST

START_TEST(hash_is_fnv1a_and_parts_stay_apart) {
    /* the published FNV-1a 64 vectors */
    ck_assert_uint_eq(gg_hash_str(""), 0xcbf29ce484222325ull);
    ck_assert_uint_eq(gg_hash_str("a"), 0xaf63dc4c8601ec8cull);
    ck_assert_uint_eq(gg_hash_str("foobar"), 0x85944171f73967e8ull);
    /* composed keys: a separator keeps "ab"/"c" from "a"/"bc" */
    unsigned long long x = gg_hash_add(gg_hash_sep(gg_hash_str("ab"), '/'), "c");
    unsigned long long y = gg_hash_add(gg_hash_sep(gg_hash_str("a"), '/'), "bc");
    ck_assert_uint_ne(x, y);
    ck_assert_uint_eq(gg_hash_add(gg_hash_str("ab"), "c"), gg_hash_str("abc"));
}
END_TEST

/* The one time format (log lines, API answers, task records): ISO 8601 UTC with milliseconds,
 * checked against dates computed independently (Python's datetime), a leap day included. */
START_TEST(iso8601_times_in_utc_with_milliseconds) {
    char b[GG_TIME_ISO_MAX];
    gg_time_iso8601(0, b);
    ck_assert_str_eq(b, "1970-01-01T00:00:00.000Z");
    gg_time_iso8601(1795938000123LL, b);
    ck_assert_str_eq(b, "2026-11-29T07:40:00.123Z");
    gg_time_iso8601(951782400999LL, b);
    ck_assert_str_eq(b, "2000-02-29T00:00:00.999Z");
    gg_time_iso8601(-5, b); /* before the epoch: clamped, never a negative field */
    ck_assert_str_eq(b, "1970-01-01T00:00:00.000Z");
    long long now = gg_wall_ms();
    gg_time_iso8601(now, b);
    ck_assert_uint_eq(strlen(b), 24);
    ck_assert(b[4] == '-' && b[10] == 'T' && b[19] == '.' && b[23] == 'Z');
}
END_TEST

/* Every budget's context bounds a catastrophic pattern: (a+)+$ against 40 a's and a b would
 * take ~2^40 steps; under the limits it ends in PCRE2_ERROR_MATCHLIMIT (or DEPTHLIMIT). An
 * ordinary match still matches; an unknown budget has no context. */
START_TEST(regex_contexts_bound_backtracking) {
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *bad = pcre2_compile((PCRE2_SPTR) "(a+)+$", PCRE2_ZERO_TERMINATED, 0, &ec, &eo, NULL);
    pcre2_code *ok = pcre2_compile((PCRE2_SPTR) "b+", PCRE2_ZERO_TERMINATED, 0, &ec, &eo, NULL);
    ck_assert(bad && ok);
    const char *subject = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab";
    for (int b = 0; b < GG_REGEX_BUDGETS; b++) {
        pcre2_match_context *mc = gg_regex_context((gg_regex_budget)b);
        ck_assert_ptr_nonnull(mc);
        ck_assert_ptr_eq(mc, gg_regex_context((gg_regex_budget)b)); /* shared, made once */
        pcre2_match_data *md = pcre2_match_data_create_from_pattern(bad, NULL);
        int rc = pcre2_match(bad, (PCRE2_SPTR)subject, PCRE2_ZERO_TERMINATED, 0, 0, md, mc);
        ck_assert_msg(rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT, "budget %d: rc %d", b, rc);
        ck_assert_int_eq(pcre2_match(ok, (PCRE2_SPTR)subject, PCRE2_ZERO_TERMINATED, 0, 0, md, mc), 1);
        pcre2_match_data_free(md);
    }
    ck_assert_ptr_null(gg_regex_context(GG_REGEX_BUDGETS));
    pcre2_code_free(bad);
    pcre2_code_free(ok);
}
END_TEST

/* UTF-8 encoding at every length boundary, read back by gg_utf8_len (the one decoder's
 * validity rule) and compared with the bytes the standard gives. */
START_TEST(utf8_encode_at_each_length) {
    static const struct {
        uint32_t cp;
        const char *bytes;
    } v[] = {{0x24, "\x24"}, {0x7F, "\x7f"}, {0x80, "\xc2\x80"}, {0xE9, "\xc3\xa9"}, {0x7FF, "\xdf\xbf"},
             {0x800, "\xe0\xa0\x80"}, {0x20AC, "\xe2\x82\xac"}, {0xFFFF, "\xef\xbf\xbf"},
             {0x10000, "\xf0\x90\x80\x80"}, {0x1F600, "\xf0\x9f\x98\x80"}, {0x10FFFF, "\xf4\x8f\xbf\xbf"}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char out[4];
        size_t n = gg_utf8_encode(v[i].cp, out);
        ck_assert_uint_eq(n, strlen(v[i].bytes));
        ck_assert(memcmp(out, v[i].bytes, n) == 0);
        ck_assert_uint_eq(gg_utf8_len((const unsigned char *)out, n), n);
    }
    char out[4]; /* a lone surrogate: 3 bytes, which the strict decoder refuses */
    ck_assert_uint_eq(gg_utf8_encode(0xD800, out), 3);
    ck_assert_uint_eq(gg_utf8_len((const unsigned char *)out, 3), 0);
}
END_TEST

/* The unchecked walk: each sequence's length from its lead byte (a stray continuation byte
 * steps one), its code point decoded back to what gg_utf8_encode wrote. */
START_TEST(utf8_lead_len_and_decode_read_back_encode) {
    const uint32_t cps[] = {0x24, 0x7F, 0x80, 0x7FF, 0x800, 0x20AC, 0xFFFF, 0x10000, 0x1F600, 0x10FFFF};
    for (size_t i = 0; i < sizeof cps / sizeof cps[0]; i++) {
        char out[4];
        size_t n = gg_utf8_encode(cps[i], out);
        ck_assert_uint_eq(gg_utf8_lead_len((unsigned char)out[0]), n);
        ck_assert_uint_eq(gg_utf8_decode((const unsigned char *)out, n), cps[i]);
    }
    ck_assert_uint_eq(gg_utf8_lead_len(0x80), 1); /* stray continuation byte */
    ck_assert_uint_eq(gg_utf8_lead_len(0xBF), 1);
    ck_assert_uint_eq(gg_utf8_decode((const unsigned char *)"\xe3\x80\x80", 3), 0x3000); /* ideographic space */
}
END_TEST

/* JavaScript's string length and order (UTF-16 code units) over UTF-8: a supplementary
 * character is two units and sorts below U+E000..U+FFFF although its UTF-8 bytes sort above. */
START_TEST(utf16_length_and_order_as_javascript) {
    ck_assert_uint_eq(gg_utf16_len("", 0), 0);
    ck_assert_uint_eq(gg_utf16_len("abc", 3), 3);
    ck_assert_uint_eq(gg_utf16_len("\xc3\xa9\xe2\x82\xac", 5), 2);     /* é€ */
    ck_assert_uint_eq(gg_utf16_len("a\xf0\x9f\x98\x80", 5), 3);         /* a😀 */
    const char *pua = "\xee\x80\x80", *emoji = "\xf0\x9f\x98\x80"; /* U+E000, U+1F600 */
    ck_assert_int_lt(gg_utf16_cmp(emoji, 4, pua, 3), 0);                 /* 0xD83D < 0xE000 */
    ck_assert_int_gt(gg_utf16_cmp(pua, 3, emoji, 4), 0);
    ck_assert_int_lt(gg_utf16_cmp("ab", 2, "abc", 3), 0);
    ck_assert_int_eq(gg_utf16_cmp("abc", 3, "abc", 3), 0);
    ck_assert_int_gt(gg_utf16_cmp("b", 1, "abc", 3), 0);
    ck_assert_int_lt(gg_utf16_cmp("\xc3\xa9", 2, "\xe2\x82\xac", 3), 0); /* é < € */
}
END_TEST

START_TEST(closest_name_within_the_threshold) {
    const char *const tools[] = {"digest", "summarize", NULL, "fetch_page", "fetch_pages"};
    const size_t n = sizeof tools / sizeof tools[0];
    ck_assert_str_eq(gg_closest("digst", tools, n), "digest");   /* one deletion */
    ck_assert_str_eq(gg_closest("dgiest", tools, n), "digest");  /* a swap is two edits */
    ck_assert_str_eq(gg_closest("digest", tools, n), "digest");  /* exact */
    ck_assert_str_eq(gg_closest("sumarise", tools, n), "summarize");
    ck_assert_str_eq(gg_closest("fetch_pag", tools, n), "fetch_page"); /* the closer of two */
    ck_assert_str_eq(gg_closest("fetch_pagess", tools, n), "fetch_pages");
    ck_assert_ptr_null(gg_closest("xyz", tools, n));             /* 3 edits from nothing near */
    ck_assert_ptr_null(gg_closest("dig", tools, n));             /* 3 edits > max(2, 1) */
    ck_assert_ptr_null(gg_closest("", tools, n));
    ck_assert_ptr_null(gg_closest("digst", tools, 0));
    ck_assert_ptr_null(gg_closest(NULL, tools, n));
    /* the threshold grows with the word: 12 letters allow 4 edits, not 5 */
    const char *const long_names[] = {"abcdefghijkl"};
    ck_assert_str_eq(gg_closest("abcdefghWXYZ", long_names, 1), "abcdefghijkl");
    ck_assert_ptr_null(gg_closest("abcdefgVWXYZ", long_names, 1));
    /* equally close: the first */
    const char *const ties[] = {"cat", "bat"};
    ck_assert_str_eq(gg_closest("at", ties, 2), "cat");
    /* the message tail: the closest, then the list while it is short */
    gg_strbuf b = GG_STRBUF_INIT;
    gg_suggest(&b, "digst", tools, n, "tools");
    ck_assert_str_eq(b.data, "; did you mean 'digest'?; tools: digest, summarize, fetch_page, fetch_pages");
    gg_strbuf_free(&b);
    gg_suggest(&b, "xyz", tools, n, "tools");
    ck_assert_str_eq(b.data, "; tools: digest, summarize, fetch_page, fetch_pages");
    gg_strbuf_free(&b);
    const char *many[GG_SUGGEST_LIST_MAX + 1];
    char names[GG_SUGGEST_LIST_MAX + 1][8];
    for (size_t i = 0; i <= GG_SUGGEST_LIST_MAX; i++) {
        snprintf(names[i], sizeof names[i], "t%zu", i);
        many[i] = names[i];
    }
    gg_suggest(&b, "tool", many, GG_SUGGEST_LIST_MAX, "tools"); /* 20: listed */
    ck_assert_ptr_nonnull(strstr(b.data, "; tools: t0, t1, "));
    gg_strbuf_free(&b);
    gg_suggest(&b, "t20x", many, GG_SUGGEST_LIST_MAX + 1, "tools"); /* 21: only the closest */
    ck_assert_str_eq(b.data, "; did you mean 't20'?");
    gg_strbuf_free(&b);
}
END_TEST

/* Invisible and direction-changing code points are found in strings, keys and nested
 * schema values, and escaped visibly; ordinary text (accents, emoji, CJK) is not. */
START_TEST(suspicious_text_found_and_escaped) {
    uint32_t cp = 0;
    const char *tag = "Adds\xf3\xa0\x81\x81 numbers"; /* U+E0041, a tag character */
    ck_assert_uint_eq(gg_suspicious_scan(tag, strlen(tag), &cp), 1);
    ck_assert_uint_eq(cp, 0xE0041);
    const char *plain = "caf\xc3\xa9 \xf0\x9f\x98\x80 \xe6\x97\xa5"; /* é, an emoji, 日 */
    ck_assert_uint_eq(gg_suspicious_scan(plain, strlen(plain), NULL), 0);
    static const uint32_t bad[] = {0xE0000, 0xE007F, 0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF, 0x202A, 0x202E,
                                   0x2066, 0x2069, 0x200E, 0x200F};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) ck_assert(gg_suspicious_cp(bad[i]));
    static const uint32_t good[] = {0x41, 0xE9, 0x200A, 0x2010, 0x2061, 0x2065, 0x206A, 0xE0080, 0xFEFE, 0x1F600};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) ck_assert(!gg_suspicious_cp(good[i]));
    const char *rlo = "a\xe2\x80\xae" "b\xe2\x80\x8b"; /* U+202E, U+200B */
    ck_assert_uint_eq(gg_suspicious_scan(rlo, strlen(rlo), &cp), 2);
    ck_assert_uint_eq(cp, 0x202E);
    ck_assert_uint_eq(gg_suspicious_scan("\xff\xfe", 2, NULL), 0); /* invalid bytes: skipped */
    json_t *schema = json_loads("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\","
                                "\"description\":\"x\\u200by\"}}}", 0, NULL);
    char where[64];
    ck_assert_uint_eq(gg_suspicious_json(schema, &cp, where, sizeof where), 1);
    ck_assert_uint_eq(cp, 0x200B);
    ck_assert_str_eq(where, "/properties/a/description");
    json_decref(schema);
    json_t *key = json_pack("{s:s}", "n\xe2\x81\xa0", "v"); /* U+2060 in a key */
    ck_assert_uint_eq(gg_suspicious_json(key, NULL, NULL, 0), 1);
    json_decref(key);
    char *e = gg_suspicious_escape(tag, strlen(tag));
    ck_assert_str_eq(e, "Adds\xe2\x9f\xa8U+E0041\xe2\x9f\xa9 numbers");
    free(e);
    e = gg_suspicious_escape(plain, strlen(plain));
    ck_assert_str_eq(e, plain);
    free(e);
}
END_TEST

int main(void) {
    Suite *s = suite_create("util");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, error_set_format_clear);
    tcase_add_test(tc, error_move_leaves_source_clear);
    tcase_add_test(tc, strbuf_grows_and_takes);
    tcase_add_test(tc, strbuf_integers_and_hex4);
    tcase_add_test(tc, ecma_regex_has_javascript_meaning);
    tcase_add_test(tc, utf8_len_accepts_only_well_formed);
    tcase_add_test(tc, shortest_digits_match_the_definition);
    tcase_add_test(tc, error_codes_map_once);
    tcase_add_test(tc, json_write_matches_json_dumps);
    tcase_add_test(tc, json_string_repairs_utf8_and_parses_back);
    tcase_add_test(tc, json_escape_short_and_long_alike);
    tcase_add_test(tc, json_members_as_object_get);
    tcase_add_test(tc, json_clone_shares_nothing);
    tcase_add_test(tc, strbuf_on_a_callers_array);
    tcase_add_test(tc, tally_counts_per_name_with_a_bound);
    tcase_add_test(tc, closest_name_within_the_threshold);
    tcase_add_test(tc, utf16_length_and_order_as_javascript);
    tcase_add_test(tc, utf8_encode_at_each_length);
    tcase_add_test(tc, utf8_lead_len_and_decode_read_back_encode);
    tcase_add_test(tc, regex_contexts_bound_backtracking);
    tcase_add_test(tc, iso8601_times_in_utc_with_milliseconds);
    tcase_add_test(tc, hash_is_fnv1a_and_parts_stay_apart);
    tcase_add_test(tc, suspicious_text_found_and_escaped);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return gg_check_run(s);
}
