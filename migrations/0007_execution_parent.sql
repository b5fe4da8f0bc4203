-- 0007: the execution that started this one, for a graph called by another graph of the same
-- tenant in-process (an `mcp` node whose server is `type: graph`): the callee's run is its
-- own row with parent_id = the caller's execution id, so the history shows the call tree.
-- NULL for a call that came from an MCP client. Written with the row by the history writer;
-- read by the admin executions API and `graphgate executions`.
ALTER TABLE executions ADD COLUMN parent_id TEXT;
