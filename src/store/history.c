/* history.c — execution records, the batching history writer and history queries.
 *
 * Request threads hand finished (and starting) runs to gg_history_submit, which only
 * appends to an in-memory queue under a mutex. One writer thread, on its own connection,
 * wakes when work arrives, waits flush_ms for more, and writes everything queued in one
 * transaction: with WAL and synchronous=NORMAL that is one fsync-free commit for many runs.
 *
 * The writer is one thread for the whole process, so everything that can be done by the
 * submitting (worker) threads is done there: JSON is serialized and the JSON trees are
 * released in gg_history_submit, leaving the writer only SQLite work. A run's node rows go
 * in multi-row INSERTs (up to NODE_ROWS_MAX per statement), and the writer's connection
 * runs without foreign-key checks during batches: it inserts an executions row only when
 * its tenant exists (WHERE EXISTS, same transaction) and node rows only under an
 * executions row it has just written, so the checks could never fail there. Retention
 * turns them back on for its deletes, which rely on ON DELETE CASCADE. */
#include "store/store_internal.h"

#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const status_names[] = {"running", "succeeded", "failed", "cancelled", "interrupted"};

const char *gg_exec_status_name(gg_exec_status st) {
    return (unsigned)st < sizeof status_names / sizeof status_names[0] ? status_names[st] : "unknown";
}

int gg_exec_status_parse(const char *name) {
    for (size_t i = 0; name && i < sizeof status_names / sizeof status_names[0]; i++)
        if (strcmp(name, status_names[i]) == 0) return (int)i;
    return -1;
}

void gg_exec_id_new(char out[33]) {
    unsigned long long ms = (unsigned long long)gg_wall_ms();
    unsigned char rnd[10];
    randombytes_buf(rnd, sizeof rnd);
    snprintf(out, 13, "%012llx", ms & 0xffffffffffffULL);
    sodium_bin2hex(out + 12, 21, rnd, sizeof rnd);
}

/* ---- records ---------------------------------------------------------------------------- */

static char *dup_or_null(const char *s, bool *oom) {
    if (!s) return NULL;
    char *d = strdup(s);
    if (!d) *oom = true;
    return d;
}

gg_exec_record *gg_exec_record_new(const char *tenant, const char *graph, int version,
                                   const char *tool, const char *key_id, json_t *arguments) {
    gg_exec_record *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    bool oom = false;
    gg_exec_id_new(r->id);
    r->tenant = dup_or_null(tenant ? tenant : "", &oom);
    r->graph = dup_or_null(graph ? graph : "", &oom);
    r->tool = dup_or_null(tool ? tool : "", &oom);
    r->key_id = dup_or_null(key_id, &oom);
    r->version = version;
    r->status = GG_EXEC_RUNNING;
    r->started_ms = gg_wall_ms();
    r->arguments = arguments ? json_incref(arguments) : NULL;
    if (oom) { gg_exec_record_free(r); return NULL; }
    return r;
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

/* ---- the writer ------------------------------------------------------------------------- */

typedef struct hist_item {
    struct hist_item *next;
    gg_exec_record *rec;          /* NULL for a key touch */
    bool packed;                  /* rec lives inside this allocation (see pack_record) */
    char key_id[GG_KEY_ID_MAX];
    long long when_ms;
} hist_item;

#define NODE_ROWS_MAX 8

struct gg_history {
    gg_store *store;
    gg_store_conn *conn;          /* the writer's own connection */
    sqlite3_stmt *node_ins[NODE_ROWS_MAX + 1]; /* [k]: INSERT of k node rows, made on first use */
    gg_history_options opt;
    pthread_t thread;
    pthread_mutex_t lock;         /* guards everything below */
    pthread_cond_t work;          /* signalled on submit, flush request and stop */
    pthread_cond_t done;          /* signalled after each batch */
    hist_item *head, *tail;
    size_t queued;
    unsigned long long enqueued_seq, written_seq;
    unsigned long long backlog;   /* atomic: written under lock, read without (gg_history_backlog) */
    bool stopping, flush_wanted;
    unsigned long long retention_req, retention_done; /* requests / completed passes */
    gg_history_stats stats;
};

static const char SQL_EXEC_UPSERT[] =
    "INSERT INTO executions(id, tenant, graph, version, tool, key_id, status, started_at,"
    " finished_at, duration_ms, arguments, result, error)"
    " SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13"
    " WHERE EXISTS (SELECT 1 FROM tenants WHERE name = ?2)"
    " ON CONFLICT(id) DO UPDATE SET status = excluded.status, finished_at = excluded.finished_at,"
    " duration_ms = excluded.duration_ms, result = excluded.result, error = excluded.error"
    " WHERE executions.status = 'running'";
#define NODE_COLS 10

/* Serialize a stored JSON value, replacing oversized ones by a marker. Caller frees. */
static char *dump_bounded(json_t *v, size_t max) {
    if (!v) return NULL;
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!s) return NULL;
    size_t n = strlen(s);
    if (n <= max) return s;
    free(s);
    char buf[96];
    snprintf(buf, sizeof buf, "{\"truncated\":true,\"bytes\":%zu}", n);
    return strdup(buf);
}

