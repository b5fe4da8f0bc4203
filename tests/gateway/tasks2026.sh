#!/usr/bin/env bash
# tasks2026.sh — the MCP 2026-07-28 tasks extension (io.modelcontextprotocol/tasks) across
# two `graphgate serve` processes sharing the session secret and the SQLite database: a task
# created on one is read, answered (tasks/update) and cancelled on the other; a replica that
# shuts down reports its running task failed; bad input (unknown id, another tenant's id,
# oversize id and answers), the -32021 gate and scopes; the official SDK v2 client with
# @modelcontextprotocol/ext-tasks drives a task (sdk_tasks.mjs) and hears its status
# notifications on a subscriptions/listen stream (sdk_task_listen.mjs); streams on either
# replica hear changes the other made (cancel, a resumed run completing, a shutdown's
# interrupted failure); a lagging stream's notifications are coalesced, not queued. (The
# conformance suite's tasks-* scenarios run in mcp2026.sh.)
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
gw_conf_setup
# The tasks that are cancelled, interrupted by a shutdown or lost in a crash compute for up to
# 60 s and end long before: a copy of the fixture gives them the time (its own limits are 10 s, 240 spins and 500 nodes),
# so each check has the task still working however slow the machine is (each check costs a
# python start, close to a second where python3 is a pyenv shim)
sed -e 's/^  maxExecutionTimeMs: 10000$/  maxExecutionTimeMs: 90000/' -e 's/^  maxNodeExecutions: 500 /  maxNodeExecutions: 13000 /' \
    -e 's/{ "var": "start.ms" }\] }, { "<": \[{ "var": "spin.i" }, 240\]/{ "var": "start.ms" }] }, { "<": [{ "var": "spin.i" }, 6000]/' \
    "$FIXTURE" >"$GG_TMP/everything.yaml"
grep -q '^  maxExecutionTimeMs: 90000$' "$GG_TMP/everything.yaml" && grep -q '^  maxNodeExecutions: 13000 ' "$GG_TMP/everything.yaml" &&
  grep -q '"spin.i" }, 6000\]' "$GG_TMP/everything.yaml" ||
  { echo "slow_compute's limits moved in the fixture"; echo "0 passed, 1 failed"; exit 1; }
FIXTURE="$GG_TMP/everything.yaml"
export GRAPHGATE_SESSION_SECRET=tasks2026-test-secret-shared-by-replicas-0123456789
gg_start || { echo "0 passed, 1 failed"; exit 1; }
t "fixture graph uploaded" test "$(gw_put_graph "$ADMIN" conf everything "$FIXTURE")" = 201
gw_cli tenant create other >/dev/null 2>&1
ADMIN2=$(gw_key other admin)
KEY2=$(gw_key other tools:read,tools:execute)
KEYR=$(gw_key conf tools:read)
t "another tenant's copy of the graph uploaded" test "$(gw_put_graph "$ADMIN2" other everything "$FIXTURE")" = 201
A="$GG_PUB/mcp/conf/everything"

# replica B: the same database and secret, its own ports
gw_serve "$GG_TMP/b"
BPID=$GW_SRV_PID BPUB=$GW_SRV_PUB
B="$BPUB/mcp/conf/everything"
t "replica B started" test -n "$BPUB"

# ---- the official SDK v2 client with the tasks extension's requester: a task that
# completes and one it cancels (public listener, API key)
"$NODE" "$GG_SRCDIR/tests/gateway/sdk_tasks.mjs" "$A" "$KEY" > "$GG_TMP/sdk_tasks.out" 2>&1
gw_fold "$GG_TMP/sdk_tasks.out" $?
# … and its task status notifications on a subscriptions/listen stream; another tenant hears none
"$NODE" "$GG_SRCDIR/tests/gateway/sdk_task_listen.mjs" "$A" "$KEY" "$GG_PUB/mcp/other/everything" "$KEY2" > "$GG_TMP/sdk_task_listen.out" 2>&1
gw_fold "$GG_TMP/sdk_task_listen.out" $?

