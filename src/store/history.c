/* history.c — the batching history writer (records: exec_record.c, their texts: history_text.c).
 *
 * Request threads hand finished (and starting) runs to gg_history_submit, which only
 * appends to an in-memory queue under a mutex. One writer thread, on its own connection,
 * wakes when work arrives, waits flush_ms for more, and writes everything queued in one
 * transaction: with WAL and synchronous=NORMAL that is one fsync-free commit for many runs.
 *
 * The writer is one thread for the whole process and every tools/call is recorded, so its
 * cost per run bounds the gateway's throughput (bench/history measures it). Hence:
 * - A commit writes ONE history_batches row per tenant (migrations/0019_history_batches.sql:
 *   the records as JSON lines, cut at GG_HIST_SPAN_MS of starts or GG_HIST_BODY_MAX bytes;
 *   history_write.c), not a row and three index entries per run. A record's texts
 *   (arguments, result and the node records, the form of migrations/0003_history_one_row.sql)
 *   are built by gg_history_submit on the submitting thread, straight into a single
 *   allocation that also holds the queue item, with the record's stored line already
 *   encoded (row_line): the writer only copies each line, once, into its row's body.
 * - The writer meets every item cold (the thread that made it ran on another core), so what
 *   it reads of a record sits in the first cache lines of its item (hist_row's first fields),
 *   items and lines are asked for a few ahead (take_batch's ring, the bodies' LINE_AHEAD),
 *   and after the walk that encodes a batch it works from its own array of lines.
 * - history_usage gets each tenant's records and body bytes in the same commit; runs still
 *   running are listed in history_running (added by their running record, removed by their
 *   final one), which is all marking interrupted runs at start reads.
 * - The writer's connection runs without foreign-key checks during batches: it checks once
 *   per batch and tenant that the tenant exists (inside the same IMMEDIATE transaction, so
 *   no delete can slip in between), which is all the checks could catch. */
#include "store/store_internal.h"

#include <stdatomic.h>
#include <pthread.h>
#include <sodium.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

/* ---- the writer ------------------------------------------------------------------------- */

/* What the writer needs of a run: texts only, all inside the item's allocation. The fields
 * the writer reads of every record come first, beside its queue item's (hist_item): it
 * meets each item cold, as the last thread to touch it ran on another core. */
typedef struct hist_row {
    gg_exec_status status;
    long long started_ms;
    const char *tenant;
    const char *line;             /* its stored line (with the newline), in the item: row_line */
    size_t line_len;
    unsigned long long id_hash;   /* id_hash(id), taken where the row is made (row_line) */
    unsigned long long tenant_hash; /* gg_hash_str(tenant), likewise */
    char tenant_short[16];        /* the tenant's name when shorter, NUL-padded (tenant_exists
                                   * compares it without a miss on the item's text); else "" */
    bool tenant_long;             /* 16 bytes or more: compared by strcmp */
    char id[33];
    int version;
    long long finished_ms;
    double duration_ms;
    const char *graph, *tool, *key_id, *error, *arguments, *result, *nodes;
    char trace_id[33];
    char parent_id[33];
    size_t len[8];                /* each text's strlen (row_text's order; 0 for NULL) */
    unsigned char multiline;      /* bit i: text ROW_ARGUMENTS + i holds a newline */
} hist_row;

/* The row's i-th text in the journal's order (tenant graph tool key_id error arguments
 * result nodes; its encoder and decoder share it). */
#define ROW_ARGUMENTS 5
static const size_t ROW_TEXT[8] = {
    offsetof(hist_row, tenant), offsetof(hist_row, graph),     offsetof(hist_row, tool),   offsetof(hist_row, key_id),
    offsetof(hist_row, error),  offsetof(hist_row, arguments), offsetof(hist_row, result), offsetof(hist_row, nodes)};
static const char **row_text(hist_row *w, int i) { return (const char **)((char *)w + ROW_TEXT[i]); }

/* Measure w's texts (len, multiline) where the row is made, on the submitting thread (or
 * at replay), for the line's encoder (row_line). */
static void row_measure(hist_row *w) {
    w->multiline = 0;
    for (int i = 0; i < 8; i++) {
        const char *t = *row_text(w, i);
        w->len[i] = t ? strlen(t) : 0;
        if (i >= ROW_ARGUMENTS && t && memchr(t, '\n', w->len[i])) w->multiline |= 1u << (i - ROW_ARGUMENTS);
    }
}

typedef struct hist_item {
    /* what take_batch reads of each item, first */
    struct hist_item *next;
    size_t bytes;                 /* the allocation, for the backlog's memory bound */
    unsigned long long jno;       /* its entry in the journal, 0 = not journaled */
    gg_history_committed_fn committed; /* a waiter (gg_history_submit_then), or NULL */
    void *committed_user;
    bool is_row;                  /* else a key touch */
    bool running_row;             /* a row in state RUNNING (write_batch's finals need it) */
    bool want_journal;            /* gg_history_submit_journaled */
    bool pooled;                  /* data has ITEM_POOL_DATA bytes: goes back to the pool */
    bool plain;                   /* a row neither journaled nor waited for (h->plain) */
    hist_row row;
    char key_id[GG_KEY_ID_MAX];
    long long when_ms;
    char data[];                  /* the row's strings */
} hist_item;

/* Buckets of the set of runs whose running record this writer wrote (their final record
 * deletes their history_running entry; other finals need no delete). */
#define RUNNING_BUCKETS 1024
typedef struct running_id {
    struct running_id *next;
    unsigned long long hash; /* id_hash */
    char id[33];
} running_id;

/* Queue items of runs whose texts fit ITEM_POOL_DATA bytes are recycled, not freed: the
 * writer freed every item another thread had allocated, and glibc's coalescing of those
 * frees (malloc_consolidate) alone was 5 % of the writer thread. At most ITEM_POOL_MAX
 * wait in the pool (≈ 5 MB: a whole batch, BATCH_MAX); a batch bigger than its room fills it
 * (free_items). */
#define ITEM_POOL_DATA 2048
#define ITEM_POOL_MAX 2048

/* At most this many items a transaction. Submitters are held back while the backlog is
 * large (the gateway's GW_HISTORY_BACKLOG_SOFT), and the backlog only shrinks when a batch
 * commits: an unbounded batch taken after the writer fell behind (a burst, or the thread
 * starved of CPU) held every worker for the whole of its write, hundreds of ms. */
#define BATCH_MAX 2048

/* The queue's items are also kept by position, in a ring of the last QUEUE_RING enqueued,
 * so that take_batch can ask for an item's header a few items ahead instead of following
 * each next pointer to a cache miss (≈ 5 % of the writer at saturation). A longer queue
 * than the ring is walked by its pointers. A power of two. */
#define QUEUE_RING 16384
/* How far ahead take_batch asks for items. */
#define TAKE_AHEAD 8

/* Random bytes for execution ids, drawn from libsodium this many at a time: one
 * getrandom system call per 400 ids instead of one per id (≈ 0.5 µs a run). */
#define ID_RANDOM_POOL 4000

