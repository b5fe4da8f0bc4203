#!/usr/bin/env bash
# bench/gateway/scaling.sh — how throughput grows with cores (issue 31's table): for each
# core count N of BENCH_CORES (default "1 2 4 8"), graphgate (history durable, then async)
# and nginx are pinned to cores 0..N-1 with two HTTP threads and two workers per core (nginx:
# one worker per core), and wrk is pinned to the next BENCH_LOAD_CORES cores (default 8, or
# what the machine has left), with 256 connections calling the switch example over the public
# listener with an API key and a session, access log off, per-tenant caps lifted.
#
# Each row prints req/s for durable, async and nginx, the ratios to nginx, the server's CPU
# per call (user + system time of the whole process over the calls it answered), how much of
# the durable figure is the kernel's (system time: the TCP work of a call's request and
# answer, which nginx pays too), nginx's own CPU per call (master and workers) as the floor
# it is measured against, and the history writer's share of that CPU (its thread,
# gg-history, from /proc/PID/task). A row
# whose server and load generator would share a core is not measured: its ratios would
# measure the contention, not the server ("refused" and the reason are printed instead).
# Targets run in interleaved rounds as in run.sh (durable, nginx, async, then reversed).
#
# BENCH_PG=1 adds graphgate durable on PostgreSQL (issue 31's PostgreSQL table): a throwaway
# cluster (pg_virtualenv, as bench/gateway/postgres.sh) whose postmaster and backends are
# pinned to the server's cores with graphgate, its CPU counted with graphgate's in that row's
# CPU per call, and the ratio to the SQLite durable figure of the same row.
#
# usage: bench/gateway/scaling.sh [BUILD_DIR (default build)] [SECONDS per target and row (default 10)]
#   BENCH_CORES="1 2 4 8"  BENCH_LOAD_CORES=8  BENCH_ROUNDS=2  BENCH_CONNS=256  BENCH_PG=1
#   BENCH_EXAMPLE=FILE (the switch example's YAML; default: the npm peers' copy)
# On a machine without these tools (the many-core device machine), bench/gateway/bundle.sh
# packs them with graphgate and their libraries: run its run.sh there.
# Needs wrk, nginx, taskset and the npm peers (tests/npm-deps.sh) for the example graph.
# The table goes to stdout as Markdown, ready for bench/gateway/README.md with the date and
# the machine (lscpu's model name and core count are printed above it).
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
if [ -n "${BENCH_PG:-}" ] && [ -z "${GG_PG_INNER:-}" ]; then
  . "$top/tests/lib_pg.sh"
  gg_pg_installed || { echo "bench: pg_virtualenv or a PostgreSQL server not installed (postgresql-common)"; exit 77; }
  GG_PG_INNER=1 gg_pg_venv -o shared_buffers=64MB -o max_connections=200 bash "$0" "$@"
  exit $?
fi
build=${1:-$top/build}
secs=${2:-10}
bin="$build/src/graphgate"
example=${BENCH_EXAMPLE:-$top/tests/npm/node_modules/mcpgraph/examples/switch_example.yaml}
cores_list=${BENCH_CORES:-1 2 4 8}
rounds=${BENCH_ROUNDS:-2}
conns=${BENCH_CONNS:-256}
ncpu=$(nproc --all)
. "$top/bench/gateway/lib.sh"
bench_start gg-scaling wrk nginx taskset

