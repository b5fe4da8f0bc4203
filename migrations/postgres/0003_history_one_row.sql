-- 0003 (PostgreSQL): as ../0003_history_one_row.sql — a run's node records move into
-- executions.nodes (one JSON array of positional arrays, see that file for the form), the
-- tenant index becomes (tenant, started_at), executions_started goes.
ALTER TABLE executions ADD COLUMN nodes TEXT;

UPDATE executions SET nodes = sub.nodes FROM (
    SELECT n.execution_id,
           json_agg(CASE
               WHEN n.input IS NULL AND n.error IS NULL THEN
                   json_build_array(n.execution_index, n.node_id, n.node_type,
                                    n.started_at - e.started_at, n.finished_at - e.started_at,
                                    n.duration_ms, n.output)
               ELSE
                   json_build_array(n.execution_index, n.node_id, n.node_type,
                                    n.started_at - e.started_at, n.finished_at - e.started_at,
                                    n.duration_ms, n.output, n.input, n.error)
           END ORDER BY n.execution_index)::text AS nodes
    FROM node_executions n JOIN executions e ON e.id = n.execution_id
    GROUP BY n.execution_id) AS sub
WHERE executions.id = sub.execution_id;

DROP TABLE node_executions;

DROP INDEX executions_tenant_started;
CREATE INDEX executions_tenant_started ON executions(tenant, started_at);
DROP INDEX executions_started;
