#!/usr/bin/env bash
# Execution-history benchmark: CPU a recorded run costs on the submitting thread and in the
# history writer, against a bare INSERT loop of the 0002 layout in the same invocation.
# usage: bench/history/run.sh [--postgres] [BUILDDIR] [RUNS] [RATE runs/s] [saturation|reads|layouts|batch]
# reads: the saturation line, then the store's readers (get by id, newest 50) over what it stored.
# layouts: today's writer at saturation (quota deletes on and off), the batch layout's bare
# loops and both layouts' reads, in one invocation (README: "Batch layout, measured").
# --postgres: the writer and group-commit figures on a throwaway PostgreSQL cluster
# (pg_virtualenv, fsync on as a server would run) instead of SQLite.
set -euo pipefail
pg=""
if [ "${1:-}" = --postgres ]; then pg=1; shift; fi
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build}
runs=${2:-100000}
rate=${3:-20000}
make -s -C "$build" bench/history/bench_history >/dev/null
if [ -n "$pg" ]; then
  . "$src/tests/lib_pg.sh"
  gg_pg_venv -- env GG_BENCH_PG=1 "$build/bench/history/bench_history" "$src/migrations" "$runs" "$rate"
  exit $?
fi
exec "$build/bench/history/bench_history" "$src/migrations" "$runs" "$rate" ${4:+"$4"}
