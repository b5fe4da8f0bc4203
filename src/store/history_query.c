/* history_query.c — reading execution history from history_batches (migrations/0019):
 * listing runs and getting one by id, over the newest version of each run.
 *
 * A row holds one tenant's records of one writer commit as JSON lines (GG_HL_* positions),
 * oldest start first, cut so that last_ms - first_ms <= GG_HIST_SPAN_MS. So every version
 * of a run started at t lies in a row with first_ms <= t <= last_ms <= t + GG_HIST_SPAN_MS:
 * a get reads the few rows with last_ms in [t, t + SPAN], and a listing walking rows by
 * last_ms descending has seen every version of the runs started after the last_ms of the
 * row it read last. A run written twice (running, then final; interrupted, then final after
 * a journal replay) has two versions: any final state wins over running, interrupted loses
 * to another final, then the newer row (the later line within one). Marking interrupted
 * runs and retention: history_write.c. */
#include "store/store_internal.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- records ------------------------------------------------------------------------------ */

/* A row's body kept while records of a listing point into it (counted references). */
typedef struct row_body {
    int refs;
    size_t len;
    char text[];
} row_body;

static void body_release(row_body *b) {
    if (b && --b->refs == 0) free(b);
}

/* One record: its line, as text in a row's body (listing: decoded only for the runs it
 * answers with, and then without its texts) and/or decoded (get: whole), where it was read. */
typedef struct hist_rec {
    json_t *line, *tenant; /* owned references; line NULL until decoded */
    row_body *body;        /* a reference when text points into it */
    const char *text;
    size_t len;
    long long rowid, started;
    int pos, status;       /* pos: line number within its row */
    char id[33];
} hist_rec;

static void rec_clear(hist_rec *r) {
    json_decref(r->line);
    json_decref(r->tenant);
    body_release(r->body);
    r->line = r->tenant = NULL;
    r->body = NULL;
}

static const char *field_str(const hist_rec *r, int f) { return json_string_value(json_array_get(r->line, (size_t)f)); }
static long long field_int(const hist_rec *r, int f) { return json_integer_value(json_array_get(r->line, (size_t)f)); }

/* Any final state over running, interrupted under the other finals. */
static int status_rank(int status) {
    return status == GG_EXEC_RUNNING ? 0 : status == GG_EXEC_INTERRUPTED ? 1 : 2;
}

/* true when b is a newer version than a (of the same run) */
static bool rec_newer(const hist_rec *a, const hist_rec *b) {
    int ra = status_rank(a->status), rb = status_rank(b->status);
    if (ra != rb) return rb > ra;
    if (a->rowid != b->rowid) return b->rowid > a->rowid;
    return b->pos > a->pos;
}

/* Parse one whole line into r (false when it is not a record: such a line is skipped, so
 * one damaged line does not hide the rest of a tenant's history). */
static bool rec_parse(const char *p, size_t n, hist_rec *r) {
    json_t *l = json_loadb(p, n, JSON_ALLOW_NUL, NULL);
    const char *id = json_string_value(json_array_get(l, GG_HL_ID));
    json_t *st = json_array_get(l, GG_HL_STATUS), *start = json_array_get(l, GG_HL_STARTED);
    if (!id || strlen(id) != 32 || json_array_size(l) < GG_HL_FIELDS || !json_is_integer(st) ||
        !json_is_integer(start)) {
        json_decref(l);
        return false;
    }
    r->line = l;
    memcpy(r->id, id, 33);
    r->status = (int)json_integer_value(st);
    r->started = json_integer_value(start);
    return true;
}

/* ---- a line's fields without decoding it ---------------------------------------------------
 * A listing reads whole rows but answers with a few runs: it takes id, status and start from
 * the text, compares graph and tool there, and decodes only the runs it answers with (the
 * texts, arguments/result/nodes, being most of a line, are never decoded). Lines are compact
 * JSON (the writer's) or PostgreSQL's jsonb text (a space after each comma). */

static bool json_space(char ch) { return ch == ' ' || ch == '\t' || ch == '\r'; }

