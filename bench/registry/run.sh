#!/usr/bin/env bash
# bench/registry/run.sh — graphs on demand: RSS and time to /ready with 10,000 and 100,000
# stored graphs (the loop example, examples/collatz.yaml, stored straight into the SQLite
# store), first-call latency of a cold graph vs a hot one, hot throughput (wrk, one graph)
# and throughput over more graphs than graphs.cache_size, all in one invocation. With
# BASE_BIN=path/to/an/older/graphgate that binary serves the same database at the same
# time, the wrk runs alternate between the two (best of ROUNDS each), and the ratios are
# printed (before = BASE_BIN, after = this build).
#
# usage: bench/registry/run.sh [BUILD_DIR (default build)] [SECONDS per wrk run (default 3)]
#        [COUNTS (default "10000 100000")] [ROUNDS (default 3)]
# Needs python3 and wrk.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$top/build}
command -v wrk >/dev/null || { echo "bench: wrk not installed"; exit 77; }
[ -x "$build/src/graphgate" ] || { echo "bench: $build/src/graphgate not built"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gg-registry.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
while IFS='=' read -r name _; do unset "$name"; done < <(env | grep '^GRAPHGATE_' || true)
export GG_SRCDIR="$top"
# the collatz tool on the internal plain tool-call route (bench/gateway/call.lua's defaults
# are an MCP tools/call)
export BODY='{"n": 27}' EXPECT='"steps":111'
exec python3 "$top/bench/registry/bench.py" --bin "$build/src/graphgate" ${BASE_BIN:+--base "$BASE_BIN"} \
  --secs "${2:-3}" --counts "${3:-10000 100000}" --rounds "${4:-3}" --tmp "$tmp" --example "$top/examples/collatz.yaml" \
  --lua "$top/bench/gateway/call.lua"
