/* Unit tests for the MCP server side: JSON-RPC framing, JSON Schema, sessions, dispatch
 * against a small in-test provider. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp/mcp.h"
#include "../check_main.h"

/* ---------------------------------------------------------------- helpers */

static json_t *J(const char *text) {
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
    ck_assert_msg(v != NULL, "bad test JSON %s: %s", text, e.text);
    return v;
}

/* Validate instance text against schema text; returns "" when valid, else "path: msg". */
static char last[1024];
static const char *check_schema(const char *schema, const char *instance) {
    json_t *s = J(schema), *i = J(instance);
    gg_error err = GG_ERROR_INIT;
    mcp_schema *c = mcp_schema_compile(s, &err);
    ck_assert_msg(c != NULL, "schema did not compile: %s", err.message);
    last[0] = 0;
    if (!mcp_schema_validate(c, i, &err))
        snprintf(last, sizeof last, "%s: %s", err.path ? err.path : "", err.message);
    gg_error_clear(&err);
    mcp_schema_free(c);
    json_decref(s);
    json_decref(i);
    return last;
}

/* ---------------------------------------------------------------- JSON-RPC */

static mcp_message classify(json_t *v) {
    mcp_message m;
    mcp_jsonrpc_classify(v, &m);
    return m;
}

/* Our request parser against jansson's json_loadb(JSON_DECODE_ANY), the behaviour it must
 * have: the same verdict on every input, and equal values (types included) when valid. */
static void same_as_jansson(const char *buf, size_t len) {
    gg_error e = GG_ERROR_INIT;
    json_error_t je;
    json_t *ours = mcp_jsonrpc_parse(buf, len, 64, &e);
    json_t *ref = len ? json_loadb(buf, len, JSON_DECODE_ANY, &je) : NULL;
    ck_assert_msg((ours != NULL) == (ref != NULL), "verdicts differ on %.*s: ours %s, jansson %s", (int)len, buf,
                  ours ? "ok" : e.message, ref ? "ok" : je.text);
    if (ours) ck_assert_msg(json_equal(ours, ref), "values differ on %.*s", (int)len, buf);
    if (!ours) ck_assert_str_eq(e.code, "parse_error");
    json_decref(ours);
    json_decref(ref);
    gg_error_clear(&e);
}

START_TEST(jsonrpc_parser_agrees_with_jansson) {
    static const char *const cases[] = {
        "{}", "[]", "0", "-0", "1", "-1", "1.5", "-1.5e3", "1E+2", "1e-400", "1e400", "-1e400", "01", "1.", ".5",
        "+1", "-", "1e", "1e+", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
        "-9223372036854775809", "123456789012345678901234567890", "true", "false", "null", "tru", "nul", "True",
        "\"\"", "\"a\"", "\"\\u00e9\\u4e2d\\ud83d\\ude00\"", "\"\\ud83d\"", "\"\\ude00\"", "\"\\ud83d\\u0041\"",
        "\"\\u0000\"", "\"\\u00\"", "\"\\x\"", "\"\\/\\b\\f\\n\\r\\t\\\"\\\\\"", "\"a\tb\"", "\"\xc3\xa9\"",
        "\"\xc0\xaf\"", "\"\xe0\x80\xaf\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"", "\"\xf0\x9f\x98\x80\"",
        "\"\xff\"", "\"\xc3\"", "\"abc", "[1,]", "[,1]", "{,}", "{\"a\":1,}", "{\"a\" 1}", "{\"a\":1 \"b\":2}",
        "{\"a\":1,\"a\":2}", "{1:2}", " \t\r\n{ \"a\" : [ 1 , 2 ] } \n", "{} x", "[] []", "\xef\xbb\xbf{}", "[",
        "{", "]", "}", "[\"\\u00e9\":1]", "{\"k\\u00e9y\":{\"n\\\"e\":[true,false,null,-0.0,2e-3]}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"t\",\"arguments\":{\"value\":42}}}",
        "[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]", "NaN", "Infinity", "-Infinity", "1 2", "\"a\" \"b\"",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) same_as_jansson(cases[i], strlen(cases[i]));
    same_as_jansson("{\"a\":\"b\0c\"}", 11); /* a NUL byte inside a string */
    same_as_jansson("[1]\0", 4);              /* and after the value */
    /* mutations of real messages: deterministic xorshift, bytes from a JSON-ish alphabet */
    static const char *const seeds[] = {
        "{\"jsonrpc\":\"2.0\",\"id\":\"abc\",\"method\":\"tools/call\",\"params\":{\"name\":\"test_switch\",\"arguments\":{\"value\":42,\"s\":\"x\\u00e9\\n\",\"l\":[1.5,-2,true,null]}}}",
        "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}",
        "[{\"a\":[{},[],\"\\ud83d\\ude00\",\"\xc3\xa9\",1e5,-0.25]},null]",
    };
    static const char alphabet[] = "{}[]\",:\\u0123456789abcdefEe.-+ \ttrnl\x80\xc3\xa9\xed\xf0\x9f";
    unsigned long long x = 0x9e3779b97f4a7c15ULL;
    char buf[512];
    for (int iter = 0; iter < 40000; iter++) {
        const char *seed = seeds[iter % 3];
        size_t len = strlen(seed);
        memcpy(buf, seed, len);
        int edits = 1 + iter % 4;
        for (int k = 0; k < edits; k++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            size_t pos = (size_t)(x >> 8) % (len + 1);
            char c = alphabet[(x >> 40) % (sizeof alphabet - 1)];
            switch (x % 3) {
            case 0: if (pos < len) buf[pos] = c; break;                                                   /* replace */
            case 1: if (len + 1 < sizeof buf) { memmove(buf + pos + 1, buf + pos, len - pos); buf[pos] = c; len++; } break;
            case 2: if (pos < len) { memmove(buf + pos, buf + pos + 1, len - pos - 1); len--; } break;   /* delete */
            }
        }
        same_as_jansson(buf, len);
    }
}
END_TEST