struct gg_history {
    gg_store *store;
    pthread_mutex_t pool_lock;    /* guards pool, pooled, rnd, rnd_used */
    hist_item *pool;
    size_t pooled;
    unsigned char rnd[ID_RANDOM_POOL];
    size_t rnd_used;              /* bytes of rnd handed out (all at start) */
    gg_store_conn *conn;          /* the writer's own connection */
    gg_strbuf body;               /* the writer's: a row's body */
    gg_hist_line *line_idx;       /* the batch's lines (grown as needed) */
    size_t line_cap;
    running_id *running[RUNNING_BUCKETS]; /* the writer's; see RUNNING_BUCKETS */
    bool running_lost;            /* the set could not keep one: every final deletes */
    const hist_row **finals;      /* the writer's per-batch set of rows with a final state */
    size_t finals_cap;
    gg_history_options opt;
    pthread_t thread;
    pthread_mutex_t lock;         /* guards everything below */
    pthread_cond_t work;          /* signalled on submit, flush request and stop */
    pthread_cond_t done;          /* signalled after each batch */
    hist_item *head, *tail;
    size_t queued;
    hist_item *ring[QUEUE_RING];  /* the queue's last QUEUE_RING items by enqueued_seq: take_batch */
    size_t waiters;               /* queued items with a committed callback */
    size_t plain;                 /* queued items with plain set: a crash would lose them,
                                   * so the window stays flush_ms (batch_window) */
    unsigned long long enqueued_seq, written_seq;
    _Atomic unsigned long long backlog; /* written under lock, read without (gg_history_backlog) */
    _Atomic unsigned long long backlog_bytes; /* like backlog: queued and retried items' allocations */
    _Atomic int failing;          /* the last write attempt failed */
    char fail_reason[256];        /* why, while failing */
    bool stopping, flush_wanted;
    unsigned long long retention_req, retention_done; /* requests / completed passes */
    bool gave_up;                 /* records were given up at stop: keep the journal */
    gg_history_journal *journal;          /* durable without waiting (journal.c); NULL = none */
    gg_history_stats stats;
};

static bool journal_start(gg_history *h, gg_error *err);

/* Texts of a record, one after the other in b; NULL texts are absent (offset SIZE_MAX). */
/* An item with room for need bytes of data: from the pool when it fits. NULL on OOM. */
static hist_item *item_get(gg_history *h, size_t need) {
    if (need > ITEM_POOL_DATA) {
        hist_item *it = malloc(sizeof *it + need);
        if (it) {
            it->pooled = false;
            it->bytes = sizeof *it + need;
        }
        return it;
    }
    pthread_mutex_lock(&h->pool_lock);
    hist_item *it = h->pool;
    if (it) {
        h->pool = it->next;
        h->pooled--;
    }
    pthread_mutex_unlock(&h->pool_lock);
    if (!it && (it = malloc(sizeof *it + ITEM_POOL_DATA)) != NULL) it->pooled = true;
    if (it) it->bytes = sizeof *it + ITEM_POOL_DATA;
    return it;
}

static void put_line(gg_strbuf *b, const hist_row *w);
static unsigned long long id_hash(const char *id);

/* w's texts that point into [from, from + n) moved to the same offsets from to. */
static void row_rebase(hist_row *w, const char *from, size_t n, char *to) {
    for (int i = 0; i < 8; i++) {
        const char **t = row_text(w, i);
        uintptr_t at = (uintptr_t)*t, lo = (uintptr_t)from; /* others: "" literals */
        if (*t && at >= lo && at - lo < n) *t = to + (at - lo);
    }
}

/* w's stored line encoded where the row is made — on the submitting thread, or at replay —
 * into l: the writer, the one serial part of recording, then only copies it (the encoding
 * was ≈ a fifth of the writer's time a record at saturation). What the line holds of the
 * moment it is made is settled first: a start the id carries that is earlier than the
 * record's (an input-required round re-records its run under the first round's id, and
 * readers find a run by that start), and a final state's finishing time when none was
 * given. false when l ran out of memory. */
static bool row_line(hist_row *w, gg_strbuf *l) {
    long long id_t = gg_exec_id_start_ms(w->id);
    if (id_t >= 0 && id_t < w->started_ms) w->started_ms = id_t;
    if (w->status != GG_EXEC_RUNNING && !w->finished_ms) w->finished_ms = gg_wall_ms();
    w->id_hash = id_hash(w->id);
    w->tenant_hash = gg_hash_str(w->tenant);
    size_t tl = strlen(w->tenant);
    memset(w->tenant_short, 0, sizeof w->tenant_short);
    w->tenant_long = tl >= sizeof w->tenant_short;
    if (!w->tenant_long) memcpy(w->tenant_short, w->tenant, tl);
    put_line(l, w);
    return !l->oom;
}

/* The queue item for r: the row's fields, every text and its line in ONE allocation. NULL
 * on OOM. */
static hist_item *pack_record(gg_history *h, const gg_exec_record *r, size_t max) {
    char stack[4096], lstack[2048];
    gg_strbuf b, l;
    gg_strbuf_use(&b, stack, sizeof stack);
    gg_strbuf_use(&l, lstack, sizeof lstack);
    gg_history_texts t;
    /* the short strings first, then the JSON texts */
    const char *strs[5] = {r->tenant, r->graph, r->tool, r->key_id, r->error};
    size_t off[5];
    for (int i = 0; i < 5; i++) {
        off[i] = SIZE_MAX;
        if (!strs[i]) continue;
        off[i] = b.len;
        gg_strbuf_append(&b, strs[i], strlen(strs[i]) + 1);
    }
    gg_history_build_texts(&b, r, max, h->opt.max_run_nodes, h->opt.max_run_node_bytes, &t);
    hist_row row, *w = &row;
    memset(w, 0, sizeof *w);
    hist_item *it = NULL;
    if (!b.oom) {
        memcpy(w->id, r->id, sizeof w->id);
        w->id[sizeof w->id - 1] = 0;
        w->version = r->version;
        w->status = r->status;
        w->started_ms = r->started_ms;
        w->finished_ms = r->finished_ms;
        w->duration_ms = gg_store_round_us(r->duration_ms);
        memcpy(w->trace_id, r->trace_id, sizeof w->trace_id);
        w->trace_id[sizeof w->trace_id - 1] = 0;
        memcpy(w->parent_id, r->parent_id, sizeof w->parent_id);
        w->parent_id[sizeof w->parent_id - 1] = 0;
        const char **dst[5] = {&w->tenant, &w->graph, &w->tool, &w->key_id, &w->error};
        for (int i = 0; i < 5; i++) *dst[i] = off[i] == SIZE_MAX ? NULL : b.data + off[i];
        w->arguments = t.args == SIZE_MAX ? NULL : b.data + t.args;
        w->result = t.result == SIZE_MAX ? NULL : b.data + t.result;
        w->nodes = t.nodes == SIZE_MAX ? NULL : b.data + t.nodes;
        if (!w->tenant) w->tenant = "";
        if (!w->graph) w->graph = "";
        if (!w->tool) w->tool = "";
        row_measure(w);
        if (row_line(w, &l)) it = item_get(h, b.len + l.len);
    }
    if (it) {
        bool pooled = it->pooled;
        size_t bytes = it->bytes;
        memset(it, 0, sizeof *it);
        it->pooled = pooled;
        it->bytes = bytes;
        it->is_row = true;
        memcpy(it->data, b.data, b.len);
        memcpy(it->data + b.len, l.data, l.len);
        it->row = row;
        it->running_row = row.status == GG_EXEC_RUNNING;
        row_rebase(&it->row, b.data, b.len, it->data);
        it->row.line = it->data + b.len;
        it->row.line_len = l.len;
    }
    gg_strbuf_free(&l);
    gg_strbuf_free(&b);
    return it;
}

/* Eight bytes read as one word (word_plain, id_hash): 1 in each byte, its top bit in each. */
#define ID_ONES 0x0101010101010101ull
#define ID_HIGHS 0x8080808080808080ull

/* How a line's field is written: a number; a string as a JSON string (NULL: null); a JSON
 * text inlined (NULL: null), or as a JSON string when it would break the line (a newline
 * in it, or empty). */
