/* history_write.c — the writes of history_batches (migrations/0019_history_batches.sql, whose
 * header is the format): rows cut and inserted with their usage (for the history writer,
 * history.c), the interrupted versions appended at start, and the oldest rows deleted or
 * trimmed (retention here, the quota keeper in usage.c).
 *
 * A row holds one tenant's records oldest start first, within GG_HIST_SPAN_MS of each
 * other: readers find a run by its start (see store_internal.h), so every writer here keeps
 * last_ms - first_ms <= GG_HIST_SPAN_MS, and a trim only cuts a row's first records. */
#include "store/store_internal.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char SQL_ROW_INSERT[] =
    "INSERT INTO history_batches(tenant, first_ms, last_ms, n, bytes, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
static const char SQL_USAGE_ADD[] = "UPDATE history_usage SET rows = rows + ?2, bytes = bytes + ?3 WHERE tenant = ?1";
static const char SQL_USAGE_ROWS[] = "SELECT rows FROM history_usage WHERE tenant = ?1";
static const char SQL_USAGE_FORGET[] =
    "UPDATE history_usage SET rows = rows - ?2, bytes = bytes - ?3 WHERE tenant = ?1";
static const char SQL_USAGE_DROPPED[] =
    "UPDATE history_usage SET rows = rows - ?2, bytes = bytes - ?3, dropped = dropped + ?2,"
    " dropped_bytes = dropped_bytes + ?3 WHERE tenant = ?1";
static const char SQL_RUNNING_ADD[] =
    "INSERT INTO history_running(id, tenant, started_at) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING";
static const char SQL_RUNNING_DEL[] = "DELETE FROM history_running WHERE id = ?1";
static const char SQL_ROW_DELETE[] = "DELETE FROM history_batches WHERE rowid = ?1";
static const char SQL_ROW_BODY[] = "SELECT body FROM history_batches WHERE rowid = ?1";
static const char SQL_ROW_TRIM[] =
    "UPDATE history_batches SET first_ms = ?2, n = n - ?3, bytes = bytes - ?4, body = ?5 WHERE rowid = ?1";

/* ---- lines ----------------------------------------------------------------------------- */

/* The start of the line at p (n bytes, no newline needed): its third element. Tolerates the
 * spaces PostgreSQL's json functions put after commas (migrated rows); -1 when malformed. */
long long gg_history_line_started(const char *p, size_t n) {
    const char *e = p + n;
    int field = 0;
    bool in_str = false;
    for (const char *q = p; q < e; q++) {
        if (in_str) {
            if (*q == '\\') q++;
            else if (*q == '"') in_str = false;
        } else if (*q == '"') {
            in_str = true;
        } else if (*q == ',' && ++field == GG_HL_STARTED) {
            q++;
            while (q < e && *q == ' ') q++;
            char *end;
            long long v = strtoll(q, &end, 10);
            return end > q ? v : -1;
        }
    }
    return -1;
}

/* Bytes of the first k lines of body (fewer when it has fewer); *got: lines counted. Stops
 * early once at least k lines and want_bytes bytes are covered when by_bytes. */
static size_t cut_lines(const char *body, size_t len, long long k, long long want_bytes, long long *got) {
    size_t off = 0;
    *got = 0;
    while (off < len && (*got < k || (long long)off < want_bytes)) {
        const char *nl = memchr(body + off, '\n', len - off);
        off = nl ? (size_t)(nl - body) + 1 : len;
        ++*got;
    }
    return off;
}

/* Bytes of the leading lines of body that started before cutoff; *got: how many. */
static size_t cut_before(const char *body, size_t len, long long cutoff, long long *got) {
    size_t off = 0;
    *got = 0;
    while (off < len) {
        const char *nl = memchr(body + off, '\n', len - off);
        size_t end = nl ? (size_t)(nl - body) + 1 : len;
        long long t = gg_history_line_started(body + off, end - off);
        if (t >= cutoff) break;
        off = end;
        ++*got;
    }
    return off;
}

/* The earliest start among the lines of body: what a trimmed row's first_ms becomes. Not
 * simply the first line's: rows converted by the migration (SQLite's group_concat before
 * 3.44 has no ORDER BY) need not be sorted, and get-by-id relies on first_ms <= every start. */
static long long min_started(const char *body, size_t len) {
    long long min = -1;
    for (size_t off = 0; off < len;) {
        const char *nl = memchr(body + off, '\n', len - off);
        size_t end = nl ? (size_t)(nl - body) + 1 : len;
        long long t = gg_history_line_started(body + off, end - off);
        if (t >= 0 && (min < 0 || t < min)) min = t;
        off = end;
    }
    return min;
}

/* ---- the order of a batch's lines ------------------------------------------------------- */

/* The sort keys of a batch's lines (keys[i] is lines[i]'s), made once so that comparing two
 * lines reads integers, not strcmp (qsort with strcmp was ~1k instructions a record): the
 * rank of the tenant's name, the start, and the id's 32 bytes as four big-endian words
 * (zero after a NUL, so the words compare as strncmp(id, id, 32) does). */
typedef struct line_key {
    unsigned tenant;
    long long started_ms;
    unsigned long long id[4];
} line_key;

