-- 0004: what each tenant's execution history holds, so the per-tenant quota
-- (history.tenant_max_rows / history.tenant_max_bytes) is checked by reading one small row
-- instead of summing a tenant's executions (src/store/usage.c).
--
-- bytes counts the stored texts of a run (arguments, result, error, nodes) as octets; it is
-- what a tenant makes the database hold, give or take SQLite's page overhead. dropped and
-- dropped_bytes count the runs the quota pass removed (oldest first), never reset, so an
-- operator and the tenant see that history was lost and how much.
--
-- Counting costs the history writer nothing per run (a trigger on every insert cost it
-- ~1 us a run, a quarter of its work; bench/history): new rows are counted in bulk by the
-- quota pass, which adds every executions row above history_usage_mark.counted (a rowid)
-- and moves the mark. The triggers below only correct what changes under the mark: the
-- final state of a run whose RUNNING row was already counted, and deletions (retention,
-- the quota pass, tenant deletion). Rowids only grow while the newest row stays; when the
-- row at the mark is deleted, the mark goes down to the highest rowid left below it, so a
-- later insert (max(rowid) + 1) is always above the mark.
CREATE TABLE history_usage (
    tenant        TEXT PRIMARY KEY REFERENCES tenants(name) ON DELETE CASCADE,
    rows          INTEGER NOT NULL DEFAULT 0,
    bytes         INTEGER NOT NULL DEFAULT 0,
    dropped       INTEGER NOT NULL DEFAULT 0,
    dropped_bytes INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- One row per tenant, made with the tenant (so the triggers below only ever UPDATE by key).
INSERT INTO history_usage(tenant, rows, bytes)
    SELECT t.name,
           (SELECT count(*) FROM executions e WHERE e.tenant = t.name),
           coalesce((SELECT sum(coalesce(length(CAST(arguments AS BLOB)), 0) + coalesce(length(CAST(result AS BLOB)), 0)
                                + coalesce(length(CAST(error AS BLOB)), 0) + coalesce(length(CAST(nodes AS BLOB)), 0))
                     FROM executions e WHERE e.tenant = t.name), 0)
    FROM tenants t;

CREATE TABLE history_usage_mark (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    counted INTEGER NOT NULL
);
INSERT INTO history_usage_mark(id, counted) VALUES (1, coalesce((SELECT max(rowid) FROM executions), 0));

CREATE TRIGGER history_usage_tenant AFTER INSERT ON tenants BEGIN
    INSERT OR IGNORE INTO history_usage(tenant) VALUES (new.name);
END;

CREATE TRIGGER history_usage_update AFTER UPDATE OF arguments, result, error, nodes ON executions
    WHEN old.rowid <= (SELECT counted FROM history_usage_mark WHERE id = 1)
BEGIN
    UPDATE history_usage SET bytes = bytes
        + coalesce(length(CAST(new.arguments AS BLOB)), 0) + coalesce(length(CAST(new.result AS BLOB)), 0)
        + coalesce(length(CAST(new.error AS BLOB)), 0) + coalesce(length(CAST(new.nodes AS BLOB)), 0)
        - coalesce(length(CAST(old.arguments AS BLOB)), 0) - coalesce(length(CAST(old.result AS BLOB)), 0)
        - coalesce(length(CAST(old.error AS BLOB)), 0) - coalesce(length(CAST(old.nodes AS BLOB)), 0)
    WHERE tenant = new.tenant;
END;

CREATE TRIGGER history_usage_delete AFTER DELETE ON executions
    WHEN old.rowid <= (SELECT counted FROM history_usage_mark WHERE id = 1)
BEGIN
    UPDATE history_usage SET rows = rows - 1, bytes = bytes
        - coalesce(length(CAST(old.arguments AS BLOB)), 0) - coalesce(length(CAST(old.result AS BLOB)), 0)
        - coalesce(length(CAST(old.error AS BLOB)), 0) - coalesce(length(CAST(old.nodes AS BLOB)), 0)
    WHERE tenant = old.tenant;
    UPDATE history_usage_mark SET counted = coalesce((SELECT max(rowid) FROM executions WHERE rowid < old.rowid), 0)
    WHERE id = 1 AND counted = old.rowid;
END;
