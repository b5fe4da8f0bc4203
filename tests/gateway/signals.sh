#!/usr/bin/env bash
# signals.sh — SIGHUP re-reads the configuration file (log.level, rate limits and the
# tenant cap applied at once, other changes logged as needing a restart, a file that no longer loads changes
# nothing) and
# never stops the server; SIGTERM refuses queued-but-not-started tool calls at once with
# 503 + Retry-After while the running call finishes. Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
. "$GG_SRCDIR/tests/gateway/lib_durable.sh"
alive() { kill -0 "$GG_PID" 2>/dev/null && curl -fsS --max-time 5 "$GG_PUB/health" >/dev/null; }
logged() { grep -q -- "$1" "$GG_TMP/serve.err"; }

durable_setup slow
conf="$GG_TMP/gg.yaml"
printf 'workers: 1\nqueue_size: 64\nlog:\n  level: info\n' >"$conf"
gg_start --config "$conf" || { echo "0 passed, 1 failed"; exit 1; }

# ---- SIGHUP
printf 'workers: 3\nqueue_size: 64\nlog:\n  level: debug\n' >"$conf"
kill -HUP "$GG_PID"
t "SIGHUP: the configuration is re-read" wait_for 10 logged '"SIGHUP: configuration re-read"'
t "  the server keeps serving" alive
t "  log.level applied, old and new value logged" logged '"configuration reloaded: applied","key":"log.level","old":"info","new":"debug"'
t "  workers logged as needing a restart" logged 'needs a restart.*"key":"workers","old":"1","new":"3"'
printf 'workers: 1\nworkers: 2\n' >"$conf"
kill -HUP "$GG_PID"
t "SIGHUP with a duplicate key: refused, nothing changed" wait_for 10 logged '"SIGHUP: the configuration does not load'
t "  the error names both positions" logged "duplicate key 'workers' (first at line 1, column 1)"
t "  the server keeps serving" alive
reloads() { [ "$(grep -c '"SIGHUP: configuration re-read"' "$GG_TMP/serve.err")" -ge "$1" ]; }
INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
printf 'workers: 1\nqueue_size: 64\nrate_limit:\n  rate: 0.01\n  burst: 1\n' >"$conf"
kill -HUP "$GG_PID"
t "SIGHUP: a rate limit is applied at once" wait_for 10 reloads 2
c1=$(gw_rpc "$GG_TMP/rl1.json" "$GG_PUB/mcp/acme/slow" "$DKEY" "" "$INIT")
c2=$(gw_rpc "$GG_TMP/rl2.json" "$GG_PUB/mcp/acme/slow" "$DKEY" "" "$INIT")
t "  first request 200, the next 429" [ "$c1 $c2" = "200 429" ]
printf 'workers: 1\nqueue_size: 64\ntenants:\n  max_concurrent_executions: 1\n' >"$conf"
kill -HUP "$GG_PID"
t "SIGHUP: back to unlimited requests, a tenant cap of 1" wait_for 10 reloads 3
t "  requests pass again" [ "$(gw_rpc "$GG_TMP/rl3.json" "$GG_PUB/mcp/acme/slow" "$DKEY" "" "$INIT")" = 200 ]
SLOWURL="$GG_INT/internal/tenants/acme/graphs/slow/tools/slow/call"
curl -s --max-time 30 -o /dev/null -X POST --data-binary '{}' "$SLOWURL" & capid=$!
running() { [ "$(curl -s "$GG_INT/metrics" | awk '$1 == "graphgate_tool_calls_running" {print $2}')" = 1 ]; }
wait_for 20 running
t "  a second call of the tenant meanwhile → 429" [ "$(gg_curl "$GG_TMP/cap.json" -X POST --data-binary '{}' "$SLOWURL")" = 429 ]
wait "$capid"
printf 'workers: 1\nqueue_size: 64\nlog:\n  level: info\n' >"$conf"
kill -HUP "$GG_PID"
t "SIGHUP: the cap back to its default" wait_for 10 reloads 4

# ---- SIGTERM: one call runs on the only worker, five wait in the queue
call() { # N → "$GG_TMP/c-N": status and the time the answer came (the slow tool)
  local code
  code=$(curl -s --max-time 30 -o "$GG_TMP/c-$1.json" -D "$GG_TMP/c-$1.h" -w '%{http_code}' -X POST \
    --data-binary '{}' "$GG_INT/internal/tenants/acme/graphs/slow/tools/slow/call")
  echo "$code $(date +%s.%N)" >"$GG_TMP/c-$1"
}
call 0 & p0=$!
wait_for 20 running
pids=""
for n in 1 2 3 4 5; do call "$n" & pids="$pids $!"; done
queued() { [ "$(curl -s "$GG_INT/metrics" | awk '$1 == "graphgate_queue_depth" {print $2}')" = 5 ]; }
t "five calls wait in the queue behind the running one" wait_for 20 queued
kill -TERM "$GG_PID"
for p in $pids; do wait "$p"; done
wait "$p0"
first_running=$(cut -d' ' -f2 "$GG_TMP/c-0")
ok=0
for n in 1 2 3 4 5; do
  read -r code at <"$GG_TMP/c-$n"
  if [ "$code" = 503 ] && grep -qi '^retry-after:' "$GG_TMP/c-$n.h" && grep -q 'shutting down' "$GG_TMP/c-$n.json" &&
     python3 -c "import sys; sys.exit(0 if float('$at') < float('$first_running') else 1)"; then ok=$((ok + 1))
  else echo "   call $n: $code at $at (running call answered at $first_running): $(cat "$GG_TMP/c-$n.json")"; fi
done
t "SIGTERM: every queued call refused at once (503 + Retry-After, before the running call ends)" [ "$ok" = 5 ]
t "  the running call was not refused" [ "$(cut -d' ' -f1 "$GG_TMP/c-0")" != 503 ]
wait "$GG_PID" 2>/dev/null; GG_EXIT=$?; GG_PID=""
t "  the server exits 0" [ "$GG_EXIT" = 0 ]
t "  it logged the refusals" logged '"draining: queued tool calls refused","count":"5"'
t "  no sanitizer report" bash -c "! grep -qE 'Sanitizer|runtime error' '$GG_TMP/serve.err'"
gg_finish