static inline int key_cmp(const line_key *x, const line_key *y) {
    if (x->tenant != y->tenant) return x->tenant < y->tenant ? -1 : 1;
    if (x->started_ms != y->started_ms) return x->started_ms < y->started_ms ? -1 : 1;
    for (int i = 0; i < 4; i++)
        if (x->id[i] != y->id[i]) return x->id[i] < y->id[i] ? -1 : 1;
    return 0;
}

#define WORD_ONES 0x0101010101010101ull  /* 1 in each byte of a word */
#define WORD_HIGHS 0x8080808080808080ull /* the top bit of each */

/* k's id words from id (32 readable bytes: a char[33]). */
static void key_id(line_key *k, const char *id) {
    unsigned long long w[4];
    memcpy(w, id, sizeof w);
    bool nul = false;
    for (int i = 0; i < 4; i++) nul |= ((w[i] - WORD_ONES) & ~w[i] & WORD_HIGHS) != 0;
    if (nul) { /* an id shorter than 32: the bytes after its end count as zeros */
        unsigned char b[32] = {0};
        memcpy(b, id, strnlen(id, 32));
        memcpy(w, b, sizeof w);
    }
    for (int i = 0; i < 4; i++) k->id[i] = __builtin_bswap64(w[i]);
}

/* A batch's distinct tenant strings (by address: the writer hands each tenant's lines the
 * same string), then their ranks by name. */
typedef struct tenant_ptr {
    const char *name;
    unsigned rank;
} tenant_ptr;

static int tenant_ptr_cmp(const void *a, const void *b) {
    return strcmp(((const tenant_ptr *)a)->name, ((const tenant_ptr *)b)->name);
}

/* keys[i].tenant for every line: the rank of its tenant's name among the batch's (equal names
 * equal ranks). table: cap (a power of two >= 2n) zeroed slots; groups, rank_of: n entries. */
static void rank_tenants(const gg_hist_line *lines, size_t n, line_key *keys, tenant_ptr *table, size_t cap,
                         tenant_ptr *groups, unsigned *rank_of) {
    size_t ng = 0;
    const char *prev = NULL;
    unsigned prev_g = 0;
    for (size_t i = 0; i < n; i++) {
        const char *t = lines[i].tenant;
        if (t != prev) {
            size_t s = (size_t)(((uintptr_t)t >> 3) * 0x9E3779B97F4A7C15ull >> 32) & (cap - 1);
            while (table[s].name && table[s].name != t) s = (s + 1) & (cap - 1);
            if (!table[s].name) {
                table[s] = (tenant_ptr){t, (unsigned)ng};
                groups[ng] = (tenant_ptr){t, (unsigned)ng};
                ng++;
            }
            prev = t;
            prev_g = table[s].rank;
        }
        keys[i].tenant = prev_g; /* the group for now */
    }
    /* groups by name; a group's rank: the number of distinct names before it */
    qsort(groups, ng, sizeof *groups, tenant_ptr_cmp);
    unsigned r = 0;
    for (size_t g = 0; g < ng; g++) {
        if (g && strcmp(groups[g].name, groups[g - 1].name) != 0) r++;
        rank_of[groups[g].rank] = r;
    }
    for (size_t i = 0; i < n; i++) keys[i].tenant = rank_of[keys[i].tenant];
}

/* Bits to hold v (0 for 0). */
static unsigned bits_for(unsigned long long v) { return v ? 64 - (unsigned)__builtin_clzll(v) : 0; }

/* The lines' order as sort_keys gives it, by a radix sort (LSD, 8-bit digits) on one 64-bit
 * key a line that orders them but for rare ties: the tenant's rank, the start less the
 * batch's earliest, and the id's 13th to 15th bytes (those after the 12 hex digits of time
 * it carries, so the first it orders by among runs of one millisecond), with the line's
 * index below them (stable); then one insertion pass by key_cmp puts right what those
 * bytes could not tell apart. At saturation ids of one millisecond come in random order,
 * and the merge of their short runs took ≈ 10 passes: ≈ 70 ns a line against ≈ 25.
 * false (out holding nothing useful) when the key does not fit 64 bits or the pass would
 * move more than 4 lines a line. rk, rk2, out: n entries each. */
