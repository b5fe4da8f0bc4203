-- 0002: a cheaper write path for execution history (one executions row and one row per
-- node on every tools/call).
--
-- The execution listings walk executions_tenant_started and test graph/tool/status as
-- filters ("?2 IS NULL OR graph = ?2" cannot select another index), so these two indexes
-- were never read and only cost two b-tree inserts per run.
DROP INDEX executions_tenant_graph;
DROP INDEX executions_tenant_tool;

-- Node records clustered on their key (WITHOUT ROWID): one b-tree insert per node row
-- instead of a table row plus its primary-key index entry; a run's nodes sit together,
-- in execution order, which is exactly how GET /admin/executions/{id} reads them.
CREATE TABLE node_executions_new (
    execution_id    TEXT NOT NULL REFERENCES executions(id) ON DELETE CASCADE,
    execution_index INTEGER NOT NULL,
    node_id         TEXT NOT NULL,
    node_type       TEXT NOT NULL,
    started_at      INTEGER NOT NULL,
    finished_at     INTEGER NOT NULL,
    duration_ms     REAL NOT NULL,
    input           TEXT,
    output          TEXT,
    error           TEXT,
    PRIMARY KEY (execution_id, execution_index)
) WITHOUT ROWID;
INSERT INTO node_executions_new
    SELECT execution_id, execution_index, node_id, node_type, started_at, finished_at,
           duration_ms, input, output, error
    FROM node_executions;
DROP TABLE node_executions;
ALTER TABLE node_executions_new RENAME TO node_executions;
