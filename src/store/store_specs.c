/* store_specs.c — node_specs (every version of every spec), node_specs_fts (FTS5 over the
 * current ones) and specs_meta (what was loaded last). Owned by the node-spec subsystem;
 * tables from migration 0001. */
#include "store/store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char SQL_UPSERT[] =
    "INSERT INTO node_specs (node_type, subtype, version, spec, source_path, checksum, loaded_at) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) "
    "ON CONFLICT (node_type, subtype, version) DO UPDATE SET spec = excluded.spec, "
    "source_path = excluded.source_path, checksum = excluded.checksum, loaded_at = excluded.loaded_at "
    "WHERE node_specs.checksum <> excluded.checksum";
static const char SQL_ID[] = "SELECT id FROM node_specs WHERE node_type = ?1 AND subtype = ?2 AND version = ?3";
static const char SQL_FTS_CLEAR[] = "DELETE FROM node_specs_fts";
static const char SQL_FTS_INSERT[] =
    "INSERT INTO node_specs_fts (rowid, node_type, subtype, description, tags, params) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
static const char SQL_META_SET[] =
    "INSERT INTO specs_meta (id, dir_checksum, source_dir, spec_count, loaded_at) VALUES (1, ?1, ?2, ?3, ?4) "
    "ON CONFLICT (id) DO UPDATE SET dir_checksum = excluded.dir_checksum, source_dir = excluded.source_dir, "
    "spec_count = excluded.spec_count, loaded_at = excluded.loaded_at";
static const char SQL_META_GET[] = "SELECT dir_checksum, spec_count FROM specs_meta WHERE id = 1";
static const char SQL_CURRENT[] =
    "SELECT spec FROM node_specs WHERE id IN (SELECT rowid FROM node_specs_fts) ORDER BY node_type, subtype";
static const char SQL_SEARCH[] =
    "SELECT node_type, subtype, description, "
    "snippet(node_specs_fts, -1, '[', ']', '…', 14), "
    "bm25(node_specs_fts, 2.0, 8.0, 3.0, 4.0, 1.0) AS rank "
    "FROM node_specs_fts WHERE node_specs_fts MATCH ?1 AND (CAST(?2 AS TEXT) IS NULL OR node_type = ?2) "
    "ORDER BY rank, subtype LIMIT ?3";
/* PostgreSQL: the same columns from its own text search (see migrations/postgres/0001):
 * websearch_to_tsquery reads what a user types (words, "phrases", -exclusions, OR) without
 * syntax errors; ts_rank with the A-D weights of the tsvector stands in for bm25, negated
 * so that smaller is better as with bm25. */
static const char SQL_SEARCH_PG[] =
    "SELECT node_type, subtype, description, "
    "ts_headline('english', coalesce(description, '') || ' ' || coalesce(tags, ''), q, "
    "'StartSel=[, StopSel=], MaxWords=14, MinWords=4, FragmentDelimiter=…'), "
    "-ts_rank('{0.1, 0.3, 0.6, 1.0}', tsv, q) AS rank "
    "FROM node_specs_fts, websearch_to_tsquery('english', ?1) AS q WHERE tsv @@ q AND (CAST(?2 AS TEXT) IS NULL OR node_type = ?2) "
    "ORDER BY rank, subtype LIMIT ?3";
static const char SQL_VERSIONS[] =
    "SELECT version, checksum, source_path, loaded_at, id IN (SELECT rowid FROM node_specs_fts) "
    "FROM node_specs WHERE node_type = ?1 AND subtype = ?2 ORDER BY loaded_at DESC, id DESC";