typedef enum { HL_INT, HL_STR, HL_RAW } hl_kind;
typedef struct hl_field {
    hl_kind kind;
    long long v;    /* HL_INT */
    const char *s;  /* HL_STR, HL_RAW: s, its strlen n, and whether it holds a newline */
    size_t n;
    bool multiline;
} hl_field;

/* Whether the 8 bytes of w go into a JSON string as they are: none below 0x20, no quote,
 * backslash or byte >= 0x80 (those a JSON string escapes or checks as UTF-8). */
static inline bool word_plain(unsigned long long w) {
    const unsigned long long ones = ID_ONES, highs = ID_HIGHS;
    unsigned long long q = w ^ (ones * '"'), bs = w ^ (ones * '\\');
    if (w & highs) return false;
    /* a byte below 0x20, or a zero byte of q or bs (the classic "has a byte less than"
     * tests); ~w stands for ~q and ~bs: with no high byte their top bits are w's */
    return !(((w - ones * 0x20) | (q - ones) | (bs - ones)) & ~w & highs);
}

/* s (n bytes) copied to d eight bytes at a time while checked (up to 7 bytes past d + n
 * may be written); false as soon as a byte would need gg_strbuf_json_string's care. Ids
 * and names are short: one pass instead of a scan, then a memcpy call. */
static bool copy_plain(char *d, const char *s, size_t n) {
    unsigned long long w;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, s + i, 8);
        if (!word_plain(w)) return false;
        memcpy(d + i, &w, 8);
    }
    if (i == n) return true;
    w = 0x4141414141414141ull; /* the tail padded with 'A' */
    memcpy(&w, s + i, n - i);
    memcpy(d + i, &w, 8);
    return word_plain(w);
}

/* Room for n more bytes and the NUL at b's end; NULL when b is out of memory. */
static inline char *room(gg_strbuf *b, size_t n) { return gg_strbuf_reserve(b, n) ? b->data + b->len : NULL; }

/* f after its separator sep ('[' or ','): one reservation and plain stores in the usual
 * cases (a digit, null, a string with nothing to escape, a JSON text), the strbuf's
 * writers in the others. */
static void put_field(gg_strbuf *b, char sep, const hl_field *f) {
    char *p;
    if (f->kind == HL_INT) {
        if (f->v >= 0 && f->v < 10 && (p = room(b, 2)) != NULL) {
            p[0] = sep;
            p[1] = (char)('0' + f->v);
            p[2] = 0;
            b->len += 2;
        } else {
            gg_strbuf_putc(b, sep);
            gg_strbuf_put_int(b, f->v);
        }
        return;
    }
    if (!f->s) {
        if ((p = room(b, 5)) != NULL) {
            memcpy(p, sep == '[' ? "[null" : ",null", 6);
            b->len += 5;
        }
        return;
    }
    size_t n = f->n;
    bool raw = f->kind == HL_RAW && n && !f->multiline;
    if (raw && (p = room(b, n + 1)) != NULL) {
        p[0] = sep;
        memcpy(p + 1, f->s, n);
        p[n + 1] = 0;
        b->len += n + 1;
    } else if (!raw && (p = room(b, n + 3 + 8)) != NULL) {
        if (copy_plain(p + 2, f->s, n)) { /* what gg_strbuf_json_string writes */
            p[0] = sep;
            p[1] = '"';
            p[n + 2] = '"';
            p[n + 3] = 0;
            b->len += n + 3;
        } else { /* b's length and terminator are as they were */
            gg_strbuf_putc(b, sep);
            gg_strbuf_json_string(b, f->s, n);
        }
    }
}

/* w's line (see GG_HL_*), with its newline: its fields in a table, written by one loop. */
static void put_line(gg_strbuf *b, const hist_row *w) {
    bool final = w->status != GG_EXEC_RUNNING;
    const hl_field f[GG_HL_FIELDS] = {
        [GG_HL_ID] = {HL_STR, 0, w->id, strlen(w->id), false},
        [GG_HL_STATUS] = {HL_INT, (long long)w->status, NULL, 0, false},
        [GG_HL_STARTED] = {HL_INT, w->started_ms, NULL, 0, false},
        [GG_HL_FINISHED] = {HL_INT, final ? (w->finished_ms ? w->finished_ms : gg_wall_ms()) : 0, NULL, 0, false},
        [GG_HL_DURATION_US] = {HL_INT, final && isfinite(w->duration_ms) ? llround(w->duration_ms * 1000.0) : 0, NULL,
                               0, false},
        [GG_HL_VERSION] = {HL_INT, w->version, NULL, 0, false},
        [GG_HL_GRAPH] = {HL_STR, 0, w->graph, w->len[1], false},
        [GG_HL_TOOL] = {HL_STR, 0, w->tool, w->len[2], false},
        [GG_HL_KEY_ID] = {HL_STR, 0, w->key_id, w->len[3], false},
        [GG_HL_ERROR] = {HL_STR, 0, w->error, w->len[4], false},
        [GG_HL_ARGUMENTS] = {HL_RAW, 0, w->arguments, w->len[5], w->multiline & 1},
        [GG_HL_RESULT] = {HL_RAW, 0, w->result, w->len[6], w->multiline & 2},
        [GG_HL_NODES] = {HL_RAW, 0, w->nodes, w->len[7], w->multiline & 4},
        [GG_HL_TRACE_ID] = {HL_STR, 0, w->trace_id[0] ? w->trace_id : NULL, strlen(w->trace_id), false},
        [GG_HL_PARENT] = {HL_STR, 0, w->parent_id[0] ? w->parent_id : NULL, strlen(w->parent_id), false},
    };
    for (int i = 0; i < GG_HL_FIELDS; i++) put_field(b, i ? ',' : '[', &f[i]);
    gg_strbuf_append(b, "]\n", 2);
}

/* The hash of an id for the writer's sets, made once a record a batch. An id of
 * gg_exec_id_new (32 characters: 12 hex digits of time, then 20 random ones): its last 16
 * characters mixed in a few instructions, the random part spreading well (FNV-1a over 32
 * characters, three times a record, was ~650 instructions a record); another id: FNV-1a. */
static unsigned long long id_hash(const char *id) {
    unsigned long long w[4];
    memcpy(w, id, sizeof w); /* id: a char[33] */
    for (int i = 0; i < 4; i++)
        if ((w[i] - ID_ONES) & ~w[i] & ID_HIGHS) return gg_hash_str(id); /* a NUL: shorter */
    unsigned long long x = (w[2] ^ (w[3] * 0x9E3779B97F4A7C15ull)) * 0xC2B2AE3D27D4EB4Full;
    return x ^ (x >> 32);
}

static running_id **running_bucket(gg_history *h, unsigned long long hash) {
    return &h->running[hash % RUNNING_BUCKETS];
}

/* Remember that id's running record is written (false on OOM: then finals always delete). */
static void running_remember(gg_history *h, const char *id, unsigned long long hash) {
    running_id *r = malloc(sizeof *r);
    if (!r) { h->running_lost = true; return; }
    snprintf(r->id, sizeof r->id, "%s", id);
    r->hash = hash;
    running_id **b = running_bucket(h, hash);
    r->next = *b;
    *b = r;
}

static bool running_known(gg_history *h, const char *id, unsigned long long hash) {
    for (running_id *r = *running_bucket(h, hash); r; r = r->next)
        if (r->hash == hash && strcmp(r->id, id) == 0) return true;
    return false;
}

