#!/usr/bin/env bash
# relay.sh — a downstream's requests to its client relayed to the client whose call caused
# them (exec.c relay_request): a real SDK server (relay_srv.mjs, streamable HTTP) whose tool
# elicits (form and URL mode), samples and lists roots, behind a proxy graph and behind an
# ordinary graph's mcp node (`relay: true`, and the default that refuses), called by the
# official SDK client (sdk_relay.mjs, a 2025-11-25 session): answers reach the downstream; a
# client without the capability → the downstream gets -32601 and the call says so; 400
# questions in one call → 32 relayed, the rest refused at once, another tenant's calls not
# slowed, the gateway's memory not grown; 2000 downstream progress notifications → a few,
# increasing, at most 10/s; log messages at the client's level only; a cancelled call
# cancels the downstream's work.
# Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
gw_need_sdk

"$NODE" "$GG_SRCDIR/tests/gateway/relay_srv.mjs" >"$GG_TMP/srv.log" 2>&1 &
SRV=$!
trap 'kill $SRV 2>/dev/null; gg_cleanup' EXIT
for _ in $(seq 1 300); do grep -q '^PORT ' "$GG_TMP/srv.log" && break; sleep 0.1; done
PORT=$(sed -n 's/^PORT //p' "$GG_TMP/srv.log")
[ -n "$PORT" ] || { echo "the downstream did not start: $(head -5 "$GG_TMP/srv.log")"; echo "0 passed, 1 failed"; exit 1; }

cat >"$GG_TMP/px.yaml" <<YAML
version: "1.0"
server: {name: "px", version: "1.0.0"}
mcpServers:
  relay: {type: "streamableHttp", url: "http://127.0.0.1:$PORT/mcp", timeout: 30000}
proxy:
  - {server: "relay", tools: "all", prefix: "r_"}
YAML
cat >"$GG_TMP/plain.yaml" <<YAML
version: "1.0"
server: {name: "plain", version: "1.0.0"}
mcpServers:
  relay: {type: "streamableHttp", url: "http://127.0.0.1:$PORT/mcp"}
tools:
  - name: relayed
    description: calls ask, relaying its questions
    inputSchema: {type: object, properties: {who: {type: string}}}
    nodes:
      - {id: entry, type: entry, next: call}
      - {id: call, type: mcp, server: relay, tool: ask, args: {who: {expr: "\$.entry.who"}}, relay: true, next: exit}
      - {id: exit, type: exit}
  - name: plain
    description: calls ask without relaying
    inputSchema: {type: object, properties: {who: {type: string}}}
    nodes:
      - {id: entry, type: entry, next: call}
      - {id: call, type: mcp, server: relay, tool: ask, args: {who: {expr: "\$.entry.who"}}, next: exit}
      - {id: exit, type: exit}
YAML
cat >"$GG_TMP/bad.yaml" <<YAML
version: "1.0"
server: {name: "bad", version: "1.0.0"}
tools:
  - name: t
    description: misplaced relay
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: x}
      - {id: x, type: transform, transform: {expr: "1"}, relay: true, next: exit}
      - {id: exit, type: exit}
YAML
cat >"$GG_TMP/quick.yaml" <<'YAML'
version: "1.0"
server: {name: "quick", version: "1.0.0"}
tools:
  - name: quick
    description: computes only
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: r}
      - {id: r, type: transform, transform: {expr: '"done"'}, next: exit}
      - {id: exit, type: exit}
YAML

gw_cli_run tenant create acme >/dev/null
gw_cli_run tenant create other >/dev/null
ADMIN=$(gw_key acme admin)
KEY=$(gw_key acme tools:read,tools:execute)
OADMIN=$(gw_key other admin)
OKEY=$(gw_key other tools:read,tools:execute)
export GRAPHGATE_SESSION_SECRET=relay-test-secret-0123456789-0123456789-0123456789
GRAPHGATE_POLICY_HTTP_HOSTS=127.0.0.1 gg_start || { echo "0 passed, 1 failed"; exit 1; }
t "setup: tenants and keys" gw_cli_clean
t "the proxy graph is accepted" eq "$(gw_put_graph "$ADMIN" acme px "$GG_TMP/px.yaml")" 201
t "a graph with relay on its mcp node is accepted" eq "$(gw_put_graph "$ADMIN" acme plain "$GG_TMP/plain.yaml")" 201
t "relay on a transform node is refused" eq "$(gw_put_graph "$ADMIN" acme bad "$GG_TMP/bad.yaml")" 422
t "the other tenant's graph is accepted" eq "$(gw_put_graph "$OADMIN" other quick "$GG_TMP/quick.yaml")" 201

rss0=$(awk '/^VmRSS:/ { print $2 }' "/proc/$GG_PID/status")
GG_NPM="$NM" "$NODE" "$GG_SRCDIR/tests/gateway/sdk_relay.mjs" "$GG_PUB/mcp/acme/px" "$GG_PUB/mcp/acme/plain" "$KEY" \
  "$GG_PUB/mcp/other/quick" "$OKEY" "http://127.0.0.1:$PORT/status" >"$GG_TMP/sdk.out" 2>&1
sed 's/^/  sdk: /' "$GG_TMP/sdk.out" | grep -v ' passed, '
sp=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p' "$GG_TMP/sdk.out"); sf=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p' "$GG_TMP/sdk.out")
GG_PASSED=$((GG_PASSED + ${sp:-0})); GG_FAILED=$((GG_FAILED + ${sf:-1}))
# a 2026-07-28 client (stateless): the downstream's question becomes an input-required round
# (relay2026.sh follows such rounds to the end)
M26='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}},"sampling":{},"roots":{}}}'
st=$(gg_curl "$GG_TMP/m26.json" -X POST -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
  -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: r_ask' -H "Authorization: Bearer $KEY" \
  --data-binary "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"r_ask\",\"arguments\":{\"who\":\"dee\"},$M26}}" \
  "$GG_PUB/mcp/acme/px")
m26_round() {
  [ "$st" = 200 ] && python3 -c "
import json,sys
d=json.load(open(sys.argv[1])); r=d['result']; q=r['inputRequests']
assert r['resultType'] == 'input_required' and isinstance(r['requestState'], str), d
assert list(q) == ['relay-1'] and q['relay-1']['method'] == 'elicitation/create', d
assert q['relay-1']['params']['message'] == 'Hello dee?', d" "$GG_TMP/m26.json" ||
    { echo "   got HTTP $st: $(head -c 400 "$GG_TMP/m26.json")" >&2; return 1; }
}
t "a 2026-07-28 client: the downstream's question is its call's input-required round" m26_round
rss1=$(awk '/^VmRSS:/ { print $2 }' "/proc/$GG_PID/status")
echo "  gateway RSS ${rss0} kB before the SDK calls, ${rss1} kB after"
grow() { [ $((rss1 - rss0)) -lt 32768 ] || { echo "   grew by $((rss1 - rss0)) kB" >&2; return 1; }; }
t "the gateway's memory did not grow by 32 MiB over the relayed calls" grow
t "server stops cleanly (exit 0, no sanitizer report)" gw_stop_clean
gg_finish