static bool sort_radix(const line_key *keys, size_t n, unsigned long long *rk, unsigned long long *rk2,
                       unsigned *out) {
    long long lo = keys[0].started_ms, hi = lo;
    unsigned ranks = 0;
    for (size_t i = 1; i < n; i++) {
        if (keys[i].started_ms < lo) lo = keys[i].started_ms;
        if (keys[i].started_ms > hi) hi = keys[i].started_ms;
    }
    for (size_t i = 0; i < n; i++)
        if (keys[i].tenant > ranks) ranks = keys[i].tenant;
    /* in unsigned arithmetic: exact for any hi >= lo, where the signed difference could overflow */
    unsigned long long span = (unsigned long long)hi - (unsigned long long)lo;
    unsigned ib = bits_for(n - 1), sb = bits_for(span), total = ib + 24 + sb + bits_for(ranks);
    if (total > 64) return false;
    for (size_t i = 0; i < n; i++) {
        unsigned long long k =
            (unsigned long long)keys[i].tenant << sb | ((unsigned long long)keys[i].started_ms - (unsigned long long)lo);
        k = k << 24 | (keys[i].id[1] >> 8 & 0xFFFFFF); /* the id's bytes 12..14 */
        rk[i] = ib ? k << ib | i : k;
    }
    unsigned long long *a = rk, *b = rk2;
    for (unsigned shift = ib; shift < total; shift += 8) {
        unsigned cnt[257] = {0};
        for (size_t i = 0; i < n; i++) cnt[(a[i] >> shift & 0xFF) + 1]++;
        for (int d = 0; d < 256; d++) cnt[d + 1] += cnt[d];
        for (size_t i = 0; i < n; i++) b[cnt[a[i] >> shift & 0xFF]++] = a[i];
        unsigned long long *t = a;
        a = b;
        b = t;
    }
    unsigned long long low = ib ? ((unsigned long long)1 << ib) - 1 : 0;
    for (size_t i = 0; i < n; i++) out[i] = (unsigned)(a[i] & low);
    size_t moves = 0;
    for (size_t i = 1; i < n; i++) {
        unsigned v = out[i];
        size_t j = i;
        for (; j > 0 && key_cmp(&keys[out[j - 1]], &keys[v]) > 0; j--) {
            if (++moves > 4 * n) return false;
            out[j] = out[j - 1];
        }
        out[j] = v;
    }
    return true;
}

/* Below these a batch is merged (sort_keys): the radix sort's fixed passes cost more. */
#define RADIX_MIN_LINES 256
#define RADIX_MIN_RUNS 16

/* The lines' order by (tenant, start, id), stable (as glibc's qsort was, a merge sort): the
 * tenants' lines apart first (counting sort), then a merge sort of the runs already in
 * order, the fewer passes the more each tenant's lines come in order (the writer's mostly
 * do, but for ids of the same ms), or sort_radix when the runs are many. order and tmp: n
 * entries each; bounds: n + 1; rk, rk2: n. Returns the one sorted. */
static unsigned *sort_keys(const line_key *keys, size_t n, unsigned *order, unsigned *tmp, unsigned *bounds,
                           unsigned long long *rk, unsigned long long *rk2) {
    unsigned ranks = 0;
    for (size_t i = 0; i < n; i++)
        if (keys[i].tenant + 1 > ranks) ranks = keys[i].tenant + 1;
    memset(bounds, 0, (ranks + 1) * sizeof *bounds); /* ranks <= n */
    for (size_t i = 0; i < n; i++) bounds[keys[i].tenant + 1]++;
    for (unsigned r = 0; r < ranks; r++) bounds[r + 1] += bounds[r];
    for (size_t i = 0; i < n; i++) tmp[bounds[keys[i].tenant]++] = (unsigned)i;
    unsigned *src = tmp, *dst = order;
    /* runs already in order */
    size_t nb = 0;
    bounds[nb++] = 0;
    for (size_t i = 1; i < n; i++)
        if (key_cmp(&keys[src[i - 1]], &keys[src[i]]) > 0) bounds[nb++] = (unsigned)i;
    bounds[nb] = (unsigned)n;
    if (n >= RADIX_MIN_LINES && nb > RADIX_MIN_RUNS && sort_radix(keys, n, rk, rk2, dst)) return dst;
    while (nb > 1) { /* merge runs two by two; the left one wins ties (stable) */
        size_t out = 0;
        for (size_t r = 0; r < nb; r += 2) {
            size_t a = bounds[r], am = bounds[r + 1], bm = r + 2 <= nb ? bounds[r + 2] : am, b = am, d = a;
            while (a < am && b < bm) dst[d++] = key_cmp(&keys[src[b]], &keys[src[a]]) < 0 ? src[b++] : src[a++];
            while (a < am) dst[d++] = src[a++];
            while (b < bm) dst[d++] = src[b++];
            bounds[out++] = bounds[r];
        }
        bounds[out] = (unsigned)n;
        nb = out;
        unsigned *t = src;
        src = dst;
        dst = t;
    }
    return src;
}

/* ---- rows ------------------------------------------------------------------------------- */

static bool insert_row(gg_store_conn *c, const char *tenant, long long first, long long last, long long n,
                       const gg_strbuf *body, gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_ROW_INSERT, err);
    if (!st) return false;
    gg_db_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
    gg_db_bind_int64(st, 2, first);
    gg_db_bind_int64(st, 3, last);
    gg_db_bind_int64(st, 4, n);
    gg_db_bind_int64(st, 5, (long long)body->len); /* the text's bytes, compressed or not */
    if (!gg_history_bind_body(c, st, 6, body->data, body->len, err)) {
        gg_db_reset(st);
        return false;
    }
    return gg_store_step_done(c, st, "history_batches", err);
}

static bool usage_change(gg_store_conn *c, const char *sql, const char *tenant, long long n, long long bytes,
                         gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, sql, err);
    if (!st) return false;
    gg_db_bind_text(st, 1, tenant, -1, SQLITE_TRANSIENT);
    gg_db_bind_int64(st, 2, n);
    gg_db_bind_int64(st, 3, bytes);
    return gg_store_step_done(c, st, "history_usage", err);
}

/* Slices of oldest rows one commit drops at most for the quota (the keeper does the rest). */
#define QUOTA_SLICES_A_COMMIT 16

