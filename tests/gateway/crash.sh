#!/usr/bin/env bash
# crash.sh — "answered means recorded" (history.durability: durable, the default): steady
# tools/call load from a client that logs every call whose success it received, then
# `kill -9` of the server, then a restart on the same database. Every acknowledged call
# must have its execution record, succeeded and with its node history; runs that were in
# flight (the slow tool, announced as running) must be `interrupted`, none left `running`.
# CRASH_ROUNDS rounds (default 4), each with a random load time; odd rounds answer through
# the history's redo log (history.journal, the default on SQLite), even rounds wait for the
# commit (journal: false) — each restart replays what the log holds whatever its own mode.
# CRASH_DURABILITY=async runs the same against the async mode (which is expected to lose
# acknowledged records).
# Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
. "$GG_SRCDIR/tests/gateway/lib_durable.sh"
ROUNDS=${CRASH_ROUNDS:-4}
durable_setup crash
key=$DKEY

# check_db ACKS → every acknowledged n has a succeeded record with 3 node records; prints
# "acked=A missing=M bad=B running=R interrupted=I" (cumulative interrupted).
check_db() {
  python3 - "$GG_DB" "$1" <<'PY'
import ggdb, json, sys
db = ggdb.connect(sys.argv[1])
rows = {}
for args, status, nodes in db.execute("SELECT arguments, status, nodes FROM executions WHERE tool = 'echo'"):
    rows[json.loads(args)["n"]] = (status, nodes)
acked = [int(l.split()[1]) for l in open(sys.argv[2]) if l.startswith("ok ")]
missing = [n for n in acked if n not in rows]
bad = [n for n in acked if n in rows and (rows[n][0] != "succeeded" or
       [x[1] for x in json.loads(rows[n][1] or "[]")] != ["entry", "copy", "exit"])]
running = db.execute("SELECT count(*) FROM executions WHERE status = 'running'").fetchone()[0]
interrupted = db.execute("SELECT count(*) FROM executions WHERE status = 'interrupted'").fetchone()[0]
print("acked=%d missing=%d bad=%d running=%d interrupted=%d" % (len(acked), len(missing), len(bad), running, interrupted))
if missing or bad:
    print("   first missing: %s, first bad: %s" % (missing[:5], [(n, rows[n]) for n in bad[:3]]), file=sys.stderr)
PY
}
field() { sed -n "s/.*$1=\([0-9]*\).*/\1/p" <<<"$2"; }

[ -n "${CRASH_DURABILITY:-}" ] && export GRAPHGATE_HISTORY_DURABILITY=$CRASH_DURABILITY
journal_metric() { curl -s "$GG_INT/metrics" | sed -n 's/^graphgate_history_journal \([01]\)$/\1/p'; }
gg_start || { echo "0 passed, 1 failed"; exit 1; }
for round in $(seq 1 "$ROUNDS"); do
  if [ -z "${CRASH_DURABILITY:-}" ]; then
    want=$((round % 2))
    t "round $round: answers $([ $want = 1 ] && echo "through the redo log" || echo "after the commit")" \
      [ "$(journal_metric)" = $want ]
  fi
  acks="$GG_TMP/acks-$round"
  : >"$acks"
  python3 "$GG_SRCDIR/tests/gateway/ack_client.py" "$GG_PUB" acme crash "$key" "$acks" $((round * 100000000)) \
    --threads 6 --slow 2 >"$GG_TMP/client-$round.out" 2>&1 &
  cpid=$!
  # load for 0.6-1.4 s once the first acknowledgement arrived (bounded wait)
  for _ in $(seq 1 200); do grep -q '^ok ' "$acks" && break; sleep 0.05; done
  sleep "$(python3 -c 'import random; print(round(random.uniform(0.6, 1.4), 2))')"
  kill -9 "$GG_PID"
  wait "$GG_PID" 2>/dev/null
  for _ in $(seq 1 200); do kill -0 "$cpid" 2>/dev/null || break; sleep 0.05; done
  kill "$cpid" 2>/dev/null; wait "$cpid" 2>/dev/null
  GG_PID=""
  if [ $(((round + 1) % 2)) = 1 ]; then unset GRAPHGATE_HISTORY_JOURNAL; else export GRAPHGATE_HISTORY_JOURNAL=false; fi
  gg_start || { echo "restart failed"; break; }
  res=$(check_db "$acks")
  echo "   round $round: $res; $(cat "$GG_TMP/client-$round.out")"
  t "round $round: the client received successes" [ "$(field acked "$res")" -gt 0 ]
  t "round $round: every acknowledged call has its record" [ "$(field missing "$res")" = 0 ]
  t "round $round: ... succeeded, with its node history" [ "$(field bad "$res")" = 0 ]
  t "round $round: no run left running after the restart" [ "$(field running "$res")" = 0 ]
done
t "runs in flight at the kills are interrupted" [ "$(field interrupted "$res")" -gt 0 ]
t "server stops cleanly (exit 0, no sanitizer report)" gw_stop_clean
gg_finish
