-- 0002 (PostgreSQL): as ../0002_history_write_path.sql, the two history indexes no listing
-- reads go. (PostgreSQL has no WITHOUT ROWID tables; node_executions stays as it is until
-- 0003 folds it into executions.nodes.)
DROP INDEX executions_tenant_graph;
DROP INDEX executions_tenant_tool;
