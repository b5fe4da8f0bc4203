/* timeline.c — a run's nodes as a terminal timeline: each node's start offset from the run's
 * start, its duration, status, a bar placed on the run's time axis and (in the full view) a
 * short preview of its input, output or error. Used by `graphgate executions show ID
 * --timeline` (a stored run) and `graphgate run --trace=compact` (the run just made). Also
 * home of gg_cli_print_json, every command's JSON output. */
#include "cli/cli.h"
#include "jsonata/jsonata.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BAR_COLS 32
#define PREVIEW_MAX 60

/* "2026-11-26T18:40:00.123Z" → unix ms; -1 when it is not one. */
static long long iso_ms(json_t *v) {
    const char *s = json_string_value(v);
    struct tm tm = {0};
    int ms = 0;
    if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                     &tm.tm_sec, &ms) != 7)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return (long long)timegm(&tm) * 1000 + ms;
}

/* Compact JSON of v (numbers as the CLI prints them) cut to max characters (an ellipsis
 * marks the cut) into out. */
static void preview(json_t *v, char *out, size_t max) {
    out[0] = 0;
    if (!v || json_is_null(v)) return;
    char *text = jsonata_dump(v, 0);
    if (!text) return;
    size_t n = strlen(text);
    if (n > max) {
        n = max - 3;
        while (n > 0 && ((unsigned char)text[n] & 0xC0) == 0x80) n--; /* whole UTF-8 characters */
        memcpy(out, text, n);
        memcpy(out + n, "...", 4);
    } else {
        memcpy(out, text, n + 1);
    }
    for (char *p = out; *p; p++)
        if (*p == '\n' || *p == '\t') *p = ' ';
    free(text);
}

static void bar(FILE *f, double start, double dur, double total) {
    int a = total > 0 ? (int)(start / total * BAR_COLS) : 0, w = total > 0 ? (int)(dur / total * BAR_COLS + 0.5) : 1;
    if (a >= BAR_COLS) a = BAR_COLS - 1;
    if (w < 1) w = 1;
    if (a + w > BAR_COLS) w = BAR_COLS - a;
    fputc('|', f);
    for (int i = 0; i < BAR_COLS; i++) fputc(i >= a && i < a + w ? '#' : ' ', f);
    fputc('|', f);
}

/* One node as (id, type, start offset, duration, error message or NULL, input, output). */
typedef struct tl_node {
    const char *id, *type, *error;
    double start, dur;
    json_t *input, *output;
} tl_node;

static void print_rows(FILE *f, const tl_node *nodes, size_t n, double total, bool previews) {
    fprintf(f, "%10s %10s  %-6s %-20s %-9s ", "START ms", "DUR ms", "STATUS", "NODE", "TYPE");
    fprintf(f, previews ? "%-*s  PREVIEW\n" : "%.*s\n", previews ? BAR_COLS + 2 : 8, "TIMELINE");
    for (size_t i = 0; i < n; i++) {
        const tl_node *x = &nodes[i];
        fprintf(f, "%10.3f %10.3f  %-6s %-20.20s %-9.9s ", x->start, x->dur, x->error ? "error" : "ok", x->id, x->type);
        bar(f, x->start, x->dur, total);
        if (previews) {
            char buf[PREVIEW_MAX + 4];
            if (x->error) {
                snprintf(buf, sizeof buf, "%.*s", PREVIEW_MAX, x->error);
                fprintf(f, "  error: %s", buf);
            } else {
                preview(x->output, buf, PREVIEW_MAX);
                if (buf[0]) fprintf(f, "  out: %s", buf);
                preview(x->input, buf, PREVIEW_MAX / 2);
                if (buf[0]) fprintf(f, "  in: %s", buf);
            }
        }
        fputc('\n', f);
    }
}

static const char *error_message(json_t *e) {
    if (json_is_string(e)) return json_string_value(e);
    if (json_is_object(e)) {
        const char *m = json_string_value(json_object_get(e, "message"));
        return m ? m : "error";
    }
    return NULL;
}

