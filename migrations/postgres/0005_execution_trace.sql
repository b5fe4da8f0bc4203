-- 0005: the W3C trace id of a run (32 lowercase hex digits), so an operator can go from an
-- execution to its trace in the tracing backend and back. NULL when the call carried no
-- trace context and telemetry was off. Written with the row by the history writer; read by
-- the admin executions API, `graphgate executions` and the console.
ALTER TABLE executions ADD COLUMN trace_id TEXT;