/* JSON → text for one field: the tree is released, the text kept (NULL stays NULL).
 * false on OOM (the tree is kept then, and the writer serializes it itself). */
static bool seal_field(json_t **v, char **text, size_t max) {
    if (!*v || *text) return true;
    *text = dump_bounded(*v, max);
    if (!*text) return false;
    json_decref(*v);
    *v = NULL;
    return true;
}

static void seal_record(gg_exec_record *r, size_t max) {
    seal_field(&r->arguments, &r->arguments_text, max);
    seal_field(&r->result, &r->result_text, max);
    for (size_t i = 0; i < r->n_nodes; i++) {
        seal_field(&r->nodes[i].input, &r->nodes[i].input_text, max);
        seal_field(&r->nodes[i].output, &r->nodes[i].output_text, max);
    }
}

/* Bump allocator over the string area of a packed item. */
typedef struct pack_area {
    char *p;
} pack_area;

static char *pack_str(pack_area *a, const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *d = memcpy(a->p, s, n);
    a->p += n;
    return d;
}

static size_t str_size(const char *s) { return s ? strlen(s) + 1 : 0; }

/* The queue item and a read-only copy of r (text fields only, no JSON) in ONE allocation,
 * made on the submitting thread. The writer then frees a single block per run: freeing
 * dozens of small blocks another thread allocated is what made malloc slow on both sides
 * (they return to the allocating thread's arena, not to the freeing thread's cache). NULL
 * on OOM (the caller falls back to the unpacked record). r is left sealed either way. */
static hist_item *pack_record(gg_exec_record *r, size_t max) {
    seal_record(r, max);
    if (r->arguments || r->result) return NULL; /* a serialization failed */
    size_t bytes = sizeof(hist_item) + sizeof(gg_exec_record) + r->n_nodes * sizeof(gg_node_exec_record);
    bytes += str_size(r->tenant) + str_size(r->graph) + str_size(r->tool) + str_size(r->key_id) +
             str_size(r->error) + str_size(r->arguments_text) + str_size(r->result_text);
    for (size_t i = 0; i < r->n_nodes; i++) {
        const gg_node_exec_record *n = &r->nodes[i];
        if (n->input || n->output) return NULL;
        bytes += str_size(n->node_id) + str_size(n->node_type) + str_size(n->error) + str_size(n->input_text) +
                 str_size(n->output_text);
    }
    hist_item *it = malloc(bytes);
    if (!it) return NULL;
    memset(it, 0, sizeof *it);
    it->packed = true;
    gg_exec_record *c = (gg_exec_record *)(void *)(it + 1);
    *c = *r;
    c->arguments = c->result = NULL;
    c->nodes = (gg_node_exec_record *)(void *)(c + 1);
    c->cap_nodes = r->n_nodes;
    pack_area a = {(char *)(c->nodes + r->n_nodes)};
    c->tenant = pack_str(&a, r->tenant);
    c->graph = pack_str(&a, r->graph);
    c->tool = pack_str(&a, r->tool);
    c->key_id = pack_str(&a, r->key_id);
    c->error = pack_str(&a, r->error);
    c->arguments_text = pack_str(&a, r->arguments_text);
    c->result_text = pack_str(&a, r->result_text);
    for (size_t i = 0; i < r->n_nodes; i++) {
        const gg_node_exec_record *n = &r->nodes[i];
        gg_node_exec_record *d = &c->nodes[i];
        *d = *n;
        d->node_id = pack_str(&a, n->node_id);
        d->node_type = pack_str(&a, n->node_type);
        d->error = pack_str(&a, n->error);
        d->input_text = pack_str(&a, n->input_text);
        d->output_text = pack_str(&a, n->output_text);
    }
    it->rec = c;
    return it;
}

