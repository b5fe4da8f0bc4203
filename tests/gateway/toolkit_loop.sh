#!/usr/bin/env bash
# toolkit_loop.sh — the whole authoring loop over MCP with the official SDK client
# (toolkit_loop.mjs): search_nodes/get_node_details on /mcp/nodes → list_downstream_tools →
# validate_graph → run_graph (result and node trace, real downstream server-everything;
# nothing stored: no version, no history row) → put_graph → the published graph called on
# /mcp/acme/loop. Attacks on run_graph/put_graph: an endless loop stops at the time cap
# (graphs.max_execution_time 8s) and a graph asking for more is refused; memory past
# limits.eval_memory_bytes fails the run; trace values past history.max_payload and records
# past history.max_run_records are cut; a key without graphs:write cannot put_graph; a
# tenant cannot put into another; run_graph reaches neither the gateway's own listeners
# (/internal) nor a host the tenant's policy does not grant (beta has no grant); no tenant
# (internal listener) → error. Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
gw_with_everything
# a graph using server-everything, uploaded over REST: its upload caches the downstream catalog
gw_everything_graph "$GG_TMP/ev.yaml"
gw_cli_run tenant create acme >/dev/null
gw_cli_run tenant create beta >/dev/null
ADMIN=$(gw_key acme admin)
WRITER=$(gw_key acme tools:read,tools:execute,graphs:write)
KEY=$(gw_key acme tools:read,tools:execute)
BETA=$(gw_key beta tools:read,tools:execute,graphs:write)
# only acme may reach 127.0.0.1 (server-everything); beta has no grant
GRAPHGATE_POLICY_TENANT_HTTP_HOSTS=acme=127.0.0.1 GRAPHGATE_GRAPHS_MAX_EXECUTION_TIME=8s GRAPHGATE_GRAPHS_MAX_NODE_EXECUTIONS=1000000 \
  GRAPHGATE_LIMITS_EVAL_MEMORY_BYTES=8MiB GRAPHGATE_LIMITS_RUN_MEMORY_BYTES=16MiB \
  GRAPHGATE_HISTORY_MAX_PAYLOAD=4096 GRAPHGATE_HISTORY_MAX_RUN_RECORDS=50 GRAPHGATE_BODY_LIMIT=4194304 GRAPHGATE_WORKERS=1 gg_start || { echo "0 passed, 1 failed"; exit 1; }
t "setup: tenants and keys" gw_cli_clean
t "a graph using server-everything uploads (its catalog is cached)" eq "$(gw_put_graph "$ADMIN" acme ev "$GG_TMP/ev.yaml")" 201

"$NODE" "$GG_SRCDIR/tests/gateway/toolkit_loop.mjs" "$GG_PUB" "$GG_INT" "$EVPORT" "$ADMIN" "$WRITER" "$KEY" "$BETA" \
  >"$GG_TMP/sdk.out" 2>&1
gw_fold "$GG_TMP/sdk.out" $?

# the internal listener has no key, so no tenant: run_graph and put_graph refuse
body='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_graph","arguments":{"yaml":"x","tool":"t"},'
body+='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
gg_curl "$GG_TMP/int.out" -X POST -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
  -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: run_graph' --data-binary "$body" "$GG_INT/internal/mcp/toolkit" >/dev/null
t "run_graph on the internal listener (no key, no tenant) → no_tenant" grep -q 'no_tenant' "$GG_TMP/int.out"
gg_finish
