#!/usr/bin/env bash
# listen.sh — streamable-HTTP downstreams are heard: the gateway keeps one GET stream per
# downstream session of an installed graph (src/mcp/client_http.c) and a downstream's own
# notifications/tools/list_changed refreshes the tenant's catalog at once. The downstream
# is a real SDK server (listen_srv.mjs: McpServer + StreamableHTTPServerTransport, stateful)
# that adds a tool through its control endpoint — never a call through the gateway, never a
# re-upload, long before the 15-minute refresh: the tool shows (1) in the tenant's virtual
# specs on /mcp/nodes, (2) in a proxy graph's tools/list (`tools: all`) and (3) our SDK
# client of that proxy graph gets notifications/tools/list_changed. The downstream forgetting
# every session (a restart) → the stream reconnects, re-initializes, and a later tool is
# heard too, and after a gateway restart once the graph is compiled on first use. A
# downstream answering 405 to GET is asked once and still serves calls (one
# declaring no listChanged is never asked); one
# streaming a never-ending 2 MiB line or non-JSON events is cut off (logged, counted in
# /metrics) and still serves calls. Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
gw_need_sdk

. "$GG_SRCDIR/tests/gateway/lib_listen.sh"
trap 'listen_stop_all; gg_cleanup' EXIT
A=$(listen_srv sdk); B=$(listen_srv 405); C=$(listen_srv garbage); D=$(listen_srv nolist)
[ -n "$A" ] && [ -n "$B" ] && [ -n "$C" ] && [ -n "$D" ] ||
  { echo "a downstream did not start: $(cat "$GG_TMP"/srv_*.log | head -5)"; echo "0 passed, 1 failed"; exit 1; }

# px: a proxy graph of the SDK server (tools: all, prefix l_); b, c: a tool calling alpha on
# the 405 and the garbage server
proxy_yaml "$GG_TMP/px.yaml" "$A"
one() {
  cat >"$GG_TMP/$1.yaml" <<YAML
version: "1.0"
server: {name: "$1", version: "1.0.0"}
mcpServers:
  $1srv: {type: "streamableHttp", url: "http://127.0.0.1:$2/mcp"}
tools:
  - {name: "go", description: "d", inputSchema: {type: "object"}, nodes: [
      {id: "entry", type: "entry", next: "a"},
      {id: "a", type: "mcp", server: "$1srv", tool: "alpha", args: {when: "then"}, next: "exit"},
      {id: "exit", type: "exit"}]}
YAML
}
one b "$B"
one c "$C"
one d "$D"

gw_cli_run tenant create acme >/dev/null
ADMIN=$(gw_key acme admin)
KEY=$(gw_key acme tools:read,tools:execute)
GRAPHGATE_POLICY_HTTP_HOSTS=127.0.0.1 gg_start || { echo "0 passed, 1 failed"; exit 1; }
t "setup: tenant and keys" gw_cli_clean

# spec SUBTYPE → True when acme's search_nodes finds that MCP_TOOL and get_node_details knows it
spec() {
  local sid; sid=$(gw_init "$GG_PUB/mcp/nodes" "$ADMIN")
  gw_rpc "$GG_TMP/s.json" "$GG_PUB/mcp/nodes" "$ADMIN" "$sid" \
    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"search_nodes\",\"arguments\":{\"query\":\"dynamic $1\"}}}" >/dev/null
  gw_rpc "$GG_TMP/d.json" "$GG_PUB/mcp/nodes" "$ADMIN" "$sid" \
    "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"get_node_details\",\"arguments\":{\"nodes\":[{\"node_type\":\"MCP_TOOL\",\"subtype\":\"live.$1\"}]}}}" >/dev/null
  python3 - "$GG_TMP/s.json" "$GG_TMP/d.json" "$1" <<'PY'
import json, sys
def sc(f):
    t = open(f).read()
    data = [l[5:] for l in t.splitlines() if l.startswith("data:")]
    return json.loads(data[-1] if data else t)["result"]["structuredContent"]
s, d, name = sc(sys.argv[1]), sc(sys.argv[2]), sys.argv[3]
found = any(r.get("subtype") == "live." + name for r in s["results"])
node = d["nodes"][0]
print(found and node.get("subtype") == "live." + name and "when" in node.get("input_params_schema", {}))
PY
}

t "the proxy graph of the SDK server is accepted" eq "$(gw_put_graph "$ADMIN" acme px "$GG_TMP/px.yaml")" 201
t "... the gateway opens a GET stream to it (one per downstream session)" wait_for status "$A" 'd["streams"] == 1'
t "... /metrics counts it" wait_for eval 'metric_at_least "$(metric graphgate_downstream_listen_streams)" 1'
t "before: live.beta is not a virtual spec" eq "$(spec beta)" False

"$NODE" "$GG_SRCDIR/tests/gateway/listen.mjs" "$GG_PUB/mcp/acme/px" "$KEY" "http://127.0.0.1:$A/add" beta \
  "$GG_INT/metrics" >"$GG_TMP/sdk.out" 2>&1
gw_fold "$GG_TMP/sdk.out" $?
t "(1) live.beta is a virtual spec (search_nodes, get_node_details) without any sync" wait_for spec beta
t "... /metrics counted the downstream's list_changed" \
  wait_for eval 'metric_at_least "$(metric "graphgate_downstream_listen_total{event=\"list_changed\"}")" 1'