START_TEST(jsonrpc_parse_errors) {
    gg_error e = GG_ERROR_INIT;
    ck_assert_ptr_null(mcp_jsonrpc_parse("{\"a\":", 5, 0, &e));
    ck_assert_str_eq(e.code, "parse_error");
    gg_error_clear(&e);
    const char bad_utf8[] = "{\"a\":\"\xff\xfe\"}";
    ck_assert_ptr_null(mcp_jsonrpc_parse(bad_utf8, sizeof bad_utf8 - 1, 0, &e));
    gg_error_clear(&e);
    char deep[300];
    memset(deep, '[', 100);
    memset(deep + 100, ']', 100);
    ck_assert_ptr_null(mcp_jsonrpc_parse(deep, 200, 64, &e));
    ck_assert(strstr(e.message, "deeper") != NULL);
    gg_error_clear(&e);
    json_t *v = mcp_jsonrpc_parse(deep, 200, 128, &e);
    ck_assert_ptr_nonnull(v);
    json_decref(v);
    /* brackets inside strings do not count */
    const char *strs = "{\"a\":\"[[[[[[[[[[\"}";
    v = mcp_jsonrpc_parse(strs, strlen(strs), 2, &e);
    ck_assert_ptr_nonnull(v);
    json_decref(v);
}
END_TEST

START_TEST(jsonrpc_classify_shapes) {
    json_t *v = J("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}");
    mcp_message m = classify(v);
    ck_assert_int_eq(m.kind, MCP_MSG_REQUEST);
    ck_assert(json_is_integer(m.id));
    json_decref(v);
    v = J("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
    ck_assert_int_eq(classify(v).kind, MCP_MSG_NOTIFICATION);
    json_decref(v);
    v = J("{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":{}}");
    ck_assert_int_eq(classify(v).kind, MCP_MSG_RESPONSE);
    json_decref(v);
    const char *invalid[] = {
        "5", "[]", "{\"id\":1,\"method\":\"ping\"}", "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":3}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":\"s\"}", "{\"jsonrpc\":\"2.0\",\"id\":1}",
        "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}",
    };
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
        v = J(invalid[i]);
        m = classify(v);
        ck_assert_msg(m.kind == MCP_MSG_INVALID, "%s should be invalid", invalid[i]);
        ck_assert_int_eq(m.error_code, MCP_INVALID_REQUEST);
        json_decref(v);
    }
    /* a valid id is echoed even when the message is invalid */
    v = J("{\"jsonrpc\":\"2.0\",\"id\":\"abc\",\"method\":5}");
    m = classify(v);
    ck_assert_str_eq(json_string_value(m.id), "abc");
    json_decref(v);
    /* members are matched by the whole key, as json_object_get matches them: keys that only
     * start with a member's name, or hold it before a NUL, are other members */
    v = J("{\"jsonrpc\":\"2.0\",\"ids\":1,\"i\":2,\"method\":\"ping\",\"paramsX\":\"s\",\"resul\":{}}");
    json_object_setn_new(v, "id\0x", 4, json_integer(3));
    json_object_setn_new(v, "params\0", 7, json_string("s"));
    m = classify(v);
    ck_assert_int_eq(m.kind, MCP_MSG_NOTIFICATION);
    ck_assert_ptr_null(m.id);
    ck_assert_ptr_null(m.params);
    ck_assert_str_eq(m.method, "ping");
    json_decref(v);
}
END_TEST

START_TEST(jsonrpc_serialize_keeps_id_type) {
    json_t *sid = json_string("1"), *iid = json_integer(1);
    char *a = mcp_jsonrpc_result_raw(sid, "{}"), *b = mcp_jsonrpc_result_raw(iid, "{}");
    ck_assert_str_eq(a, "{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"result\":{}}");
    ck_assert_str_eq(b, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}");
    char *c = mcp_jsonrpc_error(NULL, MCP_PARSE_ERROR, "Parse error", NULL);
    ck_assert_str_eq(c, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"Parse error\"}}");
    free(a);
    free(b);
    free(c);
    json_decref(sid);
    json_decref(iid);
}
END_TEST

/* ---------------------------------------------------------------- JSON Schema */