# one database per mode, with a tenant, an admin key and a calling key (pg: PostgreSQL's)
dbflags() { if [ "$1" = pg ]; then echo --database-url postgresql:///ggscale; else echo --db "$tmp/gg-$1.db"; fi; }
modes="durable async"
if [ -n "${BENCH_PG:-}" ]; then
  createdb ggscale || { echo "bench: createdb failed"; exit 1; }
  modes="durable async pg"
  pg_data=$(psql -Atc 'SHOW data_directory' postgres)
  pg_master=$(head -1 "$pg_data/postmaster.pid")
fi
# shellcheck disable=SC2046
for mode in $modes; do bench_keys "$tmp/keys-$mode" $(dbflags "$mode"); done
# pg_pin CPUS → PostgreSQL's postmaster and its processes on CPUS (new backends inherit it)
pg_pin() { for p in "$pg_master" $(pgrep -P "$pg_master"); do taskset -pc "$1" "$p" >/dev/null 2>&1; done; }

# start_gg MODE CPUS N → pid, url, sid, key of a server pinned to CPUS with 2N threads (pg:
# durable history on PostgreSQL)
start_gg() {
  local mode=$1 cpus=$2 n=$3 admin durability=$1
  [ "$mode" = pg ] && durability=durable
  admin=$(sed -n 1p "$tmp/keys-$mode") key=$(sed -n 2p "$tmp/keys-$mode")
  # shellcheck disable=SC2046
  bench_serve "$durability" "$n" "$cpus" "$tmp/serve-$mode.err" $(dbflags "$mode")
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
# sys_ticks PID → system time of the process in clock ticks (all its threads)
sys_ticks() { awk '{print $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
# nginx_ticks → utime + stime of nginx's master and workers
nginx_ticks() {
  local t=0 p
  for p in $(bench_nginx_pids); do
    t=$((t + $(cpu_ticks "$p")))
  done
  echo "$t"
}
# pg_ticks → utime + stime of PostgreSQL's postmaster and its processes (0 without BENCH_PG)
pg_ticks() {
  local t=0 p
  [ -n "${pg_master:-}" ] || { echo 0; return; }
  for p in "$pg_master" $(pgrep -P "$pg_master"); do t=$((t + $(cpu_ticks "$p"))); done
  echo "$t"
}
# requests a wrk output file reports, and the bad answers it saw
wrk_count() { awk '/ requests in / {n=$1} /Non-2xx/ {bad+=$NF} END {print n + 0, bad + 0}' "$1"; }

echo "machine: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1), $ncpu CPUs; $(date -u +%F)"
echo
pg_head="" pg_rule=""
[ -n "${BENCH_PG:-}" ] && pg_head=" PostgreSQL durable req/s | PostgreSQL / SQLite durable | PostgreSQL CPU per call (graphgate + PostgreSQL) |" pg_rule="---|---|---|"
echo "| cores | nginx req/s | durable req/s | async req/s | durable / nginx | async / nginx | durable CPU per call (of which kernel) | async CPU per call | nginx CPU per call | durable CPU / nginx CPU | writer share (durable / async) |$pg_head"
echo "|---|---|---|---|---|---|---|---|---|---|---|$pg_rule"
hz=$(getconf CLK_TCK)
for n in $cores_list; do
  load=${BENCH_LOAD_CORES:-8}
  [ $((n + load)) -le "$ncpu" ] || load=$((ncpu - n))
  if [ "$load" -lt 1 ]; then
    echo "| $n | refused: $ncpu CPUs leave no core for the load generator beside $n for the server |||||||||| "
    continue
  fi
  scpus="0-$((n - 1))" lcpus="$n-$((n + load - 1))"
  threads=$((load < 8 ? load : 8))
  start_gg durable "$scpus" "$n"; d_pid=$pid d_url=$url d_sid=$sid d_key=$key
  start_gg async "$scpus" "$n"; a_pid=$pid a_url=$url a_sid=$sid a_key=$key
  p_pid=""
  if [ -n "${BENCH_PG:-}" ]; then
    pg_pin "$scpus"
    start_gg pg "$scpus" "$n"; p_pid=$pid p_url=$url p_sid=$sid p_key=$key
    pg_pin "$scpus" # graphgate's pool connections are new backends: pinned by inheritance, and again here
  fi
  bench_nginx "$n" 4096 taskset -c "$scpus" # nginx: N workers pinned beside the servers
  declare -A reqs=() bad=() ticks=() wticks=() sticks=()
  rsecs=$(( secs / rounds )); [ "$rsecs" -ge 1 ] || rsecs=1
  for r in $(seq 1 "$rounds"); do
    order="durable nginx async${p_pid:+ pg}"; [ $((r % 2)) = 0 ] && order="${p_pid:+pg }async nginx durable"
    for t in $order; do
      case $t in
        durable) p=$d_pid; cmd=(env KEY="$d_key" SID="$d_sid" taskset -c "$lcpus" wrk -t"$threads" -c"$conns" -d"${rsecs}s" -s "$top/bench/gateway/call.lua" "$d_url") ;;
        async) p=$a_pid; cmd=(env KEY="$a_key" SID="$a_sid" taskset -c "$lcpus" wrk -t"$threads" -c"$conns" -d"${rsecs}s" -s "$top/bench/gateway/call.lua" "$a_url") ;;
        pg) p=$p_pid; cmd=(env KEY="$p_key" SID="$p_sid" taskset -c "$lcpus" wrk -t"$threads" -c"$conns" -d"${rsecs}s" -s "$top/bench/gateway/call.lua" "$p_url") ;;
        nginx) p=""; cmd=(taskset -c "$lcpus" wrk -t"$threads" -c"$conns" -d"${rsecs}s" -s "$top/bench/gateway/static.lua" "http://127.0.0.1:$nport/answer.json") ;;
      esac
      c0=0 w0=0 g0=0 s0=0; [ -n "$p" ] && c0=$(cpu_ticks "$p") w0=$(cpu_ticks "$p" gg-history) s0=$(sys_ticks "$p")
      [ "$t" = nginx ] && c0=$(nginx_ticks)
      [ "$t" = pg ] && g0=$(pg_ticks)
      "${cmd[@]}" >"$tmp/$t-$n-$r.txt" 2>&1
      # the async writer catches up after the round: its CPU belongs to these calls
      [ "$t" = async ] && sleep 1
      read -r c b < <(wrk_count "$tmp/$t-$n-$r.txt")
      reqs[$t]=$(( ${reqs[$t]:-0} + c )); bad[$t]=$(( ${bad[$t]:-0} + b ))
      if [ -n "$p" ]; then
        ticks[$t]=$(( ${ticks[$t]:-0} + $(cpu_ticks "$p") - c0 ))
        wticks[$t]=$(( ${wticks[$t]:-0} + $(cpu_ticks "$p" gg-history) - w0 ))
        sticks[$t]=$(( ${sticks[$t]:-0} + $(sys_ticks "$p") - s0 ))
      fi
      [ "$t" = nginx ] && ticks[$t]=$(( ${ticks[$t]:-0} + $(nginx_ticks) - c0 ))
      [ "$t" = pg ] && ticks[$t]=$(( ${ticks[$t]} + $(pg_ticks) - g0 ))
    done
  done
  kill "$d_pid" "$a_pid" "$npid" $p_pid 2>/dev/null; wait "$d_pid" "$a_pid" "$npid" $p_pid 2>/dev/null
  python3 - "$n" "$((rsecs * rounds))" "$hz" "${reqs[nginx]}" "${reqs[durable]}" "${reqs[async]}" \
    "${ticks[durable]}" "${ticks[async]}" "${wticks[durable]}" "${wticks[async]}" \
    "${bad[nginx]}" "${bad[durable]}" "${bad[async]}" "${reqs[pg]:-0}" "${ticks[pg]:-0}" "${bad[pg]:-0}" \
    "${p_pid:+1}" "${ticks[nginx]:-0}" "${sticks[durable]:-0}" <<'PY'