CAPS='{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}'
# call OUT URL KEY METHOD NAME PARAMS_JSON [CAPS] → status (a 2026 request; NAME → Mcp-Name)
call() {
  local out=$1 url=$2 key=$3 method=$4 name=$5 params=$6 caps=${7:-$CAPS}
  local body; body=$(python3 -c "
import json,sys; p=json.loads(sys.argv[2]); p['_meta']={'io.modelcontextprotocol/protocolVersion':'2026-07-28','io.modelcontextprotocol/clientCapabilities':json.loads(sys.argv[3])}
print(json.dumps({'jsonrpc':'2.0','id':5,'method':sys.argv[1],'params':p}))" "$method" "$params" "$caps")
  local args=(-X POST -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream'
              -H 'MCP-Protocol-Version: 2026-07-28' -H "Mcp-Method: $method")
  [ -n "$name" ] && args+=(-H "Mcp-Name: $name")
  [ -n "$key" ] && args+=(-H "Authorization: Bearer $key")
  gg_curl "$out" "${args[@]}" --data-binary "$body" "$url"
}
R="$GG_TMP/r.json"
# status_of URL KEY TASK → the task's status as tasks/get reports it
status_of() { call "$R" "$1" "$2" tasks/get "$3" "{\"taskId\":\"$3\"}" >/dev/null; jget "$R" "d['result']['status']"; }
# wait_status URL KEY TASK WANT → true once tasks/get reports WANT (bounded: 20 s)
wait_status() {
  local i; for i in $(seq 1 200); do [ "$(status_of "$1" "$2" "$3")" = "$4" ] && return 0; sleep 0.1; done
  echo "   task $3 is $(status_of "$1" "$2" "$3"), not $4: $(head -c 300 "$R")" >&2; return 1
}
# listen OUT URL KEY TASK → a background subscriptions/listen stream naming TASK (its pid in
# LPIDS); heard OUT STATUS → true once the stream carried notifications/tasks with STATUS
# (bounded: 20 s, generous for ASan; a change made by another replica arrives within its 1 s check)
LPIDS=""
listen() {
  local body; body=$(python3 -c "
import json,sys; print(json.dumps({'jsonrpc':'2.0','id':'sub','method':'subscriptions/listen','params':{'notifications':{'taskIds':[sys.argv[1]]},
 '_meta':{'io.modelcontextprotocol/protocolVersion':'2026-07-28','io.modelcontextprotocol/clientCapabilities':json.loads(sys.argv[2])}}}))" "$4" "$CAPS")
  curl -sS -N --max-time 60 -X POST -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: subscriptions/listen' -H "Authorization: Bearer $3" \
    --data-binary "$body" "$2" >"$1" 2>/dev/null &
  LPIDS="$LPIDS $!"
  local i; for i in $(seq 1 100); do grep -q acknowledged "$1" 2>/dev/null && return 0; sleep 0.05; done; return 1
}
heard() {
  local i; for i in $(seq 1 200); do
    python3 - "$1" "$2" <<'PY' && return 0
import json, sys
ev = [json.loads(l[5:]) for l in open(sys.argv[1]) if l.startswith('data:')]
sys.exit(0 if any(e.get('method') == 'notifications/tasks' and e['params']['status'] == sys.argv[2] for e in ev) else 1)
PY
    sleep 0.1; done
  echo "   $1 carried: $(grep -o '"status":"[a-z_]*"' "$1" | tr '\n' ' ')" >&2; return 1
}
# B sees the graph once its registry synced with the store
for i in $(seq 1 100); do [ "$(call "$R" "$B" "$KEY" tools/list "" '{}')" = 200 ] && break; sleep 0.1; done

# ---- a listen stream whose reader lags: no queue grows. Four tasks with 400 KiB results,
# named by a stream that is not read (a 4 KiB receive buffer): the first goes out, the others
# are coalesced (counted) while more than 256 KiB wait unread; once the reader reads, every
# task's completed state arrives, each once (HTTP/1.0: the stream unchunked).
cat >"$GG_TMP/big.yaml" <<'YAML'
version: "1.0"
server: {name: big, version: "1.0.0"}
tools:
  - name: big
    description: a large result, as a task
    taskSupport: optional
    inputSchema: {type: object, properties: {kb: {type: number, maximum: 1024}}}
    nodes:
      - {id: entry, type: entry, next: v}
      - {id: v, type: transform, transform: {expr: '$pad("", entry.kb * 1024, "x")'}, next: exit}
      - {id: exit, type: exit}
YAML
t "a graph with a large-result task tool uploaded" test "$(gw_put_graph "$ADMIN" conf big "$GG_TMP/big.yaml")" = 201
BIGS=""
for i in 1 2 3 4; do
  call "$R" "$GG_PUB/mcp/conf/big" "$KEY" tools/call big '{"name":"big","arguments":{"kb":400}}' >/dev/null
  BIGS="$BIGS $(jget "$R" "d['result']['taskId']")"
done
for id in $BIGS; do wait_status "$GG_PUB/mcp/conf/big" "$KEY" "$id" completed >/dev/null; done
coalesced() { curl -fsS --max-time 5 "$GG_INT/metrics" | sed -n 's/^graphgate_task_notifications_total{outcome="coalesced"} //p'; }
C0=$(coalesced)
t "a lagging reader: later states coalesced, then every task's completed state arrives once" python3 - "$GG_PUB" "$KEY" "$CAPS" "$GG_INT" "$C0" $BIGS <<'PY'
import json, socket, sys, time, urllib.request, urllib.parse
pub, key, caps, internal, c0, ids = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4], int(sys.argv[5] or 0), sys.argv[6:]
u = urllib.parse.urlparse(pub)
body = json.dumps({'jsonrpc': '2.0', 'id': 'lag', 'method': 'subscriptions/listen', 'params': {'notifications': {'taskIds': ids},
  '_meta': {'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': caps}}}).encode()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect((u.hostname, u.port))
s.sendall((f'POST /mcp/conf/big HTTP/1.0\r\nHost: {u.netloc}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\n'
           f'Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\n'
           f'Content-Length: {len(body)}\r\n\r\n').encode() + body)
def coalesced():
    m = urllib.request.urlopen(internal + '/metrics', timeout=5).read().decode()
    return int([l for l in m.splitlines() if l.startswith('graphgate_task_notifications_total{outcome="coalesced"}')][0].split()[-1])
end = time.time() + 20
while coalesced() - c0 < 3 and time.time() < end: time.sleep(0.1)   # unread: the later ones wait
lagged = coalesced() - c0
buf, seen, end = b'', {}, time.time() + 40
s.settimeout(1)
while len(seen) < len(ids) and time.time() < end:                  # now read
    try: chunk = s.recv(1 << 20)
    except socket.timeout: continue
    if not chunk: break
    buf += chunk
    for l in buf.split(b'\n'):
        if l.startswith(b'data: {') and b'notifications/tasks' in l[:200]:
            try: p = json.loads(l[6:])['params']
            except ValueError: continue                                 # the line is not complete yet
            seen.setdefault(p['taskId'], []).append((p['status'], len(p['result']['content'][0]['text'])))
    buf = buf[buf.rfind(b'\n') + 1:] if b'\n' in buf else buf
print(f'   coalesced while unread: {lagged}; heard: {dict((k[-6:], v) for k, v in seen.items())}', file=sys.stderr)
ok = lagged >= 3 and sorted(seen) == sorted(ids) and all(v == [('completed', 400 * 1024)] for v in seen.values())
sys.exit(0 if ok else 1)
PY

# ---- created on A, read and cancelled on B
st=$(call "$R" "$A" "$KEY" tools/call slow_compute '{"name":"slow_compute","arguments":{"seconds":60,"label":"x"}}')
TASK=$(jget "$R" "d['result']['taskId']")
# listening first: each check below costs a python start
listen "$GG_TMP/la1" "$A" "$KEY" "$TASK"; listen "$GG_TMP/lb1" "$B" "$KEY" "$TASK"
t "A answers a task-supporting call with the task at once" python3 -c "
import json; d=json.load(open('$R'))['result']; assert $st==200 and d['resultType']=='task' and d['status']=='working' and d['ttlMs']>0, d"
t "B reads A's task (the store is shared)" test "$(status_of "$B" "$KEY" "$TASK")" = working
t "listen streams on A and B naming the task hear it working" bash -c "$(declare -f heard); heard $GG_TMP/la1 working && heard $GG_TMP/lb1 working"
st=$(call "$R" "$B" "$KEY" tasks/cancel "$TASK" "{\"taskId\":\"$TASK\"}")
t "B cancels it: an empty acknowledgement" python3 -c "
import json; d=json.load(open('$R')); assert $st==200 and d['result']=={'resultType':'complete'}, d"
t "A reports it cancelled" test "$(status_of "$A" "$KEY" "$TASK")" = cancelled
t "B's stream hears it cancelled (B cancelled it)" heard "$GG_TMP/lb1" cancelled
t "A's stream hears it cancelled too (A's watcher re-reads the row B wrote)" heard "$GG_TMP/la1" cancelled
# last_run TOOL → the status of the tool's newest recorded run
last_run() { gw_cli executions list conf --graph everything --tool "$1" --json 2>/dev/null | python3 -c "
import json,sys; d=json.load(sys.stdin); print(d['executions'][0]['status'] if d['executions'] else '')"; }
stopped() { local i; for i in $(seq 1 200); do [ "$(last_run slow_compute)" = cancelled ] && return 0; sleep 0.1; done
            echo "   slow_compute's run is $(last_run slow_compute)" >&2; return 1; }
t "… and A's run stopped within seconds (A's history records it cancelled, not after its 60 s)" stopped

# ---- input on another replica: A's task waits for an answer, B takes it and resumes the run
st=$(call "$R" "$A" "$KEY" tools/call confirm_delete '{"name":"confirm_delete","arguments":{"filename":"f.txt"}}')
TASK=$(jget "$R" "d['result']['taskId']")
t "a task waiting on an elicit node is input_required (read on B)" wait_status "$B" "$KEY" "$TASK" input_required
listen "$GG_TMP/la2" "$A" "$KEY" "$TASK"
t "a stream on A hears it input_required" heard "$GG_TMP/la2" input_required
t "its inputRequests carry the node's elicitation" python3 -c "
import json; d=json.load(open('$R'))['result']; q=d['inputRequests']['confirm']; assert q['method']=='elicitation/create' and q['params']['message']=='Delete f.txt?' and 'requestState' not in d, d"
st=$(call "$R" "$B" "$KEY" tasks/update "$TASK" "{\"taskId\":\"$TASK\",\"inputResponses\":{\"confirm\":{\"action\":\"accept\",\"content\":{\"confirm\":true}}}}")
t "B takes the answer (acknowledged)" test "$st" = 200
t "the run resumed from the node and completed (read on A)" wait_status "$A" "$KEY" "$TASK" completed
t "A's stream hears B's resumed run complete, with its result" bash -c "$(declare -f heard); heard $GG_TMP/la2 completed && python3 -c \"
import json
ev=[json.loads(l[5:]) for l in open('$GG_TMP/la2') if l.startswith('data:')]
st=[e['params']['status'] for e in ev if e['method']=='notifications/tasks']
done=[e['params'] for e in ev if e['method']=='notifications/tasks' and e['params']['status']=='completed']
assert st[0]=='input_required' and st[-1]=='completed' and len(done)==1 and done[0]['result']['content'][0]['text']=='Deleted f.txt', st\""
t "its result is inlined" python3 -c "
import json; d=json.load(open('$R'))['result']; assert d['result']['content'][0]['text']=='Deleted f.txt', d"

# ---- bad input
st=$(call "$R" "$A" "$KEY" tasks/get nope '{"taskId":"nope"}')
t "unknown task id → -32602" python3 -c "import json; d=json.load(open('$R')); assert $st==400 and d['error']['code']==-32602, d"
st=$(call "$R" "$GG_PUB/mcp/other/everything" "$KEY2" tasks/get "$TASK" "{\"taskId\":\"$TASK\"}")
t "another tenant's task id → -32602 (not found)" python3 -c "import json; d=json.load(open('$R')); assert $st==400 and d['error']['code']==-32602, d"
st=$(call "$R" "$GG_PUB/mcp/other/everything" "$KEY2" tasks/cancel "$TASK" "{\"taskId\":\"$TASK\"}")
t "another tenant cannot cancel it either" python3 -c "import json; d=json.load(open('$R')); assert $st==400 and d['error']['code']==-32602, d"
LONG=$(printf 'x%.0s' $(seq 1 3000))
st=$(call "$R" "$A" "$KEY" tasks/get "$LONG" "{\"taskId\":\"$LONG\"}")
t "an oversize task id → -32602" python3 -c "import json; d=json.load(open('$R')); assert $st==400 and d['error']['code']==-32602, d"
st=$(call "$R" "$A" "$KEY" tasks/get "$TASK" "{\"taskId\":\"$TASK\"}" '{}')
t "tasks/get without the extension declared → -32021" python3 -c "
import json; d=json.load(open('$R')); assert $st==400 and d['error']['code']==-32021 and 'io.modelcontextprotocol/tasks' in d['error']['data']['requiredCapabilities']['extensions'], d"
st=$(call "$R" "$A" "$KEYR" tasks/cancel "$TASK" "{\"taskId\":\"$TASK\"}")
t "tasks/cancel with a tools:read key → 403" test "$st" = 403
st=$(call "$R" "$A" "$KEY" tools/call confirm_delete '{"name":"confirm_delete","arguments":{"filename":"g"}}')
TASK=$(jget "$R" "d['result']['taskId']")
wait_status "$A" "$KEY" "$TASK" input_required
python3 -c "
import json; print(json.dumps({'jsonrpc':'2.0','id':5,'method':'tasks/update','params':{'taskId':'$TASK','inputResponses':{'confirm':{'action':'accept','content':{'confirm':True,'pad':'A'*300000}}},
 '_meta':{'io.modelcontextprotocol/protocolVersion':'2026-07-28','io.modelcontextprotocol/clientCapabilities':$CAPS}}}))" > "$GG_TMP/huge.json"
st=$(gg_curl "$R" -X POST -H 'Content-Type: application/json' -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tasks/update' \
  -H "Mcp-Name: $TASK" -H "Authorization: Bearer $KEY" --data-binary @"$GG_TMP/huge.json" "$A")
t "oversize inputResponses → -32602, the task still waits" python3 -c "import json; d=json.load(open('$R')); assert $st==400 and d['error']['code']==-32602, d"
t "… for its answer" test "$(status_of "$A" "$KEY" "$TASK")" = input_required
st=$(call "$R" "$A" "$KEY" tools/call failing_job '{"name":"failing_job","arguments":{}}' '{}')
t "a task-required tool without the extension → -32021" python3 -c "import json; d=json.load(open('$R')); assert $st==400 and d['error']['code']==-32021, d"

# ---- a replica that shuts down reports the task it ran failed, with the reason
st=$(call "$R" "$B" "$KEY" tools/call slow_compute '{"name":"slow_compute","arguments":{"seconds":60,"label":"y"}}')
TASK=$(jget "$R" "d['result']['taskId']")
listen "$GG_TMP/la3" "$A" "$KEY" "$TASK"
sleep 0.3
kill -TERM $BPID; for i in $(seq 1 400); do kill -0 $BPID 2>/dev/null || break; sleep 0.05; done
wait $BPID; BRC=$?
t "replica B stopped cleanly (exit 0, no sanitizer report)" bash -c "[ $BRC = 0 ] && ! grep -qE 'Sanitizer|runtime error' '$GG_TMP/b.err'"
t "A reports B's interrupted task failed" test "$(status_of "$A" "$KEY" "$TASK")" = failed
t "a stream on A hears B's task fail as interrupted" bash -c "$(declare -f heard); heard $GG_TMP/la3 failed && grep -q interrupted $GG_TMP/la3"
t "… with the reason" python3 -c "
import json; d=json.load(open('$R'))['result']; assert 'interrupted' in d['error']['message'] and 'result' not in d, d"

# ---- a crash (kill -9) while a task works: the restarted process reports it failed; a task
# waiting for input survives (its state is in the row) and is answered after the restart
st=$(call "$R" "$A" "$KEY" tools/call slow_compute '{"name":"slow_compute","arguments":{"seconds":60,"label":"z"}}')
TASK=$(jget "$R" "d['result']['taskId']")
st=$(call "$R" "$A" "$KEY" tools/call confirm_delete '{"name":"confirm_delete","arguments":{"filename":"h.txt"}}')
WAIT=$(jget "$R" "d['result']['taskId']")
wait_status "$A" "$KEY" "$WAIT" input_required
kill -KILL "$GG_PID"; wait "$GG_PID" 2>/dev/null; GG_PID=""
gg_start || { echo "restart failed"; }
A="$GG_PUB/mcp/conf/everything"
t "after a crash and restart the working task is failed (interrupted)" test "$(status_of "$A" "$KEY" "$TASK")" = failed
t "… with the reason" python3 -c "
import json; d=json.load(open('$R'))['result']; assert 'interrupted' in d['error']['message'], d"
st=$(call "$R" "$A" "$KEY" tasks/update "$WAIT" "{\"taskId\":\"$WAIT\",\"inputResponses\":{\"confirm\":{\"action\":\"decline\"}}}")
t "the task waiting for input is answered after the restart and completes" wait_status "$A" "$KEY" "$WAIT" completed
t "… from its saved state" python3 -c "
import json; d=json.load(open('$R'))['result']; assert d['result']['content'][0]['text']=='Kept h.txt', d"
for p in $LPIDS; do kill "$p" 2>/dev/null; done
gg_finish
