/* pins.c — pinned downstream tool definitions and their pending changes (migration 0017;
 * issue 28). A graph version's pins are written once, after its upload; a change of a
 * pinned definition is at most one row per (tenant, server identity, tool), pending or
 * rejected, bounded per tenant by the caller. Approving applies the change to every pin
 * of the tenant on that tool and bumps the pins generation (NOTIFY on PostgreSQL) in the
 * same transaction, and sets the tenant's own row "pins:<tenant>" of the generations table
 * (no migration: such rows are created by their first write) to the new value, so every
 * replica finds which tenants moved since the value it saw and recompiles only their
 * graphs (gg_store_pins_tenants_since). */
#include "store/store_internal.h"

#include <stdlib.h>
#include <string.h>

#define GRAPH_ID "(SELECT id FROM graphs WHERE tenant = ?1 AND name = ?2)"
static const char SQL_PIN_INS[] =
    "INSERT INTO graph_pins(graph_id, version, identity, server, on_change, tool, definition, hash, whole)"
    " VALUES (" GRAPH_ID ", ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT DO NOTHING";
static const char SQL_PIN_GET[] =
    "SELECT tool, definition FROM graph_pins WHERE graph_id = " GRAPH_ID " AND version = ?3 AND identity = ?4 ORDER BY tool";
/* The pins of the tenant's active versions on a server, review and quarantine only. */
static const char SQL_PIN_ACTIVE[] =
    "SELECT DISTINCT p.tool, p.hash, p.definition, p.whole FROM graph_pins p JOIN graphs g ON g.id = p.graph_id"
    " AND g.active_version = p.version WHERE g.tenant = ?1 AND p.identity = ?2 AND p.on_change <> 'follow' ORDER BY p.tool";
static const char SQL_CH_GET[] = "SELECT coalesce(new_hash, ''), status FROM downstream_changes WHERE tenant = ?1 AND identity = ?2 AND tool = ?3";
static const char SQL_CH_COUNT[] = "SELECT count(*) FROM downstream_changes WHERE tenant = ?1";
static const char SQL_CH_DEL[] = "DELETE FROM downstream_changes WHERE tenant = ?1 AND identity = ?2 AND tool = ?3";
static const char SQL_CH_DEL_PENDING[] =
    "DELETE FROM downstream_changes WHERE tenant = ?1 AND identity = ?2 AND tool = ?3 AND status = 'pending'";
static const char SQL_CH_INS[] =
    "INSERT INTO downstream_changes(tenant, identity, tool, id, server, kind, status, old_hash, new_hash, definition, diff,"
    " created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'pending', ?7, ?8, ?9, ?10, ?11)";
#define CH_COLS "id, server, identity, tool, kind, status, old_hash, new_hash, definition, diff, created_at"
static const char SQL_CH_LIST[] = "SELECT " CH_COLS " FROM downstream_changes WHERE tenant = ?1 ORDER BY created_at, id";
static const char SQL_CH_ONE[] = "SELECT " CH_COLS " FROM downstream_changes WHERE tenant = ?1 AND id = ?2";
static const char SQL_CH_REJECT[] = "UPDATE downstream_changes SET status = 'rejected' WHERE tenant = ?1 AND id = ?2";
static const char SQL_CH_DEL_ID[] = "DELETE FROM downstream_changes WHERE tenant = ?1 AND id = ?2";
#define TENANT_GRAPHS "graph_id IN (SELECT id FROM graphs WHERE tenant = ?1)"
static const char SQL_AP_CHANGED[] = "UPDATE graph_pins SET definition = ?4, hash = ?5 WHERE " TENANT_GRAPHS
                                     " AND identity = ?2 AND tool = ?3 AND on_change <> 'follow'";
static const char SQL_AP_REMOVED[] = "DELETE FROM graph_pins WHERE " TENANT_GRAPHS
                                     " AND identity = ?2 AND tool = ?3 AND on_change <> 'follow'";
static const char SQL_AP_ADDED[] =
    "INSERT INTO graph_pins(graph_id, version, identity, server, on_change, tool, definition, hash, whole)"
    " SELECT DISTINCT graph_id, version, identity, server, on_change, ?3, ?4, ?5, whole FROM graph_pins WHERE " TENANT_GRAPHS
    " AND identity = ?2 AND on_change <> 'follow' AND whole = 1 ON CONFLICT DO NOTHING";

static const char SQL_TENANT_GEN[] =
    "INSERT INTO generations(name, value) SELECT 'pins:' || ?1, value FROM generations WHERE name = 'pins'"
    " ON CONFLICT(name) DO UPDATE SET value = excluded.value";