/* The INSERT of k node rows (?1 the execution id, then NODE_COLS - 1 parameters a row). */
static sqlite3_stmt *node_insert_stmt(gg_history *h, int k, gg_error *err) {
    if (h->node_ins[k]) {
        sqlite3_reset(h->node_ins[k]);
        sqlite3_clear_bindings(h->node_ins[k]);
        return h->node_ins[k];
    }
    char sql[1024];
    int len = snprintf(sql, sizeof sql,
                       "INSERT OR REPLACE INTO node_executions(execution_id, execution_index, node_id,"
                       " node_type, started_at, finished_at, duration_ms, input, output, error) VALUES");
    for (int row = 0; row < k; row++) {
        int p = 2 + row * (NODE_COLS - 1);
        len += snprintf(sql + len, sizeof sql - (size_t)len, "%s(?1,?%d,?%d,?%d,?%d,?%d,?%d,?%d,?%d,?%d)",
                        row ? "," : "", p, p + 1, p + 2, p + 3, p + 4, p + 5, p + 6, p + 7, p + 8);
    }
    int rc = sqlite3_prepare_v3(h->conn->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &h->node_ins[k], NULL);
    if (rc != SQLITE_OK) {
        gg_store_set_db_error(h->conn, err, "prepare node_executions");
        return NULL;
    }
    return h->node_ins[k];
}

/* Text of a field: the sealed text, else serialized now into *tmp (freed by the caller). */
static const char *field_text(json_t *v, const char *text, char **tmp, size_t max) {
    if (text || !v) return text;
    return *tmp = dump_bounded(v, max);
}

static bool write_nodes(gg_history *h, gg_exec_record *r, gg_error *err) {
    size_t max = h->opt.max_payload_bytes;
    for (size_t i = 0; i < r->n_nodes;) {
        int k = r->n_nodes - i >= NODE_ROWS_MAX ? NODE_ROWS_MAX : (int)(r->n_nodes - i);
        sqlite3_stmt *st = node_insert_stmt(h, k, err);
        if (!st) return false;
        char *tmp[2 * NODE_ROWS_MAX] = {0};
        sqlite3_bind_text(st, 1, r->id, -1, SQLITE_STATIC);
        for (int row = 0; row < k; row++) {
            gg_node_exec_record *n = &r->nodes[i + (size_t)row];
            int p = 2 + row * (NODE_COLS - 1);
            sqlite3_bind_int(st, p, n->index);
            sqlite3_bind_text(st, p + 1, n->node_id, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, p + 2, n->node_type, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, p + 3, n->start_ms);
            sqlite3_bind_int64(st, p + 4, n->end_ms);
            sqlite3_bind_double(st, p + 5, n->duration_ms);
            gg_store_bind_text(st, p + 6, field_text(n->input, n->input_text, &tmp[2 * row], max));
            gg_store_bind_text(st, p + 7, field_text(n->output, n->output_text, &tmp[2 * row + 1], max));
            gg_store_bind_text(st, p + 8, n->error);
        }
        int rc = sqlite3_step(st);
        sqlite3_reset(st);
        for (int t = 0; t < 2 * k; t++) free(tmp[t]);
        if (rc != SQLITE_DONE) { gg_store_set_db_error(h->conn, err, "node_executions"); return false; }
        i += (size_t)k;
    }
    return true;
}

static bool write_record(gg_history *h, gg_exec_record *r, gg_error *err) {
    gg_store_conn *c = h->conn;
    sqlite3_stmt *st = gg_store_conn_stmt(c, SQL_EXEC_UPSERT, err);
    if (!st) return false;
    size_t max = h->opt.max_payload_bytes;
    char *args = NULL, *result = NULL;
    sqlite3_bind_text(st, 1, r->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, r->tenant, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, r->graph, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, r->version);
    sqlite3_bind_text(st, 5, r->tool, -1, SQLITE_STATIC);
    gg_store_bind_text(st, 6, r->key_id);
    sqlite3_bind_text(st, 7, gg_exec_status_name(r->status), -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 8, r->started_ms);
    if (r->status != GG_EXEC_RUNNING) {
        sqlite3_bind_int64(st, 9, r->finished_ms ? r->finished_ms : gg_wall_ms());
        sqlite3_bind_double(st, 10, r->duration_ms);
    }
    gg_store_bind_text(st, 11, field_text(r->arguments, r->arguments_text, &args, max));
    gg_store_bind_text(st, 12, field_text(r->result, r->result_text, &result, max));
    gg_store_bind_text(st, 13, r->error);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    free(args);
    free(result);
    if (rc != SQLITE_DONE) { gg_store_set_db_error(c, err, "executions"); return false; }
    if (sqlite3_changes(c->db) == 0) return true; /* tenant gone, or already final */
    return write_nodes(h, r, err);
}

