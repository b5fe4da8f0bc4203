/* Unit tests for src/mcp/sse_reader.c, the reader of downstream listen streams: events
 * split anywhere between pieces (CRLF included), the fields the spec names, and the bounds
 * a hostile server meets (a line or an event past max_bytes stops the reader). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/loop.h"
#include "../check_main.h"

typedef struct got {
    char data[8][64];
    int n;
    int stop_at; /* return false for this event (1-based), 0 never */
} got;

static bool on_event(void *user, const char *d, size_t n) {
    got *g = user;
    if (g->n < 8) snprintf(g->data[g->n], sizeof g->data[0], "%.*s", (int)n, d);
    g->n++;
    return g->stop_at != g->n;
}

/* Feed s one byte at a time: every split point is a piece boundary once. */
static bool feed_bytes(mcp_sse_reader *r, const char *s) {
    for (size_t i = 0; s[i]; i++)
        if (!mcp_sse_reader_feed(r, s + i, 1)) return false;
    return true;
}

START_TEST(events_in_pieces) {
    const char *stream = ": keep-alive\r\nid: 7\r\nretry: 1500\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n"
                         "event: other\ndata: skipped\n\ndata:x\rdata: y\r\r\ndata: tail\n";
    for (int bytes = 0; bytes < 2; bytes++) {
        got g = {0};
        mcp_sse_reader r;
        mcp_sse_reader_init(&r, 1024, on_event, &g);
        ck_assert(bytes ? feed_bytes(&r, stream) : mcp_sse_reader_feed(&r, stream, strlen(stream)));
        ck_assert_int_eq(g.n, 2); /* the named event is not a message; "tail" has no blank line yet */
        ck_assert_str_eq(g.data[0], "{\"a\":\n1}");
        ck_assert_str_eq(g.data[1], "x\ny");
        ck_assert_str_eq(r.last_id, "7");
        ck_assert_int_eq(r.retry_ms, 1500);
        ck_assert(mcp_sse_reader_feed(&r, "\n", 1));
        ck_assert_int_eq(g.n, 3);
        ck_assert_str_eq(g.data[2], "tail");
        mcp_sse_reader_free(&r);
    }
}
END_TEST

START_TEST(bounds) {
    got g = {0};
    mcp_sse_reader r;
    mcp_sse_reader_init(&r, 64, on_event, &g);
    char line[200];
    memset(line, 'x', sizeof line);
    /* a line with no end, in small pieces: stopped once it passes the bound */
    bool ok = mcp_sse_reader_feed(&r, "data: ", 6);
    for (int i = 0; ok && i < 10; i++) ok = mcp_sse_reader_feed(&r, line, 10);
    ck_assert(!ok);
    ck_assert(strstr(r.error, "line") != NULL);
    ck_assert(r.line.cap <= 2 * 64 + 64); /* nothing buffered past the bound */
    ck_assert(!mcp_sse_reader_feed(&r, "\n\n", 2)); /* stays stopped */
    mcp_sse_reader_free(&r);
    /* many short data lines adding up past the bound in one event */
    mcp_sse_reader_init(&r, 64, on_event, &g);
    ok = true;
    for (int i = 0; ok && i < 20; i++) ok = mcp_sse_reader_feed(&r, "data: 0123456789\n", 17);
    ck_assert(!ok);
    ck_assert(strstr(r.error, "event") != NULL);
    ck_assert_int_eq(g.n, 0);
    mcp_sse_reader_free(&r);
    /* an id longer than we keep is not kept; a retry with junk is ignored */
    mcp_sse_reader_init(&r, 1024, on_event, &g);
    char longid[400] = "id: ";
    memset(longid + 4, 'i', 300);
    strcpy(longid + 304, "\nretry: 12x\n\n");
    ck_assert(mcp_sse_reader_feed(&r, longid, strlen(longid)));
    ck_assert_str_eq(r.last_id, "");
    ck_assert_int_eq(r.retry_ms, -1);
    mcp_sse_reader_free(&r);
}
END_TEST

START_TEST(stopped_by_the_callback) {
    got g = {.stop_at = 1};
    mcp_sse_reader r;
    mcp_sse_reader_init(&r, 1024, on_event, &g);
    ck_assert(!mcp_sse_reader_feed(&r, "data: a\n\ndata: b\n\n", 18));
    ck_assert_int_eq(g.n, 1);
    ck_assert_ptr_nonnull(r.error);
    mcp_sse_reader_free(&r);
}
END_TEST

int main(void) {
    Suite *s = suite_create("sse_reader");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, events_in_pieces);
    tcase_add_test(tc, bounds);
    tcase_add_test(tc, stopped_by_the_callback);
    suite_add_tcase(s, tc);
    return gg_check_run(s);
}
