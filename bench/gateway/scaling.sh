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
. "$top/bench/gateway/lib.sh"
bench_start gg-scaling wrk nginx taskset
[ -f "$example" ] || { echo "bench: npm peers missing (run tests/npm-deps.sh)"; exit 77; }

# one database per mode, with a tenant, an admin key and a calling key
for mode in durable async; do bench_keys "$tmp/keys-$mode" --db "$tmp/gg-$mode.db"; done

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
  bench_pids+=("$pid")
  bench_listening 200 "$tmp/serve-$mode.err"
  bench_graph "$pub" "$admin" "$tmp/put-$mode.json"
  bench_session "$pub" "$key"
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
  bench_nginx "$n" 4096 taskset -c "$scpus" # nginx: N workers pinned beside the servers
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