/* The tenant's records down to 90 % of quota when over it (inside the writer's commit). */
static bool enforce_quota(gg_store_conn *c, const char *tenant, long long quota, long long *dropped,
                          long long *dropped_bytes, gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_USAGE_ROWS, err);
    if (!st) return false;
    gg_db_bind_text(st, 1, tenant, -1, SQLITE_TRANSIENT);
    int rc = gg_db_step(st);
    long long rows = rc == SQLITE_ROW ? gg_db_column_int64(st, 0) : 0;
    gg_db_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) { gg_store_set_db_error(c, err, "history_usage"); return false; }
    long long need = rows > quota ? rows - (quota - quota / 10) : 0;
    for (int i = 0; need > 0 && i < QUOTA_SLICES_A_COMMIT; i++) {
        long long gone, gone_bytes;
        if (!gg_history_drop_oldest(c, tenant, need, 0, &gone, &gone_bytes, err)) return false;
        if (gone == 0) break;
        need -= gone;
        *dropped += gone;
        *dropped_bytes += gone_bytes;
    }
    return true;
}

/* Lines asked ahead into the cache (gg_prefetch): the writer's lines sit in queue items last
 * touched by the threads that made them, on other cores. */
#define LINE_AHEAD 8

/* See store_internal.h. */
bool gg_history_write_lines(gg_store_conn *c, gg_hist_line *lines, size_t n, gg_strbuf *body,
                            long long quota_rows, long long *dropped, long long *dropped_bytes, gg_error *err) {
    long long d = 0, db = 0;
    if (n == 0) {
        if (dropped) *dropped = 0;
        if (dropped_bytes) *dropped_bytes = 0;
        return true;
    }
    if (n > UINT_MAX / 4) { gg_error_set(err, "oom", "out of memory"); return false; }
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    /* one block: keys, the tenants' table and groups, two radix key arrays, three index arrays */
    size_t sz = n * sizeof(line_key) + (cap + n) * sizeof(tenant_ptr) + 2 * n * sizeof(unsigned long long) +
                (3 * n + 1) * sizeof(unsigned);
    line_key *keys = malloc(sz);
    if (!keys) { gg_error_set(err, "oom", "out of memory"); return false; }
    tenant_ptr *table = (tenant_ptr *)(keys + n), *groups = table + cap;
    unsigned long long *rk = (unsigned long long *)(groups + n), *rk2 = rk + n;
    unsigned *order = (unsigned *)(rk2 + n), *tmp = order + n, *bounds = tmp + n;
    memset(table, 0, cap * sizeof *table);
    for (size_t i = 0; i < n; i++) {
        if (i + LINE_AHEAD < n) gg_prefetch(lines[i + LINE_AHEAD].id, 32);
        keys[i].started_ms = lines[i].started_ms;
        key_id(&keys[i], lines[i].id);
    }
    rank_tenants(lines, n, keys, table, cap, groups, order);
    const unsigned *o = sort_keys(keys, n, order, tmp, bounds, rk, rk2);
    size_t i = 0;
    bool ok = true;
    while (ok && i < n) {
        unsigned rank = keys[o[i]].tenant;
        const char *tenant = lines[o[i]].tenant;
        long long rows = 0, bytes = 0;
        while (ok && i < n && keys[o[i]].tenant == rank) {
            body->len = 0;
            long long first = keys[o[i]].started_ms, last = first, cnt = 0;
            /* cut where the starts would span more than SPAN or the body pass BODY_MAX (a
             * bigger record alone) */
            for (const gg_hist_line *l; i < n && keys[o[i]].tenant == rank; i++) {
                l = &lines[o[i]];
                if (i + LINE_AHEAD < n) gg_prefetch(lines[o[i + LINE_AHEAD]].text, lines[o[i + LINE_AHEAD]].len);
                if (cnt && (l->started_ms - first > GG_HIST_SPAN_MS || body->len + l->len > GG_HIST_BODY_MAX)) break;
                gg_strbuf_append(body, l->text, l->len);
                last = l->started_ms;
                cnt++;
            }
            if (body->oom) { gg_error_set(err, "oom", "out of memory"); ok = false; break; }
            ok = insert_row(c, tenant, first, last, cnt, body, err);
            rows += cnt;
            bytes += (long long)body->len;
        }
        ok = ok && usage_change(c, SQL_USAGE_ADD, tenant, rows, bytes, err);
        ok = ok && (quota_rows <= 0 || enforce_quota(c, tenant, quota_rows, &d, &db, err));
    }
    free(keys);
    if (!ok) return false;
    if (dropped) *dropped = d;
    if (dropped_bytes) *dropped_bytes = db;
    return true;
}

bool gg_history_running_add(gg_store_conn *c, const char *id, const char *tenant, long long started_ms, gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_RUNNING_ADD, err);
    if (!st) return false;
    gg_db_bind_text(st, 1, id, 32, SQLITE_STATIC);
    gg_db_bind_text(st, 2, tenant, -1, SQLITE_STATIC);
    gg_db_bind_int64(st, 3, started_ms);
    return gg_store_step_done(c, st, "history_running", err);
}

bool gg_history_running_del(gg_store_conn *c, const char *id, gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_RUNNING_DEL, err);
    if (!st) return false;
    gg_db_bind_text(st, 1, id, (int)strnlen(id, 32), SQLITE_TRANSIENT);
    return gg_store_step_done(c, st, "history_running", err);
}

