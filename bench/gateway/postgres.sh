#!/usr/bin/env bash
# bench/gateway/postgres.sh — bench/gateway/run.sh with graphgate also on PostgreSQL: a
# throwaway cluster (pg_virtualenv, as the tests use) holds the database, and run.sh prints
# SQLite, PostgreSQL, nginx and mcpgraph side by side with the ratios PostgreSQL / SQLite.
# usage: bench/gateway/postgres.sh [BUILD_DIR] [SECONDS]   (or BENCH_PG_URL=... run.sh for a
# server of your own). Needs what run.sh needs, plus postgresql and postgresql-common.
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${GG_PG_INNER:-}" ]; then
  . "$here/../../tests/lib_pg.sh"
  gg_pg_installed || { echo "bench: pg_virtualenv or a PostgreSQL server not installed (postgresql-common)"; exit 77; }
  GG_PG_INNER=1 gg_pg_venv -o shared_buffers=64MB bash "$0" "$@"
  exit $?
fi
createdb ggbench || { echo "bench: createdb failed"; exit 1; }
BENCH_PG_URL=postgresql:///ggbench "$here/run.sh" "$@"
