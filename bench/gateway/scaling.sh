#!/usr/bin/env bash
# bench/gateway/scaling.sh — how throughput grows with cores (issue 31's table): for each
# core count N of BENCH_CORES (default "1 2 4 8"), graphgate (history durable, then async)
# and nginx are pinned to cores 0..N-1 with two HTTP threads and two workers per core (nginx:
# one worker per core), and wrk is pinned to the next BENCH_LOAD_CORES cores (default 8, or
# what the machine has left), with 256 connections calling the switch example over the public
# listener with an API key and a session, access log off, per-tenant caps lifted.
#
# Each row prints req/s for durable, async and nginx, the ratios to nginx, the server's CPU
# per call (user + system time of the whole process over the calls it answered) and the
# history writer's share of that CPU (its thread, gg-history, from /proc/PID/task). A row
# whose server and load generator would share a core is not measured: its ratios would
# measure the contention, not the server ("refused" and the reason are printed instead).
# Targets run in interleaved rounds as in run.sh (durable, nginx, async, then reversed).
#
# usage: bench/gateway/scaling.sh [BUILD_DIR (default build)] [SECONDS per target and row (default 10)]
#   BENCH_CORES="1 2 4 8"  BENCH_LOAD_CORES=8  BENCH_ROUNDS=2  BENCH_CONNS=256
# Needs wrk, nginx, taskset and the npm peers (tests/npm-deps.sh) for the example graph.
# The table goes to stdout as Markdown, ready for bench/gateway/README.md with the date and
# the machine (lscpu's model name and core count are printed above it).
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$top/build}
secs=${2:-10}
bin="$build/src/graphgate"
example="$top/tests/npm/node_modules/mcpgraph/examples/switch_example.yaml"
cores_list=${BENCH_CORES:-1 2 4 8}
rounds=${BENCH_ROUNDS:-2}
conns=${BENCH_CONNS:-256}
ncpu=$(nproc --all)
for need in wrk nginx taskset; do command -v "$need" >/dev/null || { echo "bench: $need not installed"; exit 77; }; done
[ -x "$bin" ] || { echo "bench: $bin not built"; exit 1; }
[ -f "$example" ] || { echo "bench: npm peers missing (run tests/npm-deps.sh)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gg-scaling.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
while IFS='=' read -r name _; do unset "$name"; done < <(env | grep '^GRAPHGATE_' || true)

# one database per mode, with a tenant, an admin key and a calling key
for mode in durable async; do
  db=(--db "$tmp/gg-$mode.db")
  "$bin" migrate "${db[@]}" >/dev/null 2>&1
  "$bin" tenant create bench "${db[@]}" >/dev/null 2>&1
  { "$bin" key create --tenant bench --scopes admin "${db[@]}" 2>/dev/null | grep '^gg_'
    "$bin" key create --tenant bench --scopes tools:read,tools:execute "${db[@]}" 2>/dev/null | grep '^gg_'; } >"$tmp/keys-$mode"
done

# start_gg MODE CPUS N → pid, url, sid, key of a server pinned to CPUS with 2N threads
start_gg() {
  local mode=$1 cpus=$2 n=$3 admin
  admin=$(sed -n 1p "$tmp/keys-$mode") key=$(sed -n 2p "$tmp/keys-$mode")
  : >"$tmp/serve.out"
  # caps lifted: one tenant, many connections from one address, no queue or in-flight cap
  GRAPHGATE_LOG_ACCESS=false GRAPHGATE_HISTORY_DURABILITY=$mode GRAPHGATE_WORKERS=$((2 * n)) \
    GRAPHGATE_HTTP_THREADS=$((2 * n)) GRAPHGATE_HTTP_MAX_CONNECTIONS=4096 \
    GRAPHGATE_HTTP_MAX_CONNECTIONS_PER_IP=4096 GRAPHGATE_TENANTS_MAX_CONCURRENT_EXECUTIONS=0 \
    GRAPHGATE_TENANTS_MAX_QUEUED=0 GRAPHGATE_TENANTS_MAX_RUNNING=$((2 * n)) taskset -c "$cpus" "$bin" serve --db "$tmp/gg-$mode.db" \
    --listen 127.0.0.1:0 --internal-listen 127.0.0.1:0 >"$tmp/serve.out" 2>"$tmp/serve-$mode.err" &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 200); do grep -q internal "$tmp/serve.out" 2>/dev/null && break; sleep 0.05; done
  local pub
  pub=$(sed -n 's|^ *public *\(http://[^ ]*\)/$|\1|p' "$tmp/serve.out")
  [ -n "$pub" ] || { echo "bench: graphgate did not start"; tail -5 "$tmp/serve-$mode.err"; exit 1; }
  if [ ! -f "$tmp/put-$mode.json" ]; then
    local code
    code=$(curl -s -o "$tmp/put-$mode.json" -w '%{http_code}' -X PUT -H "Authorization: Bearer $admin" \
      -H 'Content-Type: application/yaml' --data-binary @"$example" "$pub/admin/tenants/bench/graphs/switch")
    [ "$code" = 201 ] || { echo "bench: graph upload failed ($code)"; cat "$tmp/put-$mode.json"; exit 1; }
  fi
  url="$pub/mcp/bench/switch"
  sid=$(curl -s -D - -o /dev/null -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' "$url" \
    --data-binary '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}' \
    | sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: *\([^[:space:]]*\).*/\1/p' | tr -d '\r')
  [ -n "$sid" ] || { echo "bench: no session"; exit 1; }
  curl -s -H "Authorization: Bearer $key" -H "Mcp-Session-Id: $sid" -H 'Content-Type: application/json' "$url" \
    --data-binary '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_switch","arguments":{"value":42}}}' >"$tmp/answer.json"
  grep -q '"result":"high"' "$tmp/answer.json" || { echo "bench: unexpected answer"; cat "$tmp/answer.json"; exit 1; }
}

