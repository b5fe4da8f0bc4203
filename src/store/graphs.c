/* graphs.c — graph versions (immutable) and the active pointer of each graph. Putting a
 * version and activating it happen in one transaction, so readers see the old active
 * version or the new one, never a graph without one. */
#include "store/store_internal.h"

#include <stdlib.h>
#include <string.h>

void gg_store_graph_source_clear(gg_graph_source *g) {
    if (!g) return;
    free(g->tenant);
    free(g->name);
    free(g->source);
    free(g->format);
    free(g->created_by);
    memset(g, 0, sizeof *g);
}

static const char SQL_GRAPH_UPSERT[] =
    "INSERT INTO graphs(tenant, name, created_at, updated_at)"
    " SELECT ?1, ?2, CAST(?3 AS INTEGER), CAST(?3 AS INTEGER) WHERE EXISTS (SELECT 1 FROM tenants WHERE name = ?1)"
    " ON CONFLICT(tenant, name) DO UPDATE SET updated_at = excluded.updated_at";
static const char SQL_GRAPH_ID[] =
    "SELECT id, active_version FROM graphs WHERE tenant = ?1 AND name = ?2";
static const char SQL_NEXT_VERSION[] =
    "SELECT coalesce(max(version), 0) + 1 FROM graph_versions WHERE graph_id = ?1";
static const char SQL_VERSION_INSERT[] =
    "INSERT INTO graph_versions(graph_id, version, source, format, content_hash, created_at, created_by)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
static const char SQL_SET_ACTIVE[] =
    "UPDATE graphs SET active_version = ?2, updated_at = ?3 WHERE id = ?1";
static const char SQL_VERSION_EXISTS[] =
    "SELECT 1 FROM graph_versions WHERE graph_id = ?1 AND version = ?2";
static const char SQL_GRAPH_DELETE[] = "DELETE FROM graphs WHERE tenant = ?1 AND name = ?2";
static const char SQL_GET_VERSION[] =
    "SELECT g.tenant, g.name, v.version, v.source, v.format, v.content_hash, v.created_at, v.created_by"
    " FROM graphs g JOIN graph_versions v ON v.graph_id = g.id"
    " WHERE g.tenant = ?1 AND g.name = ?2 AND v.version = coalesce(?3, g.active_version)";
static const char SQL_LIST[] =
    "SELECT g.name, g.active_version, (SELECT count(*) FROM graph_versions v WHERE v.graph_id = g.id),"
    " g.created_at, g.updated_at FROM graphs g WHERE g.tenant = ?1 ORDER BY g.name";
static const char SQL_VERSIONS[] =
    "SELECT v.version, v.content_hash, v.format, v.created_at, v.created_by, v.version = g.active_version"
    " FROM graphs g JOIN graph_versions v ON v.graph_id = g.id"
    " WHERE g.tenant = ?1 AND g.name = ?2 ORDER BY v.version DESC";
static const char SQL_TENANT_GRAPHS[] = "SELECT count(*) FROM graphs WHERE tenant = ?1";
static const char SQL_TENANT_BYTES[] =
    "SELECT coalesce(sum(length(CAST(v.source AS BLOB))), 0) FROM graphs g"
    " JOIN graph_versions v ON v.graph_id = g.id WHERE g.tenant = ?1";
/* Versions of graph ?1 older than the newest ?2 - 1 (room for the one being added), except
 * the active one (which a rollback may have made old). */
static const char SQL_PRUNE_VERSIONS[] =
    "DELETE FROM graph_versions WHERE graph_id = ?1 AND version <= CAST(?2 AS INTEGER) - ?3"
    " AND version <> coalesce((SELECT active_version FROM graphs WHERE id = ?1), 0)";
static const char SQL_ALL_ACTIVE[] =
    "SELECT g.tenant, g.name, v.version, v.source, v.format, v.content_hash, v.created_at, v.created_by"
    " FROM graphs g JOIN graph_versions v ON v.graph_id = g.id AND v.version = g.active_version"
    " ORDER BY g.tenant, g.name";

static const char SQL_ALL_ACTIVE_VERSIONS[] =
    "SELECT g.tenant, g.name, v.version"
    " FROM graphs g JOIN graph_versions v ON v.graph_id = g.id AND v.version = g.active_version"
    " ORDER BY g.tenant, g.name";

