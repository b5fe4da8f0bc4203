# lib_durable.sh — setup shared by the durability tests (sourced after lib_gw.sh): a
# migrated database with tenant acme, a tools key in $DKEY and the fixture graph
# tests/fixtures/graphs/durable.yaml (tools echo and slow) as acme/$1. Exits the test
# with "0 passed, 1 failed" when the setup fails.
durable_setup() {
  command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
  gw_cli migrate >/dev/null 2>&1
  gw_cli tenant create acme >/dev/null 2>&1
  DKEY=$(gw_key acme tools:read,tools:execute)
  gw_cli graph put acme "$1" "$GG_SRCDIR/tests/fixtures/graphs/durable.yaml" >/dev/null 2>"$GG_TMP/put.err" ||
    { cat "$GG_TMP/put.err"; echo "0 passed, 1 failed"; exit 1; }
}
# wait_for SECONDS CMD... → runs CMD every 0.1 s until it succeeds (bounded).
wait_for() { local n=$(( $1 * 10 )); shift; for _ in $(seq 1 "$n"); do "$@" && return 0; sleep 0.1; done; return 1; }
