/* exec_record.c — execution records (gg_exec_record): ids, status names, building a
 * record and its node records on the running thread before gg_history_submit takes it. */
#include "store/store_internal.h"

#include <sodium.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

static const char *const status_names[] = {"running", "succeeded", "failed", "cancelled", "interrupted",
                                           "invalid_input"};

const char *gg_exec_status_name(gg_exec_status st) {
    return (unsigned)st < sizeof status_names / sizeof status_names[0] ? status_names[st] : "unknown";
}

int gg_exec_status_parse(const char *name) {
    for (size_t i = 0; name && i < sizeof status_names / sizeof status_names[0]; i++)
        if (strcmp(name, status_names[i]) == 0) return (int)i;
    return -1;
}

/* 12 hex digits of ms, then the random bytes in hex. */
static void id_format(unsigned long long ms, const unsigned char rnd[GG_EXEC_ID_RANDOM_BYTES], char out[33]) {
    static const char hex[] = "0123456789abcdef";
    for (int i = 11; i >= 0; i--, ms >>= 4) out[i] = hex[ms & 15];
    for (int i = 0; i < GG_EXEC_ID_RANDOM_BYTES; i++) {
        out[12 + 2 * i] = hex[rnd[i] >> 4];
        out[13 + 2 * i] = hex[rnd[i] & 15];
    }
    out[32] = '\0';
}

void gg_exec_id_new(char out[33]) {
    unsigned char rnd[GG_EXEC_ID_RANDOM_BYTES];
    randombytes_buf(rnd, sizeof rnd);
    id_format((unsigned long long)gg_wall_ms(), rnd, out);
}

/* One more than the value of each hex digit (lowercase, as ids have them); 0 for any other
 * byte: the history writer reads every record's id with it. */
