#!/usr/bin/env bash
# Execution-history benchmark: CPU a recorded run costs on the submitting thread and in the
# history writer, against a bare INSERT loop of the 0002 layout in the same invocation.
# usage: bench/history/run.sh [BUILDDIR] [RUNS] [RATE runs/s]
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build}
runs=${2:-100000}
rate=${3:-20000}
make -s -C "$build" bench/history/bench_history >/dev/null
exec "$build/bench/history/bench_history" "$src/migrations" "$runs" "$rate"
