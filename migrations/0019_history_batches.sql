-- 0019: execution history in batches (issue 31; measured in bench/history/README.md,
-- "Batch layout, measured"). One history_batches row holds one tenant's records of one
-- writer commit, oldest start first, cut where their starts span more than 10 ms or the
-- body passes 1 MiB: a run costs one line of a shared row instead of a row and three
-- index entries, and the quota deletes whole rows (about 20x cheaper a run).
--
-- body: JSON lines, one record a line, each a positional array
--   [id, status, started_ms, finished_ms (0: none), duration_us, version, graph, tool,
--    key_id, error, arguments, result, nodes, trace_id, parent_id]
-- status: 0 running, 1 succeeded, 2 failed, 3 cancelled, 4 interrupted, 5 invalid_input
-- (gg_exec_status); arguments, result and nodes are the stored JSON inlined (text that is
-- not JSON is kept as a JSON string, as 0003 did); absent texts are null.
-- A run written twice (running, then final) has two versions in two rows: readers take any
-- final state over running, an interrupted one only when no other final exists, then the
-- newest row. No index per run: a run's id starts with its start in ms (12 hex digits), so
-- the rows that can hold it have last_ms in [start, start + 10] and first_ms <= start.
-- history_running lists the runs whose newest version is running (the writer adds and
-- removes them), which is what marking interrupted runs at start needs.
-- history_usage's bytes now count body bytes, and the writer adds each row's n and bytes
-- in its own commit: history_usage_mark, catch_up and the executions triggers go.
-- executions stays as a read-only view (the newest version of each run) for operators'
-- queries and the tests that read it with SQL.
-- Nothing stored is lost: every executions row becomes one line; runs still running stay
-- listed in history_running.

CREATE TABLE history_batches (
    rowid    INTEGER PRIMARY KEY,
    tenant   TEXT NOT NULL REFERENCES tenants(name) ON DELETE CASCADE,
    first_ms INTEGER NOT NULL, last_ms INTEGER NOT NULL,
    n        INTEGER NOT NULL, bytes INTEGER NOT NULL,
    body     TEXT NOT NULL              -- JSON lines, one record a line
);
CREATE INDEX history_batches_tenant ON history_batches(tenant, last_ms, first_ms);
CREATE INDEX history_batches_time ON history_batches(last_ms, first_ms);
CREATE TABLE history_running (id TEXT PRIMARY KEY, tenant TEXT NOT NULL, started_at INTEGER NOT NULL,
    replica TEXT)
    WITHOUT ROWID;
-- existing runs: one row per tenant and 10 ms of starts (no C needed: JSONL)
INSERT INTO history_batches(tenant, first_ms, last_ms, n, bytes, body)
SELECT tenant, min(started_at), max(started_at), count(*), sum(length(CAST(line AS BLOB)) + 1),
       group_concat(line, char(10)) || char(10)
FROM (SELECT tenant, started_at,
             json_array(id, CASE status WHEN 'running' THEN 0 WHEN 'succeeded' THEN 1 WHEN 'failed' THEN 2
                             WHEN 'cancelled' THEN 3 WHEN 'interrupted' THEN 4 ELSE 5 END,
                        started_at, coalesce(finished_at, 0), CAST(round(coalesce(duration_ms, 0) * 1000) AS INTEGER),
                        version, graph, tool, key_id, error,
                        CASE WHEN json_valid(arguments) THEN json(arguments) ELSE arguments END,
                        CASE WHEN json_valid(result) THEN json(result) ELSE result END,
                        CASE WHEN json_valid(nodes) THEN json(nodes) ELSE nodes END,
                        trace_id, parent_id) AS line
      FROM executions ORDER BY tenant, started_at, id)
GROUP BY tenant, started_at / 10;
INSERT INTO history_running(id, tenant, started_at) SELECT id, tenant, started_at FROM executions WHERE status = 'running';
UPDATE history_usage SET
    rows  = coalesce((SELECT sum(n) FROM history_batches b WHERE b.tenant = history_usage.tenant), 0),
    bytes = coalesce((SELECT sum(bytes) FROM history_batches b WHERE b.tenant = history_usage.tenant), 0);
DROP TABLE executions;            -- its indexes and history_usage_update go with it
DROP TABLE history_usage_mark;
-- what tests and operators query: the newest version of each run (any final state before
-- running, interrupted after the other final states, then the newest row)
CREATE VIEW executions AS
SELECT id, tenant, graph, version, tool, key_id,
       CASE st WHEN 0 THEN 'running' WHEN 1 THEN 'succeeded' WHEN 2 THEN 'failed' WHEN 3 THEN 'cancelled'
               WHEN 4 THEN 'interrupted' ELSE 'invalid_input' END AS status,
       started_at, nullif(finished_at, 0) AS finished_at,
       CASE WHEN st = 0 THEN NULL ELSE duration_us / 1000.0 END AS duration_ms,
       arguments, result, error, nodes, trace_id, parent_id
FROM (SELECT r.value ->> 0 AS id, b.tenant, r.value ->> 1 AS st, r.value ->> 2 AS started_at,
             r.value ->> 3 AS finished_at, r.value ->> 4 AS duration_us, r.value ->> 5 AS version,
             r.value ->> 6 AS graph, r.value ->> 7 AS tool, r.value ->> 8 AS key_id, r.value ->> 9 AS error,
             nullif(r.value -> 10, 'null') AS arguments, nullif(r.value -> 11, 'null') AS result,
             nullif(r.value -> 12, 'null') AS nodes, r.value ->> 13 AS trace_id, r.value ->> 14 AS parent_id,
             row_number() OVER (PARTITION BY r.value ->> 0
                                ORDER BY (r.value ->> 1) = 0, (r.value ->> 1) = 4, b.rowid DESC) AS newest
      FROM history_batches b,
           json_each('[' || replace(rtrim(b.body, char(10)), char(10), ',') || ']') r)
WHERE newest = 1;