/* The end of the JSON value at p, NULL when the text ends first. */
static const char *skip_value(const char *p, const char *end) {
    if (p >= end) return NULL;
    if (*p != '"' && *p != '[' && *p != '{') { /* number, true, false, null */
        while (p < end && *p != ',' && *p != ']' && *p != '}' && !json_space(*p)) p++;
        return p;
    }
    int depth = 0;
    for (; p < end; p++) {
        if (*p == '"') {
            for (p++; p < end && *p != '"'; p++)
                if (*p == '\\') p++;
            if (p >= end) return NULL;
            if (depth == 0) return p + 1;
        } else if (*p == '[' || *p == '{') {
            depth++;
        } else if (*p == ']' || *p == '}') {
            if (--depth == 0) return p + 1;
        }
    }
    return NULL;
}

/* The first `fields` elements of a line "[a,b,...]" of GG_HL_FIELDS: at[i] to to[i]
 * (the texts come late in a line: most reads stop before them). */
static bool split_line(const char *p, size_t n, int fields, const char *at[GG_HL_FIELDS], const char *to[GG_HL_FIELDS]) {
    const char *end = p + n;
    if (n < 2 || *p != '[') return false;
    p++;
    for (int i = 0; i < fields; i++) {
        while (p < end && json_space(*p)) p++;
        const char *q = skip_value(p, end);
        if (!q) return false;
        at[i] = p, to[i] = q;
        while (q < end && json_space(*q)) q++;
        if (q >= end || (*q != ',' && !(*q == ']' && i == GG_HL_FIELDS - 1))) return false;
        p = q + 1;
    }
    return true;
}

static bool token_int(const char *at, const char *to, long long *v) {
    char buf[24];
    if (to - at < 1 || to - at >= (long)sizeof buf) return false;
    memcpy(buf, at, (size_t)(to - at));
    buf[to - at] = '\0';
    char *e;
    *v = strtoll(buf, &e, 10);
    return *e == '\0';
}

/* Digits (optionally negative) at p: the end of the number, NULL when none. */
static const char *scan_int(const char *p, const char *end, long long *v) {
    bool neg = p < end && *p == '-';
    const char *from = p += neg;
    long long x = 0;
    while (p < end && *p >= '0' && *p <= '9' && p - from < 18) x = x * 10 + (*p++ - '0');
    if (p == from) return NULL;
    *v = neg ? -x : x;
    return p;
}

/* r's id, status and start from its text (false: not a record, skipped as in rec_parse). */
static bool rec_scan_head(hist_rec *r) {
    const char *p = r->text, *end = r->text + r->len, *id;
    long long st;
    if (r->len > 40 && p[0] == '[' && p[1] == '"' && p[34] == '"' && p[35] == ',') { /* the writer's compact line */
        id = p + 2;
        p = scan_int(p + 36, end, &st);
        p = p && p < end && *p == ',' ? scan_int(p + 1, end, &r->started) : NULL;
        if (!p || p >= end || *p != ',') return false;
    } else {
        const char *at[GG_HL_FIELDS], *to[GG_HL_FIELDS];
        if (!split_line(r->text, r->len, GG_HL_STARTED + 1, at, to) || to[GG_HL_ID] - at[GG_HL_ID] != 34 ||
            *at[GG_HL_ID] != '"' || !token_int(at[GG_HL_STATUS], to[GG_HL_STATUS], &st) ||
            !token_int(at[GG_HL_STARTED], to[GG_HL_STARTED], &r->started))
            return false;
        id = at[GG_HL_ID] + 1;
    }
    memcpy(r->id, id, 32);
    r->id[32] = '\0';
    if (memchr(r->id, '\\', 32) || memchr(r->id, '"', 32)) return false;
    r->status = (int)st;
    return true;
}

/* Whether field f of r's text is the string s. */
static bool field_is(const hist_rec *r, int f, const char *s) {
    const char *at[GG_HL_FIELDS], *to[GG_HL_FIELDS];
    if (!split_line(r->text, r->len, f + 1, at, to) || *at[f] != '"') return false;
    size_t n = (size_t)(to[f] - at[f]) - 2;
    if (!memchr(at[f] + 1, '\\', n)) return strlen(s) == n && memcmp(at[f] + 1, s, n) == 0;
    json_t *v = json_loadb(at[f], n + 2, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL); /* escapes: decode */
    bool eq = json_is_string(v) && strcmp(json_string_value(v), s) == 0;
    json_decref(v);
    return eq;
}