START_TEST(schema_types_and_objects) {
    const char *obj = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},"
                      "\"b\":{\"type\":[\"string\",\"null\"]}},\"required\":[\"a\"],\"additionalProperties\":false}";
    ck_assert_str_eq(check_schema(obj, "{\"a\":1}"), "");
    ck_assert_str_eq(check_schema(obj, "{\"a\":1.0,\"b\":null}"), "");
    ck_assert_str_eq(check_schema(obj, "{\"a\":1.5}"), "/a: expected integer, got number");
    ck_assert_str_eq(check_schema(obj, "{}"), "/a: required property 'a' is missing");
    ck_assert_str_eq(check_schema(obj, "{\"a\":1,\"c\":2}"), "/c: unexpected property 'c'");
    ck_assert_str_eq(check_schema(obj, "{\"a\":1,\"b\":3}"), "/b: expected null or string, got integer");
    ck_assert_str_eq(check_schema(obj, "[]"), ": expected object, got array");
    ck_assert_str_eq(check_schema("{\"additionalProperties\":{\"type\":\"string\"}}", "{\"x/y~\":1}"),
                     "/x~1y~0: expected string, got integer");
    ck_assert_str_eq(check_schema("{\"patternProperties\":{\"^n_\":{\"type\":\"number\"}},\"additionalProperties\":false}",
                                  "{\"n_1\":2,\"s\":1}"), "/s: unexpected property 's'");
    ck_assert_str_eq(check_schema("{\"minProperties\":2}", "{\"a\":1}"), ": must have at least 2 properties");
    ck_assert_str_eq(check_schema("true", "{\"a\":1}"), "");
    ck_assert_str_eq(check_schema("false", "1"), ": no value is allowed here");
}
END_TEST

START_TEST(schema_scalars) {
    ck_assert_str_eq(check_schema("{\"enum\":[\"a\",1]}", "1.0"), "");
    ck_assert_str_eq(check_schema("{\"enum\":[\"a\",1]}", "\"b\""), ": must be one of [\"a\",1]");
    ck_assert_str_eq(check_schema("{\"const\":{\"x\":[1]}}", "{\"x\":[1]}"), "");
    ck_assert_str_eq(check_schema("{\"const\":null}", "0"), ": must equal null");
    ck_assert_str_eq(check_schema("{\"minimum\":1,\"maximum\":3}", "0"), ": must be >= 1");
    ck_assert_str_eq(check_schema("{\"exclusiveMaximum\":3}", "3"), ": must be < 3");
    ck_assert_str_eq(check_schema("{\"maximum\":3,\"exclusiveMaximum\":true}", "3"), ": must be < 3");
    ck_assert_str_eq(check_schema("{\"multipleOf\":0.1}", "0.3"), "");
    ck_assert_str_eq(check_schema("{\"multipleOf\":2}", "3"), ": must be a multiple of 2");
    /* lengths count code points: é is 2 bytes, 😀 is 4 */
    ck_assert_str_eq(check_schema("{\"maxLength\":2}", "\"\xc3\xa9\xf0\x9f\x98\x80\""), "");
    ck_assert_str_eq(check_schema("{\"minLength\":3}", "\"\xc3\xa9\xf0\x9f\x98\x80\""),
                     ": must be at least 3 characters long");
    ck_assert_str_eq(check_schema("{\"pattern\":\"^[a-z]+\\\\d$\"}", "\"abc1\""), "");
    ck_assert_str_eq(check_schema("{\"pattern\":\"^[a-z]+$\"}", "\"ab1\""), ": must match pattern \"^[a-z]+$\"");
    ck_assert_str_eq(check_schema("{\"pattern\":\"b\"}", "\"abc\""), ""); /* unanchored */
    ck_assert_str_eq(check_schema("{\"pattern\":\"^\\\\u0041$\"}", "\"A\""), ""); /* ECMAScript \\u */
    /* non-strings ignore string keywords */
    ck_assert_str_eq(check_schema("{\"minLength\":3}", "1"), "");
}
END_TEST

START_TEST(schema_arrays_refs_combinators) {
    ck_assert_str_eq(check_schema("{\"items\":{\"type\":\"string\"},\"minItems\":1}", "[\"a\",2]"),
                     "/1: expected string, got integer");
    ck_assert_str_eq(check_schema("{\"minItems\":1}", "[]"), ": must have at least 1 items");
    ck_assert_str_eq(check_schema("{\"prefixItems\":[{\"type\":\"integer\"}],\"items\":false}", "[1,2]"),
                     "/1: no item allowed at this position");
    ck_assert_str_eq(check_schema("{\"uniqueItems\":true}", "[1,{\"a\":1},1.0]"),
                     ": items 0 and 2 are equal (uniqueItems)");
    ck_assert_str_eq(check_schema("{\"contains\":{\"const\":3}}", "[1,2]"), ": must contain at least one matching item");
    const char *tree = "{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"number\"},"
                       "\"kids\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/node\"}}},\"required\":[\"v\"]}},"
                       "\"$ref\":\"#/$defs/node\"}";
    ck_assert_str_eq(check_schema(tree, "{\"v\":1,\"kids\":[{\"v\":2,\"kids\":[]}]}"), "");
    ck_assert_str_eq(check_schema(tree, "{\"v\":1,\"kids\":[{\"v\":2,\"kids\":[{\"v\":\"x\"}]}]}"),
                     "/kids/0/kids/0/v: expected number, got string");
    ck_assert_str_eq(check_schema("{\"definitions\":{\"s\":{\"type\":\"string\"}},\"properties\":{\"a\":{\"$ref\":\"#/definitions/s\"}}}",
                                  "{\"a\":1}"), "/a: expected string, got integer");
    ck_assert_str_eq(check_schema("{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"number\"}]}", "true"),
                     ": must match at least one of the 2 schemas in anyOf");
    ck_assert_str_eq(check_schema("{\"oneOf\":[{\"minimum\":1},{\"maximum\":5}]}", "3"),
                     ": must match exactly one schema in oneOf (matched more than one)");
    ck_assert_str_eq(check_schema("{\"allOf\":[{\"minimum\":1},{\"maximum\":5}]}", "6"), ": must be <= 5");
    ck_assert_str_eq(check_schema("{\"not\":{\"type\":\"null\"}}", "null"), ": must not match the schema in \"not\"");
    ck_assert_str_eq(check_schema("{\"if\":{\"properties\":{\"k\":{\"const\":\"n\"}}},\"then\":{\"required\":[\"n\"]}}",
                                  "{\"k\":\"n\"}"), "/n: required property 'n' is missing");
}
END_TEST