static const char SQL_TENANTS_SINCE[] =
    "SELECT substr(name, 6) FROM generations WHERE name LIKE 'pins:%' AND value > ?1 ORDER BY name";

/* ---- pins ------------------------------------------------------------------------------ */

typedef struct pins_args {
    const char *tenant, *graph;
    int version;
    json_t *pins;
} pins_args;

static bool pin_one(gg_store_conn *c, pins_args *a, const char *identity, json_t *e, const char *tool, json_t *def,
                    gg_error *err) {
    char *text = json_dumps(def, JSON_COMPACT | JSON_SORT_KEYS);
    json_t *h = json_object_get(json_object_get(e, "hash"), tool); /* the caller hashes (graph layer) */
    gg_db_stmt *st = text && json_is_string(h) ? gg_store_conn_stmt(c, SQL_PIN_INS, err) : NULL;
    bool ok = false;
    if (st) {
        gg_db_bind_text(st, 1, a->tenant, -1, SQLITE_STATIC);
        gg_db_bind_text(st, 2, a->graph, -1, SQLITE_STATIC);
        gg_db_bind_int64(st, 3, a->version);
        gg_db_bind_text(st, 4, identity, -1, SQLITE_STATIC);
        gg_db_bind_text(st, 5, json_string_value(json_object_get(e, "server")), -1, SQLITE_STATIC);
        gg_db_bind_text(st, 6, json_string_value(json_object_get(e, "on_change")), -1, SQLITE_STATIC);
        gg_db_bind_text(st, 7, tool, -1, SQLITE_STATIC);
        gg_db_bind_text(st, 8, text, -1, SQLITE_STATIC);
        gg_db_bind_text(st, 9, json_string_value(h), -1, SQLITE_STATIC);
        gg_db_bind_int64(st, 10, json_is_true(json_object_get(e, "whole")));
        ok = gg_store_step_done(c, st, "graph_pins", err);
    } else if (!gg_error_is_set(err)) gg_error_set(err, "oom", "out of memory");
    free(text);
    return ok;
}

static bool pins_tx(gg_store_conn *c, void *user, gg_error *err) {
    pins_args *a = user;
    const char *identity, *tool;
    json_t *e, *def;
    json_object_foreach(a->pins, identity, e) {
        json_object_foreach(json_object_get(e, "tools"), tool, def)
            if (!pin_one(c, a, identity, e, tool, def, err)) return false;
    }
    return true;
}

bool gg_store_pins_put(gg_store *s, const char *tenant, const char *graph, int version, json_t *pins, gg_error *err) {
    if (!json_object_size(pins)) return true;
    pins_args a = {tenant, graph, version, pins};
    return gg_store_write_tx(s, pins_tx, &a, err);
}

json_t *gg_store_pins_get(gg_store *s, const char *tenant, const char *graph, int version, const char *identity,
                          gg_error *err) {
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return NULL;
    json_t *out = json_object();
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_PIN_GET, err);
    int rc = SQLITE_ERROR;
    if (st) {
        gg_db_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
        gg_db_bind_text(st, 2, graph, -1, SQLITE_STATIC);
        gg_db_bind_int64(st, 3, version);
        gg_db_bind_text(st, 4, identity, -1, SQLITE_STATIC);
        while ((rc = gg_db_step(st)) == SQLITE_ROW) {
            json_t *def = json_loads((const char *)gg_db_column_text(st, 1), JSON_ALLOW_NUL, NULL);
            if (json_is_object(def)) json_object_set_new(out, (const char *)gg_db_column_text(st, 0), def);
            else json_decref(def);
        }
        if (rc != SQLITE_DONE) gg_store_set_db_error(c, err, "graph_pins");
        gg_db_reset(st);
    }
    gg_store_conn_release(s, c);
    if (rc != SQLITE_DONE || !json_object_size(out)) { /* none: the version pinned nothing here */
        json_decref(out);
        return NULL;
    }
    return out;
}

static json_t *active_row(gg_db_stmt *st) {
    json_t *def = json_loads((const char *)gg_db_column_text(st, 2), JSON_ALLOW_NUL, NULL);
    return json_pack("{s:s,s:s,s:o,s:b}", "tool", (const char *)gg_db_column_text(st, 0), "hash",
                     (const char *)gg_db_column_text(st, 1), "definition", def ? def : json_null(), "whole",
                     gg_db_column_int64(st, 3) != 0);
}

json_t *gg_store_pins_active(gg_store *s, const char *tenant, const char *identity, gg_error *err) {
    return gg_store_tenant_rows(s, SQL_PIN_ACTIVE, tenant, identity, active_row, "graph_pins", err);
}

/* ---- changes --------------------------------------------------------------------------- */