/* Look up the graph's row id (0 + "not_found" when absent). */
static long long graph_id(gg_store_conn *c, const char *tenant, const char *name, gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_GRAPH_ID, err);
    if (!st) return 0;
    gg_db_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 2, name, -1, SQLITE_STATIC);
    int rc = gg_db_step(st);
    long long id = rc == SQLITE_ROW ? gg_db_column_int64(st, 0) : 0;
    gg_db_reset(st);
    if (rc == SQLITE_DONE) gg_error_set(err, "not_found", "graph '%s/%s' not found", tenant, name);
    else if (rc != SQLITE_ROW) gg_store_set_db_error(c, err, "graph");
    return id;
}

static bool set_active(gg_store_conn *c, long long gid, int version, gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_SET_ACTIVE, err);
    if (!st) return false;
    gg_db_bind_int64(st, 1, gid);
    gg_db_bind_int(st, 2, version);
    gg_db_bind_int64(st, 3, gg_wall_ms());
    if (!gg_store_step_done(c, st, "graph", err)) return false;
    return gg_store_bump_generation(c, GG_GEN_GRAPHS, err);
}

/* One number from a query bound to the tenant (-1 + err on failure). */
static long long tenant_number(gg_store_conn *c, const char *sql, const char *tenant, gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, sql, err);
    if (!st) return -1;
    gg_db_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
    long long v = gg_db_step(st) == SQLITE_ROW ? gg_db_column_int64(st, 0) : -1;
    gg_db_reset(st);
    if (v < 0) gg_store_set_db_error(c, err, "graph usage");
    return v;
}

/* Inside the put transaction, before the graph row exists: a new graph must fit the count. */
static bool quota_count(gg_store_conn *c, const char *tenant, const char *name, const gg_graph_quota *q,
                        gg_error *err) {
    if (!q || q->max_graphs <= 0) return true;
    long long id = graph_id(c, tenant, name, err);
    if (id) return true;
    if (strcmp(err->code, "not_found") != 0) return false;
    gg_error_clear(err);
    long long n = tenant_number(c, SQL_TENANT_GRAPHS, tenant, err);
    if (n < 0) return false;
    if (n < q->max_graphs) return true;
    gg_error_set(err, "quota_exceeded", "tenant '%s' has %lld graphs, the most it may have; delete one first", tenant, n);
    return false;
}

/* Drop the oldest inactive versions past max_versions, then check the tenant's bytes with
 * the new version added (all in the put transaction: a failed check undoes the drop). */
static bool quota_bytes(gg_store_conn *c, const char *tenant, long long gid, int version, size_t len,
                        const gg_graph_quota *q, gg_error *err) {
    if (!q) return true;
    if (q->max_versions > 0) {
        gg_db_stmt *st = gg_store_conn_stmt(c, SQL_PRUNE_VERSIONS, err);
        if (!st) return false;
        gg_db_bind_int64(st, 1, gid);
        gg_db_bind_int(st, 2, version);
        gg_db_bind_int(st, 3, q->max_versions);
        if (!gg_store_step_done(c, st, "graph version", err)) return false;
    }
    if (q->max_tenant_bytes <= 0) return true;
    long long used = tenant_number(c, SQL_TENANT_BYTES, tenant, err);
    if (used < 0) return false;
    if ((unsigned long long)used + len <= (unsigned long long)q->max_tenant_bytes) return true;
    gg_error_set(err, "quota_exceeded",
                 "tenant '%s' stores %lld bytes of graph sources; this %zu-byte version would pass its limit of %lld bytes"
                 " (delete graphs to make room)", tenant, used, len, q->max_tenant_bytes);
    return false;
}

bool gg_store_graph_put(gg_store *s, const char *tenant, const char *name, const char *source,
                        size_t source_len, const char *format, const char *created_by,
                        int *version_out, gg_error *err) {
    return gg_store_graph_put_quota(s, tenant, name, source, source_len, format, created_by, NULL, version_out, err);
}

typedef struct {
    const char *tenant, *name, *source, *format, *created_by;
    size_t source_len;
    const gg_graph_quota *q;
    const char *hash;
    int version; /* out: the version written */
} graph_put_args;