static bool delete_row(gg_store_conn *c, long long rowid, gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_ROW_DELETE, err);
    if (!st) return false;
    gg_db_bind_int64(st, 1, rowid);
    return gg_store_step_done(c, st, "history_batches", err);
}

/* Cut the first records of a row: k of them and at least want_bytes (by count), or those
 * started before cutoff (cutoff >= 0). The row goes when nothing is left. Inside the
 * caller's transaction; *n / *bytes: what went. */
static bool trim_row(gg_store_conn *c, long long rowid, long long k, long long want_bytes, long long cutoff,
                     long long *n, long long *bytes, gg_error *err) {
    *n = *bytes = 0;
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_ROW_BODY, err);
    if (!st) return false;
    gg_db_bind_int64(st, 1, rowid);
    int rc = gg_db_step(st);
    if (rc != SQLITE_ROW) {
        gg_db_reset(st);
        if (rc == SQLITE_DONE) return true;
        gg_store_set_db_error(c, err, "history_batches");
        return false;
    }
    size_t len;
    const char *text = gg_history_body_text(c, st, 0, &len, err);
    char *body = text ? malloc(len + 1) : NULL;
    if (!body) {
        gg_db_reset(st);
        if (text) gg_error_set(err, "oom", "out of memory");
        return false;
    }
    memcpy(body, text, len);
    body[len] = 0;
    gg_db_reset(st);
    long long got;
    size_t cut = cutoff >= 0 ? cut_before(body, len, cutoff, &got) : cut_lines(body, len, k, want_bytes, &got);
    bool ok = true;
    if (cut >= len) {
        ok = delete_row(c, rowid, err);
    } else if (cut > 0) {
        long long next = min_started(body + cut, len - cut);
        gg_db_stmt *up = gg_store_conn_stmt(c, SQL_ROW_TRIM, err);
        ok = up != NULL;
        if (ok) {
            gg_db_bind_int64(up, 1, rowid);
            gg_db_bind_int64(up, 2, next);
            gg_db_bind_int64(up, 3, got);
            gg_db_bind_int64(up, 4, (long long)cut);
            ok = gg_history_bind_body(c, up, 5, body + cut, len - cut, err);
            ok = ok ? gg_store_step_done(c, up, "history_batches", err) : (gg_db_reset(up), false);
        }
    }
    free(body);
    if (ok && cut > 0) {
        *n = got;
        *bytes = (long long)cut;
    }
    return ok;
}

/* ---- the oldest rows of a tenant (quota) ---------------------------------------------------- */

static const char SQL_OLDEST[] =
    "SELECT rowid, n, bytes FROM history_batches WHERE tenant = ?1 ORDER BY last_ms, first_ms, rowid LIMIT ?2";

/* Rows a quota slice looks at (one transaction). */
#define TRIM_SLICE_ROWS 64

typedef struct row_ref {
    long long rowid, n, bytes;
} row_ref;

/* See store_internal.h. */
bool gg_history_drop_oldest(gg_store_conn *c, const char *tenant, long long need_rows, long long need_bytes,
                         long long *gone, long long *gone_bytes, gg_error *err) {
    *gone = *gone_bytes = 0;
    row_ref rows[TRIM_SLICE_ROWS];
    int nr = 0, rc;
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_OLDEST, err);
    if (!st) return false;
    gg_db_bind_text(st, 1, tenant, -1, SQLITE_TRANSIENT);
    gg_db_bind_int(st, 2, TRIM_SLICE_ROWS);
    while (nr < TRIM_SLICE_ROWS && (rc = gg_db_step(st)) == SQLITE_ROW)
        rows[nr++] = (row_ref){gg_db_column_int64(st, 0), gg_db_column_int64(st, 1), gg_db_column_int64(st, 2)};
    gg_db_reset(st);
    if (nr < TRIM_SLICE_ROWS && rc != SQLITE_DONE) { gg_store_set_db_error(c, err, "history_batches"); return false; }
    long long n_left = need_rows > 0 ? need_rows : 0, b_left = need_bytes > 0 ? need_bytes : 0;
    for (int i = 0; i < nr && (n_left > 0 || b_left > 0); i++) {
        long long n = rows[i].n, b = rows[i].bytes;
        if (n <= n_left || b <= b_left) { /* all of it is needed */
            if (!delete_row(c, rows[i].rowid, err)) return false;
        } else if (!trim_row(c, rows[i].rowid, n_left, b_left, -1, &n, &b, err)) {
            return false;
        }
        *gone += n;
        *gone_bytes += b;
        n_left -= n;
        b_left -= b;
    }
    return *gone == 0 || usage_change(c, SQL_USAGE_DROPPED, tenant, *gone, *gone_bytes, err);
}

/* ---- retention -------------------------------------------------------------------------- */

static const char SQL_AGED[] =
    "SELECT rowid, tenant, n, bytes FROM history_batches WHERE last_ms < ?1 ORDER BY last_ms LIMIT 500";
static const char SQL_STRADDLING[] =
    "SELECT rowid, tenant FROM history_batches WHERE last_ms BETWEEN ?1 AND ?2 AND first_ms < ?1";