import sys
n, secs, hz, rn, rd, ra, td, ta, wd, wa, bn, bd, ba, rp, tp, bp = (float(x) for x in sys.argv[1:17])
pg = sys.argv[17] == "1"
tn, sd = float(sys.argv[18]), float(sys.argv[19])
rate = lambda r: r / secs
us = lambda t, r: f"{t / hz / r * 1e6:.1f} µs" if r else "—"
share = lambda w, t: f"{100 * w / t:.0f} %" if t else "—"
pct = share  # a ratio to nginx, "—" when nginx answered nothing
bad = f" (bad answers: nginx {bn:.0f}, durable {bd:.0f}, async {ba:.0f}, PostgreSQL {bp:.0f})" if bn or bd or ba or bp else ""
ratio = f"{(td / rd) / (tn / rn):.2f}" if rd and rn and tn else "—"
row = (f"| {n:.0f} | {rate(rn) / 1e3:.1f}k | {rate(rd) / 1e3:.1f}k | {rate(ra) / 1e3:.1f}k | "
       f"{pct(rd, rn)} | {pct(ra, rn)} | {us(td, rd)} ({us(sd, rd)}) | {us(ta, ra)} | {us(tn, rn)} | "
       f"{ratio} | {share(wd, td)} / {share(wa, ta)}{bad} |")
if pg:
    row += f" {rate(rp) / 1e3:.1f}k | {100 * rp / rd:.0f} % | {us(tp, rp)} |" if rd else f" {rate(rp) / 1e3:.1f}k | — | {us(tp, rp)} |"
print(row)
PY
done
