# lib_relay.sh — the relay tests' set-up on top of lib_gw.sh (sourced, not run; relay.sh,
# relay2026.sh, relay_stdio.sh): the pinned Node and SDK (skips without them), the downstream
# relay_srv.mjs, tenants and keys, graphgate started, the test graphs written from their
# varying parts, and a client script's result folded in.
#
#   relay_srv_start                 # relay_srv.mjs over streamable HTTP: SRV (killed on exit), PORT
#   relay_tenants [other]           # acme: ADMIN, KEY; with "other" also OADMIN, OKEY
#   relay_start [serve flags...]    # gg_start, or "0 passed, 1 failed" and exit
#   relay_graph NAME SERVERS SECTION [TOP]   # $GG_TMP/NAME.yaml
#   relay_call26 OUT URL TOOL ARGS CAPS ID   # a 2026-07-28 tools/call by hand → HTTP status
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
gw_need_sdk

# relay_srv_start: the downstream relay_srv.mjs started (its log in $GG_TMP/srv.log); SRV its
# pid, killed on exit (a test with more processes sets its own trap, naming SRV too), PORT the
# port it listens on. A downstream that does not start ends the script as one failure.
relay_srv_start() {
  "$NODE" "$GG_SRCDIR/tests/gateway/relay_srv.mjs" >"$GG_TMP/srv.log" 2>&1 &
  SRV=$!
  trap 'kill $SRV 2>/dev/null; gg_cleanup' EXIT
  PORT=$(gw_wait_port "$GG_TMP/srv.log" $SRV)
  [ -n "$PORT" ] || { echo "the downstream did not start: $(head -5 "$GG_TMP/srv.log")"; echo "0 passed, 1 failed"; exit 1; }
}

# relay_tenants [other]: tenant acme with keys ADMIN (admin) and KEY (tools:read,tools:execute);
# with "other" also tenant other (OADMIN, OKEY), whose calls must not slow down. A failed step
# shows in gw_cli_clean (the test's "setup" check).
relay_tenants() {
  gw_cli_run tenant create acme >/dev/null
  [ "${1:-}" != other ] || gw_cli_run tenant create other >/dev/null
  ADMIN=$(gw_key acme admin)
  KEY=$(gw_key acme tools:read,tools:execute)
  [ "${1:-}" != other ] || { OADMIN=$(gw_key other admin); OKEY=$(gw_key other tools:read,tools:execute); }
}

# relay_start [serve flags...]: the gateway started (gg_start; the caller's VAR=value prefixes
# reach it); when it does not start, nothing else can run: one failure, and the script ends.
relay_start() { gg_start "$@" || { echo "0 passed, 1 failed"; exit 1; }; }

# relay_graph NAME SERVERS SECTION [TOP]: $GG_TMP/NAME.yaml, graph NAME: TOP (more top-level
# lines, e.g. executionLimits), the mcpServers entries SERVERS (one a line; "" for none), then
# SECTION (its proxy: or tools: lines: relay_proxy_section, relay_tool).
relay_graph() {
  {
    echo 'version: "1.0"'
    echo "server: {name: \"$1\", version: \"1.0.0\"}"
    [ -z "${4:-}" ] || echo "$4"
    [ -z "$2" ] || { echo 'mcpServers:'; echo "$2" | sed 's/^/  /'; }
    echo "$3"
  } >"$GG_TMP/$1.yaml"
}
# relay_http [TIMEOUT_MS]: relay_graph's mcpServers entry "relay" for relay_srv.mjs (PORT).
relay_http() { echo "relay: {type: \"streamableHttp\", url: \"http://127.0.0.1:$PORT/mcp\"${1:+, timeout: $1}}"; }
# relay_proxy_section SERVER: every tool of SERVER proxied, named r_<its name>.
relay_proxy_section() { printf 'proxy:\n  - {server: "%s", tools: "all", prefix: "r_"}\n' "$1"; }
# relay_tool NAME DESCRIPTION SCHEMA NODE [MORE]: one entry of a tools: section, its nodes
# entry → NODE → exit. NODE: the middle node's fields, id first, less braces and next
# (relay_mcp_node); MORE: another line of the tool (taskSupport).
relay_tool() {
  local id=${4%%,*}
  echo "  - name: $1"
  echo "    description: $2"
  [ -z "${5:-}" ] || echo "    $5"
  echo "    inputSchema: $3"
  echo "    nodes:"
  echo "      - {id: entry, type: entry, next: ${id#id: }}"
  echo "      - {$4, next: exit}"
  echo "      - {id: exit, type: exit}"
}
# relay_mcp_node TOOL ARGS [MORE]: relay_tool's NODE calling relay_srv's TOOL with ARGS; MORE:
# more fields (relay: true).
relay_mcp_node() { echo "id: call, type: mcp, server: relay, tool: $1, args: $2${3:+, $3}"; }
# relay_quick_graph: graph "quick" (the other tenant's), whose tool quick only computes.
relay_quick_graph() {
  relay_graph quick "" "tools:
$(relay_tool quick "computes only" "{type: object}" "id: r, type: transform, transform: {expr: '\"done\"'}")"
}

# relay_call26 OUT URL TOOL ARGS CAPS ID: one stateless 2026-07-28 tools/call by hand with KEY
# (ARGS: its arguments, CAPS: the client's capabilities, both JSON) → the HTTP status; the
# answer in OUT.
relay_call26() {
  local meta="\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":$5}"
  gg_curl "$1" -X POST -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H "Mcp-Name: $3" -H "Authorization: Bearer $KEY" \
    --data-binary "{\"jsonrpc\":\"2.0\",\"id\":$6,\"method\":\"tools/call\",\"params\":{\"name\":\"$3\",\"arguments\":$4,$meta}}" "$2"
}
