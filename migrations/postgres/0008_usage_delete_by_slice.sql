-- 0008: deletions of executions are counted out of history_usage by the statement that
-- deletes them (src/store/usage.c, src/store/history_query.c), not by a trigger on every
-- row; see ../0008_usage_delete_by_slice.sql.
DROP TRIGGER history_usage_delete ON executions;
DROP FUNCTION history_usage_delete();
