-- 0004 (PostgreSQL): as ../0004_history_usage.sql — per-tenant history usage, counted in
-- bulk by the quota pass above history_usage_mark.counted (an executions.rowid), corrected
-- by triggers for what changes under the mark.
CREATE TABLE history_usage (
    tenant        TEXT PRIMARY KEY REFERENCES tenants(name) ON DELETE CASCADE,
    rows          BIGINT NOT NULL DEFAULT 0,
    bytes         BIGINT NOT NULL DEFAULT 0,
    dropped       BIGINT NOT NULL DEFAULT 0,
    dropped_bytes BIGINT NOT NULL DEFAULT 0
);

INSERT INTO history_usage(tenant, rows, bytes)
    SELECT t.name,
           (SELECT count(*) FROM executions e WHERE e.tenant = t.name),
           coalesce((SELECT sum(coalesce(octet_length(arguments), 0) + coalesce(octet_length(result), 0)
                                + coalesce(octet_length(error), 0) + coalesce(octet_length(nodes), 0))
                     FROM executions e WHERE e.tenant = t.name), 0)
    FROM tenants t;

CREATE TABLE history_usage_mark (
    id      BIGINT PRIMARY KEY CHECK (id = 1),
    counted BIGINT NOT NULL
);
INSERT INTO history_usage_mark(id, counted) VALUES (1, coalesce((SELECT max(rowid) FROM executions), 0));

CREATE FUNCTION history_usage_tenant() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO history_usage(tenant) VALUES (NEW.name) ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;
CREATE TRIGGER history_usage_tenant AFTER INSERT ON tenants
    FOR EACH ROW EXECUTE FUNCTION history_usage_tenant();

CREATE FUNCTION history_usage_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.rowid <= (SELECT counted FROM history_usage_mark WHERE id = 1) THEN
        UPDATE history_usage SET bytes = bytes
            + coalesce(octet_length(NEW.arguments), 0) + coalesce(octet_length(NEW.result), 0)
            + coalesce(octet_length(NEW.error), 0) + coalesce(octet_length(NEW.nodes), 0)
            - coalesce(octet_length(OLD.arguments), 0) - coalesce(octet_length(OLD.result), 0)
            - coalesce(octet_length(OLD.error), 0) - coalesce(octet_length(OLD.nodes), 0)
        WHERE tenant = NEW.tenant;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER history_usage_update AFTER UPDATE OF arguments, result, error, nodes ON executions
    FOR EACH ROW EXECUTE FUNCTION history_usage_update();

CREATE FUNCTION history_usage_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.rowid <= (SELECT counted FROM history_usage_mark WHERE id = 1) THEN
        UPDATE history_usage SET rows = rows - 1, bytes = bytes
            - coalesce(octet_length(OLD.arguments), 0) - coalesce(octet_length(OLD.result), 0)
            - coalesce(octet_length(OLD.error), 0) - coalesce(octet_length(OLD.nodes), 0)
        WHERE tenant = OLD.tenant;
        UPDATE history_usage_mark SET counted = coalesce((SELECT max(rowid) FROM executions WHERE rowid < OLD.rowid), 0)
        WHERE id = 1 AND counted = OLD.rowid;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER history_usage_delete AFTER DELETE ON executions
    FOR EACH ROW EXECUTE FUNCTION history_usage_delete();
