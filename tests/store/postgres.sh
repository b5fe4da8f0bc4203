#!/usr/bin/env bash
# tests/store/postgres.sh — the store's check programs (tests/store, tests/auth, the node-spec
# store in tests/specs) against PostgreSQL: a throwaway cluster started here with
# pg_virtualenv (postgresql-common; tests/deps.sh installs it), each test in a database of its
# own (tests/store/pg_fixture.h), the cluster dropped at the end. Never uses a running server.
set -u
B=${GG_BUILDDIR:-$(pwd)}
. "${GG_SRCDIR:-$(dirname "$0")/../..}/tests/lib_pg.sh"
if ! gg_pg_installed; then
  echo "SKIP: PostgreSQL server or pg_virtualenv not installed (tests/deps.sh installs postgresql-15, postgresql-common)"
  echo "0 passed, 0 failed"
  exit 77
fi
progs=(tests/store/test_store tests/store/test_usage tests/store/test_vault tests/auth/test_auth tests/auth/test_keycache tests/specs/test_specs)
for p in "${progs[@]}"; do
  [ -x "$B/$p" ] || { echo "missing $B/$p (build with check installed)"; echo "0 passed, 1 failed"; exit 1; }
done
log=$(mktemp "${TMPDIR:-/tmp}/gg-pg-log.XXXXXX")
# The PG* variables pg_virtualenv exports are what libpq (and so postgresql:///dbname URLs)
# and psql read. As root its clusters share a name and port, so make -j check's two
# PostgreSQL tests take turns (tests/lib_pg.sh).
gg_pg_venv -o shared_buffers=32MB -o fsync=off bash -c '
  passed=0; failed=0
  for p in "$@"; do
    out=$(GG_TEST_PG=1 "'"$B"'/$p" 2>&1); rc=$?
    line=$(printf "%s\n" "$out" | grep -E "^[0-9]+ passed, [0-9]+ failed" | tail -1)
    echo "$p (PostgreSQL): ${line:-no summary, exit $rc}"
    [ $rc -eq 0 ] || printf "%s\n" "$out" | grep -E ":[EF]:" | head -20
    if [ $rc -eq 0 ] && [ -n "$line" ]; then passed=$((passed+1)); else failed=$((failed+1)); fi
  done
  echo "$passed passed, $failed failed"
  [ $failed -eq 0 ]' bash "${progs[@]}" 2>"$log"
rc=$?
[ $rc -eq 0 ] || { echo "--- cluster log: errors"; grep -A2 " ERROR: " "$log" | grep -v "^--" | sort -u -t" " -k4 | head -40; }
rm -f "$log"
exit $rc
