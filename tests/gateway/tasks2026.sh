#!/usr/bin/env bash
# tasks2026.sh — the MCP 2026-07-28 tasks extension (io.modelcontextprotocol/tasks): the
# conformance suite's tasks-* scenarios against the fixture graph on the internal listener,
# then the task methods through curl with API keys: bad input (unknown id, another tenant's
# id, oversize), scopes, and the -32021 gate.
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
gw_conf_setup
export GRAPHGATE_SESSION_SECRET=tasks2026-test-secret-shared-by-replicas-0123456789
gg_start || { echo "0 passed, 1 failed"; exit 1; }
t "fixture graph uploaded" test "$(gw_put_graph "$ADMIN" conf everything "$FIXTURE")" = 201
PUB="$GG_PUB/mcp/conf/everything"
INT="$GG_INT/internal/mcp/conf/everything"
CONF="$NPM/@modelcontextprotocol/conformance/dist/index.js"

# ---- the conformance scenarios of the extension
for s in tasks-lifecycle tasks-capability-negotiation tasks-wire-fields tasks-request-state-removal tasks-mrtr-input \
         tasks-request-headers tasks-dispatch-and-envelope tasks-required-task-error; do
  timeout 120 "$NODE" "$CONF" server --url "$INT" --scenario "$s" > "$GG_TMP/conf-$s.out" 2>&1
  t "conformance $s" grep -qE "^Passed: ([1-9][0-9]*)/\1, 0 failed" "$GG_TMP/conf-$s.out"
  grep -qE "^Passed: ([1-9][0-9]*)/\1, 0 failed" "$GG_TMP/conf-$s.out" || sed 's/\x1b\[[0-9;]*m//g' "$GG_TMP/conf-$s.out" | grep -E 'FAILURE|Error' | head -8 >&2
done
gg_finish