/* One element of a line as a JSON value: strings without escapes, integers and null
 * directly (most of a listing's work otherwise is jansson's parser), the rest parsed. */
static json_t *token_json(const char *at, const char *to) {
    size_t n = (size_t)(to - at);
    long long v;
    if (n >= 2 && *at == '"' && !memchr(at + 1, '\\', n - 2)) return json_stringn(at + 1, n - 2);
    if (n == 4 && memcmp(at, "null", 4) == 0) return json_null();
    const char *e = scan_int(at, to, &v);
    if (e == to) return json_integer(v);
    return json_loadb(at, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
}

/* Decode r's text into r->line, its texts (arguments, result, nodes) left null: what the
 * listing shows. */
static bool rec_decode_head(hist_rec *r) {
    const char *at[GG_HL_FIELDS], *to[GG_HL_FIELDS];
    if (!split_line(r->text, r->len, GG_HL_FIELDS, at, to)) return false;
    r->line = json_array();
    for (int i = 0; r->line && i < GG_HL_FIELDS; i++) {
        bool text = i == GG_HL_ARGUMENTS || i == GG_HL_RESULT || i == GG_HL_NODES;
        json_t *v = text ? json_null() : token_json(at[i], to[i]);
        if (!v || json_array_append_new(r->line, v) != 0) {
            json_decref(r->line);
            r->line = NULL;
        }
    }
    return r->line != NULL;
}

/* Whether a line is the record of id: it opens with ["<id>" (the writer's compact form
 * and PostgreSQL's jsonb text alike), checked before paying for a parse. */
static bool line_is(const char *p, size_t n, const char *id) {
    if (n < 36 || p[0] != '[') return false;
    size_t i = 1;
    while (i < n && json_space(p[i])) i++;
    return n - i >= 34 && p[i] == '"' && memcmp(p + i + 1, id, 32) == 0 && p[i + 33] == '"';
}

typedef bool (*rec_fn)(void *user, hist_rec *r); /* takes r's references; false: out of memory */

/* Hand each record of a row's body to fn: with body (a listing), every record, its text
 * pointing into body; without, only id's, decoded. */
static bool scan_body(const char *text, size_t len, row_body *body, json_t *tenant, long long rowid, const char *id,
                      rec_fn fn, void *user) {
    int pos = 0;
    for (const char *p = text, *end = text + len; p < end; pos++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        hist_rec r = {.rowid = rowid, .pos = pos, .text = p, .len = n};
        if (body ? rec_scan_head(&r) : line_is(p, n, id) && rec_parse(p, n, &r)) {
            if (!body) r.text = NULL, r.len = 0; /* the statement's memory: decoded already */
            r.tenant = json_incref(tenant);
            if (body) body->refs++;
            r.body = body;
            if (!fn(user, &r)) return false;
        }
        p += n + 1;
    }
    return true;
}

/* ---- the API's objects -------------------------------------------------------------------- */

static json_t *str_or_null(const hist_rec *r, int f) {
    const char *s = field_str(r, f);
    return s ? json_string(s) : json_null();
}

static const char *str_or_empty(const hist_rec *r, int f) {
    const char *s = field_str(r, f);
    return s ? s : "";
}

/* The listing's object of a run (the same fields and values as the executions row gave). */
static json_t *exec_object(const hist_rec *r) {
    json_t *o = json_pack("{s:s,s:O,s:s,s:I,s:s,s:s?,s:s,s:o,s:o}",
                          "id", r->id,
                          "tenant", r->tenant,
                          "graph", str_or_empty(r, GG_HL_GRAPH),
                          "version", (json_int_t)field_int(r, GG_HL_VERSION),
                          "tool", str_or_empty(r, GG_HL_TOOL),
                          "key_id", field_str(r, GG_HL_KEY_ID),
                          "status", gg_exec_status_name((gg_exec_status)r->status),
                          "started_at", gg_store_time_json(r->started),
                          "finished_at", gg_store_time_json(field_int(r, GG_HL_FINISHED)));
    if (!o) return NULL;
    /* a running version has no duration (the row's column was NULL) */
    json_object_set_new(o, "duration_ms", r->status == GG_EXEC_RUNNING ? json_null()
                        : json_real(gg_store_round_us((double)field_int(r, GG_HL_DURATION_US) / 1000.0)));
    json_object_set_new(o, "error", str_or_null(r, GG_HL_ERROR));
    json_object_set_new(o, "trace_id", str_or_null(r, GG_HL_TRACE_ID));
    json_object_set_new(o, "parent_id", str_or_null(r, GG_HL_PARENT));
    return o;
}

/* A stored value as the API shows it: absent → null (a stored string stays a string). */
static json_t *value_or_null(json_t *v) { return v ? json_incref(v) : json_null(); }

static json_t *error_or_null(json_t *e) {
    if (json_is_string(e)) return json_incref(e);
    if (json_is_object(e)) {
        json_t *m = json_object_get(e, "message");
        return json_is_string(m) ? json_incref(m) : json_string("error");
    }
    return json_null();
}

/* Below this a positional node's time is an offset from the run's started_at, above it an
 * absolute wall-clock time (1973-03-03): a run never lasts years, a clock is never that
 * old. So a writer without the run's start at hand (one writing the text as the run goes)
 * can give absolute times. */
#define ABSOLUTE_MS_MIN 100000000000LL

static long long node_time(json_t *v, long long run_start) {
    long long t = json_integer_value(v);
    return t < ABSOLUTE_MS_MIN ? run_start + t : t;
}

/* The run's context after node n: its output under its id, or its id gone when it had
 * none (undefined), as the executor keeps each node's latest output. */
static void context_add(json_t *context, json_t *n) {
    json_t *id = json_array_get(n, 1), *out = json_array_get(n, 6);
    if (!context || !json_is_string(id)) return;
    if (!out || json_is_null(out)) json_object_del(context, json_string_value(id));
    else json_object_set(context, json_string_value(id), out);
}

/* One stored node as the API's object: from the positional form of 0003 (times relative
 * to the run's start, or absolute, see ABSOLUTE_MS_MIN; an input may be
 * GG_HISTORY_CONTEXT_REF, read from context) or from an executor-shaped object (absolute
 * times). NULL when it is neither or memory ran out. */
static json_t *node_object(json_t *n, long long run_start, json_t *context) {
    json_t *idx, *id, *type, *start, *end, *dur, *in, *out, *err;
    long long t0, t1;
    if (json_is_array(n)) {
        idx = json_array_get(n, 0), id = json_array_get(n, 1), type = json_array_get(n, 2);
        start = json_array_get(n, 3), end = json_array_get(n, 4), dur = json_array_get(n, 5);
        out = json_array_get(n, 6), in = json_array_get(n, 7), err = json_array_get(n, 8);
        t0 = node_time(start, run_start), t1 = node_time(end, run_start);
        if (json_is_string(in) && strcmp(json_string_value(in), GG_HISTORY_CONTEXT_REF) == 0) in = context;
    } else if (json_is_object(n)) {
        idx = json_object_get(n, "executionIndex"), id = json_object_get(n, "nodeId");
        type = json_object_get(n, "nodeType"), start = json_object_get(n, "startTime");
        end = json_object_get(n, "endTime"), dur = json_object_get(n, "duration");
        out = json_object_get(n, "output"), in = json_object_get(n, "input"), err = json_object_get(n, "error");
        t0 = json_integer_value(start), t1 = json_integer_value(end);
    } else {
        return NULL;
    }
    return json_pack("{s:I,s:s,s:s,s:o,s:o,s:f,s:o,s:o,s:o}",
                     "index", json_integer_value(idx),
                     "node_id", json_is_string(id) ? json_string_value(id) : "",
                     "node_type", json_is_string(type) ? json_string_value(type) : "",
                     "started_at", gg_store_time_json(t0),
                     "finished_at", gg_store_time_json(t1),
                     "duration_ms", json_is_number(dur) ? gg_store_round_us(json_number_value(dur)) : 0.0,
                     "input", in == context && in ? json_copy(in) : value_or_null(in),
                     "output", value_or_null(out),
                     "error", error_or_null(err));
}

/* The marker a run cut by its history bounds ends with: {"truncated":true,"dropped":N,
 * "kept":K} (src/graph/provider.c, src/store/history_text.c). */
static bool is_truncation_marker(json_t *n) {
    return json_is_object(n) && json_is_true(json_object_get(n, "truncated")) && !json_object_get(n, "nodeId");
}

/* The stored nodes as the API's array ([] for null or a value that is not an array: text
 * that was not JSON is stored as a string); *dropped gets the records a truncation marker
 * says were left out (0 when none). NULL when memory ran out. */
static json_t *nodes_array(json_t *stored, long long run_start, long long *dropped) {
    *dropped = 0;
    json_t *res = json_array(), *context = json_object();
    size_t i;
    json_t *n;
    json_array_foreach(stored, i, n) {
        if (!res || !context) break;
        if (is_truncation_marker(n)) {
            *dropped += json_integer_value(json_object_get(n, "dropped"));
            continue;
        }
        json_t *o = node_object(n, run_start, context);
        if ((!o && (json_is_array(n) || json_is_object(n))) || (o && json_array_append_new(res, o) != 0)) {
            json_decref(res); /* out of memory */
            res = NULL;
        }
        if (json_is_array(n)) context_add(context, n);
    }
    if (!context) { /* out of memory */
        json_decref(res);
        res = NULL;
    }
    json_decref(context);
    return res;
}

/* A run with its texts and nodes, as gg_store_execution_get answers. */
static json_t *exec_full_object(const hist_rec *r) {
    json_t *o = exec_object(r);
    long long dropped = 0;
    json_t *nodes = o ? nodes_array(json_array_get(r->line, GG_HL_NODES), r->started, &dropped) : NULL;
    if (!nodes) { json_decref(o); return NULL; }
    json_object_set_new(o, "arguments", value_or_null(json_array_get(r->line, GG_HL_ARGUMENTS)));
    json_object_set_new(o, "result", value_or_null(json_array_get(r->line, GG_HL_RESULT)));
    json_object_set_new(o, "nodes", nodes);
    /* a run cut by history.max_run_records / max_run_bytes says so */
    json_object_set_new(o, "nodes_truncated", json_boolean(dropped > 0));
    json_object_set_new(o, "nodes_dropped", json_integer(dropped));
    return o;
}

/* ---- get by id ---------------------------------------------------------------------------- */

/* The rows that can hold a run started at ?2 (?3 = ?2 + GG_HIST_SPAN_MS): tenant's rows
 * through history_batches_tenant, all tenants' (admin) through history_batches_time. */
#define GET_ROWS "SELECT rowid, tenant, body FROM history_batches WHERE "
#define GET_RANGE " last_ms BETWEEN ?2 AND ?3 AND first_ms <= ?2"
static const char SQL_GET_TENANT[] = GET_ROWS "tenant = ?1 AND" GET_RANGE;
static const char SQL_GET_ALL[] = GET_ROWS "CAST(?1 AS TEXT) IS NULL AND" GET_RANGE;

static bool keep_newest(void *user, hist_rec *r) {
    hist_rec *best = user;
    if (best->line && !rec_newer(best, r)) { rec_clear(r); return true; }
    rec_clear(best);
    *best = *r;
    return true;
}

/* Columns 0 rowid, 1 tenant, 2 body of a row, scanned into fn; keep: the records point
 * into a copy of the body (a listing), else only id's is handed over, decoded. false + err
 * when memory ran out or the body is malformed. */
static bool scan_row(gg_store_conn *c, gg_db_stmt *st, const char *id, bool keep, rec_fn fn, void *user,
                     gg_error *err) {
    size_t len;
    const char *text = gg_history_body_text(c, st, 2, &len, err);
    if (!text) return false;
    json_t *tenant = json_string((const char *)gg_db_column_text(st, 1));
    row_body *body = keep ? malloc(sizeof *body + len + 1) : NULL;
    bool ok = tenant && (!keep || body);
    if (body) {
        body->refs = 1;
        body->len = len;
        if (len) memcpy(body->text, text, len);
        text = body->text;
    }
    ok = ok && scan_body(text, len, body, tenant, gg_db_column_int64(st, 0), id, fn, user);
    body_release(body);
    json_decref(tenant);
    if (!ok) gg_error_set(err, "oom", "out of memory");
    return ok;
}

json_t *gg_store_execution_get(gg_store *s, const char *tenant, const char *id, gg_error *err) {
    long long t = gg_exec_id_start_ms(id);
    if (t < 0) { /* not an id any run can have */
        gg_error_set(err, "not_found", "execution '%s' not found", id ? id : "");
        return NULL;
    }
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return NULL;
    hist_rec best = {0};
    gg_db_stmt *st = gg_store_conn_stmt(c, tenant ? SQL_GET_TENANT : SQL_GET_ALL, err);
    int rc = SQLITE_ERROR;
    bool failed = false;
    if (st) {
        gg_store_bind_text(st, 1, tenant);
        gg_db_bind_int64(st, 2, t);
        gg_db_bind_int64(st, 3, t + GG_HIST_SPAN_MS);
        while ((rc = gg_db_step(st)) == SQLITE_ROW)
            if (!scan_row(c, st, id, false, keep_newest, &best, err)) { failed = true; break; }
        if (rc != SQLITE_DONE && !failed) gg_store_set_db_error(c, err, "executions");
        gg_db_reset(st);
    }
    gg_store_conn_release(s, c);
    json_t *o = NULL;
    if (rc == SQLITE_DONE && !best.line) {
        gg_error_set(err, "not_found", "execution '%s' not found", id);
    } else if (rc == SQLITE_DONE) {
        o = exec_full_object(&best);
        if (!o) gg_error_set(err, "oom", "out of memory");
    }
    rec_clear(&best);
    return o;
}

/* ---- listing ------------------------------------------------------------------------------ */

/* Rows newest first by (last_ms, first_ms, rowid), from below the key (?2, ?4, ?5), down
 * to last_ms ?3, ?6 at a time: the tenant's through history_batches_tenant, all tenants'
 * (tenant NULL, the CLI) through history_batches_time. Paged because PostgreSQL hands a
 * statement's whole result over at once. */
#define LIST_ROWS "SELECT rowid, tenant, body, last_ms, first_ms FROM history_batches WHERE "
#define LIST_PAGE \
    " last_ms <= ?2 AND last_ms >= ?3 AND (last_ms < ?2 OR first_ms < ?4 OR (first_ms = ?4 AND rowid < ?5))" \
    " ORDER BY last_ms DESC, first_ms DESC, rowid DESC LIMIT ?6"
static const char SQL_LIST_TENANT[] = LIST_ROWS "tenant = ?1 AND" LIST_PAGE;
static const char SQL_LIST_ALL[] = LIST_ROWS "CAST(?1 AS TEXT) IS NULL AND" LIST_PAGE;

#define PAGE_ROWS_FIRST 1
#define PAGE_ROWS_MAX 256

/* The newest version of each run read so far; slot: an open-addressing index of v by id
 * (position + 1, 0 = empty; at most half full). */
typedef struct list_state {
    const gg_exec_filter *f;
    int status;             /* filter, -1 = any */
    long long since;
    long long cur_ms;       /* cursor; cur_id "" = none */
    char cur_id[33];
    hist_rec *v;
    size_t n, cap;
    size_t *slot, slots;
} list_state;

/* Before the cursor and not before since: the same for every version of a run. */
static bool in_window(const list_state *q, const hist_rec *r) {
    if (r->started < q->since) return false;
    if (!q->cur_id[0]) return true;
    return r->started < q->cur_ms || (r->started == q->cur_ms && strcmp(r->id, q->cur_id) < 0);
}

/* The filters on a run's newest version. */
static bool matches(const list_state *q, const hist_rec *r) {
    if (q->status >= 0 && r->status != q->status) return false;
    if (q->f->graph && !field_is(r, GG_HL_GRAPH, q->f->graph)) return false;
    return !q->f->tool || field_is(r, GG_HL_TOOL, q->f->tool);
}

/* The slot of id: the one holding it, or the empty one where it goes. */
static size_t *slot_of(const list_state *q, const char *id) {
    uint64_t h = 14695981039346656037ULL; /* FNV-1a */
    for (int i = 0; i < 32; i++) h = (h ^ (unsigned char)id[i]) * 1099511628211ULL;
    for (size_t i = (size_t)h & (q->slots - 1);; i = (i + 1) & (q->slots - 1))
        if (!q->slot[i] || strcmp(q->v[q->slot[i] - 1].id, id) == 0) return &q->slot[i];
}

/* Index v[0..n) afresh in at least min_slots slots. */
static bool reindex(list_state *q, size_t min_slots) {
    size_t slots = q->slots ? q->slots : 128;
    while (slots < min_slots) slots *= 2;
    if (slots != q->slots) {
        size_t *slot = realloc(q->slot, slots * sizeof *slot);
        if (!slot) return false;
        q->slot = slot;
        q->slots = slots;
    }
    memset(q->slot, 0, q->slots * sizeof *q->slot);
    for (size_t i = 0; i < q->n; i++) *slot_of(q, q->v[i].id) = i + 1;
    return true;
}

static bool offer(void *user, hist_rec *r) {
    list_state *q = user;
    if (!in_window(q, r)) { rec_clear(r); return true; }
    size_t *at = slot_of(q, r->id);
    if (*at) {
        hist_rec *old = &q->v[*at - 1];
        if (rec_newer(old, r)) {
            rec_clear(old);
            *old = *r;
        } else {
            rec_clear(r);
        }
        return true;
    }
    if (q->n == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 64;
        hist_rec *v = realloc(q->v, cap * sizeof *v);
        if (!v) { rec_clear(r); return false; }
        q->v = v;
        q->cap = cap;
    }
    q->v[q->n++] = *r;
    *at = q->n;
    if (q->n * 2 > q->slots && !reindex(q, q->slots * 2)) return false;
    return true;
}

/* Runs started after done_ms have all their versions read: drop those the filters refuse
 * (keeps memory to the page's runs when a filter matches little) and count the others.
 * -1 when memory ran out. */
static long long settle(list_state *q, long long done_ms) {
    size_t kept = 0;
    long long settled = 0;
    for (size_t i = 0; i < q->n; i++) {
        hist_rec *r = &q->v[i];
        bool done = r->started > done_ms;
        if (done && !matches(q, r)) { rec_clear(r); continue; }
        settled += done;
        q->v[kept++] = *r;
    }
    if (kept == q->n) return settled;
    q->n = kept;
    return reindex(q, 0) ? settled : -1;
}

/* Newest first: started_at, then id, descending (the cursor's order). */
static int cmp_newest(const void *a, const void *b) {
    const hist_rec *x = a, *y = b;
    if (x->started != y->started) return x->started > y->started ? -1 : 1;
    return -strcmp(x->id, y->id);
}

/* Read rows until limit + 1 runs are settled or the rows run out. false + err on failure. */
static bool list_read(gg_store_conn *c, const char *tenant, list_state *q, int limit, gg_error *err) {
    long long key_last = q->cur_id[0] ? q->cur_ms + GG_HIST_SPAN_MS : INT64_MAX, key_first = INT64_MAX,
              key_rowid = INT64_MAX;
    int page = PAGE_ROWS_FIRST;
    for (;;) {
        gg_db_stmt *st = gg_store_conn_stmt(c, tenant ? SQL_LIST_TENANT : SQL_LIST_ALL, err);
        if (!st) return false;
        gg_store_bind_text(st, 1, tenant);
        gg_db_bind_int64(st, 2, key_last);
        gg_db_bind_int64(st, 3, q->since);
        gg_db_bind_int64(st, 4, key_first);
        gg_db_bind_int64(st, 5, key_rowid);
        gg_db_bind_int(st, 6, page + 1); /* the one after the page only says where it starts */
        int rc, got = 0;
        long long next_last = INT64_MIN; /* no more rows: every run read is complete */
        bool failed = false;
        while ((rc = gg_db_step(st)) == SQLITE_ROW) {
            if (got == page) {
                next_last = gg_db_column_int64(st, 3);
                rc = SQLITE_DONE;
                break;
            }
            got++;
            key_rowid = gg_db_column_int64(st, 0);
            key_last = gg_db_column_int64(st, 3);
            key_first = gg_db_column_int64(st, 4);
            if (!scan_row(c, st, NULL, true, offer, q, err)) { failed = true; break; }
        }
        if (rc != SQLITE_DONE && !failed) gg_store_set_db_error(c, err, "executions");
        gg_db_reset(st);
        if (failed || rc != SQLITE_DONE) return false;
        /* the rows still unread have last_ms <= next_last: the runs started after it are complete */
        long long settled = settle(q, next_last);
        if (settled < 0) { gg_error_set(err, "oom", "out of memory"); return false; }
        if (next_last == INT64_MIN || settled > limit) return true;
        if (page < PAGE_ROWS_MAX) page *= 2;
    }
}

/* Cursor: "<started_ms>-<id>"; returns false when malformed. */
static bool parse_cursor(const char *cur, long long *ms, char id[33]) {
    const char *dash = strchr(cur, '-');
    if (!dash || dash == cur || dash - cur > 18 || strlen(dash + 1) != 32) return false;
    long long v = 0;
    for (const char *p = cur; p < dash; p++) {
        if (!isdigit((unsigned char)*p)) return false;
        v = v * 10 + (*p - '0');
    }
    for (const char *p = dash + 1; *p; p++)
        if (!isxdigit((unsigned char)*p)) return false;
    *ms = v;
    memcpy(id, dash + 1, 33);
    return true;
}

/* The page of q's settled runs: {"executions":[...],"next_cursor":...}. */
static json_t *list_page(list_state *q, int limit, gg_error *err) {
    /* settle(INT64_MIN) or limit + 1 settled: the newest limit + 1 here are all complete */
    size_t n = 0;
    for (size_t i = 0; i < q->n; i++)
        if (matches(q, &q->v[i])) q->v[n++] = q->v[i];
        else rec_clear(&q->v[i]);
    for (size_t i = n; i < q->n; i++) q->v[i] = (hist_rec){0};
    q->n = n;
    if (n > 1) qsort(q->v, n, sizeof *q->v, cmp_newest); /* q->v may be NULL when n is 0 */
    json_t *arr = json_array();
    char next[64] = "";
    const hist_rec *last = NULL;
    for (size_t i = 0, shown = 0; arr && i < n; i++) {
        hist_rec *r = &q->v[i];
        if (!r->line && !rec_decode_head(r)) continue; /* a damaged line, skipped */
        if (shown == (size_t)limit) {
            snprintf(next, sizeof next, "%lld-%s", last->started, last->id);
            break;
        }
        json_t *o = exec_object(r);
        if (!o || json_array_append_new(arr, o) != 0) { json_decref(arr); arr = NULL; }
        shown++;
        last = r;
    }
    json_t *res = arr ? json_pack("{s:o,s:o}", "executions", arr, "next_cursor", next[0] ? json_string(next) : json_null())
                      : NULL;
    if (!res) gg_error_set(err, "oom", "out of memory");
    return res;
}

json_t *gg_store_executions_list(gg_store *s, const char *tenant, const gg_exec_filter *f,
                                 gg_error *err) {
    gg_exec_filter none = {0};
    if (!f) f = &none;
    int limit = f->limit <= 0 ? 50 : f->limit;
    if (limit > 1000) { gg_error_set(err, "invalid", "limit must be between 1 and 1000"); return NULL; }
    list_state q = {.f = f, .status = -1, .since = f->since_ms > 0 ? f->since_ms : 0};
    if (f->status && (q.status = gg_exec_status_parse(f->status)) < 0) {
        gg_error_set(err, "invalid",
                     "status must be one of running, succeeded, failed, cancelled, interrupted, invalid_input");
        return NULL;
    }
    if (f->cursor && *f->cursor && !parse_cursor(f->cursor, &q.cur_ms, q.cur_id)) {
        gg_error_set(err, "invalid", "malformed cursor");
        return NULL;
    }
    if (!reindex(&q, 0)) { gg_error_set(err, "oom", "out of memory"); return NULL; }
    json_t *res = NULL;
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (c) {
        bool ok = list_read(c, tenant, &q, limit, err);
        gg_store_conn_release(s, c);
        if (ok) res = list_page(&q, limit, err);
    }
    for (size_t i = 0; i < q.n; i++) rec_clear(&q.v[i]);
    free(q.v);
    free(q.slot);
    return res;
}
