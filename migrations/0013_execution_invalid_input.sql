-- 0013: a tools/call refused by input validation (its arguments fail the tool's
-- inputSchema) is recorded too, with its own status 'invalid_input' (it never ran: no
-- nodes, finished when it started, the refusal's message as its error).
-- SQLite cannot change a CHECK constraint in place, so executions is rebuilt with the new
-- list: the rows are copied with their rowids (history_usage_mark.counted is a rowid, so
-- the usage totals stay right), and the table's indexes and trigger are made again as
-- 0003 and 0004 left them. Nothing references executions (node_executions went in 0003).
CREATE TABLE executions_new (
    id          TEXT PRIMARY KEY,
    tenant      TEXT NOT NULL REFERENCES tenants(name) ON DELETE CASCADE,
    graph       TEXT NOT NULL,
    version     INTEGER NOT NULL,
    tool        TEXT NOT NULL,
    key_id      TEXT,
    status      TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'cancelled', 'interrupted',
                                                'invalid_input')),
    started_at  INTEGER NOT NULL,
    finished_at INTEGER,
    duration_ms REAL,
    arguments   TEXT,
    result      TEXT,
    error       TEXT,
    nodes       TEXT,
    trace_id    TEXT,
    parent_id   TEXT
);
INSERT INTO executions_new(rowid, id, tenant, graph, version, tool, key_id, status, started_at, finished_at,
                           duration_ms, arguments, result, error, nodes, trace_id, parent_id)
    SELECT rowid, id, tenant, graph, version, tool, key_id, status, started_at, finished_at,
           duration_ms, arguments, result, error, nodes, trace_id, parent_id
    FROM executions;
DROP TABLE executions;
ALTER TABLE executions_new RENAME TO executions;
CREATE INDEX executions_running ON executions(status) WHERE status = 'running';
CREATE INDEX executions_tenant_started ON executions(tenant, started_at);
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