/* FNV-1a over an id, for the per-batch "has a final state" set. */
static size_t id_hash(const char *id) {
    size_t h = 1469598103934665603ULL;
    for (; *id; id++) h = (h ^ (unsigned char)*id) * 1099511628211ULL;
    return h;
}

/* Write one batch in one transaction. A RUNNING record whose final state is in the same
 * batch is skipped: the final upsert writes the whole row anyway. */
static bool write_batch(gg_history *h, hist_item *items, size_t n, gg_error *err) {
    size_t cap = 16;
    while (cap < n * 2) cap *= 2;
    const char **finals = calloc(cap, sizeof *finals);
    if (finals) {
        for (hist_item *it = items; it; it = it->next) {
            if (!it->rec || it->rec->status == GG_EXEC_RUNNING) continue;
            size_t i = id_hash(it->rec->id) & (cap - 1);
            while (finals[i]) i = (i + 1) & (cap - 1);
            finals[i] = it->rec->id;
        }
    }
    bool ok = gg_store_conn_exec(h->conn, "BEGIN IMMEDIATE", err);
    for (hist_item *it = items; ok && it; it = it->next) {
        if (!it->rec) {
            ok = gg_store_key_touch_conn(h->conn, it->key_id, it->when_ms, err);
            continue;
        }
        if (it->rec->status == GG_EXEC_RUNNING && finals) {
            bool superseded = false;
            for (size_t i = id_hash(it->rec->id) & (cap - 1); finals[i]; i = (i + 1) & (cap - 1))
                if (strcmp(finals[i], it->rec->id) == 0) { superseded = true; break; }
            if (superseded) continue;
        }
        ok = write_record(h, it->rec, err);
    }
    free(finals);
    if (ok) ok = gg_store_conn_exec(h->conn, "COMMIT", err);
    if (!ok) sqlite3_exec(h->conn->db, "ROLLBACK", NULL, NULL, NULL);
    return ok;
}

static void free_items(hist_item *it) {
    while (it) {
        hist_item *next = it->next;
        if (!it->packed) gg_exec_record_free(it->rec);
        free(it);
        it = next;
    }
}

static void run_retention(gg_history *h) {
    if (h->opt.max_age_ms <= 0 && h->opt.max_count <= 0) return;
    gg_error err = GG_ERROR_INIT;
    /* deleting executions rows must cascade to their node rows */
    sqlite3_exec(h->conn->db, "PRAGMA foreign_keys=ON", NULL, NULL, NULL);
    long long n = gg_store_executions_prune_conn(h->conn, h->opt.max_age_ms, h->opt.max_count, &err);
    sqlite3_exec(h->conn->db, "PRAGMA foreign_keys=OFF", NULL, NULL, NULL);
    if (n < 0) {
        gg_log(GG_LOG_WARN, "history retention failed", "error", err.message, NULL);
        gg_error_clear(&err);
        return;
    }
    if (n > 0) {
        char buf[32];
        snprintf(buf, sizeof buf, "%lld", n);
        gg_log(GG_LOG_INFO, "history retention", "deleted", buf, NULL);
    }
    pthread_mutex_lock(&h->lock);
    h->stats.pruned += (unsigned long long)n;
    pthread_mutex_unlock(&h->lock);
}

static void abs_deadline(struct timespec *ts, long long ms) {
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) { ts->tv_sec++; ts->tv_nsec -= 1000000000L; }
}

#define RETENTION_EVERY_MS 60000
/* At most this many items a transaction. Submitters are held back while the backlog is
 * large (the gateway's GW_HISTORY_BACKLOG_SOFT), and the backlog only shrinks when a batch
 * commits: an unbounded batch taken after the writer fell behind (a burst, or the thread
 * starved of CPU) held every worker for the whole of its write, hundreds of ms. */
#define BATCH_MAX 2048