static void count_err(void *user, const char *ptr, const char *msg) {
    (void)ptr;
    (void)msg;
    (*(int *)user)++;
}

START_TEST(schema_collects_all_and_rejects_bad_schemas) {
    json_t *s = J("{\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"}},\"required\":[\"c\",\"d\"]}");
    json_t *i = J("{\"a\":1,\"b\":2}");
    gg_error err = GG_ERROR_INIT;
    mcp_schema *c = mcp_schema_compile(s, &err);
    int n = 0;
    ck_assert_uint_eq(mcp_schema_validate_all(c, i, 10, count_err, &n), 4);
    ck_assert_int_eq(n, 4);
    mcp_schema_free(c);
    json_decref(s);
    json_decref(i);
    const char *bad[] = {"{\"type\":\"strin\"}", "{\"pattern\":\"(\"}", "{\"$ref\":\"#/nope\"}",
                         "{\"$ref\":\"http://x/y\"}", "{\"minLength\":-1}", "{\"properties\":[]}", "3"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        s = J(bad[k]);
        c = mcp_schema_compile(s, &err);
        ck_assert_msg(c == NULL, "%s should not compile", bad[k]);
        ck_assert_str_eq(err.code, "invalid_schema");
        gg_error_clear(&err);
        json_decref(s);
    }
    /* a $ref loop that consumes no instance is bounded, not infinite */
    s = J("{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/a\"}},\"$ref\":\"#/$defs/a\"}");
    c = mcp_schema_compile(s, &err);
    ck_assert_ptr_nonnull(c);
    i = J("1");
    ck_assert(!mcp_schema_validate(c, i, &err));
    ck_assert(strstr(err.message, "too deeply") != NULL);
    gg_error_clear(&err);
    mcp_schema_free(c);
    json_decref(s);
    json_decref(i);
}
END_TEST

/* ---------------------------------------------------------------- sessions */

START_TEST(sessions_sign_bind_revoke) {
    uint8_t secret[32] = {1, 2, 3};
    mcp_sessions *ss = mcp_sessions_new(secret, 3600, 100);
    char id[MCP_SESSION_ID_MAX];
    mcp_session s, t;
    gg_error err = GG_ERROR_INIT;
    ck_assert(mcp_session_issue(ss, "acme", "orders", "k1", "2025-06-18", id, &s));
    for (const char *p = id; *p; p++) ck_assert(*p >= 0x21 && *p <= 0x7e);
    ck_assert(mcp_session_check(ss, id, "acme", "orders", "k1", &t, &err));
    ck_assert_str_eq(t.version, "2025-06-18");
    ck_assert(memcmp(s.nonce, t.nonce, 16) == 0);
    /* another graph, tenant or key: refused, as not found */
    ck_assert(!mcp_session_check(ss, id, "acme", "billing", "k1", NULL, &err));
    ck_assert_str_eq(err.code, "not_found");
    gg_error_clear(&err);
    ck_assert(!mcp_session_check(ss, id, "evil", "orders", "k1", NULL, &err));
    gg_error_clear(&err);
    ck_assert(!mcp_session_check(ss, id, "acme", "orders", "k2", NULL, &err));
    gg_error_clear(&err);
    /* tampering breaks the MAC */
    char bad[MCP_SESSION_ID_MAX];
    strcpy(bad, id);
    bad[5] = bad[5] == 'A' ? 'B' : 'A';
    ck_assert(!mcp_session_check(ss, bad, "acme", "orders", "k1", NULL, &err));
    gg_error_clear(&err);
    ck_assert(!mcp_session_check(ss, "garbage!", "acme", "orders", "k1", NULL, &err));
    gg_error_clear(&err);
    /* another secret (another deployment) does not accept it */
    uint8_t other[32] = {9};
    mcp_sessions *ss2 = mcp_sessions_new(other, 3600, 100);
    ck_assert(!mcp_session_check(ss2, id, "acme", "orders", "k1", NULL, &err));
    gg_error_clear(&err);
    mcp_sessions_free(ss2);
    /* log level and calls */
    ck_assert_int_eq(mcp_session_log_level(ss, &t), MCP_LOG_OFF);
    mcp_session_set_log_level(ss, &t, MCP_LOG_INFO);
    ck_assert_int_eq(mcp_session_log_level(ss, &t), MCP_LOG_INFO);
    atomic_int flag = 0;
    json_t *rid = json_integer(4), *srid = json_string("4");
    mcp_session_track_call(ss, &t, rid, &flag);
    ck_assert(!mcp_session_cancel_call(ss, &t, srid)); /* "4" is not 4 */
    ck_assert_int_eq(flag, 0);
    ck_assert(mcp_session_cancel_call(ss, &t, rid));
    ck_assert_int_eq(flag, 1);
    flag = 0;
    /* revocation: later checks fail and running calls are cancelled */
    mcp_session_revoke(ss, &t);
    ck_assert_int_eq(flag, 1);
    mcp_session_untrack_call(ss, &t, rid);
    ck_assert(!mcp_session_check(ss, id, "acme", "orders", "k1", NULL, &err));
    gg_error_clear(&err);
    json_decref(rid);
    json_decref(srid);
    mcp_sessions_free(ss);
}
END_TEST

