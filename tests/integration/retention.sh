#!/usr/bin/env bash
# retention.sh — history.max_age and history.max_count configured on `serve` really prune
# (the writer's retention pass runs once at start, then every minute; waited for, bounded).
# Eight recorded runs; the two newest are aged past max_age in the database (history_batches);
# with max_count 4 the pass must leave exactly runs 3-6: age removes 7 and 8, then the
# count keeps the 4 newest ids of what is left. Either rule missing leaves another set.
# Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
# sql "STATEMENT": one statement on the test database (python3's sqlite3; prints a scalar)
sql() { python3 -c 'import ggdb,sys; c=ggdb.connect(sys.argv[1], ro=False); r=c.execute(sys.argv[2]).fetchone(); c.commit(); print(r[0] if r else "")' "$GG_DB" "$1"; }

gw_cli_run tenant create acme >/dev/null
gw_cli_run graph put acme triage "$GG_SRCDIR/examples/triage.yaml" >/dev/null
gg_start || { echo "0 passed, 1 failed"; exit 1; }
t "setup: tenant and graph (exit 0, no sanitizer report)" gw_cli_clean
for i in 1 2 3 4 5 6 7 8; do
  curl -s -o /dev/null -X POST --data-binary '{"severity":"low","tier":"free"}' \
    "$GG_INT/internal/tenants/acme/graphs/triage/tools/triage/call"
done
# ids oldest first, once the writer has flushed all eight (bounded)
ids() { gw_cli executions list acme --limit 100 --json 2>/dev/null | python3 -c 'import json,sys; print(" ".join(e["id"] for e in reversed(json.load(sys.stdin)["executions"])))'; }
for _ in $(seq 1 100); do set -- $(ids); [ $# -eq 8 ] && break; sleep 0.1; done
t "eight runs recorded" eq "$#" 8
ALL=("$@")
t "server stops cleanly" gw_stop_clean
# age ID...: those runs' records 10 days back, each moved to a row of its own (a row holds
# one tenant's runs of at most 10 ms of starts: migrations/0019_history_batches.sql)
age() { python3 - "$GG_DB" "$@" <<'PY'
import ggdb, json, sys
# the rows it rewrites go back as text: the readers take both forms (migrations/0020)
db, ids, moved = ggdb.connect(sys.argv[1], ro=False), set(sys.argv[2:]), []
for rowid, tenant, body in db.execute("SELECT rowid, tenant, history_text(body) FROM history_batches").fetchall():
    lines = body.splitlines()
    keep = [l for l in lines if json.loads(l)[0] not in ids]
    moved += [(tenant, json.loads(l)) for l in lines if json.loads(l)[0] in ids]
    if len(keep) == len(lines):
        continue
    starts, b = [json.loads(l)[2] for l in keep], "".join(l + "\n" for l in keep)
    if keep:
        db.execute("UPDATE history_batches SET body = ?, n = ?, bytes = ?, first_ms = ?, last_ms = ? WHERE rowid = ?",
                   (b, len(keep), len(b.encode()), min(starts), max(starts), rowid))
    else:
        db.execute("DELETE FROM history_batches WHERE rowid = ?", (rowid,))
for tenant, r in moved:
    r[2] -= 864000000
    r[3] = r[3] and r[3] - 864000000
    b = json.dumps(r, separators=(",", ":"), ensure_ascii=False) + "\n"
    db.execute("INSERT INTO history_batches(tenant, first_ms, last_ms, n, bytes, body) VALUES (?, ?, ?, 1, ?, ?)",
               (tenant, r[2], r[2], len(b.encode()), b))
db.commit()
PY
}
age "${ALL[6]}" "${ALL[7]}"
t "runs 7 and 8 aged by 10 days" eq "$(sql "SELECT count(*) FROM executions WHERE started_at < (strftime('%s','now') - 86400) * 1000")" 2

GRAPHGATE_HISTORY_MAX_AGE=1d GRAPHGATE_HISTORY_MAX_COUNT=4 gg_restart "restart with max_age 1d, max_count 4"
left() { local n; n=$(sql "SELECT count(*) FROM executions"); [ "$n" -le 4 ]; }
t0=$(date +%s)
for _ in $(seq 1 900); do left && break; sleep 0.1; done # at start; a minute later at worst
echo "# retention pass seen after $(( $(date +%s) - t0 )) s"
t "the retention pass ran (logged)" grep -q '"history retention"' "$GG_TMP/serve.err"
t "exactly runs 3-6 are left (age removed 7-8, the count removed 1-2)" eq "$(ids)" "${ALL[2]} ${ALL[3]} ${ALL[4]} ${ALL[5]}"
t "server stops cleanly after pruning" gw_stop_clean
gg_finish