/* The graph's row (made on first put), the next version number. 0 + err on failure. */
static long long put_graph_row(gg_store_conn *c, graph_put_args *a, long long now, gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_GRAPH_UPSERT, err);
    if (!st) return 0;
    gg_db_bind_text(st, 1, a->tenant, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 2, a->name, -1, SQLITE_STATIC);
    gg_db_bind_int64(st, 3, now);
    if (!gg_store_step_done(c, st, "graph", err)) return 0;
    if (gg_db_changes(c) == 0) { gg_error_set(err, "not_found", "tenant '%s' not found", a->tenant); return 0; }
    long long gid = graph_id(c, a->tenant, a->name, err);
    if (gid == 0 || !(st = gg_store_conn_stmt(c, SQL_NEXT_VERSION, err))) return 0;
    gg_db_bind_int64(st, 1, gid);
    if (gg_db_step(st) == SQLITE_ROW) a->version = gg_db_column_int(st, 0);
    else { gg_store_set_db_error(c, err, "graph"); gid = 0; }
    gg_db_reset(st);
    return gid;
}

/* Quotas checked, then the new version written and made active, in one transaction. */
static bool graph_put_tx(gg_store_conn *c, void *user, gg_error *err) {
    graph_put_args *a = user;
    long long now = gg_wall_ms(), gid = 0;
    if (!quota_count(c, a->tenant, a->name, a->q, err) || !(gid = put_graph_row(c, a, now, err)) ||
        !quota_bytes(c, a->tenant, gid, a->version, a->source_len, a->q, err))
        return false;
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_VERSION_INSERT, err);
    if (!st) return false;
    gg_db_bind_int64(st, 1, gid);
    gg_db_bind_int(st, 2, a->version);
    gg_db_bind_text(st, 3, a->source, (int)a->source_len, SQLITE_STATIC);
    gg_db_bind_text(st, 4, a->format, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 5, a->hash, -1, SQLITE_STATIC);
    gg_db_bind_int64(st, 6, now);
    gg_store_bind_text(st, 7, a->created_by);
    if (!gg_store_step_done(c, st, "graph version", err)) return false;
    return set_active(c, gid, a->version, err);
}

bool gg_store_graph_put_quota(gg_store *s, const char *tenant, const char *name, const char *source,
                              size_t source_len, const char *format, const char *created_by,
                              const gg_graph_quota *q, int *version_out, gg_error *err) {
    if (!format || (strcmp(format, "yaml") != 0 && strcmp(format, "json") != 0)) {
        gg_error_set(err, "invalid", "graph format must be yaml or json");
        return false;
    }
    if (source_len > (size_t)1 << 30) { gg_error_set(err, "invalid", "graph source too large"); return false; }
    char hash[65];
    gg_store_sha256_hex(source, source_len, hash);
    graph_put_args a = {tenant, name, source, format, created_by, source_len, q, hash, 0};
    bool ok = gg_store_write_tx(s, graph_put_tx, &a, err);
    if (ok && version_out) *version_out = a.version;
    return ok;
}

/* Fill out from a SQL_GET_VERSION / SQL_ALL_ACTIVE row. */
static bool row_to_source(gg_db_stmt *st, gg_graph_source *out) {
    bool oom = false;
    memset(out, 0, sizeof *out);
    out->tenant = gg_store_column_strdup(st, 0, &oom);
    out->name = gg_store_column_strdup(st, 1, &oom);
    out->version = gg_db_column_int(st, 2);
    out->source_len = (size_t)gg_db_column_bytes(st, 3);
    out->source = gg_store_column_strdup(st, 3, &oom);
    if (!out->source && !oom) out->source = strdup("");
    if (!out->source) oom = true;
    out->format = gg_store_column_strdup(st, 4, &oom);
    snprintf(out->content_hash, sizeof out->content_hash, "%s", (const char *)gg_db_column_text(st, 5));
    out->created_ms = gg_db_column_int64(st, 6);
    out->created_by = gg_store_column_strdup(st, 7, &oom);
    if (oom) gg_store_graph_source_clear(out);
    return !oom;
}