# cpu_ticks PID [THREAD_NAME] → utime + stime in clock ticks (the process, or its threads of
# that name)
cpu_ticks() {
  local t=0 f
  for f in /proc/"$1"/task/*; do
    [ -z "${2:-}" ] || [ "$(cat "$f/comm" 2>/dev/null)" = "$2" ] || continue
    t=$((t + $(awk '{print $14 + $15}' "$f/stat" 2>/dev/null || echo 0)))
  done
  echo "$t"
}
# requests a wrk output file reports, and the bad answers it saw
wrk_count() { awk '/ requests in / {n=$1} /Non-2xx/ {bad+=$NF} END {print n + 0, bad + 0}' "$1"; }

# nginx serving the answer's bytes, pinned to CPUS with N workers
start_nginx() {
  local cpus=$1 n=$2
  mkdir -p "$tmp/www"
  cp "$tmp/answer.json" "$tmp/www/answer.json"
  nport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  cat >"$tmp/nginx.conf" <<NGX
worker_processes $n;
daemon off;
pid $tmp/nginx.pid;
error_log $tmp/nginx.err;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $tmp; proxy_temp_path $tmp; fastcgi_temp_path $tmp; uwsgi_temp_path $tmp; scgi_temp_path $tmp;
  server { listen 127.0.0.1:$nport; root $tmp/www; default_type application/json; }
}
NGX
  taskset -c "$cpus" nginx -c "$tmp/nginx.conf" -p "$tmp" >/dev/null 2>&1 &
  npid=$!
  pids+=("$npid")
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$nport/answer.json" >/dev/null 2>&1 && break; sleep 0.05; done
}

echo "machine: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1), $ncpu CPUs; $(date -u +%F)"
echo
echo "| cores | nginx req/s | durable req/s | async req/s | durable / nginx | async / nginx | durable CPU per call | async CPU per call | writer share (durable / async) |"
echo "|---|---|---|---|---|---|---|---|---|"
hz=$(getconf CLK_TCK)
for n in $cores_list; do
  load=${BENCH_LOAD_CORES:-8}
  [ $((n + load)) -le "$ncpu" ] || load=$((ncpu - n))
  if [ "$load" -lt 1 ]; then
    echo "| $n | refused: $ncpu CPUs leave no core for the load generator beside $n for the server |||||||| "
    continue
  fi
  scpus="0-$((n - 1))" lcpus="$n-$((n + load - 1))"
  threads=$((load < 8 ? load : 8))
  start_gg durable "$scpus" "$n"; d_pid=$pid d_url=$url d_sid=$sid d_key=$key
  start_gg async "$scpus" "$n"; a_pid=$pid a_url=$url a_sid=$sid a_key=$key
  start_nginx "$scpus" "$n"
  declare -A reqs=() bad=() ticks=() wticks=()
  rsecs=$(( secs / rounds )); [ "$rsecs" -ge 1 ] || rsecs=1
  for r in $(seq 1 "$rounds"); do
    order="durable nginx async"; [ $((r % 2)) = 0 ] && order="async nginx durable"
    for t in $order; do
      case $t in
        durable) p=$d_pid; cmd=(env KEY="$d_key" SID="$d_sid" taskset -c "$lcpus" wrk -t"$threads" -c"$conns" -d"${rsecs}s" -s "$top/bench/gateway/call.lua" "$d_url") ;;
        async) p=$a_pid; cmd=(env KEY="$a_key" SID="$a_sid" taskset -c "$lcpus" wrk -t"$threads" -c"$conns" -d"${rsecs}s" -s "$top/bench/gateway/call.lua" "$a_url") ;;
        nginx) p=""; cmd=(taskset -c "$lcpus" wrk -t"$threads" -c"$conns" -d"${rsecs}s" -s "$top/bench/gateway/static.lua" "http://127.0.0.1:$nport/answer.json") ;;
      esac
      c0=0 w0=0; [ -n "$p" ] && c0=$(cpu_ticks "$p") w0=$(cpu_ticks "$p" gg-history)
      "${cmd[@]}" >"$tmp/$t-$n-$r.txt" 2>&1
      # the async writer catches up after the round: its CPU belongs to these calls
      [ "$t" = async ] && sleep 1
      read -r c b < <(wrk_count "$tmp/$t-$n-$r.txt")
      reqs[$t]=$(( ${reqs[$t]:-0} + c )); bad[$t]=$(( ${bad[$t]:-0} + b ))
      if [ -n "$p" ]; then
        ticks[$t]=$(( ${ticks[$t]:-0} + $(cpu_ticks "$p") - c0 ))
        wticks[$t]=$(( ${wticks[$t]:-0} + $(cpu_ticks "$p" gg-history) - w0 ))
      fi
    done
  done
  kill "$d_pid" "$a_pid" "$npid" 2>/dev/null; wait "$d_pid" "$a_pid" "$npid" 2>/dev/null
  python3 - "$n" "$((rsecs * rounds))" "$hz" "${reqs[nginx]}" "${reqs[durable]}" "${reqs[async]}" \
    "${ticks[durable]}" "${ticks[async]}" "${wticks[durable]}" "${wticks[async]}" \
    "${bad[nginx]}" "${bad[durable]}" "${bad[async]}" <<'PY'
import sys
n, secs, hz, rn, rd, ra, td, ta, wd, wa, bn, bd, ba = (float(x) for x in sys.argv[1:])
rate = lambda r: r / secs
us = lambda t, r: f"{t / hz / r * 1e6:.1f} µs" if r else "—"
share = lambda w, t: f"{100 * w / t:.0f} %" if t else "—"
bad = f" (bad answers: nginx {bn:.0f}, durable {bd:.0f}, async {ba:.0f})" if bn or bd or ba else ""
print(f"| {n:.0f} | {rate(rn) / 1e3:.1f}k | {rate(rd) / 1e3:.1f}k | {rate(ra) / 1e3:.1f}k | "
      f"{100 * rd / rn:.0f} % | {100 * ra / rn:.0f} % | {us(td, rd)} | {us(ta, ra)} | {share(wd, td)} / {share(wa, ta)}{bad} |")
PY
done