static const char SQL_NEWEST_FIRST[] = "SELECT rowid, n FROM history_batches ORDER BY last_ms DESC, first_ms DESC, rowid DESC";
static const char SQL_ROW_REF[] = "SELECT tenant, n, bytes FROM history_batches WHERE rowid = ?1";

typedef struct prune_row {
    long long rowid, n, bytes;
    char tenant[256];
} prune_row;

/* Delete whole rows (their usage counted out) in one transaction. */
typedef struct {
    const prune_row *rows;
    size_t n;
} rows_args;

static bool delete_rows_tx(gg_store_conn *c, void *user, gg_error *err) {
    rows_args *a = user;
    for (size_t i = 0; i < a->n; i++)
        if (!delete_row(c, a->rows[i].rowid, err) ||
            !usage_change(c, SQL_USAGE_FORGET, a->rows[i].tenant, a->rows[i].n, a->rows[i].bytes, err))
            return false;
    return true;
}

/* Rows wholly older than cutoff, 500 a transaction; -1 on error. */
static long long prune_aged(gg_store_conn *c, long long cutoff, gg_error *err) {
    long long total = 0;
    prune_row *rows = malloc(500 * sizeof *rows);
    if (!rows) { gg_error_set(err, "oom", "out of memory"); return -1; }
    for (;;) {
        gg_db_stmt *st = gg_store_conn_stmt(c, SQL_AGED, err);
        if (!st) { total = -1; break; }
        gg_db_bind_int64(st, 1, cutoff);
        size_t n = 0;
        int rc;
        while (n < 500 && (rc = gg_db_step(st)) == SQLITE_ROW) {
            prune_row *r = &rows[n++];
            r->rowid = gg_db_column_int64(st, 0);
            snprintf(r->tenant, sizeof r->tenant, "%s", (const char *)gg_db_column_text(st, 1));
            r->n = gg_db_column_int64(st, 2);
            r->bytes = gg_db_column_int64(st, 3);
        }
        gg_db_reset(st);
        if (n < 500 && rc != SQLITE_DONE) { gg_store_set_db_error(c, err, "history_batches"); total = -1; break; }
        if (n == 0) break;
        rows_args a = {rows, n};
        if (!gg_store_conn_write_tx(c, delete_rows_tx, &a, err)) { total = -1; break; }
        for (size_t i = 0; i < n; i++) total += rows[i].n;
        if (n < 500) break;
    }
    free(rows);
    return total;
}

/* One row trimmed (by cutoff, or its oldest k records) with its usage counted out. */
typedef struct {
    long long rowid, k, cutoff;
    long long n; /* out */
} trim_args;

static bool trim_tx(gg_store_conn *c, void *user, gg_error *err) {
    trim_args *a = user;
    a->n = 0;
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_ROW_REF, err);
    if (!st) return false;
    gg_db_bind_int64(st, 1, a->rowid);
    int rc = gg_db_step(st);
    char tenant[256] = "";
    if (rc == SQLITE_ROW) snprintf(tenant, sizeof tenant, "%s", (const char *)gg_db_column_text(st, 0));
    gg_db_reset(st);
    if (rc == SQLITE_DONE) return true; /* gone meanwhile */
    if (rc != SQLITE_ROW) { gg_store_set_db_error(c, err, "history_batches"); return false; }
    long long n, b;
    if (!trim_row(c, a->rowid, a->k, 0, a->cutoff, &n, &b, err)) return false;
    a->n = n;
    return n == 0 || usage_change(c, SQL_USAGE_FORGET, tenant, n, b, err);
}

/* Rowids of a query's first column (all rows). NULL + err on error; *n their count. */
static long long *rowids(gg_store_conn *c, const char *sql, long long a1, long long a2, size_t *n, gg_error *err) {
    *n = 0;
    gg_db_stmt *st = gg_store_conn_stmt(c, sql, err);
    if (!st) return NULL;
    gg_db_bind_int64(st, 1, a1);
    gg_db_bind_int64(st, 2, a2);
    size_t cap = 16;
    long long *ids = malloc(cap * sizeof *ids);
    int rc;
    while (ids && (rc = gg_db_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            long long *more = realloc(ids, (cap *= 2) * sizeof *ids);
            if (!more) { free(ids); ids = NULL; break; }
            ids = more;
        }
        ids[(*n)++] = gg_db_column_int64(st, 0);
    }
    gg_db_reset(st);
    if (!ids) { gg_error_set(err, "oom", "out of memory"); return NULL; }
    if (rc != SQLITE_DONE) { free(ids); gg_store_set_db_error(c, err, "history_batches"); return NULL; }
    return ids;
}

static long long prune_age(gg_store_conn *c, long long cutoff, gg_error *err) {
    long long total = prune_aged(c, cutoff, err);
    if (total < 0) return -1;
    size_t n;
    long long *ids = rowids(c, SQL_STRADDLING, cutoff, cutoff + GG_HIST_SPAN_MS, &n, err);
    if (!ids) return -1;
    for (size_t i = 0; i < n; i++) {
        trim_args a = {ids[i], 0, cutoff, 0};
        if (!gg_store_conn_write_tx(c, trim_tx, &a, err)) { free(ids); return -1; }
        total += a.n;
    }
    free(ids);
    return total;
}

/* Keep the max_count newest records (all tenants): rows past them deleted, the one across
 * the line trimmed. */