static void bind_key(gg_db_stmt *st, const gg_store_change *ch) {
    gg_db_bind_text(st, 1, ch->tenant, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 2, ch->identity, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 3, ch->tool, -1, SQLITE_STATIC);
}

typedef struct change_args {
    const gg_store_change *ch;
    int max_rows;
    int outcome;
} change_args;

/* 1: a row with this new definition (pending or rejected) exists; 0: another one, pending;
 * 3: another one, rejected; -1 none. */
static int existing(gg_store_conn *c, const gg_store_change *ch, gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_CH_GET, err);
    if (!st) return -2;
    bind_key(st, ch);
    int rc = gg_db_step(st), r = -1;
    if (rc == SQLITE_ROW && !strcmp((const char *)gg_db_column_text(st, 0), ch->new_hash ? ch->new_hash : "")) r = 1;
    else if (rc == SQLITE_ROW) r = strcmp((const char *)gg_db_column_text(st, 1), "pending") ? 3 : 0;
    gg_db_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return gg_store_set_db_error(c, err, "downstream_changes"), -2;
    return r;
}

static long long tenant_count(gg_store_conn *c, const char *tenant, gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_CH_COUNT, err);
    if (!st) return -1;
    gg_db_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
    long long n = gg_db_step(st) == SQLITE_ROW ? gg_db_column_int64(st, 0) : -1;
    gg_db_reset(st);
    if (n < 0) gg_store_set_db_error(c, err, "downstream_changes");
    return n;
}

static bool change_tx(gg_store_conn *c, void *user, gg_error *err) {
    change_args *a = user;
    const gg_store_change *ch = a->ch;
    int ex = existing(c, ch, err);
    if (ex == -2) return false;
    a->outcome = 0;
    if (ex == 1) return true; /* proposed already (or rejected): nothing new */
    if (ex == -1) {
        long long n = tenant_count(c, ch->tenant, err);
        if (n < 0) return false;
        if (n >= a->max_rows) {
            gg_error_set(err, "too_many", "tenant '%s' holds %lld pending or rejected definition changes (at most %d)",
                         ch->tenant, n, a->max_rows);
            return false;
        }
    }
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_CH_DEL, err);
    if (!st) return false;
    bind_key(st, ch);
    if (!gg_store_step_done(c, st, "downstream_changes", err) || !(st = gg_store_conn_stmt(c, SQL_CH_INS, err))) return false;
    bind_key(st, ch);
    gg_db_bind_text(st, 4, ch->id, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 5, ch->server, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 6, ch->kind, -1, SQLITE_STATIC);
    gg_store_bind_text(st, 7, ch->old_hash);
    gg_store_bind_text(st, 8, ch->new_hash);
    gg_store_bind_text(st, 9, ch->definition);
    gg_db_bind_text(st, 10, ch->diff, -1, SQLITE_STATIC);
    gg_db_bind_int64(st, 11, ch->created_ms);
    a->outcome = ex == 0 ? 2 : 1; /* 2: in place of a pending proposal */
    return gg_store_step_done(c, st, "downstream_changes", err);
}

int gg_store_change_record(gg_store *s, const gg_store_change *ch, int max_rows, gg_error *err) {
    change_args a = {ch, max_rows, -1};
    return gg_store_write_tx(s, change_tx, &a, err) ? a.outcome : -1;
}

static bool clear_tx(gg_store_conn *c, void *user, gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_CH_DEL_PENDING, err);
    if (!st) return false;
    bind_key(st, user);
    return gg_store_step_done(c, st, "downstream_changes", err);
}

bool gg_store_change_clear(gg_store *s, const char *tenant, const char *identity, const char *tool, gg_error *err) {
    gg_store_change ch = {.tenant = tenant, .identity = identity, .tool = tool};
    return gg_store_write_tx(s, clear_tx, &ch, err);
}

static json_t *change_row(gg_db_stmt *st) {
    static const char *const names[] = {"id", "server", "identity", "tool", "kind", "status", "old_hash", "new_hash"};
    json_t *o = json_object();
    for (int i = 0; i < 8; i++) {
        const char *v = (const char *)gg_db_column_text(st, i);
        json_object_set_new(o, names[i], v ? json_string(v) : json_null());
    }
    const char *def = (const char *)gg_db_column_text(st, 8), *diff = (const char *)gg_db_column_text(st, 9);
    json_t *d = def ? json_loads(def, JSON_ALLOW_NUL, NULL) : NULL, *f = diff ? json_loads(diff, 0, NULL) : NULL;
    json_object_set_new(o, "definition", d ? d : json_null());
    json_object_set_new(o, "diff", f ? f : json_object());
    json_object_set_new(o, "created_at", gg_store_time_json(gg_db_column_int64(st, 10)));
    return o;
}

