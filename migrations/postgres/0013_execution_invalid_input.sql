-- 0013: a tools/call refused by input validation (its arguments fail the tool's
-- inputSchema) is recorded too, with its own status 'invalid_input' (see ../0013, which
-- rebuilds the SQLite table; here the CHECK constraint is replaced in place).
ALTER TABLE executions DROP CONSTRAINT executions_status_check;
ALTER TABLE executions ADD CONSTRAINT executions_status_check
    CHECK (status IN ('running', 'succeeded', 'failed', 'cancelled', 'interrupted', 'invalid_input'));