START_TEST(sessions_expire) {
    mcp_sessions *ss = mcp_sessions_new(NULL, 1, 10);
    char id[MCP_SESSION_ID_MAX];
    mcp_session s;
    gg_error err = GG_ERROR_INIT;
    ck_assert(mcp_session_issue(ss, "t", "g", "", "2025-11-25", id, &s));
    ck_assert(mcp_session_check(ss, id, "t", "g", NULL, NULL, &err));
    sleep(2);
    ck_assert(!mcp_session_check(ss, id, "t", "g", NULL, NULL, &err));
    gg_error_clear(&err);
    mcp_sessions_free(ss);
}
END_TEST

/* ---------------------------------------------------------------- dispatch */

/* An in-test provider: "echo" returns its arguments; "say" returns a string; "fail"
 * fails; "steps" reports 3 progress steps and 3 debug logs; "bad_out" breaks its
 * outputSchema. */
static json_t *tp_tools;

static json_t *tp_info(mcp_provider *p) {
    (void)p;
    return json_pack("{s:s,s:s}", "name", "testsrv", "version", "1.2.3");
}
static const char *tp_instr(mcp_provider *p) { (void)p; return "use echo"; }
static json_t *tp_list(mcp_provider *p) { (void)p; return json_incref(tp_tools); }
static json_t *tp_get(mcp_provider *p, const char *name) {
    (void)p;
    size_t i;
    json_t *t;
    json_array_foreach(tp_tools, i, t) if (strcmp(json_string_value(json_object_get(t, "name")), name) == 0) return json_incref(t);
    return NULL;
}
static json_t *tp_call(mcp_provider *p, const char *name, json_t *args, const mcp_call_ctx *ctx, gg_error *err) {
    (void)p;
    if (strcmp(name, "echo") == 0 || strcmp(name, "bad_out") == 0) return mcp_tool_result_from_value(args);
    if (strcmp(name, "say") == 0) {
        json_t *s = json_string("hello \"world\"");
        json_t *r = mcp_tool_result_from_value(s);
        json_decref(s);
        return r;
    }
    if (strcmp(name, "steps") == 0) {
        const mcp_sink *sink = ctx->client.sink;
        for (int i = 1; i <= 3; i++) {
            if (sink && sink->progress) sink->progress(sink->user, i, 3, NULL);
            if (sink && sink->progress) sink->progress(sink->user, i, 3, NULL); /* repeat: dropped */
            json_t *d = json_pack("{s:i}", "node", i);
            if (sink && sink->log) sink->log(sink->user, i == 3 ? "error" : "debug", "graph", d);
            json_decref(d);
            json_array_append_new(ctx->history.records, json_pack("{s:i}", "node", i));
        }
        return mcp_tool_result_from_value(json_object_get(args, "n"));
    }
    if (strcmp(name, "cancel") == 0) {
        while (!*ctx->run.cancelled) ;
        gg_error_set(err, "cancelled", "cancelled");
        return NULL;
    }
    gg_error_set(err, "execution_failed", "node x failed: boom");
    return NULL;
}
/* no destroy: nothing to release (the provider itself is freed by its last unref) */
static const mcp_provider_ops tp_ops = {
    .server_info = tp_info, .instructions = tp_instr, .list_tools = tp_list, .get_tool = tp_get, .call_tool = tp_call};

typedef struct emitted {
    char buf[4096];
    int n;
} emitted;

static void collect(void *user, const char *json, size_t len) {
    emitted *e = user;
    strncat(e->buf, json, sizeof e->buf - strlen(e->buf) - 2);
    strcat(e->buf, "\n");
    (void)len;
    e->n++;
}

/* ---- provider lifecycle: the last unref calls destroy once with the impl, then frees */

static int lc_destroyed;
static void lc_destroy(mcp_provider *p) {
    ck_assert_int_eq(*(int *)p->impl, 42);
    lc_destroyed++;
}
static const mcp_provider_ops lc_ops = {.list_tools = tp_list, .destroy = lc_destroy};

START_TEST(provider_refcount_and_destroy) {
    int impl = 42;
    lc_destroyed = 0;
    mcp_provider *p = mcp_provider_new(&lc_ops, &impl);
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_eq(p->ops, &lc_ops);
    ck_assert_ptr_eq(p->impl, &impl);
    ck_assert_ptr_eq(mcp_provider_ref(p), p);
    mcp_provider_unref(p);
    ck_assert_int_eq(lc_destroyed, 0); /* one reference left */
    mcp_provider_unref(p);
    ck_assert_int_eq(lc_destroyed, 1);
    mcp_provider_unref(NULL);
    /* a table without destroy (nothing to release) is fine too */
    mcp_provider_unref(mcp_provider_new(&tp_ops, NULL));
}
END_TEST

static mcp_server *srv;

