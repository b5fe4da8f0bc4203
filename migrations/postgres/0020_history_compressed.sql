-- 0020 (mirrors ../0020_history_compressed.sql): SQLite's history bodies may be zstd frames,
-- read with history_text(body). PostgreSQL keeps bodies as TEXT (its TOAST compresses
-- values above 2 KB by itself, and a TEXT column cannot hold a frame), so history_text is
-- the text itself here: the same SQL reads the history on both backends.
CREATE FUNCTION history_text(body TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT body';
