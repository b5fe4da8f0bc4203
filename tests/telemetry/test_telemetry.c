/* test_telemetry.c — the W3C trace context parser (what a client controls: malformed ids,
 * all-zero ids, uppercase, future versions, tracestate bounds), span attributes staying
 * valid JSON within their fixed buffer whatever the values, spans as no-ops with telemetry
 * off, and the exporter's bounded queue: a dead collector never blocks span_end, the
 * overflow is counted and every ended span is accounted for. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telemetry/telemetry.h"
#include "../check_main.h"

START_TEST(traceparent_parse_and_format) {
    gg_trace_ctx c;
    const char *tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    ck_assert(gg_trace_parse(&c, tp, "a=1,b=2"));
    ck_assert(c.valid && c.flags == 1);
    ck_assert_str_eq(c.state, "a=1,b=2");
    char out[GG_TRACEPARENT_LEN + 1], id[33];
    gg_trace_format(&c, out);
    ck_assert_str_eq(out, tp);
    gg_trace_id_hex(&c, id);
    ck_assert_str_eq(id, "0af7651916cd43dd8448eb211c80319c");
    /* a later version may append fields after a dash; version ff is invalid */
    ck_assert(gg_trace_parse(&c, "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00-extra", NULL));
    ck_assert_int_eq(c.flags, 0);
    const char *bad[] = {
        "", "00", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-",  /* v00 is exact */
        "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "00-00000000000000000000000000000000-b7ad6b7169203331-01", /* zero trace id */
        "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01", /* zero span id */
        "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01", /* uppercase */
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333g-01",
        "00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01x",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(!gg_trace_parse(&c, bad[i], NULL), "accepted %s", bad[i]);
        ck_assert(!c.valid);
        gg_trace_format(&c, out);
        ck_assert_str_eq(out, "");
    }
    ck_assert(!gg_trace_parse(&c, NULL, NULL));
}
END_TEST

START_TEST(tracestate_bounded) {
    gg_trace_ctx c;
    const char *tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    char longer[GG_TRACESTATE_MAX + 10];
    memset(longer, 'a', sizeof longer - 1);
    longer[sizeof longer - 1] = 0;
    ck_assert(gg_trace_parse(&c, tp, longer));
    ck_assert_str_eq(c.state, ""); /* dropped whole, never cut */
    ck_assert(gg_trace_parse(&c, tp, "a=1\r\nX-Injected: yes"));
    ck_assert_str_eq(c.state, ""); /* no control characters reach a header */
}
END_TEST

START_TEST(spans_off_are_noops) {
    ck_assert(!gg_tel_enabled());
    gg_trace_ctx parent;
    ck_assert(gg_trace_parse(&parent, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", NULL));
    gg_span s;
    gg_span_begin(&s, &parent, GG_SPAN_SERVER, "x");
    ck_assert(!s.recording);
    ck_assert(s.ctx.valid); /* the client's context passes through */
    ck_assert(!memcmp(s.ctx.span_id, parent.span_id, 8));
    gg_span_attr_str(&s, "k", "v");
    gg_span_end(&s);
    gg_span_begin(&s, NULL, GG_SPAN_SERVER, "x");
    ck_assert(!s.recording && !s.ctx.valid);
    gg_tel_stats st;
    gg_tel_get_stats(&st);
    ck_assert_int_eq(st.ended, 0);
}
END_TEST

/* The attributes as the exporter writes them, parsed back. */
static json_t *attrs_json(const gg_span *s) {
    char *text = malloc(s->attrs_len + 3);
    snprintf(text, s->attrs_len + 3, "[%s]", s->attrs);
    json_t *v = json_loads(text, 0, NULL);
    free(text);
    return v;
}

START_TEST(attributes_stay_valid_json) {
    gg_tel_config cfg = {.enabled = true, .endpoint = "http://127.0.0.1:9/v1/traces", .sampling_ratio = 1,
                         .flush_ms = 60000, .timeout_ms = 200};
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_tel_start(&cfg, &err));
    gg_span s;
    gg_span_begin(&s, NULL, GG_SPAN_INTERNAL, "n");
    ck_assert(s.recording && s.ctx.valid && !s.has_parent);
    gg_span_attr_str(&s, "quote\"key", "line\nbreak \"quoted\" \\ \x01 é");
    gg_span_attr_int(&s, "n", -42);
    gg_span_attr_bool(&s, "b", true);
    char *big = malloc(3 * GG_SPAN_ATTRS_MAX);
    for (size_t i = 0; i < 3 * GG_SPAN_ATTRS_MAX - 1; i++) big[i] = i % 3 == 2 ? '"' : "\xc3\xa9"[i % 3]; /* é" */
    big[3 * GG_SPAN_ATTRS_MAX - 1] = 0;
    gg_span_attr_str(&s, "big", big); /* cut to fit, whole characters and escapes */
    gg_span_attr_str(&s, "after", "full"); /* no room left: left out, still valid */
    free(big);
    json_t *a = attrs_json(&s);
    ck_assert_msg(a != NULL, "attributes are not JSON: %.200s", s.attrs);
    ck_assert_int_ge(json_array_size(a), 4);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(a, 0), "key")), "quote\"key");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(json_array_get(a, 0), "value"), "stringValue")),
                     "line\nbreak \"quoted\" \\ \x01 é");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(json_array_get(a, 1), "value"), "intValue")), "-42");
    ck_assert(json_is_true(json_object_get(json_object_get(json_array_get(a, 2), "value"), "boolValue")));
    ck_assert_int_lt(s.attrs_len, GG_SPAN_ATTRS_MAX);
    json_decref(a);
    gg_span_set_error(&s, "bad \"thing\"\n");
    gg_span_end(&s);
    gg_span_end(&s); /* ends once */
    gg_tel_stats st;
    gg_tel_get_stats(&st);
    ck_assert_int_eq(st.ended, 1);
    gg_tel_stop();
    ck_assert(!gg_tel_enabled());
}
END_TEST

