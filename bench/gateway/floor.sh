#!/usr/bin/env bash
# bench/gateway/floor.sh — how much of a tools/call's CPU is graphgate's to cut (issue 31's
# "CPU a call"): one server on one core answers, in interleaved rounds,
#   - health: GET /health with the call's headers — libmicrohttpd, the kernel's TCP work and
#     graphgate's HTTP layer (routing, framing, the answer's headers), nothing of MCP's;
#   - ping:   an MCP ping on the graph's endpoint — adds the API key's check, the session,
#     the JSON-RPC parse and answer, but no run and no history record;
#   - call:   the switch example's tools/call, recorded durably (scaling.sh's durable);
#   - nginx:  one worker serving the call's answer bytes as a file.
# Each row prints req/s and the CPU a call of the serving process (user and kernel apart,
# from /proc), and the share of the tools/call's CPU it is. No call can cost less than
# health, so health's CPU is a floor under any goal for the call on this machine and stack.
#
# usage: bench/gateway/floor.sh [BUILD_DIR (default build)] [SECONDS per target (default 8)]
#   BENCH_ROUNDS=2  BENCH_CONNS=256
# The server runs on core 0 (two HTTP threads, two workers: bench_serve), wrk on core 1.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$top/build}
secs=${2:-8}
rounds=${BENCH_ROUNDS:-2}
conns=${BENCH_CONNS:-256}
bin="$build/src/graphgate"
example=${BENCH_EXAMPLE:-$top/tests/npm/node_modules/mcpgraph/examples/switch_example.yaml}
. "$top/bench/gateway/lib.sh"
bench_start gg-floor wrk nginx taskset
[ "$(nproc --all)" -ge 2 ] || { echo "bench: needs 2 CPUs (the server's and the load's)"; exit 77; }

bench_sqlite_keys
bench_serve durable 1 0 "$tmp/serve.err" --db "$tmp/gg.db"
spid=$pid
bench_listening 200 "$tmp/serve.err"
bench_graph "$pub" "$admin" "$tmp/put.json"
bench_session "$pub" "$key"
bench_nginx 1 4096 taskset -c 0

# ticks PID... → "user system" clock ticks of the processes (all their threads), summed
ticks() { for p in "$@"; do cat "/proc/$p/stat" 2>/dev/null; done | awk '{u += $14; s += $15} END {print u + 0, s + 0}'; }

rsecs=$(( secs / rounds )); [ "$rsecs" -ge 1 ] || rsecs=1
declare -A reqs=() ut=() st=() bad=()
for r in $(seq 1 "$rounds"); do
  order="health ping call nginx"; [ $((r % 2)) = 0 ] && order="nginx call ping health"
  for t in $order; do
    case $t in
      health) pids=$spid; cmd=(env KEY="$key" SID="$sid" METHOD=GET EXPECT='"status":"ok"' wrk -t1 -c"$conns" -d"${rsecs}s" -s "$top/bench/gateway/call.lua" "$pub/health") ;;
      ping) pids=$spid; cmd=(env KEY="$key" SID="$sid" BODY='{"jsonrpc":"2.0","id":1,"method":"ping"}' EXPECT='"result":{}' wrk -t1 -c"$conns" -d"${rsecs}s" -s "$top/bench/gateway/call.lua" "$url") ;;
      call) pids=$spid; cmd=(env KEY="$key" SID="$sid" wrk -t1 -c"$conns" -d"${rsecs}s" -s "$top/bench/gateway/call.lua" "$url") ;;
      nginx) pids=$(bench_nginx_pids); cmd=(wrk -t1 -c"$conns" -d"${rsecs}s" -s "$top/bench/gateway/static.lua" "http://127.0.0.1:$nport/answer.json") ;;
    esac
    # shellcheck disable=SC2086
    read -r u0 s0 < <(ticks $pids)
    taskset -c 1 "${cmd[@]}" >"$tmp/$t-$r.txt" 2>&1
    # shellcheck disable=SC2086
    read -r u1 s1 < <(ticks $pids)
    n=$(awk '/ requests in / {print $1}' "$tmp/$t-$r.txt")
    b=$(awk '/^BAD / {print $2} /Non-2xx/ {print $NF}' "$tmp/$t-$r.txt" | awk '{s += $1} END {print s + 0}')
    reqs[$t]=$(( ${reqs[$t]:-0} + ${n:-0} )) ut[$t]=$(( ${ut[$t]:-0} + u1 - u0 )) st[$t]=$(( ${st[$t]:-0} + s1 - s0 ))
    bad[$t]=$(( ${bad[$t]:-0} + b ))
  done
done

echo "machine: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1), $(nproc --all) CPUs; $(date -u +%F)"
echo
echo "| target | req/s | CPU a call | of it user | of it kernel | share of the tools/call's CPU | bad answers |"
echo "|---|---|---|---|---|---|---|"
python3 - "$(getconf CLK_TCK)" "$((rsecs * rounds))" \
  "${reqs[health]}" "${ut[health]}" "${st[health]}" "${bad[health]}" \
  "${reqs[ping]}" "${ut[ping]}" "${st[ping]}" "${bad[ping]}" \
  "${reqs[call]}" "${ut[call]}" "${st[call]}" "${bad[call]}" \
  "${reqs[nginx]}" "${ut[nginx]}" "${st[nginx]}" "${bad[nginx]}" <<'PY'
import sys
hz, secs = float(sys.argv[1]), float(sys.argv[2])
v = [float(x) for x in sys.argv[3:]]
rows = {name: v[4 * i:4 * i + 4] for i, name in enumerate(["GET /health", "MCP ping", "tools/call (durable)", "nginx (static file)"])}
per = lambda t, n: t / hz / n * 1e6 if n else 0.0
call = rows["tools/call (durable)"]
call_cpu = per(call[1] + call[2], call[0])
for name, (n, u, s, bad) in rows.items():
    cpu = per(u + s, n)
    share = f"{100 * cpu / call_cpu:.0f} %" if call_cpu else "—"
    print(f"| {name} | {n / secs / 1e3:.1f}k | {cpu:.1f} µs | {per(u, n):.1f} µs | {per(s, n):.1f} µs | {share} | {bad:.0f} |")
PY
