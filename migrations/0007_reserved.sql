-- 0007: reserved for the tasks branch (2026-07-28 tasks), merged beside this one; this
-- placeholder only keeps the numbering gapless on the compose2 branch. The merge takes the
-- tasks branch's 0007 and deletes this file.
SELECT 1;