START_TEST(full_queue_drops_and_counts) {
    /* a port nothing listens on (discard, refused on loopback): every export fails */
    gg_tel_config cfg = {.enabled = true, .endpoint = "http://127.0.0.1:9/v1/traces", .sampling_ratio = 1,
                         .queue_spans = 4, .batch_spans = 2, .flush_ms = 10, .timeout_ms = 200};
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_tel_start(&cfg, &err));
    for (int i = 0; i < 2000; i++) {
        gg_span s;
        gg_span_begin(&s, NULL, GG_SPAN_INTERNAL, "burst");
        gg_span_end(&s);
    }
    gg_tel_stats st;
    gg_tel_get_stats(&st);
    ck_assert_int_eq(st.ended, 2000);
    ck_assert_int_gt(st.dropped, 0);
    ck_assert_int_le(st.queued, 4);
    gg_tel_stop();
    gg_tel_get_stats(&st);
    ck_assert_int_eq(st.exported, 0);
    ck_assert_int_eq(st.dropped + st.failed, 2000); /* every span accounted for */
}
END_TEST

START_TEST(bad_config_refused) {
    gg_error err = GG_ERROR_INIT;
    gg_tel_config cfg = {.enabled = true, .endpoint = "file:///etc/passwd", .sampling_ratio = 1};
    ck_assert(!gg_tel_start(&cfg, &err));
    ck_assert_str_eq(err.code, "invalid_config");
    gg_error_clear(&err);
    cfg.endpoint = "http://127.0.0.1:9/";
    cfg.sampling_ratio = 2;
    ck_assert(!gg_tel_start(&cfg, &err));
    gg_error_clear(&err);
    const char *hdrs[] = {"X-Ok: 1", "X-Bad: 1\r\nX-Injected: 2", NULL};
    cfg.sampling_ratio = 1;
    cfg.headers = hdrs;
    ck_assert(!gg_tel_start(&cfg, &err));
    gg_error_clear(&err);
    ck_assert(!gg_tel_enabled());
    cfg.enabled = false; /* off: nothing started, not an error */
    ck_assert(gg_tel_start(&cfg, &err));
    ck_assert(!gg_tel_enabled());
}
END_TEST

START_TEST(sampling_follows_parent_and_ratio) {
    gg_tel_config cfg = {.enabled = true, .endpoint = "http://127.0.0.1:9/v1/traces", .sampling_ratio = 0,
                         .flush_ms = 60000, .timeout_ms = 200};
    gg_error err = GG_ERROR_INIT;
    ck_assert(gg_tel_start(&cfg, &err));
    gg_span s;
    gg_span_begin(&s, NULL, GG_SPAN_SERVER, "root");
    ck_assert(!s.recording && s.ctx.valid && !(s.ctx.flags & 1)); /* ratio 0: not kept, still propagated */
    gg_trace_ctx sampled;
    ck_assert(gg_trace_parse(&sampled, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", NULL));
    gg_span_begin(&s, &sampled, GG_SPAN_SERVER, "child");
    ck_assert(s.recording); /* the client's sampled flag wins */
    ck_assert(!memcmp(s.ctx.trace_id, sampled.trace_id, 16) && !memcmp(s.parent, sampled.span_id, 8));
    ck_assert(memcmp(s.ctx.span_id, sampled.span_id, 8) != 0);
    gg_span_end(&s);
    gg_tel_stop();
}
END_TEST

int main(void) {
    Suite *s = suite_create("telemetry");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, traceparent_parse_and_format);
    tcase_add_test(tc, tracestate_bounded);
    tcase_add_test(tc, spans_off_are_noops);
    tcase_add_test(tc, attributes_stay_valid_json);
    tcase_add_test(tc, full_queue_drops_and_counts);
    tcase_add_test(tc, bad_config_refused);
    tcase_add_test(tc, sampling_follows_parent_and_ratio);
    suite_add_tcase(s, tc);
    return gg_check_run(s);
}
