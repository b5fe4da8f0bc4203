-- 0009: tasks of the MCP 2026-07-28 tasks extension (io.modelcontextprotocol/tasks). A
-- tools/call of a task-supporting tool from a client that declared the extension is answered
-- at once with the task; its state, inputs and result live here so any replica answers
-- tasks/get, tasks/update and tasks/cancel. Every query filters on tenant.
--   status: working | input_required | completed | failed | cancelled
--   result: the CallToolResult (completed); error: {code, message} (failed)
--   input_requests / request_state: what an input_required task waits for and the sealed
--   run state tasks/update resumes; input_responses: answers given so far
--   owner: the replica running it (history.replica_id, else the host name): a process that
--   starts marks its own working tasks failed (interrupted), as the history does its runs
CREATE TABLE tasks (
    id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    graph TEXT NOT NULL,
    version INTEGER NOT NULL,
    tool TEXT NOT NULL,
    key_id TEXT NOT NULL,
    client_caps INTEGER NOT NULL,
    status TEXT NOT NULL,
    arguments TEXT,
    result TEXT,
    error TEXT,
    input_requests TEXT,
    input_responses TEXT,
    request_state TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    ttl_ms BIGINT NOT NULL,
    owner TEXT
);
CREATE INDEX tasks_tenant_status ON tasks (tenant, status);