static long long prune_count(gg_store_conn *c, long long max_count, gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_NEWEST_FIRST, err);
    if (!st) return -1;
    long long kept = 0, trim_id = 0, trim_k = 0;
    size_t cap = 0, n = 0;
    prune_row *old = NULL;
    int rc;
    while ((rc = gg_db_step(st)) == SQLITE_ROW) {
        long long id = gg_db_column_int64(st, 0), rn = gg_db_column_int64(st, 1);
        if (kept >= max_count) {
            if (n == cap) {
                prune_row *more = realloc(old, (cap = cap ? cap * 2 : 64) * sizeof *old);
                if (!more) { rc = SQLITE_NOMEM; break; }
                old = more;
            }
            old[n++].rowid = id;
        } else if (kept + rn > max_count) {
            trim_id = id;
            trim_k = kept + rn - max_count;
        }
        kept += rn;
    }
    gg_db_reset(st);
    if (rc != SQLITE_DONE) {
        free(old);
        if (rc == SQLITE_NOMEM) gg_error_set(err, "oom", "out of memory");
        else gg_store_set_db_error(c, err, "history_batches");
        return -1;
    }
    long long total = 0;
    /* the rows' tenants and sizes, then deleted 500 a transaction */
    for (size_t i = 0; i < n; i++) {
        gg_db_stmt *r = gg_store_conn_stmt(c, SQL_ROW_REF, err);
        if (!r) { free(old); return -1; }
        gg_db_bind_int64(r, 1, old[i].rowid);
        if (gg_db_step(r) == SQLITE_ROW) {
            snprintf(old[i].tenant, sizeof old[i].tenant, "%s", (const char *)gg_db_column_text(r, 0));
            old[i].n = gg_db_column_int64(r, 1);
            old[i].bytes = gg_db_column_int64(r, 2);
        } else {
            old[i].n = old[i].bytes = 0;
            old[i].tenant[0] = 0;
        }
        gg_db_reset(r);
    }
    for (size_t i = 0; i < n; i += 500) {
        rows_args a = {old + i, n - i < 500 ? n - i : 500};
        if (!gg_store_conn_write_tx(c, delete_rows_tx, &a, err)) { free(old); return -1; }
        for (size_t j = 0; j < a.n; j++) total += a.rows[j].n;
    }
    free(old);
    if (trim_id) {
        trim_args a = {trim_id, trim_k, -1, 0};
        if (!gg_store_conn_write_tx(c, trim_tx, &a, err)) return -1;
        total += a.n;
    }
    return total;
}

long long gg_store_executions_prune_conn(gg_store_conn *c, long long max_age_ms, long long max_count,
                                         gg_error *err) {
    long long total = 0;
    if (max_age_ms > 0) {
        long long n = prune_age(c, gg_wall_ms() - max_age_ms, err);
        if (n < 0) return -1;
        total += n;
    }
    if (max_count > 0) {
        long long n = prune_count(c, max_count, err);
        if (n < 0) return -1;
        total += n;
    }
    return total;
}

long long gg_store_executions_prune(gg_store *s, long long max_age_ms, long long max_count, gg_error *err) {
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return -1;
    long long n = gg_store_executions_prune_conn(c, max_age_ms, max_count, err);
    gg_store_conn_release(s, c);
    return n;
}

/* ---- interrupted runs ------------------------------------------------------------------- */

static const char SQL_RUNNING_ALL[] = "SELECT id, tenant, started_at FROM history_running";
/* PostgreSQL: replicas share the table; a replica marks only the runs it recorded itself. */
static const char SQL_RUNNING_MINE[] =
    "SELECT id, tenant, started_at FROM history_running"
    " WHERE replica IS NOT DISTINCT FROM current_setting('graphgate.replica', true)";
static const char SQL_CANDIDATES[] =
    "SELECT body FROM history_batches WHERE tenant = ?1 AND last_ms BETWEEN ?2 AND ?3 AND first_ms <= ?2"
    " ORDER BY rowid DESC";
#define INTERRUPTED_ERROR "interrupted: graphgate stopped before the run finished"

/* The newest version of run id among the candidate rows: 1 with *line (a new array) when it
 * is running, 0 when a final version exists or none at all, -1 on error. */
static int running_version(gg_store_conn *c, const char *id, const char *tenant, long long t, json_t **line,
                           gg_error *err) {
    *line = NULL;
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_CANDIDATES, err);
    if (!st) return -1;
    gg_db_bind_text(st, 1, tenant, -1, SQLITE_TRANSIENT);
    gg_db_bind_int64(st, 2, t);
    gg_db_bind_int64(st, 3, t + GG_HIST_SPAN_MS);
    char key[40];
    int klen = snprintf(key, sizeof key, "[\"%.32s\"", id);
    bool final = false;
    int rc;
    bool bad = false;
    while (!final && (rc = gg_db_step(st)) == SQLITE_ROW) {
        size_t len, off = 0;
        const char *body = gg_history_body_text(c, st, 0, &len, err);
        if (!body) { bad = true; break; }
        while (off < len) {
            const char *nl = memchr(body + off, '\n', len - off);
            size_t end = nl ? (size_t)(nl - body) : len;
            if (end - off > (size_t)klen && memcmp(body + off, key, (size_t)klen) == 0) {
                json_t *v = json_loadb(body + off, end - off, 0, NULL);
                json_t *s = json_array_get(v, GG_HL_STATUS);
                if (json_integer_value(s) != GG_EXEC_RUNNING) final = true;
                else if (!*line) *line = json_incref(v);
                json_decref(v);
            }
            off = end + 1;
        }
    }
    gg_db_reset(st);
    if (bad || (!final && rc != SQLITE_DONE)) {
        json_decref(*line);
        *line = NULL;
        if (!bad) gg_store_set_db_error(c, err, "history_batches");
        return -1;
    }
    if (final) {
        json_decref(*line);
        *line = NULL;
    }
    return *line ? 1 : 0;
}