/* Forget id's running record (its final one is written). */
static void running_forget(gg_history *h, const char *id, unsigned long long hash) {
    for (running_id **p = running_bucket(h, hash); *p; p = &(*p)->next)
        if ((*p)->hash == hash && strcmp((*p)->id, id) == 0) {
            running_id *r = *p;
            *p = r->next;
            free(r);
            return;
        }
}

static void running_free(gg_history *h) {
    for (size_t k = 0; k < RUNNING_BUCKETS; k++)
        for (running_id *r = h->running[k], *next; r; r = next) {
            next = r->next;
            free(r);
        }
    memset(h->running, 0, sizeof h->running);
}

/* Tenants seen in this batch (a run of a deleted tenant is dropped: its rows would be
 * orphans, the foreign-key checks being off), by their names' hash (tenant_hash): one
 * comparison a record however many tenants a batch holds, up to TENANT_CACHE of them, and
 * of the row's own copy of a short name (tenant_short) rather than of the item's text, which
 * would be a cache miss a record. */
#define TENANT_CACHE 256 /* a power of two */
typedef struct tenant_cache {
    const hist_row *row[TENANT_CACHE]; /* the batch's first row of the tenant; NULL: free */
    bool exists[TENANT_CACHE];
    int n;
} tenant_cache;

static const char SQL_TENANT_EXISTS[] = "SELECT 1 FROM tenants WHERE name = ?1";

static bool same_tenant(const hist_row *a, const hist_row *b) {
    if (a->tenant_hash != b->tenant_hash || a->tenant_long != b->tenant_long) return false;
    return a->tenant_long ? strcmp(a->tenant, b->tenant) == 0
                          : memcmp(a->tenant_short, b->tenant_short, sizeof a->tenant_short) == 0;
}

/* 1 when the row's tenant exists (*slot: its place in the cache, -1 if it did not fit), 0
 * when not, -1 on error. */
static int tenant_exists(gg_history *h, tenant_cache *tc, const hist_row *w, int *slot, gg_error *err) {
    *slot = -1;
    size_t i = w->tenant_hash & (TENANT_CACHE - 1);
    for (; tc->row[i]; i = (i + 1) & (TENANT_CACHE - 1))
        if (same_tenant(tc->row[i], w)) {
            *slot = (int)i;
            return tc->exists[i];
        }
    gg_db_stmt *st = gg_store_conn_stmt(h->conn, SQL_TENANT_EXISTS, err);
    if (!st) return -1;
    gg_db_bind_text(st, 1, w->tenant, -1, SQLITE_STATIC);
    int rc = gg_db_step(st);
    gg_db_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) { gg_store_set_db_error(h->conn, err, "tenants"); return -1; }
    if (tc->n < TENANT_CACHE / 2) { /* half full at most: probes stay short */
        tc->row[i] = w;
        tc->exists[i] = rc == SQLITE_ROW;
        tc->n++;
        *slot = (int)i;
    }
    return rc == SQLITE_ROW;
}

/* The batch's rows in a final state by id hash (h->finals, *cap slots), for superseded;
 * NULL when it could not be had (then nothing is skipped). */
static const hist_row **make_finals(gg_history *h, hist_item *items, size_t n, size_t *cap) {
    *cap = 16;
    while (*cap < n * 2) *cap *= 2;
    /* the set lives on with the writer: a calloc and free a batch showed in profiles */
    if (*cap > h->finals_cap) {
        const hist_row **nf = realloc(h->finals, *cap * sizeof *nf);
        if (!nf) return NULL;
        h->finals = nf;
        h->finals_cap = *cap;
    }
    const hist_row **finals = h->finals;
    memset(finals, 0, *cap * sizeof *finals);
    for (hist_item *it = items; it; it = it->next) {
        if (!it->is_row || it->row.status == GG_EXEC_RUNNING) continue;
        size_t i = it->row.id_hash & (*cap - 1);
        while (finals[i]) i = (i + 1) & (*cap - 1);
        finals[i] = &it->row;
    }
    return finals;
}

/* Whether RUNNING row w has its final state among finals (make_finals; NULL: no). */
static bool superseded(const hist_row **finals, size_t cap, const hist_row *w) {
    if (!finals) return false;
    for (size_t i = w->id_hash & (cap - 1); finals[i]; i = (i + 1) & (cap - 1))
        if (finals[i]->id_hash == w->id_hash && strcmp(finals[i]->id, w->id) == 0) return true;
    return false;
}

/* Write one batch in one transaction. A RUNNING record whose final state is in the same
 * batch is skipped: the final upsert writes the whole row anyway. running: the batch may
 * hold RUNNING records (without, there is nothing to skip and no table of finals to make).
 * Each walk of the items meets them cold (the commit in between evicts them), so after the
 * one that encodes the batch the writer reads its own array of lines instead. */
static bool write_batch(gg_history *h, hist_item *items, size_t n, bool running, size_t *rows, gg_error *err) {
    size_t cap = 0;
    const hist_row **finals = running ? make_finals(h, items, n, &cap) : NULL;
    *rows = 0;
    tenant_cache tc;
    memset(tc.row, 0, sizeof tc.row);
    tc.n = 0;
    if (n > h->line_cap) {
        gg_hist_line *nl = realloc(h->line_idx, n * sizeof *nl);
        if (!nl) { gg_error_set(err, "oom", "out of memory"); return false; }
        h->line_idx = nl;
        h->line_cap = n;
    }
    size_t nl = 0;
    bool ok = gg_store_conn_exec(h->conn, "BEGIN IMMEDIATE", err);
    for (hist_item *it = items; ok && it; it = it->next) {
        if (!it->is_row) {
            ok = gg_store_key_touch_conn(h->conn, it->key_id, it->when_ms, err);
            continue;
        }
        ++*rows;
        hist_row *w = &it->row; /* its start already the one its id carries (row_line) */
        if (w->status == GG_EXEC_RUNNING && superseded(finals, cap, w)) continue;
        int slot;
        int ex = tenant_exists(h, &tc, w, &slot, err);
        if (ex < 0) { ok = false; break; }
        if (!ex) continue;
        if (w->status == GG_EXEC_RUNNING) ok = gg_history_running_add(h->conn, w->id, w->tenant, w->started_ms, err);
        else if (h->running_lost || running_known(h, w->id, w->id_hash))
            ok = gg_history_running_del(h->conn, w->id, err);
        /* the tenant as the cache holds it: gg_history_write_lines groups lines by address */
        h->line_idx[nl++] = (gg_hist_line){slot >= 0 ? tc.row[slot]->tenant : w->tenant, w->id, w->started_ms,
                                            (int)w->status, w->line, w->line_len, w->id_hash};
    }
    /* the quota keeper's max_rows enforced in this commit (SQLite; see usage.c) */
    long long quota = gg_store_quota_rows(h->store), dropped = 0, dropped_bytes = 0;
    if (ok)
        ok = gg_history_write_lines(h->conn, h->line_idx, nl, &h->body, quota, &dropped, &dropped_bytes,
                                    err);
    if (ok) ok = gg_store_conn_exec(h->conn, "COMMIT", err);
    if (!ok) gg_db_exec_quiet(h->conn, "ROLLBACK");
    if (ok && dropped) gg_store_quota_counted(h->store, dropped, dropped_bytes);
    /* the set follows what committed: a retried batch adds its running records again */
    for (size_t i = 0; ok && i < nl; i++) {
        const gg_hist_line *l = &h->line_idx[i];
        if (l->status == GG_EXEC_RUNNING) running_remember(h, l->id, l->id_hash);
        else running_forget(h, l->id, l->id_hash);
    }
    return ok;
}