static bool put_row(gg_store_conn *c, const gg_store_spec_row *r, long long now, gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_UPSERT, err);
    if (!st) return false;
    gg_store_bind_text(st, 1, r->node_type);
    gg_store_bind_text(st, 2, r->subtype);
    gg_store_bind_text(st, 3, r->version);
    gg_store_bind_text(st, 4, r->spec_json);
    gg_store_bind_text(st, 5, r->source_path);
    gg_store_bind_text(st, 6, r->checksum);
    gg_db_bind_int64(st, 7, now);
    if (!gg_store_step_done(c, st, "node_specs upsert", err)) return false;
    st = gg_store_conn_stmt(c, SQL_ID, err);
    if (!st) return false;
    gg_store_bind_text(st, 1, r->node_type);
    gg_store_bind_text(st, 2, r->subtype);
    gg_store_bind_text(st, 3, r->version);
    if (gg_db_step(st) != SQLITE_ROW) {
        gg_store_set_db_error(c, err, "node_specs id");
        return false;
    }
    long long id = gg_db_column_int64(st, 0);
    gg_db_reset(st);
    st = gg_store_conn_stmt(c, SQL_FTS_INSERT, err);
    if (!st) return false;
    gg_db_bind_int64(st, 1, id);
    gg_store_bind_text(st, 2, r->node_type);
    gg_store_bind_text(st, 3, r->subtype);
    gg_store_bind_text(st, 4, r->description);
    gg_store_bind_text(st, 5, r->tags);
    gg_store_bind_text(st, 6, r->params);
    return gg_store_step_done(c, st, "node_specs_fts insert", err);
}

typedef struct {
    const gg_store_spec_row *rows;
    size_t n;
    const char *dir_checksum, *source_dir;
} replace_args;

/* The index emptied and refilled, and its meta row, in one transaction. */
static bool replace_tx(gg_store_conn *c, void *user, gg_error *err) {
    const replace_args *a = user;
    long long now = gg_wall_ms();
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_FTS_CLEAR, err);
    bool ok = st && gg_store_step_done(c, st, "node_specs_fts clear", err);
    for (size_t i = 0; ok && i < a->n; i++) ok = put_row(c, &a->rows[i], now, err);
    if (!ok || !(st = gg_store_conn_stmt(c, SQL_META_SET, err))) return false;
    gg_store_bind_text(st, 1, a->dir_checksum);
    gg_store_bind_text(st, 2, a->source_dir ? a->source_dir : "");
    gg_db_bind_int64(st, 3, (long long)a->n);
    gg_db_bind_int64(st, 4, now);
    return gg_store_step_done(c, st, "specs_meta", err);
}

/* See store.h. */
bool gg_store_specs_replace(gg_store *s, const gg_store_spec_row *rows, size_t n,
                            const char *dir_checksum, const char *source_dir, gg_error *err) {
    replace_args a = {rows, n, dir_checksum, source_dir};
    return gg_store_write_tx(s, replace_tx, &a, err);
}

/* See store.h. */
bool gg_store_specs_meta(gg_store *s, char checksum[65], long long *spec_count, bool *found, gg_error *err) {
    *found = false;
    checksum[0] = '\0';
    if (spec_count) *spec_count = 0;
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return false;
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_META_GET, err);
    bool ok = st != NULL;
    if (ok) {
        int rc = gg_db_step(st);
        if (rc == SQLITE_ROW) {
            const char *v = (const char *)gg_db_column_text(st, 0);
            snprintf(checksum, 65, "%s", v ? v : "");
            if (spec_count) *spec_count = gg_db_column_int64(st, 1);
            *found = true;
        } else if (rc != SQLITE_DONE) {
            gg_store_set_db_error(c, err, "specs_meta");
            ok = false;
        }
        gg_db_reset(st);
    }
    gg_store_conn_release(s, c);
    return ok;
}