static bool get_version(gg_store *s, const char *tenant, const char *name, int version,
                        gg_graph_source *out, gg_error *err) {
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return false;
    bool ok = false;
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_GET_VERSION, err);
    if (st) {
        gg_db_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
        gg_db_bind_text(st, 2, name, -1, SQLITE_STATIC);
        if (version > 0) gg_db_bind_int(st, 3, version);
        int rc = gg_db_step(st);
        if (rc == SQLITE_ROW) {
            ok = row_to_source(st, out);
            if (!ok) gg_error_set(err, "oom", "out of memory");
        } else if (rc == SQLITE_DONE) {
            if (version > 0) gg_error_set(err, "not_found", "graph '%s/%s' has no version %d", tenant, name, version);
            else gg_error_set(err, "not_found", "graph '%s/%s' not found", tenant, name);
        } else {
            gg_store_set_db_error(c, err, "graph");
        }
        gg_db_reset(st);
    }
    gg_store_conn_release(s, c);
    return ok;
}

bool gg_store_graph_get_active(gg_store *s, const char *tenant, const char *name,
                               gg_graph_source *out, gg_error *err) {
    return get_version(s, tenant, name, 0, out, err);
}

bool gg_store_graph_get_version(gg_store *s, const char *tenant, const char *name, int version,
                                gg_graph_source *out, gg_error *err) {
    if (version <= 0) { gg_error_set(err, "invalid", "version must be a positive number"); return false; }
    return get_version(s, tenant, name, version, out, err);
}

json_t *gg_store_graphs_list(gg_store *s, const char *tenant, gg_error *err) {
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return NULL;
    json_t *arr = json_array();
    gg_db_stmt *st = arr ? gg_store_conn_stmt(c, SQL_LIST, err) : NULL;
    int rc = SQLITE_ERROR;
    if (st) {
        gg_db_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
        while ((rc = gg_db_step(st)) == SQLITE_ROW) {
            json_t *o = json_pack("{s:s,s:I,s:I,s:o,s:o}", "name", (const char *)gg_db_column_text(st, 0),
                                  "active_version", (json_int_t)gg_db_column_int64(st, 1),
                                  "versions", (json_int_t)gg_db_column_int64(st, 2),
                                  "created_at", gg_store_time_json(gg_db_column_int64(st, 3)),
                                  "updated_at", gg_store_time_json(gg_db_column_int64(st, 4)));
            if (!o || json_array_append_new(arr, o) != 0) { rc = SQLITE_NOMEM; break; }
        }
        if (rc != SQLITE_DONE) gg_store_set_db_error(c, err, "graphs");
        gg_db_reset(st);
    }
    gg_store_conn_release(s, c);
    if (rc != SQLITE_DONE) { json_decref(arr); return NULL; }
    return arr;
}

json_t *gg_store_graph_versions(gg_store *s, const char *tenant, const char *name, gg_error *err) {
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return NULL;
    json_t *arr = json_array();
    gg_db_stmt *st = arr ? gg_store_conn_stmt(c, SQL_VERSIONS, err) : NULL;
    int rc = SQLITE_ERROR;
    if (st) {
        gg_db_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
        gg_db_bind_text(st, 2, name, -1, SQLITE_STATIC);
        while ((rc = gg_db_step(st)) == SQLITE_ROW) {
            json_t *o = json_pack("{s:I,s:s,s:s,s:o,s:s?,s:b}", "version", (json_int_t)gg_db_column_int64(st, 0),
                                  "content_hash", (const char *)gg_db_column_text(st, 1),
                                  "format", (const char *)gg_db_column_text(st, 2),
                                  "created_at", gg_store_time_json(gg_db_column_int64(st, 3)),
                                  "created_by", (const char *)gg_db_column_text(st, 4),
                                  "active", gg_db_column_int(st, 5) != 0);
            if (!o || json_array_append_new(arr, o) != 0) { rc = SQLITE_NOMEM; break; }
        }
        if (rc != SQLITE_DONE) gg_store_set_db_error(c, err, "graph versions");
        gg_db_reset(st);
    }
    gg_store_conn_release(s, c);
    if (rc != SQLITE_DONE) { json_decref(arr); return NULL; }
    if (json_array_size(arr) == 0) {
        json_decref(arr);
        gg_error_set(err, "not_found", "graph '%s/%s' not found", tenant, name);
        return NULL;
    }
    return arr;
}

