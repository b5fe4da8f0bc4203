-- 0004: what each tenant's execution history holds, kept current by triggers, so the
-- per-tenant quota (history.tenant_max_rows / history.tenant_max_bytes) is checked by reading
-- one small row instead of summing a tenant's executions (src/store/usage.c).
--
-- bytes counts the stored texts of a run (arguments, result, error, nodes) as octets; it is
-- what a tenant makes the database hold, give or take SQLite's page overhead. dropped and
-- dropped_bytes count the runs the quota pass removed (oldest first), never reset, so an
-- operator and the tenant see that history was lost and how much.
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

CREATE TRIGGER history_usage_tenant AFTER INSERT ON tenants BEGIN
    INSERT OR IGNORE INTO history_usage(tenant) VALUES (new.name);
END;

-- The history writer inserts a run once (or a RUNNING row, then updates it once with the
-- final state); retention and the quota pass delete. CAST AS BLOB makes length() count
-- octets without decoding UTF-8.
CREATE TRIGGER history_usage_insert AFTER INSERT ON executions BEGIN
    UPDATE history_usage SET rows = rows + 1, bytes = bytes
        + coalesce(length(CAST(new.arguments AS BLOB)), 0) + coalesce(length(CAST(new.result AS BLOB)), 0)
        + coalesce(length(CAST(new.error AS BLOB)), 0) + coalesce(length(CAST(new.nodes AS BLOB)), 0)
    WHERE tenant = new.tenant;
END;

CREATE TRIGGER history_usage_update AFTER UPDATE OF arguments, result, error, nodes ON executions BEGIN
    UPDATE history_usage SET bytes = bytes
        + coalesce(length(CAST(new.arguments AS BLOB)), 0) + coalesce(length(CAST(new.result AS BLOB)), 0)
        + coalesce(length(CAST(new.error AS BLOB)), 0) + coalesce(length(CAST(new.nodes AS BLOB)), 0)
        - coalesce(length(CAST(old.arguments AS BLOB)), 0) - coalesce(length(CAST(old.result AS BLOB)), 0)
        - coalesce(length(CAST(old.error AS BLOB)), 0) - coalesce(length(CAST(old.nodes AS BLOB)), 0)
    WHERE tenant = new.tenant;
END;

CREATE TRIGGER history_usage_delete AFTER DELETE ON executions BEGIN
    UPDATE history_usage SET rows = rows - 1, bytes = bytes
        - coalesce(length(CAST(old.arguments AS BLOB)), 0) - coalesce(length(CAST(old.result AS BLOB)), 0)
        - coalesce(length(CAST(old.error AS BLOB)), 0) - coalesce(length(CAST(old.nodes AS BLOB)), 0)
    WHERE tenant = old.tenant;
END;