static void setup(void) {
    tp_tools = J("[{\"name\":\"echo\",\"description\":\"d\",\"inputSchema\":{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"string\",\"maxLength\":3}},\"required\":[\"x\"]},"
                 "\"outputSchema\":{\"type\":\"object\"}},"
                 "{\"name\":\"say\",\"description\":\"d\",\"inputSchema\":{\"type\":\"object\"}},"
                 "{\"name\":\"fail\",\"description\":\"d\",\"inputSchema\":{\"type\":\"object\"}},"
                 "{\"name\":\"steps\",\"description\":\"d\",\"inputSchema\":{\"type\":\"object\"}},"
                 "{\"name\":\"cancel\",\"description\":\"d\",\"inputSchema\":{\"type\":\"object\"}},"
                 "{\"name\":\"bad_out\",\"description\":\"d\",\"inputSchema\":{\"type\":\"object\"},\"outputSchema\":{\"type\":\"object\",\"required\":[\"z\"]}}]");
    mcp_server_options opt = {2};
    gg_error err = GG_ERROR_INIT;
    mcp_provider *tp = mcp_provider_new(&tp_ops, NULL);
    ck_assert_ptr_nonnull(tp);
    srv = mcp_server_new(tp, &opt, &err);
    mcp_provider_unref(tp); /* the server holds its own reference */
    ck_assert_msg(srv != NULL, "%s", err.message);
}

static void teardown(void) {
    mcp_server_unref(srv);
    json_decref(tp_tools);
}

/* Dispatch a message text; returns the outcome (caller clears). */
static mcp_outcome dispatch(const char *text, mcp_log_level level) {
    json_t *v = J(text);
    mcp_message m;
    mcp_jsonrpc_classify(v, &m);
    mcp_request_ctx rc = {"2025-11-25", level, true};
    mcp_outcome out;
    mcp_server_dispatch(srv, &m, &rc, &out);
    json_decref(v);
    return out;
}

static json_t *body_of(mcp_outcome *o) {
    ck_assert_int_eq(o->kind, MCP_OUT_RESPONSE);
    return J(o->body);
}

START_TEST(dispatch_initialize_negotiates) {
    mcp_outcome o = dispatch("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"c\",\"version\":\"1\"}}}", MCP_LOG_OFF);
    json_t *b = body_of(&o);
    ck_assert(o.initialize);
    ck_assert_str_eq(o.negotiated_version, "2025-06-18");
    json_t *r = json_object_get(b, "result");
    ck_assert_str_eq(json_string_value(json_object_get(r, "protocolVersion")), "2025-06-18");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r, "serverInfo"), "name")), "testsrv");
    ck_assert_str_eq(json_string_value(json_object_get(r, "instructions")), "use echo");
    json_t *caps = json_object_get(r, "capabilities");
    ck_assert_ptr_nonnull(json_object_get(caps, "tools"));
    ck_assert_ptr_nonnull(json_object_get(caps, "logging"));
    /* only what the provider has: no prompts or templates, so nothing to complete */
    ck_assert_ptr_null(json_object_get(caps, "completions"));
    ck_assert_ptr_null(json_object_get(caps, "resources"));
    ck_assert_ptr_null(json_object_get(caps, "prompts"));
    json_decref(b);
    mcp_outcome_clear(&o);
    o = dispatch("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"1999-01-01\"}}", MCP_LOG_OFF);
    ck_assert_str_eq(o.negotiated_version, "2025-11-25");
    mcp_outcome_clear(&o);
    o = dispatch("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}", MCP_LOG_OFF);
    b = body_of(&o);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(b, "error"), "code")), MCP_INVALID_PARAMS);
    ck_assert(!o.initialize);
    json_decref(b);
    mcp_outcome_clear(&o);
}
END_TEST

START_TEST(dispatch_simple_methods) {
    mcp_outcome o = dispatch("{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"ping\"}", MCP_LOG_OFF);
    ck_assert_str_eq(o.body, "{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"result\":{}}");
    mcp_outcome_clear(&o);
    o = dispatch("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"logging/setLevel\",\"params\":{\"level\":\"warning\"}}", MCP_LOG_OFF);
    ck_assert_int_eq(o.set_log_level, MCP_LOG_WARNING);
    ck_assert_str_eq(o.body, "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}");
    mcp_outcome_clear(&o);
    o = dispatch("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"logging/setLevel\",\"params\":{\"level\":\"loud\"}}", MCP_LOG_OFF);
    ck_assert(strstr(o.body, "-32602") != NULL);
    ck_assert_int_eq(o.set_log_level, -1);
    mcp_outcome_clear(&o);
    o = dispatch("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"completion/complete\",\"params\":{\"ref\":{\"type\":\"ref/prompt\",\"name\":\"x\"},\"argument\":{\"name\":\"a\",\"value\":\"b\"}}}", MCP_LOG_OFF);
    ck_assert(strstr(o.body, "\"values\":[]") != NULL);
    mcp_outcome_clear(&o);
    o = dispatch("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"resources/list\"}", MCP_LOG_OFF);
    ck_assert(strstr(o.body, "-32601") != NULL);
    mcp_outcome_clear(&o);
    o = dispatch("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", MCP_LOG_OFF);
    ck_assert_int_eq(o.kind, MCP_OUT_ACCEPTED);
    ck_assert_ptr_null(o.body);
    mcp_outcome_clear(&o);
    o = dispatch("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":9}}", MCP_LOG_OFF);
    ck_assert_int_eq(o.kind, MCP_OUT_ACCEPTED);
    ck_assert_int_eq(json_integer_value(o.cancel_id), 9);
    mcp_outcome_clear(&o);
    o = dispatch("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\",\"params\":[1]}", MCP_LOG_OFF);
    ck_assert(strstr(o.body, "-32602") != NULL);
    mcp_outcome_clear(&o);
}
END_TEST

