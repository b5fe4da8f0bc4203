#!/usr/bin/env bash
# postgres.sh — `graphgate serve --database-url` end to end on a throwaway PostgreSQL cluster
# (pg_virtualenv): tenant and key through the CLI, a graph uploaded through the admin API, a
# tool called over MCP, its execution listed; then PostgreSQL stopped while calls run — they
# fail with the reason instead of hanging or answering unrecorded — and started again: calls
# succeed and are recorded without restarting graphgate, and change notifications reconnect.
# Prints "N passed, N failed".
if [ -z "${GG_PG_INNER:-}" ]; then
  . "${GG_SRCDIR:-$(dirname "$0")/../..}/tests/lib_pg.sh"
  if ! gg_pg_installed; then
    echo "SKIP: PostgreSQL server or pg_virtualenv not installed (tests/deps.sh installs postgresql-15, postgresql-common)"
    exit 77
  fi
  log=$(mktemp "${TMPDIR:-/tmp}/gg-pg-e2e.XXXXXX")
  GG_PG_INNER=1 gg_pg_venv -o shared_buffers=32MB bash "$0" "$@" 2>"$log"
  rc=$?
  [ $rc -eq 0 ] || { echo "--- pg_virtualenv / cluster log (tail)"; tail -15 "$log"; }
  rm -f "$log"
  exit $rc
fi
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
exec 2>&1 # the outer script keeps the cluster's own log apart
createdb gge2e || { echo "createdb failed"; echo "0 passed, 1 failed"; exit 1; }
URL="postgresql:///gge2e"
gw_cli() { "$GG_BIN" "$@" --database-url "$URL"; }

cat >"$GG_TMP/calc.yaml" <<'YAML'
version: "1.0"
server: {name: calc, version: "1.0.0"}
tools:
  - {name: double, description: twice n, inputSchema: {type: object, properties: {n: {type: number}}},
     nodes: [{id: entry, type: entry, next: v}, {id: v, type: transform, transform: {expr: 'entry.n * 2'}, next: exit}, {id: exit, type: exit}]}
YAML

t "graphgate migrate applies migrations/postgres" \
  sh -c "'$GG_BIN' migrate --database-url '$URL' | grep -q 'migration(s) applied, schema at [0-9][0-9][0-9][0-9]'"
t "migrate --check: current" sh -c "'$GG_BIN' migrate --check --database-url '$URL' | grep -q 'schema is current'"
gw_cli_run tenant create acme >/dev/null
ADMIN=$(gw_key acme admin)
KEY=$(gw_key acme tools:read,tools:execute)
t "tenant and keys created through the CLI" test -n "$ADMIN" -a -n "$KEY"
gg_start --database-url "$URL" || { echo "0 passed, 1 failed"; exit 1; }
t "serve logs the database without its password" grep -q 'postgresql:///gge2e' "$GG_TMP/serve.out" "$GG_TMP/serve.err"
t "upload through the admin API" eq "$(gw_put_graph "$ADMIN" acme calc "$GG_TMP/calc.yaml")" 201
MCP="$GG_PUB/mcp/acme/calc"
sid=$(gw_init "$MCP" "$KEY")
t "MCP session opened" test -n "$sid"
call() { # N → status; body in $GG_TMP/c.json
  gw_rpc "$GG_TMP/c.json" "$MCP" "$KEY" "$sid" \
    "{\"jsonrpc\":\"2.0\",\"id\":$1,\"method\":\"tools/call\",\"params\":{\"name\":\"double\",\"arguments\":{\"n\":$1}}}"
}
result() { jget "$GG_TMP/c.json" 'd["result"]["content"][0]["text"]'; }
call 21 >/dev/null
t "tools/call over MCP answers" eq "$(result)" 42
listed() { # → how many executions the admin API lists for acme
  gg_curl "$GG_TMP/l.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/executions?limit=100" >/dev/null
  jget "$GG_TMP/l.json" 'len(d["executions"])'
}
t "the execution is listed" eq "$(listed)" 1
t "graph versions listed" sh -c "'$GG_BIN' graph list acme --database-url '$URL' | grep -q calc"