gg_curl "$GG_TMP/g.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/graphs/px" >/dev/null
t "... still version 1: nothing was uploaded again" eq "$(jget "$GG_TMP/g.json" 'd.get("active_version", d.get("version"))')" 1
t "the recompiled proxy graph listens with its own session: one stream again" \
  wait_for status "$A" 'd["streams"] == 1 and d["sessions"] == 1'

# a restart: every session forgotten → our stream ends, reconnects, gets 404, initializes again
t "the downstream forgets every session (a restart)" eq "$(status "$A" 'd["sessions"]')" 1
curl -sS -X POST "http://127.0.0.1:$A/forget" >/dev/null
t "... the gateway re-initializes and its GET stream is back" wait_for status "$A" 'd["streams"] == 1 and d["sessions"] == 1'
curl -sS -X POST "http://127.0.0.1:$A/add?name=gamma" >/dev/null
t "... a tool added after the restart is heard: live.gamma is a virtual spec" wait_for spec gamma
sid=$(gw_init "$GG_PUB/mcp/acme/px" "$KEY")
tl() { proxy_lists "$GG_PUB/mcp/acme/px" "$KEY" "$sid" l_gamma; }
t "... and l_gamma is in the proxy graph's tools/list" wait_for tl

# 405: asked once, never again, calls work
t "a graph on a server answering 405 to GET is accepted" eq "$(gw_put_graph "$ADMIN" acme b "$GG_TMP/b.yaml")" 201
t "... /metrics: no_stream counted" \
  wait_for eval 'metric_at_least "$(metric "graphgate_downstream_listen_total{event=\"no_stream\"}")" 1'
t "... logged" grep -q 'offers no listen stream' "$GG_TMP/serve.err"
t "... its tool still calls through" \
  eq "$(gg_curl "$GG_TMP/b.out" -X POST --data-binary '{}' "$GG_INT/internal/tenants/acme/graphs/b/tools/go/call") $(grep -c 'alpha ran then' "$GG_TMP/b.out")" "200 1"

# garbage: cut off (both kinds), logged, retried with backoff, calls work
t "a graph on a server streaming garbage on GET is accepted" eq "$(gw_put_graph "$ADMIN" acme c "$GG_TMP/c.yaml")" 201
t "... a never-ending line is cut off at the bound (logged)" \
  wait_for eval 'grep -q "cut off.*a line longer than the bound" "$GG_TMP/serve.err" && echo True'
t "... an event that is not JSON-RPC is cut off (logged)" \
  wait_for eval 'grep -q "cut off.*not a JSON-RPC message" "$GG_TMP/serve.err" && echo True'
t "... /metrics counts the cut-offs" \
  wait_for eval 'metric_at_least "$(metric "graphgate_downstream_listen_total{event=\"cut_off\"}")" 2'
t "... its tool still calls through" \
  eq "$(gg_curl "$GG_TMP/c.out" -X POST --data-binary '{}' "$GG_INT/internal/tenants/acme/graphs/c/tools/go/call") $(grep -c 'alpha ran then' "$GG_TMP/c.out")" "200 1"
t "... reconnects back off: at most 4 GETs in the first seconds" eq "$(status "$C" 'd["gets"] <= 4')" True
# a server declaring no listChanged: no GET at all (checked after the others took seconds)
t "a graph on a server declaring no listChanged is accepted" eq "$(gw_put_graph "$ADMIN" acme d "$GG_TMP/d.yaml")" 201
t "... its tool calls through" \
  eq "$(gg_curl "$GG_TMP/d.out" -X POST --data-binary '{}' "$GG_INT/internal/tenants/acme/graphs/d/tools/go/call") $(grep -c 'alpha ran then' "$GG_TMP/d.out")" "200 1"
t "the 405 server was asked for a stream once only" eq "$(status "$B" 'd["gets"]')" 1
t "the server declaring no listChanged was never asked for one" eq "$(status "$D" 'd["gets"]')" 0
t "server stops cleanly" gw_stop_clean
t "... and every listen stream to the SDK server ended" wait_for status "$A" 'd["streams"] == 0'

# a gateway restart: graphs compile on first use, and then listen
GRAPHGATE_POLICY_HTTP_HOSTS=127.0.0.1 gg_restart "the gateway restarts"
sid=$(gw_init "$GG_PUB/mcp/acme/px" "$KEY")
t "after a restart the proxy graph compiled on first use lists l_gamma" wait_for tl
t "... and listens: its stream is open again" wait_for status "$A" 'd["streams"] == 1'
curl -sS -X POST "http://127.0.0.1:$A/add?name=delta" >/dev/null
t "... a tool added now is heard: live.delta is a virtual spec" wait_for spec delta
t "a re-upload (version 2) is accepted" eq "$(gw_put_graph "$ADMIN" acme px "$GG_TMP/px.yaml")" 201
t "... the old version's stream ends, the new one's opens: one stream, one session" \
  wait_for status "$A" 'd["streams"] == 1 and d["sessions"] == 1'
t "server stops cleanly again" gw_stop_clean
gg_finish
