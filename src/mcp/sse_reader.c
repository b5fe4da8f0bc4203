/* sse_reader.c — an incremental text/event-stream parser (the WHATWG "server-sent events"
 * interpretation: CRLF, LF or CR line ends, data/event/id/retry fields, comments) for the
 * downstream listen streams of client_http.c. Bytes arrive in whatever pieces the network
 * gives; nothing is allocated past the reader's bound: a line or an event's data longer than
 * max_bytes stops the reader with an error instead (a hostile server cannot make us buffer
 * without end). */
#include "mcp/loop.h"

#include <stdlib.h>
#include <string.h>

void mcp_sse_reader_init(mcp_sse_reader *r, size_t max_bytes, mcp_sse_event_fn fn, void *user) {
    memset(r, 0, sizeof *r);
    r->max_bytes = max_bytes;
    r->on_event = fn;
    r->user = user;
    r->retry_ms = -1;
}

void mcp_sse_reader_free(mcp_sse_reader *r) {
    gg_strbuf_free(&r->line);
    gg_strbuf_free(&r->data);
}

static bool fail(mcp_sse_reader *r, const char *why) {
    r->error = why;
    return false;
}

/* A blank line: the event is complete (type "message" or none reaches on_event). */
static bool dispatch(mcp_sse_reader *r) {
    bool message = !r->event_named;
    r->event_named = false;
    if (!r->has_data) return true;
    r->has_data = false;
    size_t n = r->data.len;
    if (n && r->data.data[n - 1] == '\n') n--; /* the spec drops the last data line's LF */
    bool go = true;
    if (message) {
        r->events++;
        go = r->on_event(r->user, n ? r->data.data : "", n);
    }
    gg_strbuf_reset(&r->data);
    return go ? true : fail(r, r->error ? r->error : "stopped by the reader");
}

/* One complete line (without its end). */
static bool take_line(mcp_sse_reader *r, const char *s, size_t n) {
    if (n == 0) return dispatch(r);
    if (s[0] == ':') return true; /* a comment: keep-alives */
    const char *colon = memchr(s, ':', n);
    size_t fl = colon ? (size_t)(colon - s) : n;
    const char *v = colon ? colon + 1 : s + n;
    size_t vl = (size_t)(s + n - v);
    if (vl && *v == ' ') v++, vl--;
    if (fl == 4 && !memcmp(s, "data", 4)) {
        if (r->data.len + vl + 1 > r->max_bytes) return fail(r, "an event larger than the bound");
        if (!gg_strbuf_append(&r->data, v, vl) || !gg_strbuf_putc(&r->data, '\n')) return fail(r, "out of memory");
        r->has_data = true;
    } else if (fl == 5 && !memcmp(s, "event", 5)) {
        r->event_named = !(vl == 7 && !memcmp(v, "message", 7)) && vl > 0;
    } else if (fl == 2 && !memcmp(s, "id", 2)) {
        if (!memchr(v, '\0', vl) && vl < sizeof r->last_id) { /* longer ids are not kept (nor resent) */
            memcpy(r->last_id, v, vl);
            r->last_id[vl] = '\0';
        }
    } else if (fl == 5 && !memcmp(s, "retry", 5)) {
        long ms = 0;
        size_t i = 0;
        for (; i < vl && v[i] >= '0' && v[i] <= '9' && ms < 100000000; i++) ms = ms * 10 + (v[i] - '0');
        if (vl && i == vl) r->retry_ms = ms;
    } /* other fields are ignored, as the spec says */
    return true;
}

bool mcp_sse_reader_feed(mcp_sse_reader *r, const char *buf, size_t n) {
    if (r->error) return false;
    size_t i = 0;
    if (r->after_cr && n && buf[0] == '\n') i = 1; /* the LF of a CRLF split between pieces */
    r->after_cr = false;
    while (i < n) {
        const char *s = buf + i;
        size_t left = n - i, k = 0;
        while (k < left && s[k] != '\n' && s[k] != '\r') k++;
        if (k == left) { /* no end yet: keep the piece */
            if (r->line.len + k > r->max_bytes) return fail(r, "a line longer than the bound");
            if (!gg_strbuf_append(&r->line, s, k)) return fail(r, "out of memory");
            return true;
        }
        bool ok;
        if (r->line.len) {
            if (r->line.len + k > r->max_bytes) return fail(r, "a line longer than the bound");
            ok = gg_strbuf_append(&r->line, s, k) ? take_line(r, r->line.data, r->line.len) : fail(r, "out of memory");
            gg_strbuf_reset(&r->line);
        } else {
            if (k > r->max_bytes) return fail(r, "a line longer than the bound");
            ok = take_line(r, s, k);
        }
        if (!ok) return false;
        i += k + 1;
        if (s[k] == '\r') {
            if (i < n && buf[i] == '\n') i++;
            else if (i == n) r->after_cr = true;
        }
    }
    return true;
}
