-- 0008: placeholder on branch tenantwide so 0009 applies (migrations have no gaps); the
-- coordinator drops it on merge in favour of the real 0008 of another branch.
SELECT 1;
