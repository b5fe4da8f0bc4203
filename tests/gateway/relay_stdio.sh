#!/usr/bin/env bash
# relay_stdio.sh — what a stdio child sends during a call, where no message names its call
# (src/mcp/client_stdio.c "a child's messages that name no call"): a real SDK server over
# stdio (relay_stdio_srv.mjs) behind a proxy graph, called by the official SDK client
# (sdk_relay_stdio.mjs, a 2025-11-25 session): the child's notifications/progress reach the
# caller's onprogress (routed by the call's own progressToken, increasing), its log message
# reaches the caller (one call in flight), its elicitation is answered by the caller and
# completes the call; with a second call in flight its question is refused (-32601, saying
# why) and its log message dropped; a caller without the capability → -32601.
# Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_relay.sh"

relay_graph px "kid: {type: stdio, command: \"$NODE\", args: [\"$GG_SRCDIR/tests/gateway/relay_stdio_srv.mjs\"], env: {GG_NPM: \"$NM\"}, timeout: 30000}" \
  "$(relay_proxy_section kid)"

relay_tenants
GRAPHGATE_POLICY_STDIO_COMMANDS="$NODE" relay_start
t "setup: tenant and keys" gw_cli_clean
t "the proxy graph on the stdio server is accepted" eq "$(gw_put_graph "$ADMIN" acme px "$GG_TMP/px.yaml")" 201

"$NODE" "$GG_SRCDIR/tests/gateway/sdk_relay_stdio.mjs" "$GG_PUB/mcp/acme/px" "$KEY" >"$GG_TMP/sdk.out" 2>&1
gw_fold "$GG_TMP/sdk.out" $?
t "server stops cleanly (stdio child included; exit 0, no sanitizer report)" gw_stop_clean
gg_finish