typedef struct running_entry {
    char id[33];
    char tenant[256];
    long long started;
} running_entry;

typedef struct {
    long long marked; /* out */
} mark_args;

static running_entry *running_entries(gg_store_conn *c, size_t *n, gg_error *err) {
    *n = 0;
    gg_db_stmt *st = gg_store_conn_stmt(c, gg_db_is_pg(c) ? SQL_RUNNING_MINE : SQL_RUNNING_ALL, err);
    if (!st) return NULL;
    size_t cap = 16;
    running_entry *e = malloc(cap * sizeof *e);
    int rc;
    while (e && (rc = gg_db_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            running_entry *more = realloc(e, (cap *= 2) * sizeof *e);
            if (!more) { free(e); e = NULL; break; }
            e = more;
        }
        snprintf(e[*n].id, sizeof e[*n].id, "%s", (const char *)gg_db_column_text(st, 0));
        snprintf(e[*n].tenant, sizeof e[*n].tenant, "%s", (const char *)gg_db_column_text(st, 1));
        e[(*n)++].started = gg_db_column_int64(st, 2);
    }
    gg_db_reset(st);
    if (!e) { gg_error_set(err, "oom", "out of memory"); return NULL; }
    if (rc != SQLITE_DONE) { free(e); gg_store_set_db_error(c, err, "history_running"); return NULL; }
    return e;
}

/* An interrupted version of a running record's line (finished now) appended to buf. */
static bool interrupted_line(json_t *line, long long now, gg_strbuf *buf) {
    long long started = json_integer_value(json_array_get(line, GG_HL_STARTED));
    json_array_set_new(line, GG_HL_STATUS, json_integer(GG_EXEC_INTERRUPTED));
    json_array_set_new(line, GG_HL_FINISHED, json_integer(now));
    json_array_set_new(line, GG_HL_DURATION_US, json_integer(now > started ? (now - started) * 1000 : 0));
    if (json_is_null(json_array_get(line, GG_HL_ERROR)))
        json_array_set_new(line, GG_HL_ERROR, json_string(INTERRUPTED_ERROR));
    char *text = json_dumps(line, JSON_COMPACT);
    if (!text) return false;
    gg_strbuf_puts(buf, text);
    gg_strbuf_putc(buf, '\n');
    free(text);
    return !buf->oom;
}

static bool mark_tx(gg_store_conn *c, void *user, gg_error *err) {
    mark_args *a = user;
    a->marked = 0;
    size_t n;
    running_entry *e = running_entries(c, &n, err);
    if (!e) return false;
    gg_strbuf buf = GG_STRBUF_INIT, body = GG_STRBUF_INIT;
    gg_hist_line *lines = calloc(n ? n : 1, sizeof *lines);
    size_t *offs = calloc(n ? n : 1, sizeof *offs); /* the lines' places in buf, which moves as it grows */
    bool ok = lines && offs;
    if (!ok) gg_error_set(err, "oom", "out of memory");
    size_t nl = 0;
    long long now = gg_wall_ms();
    for (size_t i = 0; ok && i < n; i++) {
        json_t *line;
        int r = running_version(c, e[i].id, e[i].tenant, e[i].started, &line, err);
        if (r < 0) { ok = false; break; }
        if (r == 1) {
            offs[nl] = buf.len;
            if (!interrupted_line(line, now, &buf)) {
                gg_error_set(err, "oom", "out of memory");
                ok = false;
            } else {
                lines[nl] = (gg_hist_line){e[i].tenant, e[i].id, e[i].started, GG_EXEC_INTERRUPTED, NULL,
                                           buf.len - offs[nl], 0};
                nl++;
            }
            json_decref(line);
        }
        ok = ok && gg_history_running_del(c, e[i].id, err);
    }
    for (size_t i = 0; ok && i < nl; i++) lines[i].text = buf.data + offs[i];
    ok = ok && gg_history_write_lines(c, lines, nl, &body, 0, NULL, NULL, err);
    if (ok) a->marked = (long long)nl;
    free(offs);
    free(lines);
    free(e);
    gg_strbuf_free(&buf);
    gg_strbuf_free(&body);
    return ok;
}

long long gg_store_executions_mark_interrupted_conn(gg_store_conn *c, gg_error *err) {
    mark_args a = {0};
    return gg_store_conn_write_tx(c, mark_tx, &a, err) ? a.marked : -1;
}

long long gg_store_executions_mark_interrupted(gg_store *s, gg_error *err) {
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return -1;
    long long n = gg_store_executions_mark_interrupted_conn(c, err);
    gg_store_conn_release(s, c);
    return n;
}
