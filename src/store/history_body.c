/* history_body.c — a history_batches row's body as stored: on SQLite a zstd frame (a BLOB)
 * when the text is long (GG_HIST_COMPRESS_MIN) and the frame smaller, else the text; PostgreSQL keeps the text (its TOAST
 * compresses values above 2 KB by itself, and a TEXT column cannot hold a frame).
 *
 * Why: at saturation the history writer's cost was its bytes (the WAL, the checkpoint's
 * copy back, SQLite's page copies, zeroing and frame checksums: bench/history/README.md),
 * and a row's records are alike (one tenant's runs of a few graphs within 10 ms), so a
 * 16 KB body shrinks 5-13x for ≈ 0.35-0.75 µs a record of compression.
 *
 * Readers tell the forms apart by the column's type, so rows written before (TEXT) read as
 * they did and no migration rewrites them. The `bytes` column and the usage counts stay
 * the text's bytes: quotas and the API's figures mean what they meant.
 *
 * Thread rules: the compression and decompression contexts and their buffers belong to the
 * connection (gg_store_conn), which one thread holds at a time. */
#include "store/store_internal.h"

#include <stdlib.h>
#include <string.h>
#include <zstd.h>

/* Level -3, one of zstd's fast levels: on a 16 KB body of varied records (this project's
 * 2-core EPYC) 650 MB/s and 5x smaller, where level 1 made 460 MB/s and 8x — the writer's
 * CPU is what issue 31 counts, and compression was half of it at level 1. Faster levels
 * gain little more (-5: 680 MB/s, 4.3x); slower ones cost more than their bytes save. */
#ifndef BODY_ZSTD_LEVEL
#define BODY_ZSTD_LEVEL (-3)
#endif
/* Bodies shorter than this stay text. A commit writes whole pages (16 KiB) whatever its
 * bytes, so a small body's frame saves the writer nothing while its compression costs it:
 * at a few records a commit (bench/gateway/callgrind.sh) compressing every body added ≈ 10 k
 * instructions a call. Bodies this long come from busy commits, where rows fill pages and
 * every byte saved is a byte SQLite does not copy, checksum and write. */
#ifndef GG_HIST_COMPRESS_MIN
#define GG_HIST_COMPRESS_MIN 8192
#endif

/* buf grown to at least n bytes; false when memory ran out. */
static bool reserve(char **buf, size_t *cap, size_t n) {
    if (n <= *cap) return true;
    size_t c = *cap ? *cap : 4096;
    while (c < n) c *= 2;
    char *b = realloc(*buf, c);
    if (!b) return false;
    *buf = b;
    *cap = c;
    return true;
}

bool gg_history_bind_body(gg_store_conn *c, gg_db_stmt *st, int idx, const char *text, size_t len, gg_error *err) {
    if (c->pg || len < GG_HIST_COMPRESS_MIN) {
        gg_db_bind_text(st, idx, text, (int)len, SQLITE_STATIC);
        return true;
    }
    if (!c->zc) {
        c->zc = ZSTD_createCCtx();
        if (!c->zc || ZSTD_isError(ZSTD_CCtx_setParameter(c->zc, ZSTD_c_compressionLevel, BODY_ZSTD_LEVEL))) {
            gg_error_set(err, "oom", "out of memory");
            return false;
        }
    }
    if (!reserve(&c->zout, &c->zout_cap, ZSTD_compressBound(len))) {
        gg_error_set(err, "oom", "out of memory");
        return false;
    }
    size_t n = ZSTD_compress2(c->zc, c->zout, c->zout_cap, text, len);
    /* a body that does not shrink (or a failure, which leaves the text whole) is kept as text */
    if (ZSTD_isError(n) || n >= len) {
        gg_db_bind_text(st, idx, text, (int)len, SQLITE_STATIC);
        return true;
    }
    gg_db_bind_blob(st, idx, c->zout, (int)n, SQLITE_STATIC);
    return true;
}

/* The text size a frame of zn bytes at z declares; false when it declares none (the writer
 * always records it), is not a frame, or claims more than a row can hold: not ours, and
 * refused before anything is allocated for it. */
static bool frame_size(const void *z, size_t zn, size_t *n) {
    unsigned long long v = z ? ZSTD_getFrameContentSize(z, zn) : ZSTD_CONTENTSIZE_ERROR;
    if (v == ZSTD_CONTENTSIZE_ERROR || v == ZSTD_CONTENTSIZE_UNKNOWN || v > GG_HIST_ROW_TEXT_MAX) return false;
    *n = (size_t)v;
    return true;
}

const char *gg_history_body_text(gg_store_conn *c, gg_db_stmt *st, int col, size_t *len, gg_error *err) {
    *len = 0;
    if (gg_db_column_type(st, col) != SQLITE_BLOB) {
        const char *t = (const char *)gg_db_column_text(st, col);
        if (!t) return "";
        *len = (size_t)gg_db_column_bytes(st, col);
        return t;
    }
    const void *z = gg_db_column_blob(st, col);
    size_t zn = (size_t)gg_db_column_bytes(st, col), n;
    if (!frame_size(z, zn, &n)) {
        gg_error_set(err, "db", "a history row's body is malformed");
        return NULL;
    }
    if (!c->zd && !(c->zd = ZSTD_createDCtx())) {
        gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    if (!reserve(&c->zin, &c->zin_cap, n + 1)) {
        gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    size_t got = ZSTD_decompressDCtx(c->zd, c->zin, n, z, zn);
    if (ZSTD_isError(got) || got != n) {
        gg_error_set(err, "db", "a history row's body is malformed");
        return NULL;
    }
    c->zin[got] = 0;
    *len = got;
    return c->zin;
}

void gg_history_body_free(gg_store_conn *c) {
    ZSTD_freeCCtx(c->zc);
    ZSTD_freeDCtx(c->zd);
    free(c->zout);
    free(c->zin);
}

/* SQL history_text(body): a body as text, whatever its stored form — what the executions
 * view (migrations/0020) and operators' SQL read bodies with. A malformed frame is an SQL
 * error, not a crash; a frame claiming more than a row can hold is refused before any
 * allocation. */
static void history_text_fn(sqlite3_context *cx, int argc, sqlite3_value **argv) {
    (void)argc;
    if (sqlite3_value_type(argv[0]) != SQLITE_BLOB) {
        sqlite3_result_value(cx, argv[0]);
        return;
    }
    const void *z = sqlite3_value_blob(argv[0]);
    size_t zn = (size_t)sqlite3_value_bytes(argv[0]), n;
    if (!frame_size(z, zn, &n)) {
        sqlite3_result_error(cx, "history_text: a history row's body is malformed", -1);
        return;
    }
    char *out = sqlite3_malloc64(n + 1);
    if (!out) {
        sqlite3_result_error_nomem(cx);
        return;
    }
    size_t got = ZSTD_decompress(out, n, z, zn);
    if (ZSTD_isError(got) || got != n) {
        sqlite3_free(out);
        sqlite3_result_error(cx, "history_text: a history row's body is malformed", -1);
        return;
    }
    sqlite3_result_text(cx, out, (int)got, sqlite3_free);
}

bool gg_history_body_register(sqlite3 *db) {
    return sqlite3_create_function(db, "history_text", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, NULL,
                                   history_text_fn, NULL, NULL) == SQLITE_OK;
}