/* Pooled items back to the pool (up to ITEM_POOL_MAX), the others freed; with stored, their
 * waiters told first, in the same walk (each walk of a batch meets its items cold). Only the
 * writer thread (or start and stop, without it) adds to the pool, so its room only grows
 * meanwhile. */
static void free_items(gg_history *h, hist_item *it, bool stored) {
    pthread_mutex_lock(&h->pool_lock);
    size_t room = ITEM_POOL_MAX - h->pooled;
    pthread_mutex_unlock(&h->pool_lock);
    hist_item *keep = NULL, *keep_tail = NULL;
    size_t n_keep = 0;
    while (it) {
        hist_item *next = it->next;
        if (stored && it->committed) it->committed(it->committed_user, true);
        if (it->pooled && n_keep < room) {
            it->next = keep;
            if (!keep) keep_tail = it;
            keep = it;
            n_keep++;
        } else { /* too big for the pool, or this burst's surplus: back to malloc */
            free(it);
        }
        it = next;
    }
    if (!keep) return;
    pthread_mutex_lock(&h->pool_lock);
    keep_tail->next = h->pool;
    h->pool = keep;
    h->pooled += n_keep;
    pthread_mutex_unlock(&h->pool_lock);
}

static void run_retention(gg_history *h) {
    if (h->opt.max_age_ms <= 0 && h->opt.max_count <= 0) return;
    gg_error err = GG_ERROR_INIT;
    /* as every other connection does (no cascade depends on it any more since 0003) */
    gg_db_exec_quiet(h->conn, "PRAGMA foreign_keys=ON");
    long long n = gg_store_executions_prune_conn(h->conn, h->opt.max_age_ms, h->opt.max_count, &err);
    gg_db_exec_quiet(h->conn, "PRAGMA foreign_keys=OFF");
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

static void abs_deadline_us(struct timespec *ts, long long us) {
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += us / 1000000;
    ts->tv_nsec += (us % 1000000) * 1000L;
    if (ts->tv_nsec >= 1000000000L) { ts->tv_sec++; ts->tv_nsec -= 1000000000L; }
}

#define RETENTION_EVERY_MS 60000
/* A failed batch: QUICK_ATTEMPTS tries 50 ms apart (a briefly busy database), then its
 * waiters are answered and it is retried alone, BACKOFF_FIRST_MS doubling to
 * BACKOFF_MAX_MS, until it commits. */
#define QUICK_ATTEMPTS 3
#define BACKOFF_FIRST_MS 100
#define BACKOFF_MAX_MS 5000

/* A batch taken from the queue; kept (retried) until it commits or is given up at stop. */
typedef struct batch {
    hist_item *items;
    size_t n;                /* items: rows and key touches */
    size_t running;          /* rows in state RUNNING among them */
    unsigned long long bytes, seq; /* seq: enqueued_seq after its last item */
    unsigned long long jno;  /* the highest journal entry among its items, 0 = none */
} batch;

/* Call and clear the waiters of a list of items (never under h->lock). */
static void release_waiters(hist_item *items, bool ok) {
    for (hist_item *it = items; it; it = it->next)
        if (it->committed) {
            gg_history_committed_fn fn = it->committed;
            it->committed = NULL;
            fn(it->committed_user, ok);
        }
}

/* Called with h->lock held: the waiters of every queued item answered "not stored" (the
 * writer is failing; their records stay queued). Unlocks while calling them. */
static void release_queued_waiters(gg_history *h) {
    while (h->waiters) {
        struct { gg_history_committed_fn fn; void *user; } w[64];
        size_t n = 0;
        for (hist_item *it = h->head; it && n < 64; it = it->next)
            if (it->committed) {
                w[n].fn = it->committed;
                w[n++].user = it->committed_user;
                it->committed = NULL;
                if (it->is_row && !it->jno && !it->plain) { /* no longer waited for */
                    it->plain = true;
                    h->plain++;
                }
            }
        h->waiters = n < 64 ? 0 : h->waiters - n;
        pthread_mutex_unlock(&h->lock);
        for (size_t i = 0; i < n; i++) w[i].fn(w[i].user, false);
        pthread_mutex_lock(&h->lock);
        if (n == 0) h->waiters = 0;
    }
}

/* Called with h->lock held: how long a burst may accumulate. Short while an answer waits
 * for the commit; long while every queued row is already in the journal, since nothing
 * answered can then be lost and bigger batches cost the writer less a record (at 20k calls
 * a second on one core, 20 ms instead of 5 halved the writer's CPU a call:
 * bench/gateway/README.md); flush_ms otherwise, which bounds what a crash loses. */
static int batch_window(const gg_history *h) {
    if (h->waiters) return h->opt.commit_window_ms;
    if (h->journal && !h->plain && h->opt.journal_window_ms > 0) return h->opt.journal_window_ms;
    return h->opt.flush_ms;
}

/* Called with h->lock held: wait for work, then let a burst accumulate so it becomes one
 * transaction (batch_window; re-read as items arrive, so a waiter or a plain row shortens
 * it). */
static void wait_for_work(gg_history *h, double next_retention) {
    while (!h->head && !h->stopping && !h->flush_wanted && h->retention_req == h->retention_done) {
        double wait = next_retention - gg_now_ms();
        if (wait <= 0) break;
        struct timespec ts;
        abs_deadline_us(&ts, (long long)(wait * 1000) + 1000);
        pthread_cond_timedwait(&h->work, &h->lock, &ts);
    }
    if (!h->head) return;
    double start = gg_now_ms();
    while (!h->stopping && !h->flush_wanted && h->queued < BATCH_MAX) {
        double left = start + batch_window(h) - gg_now_ms();
        if (left <= 0) break;
        struct timespec ts;
        abs_deadline_us(&ts, (long long)(left * 1000) + 1);
        pthread_cond_timedwait(&h->work, &h->lock, &ts);
    }
}

/* Called with h->lock held: the item at position k of the queue (0: its head). */
static inline hist_item *queued_at(gg_history *h, size_t k) {
    return h->ring[(h->enqueued_seq - h->queued + k) & (QUEUE_RING - 1)];
}

/* Called with h->lock held: the oldest BATCH_MAX queued items (or all). */
static batch take_batch(gg_history *h) {
    batch b = {.items = h->head};
    size_t waiters = 0, plain = 0, want = h->queued < BATCH_MAX ? h->queued : BATCH_MAX;
    bool by_ring = h->queued <= QUEUE_RING;
    hist_item *last = NULL;
    for (hist_item *it = h->head; it && b.n < want; it = it->next) {
        if (by_ring && b.n + TAKE_AHEAD < want) gg_prefetch(queued_at(h, b.n + TAKE_AHEAD), 1);
        b.n++;
        b.bytes += it->bytes;
        b.running += it->running_row;
        if (it->jno > b.jno) b.jno = it->jno;
        waiters += it->committed != NULL;
        plain += it->plain;
        last = it;
    }
    if (!last) return b;
    h->head = last->next;
    last->next = NULL;
    if (!h->head) {
        h->tail = NULL;
        h->flush_wanted = false;
    }
    h->queued -= b.n;
    h->waiters -= waiters;
    h->plain -= plain;
    b.seq = h->enqueued_seq - h->queued;
    return b;
}

/* Write b: a few quick attempts for a new batch, one for a retried one. */
static bool write_attempts(gg_history *h, batch *b, bool retried, size_t *rows, gg_error *err) {
    for (int attempt = 0; attempt < (retried ? 1 : QUICK_ATTEMPTS); attempt++) {
        if (attempt) {
            struct timespec d = {0, 50000000L};
            nanosleep(&d, NULL);
        }
        gg_error_clear(err);
        if (write_batch(h, b->items, b->n, b->running > 0, rows, err)) return true;
    }
    return false;
}

/* Rows not in the journal (those are written at the next start, not lost). */
static size_t count_rows(const hist_item *it) {
    size_t n = 0;
    for (; it; it = it->next) n += it->is_row && !it->jno;
    return n;
}

/* Called with h->lock held, at stop once retrying is over: everything left is lost (but
 * what the journal holds, which the next start writes). */
static void give_up(gg_history *h, batch *retry) {
    hist_item *rest = h->head;
    h->head = h->tail = NULL;
    unsigned long long n = retry->n + h->queued;
    unsigned long long lost = count_rows(retry->items) + count_rows(rest);
    h->queued = 0;
    h->waiters = 0;
    h->plain = 0;
    h->stats.lost += lost;
    atomic_store_explicit(&h->backlog_bytes, 0, memory_order_relaxed);
    atomic_fetch_sub_explicit(&h->backlog, n, memory_order_relaxed);
    h->written_seq = h->enqueued_seq;
    h->gave_up = true;
    pthread_mutex_unlock(&h->lock);
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", lost);
    gg_log(GG_LOG_ERROR, "history records lost at stop: the database could not be written", "records", buf,
           "error", h->fail_reason, NULL);
    release_waiters(retry->items, false);
    release_waiters(rest, false);
    free_items(h, retry->items, false);
    free_items(h, rest, false);
    retry->items = NULL;
    pthread_mutex_lock(&h->lock);
}

/* Called with h->lock held after a write attempt of b. */
static void after_write(gg_history *h, batch *b, bool ok, size_t rows, const gg_error *err, batch *retry,
                        int *backoff) {
    if (ok) {
        h->stats.batches++;
        h->stats.written += rows;
        h->written_seq = b->seq;
        atomic_fetch_sub_explicit(&h->backlog_bytes, b->bytes, memory_order_relaxed);
        atomic_fetch_sub_explicit(&h->backlog, b->n, memory_order_relaxed);
        if (atomic_load_explicit(&h->failing, memory_order_relaxed)) {
            atomic_store_explicit(&h->failing, 0, memory_order_relaxed);
            char buf[32];
            snprintf(buf, sizeof buf, "%llu", (unsigned long long)h->queued);
            gg_log(GG_LOG_WARN, "history writer recovered: batches commit again", "queued", buf, NULL);
        }
        retry->items = NULL;
        *backoff = 0;
        return;
    }
    h->stats.write_errors++;
    if (!retry->items) h->stats.failed_batches++;
    bool was_failing = atomic_load_explicit(&h->failing, memory_order_relaxed);
    snprintf(h->fail_reason, sizeof h->fail_reason, "%s", err->message ? err->message : "database error");
    atomic_store_explicit(&h->failing, 1, memory_order_relaxed);
    if (!was_failing) {
        char buf[32];
        snprintf(buf, sizeof buf, "%llu", (unsigned long long)(b->n + h->queued));
        gg_log(GG_LOG_ERROR, "history batch cannot be written: kept and retried", "records", buf, "error",
               h->fail_reason, NULL);
    }
    *retry = *b;
    *backoff = *backoff ? (*backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : *backoff * 2) : BACKOFF_FIRST_MS;
    release_queued_waiters(h);
}

static void *writer_main(void *arg) {
    gg_history *h = arg;
    pthread_setname_np(pthread_self(), "gg-history"); /* for top -H, perf, /proc/PID/task */
    double next_retention = gg_now_ms() + RETENTION_EVERY_MS, stop_deadline = 0;
    batch retry = {.items = NULL};
    int backoff = 0;
    pthread_mutex_lock(&h->lock);
    for (;;) {
        bool retried = retry.items != NULL;
        batch b = retry;
        if (retried) { /* back off (shorter once stopping), then the same batch again */
            struct timespec ts;
            abs_deadline_us(&ts, 1000LL * (h->stopping && backoff > 250 ? 250 : backoff));
            while (!h->stopping && pthread_cond_timedwait(&h->work, &h->lock, &ts) == 0) {}
        } else {
            wait_for_work(h, next_retention);
            b = take_batch(h);
        }
        unsigned long long retention_req = h->retention_req;
        bool retention = retention_req != h->retention_done;
        bool stop = h->stopping;
        pthread_mutex_unlock(&h->lock);

        bool ok = true;
        size_t rows = 0; /* records (not key touches) in this batch */
        gg_error err = GG_ERROR_INIT;
        if (b.items) {
            ok = write_attempts(h, &b, retried, &rows, &err);
            if (ok && b.jno) gg_history_journal_release(h->journal, b.jno);
            if (ok) free_items(h, b.items, true);
            else release_waiters(b.items, false);
        }
        if (!atomic_load_explicit(&h->failing, memory_order_relaxed) && (retention || gg_now_ms() >= next_retention)) {
            run_retention(h);
            next_retention = gg_now_ms() + RETENTION_EVERY_MS;
        }
        struct timespec cpu;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
        pthread_mutex_lock(&h->lock);
        h->stats.writer_cpu_ns = (unsigned long long)cpu.tv_sec * 1000000000ULL + (unsigned long long)cpu.tv_nsec;
        if (b.items) after_write(h, &b, ok, rows, &err, &retry, &backoff);
        gg_error_clear(&err);
        if (retention) h->retention_done = retention_req;
        if (stop && retry.items) {
            if (stop_deadline == 0) stop_deadline = gg_now_ms() + h->opt.stop_retry_ms;
            if (gg_now_ms() >= stop_deadline) give_up(h, &retry);
        }
        pthread_cond_broadcast(&h->done);
        if (stop && !h->head && !retry.items) break;
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
    if (h->opt.commit_window_ms == 0) h->opt.commit_window_ms = 1;
    else if (h->opt.commit_window_ms < 0) h->opt.commit_window_ms = 0; /* commit as soon as free */
    if (h->opt.queue_max == 0) h->opt.queue_max = 65536;
    if (h->opt.backlog_max_bytes == 0) h->opt.backlog_max_bytes = 256u << 20;
    if (h->opt.stop_retry_ms <= 0) h->opt.stop_retry_ms = 3000;
    if (h->opt.max_payload_bytes == 0) h->opt.max_payload_bytes = 65536;
    h->conn = gg_store_conn_open(s, err);
    if (!h->conn) { free(h); return NULL; }
    /* See the top of this file: batches never need the foreign-key checks. */
    if (!gg_store_conn_exec(h->conn, "PRAGMA foreign_keys=OFF", err) ||
        (h->opt.fsync && !gg_store_conn_exec(h->conn, "PRAGMA synchronous=FULL", err))) {
        gg_store_conn_close(h->conn);
        free(h);
        return NULL;
    }
    if (!gg_store_conn_set_replica(h->conn, h->opt.replica_id, err)) {
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
    pthread_mutex_init(&h->pool_lock, NULL);
    h->rnd_used = sizeof h->rnd; /* filled on first use */
    pthread_cond_init(&h->work, NULL);
    pthread_cond_init(&h->done, NULL);
    h->retention_req = 1; /* once at start */
    bool started = !h->opt.journal_dir || journal_start(h, err);
    if (!started || pthread_create(&h->thread, NULL, writer_main, h) != 0) {
        if (started) gg_error_set(err, "db", "cannot start the history writer thread");
        gg_history_journal_close(h->journal, false);
        pthread_mutex_destroy(&h->pool_lock);
        pthread_cond_destroy(&h->done);
        pthread_cond_destroy(&h->work);
        pthread_mutex_destroy(&h->lock);
        gg_store_conn_close(h->conn);
        free(h);
        return NULL;
    }
    return h;
}

/* ---- the journal's entries (journal.c frames them) ------------------------------------------ */

/* A row's fixed fields, then its strings (tenant graph tool key_id error arguments result
 * nodes) without terminators. Native layout: the journal is read back by the same build
 * on the same machine (the magic changes with the layout). */
typedef struct jfixed {
    char id[32], trace_id[32], parent_id[32];
    int32_t version, status;
    int64_t started_ms, finished_ms;
    double duration_ms;
    uint32_t len[8];                 /* UINT32_MAX = NULL */
} jfixed;


/* Append it's row to the journal (caller holds h->lock: entries go in queue order). */
static unsigned long long journal_append(gg_history *h, hist_item *it) {
    jfixed f;
    memset(&f, 0, sizeof f);
    hist_row *w = &it->row;
    memcpy(f.id, w->id, 32);
    memcpy(f.trace_id, w->trace_id, 32);
    memcpy(f.parent_id, w->parent_id, 32);
    f.version = w->version;
    f.status = (int32_t)w->status;
    f.started_ms = w->started_ms;
    f.finished_ms = w->finished_ms;
    f.duration_ms = w->duration_ms;
    struct iovec iov[9] = {{&f, sizeof f}};
    int n = 1;
    for (int i = 0; i < 8; i++) {
        const char *str = *row_text(w, i);
        f.len[i] = str ? (uint32_t)w->len[i] : UINT32_MAX;
        if (str && f.len[i]) iov[n++] = (struct iovec){(void *)str, f.len[i]};
    }
    return gg_history_journal_append(h->journal, iov, n);
}

/* The queue item of a journal entry (replay); NULL when it does not parse. */
static hist_item *journal_item(const unsigned char *p, size_t n) {
    jfixed f;
    if (n < sizeof f) return NULL;
    memcpy(&f, p, sizeof f);
    size_t body = 0, need = 0; /* the strings' bytes; with their terminators */
    for (int i = 0; i < 8; i++)
        if (f.len[i] != UINT32_MAX) {
            body += f.len[i];
            need += (size_t)f.len[i] + 1;
        }
    if (body != n - sizeof f || f.status < GG_EXEC_RUNNING || f.status > GG_EXEC_INVALID_INPUT) return NULL;
    hist_item *it = calloc(1, sizeof *it + need);
    if (!it) return NULL;
    it->is_row = true;
    it->bytes = sizeof *it + need;
    hist_row *w = &it->row;
    memcpy(w->id, f.id, 32);
    memcpy(w->trace_id, f.trace_id, 32);
    memcpy(w->parent_id, f.parent_id, 32);
    w->version = f.version;
    w->status = (gg_exec_status)f.status;
    it->running_row = w->status == GG_EXEC_RUNNING;
    w->started_ms = f.started_ms;
    w->finished_ms = f.finished_ms;
    w->duration_ms = f.duration_ms;
    const unsigned char *src = p + sizeof f;
    char *d = it->data;
    for (int i = 0; i < 8; i++) {
        if (f.len[i] == UINT32_MAX) continue;
        memcpy(d, src, f.len[i]);
        d[f.len[i]] = 0;
        *row_text(w, i) = d;
        src += f.len[i];
        d += f.len[i] + 1;
    }
    if (!w->tenant || !w->graph || !w->tool) { free(it); return NULL; }
    row_measure(w);
    gg_strbuf l = GG_STRBUF_INIT;
    hist_item *with = row_line(w, &l) ? malloc(sizeof *it + need + l.len) : NULL;
    if (with) {
        memcpy(with, it, sizeof *it + need);
        row_rebase(&with->row, it->data, need, with->data);
        memcpy(with->data + need, l.data, l.len);
        with->row.line = with->data + need;
        with->row.line_len = l.len;
        with->bytes = sizeof *it + need + l.len;
    }
    free(it);
    gg_strbuf_free(&l);
    return with;
}

typedef struct replay_ctx {
    gg_history *h;
    hist_item *head, *tail;
    size_t n;
    long long written;
    gg_error *err;
} replay_ctx;

/* Write the replayed items gathered so far in one transaction. */
static bool replay_flush(replay_ctx *c) {
    if (!c->head) return true;
    size_t rows = 0;
    bool ok = write_batch(c->h, c->head, c->n, true, &rows, c->err);
    free_items(c->h, c->head, false);
    c->head = c->tail = NULL;
    c->n = 0;
    c->written += (long long)rows;
    return ok;
}

static bool replay_entry(void *user, const unsigned char *p, size_t n) {
    replay_ctx *c = user;
    hist_item *it = journal_item(p, n);
    if (!it) return false;
    if (c->tail) c->tail->next = it;
    else c->head = it;
    c->tail = it;
    return ++c->n < 512 || replay_flush(c);
}

/* Open the journal and write what a previous process left in it (before the writer
 * starts). Without a journal (another process holds it, or it cannot be made) durable
 * calls wait for their commit as before; a journal that cannot be replayed stops the start
 * (its entries stay for the next one). */
static bool journal_recover(gg_history *h, gg_error *err);
static bool journal_start(gg_history *h, gg_error *err) {
    gg_error e = GG_ERROR_INIT;
    h->journal = gg_history_journal_open(h->opt.journal_dir, &e);
    if (!h->journal) {
        gg_log(GG_LOG_WARN, "history journal not used: durable calls wait for their commit", "error", e.message, NULL);
        gg_error_clear(&e);
        return true;
    }
    bool ok = journal_recover(h, err);
    if (ok && !h->opt.journal_replay_only) return true;
    gg_history_journal_close(h->journal, ok); /* replayed: nothing is left in it */
    h->journal = NULL;
    return ok;
}

/* Write what a previous process left in the journal (before the writer starts). */
static bool journal_recover(gg_history *h, gg_error *err) {
    replay_ctx c = {.h = h, .err = err};
    long long torn = 0;
    long long n = gg_history_journal_replay(h->journal, replay_entry, &c, &torn, err);
    bool ok = n >= 0 && replay_flush(&c);
    free_items(h, c.head, false);
    if (!ok) return false;
    gg_history_journal_drop_replayed(h->journal);
    if (n > 0 || torn > 0) {
        char a[32], b[32];
        snprintf(a, sizeof a, "%lld", n);
        snprintf(b, sizeof b, "%lld", torn);
        gg_log(GG_LOG_WARN, "history journal replayed: runs answered before the last stop are written", "entries", a,
               "torn", b, NULL);
    }
    return true;
}

/* Queue it (false: refused, counted dropped). A waiter is answered at once when its record
 * is in the journal (*journaled); else it is kept only while the writer is healthy:
 * *refused_waiter tells the caller to answer it "not stored" itself. */
static bool enqueue(gg_history *h, hist_item *it, bool *refused_waiter, bool *journaled) {
    pthread_mutex_lock(&h->lock);
    if (h->stopping || h->queued >= h->opt.queue_max || h->backlog_bytes + it->bytes > h->opt.backlog_max_bytes) {
        if (it->is_row) h->stats.dropped++;
        pthread_mutex_unlock(&h->lock);
        return false;
    }
    /* not while the writer is failing: the journal is the fast path of a healthy history,
     * not a second store (what it holds must reach SQLite within a batch or two) */
    if ((it->committed || it->want_journal) && h->journal && !atomic_load_explicit(&h->failing, memory_order_relaxed) &&
        (it->jno = journal_append(h, it)) != 0) {
        it->committed = NULL;
        *journaled = true;
    } else if (it->committed && atomic_load_explicit(&h->failing, memory_order_relaxed)) {
        it->committed = NULL;
        *refused_waiter = true;
    }
    it->plain = it->is_row && !it->jno && !it->committed;
    h->plain += it->plain;
    if (h->tail) h->tail->next = it;
    else h->head = it;
    h->tail = it;
    h->ring[h->enqueued_seq & (QUEUE_RING - 1)] = it;
    h->queued++;
    h->enqueued_seq++;
    atomic_fetch_add_explicit(&h->backlog_bytes, it->bytes, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->backlog, 1, memory_order_relaxed);
    if (it->is_row) h->stats.submitted++;
    /* Wake the writer for the first item (it then waits batch_window for the rest), for
     * the first waiter and for the first plain row (their windows are shorter). */
    bool wake = h->queued == 1 || (it->plain && h->plain == 1);
    if (it->committed && h->waiters++ == 0) wake = true;
    if (wake) pthread_cond_signal(&h->work);
    pthread_mutex_unlock(&h->lock);
    return true;
}

/* gg_exec_record_new, the id's random part taken from h's pool of random bytes (refilled
 * from libsodium's CSPRNG in blocks) instead of a system call per record. h NULL is
 * allowed (then exactly gg_exec_record_new). Safe from any thread. */
gg_exec_record *gg_history_record_new(gg_history *h, const char *tenant, const char *graph, int version,
                                      const char *tool, const char *key_id, json_t *arguments) {
    if (!h) return gg_exec_record_new(tenant, graph, version, tool, key_id, arguments);
    unsigned char rnd[GG_EXEC_ID_RANDOM_BYTES];
    pthread_mutex_lock(&h->pool_lock);
    if (h->rnd_used + GG_EXEC_ID_RANDOM_BYTES > sizeof h->rnd) {
        randombytes_buf(h->rnd, sizeof h->rnd);
        h->rnd_used = 0;
    }
    memcpy(rnd, h->rnd + h->rnd_used, GG_EXEC_ID_RANDOM_BYTES);
    sodium_memzero(h->rnd + h->rnd_used, GG_EXEC_ID_RANDOM_BYTES); /* handed out once */
    h->rnd_used += GG_EXEC_ID_RANDOM_BYTES;
    pthread_mutex_unlock(&h->pool_lock);
    return gg_exec_record_make(rnd, tenant, graph, version, tool, key_id, arguments);
}

/* Pack r (freed here, by the thread that allocated it) and queue it: -1 = not queued
 * (counted dropped), 0 = queued but its waiter refused (the writer is failing), 1 = queued
 * (*journaled: in the journal, the waiter not kept). */
static int submit(gg_history *h, gg_exec_record *r, gg_history_committed_fn committed, void *user, bool want_journal,
                  bool *journaled) {
    hist_item *it = h ? pack_record(h, r, h->opt.max_payload_bytes) : NULL;
    gg_exec_record_free(r);
    bool refused_waiter = false;
    if (it) {
        it->committed = committed;
        it->committed_user = user;
        it->want_journal = want_journal;
    }
    if (!it || !enqueue(h, it, &refused_waiter, journaled)) {
        if (h && !it) {
            pthread_mutex_lock(&h->lock);
            h->stats.dropped++;
            pthread_mutex_unlock(&h->lock);
        }
        free(it);
        return -1;
    }
    return refused_waiter ? 0 : 1;
}

bool gg_history_submit_then(gg_history *h, gg_exec_record *r, gg_history_committed_fn committed, void *user) {
    if (!r) {
        if (committed) committed(user, false);
        return false;
    }
    bool journaled = false;
    int rc = submit(h, r, committed, user, false, &journaled);
    if (rc < 0) {
        if (committed) committed(user, false);
        return false;
    }
    if (committed && (rc == 0 || journaled)) committed(user, journaled); /* refused or journaled */
    return true;
}

/* See store.h. A record whose append fails stays queued, as gg_history_submit's. */
bool gg_history_submit_journaled(gg_history *h, gg_exec_record *r) {
    bool journaled = false;
    return r && submit(h, r, NULL, NULL, true, &journaled) >= 0 && journaled;
}

bool gg_history_journaling(gg_history *h) {
    return h && h->journal && gg_history_journal_usable(h->journal) && !atomic_load_explicit(&h->failing, memory_order_relaxed);
}

bool gg_history_submit(gg_history *h, gg_exec_record *r) { return gg_history_submit_then(h, r, NULL, NULL); }

void gg_history_touch_key(gg_history *h, const char *key_id, long long when_ms) {
    if (!h || !key_id || strlen(key_id) >= GG_KEY_ID_MAX) return;
    hist_item *it = calloc(1, sizeof *it);
    if (!it) return;
    snprintf(it->key_id, sizeof it->key_id, "%s", key_id);
    it->when_ms = when_ms;
    it->bytes = sizeof *it;
    bool ignored = false, no_journal = false;
    if (!enqueue(h, it, &ignored, &no_journal)) free(it);
}

unsigned long long gg_history_backlog(gg_history *h) {
    return h ? atomic_load_explicit(&h->backlog, memory_order_relaxed) : 0;
}

bool gg_history_has_room(gg_history *h) {
    if (!h) return true;
    /* a margin of 1 MiB: a record is at most a few payloads of max_payload_bytes */
    return atomic_load_explicit(&h->backlog, memory_order_relaxed) < h->opt.queue_max &&
           atomic_load_explicit(&h->backlog_bytes, memory_order_relaxed) + (1u << 20) < h->opt.backlog_max_bytes;
}

bool gg_history_healthy(gg_history *h, char *why, size_t why_size) {
    if (!h || !atomic_load_explicit(&h->failing, memory_order_relaxed)) return true;
    if (why && why_size) {
        pthread_mutex_lock(&h->lock);
        snprintf(why, why_size, "%s", h->fail_reason);
        pthread_mutex_unlock(&h->lock);
    }
    return false;
}

bool gg_history_flush(gg_history *h) {
    if (!h) return true;
    pthread_mutex_lock(&h->lock);
    unsigned long long target = h->enqueued_seq;
    h->flush_wanted = true;
    pthread_cond_signal(&h->work);
    while (h->written_seq < target && !atomic_load_explicit(&h->failing, memory_order_relaxed))
        pthread_cond_wait(&h->done, &h->lock);
    bool ok = h->written_seq >= target;
    pthread_mutex_unlock(&h->lock);
    return ok;
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
    out->pending = atomic_load_explicit(&h->backlog, memory_order_relaxed);
    out->pending_bytes = h->backlog_bytes;
    out->failing = atomic_load_explicit(&h->failing, memory_order_relaxed) != 0;
    pthread_mutex_unlock(&h->lock);
}

void gg_history_stop(gg_history *h) {
    if (!h) return;
    pthread_mutex_lock(&h->lock);
    h->stopping = true;
    pthread_cond_signal(&h->work);
    pthread_mutex_unlock(&h->lock);
    pthread_join(h->thread, NULL);
    gg_history_journal_close(h->journal, !h->gave_up); /* everything in it is committed */
    free_items(h, h->head, false);
    for (hist_item *it = h->pool, *next; it; it = next) {
        next = it->next;
        free(it);
    }
    pthread_mutex_destroy(&h->pool_lock);
    free(h->finals);
    free(h->line_idx);
    gg_strbuf_free(&h->body);
    running_free(h);
    gg_store_conn_close(h->conn);
    pthread_cond_destroy(&h->done);
    pthread_cond_destroy(&h->work);
    pthread_mutex_destroy(&h->lock);
    free(h);
}