# PostgreSQL stops while calls run.
for i in $(seq 100 129); do call "$i" >/dev/null; done &
load=$!
pg_ctlcluster "$PGVERSION" regress stop -m fast
wait $load
down_status=$(call 7)
down_body=$(cat "$GG_TMP/c.json")
echo "   while down: HTTP $down_status $down_body" | cut -c1-300
t "while PostgreSQL is down a call fails with the reason" \
  sh -c "[ '$down_status' != 200 ] || grep -q '\"error\"' '$GG_TMP/c.json'"
t "the failure names the database" grep -qiE 'postgres|database|history' "$GG_TMP/c.json"
t "serve is still running" kill -0 "$GG_PID"
pg_ctlcluster "$PGVERSION" regress start
recovered=""
for i in $(seq 1 100); do # backoff tops out at 5 s; allow 20 s on a loaded machine
  st=$(call 50)
  if [ "$st" = 200 ] && [ "$(result)" = 100 ]; then recovered=$i; break; fi
  sleep 0.2
done
t "after PostgreSQL is back, calls succeed again (attempt ${recovered:-never})" test -n "$recovered"
n1=$(listed)
call 60 >/dev/null
n2=$(listed)
t "a call after recovery is recorded ($n1 then $n2 listed)" test "${n2:-0}" -eq "$((${n1:-0} + 1))"
# The change-notification connection came back too: a version stored by another process
# (the CLI) is heard at once, not at the next once-a-second check.
notify_up() { curl -fsS --max-time 5 "$GG_INT/metrics" | grep -qx 'graphgate_change_notify_up 1'; }
for _ in $(seq 1 100); do notify_up && break; sleep 0.2; done # its backoff tops out at 5 s
t "change notifications reconnected after the restart" notify_up
notified() { curl -fsS --max-time 5 "$GG_INT/metrics" | sed -n 's/^graphgate_change_notifications_total //p'; }
put_seen() { # FACTOR → ms until serve hears of a version (multiplying by FACTOR) the CLI put
  sed "s/entry.n \\* 2/entry.n * $1/" "$GG_TMP/calc.yaml" >"$GG_TMP/calc$1.yaml"
  local n0 t0 i; n0=$(notified)
  gw_cli graph put acme calc "$GG_TMP/calc$1.yaml" >/dev/null
  t0=$(date +%s%N)
  for i in $(seq 1 200); do
    [ "$(notified)" -gt "$n0" ] && { echo $((($(date +%s%N) - t0) / 1000000)); return; }
    sleep 0.01
  done
}
seen=""
for f in 3 4 5; do ms=$(put_seen $f); seen="$seen ${ms:-never}"; done
echo "   versions put by the CLI notified to serve after:$seen ms"
t "... versions put by the CLI are notified within 600 ms (below the 1 s check)" \
  python3 -c "import sys; v=sys.argv[1:]; sys.exit(not all(x.isdigit() and int(x) < 600 for x in v))" $seen
call 5 >/dev/null
t "... and the last one is served" eq "$(result)" 25
# From the CLI's start to the first call's answer: a CLI command opens one connection (more
# only when it needs two at once) and skips a DEALLOCATE per cached statement on exit.
cli_then_call() { # FACTOR → "CLI ms/CLI+call ms" when the call served the new version
  sed "s/entry.n \* 2/entry.n * $1/" "$GG_TMP/calc.yaml" >"$GG_TMP/calc$1.yaml"
  local t0 t1 t2; t0=$(date +%s%N)
  gw_cli graph put acme calc "$GG_TMP/calc$1.yaml" >/dev/null
  t1=$(date +%s%N)
  call 5 >/dev/null
  t2=$(date +%s%N)
  [ "$(result)" = $((5 * $1)) ] && echo "$(((t1 - t0) / 1000000))/$(((t2 - t0) / 1000000))"
}
took=""
for f in 6 7 8; do took="$took $(cli_then_call $f || echo stale)"; done
echo "   CLI graph put / CLI put + first call (ms):$took"
t "... the first call after each CLI put serves the new version" test "${took#*stale}" = "$took"
t "server stops cleanly" gw_stop_clean
gg_finish