json_t *gg_store_changes_list(gg_store *s, const char *tenant, gg_error *err) {
    return gg_store_tenant_rows(s, SQL_CH_LIST, tenant, NULL, change_row, "downstream_changes", err);
}

typedef struct decide_args {
    const char *tenant, *id;
    bool approve;
    json_t *row; /* out */
} decide_args;

static json_t *one_change(gg_store_conn *c, const char *tenant, const char *id, gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_CH_ONE, err);
    if (!st) return NULL;
    gg_db_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 2, id, -1, SQLITE_STATIC);
    int rc = gg_db_step(st);
    json_t *row = rc == SQLITE_ROW ? change_row(st) : NULL;
    gg_db_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) gg_store_set_db_error(c, err, "downstream_changes");
    else if (!row) gg_error_set(err, "not_found", "no definition change '%s' for tenant '%s' (decided, or superseded)", id, tenant);
    return row;
}

/* The change applied to every pin of the tenant on that server's tool. */
static bool apply_pins(gg_store_conn *c, const char *tenant, json_t *row, gg_error *err) {
    const char *kind = json_string_value(json_object_get(row, "kind"));
    const char *sql = !strcmp(kind, "removed") ? SQL_AP_REMOVED : !strcmp(kind, "added") ? SQL_AP_ADDED : SQL_AP_CHANGED;
    char *def = json_dumps(json_object_get(row, "definition"), JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    gg_db_stmt *st = def ? gg_store_conn_stmt(c, sql, err) : NULL;
    bool ok = false;
    if (st) {
        gg_db_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
        gg_db_bind_text(st, 2, json_string_value(json_object_get(row, "identity")), -1, SQLITE_STATIC);
        gg_db_bind_text(st, 3, json_string_value(json_object_get(row, "tool")), -1, SQLITE_STATIC);
        if (sql != SQL_AP_REMOVED) {
            gg_db_bind_text(st, 4, def, -1, SQLITE_STATIC);
            gg_store_bind_text(st, 5, json_string_value(json_object_get(row, "new_hash")));
        }
        ok = gg_store_step_done(c, st, "graph_pins", err);
    } else if (!def) gg_error_set(err, "oom", "out of memory");
    free(def);
    return ok;
}

/* The tenant's row takes the pins generation just bumped (after it, in the same transaction). */
static bool tenant_generation(gg_store_conn *c, const char *tenant, gg_error *err) {
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_TENANT_GEN, err);
    if (!st) return false;
    gg_db_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
    return gg_store_step_done(c, st, "generations", err);
}

static bool decide_tx(gg_store_conn *c, void *user, gg_error *err) {
    decide_args *a = user;
    a->row = one_change(c, a->tenant, a->id, err);
    if (!a->row) return false;
    if (strcmp(json_string_value(json_object_get(a->row, "status")), "pending")) {
        gg_error_set(err, "conflict", "definition change '%s' was rejected already", a->id);
        return false;
    }
    gg_db_stmt *st = gg_store_conn_stmt(c, a->approve ? SQL_CH_DEL_ID : SQL_CH_REJECT, err);
    if (!st) return false;
    gg_db_bind_text(st, 1, a->tenant, -1, SQLITE_STATIC);
    gg_db_bind_text(st, 2, a->id, -1, SQLITE_STATIC);
    if (!gg_store_step_done(c, st, "downstream_changes", err)) return false;
    return !a->approve || (apply_pins(c, a->tenant, a->row, err) && gg_store_bump_generation(c, GG_GEN_PINS, err) &&
                           tenant_generation(c, a->tenant, err));
}

json_t *gg_store_change_decide(gg_store *s, const char *tenant, const char *id, bool approve, gg_error *err) {
    decide_args a = {tenant, id, approve, NULL};
    if (gg_store_write_tx(s, decide_tx, &a, err)) return a.row;
    json_decref(a.row);
    return NULL;
}

json_t *gg_store_pins_tenants_since(gg_store *s, long long since, gg_error *err) {
    gg_store_conn *c = gg_store_conn_acquire(s, err);
    if (!c) return NULL;
    json_t *out = json_array();
    gg_db_stmt *st = gg_store_conn_stmt(c, SQL_TENANTS_SINCE, err);
    int rc = SQLITE_ERROR;
    if (st) {
        gg_db_bind_int64(st, 1, since);
        while ((rc = gg_db_step(st)) == SQLITE_ROW) json_array_append_new(out, json_string((const char *)gg_db_column_text(st, 0)));
        if (rc != SQLITE_DONE) gg_store_set_db_error(c, err, "generations");
        gg_db_reset(st);
    }
    gg_store_conn_release(s, c);
    if (rc == SQLITE_DONE) return out;
    json_decref(out);
    return NULL;
}