/* A stored execution (gg_store_execution_get's object). */
void gg_cli_timeline_execution(FILE *f, json_t *e) {
    json_t *nodes = json_object_get(e, "nodes");
    size_t n = json_array_size(nodes);
    long long t0 = iso_ms(json_object_get(e, "started_at"));
    double total = json_number_value(json_object_get(e, "duration_ms"));
    const char *trace = json_string_value(json_object_get(e, "trace_id"));
    fprintf(f, "execution %s  %s/%s v%lld  tool %s  %s  %.3f ms%s%s\n", json_string_value(json_object_get(e, "id")),
            json_string_value(json_object_get(e, "tenant")), json_string_value(json_object_get(e, "graph")),
            (long long)json_integer_value(json_object_get(e, "version")), json_string_value(json_object_get(e, "tool")),
            json_string_value(json_object_get(e, "status")), total, trace ? "  trace " : "", trace ? trace : "");
    tl_node *rows = calloc(n ? n : 1, sizeof *rows);
    if (!rows) return;
    double sum_end = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *x = json_array_get(nodes, i);
        long long s = iso_ms(json_object_get(x, "started_at"));
        /* the stored times are whole ms, the durations µs: nodes run one after another, so
         * a node starts no earlier than the one before ended (as the console draws it) —
         * sub-millisecond offsets for a fast run instead of every node at 0.000 */
        double wall = s >= 0 && t0 >= 0 && s >= t0 ? (double)(s - t0) : 0;
        double prev_end = i ? rows[i - 1].start + rows[i - 1].dur : 0;
        rows[i] = (tl_node){json_string_value(json_object_get(x, "node_id")),
                            json_string_value(json_object_get(x, "node_type")), error_message(json_object_get(x, "error")),
                            wall > prev_end ? wall : prev_end,
                            json_number_value(json_object_get(x, "duration_ms")), json_object_get(x, "input"),
                            json_object_get(x, "output")};
        if (!rows[i].id) rows[i].id = "";
        if (!rows[i].type) rows[i].type = "";
        if (rows[i].start + rows[i].dur > sum_end) sum_end = rows[i].start + rows[i].dur;
    }
    print_rows(f, rows, n, total > sum_end ? total : sum_end, true);
    if (json_is_true(json_object_get(e, "nodes_truncated")))
        fprintf(f, "(%lld more node records were not kept: history.max_run_records / max_run_bytes)\n",
                (long long)json_integer_value(json_object_get(e, "nodes_dropped")));
    const char *err = json_string_value(json_object_get(e, "error"));
    if (err) fprintf(f, "error: %s\n", err);
    free(rows);
}

/* The executor's history array ({nodeId, nodeType, startTime, endTime, duration, error?}),
 * compact: no previews. */
void gg_cli_timeline_history(FILE *f, json_t *history, double elapsed_ms) {
    size_t n = json_array_size(history);
    tl_node *rows = calloc(n ? n : 1, sizeof *rows);
    if (!rows) return;
    long long t0 = n ? json_integer_value(json_object_get(json_array_get(history, 0), "startTime")) : 0;
    double cum = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *x = json_array_get(history, i);
        double dur = json_number_value(json_object_get(x, "duration"));
        /* wall times are whole ms: the sum of durations places short nodes better, and a
         * node never starts before the previous one ended */
        double wall = (double)(json_integer_value(json_object_get(x, "startTime")) - t0);
        double start = wall > cum ? wall : cum;
        rows[i] = (tl_node){json_string_value(json_object_get(x, "nodeId")), json_string_value(json_object_get(x, "nodeType")),
                            error_message(json_object_get(x, "error")), start, dur, NULL, NULL};
        if (!rows[i].id) rows[i].id = "";
        if (!rows[i].type) rows[i].type = "";
        cum = start + dur;
    }
    fprintf(f, "%zu nodes, %.3f ms\n", n, elapsed_ms);
    print_rows(f, rows, n, elapsed_ms > cum ? elapsed_ms : cum, false);
    free(rows);
}

/* See cli.h: one printer for every command's JSON, the serializer jsonata_dump already is
 * (JSON.stringify), so the CLI and the API never print the same number two ways. */
bool gg_cli_print_json(FILE *f, json_t *v, int indent) {
    if (!v) return true;
    char *txt = jsonata_dump(v, indent);
    if (txt) fprintf(f, "%s\n", txt);
    free(txt);
    return txt != NULL;
}
