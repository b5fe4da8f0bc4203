-- 0003: one row per run. Every tools/call is recorded, so the write path of the history
-- is on the critical path of throughput (bench/history, bench/gateway/README.md).
--
-- 1. A run's node records move into executions.nodes, one compact JSON text written with
--    the row, instead of one node_executions row (and b-tree insert) per node. Each node
--    is a positional array:
--        [index, node_id, node_type, start, end, duration_ms, output, input, error]
--    start/end: wall-clock ms relative to the run's started_at; output/input: the stored
--    JSON values (null when absent); input and error are left out when both are null,
--    error alone is [.., output, null, error]. Oldest node first. src/store/history.c
--    writes this form; src/store/history_query.c turns it back into the admin API's
--    objects (it also reads executor-shaped objects, see gg_exec_record_set_nodes_json).
-- 2. executions_tenant_started becomes (tenant, started_at) ascending: a DESC index puts
--    every new run at the left edge of its tenant's range, where each insert rebalances a
--    leaf; ascending it is an append at the right edge, and SQLite walks it backwards for
--    the newest-first listing. Without the 33-byte id in every entry it is a third of the
--    size; the listing's tie-break on id sorts only runs of the same millisecond.
-- 3. executions_started goes: retention by age walks each tenant's range of the tenant
--    index, retention by count the primary key (ids are time-ordered), and no listing is
--    across tenants.
-- Nothing stored is lost: every node row, including its exact input/output text, is in
-- the array (text that is not JSON is kept as a JSON string, which is how the API showed
-- it before), and runs without node rows get NULL.

ALTER TABLE executions ADD COLUMN nodes TEXT;

UPDATE executions SET nodes = (
    SELECT json_group_array(json(node)) FROM (
        SELECT CASE
                   WHEN n.input IS NULL AND n.error IS NULL THEN
                       json_array(n.execution_index, n.node_id, n.node_type,
                                  n.started_at - executions.started_at,
                                  n.finished_at - executions.started_at, n.duration_ms,
                                  CASE WHEN json_valid(n.output) THEN json(n.output) ELSE n.output END)
                   ELSE
                       json_array(n.execution_index, n.node_id, n.node_type,
                                  n.started_at - executions.started_at,
                                  n.finished_at - executions.started_at, n.duration_ms,
                                  CASE WHEN json_valid(n.output) THEN json(n.output) ELSE n.output END,
                                  CASE WHEN json_valid(n.input) THEN json(n.input) ELSE n.input END,
                                  n.error)
               END AS node
        FROM node_executions AS n
        WHERE n.execution_id = executions.id
        ORDER BY n.execution_index))
WHERE id IN (SELECT execution_id FROM node_executions);

DROP TABLE node_executions;

DROP INDEX executions_tenant_started;
CREATE INDEX executions_tenant_started ON executions(tenant, started_at);
DROP INDEX executions_started;