typedef struct {
    const char *tenant, *name;
    int version;
} graph_ref_args;

static bool graph_activate_tx(gg_store_conn *c, void *user, gg_error *err) {
    const graph_ref_args *a = user;
    long long gid = graph_id(c, a->tenant, a->name, err);
    gg_db_stmt *st = gid ? gg_store_conn_stmt(c, SQL_VERSION_EXISTS, err) : NULL;
    if (!st) return false;
    gg_db_bind_int64(st, 1, gid);
    gg_db_bind_int(st, 2, a->version);
    int rc = gg_db_step(st);
    gg_db_reset(st);
    if (rc == SQLITE_DONE) {
        gg_error_set(err, "not_found", "graph '%s/%s' has no version %d", a->tenant, a->name, a->version);
        return false;
    }
    if (rc != SQLITE_ROW) { gg_store_set_db_error(c, err, "graph"); return false; }
    return set_active(c, gid, a->version, err);
}

bool gg_store_graph_activate(gg_store *s, const char *tenant, const char *name, int version,
                             gg_error *err) {
    graph_ref_args a = {tenant, name, version};
    return gg_store_write_tx(s, graph_activate_tx, &a, err);
}

static bool graph_delete_tx(gg_store_conn *c, void *user, gg_error *err) {
    const graph_ref_args *a = user;
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_GRAPH_DELETE, err);
    if (!st) return false;
    gg_db_bind_text(st, 1, a->tenant, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 2, a->name, -1, SQLITE_STATIC);
    if (!gg_store_step_done(c, st, "graph", err)) return false;
    if (gg_db_changes(c) == 0) {
        gg_error_set(err, "not_found", "graph '%s/%s' not found", a->tenant, a->name);
        return false;
    }
    return gg_store_bump_generation(c, GG_GEN_GRAPHS, err);
}

bool gg_store_graph_delete(gg_store *s, const char *tenant, const char *name, gg_error *err) {
    graph_ref_args a = {tenant, name, 0};
    return gg_store_write_tx(s, graph_delete_tx, &a, err);
}

bool gg_store_graphs_foreach_active(gg_store *s, gg_graph_visit_fn fn, void *user, gg_error *err) {
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return false;
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_ALL_ACTIVE, err);
    int rc = SQLITE_ERROR;
    bool ok = st != NULL;
    if (st) {
        while ((rc = gg_db_step(st)) == SQLITE_ROW) {
            gg_graph_source g;
            if (!row_to_source(st, &g)) { gg_error_set(err, "oom", "out of memory"); ok = false; break; }
            bool go_on = fn(user, &g);
            gg_store_graph_source_clear(&g);
            if (!go_on) break;
        }
        if (ok && rc != SQLITE_DONE && rc != SQLITE_ROW) { gg_store_set_db_error(c, err, "graphs"); ok = false; }
        gg_db_reset(st);
    }
    gg_store_conn_release(s, c);
    return ok;
}

/* See store.h: names and active version numbers only. */
bool gg_store_graphs_foreach_active_version(gg_store *s, gg_graph_visit_fn fn, void *user, gg_error *err) {
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return false;
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_ALL_ACTIVE_VERSIONS, err);
    int rc = SQLITE_ERROR;
    bool ok = st != NULL;
    if (st) {
        while ((rc = gg_db_step(st)) == SQLITE_ROW) {
            gg_graph_source g = {0};
            g.tenant = (char *)gg_db_column_text(st, 0); /* borrowed for the visit */
            g.name = (char *)gg_db_column_text(st, 1);
            g.version = gg_db_column_int(st, 2);
            if (!g.tenant || !g.name) { gg_error_set(err, "oom", "out of memory"); ok = false; break; }
            if (!fn(user, &g)) break;
        }
        if (ok && rc != SQLITE_DONE && rc != SQLITE_ROW) { gg_store_set_db_error(c, err, "graphs"); ok = false; }
        gg_db_reset(st);
    }
    gg_store_conn_release(s, c);
    return ok;
}