static void *writer_main(void *arg) {
    gg_history *h = arg;
    double next_retention = gg_now_ms() + RETENTION_EVERY_MS;
    pthread_mutex_lock(&h->lock);
    for (;;) {
        while (!h->head && !h->stopping && !h->flush_wanted && h->retention_req == h->retention_done) {
            double wait = next_retention - gg_now_ms();
            if (wait <= 0) break;
            struct timespec ts;
            abs_deadline(&ts, (long long)wait + 1);
            pthread_cond_timedwait(&h->work, &h->lock, &ts);
        }
        if (h->head && !h->stopping && !h->flush_wanted && h->queued < BATCH_MAX) {
            /* Let a burst accumulate so it becomes one transaction. */
            struct timespec ts;
            abs_deadline(&ts, h->opt.flush_ms);
            while (!h->stopping && !h->flush_wanted &&
                   pthread_cond_timedwait(&h->work, &h->lock, &ts) == 0) {}
        }
        hist_item *items = h->head;
        size_t n = h->queued;
        if (n > BATCH_MAX) { /* take the oldest BATCH_MAX; the rest is the next batch */
            hist_item *last = items;
            for (size_t i = 1; i < BATCH_MAX; i++) last = last->next;
            h->head = last->next;
            last->next = NULL;
            n = BATCH_MAX;
            h->queued -= BATCH_MAX;
        } else {
            h->head = h->tail = NULL;
            h->queued = 0;
            h->flush_wanted = false;
        }
        unsigned long long seq = h->enqueued_seq - h->queued;
        unsigned long long retention_req = h->retention_req;
        bool retention = retention_req != h->retention_done;
        bool stop = h->stopping;
        pthread_mutex_unlock(&h->lock);

        bool ok = true;
        if (items) {
            gg_error err = GG_ERROR_INIT;
            /* A busy database (a long CLI transaction) is retried a few times. */
            for (int attempt = 0; attempt < 3; attempt++) {
                ok = write_batch(h, items, n, &err);
                if (ok) break;
                struct timespec d = {0, 50000000L};
                nanosleep(&d, NULL);
            }
            if (!ok) {
                char buf[32];
                snprintf(buf, sizeof buf, "%zu", n);
                gg_log(GG_LOG_ERROR, "history batch lost", "records", buf, "error", err.message, NULL);
            }
            gg_error_clear(&err);
            free_items(items);
        }
        if (retention || gg_now_ms() >= next_retention) {
            run_retention(h);
            next_retention = gg_now_ms() + RETENTION_EVERY_MS;
        }
        pthread_mutex_lock(&h->lock);
        if (items) {
            h->stats.batches++;
            if (ok) h->stats.written += n;
            else h->stats.failed_batches++;
        }
        h->written_seq = seq;
        if (items) __atomic_sub_fetch(&h->backlog, n, __ATOMIC_RELAXED);
        if (retention) h->retention_done = retention_req;
        pthread_cond_broadcast(&h->done);
        if (stop && !h->head) break;
    }
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

gg_history *gg_history_start(gg_store *s, const gg_history_options *o, gg_error *err) {
    gg_history *h = calloc(1, sizeof *h);
    if (!h) { gg_error_set(err, "oom", "out of memory"); return NULL; }
    h->store = s;
    if (o) h->opt = *o;
    if (h->opt.flush_ms <= 0) h->opt.flush_ms = 5;
    if (h->opt.queue_max == 0) h->opt.queue_max = 65536;
    if (h->opt.max_payload_bytes == 0) h->opt.max_payload_bytes = 65536;
    h->conn = gg_store_conn_open(s, err);
    if (!h->conn) { free(h); return NULL; }
    /* see the top of this file: batches never need the foreign-key checks */
    if (!gg_store_conn_exec(h->conn, "PRAGMA foreign_keys=OFF", err)) {
        gg_store_conn_close(h->conn);
        free(h);
        return NULL;
    }
    if (h->opt.mark_interrupted) {
        long long n = gg_store_executions_mark_interrupted_conn(h->conn, err);
        if (n < 0) { gg_store_conn_close(h->conn); free(h); return NULL; }
        if (n > 0) {
            char buf[32];
            snprintf(buf, sizeof buf, "%lld", n);
            gg_log(GG_LOG_WARN, "executions left running by a previous process marked interrupted", "count", buf, NULL);
        }
    }
    pthread_mutex_init(&h->lock, NULL);
    pthread_cond_init(&h->work, NULL);
    pthread_cond_init(&h->done, NULL);
    h->retention_req = 1; /* once at start */
    if (pthread_create(&h->thread, NULL, writer_main, h) != 0) {
        gg_error_set(err, "db", "cannot start the history writer thread");
        pthread_cond_destroy(&h->done);
        pthread_cond_destroy(&h->work);
        pthread_mutex_destroy(&h->lock);
        gg_store_conn_close(h->conn);
        free(h);
        return NULL;
    }
    return h;
}

static bool enqueue(gg_history *h, hist_item *it) {
    pthread_mutex_lock(&h->lock);
    if (h->stopping || h->queued >= h->opt.queue_max) {
        h->stats.dropped++;
        pthread_mutex_unlock(&h->lock);
        return false;
    }
    if (h->tail) h->tail->next = it;
    else h->head = it;
    h->tail = it;
    h->queued++;
    h->enqueued_seq++;
    __atomic_add_fetch(&h->backlog, 1, __ATOMIC_RELAXED);
    if (it->rec) h->stats.submitted++;
    /* Wake the writer only for the first item: it then waits flush_ms for the rest. */
    if (h->queued == 1) pthread_cond_signal(&h->work);
    pthread_mutex_unlock(&h->lock);
    return true;
}

bool gg_history_submit(gg_history *h, gg_exec_record *r) {
    if (!r) return false;
    hist_item *it = h ? pack_record(r, h->opt.max_payload_bytes) : NULL;
    if (it) { /* the original is freed here, by the thread that allocated it */
        gg_exec_record_free(r);
        if (!enqueue(h, it)) {
            free(it);
            return false;
        }
        return true;
    }
    it = h ? calloc(1, sizeof *it) : NULL;
    if (!it) {
        if (h) {
            pthread_mutex_lock(&h->lock);
            h->stats.dropped++;
            pthread_mutex_unlock(&h->lock);
        }
        gg_exec_record_free(r);
        return false;
    }
    seal_record(r, h->opt.max_payload_bytes);
    it->rec = r;
    if (!enqueue(h, it)) {
        gg_exec_record_free(r);
        free(it);
        return false;
    }
    return true;
}

void gg_history_touch_key(gg_history *h, const char *key_id, long long when_ms) {
    if (!h || !key_id || strlen(key_id) >= GG_KEY_ID_MAX) return;
    hist_item *it = calloc(1, sizeof *it);
    if (!it) return;
    snprintf(it->key_id, sizeof it->key_id, "%s", key_id);
    it->when_ms = when_ms;
    if (!enqueue(h, it)) free(it);
}

unsigned long long gg_history_backlog(gg_history *h) {
    return h ? __atomic_load_n(&h->backlog, __ATOMIC_RELAXED) : 0;
}

void gg_history_flush(gg_history *h) {
    if (!h) return;
    pthread_mutex_lock(&h->lock);
    unsigned long long target = h->enqueued_seq;
    h->flush_wanted = true;
    pthread_cond_signal(&h->work);
    while (h->written_seq < target) pthread_cond_wait(&h->done, &h->lock);
    pthread_mutex_unlock(&h->lock);
}

void gg_history_retention_now(gg_history *h) {
    if (!h) return;
    pthread_mutex_lock(&h->lock);
    unsigned long long want = ++h->retention_req;
    pthread_cond_signal(&h->work);
    while (h->retention_done < want && !h->stopping) pthread_cond_wait(&h->done, &h->lock);
    pthread_mutex_unlock(&h->lock);
}

void gg_history_get_stats(gg_history *h, gg_history_stats *out) {
    memset(out, 0, sizeof *out);
    if (!h) return;
    pthread_mutex_lock(&h->lock);
    *out = h->stats;
    pthread_mutex_unlock(&h->lock);
}

void gg_history_stop(gg_history *h) {
    if (!h) return;
    pthread_mutex_lock(&h->lock);
    h->stopping = true;
    pthread_cond_signal(&h->work);
    pthread_mutex_unlock(&h->lock);
    pthread_join(h->thread, NULL);
    free_items(h->head);
    for (int k = 0; k <= NODE_ROWS_MAX; k++) sqlite3_finalize(h->node_ins[k]);
    gg_store_conn_close(h->conn);
    pthread_cond_destroy(&h->done);
    pthread_cond_destroy(&h->work);
    pthread_mutex_destroy(&h->lock);
    free(h);
}