START_TEST(dispatch_tools_list_pages) {
    mcp_outcome o = dispatch("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", MCP_LOG_OFF);
    json_t *b = body_of(&o);
    json_t *r = json_object_get(b, "result");
    ck_assert_uint_eq(json_array_size(json_object_get(r, "tools")), 2);
    const char *cur = json_string_value(json_object_get(r, "nextCursor"));
    ck_assert_ptr_nonnull(cur);
    int pages = 1, tools = 2;
    char req[512];
    while (cur) {
        snprintf(req, sizeof req, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"cursor\":\"%s\"}}", cur);
        mcp_outcome_clear(&o);
        json_decref(b);
        o = dispatch(req, MCP_LOG_OFF);
        b = body_of(&o);
        r = json_object_get(b, "result");
        tools += (int)json_array_size(json_object_get(r, "tools"));
        cur = json_string_value(json_object_get(r, "nextCursor"));
        pages++;
    }
    ck_assert_int_eq(pages, 3);
    ck_assert_int_eq(tools, 6);
    json_decref(b);
    mcp_outcome_clear(&o);
    o = dispatch("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"cursor\":\"bogus\"}}", MCP_LOG_OFF);
    ck_assert(strstr(o.body, "-32602") != NULL);
    mcp_outcome_clear(&o);
}
END_TEST

/* Run a tools/call through dispatch + mcp_call_run; returns the parsed response. */
static json_t *call(const char *text, mcp_log_level level, emitted *em, const char **status) {
    mcp_outcome o = dispatch(text, level);
    if (o.kind == MCP_OUT_RESPONSE) {
        json_t *b = J(o.body);
        mcp_outcome_clear(&o);
        if (status) *status = "immediate";
        return b;
    }
    ck_assert_int_eq(o.kind, MCP_OUT_CALL);
    mcp_call *c = o.call;
    o.call = NULL;
    mcp_outcome_clear(&o);
    if (em) mcp_call_set_emitter(c, collect, em);
    char *resp = mcp_call_run(c, "req-1", "key", "tenant");
    json_t *b = J(resp);
    free(resp);
    static char st[32];
    snprintf(st, sizeof st, "%s", mcp_call_status(c));
    if (status) *status = st;
    mcp_call_free(c);
    return b;
}

START_TEST(dispatch_tools_call) {
    const char *st;
    json_t *b = call("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"x\":\"ab\"}}}", MCP_LOG_OFF, NULL, &st);
    json_t *r = json_object_get(b, "result");
    ck_assert_str_eq(st, "ok");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r, "structuredContent"), "x")), "ab");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(r, "content"), 0), "text")), "{\"x\":\"ab\"}");
    json_decref(b);
    /* schema violation → isError naming the path, no run */
    b = call("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"x\":\"abcd\"}}}", MCP_LOG_OFF, NULL, &st);
    r = json_object_get(b, "result");
    ck_assert_str_eq(st, "immediate");
    ck_assert(json_is_true(json_object_get(r, "isError")));
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(r, "content"), 0), "text")),
                     "Invalid arguments for tool echo: /x: must be at most 3 characters long");
    json_decref(b);
    b = call("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}", MCP_LOG_OFF, NULL, &st);
    ck_assert(strstr(json_string_value(json_object_get(json_array_get(json_object_get(json_object_get(b, "result"), "content"), 0), "text")), "/x: required") != NULL);
    json_decref(b);
    /* a string result is one text block holding the string itself */
    b = call("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"say\"}}", MCP_LOG_OFF, NULL, &st);
    r = json_object_get(b, "result");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(r, "content"), 0), "text")), "hello \"world\"");
    ck_assert_ptr_null(json_object_get(r, "structuredContent"));
    json_decref(b);
    /* execution error → isError with the message */
    b = call("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"fail\"}}", MCP_LOG_OFF, NULL, &st);
    r = json_object_get(b, "result");
    ck_assert_str_eq(st, "error");
    ck_assert(json_is_true(json_object_get(r, "isError")));
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(r, "content"), 0), "text")), "node x failed: boom");
    json_decref(b);
    /* output not matching outputSchema → isError */
    b = call("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"bad_out\",\"arguments\":{}}}", MCP_LOG_OFF, NULL, &st);
    ck_assert_str_eq(st, "error");
    ck_assert(strstr(json_string_value(json_object_get(json_array_get(json_object_get(json_object_get(b, "result"), "content"), 0), "text")), "/z: required") != NULL);
    json_decref(b);
    /* unknown tool and bad shapes are protocol errors */
    b = call("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"nope\"}}", MCP_LOG_OFF, NULL, &st);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(b, "error"), "code")), MCP_INVALID_PARAMS);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(b, "error"), "message")),
                     "Unknown tool: nope; tools: echo, say, fail, steps, cancel, bad_out"); /* few: listed */
    json_decref(b);
    b = call("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"ech\"}}", MCP_LOG_OFF, NULL, &st);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(b, "error"), "message")),
                     "Unknown tool: ech; did you mean 'echo'?; tools: echo, say, fail, steps, cancel, bad_out");
    json_decref(b);
    b = call("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":[1]}}", MCP_LOG_OFF, NULL, &st);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(b, "error"), "code")), MCP_INVALID_PARAMS);
    json_decref(b);
}
END_TEST