static const unsigned char HEX_DIGIT1[256] = {
    ['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7, ['7'] = 8, ['8'] = 9,
    ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16};

/* Whether the 8 bytes at p are all lowercase hex digits, a byte at a time in parallel: each
 * ASCII byte plus (0x80 - bound) reaches 0x80 exactly when it is >= bound, with no carry
 * into the next byte (the history writer reads every record's id). */
static bool hex8(const char *p) {
    const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
    uint64_t w;
    memcpy(&w, p, 8);
    if (w & high) return false;
    uint64_t digit = (w + ones * (0x80 - '0')) & ~(w + ones * (0x80 - '9' - 1));
    uint64_t af = (w + ones * (0x80 - 'a')) & ~(w + ones * (0x80 - 'f' - 1));
    return ((digit | af) & high) == high;
}

long long gg_exec_id_start_ms(const char *id) {
    if (!id || strnlen(id, 33) != 32 || !hex8(id + 12) || !hex8(id + 20) || !hex8(id + 24)) return -1;
    long long ms = 0;
    for (int i = 0; i < 12; i++) {
        int d = HEX_DIGIT1[(unsigned char)id[i]] - 1;
        if (d < 0) return -1;
        ms = ms * 16 + d;
    }
    return ms;
}

/* ---- records ---------------------------------------------------------------------------- */

static char *dup_or_null(const char *s, bool *oom) {
    if (!s) return NULL;
    char *d = strdup(s);
    if (!d) *oom = true;
    return d;
}

gg_exec_record *gg_exec_record_make(const unsigned char rnd[GG_EXEC_ID_RANDOM_BYTES], const char *tenant, const char *graph,
                                   int version, const char *tool, const char *key_id, json_t *arguments) {
    /* gg_zalloc, not calloc: this runs once a recorded call (about 300 instructions less) */
    gg_exec_record *r = gg_zalloc(sizeof *r);
    if (!r) return NULL;
    bool oom = false;
    /* one clock read: the id's time is the start time, so ids sort like started_at */
    r->started_ms = gg_wall_ms();
    id_format((unsigned long long)r->started_ms, rnd, r->id);
    r->tenant = dup_or_null(tenant ? tenant : "", &oom);
    r->graph = dup_or_null(graph ? graph : "", &oom);
    r->tool = dup_or_null(tool ? tool : "", &oom);
    r->key_id = dup_or_null(key_id, &oom);
    r->version = version;
    r->status = GG_EXEC_RUNNING;
    r->arguments = arguments ? json_incref(arguments) : NULL;
    if (oom) { gg_exec_record_free(r); return NULL; }
    return r;
}

gg_exec_record *gg_exec_record_new(const char *tenant, const char *graph, int version,
                                   const char *tool, const char *key_id, json_t *arguments) {
    unsigned char rnd[GG_EXEC_ID_RANDOM_BYTES];
    randombytes_buf(rnd, sizeof rnd);
    return gg_exec_record_make(rnd, tenant, graph, version, tool, key_id, arguments);
}

gg_node_exec_record *gg_exec_record_add_node(gg_exec_record *r, const char *node_id,
                                             const char *node_type, long long start_ms,
                                             long long end_ms, json_t *input, json_t *output,
                                             const char *error) {
    if (r->n_nodes == r->cap_nodes) {
        size_t cap = r->cap_nodes ? r->cap_nodes * 2 : 8;
        gg_node_exec_record *n = realloc(r->nodes, cap * sizeof *n);
        if (!n) { json_decref(input); json_decref(output); return NULL; }
        r->nodes = n;
        r->cap_nodes = cap;
    }
    gg_node_exec_record *n = &r->nodes[r->n_nodes];
    memset(n, 0, sizeof *n);
    bool oom = false;
    n->index = (int)r->n_nodes;
    n->node_id = dup_or_null(node_id ? node_id : "", &oom);
    n->node_type = dup_or_null(node_type ? node_type : "", &oom);
    n->error = dup_or_null(error, &oom);
    n->start_ms = start_ms;
    n->end_ms = end_ms;
    n->duration_ms = (double)(end_ms - start_ms);
    n->input = input;
    n->output = output;
    if (oom) {
        free(n->node_id); free(n->node_type); free(n->error);
        json_decref(input); json_decref(output);
        return NULL;
    }
    r->n_nodes++;
    return n;
}

/* The fast path for a graph run's node records: the executor's history array as it is.
 * Takes the reference to history (it is only read, by gg_history_submit on the calling
 * thread, which writes each element as one node: executionIndex, nodeId, nodeType,
 * startTime, endTime, duration, output, input — kept on every node when all_inputs, else
 * only on a node that failed — and error, an object's "message" or a string). Replaces an
 * earlier history; nodes added with gg_exec_record_add_node are written after these. */
void gg_exec_record_set_node_history(gg_exec_record *r, json_t *history, bool all_inputs) {
    json_decref(r->node_history);
    r->node_history = history;
    r->all_inputs = all_inputs;
}

/* The node records already serialized: json_text (taken, freed with the record) is a JSON
 * array in the stored form (migrations/0003_history_one_row.sql; start/end may also be
 * absolute, see store.h) or of executor-shaped objects {executionIndex, nodeId, nodeType,
 * startTime, endTime, duration, input?, output?, error?} (json_dumps of the executor's
 * history does). Stored as given: no payload bound is applied and inputs are kept, so the
 * caller decides what goes in.
 * Takes precedence over a node history and nodes added with gg_exec_record_add_node. */
void gg_exec_record_set_nodes_json(gg_exec_record *r, char *json_text) {
    free(r->nodes_text);
    r->nodes_text = json_text;
}

gg_exec_record *gg_exec_record_copy_header(const gg_exec_record *src) {
    gg_exec_record *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    bool oom = false;
    memcpy(r->id, src->id, sizeof r->id);
    r->tenant = dup_or_null(src->tenant, &oom);
    r->graph = dup_or_null(src->graph, &oom);
    r->tool = dup_or_null(src->tool, &oom);
    r->key_id = dup_or_null(src->key_id, &oom);
    r->error = dup_or_null(src->error, &oom);
    r->version = src->version;
    r->status = src->status;
    r->started_ms = src->started_ms;
    r->finished_ms = src->finished_ms;
    r->duration_ms = src->duration_ms;
    memcpy(r->trace_id, src->trace_id, sizeof r->trace_id);
    memcpy(r->parent_id, src->parent_id, sizeof r->parent_id);
    r->arguments = src->arguments ? json_incref(src->arguments) : NULL;
    r->result = src->result ? json_incref(src->result) : NULL;
    r->arguments_text = dup_or_null(src->arguments_text, &oom);
    r->result_text = dup_or_null(src->result_text, &oom);
    if (oom) { gg_exec_record_free(r); return NULL; }
    return r;
}

void gg_exec_record_free(gg_exec_record *r) {
    if (!r) return;
    for (size_t i = 0; i < r->n_nodes; i++) {
        gg_node_exec_record *n = &r->nodes[i];
        free(n->node_id);
        free(n->node_type);
        free(n->error);
        json_decref(n->input);
        json_decref(n->output);
        free(n->input_text);
        free(n->output_text);
    }
    free(r->nodes);
    json_decref(r->node_history);
    free(r->nodes_text);
    free(r->arguments_text);
    free(r->result_text);
    free(r->tenant);
    free(r->graph);
    free(r->tool);
    free(r->key_id);
    free(r->error);
    json_decref(r->arguments);
    json_decref(r->result);
    free(r);
}