/* See store.h. */
json_t *gg_store_specs_current(gg_store *s, gg_error *err) {
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return NULL;
    json_t *out = json_array();
    gg_db_stmt *st = out ? gg_store_conn_stmt(c, SQL_CURRENT, err) : NULL;
    int rc = SQLITE_ERROR;
    while (st && (rc = gg_db_step(st)) == SQLITE_ROW) {
        json_error_t je;
        const char *text = (const char *)gg_db_column_text(st, 0);
        json_t *doc = text ? json_loads(text, 0, &je) : NULL;
        if (!doc) {
            gg_error_set(err, "db", "a stored node spec is not valid JSON: %s", text ? je.text : "NULL");
            rc = SQLITE_ERROR;
            break;
        }
        json_array_append_new(out, doc);
    }
    if (st && rc != SQLITE_DONE && !gg_error_is_set(err)) gg_store_set_db_error(c, err, "node_specs read");
    if (st) gg_db_reset(st);
    gg_store_conn_release(s, c);
    if (!st || rc != SQLITE_DONE) {
        json_decref(out);
        if (!gg_error_is_set(err)) gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    return out;
}

static json_t *text_col(gg_db_stmt *st, int col) {
    const char *v = (const char *)gg_db_column_text(st, col);
    return json_string(v ? v : "");
}

/* See store.h. */
json_t *gg_store_specs_search(gg_store *s, const char *match, const char *node_type, int limit, gg_error *err) {
    if (limit < 1 || limit > 100) {
        gg_error_set(err, "invalid", "limit must be between 1 and 100");
        return NULL;
    }
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return NULL;
    json_t *out = json_array();
    gg_db_stmt *st = out ? gg_store_conn_stmt(c, gg_db_is_pg(c) ? SQL_SEARCH_PG : SQL_SEARCH, err) : NULL;
    int rc = SQLITE_ERROR;
    if (st) {
        gg_store_bind_text(st, 1, match);
        gg_store_bind_text(st, 2, node_type);
        gg_db_bind_int(st, 3, limit);
        while ((rc = gg_db_step(st)) == SQLITE_ROW) {
            json_t *row = json_pack("{s:o, s:o, s:o, s:o, s:f}", "node_type", text_col(st, 0), "subtype",
                                    text_col(st, 1), "description", text_col(st, 2), "snippet", text_col(st, 3),
                                    "score", -gg_db_column_double(st, 4));
            if (!row || json_array_append_new(out, row) != 0) {
                rc = SQLITE_NOMEM;
                break;
            }
        }
        if (rc != SQLITE_DONE) {
            const char *msg = c->pg ? c->errmsg : sqlite3_errmsg(c->db);
            if (rc == SQLITE_ERROR && msg && (strstr(msg, "fts5") || strstr(msg, "syntax")))
                gg_error_set(err, "invalid", "search query not understood: %s", msg);
            else
                gg_store_set_db_error(c, err, "node_specs search");
        }
        gg_db_reset(st);
    }
    gg_store_conn_release(s, c);
    if (rc != SQLITE_DONE) {
        json_decref(out);
        if (!gg_error_is_set(err)) gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    return out;
}

/* See store.h. */
json_t *gg_store_specs_versions(gg_store *s, const char *node_type, const char *subtype, gg_error *err) {
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return NULL;
    json_t *out = json_array();
    gg_db_stmt *st = out ? gg_store_conn_stmt(c, SQL_VERSIONS, err) : NULL;
    int rc = SQLITE_ERROR;
    if (st) {
        gg_store_bind_text(st, 1, node_type);
        gg_store_bind_text(st, 2, subtype);
        while ((rc = gg_db_step(st)) == SQLITE_ROW) {
            json_t *row = json_pack("{s:o, s:o, s:o, s:o, s:b}", "version", text_col(st, 0), "checksum",
                                    text_col(st, 1), "source_path", text_col(st, 2), "loaded_at",
                                    gg_store_time_json(gg_db_column_int64(st, 3)), "current",
                                    gg_db_column_int(st, 4));
            if (!row || json_array_append_new(out, row) != 0) {
                rc = SQLITE_NOMEM;
                break;
            }
        }
        if (rc != SQLITE_DONE) gg_store_set_db_error(c, err, "node_specs versions");
        gg_db_reset(st);
    }
    gg_store_conn_release(s, c);
    if (rc != SQLITE_DONE) {
        json_decref(out);
        if (!gg_error_is_set(err)) gg_error_set(err, "oom", "out of memory");
        return NULL;
    }
    return out;
}