START_TEST(dispatch_progress_and_logs) {
    emitted em = {{0}, 0};
    const char *st;
    json_t *b = call("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"steps\",\"arguments\":{\"n\":5},\"_meta\":{\"progressToken\":\"tok\"}}}",
                     MCP_LOG_DEBUG, &em, &st);
    ck_assert_int_eq(em.n, 6); /* 3 progress (repeats dropped) + 3 logs */
    ck_assert(strstr(em.buf, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"tok\",\"progress\":1") != NULL);
    ck_assert(strstr(em.buf, "\"notifications/message\"") != NULL);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(json_object_get(b, "result"), "content"), 0), "text")), "5");
    json_decref(b);
    /* error level: only the error log; no token: no progress */
    memset(&em, 0, sizeof em);
    b = call("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"steps\",\"arguments\":{}}}", MCP_LOG_ERROR, &em, &st);
    ck_assert_int_eq(em.n, 1);
    ck_assert(strstr(em.buf, "\"level\":\"error\"") != NULL);
    json_decref(b);
    memset(&em, 0, sizeof em);
    b = call("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"steps\",\"arguments\":{}}}", MCP_LOG_OFF, &em, &st);
    ck_assert_int_eq(em.n, 0);
    json_decref(b);
}
END_TEST

START_TEST(dispatch_cancel) {
    mcp_outcome o = dispatch("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"cancel\"}}", MCP_LOG_OFF);
    ck_assert_int_eq(o.kind, MCP_OUT_CALL);
    *mcp_call_cancel_flag(o.call) = 1;
    char *resp = mcp_call_run(o.call, NULL, NULL, NULL);
    ck_assert(strstr(resp, "-32800") != NULL);
    ck_assert_str_eq(mcp_call_status(o.call), "cancelled");
    free(resp);
    mcp_outcome_clear(&o);
}
END_TEST


/* Mutated messages (byte flips, truncation, splices) through parse → classify → dispatch
 * and the schema validator: every input gets an answer and nothing crashes or leaks. */
START_TEST(robust_against_mutations) {
    static const char *seeds[] = {
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"x\":\"ab\"},\"_meta\":{\"progressToken\":7}}}",
        "{\"jsonrpc\":\"2.0\",\"id\":\"i\",\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{\"cursor\":\"cGFnZTox\"}}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1}}",
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"logging/setLevel\",\"params\":{\"level\":\"info\"}}",
    };
    unsigned seed = 12345;
    char buf[512];
    int answered = 0;
    for (int round = 0; round < 3000; round++) {
        const char *src = seeds[round % 5];
        size_t len = strlen(src);
        memcpy(buf, src, len);
        int flips = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 4;
        for (int k = 0; k < flips; k++) {
            seed = seed * 1103515245u + 12345u;
            size_t at = (seed >> 8) % len;
            buf[at] = (char)(seed >> 20);
        }
        if (round % 7 == 0) len = (seed >> 4) % len + 1; /* truncate */
        gg_error e = GG_ERROR_INIT;
        json_t *v = mcp_jsonrpc_parse(buf, len, 16, &e);
        gg_error_clear(&e);
        if (!v || json_is_array(v)) {
            json_decref(v);
            answered++;
            continue;
        }
        mcp_message m;
        mcp_jsonrpc_classify(v, &m);
        mcp_request_ctx rc = {"2025-11-25", MCP_LOG_DEBUG, true};
        mcp_outcome o;
        mcp_server_dispatch(srv, &m, &rc, &o);
        if (o.kind == MCP_OUT_CALL) {
            char *r = mcp_call_run(o.call, NULL, NULL, NULL);
            ck_assert_ptr_nonnull(r);
            free(r);
        } else if (o.kind == MCP_OUT_RESPONSE) {
            json_t *r = json_loads(o.body, 0, NULL);
            ck_assert_msg(r != NULL, "response is not JSON: %s", o.body);
            json_decref(r);
        }
        answered++;
        mcp_outcome_clear(&o);
        json_decref(v);
    }
    ck_assert_int_eq(answered, 3000);
}
END_TEST

int main(void) {
    Suite *s = suite_create("mcp");
    TCase *tc = tcase_create("jsonrpc");
    tcase_add_test(tc, jsonrpc_parse_errors);
    tcase_add_test(tc, jsonrpc_parser_agrees_with_jansson);
    tcase_add_test(tc, jsonrpc_classify_shapes);
    tcase_add_test(tc, jsonrpc_serialize_keeps_id_type);
    suite_add_tcase(s, tc);
    tc = tcase_create("schema");
    tcase_add_test(tc, schema_types_and_objects);
    tcase_add_test(tc, schema_scalars);
    tcase_add_test(tc, schema_arrays_refs_combinators);
    tcase_add_test(tc, schema_collects_all_and_rejects_bad_schemas);
    suite_add_tcase(s, tc);
    tc = tcase_create("sessions");
    tcase_add_test(tc, sessions_sign_bind_revoke);
    tcase_add_test(tc, sessions_expire);
    tcase_set_timeout(tc, 10);
    suite_add_tcase(s, tc);
    tc = tcase_create("provider");
    tcase_add_test(tc, provider_refcount_and_destroy);
    suite_add_tcase(s, tc);
    tc = tcase_create("dispatch");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, dispatch_initialize_negotiates);
    tcase_add_test(tc, dispatch_simple_methods);
    tcase_add_test(tc, dispatch_tools_list_pages);
    tcase_add_test(tc, dispatch_tools_call);
    tcase_add_test(tc, dispatch_progress_and_logs);
    tcase_add_test(tc, dispatch_cancel);
    tcase_add_test(tc, robust_against_mutations);
    suite_add_tcase(s, tc);
    return gg_check_run(s);
}
