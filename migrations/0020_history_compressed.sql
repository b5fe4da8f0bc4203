-- 0020: history_batches bodies may be zstd frames (issue 31; bench/history/README.md,
-- session 20). The history writer stores a body of 8 KB or more (a busy commit's) as a BLOB
-- holding one zstd frame when that is smaller (a row's records are alike: 5-13x smaller),
-- else as the TEXT it was; rows written before stay TEXT. Readers tell the two forms apart by typeof(body).
-- bytes and history_usage still count the text's bytes, so quotas mean what they meant.
--
-- SQL reads a body with history_text(body), a function graphgate registers on each of its
-- connections (src/store/history_body.c): the text of either form. Another SQLite client
-- reads the history through `graphgate executions`, or registers history_text itself (10
-- lines over libzstd's ZSTD_decompress; tests/lib/ggdb.py does it from Python).
DROP VIEW executions;
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
           json_each('[' || replace(rtrim(history_text(b.body), char(10)), char(10), ',') || ']') r)
WHERE newest = 1;
